/*
 * nvml.c - a fake libnvidia-ml.so.1 for vigil's tests: the NVML calls
 * vigil makes, with the contract nvml.h documents (return codes, the
 * query-the-size convention of nvmlDeviceGetRetiredPages, events recorded
 * only after nvmlDeviceRegisterEvents, versioned structs), answering from
 * the script that VIGIL_FAKE_VENDOR names (script.h, README.md).  Every
 * call can be made to fail ("error CALL CODE", on a board or on "-" for
 * the calls that take no board) or to be slow ("slow CALL MS").
 *
 * Built twice: as it is, and with FAKE_NVML_OLD for an older driver, which
 * lacks nvmlDeviceGetTemperatureV (CUDA 12.8) and has its clock reasons
 * under the name they had before CUDA 12.2
 * (nvmlDeviceGetCurrentClocksThrottleReasons).
 */
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <time.h>

#include "script.h"
#include "sys/vendor_abi.h"

#define V "nvidia"
#define MAX_BOARDS 64

/* The declarations the real nvml.h would give, from vigil's types. */
nvml_void_fn nvmlInit_v2, nvmlShutdown;
nvml_error_string_fn nvmlErrorString;
nvml_driver_version_fn nvmlSystemGetDriverVersion;
nvml_count_fn nvmlDeviceGetCount_v2;
nvml_handle_fn nvmlDeviceGetHandleByIndex_v2;
nvml_handle_by_bus_fn nvmlDeviceGetHandleByPciBusId_v2;
nvml_pci_info_fn nvmlDeviceGetPciInfo_v3;
nvml_name_fn nvmlDeviceGetName;
nvml_ecc_mode_fn nvmlDeviceGetEccMode;
nvml_total_ecc_fn nvmlDeviceGetTotalEccErrors;
nvml_retired_pages_fn nvmlDeviceGetRetiredPages;
nvml_retired_pending_fn nvmlDeviceGetRetiredPagesPendingStatus;
nvml_remapped_rows_fn nvmlDeviceGetRemappedRows;
nvml_field_values_fn nvmlDeviceGetFieldValues;
#ifndef FAKE_NVML_OLD
nvml_clocks_reasons_fn nvmlDeviceGetCurrentClocksEventReasons;
#endif
nvml_clocks_reasons_fn nvmlDeviceGetCurrentClocksThrottleReasons;
nvml_temperature_fn nvmlDeviceGetTemperature;
#ifndef FAKE_NVML_OLD
nvml_temperature_v_fn nvmlDeviceGetTemperatureV;
#endif
nvml_temperature_threshold_fn nvmlDeviceGetTemperatureThreshold;
nvml_nvlink_state_fn nvmlDeviceGetNvLinkState;
nvml_nvlink_error_fn nvmlDeviceGetNvLinkErrorCounter;
nvml_utilization_fn nvmlDeviceGetUtilizationRates;
nvml_memory_fn nvmlDeviceGetMemoryInfo;
nvml_power_fn nvmlDeviceGetPowerUsage;
nvml_event_set_create_fn nvmlEventSetCreate;
nvml_register_events_fn nvmlDeviceRegisterEvents;
nvml_event_set_wait_fn nvmlEventSetWait_v2;
nvml_event_set_free_fn nvmlEventSetFree;

struct nvml_device_st {
	int board;                        /* index in the script */
};

struct nvml_event_set_st {
	unsigned long long types[MAX_BOARDS];   /* registered event types */
	int delivered[MAX_BOARDS];              /* script events already seen */
};

static struct nvml_device_st devices[MAX_BOARDS];
static int initialised;

/* The board behind D, or -1 (a handle this library did not give). */
static int
board_of(nvml_device d)
{
	if (!d || d < devices || d >= devices + MAX_BOARDS)
		return -1;
	return d->board;
}

/* What every device call starts with: 0 to go on, or the code to return. */
static unsigned
enter(nvml_device d, const char *call, int *board)
{
	if (!initialised)
		return NVML_E_UNINITIALIZED;
	*board = board_of(d);
	if (*board < 0)
		return NVML_E_INVALID_ARGUMENT;
	script_enter(V, *board, call);
	if (script_ll(V, *board, "lost", 0))
		return NVML_E_GPU_IS_LOST;
	/* The board's own failure, else one for every board. */
	return script_error(V, *board, call) ? script_error(V, *board, call)
	                                     : script_error(V, -1, call);
}

/* The same for a call on the library as a whole ("-" lines). */
static unsigned
enter_library(const char *call)
{
	if (!initialised)
		return NVML_E_UNINITIALIZED;
	script_enter(V, -1, call);
	return script_error(V, -1, call);
}

unsigned int
nvmlInit_v2(void)
{
	script_load();
	script_enter(V, -1, "nvmlInit_v2");
	script_maybe_hang(V, "init");
	if (script_has(V, -1, "init"))
		return (unsigned)script_ll(V, -1, "init", NVML_E_UNKNOWN);
	if (script_error(V, -1, "nvmlInit_v2"))
		return script_error(V, -1, "nvmlInit_v2");
	initialised = 1;
	for (int i = 0; i < MAX_BOARDS; i++)
		devices[i].board = i;
	return NVML_OK;
}

unsigned int
nvmlShutdown(void)
{
	if (!initialised)
		return NVML_E_UNINITIALIZED;
	script_enter(V, -1, "nvmlShutdown");
	initialised = 0;
	return NVML_OK;
}

const char *
nvmlErrorString(unsigned int r)
{
	switch (r) {
	case NVML_OK: return "Success";
	case NVML_E_UNINITIALIZED: return "Uninitialized";
	case NVML_E_INVALID_ARGUMENT: return "Invalid Argument";
	case NVML_E_NOT_SUPPORTED: return "Not Supported";
	case NVML_E_NO_PERMISSION: return "Insufficient Permissions";
	case NVML_E_NOT_FOUND: return "Not Found";
	case NVML_E_INSUFFICIENT_SIZE: return "Insufficient Size";
	case NVML_E_DRIVER_NOT_LOADED: return "Driver Not Loaded";
	case NVML_E_TIMEOUT: return "Timeout";
	case NVML_E_FUNCTION_NOT_FOUND: return "Function Not Found";
	case NVML_E_CORRUPTED_INFOROM: return "Corrupted infoROM";
	case NVML_E_GPU_IS_LOST: return "GPU is lost";
	case NVML_E_RESET_REQUIRED: return "GPU requires reset";
	case 18: return "Driver/library version mismatch";
	case NVML_E_ARGUMENT_VERSION_MISMATCH: return "Argument version mismatch";
	default: return "Unknown Error";
	}
}

unsigned int
nvmlSystemGetDriverVersion(char *version, unsigned int length)
{
	const char *v = script_value(V, -1, "driver");
	unsigned e = enter_library("nvmlSystemGetDriverVersion");

	if (e)
		return e;
	if (!version)
		return NVML_E_INVALID_ARGUMENT;
	if ((unsigned)snprintf(version, length, "%s", v ? v : "535.104.05") >= length)
		return NVML_E_INSUFFICIENT_SIZE;
	return NVML_OK;
}

unsigned int
nvmlDeviceGetCount_v2(unsigned int *count)
{
	unsigned e;

	/* A caller's reading starts here: the script as it is now. */
	script_load();
	e = enter_library("nvmlDeviceGetCount_v2");

	if (e)
		return e;
	*count = (unsigned)script_present(V);
	return NVML_OK;
}

unsigned int
nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvml_device *device)
{
	int b;
	unsigned e;

	if (!initialised)
		return NVML_E_UNINITIALIZED;
	script_maybe_hang(V, "read");
	b = script_nth(V, (int)index);
	if (b < 0 || b >= MAX_BOARDS)
		return NVML_E_INVALID_ARGUMENT;
	e = enter(&devices[b], "nvmlDeviceGetHandleByIndex_v2", &b);
	if (e)
		return e;
	*device = &devices[b];
	return NVML_OK;
}

/* "%x:%x:%x.%x" and the shorter forms nvml.h accepts, against each board's
 * "bus" (a board without one is at bus INDEX + 1, as its PCI info says). */
unsigned int
nvmlDeviceGetHandleByPciBusId_v2(const char *bus_id, nvml_device *device)
{
	unsigned dom = 0, bus, dev, fn = 0, e;
	int n = script_boards(V);

	if ((e = enter_library("nvmlDeviceGetHandleByPciBusId_v2")) != 0)
		return e;
	if (!bus_id || !device || (sscanf(bus_id, "%x:%x:%x.%x", &dom, &bus, &dev, &fn) < 3 &&
	                           sscanf(bus_id, "%x:%x.%x", &bus, &dev, &fn) != 3))
		return NVML_E_INVALID_ARGUMENT;
	for (int b = 0; b < n && b < MAX_BOARDS; b++) {
		unsigned d2 = 0, b2 = (unsigned)b + 1, v2 = 0, f2 = 0;

		(void)script_bus(script_value(V, b, "bus"), &d2, &b2, &v2, &f2);
		if (d2 != dom || b2 != bus || v2 != dev || f2 != fn || script_ll(V, b, "absent", 0))
			continue;
		e = enter(&devices[b], "nvmlDeviceGetHandleByPciBusId_v2", &b);
		if (e)
			return e;
		*device = &devices[b];
		return NVML_OK;
	}
	return NVML_E_NOT_FOUND;
}

unsigned int
nvmlDeviceGetPciInfo_v3(nvml_device d, struct nvml_pci_info *pci)
{
	unsigned dom = 0, bus = 0, dev = 0, fn = 0;
	int b;
	unsigned e = enter(d, "nvmlDeviceGetPciInfo_v3", &b);

	if (e)
		return e;
	if (script_bus(script_value(V, b, "bus"), &dom, &bus, &dev, &fn) < 0)
		bus = (unsigned)b + 1;
	memset(pci, 0, sizeof(*pci));
	pci->domain = dom;
	pci->bus = bus;
	pci->device = dev;
	pci->pci_device_id = 0x233010de;
	/* NVML's own formats: NVML_DEVICE_PCI_BUS_ID_FMT and the legacy one. */
	snprintf(pci->bus_id, sizeof(pci->bus_id), "%08X:%02X:%02X.%X", dom, bus, dev, fn);
	snprintf(pci->bus_id_legacy, sizeof(pci->bus_id_legacy), "%04X:%02X:%02X.0", dom & 0xffff,
	         bus & 0xff, dev & 0xff);
	return NVML_OK;
}

unsigned int
nvmlDeviceGetName(nvml_device d, char *name, unsigned int length)
{
	const char *v;
	int b;
	unsigned e = enter(d, "nvmlDeviceGetName", &b);

	if (e)
		return e;
	v = script_value(V, b, "name");
	if ((unsigned)snprintf(name, length, "%s", v ? v : "Fake GPU") >= length)
		return NVML_E_INSUFFICIENT_SIZE;
	return NVML_OK;
}

unsigned int
nvmlDeviceGetEccMode(nvml_device d, unsigned int *current, unsigned int *pending)
{
	int b;
	unsigned e = enter(d, "nvmlDeviceGetEccMode", &b);

	if (e)
		return e;
	*current = *pending = script_ll(V, b, "ecc_mode", 1) ? NVML_FEATURE_ENABLED
	                                                     : NVML_FEATURE_DISABLED;
	return NVML_OK;
}

unsigned int
nvmlDeviceGetTotalEccErrors(nvml_device d, unsigned int type, unsigned int counter,
                            unsigned long long *count)
{
	static const char *const keys[2][2] = {
		{ "ecc.volatile.corrected", "ecc.volatile.uncorrected" },
		{ "ecc.aggregate.corrected", "ecc.aggregate.uncorrected" },
	};
	int b;
	unsigned e = enter(d, "nvmlDeviceGetTotalEccErrors", &b);

	if (e)
		return e;
	if (type > 1 || counter > 1 || !count)
		return NVML_E_INVALID_ARGUMENT;
	/* ECC counts exist only while ECC is on. */
	if (!script_ll(V, b, "ecc_mode", 1))
		return NVML_E_NOT_SUPPORTED;
	*count = (unsigned long long)script_ll(V, b, keys[counter][type], 0);
	return NVML_OK;
}

unsigned int
nvmlDeviceGetRetiredPages(nvml_device d, unsigned int cause, unsigned int *count,
                          unsigned long long *addresses)
{
	unsigned n;
	int b;
	unsigned e = enter(d, "nvmlDeviceGetRetiredPages", &b);

	if (e)
		return e;
	if (cause > 1 || !count)
		return NVML_E_INVALID_ARGUMENT;
	n = (unsigned)script_ll(V, b, cause ? "retired.dbe" : "retired.sbe", 0);
	if (*count < n) {
		*count = n;
		return NVML_E_INSUFFICIENT_SIZE;
	}
	if (n > 0 && !addresses)
		return NVML_E_INVALID_ARGUMENT;
	for (unsigned i = 0; i < n; i++)
		addresses[i] = 0x1000ULL * (i + 1);
	*count = n;
	return NVML_OK;
}

unsigned int
nvmlDeviceGetRetiredPagesPendingStatus(nvml_device d, unsigned int *pending)
{
	int b;
	unsigned e = enter(d, "nvmlDeviceGetRetiredPagesPendingStatus", &b);

	if (e)
		return e;
	*pending = script_ll(V, b, "retired.pending", 0) ? NVML_FEATURE_ENABLED
	                                                 : NVML_FEATURE_DISABLED;
	return NVML_OK;
}

unsigned int
nvmlDeviceGetRemappedRows(nvml_device d, unsigned int *corr, unsigned int *unc,
                          unsigned int *pending, unsigned int *failure)
{
	int b;
	unsigned e = enter(d, "nvmlDeviceGetRemappedRows", &b);

	if (e)
		return e;
	*corr = (unsigned)script_ll(V, b, "remap.corrected", 0);
	*unc = (unsigned)script_ll(V, b, "remap.uncorrected", 0);
	*pending = (unsigned)script_ll(V, b, "remap.pending", 0);
	*failure = (unsigned)script_ll(V, b, "remap.failure", 0);
	return NVML_OK;
}

static int
recovery_value(const char *v)
{
	static const char *const names[] = { "none", "reset", "reboot", "drain", "drain_reset",
	                                     "imex" };

	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(v, names[i]) == 0)
			return (int)i;
	return atoi(v);
}

unsigned int
nvmlDeviceGetFieldValues(nvml_device d, int count, struct nvml_field_value *values)
{
	int b;
	unsigned e = enter(d, "nvmlDeviceGetFieldValues", &b);

	if (e)
		return e;
	if (!values || count < 0)
		return NVML_E_INVALID_ARGUMENT;
	for (int i = 0; i < count; i++) {
		const char *v = script_value(V, b, "recovery");

		values[i].timestamp = (long long)time(NULL) * 1000000;
		if (values[i].field_id != NVML_FI_GPU_RECOVERY_ACTION || !v) {
			values[i].nvml_return = NVML_E_NOT_SUPPORTED;
			continue;
		}
		values[i].nvml_return = NVML_OK;
		values[i].value_type = NVML_VALUE_UINT;
		values[i].value.ui = (unsigned)recovery_value(v);
	}
	return NVML_OK;
}

/* "hw_slowdown,hw_thermal" or a number. */
static unsigned long long
reasons(const char *v)
{
	static const struct { const char *name; unsigned long long bit; } map[] = {
		{ "idle", NVML_CLOCKS_GPU_IDLE },
		{ "sw_power", NVML_CLOCKS_SW_POWER_CAP },
		{ "hw_slowdown", NVML_CLOCKS_HW_SLOWDOWN },
		{ "sw_thermal", NVML_CLOCKS_SW_THERMAL_SLOWDOWN },
		{ "hw_thermal", NVML_CLOCKS_HW_THERMAL_SLOWDOWN },
		{ "power_brake", NVML_CLOCKS_HW_POWER_BRAKE },
	};
	unsigned long long bits = 0;
	char buf[256], *save = NULL;

	if (!v)
		return 0;
	if (v[0] >= '0' && v[0] <= '9')
		return strtoull(v, NULL, 0);
	snprintf(buf, sizeof(buf), "%s", v);
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
		for (unsigned i = 0; i < sizeof(map) / sizeof(map[0]); i++)
			if (strcmp(t, map[i].name) == 0)
				bits |= map[i].bit;
	return bits;
}

static unsigned
clocks_reasons(nvml_device d, unsigned long long *r, const char *call)
{
	int b;
	unsigned e = enter(d, call, &b);

	if (e)
		return e;
	*r = reasons(script_value(V, b, "throttle"));
	return NVML_OK;
}

#ifndef FAKE_NVML_OLD
unsigned int
nvmlDeviceGetCurrentClocksEventReasons(nvml_device d, unsigned long long *r)
{
	return clocks_reasons(d, r, "nvmlDeviceGetCurrentClocksEventReasons");
}
#endif

unsigned int
nvmlDeviceGetCurrentClocksThrottleReasons(nvml_device d, unsigned long long *r)
{
	return clocks_reasons(d, r, "nvmlDeviceGetCurrentClocksThrottleReasons");
}

unsigned int
nvmlDeviceGetTemperature(nvml_device d, unsigned int sensor, unsigned int *celsius)
{
	int b;
	unsigned e = enter(d, "nvmlDeviceGetTemperature", &b);

	if (e)
		return e;
	if (sensor != NVML_TEMPERATURE_GPU)
		return NVML_E_INVALID_ARGUMENT;
	*celsius = (unsigned)script_ll(V, b, "temperature", 40);
	return NVML_OK;
}

#ifndef FAKE_NVML_OLD
unsigned int
nvmlDeviceGetTemperatureV(nvml_device d, struct nvml_temperature *t)
{
	int b;
	unsigned e = enter(d, "nvmlDeviceGetTemperatureV", &b);

	if (e)
		return e;
	if (!t)
		return NVML_E_INVALID_ARGUMENT;
	if (t->version != NVML_TEMPERATURE_V1)
		return NVML_E_ARGUMENT_VERSION_MISMATCH;
	if (t->sensor_type != NVML_TEMPERATURE_GPU)
		return NVML_E_INVALID_ARGUMENT;
	t->temperature = (int)script_ll(V, b, "temperature", 40);
	return NVML_OK;
}
#endif

unsigned int
nvmlDeviceGetTemperatureThreshold(nvml_device d, unsigned int type, unsigned int *celsius)
{
	int b;
	unsigned e = enter(d, "nvmlDeviceGetTemperatureThreshold", &b);

	if (e)
		return e;
	if (type == NVML_TEMPERATURE_THRESHOLD_SLOWDOWN)
		*celsius = (unsigned)script_ll(V, b, "slowdown", 90);
	else if (type == NVML_TEMPERATURE_THRESHOLD_SHUTDOWN)
		*celsius = (unsigned)script_ll(V, b, "shutdown", 95);
	else
		return NVML_E_NOT_SUPPORTED;
	return NVML_OK;
}

unsigned int
nvmlDeviceGetNvLinkState(nvml_device d, unsigned int link, unsigned int *active)
{
	char key[32];
	const char *v;
	int b;
	unsigned e = enter(d, "nvmlDeviceGetNvLinkState", &b);

	if (e)
		return e;
	if (!script_has(V, b, "nvlinks"))
		return NVML_E_NOT_SUPPORTED;
	if (link >= (unsigned)script_ll(V, b, "nvlinks", 0) || link >= NVML_NVLINK_MAX_LINKS)
		return NVML_E_INVALID_ARGUMENT;
	snprintf(key, sizeof(key), "nvlink.%u", link);
	v = script_value(V, b, key);
	*active = v && strcmp(v, "down") == 0 ? NVML_FEATURE_DISABLED : NVML_FEATURE_ENABLED;
	return NVML_OK;
}

unsigned int
nvmlDeviceGetNvLinkErrorCounter(nvml_device d, unsigned int link, unsigned int counter,
                                unsigned long long *value)
{
	static const char *const names[] = { "replay", "recovery", "crc_flit", "crc_data",
	                                     "ecc_data" };
	char key[48];
	int b;
	unsigned e = enter(d, "nvmlDeviceGetNvLinkErrorCounter", &b);

	if (e)
		return e;
	if (!script_has(V, b, "nvlinks"))
		return NVML_E_NOT_SUPPORTED;
	if (link >= (unsigned)script_ll(V, b, "nvlinks", 0) || counter >= 5)
		return NVML_E_INVALID_ARGUMENT;
	snprintf(key, sizeof(key), "nvlink.%u.%s", link, names[counter]);
	*value = (unsigned long long)script_ll(V, b, key, 0);
	return NVML_OK;
}

unsigned int
nvmlDeviceGetUtilizationRates(nvml_device d, struct nvml_utilization *u)
{
	int b;
	unsigned e = enter(d, "nvmlDeviceGetUtilizationRates", &b);

	if (e)
		return e;
	u->gpu = (unsigned)script_ll(V, b, "utilization", 0);
	u->memory = (unsigned)script_ll(V, b, "utilization.memory", 0);
	return NVML_OK;
}

unsigned int
nvmlDeviceGetMemoryInfo(nvml_device d, struct nvml_memory *m)
{
	int b;
	unsigned e = enter(d, "nvmlDeviceGetMemoryInfo", &b);

	if (e)
		return e;
	m->total = (unsigned long long)script_ll(V, b, "memory.total", 17179869184LL);
	m->used = (unsigned long long)script_ll(V, b, "memory.used", 0);
	m->free = m->used < m->total ? m->total - m->used : 0;
	return NVML_OK;
}

unsigned int
nvmlDeviceGetPowerUsage(nvml_device d, unsigned int *milliwatts)
{
	int b;
	unsigned e = enter(d, "nvmlDeviceGetPowerUsage", &b);

	if (e)
		return e;
	*milliwatts = (unsigned)script_ll(V, b, "power", 50000);
	return NVML_OK;
}

/* ---- events ----------------------------------------------------------- */

unsigned int
nvmlEventSetCreate(nvml_event_set *set)
{
	unsigned e = enter_library("nvmlEventSetCreate");

	if (e)
		return e;
	if (!set)
		return NVML_E_INVALID_ARGUMENT;
	*set = calloc(1, sizeof(**set));
	return *set ? NVML_OK : NVML_E_UNKNOWN;
}

unsigned int
nvmlDeviceRegisterEvents(nvml_device d, unsigned long long types, nvml_event_set set)
{
	int b;
	unsigned e = enter(d, "nvmlDeviceRegisterEvents", &b);

	if (e)
		return e;
	if (!set || b >= MAX_BOARDS)
		return NVML_E_INVALID_ARGUMENT;
	/* ECC events exist only on boards with ECC on. */
	if ((types & NVML_EVENT_DOUBLE_BIT_ECC) && !script_ll(V, b, "ecc_mode", 1))
		return NVML_E_NOT_SUPPORTED;
	set->types[b] |= types;
	/* "All events that occurred before this call are not recorded." */
	set->delivered[b] = script_events(V, b);
	return NVML_OK;
}

/* The next event of SET not delivered yet, into *DATA: 1, or 0 when none. */
static int
next_event(nvml_event_set set, struct nvml_event_data *data)
{
	for (int b = 0; b < MAX_BOARDS; b++) {
		while (set->types[b] && set->delivered[b] < script_events(V, b)) {
			const char *ev = script_event(V, b, set->delivered[b]++);
			unsigned long long xid;

			memset(data, 0, sizeof(*data));
			data->device = &devices[b];
			data->gpu_instance_id = data->compute_instance_id = 0xffffffffU;
			if (sscanf(ev, "xid %llu", &xid) == 1 &&
			    (set->types[b] & NVML_EVENT_XID_CRITICAL)) {
				data->event_type = NVML_EVENT_XID_CRITICAL;
				data->event_data = xid;
				return 1;
			}
			if (strcmp(ev, "dbe") == 0 && (set->types[b] & NVML_EVENT_DOUBLE_BIT_ECC)) {
				data->event_type = NVML_EVENT_DOUBLE_BIT_ECC;
				return 1;
			}
		}
	}
	return 0;
}

unsigned int
nvmlEventSetWait_v2(nvml_event_set set, struct nvml_event_data *data, unsigned int timeout_ms)
{
	struct timespec nap = { 0, 10 * 1000000L };
	unsigned waited = 0, e;

	if (!initialised)
		return NVML_E_UNINITIALIZED;
	if (!set || !data)
		return NVML_E_INVALID_ARGUMENT;
	for (;;) {
		script_load();
		if ((e = enter_library("nvmlEventSetWait_v2")) != 0)
			return e;
		script_maybe_hang(V, "events");
		/* Events recorded before a board was lost come first. */
		if (next_event(set, data))
			return NVML_OK;
		for (int b = 0; b < MAX_BOARDS; b++)
			if (set->types[b] && script_ll(V, b, "lost", 0))
				return NVML_E_GPU_IS_LOST;
		if (waited >= timeout_ms)
			return NVML_E_TIMEOUT;
		nanosleep(&nap, NULL);
		waited += 10;
	}
}

unsigned int
nvmlEventSetFree(nvml_event_set set)
{
	unsigned e = enter_library("nvmlEventSetFree");

	/* Freed even when it "fails": the caller is done with it. */
	free(set);
	if (e)
		return e;
	return NVML_OK;
}
