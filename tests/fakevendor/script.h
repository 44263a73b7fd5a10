/*
 * script.h - the answers of the fake vendor libraries, read from the file
 * that VIGIL_FAKE_VENDOR names.
 *
 * The fake NVML, ROCm SMI and CNDev libraries (nvml.c, rsmi.c, cndev.c)
 * implement the calls vigil makes, as vendor_abi.h declares them, and
 * answer from a script of lines
 *
 *     VENDOR INDEX KEY VALUE...
 *
 * VENDOR is "nvidia", "amd" or "cambricon"; INDEX is a board's index, or
 * "-" for the library as a whole; '#' starts a comment.  A key given twice
 * keeps its last value, except "event", whose lines are a board's events
 * in order, and "error" and "slow", whose lines name a call each.  The keys each library knows are listed in README.md beside
 * this file.  The script is read again at every initialisation and, for
 * NVML's events, at every wait, so a test changes the answers by
 * rewriting it (whole: write another file and rename it).  A library may
 * be called from two threads at once: every table read stays valid.
 *
 * Test code only: never installed, never loaded by a real node.
 */
#ifndef FAKEVENDOR_SCRIPT_H
#define FAKEVENDOR_SCRIPT_H

#include <stdbool.h>

/* Only the vendor entry points are exported from each library. */
#pragma GCC visibility push(hidden)

/* Read the script again.  Returns 0, or -1 when VIGIL_FAKE_VENDOR is unset
 * or unreadable (every board then absent). */
int script_load(void);

/* Boards of VENDOR: one more than the highest index named, boards marked
 * "absent 1" still counted (the caller leaves them out). */
int script_boards(const char *vendor);

/* The value of KEY for board INDEX (-1: the "-" lines), or NULL. */
const char *script_value(const char *vendor, int index, const char *key);

/* As script_value, as an integer (decimal or 0x hex); DFLT when absent. */
long long script_ll(const char *vendor, int index, const char *key, long long dflt);

/* Whether the key is given at all. */
bool script_has(const char *vendor, int index, const char *key);

/* The number of "event" lines of board INDEX, and the Nth one's value. */
int script_events(const char *vendor, int index);
const char *script_event(const char *vendor, int index, int n);

/* "hang STAGE" on the "-" line of VENDOR: sleep for ever at STAGE, to
 * stand for a library stuck on a wedged board. */
void script_maybe_hang(const char *vendor, const char *stage);

/* The number N of the last line "KEY CALL N" of board INDEX, or 0. */
unsigned script_call(const char *vendor, int index, const char *key, const char *call);

/* The code a call named CALL returns for board INDEX ("error CALL CODE"),
 * or 0. */
unsigned script_error(const char *vendor, int index, const char *call);

/* What every call named CALL does first, for board INDEX (-1: the
 * library): with "- trace FILE", append its name to FILE as a line; with
 * "INDEX slow CALL MS", sleep MS milliseconds (a board slow to answer). */
void script_enter(const char *vendor, int index, const char *call);

/* Board INDEX of the library: the INDEXth board not marked "absent 1"
 * (a board gone from the library's enumeration); -1 when none. */
int script_nth(const char *vendor, int index);

/* Boards the library enumerates (not marked absent). */
int script_present(const char *vendor);

/* Parse "DDDD:BB:DD.F" into its numbers; 0, or -1 when malformed. */
int script_bus(const char *text, unsigned *domain, unsigned *bus, unsigned *dev,
               unsigned *fn);

#pragma GCC visibility pop

#endif
