/*
 * inspect.c - periodic fault inspection while training runs.
 *
 * The checks of the pre-check that still make sense on a busy node, read
 * through hwmon and judged with the same rules (check_pcie_degraded(),
 * check_nic_oper_up()); the checkpoint directory gets the storage check's
 * probe (check_probe_dir()).  Error counters (AER, InfiniBand link_downed
 * and symbol_error) count since boot, and a node often starts a job with
 * a few on the books; what signals a fault is a rise during the training,
 * so they are compared with the baseline taken in inspect_new().
 */
#include "autoconf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "hwmon.h"
#include "inspect.h"

/*
 * The checkpoint directory's probe gives up after this, or after
 * cfg->check_timeout_s if that is shorter: the inspection runs from the
 * agent's loop, which must keep serving signals and heartbeats.
 */
#define CKPT_TIMEOUT_MAX_S 2.0

struct watched_slot {
	int index;
	char bus_id[sizeof(((struct slot *)0)->pci_bus_id)];
	/* baselines; -1 until a value could be read */
	long long aer_correctable, aer_nonfatal, aer_fatal;
};

struct watched_port {
	char *dev;
	unsigned port;
	long long link_downed, symbol_error;  /* baselines, as above */
};

struct inspect {
	struct hwmon *hw;

	/* what inspect_run() needs of the configuration, copied */
	enum verdict pcie_degraded;
	long long aer_correctable_max;
	long long mem_min_free_mb;
	char **nics;
	size_t nnics;
	char **ib_devices;
	size_t nib_devices;

	struct watched_slot *slots;
	size_t nslots;
	struct watched_port *ports;
	size_t nports;

	char *ckpt_dir;
	long long ckpt_min_free_mb;
	double ckpt_timeout_s;
};

struct findings {
	struct inspect_finding *v;
	size_t n, cap;
	bool oom;
};

/* --- findings ----------------------------------------------------------- */

/* Control characters (a newline in a path) would break the one-line promise. */
static void
one_line(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = '?';
}

/* DEVICE into BUF, keeping the end of a long path: "...ckpt/run7". */
static void
set_device(char *buf, size_t len, const char *device)
{
	size_t n = strlen(device);

	if (n < len)
		memcpy(buf, device, n + 1);
	else
		snprintf(buf, len, "...%s", device + n - (len - 4));
	one_line(buf);
}

static void add(struct findings *fs, const char *what, const char *device, enum verdict v,
                const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void
add(struct findings *fs, const char *what, const char *device, enum verdict v,
    const char *fmt, ...)
{
	struct inspect_finding *f;
	va_list ap;

	if (v == VERDICT_PASS || fs->oom)
		return;
	if (fs->n == fs->cap) {
		size_t cap = fs->cap ? fs->cap * 2 : 8;
		struct inspect_finding *nv = realloc(fs->v, cap * sizeof(*nv));

		if (!nv) {
			fs->oom = true;
			return;
		}
		fs->v = nv;
		fs->cap = cap;
	}
	f = &fs->v[fs->n++];
	memset(f, 0, sizeof(*f));
	snprintf(f->what, sizeof(f->what), "%s", what);
	set_device(f->device, sizeof(f->device), device);
	f->verdict = v;
	va_start(ap, fmt);
	vsnprintf(f->evidence, sizeof(f->evidence), fmt, ap);
	va_end(ap);
	one_line(f->evidence);
}

/*
 * Whether counter NOW rose above baseline *BASE.  An unreadable value
 * (negative) says nothing.  The first readable value becomes the baseline,
 * and so does a value below it: the counters were cleared (a driver
 * reload, `perfquery -R`), and only a rise from there is news.
 */
static bool
risen(long long *base, long long now)
{
	if (now < 0)
		return false;
	if (*base < 0 || now < *base) {
		*base = now;
		return false;
	}
	return now > *base;
}

/* --- slots -------------------------------------------------------------- */

static void
inspect_slot(struct inspect *in, struct watched_slot *s, struct findings *fs)
{
	struct hwmon_pci pci;
	char what[96];
	int rc;

	rc = hwmon_pci_read(in->hw, s->bus_id, &pci);
	if (rc == -ENOENT) {
		add(fs, "slot", s->bus_id, VERDICT_FAIL, "slot %d (%s) is gone from the PCI bus",
		    s->index, s->bus_id);
		return;
	}
	if (rc < 0) {
		add(fs, "slot", s->bus_id, VERDICT_FAIL, "slot %d (%s) cannot be read: %s", s->index,
		    s->bus_id, strerror(-rc));
		return;
	}
	if (check_pcie_degraded(&pci, what, sizeof(what)))
		add(fs, "pcie", s->bus_id, in->pcie_degraded, "slot %d (%s) PCIe link degraded: %s",
		    s->index, s->bus_id, what);

	{
		long long base = s->aer_fatal;

		if (risen(&s->aer_fatal, pci.aer_fatal))
			add(fs, "aer", s->bus_id, VERDICT_FAIL,
			    "slot %d (%s) fatal AER errors %lld -> %lld", s->index, s->bus_id, base,
			    pci.aer_fatal);
		base = s->aer_nonfatal;
		if (risen(&s->aer_nonfatal, pci.aer_nonfatal))
			add(fs, "aer", s->bus_id, VERDICT_WARN,
			    "slot %d (%s) non-fatal AER errors %lld -> %lld", s->index, s->bus_id,
			    base, pci.aer_nonfatal);
		base = s->aer_correctable;
		/* Correctable errors are retried by the link; only a burst matters. */
		if (risen(&s->aer_correctable, pci.aer_correctable) && in->aer_correctable_max >= 0 &&
		    pci.aer_correctable - base > in->aer_correctable_max)
			add(fs, "aer", s->bus_id, VERDICT_WARN,
			    "slot %d (%s) correctable AER errors %lld -> %lld, more than %lld",
			    s->index, s->bus_id, base, pci.aer_correctable, in->aer_correctable_max);
	}
}

/* --- network ------------------------------------------------------------ */

static void
inspect_nic(struct inspect *in, const char *name, struct findings *fs)
{
	struct hwmon_nic nic;
	int rc;

	rc = hwmon_nic_read(in->hw, name, &nic);
	if (rc == -ENOENT) {
		add(fs, "nic", name, VERDICT_FAIL, "no such interface");
		return;
	}
	if (rc < 0) {
		add(fs, "nic", name, VERDICT_FAIL, "cannot be read: %s", strerror(-rc));
		return;
	}
	/* The kernel refuses to read carrier while the link is down. */
	if (!check_nic_oper_up(&nic) || nic.carrier != 1)
		add(fs, "nic", name, VERDICT_FAIL, "operstate %s, carrier %s",
		    nic.operstate[0] ? nic.operstate : "unreadable",
		    nic.carrier == 1 ? "1" : nic.carrier == 0 ? "0" : "unknown");
}

/* A required InfiniBand device: every port ACTIVE and LinkUp. */
static int
inspect_ib_device(struct inspect *in, const char *dev, struct findings *fs)
{
	struct hwmon_ib_port *ports = NULL;
	size_t n = 0;
	int rc;

	rc = hwmon_ib_ports(in->hw, dev, &ports, &n);
	if (rc == -ENOMEM)
		return rc;
	if (rc == -ENOENT) {
		add(fs, "ib", dev, VERDICT_FAIL, "no such InfiniBand device");
		return 0;
	}
	if (rc < 0) {
		add(fs, "ib", dev, VERDICT_FAIL, "cannot be read: %s", strerror(-rc));
		return 0;
	}
	if (n == 0)
		add(fs, "ib", dev, VERDICT_FAIL, "no ports");
	for (size_t i = 0; i < n; i++) {
		const struct hwmon_ib_port *p = &ports[i];
		char device[sizeof(((struct inspect_finding *)0)->device)];

		if (p->state == HWMON_IB_ACTIVE && p->phys_state == HWMON_IB_LINKUP)
			continue;
		snprintf(device, sizeof(device), "%s/%u", dev, p->port);
		add(fs, "ib", device, VERDICT_FAIL, "state %s, phys_state %s",
		    p->state_text[0] ? p->state_text : "unreadable",
		    p->phys_state_text[0] ? p->phys_state_text : "unreadable");
	}
	free(ports);
	return 0;
}

static void
inspect_ib_counters(struct inspect *in, struct watched_port *p, struct findings *fs)
{
	char device[sizeof(((struct inspect_finding *)0)->device)];
	long long v, base;

	snprintf(device, sizeof(device), "%s/%u", p->dev, p->port);
	/* A port that went away says so through its state, if it is required. */
	base = p->link_downed;
	if (hwmon_ib_counter(in->hw, p->dev, p->port, "link_downed", &v) < 0)
		v = -1;
	if (risen(&p->link_downed, v))
		add(fs, "ib", device, VERDICT_FAIL, "link_downed %lld -> %lld", base, v);
	base = p->symbol_error;
	if (hwmon_ib_counter(in->hw, p->dev, p->port, "symbol_error", &v) < 0)
		v = -1;
	if (risen(&p->symbol_error, v))
		add(fs, "ib", device, VERDICT_WARN, "symbol_error %lld -> %lld", base, v);
}

/* --- memory ------------------------------------------------------------- */

static int
inspect_memory(struct inspect *in, struct findings *fs)
{
	long long min_mb = in->mem_min_free_mb;
	struct hwmon_numa_node *nodes = NULL;
	size_t n = 0;
	int rc;

	if (min_mb <= 0)
		return 0;
	rc = hwmon_memory_nodes(in->hw, &nodes, &n, NULL);
	if (rc == -ENOMEM)
		return rc;
	if (rc < 0) {
		add(fs, "memory", "proc/meminfo", VERDICT_WARN,
		    "free memory cannot be read: %s", strerror(-rc));
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		long long free_mb = nodes[i].free_kb / 1024;
		char device[32];

		/* Memoryless nodes (CPU-only, or only devices) have nothing to free. */
		if (nodes[i].total_kb <= 0 || free_mb >= min_mb)
			continue;
		snprintf(device, sizeof(device), "node%d", nodes[i].node);
		add(fs, "memory", device, VERDICT_WARN, "%lld MB free, need %lld MB", free_mb, min_mb);
	}
	free(nodes);
	return 0;
}

/* --- checkpoint directory ----------------------------------------------- */

static void
inspect_ckpt(struct inspect *in, struct findings *fs)
{
	const char *dir = in->ckpt_dir;
	struct check_dir_probe rep;
	int rc;

	rc = check_probe_dir(dir, false, in->ckpt_timeout_s, &rep);
	if (rc == -ETIMEDOUT) {
		add(fs, "storage", dir, VERDICT_FAIL, "not answering after %g s", in->ckpt_timeout_s);
		return;
	}
	if (rc == -EPROTO) {
		add(fs, "storage", dir, VERDICT_WARN, "the probe failed");
		return;
	}
	/* The agent could not look (no fork under memory pressure): that
	 * says nothing about the directory. */
	if (rc < 0) {
		add(fs, "storage", dir, VERDICT_WARN, "cannot run the probe: %s", strerror(-rc));
		return;
	}
	if (rep.err == ENOENT) {
		add(fs, "storage", dir, VERDICT_FAIL, "missing");
		return;
	}
	if (rep.err) {
		add(fs, "storage", dir, VERDICT_FAIL, "cannot be examined: %s", strerror(rep.err));
		return;
	}
	if (rep.not_dir) {
		add(fs, "storage", dir, VERDICT_FAIL, "not a directory");
		return;
	}
	if (in->ckpt_min_free_mb > 0 && rep.free_mb < in->ckpt_min_free_mb)
		add(fs, "storage", dir, VERDICT_FAIL, "%lld MB free, need %lld MB", rep.free_mb,
		    in->ckpt_min_free_mb);
}

/* --- the inspection ----------------------------------------------------- */

static void
list_free(char **list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(list[i]);
	free(list);
}

static int
copy_list(char *const *src, size_t n, char ***dst, size_t *dn)
{
	for (size_t i = 0; i < n; i++) {
		int rc = config_list_add(dst, dn, src[i]);

		if (rc < 0)
			return rc;
	}
	return 0;
}

/* Every port of every InfiniBand device present, with its counters now. */
static int
baseline_ports(struct inspect *in)
{
	char **devs = NULL;
	size_t ndevs = 0;
	int rc;

	rc = hwmon_ib_devices(in->hw, &devs, &ndevs);
	if (rc == -ENOMEM)
		return rc;
	if (rc < 0)
		return 0;  /* nothing to watch: sys/class/infiniband unreadable */
	for (size_t i = 0; i < ndevs; i++) {
		struct hwmon_ib_port *ports = NULL;
		struct watched_port *nv;
		size_t n = 0;

		rc = hwmon_ib_ports(in->hw, devs[i], &ports, &n);
		if (rc == -ENOMEM)
			goto out;
		if (rc < 0 || n == 0)
			continue;
		nv = realloc(in->ports, (in->nports + n) * sizeof(*nv));
		if (!nv) {
			free(ports);
			rc = -ENOMEM;
			goto out;
		}
		in->ports = nv;
		for (size_t k = 0; k < n; k++) {
			struct watched_port *p = &in->ports[in->nports];

			p->dev = strdup(devs[i]);
			if (!p->dev) {
				free(ports);
				rc = -ENOMEM;
				goto out;
			}
			p->port = ports[k].port;
			p->link_downed = ports[k].link_downed;
			p->symbol_error = ports[k].symbol_error;
			in->nports++;
		}
		free(ports);
	}
	rc = 0;
out:
	hwmon_list_free(devs, ndevs);
	return rc;
}

int
inspect_new(const struct config *cfg, const struct slot *slots, size_t nslots,
            const char *ckpt_dir, long long ckpt_min_free_mb, struct inspect **out)
{
	struct inspect *in;
	int rc;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!cfg || (nslots > 0 && !slots))
		return -EINVAL;
	in = calloc(1, sizeof(*in));
	if (!in)
		return -ENOMEM;
	rc = hwmon_open(cfg->sysfs_root, &in->hw);
	if (rc < 0)
		goto out;

	in->pcie_degraded = cfg->pcie_degraded;
	in->aer_correctable_max = cfg->aer_correctable_max;
	in->mem_min_free_mb = cfg->mem_min_free_mb;
	rc = copy_list(cfg->nics, cfg->nnics, &in->nics, &in->nnics);
	if (rc < 0)
		goto out;
	rc = copy_list(cfg->ib_devices, cfg->nib_devices, &in->ib_devices, &in->nib_devices);
	if (rc < 0)
		goto out;
	if (ckpt_dir) {
		in->ckpt_dir = strdup(ckpt_dir);
		if (!in->ckpt_dir) {
			rc = -ENOMEM;
			goto out;
		}
	}
	in->ckpt_min_free_mb = ckpt_min_free_mb;
	in->ckpt_timeout_s = cfg->check_timeout_s > 0 && cfg->check_timeout_s < CKPT_TIMEOUT_MAX_S
	                             ? cfg->check_timeout_s
	                             : CKPT_TIMEOUT_MAX_S;

	if (nslots > 0) {
		in->slots = calloc(nslots, sizeof(*in->slots));
		if (!in->slots) {
			rc = -ENOMEM;
			goto out;
		}
	}
	for (size_t i = 0; i < nslots; i++) {
		struct watched_slot *s = &in->slots[i];
		struct hwmon_pci pci;

		s->index = slots[i].index;
		memcpy(s->bus_id, slots[i].pci_bus_id, sizeof(s->bus_id));
		s->bus_id[sizeof(s->bus_id) - 1] = '\0';
		/* A slot missing already fails its first run; no baseline then. */
		if (hwmon_pci_read(in->hw, s->bus_id, &pci) < 0)
			pci.aer_correctable = pci.aer_nonfatal = pci.aer_fatal = -1;
		s->aer_correctable = pci.aer_correctable;
		s->aer_nonfatal = pci.aer_nonfatal;
		s->aer_fatal = pci.aer_fatal;
		in->nslots++;
	}
	rc = baseline_ports(in);
	if (rc < 0)
		goto out;
	*out = in;
	return 0;
out:
	inspect_free(in);
	return rc;
}

int
inspect_run(struct inspect *in, struct inspect_finding **findings, size_t *n)
{
	struct findings fs = { NULL, 0, 0, false };
	int rc = 0;

	if (!findings || !n)
		return -EINVAL;
	*findings = NULL;
	*n = 0;
	if (!in)
		return -EINVAL;
	for (size_t i = 0; i < in->nslots; i++)
		inspect_slot(in, &in->slots[i], &fs);
	for (size_t i = 0; i < in->nnics; i++)
		inspect_nic(in, in->nics[i], &fs);
	for (size_t i = 0; i < in->nib_devices && rc == 0; i++)
		rc = inspect_ib_device(in, in->ib_devices[i], &fs);
	if (rc < 0)
		goto out;
	for (size_t i = 0; i < in->nports; i++)
		inspect_ib_counters(in, &in->ports[i], &fs);
	rc = inspect_memory(in, &fs);
	if (rc < 0)
		goto out;
	if (in->ckpt_dir)
		inspect_ckpt(in, &fs);
	if (fs.oom) {
		rc = -ENOMEM;
		goto out;
	}
	*findings = fs.v;
	*n = fs.n;
	fs.v = NULL;
out:
	free(fs.v);
	return rc;
}

void
inspect_free(struct inspect *in)
{
	if (!in)
		return;
	hwmon_free(in->hw);
	list_free(in->nics, in->nnics);
	list_free(in->ib_devices, in->nib_devices);
	free(in->slots);
	for (size_t i = 0; i < in->nports; i++)
		free(in->ports[i].dev);
	free(in->ports);
	free(in->ckpt_dir);
	free(in);
}
