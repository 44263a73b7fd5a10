/*
 * test_hwmon.c - sysfs/procfs readers against trees built under mkdtemp().
 */
#include "autoconf.h"

#include "../vigil_test.h"
#include "../fstree.h"
#include "../scratch.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sys/hwmon.h"

struct fix {
	char root[512];
	struct hwmon *h;
};

static int
setup(void **state)
{
	struct fix *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	if (make_scratch_dir(f->root, sizeof(f->root), "hwmon") < 0) {
		free(f);
		return -1;
	}
	mkdirs(f->root, "sys");
	mkdirs(f->root, "proc");
	if (hwmon_open(f->root, &f->h) < 0) {
		rm_rf(f->root);
		free(f);
		return -1;
	}
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fix *f = *state;

	hwmon_free(f->h);
	rm_rf(f->root);
	free(f);
	return 0;
}

/* --- opening ------------------------------------------------------------ */

static void
test_open(void **state)
{
	struct fix *f = *state;
	char path[PATH_MAX];
	struct hwmon *h = (struct hwmon *)1;

	assert_string_equal(hwmon_root(f->h), f->root);
	assert_false(hwmon_is_live(f->h));

	assert_int_equal(hwmon_open("/nonexistent/vigil", &h), -ENOENT);
	assert_null(h);

	/* A directory without sys/ is not a sysfs root. */
	snprintf(path, sizeof(path), "%s/empty", f->root);
	assert_int_equal(mkdir(path, 0755), 0);
	assert_int_equal(hwmon_open(path, &h), -ENOENT);

	/* A file is not a directory, and neither is a file named sys. */
	put(f->root, "file", "x\n");
	snprintf(path, sizeof(path), "%s/file", f->root);
	assert_int_equal(hwmon_open(path, &h), -ENOTDIR);
	put(f->root, "other/sys", "x\n");
	snprintf(path, sizeof(path), "%s/other", f->root);
	assert_int_equal(hwmon_open(path, &h), -ENOTDIR);

	/* "/" and spellings of it are the live system. */
	assert_int_equal(hwmon_open(NULL, &h), 0);
	assert_true(hwmon_is_live(h));
	assert_string_equal(hwmon_root(h), "/");
	hwmon_free(h);
	assert_int_equal(hwmon_open("//.", &h), 0);
	assert_true(hwmon_is_live(h));
	hwmon_free(h);
	hwmon_free(NULL);
}

/* --- generic readers ---------------------------------------------------- */

static void
test_read_string(void **state)
{
	struct fix *f = *state;
	char buf[32], path[PATH_MAX];
	char *big;

	put(f->root, "sys/a", "up \t\n");
	assert_int_equal(hwmon_read_string(f->h, "sys/a", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "up");

	put(f->root, "sys/two", "first\nsecond\n");
	assert_int_equal(hwmon_read_string(f->h, "sys/two", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "first");

	put(f->root, "sys/empty", "");
	strcpy(buf, "junk");
	assert_int_equal(hwmon_read_string(f->h, "sys/empty", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "");

	assert_int_equal(hwmon_read_string(f->h, "sys/missing", buf, sizeof(buf)), -ENOENT);
	mkdirs(f->root, "sys/dir");
	assert_int_equal(hwmon_read_string(f->h, "sys/dir", buf, sizeof(buf)), -EISDIR);
	link_at(f->root, "sys/dangling", "nowhere");
	assert_int_equal(hwmon_read_string(f->h, "sys/dangling", buf, sizeof(buf)), -ENOENT);

	/* Paths stay under the root. */
	assert_int_equal(hwmon_read_string(f->h, "/etc/hostname", buf, sizeof(buf)), -EINVAL);
	assert_int_equal(hwmon_read_string(f->h, "sys/../../etc/hostname", buf, sizeof(buf)),
	                 -EINVAL);
	assert_int_equal(hwmon_read_string(f->h, "..", buf, sizeof(buf)), -EINVAL);
	assert_int_equal(hwmon_read_string(f->h, "", buf, sizeof(buf)), -EINVAL);

	/* Too long for the caller, and too long for any attribute. */
	put(f->root, "sys/long", "0123456789012345678901234567890123456789\n");
	assert_int_equal(hwmon_read_string(f->h, "sys/long", buf, sizeof(buf)), -EOVERFLOW);
	big = malloc(200000);
	assert_non_null(big);
	memset(big, 'a', 199999);
	big[199999] = '\0';
	put(f->root, "sys/huge", big);
	free(big);
	assert_int_equal(hwmon_read_string(f->h, "sys/huge", buf, sizeof(buf)), -EOVERFLOW);

	/* A FIFO in a tree must not hang the reader. */
	snprintf(path, sizeof(path), "%s/sys/fifo", f->root);
	assert_int_equal(mkfifo(path, 0600), 0);
	assert_int_equal(hwmon_read_string(f->h, "sys/fifo", buf, sizeof(buf)), -EINVAL);

	/* NUL bytes are not text. */
	snprintf(path, sizeof(path), "%s/sys/nul", f->root);
	{
		FILE *fp = fopen(path, "w");

		assert_non_null(fp);
		assert_int_equal(fwrite("ab\0cd\n", 1, 6, fp), 6);
		assert_int_equal(fclose(fp), 0);
	}
	assert_int_equal(hwmon_read_string(f->h, "sys/nul", buf, sizeof(buf)), -EINVAL);
}

static void
test_read_ll(void **state)
{
	struct fix *f = *state;
	long long v = 7;

	put(f->root, "sys/n", "42\n");
	assert_int_equal(hwmon_read_ll(f->h, "sys/n", &v), 0);
	assert_int_equal(v, 42);
	put(f->root, "sys/neg", "-1\n");
	assert_int_equal(hwmon_read_ll(f->h, "sys/neg", &v), 0);
	assert_int_equal(v, -1);
	put(f->root, "sys/sp", "  100000  \n");
	assert_int_equal(hwmon_read_ll(f->h, "sys/sp", &v), 0);
	assert_int_equal(v, 100000);

	v = 7;
	put(f->root, "sys/abc", "abc\n");
	assert_int_equal(hwmon_read_ll(f->h, "sys/abc", &v), -EINVAL);
	put(f->root, "sys/mixed", "12abc\n");
	assert_int_equal(hwmon_read_ll(f->h, "sys/mixed", &v), -EINVAL);
	put(f->root, "sys/empty", "");
	assert_int_equal(hwmon_read_ll(f->h, "sys/empty", &v), -EINVAL);
	put(f->root, "sys/range", "99999999999999999999999\n");
	assert_int_equal(hwmon_read_ll(f->h, "sys/range", &v), -ERANGE);
	put(f->root, "sys/long", "1111111111111111111111111111111111111111111111111111111111111111111\n");
	assert_int_equal(hwmon_read_ll(f->h, "sys/long", &v), -EINVAL);
	assert_int_equal(v, 7);
}

static void
test_read_state(void **state)
{
	struct fix *f = *state;
	char text[32];
	int n = -1;

	put(f->root, "sys/state", "4: ACTIVE\n");
	assert_int_equal(hwmon_read_state(f->h, "sys/state", &n, text, sizeof(text)), 0);
	assert_int_equal(n, 4);
	assert_string_equal(text, "ACTIVE");
	put(f->root, "sys/phys", "5: LinkUp\n");
	assert_int_equal(hwmon_read_state(f->h, "sys/phys", &n, NULL, 0), 0);
	assert_int_equal(n, 5);

	put(f->root, "sys/bad1", "ACTIVE\n");
	assert_int_equal(hwmon_read_state(f->h, "sys/bad1", &n, text, sizeof(text)), -EINVAL);
	put(f->root, "sys/bad2", "4 ACTIVE\n");
	assert_int_equal(hwmon_read_state(f->h, "sys/bad2", &n, text, sizeof(text)), -EINVAL);
	put(f->root, "sys/bad3", "");
	assert_int_equal(hwmon_read_state(f->h, "sys/bad3", &n, text, sizeof(text)), -EINVAL);
}

static void
test_read_keyed(void **state)
{
	struct fix *f = *state;
	long long v = 0;
	char *big;

	put(f->root, "sys/meminfo",
	    "Node 1 MemTotal:       65536000 kB\n"
	    "Node 1 MemFree:        12345678 kB\n"
	    "Node 1 MemUsed:        53190322 kB\n");
	assert_int_equal(hwmon_read_keyed_ll(f->h, "sys/meminfo", "MemFree", &v), 0);
	assert_int_equal(v, 12345678);
	assert_int_equal(hwmon_read_keyed_ll(f->h, "sys/meminfo", "MemTotal", &v), 0);
	assert_int_equal(v, 65536000);
	/* A prefix of a key is not the key. */
	assert_int_equal(hwmon_read_keyed_ll(f->h, "sys/meminfo", "Mem", &v), -ENODATA);

	put(f->root, "sys/aer", "RxErr 0\nBadTLP 3\nTOTAL_ERR_COR 5\n");
	assert_int_equal(hwmon_read_keyed_ll(f->h, "sys/aer", "TOTAL_ERR_COR", &v), 0);
	assert_int_equal(v, 5);
	assert_int_equal(hwmon_read_keyed_ll(f->h, "sys/aer", "BadTLP", &v), 0);
	assert_int_equal(v, 3);

	put(f->root, "sys/garbage", "TOTAL_ERR_COR lots\n");
	assert_int_equal(hwmon_read_keyed_ll(f->h, "sys/garbage", "TOTAL_ERR_COR", &v), -EINVAL);
	assert_int_equal(hwmon_read_keyed_ll(f->h, "sys/nothere", "X", &v), -ENOENT);

	/* Reads are bounded: a key far into a huge file is not seen. */
	big = malloc(300001);
	assert_non_null(big);
	for (size_t i = 0; i < 300000; i += 10)
		memcpy(big + i, "pad 1234\n\n", 10);
	big[300000] = '\0';
	put(f->root, "sys/big", big);
	free(big);
	{
		char path[PATH_MAX];
		FILE *fp;

		snprintf(path, sizeof(path), "%s/sys/big", f->root);
		fp = fopen(path, "a");
		assert_non_null(fp);
		fputs("Late 9\n", fp);
		assert_int_equal(fclose(fp), 0);
	}
	assert_int_equal(hwmon_read_keyed_ll(f->h, "sys/big", "pad", &v), 0);
	assert_int_equal(v, 1234);
	assert_int_equal(hwmon_read_keyed_ll(f->h, "sys/big", "Late", &v), -ENODATA);
}

static void
test_readlink_and_list(void **state)
{
	struct fix *f = *state;
	char buf[64];
	char **names;
	size_t n;

	link_at(f->root, "sys/bus/pci/devices/0000:3b:00.0/driver", "../../../bus/pci/drivers/nvidia/");
	assert_int_equal(hwmon_readlink_base(f->h, "sys/bus/pci/devices/0000:3b:00.0/driver", buf,
	                                     sizeof(buf)),
	                 0);
	assert_string_equal(buf, "nvidia");
	put(f->root, "sys/plain", "x\n");
	assert_int_equal(hwmon_readlink_base(f->h, "sys/plain", buf, sizeof(buf)), -EINVAL);
	assert_int_equal(hwmon_readlink_base(f->h, "sys/none", buf, sizeof(buf)), -ENOENT);

	put(f->root, "sys/nodes/node10/x", "");
	put(f->root, "sys/nodes/node2/x", "");
	put(f->root, "sys/nodes/node0/x", "");
	put(f->root, "sys/nodes/online", "0-1\n");
	assert_int_equal(hwmon_list(f->h, "sys/nodes", &names, &n), 0);
	assert_int_equal(n, 4);
	assert_string_equal(names[0], "node0");
	assert_string_equal(names[1], "node2");
	assert_string_equal(names[2], "node10");
	assert_string_equal(names[3], "online");
	hwmon_list_free(names, n);

	mkdirs(f->root, "sys/emptydir");
	assert_int_equal(hwmon_list(f->h, "sys/emptydir", &names, &n), 0);
	assert_int_equal(n, 0);
	assert_null(names);
	assert_int_equal(hwmon_list(f->h, "sys/nodir", &names, &n), -ENOENT);
	assert_int_equal(hwmon_list(f->h, "sys/plain", &names, &n), -ENOTDIR);
	hwmon_list_free(NULL, 0);

	assert_int_equal(hwmon_exists(f->h, "sys/plain"), 0);
	assert_int_equal(hwmon_exists(f->h, "sys/none"), -ENOENT);
}

/* --- PCI ---------------------------------------------------------------- */

static bool
exists(const char *root, const char *rel)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	return access(path, F_OK) == 0;
}

/* A device as sysfs shows it: a bus link to the device directory, and a
 * driver link to the driver, whose module link names the module. */
static void
make_pci(const char *root, const char *id, const char *driver)
{
	char rel[256], target[256];

	snprintf(rel, sizeof(rel), "sys/bus/pci/devices/%s", id);
	snprintf(target, sizeof(target), "../../../devices/pci0000:00/%s", id);
	link_at(root, rel, target);
	snprintf(rel, sizeof(rel), "sys/devices/pci0000:00/%s/vendor", id);
	put(root, rel, "0x10de\n");
	if (!driver)
		return;
	snprintf(rel, sizeof(rel), "sys/devices/pci0000:00/%s/driver", id);
	snprintf(target, sizeof(target), "../../../bus/pci/drivers/%s", driver);
	link_at(root, rel, target);
	snprintf(rel, sizeof(rel), "sys/bus/pci/drivers/%s/module", driver);
	if (!exists(root, rel)) {
		snprintf(target, sizeof(target), "../../../../module/%s", driver);
		link_at(root, rel, target);
		snprintf(rel, sizeof(rel), "sys/module/%s/version", driver);
		put(root, rel, "535.104.05\n");
	}
}

static void
test_pci(void **state)
{
	struct fix *f = *state;
	const char *d = "sys/devices/pci0000:00/0000:3b:00.0";
	struct hwmon_pci p;
	char rel[256];

	make_pci(f->root, "0000:3b:00.0", "nvidia");
	snprintf(rel, sizeof(rel), "%s/current_link_speed", d);
	put(f->root, rel, "8.0 GT/s PCIe\n");
	snprintf(rel, sizeof(rel), "%s/max_link_speed", d);
	put(f->root, rel, "16.0 GT/s PCIe\n");
	snprintf(rel, sizeof(rel), "%s/current_link_width", d);
	put(f->root, rel, "8\n");
	snprintf(rel, sizeof(rel), "%s/max_link_width", d);
	put(f->root, rel, "16\n");
	snprintf(rel, sizeof(rel), "%s/aer_dev_correctable", d);
	put(f->root, rel, "RxErr 2\nBadTLP 1\nBadDLLP 0\nRollover 0\nTimeout 0\n"
	                  "NonFatalErr 0\nCorrIntErr 0\nHeaderOF 0\nTOTAL_ERR_COR 3\n");
	snprintf(rel, sizeof(rel), "%s/aer_dev_nonfatal", d);
	/* Older kernels: no TOTAL line, the counters are summed. */
	put(f->root, rel, "Undefined 0\nDLP 0\nSDES 0\nTLP 1\nFCP 0\nCmpltTO 1\n");
	snprintf(rel, sizeof(rel), "%s/aer_dev_fatal", d);
	put(f->root, rel, "Undefined 0\nDLP 0\nTOTAL_ERR_FATAL 0\n");

	assert_int_equal(hwmon_pci_read(f->h, "0000:3b:00.0", &p), 0);
	assert_string_equal(p.driver, "nvidia");
	assert_string_equal(p.module, "nvidia");
	assert_string_equal(p.cur_speed, "8.0 GT/s PCIe");
	assert_string_equal(p.max_speed, "16.0 GT/s PCIe");
	assert_true(p.cur_gts > 7.99 && p.cur_gts < 8.01);
	assert_true(p.max_gts > 15.99 && p.max_gts < 16.01);
	assert_int_equal(p.cur_width, 8);
	assert_int_equal(p.max_width, 16);
	assert_int_equal(p.aer_correctable, 3);
	assert_int_equal(p.aer_nonfatal, 2);
	assert_int_equal(p.aer_fatal, 0);

	/* Unknown speed, garbage AER, a directory for a width: unknowns. */
	snprintf(rel, sizeof(rel), "%s/current_link_speed", d);
	put(f->root, rel, "Unknown\n");
	snprintf(rel, sizeof(rel), "%s/aer_dev_fatal", d);
	put(f->root, rel, "abc\n");
	snprintf(rel, sizeof(rel), "%s/current_link_width", d);
	{
		char full[PATH_MAX];

		snprintf(full, sizeof(full), "%s/%s", f->root, rel);
		assert_int_equal(unlink(full), 0);
		assert_int_equal(mkdir(full, 0755), 0);
	}
	assert_int_equal(hwmon_pci_read(f->h, "0000:3b:00.0", &p), 0);
	assert_true(p.cur_gts == 0);
	assert_string_equal(p.cur_speed, "Unknown");
	assert_int_equal(p.cur_width, 0);
	assert_int_equal(p.aer_fatal, -1);

	/* A device without a driver or any attribute. */
	make_pci(f->root, "0000:5e:00.0", NULL);
	assert_int_equal(hwmon_pci_read(f->h, "0000:5e:00.0", &p), 0);
	assert_string_equal(p.driver, "");
	assert_string_equal(p.module, "");
	assert_int_equal(p.max_width, 0);
	assert_int_equal(p.aer_correctable, -1);

	assert_int_equal(hwmon_pci_read(f->h, "0000:af:00.0", &p), -ENOENT);
	assert_int_equal(hwmon_pci_read(f->h, "../../etc", &p), -EINVAL);
	assert_int_equal(hwmon_pci_read(f->h, "", &p), -EINVAL);
}

/* --- network ------------------------------------------------------------ */

static void
test_nic(void **state)
{
	struct fix *f = *state;
	struct hwmon_nic nic;

	put(f->root, "sys/class/net/eth0/operstate", "up\n");
	put(f->root, "sys/class/net/eth0/carrier", "1\n");
	put(f->root, "sys/class/net/eth0/speed", "25000\n");
	assert_int_equal(hwmon_nic_read(f->h, "eth0", &nic), 0);
	assert_string_equal(nic.operstate, "up");
	assert_int_equal(nic.carrier, 1);
	assert_int_equal(nic.speed_mbps, 25000);

	/* Virtual interfaces report speed -1; a down one has no readable carrier. */
	put(f->root, "sys/class/net/eth1/operstate", "down\n");
	put(f->root, "sys/class/net/eth1/speed", "-1\n");
	assert_int_equal(hwmon_nic_read(f->h, "eth1", &nic), 0);
	assert_string_equal(nic.operstate, "down");
	assert_int_equal(nic.carrier, -1);
	assert_int_equal(nic.speed_mbps, -1);

	assert_int_equal(hwmon_nic_read(f->h, "eth9", &nic), -ENOENT);
	assert_int_equal(hwmon_nic_read(f->h, "../eth0", &nic), -EINVAL);
}

/*
 * The kernel answers EINVAL when carrier or speed of a down interface is
 * read.  A fresh network namespace has only "lo", down; mounting sysfs in
 * it shows that namespace.  Needs CAP_SYS_ADMIN (CI runs as root).
 */
static void
test_nic_live_einval(void **state)
{
	struct fix *f = *state;
	char mnt[PATH_MAX];
	pid_t pid;
	int status;

	snprintf(mnt, sizeof(mnt), "%s/ns", f->root);
	assert_int_equal(mkdir(mnt, 0755), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char sys[PATH_MAX + 8];
		struct hwmon *h;
		struct hwmon_nic nic;
		long long v;

		if (unshare(CLONE_NEWNET | CLONE_NEWNS) < 0)
			_exit(77);
		if (mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) < 0)
			_exit(77);
		snprintf(sys, sizeof(sys), "%s/sys", mnt);
		if (mkdir(sys, 0755) < 0 || mount("sysfs", sys, "sysfs", 0, NULL) < 0)
			_exit(77);
		if (hwmon_open(mnt, &h) < 0)
			_exit(10);
		if (hwmon_read_ll(h, "sys/class/net/lo/carrier", &v) != -EINVAL)
			_exit(11);
		if (hwmon_nic_read(h, "lo", &nic) != 0)
			_exit(12);
		if (strcmp(nic.operstate, "down") != 0 || nic.carrier != -1)
			_exit(13);
		hwmon_free(h);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 77) {
		if (geteuid() == 0)
			fail_msg("root could not make a network namespace");
		skip();
	}
	assert_int_equal(WEXITSTATUS(status), 0);
}

static void
test_ib(void **state)
{
	struct fix *f = *state;
	struct hwmon_ib_port *ports;
	char **devs;
	size_t n;
	long long v;

	assert_int_equal(hwmon_ib_devices(f->h, &devs, &n), 0);
	assert_int_equal(n, 0);

	put(f->root, "sys/class/infiniband/mlx5_0/ports/1/state", "4: ACTIVE\n");
	put(f->root, "sys/class/infiniband/mlx5_0/ports/1/phys_state", "5: LinkUp\n");
	put(f->root, "sys/class/infiniband/mlx5_0/ports/1/rate", "200 Gb/sec (4X HDR)\n");
	put(f->root, "sys/class/infiniband/mlx5_0/ports/1/counters/link_downed", "3\n");
	put(f->root, "sys/class/infiniband/mlx5_0/ports/1/counters/symbol_error", "17\n");
	put(f->root, "sys/class/infiniband/mlx5_0/ports/2/state", "1: DOWN\n");
	put(f->root, "sys/class/infiniband/mlx5_0/ports/2/phys_state", "2: Polling\n");
	put(f->root, "sys/class/infiniband/mlx5_0/ports/2/rate", "garbage\n");
	mkdirs(f->root, "sys/class/infiniband/mlx5_1");

	assert_int_equal(hwmon_ib_devices(f->h, &devs, &n), 0);
	assert_int_equal(n, 2);
	assert_string_equal(devs[0], "mlx5_0");
	hwmon_list_free(devs, n);

	assert_int_equal(hwmon_ib_ports(f->h, "mlx5_0", &ports, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(ports[0].port, 1);
	assert_int_equal(ports[0].state, HWMON_IB_ACTIVE);
	assert_string_equal(ports[0].state_text, "ACTIVE");
	assert_int_equal(ports[0].phys_state, HWMON_IB_LINKUP);
	assert_string_equal(ports[0].rate, "200 Gb/sec (4X HDR)");
	assert_true(ports[0].rate_gbps > 199.9 && ports[0].rate_gbps < 200.1);
	assert_int_equal(ports[0].link_downed, 3);
	assert_int_equal(ports[0].symbol_error, 17);
	assert_int_equal(ports[1].port, 2);
	assert_int_equal(ports[1].state, 1);
	assert_string_equal(ports[1].state_text, "DOWN");
	assert_string_equal(ports[1].phys_state_text, "Polling");
	assert_true(ports[1].rate_gbps == 0);
	assert_int_equal(ports[1].link_downed, -1);
	free(ports);

	assert_int_equal(hwmon_ib_counter(f->h, "mlx5_0", 1, "symbol_error", &v), 0);
	assert_int_equal(v, 17);
	assert_int_equal(hwmon_ib_counter(f->h, "mlx5_0", 2, "symbol_error", &v), -ENOENT);

	/* A device without ports, and one that is absent. */
	assert_int_equal(hwmon_ib_ports(f->h, "mlx5_1", &ports, &n), 0);
	assert_int_equal(n, 0);
	assert_null(ports);
	assert_int_equal(hwmon_ib_ports(f->h, "mlx5_9", &ports, &n), -ENOENT);
}

/* --- memory ------------------------------------------------------------- */

static void
test_numa(void **state)
{
	struct fix *f = *state;
	struct hwmon_numa_node *nodes;
	long long total, freekb;
	size_t n;

	assert_int_equal(hwmon_numa_meminfo(f->h, &nodes, &n), -ENOENT);

	put(f->root, "sys/devices/system/node/node0/meminfo",
	    "Node 0 MemTotal:       32768000 kB\nNode 0 MemFree:        16384000 kB\n");
	put(f->root, "sys/devices/system/node/node10/meminfo",
	    "Node 10 MemTotal:       1000 kB\nNode 10 MemFree:        500 kB\n");
	put(f->root, "sys/devices/system/node/node2/meminfo", "garbage\n");
	put(f->root, "sys/devices/system/node/online", "0,2,10\n");
	mkdirs(f->root, "sys/devices/system/node/nodeX");
	assert_int_equal(hwmon_numa_meminfo(f->h, &nodes, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(nodes[0].node, 0);
	assert_int_equal(nodes[0].total_kb, 32768000);
	assert_int_equal(nodes[0].free_kb, 16384000);
	assert_int_equal(nodes[1].node, 10);
	assert_int_equal(nodes[1].free_kb, 500);
	free(nodes);

	assert_int_equal(hwmon_meminfo(f->h, &total, &freekb), -ENOENT);
	put(f->root, "proc/meminfo", "MemTotal:       65536000 kB\nMemFree:         1024000 kB\n"
	                             "MemAvailable:   30000000 kB\n");
	assert_int_equal(hwmon_meminfo(f->h, &total, &freekb), 0);
	assert_int_equal(total, 65536000);
	assert_int_equal(freekb, 1024000);
}

static void
test_statvfs(void **state)
{
	struct fix *f = *state;
	struct statvfs sv;

	assert_int_equal(hwmon_statvfs(f->h, "dev/shm", &sv), -ENOENT);
	mkdirs(f->root, "dev/shm");
	assert_int_equal(hwmon_statvfs(f->h, "dev/shm", &sv), 0);
	assert_true(sv.f_blocks > 0);
}

/* --- drivers ------------------------------------------------------------ */

static void
test_driver_versions(void **state)
{
	struct fix *f = *state;
	char buf[64];

	assert_int_equal(hwmon_nvidia_version(f->h, buf, sizeof(buf)), -ENOENT);
	put(f->root, "proc/driver/nvidia/version",
	    "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\n"
	    "GCC version:  gcc version 11.4.0 (Ubuntu 11.4.0-1ubuntu1~22.04)\n");
	assert_int_equal(hwmon_nvidia_version(f->h, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "535.104.05");

	put(f->root, "proc/driver/nvidia/version",
	    "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.14  Release Build  "
	    "(dvs-builder@U16-I3-B03-4-3)  Thu Feb 22 01:25:25 UTC 2024\n"
	    "GCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04)\n");
	assert_int_equal(hwmon_nvidia_version(f->h, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "550.54.14");

	put(f->root, "proc/driver/nvidia/version", "NVRM version: something else entirely\n");
	assert_int_equal(hwmon_nvidia_version(f->h, buf, sizeof(buf)), -EINVAL);
	put(f->root, "proc/driver/nvidia/version", "");
	assert_int_equal(hwmon_nvidia_version(f->h, buf, sizeof(buf)), -EINVAL);

	put(f->root, "proc/driver/cambricon/mlus/0000:1a:00.0/information",
	    "Device name: MLU370-X8\nDevice inode path: /dev/cambricon_dev0\n"
	    "Device Major: 234\nDevice Minor: 0\nDriver Version: v5.10.22\n"
	    "MCU Version: v1.1.4\nBoard Serial Number: SN/a1b2c3\n");
	assert_int_equal(hwmon_cambricon_version(f->h, "0000:1a:00.0", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "5.10.22");
	assert_int_equal(hwmon_cambricon_version(f->h, "0000:1b:00.0", buf, sizeof(buf)), -ENOENT);

	/* what the driver names a board hwloc's pci.ids does not know
	 * (proc/driver/nvidia/gpus/BUS/information as driver 580 writes it) */
	assert_int_equal(hwmon_board_model(f->h, HWMON_DRIVER_NVIDIA, "0000:00:06.0", buf,
	                                   sizeof(buf)), -ENOENT);
	put(f->root, "proc/driver/nvidia/gpus/0000:00:06.0/information",
	    "Model: \t\t NVIDIA H200\nIRQ:   \t\t 33\nGPU UUID: \t GPU-0d5e8f3a\n"
	    "Video BIOS: \t 96.00.af.00.01\nBus Type: \t PCIe\nDMA Size: \t 52 bits\n"
	    "Bus Location: \t 0000:00:06.0\nDevice Minor: \t 0\nGPU Firmware: \t 580.159.04\n"
	    "GPU Excluded:\t No\n");
	assert_int_equal(hwmon_board_model(f->h, HWMON_DRIVER_NVIDIA, "0000:00:06.0", buf,
	                                   sizeof(buf)), 0);
	assert_string_equal(buf, "NVIDIA H200");
	assert_int_equal(hwmon_board_model(f->h, HWMON_DRIVER_CAMBRICON, "0000:1a:00.0", buf,
	                                   sizeof(buf)), 0);
	assert_string_equal(buf, "MLU370-X8");
	put(f->root, "proc/driver/nvidia/gpus/0000:00:07.0/information",
	    "Models: not this\nModel:   \t \nIRQ: 34\n");
	assert_int_equal(hwmon_board_model(f->h, HWMON_DRIVER_NVIDIA, "0000:00:07.0", buf,
	                                   sizeof(buf)), -ENODATA);
	assert_int_equal(hwmon_board_model(f->h, HWMON_DRIVER_NVIDIA, "../../../etc", buf,
	                                   sizeof(buf)), -EINVAL);

	put(f->root, "sys/module/amdgpu/version", "6.3.6\n");
	assert_int_equal(hwmon_module_version(f->h, "amdgpu", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "6.3.6");
	put(f->root, "sys/module/empty/version", "\n");
	assert_int_equal(hwmon_module_version(f->h, "empty", buf, sizeof(buf)), -ENODATA);
	assert_int_equal(hwmon_module_version(f->h, "nvidia", buf, sizeof(buf)), -ENOENT);
}

/* --- processes ------------------------------------------------------------ */

/* proc/PID/stat and status as the kernel writes them, with a command name
 * that holds blanks and parentheses. */
static void
test_procs(void **state)
{
	struct fix *f = *state;
	struct hwmon_proc p, *v = NULL;
	unsigned long long caught = 0, ignored = 0;
	size_t n = 0;

	mkdirs(f->root, "proc/42");
	mkdirs(f->root, "proc/7");
	mkdirs(f->root, "proc/43");
	mkdirs(f->root, "proc/self");
	mkdirs(f->root, "proc/sys");
	put(f->root, "proc/42/stat", "42 (a) b (c) S 7 42 40 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 "
	                             "3456 1000 10 18446744073709551615\n");
	put(f->root, "proc/7/stat", "7 (torchrun) Z 1 7 7 0 -1 0\n");
	put(f->root, "proc/43/stat", "43 no parentheses S 1 1 1\n");
	put(f->root, "proc/42/status", "Name:\ta) b (c\nSigQ:\t0/1\nSigPnd:\t0000000000000000\n"
	                               "SigBlk:\t0000000000000000\nSigIgn:\t0000000000000800\n"
	                               "SigCgt:\t0000000180004202\n");
	put(f->root, "proc/7/status", "Name:\ttorchrun\nSigCgt:\t0\n");

	assert_int_equal(hwmon_proc_stat(f->h, 42, &p), 0);
	assert_int_equal(p.pid, 42);
	assert_int_equal(p.ppid, 7);
	assert_int_equal(p.pgid, 42);
	assert_int_equal(p.sid, 40);
	assert_int_equal(p.state, 'S');
	assert_string_equal(p.comm, "a) b (c");
	assert_int_equal(p.cpu_ticks, 3);  /* utime 1 + stime 2 */
	assert_int_equal(p.rss_pages, 10);
	assert_int_equal(hwmon_proc_stat(f->h, 43, &p), -EINVAL);
	assert_int_equal(hwmon_proc_stat(f->h, 44, &p), -ENOENT);
	assert_int_equal(hwmon_proc_stat(f->h, 0, &p), -EINVAL);

	/* by pid; what is not a process is left out */
	assert_int_equal(hwmon_procs(f->h, &v, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(v[0].pid, 7);
	assert_int_equal(v[0].state, 'Z');
	assert_string_equal(v[0].comm, "torchrun");
	assert_int_equal(v[0].cpu_ticks, 0);  /* a line that stops after the tree's fields */
	assert_int_equal(v[1].pid, 42);
	free(v);

	assert_int_equal(hwmon_proc_sigmasks(f->h, 42, &caught, &ignored), 0);
	assert_true(caught & (1ULL << (SIGUSR1 - 1)));
	assert_true(caught & (1ULL << (SIGTERM - 1)));
	assert_false(caught & (1ULL << (SIGUSR2 - 1)));
	assert_true(ignored & (1ULL << (SIGUSR2 - 1)));
	assert_int_equal(hwmon_proc_sigmasks(f->h, 7, &caught, &ignored), -ENODATA);
	assert_int_equal(hwmon_proc_sigmasks(f->h, 44, &caught, &ignored), -ENOENT);
}

/* The cgroup v2 directory from mountinfo and proc/self/cgroup; the
 * delegation mark; the member list. */
static void
test_cgroup(void **state)
{
	struct fix *f = *state;
	char buf[256], dir[700];
	int *pids = NULL;
	size_t n = 0;

	mkdirs(f->root, "proc/self");
	assert_int_equal(hwmon_cgroup2_self(f->h, buf, sizeof(buf)), -ENOENT);
	put(f->root, "proc/self/mountinfo",
	    "25 1 0:23 / /sys rw,nosuid - sysfs sysfs rw\n"
	    "30 25 0:26 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n"
	    "31 25 0:27 / /sys/fs/cgroup ro - tmpfs tmpfs ro\n"
	    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n");
	put(f->root, "proc/self/cgroup", "4:memory:/x\n1:cpu:/\n0::/user.slice/job 42.scope\n");
	assert_int_equal(hwmon_cgroup2_self(f->h, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "sys/fs/cgroup/unified/user.slice/job 42.scope");
	assert_int_equal(hwmon_cgroup2_self(f->h, buf, 20), -EOVERFLOW);
	put(f->root, "proc/self/cgroup", "0::/\n");
	assert_int_equal(hwmon_cgroup2_self(f->h, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "sys/fs/cgroup/unified");
	put(f->root, "proc/self/cgroup", "1:name=systemd:/\n");
	assert_int_equal(hwmon_cgroup2_self(f->h, buf, sizeof(buf)), -ENOENT);

	/* not a cgroup (no cgroup.kill): never delegated */
	mkdirs(f->root, "sys/fs/cgroup/unified/job");
	assert_int_equal(hwmon_cgroup2_delegated(f->h, "sys/fs/cgroup/unified/job"), -EPERM);
	put(f->root, "sys/fs/cgroup/unified/job/cgroup.kill", "");
	put(f->root, "sys/fs/cgroup/unified/job/cgroup.procs", "12\n7\n\n99999\n");
	if (geteuid() == 0) {
		/* root owns it: only systemd's mark delegates it */
		assert_int_equal(hwmon_cgroup2_delegated(f->h, "sys/fs/cgroup/unified/job"), -EPERM);
		snprintf(dir, sizeof(dir), "%s/sys/fs/cgroup/unified/job", f->root);
		if (setxattr(dir, "trusted.delegate", "1", 1, 0) == 0)
			assert_int_equal(hwmon_cgroup2_delegated(f->h, "sys/fs/cgroup/unified/job"), 0);
	} else {
		/* a user's own cgroup */
		assert_int_equal(hwmon_cgroup2_delegated(f->h, "sys/fs/cgroup/unified/job"), 0);
	}
	assert_int_equal(hwmon_cgroup2_delegated(f->h, "../job"), -EINVAL);
	assert_int_equal(hwmon_cgroup_procs(f->h, "sys/fs/cgroup/unified/job", &pids, &n), 0);
	assert_int_equal(n, 3);
	assert_int_equal(pids[0], 12);
	assert_int_equal(pids[1], 7);
	assert_int_equal(pids[2], 99999);
	free(pids);
	assert_int_equal(hwmon_cgroup_procs(f->h, "sys/fs/cgroup/none", &pids, &n), -ENOENT);
}

/* This very process, on the live /proc. */
static void
test_procs_live(void **state)
{
	struct hwmon *h;
	struct hwmon_proc p, *v = NULL;
	unsigned long long caught = 0, ignored = 0;
	bool found = false;
	size_t n = 0;

	(void)state;
	assert_int_equal(hwmon_open(NULL, &h), 0);
	assert_int_equal(hwmon_proc_stat(h, getpid(), &p), 0);
	assert_int_equal(p.ppid, getppid());
	assert_int_equal(p.pgid, getpgid(0));
	assert_int_equal(p.sid, getsid(0));
	assert_int_equal(hwmon_procs(h, &v, &n), 0);
	for (size_t i = 0; i < n; i++)
		found |= v[i].pid == getpid();
	assert_true(found);
	free(v);
	assert_int_equal(hwmon_proc_sigmasks(h, getpid(), &caught, &ignored), 0);
	hwmon_free(h);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_open, setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_string, setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_ll, setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_state, setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_keyed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_readlink_and_list, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pci, setup, teardown),
		cmocka_unit_test_setup_teardown(test_nic, setup, teardown),
		cmocka_unit_test_setup_teardown(test_nic_live_einval, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ib, setup, teardown),
		cmocka_unit_test_setup_teardown(test_numa, setup, teardown),
		cmocka_unit_test_setup_teardown(test_statvfs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_driver_versions, setup, teardown),
		cmocka_unit_test_setup_teardown(test_procs, setup, teardown),
		cmocka_unit_test(test_procs_live),
		cmocka_unit_test_setup_teardown(test_cgroup, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
