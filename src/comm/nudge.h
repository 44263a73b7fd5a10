/*
 * nudge.h - wake-ups between agents: a datagram that says "look at MPI now".
 *
 * MPI is not a descriptor the loop can wait on, so an idle agent looks at
 * it every 80 ms (run.c) and a command or a fault note would wait up to
 * that long.  Beside every message that needs a quick answer, the sender
 * also sends one UDP datagram to the receiver's nudge socket; the datagram
 * carries nothing (the message itself still travels through MPI), it only
 * makes the receiver's loop wake and read MPI at once.  A datagram lost,
 * blocked by a firewall or never sent changes nothing but the delay: the
 * 80 ms look still runs.  Datagrams from anyone else do no more than that
 * either; at most NUDGE_DRAIN_MAX are read per wake-up.
 *
 * Addresses are numeric IPv4 "A.B.C.D:PORT" (never resolved in the loop).
 */
#ifndef VIGIL_NUDGE_H
#define VIGIL_NUDGE_H

#include <stddef.h>

#define NUDGE_DRAIN_MAX 64

struct nudge;

/* A socket on every local IPv4 address and a port the kernel chooses, and
 * an empty table of where N ranks listen.  0 or a negative errno. */
int nudge_open(int n, struct nudge **out);
void nudge_free(struct nudge *nd);   /* NULL is a no-op */

int nudge_fd(const struct nudge *nd);

/* "A.B.C.D:PORT" for this socket, ADDR being this node's numeric IPv4
 * address for HOST (its name if that resolves off the loopback, else the
 * first interface up that is not the loopback, else 127.0.0.1). */
int nudge_self(const struct nudge *nd, const char *host, char *buf, size_t len);

/* Where RANK listens ("A.B.C.D:PORT").  -EINVAL for anything else or a
 * rank outside the table; NULL forgets the rank. */
int nudge_set(struct nudge *nd, int rank, const char *where);

/* One datagram to RANK, never blocking.  0 when sent, -ENOENT when the rank
 * has no address, or the negative errno of sendto (the caller ignores it:
 * the message goes through MPI all the same). */
int nudge_send(struct nudge *nd, int rank);

/* Read and drop what arrived (at most NUDGE_DRAIN_MAX datagrams); the
 * number read. */
int nudge_drain(struct nudge *nd);

#endif
