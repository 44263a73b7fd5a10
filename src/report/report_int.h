/*
 * report_int.h - what the parts of `vigil report` share: the figures read
 * from an event log (report.c), which the text summary (report_text.c),
 * the JSON (report_json.c) and the plot (report_plot.c) present.
 *
 * Private to those files; everyone else goes through report.h.
 */
#ifndef VIGIL_REPORT_INT_H
#define VIGIL_REPORT_INT_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>

#include <cJSON.h>

#include "lib/json.h"
#include "report/report_cost.h"

/* Malformed and torn lines whose numbers are kept for the summary. */
#define MALFORMED_KEEP 10

/*
 * Numbers beyond this are not timings, iterations or ranks but damage
 * (cJSON reads 1e999 as infinity); keeping them out keeps the arithmetic
 * of medians and axes finite.
 */
#define REPORT_NUM_MAX 1e15

/*
 * A node's e2e time at an iteration: ITER is the middle of the
 * iterations the point covers, W how many (1 for a summary's value; a
 * "series" point merged from neighbours covers several), the weight of
 * its value in the medians.
 */
struct point {
	double iter, ms, w;
};

struct rnode {
	char *name;
	int rank;                   /* -1 until an event names it */
	bool have_exit, lost;
	int exit_code;
	char *signal, *error, *lost_msg;
	size_t faults, stragglers, slowest_count;
	struct point *pts;          /* e2e per iteration: its "series", else the summaries' "node_e2e" */
	size_t npts, ptscap;
	double median;              /* of pts[].ms; NAN without points */
};

/* Fault-like events of one run whose dates are kept (the first ones). */
#define COST_FAULTS 8

struct sample {
	double iter, e2e_min, e2e_mean, e2e_max, hw_mean, r_min, r_mean, r_max;
};

struct report {
	char *path;
	size_t events, malformed, nmal_at;
	size_t mal_at[MALFORMED_KEEP];
	size_t torn, ntorn_at;      /* lines where half an event had the next glued to it */
	size_t torn_at[MALFORMED_KEEP];
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
	bool node_values;           /* some summary carried "node_e2e", or a "series" came */
	bool series;                /* "series" events came: the nodes' points are theirs */
	double series_last;         /* the last iteration a series covers; NAN: none */
	cJSON *usage;               /* the last "usage" event's details, NULL: none */
	struct cost_marks marks;    /* this run's dates, for its split */
	double faults_at[COST_FAULTS];  /* its first fault-like events' dates */
	size_t nfaults_at;
	bool unconfirmed;           /* a checkpoint was not confirmed */
	char *chain_key;            /* the "account" event's chain; NULL: none */

	/* the chain: the runs of the last one's key, in order (report_cost.h) */
	struct cost_attempt *atts;
	size_t natts, atts_cap;
	char *chain;
	struct cost_chain chain_sum;

	/* derived once the log is read */
	double iterations, e2e_min, e2e_median, e2e_max, hw_mean, r_min, r_mean, r_max;
	double nodes_median;        /* median of the nodes' medians */
	int slowest;                /* index into nodes, -1: none */
};

/* A string member of O, or NULL. */
static inline const char *
jstr(const cJSON *o, const char *key)
{
	return json_str(o, key, NULL);
}

/* A number member of O within REPORT_NUM_MAX, else NAN. */
static inline double
jnum(const cJSON *o, const char *key)
{
	return json_num(o, key, -REPORT_NUM_MAX, REPORT_NUM_MAX, NAN);
}

/* Element I of array A as jnum() reads a member, else NAN. */
static inline double
jnum_at(const cJSON *a, int i)
{
	const cJSON *v = cJSON_GetArrayItem(a, i);

	return cJSON_IsNumber(v) && v->valuedouble > -REPORT_NUM_MAX &&
	       v->valuedouble < REPORT_NUM_MAX ? v->valuedouble : NAN;
}

/* "2026-11-20T23:35:08.123Z" to seconds since the epoch; NAN if not that. */
double report_parse_time(const char *s);

/*
 * MS as the summary, the JSON's readers and the plot show it
 * ("150.250 ms"), in BUF; returns BUF.
 */
const char *report_fmt_ms(char *buf, size_t len, double ms);

/* qsort() order of struct point by iteration. */
int report_cmp_point(const void *a, const void *b);

#endif
