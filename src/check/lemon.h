/*
 * lemon.h - the verdict on a node from its ledger records (ledger.h): is
 * it a lemon, quarantined until when, and why.  Pure: no clock, no file;
 * the time comes in as an argument, so every rule is unit-tested with a
 * fake clock (tests/unit/check/test_lemon.c).
 *
 * The records are replayed in time order:
 *   - an incident that counts (lemon_counts()) and matches a rule of the
 *     configuration (COUNT incidents of KINDS within WITHIN, sharing the
 *     check or the device if the rule says so; incidents of one job count
 *     once) quarantines the node for the backoff: initial, then twice as
 *     long each time, up to max; a quarantine that begins more than
 *     backoff.reset after the last one ended starts at initial again;
 *   - incidents during a quarantine are kept but change nothing;
 *   - once the backoff has passed, the node is on probation: a passing
 *     full check forgives it (a "forgive" record of root's), and any
 *     incident of a kind a rule counts quarantines it again, for longer;
 *   - after a forgiveness only newer incidents count;
 *   - an administrator's "quarantine" (for a time, or until forgiven) and
 *     "forgive" (which also resets the backoff) apply at once; such
 *     records count only from root or the ledger's owner.
 */
#ifndef VIGIL_LEMON_H
#define VIGIL_LEMON_H

#include <stdbool.h>
#include <stddef.h>

#include <cJSON.h>

#include "check/ledger.h"
#include "conf/config.h"

enum lemon_state {
	LEMON_OK,           /* nothing that counts */
	LEMON_WATCHED,      /* incidents that count, or forgiven lately: not (yet) a lemon */
	LEMON_QUARANTINED,  /* excluded, drained, refused by the pre-check until `until` */
	LEMON_PROBATION,    /* the backoff has passed: a passing check forgives it */
};

/* "ok", "watched", "quarantined", "probation". */
const char *lemon_state_name(enum lemon_state s);

struct lemon_verdict {
	enum lemon_state state;
	double since;          /* quarantined, probation: when the quarantine began */
	double until;          /* ... when it ends; INFINITY: when forgiven by hand */
	int level;             /* quarantines in a row: the last lasted initial * 2^(level-1) */
	bool manual;           /* an administrator's quarantine */
	int incidents;         /* incident records up to now */
	int counting;          /* those that count now, in the longest rule's window */
	char why[320];         /* one line; "" when ok */
};

/*
 * Judge the N records V (sorted by time, as ledger_read_node() gives
 * them) at time NOW by CFG's rules.  Records after NOW are left out.
 */
void lemon_judge(const struct config_ledger *cfg, const struct ledger_record *v, size_t n,
                 double now, struct lemon_verdict *out);

/*
 * Whether incident R can count against its node: an incident kind, and
 * not one the application caused (an XID of cfg->app_xids: a record of
 * check "xid", or "XID N" in its evidence).
 */
bool lemon_counts(const struct config_ledger *cfg, const struct ledger_record *r);

/*
 * A job's event as an incident against NODE: a fault (a board's when the
 * check is a board's: xid, ecc, nvlink, ...), a lost node, a straggler
 * alert, a hang.  Returns true with OUT's kind, node, check, device and
 * evidence set (the rest zeroed), false when the event is no incident or
 * one that never counts (the application's XID).  DETAILS may be NULL.
 */
bool lemon_from_event(const struct config_ledger *cfg, const char *node, const char *kind,
                      const char *severity, const char *message, const cJSON *details,
                      struct ledger_record *out);

/* A duration for people: "7d", "1.5h", "20m", "45s".  Returns BUF. */
char *lemon_fmt_duration(double s, char *buf, size_t len);

/* A time for people and scripts: UTC "2026-05-01T14:05:00Z"; "never" for INFINITY. */
char *lemon_fmt_time(double t, char *buf, size_t len);

#endif
