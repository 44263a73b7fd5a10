/*
 * test_jobperf.c - performance detection in `vigil run` as the coordinator
 * runs it, in a world of one (no MPI: every reduction completes at once):
 * the lines of an inner mpirun attributed to the ranks that run them
 * (Horovod mode), the reductions at the end catching up to the last
 * iteration, and an attempt after a restart going on where the last one
 * was.
 */
#include "autoconf.h"

#include "../vigil_test.h"
#include "../scratch.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cJSON.h>

#include "agent/run.h"
#include "comm/peer.h"
#include "perf/jobperf.h"

struct rec {
	int ticks, alerts;
	char said[16][300];
	int nsaid;
	char names[4][8];
	cJSON *account;    /* the "account" event's details */
};

static int
tick(void *arg)
{
	((struct rec *)arg)->ticks++;
	return 0;
}

static void
alert(void *arg, int rank, const char *message)
{
	(void)rank;
	(void)message;
	((struct rec *)arg)->alerts++;
}

static const char *
host(void *arg, int rank)
{
	struct rec *r = arg;

	return rank >= 0 && rank < 4 ? r->names[rank] : "?";
}

static void
event(void *arg, const char *node, int rank, const char *kind, const char *severity,
      const char *message, cJSON *details)
{
	struct rec *r = arg;

	(void)node;
	(void)rank;
	(void)severity;
	(void)message;
	if (strcmp(kind, "account") == 0 && !r->account)
		r->account = details;
	else
		cJSON_Delete(details);
}

static void
say(void *arg, const char *line)
{
	struct rec *r = arg;

	if (r->nsaid < 16)
		snprintf(r->said[r->nsaid++], sizeof(r->said[0]), "%s", line);
}

struct fix {
	struct peer *p;
	struct run_opts o;
	struct rec rec;
	struct jobperf *jp;
	double now;
};

static int
setup(void **state)
{
	struct fix *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	setenv("VIGIL_MPI", "0", 1);
	if (peer_init(NULL, NULL, &f->p) < 0)
		return -1;
	f->o.perf_window = 5;
	f->o.straggler_pct = 50;
	f->o.perf_interval_s = 1;
	for (int r = 0; r < 4; r++)
		snprintf(f->rec.names[r], sizeof(f->rec.names[r]), "n%d", r);
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fix *f = *state;

	jobperf_free(f->jp);
	cJSON_Delete(f->rec.account);
	peer_finalize(f->p, true);
	free(f);
	return 0;
}

static void
start(struct fix *f, int size)
{
	struct jobperf_ops ops = { tick, alert, host, event, say, &f->rec };

	f->jp = jobperf_new(&f->o, f->p, 0, size, &ops, f->now);
	assert_non_null(f->jp);
}

static void
line(struct fix *f, const char *tag, double hw, double e2e)
{
	char buf[200];
	int n = snprintf(buf, sizeof(buf), "%sthis iteration hardware time is %.3f and e2e time is %.3f ms.",
	                 tag, hw, e2e);

	jobperf_line(f->jp, buf, (size_t)n);
}

/* One interval: the coordinator's turn (a tick, the reduction). */
static void
interval(struct fix *f)
{
	f->now += f->o.perf_interval_s;
	(void)jobperf_cycle(f->jp, f->now, true);
	(void)jobperf_cycle(f->jp, f->now, true);
}

/* The end: final reductions until idle. */
static void
finish(struct fix *f)
{
	jobperf_final(f->jp);
	for (int i = 0; i < 10 && !jobperf_idle(f->jp); i++)
		(void)jobperf_cycle(f->jp, f->now, false);
	assert_true(jobperf_idle(f->jp));
}

static cJSON *
report(struct fix *f)
{
	cJSON *r = jobperf_report(f->jp);

	assert_non_null(r);
	return r;
}

static double
num(cJSON *o, const char *key)
{
	cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	assert_true(cJSON_IsNumber(v));
	return v->valuedouble;
}

/*
 * ITERS iterations of Horovod mode on two nodes of 2 slots: the inner
 * mpirun's processes 0, 1 run on n0, 2 and 3 on n1, and n1's are 3 times
 * slower; all their lines reach n0's agent, tagged (n1's first when
 * N1_FIRST).  An interval every 5 iterations, then the end.
 */
static void
horovod_lines(struct fix *f, int iters, bool n1_first)
{
	for (int i = 1; i <= iters; i++) {
		for (int k = 0; k < 4; k++) {
			int p = n1_first ? 3 - k : k;
			char tag[32];

			snprintf(tag, sizeof(tag), "[1,%d]<stdout>:", p);
			line(f, tag, p < 2 ? 70 : 210, p < 2 ? 100 : 300);
		}
		if (i % 5 == 0)
			interval(f);
	}
	finish(f);
}

static void
test_horovod_attribution(void **state)
{
	struct fix *f = *state;
	static const int members[] = { 0, 1 }, procs[] = { 2, 2 };
	struct jobperf_attempt a = { 0, members, 2, procs, true };
	cJSON *r, *nodes;
	int found = 0;

	start(f, 2);
	assert_int_equal(jobperf_set_attempt(f->jp, &a), 0);
	horovod_lines(f, 30, false);
	assert_int_equal(f->rec.alerts, 1);
	for (int i = 0; i < f->rec.nsaid; i++)
		found += strcmp(f->rec.said[i], "vigil: performance alert: n1 e2e 300 ms is 200% "
		                "above n0's 100 ms for 5 iterations") == 0;
	assert_int_equal(found, 1);
	r = report(f);
	assert_int_equal(num(r, "iterations"), 30);
	nodes = cJSON_GetObjectItemCaseSensitive(r, "nodes");
	assert_int_equal(cJSON_GetArraySize(nodes), 2);
	assert_true(fabs(num(cJSON_GetArrayItem(nodes, 1), "median_e2e_ms") / 300 - 1) <= 0.01);
	assert_int_equal(num(cJSON_GetArrayItem(nodes, 1), "samples"), 30);
	cJSON_Delete(r);
}

/* Horovod mode: the iterations are dated by the coordinator's own node's
 * processes, whose lines come tagged like the others' (n1's, 3 times
 * slower, come first), not by every tagged line, nor by none. */
static void
test_horovod_account(void **state)
{
	struct fix *f = *state;
	static const int members[] = { 0, 1 }, procs[] = { 2, 2 };
	struct jobperf_attempt a = { 0, members, 2, procs, true };
	cJSON *d;

	start(f, 2);
	assert_int_equal(jobperf_set_attempt(f->jp, &a), 0);
	horovod_lines(f, 10, true);
	jobperf_account(f->jp, NULL, 1, 0, 0);
	d = f->rec.account;
	assert_non_null(d);
	assert_int_equal(num(d, "iterations"), 10);
	assert_true(num(d, "first_iteration_end") > 0);
	assert_true(num(d, "last_iteration_end") >= num(d, "first_iteration_end"));
	assert_true(fabs(num(d, "first_iteration_ms") - 100) < 1e-9);
}

static void
test_final_catches_up(void **state)
{
	struct fix *f = *state;
	cJSON *r, *d;

	/* 1000 iterations after the first reduction, then the end: the
	 * last reductions report every one of them, in groups. */
	start(f, 1);
	jobperf_set_trains(f->jp, true);
	line(f, "", 70, 100);
	interval(f);
	for (int i = 0; i < 999; i++)
		line(f, "", 70, 100);
	finish(f);
	r = report(f);
	assert_int_equal(num(r, "iterations"), 1000);
	d = cJSON_GetObjectItemCaseSensitive(r, "detail");
	assert_true(num(d, "max_group") > 1);
	assert_int_equal(num(d, "not_compared"), 0);
	assert_int_equal(num(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(r, "nodes"), 0),
	                     "samples"), 1000);
	cJSON_Delete(r);
	assert_int_equal(jobperf_cycles(f->jp), f->rec.ticks);
}

static void
test_restart_goes_on(void **state)
{
	struct fix *f = *state;
	static const int members[] = { 0 };
	struct jobperf_attempt a = { 1, members, 1, NULL, true };
	cJSON *r;

	/* The first attempt prints 20 iterations, 12 of them reported
	 * before the restart; the next one 30 more: 50 in all. */
	start(f, 1);
	jobperf_set_trains(f->jp, true);
	for (int i = 0; i < 12; i++)
		line(f, "[default0]:", 70, 100);
	interval(f);
	interval(f);
	for (int i = 0; i < 8; i++)
		line(f, "[default0]:", 70, 100);
	assert_int_equal(jobperf_set_attempt(f->jp, &a), 0);
	assert_int_equal(jobperf_cycles(f->jp), 0);
	for (int i = 0; i < 30; i++)
		line(f, "[default1]:", 70, 100);
	interval(f);
	finish(f);
	r = report(f);
	assert_int_equal(num(r, "iterations"), 50);
	cJSON_Delete(r);
}

/*
 * The coordinator's wish for its next look, with a training that prints
 * no timing lines: no sooner than the next time a reduction could be due
 * (a quarter interval, an interval, ten intervals after the last), so an
 * idle coordinator is not woken 100 times a second in between.
 */
static void
test_idle_wakeups(void **state)
{
	struct fix *f = *state;
	double at[] = { 0.3, 0.5, 0.9, 1.5, 4, 9.5 }, next[] = { 1, 1, 1, 10, 10, 10 };
	long w;

	f->now = 100;
	start(f, 1);
	jobperf_set_trains(f->jp, true);
	interval(f);   /* the first reduction, done at once in a world of one */
	f->rec.ticks = 0;
	w = jobperf_cycle(f->jp, f->now + 0.1, true);
	assert_in_range(w, 150, 151);
	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		w = jobperf_cycle(f->jp, f->now + at[i], true);
		assert_int_equal(f->rec.ticks, 0);
		assert_in_range(w, (long)((next[i] - at[i]) * 1000) - 1,
		                (long)((next[i] - at[i]) * 1000) + 1);
	}
	/* ten intervals: a reduction, to learn whether other nodes have lines */
	(void)jobperf_cycle(f->jp, f->now + 10, true);
	assert_int_equal(f->rec.ticks, 1);
}

/* The metrics file's rewrites: a second apart, or 20 times the last write. */
static void
test_metrics_gap(void **state)
{
	(void)state;
	assert_true(jobperf_metrics_gap(0) == 1.0);
	assert_true(jobperf_metrics_gap(0.001) == 1.0);
	assert_true(jobperf_metrics_gap(0.05) == 1.0);
	assert_true(fabs(jobperf_metrics_gap(0.1) - 2.0) < 1e-9);
	/* a write that took 0.43 s: the next one 8.6 s later */
	assert_true(fabs(jobperf_metrics_gap(0.43) - 8.6) < 1e-9);
	assert_true(fabs(jobperf_metrics_gap(3) - 60) < 1e-9);
}

static bool
exists(const char *path)
{
	return access(path, F_OK) == 0;
}

/* A rewrite comes no sooner than the gap, except when forced. */
static void
test_metrics_rewrites(void **state)
{
	struct fix *f = *state;
	char dir[4096], path[4200];

	assert_int_equal(make_scratch_dir(dir, sizeof(dir), "jobperf"), 0);
	snprintf(path, sizeof(path), "%s/vigil.prom", dir);
	f->o.metrics = path;
	f->now = 100;
	start(f, 2);
	jobperf_metrics(f->jp, "running", 2, 0, true, 100);
	assert_true(exists(path));
	assert_int_equal(unlink(path), 0);
	jobperf_metrics(f->jp, "running", 2, 0, false, 100.5);
	assert_false(exists(path));
	/* a small file: its write took far less than the 1.5 s that would
	 * stretch the gap past 30 s */
	jobperf_metrics(f->jp, "running", 2, 0, false, 130);
	assert_true(exists(path));
	assert_int_equal(unlink(path), 0);
	jobperf_metrics(f->jp, "succeeded", 2, 0, true, 130.1);
	assert_true(exists(path));
	assert_int_equal(unlink(path), 0);
	assert_int_equal(rmdir(dir), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_horovod_attribution, setup, teardown),
		cmocka_unit_test_setup_teardown(test_horovod_account, setup, teardown),
		cmocka_unit_test_setup_teardown(test_final_catches_up, setup, teardown),
		cmocka_unit_test_setup_teardown(test_restart_goes_on, setup, teardown),
		cmocka_unit_test_setup_teardown(test_idle_wakeups, setup, teardown),
		cmocka_unit_test(test_metrics_gap),
		cmocka_unit_test_setup_teardown(test_metrics_rewrites, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
