/*
 * output.h - passing the training's output through to the agent's own.
 *
 * Every byte, in order, unchanged, optionally with a prefix inserted at
 * the start of every line (--tag-output).  Writing never blocks the loop:
 * the destination is made non-blocking, bytes that cannot be written yet
 * wait in a bounded buffer, and the caller stops reading the child while
 * output_room() is 0, so a slow reader slows the training (back-pressure)
 * instead of stalling heartbeats and signals or losing output.
 *
 * O_NONBLOCK belongs to the open file description, so anything else in
 * this process writing to it (stdio on stderr) may see EAGAIN while the
 * reader lags.  Under mpirun each rank's stdout/stderr is its own pipe or
 * pty, so no other rank and not the training (it writes into our pipes)
 * is affected.  None of these functions blocks except output_drain().
 */
#ifndef VIGIL_OUTPUT_H
#define VIGIL_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>

struct output;

/*
 * Output to DEST_FD (set O_NONBLOCK here), buffering up to CAP bytes.
 * NULL with errno on failure.
 */
struct output *output_new(int dest_fd, size_t cap);

/* Insert PREFIX (copied; NULL for none) at the start of every line from now on. */
int output_set_prefix(struct output *o, const char *prefix);

/* Discard instead of writing (--output coordinator on other nodes). */
void output_set_discard(struct output *o, bool discard);

/*
 * Hold up to BYTES pushed bytes instead of writing each push at once (0:
 * write at once, the default).  While the training streams through a
 * pseudo-terminal, which hands out a few KiB a read, writing every read
 * costs a write and a wake-up of our reader per read; held, they go out
 * in fewer, larger writes, whole lines only (output_flush_lines()), so
 * that a line is never cut where another writer's output (another rank's,
 * merged by mpirun) could come in between.  The caller bounds how long
 * bytes wait: it writes them with output_flush_lines() or, setting 0
 * again, output_flush().
 */
void output_set_hold(struct output *o, size_t bytes);

/* Bytes are queued because they are held, none because the destination refused them. */
bool output_held(const struct output *o);

/*
 * output_flush(), but only up to the last newline queued whatever the
 * hold: a line begun stays queued for its end.  Returns as output_flush().
 */
int output_flush_lines(struct output *o);

/*
 * Keep a line begun at the destination's line start (up to BYTES of it;
 * 0: off, the default) until its end is pushed, instead of writing it in
 * pieces.  A writer that puts a line's text and its newline in two
 * writes (Python unbuffered, as torch's launcher runs its workers) is
 * read in two pieces now and then; written so, another writer's line
 * (another rank's, merged by mpirun) can come in between them.  A line
 * the destination has begun goes on at once.  The caller bounds how long
 * it waits: output_line_waits() says it does, output_flush_all() ends it.
 */
void output_set_line_wait(struct output *o, size_t bytes);

/* Bytes of a line begun that wait for its end; 0 when none does. */
size_t output_line_waits(const struct output *o);

/* Write what the destination takes now of all that is queued, a line
 * begun included.  Returns as output_flush(). */
int output_flush_all(struct output *o);

/* How many more child bytes may be pushed now; 0 means stop reading the child. */
size_t output_room(const struct output *o);

/*
 * Queue LEN bytes (the caller read at most output_room() bytes; prefixes
 * may take the buffer past CAP by a bounded amount) and write what the
 * destination takes now.  Returns 0, or a negative errno when the
 * destination failed (-EPIPE when nobody reads it any more; the bytes are
 * then counted as lost and the caller should say so once).  The error is
 * returned once, by whichever of output_push(), output_flush() or
 * output_drain() met it; from then on pushes are dropped and counted as
 * lost, output_room() stays at CAP and nothing is pending.
 */
int output_push(struct output *o, const char *buf, size_t len);

/*
 * Write what the destination takes now (while holding, whole lines only,
 * or all of one line longer than what is held).
 * Returns 1 while bytes it should have taken remain (wait for POLLOUT on
 * output_fd()), 0 when there are none (a line begun may still be held),
 * or a negative errno.
 */
int output_flush(struct output *o);

bool output_pending(const struct output *o);
/* Bytes waiting for the destination, prefixes included. */
size_t output_queued(const struct output *o);
int output_fd(const struct output *o);

/*
 * At the end of the job: write what remains, waiting up to TIMEOUT_MS for
 * the destination (< 0: without limit).  Returns 0, -ETIMEDOUT (bytes left,
 * still pending), or a negative errno.
 */
int output_drain(struct output *o, int timeout_ms);

/*
 * Bytes written, and bytes that could not be delivered (destination gone),
 * both as they appear on the destination, prefixes included.  Discarded
 * bytes count as neither.
 */
unsigned long long output_written(const struct output *o);
unsigned long long output_lost(const struct output *o);

/*
 * Does not close DEST_FD, but gives it back its blocking mode if
 * output_new() changed it (a terminal must not stay non-blocking for the
 * shell); free it after the last use of any other output on the same file.
 * NULL is a no-op.
 */
void output_free(struct output *o);

#endif
