/*
 * inspect.c - periodic fault inspection while training runs.
 *
 * The checks of the pre-check that still make sense on a busy node:
 * gathered with facts.c, judged with judge.c's rules and words, so a NIC
 * that goes down reads the same here as in `vigil check`.  Error counters
 * (AER, InfiniBand link_downed and symbol_error) count since boot, and a
 * node often starts a job with a few on the books; what signals a fault is
 * a rise during the training, so they are judged against the baseline
 * taken in inspect_new().
 */
#include "autoconf.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/facts.h"
#include "check/inspect.h"
#include "check/judge.h"
#include "sys/hwmon.h"

/*
 * The checkpoint directory's probe gives up after this, or after
 * cfg->check_timeout_s if that is shorter: the inspection runs from the
 * agent's loop, which must keep serving signals and heartbeats.
 */
#define CKPT_TIMEOUT_MAX_S 2.0

/* An InfiniBand port present at the baseline: its counters then. */
struct watched_port {
	char *dev;
	struct hwmon_ib_port base;   /* counters -1 until first readable */
};

struct inspect {
	struct hwmon *hw;

	/* what inspect_run() needs of the configuration, copied */
	struct judge_rules rules;
	char **nics;
	size_t nnics;
	char **ib_devices;
	size_t nib_devices;

	struct slot *slots;          /* copies; only index, vendor, model, bus id count */
	struct judge_aer *aer;       /* per slot: the baseline, -1 until readable */
	size_t nslots;
	struct watched_port *ports;
	size_t nports;

	struct config_path ckpt;     /* path NULL: no checkpoint directory */
};

/*
 * The baseline *BASE for a counter reading NOW.  An unreadable value
 * (negative) changes nothing.  The first readable value becomes the
 * baseline, and so does a value below it: the counters were cleared (a
 * driver reload, `perfquery -R`), and only a rise from there is news.
 */
static void
rebase(long long *base, long long now)
{
	if (now >= 0 && (*base < 0 || now < *base))
		*base = now;
}

/* --- the parts ---------------------------------------------------------- */

static int
inspect_slots(struct inspect *in, struct judge *j)
{
	struct facts_slot *fs = NULL;
	int rc;

	rc = facts_gather_slots(in->hw, in->slots, in->nslots, &fs);
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < in->nslots; i++) {
		struct judge_aer *base = &in->aer[i];
		const struct hwmon_pci *pci = &fs[i].pci;

		if (!judge_slot_present(j, &fs[i]))
			continue;
		judge_pcie_link(j, &fs[i], &in->rules);
		rebase(&base->fatal, pci->aer_fatal);
		rebase(&base->nonfatal, pci->aer_nonfatal);
		rebase(&base->correctable, pci->aer_correctable);
		judge_aer(j, &fs[i], base, &in->rules);
	}
	free(fs);
	return 0;
}

static int
inspect_network(struct inspect *in, struct judge *j)
{
	struct facts_nic *nics = NULL;
	struct facts_ib *ib = NULL;
	size_t nib = 0;
	int rc;

	rc = facts_gather_nics(in->hw, in->nics, in->nnics, &nics);
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < in->nnics; i++)
		judge_nic_link(j, &nics[i]);
	free(nics);

	/* Every device present, for the counters; only the required ones
	 * are judged by their state. */
	rc = facts_gather_ib(in->hw, in->ib_devices, in->nib_devices, true, &ib, &nib);
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < nib; i++)
		if (ib[i].listed)
			judge_ib_state(j, &ib[i]);
	for (size_t w = 0; w < in->nports; w++) {
		struct watched_port *p = &in->ports[w];

		/* A port that went away says so through its state, if it is required. */
		for (size_t i = 0; i < nib; i++) {
			if (strcmp(ib[i].name, p->dev) != 0)
				continue;
			for (size_t k = 0; k < ib[i].nports; k++) {
				const struct hwmon_ib_port *now = &ib[i].ports[k];

				if (now->port != p->base.port)
					continue;
				rebase(&p->base.link_downed, now->link_downed);
				rebase(&p->base.symbol_error, now->symbol_error);
				judge_ib_counters(j, p->dev, now, &p->base);
			}
		}
	}
	facts_ib_free(ib, nib);
	return 0;
}

static int
inspect_memory(struct inspect *in, struct judge *j)
{
	struct facts_memory m;
	int rc;

	if (in->rules.mem_min_free_mb <= 0)
		return 0;
	rc = facts_gather_memory(in->hw, false, &m);
	if (rc < 0)
		return rc;
	judge_memory(j, &m, &in->rules);
	free(m.nodes);
	return 0;
}

static int
inspect_ckpt(struct inspect *in, struct judge *j)
{
	const char *path = in->ckpt.path;
	struct facts_path f;
	int rc;

	rc = facts_probe_dirs(&path, NULL, 1, in->rules.timeout_s, &f);
	if (rc < 0)
		return rc;
	judge_paths(j, &in->ckpt, &f, 1, &in->rules);
	return 0;
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
	struct facts_ib *ib = NULL;
	size_t nib = 0, total = 0;
	int rc;

	rc = facts_gather_ib(in->hw, NULL, 0, true, &ib, &nib);
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < nib; i++)
		total += ib[i].nports;
	if (total > 0) {
		in->ports = calloc(total, sizeof(*in->ports));
		if (!in->ports) {
			rc = -ENOMEM;
			goto out;
		}
	}
	for (size_t i = 0; i < nib; i++) {
		for (size_t k = 0; k < ib[i].nports; k++) {
			struct watched_port *p = &in->ports[in->nports];

			p->dev = strdup(ib[i].name);
			if (!p->dev) {
				rc = -ENOMEM;
				goto out;
			}
			p->base = ib[i].ports[k];
			in->nports++;
		}
	}
out:
	facts_ib_free(ib, nib);
	return rc;
}

/* Each slot, and its AER counts now as the baseline. */
static int
baseline_slots(struct inspect *in, const struct slot *slots, size_t nslots)
{
	struct facts_slot *fs = NULL;
	int rc;

	if (nslots == 0)
		return 0;
	in->slots = calloc(nslots, sizeof(*in->slots));
	in->aer = calloc(nslots, sizeof(*in->aer));
	if (!in->slots || !in->aer)
		return -ENOMEM;
	for (size_t i = 0; i < nslots; i++) {
		in->slots[i].index = slots[i].index;
		in->slots[i].vendor = slots[i].vendor;
		memcpy(in->slots[i].model, slots[i].model, sizeof(in->slots[i].model));
		in->slots[i].model[sizeof(in->slots[i].model) - 1] = '\0';
		memcpy(in->slots[i].pci_bus_id, slots[i].pci_bus_id, sizeof(in->slots[i].pci_bus_id));
		in->slots[i].pci_bus_id[sizeof(in->slots[i].pci_bus_id) - 1] = '\0';
	}
	in->nslots = nslots;
	rc = facts_gather_slots(in->hw, in->slots, nslots, &fs);
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < nslots; i++) {
		/* A slot missing already fails its first run; no baseline then. */
		bool ok = fs[i].rc == 0;

		in->aer[i].fatal = ok ? fs[i].pci.aer_fatal : -1;
		in->aer[i].nonfatal = ok ? fs[i].pci.aer_nonfatal : -1;
		in->aer[i].correctable = ok ? fs[i].pci.aer_correctable : -1;
	}
	free(fs);
	return 0;
}

/* The rules of the inspection: the pre-check's, but what the training
 * itself causes (memory pressure) and what only says the agent could not
 * look (no fork) are warnings. */
static void
rules_init(struct inspect *in, const struct config *cfg)
{
	judge_rules_init(&in->rules, cfg);
	in->rules.mem_low = VERDICT_WARN;
	in->rules.probe_trouble = VERDICT_WARN;
	in->rules.timeout_s = cfg->check_timeout_s > 0 && cfg->check_timeout_s < CKPT_TIMEOUT_MAX_S
	                              ? cfg->check_timeout_s
	                              : CKPT_TIMEOUT_MAX_S;
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
	rules_init(in, cfg);
	rc = copy_list(cfg->nics, cfg->nnics, &in->nics, &in->nnics);
	if (rc < 0)
		goto out;
	rc = copy_list(cfg->ib_devices, cfg->nib_devices, &in->ib_devices, &in->nib_devices);
	if (rc < 0)
		goto out;
	if (ckpt_dir) {
		in->ckpt.path = strdup(ckpt_dir);
		if (!in->ckpt.path) {
			rc = -ENOMEM;
			goto out;
		}
	}
	in->ckpt.min_free_mb = ckpt_min_free_mb > 0 ? ckpt_min_free_mb : cfg->ckpt_min_free_mb;
	rc = baseline_slots(in, slots, nslots);
	if (rc < 0)
		goto out;
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
inspect_run(struct inspect *in, struct finding **findings, size_t *n)
{
	struct finding_list fl = { 0 };
	struct judge j;
	int rc;

	if (!findings || !n)
		return -EINVAL;
	*findings = NULL;
	*n = 0;
	if (!in)
		return -EINVAL;
	judge_to_list(&j, &fl);
	rc = inspect_slots(in, &j);
	if (rc == 0)
		rc = inspect_network(in, &j);
	if (rc == 0)
		rc = inspect_memory(in, &j);
	if (rc == 0 && in->ckpt.path)
		rc = inspect_ckpt(in, &j);
	if (rc < 0) {
		free(fl.v);
		return rc;
	}
	return finding_list_end(&fl, findings, n);
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
	free(in->aer);
	for (size_t i = 0; i < in->nports; i++)
		free(in->ports[i].dev);
	free(in->ports);
	free(in->ckpt.path);
	free(in);
}
