/*
 * modes.h - the distributed environment of each training mode, as the
 * platform manual defines it (seeds: "分布式模式说明"): environment
 * variables, hostfiles, TF_CONFIG and the command actually run.
 *
 * Builds a description of the launch from a plan; writing the files is a
 * separate call.  Nothing here calls MPI; the one look at the system is
 * PyTorch mode's --torch-launcher auto, which reads the training's script
 * (mode_torch_choose()).
 *
 * What each mode sets and runs (the man page's MODES section says the same
 * to users):
 *
 *   every mode  the training's environment is the agent's, less the outer
 *               MPI job's identity (mode_is_job_identity(): what mpirun,
 *               ORTE, PMIx and Hydra put there for the agent), plus
 *               MASTER_ADDR, MASTER_PORT, WORLD_SIZE (nodes), RANK (node
 *               rank), SLOTS, VIGIL_MODE, VIGIL_NODE_RANK,
 *               VIGIL_WORLD_SIZE and one visible-device variable per vendor
 *               present.  A training that calls MPI_Init therefore runs as
 *               an MPI singleton instead of claiming the agent's rank.
 *               ${WORLD_SIZE}, ${SLOTS}, ${RANK}, ${MASTER_ADDR} and
 *               ${MASTER_PORT} ($NAME too) in the command's words are
 *               replaced by these values, so the manual's torchrun example
 *               runs as printed; never inside the text of a shell's -c
 *               script, which a shell reads with its own rules (quotes,
 *               assignments, loops) and which finds the variables in its
 *               environment.
 *   pytorch     python[3] SCRIPT (also after `env KEY=VALUE ...`) runs
 *               under the torch launcher: torch.distributed.launch (the
 *               manual's: it passes --local_rank, and sets LOCAL_RANK) or
 *               torch.distributed.run (LOCAL_RANK only).  MODE_TORCH_AUTO
 *               chooses from the script: launch when it declares a
 *               --local_rank or --local-rank option, run when it does not,
 *               launch when it cannot be read (mode_torch_choose()).
 *               Both are told to look at their workers often enough for
 *               the grace period (PET_MONITOR_INTERVAL).
 *   deepspeed   the hostfile ("host slots=N"), and a `deepspeed` command
 *               gets --hostfile=FILE --no_ssh --node_rank=R
 *               --master_addr=A --master_port=P: each agent starts its own
 *               node's processes, together one job of SLOTS x N processes.
 *               This is DeepSpeed's documented no-SSH mode (DeepSpeed >=
 *               0.14.5, getting-started tutorial, "Launching without
 *               passwordless SSH").  The alternative, DeepSpeed's
 *               multi-node runner on the coordinator only, would start the
 *               other nodes' processes over pdsh/ssh: outside the agents,
 *               so no checkpoint signal, no tracking, and it needs
 *               passwordless ssh, which MPI clusters do not promise.
 *   horovod     Open MPI and MPICH hostfiles, OMPI_MCA_orte_default_hostfile,
 *               HYDRA_HOST_FILE, HYDRA_IFACE; node rank 0 runs the command
 *               under the manual's mpirun prefix unless it already launches
 *               MPI (mode_launches_mpi()); the other nodes run nothing.
 *   tensorflow  TF_CONFIG.
 *   single      the command as given.
 */
#ifndef VIGIL_MODES_H
#define VIGIL_MODES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

enum mode { MODE_SINGLE, MODE_PYTORCH, MODE_DEEPSPEED, MODE_HOROVOD, MODE_TENSORFLOW };

/* PyTorch mode's launcher module; the zero value is the default. */
enum mode_torch {
	MODE_TORCH_AUTO,        /* launch or run, as the script declares (mode_torch_choose()) */
	MODE_TORCH_LAUNCH,      /* torch.distributed.launch: --local_rank=N and LOCAL_RANK */
	MODE_TORCH_RUN,         /* torch.distributed.run (torchrun): LOCAL_RANK only */
};

/* "auto", "launch", "run" */
const char *mode_torch_name(enum mode_torch t);
int mode_torch_parse(const char *s, enum mode_torch *out);  /* 0 or -EINVAL */

/* "single", "pytorch", "deepspeed", "horovod", "tensorflow" */
const char *mode_name(enum mode m);
int mode_parse(const char *s, enum mode *out);  /* 0 or -EINVAL */

/*
 * Whether mode M can run on NNODES nodes (single: one; tensorflow: more
 * than PS).  0, or -EINVAL with the reason in ERR.  Checked before the
 * preparation, on the job's whole size, and again on the nodes planned.
 */
int mode_check_nodes(enum mode m, int ps, int nnodes, char *err, size_t errlen);

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
	/* Each slot's vendor ("nvidia", "amd", "cambricon"), by slot index,
	 * nslots entries: a node with boards of several vendors gets one
	 * visible-device list per vendor.  NULL: all nslots are VENDOR's. */
	const char *const *slot_vendors;
	enum mode_torch torch_launcher; /* pytorch; default MODE_TORCH_AUTO */
	const char *workdir;            /* the training's working directory; NULL: ours
	                                 * (where a relative script is read from) */
	double grace_s;                 /* pytorch: the grace period, which the launcher's
	                                 * look at its workers must fit; 0: not known */
	const char *iface;              /* horovod: HYDRA_IFACE; NULL: "eth0", as the manual */
	const char *job_hostfile;       /* deepspeed: also written here when safe; NULL: /job/hostfile */
};

struct mode_file {
	char *path;
	char *content;
	bool optional;  /* written only where that is safe (mode_write_files()) */
};

struct mode_launch {
	bool run;                 /* false: this node runs no child (horovod off the coordinator) */
	char **argv;              /* NULL-terminated; NULL when !run */
	char **envp;              /* NULL-terminated "KEY=VALUE" */
	struct mode_file files[3];
	int nfiles;
	char *warning;            /* NULL, or one line for the user (the coordinator shows it) */
	char *note;               /* NULL, or which torch launcher and why (mode_torch_choose()) */
};

/*
 * Whether the environment entry "KEY=VALUE" (or a bare KEY) is part of the
 * outer MPI job's identity, which the training must not inherit: the
 * variables Open MPI's mpirun/orted (OMPI_COMM_WORLD_*, OMPI_MCA_ess*,
 * OMPI_MCA_orte_* but a few user settings, OMPI_MCA_pmix, ...), PMIx
 * (PMIX_* but PMIX_MCA_*) and MPICH's Hydra (PMI_*, MPI_LOCALRANKID, ...)
 * set for each process they start.  The user's and the site's settings
 * (OMPI_ALLOW_RUN_AS_ROOT*, OMPI_MCA_btl_tcp_if_exclude, MPIR_CVAR_*, ...)
 * are not identity and stay.
 */
bool mode_is_job_identity(const char *entry);

/*
 * Whether the training inherits ENTRY of the starting environment ENVP:
 * not when it is the outer job's identity, nor when it is a setting that
 * Open MPI's launcher made itself rather than the user or the site:
 * mpirun and orted give every process they start OMPI_MCA_orte_tmpdir_base
 * (the user's value when one was given, else their own default: TMPDIR,
 * TEMP, TMP or /tmp, as opal_tmp_directory() chooses) and
 * PMIX_MCA_mca_base_component_show_load_errors (a copy of Open MPI's own
 * parameter, overwriting a user's).  A tmpdir equal to the default seen
 * here is dropped: an inner mpirun finds the same default by itself, and
 * passing it on would force it on every remote daemon.
 */
bool mode_env_kept(const char *entry, char *const *envp);

/*
 * Whether ARGV launches MPI itself: its command word, or the command word
 * of a simple command in the script of a shell's -c, is an MPI launcher
 * (mpirun, mpiexec, orterun, horovodrun, srun; with or without a
 * directory, or a suffix such as .openmpi or .hydra).  The command word
 * is the first word, past NAME=VALUE assignments (in a script), the
 * shell's reserved words (if, then, do, !, ...) and the wrappers env,
 * exec, command, nohup, time, nice, timeout, stdbuf and setsid with their
 * options; a word that is an argument (echo mpirun, a comment, a string)
 * is not one.  The manual: "a command that contains mpirun is left
 * unchanged".
 */
bool mode_launches_mpi(char *const *argv);

/*
 * PyTorch mode's launcher for ARGV (a command vigil puts under it: python
 * SCRIPT or python -m MODULE).  T unless it is MODE_TORCH_AUTO; then the
 * script's text decides: a string literal that is "--local_rank" or
 * "--local-rank" (alone or followed by "=", as in add_argument(...) or a
 * sys.argv test) declares the option, and launch passes it; none means
 * run, whose workers read LOCAL_RANK.  The script is read from WORKDIR
 * when relative (NULL: the current directory), a module as MODULE.py or
 * MODULE/__main__.py there; its first 4 MiB are read, and only a regular
 * file of text: anything else (missing, unreadable, a directory, a zip
 * application) leaves the manual's launch, whose failure on a script
 * that rejects the argument says so, and which vigil then names.  WHY
 * gets the choice and its reason for the launch line, e.g.
 * "torch.distributed.run: train.py declares no --local_rank option".
 */
enum mode_torch mode_torch_choose(char *const *argv, enum mode_torch t, const char *workdir,
                                  char *why, size_t whylen);

/*
 * The same for the plan's command as mode_build() runs it: false when the
 * command is not put under a torch launcher (not PyTorch mode, torchrun,
 * a shell script, ...), else true with the choice and its reason in WHY.
 */
bool mode_torch_explain(const struct mode_plan *p, char *why, size_t whylen);

/*
 * A hint for a training that failed with TEXT (the end of its stderr) in
 * mode M: the fix vigil knows for what the text shows, or NULL.  Today:
 * "unrecognized arguments: --local_rank" (or --local-rank) in PyTorch
 * mode, a script that rejects what torch.distributed.launch passes, for
 * which --torch-launcher run is the fix.  A static string.
 */
const char *mode_failure_hint(enum mode m, const char *text, size_t len);

/*
 * Build this node's launch.  Returns 0, or -EINVAL with one line in ERR
 * (e.g. "tensorflow: --ps 3 leaves no worker among 3 nodes"), or -ENOMEM.
 */
int mode_build(const struct mode_plan *p, struct mode_launch *out, char *err, size_t errlen);

/*
 * Write the launch's files (creating parent directories), each atomically
 * (a temporary file renamed into place).  Returns 0, or a negative errno
 * with ERR naming the path.  An optional file (DeepSpeed's /job/hostfile)
 * is written only into a directory vigil can create or that is already
 * private to the caller (util_dir_is_private(): a real directory, owned
 * by the caller, writable by nobody else); otherwise it is skipped with a
 * warning that says why and where the hostfile is, and the call still
 * succeeds: the command names the hostfile with --hostfile anyway.
 */
int mode_write_files(const struct mode_launch *l, char *err, size_t errlen);

/*
 * mode_write_files(), where a file that goes straight into DIR (DIR/NAME)
 * is written relative to DIRFD, the descriptor of DIR the caller judged
 * and holds (the run directory, rundir.h), rather than by its path;
 * DIRFD < 0 or DIR NULL: as mode_write_files().
 */
int mode_write_files_in(const struct mode_launch *l, int dirfd, const char *dir, char *err,
                        size_t errlen);

/*
 * For --dry-run: the variables the launch sets or removes relative to
 * BASE_ENVP (sorted), each file with its content, the exact command,
 * shell-quoted, and the warning if there is one.
 */
void mode_describe(FILE *f, const struct mode_launch *l, char *const *base_envp);

void mode_launch_free(struct mode_launch *l);

#endif
