/*
 * notify.h - run the site's notifier (`vigil run --notify CMD`) for an
 * alert, without ever waiting for it.
 *
 * The coordinator calls notify_spawn() from its loop for each alert.  The
 * notifier is `/bin/sh -c CMD` with the alert's JSON on stdin; it may mail,
 * post to a chat, page someone, take as long as it likes or fail: the agent
 * does not wait.  The agent, a child subreaper, reaps it with every other
 * child when SIGCHLD comes; the caller may kill it (its process group,
 * kill(-pid, SIGKILL)) if it is still running after a deadline of its
 * choosing.
 *
 * What the notifier gets:
 *   stdin   a pipe holding the JSON (at most NOTIFY_JSON_MAX bytes), then EOF
 *   stdout  /dev/null: vigil's stdout carries the training's output byte
 *           for byte, and a notifier's chatter has no place in it
 *   stderr  the agent's, so that its failures reach the job's log
 *   the agent's environment and working directory; its own process group;
 *   every signal at its default disposition and none blocked (the agent
 *   blocks the signals it reads from a signalfd); no other descriptor of
 *   the agent (where the kernel has close_range(CLOSE_RANGE_CLOEXEC)).
 */
#ifndef VIGIL_NOTIFY_H
#define VIGIL_NOTIFY_H

#include <stddef.h>
#include <sys/types.h>

/*
 * The largest JSON passed, in bytes: PIPE_BUF, which every pipe holds at
 * once even where the user's pipe allowance is spent and the kernel hands
 * out one-page pipes.  The whole JSON is in the pipe before the notifier
 * starts, so a notifier that never reads stdin cannot block the agent.
 * An alert is a few hundred bytes.
 */
#define NOTIFY_JSON_MAX 4096

/*
 * Start `/bin/sh -c CMD` with JSON (a NUL-terminated string, written
 * without its NUL) on its stdin.  Returns 0 with the notifier's pid (which
 * is also its process group id) in *PID as soon as it is forked, before it
 * runs; a command that fails or cannot be found is the shell's business
 * (it says so on stderr and exits 127).  Returns -EINVAL for an empty CMD,
 * -EMSGSIZE when JSON exceeds NOTIFY_JSON_MAX, or another negative errno
 * (pipe, /dev/null, fork); then nothing was started.  Never waits for the
 * child; may run in a loop callback.  Call from a single-threaded agent or
 * the thread that owns the children (fork).
 */
int notify_spawn(const char *cmd, const char *json, pid_t *pid);

/*
 * Whether CMD may be the notifier: as root, it must not run a program or
 * script that another user could change (proc/trust.h says what is
 * judged).  0, or -EPERM, -EACCES or -ELOOP with WHY naming the file, the
 * reason and the fix.  Checked once before the job starts, on every node.
 */
int notify_check(const char *cmd, char *why, size_t whylen);

#endif
