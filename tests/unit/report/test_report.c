/*
 * test_report.c - `vigil report`: reading an event log, the summary, the
 * JSON and the plot.
 */
#include "autoconf.h"

#include "../vigil_test.h"
#include "../scratch.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cJSON.h>

#include "vigil.h"
#include "cli/cmd.h"
#include "report/report.h"

/* Room for what `vigil report` wrote to stderr (slurp()). */
#define ERR_SIZE 4096

struct fixture {
	char dir[64];
	char log[128];
	char svg[128];
	char err[128];
};

static int
setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	if (make_scratch_dir(f->dir, sizeof(f->dir), "report") < 0)
		return -1;
	snprintf(f->log, sizeof(f->log), "%s/events.jsonl", f->dir);
	snprintf(f->svg, sizeof(f->svg), "%s/plot.svg", f->dir);
	snprintf(f->err, sizeof(f->err), "%s/stderr", f->dir);
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *f = *state;

	unlink(f->log);
	unlink(f->svg);
	unlink(f->err);
	rmdir(f->dir);
	free(f);
	return 0;
}

/* ---- a synthetic log ------------------------------------------------- */

static void
event(FILE *fp, int sec, const char *node, int rank, const char *kind, const char *severity,
      const char *message, const char *details)
{
	fprintf(fp, "{\"time\":\"2026-11-20T23:%02d:%02d.000Z\",\"node\":\"%s\",\"rank\":%d,"
	        "\"kind\":\"%s\",\"severity\":\"%s\",\"message\":\"%s\",\"details\":%s}\n",
	        30 + sec / 60, sec % 60, node, rank, kind, severity, message,
	        details ? details : "{}");
}

/* e2e time of node RANK (0-3) in iteration IT: n3 (rank 2) is about 50 ms
 * slower from iteration 91 on. */
static double
e2e_of(int rank, int it)
{
	return (rank == 2 && it > 90 ? 150 : 100 + rank) + it % 5;
}

/*
 * Four nodes, 200 iterations with a summary each (node_e2e when
 * NODE_VALUES), n3 slow from iteration 91, a straggler alert on n3 and a
 * ratio alert on n2, one malformed line, a checkpoint, the exits and the
 * job's end.
 */
static void
write_job(const char *path, bool node_values)
{
	FILE *fp = fopen(path, "w");
	static const char *const names[] = { "n1", "n2", "n3", "n4" };
	char d[1024];

	assert_non_null(fp);
	for (int r = 0; r < 4; r++)
		event(fp, 0, names[r], r, "check", "info", "slots: 8 slots",
		      "{\"check\":\"slots\",\"verdict\":\"pass\"}");
	event(fp, 1, "n1", 0, "verdict", "info", "all 4 nodes healthy",
	      "{\"verdict\":\"pass\",\"nodes_total\":4,\"nodes_failed\":0}");
	event(fp, 1, "n1", 0, "launch", "info", "starting the training", NULL);
	for (int it = 1; it <= 200; it++) {
		double v[4], min = 1e9, max = 0, sum = 0;
		int imin = 0, imax = 0;
		size_t len;

		for (int r = 0; r < 4; r++) {
			v[r] = e2e_of(r, it);
			sum += v[r];
			if (v[r] < min) {
				min = v[r];
				imin = r;
			}
			if (v[r] > max) {
				max = v[r];
				imax = r;
			}
		}
		len = (size_t)snprintf(d, sizeof(d),
		        "{\"iter\":%d,\"e2e_min\":%g,\"e2e_mean\":%g,\"e2e_max\":%g,"
		        "\"e2e_min_node\":\"%s\",\"e2e_max_node\":\"%s\",\"hw_mean\":80,"
		        "\"r_min\":0.5,\"r_mean\":0.75,\"r_max\":0.8,\"r_min_node\":\"n3\","
		        "\"r_max_node\":\"n1\"", it, min, sum / 4, max, names[imin], names[imax]);
		if (node_values)
			len += (size_t)snprintf(d + len, sizeof(d) - len,
			        ",\"node_e2e\":{\"n1\":%g,\"n2\":%g,\"n3\":%g,\"n4\":%g}",
			        v[0], v[1], v[2], v[3]);
		snprintf(d + len, sizeof(d) - len, "}");
		event(fp, 2 + it / 10, "n1", 0, "perf", "info", "iteration summary", d);
		if (it == 60)
			fputs("{\"time\": \"2026-11-20T23:30:08.000Z\", \"kind\": \"perf\", truncated\n", fp);
		if (it == 110)
			event(fp, 13, "n3", 2, "alert", "warning",
			      "n3 (rank 2): e2e 48.5% above the median of nodes for 5 iterations",
			      "{\"kind\":\"straggler\",\"iter\":110,\"node\":\"n3\",\"rank\":2,"
			      "\"value\":48.5,\"message\":\"n3 (rank 2): e2e 48.5% above the median "
			      "of nodes for 5 iterations\"}");
		if (it == 150)
			event(fp, 17, "n2", 1, "alert", "warning",
			      "n2 (rank 1): hw/e2e 0.50 above 0.45 for 5 iterations",
			      "{\"kind\":\"ratio\",\"iter\":150,\"node\":\"n2\",\"rank\":1,"
			      "\"value\":0.5,\"message\":\"n2 (rank 1): hw/e2e 0.50 above 0.45 for 5 "
			      "iterations\"}");
	}
	event(fp, 25, "n1", 0, "checkpoint", "warning", "the time limit is near", NULL);
	for (int r = 0; r < 4; r++)
		event(fp, 27, names[r], r, "exit", "info", "training ended with status 0",
		      "{\"exit_code\":0,\"attempt\":0}");
	event(fp, 28, "n1", 0, "job", "error",
	      "job expired (exit 83): the time limit is near",
	      "{\"state\":\"expired\",\"exit_code\":83}");
	fclose(fp);
}

static char *
capture_text(const struct report *r)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *fp = open_memstream(&buf, &len);

	assert_non_null(fp);
	assert_int_equal(report_print(r, fp), 0);
	fclose(fp);
	return buf;
}

static char *
capture_svg(const struct report *r)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *fp = open_memstream(&buf, &len);

	assert_non_null(fp);
	assert_int_equal(report_plot(r, fp), 0);
	fclose(fp);
	return buf;
}

static int
count(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* TEXT has LINE as a whole line. */
static void
assert_line(const char *text, const char *line)
{
	size_t len = strlen(line);

	for (const char *p = text; (p = strstr(p, line)); p++) {
		if ((p == text || p[-1] == '\n') && p[len] == '\n')
			return;
	}
	fail_msg("no line [%s] in:\n%s", line, text);
}

static struct report *
load(const char *path)
{
	struct report *r = NULL;

	assert_int_equal(report_load(path, &r), 0);
	assert_non_null(r);
	return r;
}

/* ---- tests ----------------------------------------------------------- */

static void
test_summary(void **state)
{
	struct fixture *f = *state;
	struct report *r;
	char *text, want[256];

	write_job(f->log, true);
	r = load(f->log);
	text = capture_text(r);
	snprintf(want, sizeof(want), "events:        %s (214 events)", f->log);
	assert_line(text, want);
	assert_line(text, "job:           expired, exit status 83");
	assert_line(text, "reason:        job expired (exit 83): the time limit is near");
	assert_line(text, "time:          2026-11-20T23:30:00.000Z to 2026-11-20T23:30:28.000Z (28.0 s)");
	assert_line(text, "pre-check:     pass");
	assert_line(text, "nodes:         4 (4 exited, 0 lost)");
	assert_line(text, "  n1    rank 0    exit 0");
	assert_line(text, "  n3    rank 2    exit 0; slow (1 straggler alert)");
	assert_line(text, "faults:        0");
	assert_line(text, "checkpoints:   1");
	assert_line(text, "  2026-11-20T23:30:25.000Z  the time limit is near");
	assert_line(text, "restarts:      0");
	assert_line(text, "iterations:    200 (200 summaries)");
	/* 800 values: n1 100-104, n2 101-105, n4 103-107, n3 102-106 (90) then 150-154 (110) */
	assert_line(text, "e2e time:      min 100.000 ms, median 104.000 ms, max 154.000 ms");
	assert_line(text, "hardware:      mean 80.000 ms");
	assert_line(text, "hw/e2e:        min 0.500, mean 0.750, max 0.800");
	/* medians 102, 103, 150, 105: the median node 104, n3 44.2% above */
	assert_line(text, "slowest node:  n3, median e2e 150.000 ms (44.2% above the median node, 104.000 ms)");
	assert_line(text, "alerts:        2");
	assert_line(text, "  iteration 110  straggler  n3 (rank 2): e2e 48.5% above the median of nodes for 5 iterations");
	assert_line(text, "  iteration 150  ratio      n2 (rank 1): hw/e2e 0.50 above 0.45 for 5 iterations");
	assert_line(text, "malformed:     1 line skipped (line 67)");
	assert_null(strstr(text, "earlier runs"));
	assert_int_equal(report_malformed(r), 1);
	free(text);
	report_free(r);
}

static void
test_json(void **state)
{
	struct fixture *f = *state;
	struct report *r;
	cJSON *o, *job, *nodes, *perf, *n3, *alerts, *slow;

	write_job(f->log, true);
	r = load(f->log);
	o = report_json(r);
	assert_non_null(o);
	job = cJSON_GetObjectItem(o, "job");
	assert_string_equal(cJSON_GetObjectItem(job, "state")->valuestring, "expired");
	assert_int_equal(cJSON_GetObjectItem(job, "exit_code")->valueint, 83);
	assert_int_equal(cJSON_GetObjectItem(o, "events")->valueint, 214);
	assert_int_equal(cJSON_GetObjectItem(o, "malformed_lines")->valueint, 1);
	assert_int_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "malformed_at"), 0)->valueint, 67);
	assert_int_equal(cJSON_GetObjectItem(o, "runs")->valueint, 1);
	assert_string_equal(cJSON_GetObjectItem(o, "precheck")->valuestring, "pass");
	nodes = cJSON_GetObjectItem(o, "nodes");
	assert_int_equal(cJSON_GetArraySize(nodes), 4);
	n3 = cJSON_GetArrayItem(nodes, 2);
	assert_string_equal(cJSON_GetObjectItem(n3, "node")->valuestring, "n3");
	assert_int_equal(cJSON_GetObjectItem(n3, "rank")->valueint, 2);
	assert_string_equal(cJSON_GetObjectItem(n3, "state")->valuestring, "exited");
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(n3, "slow")));
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetArrayItem(nodes, 0), "slow")));
	assert_true(cJSON_GetObjectItem(n3, "median_e2e_ms")->valuedouble == 150);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(o, "checkpoints")), 1);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(o, "faults")), 0);
	perf = cJSON_GetObjectItem(o, "performance");
	assert_int_equal(cJSON_GetObjectItem(perf, "iterations")->valueint, 200);
	assert_true(cJSON_GetObjectItem(cJSON_GetObjectItem(perf, "e2e_ms"), "median")->valuedouble == 104);
	assert_true(cJSON_GetObjectItem(cJSON_GetObjectItem(perf, "e2e_ms"), "max")->valuedouble == 154);
	slow = cJSON_GetObjectItem(perf, "slowest_node");
	assert_string_equal(cJSON_GetObjectItem(slow, "node")->valuestring, "n3");
	assert_true(cJSON_GetObjectItem(slow, "nodes_median_e2e_ms")->valuedouble == 104);
	alerts = cJSON_GetObjectItem(o, "alerts");
	assert_int_equal(cJSON_GetArraySize(alerts), 2);
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(alerts, 0), "kind")->valuestring,
	                    "straggler");
	assert_int_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(alerts, 1), "iter")->valueint, 150);
	cJSON_Delete(o);
	report_free(r);
}

static void
test_plot(void **state)
{
	struct fixture *f = *state;
	struct report *r;
	char *svg;

	write_job(f->log, true);
	r = load(f->log);
	svg = capture_svg(r);
	assert_memory_equal(svg, "<?xml", 5);
	assert_non_null(strstr(svg, "<svg xmlns=\"http://www.w3.org/2000/svg\""));
	assert_int_equal(count(svg, "<polyline"), 4);
	assert_int_equal(count(svg, "class=\"alert\""), 2);
	assert_int_equal(count(svg, "class=\"alert-label\""), 2);
	assert_non_null(strstr(svg, ">straggler n3 @110</text>"));
	assert_non_null(strstr(svg, ">ratio n2 @150</text>"));
	/* the slow node is flagged in the legend, and only it */
	assert_int_equal(count(svg, "class=\"slow\""), 1);
	assert_non_null(strstr(svg, ">n3 (150.000 ms)</text>"));
	assert_non_null(strstr(svg, "End-to-end time per node over iterations"));
	assert_non_null(strstr(svg, ">iteration</text>"));
	assert_non_null(strstr(svg, ">e2e time (ms)</text>"));
	/* ticks: iterations 0 to 200, times 100 to 160 (154 rounded up) */
	assert_non_null(strstr(svg, ">200</text>"));
	assert_non_null(strstr(svg, ">160</text>"));
	assert_non_null(strstr(svg, "</svg>\n"));
	free(svg);
	report_free(r);
}

/* Summaries without node_e2e: min / mean / max, and the node most often slowest. */
static void
test_without_node_values(void **state)
{
	struct fixture *f = *state;
	struct report *r;
	char *svg, *text;

	write_job(f->log, false);
	r = load(f->log);
	svg = capture_svg(r);
	assert_int_equal(count(svg, "<polyline"), 3);
	assert_int_equal(count(svg, "class=\"alert\""), 2);
	text = capture_text(r);
	/* n4 is slowest until iteration 90, n3 after */
	assert_line(text, "slowest node:  n3 (slowest in 110 of 200 summaries)");
	/* the median of the summaries' means */
	assert_non_null(strstr(text, "e2e time:      min 100.000 ms, median "));
	free(svg);
	free(text);
	report_free(r);
}

static void
test_malformed(void **state)
{
	struct fixture *f = *state;
	struct report *r;
	FILE *fp = fopen(f->log, "w");
	char *text;

	assert_non_null(fp);
	fputs("\n"                                              /* 1 blank: skipped quietly */
	      "not json\n"                                      /* 2 */
	      "[1, 2]\n"                                        /* 3 not an object */
	      "{\"node\": \"n1\"}\n"                            /* 4 no kind */
	      "{\"kind\": 7}\n"                                 /* 5 kind not a string */
	      "{\"kind\": \"exit\"} trailing\n"                 /* 6 garbage after */
	      "   \t \r\n"                                      /* 7 blank */
	      "{\"kind\": \"exit\", \"node\": \"n1\", \"rank\": 0, \"details\": {\"exit_code\": 1}}\r\n"
	      "{\"kind\": \"from the future\", \"details\": [1]}\n"  /* 9 unknown kind: fine */
	      "{\"kind\": \"perf\", \"details\": {\"iter\": \"x\"}}\n" /* 10 fine, says nothing */
	      "{\"kind\": \"alert\"}\n"                         /* 11 fine, sparse */
	      "{\"kind\": \"job\", \"details\": \"odd\"}\n"     /* 12 fine, sparse */
	      "{\"kind\": \"exit\", \"node\": \"n2\"", fp);     /* 13 cut short, no newline */
	fclose(fp);
	r = load(f->log);
	assert_int_equal(report_malformed(r), 6);
	text = capture_text(r);
	assert_line(text, "malformed:     6 lines skipped (line 2, 3, 4, 5, 6, 13)");
	assert_line(text, "  n1    rank 0    exit 1");
	assert_line(text, "job:           ?");
	assert_line(text, "performance:   no timing summaries in the log");
	assert_line(text, "alerts:        1");
	free(text);
	text = capture_svg(r);
	assert_int_equal(count(text, "<polyline"), 0);
	assert_non_null(strstr(text, "no timings in the log"));
	free(text);
	report_free(r);
}

/* A requeued job appends: the report is about the last run. */
static void
test_runs(void **state)
{
	struct fixture *f = *state;
	struct report *r;
	FILE *fp = fopen(f->log, "w");
	char *text;
	cJSON *o;

	assert_non_null(fp);
	event(fp, 0, "n1", 0, "exit", "error", "training ended with status 1", "{\"exit_code\":1}");
	event(fp, 1, "n2", 1, "fault", "error", "xid gpu0: Xid 79", NULL);
	event(fp, 2, "n1", 0, "job", "error", "job error", "{\"state\":\"error\",\"exit_code\":1}");
	event(fp, 10, "n1", 0, "checkpoint", "warning", "SIGUSR1", NULL);
	event(fp, 11, "n1", 0, "job", "expired", "job expired (exit 81, requeue): SIGUSR1",
	      "{\"state\":\"expired\",\"exit_code\":81}");
	event(fp, 20, "n1", 0, "launch", "info", "starting the training", NULL);
	event(fp, 21, "n2", 1, "node_lost", "error", "n2 (rank 1) lost: no heartbeat for 12.0 s",
	      "{\"silent_s\":12}");
	event(fp, 22, "n1", 0, "restart", "warning", "starting the training again (attempt 1)", NULL);
	event(fp, 23, "n1", 0, "exit", "error", "training ended with status 143",
	      "{\"exit_code\":143,\"signal\":\"SIGTERM\"}");
	event(fp, 24, "n3", 2, "exit", "error", "cannot start", "{\"exit_code\":127,\"error\":\"python: not found\"}");
	event(fp, 25, "n3", 2, "fault", "warning", "pcie gpu1: link degraded", NULL);
	fclose(fp);

	r = load(f->log);
	text = capture_text(r);
	assert_line(text, "earlier runs:  error (exit 1), expired (exit 81)");
	assert_line(text, "job:           no \"job\" event: still running, or the agent died");
	assert_line(text, "time:          2026-11-20T23:30:20.000Z to 2026-11-20T23:30:25.000Z (5.0 s)");
	assert_line(text, "nodes:         3 (2 exited, 1 lost)");
	assert_line(text, "  n1    rank 0    exit 143 (SIGTERM)");
	assert_line(text, "  n2    rank 1    lost: n2 (rank 1) lost: no heartbeat for 12.0 s");
	assert_line(text, "  n3    rank 2    exit 127: python: not found; 1 fault");
	assert_line(text, "faults:        1");
	assert_line(text, "  2026-11-20T23:30:25.000Z  n3 (rank 2): warning: pcie gpu1: link degraded");
	assert_line(text, "lost nodes:    1");
	assert_line(text, "checkpoints:   0");
	assert_line(text, "restarts:      1");
	assert_non_null(strstr(text, "(11 events; run 3 of 3 in this log)\n"));
	o = report_json(r);
	assert_non_null(o);
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(o, "job")));
	assert_int_equal(cJSON_GetObjectItem(o, "runs")->valueint, 3);
	assert_int_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "earlier_runs"), 1),
	                                     "exit_code")->valueint, 81);
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "nodes"), 1),
	                                        "state")->valuestring, "lost");
	cJSON_Delete(o);
	free(text);
	report_free(r);
}

/*
 * A full disk leaves half an event, and the next event is then written on
 * after it.  The half is skipped with a warning naming the line; the
 * event glued to it is read, and a torn "job" event still ends its run.
 */
static void
test_torn(void **state)
{
	struct fixture *f = *state;
	struct report *r;
	FILE *fp = fopen(f->log, "w");
	const size_t *at;
	size_t nat;
	char *text;
	cJSON *o;

	assert_non_null(fp);
	event(fp, 0, "n1", 0, "launch", "info", "starting the training", NULL);
	/* 2: an exit cut short, the next (n2's exit) glued to it */
	fputs("{\"time\":\"2026-11-20T23:30:01.000Z\",\"node\":", fp);
	event(fp, 2, "n2", 1, "exit", "error", "training ended with status 3", "{\"exit_code\":3}");
	/* 3: the job's end cut short: the run still ends here; the next
	 * job's first event glued to it */
	fputs("{\"time\":\"2026-11-20T23:30:03.000Z\",\"node\":\"n1\",\"rank\":0,"
	      "\"kind\":\"job\",\"severity\":\"err", fp);
	event(fp, 10, "n1", 0, "launch", "info", "starting the training", NULL);
	event(fp, 11, "n1", 0, "exit", "info", "training ended with status 0", "{\"exit_code\":0}");
	/* 5: cut short with nothing after it: only malformed */
	fputs("{\"time\":\"2026-11-20T23:30:12.000Z\",\"node\":\"n1\"\n", fp);
	/* 6: many candidates, none an event: bounded, nothing recovered */
	for (int i = 0; i < 40; i++)
		fputs("{\"time\":", fp);
	fputc('\n', fp);
	event(fp, 13, "n1", 0, "job", "info", "job succeeded", "{\"state\":\"success\",\"exit_code\":0}");
	fclose(fp);

	r = load(f->log);
	assert_int_equal(report_malformed(r), 4);
	assert_int_equal(report_torn(r, &at, &nat), 2);
	assert_int_equal(nat, 2);
	assert_int_equal(at[0], 2);
	assert_int_equal(at[1], 3);
	text = capture_text(r);
	assert_line(text, "earlier runs:  ?");
	assert_line(text, "job:           success, exit status 0");
	assert_line(text, "malformed:     4 lines skipped (line 2, 3, 5, 6)");
	assert_line(text, "torn:          2 lines with half an event, the event glued to it read "
	            "(line 2, 3)");
	assert_non_null(strstr(text, "(5 events; run 2 of 2 in this log)\n"));
	free(text);
	o = report_json(r);
	assert_non_null(o);
	assert_int_equal(cJSON_GetObjectItem(o, "torn_lines")->valueint, 2);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(o, "torn_at")), 2);
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(o,
	                    "earlier_runs"), 0), "ended")->valuestring, "2026-11-20T23:30:03.000Z");
	cJSON_Delete(o);
	report_free(r);

	/* the first run, read alone, has n2's exit from the torn line */
	fp = fopen(f->log, "w");
	assert_non_null(fp);
	fputs("{\"time\":\"2026-11-20T23:30:01.000Z\",\"node\":", fp);
	event(fp, 2, "n2", 1, "exit", "error", "training ended with status 3", "{\"exit_code\":3}");
	fclose(fp);
	r = load(f->log);
	text = capture_text(r);
	assert_line(text, "  n2    rank 1    exit 3");
	free(text);
	report_free(r);
}

/* Names from the log reach the SVG escaped, and only as valid UTF-8. */
static void
test_svg_escaping(void **state)
{
	struct fixture *f = *state;
	struct report *r;
	FILE *fp = fopen(f->log, "w");
	char *svg;

	assert_non_null(fp);
	for (int it = 1; it <= 3; it++)
		fprintf(fp, "{\"kind\":\"perf\",\"details\":{\"iter\":%d,\"node_e2e\":"
		        "{\"a<b&c\\\"d\":%d,\"bad\\u0001\xff\xc3\xa9\":%d}}}\n", it, 10 + it, 20);
	fputs("{\"kind\":\"alert\",\"details\":{\"kind\":\"straggler\",\"iter\":2,"
	      "\"node\":\"a<b&c\\\"d\",\"message\":\"<script>\"}}\n", fp);
	fclose(fp);
	r = load(f->log);
	svg = capture_svg(r);
	assert_int_equal(count(svg, "<polyline"), 2);
	assert_non_null(strstr(svg, "a&lt;b&amp;c&quot;d"));
	assert_non_null(strstr(svg, "bad??\xc3\xa9"));  /* control and stray byte replaced, é kept */
	assert_null(strstr(svg, "<script>"));
	assert_null(strstr(svg, "a<b"));
	assert_null(strstr(svg, "\xff"));
	free(svg);
	report_free(r);
}

/* ---- the command ----------------------------------------------------- */

/* argv strings are not const */
static char a_report[] = "report", a_json[] = "--json", a_plot[] = "--plot",
            a_help[] = "--help", a_bogus[] = "--bogus", a_other[] = "other.jsonl";

/* cmd_report with its stdout and stderr sent to files; returns its status. */
static int
run_cmd(struct fixture *f, int argc, char **argv)
{
	int out, err, saved_out, saved_err, rc;

	fflush(stdout);
	fflush(stderr);
	saved_out = dup(STDOUT_FILENO);
	saved_err = dup(STDERR_FILENO);
	out = open("/dev/null", O_WRONLY);
	err = open(f->err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(saved_out >= 0 && saved_err >= 0 && out >= 0 && err >= 0);
	dup2(out, STDOUT_FILENO);
	dup2(err, STDERR_FILENO);
	rc = cmd_report(argc, argv);
	fflush(stdout);
	fflush(stderr);
	dup2(saved_out, STDOUT_FILENO);
	dup2(saved_err, STDERR_FILENO);
	close(saved_out);
	close(saved_err);
	close(out);
	close(err);
	return rc;
}

static void
test_command(void **state)
{
	struct fixture *f = *state;
	char missing[160], badplot[160];
	char *err;

	write_job(f->log, true);
	{
		char *argv[] = { a_report, f->log, a_plot, f->svg, NULL };

		assert_int_equal(run_cmd(f, 4, argv), VIGIL_EXIT_OK);
		assert_int_equal(access(f->svg, R_OK), 0);
	}
	{
		char *argv[] = { a_report, a_json, f->log, NULL };  /* options anywhere */

		assert_int_equal(run_cmd(f, 3, argv), VIGIL_EXIT_OK);
	}
	{
		char *argv[] = { a_report, a_help, NULL };

		assert_int_equal(run_cmd(f, 2, argv), VIGIL_EXIT_OK);
	}
	snprintf(missing, sizeof(missing), "%s/absent.jsonl", f->dir);
	{
		char *argv[] = { a_report, missing, NULL };

		assert_int_equal(run_cmd(f, 2, argv), VIGIL_EXIT_INTERNAL);
		err = slurp(f->err, ERR_SIZE, NULL);
		assert_non_null(strstr(err, missing));
		assert_non_null(strstr(err, "No such file or directory"));
		free(err);
	}
	snprintf(badplot, sizeof(badplot), "%s/no/such/dir/plot.svg", f->dir);
	{
		char *argv[] = { a_report, f->log, a_plot, badplot, NULL };

		assert_int_equal(run_cmd(f, 4, argv), VIGIL_EXIT_INTERNAL);
		err = slurp(f->err, ERR_SIZE, NULL);
		assert_non_null(strstr(err, badplot));
		free(err);
	}
	{
		char *argv[] = { a_report, NULL };

		assert_int_equal(run_cmd(f, 1, argv), VIGIL_EXIT_USAGE);
		err = slurp(f->err, ERR_SIZE, NULL);
		assert_non_null(strstr(err, "EVENTS is missing"));
		free(err);
	}
	{
		char *argv[] = { a_report, f->log, a_other, NULL };

		assert_int_equal(run_cmd(f, 3, argv), VIGIL_EXIT_USAGE);
	}
	{
		char *argv[] = { a_report, f->log, a_bogus, NULL };

		assert_int_equal(run_cmd(f, 3, argv), VIGIL_EXIT_USAGE);
		err = slurp(f->err, ERR_SIZE, NULL);
		assert_non_null(strstr(err, "--bogus"));
		free(err);
	}
	{
		char *argv[] = { a_report, f->log, a_plot, NULL };

		assert_int_equal(run_cmd(f, 3, argv), VIGIL_EXIT_USAGE);
	}
	/* a torn line: a warning that names the file and the line */
	{
		char *argv[] = { a_report, f->log, NULL };
		FILE *fp = fopen(f->log, "a");

		assert_non_null(fp);
		fputs("{\"time\":\"2026-11-20T23:40:00.000Z\",\"no", fp);
		event(fp, 700, "n1", 0, "launch", "info", "starting the training", NULL);
		fclose(fp);
		assert_int_equal(run_cmd(f, 2, argv), VIGIL_EXIT_OK);
		err = slurp(f->err, ERR_SIZE, NULL);
		assert_non_null(strstr(err, "vigil report: warning: "));
		assert_non_null(strstr(err, "events.jsonl, line 216: a torn event"));
		free(err);
	}
}

/* What follows PREFIX in TEXT, up to a comma, a tag or the line's end, in BUF. */
static const char *
line_after(const char *text, const char *prefix, char *buf, size_t len)
{
	const char *p = strstr(text, prefix), *e;

	assert_non_null(p);
	p += strlen(prefix);
	e = strpbrk(p, "\n<,");
	assert_non_null(e);
	snprintf(buf, len, "%.*s", (int)(e - p), p);
	return buf;
}

/*
 * A 60-iteration job of 2 nodes with one summary (the default interval)
 * and the nodes' series: every iteration is drawn, with markers, the
 * nodes' equal values apart; the median on the plot is the summary's.
 */
static void
test_series_plot(void **state)
{
	struct fixture *f = *state;
	FILE *fp = fopen(f->log, "w");
	char d[4096], med_text[64], med_svg[64];
	struct report *r;
	char *text, *svg;
	size_t len;

	assert_non_null(fp);
	event(fp, 1, "n1", 0, "perf", "info", "iteration summary",
	      "{\"iter\":60,\"e2e_min\":150,\"e2e_mean\":151,\"e2e_max\":152,"
	      "\"node_e2e\":{\"n1\":150,\"n2\":152}}");
	for (int node = 0; node < 2; node++) {
		len = (size_t)snprintf(d, sizeof(d), "{\"groups_per_point\":1,\"points\":[");
		for (int it = 1; it <= 60; it++)
			len += (size_t)snprintf(d + len, sizeof(d) - len, "%s[%d,%d,%g]", it > 1 ? "," : "",
			                        it, it, 150 + (it % 4) * 0.5 + (node && it > 40 ? 20 : 0));
		snprintf(d + len, sizeof(d) - len, "]}");
		event(fp, 2, node ? "n2" : "n1", node, "series", "info", "e2e", d);
	}
	event(fp, 3, "n1", 0, "job", "info", "job succeeded", "{\"state\":\"succeeded\",\"exit_code\":0}");
	fclose(fp);
	r = load(f->log);
	text = capture_text(r);
	assert_line(text, "iterations:    60 (1 summary)");
	/* the median of every iteration's value, not of the summary's two */
	assert_line(text, "e2e time:      min 150.000 ms, median 151.000 ms, max 171.500 ms");
	svg = capture_svg(r);
	/* the plot says the summary's median, in the same words */
	line_after(text, "e2e time:      min 150.000 ms, median ", med_text, sizeof(med_text));
	line_after(svg, "\"median-key\" fill=\"#222222\">median, all: ", med_svg, sizeof(med_svg));
	assert_string_equal(med_svg, med_text);
	assert_non_null(strstr(svg, ">median 151.000 ms</text>"));
	/* every iteration of both nodes, a marker each, two shapes */
	assert_int_equal(count(svg, "<polyline"), 2);
	assert_int_equal(count(svg, "<use xlink:href=\"#mk0\""), 60 + 1);  /* + the legend's */
	assert_int_equal(count(svg, "<use xlink:href=\"#mk1\""), 60 + 1);
	/* equal values apart: iteration 1 of n1 and of n2 at different places */
	assert_non_null(strstr(svg, "<title>n1</title>"));
	assert_non_null(strstr(svg, "<title>n2</title>"));
	assert_non_null(strstr(svg, ">n1 (150.750 ms)</text>"));
	/* the x axis from 0, not from the summary's iteration */
	assert_non_null(strstr(svg, "text-anchor=\"middle\">0</text>"));
	assert_non_null(strstr(svg, "each point: one iteration"));
	free(svg);
	free(text);
	report_free(r);
}

/* Merged points weigh as many iterations as they cover. */
static void
test_series_weights(void **state)
{
	struct fixture *f = *state;
	FILE *fp = fopen(f->log, "w");
	struct report *r;
	char *text, *svg;

	assert_non_null(fp);
	event(fp, 2, "n1", 0, "series", "info", "e2e",
	      "{\"groups_per_point\":2,\"points\":[[1,1,100],[2,3,200],[4,4,\"x\"],[5,3,1]]}");
	fclose(fp);
	r = load(f->log);
	text = capture_text(r);
	/* 100 once, 200 twice: 200 (unweighted, it would be 150) */
	assert_line(text, "e2e time:      min 100.000 ms, median 200.000 ms, max 200.000 ms");
	assert_line(text, "iterations:    3");
	svg = capture_svg(r);
	assert_non_null(strstr(svg, "each point: the mean of up to 2 iterations"));
	free(svg);
	free(text);
	report_free(r);
}

/* An "account" at T0 + SEC: ITERS iterations ending at T0 + FIRST .. LAST s. */
static void
account(FILE *fp, int sec, const char *chain, int started, int first, int last, int iters,
        double median_ms, double max_ms)
{
	char d[400];
	double t0 = 1795217400;  /* 2026-11-20T23:30:00Z, event()'s 0 */

	snprintf(d, sizeof(d), "{\"iterations\":%d,\"median_ms\":%g,\"max_ms\":%g,"
	         "\"first_iteration_end\":%.3f,\"first_iteration_ms\":1000,"
	         "\"last_iteration_end\":%.3f,\"chain\":\"%s\",\"started\":%.3f}",
	         iters, median_ms, max_ms, t0 + first, t0 + last, chain, t0 + started);
	event(fp, sec, "n1", 0, "account", "info", "account", d);
}

/* A run that ended without a save is redone by the next; one that
 * succeeded is not. */
static void
test_chain_redone(void **state)
{
	struct fixture *f = *state;
	FILE *fp;
	struct report *r;
	char *text;

	for (int saved = 0; saved < 2; saved++) {
		fp = fopen(f->log, "w");
		assert_non_null(fp);
		account(fp, 10, "state:/s", 0, 2, 10, 10, 8000, 8000);
		event(fp, 10, "n1", 0, "job", "info", "x", saved ?
		      "{\"state\":\"succeeded\",\"exit_code\":0}" :
		      "{\"state\":\"error\",\"exit_code\":1}");
		account(fp, 30, "state:/s", 20, 22, 30, 10, 8000, 8000);
		event(fp, 30, "n1", 0, "job", "info", "x", "{\"state\":\"succeeded\",\"exit_code\":0}");
		fclose(fp);
		r = load(f->log);
		text = capture_text(r);
		if (saved)
			assert_null(strstr(text, "redone"));
		else
			assert_line(text, "               10 iterations redone");
		free(text);
		report_free(r);
	}
}

/* The runs of one job (its chain key) are joined; another job's are not. */
static void
test_chain(void **state)
{
	struct fixture *f = *state;
	FILE *fp = fopen(f->log, "w");
	struct report *r;
	cJSON *o, *c, *a;
	char *text;

	assert_non_null(fp);
	/* another job, earlier in the same log */
	account(fp, 0, "slurm:5", 0, 2, 5, 4, 4000, 4000);
	event(fp, 6, "n1", 0, "job", "info", "done", "{\"state\":\"succeeded\",\"exit_code\":0}");
	/* attempt 1: pre-check 2 s, start 4 s, iterations 14..34 (16 s at the
	 * median, 2 s waiting for n2), n2 fails at 36, checkpoint, job at 40 */
	event(fp, 10, "n1", 0, "verdict", "info", "go", "{\"verdict\":\"pass\"}");
	event(fp, 11, "n1", 0, "launch", "info", "starting", NULL);
	event(fp, 36, "n2", 1, "exit", "error", "training ended with status 1", "{\"exit_code\":1}");
	event(fp, 37, "n1", 0, "checkpoint", "warning", "a fault", NULL);
	event(fp, 39, "n1", 0, "exit", "info", "training ended with status 0", "{\"exit_code\":0}");
	account(fp, 40, "slurm:7", 8, 15, 34, 20, 16000, 18000);
	event(fp, 40, "n1", 0, "job", "warning", "stopped", "{\"state\":\"stopped\",\"exit_code\":81}");
	/* attempt 2, 20 s later: runs to the end */
	event(fp, 61, "n1", 0, "verdict", "info", "go", "{\"verdict\":\"pass\"}");
	event(fp, 79, "n1", 0, "exit", "info", "training ended with status 0", "{\"exit_code\":0}");
	account(fp, 80, "slurm:7", 60, 63, 78, 16, 16000, 16000);
	event(fp, 80, "n1", 0, "job", "info", "succeeded", "{\"state\":\"succeeded\",\"exit_code\":0}");
	fclose(fp);
	r = load(f->log);
	o = report_json(r);
	assert_non_null(o);
	c = cJSON_GetObjectItem(o, "chain");
	assert_string_equal(cJSON_GetObjectItem(c, "key")->valuestring, "slurm:7");
	a = cJSON_GetObjectItem(c, "attempts");
	assert_int_equal(cJSON_GetArraySize(a), 2);
	assert_float_equal(cJSON_GetObjectItem(c, "elapsed_s")->valuedouble, 72, 1e-6);
	assert_float_equal(cJSON_GetObjectItem(c, "productive_s")->valuedouble, 32, 1e-6);
	assert_float_equal(cJSON_GetObjectItem(c, "ettr")->valuedouble, 32.0 / 72, 1e-6);
	{
		const cJSON *s = cJSON_GetObjectItem(cJSON_GetArrayItem(a, 0), "split_s");

		assert_float_equal(cJSON_GetObjectItem(s, "precheck")->valuedouble, 2, 1e-6);
		assert_float_equal(cJSON_GetObjectItem(s, "start")->valuedouble, 4, 1e-6);
		assert_float_equal(cJSON_GetObjectItem(s, "straggler")->valuedouble, 2, 1e-6);
		assert_float_equal(cJSON_GetObjectItem(s, "other")->valuedouble, 2, 1e-6);
		assert_float_equal(cJSON_GetObjectItem(s, "detection")->valuedouble, 2, 1e-6);
		assert_float_equal(cJSON_GetObjectItem(s, "checkpoint")->valuedouble, 2, 1e-6);
		assert_float_equal(cJSON_GetObjectItem(s, "stop")->valuedouble, 2, 1e-6);
	}
	assert_float_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(a, 1), "gap_before_s")->valuedouble,
	                   20, 1e-6);
	text = capture_text(r);
	assert_line(text, "time:          2 attempts over 72.000 s: ETTR 44.4 % (productive 32.000 s)");
	assert_line(text, "  gap:         20.000 s");
	assert_null(strstr(text, "redone"));  /* the first saved */
	free(text);
	{
		size_t len = 0;
		FILE *m = open_memstream(&text, &len);

		assert_non_null(m);
		assert_int_equal(report_metrics(r, m), 0);
		fclose(m);
		assert_line(text, "vigil_chain_ettr_ratio 0.444444");
		assert_line(text, "vigil_chain_requeues_total 1");
		assert_line(text, "vigil_chain_time_seconds{cause=\"between_attempts\"} 20.000");
		assert_line(text, "vigil_attempt_time_seconds{attempt=\"1\",cause=\"detection\"} 2.000");
		free(text);
	}
	/* the timeline: a bar per attempt, the gap, the fault, the requeue */
	text = capture_svg(r);
	assert_non_null(strstr(text, "height=\"740\""));
	assert_int_equal(count(text, "class=\"tl-label\""), 2);
	assert_int_equal(count(text, "class=\"seg productive\""), 2);
	assert_int_equal(count(text, "class=\"seg between_attempts\""), 1);
	assert_int_equal(count(text, "class=\"fault\""), 1);
	assert_int_equal(count(text, "class=\"requeue\""), 1);
	assert_non_null(strstr(text, "ETTR 44.4 %"));
	free(text);
	cJSON_Delete(o);
	report_free(r);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_summary, setup, teardown),
		cmocka_unit_test_setup_teardown(test_json, setup, teardown),
		cmocka_unit_test_setup_teardown(test_plot, setup, teardown),
		cmocka_unit_test_setup_teardown(test_without_node_values, setup, teardown),
		cmocka_unit_test_setup_teardown(test_malformed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_runs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_torn, setup, teardown),
		cmocka_unit_test_setup_teardown(test_svg_escaping, setup, teardown),
		cmocka_unit_test_setup_teardown(test_command, setup, teardown),
		cmocka_unit_test_setup_teardown(test_series_plot, setup, teardown),
		cmocka_unit_test_setup_teardown(test_series_weights, setup, teardown),
		cmocka_unit_test_setup_teardown(test_chain, setup, teardown),
		cmocka_unit_test_setup_teardown(test_chain_redone, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
