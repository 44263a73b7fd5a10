/*
 * rundir.c - the private run directory for a node's hostfiles, held open
 * from its check to its removal.
 */
#include "autoconf.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "launch/rundir.h"
#include "lib/safepath.h"

/* The fix for what safepath said (RC) about a --run-dir. */
static const char *
fix_for(int rc)
{
	switch (rc) {
	case -ELOOP:
		return "name the directory itself, through no link (whoever can change a link "
		       "can point it elsewhere)";
	case -EPERM:
		return "use a directory of your own, in directories of your own or root's "
		       "(another user could replace it, and the hostfiles in it)";
	case -EACCES:
		return "`chmod go-w` it, or use a directory no other user may write to (they "
		       "could replace it, and the hostfiles in it)";
	case -ENOENT:
		return "its parent directory must exist";
	default:
		return "use another directory";
	}
}

/*
 * GIVEN as --run-dir: every component judged (safepath.h), the directory
 * itself the user's and private, made (0700) when absent, and held open.
 */
static int
prepare_given(struct rundir *rd, const char *given, char *err, size_t errlen)
{
	char why[4200];
	size_t len = strlen(given);
	int rc;

	if (len == 0 || len >= sizeof(rd->path) - 64) {
		snprintf(err, errlen, "--run-dir: give a directory path of 1 to 4000 characters");
		return -EINVAL;
	}
	rc = safepath_dir_open(given, SAFEPATH_MKDIR | SAFEPATH_OWN, 0700, &rd->dir, why,
	                       sizeof(why));
	if (rc < 0) {
		snprintf(err, errlen, "--run-dir %s refused: %s: %s", given, why, fix_for(rc));
		return rc == -ENOENT || rc == -ENAMETOOLONG || rc == -EROFS ? -EINVAL : rc;
	}
	rd->held = true;
	rd->made = rd->dir.made;
	snprintf(rd->path, sizeof(rd->path), "%s", rd->dir.path);
	return 0;
}

/* A new private directory under TMPDIR, or /tmp when TMPDIR is not fit. */
static int
prepare_default(struct rundir *rd, const char *tmpdir, char *err, size_t errlen, char *warn,
                size_t warnlen)
{
	struct safepath_dir parent;
	char why[4200];
	int rc = -EINVAL;

	safepath_dir_init(&parent);
	if (tmpdir && *tmpdir) {
		if (tmpdir[0] == '/')
			rc = safepath_dir_open(tmpdir, 0, 0, &parent, why, sizeof(why));
		else
			snprintf(why, sizeof(why), "not an absolute path");
		if (rc < 0)
			snprintf(warn, warnlen, "TMPDIR %s is no place for the run directory (%s): "
			         "using /tmp", tmpdir, why);
	}
	if (parent.fd < 0 && (rc = safepath_dir_open("/tmp", 0, 0, &parent, why,
	                                             sizeof(why))) < 0) {
		snprintf(err, errlen, "no safe place for the run directory: %s; give one with "
		         "--run-dir", why);
		return rc == -EPERM || rc == -EACCES || rc == -ELOOP ? -EINVAL : rc;
	}
	rc = safepath_dir_temp(&parent, "vigil", &rd->dir);
	if (rc < 0) {
		snprintf(err, errlen, "cannot create the run directory in %s: %s", parent.path,
		         strerror(-rc));
		safepath_dir_close(&parent);
		return rc;
	}
	safepath_dir_close(&parent);
	rd->held = true;
	rd->made = true;
	snprintf(rd->path, sizeof(rd->path), "%s", rd->dir.path);
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
	rd->made = rd->held = false;
	safepath_dir_init(&rd->dir);
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

	/* through the descriptors held since the directory was judged (or
	 * made): never by its name, which could lead elsewhere by now */
	if (rd->held && rd->made)
		rc = safepath_dir_remove(&rd->dir);
	else if (rd->held)
		safepath_dir_close(&rd->dir);
	rd->path[0] = '\0';
	rd->made = rd->held = false;
	return rc;
}

int
rundir_fd(const struct rundir *rd)
{
	return rd->held ? rd->dir.fd : -1;
}
