/*
 * slurm.c - drain and resume this node through scontrol; the job's end
 * time, and whether it was cancelled, through squeue.
 *
 * The commands run without a shell, each argument one argv element, so a
 * reason with spaces or quotes needs no quoting.  Every call goes through
 * timed_exec(): slurmctld may be down or slow, and neither a health check
 * nor vigil run's loop may hang with it.
 */
#include "autoconf.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "lib/log.h"
#include "proc/slurm.h"
#include "proc/timed.h"

/* Longest drain reason sent, prefix included.  Slurm takes longer ones,
 * but sinfo -R and most dashboards show only the start. */
#define REASON_MAX 200

/* Longest node name accepted (Slurm's own limit is larger than any host
 * name); the name becomes one argv element. */
#define NODE_MAX 255

/* Enough for `scontrol show node` of one node, which is ~1 KiB. */
#define SHOW_MAX 16384

/* $VAR when set, else NAME (looked up in PATH). */
static char *
tool_path(const char *var, const char *name)
{
	char *env = getenv(var);

	/* A cast, not a copy: execvp() takes char *const[] but writes
	 * nothing through it. */
	return env && *env ? env : (char *)name;
}

static char *
scontrol_path(void)
{
	return tool_path("VIGIL_SCONTROL", "scontrol");
}

/* Replace control characters with spaces and drop trailing white space,
 * so that scontrol's message (or a node name) fits on one line of ERR. */
static void
one_line(char *s)
{
	size_t len;

	for (char *c = s; *c; c++) {
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = ' ';
	}
	len = strlen(s);
	while (len > 0 && s[len - 1] == ' ')
		s[--len] = '\0';
}

/* log_errbuf(), and the message kept to one line (it may quote scontrol). */
#define set_err(err, errlen, ...) \
	do { \
		log_errbuf((err), (errlen), __VA_ARGS__); \
		if ((err) && (errlen)) \
			one_line(err); \
	} while (0)

/*
 * Run ARGV, output into OUT.  WHAT names the command in messages
 * ("scontrol show node n1").  Returns 0, or a negative errno with ERR
 * saying why: -EIO when the command exited non-zero or was killed (ERR
 * then quotes its output, or gives its status).
 */
static int
run_cmd(char *const argv[], const char *what, double timeout_s, char *out,
        size_t outlen, char *err, size_t errlen)
{
	int rc = timed_exec(argv, timeout_s, out, outlen);

	if (rc == 0)
		return 0;
	if (rc == -ETIMEDOUT) {
		set_err(err, errlen, "%s: no answer within %g s", what, timeout_s);
		return rc;
	}
	if (rc < 0) {
		set_err(err, errlen, "cannot run %s: %s", what, strerror(-rc));
		return rc;
	}
	one_line(out);
	if (out[0])
		set_err(err, errlen, "%s: %s", what, out);
	else
		set_err(err, errlen, "%s: exit status %d", what, rc);
	return -EIO;
}

static int
check_node(const char *node, char *err, size_t errlen)
{
	size_t len = node ? strlen(node) : 0;

	if (len == 0 || len > NODE_MAX)
		goto bad;
	for (const char *c = node; *c; c++) {
		if (isspace((unsigned char)*c) || iscntrl((unsigned char)*c) || *c == '=')
			goto bad;
	}
	return 0;
bad:
	set_err(err, errlen, "invalid Slurm node name \"%.64s\"", node ? node : "");
	return -EINVAL;
}

/*
 * "Reason=vigil: REASON" as one argv element: control characters become
 * spaces (a reason is one line in sinfo -R), runs of spaces shrink to one,
 * double quotes become single ones (scontrol strips a quoted value), and
 * the whole stays within REASON_MAX bytes without splitting a UTF-8
 * character.
 */
static void
reason_arg(char *buf, size_t buflen, const char *reason)
{
	const char *c = reason ? reason : "";
	size_t o, start;

	o = (size_t)snprintf(buf, buflen, "Reason=%s ", SLURM_REASON_PREFIX);
	start = o;
	for (; *c && o + 1 < buflen; c++) {
		char ch = *c;

		if ((unsigned char)ch < 0x20 || ch == 0x7f)
			ch = ' ';
		else if (ch == '"')
			ch = '\'';
		if (ch == ' ' && (o == start || buf[o - 1] == ' '))
			continue;
		buf[o++] = ch;
	}
	/* A cut may land inside a multi-byte character: drop what there is
	 * of it. */
	if (*c) {
		size_t lead = o;
		unsigned char b;
		size_t need;

		while (lead > start && ((unsigned char)buf[lead - 1] & 0xC0) == 0x80)
			lead--;
		if (lead > start) {
			b = (unsigned char)buf[lead - 1];
			need = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC0 ? 2 : 1;
			if (o - (lead - 1) < need)
				o = lead - 1;
		}
	}
	while (o > start && buf[o - 1] == ' ')
		o--;
	buf[o] = '\0';
	if (o == start)
		snprintf(buf + o, buflen - o, "health check failed");
}

/*
 * Whether a State= value (IDLE+DRAIN, MIXED+DRAIN, DRAINED, DRAINING,
 * DOWN+DRAIN+NOT_RESPONDING, ...) has one of the flags in NAMES (a NULL-
 * terminated list).  sinfo-style suffixes (idle*, drain~) are dropped
 * before comparing.
 */
static bool
state_has(const char *state, const char *const names[])
{
	const char *c = state;

	while (*c) {
		size_t len = strcspn(c, "+");
		size_t base = len;

		while (base > 0 && strchr("*~#$@^!%-", c[base - 1]))
			base--;
		for (size_t i = 0; names[i]; i++) {
			if (base == strlen(names[i]) && strncasecmp(c, names[i], base) == 0)
				return true;
		}
		c += len;
		if (*c == '+')
			c++;
	}
	return false;
}

static const char *const drained_flags[] = {
	"DRAIN", "DRAINED", "DRAINING", "DRNG", NULL
};
/* A node someone took out of service: drained, or down or failed by hand
 * (or by slurmctld, which also gives a reason). */
static const char *const marked_flags[] = {
	"DRAIN", "DRAINED", "DRAINING", "DRNG", "DOWN", "FAIL", "FAILING", NULL
};

static bool
reason_is_ours(const char *reason)
{
	return reason && strncmp(reason, SLURM_REASON_PREFIX, strlen(SLURM_REASON_PREFIX)) == 0;
}

/*
 * Find State= and Reason= in `scontrol show node` output: "KEY=VALUE"
 * fields separated by spaces, several to a line, except Reason, which has
 * a line of its own and runs to its end ("Reason=bad dimm [root@...]").
 * Only the first node's record is read.  Values are cut in place in OUT.
 */
static void
parse_show(char *out, char **state, char **reason)
{
	char *line = out;
	int nodes = 0;

	*state = *reason = NULL;
	while (line && *line) {
		char *next = strchr(line, '\n');
		char *tok = line;

		if (next)
			*next++ = '\0';
		tok += strspn(tok, " \t");
		if (strncmp(tok, "Reason=", 7) == 0) {
			if (!*reason) {
				size_t len = strlen(tok + 7);

				*reason = tok + 7;
				while (len > 0 && isspace((unsigned char)(*reason)[len - 1]))
					(*reason)[--len] = '\0';
			}
			line = next;
			continue;
		}
		while (*tok) {
			size_t len = strcspn(tok, " \t");
			char *end = tok + len;
			bool last = *end == '\0';

			*end = '\0';
			if (strncmp(tok, "NodeName=", 9) == 0 && ++nodes > 1)
				return;
			if (strncmp(tok, "State=", 6) == 0 && !*state)
				*state = tok + 6;
			if (last)
				break;
			tok = end + 1;
			tok += strspn(tok, " \t");
		}
		line = next;
	}
}

/*
 * Check NODE's name, then `scontrol show node NODE` into *OUT (allocated
 * here, freed by the caller), with *STATE and *REASON (NULL when the node
 * has none) pointing into it.  Returns 0, or a negative errno with *OUT
 * NULL: -EPROTO when the output has no State=.
 */
static int
show_node(const char *node, double timeout_s, char **out, char **state,
          char **reason, char *err, size_t errlen)
{
	char show[] = "show", kind[] = "node", nodearg[NODE_MAX + 1];
	char *const argv[] = { scontrol_path(), show, kind, nodearg, NULL };
	char what[NODE_MAX + 32];
	int rc;

	*out = NULL;
	rc = check_node(node, err, errlen);
	if (rc < 0)
		return rc;
	*out = malloc(SHOW_MAX);
	if (!*out) {
		set_err(err, errlen, "out of memory");
		return -ENOMEM;
	}
	snprintf(nodearg, sizeof(nodearg), "%s", node);
	snprintf(what, sizeof(what), "scontrol show node %s", node);
	rc = run_cmd(argv, what, timeout_s, *out, SHOW_MAX, err, errlen);
	if (rc == 0) {
		parse_show(*out, state, reason);
		if (!*state) {
			set_err(err, errlen, "%s: no State= in its output", what);
			rc = -EPROTO;
		}
	}
	if (rc < 0) {
		free(*out);
		*out = NULL;
	}
	return rc;
}

/* `scontrol update NodeName=NODE ARG1 [ARG2]`: 0 or a negative errno. */
static int
update_node(const char *node, char *arg1, char *arg2, double timeout_s,
            char *err, size_t errlen)
{
	char nodebuf[NODE_MAX + sizeof("NodeName=")], update[] = "update";
	char *const argv[] = { scontrol_path(), update, nodebuf, arg1, arg2, NULL };
	char out[4096], what[NODE_MAX + 64];

	snprintf(nodebuf, sizeof(nodebuf), "NodeName=%s", node);
	snprintf(what, sizeof(what), "scontrol update NodeName=%s %s", node, arg1);
	return run_cmd(argv, what, timeout_s, out, sizeof(out), err, errlen);
}

/* Whether Slurm's REASON ("vigil: x [root@2026-11-20T10:00:00]") is the
 * reason NEW that vigil would set now. */
static bool
same_reason(const char *reason, const char *new)
{
	size_t len = strlen(new);

	return strncmp(reason, new, len) == 0 &&
	       (reason[len] == '\0' || strncmp(reason + len, " [", 2) == 0);
}

int
slurm_drain(const char *node, const char *reason, double timeout_s,
            char *err, size_t errlen)
{
	/* "Reason=" is not counted in REASON_MAX: it is scontrol's syntax. */
	char reasonbuf[REASON_MAX + sizeof("Reason=")];
	char drain[] = "State=DRAIN";
	char *out, *state, *cur;
	int rc;

	/* Read first: a node someone else took out of service keeps their
	 * reason, the only note of why it is out and of who may put it back. */
	rc = show_node(node, timeout_s, &out, &state, &cur, err, errlen);
	if (rc < 0)
		return rc;
	reason_arg(reasonbuf, sizeof(reasonbuf), reason);
	if (state_has(state, marked_flags) && !reason_is_ours(cur)) {
		set_err(err, errlen, "%s is %s (%s): someone else's, left as it is",
		        node, state, cur ? cur : "no reason");
		rc = 0;
		goto out;
	}
	if (state_has(state, drained_flags) && cur &&
	    same_reason(cur, reasonbuf + strlen("Reason="))) {
		set_err(err, errlen, "%s is drained already for this reason", node);
		rc = 0;
		goto out;
	}
	rc = update_node(node, drain, reasonbuf, timeout_s, err, errlen);
	if (rc == 0)
		rc = 1;
out:
	free(out);
	return rc;
}

int
slurm_undrain(const char *node, double timeout_s, char *err, size_t errlen)
{
	char resume[] = "State=RESUME";
	char *out, *state, *reason;
	int rc;

	rc = show_node(node, timeout_s, &out, &state, &reason, err, errlen);
	if (rc < 0)
		return rc;
	/* A drain that is not ours (an administrator's, another health
	 * check's) stays: only the one who set it knows when it is over. */
	if (!state_has(state, drained_flags)) {
		set_err(err, errlen, "%s is %s, not drained", node, state);
		rc = 0;
	} else if (!reason_is_ours(reason)) {
		set_err(err, errlen, "%s is drained by someone else (%s): left drained",
		        node, reason ? reason : "no reason");
		rc = 0;
	} else {
		rc = update_node(node, resume, NULL, timeout_s, err, errlen);
		if (rc == 0)
			rc = 1;
	}
	free(out);
	return rc;
}

int
slurm_node_name(char *buf, size_t len)
{
	const char *env = getenv("SLURMD_NODENAME");
	char host[HOST_NAME_MAX + 1];
	size_t n;

	if (env && *env) {
		/* slurmd's own name for the node, which need not be the host
		 * name (NodeName= vs NodeHostname= in slurm.conf). */
		n = strlen(env);
		if (n >= len)
			return -ENAMETOOLONG;
		memcpy(buf, env, n + 1);
		return 0;
	}
	if (gethostname(host, sizeof(host)) < 0)
		return -errno;
	host[sizeof(host) - 1] = '\0';
	/* Slurm node names are short host names by convention. */
	n = strcspn(host, ".");
	if (n == 0)
		return -ENOENT;
	if (n >= len)
		return -ENAMETOOLONG;
	memcpy(buf, host, n);
	buf[n] = '\0';
	return 0;
}

static char *
squeue_path(void)
{
	return tool_path("VIGIL_SQUEUE", "squeue");
}

static bool
word_is(const char *s, size_t len, const char *word)
{
	return strlen(word) == len && strncasecmp(s, word, len) == 0;
}

/* "YYYY-MM-DDTHH:MM:SS" (exactly) as local time; -1 when it is not one. */
static time_t
parse_local(const char *s, size_t len)
{
	struct tm tm = { 0 };
	int n = -1;

	if (len != 19 ||
	    sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
	           &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &n) != 6 || n != 19)
		return -1;
	if (tm.tm_year < 1970 || tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 ||
	    tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60)
		return -1;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	tm.tm_isdst = -1;  /* Slurm prints local time, summer or winter */
	return mktime(&tm);
}

int
slurm_end_time_parse(const char *text, time_t now, time_t *end,
                     char *err, size_t errlen)
{
	static const char *const none[] = {
		"Unknown", "N/A", "NONE", "UNLIMITED", "INVALID", NULL
	};
	const char *s = text ? text : "";
	size_t len, digits;
	time_t t;

	while (isspace((unsigned char)*s))
		s++;
	len = strlen(s);
	while (len > 0 && isspace((unsigned char)s[len - 1]))
		len--;
	if (len == 0) {
		set_err(err, errlen, "an empty end time");
		return -EINVAL;
	}
	for (size_t i = 0; none[i]; i++) {
		if (word_is(s, len, none[i]))
			return 0;
	}
	digits = strspn(s, "0123456789");
	if (digits == len) {
		long long v = 0;

		bool over = false;

		/* SLURM_JOB_END_TIME=99999999999999999999 is no reason to
		 * expire at once. */
		for (size_t i = 0; i < len; i++) {
			int d = s[i] - '0';

			if (v > (LLONG_MAX - d) / 10) {
				over = true;
				break;
			}
			v = v * 10 + d;
		}
		if (over || (long long)(time_t)v != v) {
			set_err(err, errlen, "end time %.*s is out of range: not believed",
			        (int)(len > 40 ? 40 : len), s);
			return -ERANGE;
		}
		t = (time_t)v;
	} else {
		t = parse_local(s, len);
		if (t == (time_t)-1) {
			set_err(err, errlen, "\"%.*s\" is not a time (seconds since 1970, or YYYY-MM-DDTHH:MM:SS)",
			        (int)(len > 40 ? 40 : len), s);
			return -EINVAL;
		}
	}
	if (t < now - SLURM_END_PAST_MAX) {
		set_err(err, errlen, "end time %.*s is %lld s in the past: not believed",
		        (int)(len > 40 ? 40 : len), s, (long long)(now - t));
		return -ERANGE;
	}
	if (t > now + SLURM_END_FUTURE_MAX) {
		set_err(err, errlen, "end time %.*s is more than ten years ahead: not believed",
		        (int)(len > 40 ? 40 : len), s);
		return -ERANGE;
	}
	*end = t;
	return 1;
}

static bool
job_id_ok(const char *id)
{
	size_t len = id ? strlen(id) : 0;

	return len > 0 && len <= 20 && strspn(id, "0123456789") == len;
}

/*
 * The last line `squeue -h -j JOBID OPT FMT` prints, under
 * SLURM_TIME_FORMAT=%s, into OUT (*LAST points into it): a warning may
 * come first (on stderr, which is captured with stdout).  WHAT names the
 * command in messages.  Returns 0, or a negative errno with ERR saying why
 * (-EPROTO: nothing printed).
 */
static int
squeue_job(const char *jobid, char *opt, char *fmt, double timeout_s, char *out,
           size_t outlen, char **last, char *what, size_t whatlen, char *err, size_t errlen)
{
	char env[] = "/usr/bin/env", tf[] = "SLURM_TIME_FORMAT=%s";
	char h[] = "-h", j[] = "-j", idarg[24];
	char *const argv[] = { env, tf, squeue_path(), h, j, idarg, opt, fmt, NULL };
	size_t len;
	int rc;

	if (!job_id_ok(jobid)) {
		set_err(err, errlen, "\"%.24s\" is not a Slurm job id", jobid ? jobid : "");
		return -EINVAL;
	}
	snprintf(idarg, sizeof(idarg), "%s", jobid);
	snprintf(what, whatlen, "squeue -j %s", jobid);
	/* Slurm prints times as SLURM_TIME_FORMAT says, "relative" ones
	 * ("Tomorr 12:00") included: ask for seconds since 1970, which also
	 * spares the summer time hour that local time cannot tell apart. */
	rc = run_cmd(argv, what, timeout_s, out, outlen, err, errlen);
	if (rc < 0)
		return rc;
	len = strlen(out);
	while (len > 0 && isspace((unsigned char)out[len - 1]))
		out[--len] = '\0';
	*last = strrchr(out, '\n');
	*last = *last ? *last + 1 : out;
	if (!**last) {
		set_err(err, errlen, "%s printed nothing", what);
		return -EPROTO;
	}
	return 0;
}

int
slurm_job_end_time(const char *jobid, double timeout_s, time_t *end,
                   char *err, size_t errlen)
{
	char o[] = "-o", e[] = "%e", out[1024], what[64], *last;
	int rc;

	rc = squeue_job(jobid, o, e, timeout_s, out, sizeof(out), &last, what, sizeof(what),
	                err, errlen);
	if (rc < 0)
		return rc;
	rc = slurm_end_time_parse(last, time(NULL), end, err, errlen);
	if (rc == -EINVAL)
		rc = -EPROTO;
	return rc;
}

int
slurm_job_start_time(const char *jobid, double timeout_s, time_t *start, time_t *eligible,
                     char *err, size_t errlen)
{
	char o[] = "-O", f[] = "StartTime,EligibleTime", out[1024], what[64], *last, *endp, *e;
	long long v, el;
	int rc;

	rc = squeue_job(jobid, o, f, timeout_s, out, sizeof(out), &last, what, sizeof(what),
	                err, errlen);
	if (rc < 0)
		return rc;
	errno = 0;
	v = strtoll(last, &endp, 10);
	if (endp == last || (*endp && !isspace((unsigned char)*endp)) || errno || v <= 0 ||
	    v > (long long)time(NULL) + 60) {
		set_err(err, errlen, "%s: \"%.40s\" is no start time", what, last);
		return -EPROTO;
	}
	*start = (time_t)v;
	/* "N/A" or "Unknown" where Slurm has none */
	errno = 0;
	el = strtoll(endp, &e, 10);
	*eligible = e == endp || *e || errno || el <= 0 || el > v ? 0 : (time_t)el;
	return 0;
}

int
slurm_end_time(double timeout_s, time_t *end, const char **source,
               char *err, size_t errlen)
{
	const char *id = getenv("SLURM_JOB_ID");
	const char *env = getenv("SLURM_JOB_END_TIME");
	char why[256] = "", envwhy[256] = "";
	bool asked = id && *id;
	int rc = -ENOENT;

	if (source)
		*source = NULL;
	if (asked) {
		rc = slurm_job_end_time(id, timeout_s, end, why, sizeof(why));
		if (rc >= 0) {
			if (source)
				*source = "squeue";
			return rc;
		}
	}
	if (env && *env) {
		int erc = slurm_end_time_parse(env, time(NULL), end, envwhy, sizeof(envwhy));

		if (erc >= 0) {
			if (source)
				*source = "SLURM_JOB_END_TIME";
			return erc;
		}
		if (why[0])
			set_err(err, errlen, "%s; SLURM_JOB_END_TIME: %s", why, envwhy);
		else
			set_err(err, errlen, "SLURM_JOB_END_TIME: %s", envwhy);
		return asked ? rc : erc;
	}
	if (!asked) {
		set_err(err, errlen, "not a Slurm job: neither SLURM_JOB_ID nor SLURM_JOB_END_TIME is set");
		return -ENOENT;
	}
	set_err(err, errlen, "%s", why);
	return rc;
}

/* ---- cancelled? ---------------------------------------------------------------- */

/* The next |-separated field of *S, cut out (NUL-terminated); NULL when none. */
static char *
next_field(char **s)
{
	char *f = *s, *bar;

	if (!f)
		return NULL;
	bar = strchr(f, '|');
	if (bar) {
		*bar = '\0';
		*s = bar + 1;
	} else {
		*s = NULL;
	}
	return f;
}

int
slurm_cancel_parse(const char *text, long restarts)
{
	char buf[512], *rest = buf, *state, *cnt, *preempt, *reason, *end;
	long n;

	if (!text || strlen(text) >= sizeof(buf))
		return -EINVAL;
	snprintf(buf, sizeof(buf), "%s", text);
	state = next_field(&rest);
	cnt = next_field(&rest);
	preempt = next_field(&rest);
	reason = rest;  /* the last: a description may hold anything */
	if (!state || !cnt || !preempt || !reason)
		return -EINVAL;
	errno = 0;
	n = strtol(cnt, &end, 10);
	if (errno || end == cnt || *end || n < 0)
		return -EINVAL;
	while (*reason && isspace((unsigned char)*reason))
		reason++;
	one_line(reason);
	if (!strcmp(state, "CANCELLED"))
		return 1;
	if (strcmp(state, "COMPLETING"))
		return 0;  /* RUNNING (scancel --signal=TERM), TIMEOUT, PREEMPTED, ... */
	/* preempted: a time; never: 0, N/A, NOT_SET, Unknown */
	if (strspn(preempt, "0123456789") == strlen(preempt) && strtoul(preempt, NULL, 10) > 0)
		return 0;
	return n == restarts && !strcmp(reason, "None");
}

int
slurm_cancelled(double timeout_s, char *err, size_t errlen)
{
	const char *id = getenv("SLURM_JOB_ID"), *count = getenv("SLURM_RESTART_COUNT");
	char o[] = "-O", f[] = "State:0|,RestartCnt:0|,PreemptTime:0|,Reason:0";
	char out[1024], what[64], *last, *end;
	long restarts = 0;
	int rc;

	if (!id || !*id) {
		set_err(err, errlen, "not a Slurm job: SLURM_JOB_ID is not set");
		return -ENOENT;
	}
	if (count && *count) {
		errno = 0;
		restarts = strtol(count, &end, 10);
		if (errno || *end || restarts < 0) {
			set_err(err, errlen, "SLURM_RESTART_COUNT=\"%.24s\" is not a count", count);
			return -EINVAL;
		}
	}
	rc = squeue_job(id, o, f, timeout_s, out, sizeof(out), &last, what, sizeof(what),
	                err, errlen);
	if (rc < 0)
		return rc;
	rc = slurm_cancel_parse(last, restarts);
	if (rc == -EINVAL) {
		set_err(err, errlen, "%s: cannot read \"%.200s\"", what, last);
		rc = -EPROTO;
	}
	return rc;
}
