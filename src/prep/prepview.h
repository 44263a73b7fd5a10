/*
 * prepview.h - the coordinator's view of every node's preparation (prep.h):
 * how far each node's staging is (bytes and files), the whole job's
 * progress and time left, who is done and who fell silent, for the lines
 * people read while nodes stage and for the report.
 *
 * Pure data: time comes in as an argument, nothing is printed or sent, so
 * the lines and the ETA are unit-tested with a fake clock.
 */
#ifndef VIGIL_PREPVIEW_H
#define VIGIL_PREPVIEW_H

#include <stdbool.h>
#include <stddef.h>

#include <cJSON.h>

#include "comm/msg.h"

struct prepview;

/* A view of SIZE ranks, from NOW.  NULL with errno. */
struct prepview *prepview_new(int size, double now);
void prepview_free(struct prepview *v);  /* NULL is a no-op */

/* RANK said M at NOW.  Returns 1 when RANK is done with this message, 0 otherwise, -ENOMEM. */
int prepview_update(struct prepview *v, int rank, const struct msg_prep *m, double now);

/* Ranks not done and silent for SILENT_S before NOW are given up.  Returns how many now. */
int prepview_expire(struct prepview *v, double now, double silent_s);

/* Every rank is done or given up. */
bool prepview_complete(const struct prepview *v);

/* RANK is given up (silent) or done. */
bool prepview_silent(const struct prepview *v, int rank);
bool prepview_done(const struct prepview *v, int rank);

/*
 * While nodes stage: "staging: 1.2 of 4.0 GiB, 130 of 400 files (30%),
 * 210 MiB/s, about 14 s left; n1 45%, n2 30%, n3 done" into BUF.  False
 * when no node copies anything (nothing to say).  The time left is the
 * slowest node's: its bytes and files left, each at the cost its copy so
 * far showed (a least-squares fit of each interval's time to its bytes
 * and files).
 */
bool prepview_line(const struct prepview *v, double now, char *buf, size_t len);

/* Once complete: "staged on 3 nodes in 4.2 s: ..." into BUF; false when nothing was staged. */
bool prepview_summary(const struct prepview *v, char *buf, size_t len);

/*
 * The report's "staging" section: {"seconds", "copied_bytes",
 * "copied_files", "data_bytes", "nodes": [{"node", "rank", "ok",
 * "error"?, "seconds", "copied_bytes", "copied_files", "copy_bytes",
 * "data_bytes", "data_files"}]}; NULL when nothing was staged.
 */
cJSON *prepview_report(const struct prepview *v);

#endif
