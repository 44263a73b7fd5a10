/*
 * report_json.c - `vigil report --json`: the summary as one object.
 */
#include "autoconf.h"

#include <math.h>
#include <stdbool.h>

#include "report/report.h"
#include "report/report_int.h"

static bool
add_num(cJSON *o, const char *key, double v)
{
	return isnan(v) ? cJSON_AddNullToObject(o, key) != NULL
	                : cJSON_AddNumberToObject(o, key, v) != NULL;
}

static bool
add_str(cJSON *o, const char *key, const char *s)
{
	return s ? cJSON_AddStringToObject(o, key, s) != NULL
	         : cJSON_AddNullToObject(o, key) != NULL;
}

static bool
add_copy(cJSON *o, const char *key, const cJSON *v)
{
	cJSON *c = cJSON_Duplicate(v, true);

	return c && cJSON_AddItemToObject(o, key, c);
}

static cJSON *
node_json(const struct rnode *n)
{
	cJSON *o = cJSON_CreateObject();

	if (!o || !add_str(o, "node", n->name) || !add_num(o, "rank", n->rank < 0 ? NAN : n->rank) ||
	    !add_str(o, "state", n->lost ? "lost" : n->have_exit ? "exited" : "unknown") ||
	    !add_num(o, "exit_code", n->have_exit ? n->exit_code : NAN) ||
	    !add_str(o, "signal", n->signal) || !add_str(o, "error", n->error) ||
	    !add_num(o, "faults", (double)n->faults) ||
	    !add_num(o, "straggler_alerts", (double)n->stragglers) ||
	    !cJSON_AddBoolToObject(o, "slow", n->stragglers > 0) ||
	    !add_num(o, "median_e2e_ms", n->median)) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static cJSON *
perf_json(const struct report *r)
{
	cJSON *p = cJSON_CreateObject(), *e2e, *ratio, *slow;

	if (!p || !add_num(p, "summaries", (double)r->nsamples) ||
	    !add_num(p, "iterations", r->iterations))
		goto fail;
	e2e = cJSON_AddObjectToObject(p, "e2e_ms");
	ratio = cJSON_AddObjectToObject(p, "ratio");
	if (!e2e || !ratio || !add_num(e2e, "min", r->e2e_min) || !add_num(e2e, "median", r->e2e_median) ||
	    !add_num(e2e, "max", r->e2e_max) || !add_num(p, "hw_mean_ms", r->hw_mean) ||
	    !add_num(ratio, "min", r->r_min) || !add_num(ratio, "mean", r->r_mean) ||
	    !add_num(ratio, "max", r->r_max))
		goto fail;
	if (r->slowest < 0) {
		if (!cJSON_AddNullToObject(p, "slowest_node"))
			goto fail;
		return p;
	}
	slow = cJSON_AddObjectToObject(p, "slowest_node");
	if (!slow || !add_str(slow, "node", r->nodes[r->slowest].name))
		goto fail;
	if (r->node_values) {
		const struct rnode *n = &r->nodes[r->slowest];

		if (!add_num(slow, "median_e2e_ms", n->median) ||
		    !add_num(slow, "nodes_median_e2e_ms", r->nodes_median) ||
		    !add_num(slow, "above_median_pct", r->nodes_median > 0 ?
		             (n->median / r->nodes_median - 1) * 100 : NAN))
			goto fail;
	} else if (!add_num(slow, "slowest_in", (double)r->nodes[r->slowest].slowest_count)) {
		goto fail;
	}
	return p;
fail:
	cJSON_Delete(p);
	return NULL;
}

/* KEY: [line numbers] */
static bool
add_lines(cJSON *o, const char *key, const size_t *at, size_t n)
{
	cJSON *list = cJSON_AddArrayToObject(o, key);

	for (size_t i = 0; list && i < n; i++) {
		cJSON *x = cJSON_CreateNumber((double)at[i]);

		if (!x || !cJSON_AddItemToArray(list, x))
			return false;
	}
	return list != NULL;
}

/* SECS[0..COST_N) by cause (each, or the shares of TOTAL when TOTAL > 0). */
static cJSON *
causes_json(const double *secs, double total, bool gap)
{
	cJSON *o = cJSON_CreateObject();

	for (int c = 0; o && c < COST_N; c++) {
		if (c == COST_GAP && !gap)
			continue;
		if (!add_num(o, cost_names[c], total > 0 ? secs[c] / total : secs[c])) {
			cJSON_Delete(o);
			return NULL;
		}
	}
	return o;
}

static cJSON *
attempt_json(const struct cost_attempt *a)
{
	cJSON *o = cJSON_CreateObject(), *split = causes_json(a->secs, 0, false);

	if (!o || !split || !cJSON_AddItemToObject(o, "split_s", split)) {
		cJSON_Delete(split);
		goto fail;
	}
	if (!add_str(o, "state", a->state) ||
	    !add_num(o, "started", a->nsegs ? a->segs[0].from : a->m.start) ||
	    !add_num(o, "agent_started", a->m.start) ||
	    !add_num(o, "allocation_started", a->m.alloc) ||
	    !add_num(o, "ended", a->m.end) || !add_num(o, "seconds", a->wall) ||
	    !add_num(o, "gap_before_s", a->secs[COST_GAP]) ||
	    !add_num(o, "requeue_delay_s", a->requeue_s) || !add_num(o, "queue_wait_s", a->queue_s) ||
	    !add_num(o, "iterations", a->m.iterations) ||
	    !add_num(o, "redone_iterations", a->redone_iters) ||
	    !cJSON_AddBoolToObject(o, "checkpoint_confirmed", a->m.saved))
		goto fail;
	return o;
fail:
	cJSON_Delete(o);
	return NULL;
}

/* The chain of attempts (report_cost.h); JSON null without one. */
static cJSON *
chain_json(const struct report *r)
{
	const struct cost_chain *c = &r->chain_sum;
	cJSON *o, *atts, *x;

	if (r->natts == 0)
		return cJSON_CreateNull();
	o = cJSON_CreateObject();
	if (!o || !add_str(o, "key", r->chain) || !(atts = cJSON_AddArrayToObject(o, "attempts")))
		goto fail;
	for (size_t i = 0; i < r->natts; i++)
		if (!(x = attempt_json(&r->atts[i])) || !cJSON_AddItemToArray(atts, x))
			goto fail;
	if (!add_num(o, "elapsed_s", c->elapsed) ||
	    !add_num(o, "productive_s", c->secs[COST_PRODUCTIVE]) || !add_num(o, "ettr", c->ettr) ||
	    !add_num(o, "requeue_delay_s", c->requeue_s) || !add_num(o, "queue_wait_s", c->queue_s) ||
	    !(x = causes_json(c->secs, 0, true)) || !cJSON_AddItemToObject(o, "seconds", x))
		goto fail;
	if (c->elapsed > 0 &&
	    (!(x = causes_json(c->secs, c->elapsed, true)) || !cJSON_AddItemToObject(o, "shares", x)))
		goto fail;
	return o;
fail:
	cJSON_Delete(o);
	return NULL;
}

cJSON *
report_json(const struct report *r)
{
	cJSON *o = cJSON_CreateObject(), *job, *nodes, *perf = NULL, *chain;
	double t0 = report_parse_time(r->first_time), t1 = report_parse_time(r->last_time);

	if (!o || !add_str(o, "file", r->path) || !add_num(o, "events", (double)r->events) ||
	    !add_num(o, "malformed_lines", (double)r->malformed) ||
	    !add_lines(o, "malformed_at", r->mal_at, r->nmal_at) ||
	    !add_num(o, "torn_lines", (double)r->torn) ||
	    !add_lines(o, "torn_at", r->torn_at, r->ntorn_at) ||
	    !add_num(o, "runs", cJSON_GetArraySize(r->earlier) + 1) ||
	    !add_copy(o, "earlier_runs", r->earlier))
		goto fail;
	if (r->ended) {
		job = cJSON_AddObjectToObject(o, "job");
		if (!job || !add_str(job, "state", r->state) ||
		    !add_num(job, "exit_code", r->exit_code) || !add_str(job, "reason", r->reason) ||
		    !add_str(job, "ended", r->end_time))
			goto fail;
	} else if (!cJSON_AddNullToObject(o, "job")) {
		goto fail;
	}
	if (!add_str(o, "first_event", r->first_time) || !add_str(o, "last_event", r->last_time) ||
	    !add_num(o, "seconds", !isnan(t0) && !isnan(t1) && t1 >= t0 ? t1 - t0 : NAN) ||
	    !add_str(o, "precheck", r->verdict) ||
	    !add_copy(o, "checks_failed", r->checks_failed))
		goto fail;
	nodes = cJSON_AddArrayToObject(o, "nodes");
	if (!nodes)
		goto fail;
	for (size_t i = 0; i < r->nnodes; i++) {
		cJSON *n = node_json(&r->nodes[i]);

		if (!n || !cJSON_AddItemToArray(nodes, n))
			goto fail;
	}
	if (!add_copy(o, "faults", r->faults) || !add_copy(o, "lost", r->lost) ||
	    !add_copy(o, "checkpoints", r->checkpoints) || !add_copy(o, "restarts", r->restarts) ||
	    !add_copy(o, "stops", r->stops))
		goto fail;
	if (r->nsamples) {
		perf = perf_json(r);
		if (!perf || !cJSON_AddItemToObject(o, "performance", perf)) {
			cJSON_Delete(perf);
			goto fail;
		}
	} else if (!cJSON_AddNullToObject(o, "performance")) {
		goto fail;
	}
	if (!add_copy(o, "alerts", r->alerts))
		goto fail;
	if (r->usage ? !add_copy(o, "usage", r->usage) : !cJSON_AddNullToObject(o, "usage"))
		goto fail;
	chain = chain_json(r);
	if (!chain || !cJSON_AddItemToObject(o, "chain", chain)) {
		cJSON_Delete(chain);
		goto fail;
	}
	return o;
fail:
	cJSON_Delete(o);
	return NULL;
}

