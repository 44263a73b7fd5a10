/*
 * judge.c - the rules of the health checks, and their one wording.
 *
 * Every reason is a whole sentence that names what it is about, so the
 * same words read right in a Slurm drain reason ("vigil: nics: eth1 is
 * down (operstate down, no carrier)"), in `vigil check`'s output and in a
 * fault event of the inspection.
 */
#include "autoconf.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/judge.h"
#include "lib/util.h"

/* Paths longer than this keep their end in a reason: "...ckpt/run7 is missing". */
#define PATH_IN_REASON 96

void
judge_say(struct judge *j, enum verdict v, const char *what, const char *device,
          const char *fmt, ...)
{
	struct finding f;
	va_list ap;

	if (v == VERDICT_PASS)
		return;
	va_start(ap, fmt);
	finding_vset(&f, v, what, device, fmt, ap);
	va_end(ap);
	j->sink(j->arg, &f);
}

static void
collect(void *arg, const struct finding *f)
{
	finding_add(arg, f->verdict, f->what, f->device, "%s", f->evidence);
}

void
judge_to_list(struct judge *j, struct finding_list *l)
{
	j->sink = collect;
	j->arg = l;
}

void
judge_rules_init(struct judge_rules *r, const struct config *cfg)
{
	memset(r, 0, sizeof(*r));
	r->slots_expected = cfg->slots_expected;
	r->pcie_degraded = cfg->pcie_degraded;
	r->aer_correctable_max = cfg->aer_correctable_max;
	r->driver_required = cfg->driver_required;
	memcpy(r->driver_version, cfg->driver_version, sizeof(r->driver_version));
	r->mem_min_free_mb = cfg->mem_min_free_mb;
	r->shm_min_mb = cfg->shm_min_mb;
	r->memlock_unlimited = cfg->memlock_unlimited;
	r->nofile_min = cfg->nofile_min;
	r->nic_min_speed_mbps = cfg->nic_min_speed_mbps;
	r->ib_min_rate_gbps = cfg->ib_min_rate_gbps;
	r->timeout_s = cfg->check_timeout_s;
	r->mem_low = VERDICT_FAIL;
	r->probe_trouble = VERDICT_FAIL;
}

/* --- slots --------------------------------------------------------------- */

void
judge_slot_count(struct judge *j, size_t nslots, const struct judge_rules *r)
{
	if (r->slots_expected >= 0 && nslots < (size_t)r->slots_expected)
		judge_say(j, VERDICT_FAIL, "slot", "", "found %zu slot%s, expected %d", nslots,
		          util_plural((long long)nslots), r->slots_expected);
}

bool
judge_slot_present(struct judge *j, const struct facts_slot *s)
{
	if (s->rc == -ENOENT)
		judge_say(j, VERDICT_FAIL, "slot", s->bus_id, "slot %d (%s) is missing from the PCI bus",
		          s->index, s->bus_id);
	else if (s->rc < 0)
		judge_say(j, VERDICT_FAIL, "slot", s->bus_id, "slot %d (%s) cannot be read: %s",
		          s->index, s->bus_id, strerror(-s->rc));
	return s->rc == 0;
}

void
judge_slot_driver(struct judge *j, const struct facts_slot *s, const struct judge_rules *r)
{
	if (s->rc == 0 && !s->pci.driver[0] && r->driver_required)
		judge_say(j, VERDICT_FAIL, "slot", s->bus_id, "slot %d (%s) has no driver bound",
		          s->index, s->bus_id);
}

bool
judge_pcie_degraded(const struct hwmon_pci *pci, char *buf, size_t len)
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

void
judge_pcie_link(struct judge *j, const struct facts_slot *s, const struct judge_rules *r)
{
	char what[96];

	if (s->rc == 0 && judge_pcie_degraded(&s->pci, what, sizeof(what)))
		judge_say(j, r->pcie_degraded, "pcie", s->bus_id, "slot %d (%s) PCIe link degraded: %s",
		          s->index, s->bus_id, what);
}

/*
 * One AER count: NOW errors of KIND (with BASE >= 0, only those since),
 * over LIMIT (-1: any at all).  The words: "has 2 [new ]fatal PCIe AER
 * errors[ (1 -> 3[, limit L])]".
 */
static void
aer_count(struct judge *j, const struct facts_slot *s, enum verdict v, const char *kind,
          long long now, const long long *base, long long limit)
{
	long long count;
	char extra[96] = "";

	if (now < 0 || (base && *base < 0))
		return;
	count = base ? now - *base : now;
	if (count <= (limit >= 0 ? limit : 0))
		return;
	if (base && limit >= 0)
		snprintf(extra, sizeof(extra), " (%lld -> %lld, limit %lld)", *base, now, limit);
	else if (base)
		snprintf(extra, sizeof(extra), " (%lld -> %lld)", *base, now);
	else if (limit >= 0)
		snprintf(extra, sizeof(extra), " (limit %lld)", limit);
	judge_say(j, v, "aer", s->bus_id, "slot %d (%s) has %lld %s%s PCIe AER error%s%s", s->index,
	          s->bus_id, count, base ? "new " : "", kind, util_plural(count), extra);
}

void
judge_aer(struct judge *j, const struct facts_slot *s, const struct judge_aer *base,
          const struct judge_rules *r)
{
	if (s->rc < 0)
		return;
	aer_count(j, s, VERDICT_FAIL, "fatal", s->pci.aer_fatal, base ? &base->fatal : NULL, -1);
	aer_count(j, s, VERDICT_WARN, "non-fatal", s->pci.aer_nonfatal,
	          base ? &base->nonfatal : NULL, -1);
	/* Correctable errors are retried by the link; only a burst matters. */
	if (r->aer_correctable_max >= 0)
		aer_count(j, s, VERDICT_WARN, "correctable", s->pci.aer_correctable,
		          base ? &base->correctable : NULL, r->aer_correctable_max);
}

void
judge_driver_version(struct judge *j, enum slot_vendor vendor, const struct facts_driver *d,
                     const struct judge_rules *r)
{
	const struct config_version *want;
	const char *name = slot_vendor_name(vendor);
	int cmp;

	if ((unsigned)vendor >= FACTS_NVENDORS || d->nslots == 0)
		return;
	want = &r->driver_version[vendor];
	if (!want->version[0])
		return;
	if (!d->version[0]) {
		judge_say(j, VERDICT_FAIL, "driver", name, "%s driver version unknown, %s%s required",
		          name, want->version, want->minimum ? " or later" : "");
		return;
	}
	cmp = judge_version_cmp(d->version, want->version);
	if (want->minimum && cmp < 0)
		judge_say(j, VERDICT_FAIL, "driver", name, "%s driver %s is below the required %s",
		          name, d->version, want->version);
	else if (!want->minimum && cmp != 0)
		judge_say(j, VERDICT_FAIL, "driver", name, "%s driver %s is not the required %s",
		          name, d->version, want->version);
}

void
judge_library(struct judge *j, const char *name, const struct facts_library *lib,
              size_t nboards, const struct judge_rules *r)
{
	if (!lib->asked)
		return;
	if (lib->job_rc == -ETIMEDOUT) {
		judge_say(j, VERDICT_WARN, "library", name, "%s did not answer within %g s", name,
		          r->timeout_s);
		return;
	}
	/* No answer (the child could not run) or not installed (or an
	 * unusable copy): the driver's own files still tell the version. */
	if (lib->job_rc < 0 || lib->rc == -ENOENT || lib->rc == -ENOSYS)
		return;
	/* Installed but failing, e.g. "Driver/library version mismatch"
	 * after a driver update without a reboot. */
	if (lib->rc < 0)
		judge_say(j, VERDICT_WARN, "library", name, "%s: %s", name, lib->info.error);
	if (lib->info.count >= 0 && (size_t)lib->info.count < nboards)
		judge_say(j, VERDICT_FAIL, "library", name, "%s sees %d board%s, %zu slot%s found",
		          name, lib->info.count, util_plural(lib->info.count), nboards,
		          util_plural((long long)nboards));
}

/* Compare the digit runs A and B (lengths LA, LB) as numbers of any size. */
static int
cmp_digits(const char *a, size_t la, const char *b, size_t lb)
{
	while (la > 1 && *a == '0') {
		a++;
		la--;
	}
	while (lb > 1 && *b == '0') {
		b++;
		lb--;
	}
	if (la != lb)
		return la < lb ? -1 : 1;
	return memcmp(a, b, la);
}

int
judge_version_cmp(const char *a, const char *b)
{
	for (;;) {
		size_t la, lb;
		int c;

		while (*a && !isalnum((unsigned char)*a))
			a++;
		while (*b && !isalnum((unsigned char)*b))
			b++;
		if (!*a || !*b)
			return *a ? 1 : *b ? -1 : 0;
		if (isdigit((unsigned char)*a) != isdigit((unsigned char)*b))
			return isdigit((unsigned char)*a) ? 1 : -1;  /* 1.0 after 1.rc1 */
		if (isdigit((unsigned char)*a)) {
			la = strspn(a, "0123456789");
			lb = strspn(b, "0123456789");
			c = cmp_digits(a, la, b, lb);
		} else {
			for (la = 0; isalpha((unsigned char)a[la]); la++)
				;
			for (lb = 0; isalpha((unsigned char)b[lb]); lb++)
				;
			c = strncmp(a, b, la < lb ? la : lb);
			if (c == 0 && la != lb)
				c = la < lb ? -1 : 1;
		}
		if (c != 0)
			return c < 0 ? -1 : 1;
		a += la;
		b += lb;
	}
}

/* --- memory, storage, limits --------------------------------------------- */

void
judge_memory(struct judge *j, const struct facts_memory *m, const struct judge_rules *r)
{
	long long min_mb = r->mem_min_free_mb;

	if (m->rc < 0 || m->n == 0) {
		judge_say(j, min_mb > 0 ? r->mem_low : VERDICT_WARN, "memory", "proc/meminfo",
		          "cannot read free memory (sys/devices/system/node, proc/meminfo): %s",
		          strerror(m->rc < 0 ? -m->rc : ENODATA));
		return;
	}
	for (size_t i = 0; min_mb > 0 && i < m->n; i++) {
		long long free_mb = m->nodes[i].free_kb / 1024;
		char device[32];

		/* Memoryless nodes (CPU-only, or only devices) have nothing to free. */
		if (m->nodes[i].total_kb <= 0 || free_mb >= min_mb)
			continue;
		snprintf(device, sizeof(device), "node%d", m->nodes[i].node);
		judge_say(j, r->mem_low, "memory", device, "NUMA node %d has %lld MB free, below %lld MB",
		          m->nodes[i].node, free_mb, min_mb);
	}
}

/* PATH as a reason shows it: whole, or its end when long. */
static const char *
short_path(const char *path, char *buf, size_t len)
{
	size_t n = strlen(path);

	if (n <= PATH_IN_REASON || len < PATH_IN_REASON + 1)
		return path;
	snprintf(buf, len, "...%s", path + n - (PATH_IN_REASON - 3));
	return buf;
}

/* Every path that timed out, in one finding: "/a, /b and 5 more timed out after 10 s". */
static void
judge_timeouts(struct judge *j, const struct config_path *cfg, const struct facts_path *f,
               size_t n, const struct judge_rules *r)
{
	char names[200] = "", sp[PATH_IN_REASON + 1];
	const char *first = NULL;
	size_t used = 0, shown = 0, total = 0;

	for (size_t i = 0; i < n; i++) {
		const char *p;
		size_t need;

		if (f[i].rc != -ETIMEDOUT)
			continue;
		total++;
		if (!first)
			first = cfg[i].path;
		p = short_path(cfg[i].path, sp, sizeof(sp));
		need = strlen(p) + (used ? 2 : 0);
		if (used + need >= sizeof(names) && shown > 0)
			continue;
		used += (size_t)snprintf(names + used, sizeof(names) - used, "%s%s", used ? ", " : "", p);
		if (used >= sizeof(names))
			used = sizeof(names) - 1;
		shown++;
	}
	if (total == 0)
		return;
	if (total > shown)
		judge_say(j, VERDICT_FAIL, "storage", first, "%s and %zu more timed out after %g s", names,
		          total - shown, r->timeout_s);
	else
		judge_say(j, VERDICT_FAIL, "storage", first, "%s timed out after %g s", names,
		          r->timeout_s);
}

static void
judge_path(struct judge *j, const struct config_path *c, const struct facts_path *f,
           const struct judge_rules *r)
{
	const struct facts_dir *d = &f->dir;
	char buf[PATH_IN_REASON + 1];
	const char *p = short_path(c->path, buf, sizeof(buf));

	/* As unresponsive as a timeout, and known sooner: no new probe ran. */
	if (f->rc == -EALREADY) {
		judge_say(j, VERDICT_FAIL, "storage", c->path,
		          "%s: still stuck: an earlier probe has not returned in %.0f s (pid %d)", p,
		          f->stuck_s, f->stuck_pid);
		return;
	}
	if (f->rc == -EPROTO) {
		judge_say(j, r->probe_trouble, "storage", c->path, "%s: the probe failed", p);
		return;
	}
	/* The agent could not look (no fork under memory pressure). */
	if (f->rc < 0) {
		judge_say(j, r->probe_trouble, "storage", c->path, "%s: cannot run the probe: %s", p,
		          strerror(-f->rc));
		return;
	}
	if (d->err == ENOENT)
		judge_say(j, VERDICT_FAIL, "storage", c->path, "%s is missing", p);
	else if (d->err)
		judge_say(j, VERDICT_FAIL, "storage", c->path, "%s cannot be examined: %s", p,
		          strerror(d->err));
	else if (d->not_dir)
		judge_say(j, VERDICT_FAIL, "storage", c->path, "%s is not a directory", p);
	if (d->err || d->not_dir)
		return;
	if (c->min_free_mb > 0 && d->free_mb < c->min_free_mb)
		judge_say(j, VERDICT_FAIL, "storage", c->path, "%s has %lld MB free, below %lld MB", p,
		          d->free_mb, c->min_free_mb);
	/* Filesystems that allocate inodes on demand (btrfs) report none. */
	if (c->min_free_inodes > 0 && d->files && d->favail < (unsigned long long)c->min_free_inodes)
		judge_say(j, VERDICT_FAIL, "storage", c->path, "%s has %llu free inodes, below %lld", p,
		          d->favail, c->min_free_inodes);
	if (d->write_err > 0)
		judge_say(j, VERDICT_FAIL, "storage", c->path, "%s is not writable (%s)", p,
		          strerror(d->write_err));
}

void
judge_paths(struct judge *j, const struct config_path *cfg, const struct facts_path *f,
            size_t n, const struct judge_rules *r)
{
	judge_timeouts(j, cfg, f, n, r);
	for (size_t i = 0; i < n; i++)
		if (f[i].rc != -ETIMEDOUT)
			judge_path(j, &cfg[i], &f[i], r);
}

void
judge_shm(struct judge *j, const struct facts_shm *s, const struct judge_rules *r)
{
	if (r->shm_min_mb <= 0)
		return;
	if (s->rc < 0)
		judge_say(j, VERDICT_FAIL, "storage", "/dev/shm", "/dev/shm cannot be examined: %s",
		          strerror(-s->rc));
	else if (s->total_mb < r->shm_min_mb)
		judge_say(j, VERDICT_FAIL, "storage", "/dev/shm", "/dev/shm is %lld MB, below %lld MB",
		          s->total_mb, r->shm_min_mb);
}

void
judge_limits(struct judge *j, const struct facts_limits *l, const struct judge_rules *r)
{
	if (l->err) {
		judge_say(j, VERDICT_FAIL, "limits", "", "cannot read resource limits: %s",
		          strerror(l->err));
		return;
	}
	if (r->memlock_unlimited && l->memlock.rlim_cur != RLIM_INFINITY)
		judge_say(j, VERDICT_FAIL, "limits", "RLIMIT_MEMLOCK",
		          "RLIMIT_MEMLOCK is %llu KB, RDMA needs unlimited (ulimit -l unlimited)",
		          (unsigned long long)l->memlock.rlim_cur / 1024);
	if (r->nofile_min > 0 && l->nofile.rlim_cur != RLIM_INFINITY &&
	    l->nofile.rlim_cur < (rlim_t)r->nofile_min)
		judge_say(j, VERDICT_FAIL, "limits", "RLIMIT_NOFILE", "RLIMIT_NOFILE is %llu, below %lld",
		          (unsigned long long)l->nofile.rlim_cur, r->nofile_min);
}

/* --- network ------------------------------------------------------------- */

bool
judge_nic_oper_up(const struct hwmon_nic *nic)
{
	/* Drivers without operstate support report "unknown" while working. */
	return strcmp(nic->operstate, "up") == 0 ||
	       (strcmp(nic->operstate, "unknown") == 0 && nic->carrier == 1);
}

bool
judge_nic_link(struct judge *j, const struct facts_nic *n)
{
	const struct hwmon_nic *nic = &n->nic;

	if (n->rc == -ENOENT) {
		judge_say(j, VERDICT_FAIL, "nic", n->name, "%s is missing", n->name);
		return false;
	}
	if (n->rc < 0) {
		judge_say(j, VERDICT_FAIL, "nic", n->name, "%s cannot be read: %s", n->name,
		          strerror(-n->rc));
		return false;
	}
	if (!judge_nic_oper_up(nic)) {
		/* The kernel refuses to read carrier while the link is down. */
		judge_say(j, VERDICT_FAIL, "nic", n->name, "%s is down (operstate %s, %s)", n->name,
		          nic->operstate[0] ? nic->operstate : "unreadable",
		          nic->carrier == 1 ? "carrier" : "no carrier");
		return false;
	}
	if (nic->carrier != 1) {
		judge_say(j, VERDICT_FAIL, "nic", n->name, "%s has no carrier (operstate %s)", n->name,
		          nic->operstate);
		return false;
	}
	return true;
}

void
judge_nic_speed(struct judge *j, const struct facts_nic *n, const struct judge_rules *r)
{
	long long min = r->nic_min_speed_mbps;

	if (min <= 0 || n->rc < 0 || !judge_nic_oper_up(&n->nic) || n->nic.carrier != 1)
		return;
	if (n->nic.speed_mbps < 0)
		judge_say(j, VERDICT_WARN, "nic", n->name, "%s speed is unknown (minimum %lld Mb/s)",
		          n->name, min);
	else if (n->nic.speed_mbps < min)
		judge_say(j, VERDICT_FAIL, "nic", n->name, "%s runs at %lld Mb/s, below %lld Mb/s",
		          n->name, n->nic.speed_mbps, min);
}

static bool
port_active(const struct hwmon_ib_port *p)
{
	return p->state == HWMON_IB_ACTIVE && p->phys_state == HWMON_IB_LINKUP;
}

size_t
judge_ib_state(struct judge *j, const struct facts_ib *d)
{
	enum verdict down = d->listed ? VERDICT_FAIL : VERDICT_WARN;
	size_t active = 0;

	if (d->rc == -ENOENT) {
		judge_say(j, VERDICT_FAIL, "ib", d->name, "InfiniBand device %s is missing", d->name);
		return 0;
	}
	if (d->rc < 0) {
		judge_say(j, down, "ib", d->name, "InfiniBand device %s cannot be read: %s", d->name,
		          strerror(-d->rc));
		return 0;
	}
	if (d->nports == 0)
		judge_say(j, down, "ib", d->name, "InfiniBand device %s has no ports", d->name);
	for (size_t i = 0; i < d->nports; i++) {
		const struct hwmon_ib_port *p = &d->ports[i];
		char device[NAME_MAX + 16];

		if (port_active(p)) {
			active++;
			continue;
		}
		snprintf(device, sizeof(device), "%s/%u", d->name, p->port);
		judge_say(j, down, "ib", device, "%s port %u is not active (state %s, phys_state %s)",
		          d->name, p->port, p->state_text[0] ? p->state_text : "unreadable",
		          p->phys_state_text[0] ? p->phys_state_text : "unreadable");
	}
	return active;
}

void
judge_ib_rate(struct judge *j, const struct facts_ib *d, const struct judge_rules *r)
{
	long long min = r->ib_min_rate_gbps;

	if (!d->listed || min <= 0 || d->rc < 0)
		return;
	for (size_t i = 0; i < d->nports; i++) {
		const struct hwmon_ib_port *p = &d->ports[i];
		char device[NAME_MAX + 16];

		if (!port_active(p))
			continue;
		snprintf(device, sizeof(device), "%s/%u", d->name, p->port);
		if (p->rate_gbps <= 0)
			judge_say(j, VERDICT_WARN, "ib", device, "%s port %u rate is unknown (minimum %lld Gb/s)",
			          d->name, p->port, min);
		else if (p->rate_gbps < (double)min)
			judge_say(j, VERDICT_FAIL, "ib", device, "%s port %u runs at %s, below %lld Gb/s",
			          d->name, p->port, p->rate, min);
	}
}

void
judge_ib_counters(struct judge *j, const char *dev, const struct hwmon_ib_port *now,
                  const struct hwmon_ib_port *base)
{
	char device[NAME_MAX + 16];
	long long d;

	snprintf(device, sizeof(device), "%s/%u", dev, now->port);
	if (now->link_downed >= 0 && base->link_downed >= 0 && now->link_downed > base->link_downed) {
		d = now->link_downed - base->link_downed;
		judge_say(j, VERDICT_FAIL, "ib", device,
		          "%s port %u link went down %lld more time%s (link_downed %lld -> %lld)", dev,
		          now->port, d, util_plural(d), base->link_downed, now->link_downed);
	}
	if (now->symbol_error >= 0 && base->symbol_error >= 0 &&
	    now->symbol_error > base->symbol_error) {
		d = now->symbol_error - base->symbol_error;
		judge_say(j, VERDICT_WARN, "ib", device,
		          "%s port %u has %lld new symbol error%s (symbol_error %lld -> %lld)", dev,
		          now->port, d, util_plural(d), base->symbol_error, now->symbol_error);
	}
}
