/*
 * fsm.c - the lookup and the log of a lifecycle table (fsm.h).
 */
#include "autoconf.h"

#include "agent/fsm.h"
#include "lib/log.h"

static fsm_trace_fn *trace_fn;
static void *trace_arg;

int
fsm_next(const struct fsm_table *t, int from, int event)
{
	for (size_t i = 0; i < t->nrows; i++)
		if (t->rows[i].event == event && t->rows[i].from == from)
			return t->rows[i].to;
	return -1;
}

const char *
fsm_phase_name(const struct fsm_table *t, int phase)
{
	return phase >= 0 && phase < t->nphases && t->phases[phase] ? t->phases[phase] : "?";
}

const char *
fsm_event_name(const struct fsm_table *t, int event)
{
	return event >= 0 && event < t->nevents && t->events[event] ? t->events[event] : "?";
}

int
fsm_step(const struct fsm_table *t, int *phase, int event)
{
	int from = *phase, to = fsm_next(t, from, event);

	if (trace_fn)
		trace_fn(trace_arg, t, from, event, to);
	if (to < 0) {
		LOG_DEBUG("%s: %s refused in %s", t->actor, fsm_event_name(t, event),
		          fsm_phase_name(t, from));
		return -1;
	}
	LOG_DEBUG("%s: %s -> %s (%s)", t->actor, fsm_phase_name(t, from), fsm_phase_name(t, to),
	          fsm_event_name(t, event));
	*phase = to;
	return to;
}

void
fsm_trace(fsm_trace_fn *fn, void *arg)
{
	trace_fn = fn;
	trace_arg = arg;
}
