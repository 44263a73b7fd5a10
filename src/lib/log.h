/*
 * log.h - the agent's own diagnostics, on stderr.
 *
 * Each line reads "vigil[NODE:RANK:PID] LEVEL: message" so that lines
 * forwarded by mpirun from many nodes can be told apart.  Output that is
 * the product of a command (check results, tables) does not go through
 * here.  Safe to call from loop callbacks; not async-signal-safe.
 */
#ifndef VIGIL_LOG_H
#define VIGIL_LOG_H

#include <stddef.h>

enum log_level { LOG_LEVEL_ERR = 0, LOG_LEVEL_WARN, LOG_LEVEL_INFO, LOG_LEVEL_DEBUG };

/* Name the node and rank that prefix every line; rank < 0 omits it. */
void log_set_identity(const char *node, int rank);
void log_set_level(enum log_level level);
enum log_level log_get_level(void);

void log_msg(enum log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * Write TEXT to stderr as it is (for the agent's own messages that are
 * not diagnostics), in one write when possible, waiting up to a second
 * for room when stderr is a full non-blocking pipe.
 */
void log_write(const char *text, size_t len);

/* log_write() of a formatted message. */
void log_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * Format a message into a caller's error buffer ERR of ERRLEN bytes (the
 * "char *err, size_t errlen" out-parameters of fallible functions that
 * explain themselves); a NULL or empty buffer is left alone.
 */
void log_errbuf(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#define LOG_ERR(...)   log_msg(LOG_LEVEL_ERR, __VA_ARGS__)
#define LOG_WARN(...)  log_msg(LOG_LEVEL_WARN, __VA_ARGS__)
#define LOG_INFO(...)  log_msg(LOG_LEVEL_INFO, __VA_ARGS__)
#define LOG_DEBUG(...) log_msg(LOG_LEVEL_DEBUG, __VA_ARGS__)

#endif
