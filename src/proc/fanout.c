/*
 * fanout.c - several jobs in children at once, under one deadline.
 *
 * The caller forks one helper child through timed_run(), so the helper
 * and every job share one process group that a timeout kills whole; the
 * helper forks a child per job, collects the answers on pipes until all
 * are in or the deadline passes, kills the late ones and writes every
 * answer back in one stream.
 */
#include "autoconf.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/util.h"
#include "proc/fanout.h"
#include "proc/timed.h"

/*
 * How long past the jobs' deadline the helper may take to kill the late
 * ones and write every answer back: microseconds normally, more on a
 * loaded node or under valgrind.
 */
#define FANOUT_GRACE_S 1.0

struct helper {
	struct fanout_job *jobs;
	size_t n;
	struct pollfd *pfd;   /* one per job; fd -1 when done or never started */
	pid_t *pids;
	int64_t deadline;     /* util_now_ns() */
};

/* What the helper child sends back per job, followed by the job's SIZE bytes. */
struct answer_head {
	int32_t rc;
	uint32_t len;
};

/* In the helper child: start job I in a child of its own, its answer on a pipe. */
static void
start_job(struct helper *hp, size_t i, int out)
{
	struct fanout_job *job = &hp->jobs[i];
	int p[2];
	pid_t pid;

	hp->pfd[i].fd = -1;
	hp->pfd[i].events = POLLIN;
	job->len = 0;
	if (pipe2(p, O_CLOEXEC) < 0) {
		job->rc = -errno;
		return;
	}
	pid = fork();
	if (pid < 0) {
		job->rc = -errno;
		(void)close(p[0]);
		(void)close(p[1]);
		return;
	}
	if (pid == 0) {
		struct sigaction dfl;

		memset(&dfl, 0, sizeof(dfl));
		dfl.sa_handler = SIG_DFL;
		(void)sigaction(SIGCHLD, &dfl, NULL);
		/* Holding the helper's own pipe would keep its reader
		 * waiting for as long as this job blocks. */
		(void)close(out);
		(void)close(p[0]);
		_exit(job->fn(job->arg, p[1]) & 0xff);
	}
	(void)close(p[1]);
	hp->pfd[i].fd = p[0];
	hp->pids[i] = pid;
	job->rc = 1;  /* under way */
}

/* Read what job I sent; returns 1 when it is over (EOF or an error). */
static int
take(struct helper *hp, size_t i)
{
	struct fanout_job *job = &hp->jobs[i];
	char scratch[512];
	ssize_t n;

	if (job->len < job->size)
		n = read(hp->pfd[i].fd, (char *)job->out + job->len, job->size - job->len);
	else
		n = read(hp->pfd[i].fd, scratch, sizeof(scratch));  /* more than promised: dropped */
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return 0;
	if (n > 0) {
		if (job->len < job->size)
			job->len += (size_t)n;
		return 0;
	}
	job->rc = n == 0 ? (job->len == job->size ? 0 : -EPROTO) : -errno;
	if (n < 0)
		(void)kill(hp->pids[i], SIGKILL);
	(void)close(hp->pfd[i].fd);
	hp->pfd[i].fd = -1;
	return 1;
}

/*
 * The helper child: start every job, collect answers until all are in or
 * the deadline passes, kill the late ones, send everything back.  Only
 * async-signal-safe calls: the agent may have threads.
 */
static int
helper_child(void *arg, int out)
{
	struct helper *hp = arg;
	struct sigaction ign;
	size_t pending = 0;
	int perr = 0;

	/* The kernel reaps the jobs: nothing here needs their status, and a
	 * job killed while stuck in the kernel must not wait for a reaper. */
	memset(&ign, 0, sizeof(ign));
	ign.sa_handler = SIG_IGN;
	(void)sigaction(SIGCHLD, &ign, NULL);
	for (size_t i = 0; i < hp->n; i++) {
		start_job(hp, i, out);
		pending += hp->pfd[i].fd >= 0;
	}
	while (pending > 0) {
		int64_t left = hp->deadline - util_now_ns();
		int rc, ms;

		if (left <= 0)
			break;
		/* Rounded up, or the last poll wakes just short of the deadline. */
		ms = left / 1000000 >= INT_MAX ? INT_MAX : (int)((left + 999999) / 1000000);
		rc = poll(hp->pfd, (nfds_t)hp->n, ms);
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc < 0) {
			perr = -errno;
			break;
		}
		for (size_t i = 0; i < hp->n; i++)
			if (hp->pfd[i].fd >= 0 && hp->pfd[i].revents)
				pending -= (size_t)take(hp, i);
	}
	for (size_t i = 0; i < hp->n; i++) {
		struct fanout_job *job = &hp->jobs[i];
		struct answer_head head;

		if (hp->pfd[i].fd >= 0) {
			(void)kill(hp->pids[i], SIGKILL);
			(void)close(hp->pfd[i].fd);
			job->rc = perr ? perr : -ETIMEDOUT;
		}
		head.rc = job->rc;
		head.len = (uint32_t)job->len;
		if (util_write_all(out, &head, sizeof(head)) < 0 ||
		    util_write_all(out, job->out, job->size) < 0)
			return 1;
	}
	return 0;
}

static void
jobs_fail(struct fanout_job *jobs, size_t n, int rc)
{
	for (size_t i = 0; i < n; i++) {
		jobs[i].rc = rc;
		jobs[i].len = 0;
	}
}

/* Unpack the helper's answers; a job it did not answer for gets -EPROTO. */
static void
unpack(struct fanout_job *jobs, size_t n, const char *buf, size_t got)
{
	size_t off = 0;

	for (size_t i = 0; i < n; i++) {
		struct answer_head head;

		if (got - off < sizeof(head) + jobs[i].size) {
			jobs_fail(jobs + i, n - i, -EPROTO);
			return;
		}
		memcpy(&head, buf + off, sizeof(head));
		memcpy(jobs[i].out, buf + off + sizeof(head), jobs[i].size);
		off += sizeof(head) + jobs[i].size;
		jobs[i].rc = head.rc > 0 ? -EPROTO : head.rc;
		jobs[i].len = head.len < jobs[i].size ? head.len : jobs[i].size;
	}
}

int
fanout_run(struct fanout_job *jobs, size_t n, double timeout_s)
{
	struct helper hp = { .jobs = jobs, .n = n };
	size_t total = 0;
	char *buf = NULL;
	ssize_t got;
	int rc = 0;

	if (n == 0)
		return 0;
	if (!(timeout_s > 0) || !isfinite(timeout_s) || timeout_s > 1e9) {
		jobs_fail(jobs, n, -EINVAL);
		return -EINVAL;
	}
	if (n == 1) {
		/* One job needs no helper between it and the deadline. */
		got = timed_run(jobs[0].fn, jobs[0].arg, timeout_s, jobs[0].out, jobs[0].size, NULL);
		jobs[0].len = got > 0 ? (size_t)got : 0;
		jobs[0].rc = got < 0 ? (int)got : (size_t)got == jobs[0].size ? 0 : -EPROTO;
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		total += sizeof(struct answer_head) + jobs[i].size;
	hp.pfd = calloc(n, sizeof(*hp.pfd));
	hp.pids = calloc(n, sizeof(*hp.pids));
	buf = malloc(total);
	if (!hp.pfd || !hp.pids || !buf) {
		rc = -ENOMEM;
		jobs_fail(jobs, n, rc);
		goto out;
	}
	hp.deadline = util_now_ns() + (int64_t)(timeout_s * 1e9);
	got = timed_run(helper_child, &hp, timeout_s + FANOUT_GRACE_S, buf, total, NULL);
	if (got < 0) {
		/* The helper never answered (it is killed with its whole group,
		 * every job in it) or never started. */
		rc = got == -ETIMEDOUT ? 0 : (int)got;
		jobs_fail(jobs, n, (int)got);
		goto out;
	}
	unpack(jobs, n, buf, (size_t)got);
out:
	free(hp.pfd);
	free(hp.pids);
	free(buf);
	return rc;
}
