/*
 * nudge.h - wake-ups between agents: a datagram that says "look at MPI now".
 *
 * MPI is not a descriptor the loop can wait on, so an idle agent looks at
 * it every 80 ms (run.c) and a command or a fault note would wait up to
 * that long.  Beside every message that needs a quick answer, the sender
 * also sends one UDP datagram to the receiver's nudge socket; the datagram
 * carries nothing (the message itself still travels through MPI), it only
 * makes the receiver's loop look at MPI at once, and often for a short
 * busy window after (the datagram may overtake its message).  A datagram
 * lost, blocked by a firewall or never sent changes nothing but the
 * delay: the 80 ms look still runs.
 *
 * Who can nudge: the socket is bound to the address the agents' MPI uses
 * (nudge_open()), and only datagrams from the address and port of another
 * agent's nudge socket (nudge_set()) open a window; the rest are read and
 * dropped, counted.  Whatever arrives, the socket is not read again until
 * the window has passed, so a flood, forged or not, costs at most what one
 * nudge costs per window: never a decision, at most an early look at MPI.
 *
 * Addresses are numeric IPv4 "A.B.C.D:PORT" (never resolved in the loop).
 */
#ifndef VIGIL_NUDGE_H
#define VIGIL_NUDGE_H

#include <stddef.h>

#define NUDGE_DRAIN_MAX 64

struct nudge;
struct loop;

/*
 * A socket on the address the agents' MPI uses, and an empty table of
 * where N ranks listen.  The address: the first interface (a name) or
 * subnet (A.B.C.D/BITS) of OMPI_MCA_btl_tcp_if_include, else of
 * OMPI_MCA_oob_tcp_if_include, that has an IPv4 address here; else the
 * address other nodes reach HOST by (util_local_address(): HOST's own
 * when it resolves off the loopback, else the first interface up that is
 * not the loopback, else 127.0.0.1).  When that address cannot be bound,
 * every address is, with a warning.  The port is the kernel's choice.
 * Says where at info level (-v).  0 or a negative errno.
 */
int nudge_open(int n, const char *host, struct nudge **out);

/* Unregisters it from its loop; at info level, says what it took and
 * dropped.  NULL is a no-op. */
void nudge_free(struct nudge *nd);

int nudge_fd(const struct nudge *nd);

/* "A.B.C.D:PORT" for this socket: the address it is bound to, or after
 * the fallback HOST's numeric address as nudge_open() chooses it. */
int nudge_self(const struct nudge *nd, const char *host, char *buf, size_t len);

/* Where RANK listens, and sends from ("A.B.C.D:PORT").  -EINVAL for
 * anything else or a rank outside the table; NULL forgets the rank. */
int nudge_set(struct nudge *nd, int rank, const char *where);

/* One datagram to RANK, never blocking.  0 when sent, -ENOENT when the rank
 * has no address, or the negative errno of sendto (the caller ignores it:
 * the message goes through MPI all the same). */
int nudge_send(struct nudge *nd, int rank);

/* Read and drop what arrived (at most NUDGE_DRAIN_MAX datagrams); the
 * number that came from the ranks in the table (the others are counted
 * as dropped). */
int nudge_drain(struct nudge *nd);

typedef void nudge_fn(void *arg);

/*
 * Watch ND in loop L: when datagrams from the table's ranks arrive, FN(ARG)
 * is called once (the caller looks at MPI often for WINDOW_MS); after any
 * read, the socket is left unread for WINDOW_MS, or until
 * nudge_resume().  0, or -EINVAL (already watched, no FN, WINDOW_MS < 1),
 * or loop_add_fd()'s error.
 */
int nudge_watch(struct nudge *nd, struct loop *l, long window_ms, nudge_fn *fn, void *arg);

/* What a window announced has come: read the socket again now rather than
 * at the window's end (a pause after datagrams from elsewhere runs its
 * course).  NULL or an unpaused ND: a no-op. */
void nudge_resume(struct nudge *nd);

struct nudge_stats {
	unsigned long long reads;    /* datagrams read */
	unsigned long long taken;    /* of them from the job's agents */
	unsigned long long dropped;  /* of them from elsewhere */
	unsigned long long windows;  /* busy windows opened (FN calls) */
};

void nudge_get_stats(const struct nudge *nd, struct nudge_stats *out);

#endif
