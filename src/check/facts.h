/*
 * facts.h - what a node looks like, gathered once for the judges.
 *
 * The first half of every health check (LBNL NHC's "gather"): read
 * sysfs and procfs through hwmon, libnuma, getrlimit, the vendors'
 * libraries and the storage probes, and keep what was found, including
 * what could not be read (an errno is a fact too).  Nothing here decides
 * whether a fact is good or bad: judge.h does that, from these structs
 * alone, so its rules are tested without any tree.
 *
 * Work that may block (a storage path on a dead NFS server, a vendor
 * library on a wedged board) runs in child processes, all at once, under
 * one deadline (fanout.h).  The rest only reads sysfs and procfs,
 * which do not block.
 *
 * Nothing here logs or calls MPI; nothing is async-signal-safe.
 */
#ifndef VIGIL_FACTS_H
#define VIGIL_FACTS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/resource.h>

#include "conf/config.h"
#include "sys/hwmon.h"
#include "sys/topo.h"
#include "sys/vendor.h"

/* The vendors of enum slot_vendor: nvidia, amd, cambricon. */
#define FACTS_NVENDORS 3

/* One slot's PCI device. */
struct facts_slot {
	int index;
	enum slot_vendor vendor;
	char model[sizeof(((struct slot *)0)->model)];
	char bus_id[sizeof(((struct slot *)0)->pci_bus_id)];
	int rc;               /* hwmon_pci_read(): 0; -ENOENT off the bus; another errno */
	struct hwmon_pci pci; /* counts only when rc is 0 */
};

/* The boards of one vendor and its driver. */
struct facts_driver {
	size_t nslots;        /* slots of this vendor; 0: none, ignore the rest */
	char version[64];     /* "535.104.05"; "" unknown */
	char module[64];      /* the kernel module bound to the first present slot */
};

/* What a vendor library (NVML, CNDev) answered, in a child under the deadline. */
struct facts_library {
	bool asked;           /* only on the live system, with boards of its vendor */
	int job_rc;           /* 0 answered; -ETIMEDOUT; -EPROTO (no whole answer);
	                       * another negative errno when the child could not start */
	int rc;               /* when answered: the query's return (vendor.h) */
	struct vendor_info info; /* when answered */
};

/* What the directory probe found (in a child, see facts_probe_dirs()). */
struct facts_dir {
	int err;              /* errno of open, fstat or fstatvfs on the path; 0 */
	bool not_dir;         /* the path is there but not a directory */
	int write_err;        /* errno creating a file there; 0 done; -1 not tried */
	unsigned long long bavail, frsize;  /* statvfs f_bavail; f_frsize (else f_bsize) */
	unsigned long long favail, files;   /* statvfs f_favail, f_files (0: not counted) */
	unsigned long flag;   /* statvfs f_flag: ST_RDONLY */
	long long free_mb;    /* bavail * frsize in MB, rounded down */
};

/* One storage path: the probe's outcome and, on 0, what it found. */
struct facts_path {
	int rc;               /* 0; -ETIMEDOUT; -EALREADY (the probe of an earlier run is
	                       * still stuck on it: no new one was started); -EPROTO (the
	                       * probe died); another errno when the probe could not be
	                       * started */
	struct facts_dir dir; /* counts only when rc is 0 */
	int stuck_pid;        /* -EALREADY: that probe's pid, */
	double stuck_s;       /* ... and how long it has been at it */
};

struct facts_memory {
	int rc;               /* 0, or why no node could be read */
	const char *source;   /* "libnuma", "sysfs", "proc/meminfo"; NULL when rc < 0 */
	struct hwmon_numa_node *nodes;  /* owned, by node number */
	size_t n;
};

struct facts_shm {
	int rc;               /* hwmon_statvfs() of dev/shm */
	long long total_mb, free_mb;
};

struct facts_limits {
	int err;              /* errno of getrlimit(); 0 */
	struct rlimit memlock, nofile;
};

struct facts_nic {
	char name[NAME_MAX + 1];
	int rc;               /* hwmon_nic_read(): 0; -ENOENT missing; another errno */
	struct hwmon_nic nic;
};

struct facts_ib {
	char name[NAME_MAX + 1];
	bool listed;          /* required by the configuration */
	int rc;               /* hwmon_ib_ports(): 0; -ENOENT missing; another errno */
	struct hwmon_ib_port *ports;    /* owned, by port number; counters included */
	size_t nports;
};

/* Everything the pre-check judges.  Arrays follow the configuration's order. */
struct facts {
	struct facts_slot *slots;
	size_t nslots;
	struct facts_driver drivers[FACTS_NVENDORS];  /* indexed by enum slot_vendor */
	struct facts_library nvml, cndev;
	struct facts_memory memory;
	struct facts_path *paths;       /* one per cfg->paths[], same order */
	size_t npaths;
	struct facts_shm shm;
	struct facts_limits limits;
	struct facts_nic *nics;         /* one per cfg->nics[] */
	size_t nnics;
	struct facts_ib *ib;            /* cfg->ib_devices[], then the others present */
	size_t nib;
	double timeout_s;               /* the deadline the blocking work ran under */
};

/*
 * Gather every fact the pre-check judges, from HW (sysfs and procfs) and
 * the system: SLOTS (from topo_slots(); may be NULL when NSLOTS is 0), the
 * NICs, InfiniBand devices and storage paths CFG names, memory per NUMA
 * node (libnuma on the live system, else sysfs), /dev/shm, the resource
 * limits, and on the live system the vendors' libraries for the slots'
 * vendors.  The storage probes and the library queries run at once, each
 * in its own child, under one deadline of cfg->check_timeout_s: the whole
 * call takes about that long at most, whatever the number of paths (twice
 * that at worst, when another check runs at the same time and its probe
 * of a path is slow: see facts_probe_dirs()).
 *
 * Returns 0 with OUT filled (release with facts_free()), also when
 * nothing could be read: that is what the facts say.  -ENOMEM.  Forks.
 */
int facts_gather(struct hwmon *hw, const struct config *cfg, const struct slot *slots,
                 size_t nslots, struct facts *out);

/* Release what OUT holds and clear it; facts_free() of a cleared struct is a no-op. */
void facts_free(struct facts *f);

/* --- pieces, for the inspection and for a new source of facts ------------ */

/*
 * The model of the board at BUS_ID as its driver names it
 * (hwmon_board_model()), for a slot hwloc left unnamed: boards newer than
 * the host's pci.ids.  -ENOENT for a vendor whose driver names none.
 */
int facts_board_model(struct hwmon *hw, enum slot_vendor vendor, const char *bus_id, char *buf,
                      size_t len);

/* Each slot's PCI device: *OUT (array of N, free()), NULL when N is 0.  0 or -ENOMEM. */
int facts_gather_slots(struct hwmon *hw, const struct slot *slots, size_t n,
                       struct facts_slot **out);

/* Each interface NAMES names: *OUT (array of N, free()).  0 or -ENOMEM. */
int facts_gather_nics(struct hwmon *hw, char *const *names, size_t n, struct facts_nic **out);

/*
 * The InfiniBand devices LISTED names (listed), then, with OTHERS, every
 * other device present (not listed): *OUT (array of *N, release with
 * facts_ib_free()).  0 or -ENOMEM; an unreadable sys/class/infiniband
 * only leaves the others out.
 */
int facts_gather_ib(struct hwmon *hw, char *const *listed, size_t nlisted, bool others,
                    struct facts_ib **out, size_t *n);
void facts_ib_free(struct facts_ib *ib, size_t n);

/*
 * Free memory per NUMA node into OUT (release with free(out->nodes)):
 * with LIBNUMA, libnuma's view when HW is the live system (it also knows
 * which nodes this process may use), else or failing that sysfs, and on a
 * kernel without NUMA proc/meminfo as node 0.  Returns 0 (a reading that
 * failed is out->rc) or -ENOMEM.
 */
int facts_gather_memory(struct hwmon *hw, bool libnuma, struct facts_memory *out);

/*
 * Probe N directories at once, each in its own child, under one deadline
 * of TIMEOUT_S: open PATHS[i] (O_PATH when searchable but not readable),
 * fstat() and fstatvfs() it, and with WRITABLE[i] (WRITABLE may be NULL:
 * none) create and remove a file in it.  A dead NFS server hangs the open
 * or the statvfs; the deadline covers both.  A probe stuck in the kernel
 * outlives its SIGKILL (proc/stuck.h): a path on which the probe of an
 * earlier call is still stuck, for TIMEOUT_S or more, gets no new probe
 * and the rc -EALREADY, so that stuck processes do not pile up; one that a
 * call still running has at work (younger) is waited for, within
 * TIMEOUT_S, instead of probed twice at once.  OUT[i]
 * gets each outcome (struct facts_path).  Returns 0, or -EINVAL for a
 * TIMEOUT_S that is not positive, or -ENOMEM.  Blocks up to TIMEOUT_S: a
 * loop callback passes a short one.
 */
int facts_probe_dirs(const char *const *paths, const bool *writable, size_t n,
                     double timeout_s, struct facts_path *out);

#endif
