/*
 * progress.h - the per-iteration timing lines a training prints (the
 * platform's 性能检测):
 *
 *   this iteration hardware time is 2201.521 and e2e time is 3317.794921875 ms.
 *
 * Recognised in any line of the training's stdout or stderr, also behind a
 * launcher's prefix (torchrun's "[default3]:", vigil's "[node:rank] ",
 * Open MPI's "[1,3]<stdout>:"), with any number format (integer, decimal,
 * exponent).  Pure: no I/O, no allocation per line.
 */
#ifndef VIGIL_PROGRESS_H
#define VIGIL_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>

struct progress_line {
	double hw_ms;         /* hardware time, ms (finite, >= 0) */
	double e2e_ms;        /* end-to-end time, ms (finite, > 0) */
	char key[32];         /* the local process the line came from: the launcher's
	                       * prefix without decoration ("default3", "1,3", "n1:0"),
	                       * or "" when the line has none */
};

/*
 * Parse LINE[0..LEN) (no newline; may hold any bytes, including NUL and
 * invalid UTF-8).  Returns true and fills *OUT for a timing line, false
 * for anything else.  Cheap on lines that are not timing lines (the common
 * case): it looks for the fixed text before doing anything else.
 */
bool progress_parse(const char *line, size_t len, struct progress_line *out);

#endif
