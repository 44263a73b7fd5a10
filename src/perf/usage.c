/*
 * usage.c - the training's and the boards' use across the job, on the
 * coordinator (usage.h).
 */
#include "autoconf.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "lib/json.h"
#include "lib/util.h"
#include "perf/metrics.h"
#include "perf/usage.h"

/* The lowest and highest value seen, and where. */
struct range {
	bool any;
	double min, max;
	char min_node[256], max_node[256];
	int min_board, max_board;    /* -1: a node's value, not a board's */
};

enum {
	R_CPU,
	R_MEMORY,
	R_UTIL,
	R_BOARD_MEMORY,
	R_TEMPERATURE,
	R_POWER,
	NRANGES
};

static const char *const range_names[NRANGES] = {
	"training_cpu_cores",   "training_memory_bytes",     "board_utilization",
	"board_memory_used_bytes", "board_temperature_celsius", "board_power_watts",
};

/* A node's last CPU sample, for its rate. */
struct cpu_sample {
	bool have;
	double cpu_s, at;
};

struct usage {
	int n;
	struct cpu_sample *cpu;      /* per rank */
	bool *heard;                 /* per rank */
	int nheard;
	unsigned long long notes;
	bool changed;
	struct range r[NRANGES];
};

struct usage *
usage_new(int nranks)
{
	struct usage *u;

	if (nranks < 1) {
		errno = EINVAL;
		return NULL;
	}
	u = calloc(1, sizeof(*u));
	if (!u)
		return NULL;
	u->n = nranks;
	u->cpu = calloc((size_t)nranks, sizeof(*u->cpu));
	u->heard = calloc((size_t)nranks, sizeof(*u->heard));
	if (!u->cpu || !u->heard) {
		usage_free(u);
		errno = ENOMEM;
		return NULL;
	}
	return u;
}

void
usage_free(struct usage *u)
{
	if (!u)
		return;
	free(u->cpu);
	free(u->heard);
	free(u);
}

static void
see(struct range *r, double v, const char *node, int board)
{
	if (isnan(v))
		return;
	if (!r->any || v < r->min) {
		r->min = v;
		snprintf(r->min_node, sizeof(r->min_node), "%s", node);
		r->min_board = board;
	}
	if (!r->any || v > r->max) {
		r->max = v;
		snprintf(r->max_node, sizeof(r->max_node), "%s", node);
		r->max_board = board;
	}
	r->any = true;
}

/* The training's CPU rate on RANK, in cores; NAN for the first sample, a
 * counter that fell (a process of the training reaped) or a note that
 * came too soon after the last to say much. */
static double
cpu_rate(struct usage *u, int rank, double cpu_s, double now)
{
	struct cpu_sample *c = &u->cpu[rank];
	double rate = NAN;

	if (isnan(cpu_s))
		return NAN;
	if (c->have && now - c->at < 0.5)
		return NAN;  /* keep the older sample: the rate over a longer span */
	if (c->have && cpu_s >= c->cpu_s)
		rate = (cpu_s - c->cpu_s) / (now - c->at);
	c->have = true;
	c->cpu_s = cpu_s;
	c->at = now;
	return rate;
}

int
usage_take(struct usage *u, struct metrics *m, int rank, const char *node, const cJSON *v,
           double now)
{
	const cJSON *boards, *b;
	double cpu_s, mem;

	if (rank < 0 || rank >= u->n || !cJSON_IsObject(v))
		return -EINVAL;
	cpu_s = json_num(v, "cpu_seconds", 0, 1e15, NAN);
	mem = json_num(v, "memory_bytes", 0, 1e18, NAN);
	if (m && (!isnan(cpu_s) || !isnan(mem)) &&
	    metrics_set_training_usage(m, node, cpu_s, mem) < 0)
		return -ENOMEM;
	see(&u->r[R_CPU], cpu_rate(u, rank, cpu_s, now), node, -1);
	see(&u->r[R_MEMORY], mem, node, -1);
	boards = cJSON_GetObjectItemCaseSensitive(v, "boards");
	if (cJSON_IsArray(boards)) {
		if (m && metrics_set_boards_json(m, node, boards) < 0)
			return -ENOMEM;
		cJSON_ArrayForEach(b, boards) {
			long long index;

			if (json_get_int(b, "index", 0, INT_MAX, &index) < 0)
				continue;
			/* the ranges metrics_set_boards_json() accepts */
			see(&u->r[R_UTIL], json_num(b, "utilization", 0, 1, NAN), node, (int)index);
			see(&u->r[R_BOARD_MEMORY], json_num(b, "memory_used_bytes", 0, 1e18, NAN),
			    node, (int)index);
			see(&u->r[R_TEMPERATURE],
			    json_num(b, "temperature_celsius", -273.15, 1000, NAN), node, (int)index);
			see(&u->r[R_POWER], json_num(b, "power_watts", 0, 1e6, NAN), node,
			    (int)index);
		}
	}
	if (!u->heard[rank]) {
		u->heard[rank] = true;
		u->nheard++;
	}
	u->notes++;
	u->changed = true;
	return 0;
}

bool
usage_changed(const struct usage *u)
{
	return u->changed;
}

/* One end of a range into O: "min", "min_node", "min_board"? */
static bool
put_end(cJSON *o, const char *key, double v, const char *node, int board)
{
	char k[16];

	if (!cJSON_AddNumberToObject(o, key, v))
		return false;
	snprintf(k, sizeof(k), "%s_node", key);
	if (!cJSON_AddStringToObject(o, k, node))
		return false;
	snprintf(k, sizeof(k), "%s_board", key);
	return board < 0 || cJSON_AddNumberToObject(o, k, board);
}

cJSON *
usage_summary(struct usage *u)
{
	cJSON *d = cJSON_CreateObject();
	bool ok = d && cJSON_AddNumberToObject(d, "notes", (double)u->notes) &&
	          cJSON_AddNumberToObject(d, "nodes", u->nheard);

	for (int i = 0; ok && i < NRANGES; i++) {
		const struct range *r = &u->r[i];
		cJSON *o;

		if (!r->any)
			continue;
		o = cJSON_AddObjectToObject(d, range_names[i]);
		ok = o && put_end(o, "min", r->min, r->min_node, r->min_board) &&
		     put_end(o, "max", r->max, r->max_node, r->max_board);
	}
	if (!ok) {
		cJSON_Delete(d);
		return NULL;
	}
	u->changed = false;
	return d;
}

/* One end of a range, for people. */
typedef void fmt_end(double v, char *buf, size_t len);

static void
fmt_cores(double v, char *buf, size_t len)
{
	snprintf(buf, len, "%.2f", v);
}

static void
fmt_percent(double v, char *buf, size_t len)
{
	snprintf(buf, len, "%.0f", v * 100);
}

static void
fmt_celsius(double v, char *buf, size_t len)
{
	snprintf(buf, len, "%.0f", v);
}

static void
fmt_watts(double v, char *buf, size_t len)
{
	snprintf(buf, len, "%.1f", v);
}

/* " min-max UNIT" of range KEY of D appended to BUF (at *AT), with ", "
 * before it unless FIRST.  Returns whether the range was there. */
static bool
put_range(const cJSON *d, const char *key, fmt_end *fmt, const char *unit, bool first,
          char *buf, size_t len, size_t *at)
{
	const cJSON *r = cJSON_GetObjectItemCaseSensitive(d, key);
	double lo, hi;
	char a[32], b[32];
	int w;

	if (!cJSON_IsObject(r) || json_get_num(r, "min", -1e300, 1e300, &lo) < 0 ||
	    json_get_num(r, "max", -1e300, 1e300, &hi) < 0)
		return false;
	if (fmt) {
		fmt(lo, a, sizeof(a));
		fmt(hi, b, sizeof(b));
	} else {
		util_fmt_bytes(lo, a, sizeof(a));
		util_fmt_bytes(hi, b, sizeof(b));
	}
	if (*at >= len)
		return true;
	w = snprintf(buf + *at, len - *at, "%s%s-%s%s", first ? "" : ", ", a, b, unit);
	*at += w > 0 ? (size_t)w : 0;
	return true;
}

char *
usage_describe(const cJSON *d, char *buf, size_t len)
{
	size_t at = 0;
	bool any;
	const cJSON *hot;
	const char *node;
	long long board;
	int w;

	if (len == 0)
		return buf;
	buf[0] = '\0';
	if (at < len && (cJSON_HasObjectItem(d, "training_cpu_cores") ||
	                 cJSON_HasObjectItem(d, "training_memory_bytes"))) {
		w = snprintf(buf + at, len - at, "training ");
		at += w > 0 ? (size_t)w : 0;
		any = put_range(d, "training_cpu_cores", fmt_cores, " CPU cores", true, buf, len,
		                &at);
		put_range(d, "training_memory_bytes", NULL, "", !any, buf, len, &at);
	}
	any = false;
	for (const char *const *k = (const char *const[]){ "board_utilization",
	                                                   "board_memory_used_bytes",
	                                                   "board_temperature_celsius",
	                                                   "board_power_watts", NULL };
	     *k; k++)
		any |= cJSON_HasObjectItem(d, *k);
	if (any && at < len) {
		w = snprintf(buf + at, len - at, "%sboards ", at ? "; " : "");
		at += w > 0 ? (size_t)w : 0;
		any = put_range(d, "board_utilization", fmt_percent, "% busy", true, buf, len, &at);
		any |= put_range(d, "board_memory_used_bytes", NULL, "", !any, buf, len, &at);
		any |= put_range(d, "board_temperature_celsius", fmt_celsius, " C", !any, buf, len,
		                 &at);
		put_range(d, "board_power_watts", fmt_watts, " W", !any, buf, len, &at);
		/* the hottest board: where a cooling or power problem shows */
		hot = cJSON_GetObjectItemCaseSensitive(d, "board_temperature_celsius");
		if (json_get_str(hot, "max_node", &node) == 0 &&
		    json_get_int(hot, "max_board", 0, INT_MAX, &board) == 0 && at < len) {
			w = snprintf(buf + at, len - at, " (hottest: %s board %lld)", node, board);
			at += w > 0 ? (size_t)w : 0;
		}
	}
	if (at >= len && len > 4)
		memcpy(buf + len - 4, "...", 4);
	return buf;
}
