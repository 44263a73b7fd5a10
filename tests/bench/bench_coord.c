/*
 * bench_coord.c - the coordinator's data paths at 1,000 to 10,000
 * simulated nodes, without MPI: what rank 0 does for a job of N nodes.
 *
 *   gather     N pre-check reports parsed, compared across nodes (consistency)
 *   plan       go/no-go and the plan's text (it names every node)
 *   heartbeat  one round of N heartbeats and the scan that judges them
 *   hang       one round of N heartbeats' progress taken by the hang rule,
 *              then the rule firing: its one scan of every node
 *   usage      one round of N usage notes (8 boards each) decoded, taken
 *              into the metrics and the ranges, the metrics file written
 *   results    N results in, the report and the exclude list out
 *   final      FINAL encoded and handed to N-1 sends
 *
 * Each N runs in a child of its own, so its peak memory (ru_maxrss) is
 * its own.  Printed per N: milliseconds per step, and microseconds per
 * node per step with the scaling ratio against the smallest N measured in
 * the same run (1.00: the cost per node does not grow with N, the O(N) the
 * coordinator must keep to; 10 at 10x the nodes would be O(N^2)), and the
 * memory per node.
 *
 * Usage: bench_coord [N...]   (default 1000 4000 10000)
 */
#include "autoconf.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cJSON.h>

#include "agent/coord.h"
#include "agent/hang.h"
#include "check/check.h"
#include "check/gather.h"
#include "comm/msg.h"
#include "lib/json.h"
#include "lib/util.h"
#include "perf/metrics.h"
#include "perf/usage.h"

enum { STEP_GATHER, STEP_PLAN, STEP_BEAT, STEP_HANG, STEP_USAGE, STEP_RESULTS, STEP_FINAL,
       NSTEPS };
static const char *const step_names[NSTEPS] = { "gather", "plan", "heartbeat", "hang", "usage",
	                                        "results", "final" };

struct sink {
	unsigned long long msgs, bytes;
};

static int
count_send(void *arg, int rank, enum msg_kind kind, const char *text)
{
	struct sink *s = arg;

	(void)rank;
	(void)kind;
	s->msgs++;
	s->bytes += strlen(text);
	return 0;
}

static void
drop_event(void *arg, const char *node, int rank, const char *kind, const char *severity,
           const char *message, cJSON *details)
{
	(void)arg, (void)node, (void)rank, (void)kind, (void)severity, (void)message;
	cJSON_Delete(details);
}

static void
drop_say(void *arg, const char *line)
{
	(void)arg, (void)line;
}

static int
port(void *arg)
{
	(void)arg;
	return 29500;
}

/* A node's pre-check report as it travels: six checks with their details. */
static char *
payload(int rank)
{
	static const char *const names[] = { "slots", "boards", "memory", "storage", "limits",
	                                     "nics" };
	struct check_report rep = { 0 };
	char node[32];
	char *text;

	rep.results = calloc(6, sizeof(*rep.results));
	rep.n = 6;
	rep.facts.nslots = 8;
	snprintf(rep.facts.models, sizeof(rep.facts.models), "NVIDIA H100 80GB HBM3");
	snprintf(rep.facts.driver, sizeof(rep.facts.driver), "%s",
	         rank % 997 == 5 ? "535.104.05" : "550.54.15");
	for (int i = 0; i < 6; i++) {
		snprintf(rep.results[i].name, sizeof(rep.results[i].name), "%s", names[i]);
		snprintf(rep.results[i].reason, sizeof(rep.results[i].reason), "all is well here");
		rep.results[i].details = cJSON_CreateObject();
		cJSON_AddNumberToObject(rep.results[i].details, "count", 8);
	}
	snprintf(node, sizeof(node), "gpu%05d", rank);
	text = gather_payload(node, rank, &rep, NULL);
	check_report_free(&rep);
	return text;
}

static double
ms_since(double t0)
{
	return (util_now_s() - t0) * 1000;
}

/* Node RANK's usage note as it travels: the training and 8 boards. */
static char *
usage_note(int rank)
{
	char node[32];
	struct msg m = { .kind = MSG_NOTE };
	cJSON *u = cJSON_CreateObject(), *b = cJSON_AddArrayToObject(u, "boards");
	char *text;

	snprintf(node, sizeof(node), "gpu%05d", rank);
	cJSON_AddNumberToObject(u, "cpu_seconds", 1000 + rank);
	cJSON_AddNumberToObject(u, "memory_bytes", 3e10);
	cJSON_AddNumberToObject(u, "processes", 12);
	for (int i = 0; i < 8; i++) {
		cJSON *x = cJSON_CreateObject();

		cJSON_AddNumberToObject(x, "index", i);
		cJSON_AddNumberToObject(x, "utilization", (rank + i) % 100 / 100.0);
		cJSON_AddNumberToObject(x, "memory_used_bytes", 6e10);
		cJSON_AddNumberToObject(x, "memory_total_bytes", 8.5e10);
		cJSON_AddNumberToObject(x, "temperature_celsius", 40 + (rank + i) % 40);
		cJSON_AddNumberToObject(x, "power_watts", 300 + (rank * 7 + i) % 400);
		cJSON_AddItemToArray(b, x);
	}
	m.u.note.node = node;
	m.u.note.usage = u;
	text = msg_encode(&m);
	cJSON_Delete(u);
	return text;
}

/* One round of N usage notes (TEXTS) into a metrics file under $TMPDIR. */
static int
usage_round(int n, char **texts)
{
	struct usage *u = usage_new(n);
	struct metrics *mt = metrics_new();
	const char *tmp = getenv("TMPDIR");
	char path[256];
	int rc = 0;

	snprintf(path, sizeof(path), "%s/bench_coord.%d.prom", tmp && *tmp ? tmp : "/tmp",
	         (int)getpid());
	for (int r = 0; r < n && rc == 0 && u && mt; r++) {
		struct msg m;
		char node[32];

		snprintf(node, sizeof(node), "gpu%05d", r);
		rc = msg_decode(MSG_NOTE, texts[r], n, &m);
		if (rc == 0)
			rc = usage_take(u, mt, r, node, m.u.note.usage, 30);
		msg_clear(&m);
	}
	if (!u || !mt || rc < 0 || metrics_write(mt, path) < 0)
		rc = -1;
	unlink(path);
	usage_free(u);
	metrics_free(mt);
	return rc;
}

/* One job of N nodes through the coordinator; TIMES[step] in ms. */
/*
 * The hang rule at the coordinator: a heartbeat's progress from each of
 * N nodes (O(1) each), then, 40 s after the last timing line, the rule
 * fires and scans every node once.  Into *MS; -1 when it did not fire.
 */
static int
hang_round(int n, double *ms)
{
	struct hang_opts o = { .size = n, .floor_s = 30 };
	struct hang_finding f;
	struct hang *h = hang_new(&o, 0);
	double t0;
	int rc;

	if (!h)
		return -1;
	hang_attempt(h, 0);
	t0 = util_now_s();
	for (int r = 0; r < n; r++) {
		struct msg_heartbeat b = {
			.progress = true, .trains = true, .lines = 100, .iters = r == 7 ? 90 : 100,
			.quiet_s = 0, .out_quiet_s = 0, .e2e_ms = 100,
		};

		hang_beat(h, r, &b, 5);
	}
	(void)hang_check(h, 6, &f);
	for (int r = 0; r < n; r++) {  /* the nodes still beat, the training is silent */
		struct msg_heartbeat b = {
			.progress = true, .trains = true, .lines = 100, .iters = r == 7 ? 90 : 100,
			.quiet_s = 40, .out_quiet_s = 40, .e2e_ms = 100,
		};

		hang_beat(h, r, &b, 45);
	}
	rc = hang_check(h, 45.5, &f) == HANG_ITERATIONS && (n <= 7 || f.suspect == 7) ? 0 : -1;
	*ms = ms_since(t0);
	hang_free(h);
	return rc;
}

static int
run(int n, double *times)
{
	struct sink sink = { 0 };
	struct coord_opts o = {
		.size = n, .precheck = true, .precheck_level = VERDICT_FAIL, .max_resumes = -1,
		.grace_s = 30, .heartbeat_s = 5, .heartbeat_timeout_s = 30, .ckpt_lead_s = 60,
		.resume = true, .min_nodes = 1,  /* the nodes with another driver are left out */
	};
	struct coord_ops ops = { count_send, drop_event, drop_say, port, &sink };
	struct msg m = { .kind = MSG_PLAN };
	struct gather g = { 0 };
	struct coord *c;
	char **payloads = calloc((size_t)n, sizeof(*payloads));
	char **notes = calloc((size_t)n, sizeof(*notes));
	char *text, *list;
	cJSON *rep;
	double t0;
	bool done;

	if (!payloads || !notes)
		return -1;
	for (int r = 0; r < n; r++)
		if (!(payloads[r] = payload(r)) || !(notes[r] = usage_note(r)))
			return -1;
	c = coord_new(&o, &ops, 0);
	if (!c || gather_init(&g, n) < 0)
		return -1;

	t0 = util_now_s();
	for (int r = 0; r < n; r++) {
		char addr[32];

		snprintf(addr, sizeof(addr), "10.%d.%d.%d", r >> 16, (r >> 8) & 255, r & 255);
		if (gather_add(&g, r, payloads[r], 60) < 0 || coord_set_node(c, r, addr, 8) < 0)
			return -1;
	}
	gather_consistency(&g);
	times[STEP_GATHER] = ms_since(t0);

	t0 = util_now_s();
	if (coord_plan(c, &g, 0, &m.u.plan) < 0)
		return -1;
	m.u.plan.job = "4242";
	m.u.plan.finalize = true;
	text = msg_encode(&m);
	if (!text)
		return -1;
	times[STEP_PLAN] = ms_since(t0);
	free(text);
	gather_free(&g);

	/* one heartbeat interval: every node heard, then the scans of that interval */
	t0 = util_now_s();
	for (int r = 0; r < n; r++)
		coord_heard(c, r, 5);
	coord_tick(c, 2.5);
	coord_tick(c, 5);
	times[STEP_BEAT] = ms_since(t0);

	if (hang_round(n, &times[STEP_HANG]) < 0)
		return -1;

	t0 = util_now_s();
	if (usage_round(n, notes) < 0)
		return -1;
	times[STEP_USAGE] = ms_since(t0);

	t0 = util_now_s();
	for (int r = 0; r < n; r++) {
		struct msg_result res = { .node = "gpu", .exit_code = r == 7 ? 1 : 0, .seconds = 9 };

		coord_result(c, r, &res, 9);
	}
	rep = coord_report(c, 9);
	text = rep ? json_print(rep, true) : NULL;
	list = coord_exclude_list(c);
	times[STEP_RESULTS] = ms_since(t0);
	if (!text || !list)
		return -1;
	cJSON_Delete(rep);
	free(text);
	free(list);

	t0 = util_now_s();
	coord_finish(c, 3, 10);
	times[STEP_FINAL] = ms_since(t0);

	done = coord_phase(c) == COORD_DONE && sink.msgs + 1 >= (unsigned long long)n;
	coord_free(c);
	for (int r = 0; r < n; r++) {
		free(payloads[r]);
		free(notes[r]);
	}
	free(payloads);
	free(notes);
	return done ? 0 : -1;
}

struct sample {
	int n;
	double times[NSTEPS];
	long maxrss_kb;
};

/* Run N in a child; its times and peak memory come back through a pipe. */
static int
measure(int n, struct sample *out)
{
	int fds[2], st;
	pid_t pid;

	if (pipe(fds) < 0)
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		struct sample s = { .n = n };
		struct rusage ru;

		close(fds[0]);
		if (run(n, s.times) < 0)
			_exit(1);
		getrusage(RUSAGE_SELF, &ru);
		s.maxrss_kb = ru.ru_maxrss;
		_exit(util_write_all(fds[1], &s, sizeof(s)) < 0 ? 1 : 0);
	}
	close(fds[1]);
	if (read(fds[0], out, sizeof(*out)) != (ssize_t)sizeof(*out))
		out->n = -1;
	close(fds[0]);
	waitpid(pid, &st, 0);
	return out->n == n && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

int
main(int argc, char **argv)
{
	int defaults[] = { 1000, 4000, 10000 };
	int count = argc > 1 ? argc - 1 : 3;
	struct sample *s = calloc((size_t)count, sizeof(*s));
	struct sample empty;

	if (!s)
		return 1;
	/* the memory of a process that did nothing, to subtract */
	if (measure(1, &empty) < 0)
		return 1;
	for (int i = 0; i < count; i++) {
		int n = argc > 1 ? atoi(argv[i + 1]) : defaults[i];

		if (n < 2 || measure(n, &s[i]) < 0) {
			fprintf(stderr, "bench_coord: %d nodes failed\n", n);
			return 1;
		}
	}
	printf("# the coordinator's data paths, simulated nodes, no MPI (%s)\n",
	       "ms per step; us per node; ratio: per-node cost against the smallest N");
	printf("%-10s", "step");
	for (int i = 0; i < count; i++)
		printf(" %9d nodes %6s %5s", s[i].n, "us/n", "ratio");
	printf("\n");
	for (int k = 0; k < NSTEPS; k++) {
		double base = s[0].times[k] / s[0].n;

		printf("%-10s", step_names[k]);
		for (int i = 0; i < count; i++) {
			double per = s[i].times[k] / s[i].n;

			printf(" %12.1f ms %6.2f %5.2f", s[i].times[k], per * 1000,
			       base > 0 ? per / base : 0);
		}
		printf("\n");
	}
	printf("%-10s", "memory");
	for (int i = 0; i < count; i++) {
		double kb = (double)(s[i].maxrss_kb - empty.maxrss_kb);

		printf(" %12.1f MB %6.2f %5s", kb / 1024, kb * 1024 / s[i].n / 1024, "KB/n");
	}
	printf("\n");
	free(s);
	return 0;
}
