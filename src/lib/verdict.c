/*
 * verdict.c - verdicts and findings: their names and how a finding is filled.
 */
#include "autoconf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/verdict.h"

static const char *const names[] = { "pass", "warn", "fail" };

const char *
verdict_name(enum verdict v)
{
	if ((unsigned)v >= sizeof(names) / sizeof(names[0]))
		return "?";
	return names[v];
}

int
verdict_parse(const char *s, enum verdict *out)
{
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (strcmp(s, names[i]) == 0) {
			*out = (enum verdict)i;
			return 0;
		}
	}
	return -EINVAL;
}

/* Control characters (a newline in a path) would break the one-line promise. */
static void
one_line(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = '?';
}

void
finding_vset(struct finding *f, enum verdict v, const char *what, const char *device,
             const char *fmt, va_list ap)
{
	size_t n;

	memset(f, 0, sizeof(*f));
	snprintf(f->what, sizeof(f->what), "%s", what ? what : "");
	device = device ? device : "";
	n = strlen(device);
	/* the end of a path tells which one it is: "...ckpt/run7" */
	if (n < sizeof(f->device))
		memcpy(f->device, device, n + 1);
	else
		snprintf(f->device, sizeof(f->device), "...%s", device + n - (sizeof(f->device) - 4));
	f->verdict = v;
	vsnprintf(f->evidence, sizeof(f->evidence), fmt, ap);
	one_line(f->what);
	one_line(f->device);
	one_line(f->evidence);
}

void
finding_add(struct finding_list *l, enum verdict v, const char *what, const char *device,
            const char *fmt, ...)
{
	va_list ap;

	if (v == VERDICT_PASS || l->err)
		return;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 8;
		struct finding *nv = realloc(l->v, cap * sizeof(*nv));

		if (!nv) {
			l->err = -ENOMEM;
			return;
		}
		l->v = nv;
		l->cap = cap;
	}
	va_start(ap, fmt);
	finding_vset(&l->v[l->n++], v, what, device, fmt, ap);
	va_end(ap);
}

int
finding_list_end(struct finding_list *l, struct finding **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	if (l->err || l->n == 0) {
		free(l->v);
		return l->err;
	}
	*out = l->v;
	*n = l->n;
	return 0;
}
