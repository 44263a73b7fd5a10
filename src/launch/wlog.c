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
#include "lib/util.h"

struct wlog {
	char path[PATH_MAX], old[PATH_MAX];
	int fd;
	long long size, max;
};

static int
open_file(struct wlog *w)
{
	struct stat st;

	w->fd = open(w->path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (w->fd < 0)
		return -errno;
	if (fstat(w->fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		int rc = fstat(w->fd, &st) < 0 ? -errno : -EINVAL;

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
	int rc;

	if (!w) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	w->fd = -1;
	w->max = max_bytes > 0 ? max_bytes : 1;
	if (snprintf(w->path, sizeof(w->path), "%s/%s.out", dir, node) >= (int)sizeof(w->path) ||
	    snprintf(w->old, sizeof(w->old), "%s.1", w->path) >= (int)sizeof(w->old)) {
		rc = -ENAMETOOLONG;
		snprintf(err, errlen, "the log's path %s/%s.out is too long", dir, node);
		goto fail;
	}
	rc = util_mkdir_p(dir, 0755);
	if (rc < 0) {
		snprintf(err, errlen, "cannot make %s: %s", dir, strerror(-rc));
		goto fail;
	}
	rc = util_dir_is_private(dir);
	if (rc < 0) {
		snprintf(err, errlen, "%s is %s", dir, rc == -EPERM ? "another user's" :
		         rc == -EACCES ? "writable by others" : strerror(-rc));
		goto fail;
	}
	rc = open_file(w);
	if (rc < 0) {
		snprintf(err, errlen, "cannot open %s: %s", w->path, strerror(-rc));
		goto fail;
	}
	return w;
fail:
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
		if (rename(w->path, w->old) < 0)
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
	free(w);
}
