/*
 * test_phase.c - the agent's lifecycle table (phase.c) and the machine
 * that moves through it and logs each move (fsm.c), without MPI.
 */
#include "autoconf.h"

#include "../vigil_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/fsm.h"
#include "agent/phase.h"
#include "lib/log.h"

#define NPHASES (PH_EXIT + 1)
#define NEVENTS (PE_LEAVE + 1)

/* The rows phase.c's table must have, and no others. */
static const struct {
	enum phase_event ev;
	enum phase from, to;
} want[] = {
	{ PE_PREP, PH_START, PH_PREP },
	{ PE_GATHER, PH_START, PH_GATHER },
	{ PE_GATHER, PH_PREP, PH_GATHER },
	{ PE_REPORTED, PH_GATHER, PH_PLAN },
	{ PE_LAUNCH, PH_GATHER, PH_RUN },
	{ PE_LAUNCH, PH_PLAN, PH_RUN },
	{ PE_DRY_RUN, PH_GATHER, PH_DRYRUN },
	{ PE_DRY_RUN, PH_PLAN, PH_DRYRUN },
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

static int
wanted(int from, int ev)
{
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		if ((int)want[i].from == from && (int)want[i].ev == ev)
			return (int)want[i].to;
	return -1;
}

/* Every pair of phase and event: the row above, or a refusal. */
static void
test_rows(void **state)
{
	(void)state;
	for (int p = 0; p < NPHASES; p++)
		for (int e = 0; e < NEVENTS; e++)
			assert_int_equal(phase_next((enum phase)p, (enum phase_event)e), wanted(p, e));
	/* nothing leaves EXIT */
	for (int e = 0; e < NEVENTS; e++)
		assert_int_equal(phase_next(PH_EXIT, (enum phase_event)e), -1);
}

static void
test_names(void **state)
{
	(void)state;
	for (int p = 0; p < NPHASES; p++)
		assert_string_not_equal(phase_name((enum phase)p), "?");
	for (int e = 0; e < NEVENTS; e++)
		assert_string_not_equal(phase_event_name((enum phase_event)e), "?");
	assert_string_equal(phase_name(PH_DRYRUN), "dry-run");
	assert_string_equal(phase_event_name(PE_REPORTED), "reported");
	assert_string_equal(phase_name((enum phase)NPHASES), "?");
	assert_string_equal(phase_name((enum phase)-1), "?");
	assert_string_equal(phase_event_name((enum phase_event)NEVENTS), "?");
}

/* A job's usual course, one event at a time, ends in EXIT. */
static void
test_course(void **state)
{
	static const enum phase_event node[] = { PE_GATHER, PE_REPORTED, PE_LAUNCH, PE_ORPHAN,
	                                         PE_HOOKS, PE_DRAIN, PE_HOLD, PE_RELEASE };
	static const enum phase_event coordinator[] = { PE_PREP, PE_GATHER, PE_LAUNCH, PE_FINAL,
	                                                PE_DRAIN, PE_DRAINED };
	enum phase ph = PH_START;

	(void)state;
	for (size_t i = 0; i < sizeof(node) / sizeof(node[0]); i++)
		assert_true(phase_step(&ph, node[i]) >= 0);
	assert_int_equal(ph, PH_EXIT);
	ph = PH_START;
	for (size_t i = 0; i < sizeof(coordinator) / sizeof(coordinator[0]); i++)
		assert_true(phase_step(&ph, coordinator[i]) >= 0);
	assert_int_equal(ph, PH_EXIT);
}

/* What fsm_step() reports through its seam. */
struct seen {
	int n, from, ev, to;
	const char *actor;
};

static void
on_step(void *arg, const struct fsm_table *t, int from, int ev, int to)
{
	struct seen *s = arg;

	s->n++;
	s->actor = t->actor;
	s->from = from;
	s->ev = ev;
	s->to = to;
}

/* An undefined move is refused: the phase stays, and the seam hears of it. */
static void
test_refused(void **state)
{
	struct seen s = { 0 };
	enum phase ph = PH_HOLD;

	(void)state;
	fsm_trace(on_step, &s);
	assert_int_equal(phase_step(&ph, PE_DRAIN), -1);
	assert_int_equal(ph, PH_HOLD);
	assert_int_equal(s.n, 1);
	assert_string_equal(s.actor, "agent");
	assert_int_equal(s.to, -1);
	ph = PH_EXIT;
	assert_int_equal(phase_step(&ph, PE_LEAVE), -1);
	assert_int_equal(ph, PH_EXIT);
	ph = PH_GATHER;
	assert_int_equal(phase_step(&ph, PE_LAUNCH), PH_RUN);
	assert_int_equal(ph, PH_RUN);
	assert_int_equal(s.n, 3);
	assert_int_equal(s.from, PH_GATHER);
	assert_int_equal(s.ev, PE_LAUNCH);
	assert_int_equal(s.to, PH_RUN);
	fsm_trace(NULL, NULL);
}

/* What phase_step() logs at LEVEL: stderr into a file, the file's text in BUF. */
static void
logged(enum phase *ph, enum phase_event ev, enum log_level level, char *buf, size_t len)
{
	FILE *f = tmpfile();
	int saved, rc;
	size_t n;

	assert_non_null(f);
	fflush(stderr);
	saved = dup(STDERR_FILENO);
	assert_true(saved >= 0);
	assert_true(dup2(fileno(f), STDERR_FILENO) >= 0);
	log_set_level(level);
	(void)phase_step(ph, ev);
	log_set_level(LOG_LEVEL_WARN);
	rc = dup2(saved, STDERR_FILENO);
	close(saved);
	assert_true(rc >= 0);
	rewind(f);
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	fclose(f);
}

/* Each move logged by name at debug level, and each refusal; nothing at the default level. */
static void
test_logged(void **state)
{
	enum phase ph = PH_GATHER;
	char buf[512];

	(void)state;
	logged(&ph, PE_REPORTED, LOG_LEVEL_DEBUG, buf, sizeof(buf));
	assert_non_null(strstr(buf, "debug: agent: gather -> plan (reported)\n"));
	logged(&ph, PE_DRAINED, LOG_LEVEL_DEBUG, buf, sizeof(buf));
	assert_non_null(strstr(buf, "debug: agent: drained refused in plan\n"));
	assert_int_equal(ph, PH_PLAN);
	logged(&ph, PE_LAUNCH, LOG_LEVEL_INFO, buf, sizeof(buf));
	assert_int_equal(ph, PH_RUN);
	assert_string_equal(buf, "");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rows),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_course),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_logged),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
