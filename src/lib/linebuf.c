/*
 * linebuf.c - bytes to lines, in memory bounded by the cap.
 *
 * A training job's output is whatever it writes: any bytes, NULs
 * included, lines ended by '\n' alone ("\r\n" leaves the '\r' in the line
 * for the caller to strip or keep).  A job that prints a progress bar
 * with '\r' and never a newline, or dumps a tensor on one line, must not
 * make the agent buffer it whole: past the cap a line is handed out cut,
 * and the rest of it is skipped.  A caller that wants only the lines
 * holding a mark (timing lines) has the mark searched for instead, with
 * vector compares, and no other line split at all.
 */
#include "autoconf.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) && defined(__GNUC__) && defined(__SSE2__)
#include <immintrin.h>
#define HAVE_X86_FIND 1
#endif

#include "lib/linebuf.h"

struct linebuf {
	size_t cap;
	size_t len;     /* bytes of the partial line in buf */
	bool skipping;  /* inside a line already handed out cut */
	size_t lines, truncated;
	char buf[];     /* cap bytes */
};

struct linebuf *
linebuf_new(size_t cap)
{
	struct linebuf *lb;

	if (cap == 0 || cap > SIZE_MAX - sizeof(*lb)) {
		errno = EINVAL;
		return NULL;
	}
	lb = malloc(sizeof(*lb) + cap);
	if (!lb)
		return NULL;
	*lb = (struct linebuf){ .cap = cap };
	return lb;
}

void
linebuf_free(struct linebuf *lb)
{
	free(lb);
}

static void
emit(struct linebuf *lb, const char *line, size_t len, bool truncated,
     linebuf_line_fn *fn, void *arg)
{
	lb->lines++;
	if (truncated)
		lb->truncated++;
	fn(line, len, truncated, arg);
}

/* One step of the general case: DATA[0..LEN) after a partial line or a
 * cut one.  Returns the bytes used. */
static size_t
feed_one(struct linebuf *lb, const char *data, size_t len, linebuf_line_fn *fn, void *arg)
{
	const char *nl = memchr(data, '\n', len);
	size_t n = nl ? (size_t)(nl - data) : len;  /* bytes before '\n' */
	size_t used = nl ? n + 1 : n;

	if (lb->skipping) {
		/* The cut line was counted when it was handed out. */
		lb->skipping = !nl;
	} else if (n > lb->cap - lb->len) {
		/* Handed out as soon as it overflows, newline or not, so
		 * nothing beyond the cap is ever held. */
		memcpy(lb->buf + lb->len, data, lb->cap - lb->len);
		lb->len = 0;
		lb->skipping = !nl;
		emit(lb, lb->buf, lb->cap, true, fn, arg);
	} else if (nl) {
		memcpy(lb->buf + lb->len, data, n);
		n += lb->len;
		lb->len = 0;
		emit(lb, lb->buf, n, false, fn, arg);
	} else {
		memcpy(lb->buf + lb->len, data, n);
		lb->len += n;
	}
	return used;
}

/*
 * Finish what an earlier feed left pending (a partial line, or the rest
 * of a cut one) from DATA[0..LEN): returns the bytes used.
 */
static size_t
resume(struct linebuf *lb, const char *data, size_t len, linebuf_line_fn *fn, void *arg)
{
	size_t used = 0;

	while (used < len && (lb->len > 0 || lb->skipping))
		used += feed_one(lb, data + used, len - used, fn, arg);
	return used;
}

void
linebuf_feed(struct linebuf *lb, const char *data, size_t len, linebuf_line_fn *fn, void *arg)
{
	const char *p = data + resume(lb, data, len, fn, arg), *end = data + len, *nl;

	/* Whole lines in the caller's bytes, handed out with no copy. */
	while (p < end && (nl = memchr(p, '\n', (size_t)(end - p))) != NULL) {
		size_t n = (size_t)(nl - p);

		emit(lb, p, n > lb->cap ? lb->cap : n, n > lb->cap, fn, arg);
		p = nl + 1;
	}
	/* no newline left: kept, or handed out cut */
	if (p < end)
		(void)feed_one(lb, p, (size_t)(end - p), fn, arg);
}

/* ---- finding a mark ------------------------------------------------------------- */

/*
 * 64 places at a time (128 with AVX2) are tested for MARK's first two
 * bytes at once (two compares of unaligned loads), and only where both
 * match are the others compared: a log seldom holds MARK's first two bytes
 * together, so nearly every block costs a few instructions and one branch
 * that is not taken.  With AVX2 or SSE2 on x86-64 (SSE2 is in every one),
 * elsewhere with the compiler's generic vectors (NEON on ARM).  Each
 * leaves the last bytes, where a block and MARK no longer fit, to
 * memmem(), which alone is slower than finding every newline.  The caller
 * guarantees MARKLEN >= 2.
 */
#if defined(__GNUC__)
static const char *
match_in(const char *p, uint64_t m, const char *mark, size_t n)
{
	for (; m != 0; m &= m - 1) {
		const char *at = p + __builtin_ctzll(m);

		if (memcmp(at + 2, mark + 2, n - 2) == 0)
			return at;
	}
	return NULL;
}

typedef unsigned char vec16 __attribute__((vector_size(16)));
typedef uint64_t vec2x64 __attribute__((vector_size(16)));

static inline vec16
pair_vec(const char *p, vec16 c0, vec16 c1)
{
	vec16 a, b;

	memcpy(&a, p, sizeof(a));
	memcpy(&b, p + 1, sizeof(b));
	return (vec16)((a == c0) & (b == c1));
}

static const char *
find_vector(const char **pp, const char *end, const char *mark, size_t n)
{
	const vec16 c0 = (vec16){ 0 } + (unsigned char)mark[0];
	const vec16 c1 = (vec16){ 0 } + (unsigned char)mark[1];
	const char *p = *pp, *at;

	for (; (size_t)(end - p) >= n + 64; p += 64) {
		vec2x64 any = (vec2x64)(pair_vec(p, c0, c1) | pair_vec(p + 16, c0, c1) |
		                        pair_vec(p + 32, c0, c1) | pair_vec(p + 48, c0, c1));
		uint64_t m = 0;

		if ((any[0] | any[1]) == 0)
			continue;
		for (int k = 0; k < 64; k++)
			m |= (uint64_t)(p[k] == mark[0] && p[k + 1] == mark[1]) << k;
		if ((at = match_in(p, m, mark, n)) != NULL)
			return at;
	}
	*pp = p;
	return NULL;
}
#endif

#ifdef HAVE_X86_FIND
static inline __m128i
pair16(const char *p, __m128i c0, __m128i c1)
{
	return _mm_and_si128(_mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(const void *)p), c0),
	                     _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(const void *)(p + 1)), c1));
}

static const char *
find_sse2(const char **pp, const char *end, const char *mark, size_t n)
{
	const __m128i c0 = _mm_set1_epi8(mark[0]), c1 = _mm_set1_epi8(mark[1]);
	const char *p = *pp, *at;

	for (; (size_t)(end - p) >= n + 64; p += 64) {
		__m128i a = pair16(p, c0, c1), b = pair16(p + 16, c0, c1);
		__m128i c = pair16(p + 32, c0, c1), d = pair16(p + 48, c0, c1);
		uint64_t m;

		if (_mm_movemask_epi8(_mm_or_si128(_mm_or_si128(a, b), _mm_or_si128(c, d))) == 0)
			continue;
		m = (uint64_t)(uint32_t)_mm_movemask_epi8(a) |
		    (uint64_t)(uint32_t)_mm_movemask_epi8(b) << 16 |
		    (uint64_t)(uint32_t)_mm_movemask_epi8(c) << 32 |
		    (uint64_t)(uint32_t)_mm_movemask_epi8(d) << 48;
		if ((at = match_in(p, m, mark, n)) != NULL)
			return at;
	}
	*pp = p;
	return NULL;
}

__attribute__((target("avx2"))) static inline __m256i
pair32(const char *p, __m256i c0, __m256i c1)
{
	return _mm256_and_si256(
		_mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)(const void *)p), c0),
		_mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)(const void *)(p + 1)), c1));
}

/* The places of 64 bytes where A (the first 32) and B hold a pair, as bits. */
__attribute__((target("avx2"))) static inline uint64_t
mask64(__m256i a, __m256i b)
{
	return (uint64_t)(uint32_t)_mm256_movemask_epi8(a) |
	       (uint64_t)(uint32_t)_mm256_movemask_epi8(b) << 32;
}

__attribute__((target("avx2"))) static const char *
find_avx2(const char **pp, const char *end, const char *mark, size_t n)
{
	const __m256i c0 = _mm256_set1_epi8(mark[0]), c1 = _mm256_set1_epi8(mark[1]);
	const char *p = *pp, *at;

	for (; (size_t)(end - p) >= n + 128; p += 128) {
		__m256i a = pair32(p, c0, c1), b = pair32(p + 32, c0, c1);
		__m256i c = pair32(p + 64, c0, c1), d = pair32(p + 96, c0, c1);
		__m256i any = _mm256_or_si256(_mm256_or_si256(a, b), _mm256_or_si256(c, d));

		if (_mm256_testz_si256(any, any))
			continue;
		if ((at = match_in(p, mask64(a, b), mark, n)) != NULL ||
		    (at = match_in(p + 64, mask64(c, d), mark, n)) != NULL)
			return at;
	}
	*pp = p;
	return NULL;
}
#endif

const char *
linebuf_find(const char *data, size_t len, const char *mark, size_t marklen,
             enum linebuf_way how)
{
	const char *p = data, *end = data + len, *at = NULL;

	if (marklen >= 2) {
#ifdef HAVE_X86_FIND
		/* a flag set at start-up, read */
		bool avx2 = __builtin_cpu_supports("avx2");

		if (how == LINEBUF_FIND_BEST)
			how = avx2 ? LINEBUF_FIND_AVX2 : LINEBUF_FIND_SSE2;
		if (how == LINEBUF_FIND_AVX2 && !avx2)
			how = LINEBUF_FIND_SSE2;
		if (how == LINEBUF_FIND_AVX2)
			at = find_avx2(&p, end, mark, marklen);
		else if (how == LINEBUF_FIND_SSE2)
			at = find_sse2(&p, end, mark, marklen);
#endif
#if defined(__GNUC__)
		if (how == LINEBUF_FIND_BEST || how == LINEBUF_FIND_VECTOR)
			at = find_vector(&p, end, mark, marklen);
#endif
	}
	if (at)
		return at;
	return marklen <= (size_t)(end - p) ? memmem(p, (size_t)(end - p), mark, marklen) : NULL;
}

void
linebuf_feed_marked(struct linebuf *lb, const char *data, size_t len, const char *mark,
                    size_t marklen, linebuf_line_fn *fn, void *arg)
{
	const char *p = data + resume(lb, data, len, fn, arg), *end = data + len, *at;
	const char *last = p < end ? memrchr(p, '\n', (size_t)(end - p)) : NULL;

	if (last) {
		/* The whole lines are [p, last]: a mark (no '\n' in it) that
		 * begins before LAST ends before it too. */
		while (p < last &&
		       (at = linebuf_find(p, (size_t)(last - p), mark, marklen, LINEBUF_FIND_BEST))) {
			const char *start = memrchr(p, '\n', (size_t)(at - p));
			const char *nl = memchr(at + marklen, '\n', (size_t)(last + 1 - (at + marklen)));
			size_t n;

			start = start ? start + 1 : p;
			n = (size_t)(nl - start);
			emit(lb, start, n > lb->cap ? lb->cap : n, n > lb->cap, fn, arg);
			p = nl + 1;
		}
		p = last + 1;
	}
	/* no newline left: kept, or handed out cut */
	if (p < end)
		(void)feed_one(lb, p, (size_t)(end - p), fn, arg);
}

void
linebuf_flush(struct linebuf *lb, linebuf_line_fn *fn, void *arg)
{
	size_t n = lb->len;

	/* A cut line pending its newline was handed out already. */
	lb->skipping = false;
	if (n == 0)
		return;
	lb->len = 0;
	emit(lb, lb->buf, n, false, fn, arg);
}

size_t
linebuf_lines(const struct linebuf *lb)
{
	return lb->lines;
}

size_t
linebuf_truncated(const struct linebuf *lb)
{
	return lb->truncated;
}
