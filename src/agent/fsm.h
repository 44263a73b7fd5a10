/*
 * fsm.h - a lifecycle as a table: {event, from, to} rows and one lookup
 * (after flux-core's broker state_machine.c).
 *
 * Each actor with phases (the coordinator, coord.c; the agent, phase.c)
 * keeps its own table of rows and names; this file moves a phase through
 * one and logs each move by name at debug level (vigil run -v), as
 * "ACTOR: FROM -> TO (EVENT)".  A pair that has no row changes nothing:
 * it is refused, and the refusal is logged too.  No allocation; safe in
 * loop callbacks.
 */
#ifndef VIGIL_FSM_H
#define VIGIL_FSM_H

#include <stddef.h>

/* The number of rows (or names) in a static array, for struct fsm_table. */
#define FSM_NELEM(a) (sizeof(a) / sizeof((a)[0]))

struct fsm_row {
	int event, from, to;
};

struct fsm_table {
	const char *actor;               /* names the machine in the log: "coordinator" */
	const char *const *phases;       /* a name for each phase, by value */
	int nphases;
	const char *const *events;       /* a name for each event, by value */
	int nevents;
	const struct fsm_row *rows;
	size_t nrows;
};

/* The phase EVENT leads to from FROM, or -1 where the table has no row for
 * the pair (the event is refused).  O(rows). */
int fsm_next(const struct fsm_table *t, int from, int event);

/* The name of PHASE or EVENT in T, or "?" for a value T does not name. */
const char *fsm_phase_name(const struct fsm_table *t, int phase);
const char *fsm_event_name(const struct fsm_table *t, int event);

/*
 * EVENT in the phase *PHASE: where T has a row, *PHASE becomes its target
 * and that is returned, logged "ACTOR: FROM -> TO (EVENT)"; where it has
 * none, -1, *PHASE stays, logged "ACTOR: EVENT refused in FROM".  Both at
 * debug level.
 */
int fsm_step(const struct fsm_table *t, int *phase, int event);

/*
 * A seam for tests: every fsm_step() of every table also goes to FN, with
 * TO < 0 for a refusal.  FN NULL ends it.  One observer for the process.
 */
typedef void fsm_trace_fn(void *arg, const struct fsm_table *t, int from, int event, int to);
void fsm_trace(fsm_trace_fn *fn, void *arg);

#endif
