/*
 * hwmon.c - sysfs and procfs, read under a root directory.
 */
#include "autoconf.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "sys/hwmon.h"
#include "lib/util.h"

/* sysfs attributes fit in a page; procfs files we parse are a few KiB. */
#define LINE_MAX_BYTES 4096
#define FILE_MAX_BYTES (64 * 1024)

struct hwmon {
	int fd;
	char *root;
	bool live;
};

static bool
path_ok(const char *path)
{
	const char *p = path;

	if (!path || !*path || *path == '/')
		return false;
	/* Reject ".." components; symlinks are the kernel's business. */
	while (*p) {
		size_t n = strcspn(p, "/");

		if (n == 2 && p[0] == '.' && p[1] == '.')
			return false;
		p += n;
		while (*p == '/')
			p++;
	}
	return true;
}

/* A name that becomes one path component. */
static bool
name_ok(const char *name)
{
	return name && *name && !strchr(name, '/') && strcmp(name, ".") != 0 &&
	       strcmp(name, "..") != 0 && strlen(name) < NAME_MAX;
}

int
hwmon_open(const char *root, struct hwmon **out)
{
	struct hwmon *h = NULL;
	struct stat st, slash;
	int rc;

	*out = NULL;
	if (!root)
		root = "/";
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->fd = -1;
	h->root = strdup(root);
	if (!h->root) {
		rc = -ENOMEM;
		goto out;
	}
	h->fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (h->fd < 0) {
		rc = -errno;
		goto out;
	}
	/* A root without sys/ is a mistyped --sysfs-root, not a node whose
	 * every device is missing. */
	if (fstatat(h->fd, "sys", &st, 0) < 0) {
		rc = -errno;
		goto out;
	}
	if (!S_ISDIR(st.st_mode)) {
		rc = -ENOTDIR;
		goto out;
	}
	if (fstat(h->fd, &st) == 0 && stat("/", &slash) == 0)
		h->live = st.st_dev == slash.st_dev && st.st_ino == slash.st_ino;
	*out = h;
	return 0;
out:
	hwmon_free(h);
	return rc;
}

void
hwmon_free(struct hwmon *h)
{
	if (!h)
		return;
	if (h->fd >= 0)
		(void)close(h->fd);  /* read-only descriptor: nothing to flush */
	free(h->root);
	free(h);
}

const char *
hwmon_root(const struct hwmon *h)
{
	return h->root;
}

bool
hwmon_is_live(const struct hwmon *h)
{
	return h->live;
}

int
hwmon_exists(struct hwmon *h, const char *path)
{
	struct stat st;

	if (!path_ok(path))
		return -EINVAL;
	if (fstatat(h->fd, path, &st, 0) < 0)
		return -errno;
	return 0;
}

/*
 * Read at most LEN bytes of PATH into BUF (not NUL-terminated); *MORE says
 * whether the file goes on.  O_NONBLOCK keeps a FIFO planted in a fake
 * tree from hanging us; regular files ignore it.
 */
static ssize_t
read_bounded(struct hwmon *h, const char *path, char *buf, size_t len, bool *more)
{
	struct stat st;
	size_t got = 0;
	ssize_t rc;
	int fd;

	*more = false;
	if (!path_ok(path))
		return -EINVAL;
	fd = openat(h->fd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		goto out;
	}
	if (S_ISDIR(st.st_mode)) {
		rc = -EISDIR;
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = -EINVAL;
		goto out;
	}
	/* e.g. -EINVAL from carrier/speed of a down interface */
	rc = util_read_all(fd, buf, len);
	if (rc < 0)
		goto out;
	got = (size_t)rc;
	if (got == len) {
		char c;
		ssize_t n;

		do
			n = read(fd, &c, 1);
		while (n < 0 && errno == EINTR);
		*more = n > 0;
	}
	rc = (ssize_t)got;
out:
	(void)close(fd);  /* read-only */
	return rc;
}

static void
rtrim(char *s)
{
	size_t n = strlen(s);

	while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' ||
	                 s[n - 1] == '\r'))
		s[--n] = '\0';
}

int
hwmon_read_string(struct hwmon *h, const char *path, char *buf, size_t len)
{
	char tmp[LINE_MAX_BYTES];
	bool more;
	ssize_t n;
	char *nl;

	if (len == 0)
		return -EINVAL;
	buf[0] = '\0';
	n = read_bounded(h, path, tmp, sizeof(tmp) - 1, &more);
	if (n < 0)
		return (int)n;
	tmp[n] = '\0';
	nl = memchr(tmp, '\n', (size_t)n);
	if (nl)
		*nl = '\0';
	else if (more)
		return -EOVERFLOW;
	if (strlen(tmp) != (size_t)(nl ? nl - tmp : n))
		return -EINVAL;  /* a NUL byte inside: not text */
	rtrim(tmp);
	if (strlen(tmp) >= len)
		return -EOVERFLOW;
	memcpy(buf, tmp, strlen(tmp) + 1);
	return 0;
}

static int
parse_ll(const char *s, long long *out)
{
	char *end;
	long long v;

	while (*s == ' ' || *s == '\t')
		s++;
	if (!*s)
		return -EINVAL;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (end == s)
		return -EINVAL;
	if (errno == ERANGE)
		return -ERANGE;
	while (*end == ' ' || *end == '\t')
		end++;
	if (*end)
		return -EINVAL;
	*out = v;
	return 0;
}

int
hwmon_read_ll(struct hwmon *h, const char *path, long long *out)
{
	char buf[64];
	int rc;

	rc = hwmon_read_string(h, path, buf, sizeof(buf));
	if (rc == -EOVERFLOW)
		return -EINVAL;  /* far too long to be a number */
	if (rc < 0)
		return rc;
	return parse_ll(buf, out);
}

int
hwmon_read_state(struct hwmon *h, const char *path, int *num, char *text, size_t len)
{
	char buf[128];
	char *end, *p;
	long v;
	int rc;

	rc = hwmon_read_string(h, path, buf, sizeof(buf));
	if (rc == -EOVERFLOW)
		return -EINVAL;
	if (rc < 0)
		return rc;
	p = buf;
	while (*p == ' ')
		p++;
	errno = 0;
	v = strtol(p, &end, 10);
	if (end == p || errno || v < 0 || v > INT_MAX || *end != ':')
		return -EINVAL;
	p = end + 1;
	while (*p == ' ' || *p == '\t')
		p++;
	if (text && len > 0) {
		if (strlen(p) >= len)
			return -EOVERFLOW;
		memcpy(text, p, strlen(p) + 1);
	}
	*num = (int)v;
	return 0;
}

/*
 * Read up to FILE_MAX_BYTES of PATH as text, NUL-terminated, dropping a
 * line cut off by the bound.  *out must be freed.
 */
static int
read_text(struct hwmon *h, const char *path, char **out)
{
	bool more;
	ssize_t n;
	char *buf;

	*out = NULL;
	buf = malloc(FILE_MAX_BYTES + 1);
	if (!buf)
		return -ENOMEM;
	n = read_bounded(h, path, buf, FILE_MAX_BYTES, &more);
	if (n < 0) {
		free(buf);
		return (int)n;
	}
	buf[n] = '\0';
	if (more) {
		char *nl = strrchr(buf, '\n');

		if (nl)
			nl[1] = '\0';
		else
			buf[0] = '\0';
	}
	*out = buf;
	return 0;
}

/* Split LINE (modified) into at most MAX whitespace-separated tokens. */
static size_t
tokens(char *line, char **tok, size_t max)
{
	size_t n = 0;
	char *save = NULL;

	for (char *t = strtok_r(line, " \t\r", &save); t && n < max;
	     t = strtok_r(NULL, " \t\r", &save))
		tok[n++] = t;
	return n;
}

static bool
key_matches(const char *tok, const char *key)
{
	size_t k = strlen(key);

	return strncmp(tok, key, k) == 0 && (tok[k] == '\0' || (tok[k] == ':' && tok[k + 1] == '\0'));
}

int
hwmon_read_keyed_ll(struct hwmon *h, const char *path, const char *key, long long *out)
{
	char *text, *line, *save = NULL;
	int rc;

	rc = read_text(h, path, &text);
	if (rc < 0)
		return rc;
	rc = -ENODATA;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *tok[8];
		size_t n = tokens(line, tok, 8);

		for (size_t i = 0; i + 1 < n; i++) {
			if (key_matches(tok[i], key)) {
				rc = parse_ll(tok[i + 1], out);
				goto out;
			}
		}
	}
out:
	free(text);
	return rc;
}

/*
 * The AER total of PATH: its TOTAL_* line, or, on kernels whose files lack
 * one, the sum of every "NAME COUNT" line.
 */
static int
read_aer_total(struct hwmon *h, const char *path, const char *total_key, long long *out)
{
	char *text, *line, *save = NULL;
	long long sum = 0;
	bool any = false;
	int rc;

	rc = hwmon_read_keyed_ll(h, path, total_key, out);
	if (rc != -ENODATA)
		return rc;
	rc = read_text(h, path, &text);
	if (rc < 0)
		return rc;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *tok[3];
		long long v;

		if (tokens(line, tok, 3) != 2 || parse_ll(tok[1], &v) < 0 || v < 0) {
			rc = -EINVAL;
			goto out;
		}
		if (v > LLONG_MAX - sum)
			v = LLONG_MAX - sum;
		sum += v;
		any = true;
	}
	if (!any) {
		rc = -ENODATA;
		goto out;
	}
	*out = sum;
	rc = 0;
out:
	free(text);
	return rc;
}

int
hwmon_readlink_base(struct hwmon *h, const char *path, char *buf, size_t len)
{
	char target[PATH_MAX];
	const char *base;
	ssize_t n;

	if (len == 0 || !path_ok(path))
		return -EINVAL;
	n = readlinkat(h->fd, path, target, sizeof(target) - 1);
	if (n < 0)
		return -errno;
	target[n] = '\0';
	while (n > 1 && target[n - 1] == '/')
		target[--n] = '\0';
	base = strrchr(target, '/');
	base = base ? base + 1 : target;
	if (!*base)
		return -EINVAL;
	if (strlen(base) >= len)
		return -EOVERFLOW;
	memcpy(buf, base, strlen(base) + 1);
	return 0;
}

static int
cmp_natural(const void *a, const void *b)
{
	return strverscmp(*(char *const *)a, *(char *const *)b);
}

void
hwmon_list_free(char **names, size_t n)
{
	if (!names)
		return;
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

int
hwmon_list(struct hwmon *h, const char *dir, char ***names, size_t *n)
{
	char **v = NULL;
	size_t cnt = 0, cap = 0;
	struct dirent *de;
	DIR *d = NULL;
	int rc;

	*names = NULL;
	*n = 0;
	if (!path_ok(dir))
		return -EINVAL;
	d = util_opendir_at(h->fd, dir);
	if (!d)
		return -errno;
	for (;;) {
		errno = 0;
		de = readdir(d);
		if (!de) {
			if (errno) {
				rc = -errno;
				goto out;
			}
			break;
		}
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (cnt == cap) {
			size_t ncap = cap ? cap * 2 : 16;
			char **nv = realloc(v, ncap * sizeof(*nv));

			if (!nv) {
				rc = -ENOMEM;
				goto out;
			}
			v = nv;
			cap = ncap;
		}
		v[cnt] = strdup(de->d_name);
		if (!v[cnt]) {
			rc = -ENOMEM;
			goto out;
		}
		cnt++;
	}
	if (cnt > 1)
		qsort(v, cnt, sizeof(*v), cmp_natural);
	*names = v;
	*n = cnt;
	v = NULL;
	cnt = 0;
	rc = 0;
out:
	hwmon_list_free(v, cnt);
	(void)closedir(d);  /* also closes fd */
	return rc;
}

int
hwmon_statvfs(struct hwmon *h, const char *path, struct statvfs *out)
{
	int fd, rc = 0;

	if (!path_ok(path))
		return -EINVAL;
	/* O_PATH: no read permission needed, and fstatvfs accepts it. */
	fd = openat(h->fd, path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstatvfs(fd, out) < 0)
		rc = -errno;
	(void)close(fd);
	return rc;
}

/* --- PCI ---------------------------------------------------------------- */

/* "16.0 GT/s PCIe" -> 16.0; "Unknown", garbage -> 0. */
static double
leading_number(const char *s)
{
	char *end;
	double v;

	v = strtod(s, &end);
	if (end == s || !(v > 0) || v > 1e9)
		return 0;
	return v;
}

int
hwmon_pci_read(struct hwmon *h, const char *bus_id, struct hwmon_pci *out)
{
	char base[96], path[160];
	long long v;
	int rc;

	memset(out, 0, sizeof(*out));
	out->aer_correctable = out->aer_nonfatal = out->aer_fatal = -1;
	if (!name_ok(bus_id) || strlen(bus_id) > 32)
		return -EINVAL;
	snprintf(base, sizeof(base), "sys/bus/pci/devices/%s", bus_id);
	rc = hwmon_exists(h, base);
	if (rc < 0)
		return rc;

	/* The link names the driver; it is read, not followed, so a tree
	 * built by hand needs no drivers directory behind it. */
	snprintf(path, sizeof(path), "%s/driver", base);
	if (hwmon_readlink_base(h, path, out->driver, sizeof(out->driver)) < 0)
		out->driver[0] = '\0';
	snprintf(path, sizeof(path), "%s/driver/module", base);
	if (out->driver[0] &&
	    hwmon_readlink_base(h, path, out->module, sizeof(out->module)) < 0)
		out->module[0] = '\0';

	snprintf(path, sizeof(path), "%s/current_link_speed", base);
	if (hwmon_read_string(h, path, out->cur_speed, sizeof(out->cur_speed)) < 0)
		out->cur_speed[0] = '\0';
	snprintf(path, sizeof(path), "%s/max_link_speed", base);
	if (hwmon_read_string(h, path, out->max_speed, sizeof(out->max_speed)) < 0)
		out->max_speed[0] = '\0';
	out->cur_gts = leading_number(out->cur_speed);
	out->max_gts = leading_number(out->max_speed);

	snprintf(path, sizeof(path), "%s/current_link_width", base);
	if (hwmon_read_ll(h, path, &v) == 0 && v > 0 && v <= 64)
		out->cur_width = (int)v;
	snprintf(path, sizeof(path), "%s/max_link_width", base);
	if (hwmon_read_ll(h, path, &v) == 0 && v > 0 && v <= 64)
		out->max_width = (int)v;

	snprintf(path, sizeof(path), "%s/aer_dev_correctable", base);
	if (read_aer_total(h, path, "TOTAL_ERR_COR", &v) == 0 && v >= 0)
		out->aer_correctable = v;
	snprintf(path, sizeof(path), "%s/aer_dev_nonfatal", base);
	if (read_aer_total(h, path, "TOTAL_ERR_NONFATAL", &v) == 0 && v >= 0)
		out->aer_nonfatal = v;
	snprintf(path, sizeof(path), "%s/aer_dev_fatal", base);
	if (read_aer_total(h, path, "TOTAL_ERR_FATAL", &v) == 0 && v >= 0)
		out->aer_fatal = v;
	return 0;
}

/* --- Network ------------------------------------------------------------ */

int
hwmon_nic_read(struct hwmon *h, const char *ifname, struct hwmon_nic *out)
{
	char base[NAME_MAX + 32], path[NAME_MAX + 64];
	long long v;
	int rc;

	memset(out, 0, sizeof(*out));
	out->carrier = -1;
	out->speed_mbps = -1;
	if (!name_ok(ifname))
		return -EINVAL;
	snprintf(base, sizeof(base), "sys/class/net/%s", ifname);
	rc = hwmon_exists(h, base);
	if (rc < 0)
		return rc;
	snprintf(path, sizeof(path), "%s/operstate", base);
	if (hwmon_read_string(h, path, out->operstate, sizeof(out->operstate)) < 0)
		out->operstate[0] = '\0';
	/* carrier and speed fail with EINVAL while the interface is down. */
	snprintf(path, sizeof(path), "%s/carrier", base);
	if (hwmon_read_ll(h, path, &v) == 0 && (v == 0 || v == 1))
		out->carrier = (int)v;
	snprintf(path, sizeof(path), "%s/speed", base);
	if (hwmon_read_ll(h, path, &v) == 0 && v > 0)
		out->speed_mbps = v;
	return 0;
}

int
hwmon_ib_devices(struct hwmon *h, char ***names, size_t *n)
{
	int rc = hwmon_list(h, "sys/class/infiniband", names, n);

	return rc == -ENOENT ? 0 : rc;
}

int
hwmon_ib_counter(struct hwmon *h, const char *dev, unsigned port, const char *name,
                 long long *out)
{
	char path[2 * NAME_MAX + 64];

	if (!name_ok(dev) || !name_ok(name))
		return -EINVAL;
	snprintf(path, sizeof(path), "sys/class/infiniband/%s/ports/%u/counters/%s", dev, port,
	         name);
	return hwmon_read_ll(h, path, out);
}

static bool
parse_uint(const char *s, unsigned *out)
{
	char *end;
	unsigned long v;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (*end || errno || v > UINT_MAX)
		return false;
	*out = (unsigned)v;
	return true;
}

int
hwmon_ib_ports(struct hwmon *h, const char *dev, struct hwmon_ib_port **ports, size_t *n)
{
	char base[NAME_MAX + 48], path[NAME_MAX + 96];
	struct hwmon_ib_port *v = NULL;
	char **names = NULL;
	size_t nnames = 0, cnt = 0;
	int rc;

	*ports = NULL;
	*n = 0;
	if (!name_ok(dev))
		return -EINVAL;
	snprintf(base, sizeof(base), "sys/class/infiniband/%s", dev);
	rc = hwmon_exists(h, base);
	if (rc < 0)
		return rc;
	snprintf(path, sizeof(path), "%s/ports", base);
	rc = hwmon_list(h, path, &names, &nnames);
	if (rc == -ENOENT || rc == -ENOTDIR)
		return 0;  /* a device without ports: the caller judges */
	if (rc < 0)
		return rc;
	if (nnames) {
		v = calloc(nnames, sizeof(*v));
		if (!v) {
			rc = -ENOMEM;
			goto out;
		}
	}
	for (size_t i = 0; i < nnames; i++) {
		struct hwmon_ib_port *p = &v[cnt];
		long long c;

		if (!parse_uint(names[i], &p->port))
			continue;
		p->state = p->phys_state = -1;
		p->link_downed = p->symbol_error = -1;
		snprintf(path, sizeof(path), "%s/ports/%u/state", base, p->port);
		if (hwmon_read_state(h, path, &p->state, p->state_text, sizeof(p->state_text)) < 0) {
			p->state = -1;
			p->state_text[0] = '\0';
		}
		snprintf(path, sizeof(path), "%s/ports/%u/phys_state", base, p->port);
		if (hwmon_read_state(h, path, &p->phys_state, p->phys_state_text,
		                     sizeof(p->phys_state_text)) < 0) {
			p->phys_state = -1;
			p->phys_state_text[0] = '\0';
		}
		snprintf(path, sizeof(path), "%s/ports/%u/rate", base, p->port);
		if (hwmon_read_string(h, path, p->rate, sizeof(p->rate)) < 0)
			p->rate[0] = '\0';
		p->rate_gbps = leading_number(p->rate);
		if (hwmon_ib_counter(h, dev, p->port, "link_downed", &c) == 0 && c >= 0)
			p->link_downed = c;
		if (hwmon_ib_counter(h, dev, p->port, "symbol_error", &c) == 0 && c >= 0)
			p->symbol_error = c;
		cnt++;
	}
	if (cnt == 0) {
		free(v);
		v = NULL;
	}
	*ports = v;
	*n = cnt;
	v = NULL;
	rc = 0;
out:
	free(v);
	hwmon_list_free(names, nnames);
	return rc;
}

/* --- Memory ------------------------------------------------------------- */

int
hwmon_numa_meminfo(struct hwmon *h, struct hwmon_numa_node **nodes, size_t *n)
{
	struct hwmon_numa_node *v = NULL;
	char **names = NULL;
	size_t nnames = 0, cnt = 0;
	char path[NAME_MAX + 64];
	int rc;

	*nodes = NULL;
	*n = 0;
	rc = hwmon_list(h, "sys/devices/system/node", &names, &nnames);
	if (rc == -ENOTDIR)
		rc = -ENOENT;
	if (rc < 0)
		return rc;
	if (nnames) {
		v = calloc(nnames, sizeof(*v));
		if (!v) {
			rc = -ENOMEM;
			goto out;
		}
	}
	for (size_t i = 0; i < nnames; i++) {
		struct hwmon_numa_node *node = &v[cnt];
		unsigned id;

		if (strncmp(names[i], "node", 4) != 0 || !parse_uint(names[i] + 4, &id) ||
		    id > INT_MAX)
			continue;
		node->node = (int)id;
		snprintf(path, sizeof(path), "sys/devices/system/node/%s/meminfo", names[i]);
		if (hwmon_read_keyed_ll(h, path, "MemTotal", &node->total_kb) < 0 ||
		    hwmon_read_keyed_ll(h, path, "MemFree", &node->free_kb) < 0 ||
		    node->total_kb < 0 || node->free_kb < 0)
			continue;
		cnt++;
	}
	if (cnt == 0) {
		free(v);
		v = NULL;
	}
	*nodes = v;
	*n = cnt;
	v = NULL;
	rc = 0;
out:
	free(v);
	hwmon_list_free(names, nnames);
	return rc;
}

int
hwmon_meminfo(struct hwmon *h, long long *total_kb, long long *free_kb)
{
	int rc;

	rc = hwmon_read_keyed_ll(h, "proc/meminfo", "MemTotal", total_kb);
	if (rc < 0)
		return rc;
	return hwmon_read_keyed_ll(h, "proc/meminfo", "MemFree", free_kb);
}

int
hwmon_memory_nodes(struct hwmon *h, struct hwmon_numa_node **nodes, size_t *n,
                   const char **source)
{
	long long total, freekb;
	int rc;

	if (source)
		*source = "sysfs";
	rc = hwmon_numa_meminfo(h, nodes, n);
	if (rc == -ENOMEM || (rc == 0 && *n > 0))
		return rc;
	/* A kernel without NUMA has one node: the whole machine. */
	free(*nodes);
	*nodes = NULL;
	*n = 0;
	if (source)
		*source = "proc/meminfo";
	rc = hwmon_meminfo(h, &total, &freekb);
	if (rc < 0)
		return rc;
	*nodes = calloc(1, sizeof(**nodes));
	if (!*nodes)
		return -ENOMEM;
	(*nodes)[0].total_kb = total;
	(*nodes)[0].free_kb = freekb;
	*n = 1;
	return 0;
}

/* --- Drivers ------------------------------------------------------------ */

/* "535.104.05": digits, at least one dot, nothing else. */
static bool
is_version(const char *s)
{
	bool dot = false;

	if (*s < '0' || *s > '9')
		return false;
	for (; *s; s++) {
		if (*s == '.') {
			if (s[1] < '0' || s[1] > '9')
				return false;
			dot = true;
		} else if (*s < '0' || *s > '9') {
			return false;
		}
	}
	return dot;
}

static int
copy_out(const char *s, char *buf, size_t len)
{
	if (len == 0 || strlen(s) >= len)
		return -EOVERFLOW;
	memcpy(buf, s, strlen(s) + 1);
	return 0;
}

int
hwmon_nvidia_version(struct hwmon *h, char *buf, size_t len)
{
	char *text, *line, *save = NULL;
	int rc;

	/*
	 * "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 ..."
	 * "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  535.104.05  Release Build ..."
	 * The version is the first token made of digits and dots.
	 */
	rc = read_text(h, "proc/driver/nvidia/version", &text);
	if (rc < 0)
		return rc;
	rc = -EINVAL;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *tok[24];
		size_t n;

		if (strncmp(line, "NVRM version:", 13) != 0)
			continue;
		n = tokens(line + 13, tok, 24);
		for (size_t i = 0; i < n; i++) {
			if (is_version(tok[i])) {
				rc = copy_out(tok[i], buf, len);
				goto out;
			}
		}
		break;
	}
out:
	free(text);
	return rc;
}

/*
 * The value of "KEY:" in a driver's information file (NVIDIA's
 * "Model: \t\t NVIDIA H200", Cambricon's "Driver Version: v5.10.22"), blanks
 * around it dropped.  -ENODATA when the key is missing or empty.
 */
static int
info_value(struct hwmon *h, const char *path, const char *key, char *buf, size_t len)
{
	size_t klen = strlen(key);
	char *text, *line, *save = NULL;
	int rc;

	rc = read_text(h, path, &text);
	if (rc < 0)
		return rc;
	rc = -ENODATA;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *v;

		while (*line == ' ' || *line == '\t')
			line++;
		if (strncmp(line, key, klen) != 0 || line[klen] != ':')
			continue;
		v = line + klen + 1;
		while (*v == ' ' || *v == '\t')
			v++;
		rtrim(v);
		if (*v)
			rc = copy_out(v, buf, len);
		break;
	}
	free(text);
	return rc;
}

int
hwmon_cambricon_version(struct hwmon *h, const char *bus_id, char *buf, size_t len)
{
	char path[NAME_MAX + 64], v[64];
	const char *p = v;
	int rc;

	if (!name_ok(bus_id))
		return -EINVAL;
	snprintf(path, sizeof(path), "proc/driver/cambricon/mlus/%s/information", bus_id);
	rc = info_value(h, path, "Driver Version", v, sizeof(v));
	if (rc == -ENODATA)
		return -EINVAL;
	if (rc < 0)
		return rc;
	if (*p == 'v' || *p == 'V')
		p++;
	return is_version(p) ? copy_out(p, buf, len) : -EINVAL;
}

int
hwmon_board_model(struct hwmon *h, enum hwmon_board_driver driver, const char *bus_id,
                  char *buf, size_t len)
{
	char path[NAME_MAX + 64];

	if (!name_ok(bus_id))
		return -EINVAL;
	switch (driver) {
	case HWMON_DRIVER_NVIDIA:
		snprintf(path, sizeof(path), "proc/driver/nvidia/gpus/%s/information", bus_id);
		return info_value(h, path, "Model", buf, len);
	case HWMON_DRIVER_CAMBRICON:
		snprintf(path, sizeof(path), "proc/driver/cambricon/mlus/%s/information", bus_id);
		return info_value(h, path, "Device name", buf, len);
	}
	return -ENOENT;
}

int
hwmon_module_version(struct hwmon *h, const char *module, char *buf, size_t len)
{
	char path[NAME_MAX + 32];
	int rc;

	if (!name_ok(module))
		return -EINVAL;
	snprintf(path, sizeof(path), "sys/module/%s/version", module);
	rc = hwmon_read_string(h, path, buf, len);
	if (rc == 0 && !buf[0])
		return -ENODATA;
	return rc;
}

/* ---- processes ---------------------------------------------------------- */

int
hwmon_proc_stat(struct hwmon *h, int pid, struct hwmon_proc *out)
{
	char path[32], line[LINE_MAX_BYTES], *p;
	const char *open_paren, *close_paren;
	long long f[21];
	size_t clen;
	int rc;

	memset(out, 0, sizeof(*out));
	if (pid <= 0)
		return -EINVAL;
	snprintf(path, sizeof(path), "proc/%d/stat", pid);
	rc = hwmon_read_string(h, path, line, sizeof(line));
	if (rc < 0)
		return rc == -ESRCH ? -ENOENT : rc;
	/* "PID (COMM) S PPID PGRP SESSION ... UTIME STIME CUTIME CSTIME ...
	 * RSS ...": COMM may hold ") ", so the fields start after the last
	 * ')'. */
	open_paren = strchr(line, '(');
	close_paren = strrchr(line, ')');
	if (!open_paren || !close_paren || close_paren < open_paren || close_paren[1] != ' ' ||
	    !close_paren[2])
		return -EINVAL;
	out->state = close_paren[2];
	p = (char *)close_paren + 3;
	/* Fields 4 (ppid) to 24 (rss): f[0] is field 4.  The tree's (ppid,
	 * pgrp, session) must be there; the use is 0 where a line stops short. */
	memset(f, 0, sizeof(f));
	for (int i = 0; i < 21; i++) {
		char *end;

		errno = 0;
		f[i] = strtoll(p, &end, 10);
		if (end == p && i >= 3 && !p[strspn(p, " \t\n")])
			break;
		if (end == p || errno)
			return -EINVAL;
		p = end;
	}
	if (f[0] < 0 || f[0] > INT_MAX || f[10] < 0 || f[11] < 0 || f[12] < 0 || f[13] < 0)
		return -EINVAL;
	out->ppid = (int)f[0];
	out->pgid = (int)f[1];
	out->sid = (int)f[2];
	out->cpu_ticks = (unsigned long long)f[10] + (unsigned long long)f[11] +
	                 (unsigned long long)f[12] + (unsigned long long)f[13];
	out->rss_pages = f[20] > 0 ? f[20] : 0;
	out->start_ticks = f[18] > 0 ? (unsigned long long)f[18] : 0;
	clen = (size_t)(close_paren - open_paren - 1);
	if (clen >= sizeof(out->comm))
		clen = sizeof(out->comm) - 1;
	memcpy(out->comm, open_paren + 1, clen);
	out->comm[clen] = '\0';
	out->pid = pid;
	return 0;
}

static int
cmp_proc(const void *a, const void *b)
{
	const struct hwmon_proc *x = a, *y = b;

	return (x->pid > y->pid) - (x->pid < y->pid);
}

int
hwmon_procs(struct hwmon *h, struct hwmon_proc **procs, size_t *n)
{
	struct hwmon_proc *v = NULL;
	size_t nv = 0;
	char **names = NULL;
	size_t nnames = 0;
	int rc;

	*procs = NULL;
	*n = 0;
	rc = hwmon_list(h, "proc", &names, &nnames);
	if (rc < 0)
		return rc;
	if (nnames > 0) {
		v = calloc(nnames, sizeof(*v));
		if (!v) {
			hwmon_list_free(names, nnames);
			return -ENOMEM;
		}
	}
	for (size_t i = 0; i < nnames; i++) {
		char *end;
		long pid = strtol(names[i], &end, 10);

		if (*end || pid <= 0 || pid > INT_MAX)
			continue;
		/* gone since the listing, or not a process: skipped */
		if (hwmon_proc_stat(h, (int)pid, &v[nv]) == 0)
			nv++;
	}
	hwmon_list_free(names, nnames);
	qsort(v, nv, sizeof(*v), cmp_proc);
	if (nv == 0) {
		free(v);
		v = NULL;
	}
	*procs = v;
	*n = nv;
	return 0;
}

int
hwmon_proc_sigmasks(struct hwmon *h, int pid, unsigned long long *caught,
                    unsigned long long *ignored)
{
	char path[32], buf[LINE_MAX_BYTES];
	bool more, got_c = false, got_i = false;
	ssize_t n;

	if (pid <= 0)
		return -EINVAL;
	snprintf(path, sizeof(path), "proc/%d/status", pid);
	n = read_bounded(h, path, buf, sizeof(buf) - 1, &more);
	if (n < 0)
		return n == -ESRCH ? -ENOENT : (int)n;
	buf[n] = '\0';
	for (char *line = buf; line && *line; ) {
		char *nl = strchr(line, '\n');

		if (nl)
			*nl = '\0';
		if (strncmp(line, "SigCgt:", 7) == 0)
			got_c = sscanf(line + 7, " %llx", caught) == 1;
		else if (strncmp(line, "SigIgn:", 7) == 0)
			got_i = sscanf(line + 7, " %llx", ignored) == 1;
		line = nl ? nl + 1 : NULL;
	}
	return got_c && got_i ? 0 : -ENODATA;
}

/* The mount point of the cgroup2 file system in mountinfo TEXT, without
 * its leading '/', into BUF. */
static int
cgroup2_mount(char *text, char *buf, size_t len)
{
	for (char *save = NULL, *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *tok[16], *sep = strstr(line, " - cgroup2 ");
		size_t n;

		if (!sep)
			continue;
		*sep = '\0';
		n = tokens(line, tok, 16);
		/* id parent major:minor root mount-point options ... */
		if (n < 5 || strcmp(tok[3], "/") != 0 || tok[4][0] != '/')
			continue;
		if (strlen(tok[4] + 1) >= len)
			return -EOVERFLOW;
		strcpy(buf, tok[4] + 1);
		return 0;
	}
	return -ENOENT;
}

int
hwmon_cgroup2_self(struct hwmon *h, char *buf, size_t len)
{
	char mount[512], *text = NULL, *path = NULL;
	int rc = read_text(h, "proc/self/mountinfo", &text);

	if (rc < 0)
		return rc;
	rc = cgroup2_mount(text, mount, sizeof(mount));
	free(text);
	if (rc < 0)
		return rc;
	rc = read_text(h, "proc/self/cgroup", &text);
	if (rc < 0)
		return rc;
	for (char *save = NULL, *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (strncmp(line, "0::/", 4) == 0) {
			path = line + 3;
			break;
		}
	}
	if (!path)
		rc = -ENOENT;
	else if ((size_t)snprintf(buf, len, "%s%s", mount, strcmp(path, "/") == 0 ? "" : path) >= len)
		rc = -EOVERFLOW;
	free(text);
	return rc;
}

int
hwmon_cgroup2_delegated(struct hwmon *h, const char *dir)
{
	static const char *const marks[] = { "trusted.delegate", "user.delegate" };
	char procs[PATH_MAX];
	struct stat st;
	int fd, rc = -EPERM;

	if (!path_ok(dir))
		return -EINVAL;
	/* the hierarchy's root lists no cgroup.kill: never delegated */
	snprintf(procs, sizeof(procs), "%s/cgroup.kill", dir);
	if (faccessat(h->fd, procs, F_OK, 0) < 0)
		return -EPERM;
	fd = openat(h->fd, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		rc = -errno;
	} else if (st.st_uid == geteuid() && geteuid() != 0) {
		rc = 0;
	} else {
		for (size_t i = 0; i < sizeof(marks) / sizeof(marks[0]) && rc < 0; i++) {
			char v[8];
			ssize_t n = fgetxattr(fd, marks[i], v, sizeof(v));

			if (n == 1 && v[0] == '1')
				rc = 0;
		}
	}
	(void)close(fd);
	return rc;
}

int
hwmon_cgroup_procs(struct hwmon *h, const char *dir, int **pids, size_t *n)
{
	char path[PATH_MAX], *text = NULL;
	size_t cap = 0, k = 0;
	int *v = NULL, rc;

	*pids = NULL;
	*n = 0;
	if ((size_t)snprintf(path, sizeof(path), "%s/cgroup.procs", dir) >= sizeof(path))
		return -ENAMETOOLONG;
	rc = read_text(h, path, &text);
	if (rc < 0)
		return rc;
	for (char *save = NULL, *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		long long pid;

		if (parse_ll(line, &pid) < 0 || pid <= 0 || pid > INT_MAX)
			continue;
		if (k == cap) {
			int *nv = realloc(v, (cap = cap ? cap * 2 : 16) * sizeof(*v));

			if (!nv) {
				free(v);
				free(text);
				return -ENOMEM;
			}
			v = nv;
		}
		v[k++] = (int)pid;
	}
	free(text);
	*pids = v;
	*n = k;
	return 0;
}
