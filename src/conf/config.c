/*
 * config.c - defaults, the JSON configuration file, string lists.
 *
 * The parser is driven by tables of keys (struct key): each names a JSON
 * key, the handler that checks and stores its value, and where in the
 * target struct the value goes.  A section is a key whose handler parses a
 * nested table, so adding a section ("run", "inspect", ...) means adding
 * one table and one line in its parent.
 *
 * cJSON accepts an object with the same key twice and keeps both, so the
 * walk over an object marks each key of the table as seen and refuses a
 * second one.  Unknown keys are errors, not ignored: a misspelt threshold
 * that silently does nothing is worse than a refusal to start.
 */
#include "autoconf.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include <cJSON.h>

#include "conf/config.h"
#include "conf/opts.h"
#include "lib/json.h"
#include "lib/safepath.h"
#include "proc/trust.h"

/* A configuration is a few hundred bytes; anything this large is a mistake
 * (a core file, a log) and is refused before it is parsed. */
#define CONFIG_MAX_BYTES (1024 * 1024)

/* Sizes in MiB are multiplied by 2^20 by the checks; this bound keeps the
 * product within a long long (2^40 MiB = 1 EiB). */
#define MB_MAX (1LL << 40)
/* Every integer up to 2^53 is exact in the double cJSON stores. */
#define COUNT_MAX (1LL << 53)
/* Timeouts: a day. */
#define SECONDS_MAX 86400.0

/* Longest excerpt of the input quoted in a message. */
#define EXCERPT_MAX 24

struct parse {
	const char *origin;        /* file name or other label for messages */
	char *err;
	size_t errlen;
	char key[256];             /* dotted name of the value being parsed */
	size_t keylen;
};

struct key;

/* Check V and store it in the struct at BASE; returns 0 or a negative errno
 * after writing the message with fail(). */
typedef int key_fn(struct parse *p, const struct key *k, const cJSON *v, void *base);

struct list_kind;

struct key {
	const char *name;
	key_fn *parse;
	size_t off;                /* the field, from the start of BASE */
	size_t count_off;          /* lists: their element count */
	long long min, max;        /* integers (and lists of them): the accepted range */
	const struct key *sub;     /* sections and lists of objects: their keys */
	const struct list_kind *list;  /* lists (parse_list()): their entries */
	bool required;             /* inside a list entry: must be given */
};

/* ---- messages ------------------------------------------------------- */

static int fail(struct parse *p, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Writes "ORIGIN: KEY: MESSAGE" (or "ORIGIN: MESSAGE" outside any key) as
 * one line, and returns RC. */
static int
fail(struct parse *p, int rc, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (!p->err || p->errlen == 0)
		return rc;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (p->keylen > 0)
		snprintf(p->err, p->errlen, "%s: %s: %s", p->origin, p->key, msg);
	else
		snprintf(p->err, p->errlen, "%s: %s", p->origin, msg);
	/* Key names, file names and excerpts come from the user: keep the
	 * message on one line whatever they contain. */
	for (char *c = p->err; *c; c++) {
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
	}
	return rc;
}

/* Quote up to EXCERPT_MAX bytes of S (LEN bytes, or up to its NUL when
 * LEN is SIZE_MAX) into BUF, escaped so that it reads as one line. */
static void
quote(char *buf, size_t buflen, const char *s, size_t len)
{
	size_t o = 0, i;

	if (buflen < 8) {
		if (buflen > 0)
			buf[0] = '\0';
		return;
	}
	buf[o++] = '"';
	for (i = 0; i < len && s[i] && i < EXCERPT_MAX && o + 6 < buflen; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\') {
			buf[o++] = '\\';
			buf[o++] = (char)c;
		} else if (c == '\n') {
			buf[o++] = '\\';
			buf[o++] = 'n';
		} else if (c < 0x20 || c == 0x7f) {
			buf[o++] = '?';
		} else {
			buf[o++] = (char)c;
		}
	}
	if (i < len && s[i] && o + 5 < buflen) {
		memcpy(buf + o, "...", 3);
		o += 3;
	}
	buf[o++] = '"';
	buf[o] = '\0';
}

/* What V is, for "expected X, got Y". */
static void
describe(const cJSON *v, char *buf, size_t len)
{
	if (cJSON_IsString(v))
		quote(buf, len, v->valuestring, SIZE_MAX);
	else if (cJSON_IsNumber(v) && isfinite(v->valuedouble))
		snprintf(buf, len, "%.15g", v->valuedouble);
	else if (cJSON_IsNumber(v))
		snprintf(buf, len, "a number too large to represent");
	else if (cJSON_IsTrue(v))
		snprintf(buf, len, "true");
	else if (cJSON_IsFalse(v))
		snprintf(buf, len, "false");
	else if (cJSON_IsNull(v))
		snprintf(buf, len, "null");
	else if (cJSON_IsArray(v))
		snprintf(buf, len, "an array");
	else if (cJSON_IsObject(v))
		snprintf(buf, len, "an object");
	else
		snprintf(buf, len, "an invalid value");
}

static int
type_error(struct parse *p, const char *expected, const cJSON *v)
{
	char got[64];

	describe(v, got, sizeof(got));
	return fail(p, -EINVAL, "expected %s, got %s", expected, got);
}

/* Append ".NAME" (or "[INDEX]" when NAME is NULL) to the key being parsed;
 * returns the length to restore with pop(). */
static size_t
push(struct parse *p, const char *name, size_t index)
{
	size_t old = p->keylen;
	int n;

	if (name)
		n = snprintf(p->key + old, sizeof(p->key) - old, "%s%s",
		             old > 0 ? "." : "", name);
	else
		n = snprintf(p->key + old, sizeof(p->key) - old, "[%zu]", index);
	if (n < 0)
		n = 0;
	p->keylen = old + (size_t)n < sizeof(p->key) ? old + (size_t)n : sizeof(p->key) - 1;
	return old;
}

static void
pop(struct parse *p, size_t len)
{
	p->keylen = len;
	p->key[len] = '\0';
}

/* ---- value handlers ------------------------------------------------- */

#define FIELD(base, k, type) ((type *)(void *)((char *)(base) + (k)->off))

static int parse_object(struct parse *p, const cJSON *obj, const struct key *keys, void *base);

static int
parse_section(struct parse *p, const struct key *k, const cJSON *v, void *base)
{
	if (!cJSON_IsObject(v))
		return type_error(p, "an object", v);
	return parse_object(p, v, k->sub, base);
}

/* Integers arrive as doubles: accept only integral values in range. */
static int
get_integer(struct parse *p, const struct key *k, const cJSON *v, long long *out)
{
	const char *expected;
	double d;

	if (k->min > 0)
		expected = "a positive integer";
	else if (k->min == 0)
		expected = "a non-negative integer";
	else
		expected = "a non-negative integer or -1";
	if (!cJSON_IsNumber(v))
		return type_error(p, expected, v);
	d = v->valuedouble;
	if (isnan(d) || d < (double)k->min)
		return type_error(p, expected, v);
	if (d > (double)k->max) {
		char got[64];

		describe(v, got, sizeof(got));
		return fail(p, -EINVAL, "%s is out of range (at most %lld)", got, k->max);
	}
	/* In range, so the conversion is defined; it drops any fraction. */
	if (d != (double)(long long)d)
		return type_error(p, expected, v);
	*out = (long long)d;
	return 0;
}

static int
parse_int(struct parse *p, const struct key *k, const cJSON *v, void *base)
{
	long long n;
	int rc = get_integer(p, k, v, &n);

	if (rc == 0)
		*FIELD(base, k, int) = (int)n;
	return rc;
}

static int
parse_llong(struct parse *p, const struct key *k, const cJSON *v, void *base)
{
	long long n;
	int rc = get_integer(p, k, v, &n);

	if (rc == 0)
		*FIELD(base, k, long long) = n;
	return rc;
}

static int
parse_seconds(struct parse *p, const struct key *k, const cJSON *v, void *base)
{
	double d;

	if (!cJSON_IsNumber(v))
		return type_error(p, "a positive number of seconds", v);
	d = v->valuedouble;
	if (isnan(d) || d <= 0)
		return type_error(p, "a positive number of seconds", v);
	if (d > SECONDS_MAX) {
		char got[64];

		describe(v, got, sizeof(got));
		return fail(p, -EINVAL, "%s is out of range (at most %.0f seconds)", got,
		            SECONDS_MAX);
	}
	*FIELD(base, k, double) = d;
	return 0;
}

static int
parse_bool(struct parse *p, const struct key *k, const cJSON *v, void *base)
{
	if (!cJSON_IsBool(v))
		return type_error(p, "true or false", v);
	*FIELD(base, k, bool) = cJSON_IsTrue(v);
	return 0;
}

static int
parse_verdict(struct parse *p, const struct key *k, const cJSON *v, void *base)
{
	enum verdict verdict;

	if (!cJSON_IsString(v) || verdict_parse(v->valuestring, &verdict) < 0)
		return type_error(p, "one of \"pass\", \"warn\", \"fail\"", v);
	*FIELD(base, k, enum verdict) = verdict;
	return 0;
}

/* An absolute path: it must not depend on the directory vigil runs in. */
static int
check_path(struct parse *p, const cJSON *v)
{
	if (!cJSON_IsString(v) || v->valuestring[0] != '/')
		return type_error(p, "an absolute path", v);
	if (strlen(v->valuestring) >= PATH_MAX)
		return fail(p, -EINVAL, "path longer than %d bytes", PATH_MAX - 1);
	return 0;
}

static int
parse_path(struct parse *p, const struct key *k, const cJSON *v, void *base)
{
	char **field = FIELD(base, k, char *);
	char *copy;
	int rc = check_path(p, v);

	if (rc < 0)
		return rc;
	copy = strdup(v->valuestring);
	if (!copy)
		return fail(p, -ENOMEM, "out of memory");
	free(*field);
	*field = copy;
	return 0;
}

/* Interface and device names become one component of a sysfs path
 * ("class/net/NAME"), so they may not be empty, ".", ".." or contain '/'. */
static int
check_name(struct parse *p, const cJSON *v)
{
	const char *s;

	if (!cJSON_IsString(v))
		return type_error(p, "a name (string)", v);
	s = v->valuestring;
	if (s[0] == '\0' || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
		return type_error(p, "a non-empty name", v);
	if (strlen(s) > NAME_MAX)
		return fail(p, -EINVAL, "name longer than %d bytes", NAME_MAX);
	for (; *s; s++) {
		if (*s == '/' || (unsigned char)*s <= 0x20 || *s == 0x7f)
			return type_error(p, "a name without '/', spaces or control characters", v);
	}
	return 0;
}

/*
 * A required version: "550.54.15" exactly, or ">=550.54.15" (spaces
 * allowed after ">=") that or later.  Versions start with a digit and hold
 * letters, digits and . _ + ~ - only, as the drivers write them.
 */
static int
parse_version(struct parse *p, const struct key *k, const cJSON *v, void *base)
{
	static const char expected[] = "a version such as \"550.54.15\" or \">=550.54.15\"";
	struct config_version *field = FIELD(base, k, struct config_version);
	const char *s;
	bool minimum = false;
	size_t len;

	if (!cJSON_IsString(v))
		return type_error(p, expected, v);
	s = v->valuestring;
	if (strncmp(s, ">=", 2) == 0) {
		minimum = true;
		for (s += 2; *s == ' '; s++)
			;
	}
	len = strlen(s);
	if (len == 0 || len >= sizeof(field->version) || *s < '0' || *s > '9' ||
	    strspn(s, "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ._+~-") != len)
		return type_error(p, expected, v);
	memcpy(field->version, s, len + 1);
	field->minimum = minimum;
	return 0;
}

/* ---- lists ---------------------------------------------------------- */

/*
 * What a list's entries are: how big, how one is read, what it starts as,
 * and what it holds.  ENTRY reads element V into the entry at BASE with
 * the list's key (its range, its sub-keys): it does not use k->off.
 */
struct list_kind {
	const char *expected;           /* "an array of ...", for a value that is not one */
	size_t size;                    /* one entry */
	key_fn *entry;
	void (*init)(void *entry);      /* NULL: the entry starts zeroed */
	void (*clear)(void *entry);     /* what one entry holds; NULL: nothing */
};

static void
free_entries(const struct list_kind *lk, void *list, size_t n)
{
	for (size_t i = 0; lk->clear && i < n; i++)
		lk->clear((char *)list + i * lk->size);
	free(list);
}

/*
 * The one parser of arrays: names, integers, objects.  A list given in
 * the file replaces the one before it (defaults, an earlier file), so the
 * new list is built aside and swapped in whole.  The field is a pointer
 * to the entries, of whatever type: it is read and written with memcpy()
 * as a void *, which has the same representation on every platform
 * vigil runs on (POSIX).
 */
static int
parse_list(struct parse *p, const struct key *k, const cJSON *v, void *base)
{
	const struct list_kind *lk = k->list;
	size_t *count = (size_t *)(void *)((char *)base + k->count_off);
	char *list = NULL;
	void *old;
	size_t n = 0, len;
	const cJSON *e;
	int rc = 0;

	if (!cJSON_IsArray(v))
		return type_error(p, lk->expected, v);
	len = (size_t)cJSON_GetArraySize(v);
	if (len > 0 && !(list = calloc(len, lk->size)))
		return fail(p, -ENOMEM, "out of memory");
	cJSON_ArrayForEach(e, v) {
		size_t at = push(p, NULL, n);
		char *entry = list + n * lk->size;

		/* cJSON_GetArraySize() counts in an int; never trust it to
		 * bound the walk. */
		if (n >= len) {
			rc = fail(p, -EINVAL, "too many entries");
			break;
		}
		if (lk->init)
			lk->init(entry);
		n++;
		rc = lk->entry(p, k, e, entry);
		if (rc < 0)
			break;
		pop(p, at);
	}
	if (rc < 0) {
		free_entries(lk, list, n);
		return rc;
	}
	memcpy(&old, (char *)base + k->off, sizeof(old));
	free_entries(lk, old, *count);
	old = list;
	memcpy((char *)base + k->off, &old, sizeof(old));
	*count = n;
	return 0;
}

/* A list of names (interfaces, InfiniBand devices). */
static int
name_entry(struct parse *p, const struct key *k, const cJSON *v, void *entry)
{
	int rc = check_name(p, v);

	(void)k;
	if (rc < 0)
		return rc;
	*(char **)entry = strdup(v->valuestring);
	return *(char **)entry ? 0 : fail(p, -ENOMEM, "out of memory");
}

static void
clear_name(void *entry)
{
	free(*(char **)entry);
}

static const struct list_kind names_list = {
	.expected = "an array of names", .size = sizeof(char *),
	.entry = name_entry, .clear = clear_name,
};

/* A list of integers in [k->min, k->max] (XIDs). */
static int
int_entry(struct parse *p, const struct key *k, const cJSON *v, void *entry)
{
	long long x;
	int rc = get_integer(p, k, v, &x);

	if (rc == 0)
		*(int *)entry = (int)x;
	return rc;
}

static const struct list_kind ints_list = {
	.expected = "an array of integers", .size = sizeof(int), .entry = int_entry,
};

/* ---- the storage paths ---------------------------------------------- */

static const struct key path_keys[] = {
	{ .name = "path", .parse = parse_path,
	  .off = offsetof(struct config_path, path), .required = true },
	{ .name = "min_free_mb", .parse = parse_llong,
	  .off = offsetof(struct config_path, min_free_mb), .min = 0, .max = MB_MAX },
	{ .name = "min_free_inodes", .parse = parse_llong,
	  .off = offsetof(struct config_path, min_free_inodes), .min = 0, .max = COUNT_MAX },
	{ .name = "writable", .parse = parse_bool,
	  .off = offsetof(struct config_path, writable) },
	{ .name = NULL }
};

static void
init_path(void *entry)
{
	((struct config_path *)entry)->writable = true;
}

static void
clear_path(void *entry)
{
	free(((struct config_path *)entry)->path);
}

static const struct list_kind paths_list = {
	.expected = "an array of objects", .size = sizeof(struct config_path),
	.entry = parse_section, .init = init_path, .clear = clear_path,
};

/* ---- the "hooks" list ------------------------------------------------ */

const char *const config_hook_phase_names[CONFIG_HOOK_NPHASES] = {
	[CONFIG_HOOK_PRECHECK] = "pre-check", [CONFIG_HOOK_PRELAUNCH] = "pre-launch",
	[CONFIG_HOOK_CHECKPOINT] = "checkpoint", [CONFIG_HOOK_REQUEUE] = "requeue",
	[CONFIG_HOOK_END] = "end",
};

static int
parse_hook_phase(struct parse *p, const struct key *k, const cJSON *v, void *base)
{
	for (int i = 0; cJSON_IsString(v) && i < CONFIG_HOOK_NPHASES; i++)
		if (strcmp(v->valuestring, config_hook_phase_names[i]) == 0) {
			*FIELD(base, k, int) = i;
			return 0;
		}
	return type_error(p, "one of \"pre-check\", \"pre-launch\", \"checkpoint\", \"requeue\", "
	                  "\"end\"", v);
}

static int
parse_hook_command(struct parse *p, const struct key *k, const cJSON *v, void *base)
{
	char **field = FIELD(base, k, char *);

	char what[PATH_MAX + 200];
	int rc;

	if (!cJSON_IsString(v) || !v->valuestring[0])
		return type_error(p, "a command (a non-empty string, run with /bin/sh -c)", v);
	rc = trust_command(v->valuestring, what, sizeof(what));
	if (rc < 0)
		return fail(p, rc, "refused: %s; %s", what, TRUST_FIX);
	free(*field);
	*field = strdup(v->valuestring);
	return *field ? 0 : fail(p, -ENOMEM, "out of memory");
}

/* "on": "all" or "coordinator"; "on_failure": "fail" or "warn". */
static int
parse_hook_word(struct parse *p, const struct key *k, const cJSON *v, void *base)
{
	const char *yes = k->min ? "warn" : "coordinator", *no = k->min ? "fail" : "all";

	if (cJSON_IsString(v) && (strcmp(v->valuestring, yes) == 0 ||
	                          strcmp(v->valuestring, no) == 0)) {
		*FIELD(base, k, bool) = strcmp(v->valuestring, yes) == 0;
		return 0;
	}
	return k->min ? type_error(p, "\"fail\" or \"warn\"", v)
	              : type_error(p, "\"all\" or \"coordinator\"", v);
}

/* Seconds as a number, or a duration as the options take it ("90s", "5m"). */
static int
parse_hook_timeout(struct parse *p, const struct key *k, const cJSON *v, void *base)
{
	double d = -1;

	if (cJSON_IsNumber(v))
		d = v->valuedouble;
	else if (cJSON_IsString(v) && opts_duration(v->valuestring, &d, NULL) < 0)
		d = -1;
	if (!(d > 0) || d > SECONDS_MAX)
		return type_error(p, "a duration from 1 second to a day (90, \"90s\", \"5m\")", v);
	*FIELD(base, k, double) = d;
	return 0;
}

static const struct key hook_keys[] = {
	{ .name = "phase", .parse = parse_hook_phase,
	  .off = offsetof(struct config_hook, phase), .required = true },
	{ .name = "command", .parse = parse_hook_command,
	  .off = offsetof(struct config_hook, command), .required = true },
	{ .name = "on", .parse = parse_hook_word, .off = offsetof(struct config_hook, coordinator) },
	{ .name = "on_failure", .parse = parse_hook_word, .min = 1,
	  .off = offsetof(struct config_hook, warn) },
	{ .name = "timeout", .parse = parse_hook_timeout,
	  .off = offsetof(struct config_hook, timeout_s) },
	{ .name = NULL }
};

static void
clear_hook(void *entry)
{
	free(((struct config_hook *)entry)->command);
}

static const struct list_kind hooks_list = {
	.expected = "an array of objects", .size = sizeof(struct config_hook),
	.entry = parse_section, .clear = clear_hook,
};

/* ---- the "run" section ---------------------------------------------- */

/* Refuse an unknown key inside "run" or "run.limits", listing the keys
 * valid there (the options that carry FLAG). */
static int
unknown_option(struct parse *p, unsigned flag)
{
	char valid[1024], key[64];
	size_t o = 0;

	valid[0] = '\0';
	for (const struct opts_run *opt = opts_run_table; opt->name; opt++) {
		int n;

		if (!(opt->flags & flag))
			continue;
		opts_run_key(opt, key, sizeof(key));
		n = snprintf(valid + o, sizeof(valid) - o, "%s%s", o ? ", " : "", key);
		if (n < 0 || (size_t)n >= sizeof(valid) - o)
			break;
		o += (size_t)n;
	}
	if (flag == OPTS_SITE && o + 8 < sizeof(valid))
		memcpy(valid + o, ", limits", 9);
	return fail(p, -EINVAL, "unknown key (valid: %s)", valid);
}

/* V as a value of OPT, checked by the option's own parser; its number in
 * *NUM (see opts_run_check()). */
static int
take_setting(struct parse *p, const struct opts_run *opt, const cJSON *v,
             struct config_setting *s, double *num)
{
	bool text = cJSON_IsString(v), number = cJSON_IsNumber(v);
	char why[320], got[64];
	int rc;

	/* JSON's types are kept apart as everywhere in the file: a count in
	 * quotes is a string; a duration may be either ("2m" or 120). */
	switch (opt->kind) {
	case OPTS_FLAG:
		text = false;
		number = cJSON_IsBool(v);
		break;
	case OPTS_COUNT:
	case OPTS_NUMBER:
		text = false;
		break;
	case OPTS_DURATION:
	case OPTS_SIGNAL:
		break;
	default:
		number = false;
		break;
	}
	if (text)
		rc = opts_run_check(opt, v->valuestring, 0, num, why, sizeof(why));
	else if (number)
		rc = opts_run_check(opt, NULL, cJSON_IsBool(v) ? cJSON_IsTrue(v) : v->valuedouble,
		                    num, why, sizeof(why));
	else
		rc = (opts_run_expected(opt, why, sizeof(why)), -EINVAL);
	if (rc == -ERANGE)
		return fail(p, -EINVAL, "%s", why);
	if (rc < 0) {
		describe(v, got, sizeof(got));
		return fail(p, -EINVAL, "%s, got %s", why, got);
	}
	s->opt = opt;
	s->num = text ? 0 : cJSON_IsBool(v) ? cJSON_IsTrue(v) : v->valuedouble;
	if (text && !(s->text = strdup(v->valuestring)))
		return fail(p, -ENOMEM, "out of memory");
	return 0;
}

static void
free_settings(struct config_setting *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(s[i].text);
	free(s);
}

/* The members of OBJ, options carrying FLAG, into a new array *OUT.
 * "limits" inside "run" is handed to LIMITS. */
static int
take_settings(struct parse *p, const cJSON *obj, unsigned flag, struct config_setting **out,
              size_t *nout, const cJSON **limits)
{
	size_t len = (size_t)cJSON_GetArraySize(obj), n = 0;
	struct config_setting *list = calloc(len + 1, sizeof(*list));
	uint64_t seen = 0;
	const cJSON *child;
	int rc = 0;

	if (!list)
		return fail(p, -ENOMEM, "out of memory");
	cJSON_ArrayForEach(child, obj) {
		const char *name = child->string ? child->string : "";
		const struct opts_run *opt = opts_run_find_key(name);
		size_t old = push(p, name, 0);
		uint64_t bit = opt ? UINT64_C(1) << (opt - opts_run_table) : 0;
		double num;

		if (limits && strcmp(name, "limits") == 0) {
			if (*limits)
				rc = fail(p, -EINVAL, "duplicate key");
			else if (!cJSON_IsObject(child))
				rc = type_error(p, "an object", child);
			*limits = child;
		} else if (!opt || !(opt->flags & flag)) {
			rc = unknown_option(p, flag);
		} else if (seen & bit) {
			rc = fail(p, -EINVAL, "duplicate key");
		} else if (n >= len) {
			rc = fail(p, -EINVAL, "too many entries");
		} else {
			seen |= bit;
			rc = take_setting(p, opt, child, &list[n], &num);
			if (rc == 0 && flag == OPTS_LIMIT)
				list[n].num = num;  /* a limit is a number ("2m": 120) */
			if (rc == 0)
				n++;
		}
		if (rc < 0)
			break;
		pop(p, old);
	}
	if (rc < 0) {
		free_settings(list, n);
		return rc;
	}
	*out = list;
	*nout = n;
	return 0;
}

/* A value of the file above the file's own limit contradicts it. */
static int
within_limits(struct parse *p, const struct config_setting *run, size_t nrun,
              const struct config_setting *lim, size_t nlim)
{
	for (size_t i = 0; i < nrun; i++) {
		for (size_t k = 0; k < nlim; k++) {
			char key[64], v[48], l[48], why[320];
			double num;

			if (run[i].opt != lim[k].opt ||
			    opts_run_check(run[i].opt, run[i].text, run[i].num, &num, why,
			                   sizeof(why)) < 0 || !(num > lim[k].num))
				continue;
			opts_run_key(run[i].opt, key, sizeof(key));
			opts_run_format(run[i].opt, num, v, sizeof(v));
			opts_run_format(run[i].opt, lim[k].num, l, sizeof(l));
			push(p, key, 0);
			return fail(p, -EINVAL, "%s is above run.limits.%s (%s)", v, key, l);
		}
	}
	return 0;
}

static int
parse_run(struct parse *p, const struct key *k, const cJSON *v, void *base)
{
	struct config *cfg = base;
	struct config_setting *run = NULL, *lim = NULL;
	size_t nrun = 0, nlim = 0, old;
	const cJSON *limits = NULL;
	int rc;

	(void)k;
	if (!cJSON_IsObject(v))
		return type_error(p, "an object", v);
	rc = take_settings(p, v, OPTS_SITE, &run, &nrun, &limits);
	if (rc == 0 && limits) {
		old = push(p, "limits", 0);
		rc = take_settings(p, limits, OPTS_LIMIT, &lim, &nlim, NULL);
		if (rc == 0)
			pop(p, old);
	}
	if (rc == 0)
		rc = within_limits(p, run, nrun, lim, nlim);
	if (rc < 0) {
		free_settings(run, nrun);
		free_settings(lim, nlim);
		return rc;
	}
	free_settings(cfg->run, cfg->nrun);
	free_settings(cfg->run_limits, cfg->nrun_limits);
	cfg->run = run;
	cfg->nrun = nrun;
	cfg->run_limits = lim;
	cfg->nrun_limits = nlim;
	return 0;
}

/* ---- the configuration's tables ------------------------------------- */

#define CFG(field) .off = offsetof(struct config, field)
#define CFG_LIST(field, count) CFG(field), .count_off = offsetof(struct config, count)

/* ---- the "ledger" section -------------------------------------------- */

const char *const config_ledger_kind_names[CONFIG_LEDGER_NKINDS] = {
	[CONFIG_LEDGER_PRECHECK] = "precheck", [CONFIG_LEDGER_FAULT] = "fault",
	[CONFIG_LEDGER_LOST] = "lost", [CONFIG_LEDGER_HANG] = "hang",
	[CONFIG_LEDGER_STRAGGLER] = "straggler", [CONFIG_LEDGER_HEALTHCHECK] = "healthcheck",
	[CONFIG_LEDGER_BOARD] = "board",
};

/* What a rule counts unless it says: the kinds a node's hardware causes. */
#define LEDGER_HARDWARE_KINDS \
	((1u << CONFIG_LEDGER_PRECHECK) | (1u << CONFIG_LEDGER_FAULT) | \
	 (1u << CONFIG_LEDGER_LOST) | (1u << CONFIG_LEDGER_HEALTHCHECK) | \
	 (1u << CONFIG_LEDGER_BOARD))

#define DAY_S 86400.0

/* Seconds as a number, or a duration as the options take it ("90m",
 * "7d"), from k->min seconds to OPTS_DURATION_MAX (400 days): the ledger
 * thinks in hours and days, not in the seconds of a timeout. */
static int
parse_ledger_duration(struct parse *p, const struct key *k, const cJSON *v, void *base)
{
	double d = -1;

	if (cJSON_IsNumber(v))
		d = v->valuedouble;
	else if (cJSON_IsString(v) && opts_duration(v->valuestring, &d, NULL) < 0)
		d = -1;
	if (!(d >= (double)k->min) || d > OPTS_DURATION_MAX)
		return type_error(p, k->min > 0 ? "a duration from 1 second to 400 days "
		                  "(3600, \"90m\", \"7d\")" : "a duration up to 400 days (0, \"12h\", "
		                  "\"1d\")", v);
	*FIELD(base, k, double) = d;
	return 0;
}

/* A non-empty list of incident kinds, into a bit set. */
static int
parse_ledger_kinds(struct parse *p, const struct key *k, const cJSON *v, void *base)
{
	unsigned kinds = 0;
	const cJSON *e;
	size_t i = 0;

	if (!cJSON_IsArray(v) || !v->child)
		return type_error(p, "a non-empty array of incident kinds", v);
	cJSON_ArrayForEach(e, v) {
		size_t at = push(p, NULL, i++);
		int kind = -1;

		for (int n = 0; cJSON_IsString(e) && n < CONFIG_LEDGER_NKINDS; n++)
			if (strcmp(e->valuestring, config_ledger_kind_names[n]) == 0)
				kind = n;
		if (kind < 0)
			return type_error(p, "one of \"precheck\", \"fault\", \"lost\", \"hang\", "
			                  "\"straggler\", \"healthcheck\", \"board\"", e);
		kinds |= 1u << kind;
		pop(p, at);
	}
	*FIELD(base, k, unsigned) = kinds;
	return 0;
}

static int
parse_ledger_same(struct parse *p, const struct key *k, const cJSON *v, void *base)
{
	static const char *const words[] = {
		[CONFIG_LEDGER_SAME_NONE] = "none", [CONFIG_LEDGER_SAME_CHECK] = "check",
		[CONFIG_LEDGER_SAME_DEVICE] = "device",
	};

	for (int i = 0; cJSON_IsString(v) && i < (int)(sizeof(words) / sizeof(words[0])); i++)
		if (strcmp(v->valuestring, words[i]) == 0) {
			*FIELD(base, k, int) = i;
			return 0;
		}
	return type_error(p, "one of \"none\", \"check\", \"device\"", v);
}

static const struct key ledger_rule_keys[] = {
	{ .name = "count", .parse = parse_int, .off = offsetof(struct config_ledger_rule, count),
	  .min = 1, .max = 1000, .required = true },
	{ .name = "within", .parse = parse_ledger_duration, .min = 1,
	  .off = offsetof(struct config_ledger_rule, within_s), .required = true },
	{ .name = "kinds", .parse = parse_ledger_kinds,
	  .off = offsetof(struct config_ledger_rule, kinds) },
	{ .name = "same", .parse = parse_ledger_same, .off = offsetof(struct config_ledger_rule, same) },
	{ .name = NULL }
};

static void
init_ledger_rule(void *entry)
{
	((struct config_ledger_rule *)entry)->kinds = LEDGER_HARDWARE_KINDS;
}

static const struct list_kind ledger_rules_list = {
	.expected = "an array of objects", .size = sizeof(struct config_ledger_rule),
	.entry = parse_section, .init = init_ledger_rule,
};

#define LEDGER(field) CFG(ledger.field)

static const struct key ledger_backoff_keys[] = {
	{ .name = "initial", .parse = parse_ledger_duration, .min = 1, LEDGER(backoff_initial_s) },
	{ .name = "max", .parse = parse_ledger_duration, .min = 1, LEDGER(backoff_max_s) },
	{ .name = "reset", .parse = parse_ledger_duration, .min = 1, LEDGER(backoff_reset_s) },
	{ .name = NULL }
};

static const struct key ledger_keys[] = {
	{ .name = "dir", .parse = parse_path, LEDGER(dir) },
	{ .name = "rules", .parse = parse_list, LEDGER(rules),
	  .count_off = offsetof(struct config, ledger.nrules), .sub = ledger_rule_keys,
	  .list = &ledger_rules_list },
	{ .name = "backoff", .parse = parse_section, .sub = ledger_backoff_keys },
	{ .name = "retention", .parse = parse_ledger_duration, .min = 1, LEDGER(retention_s) },
	{ .name = "repeat", .parse = parse_ledger_duration, .min = 0, LEDGER(repeat_s) },
	{ .name = "app_xids", .parse = parse_list, LEDGER(app_xids),
	  .count_off = offsetof(struct config, ledger.napp_xids), .min = 0, .max = 65535,
	  .list = &ints_list },
	{ .name = NULL }
};

/* The section, then what its values say of each other: a rule's window
 * must fit in what the ledger keeps, and the backoff must grow. */
static int
parse_ledger(struct parse *p, const struct key *k, const cJSON *v, void *base)
{
	const struct config_ledger *l = &((const struct config *)base)->ledger;
	int rc = parse_section(p, k, v, base);

	if (rc < 0)
		return rc;
	for (size_t i = 0; i < l->nrules; i++) {
		if (l->rules[i].within_s <= l->retention_s)
			continue;
		push(p, "rules", 0);
		push(p, NULL, i);
		push(p, "within", 0);
		return fail(p, -EINVAL, "%.15g s is longer than ledger.retention (%.15g s): the "
		            "incidents it counts would have expired", l->rules[i].within_s,
		            l->retention_s);
	}
	if (l->backoff_max_s < l->backoff_initial_s) {
		push(p, "backoff", 0);
		push(p, "max", 0);
		return fail(p, -EINVAL, "%.15g s is shorter than ledger.backoff.initial (%.15g s)",
		            l->backoff_max_s, l->backoff_initial_s);
	}
	return 0;
}

static const struct config_ledger_rule default_ledger_rules[] = {
	{ .count = 3, .within_s = 7 * DAY_S, .kinds = LEDGER_HARDWARE_KINDS,
	  .same = CONFIG_LEDGER_SAME_NONE },
	{ .count = 2, .within_s = 7 * DAY_S, .kinds = 1u << CONFIG_LEDGER_BOARD,
	  .same = CONFIG_LEDGER_SAME_DEVICE },
};

/* The XIDs NVIDIA's catalog puts on the application (a bad address, an
 * illegal instruction, a reset by the application's own error). */
static const int default_app_xids[] = { 13, 31, 43, 45 };

static void *
dup_or_abort(const void *src, size_t len)
{
	void *p = malloc(len);

	/* As with sysfs_root: no configuration without its defaults. */
	if (!p)
		abort();
	return memcpy(p, src, len);
}

static void
ledger_init(struct config_ledger *l)
{
	memset(l, 0, sizeof(*l));
	l->rules = dup_or_abort(default_ledger_rules, sizeof(default_ledger_rules));
	l->nrules = sizeof(default_ledger_rules) / sizeof(default_ledger_rules[0]);
	l->backoff_initial_s = 3600;
	l->backoff_max_s = 7 * DAY_S;
	l->backoff_reset_s = 30 * DAY_S;
	l->retention_s = 180 * DAY_S;
	l->repeat_s = DAY_S;
	l->app_xids = dup_or_abort(default_app_xids, sizeof(default_app_xids));
	l->napp_xids = sizeof(default_app_xids) / sizeof(default_app_xids[0]);
}

static void
ledger_free(struct config_ledger *l)
{
	free(l->dir);
	free(l->rules);
	free(l->app_xids);
	memset(l, 0, sizeof(*l));
}

/* ---- "check" and the top level ------------------------------------------ */

static const struct key driver_version_keys[] = {
	{ .name = "nvidia", .parse = parse_version, CFG(driver_version[0]) },
	{ .name = "amd", .parse = parse_version, CFG(driver_version[1]) },
	{ .name = "cambricon", .parse = parse_version, CFG(driver_version[2]) },
	{ .name = NULL }
};

static const struct key slots_keys[] = {
	{ .name = "expected", .parse = parse_int, CFG(slots_expected), .min = 0, .max = INT_MAX },
	{ .name = "pcie_degraded", .parse = parse_verdict, CFG(pcie_degraded) },
	{ .name = "aer_correctable_max", .parse = parse_llong, CFG(aer_correctable_max),
	  .min = -1, .max = COUNT_MAX },
	{ .name = "driver_required", .parse = parse_bool, CFG(driver_required) },
	{ .name = "driver_version", .parse = parse_section, .sub = driver_version_keys },
	{ .name = NULL }
};

static const struct key memory_keys[] = {
	{ .name = "min_free_mb", .parse = parse_llong, CFG(mem_min_free_mb), .min = 0, .max = MB_MAX },
	{ .name = NULL }
};

static const struct key storage_keys[] = {
	{ .name = "paths", .parse = parse_list, CFG_LIST(paths, npaths), .sub = path_keys,
	  .list = &paths_list },
	{ .name = "shm_min_mb", .parse = parse_llong, CFG(shm_min_mb), .min = 0, .max = MB_MAX },
	{ .name = "ckpt_min_free_mb", .parse = parse_llong, CFG(ckpt_min_free_mb),
	  .min = 0, .max = MB_MAX },
	{ .name = NULL }
};

static const struct key limits_keys[] = {
	{ .name = "memlock_unlimited", .parse = parse_bool, CFG(memlock_unlimited) },
	{ .name = "nofile_min", .parse = parse_llong, CFG(nofile_min), .min = 0, .max = COUNT_MAX },
	{ .name = NULL }
};

static const struct key nics_keys[] = {
	{ .name = "required", .parse = parse_list, CFG_LIST(nics, nnics), .list = &names_list },
	{ .name = "min_speed_mbps", .parse = parse_llong, CFG(nic_min_speed_mbps),
	  .min = 0, .max = INT_MAX },
	{ .name = "ib_devices", .parse = parse_list, CFG_LIST(ib_devices, nib_devices),
	  .list = &names_list },
	{ .name = "ib_min_rate_gbps", .parse = parse_llong, CFG(ib_min_rate_gbps),
	  .min = 0, .max = INT_MAX },
	{ .name = NULL }
};

#define BOARDS(field) CFG(boards.field)

static const struct key boards_keys[] = {
	{ .name = "enabled", .parse = parse_bool, BOARDS(enabled) },
	{ .name = "nvml_library", .parse = parse_path, BOARDS(nvml_library) },
	{ .name = "rocm_smi_library", .parse = parse_path, BOARDS(rocm_smi_library) },
	{ .name = "cndev_library", .parse = parse_path, BOARDS(cndev_library) },
	{ .name = "lost", .parse = parse_verdict, BOARDS(lost) },
	{ .name = "unresponsive", .parse = parse_verdict, BOARDS(unresponsive) },
	{ .name = "xid_fail", .parse = parse_list, BOARDS(xid_fail),
	  .count_off = offsetof(struct config, boards.nxid_fail), .min = 0, .max = 65535,
	  .list = &ints_list },
	{ .name = "xid_other", .parse = parse_verdict, BOARDS(xid_other) },
	{ .name = "ecc_uncorrectable", .parse = parse_verdict, BOARDS(ecc_uncorrectable) },
	{ .name = "ecc_correctable_max", .parse = parse_llong, BOARDS(ecc_correctable_max),
	  .min = -1, .max = COUNT_MAX },
	{ .name = "ecc_correctable_rise", .parse = parse_llong, BOARDS(ecc_correctable_rise),
	  .min = -1, .max = COUNT_MAX },
	{ .name = "retired_pages_pending", .parse = parse_verdict, BOARDS(retired_pages_pending) },
	{ .name = "row_remap_pending", .parse = parse_verdict, BOARDS(row_remap_pending) },
	{ .name = "row_remap_failure", .parse = parse_verdict, BOARDS(row_remap_failure) },
	{ .name = "recovery_action", .parse = parse_verdict, BOARDS(recovery_action) },
	{ .name = "throttle", .parse = parse_verdict, BOARDS(throttle) },
	{ .name = "temperature", .parse = parse_verdict, BOARDS(temperature) },
	{ .name = "temperature_margin_c", .parse = parse_llong, BOARDS(temperature_margin_c),
	  .min = 0, .max = 200 },
	{ .name = "nvlink_expected", .parse = parse_llong, BOARDS(nvlink_expected),
	  .min = -1, .max = 64 },
	{ .name = "nvlink_down", .parse = parse_verdict, BOARDS(nvlink_down) },
	{ .name = "nvlink_errors_rise", .parse = parse_llong, BOARDS(nvlink_errors_rise),
	  .min = -1, .max = COUNT_MAX },
	{ .name = "health", .parse = parse_verdict, BOARDS(health) },
	{ .name = NULL }
};

static const struct key check_keys[] = {
	{ .name = "timeout", .parse = parse_seconds, CFG(check_timeout_s) },
	{ .name = "gather_timeout", .parse = parse_seconds, CFG(gather_timeout_s) },
	{ .name = "slots", .parse = parse_section, .sub = slots_keys },
	{ .name = "memory", .parse = parse_section, .sub = memory_keys },
	{ .name = "storage", .parse = parse_section, .sub = storage_keys },
	{ .name = "limits", .parse = parse_section, .sub = limits_keys },
	{ .name = "nics", .parse = parse_section, .sub = nics_keys },
	{ .name = "boards", .parse = parse_section, .sub = boards_keys },
	{ .name = NULL }
};

static const struct key top_keys[] = {
	{ .name = "sysfs_root", .parse = parse_path, CFG(sysfs_root) },
	{ .name = "check", .parse = parse_section, .sub = check_keys },
	{ .name = "run", .parse = parse_run },
	{ .name = "hooks", .parse = parse_list, CFG_LIST(hooks, nhooks), .sub = hook_keys,
	  .list = &hooks_list },
	{ .name = "ledger", .parse = parse_ledger, .sub = ledger_keys },
	{ .name = NULL }
};

/* ---- objects -------------------------------------------------------- */

static int
unknown_key(struct parse *p, const struct key *keys)
{
	char valid[384];
	size_t o = 0;

	valid[0] = '\0';
	for (const struct key *k = keys; k->name && o < sizeof(valid); k++) {
		int n = snprintf(valid + o, sizeof(valid) - o, "%s%s", o ? ", " : "", k->name);

		if (n < 0)
			break;
		o += (size_t)n;
	}
	return fail(p, -EINVAL, "unknown key (valid: %s)", valid);
}

/* Parse the members of OBJ by KEYS (at most 64 keys: one bit each marks
 * the keys seen, to refuse duplicates and find missing required ones). */
static int
parse_object(struct parse *p, const cJSON *obj, const struct key *keys, void *base)
{
	uint64_t seen = 0;
	const cJSON *child;
	size_t i;

	cJSON_ArrayForEach(child, obj) {
		const char *name = child->string ? child->string : "";
		size_t old = push(p, name, 0);
		int rc;

		for (i = 0; keys[i].name; i++) {
			if (strcmp(keys[i].name, name) == 0)
				break;
		}
		if (!keys[i].name)
			return unknown_key(p, keys);
		if (seen & (UINT64_C(1) << i))
			return fail(p, -EINVAL, "duplicate key");
		seen |= UINT64_C(1) << i;
		rc = keys[i].parse(p, &keys[i], child, base);
		if (rc < 0)
			return rc;
		pop(p, old);
	}
	for (i = 0; keys[i].name; i++) {
		if (keys[i].required && !(seen & (UINT64_C(1) << i))) {
			push(p, keys[i].name, 0);
			return fail(p, -EINVAL, "missing (required in every entry)");
		}
	}
	return 0;
}

/* ---- documents ------------------------------------------------------ */

static bool
is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* Line and column (from 1, columns in bytes) of BUF[OFF]. */
static void
position(const char *buf, size_t off, size_t *line, size_t *col)
{
	*line = 1;
	*col = 1;
	for (size_t i = 0; i < off; i++) {
		if (buf[i] == '\n') {
			(*line)++;
			*col = 1;
		} else {
			(*col)++;
		}
	}
}

/* cJSON reports where it stopped; turn that into what an editor shows. */
static int
syntax_error(struct parse *p, const char *buf, size_t len, const char *stop)
{
	size_t off = 0, line, col, end, n;
	const char *nl;
	char excerpt[64];

	if (stop && stop >= buf && stop <= buf + len)
		off = (size_t)(stop - buf);
	/* cJSON often stops one byte past the offending one, or at the end
	 * of the input: point at the last byte that is not white space. */
	if (off >= len || is_space(buf[off])) {
		size_t back = off < len ? off : len;

		while (back > 0 && is_space(buf[back - 1]))
			back--;
		if (back == 0 && off >= len)
			return fail(p, -EINVAL, "line 1, column 1: malformed JSON (empty document)");
		if (back > 0)
			off = back - 1;
	}
	position(buf, off, &line, &col);
	if (buf[off] == '\0')
		return fail(p, -EINVAL, "line %zu, column %zu: malformed JSON (a NUL byte)",
		            line, col);
	for (end = off + 1; end < len && is_space(buf[end]); end++)
		;
	nl = memchr(buf + off, '\n', len - off);
	n = nl ? (size_t)(nl - (buf + off)) : len - off;
	quote(excerpt, sizeof(excerpt), buf + off, n);
	return fail(p, -EINVAL, "line %zu, column %zu: malformed JSON near %s%s",
	            line, col, excerpt, end >= len ? " (end of input)" : "");
}

/*
 * cJSON decodes "\u0000" into a C string that simply ends there, so
 * "eth\u0000x" would be read as "eth" (and a key "timeout\u0000junk" as
 * "timeout").  Find such an escape in BUF, a document cJSON accepted:
 * returns its offset, or LEN when there is none.
 */
static size_t
nul_escape(const char *buf, size_t len)
{
	bool in_string = false;

	for (size_t i = 0; i < len; i++) {
		if (buf[i] == '"') {
			in_string = !in_string;
		} else if (in_string && buf[i] == '\\' && i + 1 < len) {
			if (buf[i + 1] == 'u' && i + 5 < len && memcmp(buf + i + 2, "0000", 4) == 0)
				return i;
			i++;  /* the escaped character, which may be a quote */
		}
	}
	return len;
}

/*
 * BUF (LEN bytes) as a JSON object into *OUT (cJSON_Delete()), or a
 * negative errno after the message: where the text goes wrong, by line
 * and column, as an editor shows it.
 */
static int
parse_text(struct parse *p, const char *buf, size_t len, cJSON **out)
{
	const char *stop = NULL, *nul;
	cJSON *root = NULL;
	char *copy = NULL;
	size_t off;
	int rc = 0;

	*out = NULL;
	nul = memchr(buf, '\0', len);
	if (nul)
		return syntax_error(p, buf, len, nul);
	/* cJSON parses at most LEN bytes, but a terminated copy keeps every
	 * version of it, and every string function, inside the buffer. */
	copy = malloc(len + 1);
	if (!copy)
		return fail(p, -ENOMEM, "out of memory");
	memcpy(copy, buf, len);
	copy[len] = '\0';
	/* The end pointer rather than cJSON_GetErrorPtr(): same offset, but
	 * not a global shared by every caller.  With require_null_terminated,
	 * cJSON wants the terminating NUL inside the length it is given. */
	root = cJSON_ParseWithLengthOpts(copy, len + 1, &stop, 1);
	if (!root && (off = json_too_deep(copy, len)) < len) {
		size_t line, col;

		position(copy, off, &line, &col);
		rc = fail(p, -EINVAL, "line %zu, column %zu: nested too deeply (more than %d "
		          "levels of arrays and objects)", line, col, JSON_NESTING_LIMIT);
	} else if (!root) {
		rc = syntax_error(p, copy, len, stop);
	} else if (!cJSON_IsObject(root)) {
		rc = type_error(p, "an object at the top level", root);
	} else if ((off = nul_escape(copy, len)) < len) {
		size_t line, col;

		position(copy, off, &line, &col);
		rc = fail(p, -EINVAL, "line %zu, column %zu: \\u0000 (a NUL character) in a "
		          "string: no key or value may hold one", line, col);
	}
	free(copy);
	if (rc < 0)
		cJSON_Delete(root);
	else
		*out = root;
	return rc;
}

int
config_parse_json(const char *buf, size_t len, const char *origin, struct cJSON **out,
                  char *err, size_t errlen)
{
	struct parse p = { .origin = origin ? origin : "input", .err = err, .errlen = errlen };

	if (err && errlen)
		err[0] = '\0';
	return parse_text(&p, buf, len, out);
}

int
config_load_buffer(struct config *cfg, const char *buf, size_t len,
                   const char *origin, char *err, size_t errlen)
{
	struct parse p = { .origin = origin ? origin : "config", .err = err, .errlen = errlen };
	cJSON *root = NULL;
	int rc;

	if (err && errlen)
		err[0] = '\0';
	if (len > CONFIG_MAX_BYTES)
		return fail(&p, -EFBIG, "larger than %d bytes, refused", CONFIG_MAX_BYTES);
	rc = parse_text(&p, buf, len, &root);
	if (rc < 0)
		return rc;
	free(cfg->origin);
	cfg->origin = strdup(p.origin);
	if (!cfg->origin) {
		rc = fail(&p, -ENOMEM, "out of memory");
		goto out;
	}
	rc = parse_object(&p, root, top_keys, cfg);
out:
	cJSON_Delete(root);
	return rc;
}

/*
 * FILE opened for reading, or a negative errno after the message.  As
 * root, the configuration decides what root runs (hooks, notifiers,
 * libraries), so it is read only when root alone may change it and every
 * directory above it (lib/safepath.h), as contrib/slurm/vigil-healthcheck
 * asks of its settings.  Without O_NONBLOCK, opening a FIFO waits for a
 * writer that may never come; with it, the open returns and the type is
 * checked.
 */
static int
open_config(struct parse *p, const char *file)
{
	char why[PATH_MAX + 200];
	int fd;

	if (geteuid() != 0) {
		fd = open(file, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
		return fd >= 0 ? fd : fail(p, -errno, "cannot read: %s", strerror(errno));
	}
	fd = safepath_file_open(file, SAFEPATH_FOLLOW, O_RDONLY | O_NONBLOCK | O_NOCTTY, NULL, why,
	                        sizeof(why));
	if (fd == -EPERM || fd == -EACCES || fd == -ELOOP)
		return fail(p, fd, "refused: %s; as root, vigil reads a configuration only when "
		            "root alone may change it and the directories above it (chown root, "
		            "chmod go-w)", why);
	return fd >= 0 ? fd : fail(p, fd, "cannot read: %s", strerror(-fd));
}

int
config_load_file(struct config *cfg, const char *file, char *err, size_t errlen)
{
	struct parse p = { .origin = file, .err = err, .errlen = errlen };
	size_t len = 0, cap = 0;
	char *buf = NULL;
	struct stat st;
	int fd, rc;

	if (err && errlen)
		err[0] = '\0';
	fd = open_config(&p, file);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		fail(&p, rc, "cannot read: %s", strerror(-rc));
		goto out;
	}
	if (S_ISDIR(st.st_mode)) {
		rc = fail(&p, -EISDIR, "cannot read: %s", strerror(EISDIR));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = fail(&p, -EINVAL, "not a regular file (%s): give the configuration as a file",
		          S_ISFIFO(st.st_mode) ? "a FIFO or pipe" :
		          S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device" :
		          "a socket or other special file");
		goto out;
	}
	/* Read to EOF rather than trust st_size: the file may change while
	 * it is read. */
	for (;;) {
		ssize_t n;

		if (len > CONFIG_MAX_BYTES) {
			rc = fail(&p, -EFBIG, "larger than %d bytes, refused",
			          CONFIG_MAX_BYTES);
			goto out;
		}
		if (len == cap) {
			size_t ncap = cap ? cap * 2 : 4096;
			char *nbuf;

			nbuf = realloc(buf, ncap);
			if (!nbuf) {
				rc = fail(&p, -ENOMEM, "out of memory");
				goto out;
			}
			buf = nbuf;
			cap = ncap;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = -errno;
			fail(&p, rc, "cannot read: %s", strerror(-rc));
			goto out;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	rc = config_load_buffer(cfg, buf ? buf : "", len, file, err, errlen);
out:
	free(buf);
	(void)close(fd);  /* read-only: nothing to lose on close */
	return rc;
}

/*
 * The XIDs whose immediate action in NVIDIA's XID catalog
 * (docs.nvidia.com/deploy/xid-errors) is a GPU reset or a reboot: double-bit
 * ECC (48), micro-controller halt (61, 62), page retirement or row remapping
 * failure (64), NVLink error (74), fallen off the bus (79), uncontained ECC
 * error (95), GSP timeout and error (119, 120), unrecovered ECC (140).
 * Application faults (13, 31, 43, 45) and contained ECC errors (94) are
 * left to xid_other.
 */
static const int default_xid_fail[] = { 48, 61, 62, 64, 74, 79, 95, 119, 120, 140 };

static void
boards_init(struct config_boards *b)
{
	memset(b, 0, sizeof(*b));
	b->enabled = true;
	b->lost = VERDICT_FAIL;
	b->unresponsive = VERDICT_WARN;
	b->nxid_fail = sizeof(default_xid_fail) / sizeof(default_xid_fail[0]);
	b->xid_fail = malloc(sizeof(default_xid_fail));
	/* As with sysfs_root: no configuration without its defaults. */
	if (!b->xid_fail)
		abort();
	memcpy(b->xid_fail, default_xid_fail, sizeof(default_xid_fail));
	b->xid_other = VERDICT_WARN;
	b->ecc_uncorrectable = VERDICT_FAIL;
	b->ecc_correctable_max = -1;
	b->ecc_correctable_rise = 0;
	b->retired_pages_pending = VERDICT_FAIL;
	b->row_remap_pending = VERDICT_FAIL;
	b->row_remap_failure = VERDICT_FAIL;
	b->recovery_action = VERDICT_FAIL;
	b->throttle = VERDICT_WARN;
	b->temperature = VERDICT_WARN;
	b->temperature_margin_c = 5;
	b->nvlink_expected = -1;
	b->nvlink_down = VERDICT_FAIL;
	b->nvlink_errors_rise = 0;
	b->health = VERDICT_FAIL;
}

void
config_boards_free(struct config_boards *b)
{
	free(b->nvml_library);
	free(b->rocm_smi_library);
	free(b->cndev_library);
	free(b->xid_fail);
	memset(b, 0, sizeof(*b));
}

static int
dup_path(char **dst, const char *src)
{
	*dst = NULL;
	if (!src)
		return 0;
	*dst = strdup(src);
	return *dst ? 0 : -ENOMEM;
}

int
config_boards_copy(struct config_boards *dst, const struct config_boards *src)
{
	*dst = *src;
	dst->nvml_library = dst->rocm_smi_library = dst->cndev_library = NULL;
	dst->xid_fail = NULL;
	if (src->nxid_fail > 0) {
		dst->xid_fail = malloc(src->nxid_fail * sizeof(*dst->xid_fail));
		if (!dst->xid_fail)
			goto fail;
		memcpy(dst->xid_fail, src->xid_fail, src->nxid_fail * sizeof(*dst->xid_fail));
	}
	if (dup_path(&dst->nvml_library, src->nvml_library) < 0 ||
	    dup_path(&dst->rocm_smi_library, src->rocm_smi_library) < 0 ||
	    dup_path(&dst->cndev_library, src->cndev_library) < 0)
		goto fail;
	return 0;
fail:
	config_boards_free(dst);
	return -ENOMEM;
}

void
config_init(struct config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->sysfs_root = strdup("/");
	/* The struct owns its strings, so the default is allocated too; a
	 * process that cannot get two bytes at startup cannot run checks. */
	if (!cfg->sysfs_root)
		abort();
	cfg->slots_expected = -1;
	cfg->pcie_degraded = VERDICT_WARN;
	cfg->aer_correctable_max = -1;
	cfg->driver_required = true;
	cfg->check_timeout_s = 10;
	cfg->gather_timeout_s = 60;
	boards_init(&cfg->boards);
	ledger_init(&cfg->ledger);
}

int
config_list_add(char ***list, size_t *n, const char *value)
{
	char **nlist;
	char *copy;

	if (!value)
		return -EINVAL;
	copy = strdup(value);
	if (!copy)
		return -ENOMEM;
	nlist = realloc(*list, (*n + 1) * sizeof(*nlist));
	if (!nlist) {
		free(copy);
		return -ENOMEM;
	}
	nlist[(*n)++] = copy;
	*list = nlist;
	return 0;
}

void
config_free(struct config *cfg)
{
	free(cfg->sysfs_root);
	free_entries(&paths_list, cfg->paths, cfg->npaths);
	free_entries(&names_list, cfg->nics, cfg->nnics);
	free_entries(&names_list, cfg->ib_devices, cfg->nib_devices);
	free_settings(cfg->run, cfg->nrun);
	free_settings(cfg->run_limits, cfg->nrun_limits);
	free_entries(&hooks_list, cfg->hooks, cfg->nhooks);
	free(cfg->origin);
	config_boards_free(&cfg->boards);
	ledger_free(&cfg->ledger);
	memset(cfg, 0, sizeof(*cfg));
}
