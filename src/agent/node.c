/*
 * node.c - this node's training: launch, output, signals, heartbeats,
 * inspection, and its one result per attempt.
 */
#include "autoconf.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cJSON.h>

#include "vigil.h"
#include "agent/node.h"
#include "check/inspect.h"
#include "check/vhealth.h"
#include "launch/child.h"
#include "launch/ckpt.h"
#include "launch/modes.h"
#include "launch/output.h"
#include "launch/pace.h"
#include "launch/rundir.h"
#include "launch/wlog.h"
#include "lib/linebuf.h"
#include "lib/log.h"
#include "lib/loop.h"
#include "lib/sig.h"
#include "perf/progress.h"
#include "prep/prep.h"
#include "sys/hwmon.h"

extern char **environ;

#define TAIL_LINES 20            /* stderr lines kept for the report */
#define TAIL_LINE_MAX 512
#define TAIL_BYTES (TAIL_LINES * TAIL_LINE_MAX)  /* stderr kept for its last lines */
#define READ_CHUNK (128u << 10)  /* as cat reads; larger reads made the
                                  * producer wait longer on the pipe lock */
#define READS_PER_TURN 4         /* reads per wakeup before others get a turn */
#define PIPE_SIZE (1u << 20)     /* asked of the training's pipes: room while it is left to fill */
#define HOLD_US 1000             /* a streaming pty's output is held at most this long */
#define HOLD_BYTES (32u << 10)   /* ... or until this much is held */
#define OUTPUT_CAP (1u << 20)    /* bytes of output held while our reader is slow */
#define LINE_WAIT_US 20000       /* a line begun waits this long for its end ... */
#define LINE_WAIT_BYTES (32u << 10) /* ... while shorter than this (output_set_line_wait) */
#define DRAIN_MS 2000            /* after the child exits, wait this long for EOF */
#define STOP_AFTER_CKPT_MS 5000  /* TERM to KILL once the checkpoint's grace is over */
#define SCAN_LINE_MAX 4096       /* timing lines are short; longer lines are cut for scanning */

/* One of the training's streams as it is read: how fast, and whether it is
 * being left to fill (pace.h). */
struct stream {
	struct node *n;
	struct pace pace;
	struct loop_timer *gather;  /* pending: read when it fires, not on poll() */
	uint64_t read_us;           /* the last read that got something */
	bool fresh;                 /* read since the last release */
	struct loop_timer *release; /* pending: writes out what is held */
	struct loop_timer *line;    /* pending: writes out a line begun as it is */
};

struct node {
	struct node_opts o;
	const struct run_opts *ro;
	char *name;
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

	/* this attempt's training */
	struct mode_launch launch;
	struct mode_node *mnodes;
	struct child *child;
	int cout, cerr;           /* the child's stdout/stderr read ends, -1 at EOF */
	struct stream sout, serr; /* ... as they are read */
	bool exited, stopping, ckpt_sent, result_sent;
	int agent_signal;
	char start_error[512];
	int start_code;
	struct loop_timer *kill_timer, *drain_timer, *ckpt_timer;

	/* the training's output, for the whole job */
	struct output *out, *err;
	struct linebuf *errlines, *outlines;
	char tail[TAIL_BYTES];    /* the last bytes of stderr, a ring */
	unsigned long long tailed;/* bytes of stderr in this attempt */
	bool said_lost;
	bool hidden;              /* --output coordinator: this attempt's stdout goes to the log */
	struct wlog *wlog;        /* ... that log (wlog.h), opened on first use */
	bool said_wlog;

	/* the checkpoint's evidence (--ckpt-confirm) */
	struct ckpt_confirm *confirm;
	bool verdict_given, confirmed;
	char confirm_why[200];

	const char **slot_vendors;    /* each slot's vendor, for the visible-device lists */
	bool said_warning;

	/* heartbeats and the inspection */
	bool started, quiet;
	struct loop_timer *beat_timer, *inspect_timer;
	struct inspect *insp;
	struct vhealth_monitor *vmon; /* the boards, as the vendors' libraries see them */
	char **reported;          /* findings already sent: "what device verdict" */
	size_t nreported;
};

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
	if (!n->ckpt_sent || n->verdict_given)
		return;
	n->verdict_given = true;
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
 */
static int
tail_lines(const struct node *n, char lines[TAIL_LINES][TAIL_LINE_MAX + 1])
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
	return (n->out ? output_lost(n->out) : 0) + (n->err ? output_lost(n->err) : 0);
}

/* How this attempt's training ended (or that this node ran none), once. */
static void
send_result(struct node *n, bool idle)
{
	static char lines[TAIL_LINES][TAIL_LINE_MAX + 1];
	struct msg m = { .kind = MSG_RESULT };
	struct msg_result *r = &m.u.result;
	const char *tail[TAIL_LINES];

	if (n->result_sent)
		return;
	n->result_sent = true;
	r->node = n->name;
	r->attempt = n->attempt;
	r->idle = idle;
	r->seconds = (double)loop_now(n->loop) / 1000.0 - n->o.start;
	r->agent_signal = n->agent_signal;
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
	if (n->ckpt_sent) {
		judge_checkpoint(n, n->exited);
		r->ckpt = true;
		r->ckpt_confirmed = n->confirmed;
		r->ckpt_why = n->confirm_why;
	}
	r->ntail = tail_lines(n, lines);
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
tail_bytes(struct node *n, const char *buf, size_t len)
{
	size_t at, first;

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

static void
out_line(const char *line, size_t len, bool truncated, void *arg)
{
	struct node *n = arg;

	(void)truncated;
	if (n->ckpt_sent && !n->verdict_given)
		(void)ckpt_confirm_line(n->confirm, line, len);
	/* Only the lines that end like a timing line go on: the test is
	 * inline, and the lines handed out while a checkpoint is confirmed
	 * (all of them) mostly stop here. */
	if (n->ops.line && progress_tail(line, len))
		n->ops.line(n->ops.arg, line, len);
}

/*
 * A copy of what the training wrote, line by line: only the lines that
 * hold a timing line's mark are handed out (the others are not even
 * split), every line while a checkpoint's evidence may be in any of them.
 */
static void
scan(struct node *n, struct linebuf *lb, const char *buf, size_t len)
{
	if (n->ckpt_sent && !n->verdict_given)
		linebuf_feed(lb, buf, len, out_line, n);
	else
		linebuf_feed_marked(lb, buf, len, PROGRESS_MARK, PROGRESS_MARK_LEN, out_line, n);
}

static void maybe_done(struct node *n);

/*
 * The stream CFD of the training may be read again once its output has
 * room (back-pressure released), unless it is being left to fill: its
 * timer reads it then.  After every write that may have made room.
 */
static void
resume(struct node *n, int cfd)
{
	struct output *o = cfd == n->cout ? n->out : n->err;
	const struct stream *s = cfd == n->cout ? &n->sout : &n->serr;

	if (cfd >= 0 && output_room(o) > 0 && !s->gather)
		loop_mod_fd(n->loop, cfd, POLLIN);
}

/* A line begun goes out as it is: its end did not come in time (a
 * progress bar redrawn with '\r', a prompt), or the stream ended. */
static void
line_goes(struct node *n, struct stream *s, struct output *o)
{
	loop_del_timer(n->loop, s->line);
	s->line = NULL;
	if (!o)
		return;
	if (output_flush_all(o) > 0)
		loop_mod_fd(n->loop, output_fd(o), POLLOUT);
}

static long
on_line_wait(struct loop *l, void *arg)
{
	struct stream *s = arg;
	struct node *n = s->n;

	(void)l;
	s->line = NULL;  /* the loop frees it */
	line_goes(n, s, s == &n->sout ? n->out : n->err);
	resume(n, s == &n->sout ? n->cout : n->cerr);
	return LOOP_NOMORE;
}

/*
 * A line the training began and has not ended waits LINE_WAIT_US for its
 * end, so that it goes out whole (output_set_line_wait).  NEW: the line
 * that waited ended, and one that waits now has a wait of its own.
 */
static void
wait_for_line(struct node *n, struct stream *s, struct output *o, bool new)
{
	if (!o || !output_line_waits(o)) {
		loop_del_timer(n->loop, s->line);
		s->line = NULL;
		return;
	}
	if (s->line && !new)
		return;
	loop_del_timer(n->loop, s->line);
	s->line = loop_add_timer_us(n->loop, LINE_WAIT_US, on_line_wait, s);
	if (!s->line)
		line_goes(n, s, o);
}

/* Our own stdout or stderr can take more: flush, and read the child again. */
static void
on_dest(struct loop *l, int fd, short revents, void *arg)
{
	struct node *n = arg;
	struct output *o = fd == output_fd(n->out) ? n->out : n->err;
	int cfd = o == n->out ? n->cout : n->cerr;
	int rc;

	(void)revents;
	rc = output_flush(o);
	if (rc <= 0)
		loop_mod_fd(l, fd, 0);
	if (rc < 0 && rc != -EPIPE)
		LOG_ERR("cannot write the training's %s: %s", o == n->out ? "stdout" : "stderr",
		        strerror(-rc));
	wait_for_line(n, o == n->out ? &n->sout : &n->serr, o, false);
	resume(n, cfd);
}

/* Held output (a streaming pty's) goes out now, all of it. */
static void
release(struct node *n, struct stream *s)
{
	struct output *o = s == &n->sout ? n->out : n->err;

	loop_del_timer(n->loop, s->release);
	s->release = NULL;
	if (!o)
		return;
	output_set_hold(o, 0);
	if (output_flush(o) > 0)
		loop_mod_fd(n->loop, output_fd(o), POLLOUT);
	wait_for_line(n, s, o, false);
	resume(n, s == &n->sout ? n->cout : n->cerr);
}

/*
 * HOLD_US after the hold began: the whole lines go out.  A line begun
 * waits for its end one more HOLD_US while the training still writes;
 * then it goes as it is (a progress bar redrawn with '\r', a prompt).
 */
static long
on_release(struct loop *l, void *arg)
{
	struct stream *s = arg;
	struct node *n = s->n;
	struct output *o = s == &n->sout ? n->out : n->err;
	int rc;

	s->release = NULL;  /* the loop frees it */
	if (!s->fresh) {
		release(n, s);
		return LOOP_NOMORE;
	}
	s->fresh = false;
	rc = output_flush_lines(o);
	if (rc > 0)
		loop_mod_fd(l, output_fd(o), POLLOUT);
	if (rc >= 0 && output_held(o))
		s->release = loop_add_timer_us(l, HOLD_US, on_release, s);
	else
		output_set_hold(o, 0);
	resume(n, s == &n->sout ? n->cout : n->cerr);
	return LOOP_NOMORE;
}

/*
 * A pseudo-terminal's stream read again within HOLD_US of the last read:
 * the training is streaming, and a write per read (4 KiB at most) would
 * cost our reader a wake-up each; what it writes is held for HOLD_US at
 * most and goes out in larger writes.  Output that comes now and then is
 * written as it comes.  A pipe is left to fill instead (pace.h).
 */
static void
hold_if_streaming(struct node *n, struct stream *s, struct output *o)
{
	uint64_t now = loop_now_us(n->loop), last = s->read_us;

	s->read_us = now;
	s->fresh = true;
	if (s->pace.capacity > 0 || last == 0 || now - last >= HOLD_US)
		return;
	if (!s->release && !(s->release = loop_add_timer_us(n->loop, HOLD_US, on_release, s)))
		return;
	output_set_hold(o, HOLD_BYTES);
}

static void
close_child_fd(struct node *n, int fd)
{
	struct stream *s = fd == n->cout ? &n->sout : &n->serr;

	loop_del_fd(n->loop, fd);
	loop_del_timer(n->loop, s->gather);
	s->gather = NULL;
	/* no line's end will come: everything goes, held or begun (before
	 * release(), which would give a line begun a wait) */
	line_goes(n, s, s == &n->sout ? n->out : n->err);
	release(n, s);
	child_close_fd(n->child, fd);
	if (fd == n->cerr) {
		n->cerr = -1;
		linebuf_flush(n->errlines, out_line, n);
	}
	if (fd == n->cout) {
		n->cout = -1;
		linebuf_flush(n->outlines, out_line, n);
	}
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
 * goes to its log (wlog.h) instead of being dropped; everything else to
 * our own output.  A log that cannot be written is said once and dropped.
 */
static int
pass_on(struct node *n, struct output *o, const char *buf, size_t len)
{
	char dir[4200], err[600];

	if (o != n->out || !n->hidden)
		return output_push(o, buf, len);
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
	return 0;
}

static long on_gather(struct loop *l, void *arg);

/*
 * Read the training's stream FD: again until it is empty, up to
 * READS_PER_TURN times (the training often writes more while we pass the
 * last read on, and each poll() that sleeps costs a wakeup; the bound
 * leaves signals and MPI their turn).  Once it is read empty, a fast
 * writer's pipe is left to fill for a moment (pace.h).
 */
static void
read_stream(struct node *n, int fd)
{
	static char buf[READ_CHUNK];
	struct output *o = fd == n->cout ? n->out : n->err;
	struct stream *s = fd == n->cout ? &n->sout : &n->serr;
	bool empty = false;
	unsigned long long written;
	long wait;
	int rc;

	for (int i = 0; i < READS_PER_TURN && !empty; i++) {
		size_t room = output_room(o), want = room < sizeof(buf) ? room : sizeof(buf);
		ssize_t got;

		if (room == 0) {
			loop_mod_fd(n->loop, fd, 0);  /* back-pressure: resume() reads it again */
			return;
		}
		got = read(fd, buf, want);
		if (got < 0 && errno == EINTR)
			return;
		if (got < 0 && errno == EAGAIN) {
			empty = true;
			break;
		}
		if (got <= 0) {
			/* EOF; a pty master reads EIO once the child side is closed */
			close_child_fd(n, fd);
			maybe_done(n);
			return;
		}
		pace_got(&s->pace, (size_t)got);
		hold_if_streaming(n, s, o);
		/* a copy for scanning; what passes through is untouched */
		if (o == n->err)
			tail_bytes(n, buf, (size_t)got);
		scan(n, o == n->err ? n->errlines : n->outlines, buf, (size_t)got);
		written = output_written(o);
		rc = pass_on(n, o, buf, (size_t)got);
		if (rc < 0 && rc != -EAGAIN && rc != -EPIPE)
			LOG_ERR("cannot pass the training's output on: %s; it is being lost",
			        strerror(-rc));
		/* something went out: what waits now is a line begun since */
		wait_for_line(n, s, o, output_written(o) != written);
		if (output_pending(o) && !output_held(o) && !s->line)
			loop_mod_fd(n->loop, output_fd(o), POLLOUT);
		/* A short read emptied the pipe: a read now would only say EAGAIN. */
		empty = (size_t)got < want;
	}
	if (!empty)
		return;  /* more is waiting: poll() says so at once */
	wait = pace_empty(&s->pace, loop_now_us(n->loop));
	if (wait > 0 && (s->gather = loop_add_timer_us(n->loop, wait, on_gather, s)) != NULL)
		loop_mod_fd(n->loop, fd, 0);
}

static void
on_child_fd(struct loop *l, int fd, short revents, void *arg)
{
	(void)l;
	(void)revents;
	read_stream(arg, fd);
}

/* A stream left to fill: read it now, and wait on it in poll() again. */
static long
on_gather(struct loop *l, void *arg)
{
	struct stream *s = arg;
	struct node *n = s->n;
	int fd = s == &n->sout ? n->cout : n->cerr;

	s->gather = NULL;
	if (fd >= 0) {
		loop_mod_fd(l, fd, POLLIN);
		read_stream(n, fd);
	}
	return LOOP_NOMORE;
}

/* What a stream holds before the training must wait: a pipe asked for
 * PIPE_SIZE; 0 for a pseudo-terminal, which is never left to fill. */
static size_t
stream_capacity(int fd)
{
	int size = fcntl(fd, F_SETPIPE_SZ, (int)PIPE_SIZE);

	if (size < 0)
		size = fcntl(fd, F_GETPIPE_SZ);
	return size > 0 ? (size_t)size : 0;
}

/*
 * Our own output, when it is a pipe (`vigil run ... | tee log`, mpirun's
 * forwarding of each rank's output), grows to PIPE_SIZE (never shrinks).
 * A full 64 KiB pipe wakes its writer for each page its reader frees, and
 * a non-blocking writer pays a poll() and a write() per page: with 16
 * cores, bulk output passed at 0.54 of the training writing to the same
 * reader straight, and at 0.99 with 1 MiB.  Where the system refuses
 * (pipe-max-size), the pipe stays as it is.
 */
static void
grow_pipe(int fd)
{
	struct stat st;
	int size;

	if (fstat(fd, &st) < 0 || !S_ISFIFO(st.st_mode))
		return;
	size = fcntl(fd, F_GETPIPE_SZ);
	if (size >= 0 && (unsigned)size < PIPE_SIZE)
		(void)fcntl(fd, F_SETPIPE_SZ, (int)PIPE_SIZE);
}

/* Once per job: a restarted training writes to the same place. */
static int
open_outputs(struct node *n)
{
	char prefix[300];

	if (n->out)
		return 0;
	grow_pipe(STDOUT_FILENO);
	grow_pipe(STDERR_FILENO);
	n->out = output_new(STDOUT_FILENO, OUTPUT_CAP);
	if (!n->out)
		return -errno;
	n->err = output_new(STDERR_FILENO, OUTPUT_CAP);
	if (!n->err)
		return -errno;
	output_set_line_wait(n->out, LINE_WAIT_BYTES);
	output_set_line_wait(n->err, LINE_WAIT_BYTES);
	n->errlines = linebuf_new(SCAN_LINE_MAX);
	n->outlines = linebuf_new(SCAN_LINE_MAX);
	if (!n->errlines || !n->outlines)
		return -ENOMEM;
	if (n->ro->tag_output) {
		snprintf(prefix, sizeof(prefix), "[%s:%d] ", n->name, n->o.rank);
		if (output_set_prefix(n->out, prefix) < 0 || output_set_prefix(n->err, prefix) < 0)
			return -ENOMEM;
	}
	if (loop_add_fd(n->loop, STDOUT_FILENO, 0, on_dest, n) < 0 ||
	    loop_add_fd(n->loop, STDERR_FILENO, 0, on_dest, n) < 0)
		return -ENOMEM;
	return 0;
}

/* ---- the end of this attempt's training ------------------------------------------ */

/* The training is over on this node when it was reaped and its output ended. */
static void
maybe_done(struct node *n)
{
	if (!n->exited || n->cout >= 0 || n->cerr >= 0)
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
	if (n->cout >= 0)
		close_child_fd(n, n->cout);
	if (n->cerr >= 0)
		close_child_fd(n, n->cerr);
	maybe_done(n);
	return LOOP_NOMORE;
}

static void
on_child_exit(struct node *n)
{
	n->exited = true;
	loop_del_timer(n->loop, n->kill_timer);
	n->kill_timer = NULL;
	if (n->cout >= 0 || n->cerr >= 0)
		n->drain_timer = loop_add_timer(n->loop, DRAIN_MS, on_drain_timeout, n);
	maybe_done(n);
}

static long
on_kill_timeout(struct loop *l, void *arg)
{
	struct node *n = arg;

	(void)l;
	n->kill_timer = NULL;
	if (n->child && !n->exited) {
		LOG_WARN("the training did not end when told to: killing it");
		(void)child_signal(n->child, SIGKILL);
	}
	return LOOP_NOMORE;
}

/* Stop this node's training: SIG to its group now, KILL after KILL_MS. */
static void
stop_after(struct node *n, int sig, long kill_ms)
{
	if (!n->child || n->exited) {
		if (!n->child)
			send_result(n, !n->start_error[0]);
		return;
	}
	(void)child_signal(n->child, sig);
	if (!n->stopping) {
		n->stopping = true;
		n->kill_timer = loop_add_timer(n->loop, kill_ms, on_kill_timeout, n);
	}
}

/* ... KILL after the grace period. */
static void
stop(struct node *n, int sig)
{
	stop_after(n, sig, (long)(n->ro->grace_s * 1000));
}

/* The checkpoint's grace is over: the training saved or not, it stops now. */
static long
on_ckpt_grace(struct loop *l, void *arg)
{
	struct node *n = arg;

	(void)l;
	n->ckpt_timer = NULL;
	if (n->child && !n->exited) {
		judge_checkpoint(n, false);
		LOG_WARN("the training did not exit within %.0f s of the checkpoint signal: "
		         "stopping it", n->ro->grace_s);
		stop_after(n, SIGTERM, STOP_AFTER_CKPT_MS);
	}
	return LOOP_NOMORE;
}

/* The checkpoint signal to the training's group, once per attempt. */
static void
checkpoint(struct node *n)
{
	if (!n->child || n->exited || n->ckpt_sent)
		return;
	n->ckpt_sent = true;
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
	if (n->quiet) {
		n->beat_timer = NULL;
		return LOOP_NOMORE;
	}
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

/* Tell the coordinator, which decides, what is wrong now that was not before. */
static void
report_findings(struct node *n, const struct finding *f, size_t nf)
{
	struct msg m = { .kind = MSG_NOTE };
	struct finding *mf = calloc(nf > 0 ? nf : 1, sizeof(*mf));
	int k = 0;

	for (size_t i = 0; mf && i < nf; i++) {
		char key[160];

		snprintf(key, sizeof(key), "%s %s %s", f[i].what, f[i].device,
		         verdict_name(f[i].verdict));
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

/* What the vendors' libraries say now (vhealth.h), as inspection findings. */
static void
take_board_findings(struct node *n)
{
	struct finding *vf = NULL;
	size_t vn = 0;

	if (n->vmon && vhealth_monitor_take(n->vmon, &vf, &vn) == 0)
		report_findings(n, vf, vn);
	free(vf);
}

/* The board monitor sent something (facts, or an event such as an XID): at once. */
static void
on_boards(struct loop *l, int fd, short revents, void *arg)
{
	struct node *n = arg;

	(void)l;
	(void)fd;
	(void)revents;
	if (!n->quiet)
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

/* Every --inspect-interval: sysfs, then the boards, then what is used. */
static long
on_inspect(struct loop *l, void *arg)
{
	struct node *n = arg;
	struct finding *f = NULL;
	size_t nf = 0;
	int rc;

	(void)l;
	if (n->quiet) {
		n->inspect_timer = NULL;
		return LOOP_NOMORE;
	}
	rc = inspect_run(n->insp, &f, &nf);
	if (rc < 0)
		LOG_WARN("inspection failed: %s", strerror(-rc));
	else
		report_findings(n, f, nf);
	free(f);
	take_board_findings(n);
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

	if (n->started)
		return 0;
	n->started = true;
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

	n->hidden = !shows_stdout(n);
	rc = child_spawn(&co, &n->child);
	if (rc < 0) {
		n->start_code = rc == -ENOENT ? 127 : 126;
		snprintf(n->start_error, sizeof(n->start_error), "cannot run '%s': %s",
		         n->launch.argv[0], rc == -ENOENT ? "command not found" : strerror(-rc));
		send_result(n, false);
		return 0;
	}
	n->cout = child_stdout_fd(n->child);
	n->cerr = child_stderr_fd(n->child);
	n->sout = (struct stream){ .n = n };
	n->serr = (struct stream){ .n = n };
	pace_init(&n->sout.pace, stream_capacity(n->cout), READ_CHUNK);
	pace_init(&n->serr.pace, stream_capacity(n->cerr), READ_CHUNK);
	rc = open_outputs(n);
	if (rc < 0) {
		LOG_ERR("cannot pass the training's output through: %s", strerror(-rc));
		return rc;
	}
	if (loop_add_fd(n->loop, n->cout, POLLIN, on_child_fd, n) < 0 ||
	    loop_add_fd(n->loop, n->cerr, POLLIN, on_child_fd, n) < 0)
		return -ENOMEM;
	return 0;
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
	} else if ((rc = mode_write_files(&n->launch, err, sizeof(err))) < 0) {
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

/* A node the plan left out (the pre-check, --min-nodes) runs nothing. */
static void
describe_left_out(const struct node *n, FILE *f)
{
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
	if (n->child) {
		if (n->cout >= 0)
			close_child_fd(n, n->cout);
		if (n->cerr >= 0)
			close_child_fd(n, n->cerr);
		(void)child_kill_tree(n->child);
		child_free(n->child);
		n->child = NULL;
	}
	n->exited = n->stopping = n->ckpt_sent = n->result_sent = false;
	n->verdict_given = n->confirmed = false;
	n->confirm_why[0] = '\0';
	n->agent_signal = 0;
	n->start_error[0] = '\0';
	n->tailed = 0;
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
		stop(n, SIGTERM);
		break;
	case MSG_CMD_CHECKPOINT:
		checkpoint(n);
		break;
	case MSG_CMD_RESTART:
		restart(n, c);
		break;
	case MSG_CMD_PERF:
		break;
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
node_signal(struct node *n, int sig)
{
	switch (sig) {
	case SIGCHLD:
		if (n->child && !n->exited) {
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
		if (n->ro->resume && n->child && !n->exited && !n->ckpt_sent) {
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
		if (n->started)
			stop(n, sig == SIGQUIT ? SIGTERM : sig);
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
		} else if (n->child && !n->exited) {
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
	n->cout = n->cerr = -1;
	n->name = strdup(o->name ? o->name : "?");
	n->slot_vendors = calloc(o->nslots + 1, sizeof(*n->slot_vendors));
	if (!n->name || !n->slot_vendors ||
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
	return n->result_sent;
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
	n->quiet = true;
	if (n->vmon) {
		(void)loop_del_fd(n->loop, vhealth_monitor_fd(n->vmon));
		vhealth_monitor_free(n->vmon);
		n->vmon = NULL;
	}
	loop_del_timer(n->loop, n->beat_timer);
	loop_del_timer(n->loop, n->inspect_timer);
	n->beat_timer = n->inspect_timer = NULL;
	if (n->child && !n->exited) {
		LOG_WARN("the job ended before this node's training: stopping it");
		(void)child_signal(n->child, SIGKILL);
	}
}

bool
node_output_pending(const struct node *n)
{
	return (n->out && output_pending(n->out)) || (n->err && output_pending(n->err));
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
	ckpt_confirm_free(n->confirm);
	free(n->slot_vendors);
	output_free(n->out);
	output_free(n->err);
	wlog_close(n->wlog);
	linebuf_free(n->errlines);
	linebuf_free(n->outlines);
	inspect_free(n->insp);
	if (n->vmon)
		(void)loop_del_fd(n->loop, vhealth_monitor_fd(n->vmon));
	vhealth_monitor_free(n->vmon);
	for (size_t i = 0; i < n->nreported; i++)
		free(n->reported[i]);
	free(n->reported);
	mode_launch_free(&n->launch);
	free(n->mnodes);
	free_plan(n);
	free(n->name);
	free(n);
}
