/*
 * metrics.c - Prometheus text file of the job's state and performance.
 *
 * Format: https://prometheus.io/docs/instrumenting/exposition_formats/
 */
#include "autoconf.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vigil.h"
#include "metrics.h"
#include "util.h"

static const char *const job_states[] = {
	VIGIL_STATE_RUNNING, VIGIL_STATE_SUCCEEDED, VIGIL_STATE_ERROR,
	VIGIL_STATE_STOPPED, VIGIL_STATE_EXPIRED,
};
#define NSTATES (sizeof(job_states) / sizeof(job_states[0]))

struct named_value {
	char *name;
	double value;
};

struct metrics {
	int state;                  /* index into job_states; -1: none yet */
	uint64_t iterations;
	bool have_iteration;
	struct metrics_stats hw, e2e, ratio;
	struct named_value *nodes;  /* value: last e2e, ms */
	size_t nnodes, nodes_cap;
	struct named_value *alerts; /* value: count */
	size_t nalerts, alerts_cap;
	unsigned up, lost;
};

/* Find NAME in *ARR, or append it with value 0.  NULL on ENOMEM. */
static struct named_value *
lookup(struct named_value **arr, size_t *n, size_t *cap, const char *name)
{
	struct named_value *a;

	for (size_t i = 0; i < *n; i++)
		if (strcmp((*arr)[i].name, name) == 0)
			return &(*arr)[i];
	if (*n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 8;

		a = realloc(*arr, ncap * sizeof(*a));
		if (!a)
			return NULL;
		*arr = a;
		*cap = ncap;
	}
	a = &(*arr)[*n];
	a->name = strdup(name);
	if (!a->name)
		return NULL;
	a->value = 0;
	(*n)++;
	return a;
}

struct metrics *
metrics_new(void)
{
	struct metrics *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->state = -1;
	/* The alert kinds the supervisor knows exist from the start, so a
	 * rate() over them works before the first alert. */
	if (!lookup(&m->alerts, &m->nalerts, &m->alerts_cap, "ratio") ||
	    !lookup(&m->alerts, &m->nalerts, &m->alerts_cap, "straggler")) {
		metrics_free(m);
		errno = ENOMEM;
		return NULL;
	}
	return m;
}

void
metrics_free(struct metrics *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->nnodes; i++)
		free(m->nodes[i].name);
	for (size_t i = 0; i < m->nalerts; i++)
		free(m->alerts[i].name);
	free(m->nodes);
	free(m->alerts);
	free(m);
}

int
metrics_set_state(struct metrics *m, const char *state)
{
	for (size_t i = 0; i < NSTATES; i++) {
		if (strcmp(job_states[i], state) == 0) {
			m->state = (int)i;
			return 0;
		}
	}
	return -EINVAL;
}

void
metrics_set_iterations(struct metrics *m, uint64_t done)
{
	m->iterations = done;
}

void
metrics_set_iteration(struct metrics *m, const struct metrics_stats *hw,
                      const struct metrics_stats *e2e, const struct metrics_stats *ratio)
{
	m->hw = *hw;
	m->e2e = *e2e;
	m->ratio = *ratio;
	m->have_iteration = true;
}

int
metrics_set_node_e2e(struct metrics *m, const char *node, double ms)
{
	struct named_value *v = lookup(&m->nodes, &m->nnodes, &m->nodes_cap, node);

	if (!v)
		return -ENOMEM;
	v->value = ms;
	return 0;
}

int
metrics_add_alert(struct metrics *m, const char *kind)
{
	struct named_value *v = lookup(&m->alerts, &m->nalerts, &m->alerts_cap, kind);

	if (!v)
		return -ENOMEM;
	v->value++;
	return 0;
}

void
metrics_set_nodes(struct metrics *m, unsigned up, unsigned lost)
{
	m->up = up;
	m->lost = lost;
}

/* ---- the text format ------------------------------------------------- */

/* A label value: backslash, double quote and newline escaped. */
static void
put_label(FILE *fp, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\')
			fputs("\\\\", fp);
		else if (*s == '"')
			fputs("\\\"", fp);
		else if (*s == '\n')
			fputs("\\n", fp);
		else
			fputc(*s, fp);
	}
}

/*
 * A sample value: Go's ParseFloat reads it back (NaN, +Inf, -Inf), in the
 * fewest digits that give the same double, so 101.5 stays "101.5" and no
 * precision is lost.
 */
static void
put_value(FILE *fp, double v)
{
	char buf[32];

	if (isnan(v)) {
		fputs("NaN", fp);
		return;
	}
	if (isinf(v)) {
		fputs(v > 0 ? "+Inf" : "-Inf", fp);
		return;
	}
	snprintf(buf, sizeof(buf), "%.15g", v);
	if (strtod(buf, NULL) != v)
		snprintf(buf, sizeof(buf), "%.17g", v);
	fputs(buf, fp);
}

static void
put_family(FILE *fp, const char *name, const char *type, const char *help)
{
	fprintf(fp, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void
put_sample(FILE *fp, const char *name, const char *label, const char *value, double v)
{
	fputs(name, fp);
	if (label) {
		fprintf(fp, "{%s=\"", label);
		put_label(fp, value);
		fputs("\"}", fp);
	}
	fputc(' ', fp);
	put_value(fp, v);
	fputc('\n', fp);
}

static void
put_stats(FILE *fp, const char *name, const char *help, const struct metrics_stats *s)
{
	put_family(fp, name, "gauge", help);
	put_sample(fp, name, "stat", "min", s->min);
	put_sample(fp, name, "stat", "mean", s->mean);
	put_sample(fp, name, "stat", "max", s->max);
}

/* The whole file into a new buffer *TEXT of *LEN bytes.  0 or -ENOMEM. */
static int
format(const struct metrics *m, char **text, size_t *len)
{
	FILE *fp = open_memstream(text, len);
	bool bad;

	if (!fp)
		return -ENOMEM;
	put_family(fp, "vigil_job_state", "gauge",
	           "State of the job: 1 for the current state, 0 for the others.");
	for (size_t i = 0; i < NSTATES; i++)
		put_sample(fp, "vigil_job_state", "state", job_states[i], m->state == (int)i);
	put_family(fp, "vigil_iterations_total", "counter",
	           "Training iterations complete on every node.");
	fprintf(fp, "vigil_iterations_total %" PRIu64 "\n", m->iterations);
	if (m->have_iteration) {
		put_stats(fp, "vigil_iteration_e2e_ms",
		          "End-to-end time of the last iteration across nodes, in milliseconds.",
		          &m->e2e);
		put_stats(fp, "vigil_iteration_hw_ms",
		          "Hardware time of the last iteration across nodes, in milliseconds.",
		          &m->hw);
		put_stats(fp, "vigil_iteration_hw_e2e_ratio",
		          "Hardware time over end-to-end time of the last iteration across nodes.",
		          &m->ratio);
	}
	if (m->nnodes > 0) {
		put_family(fp, "vigil_node_e2e_ms", "gauge",
		           "End-to-end time of the last iteration on each node, in milliseconds.");
		for (size_t i = 0; i < m->nnodes; i++)
			put_sample(fp, "vigil_node_e2e_ms", "node", m->nodes[i].name,
			           m->nodes[i].value);
	}
	put_family(fp, "vigil_alerts_total", "counter", "Performance alerts raised, by kind.");
	for (size_t i = 0; i < m->nalerts; i++)
		put_sample(fp, "vigil_alerts_total", "kind", m->alerts[i].name, m->alerts[i].value);
	put_family(fp, "vigil_nodes", "gauge", "Nodes of the job still reporting (up) and lost.");
	put_sample(fp, "vigil_nodes", "state", "up", m->up);
	put_sample(fp, "vigil_nodes", "state", "lost", m->lost);
	bad = ferror(fp) != 0;
	/* memstream errors are allocation failures */
	if (fclose(fp) != 0 || bad) {
		free(*text);
		*text = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* ---- the file -------------------------------------------------------- */

int
metrics_write(const struct metrics *m, const char *path)
{
	char *text = NULL;
	size_t len = 0;
	int rc;

	rc = format(m, &text, &len);
	if (rc < 0)
		return rc;
	/* 0644: node_exporter usually runs as another user. */
	rc = util_write_atomic(path, text, len, 0644);
	free(text);
	return rc;
}
