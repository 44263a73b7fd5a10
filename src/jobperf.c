/*
 * jobperf.c - performance detection in `vigil run`: reductions in lock
 * step, and on the coordinator the policy, alerts, summary line, metrics
 * file and the report's performance section.
 */
#include "autoconf.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "vigil.h"
#include "jobperf.h"
#include "json.h"
#include "log.h"
#include "metrics.h"
#include "notify.h"
#include "peer.h"
#include "perf.h"
#include "progress.h"

#define PERF_WINDOW 64   /* iterations per reduction, and kept ahead of the slowest node */
#define PERF_HIST 4096   /* recent e2e times per node kept for the report's medians */
#define NOTIFIERS 16     /* --notify commands remembered, to let them finish at the end */
#define ALERTS_KEPT 64   /* alerts kept for the report (the rest are counted) */

struct jobperf {
	const struct run_opts *o;
	struct peer *p;
	int rank, size;
	struct jobperf_ops ops;
	bool trains;
	bool broken;

	/* this node's iterations and the reduction in flight */
	struct perf_node *node;
	struct peer_reduce *red;   /* one at a time */
	size_t base;               /* iterations complete on every node */
	int started;               /* reductions this node started */
	int due;                   /* reductions the coordinator started */
	bool moving;               /* the last reduction found new iterations */
	double *buf, *gather;

	/* the coordinator */
	double last_tick;
	struct perf_policy *policy;
	const char **names;        /* node names by rank, for the policy's messages */
	struct perf_iter last;
	bool have_iter;
	double summary_last;
	double *hist;              /* recent e2e per rank (PERF_HIST each), for medians */
	size_t *nhist;
	cJSON *alerts;             /* the first ALERTS_KEPT alerts, for the report */
	size_t nalerts;
	struct metrics *metrics;
	double metrics_last;
	pid_t notifiers[NOTIFIERS];
};

static double
median(double *v, size_t n)
{
	/* insertion sort: n is at most PERF_HIST, and this runs at the end */
	for (size_t i = 1; i < n; i++) {
		double x = v[i];
		size_t k = i;

		while (k > 0 && v[k - 1] > x) {
			v[k] = v[k - 1];
			k--;
		}
		v[k] = x;
	}
	if (n == 0)
		return NAN;
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static const char *
host(const struct jobperf *jp, int rank)
{
	return jp->ops.host ? jp->ops.host(jp->ops.arg, rank) : "?";
}

static void
event(struct jobperf *jp, int rank, const char *kind, const char *severity, const char *msg,
      cJSON *details)
{
	if (jp->ops.event)
		jp->ops.event(jp->ops.arg, host(jp, rank), rank, kind, severity, msg, details);
	else
		cJSON_Delete(details);
}

/* ---- the coordinator's side ----------------------------------------------------- */

static int
coordinator_init(struct jobperf *jp, double now)
{
	struct perf_policy_opts po = {
		.threshold = jp->o->perf_threshold, .below = jp->o->perf_below,
		.window = jp->o->perf_window, .straggler_pct = jp->o->straggler_pct,
	};

	jp->policy = perf_policy_new(&po, jp->size);
	jp->names = calloc((size_t)jp->size, sizeof(*jp->names));
	jp->hist = calloc((size_t)jp->size * PERF_HIST, sizeof(*jp->hist));
	jp->nhist = calloc((size_t)jp->size, sizeof(*jp->nhist));
	jp->alerts = cJSON_CreateArray();
	if (jp->o->metrics)
		jp->metrics = metrics_new();
	if (!jp->policy || !jp->names || !jp->hist || !jp->nhist || !jp->alerts ||
	    (jp->o->metrics && !jp->metrics))
		return -ENOMEM;
	jp->summary_last = jp->last_tick = now;
	return 0;
}

/* --notify: the alert as JSON on the command's stdin; never waits for it. */
static void
notify_alert(struct jobperf *jp, const char *json)
{
	pid_t pid;
	int rc = notify_spawn(jp->o->notify, json, &pid);

	if (rc < 0) {
		LOG_ERR("cannot run the notifier '%s': %s", jp->o->notify, strerror(-rc));
		return;
	}
	/* remembered so that the end of the job can let it finish */
	for (size_t i = 0; i < NOTIFIERS; i++) {
		if (jp->notifiers[i] <= 0 || kill(jp->notifiers[i], 0) < 0) {
			jp->notifiers[i] = pid;
			return;
		}
	}
}

static void
take_alert(struct jobperf *jp, const struct perf_alert *a)
{
	cJSON *d = cJSON_CreateObject();
	char *text, line[320];

	cJSON_AddStringToObject(d, "kind", a->kind);
	cJSON_AddNumberToObject(d, "iter", (double)a->iter);
	cJSON_AddStringToObject(d, "node", host(jp, a->rank));
	cJSON_AddNumberToObject(d, "rank", a->rank);
	cJSON_AddNumberToObject(d, "value", a->value);
	cJSON_AddStringToObject(d, "message", a->message);
	if (jp->nalerts++ < ALERTS_KEPT)
		cJSON_AddItemToArray(jp->alerts, cJSON_Duplicate(d, 1));
	if (jp->metrics)
		metrics_add_alert(jp->metrics, a->kind);
	snprintf(line, sizeof(line), "vigil: performance alert: %s", a->message);
	if (jp->ops.say)
		jp->ops.say(jp->ops.arg, line);
	text = jp->o->notify ? json_print(d, false) : NULL;
	if (text)
		notify_alert(jp, text);
	free(text);
	event(jp, a->rank, VIGIL_EVENT_ALERT, VIGIL_SEVERITY_WARNING, a->message, d);
	if (jp->ops.alert)
		jp->ops.alert(jp->ops.arg, a->rank, a->message);
}

static double
last_e2e(const struct jobperf *jp, int r)
{
	return jp->hist[(size_t)r * PERF_HIST + (jp->nhist[r] - 1) % PERF_HIST];
}

void
jobperf_summary(struct jobperf *jp)
{
	const struct perf_iter *it = &jp->last;
	cJSON *d, *ne;
	char msg[512], line[540];

	if (jp->rank != 0 || !jp->have_iter)
		return;
	snprintf(msg, sizeof(msg), "iter %zu  e2e %.0f ms (min %.0f %s, max %.0f %s)  "
	         "hw/e2e %.2f (min %.2f %s)", it->iter, it->e2e_mean, it->e2e_min,
	         host(jp, it->e2e_min_rank), it->e2e_max, host(jp, it->e2e_max_rank),
	         it->r_mean, it->r_min, host(jp, it->r_min_rank));
	snprintf(line, sizeof(line), "vigil: %s", msg);
	if (jp->ops.say)
		jp->ops.say(jp->ops.arg, line);
	d = cJSON_CreateObject();
	cJSON_AddNumberToObject(d, "iter", (double)it->iter);
	cJSON_AddNumberToObject(d, "e2e_min", it->e2e_min);
	cJSON_AddNumberToObject(d, "e2e_mean", it->e2e_mean);
	cJSON_AddNumberToObject(d, "e2e_max", it->e2e_max);
	cJSON_AddStringToObject(d, "e2e_min_node", host(jp, it->e2e_min_rank));
	cJSON_AddStringToObject(d, "e2e_max_node", host(jp, it->e2e_max_rank));
	cJSON_AddNumberToObject(d, "hw_mean", it->hw_mean);
	cJSON_AddNumberToObject(d, "r_min", it->r_min);
	cJSON_AddNumberToObject(d, "r_mean", it->r_mean);
	cJSON_AddNumberToObject(d, "r_max", it->r_max);
	cJSON_AddStringToObject(d, "r_min_node", host(jp, it->r_min_rank));
	cJSON_AddStringToObject(d, "r_max_node", host(jp, it->r_max_rank));
	ne = cJSON_AddObjectToObject(d, "node_e2e");
	for (int r = 0; ne && r < jp->size; r++)
		if (jp->nhist[r])
			cJSON_AddNumberToObject(ne, host(jp, r), last_e2e(jp, r));
	event(jp, jp->rank, VIGIL_EVENT_PERF, VIGIL_SEVERITY_INFO, msg, d);
}

void
jobperf_metrics(struct jobperf *jp, const char *state, unsigned up, unsigned lost, bool force,
                double now)
{
	const struct perf_iter *it = &jp->last;
	int rc;

	if (!jp->metrics || (!force && now - jp->metrics_last < 1))
		return;
	jp->metrics_last = now;
	metrics_set_state(jp->metrics, state);
	metrics_set_iterations(jp->metrics, jp->base);
	if (jp->have_iter) {
		struct metrics_stats hw = { it->hw_min, it->hw_mean, it->hw_max };
		struct metrics_stats e2e = { it->e2e_min, it->e2e_mean, it->e2e_max };
		struct metrics_stats ratio = { it->r_min, it->r_mean, it->r_max };

		metrics_set_iteration(jp->metrics, &hw, &e2e, &ratio);
	}
	for (int r = 0; r < jp->size; r++)
		if (jp->nhist[r])
			metrics_set_node_e2e(jp->metrics, host(jp, r), last_e2e(jp, r));
	metrics_set_nodes(jp->metrics, up, lost);
	rc = metrics_write(jp->metrics, jp->o->metrics);
	if (rc < 0) {
		static bool said;

		if (!said)
			LOG_ERR("cannot write the metrics file %s: %s", jp->o->metrics, strerror(-rc));
		said = true;
	}
}

/* One iteration complete on every node: history, policy, summary. */
static void
iteration(struct jobperf *jp, const struct perf_iter *it, const double *node_e2e, double now)
{
	struct perf_alert alerts[8];
	size_t n;

	for (int r = 0; r < jp->size; r++) {
		if (node_e2e && !isnan(node_e2e[r])) {
			jp->hist[(size_t)r * PERF_HIST + jp->nhist[r] % PERF_HIST] = node_e2e[r];
			jp->nhist[r]++;
		}
	}
	jp->last = *it;
	jp->have_iter = true;
	/* the node names by rank, looked up once each, O(1) */
	if (!jp->names[0])
		for (int r = 0; r < jp->size; r++)
			jp->names[r] = host(jp, r);
	n = perf_policy_feed(jp->policy, it, node_e2e, jp->names, alerts, 8);
	for (size_t k = 0; k < n; k++)
		take_alert(jp, &alerts[k]);
	if (jp->o->summary_s > 0 && now - jp->summary_last >= jp->o->summary_s) {
		jp->summary_last = now;
		jobperf_summary(jp);
	}
}

/* ---- the reductions ---------------------------------------------------------------- */

/* This node's next reduction: its window of iterations, as its rank. */
static int
reduce_start(struct jobperf *jp)
{
	int rc;

	/* No training here (horovod off the coordinator, a node left out):
	 * nothing to say, and no say in how far everyone is. */
	perf_pack(jp->trains ? jp->node : NULL, jp->base, PERF_WINDOW, jp->rank, jp->buf);
	for (size_t k = 0; k < PERF_WINDOW; k++) {
		double hw, e2e;

		jp->gather[k] = jp->trains &&
		        perf_node_get(jp->node, jp->base + 1 + k, &hw, &e2e) == 0 ? e2e : NAN;
	}
	rc = peer_reduce_start(jp->p, perf_combine, jp->buf, perf_buffer_len(PERF_WINDOW),
	                       jp->gather, PERF_WINDOW, &jp->red);
	if (rc == 0)
		jp->started++;
	return rc;
}

static void
give_up(struct jobperf *jp, const char *what)
{
	LOG_ERR("%s: performance detection stops", what);
	jp->broken = true;
}

/* The reduction in flight completed: take its iterations. */
static void
reduce_done(struct jobperf *jp, double now)
{
	const double *res = peer_reduce_result(jp->red);
	struct perf_iter its[PERF_WINDOW];
	size_t nb, n;

	perf_unpack(res, jp->base, PERF_WINDOW, perf_contributors(res), &nb, its, &n);
	if (jp->rank == 0) {
		const double *g = peer_reduce_gathered(jp->red);
		double *ne = calloc((size_t)jp->size, sizeof(*ne));

		for (size_t k = 0; ne && k < n; k++) {
			size_t slot = its[k].iter - jp->base - 1;

			for (int r = 0; r < jp->size; r++)
				ne[r] = g ? g[(size_t)r * PERF_WINDOW + slot] : NAN;
			iteration(jp, &its[k], ne, now);
		}
		free(ne);
	}
	jp->moving = nb > jp->base;
	if (nb > jp->base) {
		perf_node_forget(jp->node, nb);
		jp->base = nb;
	}
	peer_reduce_free(jp->red);
	jp->red = NULL;
}

long
jobperf_cycle(struct jobperf *jp, double now, bool ticking)
{
	int rc;

	if (jp->broken)
		return -1;
	if (jp->red) {
		rc = peer_reduce_test(jp->red);
		if (rc == 0)
			return 2;
		if (rc < 0) {
			give_up(jp, "the timing reduction failed");
			return -1;
		}
		reduce_done(jp, now);
	}
	/* The coordinator ticks while the job runs.  A training that prints
	 * no timing lines costs a reduction every ten intervals only (to
	 * learn whether the other nodes have some). */
	if (jp->rank == 0 && ticking && now - jp->last_tick >= jp->o->perf_interval_s &&
	    (perf_node_done(jp->node) > jp->base || jp->moving ||
	     now - jp->last_tick >= 10 * jp->o->perf_interval_s)) {
		jp->last_tick = now;
		if (jp->ops.tick)
			(void)jp->ops.tick(jp->ops.arg);
		jp->due++;
	}
	if (jp->started < jp->due && reduce_start(jp) < 0) {
		give_up(jp, "cannot start the timing reduction");
		return -1;
	}
	if (jp->red)
		return 2;
	if (jp->rank == 0 && ticking)
		return (long)(jp->o->perf_interval_s * 1000);
	return -1;
}

void
jobperf_final(struct jobperf *jp)
{
	if (jp->rank != 0 || jp->broken)
		return;
	/* due now, whatever the interval: the iterations printed since the
	 * last reduction are counted too */
	if (jp->ops.tick)
		(void)jp->ops.tick(jp->ops.arg);
	jp->due++;
	jp->last_tick = -1e300;
}

bool
jobperf_idle(const struct jobperf *jp)
{
	return jp->broken || (!jp->red && jp->started >= jp->due);
}

int
jobperf_cycles(const struct jobperf *jp)
{
	return jp->due;
}

bool
jobperf_broken(const struct jobperf *jp)
{
	return jp->broken;
}

void
jobperf_ticked(struct jobperf *jp)
{
	jp->due++;
}

void
jobperf_set_due(struct jobperf *jp, int cycles)
{
	if (cycles > jp->due)
		jp->due = cycles;
}

void
jobperf_set_trains(struct jobperf *jp, bool trains)
{
	jp->trains = trains;
}

void
jobperf_line(struct jobperf *jp, const char *line, size_t len)
{
	struct progress_line pl;

	if (progress_parse(line, len, &pl))
		perf_node_add(jp->node, &pl);
}

/* ---- the report ------------------------------------------------------------------- */

cJSON *
jobperf_report(const struct jobperf *jp)
{
	cJSON *perf = cJSON_CreateObject(), *pn;
	double worst = -1, *tmp = malloc(PERF_HIST * sizeof(*tmp));
	int slowest = -1;

	if (!perf || !tmp) {
		cJSON_Delete(perf);
		free(tmp);
		return NULL;
	}
	cJSON_AddNumberToObject(perf, "iterations", (double)jp->base);
	pn = cJSON_AddArrayToObject(perf, "nodes");
	for (int k = 0; pn && jp->nhist && k < jp->size; k++) {
		size_t n = jp->nhist[k] < PERF_HIST ? jp->nhist[k] : PERF_HIST;
		cJSON *x;
		double med;

		if (n == 0)
			continue;
		memcpy(tmp, jp->hist + (size_t)k * PERF_HIST, n * sizeof(double));
		med = median(tmp, n);
		x = cJSON_CreateObject();
		cJSON_AddStringToObject(x, "node", host(jp, k));
		cJSON_AddNumberToObject(x, "rank", k);
		cJSON_AddNumberToObject(x, "median_e2e_ms", med);
		cJSON_AddNumberToObject(x, "samples", (double)n);
		cJSON_AddItemToArray(pn, x);
		if (med > worst) {
			worst = med;
			slowest = k;
		}
	}
	free(tmp);
	if (slowest >= 0)
		cJSON_AddStringToObject(perf, "slowest_node", host(jp, slowest));
	else
		cJSON_AddNullToObject(perf, "slowest_node");
	cJSON_AddItemToObject(perf, "alerts", cJSON_Duplicate(jp->alerts, 1));
	if (jp->nalerts > ALERTS_KEPT)
		cJSON_AddNumberToObject(perf, "alerts_not_listed", (double)(jp->nalerts - ALERTS_KEPT));
	return perf;
}

/* ---- life ------------------------------------------------------------------------- */

struct jobperf *
jobperf_new(const struct run_opts *o, struct peer *p, int rank, int size,
            const struct jobperf_ops *ops, double now)
{
	struct jobperf *jp = calloc(1, sizeof(*jp));

	if (!jp)
		return NULL;
	jp->o = o;
	jp->p = p;
	jp->rank = rank;
	jp->size = size;
	jp->ops = *ops;
	jp->node = perf_node_new(PERF_WINDOW);
	jp->buf = calloc(perf_buffer_len(PERF_WINDOW), sizeof(double));
	jp->gather = calloc(PERF_WINDOW, sizeof(double));
	if (!jp->node || !jp->buf || !jp->gather || (rank == 0 && coordinator_init(jp, now) < 0)) {
		jobperf_free(jp);
		errno = ENOMEM;
		return NULL;
	}
	return jp;
}

bool
jobperf_notifying(const struct jobperf *jp)
{
	for (size_t i = 0; i < NOTIFIERS; i++)
		if (jp->notifiers[i] > 0 && kill(jp->notifiers[i], 0) == 0)
			return true;
	return false;
}

void
jobperf_free(struct jobperf *jp)
{
	if (!jp)
		return;
	for (size_t i = 0; i < NOTIFIERS; i++)
		if (jp->notifiers[i] > 0)
			(void)kill(-jp->notifiers[i], SIGTERM);  /* a notifier still hanging */
	if (!jp->red) {
		perf_node_free(jp->node);
		free(jp->buf);
		free(jp->gather);
	}
	/* else MPI may still read its buffers: left to the process exit */
	peer_reduce_free(jp->red);
	perf_policy_free(jp->policy);
	free(jp->names);
	free(jp->hist);
	free(jp->nhist);
	cJSON_Delete(jp->alerts);
	metrics_free(jp->metrics);
	free(jp);
}

struct metrics *
jobperf_metrics_store(struct jobperf *jp)
{
	return jp->metrics;
}
