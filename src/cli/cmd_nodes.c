/*
 * cmd_nodes.c - `vigil nodes`: the site's node ledger (ledger.h) for
 * people and scripts: each node's state (lemon.h), why, and incidents;
 * the quarantined nodes for sbatch --exclude; and an administrator's
 * quarantine, forgiveness and compaction.
 */
#include "autoconf.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cJSON.h>

#include "vigil.h"
#include "check/ledger.h"
#include "check/lemon.h"
#include "cli/cmd.h"
#include "conf/config.h"
#include "conf/opts.h"
#include "lib/json.h"
#include "lib/util.h"

static const char nodes_usage[] =
"usage: vigil nodes --config FILE [OPTIONS]\n"
"\n"
"The node ledger (ledger.dir in the configuration): each node's state (ok,\n"
"watched, quarantined until ..., probation), why, and its incidents.\n"
"\n"
"  --config FILE       the configuration: the ledger and its rules (vigil.conf(5))\n"
"  --dir DIR           the ledger's directory, instead of ledger.dir\n"
"  --node NODE         this node only (repeatable)\n"
"  --kind KIND         incidents of this kind only (repeatable): precheck, fault,\n"
"                      lost, hang, straggler, healthcheck, board, quarantine, forgive\n"
"  --since WHEN        incidents since WHEN only: a time ago (7d, 12h) or a date\n"
"                      (2026-05-01, 2026-05-01T12:00:00Z, UTC)\n"
"  --state STATE       nodes in this state only (repeatable): ok, watched,\n"
"                      quarantined, probation\n"
"  --quarantined       nodes quarantined now only (--state quarantined)\n"
"  --incidents         list each node's incidents (the default with --node)\n"
"  --format FORMAT     table (default), json, slurm (the names, comma-separated,\n"
"                      for sbatch --exclude) or lines (one name a line)\n"
"  --json              --format json\n"
"\n"
"As root (or the ledger's owner):\n"
"  --quarantine NODE   quarantine NODE by hand, --why TEXT (required), for\n"
"                      --for DURATION (default: until forgiven by hand)\n"
"  --forgive NODE      end NODE's quarantine and reset its backoff (--why TEXT)\n"
"  --compact           merge every node's records, drop the expired ones\n";

enum format { FMT_TABLE, FMT_JSON, FMT_SLURM, FMT_LINES };

#define LIST_MAX 64

struct nodes_opts {
	const char *config, *dir, *why, *quarantine, *forgive;
	const char *nodes[LIST_MAX];
	int nnodes;
	unsigned kinds;            /* bits 1 << kind; 0: all */
	unsigned states;           /* bits 1 << enum lemon_state; 0: all */
	double since;              /* -INFINITY: all */
	double for_s;              /* --for; 0: until forgiven */
	bool incidents, compact;
	enum format format;
};

/* ---- options ------------------------------------------------------------------- */

/* WHEN as a time: a duration ago, or a UTC date with or without a time. */
static int
parse_when(const char *s, double now, double *out)
{
	static const char *const forms[] = {
		"%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d",
	};
	double d;

	if (opts_duration(s, &d, NULL) == 0) {
		*out = now - d;
		return 0;
	}
	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		struct tm tm;
		const char *end;

		memset(&tm, 0, sizeof(tm));
		end = strptime(s, forms[i], &tm);
		if (end && !*end) {
			*out = (double)timegm(&tm);
			return 0;
		}
	}
	return -EINVAL;
}

static int
take_state(struct nodes_opts *o, const char *s)
{
	for (int st = LEMON_OK; st <= LEMON_PROBATION; st++)
		if (strcmp(s, lemon_state_name(st)) == 0) {
			o->states |= 1u << st;
			return 0;
		}
	return cmd_usage_error("nodes", "--state takes ok, watched, quarantined or probation, "
	                       "got '%s'", s);
}

static int
take_format(struct nodes_opts *o, const char *s)
{
	static const char *const names[] = {
		[FMT_TABLE] = "table", [FMT_JSON] = "json", [FMT_SLURM] = "slurm", [FMT_LINES] = "lines",
	};

	for (int f = FMT_TABLE; f <= FMT_LINES; f++)
		if (strcmp(s, names[f]) == 0) {
			o->format = f;
			return 0;
		}
	return cmd_usage_error("nodes", "--format takes table, json, slurm or lines, got '%s'", s);
}

/* One option C with ARG.  Returns 0, -1 after --help, or an exit status. */
static int
take_opt(struct nodes_opts *o, int c, const char *arg, double now)
{
	int kind;

	switch (c) {
	case 'c': o->config = arg; return 0;
	case 'd': o->dir = arg; return 0;
	case 'n':
		if (o->nnodes >= LIST_MAX)
			return cmd_usage_error("nodes", "at most %d --node options", LIST_MAX);
		o->nodes[o->nnodes++] = arg;
		o->incidents = true;
		return 0;
	case 'k':
		kind = ledger_kind_parse(arg);
		if (kind < 0)
			return cmd_usage_error("nodes", "--kind takes precheck, fault, lost, hang, "
			                       "straggler, healthcheck, board, quarantine or forgive, "
			                       "got '%s'", arg);
		o->kinds |= 1u << kind;
		return 0;
	case 's':
		if (parse_when(arg, now, &o->since) < 0)
			return cmd_usage_error("nodes", "--since takes a time ago (7d, 12h) or a date "
			                       "(2026-05-01, 2026-05-01T12:00:00Z), got '%s'", arg);
		return 0;
	case 'S': return take_state(o, arg);
	case 'Q': o->states |= 1u << LEMON_QUARANTINED; return 0;
	case 'i': o->incidents = true; return 0;
	case 'f': return take_format(o, arg);
	case 'j': o->format = FMT_JSON; return 0;
	case 'q': o->quarantine = arg; return 0;
	case 'F': o->forgive = arg; return 0;
	case 'w': o->why = arg; return 0;
	case 't':
		if (opts_duration(arg, &o->for_s, NULL) < 0 || o->for_s < 1)
			return cmd_usage_error("nodes", "--for takes a duration of a second or more "
			                       "(90m, 2h, 7d), got '%s'", arg);
		return 0;
	case 'C': o->compact = true; return 0;
	case 'h': fputs(nodes_usage, stdout); return -1;
	default: return cmd_usage_error("nodes", "invalid option");
	}
}

static int
nodes_parse(int argc, char **argv, struct nodes_opts *o, double now)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' }, { "dir", required_argument, NULL, 'd' },
		{ "node", required_argument, NULL, 'n' }, { "kind", required_argument, NULL, 'k' },
		{ "since", required_argument, NULL, 's' }, { "state", required_argument, NULL, 'S' },
		{ "quarantined", no_argument, NULL, 'Q' }, { "incidents", no_argument, NULL, 'i' },
		{ "format", required_argument, NULL, 'f' }, { "json", no_argument, NULL, 'j' },
		{ "quarantine", required_argument, NULL, 'q' },
		{ "forgive", required_argument, NULL, 'F' }, { "why", required_argument, NULL, 'w' },
		{ "for", required_argument, NULL, 't' }, { "compact", no_argument, NULL, 'C' },
		{ "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	int c, rc;

	optind = 0;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1)
		if ((rc = take_opt(o, c, optarg, now)) != 0)
			return rc;
	if (optind < argc)
		return cmd_usage_error("nodes", "unexpected argument '%s'", argv[optind]);
	if (!o->config && !o->dir)
		return cmd_usage_error("nodes", "name the ledger: --config FILE (with ledger.dir) "
		                       "or --dir DIR");
	if (o->dir && o->dir[0] != '/')
		return cmd_usage_error("nodes", "--dir needs an absolute path, got '%s'", o->dir);
	if ((o->quarantine != NULL) + (o->forgive != NULL) + o->compact > 1)
		return cmd_usage_error("nodes", "one of --quarantine, --forgive and --compact at a time");
	if (o->quarantine && (!o->why || !o->why[0]))
		return cmd_usage_error("nodes", "--quarantine needs --why TEXT: the reason people "
		                       "will read in the drain and in `vigil nodes`");
	if ((o->why && !o->quarantine && !o->forgive) || (o->for_s > 0 && !o->quarantine))
		return cmd_usage_error("nodes", "--why and --for go with --quarantine or --forgive");
	return 0;
}

/* ---- showing --------------------------------------------------------------------- */

struct show {
	const struct nodes_opts *o;
	const struct config_ledger *lc;
	double now;
	int shown, by_state[LEMON_PROBATION + 1];
	bool failed;               /* stdout could not take it */
};

/* Whether R passes the --kind and --since filters. */
static bool
wanted(const struct nodes_opts *o, const struct ledger_record *r)
{
	return (!o->kinds || (o->kinds & (1u << r->kind))) && r->time >= o->since;
}

static cJSON *
record_json(const struct ledger_record *r)
{
	cJSON *o = cJSON_CreateObject();
	char t[32];

	cJSON_AddStringToObject(o, "time", lemon_fmt_time(r->time, t, sizeof(t)));
	cJSON_AddStringToObject(o, "kind", ledger_kind_name(r->kind));
	cJSON_AddStringToObject(o, "check", r->check);
	cJSON_AddStringToObject(o, "device", r->device);
	cJSON_AddStringToObject(o, "job", r->job);
	cJSON_AddStringToObject(o, "user", r->user);
	cJSON_AddStringToObject(o, "evidence", r->evidence);
	if (r->kind == LEDGER_KIND_QUARANTINE)
		cJSON_AddNumberToObject(o, "seconds", r->seconds);
	cJSON_AddBoolToObject(o, "trusted", r->trusted);
	cJSON_AddStringToObject(o, "id", r->id);
	return o;
}

static void
print_json(struct show *s, const char *node, const struct ledger_records *rs,
           const struct lemon_verdict *v, int nwanted)
{
	cJSON *o = cJSON_CreateObject(), *a;
	char t[32], *text;

	cJSON_AddStringToObject(o, "node", node);
	cJSON_AddStringToObject(o, "state", lemon_state_name(v->state));
	if (v->state == LEMON_QUARANTINED || v->state == LEMON_PROBATION) {
		cJSON_AddStringToObject(o, "since", lemon_fmt_time(v->since, t, sizeof(t)));
		if (isinf(v->until))
			cJSON_AddNullToObject(o, "until");
		else
			cJSON_AddStringToObject(o, "until", lemon_fmt_time(v->until, t, sizeof(t)));
		cJSON_AddBoolToObject(o, "manual", v->manual);
	}
	cJSON_AddStringToObject(o, "why", v->why);
	cJSON_AddNumberToObject(o, "level", v->level);
	cJSON_AddNumberToObject(o, "counting", v->counting);
	cJSON_AddNumberToObject(o, "incidents_total", v->incidents);
	cJSON_AddNumberToObject(o, "incidents_shown", nwanted);
	a = cJSON_AddArrayToObject(o, "records");
	for (size_t i = 0; a && i < rs->n; i++)
		if (wanted(s->o, &rs->v[i]))
			cJSON_AddItemToArray(a, record_json(&rs->v[i]));
	text = json_print(o, false);
	cJSON_Delete(o);
	if (!text || printf("%s\n  %s", s->shown ? "," : "", text) < 0)
		s->failed = true;
	free(text);
}

static void
print_row(struct show *s, const char *node, const struct ledger_records *rs,
          const struct lemon_verdict *v, int nwanted)
{
	char until[32] = "-", last[32] = "-";

	if (v->state == LEMON_QUARANTINED || v->state == LEMON_PROBATION)
		lemon_fmt_time(v->until, until, sizeof(until));
	for (size_t i = rs->n; i-- > 0;)
		if (wanted(s->o, &rs->v[i])) {
			lemon_fmt_time(rs->v[i].time, last, sizeof(last));
			break;
		}
	if (s->shown == 0)
		printf("%-16s %-12s %-21s %9s %-21s %s\n", "NODE", "STATE", "UNTIL", "INCIDENTS",
		       "LAST", "WHY");
	printf("%-16s %-12s %-21s %9d %-21s %s\n", node, lemon_state_name(v->state), until,
	       nwanted, last, v->why[0] ? v->why : "-");
	for (size_t i = 0; s->o->incidents && i < rs->n; i++) {
		const struct ledger_record *r = &rs->v[i];
		char t[32];

		if (!wanted(s->o, r))
			continue;
		printf("    %s  %-11s %s%s%s%s%s  %s  (%s%s)\n", lemon_fmt_time(r->time, t, sizeof(t)),
		       ledger_kind_name(r->kind), r->check, r->device[0] ? " " : "", r->device,
		       r->job[0] ? "  job " : "", r->job, r->evidence, r->user[0] ? r->user : "?",
		       !ledger_is_incident(r->kind) && !r->trusted ? ", ignored: not root's" : "");
	}
}

/* One node: judged on all its records, shown if it passes the filters. */
static int
show_node(void *arg, const char *node, const struct ledger_records *rs)
{
	struct show *s = arg;
	struct lemon_verdict v;
	int nwanted = 0;  /* incidents among the records shown */
	bool any = false;

	lemon_judge(s->lc, rs->v, rs->n, s->now, &v);
	if (s->o->states && !(s->o->states & (1u << v.state)))
		return 0;
	for (size_t i = 0; i < rs->n; i++) {
		if (!wanted(s->o, &rs->v[i]))
			continue;
		any = true;
		nwanted += ledger_is_incident(rs->v[i].kind);
	}
	/* asked for records of a kind or a time: nodes without any are left out */
	if ((s->o->kinds || !isinf(s->o->since)) && !any)
		return 0;
	switch (s->o->format) {
	case FMT_TABLE: print_row(s, node, rs, &v, nwanted); break;
	case FMT_JSON: print_json(s, node, rs, &v, nwanted); break;
	case FMT_SLURM: printf("%s%s", s->shown ? "," : "", node); break;
	case FMT_LINES: printf("%s\n", node); break;
	}
	s->shown++;
	s->by_state[v.state]++;
	return 0;
}

/* Every node asked for (--node), or every node of the ledger. */
static int
list(struct ledger *l, const struct nodes_opts *o, const struct config_ledger *lc, double now)
{
	struct show s = { .o = o, .lc = lc, .now = now };
	double since = now - lc->retention_s;
	const char *first = NULL;
	char why[512] = "", t[32];
	int rc = 0;

	if (o->format == FMT_JSON)
		printf("{\"time\": \"%s\", \"dir\": ", lemon_fmt_time(now, t, sizeof(t)));
	if (o->format == FMT_JSON) {
		cJSON *d = cJSON_CreateString(ledger_dir(l));
		char *text = d ? json_print(d, false) : NULL;

		printf("%s, \"nodes\": [", text ? text : "null");
		free(text);
		cJSON_Delete(d);
	}
	if (o->nnodes == 0)
		rc = ledger_each_node(l, since, show_node, &s, why, sizeof(why));
	for (int i = 0; rc == 0 && i < o->nnodes; i++) {
		struct ledger_records rs = { 0 };

		rc = ledger_read_node(l, o->nodes[i], since, &rs, why, sizeof(why));
		if (rc == 0)
			rc = show_node(&s, o->nodes[i], &rs);
		ledger_records_free(&rs);
	}
	if (o->format == FMT_JSON)
		printf("%s]}\n", s.shown ? "\n" : "");
	else if (o->format == FMT_SLURM && s.shown)
		printf("\n");
	else if (o->format == FMT_TABLE)
		printf("%s%d node%s: %d quarantined, %d on probation, %d watched, %d ok\n",
		       s.shown ? "" : "(no node)\n", s.shown, util_plural(s.shown),
		       s.by_state[LEMON_QUARANTINED], s.by_state[LEMON_PROBATION],
		       s.by_state[LEMON_WATCHED], s.by_state[LEMON_OK]);
	if (ledger_skipped(l, &first) > 0)
		fprintf(stderr, "vigil nodes: warning: %u unreadable files or lines skipped in %s, "
		        "the first: %s\n", ledger_skipped(l, NULL), ledger_dir(l), first);
	if (rc < 0) {
		fprintf(stderr, "vigil nodes: %s\n", why);
		return rc == -EINVAL ? VIGIL_EXIT_USAGE : VIGIL_EXIT_INTERNAL;
	}
	if (fflush(stdout) != 0 || s.failed)
		return VIGIL_EXIT_INTERNAL;
	return VIGIL_EXIT_OK;
}

/* ---- an administrator's records ------------------------------------------------- */

static int
admin(struct ledger *l, const struct nodes_opts *o, double now)
{
	struct ledger_record r = { .time = now, .manual = true, .uid = -1 };
	const char *node = o->quarantine ? o->quarantine : o->forgive;
	char why[512] = "", t[32];
	int rc;

	if (!ledger_trusted(l)) {
		fprintf(stderr, "vigil nodes: only root or the owner of %s may %s a node\n",
		        ledger_dir(l), o->quarantine ? "quarantine" : "forgive");
		return VIGIL_EXIT_USAGE;
	}
	r.kind = o->quarantine ? LEDGER_KIND_QUARANTINE : LEDGER_KIND_FORGIVE;
	r.seconds = o->for_s;
	snprintf(r.node, sizeof(r.node), "%s", node);
	snprintf(r.evidence, sizeof(r.evidence), "%s", o->why ? o->why : "forgiven by hand");
	rc = ledger_append(l, &r, 1, why, sizeof(why));
	if (rc < 0) {
		fprintf(stderr, "vigil nodes: %s\n", why);
		return rc == -EINVAL || rc == -ENAMETOOLONG ? VIGIL_EXIT_USAGE : VIGIL_EXIT_INTERNAL;
	}
	if (o->forgive)
		printf("vigil: %s forgiven\n", node);
	else if (o->for_s > 0)
		printf("vigil: %s quarantined until %s: %s\n", node,
		       lemon_fmt_time(now + o->for_s, t, sizeof(t)), r.evidence);
	else
		printf("vigil: %s quarantined until forgiven (vigil nodes --forgive %s): %s\n", node,
		       node, r.evidence);
	return VIGIL_EXIT_OK;
}

static int
compact(struct ledger *l, const struct config_ledger *lc, double now)
{
	char why[512] = "";
	int rc = ledger_compact(l, now - lc->retention_s, now, why, sizeof(why));

	if (rc < 0) {
		fprintf(stderr, "vigil nodes: %s\n", why);
		return rc == -EPERM ? VIGIL_EXIT_USAGE : VIGIL_EXIT_INTERNAL;
	}
	return VIGIL_EXIT_OK;
}

int
cmd_nodes(int argc, char **argv)
{
	struct nodes_opts o = { .since = -INFINITY };
	struct ledger *l = NULL;
	struct config cfg;
	double now = util_wall_s();
	char err[512] = "";
	bool write;
	int rc;

	config_init(&cfg);
	rc = nodes_parse(argc, argv, &o, now);
	if (rc == 0 && o.config && config_load_file(&cfg, o.config, err, sizeof(err)) < 0) {
		fprintf(stderr, "vigil: configuration error: %s\n", err);
		rc = VIGIL_EXIT_CONFIG;
	}
	if (rc == 0 && o.dir) {
		free(cfg.ledger.dir);
		if (!(cfg.ledger.dir = strdup(o.dir)))
			rc = VIGIL_EXIT_INTERNAL;
	}
	if (rc == 0 && !cfg.ledger.dir) {
		fprintf(stderr, "vigil nodes: %s has no ledger: set ledger.dir (vigil.conf(5)) or "
		        "give --dir\n", o.config);
		rc = VIGIL_EXIT_CONFIG;
	}
	write = o.quarantine || o.forgive || o.compact;
	if (rc == 0 && ledger_open(cfg.ledger.dir, write, &l, err, sizeof(err)) < 0) {
		fprintf(stderr, "vigil nodes: cannot open the node ledger: %s\n", err);
		rc = VIGIL_EXIT_CONFIG;
	}
	if (rc == 0)
		rc = o.quarantine || o.forgive ? admin(l, &o, now) :
		     o.compact ? compact(l, &cfg.ledger, now) : list(l, &o, &cfg.ledger, now);
	ledger_close(l);
	config_free(&cfg);
	return rc < 0 ? VIGIL_EXIT_OK : rc;
}
