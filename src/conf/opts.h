/*
 * opts.h - the values of vigil's options, and the table of `vigil run`'s
 * options that the command line, its --help and the configuration file's
 * "run" section share.
 *
 * Nothing here logs or exits: a parser returns 0, or -EINVAL when the text
 * is not of the option's form, or -ERANGE when it is but lies outside the
 * option's range; the caller names the option and prints the message.
 */
#ifndef VIGIL_OPTS_H
#define VIGIL_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct config;
struct run_opts;

/* ---- values ------------------------------------------------------------ */

/* The longest duration any option takes: 400 days, in seconds. */
#define OPTS_DURATION_MAX (400.0 * 86400)

/*
 * A count: plain decimal digits ("12"; no sign, blank, exponent or base
 * prefix), from MIN to MAX.  -EINVAL when not digits, -ERANGE outside.
 */
int opts_count(const char *s, long long min, long long max, long long *out);

/*
 * A number: decimal digits with at most one point ("0.45", "20", ".5";
 * no sign, exponent, "inf" or "nan"), from MIN to MAX inclusive.
 */
int opts_number(const char *s, double min, double max, double *out);

/*
 * A duration in seconds, in the one syntax every option that takes time
 * accepts (the forms Slurm's --time and people use):
 *   "90", "0.5"        seconds (a number without a unit)
 *   "20s", "15m", "2h", "1d", "1.5h"   a number with a unit
 *   "MM:SS", "HH:MM:SS"                 (minutes and seconds below 60)
 *   "D-HH", "D-HH:MM", "D-HH:MM:SS"     days and hours (hours below 24)
 * Returns 0 with the seconds in *OUT and in *BARE (may be NULL) whether it
 * was a number without a unit; -EINVAL when S has none of these forms;
 * -ERANGE above OPTS_DURATION_MAX.  Zero is a valid duration here: the
 * option decides whether it means "off".
 */
int opts_duration(const char *s, double *out, bool *bare);

/*
 * Whether S is a unit of time written as a word of its own ("s", "sec",
 * "minutes", "h", "hours", "d", "days", any case): what
 * `--time-limit 3 days` leaves behind as the command.
 */
bool opts_unit_word(const char *s);

/* "FROM=TO", each a signal as sig_parse() reads it.  0 or -EINVAL. */
int opts_signal_pair(const char *s, int *from, int *to);

/* One word of an enumeration and its value; a table ends with a NULL word. */
struct opts_word {
	const char *word;
	int value;
};

/* S is one of WORDS (exactly, case included): 0 with its value, or -EINVAL. */
int opts_word(const char *s, const struct opts_word *words, int *out);

/* "a, b or c" into BUF (LEN bytes, always terminated). */
void opts_words_list(const struct opts_word *words, char *buf, size_t len);

/*
 * Expand a path template: "%j" the job (JOB), "%n" this node (NODE), "%u"
 * the user (USER), "%%" a percent sign; every other '%' is an error.
 * Returns 0, -EINVAL for an unknown or unfinished "%", or -ENAMETOOLONG
 * when the result does not fit in LEN bytes.  JOB, NODE and USER are
 * inserted as they are: the caller validates them.
 */
int opts_expand(const char *tmpl, const char *job, const char *node, const char *user,
                char *buf, size_t len);

/* ---- the options of `vigil run` ----------------------------------------- */

enum opts_kind {
	OPTS_FLAG,      /* bool field; no argument on the command line, true or false in a file */
	OPTS_COUNT,     /* int field: opts_count() within [min, max] */
	OPTS_DURATION,  /* double field, seconds: opts_duration() within [min, max] */
	OPTS_NUMBER,    /* double field: opts_number() within [min, max] */
	OPTS_WORD,      /* int, enum or bool field: one of .words */
	OPTS_MODE,      /* enum mode field: mode_parse() */
	OPTS_PRECHECK,  /* fail, warn or off: the precheck and precheck_level fields */
	OPTS_SIGNAL,    /* int field: a signal name or number (sig_parse()) */
	OPTS_SIGNAL_PAIR, /* the forward[] and nforward fields: FROM=TO, repeatable */
	OPTS_STRING,    /* const char * field, borrowed from the caller; not empty */
	OPTS_TEMPLATE,  /* as OPTS_STRING, a path that opts_expand() is applied to */
	OPTS_LIST,      /* const char *[RUN_LIST_MAX] field and the int at .count_off:
	                 * each value appended as given; repeatable */
};

/* Where an option appears in --help, in this order. */
enum opts_group {
	OPTS_GROUP_LAUNCH,      /* how the training starts, and its output */
	OPTS_GROUP_RESILIENCE,  /* checkpoints, requeues, restarts, inspection, heartbeats */
	OPTS_GROUP_PERF,        /* timing lines, alerts, metrics */
	OPTS_GROUP_PREP,        /* data staging, lifecycle scripts, batch tasks, kept output */
	OPTS_GROUP_COUNT
};

/* .flags */
#define OPTS_SITE     0x01  /* may be set in the configuration's "run" section */
#define OPTS_LIMIT    0x02  /* "run.limits" may cap it (a count or a duration) */
#define OPTS_OFF      0x04  /* a duration of 0 switches it off (below .min otherwise) */
#define OPTS_BARE_WARN 0x08 /* a bare number under a minute gets a warning */
#define OPTS_UNSET    0x10  /* a count that is -1 until given ("no limit", or taken
                             * from the environment); .def is then NULL */

/*
 * One option: everything about it is here, and nowhere else.  Its default
 * (run_opts_init()), its getopt entry (cmd_run.c), its --help line
 * (opts_help.c) and its key in the configuration (config.c) are all read
 * from the row, and tests/integration/opts_docs.sh holds --help and the
 * manual pages to the table.
 */
struct opts_run {
	const char *name;       /* --NAME; in the file, NAME with '_' for each '-' */
	char letter;            /* a short option too (-v), or 0 */
	enum opts_kind kind;
	size_t off, size;       /* the field in struct run_opts */
	size_t count_off;       /* OPTS_LIST: the field counting its values */
	double min, max;        /* counts, durations, numbers: the accepted range */
	const struct opts_word *words;  /* OPTS_WORD */
	unsigned flags;
	const char *def;        /* the default as a user writes it ("30s"); NULL: zero */
	const char *floor;      /* why .min, said when a value is below it */
	enum opts_group group;
	const char *arg;        /* the value's name in --help ("PORT"); NULL: TIME for a
	                         * duration, none for a flag */
	const char *help;       /* what it does, for --help (the default is added) */
};

/* Every option of `vigil run`, ending with a NULL name. */
extern const struct opts_run opts_run_table[];
/* How many (at most 64: sets of them are bit masks). */
extern const size_t opts_run_count;

/*
 * The options' part of `vigil run --help` into OUT: each group under its
 * heading, each option with its value's name, what it does, its default
 * and its floor, wrapped to 79 columns; then the options whose paths may
 * hold %j, %n and %u.  Returns 0, or -EIO when OUT fails.
 */
int opts_run_help(FILE *out);

/* The width of --help. */
#define OPTS_HELP_WIDTH 79

/* TEXT's words into OUT from column COL on, wrapped at OPTS_HELP_WIDTH and
 * continued at column INDENT, then a newline. */
void opts_wrap(FILE *out, size_t col, size_t indent, const char *text);

/* Where a value came from, per option (an array of opts_run_count). */
enum opts_src { OPTS_SRC_DEFAULT = 0, OPTS_SRC_FILE, OPTS_SRC_FLAG };

/* The option called --NAME, or NULL. */
const struct opts_run *opts_run_find(const char *name);

/* The option whose key in the file is KEY ("ckpt_lead"), or NULL. */
const struct opts_run *opts_run_find_key(const char *key);

/* OPT's key in the file into BUF ("ckpt-lead" -> "ckpt_lead"). */
void opts_run_key(const struct opts_run *opt, char *buf, size_t len);

/*
 * Parse TEXT for OPT and store it in O (TEXT must outlive O for strings;
 * NULL for a flag means true).  On error returns -EINVAL with "expected
 * ..." in WHY (the caller adds what it got), or -ERANGE with a sentence
 * that names the value and the bound; O is then unchanged.  *BARE (may be
 * NULL) tells whether a duration was a number without a unit.
 */
int opts_run_set(const struct opts_run *opt, const char *text, struct run_opts *o,
                 bool *bare, char *why, size_t whylen);

/* As opts_run_set() for a number from a file (counts, durations in
 * seconds, numbers, signals; a flag takes 0 or 1). */
int opts_run_set_num(const struct opts_run *opt, double value, struct run_opts *o,
                     char *why, size_t whylen);

/*
 * Check a value for OPT without storing it: TEXT, or VALUE when TEXT is
 * NULL.  Returns as opts_run_set(), with the value as a number in *NUM
 * (may be NULL) for the kinds opts_run_get() reads.
 */
int opts_run_check(const struct opts_run *opt, const char *text, double value,
                   double *num, char *why, size_t whylen);

/* The value of a count, duration or number option in O (a count below its
 * minimum, max_resumes' -1, is "no limit": infinity). */
double opts_run_get(const struct opts_run *opt, const struct run_opts *o);

/* What OPT expects, "expected a duration: ...", for messages that then
 * say what they got. */
void opts_run_expected(const struct opts_run *opt, char *why, size_t whylen);

/* OPT's value in O as it reads in messages: "120 s", "3", "USR1",
 * "coordinator", "true", a path, a list's values ("?" for --forward). */
void opts_run_show(const struct opts_run *opt, const struct run_opts *o, char *buf, size_t len);

/* V as OPT shows it in messages: "120 s", "3". */
void opts_run_format(const struct opts_run *opt, double v, char *buf, size_t len);

/*
 * Lay the configuration's "run" section over O, for every option the
 * command line did not set (SRC[i] != OPTS_SRC_FLAG), marking them
 * OPTS_SRC_FILE.  The values were checked when the file was read, so
 * this fails only on a bug: -EINVAL with the message in WHY.
 */
int opts_run_apply_config(const struct config *cfg, struct run_opts *o, unsigned char *src,
                          char *why, size_t whylen);

/*
 * Hold O to the site's "run.limits": each capped option above its limit
 * is set to the limit.  For each value the user chose (SRC not default)
 * that was lowered, NOTE is called with a message naming the option, the
 * limit and the file.  Returns how many values were lowered.
 */
int opts_run_clamp(const struct config *cfg, struct run_opts *o, const unsigned char *src,
                   void (*note)(void *arg, const char *msg), void *arg);

/*
 * The rules between options, once every source is in: the heartbeat
 * timeout longer than the heartbeat, a checkpoint lead shorter than the
 * time limit, --perf-action reschedule only with --resume, --resume and
 * --restart not together.  FILE names the configuration (NULL: none) for
 * values that came from it.  Returns 0, or -EINVAL with the message in WHY.
 */
int opts_run_verify(const struct run_opts *o, const unsigned char *src, const char *file,
                    char *why, size_t whylen);

#endif
