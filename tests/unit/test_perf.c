/*
 * test_perf.c - per-iteration timings: a node's aggregation, the
 * reduction's buffer and operator (as MPI would apply it, without MPI),
 * and the alert policy.
 */
#include "autoconf.h"

#include "vigil_test.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf.h"

static struct progress_line
line(const char *key, double hw, double e2e)
{
	struct progress_line l = { .hw_ms = hw, .e2e_ms = e2e };

	snprintf(l.key, sizeof(l.key), "%s", key);
	return l;
}

static void
add(struct perf_node *n, const char *key, double hw, double e2e)
{
	struct progress_line l = line(key, hw, e2e);

	perf_node_add(n, &l);
}

static void
expect_iter(const struct perf_node *n, size_t iter, double hw, double e2e)
{
	double h = -1, e = -1;

	assert_int_equal(perf_node_get(n, iter, &h, &e), 0);
	assert_true(h == hw);
	assert_true(e == e2e);
}

static void
expect_missing(const struct perf_node *n, size_t iter)
{
	double h, e;

	assert_int_equal(perf_node_get(n, iter, &h, &e), -ENOENT);
}

/* ---- one node -------------------------------------------------------- */

static void
test_node_one_key(void **state)
{
	struct perf_node *n = perf_node_new(8);

	(void)state;
	assert_non_null(n);
	assert_int_equal(perf_node_done(n), 0);
	expect_missing(n, 0);
	expect_missing(n, 1);
	add(n, "", 2201.5, 3317.75);
	add(n, "", 2202.5, 3318.75);
	add(n, "", 2203.5, 3319.75);
	assert_int_equal(perf_node_done(n), 3);
	expect_missing(n, 0);
	expect_iter(n, 1, 2201.5, 3317.75);
	expect_iter(n, 2, 2202.5, 3318.75);
	expect_iter(n, 3, 2203.5, 3319.75);
	expect_missing(n, 4);
	assert_int_equal(perf_node_dropped(n), 0);
	perf_node_free(n);
	perf_node_free(NULL);
}

static void
test_node_three_keys(void **state)
{
	struct perf_node *n = perf_node_new(8);

	(void)state;
	assert_non_null(n);
	/* Interleaved as processes print: "0" runs ahead, "2" lags. */
	add(n, "0", 100, 1000);
	add(n, "1", 200, 2000);
	add(n, "0", 110, 1100);
	add(n, "2", 300, 3000);
	add(n, "0", 120, 1200);
	add(n, "1", 210, 2100);
	/* Complete when every process reached it: "2" holds it at 1. */
	assert_int_equal(perf_node_done(n), 1);
	expect_iter(n, 1, 200, 2000);
	expect_missing(n, 2);
	add(n, "2", 320, 3200);
	assert_int_equal(perf_node_done(n), 2);
	expect_iter(n, 2, (110.0 + 210 + 320) / 3, (1100.0 + 2100 + 3200) / 3);
	add(n, "2", 340, 3400);
	add(n, "1", 230, 2300);
	assert_int_equal(perf_node_done(n), 3);
	expect_iter(n, 3, (120.0 + 230 + 340) / 3, (1200.0 + 2300 + 3400) / 3);
	perf_node_free(n);
}

static void
test_node_arrival_order(void **state)
{
	struct perf_node *n = perf_node_new(8);

	(void)state;
	assert_non_null(n);
	/* Lines without a launcher prefix are one process: each line is its
	 * next iteration, whoever printed it. */
	add(n, "", 10, 100);
	add(n, "", 20, 200);
	add(n, "", 30, 300);
	assert_int_equal(perf_node_done(n), 3);
	expect_iter(n, 2, 20, 200);
	/* A process appearing late holds the iterations not yet forgotten
	 * until it reaches them, and joins their means. */
	add(n, "late", 50, 500);
	assert_int_equal(perf_node_done(n), 1);
	expect_iter(n, 1, 30, 300);
	expect_missing(n, 2);
	perf_node_forget(n, 1);
	add(n, "late", 60, 600);
	add(n, "late", 70, 700);
	assert_int_equal(perf_node_done(n), 3);
	expect_iter(n, 2, 40, 400);
	expect_iter(n, 3, 50, 500);
	/* Forgotten iterations stay done: one more latecomer's lines for
	 * them are ignored. */
	perf_node_forget(n, 3);
	add(n, "later", 1, 1);
	assert_int_equal(perf_node_done(n), 3);
	expect_missing(n, 1);
	add(n, "", 40, 400);
	add(n, "late", 60, 600);
	add(n, "later", 2, 2);
	add(n, "later", 3, 3);
	add(n, "later", 80, 800);
	assert_int_equal(perf_node_done(n), 4);
	expect_iter(n, 4, 60, 600);
	perf_node_free(n);
}

static void
test_node_window_drop(void **state)
{
	struct perf_node *n = perf_node_new(4);

	(void)state;
	assert_non_null(n);
	for (int i = 1; i <= 10; i++)
		add(n, "", i, 10 * i);
	/* Nothing was forgotten: only the last 4 are held. */
	assert_int_equal(perf_node_done(n), 10);
	assert_int_equal(perf_node_dropped(n), 6);
	for (int i = 1; i <= 6; i++)
		expect_missing(n, (size_t)i);
	for (int i = 7; i <= 10; i++)
		expect_iter(n, (size_t)i, i, 10 * i);
	perf_node_forget(n, 8);
	expect_missing(n, 8);
	expect_iter(n, 9, 9, 90);
	add(n, "", 11, 110);
	add(n, "", 12, 120);
	assert_int_equal(perf_node_dropped(n), 6);
	expect_iter(n, 12, 12, 120);
	add(n, "", 13, 130);
	assert_int_equal(perf_node_dropped(n), 7);
	expect_missing(n, 9);
	expect_iter(n, 13, 13, 130);
	perf_node_free(n);
}

static void
test_node_forget(void **state)
{
	struct perf_node *n = perf_node_new(4);

	(void)state;
	assert_non_null(n);
	for (int i = 1; i <= 3; i++)
		add(n, "", i, 10 * i);
	perf_node_forget(n, 2);
	expect_missing(n, 1);
	expect_missing(n, 2);
	expect_iter(n, 3, 3, 30);
	/* Going back is a no-op. */
	perf_node_forget(n, 1);
	expect_iter(n, 3, 3, 30);
	/* Beyond what was seen (others completed it): the ring is empty and
	 * the node's own later lines for those iterations are ignored. */
	perf_node_forget(n, 9);
	assert_int_equal(perf_node_done(n), 9);
	expect_missing(n, 3);
	for (int i = 4; i <= 10; i++)
		add(n, "", i, 10 * i);
	assert_int_equal(perf_node_done(n), 10);
	expect_missing(n, 9);
	expect_iter(n, 10, 10, 100);
	assert_int_equal(perf_node_dropped(n), 0);
	perf_node_free(n);

	errno = 0;
	assert_null(perf_node_new(0));
	assert_int_equal(errno, EINVAL);
}

/* ---- pack, combine, unpack ------------------------------------------- */

#define W 6
#define NODES 4

/*
 * Four nodes; iteration i's base e2e is E = 1000 + 8i.  Values are exact
 * in binary, so the expected figures are exact whatever the order.
 *   rank 0: two processes at E-8 and E+8 (mean E), hw/e2e 0.5, 5 iters
 *   rank 1: two processes at E, hw/e2e 0.75; "b" misses its lines 4, 5
 *   rank 2: one process at E, hw/e2e 0.875, behind: 4 iterations
 *   rank 3: slow by 25% (1.25 E), hw/e2e 0.625, 5 iterations
 */
static double
base_e2e(size_t i)
{
	return 1000 + 8.0 * (double)i;
}

static const double node_ratio[NODES] = { 0.5, 0.75, 0.875, 0.625 };
static const double node_slow[NODES] = { 1, 1, 1, 1.25 };

struct nodes {
	struct perf_node *n[NODES];
	double buf[NODES][(W + 1) * PERF_FIELDS];
};

static void
feed_node(struct perf_node *n, int rank, const char *key, size_t from, size_t to,
          double offset)
{
	for (size_t i = from; i <= to; i++) {
		double e = node_slow[rank] * base_e2e(i) + offset;

		add(n, key, node_ratio[rank] * e, e);
	}
}

static int
nodes_setup(void **state)
{
	struct nodes *s = calloc(1, sizeof(*s));

	if (!s)
		return -1;
	for (int r = 0; r < NODES; r++) {
		s->n[r] = perf_node_new(W);
		if (!s->n[r])
			return -1;
	}
	feed_node(s->n[0], 0, "0", 1, 5, -8);
	feed_node(s->n[0], 0, "1", 1, 5, 8);
	feed_node(s->n[1], 1, "a", 1, 5, 0);
	feed_node(s->n[1], 1, "b", 1, 3, 0);
	feed_node(s->n[2], 2, "", 1, 4, 0);
	feed_node(s->n[3], 3, "7", 1, 5, 0);
	*state = s;
	return 0;
}

static int
nodes_teardown(void **state)
{
	struct nodes *s = *state;

	for (int r = 0; r < NODES; r++)
		perf_node_free(s->n[r]);
	free(s);
	return 0;
}

static void
pack_all(struct nodes *s, size_t base)
{
	assert_int_equal(perf_buffer_len(W), sizeof(s->buf[0]) / sizeof(double));
	for (int r = 0; r < NODES; r++)
		perf_pack(s->n[r], base, W, r, s->buf[r]);
}

/* Combine as a reduction tree would, in two different shapes. */
static void
reduce_sequential(struct nodes *s, double *out)
{
	memcpy(out, s->buf[0], sizeof(s->buf[0]));
	for (int r = 1; r < NODES; r++)
		perf_combine(s->buf[r], out, perf_buffer_len(W));
}

static void
reduce_tree(struct nodes *s, double *out)
{
	double right[(W + 1) * PERF_FIELDS];

	memcpy(out, s->buf[3], sizeof(s->buf[3]));
	perf_combine(s->buf[2], out, perf_buffer_len(W));
	memcpy(right, s->buf[1], sizeof(s->buf[1]));
	perf_combine(s->buf[0], right, perf_buffer_len(W));
	perf_combine(right, out, perf_buffer_len(W));
}

static void
expect_reduced(const struct perf_iter *it, size_t iter)
{
	double e = base_e2e(iter);

	assert_int_equal(it->iter, iter);
	assert_int_equal(it->nodes, NODES);
	assert_true(it->hw_min == 0.5 * e);
	assert_true(it->hw_max == 0.875 * e);
	assert_true(it->hw_mean == (0.5 + 0.75 + 0.875 + 0.625 * 1.25) * e / 4);
	/* Ranks 0, 1, 2 tie on the minimum: the lowest rank has it. */
	assert_true(it->e2e_min == e);
	assert_int_equal(it->e2e_min_rank, 0);
	assert_true(it->e2e_max == 1.25 * e);
	assert_int_equal(it->e2e_max_rank, 3);
	assert_true(it->e2e_mean == (3 + 1.25) * e / 4);
	assert_true(it->r_min == 0.5);
	assert_int_equal(it->r_min_rank, 0);
	assert_true(it->r_max == 0.875);
	assert_int_equal(it->r_max_rank, 2);
	assert_true(it->r_mean == (0.5 + 0.75 + 0.875 + 0.625) / 4);
}

static void
test_pack_slots(void **state)
{
	struct nodes *s = *state;
	const double *h, *slot;

	pack_all(s, 0);
	h = s->buf[1];
	assert_true(h[PERF_COUNT] == 3);
	assert_true(s->buf[0][PERF_COUNT] == 5);
	assert_true(s->buf[2][PERF_COUNT] == 4);
	/* Rank 3's iteration 2: its own values as count 1 and every
	 * extreme, with its rank. */
	slot = s->buf[3] + 2 * PERF_FIELDS;
	assert_true(slot[PERF_COUNT] == 1);
	assert_true(slot[PERF_E2E_SUM] == 1.25 * base_e2e(2));
	assert_true(slot[PERF_E2E_MIN] == slot[PERF_E2E_SUM]);
	assert_true(slot[PERF_E2E_MAX] == slot[PERF_E2E_SUM]);
	assert_true(slot[PERF_HW_MIN] == 0.625 * 1.25 * base_e2e(2));
	assert_true(slot[PERF_R_SUM] == 0.625);
	assert_true(slot[PERF_E2E_MAX_RANK] == 3);
	assert_true(slot[PERF_R_MIN_RANK] == 3);
	/* Rank 1's iteration 4 is incomplete ("b" lacks it): the neutral
	 * slot, as is everything past iteration 5 everywhere. */
	for (size_t k = 4; k <= W; k++) {
		slot = s->buf[1] + k * PERF_FIELDS;
		assert_true(slot[PERF_COUNT] == 0);
		assert_true(slot[PERF_HW_SUM] == 0);
		assert_true(slot[PERF_E2E_MIN] == HUGE_VAL);
		assert_true(slot[PERF_E2E_MAX] == -HUGE_VAL);
		assert_true(slot[PERF_R_MIN] == HUGE_VAL);
		assert_true(slot[PERF_R_MAX] == -HUGE_VAL);
		assert_true(slot[PERF_E2E_MIN_RANK] == -1);
		assert_true(slot[PERF_R_MAX_RANK] == -1);
	}
}

static void
test_reduce_four_nodes(void **state)
{
	struct nodes *s = *state;
	double seq[(W + 1) * PERF_FIELDS], tree[(W + 1) * PERF_FIELDS];
	struct perf_iter out[W];
	size_t nb = 99, n = 99;

	pack_all(s, 0);
	reduce_sequential(s, seq);
	reduce_tree(s, tree);
	assert_memory_equal(seq, tree, sizeof(seq));
	assert_true(seq[PERF_COUNT] == 3);
	/* Iteration 4: ranks 0, 2, 3 have it; 5: ranks 0 and 3. */
	assert_true(seq[4 * PERF_FIELDS + PERF_COUNT] == 3);
	assert_true(seq[5 * PERF_FIELDS + PERF_COUNT] == 2);
	assert_true(seq[6 * PERF_FIELDS + PERF_COUNT] == 0);

	perf_unpack(seq, 0, W, NODES, &nb, out, &n);
	assert_int_equal(nb, 3);
	assert_int_equal(n, 3);
	for (size_t i = 0; i < n; i++)
		expect_reduced(&out[i], i + 1);

	/* The next cycle: everyone forgets through the new base; rank 1's
	 * "b" catches up on 4, rank 2 reaches 5. */
	for (int r = 0; r < NODES; r++)
		perf_node_forget(s->n[r], nb);
	feed_node(s->n[1], 1, "b", 4, 4, 0);
	feed_node(s->n[2], 2, "", 5, 5, 0);
	pack_all(s, nb);
	/* The slot of the old base's next iteration is now slot 1. */
	assert_true(s->buf[0][PERF_FIELDS + PERF_COUNT] == 1);
	reduce_tree(s, tree);
	perf_unpack(tree, 3, W, NODES, &nb, out, &n);
	assert_int_equal(nb, 4);
	assert_int_equal(n, 1);
	expect_reduced(&out[0], 4);
}

static void
test_unpack_bounds(void **state)
{
	struct perf_node *n[2];
	double a[(W + 1) * PERF_FIELDS], b[(W + 1) * PERF_FIELDS];
	struct perf_iter out[W];
	size_t nb = 0, cnt = 0;

	(void)state;
	for (int r = 0; r < 2; r++) {
		n[r] = perf_node_new(W);
		assert_non_null(n[r]);
	}
	/* Both far ahead of the window: the base moves by W at most. */
	for (int i = 1; i <= 10; i++) {
		add(n[0], "", i, 2 * i);
		add(n[1], "", 3 * i, 4 * i);
	}
	perf_pack(n[0], 0, W, 0, a);
	perf_pack(n[1], 0, W, 1, b);
	perf_combine(a, b, perf_buffer_len(W));
	perf_unpack(b, 0, W, 2, &nb, out, &cnt);
	/* The ring kept 5..10 only: 1..4 were dropped everywhere and pass
	 * over, 5 and 6 are reported. */
	assert_int_equal(nb, W);
	assert_int_equal(cnt, 2);
	assert_int_equal(out[0].iter, 5);
	assert_int_equal(out[1].iter, 6);
	assert_true(out[1].hw_mean == (6.0 + 18) / 2);
	assert_true(out[1].e2e_mean == (12.0 + 24) / 2);
	assert_int_equal(out[1].e2e_max_rank, 1);
	assert_int_equal(out[1].r_max_rank, 1);
	assert_true(out[1].r_max == 0.75);
	assert_int_equal(out[1].r_min_rank, 0);
	assert_true(out[1].r_min == 0.5);

	/* Nothing done anywhere: the base stays. */
	perf_node_free(n[0]);
	n[0] = perf_node_new(W);
	assert_non_null(n[0]);
	perf_pack(n[0], 0, W, 0, a);
	perf_pack(n[1], 0, W, 1, b);
	perf_combine(a, b, perf_buffer_len(W));
	perf_unpack(b, 0, W, 2, &nb, out, &cnt);
	assert_int_equal(nb, 0);
	assert_int_equal(cnt, 0);
	for (int r = 0; r < 2; r++)
		perf_node_free(n[r]);
}

static void
test_no_training(void **state)
{
	struct nodes *s = *state;
	double seq[(W + 1) * PERF_FIELDS];
	struct perf_iter out[W];
	size_t nb = 99, n = 99;

	/* Rank 1 has no training: it packs nothing and has no say in how
	 * far everyone is; the three others complete 1..4 together. */
	pack_all(s, 0);
	perf_pack(NULL, 0, W, 1, s->buf[1]);
	assert_true(s->buf[1][PERF_COUNT] == HUGE_VAL);
	assert_true(s->buf[1][PERF_FIELDS + PERF_COUNT] == 0);
	assert_true(s->buf[1][PERF_FIELDS + PERF_E2E_MIN_RANK] == -1);
	reduce_sequential(s, seq);
	assert_int_equal(perf_contributors(seq), 3);
	perf_unpack(seq, 0, W, perf_contributors(seq), &nb, out, &n);
	assert_int_equal(nb, 4);
	assert_int_equal(n, 4);
	for (size_t i = 0; i < n; i++) {
		double e = base_e2e(i + 1);

		assert_int_equal(out[i].iter, i + 1);
		assert_int_equal(out[i].nodes, 3);
		assert_true(out[i].e2e_mean == (2 + 1.25) * e / 3);
		assert_true(out[i].hw_mean == (0.5 + 0.875 + 0.625 * 1.25) * e / 3);
		assert_true(out[i].r_mean == (0.5 + 0.875 + 0.625) / 3);
		assert_int_equal(out[i].e2e_min_rank, 0);
		assert_int_equal(out[i].r_max_rank, 2);
	}

	/* Nobody has a training: nothing is reported and the base stays. */
	for (int r = 0; r < NODES; r++)
		perf_pack(NULL, 2, W, r, s->buf[r]);
	reduce_tree(s, seq);
	assert_int_equal(perf_contributors(seq), 0);
	perf_unpack(seq, 2, W, perf_contributors(seq), &nb, out, &n);
	assert_int_equal(nb, 2);
	assert_int_equal(n, 0);
}

/* A random node's buffer as perf_pack shapes it.  Values are multiples of
 * 1/8 below 4096 and ratios multiples of 1/64: sums of a few are exact,
 * and the small sets make ties common. */
static void
random_buffer(double *buf, size_t w, int rank)
{
	for (size_t f = 0; f < PERF_FIELDS; f++)
		buf[f] = 0;
	buf[PERF_COUNT] = rand() % 50;
	buf[PERF_HW_SUM] = rand() % 2;
	buf[PERF_E2E_MIN_RANK] = -2;
	for (size_t k = 1; k <= w; k++) {
		double *s = buf + k * PERF_FIELDS;
		double hw = (rand() % 8) * 0.125 + 512, e2e = (rand() % 8) * 0.125 + 1024;
		double r = (rand() % 4) / 64.0;

		if (rand() % 4 == 0) {
			s[PERF_COUNT] = 0;
			s[PERF_HW_SUM] = s[PERF_E2E_SUM] = s[PERF_R_SUM] = 0;
			s[PERF_HW_MIN] = s[PERF_E2E_MIN] = s[PERF_R_MIN] = HUGE_VAL;
			s[PERF_HW_MAX] = s[PERF_E2E_MAX] = s[PERF_R_MAX] = -HUGE_VAL;
			s[PERF_E2E_MIN_RANK] = s[PERF_E2E_MAX_RANK] = -1;
			s[PERF_R_MIN_RANK] = s[PERF_R_MAX_RANK] = -1;
			continue;
		}
		s[PERF_COUNT] = 1;
		s[PERF_HW_SUM] = s[PERF_HW_MIN] = s[PERF_HW_MAX] = hw;
		s[PERF_E2E_SUM] = s[PERF_E2E_MIN] = s[PERF_E2E_MAX] = e2e;
		s[PERF_R_SUM] = s[PERF_R_MIN] = s[PERF_R_MAX] = r;
		s[PERF_E2E_MIN_RANK] = s[PERF_E2E_MAX_RANK] = rank;
		s[PERF_R_MIN_RANK] = s[PERF_R_MAX_RANK] = rank;
	}
}

static void
test_combine_laws(void **state)
{
	enum { RW = 16, NB = 7, LEN = (RW + 1) * PERF_FIELDS };
	static double in[NB][LEN], x[LEN], y[LEN], z[LEN];

	(void)state;
	srand(20261121);
	for (int round = 0; round < 200; round++) {
		int perm[NB];

		for (int b = 0; b < NB; b++) {
			random_buffer(in[b], RW, b);
			perm[b] = b;
		}
		/* Commutative: a.b == b.a */
		memcpy(x, in[0], sizeof(x));
		perf_combine(in[1], x, LEN);
		memcpy(y, in[1], sizeof(y));
		perf_combine(in[0], y, LEN);
		assert_memory_equal(x, y, sizeof(x));
		/* Associative: (a.b).c == a.(b.c) */
		perf_combine(in[2], x, LEN);
		memcpy(y, in[2], sizeof(y));
		perf_combine(in[1], y, LEN);
		perf_combine(in[0], y, LEN);
		assert_memory_equal(x, y, sizeof(x));
		/* Any order, any tree: the left fold against a shuffled fold
		 * of pairs. */
		for (int b = NB - 1; b > 0; b--) {
			int j = rand() % (b + 1), t = perm[b];

			perm[b] = perm[j];
			perm[j] = t;
		}
		memcpy(x, in[0], sizeof(x));
		for (int b = 1; b < NB; b++)
			perf_combine(in[b], x, LEN);
		memcpy(y, in[perm[0]], sizeof(y));
		perf_combine(in[perm[1]], y, LEN);
		memcpy(z, in[perm[2]], sizeof(z));
		for (int b = 3; b < NB; b++)
			perf_combine(in[perm[b]], z, LEN);
		perf_combine(z, y, LEN);
		assert_memory_equal(x, y, sizeof(x));
		/* A part made of whole slots combines like the whole. */
		memcpy(y, in[0], sizeof(y));
		for (int b = 1; b < NB; b++) {
			perf_combine(in[b], y, 3 * PERF_FIELDS);
			perf_combine(in[b] + 3 * PERF_FIELDS, y + 3 * PERF_FIELDS,
			             LEN - 3 * PERF_FIELDS);
		}
		assert_memory_equal(x, y, sizeof(x));
		/* The header is the minimum and the contributors' sum, and a
		 * slot's ranks its extremes'. */
		{
			double contributors = 0;

			for (int b = 0; b < NB; b++) {
				assert_true(x[PERF_COUNT] <= in[b][PERF_COUNT]);
				contributors += in[b][PERF_HW_SUM];
			}
			assert_int_equal(perf_contributors(x), (int)contributors);
		}
		for (int k = 1; k <= RW; k++) {
			const double *s = x + k * PERF_FIELDS;
			double cnt = 0;

			for (int b = 0; b < NB; b++)
				cnt += in[b][k * PERF_FIELDS + PERF_COUNT];
			assert_true(s[PERF_COUNT] == cnt);
			if (cnt == 0)
				continue;
			for (int b = 0; b < NB; b++) {
				const double *t = in[b] + k * PERF_FIELDS;

				if (t[PERF_COUNT] == 0)
					continue;
				assert_true(s[PERF_E2E_MIN] < t[PERF_E2E_MIN] ||
				            (s[PERF_E2E_MIN] == t[PERF_E2E_MIN] &&
				             s[PERF_E2E_MIN_RANK] <= b));
				assert_true(s[PERF_R_MAX] > t[PERF_R_MAX] ||
				            (s[PERF_R_MAX] == t[PERF_R_MAX] &&
				             s[PERF_R_MAX_RANK] <= b));
			}
			assert_true(in[(int)s[PERF_E2E_MIN_RANK]][k * PERF_FIELDS + PERF_E2E_MIN] ==
			            s[PERF_E2E_MIN]);
		}
	}
}

/* ---- the policy ------------------------------------------------------ */

static const char *const names[NODES] = { "n0", "n1", "n2", "n3" };

static struct perf_iter
ratio_iter(size_t iter, double r_min, int min_rank, double r_max, int max_rank)
{
	return (struct perf_iter){ .iter = iter, .nodes = NODES,
	                           .r_min = r_min, .r_min_rank = min_rank,
	                           .r_max = r_max, .r_max_rank = max_rank,
	                           .r_mean = (r_min + r_max) / 2 };
}

static void
test_policy_above(void **state)
{
	struct perf_policy_opts o = { .threshold = 0.85, .window = 3 };
	struct perf_policy *p = perf_policy_new(&o, NODES);
	/* r_max per iteration; the alert is due at 3 and at 9. */
	static const double rmax[] = { 0.91, 0.92, 0.93, 0.94, 0.95, 0.85,
	                               0.90, 0.90, 0.91, 0.99, 0.5 };
	struct perf_alert a[4];
	size_t fired_at[4], nf = 0;

	(void)state;
	assert_non_null(p);
	for (size_t i = 0; i < sizeof(rmax) / sizeof(rmax[0]); i++) {
		struct perf_iter it = ratio_iter(i + 1, 0.1, 0, rmax[i], 3);
		size_t n = perf_policy_feed(p, &it, NULL, names, a, 4);

		assert_true(n <= 1);
		if (n == 1) {
			assert_true(nf < 4);
			fired_at[nf++] = i + 1;
			assert_string_equal(a[0].kind, "ratio");
			assert_int_equal(a[0].iter, i + 1);
			assert_int_equal(a[0].rank, 3);
			assert_true(a[0].value == rmax[i]);
		}
		if (i == 2)
			assert_string_equal(a[0].message,
			                    "hw/e2e 0.93 above 0.85 for 3 iterations (max on n3)");
	}
	/* Exactly at the threshold is not above: 0.85 clears the streak. */
	assert_int_equal(nf, 2);
	assert_int_equal(fired_at[0], 3);
	assert_int_equal(fired_at[1], 9);
	perf_policy_free(p);
}

static void
test_policy_below(void **state)
{
	struct perf_policy_opts o = { .threshold = 0.5, .below = true, .window = 2 };
	struct perf_policy *p = perf_policy_new(&o, NODES);
	struct perf_alert a[2];
	struct perf_iter it;

	(void)state;
	assert_non_null(p);
	/* High r_max is no concern when watching for low utilisation. */
	it = ratio_iter(1, 0.6, 1, 0.99, 0);
	assert_int_equal(perf_policy_feed(p, &it, NULL, names, a, 2), 0);
	it = ratio_iter(2, 0.41, 2, 0.99, 0);
	assert_int_equal(perf_policy_feed(p, &it, NULL, names, a, 2), 0);
	it = ratio_iter(3, 0.42, 1, 0.99, 0);
	assert_int_equal(perf_policy_feed(p, &it, NULL, names, a, 2), 1);
	assert_string_equal(a[0].message,
	                    "hw/e2e 0.42 below 0.50 for 2 iterations (min on n1)");
	assert_int_equal(a[0].rank, 1);
	assert_int_equal(a[0].iter, 3);
	it = ratio_iter(4, 0.3, 1, 0.99, 0);
	assert_int_equal(perf_policy_feed(p, &it, NULL, names, a, 2), 0);
	/* Cleared, then two below again: fires again, without names. */
	it = ratio_iter(5, 0.5, 1, 0.99, 0);
	assert_int_equal(perf_policy_feed(p, &it, NULL, names, a, 2), 0);
	it = ratio_iter(6, 0.2, 2, 0.99, 0);
	assert_int_equal(perf_policy_feed(p, &it, NULL, NULL, a, 2), 0);
	it = ratio_iter(7, 0.25, 2, 0.99, 0);
	assert_int_equal(perf_policy_feed(p, &it, NULL, NULL, a, 2), 1);
	assert_string_equal(a[0].message,
	                    "hw/e2e 0.25 below 0.50 for 2 iterations (min on rank 2)");
	perf_policy_free(p);
}

static void
test_policy_window_one_and_room(void **state)
{
	struct perf_policy_opts o = { .threshold = 0.8, .window = 1 };
	struct perf_policy *p = perf_policy_new(&o, NODES);
	struct perf_alert a[1];
	struct perf_iter it;

	(void)state;
	assert_non_null(p);
	/* No room: the alert stays due and comes with the next call. */
	it = ratio_iter(1, 0.1, 0, 0.9, 2);
	assert_int_equal(perf_policy_feed(p, &it, NULL, names, a, 0), 0);
	it = ratio_iter(2, 0.1, 0, 0.95, 1);
	assert_int_equal(perf_policy_feed(p, &it, NULL, names, a, 1), 1);
	assert_int_equal(a[0].iter, 2);
	assert_int_equal(a[0].rank, 1);
	it = ratio_iter(3, 0.1, 0, 0.95, 1);
	assert_int_equal(perf_policy_feed(p, &it, NULL, names, a, 1), 0);
	perf_policy_free(p);

	/* Off when the threshold is 0. */
	o.threshold = 0;
	p = perf_policy_new(&o, NODES);
	assert_non_null(p);
	it = ratio_iter(1, 0.1, 0, 5, 2);
	assert_int_equal(perf_policy_feed(p, &it, NULL, names, a, 1), 0);
	perf_policy_free(p);
}

static size_t
feed_e2e(struct perf_policy *p, size_t iter, const double *e2e, int nranks,
         struct perf_alert *a, size_t max)
{
	struct perf_iter it = { .iter = iter, .nodes = nranks, .r_max = 0.1, .r_min = 0.1 };

	return perf_policy_feed(p, &it, e2e, names, a, max);
}

static void
test_policy_straggler(void **state)
{
	struct perf_policy_opts o = { .window = 3, .straggler_pct = 10 };
	struct perf_policy *p = perf_policy_new(&o, NODES);
	/* n3 slow by 15%; at iteration 3 it is not, which restarts the count. */
	double slow[NODES] = { 3315, 3315, 3300, 3812.25 };
	double fine[NODES] = { 3315, 3315, 3300, 3600 };
	struct perf_alert a[4];
	size_t iter = 0;

	(void)state;
	assert_non_null(p);
	assert_int_equal(feed_e2e(p, ++iter, slow, NODES, a, 4), 0);
	assert_int_equal(feed_e2e(p, ++iter, slow, NODES, a, 4), 0);
	assert_int_equal(feed_e2e(p, ++iter, fine, NODES, a, 4), 0);
	assert_int_equal(feed_e2e(p, ++iter, slow, NODES, a, 4), 0);
	assert_int_equal(feed_e2e(p, ++iter, slow, NODES, a, 4), 0);
	assert_int_equal(feed_e2e(p, ++iter, slow, NODES, a, 4), 1);
	assert_string_equal(a[0].kind, "straggler");
	assert_int_equal(a[0].rank, 3);
	assert_int_equal(a[0].iter, 6);
	assert_true(fabs(a[0].value - (3812.25 / 3315 - 1) * 100) < 1e-9);
	assert_string_equal(a[0].message,
	                    "n3 e2e 3812 ms is 15% above the median 3315 ms for 3 iterations");
	/* Once, until it clears. */
	assert_int_equal(feed_e2e(p, ++iter, slow, NODES, a, 4), 0);
	/* Unknown per-node times: no verdict either way. */
	assert_int_equal(feed_e2e(p, ++iter, NULL, NODES, a, 4), 0);
	perf_policy_free(p);
}

static void
test_policy_median(void **state)
{
	struct perf_policy_opts o = { .window = 1, .straggler_pct = 50 };
	struct perf_policy *p = perf_policy_new(&o, NODES);
	/* Even count: the median is the mean of 200 and 300. */
	double even[NODES] = { 400, 100, 300, 200 };
	double odd[3] = { 400, 100, 200 };
	double tie[NODES] = { 100, 100, 100, 149 };
	struct perf_alert a[4];

	(void)state;
	assert_non_null(p);
	assert_int_equal(feed_e2e(p, 1, even, NODES, a, 4), 1);
	assert_int_equal(a[0].rank, 0);
	assert_true(fabs(a[0].value - 60) < 1e-9);
	assert_string_equal(a[0].message,
	                    "n0 e2e 400 ms is 60% above the median 250 ms for 1 iterations");
	/* Below the limit: cleared. */
	assert_int_equal(feed_e2e(p, 2, tie, NODES, a, 4), 0);
	perf_policy_free(p);

	/* Odd count: the middle value. */
	p = perf_policy_new(&o, 3);
	assert_non_null(p);
	assert_int_equal(feed_e2e(p, 1, odd, 3, a, 4), 1);
	assert_int_equal(a[0].rank, 0);
	assert_string_equal(a[0].message,
	                    "n0 e2e 400 ms is 100% above the median 200 ms for 1 iterations");
	/* A value that is not finite says nothing. */
	odd[1] = NAN;
	assert_int_equal(feed_e2e(p, 2, odd, 3, a, 4), 0);
	perf_policy_free(p);

	/* Off at 0 %. */
	o.straggler_pct = 0;
	p = perf_policy_new(&o, NODES);
	assert_non_null(p);
	assert_int_equal(feed_e2e(p, 1, even, NODES, a, 4), 0);
	perf_policy_free(p);
}

static void
test_policy_invalid(void **state)
{
	struct perf_policy_opts o = { .threshold = 0.85, .window = 0 };

	(void)state;
	errno = 0;
	assert_null(perf_policy_new(&o, NODES));
	assert_int_equal(errno, EINVAL);
	o.window = 1;
	errno = 0;
	assert_null(perf_policy_new(&o, 0));
	assert_int_equal(errno, EINVAL);
	o.straggler_pct = -1;
	assert_null(perf_policy_new(&o, NODES));
	perf_policy_free(NULL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_node_one_key),
		cmocka_unit_test(test_node_three_keys),
		cmocka_unit_test(test_node_arrival_order),
		cmocka_unit_test(test_node_window_drop),
		cmocka_unit_test(test_node_forget),
		cmocka_unit_test_setup_teardown(test_pack_slots, nodes_setup, nodes_teardown),
		cmocka_unit_test_setup_teardown(test_reduce_four_nodes, nodes_setup, nodes_teardown),
		cmocka_unit_test(test_unpack_bounds),
		cmocka_unit_test_setup_teardown(test_no_training, nodes_setup, nodes_teardown),
		cmocka_unit_test(test_combine_laws),
		cmocka_unit_test(test_policy_above),
		cmocka_unit_test(test_policy_below),
		cmocka_unit_test(test_policy_window_one_and_room),
		cmocka_unit_test(test_policy_straggler),
		cmocka_unit_test(test_policy_median),
		cmocka_unit_test(test_policy_invalid),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
