/*
 * test_gather.c - consolidating node reports on the coordinator.
 */
#include "autoconf.h"

#include "../vigil_test.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cJSON.h>

#include "check/gather.h"

/* A node report with one result per (name, verdict, reason) triple. */
static void
make_report(struct check_report *r, int nslots, const char *models,
            const char *driver, const char *fail_check, const char *fail_reason)
{
	static const char *const names[] = { "slots", "memory", "storage", "limits", "nics" };

	memset(r, 0, sizeof(*r));
	r->n = 5;
	r->results = calloc(r->n, sizeof(*r->results));
	assert_non_null(r->results);
	for (size_t i = 0; i < r->n; i++) {
		struct check_result *res = &r->results[i];

		snprintf(res->name, sizeof(res->name), "%s", names[i]);
		res->details = cJSON_CreateObject();
		if (fail_check && strcmp(fail_check, names[i]) == 0) {
			res->verdict = VERDICT_FAIL;
			snprintf(res->reason, sizeof(res->reason), "%s", fail_reason);
		} else {
			res->verdict = VERDICT_PASS;
			snprintf(res->reason, sizeof(res->reason), "ok");
		}
	}
	r->facts.nslots = nslots;
	snprintf(r->facts.models, sizeof(r->facts.models), "%s", models);
	snprintf(r->facts.driver, sizeof(r->facts.driver), "%s", driver);
}

/* Send a node's report through the wire format, as the coordinator gets it. */
static void
add_node(struct gather *g, int rank, const char *name, int nslots,
         const char *models, const char *driver, const char *fail, const char *why)
{
	struct check_report r;
	char *payload;

	make_report(&r, nslots, models, driver, fail, why);
	payload = gather_payload(name, rank, &r, NULL);
	assert_non_null(payload);
	assert_int_equal(gather_add(g, rank, payload, 60), 0);
	free(payload);
	check_report_free(&r);
}

/* Render the text output into a string for assertions. */
static char *
render(const struct gather *g, bool verbose)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	gather_print(f, g, verbose);
	fclose(f);
	return buf;
}

static void
test_all_healthy(void **state)
{
	struct gather g;
	char *text;

	(void)state;
	assert_int_equal(gather_init(&g, 4), 0);
	for (int i = 0; i < 4; i++) {
		char name[16];

		snprintf(name, sizeof(name), "node%02d", i);
		add_node(&g, i, name, 8, "Tesla T4", "535.104.05", NULL, NULL);
	}
	gather_consistency(&g);
	assert_int_equal(gather_failed(&g), 0);
	text = render(&g, false);
	assert_string_equal(text,
	    "vigil: all 4 nodes healthy (8 slots each: Tesla T4; driver 535.104.05)\n");
	free(text);
	gather_free(&g);
}

static void
test_two_unhealthy(void **state)
{
	struct gather g;
	char *text;

	(void)state;
	assert_int_equal(gather_init(&g, 4), 0);
	add_node(&g, 0, "node00", 0, "", "", NULL, NULL);
	add_node(&g, 1, "node01", 0, "", "", "nics", "eth1 is down (operstate down)");
	add_node(&g, 2, "node02", 0, "", "", NULL, NULL);
	add_node(&g, 3, "node03", 0, "", "", "storage", "/scratch: 12 MB free, need 10240 MB");
	gather_consistency(&g);
	assert_int_equal(gather_failed(&g), 2);
	assert_int_equal(gather_node_verdict(&g.nodes[0]), VERDICT_PASS);
	assert_int_equal(gather_node_verdict(&g.nodes[1]), VERDICT_FAIL);
	text = render(&g, false);
	assert_string_equal(text,
	    "vigil: node01 (rank 1): nics: eth1 is down (operstate down)\n"
	    "vigil: node03 (rank 3): storage: /scratch: 12 MB free, need 10240 MB\n"
	    "vigil: 2 of 4 nodes unhealthy\n");
	free(text);
	gather_free(&g);
}

static void
test_consistency(void **state)
{
	struct gather g;
	char *text;

	(void)state;
	assert_int_equal(gather_init(&g, 4), 0);
	add_node(&g, 0, "n0", 8, "Tesla T4", "535.104.05", NULL, NULL);
	add_node(&g, 1, "n1", 7, "Tesla T4", "535.104.05", NULL, NULL);
	add_node(&g, 2, "n2", 8, "Tesla T4", "550.54.15", NULL, NULL);
	add_node(&g, 3, "n3", 8, "Tesla T4", "535.104.05", NULL, NULL);
	gather_consistency(&g);
	assert_int_equal(gather_failed(&g), 2);
	text = render(&g, false);
	assert_string_equal(text,
	    "vigil: n1 (rank 1): consistency: slot count \"7\" differs from \"8\" on 3 other nodes\n"
	    "vigil: n2 (rank 2): consistency: driver version \"550.54.15\" differs from \"535.104.05\" on 3 other nodes\n"
	    "vigil: 2 of 4 nodes unhealthy\n");
	free(text);
	gather_free(&g);
}

static void
test_consistency_tie_and_models(void **state)
{
	struct gather g;

	(void)state;
	/* 1:1 tie: the lowest rank's value is the reference */
	assert_int_equal(gather_init(&g, 2), 0);
	add_node(&g, 0, "a", 8, "A100-SXM4-80GB", "535", NULL, NULL);
	add_node(&g, 1, "b", 8, "A100-SXM4-40GB", "535", NULL, NULL);
	gather_consistency(&g);
	assert_int_equal(gather_node_verdict(&g.nodes[0]), VERDICT_PASS);
	assert_int_equal(gather_node_verdict(&g.nodes[1]), VERDICT_FAIL);
	assert_string_equal(g.nodes[1].report.results[5].name, "consistency");
	assert_non_null(strstr(g.nodes[1].report.results[5].reason, "A100-SXM4-40GB"));
	gather_free(&g);
}

static void
test_lost_and_malformed(void **state)
{
	struct gather g;
	char *text, *payload;
	struct check_report r;

	(void)state;
	assert_int_equal(gather_init(&g, 4), 0);
	add_node(&g, 0, "n0", 0, "", "", NULL, NULL);
	assert_int_equal(gather_add(&g, 1, NULL, 30), 0);
	assert_int_equal(gather_add(&g, 2, "{\"node\":\"n2\",\"rank\":2,\"report\":[1,2]}", 30), 0);
	make_report(&r, 0, "", "", NULL, NULL);
	payload = gather_payload("n3", 3, &r, "slots: discovery failed: Permission denied");
	assert_int_equal(gather_add(&g, 3, payload, 30), 0);
	free(payload);
	check_report_free(&r);
	gather_consistency(&g);
	assert_int_equal(gather_failed(&g), 3);
	text = render(&g, false);
	assert_string_equal(text,
	    "vigil: rank 1 (rank 1): no report within 30 s\n"
	    "vigil: n2 (rank 2): malformed report\n"
	    "vigil: n3 (rank 3): slots: discovery failed: Permission denied\n"
	    "vigil: 3 of 4 nodes unhealthy\n");
	free(text);
	assert_int_equal(gather_add(&g, 4, NULL, 1), -EINVAL);
	gather_free(&g);
}

static void
test_json_and_events(void **state)
{
	struct gather g;
	struct events *ev;
	char dir[] = "/tmp/vigil-gather-XXXXXX", path[64], line[4096];
	int kinds[4] = { 0 }, lines = 0;
	cJSON *j, *nodes, *last = NULL;
	FILE *f;

	(void)state;
	assert_int_equal(gather_init(&g, 3), 0);
	add_node(&g, 0, "n0", 2, "MLU370-X8", "", NULL, NULL);
	add_node(&g, 1, "n1", 2, "MLU370-X8", "", "slots", "slot 1 (0000:3b:00.0) is missing from the PCI bus");
	assert_int_equal(gather_add(&g, 2, NULL, 5), 0);
	gather_consistency(&g);

	j = gather_to_json(&g);
	assert_non_null(j);
	assert_string_equal(cJSON_GetObjectItem(j, "verdict")->valuestring, "fail");
	assert_int_equal(cJSON_GetObjectItem(j, "nodes_failed")->valueint, 2);
	nodes = cJSON_GetObjectItem(j, "nodes");
	assert_int_equal(cJSON_GetArraySize(nodes), 3);
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(nodes, 1), "verdict")->valuestring, "fail");
	assert_non_null(cJSON_GetObjectItem(cJSON_GetArrayItem(nodes, 1), "report"));
	assert_null(cJSON_GetObjectItem(cJSON_GetArrayItem(nodes, 2), "report"));
	cJSON_Delete(j);

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/ev", dir);
	assert_int_equal(events_open(path, &ev), 0);
	assert_int_equal(gather_write_events(&g, ev), 0);
	assert_int_equal(events_close(ev), 0);
	f = fopen(path, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		cJSON *e = cJSON_Parse(line);
		const char *kind;

		assert_non_null(e);
		kind = cJSON_GetObjectItem(e, "kind")->valuestring;
		kinds[0] += strcmp(kind, "check") == 0;
		kinds[1] += strcmp(kind, "node_lost") == 0;
		kinds[2] += strcmp(kind, "verdict") == 0;
		lines++;
		cJSON_Delete(last);
		last = e;
	}
	fclose(f);
	unlink(path);
	rmdir(dir);
	assert_int_equal(kinds[0], 10);  /* 5 checks on each reporting node */
	assert_int_equal(kinds[1], 1);
	assert_int_equal(kinds[2], 1);
	assert_int_equal(lines, 12);
	/* the verdict comes last and names the failed nodes */
	assert_string_equal(cJSON_GetObjectItem(last, "kind")->valuestring, "verdict");
	assert_string_equal(cJSON_GetObjectItem(last, "severity")->valuestring, "error");
	nodes = cJSON_GetObjectItem(cJSON_GetObjectItem(last, "details"), "failed_nodes");
	assert_int_equal(cJSON_GetArraySize(nodes), 2);
	assert_string_equal(cJSON_GetArrayItem(nodes, 0)->valuestring, "n1");
	assert_string_equal(cJSON_GetArrayItem(nodes, 1)->valuestring, "rank 2");
	cJSON_Delete(last);
	gather_free(&g);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_all_healthy),
		cmocka_unit_test(test_two_unhealthy),
		cmocka_unit_test(test_consistency),
		cmocka_unit_test(test_consistency_tie_and_models),
		cmocka_unit_test(test_lost_and_malformed),
		cmocka_unit_test(test_json_and_events),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
