/*
 * cmd.c - what vigil's commands share: usage errors, the node's name and
 * slot discovery.
 */
#include "autoconf.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "vigil.h"
#include "cli/cmd.h"
#include "lib/log.h"
#include "lib/util.h"
#include "sys/topo.h"

static int say(const char *cmd, bool job, bool help, const char *fmt, va_list ap);

int
cmd_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = say(cmd, false, true, fmt, ap);
	va_end(ap);
	return rc;
}

int
cmd_syntax_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = say(cmd, true, true, fmt, ap);
	va_end(ap);
	return rc;
}

int
cmd_option_error(const char *cmd, char *const argv[], int ch)
{
	const char *arg = optind > 0 ? argv[optind - 1] : "?";
	size_t len = strcspn(arg, "=");

	if (optopt && strncmp(arg, "--", 2) != 0)
		return cmd_syntax_error(cmd, ch == ':' ? "option '-%c' needs a value" :
		                        "unknown option '-%c'", optopt);
	return cmd_syntax_error(cmd, ch == ':' ? "option '%.*s' needs a value" :
	                        "unknown option '%.*s'", (int)(len > 100 ? 100 : len), arg);
}

bool
cmd_speaks(void)
{
	static const char *const vars[] = { "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK" };

	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		const char *v = getenv(vars[i]);

		if (v && *v)
			return strcmp(v, "0") == 0;
	}
	return true;
}

/*
 * A rank that does not speak, before it says an error the first rank
 * should have said: whether the launcher ended the job within
 * CMD_QUIET_WAIT_MS (mpirun sends SIGTERM to the others once one rank
 * exits with a failure; SIGINT and SIGHUP count too).  Waiting first
 * means that this rank leaving cannot make the launcher kill the first
 * one before it has printed its message.
 */
static bool
ended_by_launcher(void)
{
	struct timespec now, end, left;
	sigset_t set, old;
	int sig = -1;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &set, &old) < 0 ||
	    clock_gettime(CLOCK_MONOTONIC, &end) < 0)
		return false;
	end.tv_sec += CMD_QUIET_WAIT_MS / 1000;
	end.tv_nsec += (CMD_QUIET_WAIT_MS % 1000) * 1000000L;
	if (end.tv_nsec >= 1000000000L) {
		end.tv_sec++;
		end.tv_nsec -= 1000000000L;
	}
	while (sig < 0 && clock_gettime(CLOCK_MONOTONIC, &now) == 0) {
		left.tv_sec = end.tv_sec - now.tv_sec;
		left.tv_nsec = end.tv_nsec - now.tv_nsec;
		if (left.tv_nsec < 0) {
			left.tv_sec--;
			left.tv_nsec += 1000000000L;
		}
		if (left.tv_sec < 0)
			break;
		sig = sigtimedwait(&set, NULL, &left);
		if (sig < 0 && errno != EINTR)
			break;  /* EAGAIN: the time is up */
	}
	/* Ended: the mask stays, as the process is leaving, so that the
	 * launcher's next signal (to the group, or once more) does not turn
	 * its status into 128+N. */
	if (sig <= 0)
		(void)sigprocmask(SIG_SETMASK, &old, NULL);
	return sig > 0;
}

/*
 * Every error of this file: said by the speaker; by another rank, after
 * the wait (first, either way: this rank leaving must not make the
 * launcher end the first one before it has said it), only when it is not
 * JOB's, the same on every rank, and so may be this node's own.  HELP:
 * the pointer to --help after it.
 */
static int
say(const char *cmd, bool job, bool help, const char *fmt, va_list ap)
{
	if (!cmd_speaks() && (ended_by_launcher() || job))
		return VIGIL_EXIT_USAGE;
	fprintf(stderr, "vigil %s: ", cmd);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	if (help)
		fprintf(stderr, "Try `vigil %s --help'.\n", cmd);
	return VIGIL_EXIT_USAGE;
}

int
cmd_job_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = say(cmd, true, false, fmt, ap);
	va_end(ap);
	return rc;
}

int
cmd_node_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = say(cmd, false, false, fmt, ap);
	va_end(ap);
	return rc;
}

/* NAME for a message on one line: control characters shown as '?', cut. */
static void
printable(const char *name, char *buf, size_t len)
{
	size_t i;

	for (i = 0; name[i] && i + 1 < len && i < 80; i++)
		buf[i] = (unsigned char)name[i] < 0x20 || name[i] == 0x7f ? '?' : name[i];
	buf[i] = '\0';
}

int
cmd_node_name(char *buf, size_t len)
{
	const char *env = getenv("VIGIL_NODE_NAME");
	char why[128], shown[96];

	if (env && *env) {
		if (util_hostname_check(env, why, sizeof(why)) < 0 || strlen(env) >= len) {
			printable(env, shown, sizeof(shown));
			fprintf(stderr, "vigil: VIGIL_NODE_NAME '%s' is not a valid host name (%s): "
			        "it names this node in hostfiles and events; set it to letters, "
			        "digits, '-', '_' and '.' only, or unset it to use the hostname\n",
			        shown, strlen(env) >= len ? "too long" : why);
			return VIGIL_EXIT_USAGE;
		}
		snprintf(buf, len, "%s", env);
		return 0;
	}
	if (gethostname(buf, len) < 0) {
		int rc = errno;

		fprintf(stderr, "vigil: cannot tell this node's name: %s; set VIGIL_NODE_NAME\n",
		        strerror(rc));
		return VIGIL_EXIT_USAGE;
	}
	buf[len - 1] = '\0';
	if (util_hostname_check(buf, why, sizeof(why)) < 0) {
		printable(buf, shown, sizeof(shown));
		fprintf(stderr, "vigil: this host's name '%s' is not a valid host name (%s); "
		        "set VIGIL_NODE_NAME to the name other nodes know it by\n", shown, why);
		return VIGIL_EXIT_USAGE;
	}
	return 0;
}

int
cmd_discover(const char *topology, struct slot **slots, size_t *nslots)
{
	struct topo *t = NULL;
	int rc;

	rc = topo_load(topology, &t);
	if (rc < 0) {
		LOG_ERR("cannot load the topology%s%s: %s",
		        topology ? " from " : "", topology ? topology : "", strerror(-rc));
		return rc;
	}
	rc = topo_slots(t, slots, nslots);
	if (rc < 0)
		LOG_ERR("slot discovery failed: %s", strerror(-rc));
	topo_free(t);
	return rc;
}
