/*
 * peer.h - the agents' conversation over MPI.
 *
 * The only module that calls MPI.  When vigil was not started by an MPI
 * launcher (Slurm's HealthCheckProgram, a shell) no MPI is initialised and
 * the peer is a world of one: rank 0, size 1, coordinator.
 *
 * Nothing here waits in a blocking MPI call on a peer that may be gone:
 * exchanges are non-blocking requests driven by *_progress() with a
 * deadline, so a hung or stopped node costs its peers a timeout, never a
 * hang.  Functions are not reentrant and must be called from the agent's
 * one thread.
 */
#ifndef VIGIL_PEER_H
#define VIGIL_PEER_H

#include <stdbool.h>
#include <stddef.h>

struct peer;
struct peer_gather;

/*
 * True when the environment shows an MPI launcher started this process
 * (Open MPI's OMPI_COMM_WORLD_SIZE, PMIx's PMIX_RANK, PMI's PMI_RANK).
 * VIGIL_MPI=0 or =1 overrides the guess.
 */
bool peer_launched(void);

/*
 * Start MPI when peer_launched(), else make a world of one.  Returns 0 or
 * a negative errno (-EPROTO when MPI_Init fails).  The caller owns *out.
 */
int peer_init(int *argc, char ***argv, struct peer **out);

int peer_rank(const struct peer *p);
int peer_size(const struct peer *p);
bool peer_is_mpi(const struct peer *p);

/*
 * Start gathering one NUL-terminated string from every rank at rank 0.
 * Every rank calls it once with its own string, which is copied.  Returns
 * 0 or a negative errno; *out is owned by the caller until
 * peer_gather_free().
 */
int peer_gather_start(struct peer *p, const char *mine, struct peer_gather **out);

/*
 * Advance the exchange without blocking.  Returns 1 when complete (rank 0:
 * every string arrived; other ranks: the send completed), 0 while pending,
 * or a negative errno if MPI reported an error.
 */
int peer_gather_progress(struct peer_gather *g);

/*
 * Rank 0 only: the string from RANK, or NULL if it has not arrived.  The
 * string stays owned by G.
 */
const char *peer_gather_get(const struct peer_gather *g, int rank);

/*
 * Release the exchange.  Requests that never completed are left to MPI
 * (a send to a coordinator that is gone cannot be taken back); the process
 * is then expected to exit without peer_finalize(..., true).
 */
void peer_gather_free(struct peer_gather *g);

/*
 * Point-to-point messages: NUL-terminated strings (JSON documents in
 * practice) with a tag from PEER_TAG_MIN to PEER_TAG_MAX, for commands
 * and results while a job runs.  What each tag means is msg.h's business.
 */
#define PEER_TAG_MIN 10
#define PEER_TAG_MAX 31

/*
 * Queue MSG (copied) for RANK with TAG and start sending it.  Never waits
 * for the receiver.  Sending to oneself is allowed.  Returns 0 or a
 * negative errno.
 */
int peer_send(struct peer *p, int rank, int tag, const char *msg);

/*
 * Run MPI's progress once for the message peer_send() queued last, so that
 * a small one is with its receiver now rather than at this process's next
 * look at MPI: one call, whatever else is in flight.  A wake-up sent beside
 * it (nudge.h) then finds it there.  0 or a negative errno.
 */
int peer_push(struct peer *p);

/*
 * Take one complete incoming message, without blocking: returns 1 and sets
 * *SOURCE, *TAG and *MSG (malloc'd, the caller frees), or 0 when none has
 * completed, or a negative errno.  Also advances pending sends.
 */
int peer_poll(struct peer *p, int *source, int *tag, char **msg);

/* Sends and receives still in flight: the loop then polls MPI often. */
bool peer_busy(const struct peer *p);

/*
 * Advance the queued sends without blocking: 1 when every one has
 * completed, 0 while some are in flight, or a negative errno.  Receives
 * nothing.  A caller that must see its words leave (before it exits)
 * calls it from its loop until 1 or a deadline.
 */
int peer_sent(struct peer *p);

/*
 * Whether rank 0 may start a collective on MPI_COMM_WORLD now (a
 * broadcast, a reduction over every rank): the communicator of
 * peer_reduce_start_among(), whose making starts in peer_init(), is made
 * here.  Its steps are collectives on MPI_COMM_WORLD too, which Open MPI
 * starts as it progresses, so one started between two of them on one rank
 * and after them on another would meet the wrong one; once it is made on
 * rank 0, every rank has started its last step.  True without MPI.
 */
bool peer_world_ready(struct peer *p);

/*
 * A broadcast of one block of bytes from rank 0 to every rank
 * (MPI_Ibcast, a tree: rank 0 sends O(log N) copies, not N).  Every rank
 * must start it, in the same order as the other collectives; a rank that
 * never does holds back the ranks below it in the tree, so start one only
 * when every rank is known to be there to take part, and on rank 0 only
 * once peer_world_ready().  Rank 0 passes BUF
 * (LEN bytes, copied); the others pass NULL and the same LEN.  Returns 0
 * or a negative errno (-EMSGSIZE beyond MPI's counts, -EPROTO when MPI
 * refused); *OUT is owned by the caller until peer_bcast_free().
 */
struct peer_bcast;

int peer_bcast_start(struct peer *p, const void *buf, size_t len, struct peer_bcast **out);

/* 1 when complete on this rank, 0 while pending, or a negative errno.  Never blocks. */
int peer_bcast_test(struct peer_bcast *b);

/* The bytes (owned by B), once complete; else NULL.  Their number: LEN. */
const void *peer_bcast_data(const struct peer_bcast *b);
size_t peer_bcast_len(const struct peer_bcast *b);

/* Release B; one still pending is left to MPI (no MPI_Finalize then), as a reduction. */
void peer_bcast_free(struct peer_bcast *b);

/*
 * Reductions for performance data: every rank contributes a buffer of
 * doubles and every rank receives the buffers combined, while rank 0 also
 * collects a few values from each rank (MPI_Iallreduce and MPI_Igather,
 * started together).  Every rank must start its reductions in the same
 * order, one at a time; a rank that never starts one leaves the others'
 * pending, never blocked.
 */
struct peer_reduce;

/*
 * The reduction's operator: combine IN into INOUT, LEN doubles.  It must
 * be commutative and associative; it is always handed whole buffers (the
 * buffer travels as one element of a derived type, so MPI never splits it
 * at a point the operator could not recognise).  Called from inside MPI
 * while a reduction progresses: it must not call MPI.
 */
typedef void peer_combine_fn(const double *in, double *inout, size_t len);

/*
 * Start combining BUF[LEN] doubles across every rank with COMBINE, and
 * gathering GATHER[NGATHER] doubles from every rank at rank 0 (NGATHER
 * the same everywhere; 0 gathers nothing).  Both inputs are copied.  In a
 * world of one the reduction is complete at once (COMBINE over one buffer
 * is the identity and is not called).  Returns 0 or a negative errno
 * (-EINVAL for LEN 0, -EMSGSIZE beyond MPI's counts, -EPROTO when MPI
 * refused, -EAGAIN while the communicator of peer_reduce_start_among()
 * is being made: no collective may start on MPI_COMM_WORLD before; try
 * again later); *OUT is owned by the caller until peer_reduce_free().
 *
 * MPI's operator cannot carry a pointer, so COMBINE is remembered in a
 * table local to this process, keyed by the datatype MPI hands back to
 * the operator: several combine functions and buffer lengths may be in
 * use, each pair registered once and released by peer_finalize().
 */
int peer_reduce_start(struct peer *p, peer_combine_fn *combine,
                      const double *buf, size_t len,
                      const double *gather, size_t ngather,
                      struct peer_reduce **out);

/*
 * Advance the reduction without blocking: 1 when both parts completed on
 * this rank, 0 while pending (a stalled or lost rank keeps it pending
 * forever), or a negative errno if MPI reported an error.
 */
int peer_reduce_test(struct peer_reduce *r);

/* The combined buffer (LEN doubles, owned by R), once complete; else NULL. */
const double *peer_reduce_result(const struct peer_reduce *r);

/*
 * Rank 0, once complete: every rank's NGATHER doubles in rank order
 * (size * NGATHER, owned by R).  NULL on other ranks or while pending.
 */
const double *peer_reduce_gathered(const struct peer_reduce *r);

/*
 * Release R.  A pending reduction cannot be cancelled (MPI has no cancel
 * for collectives): its buffers are left to MPI, which may still write
 * them, until the process exits, and the process is then expected to end
 * without peer_finalize(..., true).
 */
void peer_reduce_free(struct peer_reduce *r);

/*
 * Like peer_reduce_start(), among RANKS[0..NRANKS) only (ascending; this
 * rank among them; RANKS[0] gathers), so that a rank left out is never
 * waited for: after a node is lost, the survivors reduce among themselves.
 * The messages go along a binomial tree of non-blocking point-to-point
 * sends on a communicator of their own (its making starts in peer_init(),
 * without waiting; -EAGAIN until every rank has made its part: try again
 * later), so nothing waits in a blocking call.  KEY tells this
 * reduction's messages apart: the same on every rank for the same
 * reduction, different from any reduction given up before (a reduction
 * given up on one rank and not another must not meet a later one).  The
 * gathered rows (RANKS[0] only) of ranks outside RANKS are NaN.  A rank
 * in RANKS that never starts its part keeps the reduction pending (never
 * blocked); peer_reduce_free() then cancels what waits for it.  -EINVAL
 * when this rank is not in RANKS or RANKS is not ascending.
 */
int peer_reduce_start_among(struct peer *p, const int *ranks, int nranks, unsigned long key,
                            peer_combine_fn *combine, const double *buf, size_t len,
                            const double *gather, size_t ngather, struct peer_reduce **out);

/*
 * End MPI.  CLEAN true calls MPI_Finalize, which in Open MPI synchronises
 * with every rank and so must only be called when every peer is known to
 * be alive; false leaves MPI without finalizing (the launcher then sees the
 * exit as abnormal, which is the truth).  Releases the reductions'
 * operator and datatypes.  Frees P.
 */
void peer_finalize(struct peer *p, bool clean);

/*
 * End the whole job at its launcher with CODE: MPI_Abort(MPI_COMM_WORLD,
 * CODE), after which mpirun kills every other rank (a stopped one too)
 * and exits with CODE.  For the coordinator whose job lost a node: its
 * status would otherwise be lost, as mpirun counts any rank that leaves
 * without MPI_Finalize a failure (status 1).  Open MPI prints a banner
 * for it.  Without MPI, frees P and returns; with MPI it does not return.
 */
void peer_abort(struct peer *p, int code);

#endif
