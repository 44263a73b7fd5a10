/*
 * slurm.c - drain and resume this node through scontrol.
 *
 * scontrol is run without a shell, each argument one argv element, so a
 * reason with spaces or quotes needs no quoting.  Every call goes through
 * timed_exec(): slurmctld may be down or slow, and a health check must not
 * hang the node with it.
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
#include <unistd.h>

#include "log.h"
#include "slurm.h"
#include "timed.h"

/* Longest drain reason sent, prefix included.  Slurm takes longer ones,
 * but sinfo -R and most dashboards show only the start. */
#define REASON_MAX 200

/* Longest node name accepted (Slurm's own limit is larger than any host
 * name); the name becomes one argv element. */
#define NODE_MAX 255

/* Enough for `scontrol show node` of one node, which is ~1 KiB. */
#define SHOW_MAX 16384

static char *
scontrol_path(void)
{
	char *env = getenv("VIGIL_SCONTROL");

	/* A cast, not a copy: execvp() takes char *const[] but writes
	 * nothing through it. */
	return env && *env ? env : (char *)"scontrol";
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
 * Run ARGV (argv[0] is scontrol), output into OUT.  Returns 0, scontrol's
 * non-zero exit status or a negative errno; on failure ERR says why, with
 * scontrol's own message when it gave one.
 */
static int
run_scontrol(char *const argv[], double timeout_s, char *out, size_t outlen,
             char *err, size_t errlen)
{
	int rc = timed_exec(argv, timeout_s, out, outlen);

	if (rc == 0)
		return 0;
	if (rc == -ETIMEDOUT) {
		set_err(err, errlen, "%s %s: no answer within %g s", argv[0], argv[1],
		        timeout_s);
	} else if (rc < 0) {
		set_err(err, errlen, "cannot run %s: %s", argv[0], strerror(-rc));
	} else {
		one_line(out);
		if (out[0])
			set_err(err, errlen, "%s %s: %s", argv[0], argv[1], out);
		else
			set_err(err, errlen, "%s %s: exit status %d", argv[0], argv[1], rc);
	}
	return rc;
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

int
slurm_drain(const char *node, const char *reason, double timeout_s,
            char *err, size_t errlen)
{
	/* "Reason=" is not counted in REASON_MAX: it is scontrol's syntax. */
	char reasonbuf[REASON_MAX + sizeof("Reason=")];
	char nodebuf[NODE_MAX + sizeof("NodeName=")];
	char update[] = "update", state[] = "State=DRAIN";
	char *const argv[] = { scontrol_path(), update, nodebuf, state, reasonbuf, NULL };
	char out[4096];
	int rc;

	rc = check_node(node, err, errlen);
	if (rc < 0)
		return rc;
	snprintf(nodebuf, sizeof(nodebuf), "NodeName=%s", node);
	reason_arg(reasonbuf, sizeof(reasonbuf), reason);
	return run_scontrol(argv, timeout_s, out, sizeof(out), err, errlen);
}

/*
 * Whether a State= value (IDLE+DRAIN, MIXED+DRAIN, DRAINED, DRAINING,
 * DOWN+DRAIN+NOT_RESPONDING, ...) has a drain flag.  sinfo-style suffixes
 * (idle*, drain~) are dropped before comparing.
 */
static bool
state_drained(const char *state)
{
	static const char *const drained[] = { "DRAIN", "DRAINED", "DRAINING", "DRNG" };
	const char *c = state;

	while (*c) {
		size_t len = strcspn(c, "+");
		size_t base = len;

		while (base > 0 && strchr("*~#$@^!%-", c[base - 1]))
			base--;
		for (size_t i = 0; i < sizeof(drained) / sizeof(drained[0]); i++) {
			if (base == strlen(drained[i]) && strncasecmp(c, drained[i], base) == 0)
				return true;
		}
		c += len;
		if (*c == '+')
			c++;
	}
	return false;
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

int
slurm_undrain(const char *node, double timeout_s, char *err, size_t errlen)
{
	char nodebuf[NODE_MAX + sizeof("NodeName=")], nodearg[NODE_MAX + 1];
	char show[] = "show", kind[] = "node", update[] = "update", resume[] = "State=RESUME";
	char *const show_argv[] = { scontrol_path(), show, kind, nodearg, NULL };
	char *const resume_argv[] = { show_argv[0], update, nodebuf, resume, NULL };
	char *out = NULL, *state, *reason;
	int rc;

	rc = check_node(node, err, errlen);
	if (rc < 0)
		return rc;
	out = malloc(SHOW_MAX);
	if (!out) {
		set_err(err, errlen, "out of memory");
		return -ENOMEM;
	}
	snprintf(nodearg, sizeof(nodearg), "%s", node);
	snprintf(nodebuf, sizeof(nodebuf), "NodeName=%s", node);

	rc = run_scontrol(show_argv, timeout_s, out, SHOW_MAX, err, errlen);
	if (rc != 0)
		goto out;
	parse_show(out, &state, &reason);
	if (!state) {
		set_err(err, errlen, "%s show node %s: no State= in its output",
		        show_argv[0], node);
		rc = -EPROTO;
		goto out;
	}
	/* A drain that is not ours (an administrator's, another health
	 * check's) stays: only the one who set it knows when it is over. */
	if (!state_drained(state) || !reason ||
	    strncmp(reason, SLURM_REASON_PREFIX, strlen(SLURM_REASON_PREFIX)) != 0) {
		rc = 0;
		goto out;
	}
	rc = run_scontrol(resume_argv, timeout_s, out, SHOW_MAX, err, errlen);
	if (rc == 0)
		rc = 1;
out:
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
