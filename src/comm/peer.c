/*
 * peer.c - MPI behind a small, non-blocking interface.
 */
#include "autoconf.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

#include "comm/peer.h"

/* The gather's tag; the others are in peer.h. */
enum { PEER_TAG_GATHER = 1 };

_Static_assert(PEER_TAG_GATHER < PEER_TAG_MIN, "the gather's tag is not a message tag");

struct pending_send {
	MPI_Request req;
	char *buf;
};

struct inbox {
	MPI_Request req;
	int source, tag;
	char *buf;
};

struct peer {
	bool mpi;
	int rank;
	int size;
	struct pending_send *sends;  /* point-to-point sends in flight */
	int nsends, capsends;
	struct inbox *inbox;         /* receives matched, not yet complete */
	int inhead, ninbox, capinbox;  /* queued: inbox[inhead..ninbox) */
	/* A world of one delivers to itself through this queue. */
	struct self_msg { int tag; char *msg; } *selfq;
	int selfhead, nselfq, capselfq;  /* queued: selfq[selfhead..nselfq) */
	/* Reductions among some ranks: their own communicator (so that
	 * match_p2p()'s wildcard never sees their messages), and those given
	 * up with sends still in flight. */
	MPI_Comm tree_comm;
	MPI_Request tree_req;        /* its making, started in peer_init() */
	bool tree_ok;                /* made */
	struct peer_reduce **draining;
	int ndraining;
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
	bool yield_set;   /* we set OMPI_MCA_mpi_yield_when_idle, and take it back */
	int rc;

	*out = NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->size = 1;
	if (peer_launched()) {
		/*
		 * Open MPI 4.1 sends an application's help messages to its
		 * daemon through PMIx and waits for the answer with no bound
		 * (orte/util/show_help.c, orte_show_help_norender(): "while
		 * (active) nanosleep").  The TCP transport prints one when it
		 * cannot reach a peer that died, and a daemon busy ending the
		 * job never answers: the agent would hang inside MPI_Test,
		 * deaf to signals, until SIGKILL.  vigil says itself which
		 * node is gone; a site that wants Open MPI's messages anyway
		 * sets OMPI_MCA_orte_execute_quiet=0.  (The training never
		 * sees this: its environment drops OMPI_MCA_orte_*.)
		 */
		(void)setenv("OMPI_MCA_orte_execute_quiet", "1", 0);
		/*
		 * Where mpirun places more processes than a node has cores
		 * (--oversubscribe), Open MPI makes every look at MPI that
		 * finds nothing call sched_yield() (mpi_yield_when_idle).
		 * An agent never waits inside MPI, it looks and goes back to
		 * poll(); yielding only puts it behind every runnable
		 * process, a few ms a look: with 16 agents and their
		 * trainings on 2 cores, a checkpoint command waited 5-16 ms
		 * inside one look.  Off for the agent's MPI unless the user
		 * chose; not passed to the training, whose MPI is its own.
		 * The one wait that blocks, at the end, sleeps between its
		 * tries instead (wait_yielding()).
		 */
		yield_set = getenv("OMPI_MCA_mpi_yield_when_idle") == NULL &&
		            setenv("OMPI_MCA_mpi_yield_when_idle", "0", 0) == 0;
		rc = MPI_Init(argc, argv);
		if (yield_set)
			(void)unsetenv("OMPI_MCA_mpi_yield_when_idle");
		if (rc != MPI_SUCCESS) {
			free(p);
			return -EPROTO;
		}
		/* Errors come back as codes, so a lost peer is a case we
		 * handle rather than an abort of every agent. */
		MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
		MPI_Comm_rank(MPI_COMM_WORLD, &p->rank);
		MPI_Comm_size(MPI_COMM_WORLD, &p->size);
		p->mpi = true;
		/* The reductions' own communicator, made without waiting: a
		 * peer that never makes its part (not an agent, or hung) must
		 * not hold this one here; it is done long before a restart
		 * needs it, every agent's MPI being driven meanwhile. */
		if (MPI_Comm_idup(MPI_COMM_WORLD, &p->tree_comm, &p->tree_req) != MPI_SUCCESS) {
			free(p);
			return -EPROTO;
		}
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
/*
 * MPI_Improbe, asked twice when the first finds nothing: Open MPI matches
 * before it runs the progress engine, so a message that arrived since the
 * last look is pulled in by the first call and matched only by the next.
 * With one call a look would miss it, and the message would wait for the
 * next look (2 ms on, and much later on a loaded machine).
 */
static int
improbe(int tag, int *flag, MPI_Message *msg, MPI_Status *st)
{
	for (int i = 0; i < 2; i++) {
		if (MPI_Improbe(MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, flag, msg, st) != MPI_SUCCESS)
			return -EPROTO;
		if (*flag)
			break;
	}
	return 0;
}

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
		if (improbe(PEER_TAG_GATHER, &flag, &msg, &st) < 0)
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

/*
 * Room for one more element at the end of a queue Q[*HEAD..*N) of
 * elements of SIZE bytes, *CAP allocated: the taken head is dropped
 * first (one memmove when the queue is full, not one per message: a burst
 * of 10,000 heartbeats costs O(N), not O(N^2)), then the array doubles.
 */
static bool
queue_room(void **q, size_t size, int *head, int *n, int *cap)
{
	void *nq;
	int ncap;

	if (*n < *cap)
		return true;
	if (*head > 0) {
		memmove(*q, (char *)*q + (size_t)*head * size, (size_t)(*n - *head) * size);
		*n -= *head;
		*head = 0;
		return true;
	}
	ncap = *cap ? 2 * *cap : 8;
	nq = realloc(*q, (size_t)ncap * size);
	if (!nq)
		return false;
	*q = nq;
	*cap = ncap;
	return true;
}

static bool
is_p2p_tag(int tag)
{
	return tag >= PEER_TAG_MIN && tag <= PEER_TAG_MAX;
}

int
peer_send(struct peer *p, int rank, int tag, const char *msg)
{
	size_t len = strlen(msg) + 1;
	char *copy;

	if (rank < 0 || rank >= p->size || !is_p2p_tag(tag))
		return -EINVAL;
	if (len > (size_t)INT_MAX)
		return -EMSGSIZE;
	copy = strdup(msg);
	if (!copy)
		return -ENOMEM;
	if (!p->mpi || rank == p->rank) {
		/* To oneself: no MPI needed, and a world of one has none. */
		if (!queue_room((void **)&p->selfq, sizeof(*p->selfq), &p->selfhead, &p->nselfq,
		                &p->capselfq)) {
			free(copy);
			return -ENOMEM;
		}
		p->selfq[p->nselfq].tag = tag;
		p->selfq[p->nselfq].msg = copy;
		p->nselfq++;
		return 0;
	}
	if (p->nsends == p->capsends) {
		int cap = p->capsends ? 2 * p->capsends : 8;
		struct pending_send *s = realloc(p->sends, (size_t)cap * sizeof(*s));

		if (!s) {
			free(copy);
			return -ENOMEM;
		}
		p->sends = s;
		p->capsends = cap;
	}
	if (MPI_Isend(copy, (int)len, MPI_CHAR, rank, tag, MPI_COMM_WORLD,
	              &p->sends[p->nsends].req) != MPI_SUCCESS) {
		free(copy);
		return -EPROTO;
	}
	p->sends[p->nsends++].buf = copy;
	return 0;
}

int
peer_push(struct peer *p)
{
	int flag = 0;

	if (!p->mpi || p->nsends == 0)
		return 0;
	/* testing the newest request progresses them all; it is freed with
	 * the others by progress_sends() */
	if (MPI_Test(&p->sends[p->nsends - 1].req, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS)
		return -EPROTO;
	return 0;
}

/* Test sends in flight; free the completed ones. */
static int
progress_sends(struct peer *p)
{
	int i = 0;

	while (i < p->nsends) {
		int flag = 0;

		if (MPI_Test(&p->sends[i].req, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS)
			return -EPROTO;
		if (flag) {
			free(p->sends[i].buf);
			p->sends[i] = p->sends[--p->nsends];
		} else {
			i++;
		}
	}
	return 0;
}

/* Match newly arrived point-to-point messages to receives. */
static int
match_p2p(struct peer *p)
{
	for (;;) {
		int flag = 0, count = 0;
		MPI_Message msg;
		MPI_Status st;
		struct inbox *in;

		if (improbe(MPI_ANY_TAG, &flag, &msg, &st) < 0)
			return -EPROTO;
		if (!flag)
			return 0;
		if (!is_p2p_tag(st.MPI_TAG)) {
			/* A gather's message matched by the wildcard: the
			 * gather owns that tag, so hand it back by receiving it
			 * here would steal it.  Gathers and p2p traffic never
			 * overlap in time in vigil; drop it loudly. */
			char *junk;

			MPI_Get_count(&st, MPI_CHAR, &count);
			junk = malloc(count > 0 ? (size_t)count : 1);
			if (!junk)
				return -ENOMEM;
			MPI_Mrecv(junk, count, MPI_CHAR, &msg, MPI_STATUS_IGNORE);
			free(junk);
			continue;
		}
		if (!queue_room((void **)&p->inbox, sizeof(*p->inbox), &p->inhead, &p->ninbox,
		                &p->capinbox))
			return -ENOMEM;
		MPI_Get_count(&st, MPI_CHAR, &count);
		in = &p->inbox[p->ninbox];
		in->source = st.MPI_SOURCE;
		in->tag = st.MPI_TAG;
		in->buf = malloc(count > 0 ? (size_t)count + 1 : 1);
		if (!in->buf)
			return -ENOMEM;
		in->buf[count > 0 ? count : 0] = '\0';
		if (MPI_Imrecv(in->buf, count, MPI_CHAR, &msg, &in->req) != MPI_SUCCESS) {
			free(in->buf);
			return -EPROTO;
		}
		p->ninbox++;
	}
}

int
peer_poll(struct peer *p, int *source, int *tag, char **msg)
{
	int rc;

	*msg = NULL;
	if (p->selfhead < p->nselfq) {
		*source = p->rank;
		*tag = p->selfq[p->selfhead].tag;
		*msg = p->selfq[p->selfhead].msg;
		if (++p->selfhead == p->nselfq)
			p->selfhead = p->nselfq = 0;
		return 1;
	}
	if (!p->mpi)
		return 0;
	rc = progress_sends(p);
	if (rc == 0)
		rc = match_p2p(p);
	if (rc < 0)
		return rc;
	/* Deliver in the order messages were matched. */
	if (p->inhead < p->ninbox) {
		struct inbox *in = &p->inbox[p->inhead];
		int flag = 0;

		if (MPI_Test(&in->req, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS)
			return -EPROTO;
		if (!flag)
			return 0;
		*source = in->source;
		*tag = in->tag;
		*msg = in->buf;
		if (++p->inhead == p->ninbox)
			p->inhead = p->ninbox = 0;
		return 1;
	}
	return 0;
}

bool
peer_busy(const struct peer *p)
{
	return p->nsends > 0 || p->inhead < p->ninbox;
}

int
peer_sent(struct peer *p)
{
	int rc = progress_sends(p);

	return rc < 0 ? rc : p->nsends == 0;
}

/*
 * Reductions.  A buffer travels as ONE element of a contiguous datatype of
 * its whole length: MPI's algorithms split a count of doubles into
 * segments wherever the arithmetic falls (Open MPI 4.1 hands a
 * 28014-double buffer to the operator as 14007 + 7003 + ... on 4 ranks),
 * which would give the operator pieces of slots; one element cannot be
 * split.  MPI's operator receives no user pointer, only the datatype, so
 * one operator serves every reduction: each (combine function, length)
 * pair gets its own datatype, and this process-wide table finds the
 * function from it.  MPI state is per process anyway, and the agent has
 * one thread.
 */
struct reduce_kind {
	MPI_Datatype type;
	size_t len;
	peer_combine_fn *combine;
};

static struct reduce_kind *reduce_kinds;
static int nreduce_kinds;
static MPI_Op reduce_op = MPI_OP_NULL;

struct peer_bcast {
	char *buf;
	size_t len;
	MPI_Request req;
	bool done;
};

int
peer_bcast_start(struct peer *p, const void *buf, size_t len, struct peer_bcast **out)
{
	struct peer_bcast *b;

	*out = NULL;
	if (len > (size_t)INT_MAX)
		return -EMSGSIZE;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->len = len;
	b->buf = malloc(len > 0 ? len : 1);
	if (!b->buf) {
		free(b);
		return -ENOMEM;
	}
	if (p->rank == 0 && buf)
		memcpy(b->buf, buf, len);
	if (!p->mpi || p->size == 1 || len == 0) {
		b->done = true;
		*out = b;
		return 0;
	}
	if (MPI_Ibcast(b->buf, (int)len, MPI_CHAR, 0, MPI_COMM_WORLD, &b->req) != MPI_SUCCESS) {
		free(b->buf);
		free(b);
		return -EPROTO;
	}
	*out = b;
	return 0;
}

int
peer_bcast_test(struct peer_bcast *b)
{
	int flag = 0;

	if (b->done)
		return 1;
	if (MPI_Test(&b->req, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS)
		return -EPROTO;
	b->done = flag != 0;
	return b->done;
}

const void *
peer_bcast_data(const struct peer_bcast *b)
{
	return b->done ? b->buf : NULL;
}

size_t
peer_bcast_len(const struct peer_bcast *b)
{
	return b->len;
}

void
peer_bcast_free(struct peer_bcast *b)
{
	if (!b)
		return;
	if (b->done)
		free(b->buf);
	/* else MPI may still write it: left to the process exit */
	free(b);
}

struct tree;

struct peer_reduce {
	struct peer *p;
	size_t len, ngather;
	double *mem;           /* one block: send, result, gather send, gathered */
	double *result, *gathered;
	MPI_Request req[2];    /* allreduce, gather */
	bool part_done[2];
	bool done;
	struct tree *tree;     /* a reduction among some ranks (below), else NULL */
};

static int tree_test(struct peer_reduce *r);
static bool tree_release(struct peer_reduce *r);

static void
reduce_apply(void *in, void *inout, int *count, MPI_Datatype *type)
{
	for (int i = 0; i < nreduce_kinds; i++) {
		const struct reduce_kind *k = &reduce_kinds[i];

		if (k->type != *type)
			continue;
		for (int e = 0; e < *count; e++)
			k->combine((const double *)in + (size_t)e * k->len,
			           (double *)inout + (size_t)e * k->len, k->len);
		return;
	}
	/* Every type handed to MPI_Iallreduce with reduce_op is in the
	 * table, so this is unreachable. */
}

/* The datatype for COMBINE over LEN doubles, registered on first use. */
static int
reduce_type(peer_combine_fn *combine, size_t len, MPI_Datatype *out)
{
	struct reduce_kind *k;
	MPI_Datatype t;

	for (int i = 0; i < nreduce_kinds; i++) {
		if (reduce_kinds[i].combine == combine && reduce_kinds[i].len == len) {
			*out = reduce_kinds[i].type;
			return 0;
		}
	}
	if (reduce_op == MPI_OP_NULL &&
	    MPI_Op_create(reduce_apply, 1, &reduce_op) != MPI_SUCCESS) {
		reduce_op = MPI_OP_NULL;
		return -EPROTO;
	}
	k = realloc(reduce_kinds, (size_t)(nreduce_kinds + 1) * sizeof(*k));
	if (!k)
		return -ENOMEM;
	reduce_kinds = k;
	if (MPI_Type_contiguous((int)len, MPI_DOUBLE, &t) != MPI_SUCCESS)
		return -EPROTO;
	if (MPI_Type_commit(&t) != MPI_SUCCESS) {
		MPI_Type_free(&t);
		return -EPROTO;
	}
	k[nreduce_kinds++] = (struct reduce_kind){ t, len, combine };
	*out = t;
	return 0;
}

/*
 * The reductions' communicator is made (its MPI_Comm_idup() completed):
 * 1, 0 not yet, or -EPROTO.  Until it is, no other collective may start
 * on MPI_COMM_WORLD: the steps of the idup are collectives on it too,
 * started as it progresses, and a reduction started between two of them
 * on one rank and after them on another would meet the wrong one.
 */
static int
tree_comm_ready(struct peer *p)
{
	int flag = 0;

	if (p->tree_ok)
		return 1;
	if (MPI_Test(&p->tree_req, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS)
		return -EPROTO;
	if (!flag)
		return 0;
	p->tree_ok = true;
	MPI_Comm_set_errhandler(p->tree_comm, MPI_ERRORS_RETURN);
	return 1;
}

bool
peer_world_ready(struct peer *p)
{
	return !p->mpi || p->size == 1 || tree_comm_ready(p) == 1;
}

int
peer_reduce_start(struct peer *p, peer_combine_fn *combine, const double *buf,
                  size_t len, const double *gather, size_t ngather,
                  struct peer_reduce **out)
{
	struct peer_reduce *r;
	size_t total, ngathered = p->rank == 0 ? (size_t)p->size * ngather : 0;
	double *send, *gsend;
	MPI_Datatype type;
	int rc;

	*out = NULL;
	if (len == 0)
		return -EINVAL;
	if (len > (size_t)INT_MAX || ngather > (size_t)INT_MAX / (size_t)p->size)
		return -EMSGSIZE;
	if (p->mpi && p->size > 1 && (rc = tree_comm_ready(p)) <= 0)
		return rc < 0 ? rc : -EAGAIN;
	total = 2 * len + ngather + ngathered;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->mem = malloc(total * sizeof(*r->mem));
	if (!r->mem) {
		free(r);
		return -ENOMEM;
	}
	r->p = p;
	r->len = len;
	r->ngather = ngather;
	send = r->mem;
	r->result = send + len;
	gsend = r->result + len;
	r->gathered = p->rank == 0 ? gsend + ngather : NULL;
	memcpy(send, buf, len * sizeof(*buf));
	if (ngather)
		memcpy(gsend, gather, ngather * sizeof(*gather));
	if (!p->mpi || p->size == 1) {
		memcpy(r->result, send, len * sizeof(*send));
		if (ngather)
			memcpy(r->gathered, gsend, ngather * sizeof(*gsend));
		r->done = true;
		*out = r;
		return 0;
	}
	rc = reduce_type(combine, len, &type);
	if (rc < 0)
		goto fail;
	if (MPI_Iallreduce(send, r->result, 1, type, reduce_op, MPI_COMM_WORLD,
	                   &r->req[0]) != MPI_SUCCESS) {
		rc = -EPROTO;
		goto fail;
	}
	/* Started everywhere in the same order as the allreduce, so the two
	 * collectives match across ranks. */
	if (MPI_Igather(gsend, (int)ngather, MPI_DOUBLE, r->gathered, (int)ngather,
	                MPI_DOUBLE, 0, MPI_COMM_WORLD, &r->req[1]) != MPI_SUCCESS) {
		/* The allreduce is under way and cannot be taken back: its
		 * buffers stay with MPI. */
		free(r);
		return -EPROTO;
	}
	*out = r;
	return 0;
fail:
	free(r->mem);
	free(r);
	return rc;
}

int
peer_reduce_test(struct peer_reduce *r)
{
	if (r->tree)
		return tree_test(r);
	if (r->done)
		return 1;
	for (int i = 0; i < 2; i++) {
		int flag = 0;

		if (r->part_done[i])
			continue;
		if (MPI_Test(&r->req[i], &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS)
			return -EPROTO;
		r->part_done[i] = flag;
	}
	r->done = r->part_done[0] && r->part_done[1];
	return r->done;
}

const double *
peer_reduce_result(const struct peer_reduce *r)
{
	return r->done ? r->result : NULL;
}

const double *
peer_reduce_gathered(const struct peer_reduce *r)
{
	return r->done ? r->gathered : NULL;
}

void
peer_reduce_free(struct peer_reduce *r)
{
	if (!r)
		return;
	if (r->tree) {
		if (tree_release(r))
			free(r);
		return;
	}
	/* Collectives cannot be cancelled (MPI 3.1, 5.12): a pending one
	 * may still write its buffers, so they outlive R until exit. */
	if (r->done)
		free(r->mem);
	free(r);
}

/*
 * Reductions among some ranks: a binomial tree over the ranks listed, of
 * non-blocking point-to-point messages on a communicator of their own.
 * Each rank combines what its children send up with its own buffer and
 * sends that to its parent; the root's combination goes back down the
 * same tree; every non-root rank also sends its gathered values straight
 * to the root.  A rank left out of the list is never waited for, which is
 * the point: after a node is lost, the survivors go on among themselves,
 * and a collective over MPI_COMM_WORLD never would (MPI has no way to make
 * a communicator of the survivors without a blocking call, and one
 * survivor stalled in it would stall them all).
 *
 * Every message starts with the reduction's key, and its tag is made
 * from the key, so a message of a reduction given up (a restart) never
 * completes a later one: an old message that a receive matches anyway
 * (the tag wrapped) is recognised by its key, dropped, and the receive
 * posted again.
 */
enum { TREE_UP, TREE_DOWN, TREE_GATHER, TREE_PARTS };
#define TREE_TAG_BASE 1000
#define TREE_KEYS 9000       /* 1000 + 3 * 9000 < 32767, MPI's least MPI_TAG_UB */

struct tree_recv {
	MPI_Request req;
	int from, part, count;
	double *buf;           /* the key, then COUNT doubles */
	bool got;
};

struct tree {
	peer_combine_fn *combine;
	double key;
	int parent;            /* world rank; -1 at the root */
	int root;
	int *children;
	int nchildren;
	struct tree_recv *recvs;
	int nrecvs;
	MPI_Request *sends;
	int nsends;
	double *acc;           /* the key, then this subtree's combination */
	double *gsend;         /* the key, then this rank's gathered values */
	int waiting_up, waiting_gather;
	bool up_sent, have_result;
};

static int
tree_tag(const struct tree *t, int part)
{
	return TREE_TAG_BASE + 3 * (int)fmod(t->key, TREE_KEYS) + part;
}

static int
tree_post(struct peer_reduce *r, struct tree_recv *v)
{
	struct tree *t = r->tree;

	v->buf[0] = NAN;
	return MPI_Irecv(v->buf, v->count + 1, MPI_DOUBLE, v->from, tree_tag(t, v->part),
	                 r->p->tree_comm, &v->req) == MPI_SUCCESS ? 0 : -EPROTO;
}

static int
tree_send(struct peer_reduce *r, const double *buf, size_t count, int to, int part)
{
	struct tree *t = r->tree;

	return MPI_Isend(buf, (int)count + 1, MPI_DOUBLE, to, tree_tag(t, part), r->p->tree_comm,
	                 &t->sends[t->nsends++]) == MPI_SUCCESS ? 0 : -EPROTO;
}

/* A message arrived: take it in.  Returns 0 or a negative errno. */
static int
tree_take(struct peer_reduce *r, struct tree_recv *v)
{
	struct tree *t = r->tree;

	if (v->buf[0] != t->key)
		return tree_post(r, v);  /* a reduction given up earlier: dropped */
	v->got = true;
	switch (v->part) {
	case TREE_UP:
		t->combine(v->buf + 1, t->acc + 1, r->len);
		t->waiting_up--;
		break;
	case TREE_DOWN:
		r->result = v->buf + 1;
		t->have_result = true;
		for (int c = 0; c < t->nchildren; c++)
			if (tree_send(r, v->buf, r->len, t->children[c], TREE_DOWN) < 0)
				return -EPROTO;
		break;
	default:
		memcpy(r->gathered + (size_t)v->from * r->ngather, v->buf + 1,
		       r->ngather * sizeof(double));
		t->waiting_gather--;
		break;
	}
	return 0;
}

/* Sends in flight that completed are let go; true when none is left. */
static int
tree_sends_done(struct tree *t)
{
	for (int i = 0; i < t->nsends;) {
		int flag = 0;

		if (MPI_Test(&t->sends[i], &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS)
			return -EPROTO;
		if (flag)
			t->sends[i] = t->sends[--t->nsends];
		else
			i++;
	}
	return t->nsends == 0;
}

static void
tree_free(struct peer_reduce *r)
{
	struct tree *t = r->tree;

	for (int i = 0; i < t->nrecvs; i++)
		free(t->recvs[i].buf);
	free(t->recvs);
	free(t->sends);
	free(t->children);
	free(t->acc);
	free(t->gsend);
	free(t);
	free(r->gathered);
}

/* Reductions given up with sends in flight: let go of those now done. */
static void
tree_drain(struct peer *p)
{
	for (int i = 0; i < p->ndraining;) {
		struct peer_reduce *r = p->draining[i];

		if (tree_sends_done(r->tree) != 0) {
			tree_free(r);
			free(r);
			p->draining[i] = p->draining[--p->ndraining];
		} else {
			i++;
		}
	}
}

static int
tree_test(struct peer_reduce *r)
{
	struct tree *t = r->tree;
	int rc;

	tree_drain(r->p);
	if (tree_sends_done(t) < 0)
		return -EPROTO;
	if (r->done)
		return 1;
	for (int i = 0; i < t->nrecvs; i++) {
		struct tree_recv *v = &t->recvs[i];
		int flag = 0;

		if (v->got)
			continue;
		if (MPI_Test(&v->req, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS)
			return -EPROTO;
		if (flag && (rc = tree_take(r, v)) < 0)
			return rc;
	}
	if (t->waiting_up == 0 && !t->up_sent) {
		t->up_sent = true;
		if (t->parent < 0) {
			r->result = t->acc + 1;
			t->have_result = true;
			for (int c = 0; c < t->nchildren; c++)
				if (tree_send(r, t->acc, r->len, t->children[c], TREE_DOWN) < 0)
					return -EPROTO;
		} else if (tree_send(r, t->acc, r->len, t->parent, TREE_UP) < 0) {
			return -EPROTO;
		}
	}
	r->done = t->have_result && t->waiting_gather == 0;
	return r->done;
}

/* Let go of R's part in MPI; true when R may be freed now. */
static bool
tree_release(struct peer_reduce *r)
{
	struct tree *t = r->tree;
	struct peer *p = r->p;
	struct peer_reduce **d;

	/* A cancelled receive completes locally (MPI 3.1, 3.8.4). */
	for (int i = 0; i < t->nrecvs; i++) {
		if (t->recvs[i].got)
			continue;
		MPI_Cancel(&t->recvs[i].req);
		MPI_Wait(&t->recvs[i].req, MPI_STATUS_IGNORE);
		t->recvs[i].got = true;
	}
	if (tree_sends_done(t) != 0) {
		tree_free(r);
		return true;
	}
	/* A send to a peer that never receives it (lost, or it gave the
	 * reduction up too) stays: its buffer is MPI's until it completes,
	 * if ever.  One per peer that never answers, per restart. */
	d = realloc(p->draining, (size_t)(p->ndraining + 1) * sizeof(*d));
	if (!d)
		return false;  /* leaked to the process exit, safely */
	p->draining = d;
	d[p->ndraining++] = r;
	return false;
}

/* Where RANKS[0..N) puts this rank: its index, parent and children. */
static int
tree_shape(struct tree *t, const int *ranks, int n, int me_rank)
{
	int me = -1;

	for (int i = 0; i < n; i++) {
		if (i > 0 && ranks[i] <= ranks[i - 1])
			return -EINVAL;
		if (ranks[i] == me_rank)
			me = i;
	}
	if (me < 0)
		return -EINVAL;
	t->root = ranks[0];
	t->parent = me > 0 ? ranks[me & (me - 1)] : -1;
	t->children = calloc(32, sizeof(*t->children));
	if (!t->children)
		return -ENOMEM;
	for (int b = 1; b < n && !(me & b); b <<= 1)
		if (me + b < n)
			t->children[t->nchildren++] = ranks[me + b];
	return 0;
}

static int
tree_add_recv(struct peer_reduce *r, int from, int part, size_t count)
{
	struct tree_recv *v = &r->tree->recvs[r->tree->nrecvs];

	v->from = from;
	v->part = part;
	v->count = (int)count;
	v->buf = malloc((count + 1) * sizeof(double));
	if (!v->buf)
		return -ENOMEM;
	r->tree->nrecvs++;
	return tree_post(r, v);
}

/* The receives and the first sends of a reduction among RANKS[0..N). */
static int
tree_begin(struct peer_reduce *r, const int *ranks, int n)
{
	struct tree *t = r->tree;
	bool root = t->parent < 0;
	int rc = 0;

	t->recvs = calloc((size_t)(t->nchildren + 1 + (root ? n : 0)), sizeof(*t->recvs));
	t->sends = calloc((size_t)(t->nchildren + 2), sizeof(*t->sends));
	if (!t->recvs || !t->sends)
		return -ENOMEM;
	for (int c = 0; rc == 0 && c < t->nchildren; c++)
		rc = tree_add_recv(r, t->children[c], TREE_UP, r->len);
	t->waiting_up = t->nchildren;
	if (rc == 0 && !root)
		rc = tree_add_recv(r, t->parent, TREE_DOWN, r->len);
	for (int i = 1; rc == 0 && root && r->ngather > 0 && i < n; i++) {
		rc = tree_add_recv(r, ranks[i], TREE_GATHER, r->ngather);
		t->waiting_gather++;
	}
	if (rc == 0 && !root && r->ngather > 0)
		rc = tree_send(r, t->gsend, r->ngather, t->root, TREE_GATHER);
	return rc;
}

int
peer_reduce_start_among(struct peer *p, const int *ranks, int nranks, unsigned long key,
                        peer_combine_fn *combine, const double *buf, size_t len,
                        const double *gather, size_t ngather, struct peer_reduce **out)
{
	struct peer_reduce *r;
	struct tree *t;
	int rc;

	*out = NULL;
	if (len == 0 || nranks < 1)
		return -EINVAL;
	if (len >= (size_t)INT_MAX || ngather >= (size_t)INT_MAX / (size_t)p->size)
		return -EMSGSIZE;
	if (p->mpi && (rc = tree_comm_ready(p)) <= 0)
		return rc < 0 ? rc : -EAGAIN;
	r = calloc(1, sizeof(*r));
	t = calloc(1, sizeof(*t));
	if (!r || !t) {
		free(r);
		free(t);
		return -ENOMEM;
	}
	r->p = p;
	r->len = len;
	r->ngather = ngather;
	r->tree = t;
	t->combine = combine;
	t->key = (double)key;
	t->acc = malloc((len + 1) * sizeof(double));
	t->gsend = malloc((ngather + 1) * sizeof(double));
	rc = t->acc && t->gsend ? tree_shape(t, ranks, nranks, p->rank) : -ENOMEM;
	if (rc == 0 && t->parent < 0) {
		r->gathered = malloc((size_t)p->size * (ngather ? ngather : 1) * sizeof(double));
		if (!r->gathered)
			rc = -ENOMEM;
		for (size_t i = 0; r->gathered && i < (size_t)p->size * ngather; i++)
			r->gathered[i] = NAN;
	}
	if (rc < 0) {
		tree_free(r);
		free(r);
		return rc;
	}
	t->acc[0] = t->gsend[0] = t->key;
	memcpy(t->acc + 1, buf, len * sizeof(*buf));
	if (ngather) {
		memcpy(t->gsend + 1, gather, ngather * sizeof(*gather));
		if (r->gathered)
			memcpy(r->gathered + (size_t)p->rank * ngather, gather,
			       ngather * sizeof(*gather));
	}
	rc = nranks > 1 ? tree_begin(r, ranks, nranks) : 0;
	if (rc == 0)
		rc = tree_test(r) < 0 ? -EPROTO : 0;
	if (rc < 0) {
		if (tree_release(r))
			free(r);
		return rc;
	}
	*out = r;
	return 0;
}

/* Release the reductions' operator and datatypes (MPI still running). */
static void
reduce_release(void)
{
	for (int i = 0; i < nreduce_kinds; i++)
		MPI_Type_free(&reduce_kinds[i].type);
	free(reduce_kinds);
	reduce_kinds = NULL;
	nreduce_kinds = 0;
	if (reduce_op != MPI_OP_NULL)
		MPI_Op_free(&reduce_op);
	reduce_op = MPI_OP_NULL;
}

/*
 * A wait that blocks, at the end: MPI_Test, then a short sleep between
 * tries.  peer_init() turns Open MPI's yielding off for the agent's fast
 * looks, so MPI_Wait here would spin a whole time slice at a time; where
 * ranks outnumber cores the ranks it waits for need that core (a check of
 * 64 ranks on 2 cores took twice an MPI program's own start).  The sleep
 * grows from 50 us to 1 ms: the request is usually done at once.
 */
static int
wait_yielding(MPI_Request *req)
{
	struct timespec ts = { 0, 50000 };
	int flag = 0;

	for (;;) {
		if (MPI_Test(req, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS)
			return -EPROTO;
		if (flag)
			return 0;
		(void)nanosleep(&ts, NULL);
		if (ts.tv_nsec < 1000000)
			ts.tv_nsec *= 2;
	}
}

void
peer_finalize(struct peer *p, bool clean)
{
	if (!p)
		return;
	/* Unclean: a reduction may still be pending with a lost peer, and its
	 * operator and datatype must not vanish under it; the process exit
	 * takes them. */
	if (p->mpi && clean) {
		reduce_release();
		/* Every peer is alive and here too: its communicator is made
		 * (MPI_Finalize must find no collective pending), then freed. */
		if (p->tree_ok || wait_yielding(&p->tree_req) == 0)
			MPI_Comm_free(&p->tree_comm);
		MPI_Finalize();
	}
	/* Sends that never completed stay with MPI (a dead receiver); their
	 * buffers are left to the process exit. */
	if (clean || !p->mpi) {
		for (int i = 0; i < p->nsends; i++)
			free(p->sends[i].buf);
	}
	for (int i = p->selfhead; i < p->nselfq; i++)
		free(p->selfq[i].msg);
	free(p->selfq);
	free(p->draining);  /* their buffers may still be MPI's: left to the exit */
	free(p->sends);
	free(p->inbox);
	free(p);
}

void
peer_abort(struct peer *p, int code)
{
	if (p && p->mpi) {
		fflush(NULL);  /* MPI_Abort does not come back */
		MPI_Abort(MPI_COMM_WORLD, code);
	}
	peer_finalize(p, false);
}
