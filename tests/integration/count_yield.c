/*
 * count_yield.c - an LD_PRELOAD library for mpi_yield.sh: counts a
 * process's calls of sched_yield() and of MPI_Wait() and, when it exits,
 * appends one line "COMM FORKED COUNT WAITS" to the file named by
 * $COUNT_YIELD_FILE.  FORKED is 1 in a process forked without exec
 * (vigil's keeper), whose counts start again at the fork; 0 in one that
 * an exec began.
 *
 * Open MPI's progress engine calls sched_yield() through the C library,
 * so a preloaded definition sees every call it makes.  MPI_Wait() is
 * passed on to the next definition (the MPI library's); its arguments are
 * only handed on, so no MPI header is needed here.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static atomic_long calls, waits;
static int forked;

int MPI_Wait(void *request, void *status);

int
MPI_Wait(void *request, void *status)
{
	int (*next)(void *, void *) = (int (*)(void *, void *))dlsym(RTLD_NEXT, "MPI_Wait");

	atomic_fetch_add(&waits, 1);
	return next ? next(request, status) : -1;
}

int
sched_yield(void)
{
	atomic_fetch_add(&calls, 1);
	return (int)syscall(SYS_sched_yield);
}

static void
in_child(void)
{
	atomic_store(&calls, 0);
	atomic_store(&waits, 0);
	forked = 1;
}

__attribute__((constructor)) static void
start(void)
{
	(void)pthread_atfork(NULL, NULL, in_child);
}

__attribute__((destructor)) static void
report(void)
{
	const char *path = getenv("COUNT_YIELD_FILE");
	char comm[17] = "", line[64];
	int fd, n, saved = errno;

	if (!path || !*path)
		return;
	(void)prctl(PR_GET_NAME, comm, 0, 0, 0);
	n = snprintf(line, sizeof(line), "%s %d %ld %ld\n", comm, forked, atomic_load(&calls),
	             atomic_load(&waits));
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd >= 0) {
		if (n > 0 && write(fd, line, (size_t)n) != n)
			n = -1;
		close(fd);
	}
	errno = saved;
}
