/*
 * test_util.c - the atomic writer, private directories, UTF-8 repair,
 * sizes and plurals for people, and host-name validation.
 */
#include "autoconf.h"

#include "../vigil_test.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/util.h"
#include "../scratch.h"

struct fixture {
	char dir[256];
	char path[512];
};

static int
setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f || make_scratch_dir(f->dir, sizeof(f->dir), "util") < 0)
		return -1;
	snprintf(f->path, sizeof(f->path), "%s/report.json", f->dir);
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *f = *state;

	(void)util_remove_tree(f->dir);
	free(f);
	return 0;
}

/* Entries in DIR, "." and ".." excluded. */
static int
count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

static void
test_atomic_writes_content_and_mode(void **state)
{
	struct fixture *f = *state;
	mode_t old = umask(0);  /* a permissive umask must not widen the mode */
	struct stat st;
	char *text;

	assert_int_equal(util_write_atomic_str(f->path, "{\"a\":1}\n", 0644), 0);
	umask(old);
	text = slurp(f->path, 64, NULL);
	assert_string_equal(text, "{\"a\":1}\n");
	free(text);
	assert_int_equal(stat(f->path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0644);
	/* nothing but the file itself is left in the directory */
	assert_int_equal(count_entries(f->dir), 1);
}

static void
test_atomic_replaces(void **state)
{
	struct fixture *f = *state;
	char *text;

	assert_int_equal(util_write_atomic_str(f->path, "old content, longer", 0600), 0);
	assert_int_equal(util_write_atomic_str(f->path, "new", 0600), 0);
	text = slurp(f->path, 64, NULL);
	assert_string_equal(text, "new");
	free(text);
	assert_int_equal(count_entries(f->dir), 1);
}

/* A symlink planted at the target is replaced, never followed. */
static void
test_atomic_does_not_follow_planted_symlink(void **state)
{
	struct fixture *f = *state;
	char victim[600];
	struct stat st;
	char *text;

	snprintf(victim, sizeof(victim), "%s/victim", f->dir);
	assert_int_equal(util_write_atomic_str(victim, "precious", 0600), 0);
	assert_int_equal(symlink(victim, f->path), 0);
	assert_int_equal(util_write_atomic_str(f->path, "report", 0644), 0);
	text = slurp(victim, 64, NULL);
	assert_string_equal(text, "precious");
	free(text);
	assert_int_equal(lstat(f->path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
}

static void
test_atomic_refuses_writable_modes(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(util_write_atomic_str(f->path, "x", 0666), -EINVAL);
	assert_int_equal(util_write_atomic_str(f->path, "x", 0664), -EINVAL);
	assert_int_equal(access(f->path, F_OK), -1);
}

static void
test_atomic_missing_directory(void **state)
{
	struct fixture *f = *state;
	char path[600];

	snprintf(path, sizeof(path), "%s/no/such/file", f->dir);
	assert_int_equal(util_write_atomic_str(path, "x", 0644), -ENOENT);
	assert_int_equal(util_write_atomic_str(f->dir, "x", 0644) < 0, 1);
	assert_int_equal(util_write_atomic_str("", "x", 0644), -EINVAL);
}

static void
test_private_dir(void **state)
{
	struct fixture *f = *state;
	char buf[600], inner[700];
	struct stat st;

	assert_int_equal(util_private_dir(f->dir, "vigil.job", buf, sizeof(buf)), 0);
	assert_int_equal(strncmp(buf, f->dir, strlen(f->dir)), 0);
	assert_int_equal(stat(buf, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	assert_int_equal(util_dir_is_private(buf), 0);
	/* a file and a subdirectory inside, then all of it removed */
	snprintf(inner, sizeof(inner), "%s/sub", buf);
	assert_int_equal(mkdir(inner, 0700), 0);
	snprintf(inner, sizeof(inner), "%s/sub/hostfile", buf);
	assert_int_equal(util_write_atomic_str(inner, "n1 slots=1\n", 0644), 0);
	assert_int_equal(util_remove_tree(buf), 0);
	assert_int_equal(access(buf, F_OK), -1);
	assert_int_equal(util_private_dir(f->dir, "x", buf, 10), -ENAMETOOLONG);
}

static void
test_dir_is_private(void **state)
{
	struct fixture *f = *state;
	char d[600], link[600];

	snprintf(d, sizeof(d), "%s/open", f->dir);
	assert_int_equal(mkdir(d, 0700), 0);
	assert_int_equal(chmod(d, 0777), 0);
	assert_int_equal(util_dir_is_private(d), -EACCES);
	assert_int_equal(chmod(d, 0700), 0);
	assert_int_equal(util_dir_is_private(d), 0);
	snprintf(link, sizeof(link), "%s/link", f->dir);
	assert_int_equal(symlink(d, link), 0);
	assert_int_equal(util_dir_is_private(link), -ELOOP);
	assert_int_equal(util_write_atomic_str(f->path, "x", 0644), 0);
	assert_int_equal(util_dir_is_private(f->path), -ENOTDIR);
	snprintf(d, sizeof(d), "%s/absent", f->dir);
	assert_int_equal(util_dir_is_private(d), -ENOENT);
}

/* util_remove_tree() removes a symlink, not what it points to. */
static void
test_remove_tree_keeps_link_targets(void **state)
{
	struct fixture *f = *state;
	char tree[600], outside[600], link[700];

	snprintf(tree, sizeof(tree), "%s/tree", f->dir);
	snprintf(outside, sizeof(outside), "%s/outside", f->dir);
	assert_int_equal(mkdir(tree, 0700), 0);
	assert_int_equal(mkdir(outside, 0700), 0);
	snprintf(link, sizeof(link), "%s/keep", outside);
	assert_int_equal(util_write_atomic_str(link, "keep", 0644), 0);
	snprintf(link, sizeof(link), "%s/link", tree);
	assert_int_equal(symlink(outside, link), 0);
	assert_int_equal(util_remove_tree(tree), 0);
	snprintf(link, sizeof(link), "%s/keep", outside);
	assert_int_equal(access(link, F_OK), 0);
}

/* util_mkdir_p() makes what is missing, and is content with what exists. */
static void
test_mkdir_p(void **state)
{
	struct fixture *f = *state;
	char deep[600], file[700];
	struct stat st;

	snprintf(deep, sizeof(deep), "%s/a/b//c", f->dir);
	assert_int_equal(util_mkdir_p(deep, 0755), 0);
	assert_int_equal(stat(deep, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(util_mkdir_p(deep, 0755), 0);
	snprintf(file, sizeof(file), "%s/a/file", f->dir);
	assert_int_equal(util_write_atomic_str(file, "x", 0644), 0);
	snprintf(deep, sizeof(deep), "%s/a/file/d", f->dir);
	assert_int_equal(util_mkdir_p(deep, 0755), -ENOTDIR);
	assert_int_equal(util_mkdir_p("", 0755), -ENOENT);
}

/*
 * util_opendir_at() lists on a description of its own (the caller's
 * descriptor stays open and unmoved), and says why it could not.
 */
static void
test_opendir_at(void **state)
{
	struct fixture *f = *state;
	char path[600];
	struct dirent *e;
	int dfd, seen = 0;
	DIR *d;

	snprintf(path, sizeof(path), "%s/sub", f->dir);
	assert_int_equal(util_mkdir_p(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/sub/one", f->dir);
	assert_int_equal(util_write_atomic_str(path, "x", 0644), 0);
	dfd = open(f->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dfd >= 0);
	for (int pass = 0; pass < 2; pass++) {  /* twice: no shared position */
		d = util_opendir_at(dfd, "sub");
		assert_non_null(d);
		while ((e = readdir(d)))
			seen += strcmp(e->d_name, "one") == 0;
		assert_int_equal(closedir(d), 0);
	}
	assert_int_equal(seen, 2);
	d = util_opendir_at(dfd, ".");
	assert_non_null(d);
	assert_int_equal(closedir(d), 0);
	assert_int_equal(fcntl(dfd, F_GETFD), FD_CLOEXEC);  /* still open */
	errno = 0;
	assert_null(util_opendir_at(dfd, "sub/one"));
	assert_int_equal(errno, ENOTDIR);
	errno = 0;
	assert_null(util_opendir_at(dfd, "missing"));
	assert_int_equal(errno, ENOENT);
	(void)close(dfd);
}

/* util_read_all() reads to LEN or the end, across short reads. */
static void
test_read_all(void **state)
{
	char buf[16];
	int p[2];

	(void)state;
	assert_int_equal(pipe(p), 0);
	assert_int_equal(util_write_all(p[1], "abc", 3), 0);
	assert_int_equal(util_write_all(p[1], "defg", 4), 0);
	assert_int_equal(util_read_all(p[0], buf, 5), 5);     /* two writes */
	assert_memory_equal(buf, "abcde", 5);
	(void)close(p[1]);
	assert_int_equal(util_read_all(p[0], buf, sizeof(buf)), 2);  /* the end */
	assert_memory_equal(buf, "fg", 2);
	assert_int_equal(util_read_all(p[0], buf, sizeof(buf)), 0);
	(void)close(p[0]);
	assert_int_equal(util_read_all(p[0], buf, sizeof(buf)), -EBADF);
}

/* Sizes and rates for people: one form everywhere. */
static void
test_fmt_bytes(void **state)
{
	static const struct {
		double bytes;
		const char *want;
	} cases[] = {
		{ 0, "0 B" },
		{ 512, "512 B" },
		{ 1023, "1023 B" },
		{ 1023.6, "1.0 KiB" },            /* not "1024 B" */
		{ 1536, "1.5 KiB" },
		{ 300953.6, "294 KiB" },
		{ 3.5 * 1048576, "3.5 MiB" },
		{ 9.94 * 1048576, "9.9 MiB" },
		{ 9.96 * 1048576, "10 MiB" },     /* not "10.0 MiB" */
		{ 118.4 * 1048576, "118 MiB" },
		{ 1023.7 * 1048576, "1.0 GiB" },  /* not "1024 MiB" */
		{ 40.0 * 1073741824, "40 GiB" },
		{ 3.0 * 1099511627776, "3.0 TiB" },
		{ -5, "0 B" },
	};
	char buf[32];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_ptr_equal(util_fmt_bytes(cases[i].bytes, buf, sizeof(buf)), buf);
		assert_string_equal(buf, cases[i].want);
	}
	/* a buffer too small is cut, never overrun */
	util_fmt_bytes(118.4 * 1048576, buf, 4);
	assert_string_equal(buf, "118");
}

static void
test_plural(void **state)
{
	(void)state;
	assert_string_equal(util_plural(1), "");
	assert_string_equal(util_plural(0), "s");
	assert_string_equal(util_plural(2), "s");
	assert_string_equal(util_plural(-1), "s");
}

static void
test_utf8_repair(void **state)
{
	static const struct {
		const char *in;
		size_t len;
		const char *out;
	} cases[] = {
		{ "plain ascii", 11, "plain ascii" },
		{ "caf\xc3\xa9", 5, "caf\xc3\xa9" },                          /* é */
		{ "\xe6\x80\xa7\xe8\x83\xbd", 6, "\xe6\x80\xa7\xe8\x83\xbd" }, /* 性能 */
		{ "\xf0\x9f\x98\x80", 4, "\xf0\x9f\x98\x80" },                  /* U+1F600 */
		{ "a\xffz", 3, "a\xef\xbf\xbdz" },                             /* stray byte */
		{ "\xc0\xaf", 2, "\xef\xbf\xbd\xef\xbf\xbd" },                 /* overlong '/' */
		{ "\xed\xa0\x80", 3, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" }, /* surrogate */
		{ "\xf4\x90\x80\x80", 4,
		  "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" },        /* > U+10FFFF */
		{ "ab\xe6\x80", 4, "ab\xef\xbf\xbd\xef\xbf\xbd" },             /* cut short */
		{ "a\0b", 3, "a\xef\xbf\xbd" "b" },                           /* embedded NUL */
		{ "", 0, "" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *r = util_utf8_repair(cases[i].in, cases[i].len);

		assert_non_null(r);
		assert_string_equal(r, cases[i].out);
		assert_true(util_utf8_valid(r, strlen(r)));
		free(r);
	}
	assert_false(util_utf8_valid("a\xffz", 3));
	assert_false(util_utf8_valid("a\0b", 3));
	assert_true(util_utf8_valid("caf\xc3\xa9", 5));
}

static void
test_hostname_check(void **state)
{
	static const char *good[] = {
		"n1", "node07", "gpu-a100-17", "login.cluster.example.org", "cn_003",
		"a", "NODE12",
	};
	static const struct {
		const char *name;
		const char *why;
	} bad[] = {
		{ "", "is empty" },
		{ "evil\nevilhost slots=128", "contains a line break" },
		{ "two words", "contains a blank" },
		{ "-lead", "has a label that starts with a hyphen" },
		{ "trail-", "has a label that ends with a hyphen" },
		{ "a..b", "has an empty label (two dots, or a dot at the start)" },
		{ "host:8", "contains a character other than letters, digits, '-', '_' and '.'" },
		{ "caf\xc3\xa9", "contains a control or non-ASCII character" },
	};
	char why[128], longlabel[80];

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		assert_int_equal(util_hostname_check(good[i], why, sizeof(why)), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(util_hostname_check(bad[i].name, why, sizeof(why)), -EINVAL);
		assert_string_equal(why, bad[i].why);
	}
	memset(longlabel, 'a', 64);
	longlabel[64] = '\0';
	assert_int_equal(util_hostname_check(longlabel, why, sizeof(why)), -EINVAL);
	assert_string_equal(why, "has a label longer than 63 characters");
	assert_int_equal(util_hostname_check(NULL, NULL, 0), -EINVAL);
}

static void
test_clock_moves_forward(void **state)
{
	int64_t a = util_now_ns(), b;

	(void)state;
	b = util_now_ns();
	assert_true(b >= a);
	assert_true(util_now_s() > 0);
	assert_true(util_wall_s() > 1.6e9);  /* after 2020 */
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_atomic_writes_content_and_mode, setup, teardown),
		cmocka_unit_test_setup_teardown(test_atomic_replaces, setup, teardown),
		cmocka_unit_test_setup_teardown(test_atomic_does_not_follow_planted_symlink, setup,
		                                teardown),
		cmocka_unit_test_setup_teardown(test_atomic_refuses_writable_modes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_atomic_missing_directory, setup, teardown),
		cmocka_unit_test_setup_teardown(test_private_dir, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dir_is_private, setup, teardown),
		cmocka_unit_test_setup_teardown(test_remove_tree_keeps_link_targets, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mkdir_p, setup, teardown),
		cmocka_unit_test_setup_teardown(test_opendir_at, setup, teardown),
		cmocka_unit_test(test_read_all),
		cmocka_unit_test(test_fmt_bytes),
		cmocka_unit_test(test_plural),
		cmocka_unit_test(test_utf8_repair),
		cmocka_unit_test(test_hostname_check),
		cmocka_unit_test(test_clock_moves_forward),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
