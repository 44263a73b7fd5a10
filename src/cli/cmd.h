/*
 * cmd.h - vigil's commands, one file each, and what they share.
 *
 *   cmd_run.c     vigil run: its options (the table in opts.h), then run_job()
 *   cmd_check.c   vigil check, and the check flags `run` takes too
 *   cmd_slots.c   vigil slots
 *   cmd_report.c  vigil report
 *   cmd_stage.c   vigil stage: data staging (stage.h), alone or for vigil run
 *   cmd_nodes.c   vigil nodes: the site's node ledger (ledger.h, lemon.h)
 *   cmd.c         usage errors, the node's name, slot discovery
 *
 * Each command takes ARGV[0] = its own name ("run") and returns the
 * process's exit status (include/vigil.h).  They parse with getopt and
 * reset it first, so a process (a unit test) may call them again.
 */
#ifndef VIGIL_CMD_H
#define VIGIL_CMD_H

#include <stdbool.h>
#include <stddef.h>
#include <getopt.h>

struct config;
struct slot;

int cmd_run(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_slots(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_stage(int argc, char **argv);
int cmd_nodes(int argc, char **argv);

/*
 * "vigil CMD: MESSAGE" and the pointer to --help on stderr; returns
 * VIGIL_EXIT_USAGE.  Under an MPI launcher the options are the same on
 * every rank: a rank that does not speak (cmd_speaks()) says it only if
 * the launcher has not ended it within CMD_QUIET_WAIT_MS (as
 * cmd_node_error(): the error may be its own, a file missing there).
 */
int cmd_usage_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * As cmd_usage_error(), for an error in the command line's own text (an
 * option's name or the form of its value), which every rank given the
 * same command line meets: only the first rank says it; the others wait
 * for the launcher as ever, then leave without a word (a launcher such
 * as Hydra ends no rank for another, so they would all say it).
 */
int cmd_syntax_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * getopt_long() returned CH ('?': an unknown option, ':': one without
 * its value; OPTSTRING must start with ':', after any '+', and opterr be
 * 0, so that getopt itself says nothing on every rank): the usage error
 * that names the option in ARGV.
 */
int cmd_option_error(const char *cmd, char *const argv[], int ch);

/*
 * Whether this agent says what every agent would: the first rank under
 * an MPI launcher (OMPI_COMM_WORLD_RANK, PMIX_RANK or PMI_RANK 0), or an
 * agent started alone.  Warnings about the options are the same on every
 * node: one line for the job, not one per node.
 */
bool cmd_speaks(void);

/* How long a rank that does not speak waits for the launcher to end it
 * before it leaves with an error the first rank should have said. */
#define CMD_QUIET_WAIT_MS 3000

/*
 * "vigil CMD: MESSAGE" for a usage error every agent of the job meets
 * alike, from the same options or the same batch file's text: said once,
 * by the agent that speaks (cmd_speaks()).  Another says nothing; it
 * waits up to CMD_QUIET_WAIT_MS first, for the launcher to end it, so
 * that its leaving cannot make the launcher kill the first rank before
 * that one has said it (mpirun ends the others with SIGTERM once one
 * rank exits with a failure).  Every agent returns VIGIL_EXIT_USAGE.
 */
int cmd_job_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * As cmd_job_error(), for an error that may be this node's own (the
 * batch file unreadable here, a directory missing here): a rank that
 * does not speak, still running after the wait, says it too, as the
 * first rank may not have met it.  Under mpirun, which ends the job once
 * the first rank fails, the message comes once either way.
 */
int cmd_node_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * This node's name, from VIGIL_NODE_NAME or else the hostname, into BUF.
 * Names go into hostfiles, messages and events, so one that is not a
 * valid host name (a newline, blanks, "evil slots=128") is refused:
 * returns 0, or VIGIL_EXIT_USAGE after a message on stderr that says
 * what is wrong and how to set a valid one.
 */
int cmd_node_name(char *buf, size_t len);

/* The slots of TOPOLOGY (an lstopo XML file) or of this machine (NULL).
 * Returns 0 or a negative errno, logged. */
int cmd_discover(const char *topology, struct slot **slots, size_t *nslots);

/*
 * The flags that describe a healthy node, shared by `check` and `run`
 * (its pre-check): kept aside while parsing, then laid over the
 * configuration file, which they override.
 */
struct cmd_check_flags {
	const char *config, *root, *topology, *slots, *timeout;
	char **nics, **ibs, **paths;
	size_t nnics, nibs, npaths;
};

/* Their getopt entries; the values are the `c` cmd_check_flag() takes. */
#define CMD_CHECK_OPTIONS \
	{ "config", required_argument, NULL, 'c' }, \
	{ "sysfs-root", required_argument, NULL, 'r' }, \
	{ "topology", required_argument, NULL, 't' }, \
	{ "slots", required_argument, NULL, 's' }, \
	{ "nic", required_argument, NULL, 'n' }, \
	{ "ib", required_argument, NULL, 'i' }, \
	{ "path", required_argument, NULL, 'p' }, \
	{ "timeout", required_argument, NULL, 'T' }
#define CMD_CHECK_NOPTIONS 8

/* Take option C if it is a check flag: returns 1 when taken, 0 when it
 * is not one of them, or an exit status (> 1) after a message. */
int cmd_check_flag(const char *cmd, int c, const char *arg, struct cmd_check_flags *f);

/* Load the configuration file named by --config, then lay the flags over
 * it.  Returns 0 or an exit status after a message: usage (a bad flag
 * value), config (a bad file), internal. */
int cmd_check_flags_apply(const char *cmd, const struct cmd_check_flags *f, struct config *cfg);

void cmd_check_flags_free(struct cmd_check_flags *f);

#endif
