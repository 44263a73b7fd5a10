/*
 * hooks.c - lifecycle scripts, one phase at a time, each hook after the
 * other, under runner.h.
 */
#include "autoconf.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/opts.h"
#include "lib/loop.h"
#include "lib/util.h"
#include "prep/hooks.h"
#include "proc/runner.h"
#include "proc/trust.h"

extern char **environ;

#define EXTRA_MAX 16
#define LAST_LINE_MAX 200

/* A phase asked for, waiting or running. */
struct pending {
	int phase;
	char *extra[EXTRA_MAX];
	size_t nextra;
};

struct hooks {
	struct hooks_opts o;
	struct loop *loop;
	struct hooks_ops ops;
	char *node, *job_id;
	struct config_hook list[HOOKS_MAX];
	size_t n;

	struct pending queue[8];       /* [0] runs */
	size_t nqueue;
	size_t next;                   /* the next hook of the running phase */
	struct runner *r;
	const struct config_hook *cur;
	char last[LAST_LINE_MAX];      /* the running hook's last line of output */
	struct hooks_result res;
	bool running;                  /* queue[0]'s hooks run */
	double started;
	char **envp;
	bool staged;                   /* VIGIL_STAGE_* may be shown */
};

/* ---- the spec of --hook ------------------------------------------------------- */

static int
phase_of(const char *s, size_t len)
{
	for (int i = 0; i < CONFIG_HOOK_NPHASES; i++)
		if (strlen(config_hook_phase_names[i]) == len &&
		    strncmp(s, config_hook_phase_names[i], len) == 0)
			return i;
	return -1;
}

/* The three kinds of attribute: each may be given once. */
enum { ATTR_WHERE = 1, ATTR_ON_FAILURE = 2, ATTR_TIMEOUT = 4 };

/* One ATTR of a spec into H; SEEN: the kinds given before it, and its
 * own added.  0 or -EINVAL (an unknown word, or a kind given twice, which
 * would leave the hook to whichever came last: coordinator:all). */
static int
take_attr(const char *a, size_t len, struct config_hook *h, unsigned *seen, char *why,
          size_t whylen)
{
	static const char *const kinds[] = { "", "where it runs (all or coordinator)",
		"what a failure does (fail or warn)", "", "its timeout" };
	char word[64];
	unsigned kind;
	double d;

	if (len == 0 || len >= sizeof(word)) {
		snprintf(why, whylen, "an empty or overlong attribute");
		return -EINVAL;
	}
	memcpy(word, a, len);
	word[len] = '\0';
	if (strcmp(word, "all") == 0 || strcmp(word, "coordinator") == 0) {
		kind = ATTR_WHERE;
		h->coordinator = word[0] == 'c';
	} else if (strcmp(word, "fail") == 0 || strcmp(word, "warn") == 0) {
		kind = ATTR_ON_FAILURE;
		h->warn = word[0] == 'w';
	} else if (opts_duration(word, &d, NULL) == 0 && d >= 1 && d <= 86400) {
		kind = ATTR_TIMEOUT;
		h->timeout_s = d;
	} else {
		snprintf(why, whylen, "'%s' is none of all, coordinator, fail, warn or a timeout "
		         "from 1s to 1d (90s, 5m)", word);
		return -EINVAL;
	}
	if (*seen & kind) {
		snprintf(why, whylen, "'%s': %s is given twice; give it once", word, kinds[kind]);
		return -EINVAL;
	}
	*seen |= kind;
	return 0;
}

int
hooks_parse_spec(const char *text, struct config_hook *h, char *why, size_t whylen)
{
	const char *eq = strchr(text, '='), *p, *colon;
	char what[PATH_MAX + 200];
	unsigned seen = 0;
	int rc;

	memset(h, 0, sizeof(*h));
	if (!eq || !eq[1]) {
		snprintf(why, whylen, "expected PHASE[:ATTR]...=COMMAND, e.g. "
		         "pre-launch:coordinator:warn:2m=/path/to/script");
		return -EINVAL;
	}
	colon = memchr(text, ':', (size_t)(eq - text));
	h->phase = phase_of(text, (size_t)((colon ? colon : eq) - text));
	if (h->phase < 0) {
		snprintf(why, whylen, "the phase is one of pre-check, pre-launch, checkpoint, "
		         "requeue or end");
		return -EINVAL;
	}
	for (p = colon; p && p < eq; p = colon) {
		colon = memchr(p + 1, ':', (size_t)(eq - p - 1));
		if (take_attr(p + 1, (size_t)((colon ? colon : eq) - p - 1), h, &seen, why,
		              whylen) < 0)
			return -EINVAL;
	}
	rc = trust_command(eq + 1, what, sizeof(what));
	if (rc < 0) {
		snprintf(why, whylen, "%s; %s", what, TRUST_FIX);
		return rc;
	}
	h->command = strdup(eq + 1);
	if (!h->command) {
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

void
hooks_spec_free(struct config_hook *h)
{
	free(h->command);
	h->command = NULL;
}

/* ---- running a phase ------------------------------------------------------------ */

static void start_next(struct hooks *hs);
static void begin(struct hooks *hs);

static bool
here(const struct hooks *hs, const struct config_hook *h)
{
	return !h->coordinator || hs->o.coordinator;
}

void
hooks_set_staged(struct hooks *hs)
{
	hs->staged = true;
}

bool
hooks_any(const struct hooks *hs, int phase)
{
	for (size_t i = 0; hs && i < hs->n; i++)
		if (hs->list[i].phase == phase && here(hs, &hs->list[i]))
			return true;
	return false;
}

bool
hooks_declared(const struct hooks *hs, int phase)
{
	for (size_t i = 0; hs && i < hs->n; i++)
		if (hs->list[i].phase == phase)
			return true;
	return false;
}

/* One line for people, tagged with the phase, the node and the rank. */
static void
say(struct hooks *hs, const char *text, size_t len)
{
	char line[RUNNER_LINE_MAX + 200];

	snprintf(line, sizeof(line), "[hook %s %s:%d] %.*s",
	         config_hook_phase_names[hs->queue[0].phase], hs->node, hs->o.rank, (int)len, text);
	if (hs->ops.say)
		hs->ops.say(hs->ops.arg, line);
}

static void
on_line(void *arg, const char *line, size_t len)
{
	struct hooks *hs = arg;
	size_t n = len < sizeof(hs->last) - 1 ? len : sizeof(hs->last) - 1;

	memcpy(hs->last, line, n);
	hs->last[n] = '\0';
	say(hs, line, len);
}

static void
free_env(struct hooks *hs)
{
	for (size_t i = 0; hs->envp && hs->envp[i]; i++)
		free(hs->envp[i]);
	free(hs->envp);
	hs->envp = NULL;
}

/* Whether ENTRY ("NAME=VALUE") is a staged copy's path that is not there yet. */
static bool
unstaged(const struct hooks *hs, const char *entry)
{
	size_t k = strlen("VIGIL_STAGE_");

	if (hs->staged || strncmp(entry, "VIGIL_STAGE_", k) != 0)
		return false;
	for (size_t i = 0; i < hs->o.nstage_names; i++) {
		size_t n = strlen(hs->o.stage_names[i]);

		if (strncmp(entry + k, hs->o.stage_names[i], n) == 0 && entry[k + n] == '=')
			return true;
	}
	return false;
}

/* The agent's environment with the phase's variables over it. */
static int
make_env(struct hooks *hs, const struct pending *pd)
{
	char *mine[EXTRA_MAX + 4] = { NULL };
	size_t nmine = 4, n = 0, k = 0;
	bool ok;

	ok = asprintf(&mine[0], "VIGIL_HOOK=%s", config_hook_phase_names[pd->phase]) >= 0 &&
	     asprintf(&mine[1], "VIGIL_NODE=%s", hs->node) >= 0 &&
	     asprintf(&mine[2], "VIGIL_RANK=%d", hs->o.rank) >= 0 &&
	     asprintf(&mine[3], "VIGIL_JOB_ID=%s", hs->job_id) >= 0;
	for (size_t i = 0; ok && i < pd->nextra; i++)
		ok = (mine[nmine++] = strdup(pd->extra[i])) != NULL;
	while (environ[n])
		n++;
	free_env(hs);
	hs->envp = ok ? calloc(n + nmine + 1, sizeof(*hs->envp)) : NULL;
	for (size_t i = 0; hs->envp && i < n; i++) {
		bool over = false;

		for (size_t m = 0; m < nmine && !over; m++)
			over = strncmp(environ[i], mine[m], strcspn(mine[m], "=") + 1) == 0;
		if (!over && !unstaged(hs, environ[i]) && !(hs->envp[k++] = strdup(environ[i])))
			ok = false;
	}
	for (size_t m = 0; m < nmine; m++) {
		if (hs->envp && ok)
			hs->envp[k++] = mine[m];
		else
			free(mine[m]);
	}
	return hs->envp && ok ? 0 : -ENOMEM;
}

static void
phase_over(struct hooks *hs)
{
	struct pending pd = hs->queue[0];

	hs->res.phase = pd.phase;
	hs->res.seconds = (double)loop_now(hs->loop) / 1000.0 - hs->started;
	memmove(&hs->queue[0], &hs->queue[1], (hs->nqueue - 1) * sizeof(hs->queue[0]));
	hs->nqueue--;
	hs->running = false;
	/* the callback may ask for another phase, which then begins at once */
	if (hs->ops.done)
		hs->ops.done(hs->ops.arg, &hs->res);
	for (size_t i = 0; i < pd.nextra; i++)
		free(pd.extra[i]);
	if (hs->nqueue > 0 && !hs->running)
		begin(hs);
}

static void
on_done(void *arg, int status)
{
	struct hooks *hs = arg;
	const struct config_hook *h = hs->cur;
	char why[sizeof(hs->res.why)];

	runner_free(hs->r);
	hs->r = NULL;
	if (status != 0) {
		if (status == RUNNER_TIMEOUT)
			snprintf(why, sizeof(why), "%s hook '%.100s' did not end within %.0f s%s",
			         config_hook_phase_names[h->phase], h->command,
			         h->timeout_s > 0 ? h->timeout_s : hs->o.timeout_s,
			         h->warn ? " (warning)" : "");
		else
			snprintf(why, sizeof(why), "%s hook '%.100s' failed with status %d%s%.200s%s",
			         config_hook_phase_names[h->phase], h->command, status,
			         hs->last[0] ? ": " : "", hs->last, h->warn ? " (warning)" : "");
		if (h->warn)
			hs->res.warned++;
		else
			hs->res.failed++;
		if (!hs->res.why[0] || (!h->warn && hs->res.failed == 1))
			memcpy(hs->res.why, why, sizeof(why));
		say(hs, why, strlen(why));
	}
	start_next(hs);
}

/* The next hook of the running phase, or the phase's end. */
static void
start_next(struct hooks *hs)
{
	struct pending *pd = &hs->queue[0];
	static char sh[] = "/bin/sh", dash_c[] = "-c";

	while (hs->next < hs->n) {
		const struct config_hook *h = &hs->list[hs->next++];
		char *argv[] = { sh, dash_c, h->command, NULL };
		struct runner_opts ro = {
			.path = "/bin/sh", .argv = argv, .envp = hs->envp, .sigmask = hs->o.sigmask,
			.timeout_s = h->timeout_s > 0 ? h->timeout_s : hs->o.timeout_s,
		};
		struct runner_ops ops = { on_line, on_done, hs };
		int rc;

		if (h->phase != pd->phase || !here(hs, h))
			continue;
		hs->cur = h;
		hs->last[0] = '\0';
		hs->res.ran++;
		rc = runner_start(hs->loop, &ro, &ops, &hs->r);
		if (rc == 0)
			return;
		snprintf(hs->last, sizeof(hs->last), "cannot start it: %s", strerror(-rc));
		on_done(hs, 126);
		return;
	}
	phase_over(hs);
}

static void
begin(struct hooks *hs)
{
	memset(&hs->res, 0, sizeof(hs->res));
	hs->running = true;
	hs->next = 0;
	hs->started = (double)loop_now(hs->loop) / 1000.0;
	if (make_env(hs, &hs->queue[0]) < 0) {
		hs->res.failed++;
		snprintf(hs->res.why, sizeof(hs->res.why), "cannot run the %s hooks: out of memory",
		         config_hook_phase_names[hs->queue[0].phase]);
		hs->next = hs->n;
	}
	start_next(hs);
}

int
hooks_run(struct hooks *hs, int phase, const char *const *extra, size_t nextra)
{
	struct pending *pd;

	if (hs->nqueue == sizeof(hs->queue) / sizeof(hs->queue[0]))
		return -ENOMEM;
	pd = &hs->queue[hs->nqueue];
	memset(pd, 0, sizeof(*pd));
	pd->phase = phase;
	for (size_t i = 0; i < nextra && i < EXTRA_MAX; i++) {
		if (!(pd->extra[i] = strdup(extra[i]))) {
			for (size_t k = 0; k < i; k++)
				free(pd->extra[k]);
			return -ENOMEM;
		}
		pd->nextra++;
	}
	hs->nqueue++;
	if (!hs->running)
		begin(hs);
	return 0;
}

bool
hooks_busy(const struct hooks *hs)
{
	return hs && hs->nqueue > 0;
}

double
hooks_time_left(const struct hooks *hs)
{
	double t = 0;

	/* each waiting hook may take its whole timeout */
	for (size_t q = 0; hs && q < hs->nqueue; q++)
		for (size_t i = 0; i < hs->n; i++)
			if (hs->list[i].phase == hs->queue[q].phase && here(hs, &hs->list[i]))
				t += hs->list[i].timeout_s > 0 ? hs->list[i].timeout_s : hs->o.timeout_s;
	return t;
}

void
hooks_describe(const struct hooks *hs, FILE *f)
{
	for (size_t i = 0; hs && i < hs->n; i++) {
		const struct config_hook *h = &hs->list[i];

		if (!here(hs, h))
			continue;
		fprintf(f, "hook: %s%s, %s, within %.0f s: %s\n", config_hook_phase_names[h->phase],
		        h->coordinator ? " (coordinator only)" : "", h->warn ? "warn" : "fail",
		        h->timeout_s > 0 ? h->timeout_s : hs->o.timeout_s, h->command);
	}
}

/* ---- the rest ------------------------------------------------------------------- */

struct hooks *
hooks_new(const struct hooks_opts *o, struct loop *l, const struct hooks_ops *ops)
{
	struct hooks *hs = calloc(1, sizeof(*hs));
	char why[256];

	if (!hs)
		return NULL;
	hs->o = *o;
	hs->loop = l;
	hs->ops = *ops;
	hs->node = strdup(o->node ? o->node : "?");
	hs->job_id = strdup(o->job_id ? o->job_id : "");
	if (!hs->node || !hs->job_id || o->nsite + o->nspecs > HOOKS_MAX) {
		hooks_free(hs);
		errno = !hs->node || !hs->job_id ? ENOMEM : EINVAL;
		return NULL;
	}
	for (size_t i = 0; i < o->nsite; i++) {
		hs->list[hs->n] = o->site[i];
		if (!(hs->list[hs->n].command = strdup(o->site[i].command))) {
			hooks_free(hs);
			errno = ENOMEM;
			return NULL;
		}
		hs->n++;
	}
	for (size_t i = 0; i < o->nspecs; i++) {
		int rc = hooks_parse_spec(o->specs[i], &hs->list[hs->n], why, sizeof(why));

		if (rc < 0) {
			hooks_free(hs);
			errno = -rc;
			return NULL;
		}
		hs->n++;
	}
	return hs;
}

int
hooks_set_job_id(struct hooks *hs, const char *job_id)
{
	char *id = strdup(job_id);

	if (!id)
		return -ENOMEM;
	free(hs->job_id);
	hs->job_id = id;
	return 0;
}

void
hooks_free(struct hooks *hs)
{
	if (!hs)
		return;
	runner_free(hs->r);
	for (size_t q = 0; q < hs->nqueue; q++)
		for (size_t i = 0; i < hs->queue[q].nextra; i++)
			free(hs->queue[q].extra[i]);
	for (size_t i = 0; i < hs->n; i++)
		hooks_spec_free(&hs->list[i]);
	free_env(hs);
	free(hs->node);
	free(hs->job_id);
	free(hs);
}
