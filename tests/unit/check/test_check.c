/*
 * test_check.c - the node health checks against sysfs trees built under
 * mkdtemp(), real directories for storage, and limits lowered in children.
 */
#include "autoconf.h"

#include "../vigil_test.h"
#include "../fstree.h"
#include "../proc.h"
#include "../scratch.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>

#include "check/check.h"
#include "conf/config.h"
#include "sys/topo.h"
#include "sys/vendor.h"

#define BUS0 "0000:3b:00.0"
#define BUS1 "0000:5e:00.0"
#define DEV0 "sys/devices/pci0000:3a/" BUS0
#define DEV1 "sys/devices/pci0000:5d/" BUS1
#define PORT1 "sys/class/infiniband/mlx5_0/ports/1"

#define NVIDIA_VERSION \
	"NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\n" \
	"GCC version:  gcc version 11.4.0 (Ubuntu 11.4.0-1ubuntu1~22.04)\n"

struct fix {
	char root[512];         /* the fake sysfs root */
	char data[600];         /* a real directory for the storage check */
	struct config cfg;
	struct slot slots[4];
	struct check_ctx ctx;
	struct check_report rep;
};

/* --- tree building ------------------------------------------------------ */

static void
make_pci(const char *root, const char *dev, const char *bus, const char *driver)
{
	char rel[256], target[256];

	put_pci_link(root, dev, bus);
	snprintf(rel, sizeof(rel), "%s/aer_dev_correctable", dev);
	put(root, rel, "RxErr 0\nBadTLP 0\nBadDLLP 0\nRollover 0\nTimeout 0\nNonFatalErr 0\n"
	               "CorrIntErr 0\nHeaderOF 0\nTOTAL_ERR_COR 0\n");
	snprintf(rel, sizeof(rel), "%s/aer_dev_nonfatal", dev);
	put(root, rel, "Undefined 0\nDLP 0\nSDES 0\nTLP 0\nFCP 0\nCmpltTO 0\nCmpltAbrt 0\n"
	               "UnxCmplt 0\nRxOF 0\nMalfTLP 0\nECRC 0\nUnsupReq 0\nACSViol 0\n"
	               "TOTAL_ERR_NONFATAL 0\n");
	snprintf(rel, sizeof(rel), "%s/aer_dev_fatal", dev);
	put(root, rel, "Undefined 0\nDLP 0\nSDES 0\nTLP 0\nFCP 0\nCmpltTO 0\nCmpltAbrt 0\n"
	               "UnxCmplt 0\nRxOF 0\nMalfTLP 0\nECRC 0\nUnsupReq 0\nACSViol 0\n"
	               "TOTAL_ERR_FATAL 0\n");
	if (driver) {
		int depth = 0;

		for (const char *p = dev; *p; p++)
			depth += *p == '/';
		/* from DEV back to sys/, then down to the driver */
		target[0] = '\0';
		for (int i = 0; i < depth; i++)
			strcat(target, "../");
		strcat(target, "bus/pci/drivers/");
		strcat(target, driver);
		snprintf(rel, sizeof(rel), "%s/driver", dev);
		link_at(root, rel, target);
		snprintf(rel, sizeof(rel), "sys/bus/pci/drivers/%s", driver);
		mkdirs(root, rel);
	}
}

static void
build_healthy(const char *root)
{
	make_pci(root, DEV0, BUS0, "nvidia");
	make_pci(root, DEV1, BUS1, "nvidia");
	link_at(root, "sys/bus/pci/drivers/nvidia/module", "../../../../module/nvidia");
	put(root, "sys/module/nvidia/version", "535.104.12\n");
	put(root, "proc/driver/nvidia/version", NVIDIA_VERSION);

	put(root, "sys/devices/system/node/node0/meminfo",
	    "Node 0 MemTotal:       131072000 kB\nNode 0 MemFree:        65536000 kB\n"
	    "Node 0 MemUsed:        65536000 kB\n");
	put(root, "sys/devices/system/node/node1/meminfo",
	    "Node 1 MemTotal:       131072000 kB\nNode 1 MemFree:        65536000 kB\n"
	    "Node 1 MemUsed:        65536000 kB\n");
	put(root, "sys/devices/system/node/online", "0-1\n");
	put(root, "proc/meminfo", "MemTotal:       262144000 kB\nMemFree:        131072000 kB\n");

	put(root, "sys/class/net/eth0/operstate", "up\n");
	put(root, "sys/class/net/eth0/carrier", "1\n");
	put(root, "sys/class/net/eth0/speed", "100000\n");
	put(root, "sys/class/net/lo/operstate", "unknown\n");
	put(root, "sys/class/net/lo/carrier", "1\n");

	put(root, PORT1 "/state", "4: ACTIVE\n");
	put(root, PORT1 "/phys_state", "5: LinkUp\n");
	put(root, PORT1 "/rate", "200 Gb/sec (4X HDR)\n");
	put(root, PORT1 "/counters/link_downed", "2\n");
	put(root, PORT1 "/counters/symbol_error", "0\n");

	mkdirs(root, "dev/shm");
}

static void
set_slot(struct slot *s, int index, enum slot_vendor vendor, const char *model, const char *bus)
{
	memset(s, 0, sizeof(*s));
	s->index = index;
	s->vendor = vendor;
	snprintf(s->model, sizeof(s->model), "%s", model);
	snprintf(s->pci_bus_id, sizeof(s->pci_bus_id), "%.15s", bus);
}

static int setup_config(struct fix *f);

static int
setup(void **state)
{
	struct fix *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	if (make_scratch_dir(f->root, sizeof(f->root), "check") < 0) {
		free(f);
		return -1;
	}
	build_healthy(f->root);
	snprintf(f->data, sizeof(f->data), "%s/data", f->root);
	if (mkdir(f->data, 0755) < 0 || setup_config(f) < 0)
		return -1;

	set_slot(&f->slots[0], 0, SLOT_VENDOR_NVIDIA, "Tesla V100-SXM2-32GB", BUS0);
	set_slot(&f->slots[1], 1, SLOT_VENDOR_NVIDIA, "Tesla T4", BUS1);
	f->ctx.cfg = &f->cfg;
	f->ctx.slots = f->slots;
	f->ctx.nslots = 2;
	f->ctx.all = true;
	*state = f;
	return 0;
}

/* The configuration of a healthy node in the tree. */
static int
setup_config(struct fix *f)
{
	struct config *cfg;

	cfg = &f->cfg;
	config_init(cfg);
	free(cfg->sysfs_root);
	cfg->sysfs_root = strdup(f->root);
	cfg->slots_expected = 2;
	cfg->mem_min_free_mb = 1024;
	cfg->paths = calloc(1, sizeof(*cfg->paths));
	if (!cfg->sysfs_root || !cfg->paths)
		return -1;
	cfg->npaths = 1;
	cfg->paths[0].path = strdup(f->data);
	cfg->paths[0].min_free_mb = 1;
	cfg->paths[0].min_free_inodes = 1;
	cfg->paths[0].writable = true;
	cfg->shm_min_mb = 1;
	cfg->memlock_unlimited = false;
	cfg->nofile_min = 16;
	if (!cfg->paths[0].path || config_list_add(&cfg->nics, &cfg->nnics, "eth0") < 0 ||
	    config_list_add(&cfg->ib_devices, &cfg->nib_devices, "mlx5_0") < 0)
		return -1;
	cfg->nic_min_speed_mbps = 25000;
	cfg->ib_min_rate_gbps = 100;
	cfg->check_timeout_s = 5;
	return 0;
}

static int
teardown(void **state)
{
	struct fix *f = *state;

	check_report_free(&f->rep);
	config_free(&f->cfg);
	rm_rf(f->root);
	free(f);
	return 0;
}

/* --- helpers ------------------------------------------------------------ */

static void
run(struct fix *f)
{
	check_report_free(&f->rep);
	assert_int_equal(check_run(&f->ctx, &f->rep), 0);
}

static const struct check_result *
result(const struct fix *f, const char *name)
{
	for (size_t i = 0; i < f->rep.n; i++)
		if (strcmp(f->rep.results[i].name, name) == 0)
			return &f->rep.results[i];
	fail_msg("no result for %s", name);
	return NULL;
}

/* Run, then expect check NAME to give V with a reason containing WANT. */
static const struct check_result *
expect(struct fix *f, const char *name, enum verdict v, const char *want)
{
	const struct check_result *r;

	run(f);
	r = result(f, name);
	if (r->verdict != v || (want && !strstr(r->reason, want)))
		fail_msg("%s: got %s \"%s\", wanted %s \"%s\"", name, verdict_name(r->verdict),
		         r->reason, verdict_name(v), want ? want : "");
	assert_null(strchr(r->reason, '\n'));
	return r;
}

/* details member by a path of keys and array indexes: "slots", "0", "driver" */
static const cJSON *
detail(const struct check_result *r, const char *k1, const char *k2, const char *k3,
       const char *k4)
{
	const char *keys[] = { k1, k2, k3, k4 };
	const cJSON *j = r->details;

	for (size_t i = 0; i < 4 && keys[i] && j; i++) {
		if (cJSON_IsArray(j))
			j = cJSON_GetArrayItem(j, atoi(keys[i]));
		else
			j = cJSON_GetObjectItemCaseSensitive(j, keys[i]);
	}
	assert_non_null(j);
	return j;
}

/*
 * Run the checks in a child after PREP (setrlimit, a mount namespace)
 * and bring back each result as "name verdict reason" lines.  PREP
 * returning non-zero means "cannot do that here": *skipped is set.
 */
static void
run_in_child(struct fix *f, int (*prep)(struct fix *f), char *out, size_t len, bool *skipped)
{
	int pfd[2], status;
	size_t got = 0;
	pid_t pid;

	*skipped = false;
	assert_int_equal(pipe(pfd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct check_report rep;
		char line[512];
		FILE *w;

		close(pfd[0]);
		w = fdopen(pfd[1], "w");
		if (!w)
			_exit(2);
		if (prep(f) != 0) {
			fputs("SKIP\n", w);
			fclose(w);
			_exit(0);
		}
		if (check_run(&f->ctx, &rep) < 0)
			_exit(3);
		for (size_t i = 0; i < rep.n; i++) {
			snprintf(line, sizeof(line), "%s %s %s\n", rep.results[i].name,
			         verdict_name(rep.results[i].verdict), rep.results[i].reason);
			fputs(line, w);
		}
		check_report_free(&rep);
		fclose(w);
		_exit(0);
	}
	close(pfd[1]);
	for (;;) {
		ssize_t n = read(pfd[0], out + got, len - 1 - got);

		if (n <= 0)
			break;
		got += (size_t)n;
	}
	out[got] = '\0';
	close(pfd[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	*skipped = strcmp(out, "SKIP\n") == 0;
}

/* --- healthy ------------------------------------------------------------ */

static void
test_healthy(void **state)
{
	static const char *const names[] = { "slots", "boards", "memory", "storage", "limits",
	                                     "nics" };
	struct fix *f = *state;
	const struct check_result *r;

	run(f);
	assert_int_equal(f->rep.n, 6);
	for (size_t i = 0; i < 6; i++) {
		r = &f->rep.results[i];
		assert_string_equal(r->name, names[i]);
		if (r->verdict != VERDICT_PASS)
			fail_msg("%s: %s %s", r->name, verdict_name(r->verdict), r->reason);
		assert_true(r->reason[0] != '\0');
		assert_true(cJSON_IsObject(r->details));
		assert_int_equal(cJSON_GetArraySize(detail(r, "problems", NULL, NULL, NULL)), 0);
	}
	assert_int_equal(check_report_verdict(&f->rep), VERDICT_PASS);
	assert_null(check_report_first(&f->rep, VERDICT_WARN));
	assert_ptr_equal(check_report_first(&f->rep, VERDICT_PASS), &f->rep.results[0]);

	assert_int_equal(f->rep.facts.nslots, 2);
	assert_string_equal(f->rep.facts.models, "Tesla T4, Tesla V100-SXM2-32GB");
	assert_string_equal(f->rep.facts.driver, "535.104.05");

	r = result(f, "slots");
	assert_string_equal(detail(r, "slots", "1", "driver", NULL)->valuestring, "nvidia");
	assert_string_equal(detail(r, "slots", "1", "module", NULL)->valuestring, "nvidia");
	assert_string_equal(detail(r, "slots", "0", "link", "max_speed")->valuestring,
	                    "16.0 GT/s PCIe");
	assert_int_equal(detail(r, "slots", "0", "aer", "fatal")->valueint, 0);
	assert_string_equal(detail(r, "drivers", "nvidia", NULL, NULL)->valuestring, "535.104.05");
	/* A fake tree never consults the vendors' libraries. */
	assert_null(cJSON_GetObjectItem(r->details, "nvml"));

	r = result(f, "nics");
	assert_int_equal(detail(r, "infiniband", "0", "ports", "0")->type, cJSON_Object);
	assert_int_equal(cJSON_GetObjectItem(detail(r, "infiniband", "0", "ports", "0"),
	                                     "link_downed")->valueint, 2);
	assert_int_equal(detail(r, "interfaces", "0", "speed_mbps", NULL)->valueint, 100000);

	r = result(f, "memory");
	assert_string_equal(detail(r, "source", NULL, NULL, NULL)->valuestring, "sysfs");
	assert_int_equal(detail(r, "nodes", "1", "free_mb", NULL)->valueint, 64000);

	r = result(f, "storage");
	assert_true(cJSON_IsTrue(detail(r, "paths", "0", "writable", NULL)));
}

/* --- slots -------------------------------------------------------------- */

static void
test_slot_missing(void **state)
{
	struct fix *f = *state;
	const struct check_result *r;

	rm(f->root, "sys/bus/pci/devices/" BUS1);
	r = expect(f, "slots", VERDICT_FAIL, NULL);
	assert_string_equal(r->reason, "slot 1 (" BUS1 ") is missing from the PCI bus");
	assert_true(cJSON_IsFalse(detail(r, "slots", "1", "present", NULL)));
	assert_true(cJSON_IsTrue(detail(r, "slots", "0", "present", NULL)));
}

static void
test_slot_dangling(void **state)
{
	struct fix *f = *state;

	/* The bus link is left pointing at a device that went away. */
	rm(f->root, DEV0);
	expect(f, "slots", VERDICT_FAIL, "slot 0 (" BUS0 ") is missing from the PCI bus");
}

static void
test_slot_count(void **state)
{
	struct fix *f = *state;

	f->cfg.slots_expected = 3;
	expect(f, "slots", VERDICT_FAIL, "found 2 slots, expected 3");
	f->cfg.slots_expected = 1;
	expect(f, "slots", VERDICT_PASS, "2 slots present");
	f->cfg.slots_expected = -1;
	f->ctx.nslots = 0;
	expect(f, "slots", VERDICT_PASS, "no accelerator slots");
	f->ctx.slots = NULL;
	expect(f, "slots", VERDICT_PASS, "no accelerator slots");
	assert_int_equal(f->rep.facts.nslots, 0);
	assert_string_equal(f->rep.facts.models, "");
	assert_string_equal(f->rep.facts.driver, "");
}

static void
test_slot_driver(void **state)
{
	struct fix *f = *state;
	const struct check_result *r;

	rm(f->root, DEV0 "/driver");
	r = expect(f, "slots", VERDICT_FAIL, "slot 0 (" BUS0 ") has no driver bound");
	assert_true(cJSON_IsNull(detail(r, "slots", "0", "driver", NULL)));
	f->cfg.driver_required = false;
	expect(f, "slots", VERDICT_PASS, NULL);
}

static void
test_link_degraded(void **state)
{
	struct fix *f = *state;
	const struct check_result *r;

	put(f->root, DEV1 "/current_link_speed", "8.0 GT/s PCIe\n");
	r = expect(f, "slots", VERDICT_WARN,
	           "slot 1 (" BUS1 ") PCIe link degraded: 8 GT/s of 16 GT/s");
	assert_true(cJSON_IsTrue(detail(r, "slots", "1", "link", "degraded")));
	assert_true(cJSON_IsFalse(detail(r, "slots", "0", "link", "degraded")));

	put(f->root, DEV1 "/current_link_width", "8\n");
	expect(f, "slots", VERDICT_WARN, "8 GT/s of 16 GT/s, x8 of x16");
	put(f->root, DEV1 "/current_link_speed", "16.0 GT/s PCIe\n");
	expect(f, "slots", VERDICT_WARN, "PCIe link degraded: x8 of x16");

	f->cfg.pcie_degraded = VERDICT_FAIL;
	expect(f, "slots", VERDICT_FAIL, "x8 of x16");
	f->cfg.pcie_degraded = VERDICT_PASS;
	r = expect(f, "slots", VERDICT_PASS, NULL);
	assert_true(cJSON_IsTrue(detail(r, "slots", "1", "link", "degraded")));

	/* An unknown speed is not a degraded one. */
	f->cfg.pcie_degraded = VERDICT_WARN;
	put(f->root, DEV1 "/current_link_width", "16\n");
	put(f->root, DEV1 "/current_link_speed", "Unknown\n");
	expect(f, "slots", VERDICT_PASS, NULL);
}

static void
test_aer(void **state)
{
	struct fix *f = *state;
	const struct check_result *r;

	put(f->root, DEV0 "/aer_dev_correctable", "RxErr 5\nBadTLP 0\nTOTAL_ERR_COR 5\n");
	r = expect(f, "slots", VERDICT_PASS, NULL);  /* no limit by default */
	assert_int_equal(detail(r, "slots", "0", "aer", "correctable")->valueint, 5);
	f->cfg.aer_correctable_max = 10;
	expect(f, "slots", VERDICT_PASS, NULL);
	f->cfg.aer_correctable_max = 3;
	expect(f, "slots", VERDICT_WARN,
	       "slot 0 (" BUS0 ") has 5 correctable PCIe AER errors (limit 3)");

	put(f->root, DEV1 "/aer_dev_nonfatal", "DLP 0\nCmpltTO 2\nTOTAL_ERR_NONFATAL 2\n");
	f->cfg.aer_correctable_max = -1;
	expect(f, "slots", VERDICT_WARN, "slot 1 (" BUS1 ") has 2 non-fatal PCIe AER errors");

	put(f->root, DEV1 "/aer_dev_fatal", "DLP 1\nTOTAL_ERR_FATAL 1\n");
	r = expect(f, "slots", VERDICT_FAIL, "slot 1 (" BUS1 ") has 1 fatal PCIe AER error (+1 more)");
	assert_int_equal(cJSON_GetArraySize(detail(r, "problems", NULL, NULL, NULL)), 2);
}

static void
test_driver_versions(void **state)
{
	struct fix *f = *state;

	put(f->root, "proc/driver/nvidia/version",
	    "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.14  Release Build  "
	    "(dvs-builder@U16-I3-B03-4-3)  Thu Feb 22 01:25:25 UTC 2024\n");
	expect(f, "slots", VERDICT_PASS, "driver 550.54.14");
	assert_string_equal(f->rep.facts.driver, "550.54.14");

	/* Without procfs the module's own version is next. */
	rm(f->root, "proc/driver/nvidia");
	expect(f, "slots", VERDICT_PASS, NULL);
	assert_string_equal(f->rep.facts.driver, "535.104.12");

	rm(f->root, "sys/module/nvidia");
	expect(f, "slots", VERDICT_PASS, NULL);
	assert_string_equal(f->rep.facts.driver, "");

	/* Garbage gives no version, not a failure. */
	put(f->root, "proc/driver/nvidia/version", "garbage\n");
	expect(f, "slots", VERDICT_PASS, NULL);
	assert_string_equal(f->rep.facts.driver, "");
}

static void
test_facts(void **state)
{
	struct fix *f = *state;

	/* Distinct models, sorted; several vendors name theirs. */
	make_pci(f->root, "sys/devices/pci0000:af/0000:af:00.0", "0000:af:00.0", "nvidia");
	make_pci(f->root, "sys/devices/pci0000:d8/0000:d8:00.0", "0000:d8:00.0", "amdgpu");
	put(f->root, "sys/module/amdgpu/version", "6.3.6\n");
	set_slot(&f->slots[2], 2, SLOT_VENDOR_NVIDIA, "Tesla T4", "0000:af:00.0");
	set_slot(&f->slots[3], 3, SLOT_VENDOR_AMD, "AMD Instinct MI50 32GB", "0000:d8:00.0");
	f->ctx.nslots = 4;
	f->cfg.slots_expected = 4;
	expect(f, "slots", VERDICT_PASS, "4 slots present");
	assert_int_equal(f->rep.facts.nslots, 4);
	assert_string_equal(f->rep.facts.models,
	                    "AMD Instinct MI50 32GB, Tesla T4, Tesla V100-SXM2-32GB");
	assert_string_equal(f->rep.facts.driver, "nvidia 535.104.05, amd 6.3.6");

	/* A Cambricon board: the version its driver keeps in procfs. */
	make_pci(f->root, "sys/devices/pci0000:1a/0000:1a:00.0", "0000:1a:00.0", "cambricon");
	put(f->root, "proc/driver/cambricon/mlus/0000:1a:00.0/information",
	    "Device name: MLU370-X8\nDriver Version: v5.10.22\nMCU Version: v1.1.4\n");
	set_slot(&f->slots[0], 0, SLOT_VENDOR_CAMBRICON, "MLU370-X8", "0000:1a:00.0");
	f->ctx.nslots = 1;
	f->cfg.slots_expected = 1;
	expect(f, "slots", VERDICT_PASS, "driver 5.10.22");
	assert_string_equal(f->rep.facts.models, "MLU370-X8");
	assert_string_equal(f->rep.facts.driver, "5.10.22");
}

/* A required driver version, per vendor, from the configuration file. */
static void
load(struct fix *f, const char *doc)
{
	char err[256];

	if (config_load_buffer(&f->cfg, doc, strlen(doc), "t.json", err, sizeof(err)) != 0)
		fail_msg("%s", err);
}

static void
test_driver_required(void **state)
{
	struct fix *f = *state;
	const struct check_result *r;

	load(f, "{\"check\": {\"slots\": {\"driver_version\": {\"nvidia\": \">=550.54.15\"}}}}");
	r = expect(f, "slots", VERDICT_FAIL, NULL);
	assert_string_equal(r->reason, "nvidia driver 535.104.05 is below the required 550.54.15");
	load(f, "{\"check\": {\"slots\": {\"driver_version\": {\"nvidia\": \">= 535.104.5\"}}}}");
	expect(f, "slots", VERDICT_PASS, "driver 535.104.05");
	load(f, "{\"check\": {\"slots\": {\"driver_version\": {\"nvidia\": \"535.104.12\"}}}}");
	expect(f, "slots", VERDICT_FAIL, "nvidia driver 535.104.05 is not the required 535.104.12");
	/* The version the node reports is what is judged: here the module's. */
	rm(f->root, "proc/driver/nvidia");
	expect(f, "slots", VERDICT_PASS, "driver 535.104.12");
	rm(f->root, "sys/module/nvidia");
	expect(f, "slots", VERDICT_FAIL, "nvidia driver version unknown, 535.104.12 required");

	/* One file for a mixed cluster: a vendor without boards here is not judged. */
	config_free(&f->cfg);
	assert_int_equal(setup_config(f), 0);
	load(f, "{\"check\": {\"slots\": {\"driver_version\": "
	        "{\"amd\": \"6.3.6\", \"cambricon\": \">=5.10.22\"}}}}");
	expect(f, "slots", VERDICT_PASS, NULL);
}

static void
test_driver_required_config(void **state)
{
	static const struct {
		const char *doc, *msg;
	} bad[] = {
		{ "{\"check\": {\"slots\": {\"driver_version\": {\"nvidia\": \"latest\"}}}}",
		  "t.json: check.slots.driver_version.nvidia: expected a version such as "
		  "\"550.54.15\" or \">=550.54.15\", got \"latest\"" },
		{ "{\"check\": {\"slots\": {\"driver_version\": {\"nvidia\": \">=\"}}}}",
		  "t.json: check.slots.driver_version.nvidia: expected a version such as "
		  "\"550.54.15\" or \">=550.54.15\", got \">=\"" },
		{ "{\"check\": {\"slots\": {\"driver_version\": {\"nvidia\": 550}}}}",
		  "t.json: check.slots.driver_version.nvidia: expected a version such as "
		  "\"550.54.15\" or \">=550.54.15\", got 550" },
		{ "{\"check\": {\"slots\": {\"driver_version\": {\"intel\": \"1.0\"}}}}",
		  "t.json: check.slots.driver_version.intel: unknown key (valid: nvidia, amd, "
		  "cambricon)" },
		{ "{\"check\": {\"slots\": {\"driver_version\": \">=550\"}}}",
		  "t.json: check.slots.driver_version: expected an object, got \">=550\"" },
	};
	struct fix *f = *state;
	char err[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(config_load_buffer(&f->cfg, bad[i].doc, strlen(bad[i].doc), "t.json",
		                                    err, sizeof(err)), -EINVAL);
		assert_string_equal(err, bad[i].msg);
	}
}

/* --- memory ------------------------------------------------------------- */

static void
test_memory(void **state)
{
	struct fix *f = *state;
	const struct check_result *r;

	put(f->root, "sys/devices/system/node/node1/meminfo",
	    "Node 1 MemTotal:       131072000 kB\nNode 1 MemFree:          512000 kB\n");
	expect(f, "memory", VERDICT_FAIL, "NUMA node 1 has 500 MB free, below 1024 MB");
	f->cfg.mem_min_free_mb = 400;
	expect(f, "memory", VERDICT_PASS, "500 MB free");

	/* Off, the facts are still there. */
	f->cfg.mem_min_free_mb = 0;
	r = expect(f, "memory", VERDICT_PASS, NULL);
	assert_int_equal(cJSON_GetArraySize(detail(r, "nodes", NULL, NULL, NULL)), 2);
	assert_int_equal(detail(r, "nodes", "1", "free_mb", NULL)->valueint, 500);

	/* Without NUMA in the kernel: proc/meminfo is the one node. */
	f->cfg.mem_min_free_mb = 1024;
	rm(f->root, "sys/devices/system/node");
	r = expect(f, "memory", VERDICT_PASS, NULL);
	assert_string_equal(detail(r, "source", NULL, NULL, NULL)->valuestring, "proc/meminfo");
	assert_int_equal(detail(r, "nodes", "0", "free_mb", NULL)->valueint, 128000);

	/* Nothing readable: a verdict, never a crash. */
	put(f->root, "proc/meminfo", "garbage\n");
	expect(f, "memory", VERDICT_FAIL, "cannot read free memory");
	f->cfg.mem_min_free_mb = 0;
	expect(f, "memory", VERDICT_WARN, "cannot read free memory");
}

static void
test_memory_garbage_nodes(void **state)
{
	struct fix *f = *state;
	const struct check_result *r;

	put(f->root, "sys/devices/system/node/node0/meminfo", "abc\n");
	rm(f->root, "sys/devices/system/node/node1/meminfo");
	mkdirs(f->root, "sys/devices/system/node/node1/meminfo");
	r = expect(f, "memory", VERDICT_PASS, NULL);
	assert_string_equal(detail(r, "source", NULL, NULL, NULL)->valuestring, "proc/meminfo");
}

/* --- storage ------------------------------------------------------------ */

static void
set_path(struct fix *f, const char *path)
{
	free(f->cfg.paths[0].path);
	f->cfg.paths[0].path = strdup(path);
	assert_non_null(f->cfg.paths[0].path);
}

static void
test_storage_full(void **state)
{
	struct fix *f = *state;
	const struct check_result *r;
	struct statvfs sv;
	char want[700];

	f->cfg.paths[0].min_free_mb = 1LL << 40;
	snprintf(want, sizeof(want), "%s has ", f->data);
	r = expect(f, "storage", VERDICT_FAIL, want);
	assert_non_null(strstr(r->reason, "MB free, below 1099511627776 MB"));
	assert_true(detail(r, "paths", "0", "free_mb", NULL)->valuedouble > 0);

	f->cfg.paths[0].min_free_mb = 1;
	f->cfg.paths[0].min_free_inodes = 1LL << 50;
	assert_int_equal(statvfs(f->data, &sv), 0);
	if (sv.f_files > 0) {
		expect(f, "storage", VERDICT_FAIL, "free inodes, below 1125899906842624");
	} else {
		/* This filesystem has no inode count: nothing to judge. */
		r = expect(f, "storage", VERDICT_PASS, NULL);
		assert_true(cJSON_IsNull(detail(r, "paths", "0", "free_inodes", NULL)));
	}
}

static void
test_storage_missing(void **state)
{
	struct fix *f = *state;
	char path[700], want[720];

	snprintf(path, sizeof(path), "%s/nope", f->data);
	set_path(f, path);
	snprintf(want, sizeof(want), "%s is missing", path);
	expect(f, "storage", VERDICT_FAIL, want);

	put(f->data, "file", "x\n");
	snprintf(path, sizeof(path), "%s/file", f->data);
	set_path(f, path);
	snprintf(want, sizeof(want), "%s is not a directory", path);
	expect(f, "storage", VERDICT_FAIL, want);
}

static void
test_storage_not_writable(void **state)
{
	struct fix *f = *state;
	const struct check_result *r;

	/* procfs refuses new files to everyone, root included. */
	set_path(f, "/proc");
	f->cfg.paths[0].min_free_mb = 0;
	f->cfg.paths[0].min_free_inodes = 0;
	r = expect(f, "storage", VERDICT_FAIL, "/proc is not writable (");
	assert_true(cJSON_IsFalse(detail(r, "paths", "0", "writable", NULL)));
	f->cfg.paths[0].writable = false;
	expect(f, "storage", VERDICT_PASS, NULL);
}

static int
prep_ro_mount(struct fix *f)
{
	char ro[700];

	snprintf(ro, sizeof(ro), "%s/ro", f->data);
	if (unshare(CLONE_NEWNS) < 0)
		return 1;
	/* Private, so the mount dies with this namespace and the host never sees it. */
	if (mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) < 0)
		return 1;
	if (mount("tmpfs", ro, "tmpfs", MS_RDONLY, "size=1m") < 0)
		return 1;
	return 0;
}

static void
test_storage_read_only(void **state)
{
	struct fix *f = *state;
	char out[4096], ro[700], want[800];
	bool skipped;

	snprintf(ro, sizeof(ro), "%s/ro", f->data);
	assert_int_equal(mkdir(ro, 0755), 0);
	set_path(f, ro);
	f->cfg.paths[0].min_free_inodes = 0;
	f->cfg.paths[0].min_free_mb = 0;
	run_in_child(f, prep_ro_mount, out, sizeof(out), &skipped);
	if (skipped) {
		if (geteuid() == 0)
			fail_msg("root could not mount a read-only tmpfs in a mount namespace");
		skip();  /* unprivileged: the /proc case above still covers it */
	}
	snprintf(want, sizeof(want), "storage fail %s is not writable (Read-only file system)", ro);
	if (!strstr(out, want))
		fail_msg("wanted \"%s\" in:\n%s", want, out);
}

static void
test_storage_timeout(void **state)
{
	struct fix *f = *state;
	char fifo[700], want[760];
	double t0, elapsed;
	const struct check_result *r;

	/* Opening a FIFO blocks until a writer comes, as a dead NFS server would. */
	snprintf(fifo, sizeof(fifo), "%s/fifo", f->data);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	set_path(f, fifo);
	f->cfg.check_timeout_s = 1;
	snprintf(want, sizeof(want), "%s timed out after 1 s", fifo);
	t0 = now();
	r = expect(f, "storage", VERDICT_FAIL, want);
	elapsed = now() - t0;
	assert_true(elapsed >= 0.9);
	assert_true(elapsed < 2.0);
	assert_true(cJSON_IsTrue(detail(r, "paths", "0", "timed_out", NULL)));
}

/*
 * Seven stale mounts cost one timeout, not seven (slurmd kills a
 * HealthCheckProgram after 60 s), and the reason names the paths that
 * timed out: every one that fits, then how many more.
 */
static void
test_storage_many_blocked(void **state)
{
	struct fix *f = *state;
	const struct check_result *r;
	char fifo[7][700];
	double t0, elapsed;
	int named = 0, more = 0;
	const char *m;

	f->cfg.paths = realloc(f->cfg.paths, 8 * sizeof(*f->cfg.paths));
	assert_non_null(f->cfg.paths);
	for (int i = 0; i < 7; i++) {
		snprintf(fifo[i], sizeof(fifo[i]), "%s/s%d", f->data, i);
		assert_int_equal(mkfifo(fifo[i], 0600), 0);
		f->cfg.paths[f->cfg.npaths] = f->cfg.paths[0];
		f->cfg.paths[f->cfg.npaths].path = strdup(fifo[i]);
		assert_non_null(f->cfg.paths[f->cfg.npaths].path);
		f->cfg.npaths++;
	}
	f->cfg.check_timeout_s = 1;
	t0 = now();
	r = expect(f, "storage", VERDICT_FAIL, "timed out after 1 s");
	elapsed = now() - t0;
	print_message("  check with 7 blocked paths, 1 s timeout: %.3f s\n", elapsed);
	assert_true(elapsed >= 0.9);
	assert_true(elapsed < 2.0);
	assert_true(cJSON_IsFalse(detail(r, "paths", "0", "timed_out", NULL)));
	for (int i = 0; i < 7; i++) {
		char k[8];

		snprintf(k, sizeof(k), "%d", i + 1);
		assert_true(cJSON_IsTrue(detail(r, "paths", k, "timed_out", NULL)));
		named += strstr(r->reason, fifo[i]) != NULL;
	}
	/* The first one always; the rest as the line allows. */
	assert_non_null(strstr(r->reason, fifo[0]));
	m = strstr(r->reason, " and ");
	if (m)
		assert_int_equal(sscanf(m, " and %d more", &more), 1);
	assert_int_equal(named + more, 7);
	assert_int_equal(cJSON_GetArraySize(detail(r, "problems", NULL, NULL, NULL)), 1);
	reap_orphans();
}

static void
test_shm(void **state)
{
	struct fix *f = *state;
	const struct check_result *r;

	r = expect(f, "storage", VERDICT_PASS, NULL);
	assert_true(detail(r, "shm", "total_mb", NULL, NULL)->valuedouble > 0);
	f->cfg.shm_min_mb = 1LL << 40;
	expect(f, "storage", VERDICT_FAIL, "/dev/shm is ");
	expect(f, "storage", VERDICT_FAIL, "MB, below 1099511627776 MB");

	rm(f->root, "dev/shm");
	expect(f, "storage", VERDICT_FAIL, "/dev/shm cannot be examined");
	f->cfg.shm_min_mb = 0;
	r = expect(f, "storage", VERDICT_PASS, NULL);
	assert_true(cJSON_IsNull(detail(r, "shm", "total_mb", NULL, NULL)));
}

/* --- limits ------------------------------------------------------------- */

static int
prep_low_memlock(struct fix *f)
{
	struct rlimit rl;

	f->cfg.memlock_unlimited = true;
	if (getrlimit(RLIMIT_MEMLOCK, &rl) < 0)
		return 1;
	rl.rlim_cur = 64 * 1024;
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < rl.rlim_cur)
		rl.rlim_cur = rl.rlim_max;
	return setrlimit(RLIMIT_MEMLOCK, &rl) < 0;
}

static int
prep_unlimited_memlock(struct fix *f)
{
	struct rlimit rl = { RLIM_INFINITY, RLIM_INFINITY };

	f->cfg.memlock_unlimited = true;
	return setrlimit(RLIMIT_MEMLOCK, &rl) < 0;
}

static int
prep_low_nofile(struct fix *f)
{
	struct rlimit rl;

	f->cfg.nofile_min = 1024;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return 1;
	rl.rlim_cur = 64;
	return setrlimit(RLIMIT_NOFILE, &rl) < 0;
}

static void
test_limits(void **state)
{
	struct fix *f = *state;
	char out[4096];
	bool skipped;

	run_in_child(f, prep_low_memlock, out, sizeof(out), &skipped);
	assert_false(skipped);
	if (!strstr(out, "limits fail RLIMIT_MEMLOCK is 64 KB, RDMA needs unlimited"))
		fail_msg("memlock: %s", out);

	run_in_child(f, prep_low_nofile, out, sizeof(out), &skipped);
	assert_false(skipped);
	if (!strstr(out, "limits fail RLIMIT_NOFILE is 64, below 1024"))
		fail_msg("nofile: %s", out);

	/* Raising the hard limit takes CAP_SYS_RESOURCE, which containers
	 * often withhold even from root: only then is this part left out. */
	run_in_child(f, prep_unlimited_memlock, out, sizeof(out), &skipped);
	if (!skipped && !strstr(out, "limits pass memlock unlimited"))
		fail_msg("unlimited: %s", out);
}

/* --- nics --------------------------------------------------------------- */

static void
test_nic_missing(void **state)
{
	struct fix *f = *state;
	const struct check_result *r;

	assert_int_equal(config_list_add(&f->cfg.nics, &f->cfg.nnics, "eth9"), 0);
	r = expect(f, "nics", VERDICT_FAIL, NULL);
	assert_string_equal(r->reason, "eth9 is missing");
	assert_true(cJSON_IsFalse(detail(r, "interfaces", "1", "present", NULL)));
}

static void
test_nic_down(void **state)
{
	struct fix *f = *state;

	/* Down: the kernel will not even read the carrier. */
	put(f->root, "sys/class/net/eth0/operstate", "down\n");
	rm(f->root, "sys/class/net/eth0/carrier");
	expect(f, "nics", VERDICT_FAIL, "eth0 is down (operstate down, no carrier)");

	put(f->root, "sys/class/net/eth0/operstate", "up\n");
	put(f->root, "sys/class/net/eth0/carrier", "0\n");
	expect(f, "nics", VERDICT_FAIL, "eth0 has no carrier (operstate up)");

	/* "unknown" with a carrier is how some drivers say up (lo, tun). */
	assert_int_equal(config_list_add(&f->cfg.nics, &f->cfg.nnics, "lo"), 0);
	put(f->root, "sys/class/net/eth0/carrier", "1\n");
	f->cfg.nic_min_speed_mbps = 0;
	expect(f, "nics", VERDICT_PASS, "2 interfaces up");
}

static void
test_nic_speed(void **state)
{
	struct fix *f = *state;

	put(f->root, "sys/class/net/eth0/speed", "10000\n");
	expect(f, "nics", VERDICT_FAIL, "eth0 runs at 10000 Mb/s, below 25000 Mb/s");
	put(f->root, "sys/class/net/eth0/speed", "-1\n");
	expect(f, "nics", VERDICT_WARN, "eth0 speed is unknown (minimum 25000 Mb/s)");
	put(f->root, "sys/class/net/eth0/speed", "");
	expect(f, "nics", VERDICT_WARN, "eth0 speed is unknown");
	f->cfg.nic_min_speed_mbps = 0;
	expect(f, "nics", VERDICT_PASS, NULL);
}

static void
test_ib_down(void **state)
{
	struct fix *f = *state;

	put(f->root, PORT1 "/state", "1: DOWN\n");
	put(f->root, PORT1 "/phys_state", "3: Disabled\n");
	expect(f, "nics", VERDICT_FAIL,
	       "mlx5_0 port 1 is not active (state DOWN, phys_state Disabled)");

	put(f->root, PORT1 "/state", "2: INIT\n");
	put(f->root, PORT1 "/phys_state", "2: Polling\n");
	expect(f, "nics", VERDICT_FAIL, "(state INIT, phys_state Polling)");

	/* Physical link up, but the subnet manager has not activated it. */
	put(f->root, PORT1 "/phys_state", "5: LinkUp\n");
	expect(f, "nics", VERDICT_FAIL, "(state INIT, phys_state LinkUp)");
}

static void
test_ib_rate(void **state)
{
	struct fix *f = *state;
	const struct check_result *r;

	put(f->root, PORT1 "/rate", "56 Gb/sec (4X FDR)\n");
	expect(f, "nics", VERDICT_FAIL, "mlx5_0 port 1 runs at 56 Gb/sec (4X FDR), below 100 Gb/s");
	put(f->root, PORT1 "/rate", "garbage\n");
	expect(f, "nics", VERDICT_WARN, "mlx5_0 port 1 rate is unknown");
	f->cfg.ib_min_rate_gbps = 0;
	r = expect(f, "nics", VERDICT_PASS, "1 InfiniBand port active");
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(detail(r, "infiniband", "0", "ports", "0"),
	                                             "rate_gbps")));
}

static void
test_ib_devices(void **state)
{
	struct fix *f = *state;
	const struct check_result *r;

	/* A device nobody listed with a port down: a warning only. */
	put(f->root, "sys/class/infiniband/mlx5_1/ports/1/state", "1: DOWN\n");
	put(f->root, "sys/class/infiniband/mlx5_1/ports/1/phys_state", "3: Disabled\n");
	put(f->root, "sys/class/infiniband/mlx5_1/ports/1/counters/symbol_error", "12\n");
	r = expect(f, "nics", VERDICT_WARN, "mlx5_1 port 1 is not active");
	assert_true(cJSON_IsFalse(detail(r, "infiniband", "1", "listed", NULL)));
	assert_int_equal(cJSON_GetObjectItem(detail(r, "infiniband", "1", "ports", "0"),
	                                     "symbol_error")->valueint, 12);

	/* Listed, it fails; a listed device that is absent fails too. */
	assert_int_equal(config_list_add(&f->cfg.ib_devices, &f->cfg.nib_devices, "mlx5_1"), 0);
	expect(f, "nics", VERDICT_FAIL, "mlx5_1 port 1 is not active");
	assert_int_equal(config_list_add(&f->cfg.ib_devices, &f->cfg.nib_devices, "mlx5_9"), 0);
	r = expect(f, "nics", VERDICT_FAIL, "(+1 more)");
	{
		const cJSON *p;
		bool seen = false;

		cJSON_ArrayForEach(p, detail(r, "problems", NULL, NULL, NULL))
			seen |= strcmp(p->valuestring, "InfiniBand device mlx5_9 is missing") == 0;
		assert_true(seen);
	}
}

/* --- unreadable and garbage --------------------------------------------- */

static void
test_garbage(void **state)
{
	struct fix *f = *state;
	const struct check_result *r;
	char *big;

	/* A directory where the speed should be: unknown, not degraded. */
	rm(f->root, DEV0 "/current_link_speed");
	mkdirs(f->root, DEV0 "/current_link_speed");
	put(f->root, DEV0 "/aer_dev_fatal", "abc\n");
	put(f->root, DEV1 "/current_link_width", "");
	r = expect(f, "slots", VERDICT_PASS, NULL);
	assert_true(cJSON_IsNull(detail(r, "slots", "0", "link", "current_speed")));
	assert_true(cJSON_IsNull(detail(r, "slots", "0", "aer", "fatal")));
	assert_true(cJSON_IsNull(detail(r, "slots", "1", "link", "current_width")));

	/* Dangling links where attributes should be: unknown. */
	rm(f->root, DEV1 "/max_link_speed");
	link_at(f->root, DEV1 "/max_link_speed", "/nonexistent/max_link_speed");
	rm(f->root, DEV1 "/aer_dev_nonfatal");
	link_at(f->root, DEV1 "/aer_dev_nonfatal", "nowhere");
	r = expect(f, "slots", VERDICT_PASS, NULL);
	assert_true(cJSON_IsNull(detail(r, "slots", "1", "link", "max_speed")));
	assert_true(cJSON_IsNull(detail(r, "slots", "1", "aer", "nonfatal")));

	/* A driver "link" that is a plain directory binds nothing. */
	rm(f->root, DEV1 "/driver");
	mkdirs(f->root, DEV1 "/driver");
	expect(f, "slots", VERDICT_FAIL, "slot 1 (" BUS1 ") has no driver bound");

	/* A huge operstate, an empty IB state. */
	big = malloc(1 << 20);
	assert_non_null(big);
	memset(big, 'u', (1 << 20) - 1);
	big[(1 << 20) - 1] = '\0';
	put(f->root, "sys/class/net/eth0/operstate", big);
	free(big);
	expect(f, "nics", VERDICT_FAIL, "eth0 is down (operstate unreadable, carrier)");
	put(f->root, "sys/class/net/eth0/operstate", "up\n");
	put(f->root, PORT1 "/state", "");
	expect(f, "nics", VERDICT_FAIL, "mlx5_0 port 1 is not active (state unreadable");
	rm(f->root, "sys/class/infiniband/mlx5_0/ports");
	expect(f, "nics", VERDICT_FAIL, "InfiniBand device mlx5_0 has no ports");
}

/* --- running ------------------------------------------------------------ */

static void
test_stop_at_first_failure(void **state)
{
	struct fix *f = *state;

	f->cfg.slots_expected = 8;
	f->ctx.all = false;
	run(f);
	assert_int_equal(f->rep.n, 1);
	assert_string_equal(check_report_first(&f->rep, VERDICT_WARN)->name, "slots");
	f->ctx.all = true;
	run(f);
	assert_int_equal(f->rep.n, 6);

	/* Warnings do not stop it; the first failure does. */
	f->cfg.slots_expected = 2;
	put(f->root, DEV0 "/current_link_width", "4\n");
	f->cfg.mem_min_free_mb = 1LL << 40;
	f->ctx.all = false;
	run(f);
	assert_int_equal(f->rep.n, 3);
	assert_int_equal(f->rep.results[0].verdict, VERDICT_WARN);
	assert_int_equal(f->rep.results[1].verdict, VERDICT_PASS);  /* boards: no library */
	assert_int_equal(f->rep.results[2].verdict, VERDICT_FAIL);
	assert_int_equal(check_report_verdict(&f->rep), VERDICT_FAIL);
	assert_string_equal(check_report_first(&f->rep, VERDICT_WARN)->name, "memory");
	assert_string_equal(check_report_first(&f->rep, VERDICT_FAIL)->name, "memory");
}

static void
test_first_and_verdict(void **state)
{
	struct check_result res[3];
	struct check_report r = { res, 3, { 0, "", "" } };

	(void)state;
	memset(res, 0, sizeof(res));
	strcpy(res[0].name, "a");
	strcpy(res[1].name, "b");
	strcpy(res[2].name, "c");
	res[1].verdict = VERDICT_WARN;
	res[2].verdict = VERDICT_WARN;
	assert_int_equal(check_report_verdict(&r), VERDICT_WARN);
	assert_ptr_equal(check_report_first(&r, VERDICT_WARN), &res[1]);
	assert_null(check_report_first(&r, VERDICT_FAIL));
	res[2].verdict = VERDICT_FAIL;
	assert_ptr_equal(check_report_first(&r, VERDICT_WARN), &res[2]);
	assert_ptr_equal(check_report_first(&r, VERDICT_FAIL), &res[2]);
	r.n = 0;
	assert_int_equal(check_report_verdict(&r), VERDICT_PASS);
	assert_null(check_report_first(&r, VERDICT_PASS));
}

static void
test_json_round_trip(void **state)
{
	struct fix *f = *state;
	struct check_report back;
	cJSON *j1, *j2;

	put(f->root, DEV1 "/current_link_width", "8\n");
	put(f->root, "sys/class/net/eth0/speed", "-1\n");
	run(f);
	j1 = check_report_to_json(&f->rep);
	assert_non_null(j1);
	assert_int_equal(check_report_from_json(j1, &back), 0);
	assert_int_equal(back.n, f->rep.n);
	assert_int_equal(back.facts.nslots, 2);
	assert_string_equal(back.facts.models, f->rep.facts.models);
	assert_string_equal(back.facts.driver, "535.104.05");
	for (size_t i = 0; i < back.n; i++) {
		assert_string_equal(back.results[i].name, f->rep.results[i].name);
		assert_int_equal(back.results[i].verdict, f->rep.results[i].verdict);
		assert_string_equal(back.results[i].reason, f->rep.results[i].reason);
		assert_true(cJSON_Compare(back.results[i].details, f->rep.results[i].details, 1));
	}
	j2 = check_report_to_json(&back);
	assert_non_null(j2);
	assert_true(cJSON_Compare(j1, j2, 1));
	{
		char *s1 = cJSON_PrintUnformatted(j1), *s2 = cJSON_PrintUnformatted(j2);

		assert_non_null(s1);
		assert_non_null(s2);
		assert_string_equal(s1, s2);
		assert_non_null(strstr(s1, "\"verdict\":\"warn\""));
		free(s1);
		free(s2);
	}
	check_report_free(&back);
	cJSON_Delete(j2);
	cJSON_Delete(j1);
}

static void
test_json_invalid(void **state)
{
	static const char *const bad[] = {
		"[]",
		"{}",
		"{\"facts\": {\"nslots\": 1, \"models\": \"\", \"driver\": \"\"}}",
		"{\"facts\": {\"nslots\": -1, \"models\": \"\", \"driver\": \"\"}, \"checks\": []}",
		"{\"facts\": {\"nslots\": 1.5, \"models\": \"\", \"driver\": \"\"}, \"checks\": []}",
		"{\"facts\": {\"nslots\": 1, \"models\": 3, \"driver\": \"\"}, \"checks\": []}",
		"{\"facts\": {\"nslots\": 1, \"models\": \"\", \"driver\": \"\"}, \"checks\": [1]}",
		"{\"facts\": {\"nslots\": 1, \"models\": \"\", \"driver\": \"\"}, \"checks\": "
		"[{\"name\": \"slots\", \"verdict\": \"bogus\", \"reason\": \"\"}]}",
		"{\"facts\": {\"nslots\": 1, \"models\": \"\", \"driver\": \"\"}, \"checks\": "
		"[{\"name\": \"slots\", \"verdict\": \"pass\", \"reason\": \"\", \"details\": []}]}",
		"{\"facts\": {\"nslots\": 1, \"models\": \"\", \"driver\": \"\"}, \"checks\": "
		"[{\"name\": \"a-name-that-is-far-too-long-for-the-struct\", \"verdict\": \"pass\", "
		"\"reason\": \"\"}]}",
	};
	struct check_report r;
	cJSON *j;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		j = cJSON_Parse(bad[i]);
		assert_non_null(j);
		if (check_report_from_json(j, &r) != -EINVAL)
			fail_msg("accepted: %s", bad[i]);
		assert_int_equal(r.n, 0);
		assert_null(r.results);
		cJSON_Delete(j);
	}
	assert_int_equal(check_report_from_json(NULL, &r), -EINVAL);

	/* details may be left out; it comes back as an empty object. */
	j = cJSON_Parse("{\"facts\": {\"nslots\": 0, \"models\": \"\", \"driver\": \"\"}, "
	                "\"checks\": [{\"name\": \"limits\", \"verdict\": \"fail\", "
	                "\"reason\": \"RLIMIT_NOFILE is 64, below 1024\"}]}");
	assert_non_null(j);
	assert_int_equal(check_report_from_json(j, &r), 0);
	assert_int_equal(r.n, 1);
	assert_int_equal(r.results[0].verdict, VERDICT_FAIL);
	assert_true(cJSON_IsObject(r.results[0].details));
	check_report_free(&r);
	check_report_free(&r);  /* twice is harmless */
	cJSON_Delete(j);
}

static void
test_bad_root(void **state)
{
	struct fix *f = *state;
	char path[700];

	free(f->cfg.sysfs_root);
	f->cfg.sysfs_root = strdup("/nonexistent/vigil-root");
	assert_int_equal(check_run(&f->ctx, &f->rep), -ENOENT);
	assert_int_equal(f->rep.n, 0);
	assert_null(f->rep.results);

	snprintf(path, sizeof(path), "%s/proc/meminfo", f->root);
	free(f->cfg.sysfs_root);
	f->cfg.sysfs_root = strdup(path);
	assert_int_equal(check_run(&f->ctx, &f->rep), -ENOTDIR);
	assert_int_equal(f->rep.n, 0);
}

/* The live system: whatever it holds, every check gives a verdict. */
static void
test_live_root(void **state)
{
	struct check_report rep;
	struct check_ctx ctx;
	struct config cfg;
	struct slot slot;

	(void)state;
	config_init(&cfg);
	assert_int_equal(config_list_add(&cfg.nics, &cfg.nnics, "lo"), 0);
	cfg.paths = calloc(1, sizeof(*cfg.paths));
	assert_non_null(cfg.paths);
	cfg.npaths = 1;
	cfg.paths[0].path = strdup("/tmp");
	assert_non_null(cfg.paths[0].path);
	cfg.paths[0].writable = true;
	memset(&ctx, 0, sizeof(ctx));
	ctx.cfg = &cfg;
	ctx.all = true;

	/* A real PCI device posing as an NVIDIA board: the slots check asks
	 * NVML (in a child) and says what it answered, or why not. */
	{
		DIR *d = opendir("/sys/bus/pci/devices");
		struct dirent *de;

		while (d && (de = readdir(d))) {
			if (de->d_name[0] == '.')
				continue;
			set_slot(&slot, 0, SLOT_VENDOR_NVIDIA, "probe", de->d_name);
			ctx.slots = &slot;
			ctx.nslots = 1;
			break;
		}
		if (d)
			closedir(d);
		cfg.driver_required = false;
	}
	assert_int_equal(check_run(&ctx, &rep), 0);
	assert_int_equal(rep.n, 6);
	if (ctx.nslots) {
		const cJSON *nvml = cJSON_GetObjectItem(rep.results[0].details, "nvml");

		assert_true(cJSON_IsObject(nvml));
		assert_true(cJSON_IsBool(cJSON_GetObjectItem(nvml, "available")));
	}
	for (size_t i = 0; i < rep.n; i++) {
		assert_true(cJSON_IsObject(rep.results[i].details));
		assert_true(rep.results[i].reason[0] != '\0');
	}
	/* libnuma (or sysfs) found at least one node with memory. */
	assert_int_equal(rep.results[2].verdict, VERDICT_PASS);
	assert_true(cJSON_GetArraySize(cJSON_GetObjectItem(rep.results[2].details, "nodes")) > 0);
	check_report_free(&rep);
	config_free(&cfg);
}

/* The vendors' libraries: absent is -ENOENT with a reason, present answers. */
static void
check_vendor(int rc, const struct vendor_info *vi, const char *library)
{
	void *lib = dlopen(library, RTLD_NOW | RTLD_LOCAL);

	assert_string_equal(vi->library, library);
	if (!lib) {
		assert_int_equal(rc, -ENOENT);
		assert_int_equal(vi->count, -1);
		assert_string_equal(vi->version, "");
		assert_non_null(strstr(vi->error, library));
		return;
	}
	(void)dlclose(lib);
	if (rc == 0) {
		assert_true(vi->count >= 0);
		assert_string_equal(vi->error, "");
	} else {
		assert_true(rc == -EIO || rc == -ENOSYS);
		assert_true(vi->error[0] != '\0');
	}
}

static void
test_vendor_libraries(void **state)
{
	struct vendor_info vi;

	(void)state;
	check_vendor(vendor_nvml_query(&vi), &vi, "libnvidia-ml.so.1");
	check_vendor(vendor_cndev_query(&vi), &vi, "libcndev.so");
}

int
main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_healthy),
		T(test_slot_missing),
		T(test_slot_dangling),
		T(test_slot_count),
		T(test_slot_driver),
		T(test_link_degraded),
		T(test_aer),
		T(test_driver_versions),
		T(test_facts),
		T(test_driver_required),
		T(test_driver_required_config),
		T(test_memory),
		T(test_memory_garbage_nodes),
		T(test_storage_full),
		T(test_storage_missing),
		T(test_storage_not_writable),
		T(test_storage_read_only),
		T(test_storage_timeout),
		T(test_storage_many_blocked),
		T(test_shm),
		T(test_limits),
		T(test_nic_missing),
		T(test_nic_down),
		T(test_nic_speed),
		T(test_ib_down),
		T(test_ib_rate),
		T(test_ib_devices),
		T(test_garbage),
		T(test_stop_at_first_failure),
		T(test_first_and_verdict),
		T(test_json_round_trip),
		T(test_json_invalid),
		T(test_bad_root),
		T(test_live_root),
		T(test_vendor_libraries),
	};
#undef T

	/* Probes killed after their helper is gone come here, not to init. */
	(void)prctl(PR_SET_CHILD_SUBREAPER, 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
