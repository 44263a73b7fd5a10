/*
 * check.c - the node health checks.
 *
 * Each check gathers facts (hwmon for sysfs and procfs, libnuma, a probe
 * child for storage, getrlimit) into its details, then judges them: every
 * problem found is listed under details "problems", and the first of the
 * worst becomes the one-line reason a sysadmin reads as
 * "vigil: CHECK: REASON".
 */
#include "autoconf.h"

#include <errno.h>
#include <fcntl.h>
#include <numa.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "hwmon.h"
#include "log.h"
#include "timed.h"
#include "util.h"
#include "vendor.h"

#define MIB (1024.0 * 1024.0)
#define NCHECKS 5

struct run {
	const struct check_ctx *ctx;
	const struct config *cfg;
	struct hwmon *hw;
	struct check_report *report;
	bool oom;
};

/* One check being judged. */
struct judge {
	struct run *run;
	struct check_result *r;
	cJSON *problems;
	int nproblems;
};

/* --- details, with allocation failure noted once per run --------------- */

static cJSON *
jadd(struct run *run, cJSON *obj, const char *key, cJSON *item)
{
	if (!item) {
		run->oom = true;
		return NULL;
	}
	if (!obj || !(cJSON_IsArray(obj) ? cJSON_AddItemToArray(obj, item)
	                                 : cJSON_AddItemToObject(obj, key, item))) {
		cJSON_Delete(item);
		run->oom = true;
		return NULL;
	}
	return item;
}

/* "" and NULL are null: unknown. */
static void
jstr(struct run *run, cJSON *obj, const char *key, const char *s)
{
	jadd(run, obj, key, s && *s ? cJSON_CreateString(s) : cJSON_CreateNull());
}

static void
jnum(struct run *run, cJSON *obj, const char *key, double v)
{
	jadd(run, obj, key, cJSON_CreateNumber(v));
}

/* A count where a negative value means unknown. */
static void
jcount(struct run *run, cJSON *obj, const char *key, long long v)
{
	jadd(run, obj, key, v >= 0 ? cJSON_CreateNumber((double)v) : cJSON_CreateNull());
}

static void
jbool(struct run *run, cJSON *obj, const char *key, bool v)
{
	jadd(run, obj, key, cJSON_CreateBool(v));
}

static cJSON *
jobj(struct run *run, cJSON *obj, const char *key)
{
	return jadd(run, obj, key, cJSON_CreateObject());
}

static cJSON *
jarr(struct run *run, cJSON *obj, const char *key)
{
	return jadd(run, obj, key, cJSON_CreateArray());
}

/* --- judging ----------------------------------------------------------- */

static void
judge_start(struct judge *j, struct run *run, struct check_result *r)
{
	j->run = run;
	j->r = r;
	j->nproblems = 0;
	j->problems = jarr(run, r->details, "problems");
}

static void problem(struct judge *j, enum verdict v, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Record a problem; the first of the worst is the reason. */
static void
problem(struct judge *j, enum verdict v, const char *fmt, ...)
{
	char msg[sizeof(j->r->reason)];
	va_list ap;

	if (v == VERDICT_PASS)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	jstr(j->run, j->problems, NULL, msg);
	j->nproblems++;
	if (v > j->r->verdict) {
		j->r->verdict = v;
		memcpy(j->r->reason, msg, sizeof(msg));
	}
}

static void judge_end(struct judge *j, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Finish: a summary as the reason when all is well, else a count of the rest. */
static void
judge_end(struct judge *j, const char *fmt, ...)
{
	size_t len = strlen(j->r->reason);
	va_list ap;

	if (j->r->verdict == VERDICT_PASS) {
		va_start(ap, fmt);
		vsnprintf(j->r->reason, sizeof(j->r->reason), fmt, ap);
		va_end(ap);
	} else if (j->nproblems > 1 && len + 24 < sizeof(j->r->reason)) {
		snprintf(j->r->reason + len, sizeof(j->r->reason) - len, " (+%d more)",
		         j->nproblems - 1);
	}
}

static const char *
plural(long long n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}

/* --- slots ------------------------------------------------------------- */

enum lib { LIB_NVML, LIB_CNDEV };

struct vendor_reply {
	int rc;
	struct vendor_info info;
};

static int
vendor_child(void *arg, int fd)
{
	struct vendor_reply rep;

	memset(&rep, 0, sizeof(rep));
	rep.rc = *(enum lib *)arg == LIB_NVML ? vendor_nvml_query(&rep.info)
	                                      : vendor_cndev_query(&rep.info);
	return util_write_all(fd, &rep, sizeof(rep)) < 0 ? 1 : 0;
}

/*
 * Ask a vendor library about the boards, in a child: NVML can hang on a
 * wedged GPU.  Details go under KEY; returns the library's board count,
 * or -1 when it could not say.
 */
static int
ask_library(struct judge *j, enum lib lib, const char *key, size_t nboards, char *version,
            size_t vlen)
{
	struct run *run = j->run;
	double timeout = run->cfg->check_timeout_s;
	const char *what = lib == LIB_NVML ? "NVML" : "CNDev";
	struct vendor_reply rep;
	ssize_t n;
	cJSON *d;

	d = jobj(run, j->r->details, key);
	memset(&rep, 0, sizeof(rep));
	n = timed_run(vendor_child, &lib, timeout, (char *)&rep, sizeof(rep), NULL);
	if (n == -ETIMEDOUT) {
		jbool(run, d, "available", false);
		jstr(run, d, "error", "timed out");
		problem(j, VERDICT_WARN, "%s did not answer within %g s", what, timeout);
		return -1;
	}
	if (n != (ssize_t)sizeof(rep)) {
		jbool(run, d, "available", false);
		jstr(run, d, "error", n < 0 ? strerror((int)-n) : "the query process failed");
		return -1;
	}
	rep.info.library[sizeof(rep.info.library) - 1] = '\0';
	rep.info.version[sizeof(rep.info.version) - 1] = '\0';
	rep.info.error[sizeof(rep.info.error) - 1] = '\0';
	jstr(run, d, "library", rep.info.library);
	jbool(run, d, "available", rep.rc == 0);
	jstr(run, d, "version", rep.info.version);
	jcount(run, d, "count", rep.info.count);
	jstr(run, d, "error", rep.info.error);
	if (rep.rc == -ENOENT || rep.rc == -ENOSYS) {
		/* Not installed (or an unusable copy): the driver's own files
		 * still tell the version, so this is a note, not a verdict. */
		LOG_DEBUG("%s not usable: %s", what, rep.info.error);
		return -1;
	}
	if (rep.rc < 0) {
		/* Installed but failing, e.g. "Driver/library version
		 * mismatch" after a driver update without a reboot. */
		problem(j, VERDICT_WARN, "%s: %s", what, rep.info.error);
	}
	if (rep.info.version[0] && !version[0])
		snprintf(version, vlen, "%s", rep.info.version);
	if (rep.info.count >= 0 && (size_t)rep.info.count < nboards)
		problem(j, VERDICT_FAIL, "%s sees %d %s, %zu %s found", what, rep.info.count,
		        plural(rep.info.count, "board", "boards"), nboards,
		        plural((long long)nboards, "slot", "slots"));
	return rep.info.count;
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Distinct models, sorted, joined with ", " (cut at a whole model). */
static int
facts_models(const struct slot *slots, size_t n, char *out, size_t len)
{
	const char **v;
	size_t used = 0;

	out[0] = '\0';
	if (n == 0)
		return 0;
	v = calloc(n, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		v[i] = slots[i].model;
	qsort(v, n, sizeof(*v), cmp_str);
	for (size_t i = 0; i < n; i++) {
		size_t need;

		if (!v[i][0] || (i > 0 && strcmp(v[i], v[i - 1]) == 0))
			continue;
		need = strlen(v[i]) + (used ? 2 : 0);
		if (used + need >= len)
			break;
		used += (size_t)snprintf(out + used, len - used, "%s%s", used ? ", " : "", v[i]);
	}
	free(v);
	return 0;
}

/* The driver version of VENDOR's boards, from the files the driver keeps. */
static void
driver_version(struct hwmon *hw, enum slot_vendor vendor, const char *bus_id,
               const char *module, char *buf, size_t len)
{
	buf[0] = '\0';
	switch (vendor) {
	case SLOT_VENDOR_NVIDIA:
		if (hwmon_nvidia_version(hw, buf, len) == 0)
			return;
		if (hwmon_module_version(hw, module[0] ? module : "nvidia", buf, len) == 0)
			return;
		break;
	case SLOT_VENDOR_AMD:
		if (hwmon_module_version(hw, module[0] ? module : "amdgpu", buf, len) == 0)
			return;
		break;
	case SLOT_VENDOR_CAMBRICON:
		if (bus_id && hwmon_cambricon_version(hw, bus_id, buf, len) == 0)
			return;
		if (hwmon_module_version(hw, module[0] ? module : "cambricon_drv", buf, len) == 0)
			return;
		break;
	}
	buf[0] = '\0';
}

#define NVENDORS 3

static int
check_slots(struct run *run, struct check_result *r)
{
	const struct config *cfg = run->cfg;
	const struct slot *slots = run->ctx->slots;
	size_t nslots = run->ctx->slots ? run->ctx->nslots : 0;
	struct check_facts *facts = &run->report->facts;
	char versions[NVENDORS][64] = { "", "", "" };
	char modules[NVENDORS][64] = { "", "", "" };
	const char *first_bus[NVENDORS] = { NULL, NULL, NULL };
	size_t per_vendor[NVENDORS] = { 0, 0, 0 };
	size_t present = 0;
	cJSON *arr, *drivers;
	struct judge j;
	int rc;

	judge_start(&j, run, r);
	if (cfg->slots_expected >= 0)
		jnum(run, r->details, "expected", cfg->slots_expected);
	else
		jadd(run, r->details, "expected", cJSON_CreateNull());
	jnum(run, r->details, "count", (double)nslots);
	if (cfg->slots_expected >= 0 && nslots < (size_t)cfg->slots_expected)
		problem(&j, VERDICT_FAIL, "found %zu %s, expected %d", nslots,
		        plural((long long)nslots, "slot", "slots"), cfg->slots_expected);

	arr = jarr(run, r->details, "slots");
	for (size_t i = 0; i < nslots; i++) {
		const struct slot *s = &slots[i];
		unsigned vi = (unsigned)s->vendor < NVENDORS ? (unsigned)s->vendor : 0;
		struct hwmon_pci pci;
		cJSON *o, *link, *aer;
		bool degraded;

		o = jobj(run, arr, NULL);
		jnum(run, o, "index", s->index);
		jstr(run, o, "pci_bus_id", s->pci_bus_id);
		jstr(run, o, "vendor", slot_vendor_name(s->vendor));
		jstr(run, o, "model", s->model);
		per_vendor[vi]++;

		rc = hwmon_pci_read(run->hw, s->pci_bus_id, &pci);
		jbool(run, o, "present", rc == 0);
		if (rc == -ENOENT) {
			problem(&j, VERDICT_FAIL, "slot %d (%s) is missing from the PCI bus", s->index,
			        s->pci_bus_id);
			continue;
		}
		if (rc < 0) {
			problem(&j, VERDICT_FAIL, "slot %d (%s) cannot be read: %s", s->index,
			        s->pci_bus_id, strerror(-rc));
			continue;
		}
		present++;
		if (!first_bus[vi])
			first_bus[vi] = s->pci_bus_id;
		if (!modules[vi][0] && pci.module[0])
			snprintf(modules[vi], sizeof(modules[vi]), "%s", pci.module);
		jstr(run, o, "driver", pci.driver);
		jstr(run, o, "module", pci.module);
		if (!pci.driver[0] && cfg->driver_required)
			problem(&j, VERDICT_FAIL, "slot %d (%s) has no driver bound", s->index,
			        s->pci_bus_id);

		link = jobj(run, o, "link");
		jstr(run, link, "current_speed", pci.cur_speed);
		jstr(run, link, "max_speed", pci.max_speed);
		jcount(run, link, "current_width", pci.cur_width ? pci.cur_width : -1);
		jcount(run, link, "max_width", pci.max_width ? pci.max_width : -1);
		{
			char what[96];

			degraded = check_pcie_degraded(&pci, what, sizeof(what));
			if (degraded)
				problem(&j, cfg->pcie_degraded, "slot %d (%s) PCIe link degraded: %s",
				        s->index, s->pci_bus_id, what);
		}
		jbool(run, link, "degraded", degraded);

		aer = jobj(run, o, "aer");
		jcount(run, aer, "correctable", pci.aer_correctable);
		jcount(run, aer, "nonfatal", pci.aer_nonfatal);
		jcount(run, aer, "fatal", pci.aer_fatal);
		if (pci.aer_fatal > 0)
			problem(&j, VERDICT_FAIL, "slot %d (%s) has %lld fatal PCIe AER %s", s->index,
			        s->pci_bus_id, pci.aer_fatal, plural(pci.aer_fatal, "error", "errors"));
		if (pci.aer_nonfatal > 0)
			problem(&j, VERDICT_WARN, "slot %d (%s) has %lld non-fatal PCIe AER %s",
			        s->index, s->pci_bus_id, pci.aer_nonfatal,
			        plural(pci.aer_nonfatal, "error", "errors"));
		if (cfg->aer_correctable_max >= 0 && pci.aer_correctable > cfg->aer_correctable_max)
			problem(&j, VERDICT_WARN,
			        "slot %d (%s) has %lld correctable PCIe AER errors (limit %lld)",
			        s->index, s->pci_bus_id, pci.aer_correctable, cfg->aer_correctable_max);
	}

	drivers = jobj(run, r->details, "drivers");
	for (unsigned v = 0; v < NVENDORS; v++) {
		if (!per_vendor[v])
			continue;
		driver_version(run->hw, (enum slot_vendor)v, first_bus[v], modules[v], versions[v],
		               sizeof(versions[v]));
	}
	/* The vendors' libraries describe the live system only. */
	if (hwmon_is_live(run->hw)) {
		if (per_vendor[SLOT_VENDOR_NVIDIA])
			ask_library(&j, LIB_NVML, "nvml", per_vendor[SLOT_VENDOR_NVIDIA],
			            versions[SLOT_VENDOR_NVIDIA], sizeof(versions[0]));
		if (per_vendor[SLOT_VENDOR_CAMBRICON])
			ask_library(&j, LIB_CNDEV, "cndev", per_vendor[SLOT_VENDOR_CAMBRICON],
			            versions[SLOT_VENDOR_CAMBRICON], sizeof(versions[0]));
	}
	for (unsigned v = 0; v < NVENDORS; v++)
		if (per_vendor[v])
			jstr(run, drivers, slot_vendor_name((enum slot_vendor)v), versions[v]);

	/* Facts the coordinator compares across nodes. */
	facts->nslots = (int)nslots;
	rc = facts_models(slots, nslots, facts->models, sizeof(facts->models));
	if (rc < 0)
		return rc;
	facts->driver[0] = '\0';
	{
		unsigned nv = 0;
		size_t used = 0;

		for (unsigned v = 0; v < NVENDORS; v++)
			nv += per_vendor[v] && versions[v][0];
		for (unsigned v = 0; v < NVENDORS; v++) {
			int w;

			if (!per_vendor[v] || !versions[v][0])
				continue;
			/* One vendor: the bare version; several: "nvidia 535.104.05, amd 6.3.6". */
			if (nv == 1)
				w = snprintf(facts->driver, sizeof(facts->driver), "%s", versions[v]);
			else
				w = snprintf(facts->driver + used, sizeof(facts->driver) - used, "%s%s %s",
				             used ? ", " : "", slot_vendor_name((enum slot_vendor)v),
				             versions[v]);
			if (w < 0 || used + (size_t)w >= sizeof(facts->driver))
				break;
			used += (size_t)w;
		}
	}

	if (nslots == 0)
		judge_end(&j, "no accelerator slots");
	else if (facts->driver[0])
		judge_end(&j, "%zu %s present (%s), driver %s", present,
		          plural((long long)present, "slot", "slots"), facts->models, facts->driver);
	else
		judge_end(&j, "%zu %s present (%s)", present,
		          plural((long long)present, "slot", "slots"), facts->models);
	return 0;
}

/* --- memory ------------------------------------------------------------ */

/*
 * libnuma's view of the live system.  It reads the same sysfs files, but
 * also knows which nodes this process may use.  -ENOSYS without NUMA
 * support, so the caller falls back to sysfs.
 */
static int
numa_nodes_live(struct hwmon_numa_node **out, size_t *n)
{
	struct hwmon_numa_node *v;
	size_t cnt = 0;
	int max;

	*out = NULL;
	*n = 0;
	if (numa_available() < 0)
		return -ENOSYS;
	max = numa_max_node();
	if (max < 0)
		return -ENOSYS;
	v = calloc((size_t)max + 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (int node = 0; node <= max; node++) {
		long long free_bytes = 0, total;

		if (numa_nodes_ptr && !numa_bitmask_isbitset(numa_nodes_ptr, (unsigned)node))
			continue;
		total = numa_node_size64(node, &free_bytes);
		if (total < 0)
			continue;
		v[cnt].node = node;
		v[cnt].total_kb = total / 1024;
		v[cnt].free_kb = free_bytes / 1024;
		cnt++;
	}
	if (cnt == 0) {
		free(v);
		return -ENOSYS;
	}
	*out = v;
	*n = cnt;
	return 0;
}

static void
judge_memory(struct judge *j, const struct hwmon_numa_node *nodes, size_t n, long long min_mb)
{
	struct run *run = j->run;
	long long lowest = -1;
	int lowest_node = -1;
	cJSON *arr;

	arr = jarr(run, j->r->details, "nodes");
	for (size_t i = 0; i < n; i++) {
		long long free_mb = nodes[i].free_kb / 1024;
		cJSON *o = jobj(run, arr, NULL);

		jnum(run, o, "node", nodes[i].node);
		jnum(run, o, "total_mb", (double)(nodes[i].total_kb / 1024));
		jnum(run, o, "free_mb", (double)free_mb);
		/* Memoryless nodes (CPU-only, or only devices) have nothing to free. */
		if (nodes[i].total_kb <= 0)
			continue;
		if (lowest < 0 || free_mb < lowest) {
			lowest = free_mb;
			lowest_node = nodes[i].node;
		}
		if (min_mb > 0 && free_mb < min_mb)
			problem(j, VERDICT_FAIL, "NUMA node %d has %lld MB free, below %lld MB",
			        nodes[i].node, free_mb, min_mb);
	}
	if (lowest >= 0)
		judge_end(j, "%lld MB free on the emptiest of %zu NUMA %s (node %d)", lowest, n,
		          plural((long long)n, "node", "nodes"), lowest_node);
	else
		judge_end(j, "no NUMA node with memory");
}

static int
check_memory(struct run *run, struct check_result *r)
{
	long long min_mb = run->cfg->mem_min_free_mb;
	struct hwmon_numa_node *nodes = NULL;
	const char *source;
	struct judge j;
	size_t n = 0;
	int rc = -ENOSYS;

	judge_start(&j, run, r);
	jnum(run, r->details, "min_free_mb", (double)min_mb);
	source = "libnuma";
	if (hwmon_is_live(run->hw))
		rc = numa_nodes_live(&nodes, &n);
	if (rc == -ENOMEM)
		return rc;
	if (rc < 0 || n == 0) {
		free(nodes);
		nodes = NULL;
		n = 0;
		rc = hwmon_memory_nodes(run->hw, &nodes, &n, &source);
		if (rc == -ENOMEM)
			return rc;
	}
	if (n == 0) {
		jadd(run, r->details, "source", cJSON_CreateNull());
		problem(&j, min_mb > 0 ? VERDICT_FAIL : VERDICT_WARN,
		        "cannot read free memory (sys/devices/system/node, proc/meminfo): %s",
		        strerror(-rc));
		judge_end(&j, "%s", "");
		return 0;
	}
	jstr(run, r->details, "source", source);
	judge_memory(&j, nodes, n, min_mb);
	free(nodes);
	return 0;
}

/* --- storage (the probe serves the inspection too) --------------------- */

struct probe_arg {
	const char *path;
	bool writable;
};

/*
 * Append V in decimal to BUF (LEN bytes, NUL-terminated, *POS used): what
 * snprintf("%lu") would write, without snprintf(), which is not on the
 * async-signal-safe list.
 */
static void
put_decimal(char *buf, size_t len, size_t *pos, unsigned long v)
{
	char digits[24];
	size_t n = 0;

	do {
		digits[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v > 0);
	while (n > 0 && *pos + 1 < len)
		buf[(*pos)++] = digits[--n];
	buf[*pos] = '\0';
}

static void
put_text(char *buf, size_t len, size_t *pos, const char *s)
{
	while (*s && *pos + 1 < len)
		buf[(*pos)++] = *s++;
	buf[*pos] = '\0';
}

/*
 * In the child: open the path once and do everything through that
 * descriptor.  On a dead NFS server it is the open (or the statvfs) that
 * hangs, and opening a FIFO for reading blocks the same way: the parent's
 * deadline covers both.  Only async-signal-safe calls: the agent may have
 * MPI threads (the inspection runs this from the agent's loop).
 */
static int
probe_child(void *arg, int out)
{
	const struct probe_arg *a = arg;
	struct check_dir_probe rep;
	struct statvfs sv;
	struct stat st;
	int fd;

	memset(&rep, 0, sizeof(rep));
	rep.write_err = -1;
	fd = open(a->path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0 && errno == EACCES)
		fd = open(a->path, O_PATH | O_CLOEXEC);  /* searchable, not listable */
	if (fd < 0) {
		rep.err = errno;
		goto out;
	}
	if (fstat(fd, &st) < 0) {
		rep.err = errno;
		goto out;
	}
	if (!S_ISDIR(st.st_mode)) {
		rep.not_dir = true;
		goto out;
	}
	if (fstatvfs(fd, &sv) < 0) {
		rep.err = errno;
		goto out;
	}
	rep.bavail = sv.f_bavail;
	rep.frsize = sv.f_frsize ? sv.f_frsize : sv.f_bsize;
	rep.favail = sv.f_favail;
	rep.files = sv.f_files;
	rep.flag = sv.f_flag;
	if (a->writable) {
		struct timespec ts;
		char name[64];
		size_t pos = 0;
		int wfd;

		(void)clock_gettime(CLOCK_REALTIME, &ts);  /* only makes the name unique */
		put_text(name, sizeof(name), &pos, ".vigil-check-");
		put_decimal(name, sizeof(name), &pos, (unsigned long)getpid());
		put_text(name, sizeof(name), &pos, "-");
		put_decimal(name, sizeof(name), &pos, (unsigned long)ts.tv_nsec);
		wfd = openat(fd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY, 0600);
		if (wfd < 0) {
			rep.write_err = errno;
		} else {
			rep.write_err = 0;
			if (close(wfd) < 0)
				rep.write_err = errno;
			if (unlinkat(fd, name, 0) < 0 && !rep.write_err)
				rep.write_err = errno;
		}
	}
out:
	if (fd >= 0)
		(void)close(fd);
	return util_write_all(out, &rep, sizeof(rep)) < 0 ? 1 : 0;
}

int
check_probe_dir(const char *path, bool writable, double timeout_s, struct check_dir_probe *out)
{
	struct probe_arg arg = { path, writable };
	ssize_t n;

	memset(out, 0, sizeof(*out));
	n = timed_run(probe_child, &arg, timeout_s, (char *)out, sizeof(*out), NULL);
	if (n < 0)
		return (int)n;
	/* A child that died or could not write: timed_run() itself never
	 * fails with EPROTO (it comes from no pipe, fork, poll or wait). */
	if (n != (ssize_t)sizeof(*out))
		return -EPROTO;
	out->free_mb = (long long)((double)out->bavail * (double)out->frsize / MIB);
	return 0;
}

static void
judge_path(struct judge *j, cJSON *arr, const struct config_path *p, double timeout)
{
	struct run *run = j->run;
	struct check_dir_probe rep;
	cJSON *o;
	int rc;

	o = jobj(run, arr, NULL);
	jstr(run, o, "path", p->path);
	rc = check_probe_dir(p->path, p->writable, timeout, &rep);
	jbool(run, o, "timed_out", rc == -ETIMEDOUT);
	if (rc == -ETIMEDOUT) {
		problem(j, VERDICT_FAIL, "%s timed out after %g s", p->path, timeout);
		return;
	}
	if (rc == -EPROTO) {
		jstr(run, o, "error", "probe failed");
		problem(j, VERDICT_FAIL, "%s: the probe failed", p->path);
		return;
	}
	if (rc < 0) {
		jstr(run, o, "error", strerror(-rc));
		problem(j, VERDICT_FAIL, "%s: cannot run the probe: %s", p->path, strerror(-rc));
		return;
	}
	if (rep.err) {
		jstr(run, o, "error", strerror(rep.err));
		if (rep.err == ENOENT)
			problem(j, VERDICT_FAIL, "%s is missing", p->path);
		else
			problem(j, VERDICT_FAIL, "%s: %s", p->path, strerror(rep.err));
		return;
	}
	if (rep.not_dir) {
		jstr(run, o, "error", strerror(ENOTDIR));
		problem(j, VERDICT_FAIL, "%s is not a directory", p->path);
		return;
	}
	jnum(run, o, "free_mb", (double)rep.free_mb);
	jnum(run, o, "min_free_mb", (double)p->min_free_mb);
	/* Filesystems that allocate inodes on demand (btrfs) report none. */
	jcount(run, o, "free_inodes", rep.files ? (long long)rep.favail : -1);
	jnum(run, o, "min_free_inodes", (double)p->min_free_inodes);
	jbool(run, o, "read_only", rep.flag & ST_RDONLY);
	if (rep.write_err >= 0)
		jbool(run, o, "writable", rep.write_err == 0);
	else
		jadd(run, o, "writable", cJSON_CreateNull());
	if (p->min_free_mb > 0 && rep.free_mb < p->min_free_mb)
		problem(j, VERDICT_FAIL, "%s has %lld MB free, below %lld MB", p->path, rep.free_mb,
		        p->min_free_mb);
	if (p->min_free_inodes > 0 && rep.files && rep.favail < (unsigned long long)p->min_free_inodes)
		problem(j, VERDICT_FAIL, "%s has %llu free inodes, below %lld", p->path, rep.favail,
		        p->min_free_inodes);
	if (rep.write_err > 0)
		problem(j, VERDICT_FAIL, "%s is not writable (%s)", p->path, strerror(rep.write_err));
}

static int
check_storage(struct run *run, struct check_result *r)
{
	const struct config *cfg = run->cfg;
	struct statvfs sv;
	cJSON *arr, *shm;
	struct judge j;
	int rc;

	judge_start(&j, run, r);
	arr = jarr(run, r->details, "paths");
	for (size_t i = 0; i < cfg->npaths; i++)
		judge_path(&j, arr, &cfg->paths[i], cfg->check_timeout_s);

	shm = jobj(run, r->details, "shm");
	jnum(run, shm, "min_mb", (double)cfg->shm_min_mb);
	rc = hwmon_statvfs(run->hw, "dev/shm", &sv);
	if (rc == 0) {
		double frsize = (double)(sv.f_frsize ? sv.f_frsize : sv.f_bsize);
		long long total_mb = (long long)((double)sv.f_blocks * frsize / MIB);

		jnum(run, shm, "total_mb", (double)total_mb);
		jnum(run, shm, "free_mb", (double)(long long)((double)sv.f_bavail * frsize / MIB));
		if (cfg->shm_min_mb > 0 && total_mb < cfg->shm_min_mb)
			problem(&j, VERDICT_FAIL, "/dev/shm is %lld MB, below %lld MB", total_mb,
			        cfg->shm_min_mb);
	} else {
		jadd(run, shm, "total_mb", cJSON_CreateNull());
		jstr(run, shm, "error", strerror(-rc));
		if (cfg->shm_min_mb > 0)
			problem(&j, VERDICT_FAIL, "/dev/shm cannot be examined: %s", strerror(-rc));
	}
	if (rc == 0)
		judge_end(&j, "%zu %s usable, /dev/shm %lld MB", cfg->npaths,
		          plural((long long)cfg->npaths, "path", "paths"),
		          (long long)((double)sv.f_blocks *
		                      (double)(sv.f_frsize ? sv.f_frsize : sv.f_bsize) / MIB));
	else
		judge_end(&j, "%zu %s usable", cfg->npaths,
		          plural((long long)cfg->npaths, "path", "paths"));
	return 0;
}

/* --- limits ------------------------------------------------------------ */

static void
jlimit(struct run *run, cJSON *obj, const char *key, rlim_t v)
{
	if (v == RLIM_INFINITY)
		jstr(run, obj, key, "unlimited");
	else
		jnum(run, obj, key, (double)v);
}

static int
check_limits(struct run *run, struct check_result *r)
{
	const struct config *cfg = run->cfg;
	struct rlimit memlock, nofile;
	struct judge j;
	cJSON *o;

	judge_start(&j, run, r);
	if (getrlimit(RLIMIT_MEMLOCK, &memlock) < 0 || getrlimit(RLIMIT_NOFILE, &nofile) < 0) {
		int e = errno;

		problem(&j, VERDICT_FAIL, "cannot read resource limits: %s", strerror(e));
		judge_end(&j, "%s", "");
		return 0;
	}
	o = jobj(run, r->details, "memlock");
	jlimit(run, o, "soft", memlock.rlim_cur);
	jlimit(run, o, "hard", memlock.rlim_max);
	jbool(run, o, "unlimited_required", cfg->memlock_unlimited);
	o = jobj(run, r->details, "nofile");
	jlimit(run, o, "soft", nofile.rlim_cur);
	jlimit(run, o, "hard", nofile.rlim_max);
	jnum(run, o, "min", (double)cfg->nofile_min);

	if (cfg->memlock_unlimited && memlock.rlim_cur != RLIM_INFINITY)
		problem(&j, VERDICT_FAIL,
		        "RLIMIT_MEMLOCK is %llu KB, RDMA needs unlimited (ulimit -l unlimited)",
		        (unsigned long long)memlock.rlim_cur / 1024);
	if (cfg->nofile_min > 0 && nofile.rlim_cur != RLIM_INFINITY &&
	    nofile.rlim_cur < (rlim_t)cfg->nofile_min)
		problem(&j, VERDICT_FAIL, "RLIMIT_NOFILE is %llu, below %lld",
		        (unsigned long long)nofile.rlim_cur, cfg->nofile_min);
	if (memlock.rlim_cur == RLIM_INFINITY)
		judge_end(&j, "memlock unlimited, nofile %llu", (unsigned long long)nofile.rlim_cur);
	else
		judge_end(&j, "memlock %llu KB, nofile %llu",
		          (unsigned long long)memlock.rlim_cur / 1024,
		          (unsigned long long)nofile.rlim_cur);
	return 0;
}

/* --- nics -------------------------------------------------------------- */

static void
judge_nic(struct judge *j, cJSON *arr, const char *name, size_t *up)
{
	struct run *run = j->run;
	long long min = run->cfg->nic_min_speed_mbps;
	struct hwmon_nic nic;
	bool oper_up;
	cJSON *o;
	int rc;

	o = jobj(run, arr, NULL);
	jstr(run, o, "name", name);
	rc = hwmon_nic_read(run->hw, name, &nic);
	jbool(run, o, "present", rc == 0);
	if (rc == -ENOENT) {
		problem(j, VERDICT_FAIL, "%s is missing", name);
		return;
	}
	if (rc < 0) {
		problem(j, VERDICT_FAIL, "%s cannot be read: %s", name, strerror(-rc));
		return;
	}
	jstr(run, o, "operstate", nic.operstate);
	if (nic.carrier >= 0)
		jbool(run, o, "carrier", nic.carrier == 1);
	else
		jadd(run, o, "carrier", cJSON_CreateNull());
	jcount(run, o, "speed_mbps", nic.speed_mbps);
	oper_up = check_nic_oper_up(&nic);
	if (!oper_up) {
		/* The kernel refuses to read carrier while the link is down. */
		problem(j, VERDICT_FAIL, "%s is down (operstate %s, %s)", name,
		        nic.operstate[0] ? nic.operstate : "unreadable",
		        nic.carrier == 1 ? "carrier" : "no carrier");
		return;
	}
	if (nic.carrier != 1) {
		problem(j, VERDICT_FAIL, "%s has no carrier (operstate %s)", name, nic.operstate);
		return;
	}
	(*up)++;
	if (min <= 0)
		return;
	if (nic.speed_mbps < 0)
		problem(j, VERDICT_WARN, "%s speed is unknown (minimum %lld Mb/s)", name, min);
	else if (nic.speed_mbps < min)
		problem(j, VERDICT_FAIL, "%s runs at %lld Mb/s, below %lld Mb/s", name,
		        nic.speed_mbps, min);
}

static bool
listed(char **list, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(list[i], name) == 0)
			return true;
	return false;
}

static int
judge_ib(struct judge *j, cJSON *arr, const char *dev, bool is_listed, size_t *active)
{
	struct run *run = j->run;
	long long min = run->cfg->ib_min_rate_gbps;
	enum verdict down_verdict = is_listed ? VERDICT_FAIL : VERDICT_WARN;
	struct hwmon_ib_port *ports = NULL;
	cJSON *o, *parr;
	size_t n = 0;
	int rc;

	o = jobj(run, arr, NULL);
	jstr(run, o, "device", dev);
	jbool(run, o, "listed", is_listed);
	rc = hwmon_ib_ports(run->hw, dev, &ports, &n);
	jbool(run, o, "present", rc != -ENOENT);
	if (rc == -ENOMEM)
		return rc;
	if (rc == -ENOENT) {
		problem(j, VERDICT_FAIL, "InfiniBand device %s is missing", dev);
		return 0;
	}
	if (rc < 0) {
		problem(j, down_verdict, "InfiniBand device %s cannot be read: %s", dev,
		        strerror(-rc));
		return 0;
	}
	if (n == 0)
		problem(j, down_verdict, "InfiniBand device %s has no ports", dev);
	parr = jarr(run, o, "ports");
	for (size_t i = 0; i < n; i++) {
		const struct hwmon_ib_port *p = &ports[i];
		cJSON *po = jobj(run, parr, NULL);

		jnum(run, po, "port", p->port);
		jstr(run, po, "state", p->state_text);
		jstr(run, po, "phys_state", p->phys_state_text);
		jstr(run, po, "rate", p->rate);
		if (p->rate_gbps > 0)
			jnum(run, po, "rate_gbps", p->rate_gbps);
		else
			jadd(run, po, "rate_gbps", cJSON_CreateNull());
		jcount(run, po, "link_downed", p->link_downed);
		jcount(run, po, "symbol_error", p->symbol_error);
		if (p->state != HWMON_IB_ACTIVE || p->phys_state != HWMON_IB_LINKUP) {
			problem(j, down_verdict, "%s port %u is not active (state %s, phys_state %s)",
			        dev, p->port, p->state_text[0] ? p->state_text : "unreadable",
			        p->phys_state_text[0] ? p->phys_state_text : "unreadable");
			continue;
		}
		(*active)++;
		if (!is_listed || min <= 0)
			continue;
		if (p->rate_gbps <= 0)
			problem(j, VERDICT_WARN, "%s port %u rate is unknown (minimum %lld Gb/s)", dev,
			        p->port, min);
		else if (p->rate_gbps < (double)min)
			problem(j, VERDICT_FAIL, "%s port %u runs at %s, below %lld Gb/s", dev, p->port,
			        p->rate, min);
	}
	free(ports);
	return 0;
}

static int
check_nics(struct run *run, struct check_result *r)
{
	const struct config *cfg = run->cfg;
	char **present = NULL;
	size_t npresent = 0, up = 0, active = 0;
	cJSON *arr;
	struct judge j;
	int rc;

	judge_start(&j, run, r);
	arr = jarr(run, r->details, "interfaces");
	for (size_t i = 0; i < cfg->nnics; i++)
		judge_nic(&j, arr, cfg->nics[i], &up);

	arr = jarr(run, r->details, "infiniband");
	for (size_t i = 0; i < cfg->nib_devices; i++) {
		rc = judge_ib(&j, arr, cfg->ib_devices[i], true, &active);
		if (rc < 0)
			return rc;
	}
	/* Devices nobody listed: a port down there is worth a look, no more. */
	rc = hwmon_ib_devices(run->hw, &present, &npresent);
	if (rc == -ENOMEM)
		return rc;
	for (size_t i = 0; i < npresent; i++) {
		if (listed(cfg->ib_devices, cfg->nib_devices, present[i]))
			continue;
		rc = judge_ib(&j, arr, present[i], false, &active);
		if (rc < 0) {
			hwmon_list_free(present, npresent);
			return rc;
		}
	}
	hwmon_list_free(present, npresent);
	judge_end(&j, "%zu %s up, %zu InfiniBand %s active", up,
	          plural((long long)up, "interface", "interfaces"), active,
	          plural((long long)active, "port", "ports"));
	return 0;
}

/* --- rules shared with the inspection ---------------------------------- */

bool
check_pcie_degraded(const struct hwmon_pci *pci, char *buf, size_t len)
{
	bool slow = pci->cur_gts > 0 && pci->max_gts > 0 && pci->cur_gts + 1e-6 < pci->max_gts;
	bool narrow = pci->cur_width > 0 && pci->max_width > 0 && pci->cur_width < pci->max_width;

	buf[0] = '\0';
	if (slow)
		snprintf(buf, len, "%g GT/s of %g GT/s", pci->cur_gts, pci->max_gts);
	if (narrow)
		snprintf(buf + strlen(buf), len - strlen(buf), "%sx%d of x%d", slow ? ", " : "",
		         pci->cur_width, pci->max_width);
	return slow || narrow;
}

bool
check_nic_oper_up(const struct hwmon_nic *nic)
{
	/* Drivers without operstate support report "unknown" while working. */
	return strcmp(nic->operstate, "up") == 0 ||
	       (strcmp(nic->operstate, "unknown") == 0 && nic->carrier == 1);
}

/* --- running ----------------------------------------------------------- */

static const struct {
	const char *name;
	int (*fn)(struct run *run, struct check_result *r);
} checks[NCHECKS] = {
	{ "slots", check_slots },
	{ "memory", check_memory },
	{ "storage", check_storage },
	{ "limits", check_limits },
	{ "nics", check_nics },
};

int
check_run(const struct check_ctx *ctx, struct check_report *out)
{
	struct run run = { .ctx = ctx, .cfg = ctx->cfg, .report = out };
	const char *root = ctx->cfg->sysfs_root ? ctx->cfg->sysfs_root : "/";
	int rc;

	memset(out, 0, sizeof(*out));
	rc = hwmon_open(root, &run.hw);
	if (rc < 0)
		return rc;
	out->results = calloc(NCHECKS, sizeof(*out->results));
	if (!out->results) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < NCHECKS; i++) {
		struct check_result *r = &out->results[out->n];

		snprintf(r->name, sizeof(r->name), "%s", checks[i].name);
		r->verdict = VERDICT_PASS;
		r->details = cJSON_CreateObject();
		if (!r->details) {
			rc = -ENOMEM;
			goto out;
		}
		out->n++;
		rc = checks[i].fn(&run, r);
		if (rc == 0 && run.oom)
			rc = -ENOMEM;
		if (rc < 0)
			goto out;
		if (!ctx->all && r->verdict == VERDICT_FAIL)
			break;
	}
	rc = 0;
out:
	hwmon_free(run.hw);
	if (rc < 0)
		check_report_free(out);
	return rc;
}

enum verdict
check_report_verdict(const struct check_report *r)
{
	enum verdict v = VERDICT_PASS;

	for (size_t i = 0; i < r->n; i++)
		if (r->results[i].verdict > v)
			v = r->results[i].verdict;
	return v;
}

const struct check_result *
check_report_first(const struct check_report *r, enum verdict v)
{
	enum verdict worst = check_report_verdict(r);

	if (worst < v)
		return NULL;
	for (size_t i = 0; i < r->n; i++)
		if (r->results[i].verdict == worst)
			return &r->results[i];
	return NULL;
}

void
check_report_free(struct check_report *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n; i++)
		cJSON_Delete(r->results[i].details);
	free(r->results);
	memset(r, 0, sizeof(*r));
}

/* --- JSON -------------------------------------------------------------- */

cJSON *
check_report_to_json(const struct check_report *r)
{
	cJSON *root, *facts, *arr;

	root = cJSON_CreateObject();
	if (!root)
		return NULL;
	facts = cJSON_AddObjectToObject(root, "facts");
	if (!facts || !cJSON_AddNumberToObject(facts, "nslots", r->facts.nslots) ||
	    !cJSON_AddStringToObject(facts, "models", r->facts.models) ||
	    !cJSON_AddStringToObject(facts, "driver", r->facts.driver))
		goto fail;
	arr = cJSON_AddArrayToObject(root, "checks");
	if (!arr)
		goto fail;
	for (size_t i = 0; i < r->n; i++) {
		const struct check_result *c = &r->results[i];
		cJSON *o = cJSON_CreateObject(), *d;

		if (!o)
			goto fail;
		if (!cJSON_AddItemToArray(arr, o)) {
			cJSON_Delete(o);
			goto fail;
		}
		if (!cJSON_AddStringToObject(o, "name", c->name) ||
		    !cJSON_AddStringToObject(o, "verdict", verdict_name(c->verdict)) ||
		    !cJSON_AddStringToObject(o, "reason", c->reason))
			goto fail;
		d = c->details ? cJSON_Duplicate(c->details, 1) : cJSON_CreateObject();
		if (!d)
			goto fail;
		if (!cJSON_AddItemToObject(o, "details", d)) {
			cJSON_Delete(d);
			goto fail;
		}
	}
	return root;
fail:
	cJSON_Delete(root);
	return NULL;
}

/* Copy string member KEY of OBJ into BUF; -EINVAL if absent, not a string, or too long. */
static int
get_str(const cJSON *obj, const char *key, char *buf, size_t len)
{
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(obj, key);

	if (!cJSON_IsString(s) || !s->valuestring || strlen(s->valuestring) >= len)
		return -EINVAL;
	memcpy(buf, s->valuestring, strlen(s->valuestring) + 1);
	return 0;
}

int
check_report_from_json(const cJSON *json, struct check_report *out)
{
	const cJSON *facts, *checks_arr, *item, *n;
	size_t count;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!cJSON_IsObject(json))
		return -EINVAL;
	facts = cJSON_GetObjectItemCaseSensitive(json, "facts");
	checks_arr = cJSON_GetObjectItemCaseSensitive(json, "checks");
	if (!cJSON_IsObject(facts) || !cJSON_IsArray(checks_arr))
		return -EINVAL;
	n = cJSON_GetObjectItemCaseSensitive(facts, "nslots");
	if (!cJSON_IsNumber(n) || n->valuedouble < 0 || n->valuedouble > 1e6 ||
	    n->valuedouble != (double)(int)n->valuedouble)
		return -EINVAL;
	out->facts.nslots = (int)n->valuedouble;
	if (get_str(facts, "models", out->facts.models, sizeof(out->facts.models)) < 0 ||
	    get_str(facts, "driver", out->facts.driver, sizeof(out->facts.driver)) < 0) {
		rc = -EINVAL;
		goto fail;
	}
	count = (size_t)cJSON_GetArraySize(checks_arr);
	if (count > 64) {
		rc = -EINVAL;
		goto fail;
	}
	if (count) {
		out->results = calloc(count, sizeof(*out->results));
		if (!out->results) {
			rc = -ENOMEM;
			goto fail;
		}
	}
	cJSON_ArrayForEach(item, checks_arr) {
		struct check_result *c = &out->results[out->n];
		const cJSON *d, *v;

		if (!cJSON_IsObject(item) || get_str(item, "name", c->name, sizeof(c->name)) < 0 ||
		    get_str(item, "reason", c->reason, sizeof(c->reason)) < 0) {
			rc = -EINVAL;
			goto fail;
		}
		v = cJSON_GetObjectItemCaseSensitive(item, "verdict");
		if (!cJSON_IsString(v) || verdict_parse(v->valuestring, &c->verdict) < 0) {
			rc = -EINVAL;
			goto fail;
		}
		d = cJSON_GetObjectItemCaseSensitive(item, "details");
		if (d && !cJSON_IsObject(d)) {
			rc = -EINVAL;
			goto fail;
		}
		c->details = d ? cJSON_Duplicate(d, 1) : cJSON_CreateObject();
		if (!c->details) {
			rc = -ENOMEM;
			goto fail;
		}
		out->n++;
	}
	return 0;
fail:
	check_report_free(out);
	return rc;
}
