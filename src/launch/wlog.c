/*
 * wlog.c - a hidden node's output in a bounded, rotated file.
 */
#include "autoconf.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "launch/wlog.h"
#include "lib/safepath.h"
#include "lib/util.h"

struct wlog {
	char path[PATH_MAX];
	char name[NAME_MAX + 1], old[NAME_MAX + 1];  /* NODE.out, NODE.out.1 */
	struct safepath_dir dir;                      /* held while the log is */
	int fd;
	long long size, max;
};

/* NODE.out in the held directory, created 0600; one of ours that an
 * older vigil left 0644 is made private too. */
static int
open_file(struct wlog *w)
{
	struct stat st;
	int rc;

	w->fd = openat(w->dir.fd, w->name, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC,
	               0600);
	if (w->fd < 0)
		return -errno;
	if (fstat(w->fd, &st) < 0)
		rc = -errno;
	else if (!S_ISREG(st.st_mode))
		rc = -EINVAL;
	else if (st.st_uid != geteuid() || st.st_nlink != 1)
		rc = -EPERM;  /* not made by this user here: not ours to append to */
	else
		rc = (st.st_mode & 07777) != 0600 && fchmod(w->fd, 0600) < 0 ? -errno : 0;
	if (rc < 0) {
		(void)close(w->fd);
		w->fd = -1;
		return rc;
	}
	w->size = (long long)st.st_size;
	return 0;
}

struct wlog *
wlog_open(const char *dir, const char *node, long long max_bytes, char *err, size_t errlen)
{
	struct wlog *w = calloc(1, sizeof(*w));
	char why[PATH_MAX + 200];
	int rc;

	if (!w) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	w->fd = -1;
	safepath_dir_init(&w->dir);
	w->max = max_bytes > 0 ? max_bytes : 1;
	if (snprintf(w->path, sizeof(w->path), "%s/%s.out", dir, node) >= (int)sizeof(w->path) ||
	    snprintf(w->name, sizeof(w->name), "%s.out", node) >= (int)sizeof(w->name) ||
	    snprintf(w->old, sizeof(w->old), "%s.out.1", node) >= (int)sizeof(w->old)) {
		rc = -ENAMETOOLONG;
		snprintf(err, errlen, "the log's path %s/%s.out is too long", dir, node);
		goto fail;
	}
	/* Every directory on the way judged (safepath.h), and the logs'
	 * own made 0700: the training's output is the user's alone. */
	rc = safepath_dir_open(dir, SAFEPATH_MKDIR | SAFEPATH_PARENTS | SAFEPATH_OWN, 0700,
	                       &w->dir, why, sizeof(why));
	if (rc < 0) {
		snprintf(err, errlen, "%s refused: %s", dir, why);
		goto fail;
	}
	rc = open_file(w);
	if (rc < 0) {
		snprintf(err, errlen, "cannot open %s: %s", w->path, rc == -EPERM ?
		         "another user's, or a file with other links" : strerror(-rc));
		goto fail;
	}
	return w;
fail:
	safepath_dir_close(&w->dir);
	free(w);
	errno = -rc;
	return NULL;
}

int
wlog_write(struct wlog *w, const void *buf, size_t len)
{
	int rc;

	if (w->size > 0 && w->size + (long long)len > w->max) {
		/* one older file is kept; the one before it goes */
		(void)close(w->fd);
		w->fd = -1;
		if (renameat(w->dir.fd, w->name, w->dir.fd, w->old) < 0)
			return -errno;
		rc = open_file(w);
		if (rc < 0)
			return rc;
	}
	if (w->fd < 0)
		return -EBADF;
	rc = util_write_all(w->fd, buf, len);
	if (rc == 0)
		w->size += (long long)len;
	return rc;
}

const char *
wlog_path(const struct wlog *w)
{
	return w->path;
}

void
wlog_close(struct wlog *w)
{
	if (!w)
		return;
	if (w->fd >= 0)
		(void)close(w->fd);  /* a log: what was written stays */
	safepath_dir_close(&w->dir);
	free(w);
}
