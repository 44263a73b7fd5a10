/*
 * test_account.c - where the iteration time went: the median across the
 * nodes (selection, against a sort), the slowest node's excess over it
 * per iteration, nodes without a value left out, the dates of the lines,
 * the JSON.
 */
#include "autoconf.h"

#include "../vigil_test.h"

#include <math.h>
#include <stdlib.h>

#include <cJSON.h>

#include "perf/account.h"

static int
cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void
test_median(void **state)
{
	double v[101], w[101], want;
	unsigned seed = 7;

	(void)state;
	assert_true(isnan(perf_account_median(v, 0)));
	for (size_t n = 1; n <= 101; n++) {
		for (int round = 0; round < 20; round++) {
			for (size_t i = 0; i < n; i++)
				/* few distinct values: ties as nodes in step give */
				w[i] = v[i] = (double)(rand_r(&seed) % (round % 2 ? 5 : 1000));
			qsort(w, n, sizeof(*w), cmp);
			want = n % 2 ? w[n / 2] : (w[n / 2 - 1] + w[n / 2]) / 2;
			assert_float_equal(perf_account_median(v, n), want, 1e-9);
		}
	}
}

static void
test_groups(void **state)
{
	struct perf_account a;
	double scratch[4];
	/* node 3 is slow in the first group; node 1 has no value in the second */
	const double g1[4] = { 100, 110, 90, 300 }, g2[4] = { 200, NAN, 220, 0 };

	(void)state;
	perf_account_init(&a);
	perf_account_group(&a, 1, g1, 4, scratch);
	assert_int_equal(a.iterations, 1);
	assert_float_equal(a.median_ms, 105, 1e-9);
	assert_float_equal(a.max_ms, 300, 1e-9);
	perf_account_group(&a, 4, g2, 4, scratch);  /* 4 iterations at median 210, max 220 */
	assert_int_equal(a.iterations, 5);
	assert_float_equal(a.median_ms, 105 + 4 * 210, 1e-9);
	assert_float_equal(a.max_ms, 300 + 4 * 220, 1e-9);
	perf_account_group(&a, 3, (const double[4]){ NAN, 0, -1, INFINITY }, 4, scratch);
	assert_int_equal(a.iterations, 5);  /* nobody had a value: not counted */
}

static void
test_lines_json(void **state)
{
	struct perf_account a;
	cJSON *d;

	(void)state;
	perf_account_init(&a);
	d = perf_account_json(&a);
	assert_non_null(d);
	assert_null(cJSON_GetObjectItem(d, "first_iteration_end"));  /* unknown: absent */
	cJSON_Delete(d);
	perf_account_line(&a, 1000.5, 250);
	perf_account_line(&a, 1001.0, 260);
	perf_account_line(&a, 1003.25, 270);
	d = perf_account_json(&a);
	assert_float_equal(cJSON_GetObjectItem(d, "first_iteration_end")->valuedouble, 1000.5, 1e-9);
	assert_float_equal(cJSON_GetObjectItem(d, "first_iteration_ms")->valuedouble, 250, 1e-9);
	assert_float_equal(cJSON_GetObjectItem(d, "last_iteration_end")->valuedouble, 1003.25, 1e-9);
	assert_float_equal(cJSON_GetObjectItem(d, "iterations")->valuedouble, 0, 0);
	cJSON_Delete(d);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_median),
		cmocka_unit_test(test_groups),
		cmocka_unit_test(test_lines_json),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
