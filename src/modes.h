/*
 * modes.h - the distributed environment of each training mode, as the
 * platform manual defines it (seeds: "分布式模式说明"): environment
 * variables, hostfiles, TF_CONFIG and the command actually run.
 *
 * Pure: builds a description of the launch from a plan; writing the files
 * is a separate call.  Nothing here calls MPI or reads the system.
 */
#ifndef VIGIL_MODES_H
#define VIGIL_MODES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

enum mode { MODE_SINGLE, MODE_PYTORCH, MODE_DEEPSPEED, MODE_HOROVOD, MODE_TENSORFLOW };

/* "single", "pytorch", "deepspeed", "horovod", "tensorflow" */
const char *mode_name(enum mode m);
int mode_parse(const char *s, enum mode *out);  /* 0 or -EINVAL */

struct mode_node {
	const char *host;   /* name other nodes reach it by (hostfiles, TF_CONFIG) */
	int slots;          /* accelerators; 1 on a CPU node (the manual's SLOTS) */
};

struct mode_plan {
	enum mode mode;
	const struct mode_node *nodes;  /* the nodes the training runs on, by node rank */
	int nnodes;
	int node_rank;                  /* this node's index in nodes[] */
	const char *master_addr;        /* node rank 0's address */
	int master_port;
	int ps;                         /* tensorflow: parameter servers; 0 = AllReduce */
	int tf_port;                    /* tensorflow: each task's port */
	const char *vendor;             /* this node's slots: "nvidia", "amd", "cambricon"; NULL on a CPU node */
	int nslots;                     /* this node's slot count (0 on a CPU node) */
	const char *hostfile;           /* deepspeed, horovod (Open MPI form) */
	const char *mpich_hostfile;     /* horovod (MPICH form) */
	char *const *argv;              /* the user's command, already through cmdline_check() */
	char *const *envp;              /* the environment to start from */
};

struct mode_file {
	char *path;
	char *content;
};

struct mode_launch {
	bool run;                 /* false: this node runs no child (horovod off the coordinator) */
	char **argv;              /* NULL-terminated; NULL when !run */
	char **envp;              /* NULL-terminated "KEY=VALUE" */
	struct mode_file files[2];
	int nfiles;
};

/*
 * Build this node's launch.  Returns 0, or -EINVAL with one line in ERR
 * (e.g. "tensorflow: --ps 3 leaves no worker among 3 nodes"), or -ENOMEM.
 */
int mode_build(const struct mode_plan *p, struct mode_launch *out, char *err, size_t errlen);

/*
 * Write the launch's files (creating parent directories), each atomically
 * (a temporary file renamed into place).  Returns 0, or a negative errno
 * with ERR naming the path.
 */
int mode_write_files(const struct mode_launch *l, char *err, size_t errlen);

/*
 * For --dry-run: the variables the launch sets or removes relative to
 * BASE_ENVP (sorted), each file with its content, and the exact command,
 * shell-quoted.
 */
void mode_describe(FILE *f, const struct mode_launch *l, char *const *base_envp);

void mode_launch_free(struct mode_launch *l);

#endif
