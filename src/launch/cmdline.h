/*
 * cmdline.h - the platform manual's rules for the run command
 * ("运行指令说明"): the command must start with an executable, and holds
 * one command only.
 */
#ifndef VIGIL_CMDLINE_H
#define VIGIL_CMDLINE_H

#include <stddef.h>

/*
 * Check the command ARGV[0..ARGC) given after `--`, and return it as a
 * NULL-terminated argv the caller owns (cmdline_free()).
 *
 * A single argument that contains blanks is a command line, as the
 * platform's form takes it: it is split into words like a shell would
 * (quotes and backslashes), with no expansion of any kind.
 *
 * Rejected, with -EINVAL and a message in ERR that names what is wrong and
 * shows the `bash -c "..."` form that does what was meant:
 *   - an empty command;
 *   - a first word of the form KEY=VALUE (an assignment, not an executable);
 *   - a word that is a shell operator (&&, ||, ;, |, &, redirections), or,
 *     in a command line, an unquoted operator character inside a word.
 * In argv form other words are data and may contain anything
 * (`python -c "import a; a.main()"` is fine).
 */
int cmdline_check(int argc, char *const argv[], char ***out, char *err, size_t errlen);

void cmdline_free(char **argv);

/* ARGV as one line a POSIX shell would read back to the same words. NULL on ENOMEM. */
char *cmdline_quote(char *const argv[]);

#endif
