/*
 * script.c - reading the fake vendor libraries' script (see script.h).
 *
 * A caller of NVML may read boards in one thread while another waits for
 * events, and the wait reads the script again: each new text is parsed
 * into a table of its own, published whole, and the tables it replaces
 * are kept until the library is unloaded, so that a reader never sees
 * one half written.  The text is compared first, so the tables are as
 * many as the versions a test writes.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "script.h"

#define MAX_LINES 1024
#define MAX_TEXT (MAX_LINES * 160)
#define LINE_LEN 256

struct line {
	char vendor[16];
	int index;               /* -1 for "-" */
	char key[64];
	char value[LINE_LEN];    /* the rest of the line, trimmed */
};

struct table {
	struct table *all;       /* every table made, for the unload */
	char *text;              /* what it was parsed from */
	int n;
	struct line lines[];
};

static struct table empty;
static struct table *current = &empty;
static struct table *tables;            /* every table but EMPTY */
static pthread_mutex_t loading = PTHREAD_MUTEX_INITIALIZER;

/* The table in force: read once per lookup. */
static const struct table *
now(void)
{
	return __atomic_load_n(&current, __ATOMIC_ACQUIRE);
}

static char *
trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' || e[-1] == '\r'))
		*--e = '\0';
	return s;
}

static void
parse(struct table *t, char *buf)
{
	char vendor[16], index[16], key[64];
	struct line *l;
	int used = 0;
	char *s;

	s = strchr(buf, '#');
	if (s)
		*s = '\0';
	s = trim(buf);
	if (!*s || t->n >= MAX_LINES)
		return;
	if (sscanf(s, "%15s %15s %63s %n", vendor, index, key, &used) < 3)
		return;
	l = &t->lines[t->n++];
	snprintf(l->vendor, sizeof(l->vendor), "%s", vendor);
	l->index = strcmp(index, "-") == 0 ? -1 : atoi(index);
	snprintf(l->key, sizeof(l->key), "%s", key);
	snprintf(l->value, sizeof(l->value), "%s", used > 0 ? trim(s + used) : "");
}

/* The whole script, NUL-terminated (malloc), or NULL. */
static char *
read_text(void)
{
	const char *path = getenv("VIGIL_FAKE_VENDOR");
	char *text;
	size_t len = 0;
	FILE *f;

	if (!path || !(f = fopen(path, "r")))
		return NULL;
	text = malloc(MAX_TEXT + 1);
	if (text)
		len = fread(text, 1, MAX_TEXT, f);
	fclose(f);
	if (text)
		text[len] = '\0';
	return text;
}

/* Parse TEXT into a new table, which takes TEXT, and publish it. */
static void
publish(char *text)
{
	struct table *t;
	char *work = strdup(text), *save = NULL;
	int lines = 1;

	for (const char *p = text; *p; p++)
		lines += *p == '\n';
	if (lines > MAX_LINES)
		lines = MAX_LINES;
	t = calloc(1, sizeof(*t) + (size_t)lines * sizeof(struct line));
	if (!t || !work) {
		free(t);
		free(work);
		free(text);
		return;
	}
	t->text = text;
	for (char *s = strtok_r(work, "\n", &save); s && t->n < lines;
	     s = strtok_r(NULL, "\n", &save)) {
		char buf[LINE_LEN * 2];

		snprintf(buf, sizeof(buf), "%s", s);
		parse(t, buf);
	}
	free(work);
	t->all = tables;
	tables = t;
	__atomic_store_n(&current, t, __ATOMIC_RELEASE);
}

int
script_load(void)
{
	char *text = read_text();

	(void)pthread_mutex_lock(&loading);
	if (!text)
		__atomic_store_n(&current, &empty, __ATOMIC_RELEASE);
	else if (current->text && strcmp(current->text, text) == 0)
		free(text);
	else
		publish(text);
	(void)pthread_mutex_unlock(&loading);
	return text ? 0 : -1;
}

/* Every table, at unload: nothing of the library is in use any more. */
static void __attribute__((destructor))
script_unload(void)
{
	current = &empty;
	while (tables) {
		struct table *t = tables;

		tables = t->all;
		free(t->text);
		free(t);
	}
}

int
script_boards(const char *vendor)
{
	const struct table *t = now();
	int n = 0;

	for (int i = 0; i < t->n; i++)
		if (strcmp(t->lines[i].vendor, vendor) == 0 && t->lines[i].index + 1 > n)
			n = t->lines[i].index + 1;
	return n;
}

const char *
script_value(const char *vendor, int index, const char *key)
{
	const struct table *t = now();
	const char *v = NULL;

	for (int i = 0; i < t->n; i++)
		if (t->lines[i].index == index && strcmp(t->lines[i].vendor, vendor) == 0 &&
		    strcmp(t->lines[i].key, key) == 0)
			v = t->lines[i].value;
	return v;
}

bool
script_has(const char *vendor, int index, const char *key)
{
	return script_value(vendor, index, key) != NULL;
}

long long
script_ll(const char *vendor, int index, const char *key, long long dflt)
{
	const char *v = script_value(vendor, index, key);

	return v && *v ? strtoll(v, NULL, 0) : dflt;
}

int
script_events(const char *vendor, int index)
{
	const struct table *t = now();
	int n = 0;

	for (int i = 0; i < t->n; i++)
		n += t->lines[i].index == index && strcmp(t->lines[i].vendor, vendor) == 0 &&
		     strcmp(t->lines[i].key, "event") == 0;
	return n;
}

const char *
script_event(const char *vendor, int index, int n)
{
	const struct table *t = now();

	for (int i = 0; i < t->n; i++) {
		if (t->lines[i].index != index || strcmp(t->lines[i].vendor, vendor) != 0 ||
		    strcmp(t->lines[i].key, "event") != 0)
			continue;
		if (n-- == 0)
			return t->lines[i].value;
	}
	return NULL;
}

void
script_maybe_hang(const char *vendor, const char *stage)
{
	const char *v = script_value(vendor, -1, "hang");

	if (v && strcmp(v, stage) == 0)
		for (;;)
			pause();
}

unsigned
script_call(const char *vendor, int index, const char *key, const char *call)
{
	const struct table *t = now();
	unsigned code = 0;

	for (int i = 0; i < t->n; i++) {
		char name[64];
		unsigned c;

		if (t->lines[i].index != index || strcmp(t->lines[i].vendor, vendor) != 0 ||
		    strcmp(t->lines[i].key, key) != 0)
			continue;
		if (sscanf(t->lines[i].value, "%63s %u", name, &c) == 2 && strcmp(name, call) == 0)
			code = c;
	}
	return code;
}

unsigned
script_error(const char *vendor, int index, const char *call)
{
	return script_call(vendor, index, "error", call);
}

void
script_enter(const char *vendor, int index, const char *call)
{
	const char *trace = script_value(vendor, -1, "trace");
	unsigned ms = script_call(vendor, index, "slow", call);

	if (trace) {
		char line[80];
		int fd = open(trace, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
		int n = snprintf(line, sizeof(line), "%s\n", call);

		/* One short write with O_APPEND: whole lines from every thread. */
		if (fd >= 0) {
			ssize_t w = write(fd, line, (size_t)n);

			(void)w;  /* a lost line shows as a call missing from the trace */
			close(fd);
		}
	}
	if (ms > 0) {
		struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
	}
}

int
script_nth(const char *vendor, int index)
{
	int n = script_boards(vendor);

	for (int b = 0; b < n; b++) {
		if (script_ll(vendor, b, "absent", 0))
			continue;
		if (index-- == 0)
			return b;
	}
	return -1;
}

int
script_present(const char *vendor)
{
	int n = 0;

	while (script_nth(vendor, n) >= 0)
		n++;
	return n;
}

int
script_bus(const char *text, unsigned *domain, unsigned *bus, unsigned *dev, unsigned *fn)
{
	if (!text || sscanf(text, "%x:%x:%x.%x", domain, bus, dev, fn) != 4)
		return -1;
	return 0;
}
