/*
 * output.c - passing the training's output through to the agent's own.
 *
 * The destination is our own stdout or stderr.  Under mpirun each rank gets
 * its own pipe or pty from the launcher, so the O_NONBLOCK we set on it (a
 * flag of the open file description, not of the descriptor) reaches no
 * other rank and not the training, which writes into pipes of its own.
 * What it does reach is everything else in this process that writes to the
 * same description: stdio on stderr (log.c) may then see EAGAIN and lose a
 * log line while the reader of stderr lags.  That is the price of never
 * blocking the loop that carries heartbeats and signals; output_free() puts
 * the blocking mode back, so a terminal is not left non-blocking for the
 * shell that started us.
 *
 * Buffer: pending bytes are buf[head, tail).  It is compacted (moved to the
 * front) only when an append does not fit behind tail, so in the steady
 * state of a reader that keeps up, bytes go from the child's pipe to ours
 * without touching it at all.
 */
#include "autoconf.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "launch/output.h"
#include "lib/util.h"

struct output {
	int fd;
	int orig_flags;          /* file status flags before output_new */
	bool set_nonblock;       /* we added O_NONBLOCK, output_free removes it */
	char *buf;
	size_t size;             /* allocated; >= cap, more while prefixing */
	size_t cap;              /* pending bytes above which output_room is 0 */
	size_t head, tail;       /* pending bytes: buf[head, tail) */
	char *prefix;            /* NULL for none */
	size_t prefix_len;
	bool at_line_start;      /* the next byte pushed begins a line */
	bool discard;
	size_t hold;             /* bytes held before a push writes (output_set_hold) */
	size_t line_wait;        /* a line begun shorter than this waits for its end (output_set_line_wait) */
	bool blocked;            /* the destination refused bytes due now: wait for POLLOUT */
	bool dest_mid_line;      /* the last byte written was not a newline */
	int err;                 /* destination failed with this; 0 while fine */
	unsigned long long written;
	unsigned long long lost;
};

struct output *
output_new(int dest_fd, size_t cap)
{
	struct output *o;
	int flags;

	if (cap == 0) {
		errno = EINVAL;
		return NULL;
	}
	flags = fcntl(dest_fd, F_GETFL);
	if (flags < 0)
		return NULL;
	o = calloc(1, sizeof(*o));
	if (!o)
		return NULL;
	o->buf = malloc(cap);
	if (!o->buf) {
		free(o);
		errno = ENOMEM;
		return NULL;
	}
	if (!(flags & O_NONBLOCK)) {
		if (fcntl(dest_fd, F_SETFL, flags | O_NONBLOCK) < 0) {
			int saved = errno;

			free(o->buf);
			free(o);
			errno = saved;
			return NULL;
		}
		o->set_nonblock = true;
	}
	o->fd = dest_fd;
	o->orig_flags = flags;
	o->size = cap;
	o->cap = cap;
	o->at_line_start = true;
	return o;
}

void
output_free(struct output *o)
{
	if (!o)
		return;
	/* Best effort: the descriptor may already be closed by now, and a
	 * failure leaves nothing for us to undo. */
	if (o->set_nonblock)
		(void)fcntl(o->fd, F_SETFL, o->orig_flags);
	free(o->prefix);
	free(o->buf);
	free(o);
}

int
output_set_prefix(struct output *o, const char *prefix)
{
	char *copy = NULL;

	if (prefix && *prefix) {
		copy = strdup(prefix);
		if (!copy)
			return -ENOMEM;
	}
	free(o->prefix);
	o->prefix = copy;
	o->prefix_len = copy ? strlen(copy) : 0;
	return 0;
}

void
output_set_discard(struct output *o, bool discard)
{
	o->discard = discard;
}

static size_t
queued(const struct output *o)
{
	return o->tail - o->head;
}

void
output_set_hold(struct output *o, size_t bytes)
{
	o->hold = bytes;
}

bool
output_held(const struct output *o)
{
	return queued(o) > 0 && o->hold > 0 && !o->blocked;
}

void
output_set_line_wait(struct output *o, size_t bytes)
{
	o->line_wait = bytes;
}

size_t
output_room(const struct output *o)
{
	size_t n = queued(o);

	/* Once nothing is kept, never hold the child back. */
	if (o->discard || o->err)
		return o->cap;
	return n < o->cap ? o->cap - n : 0;
}

bool
output_pending(const struct output *o)
{
	return queued(o) > 0;
}

size_t
output_queued(const struct output *o)
{
	return queued(o);
}

int
output_fd(const struct output *o)
{
	return o->fd;
}

unsigned long long
output_written(const struct output *o)
{
	return o->written;
}

unsigned long long
output_lost(const struct output *o)
{
	return o->lost;
}

/*
 * Write ALEN bytes from A, then BLEN from B, in one call where both are
 * there, until the destination would block.  *DONE: bytes written of
 * both.  Returns 0 or a negative errno.
 */
static int
write_two(struct output *o, const char *a, size_t alen, const char *b, size_t blen,
          size_t *done)
{
	size_t off = 0, total = alen + blen;
	int rc = 0;

	while (off < total) {
		struct iovec iov[2];
		int cnt = 0;
		ssize_t n;

		if (off < alen)
			iov[cnt++] = (struct iovec){ (void *)(a + off), alen - off };
		if (blen > 0)
			iov[cnt++] = off < alen ? (struct iovec){ (void *)b, blen }
			                        : (struct iovec){ (void *)(b + (off - alen)), total - off };
		n = writev(o->fd, iov, cnt);
		if (n > 0) {
			off += (size_t)n;
			continue;
		}
		if (n == 0)
			break;  /* not seen for pipes and ttys; retry on POLLOUT */
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			break;
		rc = -errno;
		break;
	}
	o->written += off;
	if (off > 0)
		o->dest_mid_line = (off <= alen ? a[off - 1] : b[off - alen - 1]) != '\n';
	*done = off;
	return rc;
}

/* Write from BUF until the destination would block, as write_two(). */
static int
write_some(struct output *o, const char *buf, size_t len, size_t *done)
{
	return write_two(o, buf, len, NULL, 0, done);
}

/*
 * The destination is gone: everything still queued, and UNSENT more bytes,
 * will never arrive.  From now on pushes are counted as lost and dropped.
 */
static int
fail(struct output *o, int rc, size_t unsent)
{
	o->lost += queued(o) + unsent;
	o->head = o->tail = 0;
	o->err = rc;
	return rc;
}

/* Bytes that LEN bytes of BUF become on the destination, prefixes included. */
static size_t
prefixed_len(const struct output *o, const char *buf, size_t len)
{
	const char *p = buf, *end = buf + len, *nl;
	bool start = o->at_line_start;
	size_t n = len;

	if (!o->prefix_len)
		return len;
	while (p < end) {
		if (start)
			n += o->prefix_len;
		nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			break;
		p = nl + 1;
		start = true;
	}
	return n;
}

/* Make room for NEED more bytes behind tail, compacting or growing. */
static int
reserve(struct output *o, size_t need)
{
	size_t n = queued(o);
	char *nb;

	if (o->size - o->tail >= need)
		return 0;
	if (o->head > 0) {
		memmove(o->buf, o->buf + o->head, n);
		o->head = 0;
		o->tail = n;
		if (o->size - o->tail >= need)
			return 0;
	}
	/* Only prefixes (or a caller pushing past output_room) get here: at
	 * most (1 + prefix length) times CAP, kept for the next burst. */
	nb = realloc(o->buf, n + need);
	if (!nb)
		return -ENOMEM;
	o->buf = nb;
	o->size = n + need;
	return 0;
}

/* Append LEN bytes of BUF to the queue as they are. */
static int
queue(struct output *o, const char *buf, size_t len)
{
	int rc = reserve(o, len);

	if (rc < 0) {
		o->lost += len;
		return rc;
	}
	memcpy(o->buf + o->tail, buf, len);
	o->tail += len;
	return 0;
}

/* Append LEN bytes of BUF to the queue with a prefix at every line start. */
static void
append_prefixed(struct output *o, const char *buf, size_t len)
{
	const char *p = buf, *end = buf + len, *nl;
	char *dst = o->buf + o->tail;
	size_t seg;

	while (p < end) {
		if (o->at_line_start) {
			memcpy(dst, o->prefix, o->prefix_len);
			dst += o->prefix_len;
			o->at_line_start = false;
		}
		nl = memchr(p, '\n', (size_t)(end - p));
		seg = nl ? (size_t)(nl + 1 - p) : (size_t)(end - p);
		memcpy(dst, p, seg);
		dst += seg;
		p += seg;
		if (nl)
			o->at_line_start = true;
	}
	o->tail = (size_t)(dst - o->buf);
}

/* Write the first LEN queued bytes (as output_flush() writes them all). */
static int
flush_some(struct output *o, size_t len)
{
	size_t done;
	int rc;

	o->blocked = false;
	if (o->err || len == 0)
		return 0;
	rc = write_some(o, o->buf + o->head, len, &done);
	o->head += done;
	if (rc < 0)
		return fail(o, rc, 0);
	if (o->head == o->tail)
		o->head = o->tail = 0;
	o->blocked = done < len;
	return o->blocked;
}

/* The queued bytes up to the last newline: the whole lines. */
static size_t
whole_lines(const struct output *o)
{
	const char *nl = queued(o) ? memrchr(o->buf + o->head, '\n', queued(o)) : NULL;

	return nl ? (size_t)(nl + 1 - (o->buf + o->head)) : 0;
}

int
output_flush_lines(struct output *o)
{
	return flush_some(o, whole_lines(o));
}

size_t
output_line_waits(const struct output *o)
{
	if (!o->line_wait || o->hold || o->blocked || o->dest_mid_line || !queued(o) ||
	    whole_lines(o))
		return 0;
	return queued(o);
}

int
output_flush_all(struct output *o)
{
	return flush_some(o, queued(o));
}

/*
 * What is due now: all of it; or while holding or waiting for lines'
 * ends, the whole lines, and the end of a line the destination has begun
 * when not holding (all of one line longer than what is held or waited
 * for: it would never end in time).
 */
static size_t
due(const struct output *o)
{
	size_t lines;

	if (!o->hold && !o->line_wait)
		return queued(o);
	lines = whole_lines(o);
	if (lines)
		return lines;
	if (!o->hold && o->dest_mid_line)
		return queued(o);
	return queued(o) >= (o->hold ? o->hold : o->line_wait) ? queued(o) : 0;
}

/*
 * Of LEN bytes of BUF pushed behind what is queued (not holding), those
 * due now: all; or while lines wait for their ends, up to the last
 * newline, and what goes on a line the destination has begun.  A line
 * begun that would reach the bound goes too.
 */
static size_t
due_of(const struct output *o, const char *buf, size_t len)
{
	const char *nl;
	size_t go;

	if (!o->line_wait)
		return len;
	nl = memrchr(buf, '\n', len);
	if (nl) {
		go = (size_t)(nl + 1 - buf);
		return len - go >= o->line_wait ? len : go;
	}
	/* no end in BUF: it goes on the line begun, queued or written */
	if (!queued(o) && o->dest_mid_line)
		return len;
	return queued(o) + len >= o->line_wait ? len : 0;
}

/*
 * Write what is queued, then the first LEN bytes of BUF, in one call,
 * until the destination would block.  *DONE: bytes of BUF written (0
 * unless everything queued went).  Returns 0 or a negative errno.
 */
static int
write_after_queued(struct output *o, const char *buf, size_t len, size_t *done)
{
	size_t q = queued(o), off;
	int rc = write_two(o, o->buf + o->head, q, buf, len, &off);

	if (off >= q) {
		o->head = o->tail = 0;
		*done = off - q;
	} else {
		o->head += off;
		*done = 0;
	}
	return rc;
}

int
output_flush(struct output *o)
{
	return flush_some(o, due(o));
}

int
output_push(struct output *o, const char *buf, size_t len)
{
	size_t done = 0, need;
	int rc;

	if (len == 0)
		return 0;
	if (o->discard || o->err) {
		/* Lost bytes are counted as they would have appeared. */
		if (!o->discard)
			o->lost += prefixed_len(o, buf, len);
		o->at_line_start = buf[len - 1] == '\n';
		return 0;
	}

	if (!o->prefix_len) {
		o->at_line_start = buf[len - 1] == '\n';
		if (!o->hold) {
			/* The common case: the caller's buffer goes straight to
			 * the destination behind what is queued (a line begun
			 * that this push may end, or what the destination
			 * refused), and only a remainder is copied. */
			size_t go = due_of(o, buf, len);

			if (go > 0) {
				rc = write_after_queued(o, buf, go, &done);
				if (rc < 0)
					return fail(o, rc, len - done);
				o->blocked = done < go;
			}
			/* What is left waits: the destination just said
			 * EAGAIN, no use asking again now; or a line begun
			 * waits for its end. */
			return done < len ? queue(o, buf + done, len - done) : 0;
		}
		rc = queue(o, buf, len);
		if (rc < 0)
			return rc;
	} else {
		need = prefixed_len(o, buf, len);
		rc = reserve(o, need);
		if (rc < 0) {
			o->lost += need;
			o->at_line_start = buf[len - 1] == '\n';
			return rc;
		}
		append_prefixed(o, buf, len);
	}
	if (!o->hold)
		return (rc = flush_some(o, due(o))) < 0 ? rc : 0;
	rc = 0;
	if (o->dest_mid_line) {
		/* A line the destination has begun ends at once: held, another
		 * writer's output could come in before its end. */
		const char *nl = memchr(o->buf + o->head, '\n', queued(o));

		rc = flush_some(o, nl ? (size_t)(nl + 1 - (o->buf + o->head)) : queued(o));
	}
	if (rc == 0 && queued(o) >= o->hold)
		rc = flush_some(o, due(o));  /* enough held */
	return rc < 0 ? rc : 0;
}

int
output_drain(struct output *o, int timeout_ms)
{
	long long deadline = (long long)util_now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
	struct pollfd pfd = { .fd = o->fd, .events = POLLOUT };
	int rc, wait_ms;

	o->hold = 0;  /* the end: a line begun goes too */
	o->line_wait = 0;

	for (;;) {
		rc = output_flush(o);
		if (rc <= 0)
			return rc;
		if (timeout_ms < 0) {
			wait_ms = -1;
		} else {
			long long left = deadline - (long long)util_now_ms();

			if (left <= 0)
				return -ETIMEDOUT;
			wait_ms = (int)left;
		}
		/* POLLERR/POLLHUP come back as readiness too: the next write
		 * then reports why (EPIPE). */
		rc = poll(&pfd, 1, wait_ms);
		if (rc < 0 && errno != EINTR)
			return -errno;
		if (rc == 0)
			return -ETIMEDOUT;
	}
}
