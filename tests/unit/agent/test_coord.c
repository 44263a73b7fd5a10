/*
 * test_coord.c - the coordinator's decisions, driven with a fake clock
 * and no MPI: what it sends, says and records for every way a job runs
 * and ends.
 */
#include "autoconf.h"

#include "../vigil_test.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "vigil.h"
#include "agent/coord.h"
#include "agent/fsm.h"
#include "check/check.h"
#include "check/gather.h"
#include "comm/msg.h"
#include "lib/json.h"
#include "lib/util.h"

#define MAXREC 256

struct sent {
	int rank;
	enum msg_kind kind;
	char *text;
};

struct rec {
	struct sent sent[MAXREC];
	int nsent;
	char *events[MAXREC];  /* "kind node rank: message" */
	int nevents;
	char *said[MAXREC];
	int nsaid;
};

static int
rec_send(void *arg, int rank, enum msg_kind kind, const char *text)
{
	struct rec *r = arg;

	assert_true(r->nsent < MAXREC);
	r->sent[r->nsent].rank = rank;
	r->sent[r->nsent].kind = kind;
	r->sent[r->nsent].text = strdup(text);
	r->nsent++;
	return 0;
}

static void
rec_event(void *arg, const char *node, int rank, const char *kind, const char *severity,
          const char *message, cJSON *details)
{
	struct rec *r = arg;
	char buf[1024];

	(void)severity;
	snprintf(buf, sizeof(buf), "%s %s %d: %s", kind, node, rank, message);
	assert_true(r->nevents < MAXREC);
	r->events[r->nevents++] = strdup(buf);
	cJSON_Delete(details);
}

static void
rec_say(void *arg, const char *line)
{
	struct rec *r = arg;

	assert_true(r->nsaid < MAXREC);
	r->said[r->nsaid++] = strdup(line);
}

static int
fixed_port(void *arg)
{
	(void)arg;
	return 29500;
}

static void
rec_clear(struct rec *r)
{
	for (int i = 0; i < r->nsent; i++)
		free(r->sent[i].text);
	for (int i = 0; i < r->nevents; i++)
		free(r->events[i]);
	for (int i = 0; i < r->nsaid; i++)
		free(r->said[i]);
	memset(r, 0, sizeof(*r));
}

/* How many messages of KIND went to RANK (-1: any rank) whose text holds NEEDLE. */
static int
count_sent(const struct rec *r, int rank, enum msg_kind kind, const char *needle)
{
	int n = 0;

	for (int i = 0; i < r->nsent; i++)
		if ((rank < 0 || r->sent[i].rank == rank) && r->sent[i].kind == kind &&
		    (!needle || strstr(r->sent[i].text, needle)))
			n++;
	return n;
}

static bool
said(const struct rec *r, const char *needle)
{
	for (int i = 0; i < r->nsaid; i++)
		if (strstr(r->said[i], needle))
			return true;
	return false;
}

static bool
evented(const struct rec *r, const char *needle)
{
	for (int i = 0; i < r->nevents; i++)
		if (strstr(r->events[i], needle))
			return true;
	return false;
}

/* ---- fixture ---------------------------------------------------------------- */

struct fx {
	struct rec rec;
	struct coord_opts o;
	struct coord *c;
	struct msg_plan plan;
};

static void
default_opts(struct coord_opts *o, int size)
{
	memset(o, 0, sizeof(*o));
	o->size = size;
	o->precheck = true;
	o->precheck_level = VERDICT_FAIL;
	o->max_resumes = -1;
	o->grace_s = 30;
	o->heartbeat_s = 5;
	o->heartbeat_timeout_s = 30;
	o->ckpt_lead_s = 60;
}

/* A pre-check report: every check passes, or "nics" fails on the ranks in FAIL_MASK. */
static char *
payload(int rank, bool fail)
{
	struct check_report rep = { 0 };
	char node[16];
	char *text;

	rep.results = calloc(1, sizeof(*rep.results));
	rep.n = 1;
	snprintf(rep.results[0].name, sizeof(rep.results[0].name), "nics");
	rep.results[0].verdict = fail ? VERDICT_FAIL : VERDICT_PASS;
	snprintf(rep.results[0].reason, sizeof(rep.results[0].reason), "%s",
	         fail ? "eth1 is down (operstate down, no carrier)" : "1 interface up");
	rep.results[0].details = cJSON_CreateObject();
	snprintf(node, sizeof(node), "n%d", rank + 1);
	text = gather_payload(node, rank, &rep, NULL);
	check_report_free(&rep);
	return text;
}

/*
 * Start a coordinator for SIZE ranks at time 0, plan with the pre-check
 * failing on the ranks in FAIL_MASK and missing on those in MISSING_MASK.
 */
static void
start(struct fx *f, unsigned fail_mask, unsigned missing_mask)
{
	struct coord_ops ops = { rec_send, rec_event, rec_say, fixed_port, &f->rec };
	struct gather g = { 0 };

	f->c = coord_new(&f->o, &ops, 0);
	assert_non_null(f->c);
	assert_int_equal(gather_init(&g, f->o.size), 0);
	for (int r = 0; r < f->o.size; r++) {
		char addr[32], *p = NULL;

		snprintf(addr, sizeof(addr), "10.0.0.%d", r + 1);
		assert_int_equal(coord_set_node(f->c, r, addr, 2), 0);
		if (!(missing_mask & (1u << r)))
			p = payload(r, fail_mask & (1u << r));
		assert_int_equal(gather_add(&g, r, p, 60), 0);
		free(p);
	}
	gather_consistency(&g);
	assert_int_equal(coord_plan(f->c, &g, 0, &f->plan), 0);
	gather_free(&g);
}

static int
setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	default_opts(&f->o, 3);
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fx *f = *state;

	fsm_trace(NULL, NULL);
	coord_free(f->c);
	rec_clear(&f->rec);
	free(f);
	return 0;
}

/* A result as a node sends it. */
static void
result(struct fx *f, int rank, int code, int sig, double now)
{
	struct msg_result r = { 0 };
	char node[16];

	snprintf(node, sizeof(node), "n%d", rank + 1);
	r.node = node;
	r.exit_code = code;
	r.signal = sig;
	r.seconds = now;
	coord_result(f->c, rank, &r, now);
}

/* Every rank not lost is heard from at NOW. */
static void
all_heard(struct fx *f, double now)
{
	for (int r = 0; r < f->o.size; r++)
		coord_heard(f->c, r, now);
}

/* Tick through time from A to B in steps of STEP, every rank in HEARD_MASK heard. */
static void
run_until(struct fx *f, double a, double b, double step, unsigned heard_mask)
{
	for (double t = a; t <= b + 1e-9; t += step) {
		for (int r = 0; r < f->o.size; r++)
			if (heard_mask & (1u << r))
				coord_heard(f->c, r, t);
		coord_tick(f->c, t);
	}
}

/* A new coordinator for SIZE ranks, nothing recorded. */
static void
fresh(struct fx *f, int size)
{
	coord_free(f->c);
	f->c = NULL;
	rec_clear(&f->rec);
	default_opts(&f->o, size);
}

static cJSON *
report(struct fx *f, double now)
{
	cJSON *r = coord_report(f->c, now);

	assert_non_null(r);
	return r;
}

/* ---- the plan ------------------------------------------------------------------ */

static void
test_plan_go(void **state)
{
	struct fx *f = *state;

	start(f, 0, 0);
	assert_true(f->plan.go);
	assert_int_equal(f->plan.nmembers, 3);
	assert_string_equal(f->plan.master_addr, "10.0.0.1");
	assert_int_equal(f->plan.master_port, 29500);
	assert_true(f->plan.finalize);
	assert_string_equal(f->plan.nodes[2].host, "n3");
	assert_int_equal(f->plan.nodes[2].slots, 2);
	assert_int_equal(coord_phase(f->c), COORD_RUNNING);
	assert_string_equal(coord_host(f->c, 1), "n2");
	assert_string_equal(coord_host(f->c, 7), "?");
}

static void
test_plan_no_go(void **state)
{
	struct fx *f = *state;
	cJSON *rep, *nodes;

	start(f, 1u << 1, 0);
	assert_false(f->plan.go);
	assert_int_equal(f->plan.exit_code, VIGIL_EXIT_UNHEALTHY);
	assert_non_null(strstr(f->plan.message, "1 of 3 nodes not ready"));
	assert_int_equal(coord_phase(f->c), COORD_DONE);
	assert_true(said(&f->rec, "n2 (rank 1): nics: eth1 is down"));
	assert_int_equal(coord_exit_code(f->c), VIGIL_EXIT_UNHEALTHY);
	/* the report: nothing trained, n2 unhealthy, the others never started */
	rep = report(f, 1);
	assert_int_equal(json_int(rep, "nodes_trained", 0, 10, -1), 0);
	nodes = cJSON_GetObjectItem(rep, "nodes");
	assert_string_equal(json_str(cJSON_GetArrayItem(nodes, 0), "state", ""), "not_started");
	assert_string_equal(json_str(cJSON_GetArrayItem(nodes, 1), "state", ""), "unhealthy");
	assert_string_equal(json_str(cJSON_GetArrayItem(nodes, 2), "state", ""), "not_started");
	cJSON_Delete(rep);
}

static void
test_plan_elastic_start(void **state)
{
	struct fx *f = *state;

	f->o.min_nodes = 2;
	start(f, 1u << 0, 0);
	assert_true(f->plan.go);
	assert_int_equal(f->plan.nmembers, 2);
	assert_int_equal(f->plan.members[0], 1);
	assert_int_equal(f->plan.members[1], 2);
	/* the first member's address, not the coordinator's */
	assert_string_equal(f->plan.master_addr, "10.0.0.2");
	assert_true(said(&f->rec, "1 of 3 nodes not ready: starting on the 2 healthy nodes"));
	/* the node left out sends an idle result; the members succeed */
	{
		struct msg_result r = { .node = "n1", .idle = true };

		coord_result(f->c, 0, &r, 1);
	}
	result(f, 1, 0, 0, 5);
	result(f, 2, 0, 0, 5);
	assert_int_equal(coord_phase(f->c), COORD_FINISHING);
	assert_string_equal(coord_state(f->c), VIGIL_STATE_SUCCEEDED);
	coord_finish(f->c, 0, 6);
	/* the final line counts the nodes that trained */
	assert_true(said(&f->rec, "job succeeded on 2 of 3 nodes"));
	assert_true(said(&f->rec, "n1 (rank 0) left out"));
}

static void
test_plan_node_never_reported(void **state)
{
	struct fx *f = *state;

	f->o.min_nodes = 2;
	start(f, 0, 1u << 2);
	assert_true(f->plan.go);
	assert_int_equal(f->plan.nmembers, 2);
	assert_false(f->plan.finalize);
	assert_true(coord_lost(f->c, 2));
	assert_false(coord_finalize_safe(f->c));
	/* nobody waits for its result */
	result(f, 0, 0, 0, 5);
	result(f, 1, 0, 0, 5);
	assert_int_equal(coord_phase(f->c), COORD_FINISHING);
	assert_int_equal(coord_exit_code(f->c), 0);
}

static void
test_plan_no_free_port(void **state)
{
	struct fx *f = *state;
	struct coord_ops ops = { rec_send, rec_event, rec_say, NULL, &f->rec };
	struct gather g = { 0 };

	f->c = coord_new(&f->o, &ops, 0);
	assert_int_equal(gather_init(&g, 3), 0);
	for (int r = 0; r < 3; r++) {
		char *p = payload(r, false);

		gather_add(&g, r, p, 60);
		free(p);
	}
	assert_int_equal(coord_plan(f->c, &g, 0, &f->plan), 0);
	gather_free(&g);
	assert_false(f->plan.go);
	assert_int_equal(f->plan.exit_code, VIGIL_EXIT_INTERNAL);
	assert_true(said(&f->rec, "cannot find a free port"));
}

/* ---- agents that share a host name ------------------------------------------------ */

/* Plan SIZE ranks, every pre-check passing, rank R named NAME(R). */
static void
start_named(struct fx *f, const char *(*name)(int rank, char *buf, size_t len))
{
	struct coord_ops ops = { rec_send, rec_event, rec_say, fixed_port, &f->rec };
	struct gather g = { 0 };

	f->c = coord_new(&f->o, &ops, 0);
	assert_non_null(f->c);
	assert_int_equal(gather_init(&g, f->o.size), 0);
	for (int r = 0; r < f->o.size; r++) {
		struct check_report rep = { 0 };
		char buf[64];
		char *p = gather_payload(name(r, buf, sizeof(buf)), r, &rep, NULL);

		assert_non_null(p);
		assert_int_equal(coord_set_node(f->c, r, "10.0.0.1", 2), 0);
		assert_int_equal(gather_add(&g, r, p, 60), 0);
		free(p);
	}
	assert_int_equal(coord_plan(f->c, &g, 0, &f->plan), 0);
	gather_free(&g);
}

/* mpirun -np 4 on two hosts without --map-by ppr:1:node */
static const char *
two_hosts(int rank, char *buf, size_t len)
{
	snprintf(buf, len, "%s", rank % 2 ? "gpu2" : "gpu1");
	return buf;
}

static void
test_shared_names_hostfile_mode(void **state)
{
	struct fx *f = *state;

	f->o.size = 4;
	f->o.unique_hosts = true;
	start_named(f, two_hosts);
	assert_false(f->plan.go);
	assert_int_equal(f->plan.exit_code, VIGIL_EXIT_USAGE);
	assert_true(said(&f->rec, "agents share a host name ('gpu1' is ranks 0, 2; 'gpu2' is "
	                 "ranks 1, 3)"));
	assert_true(said(&f->rec, "mpirun --map-by ppr:1:node"));
	assert_true(said(&f->rec, "VIGIL_NODE_NAME"));
	assert_int_equal(coord_exit_code(f->c), VIGIL_EXIT_USAGE);
}

static void
test_shared_names_warned(void **state)
{
	struct fx *f = *state;

	f->o.size = 4;
	start_named(f, two_hosts);
	assert_true(f->plan.go);
	assert_true(said(&f->rec, "warning: agents share a host name ('gpu1' is ranks 0, 2; "
	                 "'gpu2' is ranks 1, 3): the report and the exclude list cannot tell "
	                 "them apart"));
}

/* 10,000 nodes, two of which took one name: found, named, fast. */
static const char *
big_cluster(int rank, char *buf, size_t len)
{
	snprintf(buf, len, "node%05d", rank == 9876 ? 123 : rank);
	return buf;
}

static const char *
one_host(int rank, char *buf, size_t len)
{
	(void)rank;
	snprintf(buf, len, "vm");
	return buf;
}

static void
test_shared_names_at_scale(void **state)
{
	struct fx *f = *state;

	/* (its time at 10,000 nodes is bench_coord's plan figure, not a test's) */
	f->o.size = 10000;
	f->o.unique_hosts = true;
	start_named(f, big_cluster);
	assert_false(f->plan.go);
	assert_true(said(&f->rec, "('node00123' is ranks 123, 9876)"));
	coord_free(f->c);
	rec_clear(&f->rec);
	/* every rank on one host: the first ranks named, the rest counted */
	f->o.size = 20;
	start_named(f, one_host);
	assert_true(said(&f->rec, "('vm' is ranks 0, 1, 2, 3, 4, 5, 6, 7 (+12 more))"));
}

/* Output nobody read (`vigil run | head`): the job goes on, the report says how much. */
static void
test_output_lost_reported(void **state)
{
	struct fx *f = *state;
	struct msg_result r = { .node = "n1", .exit_code = 3, .seconds = 1, .output_lost = 4096 };
	cJSON *rep, *nodes;

	start(f, 0, 0);
	coord_result(f->c, 0, &r, 1);
	result(f, 1, 143, SIGTERM, 1);
	result(f, 2, 143, SIGTERM, 1);
	rep = report(f, 2);
	assert_int_equal(json_int(rep, "exit_code", 0, 255, -1), 3);
	assert_int_equal(json_int(rep, "output_lost_bytes", 0, 1LL << 50, -1), 4096);
	nodes = cJSON_GetObjectItem(rep, "nodes");
	assert_int_equal(json_int(cJSON_GetArrayItem(nodes, 0), "output_lost_bytes", 0,
	                          1LL << 50, -1), 4096);
	/* nothing said of a node that lost nothing */
	assert_null(cJSON_GetObjectItem(cJSON_GetArrayItem(nodes, 1), "output_lost_bytes"));
	cJSON_Delete(rep);
}

/* ---- ends ------------------------------------------------------------------------ */

static void
test_success(void **state)
{
	struct fx *f = *state;
	cJSON *r;

	start(f, 0, 0);
	for (int k = 0; k < 3; k++)
		result(f, k, 0, 0, 10);
	assert_int_equal(coord_phase(f->c), COORD_FINISHING);
	coord_finish(f->c, 4, 11);
	assert_int_equal(coord_phase(f->c), COORD_DONE);
	assert_int_equal(coord_exit_code(f->c), 0);
	assert_string_equal(coord_state(f->c), VIGIL_STATE_SUCCEEDED);
	/* FINAL to the other ranks, with the reductions' count, not to itself */
	assert_int_equal(count_sent(&f->rec, 0, MSG_FINAL, NULL), 0);
	assert_int_equal(count_sent(&f->rec, 1, MSG_FINAL, "\"cycles\":4"), 1);
	assert_int_equal(count_sent(&f->rec, 2, MSG_FINAL, "\"finalize\":true"), 1);
	assert_true(said(&f->rec, "job succeeded on 3 nodes in 11.0 s"));
	assert_true(evented(&f->rec, "job n1 0: job succeeded"));
	assert_true(evented(&f->rec, "exit n2 1: training ended with status 0"));
	r = report(f, 11);
	assert_string_equal(json_str(r, "state", ""), "succeeded");
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(r, "faulty_nodes")), 0);
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(r, "first_failure")));
	cJSON_Delete(r);
	assert_true(coord_finalize_safe(f->c));
	assert_true(coord_hold(f->c) == 0);
}

static void
test_failure_stops_everyone(void **state)
{
	struct fx *f = *state;
	const char *tail[] = { "Traceback", "ValueError: bad" };
	struct msg_result r = { .node = "n2", .exit_code = 3, .seconds = 4, .tail = tail,
	                        .ntail = 2 };
	cJSON *rep, *ff;

	start(f, 0, 0);
	coord_result(f->c, 1, &r, 4);
	assert_int_equal(coord_phase(f->c), COORD_STOPPING);
	/* stop to the trainings still running: ranks 0 and 2, not 1 */
	assert_int_equal(count_sent(&f->rec, 0, MSG_COMMAND, "\"stop\""), 1);
	assert_int_equal(count_sent(&f->rec, 2, MSG_COMMAND, "\"stop\""), 1);
	assert_int_equal(count_sent(&f->rec, 1, MSG_COMMAND, NULL), 0);
	/* the others end because they were told to: that is not a second failure */
	result(f, 0, 143, SIGTERM, 5);
	result(f, 2, 143, SIGTERM, 5);
	assert_int_equal(coord_phase(f->c), COORD_FINISHING);
	assert_int_equal(coord_exit_code(f->c), 3);
	assert_string_equal(coord_state(f->c), VIGIL_STATE_ERROR);
	coord_finish(f->c, 0, 6);
	assert_true(said(&f->rec, "job error: n2 (rank 1) ended first, with status 3"));
	rep = report(f, 6);
	ff = cJSON_GetObjectItem(rep, "first_failure");
	assert_int_equal(json_int(ff, "rank", 0, 10, -1), 1);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(ff, "stderr_tail")), 2);
	cJSON_Delete(rep);
}

static void
test_agent_signal_is_stopped(void **state)
{
	struct fx *f = *state;
	struct msg_result r = { .node = "n1", .exit_code = 143, .signal = SIGTERM,
	                        .agent_signal = SIGTERM };

	start(f, 0, 0);
	coord_result(f->c, 0, &r, 3);
	assert_int_equal(coord_phase(f->c), COORD_STOPPING);
	result(f, 1, 143, SIGTERM, 4);
	result(f, 2, 143, SIGTERM, 4);
	assert_string_equal(coord_state(f->c), VIGIL_STATE_STOPPED);
	assert_int_equal(coord_exit_code(f->c), 143);
}

static void
test_start_error_said_once(void **state)
{
	struct fx *f = *state;

	start(f, 0, 0);
	for (int k = 0; k < 3; k++) {
		struct msg_result r = { .node = "n", .exit_code = 127,
		                        .error = "cannot run 'trian.py': command not found" };

		coord_result(f->c, k, &r, 1);
	}
	coord_finish(f->c, 0, 2);
	assert_int_equal(coord_exit_code(f->c), 127);
	assert_true(said(&f->rec, "cannot run 'trian.py': command not found (on 3 of 3 nodes)"));
	assert_true(said(&f->rec, "could not start the training, status 127"));
}

/* Under --resume a crash is a fault: the healthy nodes save, the job requeues. */
static void
test_crash_with_resume_checkpoints(void **state)
{
	struct fx *f = *state;
	char *excl;

	f->o.resume = true;
	start(f, 0, 0);
	result(f, 1, 137, SIGKILL, 5);
	assert_int_equal(coord_phase(f->c), COORD_CHECKPOINTING);
	assert_int_equal(count_sent(&f->rec, 0, MSG_COMMAND, "\"checkpoint\""), 1);
	assert_int_equal(count_sent(&f->rec, 2, MSG_COMMAND, "\"checkpoint\""), 1);
	assert_int_equal(count_sent(&f->rec, -1, MSG_COMMAND, "\"stop\""), 0);
	result(f, 0, 0, 0, 8);
	result(f, 2, 0, 0, 8);
	assert_int_equal(coord_exit_code(f->c), VIGIL_EXIT_REQUEUE);
	assert_string_equal(coord_state(f->c), VIGIL_STATE_ERROR);
	excl = coord_exclude_list(f->c);
	assert_string_equal(excl, "n2\n");
	free(excl);
}

/* Under --resume, SIGTERM to an agent (mpirun ending the job) saves too. */
static void
test_agent_term_with_resume(void **state)
{
	struct fx *f = *state;
	struct msg_result r = { .node = "n3", .exit_code = 0, .agent_signal = SIGTERM };

	f->o.resume = true;
	start(f, 0, 0);
	coord_result(f->c, 2, &r, 3);
	assert_int_equal(coord_phase(f->c), COORD_CHECKPOINTING);
	result(f, 0, 0, 0, 6);
	result(f, 1, 0, 0, 6);
	assert_int_equal(coord_exit_code(f->c), VIGIL_EXIT_REQUEUE);
	assert_string_equal(coord_state(f->c), VIGIL_STATE_STOPPED);
	assert_false(coord_faulty(f->c, 2));
}

/* Under --resume, a cancel (scancel) stops without a checkpoint: 143, not 81. */
static void
test_cancel_with_resume(void **state)
{
	struct fx *f = *state;
	struct msg_result r = { .node = "n3", .exit_code = 143, .agent_signal = SIGTERM,
	                        .cancelled = true };
	cJSON *rep;

	f->o.resume = true;
	start(f, 0, 0);
	coord_result(f->c, 2, &r, 3);
	assert_int_equal(coord_phase(f->c), COORD_STOPPING);
	assert_int_equal(count_sent(&f->rec, -1, MSG_COMMAND, "\"checkpoint\""), 0);
	result(f, 0, 143, 0, 4);
	result(f, 1, 143, 0, 4);
	assert_int_equal(coord_exit_code(f->c), 143);
	assert_string_equal(coord_state(f->c), VIGIL_STATE_STOPPED);
	assert_false(coord_faulty(f->c, 2));
	assert_false(coord_faulty(f->c, 0));
	rep = report(f, 5);
	assert_non_null(strstr(cJSON_GetStringValue(cJSON_GetObjectItem(rep, "reason")),
	                       "cancelled (scancel)"));
	cJSON_Delete(rep);
}

/* The training died of Slurm's own SIGTERM before its agent knew: a fault
 * first (checkpoint, 81), then the coordinator's own agent learns of the
 * cancel: the job ends cancelled, 143, with the cancel as its reason. */
static void
test_cancel_after_fault(void **state)
{
	struct fx *f = *state;
	cJSON *rep;

	f->o.resume = true;
	start(f, 0, 0);
	result(f, 1, 143, 0, 3);
	assert_int_equal(coord_phase(f->c), COORD_CHECKPOINTING);
	coord_cancel(f->c, 3.1);
	assert_int_equal(coord_phase(f->c), COORD_CHECKPOINTING);  /* no stop over the saves */
	result(f, 0, 0, 0, 4);
	result(f, 2, 0, 0, 4);
	assert_int_equal(coord_exit_code(f->c), 143);
	assert_string_equal(coord_state(f->c), VIGIL_STATE_STOPPED);
	assert_true(coord_hold(f->c) == 0);
	rep = report(f, 5);
	assert_non_null(strstr(cJSON_GetStringValue(cJSON_GetObjectItem(rep, "reason")),
	                       "cancelled (scancel)"));
	cJSON_Delete(rep);
}

/* A successor takes over from a coordinator that fell silent. */
static void
test_successor_adopts(void **state)
{
	struct fx *f = *state;
	struct coord_ops ops = { rec_send, rec_event, rec_say, fixed_port, &f->rec };
	struct msg_node nodes[3] = { { "n1", "10.0.0.1", 2 }, { "n2", "10.0.0.2", 2 },
	                             { "n3", "10.0.0.3", 2 } };
	struct msg_plan plan = { .go = true, .nodes = nodes, .nnodes = 3 };
	int members[3] = { 0, 1, 2 };
	cJSON *rep;

	f->o.resume = true;
	f->o.self = 1;
	f->c = coord_new(&f->o, &ops, 0);
	assert_non_null(f->c);
	assert_int_equal(coord_adopt(f->c, &(struct coord_adoption){ &plan, members, 3, 0,
	                             (int[]){ 0 }, 1, "the coordinator n1 (rank 0) fell silent", 16 },
	                             20), 0);
	assert_true(said(&f->rec, "n2 (rank 1) takes over as the coordinator"));
	assert_int_equal(coord_phase(f->c), COORD_CHECKPOINTING);
	assert_int_equal(count_sent(&f->rec, 0, MSG_COMMAND, NULL), 0);
	assert_int_equal(count_sent(&f->rec, 2, MSG_COMMAND, "\"checkpoint\""), 1);
	result(f, 1, 0, 0, 25);
	result(f, 2, 0, 0, 25);
	assert_int_equal(coord_phase(f->c), COORD_FINISHING);
	assert_int_equal(coord_exit_code(f->c), VIGIL_EXIT_REQUEUE);
	assert_false(coord_finalize_safe(f->c));
	rep = report(f, 26);
	assert_string_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(rep, "faulty_nodes"), 0)
	                            ->valuestring, "n1");
	cJSON_Delete(rep);
	coord_finish(f->c, 0, 26);
	assert_int_equal(count_sent(&f->rec, 2, MSG_FINAL, NULL), 1);
	assert_int_equal(count_sent(&f->rec, 0, MSG_FINAL, NULL), 0);
}

static void note(struct fx *f, int rank, int sig, const char *verdict_s, double now);

/* A training that died of the checkpoint signal: the report says so. */
static void
test_checkpoint_not_confirmed(void **state)
{
	struct fx *f = *state;
	struct msg_result ok = { .node = "n1", .ckpt = true, .ckpt_confirmed = true,
	                         .ckpt_why = "exit status 0 after the checkpoint signal" };
	struct msg_result died = { .node = "n2", .exit_code = 138, .signal = SIGUSR1,
	                           .ckpt = true, .ckpt_why = "died of SIGUSR1: no handler for "
	                           "the checkpoint signal" };
	cJSON *rep, *nc;

	f->o.resume = true;
	start(f, 0, 0);
	note(f, 0, SIGUSR1, NULL, 2);
	coord_result(f->c, 0, &ok, 4);
	coord_result(f->c, 1, &died, 4);
	ok.node = "n3";
	coord_result(f->c, 2, &ok, 4);
	assert_int_equal(coord_exit_code(f->c), VIGIL_EXIT_REQUEUE);
	/* asked by the batch system, but one save unconfirmed: an error, requeued */
	assert_string_equal(coord_state(f->c), VIGIL_STATE_ERROR);
	coord_finish(f->c, 0, 5);
	assert_true(said(&f->rec, "checkpoint not confirmed on n2 (rank 1): died of SIGUSR1"));
	assert_true(evented(&f->rec, "checkpoint n2 1: checkpoint not confirmed"));
	rep = report(f, 5);
	nc = cJSON_GetObjectItem(cJSON_GetObjectItem(rep, "checkpoint"), "not_confirmed");
	assert_int_equal(cJSON_GetArraySize(nc), 1);
	assert_string_equal(json_str(cJSON_GetArrayItem(nc, 0), "node", ""), "n2");
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetObjectItem(rep,
	                 "checkpoint"), "confirmed")), 2);
	cJSON_Delete(rep);
}

/* ---- fault restart (故障重启) ------------------------------------------------------ */

static void
test_restart_then_success(void **state)
{
	struct fx *f = *state;
	cJSON *rep, *att;

	f->o.restart_max = 1;
	start(f, 0, 0);
	result(f, 2, 1, 0, 4);
	assert_int_equal(coord_phase(f->c), COORD_STOPPING);
	result(f, 0, 143, SIGTERM, 5);
	result(f, 1, 143, SIGTERM, 5);
	/* every result in: the training starts again everywhere, then runs */
	assert_int_equal(coord_phase(f->c), COORD_RUNNING);
	assert_int_equal(count_sent(&f->rec, -1, MSG_COMMAND, "\"restart\""), 3);
	assert_int_equal(count_sent(&f->rec, 2, MSG_COMMAND, "\"attempt\":1"), 1);
	assert_int_equal(count_sent(&f->rec, 1, MSG_COMMAND, "\"members\":[0,1,2]"), 1);
	assert_true(evented(&f->rec, "restart n1 0: starting the training again (attempt 1)"));
	for (int k = 0; k < 3; k++)
		result(f, k, 0, 0, 9);
	assert_int_equal(coord_phase(f->c), COORD_FINISHING);
	assert_int_equal(coord_exit_code(f->c), 0);
	assert_string_equal(coord_state(f->c), VIGIL_STATE_SUCCEEDED);
	rep = report(f, 9);
	assert_int_equal(json_int(rep, "restarts", 0, 10, -1), 1);
	att = cJSON_GetArrayItem(cJSON_GetObjectItem(rep, "attempts"), 0);
	assert_non_null(strstr(json_str(att, "ended_by", ""), "n3 (rank 2): the training exited "
	                       "with status 1"));
	cJSON_Delete(rep);
}

static void
test_restart_exhausted(void **state)
{
	struct fx *f = *state;

	f->o.restart_max = 1;
	start(f, 0, 0);
	for (int attempt = 0; attempt < 2; attempt++) {
		result(f, 2, 1, 0, 4);
		result(f, 0, 143, SIGTERM, 5);
		result(f, 1, 143, SIGTERM, 5);
	}
	assert_int_equal(coord_phase(f->c), COORD_FINISHING);
	assert_int_equal(coord_exit_code(f->c), 1);
	coord_finish(f->c, 0, 6);
	assert_true(said(&f->rec, "(no restarts left)"));
}


/* A node found faulty (a NIC fault the training survived) and then a crash
 * on another node: --restart starts again, never on the faulty node. */
static void
test_restart_avoids_faulty_node(void **state)
{
	struct fx *f = *state;

	f->o.restart_max = 1;
	start(f, 0, 0);
	note(f, 1, 0, "fail", 3);
	assert_true(coord_faulty(f->c, 1));
	result(f, 0, 1, 0, 4);
	result(f, 1, 143, SIGTERM, 5);
	result(f, 2, 143, SIGTERM, 5);
	assert_int_equal(coord_phase(f->c), COORD_RUNNING);
	assert_int_equal(count_sent(&f->rec, -1, MSG_COMMAND, "\"members\":[0,2]"), 3);
	assert_int_equal(count_sent(&f->rec, -1, MSG_COMMAND, "\"members\":[0,1,2]"), 0);
}


/* ---- hot spares (--spares) ------------------------------------------------------- */

/* An idle result: RANK runs no training in this attempt (a spare). */
static void
idle(struct fx *f, int rank, double now)
{
	struct msg_result r = { .node = "spare", .idle = true, .seconds = now };

	coord_result(f->c, rank, &r, now);
}

/* Four ranks, the last a spare, planned and running; the spare said it idles. */
static void
start_spared(struct fx *f, unsigned fail_mask)
{
	fresh(f, 4);
	f->o.spares = 1;
	start(f, fail_mask, 0);
	idle(f, 3, 1);
}

static void
test_spare_waits(void **state)
{
	struct fx *f = *state;

	start_spared(f, 0);
	assert_true(f->plan.go);
	assert_int_equal(f->plan.nmembers, 3);
	assert_int_equal(f->plan.members[2], 2);
	/* the plan names the spare, for a successor that may take over */
	assert_int_equal(f->plan.nspares, 1);
	assert_int_equal(f->plan.spares[0], 3);
	assert_int_equal(coord_members(f->c), 3);
	assert_int_equal(coord_phase(f->c), COORD_RUNNING);
	/* a fault of the spare itself disturbs no training */
	note(f, 3, 0, "fail", 2);
	assert_int_equal(coord_phase(f->c), COORD_RUNNING);
	assert_true(coord_faulty(f->c, 3));
	assert_true(said(&f->rec, "a spare no more"));
}

static void
test_spare_fills_precheck_gap(void **state)
{
	struct fx *f = *state;

	start_spared(f, 1u << 1);
	assert_true(f->plan.go);
	assert_int_equal(f->plan.nmembers, 3);
	/* the spare takes rank 1's place: RANK 1 of WORLD_SIZE 3 */
	assert_int_equal(f->plan.members[0], 0);
	assert_int_equal(f->plan.members[1], 3);
	assert_int_equal(f->plan.members[2], 2);
}

/* Under --resume, the inspection of a node that trains nothing requeues nothing. */
static void
test_left_out_fault_requeues_nothing(void **state)
{
	struct fx *f = *state;

	fresh(f, 4);
	f->o.spares = 1;
	f->o.resume = true;
	start(f, 1u << 1, 0);
	idle(f, 1, 1);
	note(f, 1, 0, "fail", 2);
	assert_int_equal(coord_phase(f->c), COORD_RUNNING);
	assert_true(said(&f->rec, "left out"));
	assert_int_equal(count_sent(&f->rec, -1, MSG_COMMAND, "\"checkpoint\""), 0);
}

static void
test_spares_leave_none(void **state)
{
	struct fx *f = *state;

	fresh(f, 2);
	f->o.spares = 2;
	start(f, 0, 0);
	assert_false(f->plan.go);
	assert_int_equal(coord_exit_code(f->c), VIGIL_EXIT_USAGE);
	assert_true(said(&f->rec, "--spares 2 leaves none of the 2 nodes to train"));
}

/* A fault on rank R of the members [0, 1, 2]: save, stop, start again with the spare. */
static void
spare_recovers(struct fx *f, int r, double now)
{
	note(f, r, 0, "fail", now);
	assert_int_equal(coord_phase(f->c), COORD_CHECKPOINTING);
	assert_true(said(&f->rec, "a spare takes its place"));
	for (int k = 0; k < 3; k++)
		result(f, k, 0, 0, now + 2);
	assert_int_equal(coord_phase(f->c), COORD_RUNNING);
}

/* A fault on rank R of the members [0, 3, 2]: the same, a second time. */
static void
spare_recovers_from(struct fx *f, int r, double now)
{
	note(f, r, 0, "fail", now);
	assert_int_equal(coord_phase(f->c), COORD_CHECKPOINTING);
	result(f, 0, 0, 0, now + 2);
	result(f, 2, 0, 0, now + 2);
	result(f, 3, 0, 0, now + 2);
	assert_int_equal(coord_phase(f->c), COORD_RUNNING);
}

static void
test_spare_takes_failed_rank(void **state)
{
	struct fx *f = *state;
	cJSON *rep, *rec;
	char *excl;

	start_spared(f, 0);
	spare_recovers(f, 1, 10);
	/* the same WORLD_SIZE, the spare in rank 1's place, a new attempt */
	assert_int_equal(count_sent(&f->rec, -1, MSG_COMMAND, "\"members\":[0,3,2]"), 4);
	assert_true(said(&f->rec, "the spare n4 (rank 3) takes the place of n2 (rank 1) as RANK 1"));
	idle(f, 1, 13);
	/* the spare's first iteration, 5 s after the fault */
	coord_progress(f->c, 0, 1, 14);
	coord_progress(f->c, 3, 0, 14);
	coord_progress(f->c, 3, 2, 15);
	assert_true(said(&f->rec, "first iteration 5.0 s after the fault"));
	for (int k = 0; k < 4; k++)
		if (k != 1)
			result(f, k, 0, 0, 20);
	assert_int_equal(coord_phase(f->c), COORD_FINISHING);
	assert_int_equal(coord_exit_code(f->c), 0);
	rep = report(f, 20);
	rec = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(rep, "spares"),
	                                             "recoveries"), 0);
	assert_non_null(rec);
	assert_string_equal(json_str(rec, "failed_node", ""), "n2");
	assert_string_equal(json_str(rec, "spare_node", ""), "n4");
	assert_int_equal(json_int(rec, "training_rank", 0, 10, -1), 1);
	assert_true(json_num(rec, "first_iteration_s", 0, 100, -1) == 5);
	assert_string_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(rep,
	                    "spares"), "used"), 0)->valuestring, "n4");
	cJSON_Delete(rep);
	excl = coord_exclude_list(f->c);
	assert_string_equal(excl, "n2\n");
	free(excl);
	/* a spare restart is not one of --restart's */
	assert_int_equal(f->o.restart_max, 0);
}

/*
 * The coordinator n1 lost altogether, a spare in the plan: the successor
 * n2 takes over, the trainings save, and the training starts again on
 * three nodes with the spare n4 as RANK 0 and MASTER_ADDR, the attempt
 * after the nodes' own; no word to the lost coordinator.
 */
static void
adopt_spared(struct fx *f, int nspares, const int *lost, int nlost)
{
	struct coord_ops ops = { rec_send, rec_event, rec_say, fixed_port, &f->rec };
	static struct msg_node nodes[4] = { { "n1", "10.0.0.1", 2 }, { "n2", "10.0.0.2", 2 },
	                                    { "n3", "10.0.0.3", 2 }, { "n4", "10.0.0.4", 2 } };
	int members[3] = { 0, 1, 2 }, spares[1] = { 3 };
	struct msg_plan plan = { .go = true, .nodes = nodes, .nnodes = 4, .spares = spares,
	                         .nspares = nspares };

	fresh(f, 4);
	f->o.spares = 1;
	f->o.resume = true;
	f->o.self = 1;
	f->c = coord_new(&f->o, &ops, 0);
	assert_non_null(f->c);
	assert_int_equal(coord_adopt(f->c, &(struct coord_adoption){ &plan, members, 3, 2, lost,
	                             nlost, "the coordinator n1 (rank 0) fell silent", 16 }, 20), 0);
	assert_int_equal(coord_phase(f->c), COORD_CHECKPOINTING);
}

static void
test_successor_uses_spare(void **state)
{
	struct fx *f = *state;
	cJSON *rep;
	char *excl;

	adopt_spared(f, 1, (int[]){ 0 }, 1);
	assert_true(said(&f->rec, "fell silent: a spare takes its place"));
	result(f, 1, 0, 0, 22);
	result(f, 2, 0, 0, 22);
	idle(f, 3, 22);
	assert_int_equal(coord_phase(f->c), COORD_RUNNING);
	assert_int_equal(count_sent(&f->rec, -1, MSG_COMMAND,
	                            "\"attempt\":3,\"master_addr\":\"10.0.0.4\",\"master_port\":29500,"
	                            "\"members\":[3,1,2]"), 3);
	assert_int_equal(count_sent(&f->rec, 0, MSG_COMMAND, NULL), 0);
	assert_true(said(&f->rec, "the spare n4 (rank 3) takes the place of n1 (rank 0) as RANK 0"));
	/* the spare's first iteration: timed from the coordinator's last word (16) */
	coord_progress(f->c, 1, 1, 24);
	coord_progress(f->c, 3, 0, 24);
	coord_progress(f->c, 3, 2, 25);
	assert_true(said(&f->rec, "first iteration 9.0 s after the fault"));
	for (int k = 1; k < 4; k++)
		result(f, k, 0, 0, 40);
	assert_int_equal(coord_phase(f->c), COORD_FINISHING);
	assert_int_equal(coord_exit_code(f->c), 0);
	/* the lost coordinator cannot take part in MPI's end: the job is ended for it */
	assert_true(coord_abort_end(f->c));
	rep = report(f, 41);
	assert_string_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(rep, "faulty_nodes"), 0)
	                            ->valuestring, "n1");
	assert_string_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(rep,
	                    "spares"), "used"), 0)->valuestring, "n4");
	cJSON_Delete(rep);
	excl = coord_exclude_list(f->c);
	assert_string_equal(excl, "n1\n");
	free(excl);
}

/* No healthy spare in the plan, or the spare lost with the coordinator
 * (a successor in line, silent too): the requeue, as without spares. */
static void
test_successor_without_spare(void **state)
{
	struct fx *f = *state;

	for (int k = 0; k < 2; k++) {
		if (k == 0)
			adopt_spared(f, 0, (int[]){ 0 }, 1);
		else
			adopt_spared(f, 1, (int[]){ 0, 3 }, 2);
		assert_false(said(&f->rec, "a spare takes its place"));
		result(f, 1, 0, 0, 22);
		result(f, 2, 0, 0, 22);
		if (k == 0)
			idle(f, 3, 22);
		assert_int_equal(coord_phase(f->c), COORD_FINISHING);
		assert_int_equal(coord_exit_code(f->c), VIGIL_EXIT_REQUEUE);
	}
}

static void
test_spare_for_coordinator_node(void **state)
{
	struct fx *f = *state;

	start_spared(f, 0);
	spare_recovers(f, 0, 10);
	/* RANK 0 is the spare now: MASTER_ADDR is its address */
	assert_int_equal(count_sent(&f->rec, -1, MSG_COMMAND,
	                            "\"master_addr\":\"10.0.0.4\",\"master_port\":29500,"
	                            "\"members\":[3,1,2]"), 4);
}

/* Four ranks, one spare (options set by the caller after fresh()): rank 1
 * fails and the spare takes its place, then rank 2 fails with no spare
 * left; every training saves and reports. */
static void
second_fault(struct fx *f)
{
	start(f, 0, 0);
	idle(f, 3, 1);
	spare_recovers(f, 1, 10);
	idle(f, 1, 13);
	note(f, 2, 0, "fail", 20);
	assert_int_equal(coord_phase(f->c), COORD_CHECKPOINTING);
	for (int k = 0; k < 4; k++)
		if (k != 1)
			result(f, k, 0, 0, 22);
}

static void
test_second_fault_no_spare_requeues(void **state)
{
	struct fx *f = *state;

	fresh(f, 4);
	f->o.spares = 1;
	f->o.resume = true;
	second_fault(f);
	assert_int_equal(coord_phase(f->c), COORD_FINISHING);
	assert_int_equal(coord_exit_code(f->c), VIGIL_EXIT_REQUEUE);
}

static void
test_second_fault_no_spare_elastic(void **state)
{
	struct fx *f = *state;

	fresh(f, 4);
	f->o.spares = 1;
	f->o.min_nodes = 2;
	second_fault(f);
	/* on without n3: the spare keeps RANK 1 */
	assert_int_equal(coord_phase(f->c), COORD_RUNNING);
	assert_int_equal(count_sent(&f->rec, -1, MSG_COMMAND, "\"members\":[0,3]"), 4);
}

static void
test_spare_for_lost_node(void **state)
{
	struct fx *f = *state;

	start_spared(f, 0);
	run_until(f, 1, 40, 0.5, 0xdu);  /* rank 1 silent */
	assert_true(coord_lost(f->c, 1));
	assert_int_equal(coord_phase(f->c), COORD_CHECKPOINTING);
	result(f, 0, 0, 0, 41);
	result(f, 2, 0, 0, 41);
	assert_int_equal(coord_phase(f->c), COORD_RUNNING);
	assert_int_equal(count_sent(&f->rec, -1, MSG_COMMAND, "\"members\":[0,3,2]"), 3);
}

static void
test_spare_for_hang_suspect(void **state)
{
	struct fx *f = *state;

	start_spared(f, 0);
	coord_hang(f->c, 2, COORD_HANG_STOP, "hung: rank 2", 10);
	assert_int_equal(coord_phase(f->c), COORD_STOPPING);
	for (int k = 0; k < 3; k++)
		result(f, k, 143, SIGTERM, 11);
	assert_int_equal(coord_phase(f->c), COORD_RUNNING);
	assert_int_equal(count_sent(&f->rec, -1, MSG_COMMAND, "\"members\":[0,1,3]"), 4);
}


/* Elastic: n2's fault shrinks the job to two nodes; its NIC passes again: back to three. */
static void
test_shrunk_job_grows_back(void **state)
{
	struct fx *f = *state;
	cJSON *rep, *att;

	f->o.min_nodes = 2;
	start(f, 0, 0);
	note(f, 1, 0, "fail", 5);
	for (int k = 0; k < 3; k++)
		result(f, k, 0, 0, 7);
	assert_int_equal(count_sent(&f->rec, -1, MSG_COMMAND, "\"members\":[0,2]"), 3);
	idle(f, 1, 8);
	note(f, 1, 0, "pass", 20);
	assert_int_equal(coord_phase(f->c), COORD_CHECKPOINTING);
	assert_true(said(&f->rec, "n2 (rank 1): nic eth1 passes again: the job grows back from 2 "
	                 "to 3 nodes"));
	result(f, 0, 0, 0, 22);
	result(f, 2, 0, 0, 22);
	assert_int_equal(coord_phase(f->c), COORD_RUNNING);
	assert_int_equal(count_sent(&f->rec, -1, MSG_COMMAND, "\"members\":[0,2,1]"), 3);
	assert_false(coord_faulty(f->c, 1));
	for (int k = 0; k < 3; k++)
		result(f, k, 0, 0, 30);
	assert_int_equal(coord_exit_code(f->c), 0);
	rep = report(f, 30);
	att = cJSON_GetObjectItem(rep, "attempts");
	assert_int_equal(json_int(cJSON_GetArrayItem(att, 0), "world_size", 0, 10, -1), 3);
	assert_int_equal(json_int(cJSON_GetArrayItem(att, 1), "world_size", 0, 10, -1), 2);
	assert_non_null(strstr(json_str(cJSON_GetArrayItem(att, 1), "ended_by", ""), "grows back"));
	cJSON_Delete(rep);
}

/* A node replaced by a spare passes again: it waits as a spare, nothing restarts. */
static void
test_healed_node_waits_as_spare(void **state)
{
	struct fx *f = *state;

	start_spared(f, 0);
	spare_recovers(f, 1, 10);
	idle(f, 1, 13);
	note(f, 1, 0, "pass", 20);
	assert_int_equal(coord_phase(f->c), COORD_RUNNING);
	assert_true(said(&f->rec, "passes again: it waits as a spare"));
	/* and takes the next failed node's place */
	spare_recovers_from(f, 2, 30);
	assert_int_equal(count_sent(&f->rec, -1, MSG_COMMAND, "\"members\":[0,3,1]"), 4);
}

/* ---- a hung training (coord_hang()) ---------------------------------------------- */

/* Every training told to stop ends with 143: not a failure of its own. */
static void
hang_results(struct fx *f, double now)
{
	for (int r = 0; r < 3; r++)
		result(f, r, 143, SIGTERM, now);
}

static void
test_hang_requeue(void **state)
{
	struct fx *f = *state;
	char *list;

	f->o.resume = true;
	start(f, 0, 0);
	coord_hang(f->c, 1, COORD_HANG_REQUEUE, "the training hung (...): no checkpoint", 10);
	assert_int_equal(coord_phase(f->c), COORD_STOPPING);
	assert_int_equal(count_sent(&f->rec, -1, MSG_COMMAND, "\"checkpoint\""), 0);
	assert_int_equal(count_sent(&f->rec, -1, MSG_COMMAND, "\"stop\""), 3);
	hang_results(f, 11);
	assert_int_equal(coord_phase(f->c), COORD_FINISHING);
	assert_int_equal(coord_exit_code(f->c), VIGIL_EXIT_REQUEUE);
	/* the suspect alone is excluded: the trainings' 143 blames nobody else */
	list = coord_exclude_list(f->c);
	assert_string_equal(list, "n2\n");
	free(list);
}

static void
test_hang_requeue_nobody(void **state)
{
	struct fx *f = *state;
	char *list;

	f->o.resume = true;
	start(f, 0, 0);
	coord_hang(f->c, -1, COORD_HANG_REQUEUE, "the training hung", 10);
	hang_results(f, 11);
	assert_int_equal(coord_exit_code(f->c), VIGIL_EXIT_REQUEUE);
	list = coord_exclude_list(f->c);
	assert_string_equal(list, "");
	free(list);
}

static void
test_hang_restart_counts(void **state)
{
	struct fx *f = *state;

	f->o.restart_max = 1;
	start(f, 0, 0);
	coord_hang(f->c, -1, COORD_HANG_RESTART, "the training hung", 10);
	hang_results(f, 11);
	assert_int_equal(coord_phase(f->c), COORD_RUNNING);  /* attempt 1 */
	assert_int_equal(count_sent(&f->rec, -1, MSG_COMMAND, "\"restart\""), 3);
	/* hung again: no restart left, it stops (84) */
	coord_hang(f->c, -1, COORD_HANG_RESTART, "the training hung again", 20);
	hang_results(f, 21);
	assert_int_equal(coord_phase(f->c), COORD_FINISHING);
	assert_int_equal(coord_exit_code(f->c), VIGIL_EXIT_INTERNAL);
}

static void
test_hang_stop_and_alert(void **state)
{
	struct fx *f = *state;

	start(f, 0, 0);
	coord_hang(f->c, 2, COORD_HANG_ALERT, "the training hung", 10);
	assert_int_equal(coord_phase(f->c), COORD_RUNNING);  /* an event only: the caller's */
	assert_false(coord_faulty(f->c, 2));
	coord_hang(f->c, 2, COORD_HANG_STOP, "the training hung", 12);
	assert_int_equal(coord_phase(f->c), COORD_STOPPING);
	hang_results(f, 13);
	assert_int_equal(coord_exit_code(f->c), VIGIL_EXIT_INTERNAL);
	assert_string_equal(coord_state(f->c), VIGIL_STATE_ERROR);
	assert_true(coord_faulty(f->c, 2));
	assert_false(coord_faulty(f->c, 0));
	/* once past running, a hang changes nothing */
	coord_hang(f->c, 0, COORD_HANG_STOP, "again", 14);
	assert_false(coord_faulty(f->c, 0));
}

/* A training stopped by a signal to its agent is not restarted. */
static void
test_no_restart_after_agent_signal(void **state)
{
	struct fx *f = *state;
	struct msg_result r = { .node = "n1", .exit_code = 130, .signal = SIGINT,
	                        .agent_signal = SIGINT };

	f->o.restart_max = 3;
	start(f, 0, 0);
	coord_result(f->c, 0, &r, 3);
	result(f, 1, 130, SIGINT, 3);
	result(f, 2, 130, SIGINT, 3);
	assert_int_equal(coord_phase(f->c), COORD_FINISHING);
	assert_string_equal(coord_state(f->c), VIGIL_STATE_STOPPED);
}

/* ---- lost nodes ---------------------------------------------------------------------- */

static void
test_lost_node_ends_job(void **state)
{
	struct fx *f = *state;
	char *excl;

	start(f, 0, 0);
	/* ranks 0 and 1 heard every second; rank 2 silent since 0 */
	run_until(f, 0.5, 29.5, 0.5, 0x3);
	assert_false(coord_lost(f->c, 2));
	run_until(f, 30, 32.5, 0.5, 0x3);
	assert_true(coord_lost(f->c, 2));
	assert_true(evented(&f->rec, "node_lost n3 2: n3 (rank 2) lost: no heartbeat for"));
	assert_int_equal(coord_phase(f->c), COORD_STOPPING);
	assert_int_equal(count_sent(&f->rec, 2, MSG_COMMAND, "\"stop\""), 0);
	result(f, 0, 143, SIGTERM, 33);
	result(f, 1, 143, SIGTERM, 33);
	assert_int_equal(coord_phase(f->c), COORD_FINISHING);
	assert_int_equal(coord_exit_code(f->c), VIGIL_EXIT_INTERNAL);
	assert_false(coord_finalize_safe(f->c));
	excl = coord_exclude_list(f->c);
	assert_string_equal(excl, "n3\n");
	free(excl);
	coord_finish(f->c, 0, 34);
	/* no FINAL to a lost node */
	assert_int_equal(count_sent(&f->rec, 2, MSG_FINAL, NULL), 0);
	assert_int_equal(count_sent(&f->rec, 1, MSG_FINAL, "\"finalize\":false"), 1);
	/* the coordinator ends the job at mpirun, and says so */
	assert_true(coord_abort_end(f->c));
	assert_int_equal(count_sent(&f->rec, 1, MSG_FINAL, "\"abort\":true"), 1);
}

static void
test_lost_node_resume_requeues(void **state)
{
	struct fx *f = *state;
	cJSON *rep;

	f->o.resume = true;
	start(f, 0, 0);
	run_until(f, 0.5, 33, 0.5, 0x3);
	assert_int_equal(coord_phase(f->c), COORD_CHECKPOINTING);
	assert_int_equal(count_sent(&f->rec, 0, MSG_COMMAND, "\"checkpoint\""), 1);
	assert_int_equal(count_sent(&f->rec, 1, MSG_COMMAND, "\"checkpoint\""), 1);
	assert_true(said(&f->rec, "vigil: checkpoint: n3 (rank 2) lost"));
	result(f, 0, 0, 0, 40);
	result(f, 1, 0, 0, 40);
	assert_int_equal(coord_exit_code(f->c), VIGIL_EXIT_REQUEUE);
	assert_string_equal(coord_state(f->c), VIGIL_STATE_ERROR);
	rep = report(f, 40);
	assert_string_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(rep, "faulty_nodes"), 0)
	                            ->valuestring, "n3");
	assert_string_equal(json_str(cJSON_GetArrayItem(cJSON_GetObjectItem(rep, "nodes"), 2),
	                             "state", ""), "lost");
	cJSON_Delete(rep);
}

static void
test_resumes_exhausted(void **state)
{
	struct fx *f = *state;

	f->o.resume = true;
	f->o.max_resumes = 2;
	f->o.resumes_done = 2;
	start(f, 0, 0);
	run_until(f, 0.5, 33, 0.5, 0x3);
	result(f, 0, 0, 0, 40);
	result(f, 1, 0, 0, 40);
	assert_int_equal(coord_exit_code(f->c), VIGIL_EXIT_NO_REQUEUE);
}

/* Trainings told to end that do not report in time are lost. */
static void
test_results_overdue(void **state)
{
	struct fx *f = *state;

	start(f, 0, 0);
	result(f, 1, 2, 0, 1);
	assert_int_equal(coord_phase(f->c), COORD_STOPPING);
	result(f, 0, 143, SIGTERM, 2);
	/* rank 2's agent answers heartbeats but its result never comes */
	run_until(f, 2, 45, 0.5, 0x4);
	assert_int_equal(coord_phase(f->c), COORD_STOPPING);
	run_until(f, 45.5, 46.5, 0.5, 0x4);
	assert_int_equal(coord_phase(f->c), COORD_FINISHING);
	assert_true(coord_lost(f->c, 2));
	assert_true(coord_faulty(f->c, 2));
	assert_true(said(&f->rec, "n3 (rank 2) did not report within 45 s"));
	assert_int_equal(coord_exit_code(f->c), 2);
}

/* A node gone after its training ended: avoided, but the outcome stands. */
static void
test_lost_after_result(void **state)
{
	struct fx *f = *state;

	start(f, 0, 0);
	result(f, 2, 0, 0, 1);
	run_until(f, 0.5, 33, 0.5, 0x3);
	assert_true(coord_lost(f->c, 2));
	assert_int_equal(coord_phase(f->c), COORD_RUNNING);
	result(f, 0, 0, 0, 34);
	result(f, 1, 0, 0, 34);
	assert_int_equal(coord_exit_code(f->c), 0);
	assert_false(coord_finalize_safe(f->c));
}

/* ---- elastic (弹性训练) --------------------------------------------------------------- */

static void
test_elastic_goes_on_without_lost_node(void **state)
{
	struct fx *f = *state;
	cJSON *rep;

	f->o.min_nodes = 2;
	start(f, 0, 0);
	run_until(f, 0.5, 33, 0.5, 0x3);
	assert_int_equal(coord_phase(f->c), COORD_CHECKPOINTING);
	result(f, 0, 0, 0, 40);
	result(f, 1, 0, 0, 40);
	/* restarted on the two healthy nodes */
	assert_int_equal(coord_phase(f->c), COORD_RUNNING);
	assert_int_equal(count_sent(&f->rec, 0, MSG_COMMAND, "\"members\":[0,1]"), 1);
	assert_int_equal(count_sent(&f->rec, 2, MSG_COMMAND, "\"restart\""), 0);
	assert_int_equal(coord_members(f->c), 2);
	result(f, 0, 0, 0, 80);
	result(f, 1, 0, 0, 80);
	assert_int_equal(coord_phase(f->c), COORD_FINISHING);
	/* finishing on fewer nodes is a success, that says so */
	assert_int_equal(coord_exit_code(f->c), 0);
	assert_string_equal(coord_state(f->c), VIGIL_STATE_SUCCEEDED);
	coord_finish(f->c, 0, 81);
	assert_true(said(&f->rec, "job succeeded on 2 of 3 nodes in 81.0 s; n3 (rank 2) lost"));
	rep = report(f, 81);
	assert_int_equal(json_int(rep, "nodes_trained", 0, 10, -1), 2);
	cJSON_Delete(rep);
}

static void
test_elastic_too_few_left(void **state)
{
	struct fx *f = *state;

	f->o.min_nodes = 3;
	start(f, 0, 0);
	run_until(f, 0.5, 33, 0.5, 0x3);
	/* 2 healthy < 3: no elastic restart; a lost node ends the job */
	assert_int_equal(coord_phase(f->c), COORD_STOPPING);
	result(f, 0, 143, SIGTERM, 40);
	result(f, 1, 143, SIGTERM, 40);
	assert_int_equal(coord_exit_code(f->c), VIGIL_EXIT_INTERNAL);
}

/* ---- notes: inspection findings and the batch system's signal -------------------------- */

static void
note(struct fx *f, int rank, int sig, const char *verdict_s, double now)
{
	struct finding fd = { .what = "nic", .device = "eth1",
	                          .evidence = "operstate down, carrier 0" };
	struct msg_note n = { .node = "x", .signal = sig };

	if (verdict_s) {
		verdict_parse(verdict_s, &fd.verdict);
		n.findings = &fd;
		n.nfindings = 1;
	}
	coord_note(f->c, rank, &n, now);
}

static void
test_signal_checkpoints_once(void **state)
{
	struct fx *f = *state;

	f->o.resume = true;
	start(f, 0, 0);
	note(f, 1, SIGUSR1, NULL, 5);
	note(f, 2, SIGUSR1, NULL, 5);  /* mpirun forwards it to every rank: once is enough */
	assert_int_equal(coord_phase(f->c), COORD_CHECKPOINTING);
	assert_int_equal(count_sent(&f->rec, -1, MSG_COMMAND, "\"checkpoint\""), 3);
	assert_true(said(&f->rec, "checkpoint: SIGUSR1 reached n2 (rank 1)"));
	for (int k = 0; k < 3; k++)
		result(f, k, 0, 0, 8);
	assert_int_equal(coord_exit_code(f->c), VIGIL_EXIT_REQUEUE);
	/* the batch system asked: nobody is faulty, the job is stopped */
	assert_string_equal(coord_state(f->c), VIGIL_STATE_STOPPED);
}

static void
test_fault_with_resume(void **state)
{
	struct fx *f = *state;
	char *excl;

	f->o.resume = true;
	start(f, 0, 0);
	note(f, 1, 0, "warn", 5);
	assert_int_equal(coord_phase(f->c), COORD_RUNNING);
	assert_true(said(&f->rec, "n2 (rank 1): warning: nic eth1: operstate down"));
	note(f, 1, 0, "fail", 6);
	assert_int_equal(coord_phase(f->c), COORD_CHECKPOINTING);
	assert_true(evented(&f->rec, "fault n2 1: nic eth1: operstate down, carrier 0"));
	for (int k = 0; k < 3; k++)
		result(f, k, 0, 0, 8);
	assert_int_equal(coord_exit_code(f->c), VIGIL_EXIT_REQUEUE);
	assert_string_equal(coord_state(f->c), VIGIL_STATE_ERROR);
	excl = coord_exclude_list(f->c);
	assert_string_equal(excl, "n2\n");
	free(excl);
}

static void
test_fault_without_resume_goes_on(void **state)
{
	struct fx *f = *state;

	start(f, 0, 0);
	note(f, 1, 0, "fail", 6);
	assert_int_equal(coord_phase(f->c), COORD_RUNNING);
	assert_true(said(&f->rec, "the training goes on"));
	assert_true(coord_faulty(f->c, 1));
}

static void
test_reschedule_alert(void **state)
{
	struct fx *f = *state;

	f->o.resume = true;
	start(f, 0, 0);
	coord_alert(f->c, 2, "n3 e2e 52% above the median", 10);
	assert_int_equal(coord_phase(f->c), COORD_RUNNING);  /* alert only by default */
	coord_free(f->c);
	rec_clear(&f->rec);
	f->o.perf_reschedule = true;
	start(f, 0, 0);
	coord_alert(f->c, 2, "n3 e2e 52% above the median", 10);
	assert_int_equal(coord_phase(f->c), COORD_CHECKPOINTING);
	assert_true(coord_faulty(f->c, 2));
	assert_true(said(&f->rec, "checkpoint: performance: n3 e2e 52% above the median"));
}

/* ---- the time limit -------------------------------------------------------------------- */

static void
test_time_limit_with_resume(void **state)
{
	struct fx *f = *state;

	f->o.resume = true;
	start(f, 0, 0);
	coord_set_time_limit(f->c, 100);
	/* the next deadline is the checkpoint, 60 s (the lead) before the end */
	run_until(f, 0.5, 39.5, 0.5, 0x7);
	assert_int_equal(coord_phase(f->c), COORD_RUNNING);
	all_heard(f, 40);
	coord_tick(f->c, 40);
	assert_int_equal(coord_phase(f->c), COORD_CHECKPOINTING);
	assert_true(said(&f->rec, "checkpoint: the time limit is near"));
	for (int k = 0; k < 3; k++)
		result(f, k, 0, 0, 50);
	assert_int_equal(coord_exit_code(f->c), VIGIL_EXIT_EXPIRED);
	assert_string_equal(coord_state(f->c), VIGIL_STATE_EXPIRED);
}

static void
test_time_limit_moves(void **state)
{
	struct fx *f = *state;

	f->o.resume = true;
	start(f, 0, 0);
	coord_set_time_limit(f->c, 100);
	run_until(f, 0.5, 30, 0.5, 0x7);
	/* an administrator extended the limit (scontrol update TimeLimit=) */
	coord_set_time_limit(f->c, 200);
	run_until(f, 30.5, 139.5, 0.5, 0x7);
	assert_int_equal(coord_phase(f->c), COORD_RUNNING);
	all_heard(f, 140);
	assert_true(coord_tick(f->c, 140) < 0 || coord_phase(f->c) == COORD_CHECKPOINTING);
	assert_int_equal(coord_phase(f->c), COORD_CHECKPOINTING);
}

static void
test_time_limit_without_resume(void **state)
{
	struct fx *f = *state;

	start(f, 0, 0);
	coord_set_time_limit(f->c, 20);
	assert_true(coord_tick(f->c, 1) <= 20);
	run_until(f, 0.5, 19.5, 0.5, 0x7);
	assert_int_equal(coord_phase(f->c), COORD_RUNNING);
	all_heard(f, 20);
	coord_tick(f->c, 20);
	assert_int_equal(coord_phase(f->c), COORD_STOPPING);
	assert_int_equal(count_sent(&f->rec, -1, MSG_COMMAND, "the time limit was reached"), 3);
	for (int k = 0; k < 3; k++)
		result(f, k, 143, SIGTERM, 21);
	assert_int_equal(coord_exit_code(f->c), VIGIL_EXIT_EXPIRED);
	assert_string_equal(coord_state(f->c), VIGIL_STATE_EXPIRED);
}

/*
 * The time limit comes near while a spare takes a failed node's place:
 * the save under way ends the job (expired), nothing starts again past
 * the limit; with --resume and without, at the save or at the stop.
 */
static void
test_time_limit_during_recovery(void **state)
{
	struct fx *f = *state;

	for (int resume = 0; resume < 2; resume++) {
		fresh(f, 4);
		f->o.spares = 1;
		f->o.resume = resume;
		start(f, 0, 0);
		idle(f, 3, 1);
		coord_set_time_limit(f->c, resume ? 100 : 42);
		all_heard(f, 30);
		note(f, 1, 0, "fail", 30);
		assert_int_equal(coord_phase(f->c), COORD_CHECKPOINTING);
		all_heard(f, 40);
		coord_tick(f->c, resume ? 40 : 42);  /* the lead: 60 s before the end */
		assert_true(said(&f->rec, "the time limit is near: the job ends after this "
		                 "checkpoint, without starting again"));
		for (int k = 0; k < 3; k++)
			result(f, k, 0, 0, 43);
		assert_int_equal(coord_phase(f->c), COORD_FINISHING);
		assert_int_equal(coord_exit_code(f->c), VIGIL_EXIT_EXPIRED);
		assert_string_equal(coord_state(f->c), VIGIL_STATE_EXPIRED);
		assert_int_equal(count_sent(&f->rec, -1, MSG_COMMAND, "\"members\":[0,3,2]"), 0);
	}
}

/* ---- the coordinator's own troubles ------------------------------------------------------ */

/* Stopped for longer than the timeout, then back: nobody is blamed. */
static void
test_stall_blames_nobody(void **state)
{
	struct fx *f = *state;

	f->o.heartbeat_s = 0.5;
	f->o.heartbeat_timeout_s = 2;
	f->o.resume = true;
	start(f, 0, 0);
	run_until(f, 0.25, 3, 0.25, 0x7);
	/* SIGSTOP for 5 s: no tick, no message read */
	coord_tick(f->c, 8);
	assert_int_equal(coord_nlost(f->c), 0);
	assert_int_equal(coord_phase(f->c), COORD_RUNNING);
	assert_true(evented(&f->rec, "stall n1 0: the coordinator was stalled for 5.0 s"));
	/* the queued heartbeats arrive, and the job goes on */
	run_until(f, 8.25, 20, 0.25, 0x7);
	assert_int_equal(coord_nlost(f->c), 0);
	assert_int_equal(coord_phase(f->c), COORD_RUNNING);
	/* a real loss afterwards is still found */
	run_until(f, 20.25, 23, 0.25, 0x3);
	assert_true(coord_lost(f->c, 2));
}

/* Every other node silent at once: the coordinator is the one cut off. */
static void
test_isolated_coordinator_names_itself(void **state)
{
	struct fx *f = *state;
	cJSON *rep;
	char *excl;

	coord_free(f->c);
	default_opts(&f->o, 4);
	f->o.resume = true;
	start(f, 0, 0);
	run_until(f, 0.5, 10, 0.5, 0xf);
	run_until(f, 10.5, 41, 0.5, 0x1);
	assert_int_equal(coord_phase(f->c), COORD_CHECKPOINTING);
	assert_true(said(&f->rec, "n1 (rank 0), the coordinator, lost contact with all 3 other "
	                 "nodes: it is the node cut off"));
	/* the others are out of its reach, not lost nor faulty */
	rep = report(f, 42);
	assert_string_equal(json_str(cJSON_GetArrayItem(cJSON_GetObjectItem(rep, "nodes"), 2),
	                             "state", ""), "unreachable");
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(rep, "faulty_nodes")), 1);
	cJSON_Delete(rep);
	for (int r = 1; r < 4; r++)
		assert_false(coord_faulty(f->c, r));
	/* its own training checkpoints; nobody else is blamed */
	assert_int_equal(count_sent(&f->rec, 0, MSG_COMMAND, "\"checkpoint\""), 1);
	result(f, 0, 0, 0, 45);
	assert_int_equal(coord_phase(f->c), COORD_FINISHING);
	assert_int_equal(coord_exit_code(f->c), VIGIL_EXIT_REQUEUE);
	excl = coord_exclude_list(f->c);
	assert_string_equal(excl, "n1\n");
	free(excl);
	/* the others go on without it (mpirun --enable-recovery): no abort */
	assert_false(coord_finalize_safe(f->c));
	assert_false(coord_abort_end(f->c));
}

/* With one other node, its silence is its own. */
static void
test_two_nodes_peer_lost(void **state)
{
	struct fx *f = *state;

	coord_free(f->c);
	default_opts(&f->o, 2);
	f->o.resume = true;
	start(f, 0, 0);
	run_until(f, 0.5, 33, 0.5, 0x1);
	assert_true(coord_lost(f->c, 1));
	assert_false(coord_faulty(f->c, 0));
	assert_true(coord_faulty(f->c, 1));
}

/* ---- the coordinator's own outage, at every point of the heartbeat cycle ---------- */

/*
 * When a message sent at S reaches the coordinator over TCP, its network
 * down from C to E: what is sent meanwhile is retransmitted from the
 * first lost send L with Linux's backoff (200 ms, doubling), and what is
 * sent after waits behind it until the first retransmit after E.
 */
static double
arrival(double s, double l, double c, double e)
{
	double rt = l + 0.2, step = 0.4;

	if (s < c || l < 0)
		return s;
	while (rt < e) {
		rt += step;
		step *= 2;
	}
	return s > rt ? s : rt;
}

struct arrive {
	double t;
	int rank;
};

static int
cmp_arrive(const void *a, const void *b)
{
	const struct arrive *x = a, *y = b;

	return (x->t > y->t) - (x->t < y->t);
}

/*
 * A job of N ranks with heartbeat H and timeout TO runs from 0 to END.
 * Rank r > 0 beats every H from H * r / N (spread by rank, as node.c
 * does); the coordinator's network is down from C for D seconds (D 0:
 * never); the ranks in DEAD_MASK stop beating at C for good.  The
 * coordinator reads each message as it arrives and ticks every H / 10.
 * F's coordinator is started here and left for the caller to look at.
 */
static void
simulate(struct fx *f, int n, double h, double to, double c, double d, unsigned dead_mask,
         double end)
{
	int max = (int)(end / h + 2) * n, k = 0, next = 0;
	struct arrive *a = calloc((size_t)max, sizeof(*a));

	assert_non_null(a);
	fresh(f, n);
	f->o.heartbeat_s = h;
	f->o.heartbeat_timeout_s = to;
	f->o.resume = true;
	start(f, 0, 0);
	for (int r = 1; r < n; r++) {
		double l = -1;

		for (double s = h * r / n; s < end && k < max; s += h) {
			if ((dead_mask & (1u << r)) && s >= c)
				break;
			if (d > 0 && s >= c && s < c + d && l < 0)
				l = s;
			a[k].t = d > 0 ? arrival(s, l, c, c + d) : s;
			a[k++].rank = r;
		}
	}
	qsort(a, (size_t)k, sizeof(*a), cmp_arrive);
	for (double t = h / 10; t <= end + 1e-9; t += h / 10) {
		for (; next < k && a[next].t <= t; next++)
			coord_heard(f->c, a[next].rank, a[next].t);
		coord_tick(f->c, t);
	}
	free(a);
}

/* Was any rank in MASK named: a node_lost event, or faulty? */
static bool
named(struct fx *f, unsigned mask)
{
	for (int r = 0; r < f->o.size; r++) {
		char needle[64];

		if (!(mask & (1u << r)))
			continue;
		snprintf(needle, sizeof(needle), "node_lost n%d %d:", r + 1, r);
		if (coord_faulty(f->c, r) || evented(&f->rec, needle))
			return true;
	}
	return false;
}

/*
 * The coordinator's management link down for 2.5 s, 3 s, 5 s and longer
 * than the timeout, from every tenth of the heartbeat cycle on, with the
 * test bed's heartbeat (0.5 s, 1.5 s) and the defaults (5 s, 30 s): no
 * other node is ever named; an outage past the timeout names the
 * coordinator itself, one well within it nobody.
 */
static void
test_coordinator_outage_every_offset(void **state)
{
	struct fx *f = *state;
	const double hb[][2] = { { 0.5, 1.5 }, { 5, 30 }, { 0.5, 3 } };
	const double outage[] = { 2.5, 3, 5, 0 /* beyond the timeout */ };

	for (size_t i = 0; i < sizeof(hb) / sizeof(hb[0]); i++) {
		double h = hb[i][0], to = hb[i][1];

		for (size_t o = 0; o < sizeof(outage) / sizeof(outage[0]); o++) {
			double d = outage[o] > 0 ? outage[o] : 3 * to;

			for (int k = 0; k < 10; k++) {
				double c = 10 * h + 0.1 * k * h;

				simulate(f, 4, h, to, c, d, 0, c + d + 4 * to);
				if (named(f, 0xe))
					fail_msg("hb %.1f/%.1f, outage %.1f s at %.1f of the cycle: a "
					         "healthy node was named", h, to, d, 0.1 * k);
				if (d > to + h)
					assert_true(coord_faulty(f->c, 0));
				if (d + h < to) {
					assert_false(coord_faulty(f->c, 0));
					assert_int_equal(coord_phase(f->c), COORD_RUNNING);
				}
			}
		}
	}
}

/* A node that really stops, at every tenth of the cycle: named within the
 * timeout and a scan, and nobody else; two of four, both; in a job of two,
 * the one. */
static void
test_dead_node_every_offset(void **state)
{
	struct fx *f = *state;

	for (int k = 0; k < 10; k++) {
		double c = 5 + 0.05 * k, lost_at = -1;

		simulate(f, 4, 0.5, 1.5, c, 0, 0x8, c + 1.5 + 0.5 + 0.1);
		assert_true(named(f, 0x8));
		assert_false(named(f, 0x7));
		for (int i = 0; i < f->rec.nevents; i++)
			if (strstr(f->rec.events[i], "node_lost n4 3:"))
				lost_at = 0;
		assert_true(lost_at == 0);
		simulate(f, 4, 0.5, 1.5, c, 0, 0xc, c + 4);
		assert_true(named(f, 0xc));
		assert_false(named(f, 0x3));
		simulate(f, 2, 0.5, 1.5, c, 0, 0x2, c + 4);
		assert_true(named(f, 0x2));
		assert_false(named(f, 0x1));
	}
}

/* An outage of 1 s that the backoff makes 1.7 s of silence: the gap is on
 * record, the fresh timeout covers the late messages, nobody is named. */
static void
test_deaf_gap_said(void **state)
{
	struct fx *f = *state;

	simulate(f, 3, 0.5, 3, 5, 1, 0, 20);
	assert_false(named(f, 0x7));
	assert_true(evented(&f->rec, "stall n1 0: the coordinator heard no node for"));
	assert_int_equal(coord_phase(f->c), COORD_RUNNING);
}

/* The takeover names the coordinator and the successor before in line. */
static void
test_adopt_names_silent_successor(void **state)
{
	struct fx *f = *state;
	struct coord_ops ops = { rec_send, rec_event, rec_say, fixed_port, &f->rec };
	struct msg_node nodes[5] = { { "n1", "a", 1 }, { "n2", "b", 1 }, { "n3", "c", 1 },
	                             { "n4", "d", 1 }, { "n5", "e", 1 } };
	struct msg_plan plan = { .go = true, .nodes = nodes, .nnodes = 5 };
	int members[5] = { 0, 1, 2, 3, 4 };
	char *excl;

	fresh(f, 5);
	f->o.resume = true;
	f->o.self = 2;
	f->c = coord_new(&f->o, &ops, 0);
	assert_non_null(f->c);
	assert_int_equal(coord_adopt(f->c, &(struct coord_adoption){ &plan, members, 5, 0,
	                             (int[]){ 0, 1 }, 2, "gone", 16 }, 20), 0);
	assert_true(evented(&f->rec, "node_lost n1 0: gone"));
	assert_true(evented(&f->rec, "node_lost n2 1: n2 (rank 1) lost: next in line"));
	assert_int_equal(count_sent(&f->rec, 3, MSG_COMMAND, "\"checkpoint\""), 1);
	assert_int_equal(count_sent(&f->rec, 1, MSG_COMMAND, NULL), 0);
	result(f, 2, 0, 0, 21);
	result(f, 3, 0, 0, 21);
	result(f, 4, 0, 0, 21);
	assert_int_equal(coord_phase(f->c), COORD_FINISHING);
	excl = coord_exclude_list(f->c);
	assert_string_equal(excl, "n1\nn2\n");
	free(excl);
}

static void
test_heartbeats_to_nodes(void **state)
{
	struct fx *f = *state;

	start(f, 0, 0);
	run_until(f, 0.5, 20, 0.5, 0x7);
	/* every 5 s to each other rank: at 5, 10, 15, 20 */
	assert_int_equal(count_sent(&f->rec, 1, MSG_HEARTBEAT, NULL), 4);
	assert_int_equal(count_sent(&f->rec, 2, MSG_HEARTBEAT, NULL), 4);
	assert_int_equal(count_sent(&f->rec, 0, MSG_HEARTBEAT, NULL), 0);
}

static void
test_hold_on_failure(void **state)
{
	struct fx *f = *state;

	f->o.hold_s = 600;
	f->o.job_id = "4242";
	start(f, 0, 0);
	result(f, 1, 9, 0, 1);
	result(f, 0, 143, SIGTERM, 2);
	result(f, 2, 143, SIGTERM, 2);
	coord_finish(f->c, 0, 3);
	assert_true(coord_hold(f->c) == 600);
	assert_true(said(&f->rec, "n2 (rank 1): srun --jobid=4242 -w n2 --pty bash"));
	assert_int_equal(count_sent(&f->rec, 1, MSG_FINAL, "\"hold\":600"), 1);
}

/* ---- the lifecycle table ----------------------------------------------------------- */

#define NPHASES (COORD_DONE + 1)
#define NEVENTS (COORD_EV_FINISHED + 1)

/* The rows coord.c's table must have, and no others. */
static const struct {
	enum coord_event ev;
	enum coord_phase from, to;
} want[] = {
	{ COORD_EV_GO, COORD_PLANNING, COORD_RUNNING },
	{ COORD_EV_NOGO, COORD_PLANNING, COORD_DONE },
	{ COORD_EV_ADOPT, COORD_PLANNING, COORD_RUNNING },
	{ COORD_EV_CHECKPOINT, COORD_RUNNING, COORD_CHECKPOINTING },
	{ COORD_EV_STOP, COORD_RUNNING, COORD_STOPPING },
	{ COORD_EV_STOP, COORD_CHECKPOINTING, COORD_STOPPING },
	{ COORD_EV_REPORTED, COORD_RUNNING, COORD_FINISHING },
	{ COORD_EV_REPORTED, COORD_CHECKPOINTING, COORD_FINISHING },
	{ COORD_EV_REPORTED, COORD_STOPPING, COORD_FINISHING },
	{ COORD_EV_AGAIN, COORD_CHECKPOINTING, COORD_RESTARTING },
	{ COORD_EV_AGAIN, COORD_STOPPING, COORD_RESTARTING },
	{ COORD_EV_RESTARTED, COORD_RESTARTING, COORD_RUNNING },
	{ COORD_EV_EXHAUSTED, COORD_RESTARTING, COORD_FINISHING },
	{ COORD_EV_FINISHED, COORD_FINISHING, COORD_DONE },
};

#define NWANT (sizeof(want) / sizeof(want[0]))

static int
wanted(int from, int ev)
{
	for (size_t i = 0; i < NWANT; i++)
		if ((int)want[i].from == from && (int)want[i].ev == ev)
			return (int)want[i].to;
	return -1;
}

/* Every pair of phase and event: the table's answer is the row above, or a refusal. */
static void
test_table_rows(void **state)
{
	(void)state;
	for (int p = 0; p < NPHASES; p++) {
		assert_string_not_equal(coord_phase_name((enum coord_phase)p), "?");
		for (int e = 0; e < NEVENTS; e++)
			assert_int_equal(coord_next((enum coord_phase)p, (enum coord_event)e),
			                 wanted(p, e));
	}
	for (int e = 0; e < NEVENTS; e++)
		assert_string_not_equal(coord_event_name((enum coord_event)e), "?");
	assert_string_equal(coord_phase_name(COORD_PLANNING), "planning");
	assert_string_equal(coord_event_name(COORD_EV_NOGO), "no-go");
	assert_string_equal(coord_phase_name((enum coord_phase)NPHASES), "?");
	assert_string_equal(coord_event_name((enum coord_event)NEVENTS), "?");
	/* an undefined pair: refused */
	assert_int_equal(coord_next(COORD_DONE, COORD_EV_STOP), -1);
	assert_int_equal(coord_next(COORD_RUNNING, COORD_EV_AGAIN), -1);
	assert_int_equal(coord_next(COORD_RUNNING, COORD_EV_GO), -1);
}

/* What the coordinator's steps were, through fsm.h's seam. */
struct steps {
	bool taken[NPHASES][NEVENTS];
	int refused;
};

static void
on_step(void *arg, const struct fsm_table *t, int from, int ev, int to)
{
	struct steps *s = arg;

	if (strcmp(t->actor, "coordinator") != 0)
		return;
	assert_true(from >= 0 && from < NPHASES && ev >= 0 && ev < NEVENTS);
	if (to < 0) {
		s->refused++;
		return;
	}
	assert_int_equal(to, wanted(from, ev));
	s->taken[from][ev] = true;
}

/* Rank 1 takes over from rank 0 at 20. */
static void
adopt(struct fx *f)
{
	struct coord_ops ops = { rec_send, rec_event, rec_say, fixed_port, &f->rec };
	struct msg_node nodes[3] = { { "n1", "10.0.0.1", 2 }, { "n2", "10.0.0.2", 2 },
	                             { "n3", "10.0.0.3", 2 } };
	struct msg_plan plan = { .go = true, .nodes = nodes, .nnodes = 3 };
	int members[3] = { 0, 1, 2 };

	f->o.self = 1;
	f->c = coord_new(&f->o, &ops, 0);
	assert_non_null(f->c);
	assert_int_equal(coord_phase(f->c), COORD_PLANNING);
	assert_int_equal(coord_adopt(f->c, &(struct coord_adoption){ &plan, members, 3, 0,
	                             (int[]){ 0 }, 1, "silent", 16 }, 20), 0);
}

/*
 * Every row of the table, each taken by what takes it in a job: the plan
 * and the takeover too, which once set the phase by hand.
 */
static void
test_table_every_row_driven(void **state)
{
	struct fx *f = *state;
	struct steps s = { 0 };

	fsm_trace(on_step, &s);
	/* go; every result in from running; FINAL */
	fresh(f, 3);
	start(f, 0, 0);
	for (int k = 0; k < 3; k++)
		result(f, k, 0, 0, 5);
	coord_finish(f->c, 0, 6);
	assert_int_equal(coord_phase(f->c), COORD_DONE);
	/* no-go */
	fresh(f, 3);
	start(f, 0x2, 0);
	assert_int_equal(coord_phase(f->c), COORD_DONE);
	/* a successor checkpoints (--resume), and every result comes in */
	fresh(f, 3);
	f->o.resume = true;
	adopt(f);
	assert_int_equal(coord_phase(f->c), COORD_CHECKPOINTING);
	result(f, 1, 0, 0, 25);
	result(f, 2, 0, 0, 25);
	assert_int_equal(coord_phase(f->c), COORD_FINISHING);
	/* a successor stops, and every result comes in */
	fresh(f, 3);
	adopt(f);
	assert_int_equal(coord_phase(f->c), COORD_STOPPING);
	result(f, 1, 143, SIGTERM, 25);
	result(f, 2, 143, SIGTERM, 25);
	assert_int_equal(coord_phase(f->c), COORD_FINISHING);
	/* a failure stops everyone, and the training starts again (--restart) */
	fresh(f, 3);
	f->o.restart_max = 1;
	start(f, 0, 0);
	result(f, 2, 1, 0, 4);
	assert_int_equal(coord_phase(f->c), COORD_STOPPING);
	result(f, 0, 143, SIGTERM, 5);
	result(f, 1, 143, SIGTERM, 5);
	assert_int_equal(coord_phase(f->c), COORD_RUNNING);
	/* elastic: a lost node checkpoints, and the rest start again */
	fresh(f, 3);
	f->o.min_nodes = 2;
	start(f, 0, 0);
	run_until(f, 0.5, 33, 0.5, 0x3);
	assert_int_equal(coord_phase(f->c), COORD_CHECKPOINTING);
	result(f, 0, 0, 0, 40);
	result(f, 1, 0, 0, 40);
	assert_int_equal(coord_phase(f->c), COORD_RUNNING);
	/* elastic: a fault checkpoints, a lost node then stops, too few are left */
	fresh(f, 3);
	f->o.min_nodes = 2;
	start(f, 0, 0);
	note(f, 2, 0, "fail", 1);
	assert_int_equal(coord_phase(f->c), COORD_CHECKPOINTING);
	run_until(f, 0.5, 33, 0.5, 0x5);
	assert_true(coord_lost(f->c, 1));
	assert_int_equal(coord_phase(f->c), COORD_STOPPING);
	result(f, 0, 0, 0, 34);
	result(f, 2, 0, 0, 34);
	assert_int_equal(coord_phase(f->c), COORD_FINISHING);
	assert_true(said(&f->rec, "cannot start again: 1 healthy node left, fewer than "
	                 "--min-nodes"));
	fsm_trace(NULL, NULL);

	for (size_t i = 0; i < NWANT; i++)
		if (!s.taken[want[i].from][want[i].ev])
			fail_msg("never taken: %s --%s--> %s", coord_phase_name(want[i].from),
			         coord_event_name(want[i].ev), coord_phase_name(want[i].to));
	/* the guards keep every event to a phase that has a row for it */
	assert_int_equal(s.refused, 0);
}

/* An event the phase has no row for changes nothing. */
static void
test_table_refuses(void **state)
{
	struct fx *f = *state;

	start(f, 0, 0);
	/* FINAL before FINISHING: nothing sent, still running */
	coord_finish(f->c, 0, 1);
	assert_int_equal(coord_phase(f->c), COORD_RUNNING);
	assert_int_equal(count_sent(&f->rec, -1, MSG_FINAL, NULL), 0);
	for (int k = 0; k < 3; k++)
		result(f, k, 0, 0, 5);
	coord_finish(f->c, 0, 6);
	coord_finish(f->c, 0, 7);
	assert_int_equal(coord_phase(f->c), COORD_DONE);
	assert_int_equal(count_sent(&f->rec, 1, MSG_FINAL, NULL), 1);
	/* nothing moves a coordinator that is done */
	coord_alert(f->c, 1, "slow", 8);
	note(f, 1, SIGUSR1, NULL, 8);
	assert_int_equal(coord_phase(f->c), COORD_DONE);
	assert_int_equal(count_sent(&f->rec, -1, MSG_COMMAND, "\"checkpoint\""), 0);
}

int
main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_plan_go),
		T(test_plan_no_go),
		T(test_plan_elastic_start),
		T(test_plan_node_never_reported),
		T(test_plan_no_free_port),
		T(test_shared_names_hostfile_mode),
		T(test_shared_names_warned),
		T(test_shared_names_at_scale),
		T(test_output_lost_reported),
		T(test_success),
		T(test_failure_stops_everyone),
		T(test_agent_signal_is_stopped),
		T(test_start_error_said_once),
		T(test_crash_with_resume_checkpoints),
		T(test_agent_term_with_resume),
		T(test_cancel_with_resume),
		T(test_cancel_after_fault),
		T(test_successor_adopts),
		T(test_checkpoint_not_confirmed),
		T(test_restart_then_success),
		T(test_restart_exhausted),
		T(test_restart_avoids_faulty_node),
		T(test_spare_waits),
		T(test_spare_fills_precheck_gap),
		T(test_spares_leave_none),
		T(test_left_out_fault_requeues_nothing),
		T(test_spare_takes_failed_rank),
		T(test_successor_uses_spare),
		T(test_successor_without_spare),
		T(test_spare_for_coordinator_node),
		T(test_second_fault_no_spare_requeues),
		T(test_second_fault_no_spare_elastic),
		T(test_spare_for_lost_node),
		T(test_spare_for_hang_suspect),
		T(test_shrunk_job_grows_back),
		T(test_healed_node_waits_as_spare),
		T(test_hang_requeue),
		T(test_hang_requeue_nobody),
		T(test_hang_restart_counts),
		T(test_hang_stop_and_alert),
		T(test_no_restart_after_agent_signal),
		T(test_lost_node_ends_job),
		T(test_lost_node_resume_requeues),
		T(test_resumes_exhausted),
		T(test_results_overdue),
		T(test_lost_after_result),
		T(test_elastic_goes_on_without_lost_node),
		T(test_elastic_too_few_left),
		T(test_signal_checkpoints_once),
		T(test_fault_with_resume),
		T(test_fault_without_resume_goes_on),
		T(test_reschedule_alert),
		T(test_time_limit_with_resume),
		T(test_time_limit_moves),
		T(test_time_limit_without_resume),
		T(test_time_limit_during_recovery),
		T(test_stall_blames_nobody),
		T(test_isolated_coordinator_names_itself),
		T(test_two_nodes_peer_lost),
		T(test_coordinator_outage_every_offset),
		T(test_dead_node_every_offset),
		T(test_deaf_gap_said),
		T(test_adopt_names_silent_successor),
		T(test_heartbeats_to_nodes),
		T(test_hold_on_failure),
		T(test_table_rows),
		T(test_table_every_row_driven),
		T(test_table_refuses),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
