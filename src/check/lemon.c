/*
 * lemon.c - the verdict on a node from its ledger records (lemon.h), and
 * which events of a job are incidents against a node.
 */
#include "autoconf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check/lemon.h"
#include "lib/json.h"

const char *
lemon_state_name(enum lemon_state s)
{
	static const char *const names[] = {
		[LEMON_OK] = "ok", [LEMON_WATCHED] = "watched",
		[LEMON_QUARANTINED] = "quarantined", [LEMON_PROBATION] = "probation",
	};

	return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "?";
}

char *
lemon_fmt_duration(double s, char *buf, size_t len)
{
	static const struct { double unit; char name; } units[] = {
		{ 86400, 'd' }, { 3600, 'h' }, { 60, 'm' },
	};

	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (s >= units[i].unit) {
			snprintf(buf, len, "%.3g%c", s / units[i].unit, units[i].name);
			return buf;
		}
	snprintf(buf, len, "%.3gs", s > 0 ? s : 0);
	return buf;
}

char *
lemon_fmt_time(double t, char *buf, size_t len)
{
	time_t tt;
	struct tm tm;

	if (isinf(t) || isnan(t) || t < 0 || t > 1e11) {
		snprintf(buf, len, "never");
		return buf;
	}
	tt = (time_t)t;
	if (!gmtime_r(&tt, &tm) || strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		snprintf(buf, len, "%.0f", t);
	return buf;
}

/* ---- which incidents count ------------------------------------------------ */

/* The number after "XID " in S, or -1. */
static long
xid_in(const char *s)
{
	const char *x = strstr(s, "XID ");

	if (!x || x[4] < '0' || x[4] > '9')
		return -1;
	return strtol(x + 4, NULL, 10);
}

bool
lemon_counts(const struct config_ledger *cfg, const struct ledger_record *r)
{
	long xid;

	if (!ledger_is_incident(r->kind))
		return false;
	xid = xid_in(r->evidence);
	if (xid < 0 && strcmp(r->check, "xid") == 0)
		xid = strtol(r->device, NULL, 10);  /* a hand-made record: the XID as device */
	for (size_t i = 0; xid >= 0 && i < cfg->napp_xids; i++)
		if (cfg->app_xids[i] == xid)
			return false;
	return true;
}

/* The checks of the inspection that are about a board (vhealth.c's and
 * judge.c's "what"): its faults are "board" incidents, for the rules
 * that count the same board twice. */
static bool
board_check(const char *what)
{
	static const char *const boards[] = {
		"xid", "ecc", "board", "recovery", "retired-pages", "row-remap", "nvlink", "ras",
		"health", "slot", "pcie", "aer", "throttle", "temperature", "library",
	};

	for (size_t i = 0; i < sizeof(boards) / sizeof(boards[0]); i++)
		if (strcmp(what, boards[i]) == 0)
			return true;
	return false;
}

static void
copy(char *dst, size_t len, const char *src)
{
	snprintf(dst, len, "%s", src ? src : "");
	/* one line, whatever the event held */
	for (char *c = dst; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = ' ';
}

bool
lemon_from_event(const struct config_ledger *cfg, const char *node, const char *kind,
                 const char *severity, const char *message, const cJSON *details,
                 struct ledger_record *out)
{
	bool error = severity && strcmp(severity, "error") == 0;
	const char *what = json_str(details, "what", "");

	memset(out, 0, sizeof(*out));
	out->uid = -1;
	if (!node || !kind)
		return false;
	if (strcmp(kind, "fault") == 0 && error) {
		out->kind = board_check(what) ? CONFIG_LEDGER_BOARD : CONFIG_LEDGER_FAULT;
		copy(out->check, sizeof(out->check), what);
		copy(out->device, sizeof(out->device), json_str(details, "device", ""));
		copy(out->evidence, sizeof(out->evidence), json_str(details, "evidence", message));
	} else if (strcmp(kind, "node_lost") == 0 && error) {
		out->kind = CONFIG_LEDGER_LOST;
		copy(out->evidence, sizeof(out->evidence), message);
	} else if (strcmp(kind, "alert") == 0 &&
	           strcmp(json_str(details, "kind", ""), "straggler") == 0) {
		out->kind = CONFIG_LEDGER_STRAGGLER;
		copy(out->evidence, sizeof(out->evidence), message);
	} else if (strcmp(kind, "hang") == 0 && error) {
		out->kind = CONFIG_LEDGER_HANG;
		copy(out->evidence, sizeof(out->evidence), message);
	} else {
		return false;
	}
	copy(out->node, sizeof(out->node), node);
	return lemon_counts(cfg, out);
}

/* ---- the replay ----------------------------------------------------------------- */

struct replay {
	const struct config_ledger *cfg;
	const struct ledger_record *v;
	unsigned kinds;        /* every kind some rule counts */
	bool q;                /* a quarantine is on (or its backoff passed: probation) */
	bool manual;
	double since, until;
	int level;
	double last_end;       /* the last quarantine's end (or forgiveness) */
	double slate;          /* incidents before this are spent */
	char why[320];
};

/* "fault nic eth1: eth1 is down (job 17)", into BUF. */
static void
describe(const struct ledger_record *r, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s%s%s%s: %.120s%s%s%s", ledger_kind_name(r->kind),
	         r->check[0] ? " " : "", r->check, r->device[0] ? " " : "", r->device,
	         r->evidence, r->job[0] ? " (job " : "", r->job, r->job[0] ? ")" : "");
}

static bool
has_kind(unsigned kinds, int kind)
{
	return kind >= 0 && kind < CONFIG_LEDGER_NKINDS && (kinds & (1u << kind));
}

/* What RULE makes incidents share, in R; NULL when nothing. */
static const char *
shared_key(const struct config_ledger_rule *rule, const struct ledger_record *r)
{
	switch (rule->same) {
	case CONFIG_LEDGER_SAME_CHECK: return r->check;
	case CONFIG_LEDGER_SAME_DEVICE: return r->device;
	default: return NULL;
	}
}

/* Whether incident I (and those before it) meet RULE. */
static bool
rule_met(const struct replay *rp, const struct config_ledger_rule *rule, size_t i)
{
	const struct ledger_record *r = &rp->v[i];
	const char *key = shared_key(rule, r);
	const char *jobs[64];
	int count = 0, njobs = 0;

	if (!has_kind(rule->kinds, r->kind) || (key && !key[0]))
		return false;
	for (size_t j = i + 1; j-- > 0 && count < rule->count;) {
		const struct ledger_record *o = &rp->v[j];
		bool seen = false;

		if (o->time <= r->time - rule->within_s || o->time < rp->slate)
			break;
		if (!has_kind(rule->kinds, o->kind) || !lemon_counts(rp->cfg, o) ||
		    (key && strcmp(key, shared_key(rule, o)) != 0))
			continue;
		/* one job, one strike: its fault and its lost node are one incident */
		for (int k = 0; o->job[0] && k < njobs && !seen; k++)
			seen = strcmp(jobs[k], o->job) == 0;
		if (seen)
			continue;
		if (o->job[0] && njobs < (int)(sizeof(jobs) / sizeof(jobs[0])))
			jobs[njobs++] = o->job;
		count++;
	}
	return count >= rule->count;
}

static void
quarantine(struct replay *rp, double t, const char *why)
{
	const struct config_ledger *cfg = rp->cfg;
	double d;

	if (rp->level > 0 && t - rp->last_end > cfg->backoff_reset_s)
		rp->level = 0;
	rp->level++;
	d = cfg->backoff_initial_s * ldexp(1, rp->level - 1 < 60 ? rp->level - 1 : 60);
	if (d > cfg->backoff_max_s)
		d = cfg->backoff_max_s;
	rp->q = true;
	rp->manual = false;
	rp->since = t;
	rp->until = rp->last_end = t + d;
	snprintf(rp->why, sizeof(rp->why), "%s", why);
}

/* An incident I that counts. */
static void
take_incident(struct replay *rp, size_t i)
{
	const struct ledger_record *r = &rp->v[i];
	char what[320], why[320], win[16];

	if (rp->q && r->time < rp->until)
		return;  /* quarantined: kept as evidence, changes nothing */
	describe(r, what, sizeof(what));
	if (rp->q) {
		if (has_kind(rp->kinds, r->kind)) {
			snprintf(why, sizeof(why), "again on probation: %.250s", what);
			quarantine(rp, r->time, why);
		}
		return;
	}
	for (size_t k = 0; k < rp->cfg->nrules; k++) {
		const struct config_ledger_rule *rule = &rp->cfg->rules[k];

		if (!rule_met(rp, rule, i))
			continue;
		snprintf(why, sizeof(why), "%d incident%s in %s%s, last %.250s", rule->count,
		         rule->count == 1 ? "" : "s",
		         lemon_fmt_duration(rule->within_s, win, sizeof(win)),
		         rule->same == CONFIG_LEDGER_SAME_DEVICE ? " on one device" :
		         rule->same == CONFIG_LEDGER_SAME_CHECK ? " of one check" : "", what);
		quarantine(rp, r->time, why);
		return;
	}
}

/* An administrator's record, or a passing check's forgiveness. */
static void
take_admin(struct replay *rp, const struct ledger_record *r)
{
	if (!r->trusted)
		return;  /* anyone may report an incident; only root may absolve */
	if (r->kind == LEDGER_KIND_QUARANTINE) {
		rp->q = rp->manual = true;
		rp->since = r->time;
		rp->until = r->seconds > 0 ? r->time + r->seconds : INFINITY;
		snprintf(rp->why, sizeof(rp->why), "by %s: %s", r->user[0] ? r->user : "an administrator",
		         r->evidence);
		return;
	}
	if (r->manual) {
		rp->level = 0;
	} else if (!rp->q || r->time < rp->until) {
		/* a check forgives a node whose backoff has passed, nothing else */
		return;
	}
	rp->q = rp->manual = false;
	rp->slate = rp->last_end = r->time;
	rp->why[0] = '\0';
}

/* The state at NOW, after the replay. */
static void
conclude(const struct replay *rp, size_t n, double now, struct lemon_verdict *out)
{
	const struct config_ledger *cfg = rp->cfg;
	double window = 0;
	char t[32];

	for (size_t k = 0; k < cfg->nrules; k++)
		if (cfg->rules[k].within_s > window)
			window = cfg->rules[k].within_s;
	for (size_t i = 0; i < n; i++) {
		const struct ledger_record *r = &rp->v[i];

		if (!ledger_is_incident(r->kind))
			continue;
		out->incidents++;
		if (r->time >= rp->slate && r->time > now - window &&
		    has_kind(rp->kinds, r->kind) && lemon_counts(cfg, r))
			out->counting++;
	}
	out->level = rp->level;
	if (rp->q) {
		out->state = now < rp->until ? LEMON_QUARANTINED : LEMON_PROBATION;
		out->since = rp->since;
		out->until = rp->until;
		out->manual = rp->manual;
		if (out->state == LEMON_QUARANTINED)
			snprintf(out->why, sizeof(out->why), "%s", rp->why);
		else
			snprintf(out->why, sizeof(out->why), "quarantine over since %s, forgiven at "
			         "the next passing check: %s", lemon_fmt_time(rp->until, t, sizeof(t)),
			         rp->why);
		return;
	}
	if (out->counting > 0) {
		out->state = LEMON_WATCHED;
		snprintf(out->why, sizeof(out->why), "%d incident%s in the last %s",
		         out->counting, out->counting == 1 ? " counts" : "s count",
		         lemon_fmt_duration(window, t, sizeof(t)));
	} else if (rp->level > 0 && now - rp->last_end < cfg->backoff_reset_s) {
		out->state = LEMON_WATCHED;
		snprintf(out->why, sizeof(out->why), "forgiven at %s after %d quarantine%s",
		         lemon_fmt_time(rp->last_end, t, sizeof(t)), rp->level,
		         rp->level == 1 ? "" : "s in a row");
	}
}

void
lemon_judge(const struct config_ledger *cfg, const struct ledger_record *v, size_t n,
            double now, struct lemon_verdict *out)
{
	struct replay rp = { .cfg = cfg, .v = v, .last_end = -INFINITY, .slate = -INFINITY };

	memset(out, 0, sizeof(*out));
	out->state = LEMON_OK;
	for (size_t k = 0; k < cfg->nrules; k++)
		rp.kinds |= cfg->rules[k].kinds;
	/* what is after NOW has not happened yet (a fake clock, a skewed node) */
	while (n > 0 && v[n - 1].time > now)
		n--;
	for (size_t i = 0; i < n; i++) {
		if (ledger_is_incident(v[i].kind)) {
			if (lemon_counts(cfg, &v[i]))
				take_incident(&rp, i);
		} else {
			take_admin(&rp, &v[i]);
		}
	}
	conclude(&rp, n, now, out);
}
