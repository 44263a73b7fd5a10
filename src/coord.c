/*
 * coord.c - the coordinator's side of `vigil run` (rank 0): the plan from
 * every node's pre-check, the results, notes and heartbeats of the nodes,
 * the decisions they lead to (stop, checkpoint, restart, requeue), and the
 * end of the job: the report, the exclude list and FINAL to every node.
 */
#include "autoconf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cJSON.h>

#include "vigil.h"
#include "events.h"
#include "gather.h"
#include "log.h"
#include "loop.h"
#include "metrics.h"
#include "peer.h"
#include "sig.h"
#include "util.h"
#include "job.h"

/*
 * The coordinator's decision from every node's report: go (and how, on
 * which nodes), or no-go (and why).  Returns the plan as JSON text:
 * {"go", "exit_code"?, "message"?, "master_addr", "master_port",
 *  "nodes": [{"host", "addr", "slots"} per rank], "members": [ranks]}.
 */
char *
coord_plan(struct job *j, struct peer_gather *pg)
{
	struct gather g = { 0 };
	cJSON *plan = cJSON_CreateObject(), *nodes, *members;
	char msg[512];
	char *text = NULL;
	const char *addr0 = NULL;
	int blocked = 0, port = j->o->master_port;
	bool *bad = calloc((size_t)j->size, sizeof(*bad));
	cJSON *infos = cJSON_CreateArray();

	if (!plan || !bad || !infos || gather_init(&g, j->size) < 0)
		goto out;
	for (int r = 0; r < j->size; r++)
		if (gather_add(&g, r, peer_gather_get(pg, r), j->cfg->gather_timeout_s) < 0)
			goto out;
	gather_consistency(&g);
	for (int r = 0; r < j->size; r++) {
		enum verdict v = gather_node_verdict(&g.nodes[r]);

		/* a node that sent nothing cannot be planned for, pre-check or not */
		bad[r] = !g.nodes[r].arrived || (j->o->precheck && v >= j->o->precheck_level);
		blocked += bad[r];
	}
	if (j->o->precheck && j->ev) {
		int rc = gather_write_events(&g, j->ev);

		if (rc < 0)
			LOG_ERR("cannot write events to %s: %s", j->o->events, strerror(-rc));
	}
	nodes = cJSON_AddArrayToObject(plan, "nodes");
	members = cJSON_AddArrayToObject(plan, "members");
	for (int r = 0; nodes && members && r < j->size; r++) {
		cJSON *n = cJSON_CreateObject();
		const char *payload = peer_gather_get(pg, r);
		cJSON *info = payload ? cJSON_Parse(payload) : NULL;

		cJSON_AddItemToArray(nodes, n);
		cJSON_AddStringToObject(n, "host", g.nodes[r].node);
		cJSON_AddStringToObject(n, "addr", job_str(info, "addr", "127.0.0.1"));
		cJSON_AddNumberToObject(n, "slots", job_num(info, "slots", 0));
		if (!bad[r]) {
			cJSON_AddItemToArray(members, cJSON_CreateNumber(r));
			if (!addr0)
				addr0 = cJSON_GetObjectItem(n, "addr")->valuestring;
		}
		cJSON_AddItemToArray(infos, info ? info : cJSON_CreateNull());
	}
	if (blocked) {
		/* The pre-check said no somewhere: say so once, here, for every node. */
		size_t len = 0;
		FILE *f = open_memstream(&text, &len);
		bool elastic = j->o->min_nodes > 0 && j->size - blocked >= j->o->min_nodes;

		if (f) {
			gather_print(f, &g, j->o->verbose);
			fclose(f);
			log_say("%s", text);
			free(text);
			text = NULL;
		}
		for (int r = 0; r < j->size; r++)
			if (bad[r] && j->faulty)
				j->faulty[r] = true;
		if (elastic) {
			/* the platform's elastic training: start on the healthy nodes */
			log_say("vigil: %d of %d node%s not ready: starting on the %d healthy node%s "
			        "(--min-nodes %d)\n", blocked, j->size, j->size == 1 ? "" : "s",
			        j->size - blocked, j->size - blocked == 1 ? "" : "s", j->o->min_nodes);
		} else {
			if (j->o->min_nodes > 0)
				snprintf(msg, sizeof(msg), "%d of %d node%s not ready, fewer than --min-nodes %d "
				         "healthy: not starting the training", blocked, j->size,
				         j->size == 1 ? "" : "s", j->o->min_nodes);
			else
				snprintf(msg, sizeof(msg), "%d of %d node%s not ready (pre-check failed or "
				         "no report): not starting the training", blocked, j->size,
				         j->size == 1 ? "" : "s");
			log_say("vigil: %s\n", msg);
			cJSON_AddBoolToObject(plan, "go", false);
			cJSON_AddNumberToObject(plan, "exit_code", VIGIL_EXIT_UNHEALTHY);
			cJSON_AddStringToObject(plan, "message", msg);
			goto print;
		}
	}
	if (port <= 0) {
		port = job_free_port();
		if (port < 0) {
			LOG_ERR("cannot find a free port for MASTER_PORT: %s", strerror(-port));
			cJSON_AddBoolToObject(plan, "go", false);
			cJSON_AddNumberToObject(plan, "exit_code", VIGIL_EXIT_INTERNAL);
			goto print;
		}
	}
	cJSON_AddBoolToObject(plan, "go", true);
	cJSON_AddStringToObject(plan, "master_addr", j->o->master_addr ? j->o->master_addr :
	                        addr0 ? addr0 : "127.0.0.1");
	cJSON_AddNumberToObject(plan, "master_port", port);
print:
	text = cJSON_PrintUnformatted(plan);
out:
	gather_free(&g);
	cJSON_Delete(plan);
	cJSON_Delete(infos);
	free(bad);
	return text;
}

/* ---- the coordinator ---------------------------------------------------- */

static void finish(struct job *j);
static void restart_all(struct job *j);

/* COMMAND to every rank whose training still runs (self included). */
static void
command_running(struct job *j, const char *command, const char *why)
{
	cJSON *c = cJSON_CreateObject();
	char *text;

	cJSON_AddStringToObject(c, "command", command);
	cJSON_AddStringToObject(c, "reason", why);
	text = cJSON_PrintUnformatted(c);
	cJSON_Delete(c);
	for (int r = 0; text && r < j->size; r++)
		if (!j->results[r].have)
			(void)peer_send(j->p, r, PEER_TAG_COMMAND, text);
	free(text);
}

static long
on_lost_timeout(struct loop *l, void *arg)
{
	struct job *j = arg;

	(void)l;
	j->lost_timer = NULL;
	for (int r = 0; r < j->size; r++) {
		if (j->results[r].have)
			continue;
		LOG_ERR("rank %d did not report after it was told to stop", r);
		j->results[r].have = j->results[r].lost = true;
		j->faulty[r] = true;
		j->nresults++;
	}
	j->clean = false;
	if (j->restarting)
		restart_all(j);
	else
		finish(j);
	return LOOP_NOMORE;
}

/* Bound the wait for the results of trainings that were told to end. */
static void
arm_lost_timer(struct job *j, double seconds)
{
	loop_del_timer(j->loop, j->lost_timer);
	j->lost_timer = loop_add_timer(j->loop, (long)(seconds * 1000), on_lost_timeout, j);
}

static void
command_stop(struct job *j, const char *why)
{
	if (j->job_stopping)
		return;
	j->job_stopping = true;
	command_running(j, "stop", why);
	job_event(j, j->node, j->rank, VIGIL_EVENT_STOP, VIGIL_SEVERITY_WARNING, why, NULL);
	arm_lost_timer(j, j->o->grace_s + LOST_AFTER_STOP_S);
}

/*
 * Every healthy node's training saves: the checkpoint signal, the grace,
 * then TERM and KILL.  CODE is the job's end (81 requeue, 83 expired), or 0
 * when the training starts again afterwards (elastic).
 */
void
coord_checkpoint(struct job *j, const char *why, int code)
{
	if (j->checkpointing || j->job_stopping)
		return;
	j->checkpointing = true;
	j->end_code = code;
	snprintf(j->end_reason, sizeof(j->end_reason), "%s", why);
	log_say("vigil: checkpoint: %s\n", why);
	command_running(j, "checkpoint", why);
	job_event(j, j->node, j->rank, VIGIL_EVENT_CHECKPOINT, VIGIL_SEVERITY_WARNING, why, NULL);
	arm_lost_timer(j, j->o->grace_s + STOP_AFTER_CKPT_MS / 1000.0 + LOST_AFTER_STOP_S);
}

static int
healthy_members(const struct job *j)
{
	int n = 0;

	for (int r = 0; r < j->size; r++)
		n += j->in_attempt[r] && !j->faulty[r];
	return n;
}

/* A node is faulty or lost: what to do about it, per the options. */
static void
node_trouble(struct job *j, int rank, const char *why)
{
	j->faulty[rank] = true;
	if (j->o->resume) {
		coord_checkpoint(j, why, VIGIL_EXIT_REQUEUE);
	} else if (j->o->min_nodes > 0 && j->in_attempt[rank] &&
	           healthy_members(j) >= j->o->min_nodes) {
		/* elastic: save, then go on without that node */
		if (!j->checkpointing)
			j->restarting = true;
		coord_checkpoint(j, why, 0);
	} else if (j->results[rank].lost) {
		/* nobody can wait for a lost node: end the job */
		if (!j->end_code)
			j->end_code = VIGIL_EXIT_INTERNAL;
		snprintf(j->end_reason, sizeof(j->end_reason), "%s", why);
		command_stop(j, why);
	} else {
		LOG_WARN("%s (neither --resume nor --min-nodes: the training goes on)", why);
	}
}

/* Heartbeats: a node silent for --heartbeat-timeout is lost. */
long
coord_on_hbcheck(struct loop *l, void *arg)
{
	struct job *j = arg;
	double now = job_now();

	(void)l;
	if (j->finished)
		return LOOP_NOMORE;
	for (int r = 1; r < j->size; r++) {
		struct node_result *nr = &j->results[r];
		char why[512];
		cJSON *d;

		if (nr->have || now - j->last_seen[r] < j->o->heartbeat_timeout_s)
			continue;
		nr->have = nr->lost = true;
		j->nresults++;
		snprintf(why, sizeof(why), "%s (rank %d) lost: no heartbeat for %.1f s",
		         job_str(cJSON_GetArrayItem(cJSON_GetObjectItem(j->plan, "nodes"), r), "host", "?"),
		         r, now - j->last_seen[r]);
		snprintf(nr->node, sizeof(nr->node), "%s",
		         job_str(cJSON_GetArrayItem(cJSON_GetObjectItem(j->plan, "nodes"), r), "host", "?"));
		log_say("vigil: %s\n", why);
		d = cJSON_CreateObject();
		cJSON_AddNumberToObject(d, "silent_s", now - j->last_seen[r]);
		job_event(j, nr->node, r, VIGIL_EVENT_NODE_LOST, VIGIL_SEVERITY_ERROR, why, d);
		j->clean = false;  /* MPI_Finalize would wait on it */
		node_trouble(j, r, why);
	}
	if (j->nresults == j->size && !j->finished) {
		if (j->restarting)
			restart_all(j);
		else
			finish(j);
		return LOOP_NOMORE;
	}
	return (long)(j->o->heartbeat_s * 500);
}

/* The time limit (minus the lead, to save first) has come. */
long
coord_on_time_limit(struct loop *l, void *arg)
{
	struct job *j = arg;

	(void)l;
	if (j->o->resume) {
		coord_checkpoint(j, "the time limit is near", VIGIL_EXIT_EXPIRED);
	} else {
		j->end_code = VIGIL_EXIT_EXPIRED;
		snprintf(j->end_reason, sizeof(j->end_reason), "the time limit was reached");
		command_stop(j, "the time limit was reached");
	}
	return LOOP_NOMORE;
}

/* A node's note: inspection findings, or a checkpoint signal it received. */
void
coord_take_note(struct job *j, int rank, const char *text)
{
	cJSON *o = cJSON_Parse(text);
	const cJSON *f, *x;
	const char *node;
	char why[512];
	bool fault = false;

	if (!o)
		return;
	node = job_str(o, "node", "?");
	if (cJSON_GetObjectItemCaseSensitive(o, "signal")) {
		snprintf(why, sizeof(why), "%s reached %s (rank %d)",
		         sig_name((int)job_num(o, "signal", 0)), node, rank);
		coord_checkpoint(j, why, VIGIL_EXIT_REQUEUE);
	}
	f = cJSON_GetObjectItemCaseSensitive(o, "findings");
	cJSON_ArrayForEach(x, f) {
		bool fail = strcmp(job_str(x, "verdict", ""), "fail") == 0;
		char msg[512];

		snprintf(msg, sizeof(msg), "%s %s: %s", job_str(x, "what", "?"),
		         job_str(x, "device", "?"), job_str(x, "evidence", ""));
		job_event(j, node, rank, VIGIL_EVENT_FAULT,
		           fail ? VIGIL_SEVERITY_ERROR : VIGIL_SEVERITY_WARNING, msg,
		           cJSON_Duplicate(x, 1));
		log_say("vigil: %s (rank %d): %s%s\n", node, rank, fail ? "fault: " : "warning: ", msg);
		if (fail && !fault) {
			fault = true;
			snprintf(why, sizeof(why), "%.100s (rank %d): %.380s", node, rank, msg);
		}
	}
	if (fault)
		node_trouble(j, rank, why);
	cJSON_Delete(o);
}

void
coord_take_result(struct job *j, int rank, const char *text)
{
	struct node_result *nr = &j->results[rank];
	cJSON *o = cJSON_Parse(text);
	char why[512];

	if (!o || nr->have) {
		cJSON_Delete(o);
		return;
	}
	nr->have = true;
	j->nresults++;
	snprintf(nr->node, sizeof(nr->node), "%s", job_str(o, "node", "?"));
	nr->idle = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "idle"));
	nr->exit_code = (int)job_num(o, "exit_code", VIGIL_EXIT_INTERNAL);
	nr->signal = (int)job_num(o, "signal", 0);
	nr->agent_signal = (int)job_num(o, "agent_signal", 0);
	nr->seconds = job_num(o, "seconds", 0);
	snprintf(nr->error, sizeof(nr->error), "%s", job_str(o, "error", ""));
	cJSON_Delete(nr->tail);
	nr->tail = cJSON_DetachItemFromObjectCaseSensitive(o, "stderr_tail");
	cJSON_Delete(o);

	if (!nr->idle) {
		cJSON *d = cJSON_CreateObject();
		char msg[512];

		cJSON_AddNumberToObject(d, "exit_code", nr->exit_code);
		cJSON_AddNumberToObject(d, "attempt", j->restarts);
		if (nr->signal)
			cJSON_AddStringToObject(d, "signal", sig_name(nr->signal));
		if (nr->error[0])
			cJSON_AddStringToObject(d, "error", nr->error);
		snprintf(msg, sizeof(msg), "training ended with status %d", nr->exit_code);
		job_event(j, nr->node, rank, VIGIL_EVENT_EXIT,
		           nr->exit_code ? VIGIL_SEVERITY_ERROR : VIGIL_SEVERITY_INFO, msg, d);
	}
	/* While checkpointing, trainings end because they were told to. */
	if ((nr->exit_code != 0 || nr->agent_signal) && j->first_fail < 0 && !j->checkpointing) {
		j->first_fail = rank;
		if (nr->agent_signal && !nr->exit_code)
			snprintf(why, sizeof(why), "%s (rank %d) was told to stop (%s)", nr->node,
			         rank, sig_name(nr->agent_signal));
		else if (nr->signal)
			snprintf(why, sizeof(why), "%s (rank %d): the training was killed by %s",
			         nr->node, rank, sig_name(nr->signal));
		else
			snprintf(why, sizeof(why), "%s (rank %d): the training exited with status %d",
			         nr->node, rank, nr->exit_code);
		/* fault restart (故障重启): again, everywhere, up to --restart times */
		if (j->o->restart_max > j->restarts && !nr->agent_signal && !nr->error[0] &&
		    !j->end_code) {
			j->restarting = true;
			snprintf(j->end_reason, sizeof(j->end_reason), "%s", why);
		}
		command_stop(j, why);
	}
	if (j->nresults == j->size) {
		if (j->restarting)
			restart_all(j);
		else
			finish(j);
	}
}

/* Every node reported: start the training again (restart, elastic). */
static void
restart_all(struct job *j)
{
	const cJSON *nodes = cJSON_GetObjectItemCaseSensitive(j->plan, "nodes");
	cJSON *cmd, *members, *a;
	const char *addr = NULL;
	char *text, msg[512];
	int port, nmembers = 0;
	bool crash = j->first_fail >= 0;

	loop_del_timer(j->loop, j->lost_timer);
	j->lost_timer = NULL;
	j->restarting = false;
	/* what ended this attempt, for the report */
	a = cJSON_CreateObject();
	cJSON_AddNumberToObject(a, "attempt", j->restarts);
	cJSON_AddStringToObject(a, "ended_by", j->end_reason);
	if (crash) {
		cJSON_AddStringToObject(a, "node", j->results[j->first_fail].node);
		cJSON_AddNumberToObject(a, "rank", j->first_fail);
		cJSON_AddNumberToObject(a, "exit_code", j->results[j->first_fail].exit_code);
	}
	cJSON_AddItemToArray(j->attempts, a);

	for (int r = 0; r < j->size; r++) {
		j->in_attempt[r] = j->in_attempt[r] && !j->faulty[r] && !j->results[r].lost;
		nmembers += j->in_attempt[r];
	}
	if (nmembers == 0 || (j->o->min_nodes > 0 && nmembers < j->o->min_nodes)) {
		log_say("vigil: cannot start again: %d healthy node%s left%s\n", nmembers,
		        nmembers == 1 ? "" : "s", j->o->min_nodes > 0 ? ", fewer than --min-nodes" : "");
		if (!j->end_code && !crash)
			j->end_code = VIGIL_EXIT_INTERNAL;
		finish(j);
		return;
	}
	port = job_free_port();
	if (port < 0)
		port = (int)job_num(j->plan, "master_port", 0);
	j->restarts++;
	cmd = cJSON_CreateObject();
	cJSON_AddStringToObject(cmd, "command", "restart");
	cJSON_AddNumberToObject(cmd, "attempt", j->restarts);
	cJSON_AddNumberToObject(cmd, "master_port", port);
	members = cJSON_AddArrayToObject(cmd, "members");
	for (int r = 0; r < j->size; r++) {
		if (!j->in_attempt[r])
			continue;
		cJSON_AddItemToArray(members, cJSON_CreateNumber(r));
		if (!addr)
			addr = job_str(cJSON_GetArrayItem(nodes, r), "addr", "127.0.0.1");
	}
	cJSON_AddStringToObject(cmd, "master_addr", j->o->master_addr ? j->o->master_addr : addr);
	text = cJSON_PrintUnformatted(cmd);
	cJSON_Delete(cmd);

	snprintf(msg, sizeof(msg), "starting the training again (attempt %d) on %d node%s after: %.400s",
	         j->restarts, nmembers, nmembers == 1 ? "" : "s", j->end_reason);
	log_say("vigil: %s\n", msg);
	job_event(j, j->node, j->rank, VIGIL_EVENT_RESTART, VIGIL_SEVERITY_WARNING, msg, NULL);

	/* a fresh attempt: every live node reports again */
	j->nresults = 0;
	for (int r = 0; r < j->size; r++) {
		struct node_result *nr = &j->results[r];

		if (nr->lost) {
			j->nresults++;
			continue;
		}
		cJSON_Delete(nr->tail);
		memset(nr, 0, sizeof(*nr));
		if (text)
			(void)peer_send(j->p, r, PEER_TAG_COMMAND, text);
	}
	free(text);
	j->first_fail = -1;
	j->job_stopping = false;
	j->checkpointing = false;
	j->end_code = 0;
	j->end_reason[0] = '\0';
}

const char *
coord_state(const struct job *j)
{
	if (j->end_code == VIGIL_EXIT_EXPIRED)
		return VIGIL_STATE_EXPIRED;
	for (int r = 0; r < j->size; r++)
		if (j->results[r].have && j->results[r].agent_signal)
			return VIGIL_STATE_STOPPED;
	if (j->end_code == VIGIL_EXIT_REQUEUE) {
		for (int r = 0; r < j->size; r++)
			if (j->faulty[r])
				return VIGIL_STATE_ERROR;
		return VIGIL_STATE_STOPPED;  /* the batch system asked */
	}
	if (j->first_fail >= 0 || j->end_code)
		return VIGIL_STATE_ERROR;
	for (int r = 0; r < j->size; r++)
		if (j->results[r].lost)
			return VIGIL_STATE_ERROR;
	return VIGIL_STATE_SUCCEEDED;
}

static int
job_exit_code(const struct job *j)
{
	if (j->end_code == VIGIL_EXIT_REQUEUE && j->o->max_resumes >= 0 &&
	    j->resumes_done >= j->o->max_resumes)
		return VIGIL_EXIT_NO_REQUEUE;  /* 最大续训次数 reached */
	if (j->end_code)
		return j->end_code;
	if (j->first_fail >= 0) {
		const struct node_result *nr = &j->results[j->first_fail];

		if (nr->exit_code)
			return nr->exit_code;
		if (nr->agent_signal)
			return 128 + nr->agent_signal;
	}
	for (int r = 0; r < j->size; r++)
		if (j->results[r].lost)
			return VIGIL_EXIT_INTERNAL;
	return 0;
}

/* The name of RANK's node, from the plan. */
const char *
coord_host(const struct job *j, int rank)
{
	const cJSON *nodes = cJSON_GetObjectItemCaseSensitive(j->plan, "nodes");

	return job_str(cJSON_GetArrayItem(nodes, rank), "host", "?");
}

static void
write_report(struct job *j, const char *state, int code)
{
	cJSON *r = cJSON_CreateObject(), *nodes, *cmd;
	char ts[32];
	char *text;
	int rc;

	if (!r)
		return;
	events_timestamp(ts, sizeof(ts));
	cJSON_AddStringToObject(r, "state", state);
	cJSON_AddNumberToObject(r, "exit_code", code);
	cJSON_AddStringToObject(r, "mode", mode_name(j->o->mode));
	cmd = cJSON_AddArrayToObject(r, "command");
	for (int i = 0; cmd && j->o->cmd[i]; i++)
		cJSON_AddItemToArray(cmd, cJSON_CreateString(j->o->cmd[i]));
	cJSON_AddStringToObject(r, "ended", ts);
	cJSON_AddNumberToObject(r, "seconds", job_now() - j->t0);
	cJSON_AddNumberToObject(r, "nodes_total", j->size);
	nodes = cJSON_AddArrayToObject(r, "nodes");
	for (int k = 0; nodes && k < j->size; k++) {
		const struct node_result *nr = &j->results[k];
		cJSON *n = cJSON_CreateObject();

		cJSON_AddItemToArray(nodes, n);
		cJSON_AddStringToObject(n, "node", coord_host(j, k));
		cJSON_AddNumberToObject(n, "rank", k);
		if (!nr->have || nr->lost) {
			cJSON_AddStringToObject(n, "state", "lost");
			continue;
		}
		cJSON_AddStringToObject(n, "state", nr->idle ? "idle" :
		                        nr->exit_code ? VIGIL_STATE_ERROR : VIGIL_STATE_SUCCEEDED);
		cJSON_AddNumberToObject(n, "exit_code", nr->exit_code);
		if (nr->signal)
			cJSON_AddStringToObject(n, "signal", sig_name(nr->signal));
		if (nr->error[0])
			cJSON_AddStringToObject(n, "error", nr->error);
		cJSON_AddNumberToObject(n, "seconds", nr->seconds);
		if (nr->tail)
			cJSON_AddItemToObject(n, "stderr_tail", cJSON_Duplicate(nr->tail, 1));
	}
	if (j->end_reason[0])
		cJSON_AddStringToObject(r, "reason", j->end_reason);
	{
		cJSON *fn = cJSON_AddArrayToObject(r, "faulty_nodes");

		for (int k = 0; fn && k < j->size; k++)
			if (j->faulty[k])
				cJSON_AddItemToArray(fn, cJSON_CreateString(coord_host(j, k)));
	}
	cJSON_AddNumberToObject(r, "restarts", j->restarts);
	if (j->hist) {
		/* 性能检测: per-node medians, the slowest node, the alerts */
		cJSON *perf = cJSON_AddObjectToObject(r, "performance");
		cJSON *pn = cJSON_AddArrayToObject(perf, "nodes");
		double worst = -1, tmp[PERF_HIST];
		int slowest = -1;

		cJSON_AddNumberToObject(perf, "iterations", (double)j->perf_base);
		for (int k = 0; pn && k < j->size; k++) {
			size_t n = j->nhist[k] < PERF_HIST ? j->nhist[k] : PERF_HIST;
			cJSON *x;
			double med;

			if (n == 0)
				continue;
			memcpy(tmp, j->hist + (size_t)k * PERF_HIST, n * sizeof(double));
			med = jobperf_median(tmp, n);
			x = cJSON_CreateObject();
			cJSON_AddStringToObject(x, "node", coord_host(j, k));
			cJSON_AddNumberToObject(x, "rank", k);
			cJSON_AddNumberToObject(x, "median_e2e_ms", med);
			cJSON_AddNumberToObject(x, "samples", (double)n);
			cJSON_AddItemToArray(pn, x);
			if (med > worst) {
				worst = med;
				slowest = k;
			}
		}
		if (slowest >= 0)
			cJSON_AddStringToObject(perf, "slowest_node", coord_host(j, slowest));
		else
			cJSON_AddNullToObject(perf, "slowest_node");
		cJSON_AddItemToObject(perf, "alerts", cJSON_Duplicate(j->alerts, 1));
	}
	cJSON_AddItemToObject(r, "attempts", cJSON_Duplicate(j->attempts, 1));
	cJSON_AddNumberToObject(r, "resumes", j->resumes_done);
	if (j->first_fail >= 0) {
		const struct node_result *nr = &j->results[j->first_fail];
		cJSON *ff = cJSON_AddObjectToObject(r, "first_failure");

		cJSON_AddStringToObject(ff, "node", nr->node);
		cJSON_AddNumberToObject(ff, "rank", j->first_fail);
		cJSON_AddNumberToObject(ff, "exit_code", nr->exit_code);
		if (nr->signal)
			cJSON_AddStringToObject(ff, "signal", sig_name(nr->signal));
		if (nr->error[0])
			cJSON_AddStringToObject(ff, "error", nr->error);
		if (nr->tail)
			cJSON_AddItemToObject(ff, "stderr_tail", cJSON_Duplicate(nr->tail, 1));
	} else {
		cJSON_AddNullToObject(r, "first_failure");
	}
	text = cJSON_Print(r);
	cJSON_Delete(r);
	if (!text)
		return;
	/* a reader (the batch script) never sees half a report */
	rc = util_write_atomic_str(j->o->report, text, 0644);
	if (rc < 0)
		LOG_ERR("cannot write the report %s: %s", j->o->report, strerror(-rc));
	free(text);
}

/* One message for a failure to start shared by many nodes, not one per node. */
static void
say_start_errors(const struct job *j)
{
	for (int r = 0; r < j->size; r++) {
		const struct node_result *nr = &j->results[r];
		int same = 0;
		bool first = true;

		if (!nr->have || !nr->error[0])
			continue;
		for (int k = 0; k < j->size; k++) {
			if (!j->results[k].have || strcmp(j->results[k].error, nr->error) != 0)
				continue;
			if (k < r)
				first = false;
			same++;
		}
		if (first)
			log_say("vigil: %s (on %d of %d node%s)\n", nr->error, same, j->size,
			        j->size == 1 ? "" : "s");
	}
}

/* Coordinator: every node reported (or the rest are lost).  End the job. */
static void
finish(struct job *j)
{
	const char *state;
	int code;
	char msg[512];
	cJSON *d, *fin;
	char *text;
	int rc;

	/* the iterations printed since the last reduction, and a last summary */
	j->finishing = true;
	jobperf_final(j);
	if (j->have_iter && j->o->summary_s > 0)
		jobperf_summary(j);
	state = coord_state(j);
	code = job_exit_code(j);

	loop_del_timer(j->loop, j->lost_timer);
	j->lost_timer = NULL;
	say_start_errors(j);
	if (j->end_code) {
		snprintf(msg, sizeof(msg), "job %s (exit %d%s): %.400s", state, code,
		         code == VIGIL_EXIT_REQUEUE ? ", requeue" :
		         code == VIGIL_EXIT_NO_REQUEUE ? ", resumes exhausted: do not requeue" : "",
		         j->end_reason);
	} else if (j->first_fail >= 0) {
		const struct node_result *nr = &j->results[j->first_fail];

		snprintf(msg, sizeof(msg), "job %s: %s (rank %d) %s %d after %.1f s%s", state, nr->node,
		         j->first_fail, nr->error[0] ? "could not start the training, status" :
		         "ended first, with status", code, nr->seconds,
		         j->restarts ? " (no restarts left)" : "");
	} else {
		snprintf(msg, sizeof(msg), "job %s on %d node%s in %.1f s", state, j->size,
		         j->size == 1 ? "" : "s", job_now() - j->t0);
	}
	log_say("vigil: %s\n", msg);
	d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "state", state);
	cJSON_AddNumberToObject(d, "exit_code", code);
	job_event(j, j->node, j->rank, VIGIL_EVENT_JOB,
	           strcmp(state, VIGIL_STATE_SUCCEEDED) ? VIGIL_SEVERITY_ERROR : VIGIL_SEVERITY_INFO,
	           msg, d);
	if (j->o->report)
		write_report(j, state, code);
	j->finished = true;  /* for the metrics' state */
	jobperf_metrics(j, true);
	if (j->o->exclude_file) {
		/* for sbatch --exclude: the nodes to avoid next time, one a line */
		size_t len = 0;
		char *list = NULL;
		FILE *f = open_memstream(&list, &len);

		if (f) {
			for (int r = 0; r < j->size; r++)
				if (j->faulty[r])
					fprintf(f, "%s\n", coord_host(j, r));
			fclose(f);
			rc = util_write_atomic_str(j->o->exclude_file, list ? list : "", 0644);
			if (rc < 0)
				LOG_ERR("cannot write %s: %s", j->o->exclude_file, strerror(-rc));
			free(list);
		}
	}
	if (code == VIGIL_EXIT_REQUEUE && j->o->state_file) {
		char st[64];

		snprintf(st, sizeof(st), "{\"resumes\": %d}\n", j->resumes_done + 1);
		rc = util_write_atomic_str(j->o->state_file, st, 0644);
		if (rc < 0)
			LOG_ERR("cannot write %s: %s", j->o->state_file, strerror(-rc));
	}
	if (code != 0 && j->o->hold_s > 0) {
		/* 调试终端: keep the allocation; say where the trouble is */
		const char *jobid = getenv("SLURM_JOB_ID");

		log_say("vigil: holding the allocation for %.0f s for debugging (SIGTERM ends it)\n",
		        j->o->hold_s);
		for (int r = 0; r < j->size; r++) {
			const struct node_result *nr = &j->results[r];

			if (!j->faulty[r] && !(nr->have && (nr->exit_code || nr->lost)))
				continue;
			if (jobid)
				log_say("vigil:   %s (rank %d): srun --jobid=%s -w %s --pty bash\n",
				        coord_host(j, r), r, jobid, coord_host(j, r));
			else
				log_say("vigil:   %s (rank %d): ssh %s\n", coord_host(j, r), r, coord_host(j, r));
		}
	}

	fin = cJSON_CreateObject();
	cJSON_AddNumberToObject(fin, "exit_code", code);
	cJSON_AddStringToObject(fin, "state", state);
	if (code != 0 && j->o->hold_s > 0)
		cJSON_AddNumberToObject(fin, "hold", j->o->hold_s);
	/* MPI_Finalize waits for every rank: with a node lost, nobody may
	 * call it, or the healthy nodes would wait on the lost one. */
	for (int r = 0; r < j->size; r++)
		if (j->results[r].lost)
			j->clean = false;
	cJSON_AddBoolToObject(fin, "finalize", j->clean);
	cJSON_AddNumberToObject(fin, "cycles", j->cycles_due);
	text = cJSON_PrintUnformatted(fin);
	cJSON_Delete(fin);
	for (int r = 1; text && r < j->size; r++)
		if (j->results[r].have && !j->results[r].lost)
			(void)peer_send(j->p, r, PEER_TAG_FINAL, text);
	free(text);
	j->exit_code = code;
	j->hold = code != 0 ? j->o->hold_s : 0;
	j->finished = true;
	loop_stop(j->loop);
}
