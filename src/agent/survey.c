/*
 * survey.c - from the start to the plan: what this node is (its slots and
 * its pre-check, the payload for the coordinator), the gather of every
 * node's payload at the coordinator, the coordinator's plan (go or no-go,
 * and the coordinator itself, made here), the plan's way to every node
 * (a header and a broadcast; what overtakes it is kept and replayed), and
 * --dry-run's gather of every node's description.
 */
#include "autoconf.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cJSON.h>

#include "vigil.h"
#include "agent/coord.h"
#include "agent/job.h"
#include "agent/jobfiles.h"
#include "agent/node.h"
#include "agent/survey.h"
#include "check/check.h"
#include "check/gather.h"
#include "check/incident.h"
#include "comm/msg.h"
#include "comm/nudge.h"
#include "comm/peer.h"
#include "launch/modes.h"
#include "lib/json.h"
#include "lib/log.h"
#include "lib/loop.h"
#include "lib/util.h"
#include "prep/prep.h"
#include "sys/topo.h"

#define PLAN_EXTRA_S 30      /* beyond the gather's timeout, a node waits this for the plan */

/* ---- this node ------------------------------------------------------------------ */

/*
 * A port free on this node now, for MASTER_PORT, as torchrun picks one:
 * bind to port 0 and let the kernel choose.  The socket is closed at once
 * (vigil keeps no port of its own); the training binds it moments later.
 */
static int
free_port(void *arg)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY) };
	socklen_t len = sizeof(sin);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int port = -errno;

	(void)arg;
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

/*
 * Discover and pre-check this node; the payload for the coordinator:
 * gather_payload() plus the launch facts {"addr", "slots", "vendor"}.
 */
static char *
survey(struct job *j)
{
	struct check_report report = { 0 };
	struct topo *t = NULL;
	char error[512] = "", addr[256];
	char *base, *text = NULL;
	cJSON *o;
	int rc;

	rc = topo_load(j->o->topology, &t);
	if (rc == 0)
		rc = topo_slots(t, &j->slots, &j->nslots);
	topo_free(t);
	if (rc < 0) {
		snprintf(error, sizeof(error), "slots: discovery failed: %s", strerror(-rc));
	} else {
		if (j->nslots > 0)
			j->vendor = slot_vendor_name(j->slots[0].vendor);
		if (j->o->precheck) {
			struct check_ctx ctx = {
				.cfg = j->cfg, .slots = j->slots, .nslots = j->nslots, .all = true,
				.node = j->name,  /* the node ledger's verdict on it */
			};

			rc = check_run(&ctx, &report);
			if (rc < 0)
				snprintf(error, sizeof(error), "cannot run the pre-check on %s: %s",
				         j->cfg->sysfs_root, strerror(-rc));
		}
	}
	base = gather_payload(j->name, j->rank, &report, error[0] ? error : NULL);
	check_report_free(&report);
	o = base ? cJSON_Parse(base) : NULL;
	free(base);
	if (!o)
		return NULL;
	util_local_address(j->name, false, addr, sizeof(addr));
	cJSON_AddStringToObject(o, "addr", addr);
	cJSON_AddNumberToObject(o, "slots", (double)j->nslots);
	if (j->nudge)
		cJSON_AddStringToObject(o, "nudge", j->nudge_at);
	if (j->vendor)
		cJSON_AddStringToObject(o, "vendor", j->vendor);
	text = json_print(o, false);
	cJSON_Delete(o);
	return text;
}

/* This node's pre-check, once: its payload for the gather. */
const char *
survey_precheck(void *arg)
{
	struct job *j = arg;

	if (!j->payload) {
		j->payload = survey(j);
		if (!j->payload || job_new_node(j) < 0)
			return NULL;
	}
	return j->payload;
}

/* ---- the gather ----------------------------------------------------------------- */

static void plan(struct job *j, bool complete);
static void dry_run_done(struct job *j, bool complete);
static long on_gather_late(struct loop *l, void *arg);
static long on_plan_late(struct loop *l, void *arg);

/* Start gathering TEXT at the coordinator, the phase moved by EV (to GATHER or
 * DRYRUN), within the gather timeout. */
static int
start_gather(struct job *j, enum phase_event ev, const char *text)
{
	peer_gather_free(j->pg);
	j->pg = NULL;
	if (peer_gather_start(j->p, text, &j->pg) < 0)
		return -ENOMEM;
	job_step(j, ev, (long)(j->cfg->gather_timeout_s * 1000), on_gather_late);
	return 0;
}

/* The pre-check and the gather, with what the preparation adds to the payload. */
int
survey_gather(struct job *j)
{
	char *amended;
	int rc;

	if (!survey_precheck(j))
		return -ENOMEM;
	if (!j->prep)
		return start_gather(j, PE_GATHER, j->payload);
	amended = prep_amend_payload(j->prep, j->payload);
	if (!amended)
		return -ENOMEM;
	rc = start_gather(j, PE_GATHER, amended);
	free(amended);  /* the gather keeps a copy */
	return rc;
}

void
survey_prep_go(void *arg, bool ok)
{
	struct job *j = arg;

	if (!ok) {
		LOG_ERR("the preparation ended without the coordinator");
		job_leave(j, VIGIL_EXIT_INTERNAL, false);
		return;
	}
	if (survey_gather(j) < 0) {
		LOG_ERR("cannot send this node's report: out of memory");
		job_leave(j, VIGIL_EXIT_INTERNAL, false);
	}
}

/* A phase's gather (GATHER or DRYRUN) is complete or timed out. */
static void
gather_end(struct job *j, bool complete)
{
	if (j->phase == PH_DRYRUN) {
		dry_run_done(j, complete);
		return;
	}
	if (j->rank == 0) {
		plan(j, complete);
		return;
	}
	if (!complete) {
		LOG_ERR("the coordinator did not take this node's report within %.0f s",
		        j->cfg->gather_timeout_s);
		job_leave(j, VIGIL_EXIT_INTERNAL, false);
		return;
	}
	job_step(j, PE_REPORTED, (long)((j->cfg->gather_timeout_s + PLAN_EXTRA_S) * 1000),
	         on_plan_late);
}

static long
on_gather_late(struct loop *l, void *arg)
{
	struct job *j = arg;

	(void)l;
	j->phase_timer = NULL;
	gather_end(j, false);
	return LOOP_NOMORE;
}

void
survey_gather_progress(struct job *j)
{
	int rc = peer_gather_progress(j->pg);

	if (rc < 0) {
		LOG_ERR("MPI error while gathering reports");
		job_leave(j, VIGIL_EXIT_INTERNAL, false);
	} else if (rc == 1) {
		loop_del_timer(j->loop, j->phase_timer);
		j->phase_timer = NULL;
		gather_end(j, true);
	}
}

/* ---- the plan ------------------------------------------------------------------- */

/* The coordinator's record of each rank's address and slots, from its payload. */
static int
take_payloads(struct job *j, struct gather *g)
{
	int rc = gather_init(g, j->size);

	for (int r = 0; rc == 0 && r < j->size; r++) {
		const char *payload = peer_gather_get(j->pg, r);
		cJSON *info = payload ? cJSON_Parse(payload) : NULL;

		rc = gather_add(g, r, payload, j->cfg->gather_timeout_s);
		if (rc == 0)
			rc = coord_set_node(j->coord, r, json_str(info, "addr", NULL),
			                    (int)json_int(info, "slots", 0, 1000000, 0));
		if (rc == 0 && j->nudge && r != j->rank)
			(void)nudge_set(j->nudge, r, json_str(info, "nudge", NULL));
		cJSON_Delete(info);
	}
	if (rc == 0)
		gather_consistency(g);
	return rc;
}

struct coord *
survey_new_coord(struct job *j, int self)
{
	struct coord_opts co = {
		.size = j->size, .self = self,
		/* staging and hook failures are pre-check failures, even with --precheck off */
		.precheck = j->o->precheck || prep_before_gather(j->prep),
		.precheck_level = j->o->precheck_level, .verbose = j->o->verbose,
		.resume = j->o->resume, .restart_max = j->o->restart_max,
		.min_nodes = j->o->min_nodes, .spares = j->o->spares, .max_resumes = j->o->max_resumes,
		.resumes_done = jobfiles_resumes(j->o), .perf_reschedule = j->o->perf_reschedule,
		.grace_s = j->o->grace_s, .heartbeat_s = j->o->heartbeat_s,
		.heartbeat_timeout_s = j->o->heartbeat_timeout_s, .ckpt_lead_s = j->o->ckpt_lead_s,
		.hold_s = j->o->hold_s, .master_addr = j->o->master_addr,
		.master_port = j->o->master_port, .job_id = getenv("SLURM_JOB_ID"),
		.unique_hosts = j->o->mode == MODE_DEEPSPEED || j->o->mode == MODE_HOROVOD,
	};
	struct coord_ops ops = { job_send, jobfiles_event, job_say, free_port, j };

	if (!j->incidents)
		j->incidents = incident_job_new(j->cfg, j->job_id);
	return coord_new(&co, &ops, j->t0);
}

/*
 * The plan to every node that reported.  It names every node, so its size
 * grows with the job: when every rank reported (all are waiting for it),
 * each gets a small header and the plan follows as one broadcast, a tree
 * in which the coordinator sends O(log N) copies instead of N.  A rank that
 * never reported might hold back its part of the tree: then the plan goes
 * to each reporting node in turn, from one buffer.
 */
static int
send_plan(struct job *j, const struct msg_plan *p, const char *text, bool complete)
{
	struct msg h = { .kind = MSG_PLAN };
	int told = 0;
	size_t len = strlen(text) + 1;
	char *head = NULL;

	/* (and only once a broadcast cannot cross the making of the
	 * reductions' communicator: peer_world_ready()) */
	if (complete && p->go && j->size > 1 && peer_world_ready(j->p)) {
		h.u.plan.go = true;
		h.u.plan.job = p->job;
		h.u.plan.finalize = p->finalize;
		h.u.plan.bcast = (long)len;
		head = msg_encode(&h);
	}
	for (int r = 1; r < j->size; r++)
		if (peer_gather_get(j->pg, r) && peer_send(j->p, r, MSG_PLAN, head ? head : text) == 0)
			told++;
	if (head && peer_bcast_start(j->p, text, len, &j->bcast) < 0) {
		LOG_ERR("cannot broadcast the plan: the nodes will give up waiting for it");
		j->clean = false;
	}
	free(head);
	return told;
}

/* The coordinator: go or no-go, the plan to every node that reported. */
static void
plan(struct job *j, bool complete)
{
	struct gather g = { 0 };
	struct msg m = { .kind = MSG_PLAN };
	double now = job_now(j);
	char *text = NULL;
	int rc, told = 0;

	j->coord = survey_new_coord(j, 0);
	rc = j->coord ? take_payloads(j, &g) : -ENOMEM;
	if (rc == 0 && j->o->precheck)
		incident_job_gather(j->incidents, &g);
	if (rc == 0 && j->o->precheck && j->ev && (rc = gather_write_events(&g, j->ev)) < 0) {
		LOG_ERR("cannot write events to %s: %s", j->o->events, strerror(-rc));
		rc = 0;
	}
	if (rc == 0)
		rc = coord_plan(j->coord, &g, now, &m.u.plan);
	gather_free(&g);
	if (rc < 0) {
		LOG_ERR("out of memory");
		job_leave(j, VIGIL_EXIT_INTERNAL, false);
		return;
	}
	/* one name for this job's files, the same on every node */
	m.u.plan.job = j->job_id;
	m.u.plan.finalize = m.u.plan.finalize && complete;
	m.u.plan.nudge = j->nudge ? j->nudge_at : NULL;
	text = msg_encode(&m);
	if (text)
		told = send_plan(j, &m.u.plan, text, complete);
	free(text);
	if (!complete)
		j->clean = false;
	if (!m.u.plan.go) {
		(void)incident_job_commit(j->incidents);  /* logged */
		if (j->o->report)
			jobfiles_report(j, now);
		if (!complete)
			job_abort_at_end(j, told);
		job_leave(j, m.u.plan.exit_code, j->clean);
		return;
	}
	if (!j->o->dry_run) {
		/* which torch launcher, and why, where vigil chooses one */
		struct mode_plan tp = { .mode = j->o->mode, .argv = j->o->cmd,
		                        .torch_launcher = j->o->torch_launcher, .workdir = j->o->workdir };
		char why[512];
		bool torch = mode_torch_explain(&tp, why, sizeof(why));

		log_say("vigil: %s training on %d node%s, master %s:%d: %s%s%s%s\n",
		        mode_name(j->o->mode), m.u.plan.nmembers, j->size == 1 ? "" : "s",
		        m.u.plan.master_addr, m.u.plan.master_port, j->o->cmd[0],
		        torch ? " (" : "", torch ? why : "", torch ? ")" : "");
		jobfiles_event(j, j->name, 0, VIGIL_EVENT_LAUNCH, VIGIL_SEVERITY_INFO,
		          "starting the training", NULL);
	}
	j->next_end_time = now;  /* the time limit now, then as it moves */
	job_recheck_end_time(j, now);
	job_ask_alloc_start(j);
	if (node_take_plan(j->node, &m.u.plan) < 0) {
		LOG_ERR("out of memory");
		job_leave(j, VIGIL_EXIT_INTERNAL, false);
		return;
	}
	job_launch(j);
}

/* A node: the coordinator's plan came. */
static void
take_plan(struct job *j, const struct msg_plan *p)
{
	if (!p->finalize)
		j->clean = false;
	/* One id for the job on every node: the coordinator's (its process
	 * id outside Slurm), for the hooks from now on and a successor. */
	if (p->job && *p->job) {
		snprintf(j->job_id, sizeof(j->job_id), "%s", p->job);
		if (prep_set_job_id(j->prep, j->job_id) < 0)
			LOG_WARN("out of memory: this node's hooks keep their own job id");
	}
	if (!p->go) {
		j->bye = !p->finalize;  /* a node never reported: the coordinator ends the job */
		job_leave(j, p->exit_code, j->clean);
		return;
	}
	if (node_take_plan(j->node, p) < 0) {
		LOG_ERR("out of memory");
		job_leave(j, VIGIL_EXIT_INTERNAL, false);
		return;
	}
	if (j->nudge && p->nudge)
		(void)nudge_set(j->nudge, job_coord_rank(j), p->nudge);
	job_launch(j);
}

static long
on_plan_late(struct loop *l, void *arg)
{
	struct job *j = arg;

	(void)l;
	j->phase_timer = NULL;
	LOG_ERR("no plan from the coordinator");
	job_leave(j, VIGIL_EXIT_INTERNAL, false);
	return LOOP_NOMORE;
}

void
survey_defer(struct job *j, int src, int tag, const char *text)
{
	struct deferred *d = realloc(j->deferred, (size_t)(j->ndeferred + 1) * sizeof(*d));

	if (!d || !(d[j->ndeferred].text = strdup(text))) {
		if (d)
			j->deferred = d;
		LOG_ERR("out of memory: a message from rank %d is lost", src);
		return;
	}
	j->deferred = d;
	d[j->ndeferred].src = src;
	d[j->ndeferred].tag = tag;
	j->ndeferred++;
}

/* The node runs: what came before the plan, in the order it came. */
static void
replay_deferred(struct job *j)
{
	struct deferred *d = j->deferred;
	int n = j->ndeferred;

	j->deferred = NULL;
	j->ndeferred = 0;
	for (int i = 0; i < n; i++) {
		if (j->phase != PH_EXIT)
			job_route(j, d[i].src, d[i].tag, d[i].text);
		free(d[i].text);
	}
	free(d);
}

/* The plan's broadcast: the coordinator lets its buffer go, a node takes the plan. */
void
survey_bcast_progress(struct job *j)
{
	const char *text;
	struct msg m;
	size_t len;
	int rc = peer_bcast_test(j->bcast);

	if (rc == 0)
		return;
	if (rc < 0) {
		LOG_ERR("MPI error in the plan's broadcast");
		job_leave(j, VIGIL_EXIT_INTERNAL, false);
		return;
	}
	text = peer_bcast_data(j->bcast);
	len = peer_bcast_len(j->bcast);
	if (j->rank != 0 && j->phase == PH_PLAN) {
		/* the coordinator sends the plan's text with its NUL */
		if (len == 0 || text[len - 1] != '\0' ||
		    msg_decode(MSG_PLAN, text, j->size, &m) < 0 || m.u.plan.bcast) {
			LOG_ERR("the plan's broadcast is malformed");
			job_leave(j, VIGIL_EXIT_INTERNAL, false);
		} else {
			j->plan_text = strdup(text);  /* for a successor; none is fine */
			peer_bcast_free(j->bcast);
			j->bcast = NULL;
			take_plan(j, &m.u.plan);
			msg_clear(&m);
			replay_deferred(j);
			return;
		}
	}
	peer_bcast_free(j->bcast);
	j->bcast = NULL;
}

void
survey_plan(struct job *j, const char *text, const struct msg_plan *p)
{
	if (p->bcast > 0) {
		/* the header: the plan itself comes as a broadcast */
		if (peer_bcast_start(j->p, NULL, (size_t)p->bcast, &j->bcast) < 0) {
			LOG_ERR("cannot take part in the plan's broadcast");
			job_leave(j, VIGIL_EXIT_INTERNAL, false);
		}
		return;
	}
	j->plan_text = strdup(text);  /* for a successor; none is fine */
	take_plan(j, p);
}

/* ---- --dry-run ------------------------------------------------------------------- */

void
survey_dry_run(struct job *j)
{
	j->description = node_describe(j->node);
	if (!j->description || start_gather(j, PE_DRY_RUN, j->description) < 0)
		job_leave(j, VIGIL_EXIT_INTERNAL, false);
}

/* --dry-run: every node's description arrived (or not); the coordinator prints them. */
static void
dry_run_done(struct job *j, bool complete)
{
	int code = VIGIL_EXIT_OK;

	if (!complete) {
		LOG_ERR("the dry run could not gather every node's description");
		job_leave(j, VIGIL_EXIT_INTERNAL, false);
		return;
	}
	if (j->rank == 0)
		for (int r = 0; r < j->size; r++)
			log_say("%s", peer_gather_get(j->pg, r));
	if (strstr(j->description, "\nerror: "))
		code = VIGIL_EXIT_USAGE;
	job_leave(j, code, true);
}

void
survey_free(struct job *j)
{
	free(j->plan_text);
	free(j->payload);
	free(j->description);
	peer_gather_free(j->pg);
	for (int i = 0; i < j->ndeferred; i++)
		free(j->deferred[i].text);
	free(j->deferred);
	if (j->bcast)
		j->clean = false;  /* MPI may still write its buffer */
	peer_bcast_free(j->bcast);
	topo_slots_free(j->slots, j->nslots);
	j->plan_text = j->payload = j->description = NULL;
	j->pg = NULL;
	j->deferred = NULL;
	j->ndeferred = 0;
	j->bcast = NULL;
	j->slots = NULL;
	j->nslots = 0;
}
