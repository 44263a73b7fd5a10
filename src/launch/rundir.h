/*
 * rundir.h - the run directory: where a node's hostfiles go (DeepSpeed and
 * Horovod modes), private to the agent's user, removed at the end.
 *
 * vigil often runs as root on nodes other users share.  A directory whose
 * name can be guessed ($TMPDIR/vigil.JOB) can be made first by another
 * user, who then replaces the hostfile the training reads, or points it
 * at a directory of the victim's; so the default is a new directory with
 * a random name (mkdtemp, mode 0700), and a directory the user names must
 * already be private, or is created so.
 *
 * Nothing here logs: errors come back with a message for people.
 */
#ifndef VIGIL_RUNDIR_H
#define VIGIL_RUNDIR_H

#include <stdbool.h>
#include <stddef.h>

struct rundir {
	char path[4096];  /* "" until prepared */
	bool made;        /* created here: rundir_release() removes it */
};

/*
 * Prepare RD (zeroed, or released) for the calling user.
 *
 * GIVEN (--run-dir) non-NULL: GIVEN must be a directory owned by the
 * caller, not writable by group or others, not a symbolic link
 * (util_dir_is_private()), in a parent that no other user can rename
 * entries of (owned by the caller or root; not writable by group or
 * others, or sticky like /tmp).  When absent it is created with mode 0700
 * (its parent must exist) and RD->made is set; a directory that another
 * agent of the job created a moment before is taken as it is.
 *
 * GIVEN NULL: a new directory "vigil.XXXXXX" (mkdtemp: random, exclusive,
 * mode 0700) under TMPDIR (may be NULL), or under /tmp when TMPDIR is
 * unset, relative, or not safe by the parent rule above (said in WARN);
 * RD->made is set.
 *
 * Returns 0; -EINVAL, -ELOOP, -ENOTDIR, -EPERM or -EACCES when GIVEN is not
 * safe (a usage error: ERR says which and how to fix it); any other
 * negative errno when the directory could not be made (ERR says so).
 * ERR and WARN (may be NULL) get ERRLEN and WARNLEN bytes; WARN is ""
 * when there is nothing to say.
 */
int rundir_prepare(struct rundir *rd, const char *given, const char *tmpdir, char *err,
                   size_t errlen, char *warn, size_t warnlen);

/*
 * Whether an error from rundir_prepare() is the user's to fix (an unsafe
 * or unusable --run-dir) rather than the system's.
 */
bool rundir_usage_error(int rc);

/*
 * Remove RD's directory and everything in it when it was made by
 * rundir_prepare() (never a directory the user had before), without
 * following symbolic links.  Then RD is empty again; calling it twice, or
 * on a zeroed RD, is a no-op.  Returns 0 or the first negative errno.
 */
int rundir_release(struct rundir *rd);

#endif
