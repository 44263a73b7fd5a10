/*
 * linebuf.h - bytes to lines, for scanning a child's output.
 *
 * Keeps a partial line across feeds, hands out complete lines, flushes an
 * unterminated last line at EOF, and cuts lines longer than the cap (the
 * rest of such a line is skipped up to its newline, and counted).  It
 * performs no I/O and never changes what is passed through: it only sees
 * a copy.
 */
#ifndef VIGIL_LINEBUF_H
#define VIGIL_LINEBUF_H

#include <stdbool.h>
#include <stddef.h>

struct linebuf;

/*
 * LINE is not NUL-terminated, excludes the newline ('\n'; a '\r' before
 * it stays in LINE), and is valid only during the call.  TRUNCATED: the
 * line was longer than the cap and LINE holds its first CAP bytes; it is
 * handed out as soon as it overflows, before its newline arrives.
 */
typedef void linebuf_line_fn(const char *line, size_t len, bool truncated, void *arg);

/* CAP: the longest line kept whole (> 0).  NULL with errno on failure. */
struct linebuf *linebuf_new(size_t cap);
void linebuf_free(struct linebuf *lb);

void linebuf_feed(struct linebuf *lb, const char *data, size_t len,
                  linebuf_line_fn *fn, void *arg);

/*
 * At EOF: hand out the unterminated last line, if any.  LB then starts
 * afresh, as if new (the counts go on).  FN must not feed or flush LB.
 */
void linebuf_flush(struct linebuf *lb, linebuf_line_fn *fn, void *arg);

/* Lines handed out, and how many of them were truncated. */
size_t linebuf_lines(const struct linebuf *lb);
size_t linebuf_truncated(const struct linebuf *lb);

#endif
