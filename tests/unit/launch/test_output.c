/*
 * test_output.c - output pass-through: byte-exact copies, line prefixes,
 * back-pressure without blocking, a destination that goes away, drain
 * timeouts and discard mode, all against a real pipe read by the test.
 */
#include "autoconf.h"
#include "../vigil_test.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "launch/output.h"

#define CAP 4096
/* Any push that blocks on a full pipe would hang the test: fail instead. */
#define ALARM_S 30

struct fx {
	int rd, wr;              /* the pipe standing in for our stdout */
	struct output *o;
	char *got;               /* everything read from the pipe so far */
	size_t got_len, got_size;
};

static int
setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	int p[2];

	if (!f || pipe(p) < 0)
		return -1;
	f->rd = p[0];
	f->wr = p[1];
	if (fcntl(f->rd, F_SETFL, fcntl(f->rd, F_GETFL) | O_NONBLOCK) < 0)
		return -1;
	f->o = output_new(f->wr, CAP);
	if (!f->o)
		return -1;
	alarm(ALARM_S);
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fx *f = *state;

	alarm(0);
	output_free(f->o);
	if (f->rd >= 0)
		close(f->rd);
	close(f->wr);
	free(f->got);
	free(f);
	return 0;
}

/* Read what the pipe holds now, appending to f->got; returns bytes read. */
static size_t
drain_pipe(struct fx *f)
{
	size_t total = 0;
	ssize_t n;

	for (;;) {
		if (f->got_size - f->got_len < 65536) {
			f->got_size = f->got_size * 2 + 65536;
			f->got = realloc(f->got, f->got_size);
			assert_non_null(f->got);
		}
		n = read(f->rd, f->got + f->got_len, f->got_size - f->got_len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		f->got_len += (size_t)n;
		total += (size_t)n;
	}
	assert_true(n < 0 && errno == EAGAIN);
	return total;
}

static uint32_t rng = 0x9e3779b9u;

static uint32_t
next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 17;
	rng ^= rng << 5;
	return rng;
}

/*
 * Push DATA as a supervisor would: never more than output_room(), in
 * chunks of varying size, reading the pipe (the slow consumer) between
 * pushes, then flush until nothing is pending.
 */
static void
pump(struct fx *f, const char *data, size_t len)
{
	size_t off = 0, room, n;

	while (off < len) {
		room = output_room(f->o);
		if (room > 0) {
			n = 1 + next_rand() % 3000;
			if (n > room)
				n = room;
			if (n > len - off)
				n = len - off;
			assert_int_equal(output_push(f->o, data + off, n), 0);
			off += n;
		}
		/* Let the consumer lag now and then so the buffer gets used. */
		if (next_rand() % 4 == 0 || room == 0) {
			drain_pipe(f);
			assert_true(output_flush(f->o) >= 0);
		}
	}
	while (output_pending(f->o)) {
		drain_pipe(f);
		/* a line begun that waits for its end goes at the end */
		assert_true((output_line_waits(f->o) ? output_flush_all(f->o) : output_flush(f->o)) >= 0);
	}
	drain_pipe(f);
}

/* The expected output, byte by byte, independent of the module's code. */
static char *
reference_prefixed(const char *data, size_t len, const char *prefix,
                   bool *at_start, size_t *out_len)
{
	size_t plen = strlen(prefix), n = 0;
	char *out = malloc(len * (plen + 1) + 1);

	assert_non_null(out);
	for (size_t i = 0; i < len; i++) {
		if (*at_start) {
			memcpy(out + n, prefix, plen);
			n += plen;
		}
		out[n++] = data[i];
		*at_start = data[i] == '\n';
	}
	*out_len = n;
	return out;
}

static char *
random_bytes(size_t len)
{
	char *d = malloc(len);

	assert_non_null(d);
	for (size_t i = 0; i < len; i++)
		d[i] = (char)(next_rand() & 0xff);
	/* The awkward bytes are there for sure, not by chance. */
	d[0] = '\0';
	d[1] = '\r';
	d[2] = (char)0xff;
	d[3] = '\n';
	d[len / 2] = '\0';
	d[len - 1] = (char)0xff;
	return d;
}

static void
test_new_errors(void **state)
{
	struct fx *f = *state;
	struct output *o;
	int p[2], flags;

	(void)f;
	errno = 0;
	assert_null(output_new(1, 0));
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_null(output_new(-1, CAP));
	assert_int_equal(errno, EBADF);
	output_free(NULL);

	/* Non-blocking while in use, blocking again afterwards. */
	assert_int_equal(pipe(p), 0);
	assert_false(fcntl(p[1], F_GETFL) & O_NONBLOCK);
	o = output_new(p[1], CAP);
	assert_non_null(o);
	flags = fcntl(p[1], F_GETFL);
	assert_true(flags & O_NONBLOCK);
	assert_int_equal(output_fd(o), p[1]);
	output_free(o);
	assert_false(fcntl(p[1], F_GETFL) & O_NONBLOCK);
	close(p[0]);
	close(p[1]);
}

static void
test_passthrough_binary(void **state)
{
	struct fx *f = *state;
	size_t len = 1 << 20;
	char *data = random_bytes(len);

	pump(f, data, len);
	assert_int_equal(f->got_len, len);
	assert_memory_equal(f->got, data, len);
	assert_int_equal(output_written(f->o), len);
	assert_int_equal(output_lost(f->o), 0);
	free(data);
}

static void
test_direct_write_when_empty(void **state)
{
	struct fx *f = *state;
	static const char msg[] = "step 1 loss 0.5\n";

	/* The pipe has space: nothing is queued, all of it is on the pipe. */
	assert_int_equal(output_push(f->o, msg, sizeof(msg) - 1), 0);
	assert_false(output_pending(f->o));
	assert_int_equal(output_queued(f->o), 0);
	assert_int_equal(output_flush(f->o), 0);
	assert_int_equal(drain_pipe(f), sizeof(msg) - 1);
	assert_memory_equal(f->got, msg, sizeof(msg) - 1);
	assert_int_equal(output_room(f->o), CAP);
}

/* Push STR, then expect the pipe to have received exactly WANT. */
static void
push_expect(struct fx *f, const char *str, const char *want)
{
	size_t before = f->got_len;

	assert_int_equal(output_push(f->o, str, strlen(str)), 0);
	drain_pipe(f);
	assert_int_equal(f->got_len - before, strlen(want));
	assert_memory_equal(f->got + before, want, strlen(want));
}

static void
test_prefix_lines(void **state)
{
	struct fx *f = *state;

	assert_int_equal(output_set_prefix(f->o, "[n1:0] "), 0);
	push_expect(f, "a", "[n1:0] a");
	push_expect(f, "b\n", "b\n");
	/* No prefix after a final newline until more data arrives. */
	push_expect(f, "c\nd\n", "[n1:0] c\n[n1:0] d\n");
	push_expect(f, "", "");
	push_expect(f, "\n", "[n1:0] \n");
	push_expect(f, "\n\nx", "[n1:0] \n[n1:0] \n[n1:0] x");
	push_expect(f, "\r\n", "\r\n");

	/* Back to none mid-stream, then a new prefix on the next line. */
	assert_int_equal(output_set_prefix(f->o, NULL), 0);
	push_expect(f, "e\nf", "e\nf");
	assert_int_equal(output_set_prefix(f->o, "<1> "), 0);
	push_expect(f, "g\nh", "g\n<1> h");
	assert_int_equal(output_written(f->o), f->got_len);
}

static void
test_prefix_first_byte_after_plain(void **state)
{
	struct fx *f = *state;

	/* Line state is kept while no prefix is set. */
	push_expect(f, "abc\n", "abc\n");
	assert_int_equal(output_set_prefix(f->o, "P "), 0);
	push_expect(f, "d", "P d");
	assert_int_equal(output_set_prefix(f->o, ""), 0);
	push_expect(f, "\ne", "\ne");
}

static void
test_prefix_long_line(void **state)
{
	struct fx *f = *state;
	size_t len = 1 << 20;
	char *data = malloc(len);

	assert_non_null(data);
	memset(data, 'x', len);
	assert_int_equal(output_set_prefix(f->o, "[n1:0] "), 0);
	pump(f, data, len);
	assert_int_equal(f->got_len, len + 7);
	assert_memory_equal(f->got, "[n1:0] ", 7);
	assert_memory_equal(f->got + 7, data, len);
	free(data);
}

static void
test_prefix_random(void **state)
{
	struct fx *f = *state;
	size_t len = 1 << 19, want_len;
	char *data = random_bytes(len), *want;
	bool at_start = true;

	/* Many short lines: prefixes make up most of the output. */
	for (size_t i = 0; i < len; i += 1 + next_rand() % 40)
		data[i] = '\n';
	want = reference_prefixed(data, len, "[n12:345] ", &at_start, &want_len);
	assert_int_equal(output_set_prefix(f->o, "[n12:345] "), 0);
	pump(f, data, len);
	assert_int_equal(f->got_len, want_len);
	assert_memory_equal(f->got, want, want_len);
	assert_int_equal(output_written(f->o), want_len);
	free(want);
	free(data);
}

/*
 * The reader stops reading: pushes keep returning at once, the buffer stops
 * at CAP (plus prefixes of what was already accepted), and once the reader
 * comes back everything arrives in order.
 */
static void
backpressure(struct fx *f, const char *prefix, size_t bound)
{
	size_t len = 1 << 20, off = 0, n, want_len;
	char *data = random_bytes(len), *want;
	bool at_start = true;
	int pushes = 0;

	if (prefix)
		assert_int_equal(output_set_prefix(f->o, prefix), 0);
	while (output_room(f->o) > 0) {
		n = output_room(f->o);
		if (n > 1000)
			n = 1000;
		assert_true(off + n <= len);
		assert_int_equal(output_push(f->o, data + off, n), 0);
		off += n;
		assert_true(output_queued(f->o) <= bound);
		pushes++;
	}
	assert_true(pushes > 1);
	assert_int_equal(output_room(f->o), 0);
	assert_true(output_pending(f->o));
	assert_true(output_queued(f->o) >= CAP);
	assert_true(output_queued(f->o) <= bound);
	assert_int_equal(output_flush(f->o), 1);

	/* The reader returns. */
	while (output_pending(f->o)) {
		drain_pipe(f);
		assert_true(output_flush(f->o) >= 0);
	}
	drain_pipe(f);
	assert_int_equal(output_room(f->o), CAP);
	want = prefix ? reference_prefixed(data, off, prefix, &at_start, &want_len)
	              : NULL;
	if (!want) {
		want_len = off;
		assert_int_equal(f->got_len, off);
		assert_memory_equal(f->got, data, off);
	} else {
		assert_int_equal(f->got_len, want_len);
		assert_memory_equal(f->got, want, want_len);
	}
	assert_int_equal(output_written(f->o), want_len);
	free(want);
	free(data);
}

static void
test_backpressure(void **state)
{
	backpressure(*state, NULL, CAP);
}

static void
test_backpressure_prefix(void **state)
{
	/* The last push (at most 1000 bytes, when the buffer was below CAP)
	 * may have been all newlines. */
	backpressure(*state, "[n1:0] ", CAP + 1000 * 8);
}

/* Push until the pipe is full and LEAVE bytes wait in the buffer. */
static size_t
fill(struct fx *f, size_t leave)
{
	char chunk[1024];
	size_t pushed = 0, n;

	memset(chunk, 'z', sizeof(chunk));
	while (output_queued(f->o) < leave) {
		n = leave - output_queued(f->o);
		if (n > sizeof(chunk))
			n = sizeof(chunk);
		assert_int_equal(output_push(f->o, chunk, n), 0);
		pushed += n;
	}
	return pushed;
}

static void
test_epipe_direct(void **state)
{
	struct fx *f = *state;
	static const char msg[] = "nobody reads this\n";

	close(f->rd);
	f->rd = -1;
	assert_int_equal(output_push(f->o, msg, sizeof(msg) - 1), -EPIPE);
	assert_int_equal(output_lost(f->o), sizeof(msg) - 1);
	assert_int_equal(output_written(f->o), 0);
	/* Reported once; later bytes are counted and dropped. */
	assert_int_equal(output_push(f->o, msg, sizeof(msg) - 1), 0);
	assert_int_equal(output_lost(f->o), 2 * (sizeof(msg) - 1));
	assert_false(output_pending(f->o));
	assert_int_equal(output_room(f->o), CAP);
	assert_int_equal(output_flush(f->o), 0);
	assert_int_equal(output_drain(f->o, 100), 0);
}

static void
test_epipe_queued(void **state)
{
	struct fx *f = *state;
	size_t pushed = fill(f, 3000), queued = output_queued(f->o);

	assert_int_equal(queued, 3000);
	assert_int_equal(output_written(f->o) + queued, pushed);
	close(f->rd);
	f->rd = -1;
	assert_int_equal(output_flush(f->o), -EPIPE);
	assert_int_equal(output_lost(f->o), queued);
	assert_false(output_pending(f->o));
	assert_int_equal(output_flush(f->o), 0);

	/* Lost bytes are counted with the prefixes they would have had. */
	assert_int_equal(output_set_prefix(f->o, "ab"), 0);
	assert_int_equal(output_push(f->o, "\nx\ny", 4), 0);
	assert_int_equal(output_lost(f->o), queued + 4 + 2 * 2);
}

static long long
ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
test_drain(void **state)
{
	struct fx *f = *state;
	size_t pushed = fill(f, 2000);
	long long t0, dt;

	t0 = ms_now();
	assert_int_equal(output_drain(f->o, 300), -ETIMEDOUT);
	dt = ms_now() - t0;
	assert_true(dt >= 250);
	assert_true(dt < 5000);
	assert_int_equal(output_queued(f->o), 2000);

	t0 = ms_now();
	assert_int_equal(output_drain(f->o, 0), -ETIMEDOUT);
	assert_true(ms_now() - t0 < 1000);

	/* The pipe (64 KiB) empties and takes all of the buffer. */
	drain_pipe(f);
	assert_int_equal(output_drain(f->o, 1000), 0);
	assert_false(output_pending(f->o));
	drain_pipe(f);
	assert_int_equal(f->got_len, pushed);
	assert_int_equal(output_written(f->o), pushed);
}

static void
test_discard(void **state)
{
	struct fx *f = *state;
	char big[3 * CAP];

	memset(big, 'q', sizeof(big));
	output_set_discard(f->o, true);
	for (int i = 0; i < 100; i++)
		assert_int_equal(output_push(f->o, big, sizeof(big)), 0);
	assert_int_equal(output_room(f->o), CAP);
	assert_false(output_pending(f->o));
	assert_int_equal(output_written(f->o), 0);
	assert_int_equal(output_lost(f->o), 0);
	assert_int_equal(drain_pipe(f), 0);

	output_set_discard(f->o, false);
	push_expect(f, "back\n", "back\n");
	assert_int_equal(output_written(f->o), 5);
}

/* GOT holds exactly WANT since BEFORE. */
static void
expect_got(struct fx *f, size_t before, const char *want)
{
	drain_pipe(f);
	assert_int_equal(f->got_len - before, strlen(want));
	assert_memory_equal(f->got + before, want, strlen(want));
}

/*
 * Held: pushes below the hold are not written; a flush writes whole lines
 * and keeps a line begun for its end; enough held goes out as whole
 * lines at once; one line longer than the hold goes as it is.
 */
static void
test_hold_whole_lines(void **state)
{
	struct fx *f = *state;
	size_t at = 0;
	char longline[200];

	output_set_hold(f->o, 64);
	assert_int_equal(output_push(f->o, "abc\nde", 6), 0);
	expect_got(f, at, "");
	assert_true(output_held(f->o));
	assert_int_equal(output_flush(f->o), 0);
	expect_got(f, at, "abc\n");
	at = f->got_len;
	assert_true(output_held(f->o));
	assert_int_equal(output_queued(f->o), 2);
	assert_int_equal(output_push(f->o, "f\ng", 3), 0);
	assert_int_equal(output_flush_lines(f->o), 0);
	expect_got(f, at, "def\n");
	at = f->got_len;

	/* enough held: the whole lines go at once, "g" and the rest wait */
	memset(longline, 'x', sizeof(longline));
	longline[70] = '\n';
	assert_int_equal(output_push(f->o, longline, 100), 0);
	drain_pipe(f);
	assert_int_equal(f->got_len - at, 72);
	assert_int_equal(f->got[at], 'g');
	assert_int_equal(f->got[at + 71], '\n');
	at = f->got_len;
	assert_int_equal(output_queued(f->o), 29);

	/* one line longer than the hold, with no end yet: it goes */
	assert_int_equal(output_push(f->o, longline, 60), 0);
	drain_pipe(f);
	assert_int_equal(f->got_len - at, 89);
	at = f->got_len;
	assert_false(output_pending(f->o));

	/* no hold: a line begun goes at once, as before */
	output_set_hold(f->o, 0);
	assert_int_equal(output_push(f->o, "tail", 4), 0);
	expect_got(f, at, "tail");
}

/* A push of at least the hold into an empty queue: whole lines written
 * directly, the line begun kept; output_drain() writes it at the end. */
static void
test_hold_direct_and_drain(void **state)
{
	struct fx *f = *state;
	char buf[100];

	memset(buf, 'y', sizeof(buf));
	buf[39] = '\n';
	output_set_hold(f->o, 50);
	assert_int_equal(output_push(f->o, buf, sizeof(buf)), 0);
	drain_pipe(f);
	assert_int_equal(f->got_len, 40);
	assert_int_equal(output_queued(f->o), 60);
	assert_true(output_held(f->o));
	assert_int_equal(output_drain(f->o, 1000), 0);
	drain_pipe(f);
	assert_int_equal(f->got_len, 100);
	assert_false(output_pending(f->o));
}

/*
 * A line the destination has begun (written before the hold) is not held
 * back: its end goes at once, and only what follows is held.  Held, the
 * end could wait while another rank's output comes in after the line's
 * beginning, where mpirun merges them.
 */
static void
test_hold_ends_a_line_begun(void **state)
{
	struct fx *f = *state;

	assert_int_equal(output_push(f->o, "abc", 3), 0);
	expect_got(f, 0, "abc");
	output_set_hold(f->o, 64);
	assert_int_equal(output_push(f->o, "def\nghi", 7), 0);
	expect_got(f, 0, "abcdef\n");
	assert_int_equal(output_queued(f->o), 3);
	assert_true(output_held(f->o));
	/* at a line's start again: held as usual */
	assert_int_equal(output_push(f->o, "\njkl\n", 5), 0);
	expect_got(f, 0, "abcdef\n");
	assert_int_equal(output_flush(f->o), 0);
	expect_got(f, 0, "abcdef\nghi\njkl\n");
}

/*
 * Held bytes without a newline, as many as the hold or more, left queued
 * by a full destination: once it has room, output_flush() (what the loop
 * calls when it may write) writes them all.  Writing none would leave
 * them to the hold's timer while the queue fills and the training waits.
 */
static void
test_hold_flush_long_line(void **state)
{
	struct fx *f = *state;
	size_t pushed, got;

	pushed = fill(f, 300);  /* the pipe full, 300 'z' queued, no newline */
	output_set_hold(f->o, 64);
	assert_int_equal(output_flush(f->o), 1);   /* still full */
	got = drain_pipe(f);
	assert_int_equal(output_flush(f->o), 0);
	got += drain_pipe(f);
	assert_int_equal(got, pushed);
	assert_false(output_pending(f->o));
}

/* With --tag-output's prefixes, held lines come out whole and prefixed. */
static void
test_hold_prefix(void **state)
{
	struct fx *f = *state;

	assert_int_equal(output_set_prefix(f->o, "[n1:0] "), 0);
	output_set_hold(f->o, 1024);
	assert_int_equal(output_push(f->o, "one\ntw", 6), 0);
	assert_int_equal(output_push(f->o, "o\nthr", 5), 0);
	expect_got(f, 0, "");
	assert_int_equal(output_flush(f->o), 0);
	expect_got(f, 0, "[n1:0] one\n[n1:0] two\n");
	output_set_hold(f->o, 0);
	assert_int_equal(output_flush(f->o), 0);
	expect_got(f, 0, "[n1:0] one\n[n1:0] two\n[n1:0] thr");
}

/*
 * Waiting for lines' ends: a line begun at the destination's line start
 * stays queued until its end is pushed, then goes whole; whole lines go
 * at once; output_flush() keeps the line begun, output_flush_all() writes
 * it, and once the destination has begun a line, its end goes at once.
 */
static void
test_line_wait(void **state)
{
	struct fx *f = *state;

	output_set_line_wait(f->o, 64);
	assert_int_equal(output_push(f->o, "abc", 3), 0);
	expect_got(f, 0, "");
	assert_int_equal(output_line_waits(f->o), 3);
	assert_true(output_pending(f->o));
	assert_false(output_held(f->o));
	assert_int_equal(output_push(f->o, "def\nghi", 7), 0);
	expect_got(f, 0, "abcdef\n");
	assert_int_equal(output_line_waits(f->o), 3);
	assert_int_equal(output_push(f->o, "\n", 1), 0);
	expect_got(f, 0, "abcdef\nghi\n");
	assert_int_equal(output_line_waits(f->o), 0);
	assert_false(output_pending(f->o));

	/* its end does not come: a flush keeps it, flush_all writes it */
	assert_int_equal(output_push(f->o, "jkl", 3), 0);
	assert_int_equal(output_flush(f->o), 0);
	expect_got(f, 0, "abcdef\nghi\n");
	assert_int_equal(output_flush_all(f->o), 0);
	expect_got(f, 0, "abcdef\nghi\njkl");
	/* the destination has begun the line: more of it goes at once, and
	 * the line begun after its end waits */
	assert_int_equal(output_push(f->o, "mno", 3), 0);
	expect_got(f, 0, "abcdef\nghi\njklmno");
	assert_int_equal(output_line_waits(f->o), 0);
	assert_int_equal(output_push(f->o, "p\nqr", 4), 0);
	expect_got(f, 0, "abcdef\nghi\njklmnop\n");
	assert_int_equal(output_line_waits(f->o), 2);
	/* the end of the job: everything goes */
	assert_int_equal(output_drain(f->o, 1000), 0);
	expect_got(f, 0, "abcdef\nghi\njklmnop\nqr");
}

/* A line begun as long as the bound does not wait, nor its rest. */
static void
test_line_wait_bound(void **state)
{
	struct fx *f = *state;
	char buf[40];

	output_set_line_wait(f->o, 16);
	memset(buf, 'a', sizeof(buf));
	assert_int_equal(output_push(f->o, buf, 10), 0);
	expect_got(f, 0, "");
	assert_int_equal(output_push(f->o, buf, 6), 0);
	drain_pipe(f);
	assert_int_equal(f->got_len, 16);
	assert_int_equal(output_queued(f->o), 0);
	buf[0] = '\n';
	assert_int_equal(output_push(f->o, buf, 17), 0);  /* "\n" and 16 begun */
	drain_pipe(f);
	assert_int_equal(f->got_len, 33);
	assert_int_equal(output_queued(f->o), 0);
	assert_int_equal(output_push(f->o, buf, 15), 0);  /* "\n" and 14 begun */
	drain_pipe(f);
	assert_int_equal(f->got_len, 34);
	assert_int_equal(output_line_waits(f->o), 14);
}

/* With --tag-output's prefixes, a line waits prefixed and goes whole. */
static void
test_line_wait_prefix(void **state)
{
	struct fx *f = *state;

	assert_int_equal(output_set_prefix(f->o, "[n0:0] "), 0);
	output_set_line_wait(f->o, 64);
	assert_int_equal(output_push(f->o, "ab", 2), 0);
	expect_got(f, 0, "");
	assert_int_equal(output_push(f->o, "c\nd", 3), 0);
	expect_got(f, 0, "[n0:0] abc\n");
	assert_int_equal(output_line_waits(f->o), 8);
	assert_int_equal(output_push(f->o, "\n", 1), 0);
	expect_got(f, 0, "[n0:0] abc\n[n0:0] d\n");
}

/* Every message waiting on FD, each whole lines, appended to OUT (LEN at
 * most, *GOT so far); returns how many. */
static size_t
recv_lines(int fd, char *out, size_t *got, size_t len)
{
	char msg[1 << 16];
	size_t msgs = 0;
	ssize_t r;

	while ((r = recv(fd, msg, sizeof(msg), 0)) > 0) {
		assert_int_equal(msg[r - 1], '\n');
		assert_true(*got + (size_t)r <= len);
		memcpy(out + *got, msg, (size_t)r);
		*got += (size_t)r;
		msgs++;
	}
	return msgs;
}

/*
 * What a destination that merges writers sees (mpirun merging ranks):
 * every write, a message of a SOCK_SEQPACKET socket here, is whole lines,
 * however the lines were cut into pushes and however slowly the reader
 * reads; and all of it arrives, in order.
 */
static void
test_line_wait_writes_whole_lines(void **state)
{
	size_t len = 1 << 18, off = 0, got = 0, n, room, msgs = 0;
	char *data = malloc(len), *out = malloc(len);
	struct output *o;
	int sv[2];

	(void)state;
	assert_non_null(data);
	assert_non_null(out);
	for (size_t i = 0; i < len; i++)
		data[i] = (char)('a' + next_rand() % 26);
	for (size_t i = 0; i < len; i += 1 + next_rand() % 40)
		data[i] = '\n';
	data[len - 1] = '\n';
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	assert_int_equal(fcntl(sv[0], F_SETFL, O_NONBLOCK), 0);
	o = output_new(sv[1], CAP);
	assert_non_null(o);
	output_set_line_wait(o, 64);
	while (off < len || output_pending(o)) {
		room = output_room(o);
		if (off < len && room > 0) {
			n = 1 + next_rand() % 3000;
			n = n > room ? room : n;
			n = n > len - off ? len - off : n;
			assert_int_equal(output_push(o, data + off, n), 0);
			off += n;
		}
		if (next_rand() % 4 == 0 || room == 0 || off == len) {
			msgs += recv_lines(sv[0], out, &got, len);
			assert_true(output_flush(o) >= 0);
		}
	}
	msgs += recv_lines(sv[0], out, &got, len);
	assert_int_equal(got, len);
	assert_memory_equal(out, data, len);
	assert_true(msgs > 10);
	output_free(o);
	close(sv[0]);
	close(sv[1]);
	free(data);
	free(out);
}

/* Byte-exact through a slow reader while waiting for lines' ends. */
static void
test_line_wait_random(void **state)
{
	struct fx *f = *state;
	size_t len = 1 << 19;
	char *data = random_bytes(len);

	for (size_t i = 0; i < len; i += 1 + next_rand() % 200)
		data[i] = '\n';
	output_set_line_wait(f->o, 64);
	pump(f, data, len);
	assert_int_equal(f->got_len, len);
	assert_memory_equal(f->got, data, len);
	assert_int_equal(output_written(f->o), len);
	free(data);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_new_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_passthrough_binary, setup, teardown),
		cmocka_unit_test_setup_teardown(test_direct_write_when_empty, setup, teardown),
		cmocka_unit_test_setup_teardown(test_prefix_lines, setup, teardown),
		cmocka_unit_test_setup_teardown(test_prefix_first_byte_after_plain, setup, teardown),
		cmocka_unit_test_setup_teardown(test_prefix_long_line, setup, teardown),
		cmocka_unit_test_setup_teardown(test_prefix_random, setup, teardown),
		cmocka_unit_test_setup_teardown(test_backpressure, setup, teardown),
		cmocka_unit_test_setup_teardown(test_backpressure_prefix, setup, teardown),
		cmocka_unit_test_setup_teardown(test_epipe_direct, setup, teardown),
		cmocka_unit_test_setup_teardown(test_epipe_queued, setup, teardown),
		cmocka_unit_test_setup_teardown(test_drain, setup, teardown),
		cmocka_unit_test_setup_teardown(test_discard, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hold_whole_lines, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hold_direct_and_drain, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hold_ends_a_line_begun, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hold_flush_long_line, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hold_prefix, setup, teardown),
		cmocka_unit_test_setup_teardown(test_line_wait, setup, teardown),
		cmocka_unit_test_setup_teardown(test_line_wait_bound, setup, teardown),
		cmocka_unit_test_setup_teardown(test_line_wait_prefix, setup, teardown),
		cmocka_unit_test(test_line_wait_writes_whole_lines),
		cmocka_unit_test_setup_teardown(test_line_wait_random, setup, teardown),
	};

	/* A reader that went away must show up as EPIPE, not kill us. */
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
