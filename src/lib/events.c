/*
 * events.c - JSON-lines event log.
 */
#include "autoconf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "lib/events.h"
#include "lib/json.h"

struct events {
	int fd;
	bool regular;  /* a regular file: a torn line can be taken back */
	bool fresh;    /* the log ends in a torn line: the next event starts a new one */
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

/*
 * Open PATH for appending without following a link that another user
 * could have planted: a symbolic link is followed only when it belongs to
 * the caller or root (/dev/stdout is root's), as fs.protected_symlinks
 * does in sticky directories, but everywhere and whatever the sysctl.
 */
static int
open_log(const char *path, char *why, size_t whylen)
{
	const int flags = O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
	struct stat st;
	int fd;

	/* O_NONBLOCK: opening a FIFO for writing otherwise waits for a reader
	 * that may never come, with the whole agent stuck in open(). */
	fd = open(path, flags | O_NOFOLLOW, 0644);
	if (fd >= 0 || errno != ELOOP)
		return fd < 0 ? -errno : fd;
	if (lstat(path, &st) < 0)
		return -errno;
	if (S_ISLNK(st.st_mode) && st.st_uid != geteuid() && st.st_uid != 0) {
		snprintf(why, whylen, "a symbolic link of another user (uid %lu): not followed",
		         (unsigned long)st.st_uid);
		return -ELOOP;
	}
	fd = open(path, flags, 0644);
	return fd < 0 ? -errno : fd;
}

/* The last byte of the regular file FD, or -1 when it is empty or unreadable. */
static int
last_byte(int fd, off_t size)
{
	char proc[64];
	unsigned char c;
	int rfd, b = -1;

	if (size <= 0)
		return -1;
	/* The log is open for writing only; the same file again, to read. */
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	rfd = open(proc, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (rfd < 0)
		return -1;
	if (pread(rfd, &c, 1, size - 1) == 1)
		b = c;
	(void)close(rfd);
	return b;
}

/* A regular file must be the caller's or root's: one another user made in
 * a shared directory could be read by them, or swapped under the agent. */
static int
check_owner(struct events *ev, char *why, size_t whylen)
{
	struct stat st;
	int last;

	if (fstat(ev->fd, &st) < 0)
		return -errno;
	ev->regular = S_ISREG(st.st_mode);
	if (!ev->regular)
		return 0;
	if (st.st_uid != geteuid() && st.st_uid != 0) {
		snprintf(why, whylen, "a file of another user (uid %lu): vigil appends only to "
		         "files of its own user or root", (unsigned long)st.st_uid);
		return -EPERM;
	}
	/* Another name for the same file, made by someone who could not
	 * write it (a hard link to root's file in a shared directory), would
	 * have the agent append to a file it was never named. */
	if (st.st_nlink > 1) {
		snprintf(why, whylen, "a file with %lu hard links (names): vigil appends only to "
		         "a file that has no other name", (unsigned long)st.st_nlink);
		return -EPERM;
	}
	/* A log that a full disk left with half a line (this agent's or an
	 * older one's): the first event goes on a line of its own. */
	last = last_byte(ev->fd, st.st_size);
	ev->fresh = last >= 0 && last != '\n';
	return 0;
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
	ev = calloc(1, sizeof(*ev));
	if (!ev)
		return -ENOMEM;
	ev->fd = open_log(path, why, whylen);
	if (ev->fd < 0) {
		rc = ev->fd;
		if (rc == -ENXIO)
			snprintf(why, whylen, "a FIFO that nobody reads: refused rather than waited on");
		free(ev);
		return rc;
	}
	rc = check_target(ev->fd, why, whylen);
	if (rc == 0)
		rc = check_owner(ev, why, whylen);
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

/*
 * LEN bytes of LINE, whole or not at all: one write() (more only where a
 * pipe or terminal takes it in parts).  When a regular file took part of
 * it (a full disk, a quota, a file size limit), the part is cut off
 * again, where the write put it; what cannot be cut off leaves the next
 * event to start a new line.
 */
static int
write_line(struct events *ev, const char *line, size_t len)
{
	size_t off = 0;
	off_t start = -1;
	int rc = 0;

	while (off < len) {
		ssize_t w = write(ev->fd, line + off, len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			rc = -errno;
			break;
		}
		if (off == 0 && ev->regular) {
			/* O_APPEND put the bytes at the end as it was then, and
			 * the offset after them: where this line began */
			off_t end = lseek(ev->fd, 0, SEEK_CUR);

			start = end >= w ? end - w : -1;
		}
		off += (size_t)w;
	}
	if (rc == 0) {
		ev->fresh = false;
		return 0;
	}
	if (off > 0 && !(start >= 0 && ftruncate(ev->fd, start) == 0))
		ev->fresh = true;
	return rc;
}

int
events_write(struct events *ev, const cJSON *event)
{
	char *text = json_print(event, false), *line;
	size_t len, lead = ev->fresh ? 1 : 0;
	int rc;

	if (!text)
		return -ENOMEM;
	len = strlen(text);
	line = malloc(lead + len + 1);
	if (!line) {
		free(text);
		return -ENOMEM;
	}
	line[0] = '\n';  /* ends the torn line before it, when there is one */
	memcpy(line + lead, text, len);
	line[lead + len] = '\n';
	free(text);
	rc = write_line(ev, line, lead + len + 1);
	free(line);
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
