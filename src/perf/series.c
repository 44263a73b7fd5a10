/*
 * series.c - every node's e2e time over the job's iterations, in bounded
 * memory: one point per group of iterations, neighbours merged pairwise
 * when full (series.h).
 */
#include "autoconf.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include <cJSON.h>

#include "perf/series.h"

struct perf_series {
	int nodes;
	size_t cap, len, stride;
	/* per point, shared by every node: the reductions group the
	 * iterations alike on every node */
	size_t *first, *last, *groups;
	/* per node and point (node * cap + k): the mean e2e, and the
	 * iterations it stands for (0: no value) */
	double *val;
	float *wt;
};

size_t
perf_series_cap(int nodes)
{
	size_t cap = nodes > 0 ? SERIES_POINTS_MAX / (size_t)nodes : SERIES_CAP_MAX;

	cap = cap > SERIES_CAP_MAX ? SERIES_CAP_MAX : cap < SERIES_CAP_MIN ? SERIES_CAP_MIN : cap;
	return cap & ~(size_t)1;
}

struct perf_series *
perf_series_new(int nodes, size_t cap)
{
	struct perf_series *s;
	size_t cells;

	if (nodes < 1 || cap < 2 || cap % 2) {
		errno = EINVAL;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	cells = (size_t)nodes * cap;
	s->nodes = nodes;
	s->cap = cap;
	s->stride = 1;
	s->first = calloc(cap, sizeof(*s->first));
	s->last = calloc(cap, sizeof(*s->last));
	s->groups = calloc(cap, sizeof(*s->groups));
	s->val = calloc(cells, sizeof(*s->val));
	s->wt = calloc(cells, sizeof(*s->wt));
	if (!s->first || !s->last || !s->groups || !s->val || !s->wt) {
		perf_series_free(s);
		errno = ENOMEM;
		return NULL;
	}
	return s;
}

void
perf_series_free(struct perf_series *s)
{
	if (!s)
		return;
	free(s->first);
	free(s->last);
	free(s->groups);
	free(s->val);
	free(s->wt);
	free(s);
}

/* Fold value V of weight W into cell I: their mean, weighted. */
static void
fold(struct perf_series *s, size_t i, double v, float w)
{
	float sum = s->wt[i] + w;

	if (w <= 0)
		return;
	s->val[i] = (s->val[i] * s->wt[i] + v * w) / sum;
	s->wt[i] = sum;
}

/* Full: neighbours merged pairwise, each point then holding twice the groups. */
static void
merge(struct perf_series *s)
{
	size_t half = s->len / 2;

	for (size_t i = 0; i < half; i++) {
		s->first[i] = s->first[2 * i];
		s->last[i] = s->last[2 * i + 1];
		s->groups[i] = s->groups[2 * i] + s->groups[2 * i + 1];
	}
	for (int r = 0; r < s->nodes; r++) {
		size_t base = (size_t)r * s->cap;

		for (size_t i = 0; i < half; i++) {
			size_t a = base + 2 * i, b = a + 1, to = base + i;
			double va = s->val[a];
			float wa = s->wt[a];

			s->val[to] = va;
			s->wt[to] = wa;
			fold(s, to, s->val[b], s->wt[b]);
		}
		for (size_t i = half; i < s->len; i++) {
			s->val[base + i] = 0;
			s->wt[base + i] = 0;
		}
	}
	s->len = half;
	s->stride *= 2;
}

void
perf_series_add(struct perf_series *s, size_t first, size_t last, const double *e2e)
{
	float width;
	size_t k;

	if (!s || first > last || (s->len > 0 && first <= s->last[s->len - 1]))
		return;
	width = (float)(last - first + 1);
	if (s->len > 0 && s->groups[s->len - 1] < s->stride) {
		/* the last point still fills up to the stride */
		k = s->len - 1;
		s->groups[k]++;
	} else {
		if (s->len == s->cap)
			merge(s);
		k = s->len++;
		s->first[k] = first;
		s->groups[k] = 1;
	}
	s->last[k] = last;
	for (int r = 0; r < s->nodes; r++)
		if (isfinite(e2e[r]) && e2e[r] > 0)
			fold(s, (size_t)r * s->cap + k, e2e[r], width);
}

size_t
perf_series_len(const struct perf_series *s)
{
	return s ? s->len : 0;
}

size_t
perf_series_stride(const struct perf_series *s)
{
	return s ? s->stride : 1;
}

double
perf_series_point(const struct perf_series *s, int node, size_t k, size_t *first, size_t *last)
{
	size_t i;

	if (!s || node < 0 || node >= s->nodes || k >= s->len) {
		*first = *last = 0;
		return NAN;
	}
	i = (size_t)node * s->cap + k;
	*first = s->first[k];
	*last = s->last[k];
	return s->wt[i] > 0 ? s->val[i] : NAN;
}

cJSON *
perf_series_json(const struct perf_series *s, int node)
{
	cJSON *a = cJSON_CreateArray();

	for (size_t k = 0; a && k < perf_series_len(s); k++) {
		size_t first, last;
		double v = perf_series_point(s, node, k, &first, &last);
		cJSON *p;

		if (isnan(v))
			continue;
		p = cJSON_CreateArray();
		if (!p || !cJSON_AddItemToArray(a, p) ||
		    !cJSON_AddItemToArray(p, cJSON_CreateNumber((double)first)) ||
		    !cJSON_AddItemToArray(p, cJSON_CreateNumber((double)last)) ||
		    !cJSON_AddItemToArray(p, cJSON_CreateNumber(v))) {
			cJSON_Delete(a);
			return NULL;
		}
	}
	return a;
}
