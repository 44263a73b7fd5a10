/*
 * test_judge.c - the rules of the health checks from facts alone: each
 * test fills the facts a gatherer would have found, calls one judge and
 * asserts on the exact findings, with no sysfs tree, no child and no
 * configuration file.
 */
#include "autoconf.h"

#include "../vigil_test.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "check/facts.h"
#include "check/judge.h"
#include "conf/config.h"

#define BUS "0000:3b:00.0"
#define MAXF 16

struct fix {
	struct finding f[MAXF];
	size_t n;
	struct judge j;
	struct judge_rules r;
	struct config cfg;
};

static void
sink(void *arg, const struct finding *jf)
{
	struct fix *x = arg;

	assert_true(x->n < MAXF);
	assert_int_not_equal(jf->verdict, VERDICT_PASS);
	x->f[x->n++] = *jf;
}

static int
setup(void **state)
{
	struct fix *x = calloc(1, sizeof(*x));

	if (!x)
		return -1;
	x->j.sink = sink;
	x->j.arg = x;
	config_init(&x->cfg);
	judge_rules_init(&x->r, &x->cfg);
	*state = x;
	return 0;
}

static int
teardown(void **state)
{
	struct fix *x = *state;

	config_free(&x->cfg);
	free(x);
	return 0;
}

static void
reset(struct fix *x)
{
	memset(x->f, 0, sizeof(x->f));
	x->n = 0;
}

static void
dump(const struct fix *x)
{
	for (size_t i = 0; i < x->n; i++)
		print_message("  finding %zu: %s %s %s \"%s\"\n", i, x->f[i].what, x->f[i].device,
		              verdict_name(x->f[i].verdict), x->f[i].evidence);
}

/* Finding I of exactly N. */
static void
expect_at(const struct fix *x, size_t n, size_t i, const char *what, const char *device,
          enum verdict v, const char *reason)
{
	const struct finding *s = &x->f[i];

	if (x->n != n) {
		dump(x);
		fail_msg("expected %zu findings, got %zu", n, x->n);
	}
	if (strcmp(s->what, what) != 0 || strcmp(s->device, device) != 0 || s->verdict != v ||
	    strcmp(s->evidence, reason) != 0) {
		dump(x);
		fail_msg("finding %zu: wanted %s %s %s \"%s\"", i, what, device, verdict_name(v),
		         reason);
	}
}

static void
expect_one(const struct fix *x, const char *what, const char *device, enum verdict v,
           const char *reason)
{
	expect_at(x, 1, 0, what, device, v, reason);
}

static void
expect_none(const struct fix *x)
{
	if (x->n != 0) {
		dump(x);
		fail_msg("expected no findings, got %zu", x->n);
	}
}

/* A healthy slot: present, bound, full link, no AER errors. */
static struct facts_slot
good_slot(void)
{
	struct facts_slot s;

	memset(&s, 0, sizeof(s));
	s.index = 0;
	s.vendor = SLOT_VENDOR_NVIDIA;
	snprintf(s.bus_id, sizeof(s.bus_id), "%s", BUS);
	snprintf(s.pci.driver, sizeof(s.pci.driver), "nvidia");
	s.pci.cur_gts = s.pci.max_gts = 16;
	s.pci.cur_width = s.pci.max_width = 16;
	return s;
}

/* --- the reporting function --------------------------------------------- */

static void
test_say(void **state)
{
	struct fix *x = *state;
	char big[600];

	judge_say(&x->j, VERDICT_PASS, "nic", "eth0", "nothing to see");
	expect_none(x);
	/* A newline in a name cannot break the one-line promise, in the
	 * reason or in the device. */
	judge_say(&x->j, VERDICT_FAIL, "storage", "/a\nb", "%s is missing", "/a\nb\x7f");
	expect_one(x, "storage", "/a?b", VERDICT_FAIL, "/a?b? is missing");
	/* Cut at 255 bytes, never overrun. */
	reset(x);
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	judge_say(&x->j, VERDICT_WARN, "memory", NULL, "%s", big);
	assert_int_equal(x->n, 1);
	assert_int_equal(strlen(x->f[0].evidence), 255);
	assert_string_equal(x->f[0].device, "");
}

/* --- slots -------------------------------------------------------------- */

static void
test_slot_count(void **state)
{
	struct fix *x = *state;

	judge_slot_count(&x->j, 7, &x->r);  /* no expectation by default */
	expect_none(x);
	x->r.slots_expected = 8;
	judge_slot_count(&x->j, 7, &x->r);
	expect_one(x, "slot", "", VERDICT_FAIL, "found 7 slots, expected 8");
	reset(x);
	judge_slot_count(&x->j, 1, &x->r);
	expect_one(x, "slot", "", VERDICT_FAIL, "found 1 slot, expected 8");
	reset(x);
	judge_slot_count(&x->j, 9, &x->r);
	expect_none(x);
}

static void
test_slot_present(void **state)
{
	struct fix *x = *state;
	struct facts_slot s = good_slot();

	assert_true(judge_slot_present(&x->j, &s));
	expect_none(x);
	s.rc = -ENOENT;
	assert_false(judge_slot_present(&x->j, &s));
	expect_one(x, "slot", BUS, VERDICT_FAIL, "slot 0 (" BUS ") is missing from the PCI bus");
	reset(x);
	s.rc = -EACCES;
	assert_false(judge_slot_present(&x->j, &s));
	expect_one(x, "slot", BUS, VERDICT_FAIL, "slot 0 (" BUS ") cannot be read: Permission denied");
	/* A slot that is not there has no driver, link or errors to judge. */
	reset(x);
	s.pci.driver[0] = '\0';
	s.pci.aer_fatal = 3;
	judge_slot_driver(&x->j, &s, &x->r);
	judge_pcie_link(&x->j, &s, &x->r);
	judge_aer(&x->j, &s, NULL, &x->r);
	expect_none(x);
}

static void
test_slot_driver(void **state)
{
	struct fix *x = *state;
	struct facts_slot s = good_slot();

	judge_slot_driver(&x->j, &s, &x->r);
	expect_none(x);
	s.pci.driver[0] = '\0';
	judge_slot_driver(&x->j, &s, &x->r);
	expect_one(x, "slot", BUS, VERDICT_FAIL, "slot 0 (" BUS ") has no driver bound");
	reset(x);
	x->r.driver_required = false;
	judge_slot_driver(&x->j, &s, &x->r);
	expect_none(x);
}

static void
test_pcie(void **state)
{
	struct fix *x = *state;
	struct facts_slot s = good_slot();
	char buf[96];

	assert_false(judge_pcie_degraded(&s.pci, buf, sizeof(buf)));
	assert_string_equal(buf, "");
	s.pci.cur_gts = 8;
	assert_true(judge_pcie_degraded(&s.pci, buf, sizeof(buf)));
	assert_string_equal(buf, "8 GT/s of 16 GT/s");
	s.pci.cur_width = 4;
	judge_pcie_link(&x->j, &s, &x->r);
	expect_one(x, "pcie", BUS, VERDICT_WARN,
	           "slot 0 (" BUS ") PCIe link degraded: 8 GT/s of 16 GT/s, x4 of x16");
	reset(x);
	x->r.pcie_degraded = VERDICT_FAIL;
	s.pci.cur_gts = 16;
	judge_pcie_link(&x->j, &s, &x->r);
	expect_one(x, "pcie", BUS, VERDICT_FAIL, "slot 0 (" BUS ") PCIe link degraded: x4 of x16");
	reset(x);
	x->r.pcie_degraded = VERDICT_PASS;
	judge_pcie_link(&x->j, &s, &x->r);
	expect_none(x);
	/* Unknown (0) is never a degradation. */
	x->r.pcie_degraded = VERDICT_FAIL;
	s.pci.cur_width = 0;
	s.pci.max_gts = 0;
	s.pci.cur_gts = 2.5;
	judge_pcie_link(&x->j, &s, &x->r);
	expect_none(x);
}

/* The pre-check judges counts since boot. */
static void
test_aer_totals(void **state)
{
	struct fix *x = *state;
	struct facts_slot s = good_slot();

	s.pci.aer_correctable = 50;
	judge_aer(&x->j, &s, NULL, &x->r);  /* correctable: off by default */
	expect_none(x);
	x->r.aer_correctable_max = 50;
	judge_aer(&x->j, &s, NULL, &x->r);
	expect_none(x);
	x->r.aer_correctable_max = 49;
	s.pci.aer_nonfatal = 1;
	s.pci.aer_fatal = 2;
	judge_aer(&x->j, &s, NULL, &x->r);
	expect_at(x, 3, 0, "aer", BUS, VERDICT_FAIL, "slot 0 (" BUS ") has 2 fatal PCIe AER errors");
	expect_at(x, 3, 1, "aer", BUS, VERDICT_WARN,
	          "slot 0 (" BUS ") has 1 non-fatal PCIe AER error");
	expect_at(x, 3, 2, "aer", BUS, VERDICT_WARN,
	          "slot 0 (" BUS ") has 50 correctable PCIe AER errors (limit 49)");
	/* Unknown counts (no AER capability) say nothing. */
	reset(x);
	s.pci.aer_correctable = s.pci.aer_nonfatal = s.pci.aer_fatal = -1;
	judge_aer(&x->j, &s, NULL, &x->r);
	expect_none(x);
}

/* The inspection judges what was added since its baseline. */
static void
test_aer_rises(void **state)
{
	struct fix *x = *state;
	struct facts_slot s = good_slot();
	struct judge_aer base = { 100, 1, 1 };

	s.pci.aer_correctable = 100;
	s.pci.aer_nonfatal = 1;
	s.pci.aer_fatal = 1;
	x->r.aer_correctable_max = 10;
	judge_aer(&x->j, &s, &base, &x->r);
	expect_none(x);  /* errors from before are not news */
	s.pci.aer_correctable = 110;
	judge_aer(&x->j, &s, &base, &x->r);
	expect_none(x);
	s.pci.aer_correctable = 111;
	s.pci.aer_fatal = 2;
	judge_aer(&x->j, &s, &base, &x->r);
	expect_at(x, 2, 0, "aer", BUS, VERDICT_FAIL,
	          "slot 0 (" BUS ") has 1 new fatal PCIe AER error (1 -> 2)");
	expect_at(x, 2, 1, "aer", BUS, VERDICT_WARN,
	          "slot 0 (" BUS ") has 11 new correctable PCIe AER errors (100 -> 111, limit 10)");
	/* No baseline yet (unreadable then): nothing to compare with. */
	reset(x);
	base.fatal = -1;
	s.pci.aer_correctable = 100;
	judge_aer(&x->j, &s, &base, &x->r);
	expect_none(x);
}

static void
test_version_cmp(void **state)
{
	static const struct {
		const char *a, *b;
		int want;
	} cases[] = {
		{ "535.104.05", "550.54.15", -1 },
		{ "550.54.15", "550.54.15", 0 },
		{ "550.54.15", "550.54.14", 1 },
		{ "550.100", "550.54.15", 1 },      /* numbers, not text */
		{ "535.104.05", "535.104.5", 0 },   /* leading zeros */
		{ "550.54", "550.54.15", -1 },
		{ "6.3.6", "6.3.6-1", -1 },
		{ "5.10.22", "5.10.9", 1 },
		{ "1.0b", "1.0a", 1 },
		{ "99999999999999999999999.1", "99999999999999999999998.2", 1 },
		{ "", "", 0 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int got = judge_version_cmp(cases[i].a, cases[i].b);
		int back = judge_version_cmp(cases[i].b, cases[i].a);

		if (got != cases[i].want || back != -cases[i].want)
			fail_msg("%s vs %s: %d/%d, wanted %d", cases[i].a, cases[i].b, got, back,
			         cases[i].want);
	}
}

static void
test_driver_version(void **state)
{
	struct fix *x = *state;
	struct facts_driver d = { .nslots = 8, .version = "535.104.05" };
	struct config_version *want = &x->r.driver_version[SLOT_VENDOR_NVIDIA];

	judge_driver_version(&x->j, SLOT_VENDOR_NVIDIA, &d, &x->r);  /* nothing required */
	expect_none(x);
	snprintf(want->version, sizeof(want->version), "550.54.15");
	want->minimum = true;
	judge_driver_version(&x->j, SLOT_VENDOR_NVIDIA, &d, &x->r);
	expect_one(x, "driver", "nvidia", VERDICT_FAIL,
	           "nvidia driver 535.104.05 is below the required 550.54.15");
	reset(x);
	snprintf(d.version, sizeof(d.version), "550.54.15");
	judge_driver_version(&x->j, SLOT_VENDOR_NVIDIA, &d, &x->r);
	snprintf(d.version, sizeof(d.version), "560.28.03");
	judge_driver_version(&x->j, SLOT_VENDOR_NVIDIA, &d, &x->r);
	expect_none(x);

	/* Exactly: a newer one is not it either. */
	want->minimum = false;
	judge_driver_version(&x->j, SLOT_VENDOR_NVIDIA, &d, &x->r);
	expect_one(x, "driver", "nvidia", VERDICT_FAIL,
	           "nvidia driver 560.28.03 is not the required 550.54.15");
	reset(x);
	d.version[0] = '\0';
	judge_driver_version(&x->j, SLOT_VENDOR_NVIDIA, &d, &x->r);
	expect_one(x, "driver", "nvidia", VERDICT_FAIL,
	           "nvidia driver version unknown, 550.54.15 required");
	reset(x);
	want->minimum = true;
	judge_driver_version(&x->j, SLOT_VENDOR_NVIDIA, &d, &x->r);
	expect_one(x, "driver", "nvidia", VERDICT_FAIL,
	           "nvidia driver version unknown, 550.54.15 or later required");

	/* Another vendor's requirement, or no boards of this one: nothing. */
	reset(x);
	judge_driver_version(&x->j, SLOT_VENDOR_AMD, &d, &x->r);
	d.nslots = 0;
	judge_driver_version(&x->j, SLOT_VENDOR_NVIDIA, &d, &x->r);
	expect_none(x);
	d.nslots = 1;
	snprintf(d.version, sizeof(d.version), "5.10.9");
	snprintf(x->r.driver_version[SLOT_VENDOR_CAMBRICON].version, 64, "5.10.22");
	x->r.driver_version[SLOT_VENDOR_CAMBRICON].minimum = true;
	judge_driver_version(&x->j, SLOT_VENDOR_CAMBRICON, &d, &x->r);
	expect_one(x, "driver", "cambricon", VERDICT_FAIL,
	           "cambricon driver 5.10.9 is below the required 5.10.22");
}

static void
test_library(void **state)
{
	struct fix *x = *state;
	struct facts_library l;

	memset(&l, 0, sizeof(l));
	l.job_rc = -ETIMEDOUT;
	judge_library(&x->j, "NVML", &l, 8, &x->r);  /* not asked: nothing */
	expect_none(x);
	l.asked = true;
	judge_library(&x->j, "NVML", &l, 8, &x->r);
	expect_one(x, "library", "NVML", VERDICT_WARN, "NVML did not answer within 10 s");

	/* Not installed, or no answer at all: the driver's files still speak. */
	reset(x);
	l.job_rc = -EPROTO;
	judge_library(&x->j, "NVML", &l, 8, &x->r);
	l.job_rc = 0;
	l.rc = -ENOENT;
	l.info.count = -1;
	judge_library(&x->j, "NVML", &l, 8, &x->r);
	expect_none(x);

	l.rc = -EIO;
	snprintf(l.info.error, sizeof(l.info.error), "Driver/library version mismatch");
	judge_library(&x->j, "NVML", &l, 8, &x->r);
	expect_one(x, "library", "NVML", VERDICT_WARN, "NVML: Driver/library version mismatch");
	reset(x);
	l.rc = 0;
	l.info.count = 7;
	judge_library(&x->j, "NVML", &l, 8, &x->r);
	expect_one(x, "library", "NVML", VERDICT_FAIL, "NVML sees 7 boards, 8 slots found");
	reset(x);
	l.info.count = 8;
	judge_library(&x->j, "NVML", &l, 8, &x->r);
	expect_none(x);
}

/* --- memory, storage, limits -------------------------------------------- */

static void
test_memory(void **state)
{
	struct fix *x = *state;
	struct hwmon_numa_node nodes[3] = {
		{ 0, 131072000, 512000 }, { 1, 0, 0 }, { 2, 131072000, 65536000 },
	};
	struct facts_memory m = { 0, "sysfs", nodes, 3 };

	judge_memory(&x->j, &m, &x->r);  /* no minimum */
	expect_none(x);
	x->r.mem_min_free_mb = 1024;
	judge_memory(&x->j, &m, &x->r);
	/* node 1 has no memory at all: nothing to free there */
	expect_one(x, "memory", "node0", VERDICT_FAIL, "NUMA node 0 has 500 MB free, below 1024 MB");
	reset(x);
	x->r.mem_low = VERDICT_WARN;  /* the inspection's rule */
	judge_memory(&x->j, &m, &x->r);
	expect_one(x, "memory", "node0", VERDICT_WARN, "NUMA node 0 has 500 MB free, below 1024 MB");

	reset(x);
	x->r.mem_low = VERDICT_FAIL;
	m = (struct facts_memory){ -ENOENT, NULL, NULL, 0 };
	judge_memory(&x->j, &m, &x->r);
	expect_one(x, "memory", "proc/meminfo", VERDICT_FAIL,
	           "cannot read free memory (sys/devices/system/node, proc/meminfo): "
	           "No such file or directory");
	reset(x);
	x->r.mem_min_free_mb = 0;
	judge_memory(&x->j, &m, &x->r);
	assert_int_equal(x->n, 1);
	assert_int_equal(x->f[0].verdict, VERDICT_WARN);
}

static struct config_path
cpath(const char *path, long long min_mb)
{
	return (struct config_path){ (char *)path, min_mb, 0, true };
}

static struct facts_path
fpath(int rc, long long free_mb)
{
	struct facts_path p;

	memset(&p, 0, sizeof(p));
	p.rc = rc;
	p.dir.free_mb = free_mb;
	p.dir.write_err = 0;
	p.dir.files = 1000;
	p.dir.favail = 500;
	return p;
}

/* Every path that timed out is named, in one line, before the rest. */
static void
test_paths_timeouts(void **state)
{
	struct fix *x = *state;
	struct config_path c[8];
	struct facts_path f[8];
	char names[8][16];

	for (int i = 0; i < 8; i++) {
		snprintf(names[i], sizeof(names[i]), "/mnt/nfs%d", i);
		c[i] = cpath(names[i], 10);
		f[i] = fpath(i == 3 ? 0 : -ETIMEDOUT, 5);
	}
	judge_paths(&x->j, c, f, 8, &x->r);
	expect_at(x, 2, 0, "storage", "/mnt/nfs0", VERDICT_FAIL,
	          "/mnt/nfs0, /mnt/nfs1, /mnt/nfs2, /mnt/nfs4, /mnt/nfs5, /mnt/nfs6, /mnt/nfs7 "
	          "timed out after 10 s");
	expect_at(x, 2, 1, "storage", "/mnt/nfs3", VERDICT_FAIL,
	          "/mnt/nfs3 has 5 MB free, below 10 MB");

	/* More than a line holds: the first ones, and how many more. */
	{
		char longnames[6][80];

		reset(x);
		for (int i = 0; i < 6; i++) {
			snprintf(longnames[i], sizeof(longnames[i]), "/gpfs/projects/a-rather-long-"
			         "project-name-number-%d/checkpoints", i);
			c[i] = cpath(longnames[i], 0);
			f[i] = fpath(-ETIMEDOUT, 0);
		}
		char want[64];
		const char *p;
		int shown = 0;

		judge_paths(&x->j, c, f, 6, &x->r);
		assert_int_equal(x->n, 1);
		for (p = x->f[0].evidence; (p = strstr(p, "/gpfs/")); p++)
			shown++;
		assert_true(shown >= 2 && shown < 6);
		for (int i = 0; i < shown; i++)
			assert_non_null(strstr(x->f[0].evidence, longnames[i]));
		snprintf(want, sizeof(want), "/checkpoints and %d more timed out after 10 s",
		         6 - shown);
		assert_non_null(strstr(x->f[0].evidence, want));
		assert_string_equal(x->f[0].device, longnames[0]);
	}
}

/* A path whose probe from an earlier check is still stuck: a failure of
 * its own, with the stuck probe's pid and age; a timeout beside it still
 * reads as one. */
static void
test_paths_still_stuck(void **state)
{
	struct fix *x = *state;
	struct config_path c[2] = { cpath("/mnt/dead", 0), cpath("/mnt/slow", 0) };
	struct facts_path f[2] = { fpath(-EALREADY, 0), fpath(-ETIMEDOUT, 0) };

	f[0].stuck_pid = 4242;
	f[0].stuck_s = 63.4;
	judge_paths(&x->j, c, f, 2, &x->r);
	expect_at(x, 2, 0, "storage", "/mnt/slow", VERDICT_FAIL, "/mnt/slow timed out after 10 s");
	expect_at(x, 2, 1, "storage", "/mnt/dead", VERDICT_FAIL,
	          "/mnt/dead: still stuck: an earlier probe has not returned in 63 s (pid 4242)");
}

static void
test_paths_problems(void **state)
{
	struct fix *x = *state;
	struct config_path c = cpath("/scratch", 100);
	struct facts_path f = fpath(0, 200);

	judge_paths(&x->j, &c, &f, 1, &x->r);
	expect_none(x);
	f.dir.err = ENOENT;
	judge_paths(&x->j, &c, &f, 1, &x->r);
	expect_one(x, "storage", "/scratch", VERDICT_FAIL, "/scratch is missing");
	reset(x);
	f.dir.err = EIO;
	judge_paths(&x->j, &c, &f, 1, &x->r);
	expect_one(x, "storage", "/scratch", VERDICT_FAIL,
	           "/scratch cannot be examined: Input/output error");
	reset(x);
	f.dir.err = 0;
	f.dir.not_dir = true;
	judge_paths(&x->j, &c, &f, 1, &x->r);
	expect_one(x, "storage", "/scratch", VERDICT_FAIL, "/scratch is not a directory");

	/* Space, inodes and writing, each on its own. */
	reset(x);
	f.dir.not_dir = false;
	f.dir.free_mb = 50;
	c.min_free_inodes = 1000;
	f.dir.write_err = EROFS;
	judge_paths(&x->j, &c, &f, 1, &x->r);
	expect_at(x, 3, 0, "storage", "/scratch", VERDICT_FAIL, "/scratch has 50 MB free, below 100 MB");
	expect_at(x, 3, 1, "storage", "/scratch", VERDICT_FAIL,
	          "/scratch has 500 free inodes, below 1000");
	expect_at(x, 3, 2, "storage", "/scratch", VERDICT_FAIL,
	          "/scratch is not writable (Read-only file system)");
	/* No inode count (btrfs): not held to a minimum. */
	reset(x);
	f.dir.files = 0;
	f.dir.favail = 0;
	f.dir.free_mb = 100;
	f.dir.write_err = -1;  /* not tried */
	judge_paths(&x->j, &c, &f, 1, &x->r);
	expect_none(x);

	/* The agent could not look: the pre-check fails, the inspection warns. */
	f.rc = -EPROTO;
	judge_paths(&x->j, &c, &f, 1, &x->r);
	expect_one(x, "storage", "/scratch", VERDICT_FAIL, "/scratch: the probe failed");
	reset(x);
	x->r.probe_trouble = VERDICT_WARN;
	f.rc = -EAGAIN;
	judge_paths(&x->j, &c, &f, 1, &x->r);
	expect_one(x, "storage", "/scratch", VERDICT_WARN,
	           "/scratch: cannot run the probe: Resource temporarily unavailable");
}

/* A long path keeps its end, which tells one run's directory from another. */
static void
test_paths_long(void **state)
{
	struct fix *x = *state;
	char path[400], want[200];
	struct config_path c;
	struct facts_path f = fpath(0, 0);

	snprintf(path, sizeof(path), "/lustre/%0300d/run-7", 0);
	c = cpath(path, 0);
	f.dir.err = ENOENT;
	judge_paths(&x->j, &c, &f, 1, &x->r);
	assert_int_equal(x->n, 1);
	/* the finding's device, too, keeps the end */
	snprintf(want, sizeof(want), "...%s", path + strlen(path) - 60);
	assert_string_equal(x->f[0].device, want);
	snprintf(want, sizeof(want), "...%s is missing", path + strlen(path) - 93);
	assert_string_equal(x->f[0].evidence, want);
}

static void
test_shm(void **state)
{
	struct fix *x = *state;
	struct facts_shm s = { 0, 64, 60 };

	judge_shm(&x->j, &s, &x->r);
	expect_none(x);
	x->r.shm_min_mb = 1024;
	judge_shm(&x->j, &s, &x->r);
	expect_one(x, "storage", "/dev/shm", VERDICT_FAIL, "/dev/shm is 64 MB, below 1024 MB");
	reset(x);
	s.rc = -ENOENT;
	judge_shm(&x->j, &s, &x->r);
	expect_one(x, "storage", "/dev/shm", VERDICT_FAIL,
	           "/dev/shm cannot be examined: No such file or directory");
}

static void
test_limits(void **state)
{
	struct fix *x = *state;
	struct facts_limits l;

	memset(&l, 0, sizeof(l));
	l.memlock.rlim_cur = 64 * 1024;
	l.nofile.rlim_cur = 64;
	judge_limits(&x->j, &l, &x->r);
	expect_none(x);
	x->r.memlock_unlimited = true;
	x->r.nofile_min = 1024;
	judge_limits(&x->j, &l, &x->r);
	expect_at(x, 2, 0, "limits", "RLIMIT_MEMLOCK", VERDICT_FAIL,
	          "RLIMIT_MEMLOCK is 64 KB, RDMA needs unlimited (ulimit -l unlimited)");
	expect_at(x, 2, 1, "limits", "RLIMIT_NOFILE", VERDICT_FAIL, "RLIMIT_NOFILE is 64, below 1024");
	reset(x);
	l.memlock.rlim_cur = RLIM_INFINITY;
	l.nofile.rlim_cur = RLIM_INFINITY;
	judge_limits(&x->j, &l, &x->r);
	expect_none(x);
	l.err = EPERM;
	judge_limits(&x->j, &l, &x->r);
	expect_one(x, "limits", "", VERDICT_FAIL,
	           "cannot read resource limits: Operation not permitted");
}

/* --- network ------------------------------------------------------------ */

static struct facts_nic
nic(const char *name, const char *operstate, int carrier, long long speed)
{
	struct facts_nic n;

	memset(&n, 0, sizeof(n));
	snprintf(n.name, sizeof(n.name), "%s", name);
	snprintf(n.nic.operstate, sizeof(n.nic.operstate), "%s", operstate);
	n.nic.carrier = carrier;
	n.nic.speed_mbps = speed;
	return n;
}

static void
test_nic_link(void **state)
{
	struct fix *x = *state;
	struct facts_nic n = nic("eth1", "up", 1, 100000);

	assert_true(judge_nic_link(&x->j, &n));
	expect_none(x);
	/* The kernel refuses to read carrier while the link is down. */
	n = nic("eth1", "down", -1, -1);
	assert_false(judge_nic_link(&x->j, &n));
	expect_one(x, "nic", "eth1", VERDICT_FAIL, "eth1 is down (operstate down, no carrier)");
	reset(x);
	n = nic("eth1", "up", 0, -1);
	assert_false(judge_nic_link(&x->j, &n));
	expect_one(x, "nic", "eth1", VERDICT_FAIL, "eth1 has no carrier (operstate up)");
	reset(x);
	n = nic("eth1", "", 1, -1);
	assert_false(judge_nic_link(&x->j, &n));
	expect_one(x, "nic", "eth1", VERDICT_FAIL, "eth1 is down (operstate unreadable, carrier)");
	/* "unknown" with a carrier is how some drivers say up (lo, tun). */
	reset(x);
	n = nic("tun0", "unknown", 1, -1);
	assert_true(judge_nic_oper_up(&n.nic));
	assert_true(judge_nic_link(&x->j, &n));
	n = nic("tun0", "unknown", 0, -1);
	assert_false(judge_nic_oper_up(&n.nic));
	expect_none(x);

	n.rc = -ENOENT;
	assert_false(judge_nic_link(&x->j, &n));
	expect_one(x, "nic", "tun0", VERDICT_FAIL, "tun0 is missing");
	reset(x);
	n.rc = -EIO;
	judge_nic_link(&x->j, &n);
	expect_one(x, "nic", "tun0", VERDICT_FAIL, "tun0 cannot be read: Input/output error");
}

static void
test_nic_speed(void **state)
{
	struct fix *x = *state;
	struct facts_nic n = nic("eth1", "up", 1, 10000);

	judge_nic_speed(&x->j, &n, &x->r);  /* no minimum */
	expect_none(x);
	x->r.nic_min_speed_mbps = 25000;
	judge_nic_speed(&x->j, &n, &x->r);
	expect_one(x, "nic", "eth1", VERDICT_FAIL, "eth1 runs at 10000 Mb/s, below 25000 Mb/s");
	reset(x);
	n.nic.speed_mbps = -1;
	judge_nic_speed(&x->j, &n, &x->r);
	expect_one(x, "nic", "eth1", VERDICT_WARN, "eth1 speed is unknown (minimum 25000 Mb/s)");
	/* A link that is down is judged by judge_nic_link(), not twice. */
	reset(x);
	n.nic.carrier = 0;
	judge_nic_speed(&x->j, &n, &x->r);
	expect_none(x);
}

static struct hwmon_ib_port
port(unsigned num, int state, int phys, double gbps)
{
	struct hwmon_ib_port p;

	memset(&p, 0, sizeof(p));
	p.port = num;
	p.state = state;
	p.phys_state = phys;
	snprintf(p.state_text, sizeof(p.state_text), "%s", state == 4 ? "ACTIVE" : "DOWN");
	snprintf(p.phys_state_text, sizeof(p.phys_state_text), "%s",
	         phys == 5 ? "LinkUp" : "Disabled");
	p.rate_gbps = gbps;
	snprintf(p.rate, sizeof(p.rate), "%g Gb/sec", gbps);
	p.link_downed = p.symbol_error = -1;
	return p;
}

static void
test_ib_state(void **state)
{
	struct fix *x = *state;
	struct hwmon_ib_port ports[2] = { port(1, 4, 5, 200), port(2, 1, 3, 0) };
	struct facts_ib d;

	memset(&d, 0, sizeof(d));
	snprintf(d.name, sizeof(d.name), "mlx5_0");
	d.listed = true;
	d.ports = ports;
	d.nports = 2;
	assert_int_equal(judge_ib_state(&x->j, &d), 1);
	expect_one(x, "ib", "mlx5_0/2", VERDICT_FAIL,
	           "mlx5_0 port 2 is not active (state DOWN, phys_state Disabled)");
	/* Nobody asked for it: worth a look, no more. */
	reset(x);
	d.listed = false;
	judge_ib_state(&x->j, &d);
	expect_one(x, "ib", "mlx5_0/2", VERDICT_WARN,
	           "mlx5_0 port 2 is not active (state DOWN, phys_state Disabled)");
	reset(x);
	ports[1].state = -1;
	ports[1].state_text[0] = '\0';
	judge_ib_state(&x->j, &d);
	expect_one(x, "ib", "mlx5_0/2", VERDICT_WARN,
	           "mlx5_0 port 2 is not active (state unreadable, phys_state Disabled)");

	reset(x);
	d.listed = true;
	d.nports = 0;
	assert_int_equal(judge_ib_state(&x->j, &d), 0);
	expect_one(x, "ib", "mlx5_0", VERDICT_FAIL, "InfiniBand device mlx5_0 has no ports");
	reset(x);
	d.rc = -ENOENT;
	judge_ib_state(&x->j, &d);
	expect_one(x, "ib", "mlx5_0", VERDICT_FAIL, "InfiniBand device mlx5_0 is missing");
	reset(x);
	d.rc = -EACCES;
	d.listed = false;
	judge_ib_state(&x->j, &d);
	expect_one(x, "ib", "mlx5_0", VERDICT_WARN,
	           "InfiniBand device mlx5_0 cannot be read: Permission denied");
}

static void
test_ib_rate(void **state)
{
	struct fix *x = *state;
	struct hwmon_ib_port ports[3] = { port(1, 4, 5, 56), port(2, 4, 5, 0), port(3, 1, 3, 10) };
	struct facts_ib d;

	memset(&d, 0, sizeof(d));
	snprintf(d.name, sizeof(d.name), "mlx5_0");
	d.listed = true;
	d.ports = ports;
	d.nports = 3;
	judge_ib_rate(&x->j, &d, &x->r);  /* no minimum */
	expect_none(x);
	x->r.ib_min_rate_gbps = 100;
	judge_ib_rate(&x->j, &d, &x->r);
	/* port 3 is down: judge_ib_state() says so */
	expect_at(x, 2, 0, "ib", "mlx5_0/1", VERDICT_FAIL, "mlx5_0 port 1 runs at 56 Gb/sec, below 100 Gb/s");
	expect_at(x, 2, 1, "ib", "mlx5_0/2", VERDICT_WARN,
	          "mlx5_0 port 2 rate is unknown (minimum 100 Gb/s)");
	reset(x);
	d.listed = false;  /* only listed devices are held to a rate */
	judge_ib_rate(&x->j, &d, &x->r);
	expect_none(x);
}

static void
test_ib_counters(void **state)
{
	struct fix *x = *state;
	struct hwmon_ib_port base = port(1, 4, 5, 200), now = base;

	base.link_downed = 2;
	base.symbol_error = 5;
	now.link_downed = 2;
	now.symbol_error = 5;
	judge_ib_counters(&x->j, "mlx5_0", &now, &base);
	expect_none(x);
	now.link_downed = 3;
	now.symbol_error = 12;
	judge_ib_counters(&x->j, "mlx5_0", &now, &base);
	expect_at(x, 2, 0, "ib", "mlx5_0/1", VERDICT_FAIL,
	          "mlx5_0 port 1 link went down 1 more time (link_downed 2 -> 3)");
	expect_at(x, 2, 1, "ib", "mlx5_0/1", VERDICT_WARN,
	          "mlx5_0 port 1 has 7 new symbol errors (symbol_error 5 -> 12)");
	/* Unknown on either side: nothing to compare. */
	reset(x);
	base.link_downed = -1;
	now.symbol_error = -1;
	judge_ib_counters(&x->j, "mlx5_0", &now, &base);
	expect_none(x);
}

/* The pre-check's rules come from the configuration. */
static void
test_rules(void **state)
{
	struct fix *x = *state;
	char err[256];
	static const char doc[] =
		"{\"check\": {\"timeout\": 3, \"slots\": {\"expected\": 4, \"pcie_degraded\": \"fail\","
		" \"driver_version\": {\"nvidia\": \">= 550.54.15\", \"amd\": \"6.3.6\"}},"
		" \"memory\": {\"min_free_mb\": 7}, \"nics\": {\"min_speed_mbps\": 25000}}}";

	assert_int_equal(config_load_buffer(&x->cfg, doc, strlen(doc), "t", err, sizeof(err)), 0);
	judge_rules_init(&x->r, &x->cfg);
	assert_int_equal(x->r.slots_expected, 4);
	assert_int_equal(x->r.pcie_degraded, VERDICT_FAIL);
	assert_int_equal(x->r.mem_min_free_mb, 7);
	assert_int_equal(x->r.nic_min_speed_mbps, 25000);
	assert_true(x->r.timeout_s == 3);
	assert_int_equal(x->r.mem_low, VERDICT_FAIL);
	assert_int_equal(x->r.probe_trouble, VERDICT_FAIL);
	assert_string_equal(x->r.driver_version[SLOT_VENDOR_NVIDIA].version, "550.54.15");
	assert_true(x->r.driver_version[SLOT_VENDOR_NVIDIA].minimum);
	assert_string_equal(x->r.driver_version[SLOT_VENDOR_AMD].version, "6.3.6");
	assert_false(x->r.driver_version[SLOT_VENDOR_AMD].minimum);
	assert_string_equal(x->r.driver_version[SLOT_VENDOR_CAMBRICON].version, "");
}

int
main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_say),
		T(test_slot_count),
		T(test_slot_present),
		T(test_slot_driver),
		T(test_pcie),
		T(test_aer_totals),
		T(test_aer_rises),
		T(test_version_cmp),
		T(test_driver_version),
		T(test_library),
		T(test_memory),
		T(test_paths_timeouts),
		T(test_paths_still_stuck),
		T(test_paths_problems),
		T(test_paths_long),
		T(test_shm),
		T(test_limits),
		T(test_nic_link),
		T(test_nic_speed),
		T(test_ib_state),
		T(test_ib_rate),
		T(test_ib_counters),
		T(test_rules),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
