/*
 * account.c - where an attempt's iteration time went: the coordinator's
 * sums per group of iterations and the dates of its own timing lines.
 */
#include "autoconf.h"

#include <math.h>
#include <stddef.h>

#include "perf/account.h"

void
perf_account_init(struct perf_account *a)
{
	a->iterations = 0;
	a->median_ms = a->max_ms = 0;
	a->first_line = a->first_line_ms = a->last_line = NAN;
}

static void
swap(double *v, size_t i, size_t j)
{
	double t = v[i];

	v[i] = v[j];
	v[j] = t;
}

/* The K-th smallest of V[0..N) (0-based, K < N), V reordered: selection
 * with a three-way partition around the middle element (O(N) expected;
 * equal values, common among nodes in step, end it at once). */
static double
select_kth(double *v, size_t n, size_t k)
{
	size_t lo = 0, hi = n - 1;

	for (;;) {
		double pivot = v[lo + (hi - lo) / 2];
		size_t lt = lo, i = lo, gt = hi;

		/* v[lo..lt) < pivot, v[lt..i) == pivot, v(gt..hi] > pivot */
		while (i <= gt) {
			if (v[i] < pivot) {
				swap(v, lt++, i++);
			} else if (v[i] > pivot) {
				swap(v, i, gt);
				if (gt == 0)
					break;
				gt--;
			} else {
				i++;
			}
		}
		if (k < lt)
			hi = lt - 1;
		else if (k > gt)
			lo = gt + 1;
		else
			return pivot;
	}
}

double
perf_account_median(double *v, size_t n)
{
	double hi, lo;

	if (n == 0)
		return NAN;
	hi = select_kth(v, n, n / 2);
	if (n % 2)
		return hi;
	/* the lower middle is the largest of what selection left below */
	lo = v[0];
	for (size_t i = 1; i < n / 2; i++)
		if (v[i] > lo)
			lo = v[i];
	return (lo + hi) / 2;
}

void
perf_account_group(struct perf_account *a, size_t width, const double *e2e, size_t n,
                   double *scratch)
{
	size_t m = 0;
	double max = 0;

	for (size_t r = 0; r < n; r++) {
		if (!isfinite(e2e[r]) || e2e[r] <= 0)
			continue;
		scratch[m++] = e2e[r];
		if (e2e[r] > max)
			max = e2e[r];
	}
	if (m == 0 || width == 0)
		return;
	a->iterations += width;
	a->median_ms += (double)width * perf_account_median(scratch, m);
	a->max_ms += (double)width * max;
}

void
perf_account_line(struct perf_account *a, double now, double e2e_ms)
{
	if (isnan(a->first_line)) {
		a->first_line = now;
		a->first_line_ms = e2e_ms;
	}
	a->last_line = now;
}

cJSON *
perf_account_json(const struct perf_account *a)
{
	cJSON *d = cJSON_CreateObject();

	if (!d || !cJSON_AddNumberToObject(d, "iterations", (double)a->iterations) ||
	    !cJSON_AddNumberToObject(d, "median_ms", a->median_ms) ||
	    !cJSON_AddNumberToObject(d, "max_ms", a->max_ms) ||
	    (!isnan(a->first_line) &&
	     (!cJSON_AddNumberToObject(d, "first_iteration_end", a->first_line) ||
	      !cJSON_AddNumberToObject(d, "first_iteration_ms", a->first_line_ms) ||
	      !cJSON_AddNumberToObject(d, "last_iteration_end", a->last_line)))) {
		cJSON_Delete(d);
		return NULL;
	}
	return d;
}
