/*
 * rundir.c - the private run directory for a node's hostfiles.
 */
#include "autoconf.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "launch/rundir.h"
#include "lib/util.h"

/*
 * Whether entries of directory DIR are safe from other users: they could
 * rename or replace them when they own DIR, or may write to it without
 * the sticky bit (which limits renames to an entry's owner, as in /tmp).
 * 0, -EPERM (another user's), -EACCES (writable by others, not sticky),
 * -ENOTDIR, or the errno of stat(); *ST gets what stat() said.
 */
static int
entries_safe(const char *dir, struct stat *st)
{
	if (stat(dir, st) < 0)
		return -errno;
	if (!S_ISDIR(st->st_mode))
		return -ENOTDIR;
	if (st->st_uid != geteuid() && st->st_uid != 0)
		return -EPERM;
	if ((st->st_mode & 022) && !(st->st_mode & S_ISVTX))
		return -EACCES;
	return 0;
}

/* PATH's parent directory into BUF ("." when PATH has no slash). */
static int
parent_of(const char *path, char *buf, size_t len)
{
	size_t n = strlen(path);

	while (n > 1 && path[n - 1] == '/')
		n--;  /* "dir/" names dir */
	while (n > 0 && path[n - 1] != '/')
		n--;
	while (n > 1 && path[n - 1] == '/')
		n--;
	if (n == 0) {
		snprintf(buf, len, ".");
		return 0;
	}
	if (n >= len)
		return -ENAMETOOLONG;
	memcpy(buf, path, n);
	buf[n] = '\0';
	return 0;
}

/* Why GIVEN's parent PARENT (stat in ST) is no place for it, into ERR. */
static int
parent_refused(int rc, const char *given, const char *parent, const struct stat *st,
               char *err, size_t errlen)
{
	if (rc == -EPERM)
		snprintf(err, errlen, "--run-dir %s is in %s, a directory of another user (uid "
		         "%lu), who could replace it and the hostfiles in it: use a directory of "
		         "your own", given, parent, (unsigned long)st->st_uid);
	else if (rc == -EACCES)
		snprintf(err, errlen, "--run-dir %s is in %s, which others may write to (mode "
		         "%04o, no sticky bit): they could replace it and the hostfiles in it; use "
		         "a directory of your own", given, parent, (unsigned)(st->st_mode & 07777));
	else
		snprintf(err, errlen, "--run-dir %s: cannot use its parent directory %s: %s", given,
		         parent, strerror(-rc));
	return rc == -ENOENT || rc == -ENOTDIR || rc == -EACCES || rc == -EPERM ||
	       rc == -ENAMETOOLONG ? -EINVAL : rc;
}

/* Why GIVEN itself (util_dir_is_private() said RC) cannot be used, into ERR. */
static void
dir_refused(int rc, const char *given, char *err, size_t errlen)
{
	struct stat st;

	if (lstat(given, &st) < 0)
		memset(&st, 0, sizeof(st));
	switch (rc) {
	case -ELOOP:
		snprintf(err, errlen, "--run-dir %s is a symbolic link: name the directory itself "
		         "(whoever can change the link could point it elsewhere)", given);
		break;
	case -ENOTDIR:
		snprintf(err, errlen, "--run-dir %s is not a directory", given);
		break;
	case -EPERM:
		snprintf(err, errlen, "--run-dir %s belongs to another user (uid %lu), who could "
		         "replace the hostfiles in it: use a directory of your own", given,
		         (unsigned long)st.st_uid);
		break;
	case -EACCES:
		snprintf(err, errlen, "--run-dir %s is writable by others (mode %04o): anyone could "
		         "replace the hostfiles in it; `chmod go-w` it, or use another directory",
		         given, (unsigned)(st.st_mode & 07777));
		break;
	default:
		snprintf(err, errlen, "--run-dir %s: %s", given, strerror(-rc));
		break;
	}
}

/* GIVEN as --run-dir: refused when unsafe, created (0700) when absent. */
static int
prepare_given(struct rundir *rd, const char *name, char *err, size_t errlen)
{
	char parent[4096], given[4096];
	size_t len = strlen(name);
	struct stat st;
	int rc;

	if (len == 0 || len >= sizeof(rd->path) - 64) {
		snprintf(err, errlen, "--run-dir: give a directory path of 1 to 4000 characters");
		return -EINVAL;
	}
	/* "link/" would have lstat() follow the link: the name without them */
	while (len > 1 && name[len - 1] == '/')
		len--;
	memcpy(given, name, len);
	given[len] = '\0';
	rc = parent_of(given, parent, sizeof(parent));
	if (rc == 0)
		rc = entries_safe(parent, &st);
	if (rc < 0)
		return parent_refused(rc, given, parent, &st, err, errlen);
	if (mkdir(given, 0700) == 0) {
		rd->made = true;
		/* 0700 whatever the umask took away: the owner writes here */
		if (chmod(given, 0700) < 0) {
			rc = -errno;
			snprintf(err, errlen, "cannot set the mode of --run-dir %s: %s", given,
			         strerror(-rc));
			goto undo;
		}
	} else if (errno != EEXIST) {
		rc = -errno;
		snprintf(err, errlen, "cannot create --run-dir %s: %s", given, strerror(-rc));
		return rc == -EACCES || rc == -EROFS || rc == -ENAMETOOLONG ? -EINVAL : rc;
	}
	/* Existing or just made: checked the same way (another agent of the
	 * job on this host may have made it a moment ago). */
	rc = util_dir_is_private(given);
	if (rc < 0) {
		dir_refused(rc, given, err, errlen);
		goto undo;
	}
	snprintf(rd->path, sizeof(rd->path), "%s", given);
	return 0;
undo:
	if (rd->made)
		(void)rmdir(given);
	rd->made = false;
	return rc;
}

/* A new private directory under TMPDIR, or /tmp when TMPDIR is not fit. */
static int
prepare_default(struct rundir *rd, const char *tmpdir, char *err, size_t errlen, char *warn,
                size_t warnlen)
{
	const char *parent = "/tmp";
	struct stat st;
	int rc;

	if (tmpdir && *tmpdir) {
		rc = tmpdir[0] == '/' ? entries_safe(tmpdir, &st) : -EINVAL;
		if (rc == 0)
			parent = tmpdir;
		else
			snprintf(warn, warnlen, "TMPDIR %s is no place for the run directory (%s): "
			         "using /tmp", tmpdir,
			         rc == -EINVAL ? "not an absolute path" :
			         rc == -EPERM ? "another user's directory" :
			         rc == -EACCES ? "writable by others, without the sticky bit" :
			         strerror(-rc));
	}
	if (parent != tmpdir && (rc = entries_safe(parent, &st)) < 0) {
		snprintf(err, errlen, "no safe place for the run directory: /tmp %s; give one with "
		         "--run-dir", rc == -EPERM ? "belongs to another user" :
		         rc == -EACCES ? "is writable by others without the sticky bit" :
		         strerror(-rc));
		return rc == -EPERM || rc == -EACCES ? -EINVAL : rc;
	}
	rc = util_private_dir(parent, "vigil", rd->path, sizeof(rd->path));
	if (rc < 0) {
		snprintf(err, errlen, "cannot create the run directory in %s: %s", parent,
		         strerror(-rc));
		rd->path[0] = '\0';
		return rc;
	}
	rd->made = true;
	/* mkdtemp() made it 0700 less the umask: the owner must write here.
	 * Then the same check as a given one, for what cannot happen. */
	if (chmod(rd->path, 0700) < 0 || (rc = util_dir_is_private(rd->path)) < 0) {
		rc = rc < 0 ? rc : -errno;
		snprintf(err, errlen, "the run directory %s: %s", rd->path, strerror(-rc));
		(void)rundir_release(rd);
		return rc;
	}
	return 0;
}

int
rundir_prepare(struct rundir *rd, const char *given, const char *tmpdir, char *err,
               size_t errlen, char *warn, size_t warnlen)
{
	char scratch[8];

	if (!err || errlen == 0) {
		err = scratch;
		errlen = sizeof(scratch);
	}
	if (warn && warnlen)
		warn[0] = '\0';
	else {
		warn = scratch;
		warnlen = sizeof(scratch);
	}
	err[0] = '\0';
	rd->path[0] = '\0';
	rd->made = false;
	if (given)
		return prepare_given(rd, given, err, errlen);
	return prepare_default(rd, tmpdir, err, errlen, warn, warnlen);
}

bool
rundir_usage_error(int rc)
{
	return rc == -EINVAL || rc == -ELOOP || rc == -ENOTDIR || rc == -EPERM || rc == -EACCES;
}

int
rundir_release(struct rundir *rd)
{
	int rc = 0;

	if (rd->made && rd->path[0])
		rc = util_remove_tree(rd->path);
	rd->path[0] = '\0';
	rd->made = false;
	return rc;
}
