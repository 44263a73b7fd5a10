/*
 * main.c - the vigil command: the usage text and the dispatch to the
 * commands (cmd.h), each in its own file.
 */
#include "autoconf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "vigil.h"
#include "cli/cmd.h"

static const char usage_text[] =
"usage: vigil COMMAND [OPTIONS]\n"
"\n"
"commands:\n"
"  run     pre-check, then launch and supervise the training on every node\n"
"  slots   show the accelerator slots discovery finds on this node\n"
"  check   run the node health checks (alone, or on every node under mpirun)\n"
"  report  summarise a finished job from its event log (--plot FILE.svg)\n"
"  stage   copy datasets to this node's staging directory (data preparation)\n"
"  nodes   the node ledger: incidents, quarantined nodes, forgiveness\n"
"  help    show this text; `vigil COMMAND --help` shows a command's options\n"
"\n"
"Exit status: run: the training's own status (128+N for signal N, 126/127\n"
"when it cannot be executed); check: 0 healthy, 80 unhealthy; any: 64 usage\n"
"error, 78 configuration error, 84 internal error.  See vigil(1).\n";

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
} commands[] = {
	{ "run", cmd_run },
	{ "report", cmd_report },
	{ "slots", cmd_slots },
	{ "check", cmd_check },
	{ "stage", cmd_stage },
	{ "nodes", cmd_nodes },
};

/*
 * Descriptors 0, 1 and 2 must be open before anything else opens a file:
 * a closed one is the next descriptor open() returns, and vigil would
 * then write its output or the training's into a pipe or event log of its
 * own (and fail, today as "out of memory").  Each closed one is filled
 * with /dev/null; a closed stdout or stderr is then refused, since vigil
 * exists to pass output on.  Returns 0 or an exit status.
 */
static int
check_stdio(void)
{
	bool closed[3] = { false, false, false };

	for (int fd = 0; fd < 3; fd++) {
		int nfd;

		if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
			continue;
		closed[fd] = true;
		/* the lowest free descriptor: FD itself, as the lower ones are open */
		nfd = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
		if (nfd != fd)
			return VIGIL_EXIT_INTERNAL;
	}
	if (closed[1] || closed[2]) {
		/* say it on whichever of the two is still open */
		FILE *to = closed[2] ? stdout : stderr;

		fprintf(to, "vigil: standard %s closed; vigil passes the training's output and its "
		        "own messages through %s: redirect %s (to a file, or to /dev/null) rather "
		        "than closing %s\n",
		        closed[1] && closed[2] ? "output and standard error are" :
		        closed[1] ? "output is" : "error is",
		        closed[1] && closed[2] ? "them" : "it", closed[1] && closed[2] ? "them" : "it",
		        closed[1] && closed[2] ? "them" : "it");
		return VIGIL_EXIT_USAGE;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	const char *cmd;
	int rc;

	rc = check_stdio();
	if (rc != 0)
		return rc;
	if (argc < 2) {
		fputs(usage_text, stderr);
		return VIGIL_EXIT_USAGE;
	}
	cmd = argv[1];
	if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
		printf("vigil %s\n", PACKAGE_VERSION);
		return VIGIL_EXIT_OK;
	}
	if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
		fputs(usage_text, stdout);
		return VIGIL_EXIT_OK;
	}
	/* Commands parse their own options from argv[1] on. */
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(cmd, commands[i].name) == 0)
			return commands[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "vigil: unknown command '%s'\n\n%s", cmd, usage_text);
	return VIGIL_EXIT_USAGE;
}
