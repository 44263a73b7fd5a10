/*
 * ledger.h - the site's node ledger: a directory shared by every node
 * (typically on NFS, configuration "ledger.dir") where jobs and health
 * checks record incidents against nodes, and administrators quarantine
 * and forgive them.  lemon.h judges a node from its records.
 *
 * Under the directory DIR:
 *   DIR/spool/NODE~UNIQUE.rec     records of one node from one writer, in
 *                                 place once whole, never changed after
 *   DIR/spool/.tmp~NODE~UNIQUE    a file being written (readers skip it)
 *   DIR/store/NODE/c~UNIQUE.rec   the node's records, merged by compaction
 * Each file holds JSON lines, one record a line.
 *
 * Many jobs and nodes write at once over NFS, so nothing relies on
 * O_APPEND or on locks across clients.  Each writer creates a file of its
 * own under a unique temporary name (time, pid, 64 random bits), writes
 * and fsync()s it, and renames it into place: a rename within a directory
 * is atomic, so a reader sees a whole file or none, and a writer killed
 * midway leaves only a temporary name that readers skip and compaction
 * removes.  Compaction writes a node's merged records to a new uniquely
 * named file, renames it in, and only then unlinks the files it merged:
 * two compactors racing leave two files holding the same records, which
 * carry unique ids, so readers drop the duplicates and the next
 * compaction merges them.  A reader that meets a file a compactor just
 * merged away starts over (a few times at most).  Unreadable files and
 * lines are skipped and counted, never fatal.
 *
 * Trust: vigil runs as root on shared nodes.  DIR must belong to root or
 * to the caller and be writable by no one else; the spool may be open to
 * every user (a job runs as its user) only with the sticky bit, so that
 * nobody removes another's records.  Files are opened with O_NOFOLLOW
 * relative to a directory descriptor, created 0644 with O_EXCL, and read
 * only when they are regular files with one link and of a bounded size.
 * A record's writer is the file's owner (not what the record says): only
 * root or DIR's owner may quarantine, forgive and compact; incidents
 * count whoever recorded them.
 *
 * Nothing here logs: functions return 0 or a negative errno, with a line
 * in WHY where they take one.
 */
#ifndef VIGIL_LEDGER_H
#define VIGIL_LEDGER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "conf/config.h"

/* Record kinds beyond the incidents of enum config_ledger_kind. */
#define LEDGER_KIND_QUARANTINE CONFIG_LEDGER_NKINDS        /* an administrator's */
#define LEDGER_KIND_FORGIVE    (CONFIG_LEDGER_NKINDS + 1)  /* by hand, or a passing check */
#define LEDGER_NKINDS          (CONFIG_LEDGER_NKINDS + 2)

/* Longest node name the ledger takes (a file name holds it). */
#define LEDGER_NODE_MAX 128

struct ledger_record {
	char id[40];           /* unique; made by ledger_append() */
	double time;           /* seconds since the epoch */
	int kind;              /* enum config_ledger_kind, or LEDGER_KIND_* */
	char node[LEDGER_NODE_MAX + 1];
	char check[32];        /* what failed: "nic", "xid", "storage"; "" */
	char device[64];       /* where: "eth1", "0000:3b:00.0"; "" */
	char job[64];          /* the job (SLURM_JOB_ID); "" */
	char user[32];         /* the writer's user name; ledger_append() fills it */
	char evidence[256];    /* one line: what was seen, or why (quarantine, forgive) */
	double seconds;        /* quarantine: how long; 0 until forgiven by hand */
	bool manual;           /* quarantine, forgive: an administrator's */
	long long uid;         /* the writer: the file's owner when read */
	bool trusted;          /* the writer is root or DIR's owner */
};

/* "precheck" ... "board", "quarantine", "forgive"; "?" out of range. */
const char *ledger_kind_name(int kind);

/* The kind named NAME, or -1. */
int ledger_kind_parse(const char *name);

/* Whether KIND is an incident (not an administrator's record). */
bool ledger_is_incident(int kind);

struct ledger_records {
	struct ledger_record *v;
	size_t n, cap;
};

/* Append a copy of R.  Returns 0 or -ENOMEM. */
int ledger_records_add(struct ledger_records *rs, const struct ledger_record *r);
void ledger_records_free(struct ledger_records *rs);

/* A record as one JSON line (no newline), or from one: 0 or -EINVAL. */
char *ledger_record_format(const struct ledger_record *r, bool with_uid);
int ledger_record_parse(const char *line, size_t len, struct ledger_record *out);

struct ledger;

/*
 * Open the ledger at DIR (absolute).  With WRITE, the spool is made when
 * missing (by root: mode 1777, sticky, so that jobs of every user can
 * record; by DIR's owner otherwise: 0755) and the store when the caller is
 * trusted.  A directory that fails the checks above is refused (-EPERM
 * with WHY naming it and what to change).  Returns 0 or a negative errno.
 */
int ledger_open(const char *dir, bool write, struct ledger **out, char *why, size_t whylen);
void ledger_close(struct ledger *l);  /* NULL is a no-op */

/* The directory, as given. */
const char *ledger_dir(const struct ledger *l);

/* Whether this process is root or DIR's owner: it may quarantine, forgive, compact. */
bool ledger_trusted(const struct ledger *l);

/*
 * Record the N records R (all of one node, R[0].node) as one new file in
 * the spool.  Each gets a fresh id; an empty user becomes the caller's
 * name.  Returns 0 or a negative errno with WHY.
 */
int ledger_append(struct ledger *l, const struct ledger_record *r, size_t n,
                  char *why, size_t whylen);

/*
 * NODE's records, spool and store, without duplicates, sorted by time
 * (then id), into OUT (appended to).  Incidents older than SINCE are left
 * out (the retention); the administrators' records are kept whatever
 * their age.  Returns 0 or a negative errno with WHY.
 */
int ledger_read_node(struct ledger *l, const char *node, double since,
                     struct ledger_records *out, char *why, size_t whylen);

/*
 * Every node that has records, in name order: FN(ARG, NODE, RECORDS) once
 * each, RECORDS as ledger_read_node() gives them (freed after FN
 * returns).  Memory holds one node's records at a time.  A non-zero
 * return of FN stops the walk and is returned.
 */
typedef int ledger_node_fn(void *arg, const char *node, const struct ledger_records *rs);
int ledger_each_node(struct ledger *l, double since, ledger_node_fn *fn, void *arg,
                     char *why, size_t whylen);

/*
 * Compaction of NODE (trusted callers only, -EPERM otherwise): its spool
 * files and store files merged into one store file, incidents older than
 * SINCE dropped (the administrators' last records kept), at most
 * LEDGER_KEEP records (the newest), then the merged files unlinked and
 * the node's temporary files older than an hour removed.  Nothing is
 * written when there is nothing to merge.  Returns 0 or a negative errno.
 */
#define LEDGER_KEEP 4096
int ledger_compact_node(struct ledger *l, const char *node, double since, double now,
                        char *why, size_t whylen);

/* ledger_compact_node() for every node.  Returns 0 or the first error. */
int ledger_compact(struct ledger *l, double since, double now, char *why, size_t whylen);

/*
 * Files and lines skipped so far because they could not be read or
 * parsed; *FIRST (may be NULL) says what the first one was, for one
 * warning.
 */
unsigned ledger_skipped(const struct ledger *l, const char **first);

/*
 * Tests only: FN(ARG) runs in ledger_append() after the temporary file is
 * written and before it is renamed into place, so a test can kill the
 * writer there.
 */
void ledger_set_test_hook(struct ledger *l, void (*fn)(void *arg), void *arg);

#endif
