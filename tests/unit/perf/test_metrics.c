/*
 * test_metrics.c - the Prometheus text file.
 */
#include "autoconf.h"

#include "../vigil_test.h"
#include "../scratch.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cJSON.h>

#include "perf/metrics.h"

/* Room for the metrics file as read back (slurp()). */
#define TEXT_SIZE 65536

struct fixture {
	char dir[64];
	char path[128];
	struct metrics *m;
};

static int
setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	if (make_scratch_dir(f->dir, sizeof(f->dir), "metrics") < 0)
		return -1;
	snprintf(f->path, sizeof(f->path), "%s/vigil.prom", f->dir);
	f->m = metrics_new();
	if (!f->m)
		return -1;
	*state = f;
	return 0;
}

/* Remove every file the test left in the directory, then the directory. */
static int
teardown(void **state)
{
	struct fixture *f = *state;
	DIR *d = opendir(f->dir);
	struct dirent *e;

	while (d && (e = readdir(d))) {
		char p[512];

		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(p, sizeof(p), "%s/%s", f->dir, e->d_name);
		if (unlink(p) < 0)
			rmdir(p);
	}
	if (d)
		closedir(d);
	rmdir(f->dir);
	metrics_free(f->m);
	free(f);
	return 0;
}

/* Names in DIR other than . and .., space-separated, sorted by readdir. */
static int
count_entries(const char *dir, char *names, size_t len)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	names[0] = '\0';
	while ((e = readdir(d))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		n++;
		strncat(names, e->d_name, len - strlen(names) - 1);
		strncat(names, " ", len - strlen(names) - 1);
	}
	closedir(d);
	return n;
}

static void
fill(struct metrics *m)
{
	struct metrics_stats hw = { 80.25, 90.5, 101 };
	struct metrics_stats e2e = { 100, 110.125, 150.5 };
	struct metrics_stats r = { 0.5, 0.8125, 0.9 };

	assert_int_equal(metrics_set_state(m, "running"), 0);
	metrics_set_iterations(m, 1234);
	metrics_set_account(m, 130.5, 4.25);
	metrics_set_iteration(m, &hw, &e2e, &r);
	assert_int_equal(metrics_set_node_e2e(m, "n1", 100), 0);
	assert_int_equal(metrics_set_node_e2e(m, "n2", 150.5), 0);
	assert_int_equal(metrics_set_node_e2e(m, "n1", 101.75), 0);  /* updates n1 in place */
	assert_int_equal(metrics_add_alert(m, "straggler"), 0);
	assert_int_equal(metrics_add_alert(m, "straggler"), 0);
	assert_int_equal(metrics_add_alert(m, "ratio"), 0);
	metrics_set_nodes(m, 3, 1);
}

static const char expected_full[] =
"# HELP vigil_job_state State of the job: 1 for the current state, 0 for the others.\n"
"# TYPE vigil_job_state gauge\n"
"vigil_job_state{state=\"running\"} 1\n"
"vigil_job_state{state=\"succeeded\"} 0\n"
"vigil_job_state{state=\"error\"} 0\n"
"vigil_job_state{state=\"stopped\"} 0\n"
"vigil_job_state{state=\"expired\"} 0\n"
"# HELP vigil_iterations_total Training iterations complete on every node.\n"
"# TYPE vigil_iterations_total counter\n"
"vigil_iterations_total 1234\n"
"# HELP vigil_iteration_time_seconds_total Iteration time of this attempt: at the nodes' median pace (productive), and the slowest node's excess over it (straggler).\n"
"# TYPE vigil_iteration_time_seconds_total counter\n"
"vigil_iteration_time_seconds_total{part=\"productive\"} 130.5\n"
"vigil_iteration_time_seconds_total{part=\"straggler\"} 4.25\n"
"# HELP vigil_iteration_e2e_seconds End-to-end time of the last iteration across nodes, in seconds.\n"
"# TYPE vigil_iteration_e2e_seconds gauge\n"
"vigil_iteration_e2e_seconds{stat=\"min\"} 0.1\n"
"vigil_iteration_e2e_seconds{stat=\"mean\"} 0.110125\n"
"vigil_iteration_e2e_seconds{stat=\"max\"} 0.1505\n"
"# HELP vigil_iteration_hw_seconds Hardware time of the last iteration across nodes, in seconds.\n"
"# TYPE vigil_iteration_hw_seconds gauge\n"
"vigil_iteration_hw_seconds{stat=\"min\"} 0.08025\n"
"vigil_iteration_hw_seconds{stat=\"mean\"} 0.0905\n"
"vigil_iteration_hw_seconds{stat=\"max\"} 0.101\n"
"# HELP vigil_iteration_hw_e2e_ratio Hardware time over end-to-end time of the last iteration across nodes.\n"
"# TYPE vigil_iteration_hw_e2e_ratio gauge\n"
"vigil_iteration_hw_e2e_ratio{stat=\"min\"} 0.5\n"
"vigil_iteration_hw_e2e_ratio{stat=\"mean\"} 0.8125\n"
"vigil_iteration_hw_e2e_ratio{stat=\"max\"} 0.9\n"
"# HELP vigil_node_e2e_seconds End-to-end time of the last iteration on each node, in seconds.\n"
"# TYPE vigil_node_e2e_seconds gauge\n"
"vigil_node_e2e_seconds{node=\"n1\"} 0.10175\n"
"vigil_node_e2e_seconds{node=\"n2\"} 0.1505\n"
"# HELP vigil_alerts_total Performance alerts raised, by kind.\n"
"# TYPE vigil_alerts_total counter\n"
"vigil_alerts_total{kind=\"ratio\"} 1\n"
"vigil_alerts_total{kind=\"straggler\"} 2\n"
"# HELP vigil_nodes Nodes of the job still reporting (up) and lost.\n"
"# TYPE vigil_nodes gauge\n"
"vigil_nodes{state=\"up\"} 3\n"
"vigil_nodes{state=\"lost\"} 1\n";

static void
test_known_state(void **state)
{
	struct fixture *f = *state;
	char *text;

	fill(f->m);
	assert_int_equal(metrics_write(f->m, f->path), 0);
	text = slurp(f->path, TEXT_SIZE, NULL);
	assert_string_equal(text, expected_full);
	free(text);
}

/* Before anything is known: states all 0, counters 0, no timing families. */
static void
test_fresh(void **state)
{
	struct fixture *f = *state;
	char *text;

	assert_int_equal(metrics_write(f->m, f->path), 0);
	text = slurp(f->path, TEXT_SIZE, NULL);
	assert_non_null(strstr(text, "vigil_job_state{state=\"running\"} 0\n"));
	assert_non_null(strstr(text, "vigil_iterations_total 0\n"));
	assert_non_null(strstr(text, "vigil_iteration_time_seconds_total{part=\"straggler\"} 0\n"));
	assert_non_null(strstr(text, "vigil_alerts_total{kind=\"ratio\"} 0\n"));
	assert_non_null(strstr(text, "vigil_alerts_total{kind=\"straggler\"} 0\n"));
	assert_non_null(strstr(text, "vigil_nodes{state=\"up\"} 0\n"));
	assert_null(strstr(text, "vigil_iteration_e2e_seconds"));
	assert_null(strstr(text, "vigil_node_e2e_seconds"));
	assert_null(strstr(text, "} 1\n"));
	free(text);
}


/* Hot spares: absent without them; waiting and used, then the recovery's time once known. */
static void
test_spares(void **state)
{
	struct fixture *f = *state;
	char *text;

	assert_int_equal(metrics_write(f->m, f->path), 0);
	text = slurp(f->path, TEXT_SIZE, NULL);
	assert_null(strstr(text, "vigil_spares"));
	free(text);
	metrics_set_spares(f->m, 1, 0, NAN);
	assert_int_equal(metrics_write(f->m, f->path), 0);
	text = slurp(f->path, TEXT_SIZE, NULL);
	assert_non_null(strstr(text, "# TYPE vigil_spares gauge\nvigil_spares{state=\"waiting\"} 1\n"
	                        "vigil_spares{state=\"used\"} 0\n"));
	assert_null(strstr(text, "vigil_recovery_seconds"));
	free(text);
	metrics_set_spares(f->m, 0, 1, 7.5);
	assert_int_equal(metrics_write(f->m, f->path), 0);
	text = slurp(f->path, TEXT_SIZE, NULL);
	assert_non_null(strstr(text, "vigil_spares{state=\"used\"} 1\n"));
	assert_non_null(strstr(text, "# TYPE vigil_recovery_seconds gauge\nvigil_recovery_seconds 7.5\n"));
	free(text);
}

static void
test_state_names(void **state)
{
	struct fixture *f = *state;
	char *text;

	assert_int_equal(metrics_set_state(f->m, "expired"), 0);
	assert_int_equal(metrics_set_state(f->m, "finished"), -EINVAL);  /* unchanged */
	assert_int_equal(metrics_write(f->m, f->path), 0);
	text = slurp(f->path, TEXT_SIZE, NULL);
	assert_non_null(strstr(text, "vigil_job_state{state=\"expired\"} 1\n"));
	assert_non_null(strstr(text, "vigil_job_state{state=\"running\"} 0\n"));
	free(text);
}

static void
test_label_escaping(void **state)
{
	struct fixture *f = *state;
	char *text;

	assert_int_equal(metrics_set_node_e2e(f->m, "a\"b\\c\nd", 1.5), 0);
	assert_int_equal(metrics_add_alert(f->m, "new kind"), 0);
	assert_int_equal(metrics_write(f->m, f->path), 0);
	text = slurp(f->path, TEXT_SIZE, NULL);
	assert_non_null(strstr(text, "vigil_node_e2e_seconds{node=\"a\\\"b\\\\c\\nd\"} 0.0015\n"));
	assert_non_null(strstr(text, "vigil_alerts_total{kind=\"new kind\"} 1\n"));
	free(text);
}

/* Values the text format spells out, and doubles that need every digit. */
static void
test_values(void **state)
{
	struct fixture *f = *state;
	char *text;

	assert_int_equal(metrics_set_node_e2e(f->m, "inf", INFINITY), 0);
	assert_int_equal(metrics_set_node_e2e(f->m, "nan", NAN), 0);
	/* milliseconds in, seconds out */
	assert_int_equal(metrics_set_node_e2e(f->m, "tenth", 100), 0);
	assert_int_equal(metrics_set_node_e2e(f->m, "third", 1000.0 / 3), 0);
	assert_int_equal(metrics_write(f->m, f->path), 0);
	text = slurp(f->path, TEXT_SIZE, NULL);
	assert_non_null(strstr(text, "{node=\"inf\"} +Inf\n"));
	assert_non_null(strstr(text, "{node=\"nan\"} NaN\n"));
	assert_non_null(strstr(text, "{node=\"tenth\"} 0.1\n"));
	assert_non_null(strstr(text, "{node=\"third\"} 0.33333333333333331\n"));
	free(text);
}

/*
 * The file is replaced, never rewritten in place: a reader holding the old
 * file still reads it whole, the name points to a new inode, and no
 * temporary file is left next to it.
 */
static void
test_atomic_replace(void **state)
{
	struct fixture *f = *state;
	struct stat st1, st2;
	char names[512], old[65536];
	ssize_t n;
	int fd;

	assert_int_equal(metrics_write(f->m, f->path), 0);
	assert_int_equal(stat(f->path, &st1), 0);
	assert_int_equal(st1.st_mode & 07777, 0644);
	fd = open(f->path, O_RDONLY);
	assert_true(fd >= 0);

	fill(f->m);
	assert_int_equal(metrics_write(f->m, f->path), 0);
	assert_int_equal(stat(f->path, &st2), 0);
	assert_true(st1.st_ino != st2.st_ino);
	assert_int_equal(st2.st_mode & 07777, 0644);

	/* the reader's file is the first version, complete */
	n = read(fd, old, sizeof(old) - 1);
	assert_true(n > 0);
	old[n] = '\0';
	close(fd);
	assert_non_null(strstr(old, "vigil_iterations_total 0\n"));
	assert_non_null(strstr(old, "vigil_nodes{state=\"lost\"} 0\n"));
	assert_null(strstr(old, "vigil_node_e2e_seconds"));

	assert_int_equal(count_entries(f->dir, names, sizeof(names)), 1);
	assert_string_equal(names, "vigil.prom ");
}

static void
test_relative_path(void **state)
{
	struct fixture *f = *state;
	char cwd[4096], names[512];

	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir(f->dir), 0);
	assert_int_equal(metrics_write(f->m, "rel.prom"), 0);
	assert_int_equal(chdir(cwd), 0);
	assert_int_equal(count_entries(f->dir, names, sizeof(names)), 1);
	assert_string_equal(names, "rel.prom ");
}

static void
test_errors(void **state)
{
	struct fixture *f = *state;
	char path[256], names[512];
	FILE *fp;

	/* missing directory */
	snprintf(path, sizeof(path), "%s/absent/vigil.prom", f->dir);
	assert_int_equal(metrics_write(f->m, path), -ENOENT);

	/* a "directory" that is a file */
	snprintf(path, sizeof(path), "%s/file", f->dir);
	fp = fopen(path, "w");
	assert_non_null(fp);
	fclose(fp);
	snprintf(path, sizeof(path), "%s/file/vigil.prom", f->dir);
	assert_int_equal(metrics_write(f->m, path), -ENOTDIR);

	/* the name is taken by a directory: rename fails, the temporary
	 * file is removed */
	snprintf(path, sizeof(path), "%s/taken", f->dir);
	assert_int_equal(mkdir(path, 0755), 0);
	assert_int_equal(metrics_write(f->m, path), -EISDIR);
	assert_int_equal(count_entries(f->dir, names, sizeof(names)), 2);

	/* a directory we may not write to (root may write anywhere) */
	if (geteuid() != 0) {
		snprintf(path, sizeof(path), "%s/ro", f->dir);
		assert_int_equal(mkdir(path, 0555), 0);
		snprintf(path, sizeof(path), "%s/ro/vigil.prom", f->dir);
		assert_int_equal(metrics_write(f->m, path), -EACCES);
	}
}

/* Boards and the training's use: base units, NaN left out, nodes in the
 * order first named (n2 by its board), a node's boards in the order set. */
static void
test_boards(void **state)
{
	struct fixture *f = *state;
	struct metrics_board b;
	char *text;

	metrics_board_init(&b);
	assert_true(isnan(b.power_watts));
	b.utilization = 0.93;
	b.memory_used_bytes = 42949672960.0;
	b.memory_total_bytes = 85899345920.0;
	b.temperature_celsius = 61;
	b.power_watts = 612.345;
	assert_int_equal(metrics_set_board(f->m, "n2", 1, &b), 0);
	b.utilization = 0.5;
	b.power_watts = NAN;  /* this board's library gives no power */
	assert_int_equal(metrics_set_board(f->m, "n1", 0, &b), 0);
	b.utilization = 0.25;
	b.power_watts = 612.345;
	assert_int_equal(metrics_set_board(f->m, "n2", 1, &b), 0);  /* in place */
	assert_int_equal(metrics_set_board(f->m, "n1", -1, &b), -EINVAL);
	assert_int_equal(metrics_set_training_usage(f->m, "n1", 1234.5, 3221225472.0), 0);
	assert_int_equal(metrics_set_training_usage(f->m, "n2", NAN, 1048576), 0);
	assert_int_equal(metrics_set_training_usage(f->m, "n1", 1240, 3221225472.0), 0);
	assert_int_equal(metrics_write(f->m, f->path), 0);
	text = slurp(f->path, TEXT_SIZE, NULL);
	assert_non_null(strstr(text,
		"# HELP vigil_board_utilization_ratio Fraction of the vendor library's last sample period the board was busy.\n"
		"# TYPE vigil_board_utilization_ratio gauge\n"
		"vigil_board_utilization_ratio{node=\"n2\",board=\"1\"} 0.25\n"
		"vigil_board_utilization_ratio{node=\"n1\",board=\"0\"} 0.5\n"
		"# HELP vigil_board_memory_used_bytes Board memory in use, in bytes.\n"
		"# TYPE vigil_board_memory_used_bytes gauge\n"
		"vigil_board_memory_used_bytes{node=\"n2\",board=\"1\"} 42949672960\n"));
	assert_non_null(strstr(text,
		"# TYPE vigil_board_power_watts gauge\n"
		"vigil_board_power_watts{node=\"n2\",board=\"1\"} 612.345\n"
		"# HELP vigil_training_cpu_seconds_total "));
	assert_null(strstr(text, "vigil_board_power_watts{node=\"n1\""));
	assert_non_null(strstr(text,
		"# TYPE vigil_training_cpu_seconds_total counter\n"
		"vigil_training_cpu_seconds_total{node=\"n1\"} 1240\n"
		"# HELP vigil_training_memory_bytes Resident memory of the training's processes, in bytes.\n"
		"# TYPE vigil_training_memory_bytes gauge\n"
		"vigil_training_memory_bytes{node=\"n2\"} 1048576\n"
		"vigil_training_memory_bytes{node=\"n1\"} 3221225472\n"));
	assert_null(strstr(text, "nan"));
	assert_null(strstr(text, "NaN"));
	free(text);
}

/* A node's usage note, as another agent sent it: bad entries skipped. */
static void
test_boards_json(void **state)
{
	struct fixture *f = *state;
	cJSON *u = cJSON_Parse("[{\"vendor\": \"nvml\", \"index\": 3, \"utilization\": 0.75,"
	                       "  \"memory_used_bytes\": 1024, \"power_watts\": 300.5},"
	                       " {\"index\": -1, \"utilization\": 0.5},"
	                       " {\"index\": 4, \"utilization\": 7, \"temperature_celsius\": \"hot\"},"
	                       " {\"utilization\": 0.5}, 17]");
	char *text;

	assert_non_null(u);
	assert_int_equal(metrics_set_boards_json(f->m, "n1", u), 2);
	assert_int_equal(metrics_set_boards_json(f->m, "n1", cJSON_GetArrayItem(u, 0)), -EINVAL);
	cJSON_Delete(u);
	assert_int_equal(metrics_write(f->m, f->path), 0);
	text = slurp(f->path, TEXT_SIZE, NULL);
	assert_non_null(strstr(text, "vigil_board_utilization_ratio{node=\"n1\",board=\"3\"} 0.75\n"
	                             "# HELP"));
	assert_non_null(strstr(text, "vigil_board_memory_used_bytes{node=\"n1\",board=\"3\"} 1024\n"));
	assert_non_null(strstr(text, "vigil_board_power_watts{node=\"n1\",board=\"3\"} 300.5\n"));
	/* Board 4 is known, but none of its values is valid. */
	assert_null(strstr(text, "board=\"4\""));
	free(text);
}

/* No board set: no board family, not even its HELP line. */
static void
test_boards_absent(void **state)
{
	struct fixture *f = *state;
	struct metrics_board b;
	char *text;

	metrics_board_init(&b);
	assert_int_equal(metrics_set_board(f->m, "n1", 0, &b), 0);  /* nothing known */
	assert_int_equal(metrics_write(f->m, f->path), 0);
	text = slurp(f->path, TEXT_SIZE, NULL);
	assert_null(strstr(text, "vigil_board_"));
	assert_null(strstr(text, "vigil_training_"));
	free(text);
}

/* Thousands of nodes: each keeps one sample per family, updated in place,
 * in the order first named (the index grows under them). */
static void
test_many_nodes(void **state)
{
	struct fixture *f = *state;
	char *text, name[32], want[96];
	size_t count = 0;

	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < 3000; i++) {
			snprintf(name, sizeof(name), "node%04d", i);
			assert_int_equal(metrics_set_node_e2e(f->m, name, 1000.0 * (i + pass)), 0);
			if (i % 2 == 0)
				assert_int_equal(metrics_set_training_usage(f->m, name, i, NAN), 0);
		}
	assert_int_equal(metrics_write(f->m, f->path), 0);
	text = slurp(f->path, 1 << 20, NULL);
	for (const char *p = text; (p = strstr(p, "\nvigil_node_e2e_seconds{")); p++)
		count++;
	assert_int_equal(count, 3000);
	assert_non_null(strstr(text, "vigil_node_e2e_seconds{node=\"node0000\"} 1\n"
	                             "vigil_node_e2e_seconds{node=\"node0001\"} 2\n"));
	snprintf(want, sizeof(want), "vigil_node_e2e_seconds{node=\"node2999\"} 3000\n");
	assert_non_null(strstr(text, want));
	count = 0;
	for (const char *p = text; (p = strstr(p, "\nvigil_training_cpu_seconds_total{")); p++)
		count++;
	assert_int_equal(count, 1500);
	assert_null(strstr(text, "vigil_training_memory_bytes"));
	free(text);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_known_state, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fresh, setup, teardown),
		cmocka_unit_test_setup_teardown(test_state_names, setup, teardown),
		cmocka_unit_test_setup_teardown(test_spares, setup, teardown),
		cmocka_unit_test_setup_teardown(test_label_escaping, setup, teardown),
		cmocka_unit_test_setup_teardown(test_values, setup, teardown),
		cmocka_unit_test_setup_teardown(test_atomic_replace, setup, teardown),
		cmocka_unit_test_setup_teardown(test_relative_path, setup, teardown),
		cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_boards, setup, teardown),
		cmocka_unit_test_setup_teardown(test_boards_absent, setup, teardown),
		cmocka_unit_test_setup_teardown(test_boards_json, setup, teardown),
		cmocka_unit_test_setup_teardown(test_many_nodes, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
