/*
 * vendor.h - the accelerator vendors' management libraries, when present.
 *
 * NVML (libnvidia-ml.so.1, shipped with the NVIDIA driver), ROCm SMI
 * (librocm_smi64.so.1, with ROCm) and Cambricon CNDev (libcndev.so, with
 * the MLU driver) are loaded with dlopen(), so vigil builds and runs on
 * nodes that have none of them.  They describe the live system only:
 * callers skip them when checking a sysfs tree other than "/".
 *
 * This module is the gathering half of the board checks: it asks a library
 * what it knows about every board and returns plain facts (struct
 * vendor_facts, flat, so that it can cross a pipe); judging the facts is
 * vhealth's business.  NVML's initialisation can take seconds, and any
 * NVML call can hang on a wedged board: callers run these functions in a
 * child process under a deadline (vhealth.c does), never in the agent.
 *
 * A library named by path (check.boards.*_library in vigil.conf(5)) is
 * loaded only when it is a regular file owned by root or by the user vigil
 * runs as and writable by nobody else, reached through directories and
 * links of root's or that user's only, none writable by others but a
 * sticky one (lib/safepath.h); it is opened once, judged through that
 * descriptor, and loaded from it (/proc/self/fd/N), so the file judged is
 * the file loaded.  The default names are looked up the way the dynamic
 * linker always does (ld.so.cache, the system directories).  Nothing
 * here logs.
 */
#ifndef VIGIL_VENDOR_H
#define VIGIL_VENDOR_H

#include <stdbool.h>
#include <stddef.h>

enum vendor_kind { VENDOR_NVML, VENDOR_RSMI, VENDOR_CNDEV };
#define VENDOR_NKINDS 3

/* "NVML", "ROCm SMI", "CNDev"; "?" for an out-of-range value. */
const char *vendor_kind_name(enum vendor_kind k);

/* The library loaded when no path is configured: "libnvidia-ml.so.1", ... */
const char *vendor_default_library(enum vendor_kind k);

#define VENDOR_MAX_BOARDS 64
#define VENDOR_MAX_LINKS 36         /* NVLink links per board */
#define VENDOR_LINK_COUNTERS 5      /* replay, recovery, CRC flit, CRC data, ECC data */
#define VENDOR_RAS_BLOCKS 14        /* ROCm SMI RAS blocks, UMC to FUSE */

/* Recovery actions NVML recommends (nvmlDeviceGpuRecoveryAction_t). */
enum vendor_recovery {
	VENDOR_RECOVERY_NONE = 0,
	VENDOR_RECOVERY_RESET = 1,
	VENDOR_RECOVERY_REBOOT = 2,
	VENDOR_RECOVERY_DRAIN_P2P = 3,
	VENDOR_RECOVERY_DRAIN_AND_RESET = 4,
	VENDOR_RECOVERY_RECOVER_IMEX_DOMAIN = 5,
};

/*
 * What a library says about one board.  Every number the library did not
 * give (not supported by the board, the driver or the library, or not
 * asked after the board was lost) is -1; [0] of a pair counts corrected
 * (correctable) errors, [1] uncorrected ones.
 */
struct vendor_board {
	int index;                  /* the library's own index */
	char bus_id[24];            /* "0000:3b:00.0", lower case; "" when unknown */
	char name[96];              /* "NVIDIA H100 80GB HBM3"; "" when unknown */

	bool lost;                  /* NVML_ERROR_GPU_IS_LOST: fallen off the bus */
	bool reset_required;        /* NVML_ERROR_RESET_REQUIRED from some call */
	char lost_call[48];         /* the call that said either, for the evidence */
	char failed[128];           /* NVML: the calls that failed otherwise, ", "
	                             * between them ("" none); "not supported" is
	                             * no failure */
	char failed_why[64];        /* the first failure: "Unknown Error (999)" */

	int ecc_enabled;            /* 1, 0, -1 */
	long long ecc_volatile[2];  /* since the driver loaded */
	long long ecc_aggregate[2]; /* over the board's life */
	long long retired[2];       /* pages retired: [0] multiple SBE, [1] DBE */
	int retired_pending;        /* pages waiting for a reboot to retire: 1, 0, -1 */
	long long remapped[2];      /* rows remapped for correctable/uncorrectable errors */
	int remap_pending;          /* a remapping waits for a reset: 1, 0, -1 */
	int remap_failure;          /* a remapping has failed: 1, 0, -1 */
	int recovery;               /* enum vendor_recovery, -1 */

	long long throttle;         /* NVML clock event reasons; ROCm SMI throttle_status */
	int temperature;            /* degrees Celsius (AMD: junction, else edge) */
	int slowdown;               /* where the board slows down: NVML's slowdown
	                             * threshold, ROCm SMI's critical temperature */

	signed char link[VENDOR_MAX_LINKS];  /* NVLink: 1 active, 0 inactive, -1 none */
	long long link_errors[VENDOR_MAX_LINKS][VENDOR_LINK_COUNTERS];

	long long ras[VENDOR_RAS_BLOCKS][2]; /* ROCm SMI, per block; -1 where ECC is off */

	int health;                 /* CNDev: 1 healthy, 0 not */
	int device_state;           /* CNDev cndevHealthStateEnum_t */
	int driver_state;           /* CNDev cndevDriverHealthStateEnum_t */

	int utilization;            /* percent busy over the library's last sample */
	long long memory_used;      /* bytes */
	long long memory_total;     /* bytes */
	long long power_mw;         /* milliwatts */
};

/* What one library says about the node. */
struct vendor_facts {
	enum vendor_kind kind;
	char library[256];          /* the name or path that was loaded */
	char version[64];           /* driver version, "" when unknown */
	int count;                  /* boards the library counts, -1 when unknown */
	char error[200];            /* why the library could not answer, "" */
	size_t nboards;             /* boards[] filled, at most VENDOR_MAX_BOARDS */
	struct vendor_board boards[VENDOR_MAX_BOARDS];
};

/* Names for RAS block I (0 .. VENDOR_RAS_BLOCKS - 1): "umc", "sdma", ... */
const char *vendor_ras_block_name(unsigned i);

/* Names for NVLink counter I: "replay", "recovery", "crc_flit", "crc_data", "ecc_data". */
const char *vendor_link_counter_name(unsigned i);

/*
 * Whether PATH may be loaded (see the top of this file).  Returns 0, or
 * -EINVAL (not absolute), -ENOENT, -EPERM (not a regular file, owned by
 * someone else, or writable by group or others, or reached through a link
 * or directory of another user's or one others may write to) with a
 * one-line reason in ERR naming what was refused.
 */
int vendor_library_check(const char *path, char *err, size_t errlen);

struct vendor_lib;

/*
 * Load KIND's library (PATH, or the default name when NULL) and initialise
 * it.  *FACTS is reset and gets the library, the driver version and the
 * board count (no boards yet).  Returns 0 with *OUT set; -ENOENT when the
 * library is not installed (no event on a node without such boards);
 * -EPERM when PATH is refused; -ENOSYS when it lacks an entry point vigil
 * needs; -EIO when initialisation fails.  facts->error says why in every
 * failure.  Blocks as long as the library does.
 */
int vendor_open(enum vendor_kind kind, const char *path, struct vendor_lib **out,
                struct vendor_facts *facts);

/*
 * Read every board (up to VENDOR_MAX_BOARDS) into FACTS, which keeps the
 * library, version and count of vendor_open().  A board the library cannot
 * answer for is still listed, marked lost or with -1 values.  Returns 0,
 * or -EIO when the board count cannot be read (facts->error says why).
 * facts->error also keeps a failure of vendor_open() that did not stop the
 * library (NVML's driver version) with 0 returned.
 *
 * NVML: a board whose PCI identity cannot be read (fallen off the bus) is
 * named after the bus id the same open library gave its handle in an
 * earlier read, else after one of vendor_expect()'s bus ids that
 * nvmlDeviceGetHandleByPciBusId_v2 finds lost (nvml.h: enumeration order
 * is not stable, devices are to be looked up by PCI bus id).
 */
int vendor_read(struct vendor_lib *l, struct vendor_facts *facts);

/*
 * The PCI bus ids ("0000:3b:00.0") of the boards the node should have, for
 * vendor_read() to name a board the library cannot; copied, at most
 * VENDOR_MAX_BOARDS.  Only NVML uses them.
 */
void vendor_expect(struct vendor_lib *l, const char *const *bus_ids, size_t n);

/* One NVML event, as vendor_events_wait() returns it. */
enum vendor_event_kind {
	VENDOR_EVENT_XID = 1,       /* an XID error: xid holds its number */
	VENDOR_EVENT_DBE = 2,       /* a double-bit (uncorrectable) ECC error */
	VENDOR_EVENT_LOST = 3,      /* the wait answered "GPU is lost" */
};

struct vendor_event {
	int kind;                   /* enum vendor_event_kind */
	int board;                  /* the library's index; -1 when it cannot say */
	char bus_id[24];            /* "" when unknown */
	unsigned long long xid;
};

/*
 * NVML only: register every board vendor_read() has named for XID and
 * double-bit ECC events (nvmlEventSetCreate, nvmlDeviceRegisterEvents).
 * Events that happened before this call are not recorded (NVML's
 * contract).  Returns 0 when at least one board is registered; -ENOTSUP
 * for another library or when no board accepts the events; -EIO when the
 * event set cannot be made or is left unusable (NVML_ERROR_UNKNOWN).  ERR
 * gets the reason with NVML's own words ("nvmlDeviceRegisterEvents failed
 * on 0000:3b:00.0: Insufficient Permissions (4)"), also with 0 when some
 * board refused (vendor_events_refused() names the first); "" when every
 * board is registered.
 */
int vendor_events_open(struct vendor_lib *l, char *err, size_t errlen);

/* The bus id of the first board that refused vendor_events_open(), "" none. */
const char *vendor_events_refused(const struct vendor_lib *l);

/*
 * Wait up to TIMEOUT_MS for the next event (nvmlEventSetWait_v2).  Returns
 * 0 with *EV filled; -ETIMEDOUT when none came; -ENOTSUP without
 * vendor_events_open(); -EIO on another error, ERR (may be NULL) getting
 * NVML's words for it.  A lost GPU is returned as a VENDOR_EVENT_LOST
 * event, named by the first registered board that
 * nvmlDeviceGetHandleByPciBusId_v2 finds lost (unnamed when none).  The
 * board of an event is named from the boards as registered, whatever
 * vendor_read() has found since.  Blocks: only for a process, or a
 * thread, of its own; it may run while another thread of the process
 * calls vendor_read() on the same library (NVML is thread-safe).
 */
int vendor_events_wait(struct vendor_lib *l, unsigned timeout_ms, struct vendor_event *ev,
                       char *err, size_t errlen);

/* Shut the library down and unload it.  NULL is a no-op. */
void vendor_close(struct vendor_lib *l);

/*
 * The query the slot check has always made: driver version and board
 * count of the default library, in a smaller struct.
 */
struct vendor_info {
	char library[32];   /* the library asked: "libnvidia-ml.so.1" */
	char version[64];   /* driver version the library reports, "" if unknown */
	int count;          /* boards the library sees, -1 if unknown */
	char error[160];    /* why the query failed, "" on success */
};

/*
 * Ask NVML for the driver version (nvmlSystemGetDriverVersion) and the
 * number of GPUs (nvmlDeviceGetCount_v2).  Returns 0; -ENOENT when the
 * library is not installed (not an error on a node without NVIDIA
 * boards); -ENOSYS when it lacks a needed symbol; -EIO when it fails.
 * OUT is filled in every case, error saying why.
 */
int vendor_nvml_query(struct vendor_info *out);

/* As vendor_nvml_query, with CNDev: cndevGetDeviceCount, cndevGetVersionInfo. */
int vendor_cndev_query(struct vendor_info *out);

#endif
