#include "autoconf.h"

#include <errno.h>
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
