/*
 * facts.c - gathering what a node looks like, for the judges.
 *
 * Reads go through hwmon (sysfs, procfs), libnuma and getrlimit; work that
 * may block goes to children under one deadline (fanout_run()): the
 * storage probes (each marked, so that one stuck from an earlier run is
 * found again rather than started anew: proc/stuck.h) and the vendors'
 * libraries.  Each fact keeps its errno when it could not be read, for
 * the judge to weigh.
 */
#include "autoconf.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <numa.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "check/facts.h"
#include "lib/util.h"
#include "proc/fanout.h"
#include "proc/stuck.h"

#define MIB (1024.0 * 1024.0)

_Static_assert(FACTS_NVENDORS == CONFIG_NVENDORS && SLOT_VENDOR_NVIDIA == 0 &&
               SLOT_VENDOR_AMD == 1 && SLOT_VENDOR_CAMBRICON == 2,
               "per-vendor arrays follow enum slot_vendor");

/* --- the directory probe ------------------------------------------------ */

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

/* Create and remove a file in directory FD: the errno of the first failure, or 0. */
static int
try_write(int fd)
{
	struct timespec ts;
	char name[64];
	size_t pos = 0;
	int wfd, err = 0;

	(void)clock_gettime(CLOCK_REALTIME, &ts);  /* only makes the name unique */
	put_text(name, sizeof(name), &pos, ".vigil-check-");
	put_decimal(name, sizeof(name), &pos, (unsigned long)getpid());
	put_text(name, sizeof(name), &pos, "-");
	put_decimal(name, sizeof(name), &pos, (unsigned long)ts.tv_nsec);
	wfd = openat(fd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY, 0600);
	if (wfd < 0)
		return errno;
	if (close(wfd) < 0)
		err = errno;
	if (unlinkat(fd, name, 0) < 0 && !err)
		err = errno;
	return err;
}

/*
 * In the child: open the path once and do everything through that
 * descriptor.  On a dead NFS server it is the open (or the statvfs) that
 * hangs, and opening a FIFO for reading blocks the same way: the parent's
 * deadline covers both.  Only async-signal-safe calls.
 */
static int
probe_child(void *arg, int out)
{
	const struct probe_arg *a = arg;
	struct facts_dir rep;
	struct statvfs sv;
	struct stat st;
	int fd;

	memset(&rep, 0, sizeof(rep));
	rep.write_err = -1;
	/* Unmarked, it still runs: the next call just cannot find it. */
	(void)stuck_mark(a->path);
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
	if (a->writable)
		rep.write_err = try_write(fd);
out:
	if (fd >= 0)
		(void)close(fd);
	return util_write_all(out, &rep, sizeof(rep)) < 0 ? 1 : 0;
}

static void
dir_job(struct fanout_job *job, struct probe_arg *arg, struct facts_path *out)
{
	memset(out, 0, sizeof(*out));
	*job = (struct fanout_job){ .fn = probe_child, .arg = arg, .out = &out->dir,
	                           .size = sizeof(out->dir) };
}

static void
dir_done(const struct fanout_job *job, struct facts_path *out)
{
	out->rc = job->rc;
	if (job->rc == 0)
		out->dir.free_mb = (long long)((double)out->dir.bavail * (double)out->dir.frsize / MIB);
	else
		memset(&out->dir, 0, sizeof(out->dir));
}

/* The probes to start: one per path, but none on a path where one is stuck. */
struct dirs {
	struct probe_arg *args;   /* each probe's */
	size_t *path;             /* each probe's path, by its index */
	size_t n;                 /* probes */
	size_t first;             /* the first probe's job */
};

/*
 * The probes already at work on each of the N PATHS: STUCK[i] for one
 * stuck for TIMEOUT_S or more, else pid 0.  A younger one belongs to a
 * check still running (slurmd may start a health check before the last
 * one has ended): rather than start a second probe beside it, wait, within
 * TIMEOUT_S, until it has returned (the path is probed anew) or has been
 * stuck for TIMEOUT_S.  /proc unreadable: none.
 */
static void
await_probes(const char *const *paths, size_t n, double timeout_s, struct stuck *stuck)
{
	double until = util_now_s() + timeout_s;
	struct timespec nap = { 0, 100 * 1000000L };

	for (;;) {
		bool young = false;

		if (stuck_find(paths, n, 0, stuck) < 0)
			break;
		for (size_t i = 0; i < n; i++)
			young |= stuck[i].pid && stuck[i].age_s < timeout_s;
		if (!young || util_now_s() >= until)
			break;
		(void)nanosleep(&nap, NULL);
	}
	for (size_t i = 0; i < n; i++)
		if (stuck[i].age_s < timeout_s)
			stuck[i].pid = 0;
}

/*
 * Plan the probes of the N PATHS as jobs from JOBS[*NJOBS] on (room for N
 * more): a path on which the probe of an earlier call is still stuck (for
 * TIMEOUT_S or more) gets OUT[i].rc -EALREADY and no job.  0 or -ENOMEM;
 * release D with dirs_free() either way.
 */
static int
dirs_plan(struct dirs *d, const char *const *paths, const bool *writable, size_t n,
          double timeout_s, struct fanout_job *jobs, size_t *njobs, struct facts_path *out)
{
	struct stuck *stuck = calloc(n, sizeof(*stuck));

	memset(d, 0, sizeof(*d));
	d->first = *njobs;
	d->args = calloc(n, sizeof(*d->args));
	d->path = calloc(n, sizeof(*d->path));
	if (!stuck || !d->args || !d->path) {
		free(stuck);
		return -ENOMEM;
	}
	await_probes(paths, n, timeout_s, stuck);
	for (size_t i = 0; i < n; i++) {
		if (stuck[i].pid) {
			out[i] = (struct facts_path){ .rc = -EALREADY, .stuck_pid = (int)stuck[i].pid,
			                              .stuck_s = stuck[i].age_s };
			continue;
		}
		d->args[d->n] = (struct probe_arg){ paths[i], writable && writable[i] };
		d->path[d->n] = i;
		dir_job(&jobs[(*njobs)++], &d->args[d->n], &out[i]);
		d->n++;
	}
	free(stuck);
	return 0;
}

/* Each probe's outcome, after fanout_run(). */
static void
dirs_done(const struct dirs *d, const struct fanout_job *jobs, struct facts_path *out)
{
	for (size_t k = 0; k < d->n; k++)
		dir_done(&jobs[d->first + k], &out[d->path[k]]);
}

static void
dirs_free(struct dirs *d)
{
	free(d->args);
	free(d->path);
	memset(d, 0, sizeof(*d));
}

int
facts_probe_dirs(const char *const *paths, const bool *writable, size_t n, double timeout_s,
                 struct facts_path *out)
{
	struct fanout_job *jobs = NULL;
	struct dirs d = { 0 };
	size_t njobs = 0;
	int rc;

	if (n == 0)
		return 0;
	if (!(timeout_s > 0)) {
		for (size_t i = 0; i < n; i++)
			out[i] = (struct facts_path){ .rc = -EINVAL };
		return -EINVAL;
	}
	jobs = calloc(n, sizeof(*jobs));
	rc = jobs ? dirs_plan(&d, paths, writable, n, timeout_s, jobs, &njobs, out) : -ENOMEM;
	if (rc < 0)
		goto out;
	rc = fanout_run(jobs, njobs, timeout_s);
	dirs_done(&d, jobs, out);
	if (rc != -EINVAL)
		rc = 0;
out:
	dirs_free(&d);
	free(jobs);
	return rc;
}

/* --- the vendors' libraries --------------------------------------------- */

enum lib { LIB_NVML, LIB_CNDEV };

struct vendor_reply {
	int rc;
	struct vendor_info info;
};

struct lib_arg {
	enum lib lib;
	struct vendor_reply reply;
};

/* In the child: NVML can hang on a wedged GPU. */
static int
vendor_child(void *arg, int fd)
{
	struct vendor_reply rep;

	memset(&rep, 0, sizeof(rep));
	rep.rc = ((struct lib_arg *)arg)->lib == LIB_NVML ? vendor_nvml_query(&rep.info)
	                                                   : vendor_cndev_query(&rep.info);
	return util_write_all(fd, &rep, sizeof(rep)) < 0 ? 1 : 0;
}

static void
lib_done(const struct fanout_job *job, const struct lib_arg *a, struct facts_library *out)
{
	out->job_rc = job->rc;
	if (job->rc < 0)
		return;
	out->rc = a->reply.rc;
	out->info = a->reply.info;
	out->info.library[sizeof(out->info.library) - 1] = '\0';
	out->info.version[sizeof(out->info.version) - 1] = '\0';
	out->info.error[sizeof(out->info.error) - 1] = '\0';
}

/* --- slots and drivers -------------------------------------------------- */

int
facts_board_model(struct hwmon *hw, enum slot_vendor vendor, const char *bus_id, char *buf,
                  size_t len)
{
	switch (vendor) {
	case SLOT_VENDOR_NVIDIA:
		return hwmon_board_model(hw, HWMON_DRIVER_NVIDIA, bus_id, buf, len);
	case SLOT_VENDOR_CAMBRICON:
		return hwmon_board_model(hw, HWMON_DRIVER_CAMBRICON, bus_id, buf, len);
	case SLOT_VENDOR_AMD:
		break;
	}
	return -ENOENT;
}

int
facts_gather_slots(struct hwmon *hw, const struct slot *slots, size_t n, struct facts_slot **out)
{
	struct facts_slot *v = n ? calloc(n, sizeof(*v)) : NULL;

	*out = NULL;
	if (n && !v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct facts_slot *s = &v[i];

		s->index = slots[i].index;
		s->vendor = slots[i].vendor;
		snprintf(s->model, sizeof(s->model), "%s", slots[i].model);
		snprintf(s->bus_id, sizeof(s->bus_id), "%s", slots[i].pci_bus_id);
		s->rc = hwmon_pci_read(hw, s->bus_id, &s->pci);
		if (!s->model[0])
			(void)facts_board_model(hw, s->vendor, s->bus_id, s->model, sizeof(s->model));
	}
	*out = v;
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

/* Per vendor: how many slots, the module of the first present one, the version. */
static void
gather_drivers(struct hwmon *hw, const struct facts_slot *slots, size_t n,
               struct facts_driver *drivers)
{
	const char *first_bus[FACTS_NVENDORS] = { NULL, NULL, NULL };

	for (size_t i = 0; i < n; i++) {
		unsigned v = (unsigned)slots[i].vendor < FACTS_NVENDORS ? (unsigned)slots[i].vendor : 0;
		struct facts_driver *d = &drivers[v];

		d->nslots++;
		if (slots[i].rc < 0)
			continue;
		if (!first_bus[v])
			first_bus[v] = slots[i].bus_id;
		if (!d->module[0] && slots[i].pci.module[0])
			snprintf(d->module, sizeof(d->module), "%s", slots[i].pci.module);
	}
	for (unsigned v = 0; v < FACTS_NVENDORS; v++)
		if (drivers[v].nslots)
			driver_version(hw, (enum slot_vendor)v, first_bus[v], drivers[v].module,
			               drivers[v].version, sizeof(drivers[v].version));
}

/* --- network ------------------------------------------------------------ */

/* NAME into BUF (LEN bytes), cut if need be; whether it fitted whole. */
static bool
copy_name(char *buf, size_t len, const char *name)
{
	size_t n = strlen(name);
	bool fits = n < len;

	if (!fits)
		n = len - 1;
	memcpy(buf, name, n);
	buf[n] = '\0';
	return fits;
}

int
facts_gather_nics(struct hwmon *hw, char *const *names, size_t n, struct facts_nic **out)
{
	struct facts_nic *v = n ? calloc(n, sizeof(*v)) : NULL;

	*out = NULL;
	if (n && !v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		/* A name longer than any interface's cannot be one. */
		if (!copy_name(v[i].name, sizeof(v[i].name), names[i])) {
			v[i].rc = -ENAMETOOLONG;
			continue;
		}
		v[i].rc = hwmon_nic_read(hw, names[i], &v[i].nic);
	}
	*out = v;
	return 0;
}

static bool
listed(char *const *list, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(list[i], name) == 0)
			return true;
	return false;
}

/* Device NAME and its ports into D. */
static int
ib_add(struct hwmon *hw, struct facts_ib *d, const char *name, bool is_listed)
{
	memset(d, 0, sizeof(*d));
	d->listed = is_listed;
	if (!copy_name(d->name, sizeof(d->name), name)) {
		d->rc = -ENAMETOOLONG;
		return 0;
	}
	d->rc = hwmon_ib_ports(hw, name, &d->ports, &d->nports);
	return d->rc == -ENOMEM ? -ENOMEM : 0;
}

int
facts_gather_ib(struct hwmon *hw, char *const *list, size_t nlisted, bool others,
                struct facts_ib **out, size_t *n)
{
	char **present = NULL;
	size_t npresent = 0, cnt = 0;
	struct facts_ib *v = NULL;
	int rc = 0;

	*out = NULL;
	*n = 0;
	if (others) {
		rc = hwmon_ib_devices(hw, &present, &npresent);
		if (rc == -ENOMEM)
			return rc;
		if (rc < 0)
			npresent = 0;  /* sys/class/infiniband unreadable: the listed ones say so */
	}
	if (nlisted + npresent > 0) {
		v = calloc(nlisted + npresent, sizeof(*v));
		if (!v) {
			rc = -ENOMEM;
			goto out;
		}
	}
	for (size_t i = 0; i < nlisted; i++) {
		rc = ib_add(hw, &v[cnt++], list[i], true);
		if (rc < 0)
			goto out;
	}
	for (size_t i = 0; i < npresent; i++) {
		if (listed(list, nlisted, present[i]))
			continue;
		rc = ib_add(hw, &v[cnt++], present[i], false);
		if (rc < 0)
			goto out;
	}
	rc = 0;
out:
	hwmon_list_free(present, npresent);
	if (rc < 0) {
		facts_ib_free(v, cnt);
		return rc;
	}
	*out = v;
	*n = cnt;
	return 0;
}

void
facts_ib_free(struct facts_ib *ib, size_t n)
{
	for (size_t i = 0; ib && i < n; i++)
		free(ib[i].ports);
	free(ib);
}

/* --- memory, /dev/shm, limits ------------------------------------------- */

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

int
facts_gather_memory(struct hwmon *hw, bool libnuma, struct facts_memory *out)
{
	int rc = -ENOSYS;

	memset(out, 0, sizeof(*out));
	out->source = "libnuma";
	if (libnuma && hwmon_is_live(hw))
		rc = numa_nodes_live(&out->nodes, &out->n);
	if (rc == -ENOMEM)
		return rc;
	if (rc < 0 || out->n == 0) {
		free(out->nodes);
		out->nodes = NULL;
		out->n = 0;
		rc = hwmon_memory_nodes(hw, &out->nodes, &out->n, &out->source);
		if (rc == -ENOMEM)
			return rc;
	}
	if (out->n == 0) {
		out->rc = rc < 0 ? rc : -ENODATA;
		out->source = NULL;
	}
	return 0;
}

static void
gather_shm(struct hwmon *hw, struct facts_shm *out)
{
	struct statvfs sv;

	memset(out, 0, sizeof(*out));
	out->rc = hwmon_statvfs(hw, "dev/shm", &sv);
	if (out->rc == 0) {
		double frsize = (double)(sv.f_frsize ? sv.f_frsize : sv.f_bsize);

		out->total_mb = (long long)((double)sv.f_blocks * frsize / MIB);
		out->free_mb = (long long)((double)sv.f_bavail * frsize / MIB);
	}
}

static void
gather_limits(struct facts_limits *out)
{
	memset(out, 0, sizeof(*out));
	if (getrlimit(RLIMIT_MEMLOCK, &out->memlock) < 0 ||
	    getrlimit(RLIMIT_NOFILE, &out->nofile) < 0)
		out->err = errno;
}

/* --- everything --------------------------------------------------------- */

/* The blocking work of facts_gather(): every path and library at once. */
struct blocking {
	struct fanout_job *jobs;
	struct dirs dirs;
	const char **paths;
	bool *writable;
	struct lib_arg libs[2];
	size_t lib_job[2];    /* the library's job, when asked */
	size_t n;
};

static int
run_blocking(struct hwmon *hw, const struct config *cfg, struct facts *f)
{
	struct blocking b = { 0 };
	struct facts_library *lib[2] = { &f->nvml, &f->cndev };
	bool live = hwmon_is_live(hw);
	int rc = -ENOMEM;

	b.jobs = calloc(f->npaths + 2, sizeof(*b.jobs));
	b.paths = calloc(f->npaths + 1, sizeof(*b.paths));
	b.writable = calloc(f->npaths + 1, sizeof(*b.writable));
	if (!b.jobs || !b.paths || !b.writable)
		goto out;
	for (size_t i = 0; i < f->npaths; i++) {
		b.paths[i] = cfg->paths[i].path;
		b.writable[i] = cfg->paths[i].writable;
	}
	if (f->npaths && dirs_plan(&b.dirs, b.paths, b.writable, f->npaths, cfg->check_timeout_s,
	                           b.jobs, &b.n, f->paths) < 0)
		goto out;
	/* The vendors' libraries describe the live system only. */
	f->nvml.asked = live && f->drivers[SLOT_VENDOR_NVIDIA].nslots > 0;
	f->cndev.asked = live && f->drivers[SLOT_VENDOR_CAMBRICON].nslots > 0;
	for (int l = 0; l < 2; l++) {
		if (!lib[l]->asked)
			continue;
		b.libs[l].lib = l == 0 ? LIB_NVML : LIB_CNDEV;
		b.lib_job[l] = b.n;
		b.jobs[b.n++] = (struct fanout_job){ .fn = vendor_child, .arg = &b.libs[l],
		                                    .out = &b.libs[l].reply,
		                                    .size = sizeof(b.libs[l].reply) };
	}
	(void)fanout_run(b.jobs, b.n, cfg->check_timeout_s);  /* each job has its rc */
	dirs_done(&b.dirs, b.jobs, f->paths);
	for (int l = 0; l < 2; l++)
		if (lib[l]->asked)
			lib_done(&b.jobs[b.lib_job[l]], &b.libs[l], lib[l]);
	rc = 0;
out:
	dirs_free(&b.dirs);
	free(b.jobs);
	free(b.paths);
	free(b.writable);
	return rc;
}

int
facts_gather(struct hwmon *hw, const struct config *cfg, const struct slot *slots,
             size_t nslots, struct facts *out)
{
	int rc;

	memset(out, 0, sizeof(*out));
	out->timeout_s = cfg->check_timeout_s;
	rc = facts_gather_slots(hw, slots, slots ? nslots : 0, &out->slots);
	if (rc < 0)
		goto fail;
	out->nslots = slots ? nslots : 0;
	gather_drivers(hw, out->slots, out->nslots, out->drivers);
	rc = facts_gather_memory(hw, true, &out->memory);
	if (rc < 0)
		goto fail;
	gather_shm(hw, &out->shm);
	gather_limits(&out->limits);
	rc = facts_gather_nics(hw, cfg->nics, cfg->nnics, &out->nics);
	if (rc < 0)
		goto fail;
	out->nnics = cfg->nnics;
	rc = facts_gather_ib(hw, cfg->ib_devices, cfg->nib_devices, true, &out->ib, &out->nib);
	if (rc < 0)
		goto fail;
	if (cfg->npaths) {
		out->paths = calloc(cfg->npaths, sizeof(*out->paths));
		if (!out->paths) {
			rc = -ENOMEM;
			goto fail;
		}
		out->npaths = cfg->npaths;
	}
	rc = run_blocking(hw, cfg, out);
	if (rc < 0)
		goto fail;
	/* A driver that keeps no version file may still tell its library. */
	if (out->nvml.job_rc == 0 && !out->drivers[SLOT_VENDOR_NVIDIA].version[0])
		snprintf(out->drivers[SLOT_VENDOR_NVIDIA].version,
		         sizeof(out->drivers[0].version), "%s", out->nvml.info.version);
	if (out->cndev.job_rc == 0 && !out->drivers[SLOT_VENDOR_CAMBRICON].version[0])
		snprintf(out->drivers[SLOT_VENDOR_CAMBRICON].version,
		         sizeof(out->drivers[0].version), "%s", out->cndev.info.version);
	return 0;
fail:
	facts_free(out);
	return rc;
}

void
facts_free(struct facts *f)
{
	if (!f)
		return;
	free(f->slots);
	free(f->memory.nodes);
	free(f->paths);
	free(f->nics);
	facts_ib_free(f->ib, f->nib);
	memset(f, 0, sizeof(*f));
}
