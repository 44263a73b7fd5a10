/*
 * test_forensics.c - a hung training's processes read from /proc (and by
 * gdb where it is installed): real children of the test, sleeping, stopped,
 * holding a file open; and gdb's backtrace text parsed.
 */
#include "autoconf.h"

#include "../vigil_test.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cJSON.h>

#include "proc/forensics.h"

static void
test_parse_gdb(void **state)
{
	const char *text =
		"[Thread debugging using libthread_db enabled]\n"
		"#0  __GI___clock_nanosleep (clock_id=1, flags=1) at x.c:71\n"
		"71\tx.c: No such file or directory.\n"
		"#1  0x00000000005d64b4 in ?? ()\n"
		"#2  0x000000000053acbc in PyObject_Vectorcall ()\n"
		"Traceback (most recent call first):\n"
		"  File \"/t/train.py\", line 12, in <module>\n"
		"    time.sleep(1e9)\n"
		"vigil-py: thread 140686891296448\n"
		"  File \"/usr/lib/python3.11/threading.py\", line 975, in run\n";
	cJSON *out = cJSON_CreateArray(), *py = cJSON_CreateArray();

	(void)state;
	forensics_parse_gdb(text, out, py, 24);
	assert_int_equal(cJSON_GetArraySize(out), 3);
	assert_string_equal(cJSON_GetArrayItem(out, 0)->valuestring, "__GI___clock_nanosleep");
	assert_string_equal(cJSON_GetArrayItem(out, 1)->valuestring, "??");
	assert_string_equal(cJSON_GetArrayItem(out, 2)->valuestring, "PyObject_Vectorcall");
	assert_int_equal(cJSON_GetArraySize(py), 3);
	assert_string_equal(cJSON_GetArrayItem(py, 0)->valuestring,
	                    "File \"/t/train.py\", line 12, in <module>");
	assert_string_equal(cJSON_GetArrayItem(py, 1)->valuestring, "thread 140686891296448");
	assert_string_equal(cJSON_GetArrayItem(py, 2)->valuestring,
	                    "File \"/usr/lib/python3.11/threading.py\", line 975, in run");
	cJSON_Delete(out);
	cJSON_Delete(py);
	/* at most MAX frames */
	out = cJSON_CreateArray();
	forensics_parse_gdb(text, out, NULL, 1);
	assert_int_equal(cJSON_GetArraySize(out), 1);
	cJSON_Delete(out);
}

/* A child that sleeps (and holds PATH open when not NULL). */
static pid_t
sleeper(const char *path)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		if (path && open(path, O_WRONLY | O_CREAT, 0600) < 0)
			_exit(1);
		for (;;)
			pause();
	}
	usleep(100000);
	return pid;
}

static void
end(pid_t pid)
{
	int st;

	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
}

static const cJSON *
find(const cJSON *f, pid_t pid)
{
	const cJSON *p;

	cJSON_ArrayForEach(p, cJSON_GetObjectItem(f, "processes"))
		if ((pid_t)cJSON_GetObjectItem(p, "pid")->valuedouble == pid)
			return p;
	return NULL;
}

static void
test_sleeping_and_stopped(void **state)
{
	pid_t pids[3] = { sleeper(NULL), sleeper(NULL), 999999999 };
	struct forensics_opts o = { .budget_s = 2, .gdb = false };
	const cJSON *p;
	cJSON *f;

	(void)state;
	kill(pids[1], SIGSTOP);
	usleep(100000);
	f = forensics_gather(pids, 3, &o);
	assert_non_null(f);
	/* the pid that does not exist is left out */
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(f, "processes")), 2);
	p = find(f, pids[0]);
	assert_non_null(p);
	assert_string_equal(cJSON_GetObjectItem(p, "state")->valuestring, "S");
	assert_non_null(cJSON_GetObjectItem(p, "wchan"));
	assert_true(cJSON_GetObjectItem(p, "kernel_stack") ||
	            cJSON_GetObjectItem(p, "kernel_stack_error"));
	assert_non_null(cJSON_GetObjectItem(p, "cpu_s"));
	assert_null(cJSON_GetObjectItem(p, "stack"));  /* gdb off */
	p = find(f, pids[1]);
	assert_string_equal(cJSON_GetObjectItem(p, "state")->valuestring, "T");
	assert_string_equal(cJSON_GetObjectItem(f, "gdb")->valuestring, "off");
	cJSON_Delete(f);
	end(pids[0]);
	end(pids[1]);
}

static void
test_gdb(void **state)
{
	pid_t pids[2] = { sleeper(NULL), sleeper(NULL) };
	struct forensics_opts o = { .budget_s = 20, .gdb = true };
	const cJSON *p;
	cJSON *f;

	(void)state;
	if (access("/usr/bin/gdb", X_OK) != 0 && access("/bin/gdb", X_OK) != 0) {
		end(pids[0]);
		end(pids[1]);
		skip();
	}
	kill(pids[1], SIGSTOP);  /* never attached to */
	usleep(100000);
	f = forensics_gather(pids, 2, &o);
	assert_non_null(f);
	assert_string_equal(cJSON_GetObjectItem(f, "gdb")->valuestring, "used");
	p = find(f, pids[0]);
	assert_non_null(p);
	if (!cJSON_GetObjectItem(p, "stack"))
		fail_msg("no stack: %s", cJSON_PrintUnformatted(p));
	p = find(f, pids[1]);
	assert_null(cJSON_GetObjectItem(p, "stack"));
	/* the stopped process is still stopped: nothing was done to it */
	cJSON_Delete(f);
	end(pids[0]);
	end(pids[1]);
}

/* RUN's result, polled for as a loop would (10 s at most). */
static cJSON *
run_wait(struct forensics_run *r, bool reap_all)
{
	struct pollfd p = { .fd = forensics_run_fd(r), .events = POLLIN };
	cJSON *f = NULL;

	for (int i = 0; i < 1000; i++) {
		assert_true(poll(&p, 1, 10) >= 0);
		/* the agent reaps the training's orphans with waitpid(-1):
		 * it may take the look's own child first */
		if (reap_all)
			while (waitpid(-1, NULL, WNOHANG) > 0)
				;
		if (p.revents && forensics_run_read(r, &f) == 1)
			return f;
	}
	fail_msg("the look did not end");
	return NULL;
}

static void
test_run_in_child(void **state)
{
	pid_t pid = sleeper(NULL);
	struct forensics_opts o = { .budget_s = 2, .gdb = false };
	struct forensics_run *r;
	cJSON *f;

	(void)state;
	for (int reap = 0; reap < 2; reap++) {
		assert_int_equal(forensics_start(&pid, 1, &o, &r), 0);
		f = run_wait(r, reap);
		assert_null(cJSON_GetObjectItem(f, "error"));
		assert_non_null(find(f, pid));
		assert_string_equal(cJSON_GetObjectItem(find(f, pid), "state")->valuestring, "S");
		cJSON_Delete(f);
		forensics_run_free(r);
	}
	/* ended before it is done: the child killed and reaped */
	assert_int_equal(forensics_start(&pid, 1, &o, &r), 0);
	forensics_run_free(r);
	assert_int_equal(waitpid(-1, NULL, WNOHANG), 0);  /* the sleeper alone is left */
	end(pid);
}

static void
test_open_under(void **state)
{
	char dir[] = "/tmp/vigil-forensics-XXXXXX", path[64], other[64];
	pid_t pid;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/ckpt.pt", dir);
	pid = sleeper(path);
	assert_true(forensics_open_under(&pid, 1, dir, NULL));
	snprintf(other, sizeof(other), "%s/", dir);
	assert_true(forensics_open_under(&pid, 1, other, NULL));
	/* a sibling whose name begins the same is not under it */
	snprintf(other, sizeof(other), "%.*s", (int)strlen(dir) - 1, dir);
	assert_false(forensics_open_under(&pid, 1, other, NULL));
	assert_false(forensics_open_under(&pid, 1, "relative", NULL));
	end(pid);
	unlink(path);
	rmdir(dir);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_gdb),
		cmocka_unit_test(test_run_in_child),
		cmocka_unit_test(test_sleeping_and_stopped),
		cmocka_unit_test(test_gdb),
		cmocka_unit_test(test_open_under),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
