/*
 * ckpt.h - was the checkpoint saved?  The evidence a training gives after
 * the checkpoint signal, and the verdict the job report carries
 * ("checkpoint not confirmed" names the nodes whose training gave none).
 *
 * The user says what a save looks like with --ckpt-confirm SPEC:
 *
 *   file:PATH        the training writes or touches PATH once the
 *                    checkpoint is complete (torch.save to a temporary
 *                    file, then rename: the rename is the evidence).
 *                    Confirmed when PATH's modification time, size or
 *                    inode differ from what they were when the signal was
 *                    sent (or PATH appears): no clock is compared, so a
 *                    shared file system whose server clock is off does not
 *                    matter.
 *   output:REGEX     a line of the training's output (stdout or stderr),
 *                    printed after the signal, matches REGEX (POSIX
 *                    extended; "checkpoint saved at iteration [0-9]+").
 *
 * Without --ckpt-confirm the exit is the evidence, as the platform's
 * checkpoint semantics have it (save, then exit): exit status 0 after the
 * signal is a save; a death by a signal (the checkpoint signal itself:
 * the training has no handler for it), another status, or no exit within
 * the grace period is not.
 *
 * Pure except ckpt_confirm_start() and ckpt_confirm_poll(), which stat()
 * the file of file:PATH.  Nothing here logs; nothing blocks.
 */
#ifndef VIGIL_CKPT_H
#define VIGIL_CKPT_H

#include <stdbool.h>
#include <stddef.h>

struct ckpt_confirm;

/*
 * Parse SPEC (NULL or "": the exit decides).  Returns 0, or -EINVAL with
 * one line in ERR naming what is wrong and the forms accepted, or
 * -ENOMEM.  On failure *out is NULL.
 */
int ckpt_confirm_new(const char *spec, struct ckpt_confirm **out, char *err, size_t errlen);

void ckpt_confirm_free(struct ckpt_confirm *c);  /* NULL: no-op */

/* The checkpoint signal was just sent: evidence counts from now on (and
 * file:PATH's state is recorded).  Again for a later signal. */
void ckpt_confirm_start(struct ckpt_confirm *c);

/* One line of the training's output (without its newline), after
 * ckpt_confirm_start(); returns whether the save is confirmed now. */
bool ckpt_confirm_line(struct ckpt_confirm *c, const char *line, size_t len);

/* file:PATH: looks at the file; returns whether the save is confirmed now. */
bool ckpt_confirm_poll(struct ckpt_confirm *c);

/* Whether the evidence came (false also before ckpt_confirm_start()). */
bool ckpt_confirmed(const struct ckpt_confirm *c);

/*
 * The verdict once the training ended or the grace period did: EXITED and
 * WAIT_STATUS (a waitpid() status, valid when EXITED) say how the training
 * ended.  Returns true for a confirmed save; WHY (LEN bytes) gets a short
 * reason for the report either way ("exit status 0 after the checkpoint
 * signal", "died of SIGUSR1: no handler for the checkpoint signal", ...).
 */
bool ckpt_confirm_verdict(struct ckpt_confirm *c, bool exited, int wait_status, int ckpt_signal,
                          char *why, size_t len);

#endif
