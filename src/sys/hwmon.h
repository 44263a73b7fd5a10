/*
 * hwmon.h - sysfs and procfs, read under a root directory.
 *
 * The only module that reads sysfs and procfs.  hwmon_open() opens the
 * root once ("/" on a live node, a tree built by a test elsewhere) and
 * every read is an openat() of a path relative to it, so a test or a
 * sysadmin's --sysfs-root sees exactly what the live node would.
 *
 * Every reader returns 0 (or a count) on success or a negative errno, and
 * copes with what sysfs really does: missing files (-ENOENT), a directory
 * where a file was expected (-EISDIR), garbage (-EINVAL), attributes the
 * kernel refuses to read (carrier and speed of a down interface fail with
 * -EINVAL), and files of any size (reads are bounded; a line that does
 * not fit is -EOVERFLOW).  Nothing logs: callers know what was attempted.
 *
 * PATH arguments are relative to the root ("sys/class/net/eth0/speed"); an
 * absolute path or a ".." component is -EINVAL.  Names that become one
 * path component (interfaces, PCI bus ids, devices) may not contain '/'.
 *
 * Not thread-safe per handle; safe in loop callbacks (reads of sysfs and
 * procfs do not block).
 */
#ifndef VIGIL_HWMON_H
#define VIGIL_HWMON_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/statvfs.h>
#include <sys/types.h>

struct hwmon;

/*
 * Open ROOT (NULL means "/").  Returns 0, or -ENOENT / -ENOTDIR / -EACCES
 * when ROOT or ROOT/sys is not a readable directory, or -ENOMEM.  On
 * failure *out is NULL.
 */
int hwmon_open(const char *root, struct hwmon **out);

/* Close the root.  hwmon_free(NULL) is a no-op. */
void hwmon_free(struct hwmon *h);

/* The root as given to hwmon_open() ("/" for NULL). */
const char *hwmon_root(const struct hwmon *h);

/* True when the root is this system's "/", so libraries may be asked too. */
bool hwmon_is_live(const struct hwmon *h);

/* --- Generic readers ---------------------------------------------------- */

/* 0 if PATH exists (following symlinks: a dangling link does not). */
int hwmon_exists(struct hwmon *h, const char *path);

/*
 * The first line of PATH, trailing whitespace removed, into BUF (LEN > 0).
 * An empty file gives "".  -EOVERFLOW if the line does not fit in LEN - 1.
 */
int hwmon_read_string(struct hwmon *h, const char *path, char *buf, size_t len);

/* One decimal integer (surrounding whitespace allowed); -EINVAL for anything else, -ERANGE. */
int hwmon_read_ll(struct hwmon *h, const char *path, long long *out);

/*
 * A state file "N: TEXT" (InfiniBand "4: ACTIVE", "5: LinkUp").  *NUM gets
 * N, TEXT the rest (may be NULL).  -EINVAL when the line has another shape.
 */
int hwmon_read_state(struct hwmon *h, const char *path, int *num, char *text, size_t len);

/*
 * In a file of lines such as "KEY VALUE", "KEY: VALUE kB" or
 * "Node 0 KEY: VALUE kB", the integer that follows the token KEY (with or
 * without a colon).  -ENODATA when no line has KEY, -EINVAL when its value
 * is not an integer.  Only the first 64 KiB of the file are looked at.
 */
int hwmon_read_keyed_ll(struct hwmon *h, const char *path, const char *key, long long *out);

/* The last component of the target of symlink PATH ("nvidia" for .../drivers/nvidia). */
int hwmon_readlink_base(struct hwmon *h, const char *path, char *buf, size_t len);

/*
 * The entries of directory DIR, without "." and "..", in natural order
 * ("node2" before "node10").  *names (array of *n strings; NULL when 0)
 * belongs to the caller: hwmon_list_free().
 */
int hwmon_list(struct hwmon *h, const char *dir, char ***names, size_t *n);
void hwmon_list_free(char **names, size_t n);

/* statvfs() of PATH under the root ("dev/shm"). */
int hwmon_statvfs(struct hwmon *h, const char *path, struct statvfs *out);

/* --- PCI devices -------------------------------------------------------- */

struct hwmon_pci {
	char driver[64];        /* bound driver ("nvidia"), "" when none */
	char module[64];        /* the driver's kernel module, "" if unknown or built in */
	char cur_speed[32];     /* as sysfs words it: "16.0 GT/s PCIe", "Unknown"; "" unreadable */
	char max_speed[32];
	double cur_gts;         /* the speed in GT/s, 0 when unknown */
	double max_gts;
	int cur_width;          /* lanes, 0 when unknown */
	int max_width;
	long long aer_correctable; /* TOTAL_ERR_COR; -1 when unreadable (no AER) */
	long long aer_nonfatal;    /* TOTAL_ERR_NONFATAL */
	long long aer_fatal;       /* TOTAL_ERR_FATAL */
};

/*
 * Read sys/bus/pci/devices/BUS_ID ("0000:3b:00.0").  Returns 0, -ENOENT
 * when the device is not on the bus, -EINVAL for a malformed BUS_ID.
 * Attributes that cannot be read are left at their "unknown" values.
 */
int hwmon_pci_read(struct hwmon *h, const char *bus_id, struct hwmon_pci *out);

/* --- Network interfaces and InfiniBand ---------------------------------- */

struct hwmon_nic {
	char operstate[16];     /* "up", "down", "unknown", ...; "" unreadable */
	int carrier;            /* 1, 0; -1 unknown (the kernel refuses while down) */
	long long speed_mbps;   /* -1 unknown */
};

/* Read sys/class/net/IFNAME.  -ENOENT when there is no such interface. */
int hwmon_nic_read(struct hwmon *h, const char *ifname, struct hwmon_nic *out);

struct hwmon_ib_port {
	unsigned port;
	int state;              /* 4 for "4: ACTIVE"; -1 unreadable */
	char state_text[32];    /* "ACTIVE" */
	int phys_state;         /* 5 for "5: LinkUp"; -1 unreadable */
	char phys_state_text[32];
	char rate[64];          /* "100 Gb/sec (4X EDR)"; "" unreadable */
	double rate_gbps;       /* 100; 0 unknown */
	long long link_downed;  /* counters/link_downed; -1 unreadable */
	long long symbol_error; /* counters/symbol_error; -1 unreadable */
};

#define HWMON_IB_ACTIVE 4       /* "4: ACTIVE" */
#define HWMON_IB_LINKUP 5       /* "5: LinkUp" */

/* InfiniBand devices present (sys/class/infiniband); none is 0 with *n == 0. */
int hwmon_ib_devices(struct hwmon *h, char ***names, size_t *n);

/*
 * Every port of InfiniBand device DEV, by port number.  *ports (array of
 * *n, NULL when 0) belongs to the caller: free().  -ENOENT when DEV is
 * not present.
 */
int hwmon_ib_ports(struct hwmon *h, const char *dev, struct hwmon_ib_port **ports, size_t *n);

/* One counter of a port: counters/NAME ("link_downed", "symbol_error", ...). */
int hwmon_ib_counter(struct hwmon *h, const char *dev, unsigned port, const char *name,
                     long long *out);

/* --- Memory ------------------------------------------------------------- */

struct hwmon_numa_node {
	int node;
	long long total_kb;     /* MemTotal */
	long long free_kb;      /* MemFree */
};

/*
 * Per-node memory from sys/devices/system/node/node<N>/meminfo, by node
 * number.  *nodes (NULL when 0) belongs to the caller: free().  -ENOENT
 * when the kernel has no node directory; nodes whose meminfo cannot be
 * parsed are left out.
 */
int hwmon_numa_meminfo(struct hwmon *h, struct hwmon_numa_node **nodes, size_t *n);

/* MemTotal and MemFree of proc/meminfo, in kB. */
int hwmon_meminfo(struct hwmon *h, long long *total_kb, long long *free_kb);

/*
 * Memory per NUMA node as hwmon_numa_meminfo(), or, on a kernel without
 * NUMA (no node directories), the whole machine from proc/meminfo as node
 * 0.  *SOURCE (may be NULL) names where the figures came from: "sysfs" or
 * "proc/meminfo".  Returns 0 with at least one node, or the negative errno
 * of proc/meminfo when neither can be read; -ENOMEM as such.
 */
int hwmon_memory_nodes(struct hwmon *h, struct hwmon_numa_node **nodes, size_t *n,
                       const char **source);

/* --- Drivers ------------------------------------------------------------ */

/*
 * The NVIDIA kernel module version from proc/driver/nvidia/version
 * ("535.104.05").  -ENOENT without the driver, -EINVAL when no version is
 * found in the file.
 */
int hwmon_nvidia_version(struct hwmon *h, char *buf, size_t len);

/*
 * The Cambricon driver version of the board at BUS_ID, from
 * proc/driver/cambricon/mlus/BUS_ID/information ("Driver Version:
 * v5.10.22" gives "5.10.22").
 */
int hwmon_cambricon_version(struct hwmon *h, const char *bus_id, char *buf, size_t len);

/* The drivers that name their boards in a file of their own. */
enum hwmon_board_driver { HWMON_DRIVER_NVIDIA, HWMON_DRIVER_CAMBRICON };

/*
 * The model of the board at BUS_ID as its driver names it: NVIDIA's
 * proc/driver/nvidia/gpus/BUS_ID/information ("Model: NVIDIA H200"),
 * Cambricon's proc/driver/cambricon/mlus/BUS_ID/information ("Device name:
 * MLU370-X8").  For boards newer than the host's pci.ids, which hwloc
 * names from.  -ENOENT without the file, -ENODATA without the line.
 */
int hwmon_board_model(struct hwmon *h, enum hwmon_board_driver driver, const char *bus_id,
                      char *buf, size_t len);

/* sys/module/MODULE/version ("amdgpu"). */
int hwmon_module_version(struct hwmon *h, const char *module, char *buf, size_t len);

/* --- Processes ---------------------------------------------------------- */

/*
 * What proc/PID/stat says about a process: its place in the process tree,
 * enough for the agent to find every process of its training (child.c)
 * including workers a launcher put in sessions of their own, and what it
 * uses.
 */
struct hwmon_proc {
	int pid;
	int ppid;
	int pgid;
	int sid;
	char state;             /* 'R', 'S', 'Z' (zombie), ... */
	char comm[16];          /* the kernel's command name, at most 15 bytes */
	unsigned long long cpu_ticks;  /* utime + stime + cutime + cstime, clock ticks */
	long long rss_pages;    /* resident set size, pages */
	unsigned long long start_ticks;  /* when it started, clock ticks after boot: with
	                                  * the pid, which process it is (a pid is reused) */
};

/*
 * proc/PID/stat of one process.  The command name may hold anything,
 * blanks and parentheses included; the fields are read after its last
 * ')'.  -ENOENT when the process is gone, -EINVAL for another shape.
 */
int hwmon_proc_stat(struct hwmon *h, int pid, struct hwmon_proc *out);

/*
 * Every process in proc/, by pid; processes that end while the directory
 * is read are left out.  *procs (array of *n, NULL when 0) belongs to the
 * caller: free().  A few hundred small reads on a busy node: call it when
 * signalling or stopping the training, not on every loop turn.
 */
int hwmon_procs(struct hwmon *h, struct hwmon_proc **procs, size_t *n);

/*
 * The signals process PID catches (SigCgt) and ignores (SigIgn), from
 * proc/PID/status, bit N-1 for signal N.  -ENOENT when it is gone,
 * -ENODATA when a line is missing.
 */
int hwmon_proc_sigmasks(struct hwmon *h, int pid, unsigned long long *caught,
                        unsigned long long *ignored);

/*
 * The cgroup v2 directory of the calling process, as a path under the root
 * ("sys/fs/cgroup/system.slice/x.service"): the unified hierarchy's mount
 * point from proc/self/mountinfo joined with the "0::" line of
 * proc/self/cgroup.  -ENOENT without a cgroup2 mount or a "0::" line,
 * -EOVERFLOW when it does not fit in LEN.
 */
int hwmon_cgroup2_self(struct hwmon *h, char *buf, size_t len);

/*
 * Whether the cgroup directory DIR (under the root) was delegated to the
 * caller: it is not the hierarchy's root, and either belongs to the
 * caller (a user other than root; how systemd and others delegate to
 * users) or carries the xattr trusted.delegate or user.delegate set to "1"
 * (systemd's mark for Delegate=yes).  0 when delegated, -EPERM when not,
 * another negative errno when DIR cannot be read.
 */
int hwmon_cgroup2_delegated(struct hwmon *h, const char *dir);

/* The pids in DIR/cgroup.procs (DIR under the root); *pids (NULL when 0) is the caller's: free(). */
int hwmon_cgroup_procs(struct hwmon *h, const char *dir, int **pids, size_t *n);

#endif
