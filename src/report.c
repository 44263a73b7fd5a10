/*
 * report.c - `vigil report`: summary and plot of a job's event log.
 */
#include "autoconf.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vigil.h"
#include "report.h"

/* Malformed lines whose numbers are kept for the summary. */
#define MALFORMED_KEEP 10
/* Items of a list the text summary shows before "... and N more". */
#define TEXT_LIST_MAX 20
/* Above this many nodes the text lists only those with something to say. */
#define TEXT_NODES_ALL 32

struct point {
	double iter, ms;
};

struct rnode {
	char *name;
	int rank;                   /* -1 until an event names it */
	bool have_exit, lost;
	int exit_code;
	char *signal, *error, *lost_msg;
	size_t faults, stragglers, slowest_count;
	struct point *pts;          /* e2e per iteration, from "node_e2e" */
	size_t npts, ptscap;
	double median;              /* of pts[].ms; NAN without points */
};

struct sample {
	double iter, e2e_min, e2e_mean, e2e_max, hw_mean, r_min, r_mean, r_max;
};

struct report {
	char *path;
	size_t events, malformed, nmal_at;
	size_t mal_at[MALFORMED_KEEP];
	cJSON *earlier;             /* [{state, exit_code, ended}] of runs before the last */

	/* the last run */
	char *first_time, *last_time;
	bool ended;
	char *state, *reason, *end_time;
	double exit_code;           /* NAN when the "job" event did not say */
	char *verdict;              /* the pre-check's, NULL without one */
	cJSON *checks_failed, *faults, *lost, *checkpoints, *restarts, *stops, *alerts;
	struct rnode *nodes;
	size_t nnodes, nodes_cap, hint;
	struct sample *samples;
	size_t nsamples, samples_cap;
	bool node_values;           /* some summary carried "node_e2e" */

	/* derived once the log is read */
	double iterations, e2e_min, e2e_median, e2e_max, hw_mean, r_min, r_mean, r_max;
	double nodes_median;        /* median of the nodes' medians */
	int slowest;                /* index into nodes, -1: none */
};

/* ---- small helpers --------------------------------------------------- */

static const char *
jstr(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/*
 * Numbers beyond this are not timings, iterations or ranks but damage
 * (cJSON reads 1e999 as infinity); keeping them out keeps the arithmetic
 * of medians and axes finite.
 */
#define NUM_MAX 1e15

static bool
sane(double v)
{
	return v > -NUM_MAX && v < NUM_MAX;
}

/* A number member within NUM_MAX, else NAN. */
static double
jnum(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsNumber(v) && sane(v->valuedouble) ? v->valuedouble : NAN;
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

/* "2026-11-20T23:35:08.123Z" to seconds since the epoch; NAN if not that. */
static double
parse_time(const char *s)
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
	r->node_values = false;
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
	if (!cJSON_IsObject(ne))
		ne = NULL;
	cJSON_ArrayForEach(v, ne) {
		struct rnode *n;

		if (!cJSON_IsNumber(v) || !sane(v->valuedouble) || !v->string)
			continue;
		n = node_get(r, v->string, -1);
		if (!n || !grow((void **)&n->pts, &n->ptscap, n->npts + 1, sizeof(*n->pts)))
			return false;
		n->pts[n->npts].iter = s->iter;
		n->pts[n->npts].ms = v->valuedouble;
		n->npts++;
		r->node_values = true;
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

	if (strcmp(kind, VIGIL_EVENT_JOB) == 0) {
		const char *state = jstr(d, "state");

		r->ended = true;
		r->exit_code = jnum(d, "exit_code");
		return set_str(&r->state, state ? state : "?") && set_str(&r->reason, msg) &&
		       set_str(&r->end_time, time);
	}
	if (strcmp(kind, VIGIL_EVENT_PERF) == 0)
		return !d || take_perf(r, d);
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

static int
cmp_point(const void *a, const void *b)
{
	return cmp_double(&((const struct point *)a)->iter, &((const struct point *)b)->iter);
}

/* Figures derived from the last run.  false on ENOMEM. */
static bool
derive(struct report *r)
{
	double *v = NULL, *meds = NULL, sum_hw = 0, sum_r = 0;
	size_t nv = 0, n_hw = 0, n_r = 0, nmeds = 0, total = 0;
	bool ok = false;

	r->iterations = r->e2e_min = r->e2e_median = r->e2e_max = NAN;
	r->hw_mean = r->r_min = r->r_mean = r->r_max = r->nodes_median = NAN;
	r->slowest = -1;
	if (r->nnodes > 1)
		qsort(r->nodes, r->nnodes, sizeof(*r->nodes), node_order);
	for (size_t i = 0; i < r->nnodes; i++)
		total += r->nodes[i].npts;
	v = malloc((total > r->nsamples ? total : r->nsamples) * sizeof(*v) + 1);
	meds = malloc(r->nnodes * sizeof(*meds) + 1);
	if (!v || !meds)
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
	for (size_t i = 0; i < r->nnodes; i++) {
		struct rnode *n = &r->nodes[i];
		double *mine = v + nv;

		if (!n->npts)
			continue;
		qsort(n->pts, n->npts, sizeof(*n->pts), cmp_point);
		for (size_t k = 0; k < n->npts; k++) {
			mine[k] = n->pts[k].ms;
			if (isnan(r->e2e_min) || mine[k] < r->e2e_min)
				r->e2e_min = mine[k];
			if (isnan(r->e2e_max) || mine[k] > r->e2e_max)
				r->e2e_max = mine[k];
		}
		nv += n->npts;
		n->median = median(mine, n->npts);  /* sorts its own part only */
		meds[nmeds++] = n->median;
		if (r->slowest < 0 || n->median > r->nodes[r->slowest].median)
			r->slowest = (int)i;
	}
	r->e2e_median = median(v, nv);
	r->nodes_median = median(meds, nmeds);
	if (nmeds < 2)
		r->slowest = -1;  /* slowest of one says nothing */
	if (!r->node_values) {
		for (size_t i = 0; i < r->nnodes; i++)
			if (r->nodes[i].slowest_count &&
			    (r->slowest < 0 || r->nodes[i].slowest_count > r->nodes[r->slowest].slowest_count))
				r->slowest = (int)i;
	}
	ok = true;
out:
	free(v);
	free(meds);
	return ok;
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
		const char *end = NULL;
		cJSON *e;

		lineno++;
		if (blank(line, (size_t)len))
			continue;
		e = cJSON_ParseWithLengthOpts(line, (size_t)len, &end, false);
		if (!e || !cJSON_IsObject(e) || !jstr(e, "kind") ||
		    !blank(end, (size_t)(line + len - end))) {
			cJSON_Delete(e);
			if (r->nmal_at < MALFORMED_KEEP)
				r->mal_at[r->nmal_at++] = lineno;
			r->malformed++;
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
report_load(const char *path, struct report **out)
{
	struct report *r;
	FILE *fp;
	int rc;

	*out = NULL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->path = strdup(path);
	r->earlier = cJSON_CreateArray();
	if (!r->path || !r->earlier || !new_run(r)) {
		report_free(r);
		return -ENOMEM;
	}
	if (strcmp(path, "-") == 0) {
		fp = stdin;
	} else {
		fp = fopen(path, "re");
		if (!fp) {
			rc = -errno;
			report_free(r);
			return rc;
		}
	}
	rc = read_log(r, fp);
	if (fp != stdin)
		fclose(fp);  /* read-only: nothing to lose */
	if (rc < 0) {
		report_free(r);
		return rc;
	}
	*out = r;
	return 0;
}

void
report_free(struct report *r)
{
	if (!r)
		return;
	clear_run(r);
	cJSON_Delete(r->earlier);
	free(r->path);
	free(r);
}

size_t
report_malformed(const struct report *r)
{
	return r->malformed;
}

/* ---- the summary ----------------------------------------------------- */

#define KEY "%-15s"

/* "exit 0", "exit 143 (SIGTERM)", "lost: ...", for node N. */
static void
node_outcome(const struct rnode *n, char *buf, size_t len)
{
	if (n->lost)
		snprintf(buf, len, "lost: %s", n->lost_msg ? n->lost_msg : "");
	else if (n->have_exit && n->error)
		snprintf(buf, len, "exit %d: %s", n->exit_code, n->error);
	else if (n->have_exit && n->signal)
		snprintf(buf, len, "exit %d (%s)", n->exit_code, n->signal);
	else if (n->have_exit)
		snprintf(buf, len, "exit %d", n->exit_code);
	else
		snprintf(buf, len, "no exit recorded");
}

/* Does node N deserve a line when there are too many nodes to list? */
static bool
node_notable(const struct rnode *n)
{
	return n->lost || (n->have_exit && n->exit_code != 0) || n->faults || n->stragglers;
}

static void
print_node(FILE *out, const struct rnode *n, int width, bool slowest)
{
	char outcome[600], rank[24];

	node_outcome(n, outcome, sizeof(outcome));
	if (n->rank >= 0)
		snprintf(rank, sizeof(rank), "rank %d", n->rank);
	else
		snprintf(rank, sizeof(rank), "rank ?");
	fprintf(out, "  %-*s  %-9s %s", width, n->name, rank, outcome);
	if (n->faults)
		fprintf(out, "; %zu fault%s", n->faults, n->faults == 1 ? "" : "s");
	if (n->stragglers)
		fprintf(out, "; slow (%zu straggler alert%s)", n->stragglers,
		        n->stragglers == 1 ? "" : "s");
	else if (slowest)
		fputs("; slowest", out);
	fputc('\n', out);
}

/* "  TIME  NODE (rank R): MESSAGE" lines of LIST, at most TEXT_LIST_MAX. */
static void
print_list(FILE *out, const char *key, const cJSON *list)
{
	int n = cJSON_GetArraySize(list), i = 0;
	const cJSON *x;

	fprintf(out, KEY "%d\n", key, n);
	cJSON_ArrayForEach(x, list) {
		const char *node = jstr(x, "node"), *sev = jstr(x, "severity");
		double rank = jnum(x, "rank");

		if (i++ == TEXT_LIST_MAX) {
			fprintf(out, "  ... and %d more\n", n - TEXT_LIST_MAX);
			break;
		}
		fprintf(out, "  %s  ", jstr(x, "time"));
		if (node && !isnan(rank))
			fprintf(out, "%s (rank %.0f): ", node, rank);
		else if (node)
			fprintf(out, "%s: ", node);
		if (sev && strcmp(sev, VIGIL_SEVERITY_ERROR) != 0)
			fprintf(out, "%s: ", sev);
		fprintf(out, "%s\n", jstr(x, "message"));
	}
}

int
report_print(const struct report *r, FILE *out)
{
	int width = 4, runs = cJSON_GetArraySize(r->earlier) + 1;
	size_t exited = 0, lost = 0, shown = 0;
	double t0 = parse_time(r->first_time), t1 = parse_time(r->last_time);

	fprintf(out, KEY "%s (%zu event%s", "events:", r->path, r->events,
	        r->events == 1 ? "" : "s");
	if (runs > 1)
		fprintf(out, "; run %d of %d in this log", runs, runs);
	fputs(")\n", out);
	if (runs > 1) {
		const cJSON *x;
		int i = 1;

		fprintf(out, KEY, "earlier runs:");
		cJSON_ArrayForEach(x, r->earlier) {
			double code = jnum(x, "exit_code");

			fprintf(out, "%s%s", i++ > 1 ? ", " : "", jstr(x, "state"));
			if (!isnan(code))
				fprintf(out, " (exit %.0f)", code);
		}
		fputc('\n', out);
	}
	if (r->ended) {
		if (isnan(r->exit_code))
			fprintf(out, KEY "%s\n", "job:", r->state);
		else
			fprintf(out, KEY "%s, exit status %.0f\n", "job:", r->state, r->exit_code);
		fprintf(out, KEY "%s\n", "reason:", r->reason);
	} else {
		fprintf(out, KEY "%s\n", "job:", "no \"job\" event: still running, or the agent died");
	}
	if (r->first_time) {
		fprintf(out, KEY "%s to %s", "time:", r->first_time, r->last_time);
		if (!isnan(t0) && !isnan(t1) && t1 >= t0)
			fprintf(out, " (%.1f s)", t1 - t0);
		fputc('\n', out);
	}
	if (r->verdict || cJSON_GetArraySize(r->checks_failed) > 0) {
		fprintf(out, KEY "%s", "pre-check:", r->verdict ? r->verdict : "no verdict");
		if (cJSON_GetArraySize(r->checks_failed) > 0)
			fprintf(out, ", %d failed check%s", cJSON_GetArraySize(r->checks_failed),
			        cJSON_GetArraySize(r->checks_failed) == 1 ? "" : "s");
		fputc('\n', out);
		if (cJSON_GetArraySize(r->checks_failed) > 0)
			print_list(out, "failed checks:", r->checks_failed);
	}

	for (size_t i = 0; i < r->nnodes; i++) {
		int w = (int)strlen(r->nodes[i].name);

		if (w > width)
			width = w < 40 ? w : 40;
		exited += r->nodes[i].have_exit && !r->nodes[i].lost;
		lost += r->nodes[i].lost;
	}
	fprintf(out, KEY "%zu (%zu exited, %zu lost)\n", "nodes:", r->nnodes, exited, lost);
	for (size_t i = 0; i < r->nnodes; i++) {
		if (r->nnodes > TEXT_NODES_ALL && !node_notable(&r->nodes[i]) &&
		    (int)i != r->slowest)
			continue;
		print_node(out, &r->nodes[i], width, (int)i == r->slowest);
		shown++;
	}
	if (shown < r->nnodes)
		fprintf(out, "  ... and %zu more nodes without faults, alerts or a failed exit\n",
		        r->nnodes - shown);

	print_list(out, "faults:", r->faults);
	if (cJSON_GetArraySize(r->lost) > 0)
		print_list(out, "lost nodes:", r->lost);
	print_list(out, "checkpoints:", r->checkpoints);
	print_list(out, "restarts:", r->restarts);
	if (cJSON_GetArraySize(r->stops) > 0)
		print_list(out, "stops:", r->stops);

	if (r->nsamples == 0) {
		fprintf(out, KEY "%s\n", "performance:", "no timing summaries in the log");
	} else {
		fprintf(out, KEY "%.0f (%zu summar%s)\n", "iterations:", r->iterations, r->nsamples,
		        r->nsamples == 1 ? "y" : "ies");
		if (!isnan(r->e2e_median))
			fprintf(out, KEY "min %.3f ms, median %.3f ms, max %.3f ms\n", "e2e time:",
			        r->e2e_min, r->e2e_median, r->e2e_max);
		if (!isnan(r->hw_mean))
			fprintf(out, KEY "mean %.3f ms\n", "hardware:", r->hw_mean);
		if (!isnan(r->r_mean))
			fprintf(out, KEY "min %.3f, mean %.3f, max %.3f\n", "hw/e2e:", r->r_min,
			        r->r_mean, r->r_max);
		if (r->slowest >= 0 && r->node_values && r->nodes_median > 0) {
			const struct rnode *n = &r->nodes[r->slowest];

			fprintf(out, KEY "%s, median e2e %.3f ms (%.1f%% above the median node, %.3f ms)\n",
			        "slowest node:", n->name, n->median,
			        (n->median / r->nodes_median - 1) * 100, r->nodes_median);
		} else if (r->slowest >= 0 && r->node_values) {
			fprintf(out, KEY "%s, median e2e %.3f ms\n", "slowest node:",
			        r->nodes[r->slowest].name, r->nodes[r->slowest].median);
		} else if (r->slowest >= 0) {
			const struct rnode *n = &r->nodes[r->slowest];

			fprintf(out, KEY "%s (slowest in %zu of %zu summaries)\n", "slowest node:",
			        n->name, n->slowest_count, r->nsamples);
		}
	}
	{
		int n = cJSON_GetArraySize(r->alerts), i = 0;
		const cJSON *x;

		fprintf(out, KEY "%d\n", "alerts:", n);
		cJSON_ArrayForEach(x, r->alerts) {
			double iter = jnum(x, "iter");

			if (i++ == TEXT_LIST_MAX) {
				fprintf(out, "  ... and %d more\n", n - TEXT_LIST_MAX);
				break;
			}
			if (isnan(iter))
				fprintf(out, "  iteration ?");
			else
				fprintf(out, "  iteration %.0f", iter);
			/* the supervisor's messages name the node; others may not */
			if (strstr(jstr(x, "message"), jstr(x, "node")))
				fprintf(out, "  %-9s  %s\n", jstr(x, "kind"), jstr(x, "message"));
			else
				fprintf(out, "  %-9s  %s: %s\n", jstr(x, "kind"), jstr(x, "node"),
				        jstr(x, "message"));
		}
	}
	if (r->malformed) {
		fprintf(out, KEY "%zu line%s skipped (line", "malformed:", r->malformed,
		        r->malformed == 1 ? "" : "s");
		for (size_t i = 0; i < r->nmal_at; i++)
			fprintf(out, "%s %zu", i ? "," : "", r->mal_at[i]);
		fprintf(out, "%s)\n", r->malformed > r->nmal_at ? ", ..." : "");
	}
	return fflush(out) == 0 && !ferror(out) ? 0 : -EIO;
}

/* ---- the JSON -------------------------------------------------------- */

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

cJSON *
report_json(const struct report *r)
{
	cJSON *o = cJSON_CreateObject(), *job, *nodes, *mal, *perf = NULL;
	double t0 = parse_time(r->first_time), t1 = parse_time(r->last_time);

	if (!o || !add_str(o, "file", r->path) || !add_num(o, "events", (double)r->events) ||
	    !add_num(o, "malformed_lines", (double)r->malformed) ||
	    !(mal = cJSON_AddArrayToObject(o, "malformed_at")) ||
	    !add_num(o, "runs", cJSON_GetArraySize(r->earlier) + 1) ||
	    !add_copy(o, "earlier_runs", r->earlier))
		goto fail;
	for (size_t i = 0; i < r->nmal_at; i++) {
		cJSON *n = cJSON_CreateNumber((double)r->mal_at[i]);

		if (!n || !cJSON_AddItemToArray(mal, n))
			goto fail;
	}
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
	return o;
fail:
	cJSON_Delete(o);
	return NULL;
}

/* ---- the plot -------------------------------------------------------- */

#define SVG_W 960
#define SVG_H 540
#define PLOT_X0 80.0   /* the plot area, in SVG units */
#define PLOT_X1 720.0
#define PLOT_Y0 70.0
#define PLOT_Y1 470.0
/* More nodes than this: only flagged nodes get colours and legend entries. */
#define LEGEND_MAX 12

/* Tableau 10: distinguishable, and readable for most colour blindness. */
static const char *const palette[] = {
	"#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2",
	"#edc948", "#9c755f", "#bab0ac", "#ff9da7", "#e15759",
};
#define NPALETTE (sizeof(palette) / sizeof(palette[0]))
#define ALERT_COLOUR "#d62728"
/* More alerts than this: lines without labels. */
#define ALERT_LABELS_MAX 12

/*
 * Text as XML character data or attribute value: markup escaped, and
 * what XML 1.0 cannot hold (control characters, invalid UTF-8, which
 * node names and messages from a log may contain) replaced by '?'.
 */
static void
xml_put(FILE *out, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		unsigned c = *p;
		size_t n = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 :
		           (c & 0xf8) == 0xf0 ? 4 : 0;
		bool ok = n > 0;

		for (size_t k = 1; ok && k < n; k++)
			ok = (p[k] & 0xc0) == 0x80;
		if (ok && n == 2)
			ok = c >= 0xc2;  /* overlong */
		if (ok && n == 3)
			ok = !(c == 0xe0 && p[1] < 0xa0) && !(c == 0xed && p[1] >= 0xa0) &&
			     !(c == 0xef && p[1] == 0xbf && p[2] >= 0xbe);  /* overlong, surrogate, U+FFFE/F */
		if (ok && n == 4)
			ok = c <= 0xf4 && !(c == 0xf0 && p[1] < 0x90) && !(c == 0xf4 && p[1] >= 0x90);
		if (!ok) {
			fputc('?', out);
			p++;
			continue;
		}
		if (n > 1) {
			fwrite(p, 1, n, out);
		} else if (c == '&') {
			fputs("&amp;", out);
		} else if (c == '<') {
			fputs("&lt;", out);
		} else if (c == '>') {
			fputs("&gt;", out);
		} else if (c == '"') {
			fputs("&quot;", out);
		} else if (c < 0x20 && c != '\t' && c != '\n') {
			fputc('?', out);
		} else {
			fputc((int)c, out);
		}
		p += n;
	}
}

/* floor() and ceil() without libm.  From 2^52 up every double is whole. */
static double
floor_d(double x)
{
	double t;

	if (!(x > -4503599627370496.0 && x < 4503599627370496.0))
		return x;
	t = (double)(long long)x;
	return t > x ? t - 1 : t;
}

static double
ceil_d(double x)
{
	double t;

	if (!(x > -4503599627370496.0 && x < 4503599627370496.0))
		return x;
	t = (double)(long long)x;
	return t < x ? t + 1 : t;
}

/*
 * A "nice" step (1, 2 or 5 times a power of ten) for about N ticks over
 * SPAN (> 0), and in *DECIMALS the digits after the point its multiples
 * need.  Powers of ten by multiplication keep libm out of the link.
 */
static double
nice_step(double span, int n, int *decimals)
{
	double raw = span / n, mag = 1, f;
	int d = 0;

	while (mag > raw && mag > 1e-12) {
		mag /= 10;
		d++;
	}
	while (mag * 10 <= raw && mag < 1e300)
		mag *= 10;
	f = raw / mag;
	if (f >= 7.5)
		d--;  /* the step is 10 * mag */
	*decimals = d < 0 ? 0 : d > 12 ? 12 : d;
	return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * mag;
}

struct axis {
	double lo, hi, step;
	int decimals, ticks;  /* ticks: intervals between lo and hi */
};

/* Round [LO, HI] out to whole ticks. */
static void
axis_fit(struct axis *a, double lo, double hi, int ticks, bool whole)
{
	double n;

	if (!(hi > lo)) {
		double pad = fabs(lo) > 0 ? fabs(lo) * 0.1 : 1;

		lo -= pad;
		hi += pad;
	}
	a->step = nice_step(hi - lo, ticks, &a->decimals);
	if (whole && a->step < 1) {  /* iterations: no 2.75 */
		a->step = 1;
		a->decimals = 0;
	}
	a->lo = floor_d(lo / a->step) * a->step;
	a->hi = ceil_d(hi / a->step) * a->step;
	/* Counted, not stepped to: at magnitudes far above the step, v += step
	 * would not move. */
	n = (a->hi - a->lo) / a->step + 0.5;
	if (n >= 1 && n <= 40) {
		a->ticks = (int)n;
	} else {
		/* degenerate (values near the limits of double): two ticks */
		a->lo = lo;
		a->hi = hi > lo ? hi : lo + fabs(lo) * 1e-6 + 1;
		a->ticks = 1;
		a->step = a->hi - a->lo;
	}
}

static double
map_x(const struct axis *a, double v)
{
	return PLOT_X0 + (v - a->lo) / (a->hi - a->lo) * (PLOT_X1 - PLOT_X0);
}

static double
map_y(const struct axis *a, double v)
{
	return PLOT_Y1 - (v - a->lo) / (a->hi - a->lo) * (PLOT_Y1 - PLOT_Y0);
}

/*
 * One series as a polyline.  Beyond two points per horizontal pixel the
 * points are thinned per pixel column to that column's lowest and highest,
 * in order, so spikes survive and the file stays small.
 */
static void
put_polyline(FILE *out, const struct axis *ax, const struct axis *ay, const struct point *pts,
             size_t n, const char *colour, double width, double opacity, const char *title)
{
	size_t cols = (size_t)(PLOT_X1 - PLOT_X0);
	bool thin = n > 2 * cols;
	size_t i = 0;

	fprintf(out, "<polyline class=\"series\" fill=\"none\" stroke=\"%s\" stroke-width=\"%.1f\" "
	        "stroke-opacity=\"%.2f\" stroke-linejoin=\"round\" stroke-linecap=\"round\" "
	        "points=\"", colour, width, opacity);

	while (i < n) {
		size_t lo = i, hi = i, k = i;
		double col = floor_d(map_x(ax, pts[i].iter));

		if (!thin) {
			fprintf(out, "%s%.1f,%.1f", i ? " " : "", map_x(ax, pts[i].iter),
			        map_y(ay, pts[i].ms));
			i++;
			continue;
		}
		while (k < n && floor_d(map_x(ax, pts[k].iter)) == col) {
			if (pts[k].ms < pts[lo].ms)
				lo = k;
			if (pts[k].ms > pts[hi].ms)
				hi = k;
			k++;
		}
		if (lo > hi) {
			size_t t = lo;

			lo = hi;
			hi = t;
		}
		fprintf(out, "%s%.1f,%.1f", i ? " " : "", map_x(ax, pts[lo].iter), map_y(ay, pts[lo].ms));
		if (hi != lo)
			fprintf(out, " %.1f,%.1f", map_x(ax, pts[hi].iter), map_y(ay, pts[hi].ms));
		i = k;
	}
	fputs("\">", out);
	fputs("<title>", out);
	xml_put(out, title);
	fputs("</title></polyline>\n", out);
	if (n == 1)  /* a line of one point shows nothing: a dot */
		fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\" fill=\"%s\"/>\n",
		        map_x(ax, pts[0].iter), map_y(ay, pts[0].ms), width + 1.5, colour);
}

struct series {
	const char *name;
	const struct point *pts;
	size_t n;
	double median;
	bool flagged, slowest;
	const char *colour;
	double width, opacity;
	bool legend;
};

/* The series to draw: per node, or min / mean / max across nodes. */
static struct series *
make_series(const struct report *r, struct point **own, size_t *count)
{
	struct series *s;
	size_t n = 0;

	*own = NULL;
	*count = 0;
	if (r->node_values) {
		s = calloc(r->nnodes + 1, sizeof(*s));
		if (!s)
			return NULL;
		for (size_t i = 0; i < r->nnodes; i++) {
			const struct rnode *nd = &r->nodes[i];
			struct series *x = &s[n];

			if (!nd->npts)
				continue;
			x->name = nd->name;
			x->pts = nd->pts;
			x->n = nd->npts;
			x->median = nd->median;
			x->flagged = nd->stragglers > 0;
			x->slowest = (int)i == r->slowest;
			x->width = x->flagged ? 2.5 : 1.5;
			x->opacity = 0.9;
			x->legend = true;
			n++;
		}
		/* Many nodes: the ordinary ones in grey, behind; the flagged
		 * and the slowest in colour with a legend entry. */
		for (size_t i = 0, c = 0; i < n; i++) {
			bool many = n > LEGEND_MAX;
			bool hi = s[i].flagged || s[i].slowest;

			if (many && !hi) {
				s[i].colour = "#9a9a9a";
				s[i].width = 1;
				s[i].opacity = 0.35;
				s[i].legend = false;
			} else {
				s[i].colour = palette[c++ % NPALETTE];
			}
		}
		*count = n;
		return s;
	}
	{
		/* min / mean / max of every summary */
		static const char *const names[] = { "max", "mean", "min" };
		struct point *p = calloc(3 * r->nsamples + 1, sizeof(*p));

		s = calloc(3, sizeof(*s));
		if (!p || !s) {
			free(p);
			free(s);
			return NULL;
		}
		for (int k = 0; k < 3; k++) {
			struct point *pk = p + (size_t)k * r->nsamples;
			size_t m = 0;

			for (size_t i = 0; i < r->nsamples; i++) {
				const struct sample *sm = &r->samples[i];
				double v = k == 0 ? sm->e2e_max : k == 1 ? sm->e2e_mean : sm->e2e_min;

				if (isnan(v))
					continue;
				pk[m].iter = sm->iter;
				pk[m].ms = v;
				m++;
			}
			if (m == 0)
				continue;
			qsort(pk, m, sizeof(*pk), cmp_point);
			s[n].name = names[k];
			s[n].pts = pk;
			s[n].n = m;
			s[n].median = NAN;
			s[n].colour = palette[k == 0 ? 9 : k == 1 ? 0 : 2];
			s[n].width = k == 1 ? 2 : 1.5;
			s[n].opacity = 0.9;
			s[n].legend = true;
			n++;
		}
		*own = p;
		*count = n;
		return s;
	}
}

static void
put_text(FILE *out, double x, double y, const char *attrs, const char *text)
{
	fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" %s>", x, y, attrs);
	xml_put(out, text);
	fputs("</text>\n", out);
}

int
report_plot(const struct report *r, FILE *out)
{
	struct point *own = NULL;
	size_t ns = 0, nalerts = (size_t)cJSON_GetArraySize(r->alerts), k = 0, grey = 0;
	struct series *s = make_series(r, &own, &ns);
	struct axis ax, ay;
	double xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY;
	char title[512], buf[128];
	const char *base = strrchr(r->path, '/');
	const cJSON *a;
	double ly;
	int rc;

	if (!s)
		return -ENOMEM;
	base = base ? base + 1 : r->path;
	for (size_t i = 0; i < ns; i++) {
		for (size_t j = 0; j < s[i].n; j++) {
			const struct point *p = &s[i].pts[j];

			xlo = p->iter < xlo ? p->iter : xlo;
			xhi = p->iter > xhi ? p->iter : xhi;
			ylo = p->ms < ylo ? p->ms : ylo;
			yhi = p->ms > yhi ? p->ms : yhi;
		}
	}
	cJSON_ArrayForEach(a, r->alerts) {
		double it = jnum(a, "iter");

		if (!isnan(it)) {
			xlo = it < xlo ? it : xlo;
			xhi = it > xhi ? it : xhi;
		}
	}
	if (xlo > xhi)
		xlo = xhi = 0;
	if (ylo > yhi)
		ylo = yhi = 0;
	axis_fit(&ax, xlo, xhi, 8, true);
	axis_fit(&ay, ylo, yhi, 6, false);

	fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
	        "viewBox=\"0 0 %d %d\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" "
	        "font-size=\"12\">\n", SVG_W, SVG_H, SVG_W, SVG_H);
	fprintf(out, "<rect width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n", SVG_W, SVG_H);

	/* title and subtitle */
	snprintf(title, sizeof(title), "%s", r->node_values ?
	         "End-to-end time per node over iterations" :
	         "End-to-end time across nodes over iterations (min, mean, max)");
	put_text(out, PLOT_X0, 28, "font-size=\"17\" font-weight=\"bold\" fill=\"#222222\"", title);
	if (r->ended && !isnan(r->exit_code))
		snprintf(title, sizeof(title), "%s: job %s, exit status %.0f; %zu node%s; %zu alert%s",
		         base, r->state, r->exit_code, r->nnodes, r->nnodes == 1 ? "" : "s",
		         nalerts, nalerts == 1 ? "" : "s");
	else
		snprintf(title, sizeof(title), "%s: job %s; %zu node%s; %zu alert%s", base,
		         r->ended ? r->state : "without an end", r->nnodes, r->nnodes == 1 ? "" : "s",
		         nalerts, nalerts == 1 ? "" : "s");
	put_text(out, PLOT_X0, 48, "font-size=\"12\" fill=\"#555555\"", title);

	/* grid, ticks and labels */
	fputs("<g class=\"grid\" stroke=\"#e3e3e3\" stroke-width=\"1\">\n", out);
	for (int i = 0; i <= ay.ticks; i++) {
		double y = map_y(&ay, ay.lo + i * ay.step);

		fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", PLOT_X0, y,
		        PLOT_X1, y);
	}
	for (int i = 0; i <= ax.ticks; i++) {
		double x = map_x(&ax, ax.lo + i * ax.step);

		fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", x, PLOT_Y0,
		        x, PLOT_Y1);
	}
	fputs("</g>\n<g class=\"ticks\" fill=\"#333333\">\n", out);
	for (int i = 0; i <= ay.ticks; i++) {
		double v = ay.lo + i * ay.step;

		snprintf(buf, sizeof(buf), "%.*f", ay.decimals, fabs(v) < ay.step / 2 ? 0 : v);
		put_text(out, PLOT_X0 - 8, map_y(&ay, v) + 4, "text-anchor=\"end\"", buf);
	}
	for (int i = 0; i <= ax.ticks; i++) {
		double v = ax.lo + i * ax.step;

		snprintf(buf, sizeof(buf), "%.*f", ax.decimals, fabs(v) < ax.step / 2 ? 0 : v);
		put_text(out, map_x(&ax, v), PLOT_Y1 + 18, "text-anchor=\"middle\"", buf);
	}
	fputs("</g>\n", out);
	fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
	        "stroke=\"#555555\" stroke-width=\"1\"/>\n", PLOT_X0, PLOT_Y0, PLOT_X1 - PLOT_X0,
	        PLOT_Y1 - PLOT_Y0);
	put_text(out, (PLOT_X0 + PLOT_X1) / 2, PLOT_Y1 + 42,
	         "text-anchor=\"middle\" font-size=\"13\" fill=\"#222222\"", "iteration");
	fprintf(out, "<text x=\"0\" y=\"0\" transform=\"translate(24 %.1f) rotate(-90)\" "
	        "text-anchor=\"middle\" font-size=\"13\" fill=\"#222222\">e2e time (ms)</text>\n",
	        (PLOT_Y0 + PLOT_Y1) / 2);

	if (ns == 0)
		put_text(out, (PLOT_X0 + PLOT_X1) / 2, (PLOT_Y0 + PLOT_Y1) / 2,
		         "text-anchor=\"middle\" font-size=\"15\" fill=\"#888888\"",
		         "no timing summaries in the log");

	/* series: ordinary ones first, so the flagged ones are drawn on top */
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < ns; i++)
			if ((s[i].flagged || s[i].slowest) == (pass == 1))
				put_polyline(out, &ax, &ay, s[i].pts, s[i].n, s[i].colour, s[i].width,
				             s[i].opacity, s[i].name);

	/* alerts: a dashed line each, labels staggered over three rows */
	cJSON_ArrayForEach(a, r->alerts) {
		double it = jnum(a, "iter"), x;
		bool right;

		if (isnan(it))
			continue;
		x = map_x(&ax, it);
		right = x > PLOT_X1 - 140;
		fprintf(out, "<line class=\"alert\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
		        "stroke=\"%s\" stroke-width=\"1.5\" stroke-dasharray=\"5 4\"><title>", x,
		        PLOT_Y0, x, PLOT_Y1, ALERT_COLOUR);
		xml_put(out, jstr(a, "message"));
		fputs("</title></line>\n", out);
		if (nalerts > ALERT_LABELS_MAX)
			continue;  /* a forest of labels reads as nothing: titles only */
		snprintf(buf, sizeof(buf), "%s %.40s @%.0f", jstr(a, "kind"), jstr(a, "node"), it);
		fprintf(out, "<text class=\"alert-label\" x=\"%.1f\" y=\"%.1f\" font-size=\"11\" "
		        "fill=\"%s\" text-anchor=\"%s\" stroke=\"#ffffff\" stroke-width=\"3\" "
		        "paint-order=\"stroke\">", right ? x - 4 : x + 4,
		        PLOT_Y0 + 14 + (double)(k % 3) * 14, ALERT_COLOUR, right ? "end" : "start");
		xml_put(out, buf);
		fputs("</text>\n", out);
		k++;
	}

	/* legend, right of the plot */
	ly = PLOT_Y0 + 4;
	put_text(out, PLOT_X1 + 20, ly, "font-weight=\"bold\" fill=\"#222222\"",
	         r->node_values ? "node (median e2e)" : "across nodes");
	ly += 20;
	for (size_t i = 0; i < ns; i++)
		grey += !s[i].legend;
	for (size_t i = 0; i < ns; i++) {
		if (!s[i].legend)
			continue;
		if (ly > PLOT_Y1 - 40) {
			put_text(out, PLOT_X1 + 20, ly, "fill=\"#555555\"", "...");
			ly += 18;
			break;
		}
		fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
		        "stroke-width=\"%.1f\"/>\n", PLOT_X1 + 20, ly - 4, PLOT_X1 + 44, ly - 4,
		        s[i].colour, s[i].width + 1);
		if (isnan(s[i].median))
			snprintf(buf, sizeof(buf), "%.32s", s[i].name);
		else
			snprintf(buf, sizeof(buf), "%.32s (%.1f ms)", s[i].name, s[i].median);
		put_text(out, PLOT_X1 + 50, ly, s[i].flagged ? "font-weight=\"bold\" fill=\"#222222\""
		                                            : "fill=\"#222222\"", buf);
		if (s[i].flagged || s[i].slowest) {
			ly += 15;
			put_text(out, PLOT_X1 + 50, ly,
			         s[i].flagged ? "class=\"slow\" font-size=\"11\" fill=\"" ALERT_COLOUR "\""
			                      : "font-size=\"11\" fill=\"#555555\"",
			         s[i].flagged ? "\u26a0 slow: straggler alert" : "slowest, no alert");
		}
		ly += 20;
	}
	if (grey > 0) {
		snprintf(buf, sizeof(buf), "%zu other nodes", grey);
		fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#9a9a9a\" "
		        "stroke-width=\"2\"/>\n", PLOT_X1 + 20, ly - 4, PLOT_X1 + 44, ly - 4);
		put_text(out, PLOT_X1 + 50, ly, "fill=\"#555555\"", buf);
		ly += 20;
	}
	if (nalerts > 0) {
		fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
		        "stroke-width=\"1.5\" stroke-dasharray=\"5 4\"/>\n", PLOT_X1 + 20, ly - 4,
		        PLOT_X1 + 44, ly - 4, ALERT_COLOUR);
		snprintf(buf, sizeof(buf), "alert (%zu)", nalerts);
		put_text(out, PLOT_X1 + 50, ly, "fill=\"#222222\"", buf);
	}
	fputs("</svg>\n", out);
	free(own);
	free(s);
	rc = fflush(out) == 0 && !ferror(out) ? 0 : -EIO;
	return rc;
}

/* ---- the command ----------------------------------------------------- */

static const char report_usage[] =
"usage: vigil report EVENTS [--json] [--plot FILE.svg]\n"
"\n"
"Summarise the event log of a job (vigil run --events EVENTS; - reads\n"
"standard input): its state, nodes, faults, checkpoints, performance and\n"
"alerts.\n"
"\n"
"  --json            print one JSON object instead of the summary\n"
"  --plot FILE.svg   also draw e2e time per node over iterations, with alerts\n";

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int
usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("vigil report: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\nTry `vigil report --help'.\n", stderr);
	return VIGIL_EXIT_USAGE;
}

static int
write_plot(const struct report *r, const char *path)
{
	FILE *fp = fopen(path, "we");
	int rc;

	if (!fp) {
		rc = -errno;
		fprintf(stderr, "vigil report: cannot write %s: %s\n", path, strerror(-rc));
		return VIGIL_EXIT_INTERNAL;
	}
	rc = report_plot(r, fp);
	if (fclose(fp) != 0 && rc == 0)
		rc = -errno;
	if (rc < 0) {
		fprintf(stderr, "vigil report: cannot write %s: %s\n", path, strerror(-rc));
		return VIGIL_EXIT_INTERNAL;
	}
	return VIGIL_EXIT_OK;
}

int
report_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "plot", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *path, *plot = NULL;
	struct report *r = NULL;
	bool json = false;
	int c, rc;

	/* 0, not 1: GNU getopt starts over completely (the command may be
	 * called more than once in a process, as the tests do). */
	optind = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 'j': json = true; break;
		case 'p': plot = optarg; break;
		case 'h': fputs(report_usage, stdout); return VIGIL_EXIT_OK;
		case ':': return usage_error("%s needs an argument", argv[optind - 1]);
		default: return usage_error("invalid option '%s'", argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return usage_error("which event log? (EVENTS is missing)");
	if (optind + 1 < argc)
		return usage_error("unexpected argument '%s'", argv[optind + 1]);
	path = argv[optind];
	if (plot && !*plot)
		return usage_error("--plot needs a file name");

	rc = report_load(path, &r);
	if (rc < 0) {
		fprintf(stderr, "vigil report: cannot read %s: %s\n",
		        strcmp(path, "-") ? path : "standard input", strerror(-rc));
		return VIGIL_EXIT_INTERNAL;
	}
	if (json) {
		cJSON *o = report_json(r);
		char *text = o ? cJSON_Print(o) : NULL;

		cJSON_Delete(o);
		if (!text) {
			fputs("vigil report: out of memory\n", stderr);
			report_free(r);
			return VIGIL_EXIT_INTERNAL;
		}
		fputs(text, stdout);
		fputc('\n', stdout);
		free(text);
		rc = fflush(stdout) == 0 && !ferror(stdout) ? 0 : -EIO;
	} else {
		rc = report_print(r, stdout);
	}
	if (rc < 0) {
		fprintf(stderr, "vigil report: cannot write the summary: %s\n", strerror(EIO));
		report_free(r);
		return VIGIL_EXIT_INTERNAL;
	}
	rc = plot ? write_plot(r, plot) : VIGIL_EXIT_OK;
	report_free(r);
	return rc;
}
