/*
 * mpi_train.c - a training that uses MPI itself (as mpi4py or an MPI data
 * loader does): MPI_Init, one line naming its rank and the size of its
 * MPI_COMM_WORLD, an allreduce, MPI_Finalize.  Started by vigil on a node,
 * it must run as an MPI singleton ("mpi rank 0 of 1"); started by an
 * mpirun inside the training (Horovod mode), as a rank of that job.
 * An optional argument: iterations, each printing the manual's timing
 * line.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <mpi.h>

int
main(int argc, char **argv)
{
	int rank = -1, size = -1, iters = argc > 1 ? atoi(argv[1]) : 0;
	int one = 1, sum = 0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	printf("mpi rank %d of %d sum %d\n", rank, size, sum);
	fflush(stdout);
	for (int i = 0; i < iters; i++) {
		usleep(20000);
		printf("this iteration hardware time is 14.000 and e2e time is 20.0 ms.\n");
		fflush(stdout);
	}
	MPI_Finalize();
	return 0;
}
