/*
 * stage.h - data staging (the platform's 数据准备): a job's datasets
 * copied to fast node-local storage before the training starts, and the
 * training run against the local copy.
 *
 * Layout of a node's staging directory (the site's "stage.dir"):
 *
 *   DIR/NAME-HASH/          one dataset from one source; HASH is 16 hex
 *                           digits of the source's path, so that two jobs
 *                           staging the same source share the copy
 *   DIR/NAME-HASH/data/     the copy: the source directory's contents (or,
 *                           for a file, the file under its own name),
 *                           read-only (no write bit anywhere)
 *   DIR/NAME-HASH/manifest.json  what the last complete staging copied
 *   DIR/NAME-HASH/used      its modification time is the copy's last use
 *   DIR/NAME-HASH/lock      flock()ed: exclusive while staging, shared by
 *                           every job that trains on the copy
 *
 * A copy already there is reused file by file: a file whose size and
 * modification time (to the second, rsync's quick check) match the
 * source's is kept (and, with stage_opts.verify_content, whose bytes
 * match), others are copied again, files the source no longer has are
 * removed.  Every set is compared first (its PLAN), then each is copied;
 * a source that changes while it is copied is copied again, COPY_ROUNDS
 * times at most, then refused.  A copy that fills its file system is
 * removed.  Copies unused for the retention (7 days by default, as
 * the platform) are removed when a later staging or `vigil stage --clean`
 * runs, unless a job still holds them (the shared lock).  Staging is
 * refused when the copies still to make would fill the file system past
 * the site's maximum use.
 *
 * Files are copied several at once (stage_opts.jobs worker processes,
 * largest first, each to the least loaded worker), with copy_file_range()
 * where the file systems allow it.  This runs in the `vigil stage`
 * process, never in the agent: it forks and blocks.
 */
#ifndef VIGIL_STAGE_H
#define VIGIL_STAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#define STAGE_SETS_MAX 16        /* datasets per job */
#define STAGE_JOBS_MAX 64

struct stage_set {
	const char *name;   /* [A-Za-z_][A-Za-z0-9_]*, at most 63 bytes (stage_name_check()) */
	const char *src;    /* an absolute path: a directory or a regular file */
};

enum stage_event {
	STAGE_PLAN,         /* a set was compared with its copy: its size, what to copy; every
	                     * set's comes before anything is copied, and a set's again when
	                     * a later look (under its lock) differs */
	STAGE_COPIED,       /* bytes and files copied since the last COPIED */
	STAGE_READY,        /* a set's copy is complete */
};

struct stage_progress {
	enum stage_event event;
	const char *name;                     /* PLAN, READY */
	const char *path;                     /* READY: the local copy for the training */
	unsigned long long bytes, files;      /* PLAN: the whole set; COPIED: the increment */
	unsigned long long copy_bytes, copy_files; /* PLAN: what must be copied */
	bool reused;                          /* READY: nothing had to be copied */
};

struct stage_opts {
	const char *dir;           /* the staging directory (made 0700 when missing) */
	int jobs;                  /* files copied at once, 1..STAGE_JOBS_MAX */
	double retention_s;        /* remove copies unused this long; <= 0: never */
	double max_use_pct;        /* refuse past this use of the file system; <= 0: no limit */
	bool verify_content;       /* a file the quick check keeps is compared byte for byte */
	/* The size and free space (bytes) of the file system at PATH; NULL:
	 * statvfs()'s.  A seam for tests.  0 or a negative errno. */
	int (*fs_space)(const char *path, double *total, double *avail);
	/* Called from the staging process as it goes; COPIED at most every 100 ms. */
	void (*progress)(void *arg, const struct stage_progress *p);
	void *arg;
};

/*
 * Stage N sets into O->dir, one after the other, each with O->jobs
 * workers.  Expired copies are removed first.  Returns 0, or a negative
 * errno with one line for people in ERR: the source cannot be read, the
 * staging directory (made with its parents when missing) is not private
 * to the caller or lies under another user's link (-EPERM, -EACCES,
 * -ELOOP), the copy would fill the file system past O->max_use_pct
 * (-ENOSPC, naming the need and the limit), the copy filled it (-ENOSPC
 * or -EDQUOT: the partial copy removed), the source kept changing
 * (-EAGAIN), a copy failed.
 */
int stage_run(const struct stage_opts *o, const struct stage_set *sets, size_t n, char *err,
              size_t errlen);

/*
 * Remove the copies in DIR unused for RETENTION_S before NOW (and not
 * locked by a job), and what a dead staging left half made.  *REMOVED
 * (may be NULL) counts them.  Returns 0 or a negative errno (ERR says
 * which copy could not be removed); -ENOENT when DIR does not exist.
 */
int stage_clean(const char *dir, double retention_s, time_t now, int *removed, char *err,
                size_t errlen);

/* NAME-HASH for SRC, into BUF.  0 or -ENAMETOOLONG. */
int stage_key(const char *name, const char *src, char *buf, size_t len);

/*
 * The local copy of SET in DIR (what the training gets in VIGIL_STAGE_NAME),
 * into BUF: DIR/NAME-HASH/data, which holds a directory's contents, or a
 * file under its own name.  Reads nothing.  0 or -ENAMETOOLONG.
 */
int stage_path(const char *dir, const struct stage_set *set, char *buf, size_t len);

/* NAME is a valid dataset name (it becomes part of an environment variable).  0 or -EINVAL. */
int stage_name_check(const char *name, char *why, size_t whylen);

/* "NAME=SRC" into SET (pointing into TEXT).  0 or -EINVAL with the reason in WHY. */
int stage_parse(const char *text, struct stage_set *set, char *namebuf, size_t namelen,
                char *why, size_t whylen);

/*
 * Whether NEED more bytes on a file system of TOTAL bytes with AVAIL free
 * would use more than MAX_PCT of it; *PCT (may be NULL) is the use it
 * would reach.  MAX_PCT <= 0 never refuses.
 */
bool stage_would_exceed(double total, double avail, double need, double max_pct, double *pct);

/*
 * For a job that trains on a copy: take the shared lock on the copy of
 * SET in DIR, so that no cleaning removes it while the job runs.  Returns
 * the lock's descriptor (close-on-exec; closing it releases the lock) or
 * a negative errno.
 */
int stage_hold(const char *dir, const struct stage_set *set);

/* Mark the copy of SET in DIR as used now (the retention starts again). */
void stage_touch(const char *dir, const struct stage_set *set);

#endif
