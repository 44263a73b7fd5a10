/*
 * progress.c - recognising the training's per-iteration timing lines.
 *
 * Every line the training writes passes through here, and almost none is
 * a timing line, so rejecting the others must cost next to nothing.  A
 * timing line is anchored at its end -- nothing but an optional '.' and
 * blanks may follow " ms" -- so the check starts there: a line that does
 * not end in " ms" is refused after looking at its last few bytes, with
 * no search through it at all (its length does not matter).  For the
 * rest, the fixed text is expected right after the launcher's tags, and
 * otherwise found by walking back from " ms" over the two numbers.  A cut
 * line, a text quoted in the middle of another line, or an earlier broken
 * copy of the text cannot match: the numbers must be preceded by exactly
 * the fixed text and end the line.
 *
 * Numbers are read by a strict parser of our own rather than strtod(),
 * which follows LC_NUMERIC (a decimal comma in some locales) and accepts
 * hexadecimal, "inf" and "nan".
 *
 * The launcher's prefix.  What comes before the fixed text may be:
 *   - nothing: key "";
 *   - launcher tags, each optionally followed by blanks:
 *       torchrun      "[default3]:" "[rank3]:"     key "default3", "rank3"
 *       Open MPI      "[1,3]<stdout>:" (<stderr>, <stddiag>)    key "1,3"
 *       vigil         "[n1:0] " (--tag-output, NODE:RANK)        key "n1:0"
 *     Tags stacked by nested launchers are joined with '/'
 *     ("[1,3]<stdout>:[default0]:" gives "1,3/default0"), so that each
 *     local process keeps a key of its own;
 *   - anything else (a logger's "2026-11-20 12:00:01 INFO ", a user's
 *     own decoration), instead of tags or after them: ignored.  Such a
 *     line still counts, with the key of the tags before it ("" when
 *     none); a timestamp or a level must not turn every line into a
 *     process of its own.  Tags are recognised only at the start of the
 *     line, and only in the shapes above, for the same reason:
 *     "[12:00:01] " or "[INFO] " is decoration, not a process.
 * A key too long for struct progress_line keeps its first bytes and ends
 * with '~' and a hash of the whole key: the same prefix always gives the
 * same key, and long host names that differ only in their tail (the rank)
 * still give different keys.
 */
#include "autoconf.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "perf/progress.h"

static const char head[] = "this iteration hardware time is ";
static const char middle[] = " and e2e time is ";
#define HEAD_LEN (sizeof(head) - 1)
#define MIDDLE_LEN (sizeof(middle) - 1)
_Static_assert(PROGRESS_SHORTEST == HEAD_LEN + 1 + MIDDLE_LEN + 1 + 3,
               "progress.h's shortest timing line is the fixed texts around two digits");

static uint64_t
load64(const char *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));  /* one unaligned load */
	return v;
}

/* The fixed texts at P?  Word compares, inline: no memcmp() call. */
static bool
is_head(const char *p)
{
	return ((load64(p) ^ load64(head)) | (load64(p + 8) ^ load64(head + 8)) |
	        (load64(p + 16) ^ load64(head + 16)) |
	        (load64(p + 24) ^ load64(head + 24))) == 0;
}

static bool
is_middle(const char *p)
{
	return ((load64(p) ^ load64(middle)) | (load64(p + 8) ^ load64(middle + 8))) == 0 &&
	       p[16] == middle[16];
}

static bool
is_digit(char c)
{
	return (unsigned char)(c - '0') < 10;
}

/*
 * Byte classes, one lookup per byte in the loops that walk a number or a
 * tag: NUM, what a number may hold (what parse_number() accepts, and
 * more); NAME, what a launcher tag's name may hold (host names, torchrun
 * roles, ranks).
 */
enum { NUM = 1, NAME = 2 };
static const unsigned char byte_class[256] = {
	['0'] = NUM | NAME, ['1'] = NUM | NAME, ['2'] = NUM | NAME, ['3'] = NUM | NAME,
	['4'] = NUM | NAME, ['5'] = NUM | NAME, ['6'] = NUM | NAME, ['7'] = NUM | NAME,
	['8'] = NUM | NAME, ['9'] = NUM | NAME,
	['.'] = NUM | NAME, ['-'] = NUM | NAME, ['+'] = NUM, ['_'] = NAME,
	['e'] = NUM | NAME, ['E'] = NUM | NAME,
	['a'] = NAME, ['b'] = NAME, ['c'] = NAME, ['d'] = NAME,
	['f'] = NAME, ['g'] = NAME, ['h'] = NAME, ['i'] = NAME, ['j'] = NAME,
	['k'] = NAME, ['l'] = NAME, ['m'] = NAME, ['n'] = NAME, ['o'] = NAME,
	['p'] = NAME, ['q'] = NAME, ['r'] = NAME, ['s'] = NAME, ['t'] = NAME,
	['u'] = NAME, ['v'] = NAME, ['w'] = NAME, ['x'] = NAME, ['y'] = NAME,
	['z'] = NAME,
	['A'] = NAME, ['B'] = NAME, ['C'] = NAME, ['D'] = NAME,
	['F'] = NAME, ['G'] = NAME, ['H'] = NAME, ['I'] = NAME, ['J'] = NAME,
	['K'] = NAME, ['L'] = NAME, ['M'] = NAME, ['N'] = NAME, ['O'] = NAME,
	['P'] = NAME, ['Q'] = NAME, ['R'] = NAME, ['S'] = NAME, ['T'] = NAME,
	['U'] = NAME, ['V'] = NAME, ['W'] = NAME, ['X'] = NAME, ['Y'] = NAME,
	['Z'] = NAME,
};

static bool
is_class(char c, unsigned char mask)
{
	return byte_class[(unsigned char)c] & mask;
}

/* Bytes of P[0..END) that are decimal digits. */
static size_t
digit_span(const char *p, const char *end)
{
	const char *q = p;

	while (q < end && is_digit(*q))
		q++;
	return (size_t)(q - p);
}

/*
 * Digits eight at a time (the SWAR method from Lemire's "Faster integer
 * parsing", with the run's length found in the same word): a timing
 * carries 10 to 20 digits in runs of 3 to 9, and a digit-by-digit loop is
 * a chain of dependent multiplications and branches.  The bytes are
 * assembled in little-endian order whatever the host's, so the arithmetic
 * holds everywhere (compilers turn it into one load where the host is
 * little-endian).
 */
static inline uint64_t
load_le64(const char *p)
{
	const unsigned char *u = (const unsigned char *)p;

	return (uint64_t)u[0] | (uint64_t)u[1] << 8 | (uint64_t)u[2] << 16 |
	       (uint64_t)u[3] << 24 | (uint64_t)u[4] << 32 | (uint64_t)u[5] << 40 |
	       (uint64_t)u[6] << 48 | (uint64_t)u[7] << 56;
}

static const uint64_t pow10_u64[] = {
	1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000,
};

/*
 * How many of the bytes at P (up to 8, none at or past END) are digits
 * in a row, and their value into *VALUE.  The 8 bytes before P must be
 * readable: a number is always read after the fixed text.
 */
static inline unsigned
leading_digits(const char *p, const char *end, uint64_t *value)
{
	uint64_t v, x, nondigit;
	unsigned n;

	*value = 0;
	if (p >= end)
		return 0;
	if (end - p >= 8)
		v = load_le64(p);
	else
		/* near the end: the 8 bytes before it, shifted down; the NUL
		 * bytes shifted in are no digits (one load: bytes copied to
		 * a buffer and loaded as a word would wait on the stores) */
		v = load_le64(end - 8) >> (8 * (8 - (end - p)));
	x = v ^ 0x3030303030303030u;  /* a digit's byte becomes its value, 0..9 */
	/* A byte >= 10 is no digit: its high bit is set by itself or by
	 * adding 0x76.  A carry out of a byte only reaches later bytes, past
	 * the first non-digit, whose verdict does not matter. */
	nondigit = (x | (x + 0x7676767676767676u)) & 0x8080808080808080u;
	n = nondigit ? (unsigned)__builtin_ctzll(nondigit) / 8 : 8;
	if (n == 0)
		return 0;
	/* the N digits to the top bytes, leading zeros below them */
	x <<= 8 * (8 - n);
	x = (x * 10 + (x >> 8)) & 0x00ff00ff00ff00ffu;
	x = (x * 100 + (x >> 16)) & 0x0000ffff0000ffffu;
	*value = (x * 10000 + (x >> 32)) & 0xffffffffu;
	return n;
}

/*
 * The run of digits at P: appends up to *ROOM of them to *MANT (taking
 * them off *ROOM), skips the others, and returns the end of the run.
 * Inline, so that *MANT and *ROOM stay in registers.
 */
static inline const char *
take_digits(const char *p, const char *end, uint64_t *mant, size_t *room)
{
	uint64_t m = *mant, v;
	size_t r = *room;
	unsigned n;

	while (p < end && (n = leading_digits(p, end, &v)) > 0) {
		if (n <= r) {
			m = m * pow10_u64[n] + v;
			r -= n;
		} else if (r > 0) {
			/* only R more are significant: the others move the point */
			m = m * pow10_u64[r] + v / pow10_u64[n - r];
			r = 0;
		}
		p += n;
		if (n < 8)
			break;
	}
	*mant = m;
	*room = r;
	return p;
}

/* Exact powers of ten: a double holds them all without rounding. */
static const double pow10_exact[] = {
	1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
};
#define POW10_MAX 22

/*
 * MANT * 10^EXP10, infinite past the range of a double.  One correctly
 * rounded operation on exact operands while MANT < 2^53 and |EXP10| <= 22
 * (the result strtod() gives); beyond, within a few units in the last
 * place, which no timing comes near to needing.
 */
static double
scale(uint64_t mant, long exp10)
{
	double v = (double)mant;

	if (mant == 0)
		return 0.0;
	while (exp10 > POW10_MAX && isfinite(v)) {
		v *= pow10_exact[POW10_MAX];
		exp10 -= POW10_MAX;
	}
	while (exp10 < -POW10_MAX && v != 0.0) {
		v /= pow10_exact[POW10_MAX];
		exp10 += POW10_MAX;
	}
	if (exp10 >= 0)
		return v * pow10_exact[exp10 > POW10_MAX ? POW10_MAX : exp10];
	return v / pow10_exact[-exp10 > POW10_MAX ? POW10_MAX : -exp10];
}

/*
 * A decimal number at *PP: DIGITS [. DIGITS] [(e|E) [+|-] DIGITS], or
 * .DIGITS with the same exponent.  No sign, no hexadecimal, no "inf" or
 * "nan".  Advances *PP past it; false when there is none, or when its
 * value is too large for a double.  The 8 bytes before *PP are readable
 * (leading_digits()).
 */
static bool __attribute__((noinline))
parse_number_any(const char **pp, const char *end, double *out)
{
	/*
	 * Significant digits kept: 19 fit in 64 bits and are more than a
	 * double holds; the others only move the decimal point.
	 */
	enum { MANT_DIGITS = 19, EXP_CAP = 100000 };
	const char *p = *pp, *start = p, *q;
	uint64_t mant = 0;
	size_t room = MANT_DIGITS, before;
	long exp10;
	bool digits;

	/* Integer part: leading zeros, then significant digits. */
	while (p < end && *p == '0')
		p++;
	q = take_digits(p, end, &mant, &room);
	exp10 = (long)((size_t)(q - p) - (MANT_DIGITS - room));
	p = q;
	digits = p > start;
	if (p < end && *p == '.') {
		q = ++p;
		if (mant == 0) {
			/* 0.000123: zeros before the first significant digit */
			while (p < end && *p == '0')
				p++;
			exp10 -= (long)(p - q);
		}
		before = room;
		p = take_digits(p, end, &mant, &room);
		exp10 -= (long)(before - room);
		digits = digits || p > q;
	}
	if (!digits)
		return false;
	if (p < end && (*p == 'e' || *p == 'E')) {
		bool neg = false;
		long e = 0;

		p++;
		if (p < end && (*p == '+' || *p == '-'))
			neg = *p++ == '-';
		if (p >= end || !is_digit(*p))
			return false;
		/* Past the cap the value is 0 or infinite anyway. */
		for (; p < end && is_digit(*p); p++)
			if (e < EXP_CAP)
				e = e * 10 + (*p - '0');
		exp10 += neg ? -e : e;
	}
	if (exp10 >= -POW10_MAX && exp10 <= 0 && mant < (uint64_t)1 << 53) {
		/* Every timing a training prints: exact operands, one rounding */
		*out = (double)(int64_t)mant / pow10_exact[-exp10];
	} else {
		*out = scale(mant, exp10);
		if (!isfinite(*out))
			return false;
	}
	*pp = p;
	return true;
}

/*
 * parse_number_any(), with a short way for what trainings print: up to
 * 15 digits in all, no exponent (the value is then one correctly rounded
 * division of exact operands, as the long way computes it too).
 */
static inline bool
parse_number(const char **pp, const char *end, double *out)
{
	const char *q = *pp;
	uint64_t mant = 0, v;
	unsigned ni, nf = 0, n;

	ni = leading_digits(q, end, &mant);
	q += ni;
	if (ni < 8 && q < end && *q == '.') {
		q++;
		do {
			n = leading_digits(q, end, &v);
			mant = mant * pow10_u64[n] + v;
			nf += n;
			q += n;
		} while (n == 8 && nf < 16);
	}
	if (ni >= 8 || ni + nf > 15 || ni + nf == 0 || (q < end && (*q == 'e' || *q == 'E')))
		return parse_number_any(pp, end, out);
	*out = (double)mant / pow10_exact[nf];
	*pp = q;
	return true;
}

/* ---- the key --------------------------------------------------------- */

/* Bytes of P[0..) that are name characters (a host, torchrun's role). */
static size_t
name_span(const char *p, const char *end)
{
	const char *q = p;

	while (q < end && is_class(*q, NAME))
		q++;
	return (size_t)(q - p);
}

/* P[0..END) starts with the string S? */
static bool
starts_with(const char *p, const char *end, const char *s)
{
	size_t n = strlen(s);

	return (size_t)(end - p) >= n && memcmp(p, s, n) == 0;
}

/*
 * One launcher tag at P: its length, blanks after it included, and its
 * name (the text between the brackets) in *NAME, *NAME_LEN; 0 when P does
 * not start with a tag.
 */
static size_t
tag_at(const char *p, const char *end, const char **name, size_t *name_len)
{
	static const char *const streams[] = { "<stdout>:", "<stderr>:", "<stddiag>:" };
	const char *q = p + 1, *close;
	size_t n;

	if (p >= end || *p != '[')
		return 0;
	n = name_span(q, end);
	if (n == 0)
		return 0;
	close = q + n;
	if (close < end && *close == ']' && close + 1 < end && close[1] == ':') {
		/* torchrun: [default3]: */
		p = close + 2;
	} else if (close < end && *close == ']') {
		/* [INFO] and the like: decoration */
		return 0;
	} else if (close < end && *close == ',' && digit_span(q, end) == n &&
	           (n = digit_span(close + 1, end)) > 0 &&
	           close + 1 + n < end && close[1 + n] == ']') {
		size_t i;

		close += 1 + n;
		for (i = 0; i < sizeof(streams) / sizeof(streams[0]); i++)
			if (starts_with(close + 1, end, streams[i]))
				break;
		if (i == sizeof(streams) / sizeof(streams[0]))
			return 0;
		p = close + 1 + strlen(streams[i]);
	} else if (close < end && *close == ':' &&
	           (n = digit_span(close + 1, end)) > 0 &&
	           close + 1 + n < end && close[1 + n] == ']') {
		/* vigil: [NODE:RANK] */
		close += 1 + n;
		p = close + 1;
	} else {
		return 0;
	}
	*name = q;
	*name_len = (size_t)(close - q);
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	return (size_t)(p - (q - 1));
}

/* FNV-1a, 32 bits: small, and good enough to tell host names apart. */
#define FNV_BASIS 2166136261u
#define FNV_PRIME 16777619u

static void
hash_add(uint32_t *h, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		*h = (*h ^ (unsigned char)s[i]) * FNV_PRIME;
}

/*
 * The tags at the start of LINE[0..END), names joined with '/': copied into
 * KEY (up to ROOM bytes) when KEY is not NULL, hashed into *HASH when HASH
 * is not NULL.  Returns the length of the whole key; where the tags end in
 * *AFTER.
 */
static size_t
walk_tags(const char *line, const char *end, char *key, size_t room, uint32_t *hash,
          const char **after)
{
	const char *p = line, *name;
	size_t n, name_len, len = 0;

	while ((n = tag_at(p, end, &name, &name_len)) > 0) {
		if (p != line) {
			if (key && len < room)
				key[len] = '/';
			if (hash)
				hash_add(hash, "/", 1);
			len++;
		}
		if (key && len < room)
			memcpy(key + len, name, name_len < room - len ? name_len : room - len);
		if (hash)
			hash_add(hash, name, name_len);
		len += name_len;
		p += n;
	}
	*after = p;
	return len;
}

/* KEY from the tags at the start of LINE[0..END); returns where they end. */
static const char *
set_key(const char *line, const char *end, char *key)
{
	static const char hex[] = "0123456789abcdef";
	const size_t room = sizeof(((struct progress_line *)0)->key) - 1;
	uint32_t hash = FNV_BASIS;
	const char *after;
	size_t len;
	char *h;

	len = walk_tags(line, end, key, room, NULL, &after);
	if (len <= room) {
		key[len] = '\0';
		return after;
	}
	/* Too long: "<first 22 bytes>~<8 hex digits of the whole key>" */
	(void)walk_tags(line, end, NULL, 0, &hash, &after);
	h = key + room - 9;
	*h++ = '~';
	for (int shift = 28; shift >= 0; shift -= 4)
		*h++ = hex[(hash >> shift) & 0xf];
	*h = '\0';
	return after;
}

/* The start of the run of number characters that ends at END. */
static const char *
number_start(const char *line, const char *end)
{
	while (end > line && is_class(end[-1], NUM))
		end--;
	return end;
}

/*
 * TEXT[0..MS) is the fixed text, a number, " and e2e time is ", a number?
 * The times into *L.
 */
static bool
parse_times(const char *text, const char *ms, struct progress_line *l)
{
	const char *p = text + HEAD_LEN;

	if ((size_t)(ms - text) < HEAD_LEN + 1 + MIDDLE_LEN + 1 || !is_head(text))
		return false;
	if (!parse_number(&p, ms, &l->hw_ms))
		return false;
	if ((size_t)(ms - p) < MIDDLE_LEN + 1 || !is_middle(p))
		return false;
	p += MIDDLE_LEN;
	return parse_number(&p, ms, &l->e2e_ms) && p == ms && l->e2e_ms > 0.0;
}

/*
 * Where the fixed text must start for LINE[0..MS) to end in the times:
 * before the runs of number bytes that end at MS and before the middle
 * text.  NULL when there is no room.
 */
static const char *
text_before(const char *line, const char *ms)
{
	const char *e2e, *mid, *hw;

	e2e = number_start(line, ms);
	if ((size_t)(e2e - line) < HEAD_LEN + 1 + MIDDLE_LEN)
		return NULL;
	mid = e2e - MIDDLE_LEN;
	if (!is_middle(mid))
		return NULL;
	hw = number_start(line, mid);
	if ((size_t)(hw - line) < HEAD_LEN)
		return NULL;
	return hw - HEAD_LEN;
}

/*
 * LINE[0..MS) ends right before " ms".  The text usually follows the
 * launcher's tags at once; where it does not (a logger's decoration in
 * between), it is found by walking back from the end.  Out of line, so
 * that progress_parse() stays a few instructions for every other line.
 */
static bool __attribute__((noinline))
parse_before_ms(const char *line, const char *ms, struct progress_line *out)
{
	struct progress_line l;
	const char *text, *back;

	/* NUL to the end, so that keys compare as whole arrays */
	memset(l.key, 0, sizeof(l.key));
	text = set_key(line, ms, l.key);
	if (!parse_times(text, ms, &l)) {
		back = text_before(line, ms);
		if (!back || back == text || !parse_times(back, ms, &l))
			return false;
	}
	*out = l;
	return true;
}

bool
progress_parse(const char *line, size_t len, struct progress_line *out)
{
	const char *ms = progress_tail(line, len);

	return ms && parse_before_ms(line, ms, out);
}
