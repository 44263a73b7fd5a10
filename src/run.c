/*
 * run.c - `vigil run` on every node: one job, from the pre-check to the
 * exit status.
 *
 * Every node: discover and pre-check, send the report to the coordinator
 * (rank 0), receive the plan (go/no-go, master address and port, the
 * nodes), build the mode's environment, start the training in its own
 * process group, pass its output through, forward signals, inspect the
 * node and send heartbeats, and report how the training ended.  The
 * coordinator's decisions are in coord.c, performance detection in
 * jobperf.c; job.h holds the state they share.
 *
 * After the launch everything runs in one poll loop: the signalfd, the
 * child's output, our own output when it backs up, timers, and MPI
 * progress from the loop's before-poll hook.  No MPI call blocks.
 */
#include "autoconf.h"

#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>

#include "vigil.h"
#include "check.h"
#include "child.h"
#include "cmdline.h"
#include "events.h"
#include "gather.h"
#include "inspect.h"
#include "linebuf.h"
#include "log.h"
#include "loop.h"
#include "metrics.h"
#include "notify.h"
#include "output.h"
#include "peer.h"
#include "perf.h"
#include "progress.h"
#include "run.h"
#include "sig.h"
#include "topo.h"
#include "util.h"
#include "job.h"

extern char **environ;

double
job_now(void)
{
	return util_now_s();
}

void
run_opts_init(struct run_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->mode = MODE_PYTORCH;
	o->precheck = true;
	o->precheck_level = VERDICT_FAIL;
	o->tf_port = 2222;
	o->grace_s = 30;
	o->output_all = true;
	o->ckpt_signal = SIGUSR1;
	o->ckpt_lead_s = 60;
	o->max_resumes = -1;
	o->inspect_s = 30;
	o->heartbeat_s = 5;
	o->heartbeat_timeout_s = 30;
	o->perf_window = 5;
	o->summary_s = 60;
	o->perf_interval_s = 1;
}

/* ---- start-up: what this node is, and the coordinator's plan ---------- */

/*
 * The address other nodes reach this one by, for MASTER_ADDR: the
 * hostname when it resolves to an address that is not loopback (Debian
 * maps it to 127.0.1.1), else the first IPv4 address of an interface that
 * is up and not loopback, else loopback (every node is this machine).
 */
static void
local_address(const char *host, char *buf, size_t len)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res = NULL;
	struct ifaddrs *ifa = NULL;

	if (getaddrinfo(host, NULL, &hints, &res) == 0) {
		for (struct addrinfo *a = res; a; a = a->ai_next) {
			struct sockaddr_in *sin = (struct sockaddr_in *)a->ai_addr;

			if ((ntohl(sin->sin_addr.s_addr) >> 24) != 127) {
				snprintf(buf, len, "%s", host);
				freeaddrinfo(res);
				return;
			}
		}
		freeaddrinfo(res);
	}
	if (getifaddrs(&ifa) == 0) {
		for (struct ifaddrs *i = ifa; i; i = i->ifa_next) {
			if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET ||
			    !(i->ifa_flags & IFF_UP) || (i->ifa_flags & IFF_LOOPBACK))
				continue;
			inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, buf,
			          (socklen_t)len);
			freeifaddrs(ifa);
			return;
		}
		freeifaddrs(ifa);
	}
	snprintf(buf, len, "127.0.0.1");
}

/*
 * A port free on this node now, for MASTER_PORT, as torchrun picks one:
 * bind to port 0 and let the kernel choose.  The socket is closed at once
 * (vigil keeps no port of its own); the training binds it moments later.
 */
int
job_free_port(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY) };
	socklen_t len = sizeof(sin);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int port = -errno;

	if (fd < 0)
		return port;
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&sin, &len) == 0)
		port = ntohs(sin.sin_port);
	else
		port = -errno;
	close(fd);
	return port;
}

/* This node's payload for the coordinator: gather_payload() plus the launch facts. */
static char *
node_info(struct job *j, const struct check_report *r, const char *error,
          size_t nslots, const char *vendor)
{
	char *base = gather_payload(j->node, j->rank, r, error);
	char addr[256];
	cJSON *o;
	char *text = NULL;

	if (!base)
		return NULL;
	o = cJSON_Parse(base);
	free(base);
	if (!o)
		return NULL;
	local_address(j->node, addr, sizeof(addr));
	cJSON_AddStringToObject(o, "addr", addr);
	cJSON_AddNumberToObject(o, "slots", (double)nslots);
	if (vendor)
		cJSON_AddStringToObject(o, "vendor", vendor);
	text = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return text;
}

const char *
job_str(const cJSON *o, const char *key, const char *dflt)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) ? v->valuestring : dflt;
}

double
job_num(const cJSON *o, const char *key, double dflt)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

void
job_event(struct job *j, const char *node, int rank, const char *kind,
           const char *severity, const char *message, cJSON *details)
{
	cJSON *e;
	int rc;

	if (!j->ev) {
		cJSON_Delete(details);
		return;
	}
	e = events_make(node, rank, kind, severity, message, details);
	if (!e)
		return;
	rc = events_write(j->ev, e);
	if (rc < 0)
		LOG_ERR("cannot write an event to %s: %s", j->o->events, strerror(-rc));
	cJSON_Delete(e);
}

/* Wait for the coordinator's plan, bounded; NULL when none came. */
static char *
await_plan(struct job *j, double timeout_s)
{
	const struct timespec nap = { 0, 2000000 };
	double deadline = job_now() + timeout_s;

	while (job_now() < deadline) {
		int src, tag, rc;
		char *msg;

		rc = peer_poll(j->p, &src, &tag, &msg);
		if (rc < 0)
			return NULL;
		if (rc == 1) {
			if (tag == PEER_TAG_PLAN)
				return msg;
			free(msg);
			continue;
		}
		nanosleep(&nap, NULL);
	}
	return NULL;
}

/* ---- the training's output -------------------------------------------- */

static void
tail_line(const char *line, size_t len, bool truncated, void *arg)
{
	struct job *j = arg;
	char *copy;

	(void)truncated;
	if (len > TAIL_LINE_MAX)
		len = TAIL_LINE_MAX;
	copy = strndup(line, len);
	if (!copy)
		return;
	free(j->tail[j->tailnext]);
	j->tail[j->tailnext] = copy;
	j->tailnext = (j->tailnext + 1) % TAIL_LINES;
	if (j->ntail < TAIL_LINES)
		j->ntail++;
}

/* A line of the training's output: a timing line feeds the iterations. */
static void
scan_line(const char *line, size_t len, bool truncated, void *arg)
{
	struct job *j = arg;
	struct progress_line pl;

	(void)truncated;
	if (j->perf && progress_parse(line, len, &pl))
		perf_node_add(j->perf, &pl);
}

static void
err_line(const char *line, size_t len, bool truncated, void *arg)
{
	tail_line(line, len, truncated, arg);
	scan_line(line, len, truncated, arg);
}

static void maybe_done(struct job *j);

static void
on_dest(struct loop *l, int fd, short revents, void *arg)
{
	struct job *j = arg;
	struct output *o = fd == output_fd(j->out) ? j->out : j->err;
	int cfd = o == j->out ? j->cout : j->cerr;
	int rc;

	(void)revents;
	rc = output_flush(o);
	if (rc <= 0)
		loop_mod_fd(l, fd, 0);
	if (rc < 0)
		LOG_ERR("cannot write the training's %s: %s", o == j->out ? "stdout" : "stderr",
		        strerror(-rc));
	/* Room again: read the child once more (back-pressure released). */
	if (cfd >= 0 && output_room(o) > 0)
		loop_mod_fd(l, cfd, POLLIN);
}

static void
close_child_fd(struct job *j, int fd)
{
	loop_del_fd(j->loop, fd);
	child_close_fd(j->child, fd);
	if (fd == j->cerr) {
		j->cerr = -1;
		linebuf_flush(j->errlines, err_line, j);
	}
	if (fd == j->cout) {
		j->cout = -1;
		linebuf_flush(j->outlines, scan_line, j);
	}
}

static void
on_child_fd(struct loop *l, int fd, short revents, void *arg)
{
	static char buf[READ_CHUNK];
	struct job *j = arg;
	struct output *o = fd == j->cout ? j->out : j->err;
	int rc;

	(void)revents;
	/* Read again until the pipe is empty (EAGAIN), up to READS_PER_TURN
	 * times: the training often writes more while we pass the last read
	 * on, and each poll() that sleeps costs a wakeup.  The bound leaves
	 * signals and MPI their turn. */
	for (int i = 0; i < READS_PER_TURN; i++) {
		size_t room = output_room(o);
		ssize_t n;

		if (room == 0) {
			loop_mod_fd(l, fd, 0);  /* back-pressure: resumed by on_dest() */
			return;
		}
		n = read(fd, buf, room < sizeof(buf) ? room : sizeof(buf));
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n <= 0) {
			/* EOF; a pty master reads EIO once the child side is closed */
			close_child_fd(j, fd);
			maybe_done(j);
			return;
		}
		/* a copy for scanning; what passes through is untouched */
		if (o == j->err)
			linebuf_feed(j->errlines, buf, (size_t)n, err_line, j);
		else
			linebuf_feed(j->outlines, buf, (size_t)n, scan_line, j);
		rc = output_push(o, buf, (size_t)n);
		if (rc < 0 && rc != -EAGAIN) {
			static bool said;

			if (!said)
				LOG_ERR("cannot pass the training's output on: %s; it is being lost",
				        strerror(-rc));
			said = true;
		}
		if (output_pending(o))
			loop_mod_fd(l, output_fd(o), POLLOUT);
	}
}

/* ---- this node's end ---------------------------------------------------- */

static void
send_result(struct job *j, bool idle)
{
	cJSON *r = cJSON_CreateObject(), *tail;
	char *text;
	int rc;

	if (j->result_sent || !r)
		goto out;
	cJSON_AddStringToObject(r, "node", j->node);
	cJSON_AddBoolToObject(r, "idle", idle);
	cJSON_AddNumberToObject(r, "seconds", job_now() - j->t0);
	if (j->agent_signal)
		cJSON_AddNumberToObject(r, "agent_signal", j->agent_signal);
	if (j->start_error[0]) {
		cJSON_AddNumberToObject(r, "exit_code", j->start_code);
		cJSON_AddStringToObject(r, "error", j->start_error);
	} else if (!idle) {
		int st = child_wait_status(j->child);

		cJSON_AddNumberToObject(r, "exit_code", child_exit_code(st));
		if (WIFSIGNALED(st))
			cJSON_AddNumberToObject(r, "signal", WTERMSIG(st));
	} else {
		cJSON_AddNumberToObject(r, "exit_code", 0);
	}
	tail = cJSON_AddArrayToObject(r, "stderr_tail");
	for (int i = 0; tail && i < j->ntail; i++) {
		int k = (j->tailnext - j->ntail + i + TAIL_LINES) % TAIL_LINES;

		cJSON_AddItemToArray(tail, cJSON_CreateString(j->tail[k]));
	}
	text = cJSON_PrintUnformatted(r);
	if (text) {
		rc = peer_send(j->p, 0, PEER_TAG_RESULT, text);
		if (rc < 0)
			LOG_ERR("cannot send this node's result: %s", strerror(-rc));
		else
			j->result_sent = true;
		free(text);
	}
out:
	cJSON_Delete(r);
}

/* The training is over on this node when it was reaped and its output ended. */
static void
maybe_done(struct job *j)
{
	if (!j->exited || j->cout >= 0 || j->cerr >= 0)
		return;
	loop_del_timer(j->loop, j->drain_timer);
	j->drain_timer = NULL;
	loop_del_timer(j->loop, j->kill_timer);
	j->kill_timer = NULL;
	/* Nothing of the training may outlive it: helpers it left in its
	 * group go too. */
	(void)child_signal(j->child, SIGKILL);  /* -ESRCH when none is left */
	send_result(j, false);
}

static long
on_drain_timeout(struct loop *l, void *arg)
{
	struct job *j = arg;

	(void)l;
	/* Exited, but something it started still holds the output open. */
	j->drain_timer = NULL;
	(void)child_signal(j->child, SIGKILL);
	if (j->cout >= 0)
		close_child_fd(j, j->cout);
	if (j->cerr >= 0)
		close_child_fd(j, j->cerr);
	maybe_done(j);
	return LOOP_NOMORE;
}

static long
on_kill_timeout(struct loop *l, void *arg)
{
	struct job *j = arg;

	(void)l;
	j->kill_timer = NULL;
	if (j->child && !j->exited) {
		LOG_WARN("the training did not end when told to: killing it");
		(void)child_signal(j->child, SIGKILL);
	}
	return LOOP_NOMORE;
}

/* Stop this node's training: SIG to its group now, KILL after KILL_MS. */
static void
stop_local_after(struct job *j, int sig, long kill_ms)
{
	if (!j->child || j->exited) {
		if (!j->child)
			send_result(j, !j->start_error[0]);
		return;
	}
	(void)child_signal(j->child, sig);
	if (!j->stopping) {
		j->stopping = true;
		j->kill_timer = loop_add_timer(j->loop, kill_ms, on_kill_timeout, j);
	}
}

/* ... after the grace period. */
static void
stop_local(struct job *j, int sig)
{
	stop_local_after(j, sig, (long)(j->o->grace_s * 1000));
}

static void
on_child_exit(struct job *j)
{
	j->exited = true;
	loop_del_timer(j->loop, j->kill_timer);
	j->kill_timer = NULL;
	if (j->cout >= 0 || j->cerr >= 0)
		j->drain_timer = loop_add_timer(j->loop, DRAIN_MS, on_drain_timeout, j);
	maybe_done(j);
}

/* A note for the coordinator (findings, a checkpoint signal); takes NOTE. */
static void
send_note(struct job *j, cJSON *note)
{
	char *text;

	cJSON_AddStringToObject(note, "node", j->node);
	text = cJSON_PrintUnformatted(note);
	cJSON_Delete(note);
	if (!text)
		return;
	if (peer_send(j->p, 0, PEER_TAG_NOTE, text) < 0)
		LOG_ERR("cannot tell the coordinator");
	free(text);
}

static int
forwarded(const struct run_opts *o, int sig)
{
	for (int i = 0; i < o->nforward; i++)
		if (o->forward[i].from == sig)
			return o->forward[i].to;
	return sig;
}

static void
on_signal(struct loop *l, int fd, short revents, void *arg)
{
	struct job *j = arg;
	int sig;

	(void)l;
	(void)revents;
	while ((sig = sig_fd_read(fd, NULL)) > 0) {
		switch (sig) {
		case SIGCHLD:
			if (j->child && !j->exited) {
				int rc = child_reap(j->child);

				if (rc < 0)
					LOG_ERR("waitpid: %s", strerror(-rc));
				if (child_exited(j->child))
					on_child_exit(j);
			} else {
				/* grandchildren the subreaper inherited */
				while (waitpid(-1, NULL, WNOHANG) > 0)
					;
			}
			break;
		case SIGTERM:
		case SIGINT:
		case SIGHUP:
		case SIGQUIT:
			LOG_INFO("got %s: stopping the training", sig_name(sig));
			if (!j->agent_signal)
				j->agent_signal = sig;
			stop_local(j, sig == SIGQUIT ? SIGTERM : sig);
			break;
		default:
			if (j->o->resume && sig == j->o->ckpt_signal) {
				/* The batch system's warning (Slurm --signal, which
				 * mpirun forwards to every rank): the coordinator has
				 * every node checkpoint, each exactly once. */
				cJSON *n = cJSON_CreateObject();

				cJSON_AddNumberToObject(n, "signal", sig);
				send_note(j, n);
			} else if (j->child && !j->exited) {
				(void)child_signal(j->child, forwarded(j->o, sig));
			}
			break;
		}
	}
}

/* ---- resilience on this node -------------------------------------------- */

static long
on_heartbeat(struct loop *l, void *arg)
{
	struct job *j = arg;

	(void)l;
	if (j->finished)
		return LOOP_NOMORE;
	(void)peer_send(j->p, 0, PEER_TAG_HEARTBEAT, "{}");
	return (long)(j->o->heartbeat_s * 1000);
}

static bool
already_reported(struct job *j, const char *key)
{
	char **r;

	for (size_t i = 0; i < j->nreported; i++)
		if (strcmp(j->reported[i], key) == 0)
			return true;
	r = realloc(j->reported, (j->nreported + 1) * sizeof(*r));
	if (!r)
		return false;
	j->reported = r;
	j->reported[j->nreported] = strdup(key);
	if (j->reported[j->nreported])
		j->nreported++;
	return false;
}

/* Every --inspect-interval: what is wrong now that was not before goes to
 * the coordinator, which decides. */
static long
on_inspect(struct loop *l, void *arg)
{
	struct job *j = arg;
	struct inspect_finding *f = NULL;
	size_t n = 0;
	cJSON *note, *arr;
	int rc;

	(void)l;
	rc = inspect_run(j->insp, &f, &n);
	if (rc < 0) {
		LOG_WARN("inspection failed: %s", strerror(-rc));
		return (long)(j->o->inspect_s * 1000);
	}
	note = cJSON_CreateObject();
	arr = cJSON_AddArrayToObject(note, "findings");
	for (size_t i = 0; arr && i < n; i++) {
		char key[128];
		cJSON *x;

		snprintf(key, sizeof(key), "%s %s %s", f[i].what, f[i].device, verdict_name(f[i].verdict));
		if (already_reported(j, key))
			continue;
		x = cJSON_CreateObject();
		cJSON_AddStringToObject(x, "what", f[i].what);
		cJSON_AddStringToObject(x, "device", f[i].device);
		cJSON_AddStringToObject(x, "verdict", verdict_name(f[i].verdict));
		cJSON_AddStringToObject(x, "evidence", f[i].evidence);
		cJSON_AddItemToArray(arr, x);
	}
	free(f);
	if (cJSON_GetArraySize(arr) > 0)
		send_note(j, note);
	else
		cJSON_Delete(note);
	return (long)(j->o->inspect_s * 1000);
}

/* The checkpoint's grace is over: the training saved or not, it stops now. */
static long
on_ckpt_grace(struct loop *l, void *arg)
{
	struct job *j = arg;

	(void)l;
	j->ckpt_timer = NULL;
	if (j->child && !j->exited) {
		LOG_WARN("the training did not exit within %.0f s of the checkpoint signal: stopping it",
		         j->o->grace_s);
		stop_local_after(j, SIGTERM, STOP_AFTER_CKPT_MS);
	}
	return LOOP_NOMORE;
}

/* The coordinator said checkpoint: the signal to the training's group, once. */
static void
checkpoint_local(struct job *j)
{
	if (!j->child || j->exited || j->ckpt_sent)
		return;
	j->ckpt_sent = true;
	LOG_INFO("checkpoint: %s to the training", sig_name(j->o->ckpt_signal));
	(void)child_signal(j->child, j->o->ckpt_signal);
	j->ckpt_timer = loop_add_timer(j->loop, (long)(j->o->grace_s * 1000), on_ckpt_grace, j);
}

/* ---- MPI progress, once per loop turn ----------------------------------- */

static void restart_local(struct job *j, const cJSON *cmd);

static void
take_command(struct job *j, const cJSON *o)
{
	const char *cmd = job_str(o, "command", "");

	if (strcmp(cmd, "stop") == 0) {
		LOG_INFO("stopping: %s", job_str(o, "reason", "the coordinator said so"));
		stop_local(j, SIGTERM);
	} else if (strcmp(cmd, "checkpoint") == 0) {
		checkpoint_local(j);
	} else if (strcmp(cmd, "restart") == 0) {
		restart_local(j, o);
	} else if (strcmp(cmd, "perf") == 0) {
		j->cycles_due++;  /* the coordinator started a reduction: join it */
	}
}

static long
before_poll(struct loop *l, void *arg)
{
	struct job *j = arg;
	int src, tag, rc;
	char *msg;

	(void)l;
	while (!j->finished && (rc = peer_poll(j->p, &src, &tag, &msg)) == 1) {
		cJSON *o = cJSON_Parse(msg);

		if (j->rank == 0 && src >= 0 && src < j->size)
			j->last_seen[src] = job_now();  /* any message is a sign of life */
		if (tag == PEER_TAG_RESULT && j->rank == 0) {
			coord_take_result(j, src, msg);
		} else if (tag == PEER_TAG_NOTE && j->rank == 0) {
			coord_take_note(j, src, msg);
		} else if (tag == PEER_TAG_COMMAND) {
			take_command(j, o);
		} else if (tag == PEER_TAG_FINAL) {
			j->exit_code = (int)job_num(o, "exit_code", VIGIL_EXIT_INTERNAL);
			j->clean = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "finalize"));
			j->hold = job_num(o, "hold", 0);
			/* the reductions the coordinator started, to finish before MPI ends */
			if (job_num(o, "cycles", 0) > j->cycles_due)
				j->cycles_due = (int)job_num(o, "cycles", 0);
			j->finished = true;
			loop_stop(j->loop);
		}
		cJSON_Delete(o);
		free(msg);
	}
	if (rc < 0 && !j->finished) {
		LOG_ERR("MPI failed while the job ran");
		j->exit_code = VIGIL_EXIT_INTERNAL;
		j->clean = false;
		j->finished = true;
		loop_stop(j->loop);
	}
	jobperf_cycle(j);
	if (!peer_is_mpi(j->p))
		return j->perf && !j->finished ? (long)(j->o->perf_interval_s * 1000) : -1;
	/* MPI is not a descriptor: look again soon, sooner with traffic in
	 * flight.  Each look runs Open MPI's progress engine (tens of us);
	 * 80 ms keeps an idle agent under 0.1% of a core while a command
	 * (checkpoint, stop) still reaches every node within 100 ms. */
	return peer_busy(j->p) ? 2 : 80;
}

/* ---- launch ------------------------------------------------------------- */

static int
start_training(struct job *j)
{
	struct child_opts co = {
		.argv = j->launch.argv, .envp = j->launch.envp, .sigmask = &j->oldmask,
		.pty_stdout = isatty(STDOUT_FILENO) || getenv("VIGIL_PTY") != NULL,
	};
	char prefix[300];
	int rc;

	/* Under mpirun our stdout is usually a terminal, so the training
	 * gets one too and line-buffers its prints as it would at a shell. */
	if (getenv("VIGIL_PTY"))
		co.pty_stdout = strcmp(getenv("VIGIL_PTY"), "0") != 0;
	rc = child_spawn(&co, &j->child);
	if (rc < 0) {
		j->start_code = rc == -ENOENT ? 127 : 126;
		snprintf(j->start_error, sizeof(j->start_error), "cannot run '%s': %s",
		         j->launch.argv[0], rc == -ENOENT ? "command not found" : strerror(-rc));
		send_result(j, false);
		return 0;
	}
	j->cout = child_stdout_fd(j->child);
	j->cerr = child_stderr_fd(j->child);
	if (!j->out) {
		/* once per job: a restarted training writes to the same place */
		j->out = output_new(STDOUT_FILENO, OUTPUT_CAP);
		j->err = output_new(STDERR_FILENO, OUTPUT_CAP);
		j->errlines = linebuf_new(TAIL_LINE_MAX);
		j->outlines = linebuf_new(SCAN_LINE_MAX);
		if (!j->out || !j->err || !j->errlines || !j->outlines)
			return -ENOMEM;
		if (j->o->tag_output) {
			snprintf(prefix, sizeof(prefix), "[%s:%d] ", j->node, j->rank);
			output_set_prefix(j->out, prefix);
			output_set_prefix(j->err, prefix);
		}
		if (!j->o->output_all && j->rank != 0)
			output_set_discard(j->out, true);
		if (loop_add_fd(j->loop, STDOUT_FILENO, 0, on_dest, j) < 0 ||
		    loop_add_fd(j->loop, STDERR_FILENO, 0, on_dest, j) < 0)
			return -ENOMEM;
	}
	if (loop_add_fd(j->loop, j->cout, POLLIN, on_child_fd, j) < 0 ||
	    loop_add_fd(j->loop, j->cerr, POLLIN, on_child_fd, j) < 0)
		return -ENOMEM;
	return 0;
}

/*
 * Build this node's launch from the plan (j->plan): the training runs on
 * the plan's members, in member order; a node that is not a member runs
 * nothing in this attempt.
 */
static int
build_launch(struct job *j, char *err, size_t errlen)
{
	const cJSON *nodes = cJSON_GetObjectItemCaseSensitive(j->plan, "nodes");
	const cJSON *members = cJSON_GetObjectItemCaseSensitive(j->plan, "members");
	int n = cJSON_GetArraySize(members), me = -1;
	char hostfile[4096], mpich[4096], rundir[3900];
	const char *tmp = getenv("TMPDIR");
	struct mode_plan mp = { 0 };

	mode_launch_free(&j->launch);
	free(j->mnodes);
	j->mnodes = calloc((size_t)(n > 0 ? n : 1), sizeof(*j->mnodes));
	if (!j->mnodes)
		return -ENOMEM;
	for (int i = 0; i < n; i++) {
		int r = (int)cJSON_GetArrayItem(members, i)->valuedouble;
		const cJSON *x = cJSON_GetArrayItem(nodes, r);

		if (r == j->rank)
			me = i;
		j->mnodes[i].host = job_str(x, "host", "?");
		j->mnodes[i].slots = (int)job_num(x, "slots", 0);
		if (j->mnodes[i].slots < 1)
			j->mnodes[i].slots = 1;  /* a CPU node: SLOTS is 1 */
	}
	j->member = me >= 0;
	if (j->o->run_dir)
		snprintf(rundir, sizeof(rundir), "%s", j->o->run_dir);
	else
		snprintf(rundir, sizeof(rundir), "%s/vigil.%s", tmp && *tmp ? tmp : "/tmp",
		         job_str(j->plan, "job", "0"));
	if (j->o->hostfile)
		snprintf(hostfile, sizeof(hostfile), "%s", j->o->hostfile);
	else
		snprintf(hostfile, sizeof(hostfile), "%s/hostfile", rundir);
	if (j->o->mpich_hostfile)
		snprintf(mpich, sizeof(mpich), "%s", j->o->mpich_hostfile);
	else
		snprintf(mpich, sizeof(mpich), "%s/mpich_hostfile", rundir);

	mp.mode = j->o->mode;
	mp.nodes = j->mnodes;
	mp.nnodes = n;
	mp.node_rank = me >= 0 ? me : 0;
	mp.master_addr = job_str(j->plan, "master_addr", "127.0.0.1");
	mp.master_port = (int)job_num(j->plan, "master_port", 0);
	mp.ps = j->o->ps;
	mp.tf_port = j->o->tf_port;
	mp.vendor = j->vendor;
	mp.nslots = (int)j->nslots;
	mp.hostfile = hostfile;
	mp.mpich_hostfile = mpich;
	mp.argv = j->o->cmd;
	mp.envp = environ;
	return mode_build(&mp, &j->launch, err, errlen);
}

/*
 * Start this node's part of the current attempt: the training when this
 * node is a member, else an idle result.  Returns 0, or a negative errno
 * when the agent itself cannot go on.
 */
static int
launch_attempt(struct job *j)
{
	char err[512] = "", count[16];
	int rc;

	/* which attempt this is, for the training (故障重启) */
	snprintf(count, sizeof(count), "%d", j->attempt);
	setenv("VIGIL_RESTART_COUNT", count, 1);
	rc = build_launch(j, err, sizeof(err));
	if (rc == -ENOMEM)
		return rc;
	if (rc < 0) {
		j->start_code = VIGIL_EXIT_USAGE;
		snprintf(j->start_error, sizeof(j->start_error), "%s", err);
		send_result(j, false);
	} else if (!j->member) {
		send_result(j, true);  /* not in this attempt: keep watching */
	} else if ((rc = mode_write_files(&j->launch, err, sizeof(err))) < 0) {
		j->start_code = VIGIL_EXIT_INTERNAL;
		snprintf(j->start_error, sizeof(j->start_error), "%s", err);
		send_result(j, false);
	} else if (!j->launch.run) {
		send_result(j, true);  /* no training here (horovod); keep watching */
	} else {
		return start_training(j);
	}
	return 0;
}

/* The coordinator starts the training again: a fresh child, same place. */
static void
restart_local(struct job *j, const cJSON *cmd)
{
	const cJSON *members = cJSON_GetObjectItemCaseSensitive(cmd, "members");

	loop_del_timer(j->loop, j->kill_timer);
	loop_del_timer(j->loop, j->drain_timer);
	loop_del_timer(j->loop, j->ckpt_timer);
	j->kill_timer = j->drain_timer = j->ckpt_timer = NULL;
	if (j->child) {
		if (j->cout >= 0)
			close_child_fd(j, j->cout);
		if (j->cerr >= 0)
			close_child_fd(j, j->cerr);
		(void)child_signal(j->child, SIGKILL);
		child_free(j->child);
		j->child = NULL;
	}
	j->exited = j->stopping = j->ckpt_sent = j->result_sent = false;
	j->agent_signal = 0;
	j->start_error[0] = '\0';
	for (int i = 0; i < TAIL_LINES; i++) {
		free(j->tail[i]);
		j->tail[i] = NULL;
	}
	j->ntail = j->tailnext = 0;
	j->attempt = (int)job_num(cmd, "attempt", j->attempt + 1);
	cJSON_ReplaceItemInObject(j->plan, "master_port",
	                          cJSON_CreateNumber(job_num(cmd, "master_port", 0)));
	cJSON_ReplaceItemInObject(j->plan, "master_addr",
	                          cJSON_CreateString(job_str(cmd, "master_addr", "127.0.0.1")));
	cJSON_ReplaceItemInObject(j->plan, "members", cJSON_Duplicate(members, 1));
	if (launch_attempt(j) < 0) {
		LOG_ERR("cannot start the training again");
		j->start_code = VIGIL_EXIT_INTERNAL;
		snprintf(j->start_error, sizeof(j->start_error), "cannot start the training again");
		send_result(j, false);
	}
}

/* --dry-run: every node describes its launch; the coordinator prints them in order. */
static int
dry_run(struct job *j, int build_rc, const char *err)
{
	struct peer_gather *pg = NULL;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	int rc, code = VIGIL_EXIT_OK;

	if (!f)
		return VIGIL_EXIT_INTERNAL;
	fprintf(f, "== %s (rank %d, %s mode)\n", j->node, j->rank, mode_name(j->o->mode));
	if (build_rc < 0)
		fprintf(f, "error: %s\n", err);
	else
		mode_describe(f, &j->launch, environ);
	fclose(f);
	rc = peer_gather_start(j->p, text, &pg);
	if (rc == 0)
		rc = peer_gather_wait(pg, j->cfg->gather_timeout_s);
	if (rc != 1) {
		LOG_ERR("the dry run could not gather every node's description");
		code = VIGIL_EXIT_INTERNAL;
	} else if (j->rank == 0) {
		for (int r = 0; r < j->size; r++)
			log_say("%s", peer_gather_get(pg, r));
	}
	if (build_rc < 0)
		code = VIGIL_EXIT_USAGE;
	j->clean = rc == 1;
	peer_gather_free(pg);
	free(text);
	return code;
}

/* Discover and pre-check this node; returns the payload for the coordinator. */
static char *
survey(struct job *j, struct slot **slots, size_t *nslots)
{
	struct check_report report = { 0 };
	struct topo *t = NULL;
	char error[512] = "";
	char *payload;
	int rc;

	rc = topo_load(j->o->topology, &t);
	if (rc == 0)
		rc = topo_slots(t, slots, nslots);
	topo_free(t);
	if (rc < 0) {
		snprintf(error, sizeof(error), "slots: discovery failed: %s", strerror(-rc));
	} else {
		if (*nslots > 0)
			j->vendor = slot_vendor_name((*slots)[0].vendor);
		j->nslots = *nslots;
		if (j->o->precheck) {
			struct check_ctx ctx = {
				.cfg = j->cfg, .slots = *slots, .nslots = *nslots, .all = true,
			};

			rc = check_run(&ctx, &report);
			if (rc < 0)
				snprintf(error, sizeof(error), "cannot run the pre-check on %s: %s",
				         j->cfg->sysfs_root, strerror(-rc));
		}
	}
	payload = node_info(j, &report, error[0] ? error : NULL, j->nslots, j->vendor);
	check_report_free(&report);
	return payload;
}

/* Run the loop until the job is over for this node. */
static void
watch(struct job *j)
{
	while (!j->finished) {
		int rc = loop_run(j->loop);

		if (rc < 0) {
			LOG_ERR("poll: %s", strerror(-rc));
			j->exit_code = VIGIL_EXIT_INTERNAL;
			j->clean = false;
			break;
		}
	}
}

/* Earlier requeues of this job: Slurm's count, else the state file's. */
static int
resumes_so_far(const struct run_opts *o)
{
	const char *env = getenv("SLURM_RESTART_COUNT");
	char buf[256];
	FILE *f;
	int n = 0;

	if (env && *env)
		return atoi(env);
	if (!o->state_file || !(f = fopen(o->state_file, "r")))
		return 0;
	if (fgets(buf, sizeof(buf), f)) {
		cJSON *st = cJSON_Parse(buf);

		n = (int)job_num(st, "resumes", 0);
		cJSON_Delete(st);
	}
	fclose(f);
	return n;
}

/* Seconds until the job's time limit: --time-limit, else Slurm's end time; <0: none. */
static double
time_left(const struct job *j)
{
	const char *end = getenv("SLURM_JOB_END_TIME");

	if (j->o->time_limit_s > 0)
		return j->o->time_limit_s - (job_now() - j->t0);
	if (end && *end) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		return atof(end) - ((double)ts.tv_sec + (double)ts.tv_nsec / 1e9);
	}
	return -1;
}

/* After an abnormal end: keep the allocation for a while (SIGTERM ends it). */
static void
hold_allocation(struct job *j, double seconds)
{
	double until = job_now() + seconds;
	struct pollfd pfd = { .fd = j->sigfd, .events = POLLIN };

	while (job_now() < until) {
		int left = (int)((until - job_now()) * 1000) + 1;
		int sig;

		if (poll(&pfd, 1, left > 1000 ? 1000 : left) < 0 && errno != EINTR)
			return;
		while ((sig = sig_fd_read(j->sigfd, NULL)) > 0) {
			if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP)
				return;
			if (sig == SIGCHLD)
				while (waitpid(-1, NULL, WNOHANG) > 0)
					;
		}
	}
}

int
run_job(const struct run_opts *o, const struct config *cfg, int *argc, char ***argv)
{
	struct job job = { .o = o, .cfg = cfg, .sigfd = -1, .cout = -1, .cerr = -1,
	                   .first_fail = -1, .exit_code = VIGIL_EXIT_INTERNAL, .clean = true };
	struct job *j = &job;
	size_t nslots = 0;
	struct peer_gather *pg = NULL;
	char *payload = NULL, *plan_text = NULL, err[512] = "";
	int rc;

	j->t0 = job_now();
	snprintf(j->node, sizeof(j->node), "%s", o->node ? o->node : "?");
	log_set_identity(j->node, -1);
	/* Before MPI_Init, so that the threads MPI starts inherit the mask
	 * and every handled signal waits in the signalfd for the loop. */
	rc = sig_block(&j->oldmask);
	if (rc == 0)
		rc = child_set_subreaper();
	if (rc < 0) {
		LOG_ERR("cannot set up signal handling: %s", strerror(-rc));
		return VIGIL_EXIT_INTERNAL;
	}
	rc = peer_init(argc, argv, &j->p);
	if (rc < 0) {
		LOG_ERR("MPI initialisation failed");
		return VIGIL_EXIT_INTERNAL;
	}
	j->rank = peer_rank(j->p);
	j->size = peer_size(j->p);
	log_set_identity(j->node, peer_is_mpi(j->p) ? j->rank : -1);
	if (j->rank == 0) {
		j->results = calloc((size_t)j->size, sizeof(*j->results));
		j->last_seen = calloc((size_t)j->size, sizeof(*j->last_seen));
		j->faulty = calloc((size_t)j->size, sizeof(*j->faulty));
		j->in_attempt = calloc((size_t)j->size, sizeof(*j->in_attempt));
		j->attempts = cJSON_CreateArray();
		if (!j->results || !j->last_seen || !j->faulty || !j->in_attempt || !j->attempts) {
			LOG_ERR("out of memory");
			goto out;
		}
		j->resumes_done = resumes_so_far(o);
		if (o->events) {
			rc = events_open(o->events, &j->ev);
			if (rc < 0)
				LOG_ERR("cannot open the event log %s: %s", o->events, strerror(-rc));
		}
	}

	/* Pre-check, gathered at the coordinator, which plans or refuses. */
	payload = survey(j, &j->slots, &nslots);
	if (!payload || peer_gather_start(j->p, payload, &pg) < 0) {
		LOG_ERR("cannot send this node's report");
		j->clean = false;
		goto out;
	}
	rc = peer_gather_wait(pg, cfg->gather_timeout_s);
	if (rc < 0) {
		j->clean = false;
		goto out;
	}
	if (j->rank == 0) {
		char *mine = coord_plan(j, pg);
		cJSON *pj = mine ? cJSON_Parse(mine) : NULL;
		char job_id[64];
		char *text;

		if (!pj) {
			free(mine);
			LOG_ERR("out of memory");
			j->clean = false;
			goto out;
		}
		/* One name for this job's files, the same on every node. */
		snprintf(job_id, sizeof(job_id), "%s", getenv("SLURM_JOB_ID") ? getenv("SLURM_JOB_ID") : "");
		if (!job_id[0])
			snprintf(job_id, sizeof(job_id), "%ld", (long)getpid());
		cJSON_AddStringToObject(pj, "job", job_id);
		/* a node that never reported may be hung: then nobody may wait
		 * for it in MPI_Finalize */
		cJSON_AddBoolToObject(pj, "finalize", rc == 1);
		text = cJSON_PrintUnformatted(pj);
		cJSON_Delete(pj);
		free(mine);
		for (int r = 1; text && r < j->size; r++)
			if (peer_gather_get(pg, r))
				(void)peer_send(j->p, r, PEER_TAG_PLAN, text);
		plan_text = text;
		if (rc != 1)
			j->clean = false;
	} else {
		if (rc != 1) {
			LOG_ERR("the coordinator did not take this node's report within %.0f s",
			        cfg->gather_timeout_s);
			j->clean = false;
			goto out;
		}
		plan_text = await_plan(j, cfg->gather_timeout_s + 30);
		if (!plan_text) {
			LOG_ERR("no plan from the coordinator");
			j->clean = false;
			goto out;
		}
	}
	j->plan = cJSON_Parse(plan_text);
	if (!j->plan) {
		j->clean = false;
		goto out;
	}
	if (cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(j->plan, "finalize")))
		j->clean = false;
	if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j->plan, "go"))) {
		j->exit_code = (int)job_num(j->plan, "exit_code", VIGIL_EXIT_UNHEALTHY);
		goto out;
	}

	if (o->dry_run) {
		rc = build_launch(j, err, sizeof(err));
		j->exit_code = dry_run(j, rc, err);
		goto out;
	}
	j->loop = loop_new();
	j->sigfd = sig_fd_open();
	if (!j->loop || j->sigfd < 0 || loop_add_fd(j->loop, j->sigfd, POLLIN, on_signal, j) < 0) {
		LOG_ERR("cannot set up the event loop");
		j->clean = false;
		goto out;
	}
	loop_set_before_poll(j->loop, before_poll, j);
	if (j->rank == 0) {
		const cJSON *m;
		double left = time_left(j);

		cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(j->plan, "members"))
			j->in_attempt[(int)m->valuedouble] = true;
		for (int r = 0; r < j->size; r++)
			j->last_seen[r] = job_now();
		log_say("vigil: %s training on %d node%s, master %s:%d: %s\n", mode_name(o->mode),
		        cJSON_GetArraySize(cJSON_GetObjectItem(j->plan, "members")), j->size == 1 ? "" : "s",
		        job_str(j->plan, "master_addr", "?"), (int)job_num(j->plan, "master_port", 0),
		        o->cmd[0]);
		job_event(j, j->node, 0, VIGIL_EVENT_LAUNCH, VIGIL_SEVERITY_INFO,
		           "starting the training", NULL);
		/* the timers end themselves (LOOP_NOMORE) or go with the loop */
		if (j->size > 1 &&
		    !loop_add_timer(j->loop, (long)(o->heartbeat_s * 500), coord_on_hbcheck, j))
			goto oom;
		if (left >= 0) {
			double at = o->resume ? left - o->ckpt_lead_s : left;

			if (!loop_add_timer(j->loop, at > 0 ? (long)(at * 1000) : 0,
			                    coord_on_time_limit, j))
				goto oom;
		}
	}
	if (j->rank != 0 &&
	    !loop_add_timer(j->loop, (long)(o->heartbeat_s * 1000), on_heartbeat, j))
		goto oom;
	if (o->inspect_s > 0) {
		rc = inspect_new(cfg, j->slots, nslots, o->ckpt_dir, 0, &j->insp);
		if (rc < 0)
			LOG_WARN("no inspection on this node: %s", strerror(-rc));
		else if (!loop_add_timer(j->loop, (long)(o->inspect_s * 1000), on_inspect, j))
			goto oom;
	}
	j->perf = perf_node_new(PERF_WINDOW);
	j->red_buf = calloc(perf_buffer_len(PERF_WINDOW), sizeof(double));
	j->red_gather = calloc(PERF_WINDOW, sizeof(double));
	if (j->rank == 0) {
		struct perf_policy_opts po = {
			.threshold = o->perf_threshold, .below = o->perf_below,
			.window = o->perf_window, .straggler_pct = o->straggler_pct,
		};

		j->policy = perf_policy_new(&po, j->size);
		j->hist = calloc((size_t)j->size * PERF_HIST, sizeof(*j->hist));
		j->nhist = calloc((size_t)j->size, sizeof(*j->nhist));
		j->alerts = cJSON_CreateArray();
		if (o->metrics) {
			j->metrics = metrics_new();
			if (!j->metrics)
				goto out;
		}
		j->summary_last = job_now();
		j->perf_last = job_now();
	}
	if (!j->perf || !j->red_buf || !j->red_gather ||
	    (j->rank == 0 && (!j->policy || !j->hist || !j->nhist || !j->alerts))) {
		LOG_ERR("out of memory");
		goto out;
	}
	if (launch_attempt(j) < 0) {
		LOG_ERR("out of memory");
		goto out;
	}
	watch(j);
	if (j->hold > 0)
		hold_allocation(j, j->hold);
	goto out;
oom:
	LOG_ERR("out of memory");
	j->clean = false;
out:
	if (j->child) {
		if (!j->exited)
			LOG_WARN("the job ended before this node's training: stopping it");
		(void)child_signal(j->child, SIGKILL);
	}
	if (j->out)
		(void)output_drain(j->out, 2000);
	if (j->err)
		(void)output_drain(j->err, 2000);
	/* Let the FINAL messages leave before MPI goes away. */
	if (j->rank == 0 && j->p)
		(void)peer_flush(j->p, 5);
	/* MPI_Finalize with a reduction in flight would wait for it */
	if (j->clean && !jobperf_drain(j, 3)) {
		LOG_WARN("a timing reduction did not complete: leaving without MPI_Finalize "
		         "(%d started, %d due)", j->cycles_started, j->cycles_due);
		j->clean = false;
	}
	rc = j->exit_code;
	if (j->ev) {
		int erc = events_close(j->ev);

		if (erc < 0)
			LOG_ERR("cannot write events to %s: %s", o->events, strerror(-erc));
	}
	child_free(j->child);
	output_free(j->out);
	output_free(j->err);
	linebuf_free(j->errlines);
	linebuf_free(j->outlines);
	inspect_free(j->insp);
	if (!j->red)
		perf_node_free(j->perf);  /* else MPI may still read its buffers: left to exit */
	peer_reduce_free(j->red);
	perf_policy_free(j->policy);
	free(j->hist);
	free(j->nhist);
	cJSON_Delete(j->alerts);
	metrics_free(j->metrics);
	for (size_t i = 0; i < sizeof(j->notifiers) / sizeof(j->notifiers[0]); i++)
		if (j->notifiers[i] > 0)
			(void)kill(-j->notifiers[i], SIGTERM);  /* a notifier still hanging */
	if (!j->red) {
		free(j->red_buf);
		free(j->red_gather);
	}
	for (int i = 0; i < TAIL_LINES; i++)
		free(j->tail[i]);
	for (size_t i = 0; i < j->nreported; i++)
		free(j->reported[i]);
	free(j->reported);
	if (j->results)
		for (int r = 0; r < j->size; r++)
			cJSON_Delete(j->results[r].tail);
	free(j->results);
	free(j->last_seen);
	free(j->faulty);
	free(j->in_attempt);
	cJSON_Delete(j->attempts);
	mode_launch_free(&j->launch);
	free(j->mnodes);
	cJSON_Delete(j->plan);
	free(plan_text);
	free(payload);
	peer_gather_free(pg);
	topo_slots_free(j->slots, nslots);
	if (j->sigfd >= 0)
		sig_fd_close(j->sigfd);
	loop_free(j->loop);
	peer_finalize(j->p, j->clean);
	return rc;
}
