/*
 * safepath.h - paths another user cannot redirect: every component of a
 * path judged on the way down, and the directory or file at its end then
 * used through the descriptor that was judged, never by name again.
 *
 * vigil often runs as root on nodes other users share.  A path is only
 * as safe as its least safe directory: whoever owns, or may write to, any
 * directory on the way can rename what is below it, or put a link there,
 * between the check and the use.  So the walk starts at "/" (a relative
 * path is taken from the working directory, as getcwd() spells it) and
 * opens each component relative to the one before, without following
 * links (O_NOFOLLOW), checking what it opened (fstat), so that what was
 * judged is what is used.  A component is refused when:
 *   - it is a symbolic link: always for directories vigil writes in; with
 *     SAFEPATH_FOLLOW, only when the link belongs to another user than
 *     root or the caller (a link in a directory no one else may write is
 *     the owner's choice; its target is walked the same way, at most 40
 *     links deep);
 *   - it belongs to another user than root or the caller;
 *   - another user may write to it (group or others): a sticky directory
 *     such as /tmp is the exception, as only the owner of an entry may
 *     rename it there, so only the component inside it matters.
 * The last directory is judged more strictly with SAFEPATH_OWN: the
 * caller's own (not even root's when the caller is not root), writable by
 * no one else, sticky or not.  A file at the end must belong to root or
 * the caller and be writable by no one else.
 *
 * Messages (WHY, WHYLEN bytes) name the component and the reason, such as
 * "/tmp/L is a symbolic link of another user (uid 65534)"; callers put
 * what the path was for, and the fix, around it.  Return codes: -ELOOP (a
 * link), -EPERM (another user's), -EACCES (writable by others), -ENOTDIR,
 * -ENOENT, or another negative errno of the file system.
 *
 * Nothing here logs.  Not async-signal-safe; safe in loop callbacks
 * (it blocks as long as the file system does).
 */
#ifndef VIGIL_SAFEPATH_H
#define VIGIL_SAFEPATH_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#define SAFEPATH_FOLLOW  0x01u  /* follow links of root's or the caller's */
#define SAFEPATH_MKDIR   0x02u  /* make the last directory when it is missing */
#define SAFEPATH_PARENTS 0x04u  /* make missing directories above it too (MODE) */
#define SAFEPATH_OWN     0x08u  /* the last directory: the caller's, private */

/* A directory reached safely.  fd < 0 when closed. */
struct safepath_dir {
	int fd;          /* the directory (O_RDONLY|O_DIRECTORY) */
	int parent;      /* the directory holding it (O_PATH); -1 for "/" or after ".." */
	char name[256];  /* its name in PARENT */
	char path[4096]; /* the path walked, for messages (links resolved) */
	bool made;       /* the last component was made by this call */
};

/* D as closed: fd and parent -1 (safepath_dir_close() is then a no-op). */
void safepath_dir_init(struct safepath_dir *d);

/*
 * Walk to directory PATH as above, into D (its descriptors close-on-exec;
 * D is initialised first).  With SAFEPATH_MKDIR a missing last directory
 * is made with MODE exactly (fchmod, whatever the umask) and D->made set;
 * one made by someone else a moment before (another agent of the job) is
 * taken as found.  Returns 0, or a negative errno with WHY; D is then
 * closed.
 */
int safepath_dir_open(const char *path, unsigned flags, mode_t mode, struct safepath_dir *d,
                      char *why, size_t whylen);

/* Close D's descriptors (not its files).  A closed D is a no-op. */
void safepath_dir_close(struct safepath_dir *d);

/*
 * Remove what D holds, and D itself from its parent, through the
 * descriptors held since D was opened: never by name from "/", so a
 * directory renamed or replaced meanwhile is not followed (D is removed
 * from its parent only when the entry there is still D).  Mount points
 * inside are left.  Then D is closed.  0 or the first negative errno.
 */
int safepath_dir_remove(struct safepath_dir *d);

/*
 * Make a new directory "PREFIX.XXXXXX" (random, exclusive, mode 0700
 * exactly) in PARENT, into D.  0 or a negative errno.
 */
int safepath_dir_temp(const struct safepath_dir *parent, const char *prefix,
                      struct safepath_dir *d);

/*
 * Open file PATH with OFLAGS (O_NOFOLLOW and O_CLOEXEC are added) after
 * walking its directories as above, and judge the file through the
 * descriptor: a regular file must belong to root or the caller and be
 * writable by no one else (anything else, a FIFO, a device, a directory,
 * comes back unjudged for the caller to refuse by its type).  The
 * descriptor, with what fstat() said in *ST (may be NULL), or a negative
 * errno with WHY.  OFLAGS with O_CREAT are refused (-EINVAL): this is for
 * files vigil reads or runs.
 */
int safepath_file_open(const char *path, unsigned flags, int oflags, struct stat *st,
                       char *why, size_t whylen);

/*
 * Judge a file already opened, as safepath_file_open() does: 0, -EPERM or
 * -EACCES with WHY naming SHOWN.
 */
int safepath_file_judge(const struct stat *st, const char *shown, char *why, size_t whylen);

#endif
