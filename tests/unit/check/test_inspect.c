/*
 * test_inspect.c - the periodic inspection against a sysfs tree built
 * under mkdtemp(): a healthy tree first, then one fault at a time written
 * into it between runs, and the exact findings each gives.
 */
#include "autoconf.h"

#include "../vigil_test.h"
#include "../fstree.h"
#include "../proc.h"
#include "../scratch.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>

#include "check/check.h"
#include "check/inspect.h"
#include "conf/config.h"
#include "sys/topo.h"

#define BUS0 "0000:3b:00.0"
#define BUS1 "0000:5e:00.0"
#define DEV0 "sys/devices/pci0000:3a/" BUS0
#define DEV1 "sys/devices/pci0000:5d/" BUS1
#define IB0 "sys/class/infiniband/mlx5_0/ports/1"
#define IB1 "sys/class/infiniband/mlx5_1/ports/1"

struct fix {
	char root[512];          /* the fake sysfs root */
	char ckpt[600];          /* a real directory: the checkpoint directory */
	struct config cfg;
	struct slot slots[2];
	long long ckpt_min_mb;
	struct inspect *in;
	struct finding *f;
	size_t n;
};

/* --- tree building ------------------------------------------------------ */

/* One AER file: a few named counters and the kernel's total line. */
static void
put_aer(const char *root, const char *dev, const char *file, const char *total_key,
        long long total)
{
	char rel[256], text[256];

	snprintf(rel, sizeof(rel), "%s/%s", dev, file);
	snprintf(text, sizeof(text), "RxErr 0\nBadTLP %lld\n%s %lld\n", total, total_key, total);
	put(root, rel, text);
}

static void
make_pci(const char *root, const char *dev, const char *bus)
{
	put_pci_link(root, dev, bus);
	put_aer(root, dev, "aer_dev_correctable", "TOTAL_ERR_COR", 0);
	put_aer(root, dev, "aer_dev_nonfatal", "TOTAL_ERR_NONFATAL", 0);
	put_aer(root, dev, "aer_dev_fatal", "TOTAL_ERR_FATAL", 0);
}

static void
put_port(const char *root, const char *port, long long link_downed, long long symbol_error)
{
	char rel[256], v[32];

	snprintf(rel, sizeof(rel), "%s/state", port);
	put(root, rel, "4: ACTIVE\n");
	snprintf(rel, sizeof(rel), "%s/phys_state", port);
	put(root, rel, "5: LinkUp\n");
	snprintf(rel, sizeof(rel), "%s/rate", port);
	put(root, rel, "200 Gb/sec (4X HDR)\n");
	snprintf(rel, sizeof(rel), "%s/counters/link_downed", port);
	snprintf(v, sizeof(v), "%lld\n", link_downed);
	put(root, rel, v);
	snprintf(rel, sizeof(rel), "%s/counters/symbol_error", port);
	snprintf(v, sizeof(v), "%lld\n", symbol_error);
	put(root, rel, v);
}

static void
put_meminfo(const char *root, int node, long long total_kb, long long free_kb)
{
	char rel[128], text[256];

	snprintf(rel, sizeof(rel), "sys/devices/system/node/node%d/meminfo", node);
	snprintf(text, sizeof(text),
	         "Node %d MemTotal:       %lld kB\nNode %d MemFree:        %lld kB\n"
	         "Node %d MemUsed:        %lld kB\n",
	         node, total_kb, node, free_kb, node, total_kb - free_kb);
	put(root, rel, text);
}

/*
 * Two GPUs, eth0 required and up, mlx5_0 required and mlx5_1 not (its
 * counters are still watched), two NUMA nodes with 64 GB free each.
 * Counters start above zero, as on a node that has been up a while.
 */
static void
build_healthy(const char *root)
{
	make_pci(root, DEV0, BUS0);
	make_pci(root, DEV1, BUS1);
	put_meminfo(root, 0, 131072000, 65536000);
	put_meminfo(root, 1, 131072000, 65536000);
	put(root, "proc/meminfo", "MemTotal:       262144000 kB\nMemFree:        131072000 kB\n");
	put(root, "sys/class/net/eth0/operstate", "up\n");
	put(root, "sys/class/net/eth0/carrier", "1\n");
	put(root, "sys/class/net/eth0/speed", "100000\n");
	put_port(root, IB0, 2, 0);
	put_port(root, IB1, 0, 5);
}

static void
set_slot(struct slot *s, int index, const char *bus)
{
	memset(s, 0, sizeof(*s));
	s->index = index;
	s->vendor = SLOT_VENDOR_NVIDIA;
	snprintf(s->pci_bus_id, sizeof(s->pci_bus_id), "%.15s", bus);
}

static int
setup(void **state)
{
	struct fix *f = calloc(1, sizeof(*f));
	struct config *cfg;

	if (!f)
		return -1;
	if (make_scratch_dir(f->root, sizeof(f->root), "inspect") < 0) {
		free(f);
		return -1;
	}
	build_healthy(f->root);
	snprintf(f->ckpt, sizeof(f->ckpt), "%s/ckpt", f->root);
	if (mkdir(f->ckpt, 0755) < 0)
		return -1;
	f->ckpt_min_mb = 1;

	cfg = &f->cfg;
	config_init(cfg);
	free(cfg->sysfs_root);
	cfg->sysfs_root = strdup(f->root);
	if (!cfg->sysfs_root || config_list_add(&cfg->nics, &cfg->nnics, "eth0") < 0 ||
	    config_list_add(&cfg->ib_devices, &cfg->nib_devices, "mlx5_0") < 0)
		return -1;
	cfg->mem_min_free_mb = 1024;
	cfg->check_timeout_s = 5;
	set_slot(&f->slots[0], 0, BUS0);
	set_slot(&f->slots[1], 1, BUS1);
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fix *f = *state;

	free(f->f);
	inspect_free(f->in);
	config_free(&f->cfg);
	rm_rf(f->root);
	free(f);
	return 0;
}

/* --- helpers ------------------------------------------------------------ */

/* Take the baseline now, from the tree and configuration as they are. */
static void
start(struct fix *f)
{
	inspect_free(f->in);
	f->in = NULL;
	assert_int_equal(inspect_new(&f->cfg, f->slots, 2, f->ckpt, f->ckpt_min_mb, &f->in), 0);
	assert_non_null(f->in);
}

static void
run(struct fix *f)
{
	free(f->f);
	f->f = NULL;
	f->n = 99;
	assert_int_equal(inspect_run(f->in, &f->f, &f->n), 0);
	assert_true(f->n == 0 ? f->f == NULL : f->f != NULL);
	for (size_t i = 0; i < f->n; i++) {
		assert_null(strchr(f->f[i].evidence, '\n'));
		assert_true(f->f[i].verdict == VERDICT_WARN || f->f[i].verdict == VERDICT_FAIL);
	}
}

static void
dump(const struct fix *f)
{
	for (size_t i = 0; i < f->n; i++)
		print_message("  finding %zu: %s %s %s \"%s\"\n", i, f->f[i].what, f->f[i].device,
		              verdict_name(f->f[i].verdict), f->f[i].evidence);
}

/* Run and expect nothing. */
static void
expect_none(struct fix *f)
{
	run(f);
	if (f->n != 0) {
		dump(f);
		fail_msg("expected no findings, got %zu", f->n);
	}
}

/* Finding I of exactly N is WHAT/DEVICE/V with EVIDENCE. */
static void
expect_at(struct fix *f, size_t n, size_t i, const char *what, const char *device,
          enum verdict v, const char *evidence)
{
	const struct finding *x;

	if (f->n != n) {
		dump(f);
		fail_msg("expected %zu findings, got %zu", n, f->n);
	}
	x = &f->f[i];
	if (strcmp(x->what, what) != 0 || strcmp(x->device, device) != 0 || x->verdict != v ||
	    strcmp(x->evidence, evidence) != 0) {
		dump(f);
		fail_msg("finding %zu: wanted %s %s %s \"%s\"", i, what, device, verdict_name(v),
		         evidence);
	}
}

/* Run and expect exactly one finding. */
static void
expect_one(struct fix *f, const char *what, const char *device, enum verdict v,
           const char *evidence)
{
	run(f);
	expect_at(f, 1, 0, what, device, v, evidence);
}

/* --- healthy ------------------------------------------------------------ */

static void
test_healthy(void **state)
{
	struct fix *f = *state;

	start(f);
	expect_none(f);
	expect_none(f);  /* the baseline does not move by itself */
}

static void
test_bad_args(void **state)
{
	struct fix *f = *state;
	static char sentinel;  /* not NULL: shows that a failure clears *out */
	struct inspect *in = (struct inspect *)&sentinel;
	char missing[700];

	snprintf(missing, sizeof(missing), "%s/nowhere", f->root);
	free(f->cfg.sysfs_root);
	f->cfg.sysfs_root = strdup(missing);
	assert_non_null(f->cfg.sysfs_root);
	assert_int_equal(inspect_new(&f->cfg, f->slots, 2, NULL, 0, &in), -ENOENT);
	assert_null(in);
	in = (struct inspect *)&sentinel;
	assert_int_equal(inspect_new(&f->cfg, NULL, 2, NULL, 0, &in), -EINVAL);
	assert_null(in);
	assert_int_equal(inspect_new(NULL, NULL, 0, NULL, 0, &in), -EINVAL);
	assert_int_equal(inspect_new(&f->cfg, NULL, 0, NULL, 0, NULL), -EINVAL);
	inspect_free(NULL);
}

/* The configuration is copied: it may be freed while inspecting. */
static void
test_config_copied(void **state)
{
	struct fix *f = *state;

	start(f);
	config_free(&f->cfg);
	config_init(&f->cfg);
	put(f->root, "sys/class/net/eth0/operstate", "down\n");
	expect_one(f, "nic", "eth0", VERDICT_FAIL, "eth0 is down (operstate down, carrier)");
}

/* --- network ------------------------------------------------------------ */

static void
test_nic_down(void **state)
{
	struct fix *f = *state;

	start(f);
	put(f->root, "sys/class/net/eth0/operstate", "down\n");
	put(f->root, "sys/class/net/eth0/carrier", "0\n");
	expect_one(f, "nic", "eth0", VERDICT_FAIL, "eth0 is down (operstate down, no carrier)");
	/* a down interface's carrier cannot be read */
	rm(f->root, "sys/class/net/eth0/carrier");
	expect_one(f, "nic", "eth0", VERDICT_FAIL, "eth0 is down (operstate down, no carrier)");
	put(f->root, "sys/class/net/eth0/operstate", "up\n");
	put(f->root, "sys/class/net/eth0/carrier", "1\n");
	expect_none(f);
}

static void
test_nic_no_carrier(void **state)
{
	struct fix *f = *state;

	start(f);
	put(f->root, "sys/class/net/eth0/carrier", "0\n");
	expect_one(f, "nic", "eth0", VERDICT_FAIL, "eth0 has no carrier (operstate up)");
	/* drivers without operstate support: "unknown" with carrier is up */
	put(f->root, "sys/class/net/eth0/operstate", "unknown\n");
	expect_one(f, "nic", "eth0", VERDICT_FAIL, "eth0 is down (operstate unknown, no carrier)");
	put(f->root, "sys/class/net/eth0/carrier", "1\n");
	expect_none(f);
}

static void
test_nic_gone(void **state)
{
	struct fix *f = *state;

	start(f);
	rm(f->root, "sys/class/net/eth0");
	expect_one(f, "nic", "eth0", VERDICT_FAIL, "eth0 is missing");
}

static void
test_ib_down(void **state)
{
	struct fix *f = *state;

	start(f);
	put(f->root, IB0 "/state", "1: DOWN\n");
	put(f->root, IB0 "/phys_state", "3: Disabled\n");
	expect_one(f, "ib", "mlx5_0/1", VERDICT_FAIL, "mlx5_0 port 1 is not active (state DOWN, phys_state Disabled)");
	put(f->root, IB0 "/state", "2: INIT\n");
	put(f->root, IB0 "/phys_state", "5: LinkUp\n");
	expect_one(f, "ib", "mlx5_0/1", VERDICT_FAIL, "mlx5_0 port 1 is not active (state INIT, phys_state LinkUp)");
	put(f->root, IB0 "/state", "4: ACTIVE\n");
	expect_none(f);
	/* a port of a device nobody requires: not judged by its state */
	put(f->root, IB1 "/state", "1: DOWN\n");
	expect_none(f);
	/* the required device vanishing */
	rm(f->root, "sys/class/infiniband/mlx5_0");
	run(f);
	expect_at(f, 1, 0, "ib", "mlx5_0", VERDICT_FAIL, "InfiniBand device mlx5_0 is missing");
}

static void
test_link_downed(void **state)
{
	struct fix *f = *state;

	start(f);
	put(f->root, IB0 "/counters/link_downed", "2\n");  /* rewritten, unchanged */
	expect_none(f);
	put(f->root, IB0 "/counters/link_downed", "4\n");
	expect_one(f, "ib", "mlx5_0/1", VERDICT_FAIL, "mlx5_0 port 1 link went down 2 more times (link_downed 2 -> 4)");
	/* compared with the baseline: still there on the next run */
	expect_one(f, "ib", "mlx5_0/1", VERDICT_FAIL, "mlx5_0 port 1 link went down 2 more times (link_downed 2 -> 4)");
	/* any port present at the baseline, required or not */
	put(f->root, IB0 "/counters/link_downed", "2\n");
	put(f->root, IB1 "/counters/link_downed", "1\n");
	expect_one(f, "ib", "mlx5_1/1", VERDICT_FAIL, "mlx5_1 port 1 link went down 1 more time (link_downed 0 -> 1)");
}

static void
test_symbol_error(void **state)
{
	struct fix *f = *state;

	start(f);
	put(f->root, IB1 "/counters/symbol_error", "12\n");
	expect_one(f, "ib", "mlx5_1/1", VERDICT_WARN, "mlx5_1 port 1 has 7 new symbol errors (symbol_error 5 -> 12)");
	put(f->root, IB0 "/counters/symbol_error", "1\n");
	run(f);
	expect_at(f, 2, 0, "ib", "mlx5_0/1", VERDICT_WARN, "mlx5_0 port 1 has 1 new symbol error (symbol_error 0 -> 1)");
	expect_at(f, 2, 1, "ib", "mlx5_1/1", VERDICT_WARN, "mlx5_1 port 1 has 7 new symbol errors (symbol_error 5 -> 12)");
}

/* A port that appears after the baseline is not watched. */
static void
test_ib_port_added_later(void **state)
{
	struct fix *f = *state;

	start(f);
	put_port(f->root, "sys/class/infiniband/mlx5_2/ports/1", 0, 0);
	expect_none(f);
	put(f->root, "sys/class/infiniband/mlx5_2/ports/1/counters/link_downed", "3\n");
	expect_none(f);
}

/* --- slots -------------------------------------------------------------- */

static void
test_aer(void **state)
{
	struct fix *f = *state;

	/* errors from before the training are the baseline, not news */
	put_aer(f->root, DEV0, "aer_dev_correctable", "TOTAL_ERR_COR", 100);
	put_aer(f->root, DEV0, "aer_dev_fatal", "TOTAL_ERR_FATAL", 1);
	f->cfg.aer_correctable_max = 10;
	start(f);
	expect_none(f);

	put_aer(f->root, DEV0, "aer_dev_fatal", "TOTAL_ERR_FATAL", 3);
	expect_one(f, "aer", BUS0, VERDICT_FAIL, "slot 0 (" BUS0 ") has 2 new fatal PCIe AER errors (1 -> 3)");
	put_aer(f->root, DEV0, "aer_dev_fatal", "TOTAL_ERR_FATAL", 1);

	put_aer(f->root, DEV1, "aer_dev_nonfatal", "TOTAL_ERR_NONFATAL", 1);
	expect_one(f, "aer", BUS1, VERDICT_WARN,
	           "slot 1 (" BUS1 ") has 1 new non-fatal PCIe AER error (0 -> 1)");
	put_aer(f->root, DEV1, "aer_dev_nonfatal", "TOTAL_ERR_NONFATAL", 0);

	/* correctable: only more than aer_correctable_max since the baseline */
	put_aer(f->root, DEV0, "aer_dev_correctable", "TOTAL_ERR_COR", 110);
	expect_none(f);
	put_aer(f->root, DEV0, "aer_dev_correctable", "TOTAL_ERR_COR", 111);
	expect_one(f, "aer", BUS0, VERDICT_WARN,
	           "slot 0 (" BUS0 ") has 11 new correctable PCIe AER errors (100 -> 111, limit 10)");
}

static void
test_aer_correctable_off(void **state)
{
	struct fix *f = *state;

	assert_int_equal(f->cfg.aer_correctable_max, -1);  /* the default */
	start(f);
	put_aer(f->root, DEV0, "aer_dev_correctable", "TOTAL_ERR_COR", 100000);
	expect_none(f);
}

/* Several at once, in the documented order. */
static void
test_aer_all_risen(void **state)
{
	struct fix *f = *state;

	f->cfg.aer_correctable_max = 0;
	start(f);
	put_aer(f->root, DEV1, "aer_dev_correctable", "TOTAL_ERR_COR", 1);
	put_aer(f->root, DEV1, "aer_dev_nonfatal", "TOTAL_ERR_NONFATAL", 2);
	put_aer(f->root, DEV1, "aer_dev_fatal", "TOTAL_ERR_FATAL", 3);
	run(f);
	expect_at(f, 3, 0, "aer", BUS1, VERDICT_FAIL, "slot 1 (" BUS1 ") has 3 new fatal PCIe AER errors (0 -> 3)");
	expect_at(f, 3, 1, "aer", BUS1, VERDICT_WARN,
	          "slot 1 (" BUS1 ") has 2 new non-fatal PCIe AER errors (0 -> 2)");
	expect_at(f, 3, 2, "aer", BUS1, VERDICT_WARN,
	          "slot 1 (" BUS1 ") has 1 new correctable PCIe AER error (0 -> 1, limit 0)");
}

static void
test_slot_gone(void **state)
{
	struct fix *f = *state;

	start(f);
	rm(f->root, "sys/bus/pci/devices/" BUS1);
	expect_one(f, "slot", BUS1, VERDICT_FAIL, "slot 1 (" BUS1 ") is missing from the PCI bus");
	/* the device removed but its bus link left dangling: gone as well */
	rm(f->root, DEV0);
	run(f);
	expect_at(f, 2, 0, "slot", BUS0, VERDICT_FAIL, "slot 0 (" BUS0 ") is missing from the PCI bus");
	expect_at(f, 2, 1, "slot", BUS1, VERDICT_FAIL, "slot 1 (" BUS1 ") is missing from the PCI bus");
}

static void
test_link_degraded(void **state)
{
	struct fix *f = *state;

	start(f);
	put(f->root, DEV0 "/current_link_width", "8\n");
	expect_one(f, "pcie", BUS0, VERDICT_WARN, "slot 0 (" BUS0 ") PCIe link degraded: x8 of x16");
	put(f->root, DEV0 "/current_link_speed", "8.0 GT/s PCIe\n");
	expect_one(f, "pcie", BUS0, VERDICT_WARN,
	           "slot 0 (" BUS0 ") PCIe link degraded: 8 GT/s of 16 GT/s, x8 of x16");

	f->cfg.pcie_degraded = VERDICT_FAIL;
	start(f);
	expect_one(f, "pcie", BUS0, VERDICT_FAIL,
	           "slot 0 (" BUS0 ") PCIe link degraded: 8 GT/s of 16 GT/s, x8 of x16");
	f->cfg.pcie_degraded = VERDICT_PASS;
	start(f);
	expect_none(f);

	/* unknown values are not a degradation */
	f->cfg.pcie_degraded = VERDICT_FAIL;
	start(f);
	put(f->root, DEV0 "/current_link_speed", "Unknown\n");
	put(f->root, DEV0 "/current_link_width", "garbage\n");
	expect_none(f);
}

/* --- memory ------------------------------------------------------------- */

static void
test_memory(void **state)
{
	struct fix *f = *state;

	start(f);
	put_meminfo(f->root, 1, 131072000, 12 * 1024 + 512);
	expect_one(f, "memory", "node1", VERDICT_WARN, "NUMA node 1 has 12 MB free, below 1024 MB");
	/* memoryless nodes have nothing to free */
	put_meminfo(f->root, 1, 131072000, 65536000);
	put_meminfo(f->root, 2, 0, 0);
	expect_none(f);
	/* off when no minimum is set */
	f->cfg.mem_min_free_mb = 0;
	put_meminfo(f->root, 0, 131072000, 0);
	start(f);
	expect_none(f);
}

/* Without NUMA in sysfs, the whole machine from proc/meminfo. */
static void
test_memory_no_numa(void **state)
{
	struct fix *f = *state;

	rm(f->root, "sys/devices/system/node");
	put(f->root, "proc/meminfo", "MemTotal:       262144000 kB\nMemFree:        2048 kB\n");
	start(f);
	expect_one(f, "memory", "node0", VERDICT_WARN, "NUMA node 0 has 2 MB free, below 1024 MB");
	rm(f->root, "proc/meminfo");
	run(f);
	assert_int_equal(f->n, 1);
	assert_string_equal(f->f[0].what, "memory");
	assert_int_equal(f->f[0].verdict, VERDICT_WARN);
	assert_non_null(strstr(f->f[0].evidence, "cannot read free memory"));
}

/* --- checkpoint directory ----------------------------------------------- */

/* The evidence for the checkpoint directory: "<dir> WORDS". */
static const char *
ckpt_says(const struct fix *f, const char *words)
{
	static char buf[700];

	snprintf(buf, sizeof(buf), "%s %s", f->ckpt, words);
	return buf;
}

static void
test_ckpt_missing(void **state)
{
	struct fix *f = *state;

	start(f);
	assert_int_equal(rmdir(f->ckpt), 0);
	expect_one(f, "storage", f->ckpt, VERDICT_FAIL, ckpt_says(f, "is missing"));
	/* a file where the directory was */
	put(f->root, "ckpt", "x\n");
	expect_one(f, "storage", f->ckpt, VERDICT_FAIL, ckpt_says(f, "is not a directory"));
}

static void
test_ckpt_space(void **state)
{
	struct fix *f = *state;
	long long free_mb = -1, need = -1, before, after;
	struct statvfs sv;
	char tail[8];

	/* more than the filesystem could ever have free */
	f->ckpt_min_mb = 1LL << 40;
	assert_int_equal(statvfs(f->ckpt, &sv), 0);
	before = (long long)((double)sv.f_bavail * (double)sv.f_frsize / (1024.0 * 1024.0));
	start(f);
	run(f);
	assert_int_equal(statvfs(f->ckpt, &sv), 0);
	after = (long long)((double)sv.f_bavail * (double)sv.f_frsize / (1024.0 * 1024.0));
	assert_int_equal(f->n, 1);
	assert_string_equal(f->f[0].what, "storage");
	assert_string_equal(f->f[0].device, f->ckpt);
	assert_int_equal(f->f[0].verdict, VERDICT_FAIL);
	if (strncmp(f->f[0].evidence, ckpt_says(f, "has "), strlen(ckpt_says(f, "has "))) != 0 ||
	    sscanf(f->f[0].evidence + strlen(ckpt_says(f, "has ")), "%lld MB free, below %lld %7s",
	           &free_mb, &need, tail) != 3)
		fail_msg("evidence \"%s\"", f->f[0].evidence);
	assert_string_equal(tail, "MB");
	assert_int_equal(need, 1LL << 40);
	/* what statvfs said around the run, give or take other writers */
	assert_true(free_mb >= (before < after ? before : after) - 64);
	assert_true(free_mb <= (before > after ? before : after) + 64);

	/* and a minimum below what is free is fine */
	f->ckpt_min_mb = 1;
	start(f);
	expect_none(f);
}

/*
 * Opening a FIFO for reading blocks until a writer comes, as a dead NFS
 * server would: the probe is cut off after min(check_timeout_s, 2 s).
 */
static void
test_ckpt_hung(void **state)
{
	struct fix *f = *state;
	double t0, elapsed;

	assert_int_equal(rmdir(f->ckpt), 0);
	assert_int_equal(mkfifo(f->ckpt, 0600), 0);
	f->cfg.check_timeout_s = 1;
	start(f);
	t0 = now();
	expect_one(f, "storage", f->ckpt, VERDICT_FAIL, ckpt_says(f, "timed out after 1 s"));
	elapsed = now() - t0;
	assert_true(elapsed >= 0.9);
	assert_true(elapsed < 2.0);

	/* a long check timeout is capped for the inspection */
	f->cfg.check_timeout_s = 30;
	start(f);
	t0 = now();
	expect_one(f, "storage", f->ckpt, VERDICT_FAIL, ckpt_says(f, "timed out after 2 s"));
	elapsed = now() - t0;
	assert_true(elapsed >= 1.9);
	assert_true(elapsed < 3.0);
}

/* A long path keeps its end, which tells one run's directory from another. */
static void
test_ckpt_long_path(void **state)
{
	struct fix *f = *state;
	char dir[700];
	size_t len;

	const char *ev, *tail;

	snprintf(dir, sizeof(dir), "%s/%s", f->root,
	         "a-checkpoint-directory-with-a-rather-long-name/and-a-run-kept-in-a-"
	         "project-directory-of-its-own/step-000123");
	f->ckpt_min_mb = 0;
	inspect_free(f->in);
	assert_int_equal(inspect_new(&f->cfg, f->slots, 2, dir, 0, &f->in), 0);
	run(f);
	assert_int_equal(f->n, 1);
	/* The evidence too: the end of the path, then what is wrong. */
	ev = f->f[0].evidence;
	assert_memory_equal(ev, "...", 3);
	tail = strstr(ev, " is missing");
	assert_non_null(tail);
	assert_string_equal(tail, " is missing");
	assert_memory_equal(ev + 3, dir + strlen(dir) - (size_t)(tail - ev - 3),
	                    (size_t)(tail - ev - 3));
	assert_true(tail - ev - 3 >= 64);
	len = strlen(f->f[0].device);
	assert_int_equal(len, sizeof(f->f[0].device) - 1);
	assert_memory_equal(f->f[0].device, "...", 3);
	assert_string_equal(f->f[0].device + 3, dir + strlen(dir) - (len - 3));
}

/*
 * The checkpoint directory's minimum comes from the configuration
 * ("check.storage.ckpt_min_free_mb"): `vigil run --ckpt-dir` passes 0, which
 * once meant that the space was never judged.
 */
static void
test_ckpt_min_from_config(void **state)
{
	static const char doc[] =
		"{\"check\": {\"storage\": {\"ckpt_min_free_mb\": 1099511627776}}}";
	static const char bad[] = "{\"check\": {\"storage\": {\"ckpt_min_free_mb\": -1}}}";
	struct fix *f = *state;
	char err[256];

	assert_int_equal(config_load_buffer(&f->cfg, doc, strlen(doc), "t.json", err, sizeof(err)), 0);
	assert_int_equal(f->cfg.ckpt_min_free_mb, 1LL << 40);
	assert_int_equal(inspect_new(&f->cfg, f->slots, 2, f->ckpt, 0, &f->in), 0);
	run(f);
	assert_int_equal(f->n, 1);
	assert_string_equal(f->f[0].what, "storage");
	assert_int_equal(f->f[0].verdict, VERDICT_FAIL);
	assert_non_null(strstr(f->f[0].evidence, " MB free, below 1099511627776 MB"));
	/* A positive minimum given to inspect_new() overrides it. */
	f->ckpt_min_mb = 1;
	start(f);
	expect_none(f);
	/* Out of range, or another type: refused with the key's name. */
	assert_int_equal(config_load_buffer(&f->cfg, bad, strlen(bad), "t.json", err, sizeof(err)),
	                 -EINVAL);
	assert_string_equal(err, "t.json: check.storage.ckpt_min_free_mb: expected a non-negative "
	                         "integer, got -1");
}

/*
 * The pre-check and the inspection judge with the same rules, and say
 * the same fault in the same words.
 */
static void
test_same_words(void **state)
{
	struct fix *f = *state;
	struct check_report rep;
	struct check_ctx ctx = { .cfg = &f->cfg, .slots = f->slots, .nslots = 2, .all = true };

	f->cfg.driver_required = false;  /* this tree binds no driver */
	start(f);
	put(f->root, "sys/class/net/eth0/operstate", "down\n");
	rm(f->root, "sys/class/net/eth0/carrier");
	rm(f->root, "sys/bus/pci/devices/" BUS1);
	put(f->root, IB0 "/state", "1: DOWN\n");
	run(f);
	assert_int_equal(check_run(&ctx, &rep), 0);
	assert_int_equal(f->n, 3);
	assert_string_equal(rep.results[0].name, "slots");
	assert_string_equal(rep.results[0].reason, f->f[0].evidence);
	assert_string_equal(f->f[0].evidence, "slot 1 (" BUS1 ") is missing from the PCI bus");
	assert_string_equal(rep.results[5].name, "nics");
	assert_non_null(strstr(rep.results[5].reason, f->f[1].evidence));
	assert_string_equal(f->f[1].evidence, "eth0 is down (operstate down, no carrier)");
	{
		const cJSON *p;
		bool seen = false;

		cJSON_ArrayForEach(p, cJSON_GetObjectItem(rep.results[5].details, "problems"))
			seen |= strcmp(p->valuestring, f->f[2].evidence) == 0;
		assert_true(seen);
	}
	check_report_free(&rep);
}

/* Without a checkpoint directory nothing is probed. */
static void
test_ckpt_none(void **state)
{
	struct fix *f = *state;

	assert_int_equal(rmdir(f->ckpt), 0);
	assert_int_equal(inspect_new(&f->cfg, f->slots, 2, NULL, 1 << 20, &f->in), 0);
	expect_none(f);
}

/* --- bad input ---------------------------------------------------------- */

static void
test_garbage(void **state)
{
	struct fix *f = *state;

	start(f);
	put(f->root, IB0 "/counters/link_downed", "garbage\n");
	put(f->root, IB0 "/counters/symbol_error", "-7\n");
	put(f->root, IB1 "/counters/link_downed", "99999999999999999999999\n");
	put(f->root, IB1 "/counters/symbol_error", "");
	put(f->root, DEV0 "/aer_dev_fatal", "TOTAL_ERR_FATAL lots\n");
	put(f->root, DEV0 "/aer_dev_nonfatal", "\n\n");
	put(f->root, DEV0 "/aer_dev_correctable", "\x01\x02\x03");
	expect_none(f);
	/* back to the baseline values: still nothing */
	put_port(f->root, IB0, 2, 0);
	put_port(f->root, IB1, 0, 5);
	put_aer(f->root, DEV0, "aer_dev_correctable", "TOTAL_ERR_COR", 0);
	put_aer(f->root, DEV0, "aer_dev_nonfatal", "TOTAL_ERR_NONFATAL", 0);
	put_aer(f->root, DEV0, "aer_dev_fatal", "TOTAL_ERR_FATAL", 0);
	expect_none(f);
	/* and a real rise after garbage is still seen */
	put(f->root, IB0 "/counters/link_downed", "3\n");
	expect_one(f, "ib", "mlx5_0/1", VERDICT_FAIL, "mlx5_0 port 1 link went down 1 more time (link_downed 2 -> 3)");
}

/* Garbage at the baseline: the first readable value becomes it. */
static void
test_garbage_at_baseline(void **state)
{
	struct fix *f = *state;

	put(f->root, IB0 "/counters/link_downed", "garbage\n");
	put(f->root, DEV1 "/aer_dev_fatal", "nonsense\n");
	start(f);
	expect_none(f);
	put(f->root, IB0 "/counters/link_downed", "7\n");
	put_aer(f->root, DEV1, "aer_dev_fatal", "TOTAL_ERR_FATAL", 4);
	expect_none(f);
	put(f->root, IB0 "/counters/link_downed", "8\n");
	put_aer(f->root, DEV1, "aer_dev_fatal", "TOTAL_ERR_FATAL", 5);
	run(f);
	expect_at(f, 2, 0, "aer", BUS1, VERDICT_FAIL, "slot 1 (" BUS1 ") has 1 new fatal PCIe AER error (4 -> 5)");
	expect_at(f, 2, 1, "ib", "mlx5_0/1", VERDICT_FAIL, "mlx5_0 port 1 link went down 1 more time (link_downed 7 -> 8)");
}

/* Cleared counters start again from the lower value. */
static void
test_counter_cleared(void **state)
{
	struct fix *f = *state;

	start(f);
	put(f->root, IB0 "/counters/link_downed", "0\n");
	expect_none(f);
	put(f->root, IB0 "/counters/link_downed", "1\n");
	expect_one(f, "ib", "mlx5_0/1", VERDICT_FAIL, "mlx5_0 port 1 link went down 1 more time (link_downed 0 -> 1)");
}

/* Many faults at once come in the documented order. */
static void
test_order(void **state)
{
	struct fix *f = *state;

	start(f);
	assert_int_equal(rmdir(f->ckpt), 0);
	put_meminfo(f->root, 0, 131072000, 0);
	put(f->root, IB1 "/counters/symbol_error", "6\n");
	put(f->root, IB0 "/state", "1: DOWN\n");
	put(f->root, "sys/class/net/eth0/carrier", "0\n");
	put_aer(f->root, DEV1, "aer_dev_fatal", "TOTAL_ERR_FATAL", 1);
	put(f->root, DEV1 "/max_link_width", "32\n");
	rm(f->root, "sys/bus/pci/devices/" BUS0);
	run(f);
	expect_at(f, 8, 0, "slot", BUS0, VERDICT_FAIL, "slot 0 (" BUS0 ") is missing from the PCI bus");
	expect_at(f, 8, 1, "pcie", BUS1, VERDICT_WARN,
	          "slot 1 (" BUS1 ") PCIe link degraded: x16 of x32");
	expect_at(f, 8, 2, "aer", BUS1, VERDICT_FAIL, "slot 1 (" BUS1 ") has 1 new fatal PCIe AER error (0 -> 1)");
	expect_at(f, 8, 3, "nic", "eth0", VERDICT_FAIL, "eth0 has no carrier (operstate up)");
	expect_at(f, 8, 4, "ib", "mlx5_0/1", VERDICT_FAIL, "mlx5_0 port 1 is not active (state DOWN, phys_state LinkUp)");
	expect_at(f, 8, 5, "ib", "mlx5_1/1", VERDICT_WARN, "mlx5_1 port 1 has 1 new symbol error (symbol_error 5 -> 6)");
	expect_at(f, 8, 6, "memory", "node0", VERDICT_WARN, "NUMA node 0 has 0 MB free, below 1024 MB");
	expect_at(f, 8, 7, "storage", f->ckpt, VERDICT_FAIL, ckpt_says(f, "is missing"));
}

/* --- the live node ------------------------------------------------------ */

static void
test_live_root(void **state)
{
	struct inspect *in = NULL;
	struct finding *fi = NULL;
	struct config cfg;
	size_t n = 99;

	(void)state;
	config_init(&cfg);
	assert_int_equal(inspect_new(&cfg, NULL, 0, NULL, 0, &in), 0);
	for (int round = 0; round < 2; round++) {
		assert_int_equal(inspect_run(in, &fi, &n), 0);
		for (size_t i = 0; i < n; i++) {
			if (fi[i].verdict != VERDICT_WARN)
				fail_msg("live node: %s %s %s \"%s\"", fi[i].what, fi[i].device,
				         verdict_name(fi[i].verdict), fi[i].evidence);
			assert_null(strchr(fi[i].evidence, '\n'));
		}
		free(fi);
		fi = NULL;
	}
	inspect_free(in);
	in = NULL;

	/* with a little asked of memory and of a real directory */
	cfg.mem_min_free_mb = 1;
	assert_int_equal(inspect_new(&cfg, NULL, 0, "/", 0, &in), 0);
	assert_int_equal(inspect_run(in, &fi, &n), 0);
	for (size_t i = 0; i < n; i++)
		if (fi[i].verdict != VERDICT_WARN)
			fail_msg("live node: %s %s %s \"%s\"", fi[i].what, fi[i].device,
			         verdict_name(fi[i].verdict), fi[i].evidence);
	free(fi);
	inspect_free(in);
	config_free(&cfg);
}

int
main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_healthy),
		T(test_bad_args),
		T(test_config_copied),
		T(test_nic_down),
		T(test_nic_no_carrier),
		T(test_nic_gone),
		T(test_ib_down),
		T(test_link_downed),
		T(test_symbol_error),
		T(test_ib_port_added_later),
		T(test_aer),
		T(test_aer_correctable_off),
		T(test_aer_all_risen),
		T(test_slot_gone),
		T(test_link_degraded),
		T(test_memory),
		T(test_memory_no_numa),
		T(test_ckpt_missing),
		T(test_ckpt_space),
		T(test_ckpt_hung),
		T(test_ckpt_long_path),
		T(test_ckpt_none),
		T(test_ckpt_min_from_config),
		T(test_same_words),
		T(test_garbage),
		T(test_garbage_at_baseline),
		T(test_counter_cleared),
		T(test_order),
		T(test_live_root),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
