/*
 * test_linebuf.c - splitting bytes into lines: boundaries, caps, flushing.
 */
#include "autoconf.h"

#include "vigil_test.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "linebuf.h"

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

/* ---- linebuf_feed_if() ------------------------------------------------ */

/* The lines a caller wants: those that start with 'a'. */
static bool
starts_with_a(const char *line, size_t len)
{
	return len > 0 && line[0] == 'a';
}

static bool
same_line(const struct line *a, const struct line *b)
{
	return a->len == b->len && a->truncated == b->truncated &&
	       (a->len == 0 || memcmp(a->data, b->data, a->len) == 0);
}

/*
 * GOT is WANT with some lines left out, in order, and none of those left
 * out was wanted or cut: a line may be handed out although not wanted
 * (completed across feeds), never the other way round.
 */
static void
assert_filtered(const struct lines *got, const struct lines *want)
{
	size_t j = 0;

	for (size_t i = 0; i < got->n; i++, j++) {
		while (j < want->n && !same_line(&got->v[i], &want->v[j])) {
			assert_false(want->v[j].truncated);
			assert_false(starts_with_a(want->v[j].data, want->v[j].len));
			j++;
		}
		assert_true(j < want->n);
	}
	for (; j < want->n; j++) {
		assert_false(want->v[j].truncated);
		assert_false(starts_with_a(want->v[j].data, want->v[j].len));
	}
}

/* Every chunk size: lines wanted or cut are handed out, and every line is counted. */
static void
check_filtered_splits(const char *text, size_t len, size_t cap)
{
	struct lines want = { 0 };

	reference_split(text, len, cap, &want);
	for (size_t k = 1; k <= len + 1; k++) {
		struct lines got = { 0 };
		struct linebuf *lb = linebuf_new(cap);

		assert_non_null(lb);
		for (size_t at = 0; at < len; at += k)
			linebuf_feed_if(lb, text + at, len - at < k ? len - at : k, starts_with_a,
			                on_line, &got);
		linebuf_flush(lb, on_line, &got);
		assert_filtered(&got, &want);
		assert_int_equal(linebuf_lines(lb), want.n);
		assert_int_equal(linebuf_truncated(lb), count_truncated(&want));
		linebuf_free(lb);
		lines_clear(&got);
		free(got.v);
	}
	lines_clear(&want);
	free(want.v);
}

static void
test_feed_if_splits(void **state)
{
	static const struct {
		const char *text;
		size_t len;
	} texts[] = {
		{ TEXT("alpha\nbeta\n\n\nagamma\nb") },
		{ TEXT("a\nb\na\nb\nabcdefghijklmnopqrstuvwxyz\nbcdefghijklmnopqrstuvwxyz\nax") },
		{ TEXT("\n\n\na") },
		{ TEXT("a\0b\n\xff\xfe\r\na\0\0\0\0\0\0\0\0\n\x80") },
	};
	static const size_t caps[] = { 1, 3, 8, 64 };

	(void)state;
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
		for (size_t j = 0; j < sizeof(caps) / sizeof(caps[0]); j++)
			check_filtered_splits(texts[i].text, texts[i].len, caps[j]);
}

/* Whole lines in one feed: exactly the wanted ones and the cut ones. */
static void
test_feed_if_whole(void **state)
{
	struct lines *ls = *state;
	struct linebuf *lb = linebuf_new(8);

	assert_non_null(lb);
	linebuf_feed_if(lb, TEXT("apple\nbanana\nartichoke-long\nbeetroot-long\n\nand\nbe"),
	                starts_with_a, on_line, ls);
	assert_int_equal(ls->n, 4);
	ASSERT_LINE(ls, 0, "apple", false);
	ASSERT_LINE(ls, 1, "artichok", true);
	ASSERT_LINE(ls, 2, "beetroot", true);
	ASSERT_LINE(ls, 3, "and", false);
	assert_int_equal(linebuf_lines(lb), 6);
	assert_int_equal(linebuf_truncated(lb), 2);
	/* the partial "be", completed by the next feed, is handed out */
	linebuf_feed_if(lb, TEXT("et\nbx\n"), starts_with_a, on_line, ls);
	assert_int_equal(ls->n, 5);
	ASSERT_LINE(ls, 4, "beet", false);
	assert_int_equal(linebuf_lines(lb), 8);
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
		cmocka_unit_test(test_feed_if_splits),
		cmocka_unit_test_setup_teardown(test_feed_if_whole, setup, teardown),
		cmocka_unit_test(test_new_rejects_zero_cap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
