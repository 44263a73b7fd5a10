/*
 * test_stuck.c - marks on work that may outlive its deadline: a marked
 * child is found again by its key, and only a live one of this program
 * and this user; an unmarked, dead or foreign one is not.  The "stuck"
 * children here just wait in pause(): what stuck_find() reads is the
 * same for a process in uninterruptible sleep.
 */
#include "autoconf.h"

#include "../vigil_test.h"
#include "../proc.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc/stuck.h"

/* A child that marks itself with KEY (unless NULL), says so on a pipe,
 * and waits to be killed. */
static pid_t
marked_child(const char *key)
{
	int p[2];
	char c = 0;
	pid_t pid;

	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		c = key && stuck_mark(key) < 0 ? 'x' : 'y';
		(void)!write(p[1], &c, 1);
		for (;;)
			pause();
	}
	close(p[1]);
	assert_int_equal(read(p[0], &c, 1), 1);
	close(p[0]);
	assert_int_equal(c, 'y');
	return pid;
}

static void
kill_child(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

static void
test_found_by_key(void **state)
{
	const char *keys[] = { "/scratch", "/home", "/scratch" };
	struct stuck out[3];
	pid_t a, plain;
	char comm[32] = "";
	FILE *f;

	(void)state;
	a = marked_child("/scratch");
	plain = marked_child(NULL);
	assert_int_equal(stuck_find(keys, 3, 0, out), 0);
	assert_int_equal(out[0].pid, a);
	assert_true(out[0].age_s >= 0 && out[0].age_s < 60);
	assert_int_equal(out[1].pid, 0);
	assert_int_equal(out[2].pid, a);  /* the same key twice: both see it */
	/* ps shows it by the name */
	snprintf(comm, sizeof(comm), "/proc/%d/comm", (int)a);
	f = fopen(comm, "r");
	assert_non_null(f);
	assert_non_null(fgets(comm, sizeof(comm), f));
	fclose(f);
	assert_string_equal(comm, STUCK_COMM "\n");
	/* younger than the age asked: the work of a run in progress */
	assert_int_equal(stuck_find(keys, 3, 3600, out), 0);
	assert_int_equal(out[0].pid, 0);
	kill_child(a);
	assert_int_equal(stuck_find(keys, 3, 0, out), 0);
	assert_int_equal(out[0].pid, 0);
	kill_child(plain);
	assert_int_equal(stuck_find(keys, 0, 0, out), 0);
}

/* A key past STUCK_KEY_MAX is named by its hash: found, and not confused
 * with another long key that differs only at its end. */
static void
test_long_key(void **state)
{
	char k1[400], k2[400];
	const char *keys[] = { k1, k2 };
	struct stuck out[2];
	pid_t a;

	(void)state;
	memset(k1, 'a', sizeof(k1) - 1);
	k1[0] = '/';
	k1[sizeof(k1) - 1] = '\0';
	memcpy(k2, k1, sizeof(k2));
	k2[sizeof(k2) - 2] = 'b';
	a = marked_child(k1);
	assert_int_equal(stuck_find(keys, 2, 0, out), 0);
	assert_int_equal(out[0].pid, a);
	assert_int_equal(out[1].pid, 0);
	kill_child(a);
}

/* A zombie holds no mark: its work is over. */
static void
test_zombie_not_stuck(void **state)
{
	const char *keys[] = { "/scratch" };
	struct stuck out[1];
	pid_t a;

	(void)state;
	a = marked_child("/scratch");
	kill(a, SIGKILL);
	for (int i = 0; i < 100; i++) {  /* dead, not reaped */
		siginfo_t si = { 0 };

		if (waitid(P_PID, (id_t)a, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == a)
			break;
		usleep(10000);
	}
	assert_int_equal(stuck_find(keys, 1, 0, out), 0);
	assert_int_equal(out[0].pid, 0);
	waitpid(a, NULL, 0);
}

/*
 * Anyone can name a process "vigil-probe" and hand it a memfd with the
 * mark's name across exec (into a setuid program, owned by root): a
 * process that is not this program does not count.
 */
static void
test_other_program_not_stuck(void **state)
{
	const char *keys[] = { "/scratch" };
	char dir[] = "/tmp/vigil-stuck.XXXXXX", link[600];
	struct stuck out[1];
	pid_t pid;
	int found = 0;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(link, sizeof(link), "%s/" STUCK_COMM, dir);
	assert_int_equal(symlink("/bin/sleep", link), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* not close-on-exec: the sleep keeps it */
		if (memfd_create(STUCK_COMM ":/scratch", 0) < 0)
			_exit(1);
		execl(link, STUCK_COMM, "30", (char *)NULL);
		_exit(127);
	}
	/* until the exec is done: the fake shows its name */
	for (int i = 0; i < 200; i++) {
		char path[64], comm[32] = "";
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
		f = fopen(path, "r");
		if (f) {
			found = fgets(comm, sizeof(comm), f) && strcmp(comm, STUCK_COMM "\n") == 0;
			fclose(f);
		}
		if (found)
			break;
		usleep(10000);
	}
	assert_true(found);
	usleep(50000);
	assert_int_equal(stuck_find(keys, 1, 0, out), 0);
	assert_int_equal(out[0].pid, 0);
	kill_child(pid);
	unlink(link);
	rmdir(dir);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_found_by_key),
		cmocka_unit_test(test_long_key),
		cmocka_unit_test(test_zombie_not_stuck),
		cmocka_unit_test(test_other_program_not_stuck),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
