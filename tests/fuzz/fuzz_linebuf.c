/*
 * fuzz_linebuf.c - libFuzzer target for the line buffer's marked feed and
 * the vector search under it.
 *
 * Built and run by `make fuzz` (tests/fuzz/run.sh).  The input's first two
 * bytes choose the feed's chunk size, the cap and the mark; the rest is a
 * training's output, fed in chunks of that size with
 * linebuf_feed_marked(), then flushed.  The lines handed out must be
 * exactly those a model of its contract names, in order: a line read
 * whole within one feed when it holds the mark, a line spanning feeds (or
 * the last one, with no newline) always, each as its first CAP bytes when
 * longer.  Every way of linebuf_find() must agree with memmem() on the
 * whole text.  Besides that it aborts, the sanitizers catch any read past
 * the input.
 */
#include "autoconf.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/linebuf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct got {
	const char *text;       /* the whole input, for the model */
	size_t len, step, cap;
	const char *mark;
	size_t marklen;
	size_t at;              /* where the next line the model expects starts */
	size_t lines;
};

/*
 * The next line the model says is handed out, from G->at on: its bytes
 * and whether it is cut.  False when there is none.
 */
static bool
expect_next(struct got *g, const char **line, size_t *n, bool *cut)
{
	while (g->at < g->len) {
		size_t start = g->at;
		const char *nl = memchr(g->text + start, '\n', g->len - start);
		size_t len = nl ? (size_t)(nl - (g->text + start)) : g->len - start;
		bool whole = nl && start / g->step == (start + len) / g->step;
		bool holds = len >= g->marklen &&
		             memmem(g->text + start, len, g->mark, g->marklen) != NULL;

		g->at = start + len + (nl ? 1 : 0);
		if (!whole || holds) {
			*line = g->text + start;
			*n = len > g->cap ? g->cap : len;
			*cut = len > g->cap;
			return true;
		}
	}
	return false;
}

static void
on_line(const char *line, size_t len, bool truncated, void *arg)
{
	struct got *g = arg;
	const char *want;
	size_t n;
	bool cut;

	if (!expect_next(g, &want, &n, &cut) || n != len || cut != truncated ||
	    (len > 0 && memcmp(want, line, len) != 0))
		abort();
	g->lines++;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const marks[] = { "e2e time is ", "e2", "aaa", "\r" };
	static const size_t caps[] = { 4096, 1, 7, 64 };
	static const enum linebuf_way ways[] = {
		LINEBUF_FIND_BEST, LINEBUF_FIND_MEMMEM, LINEBUF_FIND_VECTOR,
		LINEBUF_FIND_SSE2, LINEBUF_FIND_AVX2,
	};
	struct got g = { 0 };
	struct linebuf *lb;
	const char *want, *line;
	size_t n;
	bool cut;

	if (size < 2)
		return 0;
	g.text = (const char *)data + 2;
	g.len = size - 2;
	g.step = 1 + (size_t)data[0] * 3;
	g.cap = caps[data[1] & 3];
	g.mark = marks[(data[1] >> 2) & 3];
	g.marklen = strlen(g.mark);

	want = g.len >= g.marklen ? memmem(g.text, g.len, g.mark, g.marklen) : NULL;
	for (size_t w = 0; w < sizeof(ways) / sizeof(ways[0]); w++)
		if (linebuf_find(g.text, g.len, g.mark, g.marklen, ways[w]) != want)
			abort();

	lb = linebuf_new(g.cap);
	if (!lb)
		return 0;
	for (size_t at = 0; at < g.len; at += g.step)
		linebuf_feed_marked(lb, g.text + at, g.len - at < g.step ? g.len - at : g.step,
		                    g.mark, g.marklen, on_line, &g);
	linebuf_flush(lb, on_line, &g);
	/* nothing the model expects was left out */
	if (expect_next(&g, &line, &n, &cut) || linebuf_lines(lb) != g.lines)
		abort();
	linebuf_free(lb);
	return 0;
}
