/*
 * phase.c - the agent's lifecycle table (phase.h).
 */
#include "autoconf.h"

#include "agent/fsm.h"
#include "agent/phase.h"

static const char *const phase_names[] = {
	[PH_START] = "start", [PH_PREP] = "prep", [PH_GATHER] = "gather", [PH_PLAN] = "plan",
	[PH_DRYRUN] = "dry-run", [PH_RUN] = "run", [PH_FINAL] = "final", [PH_HOOKS] = "hooks",
	[PH_DRAIN] = "drain", [PH_HOLD] = "hold", [PH_EXIT] = "exit",
};

static const char *const event_names[] = {
	[PE_PREP] = "prep", [PE_GATHER] = "gather", [PE_REPORTED] = "reported",
	[PE_LAUNCH] = "launch", [PE_DRY_RUN] = "dry-run", [PE_ORPHAN] = "orphan",
	[PE_ALONE] = "alone", [PE_FINAL] = "final", [PE_HOOKS] = "hooks", [PE_DRAIN] = "drain",
	[PE_HOLD] = "hold", [PE_DRAINED] = "drained", [PE_RELEASE] = "release",
	[PE_LEAVE] = "leave",
};

static const struct fsm_row rows[] = {
	{ PE_PREP, PH_START, PH_PREP },
	{ PE_GATHER, PH_START, PH_GATHER },
	{ PE_GATHER, PH_PREP, PH_GATHER },
	{ PE_REPORTED, PH_GATHER, PH_PLAN },
	/* the coordinator plans at the end of the gather; a node when the plan comes */
	{ PE_LAUNCH, PH_GATHER, PH_RUN },
	{ PE_LAUNCH, PH_PLAN, PH_RUN },
	{ PE_DRY_RUN, PH_GATHER, PH_DRYRUN },
	{ PE_DRY_RUN, PH_PLAN, PH_DRYRUN },
	/* a new deadline in the same phase */
	{ PE_ORPHAN, PH_RUN, PH_RUN },
	{ PE_ALONE, PH_RUN, PH_RUN },
	{ PE_FINAL, PH_RUN, PH_FINAL },
	{ PE_HOOKS, PH_RUN, PH_HOOKS },
	{ PE_HOOKS, PH_FINAL, PH_HOOKS },
	{ PE_DRAIN, PH_RUN, PH_DRAIN },
	{ PE_DRAIN, PH_FINAL, PH_DRAIN },
	{ PE_DRAIN, PH_HOOKS, PH_DRAIN },
	{ PE_HOLD, PH_DRAIN, PH_HOLD },
	{ PE_DRAINED, PH_DRAIN, PH_EXIT },
	{ PE_RELEASE, PH_HOLD, PH_EXIT },
	{ PE_LEAVE, PH_START, PH_EXIT },
	{ PE_LEAVE, PH_PREP, PH_EXIT },
	{ PE_LEAVE, PH_GATHER, PH_EXIT },
	{ PE_LEAVE, PH_PLAN, PH_EXIT },
	{ PE_LEAVE, PH_DRYRUN, PH_EXIT },
	{ PE_LEAVE, PH_RUN, PH_EXIT },
	{ PE_LEAVE, PH_FINAL, PH_EXIT },
	{ PE_LEAVE, PH_HOOKS, PH_EXIT },
	{ PE_LEAVE, PH_DRAIN, PH_EXIT },
	{ PE_LEAVE, PH_HOLD, PH_EXIT },
};

static const struct fsm_table table = {
	"agent", phase_names, (int)FSM_NELEM(phase_names),
	event_names, (int)FSM_NELEM(event_names), rows, FSM_NELEM(rows),
};

const char *
phase_name(enum phase ph)
{
	return fsm_phase_name(&table, (int)ph);
}

const char *
phase_event_name(enum phase_event ev)
{
	return fsm_event_name(&table, (int)ev);
}

int
phase_next(enum phase from, enum phase_event ev)
{
	return fsm_next(&table, (int)from, (int)ev);
}

int
phase_step(enum phase *ph, enum phase_event ev)
{
	int p = (int)*ph, rc = fsm_step(&table, &p, (int)ev);

	*ph = (enum phase)p;
	return rc;
}
