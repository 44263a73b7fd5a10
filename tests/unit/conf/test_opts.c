/*
 * test_opts.c - option values (counts, numbers, durations, signals,
 * enumerations, path templates) and the table of `vigil run`'s options:
 * the command line's parser, the file's section under it, the site's
 * limits over both, and the rules between options.
 */
#include "autoconf.h"

#include "../vigil_test.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/run.h"
#include "conf/config.h"
#include "conf/opts.h"

/* ---- values ------------------------------------------------------------ */

static void
test_count(void **state)
{
	long long v = -7;

	(void)state;
	assert_int_equal(opts_count("0", 0, 10, &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(opts_count("10", 0, 10, &v), 0);
	assert_int_equal(v, 10);
	assert_int_equal(opts_count("11", 0, 10, &v), -ERANGE);
	assert_int_equal(opts_count("99999999999999999999999", 0, 10, &v), -ERANGE);
	assert_int_equal(v, 10);  /* untouched on error */
	/* what strtol() would take, and a count must not */
	static const char *const bad[] = { "", "-1", "+1", " 1", "1 ", "0x10", "1e3", "1.0",
	                                   "one", NULL };
	for (size_t i = 0; bad[i]; i++)
		if (opts_count(bad[i], 0, 1000000, &v) != -EINVAL)
			fail_msg("count '%s' accepted", bad[i]);
	assert_int_equal(opts_count(NULL, 0, 1, &v), -EINVAL);
}

static void
test_number(void **state)
{
	double v = 0;

	(void)state;
	assert_int_equal(opts_number("0.45", 0, 1, &v), 0);
	assert_true(v == 0.45);
	assert_int_equal(opts_number(".5", 0, 1, &v), 0);
	assert_true(v == 0.5);
	assert_int_equal(opts_number("20", 0, 100, &v), 0);
	assert_true(v == 20);
	assert_int_equal(opts_number("200", 0, 100, &v), -ERANGE);
	static const char *const bad[] = { "", ".", "1..2", "1.2.3", "-1", "1e-300", "inf", "nan",
	                                   "0x1p3", " 1", "1%", NULL };
	for (size_t i = 0; bad[i]; i++)
		if (opts_number(bad[i], 0, 1e9, &v) != -EINVAL)
			fail_msg("number '%s' accepted", bad[i]);
}

struct dur {
	const char *text;
	double seconds;
	bool bare;
};

static void
test_duration(void **state)
{
	static const struct dur good[] = {
		{ "90", 90, true }, { "0.5", 0.5, true }, { "0", 0, true },
		{ "20s", 20, false }, { "15m", 900, false }, { "2h", 7200, false },
		{ "1d", 86400, false }, { "1.5h", 5400, false }, { ".5m", 30, false },
		{ "01:30", 90, false }, { "90:00", 5400, false }, { "1:30:00", 5400, false },
		{ "25:00:00", 90000, false },                  /* hours beyond a day: fine */
		{ "1-00:00:00", 86400, false }, { "2-12", 216000, false },
		{ "1-02:30", 95400, false }, { "0-00:00:01", 1, false },
		{ "400d", 400 * 86400.0, false },
	};
	static const char *const bad[] = {
		"", "s", "m", "1e3", "-5", "+5", "5 m", "3 days", "3days", "5ms", "5M", "1.2.3s",
		"1:60", "1:2:60", "1:60:00", "1:2:3:4", ":30", "1:", "1-24:00:00", "1-", "-1:00",
		"1-2-3", "1-1:60", "0x10", "inf", "nan", "1:30s", "1d2h", NULL,
	};
	double v;
	bool bare;

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		v = -1;
		bare = !good[i].bare;
		if (opts_duration(good[i].text, &v, &bare) != 0 || v != good[i].seconds ||
		    bare != good[i].bare)
			fail_msg("duration '%s': %g s, bare %d", good[i].text, v, bare);
	}
	for (size_t i = 0; bad[i]; i++)
		if (opts_duration(bad[i], &v, NULL) != -EINVAL)
			fail_msg("duration '%s' accepted", bad[i]);
	assert_int_equal(opts_duration("401d", &v, NULL), -ERANGE);
	assert_int_equal(opts_duration("99999999-00:00:00", &v, NULL), -ERANGE);
	assert_int_equal(opts_duration(NULL, &v, NULL), -EINVAL);
}

static void
test_unit_word(void **state)
{
	(void)state;
	assert_true(opts_unit_word("days"));
	assert_true(opts_unit_word("Hours"));
	assert_true(opts_unit_word("min"));
	assert_true(opts_unit_word("s"));
	assert_false(opts_unit_word("python3"));
	assert_false(opts_unit_word("3d"));
	assert_false(opts_unit_word(""));
	assert_false(opts_unit_word(NULL));
}

static void
test_signal_pair(void **state)
{
	int from = 0, to = 0;

	(void)state;
	assert_int_equal(opts_signal_pair("USR1=USR2", &from, &to), 0);
	assert_int_equal(from, SIGUSR1);
	assert_int_equal(to, SIGUSR2);
	assert_int_equal(opts_signal_pair("SIGTERM=15", &from, &to), 0);
	assert_int_equal(from, SIGTERM);
	assert_int_equal(to, SIGTERM);
	static const char *const bad[] = { "USR1", "USR1=", "=USR2", "USR1=NOPE", "USR1=USR2=TERM",
	                                   "0=USR1", "A-VERY-LONG-NAME-THAT-NEVER-ENDS=USR1", NULL };
	for (size_t i = 0; bad[i]; i++)
		if (opts_signal_pair(bad[i], &from, &to) != -EINVAL)
			fail_msg("signal pair '%s' accepted", bad[i]);
}

static void
test_words(void **state)
{
	static const struct opts_word w[] = { { "all", 1 }, { "coordinator", 0 }, { "x", 7 },
	                                      { NULL, 0 } };
	char buf[64];
	int v = -1;

	(void)state;
	assert_int_equal(opts_word("coordinator", w, &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(opts_word("x", w, &v), 0);
	assert_int_equal(v, 7);
	assert_int_equal(opts_word("All", w, &v), -EINVAL);
	assert_int_equal(opts_word(NULL, w, &v), -EINVAL);
	opts_words_list(w, buf, sizeof(buf));
	assert_string_equal(buf, "all, coordinator or x");
	opts_words_list(w + 2, buf, sizeof(buf));
	assert_string_equal(buf, "x");
	opts_words_list(w, buf, 8);  /* cut, terminated */
	assert_string_equal(buf, "all, co");
}

static void
test_expand(void **state)
{
	char buf[64];

	(void)state;
	assert_int_equal(opts_expand("/var/log/%u/%j-%n.jsonl", "42", "gpu1", "ana", buf,
	                             sizeof(buf)), 0);
	assert_string_equal(buf, "/var/log/ana/42-gpu1.jsonl");
	assert_int_equal(opts_expand("100%%", "j", "n", "u", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "100%");
	assert_int_equal(opts_expand("plain", "j", "n", "u", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "plain");
	assert_int_equal(opts_expand("%x", "j", "n", "u", buf, sizeof(buf)), -EINVAL);
	assert_int_equal(opts_expand("end%", "j", "n", "u", buf, sizeof(buf)), -EINVAL);
	assert_int_equal(opts_expand("%j%j%j", "1234567890", "n", "u", buf, 20), -ENAMETOOLONG);
	assert_int_equal(opts_expand("abc", "j", "n", "u", buf, 3), -ENAMETOOLONG);
	assert_int_equal(opts_expand("abc", "j", "n", "u", buf, 4), 0);
}

/* ---- the table ----------------------------------------------------------- */

static void
test_table(void **state)
{
	char key[64];

	(void)state;
	assert_true(opts_run_count > 30 && opts_run_count <= 64);
	for (size_t i = 0; i < opts_run_count; i++) {
		const struct opts_run *opt = &opts_run_table[i];

		/* one row per name, each found by its name and its key */
		assert_ptr_equal(opts_run_find(opt->name), opt);
		opts_run_key(opt, key, sizeof(key));
		assert_null(strchr(key, '-'));
		assert_ptr_equal(opts_run_find_key(key), opt);
		/* the field fits in the struct, and numbers have a range */
		assert_true(opt->off + opt->size <= sizeof(struct run_opts));
		if (opt->kind == OPTS_COUNT || opt->kind == OPTS_DURATION || opt->kind == OPTS_NUMBER)
			assert_true(opt->min <= opt->max);
		if (opt->kind == OPTS_DURATION && !(opt->flags & OPTS_OFF))
			assert_true(opt->min > 0);
		if (opt->flags & OPTS_LIMIT)
			assert_true(opt->kind == OPTS_COUNT || opt->kind == OPTS_DURATION);
	}
	assert_null(opts_run_find("bogus"));
	assert_null(opts_run_find_key("ckpt-lead"));  /* the file spells it ckpt_lead */
	assert_non_null(opts_run_find_key("ckpt_lead"));
}

static const struct opts_run *
row(const char *name)
{
	const struct opts_run *opt = opts_run_find(name);

	assert_non_null(opt);
	return opt;
}

/* Set NAME to TEXT; the return code, with WHY. */
static int
set(struct run_opts *o, const char *name, const char *text, char *why, size_t whylen)
{
	why[0] = '\0';
	return opts_run_set(row(name), text, o, NULL, why, whylen);
}

static void
test_set(void **state)
{
	struct run_opts o;
	char why[320];
	bool bare = false;

	(void)state;
	run_opts_init(&o);
	/* one duration syntax for every option that takes time */
	assert_int_equal(set(&o, "grace", "2m", why, sizeof(why)), 0);
	assert_true(o.grace_s == 120);
	assert_int_equal(set(&o, "heartbeat", "1:30", why, sizeof(why)), 0);
	assert_true(o.heartbeat_s == 90);
	assert_int_equal(opts_run_set(row("time-limit"), "3", &o, &bare, why, sizeof(why)), 0);
	assert_true(o.time_limit_s == 3 && bare);
	assert_int_equal(opts_run_set(row("time-limit"), "1-00:00:00", &o, &bare, why, sizeof(why)), 0);
	assert_true(o.time_limit_s == 86400 && !bare);
	/* every interval has a floor, and says why */
	assert_int_equal(set(&o, "heartbeat", "1e-300", why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "expected a duration"));
	assert_int_equal(set(&o, "heartbeat", "0.01", why, sizeof(why)), -ERANGE);
	assert_string_equal(why, "0.01 s is below the minimum of 0.1 s: a shorter heartbeat "
	                    "keeps every agent and the coordinator busy");
	assert_true(o.heartbeat_s == 90);  /* unchanged on error */
	assert_int_equal(set(&o, "heartbeat", "0", why, sizeof(why)), -ERANGE);
	assert_int_equal(set(&o, "perf-interval", "0.001", why, sizeof(why)), -ERANGE);
	assert_int_equal(set(&o, "inspect-interval", "0.5", why, sizeof(why)), -ERANGE);
	assert_non_null(strstr(why, "(0 switches it off)"));
	assert_int_equal(set(&o, "inspect-interval", "0", why, sizeof(why)), 0);
	assert_true(o.inspect_s == 0);
	assert_int_equal(set(&o, "grace", "2d", why, sizeof(why)), -ERANGE);
	assert_string_equal(why, "172800 s is above the maximum of 86400 s");
	assert_int_equal(set(&o, "time-limit", "999d", why, sizeof(why)), -ERANGE);
	/* counts and ports */
	assert_int_equal(set(&o, "max-resumes", "3", why, sizeof(why)), 0);
	assert_int_equal(o.max_resumes, 3);
	assert_int_equal(set(&o, "max-resumes", "-1", why, sizeof(why)), -EINVAL);
	assert_int_equal(set(&o, "master-port", "0", why, sizeof(why)), -ERANGE);
	assert_int_equal(set(&o, "master-port", "65536", why, sizeof(why)), -ERANGE);
	assert_int_equal(set(&o, "tf-port", "2223", why, sizeof(why)), 0);
	assert_int_equal(o.tf_port, 2223);
	assert_int_equal(set(&o, "perf-window", "0", why, sizeof(why)), -ERANGE);
	assert_int_equal(set(&o, "perf-threshold", "0.45", why, sizeof(why)), 0);
	assert_true(o.perf_threshold == 0.45);
	assert_int_equal(set(&o, "perf-threshold", "0", why, sizeof(why)), -ERANGE);
	/* enumerations */
	assert_int_equal(set(&o, "mode", "horovod", why, sizeof(why)), 0);
	assert_int_equal(o.mode, MODE_HOROVOD);
	assert_int_equal(set(&o, "mode", "mxnet", why, sizeof(why)), -EINVAL);
	assert_string_equal(why, "expected pytorch, deepspeed, horovod, tensorflow or single");
	assert_int_equal(set(&o, "output", "coordinator", why, sizeof(why)), 0);
	assert_false(o.output_all);
	assert_int_equal(set(&o, "perf-compare", "below", why, sizeof(why)), 0);
	assert_true(o.perf_below);
	assert_int_equal(set(&o, "perf-action", "page", why, sizeof(why)), -EINVAL);
	assert_string_equal(why, "expected alert or reschedule");
	assert_int_equal(set(&o, "precheck", "warn", why, sizeof(why)), 0);
	assert_true(o.precheck && o.precheck_level == VERDICT_WARN);
	assert_int_equal(set(&o, "precheck", "off", why, sizeof(why)), 0);
	assert_false(o.precheck);
	/* signals */
	assert_int_equal(set(&o, "ckpt-signal", "SIGUSR2", why, sizeof(why)), 0);
	assert_int_equal(o.ckpt_signal, SIGUSR2);
	assert_int_equal(set(&o, "ckpt-signal", "USR3", why, sizeof(why)), -EINVAL);
	for (int i = 0; i < 8; i++)
		assert_int_equal(set(&o, "forward", "USR1=USR2", why, sizeof(why)), 0);
	assert_int_equal(o.nforward, 8);
	assert_int_equal(set(&o, "forward", "USR1=USR2", why, sizeof(why)), -ERANGE);
	/* flags, strings, templates */
	assert_int_equal(set(&o, "resume", NULL, why, sizeof(why)), 0);
	assert_true(o.resume);
	assert_int_equal(set(&o, "resume", "false", why, sizeof(why)), 0);
	assert_false(o.resume);
	assert_int_equal(set(&o, "resume", "yes", why, sizeof(why)), -EINVAL);
	assert_int_equal(set(&o, "notify", "", why, sizeof(why)), -EINVAL);
	assert_int_equal(set(&o, "events", "/log/%j.jsonl", why, sizeof(why)), 0);
	assert_string_equal(o.events, "/log/%j.jsonl");
	assert_int_equal(set(&o, "events", "/log/%d.jsonl", why, sizeof(why)), -EINVAL);
	assert_string_equal(o.events, "/log/%j.jsonl");
	assert_int_equal(set(&o, "master-addr", NULL, why, sizeof(why)), -EINVAL);
}

static void
test_set_num(void **state)
{
	struct run_opts o;
	char why[320];

	(void)state;
	run_opts_init(&o);
	assert_int_equal(opts_run_set_num(row("max-resumes"), 4, &o, why, sizeof(why)), 0);
	assert_int_equal(o.max_resumes, 4);
	assert_int_equal(opts_run_set_num(row("max-resumes"), 4.5, &o, why, sizeof(why)), -EINVAL);
	assert_int_equal(opts_run_set_num(row("max-resumes"), -1, &o, why, sizeof(why)), -EINVAL);
	assert_int_equal(opts_run_set_num(row("grace"), 45, &o, why, sizeof(why)), 0);
	assert_true(o.grace_s == 45);
	assert_int_equal(opts_run_set_num(row("grace"), INFINITY, &o, why, sizeof(why)), -EINVAL);
	assert_int_equal(opts_run_set_num(row("heartbeat"), 1e-300, &o, why, sizeof(why)), -ERANGE);
	assert_int_equal(opts_run_set_num(row("ckpt-signal"), 12, &o, why, sizeof(why)), 0);
	assert_int_equal(o.ckpt_signal, 12);
	assert_int_equal(opts_run_set_num(row("tag-output"), 1, &o, why, sizeof(why)), 0);
	assert_true(o.tag_output);
	assert_int_equal(opts_run_set_num(row("mode"), 1, &o, why, sizeof(why)), -EINVAL);
	assert_string_equal(why, "expected pytorch, deepspeed, horovod, tensorflow or single");
}

static void
test_get_show(void **state)
{
	struct run_opts o;
	char buf[64];

	(void)state;
	run_opts_init(&o);
	assert_true(isinf(opts_run_get(row("max-resumes"), &o)));  /* -1: no limit */
	assert_true(opts_run_get(row("grace"), &o) == 30);
	assert_true(isnan(opts_run_get(row("mode"), &o)));
	opts_run_show(row("grace"), &o, buf, sizeof(buf));
	assert_string_equal(buf, "30 s");
	opts_run_show(row("max-resumes"), &o, buf, sizeof(buf));
	assert_string_equal(buf, "no limit");
	opts_run_show(row("ckpt-signal"), &o, buf, sizeof(buf));
	assert_string_equal(buf, "SIGUSR1");
	opts_run_show(row("output"), &o, buf, sizeof(buf));
	assert_string_equal(buf, "all");
	opts_run_show(row("precheck"), &o, buf, sizeof(buf));
	assert_string_equal(buf, "fail");
	opts_run_show(row("report"), &o, buf, sizeof(buf));
	assert_string_equal(buf, "(none)");
}

/* ---- what each row owns: its default, its --help line ------------------- */

static void
test_defaults(void **state)
{
	struct run_opts o;
	char why[320];

	(void)state;
	for (const struct opts_run *opt = opts_run_table; opt->name; opt++) {
		/* every default is a value of its own option, within its range */
		if (opt->def && opts_run_check(opt, opt->def, 0, NULL, why, sizeof(why)) != 0)
			fail_msg("--%s: default '%s': %s", opt->name, opt->def, why);
		if (opt->flags & OPTS_UNSET)
			assert_true(opt->kind == OPTS_COUNT && !opt->def && opt->min >= 0);
		/* every row says what it does, and a value's name where it takes one */
		if (!opt->help || !opt->help[0])
			fail_msg("--%s has no help", opt->name);
		if (opt->kind == OPTS_FLAG)
			assert_null(opt->arg);
		else if (opt->kind != OPTS_DURATION)
			assert_non_null(opt->arg);
		if (opt->kind == OPTS_LIST)
			assert_true(opt->count_off + sizeof(int) <= sizeof(struct run_opts));
	}
	/* the values run_opts_init() gave before the rows held them */
	run_opts_init(&o);
	assert_int_equal(o.mode, MODE_PYTORCH);
	assert_true(o.precheck && o.precheck_level == VERDICT_FAIL);
	assert_int_equal(o.tf_port, 2222);
	assert_true(o.grace_s == 30);
	assert_true(o.output_all);
	assert_int_equal(o.ckpt_signal, SIGUSR1);
	assert_true(o.ckpt_lead_s == 60);
	assert_int_equal(o.max_resumes, -1);
	assert_true(o.inspect_s == 30);
	assert_true(o.heartbeat_s == 5);
	assert_true(o.heartbeat_timeout_s == 30);
	assert_int_equal(o.perf_window, 5);
	assert_true(o.summary_s == 60);
	assert_true(o.perf_interval_s == 1);
	assert_string_equal(o.stage_dir, "/var/tmp/vigil-stage.%u");
	assert_true(o.stage_retention_s == 7 * 86400.0);
	assert_int_equal(o.stage_max_use, 90);
	assert_int_equal(o.stage_jobs, 4);
	assert_true(o.hook_timeout_s == 300);
	assert_int_equal(o.batch_index, -1);
	assert_int_equal(o.node_log_mb, 64);
	assert_int_equal(o.torch_launcher, MODE_TORCH_AUTO);
	assert_false(o.perf_below || o.perf_reschedule || o.resume || o.tag_output);
	assert_int_equal(o.ps, 0);
	assert_int_equal(o.nstage + o.nhook + o.nforward, 0);
	assert_null(o.report);
	assert_true(o.time_limit_s == 0 && o.stage_timeout_s == 0 && o.hold_s == 0);
}

static void
test_list(void **state)
{
	struct run_opts o;
	char why[320], buf[128];

	(void)state;
	run_opts_init(&o);
	assert_int_equal(set(&o, "stage", "a=/data/a", why, sizeof(why)), 0);
	assert_int_equal(set(&o, "stage", "b=/data/b", why, sizeof(why)), 0);
	assert_int_equal(o.nstage, 2);
	assert_string_equal(o.stage[1], "b=/data/b");
	assert_int_equal(o.nhook, 0);
	opts_run_show(row("stage"), &o, buf, sizeof(buf));
	assert_string_equal(buf, "a=/data/a, b=/data/b");
	assert_int_equal(set(&o, "hook", "", why, sizeof(why)), -EINVAL);
	for (int i = 0; i < RUN_LIST_MAX; i++)
		assert_int_equal(set(&o, "hook", "end=true", why, sizeof(why)), 0);
	assert_int_equal(set(&o, "hook", "end=true", why, sizeof(why)), -ERANGE);
	assert_string_equal(why, "at most 16 --hook options");
	assert_int_equal(o.nhook, RUN_LIST_MAX);
	/* not a key of the file */
	assert_false(row("stage")->flags & OPTS_SITE);
}

static void
test_help(void **state)
{
	char *text = NULL, *line, *save = NULL, want[80];
	size_t len = 0;
	FILE *f;

	(void)state;
	f = open_memstream(&text, &len);
	assert_non_null(f);
	fputc('\n', f);  /* every entry after a newline, the first too */
	assert_int_equal(opts_run_help(f), 0);
	assert_int_equal(fclose(f), 0);
	/* each row's entry, its value's name, default and floor from the row */
	for (const struct opts_run *opt = opts_run_table; opt->name; opt++) {
		if (opt->letter)
			snprintf(want, sizeof(want), "\n  -%c, --%s ", opt->letter, opt->name);
		else
			snprintf(want, sizeof(want), "\n  --%s ", opt->name);
		if (!strstr(text, want))
			fail_msg("--help lacks '%s'", want + 1);
	}
	assert_non_null(strstr(text, "\n  -v, --verbose "));
	assert_non_null(strstr(text, "\n  --grace TIME      from TERM to KILL when stopping the "
	                       "training (default 30s;\n                    at least 0.1s)\n"));
	assert_non_null(strstr(text, "\n  --max-resumes N "));
	assert_non_null(strstr(text, "(default 30s; 0\n                    off, else at least 1s)"));
	assert_non_null(strstr(text, "\nResilience:\n"));
	assert_non_null(strstr(text, "\nData preparation, lifecycle scripts, batch tasks, kept output:\n"
	                       "  --stage NAME=SRC  "));
	assert_non_null(strstr(text, "In the paths of --report, --events, --metrics, --stage-dir "
	                       "and --node-logs: %j\nis the job"));
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		if (strlen(line) > OPTS_HELP_WIDTH)
			fail_msg("a line of %zu columns: %s", strlen(line), line);
	free(text);
}

/* ---- the file under the command line, the limits over both --------------- */

static const char site[] =
	"{\"run\": {\"grace\": \"45s\", \"heartbeat\": 2, \"max_resumes\": 5, "
	"\"output\": \"coordinator\", \"resume\": true, \"ckpt_signal\": \"USR2\",\n"
	" \"limits\": {\"max_resumes\": 10, \"grace\": \"1m\", \"restart\": 2}}}";

struct notes {
	char text[4][512];
	int n;
};

static void
note(void *arg, const char *msg)
{
	struct notes *n = arg;

	if (n->n < 4)
		snprintf(n->text[n->n++], sizeof(n->text[0]), "%s", msg);
}

static void
test_config_and_limits(void **state)
{
	struct config cfg;
	struct run_opts o;
	unsigned char src[64] = { 0 };
	struct notes notes = { .n = 0 };
	char why[512];

	(void)state;
	config_init(&cfg);
	assert_int_equal(config_load_buffer(&cfg, site, strlen(site), "/etc/vigil.json", why,
	                                    sizeof(why)), 0);
	run_opts_init(&o);
	/* the command line set the grace and the restarts */
	assert_int_equal(set(&o, "grace", "5m", why, sizeof(why)), 0);
	src[row("grace") - opts_run_table] = OPTS_SRC_FLAG;
	assert_int_equal(set(&o, "restart", "5", why, sizeof(why)), 0);
	src[row("restart") - opts_run_table] = OPTS_SRC_FLAG;

	assert_int_equal(opts_run_apply_config(&cfg, &o, src, why, sizeof(why)), 0);
	assert_true(o.grace_s == 300);       /* the command line wins over the file */
	assert_true(o.heartbeat_s == 2);     /* the file over the default */
	assert_int_equal(o.max_resumes, 5);
	assert_false(o.output_all);
	assert_true(o.resume);
	assert_int_equal(o.ckpt_signal, SIGUSR2);
	assert_int_equal(src[row("heartbeat") - opts_run_table], OPTS_SRC_FILE);
	assert_int_equal(src[row("grace") - opts_run_table], OPTS_SRC_FLAG);

	/* the limits over both, with a word for what the user asked */
	assert_int_equal(opts_run_clamp(&cfg, &o, src, note, &notes), 2);
	assert_true(o.grace_s == 60);
	assert_int_equal(o.restart_max, 2);
	assert_int_equal(o.max_resumes, 5);  /* within its limit */
	assert_int_equal(notes.n, 2);
	assert_string_equal(notes.text[0], "--grace 300 s is above the site's limit of 60 s "
	                    "(run.limits.grace in /etc/vigil.json): using 60 s");
	assert_string_equal(notes.text[1], "--restart 5 is above the site's limit of 2 "
	                    "(run.limits.restart in /etc/vigil.json): using 2");

	/* a default above a limit ("no limit" on resumes) is lowered silently */
	run_opts_init(&o);
	memset(src, 0, sizeof(src));
	notes.n = 0;
	assert_int_equal(opts_run_clamp(&cfg, &o, src, note, &notes), 1);
	assert_int_equal(o.max_resumes, 10);
	assert_int_equal(notes.n, 0);
	config_free(&cfg);
}

/* A --ckpt-confirm of no known form, named once, or by its key in the file. */
static void
test_verify_ckpt_confirm(void **state)
{
	struct run_opts o;
	unsigned char src[64] = { 0 };
	char why[512];

	(void)state;
	run_opts_init(&o);
	assert_int_equal(set(&o, "ckpt-confirm", "bogus", why, sizeof(why)), 0);
	src[row("ckpt-confirm") - opts_run_table] = OPTS_SRC_FLAG;
	assert_int_equal(opts_run_verify(&o, src, NULL, why, sizeof(why)), -EINVAL);
	assert_string_equal(why, "--ckpt-confirm: \"bogus\" is neither file:PATH nor output:REGEX");
	src[row("ckpt-confirm") - opts_run_table] = OPTS_SRC_FILE;
	assert_int_equal(opts_run_verify(&o, src, "/etc/vigil.json", why, sizeof(why)), -EINVAL);
	assert_string_equal(why, "run.ckpt_confirm in /etc/vigil.json: \"bogus\" is neither "
	                    "file:PATH nor output:REGEX");
}

static void
test_verify(void **state)
{
	struct run_opts o;
	unsigned char src[64] = { 0 };
	char why[512];

	(void)state;
	run_opts_init(&o);
	assert_int_equal(opts_run_verify(&o, src, NULL, why, sizeof(why)), 0);
	/* a lead that leaves no time, from the default */
	o.time_limit_s = 30;
	src[row("time-limit") - opts_run_table] = OPTS_SRC_FLAG;
	assert_int_equal(opts_run_verify(&o, src, NULL, why, sizeof(why)), -EINVAL);
	assert_string_equal(why, "--ckpt-lead (60 s, the default) leaves no time: it is not "
	                    "shorter than --time-limit (30 s), so the checkpoint would start at "
	                    "once; give a shorter lead or a longer limit");
	o.ckpt_lead_s = 30;  /* equal: still no time */
	assert_int_equal(opts_run_verify(&o, src, NULL, why, sizeof(why)), -EINVAL);
	o.ckpt_lead_s = 29;
	assert_int_equal(opts_run_verify(&o, src, NULL, why, sizeof(why)), 0);
	/* the heartbeat rule names where each value came from */
	o.heartbeat_s = 40;
	src[row("heartbeat") - opts_run_table] = OPTS_SRC_FILE;
	assert_int_equal(opts_run_verify(&o, src, "/etc/vigil.json", why, sizeof(why)), -EINVAL);
	assert_string_equal(why, "--heartbeat-timeout (30 s, the default) must be longer than "
	                    "run.heartbeat (40 s, in /etc/vigil.json)");
	o.heartbeat_s = 5;
	o.perf_reschedule = true;
	assert_int_equal(opts_run_verify(&o, src, NULL, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "needs --resume"));
	o.resume = true;
	o.restart_max = 1;
	assert_int_equal(opts_run_verify(&o, src, NULL, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "exclude each other"));
	/* --on-hang requeue needs --resume, restart needs --restart */
	o.perf_reschedule = false;
	o.resume = false;
	o.restart_max = 0;
	o.on_hang = RUN_ON_HANG_REQUEUE;
	assert_int_equal(opts_run_verify(&o, src, NULL, why, sizeof(why)), -EINVAL);
	assert_string_equal(why, "--on-hang requeue requeues the job: it needs --resume");
	o.on_hang = RUN_ON_HANG_RESTART;
	assert_int_equal(opts_run_verify(&o, src, NULL, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "it needs --restart N"));
	o.restart_max = 2;
	assert_int_equal(opts_run_verify(&o, src, NULL, why, sizeof(why)), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_count),
		cmocka_unit_test(test_number),
		cmocka_unit_test(test_duration),
		cmocka_unit_test(test_unit_word),
		cmocka_unit_test(test_signal_pair),
		cmocka_unit_test(test_words),
		cmocka_unit_test(test_expand),
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_set),
		cmocka_unit_test(test_set_num),
		cmocka_unit_test(test_get_show),
		cmocka_unit_test(test_config_and_limits),
		cmocka_unit_test(test_verify),
		cmocka_unit_test(test_verify_ckpt_confirm),
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_list),
		cmocka_unit_test(test_help),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
