/*
 * test_pace.c - when a fast writer's pipe is read again: left alone while
 * data keeps coming, for about one read's worth, never past half the
 * pipe or PACE_MAX_US, and not at all for a pty, a first read, or a
 * stream that writes now and then.
 */
#include "autoconf.h"

#include "../vigil_test.h"

#include <stdint.h>

#include "launch/pace.h"

#define MIB (1024 * 1024)
#define TARGET (128 * 1024)

/* One round: BYTES read, then the stream found empty AT us. */
static long
round_at(struct pace *p, size_t bytes, uint64_t at)
{
	pace_got(p, bytes);
	return pace_empty(p, at);
}

static void
test_pty_never_waits(void **state)
{
	struct pace p;

	(void)state;
	pace_init(&p, 0, TARGET);
	assert_int_equal(round_at(&p, 100, 1000), 0);
	assert_int_equal(round_at(&p, 12000, 1100), 0);
	assert_int_equal(round_at(&p, 12000, 1200), 0);
}

static void
test_first_read_waits_not(void **state)
{
	struct pace p;

	(void)state;
	pace_init(&p, MIB, TARGET);
	/* nothing to measure a rate against yet */
	assert_int_equal(round_at(&p, 12000, 5000), 0);
}

/* 120 bytes a microsecond (a line-by-line writer): the longest wait. */
static void
test_fast_line_writer(void **state)
{
	struct pace p;

	(void)state;
	pace_init(&p, MIB, TARGET);
	assert_int_equal(round_at(&p, 240, 1000), 0);
	assert_int_equal(round_at(&p, 12000, 1100), PACE_MAX_US);
}

/* 1000 bytes a microsecond: a read's worth comes sooner than the longest wait. */
static void
test_wait_for_a_read(void **state)
{
	struct pace p;
	long w;

	(void)state;
	pace_init(&p, MIB, TARGET);
	(void)round_at(&p, 1, 1000);
	w = round_at(&p, 100000, 1100);
	assert_int_equal(w, TARGET / 1000);
}

/* So fast that a read's worth is there before a timer is worth it. */
static void
test_too_fast_to_wait(void **state)
{
	struct pace p;

	(void)state;
	pace_init(&p, MIB, TARGET);
	(void)round_at(&p, 1, 1000);
	assert_int_equal(round_at(&p, 500000, 1100), 0);
}

/* A small pipe: the wait stops at half of it, so the writer never waits. */
static void
test_half_the_pipe(void **state)
{
	struct pace p;
	long w;

	(void)state;
	pace_init(&p, 64 * 1024, TARGET);
	(void)round_at(&p, 1, 1000);
	w = round_at(&p, 12000, 1100);   /* 120 B/us: 32 KiB in 273 us */
	assert_int_equal(w, 32 * 1024 / 120);
	assert_true(w * 120 <= 32 * 1024);
}

/* Now and then: a wake-up per write is left as it is. */
static void
test_sparse_stream(void **state)
{
	struct pace p;

	(void)state;
	pace_init(&p, MIB, TARGET);
	(void)round_at(&p, 120, 1000);
	/* a line 10 ms later: not a stream to gather */
	assert_int_equal(round_at(&p, 120, 11000), 0);
	/* a line every 2 ms: a millisecond's wait would bring 60 bytes */
	assert_int_equal(round_at(&p, 120, 13000), 0);
	assert_int_equal(round_at(&p, 120, 15000), 0);
	/* an empty round (EOF, back-pressure) measures nothing */
	assert_int_equal(round_at(&p, 0, 15100), 0);
}

/*
 * A steady writer, round after round: the agent reads what came during
 * its wait (and the time it took to read it), and the waits stay where
 * they settled rather than swinging between waiting and not.
 */
static void
test_steady_state(void **state)
{
	static const double rates[] = { 5.0, 60.0, 120.0, 400.0 };  /* bytes per us */

	(void)state;
	for (size_t i = 0; i < sizeof(rates) / sizeof(rates[0]); i++) {
		struct pace p;
		uint64_t now = 1000;
		long w = 0, last = -1;

		pace_init(&p, MIB, TARGET);
		(void)round_at(&p, 1, now);
		for (int r = 0; r < 50; r++) {
			/* it waited W (or woke 20 us later for the next write), then read for 10 us */
			uint64_t took = (uint64_t)(w > 0 ? w : 20) + 10;

			now += took;
			w = round_at(&p, (size_t)(rates[i] * (double)took), now);
			if (r >= 5) {
				assert_true(w > 0);
				assert_true(last < 0 || (w >= last - last / 10 && w <= last + last / 10));
				last = w;
			}
			assert_true(w <= PACE_MAX_US);
			/* never more than half the pipe in one wait */
			assert_true(rates[i] * (double)w <= MIB / 2);
		}
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pty_never_waits),
		cmocka_unit_test(test_first_read_waits_not),
		cmocka_unit_test(test_fast_line_writer),
		cmocka_unit_test(test_wait_for_a_read),
		cmocka_unit_test(test_too_fast_to_wait),
		cmocka_unit_test(test_half_the_pipe),
		cmocka_unit_test(test_sparse_stream),
		cmocka_unit_test(test_steady_state),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
