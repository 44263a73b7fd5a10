/*
 * test_msg.c - the agents' messages: each kind through its encoding and
 * back, and texts that are not such a message refused whole; the
 * preparation's PREP (progress, done, go).
 */
#include "autoconf.h"

#include "../vigil_test.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "comm/msg.h"
#include "lib/json.h"

/* M encoded and decoded again as its kind, for a job of NRANKS. */
static struct msg
round_trip(const struct msg *m, int nranks)
{
	struct msg out;
	char *text = msg_encode(m);

	assert_non_null(text);
	assert_int_equal(msg_decode(m->kind, text, nranks, &out), 0);
	free(text);
	return out;
}

static void
test_result(void **state)
{
	const char *tail[] = { "Traceback (most recent call last):", "bad \xff byte" };
	struct msg m = { .kind = MSG_RESULT }, d;

	(void)state;
	m.u.result = (struct msg_result){ .node = "n1", .attempt = 2, .seconds = 12.5,
	                                  .exit_code = 137, .signal = 9, .ckpt = true,
	                                  .ckpt_confirmed = false, .ckpt_why = "no new file",
	                                  .tail = tail, .ntail = 2 };
	d = round_trip(&m, 4);
	assert_string_equal(d.u.result.node, "n1");
	assert_int_equal(d.u.result.attempt, 2);
	assert_int_equal(d.u.result.exit_code, 137);
	assert_int_equal(d.u.result.signal, 9);
	assert_true(d.u.result.ckpt);
	assert_false(d.u.result.ckpt_confirmed);
	assert_string_equal(d.u.result.ckpt_why, "no new file");
	assert_int_equal(d.u.result.ntail, 2);
	/* a byte that is not UTF-8 becomes U+FFFD on the wire */
	assert_string_equal(d.u.result.tail[1], "bad \xef\xbf\xbd byte");
	assert_int_equal(d.u.result.agent_signal, 0);
	assert_false(d.u.result.cancelled);
	msg_clear(&d);

	/* an agent stopped by the batch system's cancel */
	m.u.result = (struct msg_result){ .node = "n2", .exit_code = 143, .agent_signal = 15,
	                                  .cancelled = true };
	d = round_trip(&m, 4);
	assert_int_equal(d.u.result.agent_signal, 15);
	assert_true(d.u.result.cancelled);
	msg_clear(&d);
}

static void
test_plan_nudge(void **state)
{
	struct msg_node nodes[2] = { { "n0", "10.0.0.1", 8 }, { "n1", "10.0.0.2", 8 } };
	int members[2] = { 0, 1 };
	struct msg m = { .kind = MSG_PLAN }, d;

	(void)state;
	m.u.plan = (struct msg_plan){ .go = true, .master_addr = "10.0.0.1", .master_port = 29500,
	                              .job = "42", .finalize = true, .nudge = "10.0.0.1:40001",
	                              .nodes = nodes, .nnodes = 2, .members = members,
	                              .nmembers = 2 };
	d = round_trip(&m, 2);
	assert_string_equal(d.u.plan.nudge, "10.0.0.1:40001");
	assert_string_equal(d.u.plan.nodes[1].addr, "10.0.0.2");
	assert_int_equal(d.u.plan.nmembers, 2);
	msg_clear(&d);
	/* the header of a broadcast plan carries it too */
	m.u.plan.bcast = 4096;
	d = round_trip(&m, 2);
	assert_int_equal(d.u.plan.bcast, 4096);
	assert_string_equal(d.u.plan.nudge, "10.0.0.1:40001");
	msg_clear(&d);
	/* without nudges: none on the wire */
	m.u.plan.bcast = 0;
	m.u.plan.nudge = NULL;
	d = round_trip(&m, 2);
	assert_null(d.u.plan.nudge);
	msg_clear(&d);
}

/* The spares a successor needs: on the wire when there are any, checked as ranks. */
static void
test_plan_spares(void **state)
{
	struct msg_node nodes[3] = { { "n0", "10.0.0.1", 0 }, { "n1", "10.0.0.2", 0 },
	                             { "n2", "10.0.0.3", 0 } };
	int members[2] = { 0, 1 }, spares[1] = { 2 };
	struct msg m = { .kind = MSG_PLAN }, d;
	char *text;

	(void)state;
	m.u.plan = (struct msg_plan){ .go = true, .master_addr = "10.0.0.1", .master_port = 29500,
	                              .job = "42", .finalize = true, .nodes = nodes, .nnodes = 3,
	                              .members = members, .nmembers = 2, .spares = spares,
	                              .nspares = 1 };
	d = round_trip(&m, 3);
	assert_int_equal(d.u.plan.nspares, 1);
	assert_int_equal(d.u.plan.spares[0], 2);
	msg_clear(&d);
	/* none: not on the wire, and none decoded */
	m.u.plan.nspares = 0;
	text = msg_encode(&m);
	assert_non_null(text);
	assert_null(strstr(text, "spares"));
	free(text);
	d = round_trip(&m, 3);
	assert_int_equal(d.u.plan.nspares, 0);
	assert_null(d.u.plan.spares);
	msg_clear(&d);
	/* a spare that is no rank of the job */
	assert_int_equal(msg_decode(MSG_PLAN, "{\"go\":true,\"master_addr\":\"a\",\"master_port\":1,"
	                 "\"job\":\"j\",\"finalize\":true,\"nodes\":[{\"host\":\"n0\",\"addr\":\"a\","
	                 "\"slots\":0}],\"members\":[0],\"spares\":[1]}", 1, &d), -EINVAL);
	msg_clear(&d);
}

static void
test_command_members(void **state)
{
	int members[] = { 0, 2 };
	struct msg m = { .kind = MSG_COMMAND }, d;
	char *text;

	(void)state;
	m.u.command = (struct msg_command){ .command = MSG_CMD_RESTART, .attempt = 1,
	                                    .master_addr = "10.0.0.1", .master_port = 29500,
	                                    .members = members, .nmembers = 2 };
	d = round_trip(&m, 3);
	assert_int_equal(d.u.command.command, MSG_CMD_RESTART);
	assert_int_equal(d.u.command.nmembers, 2);
	assert_int_equal(d.u.command.members[1], 2);
	msg_clear(&d);
	/* a member beyond the job is refused */
	text = msg_encode(&m);
	assert_int_equal(msg_decode(MSG_COMMAND, text, 2, &d), -EINVAL);
	free(text);
}

/* A note with findings and what the node uses. */
static void
test_note_usage(void **state)
{
	struct finding f = { .what = "xid", .device = "0000:07:00.0",
	                         .verdict = VERDICT_FAIL, .evidence = "XID 79" };
	struct msg m = { .kind = MSG_NOTE }, d;
	cJSON *u = cJSON_Parse("{\"cpu_seconds\": 12.5, \"memory_bytes\": 1048576, "
	                       "\"boards\": [{\"index\": 0, \"utilization\": 0.5}]}");
	const cJSON *b;

	(void)state;
	assert_non_null(u);
	m.u.note = (struct msg_note){ .node = "n2", .findings = &f, .nfindings = 1, .usage = u };
	d = round_trip(&m, 4);
	assert_string_equal(d.u.note.node, "n2");
	assert_int_equal(d.u.note.nfindings, 1);
	assert_int_equal(d.u.note.findings[0].verdict, VERDICT_FAIL);
	assert_non_null(d.u.note.usage);
	assert_true(d.u.note.usage != u);   /* the decoded message's own */
	assert_true(json_num(d.u.note.usage, "cpu_seconds", 0, 1e9, -1) == 12.5);
	b = cJSON_GetArrayItem(cJSON_GetObjectItem(d.u.note.usage, "boards"), 0);
	assert_true(json_num(b, "utilization", 0, 1, -1) == 0.5);
	msg_clear(&d);
	assert_null(d.u.note.usage);
	cJSON_Delete(u);

	/* without usage: none decoded */
	m.u.note.usage = NULL;
	d = round_trip(&m, 4);
	assert_null(d.u.note.usage);
	msg_clear(&d);
}

static void
test_refused(void **state)
{
	static const struct {
		enum msg_kind kind;
		const char *text;
	} bad[] = {
		{ MSG_NOTE, "{\"node\": \"n1\", \"findings\": [], \"usage\": [1, 2]}" },
		{ MSG_NOTE, "{\"node\": \"n1\", \"findings\": [], \"usage\": 3}" },
		{ MSG_NOTE, "{\"node\": \"n1\"}" },
		{ MSG_NOTE, "{\"node\": \"n1\", \"findings\": [{\"what\": \"x\", \"device\": \"d\", "
		            "\"verdict\": \"maybe\", \"evidence\": \"e\"}]}" },
		{ MSG_RESULT, "{\"node\": \"n1\"}" },
		{ MSG_FINAL, "[]" },
		{ MSG_FINAL, "{\"exit_code\": 300, \"state\": \"error\", \"finalize\": true, "
		             "\"cycles\": 0}" },
		{ MSG_SUSPECT, "{\"node\": \"n1\", \"coordinator\": 9, \"silent\": 1}" },
		{ MSG_PLAN, "not json" },
	};
	struct msg d;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&d, 0x5a, sizeof(d));
		if (msg_decode(bad[i].kind, bad[i].text, 4, &d) != -EINVAL)
			fail_msg("accepted %s", bad[i].text);
	}
	assert_string_equal(msg_kind_name(MSG_NOTE), "note");
	assert_string_equal(msg_kind_name((enum msg_kind)99), "?");
}

static void
test_prep_round_trip(void **state)
{
	struct msg m = { .kind = MSG_PREP }, d;
	char *text;

	(void)state;
	m.u.prep.node = "n3";
	m.u.prep.step = "done";
	m.u.prep.ok = false;
	m.u.prep.error = "stage: ds: staging needs 2.0 GiB more";
	m.u.prep.copied_bytes = 1e9;
	m.u.prep.copy_bytes = 3e9;
	m.u.prep.data_files = 12;
	m.u.prep.seconds = 4.5;
	text = msg_encode(&m);
	assert_non_null(text);
	assert_int_equal(msg_decode(MSG_PREP, text, 4, &d), 0);
	assert_string_equal(d.u.prep.node, "n3");
	assert_string_equal(d.u.prep.step, "done");
	assert_false(d.u.prep.ok);
	assert_string_equal(d.u.prep.error, "stage: ds: staging needs 2.0 GiB more");
	assert_true(d.u.prep.copied_bytes == 1e9 && d.u.prep.copy_bytes == 3e9);
	assert_true(d.u.prep.data_files == 12 && d.u.prep.seconds == 4.5);
	assert_false(d.u.prep.go);
	msg_clear(&d);
	free(text);
	assert_string_equal(msg_kind_name(MSG_PREP), "prep");
}

static void
test_prep_go(void **state)
{
	struct msg m = { .kind = MSG_PREP }, d;
	char *text;

	(void)state;
	m.u.prep.go = true;
	text = msg_encode(&m);
	assert_string_equal(text, "{\"go\":true}");
	assert_int_equal(msg_decode(MSG_PREP, text, 2, &d), 0);
	assert_true(d.u.prep.go);
	assert_null(d.u.prep.node);
	msg_clear(&d);
	free(text);
}

static void
test_prep_refused(void **state)
{
	static const char *const bad[] = {
		"{}",
		"{\"go\": 1}",
		"{\"node\": \"n\", \"step\": \"later\", \"ok\": true, \"copied_bytes\": 0, "
		"\"copied_files\": 0, \"copy_bytes\": 0, \"copy_files\": 0, \"data_bytes\": 0, "
		"\"data_files\": 0, \"seconds\": 0}",
		"{\"node\": \"n\", \"step\": \"done\", \"ok\": true, \"copied_bytes\": -1, "
		"\"copied_files\": 0, \"copy_bytes\": 0, \"copy_files\": 0, \"data_bytes\": 0, "
		"\"data_files\": 0, \"seconds\": 0}",
		"{\"node\": \"n\", \"step\": \"done\", \"ok\": true}",
		"{\"node\": 3, \"step\": \"done\", \"ok\": true}",
	};
	struct msg d;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(msg_decode(MSG_PREP, bad[i], 2, &d), -EINVAL);
}

/* A note's findings, decoded into their fields: a string too long for
 * one is cut at a character boundary, and bytes that are not UTF-8 are
 * repaired, so the decoded note encodes to text that decodes the same. */
static void
test_note_cut(void **state)
{
	char text[1200], ev[400];
	struct msg d, again;
	char *first, *second;

	(void)state;
	/* 254 bytes of 'e', then a 2-byte character that would end at 256 */
	memset(ev, 'e', 254);
	snprintf(ev + 254, sizeof(ev) - 254, "\xc3\xa9tail");
	snprintf(text, sizeof(text), "{\"node\": \"n1\", \"findings\": [{\"what\": "
	         "\"storage\", \"device\": \"/d\xff\", \"verdict\": \"fail\", "
	         "\"evidence\": \"%s\"}]}", ev);
	assert_int_equal(msg_decode(MSG_NOTE, text, 2, &d), 0);
	assert_int_equal(d.u.note.nfindings, 1);
	assert_int_equal(strlen(d.u.note.findings[0].evidence), 254);
	assert_string_equal(d.u.note.findings[0].device, "/d\xef\xbf\xbd");
	first = msg_encode(&d);
	assert_non_null(first);
	assert_int_equal(msg_decode(MSG_NOTE, first, 2, &again), 0);
	second = msg_encode(&again);
	assert_non_null(second);
	assert_string_equal(first, second);
	free(first);
	free(second);
	msg_clear(&again);
	msg_clear(&d);
}

/* A heartbeat with the training's progress, one without, and a forensics note. */
static void
test_heartbeat_progress(void **state)
{
	struct msg m = { .kind = MSG_HEARTBEAT }, out;
	cJSON *f = cJSON_Parse("{\"processes\": [{\"pid\": 7, \"state\": \"T\"}]}");

	(void)state;
	out = round_trip(&m, 4);
	assert_false(out.u.heartbeat.progress);  /* {}: a bare heartbeat */
	msg_clear(&out);
	m.u.heartbeat = (struct msg_heartbeat){ .progress = true, .trains = true, .saving = true,
	                                        .lines = 40, .iters = 20, .quiet_s = -1,
	                                        .out_quiet_s = 2.5, .e2e_ms = 310 };
	out = round_trip(&m, 4);
	assert_true(out.u.heartbeat.progress && out.u.heartbeat.trains && out.u.heartbeat.saving);
	assert_true(out.u.heartbeat.iters == 20 && out.u.heartbeat.quiet_s == -1);
	assert_true(out.u.heartbeat.out_quiet_s == 2.5 && out.u.heartbeat.e2e_ms == 310);
	msg_clear(&out);
	/* half a progress is malformed */
	assert_int_equal(msg_decode(MSG_HEARTBEAT, "{\"lines\": 3}", 4, &out), -EINVAL);
	m = (struct msg){ .kind = MSG_NOTE };
	m.u.note.node = "n1";
	m.u.note.forensics = f;
	out = round_trip(&m, 4);
	assert_non_null(out.u.note.forensics);
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(
	                    out.u.note.forensics, "processes"), 0), "state")->valuestring, "T");
	msg_clear(&out);
	cJSON_Delete(f);
	m = (struct msg){ .kind = MSG_COMMAND };
	m.u.command.command = MSG_CMD_FORENSICS;
	out = round_trip(&m, 4);
	assert_int_equal(out.u.command.command, MSG_CMD_FORENSICS);
	msg_clear(&out);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_result),
		cmocka_unit_test(test_heartbeat_progress),
		cmocka_unit_test(test_plan_nudge),
		cmocka_unit_test(test_plan_spares),
		cmocka_unit_test(test_command_members),
		cmocka_unit_test(test_note_usage),
		cmocka_unit_test(test_note_cut),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_prep_round_trip),
		cmocka_unit_test(test_prep_go),
		cmocka_unit_test(test_prep_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
