/*
 * progress.h - the per-iteration timing lines a training prints (the
 * platform's 性能检测):
 *
 *   this iteration hardware time is 2201.521 and e2e time is 3317.794921875 ms.
 *
 * Recognised in any line of the training's stdout or stderr, also behind a
 * launcher's prefix (torchrun's "[default3]:", vigil's "[node:rank] ",
 * Open MPI's "[1,3]<stdout>:"), with any number format (integer, decimal,
 * exponent).  Pure: no I/O, no allocation per line.
 */
#ifndef VIGIL_PROGRESS_H
#define VIGIL_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct progress_line {
	double hw_ms;         /* hardware time, ms (finite, >= 0) */
	double e2e_ms;        /* end-to-end time, ms (finite, > 0) */
	char key[32];         /* the local process the line came from: the launcher's
	                       * prefix without decoration ("default3", "1,3", "n1:0"),
	                       * or "" when the line has none; NUL to the end */
};

/*
 * Parse LINE[0..LEN) (no newline; may hold any bytes, including NUL and
 * invalid UTF-8).  Returns true and fills *OUT for a timing line, false
 * for anything else.  Cheap on lines that are not timing lines (the common
 * case): it looks at the end of the line before doing anything else.
 */
bool progress_parse(const char *line, size_t len, struct progress_line *out);

/*
 * Bytes every timing line holds, whatever its prefix and numbers: a part
 * of the fixed text between the two numbers, chosen to begin with two
 * bytes that seldom come together in a log.  A line without them is not
 * a timing line (linebuf_feed_marked() looks for them).
 */
#define PROGRESS_MARK "e2e time is "
#define PROGRESS_MARK_LEN (sizeof(PROGRESS_MARK) - 1)

/* The shortest timing line: the fixed texts around two one-digit numbers. */
#define PROGRESS_SHORTEST (sizeof("this iteration hardware time is 1 and e2e time is 1 ms") - 1)

/*
 * Where " ms" starts in LINE[0..LEN) when the line ends like a timing line
 * (" ms", then an optional '.', then blanks or '\r'), else NULL: a few
 * instructions, inline, so that a caller scanning every line of a
 * training's output hands progress_parse() only the few that may be
 * timing lines (one in 20 in a realistic log, fewer in most).
 */
static inline const char *
progress_tail(const char *line, size_t len)
{
	/* The four bytes " ms.", and " ms" after any byte, as they lie in
	 * memory: a word compared to them whatever the host's byte order
	 * (the copies fold into constants). */
	static const unsigned char ms_dot[4] = { ' ', 'm', 's', '.' };
	static const unsigned char any_ms[4] = { 0, ' ', 'm', 's' };
	static const unsigned char last3[4] = { 0, 0xff, 0xff, 0xff };
	const unsigned char *u = (const unsigned char *)line + len;
	const char *end = line + len;
	uint32_t last4, k_dot, k_ms, m3;

	if (len < PROGRESS_SHORTEST)
		return NULL;
	/*
	 * Most lines stop here, on one branch that is almost never taken
	 * (a branch taken at random for one line in ten would cost more
	 * than the test): the last four bytes, one load, are " ms." or end
	 * in " ms", or the last one is a blank or control byte.
	 */
	memcpy(&last4, u - 4, sizeof(last4));
	memcpy(&k_dot, ms_dot, sizeof(k_dot));
	memcpy(&k_ms, any_ms, sizeof(k_ms));
	memcpy(&m3, last3, sizeof(m3));
	if (((last4 == k_dot) | ((last4 & m3) == k_ms) | (u[-1] <= ' ')) == 0)
		return NULL;
	while (end > line && (end[-1] == ' ' || end[-1] == '\r' || end[-1] == '\t'))
		end--;
	/* Without a branch: whether a line ends in '.' is no guess for a predictor. */
	end -= end > line && end[-1] == '.';
	if ((size_t)(end - line) < PROGRESS_SHORTEST ||
	    ((end[-3] ^ ' ') | (end[-2] ^ 'm') | (end[-1] ^ 's')) != 0)
		return NULL;
	return end - 3;
}

#endif
