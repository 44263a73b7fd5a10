/*
 * end_time.c - print this job's end time as vigil gets it from
 * slurm_end_time(), for tests/integration/slurm_end_time.sh, which runs it
 * inside a job of a real Slurm cluster.
 *
 *   end_time [TIMEOUT_S]
 *
 * One line: "end SECONDS SOURCE MS" (the end time, where it came from,
 * how long the lookup took in ms), "none SOURCE MS", or "error -ERRNO MS
 * REASON"; the exit status is 0, 0 or 1.
 */
#include "autoconf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/util.h"
#include "proc/slurm.h"

int
main(int argc, char **argv)
{
	double timeout_s = argc > 1 ? atof(argv[1]) : 5;
	const char *source = NULL;
	char err[512] = "";
	uint64_t t0 = util_now_ms();
	time_t end = 0;
	int rc;

	rc = slurm_end_time(timeout_s, &end, &source, err, sizeof(err));
	if (rc == 1)
		printf("end %lld %s %llu\n", (long long)end, source,
		       (unsigned long long)(util_now_ms() - t0));
	else if (rc == 0)
		printf("none %s %llu\n", source, (unsigned long long)(util_now_ms() - t0));
	else
		printf("error %d %llu %s\n", rc, (unsigned long long)(util_now_ms() - t0), err);
	return rc < 0;
}
