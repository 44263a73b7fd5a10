/*
 * perf_reduce_prog.c - the cross-node reduction of iteration timings as
 * the agent runs it (perf_pack, peer_reduce_*, perf_unpack), on synthetic
 * per-rank timing streams, for perf_reduce.sh under mpirun -np 4.
 *
 *   reduce  rank r prints "iteration i" lines for i = 1..20 at its own
 *           pace; rank 3 is 10% slower (e2e), rank 1 stops after 16.
 *           Rank 0 prints every iteration complete everywhere, the
 *           straggler alerts, and the final base.
 *   big     one reduction of a 2000-iteration window (over 200 KB, where
 *           MPI switches to segmented algorithms); rank 0 checks every
 *           value and prints one line.
 *   stall   the last rank never starts its reduction (it sleeps, bounded
 *           by argv[2] seconds, default 60); the others test theirs for
 *           2 s, print what they saw and leave without MPI_Finalize
 *           (5 s later, so that all have printed before the launcher
 *           ends the job).
 *   survive the last rank is lost after 5 reductions (it sleeps, bounded by
 *           argv[2] seconds); the others give up the reduction it never
 *           joins, as the agents do at an elastic restart, and go on among
 *           themselves (peer_reduce_start_among): every iteration after
 *           the loss is reported exactly, over 3 nodes, and no test call
 *           ever blocks.
 */
#include "autoconf.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "comm/peer.h"
#include "perf/perf.h"

enum { ITERS = 20, WINDOW = 32, BIG = 2000 };

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void
nap_ms(long ms)
{
	struct timespec t = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&t, NULL);
}

/* Rank R's iteration I: e2e 1000 + 10 i ms, 10% more on rank 3. */
static double
stream_e2e(int rank, size_t i)
{
	double e = 1000 + 10.0 * (double)i;

	return rank == 3 ? e * 11 / 10 : e;
}

static double
stream_hw(int rank, size_t i)
{
	return 600 + 10.0 * rank + (double)i;
}

static void
add(struct perf_node *n, const char *key, double hw, double e2e)
{
	struct progress_line l = { .hw_ms = hw, .e2e_ms = e2e };

	snprintf(l.key, sizeof(l.key), "%s", key);
	perf_node_add(n, &l);
}

/* Feed rank R's lines up to iteration UPTO; rank 0 has two local
 * processes whose means are the stream. */
static void
feed(struct perf_node *n, int rank, size_t from, size_t upto)
{
	for (size_t i = from; i <= upto; i++) {
		if (rank == 0) {
			add(n, "0", stream_hw(0, i) - 1, stream_e2e(0, i) - 2);
			add(n, "1", stream_hw(0, i) + 1, stream_e2e(0, i) + 2);
		} else {
			add(n, "", stream_hw(rank, i), stream_e2e(rank, i));
		}
	}
}

static double longest_test;

/*
 * peer_reduce_start(), again while the reductions' communicator is being
 * made (-EAGAIN), up to TIMEOUT_S.
 */
static int
start_world(struct peer *p, const double *buf, size_t len, const double *gather,
            size_t ngather, struct peer_reduce **r, double timeout_s)
{
	double deadline = now_s() + timeout_s;
	int err;

	while ((err = peer_reduce_start(p, perf_combine, buf, len, gather, ngather, r)) == -EAGAIN &&
	       now_s() < deadline)
		nap_ms(1);
	return err;
}

/* Test until complete or TIMEOUT_S: 1, 0 on timeout, <0. */
static int
reduce_wait(struct peer_reduce *r, double timeout_s)
{
	double deadline = now_s() + timeout_s;
	int rc;

	for (;;) {
		double t0 = now_s();

		rc = peer_reduce_test(r);
		if (now_s() - t0 > longest_test)
			longest_test = now_s() - t0;
		if (rc != 0)
			return rc;
		if (now_s() > deadline)
			return 0;
		nap_ms(1);
	}
}

/* One reduction of N's groups laid out by L, among RANKS (NULL: all). */
static int
reduce_once(struct peer *p, struct perf_node *n, struct perf_layout *l, const int *ranks,
            int nranks, unsigned long key, double *buf, double *gather,
            struct peer_reduce **r)
{
	size_t len = perf_buffer_len(l->slots);
	int err;

	perf_pack(n, l, l->base, peer_rank(p), buf, gather);
	if (ranks) {
		/* -EAGAIN until every rank made its part of the communicator */
		for (int i = 0; i < 10000; i++) {
			err = peer_reduce_start_among(p, ranks, nranks, key, perf_combine, buf,
			                              len, gather, l->slots, r);
			if (err != -EAGAIN)
				break;
			nap_ms(1);
		}
	} else {
		err = start_world(p, buf, len, gather, l->slots, r, 30);
	}
	if (err < 0) {
		fprintf(stderr, "reduce: start: %s\n", strerror(-err));
		return err;
	}
	err = reduce_wait(*r, 30);
	if (err <= 0) {
		fprintf(stderr, "reduce: rank %d: %s\n", peer_rank(p),
		        err ? strerror(-err) : "no completion in 30 s");
		peer_reduce_free(*r);
		*r = NULL;
		return -1;
	}
	return 0;
}

static int
run_reduce(struct peer *p)
{
	static const char *const names[] = { "n0", "n1", "n2", "n3" };
	int rank = peer_rank(p), size = peer_size(p);
	size_t total = rank == 1 ? 16 : ITERS, fed = 0;
	/* Lines per cycle: the nodes run at different paces. */
	size_t pace = (size_t)(rank % 3) + 1;
	struct perf_policy_opts po = { .window = 3, .straggler_pct = 5 };
	struct perf_policy *pol = NULL;
	struct perf_node *n = perf_node_new(WINDOW);
	double *buf = malloc(perf_buffer_len(WINDOW) * sizeof(*buf));
	double gather[WINDOW];
	struct perf_iter out[WINDOW];
	struct perf_layout l;
	int rc = 1, idle = 0;

	if (size != 4) {
		fprintf(stderr, "reduce: needs 4 ranks, not %d\n", size);
		goto out;
	}
	if (rank == 0)
		pol = perf_policy_new(&po, size);
	if (!n || !buf || (rank == 0 && !pol))
		goto out;
	perf_layout_init(&l, WINDOW, 0);
	/* Every rank sees the same results, so all take the same number of
	 * cycles: until everything was fed and the base stopped moving. */
	for (int cycle = 1; cycle <= 100 && idle < 2; cycle++) {
		struct peer_reduce *r;
		const double *res, *all;
		struct perf_header h;
		size_t nb, nit, upto = fed + pace > total ? total : fed + pace;

		feed(n, rank, fed + 1, upto);
		fed = upto;
		if (reduce_once(p, n, &l, NULL, 0, 0, buf, gather, &r) < 0)
			goto out;
		res = peer_reduce_result(r);
		all = peer_reduce_gathered(r);
		perf_unpack(res, &l, &nb, out, &nit);
		for (size_t j = 0; rank == 0 && j < nit; j++) {
			const struct perf_iter *it = &out[j];
			double node_e2e[4];
			struct perf_alert al[4];
			size_t na;

			for (int q = 0; q < size; q++)
				node_e2e[q] = all[(size_t)q * WINDOW + it->slot];
			printf("iter %zu nodes %d hw %.3f %.3f %.3f e2e %.3f/%d %.3f %.3f/%d "
			       "r %.6f/%d %.6f %.6f/%d node_e2e %.1f %.1f %.1f %.1f\n",
			       it->iter, it->nodes, it->hw_min, it->hw_mean, it->hw_max,
			       it->e2e_min, it->e2e_min_rank, it->e2e_mean, it->e2e_max,
			       it->e2e_max_rank, it->r_min, it->r_min_rank, it->r_mean,
			       it->r_max, it->r_max_rank, node_e2e[0], node_e2e[1],
			       node_e2e[2], node_e2e[3]);
			na = perf_policy_feed(pol, it, node_e2e, names, al, 4);
			for (size_t a = 0; a < na; a++)
				printf("alert %s iter %zu rank %d: %s\n", al[a].kind,
				       al[a].iter, al[a].rank, al[a].message);
		}
		perf_header_read(res, &h);
		peer_reduce_free(r);
		/* Every rank has fed everything by cycle ITERS (the slowest
		 * pace is one line a cycle); NB is the same everywhere. */
		idle = cycle >= ITERS && nb == l.base ? idle + 1 : 0;
		perf_node_forget(n, nb);
		perf_layout_next(&l, &h, nb);
	}
	if (rank == 0)
		printf("final base %zu\n", l.base);
	printf("rank %d fed %zu lines %llu\n", rank, fed, (unsigned long long)perf_node_lines(n));
	rc = 0;
out:
	fflush(stdout);
	perf_policy_free(pol);
	perf_node_free(n);
	free(buf);
	return rc;
}

/*
 * Rank 3 is lost after 5 reductions; the others go on among themselves.
 * Each node prints 10 iterations per reduction, e2e 1000 + rank (rank 2
 * twice as slow after the loss), hw half of it.
 */
static int
run_survive(struct peer *p, int limit_s)
{
	enum { PER = 10, BEFORE = 5, AFTER = 8, SLOTS = 16 };
	static const int survivors[] = { 0, 1, 2 };
	int rank = peer_rank(p), size = peer_size(p), rc = 1;
	struct perf_node *n = perf_node_new(256);
	double buf[(SLOTS + 1) * PERF_FIELDS], gather[SLOTS];
	struct perf_iter out[SLOTS];
	struct perf_layout l;
	struct perf_header h;
	struct peer_reduce *r;
	size_t nb, nit, next = 1, bad = 0;

	if (size != 4 || !n) {
		fprintf(stderr, "survive: needs 4 ranks\n");
		return 1;
	}
	perf_layout_init(&l, SLOTS, 0);
	for (int c = 0; c < BEFORE + 1 + AFTER; c++) {
		bool lost = c >= BEFORE, sync = c == BEFORE + 1;

		if (rank == size - 1 && lost) {
			/* Lost: never starts another reduction, never answers. */
			for (int i = 0; i < limit_s * 10; i++)
				nap_ms(100);
			rc = 0;
			goto out;
		}
		for (int i = 0; i < PER; i++) {
			struct progress_line pl = { .e2e_ms = 1000 + rank };

			if (lost && rank == 2)
				pl.e2e_ms *= 2;
			pl.hw_ms = pl.e2e_ms / 2;
			perf_node_add(n, &pl);
		}
		if (c == BEFORE) {
			/* The reduction the lost rank never joins: pending, and
			 * testing it never blocks; given up after a second. */
			perf_pack(n, &l, l.base, rank, buf, gather);
			if (start_world(p, buf, perf_buffer_len(SLOTS), gather, SLOTS, &r, 30) < 0 ||
			    reduce_wait(r, 1) != 0) {
				fprintf(stderr, "survive: the reduction without rank 3 completed\n");
				goto out;
			}
			peer_reduce_free(r);
			/* the restart: new processes, iterations go on */
			perf_node_restart(n);
			continue;
		}
		if (reduce_once(p, n, &l, lost ? survivors : NULL, lost ? 3 : 0,
		                (1ul << 20) + (unsigned long)c, buf, gather, &r) < 0)
			goto out;
		perf_header_read(peer_reduce_result(r), &h);
		if (sync) {
			/* the first among the survivors agrees on the base */
			perf_layout_init(&l, SLOTS, h.max_base > l.base ? h.max_base : l.base);
			nb = l.base;
		} else {
			perf_unpack(peer_reduce_result(r), &l, &nb, out, &nit);
			for (size_t j = 0; rank == 0 && j < nit; j++) {
				const double *g = peer_reduce_gathered(r);
				int nodes = lost ? 3 : 4;

				if (out[j].first != next || out[j].nodes != nodes ||
				    out[j].e2e_max_rank != (lost ? 2 : 3) ||
				    (lost && (!isnan(g[3 * SLOTS + out[j].slot]) ||
				              g[2 * SLOTS + out[j].slot] != 2004)))
					bad++;
				next = out[j].iter + 1;
			}
		}
		peer_reduce_free(r);
		perf_node_forget(n, nb);
		perf_layout_next(&l, &h, nb);
	}
	if (rank == 0)
		printf("survive: base %zu, reported through %zu, %s, longest test %.1f ms\n",
		       l.base, next - 1, bad ? "WRONG" : "exact", longest_test * 1000);
	rc = bad != 0;
out:
	fflush(stdout);
	perf_node_free(n);
	return rc;
}

static int
run_big(struct peer *p)
{
	int rank = peer_rank(p), size = peer_size(p), rc = 1, bad = 0;
	struct perf_node *n = perf_node_new(BIG);
	double *buf = malloc(perf_buffer_len(BIG) * sizeof(*buf));
	struct perf_iter *out = malloc(BIG * sizeof(*out));
	struct peer_reduce *r = NULL;
	struct perf_layout l;
	size_t nb, nit;
	int err;

	if (!n || !buf || !out)
		goto out;
	feed(n, rank, 1, BIG);
	perf_layout_init(&l, BIG, 0);
	perf_pack(n, &l, 0, rank, buf, NULL);
	err = start_world(p, buf, perf_buffer_len(BIG), NULL, 0, &r, 30);
	if (err < 0 || reduce_wait(r, 30) != 1) {
		fprintf(stderr, "big: rank %d: no result\n", rank);
		goto out;
	}
	perf_unpack(peer_reduce_result(r), &l, &nb, out, &nit);
	if (nb != BIG || nit != BIG)
		bad++;
	for (size_t j = 0; !bad && j < nit; j++) {
		const struct perf_iter *it = &out[j];
		size_t i = j + 1;
		double hw_sum = 0;

		for (int q = 0; q < size; q++)
			hw_sum += stream_hw(q, i);
		if (it->iter != i || it->hw_min != stream_hw(0, i) ||
		    it->hw_max != stream_hw(size - 1, i) ||
		    it->hw_mean != hw_sum / size ||
		    it->e2e_min != stream_e2e(0, i) || it->e2e_min_rank != 0 ||
		    it->e2e_max != stream_e2e(3, i) || it->e2e_max_rank != 3)
			bad++;
	}
	if (rank == 0)
		printf("big: %zu iterations, base %zu, %s\n", nit, nb,
		       bad ? "WRONG" : "exact");
	rc = bad != 0;
out:
	fflush(stdout);
	peer_reduce_free(r);
	perf_node_free(n);
	free(buf);
	free(out);
	return rc;
}

static int
run_stall(struct peer *p, int limit_s)
{
	int rank = peer_rank(p), size = peer_size(p), tests = 0, rc;
	struct perf_node *n;
	struct peer_reduce *r;
	double buf[(8 + 1) * PERF_FIELDS], e2e[8] = { 0 }, longest = 0, deadline;
	struct perf_layout l;

	if (rank == size - 1) {
		/* A node stopped dead: never starts, never answers. */
		for (int i = 0; i < limit_s * 10; i++)
			nap_ms(100);
		return 0;
	}
	n = perf_node_new(8);
	if (!n)
		return 1;
	feed(n, rank, 1, 3);
	perf_layout_init(&l, 8, 0);
	perf_pack(n, &l, 0, rank, buf, NULL);
	perf_node_free(n);
	/* The sleeper never makes its part of the reductions' communicator
	 * either: starting is refused (-EAGAIN) until it would, and each try
	 * returns at once, as each test of a reduction started would. */
	r = NULL;
	rc = 0;
	deadline = now_s() + 2;
	while (now_s() < deadline) {
		double t0 = now_s();

		if (!r) {
			rc = peer_reduce_start(p, perf_combine, buf, perf_buffer_len(8), e2e, 8, &r);
			if (rc < 0 && rc != -EAGAIN) {
				fprintf(stderr, "stall: start: %s\n", strerror(-rc));
				return 1;
			}
			rc = 0;
		} else {
			rc = peer_reduce_test(r);
		}
		if (now_s() - t0 > longest)
			longest = now_s() - t0;
		tests++;
		if (rc != 0)
			break;
		nap_ms(1);
	}
	if (rc == 0 && (!r || !peer_reduce_result(r)))
		printf("rank %d: no completion within 2 s (%d tests, longest %.1f ms)\n",
		       rank, tests, longest * 1000);
	else
		printf("rank %d: reduction ended (%d) with a rank missing\n", rank, rc);
	fflush(stdout);
	peer_reduce_free(r);
	/* The first rank to leave without MPI_Finalize makes the launcher end
	 * the job: stay a while, so that a rank that started late still prints. */
	nap_ms(5000);
	return 0;
}

int
main(int argc, char **argv)
{
	struct peer *p;
	const char *mode = argc > 1 ? argv[1] : "reduce";
	bool clean = true;
	int rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	rc = peer_init(&argc, &argv, &p);
	if (rc < 0) {
		fprintf(stderr, "peer_init: %s\n", strerror(-rc));
		return 1;
	}
	if (strcmp(mode, "reduce") == 0) {
		rc = run_reduce(p);
	} else if (strcmp(mode, "big") == 0) {
		rc = run_big(p);
	} else if (strcmp(mode, "survive") == 0) {
		rc = run_survive(p, argc > 2 ? atoi(argv[2]) : 60);
		/* A peer is gone: MPI_Finalize would wait for it. */
		clean = false;
	} else if (strcmp(mode, "stall") == 0) {
		rc = run_stall(p, argc > 2 ? atoi(argv[2]) : 60);
		/* A peer is gone: MPI_Finalize would wait for it. */
		clean = false;
	} else {
		fprintf(stderr, "usage: %s reduce|big|stall|survive [seconds]\n", argv[0]);
		rc = 2;
	}
	peer_finalize(p, clean && rc == 0);
	return rc;
}
