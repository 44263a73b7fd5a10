/*
 * linebuf.h - bytes to lines, for scanning a child's output.
 *
 * Keeps a partial line across feeds, hands out complete lines, flushes an
 * unterminated last line at EOF, and cuts lines longer than the cap (the
 * rest of such a line is skipped up to its newline, and counted); or
 * hands out only the lines that hold a mark.  It performs no I/O and never changes what is passed through: it only sees
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
 * linebuf_feed() for a caller that wants only the lines that hold MARK
 * (MARKLEN > 0 bytes, no '\n' in it): every line that holds it is handed
 * out (cut, if longer than the cap), and perhaps a few others (a line
 * completed across feeds, a line cut before its newline came); the other
 * lines are passed over, neither split nor counted.  As GNU grep does,
 * MARK is searched for through the whole of DATA rather than line by
 * line, and a line's bounds are found only around a match: for the few
 * lines of a known shape in a training's output (timing lines), every
 * other line costs less than finding its newline would.
 */
void linebuf_feed_marked(struct linebuf *lb, const char *data, size_t len, const char *mark,
                         size_t marklen, linebuf_line_fn *fn, void *arg);
/*
 * At EOF: hand out the unterminated last line, if any.  LB then starts
 * afresh, as if new (the counts go on).  FN must not feed or flush LB.
 */
void linebuf_flush(struct linebuf *lb, linebuf_line_fn *fn, void *arg);

/* Lines handed out (all of them, but for linebuf_feed_marked()), and how many were cut. */
size_t linebuf_lines(const struct linebuf *lb);
size_t linebuf_truncated(const struct linebuf *lb);

/*
 * How linebuf_feed_marked() searches: the best the processor has
 * (LINEBUF_FIND_BEST), or one way by name, for the tests and benchmarks.
 * A way the processor lacks falls back to the next below it (AVX2 to
 * SSE2), one the build lacks to memmem().
 */
enum linebuf_way {
	LINEBUF_FIND_BEST,
	LINEBUF_FIND_MEMMEM,
	LINEBUF_FIND_VECTOR,    /* the compiler's generic vectors (GCC, clang) */
	LINEBUF_FIND_SSE2,      /* x86-64 */
	LINEBUF_FIND_AVX2,      /* x86-64, where the processor has it */
};

/* The first MARK[0..MARKLEN) in DATA[0..LEN), or NULL. */
const char *linebuf_find(const char *data, size_t len, const char *mark, size_t marklen,
                         enum linebuf_way how);

#endif
