/*
 * forensics.h - what the processes of a hung training are doing, read
 * without their help: for each process its state (R/S/D/T/Z) and wait
 * channel, its kernel stack (as root), the CPU time it used while it was
 * looked at (spinning or blocked), the training rank its launcher gave it
 * (RANK where LOCAL_RANK is set), and its user stack from gdb when gdb is
 * installed (with the Python frames too where gdb has Python support).
 *
 * Bounded in time and size: the /proc reads never wait on the process
 * (its environment, which needs the process's memory map, is not read
 * for a process in uninterruptible sleep: a process in D state may hold
 * that lock); gdb attaches only to processes that are running or
 * sleeping (not D: ptrace would wait with it; not T: a stopped process
 * does not answer the attach's stop), all at once, each in a process
 * group of its own, and is killed at the budget's end.  Frames, kernel
 * stack lines and processes are capped (FORENSICS_*).
 *
 * Runs in the caller: the agent's loop waits for it, at most the budget.
 */
#ifndef VIGIL_FORENSICS_H
#define VIGIL_FORENSICS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <cJSON.h>

#define FORENSICS_PROCS 64        /* processes looked at per node */
#define FORENSICS_FRAMES 24       /* user frames per process */
#define FORENSICS_KSTACK 16       /* kernel stack lines per process */
#define FORENSICS_PY_FRAMES 24    /* Python frames per process */
#define FORENSICS_BUDGET_S 12.0   /* the default budget of a whole gathering */
#define FORENSICS_OUT_MAX (4 << 20) /* the most a run's result may be (bytes) */

struct forensics_opts {
	double budget_s;          /* the whole gathering, gdb included; <= 0: the default */
	bool gdb;                 /* read user stacks with gdb when it is installed */
	const char *gdb_path;     /* NULL: /usr/bin/gdb, then /bin/gdb (never PATH) */
	const char *proc_root;    /* NULL: "/proc" (tests point it elsewhere) */
};

/*
 * Look at the N processes PIDS.  Returns {"processes": [{"pid", "ppid",
 * "comm", "state", "wchan", "kernel_stack": [...] | "kernel_stack_error",
 * "cpu_s" (used while looked at), "cpu_total_s", "threads", "train_rank"?,
 * "local_rank"?, "stack": [function names] | "stack_error", "py_stack"?:
 * [lines: 'File "F", line N, in FUNC', innermost first, the main thread's
 * first, each other thread's after a "thread ID" line]}], "seconds",
 * "gdb": "used" | "not installed" | "off",
 * "left_out"?: N}; NULL on ENOMEM.  A process gone meanwhile is left out.
 */
cJSON *forensics_gather(const pid_t *pids, size_t n, const struct forensics_opts *o);

/*
 * forensics_gather() in a child process of its own, so that the caller's
 * loop goes on (heartbeats above all) while gdb reads the stacks: the
 * child writes the result on a pipe and exits.  The child does not exec;
 * it forks gdb as forensics_gather() does.
 */
struct forensics_run;

/* Starts the look at the N processes PIDS into *OUT.  0 or a negative errno. */
int forensics_start(const pid_t *pids, size_t n, const struct forensics_opts *o,
                    struct forensics_run **out);

/* The descriptor to poll for input (POLLIN, and POLLHUP at the end). */
int forensics_run_fd(const struct forensics_run *r);

/*
 * Reads what the child wrote.  0: not done yet; 1: done, *OUT the result
 * (forensics_gather()'s, or {"error": WHY, "processes": []} when the
 * child failed), the child reaped.  Never blocks.
 */
int forensics_run_read(struct forensics_run *r, cJSON **out);

/*
 * Ends a run that is not done (the child killed and reaped) and frees
 * it.  NULL is a no-op.
 */
void forensics_run_free(struct forensics_run *r);

/*
 * Whether one of the N processes PIDS holds a file under DIR (an
 * absolute path, no trailing slash needed) open: a save in progress when
 * DIR is where the training saves.  Reads the links in /proc/PID/fd (no
 * file system is touched); PROC_ROOT NULL: "/proc".
 */
bool forensics_open_under(const pid_t *pids, size_t n, const char *dir, const char *proc_root);

/*
 * The user frames of gdb's backtrace TEXT ("#3  0x... in read (...)" or
 * "#0  read (...)"): function names, "??" where gdb had none, at most MAX
 * into OUT (a JSON array).  Python frames (py-bt's "File ..., line N, in
 * F") go to PY when not NULL.  Pure, for tests.
 */
void forensics_parse_gdb(const char *text, cJSON *out, cJSON *py, int max);

#endif
