/*
 * nudge.c - wake-ups between agents (nudge.h).
 *
 * One non-blocking UDP socket per agent, bound to the address its MPI
 * uses; the table of where each rank listens is an array indexed by rank,
 * so a nudge costs one sendto() whatever the job's size, and a sorted copy
 * of it says in O(log N) whether a datagram came from one of the job's
 * agents.
 */
#include "autoconf.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "comm/nudge.h"
#include "lib/log.h"
#include "lib/loop.h"
#include "lib/util.h"

struct nudge {
	int fd;
	int port;
	int n;
	struct in_addr bound;     /* INADDR_ANY only after a failed bind */
	struct sockaddr_in *to;   /* by rank; sin_port 0: unknown */
	uint64_t *peers;          /* the known addresses of TO as keys, sorted */
	size_t npeers;
	bool dirty;               /* TO changed since PEERS was sorted */

	struct loop *loop;        /* nudge_watch()'s */
	struct loop_timer *pause; /* not read until it fires */
	bool window;              /* the pause is a peer's busy window */
	long window_ms;
	nudge_fn *fn;
	void *arg;
	struct nudge_stats stats;
};

/* ---- the address --------------------------------------------------------- */

/* Whether ADDR is in the subnet "A.B.C.D/BITS" of TOKEN (false when TOKEN
 * is not one). */
static bool
in_subnet(const char *token, struct in_addr addr)
{
	char net[INET_ADDRSTRLEN];
	const char *slash = strchr(token, '/');
	struct in_addr a;
	char *end;
	long bits;
	uint32_t mask;

	if (!slash || (size_t)(slash - token) >= sizeof(net))
		return false;
	memcpy(net, token, (size_t)(slash - token));
	net[slash - token] = '\0';
	bits = strtol(slash + 1, &end, 10);
	if (*end || end == slash + 1 || bits < 0 || bits > 32 || inet_pton(AF_INET, net, &a) != 1)
		return false;
	mask = bits == 0 ? 0 : htonl(~0u << (32 - bits));
	return (addr.s_addr & mask) == (a.s_addr & mask);
}

/*
 * The first IPv4 address of an interface that Open MPI's if_include value
 * SPEC names: interface names ("eth0") or subnets ("10.1.0.0/16"),
 * comma-separated.  0 with *OUT, or -ENOENT.
 */
static int
address_in_spec(const char *spec, struct in_addr *out)
{
	char copy[512], *save = NULL;
	struct ifaddrs *ifa = NULL;
	int rc = -ENOENT;

	if (snprintf(copy, sizeof(copy), "%s", spec) >= (int)sizeof(copy) || getifaddrs(&ifa) < 0)
		return -ENOENT;
	for (char *t = strtok_r(copy, ", ", &save); t && rc < 0; t = strtok_r(NULL, ", ", &save)) {
		for (struct ifaddrs *i = ifa; i && rc < 0; i = i->ifa_next) {
			struct in_addr a;

			if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET)
				continue;
			a = ((const struct sockaddr_in *)(const void *)i->ifa_addr)->sin_addr;
			if (strchr(t, '/') ? in_subnet(t, a) : strcmp(i->ifa_name, t) == 0) {
				*out = a;
				rc = 0;
			}
		}
	}
	freeifaddrs(ifa);
	return rc;
}

/*
 * The address the agents' MPI uses: the interface Open MPI's TCP
 * transports are told to use (OMPI_MCA_btl_tcp_if_include, then
 * OMPI_MCA_oob_tcp_if_include), else the address of HOST that other
 * nodes reach this one by (util_local_address(), the one exchanged in
 * the gather).  WHENCE says which, for people.
 */
static int
choose_address(const char *host, struct in_addr *out, char *whence, size_t len)
{
	static const char *const vars[] = {
		"OMPI_MCA_btl_tcp_if_include", "OMPI_MCA_oob_tcp_if_include",
	};
	char addr[INET_ADDRSTRLEN];

	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		const char *spec = getenv(vars[i]);

		if (spec && *spec && address_in_spec(spec, out) == 0) {
			snprintf(whence, len, "%s=%.100s", vars[i], spec);
			return 0;
		}
	}
	util_local_address(host ? host : "localhost", true, addr, sizeof(addr));
	snprintf(whence, len, "the address of %.100s", host ? host : "this host");
	return inet_pton(AF_INET, addr, out) == 1 ? 0 : -EINVAL;
}

/* ---- the socket ------------------------------------------------------------ */

static int
bind_to(int fd, struct in_addr a)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr = a };

	return bind(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 ? -errno : 0;
}

int
nudge_open(int n, const char *host, struct nudge **out)
{
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);
	char whence[160], addr[INET_ADDRSTRLEN];
	struct nudge *nd;
	int rc;

	*out = NULL;
	if (n < 1)
		return -EINVAL;
	nd = calloc(1, sizeof(*nd));
	if (!nd)
		return -ENOMEM;
	nd->n = n;
	nd->to = calloc((size_t)n, sizeof(*nd->to));
	nd->peers = calloc((size_t)n, sizeof(*nd->peers));
	nd->fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (!nd->to || !nd->peers || nd->fd < 0) {
		rc = nd->to && nd->peers ? -errno : -ENOMEM;
		nudge_free(nd);
		return rc;
	}
	rc = choose_address(host, &nd->bound, whence, sizeof(whence));
	if (rc == 0)
		rc = bind_to(nd->fd, nd->bound);
	if (rc < 0) {
		/* Every address, as before: still only the job's agents are
		 * heard (nudge_drain()), but any host may make us read. */
		inet_ntop(AF_INET, &nd->bound, addr, sizeof(addr));
		LOG_WARN("cannot bind the nudge socket to %s (%s): %s; bound to every address "
		         "instead", addr, whence, strerror(-rc));
		nd->bound.s_addr = htonl(INADDR_ANY);
		rc = bind_to(nd->fd, nd->bound);
	}
	if (rc < 0 || getsockname(nd->fd, (struct sockaddr *)&sin, &len) < 0) {
		rc = rc < 0 ? rc : -errno;
		nudge_free(nd);
		return rc;
	}
	nd->port = ntohs(sin.sin_port);
	inet_ntop(AF_INET, &nd->bound, addr, sizeof(addr));
	LOG_INFO("nudges arrive at %s:%d (%s), taken from this job's agents only", addr,
	         nd->port, whence);
	*out = nd;
	return 0;
}

void
nudge_free(struct nudge *nd)
{
	if (!nd)
		return;
	if (nd->loop) {
		loop_del_timer(nd->loop, nd->pause);
		(void)loop_del_fd(nd->loop, nd->fd);
	}
	if (nd->stats.taken || nd->stats.dropped)
		LOG_INFO("nudges: %llu from this job's agents (%llu busy window%s), %llu "
		         "datagram%s from elsewhere dropped", nd->stats.taken, nd->stats.windows,
		         util_plural((long long)nd->stats.windows), nd->stats.dropped,
		         util_plural((long long)nd->stats.dropped));
	if (nd->fd >= 0)
		close(nd->fd);
	free(nd->to);
	free(nd->peers);
	free(nd);
}

int
nudge_fd(const struct nudge *nd)
{
	return nd->fd;
}

int
nudge_self(const struct nudge *nd, const char *host, char *buf, size_t len)
{
	char addr[INET_ADDRSTRLEN];
	int w;

	if (nd->bound.s_addr != htonl(INADDR_ANY))
		inet_ntop(AF_INET, &nd->bound, addr, sizeof(addr));
	else
		util_local_address(host, true, addr, sizeof(addr));
	w = snprintf(buf, len, "%s:%d", addr, nd->port);
	return w < 0 || (size_t)w >= len ? -ENOSPC : 0;
}

int
nudge_set(struct nudge *nd, int rank, const char *where)
{
	char addr[INET_ADDRSTRLEN];
	struct sockaddr_in sin = { .sin_family = AF_INET };
	const char *colon;
	char *end;
	long port;

	if (rank < 0 || rank >= nd->n)
		return -EINVAL;
	if (!where) {
		memset(&nd->to[rank], 0, sizeof(nd->to[rank]));
		nd->dirty = true;
		return 0;
	}
	colon = strrchr(where, ':');
	if (!colon || colon == where || (size_t)(colon - where) >= sizeof(addr))
		return -EINVAL;
	memcpy(addr, where, (size_t)(colon - where));
	addr[colon - where] = '\0';
	errno = 0;
	port = strtol(colon + 1, &end, 10);
	if (errno || end == colon + 1 || *end || port < 1 || port > 65535 ||
	    inet_pton(AF_INET, addr, &sin.sin_addr) != 1)
		return -EINVAL;
	sin.sin_port = htons((uint16_t)port);
	nd->to[rank] = sin;
	nd->dirty = true;
	return 0;
}

int
nudge_send(struct nudge *nd, int rank)
{
	static const char byte = '!';

	if (rank < 0 || rank >= nd->n || nd->to[rank].sin_port == 0)
		return -ENOENT;
	if (sendto(nd->fd, &byte, 1, MSG_DONTWAIT | MSG_NOSIGNAL,
	           (const struct sockaddr *)&nd->to[rank], sizeof(nd->to[rank])) < 0)
		return -errno;
	return 0;
}

/* ---- who may nudge ----------------------------------------------------------- */

static uint64_t
key_of(const struct sockaddr_in *sin)
{
	return (uint64_t)ntohl(sin->sin_addr.s_addr) << 16 | ntohs(sin->sin_port);
}

static int
cmp_key(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Whether FROM is where one of the job's agents sends from: its nudge
 * socket, whose address and port it told us (nudge_set()). */
static bool
from_peer(struct nudge *nd, const struct sockaddr_in *from)
{
	uint64_t key = key_of(from);

	if (nd->dirty) {
		/* sorted once after the table changes (the gather sets every
		 * rank at once), not once per rank set */
		nd->npeers = 0;
		for (int r = 0; r < nd->n; r++)
			if (nd->to[r].sin_port)
				nd->peers[nd->npeers++] = key_of(&nd->to[r]);
		qsort(nd->peers, nd->npeers, sizeof(*nd->peers), cmp_key);
		nd->dirty = false;
	}
	return bsearch(&key, nd->peers, nd->npeers, sizeof(key), cmp_key) != NULL;
}

/* What one datagram from elsewhere is worth: counted, and said once. */
static void
dropped(struct nudge *nd, const struct sockaddr_in *from)
{
	char addr[INET_ADDRSTRLEN];

	if (nd->stats.dropped++ == 0) {
		inet_ntop(AF_INET, &from->sin_addr, addr, sizeof(addr));
		LOG_INFO("a nudge datagram from %s:%d dropped: not from this job's agents (more "
		         "are counted, not said)", addr, ntohs(from->sin_port));
	}
}

int
nudge_drain(struct nudge *nd)
{
	struct sockaddr_in from;
	socklen_t len;
	char buf[64];
	int k = 0, taken = 0;

	while (k < NUDGE_DRAIN_MAX) {
		len = sizeof(from);
		if (recvfrom(nd->fd, buf, sizeof(buf), MSG_DONTWAIT, (struct sockaddr *)&from,
		             &len) < 0)
			break;
		k++;
		if (len == sizeof(from) && from.sin_family == AF_INET && from_peer(nd, &from)) {
			taken++;
			nd->stats.taken++;
		} else {
			dropped(nd, &from);
		}
	}
	nd->stats.reads += (unsigned long long)k;
	return taken;
}

/* ---- in the loop ------------------------------------------------------------- */

static void
rearm(struct nudge *nd)
{
	nd->pause = NULL;
	nd->window = false;
	(void)loop_mod_fd(nd->loop, nd->fd, POLLIN);  /* registered: cannot fail */
}

static long
pause_over(struct loop *l, void *arg)
{
	(void)l;
	rearm(arg);
	return LOOP_NOMORE;
}

/*
 * Datagrams: the job's agents' open a busy window (the caller's FN), and
 * whatever came, the socket is not read again until the window has passed
 * (or nudge_resume()): what arrives meanwhile waits in the kernel, which
 * drops what does not fit, and is read in one go afterwards.  So a flood,
 * from anyone, costs one read of NUDGE_DRAIN_MAX datagrams per window.
 */
static void
on_readable(struct loop *l, int fd, short revents, void *arg)
{
	struct nudge *nd = arg;
	unsigned long long before = nd->stats.reads;
	int taken;

	(void)fd;
	(void)revents;
	taken = nudge_drain(nd);
	if (nd->stats.reads == before)
		return;
	if (loop_mod_fd(l, nd->fd, 0) == 0)
		nd->pause = loop_add_timer(l, nd->window_ms, pause_over, nd);
	if (!nd->pause)
		(void)loop_mod_fd(l, nd->fd, POLLIN);  /* no timer (ENOMEM): read on */
	nd->window = taken > 0 && nd->pause;
	if (taken > 0) {
		nd->stats.windows++;
		nd->fn(nd->arg);
	}
}

int
nudge_watch(struct nudge *nd, struct loop *l, long window_ms, nudge_fn *fn, void *arg)
{
	int rc;

	if (nd->loop || !fn || window_ms < 1)
		return -EINVAL;
	rc = loop_add_fd(l, nd->fd, POLLIN, on_readable, nd);
	if (rc < 0)
		return rc;
	nd->loop = l;
	nd->window_ms = window_ms;
	nd->fn = fn;
	nd->arg = arg;
	return 0;
}

void
nudge_resume(struct nudge *nd)
{
	if (!nd || !nd->pause || !nd->window)
		return;
	loop_del_timer(nd->loop, nd->pause);
	rearm(nd);
}

void
nudge_get_stats(const struct nudge *nd, struct nudge_stats *out)
{
	*out = nd->stats;
}
