/*
 * perf.c - per-iteration timings: a node's aggregation, the layout of a
 * reduction, its buffer and operator, the alert policy, and the medians'
 * sketch.
 *
 * Memory is bounded however long the job runs and however fast it prints:
 * a node holds a ring of a fixed number of slots (each several iterations
 * once it runs far ahead) and a capped number of local processes; the
 * buffer is a fixed number of slots; the policy and the sketch hold a
 * fixed amount per node.
 */
#include "autoconf.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf/perf.h"

/*
 * Local processes a node tells apart.  A node runs one training process
 * per accelerator, a few dozen at most; lines from keys beyond the cap
 * count for the last key, so a launcher that prints a new prefix per line
 * cannot grow the agent.
 */
#define PERF_MAX_KEYS 256
/* Slots of the keys' index: a power of two, at least twice the keys. */
#define KEY_SLOTS 512
_Static_assert(KEY_SLOTS >= 2 * PERF_MAX_KEYS && (KEY_SLOTS & (KEY_SLOTS - 1)) == 0,
               "the keys' index is a power of two with room to spare");

/*
 * A node whose count has not moved for this many reductions while another
 * node is more than SILENT_LAG iterations ahead has stopped printing: it
 * loses its say until it prints again.
 */
#define SILENT_REDUCTIONS 3
#define SILENT_LAG 256

/*
 * Several lines per iteration: the node's count must be within SCALE_TOL
 * (relative) of a whole multiple >= 2 of the other nodes' mean, at
 * SCALE_REDUCTIONS reductions in a row, with the others past SCALE_MIN
 * iterations (start-up skew is not a multiple).
 */
#define SCALE_TOL 0.1
#define SCALE_REDUCTIONS 3
#define SCALE_MIN 32

/*
 * Marks slot 0 in its PERF_E2E_MIN_RANK field: group slots hold a rank
 * there, or -1 when the node lacks the group.  The header's fields
 * (enum header_field) combine each in its own way.
 */
#define PERF_HEADER_MARK (-2.0)

enum header_field {
	H_MIN_DONE = PERF_COUNT,   /* min; HUGE_VAL from a node without a say */
	H_SAYS = PERF_HW_SUM,      /* sum */
	H_MAX_DONE = PERF_HW_MIN,  /* max */
	H_SUM_DONE = PERF_HW_MAX,  /* sum */
	H_MAX_GRAIN = PERF_E2E_SUM,/* max */
	H_MAX_BASE = PERF_E2E_MIN, /* max */
	H_APPROX = PERF_E2E_MAX,   /* sum */
	H_MARK = PERF_E2E_MIN_RANK,
};

struct perf_key {
	char name[sizeof(((struct progress_line *)0)->key)];
	size_t iter;           /* the iteration of its last line */
	unsigned phase;        /* lines of that iteration seen, mod the node's scale */
};

struct perf_node {
	struct perf_key *keys;
	size_t nkeys, capkeys, last;   /* LAST: the key that printed last */
	uint16_t index[KEY_SLOTS];     /* open addressing: a key's position + 1, 0 empty */
	size_t lead;           /* the furthest iteration any key reached */
	size_t start;          /* a first key starts after this iteration */
	unsigned carry;        /* lines of iteration start+1 the first key has seen */
	uint64_t lines;
	unsigned scale;        /* lines per iteration */

	size_t cap;            /* slots in the ring, a power of two */
	size_t grain;          /* iterations per slot, a power of two */
	unsigned shift;        /* log2(grain): no division per line */
	size_t forgot;         /* iterations <= forgot are forgotten */
	struct perf_sum *ring;   /* slot q (the sums of iterations q*grain+1 ..) at ring[q % cap] */

	/* what the reductions said */
	size_t others_done;    /* the fewest iterations done elsewhere, last seen */
	size_t last_done;      /* this node's count at the last reduction */
	int still;             /* reductions since the count moved */
	int scale_run;         /* reductions in a row that showed a multiple */
	unsigned scale_seen;
	bool silent;
};

struct perf_node *
perf_node_new(size_t slots)
{
	struct perf_node *n;

	if (slots == 0 || slots > SIZE_MAX / sizeof(struct perf_sum) / 4) {
		errno = EINVAL;
		return NULL;
	}
	/* a power of two, so that a slot's place is a mask away */
	while (slots & (slots - 1))
		slots += slots & -slots;
	n = calloc(1, sizeof(*n));
	if (!n)
		return NULL;
	n->ring = calloc(slots, sizeof(*n->ring));
	if (!n->ring) {
		free(n);
		return NULL;
	}
	n->cap = slots;
	n->grain = 1;
	n->scale = 1;
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
new_key(struct perf_node *n, const char *name)
{
	struct perf_key *k;

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
	/* It joins the iteration the node is at: the first process of all
	 * after where the node (or, starting late, everyone) is. */
	if (n->nkeys == 1 && n->carry > 0 && n->start >= n->forgot) {
		/* part of the next iteration printed before the count changed */
		k->iter = n->start + 1;
		k->phase = n->carry;
	} else if (n->nkeys == 1)
		k->iter = (n->start > n->forgot ? n->start : n->forgot);
	else
		k->iter = n->lead > 0 ? n->lead - 1 : 0;
	return k;
}

/* Keys are NUL to the end of their array (progress.h): whole arrays compare. */
static bool
same_key(const char *a, const char *b)
{
	return memcmp(a, b, sizeof(((struct perf_key *)0)->name)) == 0;
}

/* The index slot where NAME starts its probe: its words folded and mixed. */
static size_t
key_hash(const char *name)
{
	uint64_t w[sizeof(((struct perf_key *)0)->name) / 8], h = 0;

	memcpy(w, name, sizeof(w));
	for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++)
		h = (h ^ w[i]) * 0x9e3779b97f4a7c15u;
	return (size_t)(h >> 40) & (KEY_SLOTS - 1);
}

/*
 * The key NAME, added when new.  Lines mostly come from the key of the
 * line before; the others are found through the index, in a probe or two
 * however many processes the node runs.
 */
static struct perf_key *
find_key(struct perf_node *n, const char *name)
{
	size_t at;
	struct perf_key *k;

	if (n->last < n->nkeys && same_key(n->keys[n->last].name, name))
		return &n->keys[n->last];
	for (at = key_hash(name); n->index[at] != 0; at = (at + 1) & (KEY_SLOTS - 1)) {
		k = &n->keys[n->index[at] - 1];
		if (same_key(k->name, name)) {
			n->last = n->index[at] - 1;
			return k;
		}
	}
	if (n->nkeys == PERF_MAX_KEYS)
		return &n->keys[n->nkeys - 1];
	k = new_key(n, name);
	if (k) {
		n->last = n->nkeys - 1;
		n->index[at] = (uint16_t)n->nkeys;
	}
	return k;
}

static size_t
first_slot(const struct perf_node *n)
{
	return n->forgot >> n->shift;
}

/* Twice as many iterations per slot: neighbouring slots merge. */
static int
coarsen(struct perf_node *n)
{
	struct perf_sum *old = malloc(n->cap * sizeof(*old));
	size_t lo = first_slot(n);

	if (!old)
		return -ENOMEM;
	memcpy(old, n->ring, n->cap * sizeof(*old));
	memset(n->ring, 0, n->cap * sizeof(*n->ring));
	n->grain *= 2;
	n->shift++;
	for (size_t q = lo; q < lo + n->cap; q++) {
		const struct perf_sum *s = &old[q % n->cap];
		struct perf_sum *d = &n->ring[(q / 2) % n->cap];

		d->hw += s->hw;
		d->e2e += s->e2e;
		d->lines += s->lines;
	}
	free(old);
	return 0;
}

void
perf_node_add(struct perf_node *n, const struct progress_line *l)
{
	struct perf_key *k;
	struct perf_sum *s;
	size_t q;

	if (n->silent) {
		/* Printing again after a long silence: everyone else went on,
		 * so the node rejoins where they are. */
		n->silent = false;
		perf_node_restart(n);
		if (n->others_done > n->start)
			n->start = n->lead = n->others_done;
	}
	k = find_key(n, l->key);
	if (!k)
		return;
	n->lines++;
	if (n->lead > k->iter + PERF_KEY_LAG) {
		/* Passed over, and printing again: it rejoins the leader. */
		k->iter = n->lead - 1;
		k->phase = 0;
	}
	if (k->phase == 0)
		k->iter++;
	if (++k->phase == n->scale)  /* no division per line */
		k->phase = 0;
	if (k->iter > n->lead)
		n->lead = k->iter;
	/* A line for an iteration reported already (a process far behind):
	 * nothing to add to. */
	if (k->iter <= n->forgot)
		return;
	q = (k->iter - 1) >> n->shift;
	while (q >= first_slot(n) + n->cap) {
		if (coarsen(n) < 0)
			return;
		q = (k->iter - 1) >> n->shift;
	}
	s = &n->ring[q & (n->cap - 1)];
	s->hw += l->hw_ms;
	s->e2e += l->e2e_ms;
	s->lines += 1;
}

size_t
perf_node_done(const struct perf_node *n)
{
	size_t done = SIZE_MAX;

	for (size_t i = 0; i < n->nkeys; i++) {
		const struct perf_key *k = &n->keys[i];
		size_t complete = k->phase == 0 ? k->iter : k->iter - 1;

		/* A process far behind the leader does not hold the node back. */
		if (n->lead > k->iter + PERF_KEY_LAG)
			continue;
		if (complete < done)
			done = complete;
	}
	if (done == SIZE_MAX)
		done = n->start;
	/* Forgotten iterations were complete everywhere: a process that
	 * appears later does not take them back. */
	return done > n->forgot ? done : n->forgot;
}

uint64_t
perf_node_lines(const struct perf_node *n)
{
	return n->lines;
}

size_t
perf_node_grain(const struct perf_node *n)
{
	return n->grain;
}

bool
perf_node_sum(const struct perf_node *n, size_t first, size_t last, struct perf_sum *out)
{
	size_t lo = first_slot(n);

	*out = (struct perf_sum){ 0 };
	if (first == 0)
		first = 1;
	for (size_t q = (first - 1) / n->grain; first <= last && q <= (last - 1) / n->grain; q++) {
		const struct perf_sum *s = &n->ring[q % n->cap];
		size_t a = q * n->grain + 1, b = a + n->grain - 1, held;
		double share;

		if (q < lo || q >= lo + n->cap || s->lines == 0)
			continue;
		/* the slot's iterations that have lines: not beyond the leader */
		if (b > n->lead)
			b = n->lead;
		held = b >= a ? b - a + 1 : 1;
		if (a < first)
			a = first;
		if (b > last)
			b = last;
		share = b >= a ? (double)(b - a + 1) / (double)held : 0;
		out->hw += s->hw * share;
		out->e2e += s->e2e * share;
		out->lines += s->lines * share;
	}
	return out->lines > 0;
}

void
perf_node_forget(struct perf_node *n, size_t iter)
{
	size_t lo = first_slot(n), hi;

	if (iter <= n->forgot)
		return;
	n->forgot = iter;
	hi = first_slot(n);
	if (hi - lo >= n->cap) {
		memset(n->ring, 0, n->cap * sizeof(*n->ring));
		return;
	}
	for (size_t q = lo; q < hi; q++)
		n->ring[q % n->cap] = (struct perf_sum){ 0 };
}

void
perf_node_restart(struct perf_node *n)
{
	size_t done = perf_node_done(n);

	/* The new processes start after the node's last iteration; what
	 * the old ones printed beyond the base stays, to be reported. */
	n->start = done;
	n->lead = done;
	n->nkeys = 0;
	memset(n->index, 0, sizeof(n->index));
	n->last = 0;
	n->carry = 0;
}

/* A whole multiple >= 2 of the others' count, within the tolerance? */
static unsigned
multiple_of(double mine, double others)
{
	double q, p;

	if (others < SCALE_MIN)
		return 0;
	q = mine / others;
	p = floor(q + 0.5);
	return p >= 2 && fabs(q - p) <= SCALE_TOL * p ? (unsigned)p : 0;
}

void
perf_node_observe(struct perf_node *n, const struct perf_header *h)
{
	size_t done = perf_node_done(n);
	bool says = perf_node_says(n);
	int others = h->says - (says ? 1 : 0);
	unsigned p;

	if (h->says > 0)
		n->others_done = h->min_done;
	/* Not printed yet: its first line is where the others are then. */
	if (n->lines == 0 && h->says > 0 && h->min_done > n->start)
		n->start = n->lead = h->min_done;
	/* Silent: the count stood still while others went far ahead. */
	n->still = done == n->last_done ? n->still + 1 : 0;
	n->last_done = done;
	if (says && n->still >= SILENT_REDUCTIONS && h->max_done > done + SILENT_LAG)
		n->silent = true;
	/* Several lines per iteration: a steady whole multiple of the others. */
	p = says && others > 0 ?
	    multiple_of((double)done, (h->sum_done - (double)done) / others) : 0;
	if (p && (n->scale_run == 0 || p == n->scale_seen))
		n->scale_run++;
	else
		n->scale_run = 0;
	n->scale_seen = p;
	if (n->scale_run >= SCALE_REDUCTIONS) {
		/* From now on P lines are one iteration, and so were the
		 * lines so far; what was kept under the old count is not
		 * comparable and goes. */
		size_t at = done / p;
		unsigned carry = (unsigned)(done % p) * n->scale;

		n->scale *= p;
		n->scale_run = 0;
		perf_node_restart(n);
		n->start = n->lead = at > n->forgot ? at : n->forgot;
		/* an odd line out at the change belongs to the next
		 * iteration, or every later one would end a line late */
		n->carry = at >= n->forgot ? carry : 0;
		memset(n->ring, 0, n->cap * sizeof(*n->ring));
	}
}

bool
perf_node_says(const struct perf_node *n)
{
	return n->lines > 0 && !n->silent;
}

unsigned
perf_node_scale(const struct perf_node *n)
{
	return n->scale;
}

/* ---- the layout ---------------------------------------------------------- */

void
perf_layout_init(struct perf_layout *l, size_t slots, size_t base)
{
	*l = (struct perf_layout){ .base = base, .target = base, .stride = 1, .slots = slots };
}

/* The end of the group that starts after iteration AT. */
static size_t
next_end(const struct perf_layout *l, size_t at)
{
	size_t end = (at / l->stride + 1) * l->stride;

	/* the target is a cut of its own: everything up to it is complete,
	 * so it is reported now, whatever the stride */
	if (at < l->target && end > l->target)
		end = l->target;
	return end;
}

void
perf_layout_ends(const struct perf_layout *l, size_t *ends)
{
	size_t at = l->base;

	for (size_t k = 0; k < l->slots; k++)
		at = ends[k] = next_end(l, at);
}

void
perf_layout_next(struct perf_layout *l, const struct perf_header *h, size_t new_base)
{
	size_t target = h->says > 0 ? h->min_done : new_base, want, moved, s = 1;

	if (target < new_base)
		target = new_base;
	/* How far the slowest node moved per reduction lately (a decaying
	 * maximum: a burst widens the groups at once, a lull narrows them
	 * slowly). */
	moved = target > l->target ? target - l->target : 0;
	if (moved > l->growth)
		l->growth = moved;
	else if (l->growth - (l->growth + 3) / 4 > moved)
		l->growth -= (l->growth + 3) / 4;
	else
		l->growth = moved;
	l->base = new_base;
	l->target = target;
	/* Room for half as much again beyond the target, one slot spent on
	 * the cut. */
	want = target - new_base + l->growth + l->growth / 2;
	while (s < SIZE_MAX / 2 && s * (l->slots > 1 ? l->slots - 1 : 1) < want)
		s *= 2;
	l->stride = s;
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

static void
slot_fill(double *s, double hw, double e2e, int rank)
{
	double r = hw / e2e;

	s[PERF_COUNT] = 1;
	s[PERF_HW_SUM] = s[PERF_HW_MIN] = s[PERF_HW_MAX] = hw;
	s[PERF_E2E_SUM] = s[PERF_E2E_MIN] = s[PERF_E2E_MAX] = e2e;
	s[PERF_R_SUM] = s[PERF_R_MIN] = s[PERF_R_MAX] = r;
	s[PERF_E2E_MIN_RANK] = s[PERF_E2E_MAX_RANK] = rank;
	s[PERF_R_MIN_RANK] = s[PERF_R_MAX_RANK] = rank;
}

void
perf_pack(const struct perf_node *n, const struct perf_layout *l, size_t base, int rank,
          double *buf, double *e2e)
{
	bool says = n && perf_node_says(n);
	size_t done = n ? perf_node_done(n) : 0, grain = n ? perf_node_grain(n) : 1;
	size_t at = l->base;
	double *h = buf, approx = 0;

	for (size_t k = 1; k <= l->slots; k++) {
		double *s = buf + k * PERF_FIELDS;
		size_t a = at + 1, b = next_end(l, at);
		struct perf_sum sum;

		at = b;
		if (e2e)
			e2e[k - 1] = NAN;
		if (!says || b > done || !perf_node_sum(n, a, b, &sum)) {
			slot_empty(s);
			continue;
		}
		slot_fill(s, sum.hw / sum.lines, sum.e2e / sum.lines, rank);
		if (e2e)
			e2e[k - 1] = sum.e2e / sum.lines;
		if (grain > 1 && ((a - 1) % grain != 0 || b % grain != 0))
			approx += (double)(b - a + 1);
	}
	for (size_t f = 0; f < PERF_FIELDS; f++)
		h[f] = 0;
	/* A node without a say must not hold everyone's count back. */
	h[H_MIN_DONE] = says ? (double)done : HUGE_VAL;
	h[H_SAYS] = says;
	h[H_MAX_DONE] = says ? (double)done : 0;
	h[H_SUM_DONE] = says ? (double)done : 0;
	h[H_MAX_GRAIN] = (double)grain;
	h[H_MAX_BASE] = (double)base;
	h[H_APPROX] = approx;
	h[H_MARK] = PERF_HEADER_MARK;
}

void
perf_header_read(const double *buf, struct perf_header *h)
{
	*h = (struct perf_header){
		.says = (int)buf[H_SAYS],
		.min_done = buf[H_SAYS] > 0 ? (size_t)buf[H_MIN_DONE] : 0,
		.max_done = (size_t)buf[H_MAX_DONE],
		.sum_done = buf[H_SUM_DONE],
		.max_grain = (size_t)buf[H_MAX_GRAIN],
		.max_base = (size_t)buf[H_MAX_BASE],
		.approx = buf[H_APPROX],
	};
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

static void
combine_header(const double *a, double *b)
{
	b[H_MIN_DONE] = fmin(a[H_MIN_DONE], b[H_MIN_DONE]);
	b[H_SAYS] += a[H_SAYS];
	b[H_MAX_DONE] = fmax(a[H_MAX_DONE], b[H_MAX_DONE]);
	b[H_SUM_DONE] += a[H_SUM_DONE];
	b[H_MAX_GRAIN] = fmax(a[H_MAX_GRAIN], b[H_MAX_GRAIN]);
	b[H_MAX_BASE] = fmax(a[H_MAX_BASE], b[H_MAX_BASE]);
	b[H_APPROX] += a[H_APPROX];
}

void
perf_combine(const double *in, double *inout, size_t len)
{
	/* Slots recognise themselves, so a part of a buffer combines as
	 * well as a whole one. */
	for (size_t off = 0; off + PERF_FIELDS <= len; off += PERF_FIELDS) {
		const double *a = in + off;
		double *b = inout + off;

		if (b[H_MARK] == PERF_HEADER_MARK) {
			combine_header(a, b);
			continue;
		}
		if (a[PERF_COUNT] == 0)
			continue;  /* nothing there: the common case in a wide job */
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

void
perf_unpack(const double *buf, const struct perf_layout *l, size_t *new_base,
            struct perf_iter *out, size_t *n)
{
	struct perf_header h;
	size_t at = l->base;

	perf_header_read(buf, &h);
	*n = 0;
	*new_base = l->base;
	/* Without a node that has a say there is nothing to move past. */
	for (size_t k = 1; h.says > 0 && k <= l->slots && next_end(l, at) <= h.min_done; k++) {
		const double *s = buf + k * PERF_FIELDS;
		size_t end = next_end(l, at);
		struct perf_iter *it;
		double c = s[PERF_COUNT];

		*new_base = end;
		if (c < 1) {
			at = end;
			continue;  /* no node had it (realigned counts): passed over */
		}
		it = &out[(*n)++];
		it->slot = k - 1;
		it->first = at + 1;
		it->iter = end;
		at = end;
		it->nodes = (int)c;
		it->hw_min = s[PERF_HW_MIN];
		it->hw_mean = s[PERF_HW_SUM] / c;
		it->hw_max = s[PERF_HW_MAX];
		it->e2e_min = s[PERF_E2E_MIN];
		it->e2e_mean = s[PERF_E2E_SUM] / c;
		it->e2e_max = s[PERF_E2E_MAX];
		it->r_min = s[PERF_R_MIN];
		it->r_mean = s[PERF_R_SUM] / c;
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
	size_t run;
	bool fired;
};

struct ranked {
	double v;
	int rank;
};

struct perf_policy {
	struct perf_policy_opts o;
	int nranks;
	struct streak ratio;
	struct streak *slow;   /* per rank */
	struct ranked *sorted; /* scratch for the medians */
	int *pos;              /* scratch: each rank's place in SORTED, -1: no value */
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
	p->pos = calloc((size_t)nranks, sizeof(*p->pos));
	if (!p->slow || !p->sorted || !p->pos) {
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
	free(p->pos);
	free(p);
}

/*
 * Advance S by WIDTH iterations with whether its condition holds; true
 * when an alert is due.  It is due from the WINDOW-th consecutive
 * iteration until it is emitted, and not again until the condition has
 * cleared.
 */
static bool
streak_due(struct streak *s, bool holds, size_t width, int window)
{
	if (!holds) {
		s->run = 0;
		s->fired = false;
		return false;
	}
	if (s->run < (size_t)window)
		s->run += width;
	return s->run >= (size_t)window && !s->fired;
}

static int
cmp_ranked(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;

	if (x->v != y->v)
		return (x->v > y->v) - (x->v < y->v);
	return (x->rank > y->rank) - (x->rank < y->rank);
}

/* Element I of SORTED[0..N) without element SKIP. */
static double
without(const struct ranked *sorted, int skip, int i)
{
	return sorted[i < skip ? i : i + 1].v;
}

/* The median of SORTED[0..N) without element SKIP (N >= 2). */
static double
median_without(const struct ranked *sorted, int n, int skip)
{
	int m = n - 1;

	if (m % 2)
		return without(sorted, skip, m / 2);
	return (without(sorted, skip, m / 2 - 1) + without(sorted, skip, m / 2)) / 2;
}

static void
node_name(const char *const *names, int rank, char *buf, size_t size)
{
	if (names && names[rank])
		snprintf(buf, size, "%s", names[rank]);
	else
		snprintf(buf, size, "rank %d", rank);
}

static size_t
feed_ratio(struct perf_policy *p, const struct perf_iter *it, size_t width,
           const char *const *names, struct perf_alert *out, size_t max)
{
	double r = p->o.below ? it->r_min : it->r_max;
	int rank = p->o.below ? it->r_min_rank : it->r_max_rank;
	bool holds = p->o.below ? r < p->o.threshold : r > p->o.threshold;
	struct perf_alert *a;
	char name[64];

	/* An alert that finds no room stays due for the next call. */
	if (!streak_due(&p->ratio, holds, width, p->o.window) || max == 0)
		return 0;
	a = &out[0];
	node_name(names, rank, name, sizeof(name));
	*a = (struct perf_alert){ .iter = it->iter, .rank = rank, .value = r };
	snprintf(a->kind, sizeof(a->kind), "ratio");
	snprintf(a->message, sizeof(a->message), "hw/e2e %.2f %s %.2f for %d iterations (%s on %s)",
	         r, p->o.below ? "below" : "above", p->o.threshold, p->o.window,
	         p->o.below ? "min" : "max", name);
	p->ratio.fired = true;
	return 1;
}

static void
straggler_message(struct perf_policy *p, const struct ranked *sorted, int n, int r, double v,
                  double ref, const char *const *names, struct perf_alert *a)
{
	char name[64], other[64];

	node_name(names, r, name, sizeof(name));
	a->value = (v / ref - 1) * 100;
	snprintf(a->kind, sizeof(a->kind), "straggler");
	if (n == 2) {
		node_name(names, sorted[0].rank == r ? sorted[1].rank : sorted[0].rank, other,
		          sizeof(other));
		snprintf(a->message, sizeof(a->message),
		         "%s e2e %.0f ms is %.0f%% above %s's %.0f ms for %d iterations",
		         name, v, a->value, other, ref, p->o.window);
	} else {
		snprintf(a->message, sizeof(a->message),
		         "%s e2e %.0f ms is %.0f%% above the median %.0f ms of the other nodes "
		         "for %d iterations", name, v, a->value, ref, p->o.window);
	}
}

size_t
perf_policy_feed(struct perf_policy *p, const struct perf_iter *it,
                 const double *node_e2e, const char *const *names,
                 struct perf_alert *out, size_t max)
{
	size_t n = 0, width = it->iter >= it->first ? it->iter - it->first + 1 : 1;
	int have = 0;

	if (p->o.threshold > 0)
		n += feed_ratio(p, it, width, names, out, max);
	if (p->o.straggler_pct <= 0 || !node_e2e)
		return n;
	/* Only the nodes that have a value are compared: one that has none
	 * says nothing about the others. */
	for (int r = 0; r < p->nranks; r++) {
		p->pos[r] = -1;
		if (isfinite(node_e2e[r]) && node_e2e[r] > 0)
			p->sorted[have++] = (struct ranked){ node_e2e[r], r };
	}
	if (have < 2)
		return n;
	qsort(p->sorted, (size_t)have, sizeof(*p->sorted), cmp_ranked);
	for (int i = 0; i < have; i++)
		p->pos[p->sorted[i].rank] = i;
	for (int r = 0; r < p->nranks; r++) {
		double ref = 0, v = node_e2e[r];
		bool slow = false;

		if (p->pos[r] >= 0) {
			ref = median_without(p->sorted, have, p->pos[r]);
			slow = v > ref * (1 + p->o.straggler_pct / 100);
		}
		if (!streak_due(&p->slow[r], slow, width, p->o.window) || n >= max)
			continue;
		out[n] = (struct perf_alert){ .iter = it->iter, .rank = r };
		straggler_message(p, p->sorted, have, r, v, ref, names, &out[n]);
		n++;
		p->slow[r].fired = true;
	}
	return n;
}

/* ---- the medians' sketch ----------------------------------------------- */

/*
 * Bin I holds values in (GAMMA^(I-1), GAMMA^I] with GAMMA = (1 + ALPHA) /
 * (1 - ALPHA); its representative 2 GAMMA^I / (GAMMA + 1) is within ALPHA
 * of every value in it.
 */
#define SKETCH_MAX_N (UINT32_C(1) << 31)

static double
sketch_gamma(void)
{
	return (1 + PERF_SKETCH_ALPHA) / (1 - PERF_SKETCH_ALPHA);
}

static int32_t
sketch_index(double v)
{
	double i = ceil(log(v) / log(sketch_gamma()));

	/* e2e times in ms from 1e-300 to 1e300 stay far inside int32 */
	return (int32_t)fmax(fmin(i, 1e9), -1e9);
}

/*
 * The bin (index relative to LO) that holds the median once WEIGHT more
 * values are added below the first bin (BELOW) or above the last: -1
 * when the median is one of them.
 */
static int
median_bin_after(const struct perf_sketch *s, uint64_t weight, bool below)
{
	uint64_t half = (s->n + weight + 1) / 2, seen = below ? weight : 0;

	if (seen >= half)
		return -1;
	for (int b = 0; b < PERF_SKETCH_BINS; b++) {
		seen += s->bins[b];
		if (seen >= half)
			return b;
	}
	return -1;  /* above every bin: the values added */
}

/* Move the window up by SHIFT bins, merging the lowest into the new first. */
static void
sketch_shift_up(struct perf_sketch *s, int32_t shift)
{
	int keep = shift < PERF_SKETCH_BINS ? PERF_SKETCH_BINS - (int)shift : 0;
	uint64_t merged = 0;

	for (int b = 0; b < PERF_SKETCH_BINS - keep + (keep > 0); b++)
		merged += s->bins[b];
	if (keep > 0)
		memmove(s->bins, s->bins + (PERF_SKETCH_BINS - keep), (size_t)keep * sizeof(s->bins[0]));
	memset(s->bins + keep, 0, (size_t)(PERF_SKETCH_BINS - keep) * sizeof(s->bins[0]));
	s->bins[0] = (uint32_t)merged;
	s->lo += shift;
}

/* Move the window down by SHIFT bins, merging the highest into the new last. */
static void
sketch_shift_down(struct perf_sketch *s, int32_t shift)
{
	int keep = shift < PERF_SKETCH_BINS ? PERF_SKETCH_BINS - (int)shift : 0;
	uint64_t merged = 0;

	for (int b = keep > 0 ? keep - 1 : 0; b < PERF_SKETCH_BINS; b++)
		merged += s->bins[b];
	if (keep > 0)
		memmove(s->bins + (PERF_SKETCH_BINS - keep), s->bins, (size_t)keep * sizeof(s->bins[0]));
	memset(s->bins, 0, (size_t)(PERF_SKETCH_BINS - keep) * sizeof(s->bins[0]));
	s->bins[PERF_SKETCH_BINS - 1] = (uint32_t)merged;
	s->lo -= shift;
}

/* Halve every count (rounding up): proportions, and the median, stay. */
static void
sketch_halve(struct perf_sketch *s)
{
	s->n = 0;
	for (int b = 0; b < PERF_SKETCH_BINS; b++) {
		s->bins[b] = s->bins[b] / 2 + (s->bins[b] & 1);
		s->n += s->bins[b];
	}
}

void
perf_sketch_add(struct perf_sketch *s, double value, uint32_t weight)
{
	int32_t i, b;
	int med;

	if (!(value > 0) || !isfinite(value) || weight == 0)
		return;
	/* Counts stay below 2^31 in all, so no bin, merged or not, overflows. */
	if (weight > SKETCH_MAX_N / 2)
		weight = SKETCH_MAX_N / 2;
	while (s->n + weight > SKETCH_MAX_N)
		sketch_halve(s);
	i = sketch_index(value);
	if (s->n == 0)
		s->lo = i - PERF_SKETCH_BINS / 2;
	b = i - s->lo;
	if (b >= PERF_SKETCH_BINS) {
		/* Up towards it, but the bin of the median (with this value
		 * counted) is never merged: beyond, the value goes to the top
		 * bin, where its rank is all that matters. */
		int32_t shift = b - (PERF_SKETCH_BINS - 1);

		med = median_bin_after(s, weight, false);
		if (med >= 0 && shift > med - 1)
			shift = med - 1;
		if (shift > 0)
			sketch_shift_up(s, shift);
		b = i - s->lo < PERF_SKETCH_BINS ? i - s->lo : PERF_SKETCH_BINS - 1;
	} else if (b < 0) {
		int32_t shift = -b;

		med = median_bin_after(s, weight, true);
		if (med >= 0 && shift > PERF_SKETCH_BINS - 2 - med)
			shift = PERF_SKETCH_BINS - 2 - med;
		if (shift > 0)
			sketch_shift_down(s, shift);
		b = i - s->lo >= 0 ? i - s->lo : 0;
	}
	s->bins[b] += weight;
	s->n += weight;
}

double
perf_sketch_median(const struct perf_sketch *s)
{
	int b = median_bin_after(s, 0, false);
	double g = sketch_gamma();

	if (b < 0)
		return NAN;
	return 2 * pow(g, (double)(s->lo + b)) / (g + 1);
}
