/*
 * util.c - the clock, writing, the atomic writer, private directories,
 * UTF-8 repair and host names.
 */
#include "autoconf.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/util.h"

/* ---- time --------------------------------------------------------------- */

int64_t
util_now_ns(void)
{
	struct timespec ts;

	/* CLOCK_MONOTONIC cannot fail with a valid clock id and pointer. */
	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

uint64_t
util_now_ms(void)
{
	return (uint64_t)(util_now_ns() / 1000000);
}

double
util_now_s(void)
{
	return (double)util_now_ns() / 1e9;
}

double
util_wall_s(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- writing ------------------------------------------------------------ */

int
util_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

ssize_t
util_read_all(int fd, void *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, (char *)buf + got, len - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

/* Split PATH into its directory (a new string, "." when none) and base. */
static int
split_path(const char *path, char **dir, const char **base)
{
	const char *slash = strrchr(path, '/');

	if (!slash) {
		*dir = strdup(".");
		*base = path;
	} else if (slash == path) {
		*dir = strdup("/");
		*base = slash + 1;
	} else {
		*dir = strndup(path, (size_t)(slash - path));
		*base = slash + 1;
	}
	if (!*dir)
		return -ENOMEM;
	if (!**base || strcmp(*base, ".") == 0 || strcmp(*base, "..") == 0) {
		free(*dir);
		*dir = NULL;
		return -EISDIR;
	}
	return 0;
}

void
util_random_bytes(void *buf, size_t len)
{
	ssize_t n;

	do
		n = getrandom(buf, len, GRND_NONBLOCK);
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)len) {
		/* Early boot without entropy: O_EXCL still makes a create
		 * safe, the name is only less hard to guess. */
		uint64_t t = (uint64_t)util_now_ns() ^ ((uint64_t)getpid() << 32);
		unsigned char *p = buf;

		for (size_t i = 0; i < len; i++)
			p[i] = (unsigned char)(t >> (8 * (i % 8)));
	}
}

/* ".BASE.vigil-XXXXXXXXXXXX" with random hex, for the temporary file. */
static int
temp_name(const char *base, char *buf, size_t len)
{
	unsigned char rnd[6];
	int w;

	util_random_bytes(rnd, sizeof(rnd));
	w = snprintf(buf, len, ".%.200s.vigil-%02x%02x%02x%02x%02x%02x", base, rnd[0], rnd[1],
	             rnd[2], rnd[3], rnd[4], rnd[5]);
	return w < 0 || (size_t)w >= len ? -ENAMETOOLONG : 0;
}

int
util_write_atomic_at(int dfd, const char *name, const void *data, size_t len, mode_t mode)
{
	char tmp[256];
	int fd = -1, rc, tries = 0;

	if (!name || !*name || strchr(name, '/') || strcmp(name, ".") == 0 ||
	    strcmp(name, "..") == 0 || (mode & 022))
		return -EINVAL;
	do {
		rc = temp_name(name, tmp, sizeof(tmp));
		if (rc < 0)
			return rc;
		/* Mode 0600 until the content is whole; O_NOFOLLOW and O_EXCL:
		 * whatever another user planted under this name is refused. */
		fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	} while (fd < 0 && errno == EEXIST && ++tries < 8);
	if (fd < 0)
		return -errno;
	if (fchmod(fd, mode) < 0 || (rc = util_write_all(fd, data, len)) < 0 ||
	    fsync(fd) < 0) {
		if (rc == 0)
			rc = -errno;
		goto unlink;
	}
	rc = close(fd) < 0 ? -errno : 0;
	fd = -1;
	if (rc == 0 && renameat(dfd, tmp, dfd, name) < 0)
		rc = -errno;
	if (rc < 0)
		goto unlink;
	/* The new name survives a crash once the directory is synced; the
	 * file is already correct if this fails, so it is not reported. */
	(void)fsync(dfd);
	return 0;
unlink:
	if (fd >= 0)
		(void)close(fd);
	(void)unlinkat(dfd, tmp, 0);  /* already failing: leave nothing behind */
	return rc;
}

int
util_write_atomic(const char *path, const void *data, size_t len, mode_t mode)
{
	char *dir = NULL;
	const char *base;
	int dfd, rc;

	if (!path || !*path || (mode & 022))
		return -EINVAL;
	rc = split_path(path, &dir, &base);
	if (rc < 0)
		return rc;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	free(dir);
	if (dfd < 0)
		return -errno;
	rc = util_write_atomic_at(dfd, base, data, len, mode);
	(void)close(dfd);
	return rc;
}

int
util_write_atomic_str(const char *path, const char *text, mode_t mode)
{
	return util_write_atomic(path, text, text ? strlen(text) : 0, mode);
}

/* ---- directories -------------------------------------------------------- */

int
util_private_dir(const char *parent, const char *prefix, char *buf, size_t len)
{
	int w = snprintf(buf, len, "%s/%s.XXXXXX", parent, prefix);

	if (w < 0 || (size_t)w >= len)
		return -ENAMETOOLONG;
	if (!mkdtemp(buf))
		return -errno;
	return 0;
}

int
util_dir_is_private(const char *dir)
{
	struct stat st;

	if (lstat(dir, &st) < 0)
		return -errno;
	if (S_ISLNK(st.st_mode))
		return -ELOOP;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	if (st.st_uid != geteuid())
		return -EPERM;
	if (st.st_mode & 022)
		return -EACCES;
	return 0;
}

int
util_mkdir_p(const char *path, mode_t mode)
{
	char buf[PATH_MAX];
	size_t len = strlen(path);

	if (len == 0 || len >= sizeof(buf))
		return len ? -ENAMETOOLONG : -ENOENT;
	memcpy(buf, path, len + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, mode) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	return mkdir(buf, mode) < 0 && errno != EEXIST ? -errno : 0;
}

/* Remove everything inside directory DFD (not DFD itself), on device DEV. */
static int
remove_at(int dfd, dev_t dev)
{
	DIR *d = util_opendir_at(dfd, ".");
	struct dirent *e;
	int rc = 0;

	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		struct stat st;
		int sub, r = 0;

		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			r = -errno;
		} else if (S_ISDIR(st.st_mode)) {
			if (st.st_dev != dev)
				continue;  /* a mount point: not ours to empty */
			sub = openat(dfd, e->d_name,
			             O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub < 0) {
				r = -errno;
			} else {
				r = remove_at(sub, dev);
				(void)close(sub);
				if (unlinkat(dfd, e->d_name, AT_REMOVEDIR) < 0 && r == 0)
					r = -errno;
			}
		} else if (unlinkat(dfd, e->d_name, 0) < 0) {
			r = -errno;
		}
		if (r < 0 && rc == 0 && r != -ENOENT)
			rc = r;
	}
	(void)closedir(d);
	return rc;
}

DIR *
util_opendir_at(int dfd, const char *path)
{
	int fd = openat(dfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d;

	if (fd < 0)
		return NULL;
	d = fdopendir(fd);
	if (!d) {
		int e = errno;

		(void)close(fd);
		errno = e;
	}
	return d;
}

int
util_empty_dir_at(int dfd)
{
	struct stat st;

	if (fstat(dfd, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	return remove_at(dfd, st.st_dev);
}

int
util_remove_tree(const char *dir)
{
	int dfd, rc;

	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	rc = util_empty_dir_at(dfd);
	(void)close(dfd);
	if (rmdir(dir) < 0 && rc == 0)
		rc = -errno;
	return rc;
}

/* ---- text --------------------------------------------------------------- */

/*
 * Length of the well-formed UTF-8 sequence at S (N bytes available), or 0
 * when the byte at S starts none (RFC 3629: no overlong forms, no
 * surrogates, nothing above U+10FFFF; NUL counts as invalid here).
 */
static size_t
utf8_seq(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];

	if (c >= 0x01 && c <= 0x7f)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		return n >= 2 && (s[1] & 0xc0) == 0x80 ? 2 : 0;
	if (c >= 0xe0 && c <= 0xef) {
		unsigned char lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;

		return n >= 3 && s[1] >= lo && s[1] <= hi && (s[2] & 0xc0) == 0x80 ? 3 : 0;
	}
	if (c >= 0xf0 && c <= 0xf4) {
		unsigned char lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;

		return n >= 4 && s[1] >= lo && s[1] <= hi && (s[2] & 0xc0) == 0x80 &&
		       (s[3] & 0xc0) == 0x80 ? 4 : 0;
	}
	return 0;
}

bool
util_utf8_valid(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;

	while (i < len) {
		size_t k = utf8_seq(p + i, len - i);

		if (k == 0)
			return false;
		i += k;
	}
	return true;
}

char *
util_fmt_bytes(double bytes, char *buf, size_t len)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	const int top = (int)(sizeof(unit) / sizeof(unit[0])) - 1;
	int u = 0;

	if (!(bytes > 0))
		bytes = 0;
	/* 1023.6 KiB would show as "1024 KiB": that is "1.0 MiB" */
	while (bytes >= 1023.5 && u < top) {
		bytes /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%.0f B", bytes);
	else
		snprintf(buf, len, bytes < 9.95 ? "%.1f %s" : "%.0f %s", bytes, unit[u]);
	return buf;
}

const char *
util_plural(long long n)
{
	return n == 1 ? "" : "s";
}

char *
util_utf8_repair(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, o = 0;
	char *out;

	/* Each bad byte becomes three (EF BF BD): at most 3x, plus the NUL. */
	if (len > (SIZE_MAX - 1) / 3) {
		errno = ENOMEM;
		return NULL;
	}
	out = malloc(len * 3 + 1);
	if (!out)
		return NULL;
	while (i < len) {
		size_t k = utf8_seq(p + i, len - i);

		if (k == 0) {
			memcpy(out + o, "\xef\xbf\xbd", 3);
			o += 3;
			i++;
			continue;
		}
		memcpy(out + o, p + i, k);
		o += k;
		i += k;
	}
	out[o] = '\0';
	return out;
}

int
util_hostname_check(const char *name, char *why, size_t whylen)
{
	size_t len = name ? strlen(name) : 0, label = 0;
	const char *msg = NULL;

	if (len == 0)
		msg = "is empty";
	else if (len > 253)
		msg = "is longer than 253 characters";
	for (size_t i = 0; !msg && i < len; i++) {
		unsigned char c = (unsigned char)name[i];

		if (c == '.') {
			if (label == 0)
				msg = "has an empty label (two dots, or a dot at the start)";
			else if (name[i - 1] == '-')
				msg = "has a label that ends with a hyphen";
			label = 0;
			continue;
		}
		if (c == '\n' || c == '\r')
			msg = "contains a line break";
		else if (c == ' ' || c == '\t')
			msg = "contains a blank";
		else if (c < 0x20 || c >= 0x7f)
			msg = "contains a control or non-ASCII character";
		else if (!(c == '-' || c == '_' || (c >= '0' && c <= '9') ||
		           (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')))
			msg = "contains a character other than letters, digits, '-', '_' and '.'";
		else if (c == '-' && label == 0)
			msg = "has a label that starts with a hyphen";
		else if (++label > 63)
			msg = "has a label longer than 63 characters";
	}
	if (!msg && len > 0 && name[len - 1] == '-')
		msg = "has a label that ends with a hyphen";
	if (msg) {
		if (why && whylen)
			snprintf(why, whylen, "%s", msg);
		return -EINVAL;
	}
	return 0;
}

void
util_local_address(const char *host, bool numeric, char *buf, size_t len)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res = NULL;
	struct ifaddrs *ifa = NULL;

	if (getaddrinfo(host, NULL, &hints, &res) == 0) {
		for (struct addrinfo *a = res; a; a = a->ai_next) {
			struct sockaddr_in *sin = (struct sockaddr_in *)a->ai_addr;

			if ((ntohl(sin->sin_addr.s_addr) >> 24) == 127)
				continue;
			if (numeric)
				inet_ntop(AF_INET, &sin->sin_addr, buf, (socklen_t)len);
			else
				snprintf(buf, len, "%s", host);
			freeaddrinfo(res);
			return;
		}
		freeaddrinfo(res);
	}
	if (getifaddrs(&ifa) == 0) {
		for (struct ifaddrs *i = ifa; i; i = i->ifa_next) {
			if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET ||
			    !(i->ifa_flags & IFF_UP) || (i->ifa_flags & IFF_LOOPBACK))
				continue;
			inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, buf,
			          (socklen_t)len);
			freeifaddrs(ifa);
			return;
		}
		freeifaddrs(ifa);
	}
	snprintf(buf, len, "127.0.0.1");
}
