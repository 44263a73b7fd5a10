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
#include "comm/peer.h"
#include "lib/json.h"
#include "lib/log.h"
#include "lib/util.h"
#include "perf/account.h"
#include "perf/jobperf.h"
#include "perf/metrics.h"
#include "perf/perf.h"
#include "perf/progress.h"
#include "perf/series.h"
#include "proc/notify.h"

#define PERF_SLOTS 64    /* groups of iterations per reduction */
#define NODE_SLOTS 1024  /* groups a node holds beyond the base before merging */
#define NOTIFIERS 16     /* --notify commands remembered, to let them finish at the end */
#define ALERTS_KEPT 64   /* alerts kept for the report (the rest are counted) */
#define ALERTS_PER_GROUP 8
/*
 * Testing a reduction in flight: every node joins it when it notices the
 * coordinator's tick, which an idle node's loop looks for every 80 ms
 * (run.c), so testing much sooner than that only costs wakeups (MPI's
 * progress engine, tens of microseconds each): soon at first, then less
 * often the longer it takes.
 */
#define POLL_MIN_MS 10
#define POLL_MAX_MS 40
/*
 * The --metrics file: rewritten every METRICS_INTERVAL_S at most, and
 * never sooner than METRICS_SLOWDOWN times the last write took, so that
 * writing it costs the coordinator at most 1/METRICS_SLOWDOWN of its time
 * (bench_coord: at 10,000 nodes of 8 boards a round of their usage notes
 * and the rewrite take 0.55 s).
 */
#define METRICS_INTERVAL_S 1.0
#define METRICS_SLOWDOWN 20.0
#define KEY_EPOCH (1ul << 20)  /* reductions per attempt told apart */

struct jobperf {
	const struct run_opts *o;
	struct peer *p;
	int rank, size;
	struct jobperf_ops ops;
	bool trains;
	bool broken;

	/*
	 * This node's iterations; in Horovod mode, those of the other
	 * ranks' processes that the inner mpirun runs from here, told
	 * apart by its tag ([1,P]<stdout>:), each as its rank's.
	 */
	struct perf_node *node;
	struct perf_node **virt;   /* by rank, NULL where none */
	double **vgather;          /* by rank: its e2e per group, for the coordinator */
	int *proc_rank;            /* the rank of each process of the inner mpirun */
	size_t nprocs;

	/* the reductions of this attempt (epoch) */
	int epoch;
	int *group;                /* epoch > 0: the ranks reducing; NULL: MPI_COMM_WORLD */
	int ngroup;
	bool in_group;
	int started, due;          /* reductions of this epoch */
	bool synced;               /* its first reduction agreed on the base */
	bool moving;               /* the last reduction found new iterations */
	struct perf_layout layout;
	struct peer_reduce *red;   /* one at a time */
	double red_since;
	size_t base;               /* iterations reported everywhere */
	double *buf, *tmp, *gather;

	/* the coordinator */
	double last_tick;
	bool finishing;            /* reductions at the end, until nothing is left */
	struct perf_policy *policy;
	const char **names;        /* node names by rank, for the policy's messages */
	double *ne;                /* scratch: every rank's e2e for one group */
	struct perf_iter last;
	bool have_iter;
	double summary_last;
	struct perf_sketch *sketch;  /* per rank: e2e times, for the report's medians */
	struct perf_series *series;  /* per rank: e2e over the iterations, bounded (series.h) */
	struct perf_account account; /* where the iteration time went (account.h) */
	double *acc_scratch;       /* per rank: the account's selection */
	double *last_e2e;          /* per rank, NaN until known */
	double *samples;           /* per rank: iterations with a value */
	size_t max_group;          /* the most iterations compared as one */
	double approx;             /* node-iterations compared from merged slots */
	size_t passed;             /* iterations no node had */
	cJSON *alerts;             /* the first ALERTS_KEPT alerts, for the report */
	size_t nalerts;
	struct metrics *metrics;
	double metrics_last;
	double metrics_gap;        /* seconds to the next rewrite (jobperf_metrics_gap()) */
	pid_t notifiers[NOTIFIERS];
};

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
	size_t n = (size_t)jp->size;

	jp->policy = perf_policy_new(&po, jp->size);
	jp->names = calloc(n, sizeof(*jp->names));
	jp->ne = calloc(n, sizeof(*jp->ne));
	jp->sketch = calloc(n, sizeof(*jp->sketch));
	jp->last_e2e = calloc(n, sizeof(*jp->last_e2e));
	jp->samples = calloc(n, sizeof(*jp->samples));
	jp->series = perf_series_new(jp->size, perf_series_cap(jp->size));
	jp->acc_scratch = calloc(n, sizeof(*jp->acc_scratch));
	perf_account_init(&jp->account);
	jp->alerts = cJSON_CreateArray();
	if (jp->o->metrics)
		jp->metrics = metrics_new();
	jp->metrics_gap = METRICS_INTERVAL_S;
	if (!jp->policy || !jp->names || !jp->ne || !jp->sketch || !jp->last_e2e ||
	    !jp->samples || !jp->series || !jp->acc_scratch || !jp->alerts || (jp->o->metrics && !jp->metrics))
		return -ENOMEM;
	for (size_t r = 0; r < n; r++)
		jp->last_e2e[r] = NAN;
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
	if (it->first != it->iter)
		cJSON_AddNumberToObject(d, "first", (double)it->first);
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
		if (!isnan(jp->last_e2e[r]))
			cJSON_AddNumberToObject(ne, host(jp, r), jp->last_e2e[r]);
	event(jp, jp->rank, VIGIL_EVENT_PERF, VIGIL_SEVERITY_INFO, msg, d);
}

/* Member F of point K of a series' JSON ([first, last, ms]); 0 without one. */
static double
point_field(const cJSON *pts, int k, int f)
{
	const cJSON *v = k >= 0 ? cJSON_GetArrayItem(cJSON_GetArrayItem(pts, k), f) : NULL;

	return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

void
jobperf_series(struct jobperf *jp)
{
	for (int r = 0; jp->rank == 0 && r < jp->size; r++) {
		cJSON *d, *pts = perf_series_json(jp->series, r);
		int n = pts ? cJSON_GetArraySize(pts) : 0;
		double from = point_field(pts, 0, 0), to = point_field(pts, n - 1, 1);
		char msg[160];

		if (n == 0 || !(d = cJSON_CreateObject())) {
			cJSON_Delete(pts);
			continue;
		}
		snprintf(msg, sizeof(msg), "e2e over iterations %.0f to %.0f: %d point%s", from, to, n,
		         util_plural(n));
		cJSON_AddNumberToObject(d, "groups_per_point", (double)perf_series_stride(jp->series));
		cJSON_AddItemToObject(d, "points", pts);
		event(jp, r, VIGIL_EVENT_SERIES, VIGIL_SEVERITY_INFO, msg, d);
	}
}

void
jobperf_account(struct jobperf *jp, const char *chain, double started, double alloc_start,
                double alloc_eligible)
{
	cJSON *d;
	char msg[160];

	if (jp->rank != 0 || !(d = perf_account_json(&jp->account)))
		return;
	if ((chain && !cJSON_AddStringToObject(d, "chain", chain)) ||
	    !cJSON_AddNumberToObject(d, "started", started) ||
	    (alloc_start > 0 && !cJSON_AddNumberToObject(d, "allocation_started", alloc_start)) ||
	    (alloc_eligible > 0 &&
	     !cJSON_AddNumberToObject(d, "allocation_eligible", alloc_eligible))) {
		cJSON_Delete(d);
		return;
	}
	snprintf(msg, sizeof(msg), "iterations: %zu, %.3f s at the median pace, %.3f s waiting "
	         "for the slowest node", jp->account.iterations, jp->account.median_ms / 1000,
	         (jp->account.max_ms - jp->account.median_ms) / 1000);
	event(jp, 0, VIGIL_EVENT_ACCOUNT, VIGIL_SEVERITY_INFO, msg, d);
}

double
jobperf_metrics_gap(double took_s)
{
	double gap = METRICS_SLOWDOWN * took_s;

	return gap > METRICS_INTERVAL_S ? gap : METRICS_INTERVAL_S;
}

bool
jobperf_metrics_due(const struct jobperf *jp, bool force, double now)
{
	return jp->metrics && (force || now - jp->metrics_last >= jp->metrics_gap);
}

void
jobperf_metrics(struct jobperf *jp, const char *state, unsigned up, unsigned lost, bool force,
                double now)
{
	const struct perf_iter *it = &jp->last;
	double t0;
	int rc;

	if (!jobperf_metrics_due(jp, force, now))
		return;
	jp->metrics_last = now;
	t0 = util_now_s();
	metrics_set_state(jp->metrics, state);
	metrics_set_iterations(jp->metrics, jp->base);
	metrics_set_account(jp->metrics, jp->account.median_ms / 1000,
	                    (jp->account.max_ms - jp->account.median_ms) / 1000);
	if (jp->have_iter) {
		struct metrics_stats hw = { it->hw_min, it->hw_mean, it->hw_max };
		struct metrics_stats e2e = { it->e2e_min, it->e2e_mean, it->e2e_max };
		struct metrics_stats ratio = { it->r_min, it->r_mean, it->r_max };

		metrics_set_iteration(jp->metrics, &hw, &e2e, &ratio);
	}
	for (int r = 0; r < jp->size; r++)
		if (!isnan(jp->last_e2e[r]))
			metrics_set_node_e2e(jp->metrics, host(jp, r), jp->last_e2e[r]);
	metrics_set_nodes(jp->metrics, up, lost);
	rc = metrics_write(jp->metrics, jp->o->metrics);
	jp->metrics_gap = jobperf_metrics_gap(util_now_s() - t0);
	if (rc < 0) {
		static bool said;

		if (!said)
			LOG_ERR("cannot write the metrics file %s: %s", jp->o->metrics, strerror(-rc));
		said = true;
	}
}

/* One group of iterations, over the nodes that have it: medians, policy, summary. */
static void
iteration(struct jobperf *jp, const struct perf_iter *it, const double *node_e2e, double now)
{
	struct perf_alert alerts[ALERTS_PER_GROUP];
	size_t n, width = it->iter - it->first + 1;

	for (int r = 0; node_e2e && r < jp->size; r++) {
		if (!isfinite(node_e2e[r]) || node_e2e[r] <= 0)
			continue;
		perf_sketch_add(&jp->sketch[r], node_e2e[r],
		                width > UINT32_MAX ? UINT32_MAX : (uint32_t)width);
		jp->samples[r] += (double)width;
		jp->last_e2e[r] = node_e2e[r];
	}
	if (node_e2e) {
		perf_series_add(jp->series, it->first, it->iter, node_e2e);
		perf_account_group(&jp->account, width, node_e2e, (size_t)jp->size, jp->acc_scratch);
	}
	if (width > jp->max_group)
		jp->max_group = width;
	jp->last = *it;
	jp->have_iter = true;
	/* the node names by rank, looked up once each, O(1) */
	if (!jp->names[0])
		for (int r = 0; r < jp->size; r++)
			jp->names[r] = host(jp, r);
	n = perf_policy_feed(jp->policy, it, node_e2e, jp->names, alerts, ALERTS_PER_GROUP);
	for (size_t k = 0; k < n; k++)
		take_alert(jp, &alerts[k]);
	if (jp->o->summary_s > 0 && now - jp->summary_last >= jp->o->summary_s) {
		jp->summary_last = now;
		jobperf_summary(jp);
	}
}

/* ---- the reductions ---------------------------------------------------------------- */

/* The furthest any of this node's stores got (for the coordinator's ticks). */
static size_t
local_done(const struct jobperf *jp)
{
	size_t done = jp->trains ? perf_node_done(jp->node) : 0;

	for (int r = 0; jp->virt && r < jp->size; r++) {
		size_t d = jp->virt[r] ? perf_node_done(jp->virt[r]) : 0;

		if (d > done)
			done = d;
	}
	return done;
}

/* This node's next reduction: its groups of iterations, as its rank (and its virtual ranks'). */
static int
reduce_start(struct jobperf *jp)
{
	size_t len = perf_buffer_len(PERF_SLOTS);
	int rc;

	/* No training here (horovod off the coordinator, a node left out):
	 * nothing to say, and no say in how far everyone is. */
	perf_pack(jp->trains ? jp->node : NULL, &jp->layout, jp->base, jp->rank, jp->buf,
	          jp->gather);
	for (int r = 0; jp->virt && r < jp->size; r++) {
		if (!jp->virt[r])
			continue;
		perf_pack(jp->virt[r], &jp->layout, jp->base, r, jp->tmp, jp->vgather[r]);
		perf_combine(jp->tmp, jp->buf, len);
	}
	if (!jp->group)
		rc = peer_reduce_start(jp->p, perf_combine, jp->buf, len, jp->gather, PERF_SLOTS,
		                       &jp->red);
	else
		rc = peer_reduce_start_among(jp->p, jp->group, jp->ngroup,
		                             (unsigned long)jp->epoch * KEY_EPOCH +
		                             (unsigned long)jp->started % KEY_EPOCH,
		                             perf_combine, jp->buf, len, jp->gather, PERF_SLOTS,
		                             &jp->red);
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

static void
stores_forget(struct jobperf *jp, const struct perf_header *h)
{
	perf_node_forget(jp->node, jp->base);
	perf_node_observe(jp->node, h);
	for (int r = 0; jp->virt && r < jp->size; r++) {
		if (jp->virt[r]) {
			perf_node_forget(jp->virt[r], jp->base);
			perf_node_observe(jp->virt[r], h);
		}
	}
}

/* Coordinator: every group of iterations the reduction completed. */
static void
take_groups(struct jobperf *jp, const struct perf_iter *its, size_t n, size_t old_base,
            double now)
{
	const double *g = peer_reduce_gathered(jp->red);
	int rows = g ? peer_size(jp->p) : 0;
	size_t covered = 0;

	for (size_t k = 0; k < n; k++) {
		size_t slot = its[k].slot;

		for (int r = 0; r < jp->size; r++) {
			if (jp->virt && jp->virt[r])
				jp->ne[r] = jp->vgather[r][slot];
			else
				jp->ne[r] = r < rows ? g[(size_t)r * PERF_SLOTS + slot] : NAN;
		}
		iteration(jp, &its[k], jp->ne, now);
		covered += its[k].iter - its[k].first + 1;
	}
	jp->passed += jp->base - old_base - covered;
}

/* The reduction in flight completed: take its groups of iterations. */
static void
reduce_done(struct jobperf *jp, double now)
{
	const double *res = peer_reduce_result(jp->red);
	struct perf_iter its[PERF_SLOTS];
	struct perf_header h;
	size_t n = 0, old = jp->base;

	perf_header_read(res, &h);
	if (!jp->synced) {
		/* The first of an attempt: the groups may not line up (a node
		 * may have missed the last result before a restart); only the
		 * header counts, and from it every node starts alike. */
		jp->synced = true;
		if (h.max_base > jp->base)
			jp->base = h.max_base;
		perf_layout_init(&jp->layout, PERF_SLOTS, jp->base);
	} else {
		perf_unpack(res, &jp->layout, &jp->base, its, &n);
		if (jp->rank == 0) {
			jp->approx += h.approx;
			take_groups(jp, its, n, old, now);
		}
	}
	stores_forget(jp, &h);
	perf_layout_next(&jp->layout, &h, jp->base);
	jp->moving = jp->base > old;
	peer_reduce_free(jp->red);
	jp->red = NULL;
	/* At the end: once more while every node has iterations not yet
	 * reported (the last group beyond the previous target, or the
	 * first data after the agreeing reduction). */
	if (jp->rank == 0 && jp->finishing && h.says > 0 && h.min_done > jp->base &&
	    jp->due == jp->started) {
		if (jp->ops.tick)
			(void)jp->ops.tick(jp->ops.arg);
		jp->due++;
	}
}

/* How soon to test a reduction in flight again: soon, then less often. */
static long
poll_ms(const struct jobperf *jp, double now)
{
	long ms = (long)((now - jp->red_since) * 1000 / 2);

	return ms < POLL_MIN_MS ? POLL_MIN_MS : ms > POLL_MAX_MS ? POLL_MAX_MS : ms;
}

/* Coordinator: a new reduction is due. */
static bool
tick_due(struct jobperf *jp, double now)
{
	double since = now - jp->last_tick, every = jp->o->perf_interval_s;
	size_t done, ahead;

	if (since < every / 4)
		return false;  /* (the stores are not looked at on every turn) */
	done = local_done(jp);
	ahead = done > jp->base ? done - jp->base : 0;
	/* Every interval while there is something to reduce (a training that
	 * prints no timing lines costs a reduction every ten intervals, to
	 * learn whether the other nodes have some); sooner, down to a quarter
	 * of it, when iterations come faster than the slots hold one by one. */
	if (since >= every)
		return ahead > 0 || jp->moving || !jp->synced || since >= 10 * every;
	return since >= every / 4 && ahead >= (PERF_SLOTS - 1) / 3;
}

/*
 * Coordinator: how soon tick_due() may say yes without anything happening
 * meanwhile: at the next of its thresholds (a quarter interval, one, ten).
 * Between them only new timing lines can make a tick due, and a line
 * wakes the loop itself (it is read from the training's output), so
 * looking on a short timer there only costs wakeups: with a training that
 * prints no timing lines, 100 a second for all but a quarter of each
 * interval.
 */
static long
next_tick_ms(const struct jobperf *jp, double now)
{
	double since = now - jp->last_tick, every = jp->o->perf_interval_s, at;

	at = since < every / 4 ? every / 4 : since < every ? every : 10 * every;
	return at > since ? (long)((at - since) * 1000) + 1 : POLL_MIN_MS;
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
			return poll_ms(jp, now);
		if (rc < 0) {
			give_up(jp, "the timing reduction failed");
			return -1;
		}
		reduce_done(jp, now);
	}
	if (jp->rank == 0 && ticking && tick_due(jp, now)) {
		jp->last_tick = now;
		if (jp->ops.tick)
			(void)jp->ops.tick(jp->ops.arg);
		jp->due++;
	}
	if (!jp->in_group) {
		/* left out of this attempt: the others reduce without it */
		jp->started = jp->due;
		return -1;
	}
	if (jp->started < jp->due) {
		rc = reduce_start(jp);
		if (rc == -EAGAIN)
			return POLL_MAX_MS;  /* the survivors' communicator is not made yet */
		if (rc < 0) {
			give_up(jp, "cannot start the timing reduction");
			return -1;
		}
		jp->red_since = now;
	}
	if (jp->red)
		return POLL_MIN_MS;
	if (jp->rank == 0 && ticking)
		return next_tick_ms(jp, now);
	return -1;
}

void
jobperf_final(struct jobperf *jp)
{
	if (jp->rank != 0 || jp->broken)
		return;
	/* due now, whatever the interval: the iterations printed since the
	 * last reduction are counted too (and reduce_done() asks for one
	 * more while some are left) */
	if (jp->ops.tick)
		(void)jp->ops.tick(jp->ops.arg);
	jp->due++;
	jp->finishing = true;
	jp->last_tick = -1e300;
}

bool
jobperf_idle(const struct jobperf *jp)
{
	return jp->broken || !jp->in_group || (!jp->red && jp->started >= jp->due);
}

double
jobperf_reduction_age(const struct jobperf *jp, double now)
{
	return jp->red && !jp->broken ? now - jp->red_since : -1;
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
	/* The coordinator's count is the one: a reduction beyond it (a
	 * tick counted in another attempt than the coordinator counted it,
	 * around a restart) would wait for it forever. */
	if (jp->started > cycles && jp->red) {
		peer_reduce_free(jp->red);
		jp->red = NULL;
	}
	jp->due = cycles;
	if (jp->started > cycles)
		jp->started = cycles;
}

void
jobperf_set_trains(struct jobperf *jp, bool trains)
{
	jp->trains = trains;
}

/* A new attempt: its reductions among the coordinator and the members. */
static int
new_epoch(struct jobperf *jp, const struct jobperf_attempt *a)
{
	int *g = calloc((size_t)a->nmembers + 1, sizeof(*g)), n = 0;

	if (!g)
		return -ENOMEM;
	/* ascending, the coordinator first, once each */
	for (int r = 0; r < jp->size; r++) {
		bool in = r == 0;

		for (int i = 0; !in && i < a->nmembers; i++)
			in = a->members[i] == r;
		if (in)
			g[n++] = r;
	}
	/* Whatever is in flight belongs to the attempt before: given up
	 * (a lost node would never join it).  Iterations not reported yet
	 * stay, to be reported among the survivors. */
	peer_reduce_free(jp->red);
	jp->red = NULL;
	free(jp->group);
	jp->group = g;
	jp->ngroup = n;
	jp->in_group = false;
	for (int i = 0; i < n; i++)
		jp->in_group = jp->in_group || g[i] == jp->rank;
	jp->epoch = a->attempt;
	jp->started = jp->due = 0;
	jp->synced = false;
	perf_node_restart(jp->node);
	for (int r = 0; jp->virt && r < jp->size; r++)
		if (jp->virt[r])
			perf_node_restart(jp->virt[r]);
	return 0;
}

/* Horovod: the rank of each process of the inner mpirun (-map-by slot). */
static int
set_procs(struct jobperf *jp, const struct jobperf_attempt *a)
{
	size_t n = 0, k = 0;
	int *pr;

	free(jp->proc_rank);
	jp->proc_rank = NULL;
	jp->nprocs = 0;
	if (!a->procs)
		return 0;
	for (int i = 0; i < a->nmembers; i++)
		n += a->procs[i] > 0 ? (size_t)a->procs[i] : 0;
	pr = calloc(n ? n : 1, sizeof(*pr));
	if (!pr)
		return -ENOMEM;
	for (int i = 0; i < a->nmembers; i++)
		for (int s = 0; s < a->procs[i]; s++)
			pr[k++] = a->members[i];
	/* the virtual ranks' stores first: no process counted without them */
	if (!jp->virt)
		jp->virt = calloc((size_t)jp->size, sizeof(*jp->virt));
	if (!jp->vgather)
		jp->vgather = calloc((size_t)jp->size, sizeof(*jp->vgather));
	if (!jp->virt || !jp->vgather) {
		free(pr);
		return -ENOMEM;
	}
	jp->proc_rank = pr;
	jp->nprocs = n;
	return 0;
}

int
jobperf_set_attempt(struct jobperf *jp, const struct jobperf_attempt *a)
{
	int rc = 0;

	if (a->attempt != jp->epoch)
		rc = new_epoch(jp, a);
	if (rc == 0)
		rc = set_procs(jp, a);
	jp->trains = a->trains;
	return rc;
}

/*
 * The process of Open MPI's tag ("J,P", perhaps followed by nested tags)
 * as a rank of the job, or -1.
 */
static int
tagged_rank(const struct jobperf *jp, const char *key)
{
	const char *p = key;
	size_t proc = 0;

	while (*p >= '0' && *p <= '9')
		p++;
	if (p == key || *p++ != ',' || *p < '0' || *p > '9')
		return -1;
	for (; *p >= '0' && *p <= '9'; p++) {
		proc = proc * 10 + (size_t)(*p - '0');
		if (proc >= jp->nprocs)
			return -1;
	}
	if (*p && *p != '/')
		return -1;
	return jp->proc_rank[proc];
}

/* The store of RANK's processes on this node, made on first use. */
static struct perf_node *
virtual_store(struct jobperf *jp, int rank)
{
	if (rank == jp->rank || rank < 0 || rank >= jp->size)
		return jp->node;
	if (!jp->virt[rank]) {
		jp->virt[rank] = perf_node_new(NODE_SLOTS);
		jp->vgather[rank] = calloc(PERF_SLOTS, sizeof(double));
		if (!jp->virt[rank] || !jp->vgather[rank]) {
			perf_node_free(jp->virt[rank]);
			free(jp->vgather[rank]);
			jp->virt[rank] = NULL;
			jp->vgather[rank] = NULL;
			return jp->node;
		}
		for (size_t k = 0; k < PERF_SLOTS; k++)
			jp->vgather[rank][k] = NAN;
	}
	return jp->virt[rank];
}

void
jobperf_line(struct jobperf *jp, const char *line, size_t len)
{
	struct progress_line pl;
	struct perf_node *store;

	if (!progress_parse(line, len, &pl))
		return;
	store = jp->nprocs > 0 && pl.key[0] ? virtual_store(jp, tagged_rank(jp, pl.key)) : jp->node;

	perf_node_add(store, &pl);
	/* the coordinator's own training dates the iterations (account.h) */
	if (jp->rank == 0 && store == jp->node)
		perf_account_line(&jp->account, util_wall_s(), pl.e2e_ms);
}

/* ---- the report ------------------------------------------------------------------- */

cJSON *
jobperf_report(const struct jobperf *jp)
{
	cJSON *perf = cJSON_CreateObject(), *pn, *detail;
	double worst = -1;
	int slowest = -1;

	if (!perf)
		return NULL;
	cJSON_AddNumberToObject(perf, "iterations", (double)jp->base);
	detail = cJSON_AddObjectToObject(perf, "detail");
	if (detail) {
		cJSON_AddNumberToObject(detail, "series_groups_per_point",
		                        (double)perf_series_stride(jp->series));
		cJSON_AddNumberToObject(detail, "max_group", (double)jp->max_group);
		cJSON_AddNumberToObject(detail, "approximated", jp->approx);
		cJSON_AddNumberToObject(detail, "not_compared", (double)jp->passed);
	}
	pn = cJSON_AddArrayToObject(perf, "nodes");
	for (int k = 0; pn && jp->sketch && k < jp->size; k++) {
		double med = perf_sketch_median(&jp->sketch[k]);
		cJSON *x;

		if (isnan(med))
			continue;
		x = cJSON_CreateObject();
		cJSON_AddStringToObject(x, "node", host(jp, k));
		cJSON_AddNumberToObject(x, "rank", k);
		cJSON_AddNumberToObject(x, "median_e2e_ms", med);
		cJSON_AddNumberToObject(x, "samples", jp->samples[k]);
		cJSON_AddItemToObject(x, "e2e_series", perf_series_json(jp->series, k));
		cJSON_AddItemToArray(pn, x);
		if (med > worst) {
			worst = med;
			slowest = k;
		}
	}
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
	size_t len = perf_buffer_len(PERF_SLOTS);

	if (!jp)
		return NULL;
	jp->o = o;
	jp->p = p;
	jp->rank = rank;
	jp->size = size;
	jp->ops = *ops;
	jp->in_group = true;
	perf_layout_init(&jp->layout, PERF_SLOTS, 0);
	jp->node = perf_node_new(NODE_SLOTS);
	jp->buf = calloc(len, sizeof(double));
	jp->tmp = calloc(len, sizeof(double));
	jp->gather = calloc(PERF_SLOTS, sizeof(double));
	if (!jp->node || !jp->buf || !jp->tmp || !jp->gather ||
	    (rank == 0 && coordinator_init(jp, now) < 0)) {
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
	/* peer.c keeps what MPI may still read or write */
	peer_reduce_free(jp->red);
	perf_node_free(jp->node);
	for (int r = 0; jp->virt && r < jp->size; r++) {
		perf_node_free(jp->virt[r]);
		free(jp->vgather[r]);
	}
	free(jp->virt);
	free(jp->vgather);
	free(jp->proc_rank);
	free(jp->group);
	free(jp->buf);
	free(jp->tmp);
	free(jp->gather);
	perf_policy_free(jp->policy);
	free(jp->names);
	free(jp->ne);
	free(jp->sketch);
	free(jp->last_e2e);
	free(jp->samples);
	perf_series_free(jp->series);
	free(jp->acc_scratch);
	cJSON_Delete(jp->alerts);
	metrics_free(jp->metrics);
	free(jp);
}

struct metrics *
jobperf_metrics_store(struct jobperf *jp)
{
	return jp->metrics;
}
