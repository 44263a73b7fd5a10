/*
 * bench_notice.c - how soon the checkpoint signal reaches the training on
 * a node with many processes: from child_signal() to the training's
 * handler, with OTHERS other processes on the node (default 1000), and
 * its targets
 *   noted    by an earlier look at /proc (child_opts.notice_signal, the
 *            inspection's child_usage()): reached through their pidfds at
 *            once, before the look child_signal() makes;
 *   looked   up by that look alone (as before the noting);
 * against the baseline, kill() straight to the training's process.  The
 * training is this program run with --training: a handler that takes the
 * time, and a loop that prints it.  Medians of ROUNDS (default 20).
 *
 * Usage: bench_notice [OTHERS] [ROUNDS]
 * Output: notice with N other processes: noted X ms, looked up Y ms, kill() Z ms
 */
#include "autoconf.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "launch/child.h"

static volatile sig_atomic_t got;
static struct timespec when;

static void
on_usr1(int sig)
{
	(void)sig;
	clock_gettime(CLOCK_MONOTONIC, &when);
	got = 1;
}

/* The training: "ready", then the time of every SIGUSR1, in ms. */
static int
training(void)
{
	struct sigaction sa = { .sa_handler = on_usr1 };
	sigset_t none;

	sigemptyset(&none);
	sigaction(SIGUSR1, &sa, NULL);
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		sigsuspend(&none);
		if (got) {
			got = 0;
			printf("%.6f\n", (double)when.tv_sec * 1e3 + (double)when.tv_nsec / 1e6);
			if (fflush(stdout) != 0)
				return 0;  /* the bench went away */
		}
	}
}

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int
cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The training's handler time for one round, minus T0; < 0 on failure. */
static double
handled_after(FILE *out, double t0)
{
	char line[64];

	if (!fgets(line, sizeof(line), out))
		return -1;
	return atof(line) - t0;
}

enum way { NOTED, LOOKED, KILL };

/* Median delay over ROUNDS for one way of signalling. */
static double
measure(char *self, enum way way, int rounds)
{
	char *argv[] = { self, (char *)"--training", NULL };
	struct child_opts o = { .argv = argv, .notice_signal = way == NOTED ? SIGUSR1 : 0 };
	struct child_usage u;
	struct child *c;
	pid_t *pids = NULL, train = -1;
	size_t n = 0;
	double *d = calloc((size_t)rounds, sizeof(*d)), med;
	char line[64];
	FILE *out;
	int fd;

	if (!d || child_spawn(&o, &c) < 0) {
		fprintf(stderr, "bench_notice: cannot start the training\n");
		exit(2);
	}
	fd = dup(child_stdout_fd(c));
	(void)fcntl(fd, F_SETFL, 0);
	out = fdopen(fd, "r");
	if (!out || !fgets(line, sizeof(line), out)) {
		fprintf(stderr, "bench_notice: the training did not start\n");
		exit(2);
	}
	if (child_descendants(c, &pids, &n) == 0)
		for (size_t i = 0; i < n; i++)
			if (pids[i] != child_pid(c))
				train = pids[i];
	free(pids);
	(void)child_usage(c, &u);  /* the inspection's look */
	for (int r = 0; r < rounds; r++) {
		double t0;

		(void)nanosleep(&(struct timespec){ 0, 20000000 }, NULL);
		t0 = now_ms();
		if (way == KILL)
			(void)kill(train, SIGUSR1);
		else
			(void)child_signal(c, SIGUSR1);
		d[r] = handled_after(out, t0);
		if (d[r] < 0) {
			fprintf(stderr, "bench_notice: the training did not answer\n");
			exit(1);
		}
	}
	fclose(out);
	(void)child_kill_tree(c);
	(void)child_reap(c);
	child_free(c);
	qsort(d, (size_t)rounds, sizeof(*d), cmp);
	med = d[rounds / 2];
	free(d);
	return med;
}

int
main(int argc, char **argv)
{
	int others, rounds;
	pid_t holder;
	double noted, looked, direct;

	if (argc > 1 && strcmp(argv[1], "--training") == 0)
		return training();
	others = argc > 1 ? atoi(argv[1]) : 1000;
	rounds = argc > 2 ? atoi(argv[2]) : 20;
	if (others < 0 || rounds < 1) {
		fprintf(stderr, "usage: bench_notice [OTHERS] [ROUNDS]\n");
		return 2;
	}
	/* The node's other processes, which only sit in /proc: children of a
	 * holder in a group of its own, not of this agent (whose children
	 * would be the training's, as orphans it adopted). */
	holder = fork();
	if (holder == 0) {
		(void)setpgid(0, 0);
		for (int i = 0; i < others; i++) {
			pid_t p = fork();

			if (p == 0)
				for (;;)
					pause();
			if (p < 0) {
				fprintf(stderr, "bench_notice: fork: %s\n", strerror(errno));
				break;
			}
		}
		for (;;)
			pause();
	}
	if (holder < 0)
		return 2;
	(void)setpgid(holder, holder);
	(void)nanosleep(&(struct timespec){ 0, 300000000 }, NULL);
	direct = measure(argv[0], KILL, rounds);
	looked = measure(argv[0], LOOKED, rounds);
	noted = measure(argv[0], NOTED, rounds);
	(void)kill(-holder, SIGKILL);
	while (wait(NULL) > 0)
		;
	printf("notice with %d other processes, to the handler (median of %d): noted %.3f ms, "
	       "looked up %.3f ms, kill() straight to it %.3f ms; noted/kill() %.1fx, "
	       "looked up/kill() %.1fx\n", others, rounds, noted, looked, direct,
	       noted / direct, looked / direct);
	return 0;
}
