/*
 * phase.h - the agent's own phases in `vigil run` and the table of
 * events that move between them (run.c drives them; coord.c's phases
 * live inside RUN on the coordinator's node).
 *
 *   START --prep--> PREP              staging or hooks before the gather
 *   START, PREP --gather--> GATHER    this node's report to the coordinator
 *   GATHER --reported--> PLAN         a node waits for the coordinator's plan
 *   GATHER, PLAN --launch--> RUN      the plan goes (GATHER: the coordinator)
 *   GATHER, PLAN --dry-run--> DRYRUN  --dry-run: every node's description
 *   RUN --orphan--> RUN               the coordinator fell silent here: a
 *                                     deadline for the successor's word
 *   RUN --alone--> RUN                the successor heard no majority: an
 *                                     earlier deadline
 *   RUN --final--> FINAL              the coordinator's last timing reduction
 *   RUN, FINAL --hooks--> HOOKS       the requeue and end hooks
 *   RUN, FINAL, HOOKS --drain--> DRAIN    output, messages, reductions
 *   DRAIN --hold--> HOLD              --hold-on-failure keeps the allocation
 *   DRAIN --drained--> EXIT
 *   HOLD --release--> EXIT            the hold is over, or SIGTERM
 *   any but EXIT --leave--> EXIT      the agent ends here, with its status
 *
 * The table in phase.c is the whole truth.  Pure: no I/O beyond the debug
 * log of each step (fsm.h), so tests/unit/agent/test_phase.c checks it
 * without MPI.
 */
#ifndef VIGIL_PHASE_H
#define VIGIL_PHASE_H

enum phase {
	PH_START,     /* set up, before the survey */
	PH_PREP,
	PH_GATHER,
	PH_PLAN,
	PH_DRYRUN,
	PH_RUN,
	PH_FINAL,
	PH_HOOKS,
	PH_DRAIN,
	PH_HOLD,
	PH_EXIT,
};

enum phase_event {
	PE_PREP,
	PE_GATHER,
	PE_REPORTED,
	PE_LAUNCH,
	PE_DRY_RUN,
	PE_ORPHAN,
	PE_ALONE,
	PE_FINAL,
	PE_HOOKS,
	PE_DRAIN,
	PE_HOLD,
	PE_DRAINED,
	PE_RELEASE,
	PE_LEAVE,
};

/* "gather", "dry-run", ...; "?" for a value out of range. */
const char *phase_name(enum phase ph);
const char *phase_event_name(enum phase_event ev);

/* The phase EV leads to from FROM, or -1: the table has no such row. */
int phase_next(enum phase from, enum phase_event ev);

/*
 * EV in the phase *PH: *PH becomes the row's target, which is returned,
 * logged "agent: FROM -> TO (EVENT)" at debug level; or, without a row,
 * -1 and *PH stays, the refusal logged.
 */
int phase_step(enum phase *ph, enum phase_event ev);

#endif
