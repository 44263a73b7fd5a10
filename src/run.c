/*
 * run.c - `vigil run`: one job, from the pre-check to the exit status.
 *
 * Every node: discover and pre-check, send the report to the coordinator
 * (rank 0), receive the plan (go/no-go, master address and port, the
 * nodes), build the mode's environment, start the training in its own
 * process group, pass its output through, forward signals, and report how
 * it ended.  The coordinator decides: when one node's training fails it
 * has every other node stop its child (TERM, grace, KILL), and when every
 * node has reported it writes the report and tells every node the job's
 * status, which every agent then exits with.
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

#define TAIL_LINES 20            /* stderr lines kept for the report */
#define TAIL_LINE_MAX 512
#define READ_CHUNK (128u << 10)  /* as cat reads; larger reads made the
                                    * producer wait longer on the pipe lock */
#define READS_PER_TURN 4         /* reads per wakeup before others get a turn */
#define OUTPUT_CAP (1u << 20)    /* bytes of output held while our reader is slow */
#define DRAIN_MS 2000            /* after the child exits, wait this long for EOF */
#define LOST_AFTER_STOP_S 15.0   /* beyond the grace: a node that still has not reported */
#define STOP_AFTER_CKPT_MS 5000  /* TERM to KILL once the checkpoint's grace is over */
#define PERF_WINDOW 64           /* iterations per reduction, and kept ahead of the slowest node */
#define PERF_HIST 4096           /* recent e2e times per node kept for the report's medians */
#define SCAN_LINE_MAX 4096       /* timing lines are short; longer lines are cut for scanning */

extern char **environ;

struct node_result {
	bool have;
	bool lost;                /* declared lost: no heartbeat within the timeout */
	bool idle;                /* this node ran no training (horovod off the coordinator) */
	char node[256];
	int exit_code;
	int signal;               /* the signal that ended the training, or 0 */
	int agent_signal;         /* a TERM/INT/HUP the agent received, or 0 */
	char error[512];          /* could not start: why */
	cJSON *tail;              /* last stderr lines */
	double seconds;
};

struct job {
	const struct run_opts *o;
	const struct config *cfg;
	struct peer *p;
	int rank, size;
	char node[256];
	struct loop *loop;
	int sigfd;
	sigset_t oldmask;
	struct events *ev;
	double t0;

	/* this node's training */
	struct mode_launch launch;
	struct child *child;
	struct output *out, *err;
	int cout, cerr;           /* the child's stdout/stderr read ends, -1 at EOF */
	bool exited;
	struct loop_timer *kill_timer, *drain_timer;
	bool stopping;
	int agent_signal;
	struct linebuf *errlines;
	char *tail[TAIL_LINES];
	int ntail, tailnext;
	bool result_sent;
	char start_error[512];
	int start_code;

	/* the coordinator's view */
	struct node_result *results;
	int nresults;
	bool job_stopping;
	int first_fail;
	struct loop_timer *lost_timer;

	/* what discovery found here */
	const char *vendor;       /* NULL on a CPU node */
	size_t nslots;
	struct slot *slots;

	/* resilience, on this node */
	cJSON *plan;              /* the coordinator's plan, updated by restarts */
	struct mode_node *mnodes;
	bool member;              /* runs a training in this attempt */
	int attempt;              /* 0, then 1.. after restarts (VIGIL_RESTART_COUNT) */
	bool ckpt_sent;
	struct inspect *insp;
	struct loop_timer *hb_timer, *insp_timer, *ckpt_timer;
	char **reported;          /* findings already sent: "what device verdict" */
	size_t nreported;

	/* resilience, at the coordinator */
	double *last_seen;        /* monotonic time of each rank's last message */
	bool *faulty;             /* nodes to avoid: faults, lost */
	bool *in_attempt;         /* ranks that run a training in this attempt */
	struct loop_timer *hbcheck_timer, *limit_timer;
	bool checkpointing;
	int end_code;             /* 81 or 83 once the job checkpoints to end; 84: a node lost */
	char end_reason[512];
	bool restarting;          /* start again when every result is in */
	int restarts;
	cJSON *attempts;          /* what ended each attempt, for the report */
	int resumes_done;         /* earlier requeues of this job */

	/* performance detection, on this node */
	struct linebuf *outlines; /* the training's stdout, scanned for timing lines */
	struct perf_node *perf;
	struct peer_reduce *red;  /* the reduction in flight, one at a time */
	size_t perf_base;         /* iterations complete on every node */
	double perf_last;         /* when the coordinator last started a reduction */
	int cycles_started;       /* reductions this node started */
	int cycles_due;           /* reductions the coordinator started (ticks) */
	bool perf_moving;         /* the last reduction found new iterations */
	double *red_buf, *red_gather;

	/* performance detection, at the coordinator */
	struct perf_policy *policy;
	struct perf_iter last_iter;
	bool have_iter;
	double summary_last;
	double *hist;             /* recent e2e per rank (PERF_HIST each), for medians */
	size_t *nhist;
	cJSON *alerts;            /* every alert, for the report */
	int perf_alerts;
	struct metrics *metrics;  /* --metrics */
	double metrics_last;
	pid_t notifiers[16];      /* --notify commands not yet known to be done */

	/* the end */
	bool finishing;           /* coordinator: every result is in */
	bool finished;
	int exit_code;
	bool clean;
	double hold;              /* --hold-on-failure: seconds to keep the allocation */
};

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
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
static int
free_port(void)
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

static const char *
json_str(const cJSON *o, const char *key, const char *dflt)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) ? v->valuestring : dflt;
}

static double
json_num(const cJSON *o, const char *key, double dflt)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

static void
emit_event(struct job *j, const char *node, int rank, const char *kind,
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

/*
 * The coordinator's decision from every node's report: go (and how, on
 * which nodes), or no-go (and why).  Returns the plan as JSON text:
 * {"go", "exit_code"?, "message"?, "master_addr", "master_port",
 *  "nodes": [{"host", "addr", "slots"} per rank], "members": [ranks]}.
 */
static char *
make_plan(struct job *j, struct peer_gather *pg)
{
	struct gather g = { 0 };
	cJSON *plan = cJSON_CreateObject(), *nodes, *members;
	char msg[512];
	char *text = NULL;
	const char *addr0 = NULL;
	int blocked = 0, port = j->o->master_port;
	bool *bad = calloc((size_t)j->size, sizeof(*bad));
	cJSON *infos = cJSON_CreateArray();

	if (!plan || !bad || !infos || gather_init(&g, j->size) < 0)
		goto out;
	for (int r = 0; r < j->size; r++)
		if (gather_add(&g, r, peer_gather_get(pg, r), j->cfg->gather_timeout_s) < 0)
			goto out;
	gather_consistency(&g);
	for (int r = 0; r < j->size; r++) {
		enum verdict v = gather_node_verdict(&g.nodes[r]);

		/* a node that sent nothing cannot be planned for, pre-check or not */
		bad[r] = !g.nodes[r].arrived || (j->o->precheck && v >= j->o->precheck_level);
		blocked += bad[r];
	}
	if (j->o->precheck && j->ev) {
		int rc = gather_write_events(&g, j->ev);

		if (rc < 0)
			LOG_ERR("cannot write events to %s: %s", j->o->events, strerror(-rc));
	}
	nodes = cJSON_AddArrayToObject(plan, "nodes");
	members = cJSON_AddArrayToObject(plan, "members");
	for (int r = 0; nodes && members && r < j->size; r++) {
		cJSON *n = cJSON_CreateObject();
		const char *payload = peer_gather_get(pg, r);
		cJSON *info = payload ? cJSON_Parse(payload) : NULL;

		cJSON_AddItemToArray(nodes, n);
		cJSON_AddStringToObject(n, "host", g.nodes[r].node);
		cJSON_AddStringToObject(n, "addr", json_str(info, "addr", "127.0.0.1"));
		cJSON_AddNumberToObject(n, "slots", json_num(info, "slots", 0));
		if (!bad[r]) {
			cJSON_AddItemToArray(members, cJSON_CreateNumber(r));
			if (!addr0)
				addr0 = cJSON_GetObjectItem(n, "addr")->valuestring;
		}
		cJSON_AddItemToArray(infos, info ? info : cJSON_CreateNull());
	}
	if (blocked) {
		/* The pre-check said no somewhere: say so once, here, for every node. */
		size_t len = 0;
		FILE *f = open_memstream(&text, &len);
		bool elastic = j->o->min_nodes > 0 && j->size - blocked >= j->o->min_nodes;

		if (f) {
			gather_print(f, &g, j->o->verbose);
			fclose(f);
			log_say("%s", text);
			free(text);
			text = NULL;
		}
		for (int r = 0; r < j->size; r++)
			if (bad[r] && j->faulty)
				j->faulty[r] = true;
		if (elastic) {
			/* the platform's elastic training: start on the healthy nodes */
			log_say("vigil: %d of %d node%s not ready: starting on the %d healthy node%s "
			        "(--min-nodes %d)\n", blocked, j->size, j->size == 1 ? "" : "s",
			        j->size - blocked, j->size - blocked == 1 ? "" : "s", j->o->min_nodes);
		} else {
			if (j->o->min_nodes > 0)
				snprintf(msg, sizeof(msg), "%d of %d node%s not ready, fewer than --min-nodes %d "
				         "healthy: not starting the training", blocked, j->size,
				         j->size == 1 ? "" : "s", j->o->min_nodes);
			else
				snprintf(msg, sizeof(msg), "%d of %d node%s not ready (pre-check failed or "
				         "no report): not starting the training", blocked, j->size,
				         j->size == 1 ? "" : "s");
			log_say("vigil: %s\n", msg);
			cJSON_AddBoolToObject(plan, "go", false);
			cJSON_AddNumberToObject(plan, "exit_code", VIGIL_EXIT_UNHEALTHY);
			cJSON_AddStringToObject(plan, "message", msg);
			goto print;
		}
	}
	if (port <= 0) {
		port = free_port();
		if (port < 0) {
			LOG_ERR("cannot find a free port for MASTER_PORT: %s", strerror(-port));
			cJSON_AddBoolToObject(plan, "go", false);
			cJSON_AddNumberToObject(plan, "exit_code", VIGIL_EXIT_INTERNAL);
			goto print;
		}
	}
	cJSON_AddBoolToObject(plan, "go", true);
	cJSON_AddStringToObject(plan, "master_addr", j->o->master_addr ? j->o->master_addr :
	                        addr0 ? addr0 : "127.0.0.1");
	cJSON_AddNumberToObject(plan, "master_port", port);
print:
	text = cJSON_PrintUnformatted(plan);
out:
	gather_free(&g);
	cJSON_Delete(plan);
	cJSON_Delete(infos);
	free(bad);
	return text;
}

/* Wait for the coordinator's plan, bounded; NULL when none came. */
static char *
await_plan(struct job *j, double timeout_s)
{
	const struct timespec nap = { 0, 2000000 };
	double deadline = now_s() + timeout_s;

	while (now_s() < deadline) {
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
	cJSON_AddNumberToObject(r, "seconds", now_s() - j->t0);
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

/* ---- the coordinator ---------------------------------------------------- */

static void finish(struct job *j);
static void restart_all(struct job *j);
static double median_of(double *v, size_t n);
static void metrics_update(struct job *j, bool force);
static void perf_final(struct job *j);
static void perf_summary(struct job *j);

/* COMMAND to every rank whose training still runs (self included). */
static void
command_running(struct job *j, const char *command, const char *why)
{
	cJSON *c = cJSON_CreateObject();
	char *text;

	cJSON_AddStringToObject(c, "command", command);
	cJSON_AddStringToObject(c, "reason", why);
	text = cJSON_PrintUnformatted(c);
	cJSON_Delete(c);
	for (int r = 0; text && r < j->size; r++)
		if (!j->results[r].have)
			(void)peer_send(j->p, r, PEER_TAG_COMMAND, text);
	free(text);
}

static long
on_lost_timeout(struct loop *l, void *arg)
{
	struct job *j = arg;

	(void)l;
	j->lost_timer = NULL;
	for (int r = 0; r < j->size; r++) {
		if (j->results[r].have)
			continue;
		LOG_ERR("rank %d did not report after it was told to stop", r);
		j->results[r].have = j->results[r].lost = true;
		j->faulty[r] = true;
		j->nresults++;
	}
	j->clean = false;
	if (j->restarting)
		restart_all(j);
	else
		finish(j);
	return LOOP_NOMORE;
}

/* Bound the wait for the results of trainings that were told to end. */
static void
arm_lost_timer(struct job *j, double seconds)
{
	loop_del_timer(j->loop, j->lost_timer);
	j->lost_timer = loop_add_timer(j->loop, (long)(seconds * 1000), on_lost_timeout, j);
}

static void
command_stop(struct job *j, const char *why)
{
	if (j->job_stopping)
		return;
	j->job_stopping = true;
	command_running(j, "stop", why);
	emit_event(j, j->node, j->rank, VIGIL_EVENT_STOP, VIGIL_SEVERITY_WARNING, why, NULL);
	arm_lost_timer(j, j->o->grace_s + LOST_AFTER_STOP_S);
}

/*
 * Every healthy node's training saves: the checkpoint signal, the grace,
 * then TERM and KILL.  CODE is the job's end (81 requeue, 83 expired), or 0
 * when the training starts again afterwards (elastic).
 */
static void
checkpoint_all(struct job *j, const char *why, int code)
{
	if (j->checkpointing || j->job_stopping)
		return;
	j->checkpointing = true;
	j->end_code = code;
	snprintf(j->end_reason, sizeof(j->end_reason), "%s", why);
	log_say("vigil: checkpoint: %s\n", why);
	command_running(j, "checkpoint", why);
	emit_event(j, j->node, j->rank, VIGIL_EVENT_CHECKPOINT, VIGIL_SEVERITY_WARNING, why, NULL);
	arm_lost_timer(j, j->o->grace_s + STOP_AFTER_CKPT_MS / 1000.0 + LOST_AFTER_STOP_S);
}

static int
healthy_members(const struct job *j)
{
	int n = 0;

	for (int r = 0; r < j->size; r++)
		n += j->in_attempt[r] && !j->faulty[r];
	return n;
}

/* A node is faulty or lost: what to do about it, per the options. */
static void
node_trouble(struct job *j, int rank, const char *why)
{
	j->faulty[rank] = true;
	if (j->o->resume) {
		checkpoint_all(j, why, VIGIL_EXIT_REQUEUE);
	} else if (j->o->min_nodes > 0 && j->in_attempt[rank] &&
	           healthy_members(j) >= j->o->min_nodes) {
		/* elastic: save, then go on without that node */
		if (!j->checkpointing)
			j->restarting = true;
		checkpoint_all(j, why, 0);
	} else if (j->results[rank].lost) {
		/* nobody can wait for a lost node: end the job */
		if (!j->end_code)
			j->end_code = VIGIL_EXIT_INTERNAL;
		snprintf(j->end_reason, sizeof(j->end_reason), "%s", why);
		command_stop(j, why);
	} else {
		LOG_WARN("%s (neither --resume nor --min-nodes: the training goes on)", why);
	}
}

/* Heartbeats: a node silent for --heartbeat-timeout is lost. */
static long
on_hbcheck(struct loop *l, void *arg)
{
	struct job *j = arg;
	double now = now_s();

	(void)l;
	if (j->finished)
		return LOOP_NOMORE;
	for (int r = 1; r < j->size; r++) {
		struct node_result *nr = &j->results[r];
		char why[512];
		cJSON *d;

		if (nr->have || now - j->last_seen[r] < j->o->heartbeat_timeout_s)
			continue;
		nr->have = nr->lost = true;
		j->nresults++;
		snprintf(why, sizeof(why), "%s (rank %d) lost: no heartbeat for %.1f s",
		         json_str(cJSON_GetArrayItem(cJSON_GetObjectItem(j->plan, "nodes"), r), "host", "?"),
		         r, now - j->last_seen[r]);
		snprintf(nr->node, sizeof(nr->node), "%s",
		         json_str(cJSON_GetArrayItem(cJSON_GetObjectItem(j->plan, "nodes"), r), "host", "?"));
		log_say("vigil: %s\n", why);
		d = cJSON_CreateObject();
		cJSON_AddNumberToObject(d, "silent_s", now - j->last_seen[r]);
		emit_event(j, nr->node, r, VIGIL_EVENT_NODE_LOST, VIGIL_SEVERITY_ERROR, why, d);
		j->clean = false;  /* MPI_Finalize would wait on it */
		node_trouble(j, r, why);
	}
	if (j->nresults == j->size && !j->finished) {
		if (j->restarting)
			restart_all(j);
		else
			finish(j);
		return LOOP_NOMORE;
	}
	return (long)(j->o->heartbeat_s * 500);
}

/* The time limit (minus the lead, to save first) has come. */
static long
on_time_limit(struct loop *l, void *arg)
{
	struct job *j = arg;

	(void)l;
	j->limit_timer = NULL;
	if (j->o->resume) {
		checkpoint_all(j, "the time limit is near", VIGIL_EXIT_EXPIRED);
	} else {
		j->end_code = VIGIL_EXIT_EXPIRED;
		snprintf(j->end_reason, sizeof(j->end_reason), "the time limit was reached");
		command_stop(j, "the time limit was reached");
	}
	return LOOP_NOMORE;
}

/* A node's note: inspection findings, or a checkpoint signal it received. */
static void
take_note(struct job *j, int rank, const char *text)
{
	cJSON *o = cJSON_Parse(text);
	const cJSON *f, *x;
	const char *node;
	char why[512];
	bool fault = false;

	if (!o)
		return;
	node = json_str(o, "node", "?");
	if (cJSON_GetObjectItemCaseSensitive(o, "signal")) {
		snprintf(why, sizeof(why), "%s reached %s (rank %d)",
		         sig_name((int)json_num(o, "signal", 0)), node, rank);
		checkpoint_all(j, why, VIGIL_EXIT_REQUEUE);
	}
	f = cJSON_GetObjectItemCaseSensitive(o, "findings");
	cJSON_ArrayForEach(x, f) {
		bool fail = strcmp(json_str(x, "verdict", ""), "fail") == 0;
		char msg[512];

		snprintf(msg, sizeof(msg), "%s %s: %s", json_str(x, "what", "?"),
		         json_str(x, "device", "?"), json_str(x, "evidence", ""));
		emit_event(j, node, rank, VIGIL_EVENT_FAULT,
		           fail ? VIGIL_SEVERITY_ERROR : VIGIL_SEVERITY_WARNING, msg,
		           cJSON_Duplicate(x, 1));
		log_say("vigil: %s (rank %d): %s%s\n", node, rank, fail ? "fault: " : "warning: ", msg);
		if (fail && !fault) {
			fault = true;
			snprintf(why, sizeof(why), "%.100s (rank %d): %.380s", node, rank, msg);
		}
	}
	if (fault)
		node_trouble(j, rank, why);
	cJSON_Delete(o);
}

static void
take_result(struct job *j, int rank, const char *text)
{
	struct node_result *nr = &j->results[rank];
	cJSON *o = cJSON_Parse(text);
	char why[512];

	if (!o || nr->have) {
		cJSON_Delete(o);
		return;
	}
	nr->have = true;
	j->nresults++;
	snprintf(nr->node, sizeof(nr->node), "%s", json_str(o, "node", "?"));
	nr->idle = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "idle"));
	nr->exit_code = (int)json_num(o, "exit_code", VIGIL_EXIT_INTERNAL);
	nr->signal = (int)json_num(o, "signal", 0);
	nr->agent_signal = (int)json_num(o, "agent_signal", 0);
	nr->seconds = json_num(o, "seconds", 0);
	snprintf(nr->error, sizeof(nr->error), "%s", json_str(o, "error", ""));
	cJSON_Delete(nr->tail);
	nr->tail = cJSON_DetachItemFromObjectCaseSensitive(o, "stderr_tail");
	cJSON_Delete(o);

	if (!nr->idle) {
		cJSON *d = cJSON_CreateObject();
		char msg[512];

		cJSON_AddNumberToObject(d, "exit_code", nr->exit_code);
		cJSON_AddNumberToObject(d, "attempt", j->restarts);
		if (nr->signal)
			cJSON_AddStringToObject(d, "signal", sig_name(nr->signal));
		if (nr->error[0])
			cJSON_AddStringToObject(d, "error", nr->error);
		snprintf(msg, sizeof(msg), "training ended with status %d", nr->exit_code);
		emit_event(j, nr->node, rank, VIGIL_EVENT_EXIT,
		           nr->exit_code ? VIGIL_SEVERITY_ERROR : VIGIL_SEVERITY_INFO, msg, d);
	}
	/* While checkpointing, trainings end because they were told to. */
	if ((nr->exit_code != 0 || nr->agent_signal) && j->first_fail < 0 && !j->checkpointing) {
		j->first_fail = rank;
		if (nr->agent_signal && !nr->exit_code)
			snprintf(why, sizeof(why), "%s (rank %d) was told to stop (%s)", nr->node,
			         rank, sig_name(nr->agent_signal));
		else if (nr->signal)
			snprintf(why, sizeof(why), "%s (rank %d): the training was killed by %s",
			         nr->node, rank, sig_name(nr->signal));
		else
			snprintf(why, sizeof(why), "%s (rank %d): the training exited with status %d",
			         nr->node, rank, nr->exit_code);
		/* fault restart (故障重启): again, everywhere, up to --restart times */
		if (j->o->restart_max > j->restarts && !nr->agent_signal && !nr->error[0] &&
		    !j->end_code) {
			j->restarting = true;
			snprintf(j->end_reason, sizeof(j->end_reason), "%s", why);
		}
		command_stop(j, why);
	}
	if (j->nresults == j->size) {
		if (j->restarting)
			restart_all(j);
		else
			finish(j);
	}
}

/* Every node reported: start the training again (restart, elastic). */
static void
restart_all(struct job *j)
{
	const cJSON *nodes = cJSON_GetObjectItemCaseSensitive(j->plan, "nodes");
	cJSON *cmd, *members, *a;
	const char *addr = NULL;
	char *text, msg[512];
	int port, nmembers = 0;
	bool crash = j->first_fail >= 0;

	loop_del_timer(j->loop, j->lost_timer);
	j->lost_timer = NULL;
	j->restarting = false;
	/* what ended this attempt, for the report */
	a = cJSON_CreateObject();
	cJSON_AddNumberToObject(a, "attempt", j->restarts);
	cJSON_AddStringToObject(a, "ended_by", j->end_reason);
	if (crash) {
		cJSON_AddStringToObject(a, "node", j->results[j->first_fail].node);
		cJSON_AddNumberToObject(a, "rank", j->first_fail);
		cJSON_AddNumberToObject(a, "exit_code", j->results[j->first_fail].exit_code);
	}
	cJSON_AddItemToArray(j->attempts, a);

	for (int r = 0; r < j->size; r++) {
		j->in_attempt[r] = j->in_attempt[r] && !j->faulty[r] && !j->results[r].lost;
		nmembers += j->in_attempt[r];
	}
	if (nmembers == 0 || (j->o->min_nodes > 0 && nmembers < j->o->min_nodes)) {
		log_say("vigil: cannot start again: %d healthy node%s left%s\n", nmembers,
		        nmembers == 1 ? "" : "s", j->o->min_nodes > 0 ? ", fewer than --min-nodes" : "");
		if (!j->end_code && !crash)
			j->end_code = VIGIL_EXIT_INTERNAL;
		finish(j);
		return;
	}
	port = free_port();
	if (port < 0)
		port = (int)json_num(j->plan, "master_port", 0);
	j->restarts++;
	cmd = cJSON_CreateObject();
	cJSON_AddStringToObject(cmd, "command", "restart");
	cJSON_AddNumberToObject(cmd, "attempt", j->restarts);
	cJSON_AddNumberToObject(cmd, "master_port", port);
	members = cJSON_AddArrayToObject(cmd, "members");
	for (int r = 0; r < j->size; r++) {
		if (!j->in_attempt[r])
			continue;
		cJSON_AddItemToArray(members, cJSON_CreateNumber(r));
		if (!addr)
			addr = json_str(cJSON_GetArrayItem(nodes, r), "addr", "127.0.0.1");
	}
	cJSON_AddStringToObject(cmd, "master_addr", j->o->master_addr ? j->o->master_addr : addr);
	text = cJSON_PrintUnformatted(cmd);
	cJSON_Delete(cmd);

	snprintf(msg, sizeof(msg), "starting the training again (attempt %d) on %d node%s after: %.400s",
	         j->restarts, nmembers, nmembers == 1 ? "" : "s", j->end_reason);
	log_say("vigil: %s\n", msg);
	emit_event(j, j->node, j->rank, VIGIL_EVENT_RESTART, VIGIL_SEVERITY_WARNING, msg, NULL);

	/* a fresh attempt: every live node reports again */
	j->nresults = 0;
	for (int r = 0; r < j->size; r++) {
		struct node_result *nr = &j->results[r];

		if (nr->lost) {
			j->nresults++;
			continue;
		}
		cJSON_Delete(nr->tail);
		memset(nr, 0, sizeof(*nr));
		if (text)
			(void)peer_send(j->p, r, PEER_TAG_COMMAND, text);
	}
	free(text);
	j->first_fail = -1;
	j->job_stopping = false;
	j->checkpointing = false;
	j->end_code = 0;
	j->end_reason[0] = '\0';
}

static const char *
job_state(const struct job *j)
{
	if (j->end_code == VIGIL_EXIT_EXPIRED)
		return VIGIL_STATE_EXPIRED;
	for (int r = 0; r < j->size; r++)
		if (j->results[r].have && j->results[r].agent_signal)
			return VIGIL_STATE_STOPPED;
	if (j->end_code == VIGIL_EXIT_REQUEUE) {
		for (int r = 0; r < j->size; r++)
			if (j->faulty[r])
				return VIGIL_STATE_ERROR;
		return VIGIL_STATE_STOPPED;  /* the batch system asked */
	}
	if (j->first_fail >= 0 || j->end_code)
		return VIGIL_STATE_ERROR;
	for (int r = 0; r < j->size; r++)
		if (j->results[r].lost)
			return VIGIL_STATE_ERROR;
	return VIGIL_STATE_SUCCEEDED;
}

static int
job_exit_code(const struct job *j)
{
	if (j->end_code == VIGIL_EXIT_REQUEUE && j->o->max_resumes >= 0 &&
	    j->resumes_done >= j->o->max_resumes)
		return VIGIL_EXIT_NO_REQUEUE;  /* 最大续训次数 reached */
	if (j->end_code)
		return j->end_code;
	if (j->first_fail >= 0) {
		const struct node_result *nr = &j->results[j->first_fail];

		if (nr->exit_code)
			return nr->exit_code;
		if (nr->agent_signal)
			return 128 + nr->agent_signal;
	}
	for (int r = 0; r < j->size; r++)
		if (j->results[r].lost)
			return VIGIL_EXIT_INTERNAL;
	return 0;
}

/* The name of RANK's node, from the plan. */
static const char *
node_host(const struct job *j, int rank)
{
	const cJSON *nodes = cJSON_GetObjectItemCaseSensitive(j->plan, "nodes");

	return json_str(cJSON_GetArrayItem(nodes, rank), "host", "?");
}

/* Write TEXT to PATH atomically (a temporary file, fsync, rename). */
static int
write_atomic(const char *path, const char *text)
{
	char tmp[4096];
	FILE *f;
	int rc = 0;

	snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
	f = fopen(tmp, "w");
	if (!f)
		return -errno;
	if (fputs(text, f) < 0 || fflush(f) != 0 || fsync(fileno(f)) != 0)
		rc = -errno;
	if (fclose(f) != 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && rename(tmp, path) != 0)
		rc = -errno;
	if (rc < 0)
		(void)unlink(tmp);
	return rc;
}

static void
write_report(struct job *j, const char *state, int code)
{
	cJSON *r = cJSON_CreateObject(), *nodes, *cmd;
	char ts[32];
	char *text;
	int rc;

	if (!r)
		return;
	events_timestamp(ts, sizeof(ts));
	cJSON_AddStringToObject(r, "state", state);
	cJSON_AddNumberToObject(r, "exit_code", code);
	cJSON_AddStringToObject(r, "mode", mode_name(j->o->mode));
	cmd = cJSON_AddArrayToObject(r, "command");
	for (int i = 0; cmd && j->o->cmd[i]; i++)
		cJSON_AddItemToArray(cmd, cJSON_CreateString(j->o->cmd[i]));
	cJSON_AddStringToObject(r, "ended", ts);
	cJSON_AddNumberToObject(r, "seconds", now_s() - j->t0);
	cJSON_AddNumberToObject(r, "nodes_total", j->size);
	nodes = cJSON_AddArrayToObject(r, "nodes");
	for (int k = 0; nodes && k < j->size; k++) {
		const struct node_result *nr = &j->results[k];
		cJSON *n = cJSON_CreateObject();

		cJSON_AddItemToArray(nodes, n);
		cJSON_AddStringToObject(n, "node", node_host(j, k));
		cJSON_AddNumberToObject(n, "rank", k);
		if (!nr->have || nr->lost) {
			cJSON_AddStringToObject(n, "state", "lost");
			continue;
		}
		cJSON_AddStringToObject(n, "state", nr->idle ? "idle" :
		                        nr->exit_code ? VIGIL_STATE_ERROR : VIGIL_STATE_SUCCEEDED);
		cJSON_AddNumberToObject(n, "exit_code", nr->exit_code);
		if (nr->signal)
			cJSON_AddStringToObject(n, "signal", sig_name(nr->signal));
		if (nr->error[0])
			cJSON_AddStringToObject(n, "error", nr->error);
		cJSON_AddNumberToObject(n, "seconds", nr->seconds);
		if (nr->tail)
			cJSON_AddItemToObject(n, "stderr_tail", cJSON_Duplicate(nr->tail, 1));
	}
	if (j->end_reason[0])
		cJSON_AddStringToObject(r, "reason", j->end_reason);
	{
		cJSON *fn = cJSON_AddArrayToObject(r, "faulty_nodes");

		for (int k = 0; fn && k < j->size; k++)
			if (j->faulty[k])
				cJSON_AddItemToArray(fn, cJSON_CreateString(node_host(j, k)));
	}
	cJSON_AddNumberToObject(r, "restarts", j->restarts);
	if (j->hist) {
		/* 性能检测: per-node medians, the slowest node, the alerts */
		cJSON *perf = cJSON_AddObjectToObject(r, "performance");
		cJSON *pn = cJSON_AddArrayToObject(perf, "nodes");
		double worst = -1, tmp[PERF_HIST];
		int slowest = -1;

		cJSON_AddNumberToObject(perf, "iterations", (double)j->perf_base);
		for (int k = 0; pn && k < j->size; k++) {
			size_t n = j->nhist[k] < PERF_HIST ? j->nhist[k] : PERF_HIST;
			cJSON *x;
			double med;

			if (n == 0)
				continue;
			memcpy(tmp, j->hist + (size_t)k * PERF_HIST, n * sizeof(double));
			med = median_of(tmp, n);
			x = cJSON_CreateObject();
			cJSON_AddStringToObject(x, "node", node_host(j, k));
			cJSON_AddNumberToObject(x, "rank", k);
			cJSON_AddNumberToObject(x, "median_e2e_ms", med);
			cJSON_AddNumberToObject(x, "samples", (double)n);
			cJSON_AddItemToArray(pn, x);
			if (med > worst) {
				worst = med;
				slowest = k;
			}
		}
		if (slowest >= 0)
			cJSON_AddStringToObject(perf, "slowest_node", node_host(j, slowest));
		else
			cJSON_AddNullToObject(perf, "slowest_node");
		cJSON_AddItemToObject(perf, "alerts", cJSON_Duplicate(j->alerts, 1));
	}
	cJSON_AddItemToObject(r, "attempts", cJSON_Duplicate(j->attempts, 1));
	cJSON_AddNumberToObject(r, "resumes", j->resumes_done);
	if (j->first_fail >= 0) {
		const struct node_result *nr = &j->results[j->first_fail];
		cJSON *ff = cJSON_AddObjectToObject(r, "first_failure");

		cJSON_AddStringToObject(ff, "node", nr->node);
		cJSON_AddNumberToObject(ff, "rank", j->first_fail);
		cJSON_AddNumberToObject(ff, "exit_code", nr->exit_code);
		if (nr->signal)
			cJSON_AddStringToObject(ff, "signal", sig_name(nr->signal));
		if (nr->error[0])
			cJSON_AddStringToObject(ff, "error", nr->error);
		if (nr->tail)
			cJSON_AddItemToObject(ff, "stderr_tail", cJSON_Duplicate(nr->tail, 1));
	} else {
		cJSON_AddNullToObject(r, "first_failure");
	}
	text = cJSON_Print(r);
	cJSON_Delete(r);
	if (!text)
		return;
	/* a reader (the batch script) never sees half a report */
	rc = write_atomic(j->o->report, text);
	if (rc < 0)
		LOG_ERR("cannot write the report %s: %s", j->o->report, strerror(-rc));
	free(text);
}

/* One message for a failure to start shared by many nodes, not one per node. */
static void
say_start_errors(const struct job *j)
{
	for (int r = 0; r < j->size; r++) {
		const struct node_result *nr = &j->results[r];
		int same = 0;
		bool first = true;

		if (!nr->have || !nr->error[0])
			continue;
		for (int k = 0; k < j->size; k++) {
			if (!j->results[k].have || strcmp(j->results[k].error, nr->error) != 0)
				continue;
			if (k < r)
				first = false;
			same++;
		}
		if (first)
			log_say("vigil: %s (on %d of %d node%s)\n", nr->error, same, j->size,
			        j->size == 1 ? "" : "s");
	}
}

/* Coordinator: every node reported (or the rest are lost).  End the job. */
static void
finish(struct job *j)
{
	const char *state;
	int code;
	char msg[512];
	cJSON *d, *fin;
	char *text;
	int rc;

	/* the iterations printed since the last reduction, and a last summary */
	j->finishing = true;
	perf_final(j);
	if (j->have_iter && j->o->summary_s > 0)
		perf_summary(j);
	state = job_state(j);
	code = job_exit_code(j);

	loop_del_timer(j->loop, j->lost_timer);
	j->lost_timer = NULL;
	say_start_errors(j);
	if (j->end_code) {
		snprintf(msg, sizeof(msg), "job %s (exit %d%s): %.400s", state, code,
		         code == VIGIL_EXIT_REQUEUE ? ", requeue" :
		         code == VIGIL_EXIT_NO_REQUEUE ? ", resumes exhausted: do not requeue" : "",
		         j->end_reason);
	} else if (j->first_fail >= 0) {
		const struct node_result *nr = &j->results[j->first_fail];

		snprintf(msg, sizeof(msg), "job %s: %s (rank %d) %s %d after %.1f s%s", state, nr->node,
		         j->first_fail, nr->error[0] ? "could not start the training, status" :
		         "ended first, with status", code, nr->seconds,
		         j->restarts ? " (no restarts left)" : "");
	} else {
		snprintf(msg, sizeof(msg), "job %s on %d node%s in %.1f s", state, j->size,
		         j->size == 1 ? "" : "s", now_s() - j->t0);
	}
	log_say("vigil: %s\n", msg);
	d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "state", state);
	cJSON_AddNumberToObject(d, "exit_code", code);
	emit_event(j, j->node, j->rank, VIGIL_EVENT_JOB,
	           strcmp(state, VIGIL_STATE_SUCCEEDED) ? VIGIL_SEVERITY_ERROR : VIGIL_SEVERITY_INFO,
	           msg, d);
	if (j->o->report)
		write_report(j, state, code);
	j->finished = true;  /* for the metrics' state */
	metrics_update(j, true);
	if (j->o->exclude_file) {
		/* for sbatch --exclude: the nodes to avoid next time, one a line */
		size_t len = 0;
		char *list = NULL;
		FILE *f = open_memstream(&list, &len);

		if (f) {
			for (int r = 0; r < j->size; r++)
				if (j->faulty[r])
					fprintf(f, "%s\n", node_host(j, r));
			fclose(f);
			rc = write_atomic(j->o->exclude_file, list ? list : "");
			if (rc < 0)
				LOG_ERR("cannot write %s: %s", j->o->exclude_file, strerror(-rc));
			free(list);
		}
	}
	if (code == VIGIL_EXIT_REQUEUE && j->o->state_file) {
		char st[64];

		snprintf(st, sizeof(st), "{\"resumes\": %d}\n", j->resumes_done + 1);
		rc = write_atomic(j->o->state_file, st);
		if (rc < 0)
			LOG_ERR("cannot write %s: %s", j->o->state_file, strerror(-rc));
	}
	if (code != 0 && j->o->hold_s > 0) {
		/* 调试终端: keep the allocation; say where the trouble is */
		const char *jobid = getenv("SLURM_JOB_ID");

		log_say("vigil: holding the allocation for %.0f s for debugging (SIGTERM ends it)\n",
		        j->o->hold_s);
		for (int r = 0; r < j->size; r++) {
			const struct node_result *nr = &j->results[r];

			if (!j->faulty[r] && !(nr->have && (nr->exit_code || nr->lost)))
				continue;
			if (jobid)
				log_say("vigil:   %s (rank %d): srun --jobid=%s -w %s --pty bash\n",
				        node_host(j, r), r, jobid, node_host(j, r));
			else
				log_say("vigil:   %s (rank %d): ssh %s\n", node_host(j, r), r, node_host(j, r));
		}
	}

	fin = cJSON_CreateObject();
	cJSON_AddNumberToObject(fin, "exit_code", code);
	cJSON_AddStringToObject(fin, "state", state);
	if (code != 0 && j->o->hold_s > 0)
		cJSON_AddNumberToObject(fin, "hold", j->o->hold_s);
	/* MPI_Finalize waits for every rank: with a node lost, nobody may
	 * call it, or the healthy nodes would wait on the lost one. */
	for (int r = 0; r < j->size; r++)
		if (j->results[r].lost)
			j->clean = false;
	cJSON_AddBoolToObject(fin, "finalize", j->clean);
	cJSON_AddNumberToObject(fin, "cycles", j->cycles_due);
	text = cJSON_PrintUnformatted(fin);
	cJSON_Delete(fin);
	for (int r = 1; text && r < j->size; r++)
		if (j->results[r].have && !j->results[r].lost)
			(void)peer_send(j->p, r, PEER_TAG_FINAL, text);
	free(text);
	j->exit_code = code;
	j->hold = code != 0 ? j->o->hold_s : 0;
	j->finished = true;
	loop_stop(j->loop);
}

/* ---- performance detection ---------------------------------------------- */

/*
 * Reductions run in lock step: the coordinator starts one every
 * --perf-interval once its previous one completed (so every node had
 * joined it), and tells the others ("perf" ticks); a node starts one per
 * tick, in order, after its previous one.  Every node thus starts the same
 * reductions, a stalled node only holds the next one back, and at the end
 * FINAL says how many there were, so each node can finish them before
 * MPI_Finalize.
 */

static double
median_of(double *v, size_t n)
{
	/* insertion sort: n is at most PERF_HIST, and this runs at the end */
	for (size_t i = 1; i < n; i++) {
		double x = v[i];
		size_t k = i;

		while (k > 0 && v[k - 1] > x) {
			v[k] = v[k - 1];
			k--;
		}
		v[k] = x;
	}
	if (n == 0)
		return NAN;
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* --notify: the alert as JSON on the command's stdin; never waits for it. */
static void
notify_alert(struct job *j, const char *json)
{
	pid_t pid;
	int rc = notify_spawn(j->o->notify, json, &pid);
	size_t n = sizeof(j->notifiers) / sizeof(j->notifiers[0]);

	if (rc < 0) {
		LOG_ERR("cannot run the notifier '%s': %s", j->o->notify, strerror(-rc));
		return;
	}
	/* remembered so that one still running at the end can be stopped */
	for (size_t i = 0; i < n; i++) {
		if (j->notifiers[i] <= 0 || kill(j->notifiers[i], 0) < 0) {
			j->notifiers[i] = pid;
			return;
		}
	}
}

/* --metrics: the current figures, rewritten at most once a second. */
static void
metrics_update(struct job *j, bool force)
{
	const struct perf_iter *it = &j->last_iter;
	unsigned up = 0, lost = 0;
	int rc;

	if (!j->metrics || (!force && now_s() - j->metrics_last < 1))
		return;
	j->metrics_last = now_s();
	metrics_set_state(j->metrics, j->finished ? job_state(j) : VIGIL_STATE_RUNNING);
	metrics_set_iterations(j->metrics, j->perf_base);
	if (j->have_iter) {
		struct metrics_stats hw = { it->hw_min, it->hw_mean, it->hw_max };
		struct metrics_stats e2e = { it->e2e_min, it->e2e_mean, it->e2e_max };
		struct metrics_stats ratio = { it->r_min, it->r_mean, it->r_max };

		metrics_set_iteration(j->metrics, &hw, &e2e, &ratio);
	}
	for (int r = 0; r < j->size; r++) {
		if (j->results[r].lost)
			lost++;
		else
			up++;
		if (j->nhist && j->nhist[r])
			metrics_set_node_e2e(j->metrics, node_host(j, r),
			        j->hist[(size_t)r * PERF_HIST + (j->nhist[r] - 1) % PERF_HIST]);
	}
	metrics_set_nodes(j->metrics, up, lost);
	rc = metrics_write(j->metrics, j->o->metrics);
	if (rc < 0) {
		static bool said;

		if (!said)
			LOG_ERR("cannot write the metrics file %s: %s", j->o->metrics, strerror(-rc));
		said = true;
	}
}

static void
perf_alert(struct job *j, const struct perf_alert *a)
{
	cJSON *d = cJSON_CreateObject(), *copy;
	char *text;

	j->perf_alerts++;
	cJSON_AddStringToObject(d, "kind", a->kind);
	cJSON_AddNumberToObject(d, "iter", (double)a->iter);
	cJSON_AddStringToObject(d, "node", node_host(j, a->rank));
	cJSON_AddNumberToObject(d, "rank", a->rank);
	cJSON_AddNumberToObject(d, "value", a->value);
	cJSON_AddStringToObject(d, "message", a->message);
	copy = cJSON_Duplicate(d, 1);
	if (copy)
		cJSON_AddItemToArray(j->alerts, copy);
	if (j->metrics)
		metrics_add_alert(j->metrics, a->kind);
	log_say("vigil: performance alert: %s\n", a->message);
	text = cJSON_PrintUnformatted(d);
	if (text && j->o->notify)
		notify_alert(j, text);
	free(text);
	emit_event(j, node_host(j, a->rank), a->rank, VIGIL_EVENT_ALERT, VIGIL_SEVERITY_WARNING,
	           a->message, d);
	if (j->o->perf_reschedule && !j->finishing) {
		char why[400];

		/* reschedule: save and requeue away from the node named */
		snprintf(why, sizeof(why), "performance: %.300s", a->message);
		j->faulty[a->rank] = true;
		checkpoint_all(j, why, VIGIL_EXIT_REQUEUE);
	}
}

static void
perf_summary(struct job *j)
{
	const struct perf_iter *it = &j->last_iter;
	cJSON *d = cJSON_CreateObject(), *ne;
	char msg[512];

	snprintf(msg, sizeof(msg), "iter %zu  e2e %.0f ms (min %.0f %s, max %.0f %s)  "
	         "hw/e2e %.2f (min %.2f %s)", it->iter, it->e2e_mean, it->e2e_min,
	         node_host(j, it->e2e_min_rank), it->e2e_max, node_host(j, it->e2e_max_rank),
	         it->r_mean, it->r_min, node_host(j, it->r_min_rank));
	log_say("vigil: %s\n", msg);
	cJSON_AddNumberToObject(d, "iter", (double)it->iter);
	cJSON_AddNumberToObject(d, "e2e_min", it->e2e_min);
	cJSON_AddNumberToObject(d, "e2e_mean", it->e2e_mean);
	cJSON_AddNumberToObject(d, "e2e_max", it->e2e_max);
	cJSON_AddStringToObject(d, "e2e_min_node", node_host(j, it->e2e_min_rank));
	cJSON_AddStringToObject(d, "e2e_max_node", node_host(j, it->e2e_max_rank));
	cJSON_AddNumberToObject(d, "hw_mean", it->hw_mean);
	cJSON_AddNumberToObject(d, "r_min", it->r_min);
	cJSON_AddNumberToObject(d, "r_mean", it->r_mean);
	cJSON_AddNumberToObject(d, "r_max", it->r_max);
	cJSON_AddStringToObject(d, "r_min_node", node_host(j, it->r_min_rank));
	cJSON_AddStringToObject(d, "r_max_node", node_host(j, it->r_max_rank));
	ne = cJSON_AddObjectToObject(d, "node_e2e");
	for (int r = 0; ne && r < j->size; r++)
		if (j->nhist[r])
			cJSON_AddNumberToObject(ne, node_host(j, r),
			        j->hist[(size_t)r * PERF_HIST + (j->nhist[r] - 1) % PERF_HIST]);
	emit_event(j, j->node, j->rank, VIGIL_EVENT_PERF, VIGIL_SEVERITY_INFO, msg, d);
}

/* Coordinator: one iteration complete on every node. */
static void
perf_iteration(struct job *j, const struct perf_iter *it, const double *node_e2e)
{
	const char *names[256];
	struct perf_alert alerts[8];
	size_t n;

	for (int r = 0; r < j->size; r++) {
		if (node_e2e && !isnan(node_e2e[r])) {
			j->hist[(size_t)r * PERF_HIST + j->nhist[r] % PERF_HIST] = node_e2e[r];
			j->nhist[r]++;
		}
		if (r < 256)
			names[r] = node_host(j, r);
	}
	j->last_iter = *it;
	j->have_iter = true;
	n = perf_policy_feed(j->policy, it, node_e2e, j->size <= 256 ? names : NULL, alerts, 8);
	for (size_t k = 0; k < n; k++)
		perf_alert(j, &alerts[k]);
	if (j->o->summary_s > 0 && now_s() - j->summary_last >= j->o->summary_s) {
		j->summary_last = now_s();
		perf_summary(j);
	}
	metrics_update(j, false);
}

/* Start this node's next reduction: its window of iterations, as rank RANK. */
static int
perf_start(struct job *j)
{
	bool contributes = j->member && j->launch.run;
	int rc;

	/* No training here (horovod off the coordinator, a node left out):
	 * nothing to say, and no say in how far everyone is. */
	perf_pack(contributes ? j->perf : NULL, j->perf_base, PERF_WINDOW, j->rank, j->red_buf);
	for (size_t k = 0; k < PERF_WINDOW; k++) {
		double hw, e2e;

		j->red_gather[k] = contributes &&
		        perf_node_get(j->perf, j->perf_base + 1 + k, &hw, &e2e) == 0 ? e2e : NAN;
	}
	rc = peer_reduce_start(j->p, perf_combine, j->red_buf, perf_buffer_len(PERF_WINDOW),
	                       j->red_gather, PERF_WINDOW, &j->red);
	if (rc == 0)
		j->cycles_started++;
	return rc;
}

/* Once per loop turn: finish the reduction in flight, start the next one. */
static void
perf_cycle(struct job *j)
{
	int rc;

	if (!j->perf)
		return;
	if (j->red) {
		const double *res;
		struct perf_iter its[PERF_WINDOW];
		size_t nb, n;

		rc = peer_reduce_test(j->red);
		if (rc == 0)
			return;
		if (rc < 0) {
			LOG_ERR("the timing reduction failed: performance detection stops");
			perf_node_free(j->perf);
			j->perf = NULL;
			return;
		}
		res = peer_reduce_result(j->red);
		perf_unpack(res, j->perf_base, PERF_WINDOW, perf_contributors(res), &nb, its, &n);
		if (j->rank == 0) {
			const double *g = peer_reduce_gathered(j->red);
			double *ne = calloc((size_t)j->size, sizeof(*ne));

			for (size_t k = 0; ne && k < n; k++) {
				size_t slot = its[k].iter - j->perf_base - 1;

				for (int r = 0; r < j->size; r++)
					ne[r] = g ? g[(size_t)r * PERF_WINDOW + slot] : NAN;
				perf_iteration(j, &its[k], ne);
			}
			free(ne);
		}
		j->perf_moving = nb > j->perf_base;
		if (nb > j->perf_base) {
			perf_node_forget(j->perf, nb);
			j->perf_base = nb;
		}
		peer_reduce_free(j->red);
		j->red = NULL;
	}
	/* the coordinator ticks while the job runs; after FINAL the others
	 * still catch up with the ticks they were told of */
	/* A training that prints no timing lines costs a reduction every ten
	 * intervals only (to learn whether the other nodes have some). */
	if (j->rank == 0 && !j->finished && now_s() - j->perf_last >= j->o->perf_interval_s &&
	    (perf_node_done(j->perf) > j->perf_base || j->perf_moving ||
	     now_s() - j->perf_last >= 10 * j->o->perf_interval_s)) {
		j->perf_last = now_s();
		for (int r = 1; r < j->size; r++)
			if (!j->results[r].lost)
				(void)peer_send(j->p, r, PEER_TAG_COMMAND, "{\"command\":\"perf\"}");
		j->cycles_due++;
	}
	if (j->cycles_started < j->cycles_due && perf_start(j) < 0) {
		LOG_ERR("cannot start the timing reduction: performance detection stops");
		perf_node_free(j->perf);
		j->perf = NULL;
	}
}

/*
 * Coordinator, at the end: one more reduction, so that the iterations the
 * trainings printed since the last one are counted too.  Every live node
 * is still in its loop (waiting for FINAL) and joins it.  Bounded: a node
 * that cannot join costs 2 s.
 */
static void
perf_final(struct job *j)
{
	const struct timespec nap = { 0, 1000000 };
	double deadline = now_s() + 2;

	if (!j->perf)
		return;
	for (int r = 0; r < j->size; r++)
		if (j->results[r].lost)
			return;  /* it would never complete */
	j->perf_last = 0;  /* due now */
	do {
		perf_cycle(j);
		if (j->red)
			nanosleep(&nap, NULL);
	} while (j->red && now_s() < deadline);
}

/*
 * Before MPI_Finalize: start the reductions the coordinator started that
 * this node has not, and let every one complete, within TIMEOUT_S.
 * Returns true when none is left in flight.
 */
static bool
perf_drain(struct job *j, double timeout_s)
{
	const struct timespec nap = { 0, 1000000 };
	double deadline = now_s() + timeout_s;

	if (!j->perf)
		return true;
	while (j->red || j->cycles_started < j->cycles_due) {
		if (now_s() >= deadline)
			return false;
		perf_cycle(j);
		if (j->red)
			nanosleep(&nap, NULL);
	}
	return true;
}

/* ---- MPI progress, once per loop turn ----------------------------------- */

static void restart_local(struct job *j, const cJSON *cmd);

static void
take_command(struct job *j, const cJSON *o)
{
	const char *cmd = json_str(o, "command", "");

	if (strcmp(cmd, "stop") == 0) {
		LOG_INFO("stopping: %s", json_str(o, "reason", "the coordinator said so"));
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
			j->last_seen[src] = now_s();  /* any message is a sign of life */
		if (tag == PEER_TAG_RESULT && j->rank == 0) {
			take_result(j, src, msg);
		} else if (tag == PEER_TAG_NOTE && j->rank == 0) {
			take_note(j, src, msg);
		} else if (tag == PEER_TAG_COMMAND) {
			take_command(j, o);
		} else if (tag == PEER_TAG_FINAL) {
			j->exit_code = (int)json_num(o, "exit_code", VIGIL_EXIT_INTERNAL);
			j->clean = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "finalize"));
			j->hold = json_num(o, "hold", 0);
			/* the reductions the coordinator started, to finish before MPI ends */
			if (json_num(o, "cycles", 0) > j->cycles_due)
				j->cycles_due = (int)json_num(o, "cycles", 0);
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
	perf_cycle(j);
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
		j->mnodes[i].host = json_str(x, "host", "?");
		j->mnodes[i].slots = (int)json_num(x, "slots", 0);
		if (j->mnodes[i].slots < 1)
			j->mnodes[i].slots = 1;  /* a CPU node: SLOTS is 1 */
	}
	j->member = me >= 0;
	if (j->o->run_dir)
		snprintf(rundir, sizeof(rundir), "%s", j->o->run_dir);
	else
		snprintf(rundir, sizeof(rundir), "%s/vigil.%s", tmp && *tmp ? tmp : "/tmp",
		         json_str(j->plan, "job", "0"));
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
	mp.master_addr = json_str(j->plan, "master_addr", "127.0.0.1");
	mp.master_port = (int)json_num(j->plan, "master_port", 0);
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
	j->attempt = (int)json_num(cmd, "attempt", j->attempt + 1);
	cJSON_ReplaceItemInObject(j->plan, "master_port",
	                          cJSON_CreateNumber(json_num(cmd, "master_port", 0)));
	cJSON_ReplaceItemInObject(j->plan, "master_addr",
	                          cJSON_CreateString(json_str(cmd, "master_addr", "127.0.0.1")));
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

		n = (int)json_num(st, "resumes", 0);
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
		return j->o->time_limit_s - (now_s() - j->t0);
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
	double until = now_s() + seconds;
	struct pollfd pfd = { .fd = j->sigfd, .events = POLLIN };

	while (now_s() < until) {
		int left = (int)((until - now_s()) * 1000) + 1;
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

	j->t0 = now_s();
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
		char *mine = make_plan(j, pg);
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
		j->exit_code = (int)json_num(j->plan, "exit_code", VIGIL_EXIT_UNHEALTHY);
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
			j->last_seen[r] = now_s();
		log_say("vigil: %s training on %d node%s, master %s:%d: %s\n", mode_name(o->mode),
		        cJSON_GetArraySize(cJSON_GetObjectItem(j->plan, "members")), j->size == 1 ? "" : "s",
		        json_str(j->plan, "master_addr", "?"), (int)json_num(j->plan, "master_port", 0),
		        o->cmd[0]);
		emit_event(j, j->node, 0, VIGIL_EVENT_LAUNCH, VIGIL_SEVERITY_INFO,
		           "starting the training", NULL);
		if (j->size > 1)
			j->hbcheck_timer = loop_add_timer(j->loop, (long)(o->heartbeat_s * 500), on_hbcheck, j);
		if (left >= 0) {
			double at = o->resume ? left - o->ckpt_lead_s : left;

			j->limit_timer = loop_add_timer(j->loop, at > 0 ? (long)(at * 1000) : 0,
			                                on_time_limit, j);
		}
	}
	if (j->rank != 0)
		j->hb_timer = loop_add_timer(j->loop, (long)(o->heartbeat_s * 1000), on_heartbeat, j);
	if (o->inspect_s > 0) {
		rc = inspect_new(cfg, j->slots, nslots, o->ckpt_dir, 0, &j->insp);
		if (rc < 0)
			LOG_WARN("no inspection on this node: %s", strerror(-rc));
		else
			j->insp_timer = loop_add_timer(j->loop, (long)(o->inspect_s * 1000), on_inspect, j);
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
		j->summary_last = now_s();
		j->perf_last = now_s();
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
	if (j->clean && !perf_drain(j, 3)) {
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
