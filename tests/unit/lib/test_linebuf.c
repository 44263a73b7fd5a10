/*
 * test_linebuf.c - splitting bytes into lines: boundaries, caps, flushing.
 */
#include "autoconf.h"

#include "../vigil_test.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/linebuf.h"

struct line {
	char *data;
	size_t len;
	bool truncated;
};

/* What the callback was handed, in order. */
struct lines {
	struct line *v;
	size_t n, cap;
};

static void
lines_clear(struct lines *ls)
{
	for (size_t i = 0; i < ls->n; i++)
		free(ls->v[i].data);
	ls->n = 0;
}

static void
lines_add(struct lines *ls, const char *data, size_t len, bool truncated)
{
	struct line *l;

	if (ls->n == ls->cap) {
		ls->cap = ls->cap ? 2 * ls->cap : 16;
		ls->v = realloc(ls->v, ls->cap * sizeof(*ls->v));
		assert_non_null(ls->v);
	}
	l = &ls->v[ls->n++];
	l->data = malloc(len ? len : 1);
	assert_non_null(l->data);
	if (len)
		memcpy(l->data, data, len);
	l->len = len;
	l->truncated = truncated;
}

static void
on_line(const char *line, size_t len, bool truncated, void *arg)
{
	lines_add(arg, line, len, truncated);
}

static int
setup(void **state)
{
	struct lines *ls = calloc(1, sizeof(*ls));

	if (!ls)
		return -1;
	*state = ls;
	return 0;
}

static int
teardown(void **state)
{
	struct lines *ls = *state;

	lines_clear(ls);
	free(ls->v);
	free(ls);
	return 0;
}

static void
assert_line(const struct lines *ls, size_t i, const char *want, size_t len,
            bool truncated)
{
	assert_true(i < ls->n);
	assert_int_equal(ls->v[i].len, len);
	if (len)
		assert_memory_equal(ls->v[i].data, want, len);
	assert_int_equal(ls->v[i].truncated, truncated);
}

#define ASSERT_LINE(ls, i, s, t) assert_line((ls), (i), (s), sizeof(s) - 1, (t))

/* The expected split of TEXT, computed on the whole text at once. */
static void
reference_split(const char *text, size_t len, size_t cap, struct lines *out)
{
	size_t start = 0;

	while (start < len) {
		const char *nl = memchr(text + start, '\n', len - start);
		size_t n = nl ? (size_t)(nl - (text + start)) : len - start;

		lines_add(out, text + start, n > cap ? cap : n, n > cap);
		start += n + (nl ? 1 : 0);
	}
}

static void
assert_same_lines(const struct lines *got, const struct lines *want)
{
	assert_int_equal(got->n, want->n);
	for (size_t i = 0; i < want->n; i++) {
		assert_int_equal(got->v[i].len, want->v[i].len);
		if (want->v[i].len)
			assert_memory_equal(got->v[i].data, want->v[i].data, want->v[i].len);
		assert_int_equal(got->v[i].truncated, want->v[i].truncated);
	}
}

static size_t
count_truncated(const struct lines *ls)
{
	size_t n = 0;

	for (size_t i = 0; i < ls->n; i++)
		n += ls->v[i].truncated;
	return n;
}

/* Feeds TEXT cut at the offsets in CUTS (ascending), then flushes, and
 * checks lines and counts against WANT. */
static void
check_cuts(const char *text, size_t len, size_t cap, const size_t *cuts,
           size_t ncuts, const struct lines *want)
{
	struct lines got = { 0 };
	struct linebuf *lb = linebuf_new(cap);
	size_t at = 0;

	assert_non_null(lb);
	for (size_t i = 0; i <= ncuts; i++) {
		size_t end = i < ncuts ? cuts[i] : len;

		linebuf_feed(lb, text + at, end - at, on_line, &got);
		at = end;
	}
	linebuf_flush(lb, on_line, &got);
	assert_same_lines(&got, want);
	assert_int_equal(linebuf_lines(lb), want->n);
	assert_int_equal(linebuf_truncated(lb), count_truncated(want));
	linebuf_free(lb);
	lines_clear(&got);
	free(got.v);
}

/* Every chunk size, every single cut and every pair of cuts. */
static void
check_all_splits(const char *text, size_t len, size_t cap)
{
	struct lines want = { 0 };
	size_t cuts[2];

	reference_split(text, len, cap, &want);
	for (size_t k = 1; k <= len; k++) {
		struct lines got = { 0 };
		struct linebuf *lb = linebuf_new(cap);

		assert_non_null(lb);
		for (size_t at = 0; at < len; at += k)
			linebuf_feed(lb, text + at, len - at < k ? len - at : k, on_line, &got);
		linebuf_flush(lb, on_line, &got);
		assert_same_lines(&got, &want);
		linebuf_free(lb);
		lines_clear(&got);
		free(got.v);
	}
	for (cuts[0] = 0; cuts[0] <= len; cuts[0]++) {
		check_cuts(text, len, cap, cuts, 1, &want);
		for (cuts[1] = cuts[0]; cuts[1] <= len; cuts[1]++)
			check_cuts(text, len, cap, cuts, 2, &want);
	}
	lines_clear(&want);
	free(want.v);
}

#define TEXT(s) s, sizeof(s) - 1

static void
test_all_splits(void **state)
{
	static const struct {
		const char *text;
		size_t len;
	} texts[] = {
		{ TEXT("alpha\nbeta\n\n\ngamma") },
		{ TEXT("\n\n\n") },
		{ TEXT("exactly8\nninechars\n1234567\n") },
		{ TEXT("a\0b\n\xff\xfe\r\n\0\0\0\0\0\0\0\0\0\n\x80") },
		{ TEXT("0123456789abcdefghij\nshort\nxxxxxxxxxxxxxxxxxxxxxxxx") },
		{ TEXT("\r\n\r\nlast\r") },
		{ TEXT("x") },
		{ TEXT("") },
	};
	static const size_t caps[] = { 1, 3, 8, 9, 64 };

	(void)state;
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
		for (size_t j = 0; j < sizeof(caps) / sizeof(caps[0]); j++)
			check_all_splits(texts[i].text, texts[i].len, caps[j]);
}

static void
test_empty_lines(void **state)
{
	struct lines *ls = *state;
	struct linebuf *lb = linebuf_new(16);

	assert_non_null(lb);
	linebuf_feed(lb, TEXT("a\n\nb\n\n"), on_line, ls);
	assert_int_equal(ls->n, 4);
	ASSERT_LINE(ls, 0, "a", false);
	ASSERT_LINE(ls, 1, "", false);
	ASSERT_LINE(ls, 2, "b", false);
	ASSERT_LINE(ls, 3, "", false);
	assert_int_equal(linebuf_lines(lb), 4);
	assert_int_equal(linebuf_truncated(lb), 0);
	linebuf_free(lb);
}

static void
test_partial_across_feeds(void **state)
{
	struct lines *ls = *state;
	struct linebuf *lb = linebuf_new(16);

	assert_non_null(lb);
	linebuf_feed(lb, TEXT("hel"), on_line, ls);
	assert_int_equal(ls->n, 0);
	linebuf_feed(lb, TEXT("lo\nwor"), on_line, ls);
	assert_int_equal(ls->n, 1);
	ASSERT_LINE(ls, 0, "hello", false);
	linebuf_feed(lb, TEXT("ld"), on_line, ls);
	assert_int_equal(ls->n, 1);
	linebuf_feed(lb, TEXT(""), on_line, ls);
	assert_int_equal(ls->n, 1);
	linebuf_flush(lb, on_line, ls);
	assert_int_equal(ls->n, 2);
	ASSERT_LINE(ls, 1, "world", false);
	assert_int_equal(linebuf_lines(lb), 2);
	linebuf_free(lb);
}

static void
test_flush(void **state)
{
	struct lines *ls = *state;
	struct linebuf *lb = linebuf_new(16);

	assert_non_null(lb);
	/* Nothing pending: nothing handed out, nothing counted. */
	linebuf_flush(lb, on_line, ls);
	assert_int_equal(ls->n, 0);
	linebuf_feed(lb, TEXT("done\n"), on_line, ls);
	linebuf_flush(lb, on_line, ls);
	assert_int_equal(ls->n, 1);
	assert_int_equal(linebuf_lines(lb), 1);

	linebuf_feed(lb, TEXT("no newline"), on_line, ls);
	linebuf_flush(lb, on_line, ls);
	linebuf_flush(lb, on_line, ls);
	assert_int_equal(ls->n, 2);
	ASSERT_LINE(ls, 1, "no newline", false);

	/* A flushed buffer starts afresh. */
	linebuf_feed(lb, TEXT("again\n"), on_line, ls);
	assert_int_equal(ls->n, 3);
	ASSERT_LINE(ls, 2, "again", false);
	assert_int_equal(linebuf_lines(lb), 3);
	linebuf_free(lb);
}

static void
test_cap_boundary(void **state)
{
	struct lines *ls = *state;
	struct linebuf *lb = linebuf_new(4);

	assert_non_null(lb);
	linebuf_feed(lb, TEXT("abcd\n"), on_line, ls);
	assert_int_equal(ls->n, 1);
	ASSERT_LINE(ls, 0, "abcd", false);

	/* Cut as soon as the fifth byte arrives, newline or not. */
	linebuf_feed(lb, TEXT("efghi"), on_line, ls);
	assert_int_equal(ls->n, 2);
	ASSERT_LINE(ls, 1, "efgh", true);
	linebuf_feed(lb, TEXT("jk\nz\n"), on_line, ls);
	assert_int_equal(ls->n, 3);
	ASSERT_LINE(ls, 2, "z", false);

	/* Exactly the cap, a byte at a time. */
	linebuf_feed(lb, TEXT("1"), on_line, ls);
	linebuf_feed(lb, TEXT("2"), on_line, ls);
	linebuf_feed(lb, TEXT("34"), on_line, ls);
	assert_int_equal(ls->n, 3);
	linebuf_feed(lb, TEXT("\n"), on_line, ls);
	assert_int_equal(ls->n, 4);
	ASSERT_LINE(ls, 3, "1234", false);

	/* Exactly the cap, unterminated, at EOF. */
	linebuf_feed(lb, TEXT("wxyz"), on_line, ls);
	linebuf_flush(lb, on_line, ls);
	assert_int_equal(ls->n, 5);
	ASSERT_LINE(ls, 4, "wxyz", false);

	assert_int_equal(linebuf_lines(lb), 5);
	assert_int_equal(linebuf_truncated(lb), 1);
	linebuf_free(lb);
}

static void
test_crlf_kept(void **state)
{
	struct lines *ls = *state;
	struct linebuf *lb = linebuf_new(16);

	assert_non_null(lb);
	linebuf_feed(lb, TEXT("a\r\nb\r"), on_line, ls);
	linebuf_feed(lb, TEXT("\n\r"), on_line, ls);
	linebuf_flush(lb, on_line, ls);
	assert_int_equal(ls->n, 3);
	ASSERT_LINE(ls, 0, "a\r", false);
	ASSERT_LINE(ls, 1, "b\r", false);
	ASSERT_LINE(ls, 2, "\r", false);
	linebuf_free(lb);
}

static void
test_binary_bytes(void **state)
{
	struct lines *ls = *state;
	struct linebuf *lb = linebuf_new(8);

	assert_non_null(lb);
	linebuf_feed(lb, TEXT("\0\0x\n\xff\xc3("), on_line, ls);
	linebuf_feed(lb, TEXT("\0\n\0\0\0\0\0\0\0\0\0\n"), on_line, ls);
	assert_int_equal(ls->n, 3);
	ASSERT_LINE(ls, 0, "\0\0x", false);
	ASSERT_LINE(ls, 1, "\xff\xc3(\0", false);
	ASSERT_LINE(ls, 2, "\0\0\0\0\0\0\0\0", true);
	assert_int_equal(linebuf_truncated(lb), 1);
	linebuf_free(lb);
}

#define HUGE_LEN (1024 * 1024)

static void
test_huge_line(void **state)
{
	struct lines *ls = *state;
	struct linebuf *lb = linebuf_new(16);
	char *big = malloc(HUGE_LEN);

	assert_non_null(lb);
	assert_non_null(big);
	for (size_t i = 0; i < HUGE_LEN; i++)
		big[i] = (char)('a' + i % 26);

	/* Unterminated at EOF: handed out once, cut, when it overflowed. */
	for (size_t at = 0; at < HUGE_LEN; at += 4096)
		linebuf_feed(lb, big + at, 4096, on_line, ls);
	assert_int_equal(ls->n, 1);
	ASSERT_LINE(ls, 0, "abcdefghijklmnop", true);
	linebuf_flush(lb, on_line, ls);
	assert_int_equal(ls->n, 1);
	linebuf_feed(lb, TEXT("next\n"), on_line, ls);
	assert_int_equal(ls->n, 2);
	ASSERT_LINE(ls, 1, "next", false);

	/* Terminated later, in one feed: the rest up to the newline is skipped. */
	linebuf_feed(lb, big + 3, HUGE_LEN - 3, on_line, ls);
	linebuf_feed(lb, TEXT("tail\nafter\n"), on_line, ls);
	assert_int_equal(ls->n, 4);
	ASSERT_LINE(ls, 2, "defghijklmnopqrs", true);
	ASSERT_LINE(ls, 3, "after", false);

	assert_int_equal(linebuf_lines(lb), 4);
	assert_int_equal(linebuf_truncated(lb), 2);
	free(big);
	linebuf_free(lb);
}

/* ---- linebuf_find() and linebuf_feed_marked() ----------------------------------- */

static const enum linebuf_way ways[] = {
	LINEBUF_FIND_BEST, LINEBUF_FIND_MEMMEM, LINEBUF_FIND_VECTOR,
	LINEBUF_FIND_SSE2, LINEBUF_FIND_AVX2,
};

/* Every way finds what memmem() finds, in every buffer length up to 300,
 * the mark planted at every offset among decoys of its first bytes. */
static void
test_find(void **state)
{
	static const char *const marks[] = { "e2e time is ", "e2", "e2e", "x", "\0\xff\0" };
	static const size_t lens[] = { 12, 2, 3, 1, 3 };
	char buf[300];

	(void)state;
	for (size_t k = 0; k < sizeof(marks) / sizeof(marks[0]); k++) {
		const char *mark = marks[k];
		size_t n = lens[k];

		for (size_t len = 0; len <= sizeof(buf); len++) {
			for (size_t t = 0; t < 2 * (len + 1); t++) {
				/* with decoys and without: the mark's first bytes every
				 * 7 bytes, and the mark less its last byte */
				size_t at = t / 2;
				bool decoys = t % 2 == 1;

				for (size_t i = 0; i < len; i++)
					buf[i] = !decoys ? 'a' : i % 7 == 0 ? mark[0] :
					         i % 7 == 1 ? mark[1 % n] : 'a';
				if (decoys && len >= n + 1)
					memcpy(buf + (at * 5) % (len - n + 1), mark, n - 1);
				if (at + n <= len)
					memcpy(buf + at, mark, n);
				for (size_t w = 0; w < sizeof(ways) / sizeof(ways[0]); w++) {
					const char *want = len >= n ? memmem(buf, len, mark, n) : NULL;
					const char *got = linebuf_find(buf, len, mark, n, ways[w]);

					if (got != want)
						fail_msg("mark %zu, length %zu, at %zu, way %d: %ld, expected %ld",
						         k, len, at, (int)ways[w], got ? (long)(got - buf) : -1L,
						         want ? (long)(want - buf) : -1L);
				}
			}
		}
	}
}

static bool
same_line(const struct line *a, const struct line *b)
{
	return a->len == b->len && a->truncated == b->truncated &&
	       (a->len == 0 || memcmp(a->data, b->data, a->len) == 0);
}

static bool
holds(const struct line *l, const char *mark, size_t n)
{
	return l->len >= n && memmem(l->data, l->len, mark, n) != NULL;
}

/*
 * GOT is WANT with some lines left out, in order, and none of those left
 * out held MARK (FULL: the lines uncut): a line may be handed out although
 * it does not hold it, never the other way round.  Lines cut to the same
 * bytes look alike, so every way of matching them is tried: ok[i][j],
 * whether GOT from i on is WANT from j on so.
 */
static void
assert_marked(const struct lines *got, const struct lines *want, const struct lines *full,
              const char *mark, size_t n)
{
	size_t w = want->n + 1;
	bool *ok = calloc((got->n + 1) * w, sizeof(*ok));

	assert_non_null(ok);
	ok[got->n * w + want->n] = true;
	for (size_t j = want->n; j-- > 0;) {
		for (size_t i = got->n + 1; i-- > 0;) {
			bool skip = !holds(&full->v[j], mark, n) && ok[i * w + j + 1];
			bool take = i < got->n && same_line(&got->v[i], &want->v[j]) &&
			            ok[(i + 1) * w + j + 1];

			ok[i * w + j] = skip || take;
		}
	}
	assert_true(ok[0]);
	free(ok);
}

/* Every chunk size, every way: the lines that hold MARK are handed out, and counted. */
static void
check_marked_splits(const char *text, size_t len, size_t cap, const char *mark, size_t n)
{
	struct lines want = { 0 }, full = { 0 };

	reference_split(text, len, cap, &want);
	reference_split(text, len, len + 1, &full);
	assert_int_equal(want.n, full.n);
	for (size_t k = 1; k <= len + 1; k++) {
		struct lines got = { 0 };
		struct linebuf *lb = linebuf_new(cap);

		assert_non_null(lb);
		for (size_t at = 0; at < len; at += k)
			linebuf_feed_marked(lb, text + at, len - at < k ? len - at : k, mark, n,
			                    on_line, &got);
		linebuf_flush(lb, on_line, &got);
		assert_marked(&got, &want, &full, mark, n);
		assert_int_equal(linebuf_lines(lb), got.n);
		assert_int_equal(linebuf_truncated(lb), count_truncated(&got));
		linebuf_free(lb);
		lines_clear(&got);
		free(got.v);
	}
	lines_clear(&want);
	free(want.v);
	lines_clear(&full);
	free(full.v);
}

static void
test_marked_splits(void **state)
{
	static const struct {
		const char *text;
		size_t len;
	} texts[] = {
		{ TEXT("alpha\nbeta\n\n\nagamma\nb") },
		{ TEXT("xmk\nb\nmk\nmmk\nabcdefghijklmnopqrstuvwxyzmk\nbcdefghijklmnopqrstuvwxyz\nmkx") },
		{ TEXT("\n\n\nmk") },
		{ TEXT("a\0b\n\xff\xfe\r\nmk\0\0\0\0\0\0\0\0\n\x80") },
	};
	static const size_t caps[] = { 1, 3, 8, 64 };
	char big[700];
	size_t len = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
		for (size_t j = 0; j < sizeof(caps) / sizeof(caps[0]); j++)
			check_marked_splits(texts[i].text, texts[i].len, caps[j], "mk", 2);
	/* Lines long enough for the block search, marks across its blocks of
	 * 64, decoys ("m" alone, "mk" cut by a newline), a line that is only
	 * the mark, and one that holds it twice. */
	for (size_t line = 0; len + 80 < sizeof(big); line++) {
		size_t n = (line * 37) % 75, mk = line % 3 == 0 ? (line * 11) % (n + 1) : SIZE_MAX;

		for (size_t i = 0; i < n; i++)
			big[len + i] = i % 5 == 0 ? 'm' : (char)('a' + (i + line) % 7);
		if (mk != SIZE_MAX && mk + 2 <= n)
			memcpy(big + len + mk, "mk", 2);
		if (line == 4 && n >= 6)
			memcpy(big + len + n - 6, "mk..mk", 6);
		len += n;
		big[len++] = line == 7 ? 'm' : '\n';
		if (line == 7)
			big[len++] = '\n', big[len++] = 'k';
	}
	memcpy(big + len, "mk\n", 3);
	len += 3;
	for (size_t j = 0; j < sizeof(caps) / sizeof(caps[0]); j++)
		check_marked_splits(big, len, caps[j], "mk", 2);
	check_marked_splits(big, len, 4096, "mka", 3);
}

/* Whole lines in one feed: exactly those that hold the mark, cut or not. */
static void
test_marked_whole(void **state)
{
	struct lines *ls = *state;
	struct linebuf *lb = linebuf_new(8);

	assert_non_null(lb);
	linebuf_feed_marked(lb, TEXT("amk\nbanana\nartichoke-mk\nbeetroot-long\n\nmk\nbe"),
	                    "mk", 2, on_line, ls);
	assert_int_equal(ls->n, 3);
	ASSERT_LINE(ls, 0, "amk", false);
	ASSERT_LINE(ls, 1, "artichok", true);
	ASSERT_LINE(ls, 2, "mk", false);
	assert_int_equal(linebuf_lines(lb), 3);
	assert_int_equal(linebuf_truncated(lb), 1);
	/* the partial "be", completed by the next feed, is handed out */
	linebuf_feed_marked(lb, TEXT("et\nbx\nm"), "mk", 2, on_line, ls);
	assert_int_equal(ls->n, 4);
	ASSERT_LINE(ls, 3, "beet", false);
	/* and "m", completed to a mark across feeds */
	linebuf_feed_marked(lb, TEXT("k\n"), "mk", 2, on_line, ls);
	assert_int_equal(ls->n, 5);
	ASSERT_LINE(ls, 4, "mk", false);
	assert_int_equal(linebuf_lines(lb), 5);
	linebuf_free(lb);
}

static void
test_new_rejects_zero_cap(void **state)
{
	struct linebuf *lb;

	(void)state;
	errno = 0;
	lb = linebuf_new(0);
	assert_null(lb);
	assert_int_equal(errno, EINVAL);
	linebuf_free(NULL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_all_splits),
		cmocka_unit_test_setup_teardown(test_empty_lines, setup, teardown),
		cmocka_unit_test_setup_teardown(test_partial_across_feeds, setup, teardown),
		cmocka_unit_test_setup_teardown(test_flush, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cap_boundary, setup, teardown),
		cmocka_unit_test_setup_teardown(test_crlf_kept, setup, teardown),
		cmocka_unit_test_setup_teardown(test_binary_bytes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_huge_line, setup, teardown),
		cmocka_unit_test(test_find),
		cmocka_unit_test(test_marked_splits),
		cmocka_unit_test_setup_teardown(test_marked_whole, setup, teardown),
		cmocka_unit_test(test_new_rejects_zero_cap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
