/*
 * opts.c - the values of vigil's options: counts, numbers, durations,
 * signals, enumerations and path templates.
 *
 * Each parser accepts exactly its form.  strtol() and strtod() alone take
 * leading blanks, a sign, "0x", exponents, "inf" and "nan", so the text is
 * checked character by character first: "--heartbeat 1e-300" or
 * "--max-resumes -1" is a mistake to name, not a value to take.
 */
#include "autoconf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "conf/opts.h"
#include "lib/sig.h"

static bool
is_digit(char c)
{
	return c >= '0' && c <= '9';
}

int
opts_count(const char *s, long long min, long long max, long long *out)
{
	long long v = 0;
	size_t i;

	if (!s || !s[0])
		return -EINVAL;
	for (i = 0; s[i]; i++) {
		if (!is_digit(s[i]))
			return -EINVAL;
		/* saturate rather than overflow: above any range anyway */
		v = v > (long long)1e17 ? v : v * 10 + (s[i] - '0');
	}
	if (v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

/* Digits with at most one point, at least one digit: the length taken, or 0. */
static size_t
decimal_len(const char *s)
{
	size_t i = 0, digits = 0;
	bool point = false;

	for (;; i++) {
		if (is_digit(s[i])) {
			digits++;
		} else if (s[i] == '.' && !point) {
			point = true;
		} else {
			break;
		}
	}
	/* more than 18 digits is no timing or count anyone means */
	return digits > 0 && digits <= 18 ? i : 0;
}

int
opts_number(const char *s, double min, double max, double *out)
{
	size_t n;
	double v;

	if (!s || !(n = decimal_len(s)) || s[n])
		return -EINVAL;
	v = strtod(s, NULL);
	if (!(v >= min && v <= max))
		return -ERANGE;
	*out = v;
	return 0;
}

/* "A:B" or "A:B:C" fields of digits (at most 9 each) into F; how many, or 0. */
static int
colon_fields(const char *s, unsigned long f[3])
{
	int n = 0;

	for (;;) {
		size_t len = 0;

		while (is_digit(s[len]))
			len++;
		if (len == 0 || len > 9 || n == 3)
			return 0;
		f[n++] = strtoul(s, NULL, 10);
		s += len;
		if (*s == '\0')
			return n;
		if (*s != ':')
			return 0;
		s++;
	}
}

/* "D-HH", "D-HH:MM", "D-HH:MM:SS", "MM:SS", "HH:MM:SS". */
static int
clock_duration(const char *s, double *out)
{
	unsigned long d = 0, f[3] = { 0, 0, 0 };
	const char *dash = strchr(s, '-');
	int n;

	if (dash) {
		size_t len = (size_t)(dash - s);

		if (len == 0 || len > 9 || strspn(s, "0123456789") != len)
			return -EINVAL;
		d = strtoul(s, NULL, 10);
		n = colon_fields(dash + 1, f);
		if (n == 0 || f[0] >= 24 || (n > 1 && f[1] >= 60) || (n > 2 && f[2] >= 60))
			return -EINVAL;
		*out = (double)d * 86400 + (double)f[0] * 3600 + (double)f[1] * 60 + (double)f[2];
		return 0;
	}
	n = colon_fields(s, f);
	if (n == 2 && f[1] < 60) {
		*out = (double)f[0] * 60 + (double)f[1];
		return 0;
	}
	if (n == 3 && f[1] < 60 && f[2] < 60) {
		*out = (double)f[0] * 3600 + (double)f[1] * 60 + (double)f[2];
		return 0;
	}
	return -EINVAL;
}

int
opts_duration(const char *s, double *out, bool *bare)
{
	double v, unit = 1;
	size_t n;
	int rc;

	if (!s || !s[0])
		return -EINVAL;
	if (strchr(s, ':') || strchr(s, '-')) {
		rc = clock_duration(s, &v);
		if (rc < 0)
			return rc;
		if (bare)
			*bare = false;
	} else {
		n = decimal_len(s);
		if (n == 0)
			return -EINVAL;
		if (s[n] && s[n + 1])
			return -EINVAL;
		switch (s[n]) {
		case '\0': unit = 1; break;
		case 's': unit = 1; break;
		case 'm': unit = 60; break;
		case 'h': unit = 3600; break;
		case 'd': unit = 86400; break;
		default: return -EINVAL;
		}
		v = strtod(s, NULL) * unit;
		if (bare)
			*bare = s[n] == '\0';
	}
	if (v > OPTS_DURATION_MAX)
		return -ERANGE;
	*out = v;
	return 0;
}

bool
opts_unit_word(const char *s)
{
	static const char *const words[] = {
		"s", "sec", "secs", "second", "seconds",
		"m", "min", "mins", "minute", "minutes",
		"h", "hr", "hrs", "hour", "hours",
		"d", "day", "days",
	};

	for (size_t i = 0; s && i < sizeof(words) / sizeof(words[0]); i++)
		if (strcasecmp(s, words[i]) == 0)
			return true;
	return false;
}

int
opts_signal_pair(const char *s, int *from, int *to)
{
	char buf[32], *eq;
	int a, b;

	if (!s || strlen(s) >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, strlen(s) + 1);
	eq = strchr(buf, '=');
	if (!eq)
		return -EINVAL;
	*eq = '\0';
	if (sig_parse(buf, &a) < 0 || sig_parse(eq + 1, &b) < 0)
		return -EINVAL;
	*from = a;
	*to = b;
	return 0;
}

int
opts_word(const char *s, const struct opts_word *words, int *out)
{
	for (size_t i = 0; s && words[i].word; i++) {
		if (strcmp(s, words[i].word) == 0) {
			*out = words[i].value;
			return 0;
		}
	}
	return -EINVAL;
}

void
opts_words_list(const struct opts_word *words, char *buf, size_t len)
{
	size_t n = 0, o = 0;

	if (len == 0)
		return;
	buf[0] = '\0';
	while (words[n].word)
		n++;
	for (size_t i = 0; i < n && o < len; i++) {
		int w = snprintf(buf + o, len - o, "%s%s", i == 0 ? "" : i + 1 == n ? " or " : ", ",
		                 words[i].word);

		if (w < 0)
			break;
		o += (size_t)w;
	}
}

int
opts_expand(const char *tmpl, const char *job, const char *node, const char *user,
            char *buf, size_t len)
{
	size_t o = 0;

	if (len == 0)
		return -ENAMETOOLONG;
	for (const char *p = tmpl; *p; p++) {
		const char *add = p;
		size_t n = 1;

		if (*p == '%') {
			p++;
			switch (*p) {
			case 'j': add = job; break;
			case 'n': add = node; break;
			case 'u': add = user; break;
			case '%': add = "%"; break;
			default: return -EINVAL;  /* also a '%' at the end */
			}
			n = strlen(add);
		}
		if (o + n >= len)
			return -ENAMETOOLONG;
		memcpy(buf + o, add, n);
		o += n;
	}
	buf[o] = '\0';
	return 0;
}
