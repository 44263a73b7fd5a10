/*
 * test_nudge.c - wake-ups between agents: a datagram wakes the receiver's
 * descriptor, at most NUDGE_DRAIN_MAX are read per wake-up, addresses are
 * checked, and a rank without one is not nudged.
 */
#include "autoconf.h"

#include "../vigil_test.h"

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "comm/nudge.h"

/* Where ND's nudges arrive, on the loopback: "127.0.0.1:PORT". */
static void
loopback_of(const struct nudge *nd, char *buf, size_t len)
{
	char self[64];
	const char *colon;

	assert_int_equal(nudge_self(nd, "localhost", self, sizeof(self)), 0);
	colon = strrchr(self, ':');
	assert_non_null(colon);
	snprintf(buf, len, "127.0.0.1%s", colon);
}

static bool
readable(const struct nudge *nd, int ms)
{
	struct pollfd p = { .fd = nudge_fd(nd), .events = POLLIN };

	return poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

static void
test_wakes(void **state)
{
	struct nudge *a, *b;
	char where[64];

	(void)state;
	assert_int_equal(nudge_open(2, &a), 0);
	assert_int_equal(nudge_open(2, &b), 0);
	/* nobody told a where rank 1 listens */
	assert_int_equal(nudge_send(a, 1), -ENOENT);
	loopback_of(b, where, sizeof(where));
	assert_int_equal(nudge_set(a, 1, where), 0);
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

	/* forgotten: not nudged any more */
	assert_int_equal(nudge_set(a, 1, NULL), 0);
	assert_int_equal(nudge_send(a, 1), -ENOENT);
	assert_false(readable(b, 50));
	nudge_free(a);
	nudge_free(b);
	nudge_free(NULL);
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
	assert_int_equal(nudge_open(3, &a), 0);
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
	assert_int_equal(nudge_open(0, &a), -EINVAL);
	assert_null(a);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_wakes),
		cmocka_unit_test(test_addresses),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
