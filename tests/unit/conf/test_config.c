/*
 * test_config.c - defaults, the JSON file, its error messages, overlays.
 */
#include "autoconf.h"

#include "../vigil_test.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf/config.h"

/* Every key, each with a value other than its default. */
static const char full_json[] =
	"{\n"
	"  \"sysfs_root\": \"/srv/fake-root\",\n"
	"  \"check\": {\n"
	"    \"timeout\": 2.5,\n"
	"    \"gather_timeout\": 90,\n"
	"    \"slots\": {\"expected\": 8, \"pcie_degraded\": \"fail\",\n"
	"              \"aer_correctable_max\": 100, \"driver_required\": false},\n"
	"    \"memory\": {\"min_free_mb\": 1024},\n"
	"    \"storage\": {\"paths\": [{\"path\": \"/scratch\", \"min_free_mb\": 10240,\n"
	"                             \"min_free_inodes\": 100000, \"writable\": false},\n"
	"                            {\"path\": \"/home\"}],\n"
	"                \"shm_min_mb\": 512},\n"
	"    \"limits\": {\"memlock_unlimited\": true, \"nofile_min\": 65536},\n"
	"    \"nics\": {\"required\": [\"eth1\", \"eth2\"], \"min_speed_mbps\": 10000,\n"
	"             \"ib_devices\": [\"mlx5_0\"], \"ib_min_rate_gbps\": 100}\n"
	"  }\n"
	"}\n";

struct fixture {
	char dir[PATH_MAX];
	char file[PATH_MAX + 16];
	struct config cfg;
	char err[512];
};

static int
setup(void **state)
{
	const char *tmp = getenv("TMPDIR");
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "%s/vigil-config-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(f->dir)) {
		free(f);
		return -1;
	}
	snprintf(f->file, sizeof(f->file), "%s/cfg.json", f->dir);
	config_init(&f->cfg);
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *f = *state;
	int rc;

	config_free(&f->cfg);
	(void)unlink(f->file);
	rc = rmdir(f->dir);
	free(f);
	return rc;
}

static void
write_file(const char *path, const char *text, size_t len)
{
	FILE *fp = fopen(path, "w");

	assert_non_null(fp);
	assert_int_equal(fwrite(text, 1, len, fp), len);
	assert_int_equal(fclose(fp), 0);
}

static int
load(struct fixture *f, const char *json)
{
	return config_load_buffer(&f->cfg, json, strlen(json), "cfg.json", f->err,
	                          sizeof(f->err));
}

static void
test_defaults(void **state)
{
	struct fixture *f = *state;
	struct config *c = &f->cfg;

	assert_string_equal(c->sysfs_root, "/");
	assert_int_equal(c->slots_expected, -1);
	assert_int_equal(c->pcie_degraded, VERDICT_WARN);
	assert_int_equal(c->aer_correctable_max, -1);
	assert_true(c->driver_required);
	assert_int_equal(c->mem_min_free_mb, 0);
	assert_null(c->paths);
	assert_int_equal(c->npaths, 0);
	assert_int_equal(c->shm_min_mb, 0);
	assert_false(c->memlock_unlimited);
	assert_int_equal(c->nofile_min, 0);
	assert_null(c->nics);
	assert_int_equal(c->nnics, 0);
	assert_int_equal(c->nic_min_speed_mbps, 0);
	assert_null(c->ib_devices);
	assert_int_equal(c->nib_devices, 0);
	assert_int_equal(c->ib_min_rate_gbps, 0);
	assert_true(c->check_timeout_s == 10);
	assert_true(c->gather_timeout_s == 60);

	/* free, then reuse after init */
	config_free(c);
	assert_null(c->sysfs_root);
	config_init(c);
	assert_string_equal(c->sysfs_root, "/");
}

static void
assert_full(const struct config *c)
{
	assert_string_equal(c->sysfs_root, "/srv/fake-root");
	assert_true(c->check_timeout_s == 2.5);
	assert_true(c->gather_timeout_s == 90);
	assert_int_equal(c->slots_expected, 8);
	assert_int_equal(c->pcie_degraded, VERDICT_FAIL);
	assert_int_equal(c->aer_correctable_max, 100);
	assert_false(c->driver_required);
	assert_int_equal(c->mem_min_free_mb, 1024);
	assert_int_equal(c->npaths, 2);
	assert_string_equal(c->paths[0].path, "/scratch");
	assert_int_equal(c->paths[0].min_free_mb, 10240);
	assert_int_equal(c->paths[0].min_free_inodes, 100000);
	assert_false(c->paths[0].writable);
	/* keys left out of an entry take the entry's defaults */
	assert_string_equal(c->paths[1].path, "/home");
	assert_int_equal(c->paths[1].min_free_mb, 0);
	assert_int_equal(c->paths[1].min_free_inodes, 0);
	assert_true(c->paths[1].writable);
	assert_int_equal(c->shm_min_mb, 512);
	assert_true(c->memlock_unlimited);
	assert_int_equal(c->nofile_min, 65536);
	assert_int_equal(c->nnics, 2);
	assert_string_equal(c->nics[0], "eth1");
	assert_string_equal(c->nics[1], "eth2");
	assert_int_equal(c->nic_min_speed_mbps, 10000);
	assert_int_equal(c->nib_devices, 1);
	assert_string_equal(c->ib_devices[0], "mlx5_0");
	assert_int_equal(c->ib_min_rate_gbps, 100);
}

static void
test_full_file(void **state)
{
	struct fixture *f = *state;

	write_file(f->file, full_json, strlen(full_json));
	assert_int_equal(config_load_file(&f->cfg, f->file, f->err, sizeof(f->err)), 0);
	assert_string_equal(f->err, "");
	assert_full(&f->cfg);
}

static void
test_empty_object(void **state)
{
	struct fixture *f = *state;

	/* every key is optional */
	assert_int_equal(load(f, "{}"), 0);
	assert_int_equal(load(f, "{\"check\": {\"slots\": {}}}"), 0);
	assert_string_equal(f->cfg.sysfs_root, "/");
	assert_int_equal(f->cfg.slots_expected, -1);
}

static void
test_buffer_not_terminated(void **state)
{
	struct fixture *f = *state;
	static const char buf[] = "{\"check\":{\"slots\":{\"expected\":4}}}GARBAGE";

	/* only LEN bytes count: the rest would be a syntax error */
	assert_int_equal(config_load_buffer(&f->cfg, buf, strlen(buf) - 7, "b", f->err,
	                                    sizeof(f->err)), 0);
	assert_int_equal(f->cfg.slots_expected, 4);
}

/* Each error class: the exact message or, where the wording is free, the
 * "FILE: KEY: " it must start with. */
struct bad {
	const char *json;
	const char *message;   /* exact, or NULL */
	const char *prefix;    /* "cfg.json: KEY: " */
};

static const struct bad bad_cases[] = {
	/* unknown keys, with the valid ones listed */
	{ "{\"check\": {\"nics\": {\"spee\": 1}}}",
	  "cfg.json: check.nics.spee: unknown key (valid: required, min_speed_mbps, "
	  "ib_devices, ib_min_rate_gbps)", NULL },
	{ "{\"chekc\": {}}",
	  "cfg.json: chekc: unknown key (valid: sysfs_root, check, run, hooks, ledger)", NULL },
	/* the lifecycle hooks */
	{ "{\"hooks\": {}}", "cfg.json: hooks: expected an array of objects, got an object", NULL },
	{ "{\"hooks\": [{\"command\": \"true\"}]}",
	  "cfg.json: hooks[0].phase: missing (required in every entry)", NULL },
	{ "{\"hooks\": [{\"phase\": \"end\"}]}",
	  "cfg.json: hooks[0].command: missing (required in every entry)", NULL },
	{ "{\"hooks\": [{\"phase\": \"after\", \"command\": \"true\"}]}", NULL,
	  "cfg.json: hooks[0].phase: expected one of \"pre-check\", \"pre-launch\"" },
	{ "{\"hooks\": [{\"phase\": \"end\", \"command\": \"\"}]}", NULL,
	  "cfg.json: hooks[0].command: expected a command" },
	{ "{\"hooks\": [{\"phase\": \"end\", \"command\": \"x\", \"on\": \"some\"}]}",
	  "cfg.json: hooks[0].on: expected \"all\" or \"coordinator\", got \"some\"", NULL },
	{ "{\"hooks\": [{\"phase\": \"end\", \"command\": \"x\", \"on_failure\": 1}]}",
	  "cfg.json: hooks[0].on_failure: expected \"fail\" or \"warn\", got 1", NULL },
	{ "{\"hooks\": [{\"phase\": \"end\", \"command\": \"x\", \"timeout\": \"2x\"}]}", NULL,
	  "cfg.json: hooks[0].timeout: expected a duration" },
	{ "{\"hooks\": [{\"phase\": \"end\", \"command\": \"x\", \"timeout\": 0}]}", NULL,
	  "cfg.json: hooks[0].timeout: expected a duration" },
	{ "{\"hooks\": [{\"phase\": \"end\", \"command\": \"x\", \"when\": 0}]}", NULL,
	  "cfg.json: hooks[0].when: unknown key" },
	{ "{\"check\": {\"storage\": {\"paths\": [{\"path\": \"/a\", \"free\": 1}]}}}",
	  NULL, "cfg.json: check.storage.paths[0].free: unknown key (valid: path," },
	/* duplicates */
	{ "{\"check\": {\"timeout\": 5, \"timeout\": 6}}",
	  "cfg.json: check.timeout: duplicate key", NULL },
	{ "{\"check\": {}, \"check\": {}}", "cfg.json: check: duplicate key", NULL },
	{ "{\"check\": {\"storage\": {\"paths\": [{\"path\": \"/a\", \"path\": \"/b\"}]}}}",
	  "cfg.json: check.storage.paths[0].path: duplicate key", NULL },
	/* wrong types */
	{ "{\"check\": {\"slots\": {\"expected\": \"8\"}}}",
	  "cfg.json: check.slots.expected: expected a non-negative integer, got \"8\"", NULL },
	{ "{\"check\": {\"slots\": {\"driver_required\": 1}}}",
	  "cfg.json: check.slots.driver_required: expected true or false, got 1", NULL },
	{ "{\"check\": []}", "cfg.json: check: expected an object, got an array", NULL },
	{ "{\"check\": {\"nics\": {\"required\": \"eth0\"}}}",
	  NULL, "cfg.json: check.nics.required: expected an array" },
	{ "{\"check\": {\"nics\": {\"ib_devices\": [\"mlx5_0\", 1]}}}",
	  NULL, "cfg.json: check.nics.ib_devices[1]: expected a name" },
	{ "{\"check\": {\"storage\": {\"paths\": [\"/scratch\"]}}}",
	  "cfg.json: check.storage.paths[0]: expected an object, got \"/scratch\"", NULL },
	{ "{\"check\": {\"limits\": {\"memlock_unlimited\": null}}}",
	  NULL, "cfg.json: check.limits.memlock_unlimited: expected true or false, got null" },
	{ "[]", "cfg.json: expected an object at the top level, got an array", NULL },
	/* numbers: non-integral, negative, out of range */
	{ "{\"check\": {\"slots\": {\"expected\": 8.5}}}",
	  "cfg.json: check.slots.expected: expected a non-negative integer, got 8.5", NULL },
	{ "{\"check\": {\"memory\": {\"min_free_mb\": -1}}}",
	  "cfg.json: check.memory.min_free_mb: expected a non-negative integer, got -1", NULL },
	{ "{\"check\": {\"memory\": {\"min_free_mb\": 1e300}}}",
	  NULL, "cfg.json: check.memory.min_free_mb: 1e+300 is out of range" },
	{ "{\"check\": {\"storage\": {\"shm_min_mb\": 1e999}}}",
	  NULL, "cfg.json: check.storage.shm_min_mb: " },
	{ "{\"check\": {\"slots\": {\"expected\": 4294967296}}}",
	  NULL, "cfg.json: check.slots.expected: 4294967296 is out of range" },
	{ "{\"check\": {\"slots\": {\"aer_correctable_max\": -2}}}",
	  NULL, "cfg.json: check.slots.aer_correctable_max: expected " },
	{ "{\"check\": {\"storage\": {\"paths\": [{\"path\": \"/a\", \"min_free_inodes\": -5}]}}}",
	  NULL, "cfg.json: check.storage.paths[0].min_free_inodes: expected a non-negative" },
	{ "{\"check\": {\"timeout\": 0}}",
	  "cfg.json: check.timeout: expected a positive number of seconds, got 0", NULL },
	{ "{\"check\": {\"gather_timeout\": -3}}",
	  NULL, "cfg.json: check.gather_timeout: expected a positive number" },
	{ "{\"check\": {\"gather_timeout\": 1e9}}",
	  NULL, "cfg.json: check.gather_timeout: 1000000000 is out of range" },
	/* names, verdicts, paths */
	{ "{\"check\": {\"nics\": {\"required\": [\"eth0\", \"\"]}}}",
	  "cfg.json: check.nics.required[1]: expected a non-empty name, got \"\"", NULL },
	{ "{\"check\": {\"nics\": {\"ib_devices\": [\"../x\"]}}}",
	  NULL, "cfg.json: check.nics.ib_devices[0]: expected a name without '/'" },
	{ "{\"check\": {\"slots\": {\"pcie_degraded\": \"maybe\"}}}",
	  "cfg.json: check.slots.pcie_degraded: expected one of \"pass\", \"warn\", \"fail\", "
	  "got \"maybe\"", NULL },
	{ "{\"check\": {\"slots\": {\"pcie_degraded\": \"WARN\"}}}",
	  NULL, "cfg.json: check.slots.pcie_degraded: expected one of" },
	{ "{\"check\": {\"storage\": {\"paths\": [{\"path\": \"scratch\"}]}}}",
	  "cfg.json: check.storage.paths[0].path: expected an absolute path, got \"scratch\"",
	  NULL },
	{ "{\"check\": {\"storage\": {\"paths\": [{\"path\": \"/a\"}, {\"writable\": true}]}}}",
	  "cfg.json: check.storage.paths[1].path: missing (required in every entry)", NULL },
	{ "{\"sysfs_root\": \"\"}",
	  "cfg.json: sysfs_root: expected an absolute path, got \"\"", NULL },
	/* malformed JSON: line and column of the fault */
	{ "{\n  \"check\": {\n    \"timeout\": ,\n    \"gather_timeout\": 1\n  }\n}\n",
	  "cfg.json: line 3, column 16: malformed JSON near \",\"", NULL },
	{ "{\"check\": {}} x", "cfg.json: line 1, column 15: malformed JSON near \"x\" "
	  "(end of input)", NULL },
	{ "{\"check\": {\"timeout\": tru}}",
	  "cfg.json: line 1, column 23: malformed JSON near \"tru}}\"", NULL },
	{ "{\n\"check\": {\n", NULL, "cfg.json: line 2, column 10: malformed JSON" },
	{ "", "cfg.json: line 1, column 1: malformed JSON (empty document)", NULL },
	/* a NUL character (\u0000) in a value or a key: cJSON would cut the
	 * string there ("eth" for "eth\u0000x", "check" for the key) */
	{ "{\"check\": {\"nics\": {\"required\": [\"eth\\u0000x\"]}}}",
	  "cfg.json: line 1, column 38: \\u0000 (a NUL character) in a string: no key or "
	  "value may hold one", NULL },
	{ "{\"check\\u0000x\": {}}", NULL, "cfg.json: line 1, column 8: \\u0000" },
	/* the run section: the options' own parsers, JSON's types kept apart */
	{ "{\"run\": []}", "cfg.json: run: expected an object, got an array", NULL },
	{ "{\"run\": {\"gracee\": 1}}",
	  NULL, "cfg.json: run.gracee: unknown key (valid: mode, precheck, grace, " },
	{ "{\"run\": {\"time_limit\": 60}}",  /* one job's, not the site's */
	  NULL, "cfg.json: run.time_limit: unknown key (valid: " },
	{ "{\"run\": {\"grace\": 1, \"grace\": 2}}", "cfg.json: run.grace: duplicate key", NULL },
	{ "{\"run\": {\"max_resumes\": \"3\"}}",
	  "cfg.json: run.max_resumes: expected a whole number from 0 to 1000000, got \"3\"", NULL },
	{ "{\"run\": {\"max_resumes\": 2.5}}",
	  "cfg.json: run.max_resumes: expected a whole number from 0 to 1000000, got 2.5", NULL },
	{ "{\"run\": {\"heartbeat\": 1e-300}}",
	  "cfg.json: run.heartbeat: 1e-300 s is below the minimum of 0.1 s: a shorter heartbeat "
	  "keeps every agent and the coordinator busy", NULL },
	{ "{\"run\": {\"grace\": \"2 m\"}}", NULL, "cfg.json: run.grace: expected a duration" },
	{ "{\"run\": {\"grace\": 1e999}}", NULL, "cfg.json: run.grace: expected a duration" },
	{ "{\"run\": {\"resume\": 1}}", "cfg.json: run.resume: expected true or false, got 1",
	  NULL },
	{ "{\"run\": {\"output\": \"some\"}}",
	  "cfg.json: run.output: expected all or coordinator, got \"some\"", NULL },
	{ "{\"run\": {\"events\": \"/log/%q\"}}", NULL, "cfg.json: run.events: expected a path" },
	{ "{\"run\": {\"notify\": \"\"}}", NULL, "cfg.json: run.notify: expected a non-empty" },
	{ "{\"run\": {\"limits\": 3}}", "cfg.json: run.limits: expected an object, got 3", NULL },
	{ "{\"run\": {\"limits\": {}, \"limits\": {}}}", "cfg.json: run.limits: duplicate key",
	  NULL },
	{ "{\"run\": {\"limits\": {\"heartbeat\": 1}}}",
	  "cfg.json: run.limits.heartbeat: unknown key (valid: grace, max_resumes, restart, "
	  "hold_on_failure, stage_retention, stage_max_use, stage_jobs, hook_timeout, "
	  "node_log_mb)", NULL },
	{ "{\"run\": {\"limits\": {\"grace\": 0.01}}}",
	  NULL, "cfg.json: run.limits.grace: 0.01 s is below the minimum of 0.1 s" },
	{ "{\"run\": {\"grace\": \"5m\", \"limits\": {\"grace\": 60}}}",
	  "cfg.json: run.grace: 300 s is above run.limits.grace (60 s)", NULL },
	{ "{\"run\": {\"limits\": {\"max_resumes\": 3}, \"max_resumes\": 4}}",
	  "cfg.json: run.max_resumes: 4 is above run.limits.max_resumes (3)", NULL },
	/* the node ledger */
	{ "{\"ledger\": {\"dir\": \"spool\"}}",
	  "cfg.json: ledger.dir: expected an absolute path, got \"spool\"", NULL },
	{ "{\"ledger\": {\"rules\": [{\"within\": \"1d\"}]}}",
	  "cfg.json: ledger.rules[0].count: missing (required in every entry)", NULL },
	{ "{\"ledger\": {\"rules\": [{\"count\": 0, \"within\": \"1d\"}]}}",
	  "cfg.json: ledger.rules[0].count: expected a positive integer, got 0", NULL },
	{ "{\"ledger\": {\"rules\": [{\"count\": 2, \"within\": \"1w\"}]}}",
	  NULL, "cfg.json: ledger.rules[0].within: expected a duration from 1 second" },
	{ "{\"ledger\": {\"rules\": [{\"count\": 2, \"within\": 60, \"kinds\": []}]}}",
	  "cfg.json: ledger.rules[0].kinds: expected a non-empty array of incident kinds, got an "
	  "array", NULL },
	{ "{\"ledger\": {\"rules\": [{\"count\": 2, \"within\": 60, \"kinds\": [\"fault\", "
	  "\"xid\"]}]}}", NULL,
	  "cfg.json: ledger.rules[0].kinds[1]: expected one of \"precheck\", \"fault\"" },
	{ "{\"ledger\": {\"rules\": [{\"count\": 2, \"within\": 60, \"same\": \"board\"}]}}",
	  "cfg.json: ledger.rules[0].same: expected one of \"none\", \"check\", \"device\", got "
	  "\"board\"", NULL },
	{ "{\"ledger\": {\"rules\": [{\"count\": 2, \"within\": \"30d\"}], \"retention\": "
	  "\"7d\"}}", "cfg.json: ledger.rules[0].within: 2592000 s is longer than ledger.retention "
	  "(604800 s): the incidents it counts would have expired", NULL },
	{ "{\"ledger\": {\"backoff\": {\"initial\": \"2h\", \"max\": \"1h\"}}}",
	  "cfg.json: ledger.backoff.max: 3600 s is shorter than ledger.backoff.initial (7200 s)",
	  NULL },
	{ "{\"ledger\": {\"backoff\": {\"initial\": 0}}}", NULL,
	  "cfg.json: ledger.backoff.initial: expected a duration from 1 second" },
	{ "{\"ledger\": {\"repeat\": \"500d\"}}", NULL,
	  "cfg.json: ledger.repeat: expected a duration up to 400 days" },
	{ "{\"ledger\": {\"app_xids\": [13, -1]}}",
	  "cfg.json: ledger.app_xids[1]: expected a non-negative integer, got -1", NULL },
	{ "{\"ledger\": {\"dirr\": \"/x\"}}",
	  "cfg.json: ledger.dirr: unknown key (valid: dir, rules, backoff, retention, repeat, "
	  "app_xids)", NULL },
};

static void
test_errors(void **state)
{
	struct fixture *f = *state;

	for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		const struct bad *b = &bad_cases[i];
		struct config c;
		int rc;

		config_init(&c);
		f->err[0] = '\0';
		rc = config_load_buffer(&c, b->json, strlen(b->json), "cfg.json", f->err,
		                        sizeof(f->err));
		config_free(&c);
		if (rc != -EINVAL || (b->message && strcmp(f->err, b->message) != 0) ||
		    (b->prefix && strncmp(f->err, b->prefix, strlen(b->prefix)) != 0))
			fail_msg("case %zu: %s\n  rc %d, message: %s", i, b->json, rc, f->err);
		/* one line, always */
		assert_null(strchr(f->err, '\n'));
	}
}

static void
test_error_message_one_line(void **state)
{
	struct fixture *f = *state;
	char small[16];

	/* user text in the message (a key with a newline) stays on one line */
	assert_int_equal(load(f, "{\"a\\nb\": 1}"), -EINVAL);
	assert_string_equal(f->err, "cfg.json: a?b: unknown key (valid: sysfs_root, check, run, hooks, ledger)");
	/* a NUL byte is not JSON text */
	assert_int_equal(config_load_buffer(&f->cfg, "{\n \0}", 5, "cfg.json", f->err,
	                                    sizeof(f->err)), -EINVAL);
	assert_string_equal(f->err, "cfg.json: line 2, column 2: malformed JSON (a NUL byte)");
	/* a short buffer truncates, never overflows */
	memset(small, 'z', sizeof(small));
	assert_int_equal(config_load_buffer(&f->cfg, "[]", 2, "cfg.json", small, 10), -EINVAL);
	assert_string_equal(small, "cfg.json:");
	assert_int_equal(small[10], 'z');
	/* and no buffer at all is allowed */
	assert_int_equal(config_load_buffer(&f->cfg, "[]", 2, "cfg.json", NULL, 0), -EINVAL);
}

static void
test_missing_file(void **state)
{
	struct fixture *f = *state;
	char expect[PATH_MAX + 64];

	assert_int_equal(config_load_file(&f->cfg, f->file, f->err, sizeof(f->err)), -ENOENT);
	snprintf(expect, sizeof(expect), "%s: cannot read: No such file or directory", f->file);
	assert_string_equal(f->err, expect);

	/* a directory is not a configuration either */
	assert_int_equal(config_load_file(&f->cfg, f->dir, f->err, sizeof(f->err)), -EISDIR);
	assert_non_null(strstr(f->err, ": cannot read: "));
}

static void
test_file_too_large(void **state)
{
	struct fixture *f = *state;
	size_t len = 1024 * 1024 + 1;
	char *big = malloc(len);

	assert_non_null(big);
	/* valid JSON but for its size: an object padded with spaces */
	memset(big, ' ', len);
	big[0] = '{';
	big[len - 1] = '}';
	write_file(f->file, big, len);
	assert_int_equal(config_load_file(&f->cfg, f->file, f->err, sizeof(f->err)), -EFBIG);
	assert_non_null(strstr(f->err, "larger than"));
	assert_int_equal(config_load_buffer(&f->cfg, big, len, "big", f->err, sizeof(f->err)),
	                 -EFBIG);
	/* one byte less is fine */
	big[len - 2] = '}';
	assert_int_equal(config_load_buffer(&f->cfg, big, len - 1, "big", f->err,
	                                    sizeof(f->err)), 0);
	free(big);
}

static void
test_overlay(void **state)
{
	struct fixture *f = *state;
	struct config *c = &f->cfg;

	assert_int_equal(load(f, full_json), 0);
	/* a second document changes only what it names; a list replaces */
	assert_int_equal(load(f, "{\"check\": {\"slots\": {\"expected\": 4},"
	                         " \"nics\": {\"required\": [\"ib9\"]}}}"), 0);
	assert_int_equal(c->slots_expected, 4);
	assert_int_equal(c->nnics, 1);
	assert_string_equal(c->nics[0], "ib9");
	assert_int_equal(c->pcie_degraded, VERDICT_FAIL);
	assert_int_equal(c->aer_correctable_max, 100);
	assert_int_equal(c->nib_devices, 1);
	assert_int_equal(c->npaths, 2);
	assert_string_equal(c->sysfs_root, "/srv/fake-root");

	/* an empty list clears; a new path list replaces the old one */
	assert_int_equal(load(f, "{\"check\": {\"nics\": {\"ib_devices\": []},"
	                         " \"storage\": {\"paths\": [{\"path\": \"/tmp\"}]},"
	                         " \"slots\": {\"aer_correctable_max\": -1}}}"), 0);
	assert_int_equal(c->nib_devices, 0);
	assert_null(c->ib_devices);
	assert_int_equal(c->npaths, 1);
	assert_string_equal(c->paths[0].path, "/tmp");
	assert_int_equal(c->aer_correctable_max, -1);

	/* a list with a bad entry leaves the previous list in place */
	assert_int_equal(load(f, "{\"check\": {\"nics\": {\"required\": [\"eth5\", \"\"]}}}"),
	                 -EINVAL);
	assert_int_equal(c->nnics, 1);
	assert_string_equal(c->nics[0], "ib9");
	assert_int_equal(load(f, "{\"check\": {\"storage\": {\"paths\": [{\"path\": \"/x\"},"
	                         " {\"path\": 3}]}}}"), -EINVAL);
	assert_int_equal(c->npaths, 1);
	assert_string_equal(c->paths[0].path, "/tmp");

	/* lists of integers and of hooks go the same way */
	assert_int_equal(load(f, "{\"check\": {\"boards\": {\"xid_fail\": [79, 48]}},"
	                         " \"hooks\": [{\"phase\": \"end\", \"command\": \"true\"}]}"), 0);
	assert_int_equal(c->boards.nxid_fail, 2);
	assert_int_equal(c->boards.xid_fail[0], 79);
	assert_int_equal(c->boards.xid_fail[1], 48);
	assert_int_equal(c->nhooks, 1);
	assert_int_equal(load(f, "{\"check\": {\"boards\": {\"xid_fail\": [13, 70000]}}}"),
	                 -EINVAL);
	assert_string_equal(f->err, "cfg.json: check.boards.xid_fail[1]: 70000 is out of range "
	                            "(at most 65535)");
	assert_int_equal(load(f, "{\"hooks\": [{\"phase\": \"end\", \"command\": \"a\"},"
	                         " {\"phase\": \"end\", \"command\": \"\"}]}"), -EINVAL);
	assert_int_equal(c->boards.nxid_fail, 2);
	assert_int_equal(c->boards.xid_fail[0], 79);
	assert_int_equal(c->nhooks, 1);
	assert_string_equal(c->hooks[0].command, "true");
	assert_int_equal(load(f, "{\"check\": {\"boards\": {\"xid_fail\": []}}, \"hooks\": []}"),
	                 0);
	assert_int_equal(c->boards.nxid_fail, 0);
	assert_int_equal(c->nhooks, 0);
}

/* The "run" section as the site writes it: kept as given, checked once. */
/* The lifecycle hooks, in order, with their defaults. */
/* The node ledger: off by default, with the default rules; a file's
 * rules replace them. */
static void
test_ledger_section(void **state)
{
	struct fixture *f = *state;
	const struct config_ledger *l = &f->cfg.ledger;

	assert_null(l->dir);
	assert_int_equal(l->nrules, 2);
	assert_int_equal(l->rules[0].count, 3);
	assert_true(l->rules[0].within_s == 7 * 86400);
	assert_int_equal(l->rules[0].kinds, (1u << CONFIG_LEDGER_PRECHECK) |
	                 (1u << CONFIG_LEDGER_FAULT) | (1u << CONFIG_LEDGER_LOST) |
	                 (1u << CONFIG_LEDGER_HEALTHCHECK) | (1u << CONFIG_LEDGER_BOARD));
	assert_int_equal(l->rules[1].count, 2);
	assert_int_equal(l->rules[1].kinds, 1u << CONFIG_LEDGER_BOARD);
	assert_int_equal(l->rules[1].same, CONFIG_LEDGER_SAME_DEVICE);
	assert_true(l->backoff_initial_s == 3600 && l->backoff_max_s == 7 * 86400);
	assert_true(l->backoff_reset_s == 30 * 86400 && l->retention_s == 180 * 86400);
	assert_true(l->repeat_s == 86400);
	assert_int_equal(l->napp_xids, 4);
	assert_int_equal(l->app_xids[0], 13);
	assert_int_equal(load(f, "{\"ledger\": {\"dir\": \"/shared/ledger\", \"rules\": ["
	                      "{\"count\": 4, \"within\": \"2d\", \"kinds\": [\"straggler\"], "
	                      "\"same\": \"check\"}], \"backoff\": {\"initial\": \"10s\", "
	                      "\"max\": 3600, \"reset\": \"1d\"}, \"retention\": \"400d\", "
	                      "\"repeat\": 0, \"app_xids\": []}}"), 0);
	assert_string_equal(l->dir, "/shared/ledger");
	assert_int_equal(l->nrules, 1);
	assert_int_equal(l->rules[0].count, 4);
	assert_true(l->rules[0].within_s == 2 * 86400);
	assert_int_equal(l->rules[0].kinds, 1u << CONFIG_LEDGER_STRAGGLER);
	assert_int_equal(l->rules[0].same, CONFIG_LEDGER_SAME_CHECK);
	assert_true(l->backoff_initial_s == 10 && l->backoff_max_s == 3600);
	assert_true(l->backoff_reset_s == 86400 && l->retention_s == 400 * 86400);
	assert_true(l->repeat_s == 0);
	assert_int_equal(l->napp_xids, 0);
	/* a rule without kinds counts the hardware kinds */
	assert_int_equal(load(f, "{\"ledger\": {\"rules\": [{\"count\": 1, \"within\": 60}]}}"),
	                 0);
	assert_int_equal(l->rules[0].kinds & (1u << CONFIG_LEDGER_STRAGGLER), 0);
	assert_int_not_equal(l->rules[0].kinds & (1u << CONFIG_LEDGER_LOST), 0);
	assert_int_equal(load(f, "{\"ledger\": {\"rules\": []}}"), 0);
	assert_int_equal(l->nrules, 0);
	assert_string_equal(config_ledger_kind_names[CONFIG_LEDGER_HEALTHCHECK], "healthcheck");
}

static void
test_hooks_section(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(load(f, "{\"hooks\": ["
	                      "{\"phase\": \"pre-launch\", \"command\": \"/site/prolog\"},"
	                      "{\"phase\": \"end\", \"command\": \"echo $VIGIL_JOB_STATE\","
	                      " \"on\": \"coordinator\", \"on_failure\": \"warn\","
	                      " \"timeout\": \"2m\"},"
	                      "{\"phase\": \"checkpoint\", \"command\": \"sync\", \"timeout\": 30}]}"),
	                 0);
	assert_int_equal(f->cfg.nhooks, 3);
	assert_int_equal(f->cfg.hooks[0].phase, CONFIG_HOOK_PRELAUNCH);
	assert_string_equal(f->cfg.hooks[0].command, "/site/prolog");
	assert_false(f->cfg.hooks[0].coordinator);
	assert_false(f->cfg.hooks[0].warn);
	assert_true(f->cfg.hooks[0].timeout_s == 0);
	assert_int_equal(f->cfg.hooks[1].phase, CONFIG_HOOK_END);
	assert_true(f->cfg.hooks[1].coordinator);
	assert_true(f->cfg.hooks[1].warn);
	assert_true(f->cfg.hooks[1].timeout_s == 120);
	assert_int_equal(f->cfg.hooks[2].phase, CONFIG_HOOK_CHECKPOINT);
	assert_true(f->cfg.hooks[2].timeout_s == 30);
	for (int i = 0; i < CONFIG_HOOK_NPHASES; i++)
		assert_non_null(config_hook_phase_names[i]);
}

static void
test_run_section(void **state)
{
	struct fixture *f = *state;
	struct config *c = &f->cfg;

	assert_null(c->run);
	assert_int_equal(c->nrun_limits, 0);
	assert_int_equal(load(f, "{\"run\": {\"grace\": \"2m\", \"heartbeat\": 2.5, "
	                         "\"tag_output\": true, \"ckpt_signal\": 12, "
	                         "\"events\": \"/var/log/vigil/%u-%j.jsonl\", "
	                         "\"limits\": {\"grace\": \"3m\", \"max_resumes\": 20}}}"), 0);
	assert_int_equal(c->nrun, 5);
	assert_string_equal(c->run[0].text, "2m");
	assert_null(c->run[1].text);
	assert_true(c->run[1].num == 2.5);
	assert_true(c->run[2].num == 1);
	assert_true(c->run[3].num == 12);
	assert_string_equal(c->run[4].text, "/var/log/vigil/%u-%j.jsonl");
	assert_int_equal(c->nrun_limits, 2);
	assert_true(c->run_limits[0].num == 180);  /* limits are numbers: "3m" is 180 s */
	assert_true(c->run_limits[1].num == 20);
	assert_string_equal(c->origin, "cfg.json");
	/* a second document's run section replaces the first one's */
	assert_int_equal(load(f, "{\"run\": {\"perf_window\": 7}}"), 0);
	assert_int_equal(c->nrun, 1);
	assert_int_equal(c->nrun_limits, 0);
	/* a bad one leaves it */
	assert_int_equal(load(f, "{\"run\": {\"perf_window\": 0}}"), -EINVAL);
	assert_int_equal(c->nrun, 1);
	assert_true(c->run[0].num == 7);
	/* an escaped backslash before u0000 is text, not a NUL */
	assert_int_equal(load(f, "{\"check\": {\"nics\": {\"required\": [\"a\\\\u0000\"]}}}"), 0);
	assert_string_equal(c->nics[0], "a\\u0000");
}

/* A FIFO (or a device) as the configuration is refused at once, never
 * waited on: opening a FIFO with no writer would block forever. */
static void
test_not_regular(void **state)
{
	struct fixture *f = *state;
	char fifo[PATH_MAX + 16];

	snprintf(fifo, sizeof(fifo), "%s/fifo", f->dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_equal(config_load_file(&f->cfg, fifo, f->err, sizeof(f->err)), -EINVAL);
	assert_non_null(strstr(f->err, "/fifo: not a regular file (a FIFO or pipe)"));
	assert_int_equal(unlink(fifo), 0);
	assert_int_equal(config_load_file(&f->cfg, "/dev/null", f->err, sizeof(f->err)), -EINVAL);
	assert_string_equal(f->err, "/dev/null: not a regular file (a device): give the "
	                    "configuration as a file");
}

/* As root, a configuration another user could change is refused, with
 * the path and why: the file theirs, writable by others, or in a
 * directory of theirs. */
static void
test_not_roots(void **state)
{
	struct fixture *f = *state;
	char dir[PATH_MAX + 16], path[PATH_MAX + 32];
	FILE *fp;

	if (geteuid() != 0)
		skip();
	snprintf(path, sizeof(path), "%s/cfg.json", f->dir);
	fp = fopen(path, "w");
	assert_non_null(fp);
	fputs("{}", fp);
	assert_int_equal(fclose(fp), 0);
	assert_int_equal(chmod(path, 0644), 0);
	assert_int_equal(config_load_file(&f->cfg, path, f->err, sizeof(f->err)), 0);
	assert_int_equal(chmod(path, 0666), 0);
	assert_int_equal(config_load_file(&f->cfg, path, f->err, sizeof(f->err)), -EACCES);
	assert_non_null(strstr(f->err, "/cfg.json is writable by others (mode 0666)"));
	assert_int_equal(chmod(path, 0644), 0);
	assert_int_equal(chown(path, 65534, 65534), 0);
	assert_int_equal(config_load_file(&f->cfg, path, f->err, sizeof(f->err)), -EPERM);
	assert_non_null(strstr(f->err, "/cfg.json belongs to another user (uid 65534)"));
	assert_int_equal(unlink(path), 0);
	snprintf(dir, sizeof(dir), "%s/theirs", f->dir);
	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(path, sizeof(path), "%s/cfg.json", dir);
	fp = fopen(path, "w");
	assert_non_null(fp);
	fputs("{}", fp);
	assert_int_equal(fclose(fp), 0);
	assert_int_equal(chown(dir, 65534, 65534), 0);
	assert_int_equal(config_load_file(&f->cfg, path, f->err, sizeof(f->err)), -EPERM);
	assert_non_null(strstr(f->err, "/theirs is a directory of another user (uid 65534)"));
	assert_int_equal(unlink(path), 0);
	assert_int_equal(rmdir(dir), 0);
}

/* A document nested past cJSON's limit is said to be that, with the
 * limit, not "malformed"; one at the limit is read (then judged). */
static void
test_nested_too_deeply(void **state)
{
	struct fixture *f = *state;
	size_t deep = 100000, n = 0;
	char *text = malloc(2 * deep + 32);

	assert_non_null(text);
	n += (size_t)sprintf(text, "{\"check\": ");
	for (size_t i = 0; i < deep; i++)
		text[n++] = '[';
	for (size_t i = 0; i < deep; i++)
		text[n++] = ']';
	text[n++] = '}';
	text[n] = '\0';
	assert_int_equal(load(f, text), -EINVAL);
	assert_string_equal(f->err, "cfg.json: line 1, column 1010: nested too deeply (more "
	                    "than 1000 levels of arrays and objects)");
	/* 999 arrays inside the object: 1000 levels, cJSON's limit */
	n = (size_t)sprintf(text, "{\"check\": ");
	for (size_t i = 0; i < 999; i++)
		text[n++] = '[';
	for (size_t i = 0; i < 999; i++)
		text[n++] = ']';
	text[n++] = '}';
	text[n] = '\0';
	assert_int_equal(load(f, text), -EINVAL);
	assert_null(strstr(f->err, "nested too deeply"));
	assert_non_null(strstr(f->err, "check"));
	free(text);
}

static void
test_list_add(void **state)
{
	struct fixture *f = *state;
	struct config *c = &f->cfg;

	assert_int_equal(config_list_add(&c->nics, &c->nnics, "eth0"), 0);
	assert_int_equal(config_list_add(&c->nics, &c->nnics, "eth1"), 0);
	assert_int_equal(c->nnics, 2);
	assert_string_equal(c->nics[0], "eth0");
	assert_string_equal(c->nics[1], "eth1");
	assert_int_equal(config_list_add(&c->nics, &c->nnics, NULL), -EINVAL);
	assert_int_equal(c->nnics, 2);
	/* the file's list replaces what flags added before it */
	assert_int_equal(load(f, "{\"check\": {\"nics\": {\"required\": [\"ib0\"]}}}"), 0);
	assert_int_equal(c->nnics, 1);
	assert_string_equal(c->nics[0], "ib0");
}

/* The fuzzer's seeds say what they are: "bad-*" must be refused, the
 * others accepted. */
static void
test_seed_corpus(void **state)
{
	struct fixture *f = *state;
	const char *src = getenv("TESTS_SRCDIR");
	char dir[PATH_MAX], path[PATH_MAX + 256];
	struct dirent *e;
	size_t good = 0, bad = 0;
	DIR *d;

	if (!src || !*src)
		skip();
	snprintf(dir, sizeof(dir), "%s/fuzz/corpus/config", src);
	d = opendir(dir);
	assert_non_null(d);
	while ((e = readdir(d))) {
		struct config c;
		int rc;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		config_init(&c);
		rc = config_load_file(&c, path, f->err, sizeof(f->err));
		config_free(&c);
		if (strncmp(e->d_name, "bad-", 4) == 0) {
			if (rc != -EINVAL)
				fail_msg("%s: accepted", e->d_name);
			bad++;
		} else {
			if (rc != 0)
				fail_msg("%s", f->err);
			good++;
		}
	}
	closedir(d);
	assert_true(good > 0);
	assert_true(bad > 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_defaults, setup, teardown),
		cmocka_unit_test_setup_teardown(test_full_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_empty_object, setup, teardown),
		cmocka_unit_test_setup_teardown(test_buffer_not_terminated, setup, teardown),
		cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_error_message_one_line, setup, teardown),
		cmocka_unit_test_setup_teardown(test_missing_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_file_too_large, setup, teardown),
		cmocka_unit_test_setup_teardown(test_overlay, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_section, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hooks_section, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ledger_section, setup, teardown),
		cmocka_unit_test_setup_teardown(test_not_regular, setup, teardown),
		cmocka_unit_test_setup_teardown(test_not_roots, setup, teardown),
		cmocka_unit_test_setup_teardown(test_nested_too_deeply, setup, teardown),
		cmocka_unit_test_setup_teardown(test_list_add, setup, teardown),
		cmocka_unit_test_setup_teardown(test_seed_corpus, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
