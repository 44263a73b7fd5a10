/*
 * report_cost.c - where a job's time went: an attempt's wall time cut at
 * the dates of its events, and the chain of attempts joined (ETTR).
 */
#include "autoconf.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report/report_cost.h"

const char *const cost_names[COST_N] = {
	[COST_LAUNCH] = "launch", [COST_PRECHECK] = "precheck", [COST_STAGING] = "staging", [COST_START] = "start",
	[COST_PRODUCTIVE] = "productive", [COST_STRAGGLER] = "straggler",
	[COST_DETECTION] = "detection", [COST_CHECKPOINT] = "checkpoint", [COST_STOP] = "stop",
	[COST_REDONE] = "redone", [COST_OTHER] = "other", [COST_GAP] = "between_attempts",
};

struct mark {
	double t;
	enum cost_cause cause;  /* of the stretch from T to the next mark */
	int order;              /* the order of the roles: ties keep it */
};

static int
cmp_mark(const void *a, const void *b)
{
	const struct mark *x = a, *y = b;

	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return x->order - y->order;
}

static void
add(struct mark *m, size_t *n, double t, enum cost_cause cause)
{
	if (isnan(t))
		return;
	m[*n].t = t;
	m[*n].cause = cause;
	m[*n].order = (int)*n;
	(*n)++;
}

/* The dates of M as marks, in the order of their roles. */
static size_t
marks(const struct cost_marks *m, struct mark *out)
{
	bool iters = !isnan(m->it_first_end) && !isnan(m->it_last_end) && m->iterations > 0;
	bool detected = !isnan(m->fault) && (!iters || m->fault >= m->it_last_end);
	size_t n = 0;

	if (m->alloc < m->start)
		add(out, &n, m->alloc, COST_LAUNCH);
	add(out, &n, m->start, !isnan(m->verdict) ? COST_PRECHECK : COST_START);
	add(out, &n, m->verdict, !isnan(m->staged) ? COST_STAGING : COST_START);
	add(out, &n, m->staged, COST_START);
	if (iters) {
		double ms = m->it_first_ms > 0 ? m->it_first_ms : 0;

		add(out, &n, m->it_first_end - ms / 1000, COST_ITER);
		add(out, &n, m->it_last_end, detected ? COST_DETECTION : COST_STOP);
	}
	if (detected)
		add(out, &n, m->fault, COST_STOP);
	if (!isnan(m->ckpt)) {
		add(out, &n, m->ckpt, COST_CHECKPOINT);
		add(out, &n, m->exit_last > m->ckpt ? m->exit_last :
		             m->stop > m->ckpt ? m->stop : NAN, COST_STOP);
	} else {
		add(out, &n, m->stop, COST_STOP);
	}
	return n;
}

/* Where attempt M started: its allocation, when known and before the agent. */
static double
attempt_start(const struct cost_marks *m)
{
	return m->alloc < m->start ? m->alloc : m->start;
}

/* The stretch of iterations, LEN seconds, split by the account. */
static void
split_iterations(struct cost_attempt *a, double len)
{
	double p = a->m.median_ms / 1000, s = (a->m.max_ms - a->m.median_ms) / 1000, f = 1;

	if (!(p >= 0))
		p = 0;
	if (!(s >= 0))
		s = 0;
	/* the e2e times cover more than the clock saw (clocks, rounding):
	 * the clock's length is shared in their proportion */
	if (p + s > len)
		f = p + s > 0 ? len / (p + s) : 0;
	a->secs[COST_PRODUCTIVE] += p * f;
	a->secs[COST_STRAGGLER] += s * f;
	a->secs[COST_OTHER] += len - (p + s) * f;
}

void
cost_split(struct cost_attempt *a)
{
	struct mark m[COST_SEGS];
	double start = attempt_start(&a->m), end = a->m.end;
	size_t n;

	memset(a->secs, 0, sizeof(a->secs));
	a->wall = 0;
	a->nsegs = 0;
	a->redone_iters = 0;
	if (isnan(start) || isnan(end) || end < start)
		return;
	a->wall = end - start;
	n = marks(&a->m, m);
	for (size_t i = 0; i < n; i++)
		m[i].t = m[i].t < start ? start : m[i].t > end ? end : m[i].t;
	qsort(m, n, sizeof(*m), cmp_mark);
	for (size_t i = 0; i < n; i++) {
		double to = i + 1 < n ? m[i + 1].t : end, len = to - m[i].t;

		if (len <= 0)
			continue;
		if (m[i].cause == COST_ITER)
			split_iterations(a, len);
		else
			a->secs[m[i].cause] += len;
		a->segs[a->nsegs].from = m[i].t;
		a->segs[a->nsegs].to = to;
		a->segs[a->nsegs].cause = m[i].cause;
		a->nsegs++;
	}
}

/*
 * A's gap, from the attempt before's END, split at A's allocation's
 * eligible time: both NAN without one or without Slurm's start (the gap
 * then also holds the batch script's start), the date bounded by the gap.
 */
static void
split_gap(struct cost_attempt *a, double end)
{
	double el = a->m.eligible, gap = a->secs[COST_GAP];

	if (isnan(el) || isnan(a->m.alloc) || !(a->m.alloc < a->m.start)) {
		a->requeue_s = a->queue_s = NAN;
		return;
	}
	a->requeue_s = el - end < 0 ? 0 : el - end > gap ? gap : el - end;
	a->queue_s = gap - a->requeue_s;
}

void
cost_chain(struct cost_attempt *a, size_t n, struct cost_chain *out)
{
	memset(out, 0, sizeof(*out));
	out->ettr = NAN;
	for (size_t k = 0; k < n; k++) {
		a[k].secs[COST_GAP] = 0;
		a[k].secs[COST_REDONE] = 0;
		a[k].redone_iters = 0;
		a[k].requeue_s = a[k].queue_s = 0;
		if (k > 0) {
			const struct cost_attempt *p = &a[k - 1];
			double gap = attempt_start(&a[k].m) - p->m.end;

			a[k].secs[COST_GAP] = gap > 0 ? gap : 0;
			split_gap(&a[k], p->m.end);
			out->requeue_s += a[k].requeue_s;
			out->queue_s += a[k].queue_s;
			/* what the attempt before did after its last confirmed
			 * checkpoint: all of it, when it saved none */
			if (!p->m.saved && p->m.iterations > 0 && p->m.median_ms > 0) {
				double pace = p->m.median_ms / 1000 / p->m.iterations;
				double redo = p->m.iterations * pace;

				if (redo > a[k].secs[COST_PRODUCTIVE])
					redo = a[k].secs[COST_PRODUCTIVE];
				a[k].redone_iters = redo / pace;
				a[k].secs[COST_REDONE] = redo;
				a[k].secs[COST_PRODUCTIVE] -= redo;
			}
		}
		for (int c = 0; c < COST_N; c++)
			out->secs[c] += a[k].secs[c];
	}
	out->t0 = n > 0 ? attempt_start(&a[0].m) : NAN;
	if (n > 0 && a[n - 1].m.end > attempt_start(&a[0].m))
		out->elapsed = a[n - 1].m.end - attempt_start(&a[0].m);
	if (out->elapsed > 0)
		out->ettr = out->secs[COST_PRODUCTIVE] / out->elapsed;
}
