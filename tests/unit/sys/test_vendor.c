/*
 * test_vendor.c - gathering board facts from NVML, ROCm SMI and CNDev
 * through the real dlopen() path, against the fake libraries of
 * tests/fakevendor (built from the vendors' documented contracts: nvml.h,
 * rocm_smi.h, cndev.h; the real libraries need the boards).
 */
#include "autoconf.h"

#include "../vigil_test.h"
#include "../scratch.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sys/vendor.h"
#include "sys/vendor_abi.h"

#define NVML_FAKE FAKEVENDOR_DIR "/libnvidia-ml.so.1"
#define NVML_OLD FAKEVENDOR_DIR "/old/libnvidia-ml.so.1"
#define RSMI_FAKE FAKEVENDOR_DIR "/librocm_smi64.so.1"
#define CNDEV_FAKE FAKEVENDOR_DIR "/libcndev.so"

struct fix {
	char dir[128];
	char script[192];
	struct vendor_facts *f;
	struct vendor_lib *lib;
};

static int
setup(void **state)
{
	struct fix *x = calloc(1, sizeof(*x));

	if (!x || make_scratch_dir(x->dir, sizeof(x->dir), "vendor") < 0)
		return -1;
	snprintf(x->script, sizeof(x->script), "%s/script", x->dir);
	x->f = calloc(1, sizeof(*x->f));
	if (!x->f || setenv("VIGIL_FAKE_VENDOR", x->script, 1) < 0)
		return -1;
	*state = x;
	return 0;
}

static int
teardown(void **state)
{
	struct fix *x = *state;
	char p[256];

	vendor_close(x->lib);
	unlink(x->script);
	snprintf(p, sizeof(p), "%s/copy.so", x->dir);
	unlink(p);
	rmdir(x->dir);
	free(x->f);
	free(x);
	unsetenv("VIGIL_FAKE_VENDOR");
	return 0;
}

static void
script(const struct fix *x, const char *text)
{
	FILE *fp = fopen(x->script, "w");

	assert_non_null(fp);
	fputs(text, fp);
	assert_int_equal(fclose(fp), 0);
}

/* Open KIND's fake library and read every board. */
static void
open_read(struct fix *x, enum vendor_kind kind, const char *path)
{
	assert_int_equal(vendor_open(kind, path, &x->lib, x->f), 0);
	assert_non_null(x->lib);
	assert_int_equal(vendor_read(x->lib, x->f), 0);
}

/* ---- NVML -------------------------------------------------------------- */

static void
test_nvml_healthy(void **state)
{
	struct fix *x = *state;
	const struct vendor_board *b;

	script(x, "nvidia - driver 550.54.15\n"
	          "nvidia 0 bus 0000:3b:00.0\n"
	          "nvidia 0 name NVIDIA H100 80GB HBM3\n"
	          "nvidia 0 utilization 93\n"
	          "nvidia 0 memory.used 42949672960\n"
	          "nvidia 0 memory.total 85899345920\n"
	          "nvidia 0 power 612345\n"
	          "nvidia 0 temperature 61\n"
	          "nvidia 1 bus 0000:5e:00.0\n");
	open_read(x, VENDOR_NVML, NVML_FAKE);
	assert_string_equal(x->f->library, NVML_FAKE);
	assert_string_equal(x->f->version, "550.54.15");
	assert_int_equal(x->f->count, 2);
	assert_int_equal(x->f->nboards, 2);
	b = &x->f->boards[0];
	/* NVML's "00000000:3B:00.0" in the form sysfs uses. */
	assert_string_equal(b->bus_id, "0000:3b:00.0");
	assert_string_equal(b->name, "NVIDIA H100 80GB HBM3");
	assert_false(b->lost);
	assert_false(b->reset_required);
	assert_int_equal(b->ecc_enabled, 1);
	assert_int_equal(b->ecc_volatile[0], 0);
	assert_int_equal(b->ecc_volatile[1], 0);
	assert_int_equal(b->retired[1], 0);
	assert_int_equal(b->retired_pending, 0);
	assert_int_equal(b->remap_pending, 0);
	/* Not offered by this "driver": left unknown, not zero. */
	assert_int_equal(b->recovery, -1);
	assert_int_equal(b->link[0], -1);
	assert_int_equal(b->throttle, 0);
	assert_int_equal(b->temperature, 61);
	assert_int_equal(b->slowdown, 90);
	assert_int_equal(b->utilization, 93);
	assert_int_equal(b->memory_used, 42949672960LL);
	assert_int_equal(b->memory_total, 85899345920LL);
	assert_int_equal(b->power_mw, 612345);
	assert_string_equal(x->f->boards[1].bus_id, "0000:5e:00.0");
	assert_int_equal(x->f->boards[1].index, 1);
}

static void
test_nvml_faults(void **state)
{
	struct fix *x = *state;
	const struct vendor_board *b;

	script(x, "nvidia 0 bus 0000:04:00.0\n"
	          "nvidia 0 ecc.volatile.corrected 12\n"
	          "nvidia 0 ecc.volatile.uncorrected 2\n"
	          "nvidia 0 ecc.aggregate.uncorrected 7\n"
	          "nvidia 0 retired.dbe 300\n"     /* more than a query's buffer */
	          "nvidia 0 retired.pending 1\n"
	          "nvidia 0 remap.uncorrected 3\n"
	          "nvidia 0 remap.pending 1\n"
	          "nvidia 0 remap.failure 1\n"
	          "nvidia 0 recovery reset\n"
	          "nvidia 0 throttle sw_power,hw_thermal,power_brake\n"
	          "nvidia 0 temperature 88\n"
	          "nvidia 0 slowdown 87\n"
	          "nvidia 1 bus 0000:07:00.0\n"
	          "nvidia 1 lost 1\n"
	          "nvidia 2 bus 0000:0a:00.0\n"
	          "nvidia 2 recovery reboot\n"
	          "nvidia 2 error nvmlDeviceGetTemperatureV 16\n"
	          "nvidia 2 nvlinks 4\n"
	          "nvidia 2 nvlink.2 down\n"
	          "nvidia 2 nvlink.1.crc_flit 17\n");
	open_read(x, VENDOR_NVML, NVML_FAKE);
	assert_int_equal(x->f->nboards, 3);
	b = &x->f->boards[0];
	assert_int_equal(b->ecc_volatile[0], 12);
	assert_int_equal(b->ecc_volatile[1], 2);
	assert_int_equal(b->ecc_aggregate[1], 7);
	assert_int_equal(b->retired[1], 300);
	assert_int_equal(b->retired_pending, 1);
	assert_int_equal(b->remapped[1], 3);
	assert_int_equal(b->remap_pending, 1);
	assert_int_equal(b->remap_failure, 1);
	assert_int_equal(b->recovery, VENDOR_RECOVERY_RESET);
	assert_int_equal(b->throttle, (long long)(NVML_CLOCKS_SW_POWER_CAP |
	                 NVML_CLOCKS_HW_THERMAL_SLOWDOWN | NVML_CLOCKS_HW_POWER_BRAKE));
	assert_int_equal(b->temperature, 88);
	assert_int_equal(b->slowdown, 87);

	/* Fallen off the bus: the handle says so, nothing more is asked. */
	b = &x->f->boards[1];
	assert_true(b->lost);
	assert_string_equal(b->lost_call, "nvmlDeviceGetHandleByIndex_v2");
	assert_string_equal(b->bus_id, "");
	assert_int_equal(b->temperature, -1);

	b = &x->f->boards[2];
	assert_int_equal(b->recovery, VENDOR_RECOVERY_REBOOT);
	assert_true(b->reset_required);
	assert_false(b->lost);
	assert_string_equal(b->lost_call, "nvmlDeviceGetTemperatureV");
	assert_int_equal(b->link[0], 1);
	assert_int_equal(b->link[2], 0);
	assert_int_equal(b->link[3], 1);
	/* Past the board's last link. */
	assert_int_equal(b->link[4], -1);
	assert_int_equal(b->link_errors[1][2], 17);
	assert_int_equal(b->link_errors[1][0], 0);
	assert_int_equal(b->link_errors[4][2], -1);
}

static void
test_nvml_absent_board(void **state)
{
	struct fix *x = *state;

	/* A board gone from the enumeration: NVML counts one board. */
	script(x, "nvidia 0 bus 0000:04:00.0\nnvidia 0 absent 1\nnvidia 1 bus 0000:07:00.0\n");
	open_read(x, VENDOR_NVML, NVML_FAKE);
	assert_int_equal(x->f->count, 1);
	assert_int_equal(x->f->nboards, 1);
	assert_string_equal(x->f->boards[0].bus_id, "0000:07:00.0");
}

static void
test_nvml_events(void **state)
{
	struct fix *x = *state;
	struct vendor_event ev;
	char err[200] = "";

	/* An XID before registration is not recorded (nvml.h). */
	script(x, "nvidia 0 bus 0000:04:00.0\nnvidia 0 event xid 13\n"
	          "nvidia 1 bus 0000:07:00.0\nnvidia 1 ecc_mode 0\n");
	open_read(x, VENDOR_NVML, NVML_FAKE);
	assert_int_equal(vendor_events_open(x->lib, err, sizeof(err)), 0);
	assert_int_equal(vendor_events_wait(x->lib, 30, &ev, NULL, 0), -ETIMEDOUT);

	script(x, "nvidia 0 bus 0000:04:00.0\nnvidia 0 event xid 13\nnvidia 0 event dbe\n"
	          "nvidia 1 bus 0000:07:00.0\nnvidia 1 ecc_mode 0\nnvidia 1 event xid 79\n"
	          "nvidia 1 event dbe\n");
	assert_int_equal(vendor_events_wait(x->lib, 1000, &ev, NULL, 0), 0);
	assert_int_equal(ev.kind, VENDOR_EVENT_DBE);
	assert_int_equal(ev.board, 0);
	assert_string_equal(ev.bus_id, "0000:04:00.0");
	assert_int_equal(vendor_events_wait(x->lib, 1000, &ev, NULL, 0), 0);
	assert_int_equal(ev.kind, VENDOR_EVENT_XID);
	assert_int_equal(ev.xid, 79);
	assert_int_equal(ev.board, 1);
	assert_string_equal(ev.bus_id, "0000:07:00.0");
	/* Board 1 has no ECC: registered for XIDs only, its "dbe" never comes. */
	assert_int_equal(vendor_events_wait(x->lib, 30, &ev, NULL, 0), -ETIMEDOUT);

	script(x, "nvidia 0 bus 0000:04:00.0\nnvidia 1 bus 0000:07:00.0\nnvidia 1 lost 1\n");
	assert_int_equal(vendor_events_wait(x->lib, 1000, &ev, NULL, 0), 0);
	assert_int_equal(ev.kind, VENDOR_EVENT_LOST);
}

/* nvmlDeviceGetTemperatureV where the library has it (the deprecated call
 * is then never made: its "reset required" is not seen), the old call
 * where it has not, or where the driver refuses the struct's version. */
static void
test_nvml_temperature_v(void **state)
{
	struct fix *x = *state;
	const char *text = "nvidia 0 bus 0000:04:00.0\nnvidia 0 temperature 61\n"
	                   "nvidia 0 error nvmlDeviceGetTemperature 16\n";

	script(x, text);
	open_read(x, VENDOR_NVML, NVML_FAKE);
	assert_int_equal(x->f->boards[0].temperature, 61);
	assert_false(x->f->boards[0].reset_required);
	assert_string_equal(x->f->boards[0].failed, "");
	vendor_close(x->lib);

	open_read(x, VENDOR_NVML, NVML_OLD);
	assert_int_equal(x->f->boards[0].temperature, -1);
	assert_true(x->f->boards[0].reset_required);
	assert_string_equal(x->f->boards[0].lost_call, "nvmlDeviceGetTemperature");
	vendor_close(x->lib);

	script(x, "nvidia 0 bus 0000:04:00.0\nnvidia 0 temperature 62\n"
	          "nvidia 0 error nvmlDeviceGetTemperatureV 25\n");
	open_read(x, VENDOR_NVML, NVML_FAKE);
	assert_int_equal(x->f->boards[0].temperature, 62);
	assert_string_equal(x->f->boards[0].failed, "");
}

/* NVML 13.3's recovery action 5, and calls that fail otherwise than "not
 * supported": recorded with NVML's words, never taken for health. */
static void
test_nvml_failed_calls(void **state)
{
	struct fix *x = *state;
	const struct vendor_board *b;

	script(x, "nvidia 0 bus 0000:04:00.0\nnvidia 0 recovery imex\n"
	          "nvidia 0 error nvmlDeviceGetTotalEccErrors 999\n"
	          "nvidia 0 error nvmlDeviceGetPowerUsage 4\n"
	          "nvidia 0 error nvmlDeviceGetRemappedRows 3\n"
	          "nvidia 1 bus 0000:07:00.0\n"
	          "nvidia - error nvmlSystemGetDriverVersion 999\n");
	open_read(x, VENDOR_NVML, NVML_FAKE);
	b = &x->f->boards[0];
	assert_int_equal(b->recovery, VENDOR_RECOVERY_RECOVER_IMEX_DOMAIN);
	assert_int_equal(b->ecc_volatile[1], -1);
	assert_int_equal(b->remap_pending, -1);
	assert_string_equal(b->failed, "nvmlDeviceGetTotalEccErrors, nvmlDeviceGetPowerUsage");
	assert_string_equal(b->failed_why, "Unknown Error (999)");
	assert_string_equal(x->f->boards[1].failed, "");
	/* The driver version failed at the start: said by every read. */
	assert_string_equal(x->f->error, "nvmlSystemGetDriverVersion failed: Unknown Error (999)");
	assert_int_equal(vendor_read(x->lib, x->f), 0);
	assert_string_equal(x->f->error, "nvmlSystemGetDriverVersion failed: Unknown Error (999)");
}

/* A board that falls off the bus answers no call that names it: it keeps
 * the name the same library gave it before, or is looked up by the bus
 * ids the node should have. */
static void
test_nvml_lost_named(void **state)
{
	struct fix *x = *state;
	const char *expect[] = { "0000:04:00.0", "0000:07:00.0" };

	script(x, "nvidia 0 bus 0000:04:00.0\nnvidia 1 bus 0000:07:00.0\nnvidia 1 lost 1\n");
	assert_int_equal(vendor_open(VENDOR_NVML, NVML_FAKE, &x->lib, x->f), 0);
	vendor_expect(x->lib, expect, 2);
	assert_int_equal(vendor_read(x->lib, x->f), 0);
	assert_true(x->f->boards[1].lost);
	assert_string_equal(x->f->boards[1].bus_id, "0000:07:00.0");
	vendor_close(x->lib);
	x->lib = NULL;

	/* Named by an earlier read of the same library. */
	script(x, "nvidia 0 bus 0000:04:00.0\nnvidia 1 bus 0000:07:00.0\n");
	open_read(x, VENDOR_NVML, NVML_FAKE);
	script(x, "nvidia 0 bus 0000:04:00.0\nnvidia 0 error nvmlDeviceGetPciInfo_v3 999\n"
	          "nvidia 1 bus 0000:07:00.0\nnvidia 1 lost 1\n");
	assert_int_equal(vendor_read(x->lib, x->f), 0);
	assert_string_equal(x->f->boards[0].bus_id, "0000:04:00.0");
	assert_string_equal(x->f->boards[0].failed, "nvmlDeviceGetPciInfo_v3");
	assert_string_equal(x->f->boards[1].bus_id, "0000:07:00.0");
	vendor_close(x->lib);
	x->lib = NULL;

	/* No name to be had: the lookup fails, and says so. */
	script(x, "nvidia 0 bus 0000:04:00.0\nnvidia 0 error nvmlDeviceGetPciInfo_v3 999\n"
	          "nvidia - error nvmlDeviceGetHandleByPciBusId_v2 999\n");
	assert_int_equal(vendor_open(VENDOR_NVML, NVML_FAKE, &x->lib, x->f), 0);
	vendor_expect(x->lib, expect, 1);
	assert_int_equal(vendor_read(x->lib, x->f), 0);
	assert_string_equal(x->f->boards[0].bus_id, "");
	assert_string_equal(x->f->boards[0].failed,
	                    "nvmlDeviceGetPciInfo_v3, nvmlDeviceGetHandleByPciBusId_v2");
}

/* Registration refused with each answer nvml.h allows, on every board or
 * on one; the set made unusable (UNKNOWN); no set at all. */
static void
test_nvml_events_refused(void **state)
{
	struct fix *x = *state;
	static const struct { unsigned code; const char *text; } refusals[] = {
		{ NVML_E_NO_PERMISSION, "Insufficient Permissions (4)" },
		{ NVML_E_NOT_SUPPORTED, "Not Supported (3)" },
		{ NVML_E_GPU_IS_LOST, "GPU is lost (15)" },
		{ NVML_E_UNINITIALIZED, "Uninitialized (1)" },
		{ NVML_E_INVALID_ARGUMENT, "Invalid Argument (2)" },
	};
	struct vendor_event ev;
	char text[256], err[200];

	for (size_t i = 0; i < sizeof(refusals) / sizeof(refusals[0]); i++) {
		snprintf(text, sizeof(text), "nvidia 0 bus 0000:04:00.0\nnvidia 1 bus 0000:07:00.0\n"
		         "nvidia - error nvmlDeviceRegisterEvents %u\n", refusals[i].code);
		script(x, text);
		open_read(x, VENDOR_NVML, NVML_FAKE);
		assert_int_equal(vendor_events_open(x->lib, err, sizeof(err)), -ENOTSUP);
		snprintf(text, sizeof(text), "nvmlDeviceRegisterEvents failed on 0000:04:00.0: %s, "
		         "and on 1 more board", refusals[i].text);
		assert_string_equal(err, text);
		assert_int_equal(vendor_events_wait(x->lib, 10, &ev, NULL, 0), -ENOTSUP);
		vendor_close(x->lib);
		x->lib = NULL;
	}

	/* One board refuses: the other is watched. */
	script(x, "nvidia 0 bus 0000:04:00.0\nnvidia 1 bus 0000:07:00.0\n"
	          "nvidia 1 error nvmlDeviceRegisterEvents 4\n");
	open_read(x, VENDOR_NVML, NVML_FAKE);
	assert_int_equal(vendor_events_open(x->lib, err, sizeof(err)), 0);
	assert_string_equal(err, "nvmlDeviceRegisterEvents failed on 0000:07:00.0: "
	                         "Insufficient Permissions (4)");
	assert_string_equal(vendor_events_refused(x->lib), "0000:07:00.0");
	assert_int_equal(vendor_events_wait(x->lib, 10, &ev, NULL, 0), -ETIMEDOUT);
	vendor_close(x->lib);
	x->lib = NULL;

	script(x, "nvidia 0 bus 0000:04:00.0\nnvidia 0 error nvmlDeviceRegisterEvents 999\n");
	open_read(x, VENDOR_NVML, NVML_FAKE);
	assert_int_equal(vendor_events_open(x->lib, err, sizeof(err)), -EIO);
	assert_string_equal(err, "nvmlDeviceRegisterEvents failed on 0000:04:00.0: "
	                         "Unknown Error (999)");
	vendor_close(x->lib);
	x->lib = NULL;

	script(x, "nvidia 0 bus 0000:04:00.0\nnvidia - error nvmlEventSetCreate 999\n");
	open_read(x, VENDOR_NVML, NVML_FAKE);
	assert_int_equal(vendor_events_open(x->lib, err, sizeof(err)), -EIO);
	assert_string_equal(err, "nvmlEventSetCreate failed: Unknown Error (999)");
}

/* A wait that fails says why in NVML's words; an event keeps the board it
 * was registered with, even once a read finds the board lost. */
static void
test_nvml_wait(void **state)
{
	struct fix *x = *state;
	struct vendor_event ev;
	char err[200] = "";

	script(x, "nvidia 0 bus 0000:04:00.0\nnvidia 1 bus 0000:07:00.0\n");
	open_read(x, VENDOR_NVML, NVML_FAKE);
	assert_int_equal(vendor_events_open(x->lib, err, sizeof(err)), 0);
	assert_string_equal(err, "");
	script(x, "nvidia 0 bus 0000:04:00.0\nnvidia 1 bus 0000:07:00.0\nnvidia 1 lost 1\n");
	assert_int_equal(vendor_read(x->lib, x->f), 0);
	assert_true(x->f->boards[1].lost);
	script(x, "nvidia 0 bus 0000:04:00.0\nnvidia 1 bus 0000:07:00.0\nnvidia 1 lost 1\n"
	          "nvidia 1 event xid 79\n");
	assert_int_equal(vendor_events_wait(x->lib, 1000, &ev, err, sizeof(err)), 0);
	assert_int_equal(ev.kind, VENDOR_EVENT_XID);
	assert_int_equal(ev.xid, 79);
	assert_int_equal(ev.board, 1);
	assert_string_equal(ev.bus_id, "0000:07:00.0");
	/* Then the wait answers "lost": which board, by its bus id. */
	assert_int_equal(vendor_events_wait(x->lib, 1000, &ev, err, sizeof(err)), 0);
	assert_int_equal(ev.kind, VENDOR_EVENT_LOST);
	assert_string_equal(ev.bus_id, "0000:07:00.0");

	script(x, "nvidia 0 bus 0000:04:00.0\nnvidia - error nvmlEventSetWait_v2 999\n");
	assert_int_equal(vendor_events_wait(x->lib, 1000, &ev, err, sizeof(err)), -EIO);
	assert_string_equal(err, "nvmlEventSetWait_v2 failed: Unknown Error (999)");
}

static void
test_nvml_init_fails(void **state)
{
	struct fix *x = *state;

	/* NVML_ERROR_LIB_RM_VERSION_MISMATCH: a driver update without a reboot. */
	script(x, "nvidia - init 18\nnvidia 0 bus 0000:04:00.0\n");
	assert_int_equal(vendor_open(VENDOR_NVML, NVML_FAKE, &x->lib, x->f), -EIO);
	assert_null(x->lib);
	assert_non_null(strstr(x->f->error, "nvmlInit_v2 failed"));
	assert_non_null(strstr(x->f->error, "version mismatch"));
	assert_int_equal(x->f->count, -1);
}

static void
test_events_not_nvml(void **state)
{
	struct fix *x = *state;
	struct vendor_event ev;
	char err[100];

	script(x, "amd 0 bus 0000:c1:00.0\n");
	open_read(x, VENDOR_RSMI, RSMI_FAKE);
	assert_int_equal(vendor_events_open(x->lib, err, sizeof(err)), -ENOTSUP);
	assert_int_equal(vendor_events_wait(x->lib, 10, &ev, NULL, 0), -ENOTSUP);
}

/* ---- ROCm SMI ---------------------------------------------------------- */

static void
test_rsmi(void **state)
{
	struct fix *x = *state;
	const struct vendor_board *b;

	script(x, "amd - driver 6.7.0\n"
	          "amd 0 bus 0000:c1:00.0\n"
	          "amd 0 name AMD Instinct MI250X\n"
	          "amd 0 temperature.edge 50\n"
	          "amd 0 temperature.junction 97\n"
	          "amd 0 critical.junction 100\n"
	          "amd 0 ras.umc 11 2\n"
	          "amd 0 ras.xgmi_wafl 4 0\n"
	          "amd 0 throttle 0x41\n"
	          "amd 0 busy 77\n"
	          "amd 0 vram.used 1073741824\n"
	          "amd 0 vram.total 68719476736\n"
	          "amd 0 power 350500000\n"
	          "amd 1 bus 0001:d1:1f.3\n"
	          "amd 1 temperature.edge 40\n"
	          "amd 1 critical.edge 90\n"
	          "amd 2 bus 0000:e1:00.0\n"
	          "amd 2 absent 1\n");
	open_read(x, VENDOR_RSMI, RSMI_FAKE);
	assert_string_equal(x->f->version, "6.7.0");
	assert_int_equal(x->f->count, 2);
	b = &x->f->boards[0];
	assert_string_equal(b->bus_id, "0000:c1:00.0");
	assert_string_equal(b->name, "AMD Instinct MI250X");
	/* The junction, where the firmware throttles, against its critical point. */
	assert_int_equal(b->temperature, 97);
	assert_int_equal(b->slowdown, 100);
	assert_int_equal(b->ras[0][0], 11);          /* umc */
	assert_int_equal(b->ras[0][1], 2);
	assert_int_equal(b->ras[7][0], 4);           /* xgmi_wafl */
	assert_int_equal(b->ras[2][0], -1);          /* gfx: ECC off */
	assert_int_equal(b->ecc_enabled, 1);
	assert_int_equal(b->throttle, 0x41);
	assert_int_equal(b->utilization, 77);
	assert_int_equal(b->memory_used, 1073741824LL);
	assert_int_equal(b->memory_total, 68719476736LL);
	assert_int_equal(b->power_mw, 350500);       /* from microwatts */
	b = &x->f->boards[1];
	/* BDFID bits: domain 63-32, bus 15-8, device 7-3, function 2-0. */
	assert_string_equal(b->bus_id, "0001:d1:1f.3");
	assert_int_equal(b->temperature, 40);        /* no junction sensor: the edge */
	assert_int_equal(b->slowdown, 90);
	assert_int_equal(b->power_mw, -1);
	assert_int_equal(b->ecc_enabled, 0);
}

/* ---- CNDev ------------------------------------------------------------- */

static void
test_cndev(void **state)
{
	struct fix *x = *state;
	const struct vendor_board *b;

	/* A CNDev 5 library: the version-6 structs are refused, vigil asks
	 * again with 5; handles are not indexes. */
	script(x, "cambricon - api 5\n"
	          "cambricon - driver 5.10.22\n"
	          "cambricon 0 bus 0000:1a:00.0\n"
	          "cambricon 0 ecc.corrected 9\n"
	          "cambricon 0 ecc.uncorrected 1\n"
	          "cambricon 0 temperature 66\n"
	          "cambricon 0 utilization 58\n"
	          "cambricon 0 memory.used 1024\n"
	          "cambricon 0 memory.total 49152\n"
	          "cambricon 0 power 120\n"
	          "cambricon 1 bus 0000:1b:00.0\n"
	          "cambricon 1 health 0\n"
	          "cambricon 1 driver_state 7\n"
	          "cambricon 2 bus 0000:1c:00.0\n"
	          "cambricon 2 in_problem 1\n");
	open_read(x, VENDOR_CNDEV, CNDEV_FAKE);
	assert_string_equal(x->f->version, "5.10.22");
	assert_int_equal(x->f->count, 3);
	b = &x->f->boards[0];
	assert_string_equal(b->bus_id, "0000:1a:00.0");
	assert_int_equal(b->health, 1);
	assert_int_equal(b->device_state, CNDEV_DEVICE_GOOD);
	assert_int_equal(b->driver_state, CNDEV_DRIVER_RUNNING);
	assert_int_equal(b->ecc_volatile[0], 9);
	assert_int_equal(b->ecc_volatile[1], 1);
	assert_int_equal(b->temperature, 66);
	assert_int_equal(b->utilization, 58);
	assert_int_equal(b->memory_used, 1024LL << 20);
	assert_int_equal(b->memory_total, 49152LL << 20);
	assert_int_equal(b->power_mw, 120000);
	b = &x->f->boards[1];
	assert_int_equal(b->health, 0);
	assert_int_equal(b->driver_state, CNDEV_DRIVER_RESET_ERROR);
	/* CNDEV_ERROR_IN_PROBLEM from every call is itself the health fact. */
	b = &x->f->boards[2];
	assert_int_equal(b->health, 0);
	assert_int_equal(b->device_state, CNDEV_DEVICE_IN_PROBLEM);
	assert_string_equal(b->bus_id, "");
}

/* ---- loading ----------------------------------------------------------- */

static void
test_absent(void **state)
{
	struct fix *x = *state;
	char path[256];

	snprintf(path, sizeof(path), "%s/libnvidia-ml.so.1", x->dir);
	assert_int_equal(vendor_open(VENDOR_NVML, path, &x->lib, x->f), -ENOENT);
	assert_null(x->lib);
	assert_int_equal(x->f->count, -1);
	assert_non_null(strstr(x->f->error, "no such file"));
}

static void
test_wrong_library(void **state)
{
	struct fix *x = *state;

	/* CNDev's library has none of NVML's entry points. */
	script(x, "");
	assert_int_equal(vendor_open(VENDOR_NVML, CNDEV_FAKE, &x->lib, x->f), -ENOSYS);
	assert_non_null(strstr(x->f->error, "lacks the NVML entry points"));
}

static void
copy_file(const char *from, const char *to, mode_t mode)
{
	FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
	char buf[4096];
	size_t n;

	assert_non_null(in);
	assert_non_null(out);
	while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
		assert_int_equal(fwrite(buf, 1, n, out), n);
	fclose(in);
	assert_int_equal(fclose(out), 0);
	assert_int_equal(chmod(to, mode), 0);
}

static void
test_library_check(void **state)
{
	struct fix *x = *state;
	char path[256], err[200];

	snprintf(path, sizeof(path), "%s/copy.so", x->dir);
	assert_int_equal(vendor_library_check("libnvidia-ml.so.1", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "not an absolute path"));
	assert_int_equal(vendor_library_check(x->dir, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "not a regular file"));

	copy_file(NVML_FAKE, path, 0755);
	assert_int_equal(vendor_library_check(path, err, sizeof(err)), 0);
	/* Anyone who can rewrite the file could run code as the agent. */
	assert_int_equal(chmod(path, 0775), 0);
	assert_int_equal(vendor_library_check(path, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "writable by others"));
	assert_int_equal(vendor_open(VENDOR_NVML, path, &x->lib, x->f), -EPERM);
	assert_non_null(strstr(x->f->error, "refused"));
	/* Or replace it in its directory. */
	assert_int_equal(chmod(path, 0755), 0);
	assert_int_equal(chmod(x->dir, 0777), 0);
	assert_int_equal(vendor_library_check(path, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "is writable by others (mode 0777, no sticky bit)"));
	assert_int_equal(chmod(x->dir, 01777), 0);
	assert_int_equal(vendor_library_check(path, err, sizeof(err)), 0);
	assert_int_equal(chmod(x->dir, 0700), 0);
}

/*
 * Links, as the driver packages install them (libnvidia-ml.so.1 ->
 * libnvidia-ml.so.535...): followed when they are root's or the user's,
 * in directories no one else may change; another user's link is refused
 * wherever it is on the path, and so is a directory of another user's.
 */
static void
test_library_links(void **state)
{
	struct fix *x = *state;
	char real[256], link[256], sub[256], via[300], err[400];

	snprintf(real, sizeof(real), "%s/copy.so", x->dir);
	snprintf(link, sizeof(link), "%s/link.so", x->dir);
	snprintf(sub, sizeof(sub), "%s/sub", x->dir);
	copy_file(NVML_FAKE, real, 0755);
	assert_int_equal(symlink("copy.so", link), 0);
	assert_int_equal(vendor_library_check(link, err, sizeof(err)), 0);
	script(x, "");
	assert_int_equal(vendor_open(VENDOR_NVML, link, &x->lib, x->f), 0);
	assert_string_equal(x->f->library, link);
	vendor_close(x->lib);
	x->lib = NULL;
	assert_int_equal(symlink(".", sub), 0);
	snprintf(via, sizeof(via), "%s/link.so", sub);
	assert_int_equal(vendor_library_check(via, err, sizeof(err)), 0);
	if (geteuid() == 0) {
		assert_int_equal(lchown(sub, 65534, 65534), 0);
		assert_int_equal(vendor_library_check(via, err, sizeof(err)), -EPERM);
		assert_non_null(strstr(err, "/sub is a symbolic link of another user (uid 65534)"));
		assert_int_equal(lchown(link, 65534, 65534), 0);
		assert_int_equal(vendor_library_check(link, err, sizeof(err)), -EPERM);
		assert_non_null(strstr(err, "/link.so is a symbolic link of another user"));
		assert_int_equal(vendor_open(VENDOR_NVML, link, &x->lib, x->f), -EPERM);
		assert_null(x->lib);
	}
	assert_int_equal(unlink(sub), 0);
	assert_int_equal(unlink(link), 0);
}

/* The slot check's query: the default library name, absent on this node
 * or answering when present. */
static void
test_default_query(void **state)
{
	struct vendor_info vi;
	int rc;

	(void)state;
	rc = vendor_cndev_query(&vi);
	assert_string_equal(vi.library, "libcndev.so");
	if (rc == -ENOENT) {
		assert_int_equal(vi.count, -1);
		assert_non_null(strstr(vi.error, "libcndev.so"));
	} else {
		assert_true(rc == 0 || rc == -EIO || rc == -ENOSYS);
	}
}

static void
test_names(void **state)
{
	(void)state;
	assert_string_equal(vendor_kind_name(VENDOR_RSMI), "ROCm SMI");
	assert_string_equal(vendor_kind_name((enum vendor_kind)7), "?");
	assert_string_equal(vendor_default_library(VENDOR_NVML), "libnvidia-ml.so.1");
	assert_string_equal(vendor_ras_block_name(0), "umc");
	assert_string_equal(vendor_ras_block_name(13), "fuse");
	assert_string_equal(vendor_ras_block_name(14), "?");
	assert_string_equal(vendor_link_counter_name(2), "crc_flit");
}

int
main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_nvml_healthy),
		T(test_nvml_faults),
		T(test_nvml_absent_board),
		T(test_nvml_events),
		T(test_nvml_temperature_v),
		T(test_nvml_failed_calls),
		T(test_nvml_lost_named),
		T(test_nvml_events_refused),
		T(test_nvml_wait),
		T(test_nvml_init_fails),
		T(test_events_not_nvml),
		T(test_rsmi),
		T(test_cndev),
		T(test_absent),
		T(test_wrong_library),
		T(test_library_check),
		T(test_library_links),
		T(test_default_query),
		T(test_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
