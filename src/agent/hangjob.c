/*
 * hangjob.c - a hung training at the coordinator (hangjob.h): the rule,
 * the forensics gathered from every node, what is written of them, and
 * the policy.
 */
#include "autoconf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include <cJSON.h>

#include "vigil.h"
#include "agent/coord.h"
#include "agent/hang.h"
#include "agent/hangjob.h"
#include "agent/jobfiles.h"
#include "agent/node.h"
#include "lib/events.h"
#include "lib/json.h"
#include "lib/log.h"
#include "lib/util.h"
#include "proc/forensics.h"
#include "proc/notify.h"

/* The coordinator's own node is looked at this often (its timing lines need no message). */
#define OWN_LOOK_S 0.5

struct hangjob {
	struct hang *h;
	double own_next;
	bool gathering;
	double deadline;
	struct hang_finding f;
	char why[512];
	cJSON *nodes;       /* the forensics that came, one object per node */
	bool *got;
	int expected, received;
	int hangs;
};

static struct hangjob *
get(struct job *j, double now)
{
	struct hang_opts ho = { j->size, j->o->hang_timeout_s, j->o->hang_silence_s };
	struct hangjob *hj;

	if (j->hang || !j->coord)
		return j->hang;
	hj = calloc(1, sizeof(*hj));
	if (!hj || !(hj->got = calloc((size_t)j->size, sizeof(*hj->got))) ||
	    !(hj->h = hang_new(&ho, now))) {
		if (hj)
			free(hj->got);
		free(hj);
		LOG_ERR("out of memory: no hang detection");
		return NULL;
	}
	j->hang = hj;
	return hj;
}

void
hangjob_attempt(struct job *j, double now)
{
	struct hangjob *hj = get(j, now);

	if (hj)
		hang_attempt(hj->h, now);
}

void
hangjob_beat(struct job *j, int rank, const struct msg_heartbeat *b, double now)
{
	struct hangjob *hj = get(j, now);

	if (hj)
		hang_beat(hj->h, rank, b, now);
}

/* ---- detection -------------------------------------------------------------------- */

static void
ask_forensics(struct job *j, struct hangjob *hj, double now)
{
	struct msg m = { .kind = MSG_COMMAND };
	char *text;

	m.u.command.command = MSG_CMD_FORENSICS;
	text = msg_encode(&m);
	cJSON_Delete(hj->nodes);
	hj->nodes = cJSON_CreateArray();
	memset(hj->got, 0, (size_t)j->size * sizeof(*hj->got));
	hj->expected = hj->received = 0;
	for (int r = 0; text && r < j->size; r++) {
		if (coord_lost(j->coord, r))
			continue;
		if (job_send(j, r, MSG_COMMAND, text) == 0)
			hj->expected++;
	}
	free(text);
	hj->gathering = true;
	hj->deadline = now + FORENSICS_BUDGET_S + HANGJOB_WAIT_S;
}

static void
detected(struct job *j, struct hangjob *hj, double now)
{
	cJSON *d = cJSON_CreateObject();
	char msg[700];

	hj->hangs++;
	hang_describe(&hj->f, hj->why, sizeof(hj->why));
	snprintf(msg, sizeof(msg), "the training looks hung: %s; gathering every node's forensics",
	         hj->why);
	{
		char line[760];

		snprintf(line, sizeof(line), "vigil: %s", msg);
		job_say(j, line);
	}
	cJSON_AddStringToObject(d, "stage", "detected");
	cJSON_AddStringToObject(d, "rule", hj->f.kind == HANG_SILENCE ? "silence" : "iterations");
	cJSON_AddNumberToObject(d, "silent_s", hj->f.silent_s);
	cJSON_AddNumberToObject(d, "timeout_s", hj->f.timeout_s);
	cJSON_AddNumberToObject(d, "iterations", hj->f.max_iters);
	if (hj->f.suspect >= 0) {
		cJSON_AddStringToObject(d, "behind_node", coord_host(j->coord, hj->f.suspect));
		cJSON_AddNumberToObject(d, "behind_iterations", hj->f.max_iters - hj->f.suspect_iters);
	}
	jobfiles_event(j, coord_host(j->coord, j->rank), j->rank, VIGIL_EVENT_HANG,
	               VIGIL_SEVERITY_ERROR, msg, d);
	ask_forensics(j, hj, now);
}

void
hangjob_forensics(struct job *j, int rank, const cJSON *f, double now)
{
	struct hangjob *hj = get(j, now);
	cJSON *o;

	if (!hj || !hj->gathering || rank < 0 || rank >= j->size || hj->got[rank])
		return;
	o = cJSON_Duplicate(f, true);
	if (!o)
		return;
	cJSON_DeleteItemFromObjectCaseSensitive(o, "node");
	cJSON_DeleteItemFromObjectCaseSensitive(o, "rank");
	cJSON_AddStringToObject(o, "node", coord_host(j->coord, rank));
	cJSON_AddNumberToObject(o, "rank", rank);
	cJSON_AddItemToArray(hj->nodes, o);
	hj->got[rank] = true;
	hj->received++;
}

/* ---- what is written, and the policy ------------------------------------------------ */

static enum coord_hang_policy
policy(const struct run_opts *o)
{
	switch (hang_policy(o)) {
	case RUN_ON_HANG_STOP: return COORD_HANG_STOP;
	case RUN_ON_HANG_RESTART: return COORD_HANG_RESTART;
	case RUN_ON_HANG_REQUEUE: return COORD_HANG_REQUEUE;
	default: return COORD_HANG_ALERT;
	}
}

static const char *
policy_name(enum coord_hang_policy p)
{
	static const char *const names[] = { "alert", "stop", "restart", "requeue" };

	return names[p];
}

/* Where the forensics file goes (hangjob.h). */
static void
file_path(const struct job *j, char *buf, size_t len)
{
	if (j->o->report)
		snprintf(buf, len, "%s.hang.json", j->o->report);
	else if (j->o->events)
		snprintf(buf, len, "%s.hang.json", j->o->events);
	else
		snprintf(buf, len, "vigil-hang.%s.json", j->job_id);
}

/* The suspect: the iterations' and the forensics' when they agree, or the one that has one. */
static int
choose_suspect(int by_iters, int by_forensics)
{
	if (by_iters >= 0 && by_forensics >= 0 && by_iters != by_forensics)
		return -1;
	return by_iters >= 0 ? by_iters : by_forensics;
}

static cJSON *
missing_ranks(const struct job *j, const struct hangjob *hj)
{
	cJSON *a = cJSON_CreateArray();

	for (int r = 0; a && r < j->size; r++)
		if (!hj->got[r] && !coord_lost(j->coord, r))
			cJSON_AddItemToArray(a, cJSON_CreateNumber(r));
	return a;
}

/* The forensics document for the file; the report's section is it without the nodes. */
static cJSON *
document(struct job *j, struct hangjob *hj, cJSON *grouped, int suspect, const char *what,
         const char *path)
{
	cJSON *doc = cJSON_CreateObject();
	char ts[32];

	events_timestamp(ts, sizeof(ts));
	cJSON_AddStringToObject(doc, "time", ts);
	cJSON_AddStringToObject(doc, "why", hj->why);
	cJSON_AddNumberToObject(doc, "silent_s", hj->f.silent_s);
	cJSON_AddNumberToObject(doc, "timeout_s", hj->f.timeout_s);
	if (suspect >= 0) {
		cJSON *s = cJSON_AddObjectToObject(doc, "suspect");

		cJSON_AddStringToObject(s, "node", coord_host(j->coord, suspect));
		cJSON_AddNumberToObject(s, "rank", suspect);
	} else {
		cJSON_AddNullToObject(doc, "suspect");
	}
	cJSON_AddStringToObject(doc, "summary", json_str(grouped, "summary", ""));
	cJSON_AddStringToObject(doc, "policy", what);
	cJSON_AddStringToObject(doc, "file", path);
	cJSON_AddItemToObject(doc, "groups",
	                      cJSON_Duplicate(cJSON_GetObjectItem(grouped, "groups"), true));
	cJSON_AddItemToObject(doc, "odd", cJSON_Duplicate(cJSON_GetObjectItem(grouped, "odd"), true));
	cJSON_AddItemToObject(doc, "unread",
	                      cJSON_Duplicate(cJSON_GetObjectItem(grouped, "unread"), true));
	cJSON_AddItemToObject(doc, "missing", missing_ranks(j, hj));
	return doc;
}

static void
notify(struct job *j, const cJSON *details)
{
	char *text;
	pid_t pid;
	int rc;

	if (!j->o->notify || !(text = json_print(details, false)))
		return;
	rc = notify_spawn(j->o->notify, text, &pid);
	if (rc < 0)
		LOG_ERR("cannot run the notifier '%s': %s", j->o->notify, strerror(-rc));
	free(text);
}

static void
conclude(struct job *j, struct hangjob *hj, double now)
{
	enum coord_hang_policy p = policy(j->o);
	int by_forensics = -1, suspect;
	cJSON *grouped = hang_group(hj->nodes, &by_forensics), *doc, *file, *d;
	char path[4400], msg[1200], why[1400];
	char *text;

	hj->gathering = false;
	if (!grouped) {
		LOG_ERR("out of memory: the hang's forensics are not grouped");
		grouped = cJSON_CreateObject();
	}
	suspect = choose_suspect(hj->f.suspect, by_forensics);
	file_path(j, path, sizeof(path));
	doc = document(j, hj, grouped, suspect, policy_name(p), path);
	file = cJSON_Duplicate(doc, true);
	cJSON_AddItemToObject(file, "nodes", hj->nodes);
	hj->nodes = NULL;
	text = json_print(file, true);
	if (!text || util_write_atomic_str(path, text, 0644) < 0)
		LOG_ERR("cannot write the hang's forensics to %s", path);
	free(text);
	cJSON_Delete(file);
	snprintf(msg, sizeof(msg), "hang: %.600s; %s; forensics in %.300s",
	         json_str(grouped, "summary", ""),
	         suspect >= 0 ? "the evidence singles out" : "nobody singled out", path);
	if (suspect >= 0)
		snprintf(msg + strlen(msg), sizeof(msg) - strlen(msg), " (suspect %s, rank %d)",
		         coord_host(j->coord, suspect), suspect);
	snprintf(why, sizeof(why), "vigil: %.1200s", msg);
	job_say(j, why);
	d = cJSON_Duplicate(doc, true);
	cJSON_AddStringToObject(d, "stage", "forensics");
	notify(j, d);
	jobfiles_event(j, suspect >= 0 ? coord_host(j->coord, suspect) : coord_host(j->coord, j->rank),
	               suspect >= 0 ? suspect : j->rank, VIGIL_EVENT_HANG, VIGIL_SEVERITY_ERROR,
	               msg, d);
	cJSON_Delete(j->hang_report);
	j->hang_report = doc;
	cJSON_AddNumberToObject(doc, "hangs", hj->hangs);
	cJSON_Delete(grouped);
	if (p == COORD_HANG_REQUEUE)
		snprintf(why, sizeof(why), "the training hung (%.400s): no checkpoint was taken, as a hung "
		         "collective cannot save; the job resumes from its last checkpoint", hj->why);
	else
		snprintf(why, sizeof(why), "the training hung (%.400s)", hj->why);
	cJSON_AddStringToObject(doc, "reason", why);
	coord_hang(j->coord, suspect, p, why, now);
}

long
hangjob_tick(struct job *j, double now)
{
	struct hangjob *hj;
	struct msg_heartbeat b;

	if (!j->coord || j->phase != PH_RUN || !(hj = get(j, now)) || !hang_enabled(hj->h))
		return -1;
	if (hj->gathering) {
		if (hj->received >= hj->expected || now >= hj->deadline)
			conclude(j, hj, now);
		return (long)(OWN_LOOK_S * 1000);
	}
	if (coord_phase(j->coord) != COORD_RUNNING)
		return -1;
	if (j->node && now >= hj->own_next) {
		hj->own_next = now + OWN_LOOK_S;
		node_progress(j->node, &b);
		hang_beat(hj->h, j->rank, &b, now);
	}
	if (hang_check(hj->h, now, &hj->f) != HANG_NONE)
		detected(j, hj, now);
	/* a hung training wakes nothing: the loop comes back for it */
	return (long)(OWN_LOOK_S * 1000);
}

void
hangjob_free(struct job *j)
{
	struct hangjob *hj = j->hang;

	if (!hj)
		return;
	hang_free(hj->h);
	cJSON_Delete(hj->nodes);
	cJSON_Delete(j->hang_report);
	j->hang_report = NULL;
	free(hj->got);
	free(hj);
	j->hang = NULL;
}
