/*
 * peer.c - MPI behind a small, non-blocking interface.
 */
#include "autoconf.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

#include "peer.h"

/* Message tags; the next features (heartbeats, commands) add theirs here. */
enum { PEER_TAG_GATHER = 1 };

struct peer {
	bool mpi;
	int rank;
	int size;
};

struct pending_recv {
	MPI_Request req;
	int source;
	char *buf;
};

struct peer_gather {
	struct peer *p;
	char **strings;              /* rank 0: one per rank, NULL until arrived */
	int arrived;
	struct pending_recv *recvs;  /* rank 0: receives matched but not complete */
	int nrecvs;
	char *sendbuf;               /* other ranks */
	MPI_Request sendreq;
	bool done;
};

bool
peer_launched(void)
{
	const char *force = getenv("VIGIL_MPI");

	if (force && *force)
		return strcmp(force, "0") != 0;
	return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") ||
	       getenv("PMI_RANK");
}

int
peer_init(int *argc, char ***argv, struct peer **out)
{
	struct peer *p;

	*out = NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->size = 1;
	if (peer_launched()) {
		if (MPI_Init(argc, argv) != MPI_SUCCESS) {
			free(p);
			return -EPROTO;
		}
		/* Errors come back as codes, so a lost peer is a case we
		 * handle rather than an abort of every agent. */
		MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
		MPI_Comm_rank(MPI_COMM_WORLD, &p->rank);
		MPI_Comm_size(MPI_COMM_WORLD, &p->size);
		p->mpi = true;
	}
	*out = p;
	return 0;
}

int
peer_rank(const struct peer *p)
{
	return p->rank;
}

int
peer_size(const struct peer *p)
{
	return p->size;
}

bool
peer_is_mpi(const struct peer *p)
{
	return p->mpi;
}

int
peer_gather_start(struct peer *p, const char *mine, struct peer_gather **out)
{
	struct peer_gather *g;
	size_t len = strlen(mine) + 1;
	int rc = -ENOMEM;

	*out = NULL;
	if (len > (size_t)INT_MAX)
		return -EMSGSIZE;
	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->p = p;
	if (p->rank == 0) {
		g->strings = calloc((size_t)p->size, sizeof(*g->strings));
		g->recvs = calloc((size_t)p->size, sizeof(*g->recvs));
		if (!g->strings || !g->recvs)
			goto fail;
		g->strings[0] = strdup(mine);
		if (!g->strings[0])
			goto fail;
		g->arrived = 1;
		g->done = g->arrived == p->size;
	} else {
		g->sendbuf = strdup(mine);
		if (!g->sendbuf)
			goto fail;
		if (MPI_Isend(g->sendbuf, (int)len, MPI_CHAR, 0, PEER_TAG_GATHER,
		              MPI_COMM_WORLD, &g->sendreq) != MPI_SUCCESS) {
			rc = -EPROTO;
			goto fail;
		}
	}
	*out = g;
	return 0;
fail:
	peer_gather_free(g);
	return rc;
}

/* Rank 0: match newly arrived messages to receives without blocking. */
static int
match_arrivals(struct peer_gather *g)
{
	for (;;) {
		int flag = 0, count = 0;
		MPI_Message msg;
		MPI_Status st;
		struct pending_recv *r;

		/* Each rank sends once: at most size-1 receives, one spare. */
		if (g->nrecvs >= g->p->size)
			return 0;
		if (MPI_Improbe(MPI_ANY_SOURCE, PEER_TAG_GATHER, MPI_COMM_WORLD,
		                &flag, &msg, &st) != MPI_SUCCESS)
			return -EPROTO;
		if (!flag)
			return 0;
		MPI_Get_count(&st, MPI_CHAR, &count);
		r = &g->recvs[g->nrecvs];
		r->source = st.MPI_SOURCE;
		r->buf = malloc(count > 0 ? (size_t)count + 1 : 1);
		if (!r->buf)
			return -ENOMEM;
		r->buf[count > 0 ? count : 0] = '\0';
		if (MPI_Imrecv(r->buf, count, MPI_CHAR, &msg, &r->req) != MPI_SUCCESS) {
			free(r->buf);
			r->buf = NULL;
			return -EPROTO;
		}
		g->nrecvs++;
	}
}

int
peer_gather_progress(struct peer_gather *g)
{
	int flag = 0, rc;

	if (g->done)
		return 1;
	if (g->p->rank != 0) {
		if (MPI_Test(&g->sendreq, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS)
			return -EPROTO;
		g->done = flag;
		return g->done;
	}
	rc = match_arrivals(g);
	if (rc < 0)
		return rc;
	for (int i = 0; i < g->nrecvs; i++) {
		struct pending_recv *r = &g->recvs[i];

		if (!r->buf)
			continue;
		if (MPI_Test(&r->req, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS)
			return -EPROTO;
		if (!flag)
			continue;
		if (r->source > 0 && r->source < g->p->size && !g->strings[r->source]) {
			g->strings[r->source] = r->buf;
			g->arrived++;
		} else {
			free(r->buf);  /* a second message from one rank: ignore */
		}
		r->buf = NULL;
	}
	g->done = g->arrived == g->p->size;
	return g->done;
}

const char *
peer_gather_get(const struct peer_gather *g, int rank)
{
	if (!g->strings || rank < 0 || rank >= g->p->size)
		return NULL;
	return g->strings[rank];
}

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int
peer_gather_wait(struct peer_gather *g, double timeout_s)
{
	const struct timespec nap = { 0, 1000000 };
	double deadline = now_s() + timeout_s;
	int rc;

	/* Sleep between turns: spinning in MPI would take a core from the
	 * node's own work for the whole wait. */
	while ((rc = peer_gather_progress(g)) == 0) {
		if (now_s() >= deadline)
			return 0;
		nanosleep(&nap, NULL);
	}
	return rc;
}

void
peer_gather_free(struct peer_gather *g)
{
	if (!g)
		return;
	if (g->strings) {
		for (int i = 0; i < g->p->size; i++)
			free(g->strings[i]);
		free(g->strings);
	}
	if (g->recvs) {
		/* A receive still pending was matched to a message that is
		 * arriving; its buffer must outlive MPI's use of it, so it is
		 * left allocated only if MPI still holds it. */
		for (int i = 0; i < g->nrecvs; i++) {
			int flag = 0;

			if (!g->recvs[i].buf)
				continue;
			MPI_Test(&g->recvs[i].req, &flag, MPI_STATUS_IGNORE);
			if (flag)
				free(g->recvs[i].buf);
		}
		free(g->recvs);
	}
	if (g->sendbuf) {
		int flag = g->done;

		if (!flag)
			MPI_Test(&g->sendreq, &flag, MPI_STATUS_IGNORE);
		if (flag)
			free(g->sendbuf);
		/* else MPI may still read it: leave it to the process exit */
	}
	free(g);
}

void
peer_finalize(struct peer *p, bool clean)
{
	if (!p)
		return;
	if (p->mpi && clean)
		MPI_Finalize();
	free(p);
}
