/*
 * pace.h - when to read a fast writer's pipe again.
 *
 * A training that prints line by line makes one write() per line.  An
 * agent that reads as soon as poll() says there is something wakes for a
 * line or two each time, and each wake-up (poll, read, write, and the
 * scheduler between them) costs about what the training paid to write
 * them: on a machine with few cores the training then runs slower for
 * being watched.  A pipe holds plenty (node.c asks for 1 MiB), so while
 * data keeps coming the agent may leave it alone for a fraction of a
 * millisecond and take a whole chunk in one read.  This decides how long:
 * long enough for about one read's worth at the rate just seen, never
 * long enough to fill half the pipe (the writer must never wait on us),
 * never more than PACE_MAX_US (the delay a line of output can see), and
 * not at all for a stream that writes now and then, which a wake-up per
 * write serves best.  A pseudo-terminal holds only a few KiB and hands
 * out 4 KiB a read: it is never left to fill.
 *
 * Pure arithmetic on the caller's clock, so it is tested without pipes.
 */
#ifndef VIGIL_PACE_H
#define VIGIL_PACE_H

#include <stddef.h>
#include <stdint.h>

#define PACE_MAX_US 1000       /* the longest a stream is left to fill */
#define PACE_MIN_US 50         /* shorter waits are not worth a timer */
#define PACE_SPARSE_US 4000    /* empty again after longer than this: not a stream to gather */
#define PACE_MIN_BYTES 1024    /* less than this in a wait: a wake-up per write serves as well */

struct pace {
	size_t capacity;    /* what the pipe holds; 0: never left to fill */
	size_t target;      /* bytes one read takes */
	uint64_t empty_us;  /* when it was last read empty; 0: not yet */
	size_t since;       /* bytes read since then */
};

/* A stream read TARGET bytes at a time from a pipe of CAPACITY (0: a pty or unknown). */
void pace_init(struct pace *p, size_t capacity, size_t target);

/* N more bytes were read. */
static inline void
pace_got(struct pace *p, size_t n)
{
	p->since += n;
}

/*
 * The stream was read empty (a short read) at NOW_US: how long to leave
 * it before reading again, in us; 0 to wait on it in poll() as usual.
 */
long pace_empty(struct pace *p, uint64_t now_us);

#endif
