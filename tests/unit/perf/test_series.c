/*
 * test_series.c - every node's e2e over the iterations in bounded memory:
 * every group kept up to the cap, then neighbours merged pairwise with
 * their means weighted, nodes without a value left out, the JSON.
 */
#include "autoconf.h"

#include "../vigil_test.h"

#include <math.h>
#include <stdlib.h>

#include <cJSON.h>

#include "perf/series.h"

/* Add iterations FROM..TO one by one, node r's e2e f(r, i). */
static void
feed(struct perf_series *s, int nodes, size_t from, size_t to, double (*f)(int, size_t))
{
	double v[8];

	assert_true(nodes <= 8);
	for (size_t i = from; i <= to; i++) {
		for (int r = 0; r < nodes; r++)
			v[r] = f(r, i);
		perf_series_add(s, i, i, v);
	}
}

static double
ramp(int r, size_t i)
{
	return 100.0 * (r + 1) + (double)i;
}

static void
test_cap(void **state)
{
	(void)state;
	assert_int_equal(perf_series_cap(2), SERIES_CAP_MAX);
	assert_int_equal(perf_series_cap(10000), 104);
	assert_int_equal(perf_series_cap(1000000), SERIES_CAP_MIN);
	/* the whole stays bounded: 10,000 nodes keep at most SERIES_POINTS_MAX */
	assert_true(perf_series_cap(10000) * 10000 <= SERIES_POINTS_MAX);
	assert_int_equal(perf_series_cap(3) % 2, 0);
}

/* Up to the cap, every iteration as it came. */
static void
test_every_iteration(void **state)
{
	struct perf_series *s = perf_series_new(2, 64);
	size_t first, last;

	(void)state;
	assert_non_null(s);
	feed(s, 2, 1, 60, ramp);
	assert_int_equal(perf_series_len(s), 60);
	assert_int_equal(perf_series_stride(s), 1);
	for (size_t k = 0; k < 60; k++) {
		assert_true(perf_series_point(s, 1, k, &first, &last) == 200.0 + (double)(k + 1));
		assert_int_equal(first, k + 1);
		assert_int_equal(last, k + 1);
	}
	perf_series_free(s);
}

/* Full: merged pairwise, then every new point holds as many groups. */
static void
test_merge(void **state)
{
	struct perf_series *s = perf_series_new(1, 8);
	size_t first, last;
	double v;

	(void)state;
	feed(s, 1, 1, 8, ramp);
	assert_int_equal(perf_series_len(s), 8);
	feed(s, 1, 9, 9, ramp);  /* the ninth: 4 merged points and a new one */
	assert_int_equal(perf_series_len(s), 5);
	assert_int_equal(perf_series_stride(s), 2);
	v = perf_series_point(s, 0, 0, &first, &last);
	assert_int_equal(first, 1);
	assert_int_equal(last, 2);
	assert_true(v == 101.5);
	v = perf_series_point(s, 0, 4, &first, &last);
	assert_int_equal(first, 9);
	assert_int_equal(last, 9);
	assert_true(v == 109);
	feed(s, 1, 10, 10, ramp);  /* fills the last point up to the stride */
	assert_int_equal(perf_series_len(s), 5);
	v = perf_series_point(s, 0, 4, &first, &last);
	assert_int_equal(last, 10);
	assert_true(v == 109.5);
	/* a long job: still 8 points at most, covering everything, in order */
	feed(s, 1, 11, 1000, ramp);
	assert_true(perf_series_len(s) <= 8 && perf_series_len(s) > 4);
	(void)perf_series_point(s, 0, 0, &first, &last);
	assert_int_equal(first, 1);
	(void)perf_series_point(s, 0, perf_series_len(s) - 1, &first, &last);
	assert_int_equal(last, 1000);
	for (size_t k = 1; k < perf_series_len(s); k++) {
		size_t pf, pl;

		(void)perf_series_point(s, 0, k - 1, &pf, &pl);
		(void)perf_series_point(s, 0, k, &first, &last);
		assert_int_equal(first, pl + 1);
	}
	/* the shape stays: a ramp's merged means still climb */
	for (size_t k = 1; k < perf_series_len(s); k++) {
		size_t a, b;

		assert_true(perf_series_point(s, 0, k, &a, &b) >
		            perf_series_point(s, 0, k - 1, &a, &b));
	}
	perf_series_free(s);
}

static double
gappy(int r, size_t i)
{
	/* node 1 has nothing for iterations 3 and 4 (lost, back after a restart) */
	return r == 1 && (i == 3 || i == 4) ? NAN : r == 0 ? 100 : (double)i * 10;
}

/* A node's missing values weigh nothing in its merged means. */
static void
test_missing(void **state)
{
	struct perf_series *s = perf_series_new(2, 4);
	double grouped[2] = { 300, 0 };  /* node 1: a group of 3 iterations, no value */
	size_t first, last;

	(void)state;
	feed(s, 2, 1, 4, gappy);
	assert_true(isnan(perf_series_point(s, 1, 2, &first, &last)));
	feed(s, 2, 5, 5, gappy);  /* merges: [1,2] [3,4] [5] */
	assert_true(perf_series_point(s, 1, 0, &first, &last) == 15);
	assert_true(isnan(perf_series_point(s, 1, 1, &first, &last)));
	assert_true(perf_series_point(s, 0, 1, &first, &last) == 100);
	/* a group of several iterations weighs as many */
	perf_series_add(s, 6, 8, grouped);
	assert_true(perf_series_point(s, 0, 2, &first, &last) == (100 + 300 * 3) / 4.0);
	assert_int_equal(first, 5);
	assert_int_equal(last, 8);
	/* out of order: dropped */
	perf_series_add(s, 8, 8, grouped);
	assert_int_equal(perf_series_len(s), 3);
	perf_series_free(s);
}

static void
test_json(void **state)
{
	struct perf_series *s = perf_series_new(2, 4);
	cJSON *a;
	char *text;

	(void)state;
	feed(s, 2, 1, 4, gappy);
	a = perf_series_json(s, 1);
	text = cJSON_PrintUnformatted(a);
	assert_string_equal(text, "[[1,1,10],[2,2,20]]");
	free(text);
	cJSON_Delete(a);
	a = perf_series_json(s, 0);
	assert_int_equal(cJSON_GetArraySize(a), 4);
	cJSON_Delete(a);
	perf_series_free(s);
	assert_null(perf_series_new(2, 3));
	assert_null(perf_series_new(0, 4));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cap),
		cmocka_unit_test(test_every_iteration),
		cmocka_unit_test(test_merge),
		cmocka_unit_test(test_missing),
		cmocka_unit_test(test_json),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
