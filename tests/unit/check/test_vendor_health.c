/*
 * test_vendor_health.c - the board-health judges from facts alone, then
 * gathering in timed children and the running job's monitor through the
 * fake vendor libraries of tests/fakevendor (the vendors' documented
 * contracts; the real libraries need the boards).
 */
#include "autoconf.h"

#include "../vigil_test.h"
#include "../proc.h"
#include "../scratch.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cJSON.h>

#include "check/vhealth.h"
#include "conf/config.h"
#include "sys/topo.h"
#include "sys/vendor.h"
#include "sys/vendor_abi.h"

#define NVML_FAKE FAKEVENDOR_DIR "/libnvidia-ml.so.1"
#define NVML_OLD FAKEVENDOR_DIR "/old/libnvidia-ml.so.1"
#define RSMI_FAKE FAKEVENDOR_DIR "/librocm_smi64.so.1"
#define CNDEV_FAKE FAKEVENDOR_DIR "/libcndev.so"

#define BUS0 "0000:04:00.0"
#define BUS1 "0000:07:00.0"

struct fix {
	struct config cfg;
	struct slot slots[3];
	size_t nslots;
	struct vhealth_facts *now, *base;
	struct finding *f;
	size_t n;
	char dir[128];
	char script[192];
	bool live;             /* the gathers' LIVE */
};

static void
set_slot(struct slot *s, int index, enum slot_vendor v, const char *bus)
{
	memset(s, 0, sizeof(*s));
	s->index = index;
	s->vendor = v;
	snprintf(s->pci_bus_id, sizeof(s->pci_bus_id), "%s", bus);
}

/* Library KIND answered with boards at BUS0 and BUS1, all healthy. */
static void
healthy(struct vhealth_facts *f, enum vendor_kind kind)
{
	struct vendor_facts *v = &f->lib[kind];

	f->asked[kind] = true;
	f->rc[kind] = 0;
	v->kind = kind;
	v->count = 2;
	v->nboards = 2;
	for (int i = 0; i < 2; i++) {
		struct vendor_board *b = &v->boards[i];

		memset(b, 0, sizeof(*b));
		b->index = i;
		snprintf(b->bus_id, sizeof(b->bus_id), "%s", i ? BUS1 : BUS0);
		b->ecc_enabled = 1;
		b->recovery = b->retired_pending = b->remap_pending = b->remap_failure = 0;
		b->retired[0] = b->retired[1] = b->remapped[0] = b->remapped[1] = 0;
		b->temperature = 50;
		b->slowdown = 90;
		b->health = kind == VENDOR_CNDEV ? 1 : -1;
		b->device_state = kind == VENDOR_CNDEV ? CNDEV_DEVICE_GOOD : -1;
		b->driver_state = kind == VENDOR_CNDEV ? CNDEV_DRIVER_RUNNING : -1;
		for (unsigned l = 0; l < VENDOR_MAX_LINKS; l++)
			b->link[l] = -1;
		for (unsigned r = 0; r < VENDOR_RAS_BLOCKS; r++)
			b->ras[r][0] = b->ras[r][1] = -1;
	}
}

static int
setup(void **state)
{
	struct fix *x = calloc(1, sizeof(*x));

	if (!x)
		return -1;
	config_init(&x->cfg);
	x->now = vhealth_facts_new();
	x->base = vhealth_facts_new();
	if (!x->now || !x->base)
		return -1;
	set_slot(&x->slots[0], 0, SLOT_VENDOR_NVIDIA, BUS0);
	set_slot(&x->slots[1], 1, SLOT_VENDOR_NVIDIA, BUS1);
	x->nslots = 2;
	x->live = true;
	healthy(x->now, VENDOR_NVML);
	healthy(x->base, VENDOR_NVML);
	if (make_scratch_dir(x->dir, sizeof(x->dir), "vhealth") < 0)
		return -1;
	snprintf(x->script, sizeof(x->script), "%s/script", x->dir);
	if (setenv("VIGIL_FAKE_VENDOR", x->script, 1) < 0)
		return -1;
	*state = x;
	return 0;
}

static int
teardown(void **state)
{
	struct fix *x = *state;

	unlink(x->script);
	rmdir(x->dir);
	unsetenv("VIGIL_FAKE_VENDOR");
	free(x->f);
	free(x->now);
	free(x->base);
	config_free(&x->cfg);
	free(x);
	return 0;
}

/* Judge the fixture's facts (with the baseline when WITH_BASE). */
static size_t
judge(struct fix *x, bool with_base)
{
	free(x->f);
	x->f = NULL;
	assert_int_equal(vhealth_judge(&x->cfg.boards, x->slots, x->nslots, x->now,
	                               with_base ? x->base : NULL, &x->f, &x->n), 0);
	return x->n;
}

/* The finding WHAT on DEVICE, failing the test when there is none. */
static const struct finding *
find(const struct fix *x, const char *what, const char *device)
{
	for (size_t i = 0; i < x->n; i++)
		if (strcmp(x->f[i].what, what) == 0 && strcmp(x->f[i].device, device) == 0)
			return &x->f[i];
	fail_msg("no %s finding on %s among %zu", what, device, x->n);
	return NULL;
}

static struct vendor_board *
board(struct fix *x, int i)
{
	return &x->now->lib[VENDOR_NVML].boards[i];
}

/* ---- the judges ----------------------------------------------------------- */

static void
test_healthy(void **state)
{
	struct fix *x = *state;

	assert_int_equal(judge(x, false), 0);
	assert_null(x->f);
	assert_int_equal(judge(x, true), 0);
}

static void
test_lost(void **state)
{
	struct fix *x = *state;
	const struct finding *f;

	/* Lost from the bus: NVML still lists the board, but cannot reach it. */
	board(x, 1)->lost = true;
	snprintf(board(x, 1)->lost_call, sizeof(board(x, 1)->lost_call), "nvmlDeviceGetHandleByIndex_v2");
	board(x, 1)->bus_id[0] = '\0';
	board(x, 1)->remap_pending = 1;   /* nothing more is judged on a lost board */
	assert_int_equal(judge(x, false), 1);
	/* Matched to slot 1 by order, since the library could not name it. */
	f = find(x, "board", "nvml:1");
	assert_int_equal(f->verdict, VERDICT_FAIL);
	assert_non_null(strstr(f->evidence, "GPU is lost"));
	assert_non_null(strstr(f->evidence, "nvmlDeviceGetHandleByIndex_v2"));

	/* Gone from the enumeration: the slot is not among the boards. */
	x->now->lib[VENDOR_NVML].nboards = 1;
	assert_int_equal(judge(x, false), 1);
	f = find(x, "board", BUS1);
	assert_int_equal(f->verdict, VERDICT_FAIL);
	assert_string_equal(f->evidence,
	                    "slot 1 is not among the 1 board NVML sees (fallen off the bus?)");

	x->cfg.boards.lost = VERDICT_WARN;
	assert_int_equal(judge(x, false), 1);
	assert_int_equal(x->f[0].verdict, VERDICT_WARN);
}

static void
test_recovery(void **state)
{
	struct fix *x = *state;

	board(x, 0)->recovery = VENDOR_RECOVERY_RESET;
	board(x, 1)->recovery = VENDOR_RECOVERY_REBOOT;
	assert_int_equal(judge(x, false), 2);
	assert_int_equal(find(x, "recovery", BUS0)->verdict, VERDICT_FAIL);
	assert_string_equal(find(x, "recovery", BUS0)->evidence,
	                    "the driver's recommended recovery action: reset the GPU");
	assert_non_null(strstr(find(x, "recovery", BUS1)->evidence, "reboot the node"));

	/* NVML 13.3's action 5, named. */
	board(x, 0)->recovery = VENDOR_RECOVERY_NONE;
	board(x, 1)->recovery = VENDOR_RECOVERY_RECOVER_IMEX_DOMAIN;
	assert_int_equal(judge(x, false), 1);
	assert_int_equal(find(x, "recovery", BUS1)->verdict, VERDICT_FAIL);
	assert_non_null(strstr(find(x, "recovery", BUS1)->evidence,
	                       "recovery action: recover the IMEX domain"));
	board(x, 1)->recovery = 6;
	assert_int_equal(judge(x, false), 1);
	assert_string_equal(find(x, "recovery", BUS1)->evidence,
	                    "the driver's recommended recovery action: 6");

	board(x, 1)->recovery = VENDOR_RECOVERY_NONE;
	board(x, 1)->reset_required = true;
	snprintf(board(x, 1)->lost_call, sizeof(board(x, 1)->lost_call), "nvmlDeviceGetTemperature");
	assert_int_equal(judge(x, false), 1);
	assert_non_null(strstr(find(x, "recovery", BUS1)->evidence, "NVML_ERROR_RESET_REQUIRED"));

	x->cfg.boards.recovery_action = VERDICT_PASS;
	assert_int_equal(judge(x, false), 0);
}

static void
test_ecc(void **state)
{
	struct fix *x = *state;
	const struct finding *f;

	board(x, 0)->ecc_volatile[0] = 40;
	board(x, 0)->ecc_volatile[1] = 2;
	board(x, 0)->ecc_aggregate[1] = 5;
	/* Correctable errors alone pass unless a limit is set. */
	assert_int_equal(judge(x, false), 1);
	f = find(x, "ecc", BUS0);
	assert_int_equal(f->verdict, VERDICT_FAIL);
	assert_string_equal(f->evidence, "2 uncorrectable ECC errors since the driver loaded "
	                                 "(5 in the board's life)");

	board(x, 0)->ecc_volatile[1] = 0;
	x->cfg.boards.ecc_correctable_max = 10;
	assert_int_equal(judge(x, false), 1);
	f = find(x, "ecc", BUS0);
	assert_int_equal(f->verdict, VERDICT_WARN);
	assert_string_equal(f->evidence, "40 correctable ECC errors (limit 10)");
}

static void
test_ecc_rising(void **state)
{
	struct fix *x = *state;
	const struct finding *f;

	x->base->lib[VENDOR_NVML].boards[0].ecc_volatile[0] = 40;
	board(x, 0)->ecc_volatile[0] = 40;
	assert_int_equal(judge(x, true), 0);
	board(x, 0)->ecc_volatile[0] = 45;
	assert_int_equal(judge(x, true), 1);
	f = find(x, "ecc", BUS0);
	assert_int_equal(f->verdict, VERDICT_WARN);
	assert_string_equal(f->evidence, "correctable ECC errors rose from 40 to 45");
	/* A tolerated rise; then off. */
	x->cfg.boards.ecc_correctable_rise = 5;
	assert_int_equal(judge(x, true), 0);
	x->cfg.boards.ecc_correctable_rise = -1;
	board(x, 0)->ecc_volatile[0] = 4000;
	assert_int_equal(judge(x, true), 0);
	/* A count that fell (the driver reloaded) is no rise. */
	x->cfg.boards.ecc_correctable_rise = 0;
	board(x, 0)->ecc_volatile[0] = 3;
	assert_int_equal(judge(x, true), 0);
}

static void
test_pages_and_rows(void **state)
{
	struct fix *x = *state;

	board(x, 0)->retired_pending = 1;
	board(x, 0)->retired[0] = 1;
	board(x, 0)->retired[1] = 2;
	board(x, 1)->remap_pending = 1;
	board(x, 1)->remap_failure = 1;
	board(x, 1)->remapped[1] = 3;
	board(x, 1)->remapped[0] = 0;
	assert_int_equal(judge(x, false), 3);
	assert_string_equal(find(x, "retired-pages", BUS0)->evidence,
	                    "pages wait for retirement at the next reboot (2 retired for "
	                    "double-bit, 1 for single-bit errors)");
	assert_int_equal(x->f[1].verdict, VERDICT_FAIL);
	assert_non_null(strstr(x->f[1].evidence, "row remapping has failed"));
	assert_non_null(strstr(x->f[2].evidence, "row remapping pending: the GPU needs a reset"));
	x->cfg.boards.row_remap_pending = VERDICT_WARN;
	x->cfg.boards.row_remap_failure = VERDICT_PASS;
	assert_int_equal(judge(x, false), 2);
	assert_int_equal(find(x, "row-remap", BUS1)->verdict, VERDICT_WARN);
}

static void
test_throttle(void **state)
{
	struct fix *x = *state;

	/* A power cap and idle clocks are how a healthy board runs. */
	board(x, 0)->throttle = (long long)(NVML_CLOCKS_SW_POWER_CAP | NVML_CLOCKS_GPU_IDLE);
	assert_int_equal(judge(x, false), 0);
	board(x, 0)->throttle |= (long long)(NVML_CLOCKS_HW_THERMAL_SLOWDOWN |
	                                     NVML_CLOCKS_HW_POWER_BRAKE);
	assert_int_equal(judge(x, false), 1);
	assert_int_equal(x->f[0].verdict, VERDICT_WARN);
	assert_string_equal(x->f[0].evidence,
	                    "clocks slowed down: HW thermal slowdown, HW power brake");
	x->cfg.boards.throttle = VERDICT_FAIL;
	assert_int_equal(judge(x, false), 1);
	assert_int_equal(x->f[0].verdict, VERDICT_FAIL);
}

static void
test_temperature(void **state)
{
	struct fix *x = *state;

	board(x, 0)->temperature = 84;
	assert_int_equal(judge(x, false), 0);
	board(x, 0)->temperature = 85;    /* within the default 5 C of 90 */
	assert_int_equal(judge(x, false), 1);
	assert_string_equal(find(x, "temperature", BUS0)->evidence,
	                    "85 C, the board slows down at 90 C");
	x->cfg.boards.temperature_margin_c = 0;
	assert_int_equal(judge(x, false), 0);
	/* A board without a known slowdown point is not judged. */
	board(x, 0)->temperature = 120;
	board(x, 0)->slowdown = -1;
	assert_int_equal(judge(x, false), 0);
}

static void
test_nvlink(void **state)
{
	struct fix *x = *state;
	struct vendor_board *b = board(x, 0), *pb = &x->base->lib[VENDOR_NVML].boards[0];

	for (int l = 0; l < 4; l++) {
		b->link[l] = pb->link[l] = 1;
		for (int c = 0; c < VENDOR_LINK_COUNTERS; c++)
			b->link_errors[l][c] = pb->link_errors[l][c] = 0;
	}
	b->link[3] = 0;
	pb->link[3] = 0;   /* down from the start: only the expectation catches it */
	assert_int_equal(judge(x, false), 0);
	x->cfg.boards.nvlink_expected = 4;
	assert_int_equal(judge(x, false), 1);
	assert_string_equal(find(x, "nvlink", BUS0)->evidence, "3 of 4 NVLinks active, 4 expected");

	/* While running: a link that goes down, and errors that rise. */
	b->link[1] = 0;
	b->link_errors[2][2] = 17;
	b->link_errors[2][0] = 3;
	assert_int_equal(judge(x, true), 2);
	assert_int_equal(find(x, "nvlink", BUS0 "/nvlink1")->verdict, VERDICT_FAIL);
	assert_string_equal(find(x, "nvlink", BUS0 "/nvlink1")->evidence,
	                    "NVLink 1 went down (active when the job started)");
	assert_int_equal(find(x, "nvlink", BUS0 "/nvlink2")->verdict, VERDICT_WARN);
	assert_string_equal(find(x, "nvlink", BUS0 "/nvlink2")->evidence,
	                    "NVLink 2 errors rose: replay 0 -> 3, crc_flit 0 -> 17");
	x->cfg.boards.nvlink_errors_rise = 5;
	assert_int_equal(judge(x, true), 2);
	assert_string_equal(find(x, "nvlink", BUS0 "/nvlink2")->evidence,
	                    "NVLink 2 errors rose: crc_flit 0 -> 17");
}

static void
test_amd(void **state)
{
	struct fix *x = *state;
	struct vendor_board *b;

	memset(x->now, 0, sizeof(*x->now));
	memset(x->base, 0, sizeof(*x->base));
	healthy(x->now, VENDOR_RSMI);
	healthy(x->base, VENDOR_RSMI);
	set_slot(&x->slots[0], 0, SLOT_VENDOR_AMD, BUS0);
	set_slot(&x->slots[1], 1, SLOT_VENDOR_AMD, BUS1);
	b = &x->now->lib[VENDOR_RSMI].boards[0];
	b->ras[0][0] = 3;
	b->ras[0][1] = 1;
	b->ras[7][0] = 10;
	b->ras[7][1] = 0;
	b->throttle = 0x41;
	b->temperature = 99;
	b->slowdown = 100;
	assert_int_equal(judge(x, false), 3);
	assert_int_equal(find(x, "ras", BUS0 "/umc")->verdict, VERDICT_FAIL);
	assert_string_equal(find(x, "ras", BUS0 "/umc")->evidence, "1 uncorrectable errors in block umc");
	assert_string_equal(find(x, "throttle", BUS0)->evidence,
	                    "the firmware throttles the clocks (throttle_status 0x41)");
	assert_int_equal(find(x, "temperature", BUS0)->verdict, VERDICT_WARN);

	/* Rising correctable counts per block, against the baseline. */
	b->ras[0][1] = 0;
	b->throttle = 0;
	b->temperature = 60;
	x->base->lib[VENDOR_RSMI].boards[0].ras[7][0] = 2;
	assert_int_equal(judge(x, true), 1);
	assert_string_equal(find(x, "ras", BUS0 "/xgmi_wafl")->evidence,
	                    "correctable ECC errors in block xgmi_wafl rose from 2 to 10");
}

static void
test_cndev_health(void **state)
{
	struct fix *x = *state;
	struct vendor_board *b;

	memset(x->now, 0, sizeof(*x->now));
	healthy(x->now, VENDOR_CNDEV);
	set_slot(&x->slots[0], 0, SLOT_VENDOR_CAMBRICON, BUS0);
	set_slot(&x->slots[1], 1, SLOT_VENDOR_CAMBRICON, BUS1);
	assert_int_equal(judge(x, false), 0);
	b = &x->now->lib[VENDOR_CNDEV].boards[1];
	b->health = 0;
	b->driver_state = CNDEV_DRIVER_RESET_ERROR;
	b->ecc_volatile[1] = 1;
	assert_int_equal(judge(x, false), 2);
	assert_int_equal(find(x, "health", BUS1)->verdict, VERDICT_FAIL);
	assert_string_equal(find(x, "health", BUS1)->evidence,
	                    "CNDev health: not healthy, device good, driver reset error");
	assert_int_equal(find(x, "ecc", BUS1)->verdict, VERDICT_FAIL);
}

static void
test_library_trouble(void **state)
{
	struct fix *x = *state;

	/* Not installed on this node: not an event. */
	x->now->rc[VENDOR_NVML] = -ENOENT;
	assert_int_equal(judge(x, false), 0);
	x->now->rc[VENDOR_NVML] = -ETIMEDOUT;
	snprintf(x->now->lib[VENDOR_NVML].error, sizeof(x->now->lib[0].error),
	         "did not answer within 10 s");
	assert_int_equal(judge(x, false), 1);
	assert_string_equal(x->f[0].what, "board");
	assert_string_equal(x->f[0].device, "nvml");
	assert_int_equal(x->f[0].verdict, VERDICT_WARN);
	assert_string_equal(x->f[0].evidence, "NVML: did not answer within 10 s");
	x->cfg.boards.unresponsive = VERDICT_FAIL;
	assert_int_equal(judge(x, false), 1);
	assert_int_equal(x->f[0].verdict, VERDICT_FAIL);
	x->now->rc[VENDOR_NVML] = -EIO;
	assert_int_equal(judge(x, false), 1);
	assert_int_equal(x->f[0].verdict, VERDICT_WARN);
	/* Answered, but a call on the way failed: said, as a warning. */
	x->now->rc[VENDOR_NVML] = 0;
	snprintf(x->now->lib[VENDOR_NVML].error, sizeof(x->now->lib[0].error),
	         "nvmlSystemGetDriverVersion failed: Unknown Error (999)");
	assert_int_equal(judge(x, false), 1);
	assert_int_equal(x->f[0].verdict, VERDICT_WARN);
	assert_string_equal(x->f[0].evidence,
	                    "NVML: nvmlSystemGetDriverVersion failed: Unknown Error (999)");
}

static void
test_failed_calls(void **state)
{
	struct fix *x = *state;

	snprintf(board(x, 0)->failed, sizeof(board(x, 0)->failed), "nvmlDeviceGetTotalEccErrors");
	snprintf(board(x, 0)->failed_why, sizeof(board(x, 0)->failed_why), "Unknown Error (999)");
	assert_int_equal(judge(x, false), 1);
	assert_int_equal(find(x, "board", BUS0)->verdict, VERDICT_WARN);
	assert_string_equal(find(x, "board", BUS0)->evidence,
	                    "nvmlDeviceGetTotalEccErrors failed: Unknown Error (999): what it "
	                    "tells is unknown");
	snprintf(board(x, 0)->failed, sizeof(board(x, 0)->failed),
	         "nvmlDeviceGetTotalEccErrors, nvmlDeviceGetName");
	assert_int_equal(judge(x, false), 1);
	assert_string_equal(find(x, "board", BUS0)->evidence,
	                    "nvmlDeviceGetTotalEccErrors, nvmlDeviceGetName failed (the first: "
	                    "Unknown Error (999)): what they tell is unknown");
	/* A lost board is lost: what failed on the way is no news. */
	board(x, 0)->lost = true;
	assert_int_equal(judge(x, false), 1);
	assert_int_equal(find(x, "board", BUS0)->verdict, VERDICT_FAIL);
}

static void
test_extra_board(void **state)
{
	struct fix *x = *state;

	/* A board no slot names is judged all the same. */
	x->nslots = 1;
	board(x, 1)->remap_pending = 1;
	assert_int_equal(judge(x, false), 1);
	assert_int_equal(find(x, "row-remap", BUS1)->verdict, VERDICT_FAIL);
}

static void
test_events(void **state)
{
	struct fix *x = *state;
	struct vendor_event ev = { .kind = VENDOR_EVENT_XID, .board = 1, .xid = 79 };
	struct finding f;

	snprintf(ev.bus_id, sizeof(ev.bus_id), BUS1);
	assert_true(vhealth_judge_event(&x->cfg.boards, &ev, &f));
	assert_string_equal(f.what, "xid");
	assert_string_equal(f.device, BUS1);
	assert_int_equal(f.verdict, VERDICT_FAIL);
	assert_string_equal(f.evidence, "XID 79 (GPU has fallen off the bus)");
	/* An application's fault warns; switched off, it is no finding. */
	ev.xid = 13;
	assert_true(vhealth_judge_event(&x->cfg.boards, &ev, &f));
	assert_int_equal(f.verdict, VERDICT_WARN);
	assert_string_equal(f.evidence, "XID 13 (graphics engine exception)");
	x->cfg.boards.xid_other = VERDICT_PASS;
	assert_false(vhealth_judge_event(&x->cfg.boards, &ev, &f));
	x->cfg.boards.xid_fail[0] = 13;
	assert_true(vhealth_judge_event(&x->cfg.boards, &ev, &f));
	assert_int_equal(f.verdict, VERDICT_FAIL);
	ev.xid = 1234;
	ev.bus_id[0] = '\0';
	assert_false(vhealth_judge_event(&x->cfg.boards, &ev, &f));
	x->cfg.boards.xid_other = VERDICT_WARN;
	assert_true(vhealth_judge_event(&x->cfg.boards, &ev, &f));
	assert_string_equal(f.device, "nvml:1");
	assert_string_equal(f.evidence, "XID 1234");
	ev.kind = VENDOR_EVENT_DBE;
	assert_true(vhealth_judge_event(&x->cfg.boards, &ev, &f));
	assert_string_equal(f.what, "ecc");
	assert_int_equal(f.verdict, VERDICT_FAIL);
	ev.kind = VENDOR_EVENT_LOST;
	ev.board = -1;
	assert_true(vhealth_judge_event(&x->cfg.boards, &ev, &f));
	assert_string_equal(f.device, "nvml");
	assert_string_equal(f.what, "board");
	assert_null(vhealth_xid_name(1234));
}

static void
test_json(void **state)
{
	struct fix *x = *state;
	cJSON *j, *u, *b;

	board(x, 0)->utilization = 50;
	board(x, 0)->memory_used = 1 << 20;
	board(x, 0)->memory_total = 1 << 30;
	board(x, 0)->power_mw = 250500;
	board(x, 0)->temperature = 51;
	board(x, 0)->throttle = -1;
	board(x, 1)->utilization = -1;
	board(x, 1)->memory_used = board(x, 1)->memory_total = board(x, 1)->power_mw = -1;
	snprintf(x->now->lib[VENDOR_NVML].version, sizeof(x->now->lib[0].version), "550.54.15");
	j = vhealth_facts_to_json(x->now);
	assert_non_null(j);
	b = cJSON_GetObjectItem(j, "nvml");
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(b, "available")));
	assert_string_equal(cJSON_GetObjectItem(b, "version")->valuestring, "550.54.15");
	b = cJSON_GetArrayItem(cJSON_GetObjectItem(b, "boards"), 0);
	assert_string_equal(cJSON_GetObjectItem(b, "pci_bus_id")->valuestring, BUS0);
	assert_int_equal(cJSON_GetObjectItem(b, "temperature_celsius")->valueint, 51);
	assert_true(cJSON_IsNumber(cJSON_GetObjectItem(cJSON_GetObjectItem(b, "retired_pages"),
	                                               "double_bit")));
	assert_true(cJSON_IsNumber(cJSON_GetObjectItem(cJSON_GetObjectItem(b, "remapped_rows"),
	                                               "uncorrectable")));
	/* Not offered: absent, not -1. */
	assert_null(cJSON_GetObjectItem(b, "throttle_reasons"));
	assert_null(cJSON_GetObjectItem(j, "rocm_smi"));
	cJSON_Delete(j);

	/* Slots numbered from 4: the usage carries the slot's index. */
	x->slots[0].index = 4;
	x->slots[1].index = 5;
	u = vhealth_usage_to_json(x->now, x->slots, x->nslots);
	assert_non_null(u);
	assert_int_equal(cJSON_GetArraySize(u), 2);
	b = cJSON_GetArrayItem(u, 0);
	assert_string_equal(cJSON_GetObjectItem(b, "vendor")->valuestring, "nvml");
	assert_int_equal(cJSON_GetObjectItem(b, "index")->valueint, 4);
	assert_true(cJSON_GetObjectItem(b, "utilization")->valuedouble == 0.5);
	assert_true(cJSON_GetObjectItem(b, "power_watts")->valuedouble == 250.5);
	assert_true(cJSON_GetObjectItem(b, "memory_total_bytes")->valuedouble == 1 << 30);
	b = cJSON_GetArrayItem(u, 1);
	assert_int_equal(cJSON_GetObjectItem(b, "index")->valueint, 5);
	assert_null(cJSON_GetObjectItem(b, "utilization"));
	assert_null(cJSON_GetObjectItem(b, "power_watts"));
	cJSON_Delete(u);
}

/* ---- the rules, from vigil.conf -------------------------------------------- */

static int
load(struct config *cfg, const char *text, char *err, size_t len)
{
	return config_load_buffer(cfg, text, strlen(text), "cfg.json", err, len);
}

static void
test_config(void **state)
{
	struct fix *x = *state;
	struct config_boards copy;
	char err[256];
	const struct config_boards *b = &x->cfg.boards;

	/* The defaults: the XIDs that need a reset fail, the rest warn. */
	assert_true(b->enabled);
	assert_int_equal(b->nxid_fail, 10);
	assert_int_equal(b->xid_fail[5], 79);
	assert_int_equal(b->xid_other, VERDICT_WARN);
	assert_int_equal(b->recovery_action, VERDICT_FAIL);
	assert_int_equal(b->throttle, VERDICT_WARN);
	assert_int_equal(b->temperature_margin_c, 5);
	assert_null(b->nvml_library);

	assert_int_equal(load(&x->cfg, "{\"check\": {\"boards\": {\"enabled\": false, "
	                      "\"nvml_library\": \"/opt/nvidia/lib64/libnvidia-ml.so.1\", "
	                      "\"xid_fail\": [79, 48], \"xid_other\": \"pass\", "
	                      "\"ecc_correctable_max\": 100, \"ecc_correctable_rise\": -1, "
	                      "\"temperature_margin_c\": 3, \"nvlink_expected\": 18, "
	                      "\"throttle\": \"fail\", \"health\": \"warn\"}}}",
	                      err, sizeof(err)), 0);
	assert_false(b->enabled);
	assert_string_equal(b->nvml_library, "/opt/nvidia/lib64/libnvidia-ml.so.1");
	assert_int_equal(b->nxid_fail, 2);
	assert_int_equal(b->xid_fail[1], 48);
	assert_int_equal(b->xid_other, VERDICT_PASS);
	assert_int_equal(b->ecc_correctable_max, 100);
	assert_int_equal(b->ecc_correctable_rise, -1);
	assert_int_equal(b->temperature_margin_c, 3);
	assert_int_equal(b->nvlink_expected, 18);
	assert_int_equal(b->throttle, VERDICT_FAIL);
	assert_int_equal(b->health, VERDICT_WARN);

	/* A copy for a module that outlives the configuration. */
	assert_int_equal(config_boards_copy(&copy, b), 0);
	assert_string_equal(copy.nvml_library, b->nvml_library);
	assert_ptr_not_equal(copy.nvml_library, b->nvml_library);
	assert_int_equal(copy.xid_fail[0], 79);
	config_boards_free(&copy);
	assert_null(copy.xid_fail);

	assert_int_equal(load(&x->cfg, "{\"check\": {\"boards\": {\"xid_fail\": []}}}",
	                      err, sizeof(err)), 0);
	assert_int_equal(b->nxid_fail, 0);
	assert_null(b->xid_fail);
}

static void
test_config_errors(void **state)
{
	struct fix *x = *state;
	char err[256];

	assert_int_equal(load(&x->cfg, "{\"check\": {\"boards\": {\"nvml_library\": "
	                      "\"libnvidia-ml.so.1\"}}}", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "cfg.json: check.boards.nvml_library: expected an absolute path, "
	                         "got \"libnvidia-ml.so.1\"");
	assert_int_equal(load(&x->cfg, "{\"check\": {\"boards\": {\"xid_fail\": [79, \"48\"]}}}",
	                      err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "cfg.json: check.boards.xid_fail[1]: expected a non-negative "
	                         "integer, got \"48\"");
	assert_int_equal(load(&x->cfg, "{\"check\": {\"boards\": {\"xid_fail\": 79}}}",
	                      err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "expected an array of integers, got 79"));
	assert_int_equal(load(&x->cfg, "{\"check\": {\"boards\": {\"throttle\": \"maybe\"}}}",
	                      err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "check.boards.throttle: expected one of"));
	assert_int_equal(load(&x->cfg, "{\"check\": {\"boards\": {\"temperature_margin_c\": 500}}}",
	                      err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "out of range (at most 200)"));
	assert_int_equal(load(&x->cfg, "{\"check\": {\"boards\": {\"xids\": [1]}}}",
	                      err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "check.boards.xids: unknown key (valid: enabled, "));
}

/* ---- gathering through the fake libraries ---------------------------------- */

static void
script(const struct fix *x, const char *text)
{
	char tmp[256];
	FILE *fp;

	/* Whole or not at all: the monitor's child reads it meanwhile. */
	snprintf(tmp, sizeof(tmp), "%s.new", x->script);
	fp = fopen(tmp, "w");
	assert_non_null(fp);
	fputs(text, fp);
	assert_int_equal(fclose(fp), 0);
	assert_int_equal(rename(tmp, x->script), 0);
}

static void
use_fakes(struct fix *x)
{
	x->cfg.boards.nvml_library = strdup(NVML_FAKE);
	x->cfg.boards.rocm_smi_library = strdup(RSMI_FAKE);
	x->cfg.boards.cndev_library = strdup(CNDEV_FAKE);
	assert_non_null(x->cfg.boards.nvml_library);
	assert_non_null(x->cfg.boards.rocm_smi_library);
	assert_non_null(x->cfg.boards.cndev_library);
}

static void
gather_judge(struct fix *x)
{
	memset(x->now, 0, sizeof(*x->now));
	assert_int_equal(vhealth_gather(&x->cfg, x->slots, x->nslots, x->live, x->now), 0);
	judge(x, false);
}

static void
test_gather(void **state)
{
	struct fix *x = *state;

	use_fakes(x);
	set_slot(&x->slots[2], 2, SLOT_VENDOR_AMD, "0000:c1:00.0");
	x->nslots = 3;
	script(x, "nvidia 0 bus " BUS0 "\n"
	          "nvidia 0 remap.pending 1\n"
	          "nvidia 0 remap.uncorrected 1\n"
	          "nvidia 1 bus " BUS1 "\n"
	          "nvidia 1 recovery reset\n"
	          "nvidia 1 throttle hw_slowdown\n"
	          "amd 0 bus 0000:c1:00.0\n"
	          "amd 0 ras.umc 0 4\n");
	gather_judge(x);
	assert_true(x->now->asked[VENDOR_NVML]);
	assert_true(x->now->asked[VENDOR_RSMI]);
	/* No Cambricon slot: CNDev is not asked. */
	assert_false(x->now->asked[VENDOR_CNDEV]);
	assert_int_equal(x->now->rc[VENDOR_NVML], 0);
	assert_int_equal(x->n, 4);
	assert_int_equal(find(x, "row-remap", BUS0)->verdict, VERDICT_FAIL);
	assert_int_equal(find(x, "recovery", BUS1)->verdict, VERDICT_FAIL);
	assert_int_equal(find(x, "throttle", BUS1)->verdict, VERDICT_WARN);
	assert_int_equal(find(x, "ras", "0000:c1:00.0/umc")->verdict, VERDICT_FAIL);

	/* Board 1 falls off the bus: named by its slot's bus id, which
	 * NVML finds lost (nvmlDeviceGetHandleByPciBusId_v2). */
	script(x, "nvidia 0 bus " BUS0 "\nnvidia 1 bus " BUS1 "\nnvidia 1 lost 1\n"
	          "amd 0 bus 0000:c1:00.0\n");
	gather_judge(x);
	assert_int_equal(x->n, 1);
	assert_int_equal(find(x, "board", BUS1)->verdict, VERDICT_FAIL);
}

static void
test_gather_absent(void **state)
{
	struct fix *x = *state;
	char path[256];

	/* No library where the site says: nothing to report, and nothing
	 * asked of vendors the node has no boards of. */
	snprintf(path, sizeof(path), "%s/libnvidia-ml.so.1", x->dir);
	x->cfg.boards.nvml_library = strdup(path);
	assert_non_null(x->cfg.boards.nvml_library);
	gather_judge(x);
	assert_int_equal(x->now->rc[VENDOR_NVML], -ENOENT);
	assert_int_equal(x->n, 0);
	x->nslots = 0;
	gather_judge(x);
	assert_false(x->now->asked[VENDOR_NVML]);
	x->nslots = 2;
	/* Another sysfs root: a library the configuration names is asked,
	 * the default one is not. */
	x->live = false;
	gather_judge(x);
	assert_true(x->now->asked[VENDOR_NVML]);
	free(x->cfg.boards.nvml_library);
	x->cfg.boards.nvml_library = NULL;
	gather_judge(x);
	assert_false(x->now->asked[VENDOR_NVML]);
	x->live = true;
	x->cfg.boards.enabled = false;
	gather_judge(x);
	assert_false(x->now->asked[VENDOR_NVML]);
}

static void
test_gather_hang(void **state)
{
	struct fix *x = *state;
	double t0;

	/* A wedged board hangs nvmlInit: the child is cut off. */
	use_fakes(x);
	x->cfg.check_timeout_s = 0.5;
	script(x, "nvidia - hang init\nnvidia 0 bus " BUS0 "\n");
	t0 = now();
	gather_judge(x);
	assert_true(now() - t0 < 3);
	assert_int_equal(x->now->rc[VENDOR_NVML], -ETIMEDOUT);
	assert_int_equal(x->n, 1);
	assert_string_equal(x->f[0].evidence, "NVML: did not answer within 0.5 s");
	reap_orphans();
}

/* ---- the monitor ------------------------------------------------------------- */

/* Take from M until a finding WHAT appears (or, WHAT NULL, until facts
 * came), for up to about 5 s. */
static void
take_until(struct fix *x, struct vhealth_monitor *m, const char *what)
{
	for (int i = 0; i < 100; i++) {
		struct pollfd p = { .fd = vhealth_monitor_fd(m), .events = POLLIN };

		(void)poll(&p, 1, 50);
		free(x->f);
		x->f = NULL;
		assert_int_equal(vhealth_monitor_take(m, &x->f, &x->n), 0);
		if (!what && vhealth_monitor_facts(m))
			return;
		for (size_t k = 0; what && k < x->n; k++)
			if (strcmp(x->f[k].what, what) == 0)
				return;
	}
	fail_msg("no %s within 5 s", what ? what : "facts");
}

static void
test_monitor(void **state)
{
	struct fix *x = *state;
	struct vhealth_monitor *m = NULL;
	const char *err = NULL;
	const struct finding *f;

	int p[2];
	ssize_t r = -1;
	char c;

	use_fakes(x);
	script(x, "nvidia 0 bus " BUS0 "\nnvidia 1 bus " BUS1 "\nnvidia 1 event xid 13\n");
	assert_int_equal(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
	assert_int_equal(vhealth_monitor_start(&x->cfg.boards, 0.5, x->slots, x->nslots, false, 0.2, &m), 0);
	/* The child keeps none of the agent's descriptors: this pipe's
	 * reader sees EOF once the agent closes the writer. */
	close(p[1]);
	for (int i = 0; i < 200 && r != 0; i++) {
		r = read(p[0], &c, 1);
		if (r != 0)
			usleep(10000);
	}
	assert_int_equal(r, 0);
	close(p[0]);
	assert_true(vhealth_monitor_pid(m) > 0);
	assert_int_equal(getpgid(vhealth_monitor_pid(m)), vhealth_monitor_pid(m));
	take_until(x, m, NULL);
	assert_int_equal(x->n, 0);
	assert_int_equal(vhealth_monitor_facts(m)->lib[VENDOR_NVML].nboards, 2);
	/* Registered: the XID from before is not reported. */
	for (int i = 0; i < 100 && !vhealth_monitor_events(m, &err); i++)
		take_until(x, m, NULL);
	assert_true(vhealth_monitor_events(m, &err));
	assert_string_equal(err, "");

	/* XID 79 while the job runs. */
	script(x, "nvidia 0 bus " BUS0 "\nnvidia 1 bus " BUS1 "\nnvidia 1 event xid 13\n"
	          "nvidia 1 event xid 79\n");
	take_until(x, m, "xid");
	f = find(x, "xid", BUS1);
	assert_int_equal(f->verdict, VERDICT_FAIL);
	assert_string_equal(f->evidence, "XID 79 (GPU has fallen off the bus)");

	/* Correctable errors rise, a remap waits for a reset. */
	script(x, "nvidia 0 bus " BUS0 "\nnvidia 0 ecc.volatile.corrected 6\n"
	          "nvidia 0 remap.pending 1\n"
	          "nvidia 1 bus " BUS1 "\nnvidia 1 event xid 13\nnvidia 1 event xid 79\n");
	take_until(x, m, "row-remap");
	assert_string_equal(find(x, "ecc", BUS0)->evidence,
	                    "correctable ECC errors rose from 0 to 6");
	assert_int_equal(find(x, "row-remap", BUS0)->verdict, VERDICT_FAIL);
	/* Reported again while it holds. */
	assert_int_equal(find(x, "xid", BUS1)->verdict, VERDICT_FAIL);

	/* NVML hangs on a wedged board: the facts go stale. */
	script(x, "nvidia - hang read\nnvidia 0 bus " BUS0 "\nnvidia 1 bus " BUS1 "\n");
	take_until(x, m, "board");
	f = find(x, "board", "nvml");
	assert_int_equal(f->verdict, VERDICT_WARN);
	assert_non_null(strstr(f->evidence, "NVML has not answered for"));
	vhealth_monitor_free(m);
}

/* ---- NVML that fails: said, never silent ------------------------------------ */

#define BOARDS "nvidia 0 bus " BUS0 "\n" "nvidia 1 bus " BUS1 "\n"

/* The finding whose evidence holds TEXT, or NULL. */
static const struct finding *
find_text(const struct fix *x, const char *text)
{
	for (size_t i = 0; i < x->n; i++)
		if (strstr(x->f[i].evidence, text))
			return &x->f[i];
	return NULL;
}

/* Take from M until a finding whose evidence holds TEXT, for up to ~10 s. */
static const struct finding *
take_until_text(struct fix *x, struct vhealth_monitor *m, const char *text)
{
	for (int i = 0; i < 200; i++) {
		struct pollfd p = { .fd = vhealth_monitor_fd(m), .events = POLLIN };

		(void)poll(&p, 1, 50);
		free(x->f);
		x->f = NULL;
		assert_int_equal(vhealth_monitor_take(m, &x->f, &x->n), 0);
		if (find_text(x, text))
			return find_text(x, text);
	}
	fail_msg("no finding saying \"%s\" within 10 s", text);
	return NULL;
}

static struct vhealth_monitor *
monitor(struct fix *x, double interval_s)
{
	struct vhealth_monitor *m = NULL;

	assert_int_equal(vhealth_monitor_start(&x->cfg.boards, 0.5, x->slots, x->nslots, false,
	                                       interval_s, &m), 0);
	return m;
}

/* Until the child has said whether it watches events. */
static void
take_until_registered(struct fix *x, struct vhealth_monitor *m)
{
	const char *err = NULL;

	for (int i = 0; i < 100; i++) {
		take_until(x, m, NULL);
		if (vhealth_monitor_events(m, &err) || strcmp(err, "not known yet") != 0)
			return;
	}
	fail_msg("the monitor never said whether it watches events");
}

/*
 * Registration refused, with each answer nvml.h allows: a warning that
 * names NVML's reason, once in the log; then XIDs are known by what the
 * readings show (the recovery action the driver sets after XID 119).
 */
static void
test_monitor_events_refused(void **state)
{
	struct fix *x = *state;
	static const struct { unsigned code; const char *text; } refusals[] = {
		{ NVML_E_NO_PERMISSION, "Insufficient Permissions (4)" },
		{ NVML_E_NOT_SUPPORTED, "Not Supported (3)" },
		{ NVML_E_GPU_IS_LOST, "GPU is lost (15)" },
		{ NVML_E_UNINITIALIZED, "Uninitialized (1)" },
		{ NVML_E_UNKNOWN, "Unknown Error (999)" },
	};
	char text[256];

	use_fakes(x);
	for (size_t i = 0; i < sizeof(refusals) / sizeof(refusals[0]); i++) {
		struct vhealth_monitor *m;
		const struct finding *f;
		const char *err = NULL, *news;

		snprintf(text, sizeof(text), BOARDS "nvidia - error nvmlDeviceRegisterEvents %u\n",
		         refusals[i].code);
		script(x, text);
		m = monitor(x, 0.2);
		snprintf(text, sizeof(text), "nvmlDeviceRegisterEvents failed on " BUS0 ": %s",
		         refusals[i].text);
		f = take_until_text(x, m, text);
		assert_string_equal(f->what, "events");
		assert_string_equal(f->device, "nvml");
		assert_int_equal(f->verdict, VERDICT_WARN);
		assert_non_null(strstr(f->evidence, "XID events are not watched: "));
		assert_false(vhealth_monitor_events(m, &err));
		assert_non_null(strstr(err, text));
		/* Said once in the log. */
		news = vhealth_monitor_events_news(m);
		assert_non_null(news);
		assert_non_null(strstr(news, text));
		assert_null(vhealth_monitor_events_news(m));
		if (i == 0) {
			/* XID 119 comes unseen; the recovery action the driver
			 * sets with it is read all the same. */
			script(x, BOARDS "nvidia - error nvmlDeviceRegisterEvents 4\n"
			          "nvidia 1 event xid 119\nnvidia 1 recovery reset\n");
			take_until(x, m, "recovery");
			assert_int_equal(find(x, "recovery", BUS1)->verdict, VERDICT_FAIL);
			assert_null(find_text(x, "XID 119"));
		}
		vhealth_monitor_free(m);
	}

	/* One board refuses: the warning names it; the other is watched. */
	script(x, BOARDS "nvidia 1 error nvmlDeviceRegisterEvents 4\n");
	{
		struct vhealth_monitor *m = monitor(x, 0.2);
		const struct finding *f = take_until_text(x, m, "XID events are not watched");

		assert_string_equal(f->device, BUS1);
		assert_non_null(strstr(f->evidence, "on every board"));
		assert_true(vhealth_monitor_events(m, NULL));
		script(x, BOARDS "nvidia 1 error nvmlDeviceRegisterEvents 4\nnvidia 0 event xid 79\n");
		take_until(x, m, "xid");
		assert_int_equal(find(x, "xid", BUS0)->verdict, VERDICT_FAIL);
		vhealth_monitor_free(m);
	}
}

/* A wait that fails later: said with NVML's words; the readings go on. */
static void
test_monitor_wait_fails(void **state)
{
	struct fix *x = *state;
	struct vhealth_monitor *m;
	const struct finding *f;
	const char *news;

	use_fakes(x);
	script(x, BOARDS);
	m = monitor(x, 0.2);
	take_until_registered(x, m);
	assert_true(vhealth_monitor_events(m, NULL));
	assert_null(vhealth_monitor_events_news(m));
	script(x, BOARDS "nvidia - error nvmlEventSetWait_v2 999\n");
	f = take_until_text(x, m, "nvmlEventSetWait_v2 failed: Unknown Error (999)");
	assert_string_equal(f->what, "events");
	assert_string_equal(f->device, "nvml");
	assert_int_equal(f->verdict, VERDICT_WARN);
	assert_false(vhealth_monitor_events(m, NULL));
	news = vhealth_monitor_events_news(m);
	assert_non_null(news);
	assert_string_equal(news, "nvmlEventSetWait_v2 failed: Unknown Error (999)");
	script(x, BOARDS "nvidia 0 remap.pending 1\n");
	take_until(x, m, "row-remap");
	/* Still said while it holds. */
	assert_non_null(find_text(x, "XID events are not watched"));
	vhealth_monitor_free(m);
}

/* An XID while a reading waits seconds on a slow board comes at once. */
static void
test_monitor_slow_reading(void **state)
{
	struct fix *x = *state;
	struct vhealth_monitor *m;
	double t0, waited;

	use_fakes(x);
	script(x, BOARDS);
	m = monitor(x, 0.05);
	take_until_registered(x, m);
	script(x, BOARDS "nvidia 0 slow nvmlDeviceGetMemoryInfo 3000\n");
	/* A reading starts every 50 ms: one is inside the slow call now. */
	usleep(500000);
	t0 = now();
	script(x, BOARDS "nvidia 0 slow nvmlDeviceGetMemoryInfo 3000\nnvidia 1 event xid 79\n");
	take_until(x, m, "xid");
	waited = now() - t0;
	assert_int_equal(find(x, "xid", BUS1)->verdict, VERDICT_FAIL);
	if (waited > 1.5)
		fail_msg("the XID waited %.1f s behind the reading", waited);
	vhealth_monitor_free(m);
}

/* A board that falls off the bus keeps its bus id: in the readings, in
 * the wait's "lost" answer, and in the XID that comes after. */
static void
test_monitor_lost_named(void **state)
{
	struct fix *x = *state;
	struct vhealth_monitor *m;

	use_fakes(x);
	script(x, BOARDS);
	m = monitor(x, 0.2);
	take_until_registered(x, m);
	script(x, BOARDS "nvidia 1 lost 1\n");
	take_until_text(x, m, "nvmlEventSetWait answered NVML_ERROR_GPU_IS_LOST");
	take_until_text(x, m, "nvmlDeviceGetHandleByIndex_v2 answered NVML_ERROR_GPU_IS_LOST");
	assert_int_equal(find(x, "board", BUS1)->verdict, VERDICT_FAIL);
	script(x, BOARDS "nvidia 1 lost 1\nnvidia 1 event xid 79\n");
	take_until(x, m, "xid");
	assert_string_equal(find(x, "xid", BUS1)->evidence, "XID 79 (GPU has fallen off the bus)");
	for (size_t i = 0; i < x->n; i++)
		if (strncmp(x->f[i].device, "nvml", 4) == 0)
			fail_msg("%s %s: %s", x->f[i].what, x->f[i].device, x->f[i].evidence);
	vhealth_monitor_free(m);
}

/*
 * Every NVML call that the inspection and the monitor make, made to fail
 * in turn: a finding names it, in `vigil check` (the gather) and in the
 * running job's monitor alike.  The fake library traces each call it
 * answers: a call vigil makes that is not in this list fails the test.
 */
static const struct {
	const char *call;
	const char *line;      /* what makes it fail */
	bool old;              /* answered by the older driver's library */
	bool events;           /* the monitor's alone */
} failing[] = {
	{ "nvmlInit_v2", "nvidia - error nvmlInit_v2 999", false, false },
	{ "nvmlSystemGetDriverVersion", "nvidia - error nvmlSystemGetDriverVersion 999", false, false },
	{ "nvmlDeviceGetCount_v2", "nvidia - error nvmlDeviceGetCount_v2 999", false, false },
	{ "nvmlDeviceGetHandleByIndex_v2", "nvidia 0 error nvmlDeviceGetHandleByIndex_v2 999",
	  false, false },
	{ "nvmlDeviceGetHandleByPciBusId_v2", "nvidia 0 error nvmlDeviceGetPciInfo_v3 999\n"
	  "nvidia - error nvmlDeviceGetHandleByPciBusId_v2 999", false, false },
	{ "nvmlDeviceGetPciInfo_v3", "nvidia 0 error nvmlDeviceGetPciInfo_v3 999", false, false },
	{ "nvmlDeviceGetName", "nvidia 0 error nvmlDeviceGetName 999", false, false },
	{ "nvmlDeviceGetEccMode", "nvidia 0 error nvmlDeviceGetEccMode 999", false, false },
	{ "nvmlDeviceGetTotalEccErrors", "nvidia 0 error nvmlDeviceGetTotalEccErrors 999",
	  false, false },
	{ "nvmlDeviceGetRetiredPages", "nvidia 0 error nvmlDeviceGetRetiredPages 999", false, false },
	{ "nvmlDeviceGetRetiredPagesPendingStatus",
	  "nvidia 0 error nvmlDeviceGetRetiredPagesPendingStatus 999", false, false },
	{ "nvmlDeviceGetRemappedRows", "nvidia 0 error nvmlDeviceGetRemappedRows 999", false, false },
	{ "nvmlDeviceGetFieldValues", "nvidia 0 error nvmlDeviceGetFieldValues 999", false, false },
	{ "nvmlDeviceGetCurrentClocksEventReasons",
	  "nvidia 0 error nvmlDeviceGetCurrentClocksEventReasons 999", false, false },
	{ "nvmlDeviceGetCurrentClocksThrottleReasons",
	  "nvidia 0 error nvmlDeviceGetCurrentClocksThrottleReasons 999", true, false },
	{ "nvmlDeviceGetTemperatureV", "nvidia 0 error nvmlDeviceGetTemperatureV 999", false, false },
	{ "nvmlDeviceGetTemperature", "nvidia 0 error nvmlDeviceGetTemperature 999", true, false },
	{ "nvmlDeviceGetTemperatureThreshold", "nvidia 0 error nvmlDeviceGetTemperatureThreshold 999",
	  false, false },
	{ "nvmlDeviceGetNvLinkState", "nvidia 0 error nvmlDeviceGetNvLinkState 999", false, false },
	{ "nvmlDeviceGetNvLinkErrorCounter", "nvidia 0 error nvmlDeviceGetNvLinkErrorCounter 999",
	  false, false },
	{ "nvmlDeviceGetUtilizationRates", "nvidia 0 error nvmlDeviceGetUtilizationRates 999",
	  false, false },
	{ "nvmlDeviceGetMemoryInfo", "nvidia 0 error nvmlDeviceGetMemoryInfo 999", false, false },
	{ "nvmlDeviceGetPowerUsage", "nvidia 0 error nvmlDeviceGetPowerUsage 999", false, false },
	{ "nvmlEventSetCreate", "nvidia - error nvmlEventSetCreate 999", false, true },
	{ "nvmlDeviceRegisterEvents", "nvidia 0 error nvmlDeviceRegisterEvents 999", false, true },
	{ "nvmlEventSetWait_v2", "nvidia - error nvmlEventSetWait_v2 999", false, true },
};

/* Called, but their failure changes nothing: the library is being let go. */
static const char *const unheeded[] = { "nvmlShutdown", "nvmlEventSetFree" };

static bool
listed(const char *call)
{
	for (size_t i = 0; i < sizeof(failing) / sizeof(failing[0]); i++)
		if (strcmp(failing[i].call, call) == 0)
			return true;
	for (size_t i = 0; i < sizeof(unheeded) / sizeof(unheeded[0]); i++)
		if (strcmp(unheeded[i], call) == 0)
			return true;
	return false;
}

static void
test_each_call_fails(void **state)
{
	struct fix *x = *state;
	char text[512], trace[256], line[128];
	FILE *fp;

	snprintf(trace, sizeof(trace), "%s/trace", x->dir);
	x->cfg.boards.nvml_library = strdup(NVML_FAKE);
	for (size_t i = 0; i < sizeof(failing) / sizeof(failing[0]); i++) {
		struct vhealth_monitor *m;

		free(x->cfg.boards.nvml_library);
		x->cfg.boards.nvml_library = strdup(failing[i].old ? NVML_OLD : NVML_FAKE);
		assert_non_null(x->cfg.boards.nvml_library);
		snprintf(text, sizeof(text), "nvidia - trace %s\n" BOARDS "nvidia 0 nvlinks 2\n%s\n",
		         trace, failing[i].line);
		script(x, text);
		if (!failing[i].events) {
			gather_judge(x);
			if (!find_text(x, failing[i].call))
				fail_msg("vigil check said nothing of %s failing (%zu findings)",
				         failing[i].call, x->n);
		}
		m = monitor(x, 0.2);
		take_until_text(x, m, failing[i].call);
		vhealth_monitor_free(m);
	}
	/* Every call made is listed, and every listed call was made. */
	fp = fopen(trace, "r");
	assert_non_null(fp);
	while (fgets(line, sizeof(line), fp)) {
		line[strcspn(line, "\n")] = '\0';
		if (!listed(line))
			fail_msg("%s is called, but not made to fail here", line);
	}
	for (size_t i = 0; i < sizeof(failing) / sizeof(failing[0]); i++) {
		bool seen = false;

		rewind(fp);
		while (!seen && fgets(line, sizeof(line), fp))
			seen = strncmp(line, failing[i].call, strlen(failing[i].call)) == 0 &&
			       line[strlen(failing[i].call)] == '\n';
		if (!seen)
			fail_msg("%s is never called", failing[i].call);
	}
	fclose(fp);
	unlink(trace);
}

static void
test_monitor_nothing(void **state)
{
	struct fix *x = *state;
	struct vhealth_monitor *m = (struct vhealth_monitor *)x;

	x->nslots = 0;
	assert_int_equal(vhealth_monitor_start(&x->cfg.boards, 2, x->slots, 0, true, 1, &m), -ENOENT);
	assert_null(m);
	x->nslots = 2;
	assert_int_equal(vhealth_monitor_start(&x->cfg.boards, 2, x->slots, 2, true, 0, &m), -EINVAL);
	vhealth_monitor_free(NULL);
}

int
main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_healthy),
		T(test_lost),
		T(test_recovery),
		T(test_ecc),
		T(test_ecc_rising),
		T(test_pages_and_rows),
		T(test_throttle),
		T(test_temperature),
		T(test_nvlink),
		T(test_amd),
		T(test_cndev_health),
		T(test_library_trouble),
		T(test_failed_calls),
		T(test_extra_board),
		T(test_events),
		T(test_json),
		T(test_config),
		T(test_config_errors),
		T(test_gather),
		T(test_gather_absent),
		T(test_gather_hang),
		T(test_monitor),
		T(test_monitor_events_refused),
		T(test_monitor_wait_fails),
		T(test_monitor_slow_reading),
		T(test_monitor_lost_named),
		T(test_each_call_fails),
		T(test_monitor_nothing),
	};

	/* Children killed on a timeout come back to us, not to init. */
	(void)prctl(PR_SET_CHILD_SUBREAPER, 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
