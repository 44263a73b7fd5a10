/*
 * events.h - the event log: JSON lines, one object per event.
 *
 * The schema is in include/vigil.h.  Each event is written with one
 * write() to a file opened with O_APPEND, so a requeued job appends to the
 * log of its earlier runs and a reader never sees half a line from us:
 * an event is written whole or not at all, and is valid UTF-8.
 */
#ifndef VIGIL_EVENTS_H
#define VIGIL_EVENTS_H

#include <stddef.h>
#include <cJSON.h>

struct events;

/*
 * Open (create, append) PATH without ever blocking: a regular file, or a
 * pipe or FIFO a reader already holds open (--events /dev/stdout in a
 * pipeline), a terminal, or /dev/null.  A FIFO nobody reads is refused
 * (-ENXIO), and so is any other kind of file (-EINVAL).  On a shared node
 * (vigil as root): a symbolic link is followed only when it belongs to
 * the caller or root (-ELOOP), and a regular file must belong to one of
 * them (-EPERM).  Returns 0 or a negative errno.
 */
int events_open(const char *path, struct events **out);

/* As events_open(), with a reason in WHY (WHYLEN bytes; empty when errno
 * says it all) for what strerror() would not explain. */
int events_open_why(const char *path, struct events **out, char *why, size_t whylen);

/*
 * Build one event object (see include/vigil.h).  DETAILS is taken over
 * (NULL gives an empty object).  Returns NULL on allocation failure.
 */
cJSON *events_make(const char *node, int rank, const char *kind,
                   const char *severity, const char *message, cJSON *details);

/* Format now as "2026-11-20T23:35:08.123Z" into BUF (at least 32 bytes). */
void events_timestamp(char *buf, size_t len);

/*
 * Write EVENT (borrowed) as one line, whole or not at all: a part that a
 * full disk let through is cut off again (and where that cannot be done,
 * the next event starts a new line, as the first one does after a log
 * that ends in half a line).  Strings that are not valid UTF-8 are
 * repaired (json_print()).  Returns 0 or a negative errno (-ENOSPC,
 * -EDQUOT, -EFBIG, -EPIPE...); on error the file keeps every earlier event.
 */
int events_write(struct events *ev, const cJSON *event);

/* fsync the log.  Returns 0 or a negative errno. */
int events_sync(struct events *ev);

/* fsync and close; returns the first error seen.  NULL is a no-op. */
int events_close(struct events *ev);

#endif
