/*
 * hang_peer.c - a node that joins the MPI job and then never answers:
 * what the coordinator sees of a node whose agent hangs after start-up.
 * Bounded: it leaves after argv[1] seconds (default 120), in case the
 * launcher does not kill it.
 */
#include <stdlib.h>
#include <unistd.h>

#include <mpi.h>

int
main(int argc, char **argv)
{
	int limit = argc > 1 ? atoi(argv[1]) : 120;

	MPI_Init(&argc, &argv);
	for (int i = 0; i < limit; i++)
		sleep(1);
	MPI_Finalize();
	return 0;
}
