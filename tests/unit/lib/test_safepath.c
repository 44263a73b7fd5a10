/*
 * test_safepath.c - paths another user cannot redirect: a scratch tree
 * S/a/b/c attacked at every component (a link at the first, a middle and
 * the last; a directory of another user at each; one that others may
 * write to), a sticky directory accepted only as the parent, directories
 * made and removed through their descriptors, and files judged.
 *
 * The cases with another user's files need root (chown); as anyone else
 * they are skipped.
 */
#include "autoconf.h"

#include "../vigil_test.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/safepath.h"
#include "lib/util.h"
#include "../scratch.h"

#define NOBODY 65534

struct fixture {
	char s[256];        /* the scratch root, S */
	char path[PATH_MAX];
	char why[PATH_MAX + 200];
	struct safepath_dir d;
};

/* S/REL */
static const char *
at(struct fixture *f, const char *rel)
{
	snprintf(f->path, sizeof(f->path), "%s/%s", f->s, rel);
	return f->path;
}

static int
setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	char p[PATH_MAX];

	if (!f || make_scratch_dir(f->s, sizeof(f->s), "safepath") < 0)
		return -1;
	snprintf(p, sizeof(p), "%s/a/b/c", f->s);
	for (char *x = p + strlen(f->s) + 1; *x; x++) {
		if (*x != '/')
			continue;
		*x = '\0';
		if (mkdir(p, 0755) < 0)
			return -1;
		*x = '/';
	}
	if (mkdir(p, 0755) < 0)
		return -1;
	safepath_dir_init(&f->d);
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *f = *state;

	safepath_dir_close(&f->d);
	(void)util_remove_tree(f->s);
	free(f);
	return 0;
}

static int
open_dir(struct fixture *f, const char *rel, unsigned flags)
{
	safepath_dir_close(&f->d);
	return safepath_dir_open(at(f, rel), flags, 0700, &f->d, f->why, sizeof(f->why));
}

/* WHY says that S/REL is WHAT. */
static void
says(struct fixture *f, const char *rel, const char *what)
{
	char want[PATH_MAX + 200];

	snprintf(want, sizeof(want), "%s/%s %s", f->s, rel, what);
	if (!strstr(f->why, want))
		fail_msg("[%s] does not say [%s]", f->why, want);
}

static void
test_good_path(void **state)
{
	struct fixture *f = *state;
	struct stat st;

	assert_int_equal(open_dir(f, "a/b/c", SAFEPATH_OWN), 0);
	assert_true(f->d.fd >= 0);
	assert_true(f->d.parent >= 0);
	assert_string_equal(f->d.name, "c");
	assert_string_equal(f->d.path, at(f, "a/b/c"));
	assert_false(f->d.made);
	assert_int_equal(fstat(f->d.fd, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	/* "." and ".." and doubled slashes walk as the kernel would */
	assert_int_equal(open_dir(f, "a/./b//../b/c/", SAFEPATH_OWN), 0);
	assert_string_equal(f->d.path, at(f, "a/b/c"));
	/* relative: from the working directory */
	assert_int_equal(chdir(f->s), 0);
	safepath_dir_close(&f->d);
	assert_int_equal(safepath_dir_open("a/b", 0, 0, &f->d, f->why, sizeof(f->why)), 0);
	assert_string_equal(f->d.path, at(f, "a/b"));
	assert_int_equal(chdir("/"), 0);
	/* "/" itself: fine on the way, but root's, not private to anyone else */
	safepath_dir_close(&f->d);
	assert_int_equal(safepath_dir_open("/", 0, 0, &f->d, f->why, sizeof(f->why)), 0);
	assert_int_equal(f->d.parent, -1);
}

/* A link at the first, a middle and the last component: refused, named. */
static void
test_links(void **state)
{
	struct fixture *f = *state;
	static const char *const cases[][2] = {
		{ "L1", "L1/b/c" }, { "a/L2", "a/L2/c" }, { "a/b/L3", "a/b/L3" },
	};
	char target[PATH_MAX];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		/* each pointing where the real component is */
		snprintf(target, sizeof(target), "%s", at(f, i == 0 ? "a" : i == 1 ? "a/b" : "a/b/c"));
		assert_int_equal(symlink(target, at(f, cases[i][0])), 0);
		assert_int_equal(open_dir(f, cases[i][1], SAFEPATH_OWN), -ELOOP);
		says(f, cases[i][0], "is a symbolic link");
		assert_int_equal(f->d.fd, -1);
		/* followed only where the caller allows links, and the link is
		 * root's or the caller's */
		assert_int_equal(open_dir(f, cases[i][1], SAFEPATH_FOLLOW | SAFEPATH_OWN), 0);
		assert_string_equal(f->d.path, at(f, "a/b/c"));
		if (geteuid() == 0) {
			assert_int_equal(lchown(at(f, cases[i][0]), NOBODY, NOBODY), 0);
			assert_int_equal(open_dir(f, cases[i][1], SAFEPATH_FOLLOW), -ELOOP);
			says(f, cases[i][0], "is a symbolic link of another user (uid 65534)");
		}
	}
	/* a loop of links ends */
	assert_int_equal(symlink("loop", at(f, "loop")), 0);
	assert_int_equal(open_dir(f, "loop/x", SAFEPATH_FOLLOW), -ELOOP);
	assert_non_null(strstr(f->why, "more than 40 symbolic links"));
}

/* A directory of another user at each position. */
static void
test_other_users(void **state)
{
	struct fixture *f = *state;
	static const char *const dirs[] = { "a", "a/b", "a/b/c" };

	if (geteuid() != 0)
		skip();
	for (size_t i = 0; i < 3; i++) {
		assert_int_equal(chown(at(f, dirs[i]), NOBODY, NOBODY), 0);
		assert_int_equal(open_dir(f, "a/b/c", 0), -EPERM);
		says(f, dirs[i], "is a directory of another user (uid 65534)");
		assert_int_equal(chown(at(f, dirs[i]), 0, 0), 0);
	}
	/* root's own directory is not private to a caller who is not root;
	 * as root, root's is the caller's */
	assert_int_equal(open_dir(f, "a/b/c", SAFEPATH_OWN), 0);
}

/* Writable by group or others, at each position. */
static void
test_writable(void **state)
{
	struct fixture *f = *state;
	static const char *const dirs[] = { "a", "a/b", "a/b/c" };

	for (size_t i = 0; i < 3; i++) {
		assert_int_equal(chmod(at(f, dirs[i]), 0775), 0);
		assert_int_equal(open_dir(f, "a/b/c", 0), -EACCES);
		says(f, dirs[i], "is writable by others (mode 0775, no sticky bit)");
		assert_int_equal(chmod(at(f, dirs[i]), 0757), 0);
		assert_int_equal(open_dir(f, "a/b/c", 0), -EACCES);
		says(f, dirs[i], "is writable by others (mode 0757, no sticky bit)");
		assert_int_equal(chmod(at(f, dirs[i]), 0755), 0);
	}
}

/*
 * Sticky and world-writable, as /tmp: fine on the way and as the parent
 * asked for, never as the private directory itself; and only the
 * component inside it matters, which must be root's or the caller's.
 */
static void
test_sticky(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(chmod(at(f, "a"), 01777), 0);
	assert_int_equal(open_dir(f, "a/b/c", SAFEPATH_OWN), 0);
	assert_int_equal(open_dir(f, "a", 0), 0);
	assert_int_equal(open_dir(f, "a", SAFEPATH_OWN), -EACCES);
	says(f, "a", "is writable by others (mode 1777)");
	/* the real /tmp */
	safepath_dir_close(&f->d);
	assert_int_equal(safepath_dir_open("/tmp", 0, 0, &f->d, f->why, sizeof(f->why)), 0);
	safepath_dir_close(&f->d);
	assert_int_equal(safepath_dir_open("/tmp", SAFEPATH_OWN, 0, &f->d, f->why,
	                                   sizeof(f->why)), geteuid() == 0 ? -EACCES : -EPERM);
	if (geteuid() != 0)
		return;
	/* inside it, another user's directory (or link) is theirs to swap */
	assert_int_equal(chown(at(f, "a/b"), NOBODY, NOBODY), 0);
	assert_int_equal(open_dir(f, "a/b/c", 0), -EPERM);
	says(f, "a/b", "is a directory of another user (uid 65534)");
	assert_int_equal(chown(at(f, "a/b"), 0, 0), 0);
	/* a sticky directory of another user's: they may rename anything in it */
	assert_int_equal(chown(at(f, "a"), NOBODY, NOBODY), 0);
	assert_int_equal(open_dir(f, "a/b/c", 0), -EPERM);
	says(f, "a", "is a directory of another user (uid 65534)");
}

/* Made with the mode asked, whatever the umask; parents too when asked;
 * not a file; not made through a refused component. */
static void
test_make(void **state)
{
	struct fixture *f = *state;
	struct stat st;
	mode_t old = umask(0777);
	int rc = open_dir(f, "a/new", SAFEPATH_MKDIR | SAFEPATH_OWN);

	umask(old);
	assert_int_equal(rc, 0);
	assert_true(f->d.made);
	assert_int_equal(lstat(at(f, "a/new"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	assert_int_equal(open_dir(f, "a/new", SAFEPATH_MKDIR | SAFEPATH_OWN), 0);
	assert_false(f->d.made);  /* there already */
	assert_int_equal(open_dir(f, "a/p/q/r", SAFEPATH_MKDIR), -ENOENT);
	says(f, "a/p", "does not exist");
	assert_int_equal(open_dir(f, "a/p/q/r", SAFEPATH_MKDIR | SAFEPATH_PARENTS), 0);
	assert_int_equal(lstat(at(f, "a/p/q"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	assert_int_equal(close(open(at(f, "a/file"), O_WRONLY | O_CREAT, 0600)), 0);
	assert_int_equal(open_dir(f, "a/file", SAFEPATH_MKDIR), -ENOTDIR);
	says(f, "a/file", "is not a directory");
	assert_int_equal(open_dir(f, "a/file/x", SAFEPATH_MKDIR | SAFEPATH_PARENTS), -ENOTDIR);
	assert_int_equal(chmod(at(f, "a"), 0777), 0);
	assert_int_equal(open_dir(f, "a/other", SAFEPATH_MKDIR), -EACCES);
	assert_int_equal(access(at(f, "a/other"), F_OK), -1);
}

/* Removed through the descriptors: contents, then the entry if it is
 * still the same directory; a temporary one is random and 0700. */
static void
test_remove_and_temp(void **state)
{
	struct fixture *f = *state;
	struct safepath_dir parent, t;
	char keep[PATH_MAX];

	assert_int_equal(open_dir(f, "a/rd", SAFEPATH_MKDIR | SAFEPATH_OWN), 0);
	assert_int_equal(util_write_atomic_at(f->d.fd, "hostfile", "x\n", 2, 0644), 0);
	assert_int_equal(mkdirat(f->d.fd, "sub", 0700), 0);
	assert_int_equal(safepath_dir_remove(&f->d), 0);
	assert_int_equal(access(at(f, "a/rd"), F_OK), -1);
	assert_int_equal(f->d.fd, -1);
	assert_int_equal(safepath_dir_remove(&f->d), 0);  /* closed: a no-op */
	/* moved away and replaced: the replacement stays */
	assert_int_equal(open_dir(f, "a/rd", SAFEPATH_MKDIR | SAFEPATH_OWN), 0);
	snprintf(keep, sizeof(keep), "%s", at(f, "a/moved"));
	assert_int_equal(rename(at(f, "a/rd"), keep), 0);
	assert_int_equal(mkdir(at(f, "a/rd"), 0700), 0);
	snprintf(keep, sizeof(keep), "%s", at(f, "a/rd/keep"));
	assert_int_equal(util_write_atomic_str(keep, "x", 0644), 0);
	assert_int_equal(safepath_dir_remove(&f->d), -ESTALE);
	assert_int_equal(access(keep, F_OK), 0);
	/* a temporary directory */
	assert_int_equal(safepath_dir_open(at(f, "a"), 0, 0, &parent, f->why, sizeof(f->why)), 0);
	assert_int_equal(safepath_dir_temp(&parent, "vigil", &t), 0);
	assert_true(t.made);
	assert_int_equal(strncmp(t.path, at(f, "a/vigil."), strlen(at(f, "a/vigil."))), 0);
	assert_int_equal(strlen(t.name), strlen("vigil.") + 6);
	snprintf(keep, sizeof(keep), "%s", t.path);
	assert_int_equal(access(keep, F_OK), 0);
	assert_int_equal(safepath_dir_remove(&t), 0);
	assert_int_equal(access(keep, F_OK), -1);
	safepath_dir_close(&parent);
}

/* Files: root's or the caller's, writable by no one else, reached safely. */
static void
test_files(void **state)
{
	struct fixture *f = *state;
	char file[PATH_MAX];
	struct stat st;
	int fd;

	snprintf(file, sizeof(file), "%s", at(f, "a/b/c/lib.so"));
	assert_int_equal(util_write_atomic_str(file, "x", 0644), 0);
	fd = safepath_file_open(file, 0, O_RDONLY, &st, f->why, sizeof(f->why));
	assert_true(fd >= 0);
	assert_true(S_ISREG(st.st_mode));
	close(fd);
	assert_int_equal(chmod(file, 0664), 0);
	assert_int_equal(safepath_file_open(file, 0, O_RDONLY, NULL, f->why, sizeof(f->why)),
	                 -EACCES);
	says(f, "a/b/c/lib.so", "is writable by others (mode 0664)");
	assert_int_equal(chmod(file, 0644), 0);
	/* through a link of root's (the caller's): followed when asked */
	assert_int_equal(symlink("c/lib.so", at(f, "a/b/link.so")), 0);
	assert_int_equal(safepath_file_open(at(f, "a/b/link.so"), 0, O_RDONLY, NULL, f->why,
	                                    sizeof(f->why)), -ELOOP);
	fd = safepath_file_open(at(f, "a/b/link.so"), SAFEPATH_FOLLOW, O_RDONLY, NULL, f->why,
	                        sizeof(f->why));
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(safepath_file_open(at(f, "a/b/none"), 0, O_RDONLY, NULL, f->why,
	                                    sizeof(f->why)), -ENOENT);
	fd = safepath_file_open(at(f, "a/b"), 0, O_RDONLY, &st, f->why, sizeof(f->why));
	assert_true(fd >= 0 && S_ISDIR(st.st_mode));  /* unjudged: the caller's to refuse */
	close(fd);
	assert_int_equal(safepath_file_open(file, 0, O_RDONLY | O_CREAT, NULL, f->why,
	                                    sizeof(f->why)), -EINVAL);
	/* a directory on the way others may write to */
	assert_int_equal(chmod(at(f, "a/b"), 0777), 0);
	assert_int_equal(safepath_file_open(file, SAFEPATH_FOLLOW, O_RDONLY, NULL, f->why,
	                                    sizeof(f->why)), -EACCES);
	says(f, "a/b", "is writable by others (mode 0777, no sticky bit)");
	assert_int_equal(chmod(at(f, "a/b"), 0755), 0);
	if (geteuid() != 0)
		return;
	assert_int_equal(chown(file, NOBODY, NOBODY), 0);
	assert_int_equal(safepath_file_open(file, 0, O_RDONLY, NULL, f->why, sizeof(f->why)),
	                 -EPERM);
	says(f, "a/b/c/lib.so", "belongs to another user (uid 65534)");
	assert_int_equal(chown(file, 0, 0), 0);
	assert_int_equal(lchown(at(f, "a/b/link.so"), NOBODY, NOBODY), 0);
	assert_int_equal(safepath_file_open(at(f, "a/b/link.so"), SAFEPATH_FOLLOW, O_RDONLY, NULL,
	                                    f->why, sizeof(f->why)), -ELOOP);
	says(f, "a/b/link.so", "is a symbolic link of another user (uid 65534)");
}

int
main(void)
{
#define T(t) cmocka_unit_test_setup_teardown(t, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_good_path),
		T(test_links),
		T(test_other_users),
		T(test_writable),
		T(test_sticky),
		T(test_make),
		T(test_remove_and_temp),
		T(test_files),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
