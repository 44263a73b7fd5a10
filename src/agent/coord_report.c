/*
 * coord_report.c - the coordinator's account of the job: the lines that
 * end it (coord_say_end()), the "--report FILE" document (coord_report())
 * and the exclude list, rendered from the records coord.c keeps.  Nothing
 * here changes a record or the phase.
 */
#include "autoconf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "vigil.h"
#include "agent/coord.h"
#include "agent/coord_priv.h"
#include "lib/sig.h"
#include "lib/util.h"

/* ---- the last lines -------------------------------------------------------------- */

/* "n3 (rank 2) lost, n2 (rank 1) left out" for the nodes that did not train to the end. */
static void
left_out(const struct coord *c, char *buf, size_t len)
{
	size_t used = 0;
	int named = 0, more = 0;

	buf[0] = '\0';
	for (int r = 0; r < c->n; r++) {
		const struct cnode *n = &c->nodes[r];
		int w;

		if (n->member)
			continue;
		if (named == NAMES_IN_LINE) {
			more++;
			continue;
		}
		w = snprintf(buf + used, len - used, "%s%s (rank %d) %s", used ? ", " : "", n->host,
		             r, n->lost ? "lost" : n->spare ? "a spare" : "left out");
		if (w < 0 || used + (size_t)w >= len)
			break;
		used += (size_t)w;
		named++;
	}
	if (more && used + 24 < len)
		snprintf(buf + used, len - used, " (+%d more)", more);
}

/* The one line that says how the job ended. */
static void
final_line(const struct coord *c, const char *state, int code, double now, char *msg,
           size_t len)
{
	if (c->end_code) {
		snprintf(msg, len, "job %s (exit %d%s): %.400s", state, code,
		         code == VIGIL_EXIT_REQUEUE ? ", requeue" :
		         code == VIGIL_EXIT_NO_REQUEUE ? ", resumes exhausted: do not requeue" : "",
		         c->end_reason);
	} else if (c->first_fail >= 0) {
		const struct cnode *n = &c->nodes[c->first_fail];

		snprintf(msg, len, "job %s: %s (rank %d) %s %d after %.1f s%s%s%.400s", state, n->host,
		         c->first_fail, n->error ? "could not start the training, status" :
		         "ended first, with status", code, n->seconds,
		         c->restarts ? " (no restarts left)" : "", n->hint ? "; " : "",
		         n->hint ? n->hint : "");
	} else {
		int m = coord_members(c);
		char out[400];

		left_out(c, out, sizeof(out));
		if (m == c->n)
			snprintf(msg, len, "job %s on %d node%s in %.1f s", state, m, util_plural(m),
			         now - c->t0);
		else
			snprintf(msg, len, "job %s on %d of %d nodes in %.1f s; %s", state, m, c->n,
			         now - c->t0, out);
	}
}

/* One message for a failure to start shared by many nodes, not one per node. */
static void
say_start_errors(struct coord *c)
{
	for (int r = 0; r < c->n; r++) {
		const struct cnode *n = &c->nodes[r];
		int same = 0;
		bool first = true;

		if (!n->have_result || !n->error)
			continue;
		for (int k = 0; k < c->n; k++) {
			if (!c->nodes[k].error || strcmp(c->nodes[k].error, n->error) != 0)
				continue;
			if (k < r)
				first = false;
			same++;
		}
		if (first)
			coord_say(c, "vigil: %s (on %d of %d node%s)", n->error, same, c->n, util_plural(c->n));
	}
}

/* Trainings told to save that gave no evidence of it (ckpt.h). */
static void
say_unconfirmed(struct coord *c)
{
	for (int r = 0; r < c->n; r++) {
		const struct cnode *n = &c->nodes[r];
		char msg[400];
		cJSON *d;

		if (!n->have_result || !n->ckpt || n->ckpt_confirmed)
			continue;
		snprintf(msg, sizeof(msg), "checkpoint not confirmed on %s (rank %d): %s", n->host, r,
		         n->ckpt_why ? n->ckpt_why : "no evidence of a save");
		coord_say(c, "vigil: %s", msg);
		d = cJSON_CreateObject();
		cJSON_AddBoolToObject(d, "confirmed", false);
		coord_emit(c, r, VIGIL_EVENT_CHECKPOINT, VIGIL_SEVERITY_WARNING, msg, d);
	}
}

/* 调试终端: where to look, while the allocation is held. */
static void
say_hold(struct coord *c)
{
	coord_say(c, "vigil: holding the allocation for %.0f s for debugging (SIGTERM ends it)",
	    c->o.hold_s);
	for (int r = 0; r < c->n; r++) {
		const struct cnode *n = &c->nodes[r];

		if (!n->faulty && !n->lost && !(n->have_result && n->exit_code))
			continue;
		if (c->o.job_id)
			coord_say(c, "vigil:   %s (rank %d): srun --jobid=%s -w %s --pty bash", n->host, r,
			    c->o.job_id, n->host);
		else
			coord_say(c, "vigil:   %s (rank %d): ssh %s", n->host, r, n->host);
	}
}

void
coord_say_end(struct coord *c, const char *state, int code, double now)
{
	char msg[1024];
	cJSON *d = cJSON_CreateObject();

	say_start_errors(c);
	say_unconfirmed(c);
	final_line(c, state, code, now, msg, sizeof(msg));
	coord_say(c, "vigil: %s", msg);
	cJSON_AddStringToObject(d, "state", state);
	cJSON_AddNumberToObject(d, "exit_code", code);
	coord_emit(c, c->o.self, VIGIL_EVENT_JOB,
	           strcmp(state, VIGIL_STATE_SUCCEEDED) ? VIGIL_SEVERITY_ERROR : VIGIL_SEVERITY_INFO,
	           msg, d);
	if (code != 0 && c->o.hold_s > 0)
		say_hold(c);
}

/* ---- the report -------------------------------------------------------------------- */

static cJSON *
tail_json(const struct cnode *n)
{
	cJSON *a = cJSON_CreateArray();

	for (int i = 0; a && i < n->ntail; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(n->tail[i]));
	return a;
}

static cJSON *
node_json(const struct coord *c, int r)
{
	const struct cnode *n = &c->nodes[r];
	cJSON *o = cJSON_CreateObject();

	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "node", coord_host(c, r));
	cJSON_AddNumberToObject(o, "rank", r);
	if (!c->started) {
		/* the pre-check refused: nothing ran anywhere */
		cJSON_AddStringToObject(o, "state", n->lost ? "lost" : n->faulty ? "unhealthy" :
		                        "not_started");
		return o;
	}
	if (!n->have_result) {
		/* lost, or out of the reach of a coordinator that named itself
		 * the one cut off (lost without being faulty) */
		cJSON_AddStringToObject(o, "state", n->lost && !n->faulty ? "unreachable" : "lost");
		return o;
	}
	cJSON_AddStringToObject(o, "state", n->idle ? "idle" :
	                        n->exit_code ? VIGIL_STATE_ERROR : VIGIL_STATE_SUCCEEDED);
	cJSON_AddNumberToObject(o, "exit_code", n->exit_code);
	if (n->signal)
		cJSON_AddStringToObject(o, "signal", sig_name(n->signal));
	if (n->error)
		cJSON_AddStringToObject(o, "error", n->error);
	cJSON_AddNumberToObject(o, "seconds", n->seconds);
	if (n->output_lost > 0)
		cJSON_AddNumberToObject(o, "output_lost_bytes", n->output_lost);
	if (n->tail)
		cJSON_AddItemToObject(o, "stderr_tail", tail_json(n));
	return o;
}

static void
first_failure_json(const struct coord *c, cJSON *r)
{
	const struct cnode *n;
	cJSON *ff;

	if (c->first_fail < 0) {
		cJSON_AddNullToObject(r, "first_failure");
		return;
	}
	n = &c->nodes[c->first_fail];
	ff = cJSON_AddObjectToObject(r, "first_failure");
	cJSON_AddStringToObject(ff, "node", coord_host(c, c->first_fail));
	cJSON_AddNumberToObject(ff, "rank", c->first_fail);
	cJSON_AddNumberToObject(ff, "exit_code", n->exit_code);
	if (n->signal)
		cJSON_AddStringToObject(ff, "signal", sig_name(n->signal));
	if (n->error)
		cJSON_AddStringToObject(ff, "error", n->error);
	if (n->tail)
		cJSON_AddItemToObject(ff, "stderr_tail", tail_json(n));
}

/* "checkpoint": which nodes' trainings were told to save, and which gave no evidence. */
static void
checkpoint_json(const struct coord *c, cJSON *r)
{
	cJSON *ck = NULL, *conf = NULL, *unconf = NULL;

	for (int k = 0; k < c->n; k++) {
		const struct cnode *n = &c->nodes[k];
		cJSON *x;

		if (!n->have_result || !n->ckpt)
			continue;
		if (!ck) {
			ck = cJSON_AddObjectToObject(r, "checkpoint");
			conf = cJSON_AddArrayToObject(ck, "confirmed");
			unconf = cJSON_AddArrayToObject(ck, "not_confirmed");
		}
		if (n->ckpt_confirmed) {
			cJSON_AddItemToArray(conf, cJSON_CreateString(coord_host(c, k)));
			continue;
		}
		x = cJSON_CreateObject();
		cJSON_AddStringToObject(x, "node", coord_host(c, k));
		cJSON_AddNumberToObject(x, "rank", k);
		cJSON_AddStringToObject(x, "why", n->ckpt_why ? n->ckpt_why : "");
		cJSON_AddItemToArray(unconf, x);
	}
}

cJSON *
coord_report(const struct coord *c, double now)
{
	cJSON *r = cJSON_CreateObject(), *nodes, *fn;
	double lost = 0;

	if (!r)
		return NULL;
	cJSON_AddStringToObject(r, "state", coord_state(c));
	cJSON_AddNumberToObject(r, "exit_code", coord_exit_code(c));
	cJSON_AddNumberToObject(r, "seconds", now - c->t0);
	cJSON_AddNumberToObject(r, "nodes_total", c->n);
	cJSON_AddNumberToObject(r, "nodes_trained", c->started ? coord_members(c) : 0);
	nodes = cJSON_AddArrayToObject(r, "nodes");
	for (int k = 0; nodes && k < c->n; k++)
		cJSON_AddItemToArray(nodes, node_json(c, k));
	if (c->end_reason[0])
		cJSON_AddStringToObject(r, "reason", c->end_reason);
	fn = cJSON_AddArrayToObject(r, "faulty_nodes");
	for (int k = 0; fn && k < c->n; k++)
		if (c->nodes[k].faulty)
			cJSON_AddItemToArray(fn, cJSON_CreateString(coord_host(c, k)));
	cJSON_AddNumberToObject(r, "restarts", c->restarts);
	cJSON_AddItemToObject(r, "attempts", cJSON_Duplicate(c->attempts, 1));
	cJSON_AddNumberToObject(r, "resumes", c->o.resumes_done);
	first_failure_json(c, r);
	checkpoint_json(c, r);
	coord_spares_json(c, r);
	/* a reader of the output that went away (`vigil run | head`): the
	 * job went on, and the report says what was not seen */
	for (int k = 0; k < c->n; k++)
		lost += c->nodes[k].output_lost;
	cJSON_AddNumberToObject(r, "output_lost_bytes", lost);
	return r;
}

char *
coord_exclude_list(const struct coord *c)
{
	size_t len = 1;
	char *list, *p;

	for (int r = 0; r < c->n; r++)
		if (c->nodes[r].faulty)
			len += strlen(coord_host(c, r)) + 1;
	list = p = malloc(len);
	if (!list)
		return NULL;
	for (int r = 0; r < c->n; r++)
		if (c->nodes[r].faulty)
			p += sprintf(p, "%s\n", coord_host(c, r));
	*p = '\0';
	return list;
}
