/*
 * rundir.h - the run directory: where a node's hostfiles go (DeepSpeed and
 * Horovod modes), private to the agent's user, removed at the end.
 *
 * vigil often runs as root on nodes other users share.  A directory whose
 * name can be guessed ($TMPDIR/vigil.JOB) can be made first by another
 * user, who then replaces the hostfile the training reads, or points it
 * at a directory of the victim's; a path through another user's link or
 * directory can be re-pointed while the job runs.  So the default is a
 * new directory with a random name (mode 0700) in a directory judged
 * safe, a directory the user names is judged component by component
 * (lib/safepath.h) and must be private, and either is held open from then
 * on: the hostfiles are written relative to that descriptor, and the
 * release removes through it what vigil made, never by name.
 *
 * Nothing here logs: errors come back with a message for people.
 */
#ifndef VIGIL_RUNDIR_H
#define VIGIL_RUNDIR_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/safepath.h"

struct rundir {
	char path[4096];  /* "" until prepared */
	bool made;        /* created here: rundir_release() removes it */
	bool held;        /* DIR is open (a zeroed struct holds nothing) */
	struct safepath_dir dir;
};

/*
 * Prepare RD (zeroed, or released) for the calling user.
 *
 * GIVEN (--run-dir) non-NULL: every component of GIVEN must be a
 * directory, not a link, of root's or the caller's, that no other user
 * may write to (a sticky one like /tmp excepted, on the way); GIVEN
 * itself must be the caller's, writable by no one else.  When absent it
 * is created with mode 0700 (its parent must exist) and RD->made is set;
 * a directory that another agent of the job created a moment before is
 * taken as it is.
 *
 * GIVEN NULL: a new directory "vigil.XXXXXX" (random, exclusive, mode
 * 0700) under TMPDIR (may be NULL), or under /tmp when TMPDIR is unset,
 * relative, or not safe by the rules above (said in WARN); RD->made is
 * set.
 *
 * Either way the directory is held open until rundir_release().
 * Returns 0; -EINVAL, -ELOOP, -ENOTDIR, -EPERM or -EACCES when GIVEN is not
 * safe (a usage error: ERR names the component, why, and how to fix it);
 * any other negative errno when the directory could not be made (ERR says
 * so).  ERR and WARN (may be NULL) get ERRLEN and WARNLEN bytes; WARN is
 * "" when there is nothing to say.
 */
int rundir_prepare(struct rundir *rd, const char *given, const char *tmpdir, char *err,
                   size_t errlen, char *warn, size_t warnlen);

/*
 * Whether an error from rundir_prepare() is the user's to fix (an unsafe
 * or unusable --run-dir) rather than the system's.
 */
bool rundir_usage_error(int rc);

/* The descriptor of RD's directory, to write in relative to it; -1 when
 * RD holds none. */
int rundir_fd(const struct rundir *rd);

/*
 * Remove RD's directory and everything in it when it was made by
 * rundir_prepare() (never a directory the user had before), through the
 * descriptors held since then, without following symbolic links; close
 * them either way.  Then RD is empty again; calling it twice, or on a
 * zeroed RD, is a no-op.  Returns 0 or the first negative errno.
 */
int rundir_release(struct rundir *rd);

#endif
