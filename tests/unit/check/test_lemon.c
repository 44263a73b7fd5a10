/*
 * test_lemon.c - the ledger's verdicts (lemon.c) with a fake clock: each
 * test lays out a node's records at chosen times and judges them at
 * chosen moments, with the default rules (3 hardware incidents in 7
 * days, or 2 of one board) or rules of its own; and which events of a
 * job are incidents.
 */
#include "autoconf.h"

#include "../vigil_test.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "check/ledger.h"
#include "check/lemon.h"
#include "conf/config.h"

#define H 3600.0
#define D 86400.0
/* a moment to start from, far from 0 */
#define T0 1.7e9

struct fix {
	struct config cfg;
	struct ledger_record v[64];
	size_t n;
	struct lemon_verdict out;
};

static int
setup(void **state)
{
	struct fix *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	config_init(&f->cfg);
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fix *f = *state;

	config_free(&f->cfg);
	free(f);
	return 0;
}

/* A record of KIND at T (records must be added in time order). */
static struct ledger_record *
add(struct fix *f, int kind, double t, const char *check, const char *device, const char *job)
{
	struct ledger_record *r = &f->v[f->n];

	assert_true(f->n < 64);
	memset(r, 0, sizeof(*r));
	snprintf(r->id, sizeof(r->id), "id%03zu", f->n);
	snprintf(r->node, sizeof(r->node), "n7");
	r->kind = kind;
	r->time = t;
	snprintf(r->check, sizeof(r->check), "%s", check ? check : "");
	snprintf(r->device, sizeof(r->device), "%s", device ? device : "");
	snprintf(r->job, sizeof(r->job), "%s", job ? job : "");
	snprintf(r->evidence, sizeof(r->evidence), "%s down", device ? device : "it");
	snprintf(r->user, sizeof(r->user), "root");
	r->trusted = true;
	f->n++;
	return r;
}

static struct ledger_record *
fault(struct fix *f, double t, const char *job)
{
	return add(f, CONFIG_LEDGER_FAULT, t, "nic", "eth1", job);
}

static enum lemon_state
judge(struct fix *f, double now)
{
	lemon_judge(&f->cfg.ledger, f->v, f->n, now, &f->out);
	return f->out.state;
}

static void
test_nothing_is_ok(void **state)
{
	struct fix *f = *state;

	assert_int_equal(judge(f, T0), LEMON_OK);
	assert_string_equal(f->out.why, "");
	assert_int_equal(f->out.incidents, 0);
}

/* Three hardware incidents within 7 days: quarantined for the first
 * backoff (1 h), from the third. */
static void
test_three_in_a_week(void **state)
{
	struct fix *f = *state;

	fault(f, T0, "1");
	assert_int_equal(judge(f, T0 + 1), LEMON_WATCHED);
	assert_int_equal(f->out.counting, 1);
	add(f, CONFIG_LEDGER_LOST, T0 + 2 * D, NULL, NULL, "2");
	assert_int_equal(judge(f, T0 + 2 * D + 1), LEMON_WATCHED);
	add(f, CONFIG_LEDGER_HEALTHCHECK, T0 + 6 * D, "nics", NULL, NULL);
	assert_int_equal(judge(f, T0 + 6 * D + 1), LEMON_QUARANTINED);
	assert_true(f->out.since == T0 + 6 * D);
	assert_true(f->out.until == T0 + 6 * D + H);
	assert_int_equal(f->out.level, 1);
	assert_false(f->out.manual);
	assert_string_equal(f->out.why, "3 incidents in 7d, last healthcheck nics: it down");
	/* the same judged before the third: not yet */
	assert_int_equal(judge(f, T0 + 6 * D - 1), LEMON_WATCHED);
	/* and after the backoff: probation, awaiting a passing check */
	assert_int_equal(judge(f, T0 + 6 * D + H), LEMON_PROBATION);
	assert_non_null(strstr(f->out.why, "forgiven at the next passing check"));
}

/* Spread over more than the window, they never make three at once. */
static void
test_spread_out(void **state)
{
	struct fix *f = *state;

	fault(f, T0, "1");
	fault(f, T0 + 4 * D, "2");
	fault(f, T0 + 8 * D, "3");
	assert_int_equal(judge(f, T0 + 8 * D + 1), LEMON_WATCHED);
	assert_int_equal(f->out.counting, 2);
	/* and long after, nothing counts any more */
	assert_int_equal(judge(f, T0 + 30 * D), LEMON_OK);
	assert_int_equal(f->out.incidents, 3);
}

/* A straggler alert is recorded, but no default rule counts it. */
static void
test_kinds_not_counted(void **state)
{
	struct fix *f = *state;

	for (int i = 0; i < 5; i++)
		add(f, CONFIG_LEDGER_STRAGGLER, T0 + i, NULL, NULL, NULL);
	assert_int_equal(judge(f, T0 + 10), LEMON_OK);
	assert_int_equal(f->out.incidents, 5);
	assert_int_equal(f->out.counting, 0);
}

/* One job's fault and lost node are one strike. */
static void
test_one_job_one_strike(void **state)
{
	struct fix *f = *state;

	fault(f, T0, "11");
	add(f, CONFIG_LEDGER_LOST, T0 + 5, NULL, NULL, "11");
	add(f, CONFIG_LEDGER_PRECHECK, T0 + 60, "nics", NULL, "12");
	assert_int_equal(judge(f, T0 + 61), LEMON_WATCHED);
	fault(f, T0 + 120, "13");
	assert_int_equal(judge(f, T0 + 121), LEMON_QUARANTINED);
}

/* Two board incidents on one board: the second rule; on two boards, no. */
static void
test_same_board(void **state)
{
	struct fix *f = *state;

	add(f, CONFIG_LEDGER_BOARD, T0, "xid", "0000:3b:00.0", "1");
	add(f, CONFIG_LEDGER_BOARD, T0 + H, "ecc", "0000:86:00.0", "2");
	assert_int_equal(judge(f, T0 + 2 * H), LEMON_WATCHED);
	add(f, CONFIG_LEDGER_BOARD, T0 + 3 * H, "xid", "0000:3b:00.0", "3");
	/* three incidents: the first rule says so already; with it gone,
	 * the board rule alone */
	f->cfg.ledger.rules[0].count = 10;
	assert_int_equal(judge(f, T0 + 3 * H + 1), LEMON_QUARANTINED);
	assert_non_null(strstr(f->out.why, "2 incidents in 7d on one device"));
	f->v[2].device[0] = '\0';
	snprintf(f->v[2].device, sizeof(f->v[2].device), "0000:af:00.0");
	assert_int_equal(judge(f, T0 + 3 * H + 1), LEMON_WATCHED);
}

/* The application's XIDs (13, 31, 43, 45) never count. */
static void
test_app_xids(void **state)
{
	struct fix *f = *state;
	struct ledger_record *r;

	for (int i = 0; i < 4; i++) {
		r = add(f, CONFIG_LEDGER_BOARD, T0 + i * H, "xid", "0000:3b:00.0", NULL);
		snprintf(r->evidence, sizeof(r->evidence), "XID %d (Graphics Engine Exception)",
		         i % 2 ? 13 : 31);
	}
	r = add(f, CONFIG_LEDGER_HEALTHCHECK, T0 + 5 * H, "boards", NULL, NULL);
	snprintf(r->evidence, sizeof(r->evidence), "0000:3b:00.0: XID 43 (Reset Channel Verif Error)");
	assert_false(lemon_counts(&f->cfg.ledger, r));
	assert_int_equal(judge(f, T0 + 6 * H), LEMON_OK);
	assert_int_equal(f->out.incidents, 5);
	/* XID 79 (fallen off the bus) does */
	r = add(f, CONFIG_LEDGER_BOARD, T0 + 7 * H, "xid", "0000:3b:00.0", NULL);
	snprintf(r->evidence, sizeof(r->evidence), "XID 79 (GPU has fallen off the bus)");
	assert_true(lemon_counts(&f->cfg.ledger, r));
	assert_int_equal(judge(f, T0 + 8 * H), LEMON_WATCHED);
	/* a hand-made record that gives the XID as its device */
	snprintf(r->evidence, sizeof(r->evidence), "seen in dmesg");
	snprintf(r->device, sizeof(r->device), "13");
	assert_false(lemon_counts(&f->cfg.ledger, r));
}

/* Incidents during a quarantine change nothing, not even its end. */
static void
test_quarantine_not_extended(void **state)
{
	struct fix *f = *state;

	fault(f, T0, "1");
	fault(f, T0 + 10, "2");
	fault(f, T0 + 20, "3");
	for (int i = 0; i < 5; i++)
		add(f, CONFIG_LEDGER_HEALTHCHECK, T0 + 60 + i, "nics", NULL, NULL);
	assert_int_equal(judge(f, T0 + 100), LEMON_QUARANTINED);
	assert_true(f->out.until == T0 + 20 + H);
	assert_int_equal(f->out.level, 1);
}

/* Forgiven after each backoff, quarantined again: 1 h, 2 h, 4 h, ...,
 * up to backoff.max. */
static void
test_backoff_doubles(void **state)
{
	struct fix *f = *state;
	double t = T0, want = H;
	struct ledger_record *r;

	f->cfg.ledger.backoff_max_s = 6 * H;
	for (int level = 1; level <= 5; level++) {
		fault(f, t, NULL);
		fault(f, t + 1, NULL);
		fault(f, t + 2, NULL);
		assert_int_equal(judge(f, t + 3), LEMON_QUARANTINED);
		assert_int_equal(f->out.level, level);
		assert_true(f->out.until == t + 2 + want);
		/* a passing check before the end forgives nothing */
		r = add(f, LEDGER_KIND_FORGIVE, t + 2 + want - 1, NULL, NULL, NULL);
		assert_int_equal(judge(f, t + 2 + want - 0.5), LEMON_QUARANTINED);
		r->time = t + 2 + want;
		assert_int_equal(judge(f, t + 2 + want + 1), LEMON_WATCHED);
		assert_non_null(strstr(f->out.why, "forgiven at"));
		t += 2 + want + 10;
		want = want * 2 > 6 * H ? 6 * H : want * 2;
	}
}

/* A month (backoff.reset) without a quarantine: back to the first step. */
static void
test_backoff_resets(void **state)
{
	struct fix *f = *state;

	fault(f, T0, NULL);
	fault(f, T0 + 1, NULL);
	fault(f, T0 + 2, NULL);
	add(f, LEDGER_KIND_FORGIVE, T0 + 2 + H, NULL, NULL, NULL);
	/* forgiven lately: still watched, though nothing counts */
	assert_int_equal(judge(f, T0 + 10 * D), LEMON_WATCHED);
	assert_int_equal(f->out.counting, 0);
	assert_int_equal(judge(f, T0 + 40 * D), LEMON_OK);
	fault(f, T0 + 40 * D, NULL);
	fault(f, T0 + 40 * D + 1, NULL);
	fault(f, T0 + 40 * D + 2, NULL);
	assert_int_equal(judge(f, T0 + 40 * D + 3), LEMON_QUARANTINED);
	assert_int_equal(f->out.level, 1);
	assert_true(f->out.until == T0 + 40 * D + 2 + H);
}

/* After the backoff and before a passing check, one incident is enough
 * to quarantine it again, for longer; after the check, only new
 * incidents count. */
static void
test_probation(void **state)
{
	struct fix *f = *state;

	fault(f, T0, NULL);
	fault(f, T0 + 1, NULL);
	fault(f, T0 + 2, NULL);
	assert_int_equal(judge(f, T0 + 2 + H), LEMON_PROBATION);
	add(f, CONFIG_LEDGER_PRECHECK, T0 + 2 * H, "nics", NULL, NULL);
	assert_int_equal(judge(f, T0 + 2 * H + 1), LEMON_QUARANTINED);
	assert_int_equal(f->out.level, 2);
	assert_true(f->out.until == T0 + 4 * H);
	assert_non_null(strstr(f->out.why, "again on probation"));
	add(f, LEDGER_KIND_FORGIVE, T0 + 4 * H, NULL, NULL, NULL);
	fault(f, T0 + 5 * H, NULL);
	assert_int_equal(judge(f, T0 + 5 * H + 1), LEMON_WATCHED);
	assert_int_equal(f->out.counting, 1);
}

/* Quarantine and forgiveness count only from root or the ledger's owner. */
static void
test_untrusted_admin(void **state)
{
	struct fix *f = *state;

	add(f, LEDGER_KIND_QUARANTINE, T0, NULL, NULL, NULL)->trusted = false;
	assert_int_equal(judge(f, T0 + 1), LEMON_OK);
	fault(f, T0 + 2, NULL);
	fault(f, T0 + 3, NULL);
	fault(f, T0 + 4, NULL);
	add(f, LEDGER_KIND_FORGIVE, T0 + 4 + H, NULL, NULL, NULL)->trusted = false;
	assert_int_equal(judge(f, T0 + 5 + H), LEMON_PROBATION);
	/* an untrusted writer's incidents count as anyone's */
	f->v[1].trusted = false;
	assert_int_equal(judge(f, T0 + 5), LEMON_QUARANTINED);
}

/* An administrator's quarantine: until forgiven by hand, which a passing
 * check cannot do; or for a time, then probation as any other. */
static void
test_manual(void **state)
{
	struct fix *f = *state;
	struct ledger_record *q;

	q = add(f, LEDGER_KIND_QUARANTINE, T0, NULL, NULL, NULL);
	q->manual = true;
	snprintf(q->evidence, sizeof(q->evidence), "bad DIMM B3");
	assert_int_equal(judge(f, T0 + 365 * D), LEMON_QUARANTINED);
	assert_true(isinf(f->out.until));
	assert_true(f->out.manual);
	assert_string_equal(f->out.why, "by root: bad DIMM B3");
	add(f, LEDGER_KIND_FORGIVE, T0 + D, NULL, NULL, NULL);
	assert_int_equal(judge(f, T0 + 2 * D), LEMON_QUARANTINED);
	add(f, LEDGER_KIND_FORGIVE, T0 + 3 * D, NULL, NULL, NULL)->manual = true;
	assert_int_equal(judge(f, T0 + 3 * D + 1), LEMON_OK);
	/* for a time */
	q = add(f, LEDGER_KIND_QUARANTINE, T0 + 4 * D, NULL, NULL, NULL);
	q->manual = true;
	q->seconds = 2 * H;
	assert_int_equal(judge(f, T0 + 4 * D + H), LEMON_QUARANTINED);
	assert_true(f->out.until == T0 + 4 * D + 2 * H);
	assert_int_equal(judge(f, T0 + 4 * D + 2 * H), LEMON_PROBATION);
	add(f, LEDGER_KIND_FORGIVE, T0 + 4 * D + 3 * H, NULL, NULL, NULL);
	assert_int_equal(judge(f, T0 + 4 * D + 3 * H + 1), LEMON_OK);
}

/* A forgiveness by hand also resets the backoff. */
static void
test_manual_forgive_resets(void **state)
{
	struct fix *f = *state;

	fault(f, T0, NULL);
	fault(f, T0 + 1, NULL);
	fault(f, T0 + 2, NULL);
	add(f, LEDGER_KIND_FORGIVE, T0 + 10, NULL, NULL, NULL)->manual = true;
	assert_int_equal(judge(f, T0 + 11), LEMON_OK);
	fault(f, T0 + 20, NULL);
	fault(f, T0 + 21, NULL);
	fault(f, T0 + 22, NULL);
	assert_int_equal(judge(f, T0 + 23), LEMON_QUARANTINED);
	assert_int_equal(f->out.level, 1);
}

/* A site's own rule: what the configuration says, and records after
 * the moment judged have not happened yet. */
static void
test_site_rule(void **state)
{
	struct fix *f = *state;
	struct config_ledger_rule rule = {
		.count = 2, .within_s = H, .kinds = 1u << CONFIG_LEDGER_STRAGGLER,
	};

	f->cfg.ledger.rules[0] = rule;
	f->cfg.ledger.nrules = 1;
	add(f, CONFIG_LEDGER_STRAGGLER, T0, NULL, NULL, "1");
	add(f, CONFIG_LEDGER_STRAGGLER, T0 + 30 * 60, NULL, NULL, "2");
	fault(f, T0 + 40 * 60, "3");
	assert_int_equal(judge(f, T0 + 30 * 60 - 1), LEMON_WATCHED);
	assert_int_equal(judge(f, T0 + 30 * 60), LEMON_QUARANTINED);
	assert_non_null(strstr(f->out.why, "2 incidents in 1h, last straggler"));
	/* no rules: nothing quarantines, nothing counts */
	f->cfg.ledger.nrules = 0;
	assert_int_equal(judge(f, T0 + H), LEMON_OK);
	assert_int_equal(f->out.incidents, 3);
}

/* Which events of a job are incidents against a node. */
static void
test_from_event(void **state)
{
	struct fix *f = *state;
	const struct config_ledger *lc = &f->cfg.ledger;
	struct ledger_record r;
	cJSON *d = cJSON_Parse("{\"what\": \"nic\", \"device\": \"eth1\", "
	                       "\"evidence\": \"eth1 is down (operstate down)\"}");
	cJSON *x = cJSON_Parse("{\"what\": \"xid\", \"device\": \"0000:3b:00.0\", "
	                       "\"evidence\": \"XID 79 (GPU has fallen off the bus)\"}");
	cJSON *app = cJSON_Parse("{\"what\": \"xid\", \"device\": \"0000:3b:00.0\", "
	                         "\"evidence\": \"XID 13 (Graphics Engine Exception)\"}");
	cJSON *strag = cJSON_Parse("{\"kind\": \"straggler\"}");
	cJSON *ratio = cJSON_Parse("{\"kind\": \"ratio\"}");

	assert_true(lemon_from_event(lc, "n2", "fault", "error", "nic eth1: down", d, &r));
	assert_int_equal(r.kind, CONFIG_LEDGER_FAULT);
	assert_string_equal(r.node, "n2");
	assert_string_equal(r.check, "nic");
	assert_string_equal(r.device, "eth1");
	assert_string_equal(r.evidence, "eth1 is down (operstate down)");
	assert_false(lemon_from_event(lc, "n2", "fault", "warning", "nic eth1: slow", d, &r));
	assert_true(lemon_from_event(lc, "n2", "fault", "error", "xid", x, &r));
	assert_int_equal(r.kind, CONFIG_LEDGER_BOARD);
	assert_string_equal(r.device, "0000:3b:00.0");
	assert_false(lemon_from_event(lc, "n2", "fault", "error", "xid", app, &r));
	assert_true(lemon_from_event(lc, "n3", "node_lost", "error", "n3 (rank 2) lost:\nno "
	                             "heartbeat", NULL, &r));
	assert_int_equal(r.kind, CONFIG_LEDGER_LOST);
	assert_string_equal(r.evidence, "n3 (rank 2) lost: no heartbeat");
	assert_true(lemon_from_event(lc, "n4", "alert", "warning", "n4 slow", strag, &r));
	assert_int_equal(r.kind, CONFIG_LEDGER_STRAGGLER);
	assert_false(lemon_from_event(lc, "n4", "alert", "warning", "ratio low", ratio, &r));
	assert_true(lemon_from_event(lc, "n5", "hang", "error", "n5 stuck in allreduce", NULL, &r));
	assert_int_equal(r.kind, CONFIG_LEDGER_HANG);
	/* a training that crashed by itself is no incident */
	assert_false(lemon_from_event(lc, "n2", "exit", "error", "exit status 1", NULL, &r));
	assert_false(lemon_from_event(lc, "n2", "stall", "warning", "late", NULL, &r));
	cJSON_Delete(d);
	cJSON_Delete(x);
	cJSON_Delete(app);
	cJSON_Delete(strag);
	cJSON_Delete(ratio);
}

static void
test_formats(void **state)
{
	char buf[32];

	(void)state;
	assert_string_equal(lemon_fmt_duration(7 * D, buf, sizeof(buf)), "7d");
	assert_string_equal(lemon_fmt_duration(1.5 * H, buf, sizeof(buf)), "1.5h");
	assert_string_equal(lemon_fmt_duration(20 * 60, buf, sizeof(buf)), "20m");
	assert_string_equal(lemon_fmt_duration(45, buf, sizeof(buf)), "45s");
	assert_string_equal(lemon_fmt_time(0, buf, sizeof(buf)), "1970-01-01T00:00:00Z");
	assert_string_equal(lemon_fmt_time(1777639500, buf, sizeof(buf)), "2026-05-01T12:45:00Z");
	assert_string_equal(lemon_fmt_time(INFINITY, buf, sizeof(buf)), "never");
	assert_string_equal(lemon_state_name(LEMON_PROBATION), "probation");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
		T(test_nothing_is_ok),
		T(test_three_in_a_week),
		T(test_spread_out),
		T(test_kinds_not_counted),
		T(test_one_job_one_strike),
		T(test_same_board),
		T(test_app_xids),
		T(test_quarantine_not_extended),
		T(test_backoff_doubles),
		T(test_backoff_resets),
		T(test_probation),
		T(test_untrusted_admin),
		T(test_manual),
		T(test_manual_forgive_resets),
		T(test_site_rule),
		T(test_from_event),
		T(test_formats),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
