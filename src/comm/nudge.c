/*
 * nudge.c - wake-ups between agents (nudge.h).
 *
 * One non-blocking UDP socket per agent; the table of where each rank
 * listens is an array indexed by rank, so a nudge costs one sendto()
 * whatever the job's size.
 */
#include "autoconf.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "comm/nudge.h"
#include "lib/util.h"

struct nudge {
	int fd;
	int port;
	int n;
	struct sockaddr_in *to;   /* by rank; sin_port 0: unknown */
};

int
nudge_open(int n, struct nudge **out)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY) };
	socklen_t len = sizeof(sin);
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
	nd->fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (!nd->to || nd->fd < 0) {
		rc = nd->to ? -errno : -ENOMEM;
		nudge_free(nd);
		return rc;
	}
	if (bind(nd->fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 ||
	    getsockname(nd->fd, (struct sockaddr *)&sin, &len) < 0) {
		rc = -errno;
		nudge_free(nd);
		return rc;
	}
	nd->port = ntohs(sin.sin_port);
	*out = nd;
	return 0;
}

void
nudge_free(struct nudge *nd)
{
	if (!nd)
		return;
	if (nd->fd >= 0)
		close(nd->fd);
	free(nd->to);
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

int
nudge_drain(struct nudge *nd)
{
	char buf[64];
	int k = 0;

	while (k < NUDGE_DRAIN_MAX && recv(nd->fd, buf, sizeof(buf), MSG_DONTWAIT) >= 0)
		k++;
	return k;
}
