/*
 * test_perf.c - per-iteration timings: a node's aggregation, the
 * reduction's buffer and operator (as MPI would apply it, without MPI),
 * and the alert policy.
 */
#include "autoconf.h"

#include "../vigil_test.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf/perf.h"

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
	struct perf_sum sum;

	assert_true(iter <= perf_node_done(n));
	assert_true(perf_node_sum(n, iter, iter, &sum));
	assert_true(sum.hw / sum.lines == hw);
	assert_true(sum.e2e / sum.lines == e2e);
}

static void
expect_missing(const struct perf_node *n, size_t iter)
{
	struct perf_sum sum;

	assert_false(iter > 0 && iter <= perf_node_done(n) && perf_node_sum(n, iter, iter, &sum));
}

/* ---- one node -------------------------------------------------------- */

static void
test_node_one_key(void **state)
{
	struct perf_node *n = perf_node_new(8);

	(void)state;
	assert_non_null(n);
	assert_int_equal(perf_node_done(n), 0);
	assert_false(perf_node_says(n));
	expect_missing(n, 0);
	expect_missing(n, 1);
	add(n, "", 2201.5, 3317.75);
	add(n, "", 2202.5, 3318.75);
	add(n, "", 2203.5, 3319.75);
	assert_int_equal(perf_node_done(n), 3);
	assert_true(perf_node_says(n));
	assert_int_equal(perf_node_lines(n), 3);
	expect_iter(n, 1, 2201.5, 3317.75);
	expect_iter(n, 2, 2202.5, 3318.75);
	expect_iter(n, 3, 2203.5, 3319.75);
	expect_missing(n, 4);
	assert_int_equal(perf_node_grain(n), 1);
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
	/* "2" appeared while "0" was at 2: it joined iteration 2, which it
	 * has; "1" holds the node at 2. */
	assert_int_equal(perf_node_done(n), 2);
	expect_iter(n, 1, 150, 1500);
	expect_iter(n, 2, (110.0 + 210 + 300) / 3, (1100.0 + 2100 + 3000) / 3);
	add(n, "2", 320, 3200);
	add(n, "1", 230, 2300);
	assert_int_equal(perf_node_done(n), 3);
	expect_iter(n, 3, (120.0 + 230 + 320) / 3, (1200.0 + 2300 + 3200) / 3);
	perf_node_free(n);
}

static void
test_node_stray_key(void **state)
{
	struct perf_node *n = perf_node_new(64);

	(void)state;
	assert_non_null(n);
	/* Untagged lines, then one line with a tag of its own: it joins the
	 * current iteration, and once the others are PERF_KEY_LAG ahead, it
	 * holds the node back no more. */
	for (int i = 1; i <= 10; i++)
		add(n, "", 100, 1000);
	add(n, "rank3", 100, 1000);
	assert_int_equal(perf_node_done(n), 10);
	for (int i = 11; i <= 10 + PERF_KEY_LAG; i++)
		add(n, "", 100, 1000);
	assert_int_equal(perf_node_done(n), 10);
	add(n, "", 100, 1000);
	assert_int_equal(perf_node_done(n), 11 + PERF_KEY_LAG);
	for (int i = 0; i < 100; i++)
		add(n, "", 100, 1000);
	assert_int_equal(perf_node_done(n), 111 + PERF_KEY_LAG);
	/* Printing again, it rejoins at the leader's iteration. */
	add(n, "rank3", 300, 3000);
	assert_int_equal(perf_node_done(n), 111 + PERF_KEY_LAG);
	expect_iter(n, 111 + PERF_KEY_LAG, 200, 2000);
	add(n, "", 100, 1000);
	assert_int_equal(perf_node_done(n), 111 + PERF_KEY_LAG);
	add(n, "rank3", 100, 1000);
	assert_int_equal(perf_node_done(n), 112 + PERF_KEY_LAG);
	perf_node_free(n);
}

static void
test_node_merges(void **state)
{
	struct perf_node *n = perf_node_new(4);
	struct perf_sum sum;

	(void)state;
	assert_non_null(n);
	/* 10 iterations in 4 slots: 4 per slot, nothing dropped. */
	for (int i = 1; i <= 10; i++)
		add(n, "", i, 10 * i);
	assert_int_equal(perf_node_done(n), 10);
	assert_int_equal(perf_node_grain(n), 4);
	assert_true(perf_node_sum(n, 1, 10, &sum));
	assert_true(sum.lines == 10);
	assert_true(sum.hw == 55);
	assert_true(sum.e2e == 550);
	/* On slot boundaries: exact. */
	assert_true(perf_node_sum(n, 5, 8, &sum));
	assert_true(sum.lines == 4 && sum.hw == 5 + 6 + 7 + 8);
	/* Across them: each slot for its share. */
	assert_true(perf_node_sum(n, 3, 6, &sum));
	assert_true(sum.lines == 4);
	assert_true(sum.hw == (1 + 2 + 3 + 4) / 2.0 + (5 + 6 + 7 + 8) / 2.0);
	/* Forgetting frees slots: the grain stays, the ring moves on. */
	perf_node_forget(n, 8);
	assert_false(perf_node_sum(n, 1, 8, &sum));
	for (int i = 11; i <= 24; i++)
		add(n, "", i, 10 * i);
	assert_int_equal(perf_node_grain(n), 4);
	assert_true(perf_node_sum(n, 9, 24, &sum));
	assert_true(sum.lines == 16);
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
	assert_int_equal(perf_node_grain(n), 1);
	perf_node_free(n);

	errno = 0;
	assert_null(perf_node_new(0));
	assert_int_equal(errno, EINVAL);
}

static void
test_node_restart(void **state)
{
	struct perf_node *n = perf_node_new(16);

	(void)state;
	assert_non_null(n);
	for (int i = 1; i <= 5; i++)
		add(n, "a", i, 10 * i);
	/* A new attempt: new processes, iterations go on after 5, and
	 * what was not reported yet stays. */
	perf_node_restart(n);
	assert_int_equal(perf_node_done(n), 5);
	expect_iter(n, 4, 4, 40);
	add(n, "b", 60, 600);
	assert_int_equal(perf_node_done(n), 6);
	expect_iter(n, 6, 60, 600);
	perf_node_free(n);
}

static struct perf_header
header(size_t min_done, int says, size_t max_done, double sum_done)
{
	return (struct perf_header){ .min_done = min_done, .says = says, .max_done = max_done,
	                             .sum_done = sum_done, .max_grain = 1 };
}

static void
test_node_lines_up(void **state)
{
	struct perf_node *n = perf_node_new(64);
	struct perf_header h;

	(void)state;
	assert_non_null(n);
	/* Late: the others are at 40 when this node prints its first line. */
	h = header(40, 3, 41, 120);
	perf_node_observe(n, &h);
	assert_false(perf_node_says(n));
	add(n, "", 5, 50);
	assert_int_equal(perf_node_done(n), 41);
	assert_true(perf_node_says(n));
	perf_node_free(n);

	/* Two lines per iteration where the others print one, three
	 * reductions in a row: from then on two lines are one iteration,
	 * counted from where the others are. */
	n = perf_node_new(256);
	assert_non_null(n);
	for (int r = 1; r <= 3; r++) {
		for (int i = 0; i < 80; i++)
			add(n, "", 1, 10);
		h = header(40 * (size_t)r, 3, 80 * (size_t)r, 80.0 * r + 2 * 40.0 * r);
		perf_node_observe(n, &h);
		if (r < 3)
			assert_int_equal(perf_node_scale(n), 1);
	}
	assert_int_equal(perf_node_scale(n), 2);
	assert_int_equal(perf_node_done(n), 120);
	add(n, "", 1, 10);
	assert_int_equal(perf_node_done(n), 120);
	add(n, "", 3, 30);
	assert_int_equal(perf_node_done(n), 121);
	expect_iter(n, 121, 2, 20);
	perf_node_free(n);

	/* An odd count at the change: the line out belongs to the next
	 * iteration, which its second line completes. */
	n = perf_node_new(256);
	assert_non_null(n);
	for (int r = 1; r <= 3; r++) {
		for (int i = 0; i < (r == 3 ? 81 : 80); i++)
			add(n, "", 1, 10);
		h = header(40 * (size_t)r, 3, 80 * (size_t)r, 80.0 * r + 2 * 40.0 * r);
		perf_node_observe(n, &h);
	}
	assert_int_equal(perf_node_scale(n), 2);
	assert_int_equal(perf_node_done(n), 120);
	add(n, "", 1, 10);
	assert_int_equal(perf_node_done(n), 121);
	add(n, "", 1, 10);
	assert_int_equal(perf_node_done(n), 121);
	add(n, "", 1, 10);
	assert_int_equal(perf_node_done(n), 122);
	/* Noise is not a multiple: 1.5 times the others never scales. */
	perf_node_free(n);
	n = perf_node_new(256);
	assert_non_null(n);
	for (int r = 1; r <= 5; r++) {
		for (int i = 0; i < 30; i++)
			add(n, "", 1, 10);
		h = header(20 * (size_t)r, 2, 30 * (size_t)r, 30.0 * r + 20.0 * r);
		perf_node_observe(n, &h);
	}
	assert_int_equal(perf_node_scale(n), 1);
	perf_node_free(n);

	/* Silent: the count stands still for three reductions while the
	 * others are far ahead; no say until it prints again, then it
	 * rejoins where they are. */
	n = perf_node_new(64);
	assert_non_null(n);
	add(n, "", 1, 10);
	for (int r = 1; r <= 3; r++) {
		h = header(1, 2, 1000, 1001);
		perf_node_observe(n, &h);
	}
	assert_true(perf_node_says(n));
	h = header(1, 2, 1000, 1001);
	perf_node_observe(n, &h);
	assert_false(perf_node_says(n));
	h = header(1200, 1, 1200, 1200);
	perf_node_observe(n, &h);
	add(n, "", 1, 10);
	assert_true(perf_node_says(n));
	assert_int_equal(perf_node_done(n), 1201);
	perf_node_free(n);
}

/* ---- the layout ----------------------------------------------------- */

static void
test_layout(void **state)
{
	struct perf_layout l;
	struct perf_header h;
	size_t ends[4];

	(void)state;
	perf_layout_init(&l, 4, 0);
	perf_layout_ends(&l, ends);
	assert_int_equal(ends[0], 1);
	assert_int_equal(ends[3], 4);
	/* The slowest node reached 10: everything up to it is one cut, and
	 * the stride lets 3 slots reach 1.5 times as far again. */
	h = header(10, 2, 12, 22);
	perf_layout_next(&l, &h, 0);
	assert_int_equal(l.stride, 16);
	perf_layout_ends(&l, ends);
	assert_int_equal(ends[0], 10);
	assert_int_equal(ends[1], 16);
	assert_int_equal(ends[2], 32);
	assert_int_equal(ends[3], 48);
	/* Slow again: the groups narrow, a quarter at a time. */
	h = header(11, 2, 12, 23);
	perf_layout_next(&l, &h, 10);
	assert_int_equal(l.base, 10);
	assert_int_equal(l.target, 11);
	perf_layout_ends(&l, ends);
	assert_int_equal(ends[0], 11);
	assert_true(l.stride < 16);
	for (int i = 0; i < 20; i++) {
		h = header(12 + (size_t)i, 2, 12 + (size_t)i, 24.0 + 2 * i);
		perf_layout_next(&l, &h, 11 + (size_t)i);
	}
	assert_int_equal(l.stride, 1);
	/* Nobody has a say: the target stays at the base. */
	h = header(0, 0, 0, 0);
	perf_layout_next(&l, &h, 40);
	assert_int_equal(l.target, 40);
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
	struct perf_layout l;
	double buf[NODES][(W + 1) * PERF_FIELDS];
	double e2e[NODES][W];
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
	/* as processes print: each iteration's lines close together */
	for (size_t i = 1; i <= 5; i++) {
		feed_node(s->n[0], 0, "0", i, i, -8);
		feed_node(s->n[0], 0, "1", i, i, 8);
		feed_node(s->n[1], 1, "a", i, i, 0);
		if (i <= 3)
			feed_node(s->n[1], 1, "b", i, i, 0);
		if (i <= 4)
			feed_node(s->n[2], 2, "", i, i, 0);
		feed_node(s->n[3], 3, "7", i, i, 0);
	}
	perf_layout_init(&s->l, W, 0);
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
pack_all(struct nodes *s)
{
	assert_int_equal(perf_buffer_len(W), sizeof(s->buf[0]) / sizeof(double));
	for (int r = 0; r < NODES; r++)
		perf_pack(s->n[r], &s->l, s->l.base, r, s->buf[r], s->e2e[r]);
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
	assert_int_equal(it->first, iter);
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
	struct perf_header h;
	const double *slot;

	pack_all(s);
	perf_header_read(s->buf[1], &h);
	assert_int_equal(h.min_done, 3);
	assert_int_equal(h.says, 1);
	assert_int_equal(h.max_grain, 1);
	perf_header_read(s->buf[0], &h);
	assert_int_equal(h.min_done, 5);
	/* Rank 3's iteration 2: its own values as count 1 and every
	 * extreme, with its rank; its e2e for the gather. */
	slot = s->buf[3] + 2 * PERF_FIELDS;
	assert_true(slot[PERF_COUNT] == 1);
	assert_true(slot[PERF_E2E_SUM] == 1.25 * base_e2e(2));
	assert_true(s->e2e[3][1] == 1.25 * base_e2e(2));
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
		assert_true(isnan(s->e2e[1][k - 1]));
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
	struct perf_header h;
	size_t nb = 99, n = 99;

	pack_all(s);
	reduce_sequential(s, seq);
	reduce_tree(s, tree);
	assert_memory_equal(seq, tree, sizeof(seq));
	perf_header_read(seq, &h);
	assert_int_equal(h.min_done, 3);
	assert_int_equal(h.max_done, 5);
	assert_int_equal(h.says, 4);
	assert_true(h.sum_done == 5 + 3 + 4 + 5);
	/* Iteration 4: ranks 0, 2, 3 have it; 5: ranks 0 and 3. */
	assert_true(seq[4 * PERF_FIELDS + PERF_COUNT] == 3);
	assert_true(seq[5 * PERF_FIELDS + PERF_COUNT] == 2);
	assert_true(seq[6 * PERF_FIELDS + PERF_COUNT] == 0);

	perf_unpack(seq, &s->l, &nb, out, &n);
	assert_int_equal(nb, 3);
	assert_int_equal(n, 3);
	for (size_t i = 0; i < n; i++) {
		expect_reduced(&out[i], i + 1);
		assert_int_equal(out[i].slot, i);
	}

	/* The next cycle: everyone forgets through the new base; rank 1's
	 * "b" catches up on 4, rank 2 reaches 5. */
	for (int r = 0; r < NODES; r++) {
		perf_node_forget(s->n[r], nb);
		perf_node_observe(s->n[r], &h);
	}
	perf_layout_next(&s->l, &h, nb);
	feed_node(s->n[1], 1, "b", 4, 4, 0);
	feed_node(s->n[2], 2, "", 5, 5, 0);
	pack_all(s);
	/* The slot of the old base's next iteration is now slot 1. */
	assert_true(s->buf[0][PERF_FIELDS + PERF_COUNT] == 1);
	reduce_tree(s, tree);
	perf_unpack(tree, &s->l, &nb, out, &n);
	assert_int_equal(nb, 4);
	assert_int_equal(n, 1);
	expect_reduced(&out[0], 4);
}

static void
test_reduce_fast(void **state)
{
	enum { SLOTS = 8, PER = 1000 };
	struct perf_node *n[2];
	double a[(SLOTS + 1) * PERF_FIELDS], b[(SLOTS + 1) * PERF_FIELDS];
	struct perf_iter out[SLOTS];
	struct perf_layout l;
	struct perf_header h;
	size_t nb = 0, cnt, seen = 0, widest = 0;

	(void)state;
	/* Two nodes print PER iterations between reductions, far more than
	 * 8 slots: each reduction catches up, with groups as wide as it
	 * takes, and every iteration is reported once, in order. */
	for (int r = 0; r < 2; r++) {
		n[r] = perf_node_new(64);
		assert_non_null(n[r]);
	}
	perf_layout_init(&l, SLOTS, 0);
	for (int round = 1; round <= 20; round++) {
		for (int i = 0; i < PER; i++) {
			add(n[0], "", 1, 2);
			add(n[1], "", 3, 4);
		}
		perf_pack(n[0], &l, l.base, 0, a, NULL);
		perf_pack(n[1], &l, l.base, 1, b, NULL);
		perf_combine(a, b, perf_buffer_len(SLOTS));
		perf_unpack(b, &l, &nb, out, &cnt);
		for (size_t k = 0; k < cnt; k++) {
			assert_int_equal(out[k].first, seen + 1);
			seen = out[k].iter;
			if (out[k].iter - out[k].first + 1 > widest)
				widest = out[k].iter - out[k].first + 1;
			assert_true(out[k].e2e_mean == 3);
			assert_true(out[k].hw_mean == 2);
			assert_int_equal(out[k].e2e_max_rank, 1);
		}
		perf_header_read(b, &h);
		for (int r = 0; r < 2; r++) {
			perf_node_forget(n[r], nb);
			perf_node_observe(n[r], &h);
		}
		/* Caught up from the second round on, but for the group that
		 * straddles where the nodes are. */
		if (round >= 2)
			assert_true(nb > (size_t)round * PER - l.stride && nb <= (size_t)round * PER);
		perf_layout_next(&l, &h, nb);
	}
	/* Two more reductions, nothing new: the rest, to the iteration. */
	for (int round = 0; round < 2; round++) {
		perf_pack(n[0], &l, l.base, 0, a, NULL);
		perf_pack(n[1], &l, l.base, 1, b, NULL);
		perf_combine(a, b, perf_buffer_len(SLOTS));
		perf_unpack(b, &l, &nb, out, &cnt);
		for (size_t k = 0; k < cnt; k++) {
			assert_int_equal(out[k].first, seen + 1);
			seen = out[k].iter;
		}
		perf_header_read(b, &h);
		perf_layout_next(&l, &h, nb);
	}
	assert_int_equal(seen, 20 * PER);
	assert_true(widest >= PER / SLOTS && widest <= PER);
	/* Slow again: back to one iteration per group. */
	for (int round = 0; round < 30; round++) {
		add(n[0], "", 1, 2);
		add(n[1], "", 3, 4);
		perf_pack(n[0], &l, l.base, 0, a, NULL);
		perf_pack(n[1], &l, l.base, 1, b, NULL);
		perf_combine(a, b, perf_buffer_len(SLOTS));
		perf_unpack(b, &l, &nb, out, &cnt);
		perf_header_read(b, &h);
		perf_layout_next(&l, &h, nb);
	}
	assert_int_equal(l.stride, 1);
	assert_int_equal(cnt, 1);
	assert_int_equal(out[0].first, out[0].iter);
	for (int r = 0; r < 2; r++)
		perf_node_free(n[r]);
}

static void
test_no_training(void **state)
{
	struct nodes *s = *state;
	double seq[(W + 1) * PERF_FIELDS];
	struct perf_iter out[W];
	struct perf_header h;
	size_t nb = 99, n = 99;

	/* Rank 1 has no training: it packs nothing and has no say in how
	 * far everyone is; the three others complete 1..4 together. */
	pack_all(s);
	perf_pack(NULL, &s->l, 0, 1, s->buf[1], NULL);
	assert_true(s->buf[1][PERF_COUNT] == HUGE_VAL);
	assert_true(s->buf[1][PERF_FIELDS + PERF_COUNT] == 0);
	assert_true(s->buf[1][PERF_FIELDS + PERF_E2E_MIN_RANK] == -1);
	reduce_sequential(s, seq);
	perf_header_read(seq, &h);
	assert_int_equal(h.says, 3);
	perf_unpack(seq, &s->l, &nb, out, &n);
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

	/* Nobody has a training: nothing is reported and the base stays;
	 * the bases agree on the furthest (after a restart). */
	perf_layout_init(&s->l, W, 2);
	for (int r = 0; r < NODES; r++)
		perf_pack(NULL, &s->l, 2 + (size_t)r, r, s->buf[r], NULL);
	reduce_tree(s, seq);
	perf_header_read(seq, &h);
	assert_int_equal(h.says, 0);
	assert_int_equal(h.max_base, 5);
	perf_unpack(seq, &s->l, &nb, out, &n);
	assert_int_equal(nb, 2);
	assert_int_equal(n, 0);
}

/* A random node's buffer as perf_pack shapes it.  Values are multiples of
 * 1/8 below 4096 and ratios multiples of 1/64: sums of a few are exact,
 * and the small sets make ties common. */
static void
random_buffer(double *buf, size_t w, int rank)
{
	struct perf_node *n = perf_node_new(4);
	struct perf_layout l;

	perf_layout_init(&l, w, 0);
	assert_non_null(n);
	if (rand() % 2)
		add(n, "", 1, 2);
	/* the header as a node makes it, with random values */
	perf_pack(rand() % 3 ? n : NULL, &l, (size_t)(rand() % 50), rank, buf, NULL);
	buf[0] = buf[0] == HUGE_VAL ? HUGE_VAL : rand() % 50;
	buf[2] = rand() % 50;
	buf[4] = 1 << (rand() % 4);
	buf[6] = (rand() % 8) * 0.125;
	perf_node_free(n);
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
		struct perf_header hx, hb;
		int perm[NB], says = 0;
		size_t min_done = SIZE_MAX, max_base = 0;

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
		/* The header: the fewest done and the furthest base over the
		 * nodes, the nodes with a say summed; a slot's ranks its
		 * extremes'. */
		perf_header_read(x, &hx);
		for (int b = 0; b < NB; b++) {
			perf_header_read(in[b], &hb);
			says += hb.says;
			if (hb.says && hb.min_done < min_done)
				min_done = hb.min_done;
			if (hb.max_base > max_base)
				max_base = hb.max_base;
			assert_true(hx.max_grain >= hb.max_grain);
		}
		assert_int_equal(hx.says, says);
		if (says)
			assert_int_equal(hx.min_done, min_done);
		assert_int_equal(hx.max_base, max_base);
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
	return (struct perf_iter){ .first = iter, .iter = iter, .nodes = NODES,
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
test_policy_groups(void **state)
{
	struct perf_policy_opts o = { .threshold = 0.85, .window = 5 };
	struct perf_policy *p = perf_policy_new(&o, NODES);
	struct perf_alert a[2];
	struct perf_iter it;

	(void)state;
	assert_non_null(p);
	/* A group of 4 iterations counts 4 towards the window of 5. */
	it = ratio_iter(4, 0.1, 0, 0.9, 2);
	it.first = 1;
	assert_int_equal(perf_policy_feed(p, &it, NULL, names, a, 2), 0);
	it = ratio_iter(8, 0.1, 0, 0.9, 2);
	it.first = 5;
	assert_int_equal(perf_policy_feed(p, &it, NULL, names, a, 2), 1);
	assert_int_equal(a[0].iter, 8);
	/* One group wider than the window is enough by itself. */
	it = ratio_iter(9, 0.1, 0, 0.5, 2);
	assert_int_equal(perf_policy_feed(p, &it, NULL, names, a, 2), 0);
	it = ratio_iter(72, 0.1, 0, 0.9, 1);
	it.first = 10;
	assert_int_equal(perf_policy_feed(p, &it, NULL, names, a, 2), 1);
	assert_int_equal(a[0].rank, 1);
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
	struct perf_iter it = { .first = iter, .iter = iter, .nodes = nranks,
	                        .r_max = 0.1, .r_min = 0.1 };

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
	                    "n3 e2e 3812 ms is 15% above the median 3315 ms of the other nodes "
	                    "for 3 iterations");
	/* Once, until it clears. */
	assert_int_equal(feed_e2e(p, ++iter, slow, NODES, a, 4), 0);
	/* Unknown per-node times: no verdict either way. */
	assert_int_equal(feed_e2e(p, ++iter, NULL, NODES, a, 4), 0);
	perf_policy_free(p);
}

static void
test_policy_two_nodes(void **state)
{
	struct perf_policy_opts o = { .window = 2, .straggler_pct = 20 };
	struct perf_policy *p = perf_policy_new(&o, 2);
	/* With two nodes the median of both is their mean: a node 3 times
	 * slower is only 50% above it.  Against the other node, it is
	 * named; the faster one never is. */
	double e2e[2] = { 100, 300 };
	struct perf_alert a[2];

	(void)state;
	assert_non_null(p);
	assert_int_equal(feed_e2e(p, 1, e2e, 2, a, 2), 0);
	assert_int_equal(feed_e2e(p, 2, e2e, 2, a, 2), 1);
	assert_int_equal(a[0].rank, 1);
	assert_true(a[0].value == 200);
	assert_string_equal(a[0].message, "n1 e2e 300 ms is 200% above n0's 100 ms for 2 iterations");
	perf_policy_free(p);
}

static void
test_policy_median(void **state)
{
	struct perf_policy_opts o = { .window = 1, .straggler_pct = 50 };
	struct perf_policy *p = perf_policy_new(&o, NODES);
	/* n0 against the others' 100, 300, 200: their median 200. */
	double even[NODES] = { 400, 100, 300, 200 };
	double odd[3] = { 400, 100, 200 };
	double tie[NODES] = { 100, 100, 100, 149 };
	struct perf_alert a[4];

	(void)state;
	assert_non_null(p);
	assert_int_equal(feed_e2e(p, 1, even, NODES, a, 4), 1);
	assert_int_equal(a[0].rank, 0);
	assert_true(fabs(a[0].value - 100) < 1e-9);
	assert_string_equal(a[0].message,
	                    "n0 e2e 400 ms is 100% above the median 200 ms of the other nodes "
	                    "for 1 iterations");
	/* Below the limit: cleared. */
	assert_int_equal(feed_e2e(p, 2, tie, NODES, a, 4), 0);
	perf_policy_free(p);

	/* Odd count: n0 against 100 and 200, their mean 150. */
	p = perf_policy_new(&o, 3);
	assert_non_null(p);
	assert_int_equal(feed_e2e(p, 1, odd, 3, a, 4), 1);
	assert_int_equal(a[0].rank, 0);
	assert_string_equal(a[0].message,
	                    "n0 e2e 400 ms is 167% above the median 150 ms of the other nodes "
	                    "for 1 iterations");
	/* A node without a value is left out, not the comparison: n0
	 * against n2 alone. */
	odd[1] = NAN;
	assert_int_equal(feed_e2e(p, 2, odd, 3, a, 4), 0);
	odd[0] = 200;
	assert_int_equal(feed_e2e(p, 3, odd, 3, a, 4), 0);
	odd[0] = 401;
	odd[2] = 100;
	assert_int_equal(feed_e2e(p, 4, odd, 3, a, 4), 1);
	assert_string_equal(a[0].message, "n0 e2e 401 ms is 301% above n2's 100 ms for 1 iterations");
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

/* ---- the medians' sketch ---------------------------------------------- */

static int
cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The sketch's median against the exact one, for N values from GEN. */
static void
expect_median(double (*gen)(int), int n)
{
	struct perf_sketch s = { 0 };
	double *v = malloc((size_t)n * sizeof(*v)), exact, got;

	assert_non_null(v);
	for (int i = 0; i < n; i++) {
		v[i] = gen(i);
		perf_sketch_add(&s, v[i], 1);
	}
	qsort(v, (size_t)n, sizeof(*v), cmp_d);
	exact = v[(n - 1) / 2];
	got = perf_sketch_median(&s);
	assert_true(fabs(got / exact - 1) <= PERF_SKETCH_ALPHA);
	free(v);
}

static double
steady(int i)
{
	return 3317.79 + (i % 17) * 3.1;
}

static double
drifting(int i)
{
	/* slows down by a factor of 40 over the job */
	return 100 * (1 + 39.0 * i / 20000);
}

static double
spiky(int i)
{
	/* checkpoints: one iteration in 10 takes 50 times as long; a tiny
	 * first one */
	return i == 0 ? 0.001 : i % 10 == 0 ? 5000 : 100 + (i % 7);
}

static double
rising(int i)
{
	return 1 + i;
}

static void
test_sketch(void **state)
{
	struct perf_sketch s = { 0 };

	(void)state;
	assert_true(isnan(perf_sketch_median(&s)));
	expect_median(steady, 10000);
	expect_median(drifting, 20000);
	expect_median(spiky, 5000);
	expect_median(rising, 100);
	/* Weighted: a group of 1000 iterations at 10 ms outweighs 999 at 1 s. */
	for (int i = 0; i < 999; i++)
		perf_sketch_add(&s, 1000, 1);
	perf_sketch_add(&s, 10, 1000);
	assert_true(fabs(perf_sketch_median(&s) / 10 - 1) <= PERF_SKETCH_ALPHA);
	/* Nothing that is not a time counts. */
	perf_sketch_add(&s, NAN, 5000);
	perf_sketch_add(&s, -1, 5000);
	perf_sketch_add(&s, 0, 5000);
	assert_int_equal(s.n, 1999);
	/* Very long jobs: the counts halve, the median stays. */
	for (int i = 0; i < 3000; i++)
		perf_sketch_add(&s, 10, UINT32_C(1) << 20);
	assert_true(s.n <= (UINT64_C(1) << 31));
	assert_true(fabs(perf_sketch_median(&s) / 10 - 1) <= PERF_SKETCH_ALPHA);
	assert_true(sizeof(s) <= 540);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_node_one_key),
		cmocka_unit_test(test_node_three_keys),
		cmocka_unit_test(test_node_stray_key),
		cmocka_unit_test(test_node_merges),
		cmocka_unit_test(test_node_forget),
		cmocka_unit_test(test_node_restart),
		cmocka_unit_test(test_node_lines_up),
		cmocka_unit_test(test_layout),
		cmocka_unit_test_setup_teardown(test_pack_slots, nodes_setup, nodes_teardown),
		cmocka_unit_test_setup_teardown(test_reduce_four_nodes, nodes_setup, nodes_teardown),
		cmocka_unit_test(test_reduce_fast),
		cmocka_unit_test_setup_teardown(test_no_training, nodes_setup, nodes_teardown),
		cmocka_unit_test(test_combine_laws),
		cmocka_unit_test(test_policy_above),
		cmocka_unit_test(test_policy_groups),
		cmocka_unit_test(test_policy_below),
		cmocka_unit_test(test_policy_window_one_and_room),
		cmocka_unit_test(test_policy_straggler),
		cmocka_unit_test(test_policy_two_nodes),
		cmocka_unit_test(test_policy_median),
		cmocka_unit_test(test_policy_invalid),
		cmocka_unit_test(test_sketch),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
