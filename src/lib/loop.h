/*
 * loop.h - the agent's one event loop: descriptors, monotonic timers and
 * a hook that drives MPI progress, around a single poll().
 *
 * Single-threaded.  Callbacks may add or remove descriptors and timers
 * (their own included); removed entries are marked dead and swept after
 * the dispatch, so a callback never sees a freed entry.
 */
#ifndef VIGIL_LOOP_H
#define VIGIL_LOOP_H

#include <stdbool.h>
#include <stdint.h>

#define LOOP_NOMORE (-1L)

struct loop;
struct loop_timer;

/* REVENTS: poll() revents (POLLIN, POLLOUT, POLLHUP, POLLERR). */
typedef void loop_fd_fn(struct loop *l, int fd, short revents, void *arg);

/*
 * Returns the next interval in ms (>= 0), or LOOP_NOMORE (any negative
 * value) to end the timer, which the loop then frees.  The interval runs
 * from the time the loop read its clock for this turn's timers, not from
 * when the timer was due: a late timer fires once, not in catch-up bursts.
 */
typedef long loop_timer_fn(struct loop *l, void *arg);

/*
 * Runs before every poll().  Returns the longest the loop may sleep this
 * turn in ms (MPI with requests outstanding wants a few ms), or -1 for no
 * limit of its own.
 */
typedef long loop_hook_fn(struct loop *l, void *arg);

/* A monotonic clock in us; injectable so timer tests never sleep. */
typedef uint64_t loop_clock_fn(void *arg);

/* NULL with errno set on allocation failure. */
struct loop *loop_new(void);
/* NULL is a no-op; closes nothing.  Not from one of L's callbacks. */
void loop_free(struct loop *l);

/* FN NULL: back to CLOCK_MONOTONIC, the default. */
void loop_set_clock(struct loop *l, loop_clock_fn *fn, void *arg);
uint64_t loop_now(struct loop *l);    /* ms on the loop's clock */
uint64_t loop_now_us(struct loop *l); /* us on the loop's clock */

/*
 * Watch FD for EVENTS (POLLIN and/or POLLOUT; 0 keeps it registered but
 * unwatched: not even POLLHUP or POLLERR is reported).  One registration
 * per fd: -EEXIST if already there.  Returns 0 or a negative errno.
 * Delete before closing: a closed descriptor still registered is reported
 * with POLLNVAL every turn.  A descriptor deleted during a turn gets no
 * further callback; one added by a descriptor or timer callback is polled
 * from the next turn on.
 */
int loop_add_fd(struct loop *l, int fd, short events, loop_fd_fn *fn, void *arg);
int loop_mod_fd(struct loop *l, int fd, short events);  /* -ENOENT if absent */
int loop_del_fd(struct loop *l, int fd);                /* -ENOENT if absent */

/*
 * Call FN after FIRST_MS, then after each interval it returns.  NULL on
 * ENOMEM.  Due timers run in order of due time, then of creation; each at
 * most once a turn, and one added during a turn first runs the next.  The
 * handle is valid until loop_del_timer() or FN returns LOOP_NOMORE.
 */
struct loop_timer *loop_add_timer(struct loop *l, long first_ms, loop_timer_fn *fn, void *arg);
/* The same with the first delay in us; FN still returns its next interval in ms. */
struct loop_timer *loop_add_timer_us(struct loop *l, long first_us, loop_timer_fn *fn, void *arg);
void loop_del_timer(struct loop *l, struct loop_timer *t);  /* NULL is a no-op */

void loop_set_before_poll(struct loop *l, loop_hook_fn *fn, void *arg);

/*
 * One turn: the hook, one poll() bounded by MAX_WAIT_MS (-1: until the
 * next timer or event), then the ready descriptors and due timers.
 * Returns the number of callbacks run, or a negative errno (EINTR is not
 * an error: it counts as a turn with nothing ready).  -EBUSY from inside
 * one of L's callbacks: turns do not nest.
 */
int loop_run_once(struct loop *l, long max_wait_ms);

/*
 * Turn until loop_stop(), which takes effect when the current turn has
 * dispatched everything it found ready; loop_run() clears an earlier stop
 * on entry.  Returns 0, or a negative errno from poll().
 */
int loop_run(struct loop *l);
void loop_stop(struct loop *l);
bool loop_stopped(const struct loop *l);

#endif
