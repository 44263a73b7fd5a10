/*
 * stuck.c - marks on work that may outlive its deadline, and finding the
 * marked processes again in /proc.
 *
 * What is read of another process is what the kernel gives without
 * waiting on it: the owner of /proc/PID, comm, stat, the exe link and the
 * fd links.  Never cmdline or environ, which need the process's memory
 * map, and a process stuck in a page fault holds that.
 */
#include "autoconf.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "proc/stuck.h"
#include "lib/util.h"

#define MARK_PREFIX STUCK_COMM ":"
/* The prefix, the key or "#" and 16 hex digits, the NUL: within memfd's 249. */
#define MARK_MAX (sizeof(MARK_PREFIX) + STUCK_KEY_MAX + 1)
/* What readlink() of the memfd gives: "/memfd:NAME (deleted)". */
#define LINK_MAX_LEN (MARK_MAX + 32)

_Static_assert(MARK_MAX <= 249, "memfd_create() takes names of 249 bytes at most");

static void
put(char *buf, size_t *pos, const char *s)
{
	size_t len = strlen(s);

	memcpy(buf + *pos, s, len);
	*pos += len;
	buf[*pos] = '\0';
}

/* The memfd's name for KEY, into BUF (MARK_MAX bytes).  Async-signal-safe. */
static void
mark_name(const char *key, char *buf)
{
	static const char hex[] = "0123456789abcdef";
	uint64_t h = 0xcbf29ce484222325ULL;
	size_t pos = 0;

	buf[0] = '\0';
	put(buf, &pos, MARK_PREFIX);
	if (strlen(key) <= STUCK_KEY_MAX) {
		put(buf, &pos, key);
		return;
	}
	/* FNV-1a, 64 bits: a name, not a secret (the owner and program
	 * checks are the guard), and no two configured paths are likely to
	 * share one. */
	for (const unsigned char *c = (const unsigned char *)key; *c; c++) {
		h ^= *c;
		h *= 0x100000001b3ULL;
	}
	buf[pos++] = '#';
	for (int i = 15; i >= 0; i--)
		buf[pos++] = hex[(h >> (i * 4)) & 0xf];
	buf[pos] = '\0';
}

int
stuck_mark(const char *key)
{
	char name[MARK_MAX];
	int fd;

	/* The name ps shows; prctl() names the calling thread, which in a
	 * forked child is the whole process. */
	(void)prctl(PR_SET_NAME, STUCK_COMM, 0, 0, 0);
	mark_name(key, name);
	fd = memfd_create(name, MFD_CLOEXEC);
	/* Left open on purpose: the mark lasts as long as the process. */
	return fd < 0 ? -errno : 0;
}

/* Up to LEN - 1 bytes of file NAME in directory DFD, NUL-terminated; -1 on failure. */
static ssize_t
read_small(int dfd, const char *name, char *buf, size_t len)
{
	int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	ssize_t n;

	if (fd < 0)
		return -1;
	do
		n = read(fd, buf, len - 1);
	while (n < 0 && errno == EINTR);
	(void)close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return n;
}

/*
 * From /proc/PID/stat: whether the process is alive (not a zombie) and
 * its start time in seconds since boot.  The name in parentheses may hold
 * anything, spaces and ')' included: the fields are read after the last
 * ')'; the state is the first of them, the start time the twentieth.
 */
static bool
read_stat(int pfd, double *start_s)
{
	char buf[1024], *p, *end;
	unsigned long long ticks;
	long hz = sysconf(_SC_CLK_TCK);

	if (read_small(pfd, "stat", buf, sizeof(buf)) <= 0 || hz <= 0)
		return false;
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X' || !p[2])
		return false;
	p += 2;
	for (int field = 1; field < 20; field++) {
		p = strchr(p, ' ');
		if (!p)
			return false;
		p++;
	}
	if (!isdigit((unsigned char)*p))
		return false;
	errno = 0;
	ticks = strtoull(p, &end, 10);
	if (errno || (*end != ' ' && *end != '\n' && *end != '\0'))
		return false;
	*start_s = (double)ticks / (double)hz;
	return true;
}

/*
 * Whether the process whose /proc directory is PFD is a marked probe of
 * ours (the same executable SELF, owner UID, named STUCK_COMM) that has
 * lived MIN_AGE_S: its age in *AGE.
 */
static bool
candidate(int pfd, uid_t uid, const struct stat *self, double now_s, double min_age_s,
          double *age)
{
	char comm[32];
	struct stat st;
	double start;

	if (read_small(pfd, "comm", comm, sizeof(comm)) < 0 || strcmp(comm, STUCK_COMM "\n") != 0)
		return false;
	/* /proc/PID belongs to the process's effective user (root for one
	 * that is not dumpable, as a setuid program). */
	if (fstat(pfd, &st) < 0 || st.st_uid != uid)
		return false;
	/* Any user can name a process so, and hand it a memfd with any name
	 * through exec (a setuid program included): it must be vigil. */
	if (fstatat(pfd, "exe", &st, 0) < 0 || st.st_dev != self->st_dev ||
	    st.st_ino != self->st_ino)
		return false;
	if (!read_stat(pfd, &start))
		return false;
	*age = now_s - start;
	return *age >= min_age_s;
}

/* The fd links of the process at PFD against every key's mark. */
static void
match_marks(int pfd, pid_t pid, double age, char (*links)[LINK_MAX_LEN], size_t n,
            struct stuck *out)
{
	DIR *d = util_opendir_at(pfd, "fd");
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		char link[LINK_MAX_LEN];
		ssize_t len;

		if (e->d_name[0] == '.')
			continue;
		len = readlinkat(dirfd(d), e->d_name, link, sizeof(link) - 1);
		if (len <= 0 || (size_t)len >= sizeof(link) - 1)
			continue;
		link[len] = '\0';
		for (size_t i = 0; i < n; i++) {
			if (strcmp(link, links[i]) == 0 && (!out[i].pid || age > out[i].age_s)) {
				out[i].pid = pid;
				out[i].age_s = age;
			}
		}
	}
	(void)closedir(d);
}

int
stuck_find(const char *const *keys, size_t n, double min_age_s, struct stuck *out)
{
	char (*links)[LINK_MAX_LEN];
	struct timespec ts;
	struct stat self;
	struct dirent *e;
	pid_t me = getpid();
	uid_t uid = geteuid();
	DIR *d;
	int rc = 0;

	if (n == 0)
		return 0;
	memset(out, 0, n * sizeof(*out));
	links = calloc(n, sizeof(*links));
	if (!links)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		char name[MARK_MAX];

		mark_name(keys[i], name);
		strcpy(links[i], "/memfd:");
		strcat(links[i], name);
		strcat(links[i], " (deleted)");
	}
	/* /proc/PID/stat's start time counts from boot, suspend included. */
	if (stat("/proc/self/exe", &self) < 0 || clock_gettime(CLOCK_BOOTTIME, &ts) < 0 ||
	    !(d = opendir("/proc"))) {
		rc = -errno;
		goto out;
	}
	while ((e = readdir(d))) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		double age;
		int pfd;

		if (*end || pid <= 0 || pid == me || !isdigit((unsigned char)e->d_name[0]))
			continue;
		pfd = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (pfd < 0)
			continue;  /* gone meanwhile */
		if (candidate(pfd, uid, &self, (double)ts.tv_sec + (double)ts.tv_nsec / 1e9,
		              min_age_s, &age))
			match_marks(pfd, (pid_t)pid, age, links, n, out);
		(void)close(pfd);
	}
	(void)closedir(d);
out:
	free(links);
	return rc;
}
