/*
 * report.c - `vigil report`: reading a job's event log and deriving the
 * figures the summary, the JSON and the plot present (report_text.c,
 * report_json.c, report_plot.c).
 */
#include "autoconf.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vigil.h"
#include "report/report.h"
#include "report/report_int.h"

/* ---- small helpers --------------------------------------------------- */

static bool
sane(double v)
{
	return v > -REPORT_NUM_MAX && v < REPORT_NUM_MAX;
}

/* V as an int, or DFLT when it is none or out of range. */
static int
to_int(double v, int dflt)
{
	return v >= INT_MIN && v <= INT_MAX ? (int)v : dflt;
}

/* Replace *DST with a copy of SRC (NULL: nothing).  false on ENOMEM. */
static bool
set_str(char **dst, const char *src)
{
	char *c = NULL;

	if (src && !(c = strdup(src)))
		return false;
	free(*dst);
	*dst = c;
	return true;
}

static bool
grow(void **arr, size_t *cap, size_t need, size_t size)
{
	void *a;
	size_t ncap;

	if (need <= *cap)
		return true;
	ncap = *cap ? *cap * 2 : 16;
	while (ncap < need)
		ncap *= 2;
	a = realloc(*arr, ncap * size);
	if (!a)
		return false;
	*arr = a;
	*cap = ncap;
	return true;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Median of V[0..N) (reordered); NAN when empty. */
static double
median(double *v, size_t n)
{
	if (n == 0)
		return NAN;
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int
cmp_ms(const void *a, const void *b)
{
	return cmp_double(&((const struct point *)a)->ms, &((const struct point *)b)->ms);
}

/*
 * The median of P[0..N)'s values, each counted as often as its weight
 * says (P is reordered); with every weight 1, median()'s: the middle
 * value, or the mean of the two middle ones.  NAN when empty.
 */
static double
median_weighted(struct point *p, size_t n)
{
	double total = 0, seen = 0;

	if (n == 0)
		return NAN;
	qsort(p, n, sizeof(*p), cmp_ms);
	for (size_t i = 0; i < n; i++)
		total += p[i].w;
	for (size_t i = 0; i + 1 < n; i++) {
		seen += p[i].w;
		if (seen == total / 2)
			return (p[i].ms + p[i + 1].ms) / 2;
		if (seen > total / 2)
			return p[i].ms;
	}
	return p[n - 1].ms;
}

const char *
report_fmt_ms(char *buf, size_t len, double ms)
{
	snprintf(buf, len, "%.3f ms", ms);
	return buf;
}

/* "2026-11-20T23:35:08.123Z" to seconds since the epoch; NAN if not that. */
double
report_parse_time(const char *s)
{
	struct tm tm = { 0 };
	double sec;
	int n = 0;

	if (!s || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%lf%n", &tm.tm_year, &tm.tm_mon,
	                 &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &sec, &n) != 6 ||
	    s[n] != 'Z' || sec < 0 || sec >= 61)
		return NAN;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	tm.tm_sec = 0;
	return (double)timegm(&tm) + sec;
}

/* ---- reading the log ------------------------------------------------- */

static void
clear_run(struct report *r)
{
	for (size_t i = 0; i < r->nnodes; i++) {
		struct rnode *n = &r->nodes[i];

		free(n->name);
		free(n->signal);
		free(n->error);
		free(n->lost_msg);
		free(n->pts);
	}
	free(r->nodes);
	free(r->samples);
	free(r->first_time);
	free(r->last_time);
	free(r->state);
	free(r->reason);
	free(r->end_time);
	free(r->verdict);
	cJSON_Delete(r->checks_failed);
	cJSON_Delete(r->faults);
	cJSON_Delete(r->lost);
	cJSON_Delete(r->checkpoints);
	cJSON_Delete(r->restarts);
	cJSON_Delete(r->stops);
	cJSON_Delete(r->alerts);
	cJSON_Delete(r->usage);
	free(r->chain_key);
}

/* A fresh last run.  false on ENOMEM. */
static bool
new_run(struct report *r)
{
	clear_run(r);
	r->nodes = NULL;
	r->nnodes = r->nodes_cap = r->hint = 0;
	r->samples = NULL;
	r->nsamples = r->samples_cap = 0;
	r->node_values = r->series = false;
	r->series_last = NAN;
	r->usage = NULL;
	r->chain_key = NULL;
	r->nfaults_at = 0;
	r->unconfirmed = false;
	r->marks = (struct cost_marks){
		.alloc = NAN, .eligible = NAN, .start = NAN, .verdict = NAN, .staged = NAN,
		.it_first_end = NAN, .it_first_ms = NAN, .it_last_end = NAN, .fault = NAN, .ckpt = NAN,
		.exit_last = NAN, .stop = NAN, .end = NAN, .iterations = NAN,
		.median_ms = NAN, .max_ms = NAN,
	};
	r->first_time = r->last_time = r->state = r->reason = r->end_time = r->verdict = NULL;
	r->ended = false;
	r->exit_code = NAN;
	r->checks_failed = cJSON_CreateArray();
	r->faults = cJSON_CreateArray();
	r->lost = cJSON_CreateArray();
	r->checkpoints = cJSON_CreateArray();
	r->restarts = cJSON_CreateArray();
	r->stops = cJSON_CreateArray();
	r->alerts = cJSON_CreateArray();
	return r->checks_failed && r->faults && r->lost && r->checkpoints && r->restarts &&
	       r->stops && r->alerts;
}

/* The node named NAME (created when new); RANK >= 0 records its rank. */
static struct rnode *
node_get(struct report *r, const char *name, int rank)
{
	struct rnode *n = NULL;

	/* Summaries list the nodes in the same order every time: try the
	 * one after the last found first. */
	if (r->hint < r->nnodes && strcmp(r->nodes[r->hint].name, name) == 0)
		n = &r->nodes[r->hint];
	for (size_t i = 0; !n && i < r->nnodes; i++)
		if (strcmp(r->nodes[i].name, name) == 0)
			n = &r->nodes[i];
	if (!n) {
		if (!grow((void **)&r->nodes, &r->nodes_cap, r->nnodes + 1, sizeof(*r->nodes)))
			return NULL;
		n = &r->nodes[r->nnodes];
		memset(n, 0, sizeof(*n));
		n->rank = -1;
		n->median = NAN;
		n->name = strdup(name);
		if (!n->name)
			return NULL;
		r->nnodes++;
	}
	if (rank >= 0)
		n->rank = rank;
	r->hint = (size_t)(n - r->nodes) + 1;
	return n;
}

/* Append {time, node?, rank?, severity?, message} to LIST.  false on ENOMEM. */
static bool
add_item(cJSON *list, const char *time, const char *node, int rank, const char *severity,
         const char *message)
{
	cJSON *o = cJSON_CreateObject();

	if (!o || !cJSON_AddStringToObject(o, "time", time) ||
	    (node && !cJSON_AddStringToObject(o, "node", node)) ||
	    (node && rank >= 0 && !cJSON_AddNumberToObject(o, "rank", rank)) ||
	    (severity && !cJSON_AddStringToObject(o, "severity", severity)) ||
	    !cJSON_AddStringToObject(o, "message", message)) {
		cJSON_Delete(o);
		return false;
	}
	cJSON_AddItemToArray(list, o);
	return true;
}

static bool
take_perf(struct report *r, const cJSON *d)
{
	struct sample *s;
	const cJSON *ne, *v;
	const char *slow;

	if (!grow((void **)&r->samples, &r->samples_cap, r->nsamples + 1, sizeof(*s)))
		return false;
	s = &r->samples[r->nsamples];
	s->iter = jnum(d, "iter");
	if (isnan(s->iter))
		return true;  /* a summary of no iteration says nothing */
	r->nsamples++;
	s->e2e_min = jnum(d, "e2e_min");
	s->e2e_mean = jnum(d, "e2e_mean");
	s->e2e_max = jnum(d, "e2e_max");
	s->hw_mean = jnum(d, "hw_mean");
	s->r_min = jnum(d, "r_min");
	s->r_mean = jnum(d, "r_mean");
	s->r_max = jnum(d, "r_max");
	slow = jstr(d, "e2e_max_node");
	if (slow) {
		struct rnode *n = node_get(r, slow, -1);

		if (!n)
			return false;
		n->slowest_count++;
	}
	ne = cJSON_GetObjectItemCaseSensitive(d, "node_e2e");
	if (!cJSON_IsObject(ne) || r->series)
		ne = NULL;  /* the nodes' series, when they came, hold every iteration */
	cJSON_ArrayForEach(v, ne) {
		struct rnode *n;

		if (!cJSON_IsNumber(v) || !sane(v->valuedouble) || !v->string)
			continue;
		n = node_get(r, v->string, -1);
		if (!n || !grow((void **)&n->pts, &n->ptscap, n->npts + 1, sizeof(*n->pts)))
			return false;
		n->pts[n->npts].iter = s->iter;
		n->pts[n->npts].ms = v->valuedouble;
		n->pts[n->npts].w = 1;
		n->npts++;
		r->node_values = true;
	}
	return true;
}

/*
 * A node's "series" (the end of the job): its points [first, last, ms]
 * replace what the summaries said of every node, the series being the
 * whole of which the summaries were samples.  false on ENOMEM.
 */
static bool
take_series(struct report *r, const char *node, int rank, const cJSON *d)
{
	const cJSON *pts = cJSON_GetObjectItemCaseSensitive(d, "points"), *p;
	struct rnode *n;

	if (!cJSON_IsArray(pts))
		return true;
	if (!r->series) {
		for (size_t i = 0; i < r->nnodes; i++)
			r->nodes[i].npts = 0;
		r->series = true;
	}
	n = node_get(r, node, rank);
	if (!n)
		return false;
	n->npts = 0;  /* a second series of a node replaces the first */
	cJSON_ArrayForEach(p, pts) {
		double first = cJSON_IsArray(p) && cJSON_GetArraySize(p) == 3 ?
		               jnum_at(p, 0) : NAN;
		double last = jnum_at(p, 1), ms = jnum_at(p, 2);

		if (!(first >= 0 && last >= first && ms > 0))
			continue;  /* damage: not a point */
		if (!grow((void **)&n->pts, &n->ptscap, n->npts + 1, sizeof(*n->pts)))
			return false;
		n->pts[n->npts].iter = (first + last) / 2;
		n->pts[n->npts].ms = ms;
		n->pts[n->npts].w = last - first + 1;
		n->npts++;
		r->node_values = true;
		if (isnan(r->series_last) || last > r->series_last)
			r->series_last = last;
	}
	return true;
}

static bool
take_alert(struct report *r, const cJSON *e, const cJSON *d, const char *time)
{
	const char *kind = jstr(d, "kind"), *node = jstr(d, "node");
	double iter = jnum(d, "iter"), value = jnum(d, "value"), rank = jnum(d, "rank");
	const char *msg = jstr(d, "message");
	cJSON *o = cJSON_CreateObject();

	if (!node)
		node = jstr(e, "node");
	if (isnan(rank))
		rank = jnum(e, "rank");
	if (!msg)
		msg = jstr(e, "message");
	if (!o)
		return false;
	cJSON_AddItemToArray(r->alerts, o);
	if (!cJSON_AddStringToObject(o, "time", time) ||
	    !cJSON_AddStringToObject(o, "kind", kind ? kind : "?") ||
	    !(isnan(iter) ? cJSON_AddNullToObject(o, "iter") : cJSON_AddNumberToObject(o, "iter", iter)) ||
	    !cJSON_AddStringToObject(o, "node", node ? node : "?") ||
	    (!isnan(rank) && !cJSON_AddNumberToObject(o, "rank", rank)) ||
	    !(isnan(value) ? cJSON_AddNullToObject(o, "value") : cJSON_AddNumberToObject(o, "value", value)) ||
	    !cJSON_AddStringToObject(o, "message", msg ? msg : ""))
		return false;
	if (node && kind && strcmp(kind, "straggler") == 0) {
		struct rnode *n = node_get(r, node, rank >= 0 ? to_int(rank, -1) : -1);

		if (!n)
			return false;
		n->stragglers++;
	}
	return true;
}

static bool
take_exit(struct report *r, const char *node, int rank, const cJSON *d)
{
	struct rnode *n = node_get(r, node, rank);
	const cJSON *sig = cJSON_GetObjectItemCaseSensitive(d, "signal");
	char buf[32];
	double code = jnum(d, "exit_code");

	if (!n)
		return false;
	n->have_exit = true;
	n->exit_code = to_int(code, -1);
	if (cJSON_IsNumber(sig))
		snprintf(buf, sizeof(buf), "signal %d", sig->valueint);
	return set_str(&n->signal, cJSON_IsString(sig) ? sig->valuestring :
	                           cJSON_IsNumber(sig) ? buf : NULL) &&
	       set_str(&n->error, jstr(d, "error"));
}

/* ---- the chain of attempts (report_cost.h) ---------------------------- */

/* The "account" event: the iterations' sums and dates, the chain's key. */
static bool
take_account(struct report *r, const cJSON *d)
{
	struct cost_marks *m = &r->marks;
	double started = jnum(d, "started");

	m->alloc = jnum(d, "allocation_started");
	m->eligible = jnum(d, "allocation_eligible");
	m->iterations = jnum(d, "iterations");
	m->median_ms = jnum(d, "median_ms");
	m->max_ms = jnum(d, "max_ms");
	m->it_first_end = jnum(d, "first_iteration_end");
	m->it_first_ms = jnum(d, "first_iteration_ms");
	m->it_last_end = jnum(d, "last_iteration_end");
	if (!isnan(started) && (isnan(m->start) || started < m->start))
		m->start = started;  /* the agent's start, before its first event */
	return set_str(&r->chain_key, jstr(d, "chain"));
}

/* The run's dates as it ends (STATE), split, and joined to the chain when
 * it has the chain's key (else it starts a chain of its own).  false on ENOMEM. */
static bool
end_attempt(struct report *r, const char *state)
{
	struct cost_marks *m = &r->marks;
	struct cost_attempt *a;

	if (isnan(m->start) || isnan(m->end))
		return true;  /* no dated event: nothing to account */
	/* the fault that ended the iterations: the first one after the last */
	m->fault = NAN;
	for (size_t i = 0; i < r->nfaults_at; i++)
		if (isnan(m->it_last_end) || r->faults_at[i] >= m->it_last_end) {
			m->fault = r->faults_at[i];
			break;
		}
	/* a training that ran to its end leaves nothing to redo either */
	m->saved = (!isnan(m->ckpt) && !r->unconfirmed) ||
	           (state && strcmp(state, VIGIL_STATE_SUCCEEDED) == 0);
	if (!r->chain_key || !r->chain || strcmp(r->chain_key, r->chain) != 0) {
		r->natts = 0;
		if (!set_str(&r->chain, r->chain_key))
			return false;
	}
	if (!grow((void **)&r->atts, &r->atts_cap, r->natts + 1, sizeof(*r->atts)))
		return false;
	a = &r->atts[r->natts++];
	memset(a, 0, sizeof(*a));
	a->m = *m;
	snprintf(a->state, sizeof(a->state), "%s", state ? state : "?");
	cost_split(a);
	return true;
}

/* The dates of EVENT (KIND) at T that the split of the run needs. */
static void
mark_event(struct report *r, const char *kind, double t, const cJSON *d)
{
	struct cost_marks *m = &r->marks;
	bool fault = strcmp(kind, VIGIL_EVENT_FAULT) == 0 || strcmp(kind, VIGIL_EVENT_HANG) == 0 ||
	             strcmp(kind, VIGIL_EVENT_NODE_LOST) == 0;

	if (isnan(t))
		return;
	if (isnan(m->start) || t < m->start)
		m->start = t;
	if (strcmp(kind, VIGIL_EVENT_VERDICT) == 0 && isnan(m->verdict))
		m->verdict = t;
	else if (strcmp(kind, VIGIL_EVENT_STAGE) == 0)
		m->staged = t;
	else if (strcmp(kind, VIGIL_EVENT_STOP) == 0 && isnan(m->stop))
		m->stop = t;
	else if (strcmp(kind, VIGIL_EVENT_CHECKPOINT) == 0) {
		const cJSON *c = d ? cJSON_GetObjectItemCaseSensitive(d, "confirmed") : NULL;

		if (cJSON_IsFalse(c))
			r->unconfirmed = true;  /* the end's word on a save, not a signal */
		else if (isnan(m->ckpt))
			m->ckpt = t;
	} else if (strcmp(kind, VIGIL_EVENT_EXIT) == 0) {
		double code = d ? jnum(d, "exit_code") : NAN;

		m->exit_last = t;
		fault = !isnan(code) && code != 0;  /* a training that failed */
	} else if (strcmp(kind, VIGIL_EVENT_JOB) == 0) {
		m->end = t;
	}
	if (fault && r->nfaults_at < COST_FAULTS)
		r->faults_at[r->nfaults_at++] = t;
}

/* One event object.  false on ENOMEM. */
static bool
take_event(struct report *r, const cJSON *e)
{
	const char *kind = jstr(e, "kind");
	const char *time = jstr(e, "time"), *node = jstr(e, "node");
	const char *msg = jstr(e, "message"), *sev = jstr(e, "severity");
	double rk = jnum(e, "rank");
	int rank = rk >= 0 ? to_int(rk, -1) : -1;
	const cJSON *d = cJSON_GetObjectItemCaseSensitive(e, "details");

	if (!cJSON_IsObject(d))
		d = NULL;
	if (!time)
		time = "";
	if (!msg)
		msg = "";
	if (r->ended) {
		/* the previous run is over: keep its outcome, start afresh */
		cJSON *o = cJSON_CreateObject();

		if (!o)
			return false;
		cJSON_AddItemToArray(r->earlier, o);
		if (!cJSON_AddStringToObject(o, "state", r->state ? r->state : "?") ||
		    !(isnan(r->exit_code) ? cJSON_AddNullToObject(o, "exit_code")
		                          : cJSON_AddNumberToObject(o, "exit_code", r->exit_code)) ||
		    !cJSON_AddStringToObject(o, "ended", r->end_time ? r->end_time : "") ||
		    !new_run(r))
			return false;
	}
	if (*time && ((!r->first_time && !set_str(&r->first_time, time)) ||
	              !set_str(&r->last_time, time)))
		return false;
	mark_event(r, kind, report_parse_time(time), d);
	if (strcmp(kind, VIGIL_EVENT_ACCOUNT) == 0)
		return !d || take_account(r, d);

	if (strcmp(kind, VIGIL_EVENT_JOB) == 0) {
		const char *state = jstr(d, "state");

		r->ended = true;
		r->exit_code = jnum(d, "exit_code");
		return set_str(&r->state, state ? state : "?") && set_str(&r->reason, msg) &&
		       set_str(&r->end_time, time) && end_attempt(r, state);
	}
	if (strcmp(kind, VIGIL_EVENT_PERF) == 0)
		return !d || take_perf(r, d);
	if (strcmp(kind, VIGIL_EVENT_USAGE) == 0 && d) {
		/* each carries the ranges so far: the last one says it all */
		cJSON *u = cJSON_Duplicate(d, true);

		if (!u)
			return false;
		cJSON_Delete(r->usage);
		r->usage = u;
		return true;
	}
	if (strcmp(kind, VIGIL_EVENT_ALERT) == 0)
		return take_alert(r, e, d, time);
	if (strcmp(kind, VIGIL_EVENT_CHECKPOINT) == 0)
		return add_item(r->checkpoints, time, NULL, -1, NULL, msg);
	if (strcmp(kind, VIGIL_EVENT_RESTART) == 0)
		return add_item(r->restarts, time, NULL, -1, NULL, msg);
	if (strcmp(kind, VIGIL_EVENT_STOP) == 0)
		return add_item(r->stops, time, NULL, -1, NULL, msg);
	if (strcmp(kind, VIGIL_EVENT_VERDICT) == 0)
		return set_str(&r->verdict, jstr(d, "verdict") ? jstr(d, "verdict") : "?");
	/* the rest is about one node */
	if (!node)
		return true;
	if (strcmp(kind, VIGIL_EVENT_EXIT) == 0)
		return take_exit(r, node, rank, d);
	if (strcmp(kind, VIGIL_EVENT_SERIES) == 0)
		return !d || take_series(r, node, rank, d);
	if (strcmp(kind, VIGIL_EVENT_NODE_LOST) == 0) {
		struct rnode *n = node_get(r, node, rank);

		if (!n)
			return false;
		n->lost = true;
		return set_str(&n->lost_msg, msg) && add_item(r->lost, time, node, rank, NULL, msg);
	}
	if (strcmp(kind, VIGIL_EVENT_FAULT) == 0) {
		struct rnode *n = node_get(r, node, rank);

		if (!n)
			return false;
		n->faults++;
		return add_item(r->faults, time, node, rank, sev ? sev : "?", msg);
	}
	if (strcmp(kind, VIGIL_EVENT_CHECK) == 0 || strcmp(kind, VIGIL_EVENT_CONSISTENCY) == 0) {
		const char *v = jstr(d, "verdict");

		if (!node_get(r, node, rank))
			return false;
		if (v && strcmp(v, "fail") == 0)
			return add_item(r->checks_failed, time, node, rank, NULL, msg);
	}
	return true;  /* unknown kinds: a newer vigil's, nothing to say */
}

/* Is LINE[0..LEN) blank? */
static bool
blank(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n')
			return false;
	return true;
}

static int
node_order(const void *a, const void *b)
{
	const struct rnode *x = a, *y = b;

	/* ranked nodes in rank order, then the others by name */
	if ((x->rank < 0) != (y->rank < 0))
		return x->rank < 0 ? 1 : -1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return strcmp(x->name, y->name);
}

int
report_cmp_point(const void *a, const void *b)
{
	return cmp_double(&((const struct point *)a)->iter, &((const struct point *)b)->iter);
}

/* Figures derived from the last run.  false on ENOMEM. */
static bool
derive(struct report *r)
{
	double *v = NULL, *meds = NULL, sum_hw = 0, sum_r = 0;
	struct point *all = NULL;
	size_t nv = 0, n_hw = 0, n_r = 0, nmeds = 0, total = 0, nall = 0;
	bool ok = false;

	r->iterations = r->e2e_min = r->e2e_median = r->e2e_max = NAN;
	r->hw_mean = r->r_min = r->r_mean = r->r_max = r->nodes_median = NAN;
	r->slowest = -1;
	if (r->nnodes > 1)
		qsort(r->nodes, r->nnodes, sizeof(*r->nodes), node_order);
	for (size_t i = 0; i < r->nnodes; i++)
		total += r->nodes[i].npts;
	v = malloc(r->nsamples * sizeof(*v) + 1);
	all = malloc(total * sizeof(*all) + 1);
	meds = malloc(r->nnodes * sizeof(*meds) + 1);
	if (!v || !all || !meds)
		goto out;
	for (size_t i = 0; i < r->nsamples; i++) {
		const struct sample *s = &r->samples[i];

		if (isnan(r->iterations) || s->iter > r->iterations)
			r->iterations = s->iter;
		if (!isnan(s->e2e_min) && (isnan(r->e2e_min) || s->e2e_min < r->e2e_min))
			r->e2e_min = s->e2e_min;
		if (!isnan(s->e2e_max) && (isnan(r->e2e_max) || s->e2e_max > r->e2e_max))
			r->e2e_max = s->e2e_max;
		if (!isnan(s->r_min) && (isnan(r->r_min) || s->r_min < r->r_min))
			r->r_min = s->r_min;
		if (!isnan(s->r_max) && (isnan(r->r_max) || s->r_max > r->r_max))
			r->r_max = s->r_max;
		if (!isnan(s->hw_mean)) {
			sum_hw += s->hw_mean;
			n_hw++;
		}
		if (!isnan(s->r_mean)) {
			sum_r += s->r_mean;
			n_r++;
			/* a mean lies within the extremes: harmless when they
			 * are there, a range when they are not */
			if (isnan(r->r_min) || s->r_mean < r->r_min)
				r->r_min = s->r_mean;
			if (isnan(r->r_max) || s->r_mean > r->r_max)
				r->r_max = s->r_mean;
		}
		if (!r->node_values && !isnan(s->e2e_mean)) {
			v[nv++] = s->e2e_mean;
			/* a log with means but no extremes still gets a range */
			if (isnan(r->e2e_min) || s->e2e_mean < r->e2e_min)
				r->e2e_min = s->e2e_mean;
			if (isnan(r->e2e_max) || s->e2e_mean > r->e2e_max)
				r->e2e_max = s->e2e_mean;
		}
	}
	if (n_hw)
		r->hw_mean = sum_hw / (double)n_hw;
	if (n_r)
		r->r_mean = sum_r / (double)n_r;
	if (r->series && (isnan(r->iterations) || r->series_last > r->iterations))
		r->iterations = r->series_last;
	for (size_t i = 0; i < r->nnodes; i++) {
		struct rnode *n = &r->nodes[i];
		struct point *mine = all + nall;

		if (!n->npts)
			continue;
		qsort(n->pts, n->npts, sizeof(*n->pts), report_cmp_point);
		memcpy(mine, n->pts, n->npts * sizeof(*mine));
		for (size_t k = 0; k < n->npts; k++) {
			if (isnan(r->e2e_min) || mine[k].ms < r->e2e_min)
				r->e2e_min = mine[k].ms;
			if (isnan(r->e2e_max) || mine[k].ms > r->e2e_max)
				r->e2e_max = mine[k].ms;
		}
		nall += n->npts;
		n->median = median_weighted(mine, n->npts);  /* sorts its own part only */
		meds[nmeds++] = n->median;
		if (r->slowest < 0 || n->median > r->nodes[r->slowest].median)
			r->slowest = (int)i;
	}
	/* every node's points, or without them the summaries' means */
	r->e2e_median = nall ? median_weighted(all, nall) : median(v, nv);
	r->nodes_median = median(meds, nmeds);
	if (nmeds < 2)
		r->slowest = -1;  /* slowest of one says nothing */
	if (!r->node_values) {
		for (size_t i = 0; i < r->nnodes; i++)
			if (r->nodes[i].slowest_count &&
			    (r->slowest < 0 || r->nodes[i].slowest_count > r->nodes[r->slowest].slowest_count))
				r->slowest = (int)i;
	}
	/* a run still going (or whose agent died): accounted up to its last event */
	if (!r->ended && r->last_time) {
		r->marks.end = report_parse_time(r->last_time);
		if (!end_attempt(r, "running"))
			goto out;
	}
	cost_chain(r->atts, r->natts, &r->chain_sum);
	ok = true;
out:
	free(v);
	free(all);
	free(meds);
	return ok;
}

/* LINE[0..LEN) as one event object, or NULL. */
static cJSON *
parse_event(const char *line, size_t len)
{
	const char *end = NULL;
	cJSON *e = cJSON_ParseWithLengthOpts(line, len, &end, false);

	if (e && cJSON_IsObject(e) && jstr(e, "kind") && blank(end, (size_t)(line + len - end)))
		return e;
	cJSON_Delete(e);
	return NULL;
}

static void
note_line(size_t *at, size_t *nat, size_t *count, size_t lineno)
{
	if (*nat < MALFORMED_KEEP)
		at[(*nat)++] = lineno;
	(*count)++;
}

/* What vigil's events start with (events_make() adds "time" first). */
#define EVENT_START "{\"time\":"
/* Places in one line where a glued event may start that are tried. */
#define TORN_TRIES 16

/*
 * The run a torn "job" event ended: its state and status are lost with
 * its second half, but that a run ended there is not.
 */
static bool
end_torn_run(struct report *r, const char *half, size_t len)
{
	const char *t = half + strlen(EVENT_START) + 1, *q;
	char time[40] = "";

	if (r->ended || !memmem(half, len, "\"kind\":\"job\"", 12))
		return true;
	if (len > strlen(EVENT_START) + 1 && half[strlen(EVENT_START)] == '"' &&
	    (q = memchr(t, '"', len - (size_t)(t - half))) && (size_t)(q - t) < sizeof(time)) {
		memcpy(time, t, (size_t)(q - t));
		time[q - t] = '\0';
	}
	r->ended = true;
	r->exit_code = NAN;
	r->marks.end = report_parse_time(time);
	return end_attempt(r, "?") && set_str(&r->state, "?") &&
	       set_str(&r->reason, "unknown: the job's last event was torn") &&
	       set_str(&r->end_time, time);
}

/*
 * A line that is no event may be a torn one: a full disk leaves half an
 * event, and the next event is then written on after it, as in
 * {"time":"...","node":{"time":"...",...,"kind":"job",...}.  The half is
 * skipped; the event glued to it is read.  Returns 1 when an event was
 * recovered, 0 when none was, -ENOMEM.
 */
static int
take_torn(struct report *r, const char *line, size_t len, size_t lineno)
{
	const char *p = line + 1;
	int tries = 0;

	while (tries++ < TORN_TRIES &&
	       (p = memmem(p, len - (size_t)(p - line), EVENT_START, strlen(EVENT_START)))) {
		cJSON *e = parse_event(p, len - (size_t)(p - line));
		bool ok;

		if (!e) {
			p++;
			continue;
		}
		note_line(r->torn_at, &r->ntorn_at, &r->torn, lineno);
		r->events++;
		ok = end_torn_run(r, line, (size_t)(p - line)) && take_event(r, e);
		cJSON_Delete(e);
		return ok ? 1 : -ENOMEM;
	}
	return 0;
}

/* Every line of FP into R.  0, -EIO or -ENOMEM. */
static int
read_log(struct report *r, FILE *fp)
{
	char *line = NULL;
	size_t cap = 0, lineno = 0;
	ssize_t len;
	int rc = 0;

	while ((len = getline(&line, &cap, fp)) >= 0) {
		cJSON *e;

		lineno++;
		if (blank(line, (size_t)len))
			continue;
		e = parse_event(line, (size_t)len);
		if (!e) {
			note_line(r->mal_at, &r->nmal_at, &r->malformed, lineno);
			rc = take_torn(r, line, (size_t)len, lineno);
			if (rc < 0)
				goto out;
			rc = 0;
			continue;
		}
		r->events++;
		if (!take_event(r, e)) {
			cJSON_Delete(e);
			rc = -ENOMEM;
			goto out;
		}
		cJSON_Delete(e);
	}
	if (ferror(fp))
		rc = -EIO;
	else if (!derive(r))
		rc = -ENOMEM;
out:
	free(line);
	return rc;
}

int
report_load_stream(FILE *fp, const char *name, struct report **out)
{
	struct report *r;
	int rc;

	*out = NULL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->path = strdup(name);
	r->earlier = cJSON_CreateArray();
	if (!r->path || !r->earlier || !new_run(r)) {
		report_free(r);
		return -ENOMEM;
	}
	rc = read_log(r, fp);
	if (rc < 0) {
		report_free(r);
		return rc;
	}
	*out = r;
	return 0;
}

int
report_load(const char *path, struct report **out)
{
	FILE *fp;
	int rc;

	*out = NULL;
	if (strcmp(path, "-") == 0)
		return report_load_stream(stdin, path, out);
	fp = fopen(path, "re");
	if (!fp)
		return -errno;
	rc = report_load_stream(fp, path, out);
	fclose(fp);  /* read-only: nothing to lose */
	return rc;
}

void
report_free(struct report *r)
{
	if (!r)
		return;
	clear_run(r);
	cJSON_Delete(r->earlier);
	free(r->atts);
	free(r->chain);
	free(r->path);
	free(r);
}

size_t
report_malformed(const struct report *r)
{
	return r->malformed;
}

size_t
report_torn(const struct report *r, const size_t **lines, size_t *nlines)
{
	if (lines)
		*lines = r->torn_at;
	if (nlines)
		*nlines = r->ntorn_at;
	return r->torn;
}

