/*
 * node.c - this node's training: launch, output, signals, heartbeats,
 * inspection, and its one result per attempt.
 */
#include "autoconf.h"

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cJSON.h>

#include "vigil.h"
#include "agent/hang.h"
#include "agent/node.h"
#include "check/inspect.h"
#include "check/vhealth.h"
#include "launch/child.h"
#include "launch/ckpt.h"
#include "launch/modes.h"
#include "launch/rundir.h"
#include "launch/stream.h"
#include "launch/wlog.h"
#include "lib/json.h"
#include "lib/log.h"
#include "lib/loop.h"
#include "lib/sig.h"
#include "perf/progress.h"
#include "prep/prep.h"
#include "proc/forensics.h"
#include "sys/hwmon.h"

extern char **environ;

#define TAIL_LINES 20            /* stderr lines kept for the report */
#define TAIL_LINE_MAX 512
#define TAIL_BYTES (TAIL_LINES * TAIL_LINE_MAX)  /* stderr kept for its last lines */
#define DRAIN_MS 2000            /* after the child exits, wait this long for EOF */
#define STOP_AFTER_CKPT_MS 5000  /* TERM to KILL once the checkpoint's grace is over */
#define FORENSICS_TAIL 8         /* stderr lines in a hang's forensics */
#define DUMP_MS 1000             /* SIGABRT (faulthandler's dump) to SIGTERM */
#define DUMP_MAX 64              /* Python processes asked for their dump */
#define DUMP_FRESH_MS 30000      /* a look this old no longer picks them */

/*
 * The node's lifecycle, in three parts that move independently: the
 * training of this attempt, its checkpoint, and the watch over the whole
 * job (heartbeats and the inspection).  Three parts, not one line of
 * phases: a training may be stopped while its checkpoint's verdict is
 * still due, and may outlive the job's end (FINAL) for as long as its
 * KILL takes.  A part changes phase only by a row of transitions[],
 * through step(), which logs each change by name (at debug level) and
 * refuses, saying so, an event its phase has no row for (a second
 * checkpoint, a stop while stopping): the caller then starts nothing the
 * change would have started.
 */
enum phase {
	/* the training, attempt by attempt */
	PH_IDLE,        /* not launched in this attempt (yet) */
	PH_RUNNING,
	PH_STOPPING,    /* told to stop: the signal went, KILL at the grace's end */
	PH_DRAINING,    /* it exited: its output is read to its end (DRAIN_MS at most) */
	PH_REPORTED,    /* this attempt's result went to the coordinator */
	/* its checkpoint, in this attempt */
	PH_UNASKED,
	PH_SAVING,      /* the checkpoint signal went: any line may be the evidence */
	PH_JUDGED,      /* the verdict is given (ckpt.h) */
	/* heartbeats and the inspection, for the whole job */
	PH_UNWATCHED,
	PH_WATCHING,
	PH_QUIET,       /* the job is over (FINAL) */
};

enum event {
	EV_LAUNCH,      /* the training started; the watch starts with the first */
	EV_STOP,        /* the coordinator said stop */
	EV_SIGNAL,      /* the agent got a signal that stops the training */
	EV_GRACE,       /* the checkpoint's grace is over */
	EV_EXIT,        /* the training exited (reaped) */
	EV_RESULT,      /* the attempt's result goes out */
	EV_RESTART,     /* the next attempt */
	EV_CHECKPOINT,  /* the checkpoint signal goes to the training */
	EV_FINAL,       /* the job is over */
};

static const char *const phase_names[] = {
	[PH_IDLE] = "idle", [PH_RUNNING] = "running", [PH_STOPPING] = "stopping",
	[PH_DRAINING] = "draining", [PH_REPORTED] = "reported",
	[PH_UNASKED] = "unasked", [PH_SAVING] = "saving", [PH_JUDGED] = "judged",
	[PH_UNWATCHED] = "unwatched", [PH_WATCHING] = "watching", [PH_QUIET] = "quiet",
};

static const char *const event_names[] = {
	[EV_LAUNCH] = "launch", [EV_STOP] = "stop", [EV_SIGNAL] = "signal",
	[EV_GRACE] = "grace", [EV_EXIT] = "exit", [EV_RESULT] = "result",
	[EV_RESTART] = "restart", [EV_CHECKPOINT] = "checkpoint", [EV_FINAL] = "final",
};

static const struct transition {
	enum event event;
	enum phase from, to;
} transitions[] = {
	/* the training */
	{ EV_LAUNCH, PH_IDLE, PH_RUNNING },
	{ EV_RESULT, PH_IDLE, PH_REPORTED },      /* nothing runs here, or it cannot start */
	{ EV_STOP, PH_RUNNING, PH_STOPPING },
	{ EV_SIGNAL, PH_RUNNING, PH_STOPPING },
	{ EV_GRACE, PH_RUNNING, PH_STOPPING },
	{ EV_EXIT, PH_RUNNING, PH_DRAINING },
	{ EV_EXIT, PH_STOPPING, PH_DRAINING },
	{ EV_RESULT, PH_DRAINING, PH_REPORTED },
	{ EV_RESTART, PH_RUNNING, PH_IDLE },
	{ EV_RESTART, PH_STOPPING, PH_IDLE },
	{ EV_RESTART, PH_DRAINING, PH_IDLE },
	{ EV_RESTART, PH_REPORTED, PH_IDLE },
	/* its checkpoint */
	{ EV_CHECKPOINT, PH_UNASKED, PH_SAVING },
	{ EV_GRACE, PH_SAVING, PH_JUDGED },
	{ EV_RESULT, PH_SAVING, PH_JUDGED },
	{ EV_RESTART, PH_SAVING, PH_UNASKED },
	{ EV_RESTART, PH_JUDGED, PH_UNASKED },
	/* the watch */
	{ EV_LAUNCH, PH_UNWATCHED, PH_WATCHING },
	{ EV_FINAL, PH_UNWATCHED, PH_QUIET },
	{ EV_FINAL, PH_WATCHING, PH_QUIET },
};

struct node {
	struct node_opts o;
	const struct run_opts *ro;
	char *name;
	char link_down[256];  /* the last inspection's failing NIC or IB port of its own; "" */
	struct loop *loop;
	struct node_ops ops;

	/* the plan: every rank's host and slots, and this attempt's members */
	char **hosts;
	int *slots;
	int nranks;
	int *members;
	int nmembers;
	char *master_addr;
	int master_port;
	char *job;
	int attempt;
	bool member;
	struct rundir rundir;     /* hostfiles (deepspeed, horovod); removed by node_free() */

	/* the lifecycle: the training, its checkpoint, the watch */
	enum phase phase, ckpt, watch;

	/* this attempt's training */
	struct mode_launch launch;
	struct mode_node *mnodes;
	struct child *child;
	int agent_signal;
	bool cancelled;  /* the batch system cancels the job: no checkpoint */
	bool fh_armed;   /* the training runs with Python's faulthandler on */
	pid_t dump[DUMP_MAX];  /* the last look's Python processes without a stack */
	int ndump;
	uint64_t dump_at;      /* when that look ended (loop ms) */
	char start_error[512];
	int start_code;
	struct loop_timer *kill_timer, *drain_timer, *ckpt_timer;

	/* the training's output, for the whole job (stream.h) */
	struct stream *out, *err;
	char tail[TAIL_BYTES];    /* the last bytes of stderr, a ring */
	unsigned long long tailed;/* bytes of stderr in this attempt */
	bool said_lost;
	struct wlog *wlog;        /* a hidden stdout's log (wlog.h), opened on first use */
	bool said_wlog;

	/* the checkpoint's evidence (--ckpt-confirm) and verdict */
	struct ckpt_confirm *confirm;
	bool confirmed;
	char confirm_why[200];

	const char **slot_vendors;    /* each slot's vendor, for the visible-device lists */
	bool said_warning;

	/* heartbeats and the inspection */
	struct loop_timer *beat_timer, *inspect_timer;
	struct inspect *insp;
	struct vhealth_monitor *vmon; /* the boards, as the vendors' libraries see them */
	struct forensics_run *look;   /* a hung training looked at, in a child */
	struct loop_timer *look_timer;
	char **reported;          /* findings already sent: "what device verdict" */
	size_t nreported;
	char **failing;           /* the inspection's failures, as keys, until they pass */
	size_t nfailing;

	struct hang_local *progress; /* the training's iterations and output (hang.h) */
};

/* ---- the lifecycle ---------------------------------------------------------------- */

/* What a phase entered asks of the streams: a checkpoint's evidence may be in any line. */
static void
entered(struct node *n, enum phase p)
{
	if (p != PH_UNASKED && p != PH_SAVING && p != PH_JUDGED)
		return;
	if (n->out)
		stream_scan_every_line(n->out, p == PH_SAVING);
	if (n->err)
		stream_scan_every_line(n->err, p == PH_SAVING);
}

/*
 * EV moves the part of the lifecycle at *AT (one of N's phases) by its
 * row of transitions[]; false, said at debug level, when there is none.
 */
static bool
step(struct node *n, enum phase *at, enum event ev)
{
	for (size_t i = 0; i < sizeof(transitions) / sizeof(transitions[0]); i++) {
		const struct transition *t = &transitions[i];

		if (t->event == ev && t->from == *at) {
			LOG_DEBUG("node: %s -> %s (%s)", phase_names[*at], phase_names[t->to],
			          event_names[ev]);
			*at = t->to;
			entered(n, t->to);
			return true;
		}
	}
	LOG_DEBUG("node: %s: no transition on %s, refused", phase_names[*at], event_names[ev]);
	return false;
}

/* The training runs: launched, and neither exited nor given up. */
static bool
alive(const struct node *n)
{
	return n->phase == PH_RUNNING || n->phase == PH_STOPPING;
}

/* ---- messages to the coordinator -------------------------------------------- */

static void
send_msg(struct node *n, struct msg *m)
{
	char *text = msg_encode(m);
	int rc;

	if (!text) {
		LOG_ERR("cannot encode a %s for the coordinator: %s", msg_kind_name(m->kind),
		        strerror(errno));
		return;
	}
	rc = n->ops.send(n->ops.arg, m->kind, text);
	if (rc < 0)
		LOG_ERR("cannot send a %s to the coordinator: %s", msg_kind_name(m->kind),
		        strerror(-rc));
	free(text);
}

/* Was the checkpoint saved?  Once per attempt: at the end of the grace, or at the exit. */
static void
judge_checkpoint(struct node *n, bool exited)
{
	if (!step(n, &n->ckpt, exited ? EV_RESULT : EV_GRACE))
		return;
	n->confirmed = ckpt_confirm_verdict(n->confirm, exited,
	                                    exited ? child_wait_status(n->child) : 0,
	                                    n->ro->ckpt_signal, n->confirm_why,
	                                    sizeof(n->confirm_why));
	if (!n->confirmed)
		LOG_WARN("checkpoint not confirmed: %s", n->confirm_why);
}
/*
 * The last lines of stderr (up to TAIL_LINES, each cut to TAIL_LINE_MAX
 * bytes) into LINES, from the ring of its last bytes; returns how many.
 * *HINT: mode_failure_hint() of the whole ring, or NULL.
 */
static int
tail_lines(const struct node *n, char lines[TAIL_LINES][TAIL_LINE_MAX + 1], const char **hint)
{
	static char flat[TAIL_BYTES];
	size_t len = n->tailed < TAIL_BYTES ? (size_t)n->tailed : TAIL_BYTES;
	size_t at = (size_t)(n->tailed % TAIL_BYTES), end, start;
	int count = 0, first;

	/* in order: the oldest byte is at AT once the ring is full */
	if (n->tailed > TAIL_BYTES) {
		memcpy(flat, n->tail + at, TAIL_BYTES - at);
		memcpy(flat + (TAIL_BYTES - at), n->tail, at);
	} else {
		memcpy(flat, n->tail, len);
	}
	/* what vigil knows of such a failure, from more than the lines sent */
	*hint = mode_failure_hint(n->ro->mode, flat, len);
	end = len > 0 && flat[len - 1] == '\n' ? len - 1 : len;
	while (count < TAIL_LINES && len > 0) {
		const char *nl = end > 0 ? memrchr(flat, '\n', end) : NULL;

		start = nl ? (size_t)(nl - flat) + 1 : 0;
		/* a line the ring holds only the end of is left out */
		if (!nl && n->tailed > TAIL_BYTES)
			break;
		snprintf(lines[count++], TAIL_LINE_MAX + 1, "%.*s",
		         (int)(end - start < TAIL_LINE_MAX ? end - start : TAIL_LINE_MAX),
		         flat + start);
		if (!nl)
			break;
		end = start - 1;
	}
	/* oldest first */
	for (first = 0; first < count / 2; first++) {
		char t[TAIL_LINE_MAX + 1];

		memcpy(t, lines[first], sizeof(t));
		memcpy(lines[first], lines[count - 1 - first], sizeof(t));
		memcpy(lines[count - 1 - first], t, sizeof(t));
	}
	return count;
}


/* Bytes of the training's output a reader did not take, so far. */
static unsigned long long
output_lost_total(const struct node *n)
{
	return (n->out ? stream_lost(n->out) : 0) + (n->err ? stream_lost(n->err) : 0);
}

static void inspect_now(struct node *n);

/* How this attempt's training ended (or that this node ran none), once. */
static void
send_result(struct node *n, bool idle)
{
	static char lines[TAIL_LINES][TAIL_LINE_MAX + 1];
	struct msg m = { .kind = MSG_RESULT };
	struct msg_result *r = &m.u.result;
	const char *tail[TAIL_LINES], *hint;
	bool exited = n->phase == PH_DRAINING;

	if (!step(n, &n->phase, EV_RESULT))
		return;
	r->node = n->name;
	r->attempt = n->attempt;
	r->idle = idle;
	r->seconds = (double)loop_now(n->loop) / 1000.0 - n->o.start;
	r->agent_signal = n->agent_signal;
	r->cancelled = n->cancelled;
	if (n->start_error[0]) {
		r->exit_code = n->start_code;
		r->error = n->start_error;
		r->idle = false;
	} else if (!idle) {
		int st = child_wait_status(n->child);

		r->exit_code = child_exit_code(st);
		if (WIFSIGNALED(st))
			r->signal = WTERMSIG(st);
	}
	/*
	 * A training that failed on its own may have failed for a fault the
	 * next inspection would find (a NIC down breaks its collectives
	 * within a second): look now, so that the finding reaches the
	 * coordinator before the result (one sender's messages keep their
	 * order) and no restart is planned on this node.
	 */
	if ((r->exit_code || r->signal) && !n->agent_signal && !r->error)
		inspect_now(n);
	if (n->ckpt != PH_UNASKED) {
		if (n->ckpt == PH_SAVING)
			judge_checkpoint(n, exited);
		r->ckpt = true;
		r->ckpt_confirmed = n->confirmed;
		r->ckpt_why = n->confirm_why;
	}
	r->ntail = tail_lines(n, lines, &hint);
	if (r->exit_code != 0)
		r->hint = hint;
	for (int i = 0; i < r->ntail; i++)
		tail[i] = lines[i];
	r->tail = tail;
	/* so far: what the report can say of a reader that went away */
	r->output_lost = (double)output_lost_total(n);
	send_msg(n, &m);
}

/* ---- the training's output ------------------------------------------------------- */

/* Every byte of stderr passes here: its last TAIL_BYTES kept, for the report. */
static void
tail_bytes(void *arg, const char *buf, size_t len)
{
	struct node *n = arg;
	size_t at, first;

	hang_local_output(n->progress, (double)loop_now(n->loop) / 1000.0);
	if (len > TAIL_BYTES) {
		buf += len - TAIL_BYTES;
		n->tailed += len - TAIL_BYTES;
		len = TAIL_BYTES;
	}
	at = (size_t)(n->tailed % TAIL_BYTES);
	first = len < TAIL_BYTES - at ? len : TAIL_BYTES - at;
	memcpy(n->tail + at, buf, first);
	memcpy(n->tail, buf + first, len - first);
	n->tailed += len;
}

/*
 * A line of the training's output, scanned: while a checkpoint's verdict
 * is due every line comes here (it may be the evidence), otherwise only
 * those that hold a timing line's mark (stream_scan_every_line()).
 */
static void
out_line(void *arg, const char *line, size_t len)
{
	struct node *n = arg;

	if (n->ckpt == PH_SAVING)
		(void)ckpt_confirm_line(n->confirm, line, len);
	/* Only the lines that end like a timing line go on: the test is
	 * inline, and the lines handed out while a checkpoint is confirmed
	 * (all of them) mostly stop here. */
	if (progress_tail(line, len)) {
		struct progress_line pl;

		if (progress_parse(line, len, &pl))
			hang_local_line(n->progress, pl.key, pl.e2e_ms,
			                (double)loop_now(n->loop) / 1000.0);
		if (n->ops.line)
			n->ops.line(n->ops.arg, line, len);
	}
}

/* Every byte of stdout: the training is not silent (hang.h). */
static void
out_bytes(void *arg, const char *buf, size_t len)
{
	struct node *n = arg;

	(void)buf;
	(void)len;
	hang_local_output(n->progress, (double)loop_now(n->loop) / 1000.0);
}

static void maybe_done(struct node *n);

/* One of the training's streams reached its end. */
static void
stream_ended(void *arg)
{
	maybe_done(arg);
}

/* Where hidden output is kept: --node-logs, else --run-dir's logs/, else
 * vigil-logs.JOB in the working directory. */
static void
logs_dir(const struct node *n, char *buf, size_t len)
{
	char cwd[3800];

	if (n->ro->node_logs) {
		snprintf(buf, len, "%s", n->ro->node_logs);
		return;
	}
	if (n->ro->run_dir) {
		snprintf(buf, len, "%s/logs", n->ro->run_dir);
		return;
	}
	/* not in the private run directory, which goes at the end: beside
	 * the job, as Slurm's own output files are */
	if (!getcwd(cwd, sizeof(cwd)))
		snprintf(cwd, sizeof(cwd), "%s", "/tmp");
	snprintf(buf, len, "%s/vigil-logs.%s", cwd, n->job ? n->job : "job");
}

/*
 * A hidden node's stdout (--output coordinator, not the lowest member)
 * goes to its log (wlog.h) instead of being dropped.  A log that cannot
 * be written is said once and dropped.
 */
static void
keep_hidden(void *arg, const char *buf, size_t len)
{
	struct node *n = arg;
	char dir[4200], err[600];

	if (!n->wlog && !n->said_wlog) {
		logs_dir(n, dir, sizeof(dir));
		n->wlog = wlog_open(dir, n->name, (long long)n->ro->node_log_mb << 20, err,
		                    sizeof(err));
		if (!n->wlog)
			LOG_ERR("this node's output is hidden (--output coordinator) and cannot be "
			        "kept: %s", err);
		n->said_wlog = !n->wlog;
	}
	if (n->wlog && wlog_write(n->wlog, buf, len) < 0 && !n->said_wlog) {
		LOG_ERR("cannot write this node's output to %s: %s", wlog_path(n->wlog),
		        strerror(errno));
		n->said_wlog = true;
	}
}

/* Once per job: a restarted training writes to the same place. */
static int
open_streams(struct node *n)
{
	char prefix[300];
	struct stream_opts so = {
		.dest_fd = STDOUT_FILENO, .name = "stdout",
		.mark = PROGRESS_MARK, .marklen = PROGRESS_MARK_LEN,
	};
	struct stream_ops ops = { .tap = out_bytes, .line = out_line, .ended = stream_ended,
	                          .arg = n };

	if (n->ro->tag_output) {
		snprintf(prefix, sizeof(prefix), "[%s:%d] ", n->name, n->o.rank);
		so.prefix = prefix;
	}
	if (!n->out && !(n->out = stream_new(n->loop, &so, &ops)))
		return -errno;
	so.dest_fd = STDERR_FILENO;
	so.name = "stderr";
	ops.tap = tail_bytes;  /* the last lines, for the report */
	if (!n->err && !(n->err = stream_new(n->loop, &so, &ops)))
		return -errno;
	return 0;
}

/* ---- the end of this attempt's training ------------------------------------------ */

/* The training is over on this node when it was reaped and its output ended. */
static void
maybe_done(struct node *n)
{
	if (n->phase != PH_DRAINING || stream_is_open(n->out) || stream_is_open(n->err))
		return;
	loop_del_timer(n->loop, n->drain_timer);
	loop_del_timer(n->loop, n->kill_timer);
	loop_del_timer(n->loop, n->ckpt_timer);
	n->drain_timer = n->kill_timer = n->ckpt_timer = NULL;
	/* Nothing of the training may outlive it: helpers it left in its
	 * group go too. */
	(void)child_signal(n->child, SIGKILL);  /* -ESRCH when none is left */
	send_result(n, false);
}

static long
on_drain_timeout(struct loop *l, void *arg)
{
	struct node *n = arg;

	(void)l;
	/* Exited, but something it started still holds the output open. */
	n->drain_timer = NULL;
	(void)child_signal(n->child, SIGKILL);
	stream_close(n->out);
	stream_close(n->err);
	maybe_done(n);
	return LOOP_NOMORE;
}

static void
on_child_exit(struct node *n)
{
	if (!step(n, &n->phase, EV_EXIT))
		return;
	loop_del_timer(n->loop, n->kill_timer);
	n->kill_timer = NULL;
	if (stream_is_open(n->out) || stream_is_open(n->err))
		n->drain_timer = loop_add_timer(n->loop, DRAIN_MS, on_drain_timeout, n);
	maybe_done(n);
}

static long
on_kill_timeout(struct loop *l, void *arg)
{
	struct node *n = arg;

	(void)l;
	n->kill_timer = NULL;
	if (alive(n)) {
		LOG_WARN("the training did not end when told to: killing it");
		(void)child_signal(n->child, SIGKILL);
	}
	return LOOP_NOMORE;
}

/*
 * Stop this node's training (EV says why): SIG to its group now, KILL
 * after KILL_MS; SIG again to a training already stopping.
 */
static void
stop_after(struct node *n, enum event ev, int sig, long kill_ms)
{
	if (!n->child) {
		send_result(n, !n->start_error[0]);
		return;
	}
	if (!alive(n))
		return;
	(void)child_signal(n->child, sig);
	if (step(n, &n->phase, ev))
		n->kill_timer = loop_add_timer(n->loop, kill_ms, on_kill_timeout, n);
}

/* ... KILL after the grace period. */
static void
stop(struct node *n, enum event ev, int sig)
{
	stop_after(n, ev, sig, (long)(n->ro->grace_s * 1000));
}

static long
on_dumped(struct loop *l, void *arg)
{
	struct node *n = arg;

	(void)l;
	n->kill_timer = NULL;
	if (alive(n)) {
		(void)child_signal(n->child, SIGTERM);
		n->kill_timer = loop_add_timer(n->loop, (long)(n->ro->grace_s * 1000),
		                               on_kill_timeout, n);
	}
	return LOOP_NOMORE;
}

/*
 * Stop a hung training whose Python stacks gdb could not read: each such
 * process (the last look's) gets SIGABRT, on which faulthandler writes
 * every thread's stack to its stderr (the training's output, the
 * report's stderr tail), with no core file (RLIMIT_CORE 0 first: a
 * training's core is large and not asked for); a stopped one SIGCONT to
 * take it.  Then, DUMP_MS later, the stop as ever: SIGTERM, KILL after
 * the grace period.
 */
static void
stop_dumping(struct node *n)
{
	struct rlimit none = { 0, 0 };
	pid_t *pids = NULL;
	size_t np = 0;
	int asked = 0;

	/* still the training's: a pid gone since may be someone else's now */
	(void)child_descendants(n->child, &pids, &np);
	for (int i = 0; i < n->ndump; i++) {
		size_t k;

		for (k = 0; k < np && pids[k] != n->dump[i]; k++)
			;
		if (k == np)
			continue;
		(void)prlimit(n->dump[i], RLIMIT_CORE, &none, NULL);
		/* to the main thread: it takes the signal before it runs on
		 * after SIGCONT, so its stack is where it stopped */
		if (syscall(SYS_tgkill, n->dump[i], n->dump[i], SIGABRT) < 0)
			(void)kill(n->dump[i], SIGABRT);
		(void)kill(n->dump[i], SIGCONT);
		asked++;
	}
	free(pids);
	n->ndump = 0;
	if (asked)
		LOG_INFO("asked %d Python process%s of the training for their stacks "
		         "(faulthandler) before it stops", asked, asked == 1 ? "" : "es");
	if (step(n, &n->phase, EV_STOP))
		n->kill_timer = loop_add_timer(n->loop, DUMP_MS, on_dumped, n);
}

/* The checkpoint's grace is over: the training saved or not, it stops now. */
static long
on_ckpt_grace(struct loop *l, void *arg)
{
	struct node *n = arg;

	(void)l;
	n->ckpt_timer = NULL;
	if (alive(n)) {
		judge_checkpoint(n, false);
		LOG_WARN("the training did not exit within %.0f s of the checkpoint signal: "
		         "stopping it", n->ro->grace_s);
		stop_after(n, EV_GRACE, SIGTERM, STOP_AFTER_CKPT_MS);
	}
	return LOOP_NOMORE;
}

/* The checkpoint signal to the training's group, once per attempt. */
static void
checkpoint(struct node *n)
{
	if (!alive(n) || !step(n, &n->ckpt, EV_CHECKPOINT))
		return;
	LOG_INFO("checkpoint: %s to the training", sig_name(n->ro->ckpt_signal));
	ckpt_confirm_start(n->confirm);
	(void)child_signal(n->child, n->ro->ckpt_signal);
	n->ckpt_timer = loop_add_timer(n->loop, (long)(n->ro->grace_s * 1000), on_ckpt_grace, n);
}

/* ---- heartbeats and the inspection ------------------------------------------------ */

static long
on_heartbeat(struct loop *l, void *arg)
{
	struct node *n = arg;
	struct msg m = { .kind = MSG_HEARTBEAT };

	(void)l;
	if (n->watch == PH_QUIET) {
		n->beat_timer = NULL;
		return LOOP_NOMORE;
	}
	node_progress(n, &m.u.heartbeat);
	send_msg(n, &m);
	return (long)(n->ro->heartbeat_s * 1000);
}

/* True when KEY was sent before (and remembers it). */
static bool
already_reported(struct node *n, const char *key)
{
	char **r;

	for (size_t i = 0; i < n->nreported; i++)
		if (strcmp(n->reported[i], key) == 0)
			return true;
	r = realloc(n->reported, (n->nreported + 1) * sizeof(*r));
	if (!r)
		return false;
	n->reported = r;
	n->reported[n->nreported] = strdup(key);
	if (n->reported[n->nreported])
		n->nreported++;
	return false;
}

/* The key a finding is remembered by: "what device verdict". */
static void
finding_key(const struct finding *f, char *key, size_t len)
{
	snprintf(key, len, "%s %s %s", f->what, f->device, verdict_name(f->verdict));
}

/*
 * The failures the inspection reported before and finds no more (F, NF:
 * what it finds now): the coordinator hears that they pass again (a
 * finding with the verdict pass), which may bring this node back into
 * the job, and each may be reported again should it come back.  Only the
 * sysfs inspection's own failures: the boards' come and go elsewhere.
 */
static void
report_healed(struct node *n, const struct finding *f, size_t nf)
{
	for (size_t i = 0; i < n->nfailing;) {
		struct finding h = { .verdict = VERDICT_PASS };
		struct msg m = { .kind = MSG_NOTE };
		char key[160], *sp, *end;
		bool still = false;

		for (size_t k = 0; !still && k < nf; k++) {
			finding_key(&f[k], key, sizeof(key));
			still = strcmp(key, n->failing[i]) == 0;
		}
		if (still) {
			i++;
			continue;
		}
		/* "what device fail": the device is between the first and the last space */
		sp = strchr(n->failing[i], ' ');
		end = strrchr(n->failing[i], ' ');
		if (sp && end > sp) {
			snprintf(h.what, sizeof(h.what), "%.*s", (int)(sp - n->failing[i]), n->failing[i]);
			snprintf(h.device, sizeof(h.device), "%.*s", (int)(end - sp - 1), sp + 1);
			snprintf(h.evidence, sizeof(h.evidence), "%s passes again", h.device);
			m.u.note.node = n->name;
			m.u.note.findings = &h;
			m.u.note.nfindings = 1;
			send_msg(n, &m);
		}
		for (size_t k = 0; k < n->nreported; k++)
			if (strcmp(n->reported[k], n->failing[i]) == 0) {
				free(n->reported[k]);
				n->reported[k] = n->reported[--n->nreported];
				break;
			}
		free(n->failing[i]);
		n->failing[i] = n->failing[--n->nfailing];
	}
}

/* Remember F's failures (of NF findings), for report_healed(). */
static void
keep_failing(struct node *n, const struct finding *f, size_t nf)
{
	for (size_t i = 0; i < nf; i++) {
		char key[160], **grown;
		bool known = false;

		if (f[i].verdict != VERDICT_FAIL)
			continue;
		finding_key(&f[i], key, sizeof(key));
		for (size_t k = 0; !known && k < n->nfailing; k++)
			known = strcmp(n->failing[k], key) == 0;
		if (known)
			continue;
		grown = realloc(n->failing, (n->nfailing + 1) * sizeof(*grown));
		if (!grown)
			return;
		n->failing = grown;
		if ((n->failing[n->nfailing] = strdup(key)))
			n->nfailing++;
	}
}

/* Tell the coordinator, which decides, what is wrong now that was not before. */
static void
report_findings(struct node *n, const struct finding *f, size_t nf)
{
	struct msg m = { .kind = MSG_NOTE };
	struct finding *mf = calloc(nf > 0 ? nf : 1, sizeof(*mf));
	int k = 0;

	for (size_t i = 0; mf && i < nf; i++) {
		char key[160];

		finding_key(&f[i], key, sizeof(key));
		if (already_reported(n, key))
			continue;
		mf[k++] = f[i];
	}
	if (k > 0) {
		m.u.note.node = n->name;
		m.u.note.findings = mf;
		m.u.note.nfindings = k;
		send_msg(n, &m);
	}
	free(mf);
}

/* The first failing NIC or InfiniBand port among F, or none: what tells a
 * node it is cut off itself (node_link_down()). */
static void
note_link(struct node *n, const struct finding *f, size_t nf)
{
	n->link_down[0] = '\0';
	for (size_t i = 0; i < nf; i++) {
		if (f[i].verdict == VERDICT_FAIL &&
		    (strcmp(f[i].what, "nic") == 0 || strcmp(f[i].what, "ib") == 0)) {
			snprintf(n->link_down, sizeof(n->link_down), "%s", f[i].evidence);
			return;
		}
	}
}

const char *
node_link_down(const struct node *n)
{
	return n->link_down[0] ? n->link_down : NULL;
}

/* What the vendors' libraries say now (vhealth.h), as inspection findings;
 * XID events no longer watched are also said here, in the node's log. */
static void
take_board_findings(struct node *n)
{
	struct finding *vf = NULL;
	const char *why;
	size_t vn = 0;

	if (n->vmon && vhealth_monitor_take(n->vmon, &vf, &vn) == 0)
		report_findings(n, vf, vn);
	free(vf);
	why = n->vmon ? vhealth_monitor_events_news(n->vmon) : NULL;
	if (why)
		LOG_WARN("XID events of the boards are not watched: %s; each inspection reads "
		         "the boards instead", why);
}

/* The board monitor sent something (facts, or an event such as an XID): at once. */
static void
on_boards(struct loop *l, int fd, short revents, void *arg)
{
	struct node *n = arg;

	(void)l;
	(void)fd;
	(void)revents;
	if (n->watch != PH_QUIET)
		take_board_findings(n);
}

/* What the training and the boards use now, to the coordinator (usage.h):
 * for the metrics file and the report. */
static void
send_usage(struct node *n)
{
	struct msg m = { .kind = MSG_NOTE };
	const struct vhealth_facts *vf = n->vmon ? vhealth_monitor_facts(n->vmon) : NULL;
	struct child_usage cu;
	cJSON *u = cJSON_CreateObject();
	bool ok = u != NULL;

	if (ok && n->child && child_usage(n->child, &cu) == 0 && cu.nprocs > 0)
		ok = cJSON_AddNumberToObject(u, "cpu_seconds", cu.cpu_s) &&
		     cJSON_AddNumberToObject(u, "memory_bytes", cu.rss_bytes) &&
		     cJSON_AddNumberToObject(u, "processes", (double)cu.nprocs);
	if (ok && vf) {
		cJSON *b = vhealth_usage_to_json(vf, n->o.slots, n->o.nslots);

		ok = b && cJSON_AddItemToObject(u, "boards", b);
		if (!ok)
			cJSON_Delete(b);
	}
	if (ok && cJSON_GetArraySize(u) > 0) {
		m.u.note.node = n->name;
		m.u.note.usage = u;
		send_msg(n, &m);
	}
	cJSON_Delete(u);
}

/* sysfs, then the boards: what is wrong now that was not before goes to the coordinator. */
static void
inspect_now(struct node *n)
{
	struct finding *f = NULL;
	size_t nf = 0;
	int rc;

	if (!n->insp)
		return;
	rc = inspect_run(n->insp, &f, &nf);
	if (rc < 0) {
		LOG_WARN("inspection failed: %s", strerror(-rc));
	} else {
		note_link(n, f, nf);
		report_healed(n, f, nf);
		report_findings(n, f, nf);
		keep_failing(n, f, nf);
	}
	free(f);
	take_board_findings(n);
}

/* Every --inspect-interval: sysfs, then the boards, then what is used. */
static long
on_inspect(struct loop *l, void *arg)
{
	struct node *n = arg;

	(void)l;
	if (n->watch == PH_QUIET) {
		n->inspect_timer = NULL;
		return LOOP_NOMORE;
	}
	inspect_now(n);
	send_usage(n);
	return (long)(n->ro->inspect_s * 1000);
}

/* The vendors' libraries, watched by a child of their own (vhealth_monitor_start()). */
static void
start_board_monitor(struct node *n)
{
	struct hwmon *hw = NULL;
	bool live = hwmon_open(n->o.cfg->sysfs_root, &hw) == 0 && hwmon_is_live(hw);
	int rc;

	hwmon_free(hw);
	rc = vhealth_monitor_start(&n->o.cfg->boards, n->o.cfg->check_timeout_s, n->o.slots,
	                           n->o.nslots, live, n->ro->inspect_s, &n->vmon);
	if (rc == -ENOENT)
		return;  /* no board of a vendor with a library to ask */
	if (rc < 0) {
		LOG_WARN("the boards are not watched: %s", strerror(-rc));
		return;
	}
	if (loop_add_fd(n->loop, vhealth_monitor_fd(n->vmon), POLLIN, on_boards, n) < 0)
		LOG_WARN("board events wait for the inspection interval");
}

/* Heartbeats and inspection, once per job, with the first launch. */
static int
start_watching(struct node *n)
{
	int rc;

	if (n->watch != PH_UNWATCHED)
		return 0;
	(void)step(n, &n->watch, EV_LAUNCH);
	if (n->o.heartbeat) {
		/* The first beat between half an interval and one, spread by
		 * rank (Knuth's multiplicative hash scatters consecutive ranks
		 * over [0, 1)): ten thousand nodes started together do not beat
		 * together. */
		double spread = (double)(((uint32_t)n->o.rank * 2654435761u) % 1000u) / 1000.0;

		n->beat_timer = loop_add_timer(n->loop,
		                               (long)(n->ro->heartbeat_s * 1000 * (0.5 + spread / 2)),
		                               on_heartbeat, n);
		if (!n->beat_timer)
			return -ENOMEM;
	}
	if (n->ro->inspect_s > 0) {
		rc = inspect_new(n->o.cfg, n->o.slots, n->o.nslots, n->ro->ckpt_dir, 0, &n->insp);
		if (rc == -ENOMEM)
			return rc;
		if (rc < 0) {
			LOG_WARN("no inspection on this node: %s", strerror(-rc));
			return 0;
		}
		n->inspect_timer = loop_add_timer(n->loop, (long)(n->ro->inspect_s * 1000),
		                                  on_inspect, n);
		if (!n->inspect_timer)
			return -ENOMEM;
		start_board_monitor(n);
	}
	return 0;
}

/* ---- the plan and the launch ------------------------------------------------------ */

static void
free_plan(struct node *n)
{
	for (int i = 0; n->hosts && i < n->nranks; i++)
		free(n->hosts[i]);
	free(n->hosts);
	free(n->slots);
	free(n->members);
	free(n->master_addr);
	free(n->job);
	n->hosts = NULL;
	n->slots = n->members = NULL;
	n->master_addr = n->job = NULL;
	n->nranks = n->nmembers = 0;
}

/* This attempt's members (copied) and master. */
static int
set_attempt(struct node *n, const int *members, int nmembers, const char *addr, int port)
{
	int *m = calloc(nmembers > 0 ? (size_t)nmembers : 1, sizeof(*m));
	char *a = strdup(addr ? addr : "127.0.0.1");

	if (!m || !a) {
		free(m);
		free(a);
		return -ENOMEM;
	}
	memcpy(m, members, (size_t)nmembers * sizeof(*m));
	free(n->members);
	free(n->master_addr);
	n->members = m;
	n->nmembers = nmembers;
	n->master_addr = a;
	n->master_port = port;
	return 0;
}

int
node_take_plan(struct node *n, const struct msg_plan *p)
{
	free_plan(n);
	n->hosts = calloc(p->nnodes > 0 ? (size_t)p->nnodes : 1, sizeof(*n->hosts));
	n->slots = calloc(p->nnodes > 0 ? (size_t)p->nnodes : 1, sizeof(*n->slots));
	n->job = strdup(p->job ? p->job : "0");
	if (!n->hosts || !n->slots || !n->job)
		return -ENOMEM;
	n->nranks = p->nnodes;
	for (int i = 0; i < p->nnodes; i++) {
		n->hosts[i] = strdup(p->nodes[i].host);
		if (!n->hosts[i])
			return -ENOMEM;
		n->slots[i] = p->nodes[i].slots;
	}
	return set_attempt(n, p->members, p->nmembers, p->master_addr, p->master_port);
}

/* Whether this job's hostfiles go into the run directory. */
static bool
uses_run_dir(const struct run_opts *ro)
{
	return (ro->mode == MODE_DEEPSPEED && !ro->hostfile) ||
	       (ro->mode == MODE_HOROVOD && (!ro->hostfile || !ro->mpich_hostfile));
}

/*
 * The run directory, once per job where the mode writes hostfiles:
 * --run-dir when it is safe, else a new private directory (rundir.h),
 * never a name another user could guess and make first.  0, or a negative
 * errno with why in ERR (rundir_usage_error(): the user's --run-dir).
 */
static int
prepare_run_dir(struct node *n, char *err, size_t errlen)
{
	char warn[512];
	int rc;

	if (n->rundir.path[0] || !uses_run_dir(n->ro))
		return 0;
	rc = rundir_prepare(&n->rundir, n->ro->run_dir, getenv("TMPDIR"), err, errlen, warn,
	                    sizeof(warn));
	if (warn[0] && n->o.rank == 0)
		LOG_WARN("%s", warn);
	return rc;
}

/*
 * Build this node's launch for the current attempt: the training runs on
 * the members, in member order; a node that is not a member runs nothing.
 */
static int
build_launch(struct node *n, char *err, size_t errlen)
{
	char hostfile[4096], mpich[4096];
	const char *dir = n->rundir.path;
	struct mode_plan mp = { 0 };
	int me = -1, rc;

	mode_launch_free(&n->launch);
	free(n->mnodes);
	n->mnodes = calloc(n->nmembers > 0 ? (size_t)n->nmembers : 1, sizeof(*n->mnodes));
	if (!n->mnodes)
		return -ENOMEM;
	for (int i = 0; i < n->nmembers; i++) {
		int r = n->members[i];

		if (r == n->o.rank)
			me = i;
		n->mnodes[i].host = r < n->nranks ? n->hosts[r] : "?";
		/* a CPU node: SLOTS is 1 */
		n->mnodes[i].slots = r < n->nranks && n->slots[r] > 0 ? n->slots[r] : 1;
	}
	n->member = me >= 0;
	/* without a run directory (a mode without hostfiles) no path is made up */
	snprintf(hostfile, sizeof(hostfile), "%s", n->ro->hostfile ? n->ro->hostfile : "");
	if (!n->ro->hostfile && dir[0])
		snprintf(hostfile, sizeof(hostfile), "%.3900s/hostfile", dir);
	snprintf(mpich, sizeof(mpich), "%s", n->ro->mpich_hostfile ? n->ro->mpich_hostfile : "");
	if (!n->ro->mpich_hostfile && dir[0])
		snprintf(mpich, sizeof(mpich), "%.3900s/mpich_hostfile", dir);
	mp.mode = n->ro->mode;
	mp.nodes = n->mnodes;
	mp.nnodes = n->nmembers;
	mp.node_rank = me >= 0 ? me : 0;
	mp.master_addr = n->master_addr;
	mp.master_port = n->master_port;
	mp.ps = n->ro->ps;
	mp.tf_port = n->ro->tf_port;
	mp.vendor = n->o.vendor;
	mp.nslots = (int)n->o.nslots;
	mp.hostfile = hostfile;
	mp.mpich_hostfile = mpich;
	mp.argv = n->ro->cmd;
	mp.envp = environ;
	mp.slot_vendors = n->slot_vendors;
	mp.torch_launcher = n->ro->torch_launcher;
	mp.workdir = n->ro->workdir;
	mp.grace_s = n->ro->grace_s;
	rc = mode_build(&mp, &n->launch, err, errlen);
	if (rc == 0 && n->launch.warning && n->o.rank == 0 && !n->said_warning) {
		LOG_WARN("%s", n->launch.warning);
		n->said_warning = true;
	}
	return rc;
}

/*
 * --output coordinator shows one node's stdout: the lowest rank that
 * trains in this attempt (rank 0's, unless --min-nodes left it out).
 */
static bool
shows_stdout(const struct node *n)
{
	return n->ro->output_all || n->nmembers == 0 || n->members[0] == n->o.rank;
}

/* This attempt's training goes, whatever is left of it; its streams close. */
static void
discard_training(struct node *n)
{
	if (!n->child)
		return;
	if (n->out)
		stream_close(n->out);
	if (n->err)
		stream_close(n->err);
	(void)child_kill_tree(n->child);
	child_free(n->child);
	n->child = NULL;
}

static int
start_training(struct node *n)
{
	const char *pty = getenv("VIGIL_PTY");
	/*
	 * Under mpirun our stdout is usually a terminal, so the training gets
	 * one too and line-buffers its prints as it would at a shell: each
	 * line one write, whole, however many processes share the output.  A
	 * pipe is cheaper per write (doc/benchmarks.md), but Python on a pipe
	 * buffers blocks, and unbuffered (PYTHONUNBUFFERED) writes a print's
	 * text and its newline apart, so that the lines of workers sharing
	 * stdout run into each other.
	 */
	struct child_opts co = {
		.argv = n->launch.argv, .envp = n->launch.envp, .sigmask = n->o.sigmask,
		.pty_stdout = pty ? strcmp(pty, "0") != 0 : isatty(STDOUT_FILENO),
		.cgroup = n->o.cgroup, .cwd = n->ro->workdir,
		.notice_signal = n->ro->ckpt_signal,
	};
	int rc;

	hang_local_attempt(n->progress, (double)loop_now(n->loop) / 1000.0);
	rc = child_spawn(&co, &n->child);
	if (rc < 0) {
		n->start_code = rc == -ENOENT ? 127 : 126;
		snprintf(n->start_error, sizeof(n->start_error), "cannot run '%s': %s",
		         n->launch.argv[0], rc == -ENOENT ? "command not found" : strerror(-rc));
		send_result(n, false);
		return 0;
	}
	rc = open_streams(n);
	if (rc < 0) {
		LOG_ERR("cannot pass the training's output through: %s", strerror(-rc));
		goto fail;
	}
	stream_divert(n->out, shows_stdout(n) ? NULL : keep_hidden, n);
	if (stream_open(n->out, n->child, child_stdout_fd(n->child)) < 0 ||
	    stream_open(n->err, n->child, child_stderr_fd(n->child)) < 0) {
		rc = -ENOMEM;
		goto fail;
	}
	(void)step(n, &n->phase, EV_LAUNCH);
	return 0;
fail:
	/* a training whose output goes nowhere does not run unseen */
	discard_training(n);
	return rc;
}

/*
 * Python's faulthandler, armed in the training's environment when a hang
 * ends the training (hang_arms_faulthandler()): a Python process whose
 * stacks gdb could not read (no gdb, no python3-dbg) writes every
 * thread's stack to its stderr on SIGABRT, as it is ended anyway.  A
 * value the user set is kept.
 */
static void
arm_faulthandler(struct node *n)
{
	const char *v;

	if (hang_arms_faulthandler(n->ro))
		(void)setenv("PYTHONFAULTHANDLER", "1", 0);
	v = getenv("PYTHONFAULTHANDLER");
	n->fh_armed = hang_arms_faulthandler(n->ro) && v && *v;
}

int
node_launch(struct node *n)
{
	char err[512] = "", count[16];
	int rc;

	rc = start_watching(n);
	if (rc < 0)
		return rc;
	/* which attempt this is, for the training (故障重启) */
	snprintf(count, sizeof(count), "%d", n->attempt);
	setenv("VIGIL_RESTART_COUNT", count, 1);
	arm_faulthandler(n);
	rc = prepare_run_dir(n, err, sizeof(err));
	if (rc < 0) {
		n->start_code = rundir_usage_error(rc) ? VIGIL_EXIT_USAGE : VIGIL_EXIT_INTERNAL;
		snprintf(n->start_error, sizeof(n->start_error), "%s", err);
		send_result(n, false);
		return 0;
	}
	rc = build_launch(n, err, sizeof(err));
	if (rc == -ENOMEM)
		return rc;
	if (rc < 0) {
		n->start_code = VIGIL_EXIT_USAGE;
		snprintf(n->start_error, sizeof(n->start_error), "%s", err);
		send_result(n, false);
	} else if (n->agent_signal) {
		send_result(n, true);  /* told to stop before it could start */
	} else if (!n->member) {
		send_result(n, true);  /* not in this attempt: keep watching */
	} else if ((rc = mode_write_files_in(&n->launch, rundir_fd(&n->rundir), n->rundir.path,
	                                     err, sizeof(err))) < 0) {
		n->start_code = VIGIL_EXIT_INTERNAL;
		snprintf(n->start_error, sizeof(n->start_error), "%s", err);
		send_result(n, false);
	} else if (!n->launch.run) {
		send_result(n, true);  /* no training here (horovod); keep watching */
	} else {
		return start_training(n);
	}
	return 0;
}

/* A node the plan left out (the pre-check, --min-nodes) or a spare runs nothing. */
static void
describe_left_out(const struct node *n, FILE *f)
{
	if (n->ro->spares > 0 && n->o.rank >= n->nranks - n->ro->spares) {
		fprintf(f, "spare: runs no training; takes the place of a node that fails "
		        "(--spares %d)\n", n->ro->spares);
		return;
	}
	fprintf(f, "left out: not ready at the pre-check; %d of %d nodes train without it "
	        "(--min-nodes %d): no training runs here\n", n->nmembers, n->nranks,
	        n->ro->min_nodes);
}

static void
describe_member(struct node *n, FILE *f)
{
	char dir[4200];

	mode_describe(f, &n->launch, environ);
	if (n->ro->workdir)
		fprintf(f, "cwd: %s\n", n->ro->workdir);
	prep_describe(f, n->ro, n->o.cfg, n->o.rank == 0);
	if (shows_stdout(n)) {
		fprintf(f, "stdout: shown\n");
		return;
	}
	logs_dir(n, dir, sizeof(dir));
	fprintf(f, "stdout: kept in %s/%s.out (--output coordinator), rotated past %d MiB\n", dir,
	        n->name, n->ro->node_log_mb);
}

char *
node_describe(struct node *n)
{
	char err[512] = "", *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	int rc;

	if (!f)
		return NULL;
	rc = prepare_run_dir(n, err, sizeof(err));
	if (rc == 0)
		rc = build_launch(n, err, sizeof(err));
	fprintf(f, "== %s (rank %d, %s mode)\n", n->name, n->o.rank, mode_name(n->ro->mode));
	if (rc < 0)
		fprintf(f, "error: %s\n", rc == -ENOMEM ? strerror(ENOMEM) : err);
	else if (!n->member)
		describe_left_out(n, f);
	else
		describe_member(n, f);
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	if (rc < 0 && rc != -ENOMEM)
		n->start_code = VIGIL_EXIT_USAGE;
	return text;
}

/* A fresh child for the next attempt, same place, new members. */
static void
restart(struct node *n, const struct msg_command *c)
{
	loop_del_timer(n->loop, n->kill_timer);
	loop_del_timer(n->loop, n->drain_timer);
	loop_del_timer(n->loop, n->ckpt_timer);
	n->kill_timer = n->drain_timer = n->ckpt_timer = NULL;
	discard_training(n);
	if (n->phase != PH_IDLE)
		(void)step(n, &n->phase, EV_RESTART);
	if (n->ckpt != PH_UNASKED)
		(void)step(n, &n->ckpt, EV_RESTART);
	n->confirmed = false;
	n->confirm_why[0] = '\0';
	n->agent_signal = 0;
	n->start_error[0] = '\0';
	n->tailed = 0;
	n->ndump = 0;
	n->attempt = c->attempt;
	if (set_attempt(n, c->members, c->nmembers, c->master_addr, c->master_port) < 0 ||
	    node_launch(n) < 0) {
		LOG_ERR("cannot start the training again: out of memory");
		n->start_code = VIGIL_EXIT_INTERNAL;
		snprintf(n->start_error, sizeof(n->start_error), "cannot start the training again");
		send_result(n, false);
	}
}

void
node_command(struct node *n, const struct msg_command *c)
{
	switch (c->command) {
	case MSG_CMD_STOP:
		LOG_INFO("stopping: %s", c->reason ? c->reason : "the coordinator said so");
		/* the stop that follows the look at a hung training, not one
		 * long after it (the training moved on, the job ends anyway) */
		if (n->ndump > 0 && alive(n) && loop_now(n->loop) - n->dump_at < DUMP_FRESH_MS)
			stop_dumping(n);
		else
			stop(n, EV_STOP, SIGTERM);
		break;
	case MSG_CMD_CHECKPOINT:
		checkpoint(n);
		break;
	case MSG_CMD_RESTART:
		restart(n, c);
		break;
	case MSG_CMD_FORENSICS:
		node_forensics(n);
		break;
	case MSG_CMD_PERF:
		break;
	}
}

/* ---- a hung training (hang.h) ---------------------------------------------------- */

/* A save shows: vigil's checkpoint signal is out, or the training holds a
 * file of --ckpt-dir open. */
static bool
saving(struct node *n)
{
	pid_t *pids = NULL;
	size_t np = 0;
	bool open_there;

	if (n->ckpt == PH_SAVING)
		return true;
	if (!n->ro->ckpt_dir || !n->child || child_descendants(n->child, &pids, &np) < 0)
		return false;
	open_there = forensics_open_under(pids, np, n->ro->ckpt_dir, NULL);
	free(pids);
	return open_there;
}

void
node_progress(struct node *n, struct msg_heartbeat *b)
{
	bool trains = n->member && (n->phase == PH_RUNNING || n->phase == PH_STOPPING);

	hang_local_fill(n->progress, (double)loop_now(n->loop) / 1000.0, trains,
	                trains && saving(n), b);
}

/* A look under way ended, nothing sent. */
static void
look_end(struct node *n)
{
	if (n->look) {
		(void)loop_del_fd(n->loop, forensics_run_fd(n->look));
		forensics_run_free(n->look);
		n->look = NULL;
	}
	loop_del_timer(n->loop, n->look_timer);
	n->look_timer = NULL;
}

/*
 * The Python processes of look F whose stacks gdb did not read: asked
 * for faulthandler's dump if the training is ended (stop_dumping()).
 */
static void
want_dumps(struct node *n, const cJSON *f)
{
	const cJSON *procs = cJSON_GetObjectItemCaseSensitive(f, "processes"), *p;
	bool ranks = false;

	n->ndump = 0;
	n->dump_at = loop_now(n->loop);
	if (!n->fh_armed)
		return;
	cJSON_ArrayForEach(p, procs)
		ranks = ranks || cJSON_GetObjectItemCaseSensitive(p, "train_rank");
	cJSON_ArrayForEach(p, procs) {
		const char *st = json_str(p, "state", "?");

		/* the ranks where there are any: a launcher (torchrun) ends
		 * its workers in its own way, and its stack tells nothing */
		if (ranks && !cJSON_GetObjectItemCaseSensitive(p, "train_rank"))
			continue;
		if (n->ndump < DUMP_MAX && strncmp(json_str(p, "comm", ""), "python", 6) == 0 &&
		    !cJSON_GetObjectItemCaseSensitive(p, "py_stack") && st[0] && strchr("RST", st[0]))
			n->dump[n->ndump++] = (pid_t)json_num(p, "pid", 1, 1e9, 0);
	}
}

/* The look is over: F (taken) to the coordinator, with the last stderr lines. */
static void
look_done(struct node *n, cJSON *f)
{
	struct msg m = { .kind = MSG_NOTE };
	char lines[TAIL_LINES][TAIL_LINE_MAX + 1];
	const char *hint, *err;
	cJSON *tail;
	int k;

	look_end(n);
	if (!f) {
		LOG_ERR("cannot gather the training's forensics: out of memory");
		return;
	}
	k = tail_lines(n, lines, &hint);
	tail = cJSON_AddArrayToObject(f, "stderr_tail");
	for (int i = k > FORENSICS_TAIL ? k - FORENSICS_TAIL : 0; tail && i < k; i++)
		cJSON_AddItemToArray(tail, cJSON_CreateString(lines[i]));
	want_dumps(n, f);
	err = json_str(f, "error", NULL);
	if (err)
		LOG_WARN("the training looks hung, and could not be looked at: %s", err);
	else
		LOG_INFO("the training looks hung: %d of its processes looked at in %.1f s",
		         cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(f, "processes")),
		         json_num(f, "seconds", 0, 1e9, 0));
	m.u.note.node = n->name;
	m.u.note.forensics = f;
	send_msg(n, &m);
	cJSON_Delete(f);
}

static void
on_look(struct loop *l, int fd, short revents, void *arg)
{
	struct node *n = arg;
	cJSON *f;

	(void)l;
	(void)fd;
	(void)revents;
	if (forensics_run_read(n->look, &f) == 1)
		look_done(n, f);
}

static long
on_look_timeout(struct loop *l, void *arg)
{
	struct node *n = arg;
	cJSON *f = cJSON_CreateObject();

	(void)l;
	n->look_timer = NULL;
	cJSON_AddStringToObject(f, "error", "the look at the training did not end in time");
	cJSON_AddArrayToObject(f, "processes");
	look_done(n, f);
	return -1;
}

void
node_forensics(struct node *n)
{
	struct forensics_opts fo = { .gdb = true, .budget_s = FORENSICS_BUDGET_S };
	pid_t *pids = NULL, keeper;
	size_t np = 0;
	int rc;

	if (n->look)
		return;  /* one look at a time: this one answers */
	if (n->child && alive(n))
		(void)child_descendants(n->child, &pids, &np);  /* none: an empty list is the answer */
	/* The keeper is vigil's own (child.c), not the training's: left out
	 * of the look and so of the verdict. */
	keeper = n->child ? child_pid(n->child) : -1;
	for (size_t i = np; i-- > 0;)
		if (pids[i] == keeper)
			pids[i] = pids[--np];
	rc = forensics_start(pids, np, &fo, &n->look);
	free(pids);
	if (rc == 0 && loop_add_fd(n->loop, forensics_run_fd(n->look), POLLIN, on_look, n) < 0)
		rc = -ENOMEM;
	if (rc == 0)
		n->look_timer = loop_add_timer(n->loop, (long)((FORENSICS_BUDGET_S + 3) * 1000),
		                               on_look_timeout, n);
	if (rc < 0) {
		cJSON *f = cJSON_CreateObject();

		LOG_ERR("cannot look at the training: %s", strerror(-rc));
		cJSON_AddStringToObject(f, "error", "vigil could not start its look at the training");
		cJSON_AddArrayToObject(f, "processes");
		look_done(n, f);
	}
}

/* ---- signals -------------------------------------------------------------------- */

static int
forwarded(const struct run_opts *o, int sig)
{
	for (int i = 0; i < o->nforward; i++)
		if (o->forward[i].from == sig)
			return o->forward[i].to;
	return sig;
}

void
node_cancel(struct node *n)
{
	n->cancelled = true;
}

void
node_signal(struct node *n, int sig)
{
	switch (sig) {
	case SIGCHLD:
		if (alive(n)) {
			int rc = child_reap(n->child);

			if (rc < 0)
				LOG_ERR("waitpid: %s", strerror(-rc));
			if (child_exited(n->child))
				on_child_exit(n);
		} else {
			/* grandchildren the subreaper inherited */
			while (waitpid(-1, NULL, WNOHANG) > 0)
				;
		}
		break;
	case SIGTERM:
		if (n->ro->resume && !n->cancelled && alive(n) && n->ckpt == PH_UNASKED) {
			/* mpirun or the batch system ends the job: under --resume
			 * the training saves first (the checkpoint signal, the
			 * grace, then TERM), as far as they let it (mpirun's
			 * odls_base_sigkill_timeout). */
			LOG_INFO("got SIGTERM: the training saves, then stops");
			if (!n->agent_signal)
				n->agent_signal = sig;
			checkpoint(n);
			break;
		}
		/* fall through */
	case SIGINT:
	case SIGHUP:
	case SIGQUIT:
		LOG_INFO("got %s: stopping the training", sig_name(sig));
		if (!n->agent_signal)
			n->agent_signal = sig;
		if (n->phase != PH_IDLE)
			stop(n, EV_SIGNAL, sig == SIGQUIT ? SIGTERM : sig);
		break;
	default:
		if (n->ro->resume && sig == n->ro->ckpt_signal) {
			/* The batch system's warning (Slurm --signal, which
			 * mpirun forwards to every rank): this node's training
			 * saves at once (mpirun's own fan-out, a few ms), and the
			 * coordinator has every node do so, each exactly once
			 * (a node that did not get the signal, too). */
			struct msg m = { .kind = MSG_NOTE };

			checkpoint(n);
			m.u.note.node = n->name;
			m.u.note.signal = sig;
			send_msg(n, &m);
		} else if (alive(n)) {
			(void)child_signal(n->child, forwarded(n->ro, sig));
		}
		break;
	}
}

/* ---- the rest ------------------------------------------------------------------- */

struct node *
node_new(const struct node_opts *o, struct loop *l, const struct node_ops *ops)
{
	struct node *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	n->o = *o;
	n->ro = o->run;
	n->loop = l;
	n->ops = *ops;
	n->phase = PH_IDLE;
	n->ckpt = PH_UNASKED;
	n->watch = PH_UNWATCHED;
	n->name = strdup(o->name ? o->name : "?");
	n->slot_vendors = calloc(o->nslots + 1, sizeof(*n->slot_vendors));
	n->progress = hang_local_new();
	if (!n->name || !n->slot_vendors || !n->progress ||
	    ckpt_confirm_new(n->ro->ckpt_confirm, &n->confirm, NULL, 0) < 0) {
		node_free(n);
		errno = ENOMEM;  /* the spec was checked with the options */
		return NULL;
	}
	for (size_t i = 0; i < o->nslots; i++)
		n->slot_vendors[i] = slot_vendor_name(o->slots[i].vendor);
	return n;
}

bool
node_waiting(const struct node *n)
{
	return n->phase == PH_REPORTED;
}

bool
node_trains(const struct node *n)
{
	return n->member && n->launch.run;
}

int
node_attempt(const struct node *n)
{
	return n->attempt;
}

const char *
node_host(const struct node *n, int rank)
{
	return rank >= 0 && rank < n->nranks && n->hosts[rank] ? n->hosts[rank] : "?";
}

int
node_members(const struct node *n, const int **members)
{
	*members = n->members;
	return n->nmembers;
}

int
node_member_slots(const struct node *n, int i)
{
	return n->mnodes && i >= 0 && i < n->nmembers ? n->mnodes[i].slots : 1;
}

void
node_quiet(struct node *n)
{
	if (n->watch != PH_QUIET)
		(void)step(n, &n->watch, EV_FINAL);
	if (n->vmon) {
		(void)loop_del_fd(n->loop, vhealth_monitor_fd(n->vmon));
		vhealth_monitor_free(n->vmon);
		n->vmon = NULL;
	}
	loop_del_timer(n->loop, n->beat_timer);
	loop_del_timer(n->loop, n->inspect_timer);
	n->beat_timer = n->inspect_timer = NULL;
	look_end(n);
	if (alive(n)) {
		LOG_WARN("the job ended before this node's training: stopping it");
		(void)child_signal(n->child, SIGKILL);
	}
}

bool
node_output_pending(const struct node *n)
{
	return (n->out && stream_pending(n->out)) || (n->err && stream_pending(n->err));
}

void
node_output_summary(struct node *n)
{
	unsigned long long lost = output_lost_total(n);

	if (lost && !n->said_lost) {
		n->said_lost = true;
		LOG_WARN("%llu bytes of the training's output could not be passed on (the reader "
		         "of this agent's output went away)", lost);
	}
}

void
node_free(struct node *n)
{
	if (!n)
		return;
	/* nothing of the training outlives the agent: every process of it,
	 * in its group or not (torch workers in sessions of their own) */
	if (n->child)
		(void)child_kill_tree(n->child);
	child_free(n->child);
	/* the training is gone: nothing reads the hostfiles any more */
	if (n->rundir.made) {
		char dir[sizeof(n->rundir.path)];
		int rc;

		memcpy(dir, n->rundir.path, sizeof(dir));
		rc = rundir_release(&n->rundir);
		if (rc < 0)
			LOG_WARN("cannot remove the run directory %s: %s", dir, strerror(-rc));
	}
	look_end(n);
	ckpt_confirm_free(n->confirm);
	hang_local_free(n->progress);
	free(n->slot_vendors);
	stream_free(n->out);
	stream_free(n->err);
	wlog_close(n->wlog);
	inspect_free(n->insp);
	if (n->vmon)
		(void)loop_del_fd(n->loop, vhealth_monitor_fd(n->vmon));
	vhealth_monitor_free(n->vmon);
	for (size_t i = 0; i < n->nreported; i++)
		free(n->reported[i]);
	free(n->reported);
	for (size_t i = 0; i < n->nfailing; i++)
		free(n->failing[i]);
	free(n->failing);
	mode_launch_free(&n->launch);
	free(n->mnodes);
	free_plan(n);
	free(n->name);
	free(n);
}
