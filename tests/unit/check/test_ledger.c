/*
 * test_ledger.c - the node ledger's files (ledger.c) in a scratch
 * directory: records written and read back, the directory's checks,
 * torn, planted and unparsable files passed over, compaction (idempotent,
 * racing in real processes, expiry, the cap) and the walk over every node.
 * Tests of ownership need root to hand files to another user; without
 * root they check what they can.
 */
#include "autoconf.h"

#include "../vigil_test.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "check/ledger.h"
#include "lib/util.h"
#include "../scratch.h"

#define D 86400.0
#define NOBODY 65534

struct fix {
	char root[256], dir[300];
	struct ledger *l;
	char why[512];
};

static int
setup(void **state)
{
	struct fix *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	assert_int_equal(make_scratch_dir(f->root, sizeof(f->root), "ledger"), 0);
	snprintf(f->dir, sizeof(f->dir), "%s/ledger", f->root);
	assert_int_equal(mkdir(f->dir, 0755), 0);
	assert_int_equal(chmod(f->dir, 0755), 0);
	assert_int_equal(ledger_open(f->dir, true, &f->l, f->why, sizeof(f->why)), 0);
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fix *f = *state;

	ledger_close(f->l);
	(void)util_remove_tree(f->root);
	free(f);
	return 0;
}

static struct ledger_record
rec(const char *node, int kind, double t, const char *evidence)
{
	struct ledger_record r = { .kind = kind, .time = t, .uid = -1 };

	snprintf(r.node, sizeof(r.node), "%s", node);
	snprintf(r.evidence, sizeof(r.evidence), "%s", evidence);
	return r;
}

static void
append(struct fix *f, const char *node, int kind, double t, const char *evidence)
{
	struct ledger_record r = rec(node, kind, t, evidence);

	assert_int_equal(ledger_append(f->l, &r, 1, f->why, sizeof(f->why)), 0);
}

/* NODE's records, read back; the count. */
static size_t
read_back(struct fix *f, const char *node, double since, struct ledger_records *rs)
{
	memset(rs, 0, sizeof(*rs));
	assert_int_equal(ledger_read_node(f->l, node, since, rs, f->why, sizeof(f->why)), 0);
	return rs->n;
}

static size_t
count_back(struct fix *f, const char *node)
{
	struct ledger_records rs;
	size_t n = read_back(f, node, -INFINITY, &rs);

	ledger_records_free(&rs);
	return n;
}

/* Files in DIR/SUB whose names start with PREFIX. */
static int
files(struct fix *f, const char *sub, const char *prefix)
{
	char path[600];
	struct dirent *e;
	DIR *d;
	int n = 0;

	snprintf(path, sizeof(path), "%s/%s", f->dir, sub);
	d = opendir(path);
	if (!d)
		return 0;
	while ((e = readdir(d)))
		n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
	closedir(d);
	return n;
}

static void
write_file(const char *path, const char *text)
{
	FILE *fp = fopen(path, "w");

	assert_non_null(fp);
	fputs(text, fp);
	assert_int_equal(fclose(fp), 0);
}

/* ---- records -------------------------------------------------------------- */

static void
test_record_format(void **state)
{
	struct ledger_record r = rec("n1", CONFIG_LEDGER_BOARD, 1777639500.25, "XID 79 \"lost\""), p;
	const char *bad[] = {
		"{\"time\": 1, \"node\": \"n1\", \"kind\": \"fault\"}",
		"{\"id\": \"x\", \"time\": -1, \"node\": \"n1\", \"kind\": \"fault\"}",
		"{\"id\": \"x\", \"time\": 1, \"node\": \"n1\", \"kind\": \"bad\"}",
		"{\"id\": \"x\", \"time\": 1, \"node\": \"n1\", \"kind\": \"fault\", \"check\": 5}",
		"{\"id\": \"x\", \"time\": 1, \"node\": \"\", \"kind\": \"fault\"}",
		"{\"id\": \"x\", \"time\": 1, \"node\": \"n1\", \"kind\": \"quarantine\", "
		"\"seconds\": -5}",
		"[1]", "{", "",
	};
	char *text;

	(void)state;
	snprintf(r.id, sizeof(r.id), "abc");
	snprintf(r.check, sizeof(r.check), "xid");
	snprintf(r.device, sizeof(r.device), "0000:3b:00.0");
	snprintf(r.job, sizeof(r.job), "42");
	r.uid = 1000;
	text = ledger_record_format(&r, true);
	assert_non_null(text);
	assert_null(strchr(text, '\n'));
	assert_int_equal(ledger_record_parse(text, strlen(text), &p), 0);
	assert_string_equal(p.id, "abc");
	assert_true(p.time == 1777639500.25);
	assert_int_equal(p.kind, CONFIG_LEDGER_BOARD);
	assert_string_equal(p.device, "0000:3b:00.0");
	assert_string_equal(p.evidence, "XID 79 \"lost\"");
	assert_int_equal(p.uid, 1000);
	free(text);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(ledger_record_parse(bad[i], strlen(bad[i]), &p), -EINVAL);
	assert_string_equal(ledger_kind_name(LEDGER_KIND_FORGIVE), "forgive");
	assert_int_equal(ledger_kind_parse("healthcheck"), CONFIG_LEDGER_HEALTHCHECK);
	assert_int_equal(ledger_kind_parse("nope"), -1);
}

/* ---- the directory ---------------------------------------------------------- */

static void
test_open_checks(void **state)
{
	struct fix *f = *state;
	struct ledger *l = NULL;
	char path[600], link[600];
	struct stat st;

	/* as root, the first writer makes the spool sticky and open to all */
	snprintf(path, sizeof(path), "%s/spool", f->dir);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, geteuid() == 0 ? 01777 : 0755);
	snprintf(path, sizeof(path), "%s/nosuch", f->root);
	assert_int_equal(ledger_open(path, false, &l, f->why, sizeof(f->why)), -ENOENT);
	assert_null(l);
	/* a symlink is never followed (O_DIRECTORY|O_NOFOLLOW: not a directory) */
	snprintf(link, sizeof(link), "%s/link", f->root);
	assert_int_equal(symlink(f->dir, link), 0);
	assert_int_equal(ledger_open(link, false, &l, f->why, sizeof(f->why)), -ENOTDIR);
	/* writable by others */
	assert_int_equal(chmod(f->dir, 0777), 0);
	assert_int_equal(ledger_open(f->dir, false, &l, f->why, sizeof(f->why)), -EPERM);
	assert_non_null(strstr(f->why, "is writable by others: chmod go-w"));
	assert_int_equal(chmod(f->dir, 0755), 0);
	/* a spool open to all without the sticky bit */
	snprintf(path, sizeof(path), "%s/spool", f->dir);
	assert_int_equal(chmod(path, 0777), 0);
	assert_int_equal(ledger_open(f->dir, false, &l, f->why, sizeof(f->why)), -EPERM);
	assert_non_null(strstr(f->why, "without the sticky bit: chmod +t"));
	assert_int_equal(chmod(path, 01777), 0);
	assert_int_equal(ledger_open(f->dir, false, &l, f->why, sizeof(f->why)), 0);
	ledger_close(l);
	l = NULL;
	if (geteuid() != 0)
		return;
	/* someone else's directory */
	assert_int_equal(chown(f->dir, NOBODY, NOBODY), 0);
	assert_int_equal(ledger_open(f->dir, false, &l, f->why, sizeof(f->why)), -EPERM);
	assert_non_null(strstr(f->why, "belongs to uid 65534, neither root"));
	assert_int_equal(chown(f->dir, 0, 0), 0);
	assert_int_equal(chown(path, NOBODY, NOBODY), 0);
	assert_int_equal(ledger_open(f->dir, false, &l, f->why, sizeof(f->why)), -EPERM);
	assert_int_equal(chown(path, 0, 0), 0);
}

/* ---- writing and reading ------------------------------------------------------- */

static void
test_append_read(void **state)
{
	struct fix *f = *state;
	struct ledger_record two[2] = {
		rec("n1", CONFIG_LEDGER_FAULT, 2000, "eth1 is down"),
		rec("n1", CONFIG_LEDGER_LOST, 1000, "no heartbeat"),
	};
	struct ledger_record mixed[2] = { two[0], rec("n2", CONFIG_LEDGER_FAULT, 5, "x") };
	struct ledger_records rs;

	snprintf(two[0].job, sizeof(two[0].job), "17");
	assert_int_equal(ledger_append(f->l, two, 2, f->why, sizeof(f->why)), 0);
	append(f, "n2", CONFIG_LEDGER_BOARD, 1500, "XID 79");
	assert_int_equal(ledger_append(f->l, mixed, 2, f->why, sizeof(f->why)), -EINVAL);
	two[0].node[0] = '\0';
	snprintf(two[0].node, sizeof(two[0].node), "../etc");
	assert_int_equal(ledger_append(f->l, two, 1, f->why, sizeof(f->why)), -EINVAL);
	assert_int_equal(files(f, "spool", "n1~"), 1);
	assert_int_equal(files(f, "spool", ".tmp"), 0);
	assert_int_equal(read_back(f, "n1", -INFINITY, &rs), 2);
	/* in time order, whatever the order written */
	assert_int_equal(rs.v[0].kind, CONFIG_LEDGER_LOST);
	assert_int_equal(rs.v[1].kind, CONFIG_LEDGER_FAULT);
	assert_string_equal(rs.v[1].job, "17");
	assert_string_equal(rs.v[1].evidence, "eth1 is down");
	assert_true(rs.v[0].id[0] && strcmp(rs.v[0].id, rs.v[1].id) != 0);
	assert_true(rs.v[0].user[0]);
	assert_int_equal(rs.v[0].uid, (long long)geteuid());
	assert_true(rs.v[0].trusted);
	ledger_records_free(&rs);
	/* SINCE leaves old incidents out */
	assert_int_equal(read_back(f, "n1", 1500, &rs), 1);
	ledger_records_free(&rs);
	assert_int_equal(count_back(f, "n2"), 1);
	assert_int_equal(count_back(f, "n3"), 0);
	assert_int_equal(ledger_skipped(f->l, NULL), 0);
}

/* What a reader must pass over without tripping: a writer's temporary
 * file (torn), junk, another node's line, a FIFO, a hard link and a
 * symlink planted in the spool. */
static void
test_torn_and_planted(void **state)
{
	struct fix *f = *state;
	char path[700], outside[600];
	const char *first = NULL;

	append(f, "n1", CONFIG_LEDGER_FAULT, 1000, "good");
	snprintf(path, sizeof(path), "%s/spool/.tmp~n1~dead", f->dir);
	write_file(path, "{\"id\": \"t1\", \"time\": 5, \"node\": \"n1\", \"kind\": \"fau");
	snprintf(path, sizeof(path), "%s/spool/n1~junk.rec", f->dir);
	write_file(path, "not json at all\n\n{\"id\": \"j1\", \"time\": 7, \"node\": \"n1\", "
	           "\"kind\": \"lost\"}\n{\"id\": \"j2\", \"ti");
	snprintf(path, sizeof(path), "%s/spool/n1~other.rec", f->dir);
	write_file(path, "{\"id\": \"o1\", \"time\": 7, \"node\": \"n2\", \"kind\": \"lost\"}\n");
	snprintf(path, sizeof(path), "%s/spool/n1~fifo.rec", f->dir);
	assert_int_equal(mkfifo(path, 0644), 0);
	snprintf(outside, sizeof(outside), "%s/outside", f->root);
	write_file(outside, "{\"id\": \"h1\", \"time\": 8, \"node\": \"n1\", \"kind\": \"lost\"}\n");
	snprintf(path, sizeof(path), "%s/spool/n1~hard.rec", f->dir);
	assert_int_equal(link(outside, path), 0);
	snprintf(path, sizeof(path), "%s/spool/n1~sym.rec", f->dir);
	assert_int_equal(symlink(outside, path), 0);
	/* the good record, and the junk file's one good line */
	assert_int_equal(count_back(f, "n1"), 2);
	assert_int_equal(ledger_skipped(f->l, &first), 6);
	assert_non_null(first);
	/* and whoever reads next sees the same */
	assert_int_equal(count_back(f, "n1"), 2);
}

struct paused {
	struct fix *f;
	int calls;
};

/* Between the write and the rename, the record is nowhere a reader looks. */
static void
in_between(void *arg)
{
	struct paused *p = arg;

	p->calls++;
	assert_int_equal(files(p->f, "spool", ".tmp~n1~"), 1);
	assert_int_equal(files(p->f, "spool", "n1~"), 0);
	assert_int_equal(count_back(p->f, "n1"), 0);
}

static void
test_write_then_rename(void **state)
{
	struct fix *f = *state;
	struct paused p = { f, 0 };

	ledger_set_test_hook(f->l, in_between, &p);
	append(f, "n1", CONFIG_LEDGER_FAULT, 1000, "x");
	ledger_set_test_hook(f->l, NULL, NULL);
	assert_int_equal(p.calls, 1);
	assert_int_equal(files(f, "spool", ".tmp"), 0);
	assert_int_equal(count_back(f, "n1"), 1);
}

/* ---- compaction ------------------------------------------------------------------ */

static void
test_compact(void **state)
{
	struct fix *f = *state;
	struct ledger_records a, b;
	char path[700], copy[700], cmd[3000];

	for (int i = 0; i < 5; i++)
		append(f, "n1", CONFIG_LEDGER_FAULT, 1000 + i, "x");
	append(f, "n2", CONFIG_LEDGER_LOST, 1000, "y");
	read_back(f, "n1", -INFINITY, &a);
	assert_int_equal(ledger_compact_node(f->l, "n1", -INFINITY, 2000, f->why, sizeof(f->why)), 0);
	assert_int_equal(files(f, "spool", "n1~"), 0);
	assert_int_equal(files(f, "spool", "n2~"), 1);
	assert_int_equal(files(f, "store/n1", "c~"), 1);
	read_back(f, "n1", -INFINITY, &b);
	assert_int_equal(b.n, 5);
	for (size_t i = 0; i < 5; i++) {
		assert_string_equal(a.v[i].id, b.v[i].id);
		assert_true(b.v[i].trusted);
	}
	ledger_records_free(&b);
	/* again: nothing to merge, the file stays as it is */
	assert_int_equal(ledger_compact_node(f->l, "n1", -INFINITY, 2000, f->why, sizeof(f->why)), 0);
	assert_int_equal(files(f, "store/n1", "c~"), 1);
	/* what two compactors racing leave: the same records twice */
	snprintf(path, sizeof(path), "%s/store/n1", f->dir);
	snprintf(copy, sizeof(copy), "%s/store/n1/c~racer.rec", f->dir);
	snprintf(cmd, sizeof(cmd), "cat %s/c~*.rec > %s.tmp && mv %s.tmp %s", path, copy, copy, copy);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(files(f, "store/n1", "c~"), 2);
	read_back(f, "n1", -INFINITY, &b);
	assert_int_equal(b.n, 5);
	ledger_records_free(&b);
	assert_int_equal(ledger_compact_node(f->l, "n1", -INFINITY, 2000, f->why, sizeof(f->why)), 0);
	assert_int_equal(files(f, "store/n1", "c~"), 1);
	assert_int_equal(count_back(f, "n1"), 5);
	ledger_records_free(&a);
	/* every node at once */
	assert_int_equal(ledger_compact(f->l, -INFINITY, 2000, f->why, sizeof(f->why)), 0);
	assert_int_equal(files(f, "spool", "n"), 0);
	assert_int_equal(count_back(f, "n2"), 1);
}

/* Writers and compactors in separate processes, all at once: every
 * record written is read back, once. */
static void
test_compact_racing(void **state)
{
	struct fix *f = *state;
	enum { PROCS = 4, EACH = 25 };
	struct ledger_records rs;
	pid_t pids[PROCS];

	for (int p = 0; p < PROCS; p++) {
		pids[p] = fork();
		assert_true(pids[p] >= 0);
		if (pids[p] == 0) {
			struct ledger *l = NULL;
			char why[512];
			int bad = 0;

			if (ledger_open(f->dir, true, &l, why, sizeof(why)) < 0)
				_exit(2);
			for (int i = 0; i < EACH; i++) {
				struct ledger_record r = rec("n1", CONFIG_LEDGER_FAULT, 1000 + p * 100 + i,
				                             "racing");

				if (ledger_append(l, &r, 1, why, sizeof(why)) < 0 ||
				    ledger_compact_node(l, "n1", -INFINITY, 5000, why, sizeof(why)) < 0) {
					fprintf(stderr, "racer %d: %s\n", p, why);
					bad++;
				}
			}
			ledger_close(l);
			_exit(bad ? 1 : 0);
		}
	}
	for (int p = 0; p < PROCS; p++) {
		int st;

		assert_int_equal(waitpid(pids[p], &st, 0), pids[p]);
		assert_true(WIFEXITED(st));
		assert_int_equal(WEXITSTATUS(st), 0);
	}
	read_back(f, "n1", -INFINITY, &rs);
	assert_int_equal(rs.n, PROCS * EACH);
	for (size_t i = 1; i < rs.n; i++)
		assert_true(rs.v[i - 1].time < rs.v[i].time);
	ledger_records_free(&rs);
	assert_int_equal(ledger_compact_node(f->l, "n1", -INFINITY, 5000, f->why, sizeof(f->why)), 0);
	assert_int_equal(files(f, "store/n1", "c~"), 1);
	assert_int_equal(count_back(f, "n1"), PROCS * EACH);
}

/* Old incidents expire; the last quarantine and forgiveness stay. */
static void
test_expiry(void **state)
{
	struct fix *f = *state;
	double now = 1000 * D;
	struct ledger_records rs;

	append(f, "n1", LEDGER_KIND_QUARANTINE, now - 350 * D, "old, forgiven");
	append(f, "n1", LEDGER_KIND_FORGIVE, now - 340 * D, "");
	append(f, "n1", LEDGER_KIND_QUARANTINE, now - 300 * D, "until forgiven");
	append(f, "n1", CONFIG_LEDGER_FAULT, now - 200 * D, "expired");
	append(f, "n1", CONFIG_LEDGER_FAULT, now - 10 * D, "kept");
	/* reading leaves out expired incidents, keeps every admin record */
	assert_int_equal(read_back(f, "n1", now - 180 * D, &rs), 4);
	ledger_records_free(&rs);
	assert_int_equal(ledger_compact_node(f->l, "n1", now - 180 * D, now, f->why,
	                                     sizeof(f->why)), 0);
	read_back(f, "n1", -INFINITY, &rs);
	assert_int_equal(rs.n, 3);
	assert_int_equal(rs.v[0].kind, LEDGER_KIND_FORGIVE);
	assert_int_equal(rs.v[1].kind, LEDGER_KIND_QUARANTINE);
	assert_string_equal(rs.v[1].evidence, "until forgiven");
	assert_string_equal(rs.v[2].evidence, "kept");
	ledger_records_free(&rs);
	/* everything expired: the node's files go */
	assert_int_equal(ledger_compact_node(f->l, "n1", now + D, now, f->why, sizeof(f->why)), 0);
	assert_int_equal(count_back(f, "n1"), 2);
}

/* At most LEDGER_KEEP records a node, the newest. */
static void
test_keep_cap(void **state)
{
	struct fix *f = *state;
	enum { N = LEDGER_KEEP + 10 };
	struct ledger_record *v = calloc(N, sizeof(*v));
	struct ledger_records rs;

	assert_non_null(v);
	for (int i = 0; i < N; i++)
		v[i] = rec("n1", CONFIG_LEDGER_STRAGGLER, 1000 + i, "slow");
	assert_int_equal(ledger_append(f->l, v, N, f->why, sizeof(f->why)), 0);
	free(v);
	assert_int_equal(ledger_compact_node(f->l, "n1", -INFINITY, 1e6, f->why, sizeof(f->why)), 0);
	read_back(f, "n1", -INFINITY, &rs);
	assert_int_equal(rs.n, LEDGER_KEEP);
	assert_true(rs.v[0].time == 1010);
	ledger_records_free(&rs);
}

/* A stale temporary file goes at compaction; a young one stays. */
static void
test_stale_tmp(void **state)
{
	struct fix *f = *state;
	char old[700], young[700];
	struct timespec ts[2] = { { 1000, 0 }, { 1000, 0 } };

	snprintf(old, sizeof(old), "%s/spool/.tmp~n1~old", f->dir);
	snprintf(young, sizeof(young), "%s/spool/.tmp~n1~young", f->dir);
	write_file(old, "{");
	write_file(young, "{");
	assert_int_equal(utimensat(AT_FDCWD, old, ts, 0), 0);
	append(f, "n1", CONFIG_LEDGER_FAULT, 1000, "x");
	assert_int_equal(ledger_compact_node(f->l, "n1", -INFINITY, (double)time(NULL), f->why,
	                                     sizeof(f->why)), 0);
	assert_int_equal(access(old, F_OK), -1);
	assert_int_equal(access(young, F_OK), 0);
}

/* ---- every node -------------------------------------------------------------------- */

struct walk {
	char names[8][16];
	size_t counts[8];
	int n;
};

static int
walk_one(void *arg, const char *node, const struct ledger_records *rs)
{
	struct walk *w = arg;

	assert_true(w->n < 8);
	snprintf(w->names[w->n], sizeof(w->names[w->n]), "%s", node);
	w->counts[w->n++] = rs->n;
	for (size_t i = 0; i < rs->n; i++)
		assert_string_equal(rs->v[i].node, node);
	return 0;
}

static void
test_each_node(void **state)
{
	struct fix *f = *state;
	struct walk w = { .n = 0 };

	/* names that start one another: their files sort apart from them */
	append(f, "n1", CONFIG_LEDGER_FAULT, 1, "a");
	append(f, "n10", CONFIG_LEDGER_FAULT, 2, "b");
	append(f, "n10", CONFIG_LEDGER_FAULT, 3, "c");
	append(f, "n1a", CONFIG_LEDGER_FAULT, 4, "d");
	append(f, "n2", CONFIG_LEDGER_FAULT, 5, "e");
	assert_int_equal(ledger_compact_node(f->l, "n2", -INFINITY, 10, f->why, sizeof(f->why)), 0);
	append(f, "n2", CONFIG_LEDGER_FAULT, 6, "f");
	append(f, "n1", CONFIG_LEDGER_FAULT, 7, "g");
	assert_int_equal(ledger_each_node(f->l, -INFINITY, walk_one, &w, f->why, sizeof(f->why)), 0);
	assert_int_equal(w.n, 4);
	assert_string_equal(w.names[0], "n1");
	assert_int_equal(w.counts[0], 2);
	assert_string_equal(w.names[1], "n10");
	assert_int_equal(w.counts[1], 2);
	assert_string_equal(w.names[2], "n1a");
	assert_int_equal(w.counts[2], 1);
	assert_string_equal(w.names[3], "n2");
	assert_int_equal(w.counts[3], 2);
}

/* ---- who wrote it -------------------------------------------------------------------- */

/* As another user (root only): records land in the spool under that
 * user's name; compaction and admin records are not theirs to make
 * count. */
static void
test_other_user(void **state)
{
	struct fix *f = *state;
	struct ledger_records rs;
	pid_t pid;
	int st;

	if (geteuid() != 0) {
		skip();
		return;
	}
	/* the scratch directory is 0700: let the other user through */
	assert_int_equal(chmod(f->root, 0755), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct ledger_record r[2] = {
			rec("n1", CONFIG_LEDGER_FAULT, 1000, "seen by a job"),
			rec("n1", LEDGER_KIND_FORGIVE, 1001, "let me in"),
		};
		struct ledger *l = NULL;
		char why[512];

		if (setgid(NOBODY) < 0 || setuid(NOBODY) < 0)
			_exit(2);
		if (ledger_open(f->dir, true, &l, why, sizeof(why)) < 0 || ledger_trusted(l))
			_exit(3);
		if (ledger_append(l, r, 2, why, sizeof(why)) < 0)
			_exit(4);
		if (ledger_compact_node(l, "n1", -INFINITY, 2000, why, sizeof(why)) != -EPERM)
			_exit(5);
		ledger_close(l);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	for (int pass = 0; pass < 2; pass++) {
		read_back(f, "n1", -INFINITY, &rs);
		assert_int_equal(rs.n, 2);
		assert_int_equal(rs.v[0].uid, NOBODY);
		assert_false(rs.v[0].trusted);
		assert_false(rs.v[1].trusted);
		ledger_records_free(&rs);
		/* compaction (root's) keeps who wrote each */
		assert_int_equal(ledger_compact_node(f->l, "n1", -INFINITY, 2000, f->why,
		                                     sizeof(f->why)), 0);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_record_format),
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
		T(test_open_checks),
		T(test_append_read),
		T(test_torn_and_planted),
		T(test_write_then_rename),
		T(test_compact),
		T(test_compact_racing),
		T(test_expiry),
		T(test_keep_cap),
		T(test_stale_tmp),
		T(test_each_node),
		T(test_other_user),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
