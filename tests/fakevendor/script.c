/*
 * script.c - reading the fake vendor libraries' script (see script.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "script.h"

#define MAX_LINES 1024
#define LINE_LEN 256

struct line {
	char vendor[16];
	int index;               /* -1 for "-" */
	char key[64];
	char value[LINE_LEN];    /* the rest of the line, trimmed */
};

static struct line lines[MAX_LINES];
static int nlines;

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
parse(char *buf)
{
	char vendor[16], index[16], key[64];
	struct line *l;
	int used = 0;
	char *s;

	s = strchr(buf, '#');
	if (s)
		*s = '\0';
	s = trim(buf);
	if (!*s || nlines >= MAX_LINES)
		return;
	if (sscanf(s, "%15s %15s %63s %n", vendor, index, key, &used) < 3)
		return;
	l = &lines[nlines++];
	snprintf(l->vendor, sizeof(l->vendor), "%s", vendor);
	l->index = strcmp(index, "-") == 0 ? -1 : atoi(index);
	snprintf(l->key, sizeof(l->key), "%s", key);
	snprintf(l->value, sizeof(l->value), "%s", used > 0 ? trim(s + used) : "");
}

int
script_load(void)
{
	const char *path = getenv("VIGIL_FAKE_VENDOR");
	char buf[LINE_LEN * 2];
	FILE *f;

	nlines = 0;
	if (!path)
		return -1;
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(buf, sizeof(buf), f))
		parse(buf);
	fclose(f);
	return 0;
}

int
script_boards(const char *vendor)
{
	int n = 0;

	for (int i = 0; i < nlines; i++)
		if (strcmp(lines[i].vendor, vendor) == 0 && lines[i].index + 1 > n)
			n = lines[i].index + 1;
	return n;
}

const char *
script_value(const char *vendor, int index, const char *key)
{
	const char *v = NULL;

	for (int i = 0; i < nlines; i++)
		if (lines[i].index == index && strcmp(lines[i].vendor, vendor) == 0 &&
		    strcmp(lines[i].key, key) == 0)
			v = lines[i].value;
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
	int n = 0;

	for (int i = 0; i < nlines; i++)
		n += lines[i].index == index && strcmp(lines[i].vendor, vendor) == 0 &&
		     strcmp(lines[i].key, "event") == 0;
	return n;
}

const char *
script_event(const char *vendor, int index, int n)
{
	for (int i = 0; i < nlines; i++) {
		if (lines[i].index != index || strcmp(lines[i].vendor, vendor) != 0 ||
		    strcmp(lines[i].key, "event") != 0)
			continue;
		if (n-- == 0)
			return lines[i].value;
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
script_error(const char *vendor, int index, const char *call)
{
	unsigned code = 0;

	for (int i = 0; i < nlines; i++) {
		char name[64];
		unsigned c;

		if (lines[i].index != index || strcmp(lines[i].vendor, vendor) != 0 ||
		    strcmp(lines[i].key, "error") != 0)
			continue;
		if (sscanf(lines[i].value, "%63s %u", name, &c) == 2 && strcmp(name, call) == 0)
			code = c;
	}
	return code;
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
