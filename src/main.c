/*
 * main.c - the vigil command: wires the modules together.
 *
 *   vigil slots   what discovery found on this node
 *   vigil check   node health check, alone or gathered under mpirun
 */
#include "autoconf.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "vigil.h"
#include "check.h"
#include "config.h"
#include "events.h"
#include "gather.h"
#include "log.h"
#include "cmdline.h"
#include "modes.h"
#include "peer.h"
#include "report.h"
#include "run.h"
#include "sig.h"
#include "slots.h"
#include "slurm.h"
#include "topo.h"

static const char usage_text[] =
"usage: vigil COMMAND [OPTIONS]\n"
"\n"
"commands:\n"
"  run     pre-check, then launch and supervise the training on every node\n"
"  slots   show the accelerator slots discovery finds on this node\n"
"  check   run the node health checks (alone, or on every node under mpirun)\n"
"  report  summarise a finished job from its event log (--plot FILE.svg)\n"
"  help    show this text; `vigil COMMAND --help` shows a command's options\n"
"\n"
"Exit status: run: the training's own status (128+N for signal N, 126/127\n"
"when it cannot be executed); check: 0 healthy, 80 unhealthy; any: 64 usage\n"
"error, 78 configuration error, 84 internal error.  See vigil(1).\n";

static const char run_usage[] =
"usage: mpirun --map-by ppr:1:node vigil run [OPTIONS] -- COMMAND [ARGS...]\n"
"\n"
"Pre-check every node, then start COMMAND on every node with the chosen\n"
"mode's environment, pass its output through, forward signals, and end the\n"
"job with one status when the training ends or fails anywhere.\n"
"\n"
"  --mode MODE         pytorch (default), deepspeed, horovod, tensorflow, single\n"
"  --precheck LEVEL    no-go on: fail (default), warn, or off (no pre-check)\n"
"  --grace SECONDS     from TERM to KILL when stopping the training (default 30)\n"
"  --forward SIG=SIG   deliver a signal to the training as another (e.g. USR1=USR2)\n"
"  --master-addr ADDR  MASTER_ADDR (default: the coordinator's address)\n"
"  --master-port PORT  MASTER_PORT (default: a free port on the coordinator)\n"
"  --ps N              tensorflow: N parameter servers (default 0: AllReduce)\n"
"  --tf-port PORT      tensorflow: each task's port (default 2222)\n"
"  --run-dir DIR       where hostfiles go (default $TMPDIR/vigil.JOB)\n"
"  --hostfile PATH     deepspeed/horovod hostfile (default RUN-DIR/hostfile)\n"
"  --mpich-hostfile PATH  horovod MPICH hostfile (default RUN-DIR/mpich_hostfile)\n"
"  --tag-output        prefix every line of output with [NODE:RANK]\n"
"  --output WHO        all (default): every node's stdout; coordinator: rank 0's only\n"
"                      (stderr from every node is always shown)\n"
"  --report FILE       the coordinator writes the job's final report (JSON)\n"
"  --events FILE       the coordinator appends events (JSON lines)\n"
"  --dry-run           print each node's environment, files and command; run nothing\n"
"\n"
"Resilience:\n"
"  --resume            checkpoint and requeue on a fault, a lost node, the checkpoint\n"
"                      signal or the time limit (exit 81 requeue, 82 resumes\n"
"                      exhausted, 83 expired)\n"
"  --ckpt-signal SIG   what the training gets to save (default USR1)\n"
"  --time-limit TIME   the job's time limit (90, 20s, 15m, 2h, 1:30:00); default\n"
"                      SLURM_JOB_END_TIME when set\n"
"  --ckpt-lead SECONDS checkpoint this long before the time limit (default 60)\n"
"  --max-resumes N     requeue at most N times (SLURM_RESTART_COUNT or --state)\n"
"  --state FILE        count requeues here when SLURM_RESTART_COUNT is not set\n"
"  --exclude-file FILE write the faulty nodes' hostnames here (sbatch --exclude)\n"
"  --restart N         fault restart: start the training again up to N times\n"
"  --min-nodes M       elastic: run on the healthy nodes if at least M remain\n"
"  --inspect-interval S  inspect boards and NICs every S seconds (default 30; 0 off)\n"
"  --ckpt-dir DIR      inspect the space left in the checkpoint directory\n"
"  --heartbeat S       heartbeat interval (default 5)\n"
"  --heartbeat-timeout S  a node silent this long is lost (default 30)\n"
"  --hold-on-failure TIME  keep the allocation this long after an abnormal end\n"
"\n"
"Performance (timing lines: \"this iteration hardware time is H and e2e time is E ms.\"):\n"
"  --perf-threshold R  alert when hardware/e2e is above R (see --perf-compare)\n"
"  --perf-compare WAY  above (default, as the platform) or below (low utilisation)\n"
"  --perf-window W     for W consecutive iterations (default 5)\n"
"  --straggler-pct P   name a node whose e2e is P% above the nodes' median\n"
"  --perf-action WHAT  alert (default), or reschedule: checkpoint and requeue\n"
"  --notify CMD        run CMD on the coordinator per alert, the alert as JSON on stdin\n"
"  --metrics FILE      keep a Prometheus textfile of the current figures\n"
"  --summary-interval S  one summary line every S seconds (default 60; 0 off)\n"
"  -v, --verbose       diagnostics\n"
"\n"
"Pre-check options (as for `vigil check`): --config, --sysfs-root, --topology,\n"
"--slots, --nic, --ib, --path, --timeout.\n";

static const char slots_usage[] =
"usage: vigil slots [--json] [--topology FILE.xml]\n"
"\n"
"  --json            print one JSON object instead of a table\n"
"  --topology FILE   read an lstopo XML export instead of this machine\n";

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
"  --drain             drain this node in Slurm when unhealthy\n"
"  --undrain           resume this node in Slurm when healthy, if vigil drained it\n"
"                      (both together: what a HealthCheckProgram wants)\n"
"  -v, --verbose       also show warnings and diagnostics\n";

static int usage_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Say what was wrong with the command line; returns the usage exit code. */
static int
usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "vigil %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry `vigil %s --help'.\n", cmd);
	return VIGIL_EXIT_USAGE;
}

static int
parse_count(const char *s, long max, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 0 || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

static int
parse_seconds(const char *s, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v > 0) || v > 1e6)
		return -EINVAL;
	*out = v;
	return 0;
}

/*
 * A duration as Slurm and people write it: "90" (seconds), "20s", "15m",
 * "2h", "1d", "MM:SS", "HH:MM:SS", "D-HH:MM:SS".
 */
static int
parse_duration(const char *s, double *out)
{
	unsigned long d = 0, f[3];
	int n = 0, used = 0;
	const char *p = s;
	char *end;
	double v;

	if (strchr(s, ':')) {
		if (strchr(s, '-')) {
			if (sscanf(s, "%lu-%n", &d, &used) != 1 || used == 0)
				return -EINVAL;
			p = s + used;
		}
		n = sscanf(p, "%lu:%lu:%lu%n", &f[0], &f[1], &f[2], &used);
		if (n == 3 && p[used] == '\0' && f[1] < 60 && f[2] < 60) {
			*out = (double)d * 86400 + (double)f[0] * 3600 + (double)f[1] * 60 + (double)f[2];
			return *out > 0 ? 0 : -EINVAL;
		}
		n = sscanf(p, "%lu:%lu%n", &f[0], &f[1], &used);
		if (n == 2 && p[used] == '\0' && f[1] < 60 && !strchr(s, '-')) {
			*out = (double)f[0] * 60 + (double)f[1];
			return *out > 0 ? 0 : -EINVAL;
		}
		return -EINVAL;
	}
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || !(v > 0))
		return -EINVAL;
	if (*end == 'm' && !end[1])
		v *= 60;
	else if (*end == 'h' && !end[1])
		v *= 3600;
	else if (*end == 'd' && !end[1])
		v *= 86400;
	else if (*end && !(*end == 's' && !end[1]))
		return -EINVAL;
	if (v > 1e9)
		return -EINVAL;
	*out = v;
	return 0;
}

static void
node_name(char *buf, size_t len)
{
	const char *env = getenv("VIGIL_NODE_NAME");

	if (env && *env) {
		snprintf(buf, len, "%s", env);
		return;
	}
	if (gethostname(buf, len) < 0)
		snprintf(buf, len, "unknown");
	buf[len - 1] = '\0';
}

static int
discover(const char *topology, struct slot **slots, size_t *nslots)
{
	struct topo *t = NULL;
	int rc;

	rc = topo_load(topology, &t);
	if (rc < 0) {
		LOG_ERR("cannot load the topology%s%s: %s",
		        topology ? " from " : "", topology ? topology : "", strerror(-rc));
		return rc;
	}
	rc = topo_slots(t, slots, nslots);
	if (rc < 0)
		LOG_ERR("slot discovery failed: %s", strerror(-rc));
	topo_free(t);
	return rc;
}

static int
cmd_slots(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "topology", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *topology = NULL;
	struct slot *slots = NULL;
	size_t n = 0;
	bool json = false;
	int c, rc;

	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (c) {
		case 'j': json = true; break;
		case 't': topology = optarg; break;
		case 'h': fputs(slots_usage, stdout); return VIGIL_EXIT_OK;
		default: return usage_error("slots", "invalid option");
		}
	}
	if (optind < argc)
		return usage_error("slots", "unexpected argument '%s'", argv[optind]);
	if (discover(topology, &slots, &n) < 0)
		return VIGIL_EXIT_INTERNAL;
	if (json) {
		cJSON *o = slots_to_json(slots, n);
		char *text = o ? cJSON_Print(o) : NULL;

		if (!text) {
			LOG_ERR("out of memory");
			rc = VIGIL_EXIT_INTERNAL;
		} else {
			printf("%s\n", text);
			rc = VIGIL_EXIT_OK;
		}
		free(text);
		cJSON_Delete(o);
	} else {
		slots_print_table(stdout, slots, n);
		rc = VIGIL_EXIT_OK;
	}
	topo_slots_free(slots, n);
	if (fflush(stdout) != 0)
		rc = VIGIL_EXIT_INTERNAL;
	return rc;
}

/*
 * Flags that describe what a healthy node looks like, shared by `check`
 * and `run` (its pre-check).  Kept aside while parsing, then applied over
 * the configuration file, which they override.
 */
struct check_flags {
	const char *config, *root, *topology, *slots, *timeout;
	char **nics, **ibs, **paths;
	size_t nnics, nibs, npaths;
};

#define CHECK_FLAG_OPTIONS \
	{ "config", required_argument, NULL, 'c' }, \
	{ "sysfs-root", required_argument, NULL, 'r' }, \
	{ "topology", required_argument, NULL, 't' }, \
	{ "slots", required_argument, NULL, 's' }, \
	{ "nic", required_argument, NULL, 'n' }, \
	{ "ib", required_argument, NULL, 'i' }, \
	{ "path", required_argument, NULL, 'p' }, \
	{ "timeout", required_argument, NULL, 'T' }

/*
 * Take option C if it is a check flag: returns 1 when taken, 0 when not
 * one of them, or an exit status (> 1) on a bad value.
 */
static int
check_flag(const char *cmd, int c, const char *arg, struct check_flags *f)
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
			return usage_error(cmd, "--path needs an absolute path, got '%s'", arg);
		return config_list_add(&f->paths, &f->npaths, arg) < 0 ? VIGIL_EXIT_INTERNAL : 1;
	default:
		return 0;
	}
}

static void
check_flags_free(struct check_flags *f)
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

/*
 * Load the configuration file, then lay the flags over it.  Returns 0 or
 * an exit status: usage (bad flag value), config (bad file), internal.
 */
static int
check_flags_apply(const char *cmd, const struct check_flags *f, struct config *cfg)
{
	char err[512];
	long v = 0;
	double t = 0;

	if (f->slots && parse_count(f->slots, 4096, &v) < 0)
		return usage_error(cmd, "--slots needs a count from 0 to 4096, got '%s'", f->slots);
	if (f->timeout && parse_seconds(f->timeout, &t) < 0)
		return usage_error(cmd, "--timeout needs a positive number of seconds, got '%s'", f->timeout);
	if (f->root) {
		struct stat st;

		if (stat(f->root, &st) < 0 || !S_ISDIR(st.st_mode))
			return usage_error(cmd, "--sysfs-root needs a directory, got '%s'", f->root);
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
	bool all, json, drain, undrain, verbose;
};

/* Returns 0, -1 after --help, or an exit status. */
static int
check_parse(int argc, char **argv, struct check_opts *o, struct config *cfg)
{
	static const struct option opts[] = {
		CHECK_FLAG_OPTIONS,
		{ "all", no_argument, NULL, 'a' },
		{ "json", no_argument, NULL, 'j' },
		{ "events", required_argument, NULL, 'e' },
		{ "drain", no_argument, NULL, 'D' },
		{ "undrain", no_argument, NULL, 'U' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct check_flags f = { 0 };
	int c, rc;

	while ((c = getopt_long(argc, argv, "+vh", opts, NULL)) != -1) {
		rc = check_flag("check", c, optarg, &f);
		if (rc == 1)
			continue;
		if (rc > 1)
			goto out;
		switch (c) {
		case 'a': o->all = true; break;
		case 'j': o->json = true; break;
		case 'e': o->events = optarg; break;
		case 'D': o->drain = true; break;
		case 'U': o->undrain = true; break;
		case 'v': o->verbose = true; break;
		case 'h': fputs(check_usage, stdout); rc = -1; goto out;
		default: rc = usage_error("check", "invalid option"); goto out;
		}
	}
	if (optind < argc) {
		rc = usage_error("check", "unexpected argument '%s'", argv[optind]);
		goto out;
	}
	o->topology = f.topology;
	rc = check_flags_apply("check", &f, cfg);
out:
	check_flags_free(&f);
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
		if (f)
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

static int
cmd_check(int argc, char **argv)
{
	struct check_opts o = { 0 };
	struct config cfg;
	struct check_report report = { 0 };
	struct slot *slots = NULL;
	size_t nslots = 0;
	struct peer *p = NULL;
	struct peer_gather *pg = NULL;
	struct gather g = { 0 };
	char node[256], error[512] = "";
	char *payload = NULL;
	bool complete = true;
	int rc, exit_code = VIGIL_EXIT_INTERNAL;

	config_init(&cfg);
	rc = check_parse(argc, argv, &o, &cfg);
	if (rc != 0) {
		config_free(&cfg);
		return rc < 0 ? VIGIL_EXIT_OK : rc;
	}
	if (o.verbose)
		log_set_level(LOG_LEVEL_INFO);
	node_name(node, sizeof(node));
	log_set_identity(node, -1);

	/* MPI first: a node whose checks are slow is then a late peer the
	 * coordinator can time out, rather than one that holds every other
	 * node inside MPI_Init's exchange.  The timed checks fork after this;
	 * only Open MPI's openib transport objects to that, and the child
	 * does no MPI and leaves with _exit(). */
	rc = peer_init(&argc, &argv, &p);
	if (rc < 0) {
		LOG_ERR("MPI initialisation failed");
		goto out;
	}
	log_set_identity(node, peer_is_mpi(p) ? peer_rank(p) : -1);

	rc = discover(o.topology, &slots, &nslots);
	if (rc < 0) {
		snprintf(error, sizeof(error), "slots: discovery failed: %s", strerror(-rc));
	} else {
		struct check_ctx ctx = {
			.cfg = &cfg, .slots = slots, .nslots = nslots,
			/* reports, events and the coordinator name every failure */
			.all = o.all || o.json || o.events || peer_is_mpi(p),
		};

		rc = check_run(&ctx, &report);
		if (rc < 0)
			snprintf(error, sizeof(error), "cannot run the checks on %s: %s",
			         cfg.sysfs_root, strerror(-rc));
	}
	topo_slots_free(slots, nslots);
	slurm_mark(&o, &report, error[0] ? error : NULL);

	payload = gather_payload(node, peer_rank(p), &report, error[0] ? error : NULL);
	if (!payload || peer_gather_start(p, payload, &pg) < 0) {
		LOG_ERR("cannot send this node's report");
		goto out;
	}
	rc = peer_gather_wait(pg, cfg.gather_timeout_s);
	if (rc < 0) {
		LOG_ERR("MPI error while gathering reports");
		complete = false;
		goto out;
	}
	complete = rc == 1;

	if (peer_rank(p) != 0) {
		/* The coordinator reports for everyone; this node adds its own
		 * errors, once, for whoever reads this node's output. */
		const struct check_result *f = check_report_first(&report, VERDICT_FAIL);

		if (error[0])
			LOG_ERR("%s", error);
		else if (f)
			LOG_ERR("%s: %s", f->name, f->reason);
		if (!complete) {
			LOG_ERR("the coordinator did not take this node's report within %.0f s",
			        cfg.gather_timeout_s);
			exit_code = error[0] || f ? VIGIL_EXIT_UNHEALTHY : VIGIL_EXIT_INTERNAL;
		} else {
			exit_code = VIGIL_EXIT_OK;
		}
		goto out;
	}

	if (gather_init(&g, peer_size(p)) < 0)
		goto out;
	for (int r = 0; r < peer_size(p); r++)
		if (gather_add(&g, r, peer_gather_get(pg, r), cfg.gather_timeout_s) < 0)
			goto out;
	gather_consistency(&g);

	if (o.events) {
		struct events *ev = NULL;

		rc = events_open(o.events, &ev);
		if (rc == 0)
			rc = gather_write_events(&g, ev);
		if (rc == 0)
			rc = events_close(ev);
		else
			(void)events_close(ev);  /* the first error is the one to report */
		if (rc < 0)
			LOG_ERR("cannot write events to %s: %s", o.events, strerror(-rc));
	}
	if (o.json) {
		cJSON *j = gather_to_json(&g);
		char *text = j ? cJSON_Print(j) : NULL;

		if (text)
			printf("%s\n", text);
		free(text);
		cJSON_Delete(j);
	} else if (peer_is_mpi(p)) {
		gather_print(stdout, &g, o.verbose);
	} else {
		print_alone(&o, &report, error[0] ? error : NULL);
	}
	exit_code = gather_failed(&g) ? VIGIL_EXIT_UNHEALTHY : VIGIL_EXIT_OK;
out:
	if (fflush(stdout) != 0 && exit_code == VIGIL_EXIT_OK)
		exit_code = VIGIL_EXIT_INTERNAL;
	peer_gather_free(pg);
	free(payload);
	gather_free(&g);
	check_report_free(&report);
	config_free(&cfg);
	/* MPI_Finalize waits for every rank; a node that never reported may
	 * be hung, so then leave without it. */
	peer_finalize(p, complete);
	return exit_code;
}

static int
parse_forward(const char *arg, struct run_forward *f)
{
	char from[32], *eq;

	snprintf(from, sizeof(from), "%s", arg);
	eq = strchr(from, '=');
	if (!eq)
		return -EINVAL;
	*eq = '\0';
	if (sig_parse(from, &f->from) < 0 || sig_parse(eq + 1, &f->to) < 0)
		return -EINVAL;
	return 0;
}

/* Returns 0, -1 after --help, or an exit status. */
static int
run_parse(int argc, char **argv, struct run_opts *o, struct config *cfg)
{
	static const struct option opts[] = {
		CHECK_FLAG_OPTIONS,
		{ "mode", required_argument, NULL, 'm' },
		{ "precheck", required_argument, NULL, 'P' },
		{ "grace", required_argument, NULL, 'g' },
		{ "forward", required_argument, NULL, 'f' },
		{ "master-addr", required_argument, NULL, 'A' },
		{ "master-port", required_argument, NULL, 'M' },
		{ "ps", required_argument, NULL, 'S' },
		{ "tf-port", required_argument, NULL, 'F' },
		{ "run-dir", required_argument, NULL, 'R' },
		{ "hostfile", required_argument, NULL, 'H' },
		{ "mpich-hostfile", required_argument, NULL, 'I' },
		{ "tag-output", no_argument, NULL, 'o' },
		{ "output", required_argument, NULL, 'O' },
		{ "report", required_argument, NULL, 'w' },
		{ "events", required_argument, NULL, 'e' },
		{ "dry-run", no_argument, NULL, 'd' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "resume", no_argument, NULL, 1000 },
		{ "ckpt-signal", required_argument, NULL, 1001 },
		{ "ckpt-lead", required_argument, NULL, 1002 },
		{ "time-limit", required_argument, NULL, 1003 },
		{ "max-resumes", required_argument, NULL, 1004 },
		{ "state", required_argument, NULL, 1005 },
		{ "exclude-file", required_argument, NULL, 1006 },
		{ "ckpt-dir", required_argument, NULL, 1007 },
		{ "restart", required_argument, NULL, 1008 },
		{ "min-nodes", required_argument, NULL, 1009 },
		{ "inspect-interval", required_argument, NULL, 1010 },
		{ "heartbeat", required_argument, NULL, 1011 },
		{ "heartbeat-timeout", required_argument, NULL, 1012 },
		{ "hold-on-failure", required_argument, NULL, 1013 },
		{ "perf-threshold", required_argument, NULL, 1020 },
		{ "perf-window", required_argument, NULL, 1021 },
		{ "perf-compare", required_argument, NULL, 1022 },
		{ "perf-action", required_argument, NULL, 1023 },
		{ "straggler-pct", required_argument, NULL, 1024 },
		{ "notify", required_argument, NULL, 1025 },
		{ "metrics", required_argument, NULL, 1026 },
		{ "summary-interval", required_argument, NULL, 1027 },
		{ "perf-interval", required_argument, NULL, 1028 },
		{ NULL, 0, NULL, 0 },
	};
	struct check_flags f = { 0 };
	char err[1024];
	double d;
	long v = 0;
	int c, rc;

	while ((c = getopt_long(argc, argv, "+vh", opts, NULL)) != -1) {
		rc = check_flag("run", c, optarg, &f);
		if (rc == 1)
			continue;
		if (rc > 1)
			goto out;
		switch (c) {
		case 'm':
			if (mode_parse(optarg, &o->mode) < 0) {
				rc = usage_error("run", "--mode must be pytorch, deepspeed, horovod, tensorflow or single, got '%s'", optarg);
				goto out;
			}
			break;
		case 'P':
			if (strcmp(optarg, "off") == 0) {
				o->precheck = false;
			} else if (strcmp(optarg, "fail") == 0 || strcmp(optarg, "warn") == 0) {
				o->precheck = true;
				o->precheck_level = optarg[0] == 'f' ? VERDICT_FAIL : VERDICT_WARN;
			} else {
				rc = usage_error("run", "--precheck must be fail, warn or off, got '%s'", optarg);
				goto out;
			}
			break;
		case 'g':
			if (parse_seconds(optarg, &o->grace_s) < 0) {
				rc = usage_error("run", "--grace needs a positive number of seconds, got '%s'", optarg);
				goto out;
			}
			break;
		case 'f':
			if (o->nforward == (int)(sizeof(o->forward) / sizeof(o->forward[0])) ||
			    parse_forward(optarg, &o->forward[o->nforward]) < 0) {
				rc = usage_error("run", "--forward needs SIGNAL=SIGNAL (e.g. USR1=USR2), at most 8, got '%s'", optarg);
				goto out;
			}
			o->nforward++;
			break;
		case 'A': o->master_addr = optarg; break;
		case 'M':
		case 'F':
			if (parse_count(optarg, 65535, &v) < 0 || v == 0) {
				rc = usage_error("run", "%s needs a port from 1 to 65535, got '%s'",
				                 c == 'M' ? "--master-port" : "--tf-port", optarg);
				goto out;
			}
			if (c == 'M')
				o->master_port = (int)v;
			else
				o->tf_port = (int)v;
			break;
		case 'S':
			if (parse_count(optarg, 4096, &v) < 0) {
				rc = usage_error("run", "--ps needs a count, got '%s'", optarg);
				goto out;
			}
			o->ps = (int)v;
			break;
		case 'R': o->run_dir = optarg; break;
		case 'H': o->hostfile = optarg; break;
		case 'I': o->mpich_hostfile = optarg; break;
		case 'o': o->tag_output = true; break;
		case 'O':
			if (strcmp(optarg, "all") != 0 && strcmp(optarg, "coordinator") != 0) {
				rc = usage_error("run", "--output must be all or coordinator, got '%s'", optarg);
				goto out;
			}
			o->output_all = optarg[0] == 'a';
			break;
		case 'w': o->report = optarg; break;
		case 'e': o->events = optarg; break;
		case 'd': o->dry_run = true; break;
		case 'v': o->verbose = true; break;
		case 'h': fputs(run_usage, stdout); rc = -1; goto out;
		case 1000: o->resume = true; break;
		case 1001:
			if (sig_parse(optarg, &o->ckpt_signal) < 0) {
				rc = usage_error("run", "--ckpt-signal needs a signal (USR1, SIGUSR2, 12), got '%s'", optarg);
				goto out;
			}
			break;
		case 1002:
		case 1011:
		case 1012:
			if (parse_duration(optarg, &d) < 0) {
				rc = usage_error("run", "%s needs a duration in seconds (or 30s, 5m), got '%s'",
				                 c == 1002 ? "--ckpt-lead" : c == 1011 ? "--heartbeat" :
				                 "--heartbeat-timeout", optarg);
				goto out;
			}
			if (c == 1002)
				o->ckpt_lead_s = d;
			else if (c == 1011)
				o->heartbeat_s = d;
			else
				o->heartbeat_timeout_s = d;
			break;
		case 1003:
		case 1013:
			if (parse_duration(optarg, &d) < 0) {
				rc = usage_error("run", "%s needs a duration (90, 20s, 15m, 2h, 1:30:00, 1-00:00:00), got '%s'",
				                 c == 1003 ? "--time-limit" : "--hold-on-failure", optarg);
				goto out;
			}
			if (c == 1003)
				o->time_limit_s = d;
			else
				o->hold_s = d;
			break;
		case 1004:
		case 1008:
		case 1009:
			if (parse_count(optarg, 1000000, &v) < 0) {
				rc = usage_error("run", "%s needs a count, got '%s'", c == 1004 ? "--max-resumes" :
				                 c == 1008 ? "--restart" : "--min-nodes", optarg);
				goto out;
			}
			if (c == 1004)
				o->max_resumes = (int)v;
			else if (c == 1008)
				o->restart_max = (int)v;
			else
				o->min_nodes = (int)v;
			break;
		case 1005: o->state_file = optarg; break;
		case 1006: o->exclude_file = optarg; break;
		case 1007: o->ckpt_dir = optarg; break;
		case 1010:
			if (strcmp(optarg, "0") == 0) {
				o->inspect_s = 0;
			} else if (parse_duration(optarg, &o->inspect_s) < 0) {
				rc = usage_error("run", "--inspect-interval needs seconds (0: off), got '%s'", optarg);
				goto out;
			}
			break;
		case 1020:
		case 1024: {
			char *end;
			double x;

			errno = 0;
			x = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(x > 0) || x > 1e6) {
				rc = usage_error("run", "%s needs a positive number, got '%s'",
				                 c == 1020 ? "--perf-threshold" : "--straggler-pct", optarg);
				goto out;
			}
			if (c == 1020)
				o->perf_threshold = x;
			else
				o->straggler_pct = x;
			break;
		}
		case 1021:
			if (parse_count(optarg, 1000000, &v) < 0 || v < 1) {
				rc = usage_error("run", "--perf-window needs a count of iterations (>= 1), got '%s'", optarg);
				goto out;
			}
			o->perf_window = (int)v;
			break;
		case 1022:
			if (strcmp(optarg, "above") != 0 && strcmp(optarg, "below") != 0) {
				rc = usage_error("run", "--perf-compare must be above or below, got '%s'", optarg);
				goto out;
			}
			o->perf_below = optarg[0] == 'b';
			break;
		case 1023:
			if (strcmp(optarg, "alert") != 0 && strcmp(optarg, "reschedule") != 0) {
				rc = usage_error("run", "--perf-action must be alert or reschedule, got '%s'", optarg);
				goto out;
			}
			o->perf_reschedule = optarg[0] == 'r';
			break;
		case 1025: o->notify = optarg; break;
		case 1026: o->metrics = optarg; break;
		case 1027:
		case 1028:
			if (strcmp(optarg, "0") == 0 && c == 1027) {
				o->summary_s = 0;
			} else if (parse_duration(optarg, c == 1027 ? &o->summary_s : &o->perf_interval_s) < 0) {
				rc = usage_error("run", "%s needs seconds, got '%s'",
				                 c == 1027 ? "--summary-interval" : "--perf-interval", optarg);
				goto out;
			}
			break;
		default: rc = usage_error("run", "invalid option"); goto out;
		}
	}
	if (o->perf_reschedule && !o->resume) {
		rc = usage_error("run", "--perf-action reschedule checkpoints and requeues: it needs --resume");
		goto out;
	}
	if (o->resume && o->restart_max > 0) {
		/* the platform manual: 断点续训 and 故障重启 exclude each other */
		rc = usage_error("run", "--resume and --restart exclude each other: resume "
		                 "checkpoints and requeues the job, restart starts the training again in place");
		goto out;
	}
	if (o->heartbeat_timeout_s <= o->heartbeat_s) {
		rc = usage_error("run", "--heartbeat-timeout (%g s) must be longer than --heartbeat (%g s)",
		                 o->heartbeat_timeout_s, o->heartbeat_s);
		goto out;
	}
	if (optind >= argc) {
		rc = usage_error("run", "no command: give it after --, e.g. vigil run -- python3 train.py");
		goto out;
	}
	if (cmdline_check(argc - optind, argv + optind, &o->cmd, err, sizeof(err)) < 0) {
		fprintf(stderr, "vigil run: %s\n", err);
		rc = VIGIL_EXIT_USAGE;
		goto out;
	}
	o->topology = f.topology;
	rc = check_flags_apply("run", &f, cfg);
out:
	check_flags_free(&f);
	return rc;
}

static int
cmd_run(int argc, char **argv)
{
	struct run_opts o;
	struct config cfg;
	char node[256];
	int rc;

	run_opts_init(&o);
	node_name(node, sizeof(node));
	o.node = node;
	config_init(&cfg);
	rc = run_parse(argc, argv, &o, &cfg);
	if (rc == 0) {
		if (o.verbose)
			log_set_level(LOG_LEVEL_INFO);
		rc = run_job(&o, &cfg, &argc, &argv);
	} else if (rc < 0) {
		rc = VIGIL_EXIT_OK;
	}
	cmdline_free(o.cmd);
	config_free(&cfg);
	return rc;
}

int
main(int argc, char **argv)
{
	const char *cmd;

	if (argc < 2) {
		fputs(usage_text, stderr);
		return VIGIL_EXIT_USAGE;
	}
	cmd = argv[1];
	if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
		printf("vigil %s\n", VIGIL_VERSION);
		return VIGIL_EXIT_OK;
	}
	if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
		fputs(usage_text, stdout);
		return VIGIL_EXIT_OK;
	}
	/* Subcommands parse their own options from argv[1] on. */
	if (strcmp(cmd, "run") == 0)
		return cmd_run(argc - 1, argv + 1);
	if (strcmp(cmd, "report") == 0)
		return report_main(argc - 1, argv + 1);
	if (strcmp(cmd, "slots") == 0)
		return cmd_slots(argc - 1, argv + 1);
	if (strcmp(cmd, "check") == 0)
		return cmd_check(argc - 1, argv + 1);
	fprintf(stderr, "vigil: unknown command '%s'\n\n%s", cmd, usage_text);
	return VIGIL_EXIT_USAGE;
}
