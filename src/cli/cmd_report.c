/*
 * cmd_report.c - `vigil report`: the summary, JSON or plot of an event log.
 */
#include "autoconf.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cJSON.h>

#include "vigil.h"
#include "cli/cmd.h"
#include "lib/json.h"
#include "lib/util.h"
#include "report/report.h"

static const char report_usage[] =
"usage: vigil report EVENTS [--json] [--plot FILE.svg] [--metrics FILE.prom]\n"
"\n"
"Summarise the event log of a job (vigil run --events EVENTS; - reads\n"
"standard input): its state, nodes, faults, checkpoints, performance and\n"
"alerts.\n"
"\n"
"  --json            print one JSON object instead of the summary\n"
"  --plot FILE.svg   also draw e2e time per node over iterations, with the\n"
"                    median and the alerts, as SVG (a FILE named .png, .pdf\n"
"                    or another image format is refused: convert the SVG),\n"
"                    and the timeline of the job's attempts\n"
"  --metrics FILE    also write where the time of the job's attempts went\n"
"                    (ETTR) as a Prometheus text file\n";

/* Image formats --plot does not write: a FILE named so is refused. */
static const char *const not_svg[] = {
	"png", "jpg", "jpeg", "gif", "webp", "bmp", "tif", "tiff", "pdf", "eps", "ps", "avif",
};

/*
 * PATH names an image format other than SVG: its extension, else NULL.
 * Only SVG is written (no image library is linked); a name that ends in
 * .svg, has no extension or an extension of no image format gets SVG.
 */
static const char *
refused_format(const char *path)
{
	const char *base = strrchr(path, '/'), *dot;

	base = base ? base + 1 : path;
	dot = strrchr(base, '.');
	if (!dot || dot == base)
		return NULL;
	for (size_t i = 0; i < sizeof(not_svg) / sizeof(not_svg[0]); i++)
		if (strcasecmp(dot + 1, not_svg[i]) == 0)
			return dot + 1;
	return NULL;
}

/*
 * --plot PATH named another format (EXT, within PATH): say how to get it
 * from the SVG.  rsvg-convert (librsvg) writes PNG, PDF, PS and EPS; the
 * other formats go through PNG.  Returns 64.
 */
static int
refuse_format(const char *path, const char *ext)
{
	static const char *const direct[] = { "pdf", "ps", "eps" };
	int stem = (int)(ext - 1 - path);
	char how[160] = "";

	for (size_t i = 0; i < sizeof(direct) / sizeof(direct[0]); i++)
		if (strcasecmp(ext, direct[i]) == 0)
			snprintf(how, sizeof(how), "-f %s ", direct[i]);
	if (strcasecmp(ext, "png") == 0 || how[0])
		return cmd_usage_error("report", "--plot draws SVG only, and '%s' names a .%s file: "
		                       "nothing written.  Use --plot %.*s.svg, then convert it: "
		                       "rsvg-convert %s-o %s %.*s.svg", path, ext, stem, path, how,
		                       path, stem, path);
	return cmd_usage_error("report", "--plot draws SVG only, and '%s' names a .%s file: "
	                       "nothing written.  Use --plot %.*s.svg, then convert it: "
	                       "rsvg-convert -o %.*s.png %.*s.svg, and from PNG with an image tool",
	                       path, ext, stem, path, stem, path, stem, path);
}

/* The plot or the metrics (WRITE) through the atomic writer: a link or
 * file another user planted at PATH is replaced, never followed or
 * written into. */
static int
write_file(const struct report *r, const char *path,
           int (*write)(const struct report *, FILE *))
{
	char *text = NULL;
	size_t len = 0;
	FILE *fp = open_memstream(&text, &len);
	int rc;

	if (!fp) {
		fprintf(stderr, "vigil report: cannot write %s: %s\n", path, strerror(errno));
		return VIGIL_EXIT_INTERNAL;
	}
	rc = write(r, fp);
	if (fclose(fp) != 0 && rc == 0)
		rc = -ENOMEM;
	if (rc == 0)
		rc = util_write_atomic(path, text, len, 0644);
	free(text);
	if (rc < 0) {
		fprintf(stderr, "vigil report: cannot write %s: %s\n", path, strerror(-rc));
		return VIGIL_EXIT_INTERNAL;
	}
	return VIGIL_EXIT_OK;
}

/* A warning per torn line (the first ones): the summary counts them, but
 * a log that lost events to a full disk deserves to be said so. */
static void
warn_torn(const struct report *r, const char *path)
{
	const size_t *at;
	size_t n, total = report_torn(r, &at, &n);

	for (size_t i = 0; i < n; i++)
		fprintf(stderr, "vigil report: warning: %s, line %zu: a torn event (cut short, the "
		        "next event written on after it, as a full disk leaves): its first part "
		        "is skipped, the event after it is read\n", path, at[i]);
	if (total > n)
		fprintf(stderr, "vigil report: warning: %s: %zu more torn lines\n", path, total - n);
}

int
cmd_report(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "plot", required_argument, NULL, 'p' },
		{ "metrics", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *path, *plot = NULL, *metrics = NULL;
	struct report *r = NULL;
	bool json = false;
	int c, rc;

	/* 0, not 1: GNU getopt starts over completely (the command may be
	 * called more than once in a process, as the tests do). */
	optind = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 'j': json = true; break;
		case 'p': plot = optarg; break;
		case 'm': metrics = optarg; break;
		case 'h': fputs(report_usage, stdout); return VIGIL_EXIT_OK;
		case ':': return cmd_usage_error("report", "%s needs an argument", argv[optind - 1]);
		default: return cmd_usage_error("report", "invalid option '%s'", argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return cmd_usage_error("report", "which event log? (EVENTS is missing)");
	if (optind + 1 < argc)
		return cmd_usage_error("report", "unexpected argument '%s'", argv[optind + 1]);
	path = argv[optind];
	if (plot && !*plot)
		return cmd_usage_error("report", "--plot needs a file name");
	if (metrics && !*metrics)
		return cmd_usage_error("report", "--metrics needs a file name");
	if (plot && refused_format(plot))
		return refuse_format(plot, refused_format(plot));

	rc = report_load(path, &r);
	if (rc < 0) {
		fprintf(stderr, "vigil report: cannot read %s: %s\n",
		        strcmp(path, "-") ? path : "standard input", strerror(-rc));
		return VIGIL_EXIT_INTERNAL;
	}
	warn_torn(r, strcmp(path, "-") ? path : "standard input");
	if (json) {
		cJSON *o = report_json(r);
		char *text = o ? json_print(o, true) : NULL;

		cJSON_Delete(o);
		if (!text) {
			fputs("vigil report: out of memory\n", stderr);
			report_free(r);
			return VIGIL_EXIT_INTERNAL;
		}
		fputs(text, stdout);
		fputc('\n', stdout);
		free(text);
		rc = fflush(stdout) == 0 && !ferror(stdout) ? 0 : -EIO;
	} else {
		rc = report_print(r, stdout);
	}
	if (rc < 0) {
		fprintf(stderr, "vigil report: cannot write the summary: %s\n", strerror(EIO));
		report_free(r);
		return VIGIL_EXIT_INTERNAL;
	}
	rc = plot ? write_file(r, plot, report_plot) : VIGIL_EXIT_OK;
	if (rc == VIGIL_EXIT_OK && metrics)
		rc = write_file(r, metrics, report_metrics);
	report_free(r);
	return rc;
}
