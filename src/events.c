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

#include "events.h"

struct events {
	int fd;
};

int
events_open(const char *path, struct events **out)
{
	struct events *ev;
	int rc;

	*out = NULL;
	ev = malloc(sizeof(*ev));
	if (!ev)
		return -ENOMEM;
	ev->fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (ev->fd < 0) {
		rc = -errno;
		free(ev);
		return rc;
	}
	*out = ev;
	return 0;
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
