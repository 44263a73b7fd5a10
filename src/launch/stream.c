/*
 * stream.c - one of the training's output streams on its way to ours
 * (stream.h): reading, back-pressure, pacing, holding, line waits, and
 * the scanned copy.
 */
#include "autoconf.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "launch/child.h"
#include "launch/output.h"
#include "launch/pace.h"
#include "launch/stream.h"
#include "lib/linebuf.h"
#include "lib/log.h"
#include "lib/loop.h"

#define READ_CHUNK (128u << 10)  /* as cat reads; larger reads made the
                                  * producer wait longer on the pipe lock */
#define READS_PER_TURN 4         /* reads per wakeup before others get a turn */
#define PIPE_SIZE (1u << 20)     /* asked of the training's pipes: room while it is left to fill */
#define HOLD_BYTES (32u << 10)   /* a streaming pty's output is held until this much is held */
#define OUTPUT_CAP (1u << 20)    /* bytes of output held while our reader is slow */
#define LINE_WAIT_BYTES (32u << 10) /* a line begun waits while shorter than this */
#define SCAN_LINE_MAX 4096       /* timing lines are short; longer lines are cut for scanning */

struct stream {
	struct loop *loop;
	struct stream_ops ops;
	const char *name;
	struct output *out;         /* to our own stdout or stderr, for the whole job */
	bool watched;               /* ... its descriptor is the loop's (on_dest) */
	struct linebuf *lines;      /* the scanned copy */
	const char *mark;
	size_t marklen;
	bool every_line;            /* scan every line, not only the marked ones */
	stream_sink_fn *divert;     /* non-NULL: what is read goes here, not to OUT */
	void *divert_arg;

	/* this attempt's read end */
	struct child *child;
	int fd;                     /* -1 at EOF or once closed */
	struct pace pace;
	uint64_t read_us;           /* the last read that got something */
	bool fresh;                 /* read since the last release */

	struct loop_timer *gather;  /* pending: read when it fires, not on poll() */
	struct loop_timer *release; /* pending: writes out what is held */
	struct loop_timer *line;    /* pending: writes out a line begun as it is */
};

/*
 * The read end may be read again once the output has room (back-pressure
 * released), unless it is being left to fill: its timer reads it then.
 * After every write that may have made room.
 */
static void
resume(struct stream *s)
{
	if (s->fd >= 0 && output_room(s->out) > 0 && !s->gather)
		loop_mod_fd(s->loop, s->fd, POLLIN);
}

/* A line begun goes out as it is: its end did not come in time (a
 * progress bar redrawn with '\r', a prompt), or the stream ended. */
static void
line_goes(struct stream *s)
{
	loop_del_timer(s->loop, s->line);
	s->line = NULL;
	if (output_flush_all(s->out) > 0)
		loop_mod_fd(s->loop, output_fd(s->out), POLLOUT);
}

static long
on_line_wait(struct loop *l, void *arg)
{
	struct stream *s = arg;

	(void)l;
	s->line = NULL;  /* the loop frees it */
	line_goes(s);
	resume(s);
	return LOOP_NOMORE;
}

/*
 * A line the training began and has not ended waits STREAM_LINE_WAIT_US
 * for its end, so that it goes out whole (output_set_line_wait).  NEW:
 * the line that waited ended, and one that waits now has a wait of its
 * own.
 */
static void
wait_for_line(struct stream *s, bool new)
{
	if (!output_line_waits(s->out)) {
		loop_del_timer(s->loop, s->line);
		s->line = NULL;
		return;
	}
	if (s->line && !new)
		return;
	loop_del_timer(s->loop, s->line);
	s->line = loop_add_timer_us(s->loop, STREAM_LINE_WAIT_US, on_line_wait, s);
	if (!s->line)
		line_goes(s);
}

/* Our own stdout or stderr can take more: flush, and read the training again. */
static void
on_dest(struct loop *l, int fd, short revents, void *arg)
{
	struct stream *s = arg;
	int rc;

	(void)revents;
	rc = output_flush(s->out);
	if (rc <= 0)
		loop_mod_fd(l, fd, 0);
	if (rc < 0 && rc != -EPIPE)
		LOG_ERR("cannot write the training's %s: %s", s->name, strerror(-rc));
	wait_for_line(s, false);
	resume(s);
}

/* Held output (a streaming pty's) goes out now, all of it. */
static void
release(struct stream *s)
{
	loop_del_timer(s->loop, s->release);
	s->release = NULL;
	output_set_hold(s->out, 0);
	if (output_flush(s->out) > 0)
		loop_mod_fd(s->loop, output_fd(s->out), POLLOUT);
	wait_for_line(s, false);
	resume(s);
}

/*
 * STREAM_HOLD_US after the hold began: the whole lines go out.  A line
 * begun waits for its end one more STREAM_HOLD_US while the training
 * still writes; then it goes as it is (a progress bar redrawn with '\r',
 * a prompt).
 */
static long
on_release(struct loop *l, void *arg)
{
	struct stream *s = arg;
	int rc;

	s->release = NULL;  /* the loop frees it */
	if (!s->fresh) {
		release(s);
		return LOOP_NOMORE;
	}
	s->fresh = false;
	rc = output_flush_lines(s->out);
	if (rc > 0)
		loop_mod_fd(l, output_fd(s->out), POLLOUT);
	if (rc >= 0 && output_held(s->out))
		s->release = loop_add_timer_us(l, STREAM_HOLD_US, on_release, s);
	else
		output_set_hold(s->out, 0);
	resume(s);
	return LOOP_NOMORE;
}

/*
 * A pseudo-terminal read again within STREAM_HOLD_US of the last read:
 * the training is streaming, and a write per read (4 KiB at most) would
 * cost our reader a wake-up each; what it writes is held for
 * STREAM_HOLD_US at most and goes out in larger writes.  Output that
 * comes now and then is written as it comes.  A pipe is left to fill
 * instead (pace.h).
 */
static void
hold_if_streaming(struct stream *s)
{
	uint64_t now = loop_now_us(s->loop), last = s->read_us;

	s->read_us = now;
	s->fresh = true;
	if (s->pace.capacity > 0 || last == 0 || now - last >= STREAM_HOLD_US)
		return;
	if (!s->release &&
	    !(s->release = loop_add_timer_us(s->loop, STREAM_HOLD_US, on_release, s)))
		return;
	output_set_hold(s->out, HOLD_BYTES);
}

static void
scanned(const char *line, size_t len, bool truncated, void *arg)
{
	struct stream *s = arg;

	(void)truncated;
	if (s->ops.line)
		s->ops.line(s->ops.arg, line, len);
}

/*
 * A copy of what the training wrote, line by line: only the lines that
 * hold the mark are handed out (the others are not even split), unless
 * every line is wanted.
 */
static void
scan(struct stream *s, const char *buf, size_t len)
{
	if (s->every_line || !s->mark)
		linebuf_feed(s->lines, buf, len, scanned, s);
	else
		linebuf_feed_marked(s->lines, buf, len, s->mark, s->marklen, scanned, s);
}

void
stream_close(struct stream *s)
{
	int fd = s->fd;

	if (fd < 0)
		return;
	s->fd = -1;
	loop_del_fd(s->loop, fd);
	loop_del_timer(s->loop, s->gather);
	s->gather = NULL;
	/* no line's end will come: everything goes, held or begun (before
	 * release(), which would give a line begun a wait) */
	line_goes(s);
	release(s);
	child_close_fd(s->child, fd);
	s->child = NULL;
	linebuf_flush(s->lines, scanned, s);
}

static long on_gather(struct loop *l, void *arg);

/*
 * Read the training's stream: again until it is empty, up to
 * READS_PER_TURN times (the training often writes more while we pass the
 * last read on, and each poll() that sleeps costs a wakeup; the bound
 * leaves signals and MPI their turn).  Once it is read empty, a fast
 * writer's pipe is left to fill for a moment (pace.h).
 */
static void
read_stream(struct stream *s)
{
	static char buf[READ_CHUNK];
	bool empty = false;
	unsigned long long written;
	long wait;
	int rc;

	for (int i = 0; i < READS_PER_TURN && !empty; i++) {
		size_t room = output_room(s->out), want = room < sizeof(buf) ? room : sizeof(buf);
		ssize_t got;

		if (room == 0) {
			loop_mod_fd(s->loop, s->fd, 0);  /* back-pressure: resume() reads it again */
			return;
		}
		got = read(s->fd, buf, want);
		if (got < 0 && errno == EINTR)
			return;
		if (got < 0 && errno == EAGAIN) {
			empty = true;
			break;
		}
		if (got <= 0) {
			/* EOF; a pty master reads EIO once the child side is closed */
			stream_close(s);
			if (s->ops.ended)
				s->ops.ended(s->ops.arg);
			return;
		}
		pace_got(&s->pace, (size_t)got);
		hold_if_streaming(s);
		/* copies, for scanning; what passes through is untouched */
		if (s->ops.tap)
			s->ops.tap(s->ops.arg, buf, (size_t)got);
		scan(s, buf, (size_t)got);
		written = output_written(s->out);
		if (s->divert) {
			s->divert(s->divert_arg, buf, (size_t)got);
		} else {
			rc = output_push(s->out, buf, (size_t)got);
			if (rc < 0 && rc != -EAGAIN && rc != -EPIPE)
				LOG_ERR("cannot pass the training's output on: %s; it is being lost",
				        strerror(-rc));
		}
		/* something went out: what waits now is a line begun since */
		wait_for_line(s, output_written(s->out) != written);
		if (output_pending(s->out) && !output_held(s->out) && !s->line)
			loop_mod_fd(s->loop, output_fd(s->out), POLLOUT);
		/* A short read emptied the pipe: a read now would only say EAGAIN. */
		empty = (size_t)got < want;
	}
	if (!empty)
		return;  /* more is waiting: poll() says so at once */
	wait = pace_empty(&s->pace, loop_now_us(s->loop));
	if (wait > 0 && (s->gather = loop_add_timer_us(s->loop, wait, on_gather, s)) != NULL)
		loop_mod_fd(s->loop, s->fd, 0);
}

static void
on_fd(struct loop *l, int fd, short revents, void *arg)
{
	(void)l;
	(void)fd;
	(void)revents;
	read_stream(arg);
}

/* A stream left to fill: read it now, and wait on it in poll() again. */
static long
on_gather(struct loop *l, void *arg)
{
	struct stream *s = arg;

	s->gather = NULL;
	if (s->fd >= 0) {
		loop_mod_fd(l, s->fd, POLLIN);
		read_stream(s);
	}
	return LOOP_NOMORE;
}

/* What a read end holds before the training must wait: a pipe asked for
 * PIPE_SIZE; 0 for a pseudo-terminal, which is never left to fill. */
static size_t
capacity(int fd)
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

struct stream *
stream_new(struct loop *l, const struct stream_opts *o, const struct stream_ops *ops)
{
	struct stream *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->loop = l;
	s->ops = *ops;
	s->name = o->name ? o->name : "output";
	s->mark = o->mark;
	s->marklen = o->marklen;
	s->fd = -1;
	grow_pipe(o->dest_fd);
	s->out = output_new(o->dest_fd, OUTPUT_CAP);
	if (!s->out)
		goto fail;
	output_set_line_wait(s->out, LINE_WAIT_BYTES);
	s->lines = linebuf_new(SCAN_LINE_MAX);
	if (!s->lines || (o->prefix && output_set_prefix(s->out, o->prefix) < 0) ||
	    loop_add_fd(l, o->dest_fd, 0, on_dest, s) < 0) {
		errno = ENOMEM;
		goto fail;
	}
	s->watched = true;
	return s;
fail:
	stream_free(s);
	return NULL;
}

void
stream_free(struct stream *s)
{
	int saved = errno;

	if (!s)
		return;
	if (s->watched)
		(void)loop_del_fd(s->loop, output_fd(s->out));
	if (s->fd >= 0)
		(void)loop_del_fd(s->loop, s->fd);
	loop_del_timer(s->loop, s->gather);
	loop_del_timer(s->loop, s->release);
	loop_del_timer(s->loop, s->line);
	output_free(s->out);
	linebuf_free(s->lines);
	free(s);
	errno = saved;
}

int
stream_open(struct stream *s, struct child *c, int fd)
{
	s->child = c;
	s->fd = fd;
	pace_init(&s->pace, capacity(fd), READ_CHUNK);
	s->read_us = 0;
	s->fresh = false;
	return loop_add_fd(s->loop, fd, POLLIN, on_fd, s) < 0 ? -ENOMEM : 0;
}

bool
stream_is_open(const struct stream *s)
{
	return s->fd >= 0;
}

void
stream_scan_every_line(struct stream *s, bool every)
{
	s->every_line = every;
}

void
stream_divert(struct stream *s, stream_sink_fn *fn, void *arg)
{
	s->divert = fn;
	s->divert_arg = arg;
}

bool
stream_pending(const struct stream *s)
{
	return output_pending(s->out);
}

unsigned long long
stream_lost(const struct stream *s)
{
	return output_lost(s->out);
}
