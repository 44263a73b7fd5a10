/*
 * jobperf.c - performance detection in `vigil run` (the platform's
 * 性能检测): the reductions of every node's timing lines, in lock step,
 * the coordinator's policy, alerts, summary line and metrics file.
 */
#include "autoconf.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cJSON.h>

#include "vigil.h"
#include "log.h"
#include "metrics.h"
#include "notify.h"
#include "peer.h"
#include "job.h"

/* ---- performance detection ---------------------------------------------- */

/*
 * Reductions run in lock step: the coordinator starts one every
 * --perf-interval once its previous one completed (so every node had
 * joined it), and tells the others ("perf" ticks); a node starts one per
 * tick, in order, after its previous one.  Every node thus starts the same
 * reductions, a stalled node only holds the next one back, and at the end
 * FINAL says how many there were, so each node can finish them before
 * MPI_Finalize.
 */

double
jobperf_median(double *v, size_t n)
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

/* --notify: the alert as JSON on the command's stdin; never waits for it. */
static void
notify_alert(struct job *j, const char *json)
{
	pid_t pid;
	int rc = notify_spawn(j->o->notify, json, &pid);
	size_t n = sizeof(j->notifiers) / sizeof(j->notifiers[0]);

	if (rc < 0) {
		LOG_ERR("cannot run the notifier '%s': %s", j->o->notify, strerror(-rc));
		return;
	}
	/* remembered so that one still running at the end can be stopped */
	for (size_t i = 0; i < n; i++) {
		if (j->notifiers[i] <= 0 || kill(j->notifiers[i], 0) < 0) {
			j->notifiers[i] = pid;
			return;
		}
	}
}

/* --metrics: the current figures, rewritten at most once a second. */
void
jobperf_metrics(struct job *j, bool force)
{
	const struct perf_iter *it = &j->last_iter;
	unsigned up = 0, lost = 0;
	int rc;

	if (!j->metrics || (!force && job_now() - j->metrics_last < 1))
		return;
	j->metrics_last = job_now();
	metrics_set_state(j->metrics, j->finished ? coord_state(j) : VIGIL_STATE_RUNNING);
	metrics_set_iterations(j->metrics, j->perf_base);
	if (j->have_iter) {
		struct metrics_stats hw = { it->hw_min, it->hw_mean, it->hw_max };
		struct metrics_stats e2e = { it->e2e_min, it->e2e_mean, it->e2e_max };
		struct metrics_stats ratio = { it->r_min, it->r_mean, it->r_max };

		metrics_set_iteration(j->metrics, &hw, &e2e, &ratio);
	}
	for (int r = 0; r < j->size; r++) {
		if (j->results[r].lost)
			lost++;
		else
			up++;
		if (j->nhist && j->nhist[r])
			metrics_set_node_e2e(j->metrics, coord_host(j, r),
			        j->hist[(size_t)r * PERF_HIST + (j->nhist[r] - 1) % PERF_HIST]);
	}
	metrics_set_nodes(j->metrics, up, lost);
	rc = metrics_write(j->metrics, j->o->metrics);
	if (rc < 0) {
		static bool said;

		if (!said)
			LOG_ERR("cannot write the metrics file %s: %s", j->o->metrics, strerror(-rc));
		said = true;
	}
}

static void
perf_alert(struct job *j, const struct perf_alert *a)
{
	cJSON *d = cJSON_CreateObject(), *copy;
	char *text;

	cJSON_AddStringToObject(d, "kind", a->kind);
	cJSON_AddNumberToObject(d, "iter", (double)a->iter);
	cJSON_AddStringToObject(d, "node", coord_host(j, a->rank));
	cJSON_AddNumberToObject(d, "rank", a->rank);
	cJSON_AddNumberToObject(d, "value", a->value);
	cJSON_AddStringToObject(d, "message", a->message);
	copy = cJSON_Duplicate(d, 1);
	if (copy)
		cJSON_AddItemToArray(j->alerts, copy);
	if (j->metrics)
		metrics_add_alert(j->metrics, a->kind);
	log_say("vigil: performance alert: %s\n", a->message);
	text = cJSON_PrintUnformatted(d);
	if (text && j->o->notify)
		notify_alert(j, text);
	free(text);
	job_event(j, coord_host(j, a->rank), a->rank, VIGIL_EVENT_ALERT, VIGIL_SEVERITY_WARNING,
	           a->message, d);
	if (j->o->perf_reschedule && !j->finishing) {
		char why[400];

		/* reschedule: save and requeue away from the node named */
		snprintf(why, sizeof(why), "performance: %.300s", a->message);
		j->faulty[a->rank] = true;
		coord_checkpoint(j, why, VIGIL_EXIT_REQUEUE);
	}
}

void
jobperf_summary(struct job *j)
{
	const struct perf_iter *it = &j->last_iter;
	cJSON *d = cJSON_CreateObject(), *ne;
	char msg[512];

	snprintf(msg, sizeof(msg), "iter %zu  e2e %.0f ms (min %.0f %s, max %.0f %s)  "
	         "hw/e2e %.2f (min %.2f %s)", it->iter, it->e2e_mean, it->e2e_min,
	         coord_host(j, it->e2e_min_rank), it->e2e_max, coord_host(j, it->e2e_max_rank),
	         it->r_mean, it->r_min, coord_host(j, it->r_min_rank));
	log_say("vigil: %s\n", msg);
	cJSON_AddNumberToObject(d, "iter", (double)it->iter);
	cJSON_AddNumberToObject(d, "e2e_min", it->e2e_min);
	cJSON_AddNumberToObject(d, "e2e_mean", it->e2e_mean);
	cJSON_AddNumberToObject(d, "e2e_max", it->e2e_max);
	cJSON_AddStringToObject(d, "e2e_min_node", coord_host(j, it->e2e_min_rank));
	cJSON_AddStringToObject(d, "e2e_max_node", coord_host(j, it->e2e_max_rank));
	cJSON_AddNumberToObject(d, "hw_mean", it->hw_mean);
	cJSON_AddNumberToObject(d, "r_min", it->r_min);
	cJSON_AddNumberToObject(d, "r_mean", it->r_mean);
	cJSON_AddNumberToObject(d, "r_max", it->r_max);
	cJSON_AddStringToObject(d, "r_min_node", coord_host(j, it->r_min_rank));
	cJSON_AddStringToObject(d, "r_max_node", coord_host(j, it->r_max_rank));
	ne = cJSON_AddObjectToObject(d, "node_e2e");
	for (int r = 0; ne && r < j->size; r++)
		if (j->nhist[r])
			cJSON_AddNumberToObject(ne, coord_host(j, r),
			        j->hist[(size_t)r * PERF_HIST + (j->nhist[r] - 1) % PERF_HIST]);
	job_event(j, j->node, j->rank, VIGIL_EVENT_PERF, VIGIL_SEVERITY_INFO, msg, d);
}

/* Coordinator: one iteration complete on every node. */
static void
perf_iteration(struct job *j, const struct perf_iter *it, const double *node_e2e)
{
	const char *names[256];
	struct perf_alert alerts[8];
	size_t n;

	for (int r = 0; r < j->size; r++) {
		if (node_e2e && !isnan(node_e2e[r])) {
			j->hist[(size_t)r * PERF_HIST + j->nhist[r] % PERF_HIST] = node_e2e[r];
			j->nhist[r]++;
		}
		if (r < 256)
			names[r] = coord_host(j, r);
	}
	j->last_iter = *it;
	j->have_iter = true;
	n = perf_policy_feed(j->policy, it, node_e2e, j->size <= 256 ? names : NULL, alerts, 8);
	for (size_t k = 0; k < n; k++)
		perf_alert(j, &alerts[k]);
	if (j->o->summary_s > 0 && job_now() - j->summary_last >= j->o->summary_s) {
		j->summary_last = job_now();
		jobperf_summary(j);
	}
	jobperf_metrics(j, false);
}

/* Start this node's next reduction: its window of iterations, as rank RANK. */
static int
perf_start(struct job *j)
{
	bool contributes = j->member && j->launch.run;
	int rc;

	/* No training here (horovod off the coordinator, a node left out):
	 * nothing to say, and no say in how far everyone is. */
	perf_pack(contributes ? j->perf : NULL, j->perf_base, PERF_WINDOW, j->rank, j->red_buf);
	for (size_t k = 0; k < PERF_WINDOW; k++) {
		double hw, e2e;

		j->red_gather[k] = contributes &&
		        perf_node_get(j->perf, j->perf_base + 1 + k, &hw, &e2e) == 0 ? e2e : NAN;
	}
	rc = peer_reduce_start(j->p, perf_combine, j->red_buf, perf_buffer_len(PERF_WINDOW),
	                       j->red_gather, PERF_WINDOW, &j->red);
	if (rc == 0)
		j->cycles_started++;
	return rc;
}

/* Once per loop turn: finish the reduction in flight, start the next one. */
void
jobperf_cycle(struct job *j)
{
	int rc;

	if (!j->perf)
		return;
	if (j->red) {
		const double *res;
		struct perf_iter its[PERF_WINDOW];
		size_t nb, n;

		rc = peer_reduce_test(j->red);
		if (rc == 0)
			return;
		if (rc < 0) {
			LOG_ERR("the timing reduction failed: performance detection stops");
			perf_node_free(j->perf);
			j->perf = NULL;
			return;
		}
		res = peer_reduce_result(j->red);
		perf_unpack(res, j->perf_base, PERF_WINDOW, perf_contributors(res), &nb, its, &n);
		if (j->rank == 0) {
			const double *g = peer_reduce_gathered(j->red);
			double *ne = calloc((size_t)j->size, sizeof(*ne));

			for (size_t k = 0; ne && k < n; k++) {
				size_t slot = its[k].iter - j->perf_base - 1;

				for (int r = 0; r < j->size; r++)
					ne[r] = g ? g[(size_t)r * PERF_WINDOW + slot] : NAN;
				perf_iteration(j, &its[k], ne);
			}
			free(ne);
		}
		j->perf_moving = nb > j->perf_base;
		if (nb > j->perf_base) {
			perf_node_forget(j->perf, nb);
			j->perf_base = nb;
		}
		peer_reduce_free(j->red);
		j->red = NULL;
	}
	/* the coordinator ticks while the job runs; after FINAL the others
	 * still catch up with the ticks they were told of */
	/* A training that prints no timing lines costs a reduction every ten
	 * intervals only (to learn whether the other nodes have some). */
	if (j->rank == 0 && !j->finished && job_now() - j->perf_last >= j->o->perf_interval_s &&
	    (perf_node_done(j->perf) > j->perf_base || j->perf_moving ||
	     job_now() - j->perf_last >= 10 * j->o->perf_interval_s)) {
		j->perf_last = job_now();
		for (int r = 1; r < j->size; r++)
			if (!j->results[r].lost)
				(void)peer_send(j->p, r, PEER_TAG_COMMAND, "{\"command\":\"perf\"}");
		j->cycles_due++;
	}
	if (j->cycles_started < j->cycles_due && perf_start(j) < 0) {
		LOG_ERR("cannot start the timing reduction: performance detection stops");
		perf_node_free(j->perf);
		j->perf = NULL;
	}
}

/*
 * Coordinator, at the end: one more reduction, so that the iterations the
 * trainings printed since the last one are counted too.  Every live node
 * is still in its loop (waiting for FINAL) and joins it.  Bounded: a node
 * that cannot join costs 2 s.
 */
void
jobperf_final(struct job *j)
{
	const struct timespec nap = { 0, 1000000 };
	double deadline = job_now() + 2;

	if (!j->perf)
		return;
	for (int r = 0; r < j->size; r++)
		if (j->results[r].lost)
			return;  /* it would never complete */
	j->perf_last = 0;  /* due now */
	do {
		jobperf_cycle(j);
		if (j->red)
			nanosleep(&nap, NULL);
	} while (j->red && job_now() < deadline);
}

/*
 * Before MPI_Finalize: start the reductions the coordinator started that
 * this node has not, and let every one complete, within TIMEOUT_S.
 * Returns true when none is left in flight.
 */
bool
jobperf_drain(struct job *j, double timeout_s)
{
	const struct timespec nap = { 0, 1000000 };
	double deadline = job_now() + timeout_s;

	if (!j->perf)
		return true;
	while (j->red || j->cycles_started < j->cycles_due) {
		if (job_now() >= deadline)
			return false;
		jobperf_cycle(j);
		if (j->red)
			nanosleep(&nap, NULL);
	}
	return true;
}
