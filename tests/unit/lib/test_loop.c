/*
 * test_loop.c - the event loop: descriptors on real pipes, timers on a
 * fake clock, the before_poll hook, changes made from callbacks, EINTR.
 */
#include "autoconf.h"

#include "../vigil_test.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "lib/loop.h"

struct fixture {
	struct loop *l;
	uint64_t now;   /* the fake clock, ms */
	uint64_t now_us; /* and the us within it */
	int a[2], b[2]; /* pipes: [0] read end, [1] write end */
	char order[64]; /* timer names, in the order they ran */
	size_t norder;
};

static uint64_t
fake_clock(void *arg)
{
	return ((struct fixture *)arg)->now * 1000 + ((struct fixture *)arg)->now_us;
}

static double
real_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int
setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));

	if (!fx)
		return -1;
	fx->a[0] = fx->a[1] = fx->b[0] = fx->b[1] = -1;
	fx->l = loop_new();
	if (!fx->l || pipe2(fx->a, O_CLOEXEC) < 0 || pipe2(fx->b, O_CLOEXEC) < 0)
		return -1;
	loop_set_clock(fx->l, fake_clock, fx);
	*state = fx;
	return 0;
}

static void
close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static int
teardown(void **state)
{
	struct fixture *fx = *state;

	/* Timers and descriptors still registered: loop_free releases them. */
	loop_free(fx->l);
	close_fd(&fx->a[0]);
	close_fd(&fx->a[1]);
	close_fd(&fx->b[0]);
	close_fd(&fx->b[1]);
	free(fx);
	return 0;
}

static void
put_byte(int fd)
{
	assert_int_equal(write(fd, "x", 1), 1);
}

/* ---- descriptors ---- */

struct fd_probe {
	struct fixture *fx;
	int calls;
	int fd;          /* as passed on the last call */
	short revents;   /* as passed on the last call */
	bool drain;      /* read one byte on POLLIN */
	int del_fd;      /* >= 0: delete this descriptor when called */
	bool stop;       /* call loop_stop() */
};

static void
on_fd(struct loop *l, int fd, short revents, void *arg)
{
	struct fd_probe *p = arg;
	char c;

	p->calls++;
	p->fd = fd;
	p->revents = revents;
	if (p->drain && (revents & POLLIN))
		assert_int_equal(read(fd, &c, 1), 1);
	if (p->del_fd >= 0)
		assert_int_equal(loop_del_fd(l, p->del_fd), 0);
	if (p->stop)
		loop_stop(l);
}

static void
test_fd_readable(void **state)
{
	struct fixture *fx = *state;
	struct fd_probe pa = { .fx = fx, .del_fd = -1, .drain = true };
	struct fd_probe pb = { .fx = fx, .del_fd = -1, .drain = true };

	assert_int_equal(loop_add_fd(fx->l, fx->a[0], POLLIN, on_fd, &pa), 0);
	assert_int_equal(loop_add_fd(fx->l, fx->b[0], POLLIN, on_fd, &pb), 0);
	assert_int_equal(loop_run_once(fx->l, 0), 0);
	assert_int_equal(pa.calls + pb.calls, 0);

	put_byte(fx->b[1]);
	assert_int_equal(loop_run_once(fx->l, 5000), 1);
	assert_int_equal(pa.calls, 0);
	assert_int_equal(pb.calls, 1);
	assert_int_equal(pb.fd, fx->b[0]);
	assert_int_equal(pb.revents, POLLIN);

	/* Drained: quiet again. */
	assert_int_equal(loop_run_once(fx->l, 0), 0);
	assert_int_equal(pb.calls, 1);

	put_byte(fx->a[1]);
	put_byte(fx->b[1]);
	assert_int_equal(loop_run_once(fx->l, 5000), 2);
	assert_int_equal(pa.calls, 1);
	assert_int_equal(pa.fd, fx->a[0]);
	assert_int_equal(pb.calls, 2);
}

static void
test_fd_hangup(void **state)
{
	struct fixture *fx = *state;
	struct fd_probe p = { .fx = fx, .del_fd = -1 };

	assert_int_equal(loop_add_fd(fx->l, fx->a[0], POLLIN, on_fd, &p), 0);
	close_fd(&fx->a[1]);
	assert_int_equal(loop_run_once(fx->l, 5000), 1);
	assert_int_equal(p.calls, 1);
	assert_int_equal(p.fd, fx->a[0]);
	assert_true(p.revents & POLLHUP);
}

static void
test_fd_writable(void **state)
{
	struct fixture *fx = *state;
	struct fd_probe p = { .fx = fx, .del_fd = -1 };

	assert_int_equal(loop_add_fd(fx->l, fx->a[1], POLLOUT, on_fd, &p), 0);
	assert_int_equal(loop_run_once(fx->l, 5000), 1);
	assert_int_equal(p.fd, fx->a[1]);
	assert_int_equal(p.revents, POLLOUT);
}

static void
test_mod_fd(void **state)
{
	struct fixture *fx = *state;
	struct fd_probe p = { .fx = fx, .del_fd = -1 };
	double t0;

	assert_int_equal(loop_add_fd(fx->l, fx->a[0], POLLIN, on_fd, &p), 0);
	put_byte(fx->a[1]);
	assert_int_equal(loop_run_once(fx->l, 5000), 1);
	assert_int_equal(p.calls, 1);

	/* Unwatched: neither the pending byte nor the hangup is reported,
	 * nor does either cut the wait short. */
	assert_int_equal(loop_mod_fd(fx->l, fx->a[0], 0), 0);
	assert_int_equal(loop_run_once(fx->l, 0), 0);
	close_fd(&fx->a[1]);
	t0 = real_ms();
	assert_int_equal(loop_run_once(fx->l, 50), 0);
	assert_true(real_ms() - t0 >= 30);
	assert_int_equal(p.calls, 1);

	assert_int_equal(loop_mod_fd(fx->l, fx->a[0], POLLIN), 0);
	assert_int_equal(loop_run_once(fx->l, 5000), 1);
	assert_int_equal(p.calls, 2);
	assert_true(p.revents & POLLIN);
}

static void
test_fd_errors(void **state)
{
	struct fixture *fx = *state;
	struct fd_probe p = { .fx = fx, .del_fd = -1 };

	assert_int_equal(loop_mod_fd(fx->l, fx->a[0], POLLIN), -ENOENT);
	assert_int_equal(loop_del_fd(fx->l, fx->a[0]), -ENOENT);
	assert_int_equal(loop_add_fd(fx->l, -1, POLLIN, on_fd, &p), -EBADF);
	assert_int_equal(loop_add_fd(fx->l, fx->a[0], POLLIN, on_fd, &p), 0);
	assert_int_equal(loop_add_fd(fx->l, fx->a[0], POLLOUT, on_fd, &p), -EEXIST);
	assert_int_equal(loop_del_fd(fx->l, fx->a[0]), 0);
	assert_int_equal(loop_del_fd(fx->l, fx->a[0]), -ENOENT);
	assert_int_equal(loop_mod_fd(fx->l, fx->a[0], POLLIN), -ENOENT);
	/* Deleted, it can come back. */
	assert_int_equal(loop_add_fd(fx->l, fx->a[0], POLLIN, on_fd, &p), 0);
	put_byte(fx->a[1]);
	assert_int_equal(loop_run_once(fx->l, 5000), 1);
	assert_int_equal(p.calls, 1);
}

static void
test_many_fds(void **state)
{
	struct fixture *fx = *state;
	enum { N = 40 };
	int fds[N];
	struct fd_probe p = { .fx = fx, .del_fd = -1 };

	/* More than the arrays start with: they grow, and the entries added
	 * first still dispatch. */
	for (int i = 0; i < N; i++) {
		fds[i] = dup(fx->a[0]);
		assert_true(fds[i] >= 0);
		assert_int_equal(loop_add_fd(fx->l, fds[i], POLLIN, on_fd, &p), 0);
	}
	put_byte(fx->a[1]);
	assert_int_equal(loop_run_once(fx->l, 5000), N);
	assert_int_equal(p.calls, N);
	for (int i = 0; i < N; i += 2)
		assert_int_equal(loop_del_fd(fx->l, fds[i]), 0);
	assert_int_equal(loop_run_once(fx->l, 5000), N / 2);
	assert_int_equal(p.calls, N + N / 2);
	for (int i = 0; i < N; i++)
		close(fds[i]);
}

/* A deletes B while both are ready: B must not be called. */
static void
test_del_fd_during_dispatch(void **state)
{
	struct fixture *fx = *state;
	struct fd_probe pb = { .fx = fx, .del_fd = -1 };
	struct fd_probe pa = { .fx = fx, .del_fd = fx->b[0] };

	assert_int_equal(loop_add_fd(fx->l, fx->a[0], POLLIN, on_fd, &pa), 0);
	assert_int_equal(loop_add_fd(fx->l, fx->b[0], POLLIN, on_fd, &pb), 0);
	put_byte(fx->a[1]);
	put_byte(fx->b[1]);
	assert_int_equal(loop_run_once(fx->l, 5000), 1);
	assert_int_equal(pa.calls, 1);
	assert_int_equal(pb.calls, 0);
	assert_int_equal(loop_del_fd(fx->l, fx->b[0]), -ENOENT);
}

/* A callback narrows another's events in the turn both are ready: the
 * other is not called for what it no longer watches. */
struct narrow {
	int calls;
	int other;
};

static void
on_fd_narrow(struct loop *l, int fd, short revents, void *arg)
{
	struct narrow *n = arg;

	(void)fd;
	(void)revents;
	n->calls++;
	assert_int_equal(loop_mod_fd(l, n->other, POLLOUT), 0);
}

static void
test_mod_fd_during_dispatch(void **state)
{
	struct fixture *fx = *state;
	struct narrow n = { .other = fx->b[0] };
	struct fd_probe pb = { .fx = fx, .del_fd = -1 };

	assert_int_equal(loop_add_fd(fx->l, fx->a[0], POLLIN, on_fd_narrow, &n), 0);
	assert_int_equal(loop_add_fd(fx->l, fx->b[0], POLLIN, on_fd, &pb), 0);
	put_byte(fx->a[1]);
	put_byte(fx->b[1]);
	assert_int_equal(loop_run_once(fx->l, 5000), 1);
	assert_int_equal(n.calls, 1);
	assert_int_equal(pb.calls, 0);
	assert_int_equal(loop_mod_fd(fx->l, fx->b[0], POLLIN), 0);
	assert_int_equal(loop_del_fd(fx->l, fx->a[0]), 0);
	assert_int_equal(loop_run_once(fx->l, 5000), 1);
	assert_int_equal(pb.calls, 1);
}

/*
 * A descriptor added by a callback lands in a slot that an earlier turn
 * polled for another, ready, descriptor since deleted: it must not be
 * called with what that slot reported then.
 */
struct adder {
	int calls;
	int fd;
	struct fd_probe *p;
};

static void
on_fd_adder(struct loop *l, int fd, short revents, void *arg)
{
	struct adder *x = arg;

	(void)fd;
	(void)revents;
	if (x->calls++ == 1)
		assert_int_equal(loop_add_fd(l, x->fd, POLLIN, on_fd, x->p), 0);
}

static void
test_fd_added_during_dispatch(void **state)
{
	struct fixture *fx = *state;
	struct fd_probe third = { .fx = fx, .del_fd = -1 };
	struct fd_probe added = { .fx = fx, .del_fd = -1 };
	struct fd_probe pb = { .fx = fx, .del_fd = -1 };
	struct adder x = { .fd = fx->b[1], .p = &added };
	int dupfd = dup(fx->a[0]);

	assert_true(dupfd >= 0);
	assert_int_equal(loop_add_fd(fx->l, fx->a[0], POLLIN, on_fd_adder, &x), 0);
	assert_int_equal(loop_add_fd(fx->l, fx->b[0], POLLIN, on_fd, &pb), 0);
	assert_int_equal(loop_add_fd(fx->l, dupfd, POLLIN, on_fd, &third), 0);
	put_byte(fx->a[1]);
	assert_int_equal(loop_run_once(fx->l, 5000), 2);
	assert_int_equal(third.calls, 1);
	assert_int_equal(loop_del_fd(fx->l, dupfd), 0);
	close(dupfd);

	/* The write end of B never polls readable. */
	assert_int_equal(loop_run_once(fx->l, 5000), 1);
	assert_int_equal(x.calls, 2);
	assert_int_equal(added.calls, 0);
	assert_int_equal(loop_run_once(fx->l, 5000), 1);
	assert_int_equal(added.calls, 0);
	assert_int_equal(pb.calls, 0);
}

/* A callback deleting itself: no further calls, and the entry is gone. */
static void
test_del_self_fd(void **state)
{
	struct fixture *fx = *state;
	struct fd_probe p = { .fx = fx, .del_fd = fx->a[0] };

	assert_int_equal(loop_add_fd(fx->l, fx->a[0], POLLIN, on_fd, &p), 0);
	put_byte(fx->a[1]);
	assert_int_equal(loop_run_once(fx->l, 5000), 1);
	assert_int_equal(loop_run_once(fx->l, 0), 0);
	assert_int_equal(p.calls, 1);
	assert_int_equal(loop_del_fd(fx->l, fx->a[0]), -ENOENT);
}

/*
 * The descriptor number of B is closed and reused for another pipe (C)
 * by A's callback, in the turn where B was ready.  The new registration
 * must not inherit B's revents; it is polled from the next turn on.
 */
struct reuse {
	struct fixture *fx;
	int calls;
	int c[2];
	struct fd_probe *newp;
};

static void
on_fd_reuse(struct loop *l, int fd, short revents, void *arg)
{
	struct reuse *r = arg;
	int num = r->fx->b[0];

	(void)fd;
	(void)revents;
	r->calls++;
	assert_int_equal(loop_del_fd(l, num), 0);
	assert_int_equal(pipe2(r->c, O_CLOEXEC), 0);
	assert_int_equal(dup2(r->c[0], num), num);  /* closes B's read end */
	close(r->c[0]);
	r->c[0] = num;
	assert_int_equal(loop_add_fd(l, num, POLLIN, on_fd, r->newp), 0);
	assert_int_equal(loop_del_fd(l, r->fx->a[0]), 0);
}

static void
test_fd_reuse_same_turn(void **state)
{
	struct fixture *fx = *state;
	struct fd_probe old = { .fx = fx, .del_fd = -1 };
	struct fd_probe newp = { .fx = fx, .del_fd = -1, .drain = true };
	struct reuse r = { .fx = fx, .newp = &newp };

	assert_int_equal(loop_add_fd(fx->l, fx->a[0], POLLIN, on_fd_reuse, &r), 0);
	assert_int_equal(loop_add_fd(fx->l, fx->b[0], POLLIN, on_fd, &old), 0);
	put_byte(fx->a[1]);
	put_byte(fx->b[1]);
	assert_int_equal(loop_run_once(fx->l, 5000), 1);
	assert_int_equal(r.calls, 1);
	assert_int_equal(old.calls, 0);
	assert_int_equal(newp.calls, 0);
	assert_int_equal(loop_add_fd(fx->l, fx->b[0], POLLIN, on_fd, &old), -EEXIST);

	/* C is empty: nothing to report until it gets a byte. */
	assert_int_equal(loop_run_once(fx->l, 0), 0);
	put_byte(r.c[1]);
	assert_int_equal(loop_run_once(fx->l, 5000), 1);
	assert_int_equal(newp.calls, 1);
	assert_int_equal(newp.fd, fx->b[0]);
	assert_int_equal(old.calls, 0);
	close(r.c[1]);
}

/* ---- timers ---- */

struct tprobe {
	struct fixture *fx;
	char name;
	int calls;
	uint64_t last;          /* loop_now() at the last call */
	long ret;               /* interval to return */
	int nomore_after;       /* > 0: LOOP_NOMORE on that call */
	struct loop_timer *self;
	bool del_self;
	struct loop_timer **del; /* a timer to delete when called */
	struct tprobe *add;     /* a timer to add (first_ms = add->ret) when called */
};

static long
on_timer(struct loop *l, void *arg)
{
	struct tprobe *p = arg;
	struct fixture *fx = p->fx;

	p->calls++;
	p->last = loop_now(l);
	if (fx->norder < sizeof(fx->order) - 1)
		fx->order[fx->norder++] = p->name;
	if (p->del) {
		loop_del_timer(l, *p->del);
		*p->del = NULL;
	}
	if (p->add) {
		p->add->self = loop_add_timer(l, p->add->ret, on_timer, p->add);
		assert_non_null(p->add->self);
		p->add = NULL;
	}
	if (p->del_self)
		loop_del_timer(l, p->self);
	if (p->nomore_after > 0 && p->calls >= p->nomore_after)
		return LOOP_NOMORE;
	return p->ret;
}

static struct loop_timer *
add_probe(struct fixture *fx, struct tprobe *p, long first_ms)
{
	p->fx = fx;
	p->self = loop_add_timer(fx->l, first_ms, on_timer, p);
	assert_non_null(p->self);
	return p->self;
}

static void
test_timer_order(void **state)
{
	struct fixture *fx = *state;
	struct tprobe a = { .name = 'a', .nomore_after = 1 };
	struct tprobe b = { .name = 'b', .nomore_after = 1 };
	struct tprobe c = { .name = 'c', .nomore_after = 1 };
	struct tprobe d = { .name = 'd', .nomore_after = 1 };
	struct tprobe e = { .name = 'e', .nomore_after = 1 };

	fx->now = 1000;
	add_probe(fx, &a, 30);
	add_probe(fx, &b, 10);
	add_probe(fx, &c, 20);
	add_probe(fx, &d, 10);  /* due with b: runs after it, created later */
	add_probe(fx, &e, 500);

	fx->now = 1009;
	assert_int_equal(loop_run_once(fx->l, 0), 0);
	fx->now = 1100;
	assert_int_equal(loop_run_once(fx->l, 0), 4);
	assert_string_equal(fx->order, "bdca");
	assert_int_equal(a.last, 1100);
	fx->now = 1499;
	assert_int_equal(loop_run_once(fx->l, 0), 0);
	fx->now = 1500;
	assert_int_equal(loop_run_once(fx->l, 0), 1);
	assert_string_equal(fx->order, "bdcae");
}

static void
test_timer_interval(void **state)
{
	struct fixture *fx = *state;
	struct tprobe t = { .name = 't', .ret = 25 };

	add_probe(fx, &t, 10);
	fx->now = 9;
	assert_int_equal(loop_run_once(fx->l, 0), 0);
	fx->now = 10;
	assert_int_equal(loop_run_once(fx->l, 0), 1);
	assert_int_equal(t.calls, 1);
	fx->now = 34;
	assert_int_equal(loop_run_once(fx->l, 0), 0);
	fx->now = 35;
	assert_int_equal(loop_run_once(fx->l, 0), 1);
	assert_int_equal(t.calls, 2);

	/* Held up for many intervals: one call, then re-armed from now. */
	fx->now = 1000;
	assert_int_equal(loop_run_once(fx->l, 0), 1);
	assert_int_equal(loop_run_once(fx->l, 0), 0);
	assert_int_equal(t.calls, 3);
	fx->now = 1024;
	assert_int_equal(loop_run_once(fx->l, 0), 0);
	fx->now = 1025;
	assert_int_equal(loop_run_once(fx->l, 0), 1);
	assert_int_equal(t.calls, 4);

	/* Interval 0: once a turn, never twice in one. */
	t.ret = 0;
	fx->now = 1050;
	assert_int_equal(loop_run_once(fx->l, 0), 1);
	assert_int_equal(loop_run_once(fx->l, 0), 1);
	assert_int_equal(t.calls, 6);
}

/* A first delay in us: due to the microsecond, then its ms intervals. */
static void
test_timer_us(void **state)
{
	struct fixture *fx = *state;
	struct tprobe t = { .name = 'u', .ret = 2, .fx = fx };

	fx->now = 100;
	t.self = loop_add_timer_us(fx->l, 250, on_timer, &t);
	assert_non_null(t.self);
	fx->now_us = 249;
	assert_int_equal(loop_run_once(fx->l, 0), 0);
	fx->now_us = 250;
	assert_int_equal(loop_run_once(fx->l, 0), 1);
	/* the next in 2 ms from the turn's clock: at 102.250 ms */
	fx->now = 102;
	fx->now_us = 249;
	assert_int_equal(loop_run_once(fx->l, 0), 0);
	fx->now_us = 250;
	assert_int_equal(loop_run_once(fx->l, 0), 1);
	assert_int_equal(t.calls, 2);
}

/*
 * The sleep itself is finer than a millisecond: a timer 300 us ahead on
 * the real clock is waited for in a turn or two, each asleep, not spun
 * for in turns that a timeout in whole milliseconds (0 ms) would not
 * sleep in at all, and not slept for until the turn's limit.
 */
static void
test_timer_us_sleeps_finely(void **state)
{
	struct fixture *fx = *state;
	struct tprobe t = { .name = 'r', .nomore_after = 1, .fx = fx };
	int turns = 0;
	double t0, ms;

	loop_set_clock(fx->l, NULL, NULL);
	t.self = loop_add_timer_us(fx->l, 300, on_timer, &t);
	assert_non_null(t.self);
	t0 = real_ms();
	while (t.calls == 0 && turns < 1000) {
		assert_true(loop_run_once(fx->l, 5000) >= 0);
		turns++;
	}
	ms = real_ms() - t0;
	assert_int_equal(t.calls, 1);
	assert_true(turns <= 3);
	assert_true(ms >= 0.3);
	assert_true(ms < 1000);
}

static void
test_timer_nomore(void **state)
{
	struct fixture *fx = *state;
	struct tprobe t = { .name = 't', .ret = 5, .nomore_after = 3 };
	struct tprobe neg = { .name = 'n', .ret = -7 };

	fx->now = 1000;
	add_probe(fx, &t, 5);
	add_probe(fx, &neg, 5);
	for (int i = 1; i <= 10; i++) {
		fx->now = 1000 + 5 * (uint64_t)i;
		assert_int_equal(loop_run_once(fx->l, 0), i == 1 ? 2 : i <= 3 ? 1 : 0);
	}
	assert_int_equal(t.calls, 3);
	assert_int_equal(neg.calls, 1);  /* any negative interval ends it */
}

static void
test_timer_del_other(void **state)
{
	struct fixture *fx = *state;
	struct loop_timer *victim;
	struct tprobe a = { .name = 'a', .ret = 10 };
	struct tprobe b = { .name = 'b', .ret = 10 };
	struct tprobe c = { .name = 'c', .ret = 10 };

	add_probe(fx, &a, 10);
	victim = add_probe(fx, &b, 10);  /* due with a, after it */
	add_probe(fx, &c, 10);
	a.del = &victim;
	fx->now = 10;
	assert_int_equal(loop_run_once(fx->l, 0), 2);
	assert_null(victim);
	fx->now = 100;
	assert_int_equal(loop_run_once(fx->l, 0), 2);
	assert_int_equal(a.calls, 2);
	assert_int_equal(b.calls, 0);
	assert_int_equal(c.calls, 2);

	/* Deleted between turns, not yet due. */
	loop_del_timer(fx->l, c.self);
	loop_del_timer(fx->l, NULL);
	fx->now = 200;
	assert_int_equal(loop_run_once(fx->l, 0), 1);
	assert_int_equal(c.calls, 2);
}

static void
test_timer_del_self(void **state)
{
	struct fixture *fx = *state;
	struct tprobe t = { .name = 't', .ret = 5, .del_self = true };
	struct tprobe u = { .name = 'u', .ret = 5 };

	add_probe(fx, &t, 0);
	add_probe(fx, &u, 0);
	assert_int_equal(loop_run_once(fx->l, 0), 2);
	for (int i = 1; i <= 3; i++) {
		fx->now = 5 * (uint64_t)i;
		assert_int_equal(loop_run_once(fx->l, 0), 1);
	}
	assert_int_equal(t.calls, 1);
	assert_int_equal(u.calls, 4);
}

static void
test_timer_add_during_dispatch(void **state)
{
	struct fixture *fx = *state;
	struct tprobe added = { .name = 'n', .ret = 0, .nomore_after = 2 };
	struct tprobe later = { .name = 'l', .ret = 20, .nomore_after = 1 };
	struct tprobe t = { .name = 't', .nomore_after = 1, .add = &added };
	struct tprobe u = { .name = 'u', .nomore_after = 1, .add = &later };

	added.fx = later.fx = fx;
	add_probe(fx, &t, 10);
	add_probe(fx, &u, 10);
	fx->now = 10;
	/* Due at once, but added during the turn: first runs the next. */
	assert_int_equal(loop_run_once(fx->l, 0), 2);
	assert_int_equal(added.calls, 0);
	assert_int_equal(loop_run_once(fx->l, 0), 1);
	assert_int_equal(added.calls, 1);
	assert_int_equal(added.last, 10);
	assert_int_equal(loop_run_once(fx->l, 0), 1);
	assert_int_equal(added.calls, 2);
	/* Its first interval counts from the call that added it. */
	fx->now = 29;
	assert_int_equal(loop_run_once(fx->l, 0), 0);
	fx->now = 30;
	assert_int_equal(loop_run_once(fx->l, 0), 1);
	assert_int_equal(later.calls, 1);
	assert_string_equal(fx->order, "tunnl");
}

/* A descriptor callback adds a timer; the same turn's timers do not run it. */
struct add_from_fd {
	struct tprobe *t;
	int calls;
};

static void
on_fd_add_timer(struct loop *l, int fd, short revents, void *arg)
{
	struct add_from_fd *x = arg;
	char c;

	(void)revents;
	x->calls++;
	assert_int_equal(read(fd, &c, 1), 1);
	x->t->self = loop_add_timer(l, 0, on_timer, x->t);
	assert_non_null(x->t->self);
}

static void
test_fd_and_timer_same_turn(void **state)
{
	struct fixture *fx = *state;
	struct tprobe added = { .fx = fx, .name = 'n', .nomore_after = 1 };
	struct tprobe due = { .name = 'd', .nomore_after = 1 };
	struct add_from_fd x = { .t = &added };

	add_probe(fx, &due, 0);
	assert_int_equal(loop_add_fd(fx->l, fx->a[0], POLLIN, on_fd_add_timer, &x), 0);
	put_byte(fx->a[1]);
	assert_int_equal(loop_run_once(fx->l, 5000), 2);
	assert_int_equal(x.calls, 1);
	assert_int_equal(due.calls, 1);
	assert_int_equal(added.calls, 0);
	assert_int_equal(loop_run_once(fx->l, 0), 1);
	assert_int_equal(added.calls, 1);
}

/* ---- the before_poll hook and poll timeouts ---- */

/* A descriptor callback for a descriptor that must never be ready. */
static void
count_fd_never(struct loop *l, int fd, short revents, void *arg)
{
	(void)l;
	(void)fd;
	(void)revents;
	(void)arg;
	fail_msg("a descriptor that was never written to was dispatched");
}

struct hook {
	int calls;
	long limit;
	bool stop_now;  /* loop_stop() from the hook */
	int stop_after_signals;
	volatile sig_atomic_t *signals;
};

static long
on_hook(struct loop *l, void *arg)
{
	struct hook *h = arg;

	h->calls++;
	if (h->stop_now || (h->signals && *h->signals >= h->stop_after_signals))
		loop_stop(l);
	return h->limit;
}

/* A poll with nothing to wake it: only a timeout ends it.  Bounds are wide:
 * the point is which limit applied, not how precisely. */
static double
timed_turn(struct loop *l, long max_wait_ms, int want_rc)
{
	double t0 = real_ms();

	assert_int_equal(loop_run_once(l, max_wait_ms), want_rc);
	return real_ms() - t0;
}

static void
test_hook_caps_timeout(void **state)
{
	struct fixture *fx = *state;
	struct hook h = { .limit = 20 };
	double ms;

	loop_set_before_poll(fx->l, on_hook, &h);
	ms = timed_turn(fx->l, 4000, 0);
	assert_int_equal(h.calls, 1);
	assert_true(ms >= 15);
	assert_true(ms < 2000);

	/* No limit of its own: max_wait_ms applies. */
	h.limit = -1;
	ms = timed_turn(fx->l, 20, 0);
	assert_int_equal(h.calls, 2);
	assert_true(ms >= 15);
	assert_true(ms < 2000);

	/* The hook's limit also caps the wait for a distant timer. */
	h.limit = 20;
	assert_non_null(loop_add_timer(fx->l, 3600 * 1000, on_timer, NULL));
	ms = timed_turn(fx->l, -1, 0);
	assert_true(ms < 2000);
	assert_int_equal(h.calls, 3);

	loop_set_before_poll(fx->l, NULL, NULL);
	(void)timed_turn(fx->l, 20, 0);
	assert_int_equal(h.calls, 3);
}

static void
test_timer_caps_timeout(void **state)
{
	struct fixture *fx = *state;
	struct hook h = { .limit = 60000 };
	struct tprobe t = { .name = 't', .nomore_after = 1 };
	double ms;

	/* Due in 20 ms on the fake clock, which does not move: poll waits
	 * about 20 ms of real time, then the timer is still not due. */
	loop_set_before_poll(fx->l, on_hook, &h);
	add_probe(fx, &t, 20);
	ms = timed_turn(fx->l, 60000, 0);
	assert_true(ms >= 15);
	assert_true(ms < 2000);
	assert_int_equal(t.calls, 0);
	fx->now = 20;
	ms = timed_turn(fx->l, 60000, 1);
	assert_true(ms < 2000);
	assert_int_equal(t.calls, 1);
}

static void
test_real_clock(void **state)
{
	struct fixture *fx = *state;
	struct tprobe t = { .name = 't', .nomore_after = 1 };
	uint64_t before, after;
	struct timespec ts;

	loop_set_clock(fx->l, NULL, NULL);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	before = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
	add_probe(fx, &t, 20);
	assert_true(loop_now(fx->l) >= before);
	/* A real timer ends the wait on its own: -1 would otherwise block. */
	assert_int_equal(loop_run_once(fx->l, -1), 1);
	after = loop_now(fx->l);
	assert_int_equal(t.calls, 1);
	assert_true(after - before >= 20);
	assert_true(t.last >= before + 20);
}

/* ---- stopping ---- */

static void
test_stop_from_fd_callback(void **state)
{
	struct fixture *fx = *state;
	struct hook h = { .limit = -1 };
	struct fd_probe pa = { .fx = fx, .del_fd = -1, .drain = true, .stop = true };
	struct fd_probe pb = { .fx = fx, .del_fd = -1, .drain = true };
	struct tprobe t = { .name = 't', .nomore_after = 1 };

	loop_set_before_poll(fx->l, on_hook, &h);
	assert_int_equal(loop_add_fd(fx->l, fx->a[0], POLLIN, on_fd, &pa), 0);
	assert_int_equal(loop_add_fd(fx->l, fx->b[0], POLLIN, on_fd, &pb), 0);
	add_probe(fx, &t, 0);
	put_byte(fx->a[1]);
	put_byte(fx->b[1]);
	assert_false(loop_stopped(fx->l));
	assert_int_equal(loop_run(fx->l), 0);
	assert_true(loop_stopped(fx->l));
	/* The turn that stopped finished its dispatch, and there was one. */
	assert_int_equal(h.calls, 1);
	assert_int_equal(pa.calls, 1);
	assert_int_equal(pb.calls, 1);
	assert_int_equal(t.calls, 1);
}

static long
stop_timer(struct loop *l, void *arg)
{
	int *calls = arg;

	++*calls;
	loop_stop(l);
	return 10;
}

static void
test_stop_from_timer(void **state)
{
	struct fixture *fx = *state;
	struct hook h = { .limit = -1 };
	int calls = 0;

	loop_set_before_poll(fx->l, on_hook, &h);
	assert_non_null(loop_add_timer(fx->l, 0, stop_timer, &calls));
	assert_int_equal(loop_run(fx->l), 0);
	assert_int_equal(calls, 1);
	assert_int_equal(h.calls, 1);

	/* A stopped loop runs again: loop_run() clears the stop. */
	fx->now = 10;
	assert_int_equal(loop_run(fx->l), 0);
	assert_int_equal(calls, 2);
	assert_int_equal(h.calls, 2);

	/* Stopped from the hook, before the poll: that turn still completes. */
	h.stop_now = true;
	fx->now = 15;
	assert_int_equal(loop_run(fx->l), 0);
	assert_int_equal(h.calls, 3);
	assert_int_equal(calls, 2);
}

static long
nested_timer(struct loop *l, void *arg)
{
	int *rc = arg;

	*rc = loop_run_once(l, 0);
	return LOOP_NOMORE;
}

static void
test_no_nested_turns(void **state)
{
	struct fixture *fx = *state;
	int rc = 0;

	assert_non_null(loop_add_timer(fx->l, 0, nested_timer, &rc));
	assert_int_equal(loop_run_once(fx->l, 0), 1);
	assert_int_equal(rc, -EBUSY);
}

/* ---- EINTR ---- */

static volatile sig_atomic_t alarms;

static void
on_alarm(int sig)
{
	(void)sig;
	alarms++;
}

/*
 * SIGALRM every 10 ms from an interval timer, caught by a handler without
 * SA_RESTART, so poll() fails with EINTR.  Repeating, so a signal that
 * lands before poll() starts is followed by one that lands inside it.
 */
static int
setup_alarm(void **state)
{
	struct sigaction sa;
	struct itimerval it = { { 0, 10000 }, { 0, 10000 } };

	if (setup(state) < 0)
		return -1;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = 0;
	alarms = 0;
	if (sigaction(SIGALRM, &sa, NULL) < 0)
		return -1;
	return setitimer(ITIMER_REAL, &it, NULL);
}

static int
teardown_alarm(void **state)
{
	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	struct sigaction sa;

	/* The timer stops first: the default action for SIGALRM terminates. */
	setitimer(ITIMER_REAL, &off, NULL);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	return teardown(state);
}

static void
test_eintr_once(void **state)
{
	struct fixture *fx = *state;
	struct fd_probe p = { .fx = fx, .del_fd = -1 };
	double ms;

	/* Registered and never readable: only a signal ends the poll early. */
	assert_int_equal(loop_add_fd(fx->l, fx->a[0], POLLIN, on_fd, &p), 0);
	ms = timed_turn(fx->l, 5000, 0);
	assert_true(ms < 4000);
	assert_true(alarms > 0);
	assert_int_equal(p.calls, 0);
}

/* A clock that moves a second with each signal. */
static uint64_t
alarm_clock(void *arg)
{
	(void)arg;
	return (uint64_t)alarms * 1000000;  /* us */
}

static void
test_eintr_runs_due_timers(void **state)
{
	struct fixture *fx = *state;
	struct fd_probe p = { .fx = fx, .del_fd = -1 };
	struct tprobe t = { .name = 't', .nomore_after = 1 };
	double ms;

	/* Due half a second ahead on a clock that only signals move: the
	 * signal that interrupts poll() also makes the timer due, and that
	 * turn runs it, long before the half second of real time is up. */
	loop_set_clock(fx->l, alarm_clock, NULL);
	assert_int_equal(loop_add_fd(fx->l, fx->a[0], POLLIN, on_fd, &p), 0);
	add_probe(fx, &t, 500);
	ms = timed_turn(fx->l, 5000, 1);
	assert_true(ms < 400);
	assert_int_equal(t.calls, 1);
	assert_int_equal(p.calls, 0);
}

static void
test_eintr_keeps_running(void **state)
{
	struct fixture *fx = *state;
	struct hook h = { .limit = -1, .signals = &alarms, .stop_after_signals = 3 };

	/* Nothing registered and no limit: each turn waits for a signal.
	 * loop_run() must go on through EINTR until the hook stops it. */
	loop_set_before_poll(fx->l, on_hook, &h);
	assert_int_equal(loop_run(fx->l), 0);
	assert_true(alarms >= 3);
	assert_true(h.calls >= 3);
}

/*
 * Stopped from the hook with nothing that would end the poll (no timer, a
 * descriptor that never becomes ready): the loop must not poll at all.
 * The job's end is decided in the hook (MPI messages), so this is the
 * agent's normal way out.  alarm() turns a hang into a failure.
 */
static void
test_stop_from_hook_skips_poll(void **state)
{
	struct loop *l = loop_new();
	struct hook h = { .limit = -1, .stop_now = true };
	int fds[2];

	(void)state;
	assert_non_null(l);
	assert_int_equal(pipe(fds), 0);
	assert_int_equal(loop_add_fd(l, fds[0], POLLIN, count_fd_never, NULL), 0);
	loop_set_before_poll(l, on_hook, &h);
	alarm(5);
	assert_int_equal(loop_run(l), 0);
	alarm(0);
	assert_int_equal(h.calls, 1);
	loop_del_fd(l, fds[0]);
	loop_free(l);
	close(fds[0]);
	close(fds[1]);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_fd_readable, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fd_hangup, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fd_writable, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mod_fd, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fd_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_many_fds, setup, teardown),
		cmocka_unit_test_setup_teardown(test_del_fd_during_dispatch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_del_self_fd, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mod_fd_during_dispatch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fd_added_during_dispatch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fd_reuse_same_turn, setup, teardown),
		cmocka_unit_test_setup_teardown(test_timer_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_timer_interval, setup, teardown),
		cmocka_unit_test_setup_teardown(test_timer_us, setup, teardown),
		cmocka_unit_test_setup_teardown(test_timer_us_sleeps_finely, setup, teardown),
		cmocka_unit_test_setup_teardown(test_timer_nomore, setup, teardown),
		cmocka_unit_test_setup_teardown(test_timer_del_other, setup, teardown),
		cmocka_unit_test_setup_teardown(test_timer_del_self, setup, teardown),
		cmocka_unit_test_setup_teardown(test_timer_add_during_dispatch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fd_and_timer_same_turn, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hook_caps_timeout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_timer_caps_timeout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_real_clock, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stop_from_fd_callback, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stop_from_timer, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_nested_turns, setup, teardown),
		cmocka_unit_test(test_stop_from_hook_skips_poll),
		cmocka_unit_test_setup_teardown(test_eintr_once, setup_alarm, teardown_alarm),
		cmocka_unit_test_setup_teardown(test_eintr_runs_due_timers, setup_alarm, teardown_alarm),
		cmocka_unit_test_setup_teardown(test_eintr_keeps_running, setup_alarm, teardown_alarm),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
