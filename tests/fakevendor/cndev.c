/*
 * cndev.c - a fake libcndev.so for vigil's tests: the CNDev calls vigil
 * makes, with the contract cndev.h documents (versioned structs refused
 * above the library's API version, device handles distinct from indexes,
 * CNDEV_ERROR_IN_PROBLEM from a device in trouble), answering from the
 * script that VIGIL_FAKE_VENDOR names (script.h, README.md).
 */
#include <stdio.h>
#include <string.h>

#include "script.h"
#include "sys/vendor_abi.h"

#define V "cambricon"
/* Handles are not indexes: vigil must use the one it was given. */
#define HANDLE_BASE 100

cndev_init_fn cndevInit;
cndev_release_fn cndevRelease;
cndev_error_string_fn cndevGetErrorString;
cndev_count_fn cndevGetDeviceCount;
cndev_handle_fn cndevGetDeviceHandleByIndex;
cndev_version_fn cndevGetVersionInfo;
cndev_health_fn cndevGetCardHealthState;
cndev_ecc_fn cndevGetECCInfo;
cndev_temperature_fn cndevGetTemperatureInfo;
cndev_utilization_fn cndevGetDeviceUtilizationInfo;
cndev_memory_fn cndevGetMemoryUsageV2;
cndev_power_fn cndevGetDevicePowerInfo;
cndev_pcie_fn cndevGetPCIeInfoV2;

static int initialised;

/* The script board of handle DEV into *B; 0 or the code to return. */
static uint32_t
enter(int32_t dev, int *b)
{
	if (!initialised)
		return 4;  /* CNDEV_ERROR_UNINITIALIZED */
	*b = script_nth(V, dev - HANDLE_BASE);
	if (*b < 0)
		return 6;  /* CNDEV_ERROR_INVALID_DEVICE_ID */
	if (script_ll(V, *b, "in_problem", 0))
		return CNDEV_E_IN_PROBLEM;
	return CNDEV_OK;
}

/* A versioned struct: refused above the library's API version. */
static uint32_t
version_ok(int32_t version)
{
	return version > script_ll(V, -1, "api", CNDEV_API_VERSION) || version < 1
	       ? CNDEV_E_UNSUPPORTED_API_VERSION : CNDEV_OK;
}

uint32_t
cndevInit(int32_t reserved)
{
	(void)reserved;
	script_load();
	script_maybe_hang(V, "init");
	if (script_has(V, -1, "init"))
		return (uint32_t)script_ll(V, -1, "init", CNDEV_E_NO_DRIVER);
	initialised = 1;
	return CNDEV_OK;
}

uint32_t
cndevRelease(void)
{
	initialised = 0;
	return CNDEV_OK;
}

const char *
cndevGetErrorString(uint32_t r)
{
	switch (r) {
	case CNDEV_OK: return "success";
	case CNDEV_E_NO_DRIVER: return "no driver";
	case CNDEV_E_UNSUPPORTED_API_VERSION: return "unsupported API version";
	case CNDEV_E_IN_PROBLEM: return "device in problem";
	default: return "unknown error";
	}
}

uint32_t
cndevGetDeviceCount(struct cndev_card_info *info)
{
	uint32_t r;

	if (!initialised)
		return 4;
	r = version_ok(info->version);
	if (r)
		return r;
	script_maybe_hang(V, "read");
	info->number = (uint32_t)script_present(V);
	return CNDEV_OK;
}

uint32_t
cndevGetDeviceHandleByIndex(int32_t index, int32_t *handle)
{
	if (!initialised)
		return 4;
	if (script_nth(V, index) < 0)
		return 6;
	*handle = index + HANDLE_BASE;
	return CNDEV_OK;
}

uint32_t
cndevGetVersionInfo(struct cndev_version_info *info, int32_t dev)
{
	unsigned a = 5, b = 10, c = 22;
	const char *v = script_value(V, -1, "driver");
	int board;
	uint32_t r = enter(dev, &board);

	if (r || (r = version_ok(info->version)))
		return r;
	if (v)
		sscanf(v, "%u.%u.%u", &a, &b, &c);
	info->driver_major = a;
	info->driver_minor = b;
	info->driver_build = c;
	info->mcu_major = 1;
	return CNDEV_OK;
}

uint32_t
cndevGetCardHealthState(struct cndev_health *h, int32_t dev)
{
	int b;
	uint32_t r = enter(dev, &b);

	if (r || (r = version_ok(h->version)))
		return r;
	h->health = (int32_t)script_ll(V, b, "health", 1);
	h->device_state = (uint32_t)script_ll(V, b, "device_state", CNDEV_DEVICE_GOOD);
	h->driver_state = (uint32_t)script_ll(V, b, "driver_state", CNDEV_DRIVER_RUNNING);
	return CNDEV_OK;
}

uint32_t
cndevGetECCInfo(struct cndev_ecc_info *e, int32_t dev)
{
	int b;
	uint32_t r = enter(dev, &b);

	if (r || (r = version_ok(e->version)))
		return r;
	e->corrected_error = (uint64_t)script_ll(V, b, "ecc.corrected", 0);
	e->uncorrected_error = (uint64_t)script_ll(V, b, "ecc.uncorrected", 0);
	e->one_bit_error = e->corrected_error;
	e->multiple_error = e->uncorrected_error;
	e->total_error = e->corrected_error + e->uncorrected_error;
	return CNDEV_OK;
}

uint32_t
cndevGetTemperatureInfo(struct cndev_temperature_info *t, int32_t dev)
{
	int b;
	uint32_t r = enter(dev, &b);

	if (r || (r = version_ok(t->version)))
		return r;
	t->chip = (int32_t)script_ll(V, b, "temperature", 45);
	t->board = t->chip - 5;
	return CNDEV_OK;
}

uint32_t
cndevGetDeviceUtilizationInfo(struct cndev_utilization_info *u, int32_t dev)
{
	int b;
	uint32_t r = enter(dev, &b);

	if (r || (r = version_ok(u->version)))
		return r;
	u->average_core_utilization = (int32_t)script_ll(V, b, "utilization", 0);
	return CNDEV_OK;
}

uint32_t
cndevGetMemoryUsageV2(struct cndev_memory_info_v2 *m, int32_t dev)
{
	int b;
	uint32_t r = enter(dev, &b);

	if (r)
		return r;
	m->physical_total = script_ll(V, b, "memory.total", 49152);  /* MiB */
	m->physical_used = script_ll(V, b, "memory.used", 0);
	return CNDEV_OK;
}

uint32_t
cndevGetDevicePowerInfo(struct cndev_power_info *p, int32_t dev)
{
	int b;
	uint32_t r = enter(dev, &b);

	if (r)
		return r;
	p->usage = (int32_t)script_ll(V, b, "power", 75);   /* watts */
	p->cap = p->tdp = 250;
	return CNDEV_OK;
}

uint32_t
cndevGetPCIeInfoV2(struct cndev_pcie_info_v2 *p, int32_t dev)
{
	unsigned dom, bus, d, fn;
	int b;
	uint32_t r = enter(dev, &b);

	if (r)
		return r;
	if (script_bus(script_value(V, b, "bus"), &dom, &bus, &d, &fn) < 0)
		return CNDEV_E_NOT_SUPPORTED;
	memset(p, 0, sizeof(*p));
	p->vendor = 0xcabc;
	p->domain = dom;
	p->bus = bus;
	p->device = d;
	p->function = fn;
	p->slot_id = 0xffff;
	return CNDEV_OK;
}
