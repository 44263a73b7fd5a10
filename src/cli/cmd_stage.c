/*
 * cmd_stage.c - `vigil stage`: data staging on this node (stage.h), by
 * itself (a site pre-staging data, a benchmark) or as `vigil run` runs it
 * on every node, with --progress.
 */
#include "autoconf.h"

#include <errno.h>
#include <getopt.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "vigil.h"
#include "agent/run.h"
#include "cli/cmd.h"
#include "conf/config.h"
#include "conf/opts.h"
#include "lib/util.h"
#include "prep/prepview.h"
#include "prep/stage.h"

static const char stage_usage[] =
"usage: vigil stage [OPTIONS] NAME=SOURCE...\n"
"       vigil stage --clean [OPTIONS]\n"
"\n"
"Copy each SOURCE (a directory, or a file) to this node's staging directory,\n"
"several files at once, reusing a copy already there (files of the same size\n"
"and modification time, to the second), and print where each copy is.  The copy\n"
"is read-only.  A source that changes while it is copied is copied again, and\n"
"refused when it keeps changing.\n"
"Copies unused for the retention are removed first; a staging that would fill\n"
"the file system past the maximum use is refused (exit 80).\n"
"\n"
"  --dir DIR           the staging directory (default: the configuration's\n"
"                      run.stage_dir, else /var/tmp/vigil-stage.%u; %u the user,\n"
"                      %n this node)\n"
"  --jobs N            files copied at once (default 4)\n"
"  --retention TIME    remove copies unused this long (default 7d; 0 keeps them)\n"
"  --max-use PCT       refuse to fill the file system past PCT% (default 90)\n"
"  --verify HOW        quick (size and modification time) or content (also\n"
"                      compare the bytes of every file kept; reads both sides)\n"
"  --clean             only remove the expired copies\n"
"  --progress          lines for programs on stdout: plan, copied, ready, error\n"
"  --config FILE       the site's defaults (the \"run\" section, vigil.conf(5))\n";

/* A set's plan, as the human summary needs it. */
struct seen_plan {
	char name[64];
	unsigned long long bytes, files, copy_files;
};

struct stage_cli {
	struct stage_opts so;
	bool progress, clean;
	const char *config, *dir, *jobs, *retention, *max_use, *verify;
	char dirbuf[4096];
	/* for the human summary: each set's plan (all come first), what was
	 * copied since the last set was ready (sets are copied one by one) */
	struct seen_plan plans[STAGE_SETS_MAX];
	int nplans;
	bool any_ready;
	unsigned long long copied_bytes;
	uint64_t t0;
};

/* The plan of NAME: the one said last, a new one, or NULL (more sets than planned). */
static struct seen_plan *
plan_of(struct stage_cli *c, const char *name, bool add)
{
	for (int i = 0; i < c->nplans; i++)
		if (strcmp(c->plans[i].name, name) == 0)
			return &c->plans[i];
	if (!add || c->nplans == STAGE_SETS_MAX)
		return NULL;
	snprintf(c->plans[c->nplans].name, sizeof(c->plans[0].name), "%s", name);
	return &c->plans[c->nplans++];
}

static void
on_progress(void *arg, const struct stage_progress *p)
{
	struct stage_cli *c = arg;
	struct seen_plan *plan;
	char a[32], b[32];

	if (c->progress) {
		if (p->event == STAGE_PLAN)
			printf("plan %s %llu %llu %llu %llu\n", p->name, p->bytes, p->files,
			       p->copy_bytes, p->copy_files);
		else if (p->event == STAGE_COPIED)
			printf("copied %llu %llu\n", p->bytes, p->files);
		else
			printf("ready %s %d %s\n", p->name, p->reused, p->path ? p->path : "");
		(void)fflush(stdout);  /* the agent reads it as it comes */
		return;
	}
	if (p->event == STAGE_COPIED) {
		c->copied_bytes += p->bytes;
		return;
	}
	plan = plan_of(c, p->name, p->event == STAGE_PLAN);
	if (!plan)
		return;
	if (p->event == STAGE_PLAN) {
		plan->bytes = p->bytes;
		plan->files = p->files;
		plan->copy_files = p->copy_files;
		if (!c->any_ready)
			c->t0 = util_now_ms();  /* the first set's copying starts after the plans */
		return;
	}
	util_fmt_bytes((double)plan->bytes, a, sizeof(a));
	util_fmt_bytes((double)c->copied_bytes, b, sizeof(b));
	if (p->reused)
		printf("%s: %s (%llu files, %s; reused)\n", p->name, p->path ? p->path : "?",
		       plan->files, a);
	else
		printf("%s: %s (%llu files, %s; %llu copied, %s, in %.1f s)\n", p->name,
		       p->path ? p->path : "?", plan->files, a, plan->copy_files, b,
		       (double)(util_now_ms() - c->t0) / 1000.0);
	c->any_ready = true;
	c->copied_bytes = 0;
	c->t0 = util_now_ms();
}

/* The defaults: run_opts_init()'s, then the configuration's "run" section. */
static int
defaults(struct stage_cli *c, struct run_opts *o, struct config *cfg)
{
	unsigned char src[64] = { 0 };
	char err[1024];
	int rc;

	run_opts_init(o);
	if (!c->config)
		return 0;
	rc = config_load_file(cfg, c->config, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "vigil: configuration error: %s\n", err);
		return VIGIL_EXIT_CONFIG;
	}
	if (opts_run_apply_config(cfg, o, src, err, sizeof(err)) < 0) {
		fprintf(stderr, "vigil: configuration error: %s\n", err);
		return VIGIL_EXIT_CONFIG;
	}
	return 0;
}

/* The flags over the defaults.  0 or an exit status after a message. */
static int
settle(struct stage_cli *c, const struct run_opts *o)
{
	struct passwd *pw = getpwuid(getuid());
	char node[256], user[64];
	long long n;
	double v;

	c->so.jobs = o->stage_jobs;
	c->so.retention_s = o->stage_retention_s;
	c->so.max_use_pct = (double)o->stage_max_use;
	if (c->jobs) {
		if (opts_count(c->jobs, 1, STAGE_JOBS_MAX, &n) < 0)
			return cmd_usage_error("stage", "--jobs needs a whole number from 1 to %d",
			                       STAGE_JOBS_MAX);
		c->so.jobs = (int)n;
	}
	if (c->retention && opts_duration(c->retention, &c->so.retention_s, NULL) < 0)
		return cmd_usage_error("stage", "--retention needs a duration (7d, 12h, 0 to keep)");
	if (c->max_use && opts_number(c->max_use, 1, 100, &v) < 0)
		return cmd_usage_error("stage", "--max-use needs a percentage from 1 to 100");
	if (c->max_use)
		c->so.max_use_pct = v;
	c->so.verify_content = o->stage_verify_content;
	if (c->verify) {
		const struct opts_run *opt = opts_run_find("stage-verify");
		char words[64];
		int w;

		if (opts_word(c->verify, opt->words, &w) < 0) {
			opts_words_list(opt->words, words, sizeof(words));
			return cmd_usage_error("stage", "--verify needs %s", words);
		}
		c->so.verify_content = w != 0;
	}
	snprintf(user, sizeof(user), "%s", pw ? pw->pw_name : "");
	if (!pw || strspn(user, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	                  "-_.") != strlen(user))
		snprintf(user, sizeof(user), "%lu", (unsigned long)getuid());
	if (cmd_node_name(node, sizeof(node)) != 0)
		return VIGIL_EXIT_USAGE;
	if (opts_expand(c->dir ? c->dir : o->stage_dir, "stage", node, user, c->dirbuf,
	                sizeof(c->dirbuf)) < 0 || c->dirbuf[0] != '/')
		return cmd_usage_error("stage", "--dir %s: an absolute path, where %% may only "
		                       "begin %%u, %%n or %%%%", c->dir ? c->dir : o->stage_dir);
	c->so.dir = c->dirbuf;
	c->so.progress = on_progress;
	c->so.arg = c;
	return 0;
}

static int
parse(int argc, char **argv, struct stage_cli *c)
{
	static const struct option longopts[] = {
		{ "dir", required_argument, NULL, 'd' }, { "jobs", required_argument, NULL, 'j' },
		{ "retention", required_argument, NULL, 'r' },
		{ "max-use", required_argument, NULL, 'm' }, { "clean", no_argument, NULL, 'C' },
		{ "verify", required_argument, NULL, 'v' },
		{ "progress", no_argument, NULL, 'P' }, { "config", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	int ch;

	optind = 0;
	while ((ch = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'd': c->dir = optarg; break;
		case 'j': c->jobs = optarg; break;
		case 'r': c->retention = optarg; break;
		case 'm': c->max_use = optarg; break;
		case 'v': c->verify = optarg; break;
		case 'C': c->clean = true; break;
		case 'P': c->progress = true; break;
		case 'c': c->config = optarg; break;
		case 'h': fputs(stage_usage, stdout); return -1;
		default: return cmd_usage_error("stage", "invalid option");
		}
	}
	if (optind >= argc && !c->clean)
		return cmd_usage_error("stage", "nothing to stage: give NAME=SOURCE, e.g. "
		                       "imagenet=/datasets/imagenet");
	return 0;
}

static int
clean_only(const struct stage_cli *c)
{
	char err[600] = "";
	int removed, rc = stage_clean(c->so.dir, c->so.retention_s, time(NULL), &removed, err,
	                              sizeof(err));

	if (rc == -ENOENT)
		return VIGIL_EXIT_OK;
	if (rc < 0) {
		fprintf(stderr, "vigil stage: %s\n", err[0] ? err : strerror(-rc));
		return VIGIL_EXIT_INTERNAL;
	}
	if (!c->progress)
		printf("%d expired cop%s removed from %s\n", removed, removed == 1 ? "y" : "ies",
		       c->so.dir);
	return VIGIL_EXIT_OK;
}

static int
stage_all(struct stage_cli *c, int n, char **args)
{
	struct stage_set sets[STAGE_SETS_MAX];
	char names[STAGE_SETS_MAX][64], err[600] = "";
	int rc;

	if (n > STAGE_SETS_MAX)
		return cmd_usage_error("stage", "at most %d datasets at once", STAGE_SETS_MAX);
	for (int i = 0; i < n; i++) {
		if (stage_parse(args[i], &sets[i], names[i], sizeof(names[i]), err, sizeof(err)) < 0)
			return cmd_usage_error("stage", "'%s': %s", args[i], err);
		for (int k = 0; k < i; k++)
			if (strcmp(sets[k].name, sets[i].name) == 0)
				return cmd_usage_error("stage", "dataset %s given twice ('%s', '%s'): each "
				                       "dataset needs a name of its own", sets[i].name,
				                       args[k], args[i]);
	}
	rc = stage_run(&c->so, sets, (size_t)n, err, sizeof(err));
	if (rc == 0)
		return VIGIL_EXIT_OK;
	if (c->progress) {
		printf("error %s\n", err[0] ? err : strerror(-rc));
		(void)fflush(stdout);
	} else {
		fprintf(stderr, "vigil stage: %s\n", err[0] ? err : strerror(-rc));
	}
	return rc == -ENOSPC ? VIGIL_EXIT_UNHEALTHY : VIGIL_EXIT_INTERNAL;
}

int
cmd_stage(int argc, char **argv)
{
	struct stage_cli c = { .so = { 0 } };
	struct run_opts o;
	struct config cfg;
	int rc;

	config_init(&cfg);
	rc = parse(argc, argv, &c);
	if (rc == 0)
		rc = defaults(&c, &o, &cfg);
	if (rc == 0)
		rc = settle(&c, &o);
	if (rc == 0)
		rc = c.clean ? clean_only(&c) : stage_all(&c, argc - optind, argv + optind);
	config_free(&cfg);
	return rc < 0 ? VIGIL_EXIT_OK : rc;
}
