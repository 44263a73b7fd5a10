/*
 * coord.c - the coordinator's state machine.
 *
 * Phases change only through step(), which looks the (event, phase) pair
 * up in a table (after flux-core's broker state machine, fsm.h) and logs
 * the move by name at debug level: a pair that is not in the table
 * changes nothing, which is how "a checkpoint while already stopping" or
 * "a second stop" are ignored.  What a phase means elsewhere (are results
 * taken? is the job's end decided?) is a column of phases[], never the
 * order of the enum.  The decisions that lead to an event (is this a
 * fault? may the training start again?) are in the functions below the
 * table; what a phase does on entry is in enter().  The final report and
 * the lines that end the job are rendered in coord_report.c.
 */
#include "autoconf.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "vigil.h"
#include "agent/coord.h"
#include "agent/coord_priv.h"
#include "agent/fsm.h"
#include "agent/stall.h"
#include "lib/json.h"
#include "lib/sig.h"
#include "lib/util.h"

/* Beyond the grace: how long to wait for a node that still has not reported. */
#define LOST_AFTER_STOP_S 15.0
/* The node's own escalation after the checkpoint's grace (node.c): TERM, then KILL. */
#define STOP_AFTER_CKPT_S 5.0
/* Failed nodes whose stderr tail is kept for the report; the rest keep none. */
#define TAILS_KEPT 64

static const char *const phase_names[] = {
	[COORD_PLANNING] = "planning", [COORD_RUNNING] = "running",
	[COORD_CHECKPOINTING] = "checkpointing", [COORD_STOPPING] = "stopping",
	[COORD_RESTARTING] = "restarting", [COORD_FINISHING] = "finishing",
	[COORD_DONE] = "done",
};

static const char *const event_names[] = {
	[COORD_EV_GO] = "go", [COORD_EV_NOGO] = "no-go", [COORD_EV_ADOPT] = "adopt",
	[COORD_EV_CHECKPOINT] = "checkpoint", [COORD_EV_STOP] = "stop",
	[COORD_EV_REPORTED] = "reported", [COORD_EV_AGAIN] = "again",
	[COORD_EV_RESTARTED] = "restarted", [COORD_EV_EXHAUSTED] = "exhausted",
	[COORD_EV_FINISHED] = "finished",
};

/*
 * What each phase means to the rest of this file, so that no decision
 * rests on the order of the enum:
 *   attempt  an attempt is under way: results count, time is watched
 *   ending   past running: the nodes' results and the last messages are due
 *   over     the job's end is decided (coord_state() no longer "running")
 */
static const struct phase_info {
	bool attempt, ending, over;
} phases[] = {
	[COORD_PLANNING] = { false, false, false },
	[COORD_RUNNING] = { true, false, false },
	[COORD_CHECKPOINTING] = { true, true, false },
	[COORD_STOPPING] = { true, true, false },
	[COORD_RESTARTING] = { false, true, false },
	[COORD_FINISHING] = { false, true, true },
	[COORD_DONE] = { false, true, true },
};

static const struct fsm_row rows[] = {
	{ COORD_EV_GO, COORD_PLANNING, COORD_RUNNING },
	{ COORD_EV_NOGO, COORD_PLANNING, COORD_DONE },
	{ COORD_EV_ADOPT, COORD_PLANNING, COORD_RUNNING },
	{ COORD_EV_CHECKPOINT, COORD_RUNNING, COORD_CHECKPOINTING },
	{ COORD_EV_STOP, COORD_RUNNING, COORD_STOPPING },
	{ COORD_EV_STOP, COORD_CHECKPOINTING, COORD_STOPPING },
	{ COORD_EV_REPORTED, COORD_RUNNING, COORD_FINISHING },
	{ COORD_EV_REPORTED, COORD_CHECKPOINTING, COORD_FINISHING },
	{ COORD_EV_REPORTED, COORD_STOPPING, COORD_FINISHING },
	/* (none from RUNNING: a restart is wanted only as the coordinator
	 * leaves it, in trouble() and first_failure()) */
	{ COORD_EV_AGAIN, COORD_CHECKPOINTING, COORD_RESTARTING },
	{ COORD_EV_AGAIN, COORD_STOPPING, COORD_RESTARTING },
	{ COORD_EV_RESTARTED, COORD_RESTARTING, COORD_RUNNING },
	{ COORD_EV_EXHAUSTED, COORD_RESTARTING, COORD_FINISHING },
	{ COORD_EV_FINISHED, COORD_FINISHING, COORD_DONE },
};

static const struct fsm_table table = {
	"coordinator", phase_names, (int)FSM_NELEM(phase_names),
	event_names, (int)FSM_NELEM(event_names), rows, FSM_NELEM(rows),
};

/* ---- small helpers -------------------------------------------------------- */

void
coord_say(struct coord *c, const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (c->ops.say)
		c->ops.say(c->ops.arg, line);
}

void
coord_emit(struct coord *c, int rank, const char *kind, const char *severity, const char *msg,
           cJSON *details)
{
	if (c->ops.event)
		c->ops.event(c->ops.arg, coord_host(c, rank), rank, kind, severity, msg, details);
	else
		cJSON_Delete(details);
}

static void
send_text(struct coord *c, int rank, enum msg_kind kind, const char *text)
{
	if (text && c->ops.send)
		(void)c->ops.send(c->ops.arg, rank, kind, text);
}

static void
free_tail(struct cnode *n)
{
	for (int i = 0; i < n->ntail; i++)
		free(n->tail[i]);
	free(n->tail);
	n->tail = NULL;
	n->ntail = 0;
}

/* Forget RANK's result (a new attempt); a lost rank stays lost and counted. */
static void
clear_result(struct coord *c, struct cnode *n)
{
	if (n->tail)
		c->ntails--;
	free_tail(n);
	free(n->error);
	n->error = NULL;
	free(n->ckpt_why);
	n->ckpt_why = NULL;
	free(n->hint);
	n->hint = NULL;
	n->ckpt = n->ckpt_confirmed = false;
	n->reported = n->lost;
	n->have_result = false;
	n->idle = false;
	n->exit_code = n->signal = n->agent_signal = 0;
	n->cancelled = false;
	n->seconds = 0;
}

/* ---- the state machine ------------------------------------------------------ */

static void enter(struct coord *c, enum coord_phase p, double now);

/* The one way the phase changes: a row of the table, logged, then its entry. */
static bool
step(struct coord *c, enum coord_event ev, double now)
{
	int phase = (int)c->phase;

	if (fsm_step(&table, &phase, (int)ev) < 0)
		return false;
	c->phase = (enum coord_phase)phase;
	enter(c, c->phase, now);
	return true;
}

/* Whether EV would move the coordinator from where it is. */
static bool
can(const struct coord *c, enum coord_event ev)
{
	return fsm_next(&table, (int)c->phase, (int)ev) >= 0;
}

/* COMMAND to every rank whose training still runs (itself included). */
static void
command_running(struct coord *c, enum msg_command_kind cmd, const char *why)
{
	struct msg m = { .kind = MSG_COMMAND };
	char *text;

	m.u.command.command = cmd;
	m.u.command.reason = why;
	text = msg_encode(&m);
	for (int r = 0; text && r < c->n; r++)
		if (!c->nodes[r].reported)
			send_text(c, r, MSG_COMMAND, text);
	free(text);
}

static void restart_all(struct coord *c, double now);

static void
enter(struct coord *c, enum coord_phase p, double now)
{
	switch (p) {
	case COORD_CHECKPOINTING:
		coord_say(c, "vigil: checkpoint: %s", c->end_reason);
		command_running(c, MSG_CMD_CHECKPOINT, c->end_reason);
		coord_emit(c, c->o.self, VIGIL_EVENT_CHECKPOINT, VIGIL_SEVERITY_WARNING, c->end_reason,
		      NULL);
		c->lost_deadline = now + c->o.grace_s + STOP_AFTER_CKPT_S + LOST_AFTER_STOP_S;
		break;
	case COORD_STOPPING:
		command_running(c, MSG_CMD_STOP, c->end_reason);
		coord_emit(c, c->o.self, VIGIL_EVENT_STOP, VIGIL_SEVERITY_WARNING, c->end_reason, NULL);
		c->lost_deadline = now + c->o.grace_s + LOST_AFTER_STOP_S;
		break;
	case COORD_RESTARTING:
		c->lost_deadline = -1;
		restart_all(c, now);
		break;
	case COORD_FINISHING:
	case COORD_DONE:
		c->lost_deadline = -1;
		break;
	case COORD_PLANNING:
	case COORD_RUNNING:
		break;
	}
}

/* Every rank reported or is lost: the attempt is over. */
static void
maybe_all_reported(struct coord *c, double now)
{
	if (c->nreported < c->n || !phases[c->phase].attempt)
		return;
	step(c, c->restart_wanted ? COORD_EV_AGAIN : COORD_EV_REPORTED, now);
}

static void
set_reason(struct coord *c, const char *why)
{
	if (why != c->end_reason)
		snprintf(c->end_reason, sizeof(c->end_reason), "%s", why);
}

/* Every healthy training saves; CODE is how the job then ends (0: it starts again). */
static void
checkpoint(struct coord *c, const char *why, int code, double now)
{
	if (!can(c, COORD_EV_CHECKPOINT))
		return;
	c->end_code = code;
	set_reason(c, why);
	step(c, COORD_EV_CHECKPOINT, now);
}

/* Every training ends; a reason given earlier stays (it explains the end). */
static void
stop(struct coord *c, const char *why, double now)
{
	if (!can(c, COORD_EV_STOP))
		return;
	if (!c->end_reason[0])
		set_reason(c, why);
	step(c, COORD_EV_STOP, now);
}

static int
healthy_members(const struct coord *c)
{
	int n = 0;

	for (int r = 0; r < c->n; r++)
		n += c->nodes[r].member && !c->nodes[r].faulty && !c->nodes[r].lost;
	return n;
}

/* Whether a spare waits, healthy (O(N) from the first not yet taken). */
static bool
spare_ready(const struct coord *c)
{
	for (int r = c->spare_from; r < c->n; r++)
		if (c->nodes[r].spare && !c->nodes[r].faulty && !c->nodes[r].lost)
			return true;
	return false;
}

/*
 * The lowest healthy spare, now a member, or -1 when none is left.
 * Spares are taken in rank order from spare_from, which only a node
 * that passes again (healed()) moves back: a scan is O(N) at most.
 */
static int
take_spare(struct coord *c)
{
	for (; c->spare_from < c->n; c->spare_from++) {
		struct cnode *n = &c->nodes[c->spare_from];

		if (n->spare && !n->faulty && !n->lost) {
			n->spare = false;
			n->member = true;
			return c->spare_from++;
		}
	}
	return -1;
}

/*
 * RANK, a member, failed and a spare waits (--spares): every healthy
 * training saves and stops, and the training starts again with the spare
 * in RANK's seat (restart_all()).  Only from running, and not for a job
 * the batch system cancelled.  Returns whether it did.
 */
static bool
spare_recovery(struct coord *c, int rank, const char *why, double now)
{
	if (c->o.spares <= 0 || !c->nodes[rank].member || c->phase != COORD_RUNNING ||
	    c->cancelled || !spare_ready(c))
		return false;
	c->restart_wanted = true;
	c->fault_at = now;
	coord_say(c, "vigil: %s: a spare takes its place", why);
	checkpoint(c, why, 0, now);
	return true;
}

/* RANK is faulty or lost: what to do about it, per the options. */
static void
trouble(struct coord *c, int rank, const char *why, double now)
{
	struct cnode *n = &c->nodes[rank];

	n->faulty = true;
	if (!n->member && c->started) {
		/* it trains nothing (a spare, a node left out): it is only
		 * no longer one the job can take */
		coord_say(c, "vigil: %s: %s", why, n->spare ? "a spare no more" : "left out");
		n->spare = false;
		return;
	}
	if (spare_recovery(c, rank, why, now))
		return;
	if (c->o.resume) {
		checkpoint(c, why, VIGIL_EXIT_REQUEUE, now);
	} else if (c->o.min_nodes > 0 && n->member && healthy_members(c) >= c->o.min_nodes) {
		/* elastic (弹性训练): save, then go on without that node */
		if (c->phase == COORD_RUNNING)
			c->restart_wanted = true;
		checkpoint(c, why, 0, now);
	} else if (n->lost) {
		/* nobody can wait for a lost node: the job ends */
		if (!c->end_code)
			c->end_code = VIGIL_EXIT_INTERNAL;
		snprintf(c->end_reason, sizeof(c->end_reason), "%s", why);
		stop(c, why, now);
	} else {
		coord_say(c, "vigil: %s (neither --resume nor --min-nodes: the training goes on)", why);
	}
}

/* ---- the plan ----------------------------------------------------------------- */

struct coord *
coord_new(const struct coord_opts *o, const struct coord_ops *ops, double now)
{
	struct coord *c;

	if (!o || !ops || o->size < 1 || o->size > MSG_RANK_MAX || o->self < 0 ||
	    o->self >= o->size) {
		errno = EINVAL;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->o = *o;
	c->ops = *ops;
	c->n = o->size;
	c->t0 = now;
	c->phase = COORD_PLANNING;
	c->first_fail = -1;
	c->next_scan = c->last_scan = c->next_beat = c->lost_deadline = c->limit_end = -1;
	c->heard_any = c->judge_from = -1;
	c->fault_at = c->restarted_at = -1;
	c->nodes = calloc((size_t)c->n, sizeof(*c->nodes));
	c->seat = calloc((size_t)c->n, sizeof(*c->seat));
	c->attempts = cJSON_CreateArray();
	c->recoveries = cJSON_CreateArray();
	if (!c->nodes || !c->seat || !c->attempts || !c->recoveries) {
		coord_free(c);
		errno = ENOMEM;
		return NULL;
	}
	return c;
}

void
coord_free(struct coord *c)
{
	if (!c)
		return;
	for (int r = 0; c->nodes && r < c->n; r++) {
		free(c->nodes[r].host);
		free(c->nodes[r].addr);
		free(c->nodes[r].error);
		free(c->nodes[r].ckpt_why);
		free(c->nodes[r].hint);
		free_tail(&c->nodes[r]);
	}
	free(c->nodes);
	free(c->seat);
	cJSON_Delete(c->attempts);
	cJSON_Delete(c->recoveries);
	free(c->plan_nodes);
	free(c->plan_members);
	free(c->plan_spares);
	free(c->master_addr);
	free(c);
}

int
coord_set_node(struct coord *c, int rank, const char *addr, int slots)
{
	struct cnode *n;
	char *copy;

	if (rank < 0 || rank >= c->n)
		return -EINVAL;
	n = &c->nodes[rank];
	copy = strdup(addr && *addr ? addr : "127.0.0.1");
	if (!copy)
		return -ENOMEM;
	free(n->addr);
	n->addr = copy;
	n->slots = slots > 0 ? slots : 0;
	return 0;
}

/* The pre-check's summary for people, as gather_print() words it. */
static void
say_gather(struct coord *c, const struct gather *g)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		return;
	gather_print(f, g, c->o.verbose);
	if (fclose(f) == 0 && len > 0) {
		if (text[len - 1] == '\n')
			text[len - 1] = '\0';
		coord_say(c, "%s", text);
	}
	free(text);
}

static void
no_go(struct coord *c, int code, const char *msg, double now, struct msg_plan *plan)
{
	coord_say(c, "vigil: %s", msg);
	snprintf(c->plan_message, sizeof(c->plan_message), "%s", msg);
	snprintf(c->end_reason, sizeof(c->end_reason), "%s", msg);
	c->end_code = code;
	plan->go = false;
	plan->exit_code = code;
	plan->message = c->plan_message;
	step(c, COORD_EV_NOGO, now);
}

/*
 * The seats of the first attempt: ranks 0 .. N-K-1 train, the last K
 * (--spares) wait; a seat whose node the pre-check refused goes to the
 * first healthy spare.  *BLOCKED becomes the seats left empty.  O(N).
 */
static int
plan_seats(struct coord *c, int *blocked)
{
	int k = c->n - c->o.spares;

	*blocked = 0;
	for (int r = k; r < c->n; r++) {
		c->nodes[r].spare = c->nodes[r].member;
		c->nodes[r].member = false;
	}
	c->spare_from = k;
	c->nseats = 0;
	for (int i = 0; i < k; i++) {
		int r = c->nodes[i].member ? i : take_spare(c);

		if (r < 0) {
			(*blocked)++;
			continue;
		}
		if (r != i)
			coord_say(c, "vigil: %s (rank %d) not ready: the spare %s (rank %d) takes its "
			    "place", coord_host(c, i), i, coord_host(c, r), r);
		c->seat[c->nseats++] = r;
	}
	return 0;
}

/* Which ranks may run: every rank, with its host and whether the pre-check let it. */
static int
take_reports(struct coord *c, const struct gather *g, double now, int *notready)
{
	*notready = 0;
	for (int r = 0; r < c->n; r++) {
		struct cnode *n = &c->nodes[r];
		const struct gather_node *gn = r < g->n ? &g->nodes[r] : NULL;
		bool arrived = gn && gn->arrived;
		enum verdict v = gn ? gather_node_verdict(gn) : VERDICT_FAIL;
		char *host = strdup(gn && gn->node ? gn->node : "?");

		if (!host)
			return -ENOMEM;
		free(n->host);
		n->host = host;
		if (!n->addr && coord_set_node(c, r, NULL, 0) < 0)
			return -ENOMEM;
		n->last_seen = now;
		/* a node that sent nothing cannot be planned for, pre-check or not */
		n->member = arrived && !(c->o.precheck && v >= c->o.precheck_level);
		n->faulty = !n->member;
		*notready += !n->member;
		if (!arrived) {
			/* Never heard: maybe hung, so nobody may wait for it in
			 * MPI_Finalize, and no result will come from it. */
			n->lost = n->reported = true;
			c->nlost++;
			c->nreported++;
			c->never_arrived = true;
		}
	}
	return 0;
}

/* Fill PLAN's nodes and members from the records. */
static int
fill_plan(struct coord *c, struct msg_plan *plan)
{
	int k = 0;

	free(c->plan_nodes);
	free(c->plan_members);
	free(c->plan_spares);
	c->plan_nodes = calloc((size_t)c->n, sizeof(*c->plan_nodes));
	c->plan_members = calloc((size_t)c->n, sizeof(*c->plan_members));
	c->plan_spares = calloc((size_t)c->n, sizeof(*c->plan_spares));
	if (!c->plan_nodes || !c->plan_members || !c->plan_spares)
		return -ENOMEM;
	for (int r = 0; r < c->n; r++) {
		c->plan_nodes[r].host = c->nodes[r].host;
		c->plan_nodes[r].addr = c->nodes[r].addr;
		c->plan_nodes[r].slots = c->nodes[r].slots;
	}
	/* in seat order: a node's place in the list is its training's RANK */
	for (int i = 0; i < c->nseats; i++)
		c->plan_members[k++] = c->seat[i];
	plan->nodes = c->plan_nodes;
	plan->nnodes = c->n;
	plan->members = c->plan_members;
	plan->nmembers = k;
	/* the healthy spares, for a successor that takes over (coord_adopt()) */
	plan->spares = c->plan_spares;
	plan->nspares = 0;
	for (int r = c->spare_from; r < c->n; r++)
		if (c->nodes[r].spare && !c->nodes[r].faulty && !c->nodes[r].lost)
			c->plan_spares[plan->nspares++] = r;
	return 0;
}

/* MASTER_ADDR: --master-addr, else the first member's address. */
static int
choose_master(struct coord *c)
{
	const char *addr = c->o.master_addr;
	char *copy;

	for (int i = 0; !addr && i < c->nseats; i++)
		if (!c->nodes[c->seat[i]].lost)
			addr = c->nodes[c->seat[i]].addr;
	copy = strdup(addr ? addr : "127.0.0.1");
	if (!copy)
		return -ENOMEM;
	free(c->master_addr);
	c->master_addr = copy;
	return 0;
}

struct named {
	const char *host;
	int rank;
};

static int
cmp_named(const void *a, const void *b)
{
	const struct named *x = a, *y = b;
	int d = strcmp(x->host, y->host);

	return d ? d : (x->rank > y->rank) - (x->rank < y->rank);
}

/*
 * Host names that more than one rank reported (several agents on one
 * host, or one VIGIL_NODE_NAME given to several), into BUF as "'vm' is
 * ranks 0, 1, 2; 'gpu1' is ranks 4, 5", NAMES_IN_LINE ranks a name at
 * most.  Sorted, so O(N log N) for thousands of ranks.  Returns how many
 * names are shared (0: every rank has its own), or -ENOMEM.
 */
static int
shared_names(const struct coord *c, char *buf, size_t len)
{
	struct named *v = calloc((size_t)c->n, sizeof(*v));
	size_t used = 0;
	int k = 0, shared = 0, unnamed = 0;

	if (!v)
		return -ENOMEM;
	buf[0] = '\0';
	for (int r = 0; r < c->n; r++)
		if (!c->nodes[r].lost && c->nodes[r].host)
			v[k++] = (struct named){ c->nodes[r].host, r };
	qsort(v, (size_t)k, sizeof(*v), cmp_named);
	for (int i = 0, j; i < k; i = j) {
		for (j = i + 1; j < k && strcmp(v[j].host, v[i].host) == 0; j++)
			;
		if (j - i < 2)
			continue;
		shared++;
		if (used + 64 >= len) {
			unnamed++;
			continue;
		}
		/* one name, ranks v[i..j) */
		for (int m = i; m < j && used + 24 < len; m++) {
			int w = m == i ? snprintf(buf + used, len - used, "%s'%.64s' is ranks %d",
			                          used ? "; " : "", v[m].host, v[m].rank) :
			        m - i == NAMES_IN_LINE ? snprintf(buf + used, len - used, " (+%d more)",
			                                          j - m) :
			        snprintf(buf + used, len - used, ", %d", v[m].rank);

			if (w < 0 || used + (size_t)w >= len)
				break;
			used += (size_t)w;
			if (m - i == NAMES_IN_LINE)
				break;
		}
	}
	if (unnamed)
		snprintf(buf + used, len - used, "; %d more name%s", unnamed, util_plural(unnamed));
	free(v);
	return shared;
}

/*
 * Ranks that share a name make hostfiles that name a host twice, which
 * DeepSpeed's runner (_parse_hostfile: "Hostfile contains multiple
 * entries") and Open MPI refuse: a no-go in hostfile modes, said in
 * words the user can act on.  Elsewhere only the report and the exclude
 * list cannot tell the ranks apart: a warning.  Returns 1 on no-go.
 */
static int
check_names(struct coord *c, double now, struct msg_plan *plan)
{
	char names[200], msg[512];
	int n = shared_names(c, names, sizeof(names));

	if (n <= 0)
		return n;
	if (!c->o.unique_hosts) {
		coord_say(c, "vigil: warning: agents share a host name (%s): the report and the exclude "
		    "list cannot tell them apart; start one agent per node (mpirun --map-by "
		    "ppr:1:node), or give each agent its own name with VIGIL_NODE_NAME", names);
		return 0;
	}
	snprintf(msg, sizeof(msg), "agents share a host name (%s), and a hostfile names each "
	         "host once (DeepSpeed and Open MPI refuse a host named twice): start one agent "
	         "per node (mpirun --map-by ppr:1:node), or give each agent its own name with "
	         "VIGIL_NODE_NAME; not starting the training", names);
	no_go(c, VIGIL_EXIT_USAGE, msg, now, plan);
	return 1;
}

int
coord_plan(struct coord *c, const struct gather *g, double now, struct msg_plan *plan)
{
	char msg[512];
	int notready, blocked, rc, port;

	memset(plan, 0, sizeof(*plan));
	rc = take_reports(c, g, now, &notready);
	if (rc == 0)
		rc = plan_seats(c, &blocked);
	if (rc == 0)
		rc = fill_plan(c, plan);
	if (rc < 0)
		return rc;
	plan->finalize = !c->never_arrived;
	rc = check_names(c, now, plan);
	if (rc != 0)
		return rc < 0 ? rc : 0;
	if (c->o.spares >= c->n) {
		snprintf(msg, sizeof(msg), "--spares %d leaves none of the %d node%s to train: give "
		         "fewer spares, or start more agents", c->o.spares, c->n, util_plural(c->n));
		no_go(c, VIGIL_EXIT_USAGE, msg, now, plan);
		return 0;
	}
	/* The pre-check said no somewhere: say so once, here, for every node. */
	if (notready)
		say_gather(c, g);
	if (blocked) {
		/* seats no spare could fill */
		int seats = c->n - c->o.spares;
		bool elastic = c->o.min_nodes > 0 && c->nseats >= c->o.min_nodes;

		if (!elastic) {
			if (c->o.min_nodes > 0)
				snprintf(msg, sizeof(msg), "%d of %d node%s not ready, fewer than "
				         "--min-nodes %d healthy: not starting the training", blocked,
				         seats, util_plural(seats), c->o.min_nodes);
			else
				snprintf(msg, sizeof(msg), "%d of %d node%s not ready (pre-check failed "
				         "or no report)%s: not starting the training", blocked, seats,
				         util_plural(seats), c->o.spares > 0 ? ", too few spares" : "");
			no_go(c, VIGIL_EXIT_UNHEALTHY, msg, now, plan);
			return 0;
		}
		/* the platform's elastic training: start on the healthy nodes */
		coord_say(c, "vigil: %d of %d node%s not ready: starting on the %d healthy node%s "
		    "(--min-nodes %d)", blocked, seats, util_plural(seats), c->nseats,
		    util_plural(c->nseats), c->o.min_nodes);
	}
	port = c->o.master_port > 0 ? c->o.master_port
	                            : c->ops.free_port ? c->ops.free_port(c->ops.arg) : -ENOSYS;
	if (port < 0) {
		snprintf(msg, sizeof(msg), "cannot find a free port for MASTER_PORT: %s",
		         strerror(-port));
		no_go(c, VIGIL_EXIT_INTERNAL, msg, now, plan);
		return 0;
	}
	if (choose_master(c) < 0)
		return -ENOMEM;
	c->master_port = port;
	plan->go = true;
	plan->master_addr = c->master_addr;
	plan->master_port = port;
	c->last_scan = c->heard_any = now;
	c->next_scan = now + c->o.heartbeat_s / 2;
	c->next_beat = now + c->o.heartbeat_s;
	c->started = true;
	step(c, COORD_EV_GO, now);
	return 0;
}

/* RANK lost at the takeover, for WHY: faulty, and an event says so. */
static void
adopt_lost(struct coord *c, int rank, const char *why)
{
	struct cnode *n = &c->nodes[rank];

	if (n->lost)
		return;
	n->lost = n->reported = n->faulty = true;
	c->nlost++;
	c->nreported++;
	coord_emit(c, rank, VIGIL_EVENT_NODE_LOST, VIGIL_SEVERITY_ERROR, why, NULL);
}

/*
 * After a takeover, whose trainings saved and stopped on their own: with
 * a healthy spare for every seat a lost node held (--spares), the
 * training starts again on as many nodes (restart_all()), the spares in
 * the lost seats.  Returns whether it does; O(N).
 */
static bool
adopt_spares(struct coord *c, const char *why, double lost_at, double now)
{
	int need = 0, ready = 0;

	if (c->o.spares <= 0 || c->cancelled)
		return false;
	for (int i = 0; i < c->nseats; i++)
		need += c->nodes[c->seat[i]].lost;
	for (int r = c->spare_from; r < c->n; r++)
		ready += c->nodes[r].spare && !c->nodes[r].faulty && !c->nodes[r].lost;
	if (ready < need)
		return false;
	c->restart_wanted = true;
	c->fault_at = lost_at <= now ? lost_at : now;
	coord_say(c, "vigil: %s: %s", why, need ? "a spare takes its place" :
	    "the training starts again");
	checkpoint(c, why, 0, now);
	return true;
}

int
coord_adopt(struct coord *c, const struct coord_adoption *a, double now)
{
	const struct msg_plan *plan = a->plan;
	const int *members = a->members, *lost = a->lost;
	int nmembers = a->nmembers, nlost = a->nlost;
	const char *why = a->why;

	for (int r = 0; r < c->n; r++) {
		struct cnode *n = &c->nodes[r];
		const struct msg_node *pn = r < plan->nnodes ? &plan->nodes[r] : NULL;

		free(n->host);
		n->host = strdup(pn && pn->host ? pn->host : "?");
		if (!n->host || coord_set_node(c, r, pn ? pn->addr : NULL, pn ? pn->slots : 0) < 0)
			return -ENOMEM;
		n->last_seen = now;
	}
	c->nseats = 0;
	for (int i = 0; i < nmembers; i++)
		if (members[i] >= 0 && members[i] < c->n && !c->nodes[members[i]].member) {
			c->nodes[members[i]].member = true;
			c->seat[c->nseats++] = members[i];
		}
	/* the spares the plan named; the trainings run the nodes' attempt */
	c->spare_from = c->n;
	for (int i = 0; i < plan->nspares; i++) {
		int r = plan->spares[i];

		if (r >= 0 && r < c->n && !c->nodes[r].member) {
			c->nodes[r].spare = true;
			if (r < c->spare_from)
				c->spare_from = r;
		}
	}
	c->restarts = a->attempt > 0 ? a->attempt : 0;
	c->started = true;
	step(c, COORD_EV_ADOPT, now);
	for (int i = 0; i < nlost; i++) {
		char msg[300];

		if (lost[i] < 0 || lost[i] >= c->n || lost[i] == c->o.self)
			continue;
		/* the first is the coordinator; the others were before this node in line */
		snprintf(msg, sizeof(msg), "%s (rank %d) lost: next in line to take over from the "
		         "coordinator, and silent as well", coord_host(c, lost[i]), lost[i]);
		adopt_lost(c, lost[i], i == 0 ? why : msg);
	}
	/* it cannot be asked to finalize, or to take part in anything else */
	c->never_arrived = true;
	c->last_scan = c->heard_any = now;
	c->next_scan = now + c->o.heartbeat_s / 2;
	c->next_beat = now + c->o.heartbeat_s;
	coord_say(c, "vigil: %s (rank %d) takes over as the coordinator: %s", coord_host(c, c->o.self),
	    c->o.self, why);
	if (adopt_spares(c, why, a->lost_at, now))
		return 0;
	if (c->o.resume) {
		checkpoint(c, why, VIGIL_EXIT_REQUEUE, now);
	} else {
		c->end_code = VIGIL_EXIT_INTERNAL;
		stop(c, why, now);
	}
	return 0;
}

void
coord_set_time_limit(struct coord *c, double end)
{
	c->limit_end = end;
}

/* ---- what the nodes say --------------------------------------------------------- */

/*
 * A word from another rank after the coordinator heard nobody for longer
 * than the deaf limit (stall.h): its own network failed for that long, or
 * every other node did at once.  Silence counts again only from NOW plus
 * the gap, so that what the outage held back, which TCP retransmits with
 * a growing backoff, comes before anyone is judged.  Not after a stall of
 * the coordinator itself: the scan gives everyone a fresh timeout then.
 */
static void
deaf_over(struct coord *c, double now)
{
	double until = stall_deaf_until(c->heard_any, now, c->o.heartbeat_s);
	bool late = stall_late(c->last_scan, now, c->o.heartbeat_s, c->o.heartbeat_timeout_s);
	cJSON *d;
	char msg[256];

	if (until < 0 || late || !phases[c->phase].attempt || until <= c->judge_from)
		return;
	c->judge_from = until;
	snprintf(msg, sizeof(msg), "the coordinator heard no node for %.1f s (its own network?): "
	         "nobody is judged on that silence", now - c->heard_any);
	coord_say(c, "vigil: %s", msg);
	d = cJSON_CreateObject();
	cJSON_AddNumberToObject(d, "deaf_s", now - c->heard_any);
	coord_emit(c, c->o.self, VIGIL_EVENT_STALL, VIGIL_SEVERITY_WARNING, msg, d);
}

void
coord_heard(struct coord *c, int rank, double now)
{
	if (rank < 0 || rank >= c->n || c->nodes[rank].lost)
		return;
	c->nodes[rank].last_seen = now;
	if (rank == c->o.self)
		return;
	deaf_over(c, now);
	if (now > c->heard_any)
		c->heard_any = now;
}

/* Keep what the result says; the tail only for a failure, and only so many. */
static int
record_result(struct coord *c, struct cnode *n, const struct msg_result *r)
{
	n->reported = n->have_result = true;
	n->idle = r->idle;
	n->exit_code = r->exit_code;
	n->signal = r->signal;
	n->agent_signal = r->agent_signal;
	n->cancelled = r->cancelled;
	n->seconds = r->seconds;
	n->output_lost = r->output_lost;
	free(n->error);
	n->error = r->error ? strdup(r->error) : NULL;
	n->ckpt = r->ckpt;
	n->ckpt_confirmed = r->ckpt_confirmed;
	free(n->ckpt_why);
	n->ckpt_why = r->ckpt && r->ckpt_why ? strdup(r->ckpt_why) : NULL;
	free(n->hint);
	n->hint = r->hint ? strdup(r->hint) : NULL;  /* none is fine: a hint */
	if ((r->exit_code || r->error) && r->ntail > 0 && c->ntails < TAILS_KEPT) {
		n->tail = calloc((size_t)r->ntail, sizeof(*n->tail));
		for (int i = 0; n->tail && i < r->ntail; i++)
			if ((n->tail[n->ntail] = strdup(r->tail[i])))
				n->ntail++;
		if (n->tail)
			c->ntails++;
	}
	return r->error && !n->error ? -ENOMEM : 0;
}

/* The event for a training that ended. */
static void
exit_event(struct coord *c, int rank)
{
	const struct cnode *n = &c->nodes[rank];
	cJSON *d = cJSON_CreateObject();
	char msg[128];

	cJSON_AddNumberToObject(d, "exit_code", n->exit_code);
	cJSON_AddNumberToObject(d, "attempt", c->restarts);
	if (n->signal)
		cJSON_AddStringToObject(d, "signal", sig_name(n->signal));
	if (n->error)
		cJSON_AddStringToObject(d, "error", n->error);
	snprintf(msg, sizeof(msg), "training ended with status %d", n->exit_code);
	coord_emit(c, rank, VIGIL_EVENT_EXIT, n->exit_code ? VIGIL_SEVERITY_ERROR : VIGIL_SEVERITY_INFO,
	      msg, d);
}

#define CANCEL_REASON "the job was cancelled (scancel): the trainings stop without a " \
	"checkpoint, and the job is not requeued"

void
coord_cancel(struct coord *c, double now)
{
	if (c->cancelled || phases[c->phase].over)
		return;
	c->cancelled = true;
	c->restart_wanted = false;
	set_reason(c, CANCEL_REASON);
	coord_say(c, "vigil: %s", CANCEL_REASON);
	if (c->phase == COORD_RUNNING)
		stop(c, CANCEL_REASON, now);  /* a checkpoint under way goes on */
}

/* The first training to fail: restart, checkpoint (--resume) or stop. */
static void
first_failure(struct coord *c, int rank, double now)
{
	const struct cnode *n = &c->nodes[rank];
	char why[512];

	c->first_fail = rank;
	if (n->cancelled || c->cancelled) {
		coord_cancel(c, now);
		return;
	}
	if (n->agent_signal && !n->exit_code)
		snprintf(why, sizeof(why), "%s (rank %d) was told to stop (%s)", n->host, rank,
		         sig_name(n->agent_signal));
	else if (n->signal)
		snprintf(why, sizeof(why), "%s (rank %d): the training was killed by %s", n->host,
		         rank, sig_name(n->signal));
	else
		snprintf(why, sizeof(why), "%s (rank %d): the training exited with status %d",
		         n->host, rank, n->exit_code);
	if (c->o.resume && !n->error && (!n->agent_signal || n->agent_signal == SIGTERM)) {
		/*
		 * Under --resume a crash is a fault like any other, and a
		 * SIGTERM to an agent is mpirun or the batch system ending the
		 * job: either way every healthy training saves and the job is
		 * requeued.  The node whose training crashed is avoided.
		 */
		if (!n->agent_signal) {
			c->nodes[rank].faulty = true;
			if (spare_recovery(c, rank, why, now))
				return;
		}
		checkpoint(c, why, VIGIL_EXIT_REQUEUE, now);
		return;
	}
	/* fault restart (故障重启): again, everywhere, up to --restart times */
	if (c->o.restart_max > c->restarts - c->spare_restarts && !n->agent_signal && !n->error &&
	    !c->end_code) {
		c->restart_wanted = true;
		snprintf(c->end_reason, sizeof(c->end_reason), "%s", why);
	}
	stop(c, why, now);
}

void
coord_result(struct coord *c, int rank, const struct msg_result *r, double now)
{
	struct cnode *n;

	if (rank < 0 || rank >= c->n || !phases[c->phase].attempt)
		return;
	n = &c->nodes[rank];
	coord_heard(c, rank, now);
	if (n->reported)
		return;  /* one result per attempt; a lost rank's is too late */
	(void)record_result(c, n, r);
	c->nreported++;
	c->nresults++;
	if (!n->idle)
		exit_event(c, rank);
	if (n->cancelled)
		coord_cancel(c, now);
	/* While checkpointing, trainings end because they were told to (a hang's stop too). */
	if ((n->exit_code || n->agent_signal) && c->first_fail < 0 &&
	    c->phase != COORD_CHECKPOINTING && !c->hang_stop)
		first_failure(c, rank, now);
	maybe_all_reported(c, now);
}

/* One inspection finding: an event, a line, and whether it is a fault. */
static bool
take_finding(struct coord *c, int rank, const char *node, const struct finding *f,
             char *why, size_t whylen)
{
	bool fail = f->verdict == VERDICT_FAIL;
	char msg[512];
	cJSON *d = cJSON_CreateObject();

	snprintf(msg, sizeof(msg), "%s %s: %s", f->what, f->device, f->evidence);
	cJSON_AddStringToObject(d, "what", f->what);
	cJSON_AddStringToObject(d, "device", f->device);
	cJSON_AddStringToObject(d, "verdict", verdict_name(f->verdict));
	cJSON_AddStringToObject(d, "evidence", f->evidence);
	if (c->ops.event)
		c->ops.event(c->ops.arg, node, rank, VIGIL_EVENT_FAULT,
		             fail ? VIGIL_SEVERITY_ERROR : VIGIL_SEVERITY_WARNING, msg, d);
	else
		cJSON_Delete(d);
	coord_say(c, "vigil: %s (rank %d): %s%s", node, rank, fail ? "fault: " : "warning: ", msg);
	if (fail)
		snprintf(why, whylen, "%.100s (rank %d): %.380s", node, rank, msg);
	return fail;
}

/* The seats the job was planned with: every rank but the spares. */
static int
full_size(const struct coord *c)
{
	return c->n - c->o.spares;
}

/*
 * RANK's inspection says a failure it reported is over (F): a node that
 * was left out for a fault and passes again waits as a spare, and a job
 * that runs on fewer nodes than it was planned for grows back with it:
 * every training saves, and the training starts again with the node in
 * a new seat at the end (refill_seats()).
 */
static void
healed(struct coord *c, int rank, const struct finding *f, double now)
{
	struct cnode *n = &c->nodes[rank];
	char why[512];

	snprintf(why, sizeof(why), "%s (rank %d): %s %s passes again", n->host, rank, f->what,
	         f->device);
	coord_emit(c, rank, VIGIL_EVENT_CHECK, VIGIL_SEVERITY_INFO, why, NULL);
	if (!n->faulty || n->lost || n->member || phases[c->phase].over) {
		coord_say(c, "vigil: %s", why);
		return;
	}
	n->faulty = false;
	n->spare = true;
	if (rank < c->spare_from)
		c->spare_from = rank;
	if (c->phase != COORD_RUNNING || c->cancelled || c->nseats >= full_size(c)) {
		coord_say(c, "vigil: %s: it waits as a spare", why);
		return;
	}
	snprintf(why + strlen(why), sizeof(why) - strlen(why), ": the job grows back from %d "
	         "to %d node%s", c->nseats, c->nseats + 1, util_plural(c->nseats + 1));
	coord_say(c, "vigil: %s", why);
	c->restart_wanted = true;
	checkpoint(c, why, 0, now);
}

void
coord_note(struct coord *c, int rank, const struct msg_note *nt, double now)
{
	const char *node;
	char why[512];
	bool fault = false;

	if (rank < 0 || rank >= c->n)
		return;
	coord_heard(c, rank, now);
	node = c->nodes[rank].host ? c->nodes[rank].host : nt->node;
	if (nt->signal) {
		/* The batch system's warning (Slurm --signal, forwarded by
		 * mpirun to every rank): every node checkpoints, once. */
		snprintf(why, sizeof(why), "%s reached %s (rank %d)", sig_name(nt->signal), node,
		         rank);
		checkpoint(c, why, VIGIL_EXIT_REQUEUE, now);
	}
	for (int i = 0; i < nt->nfindings; i++) {
		char w[512];

		if (nt->findings[i].verdict == VERDICT_PASS) {
			healed(c, rank, &nt->findings[i], now);
			continue;
		}
		if (take_finding(c, rank, node, &nt->findings[i], w, sizeof(w)) && !fault) {
			fault = true;
			memcpy(why, w, sizeof(why));
		}
	}
	if (fault)
		trouble(c, rank, why, now);
}

void
coord_alert(struct coord *c, int rank, const char *message, double now)
{
	char why[400];

	if (!c->o.perf_reschedule || rank < 0 || rank >= c->n || c->phase != COORD_RUNNING)
		return;
	/* reschedule: save and requeue away from the node named */
	snprintf(why, sizeof(why), "performance: %.300s", message);
	c->nodes[rank].faulty = true;
	if (!spare_recovery(c, rank, why, now))
		checkpoint(c, why, VIGIL_EXIT_REQUEUE, now);
}

void
coord_progress(struct coord *c, int rank, double iters, double now)
{
	double took = 0;
	cJSON *r;
	int i = 0;

	/* every heartbeat comes here: O(1) but after a recovery */
	if (c->restarted_at < 0 || rank != c->timed_rank || iters <= 0 ||
	    c->phase != COORD_RUNNING)
		return;
	cJSON_ArrayForEach(r, c->recoveries) {
		if (i++ < c->recovery_from)
			continue;
		took = now - c->t0 - json_num(r, "fault_s", 0, 1e12, now - c->t0);
		cJSON_AddNumberToObject(r, "restart_s", c->restarted_at - c->t0 -
		                        json_num(r, "fault_s", 0, 1e12, now - c->t0));
		cJSON_AddNumberToObject(r, "first_iteration_s", took);
	}
	coord_say(c, "vigil: the training runs again with the spare %s: its first iteration "
	    "%.1f s after the fault", coord_host(c, rank), took);
	c->restarted_at = -1;
}

void
coord_spares_json(const struct coord *c, cJSON *report)
{
	cJSON *s, *used, *waiting;

	if (c->o.spares <= 0)
		return;
	s = cJSON_AddObjectToObject(report, "spares");
	if (!s)
		return;
	cJSON_AddNumberToObject(s, "configured", c->o.spares);
	used = cJSON_AddArrayToObject(s, "used");
	waiting = cJSON_AddArrayToObject(s, "waiting");
	for (int r = 0; r < c->n; r++) {
		if (c->nodes[r].spare && !c->nodes[r].faulty && !c->nodes[r].lost && waiting)
			cJSON_AddItemToArray(waiting, cJSON_CreateString(coord_host(c, r)));
	}
	for (cJSON *x = c->recoveries->child; x && used; x = x->next)
		cJSON_AddItemToArray(used, cJSON_CreateString(json_str(x, "spare_node", "?")));
	cJSON_AddItemToObject(s, "recoveries", cJSON_Duplicate(c->recoveries, 1));
}

void
coord_hang(struct coord *c, int suspect, enum coord_hang_policy policy, const char *why,
           double now)
{
	if (c->phase != COORD_RUNNING || policy == COORD_HANG_ALERT)
		return;
	c->hang_stop = true;
	set_reason(c, why);
	if (suspect >= 0 && suspect < c->n && c->o.spares > 0 && c->nodes[suspect].member &&
	    spare_ready(c)) {
		/* a spare takes the suspect's seat; a hung collective cannot
		 * save, so the training starts again from its last checkpoint */
		c->nodes[suspect].faulty = true;
		c->restart_wanted = true;
		c->fault_at = now;
		coord_say(c, "vigil: %s: a spare takes the place of %s (rank %d)", why,
		    coord_host(c, suspect), suspect);
	} else if (policy == COORD_HANG_RESTART &&
	           c->o.restart_max > c->restarts - c->spare_restarts) {
		c->restart_wanted = true;  /* fault restart: counted like a crash */
	} else if (policy == COORD_HANG_REQUEUE && c->o.resume) {
		c->end_code = VIGIL_EXIT_REQUEUE;
		if (suspect >= 0 && suspect < c->n)
			c->nodes[suspect].faulty = true;
	} else {
		c->end_code = VIGIL_EXIT_INTERNAL;
		if (suspect >= 0 && suspect < c->n)
			c->nodes[suspect].faulty = true;
	}
	stop(c, why, now);
}

/* ---- time ------------------------------------------------------------------------ */

/* N is silent past the timeout, counted from its last word or from the
 * end of the coordinator's own deafness, whichever is later. */
static bool
overdue(const struct coord *c, const struct cnode *n, double now)
{
	double since = n->last_seen > c->judge_from ? n->last_seen : c->judge_from;

	return now - since >= c->o.heartbeat_timeout_s;
}

/* RANK is silent past the timeout. */
static void
declare_lost(struct coord *c, int rank, double now)
{
	struct cnode *n = &c->nodes[rank];
	char why[512];
	cJSON *d = cJSON_CreateObject();

	n->lost = true;
	c->nlost++;
	if (!n->reported) {
		n->reported = true;
		c->nreported++;
	}
	snprintf(why, sizeof(why), "%s (rank %d) lost: no heartbeat for %.1f s", n->host, rank,
	         now - n->last_seen);
	coord_say(c, "vigil: %s", why);
	cJSON_AddNumberToObject(d, "silent_s", now - n->last_seen);
	coord_emit(c, rank, VIGIL_EVENT_NODE_LOST, VIGIL_SEVERITY_ERROR, why, d);
	if (n->have_result) {
		/* Its training had ended; the agent is gone before the job's
		 * end.  Avoided next time, and nobody may wait for it in
		 * MPI_Finalize, but the training's outcome stands. */
		n->faulty = true;
		return;
	}
	trouble(c, rank, why, now);
}

/*
 * No quorum (stall.h): the coordinator heard none of the other nodes for
 * the timeout, or only the smaller part of them.  The network that failed
 * is more likely its own than everyone else's (the nodes that still see
 * each other decide without it, see watch.h).  It names itself and nobody
 * else: the SILENT nodes are out of its reach, not faulty, and its own
 * training and those of the nodes it still hears checkpoint (--resume) or
 * stop; the job ends when they have.
 */
static void
isolated(struct coord *c, int silent, int heard, double now)
{
	struct cnode *self = &c->nodes[c->o.self];
	cJSON *d = cJSON_CreateObject();

	if (heard == 0)
		snprintf(c->end_reason, sizeof(c->end_reason), "%s (rank %d), the coordinator, lost "
		         "contact with all %d other nodes: it is the node cut off", self->host,
		         c->o.self, silent);
	else
		snprintf(c->end_reason, sizeof(c->end_reason), "%s (rank %d), the coordinator, lost "
		         "contact with %d of the other nodes and hears only %d: it is cut off from the "
		         "rest, or in the smaller part of a split network", self->host, c->o.self,
		         silent, heard);
	coord_say(c, "vigil: %s", c->end_reason);
	cJSON_AddNumberToObject(d, "silent_nodes", silent);
	cJSON_AddNumberToObject(d, "heard_nodes", heard);
	coord_emit(c, c->o.self, VIGIL_EVENT_NODE_LOST, VIGIL_SEVERITY_ERROR, c->end_reason, d);
	self->faulty = true;
	c->isolated = true;
	for (int r = 0; r < c->n; r++) {
		struct cnode *n = &c->nodes[r];

		if (r == c->o.self || n->lost || !overdue(c, n, now))
			continue;
		n->lost = true;
		c->nlost++;
		if (!n->reported) {
			n->reported = true;
			c->nreported++;
		}
	}
	if (c->o.resume) {
		checkpoint(c, c->end_reason, VIGIL_EXIT_REQUEUE, now);
	} else {
		c->end_code = VIGIL_EXIT_INTERNAL;
		stop(c, c->end_reason, now);
	}
}

/* A stall of the coordinator's own: every node gets a fresh timeout. */
static void
stalled(struct coord *c, double now)
{
	cJSON *d = cJSON_CreateObject();
	char msg[256];

	snprintf(msg, sizeof(msg), "the coordinator was stalled for %.1f s: every node gets "
	         "a fresh %.0f s before it is judged", now - c->last_scan, c->o.heartbeat_timeout_s);
	coord_say(c, "vigil: %s", msg);
	cJSON_AddNumberToObject(d, "stalled_s", now - c->last_scan);
	coord_emit(c, c->o.self, VIGIL_EVENT_STALL, VIGIL_SEVERITY_WARNING, msg, d);
	c->heard_any = now;
	for (int r = 0; r < c->n; r++)
		coord_heard(c, r, now);
}

/*
 * The heartbeat scan.  The coordinator judges silence only when it was
 * itself on time, and names a silent node only with a quorum (stall.h):
 * after a scan that came late, what looks like silence may be messages it
 * has not read yet; while it hears too few of the others, the silence may
 * be its own.
 */
static void
scan(struct coord *c, double now)
{
	double recent = stall_deaf_limit(c->o.heartbeat_s);
	int live = 0, heard = 0, silent = 0;

	if (stall_late(c->last_scan, now, c->o.heartbeat_s, c->o.heartbeat_timeout_s))
		stalled(c, now);
	c->last_scan = now;
	for (int r = 0; r < c->n; r++) {
		const struct cnode *n = &c->nodes[r];

		if (r == c->o.self || n->lost)
			continue;
		live++;
		if (overdue(c, n, now))
			silent++;
		else if (now - n->last_seen < recent)
			heard++;
	}
	switch (stall_judge(live, heard, silent)) {
	case STALL_WAIT:
		return;
	case STALL_SELF:
		isolated(c, silent, heard, now);
		return;
	case STALL_NAME:
		break;
	}
	for (int r = 0; r < c->n; r++) {
		struct cnode *n = &c->nodes[r];

		if (r != c->o.self && !n->lost && overdue(c, n, now))
			declare_lost(c, r, now);
	}
}

/* The wait for trainings told to end is over: who has not reported is lost. */
static void
results_overdue(struct coord *c)
{
	for (int r = 0; r < c->n; r++) {
		struct cnode *n = &c->nodes[r];

		if (n->reported)
			continue;
		char why[512];

		snprintf(why, sizeof(why), "%s (rank %d) did not report within %.0f s of being "
		         "told to end its training", n->host, r, c->o.grace_s + LOST_AFTER_STOP_S);
		coord_say(c, "vigil: %s", why);
		coord_emit(c, r, VIGIL_EVENT_NODE_LOST, VIGIL_SEVERITY_ERROR, why, NULL);
		n->lost = n->reported = n->faulty = true;
		c->nlost++;
		c->nreported++;
	}
}

static void
time_limit(struct coord *c, double now)
{
	c->limit_fired = true;
	if (c->restart_wanted && c->phase != COORD_RUNNING) {
		size_t len = strlen(c->end_reason);

		/* a recovery under way (a spare's, elastic, a restart) would
		 * start the training again past the limit, where the batch
		 * system ends it unsaved: the save or stop already asked for
		 * ends the job instead */
		c->restart_wanted = false;
		c->end_code = VIGIL_EXIT_EXPIRED;
		coord_say(c, "vigil: the time limit is near: the job ends after this %s, "
		          "without starting again", c->phase == COORD_CHECKPOINTING ? "checkpoint" :
		          "stop");
		snprintf(c->end_reason + len, sizeof(c->end_reason) - len,
		         "; then the time limit came near");
		return;
	}
	if (c->o.resume) {
		checkpoint(c, "the time limit is near", VIGIL_EXIT_EXPIRED, now);
	} else if (can(c, COORD_EV_STOP)) {
		c->end_code = VIGIL_EXIT_EXPIRED;
		snprintf(c->end_reason, sizeof(c->end_reason), "the time limit was reached");
		step(c, COORD_EV_STOP, now);
	}
}

static double
limit_due(const struct coord *c)
{
	if (c->limit_end < 0 || c->limit_fired)
		return -1;
	return c->o.resume ? c->limit_end - c->o.ckpt_lead_s : c->limit_end;
}

/* The coordinator's own heartbeat: every node watches for it (node.c). */
static void
beat(struct coord *c)
{
	for (int r = 0; r < c->n; r++)
		if (r != c->o.self && !c->nodes[r].lost)
			send_text(c, r, MSG_HEARTBEAT, "{}");
}

static double
earliest(double a, double b)
{
	if (a < 0)
		return b;
	if (b < 0)
		return a;
	return a < b ? a : b;
}

double
coord_tick(struct coord *c, double now)
{
	double due;

	if (!phases[c->phase].attempt)
		return -1;
	due = limit_due(c);
	if (due >= 0 && now >= due)
		time_limit(c, now);
	if (c->n > 1 && c->next_beat >= 0 && now >= c->next_beat) {
		beat(c);
		c->next_beat = now + c->o.heartbeat_s;
	}
	if (c->n > 1 && c->next_scan >= 0 && now >= c->next_scan) {
		scan(c, now);
		c->next_scan = now + c->o.heartbeat_s / 2;
	}
	if (c->lost_deadline >= 0 && now >= c->lost_deadline) {
		c->lost_deadline = -1;
		results_overdue(c);
	}
	maybe_all_reported(c, now);
	if (!phases[c->phase].attempt)
		return -1;
	due = earliest(c->lost_deadline, limit_due(c));
	if (c->n > 1)
		due = earliest(due, earliest(c->next_scan, c->next_beat));
	return due;
}

/* ---- starting again ------------------------------------------------------------------ */

/* What ended the attempt, for the report. */
static void
record_attempt(struct coord *c)
{
	cJSON *a = cJSON_CreateObject();

	if (!a)
		return;
	cJSON_AddNumberToObject(a, "attempt", c->restarts);
	cJSON_AddNumberToObject(a, "world_size", c->nseats);
	cJSON_AddStringToObject(a, "ended_by", c->end_reason);
	if (c->first_fail >= 0) {
		const struct cnode *n = &c->nodes[c->first_fail];

		cJSON_AddStringToObject(a, "node", n->host);
		cJSON_AddNumberToObject(a, "rank", c->first_fail);
		cJSON_AddNumberToObject(a, "exit_code", n->exit_code);
	}
	cJSON_AddItemToArray(c->attempts, a);
}

/* Spare S takes seat I of F, who failed: said, and kept for the report. */
static void
spare_in(struct coord *c, int i, int f, int s, double now)
{
	cJSON *r = cJSON_CreateObject();
	char msg[600];

	snprintf(msg, sizeof(msg), "the spare %s (rank %d) takes the place of %s (rank %d) as "
	         "RANK %d", coord_host(c, s), s, coord_host(c, f), f, i);
	coord_say(c, "vigil: %s", msg);
	coord_emit(c, s, VIGIL_EVENT_RESTART, VIGIL_SEVERITY_WARNING, msg, NULL);
	if (!r)
		return;
	cJSON_AddStringToObject(r, "failed_node", coord_host(c, f));
	cJSON_AddNumberToObject(r, "failed_rank", f);
	cJSON_AddStringToObject(r, "spare_node", coord_host(c, s));
	cJSON_AddNumberToObject(r, "spare_rank", s);
	cJSON_AddNumberToObject(r, "training_rank", i);
	cJSON_AddStringToObject(r, "why", c->end_reason);
	cJSON_AddNumberToObject(r, "fault_s", (c->fault_at >= 0 ? c->fault_at : now) - c->t0);
	cJSON_AddItemToArray(c->recoveries, r);
	c->timed_rank = s;  /* a spare trained nothing before: its first iteration is the restart's */
}

/*
 * The seats of the next attempt: a member that is faulty or lost gives
 * its seat to the first healthy spare, or, with none left, the seat goes
 * and the ones after it move up (elastic, or --restart without the
 * node).  Returns the members.  O(N).
 */
static int
refill_seats(struct coord *c, double now)
{
	int k = 0, spares = 0, from = cJSON_GetArraySize(c->recoveries);

	for (int i = 0; i < c->nseats; i++) {
		int r = c->seat[i];
		struct cnode *n = &c->nodes[r];

		if (n->faulty || n->lost) {
			n->member = false;
			r = take_spare(c);
			if (r < 0)
				continue;
			spare_in(c, k, c->seat[i], r, now);
			spares++;
		}
		c->seat[k++] = r;
	}
	/* a job that shrank grows back with the spares that are healthy again */
	while (k < full_size(c) && spare_ready(c)) {
		int s = take_spare(c);

		coord_say(c, "vigil: %s (rank %d) trains again, as RANK %d", coord_host(c, s), s, k);
		c->seat[k++] = s;
	}
	c->nseats = k;
	if (spares) {
		c->spare_restarts++;
		c->recovery_from = from;
		c->restarted_at = now;
	}
	c->fault_at = -1;
	return k;
}

/* The restart command for the next attempt; NULL on ENOMEM. */
static char *
restart_command(struct coord *c, int nmembers)
{
	struct msg m = { .kind = MSG_COMMAND };
	int *members = calloc((size_t)nmembers, sizeof(*members)), k = 0;
	char *text;

	if (!members)
		return NULL;
	for (int i = 0; i < c->nseats && k < nmembers; i++)
		members[k++] = c->seat[i];
	m.u.command.command = MSG_CMD_RESTART;
	m.u.command.attempt = c->restarts;
	m.u.command.master_addr = c->master_addr;
	m.u.command.master_port = c->master_port;
	m.u.command.members = members;
	m.u.command.nmembers = k;
	text = msg_encode(&m);
	free(members);
	return text;
}

static void
restart_all(struct coord *c, double now)
{
	bool crash = c->first_fail >= 0;
	int nmembers = 0, port;
	char *text;

	record_attempt(c);
	nmembers = refill_seats(c, now);
	if (nmembers == 0 || (c->o.min_nodes > 0 && nmembers < c->o.min_nodes)) {
		coord_say(c, "vigil: cannot start again: %d healthy node%s left%s", nmembers,
		    util_plural(nmembers), c->o.min_nodes > 0 ? ", fewer than --min-nodes" : "");
		if (!c->end_code && !crash)
			c->end_code = VIGIL_EXIT_INTERNAL;
		step(c, COORD_EV_EXHAUSTED, now);
		return;
	}
	port = c->ops.free_port ? c->ops.free_port(c->ops.arg) : -ENOSYS;
	if (port > 0 && c->o.master_port <= 0)
		c->master_port = port;
	c->restarts++;
	if (choose_master(c) < 0) {
		step(c, COORD_EV_EXHAUSTED, now);
		return;
	}
	text = restart_command(c, nmembers);
	coord_say(c, "vigil: starting the training again (attempt %d) on %d node%s after: %.400s",
	    c->restarts, nmembers, util_plural(nmembers), c->end_reason);
	{
		char msg[600];

		snprintf(msg, sizeof(msg), "starting the training again (attempt %d) on %d node%s "
		         "after: %.400s", c->restarts, nmembers, util_plural(nmembers), c->end_reason);
		coord_emit(c, c->o.self, VIGIL_EVENT_RESTART, VIGIL_SEVERITY_WARNING, msg, NULL);
	}
	/* a fresh attempt: every live rank reports again */
	c->nreported = c->nresults = 0;
	for (int r = 0; r < c->n; r++) {
		struct cnode *n = &c->nodes[r];

		clear_result(c, n);
		c->nreported += n->reported;
		if (!n->lost)
			send_text(c, r, MSG_COMMAND, text);
	}
	free(text);
	c->first_fail = -1;
	c->end_code = 0;
	c->end_reason[0] = '\0';
	c->restart_wanted = false;
	c->hang_stop = false;
	step(c, COORD_EV_RESTARTED, now);
}

/* ---- the end ----------------------------------------------------------------------- */

enum coord_phase
coord_phase(const struct coord *c)
{
	return c->phase;
}

const char *
coord_phase_name(enum coord_phase p)
{
	return fsm_phase_name(&table, (int)p);
}

const char *
coord_event_name(enum coord_event ev)
{
	return fsm_event_name(&table, (int)ev);
}

int
coord_next(enum coord_phase from, enum coord_event ev)
{
	return fsm_next(&table, (int)from, (int)ev);
}

/* A member of the last attempt was lost: its part of the training never ended. */
static bool
member_lost(const struct coord *c)
{
	for (int r = 0; r < c->n; r++)
		if (c->nodes[r].member && c->nodes[r].lost && !c->nodes[r].have_result)
			return true;
	return false;
}

/* A training was told to save and gave no evidence that it did. */
static bool
ckpt_unconfirmed(const struct coord *c)
{
	for (int r = 0; r < c->n; r++)
		if (c->nodes[r].have_result && c->nodes[r].ckpt && !c->nodes[r].ckpt_confirmed)
			return true;
	return false;
}

/* "stopped" promises that the job was asked to end and every training
 * that was told to save did: one whose save was not confirmed makes it
 * an error, whatever asked (the status stays the requeue's). */
static const char *
stopped(const struct coord *c)
{
	return ckpt_unconfirmed(c) ? VIGIL_STATE_ERROR : VIGIL_STATE_STOPPED;
}

const char *
coord_state(const struct coord *c)
{
	if (!phases[c->phase].over)
		return VIGIL_STATE_RUNNING;
	if (c->cancelled)
		return VIGIL_STATE_STOPPED;
	if (c->end_code == VIGIL_EXIT_EXPIRED)
		return VIGIL_STATE_EXPIRED;
	for (int r = 0; r < c->n; r++)
		if (c->nodes[r].have_result && c->nodes[r].agent_signal)
			return stopped(c);
	if (c->end_code == VIGIL_EXIT_REQUEUE) {
		for (int r = 0; r < c->n; r++)
			if (c->nodes[r].faulty && c->nodes[r].member)
				return VIGIL_STATE_ERROR;
		return stopped(c);  /* the batch system asked */
	}
	if (c->first_fail >= 0 || c->end_code || member_lost(c))
		return VIGIL_STATE_ERROR;
	return VIGIL_STATE_SUCCEEDED;
}

int
coord_exit_code(const struct coord *c)
{
	if (c->cancelled)
		return 128 + SIGTERM;  /* as for any SIGTERM: never 81 (requeue) */
	if (c->end_code == VIGIL_EXIT_REQUEUE && c->o.max_resumes >= 0 &&
	    c->o.resumes_done >= c->o.max_resumes)
		return VIGIL_EXIT_NO_REQUEUE;  /* 最大续训次数 reached */
	if (c->end_code)
		return c->end_code;
	if (c->first_fail >= 0) {
		const struct cnode *n = &c->nodes[c->first_fail];

		if (n->exit_code)
			return n->exit_code;
		if (n->agent_signal)
			return 128 + n->agent_signal;
	}
	if (member_lost(c))
		return VIGIL_EXIT_INTERNAL;
	return 0;
}

const char *
coord_host(const struct coord *c, int rank)
{
	if (rank < 0 || rank >= c->n || !c->nodes[rank].host)
		return "?";
	return c->nodes[rank].host;
}

bool
coord_lost(const struct coord *c, int rank)
{
	return rank >= 0 && rank < c->n && c->nodes[rank].lost;
}

bool
coord_faulty(const struct coord *c, int rank)
{
	return rank >= 0 && rank < c->n && c->nodes[rank].faulty;
}

int
coord_up(const struct coord *c)
{
	return c->n - c->nlost;
}

int
coord_nlost(const struct coord *c)
{
	return c->nlost;
}

int
coord_spares(const struct coord *c, int *used, double *recovery_s)
{
	cJSON *last = cJSON_GetArrayItem(c->recoveries, cJSON_GetArraySize(c->recoveries) - 1);
	int waiting = 0;

	for (int r = 0; r < c->n; r++)
		waiting += c->nodes[r].spare && !c->nodes[r].faulty && !c->nodes[r].lost;
	*used = cJSON_GetArraySize(c->recoveries);
	*recovery_s = last ? json_num(last, "first_iteration_s", 0, 1e12, NAN) : NAN;
	return waiting;
}

int
coord_members(const struct coord *c)
{
	int n = 0;

	for (int r = 0; r < c->n; r++)
		n += c->nodes[r].member;
	return n;
}

bool
coord_ending(const struct coord *c)
{
	return phases[c->phase].ending || c->nresults > 0;
}

bool
coord_finalize_safe(const struct coord *c)
{
	return c->nlost == 0 && !c->never_arrived;
}

bool
coord_abort_end(const struct coord *c)
{
	return !coord_finalize_safe(c) && !c->isolated;
}

double
coord_hold(const struct coord *c)
{
	return coord_exit_code(c) != 0 && !c->cancelled ? c->o.hold_s : 0;
}

int
coord_finish(struct coord *c, int cycles, double now)
{
	const char *state = coord_state(c);
	int code = coord_exit_code(c);
	struct msg m = { .kind = MSG_FINAL };
	char *text;
	int told = 0;

	if (!can(c, COORD_EV_FINISHED))
		return 0;
	coord_say_end(c, state, code, now);
	m.u.final.exit_code = code;
	m.u.final.state = state;
	m.u.final.finalize = coord_finalize_safe(c);
	m.u.final.abort = coord_abort_end(c);
	m.u.final.hold = coord_hold(c);
	m.u.final.cycles = cycles;
	text = msg_encode(&m);
	for (int r = 0; text && r < c->n; r++)
		if (r != c->o.self && !c->nodes[r].lost) {
			send_text(c, r, MSG_FINAL, text);
			told++;
		}
	free(text);
	step(c, COORD_EV_FINISHED, now);
	return told;
}
