/*
 * trust.h - whether root may run a command another user could change.
 *
 * Hooks (`--hook`, the configuration's "hooks") and notifiers (`--notify`)
 * are shell command lines that vigil runs with /bin/sh -c, as root on many
 * sites.  A script or program in one that another user owns or may
 * write, or reaches through a link or directory of theirs, would run
 * their code as root; so, as root, such a command is refused before the
 * job starts.
 *
 * What is judged, from the command line's first simple command (leading
 * NAME=VALUE assignments, `exec` and `env` skipped):
 *   - the program, when it is named by a path (contains a '/'); a bare
 *     name is looked up in PATH by the shell and not judged here;
 *   - for an interpreter (sh, bash, dash, ksh, zsh, python, python3,
 *     python3.N, perl, ruby), also the script file it is given first
 *     (`bash FILE`, `python3 FILE`; not an option such as -c or -m);
 * each as lib/safepath.h judges a file: root's (or the caller's), writable
 * by no one else, through directories and links of root's only, none
 * writable by others but a sticky one.  A word the shell would expand
 * ($VAR, `...`, a glob, ~) cannot be known here and is not judged; a file
 * that does not exist is left to the shell to report when it runs.
 *
 * Nothing here logs; not for loop callbacks (it walks the file system).
 */
#ifndef VIGIL_TRUST_H
#define VIGIL_TRUST_H

#include <stddef.h>

/*
 * As root: 0 when COMMAND names no file another user could change, else
 * -EPERM, -EACCES or -ELOOP with WHY naming the file and the reason (the
 * caller says what the command was for and how to fix it).  Not root: 0
 * (vigil then runs nothing with more rights than its user's).
 */
int trust_command(const char *command, char *why, size_t whylen);

/* What the messages add after WHY: the rule and the fix. */
#define TRUST_FIX "as root, vigil runs only files that root alone may change, in " \
	"directories that root alone may change (chown root, chmod go-w)"

#endif
