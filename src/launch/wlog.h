/*
 * wlog.h - a node's training output kept in a file of its own when it is
 * not shown (`vigil run --output coordinator`): hidden from the job's
 * output, as the platform hides its workers' sub-tasks, but not lost.
 *
 * DIR/NODE.out, bounded: past MAX bytes it is renamed DIR/NODE.out.1
 * (replacing an older one) and a new one begins, so a node never keeps
 * more than twice MAX.  The logs are the user's alone: every directory on
 * the way to DIR is judged as lib/safepath.h says (no link, none of
 * another user's or writable by others but a sticky one), DIR is made
 * when missing, with its parents, mode 0700, and must belong to the
 * agent's user and be writable by nobody else (one that exists keeps its
 * mode: the user's way to share the logs); the files are made 0600 in the
 * directory held open, without following links.  Writes are plain
 * write()s to a regular file from the agent's loop.
 */
#ifndef VIGIL_WLOG_H
#define VIGIL_WLOG_H

#include <stddef.h>

struct wlog;

/*
 * Open (append to) DIR/NODE.out.  NULL with errno, and the reason for
 * people in ERR.
 */
struct wlog *wlog_open(const char *dir, const char *node, long long max_bytes, char *err,
                       size_t errlen);

/* LEN bytes of BUF, rotating first when they would pass the bound.  0 or a negative errno. */
int wlog_write(struct wlog *w, const void *buf, size_t len);

/* DIR/NODE.out */
const char *wlog_path(const struct wlog *w);

/* NULL is a no-op. */
void wlog_close(struct wlog *w);

#endif
