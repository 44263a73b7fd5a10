/*
 * stage.c - copying a job's datasets to node-local storage, reusing what
 * is there, several files at once.  See stage.h for the layout.
 */
#include "autoconf.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>

#include "lib/json.h"
#include "lib/safepath.h"
#include "lib/util.h"
#include "prep/prepview.h"
#include "prep/stage.h"

#define CHUNK (8u << 20)            /* bytes per copy_file_range() call */
#define REPORT_EVERY (8ull << 20)   /* a worker reports at least every this many bytes */
#define PROGRESS_MS 100             /* COPIED events at most this often */
#define PART_PREFIX ".vigil-part."  /* a file being copied, renamed when complete */
#define HOLD_TRIES 3                /* rounds of "check, then update" against other stagers */
#define COPY_ROUNDS 3               /* copies of a source that changes under them, at most */
#define VERIFY_BUF (256u << 10)     /* bytes compared at a time (--stage-verify content) */

/* ---- names ------------------------------------------------------------------ */

/* A/B into BUF (PATH_MAX bytes); false when it does not fit. */
static bool
join(char *buf, const char *a, const char *b)
{
	int w = snprintf(buf, PATH_MAX, "%s/%s", a, b);

	return w >= 0 && w < PATH_MAX;
}

int
stage_name_check(const char *name, char *why, size_t whylen)
{
	size_t n = strlen(name);

	if (n == 0 || n > 63) {
		snprintf(why, whylen, "a dataset name has 1 to 63 characters");
		return -EINVAL;
	}
	if (!isalpha((unsigned char)name[0]) && name[0] != '_') {
		snprintf(why, whylen, "a dataset name starts with a letter or '_'");
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)name[i]) && name[i] != '_') {
			snprintf(why, whylen, "a dataset name holds letters, digits and '_' only "
			         "(it names the variable VIGIL_STAGE_NAME)");
			return -EINVAL;
		}
	return 0;
}

int
stage_parse(const char *text, struct stage_set *set, char *namebuf, size_t namelen,
            char *why, size_t whylen)
{
	const char *eq = strchr(text, '=');
	size_t n;

	if (!eq) {
		snprintf(why, whylen, "expected NAME=SOURCE, e.g. imagenet=/datasets/imagenet");
		return -EINVAL;
	}
	n = (size_t)(eq - text);
	if (n >= namelen)
		n = namelen - 1;
	memcpy(namebuf, text, n);
	namebuf[n] = '\0';
	if (stage_name_check(namebuf, why, whylen) < 0)
		return -EINVAL;
	if (eq[1] != '/') {
		snprintf(why, whylen, "the source must be an absolute path (it is read on every node)");
		return -EINVAL;
	}
	if (strlen(eq + 1) >= PATH_MAX - 64) {
		snprintf(why, whylen, "the source path is too long");
		return -EINVAL;
	}
	set->name = namebuf;
	set->src = eq + 1;
	return 0;
}

/* The source's path without trailing or doubled slashes: one dataset, one key. */
static void
normal_src(const char *src, char *buf, size_t len)
{
	size_t o = 0;

	for (const char *p = src; *p && o + 1 < len; p++) {
		if (*p == '/' && o > 0 && buf[o - 1] == '/')
			continue;
		buf[o++] = *p;
	}
	while (o > 1 && buf[o - 1] == '/')
		o--;
	buf[o] = '\0';
}

int
stage_key(const char *name, const char *src, char *buf, size_t len)
{
	char norm[PATH_MAX];
	uint64_t h = 0xcbf29ce484222325ull;  /* FNV-1a, 64 bits */
	int w;

	normal_src(src, norm, sizeof(norm));
	for (const unsigned char *p = (const unsigned char *)norm; *p; p++) {
		h ^= *p;
		h *= 0x100000001b3ull;
	}
	w = snprintf(buf, len, "%s-%016llx", name, (unsigned long long)h);
	return w < 0 || (size_t)w >= len ? -ENAMETOOLONG : 0;
}

/* The last component of SRC (normalised), for a file source. */
static const char *
base_of(const char *norm)
{
	const char *s = strrchr(norm, '/');

	return s && s[1] ? s + 1 : norm;
}

int
stage_path(const char *dir, const struct stage_set *set, char *buf, size_t len)
{
	char key[128];
	int w;

	if (stage_key(set->name, set->src, key, sizeof(key)) < 0)
		return -ENAMETOOLONG;
	w = snprintf(buf, len, "%s/%s/data", dir, key);
	return w < 0 || (size_t)w >= len ? -ENAMETOOLONG : 0;
}

bool
stage_would_exceed(double total, double avail, double need, double max_pct, double *pct)
{
	double p = total > 0 ? (total - avail + need) * 100.0 / total : 100.0;

	if (pct)
		*pct = p;
	return max_pct > 0 && p > max_pct;
}

/* ---- trees --------------------------------------------------------------------- */

struct entry {
	char *rel;              /* relative to the tree's root; "" never appears */
	char type;              /* 'f' regular file, 'd' directory, 'l' symlink */
	mode_t mode;
	long long size;
	time_t mtime;
	struct timespec mtim;
};

struct tree {
	struct entry *v;
	size_t n, cap;
	unsigned long long bytes, files, skipped;
};

static void
tree_free(struct tree *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->v[i].rel);
	free(t->v);
	memset(t, 0, sizeof(*t));
}

static int
tree_add(struct tree *t, const char *rel, const struct stat *st)
{
	struct entry *e;

	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 256;
		struct entry *v = realloc(t->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		t->v = v;
		t->cap = cap;
	}
	e = &t->v[t->n];
	e->rel = strdup(rel);
	if (!e->rel)
		return -ENOMEM;
	e->type = S_ISDIR(st->st_mode) ? 'd' : S_ISLNK(st->st_mode) ? 'l' : 'f';
	e->mode = st->st_mode & 07777;
	e->size = (long long)st->st_size;
	e->mtime = st->st_mtim.tv_sec;
	e->mtim = st->st_mtim;
	t->n++;
	if (e->type == 'f') {
		t->bytes += (unsigned long long)st->st_size;
		t->files++;
	}
	return 0;
}

/* Everything below directory DFD (named REL from the root) into T, without following links. */
static int
scan_at(int dfd, const char *rel, struct tree *t, char *err, size_t errlen)
{
	DIR *d = fdopendir(dfd);
	struct dirent *de;
	int rc = 0;

	if (!d) {
		rc = -errno;
		(void)close(dfd);
		return rc;
	}
	while (rc == 0 && (de = readdir(d))) {
		char path[PATH_MAX];
		struct stat st;
		int sub;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (snprintf(path, sizeof(path), "%s%s%s", rel, *rel ? "/" : "", de->d_name) >=
		    (int)sizeof(path)) {
			snprintf(err, errlen, "a path below the source is too long: %s/...", rel);
			rc = -ENAMETOOLONG;
		} else if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			rc = -errno;
			snprintf(err, errlen, "cannot read %s: %s", path, strerror(-rc));
		} else if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) {
			t->skipped++;  /* sockets, FIFOs, devices: no data to stage */
		} else if ((rc = tree_add(t, path, &st)) == 0 && S_ISDIR(st.st_mode)) {
			sub = openat(dirfd(d), de->d_name,
			             O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub < 0) {
				rc = -errno;
				snprintf(err, errlen, "cannot read %s: %s", path, strerror(-rc));
			} else {
				rc = scan_at(sub, path, t, err, errlen);
			}
		}
	}
	(void)closedir(d);
	return rc;
}

static int
by_rel(const void *a, const void *b)
{
	return strcmp(((const struct entry *)a)->rel, ((const struct entry *)b)->rel);
}

/* The tree at ROOT (a directory), sorted by path: a directory before what it holds. */
static int
scan_tree(const char *root, struct tree *t, char *err, size_t errlen)
{
	int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc;

	if (fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "cannot read %s: %s", root, strerror(-rc));
		return rc;
	}
	rc = scan_at(fd, "", t, err, errlen);
	if (rc == -ENOMEM)
		snprintf(err, errlen, "out of memory reading %s", root);
	if (rc == 0 && t->n > 1)
		qsort(t->v, t->n, sizeof(*t->v), by_rel);
	return rc;
}

static const struct entry *
tree_find(const struct tree *t, const char *rel)
{
	struct entry key = { .rel = (char *)rel };

	return t->n ? bsearch(&key, t->v, t->n, sizeof(*t->v), by_rel) : NULL;
}

/* ---- removing ------------------------------------------------------------------- */

static int
writable_fn(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)ftw;
	if (flag == FTW_D || flag == FTW_DNR)
		(void)chmod(path, (st->st_mode & 07777) | 0700);  /* errors show in the removal */
	return 0;
}

/* PATH and all below it, read-only directories included. */
static int
remove_all(const char *path)
{
	struct stat st;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISDIR(st.st_mode))
		return unlink(path) < 0 ? -errno : 0;
	(void)nftw(path, writable_fn, 16, FTW_PHYS | FTW_MOUNT);
	return util_remove_tree(path);
}

static bool
is_key(const char *name)
{
	const char *dash = strrchr(name, '-');

	if (!dash || dash == name || strlen(dash + 1) != 16)
		return false;
	for (const char *p = dash + 1; *p; p++)
		if (!isxdigit((unsigned char)*p))
			return false;
	return true;
}

/* When the copy in KEYDIR was last used: "used", else the directory itself. */
static time_t
last_use(const char *keydir)
{
	char p[PATH_MAX];
	struct stat st;

	if (join(p, keydir, "used") && lstat(p, &st) == 0)
		return st.st_mtim.tv_sec;
	return lstat(keydir, &st) == 0 ? st.st_mtim.tv_sec : 0;
}

/* Remove one expired copy unless a job holds it.  1 removed, 0 kept, or a negative errno. */
static int
clean_one(const char *keydir, double retention_s, time_t now)
{
	char p[PATH_MAX];
	int fd, rc;

	if ((double)(now - last_use(keydir)) < retention_s)
		return 0;
	fd = join(p, keydir, "lock") ? open(p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC) : -1;
	if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) < 0) {
		(void)close(fd);
		return 0;  /* a job stages or trains on it */
	}
	rc = remove_all(keydir);
	if (fd >= 0)
		(void)close(fd);
	return rc < 0 ? rc : 1;
}

int
stage_clean(const char *dir, double retention_s, time_t now, int *removed, char *err,
            size_t errlen)
{
	DIR *d;
	struct dirent *de;
	int rc = 0, n = 0;

	if (removed)
		*removed = 0;
	if (retention_s <= 0)
		return 0;
	d = opendir(dir);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		char p[PATH_MAX];
		int r;

		if (!is_key(de->d_name) || de->d_type != DT_DIR)
			continue;
		r = join(p, dir, de->d_name) ? clean_one(p, retention_s, now) : 0;
		if (r > 0)
			n++;
		if (r < 0 && rc == 0) {
			rc = r;
			snprintf(err, errlen, "cannot remove the expired copy %s: %s", p, strerror(-r));
		}
	}
	(void)closedir(d);
	if (removed)
		*removed = n;
	return rc;
}

/* ---- copying one file ------------------------------------------------------------ */

/* A worker's word to the staging process: fixed records, each one write(). */
enum { REC_PROGRESS, REC_ERROR, REC_CHANGED };

struct record {
	int kind;               /* REC_*: REC_CHANGED, a file that changed while it was copied */
	int files;
	int err;                /* REC_ERROR: the negative errno */
	long long bytes;
	char text[240];
};

static void
report(int fd, int kind, int files, long long bytes, int err, const char *text)
{
	struct record r = { .kind = kind, .files = files, .bytes = bytes, .err = err };

	if (text)
		snprintf(r.text, sizeof(r.text), "%.*s", (int)sizeof(r.text) - 1, text);
	(void)util_write_all(fd, &r, sizeof(r));  /* the parent is gone: nothing to tell */
}

/* Copy IN to OUT (read/write), reporting as it goes; returns 0 or a negative errno. */
static int
copy_rw(int in, int out, int rfd, long long *pending)
{
	static char buf[1 << 20];
	ssize_t got;

	while ((got = read(in, buf, sizeof(buf))) != 0) {
		if (got < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (util_write_all(out, buf, (size_t)got) < 0)
			return -errno;
		*pending += got;
		if (*pending >= (long long)REPORT_EVERY) {
			report(rfd, REC_PROGRESS, 0, *pending, 0, NULL);
			*pending = 0;
		}
	}
	return 0;
}

static int
copy_data(int in, int out, int rfd, long long *pending)
{
	for (;;) {
		ssize_t n = copy_file_range(in, NULL, out, NULL, CHUNK, 0);

		if (n == 0)
			return 0;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			/* across file systems on older kernels, or where unsupported */
			if (errno == EXDEV || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP)
				return copy_rw(in, out, rfd, pending);
			return -errno;
		}
		*pending += n;
		if (*pending >= (long long)REPORT_EVERY) {
			report(rfd, REC_PROGRESS, 0, *pending, 0, NULL);
			*pending = 0;
		}
	}
}

/* Whether the file behind IN changed since it was BEFORE: its size, content or inode. */
static bool
changed_since(int in, const struct stat *before)
{
	struct stat now;

	return fstat(in, &now) < 0 || now.st_size != before->st_size ||
	       now.st_mtim.tv_sec != before->st_mtim.tv_sec ||
	       now.st_mtim.tv_nsec != before->st_mtim.tv_nsec ||
	       now.st_ctim.tv_sec != before->st_ctim.tv_sec ||
	       now.st_ctim.tv_nsec != before->st_ctim.tv_nsec;
}

/*
 * SRC to DST through a part file beside it, read-only, with the source's
 * times.  0, 1 when the source changed while it was copied (nothing is
 * kept: the staging looks again), or a negative errno with ERR.
 */
static int
copy_one(const char *src, const char *dst, int rfd, char *err, size_t errlen)
{
	char part[PATH_MAX];
	const char *slash = strrchr(dst, '/');
	long long pending = 0;
	struct timespec times[2];
	struct stat st;
	int in, out, rc;

	snprintf(part, sizeof(part), "%.*s/" PART_PREFIX "%s", (int)(slash - dst), dst, slash + 1);
	in = open(src, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (in < 0 || fstat(in, &st) < 0) {
		rc = -errno;
		snprintf(err, errlen, "cannot read %.300s: %.60s", src, strerror(-rc));
		if (in >= 0)
			(void)close(in);
		return rc;
	}
	(void)unlink(part);  /* one a dead staging left */
	out = open(part, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	rc = out < 0 ? -errno : copy_data(in, out, rfd, &pending);
	times[0] = st.st_atim;
	times[1] = st.st_mtim;
	if (rc == 0 && (fchmod(out, (st.st_mode & 0555) | 0400) < 0 || futimens(out, times) < 0))
		rc = -errno;
	if (out >= 0 && close(out) < 0 && rc == 0)
		rc = -errno;
	/* a writer at work: these bytes may be half old, half new */
	if (rc == 0 && changed_since(in, &st))
		rc = 1;
	(void)close(in);
	if (rc == 0 && rename(part, dst) < 0)
		rc = -errno;
	if (rc != 0)
		(void)unlink(part);
	if (rc < 0) {
		snprintf(err, errlen, "cannot copy %.200s to %.200s: %.60s", src, dst, strerror(-rc));
		return rc;
	}
	report(rfd, rc ? REC_CHANGED : REC_PROGRESS, rc ? 0 : 1, pending, 0, NULL);
	return rc;
}

/* ---- the workers ----------------------------------------------------------------- */

struct work {
	const char *src_root, *dst_root;
	const struct entry **files;   /* to copy, largest first */
	size_t n;
	int *owner;                   /* worker of each file */
	size_t changed;               /* files that changed while they were copied */
};

/* A copying process: its share of W's files (those assigned to K). */
static void __attribute__((noreturn))
worker(struct work *w, int k, int rfd)
{
	char src[PATH_MAX], dst[PATH_MAX], err[512];
	int rc = 0, r;

	(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
	for (size_t i = 0; i < w->n && rc == 0; i++) {
		if (w->owner[i] != k)
			continue;
		if (!join(src, w->src_root, w->files[i]->rel) ||
		    !join(dst, w->dst_root, w->files[i]->rel)) {
			report(rfd, REC_ERROR, 0, 0, -ENAMETOOLONG, "a path is too long");
			rc = 1;
		} else if ((r = copy_one(src, dst, rfd, err, sizeof(err))) < 0) {
			report(rfd, REC_ERROR, 0, 0, r, err);
			rc = 1;
		}
	}
	/* this process's copy of the assignment; freed so that a leak
	 * checker does not count it as lost at the _exit() */
	free(w->owner);
	_exit(rc);
}

static int
by_size_desc(const void *a, const void *b)
{
	long long x = (*(const struct entry *const *)a)->size;
	long long y = (*(const struct entry *const *)b)->size;

	return x < y ? 1 : x > y ? -1 : 0;
}

/* Largest first, each to the least loaded worker. */
static void
assign(struct work *w, int jobs)
{
	long long load[STAGE_JOBS_MAX] = { 0 };

	qsort(w->files, w->n, sizeof(*w->files), by_size_desc);
	for (size_t i = 0; i < w->n; i++) {
		int best = 0;

		for (int k = 1; k < jobs; k++)
			if (load[k] < load[best])
				best = k;
		w->owner[i] = best;
		load[best] += w->files[i]->size + 4096;  /* a file costs more than its bytes */
	}
}

/* Read the workers' records until every one has closed the pipe. */
static int
collect(const struct stage_opts *o, int rfd, struct work *w, char *err, size_t errlen)
{
	struct stage_progress p = { .event = STAGE_COPIED };
	uint64_t last = util_now_ms();
	struct record r;
	int rc = 0;

	for (;;) {
		ssize_t got = read(rfd, &r, sizeof(r));

		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		if (got != (ssize_t)sizeof(r))
			continue;  /* records are written whole; a short one is not ours */
		if (r.kind == REC_ERROR && rc == 0) {
			rc = r.err < 0 ? r.err : -EIO;
			snprintf(err, errlen, "%s", r.text);
		}
		w->changed += r.kind == REC_CHANGED;
		p.bytes += (unsigned long long)r.bytes;
		p.files += (unsigned long long)r.files;
		if (o->progress && util_now_ms() - last >= PROGRESS_MS) {
			o->progress(o->arg, &p);
			p.bytes = p.files = 0;
			last = util_now_ms();
		}
	}
	if (o->progress && (p.bytes || p.files))
		o->progress(o->arg, &p);
	return rc;
}

static int
copy_files(const struct stage_opts *o, struct work *w, char *err, size_t errlen)
{
	int jobs = o->jobs < 1 ? 1 : o->jobs > STAGE_JOBS_MAX ? STAGE_JOBS_MAX : o->jobs;
	pid_t pids[STAGE_JOBS_MAX];
	int p[2], rc, started = 0;

	if (w->n == 0)
		return 0;
	if ((size_t)jobs > w->n)
		jobs = (int)w->n;
	assign(w, jobs);
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;

	for (int k = 0; k < jobs; k++) {
		pids[k] = fork();
		if (pids[k] == 0) {
			(void)close(p[0]);
			worker(w, k, p[1]);
		}
		if (pids[k] < 0)
			break;
		started++;
	}
	(void)close(p[1]);
	rc = collect(o, p[0], w, err, errlen);
	(void)close(p[0]);
	for (int k = 0; k < started; k++) {
		int st;

		if (rc < 0)
			(void)kill(pids[k], SIGKILL);  /* one failed: the rest is wasted */
		while (waitpid(pids[k], &st, 0) < 0 && errno == EINTR)
			;
		if (rc == 0 && !(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
			rc = -EIO;
			snprintf(err, errlen, "a copying process died (%s %d)",
			         WIFSIGNALED(st) ? "signal" : "status",
			         WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
		}
	}
	if (rc == 0 && started < jobs) {
		snprintf(err, errlen, "cannot start the copying processes: %s", strerror(EAGAIN));
		rc = -EAGAIN;
	}
	return rc;
}

/* ---- one dataset ------------------------------------------------------------------ */

struct set_ctx {
	const struct stage_opts *o;
	const struct stage_set *set;
	char norm[PATH_MAX];           /* the source, normalised */
	char src_root[PATH_MAX];       /* the directory the entries are relative to */
	char keydir[PATH_MAX], data[PATH_MAX];
	struct tree src, local;
	/* what the copy lacks */
	const struct entry **copy;     /* files to copy */
	size_t ncopy;
	unsigned long long copy_bytes;
	bool stale;                    /* entries to remove, directories or links to make */
	bool loose;                    /* write bits to take away */
	/* --stage-verify content: files the quick check keeps whose bytes differ */
	bool verifying;                /* this look compares the bytes */
	char **differ;
	size_t ndiffer;
	/* what the last PLAN said: a later look that differs says it again */
	unsigned long long said[4];
	size_t changed;                /* files that changed while they were copied */
};

static void
ctx_free(struct set_ctx *c)
{
	tree_free(&c->src);
	tree_free(&c->local);
	free(c->copy);
	c->copy = NULL;
	c->ncopy = 0;
}

static void
differ_free(struct set_ctx *c)
{
	for (size_t i = 0; i < c->ndiffer; i++)
		free(c->differ[i]);
	free(c->differ);
	c->differ = NULL;
	c->ndiffer = 0;
}

/* The source: a directory's tree, or one file under its own name. */
static int
scan_source(struct set_ctx *c, char *err, size_t errlen)
{
	struct stat st;
	int rc;

	normal_src(c->set->src, c->norm, sizeof(c->norm));
	if (stat(c->norm, &st) < 0) {
		rc = -errno;
		snprintf(err, errlen, "%s: cannot read the source %s: %s", c->set->name, c->norm,
		         strerror(-rc));
		return rc;
	}
	if (S_ISDIR(st.st_mode)) {
		snprintf(c->src_root, sizeof(c->src_root), "%s", c->norm);
		return scan_tree(c->norm, &c->src, err, errlen);
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: the source %s is neither a directory nor a file",
		         c->set->name, c->norm);
		return -EINVAL;
	}
	snprintf(c->src_root, sizeof(c->src_root), "%.*s", (int)(base_of(c->norm) - c->norm - 1),
	         c->norm);
	if (!c->src_root[0])
		snprintf(c->src_root, sizeof(c->src_root), "/");
	return tree_add(&c->src, base_of(c->norm), &st);
}

static bool
same_link(const struct set_ctx *c, const char *rel)
{
	char a[PATH_MAX], b[PATH_MAX], pa[PATH_MAX], pb[PATH_MAX];
	ssize_t na, nb;

	if (!join(pa, c->src_root, rel) || !join(pb, c->data, rel))
		return false;
	na = readlink(pa, a, sizeof(a));
	nb = readlink(pb, b, sizeof(b));
	return na >= 0 && na == nb && memcmp(a, b, (size_t)na) == 0;
}

/* Up to LEN bytes of FD, fewer only at its end: how many, or -1. */
static ssize_t
read_full(int fd, char *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, buf + got, len - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

/* Whether the bytes of REL in the copy are the source's.  A file that cannot be read differs. */
static bool
same_content(const struct set_ctx *c, const char *rel)
{
	static char a[VERIFY_BUF], b[VERIFY_BUF];
	char pa[PATH_MAX], pb[PATH_MAX];
	int fa = -1, fb = -1;
	bool same = false;

	if (!join(pa, c->src_root, rel) || !join(pb, c->data, rel) ||
	    (fa = open(pa, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
	    (fb = open(pb, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		goto out;
	for (;;) {
		ssize_t na = read_full(fa, a, sizeof(a)), nb = read_full(fb, b, sizeof(b));

		if (na < 0 || na != nb || memcmp(a, b, (size_t)na) != 0)
			break;
		if (na < (ssize_t)sizeof(a)) {
			same = true;
			break;
		}
	}
out:
	if (fa >= 0)
		(void)close(fa);
	if (fb >= 0)
		(void)close(fb);
	return same;
}

/* A file the quick check keeps: whether its bytes are known, or now found, to differ. */
static int
differs(struct set_ctx *c, const char *rel)
{
	char **v, *d;

	for (size_t i = 0; i < c->ndiffer; i++)
		if (strcmp(c->differ[i], rel) == 0)
			return 1;
	if (!c->verifying || same_content(c, rel))
		return 0;
	v = realloc(c->differ, (c->ndiffer + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	c->differ = v;
	if (!(d = strdup(rel)))
		return -ENOMEM;
	c->differ[c->ndiffer++] = d;
	return 1;
}

/* Compare the copy with the source: what to copy, whether anything else differs. */
static int
compare(struct set_ctx *c)
{
	c->copy = calloc(c->src.n ? c->src.n : 1, sizeof(*c->copy));
	if (!c->copy)
		return -ENOMEM;
	c->ncopy = 0;
	c->copy_bytes = 0;
	c->stale = c->loose = false;
	for (size_t i = 0; i < c->local.n; i++) {
		const struct entry *l = &c->local.v[i], *s = tree_find(&c->src, l->rel);

		if (!s || s->type != l->type)
			c->stale = true;
		else if (l->type != 'l' && (l->mode & 0222))
			c->loose = true;
	}
	for (size_t i = 0; i < c->src.n; i++) {
		const struct entry *s = &c->src.v[i], *l = tree_find(&c->local, s->rel);

		if (s->type == 'f') {
			int d = 1;

			if (l && l->type == 'f' && l->size == s->size && l->mtime == s->mtime &&
			    (d = differs(c, s->rel)) < 0)
				return d;
			if (d) {
				c->copy[c->ncopy++] = s;
				c->copy_bytes += (unsigned long long)s->size;
			}
		} else if (!l || l->type != s->type || (s->type == 'l' && !same_link(c, s->rel))) {
			c->stale = true;
		}
	}
	return 0;
}

/* Directories of the copy writable by us while it changes. */
static void
open_up(struct set_ctx *c)
{
	char p[PATH_MAX];

	(void)chmod(c->data, 0700);
	for (size_t i = 0; i < c->local.n; i++) {
		if (c->local.v[i].type != 'd')
			continue;
		if (join(p, c->data, c->local.v[i].rel))
			(void)chmod(p, 0700);  /* one that fails shows when it is written */
	}
}

/* Remove what the source no longer has; make its directories and links. */
static int
reshape(struct set_ctx *c, char *err, size_t errlen)
{
	char p[PATH_MAX], src[PATH_MAX], target[PATH_MAX];
	const char *gone = NULL;  /* a removed directory: what is below it went with it */
	int rc = 0;

	for (size_t i = 0; i < c->local.n && rc == 0; i++) {
		const struct entry *l = &c->local.v[i], *s = tree_find(&c->src, l->rel);
		size_t gl = gone ? strlen(gone) : 0;

		if (gone && strncmp(l->rel, gone, gl) == 0 && l->rel[gl] == '/')
			continue;
		if (s && s->type == l->type && !(l->type == 'l' && !same_link(c, l->rel)))
			continue;
		rc = join(p, c->data, l->rel) ? remove_all(p) : -ENAMETOOLONG;
		gone = l->type == 'd' ? l->rel : gone;
	}
	for (size_t i = 0; i < c->src.n && rc == 0; i++) {
		const struct entry *s = &c->src.v[i];
		struct stat st;
		ssize_t n;

		if (!join(p, c->data, s->rel) || !join(src, c->src_root, s->rel)) {
			rc = -ENAMETOOLONG;
			break;
		}
		if (s->type == 'd' && mkdir(p, 0700) < 0 && errno != EEXIST)
			rc = -errno;
		if (s->type != 'l' || lstat(p, &st) == 0)
			continue;
		n = readlink(src, target, sizeof(target) - 1);
		if (n < 0 || (target[n] = '\0', symlink(target, p) < 0))
			rc = -errno;
	}
	if (rc < 0)
		snprintf(err, errlen, "%s: cannot update the copy in %s: %s", c->set->name, c->data,
		         strerror(-rc));
	return rc;
}

/* No write bit anywhere in the copy: directories last, deepest first. */
static void
seal(struct set_ctx *c)
{
	char p[PATH_MAX];

	for (size_t i = c->src.n; i-- > 0;) {
		const struct entry *s = &c->src.v[i], *l;

		if (s->type == 'l')
			continue;
		if (!join(p, c->data, s->rel))
			continue;
		l = tree_find(&c->local, s->rel);
		/* copied files are sealed by their worker */
		if (s->type == 'f' && !(l && (l->mode & 0222)))
			continue;
		(void)chmod(p, (s->mode & 0555) | (s->type == 'd' ? 0500 : 0400));
	}
	(void)chmod(c->data, 0555);
}

static int
fs_space(const char *path, double *total, double *avail)
{
	struct statvfs vfs;

	if (statvfs(path, &vfs) < 0)
		return -errno;
	*total = (double)vfs.f_blocks * (double)vfs.f_frsize;
	*avail = (double)vfs.f_bavail * (double)vfs.f_frsize;
	return 0;
}

static int
check_space(struct set_ctx *c, char *err, size_t errlen)
{
	double total, avail, pct;
	char need[32];

	if (c->o->max_use_pct <= 0 || c->copy_bytes == 0 ||
	    (c->o->fs_space ? c->o->fs_space : fs_space)(c->data, &total, &avail) < 0)
		return 0;
	if (!stage_would_exceed(total, avail, (double)c->copy_bytes, c->o->max_use_pct, &pct))
		return 0;
	util_fmt_bytes((double)c->copy_bytes, need, sizeof(need));
	snprintf(err, errlen, "%s: staging needs %s more on %s, which would then be %.0f%% full, "
	         "above the maximum of %.0f%% (run.stage_max_use, --stage-max-use)", c->set->name,
	         need, c->o->dir, pct, c->o->max_use_pct);
	return -ENOSPC;
}

static void
touch_used(const char *keydir)
{
	char p[PATH_MAX];
	int fd;

	fd = join(p, keydir, "used") ? open(p, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600)
	                             : -1;
	if (fd < 0)
		return;  /* the retention then counts from the directory's own time */
	(void)futimens(fd, NULL);
	(void)close(fd);
}

static void
write_manifest(const struct set_ctx *c)
{
	cJSON *m = cJSON_CreateObject();
	char p[PATH_MAX], *text;

	cJSON_AddStringToObject(m, "name", c->set->name);
	cJSON_AddStringToObject(m, "source", c->norm);
	cJSON_AddNumberToObject(m, "files", (double)c->src.files);
	cJSON_AddNumberToObject(m, "bytes", (double)c->src.bytes);
	cJSON_AddNumberToObject(m, "staged", (double)time(NULL));
	text = json_print(m, true);
	cJSON_Delete(m);
	if (text && join(p, c->keydir, "manifest.json"))
		(void)util_write_atomic_str(p, text, 0444);  /* a record for people, not relied on */
	free(text);
}

/* The file system is full: what this staging copied goes, and the message says so. */
static int
full(struct set_ctx *c, int rc, char *err, size_t errlen)
{
	char why[300];

	snprintf(why, sizeof(why), "%s", err);
	(void)remove_all(c->data);  /* the copy is incomplete anyway: give the room back */
	snprintf(err, errlen, "%s: the file system of %s is full (%.200s): the partial copy was "
	         "removed; free space there, or stage to another directory (--stage-dir, or "
	         "vigil stage --dir)", c->set->name, c->o->dir, why);
	return rc;
}

/* The copy, made to match the source (the exclusive lock is held). */
static int
update(struct set_ctx *c, char *err, size_t errlen)
{
	struct work w = { .src_root = c->src_root, .dst_root = c->data, .files = c->copy,
	                  .n = c->ncopy };
	int rc;

	rc = check_space(c, err, errlen);
	if (rc < 0)
		return rc;
	open_up(c);
	rc = reshape(c, err, errlen);
	if (rc == 0) {
		w.owner = calloc(w.n ? w.n : 1, sizeof(*w.owner));
		if (!w.owner)
			return -ENOMEM;
		rc = copy_files(c->o, &w, err, errlen);
		free(w.owner);
	}
	c->changed = w.changed;
	if (rc == -ENOSPC || rc == -EDQUOT)
		return full(c, rc, err, errlen);
	return rc;
}

/* KEYDIR/lock, locked HOW (blocking unless LOCK_NB): its descriptor or a negative errno. */
static int
lock_copy(const char *keydir, int how)
{
	char p[PATH_MAX];
	struct stat st;
	int fd, rc;

	if (!join(p, keydir, "lock"))
		return -ENAMETOOLONG;
	for (int i = 0; i < HOLD_TRIES; i++) {
		fd = open(p, O_RDONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0)
			return -errno;
		while ((rc = flock(fd, how)) < 0 && errno == EINTR)
			;
		if (rc < 0) {
			rc = -errno;
			(void)close(fd);
			return rc;
		}
		/* a cleaning removed the copy while we waited: start afresh */
		if (fstat(fd, &st) == 0 && st.st_nlink > 0)
			return fd;
		(void)close(fd);
		if (mkdir(keydir, 0700) < 0 && errno != EEXIST)
			return -errno;
	}
	return -EAGAIN;
}

/* Read both sides and compare them. */
static int
survey(struct set_ctx *c, char *err, size_t errlen)
{
	int rc;

	ctx_free(c);
	rc = scan_source(c, err, errlen);
	if (rc == 0 && mkdir(c->data, 0700) < 0 && errno != EEXIST) {
		rc = -errno;
		snprintf(err, errlen, "%s: cannot make %s: %s", c->set->name, c->data, strerror(-rc));
	}
	if (rc == 0)
		rc = scan_tree(c->data, &c->local, err, errlen);
	if (rc == 0 && (rc = compare(c)) < 0)
		snprintf(err, errlen, "out of memory");
	return rc;
}

static void
emit(const struct set_ctx *c, enum stage_event ev, bool reused)
{
	struct stage_progress p = { .event = ev, .name = c->set->name, .reused = reused };
	char path[PATH_MAX];

	if (!c->o->progress)
		return;
	p.bytes = c->src.bytes;
	p.files = c->src.files;
	p.copy_bytes = c->copy_bytes;
	p.copy_files = c->ncopy;
	if (ev == STAGE_READY && stage_path(c->o->dir, c->set, path, sizeof(path)) == 0)
		p.path = path;
	c->o->progress(c->o->arg, &p);
}

/* The plan, when this look differs from what the last one said (ALWAYS: say it anyway). */
static void
plan(struct set_ctx *c, bool always)
{
	unsigned long long now[4] = { c->src.bytes, c->src.files, c->copy_bytes, c->ncopy };

	if (!always && memcmp(now, c->said, sizeof(now)) == 0)
		return;
	memcpy(c->said, now, sizeof(now));
	emit(c, STAGE_PLAN, false);
}

/*
 * Copy, then look at both sides again, until a look finds nothing to do:
 * a source that changed while it was copied (a file's size or times
 * moved during its copy, or the tree differs afterwards) is copied again,
 * COPY_ROUNDS times at most.  1 when done, or a negative errno with ERR.
 */
static int
converge(struct set_ctx *c, bool *reused, char *err, size_t errlen)
{
	int rc;

	*reused = c->ncopy == 0;
	for (int round = 1;; round++) {
		plan(c, false);
		rc = update(c, err, errlen);
		if (rc < 0)
			return rc;
		differ_free(c);  /* copied now */
		rc = survey(c, err, errlen);
		if (rc < 0)
			return rc;
		if (c->changed == 0 && c->ncopy == 0 && !c->stale)
			break;
		*reused = false;
		if (round == COPY_ROUNDS) {
			snprintf(err, errlen, "%s: the source %s changed while it was copied, %d times "
			         "in a row: the copy would not be consistent; stage it once nothing "
			         "writes to it (a snapshot, or after the writer ends)", c->set->name,
			         c->norm, COPY_ROUNDS);
			return -EAGAIN;
		}
	}
	seal(c);
	return 1;
}

/*
 * Under the shared lock: compare, and reuse the copy when it matches.
 * Otherwise the exclusive lock (never waited for: another job may train
 * on the copy for days), compare again, and update.  1 when done.
 */
static int
try_once(struct set_ctx *c, int fd, bool *reused, char *err, size_t errlen)
{
	int rc = survey(c, err, errlen);

	if (rc < 0)
		return rc;
	if (c->ncopy == 0 && !c->stale) {
		plan(c, false);
		if (c->loose)
			seal(c);
		*reused = true;
		return 1;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) < 0)
		return errno == EWOULDBLOCK ? 0 : -errno;
	rc = survey(c, err, errlen);
	return rc < 0 ? rc : converge(c, reused, err, errlen);
}

/* C's paths for SET, and its directory.  0 or a negative errno with ERR. */
static int
ctx_init(struct set_ctx *c, const struct stage_opts *o, const struct stage_set *set, char *err,
         size_t errlen)
{
	char key[128];
	int rc;

	c->o = o;
	c->set = set;
	if (stage_key(set->name, set->src, key, sizeof(key)) < 0 ||
	    snprintf(c->keydir, sizeof(c->keydir), "%s/%s", o->dir, key) >= (int)sizeof(c->keydir) ||
	    snprintf(c->data, sizeof(c->data), "%s/data", c->keydir) >= (int)sizeof(c->data)) {
		snprintf(err, errlen, "%s: the staging directory's path is too long", set->name);
		return -ENAMETOOLONG;
	}
	if (mkdir(c->keydir, 0700) < 0 && errno != EEXIST) {
		rc = -errno;
		snprintf(err, errlen, "%s: cannot make %s: %s", set->name, c->keydir, strerror(-rc));
		return rc;
	}
	return 0;
}

/*
 * Before anything is copied: what each set needs (its PLAN), so that the
 * totals and the time left cover the whole staging from the start.  With
 * --stage-verify content, the bytes of what the quick check keeps are
 * compared here, once.  No lock: a look, which the staging repeats under
 * the lock.
 */
static int
plan_one(struct set_ctx *c, char *err, size_t errlen)
{
	int rc;

	c->verifying = c->o->verify_content;
	rc = survey(c, err, errlen);
	c->verifying = false;
	if (rc == 0)
		plan(c, true);
	ctx_free(c);  /* looked at again under the lock */
	return rc;
}

static int
stage_one(struct set_ctx *c, char *err, size_t errlen)
{
	bool reused = false;
	int fd, rc = 0;

	for (int i = 0; i < HOLD_TRIES && rc == 0; i++) {
		fd = lock_copy(c->keydir, LOCK_SH);
		if (fd < 0) {
			snprintf(err, errlen, "%s: cannot lock %s: %s", c->set->name, c->keydir,
			         strerror(-fd));
			return fd;
		}
		touch_used(c->keydir);
		rc = try_once(c, fd, &reused, err, errlen);
		(void)close(fd);
	}
	if (rc == 0) {
		snprintf(err, errlen, "%s: the copy in %s differs from %s and another job on this "
		         "node uses it: it cannot be updated now", c->set->name, c->keydir, c->norm);
		rc = -EBUSY;
	}
	if (rc > 0) {
		write_manifest(c);
		touch_used(c->keydir);
		emit(c, STAGE_READY, reused);
		rc = 0;
	}
	return rc;
}

/*
 * DIR, made private to us when missing, with the directories above it
 * (0700; each judged on the way down: a link of root's or ours is
 * followed, another user's, or a directory another user could change,
 * is not); refused when someone else could change it.
 */
static int
own_dir(const char *dir, char *err, size_t errlen)
{
	struct safepath_dir d;
	char why[600];
	int rc;

	rc = safepath_dir_open(dir, SAFEPATH_FOLLOW | SAFEPATH_MKDIR | SAFEPATH_PARENTS |
	                       SAFEPATH_OWN, 0700, &d, why, sizeof(why));
	safepath_dir_close(&d);
	if (rc < 0)
		snprintf(err, errlen, "the staging directory is refused: %s: use a directory of your "
		         "own (stage.dir may hold %%u, the user)", why);
	return rc;
}

int
stage_run(const struct stage_opts *o, const struct stage_set *sets, size_t n, char *err,
          size_t errlen)
{
	struct set_ctx *c;
	int rc = own_dir(o->dir, err, errlen);

	if (rc < 0)
		return rc;
	/* room first: what nobody used for the retention goes */
	rc = stage_clean(o->dir, o->retention_s, time(NULL), NULL, err, errlen);
	if (rc < 0)
		return rc;
	c = calloc(n ? n : 1, sizeof(*c));
	if (!c) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = ctx_init(&c[i], o, &sets[i], err, errlen);
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = plan_one(&c[i], err, errlen);
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = stage_one(&c[i], err, errlen);
	for (size_t i = 0; i < n; i++) {
		ctx_free(&c[i]);
		differ_free(&c[i]);
	}
	free(c);
	return rc;
}

int
stage_hold(const char *dir, const struct stage_set *set)
{
	char key[128], keydir[PATH_MAX];

	if (stage_key(set->name, set->src, key, sizeof(key)) < 0 ||
	    snprintf(keydir, sizeof(keydir), "%s/%s", dir, key) >= (int)sizeof(keydir))
		return -ENAMETOOLONG;
	return lock_copy(keydir, LOCK_SH | LOCK_NB);
}

void
stage_touch(const char *dir, const struct stage_set *set)
{
	char key[128], keydir[PATH_MAX];

	if (stage_key(set->name, set->src, key, sizeof(key)) == 0 &&
	    snprintf(keydir, sizeof(keydir), "%s/%s", dir, key) < (int)sizeof(keydir))
		touch_used(keydir);
}
