/*
 * test_prepview.c - the coordinator's view of every node's preparation:
 * progress lines with the slowest node's time left, silent nodes given
 * up, the summary and the report's "staging" section.
 */
#include "autoconf.h"

#include "../vigil_test.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prep/prepview.h"

#define MiB 1048576.0

static struct msg_prep
progress(const char *node, const char *step, double copied, double total, double secs)
{
	struct msg_prep m = {
		.node = node, .step = step, .ok = true, .copied_bytes = copied,
		.copied_files = copied / MiB, .copy_bytes = total, .copy_files = total / MiB,
		.data_bytes = total, .data_files = total / MiB, .seconds = secs,
	};

	return m;
}

static void
test_line_and_eta(void **state)
{
	struct prepview *v = prepview_new(3, 100);
	struct msg_prep m;
	char line[600];

	(void)state;
	assert_non_null(v);
	/* nobody copies yet: nothing to say */
	assert_false(prepview_line(v, 101, line, sizeof(line)));
	m = progress("n1", "staging", 40 * MiB, 100 * MiB, 2);   /* 20 MiB/s: 3 s left */
	assert_int_equal(prepview_update(v, 0, &m, 102), 0);
	m = progress("n2", "staging", 10 * MiB, 100 * MiB, 2);   /* 5 MiB/s: 18 s left */
	assert_int_equal(prepview_update(v, 1, &m, 102), 0);
	m = progress("n3", "hooks", 0, 0, 0);
	assert_int_equal(prepview_update(v, 2, &m, 102), 0);
	assert_true(prepview_line(v, 102, line, sizeof(line)));
	assert_string_equal(line, "staging: 50 MiB of 200 MiB, 50 of 200 files (25%), "
	                    "25 MiB/s, about 18 s left; n1 40%, n2 10%, n3 waiting");
	assert_false(prepview_complete(v));
	/* done, one failed */
	m = progress("n1", "done", 100 * MiB, 100 * MiB, 5);
	assert_int_equal(prepview_update(v, 0, &m, 105), 1);
	m = progress("n2", "done", 30 * MiB, 100 * MiB, 6);
	m.ok = false;
	m.error = "stage: ds: staging needs 70.0 MiB more";
	assert_int_equal(prepview_update(v, 1, &m, 106), 1);
	assert_true(prepview_done(v, 1));
	assert_false(prepview_complete(v));
	assert_true(prepview_line(v, 106, line, sizeof(line)));
	assert_non_null(strstr(line, "; n1 done, n2 failed, n3 waiting"));
	prepview_free(v);
}

static void
test_silent_and_summary(void **state)
{
	struct prepview *v = prepview_new(2, 0);
	struct msg_prep m = progress("n1", "done", 3 * MiB, 3 * MiB, 1.5);
	char line[600];
	cJSON *r, *nodes;

	(void)state;
	assert_int_equal(prepview_update(v, 0, &m, 2), 1);
	/* rank 1 never says a word: given up after the silence */
	assert_int_equal(prepview_expire(v, 20, 30), 0);
	assert_false(prepview_complete(v));
	assert_int_equal(prepview_expire(v, 31, 30), 1);
	assert_true(prepview_silent(v, 1));
	assert_true(prepview_complete(v));
	assert_int_equal(prepview_expire(v, 40, 30), 0);  /* once */
	assert_true(prepview_summary(v, line, sizeof(line)));
	/* all of it copied: nothing was reused, and the line does not say so */
	assert_string_equal(line, "staged on 1 node in 1.5 s: 3.0 MiB of data on each node, "
	                    "3.0 MiB copied in all, 2.0 MiB/s");
	r = prepview_report(v);
	assert_non_null(r);
	nodes = cJSON_GetObjectItem(r, "nodes");
	assert_int_equal(cJSON_GetArraySize(nodes), 2);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetArrayItem(nodes, 0), "ok")));
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(nodes, 1), "error")->valuestring,
	                    "no word from the node");
	assert_true(cJSON_GetObjectItem(r, "seconds")->valuedouble == 1.5);
	assert_true(cJSON_GetObjectItem(r, "copied_bytes")->valuedouble == 3 * MiB);
	cJSON_Delete(r);
	prepview_free(v);
}

/* The summary says what was reused only when something was. */
static void
test_summary_reuse(void **state)
{
	struct prepview *v = prepview_new(2, 0);
	struct msg_prep m = progress("n1", "done", 1 * MiB, 1 * MiB, 1);
	char line[600];

	(void)state;
	m.data_bytes = 4 * MiB;  /* 3 MiB of its 4 were there already */
	assert_int_equal(prepview_update(v, 0, &m, 1), 1);
	m = progress("n2", "done", 4 * MiB, 4 * MiB, 2);
	assert_int_equal(prepview_update(v, 1, &m, 2), 1);
	assert_true(prepview_summary(v, line, sizeof(line)));
	assert_string_equal(line, "staged on 2 nodes in 2.0 s: 4.0 MiB of data on each node, "
	                    "5.0 MiB copied in all, 3.0 MiB reused, 2.5 MiB/s");
	prepview_free(v);
	/* every copy there already */
	v = prepview_new(1, 0);
	m = progress("n1", "done", 0, 0, 0.1);
	m.data_bytes = 4 * MiB;
	assert_int_equal(prepview_update(v, 0, &m, 1), 1);
	assert_true(prepview_summary(v, line, sizeof(line)));
	assert_string_equal(line, "staged on 1 node in 0.1 s: 4.0 MiB of data on each node, "
	                    "nothing copied (every copy reused), 0 B/s");
	prepview_free(v);
}

/*
 * One large file, then many small ones: 97% of the bytes are copied in
 * 10 s, and the 10,000 small files left take 6 s more at 0.6 ms each.
 * The time left counts them, at the cost the copy so far taught.
 */
static void
test_eta_small_files(void **state)
{
	struct prepview *v = prepview_new(1, 0);
	double total = 1000 * MiB, files = 10001, b = 0, f = 0, t = 0;
	struct msg_prep m;
	char line[600], *left;
	double s;

	(void)state;
	/* the large file, 970 MiB in 10 s (reported every 0.5 s, counted as a file at its end) */
	for (int i = 1; i <= 20; i++) {
		b = 970 * MiB * i / 20;
		f = i == 20 ? 1 : 0;
		t = 0.5 * i;
		m = progress("n1", "staging", b, total, t);
		m.copied_files = f;
		m.copy_files = files;
		assert_int_equal(prepview_update(v, 0, &m, t), 0);
	}
	/* two intervals of small files: 833 files of 3 KiB each 0.5 s */
	for (int i = 1; i <= 2; i++) {
		b += 833 * 3072.0;
		f += 833;
		t += 0.5;
		m = progress("n1", "staging", b, total, t);
		m.copied_files = f;
		m.copy_files = files;
		assert_int_equal(prepview_update(v, 0, &m, t), 0);
	}
	assert_true(prepview_line(v, t, line, sizeof(line)));
	left = strstr(line, "about ");
	assert_non_null(left);
	s = atof(left + 6);
	/* 8,334 files at ~0.585 ms and 25 MiB at ~97 MiB/s: ~5.1 s (bytes alone: 0.3 s) */
	assert_true(s >= 4.5 && s <= 5.5);
	prepview_free(v);
}

/* Hooks alone (nothing staged): no staging section, no summary. */
static void
test_nothing_staged(void **state)
{
	struct prepview *v = prepview_new(1, 0);
	struct msg_prep m = { .node = "n1", .step = "done", .ok = true };
	char line[200];

	(void)state;
	assert_int_equal(prepview_update(v, 0, &m, 1), 1);
	assert_true(prepview_complete(v));
	assert_false(prepview_summary(v, line, sizeof(line)));
	assert_null(prepview_report(v));
	prepview_free(v);
	assert_null(prepview_new(0, 0));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_line_and_eta),
		cmocka_unit_test(test_silent_and_summary),
		cmocka_unit_test(test_summary_reuse),
		cmocka_unit_test(test_eta_small_files),
		cmocka_unit_test(test_nothing_staged),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
