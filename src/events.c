/*
 * events.c - JSON-lines event log.
 */
#include "autoconf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "events.h"

struct events {
	int fd;
};

/*
 * What may receive events: a regular file; a pipe or FIFO that a reader
 * holds open already (/dev/stdout in a pipeline); a terminal; /dev/null.
 * Anything else (a device, a FIFO nobody reads) is refused with -EINVAL
 * or -ENXIO and a reason in WHY.
 */
static int
check_target(int fd, char *why, size_t whylen)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (S_ISREG(st.st_mode) || S_ISFIFO(st.st_mode))
		return 0;
	/* /dev/null is character device 1:3 on Linux (devices.txt) */
	if (S_ISCHR(st.st_mode) && (isatty(fd) || (major(st.st_rdev) == 1 && minor(st.st_rdev) == 3)))
		return 0;
	snprintf(why, whylen, "not a regular file, a pipe or a terminal: refused");
	return -EINVAL;
}

int
events_open_why(const char *path, struct events **out, char *why, size_t whylen)
{
	char scratch[160];
	struct events *ev;
	int rc, flags;

	*out = NULL;
	if (!why || whylen == 0) {
		why = scratch;
		whylen = sizeof(scratch);
	}
	why[0] = '\0';
	ev = malloc(sizeof(*ev));
	if (!ev)
		return -ENOMEM;
	/* O_NONBLOCK: opening a FIFO for writing otherwise waits for a reader
	 * that may never come, with the whole agent stuck in open(). */
	ev->fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, 0644);
	if (ev->fd < 0) {
		rc = -errno;
		if (rc == -ENXIO)
			snprintf(why, whylen, "a FIFO that nobody reads: refused rather than waited on");
		free(ev);
		return rc;
	}
	rc = check_target(ev->fd, why, whylen);
	/* Back to blocking writes: an event is written whole (one write), as
	 * on the agent's own stdout. */
	flags = rc == 0 ? fcntl(ev->fd, F_GETFL) : -1;
	if (rc == 0 && (flags < 0 || fcntl(ev->fd, F_SETFL, flags & ~O_NONBLOCK) < 0))
		rc = -errno;
	if (rc < 0) {
		(void)close(ev->fd);  /* nothing was written */
		free(ev);
		return rc;
	}
	*out = ev;
	return 0;
}

int
events_open(const char *path, struct events **out)
{
	return events_open_why(path, out, NULL, 0);
}

void
events_timestamp(char *buf, size_t len)
{
	struct timespec ts;
	struct tm tm;
	char base[32];

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, len, "%s.%03ldZ", base, ts.tv_nsec / 1000000L);
}

cJSON *
events_make(const char *node, int rank, const char *kind, const char *severity,
            const char *message, cJSON *details)
{
	char ts[32];
	cJSON *e = cJSON_CreateObject();

	if (!details)
		details = cJSON_CreateObject();
	if (!e || !details)
		goto fail;
	events_timestamp(ts, sizeof(ts));
	if (!cJSON_AddStringToObject(e, "time", ts) ||
	    !cJSON_AddStringToObject(e, "node", node ? node : "") ||
	    !cJSON_AddNumberToObject(e, "rank", rank) ||
	    !cJSON_AddStringToObject(e, "kind", kind) ||
	    !cJSON_AddStringToObject(e, "severity", severity) ||
	    !cJSON_AddStringToObject(e, "message", message ? message : ""))
		goto fail;
	cJSON_AddItemToObject(e, "details", details);
	return e;
fail:
	cJSON_Delete(e);
	cJSON_Delete(details);
	return NULL;
}

int
events_write(struct events *ev, const cJSON *event)
{
	char *text = cJSON_PrintUnformatted(event);
	size_t len, off = 0;
	int rc = 0;

	if (!text)
		return -ENOMEM;
	len = strlen(text);
	text[len++] = '\n';  /* replaces the NUL: the buffer holds len bytes */
	while (off < len) {
		ssize_t w = write(ev->fd, text + off, len - off);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			break;
		}
		off += (size_t)w;
	}
	free(text);
	return rc;
}

int
events_sync(struct events *ev)
{
	/* A log on a pipe or terminal (--events /dev/stdout) cannot be
	 * synced and needs no syncing. */
	if (fsync(ev->fd) < 0 && errno != EINVAL && errno != EROFS)
		return -errno;
	return 0;
}

int
events_close(struct events *ev)
{
	int rc;

	if (!ev)
		return 0;
	rc = events_sync(ev);
	if (close(ev->fd) < 0 && rc == 0)
		rc = -errno;
	free(ev);
	return rc;
}
