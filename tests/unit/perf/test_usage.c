/*
 * test_usage.c - the coordinator's view of what the trainings and boards
 * use: the metrics it sets, the ranges over the job, and the line people
 * read.
 */
#include "autoconf.h"

#include "../vigil_test.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cJSON.h>

#include "lib/json.h"
#include "perf/metrics.h"
#include "../scratch.h"
#include "perf/usage.h"

static int
take(struct usage *u, struct metrics *m, int rank, const char *node, const char *json,
     double now)
{
	cJSON *v = cJSON_Parse(json);
	int rc;

	assert_non_null(v);
	rc = usage_take(u, m, rank, node, v, now);
	cJSON_Delete(v);
	return rc;
}

/* The range KEY of D: its ends, and where. */
static void
expect_range(const cJSON *d, const char *key, double min, const char *min_node, double max,
             const char *max_node)
{
	const cJSON *r = cJSON_GetObjectItemCaseSensitive(d, key);

	if (!r)
		fail_msg("no range %s", key);
	assert_true(fabs(json_num(r, "min", -1e300, 1e300, NAN) - min) < 1e-9);
	assert_true(fabs(json_num(r, "max", -1e300, 1e300, NAN) - max) < 1e-9);
	assert_string_equal(json_str(r, "min_node", ""), min_node);
	assert_string_equal(json_str(r, "max_node", ""), max_node);
}

/* CPU in cores from the rise between notes; memory and boards as sent. */
static void
test_ranges(void **state)
{
	struct usage *u = usage_new(3);
	cJSON *d;
	const cJSON *t;

	(void)state;
	assert_non_null(u);
	assert_false(usage_changed(u));
	assert_int_equal(take(u, NULL, 0, "n0", "{\"cpu_seconds\": 100, \"memory_bytes\": 1000}", 10), 0);
	assert_int_equal(take(u, NULL, 1, "n1", "{\"cpu_seconds\": 50, \"memory_bytes\": 4000, "
	                                        "\"boards\": [{\"index\": 0, \"utilization\": 0.25, "
	                                        "\"temperature_celsius\": 40}, {\"index\": 1, "
	                                        "\"utilization\": 0.75, \"temperature_celsius\": 71, "
	                                        "\"power_watts\": 300}]}", 10), 0);
	assert_true(usage_changed(u));
	/* 20 CPU seconds in 10 s: 2 cores; n1 4 in 10 s */
	assert_int_equal(take(u, NULL, 0, "n0", "{\"cpu_seconds\": 120, \"memory_bytes\": 3000}", 20), 0);
	assert_int_equal(take(u, NULL, 1, "n1", "{\"cpu_seconds\": 54}", 20), 0);
	/* too soon after the last to say much: no rate, the older sample kept */
	assert_int_equal(take(u, NULL, 1, "n1", "{\"cpu_seconds\": 54.2}", 20.1), 0);
	/* a counter that fell (a process of the training reaped): no rate */
	assert_int_equal(take(u, NULL, 0, "n0", "{\"cpu_seconds\": 5}", 30), 0);
	d = usage_summary(u);
	assert_non_null(d);
	assert_false(usage_changed(u));
	assert_int_equal(json_int(d, "notes", 0, 100, -1), 6);
	assert_int_equal(json_int(d, "nodes", 0, 100, -1), 2);
	expect_range(d, "training_cpu_cores", 0.4, "n1", 2, "n0");
	expect_range(d, "training_memory_bytes", 1000, "n0", 4000, "n1");
	expect_range(d, "board_utilization", 0.25, "n1", 0.75, "n1");
	expect_range(d, "board_temperature_celsius", 40, "n1", 71, "n1");
	expect_range(d, "board_power_watts", 300, "n1", 300, "n1");
	t = cJSON_GetObjectItemCaseSensitive(d, "board_temperature_celsius");
	assert_int_equal(json_int(t, "max_board", 0, 10, -1), 1);
	assert_int_equal(json_int(t, "min_board", 0, 10, -1), 0);
	/* a node's own values carry no board */
	assert_null(cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(d, "training_memory_bytes"), "max_board"));
	/* never reported */
	assert_null(cJSON_GetObjectItemCaseSensitive(d, "board_memory_used_bytes"));
	cJSON_Delete(d);
	usage_free(u);
}

/* What a confused node sends cannot bend the ranges; what is not an object is refused. */
static void
test_bad_values(void **state)
{
	struct usage *u = usage_new(2);
	cJSON *d;

	(void)state;
	assert_int_equal(take(u, NULL, 0, "n0", "{\"memory_bytes\": -5, \"boards\": "
	                                        "[{\"index\": 0, \"utilization\": 7}, "
	                                        "{\"index\": -1, \"utilization\": 0.5}, "
	                                        "{\"utilization\": 0.5}, 3, "
	                                        "{\"index\": 1, \"temperature_celsius\": \"hot\"}], "
	                                        "\"cpu_seconds\": \"x\"}", 1), 0);
	assert_int_equal(take(u, NULL, 2, "n2", "{}", 1), -EINVAL);
	assert_int_equal(take(u, NULL, -1, "n", "{}", 1), -EINVAL);
	assert_int_equal(take(u, NULL, 0, "n0", "[1]", 1), -EINVAL);
	d = usage_summary(u);
	assert_non_null(d);
	assert_int_equal(json_int(d, "notes", 0, 100, -1), 1);
	assert_int_equal(cJSON_GetArraySize(d), 2);  /* notes and nodes: no range */
	cJSON_Delete(d);
	usage_free(u);
	assert_null(usage_new(0));
}

/* The values go into the metrics file as they come. */
static void
test_metrics(void **state)
{
	char dir[128], path[192], *text;
	struct usage *u = usage_new(1);
	struct metrics *m = metrics_new();

	(void)state;
	assert_int_equal(make_scratch_dir(dir, sizeof(dir), "usage"), 0);
	snprintf(path, sizeof(path), "%s/vigil.prom", dir);
	assert_int_equal(take(u, m, 0, "gpu-01", "{\"cpu_seconds\": 12.5, \"memory_bytes\": 2048, "
	                                         "\"boards\": [{\"index\": 3, \"power_watts\": 88.5}]}",
	                      1), 0);
	assert_int_equal(metrics_write(m, path), 0);
	text = slurp(path, 65536, NULL);
	assert_non_null(strstr(text, "vigil_training_cpu_seconds_total{node=\"gpu-01\"} 12.5\n"));
	assert_non_null(strstr(text, "vigil_training_memory_bytes{node=\"gpu-01\"} 2048\n"));
	assert_non_null(strstr(text, "vigil_board_power_watts{node=\"gpu-01\",board=\"3\"} 88.5\n"));
	free(text);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(rmdir(dir), 0);
	metrics_free(m);
	usage_free(u);
}

/* The line in the event and in `vigil report`. */
static void
test_describe(void **state)
{
	char line[512];
	cJSON *d = cJSON_Parse(
		"{\"notes\": 9, \"nodes\": 3,"
		" \"training_cpu_cores\": {\"min\": 0.93, \"min_node\": \"a\", \"max\": 1.02, \"max_node\": \"b\"},"
		" \"training_memory_bytes\": {\"min\": 123731968, \"min_node\": \"a\", \"max\": 137363456, \"max_node\": \"b\"},"
		" \"board_utilization\": {\"min\": 0.07, \"min_node\": \"a\", \"min_board\": 1, \"max\": 0.93, \"max_node\": \"b\", \"max_board\": 0},"
		" \"board_temperature_celsius\": {\"min\": 40, \"min_node\": \"a\", \"min_board\": 1, \"max\": 61, \"max_node\": \"n2\", \"max_board\": 0}}");

	(void)state;
	assert_non_null(d);
	assert_string_equal(usage_describe(d, line, sizeof(line)),
	                    "training 0.93-1.02 CPU cores, 118 MiB-131 MiB; "
	                    "boards 7-93% busy, 40-61 C (hottest: n2 board 0)");
	/* cut short, marked so */
	assert_string_equal(usage_describe(d, line, 20), "training 0.93-1....");
	cJSON_Delete(d);
	d = cJSON_Parse("{\"notes\": 0, \"nodes\": 0}");
	assert_string_equal(usage_describe(d, line, sizeof(line)), "");
	cJSON_Delete(d);
	d = cJSON_Parse("{\"board_memory_used_bytes\": {\"min\": 1073741824, \"min_node\": \"a\","
	                " \"max\": 42949672960, \"max_node\": \"a\"}}");
	assert_string_equal(usage_describe(d, line, sizeof(line)), "boards 1.0 GiB-40 GiB");
	cJSON_Delete(d);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ranges),
		cmocka_unit_test(test_bad_values),
		cmocka_unit_test(test_metrics),
		cmocka_unit_test(test_describe),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
