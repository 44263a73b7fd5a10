/*
 * log.c - diagnostics on stderr, one line per call.
 */
#include "autoconf.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "lib/log.h"

static char log_node[64] = "?";
static int log_rank = -1;
static enum log_level log_level = LOG_LEVEL_WARN;

static const char *const level_names[] = { "error", "warning", "info", "debug" };

void
log_set_identity(const char *node, int rank)
{
	snprintf(log_node, sizeof(log_node), "%s", node ? node : "?");
	log_rank = rank;
}

void
log_set_level(enum log_level level)
{
	log_level = level;
}

enum log_level
log_get_level(void)
{
	return log_level;
}

void
log_msg(enum log_level level, const char *fmt, ...)
{
	char line[1024];
	int saved = errno;  /* callers may log before reading errno */
	int len;
	va_list ap;

	if (level > log_level)
		return;
	if (log_rank >= 0)
		len = snprintf(line, sizeof(line), "vigil[%s:%d:%ld] %s: ", log_node,
		               log_rank, (long)getpid(), level_names[level]);
	else
		len = snprintf(line, sizeof(line), "vigil[%s:%ld] %s: ", log_node,
		               (long)getpid(), level_names[level]);
	if (len < 0 || (size_t)len >= sizeof(line))
		len = 0;
	va_start(ap, fmt);
	vsnprintf(line + len, sizeof(line) - (size_t)len, fmt, ap);
	va_end(ap);
	len = (int)strlen(line);
	if (len > 0 && line[len - 1] != '\n' && (size_t)len + 1 < sizeof(line)) {
		line[len++] = '\n';
		line[len] = '\0';
	}
	log_write(line, (size_t)len);
	errno = saved;
}

void
log_write(const char *text, size_t len)
{
	size_t off = 0;

	/* One write() for the whole line keeps it unmixed with other
	 * processes' lines.  `vigil run` makes stderr non-blocking to pass
	 * the training's output through, so wait (briefly) for room rather
	 * than lose a diagnostic. */
	while (off < len) {
		ssize_t w = write(STDERR_FILENO, text + off, len - off);

		if (w >= 0) {
			off += (size_t)w;
		} else if (errno == EAGAIN || errno == EWOULDBLOCK) {
			struct pollfd pfd = { .fd = STDERR_FILENO, .events = POLLOUT };

			if (poll(&pfd, 1, 1000) <= 0)
				return;  /* nobody reads stderr: give up on this line */
		} else if (errno != EINTR) {
			return;
		}
	}
}

void
log_say(const char *fmt, ...)
{
	char text[4096];
	int saved = errno;
	int len;
	va_list ap;

	va_start(ap, fmt);
	len = vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (len > 0)
		log_write(text, (size_t)len < sizeof(text) ? (size_t)len : sizeof(text) - 1);
	errno = saved;
}

void
log_errbuf(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}
