/*
 * perf.c - per-iteration timings: a node's aggregation, the cross-node
 * reduction's buffer and operator, and the alert policy.
 *
 * Memory is bounded however long the job runs: a node holds a ring of
 * WINDOW iterations and a capped number of local processes; the buffer is
 * a fixed window of slots; the policy holds counters, one set per node.
 */
#include "autoconf.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf.h"

/*
 * Local processes a node tells apart.  A node runs one training process
 * per accelerator, a few dozen at most; lines from keys beyond the cap are
 * ignored, so a launcher that prints a new prefix per line cannot grow
 * the agent.
 */
#define PERF_MAX_KEYS 256

/*
 * Marks slot 0 in its PERF_E2E_MIN_RANK field: iteration slots hold a
 * rank there, or -1 when the node lacks the iteration.  The header
 * combines differently: PERF_COUNT by minimum, PERF_HW_SUM (nodes
 * contributing) by sum, the rest stays 0.
 */
#define PERF_HEADER_MARK (-2.0)

struct perf_key {
	char name[sizeof(((struct progress_line *)0)->key)];
	size_t lines;          /* lines seen = iterations this process reached */
};

/* One iteration's sums over the local processes that reached it. */
struct perf_slot {
	double hw_sum, e2e_sum;
	size_t keys;
};

struct perf_node {
	size_t window;
	struct perf_key *keys;
	size_t nkeys, capkeys;
	size_t forgot;         /* iterations <= forgot are forgotten */
	size_t lo;             /* first iteration the ring holds */
	size_t dropped;
	struct perf_slot *ring;  /* iteration i at ring[i % window] */
};

struct perf_node *
perf_node_new(size_t window)
{
	struct perf_node *n;

	if (window == 0 || window > SIZE_MAX / sizeof(struct perf_slot) / 2) {
		errno = EINVAL;
		return NULL;
	}
	n = calloc(1, sizeof(*n));
	if (!n)
		return NULL;
	n->ring = calloc(window, sizeof(*n->ring));
	if (!n->ring) {
		free(n);
		return NULL;
	}
	n->window = window;
	n->lo = 1;
	return n;
}

void
perf_node_free(struct perf_node *n)
{
	if (!n)
		return;
	free(n->keys);
	free(n->ring);
	free(n);
}

static struct perf_key *
find_key(struct perf_node *n, const char *name)
{
	struct perf_key *k;

	for (size_t i = 0; i < n->nkeys; i++) {
		if (strncmp(n->keys[i].name, name, sizeof(n->keys[i].name)) == 0)
			return &n->keys[i];
	}
	if (n->nkeys == PERF_MAX_KEYS)
		return NULL;
	if (n->nkeys == n->capkeys) {
		size_t cap = n->capkeys ? 2 * n->capkeys : 8;

		k = realloc(n->keys, cap * sizeof(*k));
		if (!k)
			return NULL;  /* the line is lost, nothing else */
		n->keys = k;
		n->capkeys = cap;
	}
	k = &n->keys[n->nkeys++];
	memset(k, 0, sizeof(*k));
	/* The key may fill its array without a terminator. */
	memcpy(k->name, name, strnlen(name, sizeof(k->name)));
	return k;
}

static struct perf_slot *
slot_of(const struct perf_node *n, size_t iter)
{
	return &n->ring[iter % n->window];
}

void
perf_node_add(struct perf_node *n, const struct progress_line *l)
{
	struct perf_key *k = find_key(n, l->key);
	struct perf_slot *s;
	size_t iter;

	if (!k)
		return;
	iter = ++k->lines;
	/* An iteration forgotten (this process appeared late) or given up
	 * by the ring: nothing to add to.  The ring starts after the
	 * forgotten ones. */
	if (iter < n->lo)
		return;
	/* Each key advances by one, so the ring slides by at most one: the
	 * oldest iteration goes, complete or not, and is counted. */
	while (iter >= n->lo + n->window) {
		*slot_of(n, n->lo) = (struct perf_slot){ 0 };
		n->lo++;
		n->dropped++;
	}
	s = slot_of(n, iter);
	s->hw_sum += l->hw_ms;
	s->e2e_sum += l->e2e_ms;
	s->keys++;
}

size_t
perf_node_done(const struct perf_node *n)
{
	size_t done = SIZE_MAX;

	for (size_t i = 0; i < n->nkeys; i++) {
		if (n->keys[i].lines < done)
			done = n->keys[i].lines;
	}
	if (done == SIZE_MAX)
		done = 0;
	/* Forgotten iterations were complete everywhere: a process that
	 * appears later does not take them back. */
	return done > n->forgot ? done : n->forgot;
}

int
perf_node_get(const struct perf_node *n, size_t iter, double *hw_ms, double *e2e_ms)
{
	const struct perf_slot *s;

	if (iter < n->lo || iter >= n->lo + n->window || iter > perf_node_done(n))
		return -ENOENT;
	s = slot_of(n, iter);
	if (s->keys == 0)
		return -ENOENT;
	*hw_ms = s->hw_sum / (double)s->keys;
	*e2e_ms = s->e2e_sum / (double)s->keys;
	return 0;
}

void
perf_node_forget(struct perf_node *n, size_t iter)
{
	if (iter <= n->forgot)
		return;
	n->forgot = iter;
	while (n->lo <= iter) {
		if (n->lo + n->window <= iter) {
			/* Nothing held is kept: clear the whole ring at once. */
			memset(n->ring, 0, n->window * sizeof(*n->ring));
			n->lo = iter + 1;
			break;
		}
		*slot_of(n, n->lo) = (struct perf_slot){ 0 };
		n->lo++;
	}
}

size_t
perf_node_dropped(const struct perf_node *n)
{
	return n->dropped;
}

/* ---- the reduction's buffer ------------------------------------------ */

size_t
perf_buffer_len(size_t w)
{
	return (w + 1) * PERF_FIELDS;
}

static void
slot_empty(double *s)
{
	s[PERF_COUNT] = 0;
	s[PERF_HW_SUM] = s[PERF_E2E_SUM] = s[PERF_R_SUM] = 0;
	s[PERF_HW_MIN] = s[PERF_E2E_MIN] = s[PERF_R_MIN] = HUGE_VAL;
	s[PERF_HW_MAX] = s[PERF_E2E_MAX] = s[PERF_R_MAX] = -HUGE_VAL;
	s[PERF_E2E_MIN_RANK] = s[PERF_E2E_MAX_RANK] = -1;
	s[PERF_R_MIN_RANK] = s[PERF_R_MAX_RANK] = -1;
}

void
perf_pack(const struct perf_node *n, size_t base, size_t w, int rank, double *buf)
{
	double *h = buf;

	for (size_t f = 0; f < PERF_FIELDS; f++)
		h[f] = 0;
	/* A node without training must not hold everyone's count at 0. */
	h[PERF_COUNT] = n ? (double)perf_node_done(n) : HUGE_VAL;
	h[PERF_HW_SUM] = n ? 1 : 0;
	h[PERF_E2E_MIN_RANK] = PERF_HEADER_MARK;
	for (size_t k = 1; k <= w; k++) {
		double *s = buf + k * PERF_FIELDS;
		double hw, e2e, r;

		if (!n || perf_node_get(n, base + k, &hw, &e2e) < 0) {
			slot_empty(s);
			continue;
		}
		r = hw / e2e;
		s[PERF_COUNT] = 1;
		s[PERF_HW_SUM] = s[PERF_HW_MIN] = s[PERF_HW_MAX] = hw;
		s[PERF_E2E_SUM] = s[PERF_E2E_MIN] = s[PERF_E2E_MAX] = e2e;
		s[PERF_R_SUM] = s[PERF_R_MIN] = s[PERF_R_MAX] = r;
		s[PERF_E2E_MIN_RANK] = s[PERF_E2E_MAX_RANK] = rank;
		s[PERF_R_MIN_RANK] = s[PERF_R_MAX_RANK] = rank;
	}
}

/*
 * The extreme of (value, rank) pairs; on equal values the lower rank, so
 * the result does not depend on the order MPI combines in.  A missing
 * node's pair (an infinity, rank -1) loses to any finite value.
 */
static void
take_min(const double *in, double *io, int v, int rank)
{
	if (in[v] < io[v] || (in[v] == io[v] && in[rank] >= 0 &&
	                      (io[rank] < 0 || in[rank] < io[rank]))) {
		io[v] = in[v];
		io[rank] = in[rank];
	}
}

static void
take_max(const double *in, double *io, int v, int rank)
{
	if (in[v] > io[v] || (in[v] == io[v] && in[rank] >= 0 &&
	                      (io[rank] < 0 || in[rank] < io[rank]))) {
		io[v] = in[v];
		io[rank] = in[rank];
	}
}

void
perf_combine(const double *in, double *inout, size_t len)
{
	/* Slots recognise themselves, so a part of a buffer combines as
	 * well as a whole one. */
	for (size_t off = 0; off + PERF_FIELDS <= len; off += PERF_FIELDS) {
		const double *a = in + off;
		double *b = inout + off;

		if (b[PERF_E2E_MIN_RANK] == PERF_HEADER_MARK) {
			if (a[PERF_COUNT] < b[PERF_COUNT])
				b[PERF_COUNT] = a[PERF_COUNT];
			b[PERF_HW_SUM] += a[PERF_HW_SUM];
			continue;
		}
		b[PERF_COUNT] += a[PERF_COUNT];
		b[PERF_HW_SUM] += a[PERF_HW_SUM];
		b[PERF_E2E_SUM] += a[PERF_E2E_SUM];
		b[PERF_R_SUM] += a[PERF_R_SUM];
		if (a[PERF_HW_MIN] < b[PERF_HW_MIN])
			b[PERF_HW_MIN] = a[PERF_HW_MIN];
		if (a[PERF_HW_MAX] > b[PERF_HW_MAX])
			b[PERF_HW_MAX] = a[PERF_HW_MAX];
		take_min(a, b, PERF_E2E_MIN, PERF_E2E_MIN_RANK);
		take_max(a, b, PERF_E2E_MAX, PERF_E2E_MAX_RANK);
		take_min(a, b, PERF_R_MIN, PERF_R_MIN_RANK);
		take_max(a, b, PERF_R_MAX, PERF_R_MAX_RANK);
	}
}

int
perf_contributors(const double *buf)
{
	return (int)buf[PERF_HW_SUM];
}

void
perf_unpack(const double *buf, size_t base, size_t w, int nranks,
            size_t *new_base, struct perf_iter *out, size_t *n)
{
	double count = buf[PERF_COUNT];
	size_t nb = base;

	*n = 0;
	/* A count below the base cannot come from nodes that reported it
	 * before; keep the base rather than go back.  Without contributors
	 * (no node has a training) there is nothing to move past. */
	if (nranks >= 1 && count > (double)base)
		nb = count >= (double)(base + w) ? base + w : (size_t)count;
	*new_base = nb;
	for (size_t k = 1; k <= nb - base; k++) {
		const double *s = buf + k * PERF_FIELDS;
		struct perf_iter *it;

		/* Nodes that dropped this iteration (they ran ahead of the
		 * window) leave it incomplete: it is passed over. */
		if (s[PERF_COUNT] != (double)nranks)
			continue;
		it = &out[(*n)++];
		it->iter = base + k;
		it->nodes = nranks;
		it->hw_min = s[PERF_HW_MIN];
		it->hw_mean = s[PERF_HW_SUM] / nranks;
		it->hw_max = s[PERF_HW_MAX];
		it->e2e_min = s[PERF_E2E_MIN];
		it->e2e_mean = s[PERF_E2E_SUM] / nranks;
		it->e2e_max = s[PERF_E2E_MAX];
		it->r_min = s[PERF_R_MIN];
		it->r_mean = s[PERF_R_SUM] / nranks;
		it->r_max = s[PERF_R_MAX];
		it->e2e_min_rank = (int)s[PERF_E2E_MIN_RANK];
		it->e2e_max_rank = (int)s[PERF_E2E_MAX_RANK];
		it->r_min_rank = (int)s[PERF_R_MIN_RANK];
		it->r_max_rank = (int)s[PERF_R_MAX_RANK];
	}
}

/* ---- the policy ------------------------------------------------------ */

/* A condition that must hold for a number of consecutive iterations. */
struct streak {
	int run;
	bool fired;
};

struct perf_policy {
	struct perf_policy_opts o;
	int nranks;
	struct streak ratio;
	struct streak *slow;   /* per rank */
	double *sorted;        /* scratch for the median */
};

struct perf_policy *
perf_policy_new(const struct perf_policy_opts *o, int nranks)
{
	struct perf_policy *p;

	if (nranks < 1 || o->window < 1 || !(o->threshold >= 0) ||
	    !(o->straggler_pct >= 0)) {
		errno = EINVAL;
		return NULL;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->o = *o;
	p->nranks = nranks;
	p->slow = calloc((size_t)nranks, sizeof(*p->slow));
	p->sorted = calloc((size_t)nranks, sizeof(*p->sorted));
	if (!p->slow || !p->sorted) {
		perf_policy_free(p);
		errno = ENOMEM;
		return NULL;
	}
	return p;
}

void
perf_policy_free(struct perf_policy *p)
{
	if (!p)
		return;
	free(p->slow);
	free(p->sorted);
	free(p);
}

/*
 * Advance S with whether its condition holds; true when an alert is due.
 * It is due from the WINDOW-th consecutive iteration until it is emitted,
 * and not again until the condition has cleared.
 */
static bool
streak_due(struct streak *s, bool holds, int window)
{
	if (!holds) {
		s->run = 0;
		s->fired = false;
		return false;
	}
	if (s->run < window)
		s->run++;
	return s->run >= window && !s->fired;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The median of V[0..N); an even count takes the mean of the middle two. */
static double
median(const double *v, int n, double *scratch)
{
	memcpy(scratch, v, (size_t)n * sizeof(*v));
	qsort(scratch, (size_t)n, sizeof(*scratch), cmp_double);
	if (n % 2)
		return scratch[n / 2];
	return (scratch[n / 2 - 1] + scratch[n / 2]) / 2;
}

static void
node_name(const char *const *names, int rank, char *buf, size_t size)
{
	if (names && names[rank])
		snprintf(buf, size, "%s", names[rank]);
	else
		snprintf(buf, size, "rank %d", rank);
}

size_t
perf_policy_feed(struct perf_policy *p, const struct perf_iter *it,
                 const double *node_e2e, const char *const *names,
                 struct perf_alert *out, size_t max)
{
	size_t n = 0;
	char name[64];

	if (p->o.threshold > 0) {
		double r = p->o.below ? it->r_min : it->r_max;
		int rank = p->o.below ? it->r_min_rank : it->r_max_rank;
		bool holds = p->o.below ? r < p->o.threshold : r > p->o.threshold;

		/* An alert that finds no room stays due for the next call. */
		if (streak_due(&p->ratio, holds, p->o.window) && n < max) {
			struct perf_alert *a = &out[n++];

			node_name(names, rank, name, sizeof(name));
			*a = (struct perf_alert){ .iter = it->iter, .rank = rank, .value = r };
			snprintf(a->kind, sizeof(a->kind), "ratio");
			snprintf(a->message, sizeof(a->message),
			         "hw/e2e %.2f %s %.2f for %d iterations (%s on %s)",
			         r, p->o.below ? "below" : "above", p->o.threshold,
			         p->o.window, p->o.below ? "min" : "max", name);
			p->ratio.fired = true;
		}
	}
	if (p->o.straggler_pct <= 0 || !node_e2e)
		return n;
	/* Values a node could not report say nothing about the others. */
	for (int r = 0; r < p->nranks; r++) {
		if (!isfinite(node_e2e[r]))
			return n;
	}
	{
		double med = median(node_e2e, p->nranks, p->sorted);
		double limit = med * (1 + p->o.straggler_pct / 100);

		for (int r = 0; r < p->nranks; r++) {
			struct perf_alert *a;
			double pct;

			if (!streak_due(&p->slow[r], node_e2e[r] > limit, p->o.window) ||
			    n >= max)
				continue;
			pct = (node_e2e[r] / med - 1) * 100;
			a = &out[n++];
			node_name(names, r, name, sizeof(name));
			*a = (struct perf_alert){ .iter = it->iter, .rank = r, .value = pct };
			snprintf(a->kind, sizeof(a->kind), "straggler");
			snprintf(a->message, sizeof(a->message),
			         "%s e2e %.0f ms is %.0f%% above the median %.0f ms for %d iterations",
			         name, node_e2e[r], pct, med, p->o.window);
			p->slow[r].fired = true;
		}
	}
	return n;
}
