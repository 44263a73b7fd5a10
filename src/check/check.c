/*
 * check.c - the node health checks: the pre-check and `vigil check`.
 *
 * Gather once (facts_gather()), then for each check: its facts as
 * details, the judges' findings as its "problems", the first of the worst
 * as the one-line reason a sysadmin reads as "vigil: CHECK: REASON", and
 * a one-line summary when all is well.  The rules and their words live in
 * judge.c, shared with the inspection.
 */
#include "autoconf.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/statvfs.h>

#include "check/check.h"
#include "check/facts.h"
#include "check/judge.h"
#include "check/ledger.h"
#include "check/lemon.h"
#include "check/vhealth.h"
#include "lib/util.h"
#include "sys/hwmon.h"

/* One run: the facts, the rules, and allocation failure noted once. */
struct run {
	const struct check_ctx *ctx;
	const struct config *cfg;
	const struct facts *facts;
	const struct judge_rules *rules;
	struct check_report *report;
	bool live;                 /* the sysfs root is this system's: libraries may be asked */
	bool oom;
};

/* The check being judged: the sink of its findings. */
struct verdicts {
	struct run *run;
	struct check_result *r;
	cJSON *problems;
	int n;
};

/* --- details ------------------------------------------------------------ */

static cJSON *
jadd(struct run *run, cJSON *obj, const char *key, cJSON *item)
{
	if (!item) {
		run->oom = true;
		return NULL;
	}
	if (!obj || !(cJSON_IsArray(obj) ? cJSON_AddItemToArray(obj, item)
	                                 : cJSON_AddItemToObject(obj, key, item))) {
		cJSON_Delete(item);
		run->oom = true;
		return NULL;
	}
	return item;
}

/* "" and NULL are null: unknown. */
static void
jstr(struct run *run, cJSON *obj, const char *key, const char *s)
{
	jadd(run, obj, key, s && *s ? cJSON_CreateString(s) : cJSON_CreateNull());
}

static void
jnum(struct run *run, cJSON *obj, const char *key, double v)
{
	jadd(run, obj, key, cJSON_CreateNumber(v));
}

/* A count where a negative value means unknown. */
static void
jcount(struct run *run, cJSON *obj, const char *key, long long v)
{
	jadd(run, obj, key, v >= 0 ? cJSON_CreateNumber((double)v) : cJSON_CreateNull());
}

static void
jbool(struct run *run, cJSON *obj, const char *key, bool v)
{
	jadd(run, obj, key, cJSON_CreateBool(v));
}

static void
jnull(struct run *run, cJSON *obj, const char *key)
{
	jadd(run, obj, key, cJSON_CreateNull());
}

static cJSON *
jobj(struct run *run, cJSON *obj, const char *key)
{
	return jadd(run, obj, key, cJSON_CreateObject());
}

static cJSON *
jarr(struct run *run, cJSON *obj, const char *key)
{
	return jadd(run, obj, key, cJSON_CreateArray());
}

/* --- verdicts ----------------------------------------------------------- */

/* The sink: every finding is a problem; the first of the worst is the reason. */
static void
take(void *arg, const struct finding *f)
{
	struct verdicts *vs = arg;

	jstr(vs->run, vs->problems, NULL, f->evidence);
	vs->n++;
	if (f->verdict > vs->r->verdict) {
		vs->r->verdict = f->verdict;
		snprintf(vs->r->reason, sizeof(vs->r->reason), "%s", f->evidence);
	}
}

static void summary(struct verdicts *vs, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* A passing check's reason: the summary FMT. */
static void
summary(struct verdicts *vs, const char *fmt, ...)
{
	va_list ap;

	if (vs->r->verdict != VERDICT_PASS)
		return;
	va_start(ap, fmt);
	vsnprintf(vs->r->reason, sizeof(vs->r->reason), fmt, ap);
	va_end(ap);
}

/* --- slots ------------------------------------------------------------- */

static void
slot_details(struct run *run, cJSON *arr, const struct facts_slot *s)
{
	const struct hwmon_pci *pci = &s->pci;
	cJSON *o, *link, *aer;
	char what[96];

	o = jobj(run, arr, NULL);
	jnum(run, o, "index", s->index);
	jstr(run, o, "pci_bus_id", s->bus_id);
	jstr(run, o, "vendor", slot_vendor_name(s->vendor));
	jstr(run, o, "model", s->model);
	jbool(run, o, "present", s->rc == 0);
	if (s->rc < 0)
		return;
	jstr(run, o, "driver", pci->driver);
	jstr(run, o, "module", pci->module);
	link = jobj(run, o, "link");
	jstr(run, link, "current_speed", pci->cur_speed);
	jstr(run, link, "max_speed", pci->max_speed);
	jcount(run, link, "current_width", pci->cur_width ? pci->cur_width : -1);
	jcount(run, link, "max_width", pci->max_width ? pci->max_width : -1);
	jbool(run, link, "degraded", judge_pcie_degraded(pci, what, sizeof(what)));
	aer = jobj(run, o, "aer");
	jcount(run, aer, "correctable", pci->aer_correctable);
	jcount(run, aer, "nonfatal", pci->aer_nonfatal);
	jcount(run, aer, "fatal", pci->aer_fatal);
}

static void
library_details(struct run *run, cJSON *details, const char *key, const struct facts_library *l)
{
	cJSON *d;

	if (!l->asked)
		return;
	d = jobj(run, details, key);
	if (l->job_rc < 0) {
		jbool(run, d, "available", false);
		jstr(run, d, "error", l->job_rc == -ETIMEDOUT ? "timed out"
		                      : l->job_rc == -EPROTO  ? "the query process failed"
		                                              : strerror(-l->job_rc));
		return;
	}
	jstr(run, d, "library", l->info.library);
	jbool(run, d, "available", l->rc == 0);
	jstr(run, d, "version", l->info.version);
	jcount(run, d, "count", l->info.count);
	jstr(run, d, "error", l->info.error);
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Distinct models, sorted, joined with ", " (cut at a whole model). */
static int
report_models(const struct facts *f, char *out, size_t len)
{
	const char **v;
	size_t used = 0;

	out[0] = '\0';
	if (f->nslots == 0)
		return 0;
	v = calloc(f->nslots, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < f->nslots; i++)
		v[i] = f->slots[i].model;
	qsort(v, f->nslots, sizeof(*v), cmp_str);
	for (size_t i = 0; i < f->nslots; i++) {
		size_t need;

		if (!v[i][0] || (i > 0 && strcmp(v[i], v[i - 1]) == 0))
			continue;
		need = strlen(v[i]) + (used ? 2 : 0);
		if (used + need >= len)
			break;
		used += (size_t)snprintf(out + used, len - used, "%s%s", used ? ", " : "", v[i]);
	}
	free(v);
	return 0;
}

/* One vendor: the bare version; several: "nvidia 535.104.05, amd 6.3.6". */
static void
report_driver(const struct facts *f, char *out, size_t len)
{
	unsigned nv = 0;
	size_t used = 0;

	out[0] = '\0';
	for (unsigned v = 0; v < FACTS_NVENDORS; v++)
		nv += f->drivers[v].nslots && f->drivers[v].version[0];
	for (unsigned v = 0; v < FACTS_NVENDORS; v++) {
		const struct facts_driver *d = &f->drivers[v];
		int w;

		if (!d->nslots || !d->version[0])
			continue;
		if (nv == 1)
			w = snprintf(out, len, "%s", d->version);
		else
			w = snprintf(out + used, len - used, "%s%s %s", used ? ", " : "",
			             slot_vendor_name((enum slot_vendor)v), d->version);
		if (w < 0 || used + (size_t)w >= len)
			break;
		used += (size_t)w;
	}
}

static void
check_slots(struct verdicts *vs, struct judge *j)
{
	struct run *run = vs->run;
	const struct facts *f = run->facts;
	const struct judge_rules *rules = run->rules;
	const struct check_facts *cf = &run->report->facts;
	cJSON *d = vs->r->details, *arr, *drivers;
	size_t present = 0;

	if (rules->slots_expected >= 0)
		jnum(run, d, "expected", rules->slots_expected);
	else
		jnull(run, d, "expected");
	jnum(run, d, "count", (double)f->nslots);
	judge_slot_count(j, f->nslots, rules);
	arr = jarr(run, d, "slots");
	for (size_t i = 0; i < f->nslots; i++) {
		const struct facts_slot *s = &f->slots[i];

		slot_details(run, arr, s);
		if (!judge_slot_present(j, s))
			continue;
		present++;
		judge_slot_driver(j, s, rules);
		judge_pcie_link(j, s, rules);
		judge_aer(j, s, NULL, rules);
	}
	drivers = jobj(run, d, "drivers");
	for (unsigned v = 0; v < FACTS_NVENDORS; v++) {
		if (!f->drivers[v].nslots)
			continue;
		jstr(run, drivers, slot_vendor_name((enum slot_vendor)v), f->drivers[v].version);
		judge_driver_version(j, (enum slot_vendor)v, &f->drivers[v], rules);
	}
	library_details(run, d, "nvml", &f->nvml);
	library_details(run, d, "cndev", &f->cndev);
	judge_library(j, "NVML", &f->nvml, f->drivers[SLOT_VENDOR_NVIDIA].nslots, rules);
	judge_library(j, "CNDev", &f->cndev, f->drivers[SLOT_VENDOR_CAMBRICON].nslots, rules);
	if (f->nslots == 0)
		summary(vs, "no accelerator slots");
	else if (cf->driver[0])
		summary(vs, "%zu slot%s present (%s), driver %s", present,
		        util_plural((long long)present), cf->models, cf->driver);
	else
		summary(vs, "%zu slot%s present (%s)", present, util_plural((long long)present),
		        cf->models);
}

/* --- memory ------------------------------------------------------------ */

static void
check_memory(struct verdicts *vs, struct judge *j)
{
	struct run *run = vs->run;
	const struct facts_memory *m = &run->facts->memory;
	cJSON *d = vs->r->details, *arr;
	long long lowest = -1;
	int lowest_node = -1;

	jnum(run, d, "min_free_mb", (double)run->rules->mem_min_free_mb);
	jstr(run, d, "source", m->source);
	judge_memory(j, m, run->rules);
	if (m->rc < 0 || m->n == 0)
		return;
	arr = jarr(run, d, "nodes");
	for (size_t i = 0; i < m->n; i++) {
		long long free_mb = m->nodes[i].free_kb / 1024;
		cJSON *o = jobj(run, arr, NULL);

		jnum(run, o, "node", m->nodes[i].node);
		jnum(run, o, "total_mb", (double)(m->nodes[i].total_kb / 1024));
		jnum(run, o, "free_mb", (double)free_mb);
		if (m->nodes[i].total_kb > 0 && (lowest < 0 || free_mb < lowest)) {
			lowest = free_mb;
			lowest_node = m->nodes[i].node;
		}
	}
	if (lowest >= 0)
		summary(vs, "%lld MB free on the emptiest of %zu NUMA node%s (node %d)", lowest, m->n,
		        util_plural((long long)m->n), lowest_node);
	else
		summary(vs, "no NUMA node with memory");
}

/* --- storage ----------------------------------------------------------- */

static void
path_details(struct run *run, cJSON *arr, const struct config_path *c, const struct facts_path *p)
{
	const struct facts_dir *dir = &p->dir;
	cJSON *o = jobj(run, arr, NULL);

	jstr(run, o, "path", c->path);
	/* A probe still stuck from an earlier check: as unresponsive as a
	 * timeout, and not probed again. */
	jbool(run, o, "timed_out", p->rc == -ETIMEDOUT || p->rc == -EALREADY);
	if (p->rc == -EALREADY) {
		jnum(run, o, "stuck_pid", p->stuck_pid);
		jnum(run, o, "stuck_seconds", (double)(long long)p->stuck_s);
		return;
	}
	if (p->rc == -ETIMEDOUT)
		return;
	if (p->rc < 0 || dir->err || dir->not_dir) {
		jstr(run, o, "error", p->rc == -EPROTO ? "probe failed"
		                      : p->rc < 0      ? strerror(-p->rc)
		                      : dir->err       ? strerror(dir->err)
		                                       : strerror(ENOTDIR));
		return;
	}
	jnum(run, o, "free_mb", (double)dir->free_mb);
	jnum(run, o, "min_free_mb", (double)c->min_free_mb);
	/* Filesystems that allocate inodes on demand (btrfs) report none. */
	jcount(run, o, "free_inodes", dir->files ? (long long)dir->favail : -1);
	jnum(run, o, "min_free_inodes", (double)c->min_free_inodes);
	jbool(run, o, "read_only", dir->flag & ST_RDONLY);
	if (dir->write_err >= 0)
		jbool(run, o, "writable", dir->write_err == 0);
	else
		jnull(run, o, "writable");
}

static void
check_storage(struct verdicts *vs, struct judge *j)
{
	struct run *run = vs->run;
	const struct config *cfg = run->cfg;
	const struct facts *f = run->facts;
	cJSON *d = vs->r->details, *arr, *shm;

	arr = jarr(run, d, "paths");
	for (size_t i = 0; i < f->npaths; i++)
		path_details(run, arr, &cfg->paths[i], &f->paths[i]);
	judge_paths(j, cfg->paths, f->paths, f->npaths, run->rules);

	shm = jobj(run, d, "shm");
	jnum(run, shm, "min_mb", (double)run->rules->shm_min_mb);
	if (f->shm.rc == 0) {
		jnum(run, shm, "total_mb", (double)f->shm.total_mb);
		jnum(run, shm, "free_mb", (double)f->shm.free_mb);
	} else {
		jnull(run, shm, "total_mb");
		jstr(run, shm, "error", strerror(-f->shm.rc));
	}
	judge_shm(j, &f->shm, run->rules);
	if (f->shm.rc == 0)
		summary(vs, "%zu path%s usable, /dev/shm %lld MB", f->npaths,
		        util_plural((long long)f->npaths), f->shm.total_mb);
	else
		summary(vs, "%zu path%s usable", f->npaths, util_plural((long long)f->npaths));
}

/* --- limits ------------------------------------------------------------ */

static void
jlimit(struct run *run, cJSON *obj, const char *key, rlim_t v)
{
	if (v == RLIM_INFINITY)
		jstr(run, obj, key, "unlimited");
	else
		jnum(run, obj, key, (double)v);
}

static void
check_limits(struct verdicts *vs, struct judge *j)
{
	struct run *run = vs->run;
	const struct facts_limits *l = &run->facts->limits;
	cJSON *o;

	judge_limits(j, l, run->rules);
	if (l->err)
		return;
	o = jobj(run, vs->r->details, "memlock");
	jlimit(run, o, "soft", l->memlock.rlim_cur);
	jlimit(run, o, "hard", l->memlock.rlim_max);
	jbool(run, o, "unlimited_required", run->rules->memlock_unlimited);
	o = jobj(run, vs->r->details, "nofile");
	jlimit(run, o, "soft", l->nofile.rlim_cur);
	jlimit(run, o, "hard", l->nofile.rlim_max);
	jnum(run, o, "min", (double)run->rules->nofile_min);
	if (l->memlock.rlim_cur == RLIM_INFINITY)
		summary(vs, "memlock unlimited, nofile %llu", (unsigned long long)l->nofile.rlim_cur);
	else
		summary(vs, "memlock %llu KB, nofile %llu",
		        (unsigned long long)l->memlock.rlim_cur / 1024,
		        (unsigned long long)l->nofile.rlim_cur);
}

/* --- nics -------------------------------------------------------------- */

static void
nic_details(struct run *run, cJSON *arr, const struct facts_nic *n)
{
	cJSON *o = jobj(run, arr, NULL);

	jstr(run, o, "name", n->name);
	jbool(run, o, "present", n->rc == 0);
	if (n->rc < 0)
		return;
	jstr(run, o, "operstate", n->nic.operstate);
	if (n->nic.carrier >= 0)
		jbool(run, o, "carrier", n->nic.carrier == 1);
	else
		jnull(run, o, "carrier");
	jcount(run, o, "speed_mbps", n->nic.speed_mbps);
}

static void
ib_details(struct run *run, cJSON *arr, const struct facts_ib *d)
{
	cJSON *o = jobj(run, arr, NULL), *ports;

	jstr(run, o, "device", d->name);
	jbool(run, o, "listed", d->listed);
	jbool(run, o, "present", d->rc != -ENOENT);
	if (d->rc < 0)
		return;
	ports = jarr(run, o, "ports");
	for (size_t i = 0; i < d->nports; i++) {
		const struct hwmon_ib_port *p = &d->ports[i];
		cJSON *po = jobj(run, ports, NULL);

		jnum(run, po, "port", p->port);
		jstr(run, po, "state", p->state_text);
		jstr(run, po, "phys_state", p->phys_state_text);
		jstr(run, po, "rate", p->rate);
		if (p->rate_gbps > 0)
			jnum(run, po, "rate_gbps", p->rate_gbps);
		else
			jnull(run, po, "rate_gbps");
		jcount(run, po, "link_downed", p->link_downed);
		jcount(run, po, "symbol_error", p->symbol_error);
	}
}

static void
check_nics(struct verdicts *vs, struct judge *j)
{
	struct run *run = vs->run;
	const struct facts *f = run->facts;
	size_t up = 0, active = 0;
	cJSON *arr;

	arr = jarr(run, vs->r->details, "interfaces");
	for (size_t i = 0; i < f->nnics; i++) {
		nic_details(run, arr, &f->nics[i]);
		if (judge_nic_link(j, &f->nics[i]))
			up++;
		judge_nic_speed(j, &f->nics[i], run->rules);
	}
	/* Devices nobody listed come last: a port down there is worth a
	 * look, no more (judge_ib_state()). */
	arr = jarr(run, vs->r->details, "infiniband");
	for (size_t i = 0; i < f->nib; i++) {
		ib_details(run, arr, &f->ib[i]);
		active += judge_ib_state(j, &f->ib[i]);
		judge_ib_rate(j, &f->ib[i], run->rules);
	}
	summary(vs, "%zu interface%s up, %zu InfiniBand port%s active", up,
	        util_plural((long long)up), active, util_plural((long long)active));
}

/* --- running ----------------------------------------------------------- */

/* --- boards: what the vendors' own libraries say (vhealth.h) ----------- */

static void
check_boards(struct verdicts *vs, struct judge *j)
{
	struct run *run = vs->run;
	const struct check_ctx *ctx = run->ctx;
	size_t nslots = ctx->slots ? ctx->nslots : 0, n = 0, asked = 0;
	struct vhealth_facts *facts = vhealth_facts_new();
	struct finding *f = NULL;
	int rc;

	if (!facts) {
		run->oom = true;
		return;
	}
	/* in timed children: a wedged GPU can hang NVML */
	rc = vhealth_gather(run->cfg, ctx->slots, nslots, run->live, facts);
	if (rc == 0)
		rc = vhealth_judge(&run->cfg->boards, ctx->slots, nslots, facts, NULL, &f, &n);
	if (rc == -ENOMEM) {
		run->oom = true;
	} else if (rc < 0) {
		judge_say(j, VERDICT_WARN, "board", "libraries",
		          "the vendors' libraries cannot be asked: %s", strerror(-rc));
	} else {
		jadd(run, vs->r->details, "libraries", vhealth_facts_to_json(facts));
		for (size_t i = 0; i < n; i++)
			judge_say(j, f[i].verdict, f[i].what, f[i].device, "%s %s: %s", f[i].what,
			          f[i].device, f[i].evidence);
		for (unsigned k = 0; k < VENDOR_NKINDS; k++)
			asked += facts->asked[k] && facts->rc[k] == 0;
	}
	if (asked)
		summary(vs, "%zu board%s reported healthy by the vendors' libraries", nslots,
		        util_plural((long long)nslots));
	else
		summary(vs, "no vendor library asked");
	free(f);
	free(facts);
}

/* --- the ledger ------------------------------------------------------- */

/* The verdict's facts as the result's details. */
static void
ledger_details(cJSON *d, const struct lemon_verdict *v, double now)
{
	char t[32];

	cJSON_AddStringToObject(d, "state", lemon_state_name(v->state));
	if (v->why[0])
		cJSON_AddStringToObject(d, "why", v->why);
	if (v->state == LEMON_QUARANTINED || v->state == LEMON_PROBATION) {
		cJSON_AddStringToObject(d, "since", lemon_fmt_time(v->since, t, sizeof(t)));
		cJSON_AddStringToObject(d, "until", lemon_fmt_time(v->until, t, sizeof(t)));
		cJSON_AddBoolToObject(d, "manual", v->manual);
	}
	cJSON_AddNumberToObject(d, "level", v->level);
	cJSON_AddNumberToObject(d, "incidents", v->incidents);
	cJSON_AddNumberToObject(d, "counting", v->counting);
	cJSON_AddStringToObject(d, "time", lemon_fmt_time(now, t, sizeof(t)));
}

/*
 * "ledger": this node's verdict from the site's node ledger (lemon.h).
 * A quarantined node fails, with the reason its drain shows ("vigil:
 * quarantined: ..."); a ledger that cannot be read warns, since a file
 * server away for a while must not fail every node.  Returns 0 or
 * -ENOMEM.
 */
static int
check_ledger(const struct check_ctx *ctx, struct check_result *r)
{
	const struct config_ledger *lc = &ctx->cfg->ledger;
	double now = ctx->now > 0 ? ctx->now : util_wall_s();
	struct ledger_records rs = { 0 };
	struct ledger *l = NULL;
	struct lemon_verdict v;
	char why[400] = "", t[32];
	const char *first = NULL;
	int rc;

	rc = ledger_open(lc->dir, false, &l, why, sizeof(why));
	if (rc == 0)
		rc = ledger_read_node(l, ctx->node, now - lc->retention_s, &rs, why, sizeof(why));
	if (rc < 0 && rc != -ENOMEM) {
		r->verdict = VERDICT_WARN;
		snprintf(r->reason, sizeof(r->reason), "cannot read the ledger: %.200s", why);
		rc = 0;
	} else if (rc == 0) {
		lemon_judge(lc, rs.v, rs.n, now, &v);
		ledger_details(r->details, &v, now);
		if (v.state == LEMON_QUARANTINED) {
			r->verdict = VERDICT_FAIL;
			snprintf(r->reason, sizeof(r->reason), "quarantined: until %s, %.200s",
			         isinf(v.until) ? "forgiven" : lemon_fmt_time(v.until, t, sizeof(t)),
			         v.why);
		} else {
			snprintf(r->reason, sizeof(r->reason), "%s%s%.200s", lemon_state_name(v.state),
			         v.why[0] ? ": " : "", v.why);
		}
		if (ledger_skipped(l, &first) > 0) {
			cJSON_AddNumberToObject(r->details, "skipped", ledger_skipped(l, NULL));
			cJSON_AddStringToObject(r->details, "skipped_first", first);
		}
	}
	ledger_records_free(&rs);
	ledger_close(l);
	return rc;
}

/*
 * The checks, in order.  A new one (a new source of facts with judges of
 * its own) is a row here: it renders its facts into the result's details
 * and hands them to its judges with J.
 */
static const struct {
	const char *name;
	void (*fn)(struct verdicts *vs, struct judge *j);
} checks[] = {
	{ "slots", check_slots },
	{ "boards", check_boards },
	{ "memory", check_memory },
	{ "storage", check_storage },
	{ "limits", check_limits },
	{ "nics", check_nics },
};

#define NCHECKS (sizeof(checks) / sizeof(checks[0]))

/* Run check I into R. */
static void
run_one(struct run *run, size_t i, struct check_result *r)
{
	struct verdicts vs = { .run = run, .r = r };
	struct judge j = { take, &vs };
	size_t len;

	vs.problems = jarr(run, r->details, "problems");
	checks[i].fn(&vs, &j);
	len = strlen(r->reason);
	if (r->verdict != VERDICT_PASS && vs.n > 1 && len + 24 < sizeof(r->reason))
		snprintf(r->reason + len, sizeof(r->reason) - len, " (+%d more)", vs.n - 1);
}

int
check_run(const struct check_ctx *ctx, struct check_report *out)
{
	const struct config *cfg = ctx->cfg;
	struct facts facts = { 0 };
	struct judge_rules rules;
	struct run run = { .ctx = ctx, .cfg = cfg, .facts = &facts, .rules = &rules, .report = out };
	struct hwmon *hw = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = hwmon_open(cfg->sysfs_root ? cfg->sysfs_root : "/", &hw);
	if (rc < 0)
		return rc;
	run.live = hwmon_is_live(hw);
	rc = facts_gather(hw, cfg, ctx->slots, ctx->slots ? ctx->nslots : 0, &facts);
	if (rc < 0)
		goto out;
	judge_rules_init(&rules, cfg);

	/* What the coordinator compares across nodes. */
	out->facts.nslots = (int)facts.nslots;
	rc = report_models(&facts, out->facts.models, sizeof(out->facts.models));
	if (rc < 0)
		goto out;
	report_driver(&facts, out->facts.driver, sizeof(out->facts.driver));

	out->results = calloc(NCHECKS + 1, sizeof(*out->results));
	if (!out->results) {
		rc = -ENOMEM;
		goto out;
	}
	/* the ledger first: a quarantined node is named so, whatever else */
	if (cfg->ledger.dir && ctx->node) {
		struct check_result *r = &out->results[out->n++];

		snprintf(r->name, sizeof(r->name), "ledger");
		r->verdict = VERDICT_PASS;
		r->details = cJSON_CreateObject();
		rc = r->details ? check_ledger(ctx, r) : -ENOMEM;
		if (rc < 0)
			goto out;
	}
	for (size_t i = 0; i < NCHECKS && (ctx->all || !check_report_first(out, VERDICT_FAIL));
	     i++) {
		struct check_result *r = &out->results[out->n];

		snprintf(r->name, sizeof(r->name), "%s", checks[i].name);
		r->verdict = VERDICT_PASS;
		r->details = cJSON_CreateObject();
		if (!r->details) {
			rc = -ENOMEM;
			goto out;
		}
		out->n++;
		run_one(&run, i, r);
		if (run.oom) {
			rc = -ENOMEM;
			goto out;
		}
	}
	rc = 0;
out:
	facts_free(&facts);
	hwmon_free(hw);
	if (rc < 0)
		check_report_free(out);
	return rc;
}

enum verdict
check_report_verdict(const struct check_report *r)
{
	enum verdict v = VERDICT_PASS;

	for (size_t i = 0; i < r->n; i++)
		if (r->results[i].verdict > v)
			v = r->results[i].verdict;
	return v;
}

const struct check_result *
check_report_first(const struct check_report *r, enum verdict v)
{
	enum verdict worst = check_report_verdict(r);

	if (worst < v)
		return NULL;
	for (size_t i = 0; i < r->n; i++)
		if (r->results[i].verdict == worst)
			return &r->results[i];
	return NULL;
}

void
check_report_free(struct check_report *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n; i++)
		cJSON_Delete(r->results[i].details);
	free(r->results);
	memset(r, 0, sizeof(*r));
}

/* --- JSON -------------------------------------------------------------- */

cJSON *
check_report_to_json(const struct check_report *r)
{
	cJSON *root, *facts, *arr;

	root = cJSON_CreateObject();
	if (!root)
		return NULL;
	facts = cJSON_AddObjectToObject(root, "facts");
	if (!facts || !cJSON_AddNumberToObject(facts, "nslots", r->facts.nslots) ||
	    !cJSON_AddStringToObject(facts, "models", r->facts.models) ||
	    !cJSON_AddStringToObject(facts, "driver", r->facts.driver))
		goto fail;
	arr = cJSON_AddArrayToObject(root, "checks");
	if (!arr)
		goto fail;
	for (size_t i = 0; i < r->n; i++) {
		const struct check_result *c = &r->results[i];
		cJSON *o = cJSON_CreateObject(), *d;

		if (!o)
			goto fail;
		if (!cJSON_AddItemToArray(arr, o)) {
			cJSON_Delete(o);
			goto fail;
		}
		if (!cJSON_AddStringToObject(o, "name", c->name) ||
		    !cJSON_AddStringToObject(o, "verdict", verdict_name(c->verdict)) ||
		    !cJSON_AddStringToObject(o, "reason", c->reason))
			goto fail;
		d = c->details ? cJSON_Duplicate(c->details, 1) : cJSON_CreateObject();
		if (!d)
			goto fail;
		if (!cJSON_AddItemToObject(o, "details", d)) {
			cJSON_Delete(d);
			goto fail;
		}
	}
	return root;
fail:
	cJSON_Delete(root);
	return NULL;
}

/* Copy string member KEY of OBJ into BUF; -EINVAL if absent, not a string, or too long. */
static int
get_str(const cJSON *obj, const char *key, char *buf, size_t len)
{
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(obj, key);

	if (!cJSON_IsString(s) || !s->valuestring || strlen(s->valuestring) >= len)
		return -EINVAL;
	memcpy(buf, s->valuestring, strlen(s->valuestring) + 1);
	return 0;
}

int
check_report_from_json(const cJSON *json, struct check_report *out)
{
	const cJSON *facts, *checks_arr, *item, *n;
	size_t count;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!cJSON_IsObject(json))
		return -EINVAL;
	facts = cJSON_GetObjectItemCaseSensitive(json, "facts");
	checks_arr = cJSON_GetObjectItemCaseSensitive(json, "checks");
	if (!cJSON_IsObject(facts) || !cJSON_IsArray(checks_arr))
		return -EINVAL;
	n = cJSON_GetObjectItemCaseSensitive(facts, "nslots");
	if (!cJSON_IsNumber(n) || n->valuedouble < 0 || n->valuedouble > 1e6 ||
	    n->valuedouble != (double)(int)n->valuedouble)
		return -EINVAL;
	out->facts.nslots = (int)n->valuedouble;
	if (get_str(facts, "models", out->facts.models, sizeof(out->facts.models)) < 0 ||
	    get_str(facts, "driver", out->facts.driver, sizeof(out->facts.driver)) < 0) {
		rc = -EINVAL;
		goto fail;
	}
	count = (size_t)cJSON_GetArraySize(checks_arr);
	if (count > 64) {
		rc = -EINVAL;
		goto fail;
	}
	if (count) {
		out->results = calloc(count, sizeof(*out->results));
		if (!out->results) {
			rc = -ENOMEM;
			goto fail;
		}
	}
	cJSON_ArrayForEach(item, checks_arr) {
		struct check_result *c = &out->results[out->n];
		const cJSON *d, *v;

		if (!cJSON_IsObject(item) || get_str(item, "name", c->name, sizeof(c->name)) < 0 ||
		    get_str(item, "reason", c->reason, sizeof(c->reason)) < 0) {
			rc = -EINVAL;
			goto fail;
		}
		v = cJSON_GetObjectItemCaseSensitive(item, "verdict");
		if (!cJSON_IsString(v) || verdict_parse(v->valuestring, &c->verdict) < 0) {
			rc = -EINVAL;
			goto fail;
		}
		d = cJSON_GetObjectItemCaseSensitive(item, "details");
		if (d && !cJSON_IsObject(d)) {
			rc = -EINVAL;
			goto fail;
		}
		c->details = d ? cJSON_Duplicate(d, 1) : cJSON_CreateObject();
		if (!c->details) {
			rc = -ENOMEM;
			goto fail;
		}
		out->n++;
	}
	return 0;
fail:
	check_report_free(out);
	return rc;
}
