/*
 * verdict.h - the outcome of one check, shared by config, check and peer.
 */
#ifndef VIGIL_VERDICT_H
#define VIGIL_VERDICT_H

enum verdict { VERDICT_PASS = 0, VERDICT_WARN = 1, VERDICT_FAIL = 2 };

/* "pass", "warn", "fail"; "?" for an out-of-range value. */
const char *verdict_name(enum verdict v);

/* Parse "pass"/"warn"/"fail"; returns 0, or -EINVAL. */
int verdict_parse(const char *s, enum verdict *out);

#endif
