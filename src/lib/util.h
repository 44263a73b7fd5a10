/*
 * util.h - one copy of each small utility vigil needs in many places:
 * the monotonic clock, writing all of a buffer, the atomic file writer,
 * private directories and their listing, UTF-8 repair, sizes and plurals for people, and
 * host-name validation.
 *
 * Nothing here logs; every fallible function returns 0 or a negative
 * errno (captured before any cleanup can clobber it).  All of it is safe
 * to call from loop callbacks; none of it is async-signal-safe except
 * util_write_all().
 */
#ifndef VIGIL_UTIL_H
#define VIGIL_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <dirent.h>
#include <sys/types.h>

/* ---- time --------------------------------------------------------------- */

/*
 * CLOCK_MONOTONIC: the one clock vigil measures intervals and deadlines
 * with (never the wall clock, which NTP and administrators move).  The
 * three forms read the same clock.
 */
int64_t util_now_ns(void);
uint64_t util_now_ms(void);
double util_now_s(void);

/* The wall clock in seconds since the epoch (for end times from Slurm). */
double util_wall_s(void);

/* ---- writing ------------------------------------------------------------ */

/*
 * Write all LEN bytes of BUF to FD, retrying after EINTR and short writes.
 * Returns 0, or a negative errno (-EAGAIN on a non-blocking descriptor
 * that is full; the bytes written before it are not taken back).
 * Async-signal-safe.
 */
int util_write_all(int fd, const void *buf, size_t len);

/*
 * Read from FD into BUF until LEN bytes or the end of the file, retrying
 * after EINTR and short reads.  The number of bytes read (less than LEN
 * only at the end), or a negative errno (what was read before is in BUF).
 */
ssize_t util_read_all(int fd, void *buf, size_t len);

/*
 * Replace PATH with LEN bytes of DATA, atomically and safely on a shared
 * node, as root too:
 *   - the temporary file is created in PATH's own directory with
 *     O_CREAT|O_EXCL|O_NOFOLLOW and a random name, so a file or symlink
 *     planted there is never opened or followed;
 *   - its mode is set to MODE with fchmod() (independent of the umask);
 *   - data is fsync()ed before rename() and the directory after, so a
 *     crash leaves the old file or the new one, never an empty one;
 *   - rename() replaces a planted symlink at PATH itself, never its target.
 * A reader therefore sees the old content or the new, never half.  MODE
 * must not be group- or world-writable (-EINVAL).  Returns 0 or a
 * negative errno; on failure nothing is left behind and PATH is unchanged.
 */
int util_write_atomic(const char *path, const void *data, size_t len, mode_t mode);

/*
 * util_write_atomic() of NAME (a plain name, no slash) in the directory
 * open at DFD: the directory is the one the caller judged and holds, not
 * a path looked up again.  The same guarantees and return values.
 */
int util_write_atomic_at(int dfd, const char *name, const void *data, size_t len, mode_t mode);

/* util_write_atomic() of a NUL-terminated string. */
int util_write_atomic_str(const char *path, const char *text, mode_t mode);

/* ---- directories -------------------------------------------------------- */

/*
 * Create a private directory "PARENT/PREFIX.XXXXXX" (mkdtemp(): random,
 * exclusive, mode 0700) and write its path into BUF (LEN bytes).  Returns
 * 0, -ENAMETOOLONG, or the errno of mkdtemp().
 */
int util_private_dir(const char *parent, const char *prefix, char *buf, size_t len);

/*
 * Whether DIR is safe to keep files in for the calling user: lstat()ed
 * (a symlink is refused, -ELOOP), a directory (-ENOTDIR), owned by the
 * caller (-EPERM otherwise), and not writable by group or others
 * (-EACCES).  Returns 0 or a negative errno; -ENOENT when absent.
 */
int util_dir_is_private(const char *dir);

/*
 * Make directory PATH and the missing directories leading to it, as
 * `mkdir -p` does, each with MODE (less the umask).  Returns 0 (also when
 * they exist), or the negative errno of the first that cannot be made;
 * whether PATH is then a directory, and whose, is the caller's to check.
 */
int util_mkdir_p(const char *path, mode_t mode);

/*
 * Open PATH ("." for DFD itself) under the directory open at DFD for
 * readdir(), on a description of its own: DFD keeps its own position and
 * stays open.  NULL with errno set on failure; closedir() when done.
 */
DIR *util_opendir_at(int dfd, const char *path);

/*
 * Remove everything inside the directory open at DFD (not the directory
 * itself), as util_remove_tree() does.  0 or the first negative errno.
 */
int util_empty_dir_at(int dfd);

/*
 * Remove DIR and everything in it, without following symlinks and
 * without leaving DIR's file system (a mount point under DIR is left).
 * Returns 0 or the first negative errno met (it goes on past errors).
 */
int util_remove_tree(const char *dir);

/*
 * LEN random bytes into BUF (getrandom(), never blocking; early in boot,
 * without entropy yet, bytes from the clock and the pid: good enough for
 * names that O_EXCL makes safe anyway).
 */
void util_random_bytes(void *buf, size_t len);

/* ---- text --------------------------------------------------------------- */

/*
 * Copy LEN bytes of S into a new NUL-terminated string that is valid
 * UTF-8: each byte that does not start a well-formed sequence (overlong
 * forms, surrogates and code points above U+10FFFF included) becomes
 * U+FFFD, and an embedded NUL becomes U+FFFD too.  NULL with errno
 * ENOMEM.
 */
char *util_utf8_repair(const char *s, size_t len);

/* Whether LEN bytes of S are valid UTF-8 without NUL bytes. */
bool util_utf8_valid(const char *s, size_t len);

/*
 * BYTES for people, in binary units, the one form vigil prints sizes and
 * rates in: "512 B", "1.5 KiB", "9.9 MiB", "118 MiB", "40 GiB": one
 * decimal below 10 of a unit, none from 10 on (as `df -h` does), and the
 * next unit up where rounding would show 1024.  Less than 0 (or NaN)
 * shows as "0 B".  Writes BUF (LEN bytes, 16 are enough) and returns it.
 */
char *util_fmt_bytes(double bytes, char *buf, size_t len);

/* The plural ending of an English noun for a count of N: "s", or "" for
 * 1 ("1 node", "3 nodes"). */
const char *util_plural(long long n);

/*
 * Whether NAME is a valid host name for hostfiles and messages: 1 to 253
 * bytes, dot-separated labels of 1 to 63 letters, digits and hyphens,
 * not starting or ending with a hyphen (RFC 1123; underscores, common in
 * cluster naming, are accepted too).  Returns 0, or -EINVAL with a reason
 * in WHY (may be NULL) such as "contains a newline".
 */
int util_hostname_check(const char *name, char *why, size_t whylen);

/*
 * The address other nodes reach this one by: HOST itself (or, NUMERIC,
 * its IPv4 address) when it resolves to an address that is not loopback
 * (Debian maps the hostname to 127.0.1.1), else the first IPv4 address of
 * an interface that is up and not loopback, else 127.0.0.1 (every node is
 * this machine).  Resolves HOST: not for the event loop's hot paths.
 */
void util_local_address(const char *host, bool numeric, char *buf, size_t len);

#endif
