/*
 * test_watch.c - a node's watch on its coordinator, the successors in
 * line and their majority, with a fake clock; and the stall and deafness
 * rules (stall.h).
 */
#include "autoconf.h"

#include "../vigil_test.h"

#include <errno.h>

#include "agent/stall.h"
#include "agent/watch.h"

static struct watch *
make(int self, int size)
{
	struct watch_opts o = { .self = self, .size = size, .coordinator = 0,
	                        .heartbeat_s = 0.5, .heartbeat_timeout_s = 2, .vote_wait_s = 5 };
	struct watch *w = watch_new(&o, 0);

	assert_non_null(w);
	return w;
}

/* Tick from A to B every 0.25 s, the coordinator heard when HEARD; the first action. */
static enum watch_action
run(struct watch *w, double a, double b, bool heard, double *at)
{
	for (double t = a; t <= b + 1e-9; t += 0.25) {
		enum watch_action x;

		if (heard)
			watch_heard(w, 0, t);
		x = watch_tick(w, t);
		if (x != WATCH_NONE) {
			if (at)
				*at = t;
			return x;
		}
	}
	return WATCH_NONE;
}

static void
test_heard_coordinator_is_fine(void **state)
{
	struct watch *w = make(2, 4);

	(void)state;
	assert_int_equal(run(w, 0.25, 60, true, NULL), WATCH_NONE);
	assert_false(watch_lost(w));
	assert_int_equal(watch_coordinator(w), 0);
	watch_free(w);
}

/* Silent for twice the timeout: lost; nobody to send to until a successor speaks. */
static void
test_silence_loses_coordinator(void **state)
{
	struct watch *w = make(2, 4);
	int line[WATCH_LINE_MAX];
	double at = 0;

	(void)state;
	assert_int_equal(run(w, 0.25, 10, true, NULL), WATCH_NONE);
	assert_int_equal(run(w, 10.25, 20, false, &at), WATCH_LOST);
	assert_true(at >= 14 && at <= 14.25);
	assert_true(watch_lost(w));
	assert_int_equal(watch_coordinator(w), -1);
	assert_int_equal(watch_line(w, line), 3);
	assert_int_equal(line[0], 1);
	assert_int_equal(line[1], 2);
	assert_int_equal(line[2], 3);
	assert_int_equal(watch_place(w), 2);
	/* once */
	assert_int_equal(run(w, 14.5, 15, false, NULL), WATCH_NONE);
	watch_free(w);
}

/* This node stopped (SIGSTOP, swap) past the timeout: no verdict on the coordinator. */
static void
test_own_stall_blames_nobody(void **state)
{
	struct watch *w = make(2, 4);

	(void)state;
	assert_int_equal(run(w, 0.25, 5, true, NULL), WATCH_NONE);
	assert_int_equal(watch_tick(w, 15), WATCH_NONE);
	assert_false(watch_lost(w));
	/* the coordinator's queued heartbeats are read, all is well */
	assert_int_equal(run(w, 15.25, 40, true, NULL), WATCH_NONE);
	watch_free(w);
}

/* The coordinator stalls for less than twice the timeout: not a loss. */
static void
test_short_coordinator_stall(void **state)
{
	struct watch *w = make(1, 3);

	(void)state;
	assert_int_equal(run(w, 0.25, 5, true, NULL), WATCH_NONE);
	assert_int_equal(run(w, 5.25, 8.5, false, NULL), WATCH_NONE);
	assert_int_equal(run(w, 8.75, 20, true, NULL), WATCH_NONE);
	watch_free(w);
}

/* The first in line takes over when a majority lost the coordinator. */
static void
test_successor_takes_over_with_majority(void **state)
{
	struct watch *w = make(1, 3);
	int passed[WATCH_LINE_MAX];

	(void)state;
	/* rank 2's word first: counted, but rank 1 still hears the coordinator */
	watch_vote(w, 2, 3);
	assert_int_equal(run(w, 0.25, 5, true, NULL), WATCH_NONE);
	assert_int_equal(run(w, 5.25, 20, false, NULL), WATCH_LOST);
	/* its own loss makes 2 of 3 */
	assert_int_equal(watch_tick(w, 9.25), WATCH_TAKE_OVER);
	assert_int_equal(watch_votes(w), 2);
	assert_int_equal(watch_coordinator(w), 1);
	assert_int_equal(watch_passed(w, passed), 1);
	assert_int_equal(passed[0], 0);
	assert_int_equal(watch_tick(w, 9.5), WATCH_NONE);
	watch_free(w);
}

/* No majority: nobody takes over, and after the votes' time and every
 * successor's turn the node ends on its own. */
static void
test_successor_alone_does_not_take_over(void **state)
{
	struct watch *w = make(1, 4);
	int r[WATCH_LINE_MAX + 1];
	double at = 0;

	(void)state;
	assert_int_equal(run(w, 0.25, 20, false, &at), WATCH_LOST);
	assert_true(at >= 4 && at <= 4.25);
	/* 1 of 4, then 2 of 4: no majority */
	watch_vote(w, 3, 5);
	/* the loss, the votes' 5 s and three turns of 4 s */
	assert_true(watch_alone_at(w) == at + 5 + 3 * 4);
	assert_int_equal(run(w, at + 0.25, 40, false, &at), WATCH_ALONE);
	assert_true(at >= 21 && at <= 21.25);
	/* who said nothing: the coordinator and rank 2 (rank 3 voted) */
	assert_int_equal(watch_unheard(w, r), 2);
	assert_int_equal(r[0], 0);
	assert_int_equal(r[1], 2);
	/* a late word after giving up changes nothing */
	watch_vote(w, 2, 30);
	assert_int_equal(watch_tick(w, 30.25), WATCH_NONE);
	watch_free(w);
}

/* Votes count on the successors in line only; the coordinator's is none. */
static void
test_votes_count_in_line_only(void **state)
{
	struct watch *w = make(5, 6);

	(void)state;
	/* ranks 1..4 are in line, 5 is not */
	assert_int_equal(watch_place(w), 0);
	assert_int_equal(run(w, 0.25, 20, false, NULL), WATCH_LOST);
	watch_vote(w, 1, 5);
	watch_vote(w, 2, 5);
	watch_vote(w, 3, 5);
	watch_vote(w, 4, 5);
	assert_int_equal(watch_votes(w), 0);
	/* it never takes over, and ends on its own if nobody does */
	assert_int_equal(run(w, 4.5, 60, false, NULL), WATCH_ALONE);
	watch_free(w);
	w = make(1, 3);
	assert_int_equal(run(w, 0.25, 20, false, NULL), WATCH_LOST);
	watch_vote(w, 0, 4.1);
	assert_int_equal(watch_votes(w), 1);
	watch_vote(w, 2, 4.1);
	assert_int_equal(watch_tick(w, 4.25), WATCH_TAKE_OVER);
	watch_free(w);
}

/* Two nodes: the one left takes over alone, at once. */
static void
test_two_nodes_survivor_takes_over(void **state)
{
	struct watch *w = make(1, 2);
	double at = 0;

	(void)state;
	assert_int_equal(run(w, 0.25, 20, false, &at), WATCH_LOST);
	assert_int_equal(watch_tick(w, at + 0.25), WATCH_TAKE_OVER);
	assert_int_equal(watch_votes(w), 1);
	watch_free(w);
}

/* Two nodes, the one left cut off by its own link: it names nobody and
 * ends alone, whether it knew before the loss or only after it; with
 * its link back before its turn, it takes over. */
static void
test_two_nodes_cut_off_names_nobody(void **state)
{
	struct watch *w = make(1, 2);
	double at = 0, alone = 0;

	(void)state;
	watch_cut_off(w, true);
	assert_int_equal(run(w, 0.25, 20, false, &at), WATCH_LOST);
	assert_int_equal(run(w, at + 0.25, at + 120, false, &alone), WATCH_ALONE);
	assert_true(alone >= watch_alone_at(w) - 1e-9);
	assert_int_equal(watch_coordinator(w), -1);
	watch_free(w);

	/* learned only after the loss, before the decision */
	w = make(1, 2);
	assert_int_equal(run(w, 0.25, 20, false, &at), WATCH_LOST);
	watch_cut_off(w, true);
	assert_int_equal(run(w, at + 0.25, at + 120, false, NULL), WATCH_ALONE);
	watch_free(w);

	/* the link came back: the survivor's own vote counts again */
	w = make(1, 2);
	watch_cut_off(w, true);
	assert_int_equal(run(w, 0.25, 20, false, &at), WATCH_LOST);
	assert_int_equal(watch_tick(w, at + 0.25), WATCH_NONE);
	watch_cut_off(w, false);
	assert_int_equal(watch_tick(w, at + 0.5), WATCH_TAKE_OVER);
	watch_free(w);
}

/* The coordinator and the first in line hang: the second in line takes
 * over with a majority once the first had its turn, and names both. */
static void
test_second_in_line_takes_over(void **state)
{
	struct watch *w = make(2, 5);
	int passed[WATCH_LINE_MAX];
	double at = 0;

	(void)state;
	assert_int_equal(watch_place(w), 2);
	assert_int_equal(run(w, 0.25, 20, false, &at), WATCH_LOST);
	assert_int_equal(run(w, at + 0.25, at + 1, false, NULL), WATCH_NONE);
	watch_vote(w, 3, at + 1);
	assert_int_equal(run(w, at + 1.25, at + 1.5, false, NULL), WATCH_NONE);
	watch_vote(w, 4, at + 1.5);
	/* 3 of 5 from the tick at + 1.75, and rank 1 silent: its turn of 4 s first */
	assert_int_equal(run(w, at + 1.75, at + 5.5, false, NULL), WATCH_NONE);
	assert_int_equal(run(w, at + 5.75, at + 6, false, NULL), WATCH_TAKE_OVER);
	assert_int_equal(watch_passed(w, passed), 2);
	assert_int_equal(passed[0], 0);
	assert_int_equal(passed[1], 1);
	watch_free(w);
}

/* The first in line speaks (its vote): the second never takes over, and
 * follows the first once it acts as the coordinator. */
static void
test_second_in_line_defers(void **state)
{
	struct watch *w = make(2, 5);
	double at = 0;

	(void)state;
	assert_int_equal(run(w, 0.25, 20, false, &at), WATCH_LOST);
	watch_vote(w, 1, at + 0.5);
	watch_vote(w, 3, at + 1);
	watch_vote(w, 4, at + 1);
	assert_int_equal(run(w, at + 0.25, at + 10, false, NULL), WATCH_NONE);
	assert_int_equal(watch_coordinator(w), -1);
	assert_int_equal(watch_leader(w, 1, at + 10.1), WATCH_NONE);
	assert_int_equal(watch_coordinator(w), 1);
	/* following: no takeover, no end on its own */
	assert_int_equal(run(w, at + 10.25, at + 60, false, NULL), WATCH_NONE);
	watch_free(w);
}

/* A successor took over before this node lost the coordinator: it loses it
 * now and follows; a word from the coordinator or a rank out of line is no
 * takeover. */
static void
test_leader_before_loss(void **state)
{
	struct watch *w = make(3, 4);

	(void)state;
	assert_int_equal(run(w, 0.25, 2, true, NULL), WATCH_NONE);
	assert_int_equal(watch_leader(w, 0, 2.1), WATCH_NONE);
	assert_false(watch_lost(w));
	assert_int_equal(watch_leader(w, 1, 2.2), WATCH_LOST);
	assert_true(watch_lost(w));
	assert_int_equal(watch_coordinator(w), 1);
	assert_int_equal(run(w, 2.25, 60, false, NULL), WATCH_NONE);
	watch_free(w);
}

/* A node that trains again under the successor (a spare's restart): the
 * successor's heartbeats keep it; its silence for twice the timeout ends
 * in WATCH_LEADER_LOST, once; before watch_follow() it is not judged. */
static void
test_follow_successor(void **state)
{
	struct watch *w = make(3, 4);
	double at = -1;

	(void)state;
	assert_int_equal(run(w, 0.25, 2, true, NULL), WATCH_NONE);
	assert_int_equal(watch_leader(w, 1, 2.2), WATCH_LOST);
	watch_follow(w, 3);
	for (double t = 3.25; t <= 40; t += 0.25) {
		watch_heard(w, 1, t);
		watch_heard(w, 0, t);  /* the old coordinator's word keeps nothing */
		assert_int_equal(watch_tick(w, t), WATCH_NONE);
	}
	assert_true(watch_silent(w, 41) > 0.9 && watch_silent(w, 41) < 1.1);
	for (double t = 40.25; t <= 60 && at < 0; t += 0.25) {
		watch_heard(w, 0, t);
		if (watch_tick(w, t) == WATCH_LEADER_LOST)
			at = t;
	}
	/* lost after twice the 2 s timeout */
	assert_true(at >= 44 && at <= 44.25);
	assert_int_equal(run(w, at + 0.25, 80, false, NULL), WATCH_NONE);
	watch_free(w);
	/* a node that never followed: no judging of the successor */
	w = make(3, 4);
	assert_int_equal(watch_leader(w, 1, 1), WATCH_LOST);
	assert_int_equal(run(w, 1.25, 60, false, NULL), WATCH_NONE);
	/* nor before the coordinator is lost: it is the one watched */
	watch_free(w);
	w = make(3, 4);
	watch_follow(w, 1);
	assert_int_equal(run(w, 1.25, 60, true, NULL), WATCH_NONE);
	assert_false(watch_lost(w));
	watch_free(w);
}

static void
test_coordinator_watches_nothing(void **state)
{
	struct watch *w = make(0, 3);
	struct watch_opts bad = { .self = 3, .size = 3 };

	(void)state;
	assert_int_equal(run(w, 0.25, 60, false, NULL), WATCH_NONE);
	watch_free(w);
	assert_null(watch_new(&bad, 0));
	assert_int_equal(errno, EINVAL);
}

/* The one stall rule: late past the smaller of 2 heartbeats and half the timeout. */
static void
test_stall_rule(void **state)
{
	(void)state;
	/* heartbeat 5 s, timeout 30 s: 2 x 5 = 10 < 15 */
	assert_true(stall_limit(5, 30) == 10);
	assert_false(stall_late(0, 10, 5, 30));
	assert_true(stall_late(0, 10.5, 5, 30));
	/* heartbeat 0.5 s, timeout 1.5 s: 0.75 < 1 */
	assert_true(stall_limit(0.5, 1.5) == 0.75);
	assert_false(stall_late(3, 3.75, 0.5, 1.5));
	assert_true(stall_late(3, 3.8, 0.5, 1.5));
	/* no check before: nothing to be late after */
	assert_false(stall_late(-1, 1000, 5, 30));
}

/* Deaf: a gap over 1.5 heartbeats in what the coordinator hears from all. */
static void
test_deaf_rule(void **state)
{
	(void)state;
	assert_true(stall_deaf_limit(0.5) == 0.75);
	assert_true(stall_deaf_until(10, 10.75, 0.5) < 0);
	/* a gap of 2.5 s ends at 12.5: silence counts from 15 */
	assert_true(stall_deaf_until(10, 12.5, 0.5) == 15);
	assert_true(stall_deaf_until(-1, 12.5, 0.5) < 0);
}

/* The quorum: the coordinator's side against the other live ranks. */
static void
test_judge_rule(void **state)
{
	(void)state;
	assert_int_equal(stall_judge(3, 3, 0), STALL_WAIT);
	/* one of four dead, two of four: named */
	assert_int_equal(stall_judge(3, 2, 1), STALL_NAME);
	assert_int_equal(stall_judge(3, 1, 2), STALL_NAME);
	/* a job of two: the coordinator names the node it cannot hear */
	assert_int_equal(stall_judge(1, 0, 1), STALL_NAME);
	/* the coordinator cut off: the first silent node waits, then itself */
	assert_int_equal(stall_judge(3, 0, 1), STALL_WAIT);
	assert_int_equal(stall_judge(3, 0, 2), STALL_WAIT);
	assert_int_equal(stall_judge(3, 0, 3), STALL_SELF);
	/* the smaller part of a split of five */
	assert_int_equal(stall_judge(4, 1, 3), STALL_SELF);
	assert_int_equal(stall_judge(4, 1, 2), STALL_WAIT);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_heard_coordinator_is_fine),
		cmocka_unit_test(test_follow_successor),
		cmocka_unit_test(test_silence_loses_coordinator),
		cmocka_unit_test(test_own_stall_blames_nobody),
		cmocka_unit_test(test_short_coordinator_stall),
		cmocka_unit_test(test_successor_takes_over_with_majority),
		cmocka_unit_test(test_successor_alone_does_not_take_over),
		cmocka_unit_test(test_votes_count_in_line_only),
		cmocka_unit_test(test_two_nodes_survivor_takes_over),
		cmocka_unit_test(test_two_nodes_cut_off_names_nobody),
		cmocka_unit_test(test_second_in_line_takes_over),
		cmocka_unit_test(test_second_in_line_defers),
		cmocka_unit_test(test_leader_before_loss),
		cmocka_unit_test(test_coordinator_watches_nothing),
		cmocka_unit_test(test_stall_rule),
		cmocka_unit_test(test_deaf_rule),
		cmocka_unit_test(test_judge_rule),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
