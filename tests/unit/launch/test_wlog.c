/*
 * test_wlog.c - a hidden node's output kept in a bounded, rotated file.
 */
#include "autoconf.h"

#include "../vigil_test.h"
#include "../scratch.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "launch/wlog.h"

struct fixture {
	char dir[128], logs[200];
};

static int
setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f || make_scratch_dir(f->dir, sizeof(f->dir), "wlog") < 0)
		return -1;
	snprintf(f->logs, sizeof(f->logs), "%s/logs", f->dir);
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	assert_int_equal(system(cmd), 0);
	free(f);
	return 0;
}

static long long
size_of(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

static void
test_write_and_rotate(void **state)
{
	struct fixture *f = *state;
	char err[300], path[300], old[310], *text;
	struct wlog *w = wlog_open(f->logs, "n2", 100, err, sizeof(err));

	assert_non_null(w);
	snprintf(path, sizeof(path), "%s/n2.out", f->logs);
	snprintf(old, sizeof(old), "%s.1", path);
	assert_string_equal(wlog_path(w), path);
	for (int i = 0; i < 7; i++)
		assert_int_equal(wlog_write(w, "0123456789abcdefghi\n", 20), 0);
	/* 140 bytes: rotated after 100, never more than the bound in one file */
	assert_int_equal(size_of(old), 100);
	assert_int_equal(size_of(path), 40);
	for (int i = 0; i < 5; i++)
		assert_int_equal(wlog_write(w, "0123456789abcdefghi\n", 20), 0);
	assert_int_equal(size_of(old), 100);
	assert_int_equal(size_of(path), 40);
	wlog_close(w);
	/* opened again: appended to */
	w = wlog_open(f->logs, "n2", 1000, err, sizeof(err));
	assert_non_null(w);
	assert_int_equal(wlog_write(w, "more\n", 5), 0);
	wlog_close(w);
	text = slurp(path, 200, NULL);
	assert_int_equal(strlen(text), 45);
	assert_string_equal(text + 40, "more\n");
	free(text);
	wlog_close(NULL);
}

/* A directory others could write to, or a planted link, is refused. */
static void
test_refused(void **state)
{
	struct fixture *f = *state;
	char err[300], path[300];
	struct wlog *w;

	assert_int_equal(mkdir(f->logs, 0777), 0);
	assert_int_equal(chmod(f->logs, 0777), 0);
	w = wlog_open(f->logs, "n1", 100, err, sizeof(err));
	assert_null(w);
	assert_non_null(strstr(err, "writable by others"));
	assert_int_equal(chmod(f->logs, 0755), 0);
	snprintf(path, sizeof(path), "%s/n1.out", f->logs);
	assert_int_equal(symlink("/etc/passwd", path), 0);
	w = wlog_open(f->logs, "n1", 100, err, sizeof(err));
	assert_null(w);
	assert_int_equal(errno, ELOOP);
	assert_non_null(strstr(err, "cannot open"));
}

static unsigned
mode_of(const char *path)
{
	struct stat st;

	assert_int_equal(lstat(path, &st), 0);
	return (unsigned)(st.st_mode & 07777);
}

/*
 * The logs are the user's alone whatever the umask: the directories made
 * 0700 (parents too), the files 0600, an older 0644 file made private; a
 * directory the user made keeps the mode given it; a path through a link
 * is refused.
 */
static void
test_private(void **state)
{
	struct fixture *f = *state;
	char err[400], deep[300], path[400], link[300];
	mode_t old = umask(0);
	struct wlog *w;

	snprintf(deep, sizeof(deep), "%s/a/b", f->logs);
	w = wlog_open(deep, "n1", 100, err, sizeof(err));
	umask(old);
	assert_non_null(w);
	assert_int_equal(mode_of(f->logs), 0700);
	assert_int_equal(mode_of(deep), 0700);
	assert_int_equal(mode_of(wlog_path(w)), 0600);
	wlog_close(w);
	snprintf(path, sizeof(path), "%s/n2.out", deep);
	assert_int_equal(close(open(path, O_WRONLY | O_CREAT, 0644)), 0);
	assert_int_equal(chmod(path, 0644), 0);
	w = wlog_open(deep, "n2", 100, err, sizeof(err));
	assert_non_null(w);
	assert_int_equal(mode_of(path), 0600);
	wlog_close(w);
	assert_int_equal(chmod(deep, 0750), 0);
	w = wlog_open(deep, "n2", 100, err, sizeof(err));
	assert_non_null(w);
	assert_int_equal(mode_of(deep), 0750);
	wlog_close(w);
	snprintf(link, sizeof(link), "%s/link", f->dir);
	assert_int_equal(symlink(f->logs, link), 0);
	snprintf(path, sizeof(path), "%s/a/b", link);
	w = wlog_open(path, "n1", 100, err, sizeof(err));
	assert_null(w);
	assert_int_equal(errno, ELOOP);
	assert_non_null(strstr(err, "/link is a symbolic link"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_write_and_rotate, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_private, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
