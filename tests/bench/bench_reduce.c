/*
 * bench_reduce.c - the cost of one cycle of the cross-node reduction of
 * iteration timings, as a ratio to a bare MPI_Iallreduce of the same
 * payload measured in the same run.
 *
 * Run under mpirun (`make bench` runs 4 ranks on one machine).  Every
 * rank holds a full window of iterations; each cycle is what the agent
 * does: perf_pack, peer_reduce_start (the allreduce with perf_combine plus
 * the gather of per-node e2e times at rank 0), peer_reduce_test until
 * complete, perf_unpack.  The baseline is MPI_Iallreduce of as many
 * doubles with MPI_SUM, then MPI_Wait.  The series are interleaved cycle
 * by cycle, after a warm-up, and each figure is rank 0's median.  A third
 * series leaves the gather out, to show what it costs; a fourth is the
 * same cycle among every rank through peer_reduce_start_among() (the
 * point-to-point tree used after a restart).
 *
 * Usage: bench_reduce [CYCLES (2000)] [WINDOW (64)]
 * Output: reduce: <us> vs bare MPI_Iallreduce <us>: ratio X (goal <= 1.5)
 *         tree: <us> vs bare MPI_Iallreduce <us>: ratio X
 * Exit status: 0, or 1 when the reduction failed or gave wrong figures.
 */
#include "autoconf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "comm/peer.h"
#include "perf/perf.h"

enum { WARMUP = 100 };

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double
median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double
bare_cycle(const double *send, double *recv, size_t len)
{
	double t0 = MPI_Wtime();
	MPI_Request req;

	MPI_Iallreduce(send, recv, (int)len, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &req);
	MPI_Wait(&req, MPI_STATUS_IGNORE);
	return MPI_Wtime() - t0;
}

/* One agent cycle (among RANKS when not NULL); -1 on failure. */
static double
perf_cycle(struct peer *p, const struct perf_node *n, size_t w, double *buf,
           const double *gather, size_t ngather, const int *ranks, unsigned long key,
           struct perf_iter *out, size_t *nout)
{
	double t0 = MPI_Wtime();
	struct peer_reduce *r;
	struct perf_layout l;
	size_t nb;
	int rc;

	perf_layout_init(&l, w, 0);
	perf_pack(n, &l, 0, peer_rank(p), buf, NULL);
	/* -EAGAIN until every rank made its part of the reductions'
	 * communicator (each try drives MPI) */
	do {
		if (ranks)
			rc = peer_reduce_start_among(p, ranks, peer_size(p), key, perf_combine, buf,
			                             perf_buffer_len(w), gather, ngather, &r);
		else
			rc = peer_reduce_start(p, perf_combine, buf, perf_buffer_len(w), gather,
			                       ngather, &r);
	} while (rc == -EAGAIN);
	if (rc < 0)
		return -1;
	while ((rc = peer_reduce_test(r)) == 0)
		;
	if (rc < 0) {
		peer_reduce_free(r);
		return -1;
	}
	perf_unpack(peer_reduce_result(r), &l, &nb, out, nout);
	peer_reduce_free(r);
	return MPI_Wtime() - t0;
}

int
main(int argc, char **argv)
{
	int cycles = argc > 1 ? atoi(argv[1]) : 2000;
	size_t w = argc > 2 ? (size_t)atol(argv[2]) : 64, len, nout = 0;
	double *buf, *send, *recv, *gather, *t_bare, *t_full, *t_nogather, *t_tree;
	int *all;
	struct perf_iter *out;
	struct perf_node *n;
	struct peer *p;
	int rank, size, bad = 0;

	if (cycles < 1 || w < 1 || peer_init(&argc, &argv, &p) < 0) {
		fprintf(stderr, "usage: mpirun -np N bench_reduce [CYCLES] [WINDOW]\n");
		return 2;
	}
	rank = peer_rank(p);
	size = peer_size(p);
	len = perf_buffer_len(w);
	n = perf_node_new(w);
	buf = calloc(len, sizeof(*buf));
	send = calloc(len, sizeof(*send));
	recv = calloc(len, sizeof(*recv));
	gather = calloc(w, sizeof(*gather));
	out = calloc(w, sizeof(*out));
	t_bare = calloc((size_t)cycles, sizeof(double));
	t_full = calloc((size_t)cycles, sizeof(double));
	t_nogather = calloc((size_t)cycles, sizeof(double));
	t_tree = calloc((size_t)cycles, sizeof(double));
	all = calloc((size_t)size, sizeof(*all));
	if (!n || !buf || !send || !recv || !gather || !out || !t_bare || !t_full ||
	    !t_nogather || !t_tree || !all) {
		fprintf(stderr, "bench_reduce: out of memory\n");
		return 2;
	}
	/* A full window on every node: every slot is combined, every
	 * iteration unpacked. */
	for (size_t i = 1; i <= w; i++) {
		struct progress_line l = { .hw_ms = 2000 + (double)(rank + i),
		                           .e2e_ms = 3000 + (double)i };

		perf_node_add(n, &l);
		gather[i - 1] = l.e2e_ms;
		send[i - 1] = l.e2e_ms;
	}
	for (int r = 0; r < size; r++)
		all[r] = r;
	for (int i = -WARMUP; i < cycles; i++) {
		unsigned long key = (unsigned long)(i + WARMUP);
		double tb, tf, tn, tt;
		size_t ntree = 0;

		/* Alternate which goes first, so neither always follows the
		 * other's traffic. */
		if (i % 2) {
			tb = bare_cycle(send, recv, len);
			tf = perf_cycle(p, n, w, buf, gather, w, NULL, 0, out, &nout);
			tn = perf_cycle(p, n, w, buf, NULL, 0, NULL, 0, out, &nout);
			tt = perf_cycle(p, n, w, buf, gather, w, all, key, out, &ntree);
		} else {
			tt = perf_cycle(p, n, w, buf, gather, w, all, key, out, &ntree);
			tn = perf_cycle(p, n, w, buf, NULL, 0, NULL, 0, out, &nout);
			tf = perf_cycle(p, n, w, buf, gather, w, NULL, 0, out, &nout);
			tb = bare_cycle(send, recv, len);
		}
		if (tf < 0 || tn < 0 || tt < 0 || nout != w || ntree != w) {
			bad = 1;
			break;
		}
		if (i >= 0) {
			t_bare[i] = tb;
			t_full[i] = tf;
			t_nogather[i] = tn;
			t_tree[i] = tt;
		}
	}
	/* The last cycle's figures must be the nodes' own. */
	if (!bad && (out[w - 1].e2e_mean != 3000 + (double)w ||
	             out[w - 1].hw_max != 2000 + (double)(size - 1 + (int)w) ||
	             out[w - 1].nodes != size))
		bad = 1;
	if (rank == 0 && !bad) {
		double b = median(t_bare, cycles), f = median(t_full, cycles);
		double g = median(t_nogather, cycles), t = median(t_tree, cycles);

		printf("bench_reduce: %d ranks, window %zu (%zu bytes), %d cycles, medians:\n",
		       size, w, len * sizeof(double), cycles);
		printf("  allreduce with perf_combine, no gather: %.1f us (ratio %.2f)\n",
		       g * 1e6, g / b);
		printf("reduce: %.1f us vs bare MPI_Iallreduce %.1f us: ratio %.2f (goal <= 1.5)\n",
		       f * 1e6, b * 1e6, f / b);
		printf("tree: %.1f us vs bare MPI_Iallreduce %.1f us: ratio %.2f\n",
		       t * 1e6, b * 1e6, t / b);
	}
	if (bad)
		fprintf(stderr, "bench_reduce: rank %d: the reduction failed or was wrong\n", rank);
	perf_node_free(n);
	free(buf);
	free(send);
	free(recv);
	free(gather);
	free(out);
	free(t_bare);
	free(t_full);
	free(t_nogather);
	free(t_tree);
	free(all);
	/* A failed rank may leave the others in a collective: no finalize. */
	peer_finalize(p, !bad);
	return bad;
}
