/*
 * test_batch.c - batch files: one sub-task chosen by index or by the
 * Slurm job array, its command, algorithm and NAME-INDEX output.
 */
#include "autoconf.h"

#include "../vigil_test.h"
#include "../scratch.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "prep/batch.h"

struct fixture {
	char dir[128], file[200];
};

static int
setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f || make_scratch_dir(f->dir, sizeof(f->dir), "batch") < 0)
		return -1;
	snprintf(f->file, sizeof(f->file), "%s/sweep.json", f->dir);
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	assert_int_equal(system(cmd), 0);
	unsetenv("SLURM_ARRAY_TASK_ID");
	free(f);
	return 0;
}

static void
put(const struct fixture *f, const char *json)
{
	FILE *fp = fopen(f->file, "w");

	assert_non_null(fp);
	fputs(json, fp);
	assert_int_equal(fclose(fp), 0);
}

static const char two[] =
	"{\"output\": \"/shared/out\", \"tasks\": ["
	"{\"command\": [\"python3\", \"train.py\", \"--lr\", \"0.1\"], \"algorithm\": \"/algo/a\"},"
	"{\"command\": [\"python3\", \"train.py\", \"--lr\", \"0.01\"]}]}";

static void
test_tasks(void **state)
{
	struct fixture *f = *state;
	struct batch_task t;
	char err[300];

	put(f, two);
	assert_int_equal(batch_load(f->file, 0, NULL, &t, err, sizeof(err)), 0);
	assert_string_equal(t.name, "sweep");  /* the file's name */
	assert_int_equal(t.count, 2);
	assert_int_equal(t.argc, 4);
	assert_string_equal(t.argv[3], "0.1");
	assert_null(t.argv[4]);
	assert_string_equal(t.algorithm, "/algo/a");
	assert_string_equal(t.output, "/shared/out/sweep-0");
	batch_task_free(&t);
	/* the second, with the output given on the command line */
	assert_int_equal(batch_load(f->file, 1, "/mine", &t, err, sizeof(err)), 0);
	assert_string_equal(t.argv[3], "0.01");
	assert_null(t.algorithm);
	assert_string_equal(t.output, "/mine/sweep-1");
	batch_task_free(&t);
	/* a name of its own, the output only on the command line */
	put(f, "{\"name\": \"lr-sweep\", \"tasks\": [{\"command\": [\"true\"]}]}");
	assert_int_equal(batch_load(f->file, 0, "/mine", &t, err, sizeof(err)), 0);
	assert_string_equal(t.name, "lr-sweep");
	assert_string_equal(t.output, "/mine/lr-sweep-0");
	batch_task_free(&t);
	/* no output anywhere: refused, not a training writing to "/" */
	assert_int_equal(batch_load(f->file, 0, NULL, &t, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "sweep.json: no output directory for the sub-tasks: give "
	                            "\"output\" in the file or --output-dir DIR (sub-task N "
	                            "writes to OUTPUT/lr-sweep-N"));
	assert_null(t.argv);
	assert_null(t.output);
}

/* A broken file is named by line and column, as the configuration is. */
static void
test_syntax(void **state)
{
	struct fixture *f = *state;
	struct batch_task t;
	char err[300];

	put(f, "{\"output\": \"/o\", \"tasks\": [\n"
	       "  {\"command\": [\"true\"]},\n"
	       "  {\"command\": [\"true\"] \"algorithm\": \"/a\"}]}\n");
	assert_int_equal(batch_load(f->file, 0, NULL, &t, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "sweep.json: line 3, column 24: malformed JSON near "
	                            "\"\\\"algorithm\\\""));
	/* cut short */
	put(f, "{\"output\": \"/o\",\n \"tasks\": [{\"command\": [\"true\"]}\n");
	assert_int_equal(batch_load(f->file, 0, NULL, &t, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "sweep.json: line 2, column"));
	assert_non_null(strstr(err, "(end of input)"));
	/* a NUL in a string would cut it short: refused */
	put(f, "{\"output\": \"/o\", \"tasks\": [{\"command\": [\"tr\\u0000ue\"]}]}");
	assert_int_equal(batch_load(f->file, 0, NULL, &t, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "line 1, column 44: \\u0000 (a NUL character)"));
}

/* A key the file does not know is refused, with those it knows, in any task. */
static void
test_unknown_keys(void **state)
{
	struct fixture *f = *state;
	struct batch_task t;
	char err[300];

	put(f, "{\"outptu\": \"/o\", \"tasks\": [{\"command\": [\"true\"]}]}");
	assert_int_equal(batch_load(f->file, 0, "/mine", &t, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "/sweep.json: outptu: unknown key (valid: name, output, "
	                            "tasks)"));
	put(f, "{\"output\": \"/o\", \"tasks\": [{\"command\": [\"true\"]},"
	       "{\"command\": [\"true\"], \"algoritm\": \"/a\"}]}");
	/* sub-task 0 refuses sub-task 1's typo too: the array fails alike */
	for (int i = 0; i < 2; i++) {
		assert_int_equal(batch_load(f->file, i, NULL, &t, err, sizeof(err)), -EINVAL);
		assert_non_null(strstr(err, "sweep.json: tasks[1].algoritm: unknown key (valid: "
		                            "command, algorithm)"));
		assert_null(t.argv);
	}
	/* a key's control characters do not break the line */
	put(f, "{\"out\\nput\": \"/o\", \"tasks\": [{\"command\": [\"true\"]}]}");
	assert_int_equal(batch_load(f->file, 0, NULL, &t, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "out?put: unknown key"));
}

/* The algorithm directory, checked on the node before the launch. */
static void
test_algorithm(void **state)
{
	struct fixture *f = *state;
	struct batch_task t = { .index = 1 };
	char dir[300], err[400];

	assert_int_equal(batch_check_algorithm(&t, "b.json", "n1", err, sizeof(err)), 0);
	snprintf(dir, sizeof(dir), "%s/algo", f->dir);
	t.algorithm = dir;
	assert_int_equal(batch_check_algorithm(&t, "b.json", "n1", err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "b.json: sub-task 1's algorithm directory "));
	assert_non_null(strstr(err, "/algo on n1: No such file or directory (tasks[1].algorithm"));
	put(f, "{}");
	t.algorithm = f->file;
	assert_int_equal(batch_check_algorithm(&t, "b.json", "n1", err, sizeof(err)), -ENOTDIR);
	assert_non_null(strstr(err, "Not a directory"));
	assert_int_equal(mkdir(dir, 0755), 0);
	t.algorithm = dir;
	assert_int_equal(batch_check_algorithm(&t, "b.json", "n1", err, sizeof(err)), 0);
}

static void
test_refusals(void **state)
{
	static const struct { const char *json; int index; const char *msg; } bad[] = {
		{ "[1]", 0, "sweep.json: expected an object at the top level, got an array" },
		{ "{\"tasks\": []}", 0, "\"tasks\" must be an array of 1 to" },
		{ "{\"tasks\": [{\"command\": [\"a\"]}]}", 1, "sub-task 1 asked for, but the batch "
		  "has 1 (0 to 0)" },
		{ "{\"tasks\": [{\"command\": \"python3 train.py\"}]}", 0, "tasks[0].command must be "
		  "an array of strings" },
		{ "{\"tasks\": [{\"command\": [\"\"]}]}", 0, "tasks[0].command must be" },
		{ "{\"tasks\": [{\"command\": [\"a\", 3]}]}", 0, "tasks[0].command must be" },
		{ "{\"tasks\": [{\"command\": [\"a\"], \"algorithm\": \"rel\"}]}", 0,
		  "tasks[0].algorithm must be an absolute path" },
		{ "{\"name\": \"a/b\", \"tasks\": [{\"command\": [\"a\"]}]}", 0,
		  "the batch's name 'a/b' may hold letters" },
		{ "{\"output\": 3, \"tasks\": [{\"command\": [\"a\"]}]}", 0,
		  "\"output\" must be a directory's path" },
	};
	struct fixture *f = *state;
	struct batch_task t;
	char err[300];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		put(f, bad[i].json);
		assert_int_equal(batch_load(f->file, bad[i].index, NULL, &t, err, sizeof(err)), -EINVAL);
		if (!strstr(err, bad[i].msg))
			fail_msg("case %zu: [%s] lacks [%s]", i, err, bad[i].msg);
		assert_null(t.argv);
	}
	assert_int_equal(batch_load("/nonexistent/b.json", 0, NULL, &t, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "cannot read the batch file /nonexistent/b.json"));
	assert_int_equal(batch_load(f->dir, 0, NULL, &t, err, sizeof(err)), -EISDIR);
	assert_non_null(strstr(err, "not a regular file"));
	/* nested past cJSON's limit: said so, with the limit */
	{
		char deep[2 * 100000 + 1];

		memset(deep, '[', 100000);
		memset(deep + 100000, ']', 100000);
		deep[200000] = '\0';
		put(f, deep);
	}
	assert_int_equal(batch_load(f->file, 0, NULL, &t, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "nested too deeply (more than 1000 levels"));
}

static void
test_index(void **state)
{
	char err[300];
	int i = -1;

	(void)state;
	unsetenv("SLURM_ARRAY_TASK_ID");
	assert_int_equal(batch_index(-1, &i, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "--batch-index N, or run it as a Slurm job array"));
	assert_int_equal(batch_index(3, &i, err, sizeof(err)), 0);
	assert_int_equal(i, 3);
	setenv("SLURM_ARRAY_TASK_ID", "5", 1);
	assert_int_equal(batch_index(-1, &i, err, sizeof(err)), 0);
	assert_int_equal(i, 5);
	assert_int_equal(batch_index(2, &i, err, sizeof(err)), 0);  /* the option wins */
	assert_int_equal(i, 2);
	setenv("SLURM_ARRAY_TASK_ID", "5x", 1);
	assert_int_equal(batch_index(-1, &i, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "'5x'"));
}

static void
test_output_dir(void **state)
{
	struct fixture *f = *state;
	char out[300], link[300], err[300];
	struct stat st;

	snprintf(out, sizeof(out), "%s/a/b/sweep-1", f->dir);
	assert_int_equal(batch_make_output(out, err, sizeof(err)), 0);
	assert_int_equal(stat(out, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(batch_make_output(out, err, sizeof(err)), 0);  /* there already */
	snprintf(link, sizeof(link), "%s/a/b/sweep-2", f->dir);
	assert_int_equal(symlink(out, link), 0);
	assert_int_equal(batch_make_output(link, err, sizeof(err)), -ELOOP);
	assert_non_null(strstr(err, "/sweep-2 is a symbolic link"));
	/* a link on the way, and a directory others may write to */
	snprintf(link, sizeof(link), "%s/l", f->dir);
	assert_int_equal(symlink("a", link), 0);
	snprintf(out, sizeof(out), "%s/l/b/sweep-3", f->dir);
	assert_int_equal(batch_make_output(out, err, sizeof(err)), -ELOOP);
	assert_non_null(strstr(err, "/l is a symbolic link"));
	snprintf(out, sizeof(out), "%s/a", f->dir);
	assert_int_equal(chmod(out, 0777), 0);
	snprintf(out, sizeof(out), "%s/a/b/sweep-3", f->dir);
	assert_int_equal(batch_make_output(out, err, sizeof(err)), -EACCES);
	assert_non_null(strstr(err, "/a is writable by others (mode 0777, no sticky bit)"));
	assert_int_equal(stat(out, &st), -1);  /* nothing made */
	snprintf(out, sizeof(out), "%s/a", f->dir);
	assert_int_equal(chmod(out, 0755), 0);
	snprintf(out, sizeof(out), "%s/a/b/sweep-1", f->dir);
	assert_int_equal(chmod(out, 0777), 0);
	assert_int_equal(batch_make_output(out, err, sizeof(err)), -EACCES);
	assert_non_null(strstr(err, "/sweep-1 is writable by others (mode 0777)"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_tasks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_syntax, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unknown_keys, setup, teardown),
		cmocka_unit_test_setup_teardown(test_algorithm, setup, teardown),
		cmocka_unit_test(test_index),
		cmocka_unit_test_setup_teardown(test_output_dir, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
