/*
 * hang.c - the hang rule (hang.h): a node's own progress, the
 * coordinator's detector, and the grouping of the nodes' forensics.
 */
#include "autoconf.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "agent/hang.h"
#include "lib/util.h"

double
hang_timeout(double floor_s, double median_s)
{
	double t = HANG_MULT * (isfinite(median_s) && median_s > 0 ? median_s : 0);

	return t > floor_s ? t : floor_s;
}

/* ---- every node ----------------------------------------------------------------- */

struct hang_local {
	char keys[HANG_KEYS][32];
	double count[HANG_KEYS];
	int nkeys;
	double lines;           /* timing lines this attempt */
	double last_line;       /* < 0: none this attempt */
	double last_out;        /* < 0: none yet */
	double e2e[HANG_E2E_RING];
	int ne2e, e2e_at;
};

struct hang_local *
hang_local_new(void)
{
	struct hang_local *l = calloc(1, sizeof(*l));

	if (l) {
		l->last_line = -1;
		l->last_out = -1;
	}
	return l;
}

void
hang_local_free(struct hang_local *l)
{
	free(l);
}

void
hang_local_attempt(struct hang_local *l, double now)
{
	(void)now;
	l->nkeys = 0;
	l->lines = 0;
	l->last_line = -1;
}

/* The slot of KEY; the last one is shared by every key past HANG_KEYS. */
static int
key_slot(struct hang_local *l, const char *key)
{
	for (int i = 0; i < l->nkeys; i++)
		if (strncmp(l->keys[i], key, sizeof(l->keys[i]) - 1) == 0)
			return i;
	if (l->nkeys == HANG_KEYS)
		return HANG_KEYS - 1;
	snprintf(l->keys[l->nkeys], sizeof(l->keys[0]), "%s", key);
	l->count[l->nkeys] = 0;
	return l->nkeys++;
}

void
hang_local_line(struct hang_local *l, const char *key, double e2e_ms, double now)
{
	l->count[key_slot(l, key ? key : "")]++;
	l->lines++;
	l->last_line = now;
	l->last_out = now;
	if (isfinite(e2e_ms) && e2e_ms > 0) {
		l->e2e[l->e2e_at] = e2e_ms;
		l->e2e_at = (l->e2e_at + 1) % HANG_E2E_RING;
		if (l->ne2e < HANG_E2E_RING)
			l->ne2e++;
	}
}

void
hang_local_output(struct hang_local *l, double now)
{
	l->last_out = now;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

void
hang_local_fill(const struct hang_local *l, double now, bool trains, bool saving,
                struct msg_heartbeat *b)
{
	double v[HANG_E2E_RING], iters = 0;

	memset(b, 0, sizeof(*b));
	b->progress = true;
	b->trains = trains;
	b->saving = saving;
	b->lines = l->lines;
	/* the node's iterations: as far as its slowest process (a stopped one holds it) */
	for (int i = 0; i < l->nkeys; i++)
		if (i == 0 || l->count[i] < iters)
			iters = l->count[i];
	b->iters = iters;
	b->quiet_s = l->last_line >= 0 ? now - l->last_line : -1;
	b->out_quiet_s = l->last_out >= 0 ? now - l->last_out : -1;
	if (l->ne2e > 0) {
		memcpy(v, l->e2e, (size_t)l->ne2e * sizeof(v[0]));
		qsort(v, (size_t)l->ne2e, sizeof(v[0]), cmp_double);
		b->e2e_ms = v[l->ne2e / 2];
	}
}

/* ---- the coordinator ---------------------------------------------------------------- */

struct hrank {
	bool trains;
	double iters;
	double beat_at;      /* its last heartbeat with progress; < 0: none */
};

struct hang {
	struct hang_opts o;
	struct hrank *r;
	double attempt_at;   /* the attempt's start */
	bool any_line;       /* a timing line came in this job (any attempt) */
	bool attempt_line;   /* ... in this attempt */
	double last_line;    /* the last timing line anywhere (node's clock offsets agree) */
	double last_out;     /* the last output anywhere; < 0: none */
	double last_save;    /* the last heartbeat that showed a save; < 0: none */
	double e2e_s;        /* the median e2e of the latest node to say one (s); 0 */
	bool fired;          /* said once; again only after progress */
	enum hang_kind fired_kind;
	double fired_at;
};

struct hang *
hang_new(const struct hang_opts *o, double now)
{
	struct hang *h;

	if (!o || o->size < 1) {
		errno = EINVAL;
		return NULL;
	}
	h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	h->o = *o;
	h->r = calloc((size_t)o->size, sizeof(*h->r));
	if (!h->r) {
		free(h);
		errno = ENOMEM;
		return NULL;
	}
	for (int i = 0; i < o->size; i++)
		h->r[i].beat_at = -1;
	h->last_out = h->last_save = -1;
	hang_attempt(h, now);
	return h;
}

void
hang_free(struct hang *h)
{
	if (!h)
		return;
	free(h->r);
	free(h);
}

bool
hang_enabled(const struct hang *h)
{
	return h && (h->o.floor_s > 0 || h->o.silence_s > 0);
}

void
hang_attempt(struct hang *h, double now)
{
	h->attempt_at = now;
	h->attempt_line = false;
	h->last_line = now;
	h->fired = false;
	for (int i = 0; i < h->o.size; i++)
		h->r[i].iters = 0;
}

void
hang_beat(struct hang *h, int rank, const struct msg_heartbeat *b, double now)
{
	struct hrank *r;

	if (!h || rank < 0 || rank >= h->o.size || !b->progress)
		return;
	r = &h->r[rank];
	r->trains = b->trains;
	r->iters = b->iters;
	r->beat_at = now;
	if (b->saving)
		h->last_save = now;
	if (b->quiet_s >= 0 && b->lines > 0) {
		double at = now - b->quiet_s;

		h->any_line = true;
		/* A node's last line may be the attempt before's (its count
		 * goes on, a heartbeat was on its way): no line of this one,
		 * whose start still has its allowance. */
		if (at >= h->attempt_at) {
			h->attempt_line = true;
			if (at > h->last_line)
				h->last_line = at;
		}
		if (h->fired && at > h->fired_at)
			h->fired = false;  /* it moved again: a later hang is a new one */
	}
	if (b->out_quiet_s >= 0) {
		double at = now - b->out_quiet_s;

		if (at > h->last_out)
			h->last_out = at;
		if (h->fired && h->fired_kind == HANG_SILENCE && at > h->fired_at)
			h->fired = false;
	}
	if (b->e2e_ms > 0 && isfinite(b->e2e_ms))
		h->e2e_s = b->e2e_ms / 1000;
}

double
hang_current_timeout(const struct hang *h)
{
	if (!h)
		return 0;
	if (h->o.floor_s > 0 && h->any_line)
		return hang_timeout(h->o.floor_s, h->e2e_s) *
		       (h->attempt_line ? 1 : HANG_FIRST_MULT);
	return h->o.silence_s;
}

static double
later(double a, double b)
{
	return a > b ? a : b;
}

/* Every training node's word came after DEADLINE: their silence is heard, not assumed. */
static bool
all_heard_after(const struct hang *h, double deadline)
{
	int trains = 0;

	for (int i = 0; i < h->o.size; i++) {
		if (!h->r[i].trains)
			continue;
		trains++;
		if (h->r[i].beat_at < deadline)
			return false;
	}
	return trains > 0;
}

/* The one node HANG_BEHIND iterations behind the furthest, if exactly one. */
static void
find_suspect(const struct hang *h, struct hang_finding *f)
{
	double max = -1;
	int behind = 0;

	f->suspect = f->furthest = -1;
	for (int i = 0; i < h->o.size; i++)
		if (h->r[i].trains && h->r[i].iters > max) {
			max = h->r[i].iters;
			f->furthest = i;
		}
	f->max_iters = max > 0 ? max : 0;
	for (int i = 0; i < h->o.size; i++)
		if (h->r[i].trains && h->r[i].iters <= max - HANG_BEHIND) {
			behind++;
			f->suspect = i;
			f->suspect_iters = h->r[i].iters;
		}
	if (behind != 1)
		f->suspect = -1;
}

enum hang_kind
hang_check(struct hang *h, double now, struct hang_finding *f)
{
	double since = -1, allow = 0;
	enum hang_kind kind = HANG_NONE;

	memset(f, 0, sizeof(*f));
	f->suspect = f->furthest = -1;
	if (!h || h->fired)
		return HANG_NONE;
	if (h->o.floor_s > 0 && h->any_line) {
		since = later(h->attempt_line ? h->last_line : h->attempt_at, h->last_save);
		allow = hang_current_timeout(h);
		if (now - since > allow)
			kind = HANG_ITERATIONS;
	}
	if (kind == HANG_NONE && h->o.silence_s > 0) {
		since = later(later(h->last_out, h->attempt_at), h->last_save);
		allow = h->o.silence_s;
		if (now - since > allow)
			kind = HANG_SILENCE;
	}
	if (kind == HANG_NONE || !all_heard_after(h, since + allow))
		return HANG_NONE;
	h->fired = true;
	h->fired_kind = kind;
	h->fired_at = now;
	f->kind = kind;
	f->silent_s = now - since;
	f->timeout_s = allow;
	f->first = kind == HANG_ITERATIONS && !h->attempt_line;
	find_suspect(h, f);
	return kind;
}

void
hang_describe(const struct hang_finding *f, char *buf, size_t len)
{
	if (f->kind == HANG_SILENCE)
		snprintf(buf, len, "no output from any node's training for %.1f s (--hang-silence "
		         "%.1f s)", f->silent_s, f->timeout_s);
	else
		snprintf(buf, len, "no iteration on any node for %.1f s (hang timeout %.1f s%s)",
		         f->silent_s, f->timeout_s, f->first ? ", before the first iteration" : "");
}

enum run_on_hang
hang_policy(const struct run_opts *o)
{
	if (o->on_hang != RUN_ON_HANG_AUTO)
		return (enum run_on_hang)o->on_hang;
	return o->resume ? RUN_ON_HANG_REQUEUE : o->restart_max > 0 ? RUN_ON_HANG_RESTART
	                                                           : RUN_ON_HANG_ALERT;
}

bool
hang_arms_faulthandler(const struct run_opts *o)
{
	enum run_on_hang p = hang_policy(o);

	return (o->hang_timeout_s > 0 || o->hang_silence_s > 0) &&
	       (p == RUN_ON_HANG_STOP || p == RUN_ON_HANG_REQUEUE);
}
