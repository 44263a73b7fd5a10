/*
 * report_prom.c - `vigil report --metrics`: where the chain's time went
 * (report_cost.h) as a Prometheus text file, for node_exporter's textfile
 * collector or a push to a gateway.
 */
#include "autoconf.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>

#include "perf/metrics.h"
#include "report/report.h"
#include "report/report_int.h"

int
report_metrics(const struct report *r, FILE *out)
{
	const struct cost_chain *c = &r->chain_sum;
	double iters = 0;

	if (r->natts == 0)
		return fflush(out) == 0 && !ferror(out) ? 0 : -EIO;
	metrics_put_family(out, "vigil_chain_info", "gauge", "The job whose attempts are joined (its chain key).");
	fputs("vigil_chain_info{key=\"", out);
	metrics_put_label(out, r->chain ? r->chain : "");
	fputs("\"} 1\n", out);
	metrics_put_family(out, "vigil_chain_attempts", "gauge", "Attempts of the job (requeues and the first).");
	fprintf(out, "vigil_chain_attempts %zu\n", r->natts);
	metrics_put_family(out, "vigil_chain_requeues_total", "counter", "Attempts after the first.");
	fprintf(out, "vigil_chain_requeues_total %zu\n", r->natts - 1);
	for (size_t i = 0; i < r->natts; i++)
		if (r->atts[i].m.iterations > 0)
			iters += r->atts[i].m.iterations;
	metrics_put_family(out, "vigil_chain_iterations_total", "counter", "Iterations of every attempt.");
	fprintf(out, "vigil_chain_iterations_total %.0f\n", iters);
	metrics_put_family(out, "vigil_chain_elapsed_seconds", "gauge",
	       "From the first attempt's start to the last one's end.");
	fprintf(out, "vigil_chain_elapsed_seconds %.3f\n", c->elapsed);
	if (!isnan(c->ettr)) {
		metrics_put_family(out, "vigil_chain_ettr_ratio", "gauge",
		       "Effective training time ratio: productive time / elapsed time.");
		fprintf(out, "vigil_chain_ettr_ratio %.6f\n", c->ettr);
	}
	metrics_put_family(out, "vigil_chain_time_seconds", "gauge", "The chain's time by what it was spent on.");
	for (int k = 0; k < COST_N; k++)
		fprintf(out, "vigil_chain_time_seconds{cause=\"%s\"} %.3f\n", cost_names[k], c->secs[k]);
	if (r->natts > 1 && !isnan(c->requeue_s)) {
		metrics_put_family(out, "vigil_chain_between_attempts_seconds", "gauge",
		       "The time between attempts, split at Slurm's eligible time of each.");
		fprintf(out, "vigil_chain_between_attempts_seconds{part=\"requeue_delay\"} %.3f\n",
		        c->requeue_s);
		fprintf(out, "vigil_chain_between_attempts_seconds{part=\"queue_wait\"} %.3f\n",
		        c->queue_s);
	}
	metrics_put_family(out, "vigil_attempt_time_seconds", "gauge",
	       "Each attempt's time by what it was spent on (attempt 1 is the first).");
	for (size_t i = 0; i < r->natts; i++)
		for (int k = 0; k < COST_N; k++)
			fprintf(out, "vigil_attempt_time_seconds{attempt=\"%zu\",cause=\"%s\"} %.3f\n",
			        i + 1, cost_names[k], r->atts[i].secs[k]);
	return fflush(out) == 0 && !ferror(out) ? 0 : -EIO;
}
