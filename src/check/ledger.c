/*
 * ledger.c - the node ledger's files (ledger.h): records as JSON lines,
 * the directory's checks, writing by rename, reading with retries, and
 * compaction.
 */
#include "autoconf.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/random.h>
#include <sys/stat.h>

#include <cJSON.h>

#include "check/ledger.h"
#include "lib/json.h"
#include "lib/util.h"

/* A file larger than this is no ledger file (LEDGER_KEEP records of a few
 * hundred bytes each fit several times over). */
#define FILE_MAX (8L << 20)

/* Rounds of listings a reader makes while compactors merge files away
 * under it (each round reads only the files new to it). */
#define READ_ROUNDS 64

/* A temporary file this old belongs to a writer that died. */
#define STALE_TMP_S 3600

#define TMP_PREFIX ".tmp~"
#define REC_SUFFIX ".rec"

struct ledger {
	char *dir;
	int dirfd, spoolfd, storefd;   /* -1: absent */
	uid_t owner;                   /* DIR's */
	bool trusted;                  /* the caller is root or DIR's owner */
	unsigned skipped;
	char first_skip[320];
	void (*hook)(void *arg);
	void *hook_arg;
};

/* ---- kinds and records ------------------------------------------------------ */

const char *
ledger_kind_name(int kind)
{
	if (kind >= 0 && kind < CONFIG_LEDGER_NKINDS)
		return config_ledger_kind_names[kind];
	if (kind == LEDGER_KIND_QUARANTINE)
		return "quarantine";
	if (kind == LEDGER_KIND_FORGIVE)
		return "forgive";
	return "?";
}

int
ledger_kind_parse(const char *name)
{
	for (int k = 0; name && k < LEDGER_NKINDS; k++)
		if (strcmp(name, ledger_kind_name(k)) == 0)
			return k;
	return -1;
}

bool
ledger_is_incident(int kind)
{
	return kind >= 0 && kind < CONFIG_LEDGER_NKINDS;
}

int
ledger_records_add(struct ledger_records *rs, const struct ledger_record *r)
{
	if (rs->n == rs->cap) {
		size_t cap = rs->cap ? rs->cap * 2 : 16;
		struct ledger_record *v = realloc(rs->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		rs->v = v;
		rs->cap = cap;
	}
	rs->v[rs->n++] = *r;
	return 0;
}

void
ledger_records_free(struct ledger_records *rs)
{
	free(rs->v);
	memset(rs, 0, sizeof(*rs));
}

static void
add_str(cJSON *o, const char *key, const char *s)
{
	if (s[0])
		cJSON_AddStringToObject(o, key, s);
}

char *
ledger_record_format(const struct ledger_record *r, bool with_uid)
{
	cJSON *o = cJSON_CreateObject();
	char *text;

	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "id", r->id);
	/* milliseconds are enough, and keep the line short */
	cJSON_AddNumberToObject(o, "time", floor(r->time * 1000 + 0.5) / 1000);
	cJSON_AddStringToObject(o, "node", r->node);
	cJSON_AddStringToObject(o, "kind", ledger_kind_name(r->kind));
	add_str(o, "check", r->check);
	add_str(o, "device", r->device);
	add_str(o, "job", r->job);
	add_str(o, "user", r->user);
	add_str(o, "evidence", r->evidence);
	if (r->seconds > 0)
		cJSON_AddNumberToObject(o, "seconds", r->seconds);
	if (r->manual)
		cJSON_AddTrueToObject(o, "manual");
	if (with_uid && r->uid >= 0)
		cJSON_AddNumberToObject(o, "uid", (double)r->uid);
	text = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return text;
}

/* A string member into BUF (LEN bytes), one line; false when absent or not a string. */
static bool
get(const cJSON *o, const char *key, char *buf, size_t len, bool required)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	buf[0] = '\0';
	if (!v)
		return !required;
	if (!cJSON_IsString(v))
		return false;
	snprintf(buf, len, "%s", v->valuestring);
	for (char *c = buf; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = ' ';
	return true;
}

int
ledger_record_parse(const char *line, size_t len, struct ledger_record *out)
{
	cJSON *o = cJSON_ParseWithLength(line, len);
	char kind[32];
	double t;
	int rc = -EINVAL;

	memset(out, 0, sizeof(*out));
	out->uid = -1;
	if (!cJSON_IsObject(o))
		goto out;
	t = json_num(o, "time", 0, 1e11, NAN);
	if (!get(o, "id", out->id, sizeof(out->id), true) || !out->id[0] ||
	    !get(o, "node", out->node, sizeof(out->node), true) || !out->node[0] ||
	    !get(o, "kind", kind, sizeof(kind), true) || isnan(t) ||
	    !get(o, "check", out->check, sizeof(out->check), false) ||
	    !get(o, "device", out->device, sizeof(out->device), false) ||
	    !get(o, "job", out->job, sizeof(out->job), false) ||
	    !get(o, "user", out->user, sizeof(out->user), false) ||
	    !get(o, "evidence", out->evidence, sizeof(out->evidence), false))
		goto out;
	out->kind = ledger_kind_parse(kind);
	if (out->kind < 0)
		goto out;
	out->time = t;
	if (cJSON_GetObjectItemCaseSensitive(o, "seconds") &&
	    json_get_num(o, "seconds", 0, 1e10, &out->seconds) < 0)
		goto out;
	out->manual = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "manual"));
	out->uid = json_int(o, "uid", 0, UINT32_MAX, -1);
	rc = 0;
out:
	cJSON_Delete(o);
	return rc;
}

/* ---- the directories ---------------------------------------------------------- */

/*
 * The one place that decides whether a directory of the ledger may be
 * used, to be replaced by a shared safe-path helper: FD (opened with
 * O_NOFOLLOW, so never a symlink) must be a directory owned by root or by
 * OWNER, writable by nobody else, unless SHARED and sticky (the spool,
 * where every user's jobs write and nobody may remove another's files).
 */
static int
dir_safe(int fd, const char *path, uid_t owner, bool shared, char *why, size_t whylen)
{
	struct stat st;

	if (fstat(fd, &st) < 0) {
		int rc = -errno;

		snprintf(why, whylen, "%s: %s", path, strerror(-rc));
		return rc;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(why, whylen, "%s is not a directory", path);
		return -ENOTDIR;
	}
	if (st.st_uid != 0 && st.st_uid != owner) {
		snprintf(why, whylen, "%s belongs to uid %u, neither root nor uid %u: "
		         "chown root %s", path, (unsigned)st.st_uid, (unsigned)owner, path);
		return -EPERM;
	}
	if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(shared && (st.st_mode & S_ISVTX))) {
		snprintf(why, whylen, "%s is writable by others%s: chmod %s %s", path,
		         shared ? " without the sticky bit" : "", shared ? "+t" : "go-w", path);
		return -EPERM;
	}
	return 0;
}

/* Open NAME under DFD as a directory (never through a symlink) and check
 * it; -ENOENT when it is absent. */
static int
open_sub(struct ledger *l, int dfd, const char *name, const char *path, bool shared,
         int *out, char *why, size_t whylen)
{
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int rc;

	*out = -1;
	if (fd < 0) {
		rc = -errno;
		if (rc != -ENOENT)
			snprintf(why, whylen, "%s: %s", path, strerror(-rc));
		return rc;
	}
	rc = dir_safe(fd, path, l->owner, shared, why, whylen);
	if (rc < 0) {
		(void)close(fd);
		return rc;
	}
	*out = fd;
	return 0;
}

/* NAME under DFD, made with MODE when absent (fchmod(): not the umask's),
 * then opened and checked as open_sub() does. */
static int
make_sub(struct ledger *l, int dfd, const char *name, const char *path, mode_t mode,
         int *out, char *why, size_t whylen)
{
	int rc = open_sub(l, dfd, name, path, mode & S_ISVTX, out, why, whylen);

	if (rc != -ENOENT)
		return rc;
	if (mkdirat(dfd, name, 0700) < 0) {
		rc = -errno;
		if (rc == -EEXIST)  /* another node made it first: its mode stands */
			return open_sub(l, dfd, name, path, mode & S_ISVTX, out, why, whylen);
		snprintf(why, whylen, "cannot make %s: %s", path, strerror(-rc));
		return rc;
	}
	rc = open_sub(l, dfd, name, path, mode & S_ISVTX, out, why, whylen);
	if (rc == 0 && fchmod(*out, mode) < 0) {
		rc = -errno;
		snprintf(why, whylen, "cannot set the mode of %s: %s", path, strerror(-rc));
		(void)close(*out);
		*out = -1;
	}
	return rc;
}

int
ledger_open(const char *dir, bool write, struct ledger **out, char *why, size_t whylen)
{
	struct ledger *l = calloc(1, sizeof(*l));
	char path[PATH_MAX];
	struct stat st;
	int rc;

	*out = NULL;
	if (!l || !(l->dir = strdup(dir))) {
		free(l);
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	l->spoolfd = l->storefd = -1;
	l->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (l->dirfd < 0 || fstat(l->dirfd, &st) < 0) {
		rc = -errno;
		snprintf(why, whylen, "%s: %s", dir, strerror(-rc));
		goto fail;
	}
	l->owner = st.st_uid;
	l->trusted = geteuid() == 0 || geteuid() == st.st_uid;
	/* DIR itself: root's or the caller's, nobody else may write it */
	rc = dir_safe(l->dirfd, dir, geteuid(), false, why, whylen);
	if (rc < 0)
		goto fail;
	snprintf(path, sizeof(path), "%s/spool", dir);
	if (write && l->trusted)
		rc = make_sub(l, l->dirfd, "spool", path, geteuid() == 0 ? 01777 : 0755,
		              &l->spoolfd, why, whylen);
	else
		rc = open_sub(l, l->dirfd, "spool", path, true, &l->spoolfd, why, whylen);
	if (rc < 0 && rc != -ENOENT)
		goto fail;
	snprintf(path, sizeof(path), "%s/store", dir);
	if (write && l->trusted)
		rc = make_sub(l, l->dirfd, "store", path, 0755, &l->storefd, why, whylen);
	else
		rc = open_sub(l, l->dirfd, "store", path, false, &l->storefd, why, whylen);
	if (rc < 0 && rc != -ENOENT)
		goto fail;
	if (write && l->spoolfd < 0) {
		snprintf(why, whylen, "%s/spool is missing, and only root or the owner of %s may "
		         "make it", dir, dir);
		rc = -ENOENT;
		goto fail;
	}
	*out = l;
	return 0;
fail:
	ledger_close(l);
	return rc;
}

void
ledger_close(struct ledger *l)
{
	if (!l)
		return;
	/* read-only descriptors of directories: nothing to lose on close */
	if (l->dirfd >= 0)
		(void)close(l->dirfd);
	if (l->spoolfd >= 0)
		(void)close(l->spoolfd);
	if (l->storefd >= 0)
		(void)close(l->storefd);
	free(l->dir);
	free(l);
}

const char *
ledger_dir(const struct ledger *l)
{
	return l->dir;
}

bool
ledger_trusted(const struct ledger *l)
{
	return l->trusted;
}

unsigned
ledger_skipped(const struct ledger *l, const char **first)
{
	if (first)
		*first = l->skipped ? l->first_skip : NULL;
	return l->skipped;
}

void
ledger_set_test_hook(struct ledger *l, void (*fn)(void *arg), void *arg)
{
	l->hook = fn;
	l->hook_arg = arg;
}

static void skip(struct ledger *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Something unreadable was passed over: counted, the first one described. */
static void
skip(struct ledger *l, const char *fmt, ...)
{
	va_list ap;

	if (l->skipped++ > 0)
		return;
	va_start(ap, fmt);
	vsnprintf(l->first_skip, sizeof(l->first_skip), fmt, ap);
	va_end(ap);
}

/* ---- names -------------------------------------------------------------------- */

static unsigned long long
random64(void)
{
	unsigned long long r = 0;

	/* getrandom() of 8 bytes does not block once the pool is ready, and
	 * is never short; without it, the time and pid still make names
	 * unlikely to meet */
	if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r))
		r = (unsigned long long)util_now_ns() ^ ((unsigned long long)getpid() << 32);
	return r;
}

/* A name no other writer, on any node, will make: time, pid, 64 random bits. */
static void
unique(char *buf, size_t len)
{
	snprintf(buf, len, "%llx.%ld.%016llx", (unsigned long long)time(NULL), (long)getpid(),
	         random64());
}

static int
check_node(const char *node, char *why, size_t whylen)
{
	char w[128];

	if (strlen(node) > LEDGER_NODE_MAX) {
		snprintf(why, whylen, "node name longer than %d bytes", LEDGER_NODE_MAX);
		return -ENAMETOOLONG;
	}
	if (util_hostname_check(node, w, sizeof(w)) < 0) {
		snprintf(why, whylen, "node name \"%.64s\": %s", node, w);
		return -EINVAL;
	}
	return 0;
}

static void
user_name(char *buf, size_t len)
{
	struct passwd pw, *res = NULL;
	char tmp[1024];

	if (getpwuid_r(geteuid(), &pw, tmp, sizeof(tmp), &res) == 0 && res)
		snprintf(buf, len, "%s", pw.pw_name);
	else
		snprintf(buf, len, "%u", (unsigned)geteuid());
}

/* ---- writing -------------------------------------------------------------------- */

/* The records R as JSON lines; NEW ones get a fresh id and the caller's
 * name when they have no user. */
static char *
format_all(const struct ledger_record *r, size_t n, bool new, size_t *lenp)
{
	size_t len = 0, cap = 0;
	char *buf = NULL, user[32] = "";

	for (size_t i = 0; i < n; i++) {
		struct ledger_record c = r[i];
		char *line;
		size_t ll;

		if (new)
			snprintf(c.id, sizeof(c.id), "%08llx%016llx", (unsigned long long)c.time,
			         random64());
		if (new && !c.user[0]) {
			if (!user[0])
				user_name(user, sizeof(user));
			memcpy(c.user, user, sizeof(user));
		}
		/* a store file keeps each record's writer, from its spool file */
		line = ledger_record_format(&c, !new);
		ll = line ? strlen(line) : 0;
		if (line && len + ll + 2 > cap) {
			size_t ncap = (len + ll + 2) * 2;
			char *nbuf = realloc(buf, ncap);

			if (!nbuf) {
				free(line);
				line = NULL;
			} else {
				buf = nbuf;
				cap = ncap;
			}
		}
		if (!line) {
			free(buf);
			return NULL;
		}
		memcpy(buf + len, line, ll);
		len += ll;
		buf[len++] = '\n';
		buf[len] = '\0';
		free(line);
	}
	*lenp = len;
	return buf;
}

/*
 * Write LEN bytes of DATA as DFD/FINAL: under the temporary TMP first,
 * fsync()ed, then renamed.  The hook runs between the two.  Returns 0 or
 * a negative errno; on failure the temporary file is gone.
 */
static int
write_renamed(struct ledger *l, int dfd, const char *tmp, const char *final, const char *data,
              size_t len, char *why, size_t whylen)
{
	int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	int rc = 0;

	if (fd < 0) {
		rc = -errno;
		snprintf(why, whylen, "cannot create %s in %s: %s", tmp, l->dir, strerror(-rc));
		return rc;
	}
	if (fchmod(fd, 0644) < 0 || util_write_all(fd, data, len) < 0 || fsync(fd) < 0)
		rc = -errno;
	/* NFS reports a failed write at close */
	if (close(fd) < 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && l->hook)
		l->hook(l->hook_arg);
	if (rc == 0 && renameat(dfd, tmp, dfd, final) < 0)
		rc = -errno;
	if (rc < 0) {
		snprintf(why, whylen, "cannot write %s in %s: %s", final, l->dir, strerror(-rc));
		(void)unlinkat(dfd, tmp, 0);  /* the error above is the one to report */
		return rc;
	}
	/* the rename itself, durable; a directory on some file systems
	 * refuses fsync (EINVAL), which changes nothing for readers */
	(void)fsync(dfd);
	return 0;
}

int
ledger_append(struct ledger *l, const struct ledger_record *r, size_t n, char *why,
              size_t whylen)
{
	char u[64], tmp[LEDGER_NODE_MAX + 80], final[LEDGER_NODE_MAX + 80];
	size_t len = 0;
	char *data;
	int rc;

	if (n == 0)
		return 0;
	rc = check_node(r[0].node, why, whylen);
	if (rc < 0)
		return rc;
	for (size_t i = 1; i < n; i++)
		if (strcmp(r[i].node, r[0].node) != 0) {
			snprintf(why, whylen, "records of several nodes in one file");
			return -EINVAL;
		}
	if (l->spoolfd < 0) {
		snprintf(why, whylen, "%s/spool is missing", l->dir);
		return -ENOENT;
	}
	data = format_all(r, n, true, &len);
	if (!data) {
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	unique(u, sizeof(u));
	snprintf(tmp, sizeof(tmp), TMP_PREFIX "%s~%s", r[0].node, u);
	snprintf(final, sizeof(final), "%s~%s" REC_SUFFIX, r[0].node, u);
	rc = write_renamed(l, l->spoolfd, tmp, final, data, len, why, whylen);
	free(data);
	return rc;
}

/* ---- reading -------------------------------------------------------------------- */

struct names {
	char **v;
	size_t n, cap;
};

static void
names_free(struct names *ns)
{
	for (size_t i = 0; i < ns->n; i++)
		free(ns->v[i]);
	free(ns->v);
	memset(ns, 0, sizeof(*ns));
}

static int
names_add(struct names *ns, const char *name)
{
	if (ns->n == ns->cap) {
		size_t cap = ns->cap ? ns->cap * 2 : 16;
		char **v = realloc(ns->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		ns->v = v;
		ns->cap = cap;
	}
	if (!(ns->v[ns->n] = strdup(name)))
		return -ENOMEM;
	ns->n++;
	return 0;
}

static int
cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * The names in directory DFD that start with PREFIX and end with ".rec"
 * (never a temporary name: those start with a dot), sorted.  DFD stays
 * open and at its start.
 */
static int
list_dir(int dfd, const char *prefix, struct names *out)
{
	size_t plen = strlen(prefix);
	DIR *d = util_opendir_at(dfd, ".");
	struct dirent *e;
	int rc = 0;

	if (!d)
		return -errno;
	while ((errno = 0, e = readdir(d))) {
		size_t len = strlen(e->d_name);

		if (e->d_name[0] == '.' || strncmp(e->d_name, prefix, plen) != 0 ||
		    len < sizeof(REC_SUFFIX) ||
		    strcmp(e->d_name + len - strlen(REC_SUFFIX), REC_SUFFIX) != 0)
			continue;
		rc = names_add(out, e->d_name);
		if (rc < 0)
			break;
	}
	if (rc == 0 && errno)
		rc = -errno;
	(void)closedir(d);
	if (rc == 0 && out->n > 1)  /* qsort() of no array is undefined */
		qsort(out->v, out->n, sizeof(*out->v), cmp_name);
	return rc;
}

/* The whole of regular file NAME under DFD into *BUF (NUL-terminated):
 * 0, -ENOENT when it vanished, 1 when it is no ledger file (skipped). */
static int
slurp(struct ledger *l, int dfd, const char *name, char **buf, size_t *len, struct stat *st)
{
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	ssize_t r = 0;
	int rc = 0;

	*buf = NULL;
	if (fd < 0) {
		rc = -errno;
		if (rc == -ENOENT)
			return rc;
		skip(l, "%s: %s", name, strerror(-rc));
		return 1;
	}
	/* No link left: a compactor merged it and unlinked it since the open,
	 * as good as vanished (the reader lists again).  One link: never a
	 * hard link to some other file planted in the spool.  One fstat()
	 * for both: an unlink between two would make the second see no link
	 * and call the file foreign. */
	rc = fstat(fd, st) < 0 ? -errno : 0;
	if (rc == 0 && S_ISREG(st->st_mode) && st->st_nlink == 0) {
		(void)close(fd);  /* read-only */
		return -ENOENT;
	}
	if (rc < 0 || !S_ISREG(st->st_mode) || st->st_nlink != 1 || st->st_size > FILE_MAX) {
		skip(l, "%s: not a regular file of one link and at most %ld bytes", name, FILE_MAX);
		rc = 1;
		goto out;
	}
	*buf = malloc((size_t)st->st_size + 1);
	if (!*buf) {
		rc = -ENOMEM;
		goto out;
	}
	*len = 0;
	while (*len < (size_t)st->st_size &&
	       ((r = read(fd, *buf + *len, (size_t)st->st_size - *len)) > 0 ||
	        (r < 0 && errno == EINTR)))
		*len += r > 0 ? (size_t)r : 0;
	if (r < 0) {
		skip(l, "%s: %s", name, strerror(errno));
		free(*buf);
		*buf = NULL;
		rc = 1;
		goto out;
	}
	(*buf)[*len] = '\0';
out:
	(void)close(fd);  /* read-only */
	return rc;
}

struct reading {
	const char *node;
	double since;
	bool store;            /* a store file: the records carry their writer's uid */
	struct ledger_records *out;
};

static bool
trusted_uid(const struct ledger *l, long long uid)
{
	return uid == 0 || uid == (long long)l->owner;
}

/* The records of file NAME under DFD into RD->out.  0, -ENOENT (it
 * vanished: start over) or -ENOMEM; a bad file or line is skipped. */
static int
read_file(struct ledger *l, int dfd, const char *name, const struct reading *rd)
{
	struct stat st;
	size_t len = 0;
	char *buf, *line, *end;
	int rc = slurp(l, dfd, name, &buf, &len, &st);

	if (rc != 0)
		return rc < 0 ? rc : 0;
	for (line = buf; line < buf + len; line = end + 1) {
		struct ledger_record r;

		end = memchr(line, '\n', (size_t)(buf + len - line));
		if (!end)
			end = buf + len;
		if (end == line)
			continue;
		if (ledger_record_parse(line, (size_t)(end - line), &r) < 0 ||
		    strcmp(r.node, rd->node) != 0) {
			skip(l, "%s: a line that is no record of %s", name, rd->node);
			continue;
		}
		/* the writer is who owns the file; a store file (root's)
		 * keeps each record's writer from its spool file */
		if (!rd->store || !trusted_uid(l, st.st_uid))
			r.uid = st.st_uid;
		r.trusted = trusted_uid(l, r.uid);
		if (ledger_is_incident(r.kind) && r.time < rd->since)
			continue;
		rc = ledger_records_add(rd->out, &r);
		if (rc < 0)
			break;
	}
	free(buf);
	return rc;
}

static int
cmp_record(const void *a, const void *b)
{
	const struct ledger_record *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return strcmp(x->id, y->id);
}

/* Sort by time, and drop the duplicates racing compactors leave. */
static void
sort_unique(struct ledger_records *rs, size_t from)
{
	size_t o = from;

	if (rs->n - from > 1)  /* qsort() of no array is undefined */
		qsort(rs->v + from, rs->n - from, sizeof(*rs->v), cmp_record);
	for (size_t i = from; i < rs->n; i++)
		if (o == from || strcmp(rs->v[o - 1].id, rs->v[i].id) != 0)
			rs->v[o++] = rs->v[i];
	rs->n = o;
}

/* NODE's directory in the store, or -1 (-ENOENT) when it has none. */
static int
open_node_store(struct ledger *l, const char *node, bool make, int *fd, char *why, size_t whylen)
{
	char path[PATH_MAX];

	*fd = -1;
	if (l->storefd < 0)
		return -ENOENT;
	snprintf(path, sizeof(path), "%s/store/%s", l->dir, node);
	if (make)
		return make_sub(l, l->storefd, node, path, 0755, fd, why, whylen);
	return open_sub(l, l->storefd, node, path, false, fd, why, whylen);
}

static bool
names_has(const struct names *ns, const char *name)
{
	for (size_t i = 0; i < ns->n; i++)
		if (strcmp(ns->v[i], name) == 0)
			return true;
	return false;
}

/* The files of LISTING under DFD not in DONE yet, read into RD->out and
 * added to DONE.  0; -ENOENT when one vanished (the others are read
 * all the same); -ENOMEM. */
static int
read_new(struct ledger *l, int dfd, const struct names *listing, struct names *done,
         const struct reading *rd)
{
	bool vanished = false;
	int rc = 0;

	for (size_t i = 0; rc == 0 && i < listing->n; i++) {
		if (names_has(done, listing->v[i]))
			continue;
		rc = read_file(l, dfd, listing->v[i], rd);
		if (rc == -ENOENT) {
			vanished = true;
			rc = 0;
		} else if (rc == 0) {
			rc = names_add(done, listing->v[i]);
		}
	}
	return rc < 0 ? rc : vanished ? -ENOENT : 0;
}

/*
 * NODE's records into OUT, sorted, with the names of the files read in
 * SPOOL and STORE (for compaction; emptied first).  Lists the spool
 * unless GIVEN holds its listing for NODE.
 *
 * A file that vanished between the listing and its reading was merged by
 * a compactor into a store file renamed into place before the unlink: the
 * listings are made again and the files not read yet are read, until a
 * round finds nothing vanished.  Each round reads only what is new, so
 * racing compactors slow a reader down, and never make it start over.
 */
static int
read_node(struct ledger *l, const char *node, double since, const struct names *given,
          struct names *spool, struct names *store, struct ledger_records *out,
          char *why, size_t whylen)
{
	struct reading rd = { .node = node, .since = since, .out = out };
	struct names sl = { 0 }, stl = { 0 };
	char prefix[LEDGER_NODE_MAX + 2];
	size_t from = out->n;
	int nodefd = -1, rc = -ENOENT, r1, r2;

	names_free(spool);
	names_free(store);
	snprintf(prefix, sizeof(prefix), "%s~", node);
	for (int round = 0; rc == -ENOENT && round < READ_ROUNDS; round++) {
		names_free(&sl);
		names_free(&stl);
		rc = 0;
		if (given && round == 0) {
			for (size_t i = 0; rc == 0 && i < given->n; i++)
				rc = names_add(&sl, given->v[i]);
		} else if (l->spoolfd >= 0) {
			rc = list_dir(l->spoolfd, prefix, &sl);
		}
		if (rc == 0 && nodefd < 0) {
			rc = open_node_store(l, node, false, &nodefd, why, whylen);
			if (rc == -ENOENT)
				rc = 0;
		}
		if (rc == 0 && nodefd >= 0)
			rc = list_dir(nodefd, "c~", &stl);
		if (rc == 0) {
			r1 = read_new(l, l->spoolfd, &sl, spool, &rd);
			rd.store = true;
			r2 = r1 == -ENOMEM ? r1 : read_new(l, nodefd, &stl, store, &rd);
			rd.store = false;
			rc = r1 == -ENOMEM || r2 == -ENOMEM ? -ENOMEM : r1 < 0 ? r1 : r2;
		}
		/* compactors at work: let them finish what they started */
		if (rc == -ENOENT && round >= 8)
			(void)usleep(1000);
	}
	names_free(&sl);
	names_free(&stl);
	if (nodefd >= 0)
		(void)close(nodefd);
	if (rc == -ENOENT)
		snprintf(why, whylen, "%s: the files of %s kept changing while read", l->dir, node);
	else if (rc < 0 && !why[0])
		snprintf(why, whylen, "cannot read the records of %s in %s: %s", node, l->dir,
		         strerror(-rc));
	if (rc == 0)
		sort_unique(out, from);
	else
		out->n = from;
	return rc;
}

int
ledger_read_node(struct ledger *l, const char *node, double since,
                 struct ledger_records *out, char *why, size_t whylen)
{
	struct names spool = { 0 }, store = { 0 };
	int rc;

	why[0] = '\0';
	rc = check_node(node, why, whylen);
	if (rc == 0)
		rc = read_node(l, node, since, NULL, &spool, &store, out, why, whylen);
	names_free(&spool);
	names_free(&store);
	return rc;
}

/* ---- every node --------------------------------------------------------------- */

/* The node a spool file NAME is of, into BUF; false for another name. */
static bool
spool_node(const char *name, char *buf, size_t len)
{
	const char *tilde = strchr(name, '~');
	size_t n = tilde ? (size_t)(tilde - name) : 0;

	if (n == 0 || n >= len)
		return false;
	memcpy(buf, name, n);
	buf[n] = '\0';
	return check_node(buf, NULL, 0) == 0;
}

/* The names of every node with records, sorted and once each, into NODES;
 * SPOOL gets the spool's listing (sorted, so each node's files are together). */
static int
all_nodes(struct ledger *l, struct names *spool, struct names *nodes)
{
	struct names store = { 0 };
	char node[LEDGER_NODE_MAX + 1];
	struct dirent *e;
	DIR *d;
	int rc = 0;

	if (l->spoolfd >= 0)
		rc = list_dir(l->spoolfd, "", spool);
	for (size_t i = 0; rc == 0 && i < spool->n; i++)
		if (spool_node(spool->v[i], node, sizeof(node)) &&
		    (nodes->n == 0 || strcmp(nodes->v[nodes->n - 1], node) != 0))
			rc = names_add(nodes, node);
	if (rc < 0 || l->storefd < 0)
		return rc;
	d = util_opendir_at(l->storefd, ".");
	if (!d)
		return -errno;
	while (rc == 0 && (errno = 0, e = readdir(d)))
		if (e->d_name[0] != '.' && check_node(e->d_name, NULL, 0) == 0)
			rc = names_add(&store, e->d_name);
	if (rc == 0 && errno)
		rc = -errno;
	(void)closedir(d);
	for (size_t i = 0; rc == 0 && i < store.n; i++)
		rc = names_add(nodes, store.v[i]);
	names_free(&store);
	if (rc == 0 && nodes->n > 0) {
		size_t o = 1;

		qsort(nodes->v, nodes->n, sizeof(*nodes->v), cmp_name);
		for (size_t i = 1; i < nodes->n; i++) {
			if (strcmp(nodes->v[o - 1], nodes->v[i]) == 0)
				free(nodes->v[i]);
			else
				nodes->v[o++] = nodes->v[i];
		}
		nodes->n = o;
	}
	return rc;
}

/* The spool files of NODE, from the sorted listing SPOOL. */
static int
node_files(const struct names *spool, const char *node, struct names *out)
{
	size_t nlen = strlen(node), lo = 0, hi = spool->n;
	int rc = 0;

	names_free(out);
	/* the first name not below NODE, then every name that starts with
	 * it: "n1~..." among "n10~...", "n1~...", "n1a~..." */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(spool->v[mid], node) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; rc == 0 && lo < spool->n && strncmp(spool->v[lo], node, nlen) == 0; lo++)
		if (spool->v[lo][nlen] == '~')
			rc = names_add(out, spool->v[lo]);
	return rc;
}

/* Each node's records in turn, to FN; COMPACT: compact each node instead. */
static int
each_node(struct ledger *l, double since, double now, ledger_node_fn *fn, void *arg,
          bool compact, char *why, size_t whylen)
{
	struct names spool = { 0 }, nodes = { 0 }, mine = { 0 }, sp = { 0 }, st = { 0 };
	struct ledger_records rs = { 0 };
	int rc;

	why[0] = '\0';
	rc = all_nodes(l, &spool, &nodes);
	if (rc < 0)
		snprintf(why, whylen, "cannot list %s: %s", l->dir, strerror(-rc));
	for (size_t i = 0; rc == 0 && i < nodes.n; i++) {
		rc = node_files(&spool, nodes.v[i], &mine);
		if (rc == 0 && compact)
			rc = ledger_compact_node(l, nodes.v[i], since, now, why, whylen);
		if (rc == 0 && !compact) {
			rs.n = 0;
			rc = read_node(l, nodes.v[i], since, &mine, &sp, &st, &rs, why, whylen);
			if (rc == 0)
				rc = fn(arg, nodes.v[i], &rs);
		}
	}
	ledger_records_free(&rs);
	names_free(&spool);
	names_free(&nodes);
	names_free(&mine);
	names_free(&sp);
	names_free(&st);
	return rc;
}

int
ledger_each_node(struct ledger *l, double since, ledger_node_fn *fn, void *arg,
                 char *why, size_t whylen)
{
	return each_node(l, since, 0, fn, arg, false, why, whylen);
}

/* ---- compaction ------------------------------------------------------------------- */

/* What compaction keeps of a node's sorted records: incidents since SINCE,
 * the administrators' records since SINCE and the last of each kind
 * (a quarantine until forgiven must outlive the retention), the newest
 * LEDGER_KEEP of all. */
static void
keep(struct ledger_records *rs, double since)
{
	size_t o = 0, first;
	ssize_t lastq = -1, lastf = -1;

	for (size_t i = 0; i < rs->n; i++) {
		if (rs->v[i].kind == LEDGER_KIND_QUARANTINE && rs->v[i].trusted)
			lastq = (ssize_t)i;
		if (rs->v[i].kind == LEDGER_KIND_FORGIVE && rs->v[i].trusted)
			lastf = (ssize_t)i;
	}
	for (size_t i = 0; i < rs->n; i++)
		if (rs->v[i].time >= since || (ssize_t)i == lastq || (ssize_t)i == lastf)
			rs->v[o++] = rs->v[i];
	rs->n = o;
	first = rs->n > LEDGER_KEEP ? rs->n - LEDGER_KEEP : 0;
	memmove(rs->v, rs->v + first, (rs->n - first) * sizeof(*rs->v));
	rs->n -= first;
}

/* Remove the temporary files under DFD that start with PREFIX and are
 * older than STALE_TMP_S (writers that died); a young one may be a writer
 * at work. */
static void
remove_stale(int dfd, const char *prefix, double now)
{
	size_t plen = strlen(prefix);
	struct dirent *e;
	DIR *d;

	if (dfd < 0 || !(d = util_opendir_at(dfd, ".")))
		return;
	while ((e = readdir(d))) {
		struct stat st;

		if (strncmp(e->d_name, prefix, plen) == 0 &&
		    fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    (double)st.st_mtime < now - STALE_TMP_S)
			(void)unlinkat(dfd, e->d_name, 0);  /* gone already: as good */
	}
	(void)closedir(d);
}

/* Unlink the merged files: after the new one is in place, never before. */
static void
unlink_all(int dfd, const struct names *ns)
{
	for (size_t i = 0; dfd >= 0 && i < ns->n; i++)
		(void)unlinkat(dfd, ns->v[i], 0);  /* a racing compactor may have done it */
}

int
ledger_compact_node(struct ledger *l, const char *node, double since, double now,
                    char *why, size_t whylen)
{
	struct names spool = { 0 }, store = { 0 };
	struct ledger_records rs = { 0 };
	char u[64], tmp[LEDGER_NODE_MAX + 80], final[80], *data = NULL;
	size_t len = 0, before;
	int nodefd = -1, rc;

	why[0] = '\0';
	if (!l->trusted || l->storefd < 0) {
		snprintf(why, whylen, "only root or the owner of %s may compact it", l->dir);
		return -EPERM;
	}
	rc = check_node(node, why, whylen);
	if (rc == 0)
		rc = read_node(l, node, -INFINITY, NULL, &spool, &store, &rs, why, whylen);
	before = rs.n;
	if (rc == 0)
		keep(&rs, since);
	/* nothing to merge, nothing expired: leave the files as they are */
	if (rc < 0 || (spool.n == 0 && store.n <= 1 && rs.n == before))
		goto out;
	rc = open_node_store(l, node, true, &nodefd, why, whylen);
	if (rc == 0 && rs.n > 0) {
		data = format_all(rs.v, rs.n, false, &len);
		if (!data) {
			snprintf(why, whylen, "out of memory");
			rc = -ENOMEM;
		}
	}
	if (rc == 0 && data) {
		unique(u, sizeof(u));
		snprintf(tmp, sizeof(tmp), TMP_PREFIX "%s", u);
		snprintf(final, sizeof(final), "c~%s" REC_SUFFIX, u);
		rc = write_renamed(l, nodefd, tmp, final, data, len, why, whylen);
	}
	if (rc == 0) {
		unlink_all(l->spoolfd, &spool);
		unlink_all(nodefd, &store);
	}
out:
	if (rc == 0) {
		snprintf(tmp, sizeof(tmp), TMP_PREFIX "%s~", node);
		remove_stale(l->spoolfd, tmp, now);
		remove_stale(nodefd, TMP_PREFIX, now);
	}
	if (nodefd >= 0)
		(void)close(nodefd);
	free(data);
	ledger_records_free(&rs);
	names_free(&spool);
	names_free(&store);
	return rc;
}

int
ledger_compact(struct ledger *l, double since, double now, char *why, size_t whylen)
{
	if (!l->trusted || l->storefd < 0) {
		snprintf(why, whylen, "only root or the owner of %s may compact it", l->dir);
		return -EPERM;
	}
	return each_node(l, since, now, NULL, NULL, true, why, whylen);
}
