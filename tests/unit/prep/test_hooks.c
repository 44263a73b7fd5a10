/*
 * test_hooks.c - lifecycle scripts: the --hook spec, a phase's hooks in
 * order, where they run, their environment, tagged output, failures that
 * fail or warn, and their time limit.
 */
#include "autoconf.h"

#include "../vigil_test.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/config.h"
#include "lib/loop.h"
#include "prep/hooks.h"

struct seen {
	char lines[16][300];
	int nlines;
	struct hooks_result res[4];
	int nres;
};

static void
on_say(void *arg, const char *line)
{
	struct seen *s = arg;

	if (s->nlines < 16)
		snprintf(s->lines[s->nlines++], sizeof(s->lines[0]), "%s", line);
}

static void
on_done(void *arg, const struct hooks_result *r)
{
	struct seen *s = arg;

	if (s->nres < 4)
		s->res[s->nres++] = *r;
}

static void
test_spec(void **state)
{
	struct config_hook h;
	char why[256];

	(void)state;
	assert_int_equal(hooks_parse_spec("pre-launch=echo a=b", &h, why, sizeof(why)), 0);
	assert_int_equal(h.phase, CONFIG_HOOK_PRELAUNCH);
	assert_string_equal(h.command, "echo a=b");
	assert_false(h.coordinator);
	assert_false(h.warn);
	assert_true(h.timeout_s == 0);
	hooks_spec_free(&h);
	assert_int_equal(hooks_parse_spec("end:coordinator:warn:2m=/x/y z", &h, why, sizeof(why)),
	                 0);
	assert_int_equal(h.phase, CONFIG_HOOK_END);
	assert_true(h.coordinator);
	assert_true(h.warn);
	assert_true(h.timeout_s == 120);
	assert_string_equal(h.command, "/x/y z");
	hooks_spec_free(&h);
	assert_int_equal(hooks_parse_spec("checkpoint:90=sync", &h, why, sizeof(why)), 0);
	assert_true(h.timeout_s == 90);
	hooks_spec_free(&h);
	/* refusals, each with its reason */
	assert_int_equal(hooks_parse_spec("pre-launch", &h, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "PHASE[:ATTR]...=COMMAND"));
	assert_int_equal(hooks_parse_spec("pre-launch=", &h, why, sizeof(why)), -EINVAL);
	assert_int_equal(hooks_parse_spec("after=x", &h, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "pre-check, pre-launch, checkpoint, requeue or end"));
	assert_int_equal(hooks_parse_spec("end:somewhere=x", &h, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "'somewhere'"));
	assert_int_equal(hooks_parse_spec("end:0s=x", &h, why, sizeof(why)), -EINVAL);
	assert_int_equal(hooks_parse_spec("end::=x", &h, why, sizeof(why)), -EINVAL);
	/* contradictions, and a kind given twice: each refused, naming it */
	assert_int_equal(hooks_parse_spec("end:coordinator:all=x", &h, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "'all': where it runs (all or coordinator) is given twice"));
	assert_int_equal(hooks_parse_spec("end:warn:fail=x", &h, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "what a failure does (fail or warn) is given twice"));
	assert_int_equal(hooks_parse_spec("end:2m:90s=x", &h, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "its timeout is given twice"));
	assert_int_equal(hooks_parse_spec("end:warn:warn=x", &h, why, sizeof(why)), -EINVAL);
}

/* Run PHASE's hooks with SPECS on RANK until they are over. */
static void
run_phase(const char *const *specs, size_t n, int rank, int phase, const char *const *extra,
          size_t nextra, struct seen *s)
{
	struct hooks_opts o = { .specs = specs, .nspecs = n, .timeout_s = 5,
	                        .coordinator = rank == 0, .node = "n7", .rank = rank,
	                        .job_id = "4242" };
	struct hooks_ops ops = { on_say, on_done, s };
	struct loop *l = loop_new();
	struct hooks *hs;

	memset(s, 0, sizeof(*s));
	assert_non_null(l);
	hs = hooks_new(&o, l, &ops);
	assert_non_null(hs);
	assert_int_equal(hooks_run(hs, phase, extra, nextra), 0);
	for (int i = 0; i < 400 && hooks_busy(hs); i++)
		assert_true(loop_run_once(l, 50) >= 0);
	assert_false(hooks_busy(hs));
	hooks_free(hs);
	loop_free(l);
}

/* In order, one after another, each line tagged, with the job's variables. */
static void
test_order_env_tags(void **state)
{
	const char *specs[] = {
		"end=echo first $VIGIL_HOOK $VIGIL_NODE $VIGIL_RANK $VIGIL_JOB_ID",
		"pre-launch=echo not this phase",
		"end=sleep 0.1; echo second $VIGIL_JOB_STATE $VIGIL_JOB_EXIT_CODE",
	};
	const char *extra[] = { "VIGIL_JOB_STATE=succeeded", "VIGIL_JOB_EXIT_CODE=0" };
	struct seen s;

	(void)state;
	run_phase(specs, 3, 1, CONFIG_HOOK_END, extra, 2, &s);
	assert_int_equal(s.nres, 1);
	assert_int_equal(s.res[0].phase, CONFIG_HOOK_END);
	assert_int_equal(s.res[0].ran, 2);
	assert_int_equal(s.res[0].failed, 0);
	assert_int_equal(s.nlines, 2);
	assert_string_equal(s.lines[0], "[hook end n7:1] first end n7 1 4242");
	assert_string_equal(s.lines[1], "[hook end n7:1] second succeeded 0");
}

/* Failures: fail counts, warn warns, the reason names the hook and its last line. */
static void
test_failures(void **state)
{
	const char *specs[] = {
		"pre-launch:warn=echo soft; exit 2",
		"pre-launch=echo disk missing; exit 3",
		"pre-launch=true",
	};
	struct seen s;

	(void)state;
	run_phase(specs, 3, 1, CONFIG_HOOK_PRELAUNCH, NULL, 0, &s);
	assert_int_equal(s.nres, 1);
	assert_int_equal(s.res[0].ran, 3);
	assert_int_equal(s.res[0].warned, 1);
	assert_int_equal(s.res[0].failed, 1);
	/* the failing one's reason wins over the warning's */
	assert_string_equal(s.res[0].why, "pre-launch hook 'echo disk missing; exit 3' failed "
	                    "with status 3: disk missing");
	/* what is said of each: the warn-only one is a warning, the other not */
	{
		int warned = 0, failed = 0;

		for (int i = 0; i < s.nlines; i++) {
			warned += strstr(s.lines[i], "'echo soft; exit 2' failed with status 2: soft "
			                 "(warning)") != NULL;
			failed += strstr(s.lines[i], "status 3: disk missing (warning)") != NULL;
		}
		assert_int_equal(warned, 1);
		assert_int_equal(failed, 0);
	}
}

/* Bounded in time: killed at its limit, and said so. */
static void
test_timeout(void **state)
{
	const char *specs[] = { "pre-check:1s=echo waiting; sleep 30" };
	struct seen s;

	(void)state;
	run_phase(specs, 1, 0, CONFIG_HOOK_PRECHECK, NULL, 0, &s);
	assert_int_equal(s.res[0].failed, 1);
	assert_non_null(strstr(s.res[0].why, "did not end within 1 s"));
	assert_true(s.res[0].seconds >= 0.9 && s.res[0].seconds < 4);
}

/* Coordinator-only hooks run on rank 0 alone. */
static void
test_where(void **state)
{
	const char *specs[] = { "end:coordinator=echo here", "end=echo everywhere" };
	struct seen s;

	(void)state;
	run_phase(specs, 2, 1, CONFIG_HOOK_END, NULL, 0, &s);
	assert_int_equal(s.res[0].ran, 1);
	assert_string_equal(s.lines[0], "[hook end n7:1] everywhere");
	run_phase(specs, 2, 0, CONFIG_HOOK_END, NULL, 0, &s);
	assert_int_equal(s.res[0].ran, 2);
}

/* The site's hooks first, then the job's; a phase without hooks ends at once. */
static void
test_site_first(void **state)
{
	struct config_hook site = { .phase = CONFIG_HOOK_CHECKPOINT, .command = (char *)"echo site" };
	const char *specs[] = { "checkpoint=echo job $VIGIL_CKPT_REASON" };
	const char *extra[] = { "VIGIL_CKPT_REASON=time limit" };
	struct hooks_opts o = { .site = &site, .nsite = 1, .specs = specs, .nspecs = 1,
	                        .timeout_s = 5, .node = "n1", .rank = 2, .job_id = "" };
	struct seen s = { .nlines = 0 };
	struct hooks_ops ops = { on_say, on_done, &s };
	struct loop *l = loop_new();
	struct hooks *hs = hooks_new(&o, l, &ops);

	(void)state;
	assert_non_null(hs);
	assert_true(hooks_any(hs, CONFIG_HOOK_CHECKPOINT));
	assert_false(hooks_any(hs, CONFIG_HOOK_END));
	assert_int_equal(hooks_run(hs, CONFIG_HOOK_END, NULL, 0), 0);
	assert_int_equal(s.nres, 1);  /* at once */
	assert_int_equal(s.res[0].ran, 0);
	assert_int_equal(hooks_run(hs, CONFIG_HOOK_CHECKPOINT, extra, 1), 0);
	for (int i = 0; i < 200 && hooks_busy(hs); i++)
		assert_true(loop_run_once(l, 50) >= 0);
	assert_int_equal(s.nres, 2);
	assert_string_equal(s.lines[0], "[hook checkpoint n1:2] site");
	assert_string_equal(s.lines[1], "[hook checkpoint n1:2] job time limit");
	hooks_free(hs);
	loop_free(l);
}

/* A hook of the coordinator's: runs there only, but every node knows of it. */
static void
test_declared_everywhere(void **state)
{
	const char *specs[] = { "pre-launch:coordinator=echo hi" };
	struct hooks_opts o = { .specs = specs, .nspecs = 1, .timeout_s = 5, .node = "n1",
	                        .rank = 1, .job_id = "" };
	struct hooks_ops ops = { NULL, NULL, NULL };
	struct loop *l = loop_new();
	struct hooks *hs = hooks_new(&o, l, &ops);

	(void)state;
	assert_non_null(hs);
	assert_false(hooks_any(hs, CONFIG_HOOK_PRELAUNCH));
	assert_true(hooks_declared(hs, CONFIG_HOOK_PRELAUNCH));
	assert_false(hooks_declared(hs, CONFIG_HOOK_PRECHECK));
	hooks_free(hs);
	loop_free(l);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spec),
		cmocka_unit_test(test_declared_everywhere),
		cmocka_unit_test(test_order_env_tags),
		cmocka_unit_test(test_failures),
		cmocka_unit_test(test_timeout),
		cmocka_unit_test(test_where),
		cmocka_unit_test(test_site_first),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
