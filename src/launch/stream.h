/*
 * stream.h - one of the training's output streams (its stdout or its
 * stderr) on its way to ours.
 *
 * A stream reads the training's pipe or pseudo-terminal and passes what
 * it reads through to our own stdout or stderr byte for byte (output.h),
 * while a copy is scanned line by line on the side.  It owns, for one
 * attempt's training, the read end it is given; for the whole job, its
 * output, its line buffer, its pace (pace.h) and its timers:
 *
 *  - back-pressure: while the output has no room the read end is not
 *    read, so a slow reader of ours slows the training, never the loop;
 *  - pacing: a fast writer's pipe is left to fill for a moment (pace.h);
 *  - holding: a streaming pseudo-terminal's output is held up to
 *    STREAM_HOLD_US and goes out in larger writes, whole lines only;
 *  - line waits: a line begun waits up to STREAM_LINE_WAIT_US for its
 *    end, so that it goes out whole (output_set_line_wait()).
 *
 * It knows nothing of the job: what it scans goes to ops->line, its end
 * to ops->ended.  Everything runs from the loop's callbacks; nothing
 * blocks.  The loop is borrowed and must outlive the stream.
 */
#ifndef VIGIL_STREAM_H
#define VIGIL_STREAM_H

#include <stdbool.h>
#include <stddef.h>

struct child;
struct loop;
struct stream;

#define STREAM_HOLD_US 1000       /* a streaming pty's output is held at most this long */
#define STREAM_LINE_WAIT_US 20000 /* a line begun waits this long for its end */

struct stream_ops {
	/* Every byte read, as it was read, before it is passed on (a copy:
	 * stderr's last lines for the report).  NULL: none. */
	void (*tap)(void *arg, const char *buf, size_t len);
	/* A line scanned (without its newline; valid during the call): those
	 * that hold the mark, or every line (stream_scan_every_line()).  Lines
	 * longer than 4 KiB are cut.  NULL: none. */
	void (*line)(void *arg, const char *line, size_t len);
	/* The training closed its end (EOF); everything read went on, its
	 * last line included.  Not called by stream_close().  NULL: none. */
	void (*ended)(void *arg);
	void *arg;
};

struct stream_opts {
	int dest_fd;          /* our own stdout or stderr (made non-blocking, output.h) */
	const char *name;     /* "stdout" or "stderr", for messages (borrowed, static) */
	const char *prefix;   /* before every line (--tag-output; copied), NULL: none */
	const char *mark;     /* the lines scanned are those that hold MARK (borrowed,
	                       * static), NULL: every line */
	size_t marklen;
};

/*
 * A stream to O->dest_fd, for the whole job: the output, its line
 * buffer, and the destination watched by L.  Reads nothing until
 * stream_open().  NULL with errno on failure.
 */
struct stream *stream_new(struct loop *l, const struct stream_opts *o,
                          const struct stream_ops *ops);

/*
 * Stop watching everything, give the destination back its blocking mode
 * (output_free()), free.  The read end is not closed: it is C's
 * (child_free() closes it).  NULL is a no-op.
 */
void stream_free(struct stream *s);

/*
 * Read FD, one of C's read ends (child_stdout_fd(), child_stderr_fd()),
 * from now on, at a fresh pace; the output and what waits in it stay.
 * Returns 0, or -ENOMEM.
 */
int stream_open(struct stream *s, struct child *c, int fd);

/*
 * The end without EOF (the training is gone, or its helpers hold the
 * stream open too long): what is held and the line begun go out, the
 * line buffer's last line is scanned, the read end is closed
 * (child_close_fd()).  ops->ended is not called.  A no-op when closed.
 */
void stream_close(struct stream *s);

/* The read end is open (not yet at EOF or closed). */
bool stream_is_open(const struct stream *s);

/*
 * Scan every line (EVERY), or only those that hold the mark (the
 * default): a checkpoint's evidence may be in any line.
 */
void stream_scan_every_line(struct stream *s, bool every);

/*
 * What is read goes to FN (ARG, the bytes) instead of the output while
 * FN is set (a hidden node's stdout, kept in a log); NULL: to the output
 * again.  FN says its own errors.
 */
typedef void stream_sink_fn(void *arg, const char *buf, size_t len);
void stream_divert(struct stream *s, stream_sink_fn *fn, void *arg);

/* Output waits for our reader. */
bool stream_pending(const struct stream *s);

/* Bytes a reader of ours did not take (output_lost()). */
unsigned long long stream_lost(const struct stream *s);

#endif
