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
#define FORENSICS_BUDGET_S 5.0    /* the default budget of a whole gathering */

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
 * [lines]}], "seconds", "gdb": "used" | "not installed" | "off",
 * "left_out"?: N}; NULL on ENOMEM.  A process gone meanwhile is left out.
 */
cJSON *forensics_gather(const pid_t *pids, size_t n, const struct forensics_opts *o);

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
