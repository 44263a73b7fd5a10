/*
 * metrics.c - Prometheus text file of the job's state and performance.
 *
 * Format: https://prometheus.io/docs/instrumenting/exposition_formats/
 */
#include "autoconf.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cJSON.h>

#include "vigil.h"
#include "json.h"
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

struct board_value {
	char *node;
	int board;
	struct metrics_board v;
};

struct usage_value {
	char *node;
	double cpu_s, memory;
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
	struct board_value *boards;
	size_t nboards, boards_cap;
	struct usage_value *usage;
	size_t nusage, usage_cap;
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
	for (size_t i = 0; i < m->nboards; i++)
		free(m->boards[i].node);
	for (size_t i = 0; i < m->nusage; i++)
		free(m->usage[i].node);
	free(m->nodes);
	free(m->alerts);
	free(m->boards);
	free(m->usage);
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

/* Make room for one more element in *ARR (of SIZE bytes each).  0 or -ENOMEM. */
static int
grow(void **arr, size_t n, size_t *cap, size_t size)
{
	void *a;
	size_t ncap;

	if (n < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 8;
	a = realloc(*arr, ncap * size);
	if (!a)
		return -ENOMEM;
	*arr = a;
	*cap = ncap;
	return 0;
}

void
metrics_board_init(struct metrics_board *b)
{
	b->utilization = NAN;
	b->memory_used_bytes = NAN;
	b->memory_total_bytes = NAN;
	b->temperature_celsius = NAN;
	b->power_watts = NAN;
}

int
metrics_set_board(struct metrics *m, const char *node, int board, const struct metrics_board *b)
{
	struct board_value *e;

	if (board < 0)
		return -EINVAL;
	for (size_t i = 0; i < m->nboards; i++) {
		if (m->boards[i].board == board && strcmp(m->boards[i].node, node) == 0) {
			m->boards[i].v = *b;
			return 0;
		}
	}
	if (grow((void **)&m->boards, m->nboards, &m->boards_cap, sizeof(*m->boards)) < 0)
		return -ENOMEM;
	e = &m->boards[m->nboards];
	e->node = strdup(node);
	if (!e->node)
		return -ENOMEM;
	e->board = board;
	e->v = *b;
	m->nboards++;
	return 0;
}

int
metrics_set_boards_json(struct metrics *m, const char *node, const cJSON *usage)
{
	const cJSON *e;
	int n = 0;

	if (!cJSON_IsArray(usage))
		return -EINVAL;
	cJSON_ArrayForEach(e, usage) {
		struct metrics_board b;
		long long index;

		if (json_get_int(e, "index", 0, INT_MAX, &index) < 0)
			continue;
		b.utilization = json_num(e, "utilization", 0, 1, NAN);
		b.memory_used_bytes = json_num(e, "memory_used_bytes", 0, 1e18, NAN);
		b.memory_total_bytes = json_num(e, "memory_total_bytes", 0, 1e18, NAN);
		b.temperature_celsius = json_num(e, "temperature_celsius", -273.15, 1000, NAN);
		b.power_watts = json_num(e, "power_watts", 0, 1e6, NAN);
		if (metrics_set_board(m, node, (int)index, &b) < 0)
			return -ENOMEM;
		n++;
	}
	return n;
}

int
metrics_set_training_usage(struct metrics *m, const char *node, double cpu_seconds,
                           double memory_bytes)
{
	struct usage_value *e = NULL;

	for (size_t i = 0; i < m->nusage && !e; i++)
		if (strcmp(m->usage[i].node, node) == 0)
			e = &m->usage[i];
	if (!e) {
		if (grow((void **)&m->usage, m->nusage, &m->usage_cap, sizeof(*m->usage)) < 0)
			return -ENOMEM;
		e = &m->usage[m->nusage];
		e->node = strdup(node);
		if (!e->node)
			return -ENOMEM;
		m->nusage++;
	}
	e->cpu_s = cpu_seconds;
	e->memory = memory_bytes;
	return 0;
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

/* NAME{K1="V1",K2="V2"} V: N label pairs in KV, keys then values. */
static void
put_labelled(FILE *fp, const char *name, const char *const *kv, size_t n, double v)
{
	fputs(name, fp);
	for (size_t i = 0; i < n; i++) {
		fprintf(fp, "%c%s=\"", i ? ',' : '{', kv[2 * i]);
		put_label(fp, kv[2 * i + 1]);
		fputc('"', fp);
	}
	if (n)
		fputc('}', fp);
	fputc(' ', fp);
	put_value(fp, v);
	fputc('\n', fp);
}

static void
put_sample(FILE *fp, const char *name, const char *label, const char *value, double v)
{
	const char *kv[2] = { label, value };

	put_labelled(fp, name, kv, label ? 1 : 0, v);
}

/* The board families: one per field of struct metrics_board. */
static const struct {
	const char *name;
	const char *help;
	size_t off;
} board_families[] = {
	{ "vigil_board_utilization_ratio",
	  "Fraction of the vendor library's last sample period the board was busy.",
	  offsetof(struct metrics_board, utilization) },
	{ "vigil_board_memory_used_bytes", "Board memory in use, in bytes.",
	  offsetof(struct metrics_board, memory_used_bytes) },
	{ "vigil_board_memory_total_bytes", "Board memory, in bytes.",
	  offsetof(struct metrics_board, memory_total_bytes) },
	{ "vigil_board_temperature_celsius", "Board temperature, in degrees Celsius.",
	  offsetof(struct metrics_board, temperature_celsius) },
	{ "vigil_board_power_watts", "Board power draw, in watts.",
	  offsetof(struct metrics_board, power_watts) },
};

static double
board_field(const struct board_value *b, size_t off)
{
	double v;

	memcpy(&v, (const char *)&b->v + off, sizeof(v));
	return v;
}

static void
put_boards(FILE *fp, const struct metrics *m)
{
	for (size_t f = 0; f < sizeof(board_families) / sizeof(board_families[0]); f++) {
		bool any = false;

		for (size_t i = 0; i < m->nboards; i++) {
			double v = board_field(&m->boards[i], board_families[f].off);
			char idx[16];
			const char *kv[4] = { "node", m->boards[i].node, "board", idx };

			if (isnan(v))
				continue;
			if (!any)
				put_family(fp, board_families[f].name, "gauge", board_families[f].help);
			any = true;
			snprintf(idx, sizeof(idx), "%d", m->boards[i].board);
			put_labelled(fp, board_families[f].name, kv, 2, v);
		}
	}
}

static void
put_usage(FILE *fp, const struct metrics *m)
{
	bool cpu = false, mem = false;

	for (size_t i = 0; i < m->nusage; i++) {
		if (isnan(m->usage[i].cpu_s))
			continue;
		if (!cpu)
			put_family(fp, "vigil_training_cpu_seconds_total", "counter",
			           "CPU time (user and system) of the training's processes, in seconds.");
		cpu = true;
		put_sample(fp, "vigil_training_cpu_seconds_total", "node", m->usage[i].node,
		           m->usage[i].cpu_s);
	}
	for (size_t i = 0; i < m->nusage; i++) {
		if (isnan(m->usage[i].memory))
			continue;
		if (!mem)
			put_family(fp, "vigil_training_memory_bytes", "gauge",
			           "Resident memory of the training's processes, in bytes.");
		mem = true;
		put_sample(fp, "vigil_training_memory_bytes", "node", m->usage[i].node,
		           m->usage[i].memory);
	}
}

/*
 * Min, mean and max of S, divided by DIV (1000: milliseconds to seconds,
 * the base unit; a division, so that 110.125 ms prints as 0.110125).
 */
static void
put_stats(FILE *fp, const char *name, const char *help, const struct metrics_stats *s,
          double div)
{
	put_family(fp, name, "gauge", help);
	put_sample(fp, name, "stat", "min", s->min / div);
	put_sample(fp, name, "stat", "mean", s->mean / div);
	put_sample(fp, name, "stat", "max", s->max / div);
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
		/* Prometheus's base unit of time is the second; the training
		 * prints milliseconds. */
		put_stats(fp, "vigil_iteration_e2e_seconds",
		          "End-to-end time of the last iteration across nodes, in seconds.",
		          &m->e2e, 1000);
		put_stats(fp, "vigil_iteration_hw_seconds",
		          "Hardware time of the last iteration across nodes, in seconds.",
		          &m->hw, 1000);
		put_stats(fp, "vigil_iteration_hw_e2e_ratio",
		          "Hardware time over end-to-end time of the last iteration across nodes.",
		          &m->ratio, 1);
	}
	if (m->nnodes > 0) {
		put_family(fp, "vigil_node_e2e_seconds", "gauge",
		           "End-to-end time of the last iteration on each node, in seconds.");
		for (size_t i = 0; i < m->nnodes; i++)
			put_sample(fp, "vigil_node_e2e_seconds", "node", m->nodes[i].name,
			           m->nodes[i].value / 1000);
	}
	put_family(fp, "vigil_alerts_total", "counter", "Performance alerts raised, by kind.");
	for (size_t i = 0; i < m->nalerts; i++)
		put_sample(fp, "vigil_alerts_total", "kind", m->alerts[i].name, m->alerts[i].value);
	put_family(fp, "vigil_nodes", "gauge", "Nodes of the job still reporting (up) and lost.");
	put_sample(fp, "vigil_nodes", "state", "up", m->up);
	put_sample(fp, "vigil_nodes", "state", "lost", m->lost);
	put_boards(fp, m);
	put_usage(fp, m);
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
