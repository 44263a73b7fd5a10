/*
 * test_nudge.c - wake-ups between agents: bound to the address MPI is
 * told to use, a datagram from a known agent wakes the receiver, one from
 * anywhere else is dropped and counted, at most NUDGE_DRAIN_MAX are read
 * per wake-up, and in a loop the socket is not read again until the busy
 * window has passed: a flood costs one read per window.
 */
#include "autoconf.h"

#include "../vigil_test.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "comm/nudge.h"
#include "lib/loop.h"

static bool
readable(const struct nudge *nd, int ms)
{
	struct pollfd p = { .fd = nudge_fd(nd), .events = POLLIN };

	return poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

/* A and B, each knowing where the other listens. */
static void
pair(struct nudge **a, struct nudge **b)
{
	char where[64];

	assert_int_equal(nudge_open(2, "localhost", a), 0);
	assert_int_equal(nudge_open(2, "localhost", b), 0);
	assert_int_equal(nudge_self(*b, "localhost", where, sizeof(where)), 0);
	assert_int_equal(nudge_set(*a, 1, where), 0);
	assert_int_equal(nudge_self(*a, "localhost", where, sizeof(where)), 0);
	assert_int_equal(nudge_set(*b, 0, where), 0);
}

/* A socket that is no agent's, bound to ADDR, sending one byte to ND. */
static void
stranger_sends(const char *addr, const struct nudge *nd, int count)
{
	struct sockaddr_in me = { .sin_family = AF_INET }, to = { .sin_family = AF_INET };
	char where[64], *colon;
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	assert_true(fd >= 0);
	assert_int_equal(inet_pton(AF_INET, addr, &me.sin_addr), 1);
	assert_int_equal(bind(fd, (struct sockaddr *)&me, sizeof(me)), 0);
	assert_int_equal(nudge_self(nd, "localhost", where, sizeof(where)), 0);
	colon = strrchr(where, ':');
	*colon = '\0';
	assert_int_equal(inet_pton(AF_INET, where, &to.sin_addr), 1);
	to.sin_port = htons((uint16_t)atoi(colon + 1));
	for (int i = 0; i < count; i++)
		assert_int_equal(sendto(fd, "!", 1, 0, (struct sockaddr *)&to, sizeof(to)), 1);
	close(fd);
}

static void
test_bound_where_mpi_is(void **state)
{
	struct nudge *a;
	char self[64];

	(void)state;
	/* lo, as the tests' Open MPI is told (OMPI_MCA_btl_tcp_if_include) */
	assert_int_equal(nudge_open(2, "localhost", &a), 0);
	assert_int_equal(nudge_self(a, "localhost", self, sizeof(self)), 0);
	assert_int_equal(strncmp(self, "127.0.0.1:", 10), 0);
	nudge_free(a);
	/* a subnet names the interface as well */
	assert_int_equal(setenv("OMPI_MCA_btl_tcp_if_include", "198.51.100.0/24,127.0.0.0/8", 1), 0);
	assert_int_equal(nudge_open(2, "localhost", &a), 0);
	assert_int_equal(nudge_self(a, "localhost", self, sizeof(self)), 0);
	assert_int_equal(strncmp(self, "127.", 4), 0);
	nudge_free(a);
	assert_int_equal(setenv("OMPI_MCA_btl_tcp_if_include", "lo", 1), 0);
}

static void
test_wakes(void **state)
{
	struct nudge *a, *b;
	struct nudge_stats st;

	(void)state;
	pair(&a, &b);
	/* nobody told a where rank 0 listens */
	assert_int_equal(nudge_send(a, 0), -ENOENT);
	assert_false(readable(b, 0));
	assert_int_equal(nudge_send(a, 1), 0);
	assert_true(readable(b, 2000));
	assert_int_equal(nudge_drain(b), 1);
	assert_false(readable(b, 0));
	assert_int_equal(nudge_drain(b), 0);

	/* a burst: read NUDGE_DRAIN_MAX at a time, the rest stays readable */
	for (int i = 0; i < NUDGE_DRAIN_MAX + 10; i++)
		assert_int_equal(nudge_send(a, 1), 0);
	assert_true(readable(b, 2000));
	assert_int_equal(nudge_drain(b), NUDGE_DRAIN_MAX);
	assert_true(readable(b, 0));
	assert_int_equal(nudge_drain(b), 10);
	nudge_get_stats(b, &st);
	assert_int_equal(st.taken, NUDGE_DRAIN_MAX + 11);
	assert_int_equal(st.dropped, 0);

	/* forgotten: not nudged any more */
	assert_int_equal(nudge_set(a, 1, NULL), 0);
	assert_int_equal(nudge_send(a, 1), -ENOENT);
	assert_false(readable(b, 50));
	nudge_free(a);
	nudge_free(b);
	nudge_free(NULL);
}

/* From another address, or another port of the same one: read, dropped. */
static void
test_strangers_dropped(void **state)
{
	struct nudge *a, *b;
	struct nudge_stats st;

	(void)state;
	pair(&a, &b);
	stranger_sends("127.0.0.2", b, 3);
	stranger_sends("127.0.0.1", b, 2);
	assert_true(readable(b, 2000));
	assert_int_equal(nudge_drain(b), 0);
	nudge_get_stats(b, &st);
	assert_int_equal(st.dropped, 5);
	assert_int_equal(st.taken, 0);
	/* a forgotten rank is a stranger too */
	assert_int_equal(nudge_set(b, 0, NULL), 0);
	assert_int_equal(nudge_send(a, 1), 0);
	assert_true(readable(b, 2000));
	assert_int_equal(nudge_drain(b), 0);
	nudge_free(a);
	nudge_free(b);
}

static uint64_t fake_us;

static uint64_t
fake_clock(void *arg)
{
	(void)arg;
	return fake_us;
}

static void
count(void *arg)
{
	(*(int *)arg)++;
}

/* Turns of L with nothing but the socket (0 ms waits) until it is idle. */
static void
turn(struct loop *l)
{
	for (int i = 0; i < 4; i++)
		assert_true(loop_run_once(l, 20) >= 0);
}

/* A pair, B watched in a new loop L on the fake clock, counting windows. */
static struct loop *
watched(struct nudge **a, struct nudge **b, int *windows)
{
	struct loop *l = loop_new();

	assert_non_null(l);
	loop_set_clock(l, fake_clock, NULL);
	pair(a, b);
	assert_int_equal(nudge_watch(*b, l, 100, count, windows), 0);
	return l;
}

/*
 * In a loop: a peer's datagram opens one window; while it is open, a
 * flood is not read (a stranger's least of all); when it has passed, what
 * waited is read once.  nudge_resume() ends a window early.
 */
static void
test_window(void **state)
{
	struct nudge *a, *b;
	struct nudge_stats st;
	int windows = 0;
	struct loop *l = watched(&a, &b, &windows);

	(void)state;
	assert_int_equal(nudge_watch(b, l, 100, count, &windows), -EINVAL);
	assert_int_equal(nudge_send(a, 1), 0);
	assert_true(readable(b, 2000));
	turn(l);
	assert_int_equal(windows, 1);
	/* the flood, while the window is open: not read */
	for (int i = 0; i < 500; i++)
		(void)nudge_send(a, 1);
	stranger_sends("127.0.0.2", b, 500);
	turn(l);
	nudge_get_stats(b, &st);
	assert_int_equal(windows, 1);
	assert_int_equal(st.reads, 1);
	/* the window passes: one read, one more window */
	fake_us += 100 * 1000;
	turn(l);
	nudge_get_stats(b, &st);
	assert_int_equal(windows, 2);
	assert_int_equal(st.reads, 1 + NUDGE_DRAIN_MAX);
	/* what the window announced came: read again at once */
	nudge_resume(b);
	turn(l);
	nudge_get_stats(b, &st);
	assert_int_equal(st.reads, 1 + 2 * NUDGE_DRAIN_MAX);
	nudge_resume(NULL);
	nudge_free(a);
	nudge_free(b);  /* off the loop, its timer too */
	loop_free(l);
}

/* Strangers alone open no window, and are read once per pause. */
static void
test_strangers_flood(void **state)
{
	struct nudge *a, *b;
	struct nudge_stats st;
	int windows = 0;
	struct loop *l = watched(&a, &b, &windows);

	(void)state;
	stranger_sends("127.0.0.2", b, 300);
	assert_true(readable(b, 2000));
	turn(l);
	nudge_resume(b);  /* no window of a peer's: the pause runs its course */
	turn(l);
	nudge_get_stats(b, &st);
	assert_int_equal(windows, 0);
	assert_int_equal(st.reads, NUDGE_DRAIN_MAX);
	assert_int_equal(st.dropped, NUDGE_DRAIN_MAX);
	fake_us += 100 * 1000;
	turn(l);
	nudge_get_stats(b, &st);
	assert_int_equal(st.reads, 2 * NUDGE_DRAIN_MAX);
	assert_int_equal(windows, 0);
	nudge_free(a);
	nudge_free(b);
	loop_free(l);
}

static void
test_addresses(void **state)
{
	static const char *const bad[] = {
		"", "127.0.0.1", "127.0.0.1:", ":80", "127.0.0.1:0", "127.0.0.1:65536",
		"127.0.0.1:80x", "host.example:80", "::1:80", "1.2.3.4.5:80",
		"127.0.0.1:-1", "300.1.1.1:80",
	};
	struct nudge *a;
	char self[64];

	(void)state;
	assert_int_equal(nudge_open(3, "localhost", &a), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (nudge_set(a, 1, bad[i]) != -EINVAL)
			fail_msg("accepted \"%s\"", bad[i]);
	assert_int_equal(nudge_set(a, 2, "10.0.0.7:4242"), 0);
	assert_int_equal(nudge_set(a, 3, "10.0.0.7:4242"), -EINVAL);
	assert_int_equal(nudge_set(a, -1, "10.0.0.7:4242"), -EINVAL);
	assert_int_equal(nudge_send(a, 3), -ENOENT);
	/* this node's own: a numeric IPv4 address and the socket's port */
	assert_int_equal(nudge_self(a, "localhost", self, sizeof(self)), 0);
	assert_int_equal(nudge_set(a, 0, self), 0);
	assert_int_equal(nudge_self(a, "localhost", self, 8), -ENOSPC);
	nudge_free(a);
	assert_int_equal(nudge_open(0, "localhost", &a), -EINVAL);
	assert_null(a);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bound_where_mpi_is),
		cmocka_unit_test(test_wakes),
		cmocka_unit_test(test_strangers_dropped),
		cmocka_unit_test(test_window),
		cmocka_unit_test(test_strangers_flood),
		cmocka_unit_test(test_addresses),
	};

	/* the loopback, as the test suite tells Open MPI (and so nudges) */
	if (setenv("OMPI_MCA_btl_tcp_if_include", "lo", 1) < 0)
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
