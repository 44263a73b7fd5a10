/*
 * run.h - `vigil run`: launch and supervise the training on every node.
 *
 * The wiring of one job: pre-check and go/no-go at the coordinator, the
 * mode's environment, the child, the output pass-through, signals, and
 * the end of the job, all around one poll loop that never blocks on a peer.
 */
#ifndef VIGIL_RUN_H
#define VIGIL_RUN_H

#include "conf/config.h"
#include "conf/run_opts.h"

/*
 * Run the job.  CFG is the pre-check's configuration.  ARGC/ARGV go to
 * MPI_Init.  Returns the process exit status: the job's status on every
 * node (the training's own, 128+N for a signal, 126/127 when it could not
 * be executed, or a vigil code from include/vigil.h).
 */
int run_job(const struct run_opts *o, const struct config *cfg, int *argc, char ***argv);

#endif
