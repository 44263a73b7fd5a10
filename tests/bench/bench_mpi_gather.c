/*
 * bench_mpi_gather.c - the baseline for a gathered `vigil check`
 * (tests/bench/bench_check.sh): the least an MPI program does to gather
 * one report per node at rank 0.  MPI_Init, a report of REPORT_BYTES
 * (default 2048, about what a node's pre-check report weighs) from every
 * rank gathered at rank 0, one verdict broadcast back, MPI_Finalize.
 * `mpirun -np N true` starts no MPI and is not a fair baseline.
 *
 * Usage: mpirun -np N bench_mpi_gather [REPORT_BYTES]
 * Exit status: 0, or 1 when a rank's report arrived wrong.
 */
#include "autoconf.h"

#include <stdlib.h>
#include <string.h>

#include <mpi.h>

int
main(int argc, char **argv)
{
	int rank, size, n = argc > 1 ? atoi(argv[1]) : 2048, bad = 0;
	char *mine, *all = NULL;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
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
