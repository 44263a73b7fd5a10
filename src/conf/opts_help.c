/*
 * opts_help.c - `vigil run --help`'s options, made from opts_run_table:
 * each under its group's heading, with its value's name, its help, its
 * default and its floor, wrapped to the terminal's customary 79 columns.
 */
#include "autoconf.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "conf/opts.h"

#define HELP_INDENT 20

static const char *const group_heading[OPTS_GROUP_COUNT] = {
	[OPTS_GROUP_LAUNCH] = NULL,
	[OPTS_GROUP_RESILIENCE] = "Resilience:",
	[OPTS_GROUP_PERF] = "Performance, from the training's timing lines\n"
	                    "(\"this iteration hardware time is H and e2e time is E ms.\"):",
	[OPTS_GROUP_PREP] = "Data preparation, lifecycle scripts, batch tasks, kept output:",
};

void
opts_wrap(FILE *out, size_t col, size_t indent, const char *text)
{
	bool first = true;

	for (const char *p = text; *p;) {
		size_t word = strcspn(p, " ");

		if (!first && col + 1 + word > OPTS_HELP_WIDTH) {
			fprintf(out, "\n%*s", (int)indent, "");
			col = indent;
		} else if (!first) {
			fputc(' ', out);
			col++;
		}
		fwrite(p, 1, word, out);
		col += word;
		first = false;
		p += word;
		p += strspn(p, " ");
	}
	fputc('\n', out);
}

/* "(default 30s; 0 off, else at least 1 s)": what a row says of its value. */
static void
help_value(const struct opts_run *opt, char *buf, size_t len)
{
	char min[48];
	int n = 0;

	buf[0] = '\0';
	if (opt->def)
		n = snprintf(buf, len, "default %s", opt->def);
	if ((opt->flags & OPTS_OFF) && n >= 0 && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, "%s0 off", n ? "; " : "");
	if (opt->floor && n >= 0 && (size_t)n < len) {
		/* written as the default is, "0.1s" beside "30s" */
		if (opt->kind == OPTS_DURATION)
			snprintf(min, sizeof(min), "%gs", opt->min);
		else
			opts_run_format(opt, opt->min, min, sizeof(min));
		snprintf(buf + n, len - (size_t)n, "%s%sat least %s", n ? (opt->flags & OPTS_OFF) ?
		         ", " : "; " : "", (opt->flags & OPTS_OFF) ? "else " : "", min);
	}
}

static void
help_row(FILE *out, const struct opts_run *opt)
{
	const char *arg = opt->arg ? opt->arg : opt->kind == OPTS_DURATION ? "TIME" : NULL;
	char left[64], value[128], text[512];
	size_t col;

	if (opt->letter)
		snprintf(left, sizeof(left), "  -%c, --%s%s%s", opt->letter, opt->name,
		         arg ? " " : "", arg ? arg : "");
	else
		snprintf(left, sizeof(left), "  --%s%s%s", opt->name, arg ? " " : "", arg ? arg : "");
	help_value(opt, value, sizeof(value));
	snprintf(text, sizeof(text), "%s%s%s%s", opt->help ? opt->help : "", value[0] ? " (" : "",
	         value, value[0] ? ")" : "");
	/* the text at its column, or two spaces after a long name */
	col = strlen(left) + 2 > HELP_INDENT ? strlen(left) + 2 : HELP_INDENT;
	fprintf(out, "%-*s", (int)col, left);
	opts_wrap(out, col, HELP_INDENT, text);
}

int
opts_run_help(FILE *out)
{
	char text[1024];
	size_t w, n = 0, k = 0;

	for (int g = 0; g < OPTS_GROUP_COUNT; g++) {
		if (group_heading[g])
			fprintf(out, "\n%s\n", group_heading[g]);
		for (const struct opts_run *opt = opts_run_table; opt->name; opt++)
			if ((int)opt->group == g)
				help_row(out, opt);
	}
	/* the options whose paths opts_expand() reads, named from the table */
	for (const struct opts_run *opt = opts_run_table; opt->name; opt++)
		n += opt->kind == OPTS_TEMPLATE;
	w = (size_t)snprintf(text, sizeof(text), "In the paths of");
	for (const struct opts_run *opt = opts_run_table; opt->name; opt++) {
		if (opt->kind != OPTS_TEMPLATE || w >= sizeof(text))
			continue;
		k++;
		w += (size_t)snprintf(text + w, sizeof(text) - w, "%s--%s", k == 1 ? " " :
		                      k == n ? " and " : ", ", opt->name);
	}
	if (w < sizeof(text))
		snprintf(text + w, sizeof(text) - w, ": %%j is the job, %%n the node, %%u the user, "
		         "%%%% a percent sign.");
	fputc('\n', out);
	opts_wrap(out, 0, 0, text);
	return ferror(out) ? -EIO : 0;
}
