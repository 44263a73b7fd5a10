/*
 * test_hwmon_proc.c - the process readers of hwmon (the training's CPU and
 * memory use) against proc trees built under mkdtemp(), and the live
 * /proc.
 */
#include "autoconf.h"

#include "vigil_test.h"
#include "fstree.h"
#include "scratch.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hwmon.h"

struct fix {
	char root[128];
	struct hwmon *h;
};

/* proc/PID/stat with the fields that matter, the others zero. */
static void
put_stat(const char *root, int pid, const char *comm, int ppid, long utime, long stime,
         long cutime, long cstime, long rss)
{
	char rel[64], line[512];

	snprintf(rel, sizeof(rel), "proc/%d/stat", pid);
	snprintf(line, sizeof(line),
	         "%d (%s) S %d %d %d 0 -1 4194560 100 0 0 0 %ld %ld %ld %ld 20 0 1 0 "
	         "12345 1000000 %ld 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 3 0 0 0 0 0\n",
	         pid, comm, ppid, pid, pid, utime, stime, cutime, cstime, rss);
	put(root, rel, line);
}

static int
setup(void **state)
{
	struct fix *x = calloc(1, sizeof(*x));

	if (!x || make_scratch_dir(x->root, sizeof(x->root), "proc") < 0)
		return -1;
	mkdirs(x->root, "sys");
	put_stat(x->root, 1, "systemd", 0, 5000, 5000, 0, 0, 3000);
	put_stat(x->root, 100, "vigil", 1, 7, 3, 0, 0, 900);
	put_stat(x->root, 200, "python", 100, 100, 50, 10, 0, 1000);
	/* A command name with spaces and parentheses. */
	put_stat(x->root, 201, "pt_main) (thread", 200, 300, 0, 0, 0, 2000);
	put_stat(x->root, 300, "worker", 201, 30, 10, 0, 0, 500);
	put_stat(x->root, 400, "sshd", 1, 1, 1, 0, 0, 100);
	put_stat(x->root, 500, "orphan", 100, 20, 0, 0, 0, 50);
	put(x->root, "proc/600/stat", "600 (broken) S garbage\n");
	put(x->root, "proc/meminfo", "MemTotal: 1 kB\n");
	mkdirs(x->root, "proc/sys/kernel");
	if (hwmon_open(x->root, &x->h) < 0)
		return -1;
	*state = x;
	return 0;
}

static int
teardown(void **state)
{
	struct fix *x = *state;

	hwmon_free(x->h);
	rm_rf(x->root);
	free(x);
	return 0;
}

static void
test_tree(void **state)
{
	struct fix *x = *state;
	struct hwmon_proc_usage u;
	pid_t roots[] = { 200 };
	double tck = (double)sysconf(_SC_CLK_TCK);
	long long page = sysconf(_SC_PAGESIZE);

	assert_int_equal(hwmon_proc_usage(x->h, roots, 1, &u), 0);
	/* 200 and its descendants 201 and 300; not 600, unreadable. */
	assert_int_equal(u.nprocs, 3);
	assert_true(u.cpu_s > (160 + 300 + 40) / tck - 1e-9);
	assert_true(u.cpu_s < (160 + 300 + 40) / tck + 1e-9);
	assert_int_equal(u.rss_bytes, 3500 * page);
}

static void
test_roots(void **state)
{
	struct fix *x = *state;
	struct hwmon_proc_usage u;
	pid_t *kids = NULL;
	size_t n = 0;
	pid_t two[] = { 300, 500 }, none[] = { 999 };

	/* The agent's children: the training and an orphan it adopted. */
	assert_int_equal(hwmon_proc_children(x->h, 100, &kids, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(kids[0], 200);
	assert_int_equal(kids[1], 500);
	assert_int_equal(hwmon_proc_usage(x->h, kids, n, &u), 0);
	assert_int_equal(u.nprocs, 4);
	free(kids);
	assert_int_equal(hwmon_proc_usage(x->h, two, 2, &u), 0);
	assert_int_equal(u.nprocs, 2);
	assert_int_equal(hwmon_proc_usage(x->h, none, 1, &u), 0);
	assert_int_equal(u.nprocs, 0);
	assert_int_equal(u.rss_bytes, 0);
	assert_int_equal(hwmon_proc_children(x->h, 999, &kids, &n), 0);
	assert_int_equal(n, 0);
	assert_null(kids);
}

static void
test_no_proc(void **state)
{
	struct fix *x = *state;
	struct hwmon_proc_usage u;
	char root[192];
	struct hwmon *h;
	pid_t one = 1, *kids;
	size_t n;

	snprintf(root, sizeof(root), "%s/empty", x->root);
	mkdirs(root, "sys");
	assert_int_equal(hwmon_open(root, &h), 0);
	assert_int_equal(hwmon_proc_usage(h, &one, 1, &u), -ENOENT);
	assert_int_equal(hwmon_proc_children(h, 1, &kids, &n), -ENOENT);
	hwmon_free(h);
}

static void
test_live(void **state)
{
	struct hwmon_proc_usage u;
	struct hwmon *h;
	pid_t self = getpid(), child, *kids = NULL;
	size_t n = 0;
	bool found = false;

	(void)state;
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		pause();
		_exit(0);
	}
	assert_int_equal(hwmon_open("/", &h), 0);
	assert_int_equal(hwmon_proc_children(h, self, &kids, &n), 0);
	for (size_t i = 0; i < n; i++)
		found |= kids[i] == child;
	assert_true(found);
	free(kids);
	assert_int_equal(hwmon_proc_usage(h, &self, 1, &u), 0);
	assert_true(u.nprocs >= 2);
	assert_true(u.rss_bytes > 0);
	assert_true(u.cpu_s >= 0);
	hwmon_free(h);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
}

int
main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_tree),
		T(test_roots),
		T(test_no_proc),
		T(test_live),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
