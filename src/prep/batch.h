/*
 * batch.h - batch tasks (the platform's 批量任务): several sub-tasks of one
 * job, each with its own command and algorithm directory, one of which
 * this run is.  Each sub-task's outputs go to OUTPUT/NAME-INDEX, the
 * platform's mapping, without the training knowing: it writes to
 * $VIGIL_OUTPUT_DIR, which is OUTPUT itself in a job that is not a batch.
 *
 * The batch file (JSON):
 *
 *   {"name": "sweep",                      NAME; default: the file's name
 *    "output": "/shared/out/sweep",        OUTPUT; --output-dir overrides it;
 *                                          one of the two is required
 *    "tasks": [
 *      {"command": ["python3", "train.py", "--lr", "0.1"],
 *       "algorithm": "/shared/algo/a"},    the working directory; optional
 *      {"command": ["python3", "train.py", "--lr", "0.01"]}]}
 *
 * No other key is accepted, at the top or in a task: a misspelt one
 * would run the task elsewhere, its outputs nowhere.
 *
 * The sub-task is the batch's INDEX-th (from 0): --batch-index, or on a
 * Slurm cluster the job array's SLURM_ARRAY_TASK_ID (sbatch --array=0-1).
 */
#ifndef VIGIL_BATCH_H
#define VIGIL_BATCH_H

#include <stddef.h>

#define BATCH_TASKS_MAX 100000
#define BATCH_FILE_MAX (4 << 20)

struct batch_task {
	char *name;            /* the batch's name */
	int index, count;      /* this sub-task, of COUNT */
	char **argv;           /* its command, NULL-terminated */
	int argc;
	char *algorithm;       /* its working directory; NULL: the agent's */
	char *output;          /* OUTPUT/NAME-INDEX */
};

/*
 * The INDEX-th sub-task of FILE; OUTPUT (may be NULL) replaces the file's
 * output path.  Returns 0 with *T filled (batch_task_free()), or a
 * negative errno with one line in ERR naming the file and what is wrong.
 * -EINVAL is for what the file says, the same wherever it is read; any
 * other (-ENOENT, -EACCES, -EFBIG, -EISDIR, -ENODEV, -ENOMEM) for this
 * node's reading of it.  What the file may say wrong:
 * not JSON (by line and column, as the configuration's parser says it),
 * a key it does not know (with those it does), a task without a command,
 * an index past the last task, no output directory in the file nor in
 * OUTPUT.
 */
int batch_load(const char *file, int index, const char *output, struct batch_task *t,
               char *err, size_t errlen);

/*
 * T's algorithm directory, if it has one, on this node (NODE, for the
 * message): 0 when it is a directory the agent can enter, else a negative
 * errno (-ENOENT, -ENOTDIR, -EACCES) with one line in ERR naming FILE,
 * the sub-task, the directory and the node.  Checked before the launch, so that a missing directory
 * is not mistaken for a missing command.
 */
int batch_check_algorithm(const struct batch_task *t, const char *file, const char *node,
                          char *err, size_t errlen);

/*
 * The sub-task's index: OPT (>= 0, --batch-index), else the job array's
 * SLURM_ARRAY_TASK_ID.  0 with *INDEX, or -EINVAL with the reason in ERR
 * (neither given, or the variable not a number).
 */
int batch_index(int opt, int *index, char *err, size_t errlen);

/*
 * The output directory DIR, made (with its parents, mode 0755) when
 * missing.  Every component is judged as lib/safepath.h says: no link,
 * none of another user's or writable by others (a sticky one like /tmp on
 * the way excepted), and DIR itself the user's, writable by no one else.
 * 0, or a negative errno with the component and the reason in ERR.
 */
int batch_make_output(const char *dir, char *err, size_t errlen);

/* VIGIL_BATCH_NAME, VIGIL_BATCH_INDEX, VIGIL_BATCH_COUNT for T (may be NULL),
 * and VIGIL_OUTPUT_DIR for OUTPUT (may be NULL).  0 or a negative errno. */
int batch_setenv(const struct batch_task *t, const char *output);

void batch_task_free(struct batch_task *t);

#endif
