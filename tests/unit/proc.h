/*
 * proc.h - time and child processes in unit tests.  Include after
 * vigil_test.h.
 */
#ifndef VIGIL_TEST_PROC_H
#define VIGIL_TEST_PROC_H

#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Seconds on CLOCK_MONOTONIC: for timing a call against its deadline. */
static inline double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * Reap the orphans a killed process group leaves (a timed-out command's
 * sleep), waiting up to about a second for them: the tests that call this
 * make themselves the orphans' subreaper in main(), so they are not left
 * to init.  Returns when none is left or the second is up.
 */
static inline void
reap_orphans(void)
{
	for (int i = 0; i < 100; i++) {
		pid_t r = waitpid(-1, NULL, WNOHANG);

		if (r < 0)
			return;  /* ECHILD: none left */
		if (r == 0)
			usleep(10000);
	}
}

#endif
