/*
 * test_incident.c - what a job's coordinator and a health check record
 * in the node ledger (incident.c), in a scratch ledger: a job's events
 * and pre-check as incidents, once each; a lasting health check failure
 * recorded once per ledger.repeat; a node on probation forgiven by a
 * passing check, and only then.
 */
#include "autoconf.h"

#include "../vigil_test.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cJSON.h>

#include "check/check.h"
#include "check/gather.h"
#include "check/incident.h"
#include "check/ledger.h"
#include "conf/config.h"
#include "lib/util.h"
#include "../scratch.h"

struct fix {
	char root[256], dir[300], why[512];
	struct config cfg;
	struct ledger *l;
};

static int
setup(void **state)
{
	struct fix *f = calloc(1, sizeof(*f));
	char err[256];
	char json[700];

	assert_non_null(f);
	assert_int_equal(make_scratch_dir(f->root, sizeof(f->root), "incident"), 0);
	snprintf(f->dir, sizeof(f->dir), "%s/ledger", f->root);
	assert_int_equal(mkdir(f->dir, 0755), 0);
	assert_int_equal(chmod(f->dir, 0755), 0);
	config_init(&f->cfg);
	snprintf(json, sizeof(json), "{\"ledger\": {\"dir\": \"%s\", \"rules\": [{\"count\": 2, "
	         "\"within\": \"1d\"}], \"backoff\": {\"initial\": 60}, \"repeat\": \"1h\"}}", f->dir);
	assert_int_equal(config_load_buffer(&f->cfg, json, strlen(json), "t", err, sizeof(err)), 0);
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fix *f = *state;

	ledger_close(f->l);
	config_free(&f->cfg);
	(void)util_remove_tree(f->root);
	free(f);
	return 0;
}

/* NODE's records into RS (freed by the caller). */
static size_t
records(struct fix *f, const char *node, struct ledger_records *rs)
{
	memset(rs, 0, sizeof(*rs));
	if (!f->l)
		assert_int_equal(ledger_open(f->dir, false, &f->l, f->why, sizeof(f->why)), 0);
	assert_int_equal(ledger_read_node(f->l, node, -INFINITY, rs, f->why, sizeof(f->why)), 0);
	return rs->n;
}

static size_t
count(struct fix *f, const char *node)
{
	struct ledger_records rs;
	size_t n = records(f, node, &rs);

	ledger_records_free(&rs);
	return n;
}

static void
test_no_ledger(void **state)
{
	struct config cfg;

	(void)state;
	config_init(&cfg);
	assert_null(incident_job_new(&cfg, "1"));
	/* and every function takes the NULL */
	incident_job_event(NULL, "n1", "fault", "error", "x", NULL);
	assert_int_equal(incident_job_commit(NULL), 0);
	incident_job_free(NULL);
	config_free(&cfg);
}

static void
test_job_events(void **state)
{
	struct fix *f = *state;
	struct incident_job *j = incident_job_new(&f->cfg, "4242");
	cJSON *nic = cJSON_Parse("{\"what\": \"nic\", \"device\": \"eth1\", "
	                         "\"evidence\": \"eth1 is down\"}");
	cJSON *strag = cJSON_Parse("{\"kind\": \"straggler\"}");
	struct ledger_records rs;

	assert_non_null(j);
	incident_job_event(j, "n2", "fault", "error", "nic eth1: eth1 is down", nic);
	/* the next inspection finds it again: one incident */
	incident_job_event(j, "n2", "fault", "error", "nic eth1: eth1 is down", nic);
	incident_job_event(j, "n3", "node_lost", "error", "n3 (rank 2) lost", NULL);
	incident_job_event(j, "n4", "alert", "warning", "n4 is slow", strag);
	/* none of these is an incident */
	incident_job_event(j, "n1", "exit", "error", "exit status 1", NULL);
	incident_job_event(j, "n1", "launch", "info", "starting", NULL);
	incident_job_event(j, "rank 7", "node_lost", "error", "no name", NULL);
	assert_int_equal(incident_job_commit(j), 3);
	assert_int_equal(records(f, "n2", &rs), 1);
	assert_int_equal(rs.v[0].kind, CONFIG_LEDGER_FAULT);
	assert_string_equal(rs.v[0].job, "4242");
	assert_string_equal(rs.v[0].device, "eth1");
	assert_true(rs.v[0].time > 1e9);
	ledger_records_free(&rs);
	assert_int_equal(count(f, "n3"), 1);
	assert_int_equal(count(f, "n4"), 1);
	assert_int_equal(count(f, "n1"), 0);
	/* written once */
	assert_int_equal(incident_job_commit(j), 0);
	incident_job_event(j, "n3", "node_lost", "error", "n3 (rank 2) lost", NULL);
	incident_job_event(j, "n5", "node_lost", "error", "n5 (rank 4) lost", NULL);
	assert_int_equal(incident_job_commit(j), 1);
	assert_int_equal(count(f, "n3"), 1);
	assert_int_equal(count(f, "n5"), 1);
	incident_job_free(j);
	cJSON_Delete(nic);
	cJSON_Delete(strag);
}

/* A report of one check NAME with VERDICT and REASON. */
static void
add_result(struct check_report *r, const char *name, enum verdict v, const char *reason,
           const char *details)
{
	struct check_result *res;

	r->results = realloc(r->results, (r->n + 1) * sizeof(*r->results));
	assert_non_null(r->results);
	res = &r->results[r->n++];
	memset(res, 0, sizeof(*res));
	snprintf(res->name, sizeof(res->name), "%s", name);
	res->verdict = v;
	snprintf(res->reason, sizeof(res->reason), "%s", reason);
	res->details = cJSON_Parse(details ? details : "{}");
}

static void
test_job_gather(void **state)
{
	struct fix *f = *state;
	struct incident_job *j = incident_job_new(&f->cfg, "7");
	struct check_report r = { 0 };
	struct gather g = { 0 };
	struct ledger_records rs;
	char *p0, *p2;

	add_result(&r, "ledger", VERDICT_FAIL, "quarantined: until ...", NULL);
	add_result(&r, "slots", VERDICT_PASS, "8 slots", NULL);
	add_result(&r, "nics", VERDICT_FAIL, "eth1 is down", NULL);
	p0 = gather_payload("n5", 0, &r, NULL);
	p2 = gather_payload("n6", 2, NULL, "cannot run the pre-check on /: No such file");
	assert_int_equal(gather_init(&g, 3), 0);
	assert_int_equal(gather_add(&g, 0, p0, 60), 0);
	assert_int_equal(gather_add(&g, 1, NULL, 60), 0);
	assert_int_equal(gather_add(&g, 2, p2, 60), 0);
	incident_job_gather(j, &g);
	assert_int_equal(incident_job_commit(j), 2);
	/* the ledger's own verdict is not a new incident */
	assert_int_equal(records(f, "n5", &rs), 1);
	assert_int_equal(rs.v[0].kind, CONFIG_LEDGER_PRECHECK);
	assert_string_equal(rs.v[0].check, "nics");
	assert_string_equal(rs.v[0].evidence, "eth1 is down");
	ledger_records_free(&rs);
	assert_int_equal(records(f, "n6", &rs), 1);
	assert_string_equal(rs.v[0].evidence, "cannot run the pre-check on /: No such file");
	ledger_records_free(&rs);
	gather_free(&g);
	check_report_free(&r);
	free(p0);
	free(p2);
	incident_job_free(j);
}

/* A failure that lasts is one incident per ledger.repeat. */
static void
test_check_repeat(void **state)
{
	struct fix *f = *state;
	struct check_report r = { 0 };
	double t = 1.8e9;

	add_result(&r, "ledger", VERDICT_PASS, "ok", "{\"state\": \"ok\"}");
	add_result(&r, "nics", VERDICT_FAIL, "eth1 is down", NULL);
	add_result(&r, "memory", VERDICT_WARN, "low", NULL);
	incident_after_check(&f->cfg, "n1", &r, true, t);
	assert_int_equal(count(f, "n1"), 1);
	incident_after_check(&f->cfg, "n1", &r, true, t + 300);
	incident_after_check(&f->cfg, "n1", &r, true, t + 600);
	assert_int_equal(count(f, "n1"), 1);
	/* without RECORD: nothing */
	incident_after_check(&f->cfg, "n1", &r, false, t + 7200);
	assert_int_equal(count(f, "n1"), 1);
	incident_after_check(&f->cfg, "n1", &r, true, t + 7200);
	assert_int_equal(count(f, "n1"), 2);
	/* the node's records were compacted by the check (root's) */
	check_report_free(&r);
}

/* On probation, a passing check forgives; a failing one does not, nor a
 * node that is not on probation. */
static void
test_check_forgives(void **state)
{
	struct fix *f = *state;
	struct check_report r = { 0 };
	struct ledger_records rs;
	double t = 1.8e9;

	add_result(&r, "ledger", VERDICT_PASS, "probation: ...", "{\"state\": \"probation\"}");
	add_result(&r, "nics", VERDICT_FAIL, "eth1 is down", NULL);
	incident_after_check(&f->cfg, "n1", &r, true, t);
	assert_int_equal(records(f, "n1", &rs), 1);
	assert_int_equal(rs.v[0].kind, CONFIG_LEDGER_HEALTHCHECK);
	ledger_records_free(&rs);
	r.results[1].verdict = VERDICT_PASS;
	incident_after_check(&f->cfg, "n1", &r, true, t + 10);
	assert_int_equal(records(f, "n1", &rs), 2);
	assert_int_equal(rs.v[1].kind, LEDGER_KIND_FORGIVE);
	assert_false(rs.v[1].manual);
	assert_true(rs.v[1].trusted);
	ledger_records_free(&rs);
	assert_string_equal(r.results[0].reason, "forgiven: every check passed after the quarantine");
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(r.results[0].details, "forgiven")));
	cJSON_Delete(r.results[0].details);
	r.results[0].details = cJSON_Parse("{\"state\": \"watched\"}");
	incident_after_check(&f->cfg, "n1", &r, true, t + 20);
	assert_int_equal(count(f, "n1"), 2);
	check_report_free(&r);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_ledger),
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
		T(test_job_events),
		T(test_job_gather),
		T(test_check_repeat),
		T(test_check_forgives),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
