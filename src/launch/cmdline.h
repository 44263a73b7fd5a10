/*
 * cmdline.h - the platform manual's rules for the run command
 * ("运行指令说明"): the command must start with an executable, and holds
 * one command only.
 */
#ifndef VIGIL_CMDLINE_H
#define VIGIL_CMDLINE_H

#include <stdbool.h>
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

/*
 * What a command runs, read as a shell reads a command, for the modes that
 * treat some commands specially (an MPI launcher, python).
 *
 * The command word of WORDS[0..N): the index of the first word that is
 * not a wrapper or a wrapper's option, N when there is none.  Wrappers
 * run the rest of their words as a command: env (with -i, -u NAME and
 * NAME=VALUE words), exec, command (but command -v/-V only looks),
 * nohup, time, nice, timeout (and its DURATION), stdbuf and setsid;
 * options in one word (-n10, --signal=KILL) or short ones that take the
 * next (-n 10).  With SCRIPT (the words of a simple command of a shell
 * script) also NAME=VALUE assignments and the reserved words that open
 * or continue a compound command (if, then, do, !, {, ...) come before
 * it, and for, case, select and function have none.
 */
size_t cmdline_command_index(char *const *words, size_t n, bool script);

/*
 * The index in ARGV of the script of a shell's -c, past wrappers (`env
 * X=1 bash -c ...`): sh, bash, dash, zsh, ksh, mksh or ash, by any path,
 * with -c among its options (-c, -lc, -e -c, -o pipefail -c, --norc -c);
 * 0 when ARGV is not such a command.  *SHELL (may be NULL) gets the
 * shell's index.
 */
size_t cmdline_shell_script(char *const *argv, size_t *shell);

/*
 * Calls FN on the command word (cmdline_command_index()) of each simple
 * command of shell text SCRIPT: split at blanks and at what separates
 * commands (; & | ( ) ` and line breaks), quotes and backslashes
 * removed, comments skipped.  Stops and returns true as soon as FN does.
 * Words inside quotes are never commands ("echo 'mpirun'"), nor are
 * arguments (echo mpirun).
 */
bool cmdline_any_command_word(const char *script, bool (*fn)(const char *word));

/* The same for every word of SCRIPT, command or argument. */
bool cmdline_any_script_word(const char *script, bool (*fn)(const char *word));

#endif
