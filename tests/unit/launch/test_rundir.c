/*
 * test_rundir.c - the run directory: private by default, a given one
 * refused when another user could replace what is in it, removed at the
 * end only when vigil made it.
 */
#include "autoconf.h"

#include "../vigil_test.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "launch/rundir.h"
#include "lib/util.h"
#include "../scratch.h"

struct fixture {
	char dir[256];
	char path[512];
	char err[512];
	char warn[512];
	struct rundir rd;
};

static int
setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f || make_scratch_dir(f->dir, sizeof(f->dir), "rundir") < 0)
		return -1;
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *f = *state;

	(void)rundir_release(&f->rd);
	(void)chmod(f->dir, 0700);
	(void)util_remove_tree(f->dir);
	free(f);
	return 0;
}

static int
prepare(struct fixture *f, const char *given, const char *tmpdir)
{
	return rundir_prepare(&f->rd, given, tmpdir, f->err, sizeof(f->err), f->warn,
	                      sizeof(f->warn));
}

static mode_t
mode_of(const char *path)
{
	struct stat st;

	assert_int_equal(lstat(path, &st), 0);
	return st.st_mode;
}

/* The default: a new 0700 directory with a random name, gone after release. */
static void
test_default_private(void **state)
{
	struct fixture *f = *state;
	char again[400];
	struct rundir other = { 0 };
	mode_t old = umask(0777);  /* a umask that would leave the owner out */
	int rc = prepare(f, NULL, f->dir);

	umask(old);
	assert_int_equal(rc, 0);
	assert_true(f->rd.made);
	assert_string_equal(f->warn, "");
	assert_int_equal(strncmp(f->rd.path, f->dir, strlen(f->dir)), 0);
	assert_non_null(strstr(f->rd.path, "/vigil."));
	assert_true(S_ISDIR(mode_of(f->rd.path)));
	assert_int_equal(mode_of(f->rd.path) & 07777, 0700);
	assert_int_equal(util_dir_is_private(f->rd.path), 0);
	/* another agent of the job on this host gets a directory of its own */
	assert_int_equal(rundir_prepare(&other, NULL, f->dir, NULL, 0, NULL, 0), 0);
	assert_string_not_equal(other.path, f->rd.path);
	assert_int_equal(rundir_release(&other), 0);
	/* released with what is in it (a hostfile) */
	assert_true(strlen(f->rd.path) < sizeof(again));
	snprintf(again, sizeof(again), "%.399s", f->rd.path);
	snprintf(f->path, sizeof(f->path), "%s/hostfile", again);
	assert_int_equal(util_write_atomic_str(f->path, "n1 slots=8\n", 0644), 0);
	assert_int_equal(rundir_release(&f->rd), 0);
	assert_int_equal(access(again, F_OK), -1);
	assert_string_equal(f->rd.path, "");
	assert_int_equal(rundir_release(&f->rd), 0);  /* twice: a no-op */
}

/* A TMPDIR others may write to without the sticky bit, or a relative one: /tmp. */
static void
test_default_unsafe_tmpdir(void **state)
{
	struct fixture *f = *state;

	snprintf(f->path, sizeof(f->path), "%s/open", f->dir);
	assert_int_equal(mkdir(f->path, 0700), 0);
	assert_int_equal(chmod(f->path, 0777), 0);
	assert_int_equal(prepare(f, NULL, f->path), 0);
	assert_non_null(strstr(f->warn, "/open is writable by others (mode 0777, no sticky bit)"));
	assert_int_equal(strncmp(f->rd.path, "/tmp/vigil.", 11), 0);
	assert_int_equal(rundir_release(&f->rd), 0);
	/* sticky, as /tmp is: entries there are their owners' alone */
	assert_int_equal(chmod(f->path, 01777), 0);
	assert_int_equal(prepare(f, NULL, f->path), 0);
	assert_string_equal(f->warn, "");
	assert_int_equal(strncmp(f->rd.path, f->path, strlen(f->path)), 0);
	assert_int_equal(rundir_release(&f->rd), 0);
	assert_int_equal(prepare(f, NULL, "relative/tmp"), 0);
	assert_non_null(strstr(f->warn, "not an absolute path"));
	assert_int_equal(rundir_release(&f->rd), 0);
}

/* --run-dir absent: made 0700 and removed at the end; present: kept. */
static void
test_given_made_or_kept(void **state)
{
	struct fixture *f = *state;

	snprintf(f->path, sizeof(f->path), "%s/rd", f->dir);
	assert_int_equal(prepare(f, f->path, NULL), 0);
	assert_true(f->rd.made);
	assert_string_equal(f->rd.path, f->path);
	assert_int_equal(mode_of(f->path) & 07777, 0700);
	assert_int_equal(rundir_release(&f->rd), 0);
	assert_int_equal(access(f->path, F_OK), -1);
	/* the user's own directory: used, never removed */
	assert_int_equal(mkdir(f->path, 0750), 0);
	assert_int_equal(prepare(f, f->path, NULL), 0);
	assert_false(f->rd.made);
	assert_int_equal(rundir_release(&f->rd), 0);
	assert_int_equal(access(f->path, F_OK), 0);
	/* a trailing slash names the same directory */
	strcat(f->path, "/");
	assert_int_equal(prepare(f, f->path, NULL), 0);
	assert_false(f->rd.made);
}

/* What another user could change under the agent is refused, and said. */
static void
test_given_unsafe(void **state)
{
	struct fixture *f = *state;
	char target[600];
	int rc;

	snprintf(f->path, sizeof(f->path), "%s/open", f->dir);
	assert_int_equal(mkdir(f->path, 0700), 0);
	assert_int_equal(chmod(f->path, 0777), 0);
	rc = prepare(f, f->path, NULL);
	assert_int_equal(rc, -EACCES);
	assert_true(rundir_usage_error(rc));
	assert_non_null(strstr(f->err, "is writable by others (mode 0777)"));
	assert_int_equal(access(f->path, F_OK), 0);  /* not removed: not vigil's */
	/* inside it: its entries can be renamed by anyone */
	snprintf(target, sizeof(target), "%s/rd", f->path);
	rc = prepare(f, target, NULL);
	assert_true(rundir_usage_error(rc));
	assert_non_null(strstr(f->err, "/open is writable by others (mode 0777, no sticky bit)"));
	assert_int_equal(access(target, F_OK), -1);
	/* a symbolic link, even to a good directory */
	snprintf(target, sizeof(target), "%s/link", f->dir);
	assert_int_equal(symlink(f->dir, target), 0);
	rc = prepare(f, target, NULL);
	assert_int_equal(rc, -ELOOP);
	assert_non_null(strstr(f->err, "is a symbolic link"));
	strcat(target, "//");  /* lstat("link/") would follow it */
	rc = prepare(f, target, NULL);
	assert_int_equal(rc, -ELOOP);
	/* a file */
	snprintf(target, sizeof(target), "%s/file", f->dir);
	assert_int_equal(util_write_atomic_str(target, "x", 0644), 0);
	rc = prepare(f, target, NULL);
	assert_int_equal(rc, -ENOTDIR);
	assert_non_null(strstr(f->err, "is not a directory"));
	/* a parent that is not there */
	snprintf(target, sizeof(target), "%s/no/such", f->dir);
	rc = prepare(f, target, NULL);
	assert_true(rundir_usage_error(rc));
	assert_non_null(strstr(f->err, "/no does not exist"));
	rc = prepare(f, "", NULL);
	assert_int_equal(rc, -EINVAL);
}

/* Another user's directory, as root sees it (the case that matters). */
static void
test_given_other_user(void **state)
{
	struct fixture *f = *state;
	int rc;

	if (geteuid() != 0)
		skip();
	snprintf(f->path, sizeof(f->path), "%s/theirs", f->dir);
	assert_int_equal(mkdir(f->path, 0700), 0);
	assert_int_equal(chown(f->path, 65534, 65534), 0);
	rc = prepare(f, f->path, NULL);
	assert_int_equal(rc, -EPERM);
	assert_non_null(strstr(f->err, "/theirs is a directory of another user (uid 65534)"));
	/* ... and a directory inside it, which they could swap */
	strcat(f->path, "/rd");
	rc = prepare(f, f->path, NULL);
	assert_true(rundir_usage_error(rc));
	assert_non_null(strstr(f->err, "/theirs is a directory of another user (uid 65534)"));
	assert_int_equal(access(f->path, F_OK), -1);
}

/*
 * A link of another user's on the way to a directory of root's (in a
 * sticky directory, as /tmp/L would be): refused, naming the link,
 * before anything is made through it.
 */
static void
test_given_through_link(void **state)
{
	struct fixture *f = *state;
	char sticky[300], mine[300], link[320];
	int rc;

	snprintf(sticky, sizeof(sticky), "%s/tmp", f->dir);
	snprintf(mine, sizeof(mine), "%s/mine", f->dir);
	assert_int_equal(mkdir(sticky, 0700), 0);
	assert_int_equal(chmod(sticky, 01777), 0);
	assert_int_equal(mkdir(mine, 0755), 0);
	snprintf(link, sizeof(link), "%s/L", sticky);
	assert_int_equal(symlink(mine, link), 0);
	if (geteuid() == 0)
		assert_int_equal(lchown(link, 65534, 65534), 0);
	snprintf(f->path, sizeof(f->path), "%s/rd", link);
	rc = prepare(f, f->path, NULL);
	assert_int_equal(rc, -ELOOP);
	assert_true(rundir_usage_error(rc));
	assert_non_null(strstr(f->err, "/tmp/L is a symbolic link"));
	if (geteuid() == 0)
		assert_non_null(strstr(f->err, "of another user (uid 65534)"));
	snprintf(f->path, sizeof(f->path), "%s/rd", mine);
	assert_int_equal(access(f->path, F_OK), -1);  /* nothing made through it */
}

/*
 * Release removes what vigil made through the descriptors it held since:
 * the directory moved away is emptied where it is, and whatever was put
 * at its old name is left alone.
 */
static void
test_release_by_descriptor(void **state)
{
	struct fixture *f = *state;
	char moved[300], planted[600];

	snprintf(f->path, sizeof(f->path), "%s/rd", f->dir);
	assert_int_equal(prepare(f, f->path, NULL), 0);
	assert_true(f->rd.made);
	assert_true(rundir_fd(&f->rd) >= 0);
	/* the hostfile goes in through the descriptor */
	assert_int_equal(util_write_atomic_at(rundir_fd(&f->rd), "hostfile", "n1 slots=1\n", 11,
	                                      0644), 0);
	snprintf(moved, sizeof(moved), "%s/moved", f->dir);
	assert_int_equal(rename(f->path, moved), 0);
	assert_int_equal(mkdir(f->path, 0700), 0);
	snprintf(planted, sizeof(planted), "%s/keep", f->path);
	assert_int_equal(util_write_atomic_str(planted, "x", 0644), 0);
	assert_int_equal(rundir_release(&f->rd), -ESTALE);
	assert_int_equal(access(planted, F_OK), 0);
	snprintf(planted, sizeof(planted), "%s/hostfile", moved);
	assert_int_equal(access(planted, F_OK), -1);
	assert_int_equal(rundir_fd(&f->rd), -1);
}

int
main(void)
{
#define T(t) cmocka_unit_test_setup_teardown(t, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_default_private),
		T(test_default_unsafe_tmpdir),
		T(test_given_made_or_kept),
		T(test_given_unsafe),
		T(test_given_other_user),
		T(test_given_through_link),
		T(test_release_by_descriptor),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
