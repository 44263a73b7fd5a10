/*
 * test_events.c - the JSON-lines event log.
 */
#include "autoconf.h"

#include "../vigil_test.h"
#include "../scratch.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <cJSON.h>

#include "vigil.h"
#include "lib/events.h"
#include "lib/util.h"

struct fixture {
	char dir[64];
	char path[128];
};

static int
setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "/tmp/vigil-events-XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	snprintf(f->path, sizeof(f->path), "%s/events.jsonl", f->dir);
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

/* Read the file's lines into parsed objects; returns the count. */
static int
read_events(const char *path, cJSON **out, int max)
{
	char line[8192];
	FILE *fp = fopen(path, "r");
	int n = 0;

	assert_non_null(fp);
	while (fgets(line, sizeof(line), fp)) {
		size_t len = strlen(line);

		/* every event is exactly one newline-terminated line */
		assert_true(len > 0 && line[len - 1] == '\n');
		assert_true(n < max);
		out[n] = cJSON_Parse(line);
		assert_non_null(out[n]);
		n++;
	}
	fclose(fp);
	return n;
}

static void
write_one(struct events *ev, const char *node, int rank, const char *msg)
{
	cJSON *d = cJSON_CreateObject();
	cJSON *e;

	cJSON_AddStringToObject(d, "check", "nics");
	e = events_make(node, rank, VIGIL_EVENT_CHECK, VIGIL_SEVERITY_ERROR, msg, d);
	assert_non_null(e);
	assert_int_equal(events_write(ev, e), 0);
	cJSON_Delete(e);
}

static void
test_schema(void **state)
{
	struct fixture *f = *state;
	struct events *ev;
	cJSON *e[4];
	const cJSON *t;

	assert_int_equal(events_open(f->path, &ev), 0);
	write_one(ev, "node02", 2, "nics: eth1 is down\nsecond \"line\"");
	assert_int_equal(events_close(ev), 0);

	assert_int_equal(read_events(f->path, e, 4), 1);
	assert_string_equal(cJSON_GetObjectItem(e[0], "node")->valuestring, "node02");
	assert_int_equal(cJSON_GetObjectItem(e[0], "rank")->valueint, 2);
	assert_string_equal(cJSON_GetObjectItem(e[0], "kind")->valuestring, "check");
	assert_string_equal(cJSON_GetObjectItem(e[0], "severity")->valuestring, "error");
	/* a newline inside a message stays inside its JSON string */
	assert_string_equal(cJSON_GetObjectItem(e[0], "message")->valuestring,
	                    "nics: eth1 is down\nsecond \"line\"");
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(e[0], "details"),
	                                        "check")->valuestring, "nics");
	t = cJSON_GetObjectItem(e[0], "time");
	assert_true(cJSON_IsString(t));
	/* 2026-11-20T23:35:08.123Z */
	assert_int_equal(strlen(t->valuestring), 24);
	assert_int_equal(t->valuestring[10], 'T');
	assert_int_equal(t->valuestring[19], '.');
	assert_int_equal(t->valuestring[23], 'Z');
	cJSON_Delete(e[0]);
}

static void
test_appends(void **state)
{
	struct fixture *f = *state;
	struct events *ev;
	cJSON *e[4];

	/* a requeued job appends to the log of its earlier run */
	assert_int_equal(events_open(f->path, &ev), 0);
	write_one(ev, "a", 0, "first");
	assert_int_equal(events_close(ev), 0);
	assert_int_equal(events_open(f->path, &ev), 0);
	write_one(ev, "b", 1, "second");
	write_one(ev, "c", 2, "third");
	assert_int_equal(events_close(ev), 0);

	assert_int_equal(read_events(f->path, e, 4), 3);
	assert_string_equal(cJSON_GetObjectItem(e[0], "message")->valuestring, "first");
	assert_string_equal(cJSON_GetObjectItem(e[2], "message")->valuestring, "third");
	for (int i = 0; i < 3; i++)
		cJSON_Delete(e[i]);
}

static void
test_open_errors(void **state)
{
	struct fixture *f = *state;
	struct events *ev = (struct events *)0x1;
	char path[160];

	snprintf(path, sizeof(path), "%s/no/such/dir/events", f->dir);
	assert_int_equal(events_open(path, &ev), -ENOENT);
	assert_null(ev);
	/* a directory is not a log */
	assert_int_equal(events_open(f->dir, &ev), -EISDIR);
	assert_int_equal(events_close(NULL), 0);
}

static void
test_pipe_log(void **state)
{
	struct events *ev;
	int fds[2];
	char path[64], buf[512];
	ssize_t n;

	(void)state;
	/* --events /dev/stdout: a pipe cannot be fsynced, and need not be */
	assert_int_equal(pipe(fds), 0);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fds[1]);
	assert_int_equal(events_open(path, &ev), 0);
	write_one(ev, "p", 0, "to a pipe");
	assert_int_equal(events_close(ev), 0);
	close(fds[1]);
	n = read(fds[0], buf, sizeof(buf) - 1);
	assert_true(n > 0);
	buf[n] = '\0';
	assert_non_null(strstr(buf, "\"to a pipe\""));
	assert_int_equal(buf[n - 1], '\n');
	close(fds[0]);
}

/* A FIFO nobody reads is refused at once: opening it for writing would
 * otherwise wait for a reader, with the whole agent stuck.  With a reader
 * it is a pipe like /dev/stdout, and written whole lines. */
static void
test_fifo(void **state)
{
	struct fixture *f = *state;
	struct events *ev = (struct events *)0x1;
	char why[160], buf[512];
	int rd;
	ssize_t n;

	assert_int_equal(mkfifo(f->path, 0600), 0);
	assert_int_equal(events_open_why(f->path, &ev, why, sizeof(why)), -ENXIO);
	assert_null(ev);
	assert_string_equal(why, "a FIFO that nobody reads: refused rather than waited on");
	rd = open(f->path, O_RDONLY | O_NONBLOCK);
	assert_true(rd >= 0);
	assert_int_equal(events_open_why(f->path, &ev, why, sizeof(why)), 0);
	write_one(ev, "f", 0, "through a FIFO");
	assert_int_equal(events_close(ev), 0);
	n = read(rd, buf, sizeof(buf) - 1);
	assert_true(n > 0);
	buf[n] = '\0';
	assert_non_null(strstr(buf, "\"through a FIFO\""));
	close(rd);
}

/* /dev/null takes events; other devices do not. */
static void
test_devices(void **state)
{
	struct events *ev;
	char why[160];

	(void)state;
	assert_int_equal(events_open_why("/dev/null", &ev, why, sizeof(why)), 0);
	write_one(ev, "d", 0, "into nothing");
	assert_int_equal(events_close(ev), 0);
	assert_int_equal(events_open_why("/dev/zero", &ev, why, sizeof(why)), -EINVAL);
	assert_null(ev);
	assert_string_equal(why, "not a regular file, a pipe or a terminal: refused");
}

static off_t
size_of(const char *path)
{
	struct stat st;

	assert_int_equal(stat(path, &st), 0);
	return st.st_size;
}

/*
 * A disk that fills up in the middle of an event (here a file size limit,
 * which cuts a write short the same way): the part that went in is taken
 * back, the error comes back, and the log holds whole lines only; the
 * next event, once there is room, is a line of its own.
 */
static void
test_torn_write_taken_back(void **state)
{
	struct fixture *f = *state;
	struct rlimit old, lim;
	struct sigaction ign = { .sa_handler = SIG_IGN }, prev;
	struct events *ev;
	cJSON *e[8], *x;
	off_t before;
	int rc;

	assert_int_equal(events_open(f->path, &ev), 0);
	write_one(ev, "a", 0, "first");
	before = size_of(f->path);
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	lim = old;
	lim.rlim_cur = (rlim_t)before + 40;  /* room for 40 bytes of the next line */
	assert_int_equal(sigaction(SIGXFSZ, &ign, &prev), 0);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	x = events_make("b", 1, VIGIL_EVENT_CHECK, VIGIL_SEVERITY_ERROR, "cut short", NULL);
	rc = events_write(ev, x);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	assert_int_equal(sigaction(SIGXFSZ, &prev, NULL), 0);
	cJSON_Delete(x);
	assert_int_equal(rc, -EFBIG);
	assert_int_equal(size_of(f->path), before);
	write_one(ev, "c", 2, "after");
	assert_int_equal(events_close(ev), 0);
	assert_int_equal(read_events(f->path, e, 8), 2);  /* whole lines only */
	assert_string_equal(cJSON_GetObjectItem(e[1], "message")->valuestring, "after");
	cJSON_Delete(e[0]);
	cJSON_Delete(e[1]);
}

/* A log that ends in half a line (an older vigil, a crash): the first
 * event starts a new line instead of being glued to it. */
static void
test_fresh_line_after_torn_log(void **state)
{
	struct fixture *f = *state;
	const char torn[] = "{\"time\":\"2020-01-01T00:00:00.000Z\",\"node\":";
	struct events *ev;
	char *text, *nl;
	cJSON *e;

	assert_int_equal(util_write_atomic(f->path, torn, sizeof(torn) - 1, 0644), 0);
	assert_int_equal(events_open(f->path, &ev), 0);
	write_one(ev, "n", 3, "fresh");
	write_one(ev, "n", 3, "fresh again");
	assert_int_equal(events_close(ev), 0);
	text = slurp(f->path, 65536, NULL);
	assert_int_equal(strncmp(text, torn, sizeof(torn) - 1), 0);
	nl = text + sizeof(torn) - 1;
	assert_int_equal(*nl, '\n');
	e = cJSON_Parse(nl + 1);  /* up to the next newline: cJSON stops at the object */
	assert_non_null(e);
	assert_string_equal(cJSON_GetObjectItem(e, "message")->valuestring, "fresh");
	cJSON_Delete(e);
	assert_null(strstr(nl + 1, "}\n\n"));  /* no empty line between the two */
	free(text);
}

/* Bytes that are not UTF-8 (a training's output, a device name) are
 * replaced: every line is valid UTF-8 for any JSON reader. */
static void
test_valid_utf8(void **state)
{
	struct fixture *f = *state;
	struct events *ev;
	char *text;

	assert_int_equal(events_open(f->path, &ev), 0);
	write_one(ev, "n", 0, "bad \xff\xfe bytes \xc3\x28 and \xe2\x82");
	assert_int_equal(events_close(ev), 0);
	text = slurp(f->path, 65536, NULL);
	assert_true(util_utf8_valid(text, strlen(text)));
	assert_non_null(strstr(text, "bad \xef\xbf\xbd\xef\xbf\xbd bytes"));
	free(text);
}

/* As root on a shared node: another user's link is not followed, nor
 * their file appended to; root's own link (/dev/stdout's kind) is. */
static void
test_planted_by_another_user(void **state)
{
	struct fixture *f = *state;
	struct events *ev = (struct events *)0x1;
	char why[160], victim[160], link[160];

	if (geteuid() != 0)
		skip();
	snprintf(victim, sizeof(victim), "%s/victim", f->dir);
	assert_int_equal(util_write_atomic_str(victim, "precious\n", 0644), 0);
	snprintf(link, sizeof(link), "%s/link", f->dir);
	assert_int_equal(symlink(victim, link), 0);
	assert_int_equal(lchown(link, 65534, 65534), 0);
	assert_int_equal(events_open_why(link, &ev, why, sizeof(why)), -ELOOP);
	assert_null(ev);
	assert_string_equal(why, "a symbolic link of another user (uid 65534): not followed");
	assert_int_equal(size_of(victim), 9);
	/* a file of theirs */
	assert_int_equal(util_write_atomic_str(f->path, "", 0644), 0);
	assert_int_equal(chown(f->path, 65534, 65534), 0);
	assert_int_equal(events_open_why(f->path, &ev, why, sizeof(why)), -EPERM);
	assert_non_null(strstr(why, "a file of another user (uid 65534)"));
	/* root's own link is followed */
	assert_int_equal(lchown(link, 0, 0), 0);
	assert_int_equal(events_open_why(link, &ev, why, sizeof(why)), 0);
	assert_int_equal(events_close(ev), 0);
}

/* A file with another name (a hard link someone made to a file they may
 * not write) is not appended to, under either name. */
static void
test_hard_link(void **state)
{
	struct fixture *f = *state;
	struct events *ev = (struct events *)0x1;
	char why[160], victim[160];

	snprintf(victim, sizeof(victim), "%s/victim", f->dir);
	assert_int_equal(util_write_atomic_str(victim, "precious\n", 0644), 0);
	assert_int_equal(link(victim, f->path), 0);
	assert_int_equal(events_open_why(f->path, &ev, why, sizeof(why)), -EPERM);
	assert_null(ev);
	assert_non_null(strstr(why, "a file with 2 hard links"));
	assert_int_equal(events_open_why(victim, &ev, why, sizeof(why)), -EPERM);
	assert_int_equal(size_of(victim), 9);
	assert_int_equal(unlink(victim), 0);
	assert_int_equal(events_open_why(f->path, &ev, why, sizeof(why)), 0);
	assert_int_equal(events_close(ev), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_schema, setup, teardown),
		cmocka_unit_test_setup_teardown(test_appends, setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_errors, setup, teardown),
		cmocka_unit_test(test_pipe_log),
		cmocka_unit_test_setup_teardown(test_fifo, setup, teardown),
		cmocka_unit_test(test_devices),
		cmocka_unit_test_setup_teardown(test_torn_write_taken_back, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fresh_line_after_torn_log, setup, teardown),
		cmocka_unit_test_setup_teardown(test_valid_utf8, setup, teardown),
		cmocka_unit_test_setup_teardown(test_planted_by_another_user, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hard_link, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
