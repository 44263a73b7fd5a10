/*
 * safepath.c - walking a path one judged component at a time (safepath.h).
 */
#include "autoconf.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/safepath.h"
#include "lib/util.h"

#define LINKS_MAX 40   /* as the kernel's own limit on links in one lookup */

/* One walk down a path. */
struct walk {
	unsigned flags;
	mode_t mode;           /* for directories made */
	uid_t me;
	char *why;
	size_t whylen;
	char rest[2 * PATH_MAX];  /* what is left to walk */
	size_t pos;
	char shown[PATH_MAX];  /* what was walked, for messages */
	int hops;
	int cur, prev;         /* the directory reached and the one before (O_PATH) */
	char name[NAME_MAX + 1];  /* the last name taken */
	bool made;
};

static int say(struct walk *w, int rc, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* "WHERE REASON" into W->why, WHERE being the path walked (and NAME in
 * it, when not NULL); returns RC. */
static int
say(struct walk *w, int rc, const char *name, const char *fmt, ...)
{
	char reason[256];
	va_list ap;

	if (!w->why || w->whylen == 0)
		return rc;
	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	if (name)
		snprintf(w->why, w->whylen, "%s%s%s %s", w->shown,
		         strcmp(w->shown, "/") == 0 ? "" : "/", name, reason);
	else
		snprintf(w->why, w->whylen, "%s %s", w->shown, reason);
	return rc;
}

/* DIR/NAME into BUF (LEN bytes): 0, or -ENAMETOOLONG. */
static int
join(char *buf, size_t len, const char *dir, const char *name)
{
	size_t d = strlen(dir), n = strlen(name), slash = d > 0 && dir[d - 1] != '/';

	if (d + slash + n >= len)
		return -ENAMETOOLONG;
	memcpy(buf, dir, d);
	buf[d] = '/';
	memcpy(buf + d + slash, name, n + 1);
	return 0;
}

static bool
trusted_owner(const struct walk *w, uid_t uid)
{
	return uid == 0 || uid == w->me;
}

/* A directory on the way (or at the end, LAST) as fstat() saw it. */
static int
judge_dir(struct walk *w, const struct stat *st, const char *name, bool last)
{
	unsigned mode = (unsigned)(st->st_mode & 07777);

	if (!S_ISDIR(st->st_mode))
		return say(w, -ENOTDIR, name, "is not a directory");
	if (!trusted_owner(w, st->st_uid))
		return say(w, -EPERM, name, "is a directory of another user (uid %lu)",
		           (unsigned long)st->st_uid);
	if (last && (w->flags & SAFEPATH_OWN)) {
		if (st->st_uid != w->me)
			return say(w, -EPERM, name, "belongs to uid %lu, not to the user vigil "
			           "runs as (uid %lu)", (unsigned long)st->st_uid,
			           (unsigned long)w->me);
		if (mode & 022)
			return say(w, -EACCES, name, "is writable by others (mode %04o)", mode);
		return 0;
	}
	if ((mode & 022) && !(mode & S_ISVTX))
		return say(w, -EACCES, name, "is writable by others (mode %04o, no sticky bit)",
		           mode);
	return 0;
}

int
safepath_file_judge(const struct stat *st, const char *shown, char *why, size_t whylen)
{
	uid_t me = geteuid();

	if (st->st_uid != 0 && st->st_uid != me) {
		snprintf(why, whylen, "%s belongs to another user (uid %lu)", shown,
		         (unsigned long)st->st_uid);
		return -EPERM;
	}
	if (st->st_mode & 022) {
		snprintf(why, whylen, "%s is writable by others (mode %04o)", shown,
		         (unsigned)(st->st_mode & 07777));
		return -EACCES;
	}
	return 0;
}

/* Back to "/": the start of an absolute path or of an absolute link. */
static int
to_root(struct walk *w)
{
	struct stat st;

	if (w->cur >= 0)
		(void)close(w->cur);
	if (w->prev >= 0)
		(void)close(w->prev);
	w->prev = -1;
	w->name[0] = '\0';
	snprintf(w->shown, sizeof(w->shown), "/");
	w->cur = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (w->cur < 0 || fstat(w->cur, &st) < 0)
		return say(w, -errno, NULL, "cannot be opened: %s", strerror(errno));
	return judge_dir(w, &st, NULL, false);
}

/*
 * The next component of W->rest into W->name: 0, 1 when there is none,
 * or -ENAMETOOLONG.  *LAST: no component but "." follows it.
 */
static int
next_name(struct walk *w, bool *last)
{
	const char *s = w->rest + w->pos;
	size_t n;

	for (;;) {
		while (*s == '/')
			s++;
		n = strcspn(s, "/");
		if (n == 1 && s[0] == '.') {
			s++;
			continue;
		}
		break;
	}
	if (n == 0)
		return 1;
	if (n > NAME_MAX)
		return say(w, -ENAMETOOLONG, NULL, "holds a name longer than %d bytes", NAME_MAX);
	memcpy(w->name, s, n);
	w->name[n] = '\0';
	w->pos = (size_t)(s + n - w->rest);
	for (s += n; *s == '/' || (s[0] == '.' && (s[1] == '/' || s[1] == '\0')); s++)
		;
	*last = *s == '\0';
	return 0;
}

/* A link at NAME in the current directory, whose lstat is ST: refused,
 * or its target put in front of what is left to walk. */
static int
take_link(struct walk *w, const struct stat *st)
{
	char target[PATH_MAX], spliced[sizeof(w->rest)];
	ssize_t n;
	int len;

	if (!(w->flags & SAFEPATH_FOLLOW))
		return trusted_owner(w, st->st_uid) ? say(w, -ELOOP, w->name, "is a symbolic link") :
		       say(w, -ELOOP, w->name, "is a symbolic link of another user (uid %lu)",
		           (unsigned long)st->st_uid);
	if (!trusted_owner(w, st->st_uid))
		return say(w, -ELOOP, w->name, "is a symbolic link of another user (uid %lu)",
		           (unsigned long)st->st_uid);
	if (++w->hops > LINKS_MAX)
		return say(w, -ELOOP, w->name, "leads through more than %d symbolic links",
		           LINKS_MAX);
	n = readlinkat(w->cur, w->name, target, sizeof(target) - 1);
	if (n < 0)
		return say(w, -errno, w->name, "cannot be read: %s", strerror(errno));
	target[n] = '\0';
	len = snprintf(spliced, sizeof(spliced), "%s/%s", target, w->rest + w->pos);
	if (len < 0 || (size_t)len >= sizeof(w->rest))
		return say(w, -ENAMETOOLONG, w->name, "leads to a path too long");
	memcpy(w->rest, spliced, (size_t)len + 1);
	w->pos = 0;
	return target[0] == '/' ? to_root(w) : 0;
}

/* Step into NAME, the directory just opened at FD. */
static void
step(struct walk *w, int fd, bool parent_known)
{
	size_t n = strlen(w->shown);

	if (w->prev >= 0)
		(void)close(w->prev);
	w->prev = parent_known ? w->cur : -1;
	if (!parent_known)
		(void)close(w->cur);
	w->cur = fd;
	if (strcmp(w->name, "..") == 0) {
		/* for messages only: the descriptors know where they are */
		char *slash = strrchr(w->shown, '/');

		if (slash && slash != w->shown)
			*slash = '\0';
		else
			snprintf(w->shown, sizeof(w->shown), "/");
		w->name[0] = '\0';
		return;
	}
	snprintf(w->shown + n, sizeof(w->shown) - n, "%s%s", n == 1 ? "" : "/", w->name);
}

/* Make the missing directory NAME (the last, or one on the way with
 * SAFEPATH_PARENTS), with the walk's mode whatever the umask. */
static int
make_dir(struct walk *w, bool last)
{
	if (mkdirat(w->cur, w->name, w->mode) < 0)
		return errno == EEXIST ? 0 : say(w, -errno, w->name, "cannot be made: %s",
		                                 strerror(errno));
	/* The parent was judged: no one else can have replaced the name. */
	if (fchmodat(w->cur, w->name, w->mode, 0) < 0)
		return say(w, -errno, w->name, "cannot be given mode %04o: %s", (unsigned)w->mode,
		           strerror(errno));
	if (last)
		w->made = true;
	return 0;
}

/*
 * One directory component: opened, made when asked, a link taken, and
 * judged.  0 when stepped into (or the walk goes on from a link's
 * target), or a negative errno with the message.
 */
static int
dir_component(struct walk *w, bool last)
{
	struct stat st;
	int fd, rc;

	if (strcmp(w->name, "..") == 0) {
		fd = openat(w->cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st) < 0)
			return say(w, -errno, "..", "cannot be opened: %s", strerror(errno));
		step(w, fd, false);
		return judge_dir(w, &st, NULL, last);
	}
	fd = openat(w->cur, w->name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT &&
	    (last ? (w->flags & SAFEPATH_MKDIR) : (w->flags & SAFEPATH_PARENTS))) {
		rc = make_dir(w, last);
		if (rc < 0)
			return rc;
		fd = openat(w->cur, w->name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	}
	if (fd < 0) {
		rc = -errno;
		if (rc != -ENOTDIR && rc != -ELOOP)
			return say(w, rc, w->name, "%s", rc == -ENOENT ? "does not exist" :
			           rc == -EACCES ? "cannot be searched (permission denied)" :
			           strerror(-rc));
		if (fstatat(w->cur, w->name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			return say(w, -errno, w->name, "cannot be opened: %s", strerror(errno));
		if (S_ISLNK(st.st_mode))
			return take_link(w, &st);
		return say(w, -ENOTDIR, w->name, "is not a directory");
	}
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		(void)close(fd);
		return say(w, rc, w->name, "cannot be opened: %s", strerror(-rc));
	}
	rc = judge_dir(w, &st, w->name, last);
	if (rc < 0) {
		(void)close(fd);
		return rc;
	}
	step(w, fd, true);
	return 0;
}

static void
walk_close(struct walk *w)
{
	if (w->cur >= 0)
		(void)close(w->cur);
	if (w->prev >= 0)
		(void)close(w->prev);
	w->cur = w->prev = -1;
}

/*
 * Walk PATH.  For a directory (FILE false), W->cur is then the directory
 * and W->prev its parent (or -1), W->name its name.  For a file, W->cur is
 * its directory and W->name its name, not opened.  0, or a negative errno
 * with the message; W's descriptors are then closed.
 */
static int
walk(struct walk *w, const char *path, bool file)
{
	char cwd[PATH_MAX];
	bool last = false;
	int len, rc;

	w->me = geteuid();
	w->cur = w->prev = -1;
	w->pos = 0;
	snprintf(w->shown, sizeof(w->shown), "%s", path ? path : "");
	if (!path || !*path)
		return say(w, -ENOENT, NULL, "(an empty path) names nothing");
	if (path[0] != '/' && !getcwd(cwd, sizeof(cwd)))
		return say(w, -errno, NULL, "is relative, and the working directory cannot be "
		           "named: %s", strerror(errno));
	len = snprintf(w->rest, sizeof(w->rest), "%s%s%s", path[0] == '/' ? "" : cwd,
	               path[0] == '/' ? "" : "/", path);
	if (len < 0 || (size_t)len >= PATH_MAX)
		return say(w, -ENAMETOOLONG, NULL, "is too long");
	rc = to_root(w);
	while (rc == 0 && (rc = next_name(w, &last)) == 0) {
		if (file && last && strcmp(w->name, "..") != 0) {
			struct stat st;

			if (fstatat(w->cur, w->name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
			    !S_ISLNK(st.st_mode))
				return 0;  /* the caller opens it, and says what fails */
			rc = take_link(w, &st);
			continue;
		}
		rc = dir_component(w, last);
	}
	if (rc == 1 && file)
		rc = say(w, -EISDIR, NULL, "is a directory");
	if (rc == 1 && (w->flags & SAFEPATH_OWN) && w->prev < 0) {
		/* "/" itself, or a path ending in "..": the last was judged
		 * as one on the way */
		struct stat st;

		rc = fstat(w->cur, &st) < 0 ? say(w, -errno, NULL, "cannot be opened: %s",
		                                  strerror(errno)) : judge_dir(w, &st, NULL, true);
		if (rc == 0)
			return 0;
	}
	if (rc == 1)
		return 0;
	walk_close(w);
	return rc;
}

void
safepath_dir_init(struct safepath_dir *d)
{
	memset(d, 0, sizeof(*d));
	d->fd = d->parent = -1;
}

int
safepath_dir_open(const char *path, unsigned flags, mode_t mode, struct safepath_dir *d,
                  char *why, size_t whylen)
{
	struct walk *w = calloc(1, sizeof(*w));
	struct stat st;
	int rc;

	safepath_dir_init(d);
	if (!w)
		return -ENOMEM;
	*w = (struct walk){ .flags = flags, .mode = mode & 07777, .why = why, .whylen = whylen };
	rc = walk(w, path, false);
	if (rc < 0)
		goto out;
	/* The O_PATH descriptor judged, reopened for reading (its entries,
	 * fchmod, fstat): "." of it is the same directory, not a new lookup. */
	d->fd = openat(w->cur, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (d->fd < 0 || fstat(d->fd, &st) < 0) {
		rc = say(w, -errno, NULL, "cannot be opened: %s", strerror(errno));
		walk_close(w);
		safepath_dir_close(d);
		goto out;
	}
	(void)close(w->cur);
	d->parent = w->prev;
	snprintf(d->name, sizeof(d->name), "%s", w->prev >= 0 ? w->name : "");
	snprintf(d->path, sizeof(d->path), "%s", w->shown);
	d->made = w->made;
out:
	free(w);
	return rc;
}

void
safepath_dir_close(struct safepath_dir *d)
{
	if (d->fd >= 0)
		(void)close(d->fd);
	if (d->parent >= 0)
		(void)close(d->parent);
	d->fd = d->parent = -1;
}

int
safepath_dir_remove(struct safepath_dir *d)
{
	struct stat mine, there;
	int rc;

	if (d->fd < 0)
		return 0;
	rc = util_empty_dir_at(d->fd);
	if (d->parent >= 0 && d->name[0]) {
		/* the entry must still be this directory: whatever replaced
		 * it is not ours to remove */
		if (fstat(d->fd, &mine) < 0 ||
		    fstatat(d->parent, d->name, &there, AT_SYMLINK_NOFOLLOW) < 0) {
			if (rc == 0)
				rc = -errno;
		} else if (mine.st_dev != there.st_dev || mine.st_ino != there.st_ino) {
			if (rc == 0)
				rc = -ESTALE;
		} else if (unlinkat(d->parent, d->name, AT_REMOVEDIR) < 0 && rc == 0) {
			rc = -errno;
		}
	}
	safepath_dir_close(d);
	return rc;
}

int
safepath_dir_temp(const struct safepath_dir *parent, const char *prefix, struct safepath_dir *d)
{
	static const char alnum[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
	unsigned char rnd[6];
	char name[NAME_MAX + 1];
	struct stat st;
	int rc = -EEXIST, len;

	safepath_dir_init(d);
	for (int tries = 0; tries < 16 && rc == -EEXIST; tries++) {
		util_random_bytes(rnd, sizeof(rnd));
		len = snprintf(name, sizeof(name), "%.200s.", prefix);
		for (size_t i = 0; i < sizeof(rnd); i++)
			name[len++] = alnum[rnd[i] % (sizeof(alnum) - 1)];
		name[len] = '\0';
		rc = mkdirat(parent->fd, name, 0700) < 0 ? -errno : 0;
	}
	if (rc < 0)
		return rc;
	if (fchmodat(parent->fd, name, 0700, 0) < 0)
		rc = -errno;
	if (rc == 0)
		d->fd = openat(parent->fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (rc == 0 && (d->fd < 0 || fstat(d->fd, &st) < 0))
		rc = -errno;
	if (rc == 0 && (st.st_uid != geteuid() || (st.st_mode & 07777) != 0700))
		rc = -EPERM;  /* cannot happen: made just now, exclusively */
	if (rc == 0 && (d->parent = fcntl(parent->fd, F_DUPFD_CLOEXEC, 3)) < 0)
		rc = -errno;
	if (rc == 0 && join(d->path, sizeof(d->path), parent->path, name) < 0)
		rc = -ENAMETOOLONG;
	if (rc < 0) {
		safepath_dir_close(d);
		(void)unlinkat(parent->fd, name, AT_REMOVEDIR);  /* failing already */
		return rc;
	}
	snprintf(d->name, sizeof(d->name), "%s", name);
	d->made = true;
	return 0;
}

int
safepath_file_open(const char *path, unsigned flags, int oflags, struct stat *st, char *why,
                   size_t whylen)
{
	struct walk *w;
	struct stat mine;
	char shown[PATH_MAX + NAME_MAX + 2];
	int fd, rc;

	if (oflags & O_CREAT)
		return -EINVAL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	*w = (struct walk){ .flags = flags & SAFEPATH_FOLLOW, .why = why, .whylen = whylen };
	rc = walk(w, path, true);
	if (rc < 0)
		goto out;
	snprintf(shown, sizeof(shown), "%s%s%s", w->shown, strcmp(w->shown, "/") == 0 ? "" : "/",
	         w->name);
	fd = openat(w->cur, w->name, oflags | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		snprintf(why, whylen, "%s: %s", shown, rc == -ELOOP ? "a symbolic link" :
		         strerror(-rc));
	} else if (fstat(fd, &mine) < 0) {
		rc = -errno;
		snprintf(why, whylen, "%s: %s", shown, strerror(-rc));
	} else if (S_ISREG(mine.st_mode)) {
		rc = safepath_file_judge(&mine, shown, why, whylen);
	}
	if (rc == 0 && st)
		*st = mine;
	if (rc == 0)
		rc = fd;
	else if (fd >= 0)
		(void)close(fd);
	walk_close(w);
out:
	free(w);
	return rc;
}
