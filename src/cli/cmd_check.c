/*
 * cmd_check.c - `vigil check`: the node health checks, alone or gathered
 * at rank 0 under mpirun; and the check flags `vigil run` takes too.
 */
#include "autoconf.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cJSON.h>

#include "vigil.h"
#include "check/check.h"
#include "check/gather.h"
#include "check/incident.h"
#include "cli/cmd.h"
#include "comm/msg.h"
#include "comm/peer.h"
#include "conf/config.h"
#include "conf/opts.h"
#include "lib/events.h"
#include "lib/json.h"
#include "lib/log.h"
#include "lib/loop.h"
#include "proc/slurm.h"
#include "sys/topo.h"

static const char check_usage[] =
"usage: vigil check [OPTIONS]\n"
"\n"
"Healthy: silent, exit 0.  Unhealthy: one line `vigil: CHECK: REASON`,\n"
"exit 80.  Under mpirun, rank 0 gathers every node's report and prints one\n"
"consolidated result.\n"
"\n"
"  --config FILE       expected values and thresholds (vigil.conf(5))\n"
"  --sysfs-root DIR    read sysfs and procfs under DIR (default /)\n"
"  --topology FILE     take the slots from an lstopo XML export\n"
"  --slots N           expect at least N accelerator slots\n"
"  --nic IFACE         require network interface IFACE up (repeatable)\n"
"  --ib DEVICE         require every port of InfiniBand DEVICE active (repeatable)\n"
"  --path DIR          require DIR present and writable (repeatable)\n"
"  --timeout SECONDS   cut off a check that blocks (default 10)\n"
"  --all               run every check instead of stopping at the first failure\n"
"  --json              print the full report as JSON\n"
"  --events FILE       append the results as JSON-lines events\n"
"  --drain             drain this node in Slurm when unhealthy (implies --record)\n"
"  --undrain           resume this node in Slurm when healthy, if vigil drained it\n"
"                      (both together: what a HealthCheckProgram wants)\n"
"  --record            record failures in the node ledger (ledger.dir), forgive a\n"
"                      node whose quarantine is over once every check passes\n"
"  -v, --verbose       also show warnings and diagnostics\n";

int
cmd_check_flag(const char *cmd, int c, const char *arg, struct cmd_check_flags *f)
{
	switch (c) {
	case 'c': f->config = arg; return 1;
	case 'r': f->root = arg; return 1;
	case 't': f->topology = arg; return 1;
	case 's': f->slots = arg; return 1;
	case 'T': f->timeout = arg; return 1;
	case 'n':
		return config_list_add(&f->nics, &f->nnics, arg) < 0 ? VIGIL_EXIT_INTERNAL : 1;
	case 'i':
		return config_list_add(&f->ibs, &f->nibs, arg) < 0 ? VIGIL_EXIT_INTERNAL : 1;
	case 'p':
		if (arg[0] != '/')
			return cmd_usage_error(cmd, "--path needs an absolute path, got '%s'", arg);
		return config_list_add(&f->paths, &f->npaths, arg) < 0 ? VIGIL_EXIT_INTERNAL : 1;
	default:
		return 0;
	}
}

void
cmd_check_flags_free(struct cmd_check_flags *f)
{
	for (size_t i = 0; i < f->nnics; i++)
		free(f->nics[i]);
	for (size_t i = 0; i < f->nibs; i++)
		free(f->ibs[i]);
	for (size_t i = 0; i < f->npaths; i++)
		free(f->paths[i]);
	free(f->nics);
	free(f->ibs);
	free(f->paths);
}

int
cmd_check_flags_apply(const char *cmd, const struct cmd_check_flags *f, struct config *cfg)
{
	char err[512];
	long long v = 0;
	double t = 0;

	if (f->slots && opts_count(f->slots, 0, 4096, &v) < 0)
		return cmd_usage_error(cmd, "--slots needs a count from 0 to 4096, got '%s'", f->slots);
	if (f->timeout && (opts_duration(f->timeout, &t, NULL) < 0 || t < 0.1 || t > 86400))
		return cmd_usage_error(cmd, "--timeout needs a duration from 0.1 s to a day "
		                       "(10, 30s, 2m), got '%s'", f->timeout);
	if (f->root) {
		struct stat st;

		if (stat(f->root, &st) < 0 || !S_ISDIR(st.st_mode))
			return cmd_usage_error(cmd, "--sysfs-root needs a directory, got '%s'", f->root);
	}
	if (f->config && config_load_file(cfg, f->config, err, sizeof(err)) < 0) {
		fprintf(stderr, "vigil: configuration error: %s\n", err);
		return VIGIL_EXIT_CONFIG;
	}
	if (f->root) {
		char *copy = strdup(f->root);

		if (!copy)
			goto oom;
		free(cfg->sysfs_root);
		cfg->sysfs_root = copy;
	}
	if (f->slots)
		cfg->slots_expected = (int)v;
	if (f->timeout)
		cfg->check_timeout_s = t;
	for (size_t i = 0; i < f->nnics; i++)
		if (config_list_add(&cfg->nics, &cfg->nnics, f->nics[i]) < 0)
			goto oom;
	for (size_t i = 0; i < f->nibs; i++)
		if (config_list_add(&cfg->ib_devices, &cfg->nib_devices, f->ibs[i]) < 0)
			goto oom;
	for (size_t i = 0; i < f->npaths; i++) {
		struct config_path *p = realloc(cfg->paths, (cfg->npaths + 1) * sizeof(*p));

		if (!p)
			goto oom;
		cfg->paths = p;
		p = &cfg->paths[cfg->npaths];
		memset(p, 0, sizeof(*p));
		p->writable = true;
		p->path = strdup(f->paths[i]);
		if (!p->path)
			goto oom;
		cfg->npaths++;
	}
	return 0;
oom:
	LOG_ERR("out of memory");
	return VIGIL_EXIT_INTERNAL;
}

struct check_opts {
	const char *topology;
	const char *events;
	bool all, json, drain, undrain, record, verbose;
};

/* Returns 0, -1 after --help, or an exit status. */
static int
check_parse(int argc, char **argv, struct check_opts *o, struct config *cfg)
{
	static const struct option opts[] = {
		CMD_CHECK_OPTIONS,
		{ "all", no_argument, NULL, 'a' },
		{ "json", no_argument, NULL, 'j' },
		{ "events", required_argument, NULL, 'e' },
		{ "drain", no_argument, NULL, 'D' },
		{ "undrain", no_argument, NULL, 'U' },
		{ "record", no_argument, NULL, 'R' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct cmd_check_flags f = { 0 };
	int c, rc;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:vh", opts, NULL)) != -1) {
		if (c == '?' || c == ':') {
			rc = cmd_option_error("check", argv, c);
			goto out;
		}
		rc = cmd_check_flag("check", c, optarg, &f);
		if (rc == 1)
			continue;
		if (rc > 1)
			goto out;
		switch (c) {
		case 'a': o->all = true; break;
		case 'j': o->json = true; break;
		case 'e': o->events = optarg; break;
		case 'D': o->drain = o->record = true; break;
		case 'R': o->record = true; break;
		case 'U': o->undrain = true; break;
		case 'v': o->verbose = true; break;
		case 'h': fputs(check_usage, stdout); rc = -1; goto out;
		default: rc = cmd_usage_error("check", "invalid option"); goto out;
		}
	}
	if (optind < argc) {
		rc = cmd_usage_error("check", "unexpected argument '%s'", argv[optind]);
		goto out;
	}
	o->topology = f.topology;
	rc = cmd_check_flags_apply("check", &f, cfg);
out:
	cmd_check_flags_free(&f);
	return rc;
}

/* Mark or unmark this node in Slurm per its own verdict. */
static void
slurm_mark(const struct check_opts *o, const struct check_report *r, const char *error)
{
	char node[256], reason[300], err[256] = "";
	const struct check_result *f = check_report_first(r, VERDICT_FAIL);
	bool failed = error || f;
	int rc;

	if (!(o->drain && failed) && !(o->undrain && !failed))
		return;
	if (slurm_node_name(node, sizeof(node)) < 0) {
		LOG_ERR("cannot tell this node's Slurm name");
		return;
	}
	/* Each runs scontrol twice (show, then update), 15 s at most each:
	 * slurmd kills a HealthCheckProgram after 60 s. */
	if (failed) {
		/* the ledger's reason reads "quarantined: ..." by itself */
		if (f && strcmp(f->name, "ledger") == 0)
			snprintf(reason, sizeof(reason), "%s", f->reason);
		else if (f)
			snprintf(reason, sizeof(reason), "%s: %s", f->name, f->reason);
		else
			snprintf(reason, sizeof(reason), "%s", error);
		rc = slurm_drain(node, reason, 15, err, sizeof(err));
		if (rc < 0)
			LOG_ERR("could not drain %s: %s", node, err);
		else if (rc == 0)
			LOG_INFO("not drained: %s", err);
	} else {
		rc = slurm_undrain(node, 15, err, sizeof(err));
		if (rc < 0)
			LOG_ERR("could not resume %s: %s", node, err);
		else if (rc == 0)
			LOG_INFO("not resumed: %s", err);
	}
}

/* Alone (no MPI): NHC's convention, one line per failure or silence. */
static void
print_alone(const struct check_opts *o, const struct check_report *r, const char *error)
{
	if (error) {
		printf("vigil: %s\n", error);
		return;
	}
	for (size_t i = 0; i < r->n; i++) {
		const struct check_result *res = &r->results[i];

		if (res->verdict == VERDICT_FAIL)
			printf("vigil: %s: %s\n", res->name, res->reason);
		else if (res->verdict == VERDICT_WARN && o->verbose)
			printf("vigil: warning: %s: %s\n", res->name, res->reason);
		else
			continue;
		if (!o->all && res->verdict == VERDICT_FAIL)
			break;
	}
}

/* Discover the slots and run the checks; a failure to do either goes into ERROR. */
static void
check_node(const struct check_opts *o, const struct config *cfg, struct peer *p,
           const char *node, struct check_report *report, char *error, size_t errlen)
{
	struct slot *slots = NULL;
	size_t nslots = 0;
	int rc;

	rc = cmd_discover(o->topology, &slots, &nslots);
	if (rc < 0) {
		snprintf(error, errlen, "slots: discovery failed: %s", strerror(-rc));
	} else {
		struct check_ctx ctx = {
			.cfg = cfg, .slots = slots, .nslots = nslots,
			/* reports, events and the coordinator name every failure */
			.all = o->all || o->json || o->events || peer_is_mpi(p),
			.node = node,
		};

		rc = check_run(&ctx, report);
		if (rc < 0)
			snprintf(error, errlen, "cannot run the checks on %s: %s",
			         cfg->sysfs_root, strerror(-rc));
	}
	topo_slots_free(slots, nslots);
}

/* A node other than the coordinator: its own errors, once, for whoever
 * reads this node's output; the coordinator reports for everyone.
 * Returns the exit status. */
static int
finish_worker(const struct check_report *report, const char *error, bool complete,
              double timeout)
{
	const struct check_result *f = check_report_first(report, VERDICT_FAIL);

	if (error)
		LOG_ERR("%s", error);
	else if (f)
		LOG_ERR("%s: %s", f->name, f->reason);
	if (complete)
		return VIGIL_EXIT_OK;
	LOG_ERR("the coordinator did not take this node's report within %.0f s", timeout);
	return error || f ? VIGIL_EXIT_UNHEALTHY : VIGIL_EXIT_INTERNAL;
}

static void
write_events(const char *path, const struct gather *g)
{
	struct events *ev = NULL;
	char why[160];
	int rc;

	rc = events_open_why(path, &ev, why, sizeof(why));
	if (rc == 0)
		rc = gather_write_events(g, ev);
	if (rc == 0)
		rc = events_close(ev);
	else
		(void)events_close(ev);  /* the first error is the one to report */
	if (rc < 0)
		LOG_ERR("cannot write events to %s: %s", path, why[0] ? why : strerror(-rc));
}

/* Beyond the gather's timeout, how long a node waits for the coordinator's word on the end. */
#define END_WAIT_S 10
/* How long the coordinator waits for its word on the end to leave. */
#define SENT_WAIT_S 2

/*
 * The sweep's waits on its peers, in the event loop as `vigil run`'s
 * are: MPI is not a descriptor, so the loop's hook looks at it every few
 * milliseconds (each look is one non-blocking test), and a timer ends
 * the wait at its deadline.  A hung peer costs the deadline, never a
 * hang.
 */
enum sweep_wait {
	WAIT_GATHER,   /* every node's report at the coordinator; this one's sent */
	WAIT_END,      /* a node: the coordinator's word on the end */
	WAIT_SENT,     /* the coordinator: that word gone to every node */
};

/* Between two looks at MPI, by wait (ms): the messages are due any moment. */
static const long look_ms[] = { [WAIT_GATHER] = 1, [WAIT_END] = 2, [WAIT_SENT] = 1 };

struct sweep {
	struct loop *loop;
	struct peer *p;
	struct peer_gather *pg;
	enum sweep_wait what;
	struct loop_timer *deadline;
	int rc;          /* 1: what was waited for came; 0: not yet / the deadline; < 0: MPI error */
	int code;        /* WAIT_END: the sweep's status */
	bool finalize;   /* WAIT_END: every rank reported, MPI_Finalize is safe */
};

/* A node: the coordinator's word on the end (tell_end()), if it came.
 * 1 with S->code and S->finalize set, 0 while it has not, or < 0. */
static int
take_end(struct sweep *s)
{
	int src, tag, rc;
	char *text;
	struct msg m;

	while ((rc = peer_poll(s->p, &src, &tag, &text)) == 1) {
		rc = tag == MSG_FINAL && src == 0 ? msg_decode(MSG_FINAL, text, peer_size(s->p), &m)
		                                  : -EINVAL;
		free(text);
		if (rc == 0) {
			s->code = m.u.final.exit_code;
			s->finalize = m.u.final.finalize;
			msg_clear(&m);
			return 1;
		}
	}
	return rc;
}

/* The loop's hook: one look at MPI for what is awaited. */
static long
look(struct loop *l, void *arg)
{
	struct sweep *s = arg;
	int rc;

	switch (s->what) {
	case WAIT_GATHER: rc = peer_gather_progress(s->pg); break;
	case WAIT_END: rc = take_end(s); break;
	case WAIT_SENT:
	default: rc = peer_sent(s->p); break;
	}
	if (rc == 0)
		return look_ms[s->what];
	s->rc = rc;
	loop_stop(l);
	return 0;
}

static long
on_deadline(struct loop *l, void *arg)
{
	struct sweep *s = arg;

	s->deadline = NULL;
	loop_stop(l);
	return LOOP_NOMORE;
}

/* Wait for WHAT at most TIMEOUT_S: 1 when it came, 0 at the deadline, or a
 * negative errno. */
static int
sweep_wait(struct sweep *s, enum sweep_wait what, double timeout_s)
{
	int rc;

	s->what = what;
	s->rc = 0;
	s->deadline = loop_add_timer(s->loop, (long)(timeout_s * 1000), on_deadline, s);
	if (!s->deadline)
		return -ENOMEM;
	rc = loop_run(s->loop);
	loop_del_timer(s->loop, s->deadline);
	s->deadline = NULL;
	return rc < 0 ? rc : s->rc;
}

/*
 * The end of a sweep under mpirun, said by the coordinator to every node
 * that reported, after its verdict is out: whether MPI_Finalize is safe
 * (every rank reported) and the sweep's status.  A node that reported
 * waits for it instead of entering MPI_Finalize on its own, which would
 * wait for a hung peer forever; so every agent leaves at about the same
 * time, after the verdict, and mpirun's end of the job never races it.
 */
static void
tell_end(struct sweep *s, int code, bool complete)
{
	struct msg m = { .kind = MSG_FINAL };
	char *text;

	m.u.final.exit_code = code;
	m.u.final.state = code ? VIGIL_STATE_ERROR : VIGIL_STATE_SUCCEEDED;
	m.u.final.finalize = complete;
	text = msg_encode(&m);
	for (int r = 1; text && r < peer_size(s->p); r++)
		if (peer_gather_get(s->pg, r))
			(void)peer_send(s->p, r, MSG_FINAL, text);
	free(text);
	/* let the words leave before this agent does */
	(void)sweep_wait(s, WAIT_SENT, SENT_WAIT_S);
}

/* The coordinator: every node's report, compared, written and printed.
 * Returns the exit status. */
static int
finish_coordinator(const struct check_opts *o, const struct config *cfg, struct peer *p,
                   struct peer_gather *pg, const struct check_report *report, const char *error)
{
	struct gather g = { 0 };
	int exit_code = VIGIL_EXIT_INTERNAL;

	if (gather_init(&g, peer_size(p)) < 0)
		goto out;
	for (int r = 0; r < peer_size(p); r++)
		if (gather_add(&g, r, peer_gather_get(pg, r), cfg->gather_timeout_s) < 0)
			goto out;
	gather_consistency(&g);
	if (o->events)
		write_events(o->events, &g);
	if (o->json) {
		cJSON *j = gather_to_json(&g);
		char *text = j ? json_print(j, true) : NULL;

		if (text)
			printf("%s\n", text);
		free(text);
		cJSON_Delete(j);
	} else if (peer_is_mpi(p)) {
		gather_print(stdout, &g, o->verbose);
	} else {
		print_alone(o, report, error);
	}
	exit_code = gather_failed(&g) ? VIGIL_EXIT_UNHEALTHY : VIGIL_EXIT_OK;
out:
	gather_free(&g);
	return exit_code;
}

int
cmd_check(int argc, char **argv)
{
	struct check_opts o = { 0 };
	struct config cfg;
	struct check_report report = { 0 };
	struct sweep s = { 0 };
	char node[256], error[512] = "";
	char *payload = NULL;
	bool complete = true;
	int rc, exit_code = VIGIL_EXIT_INTERNAL;

	config_init(&cfg);
	rc = check_parse(argc, argv, &o, &cfg);
	if (rc == 0)
		rc = cmd_node_name(node, sizeof(node));
	if (rc != 0) {
		config_free(&cfg);
		return rc < 0 ? VIGIL_EXIT_OK : rc;
	}
	if (o.verbose)
		log_set_level(LOG_LEVEL_INFO);
	log_set_identity(node, -1);

	/* MPI first: a node whose checks are slow is then a late peer the
	 * coordinator can time out, rather than one that holds every other
	 * node inside MPI_Init's exchange.  The timed checks fork after this;
	 * only Open MPI's openib transport objects to that, and the child
	 * does no MPI and leaves with _exit(). */
	rc = peer_init(&argc, &argv, &s.p);
	if (rc < 0) {
		LOG_ERR("MPI initialisation failed");
		goto out;
	}
	log_set_identity(node, peer_is_mpi(s.p) ? peer_rank(s.p) : -1);
	s.loop = loop_new();
	if (!s.loop) {
		LOG_ERR("cannot set up the event loop");
		goto out;
	}
	loop_set_before_poll(s.loop, look, &s);

	check_node(&o, &cfg, s.p, node, &report, error, sizeof(error));
	if (o.record && !error[0])
		incident_after_check(&cfg, node, &report, true, 0);
	slurm_mark(&o, &report, error[0] ? error : NULL);

	payload = gather_payload(node, peer_rank(s.p), &report, error[0] ? error : NULL);
	if (!payload || peer_gather_start(s.p, payload, &s.pg) < 0) {
		LOG_ERR("cannot send this node's report");
		goto out;
	}
	rc = sweep_wait(&s, WAIT_GATHER, cfg.gather_timeout_s);
	if (rc < 0) {
		LOG_ERR("MPI error while gathering reports");
		complete = false;
		goto out;
	}
	complete = rc == 1;
	if (peer_rank(s.p) != 0) {
		exit_code = finish_worker(&report, error[0] ? error : NULL, complete,
		                          cfg.gather_timeout_s);
		/* MPI_Finalize only when the coordinator says every rank is there.
		 * Without it, mpirun reports the status of whichever rank it
		 * sees leave first, and this one may leave before the
		 * coordinator: it leaves with the sweep's status (an agent that
		 * left with 0 and no MPI_Finalize made mpirun say 1). */
		if (complete && peer_is_mpi(s.p)) {
			s.code = VIGIL_EXIT_OK;
			complete = sweep_wait(&s, WAIT_END, cfg.gather_timeout_s + END_WAIT_S) == 1 &&
			           s.finalize;
			if (!complete && s.code != VIGIL_EXIT_OK)
				exit_code = s.code;
		}
	} else {
		exit_code = finish_coordinator(&o, &cfg, s.p, s.pg, &report,
		                               error[0] ? error : NULL);
		if (fflush(stdout) != 0 && exit_code == VIGIL_EXIT_OK)
			exit_code = VIGIL_EXIT_INTERNAL;
		if (peer_is_mpi(s.p))
			tell_end(&s, exit_code, complete);
	}
out:
	if (fflush(stdout) != 0 && exit_code == VIGIL_EXIT_OK)
		exit_code = VIGIL_EXIT_INTERNAL;
	peer_gather_free(s.pg);
	loop_free(s.loop);
	free(payload);
	check_report_free(&report);
	config_free(&cfg);
	/* MPI_Finalize waits for every rank; a node that never reported may
	 * be hung, so then leave without it. */
	peer_finalize(s.p, complete);
	return exit_code;
}
