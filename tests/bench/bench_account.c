/*
 * bench_account.c - what the coordinator's account of the iteration time
 * (perf_account_group(): a selection of the median across the nodes, the
 * slowest) costs per group of iterations, as a ratio to what it already
 * does with the same group (perf_series_add()), measured in the same run,
 * at 100 to 100,000 nodes.  Both are O(nodes); the ratio should stay
 * flat as the nodes grow.
 *
 * Usage: bench_account [GROUPS (2000)]
 * Output per size: account <us> vs series <us> per group: ratio X
 * Exit status: 0, or 1 when the account's median is wrong.
 */
#include "autoconf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "lib/util.h"
#include "perf/account.h"
#include "perf/series.h"

int
main(int argc, char **argv)
{
	static const int sizes[] = { 100, 1000, 10000, 100000 };
	int groups = argc > 1 ? atoi(argv[1]) : 2000;
	unsigned seed = 1;

	if (groups < 10)
		groups = 10;
	printf("# the account per group of iterations against the series, same run\n");
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		int n = sizes[s], g = groups * 1000 / n > 10 ? groups * 1000 / n : 10;
		double *e2e = malloc((size_t)n * sizeof(*e2e)), *scratch = malloc((size_t)n * sizeof(*e2e));
		struct perf_series *ser = perf_series_new(n, perf_series_cap(n));
		struct perf_account acc;
		double t_acc = 0, t_ser = 0, t0;

		if (!e2e || !scratch || !ser)
			return 1;
		perf_account_init(&acc);
		for (int k = 0; k < g; k++) {
			/* nodes near 100 ms, a few slower, in a new order each group */
			for (int r = 0; r < n; r++)
				e2e[r] = 100 + (double)(rand_r(&seed) % 1000) / 100 +
				         (rand_r(&seed) % 97 == 0 ? 50 : 0);
			t0 = util_now_s();
			perf_series_add(ser, (size_t)k + 1, (size_t)k + 1, e2e);
			t_ser += util_now_s() - t0;
			t0 = util_now_s();
			perf_account_group(&acc, 1, e2e, (size_t)n, scratch);
			t_acc += util_now_s() - t0;
		}
		if (acc.iterations != (size_t)g || !(acc.median_ms > 100.0 * g) ||
		    !(acc.max_ms > acc.median_ms)) {
			fprintf(stderr, "bench_account: wrong sums at %d nodes\n", n);
			return 1;
		}
		printf("%6d nodes: account %9.2f us vs series %9.2f us per group: ratio %.2f\n", n,
		       t_acc / g * 1e6, t_ser / g * 1e6, t_acc / t_ser);
		perf_series_free(ser);
		free(e2e);
		free(scratch);
	}
	return 0;
}
