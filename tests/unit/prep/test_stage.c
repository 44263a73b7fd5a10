/*
 * test_stage.c - data staging: names and keys, the copy and its reuse,
 * read-only copies, the disk's maximum use, the retention, and the locks
 * that keep a copy a job trains on.
 */
#include "autoconf.h"

#include "../vigil_test.h"
#include "../scratch.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/util.h"
#include "prep/stage.h"

struct fixture {
	char dir[128], src[200], stage[200];
	/* what the progress callback saw */
	unsigned long long plan_bytes, plan_files, copy_bytes, copy_files, copied_bytes, copied_files;
	int plans, readies;
	bool reused;
	char path[512];
	char events[64];     /* P plan, C copied, R ready, in order (the first 63) */
	int mutate;          /* at a COPIED event: 0 nothing, 1 change the source once, 2 always */
};

static int
setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f || make_scratch_dir(f->dir, sizeof(f->dir), "stage") < 0)
		return -1;
	snprintf(f->src, sizeof(f->src), "%s/src", f->dir);
	snprintf(f->stage, sizeof(f->stage), "%s/stage", f->dir);
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[300];

	/* the copies are read-only: chmod first, as an administrator would */
	snprintf(cmd, sizeof(cmd), "chmod -R u+w '%s' && rm -rf '%s'", f->dir, f->dir);
	assert_int_equal(system(cmd), 0);
	free(f);
	return 0;
}

static void
write_file(const char *dir, const char *name, size_t size, int seed)
{
	char path[512];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fp = fopen(path, "w");
	assert_non_null(fp);
	for (size_t i = 0; i < size; i++)
		fputc((int)((i * 31 + (size_t)seed) & 0xff), fp);
	assert_int_equal(fclose(fp), 0);
}

/* src/: big (3 MiB), small files, an empty one, sub/deeper/, a link. */
static void
make_source(struct fixture *f)
{
	char sub[300];

	assert_int_equal(mkdir(f->src, 0755), 0);
	write_file(f->src, "big", 3 << 20, 1);
	for (int i = 0; i < 12; i++) {
		char name[16];

		snprintf(name, sizeof(name), "f%02d", i);
		write_file(f->src, name, 1000 * (size_t)(i + 1), i);
	}
	write_file(f->src, "empty", 0, 0);
	snprintf(sub, sizeof(sub), "%s/sub", f->src);
	assert_int_equal(mkdir(sub, 0755), 0);
	write_file(sub, "a", 5000, 7);
	snprintf(sub, sizeof(sub), "%s/sub/deeper", f->src);
	assert_int_equal(mkdir(sub, 0700), 0);
	write_file(sub, "b", 70000, 8);
	snprintf(sub, sizeof(sub), "%s/link", f->src);
	assert_int_equal(symlink("sub/a", sub), 0);
}

static void
on_progress(void *arg, const struct stage_progress *p)
{
	struct fixture *f = arg;
	size_t n = strlen(f->events);

	if (n + 1 < sizeof(f->events))
		f->events[n] = "PCR"[p->event];
	/* a writer at work in the source while it is copied */
	if (p->event == STAGE_COPIED && f->mutate) {
		static int grow = 1;

		write_file(f->src, "f00", 1000 + (size_t)grow++, 5);
		f->mutate = f->mutate == 1 ? 0 : 2;
	}
	switch (p->event) {
	case STAGE_PLAN:
		f->plans++;
		f->plan_bytes = p->bytes;
		f->plan_files = p->files;
		f->copy_bytes = p->copy_bytes;
		f->copy_files = p->copy_files;
		f->copied_bytes = f->copied_files = 0;
		break;
	case STAGE_COPIED:
		f->copied_bytes += p->bytes;
		f->copied_files += p->files;
		break;
	case STAGE_READY:
		f->readies++;
		f->reused = p->reused;
		snprintf(f->path, sizeof(f->path), "%s", p->path ? p->path : "");
		break;
	}
}

static int
run(struct fixture *f, int jobs, double max_use, char *err, size_t errlen)
{
	struct stage_opts o = {
		.dir = f->stage, .jobs = jobs, .retention_s = 7 * 86400.0, .max_use_pct = max_use,
		.progress = on_progress, .arg = f,
	};
	struct stage_set set = { .name = "ds", .src = f->src };

	f->plans = f->readies = 0;
	memset(f->events, 0, sizeof(f->events));
	return stage_run(&o, &set, 1, err, errlen);
}

/* The copy and the source hold the same bytes (diff -r), links included. */
static void
assert_same(const struct fixture *f)
{
	char cmd[1200];

	snprintf(cmd, sizeof(cmd), "diff -r --no-dereference '%s' '%s' >/dev/null", f->src, f->path);
	assert_int_equal(system(cmd), 0);
}

/* No write bit on anything in the copy but links. */
static void
assert_sealed(const struct fixture *f)
{
	char cmd[1200];

	snprintf(cmd, sizeof(cmd), "test -z \"$(find '%s' ! -type l -perm /222)\"", f->path);
	assert_int_equal(system(cmd), 0);
}

static void
test_names(void **state)
{
	struct stage_set set;
	char name[64], why[256], key[128], key2[128], path[512];

	(void)state;
	assert_int_equal(stage_parse("imagenet=/data/imagenet", &set, name, sizeof(name), why,
	                             sizeof(why)), 0);
	assert_string_equal(set.name, "imagenet");
	assert_string_equal(set.src, "/data/imagenet");
	assert_int_equal(stage_parse("imagenet", &set, name, sizeof(name), why, sizeof(why)),
	                 -EINVAL);
	assert_non_null(strstr(why, "NAME=SOURCE"));
	assert_int_equal(stage_parse("x=data", &set, name, sizeof(name), why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "absolute"));
	assert_int_equal(stage_parse("a-b=/d", &set, name, sizeof(name), why, sizeof(why)), -EINVAL);
	assert_int_equal(stage_parse("1x=/d", &set, name, sizeof(name), why, sizeof(why)), -EINVAL);
	assert_int_equal(stage_name_check("_ok_2", why, sizeof(why)), 0);
	/* one source, one key, however its path is written */
	assert_int_equal(stage_key("ds", "/data/x", key, sizeof(key)), 0);
	assert_int_equal(stage_key("ds", "/data//x/", key2, sizeof(key2)), 0);
	assert_string_equal(key, key2);
	assert_int_equal(strlen(key), strlen("ds-") + 16);
	assert_int_equal(stage_key("ds", "/data/y", key2, sizeof(key2)), 0);
	assert_string_not_equal(key, key2);
	set.name = "ds";
	set.src = "/data/x";
	assert_int_equal(stage_path("/local", &set, path, sizeof(path)), 0);
	snprintf(key2, sizeof(key2), "/local/%s/data", key);
	assert_string_equal(path, key2);
}

static void
test_would_exceed(void **state)
{
	double pct;

	(void)state;
	/* 100 GB, 20 free: 80% used; 5 more is 85% */
	assert_false(stage_would_exceed(100e9, 20e9, 5e9, 90, &pct));
	assert_true(pct > 84.9 && pct < 85.1);
	assert_true(stage_would_exceed(100e9, 20e9, 15e9, 90, &pct));
	assert_true(pct > 94.9 && pct < 95.1);
	assert_false(stage_would_exceed(100e9, 20e9, 15e9, 0, NULL));  /* no limit */
	assert_true(stage_would_exceed(0, 0, 1, 90, NULL));             /* nothing known: full */
}

/* Copied whole the first time, every byte, read-only; reused the next. */
static void
test_copy_then_reuse(void **state)
{
	struct fixture *f = *state;
	char err[512] = "";

	make_source(f);
	assert_int_equal(run(f, 3, 0, err, sizeof(err)), 0);
	assert_int_equal(f->plans, 1);
	assert_int_equal(f->readies, 1);
	assert_false(f->reused);
	assert_int_equal(f->plan_files, 16);
	assert_int_equal(f->copy_files, 16);
	assert_true(f->plan_bytes == f->copy_bytes);
	assert_true(f->plan_bytes == (3u << 20) + 78000 + 5000 + 70000);
	/* the workers' reports add up to what was to copy */
	assert_true(f->copied_bytes == f->copy_bytes);
	assert_true(f->copied_files == f->copy_files);
	assert_same(f);
	assert_sealed(f);
	/* again: nothing to copy */
	assert_int_equal(run(f, 3, 0, err, sizeof(err)), 0);
	assert_true(f->reused);
	assert_int_equal(f->copy_files, 0);
	assert_true(f->copied_bytes == 0);
	assert_same(f);
}

/* A changed source: only what changed is copied, what went is removed. */
static void
test_update(void **state)
{
	struct fixture *f = *state;
	char err[512] = "", p[600];
	struct stat st;

	make_source(f);
	assert_int_equal(run(f, 2, 0, err, sizeof(err)), 0);
	write_file(f->src, "f03", 4321, 99);            /* another size */
	snprintf(p, sizeof(p), "%s/f05", f->src);
	assert_int_equal(unlink(p), 0);                 /* gone */
	write_file(f->src, "new", 10, 3);               /* new */
	assert_int_equal(run(f, 2, 0, err, sizeof(err)), 0);
	assert_false(f->reused);
	assert_int_equal(f->copy_files, 2);
	assert_true(f->copy_bytes == 4321 + 10);
	assert_same(f);
	assert_sealed(f);
	snprintf(p, sizeof(p), "%s/f05", f->path);
	assert_int_equal(lstat(p, &st), -1);
}

/* A copy damaged on the node (another size) is copied again. */
static void
test_damaged_copy(void **state)
{
	struct fixture *f = *state;
	char err[512] = "", p[600];

	make_source(f);
	assert_int_equal(run(f, 4, 0, err, sizeof(err)), 0);
	snprintf(p, sizeof(p), "%s/sub/deeper/b", f->path);
	assert_int_equal(chmod(p, 0600), 0);
	assert_int_equal(truncate(p, 10), 0);
	assert_int_equal(run(f, 4, 0, err, sizeof(err)), 0);
	assert_int_equal(f->copy_files, 1);
	assert_same(f);
	assert_sealed(f);
}

/* A file as the source: staged under its own name. */
static void
test_file_source(void **state)
{
	struct fixture *f = *state;
	struct stage_opts o = { .dir = f->stage, .jobs = 2, .progress = on_progress, .arg = f };
	struct stage_set set = { .name = "one", .src = NULL };
	char err[512] = "", src[300], p[700];
	struct stat st;

	make_source(f);
	snprintf(src, sizeof(src), "%s/sub/a", f->src);
	set.src = src;
	assert_int_equal(stage_run(&o, &set, 1, err, sizeof(err)), 0);
	assert_int_equal(f->copy_files, 1);
	snprintf(p, sizeof(p), "%s/a", f->path);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_size, 5000);
	assert_int_equal(st.st_mode & 0222, 0);
}

static int
fake_space(const char *path, double *total, double *avail)
{
	(void)path;
	*total = 100e9;
	*avail = 10.001e9;  /* 89.999% used: any copy passes 90% */
	return 0;
}

/* The disk's maximum use: refused with the reason, nothing copied. */
static void
test_max_use(void **state)
{
	struct fixture *f = *state;
	struct stage_opts o = { .dir = f->stage, .jobs = 2, .max_use_pct = 90,
	                        .fs_space = fake_space, .progress = on_progress, .arg = f };
	struct stage_set set = { .name = "ds", .src = f->src };
	char err[512] = "";

	make_source(f);
	assert_int_equal(stage_run(&o, &set, 1, err, sizeof(err)), -ENOSPC);
	assert_non_null(strstr(err, "ds: staging needs 3.1 MiB more"));
	assert_non_null(strstr(err, "above the maximum of 90%"));
	assert_int_equal(f->readies, 0);
	/* a copy there already needs no room */
	o.max_use_pct = 0;
	assert_int_equal(stage_run(&o, &set, 1, err, sizeof(err)), 0);
	o.max_use_pct = 90;
	assert_int_equal(stage_run(&o, &set, 1, err, sizeof(err)), 0);
	assert_true(f->reused);
}

static void
age(const struct fixture *f, const char *key, time_t when)
{
	char p[600];
	struct timespec t[2] = { { when, 0 }, { when, 0 } };

	snprintf(p, sizeof(p), "%s/%s/used", f->stage, key);
	assert_int_equal(utimensat(AT_FDCWD, p, t, AT_SYMLINK_NOFOLLOW), 0);
}

/* Copies unused for the retention go, unless a job holds them. */
static void
test_retention(void **state)
{
	struct fixture *f = *state;
	struct stage_set set = { .name = "ds", .src = f->src };
	char err[512] = "", key[128], p[600];
	time_t now = time(NULL);
	struct stat st;
	int removed, fd;

	make_source(f);
	assert_int_equal(run(f, 2, 0, err, sizeof(err)), 0);
	assert_int_equal(stage_key("ds", f->src, key, sizeof(key)), 0);
	snprintf(p, sizeof(p), "%s/%s", f->stage, key);
	/* used 6 days ago: kept for 7 */
	age(f, key, now - 6 * 86400);
	assert_int_equal(stage_clean(f->stage, 7 * 86400.0, now, &removed, err, sizeof(err)), 0);
	assert_int_equal(removed, 0);
	/* 8 days ago, but a job trains on it: kept */
	age(f, key, now - 8 * 86400);
	fd = stage_hold(f->stage, &set);
	assert_true(fd >= 0);
	assert_int_equal(stage_clean(f->stage, 7 * 86400.0, now, &removed, err, sizeof(err)), 0);
	assert_int_equal(removed, 0);
	assert_int_equal(lstat(p, &st), 0);
	/* the job ended: gone, read-only directories and all */
	close(fd);
	assert_int_equal(stage_clean(f->stage, 7 * 86400.0, now, &removed, err, sizeof(err)), 0);
	assert_int_equal(removed, 1);
	assert_int_equal(lstat(p, &st), -1);
	/* 0 keeps everything */
	assert_int_equal(stage_clean(f->stage, 0, now + 1e9, &removed, err, sizeof(err)), 0);
	assert_int_equal(removed, 0);
}

/* A copy another job trains on is not changed under it. */
static void
test_busy_copy(void **state)
{
	struct fixture *f = *state;
	struct stage_set set = { .name = "ds", .src = f->src };
	char err[512] = "";
	int fd;

	make_source(f);
	assert_int_equal(run(f, 2, 0, err, sizeof(err)), 0);
	fd = stage_hold(f->stage, &set);
	assert_true(fd >= 0);
	/* the same source: reused, the hold is no obstacle */
	assert_int_equal(run(f, 2, 0, err, sizeof(err)), 0);
	assert_true(f->reused);
	/* a changed source: refused while the other job holds the copy */
	write_file(f->src, "f01", 77, 1);
	assert_int_equal(run(f, 2, 0, err, sizeof(err)), -EBUSY);
	assert_non_null(strstr(err, "another job on this node uses it"));
	close(fd);
	assert_int_equal(run(f, 2, 0, err, sizeof(err)), 0);
	assert_int_equal(f->copy_files, 1);
	assert_same(f);
}

/* The staging directory must be the caller's own. */
static void
test_private_dir(void **state)
{
	struct fixture *f = *state;
	char err[512] = "";

	make_source(f);
	assert_int_equal(mkdir(f->stage, 0777), 0);
	assert_int_equal(chmod(f->stage, 0777), 0);
	assert_int_equal(run(f, 2, 0, err, sizeof(err)), -EACCES);
	assert_non_null(strstr(err, "writable by others"));
	assert_int_equal(chmod(f->stage, 0700), 0);
	assert_int_equal(run(f, 2, 0, err, sizeof(err)), 0);
}

/* A source that cannot be read: the reason names it. */
static void
test_missing_source(void **state)
{
	struct fixture *f = *state;
	char err[512] = "";

	assert_int_equal(run(f, 2, 0, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "cannot read the source"));
	assert_non_null(strstr(err, f->src));
}

/* Every set's plan comes before any copying: the totals cover the whole staging. */
static void
test_plans_first(void **state)
{
	struct fixture *f = *state;
	struct stage_opts o = { .dir = f->stage, .jobs = 2, .progress = on_progress, .arg = f };
	struct stage_set sets[2] = { { .name = "one", .src = f->src }, { .name = "two" } };
	char err[512] = "", two[300];

	make_source(f);
	snprintf(two, sizeof(two), "%s/two", f->dir);
	assert_int_equal(mkdir(two, 0755), 0);
	write_file(two, "x", 5000, 2);
	sets[1].src = two;
	assert_int_equal(stage_run(&o, sets, 2, err, sizeof(err)), 0);
	/* plan, plan, then each set's copy and ready; no plan said twice */
	assert_int_equal(strncmp(f->events, "PP", 2), 0);
	assert_null(strchr(f->events + 2, 'P'));
	assert_int_equal(f->readies, 2);
}

/* A source that changes while it is copied is copied again until it holds still. */
static void
test_source_changes(void **state)
{
	struct fixture *f = *state;
	char err[512] = "";

	make_source(f);
	f->mutate = 1;  /* once: the second round finds it still */
	assert_int_equal(run(f, 2, 0, err, sizeof(err)), 0);
	assert_same(f);
	assert_sealed(f);
	assert_false(f->reused);
	/* always: refused after a bounded number of rounds, with the reason */
	write_file(f->src, "f01", 1234, 9);
	f->mutate = 2;
	assert_int_equal(run(f, 2, 0, err, sizeof(err)), -EAGAIN);
	f->mutate = 0;
	assert_non_null(strstr(err, "ds: the source"));
	assert_non_null(strstr(err, "changed while it was copied, 3 times in a row"));
	assert_int_equal(f->readies, 0);
}

/* A same-size rewrite within the same second: the quick check keeps the
 * old copy; --stage-verify content finds it and copies it again. */
static void
test_verify_content(void **state)
{
	struct fixture *f = *state;
	struct stage_opts o = { .dir = f->stage, .jobs = 2, .progress = on_progress, .arg = f };
	struct stage_set set = { .name = "ds", .src = f->src };
	char err[512] = "", p[600], cmd[1400];
	struct stat st;
	struct timespec t[2];

	make_source(f);
	assert_int_equal(run(f, 2, 0, err, sizeof(err)), 0);
	snprintf(p, sizeof(p), "%s/f03", f->src);
	assert_int_equal(stat(p, &st), 0);
	write_file(f->src, "f03", 4000, 77);  /* the same size, other bytes */
	t[0] = st.st_atim;
	t[1] = st.st_mtim;
	assert_int_equal(utimensat(AT_FDCWD, p, t, 0), 0);
	assert_int_equal(run(f, 2, 0, err, sizeof(err)), 0);
	assert_true(f->reused);  /* rsync's quick check: not seen */
	snprintf(cmd, sizeof(cmd), "cmp -s '%s' '%s/f03'", p, f->path);
	assert_int_not_equal(system(cmd), 0);
	o.verify_content = true;
	memset(f->events, 0, sizeof(f->events));
	assert_int_equal(stage_run(&o, &set, 1, err, sizeof(err)), 0);
	assert_false(f->reused);
	assert_int_equal(f->copy_files, 1);
	assert_true(f->copy_bytes == 4000);
	assert_string_equal(f->events, "PCR");  /* compared once, before the plan */
	assert_same(f);
	assert_sealed(f);
	/* again: the bytes agree, nothing to copy */
	assert_int_equal(stage_run(&o, &set, 1, err, sizeof(err)), 0);
	assert_true(f->reused);
}

/* The staging directory's missing parents are made, private; a link
 * another user owns on the way is not followed. */
static void
test_parents(void **state)
{
	struct fixture *f = *state;
	char err[512] = "", p[400], real[300];
	struct stat st;

	make_source(f);
	snprintf(f->stage, sizeof(f->stage), "%s/a/b/stage", f->dir);
	assert_int_equal(run(f, 2, 0, err, sizeof(err)), 0);
	assert_same(f);
	snprintf(p, sizeof(p), "%s/a", f->dir);
	assert_int_equal(lstat(p, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);
	if (geteuid() != 0)
		return;  /* only root can give a link to another user */
	snprintf(real, sizeof(real), "%s/real", f->dir);
	assert_int_equal(mkdir(real, 0755), 0);
	snprintf(p, sizeof(p), "%s/theirs", f->dir);
	assert_int_equal(symlink(real, p), 0);
	assert_int_equal(lchown(p, 65534, 65534), 0);
	snprintf(f->stage, sizeof(f->stage), "%s/theirs/stage", f->dir);
	assert_int_equal(run(f, 2, 0, err, sizeof(err)), -ELOOP);
	assert_non_null(strstr(err, "symbolic link"));
	snprintf(p, sizeof(p), "%s/stage", real);
	assert_int_equal(lstat(p, &st), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_would_exceed),
		cmocka_unit_test_setup_teardown(test_copy_then_reuse, setup, teardown),
		cmocka_unit_test_setup_teardown(test_update, setup, teardown),
		cmocka_unit_test_setup_teardown(test_damaged_copy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_file_source, setup, teardown),
		cmocka_unit_test_setup_teardown(test_max_use, setup, teardown),
		cmocka_unit_test_setup_teardown(test_retention, setup, teardown),
		cmocka_unit_test_setup_teardown(test_busy_copy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_private_dir, setup, teardown),
		cmocka_unit_test_setup_teardown(test_missing_source, setup, teardown),
		cmocka_unit_test_setup_teardown(test_plans_first, setup, teardown),
		cmocka_unit_test_setup_teardown(test_source_changes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_verify_content, setup, teardown),
		cmocka_unit_test_setup_teardown(test_parents, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
