/*
 * opts_run.c - the options of `vigil run` as one table, read by the
 * command line (cmd_run.c) and the configuration's "run" section
 * (config.c) alike, and the site's limits on them.
 *
 * Each row says what an option takes, where it goes in struct run_opts,
 * its range and why its minimum is what it is, its default, whether a
 * site may set it, and its help (opts_help.c makes --help of them).
 * Precedence is the same for every option: the defaults (run_opts_init()),
 * then the file, then the command line, then the site's "run.limits" over
 * all of them.
 */
#include "autoconf.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "conf/config.h"
#include "conf/opts.h"
#include "conf/run_opts.h"
#include "launch/ckpt.h"
#include "launch/modes.h"
#include "lib/sig.h"

#define FIELD(f) .off = offsetof(struct run_opts, f), .size = sizeof(((struct run_opts *)0)->f)
#define DAY 86400.0

static const struct opts_word output_words[] = {
	{ "all", 1 }, { "coordinator", 0 }, { NULL, 0 },
};
static const struct opts_word compare_words[] = {
	{ "above", 0 }, { "below", 1 }, { NULL, 0 },
};
static const struct opts_word action_words[] = {
	{ "alert", 0 }, { "reschedule", 1 }, { NULL, 0 },
};
static const struct opts_word hang_words[] = {
	{ "auto", RUN_ON_HANG_AUTO }, { "requeue", RUN_ON_HANG_REQUEUE },
	{ "restart", RUN_ON_HANG_RESTART }, { "stop", RUN_ON_HANG_STOP },
	{ "alert", RUN_ON_HANG_ALERT }, { NULL, 0 },
};
static const struct opts_word torch_words[] = {
	{ "auto", MODE_TORCH_AUTO }, { "launch", MODE_TORCH_LAUNCH }, { "run", MODE_TORCH_RUN },
	{ NULL, 0 },
};
static const struct opts_word verify_words[] = {
	{ "quick", 0 }, { "content", 1 }, { NULL, 0 },
};
static const struct opts_word precheck_words[] = {
	{ "fail", VERDICT_FAIL }, { "warn", VERDICT_WARN }, { "off", -1 }, { NULL, 0 },
};

/*
 * The minimums keep an interval from becoming a loop that spins (a 0 ms
 * timer), and a count from meaning nothing; the maximums are far beyond
 * any real job, so that a value there is a typing error.  Within a group,
 * --help lists the options in this order.
 */
const struct opts_run opts_run_table[] = {
	/* ---- how the training starts, and its output (--help: no heading) */
	{ .name = "mode", .kind = OPTS_MODE, FIELD(mode), .flags = OPTS_SITE, .def = "pytorch",
	  .arg = "MODE", .help = "how to start the training: pytorch, deepspeed, horovod, "
	  "tensorflow or single" },
	{ .name = "precheck", .kind = OPTS_PRECHECK, FIELD(precheck), .words = precheck_words,
	  .flags = OPTS_SITE, .def = "fail",
	  .arg = "LEVEL", .help = "no-go on: fail, warn (a warning too), or off (no pre-check)" },
	{ .name = "grace", .kind = OPTS_DURATION, FIELD(grace_s), .min = 0.1, .max = DAY,
	  .flags = OPTS_SITE | OPTS_LIMIT, .def = "30s",
	  .floor = "SIGKILL would follow SIGTERM before the training could act on it",
	  .help = "from TERM to KILL when stopping the training" },
	{ .name = "forward", .kind = OPTS_SIGNAL_PAIR, FIELD(forward),
	  .arg = "SIG=SIG", .help = "deliver a signal to the training as another (e.g. "
	  "USR1=USR2); repeatable" },
	{ .name = "master-addr", .kind = OPTS_STRING, FIELD(master_addr),
	  .arg = "ADDR", .help = "MASTER_ADDR (default: the coordinator's address)" },
	{ .name = "master-port", .kind = OPTS_COUNT, FIELD(master_port), .min = 1, .max = 65535,
	  .arg = "PORT", .help = "MASTER_PORT (default: a free port on the coordinator)" },
	{ .name = "ps", .kind = OPTS_COUNT, FIELD(ps), .min = 0, .max = 4096, .def = "0",
	  .arg = "N", .help = "tensorflow: N parameter servers, 0 for AllReduce" },
	{ .name = "torch-launcher", .kind = OPTS_WORD, FIELD(torch_launcher), .words = torch_words,
	  .flags = OPTS_SITE, .def = "auto",
	  .arg = "L", .help = "pytorch: launch (torch.distributed.launch, passes --local_rank), "
	  "run (torch.distributed.run: LOCAL_RANK only), or auto: launch when the script "
	  "declares a --local_rank option, else run" },
	{ .name = "tf-port", .kind = OPTS_COUNT, FIELD(tf_port), .min = 1, .max = 65535,
	  .flags = OPTS_SITE, .def = "2222",
	  .arg = "PORT", .help = "tensorflow: each task's port" },
	{ .name = "run-dir", .kind = OPTS_STRING, FIELD(run_dir),
	  .arg = "DIR", .help = "where hostfiles go: a directory of your own, mode 0700 "
	  "(default: a new private one in $TMPDIR, removed at the end)" },
	{ .name = "hostfile", .kind = OPTS_STRING, FIELD(hostfile),
	  .arg = "PATH", .help = "deepspeed/horovod hostfile (default RUN-DIR/hostfile)" },
	{ .name = "mpich-hostfile", .kind = OPTS_STRING, FIELD(mpich_hostfile),
	  .arg = "PATH", .help = "horovod MPICH hostfile (default RUN-DIR/mpich_hostfile)" },
	{ .name = "tag-output", .kind = OPTS_FLAG, FIELD(tag_output), .flags = OPTS_SITE,
	  .help = "prefix every line of output with [NODE:RANK]" },
	{ .name = "no-nudge", .kind = OPTS_FLAG, FIELD(no_nudge), .flags = OPTS_SITE,
	  .help = "no UDP wake-ups between agents (MPI read every 80 ms when idle)" },
	{ .name = "output", .kind = OPTS_WORD, FIELD(output_all), .words = output_words,
	  .flags = OPTS_SITE, .def = "all",
	  .arg = "WHO", .help = "all: every node's stdout; coordinator: rank 0's only, the "
	  "others kept in node logs (stderr from every node is always shown)" },
	{ .name = "report", .kind = OPTS_TEMPLATE, FIELD(report), .flags = OPTS_SITE,
	  .arg = "FILE", .help = "the coordinator writes the job's final report (JSON)" },
	{ .name = "events", .kind = OPTS_TEMPLATE, FIELD(events), .flags = OPTS_SITE,
	  .arg = "FILE", .help = "the coordinator appends events (JSON lines)" },
	{ .name = "dry-run", .kind = OPTS_FLAG, FIELD(dry_run),
	  .help = "print each node's environment, files and command; run nothing" },
	{ .name = "verbose", .letter = 'v', .kind = OPTS_FLAG, FIELD(verbose),
	  .help = "diagnostics, each phase change, and where each setting came from" },

	/* ---- resilience */
	{ .name = "resume", .kind = OPTS_FLAG, FIELD(resume), .flags = OPTS_SITE,
	  .group = OPTS_GROUP_RESILIENCE,
	  .help = "checkpoint and requeue on a fault, a lost node, the checkpoint signal or "
	  "the time limit (exit 81 requeue, 82 resumes exhausted, 83 expired)" },
	{ .name = "ckpt-signal", .kind = OPTS_SIGNAL, FIELD(ckpt_signal), .flags = OPTS_SITE,
	  .def = "USR1", .group = OPTS_GROUP_RESILIENCE,
	  .arg = "SIG", .help = "what the training gets to save" },
	{ .name = "ckpt-confirm", .kind = OPTS_STRING, FIELD(ckpt_confirm), .flags = OPTS_SITE,
	  .group = OPTS_GROUP_RESILIENCE,
	  .arg = "HOW", .help = "what a save looks like: file:PATH (the training touches PATH) "
	  "or output:REGEX (it prints a matching line); default: exit 0" },
	{ .name = "ckpt-lead", .kind = OPTS_DURATION, FIELD(ckpt_lead_s), .min = 1, .max = DAY,
	  .flags = OPTS_SITE, .def = "60s", .floor = "the training needs time to save",
	  .group = OPTS_GROUP_RESILIENCE,
	  .help = "checkpoint this long before the time limit" },
	{ .name = "time-limit", .kind = OPTS_DURATION, FIELD(time_limit_s), .min = 1,
	  .max = OPTS_DURATION_MAX, .flags = OPTS_BARE_WARN, .group = OPTS_GROUP_RESILIENCE,
	  .help = "the job's time limit; default SLURM_JOB_END_TIME when set" },
	{ .name = "max-resumes", .kind = OPTS_COUNT, FIELD(max_resumes), .min = 0, .max = 1000000,
	  .flags = OPTS_SITE | OPTS_LIMIT | OPTS_UNSET, .group = OPTS_GROUP_RESILIENCE,
	  .arg = "N", .help = "requeue at most N times (SLURM_RESTART_COUNT or --state); "
	  "default: no limit" },
	{ .name = "state", .kind = OPTS_STRING, FIELD(state_file), .group = OPTS_GROUP_RESILIENCE,
	  .arg = "FILE", .help = "count requeues here when SLURM_RESTART_COUNT is not set" },
	{ .name = "exclude-file", .kind = OPTS_STRING, FIELD(exclude_file),
	  .group = OPTS_GROUP_RESILIENCE,
	  .arg = "FILE", .help = "write the faulty nodes' hostnames here (sbatch --exclude)" },
	{ .name = "ckpt-dir", .kind = OPTS_STRING, FIELD(ckpt_dir), .group = OPTS_GROUP_RESILIENCE,
	  .arg = "DIR", .help = "inspect the space left in the checkpoint directory" },
	{ .name = "restart", .kind = OPTS_COUNT, FIELD(restart_max), .min = 0, .max = 1000000,
	  .flags = OPTS_LIMIT, .group = OPTS_GROUP_RESILIENCE,
	  .arg = "N", .help = "fault restart: start the training again up to N times" },
	{ .name = "min-nodes", .kind = OPTS_COUNT, FIELD(min_nodes), .min = 0, .max = 1000000,
	  .group = OPTS_GROUP_RESILIENCE,
	  .arg = "M", .help = "elastic: run on the healthy nodes if at least M remain" },
	{ .name = "spares", .kind = OPTS_COUNT, FIELD(spares), .min = 0, .max = 1000000,
	  .group = OPTS_GROUP_RESILIENCE,
	  .arg = "K", .help = "hot spares: the last K ranks run no training; when a node fails, "
	  "the trainings save and start again with a spare in its place (same WORLD_SIZE)" },
	{ .name = "inspect-interval", .kind = OPTS_DURATION, FIELD(inspect_s), .min = 1, .max = DAY,
	  .flags = OPTS_SITE | OPTS_OFF, .def = "30s",
	  .floor = "the inspection reads every board and port: more often only loads the node",
	  .group = OPTS_GROUP_RESILIENCE, .help = "inspect boards and NICs this often" },
	{ .name = "heartbeat", .kind = OPTS_DURATION, FIELD(heartbeat_s), .min = 0.1, .max = 3600,
	  .flags = OPTS_SITE, .def = "5s",
	  .floor = "a shorter heartbeat keeps every agent and the coordinator busy",
	  .group = OPTS_GROUP_RESILIENCE, .help = "heartbeat interval" },
	{ .name = "heartbeat-timeout", .kind = OPTS_DURATION, FIELD(heartbeat_timeout_s), .min = 0.5,
	  .max = DAY, .flags = OPTS_SITE, .def = "30s",
	  .floor = "any scheduling delay would count as a lost node",
	  .group = OPTS_GROUP_RESILIENCE, .help = "a node silent this long is lost" },
	{ .name = "hang-timeout", .kind = OPTS_DURATION, FIELD(hang_timeout_s), .min = 1,
	  .max = DAY, .flags = OPTS_SITE | OPTS_OFF, .def = "30s",
	  .floor = "a pause between two iterations would count as a hang",
	  .group = OPTS_GROUP_RESILIENCE,
	  .help = "hung: no iteration on any node for this long, or for 10 times the median "
	  "iteration time when that is longer (10 times more before the first iteration)" },
	{ .name = "hang-silence", .kind = OPTS_DURATION, FIELD(hang_silence_s), .min = 1,
	  .max = DAY, .flags = OPTS_SITE | OPTS_OFF, .group = OPTS_GROUP_RESILIENCE,
	  .help = "for a training that prints no timing lines: hung after no output from any "
	  "node for this long" },
	{ .name = "on-hang", .kind = OPTS_WORD, FIELD(on_hang), .words = hang_words,
	  .flags = OPTS_SITE, .def = "auto", .group = OPTS_GROUP_RESILIENCE,
	  .arg = "WHAT", .help = "after a hang's forensics: requeue (with --resume: exit 81, "
	  "the suspect excluded), restart (counts against --restart), stop (exit 84), alert "
	  "(event and --notify only), or auto: requeue with --resume, restart with --restart, "
	  "else alert" },
	{ .name = "hold-on-failure", .kind = OPTS_DURATION, FIELD(hold_s), .min = 1,
	  .max = 30 * DAY, .flags = OPTS_SITE | OPTS_LIMIT | OPTS_OFF,
	  .group = OPTS_GROUP_RESILIENCE,
	  .help = "keep the allocation this long after an abnormal end" },

	/* ---- performance */
	{ .name = "perf-threshold", .kind = OPTS_NUMBER, FIELD(perf_threshold), .min = 0.001,
	  .max = 1e6, .flags = OPTS_SITE, .group = OPTS_GROUP_PERF,
	  .arg = "R", .help = "alert when hardware/e2e is above R (see --perf-compare)" },
	{ .name = "perf-window", .kind = OPTS_COUNT, FIELD(perf_window), .min = 1, .max = 1000000,
	  .flags = OPTS_SITE, .def = "5", .group = OPTS_GROUP_PERF,
	  .arg = "W", .help = "for W consecutive iterations" },
	{ .name = "perf-compare", .kind = OPTS_WORD, FIELD(perf_below), .words = compare_words,
	  .flags = OPTS_SITE, .def = "above", .group = OPTS_GROUP_PERF,
	  .arg = "WAY", .help = "above (as the platform) or below (low utilisation)" },
	{ .name = "perf-action", .kind = OPTS_WORD, FIELD(perf_reschedule), .words = action_words,
	  .flags = OPTS_SITE, .def = "alert", .group = OPTS_GROUP_PERF,
	  .arg = "WHAT", .help = "alert, or reschedule: checkpoint and requeue (with --resume)" },
	{ .name = "straggler-pct", .kind = OPTS_NUMBER, FIELD(straggler_pct), .min = 0.001,
	  .max = 1e6, .flags = OPTS_SITE, .group = OPTS_GROUP_PERF,
	  .arg = "P", .help = "name a node whose e2e is P% above the nodes' median" },
	{ .name = "notify", .kind = OPTS_STRING, FIELD(notify), .flags = OPTS_SITE,
	  .group = OPTS_GROUP_PERF,
	  .arg = "CMD", .help = "run CMD on the coordinator per alert, the alert as JSON on stdin" },
	{ .name = "metrics", .kind = OPTS_TEMPLATE, FIELD(metrics), .flags = OPTS_SITE,
	  .group = OPTS_GROUP_PERF,
	  .arg = "FILE", .help = "keep a Prometheus textfile of the current figures" },
	/* not a timer: looked at when a reduction completes, so it cannot spin */
	{ .name = "summary-interval", .kind = OPTS_DURATION, FIELD(summary_s), .min = 0.001,
	  .max = DAY, .flags = OPTS_SITE | OPTS_OFF, .def = "60s", .group = OPTS_GROUP_PERF,
	  .help = "one summary line this often" },
	{ .name = "perf-interval", .kind = OPTS_DURATION, FIELD(perf_interval_s), .min = 0.05,
	  .max = 3600, .flags = OPTS_SITE, .def = "1s",
	  .floor = "each reduction is a collective operation across every node",
	  .group = OPTS_GROUP_PERF, .help = "reduce the timings across nodes this often" },

	/* ---- data preparation, lifecycle scripts, batch tasks, kept output (prep.h) */
	{ .name = "stage", .kind = OPTS_LIST, FIELD(stage),
	  .count_off = offsetof(struct run_opts, nstage), .group = OPTS_GROUP_PREP,
	  .arg = "NAME=SRC", .help = "copy SRC (an absolute path, read on every node) to "
	  "node-local storage before the launch, found as $VIGIL_STAGE_NAME; repeatable" },
	{ .name = "stage-dir", .kind = OPTS_TEMPLATE, FIELD(stage_dir), .flags = OPTS_SITE,
	  .def = "/var/tmp/vigil-stage.%u", .group = OPTS_GROUP_PREP,
	  .arg = "DIR", .help = "the node's staging directory" },
	{ .name = "stage-retention", .kind = OPTS_DURATION, FIELD(stage_retention_s), .min = 60,
	  .max = OPTS_DURATION_MAX, .flags = OPTS_SITE | OPTS_LIMIT | OPTS_OFF, .def = "7d",
	  .floor = "a copy is kept for the jobs that follow", .group = OPTS_GROUP_PREP,
	  .help = "keep a staged copy no job used this long" },
	{ .name = "stage-max-use", .kind = OPTS_COUNT, FIELD(stage_max_use), .min = 1, .max = 100,
	  .flags = OPTS_SITE | OPTS_LIMIT, .def = "90", .group = OPTS_GROUP_PREP,
	  .arg = "PCT", .help = "refuse a staging that fills its file system past PCT%" },
	{ .name = "stage-jobs", .kind = OPTS_COUNT, FIELD(stage_jobs), .min = 1, .max = 64,
	  .flags = OPTS_SITE | OPTS_LIMIT, .def = "4", .group = OPTS_GROUP_PREP,
	  .arg = "N", .help = "files copied at once per node" },
	{ .name = "stage-verify", .kind = OPTS_WORD, FIELD(stage_verify_content),
	  .words = verify_words, .flags = OPTS_SITE, .def = "quick", .group = OPTS_GROUP_PREP,
	  .arg = "HOW", .help = "keep a copied file of the source's size and modification time "
	  "(quick), or compare its bytes too (content)" },
	{ .name = "stage-timeout", .kind = OPTS_DURATION, FIELD(stage_timeout_s), .min = 1,
	  .max = 30 * DAY, .flags = OPTS_SITE | OPTS_OFF, .group = OPTS_GROUP_PREP,
	  .help = "a time limit on the staging; none by default" },
	{ .name = "hook", .kind = OPTS_LIST, FIELD(hook),
	  .count_off = offsetof(struct run_opts, nhook), .group = OPTS_GROUP_PREP,
	  .arg = "PHASE[:ATTR]...=CMD", .help = "run CMD with /bin/sh -c at PHASE: pre-check, "
	  "pre-launch, checkpoint, requeue or end; each ATTR all or coordinator, fail or warn, "
	  "or a time limit; repeatable" },
	{ .name = "hook-timeout", .kind = OPTS_DURATION, FIELD(hook_timeout_s), .min = 1,
	  .max = DAY, .flags = OPTS_SITE | OPTS_LIMIT, .def = "5m", .group = OPTS_GROUP_PREP,
	  .help = "a hook's time limit when it gives none" },
	{ .name = "batch", .kind = OPTS_STRING, FIELD(batch), .group = OPTS_GROUP_PREP,
	  .arg = "FILE", .help = "run one sub-task of a batch file, with its own command (nothing "
	  "may follow the options) and working directory" },
	{ .name = "batch-index", .kind = OPTS_COUNT, FIELD(batch_index), .min = 0, .max = 1000000,
	  .flags = OPTS_UNSET, .group = OPTS_GROUP_PREP,
	  .arg = "N", .help = "which sub-task (default: SLURM_ARRAY_TASK_ID)" },
	{ .name = "output-dir", .kind = OPTS_STRING, FIELD(output_dir), .group = OPTS_GROUP_PREP,
	  .arg = "DIR", .help = "the training's output directory, in VIGIL_OUTPUT_DIR (a batch "
	  "task's: DIR/NAME-INDEX)" },
	{ .name = "node-logs", .kind = OPTS_TEMPLATE, FIELD(node_logs), .flags = OPTS_SITE,
	  .group = OPTS_GROUP_PREP,
	  .arg = "DIR", .help = "where a node whose stdout is not shown keeps it, as "
	  "DIR/NODE.out (default RUN-DIR/logs with --run-dir, else vigil-logs.JOB)" },
	{ .name = "node-log-mb", .kind = OPTS_COUNT, FIELD(node_log_mb), .min = 1, .max = 1 << 20,
	  .flags = OPTS_SITE | OPTS_LIMIT, .def = "64", .group = OPTS_GROUP_PREP,
	  .arg = "N", .help = "start a node log anew past N MiB, keeping the last one" },
	{ .name = NULL },
};

const size_t opts_run_count = sizeof(opts_run_table) / sizeof(opts_run_table[0]) - 1;
/* sets of options are 64-bit masks (config.c) */
_Static_assert(sizeof(opts_run_table) / sizeof(opts_run_table[0]) - 1 <= 64,
               "more than 64 run options");

/* The modes in the order the usage text gives them. */
static const enum mode mode_order[] = {
	MODE_PYTORCH, MODE_DEEPSPEED, MODE_HOROVOD, MODE_TENSORFLOW, MODE_SINGLE,
};

const struct opts_run *
opts_run_find(const char *name)
{
	for (const struct opts_run *opt = opts_run_table; opt->name; opt++)
		if (strcmp(opt->name, name) == 0)
			return opt;
	return NULL;
}

void
opts_run_key(const struct opts_run *opt, char *buf, size_t len)
{
	size_t i;

	if (len == 0)
		return;
	for (i = 0; opt->name[i] && i + 1 < len; i++)
		buf[i] = opt->name[i] == '-' ? '_' : opt->name[i];
	buf[i] = '\0';
}

const struct opts_run *
opts_run_find_key(const char *key)
{
	char buf[64];

	for (const struct opts_run *opt = opts_run_table; opt->name; opt++) {
		opts_run_key(opt, buf, sizeof(buf));
		if (strcmp(buf, key) == 0)
			return opt;
	}
	return NULL;
}

void
opts_run_format(const struct opts_run *opt, double v, char *buf, size_t len)
{
	if (isinf(v))
		snprintf(buf, len, "no limit");
	else if (opt->kind == OPTS_DURATION)
		snprintf(buf, len, "%g s", v);
	else
		snprintf(buf, len, "%.15g", v);
}

/* A list's values in O, ", " between them. */
static void
show_list(const struct opts_run *opt, const struct run_opts *o, char *buf, size_t len)
{
	const char *const *item = (const char *const *)(const void *)((const char *)o + opt->off);
	size_t w = 0;
	int n;

	memcpy(&n, (const char *)o + opt->count_off, sizeof(n));
	buf[0] = '\0';
	for (int i = 0; i < n && w < len; i++) {
		int k = snprintf(buf + w, len - w, "%s%s", i ? ", " : "", item[i]);

		if (k < 0)
			break;
		w += (size_t)k;
	}
}

void
opts_run_show(const struct opts_run *opt, const struct run_opts *o, char *buf, size_t len)
{
	const char *f = (const char *)o + opt->off, *str;
	enum mode m;
	bool b;
	int v = 0;

	switch (opt->kind) {
	case OPTS_COUNT:
	case OPTS_DURATION:
	case OPTS_NUMBER:
		opts_run_format(opt, opts_run_get(opt, o), buf, len);
		return;
	case OPTS_FLAG:
		memcpy(&b, f, sizeof(b));
		snprintf(buf, len, "%s", b ? "true" : "false");
		return;
	case OPTS_STRING:
	case OPTS_TEMPLATE:
		memcpy(&str, f, sizeof(str));
		snprintf(buf, len, "%s", str ? str : "(none)");
		return;
	case OPTS_MODE:
		memcpy(&m, f, sizeof(m));
		snprintf(buf, len, "%s", mode_name(m));
		return;
	case OPTS_PRECHECK:
		snprintf(buf, len, "%s", !o->precheck ? "off" : verdict_name(o->precheck_level));
		return;
	case OPTS_SIGNAL:
		memcpy(&v, f, sizeof(v));
		snprintf(buf, len, "%s", sig_name(v));
		return;
	case OPTS_WORD:
		if (opt->size == sizeof(bool)) {
			memcpy(&b, f, sizeof(b));
			v = b;
		} else {
			memcpy(&v, f, sizeof(v));
		}
		for (const struct opts_word *w = opt->words; w->word; w++)
			if (w->value == v) {
				snprintf(buf, len, "%s", w->word);
				return;
			}
		break;
	case OPTS_LIST:
		show_list(opt, o, buf, len);
		return;
	case OPTS_SIGNAL_PAIR:
		break;
	}
	snprintf(buf, len, "?");
}

/* V against OPT's range: 0, or -ERANGE with the sentence in WHY. */
static int
check_range(const struct opts_run *opt, double v, char *why, size_t whylen)
{
	char got[48], bound[48];

	if (v == 0 && (opt->flags & OPTS_OFF))
		return 0;
	if (v >= opt->min && v <= opt->max)
		return 0;
	opts_run_format(opt, v, got, sizeof(got));
	if (v < opt->min) {
		opts_run_format(opt, opt->min, bound, sizeof(bound));
		snprintf(why, whylen, "%s is below the minimum of %s%s%s%s", got, bound,
		         opt->flags & OPTS_OFF ? " (0 switches it off)" : "",
		         opt->floor ? ": " : "", opt->floor ? opt->floor : "");
	} else {
		opts_run_format(opt, opt->max, bound, sizeof(bound));
		snprintf(why, whylen, "%s is above the maximum of %s", got, bound);
	}
	return -ERANGE;
}

void
opts_run_expected(const struct opts_run *opt, char *why, size_t whylen)
{
	char words[128];
	size_t o = 0;

	switch (opt->kind) {
	case OPTS_FLAG:
		snprintf(why, whylen, "expected true or false");
		break;
	case OPTS_COUNT:
		snprintf(why, whylen, "expected a whole number from %.0f to %.0f", opt->min, opt->max);
		break;
	case OPTS_DURATION:
		snprintf(why, whylen, "expected a duration: 90 (seconds), 20s, 15m, 2h, 1d, "
		         "MM:SS, HH:MM:SS or D-HH:MM:SS");
		break;
	case OPTS_NUMBER:
		snprintf(why, whylen, "expected a positive number such as 0.45 or 20");
		break;
	case OPTS_WORD:
	case OPTS_PRECHECK:
		opts_words_list(opt->words, words, sizeof(words));
		snprintf(why, whylen, "expected %s", words);
		break;
	case OPTS_MODE:
		for (size_t i = 0; i < sizeof(mode_order) / sizeof(mode_order[0]); i++) {
			int n = snprintf(words + o, sizeof(words) - o, "%s%s",
			                 i == 0 ? "" : i + 1 == sizeof(mode_order) / sizeof(mode_order[0]) ?
			                 " or " : ", ", mode_name(mode_order[i]));

			if (n < 0 || (size_t)n >= sizeof(words) - o)
				break;
			o += (size_t)n;
		}
		snprintf(why, whylen, "expected %s", words);
		break;
	case OPTS_SIGNAL:
		snprintf(why, whylen, "expected a signal (USR1, SIGUSR2, 12)");
		break;
	case OPTS_SIGNAL_PAIR:
		snprintf(why, whylen, "expected SIGNAL=SIGNAL (e.g. USR1=USR2)");
		break;
	case OPTS_STRING:
	case OPTS_LIST:
		snprintf(why, whylen, "expected a non-empty value");
		break;
	case OPTS_TEMPLATE:
		snprintf(why, whylen, "expected a path, where %% may only begin %%j (the job), "
		         "%%n (the node), %%u (the user) or %%%%");
		break;
	}
}

static int
bad(const struct opts_run *opt, char *why, size_t whylen)
{
	opts_run_expected(opt, why, whylen);
	return -EINVAL;
}

static void *
field(const struct opts_run *opt, struct run_opts *o)
{
	return (char *)o + opt->off;
}

/* An int, an enum or a bool field, by its size. */
static void
store_int(const struct opts_run *opt, struct run_opts *o, int v)
{
	if (opt->size == sizeof(bool)) {
		bool b = v != 0;

		memcpy(field(opt, o), &b, sizeof(b));
	} else {
		memcpy(field(opt, o), &v, sizeof(v));
	}
}

/* A number (from text or a file) for a numeric kind: range, then store. */
static int
store_num(const struct opts_run *opt, double v, struct run_opts *o, char *why, size_t whylen)
{
	int rc = check_range(opt, v, why, whylen);

	if (rc < 0)
		return rc;
	if (opt->kind == OPTS_COUNT)
		store_int(opt, o, (int)v);
	else
		memcpy(field(opt, o), &v, sizeof(v));
	return 0;
}

static int
set_words(const struct opts_run *opt, const char *text, struct run_opts *o, char *why,
          size_t whylen)
{
	enum mode m;
	int v;

	if (opt->kind == OPTS_MODE) {
		if (mode_parse(text, &m) < 0)
			return bad(opt, why, whylen);
		memcpy(field(opt, o), &m, sizeof(m));
		return 0;
	}
	if (opts_word(text, opt->words, &v) < 0)
		return bad(opt, why, whylen);
	if (opt->kind == OPTS_PRECHECK) {
		o->precheck = v >= 0;
		if (v >= 0)
			o->precheck_level = (enum verdict)v;
		return 0;
	}
	store_int(opt, o, v);
	return 0;
}

/* One more value of a repeatable option, kept as given. */
static int
append(const struct opts_run *opt, const char *text, struct run_opts *o, char *why,
       size_t whylen)
{
	char *count = (char *)o + opt->count_off;
	int n;

	if (!text[0])
		return bad(opt, why, whylen);
	memcpy(&n, count, sizeof(n));
	if (n < 0 || (size_t)n >= opt->size / sizeof(text)) {
		snprintf(why, whylen, "at most %zu --%s options", opt->size / sizeof(text), opt->name);
		return -ERANGE;
	}
	memcpy((char *)field(opt, o) + (size_t)n * sizeof(text), &text, sizeof(text));
	n++;
	memcpy(count, &n, sizeof(n));
	return 0;
}

static int
set_text(const struct opts_run *opt, const char *text, struct run_opts *o, char *why,
         size_t whylen)
{
	char buf[4096];
	int sig, from, to;

	switch (opt->kind) {
	case OPTS_SIGNAL:
		if (sig_parse(text, &sig) < 0)
			return bad(opt, why, whylen);
		store_int(opt, o, sig);
		return 0;
	case OPTS_SIGNAL_PAIR:
		if (opts_signal_pair(text, &from, &to) < 0)
			return bad(opt, why, whylen);
		if (o->nforward >= (int)(sizeof(o->forward) / sizeof(o->forward[0]))) {
			snprintf(why, whylen, "at most %zu signals can be forwarded",
			         sizeof(o->forward) / sizeof(o->forward[0]));
			return -ERANGE;
		}
		o->forward[o->nforward].from = from;
		o->forward[o->nforward].to = to;
		o->nforward++;
		return 0;
	case OPTS_TEMPLATE:
		if (!text[0] || opts_expand(text, "j", "n", "u", buf, sizeof(buf)) == -EINVAL)
			return bad(opt, why, whylen);
		memcpy(field(opt, o), &text, sizeof(text));
		return 0;
	case OPTS_STRING:
		if (!text[0])
			return bad(opt, why, whylen);
		memcpy(field(opt, o), &text, sizeof(text));
		return 0;
	case OPTS_LIST:
		return append(opt, text, o, why, whylen);
	default:
		return set_words(opt, text, o, why, whylen);
	}
}

int
opts_run_set(const struct opts_run *opt, const char *text, struct run_opts *o, bool *bare,
             char *why, size_t whylen)
{
	long long n;
	double v;
	int rc;

	if (bare)
		*bare = false;
	switch (opt->kind) {
	case OPTS_FLAG:
		if (text && strcmp(text, "true") != 0 && strcmp(text, "false") != 0)
			return bad(opt, why, whylen);
		store_int(opt, o, !text || text[0] == 't');
		return 0;
	case OPTS_COUNT:
		rc = opts_count(text, 0, INT64_MAX, &n);
		if (rc < 0)
			return bad(opt, why, whylen);
		return store_num(opt, (double)n, o, why, whylen);
	case OPTS_DURATION:
		rc = opts_duration(text, &v, bare);
		if (rc == -ERANGE)
			v = INFINITY;
		else if (rc < 0)
			return bad(opt, why, whylen);
		return store_num(opt, v, o, why, whylen);
	case OPTS_NUMBER:
		rc = opts_number(text, 0, INFINITY, &v);
		if (rc < 0)
			return bad(opt, why, whylen);
		return store_num(opt, v, o, why, whylen);
	default:
		if (!text)
			return bad(opt, why, whylen);
		return set_text(opt, text, o, why, whylen);
	}
}

int
opts_run_set_num(const struct opts_run *opt, double value, struct run_opts *o, char *why,
                 size_t whylen)
{
	char text[32];

	if (!isfinite(value) || value < 0)
		return bad(opt, why, whylen);
	switch (opt->kind) {
	case OPTS_FLAG:
		if (value != 0 && value != 1)
			return bad(opt, why, whylen);
		store_int(opt, o, value == 1);
		return 0;
	case OPTS_COUNT:
		if (value > 1e15 || value != (double)(long long)value)
			return bad(opt, why, whylen);
		/* fall through */
	case OPTS_DURATION:
	case OPTS_NUMBER:
		return store_num(opt, value, o, why, whylen);
	case OPTS_SIGNAL:
		if (value > 1024 || value != (double)(long long)value)
			return bad(opt, why, whylen);
		snprintf(text, sizeof(text), "%.0f", value);
		return set_text(opt, text, o, why, whylen);
	default:
		return bad(opt, why, whylen);
	}
}

double
opts_run_get(const struct opts_run *opt, const struct run_opts *o)
{
	const char *f = (const char *)o + opt->off;
	double d;
	int i;

	switch (opt->kind) {
	case OPTS_COUNT:
		memcpy(&i, f, sizeof(i));
		return i < opt->min ? INFINITY : (double)i;
	case OPTS_DURATION:
	case OPTS_NUMBER:
		memcpy(&d, f, sizeof(d));
		return d;
	default:
		return NAN;
	}
}

int
opts_run_check(const struct opts_run *opt, const char *text, double value, double *num,
               char *why, size_t whylen)
{
	struct run_opts scratch;
	int rc;

	memset(&scratch, 0, sizeof(scratch));
	rc = text ? opts_run_set(opt, text, &scratch, NULL, why, whylen)
	          : opts_run_set_num(opt, value, &scratch, why, whylen);
	if (rc == 0 && num)
		*num = opts_run_get(opt, &scratch);
	return rc;
}

int
opts_run_apply_config(const struct config *cfg, struct run_opts *o, unsigned char *src,
                      char *why, size_t whylen)
{
	for (size_t i = 0; i < cfg->nrun; i++) {
		const struct config_setting *s = &cfg->run[i];
		size_t idx = (size_t)(s->opt - opts_run_table);
		int rc;

		if (src[idx] == OPTS_SRC_FLAG)
			continue;
		rc = s->text ? opts_run_set(s->opt, s->text, o, NULL, why, whylen)
		             : opts_run_set_num(s->opt, s->num, o, why, whylen);
		if (rc < 0)
			return -EINVAL;
		src[idx] = OPTS_SRC_FILE;
	}
	return 0;
}

int
opts_run_clamp(const struct config *cfg, struct run_opts *o, const unsigned char *src,
               void (*note)(void *arg, const char *msg), void *arg)
{
	int lowered = 0;

	for (size_t i = 0; i < cfg->nrun_limits; i++) {
		const struct config_setting *s = &cfg->run_limits[i];
		size_t idx = (size_t)(s->opt - opts_run_table);
		double cur = opts_run_get(s->opt, o);
		char why[256], was[48], lim[48], key[64], msg[512];

		if (!(cur > s->num))
			continue;
		if (opts_run_set_num(s->opt, s->num, o, why, sizeof(why)) < 0)
			continue;  /* checked when the file was read */
		lowered++;
		if (src[idx] == OPTS_SRC_DEFAULT || !note)
			continue;
		opts_run_format(s->opt, cur, was, sizeof(was));
		opts_run_format(s->opt, s->num, lim, sizeof(lim));
		opts_run_key(s->opt, key, sizeof(key));
		snprintf(msg, sizeof(msg), "--%s %s is above the site's limit of %s "
		         "(run.limits.%s in %s): using %s", s->opt->name, was, lim, key,
		         cfg->origin ? cfg->origin : "the configuration", lim);
		note(arg, msg);
	}
	return lowered;
}

/* "--NAME (VALUE)" or "run.KEY (VALUE, in FILE)", by where the value came from. */
static void
label(const struct opts_run *opt, const struct run_opts *o, const unsigned char *src,
      const char *file, char *buf, size_t len)
{
	size_t idx = (size_t)(opt - opts_run_table);
	char v[48], key[64];

	opts_run_show(opt, o, v, sizeof(v));
	if (src[idx] == OPTS_SRC_FILE) {
		opts_run_key(opt, key, sizeof(key));
		snprintf(buf, len, "run.%s (%s, in %s)", key, v, file ? file : "the configuration");
	} else {
		snprintf(buf, len, "--%s (%s%s)", opt->name, v,
		         src[idx] == OPTS_SRC_DEFAULT ? ", the default" : "");
	}
}

int
opts_run_verify(const struct run_opts *o, const unsigned char *src, const char *file,
                char *why, size_t whylen)
{
	char a[160], b[160];

	if (o->perf_reschedule && !o->resume) {
		snprintf(why, whylen, "--perf-action reschedule checkpoints and requeues: it needs --resume");
		return -EINVAL;
	}
	if (o->on_hang == RUN_ON_HANG_REQUEUE && !o->resume) {
		snprintf(why, whylen, "--on-hang requeue requeues the job: it needs --resume");
		return -EINVAL;
	}
	if (o->on_hang == RUN_ON_HANG_RESTART && o->restart_max <= 0) {
		snprintf(why, whylen, "--on-hang restart starts the training again: it needs "
		         "--restart N");
		return -EINVAL;
	}
	if (o->resume && o->restart_max > 0) {
		/* the platform manual: 断点续训 and 故障重启 exclude each other */
		snprintf(why, whylen, "--resume and --restart exclude each other: resume "
		         "checkpoints and requeues the job, restart starts the training again in place");
		return -EINVAL;
	}
	if (o->heartbeat_timeout_s <= o->heartbeat_s) {
		label(opts_run_find("heartbeat-timeout"), o, src, file, a, sizeof(a));
		label(opts_run_find("heartbeat"), o, src, file, b, sizeof(b));
		snprintf(why, whylen, "%s must be longer than %s", a, b);
		return -EINVAL;
	}
	if (o->ckpt_confirm) {
		struct ckpt_confirm *cc = NULL;
		const char *msg;
		char err[256];

		if (ckpt_confirm_new(o->ckpt_confirm, &cc, err, sizeof(err)) < 0) {
			/* the message names --ckpt-confirm: once, or the file's key instead */
			msg = strncmp(err, "--ckpt-confirm: ", 16) == 0 ? err + 16 : err;
			if (src[opts_run_find("ckpt-confirm") - opts_run_table] == OPTS_SRC_FILE)
				snprintf(why, whylen, "run.ckpt_confirm in %s: %s",
				         file ? file : "the configuration", msg);
			else
				snprintf(why, whylen, "--ckpt-confirm: %s", msg);
			return -EINVAL;
		}
		ckpt_confirm_free(cc);
	}
	if (o->time_limit_s > 0 && o->ckpt_lead_s >= o->time_limit_s) {
		label(opts_run_find("ckpt-lead"), o, src, file, a, sizeof(a));
		label(opts_run_find("time-limit"), o, src, file, b, sizeof(b));
		snprintf(why, whylen, "%s leaves no time: it is not shorter than %s, so the "
		         "checkpoint would start at once; give a shorter lead or a longer limit", a, b);
		return -EINVAL;
	}
	return 0;
}

void
run_opts_init(struct run_opts *o)
{
	char why[320];

	memset(o, 0, sizeof(*o));
	for (const struct opts_run *opt = opts_run_table; opt->name; opt++) {
		if (opt->flags & OPTS_UNSET)
			store_int(opt, o, -1);
		else if (opt->def)
			/* each default parses: test_opts.c holds every row to it */
			(void)opts_run_set(opt, opt->def, o, NULL, why, sizeof(why));
	}
}
