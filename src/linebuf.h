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
#include <string.h>

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
 * linebuf_feed(), but a whole line is handed out only when WANT(line,
 * len) is true; the others are counted all the same.  Lines cut for their
 * length, and lines completed from a partial one kept across feeds, are
 * handed out whatever WANT says.  Inline, so that a WANT that is itself
 * an inline function is compiled into the loop: for a caller that wants
 * the few lines of a known shape (timing lines), each other line then
 * costs about what finding its newline does.
 */
static inline void linebuf_feed_if(struct linebuf *lb, const char *data, size_t len,
                                   bool (*want)(const char *line, size_t len),
                                   linebuf_line_fn *fn, void *arg);

/*
 * At EOF: hand out the unterminated last line, if any.  LB then starts
 * afresh, as if new (the counts go on).  FN must not feed or flush LB.
 */
void linebuf_flush(struct linebuf *lb, linebuf_line_fn *fn, void *arg);

/* Lines seen (handed out, or passed over by linebuf_feed_if()), and how many were truncated. */
size_t linebuf_lines(const struct linebuf *lb);
size_t linebuf_truncated(const struct linebuf *lb);

/* ---- the parts of linebuf_feed_if(), for its inline loop only ------------- */

/* The longest line kept whole. */
size_t linebuf_cap(const struct linebuf *lb);

/*
 * Finish what an earlier feed left pending (a partial line, or the rest
 * of a cut one) from DATA[0..LEN): returns the bytes used.
 */
size_t linebuf_resume(struct linebuf *lb, const char *data, size_t len,
                      linebuf_line_fn *fn, void *arg);

/*
 * After the whole lines: count LINES of them (CUT of them cut), and keep
 * REST[0..LEN) (no newline in it) as the next line's start, or hand it
 * out cut.
 */
void linebuf_keep(struct linebuf *lb, const char *rest, size_t len, size_t lines, size_t cut,
                  linebuf_line_fn *fn, void *arg);

static inline void
linebuf_feed_if(struct linebuf *lb, const char *data, size_t len,
                bool (*want)(const char *line, size_t len), linebuf_line_fn *fn, void *arg)
{
	const char *p = data + linebuf_resume(lb, data, len, fn, arg), *end = data + len, *nl;
	size_t cap = linebuf_cap(lb), lines = 0, cut = 0;

	/* Whole lines in the caller's bytes, handed out with no copy: the
	 * loop every byte of a training's output goes through. */
	while (p < end && (nl = (const char *)memchr(p, '\n', (size_t)(end - p))) != NULL) {
		size_t n = (size_t)(nl - p);

		if (n > cap) {
			cut++;
			fn(p, cap, true, arg);
		} else if (want(p, n)) {
			fn(p, n, false, arg);
		}
		lines++;
		p = nl + 1;
	}
	linebuf_keep(lb, p, (size_t)(end - p), lines, cut, fn, arg);
}

#endif
