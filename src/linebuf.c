/*
 * linebuf.c - bytes to lines, in memory bounded by the cap.
 *
 * A training job's output is whatever it writes: any bytes, NULs
 * included, lines ended by '\n' alone ("\r\n" leaves the '\r' in the line
 * for the caller to strip or keep).  A job that prints a progress bar
 * with '\r' and never a newline, or dumps a tensor on one line, must not
 * make the agent buffer it whole: past the cap a line is handed out cut,
 * and the rest of it is skipped.
 */
#include "autoconf.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "linebuf.h"

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

size_t
linebuf_cap(const struct linebuf *lb)
{
	return lb->cap;
}

size_t
linebuf_resume(struct linebuf *lb, const char *data, size_t len, linebuf_line_fn *fn, void *arg)
{
	size_t used = 0;

	while (used < len && (lb->len > 0 || lb->skipping))
		used += feed_one(lb, data + used, len - used, fn, arg);
	return used;
}

void
linebuf_keep(struct linebuf *lb, const char *rest, size_t len, size_t lines, size_t cut,
             linebuf_line_fn *fn, void *arg)
{
	lb->lines += lines;
	lb->truncated += cut;
	/* no newline left: kept, or handed out cut (feed_one() takes it all) */
	if (len > 0)
		(void)feed_one(lb, rest, len, fn, arg);
}

static bool
every_line(const char *line, size_t len)
{
	(void)line;
	(void)len;
	return true;
}

void
linebuf_feed(struct linebuf *lb, const char *data, size_t len,
             linebuf_line_fn *fn, void *arg)
{
	linebuf_feed_if(lb, data, len, every_line, fn, arg);
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
