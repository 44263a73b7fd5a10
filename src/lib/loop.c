/*
 * loop.c - one poll() over the registered descriptors, timers on a
 * monotonic clock, and a hook before each poll that drives MPI progress.
 * Time is kept in microseconds (ppoll() sleeps that finely), so that a
 * descriptor can be left alone for a fraction of a millisecond while its
 * writer fills it (node.c gathers a fast training's output so).
 *
 * Modelled on Redis's ae.c: registrations live in small arrays and lists
 * scanned linearly.  The agent watches a handful of descriptors (signalfd,
 * the child's stdout and stderr) and a handful of timers (sampling,
 * heartbeat, grace periods), so a heap or an epoll set would buy nothing
 * but code.
 *
 * Callbacks may add and remove registrations, their own included.  While
 * a turn is under way, removal only marks an entry dead; dead entries are
 * swept when the turn ends, so no callback ever runs on, or returns into,
 * a freed entry.
 */
#include "autoconf.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "lib/loop.h"
#include "lib/util.h"

struct fd_entry {
	int fd;
	short events;
	bool dead;
	loop_fd_fn *fn;
	void *arg;
};

struct loop_timer {
	struct loop_timer *next;
	uint64_t due;       /* on the loop's clock, us */
	uint64_t seq;       /* creation order: breaks ties between equal dues */
	uint64_t ran_turn;  /* the last turn it ran in, or the turn it was added in */
	bool dead;
	loop_timer_fn *fn;
	void *arg;
};

struct loop {
	/* fds[i] is polled through pfds[i]; both arrays share one capacity. */
	struct fd_entry *fds;
	struct pollfd *pfds;
	size_t nfds, capfds;

	struct loop_timer *timers;  /* unordered */
	uint64_t timer_seq;

	loop_clock_fn *clock;
	void *clock_arg;
	loop_hook_fn *hook;
	void *hook_arg;

	uint64_t turn;  /* counts loop_run_once() calls */
	bool in_turn;
	bool stop;
};

static uint64_t
monotonic_us(void *arg)
{
	(void)arg;
	return (uint64_t)(util_now_ns() / 1000);
}

struct loop *
loop_new(void)
{
	struct loop *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->clock = monotonic_us;
	return l;
}

void
loop_free(struct loop *l)
{
	struct loop_timer *t, *next;

	if (!l)
		return;
	for (t = l->timers; t; t = next) {
		next = t->next;
		free(t);
	}
	free(l->fds);
	free(l->pfds);
	free(l);
}

void
loop_set_clock(struct loop *l, loop_clock_fn *fn, void *arg)
{
	l->clock = fn ? fn : monotonic_us;
	l->clock_arg = fn ? arg : NULL;
}

uint64_t
loop_now_us(struct loop *l)
{
	return l->clock(l->clock_arg);
}

uint64_t
loop_now(struct loop *l)
{
	return loop_now_us(l) / 1000;
}

/* Frees what was removed.  Only between dispatches: a callback up the
 * stack may still hold a pointer to the entry it was called for. */
static void
sweep(struct loop *l)
{
	struct loop_timer **pt = &l->timers;
	size_t i, j;

	for (i = j = 0; i < l->nfds; i++)
		if (!l->fds[i].dead)
			l->fds[j++] = l->fds[i];
	l->nfds = j;

	while (*pt) {
		struct loop_timer *t = *pt;

		if (t->dead) {
			*pt = t->next;
			free(t);
		} else {
			pt = &t->next;
		}
	}
}

static struct fd_entry *
find_fd(struct loop *l, int fd)
{
	/* A dead entry for the same number may linger until the sweep: the
	 * descriptor was closed and its number reused within one turn. */
	for (size_t i = 0; i < l->nfds; i++)
		if (l->fds[i].fd == fd && !l->fds[i].dead)
			return &l->fds[i];
	return NULL;
}

int
loop_add_fd(struct loop *l, int fd, short events, loop_fd_fn *fn, void *arg)
{
	if (fd < 0)
		return -EBADF;
	if (!fn)
		return -EINVAL;
	if (find_fd(l, fd))
		return -EEXIST;
	if (l->nfds == l->capfds) {
		size_t cap = l->capfds ? 2 * l->capfds : 8;
		struct fd_entry *fds;
		struct pollfd *pfds;

		/* If the second realloc fails, the first array is merely larger
		 * than needed: the count and the capacity still hold. */
		fds = realloc(l->fds, cap * sizeof(*fds));
		if (!fds)
			return -ENOMEM;
		l->fds = fds;
		pfds = realloc(l->pfds, cap * sizeof(*pfds));
		if (!pfds)
			return -ENOMEM;
		l->pfds = pfds;
		l->capfds = cap;
	}
	/* Appended past the entries polled this turn, if a turn is under
	 * way, so it is not dispatched with revents meant for another. */
	l->fds[l->nfds++] = (struct fd_entry){
		.fd = fd, .events = events, .fn = fn, .arg = arg,
	};
	return 0;
}

int
loop_mod_fd(struct loop *l, int fd, short events)
{
	struct fd_entry *e = find_fd(l, fd);

	if (!e)
		return -ENOENT;
	e->events = events;
	return 0;
}

int
loop_del_fd(struct loop *l, int fd)
{
	struct fd_entry *e = find_fd(l, fd);

	if (!e)
		return -ENOENT;
	e->dead = true;
	if (!l->in_turn)
		sweep(l);
	return 0;
}

struct loop_timer *
loop_add_timer_us(struct loop *l, long first_us, loop_timer_fn *fn, void *arg)
{
	struct loop_timer *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->due = loop_now_us(l) + (uint64_t)(first_us > 0 ? first_us : 0);
	t->seq = l->timer_seq++;
	/* Marked as run in the current turn: a timer added by a callback
	 * waits for the next turn, so a callback that keeps adding zero-delay
	 * timers cannot keep one turn going forever. */
	t->ran_turn = l->turn;
	t->fn = fn;
	t->arg = arg;
	t->next = l->timers;
	l->timers = t;
	return t;
}

struct loop_timer *
loop_add_timer(struct loop *l, long first_ms, loop_timer_fn *fn, void *arg)
{
	long max_ms = LONG_MAX / 1000;

	return loop_add_timer_us(l, first_ms > max_ms ? max_ms * 1000 : first_ms * 1000, fn, arg);
}

void
loop_del_timer(struct loop *l, struct loop_timer *t)
{
	if (!t)
		return;
	t->dead = true;
	if (!l->in_turn)
		sweep(l);
}

void
loop_set_before_poll(struct loop *l, loop_hook_fn *fn, void *arg)
{
	l->hook = fn;
	l->hook_arg = fn ? arg : NULL;
}

/* A wait in ms as one in us, saturating; negative stays -1 (no limit). */
static int64_t
ms_to_us(long ms)
{
	if (ms < 0)
		return -1;
	return ms > INT64_MAX / 1000 ? INT64_MAX : (int64_t)ms * 1000;
}

/*
 * How long ppoll() may sleep: the least of the limits that apply, in us
 * (TS), or NULL for no limit.
 */
static struct timespec *
poll_timeout(struct loop *l, long max_wait_ms, long hook_ms, struct timespec *ts)
{
	int64_t wait = ms_to_us(max_wait_ms), hook = ms_to_us(hook_ms);
	uint64_t now = loop_now_us(l);

	if (hook >= 0 && (wait < 0 || hook < wait))
		wait = hook;
	for (struct loop_timer *t = l->timers; t; t = t->next) {
		uint64_t left;

		if (t->dead)
			continue;
		left = t->due > now ? t->due - now : 0;
		if (wait < 0 || left < (uint64_t)wait)
			wait = (int64_t)left;
	}
	if (wait < 0)
		return NULL;
	ts->tv_sec = (time_t)(wait / 1000000);
	ts->tv_nsec = (long)(wait % 1000000) * 1000;
	return ts;
}

/* The first NPOLLED entries were polled; later ones were added since. */
static int
dispatch_fds(struct loop *l, size_t npolled)
{
	int ran = 0;

	for (size_t i = 0; i < npolled; i++) {
		/* Re-read each time: a callback may have grown (moved) the arrays. */
		struct fd_entry *e = &l->fds[i];
		short revents = l->pfds[i].revents;

		if (!revents || e->dead || !e->events)
			continue;
		/* A callback earlier in this turn may have narrowed the events. */
		revents &= (short)(e->events | POLLERR | POLLHUP | POLLNVAL);
		if (!revents)
			continue;
		e->fn(l, e->fd, revents, e->arg);
		ran++;
	}
	return ran;
}

/* The earliest live timer due by NOW that has not run this turn. */
static struct loop_timer *
next_due(struct loop *l, uint64_t now)
{
	struct loop_timer *best = NULL;

	for (struct loop_timer *t = l->timers; t; t = t->next) {
		if (t->dead || t->due > now || t->ran_turn == l->turn)
			continue;
		if (!best || t->due < best->due ||
		    (t->due == best->due && t->seq < best->seq))
			best = t;
	}
	return best;
}

static int
dispatch_timers(struct loop *l)
{
	uint64_t now = loop_now_us(l);
	struct loop_timer *t;
	int ran = 0;

	while ((t = next_due(l, now))) {
		long next;

		t->ran_turn = l->turn;
		next = t->fn(l, t->arg);
		ran++;
		if (t->dead)
			continue;  /* deleted itself */
		if (next < 0) {
			t->dead = true;
			continue;
		}
		/*
		 * Re-armed from the time this turn read the clock, not from when
		 * it was due.  A periodic timer so drifts by the loop's latency,
		 * which sampling and heartbeats tolerate; in exchange a loop that
		 * was held up (a slow MPI call, a stopped process) fires each late
		 * timer once rather than in a burst of catch-up calls.
		 */
		t->due = now + (uint64_t)ms_to_us(next);
	}
	return ran;
}

int
loop_run_once(struct loop *l, long max_wait_ms)
{
	struct timespec ts;
	long hook_ms = -1;
	size_t npolled;
	int n, rc, ran;

	if (l->in_turn)
		return -EBUSY;  /* called from one of this loop's callbacks */
	l->in_turn = true;
	l->turn++;
	if (l->hook)
		hook_ms = l->hook(l, l->hook_arg);
	/* The hook ended the loop: no poll, which might wait forever. */
	if (l->stop) {
		rc = 0;
		goto out;
	}

	/* Rebuilt every turn (no allocation: the arrays share a capacity);
	 * the hook may have changed registrations.  poll() ignores negative
	 * descriptors, which is how dead and unwatched entries stay quiet,
	 * POLLHUP included. */
	npolled = l->nfds;
	for (size_t i = 0; i < npolled; i++) {
		const struct fd_entry *e = &l->fds[i];

		l->pfds[i].fd = e->dead || !e->events ? -1 : e->fd;
		l->pfds[i].events = e->events;
		l->pfds[i].revents = 0;
	}

	n = ppoll(l->pfds, (nfds_t)npolled, poll_timeout(l, max_wait_ms, hook_ms, &ts), NULL);
	if (n < 0) {
		rc = -errno;
		if (rc != -EINTR)
			goto out;
		/* A signal arrived: no descriptor is ready, timers may be due. */
		n = 0;
	}
	ran = n > 0 ? dispatch_fds(l, npolled) : 0;
	ran += dispatch_timers(l);
	rc = ran;
out:
	l->in_turn = false;
	sweep(l);
	return rc;
}

int
loop_run(struct loop *l)
{
	int rc;

	l->stop = false;
	while (!l->stop) {
		rc = loop_run_once(l, -1);
		if (rc < 0)
			return rc;
	}
	return 0;
}

void
loop_stop(struct loop *l)
{
	l->stop = true;
}

bool
loop_stopped(const struct loop *l)
{
	return l->stop;
}
