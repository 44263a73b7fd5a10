/*
 * prep.c - the preparation before the gather on every node, its view at
 * the coordinator, and the hooks of the later phases.
 */
#include "autoconf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vigil.h"
#include "lib/json.h"
#include "lib/loop.h"
#include "lib/util.h"
#include "prep/hooks.h"
#include "prep/prep.h"
#include "prep/prepview.h"
#include "prep/stage.h"
#include "proc/runner.h"

#define TICK_MS 500           /* progress out (nodes), lines and keepalives (coordinator) */
#define LINE_EVERY_S 5.0      /* a progress line for people at most this often */
#define SILENCE_EXTRA_S 5.0   /* beyond the heartbeat timeout and a pre-check's time */

/* ST_JOB_ID: a node waits for the coordinator's first word, the job's id */
enum step { ST_IDLE, ST_JOB_ID, ST_PRECHECK_HOOKS, ST_STAGING, ST_PRELAUNCH_HOOKS, ST_DONE, ST_GONE };

struct prep {
	struct prep_opts o;
	const struct run_opts *ro;
	struct loop *loop;
	struct prep_ops ops;
	char *node, *job_id, *self;
	struct hooks *hooks;
	struct stage_set sets[STAGE_SETS_MAX];
	char names[STAGE_SETS_MAX][64];
	const char *set_names[STAGE_SETS_MAX];  /* the hooks withhold their variables */
	int nsets;

	/* this node */
	enum step step;
	struct runner *stager;
	double stage_t0, stage_s;
	double copied_bytes, copied_files, copy_bytes, copy_files, data_bytes, data_files;
	double plans[STAGE_SETS_MAX][4];  /* each set's last plan: bytes, files, to copy */
	bool stage_tried, staged;
	char stage_error[400];
	struct hooks_result early;     /* the pre-check and pre-launch hooks together */
	int holds[STAGE_SETS_MAX];
	int nholds;
	struct loop_timer *timer;
	double heard;                  /* node: the coordinator's last word */

	/* the coordinator */
	struct prepview *view;
	double next_line, next_beat;
	bool went;

	/* later phases */
	bool ending, later_failed;
};

static double
now_s(const struct prep *p)
{
	return (double)loop_now(p->loop) / 1000.0;
}

static bool
coordinator(const struct prep *p)
{
	return p->o.rank == 0;
}

static double
silence_s(const struct prep *p)
{
	/* a node's loop stops while it runs its pre-check (up to the check's
	 * timeout): that is not silence */
	return p->ro->heartbeat_timeout_s + p->o.cfg->check_timeout_s + SILENCE_EXTRA_S;
}

bool
prep_needed(const struct run_opts *o, const struct config *cfg)
{
	return o->nstage > 0 || o->nhook > 0 || cfg->nhooks > 0;
}

bool
prep_before_gather(const struct prep *p)
{
	/* Every node decides alike, so a hook of the coordinator's counts on
	 * the others too: they go through the phase with nothing to run. */
	return p && !p->ro->dry_run &&
	       (p->nsets > 0 || hooks_declared(p->hooks, CONFIG_HOOK_PRECHECK) ||
	        hooks_declared(p->hooks, CONFIG_HOOK_PRELAUNCH));
}

/* ---- progress to the coordinator ---------------------------------------------- */

static const char *
step_name(enum step s)
{
	return s == ST_STAGING ? "staging" : s >= ST_DONE ? "done" : "hooks";
}

static void
fill(const struct prep *p, struct msg_prep *m)
{
	m->node = p->node;
	m->step = step_name(p->step);
	m->ok = !p->stage_error[0] && p->early.failed == 0;
	m->error = p->stage_error[0] ? p->stage_error : p->early.failed ? p->early.why : NULL;
	m->copied_bytes = p->copied_bytes;
	m->copied_files = p->copied_files;
	m->copy_bytes = p->copy_bytes;
	m->copy_files = p->copy_files;
	m->data_bytes = p->data_bytes;
	m->data_files = p->data_files;
	m->seconds = p->stager ? now_s(p) - p->stage_t0 : p->stage_s;
}

/* This node's state to the coordinator (or, there, into the view). */
static void
tell(struct prep *p)
{
	struct msg m = { .kind = MSG_PREP };
	char *text;

	fill(p, &m.u.prep);
	if (coordinator(p)) {
		(void)prepview_update(p->view, 0, &m.u.prep, now_s(p));
		return;
	}
	text = msg_encode(&m);
	if (text)
		(void)p->ops.send(p->ops.arg, 0, MSG_PREP, text);  /* a lost one: the next tick */
	free(text);
}

static void
say(struct prep *p, const char *line)
{
	if (p->ops.say)
		p->ops.say(p->ops.arg, line);
}

/* ---- the coordinator ------------------------------------------------------------- */

static void
send_all(struct prep *p, bool go)
{
	struct msg m = { .kind = MSG_PREP };
	char *text;

	m.u.prep.go = go;
	m.u.prep.job = p->job_id;
	text = msg_encode(&m);
	for (int r = 1; text && r < p->o.size; r++)
		(void)p->ops.send(p->ops.arg, r, MSG_PREP, text);
	free(text);
}

/* A node finished: its event. */
static void
node_event(struct prep *p, int rank, const struct msg_prep *m)
{
	cJSON *d;
	char msg[600], sz[32];

	if (!p->ops.event || (m->data_bytes <= 0 && m->ok))
		return;
	d = cJSON_CreateObject();
	cJSON_AddNumberToObject(d, "seconds", m->seconds);
	cJSON_AddNumberToObject(d, "copied_bytes", m->copied_bytes);
	cJSON_AddNumberToObject(d, "copied_files", m->copied_files);
	cJSON_AddNumberToObject(d, "data_bytes", m->data_bytes);
	util_fmt_bytes(m->copied_bytes, sz, sizeof(sz));
	if (m->ok)
		snprintf(msg, sizeof(msg), "staged in %.1f s (%s copied)", m->seconds, sz);
	else
		snprintf(msg, sizeof(msg), "preparation failed: %.500s", m->error ? m->error : "?");
	p->ops.event(p->ops.arg, m->node, rank, VIGIL_EVENT_STAGE,
	             m->ok ? VIGIL_SEVERITY_INFO : VIGIL_SEVERITY_ERROR, msg, d);
}

/* Every node done (or silent): the summary, and go. */
static void
coordinator_check(struct prep *p, double now)
{
	char line[1200];

	int silent;

	if (p->went)
		return;
	silent = prepview_expire(p->view, now, silence_s(p));
	if (silent > 0) {
		snprintf(line, sizeof(line), "vigil: %d node%s said nothing of %s preparation for "
		         "%.0f s: going on without waiting for %s", silent, util_plural(silent),
		         silent == 1 ? "its" : "their", silence_s(p), silent == 1 ? "it" : "them");
		say(p, line);
	}
	if (p->step != ST_DONE || !prepview_complete(p->view))
		return;
	p->went = true;
	if (prepview_summary(p->view, line + 7, sizeof(line) - 7)) {
		memcpy(line, "vigil: ", 7);
		say(p, line);
	}
	send_all(p, true);
	loop_del_timer(p->loop, p->timer);
	p->timer = NULL;
	p->ops.go(p->ops.arg, true);
}

static void
coordinator_tick(struct prep *p, double now)
{
	char line[1200];

	tell(p);
	if (p->went)
		return;
	if (now >= p->next_beat) {
		send_all(p, false);  /* a keepalive: the nodes wait for the coordinator */
		p->next_beat = now + p->ro->heartbeat_s;
	}
	if (now >= p->next_line && prepview_line(p->view, now, line + 7, sizeof(line) - 7)) {
		memcpy(line, "vigil: ", 7);
		say(p, line);
		p->next_line = now + LINE_EVERY_S;
	}
	coordinator_check(p, now);
}

static long
on_tick(struct loop *l, void *arg)
{
	struct prep *p = arg;
	double now = now_s(p);

	(void)l;
	if (coordinator(p)) {
		coordinator_tick(p, now);
		return p->timer ? TICK_MS : LOOP_NOMORE;
	}
	if (p->step < ST_DONE)
		tell(p);
	if (now - p->heard > silence_s(p)) {
		char line[200];

		snprintf(line, sizeof(line), "vigil: the coordinator said nothing for %.0f s during "
		         "the preparation", now - p->heard);
		say(p, line);
		p->timer = NULL;
		p->step = ST_GONE;
		p->ops.go(p->ops.arg, false);
		return LOOP_NOMORE;
	}
	return TICK_MS;
}

static void start_hooks(struct prep *p, const char *job);

void
prep_message(struct prep *p, int src, const struct msg_prep *m, double now)
{
	int rc;

	if (!p)
		return;
	if (!coordinator(p)) {
		if (src != 0 || p->step == ST_GONE)
			return;
		p->heard = now;
		if (p->step == ST_JOB_ID)
			start_hooks(p, m->job);
		if (m->go && p->step == ST_DONE) {
			p->step = ST_GONE;
			loop_del_timer(p->loop, p->timer);
			p->timer = NULL;
			p->ops.go(p->ops.arg, true);
		}
		return;
	}
	if (p->went || !p->view || src <= 0)
		return;
	rc = prepview_update(p->view, src, m, now);
	if (rc == 1)
		node_event(p, src, m);
	coordinator_check(p, now);
}

/* ---- this node's steps -------------------------------------------------------- */

static void start_prelaunch(struct prep *p);

/* This node is ready (or has failed): the coordinator hears it once, then nothing more. */
static void
finish(struct prep *p)
{
	p->step = ST_DONE;
	tell(p);
	if (coordinator(p)) {
		struct msg_prep m = { 0 };

		fill(p, &m);
		node_event(p, 0, &m);
		coordinator_check(p, now_s(p));
	}
}

/* Take the shared lock on each copy: no cleaning removes it while the job trains. */
static void
hold_copies(struct prep *p)
{
	for (int i = 0; i < p->nsets; i++) {
		int fd = stage_hold(p->ro->stage_dir, &p->sets[i]);

		if (fd >= 0)
			p->holds[p->nholds++] = fd;
	}
}

/* A set's plan (every set's comes first; one said again replaces it): the totals. */
static void
take_plan(struct prep *p, const char *name, const double v[4])
{
	double t[4] = { 0 };

	for (int i = 0; i < p->nsets; i++)
		if (strcmp(p->sets[i].name, name) == 0)
			memcpy(p->plans[i], v, sizeof(p->plans[i]));
	for (int i = 0; i < p->nsets; i++)
		for (int k = 0; k < 4; k++)
			t[k] += p->plans[i][k];
	p->data_bytes = t[0];
	p->data_files = t[1];
	p->copy_bytes = t[2];
	p->copy_files = t[3];
}

/* "plan NAME BYTES FILES COPY_BYTES COPY_FILES", "copied BYTES FILES", "error MESSAGE". */
static void
on_stage_line(void *arg, const char *line, size_t len)
{
	struct prep *p = arg;
	char buf[RUNNER_LINE_MAX + 1], name[64], out[RUNNER_LINE_MAX + 100];
	double v[4], a, b;

	memcpy(buf, line, len);
	buf[len] = '\0';
	if (sscanf(buf, "plan %63s %lf %lf %lf %lf", name, &v[0], &v[1], &v[2], &v[3]) == 5) {
		take_plan(p, name, v);
	} else if (sscanf(buf, "copied %lf %lf", &a, &b) == 2) {
		p->copied_bytes += a;
		p->copied_files += b;
	} else if (strncmp(buf, "error ", 6) == 0) {
		snprintf(p->stage_error, sizeof(p->stage_error), "%.390s", buf + 6);
	} else if (strncmp(buf, "ready ", 6) != 0) {
		snprintf(out, sizeof(out), "[stage %s:%d] %s", p->node, p->o.rank, buf);
		say(p, out);
	}
}

static void
on_stage_done(void *arg, int status)
{
	struct prep *p = arg;

	p->stage_s = now_s(p) - p->stage_t0;
	runner_free(p->stager);
	p->stager = NULL;
	if (status == RUNNER_TIMEOUT)
		snprintf(p->stage_error, sizeof(p->stage_error), "not done within %.0f s "
		         "(--stage-timeout)", p->ro->stage_timeout_s);
	else if (status != 0 && !p->stage_error[0])
		snprintf(p->stage_error, sizeof(p->stage_error), "`vigil stage` ended with status %d",
		         status);
	if (p->stage_error[0]) {
		finish(p);
		return;
	}
	p->staged = true;
	hooks_set_staged(p->hooks);
	hold_copies(p);
	start_prelaunch(p);
}

/* `vigil stage --progress ...` for this job's datasets. */
static int
start_staging(struct prep *p)
{
	char jobs[16], ret[32], use[32];
	char *argv[16 + STAGE_SETS_MAX] = {
		(char *)"vigil", (char *)"stage", (char *)"--progress", (char *)"--dir",
		(char *)p->ro->stage_dir, (char *)"--jobs", jobs, (char *)"--retention", ret,
		(char *)"--max-use", use, (char *)"--verify",
		(char *)(p->ro->stage_verify_content ? "content" : "quick"), (char *)"--",
	};
	struct runner_opts ro = { .path = p->self, .argv = argv, .sigmask = p->o.sigmask,
	                          .timeout_s = p->ro->stage_timeout_s };
	struct runner_ops ops = { on_stage_line, on_stage_done, p };
	int k = 14;

	snprintf(jobs, sizeof(jobs), "%d", p->ro->stage_jobs);
	snprintf(ret, sizeof(ret), "%.0f", p->ro->stage_retention_s);
	snprintf(use, sizeof(use), "%d", p->ro->stage_max_use);
	for (int i = 0; i < p->nsets; i++)
		argv[k++] = (char *)p->ro->stage[i];
	argv[k] = NULL;
	p->step = ST_STAGING;
	p->stage_tried = true;
	p->stage_t0 = now_s(p);
	return runner_start(p->loop, &ro, &ops, &p->stager);
}

static void
start_prelaunch(struct prep *p)
{
	p->step = ST_PRELAUNCH_HOOKS;
	if (hooks_run(p->hooks, CONFIG_HOOK_PRELAUNCH, NULL, 0) < 0) {
		snprintf(p->early.why, sizeof(p->early.why), "cannot run the pre-launch hooks");
		p->early.failed++;
		finish(p);
	}
}

/* A node: the coordinator said the job's id (NULL: an agent that does
 * not send it); the pre-check hooks now. */
static void
start_hooks(struct prep *p, const char *job)
{
	if (prep_set_job_id(p, job) < 0)
		say(p, "vigil: out of memory: this node's hooks keep its own job id");
	p->step = ST_PRECHECK_HOOKS;
	if (hooks_run(p->hooks, CONFIG_HOOK_PRECHECK, NULL, 0) < 0) {
		snprintf(p->early.why, sizeof(p->early.why), "cannot run the pre-check hooks");
		p->early.failed++;
		finish(p);
	}
}

/* Whether the pre-check let this node go on: no failing check, no error. */
static bool
passed(const char *payload)
{
	cJSON *o = cJSON_Parse(payload), *c;
	const cJSON *checks = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(o, "report"), "checks");
	bool ok = o && !cJSON_GetObjectItemCaseSensitive(o, "error");

	cJSON_ArrayForEach(c, checks)
		if (strcmp(json_str(c, "verdict", "fail"), "fail") == 0)
			ok = false;
	cJSON_Delete(o);
	return ok;
}

/* The pre-check hooks are over: the pre-check, then the staging. */
static void
after_precheck_hooks(struct prep *p)
{
	const char *payload = p->ops.precheck(p->ops.arg);
	int rc;

	if (!payload) {
		p->step = ST_GONE;
		p->ops.go(p->ops.arg, false);
		return;
	}
	/* a node that fails its pre-check anyway does not copy for nothing */
	if (!passed(payload) || p->early.failed) {
		finish(p);
		return;
	}
	if (p->nsets == 0) {
		start_prelaunch(p);
		return;
	}
	rc = start_staging(p);
	if (rc < 0) {
		snprintf(p->stage_error, sizeof(p->stage_error), "cannot start `vigil stage`: %s",
		         strerror(-rc));
		finish(p);
	}
}

static void
merge(struct hooks_result *into, const struct hooks_result *r)
{
	if (!into->why[0] || (r->failed && !into->failed))
		memcpy(into->why, r->why, sizeof(into->why));
	into->ran += r->ran;
	into->failed += r->failed;
	into->warned += r->warned;
	into->seconds += r->seconds;
}

static void
on_hooks_done(void *arg, const struct hooks_result *r)
{
	struct prep *p = arg;

	switch (r->phase) {
	case CONFIG_HOOK_PRECHECK:
		merge(&p->early, r);
		after_precheck_hooks(p);
		break;
	case CONFIG_HOOK_PRELAUNCH:
		merge(&p->early, r);
		finish(p);
		break;
	default:
		p->later_failed = p->later_failed || r->failed > 0;
		if (p->ending && !hooks_busy(p->hooks) && p->ops.ended)
			p->ops.ended(p->ops.arg);
		break;
	}
}

static void
on_hooks_say(void *arg, const char *line)
{
	say(arg, line);
}

int
prep_start(struct prep *p, double now)
{
	p->heard = now;
	p->next_line = now + LINE_EVERY_S;
	p->next_beat = now + p->ro->heartbeat_s;
	if (coordinator(p) && !(p->view = prepview_new(p->o.size, now)))
		return -ENOMEM;
	p->timer = loop_add_timer(p->loop, TICK_MS, on_tick, p);
	if (!p->timer)
		return -ENOMEM;
	if (coordinator(p))
		send_all(p, false);  /* the job's id, which the nodes wait for */
	if (!coordinator(p) && p->o.size > 1) {
		/* Outside Slurm each agent's own id is its pid: the hooks
		 * wait for the coordinator's (one message away). */
		p->step = ST_JOB_ID;
		return 0;
	}
	p->step = ST_PRECHECK_HOOKS;
	return hooks_run(p->hooks, CONFIG_HOOK_PRECHECK, NULL, 0);
}

int
prep_set_job_id(struct prep *p, const char *job_id)
{
	char *id;

	if (!p || !job_id || !*job_id || strcmp(job_id, p->job_id) == 0)
		return 0;
	if (!(id = strdup(job_id)) || hooks_set_job_id(p->hooks, id) < 0) {
		free(id);
		return -ENOMEM;
	}
	free(p->job_id);
	p->job_id = id;
	return 0;
}

/* ---- the payload and the report ----------------------------------------------- */

static void
add_check(cJSON *checks, const char *name, enum verdict v, const char *reason, cJSON *details)
{
	cJSON *c = cJSON_CreateObject();

	cJSON_AddStringToObject(c, "name", name);
	cJSON_AddStringToObject(c, "verdict", verdict_name(v));
	cJSON_AddStringToObject(c, "reason", reason);
	cJSON_AddItemToObject(c, "details", details ? details : cJSON_CreateObject());
	cJSON_AddItemToArray(checks, c);
}

static void
stage_check(const struct prep *p, cJSON *checks)
{
	cJSON *d = cJSON_CreateObject();
	char reason[512], a[32], b[32];

	cJSON_AddNumberToObject(d, "seconds", p->stage_s);
	cJSON_AddNumberToObject(d, "data_bytes", p->data_bytes);
	cJSON_AddNumberToObject(d, "data_files", p->data_files);
	cJSON_AddNumberToObject(d, "copied_bytes", p->copied_bytes);
	cJSON_AddNumberToObject(d, "copied_files", p->copied_files);
	if (p->stage_error[0]) {
		add_check(checks, "stage", VERDICT_FAIL, p->stage_error, d);
		return;
	}
	util_fmt_bytes(p->data_bytes, a, sizeof(a));
	util_fmt_bytes(p->copied_bytes, b, sizeof(b));
	snprintf(reason, sizeof(reason), "%d dataset%s, %s (%s copied) in %.1f s", p->nsets,
	         util_plural(p->nsets), a, b, p->stage_s);
	add_check(checks, "stage", VERDICT_PASS, reason, d);
}

char *
prep_amend_payload(const struct prep *p, const char *payload)
{
	cJSON *o = cJSON_Parse(payload), *report, *checks;
	char reason[64];
	char *text;

	report = cJSON_GetObjectItemCaseSensitive(o, "report");
	checks = cJSON_GetObjectItemCaseSensitive(report, "checks");
	if (!cJSON_IsArray(checks)) {
		cJSON_Delete(o);
		return strdup(payload);  /* no report (the checks could not run): nothing to add */
	}
	if (p->early.ran > 0) {
		snprintf(reason, sizeof(reason), "%d hook%s passed", p->early.ran,
		         util_plural(p->early.ran));
		add_check(checks, "hooks", p->early.failed ? VERDICT_FAIL : p->early.warned ?
		          VERDICT_WARN : VERDICT_PASS, p->early.why[0] ? p->early.why : reason, NULL);
	}
	if (p->stage_tried)
		stage_check(p, checks);
	text = json_print(o, false);
	cJSON_Delete(o);
	return text;
}

cJSON *
prep_report(const struct prep *p)
{
	return p && p->view ? prepview_report(p->view) : NULL;
}

/* ---- later phases ------------------------------------------------------------- */

void
prep_checkpoint(struct prep *p, const char *reason)
{
	char extra[600];
	const char *e[1] = { extra };

	if (!p || !hooks_any(p->hooks, CONFIG_HOOK_CHECKPOINT))
		return;
	snprintf(extra, sizeof(extra), "VIGIL_CKPT_REASON=%s", reason ? reason : "");
	if (hooks_run(p->hooks, CONFIG_HOOK_CHECKPOINT, e, 1) < 0)
		p->later_failed = true;
}

int
prep_end(struct prep *p, const char *state, int code)
{
	char st[64], ec[64];
	const char *e[2] = { st, ec };
	bool requeue = p && code == VIGIL_EXIT_REQUEUE && hooks_any(p->hooks, CONFIG_HOOK_REQUEUE);
	int rc = 0;

	if (!p || (!requeue && !hooks_any(p->hooks, CONFIG_HOOK_END) && !hooks_busy(p->hooks)))
		return 0;
	snprintf(st, sizeof(st), "VIGIL_JOB_STATE=%s", state ? state : "");
	snprintf(ec, sizeof(ec), "VIGIL_JOB_EXIT_CODE=%d", code);
	p->ending = true;
	if (requeue)
		rc = hooks_run(p->hooks, CONFIG_HOOK_REQUEUE, e, 2);
	if (rc == 0 && hooks_any(p->hooks, CONFIG_HOOK_END))
		rc = hooks_run(p->hooks, CONFIG_HOOK_END, e, 2);
	if (rc < 0)
		return rc;
	return hooks_busy(p->hooks) ? 1 : 0;
}

bool
prep_busy(const struct prep *p)
{
	return p && hooks_busy(p->hooks);
}

double
prep_time_left(const struct prep *p)
{
	return p ? hooks_time_left(p->hooks) : 0;
}

int
prep_exit_code(const struct prep *p, int code)
{
	return code == 0 && p && p->later_failed ? VIGIL_EXIT_UNHEALTHY : code;
}

/* ---- the rest ----------------------------------------------------------------- */

static int
take_sets(struct stage_set *sets, char names[][64], const struct run_opts *o, char *why,
          size_t whylen)
{
	for (int i = 0; i < o->nstage && i < STAGE_SETS_MAX; i++)
		if (stage_parse(o->stage[i], &sets[i], names[i], sizeof(names[i]), why, whylen) < 0)
			return -EINVAL;
	return o->nstage < STAGE_SETS_MAX ? o->nstage : STAGE_SETS_MAX;
}

static struct hooks *
make_hooks(const struct run_opts *o, const struct config *cfg, const char *node, int rank,
           const char *job_id, const sigset_t *mask, struct loop *l, const struct hooks_ops *ops,
           const char *const *stage_names, int nsets)
{
	struct hooks_opts ho = {
		.site = cfg->hooks, .nsite = cfg->nhooks, .specs = o->hook, .nspecs = (size_t)o->nhook,
		.timeout_s = o->hook_timeout_s, .coordinator = rank == 0, .node = node, .rank = rank,
		.job_id = job_id, .sigmask = mask, .stage_names = stage_names,
		.nstage_names = nsets > 0 ? (size_t)nsets : 0,
	};

	return hooks_new(&ho, l, ops);
}

struct prep *
prep_new(const struct prep_opts *o, struct loop *l, const struct prep_ops *ops)
{
	struct prep *p = calloc(1, sizeof(*p));
	struct hooks_ops hops = { on_hooks_say, on_hooks_done, p };
	char why[256];
	int n;

	if (!p)
		return NULL;
	p->o = *o;
	p->ro = o->run;
	p->loop = l;
	p->ops = *ops;
	p->node = strdup(o->node ? o->node : "?");
	p->job_id = strdup(o->job_id ? o->job_id : "");
	p->self = strdup(o->self ? o->self : "/proc/self/exe");
	n = take_sets(p->sets, p->names, p->ro, why, sizeof(why));
	for (int i = 0; i < n; i++)
		p->set_names[i] = p->sets[i].name;
	if (!p->node || !p->job_id || !p->self || n < 0 ||
	    !(p->hooks = make_hooks(p->ro, o->cfg, p->node, o->rank, p->job_id, o->sigmask, l,
	                            &hops, p->set_names, n))) {
		prep_free(p);
		errno = n < 0 ? EINVAL : ENOMEM;
		return NULL;
	}
	p->nsets = n;
	return p;
}

void
prep_free(struct prep *p)
{
	if (!p)
		return;
	loop_del_timer(p->loop, p->timer);
	runner_free(p->stager);
	hooks_free(p->hooks);
	prepview_free(p->view);
	/* the retention counts from the job's end; the locks go with the descriptors */
	for (int i = 0; p->staged && i < p->nsets; i++)
		stage_touch(p->ro->stage_dir, &p->sets[i]);
	for (int i = 0; i < p->nholds; i++)
		(void)close(p->holds[i]);
	free(p->node);
	free(p->job_id);
	free(p->self);
	free(p);
}

void
prep_describe(FILE *f, const struct run_opts *o, const struct config *cfg, bool coordinator)
{
	struct stage_set sets[STAGE_SETS_MAX];
	char names[STAGE_SETS_MAX][64], why[256], path[4096];
	struct hooks_ops ops = { NULL, NULL, NULL };
	struct hooks *hs;
	int n = take_sets(sets, names, o, why, sizeof(why));

	for (int i = 0; i < n; i++)
		if (stage_path(o->stage_dir, &sets[i], path, sizeof(path)) == 0)
			fprintf(f, "stage: %s from %s to %s (VIGIL_STAGE_%s), %d files at once, before "
			        "the launch\n", sets[i].name, sets[i].src, path, sets[i].name,
			        o->stage_jobs);
	hs = make_hooks(o, cfg, "?", coordinator ? 0 : 1, "", NULL, NULL, &ops, NULL, 0);
	hooks_describe(hs, f);
	hooks_free(hs);
}

int
prep_setenv(const struct run_opts *o, char *why, size_t whylen)
{
	struct stage_set sets[STAGE_SETS_MAX];
	char names[STAGE_SETS_MAX][64], path[4096], var[80];
	int n = take_sets(sets, names, o, why, whylen);

	if (n < 0)
		return -EINVAL;
	for (int i = 0; i < n; i++) {
		if (stage_path(o->stage_dir, &sets[i], path, sizeof(path)) < 0) {
			snprintf(why, whylen, "--stage-dir %s: the path is too long", o->stage_dir);
			return -EINVAL;
		}
		snprintf(var, sizeof(var), "VIGIL_STAGE_%s", sets[i].name);
		if (setenv(var, path, 1) < 0) {
			snprintf(why, whylen, "cannot set %s: %s", var, strerror(errno));
			return -EINVAL;
		}
	}
	return 0;
}
