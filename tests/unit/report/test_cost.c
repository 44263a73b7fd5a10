/*
 * test_cost.c - where a job's time went: an attempt's wall time cut at
 * its dates (pre-check, staging, start, the iterations split by their
 * account, detection, checkpoint, stop), dates out of order or missing,
 * and the chain (gaps, redone iterations, ETTR).
 */
#include "autoconf.h"

#include "../vigil_test.h"

#include <math.h>
#include <string.h>

#include "report/report_cost.h"

static struct cost_marks
none(void)
{
	return (struct cost_marks){
		.alloc = NAN, .eligible = NAN, .start = NAN, .verdict = NAN, .staged = NAN, .it_first_end = NAN,
		.it_first_ms = NAN, .it_last_end = NAN, .fault = NAN, .ckpt = NAN,
		.exit_last = NAN, .stop = NAN, .end = NAN, .iterations = NAN,
		.median_ms = NAN, .max_ms = NAN,
	};
}

static double
sum(const struct cost_attempt *a)
{
	double s = 0;

	for (int c = 0; c < COST_N; c++)
		if (c != COST_GAP)
			s += a->secs[c];
	return s;
}

/* A fault on a node: iterations 4..38 s, the training fails at 40. */
static struct cost_attempt
faulted(double t0)
{
	struct cost_attempt a = { .m = none() };

	a.m.start = t0;
	a.m.verdict = t0 + 1;
	a.m.staged = t0 + 2;
	a.m.it_first_end = t0 + 5;     /* the first iteration took 1 s */
	a.m.it_first_ms = 1000;
	a.m.it_last_end = t0 + 38;
	a.m.iterations = 30;
	a.m.median_ms = 30000;
	a.m.max_ms = 33000;
	a.m.fault = t0 + 40;
	a.m.ckpt = t0 + 40.5;
	a.m.exit_last = t0 + 42;
	a.m.end = t0 + 43;
	a.m.saved = true;
	return a;
}

static void
test_split(void **state)
{
	struct cost_attempt a = faulted(1000);

	(void)state;
	cost_split(&a);
	assert_float_equal(a.wall, 43, 1e-9);
	assert_float_equal(a.secs[COST_PRECHECK], 1, 1e-9);
	assert_float_equal(a.secs[COST_STAGING], 1, 1e-9);
	assert_float_equal(a.secs[COST_START], 2, 1e-9);       /* 2 .. 4 */
	assert_float_equal(a.secs[COST_PRODUCTIVE], 30, 1e-9); /* of 34 s of iterations */
	assert_float_equal(a.secs[COST_STRAGGLER], 3, 1e-9);
	assert_float_equal(a.secs[COST_OTHER], 1, 1e-9);
	assert_float_equal(a.secs[COST_DETECTION], 2, 1e-9);   /* 38 .. 40 */
	assert_float_equal(a.secs[COST_CHECKPOINT], 1.5, 1e-9);
	assert_float_equal(a.secs[COST_STOP], 0.5 + 1, 1e-9);
	assert_float_equal(sum(&a), a.wall, 1e-9);
	assert_int_equal(a.segs[0].cause, COST_PRECHECK);
	assert_int_equal(a.segs[3].cause, COST_ITER);
	assert_float_equal(a.segs[3].from, 1004, 1e-9);
	assert_float_equal(a.segs[3].to, 1038, 1e-9);
}

static void
test_odd_dates(void **state)
{
	struct cost_attempt a = faulted(1000);

	(void)state;
	/* the e2e times cover more than the clock saw: shared in proportion */
	a.m.median_ms = 60000;
	a.m.max_ms = 68000;
	cost_split(&a);
	assert_float_equal(a.secs[COST_PRODUCTIVE], 34.0 * 60 / 68, 1e-9);
	assert_float_equal(a.secs[COST_STRAGGLER], 34.0 * 8 / 68, 1e-9);
	assert_float_equal(a.secs[COST_OTHER], 0, 1e-9);
	/* a fault during the iterations (training went on): no detection */
	a = faulted(1000);
	a.m.fault = 1020;
	cost_split(&a);
	assert_float_equal(a.secs[COST_DETECTION], 0, 1e-9);
	assert_float_equal(sum(&a), a.wall, 1e-9);
	/* dates outside the attempt are held to it; no account: no iterations */
	a = faulted(1000);
	a.m.verdict = 900;
	a.m.exit_last = 2000;
	a.m.iterations = NAN;
	cost_split(&a);
	assert_float_equal(a.secs[COST_PRECHECK], 0, 1e-9);
	assert_float_equal(a.secs[COST_PRODUCTIVE], 0, 1e-9);
	assert_float_equal(sum(&a), 43, 1e-9);
	/* no end: nothing */
	a.m.end = NAN;
	cost_split(&a);
	assert_float_equal(a.wall, 0, 0);
	assert_int_equal(a.nsegs, 0);
}

static void
test_chain(void **state)
{
	struct cost_attempt a[3];
	struct cost_chain c;

	(void)state;
	a[0] = faulted(1000);
	a[0].m.saved = false;          /* no confirmed checkpoint: its 30 iterations are redone */
	a[1] = faulted(1060);          /* 17 s after the first ended */
	a[2] = faulted(1120);
	for (int i = 0; i < 3; i++)
		cost_split(&a[i]);
	cost_chain(a, 3, &c);
	assert_float_equal(a[0].secs[COST_GAP], 0, 0);
	assert_float_equal(a[1].secs[COST_GAP], 17, 1e-9);
	assert_float_equal(a[1].redone_iters, 30, 1e-9);
	assert_float_equal(a[1].secs[COST_REDONE], 30, 1e-9);
	assert_float_equal(a[1].secs[COST_PRODUCTIVE], 0, 1e-9);
	assert_float_equal(a[2].secs[COST_REDONE], 0, 0);  /* the second saved */
	assert_float_equal(c.elapsed, 163, 1e-9);
	assert_float_equal(c.secs[COST_PRODUCTIVE], 60, 1e-9);
	assert_float_equal(c.secs[COST_GAP], 34, 1e-9);
	assert_float_equal(c.ettr, 60.0 / 163, 1e-9);
	/* everything is somewhere: the causes add up to the elapsed time */
	{
		double s = 0;

		for (int k = 0; k < COST_N; k++)
			s += c.secs[k];
		assert_float_equal(s, c.elapsed, 1e-9);
	}
	cost_chain(a, 0, &c);
	assert_true(isnan(c.ettr));
}

/* Slurm's start of an allocation: the stretch to the agent's start is the
 * attempt's launch, the gap before it is Slurm's alone. */
static void
test_alloc(void **state)
{
	struct cost_attempt a[2];
	struct cost_chain c;

	(void)state;
	a[0] = faulted(1000);
	a[0].m.alloc = 996;
	a[1] = faulted(1060);
	a[1].m.alloc = 1057;
	for (int i = 0; i < 2; i++)
		cost_split(&a[i]);
	assert_float_equal(a[0].secs[COST_LAUNCH], 4, 1e-9);
	assert_float_equal(a[0].wall, 47, 1e-9);
	assert_float_equal(sum(&a[0]), 47, 1e-9);
	cost_chain(a, 2, &c);
	assert_float_equal(a[1].secs[COST_GAP], 1057 - 1043, 1e-9);
	assert_float_equal(c.t0, 996, 1e-9);
	assert_float_equal(c.elapsed, 1103 - 996, 1e-9);
	assert_float_equal(c.secs[COST_LAUNCH], 7, 1e-9);
	/* an allocation "after" the agent's start is no allocation */
	a[0].m.alloc = 1001;
	cost_split(&a[0]);
	assert_float_equal(a[0].secs[COST_LAUNCH], 0, 0);
	assert_float_equal(a[0].wall, 43, 1e-9);
}

/* The gap split at the eligible time of the next allocation: the requeue
 * delay before it, the queue wait after; bounded by the gap; not split
 * without the eligible time or Slurm's start. */
static void
test_gap_split(void **state)
{
	const double el[] = { 1050, 1030, 1070 }, requeue[] = { 7, 0, 14 };
	struct cost_attempt a[3];
	struct cost_chain c;

	(void)state;
	for (int k = 0; k < 3; k++) {
		a[0] = faulted(1000);
		a[0].m.alloc = 996;
		a[1] = faulted(1060);
		a[1].m.alloc = 1057;
		a[1].m.eligible = el[k];
		for (int i = 0; i < 2; i++)
			cost_split(&a[i]);
		cost_chain(a, 2, &c);
		assert_float_equal(a[0].requeue_s, 0, 0);
		assert_float_equal(a[1].requeue_s, requeue[k], 1e-9);
		assert_float_equal(a[1].queue_s, 14 - requeue[k], 1e-9);
		assert_float_equal(c.requeue_s, requeue[k], 1e-9);
		assert_float_equal(c.queue_s, 14 - requeue[k], 1e-9);
	}
	/* a third attempt without an eligible time: the chain's split unknown */
	a[2] = faulted(1120);
	a[2].m.alloc = 1110;
	cost_split(&a[2]);
	cost_chain(a, 3, &c);
	assert_true(isnan(a[2].requeue_s) && isnan(a[2].queue_s));
	assert_true(isnan(c.requeue_s) && isnan(c.queue_s));
	assert_float_equal(a[2].secs[COST_GAP], 1110 - 1103, 1e-9);
	/* an eligible time without Slurm's start: not split either */
	a[2].m.alloc = NAN;
	a[2].m.eligible = 1105;
	cost_split(&a[2]);
	cost_chain(a, 3, &c);
	assert_true(isnan(a[2].requeue_s));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_split),
		cmocka_unit_test(test_odd_dates),
		cmocka_unit_test(test_chain),
		cmocka_unit_test(test_alloc),
		cmocka_unit_test(test_gap_split),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
