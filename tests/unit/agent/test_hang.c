/*
 * test_hang.c - the hang rule with a fake clock: the timeout, a node's
 * own progress, the coordinator's detector (a hang, a save, a slowdown,
 * the suspect, silence it could not hear) and the grouping of forensics.
 */
#include "autoconf.h"

#include "../vigil_test.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cJSON.h>

#include "agent/hang.h"

/* A heartbeat of a training node: N iterations, the last one QUIET s ago. */
static struct msg_heartbeat
beat(double iters, double quiet, double e2e_ms, bool saving)
{
	struct msg_heartbeat b = { .progress = true, .trains = true, .saving = saving,
	                           .lines = iters, .iters = iters, .quiet_s = quiet,
	                           .out_quiet_s = quiet, .e2e_ms = e2e_ms };

	return b;
}

static void
test_timeout(void **state)
{
	(void)state;
	assert_true(fabs(hang_timeout(30, 0) - 30) < 1e-9);     /* unknown: the floor */
	assert_true(fabs(hang_timeout(30, 1.0) - 30) < 1e-9);   /* 10 s < floor */
	assert_true(fabs(hang_timeout(30, 6.0) - 60) < 1e-9);   /* 10 x 6 s */
	assert_true(fabs(hang_timeout(5, NAN) - 5) < 1e-9);
}

static void
test_local(void **state)
{
	struct hang_local *l = hang_local_new();
	struct msg_heartbeat b;

	(void)state;
	assert_non_null(l);
	hang_local_fill(l, 1, true, false, &b);
	assert_true(b.progress);
	assert_true(b.quiet_s < 0);  /* no line yet */
	/* two processes; one falls behind: the node is as far as its slowest */
	for (int i = 0; i < 10; i++) {
		hang_local_line(l, "default0", 100 + i, 2 + i);
		if (i < 6)
			hang_local_line(l, "default1", 300, 2 + i);
	}
	hang_local_fill(l, 15, true, true, &b);
	assert_true(fabs(b.iters - 6) < 1e-9);
	assert_true(fabs(b.lines - 16) < 1e-9);
	assert_true(fabs(b.quiet_s - 4) < 1e-9);  /* the last line at 11 */
	assert_true(b.saving && b.trains);
	assert_true(b.e2e_ms >= 100 && b.e2e_ms <= 300);
	hang_local_output(l, 14);
	hang_local_fill(l, 15, true, false, &b);
	assert_true(fabs(b.out_quiet_s - 1) < 1e-9);
	/* a new attempt counts afresh */
	hang_local_attempt(l, 20);
	hang_local_fill(l, 21, true, false, &b);
	assert_true(b.lines == 0 && b.quiet_s < 0);
	hang_local_free(l);
}

/*
 * Three nodes print an iteration every PERIOD s from 0 to STOP (each
 * heartbeat every 1 s says so), then nothing (their last line at the last
 * tick before STOP), and the coordinator checks every 0.1 s until END.
 * Returns the time the rule fired, or -1.  ITERS_BEHIND: node 2's lag.
 */
static double
simulate(struct hang *h, double period, double stop, double end, double save_from,
         double save_to, double behind, struct hang_finding *f)
{
	double last = 0;
	int n = 0;

	for (double t = 0; t <= end + 1e-9; t += 0.1) {
		if (t <= stop && t - last >= period - 1e-9) {
			last = t;
			n++;
		}
		if (fmod(t + 1e-9, 1.0) < 0.1 - 1e-6) {
			for (int r = 0; r < 3; r++) {
				struct msg_heartbeat b = beat(r == 2 ? n - behind : n, t - last, period * 1000,
				                              r == 0 && t >= save_from && t < save_to);

				hang_beat(h, r, &b, t);
			}
		}
		if (hang_check(h, t, f) != HANG_NONE)
			return t;
	}
	return -1;
}

static struct hang *
make(double floor_s, double silence_s)
{
	struct hang_opts o = { 3, floor_s, silence_s };
	struct hang *h = hang_new(&o, 0);

	assert_non_null(h);
	return h;
}

static void
test_detects_within_bound(void **state)
{
	struct hang *h = make(5, 0);
	struct hang_finding f;
	double at = simulate(h, 0.2, 20, 60, -1, -1, 0, &f);

	(void)state;
	/* stopped at 20: after the 5 s timeout, within a heartbeat more */
	assert_true(at > 25 && at <= 26.5);
	assert_int_equal(f.kind, HANG_ITERATIONS);
	assert_int_equal(f.suspect, -1);  /* nobody behind */
	assert_true(f.silent_s > 5);
	/* once: not again without progress */
	assert_int_equal(hang_check(h, 70, &f), HANG_NONE);
	hang_free(h);
}

static void
test_timeout_follows_iterations(void **state)
{
	struct hang *h = make(5, 0);
	struct hang_finding f;
	/* iterations of 2 s: the timeout is 20 s, not the 5 s floor */
	double at = simulate(h, 2, 20, 80, -1, -1, 0, &f);

	(void)state;
	/* (the last line at 18 or 20: the fake clock's steps are not exact) */
	assert_true(at > 38 - 0.01 && at <= 42);
	assert_true(fabs(f.timeout_s - 20) < 1e-9);
	hang_free(h);
}

static void
test_slowdown_is_not_a_hang(void **state)
{
	struct hang *h = make(5, 0);
	struct hang_finding f;
	double last = 0;

	(void)state;
	/* 0.2 s iterations, then twice as slow, then 2 s ones: never a hang */
	for (double t = 0; t <= 120; t += 0.1) {
		double period = t < 40 ? 0.2 : t < 80 ? 0.4 : 2.0;

		if (t - last >= period - 1e-9)
			last = t;
		if (fmod(t + 1e-9, 1.0) < 0.1 - 1e-6)
			for (int r = 0; r < 3; r++) {
				struct msg_heartbeat b = beat(t, t - last, period * 1000, false);

				hang_beat(h, r, &b, t);
			}
		assert_int_equal(hang_check(h, t, &f), HANG_NONE);
	}
	hang_free(h);
}

static void
test_save_is_not_a_hang(void **state)
{
	struct hang *h = make(5, 0);
	struct hang_finding f;
	/* the lines stop at 20 while node 0 saves until 35 (its last heartbeat
	 * that says so at 34); a hang only 5 s after that */
	double at = simulate(h, 0.2, 20, 60, 20, 35, 0, &f);

	(void)state;
	assert_true(at > 39 - 0.01 && at <= 41);
	hang_free(h);
}

static void
test_suspect_behind(void **state)
{
	struct hang *h = make(5, 0);
	struct hang_finding f;
	double at = simulate(h, 0.2, 20, 60, -1, -1, 3, &f);

	(void)state;
	assert_true(at > 0);
	assert_int_equal(f.suspect, 2);
	assert_true(fabs(f.max_iters - f.suspect_iters - 3) < 1e-9);
	hang_free(h);
}

static void
test_unheard_silence_is_not_judged(void **state)
{
	struct hang *h = make(5, 0);
	struct hang_finding f;
	struct msg_heartbeat b = beat(10, 0, 200, false);

	(void)state;
	for (int r = 0; r < 3; r++)
		hang_beat(h, r, &b, 1);
	/* nothing heard since: the coordinator cannot tell a hang from its own deafness */
	assert_int_equal(hang_check(h, 30, &f), HANG_NONE);
	/* two of three say they are quiet: still not every node */
	b = beat(10, 29, 200, false);
	hang_beat(h, 0, &b, 30);
	hang_beat(h, 1, &b, 30);
	assert_int_equal(hang_check(h, 30.1, &f), HANG_NONE);
	hang_beat(h, 2, &b, 30.2);
	assert_int_equal(hang_check(h, 30.3, &f), HANG_ITERATIONS);
	hang_free(h);
}

static void
test_no_lines_no_iteration_rule(void **state)
{
	struct hang *h = make(5, 0), *s = make(5, 10);  /* no lines: silence alone judges */
	struct hang_finding f;
	struct msg_heartbeat b = beat(0, -1, 0, false);

	(void)state;
	b.lines = 0;
	for (double t = 0; t < 100; t += 1) {
		hang_beat(h, 0, &b, t);
		assert_int_equal(hang_check(h, t, &f), HANG_NONE);
	}
	/* the silence rule: output stops at 5 */
	for (double t = 0; t < 100; t += 1) {
		b.out_quiet_s = t < 5 ? 0 : t - 5;
		for (int r = 0; r < 3; r++)
			hang_beat(s, r, &b, t);
		if (hang_check(s, t, &f) != HANG_NONE)
			break;
	}
	assert_int_equal(f.kind, HANG_SILENCE);
	assert_true(f.silent_s > 10 && f.silent_s <= 11.5);
	/* it writes again: a later silence is a new hang */
	b.out_quiet_s = 0;
	hang_beat(s, 0, &b, 100);
	b.out_quiet_s = 12;
	for (int r = 0; r < 3; r++)
		hang_beat(s, r, &b, 112);
	assert_int_equal(hang_check(s, 112, &f), HANG_SILENCE);
	hang_free(h);
	hang_free(s);
	h = make(0, 0);
	assert_false(hang_enabled(h));
	hang_free(h);
}

static void
test_first_iteration_allowance(void **state)
{
	struct hang *h = make(5, 0);
	struct hang_finding f;
	struct msg_heartbeat b = beat(10, 0, 200, false);
	double t;

	(void)state;
	for (int r = 0; r < 3; r++)
		hang_beat(h, r, &b, 1);
	/* a restart at 2: no iteration yet, 10 x 5 s allowed */
	hang_attempt(h, 2);
	b = beat(0, -1, 0, false);
	b.lines = 0;
	for (t = 3; t < 100; t += 1) {
		for (int r = 0; r < 3; r++)
			hang_beat(h, r, &b, t);
		if (hang_check(h, t, &f) != HANG_NONE)
			break;
	}
	assert_true(t > 52 && t <= 54);
	assert_true(f.first);
	hang_free(h);

	/* The nodes' heartbeats still tell of the last line of the attempt
	 * before (a node's count is not reset, a heartbeat was on its way):
	 * it is no line of this attempt, and the allowance stands. */
	h = make(5, 0);
	for (int r = 0; r < 3; r++)
		hang_beat(h, r, &b, 1);
	hang_attempt(h, 2);
	for (t = 3; t < 100; t += 1) {
		b = beat(10, t - 1, 200, false);
		for (int r = 0; r < 3; r++)
			hang_beat(h, r, &b, t);
		if (hang_check(h, t, &f) != HANG_NONE)
			break;
	}
	assert_true(t > 52 && t <= 54);
	assert_true(f.first);
	hang_free(h);
}

/* ---- grouping ---- */

static cJSON *
proc(int rank, const char *state, const char *wchan, const char *frame)
{
	cJSON *p = cJSON_CreateObject(), *st = cJSON_AddArrayToObject(p, "stack");

	cJSON_AddNumberToObject(p, "pid", 100 + rank);
	cJSON_AddNumberToObject(p, "train_rank", rank);
	cJSON_AddStringToObject(p, "state", state);
	cJSON_AddStringToObject(p, "wchan", wchan);
	cJSON_AddItemToArray(st, cJSON_CreateString("??"));
	cJSON_AddItemToArray(st, cJSON_CreateString(frame));
	return p;
}

/* Nodes n0..n2 with 2 ranks each, all waiting in a collective but rank ODD (-1: none). */
static cJSON *
nodes(int odd, const char *state, const char *wchan)
{
	cJSON *a = cJSON_CreateArray();

	for (int n = 0; n < 3; n++) {
		cJSON *o = cJSON_CreateObject(), *ps = cJSON_AddArrayToObject(o, "processes");
		char name[8];
		cJSON *launcher = cJSON_CreateObject();

		snprintf(name, sizeof(name), "n%d", n);
		cJSON_AddStringToObject(o, "node", name);
		cJSON_AddNumberToObject(o, "rank", n);
		/* a launcher, without a rank: not judged */
		cJSON_AddStringToObject(launcher, "state", "T");
		cJSON_AddItemToArray(ps, launcher);
		for (int k = 0; k < 2; k++) {
			int r = 2 * n + k;

			cJSON_AddItemToArray(ps, r == odd ? proc(r, state, wchan, "read") :
			                     proc(r, "S", "futex_wait_queue", "__futex_abstimed_wait"));
		}
		cJSON_AddItemToArray(a, o);
	}
	return a;
}

static void
test_group_stopped(void **state)
{
	cJSON *n = nodes(5, "T", "do_signal_stop"), *g;
	int suspect;
	const char *summary;

	(void)state;
	g = hang_group(n, &suspect);
	assert_non_null(g);
	assert_int_equal(suspect, 2);
	summary = cJSON_GetObjectItem(g, "summary")->valuestring;
	assert_non_null(strstr(summary, "n2 rank 5: stopped (T)"));
	assert_non_null(strstr(summary, "5 of 6 processes: wait in futex_wait_queue"));
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(g, "odd")), 1);
	cJSON_Delete(g);
	cJSON_Delete(n);
}

static void
test_group_alone(void **state)
{
	cJSON *n = nodes(1, "S", "pipe_read"), *g;
	int suspect;

	(void)state;
	g = hang_group(n, &suspect);
	assert_int_equal(suspect, 0);
	assert_non_null(strstr(cJSON_GetObjectItem(g, "summary")->valuestring,
	                       "n0 rank 1: alone: wait in pipe_read (read)"));
	cJSON_Delete(g);
	cJSON_Delete(n);
}

static void
test_group_nobody(void **state)
{
	cJSON *n = nodes(-1, "S", ""), *g;
	int suspect;

	(void)state;
	g = hang_group(n, &suspect);
	assert_int_equal(suspect, -1);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(g, "odd")), 0);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(g, "groups")), 1);
	cJSON_Delete(g);
	cJSON_Delete(n);
	/* two odd nodes: nobody singled out */
	n = nodes(1, "T", "");
	cJSON_AddItemToArray(cJSON_GetObjectItem(cJSON_GetArrayItem(n, 2), "processes"),
	                     proc(9, "D", "nfs_wait", "read"));
	g = hang_group(n, &suspect);
	assert_int_equal(suspect, -1);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(g, "odd")), 2);
	cJSON_Delete(g);
	cJSON_Delete(n);
	/* nothing at all */
	n = cJSON_CreateArray();
	g = hang_group(n, &suspect);
	assert_non_null(g);
	assert_int_equal(suspect, -1);
	cJSON_Delete(g);
	cJSON_Delete(n);
}

/* Every rank waits in the same C frames; the Python frame tells the odd one. */
static void
test_group_python(void **state)
{
	cJSON *n = nodes(-1, "S", ""), *nd, *p, *g;
	int suspect;
	const char *summary;

	(void)state;
	cJSON_ArrayForEach(nd, n) {
		cJSON_ArrayForEach(p, cJSON_GetObjectItem(nd, "processes")) {
			cJSON *py;
			int r = cJSON_GetObjectItem(p, "train_rank") ?
			        cJSON_GetObjectItem(p, "train_rank")->valueint : -1;

			if (r < 0)
				continue;
			py = cJSON_AddArrayToObject(p, "py_stack");
			cJSON_AddItemToArray(py, cJSON_CreateString(r == 3 ?
				"File \"/job/train.py\", line 12, in load_batch" :
				"File \"/usr/lib/python3/torch/distributed/distributed_c10d.py\", "
				"line 1536, in all_reduce"));
			cJSON_AddItemToArray(py, cJSON_CreateString("File \"/job/train.py\", line 40, in main"));
			cJSON_AddItemToArray(py, cJSON_CreateString("thread 1234"));
			cJSON_AddItemToArray(py, cJSON_CreateString("File \"/job/train.py\", line 7, in fetch"));
		}
	}
	g = hang_group(n, &suspect);
	assert_int_equal(suspect, 1);
	summary = cJSON_GetObjectItem(g, "summary")->valuestring;
	assert_non_null(strstr(summary, "n1 rank 3: alone: wait in futex_wait_queue "
	                                "(__futex_abstimed_wait) at load_batch (train.py:12)"));
	assert_non_null(strstr(summary, "5 of 6 processes: wait in futex_wait_queue "
	                                "(__futex_abstimed_wait) at all_reduce (distributed_c10d.py:1536)"));
	cJSON_Delete(g);
	cJSON_Delete(n);
}

/* gdb gave no stack for P (it did not finish in time): only its state and wait channel. */
static void
unread(cJSON *p)
{
	cJSON_DeleteItemFromObject(p, "stack");
	cJSON_DeleteItemFromObject(p, "py_stack");
	cJSON_AddStringToObject(p, "stack_error", "gdb did not finish within the budget");
}

static void
py_top(cJSON *p, const char *frame)
{
	cJSON_AddItemToArray(cJSON_AddArrayToObject(p, "py_stack"), cJSON_CreateString(frame));
}

/* Node "n<NAME>", agent rank RANK, with the one process P, onto array A. */
static void
one_rank_node(cJSON *a, int name, int rank, cJSON *p)
{
	cJSON *o = cJSON_CreateObject();
	char buf[16];

	snprintf(buf, sizeof(buf), "n%d", name);
	cJSON_AddStringToObject(o, "node", buf);
	cJSON_AddNumberToObject(o, "rank", rank);
	cJSON_AddItemToArray(cJSON_AddArrayToObject(o, "processes"), p);
	cJSON_AddItemToArray(a, o);
}

/* Two ranks: one waits in the collective, the other elsewhere; counting
 * cannot tell them apart, the collective can.  Both outside it: nobody. */
static void
test_group_two_ranks(void **state)
{
	const char *where[2][2] = {
		{ "File \"/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py\", "
		  "line 1541, in all_reduce", "File \"/job/train.py\", line 44, in fault" },
		{ "File \"/job/train.py\", line 40, in step", "File \"/job/train.py\", line 44, in fault" },
	};

	(void)state;
	for (int c = 0; c < 2; c++) {
		cJSON *n = cJSON_CreateArray(), *g;
		int suspect;

		for (int r = 0; r < 2; r++) {
			cJSON *p = proc(r, "S", "futex_wait_queue", "__futex_abstimed_wait");

			py_top(p, where[c][r]);
			one_rank_node(n, r, r, p);
		}
		g = hang_group(n, &suspect);
		if (c == 0) {
			assert_int_equal(suspect, 1);
			assert_non_null(strstr(cJSON_GetObjectItem(g, "summary")->valuestring,
			                       "n1 rank 1: not in the collective: wait in "
			                       "futex_wait_queue (__futex_abstimed_wait) at fault "
			                       "(train.py:44)"));
		} else {
			assert_int_equal(suspect, -1);
			assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(g, "odd")), 0);
		}
		cJSON_Delete(g);
		cJSON_Delete(n);
	}
}

/* A rank whose stack was not read is never the odd one out, nor hides one. */
static void
test_group_unread(void **state)
{
	static const char coll[] = "File \"/usr/lib/python3/dist-packages/torch/distributed/"
	                           "distributed_c10d.py\", line 1541, in all_reduce";
	cJSON *n = nodes(-1, "S", ""), *g, *p;
	int suspect;

	(void)state;
	/* 6 ranks wait together, rank 4's stack unread: nobody */
	unread(cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetArrayItem(n, 2), "processes"), 1));
	g = hang_group(n, &suspect);
	assert_int_equal(suspect, -1);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(g, "odd")), 0);
	assert_int_equal(cJSON_GetObjectItem(g, "unread")->valueint, 1);
	cJSON_Delete(g);
	cJSON_Delete(n);
	/* 3 ranks: 0 in all_reduce, 1 unread, 2 blocked in its own code
	 * (a FIFO): 1 waits as 0 does, so 2 is the only one outside the
	 * collective; when 1 waits elsewhere, nobody can be told */
	for (int c = 0; c < 2; c++) {
		n = cJSON_CreateArray();
		for (int r = 0; r < 3; r++) {
			if (r == 2) {
				p = proc(r, "S", "wait_for_partner", "open64");
				py_top(p, "File \"/job/train.py\", line 48, in fault");
			} else {
				p = proc(r, "S", r == 1 && c ? "hrtimer_nanosleep" : "futex_do_wait",
				         "__futex_abstimed_wait");
				py_top(p, coll);
				if (r == 1)
					unread(p);
			}
			one_rank_node(n, r + 1, r, p);
		}
		g = hang_group(n, &suspect);
		if (c == 0) {
			assert_int_equal(suspect, 2);
			assert_non_null(strstr(cJSON_GetObjectItem(g, "summary")->valuestring,
			                       "n3 rank 2: not in the collective: wait in "
			                       "wait_for_partner (open64) at fault (train.py:48)"));
		} else {
			assert_int_equal(suspect, -1);
		}
		assert_int_equal(cJSON_GetObjectItem(g, "unread")->valueint, 1);
		cJSON_Delete(g);
		cJSON_Delete(n);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_timeout),
		cmocka_unit_test(test_local),
		cmocka_unit_test(test_detects_within_bound),
		cmocka_unit_test(test_timeout_follows_iterations),
		cmocka_unit_test(test_slowdown_is_not_a_hang),
		cmocka_unit_test(test_save_is_not_a_hang),
		cmocka_unit_test(test_suspect_behind),
		cmocka_unit_test(test_unheard_silence_is_not_judged),
		cmocka_unit_test(test_no_lines_no_iteration_rule),
		cmocka_unit_test(test_first_iteration_allowance),
		cmocka_unit_test(test_group_stopped),
		cmocka_unit_test(test_group_alone),
		cmocka_unit_test(test_group_nobody),
		cmocka_unit_test(test_group_python),
		cmocka_unit_test(test_group_two_ranks),
		cmocka_unit_test(test_group_unread),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
