/*
 * report_text.c - `vigil report`'s summary for people.
 */
#include "autoconf.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "vigil.h"
#include "lib/util.h"
#include "perf/usage.h"
#include "report/report.h"
#include "report/report_int.h"

/* Items of a list the text summary shows before "... and N more". */
#define TEXT_LIST_MAX 20
/* Above this many nodes the text lists only those with something to say. */
#define TEXT_NODES_ALL 32

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
		fprintf(out, "; %zu fault%s", n->faults, util_plural(n->faults));
	if (n->stragglers)
		fprintf(out, "; slow (%zu straggler alert%s)", n->stragglers,
		        util_plural(n->stragglers));
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

/* The log, its runs, the job's end, its time span, the pre-check. */
static void
print_job(FILE *out, const struct report *r)
{
	int runs = cJSON_GetArraySize(r->earlier) + 1, nfailed = cJSON_GetArraySize(r->checks_failed);
	double t0 = report_parse_time(r->first_time), t1 = report_parse_time(r->last_time);

	fprintf(out, KEY "%s (%zu event%s", "events:", r->path, r->events,
	        util_plural(r->events));
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
	if (r->verdict || nfailed > 0) {
		fprintf(out, KEY "%s", "pre-check:", r->verdict ? r->verdict : "no verdict");
		if (nfailed > 0)
			fprintf(out, ", %d failed check%s", nfailed, util_plural(nfailed));
		fputc('\n', out);
		if (nfailed > 0)
			print_list(out, "failed checks:", r->checks_failed);
	}
}

/* The nodes (only the notable ones of a large job), then the lists. */
static void
print_nodes(FILE *out, const struct report *r)
{
	size_t exited = 0, lost = 0, shown = 0;
	int width = 4;

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
}

static void
print_perf(FILE *out, const struct report *r)
{
	char lo[32], med[32], hi[32];

	if (r->nsamples == 0 && !r->series) {
		fprintf(out, KEY "%s\n", "performance:", "no timing summaries in the log");
		return;
	}
	if (r->nsamples > 0)
		fprintf(out, KEY "%.0f (%zu summar%s)\n", "iterations:", r->iterations, r->nsamples,
		        r->nsamples == 1 ? "y" : "ies");
	else
		fprintf(out, KEY "%.0f\n", "iterations:", r->iterations);
	/* the plot shows this median too, formatted alike (report_fmt_ms()) */
	if (!isnan(r->e2e_median))
		fprintf(out, KEY "min %s, median %s, max %s\n", "e2e time:",
		        report_fmt_ms(lo, sizeof(lo), r->e2e_min),
		        report_fmt_ms(med, sizeof(med), r->e2e_median),
		        report_fmt_ms(hi, sizeof(hi), r->e2e_max));
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

/* The causes of SECS with time (of TOTAL, as shares, when TOTAL > 0), largest
 * first; the gap between attempts only in the shares. */
static void
print_causes(FILE *out, const double *secs, double total)
{
	bool done[COST_N] = { [COST_GAP] = total <= 0 };
	bool first = true;

	for (;;) {
		int best = -1;

		for (int c = 0; c < COST_N; c++)
			if (!done[c] && secs[c] >= 0.0005 && (best < 0 || secs[c] > secs[best]))
				best = c;
		if (best < 0)
			break;
		done[best] = true;
		if (total > 0)
			fprintf(out, "%s%s %.1f %%", first ? "" : ", ", cost_names[best],
			        secs[best] / total * 100);
		else
			fprintf(out, "%s%s %.3f s", first ? "" : ", ", cost_names[best], secs[best]);
		first = false;
	}
	fputc('\n', out);
}

/* Where the time went: each attempt, the gaps, the chain's ETTR. */
static void
print_time(FILE *out, const struct report *r)
{
	const struct cost_chain *c = &r->chain_sum;

	if (r->natts == 0)
		return;
	if (isnan(c->ettr))
		fprintf(out, KEY "%zu attempt%s, no time elapsed\n", "time:", r->natts,
		        util_plural((int)r->natts));
	else
		fprintf(out, KEY "%zu attempt%s over %.3f s: ETTR %.1f %% (productive %.3f s)\n",
		        "time:", r->natts, util_plural((int)r->natts), c->elapsed, c->ettr * 100,
		        c->secs[COST_PRODUCTIVE]);
	for (size_t i = 0; i < r->natts; i++) {
		const struct cost_attempt *a = &r->atts[i];
		char key[32];

		if (i > 0 && isnan(a->requeue_s))
			fprintf(out, KEY "%.3f s\n", "  gap:", a->secs[COST_GAP]);
		else if (i > 0)
			fprintf(out, KEY "%.3f s (requeue delay %.3f s, queue wait %.3f s)\n", "  gap:",
			        a->secs[COST_GAP], a->requeue_s, a->queue_s);
		snprintf(key, sizeof(key), "  attempt %zu:", i + 1);
		fprintf(out, KEY "%s, %.3f s: ", key, a->state, a->wall);
		print_causes(out, a->secs, 0);
		if (a->redone_iters > 0)
			fprintf(out, KEY "%.0f iterations redone\n", "", a->redone_iters);
	}
	if (c->elapsed > 0) {
		fprintf(out, KEY, "  shares:");
		print_causes(out, c->secs, c->elapsed);
	}
}

static void
print_alerts(FILE *out, const struct report *r)
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

/* "KEY N line(s) WHAT (line a, b, ...)" */
static void
print_lines(FILE *out, const char *key, const char *what, size_t n, const size_t *at,
            size_t nat)
{
	fprintf(out, KEY "%zu line%s %s (line", key, n, util_plural(n), what);
	for (size_t i = 0; i < nat; i++)
		fprintf(out, "%s %zu", i ? "," : "", at[i]);
	fprintf(out, "%s)\n", n > nat ? ", ..." : "");
}

int
report_print(const struct report *r, FILE *out)
{
	print_job(out, r);
	print_nodes(out, r);
	print_perf(out, r);
	print_time(out, r);
	if (r->usage) {
		char line[512];

		fprintf(out, KEY "%s\n", "usage:", usage_describe(r->usage, line, sizeof(line)));
	}
	print_alerts(out, r);
	if (r->malformed)
		print_lines(out, "malformed:", "skipped", r->malformed, r->mal_at, r->nmal_at);
	if (r->torn)
		print_lines(out, "torn:", "with half an event, the event glued to it read",
		            r->torn, r->torn_at, r->ntorn_at);
	return fflush(out) == 0 && !ferror(out) ? 0 : -EIO;
}
