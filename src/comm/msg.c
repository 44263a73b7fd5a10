/*
 * msg.c - encoding and decoding the agents' messages.
 *
 * The wire form of each kind is one JSON object:
 *   plan     {"go", "exit_code"?, "message"?, "master_addr"?, "master_port"?,
 *             "job", "finalize", "nudge"?, "nodes": [{"host", "addr", "slots"}],
 *             "members": [r], "spares"?: [r]}
 *            or a header {"go": true, "job", "finalize", "nudge"?, "bcast": LEN}: the
 *            plan follows as a broadcast of LEN bytes
 *   result   {"node", "attempt", "idle", "seconds", "exit_code", "signal"?,
 *             "agent_signal"?, "cancelled"?, "error"?, "checkpoint"?: {"confirmed", "why"}, "hint"?,
 *             "stderr_tail": [lines], "output_lost"?}
 *   command  {"command": "stop"|"checkpoint"|"restart"|"perf", "reason"?,
 *             "attempt"?, "master_addr"?, "master_port"?, "members"?: [r]}
 *   final    {"exit_code", "state", "finalize", "abort"?, "hold"?, "cycles"}
 *   note     {"node", "signal"?, "findings": [{"what", "device", "verdict", "evidence"}],
 *             "usage"?: {...}, "forensics"?: {...}}
 *   suspect  {"node", "coordinator", "silent"}
 *   prep     {"node", "step", "ok", "error"?, "copied_bytes", "copied_files",
 *             "copy_bytes", "copy_files", "data_bytes", "data_files", "seconds"}
 *            or, from the coordinator, {"go", "job"?}
 *   heartbeat {} or {"trains", "saving", "lines", "iters", "quiet", "out_quiet", "e2e"}
 */
#include "autoconf.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "comm/msg.h"
#include "lib/json.h"
#include "lib/util.h"

/* Bounds on what a message may carry; anything past them is malformed. */
#define STATUS_MAX 255          /* exit statuses, vigil's codes included */
#define SECONDS_MAX 1e9
#define PORT_MAX 65535
#define TAIL_MAX 1000           /* stderr lines in a result */
#define FINDINGS_MAX 100000
#define SLOTS_MAX 1000000
#define BYTES_MAX 9007199254740992.0  /* 2^53: counts of bytes stay exact in a double */

static const char *const command_names[] = {
	[MSG_CMD_STOP] = "stop",
	[MSG_CMD_CHECKPOINT] = "checkpoint",
	[MSG_CMD_RESTART] = "restart",
	[MSG_CMD_PERF] = "perf",
	[MSG_CMD_FORENSICS] = "forensics",
};

const char *
msg_kind_name(enum msg_kind kind)
{
	switch (kind) {
	case MSG_PLAN: return "plan";
	case MSG_RESULT: return "result";
	case MSG_COMMAND: return "command";
	case MSG_FINAL: return "final";
	case MSG_HEARTBEAT: return "heartbeat";
	case MSG_NOTE: return "note";
	case MSG_SUSPECT: return "suspect";
	case MSG_PREP: return "prep";
	case MSG_BYE: return "bye";
	}
	return "?";
}

const char *
msg_command_name(enum msg_command_kind c)
{
	return (unsigned)c < sizeof(command_names) / sizeof(command_names[0]) ? command_names[c]
	                                                                        : "?";
}

/* ---- encoding ----------------------------------------------------------- */

/* Encoders note a failed allocation in *OK and go on; the caller checks once. */
static void
put_str(cJSON *o, const char *key, const char *s, bool *ok)
{
	if (s && !cJSON_AddStringToObject(o, key, s))
		*ok = false;
}

static void
put_num(cJSON *o, const char *key, double v, bool *ok)
{
	if (!cJSON_AddNumberToObject(o, key, v))
		*ok = false;
}

static void
put_bool(cJSON *o, const char *key, bool v, bool *ok)
{
	if (!cJSON_AddBoolToObject(o, key, v))
		*ok = false;
}

static void
put_ranks(cJSON *o, const char *key, const int *v, int n, bool *ok)
{
	cJSON *a = cJSON_AddArrayToObject(o, key);

	if (!a) {
		*ok = false;
		return;
	}
	for (int i = 0; i < n; i++)
		if (!cJSON_AddItemToArray(a, cJSON_CreateNumber(v[i])))
			*ok = false;
}

static void
encode_plan(cJSON *o, const struct msg_plan *p, bool *ok)
{
	cJSON *nodes;

	put_bool(o, "go", p->go, ok);
	if (p->bcast > 0) {
		put_str(o, "job", p->job ? p->job : "", ok);
		put_bool(o, "finalize", p->finalize, ok);
		put_num(o, "bcast", (double)p->bcast, ok);
		if (p->nudge)
			put_str(o, "nudge", p->nudge, ok);
		return;
	}
	if (!p->go) {
		put_num(o, "exit_code", p->exit_code, ok);
		put_str(o, "message", p->message, ok);
	} else {
		put_str(o, "master_addr", p->master_addr, ok);
		put_num(o, "master_port", p->master_port, ok);
	}
	put_str(o, "job", p->job ? p->job : "", ok);
	put_bool(o, "finalize", p->finalize, ok);
	if (p->nudge)
		put_str(o, "nudge", p->nudge, ok);
	nodes = cJSON_AddArrayToObject(o, "nodes");
	if (!nodes)
		*ok = false;
	for (int i = 0; nodes && i < p->nnodes; i++) {
		cJSON *n = cJSON_CreateObject();

		if (!n || !cJSON_AddItemToArray(nodes, n)) {
			cJSON_Delete(n);
			*ok = false;
			break;
		}
		put_str(n, "host", p->nodes[i].host ? p->nodes[i].host : "?", ok);
		put_str(n, "addr", p->nodes[i].addr ? p->nodes[i].addr : "127.0.0.1", ok);
		put_num(n, "slots", p->nodes[i].slots, ok);
	}
	put_ranks(o, "members", p->members, p->nmembers, ok);
	if (p->nspares > 0)
		put_ranks(o, "spares", p->spares, p->nspares, ok);
}

static void
encode_result(cJSON *o, const struct msg_result *r, bool *ok)
{
	cJSON *tail;

	put_str(o, "node", r->node ? r->node : "?", ok);
	put_num(o, "attempt", r->attempt, ok);
	put_bool(o, "idle", r->idle, ok);
	put_num(o, "seconds", r->seconds, ok);
	put_num(o, "exit_code", r->exit_code, ok);
	if (r->signal)
		put_num(o, "signal", r->signal, ok);
	if (r->agent_signal)
		put_num(o, "agent_signal", r->agent_signal, ok);
	if (r->cancelled)
		put_bool(o, "cancelled", true, ok);
	put_str(o, "error", r->error, ok);
	put_str(o, "hint", r->hint, ok);
	if (r->ckpt) {
		cJSON *ck = cJSON_AddObjectToObject(o, "checkpoint");

		if (!ck)
			*ok = false;
		else {
			put_bool(ck, "confirmed", r->ckpt_confirmed, ok);
			put_str(ck, "why", r->ckpt_why ? r->ckpt_why : "", ok);
		}
	}
	tail = cJSON_AddArrayToObject(o, "stderr_tail");
	if (!tail)
		*ok = false;
	for (int i = 0; tail && i < r->ntail; i++)
		if (!cJSON_AddItemToArray(tail, cJSON_CreateString(r->tail[i] ? r->tail[i] : "")))
			*ok = false;
	if (r->output_lost > 0)
		put_num(o, "output_lost", r->output_lost, ok);
}

static void
encode_command(cJSON *o, const struct msg_command *c, bool *ok)
{
	put_str(o, "command", msg_command_name(c->command), ok);
	put_str(o, "reason", c->reason, ok);
	if (c->command == MSG_CMD_RESTART) {
		put_num(o, "attempt", c->attempt, ok);
		put_str(o, "master_addr", c->master_addr ? c->master_addr : "127.0.0.1", ok);
		put_num(o, "master_port", c->master_port, ok);
		put_ranks(o, "members", c->members, c->nmembers, ok);
	}
}

static void
encode_final(cJSON *o, const struct msg_final *f, bool *ok)
{
	put_num(o, "exit_code", f->exit_code, ok);
	put_str(o, "state", f->state ? f->state : "", ok);
	put_bool(o, "finalize", f->finalize, ok);
	if (f->abort)
		put_bool(o, "abort", true, ok);
	if (f->hold > 0)
		put_num(o, "hold", f->hold, ok);
	put_num(o, "cycles", f->cycles, ok);
}

static void
encode_note(cJSON *o, const struct msg_note *n, bool *ok)
{
	cJSON *arr;

	put_str(o, "node", n->node ? n->node : "?", ok);
	if (n->signal)
		put_num(o, "signal", n->signal, ok);
	arr = cJSON_AddArrayToObject(o, "findings");
	if (!arr)
		*ok = false;
	for (int i = 0; arr && i < n->nfindings; i++) {
		const struct finding *f = &n->findings[i];
		cJSON *x = cJSON_CreateObject();

		if (!x || !cJSON_AddItemToArray(arr, x)) {
			cJSON_Delete(x);
			*ok = false;
			break;
		}
		put_str(x, "what", f->what, ok);
		put_str(x, "device", f->device, ok);
		put_str(x, "verdict", verdict_name(f->verdict), ok);
		put_str(x, "evidence", f->evidence, ok);
	}
	if (n->usage) {
		cJSON *u = cJSON_Duplicate(n->usage, true);

		if (!u || !cJSON_AddItemToObject(o, "usage", u)) {
			cJSON_Delete(u);
			*ok = false;
		}
	}
	if (n->forensics) {
		cJSON *u = cJSON_Duplicate(n->forensics, true);

		if (!u || !cJSON_AddItemToObject(o, "forensics", u)) {
			cJSON_Delete(u);
			*ok = false;
		}
	}
}

static void
encode_heartbeat(cJSON *o, const struct msg_heartbeat *b, bool *ok)
{
	if (!b->progress)
		return;
	put_bool(o, "trains", b->trains, ok);
	put_bool(o, "saving", b->saving, ok);
	put_num(o, "lines", b->lines, ok);
	put_num(o, "iters", b->iters, ok);
	put_num(o, "quiet", b->quiet_s, ok);
	put_num(o, "out_quiet", b->out_quiet_s, ok);
	put_num(o, "e2e", b->e2e_ms, ok);
}

static void
encode_prep(cJSON *o, const struct msg_prep *p, bool *ok)
{
	if (!p->node) {
		put_bool(o, "go", p->go, ok);
		put_str(o, "job", p->job, ok);
		return;
	}
	put_str(o, "node", p->node, ok);
	put_str(o, "step", p->step ? p->step : "done", ok);
	put_bool(o, "ok", p->ok, ok);
	put_str(o, "error", p->error, ok);
	put_num(o, "copied_bytes", p->copied_bytes, ok);
	put_num(o, "copied_files", p->copied_files, ok);
	put_num(o, "copy_bytes", p->copy_bytes, ok);
	put_num(o, "copy_files", p->copy_files, ok);
	put_num(o, "data_bytes", p->data_bytes, ok);
	put_num(o, "data_files", p->data_files, ok);
	put_num(o, "seconds", p->seconds, ok);
}

char *
msg_encode(const struct msg *m)
{
	cJSON *o = cJSON_CreateObject();
	bool ok = o != NULL;
	char *text = NULL;

	if (!o) {
		errno = ENOMEM;
		return NULL;
	}
	switch (m->kind) {
	case MSG_PLAN: encode_plan(o, &m->u.plan, &ok); break;
	case MSG_RESULT: encode_result(o, &m->u.result, &ok); break;
	case MSG_COMMAND: encode_command(o, &m->u.command, &ok); break;
	case MSG_FINAL: encode_final(o, &m->u.final, &ok); break;
	case MSG_NOTE: encode_note(o, &m->u.note, &ok); break;
	case MSG_SUSPECT:
		put_str(o, "node", m->u.suspect.node ? m->u.suspect.node : "?", &ok);
		put_num(o, "coordinator", m->u.suspect.coordinator, &ok);
		put_num(o, "silent", m->u.suspect.silent, &ok);
		break;
	case MSG_PREP: encode_prep(o, &m->u.prep, &ok); break;
	case MSG_HEARTBEAT: encode_heartbeat(o, &m->u.heartbeat, &ok); break;
	case MSG_BYE: break;
	default:
		cJSON_Delete(o);
		errno = EINVAL;
		return NULL;
	}
	if (ok)
		text = json_print(o, false);
	cJSON_Delete(o);
	if (!text)
		errno = ENOMEM;
	return text;
}

/* ---- decoding ----------------------------------------------------------- */

/*
 * Decoders return 0, -EINVAL (malformed) or -ENOMEM.  Optional members
 * use the strict getters too: absent is fine (-ENOENT), present but wrong
 * is malformed.
 */

/* A copy of string member KEY into *OUT; absent: *OUT stays NULL unless REQUIRED. */
static int
get_strdup(const cJSON *o, const char *key, bool required, const char **out)
{
	const char *s;
	int rc = json_get_str(o, key, &s);

	if (rc == -ENOENT && !required)
		return 0;
	if (rc < 0)
		return -EINVAL;
	*out = strdup(s);
	return *out ? 0 : -ENOMEM;
}

/*
 * Required string member KEY into BUF (LEN bytes), as valid UTF-8 cut at a
 * character boundary: so that what is decoded encodes to the same text
 * and decodes again to the same value.
 */
static int
get_text(const cJSON *o, const char *key, char *buf, size_t len)
{
	const char *s;
	char *fixed;
	size_t n;

	if (json_get_str(o, key, &s) < 0)
		return -EINVAL;
	fixed = util_utf8_repair(s, strlen(s));
	if (!fixed)
		return -ENOMEM;
	n = strlen(fixed);
	if (n >= len) {
		n = len - 1;
		while (n > 0 && ((unsigned char)fixed[n] & 0xc0) == 0x80)
			n--;
	}
	memcpy(buf, fixed, n);
	buf[n] = '\0';
	free(fixed);
	return 0;
}

static int
get_int(const cJSON *o, const char *key, long long min, long long max, bool required,
        int *out)
{
	long long v;
	int rc = json_get_int(o, key, min, max, &v);

	if (rc == -ENOENT && !required)
		return 0;
	if (rc < 0)
		return -EINVAL;
	*out = (int)v;
	return 0;
}

static int
get_bool(const cJSON *o, const char *key, bool required, bool *out)
{
	int rc = json_get_bool(o, key, out);

	if (rc == -ENOENT && !required)
		return 0;
	return rc < 0 ? -EINVAL : 0;
}

static int
get_ranks(const cJSON *o, const char *key, int nranks, int **out, int *n)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, key), *x;
	int i = 0, count;

	if (!cJSON_IsArray(a))
		return -EINVAL;
	count = cJSON_GetArraySize(a);
	if (count > nranks)
		return -EINVAL;
	*out = calloc(count > 0 ? (size_t)count : 1, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	cJSON_ArrayForEach(x, a) {
		if (!cJSON_IsNumber(x) || x->valuedouble < 0 || x->valuedouble >= nranks ||
		    x->valuedouble != (double)(int)x->valuedouble)
			return -EINVAL;
		(*out)[i++] = (int)x->valuedouble;
	}
	*n = count;
	return 0;
}

static int
decode_plan(const cJSON *o, int nranks, struct msg_plan *p)
{
	const cJSON *nodes = cJSON_GetObjectItemCaseSensitive(o, "nodes"), *x;
	long long bcast;
	int rc, i = 0;

	rc = json_get_int(o, "bcast", 1, INT_MAX, &bcast);
	if (rc == -EINVAL)
		return rc;
	if (rc == 0) {
		/* a header: the plan follows as a broadcast */
		p->bcast = (long)bcast;
		if ((rc = get_bool(o, "go", true, &p->go)) < 0 ||
		    (rc = get_strdup(o, "job", true, &p->job)) < 0 ||
		    (rc = get_bool(o, "finalize", true, &p->finalize)) < 0 ||
		    (rc = get_strdup(o, "nudge", false, &p->nudge)) < 0)
			return rc;
		return p->go ? 0 : -EINVAL;
	}
	if ((rc = get_bool(o, "go", true, &p->go)) < 0 ||
	    (rc = get_int(o, "exit_code", 0, STATUS_MAX, !p->go, &p->exit_code)) < 0 ||
	    (rc = get_strdup(o, "message", false, &p->message)) < 0 ||
	    (rc = get_strdup(o, "master_addr", p->go, &p->master_addr)) < 0 ||
	    (rc = get_int(o, "master_port", 0, PORT_MAX, p->go, &p->master_port)) < 0 ||
	    (rc = get_strdup(o, "job", true, &p->job)) < 0 ||
	    (rc = get_bool(o, "finalize", true, &p->finalize)) < 0 ||
	    (rc = get_strdup(o, "nudge", false, &p->nudge)) < 0)
		return rc;
	if (!cJSON_IsArray(nodes) || cJSON_GetArraySize(nodes) > nranks)
		return -EINVAL;
	p->nnodes = cJSON_GetArraySize(nodes);
	p->nodes = calloc(p->nnodes > 0 ? (size_t)p->nnodes : 1, sizeof(*p->nodes));
	if (!p->nodes)
		return -ENOMEM;
	cJSON_ArrayForEach(x, nodes) {
		struct msg_node *n = &p->nodes[i++];

		if ((rc = get_strdup(x, "host", true, &n->host)) < 0 ||
		    (rc = get_strdup(x, "addr", true, &n->addr)) < 0 ||
		    (rc = get_int(x, "slots", 0, SLOTS_MAX, true, &n->slots)) < 0)
			return rc;
	}
	rc = get_ranks(o, "members", p->nnodes, &p->members, &p->nmembers);
	if (rc < 0 || !cJSON_GetObjectItemCaseSensitive(o, "spares"))
		return rc;
	return get_ranks(o, "spares", p->nnodes, &p->spares, &p->nspares);
}

static int
decode_result(const cJSON *o, struct msg_result *r)
{
	const cJSON *tail = cJSON_GetObjectItemCaseSensitive(o, "stderr_tail"), *x, *ck;
	double secs;
	int rc, i = 0;

	if ((rc = get_strdup(o, "node", true, &r->node)) < 0 ||
	    (rc = get_int(o, "attempt", 0, MSG_RANK_MAX, true, &r->attempt)) < 0 ||
	    (rc = get_bool(o, "idle", true, &r->idle)) < 0 ||
	    (rc = get_int(o, "exit_code", 0, STATUS_MAX, true, &r->exit_code)) < 0 ||
	    (rc = get_int(o, "signal", 0, NSIG - 1, false, &r->signal)) < 0 ||
	    (rc = get_int(o, "agent_signal", 0, NSIG - 1, false, &r->agent_signal)) < 0 ||
	    (rc = get_bool(o, "cancelled", false, &r->cancelled)) < 0 ||
	    (rc = get_strdup(o, "error", false, &r->error)) < 0 ||
	    (rc = get_strdup(o, "hint", false, &r->hint)) < 0)
		return rc;
	if (json_get_num(o, "seconds", 0, SECONDS_MAX, &secs) < 0)
		return -EINVAL;
	r->seconds = secs;
	rc = json_get_num(o, "output_lost", 0, BYTES_MAX, &r->output_lost);
	if (rc < 0 && rc != -ENOENT)
		return -EINVAL;
	ck = cJSON_GetObjectItemCaseSensitive(o, "checkpoint");
	if (ck) {
		r->ckpt = true;
		if ((rc = get_bool(ck, "confirmed", true, &r->ckpt_confirmed)) < 0 ||
		    (rc = get_strdup(ck, "why", true, &r->ckpt_why)) < 0)
			return rc;
	}
	if (!cJSON_IsArray(tail) || cJSON_GetArraySize(tail) > TAIL_MAX)
		return -EINVAL;
	r->ntail = cJSON_GetArraySize(tail);
	r->tail = calloc(r->ntail > 0 ? (size_t)r->ntail : 1, sizeof(*r->tail));
	if (!r->tail)
		return -ENOMEM;
	cJSON_ArrayForEach(x, tail) {
		if (!cJSON_IsString(x))
			return -EINVAL;
		if (!(r->tail[i++] = strdup(x->valuestring)))
			return -ENOMEM;
	}
	return 0;
}

static int
decode_command(const cJSON *o, int nranks, struct msg_command *c)
{
	const char *name;
	size_t k;
	int rc;

	if (json_get_str(o, "command", &name) < 0)
		return -EINVAL;
	for (k = 0; k < sizeof(command_names) / sizeof(command_names[0]); k++)
		if (strcmp(name, command_names[k]) == 0)
			break;
	if (k == sizeof(command_names) / sizeof(command_names[0]))
		return -EINVAL;
	c->command = (enum msg_command_kind)k;
	if ((rc = get_strdup(o, "reason", false, &c->reason)) < 0)
		return rc;
	if (c->command != MSG_CMD_RESTART)
		return 0;
	if ((rc = get_int(o, "attempt", 1, MSG_RANK_MAX, true, &c->attempt)) < 0 ||
	    (rc = get_strdup(o, "master_addr", true, &c->master_addr)) < 0 ||
	    (rc = get_int(o, "master_port", 0, PORT_MAX, true, &c->master_port)) < 0)
		return rc;
	return get_ranks(o, "members", nranks, &c->members, &c->nmembers);
}

static int
decode_final(const cJSON *o, struct msg_final *f)
{
	double hold = 0;
	int rc;

	if ((rc = get_int(o, "exit_code", 0, STATUS_MAX, true, &f->exit_code)) < 0 ||
	    (rc = get_strdup(o, "state", true, &f->state)) < 0 ||
	    (rc = get_bool(o, "finalize", true, &f->finalize)) < 0 ||
	    (rc = get_bool(o, "abort", false, &f->abort)) < 0 ||
	    (rc = get_int(o, "cycles", 0, 1 << 30, true, &f->cycles)) < 0)
		return rc;
	rc = json_get_num(o, "hold", 0, SECONDS_MAX, &hold);
	if (rc == -EINVAL)
		return rc;
	f->hold = hold;
	return 0;
}

/* O's object KEY, when there, copied into *OUT: 0, -EINVAL when not an object, -ENOMEM. */
static int
dup_object(const cJSON *o, const char *key, cJSON **out)
{
	const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);

	if (!x)
		return 0;
	if (!cJSON_IsObject(x))
		return -EINVAL;
	*out = cJSON_Duplicate(x, true);
	return *out ? 0 : -ENOMEM;
}

static int
decode_note(const cJSON *o, struct msg_note *n)
{
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(o, "findings"), *x;
	int rc, i = 0;

	if ((rc = get_strdup(o, "node", true, &n->node)) < 0 ||
	    (rc = get_int(o, "signal", 1, NSIG - 1, false, &n->signal)) < 0)
		return rc;
	if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) > FINDINGS_MAX)
		return -EINVAL;
	n->nfindings = cJSON_GetArraySize(arr);
	n->findings = calloc(n->nfindings > 0 ? (size_t)n->nfindings : 1, sizeof(*n->findings));
	if (!n->findings)
		return -ENOMEM;
	cJSON_ArrayForEach(x, arr) {
		struct finding *f = &n->findings[i++];
		const char *v;

		if ((rc = get_text(x, "what", f->what, sizeof(f->what))) < 0 ||
		    (rc = get_text(x, "device", f->device, sizeof(f->device))) < 0 ||
		    (rc = get_text(x, "evidence", f->evidence, sizeof(f->evidence))) < 0)
			return rc;
		if (json_get_str(x, "verdict", &v) < 0 || verdict_parse(v, &f->verdict) < 0)
			return -EINVAL;
	}
	/* their values are read, each checked, where they are used */
	if ((rc = dup_object(o, "usage", &n->usage)) < 0)
		return rc;
	return dup_object(o, "forensics", &n->forensics);
}

/* A heartbeat's progress, all or nothing: {} is a bare heartbeat. */
static int
decode_heartbeat(const cJSON *o, struct msg_heartbeat *b)
{
	if (!cJSON_GetObjectItemCaseSensitive(o, "lines"))
		return 0;
	if (json_get_bool(o, "trains", &b->trains) < 0 ||
	    json_get_bool(o, "saving", &b->saving) < 0 ||
	    json_get_num(o, "lines", 0, BYTES_MAX, &b->lines) < 0 ||
	    json_get_num(o, "iters", 0, BYTES_MAX, &b->iters) < 0 ||
	    json_get_num(o, "quiet", -1, SECONDS_MAX, &b->quiet_s) < 0 ||
	    json_get_num(o, "out_quiet", -1, SECONDS_MAX, &b->out_quiet_s) < 0 ||
	    json_get_num(o, "e2e", 0, SECONDS_MAX, &b->e2e_ms) < 0)
		return -EINVAL;
	b->progress = true;
	return 0;
}

static int
decode_suspect(const cJSON *o, int nranks, struct msg_suspect *sp)
{
	int rc;

	if ((rc = get_strdup(o, "node", true, &sp->node)) < 0 ||
	    (rc = get_int(o, "coordinator", 0, nranks - 1, true, &sp->coordinator)) < 0)
		return rc;
	return json_get_num(o, "silent", 0, SECONDS_MAX, &sp->silent) < 0 ? -EINVAL : 0;
}

#define SIZE_MAX_BYTES 1e18  /* bytes and files a staging may count */

static int
decode_prep(const cJSON *o, struct msg_prep *p)
{
	const char *step;
	int rc;

	if (!cJSON_GetObjectItemCaseSensitive(o, "node")) {
		if ((rc = get_bool(o, "go", true, &p->go)) < 0)
			return rc;
		return get_strdup(o, "job", false, &p->job);
	}
	if ((rc = get_strdup(o, "node", true, &p->node)) < 0 ||
	    (rc = get_bool(o, "ok", true, &p->ok)) < 0 ||
	    (rc = get_strdup(o, "error", false, &p->error)) < 0)
		return rc;
	if (json_get_str(o, "step", &step) < 0 ||
	    (strcmp(step, "hooks") && strcmp(step, "staging") && strcmp(step, "done")))
		return -EINVAL;
	p->step = strdup(step);
	if (!p->step)
		return -ENOMEM;
	if (json_get_num(o, "copied_bytes", 0, SIZE_MAX_BYTES, &p->copied_bytes) < 0 ||
	    json_get_num(o, "copied_files", 0, SIZE_MAX_BYTES, &p->copied_files) < 0 ||
	    json_get_num(o, "copy_bytes", 0, SIZE_MAX_BYTES, &p->copy_bytes) < 0 ||
	    json_get_num(o, "copy_files", 0, SIZE_MAX_BYTES, &p->copy_files) < 0 ||
	    json_get_num(o, "data_bytes", 0, SIZE_MAX_BYTES, &p->data_bytes) < 0 ||
	    json_get_num(o, "data_files", 0, SIZE_MAX_BYTES, &p->data_files) < 0 ||
	    json_get_num(o, "seconds", 0, SECONDS_MAX, &p->seconds) < 0)
		return -EINVAL;
	return 0;
}

int
msg_decode(enum msg_kind kind, const char *text, int nranks, struct msg *out)
{
	cJSON *o;
	int rc;

	memset(out, 0, sizeof(*out));
	out->kind = kind;
	if (!text || nranks < 1)
		return -EINVAL;
	o = cJSON_Parse(text);
	if (!cJSON_IsObject(o)) {
		cJSON_Delete(o);
		return -EINVAL;
	}
	switch (kind) {
	case MSG_PLAN: rc = decode_plan(o, nranks, &out->u.plan); break;
	case MSG_RESULT: rc = decode_result(o, &out->u.result); break;
	case MSG_COMMAND: rc = decode_command(o, nranks, &out->u.command); break;
	case MSG_FINAL: rc = decode_final(o, &out->u.final); break;
	case MSG_NOTE: rc = decode_note(o, &out->u.note); break;
	case MSG_SUSPECT: rc = decode_suspect(o, nranks, &out->u.suspect); break;
	case MSG_PREP: rc = decode_prep(o, &out->u.prep); break;
	case MSG_HEARTBEAT: rc = decode_heartbeat(o, &out->u.heartbeat); break;
	case MSG_BYE: rc = 0; break;
	default: rc = -EINVAL; break;
	}
	cJSON_Delete(o);
	if (rc < 0)
		msg_clear(out);
	return rc;
}

/* The strings are const for encoders' sake; a decoded message owns them. */
static void
xfree(const void *p)
{
	free((void *)p);
}

static void
free_strv(const char **v, int n)
{
	for (int i = 0; v && i < n; i++)
		xfree(v[i]);
	free(v);
}

void
msg_clear(struct msg *m)
{
	switch (m->kind) {
	case MSG_PLAN:
		xfree(m->u.plan.message);
		xfree(m->u.plan.master_addr);
		xfree(m->u.plan.job);
		xfree(m->u.plan.nudge);
		for (int i = 0; m->u.plan.nodes && i < m->u.plan.nnodes; i++) {
			xfree(m->u.plan.nodes[i].host);
			xfree(m->u.plan.nodes[i].addr);
		}
		free(m->u.plan.nodes);
		free(m->u.plan.members);
		free(m->u.plan.spares);
		break;
	case MSG_RESULT:
		xfree(m->u.result.node);
		xfree(m->u.result.error);
		xfree(m->u.result.ckpt_why);
		xfree(m->u.result.hint);
		free_strv(m->u.result.tail, m->u.result.ntail);
		break;
	case MSG_COMMAND:
		xfree(m->u.command.reason);
		xfree(m->u.command.master_addr);
		free(m->u.command.members);
		break;
	case MSG_FINAL:
		xfree(m->u.final.state);
		break;
	case MSG_NOTE:
		xfree(m->u.note.node);
		free(m->u.note.findings);
		cJSON_Delete(m->u.note.usage);
		cJSON_Delete(m->u.note.forensics);
		break;
	case MSG_SUSPECT:
		xfree(m->u.suspect.node);
		break;
	case MSG_PREP:
		xfree(m->u.prep.node);
		xfree(m->u.prep.step);
		xfree(m->u.prep.error);
		xfree(m->u.prep.job);
		break;
	case MSG_HEARTBEAT:
	case MSG_BYE:
		break;
	}
	memset(m, 0, sizeof(*m));
}
