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
#include "lib/json.h"
#include "lib/util.h"
#include "perf/metrics.h"

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
	int board;
	struct metrics_board v;
};

/* What one node reported; a value never set is NaN. */
struct mnode {
	char *name;
	double e2e_ms;
	bool e2e_set;               /* e2e_ms was set, NaN and all */
	double cpu_s, memory;
	struct board_value *boards; /* a node's few boards, in the order first set */
	size_t nboards, boards_cap;
};

struct metrics {
	int state;                  /* index into job_states; -1: none yet */
	uint64_t iterations;
	double productive_s, straggler_s;  /* the attempt's account (account.h) */
	bool have_iteration;
	struct metrics_stats hw, e2e, ratio;
	struct mnode *nodes;        /* in the order first seen */
	size_t nnodes, nodes_cap;
	size_t *index;              /* open addressing: position + 1 in nodes, 0 empty */
	size_t index_cap;           /* a power of two, at least twice nnodes */
	struct named_value *alerts; /* value: count; a handful of kinds */
	size_t nalerts, alerts_cap;
	unsigned up, lost;
	bool have_spares;           /* --spares: the two families below are written */
	unsigned spares_waiting, spares_used;
	double recovery_s;          /* the last recovery with a spare; NAN: none yet */
};

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

/* Find NAME in *ARR, or append it with value 0.  NULL on ENOMEM.  For the
 * alert kinds, which are few. */
static struct named_value *
lookup(struct named_value **arr, size_t *n, size_t *cap, const char *name)
{
	struct named_value *a;

	for (size_t i = 0; i < *n; i++)
		if (strcmp((*arr)[i].name, name) == 0)
			return &(*arr)[i];
	if (grow((void **)arr, *n, cap, sizeof(**arr)) < 0)
		return NULL;
	a = &(*arr)[*n];
	a->name = strdup(name);
	if (!a->name)
		return NULL;
	a->value = 0;
	(*n)++;
	return a;
}

/* FNV-1a: node names are short. */
static size_t
name_hash(const char *s)
{
	uint64_t h = 14695981039346656037ULL;

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ULL;
	}
	return (size_t)h;
}

/* The index's slot for NAME: where it is, or the empty slot where it goes. */
static size_t *
index_slot(const struct metrics *m, const char *name)
{
	size_t mask = m->index_cap - 1, i = name_hash(name) & mask;

	while (m->index[i] && strcmp(m->nodes[m->index[i] - 1].name, name) != 0)
		i = (i + 1) & mask;
	return &m->index[i];
}

/* Rebuild the index at twice the size.  0 or -ENOMEM. */
static int
index_grow(struct metrics *m)
{
	size_t cap = m->index_cap ? m->index_cap * 2 : 16;
	size_t *old = m->index, *ix = calloc(cap, sizeof(*ix));

	if (!ix)
		return -ENOMEM;
	m->index = ix;
	m->index_cap = cap;
	for (size_t i = 0; i < m->nnodes; i++)
		*index_slot(m, m->nodes[i].name) = i + 1;
	free(old);
	return 0;
}

/* NODE's record, made on first sight: O(1) on average however many nodes
 * the job has.  NULL on ENOMEM. */
static struct mnode *
node_of(struct metrics *m, const char *node)
{
	struct mnode *e;
	size_t *slot;

	if ((m->nnodes + 1) * 2 > m->index_cap && index_grow(m) < 0)
		return NULL;
	slot = index_slot(m, node);
	if (*slot)
		return &m->nodes[*slot - 1];
	if (grow((void **)&m->nodes, m->nnodes, &m->nodes_cap, sizeof(*m->nodes)) < 0)
		return NULL;
	e = &m->nodes[m->nnodes];
	memset(e, 0, sizeof(*e));
	e->name = strdup(node);
	if (!e->name)
		return NULL;
	e->e2e_ms = e->cpu_s = e->memory = NAN;
	*slot = ++m->nnodes;
	return e;
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
	for (size_t i = 0; i < m->nnodes; i++) {
		free(m->nodes[i].name);
		free(m->nodes[i].boards);
	}
	for (size_t i = 0; i < m->nalerts; i++)
		free(m->alerts[i].name);
	free(m->nodes);
	free(m->index);
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
metrics_set_account(struct metrics *m, double productive_s, double straggler_s)
{
	m->productive_s = productive_s;
	m->straggler_s = straggler_s;
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
	struct mnode *e = node_of(m, node);

	if (!e)
		return -ENOMEM;
	e->e2e_ms = ms;
	e->e2e_set = true;
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

void
metrics_set_spares(struct metrics *m, unsigned waiting, unsigned used, double recovery_s)
{
	m->have_spares = true;
	m->spares_waiting = waiting;
	m->spares_used = used;
	m->recovery_s = recovery_s;
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
	struct mnode *e;
	struct board_value *bv;

	if (board < 0)
		return -EINVAL;
	e = node_of(m, node);
	if (!e)
		return -ENOMEM;
	for (size_t i = 0; i < e->nboards; i++) {
		if (e->boards[i].board == board) {
			e->boards[i].v = *b;
			return 0;
		}
	}
	if (grow((void **)&e->boards, e->nboards, &e->boards_cap, sizeof(*e->boards)) < 0)
		return -ENOMEM;
	bv = &e->boards[e->nboards++];
	bv->board = board;
	bv->v = *b;
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
	struct mnode *e = node_of(m, node);

	if (!e)
		return -ENOMEM;
	e->cpu_s = cpu_seconds;
	e->memory = memory_bytes;
	return 0;
}

/* ---- the text format ------------------------------------------------- */

void
metrics_put_label(FILE *fp, const char *s)
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

void
metrics_put_family(FILE *fp, const char *name, const char *type, const char *help)
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
		metrics_put_label(fp, kv[2 * i + 1]);
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

		for (size_t i = 0; i < m->nnodes; i++) {
			const struct mnode *e = &m->nodes[i];

			for (size_t k = 0; k < e->nboards; k++) {
				double v = board_field(&e->boards[k], board_families[f].off);
				char idx[16];
				const char *kv[4] = { "node", e->name, "board", idx };

				if (isnan(v))
					continue;
				if (!any)
					metrics_put_family(fp, board_families[f].name, "gauge",
					           board_families[f].help);
				any = true;
				snprintf(idx, sizeof(idx), "%d", e->boards[k].board);
				put_labelled(fp, board_families[f].name, kv, 2, v);
			}
		}
	}
}

/* One family of per-node values, the field at OFF of struct mnode; NaN is
 * left out, and so is the family while no node has a value. */
static void
put_per_node(FILE *fp, const struct metrics *m, const char *name, const char *type,
             const char *help, size_t off)
{
	bool any = false;

	for (size_t i = 0; i < m->nnodes; i++) {
		double v;

		memcpy(&v, (const char *)&m->nodes[i] + off, sizeof(v));
		if (isnan(v))
			continue;
		if (!any)
			metrics_put_family(fp, name, type, help);
		any = true;
		put_sample(fp, name, "node", m->nodes[i].name, v);
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
	metrics_put_family(fp, name, "gauge", help);
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
	metrics_put_family(fp, "vigil_job_state", "gauge",
	           "State of the job: 1 for the current state, 0 for the others.");
	for (size_t i = 0; i < NSTATES; i++)
		put_sample(fp, "vigil_job_state", "state", job_states[i], m->state == (int)i);
	metrics_put_family(fp, "vigil_iterations_total", "counter",
	           "Training iterations complete on every node.");
	fprintf(fp, "vigil_iterations_total %" PRIu64 "\n", m->iterations);
	metrics_put_family(fp, "vigil_iteration_time_seconds_total", "counter",
	                   "Iteration time of this attempt: at the nodes' median pace (productive), "
	                   "and the slowest node's excess over it (straggler).");
	put_sample(fp, "vigil_iteration_time_seconds_total", "part", "productive", m->productive_s);
	put_sample(fp, "vigil_iteration_time_seconds_total", "part", "straggler", m->straggler_s);
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
	for (size_t i = 0, any = 0; i < m->nnodes; i++) {
		if (!m->nodes[i].e2e_set)
			continue;
		if (!any++)
			metrics_put_family(fp, "vigil_node_e2e_seconds", "gauge",
			           "End-to-end time of the last iteration on each node, in seconds.");
		put_sample(fp, "vigil_node_e2e_seconds", "node", m->nodes[i].name,
		           m->nodes[i].e2e_ms / 1000);
	}
	metrics_put_family(fp, "vigil_alerts_total", "counter", "Performance alerts raised, by kind.");
	for (size_t i = 0; i < m->nalerts; i++)
		put_sample(fp, "vigil_alerts_total", "kind", m->alerts[i].name, m->alerts[i].value);
	metrics_put_family(fp, "vigil_nodes", "gauge", "Nodes of the job still reporting (up) and lost.");
	put_sample(fp, "vigil_nodes", "state", "up", m->up);
	put_sample(fp, "vigil_nodes", "state", "lost", m->lost);
	if (m->have_spares) {
		metrics_put_family(fp, "vigil_spares", "gauge", "Hot spares still waiting, and spares "
		                   "that took a failed node's place.");
		put_sample(fp, "vigil_spares", "state", "waiting", m->spares_waiting);
		put_sample(fp, "vigil_spares", "state", "used", m->spares_used);
	}
	if (m->have_spares && !isnan(m->recovery_s)) {
		metrics_put_family(fp, "vigil_recovery_seconds", "gauge", "From the fault to the first "
		                   "iteration after the last recovery with a spare, in seconds.");
		fprintf(fp, "vigil_recovery_seconds ");
		put_value(fp, m->recovery_s);
		fputc('\n', fp);
	}
	put_boards(fp, m);
	put_per_node(fp, m, "vigil_training_cpu_seconds_total", "counter",
	             "CPU time (user and system) of the training's processes, in seconds.",
	             offsetof(struct mnode, cpu_s));
	put_per_node(fp, m, "vigil_training_memory_bytes", "gauge",
	             "Resident memory of the training's processes, in bytes.",
	             offsetof(struct mnode, memory));
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
