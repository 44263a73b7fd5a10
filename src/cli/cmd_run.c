/*
 * cmd_run.c - `vigil run`: its command line, laid over the configuration
 * file's "run" section and held to the site's limits, then run_job().
 *
 * Every option but the check flags is a row of opts_run_table (opts.h):
 * the getopt table and --help are built from it, and one parser serves
 * the command line and the file.  Precedence: defaults < file < command
 * line, then "run.limits" over all.
 */
#include "autoconf.h"

#include <ctype.h>
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vigil.h"
#include "agent/run.h"
#include "cli/cmd.h"
#include "conf/config.h"
#include "conf/opts.h"
#include "launch/cmdline.h"
#include "lib/log.h"
#include "prep/batch.h"
#include "prep/hooks.h"
#include "prep/prep.h"
#include "prep/stage.h"
#include "proc/notify.h"

static const char run_usage[] =
"usage: mpirun --map-by ppr:1:node vigil run [OPTIONS] -- COMMAND [ARGS...]\n"
"\n"
"Pre-check every node, then start COMMAND on every node with the chosen\n"
"mode's environment, pass its output through, forward signals, and end the\n"
"job with one status when the training ends or fails anywhere.\n"
"\n"
"Durations (TIME): 90 (seconds), 20s, 15m, 2h, 1d, MM:SS, HH:MM:SS, D-HH:MM:SS.\n"
"\n";

/* getopt values of the table's rows: OPT_BASE + row */
#define OPT_BASE 1000
/* Templates expanded for one job: report, events, metrics. */
#define OWNED_MAX 8

struct run_cli {
	struct run_opts *o;
	struct config *cfg;
	struct cmd_check_flags f;
	unsigned char src[64];     /* enum opts_src per row of opts_run_table */
	char node[256];
	char *owned[OWNED_MAX];    /* expanded templates, freed with the rest */
	size_t nowned;
	const struct opts_run *bare_opt; /* a bare number under a minute, and its text */
	const char *bare_arg;
	bool limited[64];          /* per row: lowered to the site's limit */
	struct batch_task task;    /* --batch: this run's sub-task */
};

static void
warn(void *arg, const char *msg)
{
	(void)arg;
	if (cmd_speaks())
		fprintf(stderr, "vigil run: warning: %s\n", msg);
}

/* The getopt table: the check flags, a row per option, --help; and the
 * short options ("+vh"), the rows' letters. */
static void
long_options(struct option *out, char *letters, size_t len)
{
	static const struct option check[] = { CMD_CHECK_OPTIONS };
	size_t n = 0, k = 0;

	letters[k++] = '+';  /* stop at the command */
	letters[k++] = ':';  /* a missing value is told apart (cmd_option_error()) */
	for (size_t i = 0; i < CMD_CHECK_NOPTIONS; i++)
		out[n++] = check[i];
	for (size_t i = 0; i < opts_run_count; i++) {
		const struct opts_run *opt = &opts_run_table[i];

		out[n].name = opt->name;
		out[n].has_arg = opt->kind == OPTS_FLAG ? no_argument : required_argument;
		out[n].flag = NULL;
		out[n].val = OPT_BASE + (int)i;
		n++;
		/* a letter takes an argument as its long name does */
		if (opt->letter && k + 3 < len) {
			letters[k++] = opt->letter;
			if (opt->kind != OPTS_FLAG)
				letters[k++] = ':';
		}
	}
	out[n++] = (struct option){ "help", no_argument, NULL, 'h' };
	out[n] = (struct option){ NULL, 0, NULL, 0 };
	letters[k++] = 'h';
	letters[k] = '\0';
}

/* --help: the table's options between the command's text and the check
 * flags it shares with `vigil check`. */
static void
usage(void)
{
	static const struct option check[] = { CMD_CHECK_OPTIONS };
	char text[512];
	size_t w;

	fputs(run_usage, stdout);
	(void)opts_run_help(stdout);  /* as fputs(): --help writes what it can */
	w = (size_t)snprintf(text, sizeof(text), "Pre-check options, as for `vigil check`:");
	for (size_t i = 0; i < CMD_CHECK_NOPTIONS && w < sizeof(text); i++)
		w += (size_t)snprintf(text + w, sizeof(text) - w, "%s--%s", i == 0 ? " " :
		                      i + 1 == CMD_CHECK_NOPTIONS ? " and " : ", ", check[i].name);
	if (w < sizeof(text))
		snprintf(text + w, sizeof(text) - w, ". The configuration's \"run\" section sets "
		         "the options for the site; the command line overrides it, within the "
		         "site's \"run.limits\" (vigil.conf(5)).");
	putchar('\n');
	opts_wrap(stdout, 0, 0, text);
}

/* The row whose getopt value or letter is CH, or NULL. */
static const struct opts_run *
row_of(int ch)
{
	if (ch >= OPT_BASE && ch < OPT_BASE + (int)opts_run_count)
		return &opts_run_table[ch - OPT_BASE];
	for (const struct opts_run *opt = opts_run_table; opt->name && ch > 0; opt++)
		if (opt->letter == ch)
			return opt;
	return NULL;
}

/* "3 days" given quoted: the unit belongs to the number ("3d"). */
static void
unit_hint(const char *text, char *buf, size_t len)
{
	const char *sp = strchr(text, ' ');
	char num[32];
	double v;

	buf[0] = '\0';
	if (!sp || (size_t)(sp - text) >= sizeof(num))
		return;
	memcpy(num, text, (size_t)(sp - text));
	num[sp - text] = '\0';
	while (*sp == ' ')
		sp++;
	if (opts_number(num, 0, 1e18, &v) == 0 && opts_unit_word(sp))
		snprintf(buf, len, "; write %s%c, without a space", num, tolower((unsigned char)*sp));
}

/* One option from the command line.  0, or an exit status after a message. */
static int
take_option(struct run_cli *c, const struct opts_run *opt, const char *arg, bool *bare)
{
	char why[320], hint[64];
	int rc = opts_run_set(opt, arg, c->o, bare, why, sizeof(why));

	if (rc == -EINVAL) {
		unit_hint(arg ? arg : "", hint, sizeof(hint));
		return cmd_syntax_error("run", "--%s needs %s, got '%s'%s", opt->name,
		                        strncmp(why, "expected ", 9) == 0 ? why + 9 : why,
		                        arg ? arg : "", hint);
	}
	if (rc < 0)
		return cmd_usage_error("run", "--%s: %s", opt->name, why);
	c->src[opt - opts_run_table] = OPTS_SRC_FLAG;
	if (opt->flags & OPTS_BARE_WARN) {
		c->bare_opt = *bare && opts_run_get(opt, c->o) < 60 ? opt : NULL;
		c->bare_arg = arg;
	}
	return 0;
}

/* "--time-limit 3" is three seconds: likely not what a Slurm user meant. */
static void
warn_bare(const struct run_cli *c)
{
	const char *a = c->bare_arg;
	char msg[320];

	if (!c->bare_opt)
		return;
	snprintf(msg, sizeof(msg), "--%s %s is %s second%s (a number without a unit is seconds, "
	         "not minutes as in Slurm); write %sm, %sh or %sd for minutes, hours or days",
	         c->bare_opt->name, a, a, strcmp(a, "1") ? "s" : "", a, a, a);
	warn(NULL, msg);
}

/*
 * getopt stops at the first word that is not an option, so in
 * `--time-limit 3 days -- train.py` the limit is 3 seconds and "days" the
 * command.  Refuse that: a unit word right after a bare number.
 */
static int
stray_unit(char **argv, int argc, int last, const char *value, bool bare)
{
	const struct opts_run *opt = last >= 0 ? &opts_run_table[last] : NULL;

	if (!opt || opt->kind != OPTS_DURATION || !bare || optind >= argc ||
	    strcmp(argv[optind - 1], "--") == 0 || !opts_unit_word(argv[optind]))
		return 0;
	return cmd_syntax_error("run", "--%s %s %s: the unit belongs to the number, as in "
	                        "--%s %s%c; as written, '%s' would be run as the command",
	                        opt->name, value, argv[optind], opt->name, value,
	                        tolower((unsigned char)argv[optind][0]), argv[optind]);
}

/*
 * --stage NAME=SRC and --hook SPEC, repeatable: checked here, where the
 * parsers of prep/ can be reached, before the table keeps them as given.
 * 0, or an exit status after a message.
 */
static int
check_listed(struct run_cli *c, const struct opts_run *opt, const char *arg)
{
	bool stage = strcmp(opt->name, "stage") == 0;
	struct stage_set set;
	struct config_hook h;
	char name[64], other[64], why[320];

	if ((stage ? c->o->nstage : c->o->nhook) == RUN_LIST_MAX)
		return cmd_syntax_error("run", "at most %d --%s options", RUN_LIST_MAX, opt->name);
	if (!stage) {
		if (hooks_parse_spec(arg, &h, why, sizeof(why)) < 0)
			return cmd_usage_error("run", "--hook '%s': %s", arg, why);
		hooks_spec_free(&h);
		return 0;
	}
	if (stage_parse(arg, &set, name, sizeof(name), why, sizeof(why)) < 0)
		return cmd_usage_error("run", "--stage '%s': %s", arg, why);
	for (int i = 0; i < c->o->nstage; i++) {
		size_t n = strcspn(c->o->stage[i], "=");

		snprintf(other, sizeof(other), "%.*s", (int)n, c->o->stage[i]);
		if (strcmp(other, name) == 0)
			return cmd_usage_error("run", "--stage %s given twice: each dataset needs a "
			                       "name of its own", name);
	}
	return 0;
}

/* The command line into C.  0, -1 after --help, or an exit status. */
static int
parse_args(int argc, char **argv, struct run_cli *c)
{
	struct option longopts[CMD_CHECK_NOPTIONS + 64 + 2];
	char letters[2 * 64 + 3];
	const struct opts_run *opt;
	const char *value = NULL;
	bool bare = false;
	int ch, rc, last = -1;

	long_options(longopts, letters, sizeof(letters));
	optind = 0;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, letters, longopts, NULL)) != -1) {
		if (ch == '?' || ch == ':')
			return cmd_option_error("run", argv, ch);
		rc = cmd_check_flag("run", ch, optarg, &c->f);
		last = -1;
		if (rc == 1)
			continue;
		if (rc > 1)
			return rc;
		if (ch == 'h') {
			usage();
			return -1;
		}
		opt = row_of(ch);
		if (!opt)
			return cmd_usage_error("run", "invalid option");
		if (opt->kind == OPTS_LIST && (rc = check_listed(c, opt, optarg)) != 0)
			return rc;
		rc = take_option(c, opt, optarg, &bare);
		if (rc != 0)
			return rc;
		last = (int)(opt - opts_run_table);
		value = optarg;
	}
	rc = stray_unit(argv, argc, last, value, bare);
	if (rc != 0)
		return rc;
	warn_bare(c);
	if (optind >= argc && !c->o->batch)
		return cmd_usage_error("run", "no command: give it after --, e.g. vigil run -- python3 train.py");
	if (optind < argc && c->o->batch)
		return cmd_job_error("run", "--batch %s gives each sub-task's command: nothing may "
		                       "follow the options", c->o->batch);
	return 0;
}

/* Letters, digits, '-', '_' and '.': safe inside a file name. */
static bool
name_safe(const char *s)
{
	if (!s || !*s || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
		return false;
	return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") ==
	       strlen(s);
}

/*
 * Expand %j, %n and %u in the template options.  The job is SLURM_JOB_ID,
 * else this process's id (as run_job() names the job: only the coordinator
 * writes these files); the user comes from the password database, not the
 * environment.  0, or an exit status after a message.
 */
static int
expand_templates(struct run_cli *c)
{
	const char *job_env = getenv("SLURM_JOB_ID");
	struct passwd *pw = getpwuid(getuid());
	char job[32], user[64], path[4096];

	if (job_env && *job_env && !name_safe(job_env))
		return cmd_usage_error("run", "SLURM_JOB_ID holds more than letters, digits, '-', "
		                       "'_' and '.': refused in a file name");
	snprintf(job, sizeof(job), "%.31s", job_env && *job_env ? job_env : "");
	if (!job[0])
		snprintf(job, sizeof(job), "%ld", (long)getpid());
	if (pw && name_safe(pw->pw_name))
		snprintf(user, sizeof(user), "%.63s", pw->pw_name);
	else
		snprintf(user, sizeof(user), "%lu", (unsigned long)getuid());
	for (const struct opts_run *opt = opts_run_table; opt->name; opt++) {
		const char **field = (const char **)(void *)((char *)c->o + opt->off);
		int rc;

		if (opt->kind != OPTS_TEMPLATE || !*field || !strchr(*field, '%'))
			continue;
		rc = opts_expand(*field, job, c->node, user, path, sizeof(path));
		if (rc < 0)
			return cmd_usage_error("run", "--%s %s: %s", opt->name, *field, rc == -ENAMETOOLONG ?
			                       "the path is too long once expanded" : "a bad %% sequence");
		if (c->nowned == OWNED_MAX || !(c->owned[c->nowned] = strdup(path))) {
			LOG_ERR("out of memory");
			return VIGIL_EXIT_INTERNAL;
		}
		*field = c->owned[c->nowned++];
	}
	return 0;
}

/* With --verbose: each setting the file, the command line or a limit
 * chose, and where from, so that a site's defaults and limits can be seen
 * at work. */
static void
show_settings(const struct run_cli *c)
{
	const char *file = c->cfg->origin ? c->cfg->origin : "the configuration";
	char v[256], key[64];

	if (!c->o->verbose || !cmd_speaks())
		return;
	for (size_t i = 0; i < opts_run_count; i++) {
		const struct opts_run *opt = &opts_run_table[i];

		if (c->src[i] == OPTS_SRC_DEFAULT && !c->limited[i])
			continue;
		opts_run_show(opt, c->o, v, sizeof(v));
		opts_run_key(opt, key, sizeof(key));
		fprintf(stderr, "vigil run: --%s %s (%s%s%s%s%s)\n", opt->name, v,
		        c->src[i] == OPTS_SRC_FILE ? "run." : "",
		        c->src[i] == OPTS_SRC_FILE ? key : c->src[i] == OPTS_SRC_FLAG ?
		        "command line" : "default",
		        c->src[i] == OPTS_SRC_FILE ? " in " : "",
		        c->src[i] == OPTS_SRC_FILE ? file : "",
		        c->limited[i] ? ", lowered to the site's limit" : "");
	}
}

/* The site's limits over everything, noting which values they lowered. */
static void
limit(struct run_cli *c)
{
	double before[64];

	for (size_t i = 0; i < opts_run_count; i++)
		before[i] = opts_run_get(&opts_run_table[i], c->o);
	opts_run_clamp(c->cfg, c->o, c->src, warn, NULL);
	for (size_t i = 0; i < opts_run_count; i++)
		c->limited[i] = opts_run_get(&opts_run_table[i], c->o) < before[i];
}

/* After the command line: the file, the limits, the rules between options. */
static int
settle(struct run_cli *c)
{
	char why[512];
	int rc;

	rc = cmd_check_flags_apply("run", &c->f, c->cfg);
	if (rc != 0)
		return rc;
	if (opts_run_apply_config(c->cfg, c->o, c->src, why, sizeof(why)) < 0) {
		fprintf(stderr, "vigil: configuration error: %s\n", why);
		return VIGIL_EXIT_CONFIG;
	}
	limit(c);
	rc = expand_templates(c);
	if (rc != 0)
		return rc;
	if (opts_run_verify(c->o, c->src, c->cfg->origin, why, sizeof(why)) < 0)
		return cmd_usage_error("run", "%s", why);
	show_settings(c);
	return 0;
}

/*
 * --batch: this run's sub-task, its working directory and output.  Every
 * agent reads the same file with the same index: what is wrong with its
 * text is said once for the job, what is wrong on a node by that node
 * (cmd.h).
 */
static int
take_batch(struct run_cli *c)
{
	char err[600];
	int index, rc;

	if (batch_index(c->o->batch_index, &index, err, sizeof(err)) < 0)
		return cmd_job_error("run", "%s", err);
	rc = batch_load(c->o->batch, index, c->o->output_dir, &c->task, err, sizeof(err));
	if (rc == -EINVAL)
		return cmd_job_error("run", "%s", err);
	if (rc < 0)
		return cmd_node_error("run", "%s (on %s)", err, c->node);
	if (batch_check_algorithm(&c->task, c->o->batch, c->node, err, sizeof(err)) < 0)
		return cmd_node_error("run", "%s", err);
	c->o->workdir = c->task.algorithm;
	c->o->output_dir = c->task.output;
	return 0;
}

/*
 * Before MPI starts (no threads yet): the variables the training finds
 * its data and outputs by, and the output directory.  0 or an exit
 * status after a message.
 */
static int
platform_env(struct run_cli *c)
{
	char err[600];

	if (prep_setenv(c->o, err, sizeof(err)) < 0)
		return cmd_usage_error("run", "%s", err);
	if (c->o->notify && notify_check(c->o->notify, err, sizeof(err)) < 0) {
		const struct opts_run *n = opts_run_find("notify");

		if (c->src[n - opts_run_table] != OPTS_SRC_FILE)
			return cmd_usage_error("run", "--notify refused: %s", err);
		fprintf(stderr, "vigil: configuration error: %s: run.notify refused: %s\n",
		        c->cfg->origin ? c->cfg->origin : "the configuration", err);
		return VIGIL_EXIT_CONFIG;
	}
	if (c->o->output_dir && !c->o->dry_run &&
	    batch_make_output(c->o->output_dir, err, sizeof(err)) < 0)
		return cmd_node_error("run", "%s (on %s)", err, c->node);
	if (batch_setenv(c->o->batch ? &c->task : NULL, c->o->output_dir) < 0) {
		LOG_ERR("cannot set the batch's variables: out of memory");
		return VIGIL_EXIT_INTERNAL;
	}
	return 0;
}

/* Returns 0, -1 after --help, or an exit status. */
static int
run_parse(int argc, char **argv, struct run_cli *c)
{
	char err[1024], **cargv;
	int rc, cargc;

	rc = parse_args(argc, argv, c);
	if (rc != 0)
		return rc;
	cargc = argc - optind;
	cargv = argv + optind;
	rc = cmd_node_name(c->node, sizeof(c->node));
	if (rc != 0)
		return rc;
	c->o->node = c->node;
	if (c->o->batch) {
		rc = take_batch(c);
		if (rc != 0)
			return rc;
		cargc = c->task.argc;
		cargv = c->task.argv;
	}
	if (cmdline_check(cargc, cargv, &c->o->cmd, err, sizeof(err)) < 0) {
		if (c->o->batch)
			return cmd_job_error("run", "%s: %s", c->o->batch, err);
		fprintf(stderr, "vigil run: %s\n", err);
		return VIGIL_EXIT_USAGE;
	}
	c->o->topology = c->f.topology;
	rc = settle(c);
	return rc != 0 ? rc : platform_env(c);
}

int
cmd_run(int argc, char **argv)
{
	struct run_opts o;
	struct config cfg;
	struct run_cli c = { .o = &o, .cfg = &cfg };
	int rc;

	run_opts_init(&o);
	config_init(&cfg);
	rc = run_parse(argc, argv, &c);
	if (rc == 0) {
		/* --verbose: diagnostics, and each phase change of the agent,
		 * the coordinator and the node (agent/fsm.h), logged at debug */
		if (o.verbose)
			log_set_level(LOG_LEVEL_DEBUG);
		rc = run_job(&o, &cfg, &argc, &argv);
	} else if (rc < 0) {
		rc = VIGIL_EXIT_OK;
	}
	cmdline_free(o.cmd);
	batch_task_free(&c.task);
	cmd_check_flags_free(&c.f);
	for (size_t i = 0; i < c.nowned; i++)
		free(c.owned[i]);
	config_free(&cfg);
	return rc;
}
