/*
 * bench_mpi_gather.c - the baseline for a gathered `vigil check`
 * (tests/bench/bench_check.sh): the least an MPI program does to gather
 * one report per node at rank 0.  MPI_Init, a report of REPORT_BYTES
 * (default 2048, about what a node's pre-check report weighs) from every
 * rank gathered at rank 0, one verdict broadcast back, MPI_Finalize.
 * `mpirun -np N true` starts no MPI and is not a fair baseline.
 *
 * Usage: mpirun -np N bench_mpi_gather [REPORT_BYTES]
 *        mpirun -np N bench_mpi_gather --end FILE
 * The second form is the baseline of a job's end (bench_fanout.sh): each
 * rank sleeps a second after MPI_Init, appends the time (epoch ns) to FILE
 * and finalises, as a training would end before its agent's MPI does.
 * Exit status: 0, or 1 when a rank's report arrived wrong.
 */
#include "autoconf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mpi.h>

int
main(int argc, char **argv)
{
	int rank, size, n = argc > 1 ? atoi(argv[1]) : 2048, bad = 0;
	char *mine, *all = NULL;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (argc > 2 && strcmp(argv[1], "--end") == 0) {
		struct timespec ts;
		FILE *f;

		sleep(1);
		clock_gettime(CLOCK_REALTIME, &ts);
		f = fopen(argv[2], "a");
		if (f) {
			fprintf(f, "%lld\n", (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
			fclose(f);
		}
		MPI_Finalize();
		return f ? 0 : 1;
	}
	if (n < 1)
		n = 1;
	mine = malloc((size_t)n);
	if (rank == 0)
		all = malloc((size_t)n * (size_t)size);
	if (!mine || (rank == 0 && !all))
		MPI_Abort(MPI_COMM_WORLD, 2);
	memset(mine, 'a' + rank % 26, (size_t)n);
	MPI_Gather(mine, n, MPI_CHAR, all, n, MPI_CHAR, 0, MPI_COMM_WORLD);
	if (rank == 0)
		for (int r = 0; r < size; r++)
			bad |= all[(size_t)r * (size_t)n] != 'a' + r % 26;
	MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
	free(mine);
	free(all);
	MPI_Finalize();
	return bad;
}
