/*
 * test_facts.c - gathering: what facts_gather() and its pieces find in a
 * sysfs tree built under mkdtemp(), in real directories and FIFOs (a FIFO
 * blocks an open for reading the way a dead NFS server does), with the
 * errno of what could not be read kept as a fact.
 */
#include "autoconf.h"

#include "../vigil_test.h"
#include "../fstree.h"
#include "../proc.h"
#include "../scratch.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check/facts.h"
#include "proc/stuck.h"
#include "conf/config.h"
#include "sys/hwmon.h"

#define BUS0 "0000:3b:00.0"
#define BUS1 "0000:5e:00.0"
#define DEV0 "sys/devices/pci0000:3a/" BUS0
#define DEV1 "sys/devices/pci0000:5d/" BUS1

struct fix {
	char root[512];
	struct hwmon *hw;
	struct config cfg;
	struct facts facts;
};

static void
put_port(const char *root, const char *dev, unsigned port, const char *state)
{
	char rel[256];

	snprintf(rel, sizeof(rel), "sys/class/infiniband/%s/ports/%u/state", dev, port);
	put(root, rel, state);
	snprintf(rel, sizeof(rel), "sys/class/infiniband/%s/ports/%u/phys_state", dev, port);
	put(root, rel, "5: LinkUp\n");
	snprintf(rel, sizeof(rel), "sys/class/infiniband/%s/ports/%u/counters/link_downed", dev, port);
	put(root, rel, "3\n");
}

static int
setup(void **state)
{
	struct fix *f = calloc(1, sizeof(*f));

	if (!f || make_scratch_dir(f->root, sizeof(f->root), "facts") < 0)
		return -1;
	put_pci_link(f->root, DEV0, BUS0);
	put_pci_link(f->root, DEV1, BUS1);
	put(f->root, "sys/module/amdgpu/version", "6.3.6\n");
	put(f->root, "proc/driver/nvidia/version",
	    "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 2023\n");
	put(f->root, "proc/meminfo", "MemTotal:       262144000 kB\nMemFree:        131072000 kB\n");
	put(f->root, "sys/devices/system/node/node0/meminfo",
	    "Node 0 MemTotal: 1024000 kB\nNode 0 MemFree: 512000 kB\n");
	put(f->root, "sys/class/net/eth0/operstate", "up\n");
	put(f->root, "sys/class/net/eth0/carrier", "1\n");
	put_port(f->root, "mlx5_0", 1, "4: ACTIVE\n");
	put_port(f->root, "mlx5_1", 1, "1: DOWN\n");
	put_port(f->root, "mlx5_1", 2, "4: ACTIVE\n");
	mkdirs(f->root, "dev/shm");
	config_init(&f->cfg);
	free(f->cfg.sysfs_root);
	f->cfg.sysfs_root = strdup(f->root);
	f->cfg.check_timeout_s = 5;
	if (!f->cfg.sysfs_root || hwmon_open(f->root, &f->hw) < 0)
		return -1;
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fix *f = *state;

	facts_free(&f->facts);
	hwmon_free(f->hw);
	config_free(&f->cfg);
	rm_rf(f->root);
	free(f);
	return 0;
}

static void
set_slot(struct slot *s, int index, enum slot_vendor vendor, const char *bus)
{
	memset(s, 0, sizeof(*s));
	s->index = index;
	s->vendor = vendor;
	snprintf(s->model, sizeof(s->model), "model %d", index);
	snprintf(s->pci_bus_id, sizeof(s->pci_bus_id), "%s", bus);
}

static void
add_path(struct config *cfg, const char *path, bool writable)
{
	struct config_path *v = realloc(cfg->paths, (cfg->npaths + 1) * sizeof(*v));

	assert_non_null(v);
	cfg->paths = v;
	memset(&v[cfg->npaths], 0, sizeof(v[0]));
	v[cfg->npaths].path = strdup(path);
	assert_non_null(v[cfg->npaths].path);
	v[cfg->npaths].writable = writable;
	cfg->npaths++;
}

/* Slots, and per vendor the count and the driver's version. */
static void
test_slots_and_drivers(void **state)
{
	struct fix *f = *state;
	struct slot slots[3];

	set_slot(&slots[0], 0, SLOT_VENDOR_NVIDIA, BUS0);
	set_slot(&slots[1], 1, SLOT_VENDOR_AMD, BUS1);
	set_slot(&slots[2], 2, SLOT_VENDOR_NVIDIA, "0000:af:00.0");  /* off the bus */
	assert_int_equal(facts_gather(f->hw, &f->cfg, slots, 3, &f->facts), 0);
	assert_int_equal(f->facts.nslots, 3);
	assert_int_equal(f->facts.slots[0].rc, 0);
	assert_string_equal(f->facts.slots[1].bus_id, BUS1);
	assert_string_equal(f->facts.slots[1].model, "model 1");
	assert_int_equal(f->facts.slots[2].rc, -ENOENT);
	assert_int_equal(f->facts.drivers[SLOT_VENDOR_NVIDIA].nslots, 2);
	assert_string_equal(f->facts.drivers[SLOT_VENDOR_NVIDIA].version, "535.104.05");
	assert_int_equal(f->facts.drivers[SLOT_VENDOR_AMD].nslots, 1);
	assert_string_equal(f->facts.drivers[SLOT_VENDOR_AMD].version, "6.3.6");
	assert_int_equal(f->facts.drivers[SLOT_VENDOR_CAMBRICON].nslots, 0);
	/* A tree is not the live system: no library is asked. */
	assert_false(f->facts.nvml.asked);
	assert_false(f->facts.cndev.asked);
	assert_true(f->facts.timeout_s == 5);
	/* The rest is there too. */
	assert_int_equal(f->facts.memory.rc, 0);
	assert_int_equal(f->facts.shm.rc, 0);
	assert_int_equal(f->facts.limits.err, 0);
}

/* A board hwloc left unnamed (newer than the host's pci.ids) is named by
 * its driver's information file; a named one keeps hwloc's name. */
static void
test_slot_model_from_driver(void **state)
{
	struct fix *f = *state;
	struct slot slots[2];

	set_slot(&slots[0], 0, SLOT_VENDOR_NVIDIA, BUS0);
	set_slot(&slots[1], 1, SLOT_VENDOR_AMD, BUS1);
	slots[0].model[0] = slots[1].model[0] = '\0';
	put(f->root, "proc/driver/nvidia/gpus/" BUS0 "/information",
	    "Model: \t\t NVIDIA H200\nIRQ:   \t\t 33\n");
	assert_int_equal(facts_gather(f->hw, &f->cfg, slots, 2, &f->facts), 0);
	assert_string_equal(f->facts.slots[0].model, "NVIDIA H200");
	assert_string_equal(f->facts.slots[1].model, "");  /* amdgpu keeps no such file */
	facts_free(&f->facts);

	set_slot(&slots[0], 0, SLOT_VENDOR_NVIDIA, BUS0);
	assert_int_equal(facts_gather(f->hw, &f->cfg, slots, 1, &f->facts), 0);
	assert_string_equal(f->facts.slots[0].model, "model 0");
}

/* Listed devices first, in the configuration's order, then the others present. */
static void
test_ib(void **state)
{
	struct fix *f = *state;
	char d1[] = "mlx5_1", d9[] = "mlx5_9";
	char *list[] = { d1, d9 };
	struct facts_ib *ib = NULL;
	size_t n = 0;

	assert_int_equal(facts_gather_ib(f->hw, list, 2, true, &ib, &n), 0);
	assert_int_equal(n, 3);
	assert_string_equal(ib[0].name, "mlx5_1");
	assert_true(ib[0].listed);
	assert_int_equal(ib[0].rc, 0);
	assert_int_equal(ib[0].nports, 2);
	assert_int_equal(ib[0].ports[0].state, 1);
	assert_int_equal(ib[0].ports[1].state, 4);
	assert_int_equal(ib[0].ports[0].link_downed, 3);
	assert_string_equal(ib[1].name, "mlx5_9");
	assert_true(ib[1].listed);
	assert_int_equal(ib[1].rc, -ENOENT);
	assert_string_equal(ib[2].name, "mlx5_0");
	assert_false(ib[2].listed);
	facts_ib_free(ib, n);

	assert_int_equal(facts_gather_ib(f->hw, list, 2, false, &ib, &n), 0);
	assert_int_equal(n, 2);
	facts_ib_free(ib, n);
	/* No InfiniBand at all: nothing, and no error. */
	rm(f->root, "sys/class/infiniband");
	assert_int_equal(facts_gather_ib(f->hw, NULL, 0, true, &ib, &n), 0);
	assert_int_equal(n, 0);
	assert_null(ib);
}

static void
test_nics(void **state)
{
	struct fix *f = *state;
	char longname[400], eth0[] = "eth0", eth9[] = "eth9";
	char *names[] = { eth0, eth9, longname };
	struct facts_nic *nics = NULL;

	memset(longname, 'e', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	assert_int_equal(facts_gather_nics(f->hw, names, 3, &nics), 0);
	assert_int_equal(nics[0].rc, 0);
	assert_string_equal(nics[0].nic.operstate, "up");
	assert_int_equal(nics[0].nic.carrier, 1);
	assert_int_equal(nics[1].rc, -ENOENT);
	assert_string_equal(nics[1].name, "eth9");
	/* No interface has such a name; it is kept cut, for the message. */
	assert_int_equal(nics[2].rc, -ENAMETOOLONG);
	assert_int_equal(strlen(nics[2].name), sizeof(nics[2].name) - 1);
	free(nics);
}

static void
test_memory(void **state)
{
	struct fix *f = *state;
	struct facts_memory m;

	assert_int_equal(facts_gather_memory(f->hw, true, &m), 0);
	assert_int_equal(m.rc, 0);
	assert_string_equal(m.source, "sysfs");  /* a tree: never libnuma */
	assert_int_equal(m.n, 1);
	assert_int_equal(m.nodes[0].free_kb, 512000);
	free(m.nodes);
	rm(f->root, "sys/devices/system/node");
	assert_int_equal(facts_gather_memory(f->hw, false, &m), 0);
	assert_string_equal(m.source, "proc/meminfo");
	assert_int_equal(m.nodes[0].free_kb, 131072000);
	free(m.nodes);
	rm(f->root, "proc/meminfo");
	assert_int_equal(facts_gather_memory(f->hw, false, &m), 0);
	assert_true(m.rc < 0);
	assert_null(m.source);
	assert_int_equal(m.n, 0);
	free(m.nodes);
}

/* Several directories probed at once: each outcome its own. */
static void
test_probe_dirs(void **state)
{
	struct fix *f = *state;
	char good[600], missing[600], file[600], fifo[600];
	const char *paths[6] = { good, missing, file, fifo, "/proc", fifo };
	bool writable[6] = { true, false, false, false, true, false };
	struct facts_path out[6];
	double t0, elapsed;

	snprintf(good, sizeof(good), "%s/good", f->root);
	snprintf(missing, sizeof(missing), "%s/missing", f->root);
	snprintf(file, sizeof(file), "%s/file", f->root);
	snprintf(fifo, sizeof(fifo), "%s/fifo", f->root);
	assert_int_equal(mkdir(good, 0755), 0);
	put(f->root, "file", "x\n");
	assert_int_equal(mkfifo(fifo, 0600), 0);
	t0 = now();
	assert_int_equal(facts_probe_dirs(paths, writable, 6, 1, out), 0);
	elapsed = now() - t0;
	assert_true(elapsed >= 0.9);
	assert_true(elapsed < 2.0);
	assert_int_equal(out[0].rc, 0);
	assert_int_equal(out[0].dir.err, 0);
	assert_int_equal(out[0].dir.write_err, 0);
	assert_true(out[0].dir.free_mb > 0);
	assert_int_equal(out[1].rc, 0);
	assert_int_equal(out[1].dir.err, ENOENT);
	assert_int_equal(out[2].rc, 0);
	assert_true(out[2].dir.not_dir);
	assert_int_equal(out[3].rc, -ETIMEDOUT);
	assert_int_equal(out[4].rc, 0);
	assert_true(out[4].dir.write_err > 0);  /* procfs refuses new files */
	assert_int_equal(out[5].rc, -ETIMEDOUT);
	/* Not tried: -1. */
	assert_int_equal(out[1].dir.write_err, -1);
	reap_orphans();
	assert_int_equal(facts_probe_dirs(paths, NULL, 1, 0, out), -EINVAL);
}

/*
 * The storage paths of facts_gather(): seven stale mounts cost one
 * timeout, not seven (issue: slurmd kills a HealthCheckProgram after
 * 60 s, and 7 x 10 s in turn never finished).
 */
static void
test_gather_paths_at_once(void **state)
{
	struct fix *f = *state;
	char path[600];
	double t0, elapsed;

	f->cfg.check_timeout_s = 1;
	for (int i = 0; i < 7; i++) {
		snprintf(path, sizeof(path), "%s/stale%d", f->root, i);
		assert_int_equal(mkfifo(path, 0600), 0);
		add_path(&f->cfg, path, true);
	}
	snprintf(path, sizeof(path), "%s/scratch", f->root);
	assert_int_equal(mkdir(path, 0755), 0);
	add_path(&f->cfg, path, true);
	t0 = now();
	assert_int_equal(facts_gather(f->hw, &f->cfg, NULL, 0, &f->facts), 0);
	elapsed = now() - t0;
	print_message("  8 paths, 7 blocked, 1 s timeout: %.3f s\n", elapsed);
	assert_true(elapsed >= 0.9);
	assert_true(elapsed < 2.0);
	assert_int_equal(f->facts.npaths, 8);
	for (int i = 0; i < 7; i++)
		assert_int_equal(f->facts.paths[i].rc, -ETIMEDOUT);
	assert_int_equal(f->facts.paths[7].rc, 0);
	assert_int_equal(f->facts.paths[7].dir.write_err, 0);
	reap_orphans();
}

/* A child standing for a probe of PATH: marked, and at work for MS
 * milliseconds (< 0: until killed). */
static pid_t
probe_standin(const char *path, int ms)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		if (stuck_mark(path) < 0)
			_exit(1);
		if (ms >= 0) {
			usleep((useconds_t)ms * 1000);
			_exit(0);
		}
		for (;;)
			pause();
	}
	return pid;
}

/*
 * A probe stuck in the kernel outlives its SIGKILL: a path whose probe is
 * still at work after the deadline gets no second one, and says so; a
 * probe of a check still running is waited for, not doubled.  The path is
 * a FIFO, on which a new probe would block until the deadline.
 */
static void
test_probe_stuck_earlier(void **state)
{
	struct fix *f = *state;
	char fifo[600], good[600];
	const char *paths[2] = { fifo, good };
	struct facts_path out[2];
	double t0, elapsed;
	pid_t old, young;

	snprintf(fifo, sizeof(fifo), "%s/fifo", f->root);
	snprintf(good, sizeof(good), "%s/good", f->root);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_equal(mkdir(good, 0755), 0);

	/* stuck since before the deadline: reported at once, not probed */
	old = probe_standin(fifo, -1);
	usleep(600000);
	t0 = now();
	assert_int_equal(facts_probe_dirs(paths, NULL, 2, 0.5, out), 0);
	elapsed = now() - t0;
	assert_true(elapsed < 0.4);
	assert_int_equal(out[0].rc, -EALREADY);
	assert_int_equal(out[0].stuck_pid, old);
	assert_true(out[0].stuck_s >= 0.5);
	assert_int_equal(out[1].rc, 0);
	kill(old, SIGKILL);
	waitpid(old, NULL, 0);

	/* a check still running probes the FIFO: waited for until it has
	 * been at it for the deadline, then reported, still not doubled */
	young = probe_standin(fifo, -1);
	usleep(100000);
	t0 = now();
	assert_int_equal(facts_probe_dirs(paths, NULL, 2, 0.8, out), 0);
	elapsed = now() - t0;
	print_message("  waited %.3f s for a probe 0.1 s old, deadline 0.8 s\n", elapsed);
	assert_true(elapsed >= 0.5);
	assert_true(elapsed < 1.5);
	assert_int_equal(out[0].rc, -EALREADY);
	assert_int_equal(out[0].stuck_pid, young);
	kill(young, SIGKILL);
	waitpid(young, NULL, 0);

	/* ... and one that returns meanwhile: the path is probed anew */
	young = probe_standin(good, 200);
	usleep(50000);
	assert_int_equal(facts_probe_dirs(&paths[1], NULL, 1, 2, out), 0);
	assert_int_equal(out[0].rc, 0);
	assert_int_equal(out[0].dir.err, 0);
	waitpid(young, NULL, 0);
	reap_orphans();
}

int
main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_slots_and_drivers),
		T(test_slot_model_from_driver),
		T(test_ib),
		T(test_nics),
		T(test_memory),
		T(test_probe_dirs),
		T(test_gather_paths_at_once),
		T(test_probe_stuck_earlier),
	};
#undef T

	(void)prctl(PR_SET_CHILD_SUBREAPER, 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
