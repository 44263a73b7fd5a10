/*
 * verdict.h - the outcome of one check, and one problem a check found (a
 * finding), shared by config, check, peer and the agents' messages.
 *
 * A finding is the same thing wherever it is found or carried: the
 * pre-check's rules (check/judge.h), the inspection of a running job
 * (check/inspect.h), the vendors' board health (check/vhealth.h) and the
 * note that takes it to the coordinator (comm/msg.h) all use struct
 * finding, filled by finding_vset() or finding_add() alone.
 */
#ifndef VIGIL_VERDICT_H
#define VIGIL_VERDICT_H

#include <stdarg.h>
#include <stddef.h>

enum verdict { VERDICT_PASS = 0, VERDICT_WARN = 1, VERDICT_FAIL = 2 };

/* "pass", "warn", "fail"; "?" for an out-of-range value. */
const char *verdict_name(enum verdict v);

/* Parse "pass"/"warn"/"fail"; returns 0, or -EINVAL. */
int verdict_parse(const char *s, enum verdict *out);

/* One problem found.  Plain values: copy it with `=`. */
struct finding {
	char what[16];        /* the check: "slot", "pcie", "aer", "driver", "library",
	                       * "memory", "storage", "limits", "nic", "ib", "board",
	                       * "xid", "ecc", "nvlink", ... */
	char device[64];      /* what it concerns: "0000:3b:00.0", "eth1", "mlx5_0/1",
	                       * "node1", a path (too long a path keeps its end:
	                       * "...ckpt/run7"), "nvml"; "" for the node as a whole */
	enum verdict verdict; /* VERDICT_WARN or VERDICT_FAIL (a fault); PASS only in a
	                       * node's note that a failure it reported is over */
	char evidence[256];   /* one line, a whole sentence that names the device:
	                       * "eth1 is down (operstate down, no carrier)" */
};

/*
 * Fill F: WHAT copied (cut at 15 bytes), DEVICE (NULL: "") copied keeping
 * the end of one too long, the evidence formatted from FMT (cut at 255
 * bytes); a control character in any of them becomes '?', so a newline in
 * a path cannot break the one-line promise.  No I/O.
 */
void finding_vset(struct finding *f, enum verdict v, const char *what, const char *device,
                  const char *fmt, va_list ap) __attribute__((format(printf, 5, 0)));

/* A growing array of findings.  Start it zeroed; err is set (and the list
 * takes no more) when memory runs out. */
struct finding_list {
	struct finding *v;
	size_t n, cap;
	int err;
};

/* Append a finding as finding_vset() fills it, unless V is VERDICT_PASS. */
void finding_add(struct finding_list *l, enum verdict v, const char *what, const char *device,
                 const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/*
 * Hand the list over: *OUT (NULL when *N is 0; the caller free()s it) and
 * *N, and 0; or, after a failed allocation, the list freed and -ENOMEM.
 */
int finding_list_end(struct finding_list *l, struct finding **out, size_t *n);

#endif
