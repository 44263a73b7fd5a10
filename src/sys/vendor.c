/*
 * vendor.c - NVML, ROCm SMI and CNDev through dlopen().
 *
 * The types and entry points come from vendor_abi.h, written from the
 * vendors' documented ABI.  Entry points a library must have are listed
 * as required: without one the library is refused (-ENOSYS).  The others
 * are optional: a driver too old for one (NVML's recovery action came with
 * R550, CNDev's PCIe info V2 with CNDev 6) leaves its facts at -1.
 *
 * Every library returns 0 for success.  NVML also says, from any call on
 * a board, that the board is lost (NVML_ERROR_GPU_IS_LOST) or needs a
 * reset (NVML_ERROR_RESET_REQUIRED): those answers are facts about the
 * board, recorded wherever they come from, and a lost board is asked
 * nothing more (each further call would wait on it again).  Any other
 * NVML failure but "not supported" is recorded on the board too (the
 * call and NVML's words), so that a fact left unknown is never silent.
 */
#include "autoconf.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/safepath.h"
#include "sys/vendor.h"
#include "sys/vendor_abi.h"

struct nvml_api {
	nvml_void_fn *init, *shutdown;
	nvml_error_string_fn *error_string;
	nvml_driver_version_fn *driver_version;
	nvml_count_fn *count;
	nvml_handle_fn *handle;
	nvml_handle_by_bus_fn *handle_by_bus;
	nvml_pci_info_fn *pci_info;
	nvml_name_fn *name;
	nvml_ecc_mode_fn *ecc_mode;
	nvml_total_ecc_fn *total_ecc;
	nvml_retired_pages_fn *retired_pages;
	nvml_retired_pending_fn *retired_pending;
	nvml_remapped_rows_fn *remapped_rows;
	nvml_field_values_fn *field_values;
	nvml_clocks_reasons_fn *clocks_reasons;
	const char *clocks_reasons_name;
	nvml_temperature_fn *temperature;
	nvml_temperature_v_fn *temperature_v;
	nvml_temperature_threshold_fn *temperature_threshold;
	nvml_nvlink_state_fn *nvlink_state;
	nvml_nvlink_error_fn *nvlink_error;
	nvml_utilization_fn *utilization;
	nvml_memory_fn *memory;
	nvml_power_fn *power;
	nvml_event_set_create_fn *event_set_create;
	nvml_register_events_fn *register_events;
	nvml_event_set_wait_fn *event_set_wait;
	const char *event_set_wait_name;
	nvml_event_set_free_fn *event_set_free;
};

struct rsmi_api {
	rsmi_init_fn *init;
	rsmi_shut_down_fn *shut_down;
	rsmi_num_devices_fn *num_devices;
	rsmi_status_string_fn *status_string;
	rsmi_version_str_fn *version_str;
	rsmi_pci_id_fn *pci_id;
	rsmi_name_fn *name;
	rsmi_temp_metric_fn *temp_metric;
	rsmi_ecc_enabled_fn *ecc_enabled;
	rsmi_ecc_count_fn *ecc_count;
	rsmi_busy_percent_fn *busy_percent;
	rsmi_memory_fn *memory_total, *memory_usage;
	rsmi_power_ave_fn *power_ave;
	rsmi_socket_power_fn *socket_power;
	rsmi_gpu_metrics_fn *gpu_metrics;
};

struct cndev_api {
	cndev_init_fn *init;
	cndev_release_fn *release;
	cndev_error_string_fn *error_string;
	cndev_count_fn *count;
	cndev_handle_fn *handle;
	cndev_version_fn *version;
	cndev_health_fn *health;
	cndev_ecc_fn *ecc;
	cndev_temperature_fn *temperature;
	cndev_utilization_fn *utilization;
	cndev_memory_fn *memory;
	cndev_power_fn *power;
	cndev_pcie_fn *pcie;
};

/* An NVML board as a read named it. */
struct nvml_known {
	nvml_device device;
	char bus_id[24];
	int index;
};

struct vendor_lib {
	enum vendor_kind kind;
	void *dl;
	union {
		struct nvml_api nvml;
		struct rsmi_api rsmi;
		struct cndev_api cndev;
	} api;
	int cndev_version;               /* the API version CNDev accepted */
	char open_error[200];            /* what vendor_open() said, library kept */
	/* Every handle a read has named, for the library's life (NVML's
	 * handles are valid that long): a board that stops answering keeps
	 * its name.  Written by vendor_read() alone. */
	struct nvml_known known[VENDOR_MAX_BOARDS];
	unsigned nknown;
	char expect[VENDOR_MAX_BOARDS][24];      /* vendor_expect() */
	unsigned nexpect;
	/* The boards registered for events: written by vendor_events_open()
	 * alone, then read by vendor_events_wait(), so a thread waiting for
	 * events reads nothing another thread's vendor_read() changes. */
	nvml_event_set events;           /* NULL until vendor_events_open() */
	struct nvml_known watched[VENDOR_MAX_BOARDS];
	bool watched_lost[VENDOR_MAX_BOARDS];
	unsigned nwatched;
	char refused[24];                /* the first board that refused events */
};

static const char *const kind_names[VENDOR_NKINDS] = { "NVML", "ROCm SMI", "CNDev" };
static const char *const default_libraries[VENDOR_NKINDS] = {
	NVML_LIBRARY, RSMI_LIBRARY, CNDEV_LIBRARY,
};
static const char *const ras_blocks[VENDOR_RAS_BLOCKS] = {
	"umc", "sdma", "gfx", "mmhub", "athub", "pcie_bif", "hdp",
	"xgmi_wafl", "df", "smn", "sem", "mp0", "mp1", "fuse",
};
static const char *const link_counters[VENDOR_LINK_COUNTERS] = {
	"replay", "recovery", "crc_flit", "crc_data", "ecc_data",
};

const char *
vendor_kind_name(enum vendor_kind k)
{
	return (unsigned)k < VENDOR_NKINDS ? kind_names[k] : "?";
}

const char *
vendor_default_library(enum vendor_kind k)
{
	return (unsigned)k < VENDOR_NKINDS ? default_libraries[k] : "?";
}

const char *
vendor_ras_block_name(unsigned i)
{
	return i < VENDOR_RAS_BLOCKS ? ras_blocks[i] : "?";
}

const char *
vendor_link_counter_name(unsigned i)
{
	return i < VENDOR_LINK_COUNTERS ? link_counters[i] : "?";
}

/* ---- loading ---------------------------------------------------------- */

static int
refuse(char *err, size_t errlen, int rc, const char *path, const char *why)
{
	if (err && errlen)
		snprintf(err, errlen, "%s: %s", path, why);
	return rc;
}

/*
 * PATH opened for loading: every directory on the way judged and links
 * followed only when root's or the caller's (lib/safepath.h), the file
 * itself root's or the caller's, writable by nobody else, and regular.
 * The descriptor, or a negative errno with the reason in ERR.
 */
static int
library_open(const char *path, char *err, size_t errlen)
{
	char why[PATH_MAX + 200];
	struct stat st;
	int fd;

	if (!path || path[0] != '/')
		return refuse(err, errlen, -EINVAL, path ? path : "", "not an absolute path");
	/* O_NONBLOCK: a FIFO planted by the path's owner must not hang us */
	fd = safepath_file_open(path, SAFEPATH_FOLLOW, O_RDONLY | O_NONBLOCK, &st, why,
	                        sizeof(why));
	if (fd == -ENOENT)
		return refuse(err, errlen, -ENOENT, path, "no such file");
	if (fd == -EISDIR || (fd >= 0 && !S_ISREG(st.st_mode))) {
		if (fd >= 0)
			(void)close(fd);
		return refuse(err, errlen, -EPERM, path, "not a regular file");
	}
	if (fd < 0) {
		if (err && errlen)
			snprintf(err, errlen, "%s: refused: %s", path, why);
		return -EPERM;
	}
	return fd;
}

int
vendor_library_check(const char *path, char *err, size_t errlen)
{
	int fd = library_open(path, err, errlen);

	if (fd < 0)
		return fd;
	(void)close(fd);  /* read-only */
	return 0;
}

/*
 * dlopen() of the file open at FD, the very one library_open() judged:
 * by its /proc/self/fd name, so no path is looked up again between the
 * check and the load (a link flipped in between would load another).
 */
static void *
load_fd(int fd)
{
	char proc[64];

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	/* RTLD_LOCAL: the library's symbols must not resolve anything of ours. */
	return dlopen(proc, RTLD_NOW | RTLD_LOCAL);
}

static void
facts_reset(struct vendor_facts *f, enum vendor_kind kind, const char *library)
{
	memset(f, 0, sizeof(*f));
	f->kind = kind;
	f->count = -1;
	snprintf(f->library, sizeof(f->library), "%s", library);
}

static void
board_reset(struct vendor_board *b, int index)
{
	memset(b, 0, sizeof(*b));
	b->index = index;
	b->ecc_enabled = -1;
	b->ecc_volatile[0] = b->ecc_volatile[1] = -1;
	b->ecc_aggregate[0] = b->ecc_aggregate[1] = -1;
	b->retired[0] = b->retired[1] = -1;
	b->retired_pending = -1;
	b->remapped[0] = b->remapped[1] = -1;
	b->remap_pending = b->remap_failure = -1;
	b->recovery = -1;
	b->throttle = -1;
	b->temperature = b->slowdown = -1;
	for (unsigned i = 0; i < VENDOR_MAX_LINKS; i++) {
		b->link[i] = -1;
		for (unsigned c = 0; c < VENDOR_LINK_COUNTERS; c++)
			b->link_errors[i][c] = -1;
	}
	for (unsigned i = 0; i < VENDOR_RAS_BLOCKS; i++)
		b->ras[i][0] = b->ras[i][1] = -1;
	b->health = b->device_state = b->driver_state = -1;
	b->utilization = -1;
	b->memory_used = b->memory_total = -1;
	b->power_mw = -1;
}

static void
set_count(struct vendor_facts *f, unsigned long long n)
{
	f->count = n > INT_MAX ? INT_MAX : (int)n;
}

/* The next board of F, reset, or NULL when F is full. */
static struct vendor_board *
next_board(struct vendor_facts *f, int index)
{
	struct vendor_board *b;

	if (f->nboards >= VENDOR_MAX_BOARDS)
		return NULL;
	b = &f->boards[f->nboards++];
	board_reset(b, index);
	return b;
}

/* "%04x:%02x:%02x.%x", the form sysfs and hwloc use. */
static void
bus_id(char *buf, size_t len, unsigned long domain, unsigned bus, unsigned dev, unsigned fn)
{
	snprintf(buf, len, "%04lx:%02x:%02x.%x", domain, bus & 0xff, dev & 0x1f, fn & 7);
}

#define SYM(l, field, type, name) ((l)->api.field = (type *)dlsym((l)->dl, (name)))

/* ---- NVML ------------------------------------------------------------- */

static const char *
nvml_text(const struct vendor_lib *l, unsigned r)
{
	const char *s = l->api.nvml.error_string ? l->api.nvml.error_string(r) : NULL;

	return s ? s : "error";
}

static void
nvml_error(const struct vendor_lib *l, struct vendor_facts *f, const char *call, unsigned r)
{
	snprintf(f->error, sizeof(f->error), "%s failed: %s (%u)", call, nvml_text(l, r), r);
}

/* NVML_ERROR_NOT_SUPPORTED and NVML_ERROR_FUNCTION_NOT_FOUND: the board or
 * the driver does not offer the fact, which is no failure. */
static bool
nvml_unsupported(unsigned r)
{
	return r == NVML_E_NOT_SUPPORTED || r == NVML_E_FUNCTION_NOT_FOUND;
}

static bool
nvml_load(struct vendor_lib *l)
{
	SYM(l, nvml.init, nvml_void_fn, "nvmlInit_v2");
	SYM(l, nvml.shutdown, nvml_void_fn, "nvmlShutdown");
	SYM(l, nvml.error_string, nvml_error_string_fn, "nvmlErrorString");
	SYM(l, nvml.driver_version, nvml_driver_version_fn, "nvmlSystemGetDriverVersion");
	SYM(l, nvml.count, nvml_count_fn, "nvmlDeviceGetCount_v2");
	SYM(l, nvml.handle, nvml_handle_fn, "nvmlDeviceGetHandleByIndex_v2");
	SYM(l, nvml.handle_by_bus, nvml_handle_by_bus_fn, "nvmlDeviceGetHandleByPciBusId_v2");
	SYM(l, nvml.pci_info, nvml_pci_info_fn, "nvmlDeviceGetPciInfo_v3");
	SYM(l, nvml.name, nvml_name_fn, "nvmlDeviceGetName");
	SYM(l, nvml.ecc_mode, nvml_ecc_mode_fn, "nvmlDeviceGetEccMode");
	SYM(l, nvml.total_ecc, nvml_total_ecc_fn, "nvmlDeviceGetTotalEccErrors");
	SYM(l, nvml.retired_pages, nvml_retired_pages_fn, "nvmlDeviceGetRetiredPages");
	SYM(l, nvml.retired_pending, nvml_retired_pending_fn,
	    "nvmlDeviceGetRetiredPagesPendingStatus");
	SYM(l, nvml.remapped_rows, nvml_remapped_rows_fn, "nvmlDeviceGetRemappedRows");
	SYM(l, nvml.field_values, nvml_field_values_fn, "nvmlDeviceGetFieldValues");
	/* Renamed in CUDA 12.2 (driver 535); the old name stays exported. */
	l->api.nvml.clocks_reasons_name = "nvmlDeviceGetCurrentClocksEventReasons";
	if (!SYM(l, nvml.clocks_reasons, nvml_clocks_reasons_fn,
	         "nvmlDeviceGetCurrentClocksEventReasons")) {
		l->api.nvml.clocks_reasons_name = "nvmlDeviceGetCurrentClocksThrottleReasons";
		SYM(l, nvml.clocks_reasons, nvml_clocks_reasons_fn,
		    "nvmlDeviceGetCurrentClocksThrottleReasons");
	}
	/* nvmlDeviceGetTemperature is deprecated since NVML 13.0; drivers
	 * before its replacement have only the old call. */
	SYM(l, nvml.temperature_v, nvml_temperature_v_fn, "nvmlDeviceGetTemperatureV");
	SYM(l, nvml.temperature, nvml_temperature_fn, "nvmlDeviceGetTemperature");
	SYM(l, nvml.temperature_threshold, nvml_temperature_threshold_fn,
	    "nvmlDeviceGetTemperatureThreshold");
	SYM(l, nvml.nvlink_state, nvml_nvlink_state_fn, "nvmlDeviceGetNvLinkState");
	SYM(l, nvml.nvlink_error, nvml_nvlink_error_fn, "nvmlDeviceGetNvLinkErrorCounter");
	SYM(l, nvml.utilization, nvml_utilization_fn, "nvmlDeviceGetUtilizationRates");
	SYM(l, nvml.memory, nvml_memory_fn, "nvmlDeviceGetMemoryInfo");
	SYM(l, nvml.power, nvml_power_fn, "nvmlDeviceGetPowerUsage");
	SYM(l, nvml.event_set_create, nvml_event_set_create_fn, "nvmlEventSetCreate");
	SYM(l, nvml.register_events, nvml_register_events_fn, "nvmlDeviceRegisterEvents");
	/* _v2 since driver 450; _v1 fills the same first three fields. */
	l->api.nvml.event_set_wait_name = "nvmlEventSetWait_v2";
	if (!SYM(l, nvml.event_set_wait, nvml_event_set_wait_fn, "nvmlEventSetWait_v2")) {
		l->api.nvml.event_set_wait_name = "nvmlEventSetWait";
		SYM(l, nvml.event_set_wait, nvml_event_set_wait_fn, "nvmlEventSetWait");
	}
	SYM(l, nvml.event_set_free, nvml_event_set_free_fn, "nvmlEventSetFree");
	return l->api.nvml.init && l->api.nvml.shutdown && l->api.nvml.count &&
	       l->api.nvml.handle;
}

static int
nvml_open(struct vendor_lib *l, struct vendor_facts *f)
{
	const struct nvml_api *a = &l->api.nvml;
	char buf[96] = "";
	unsigned n = 0, r;

	r = a->init();
	if (r != NVML_OK) {
		nvml_error(l, f, "nvmlInit_v2", r);
		return -EIO;
	}
	if (a->driver_version) {
		r = a->driver_version(buf, sizeof(buf));
		if (r == NVML_OK)
			snprintf(f->version, sizeof(f->version), "%s", buf);
		else
			nvml_error(l, f, "nvmlSystemGetDriverVersion", r);
	}
	r = a->count(&n);
	if (r != NVML_OK) {
		nvml_error(l, f, "nvmlDeviceGetCount_v2", r);
		(void)a->shutdown();  /* the library is unusable either way */
		return -EIO;
	}
	set_count(f, n);
	return 0;
}

/* Add CALL to the calls that failed on B, with NVML's words for the first. */
static void
nvml_failed(const struct nvml_api *a, struct vendor_board *b, const char *call, unsigned r)
{
	const char *text = a->error_string ? a->error_string(r) : NULL;
	size_t used = strlen(b->failed), len = strlen(call);
	const char *p = b->failed;

	while ((p = strstr(p, call)) != NULL) {
		if ((p == b->failed || p[-1] == ' ') && (p[len] == '\0' || p[len] == ','))
			return;  /* listed already */
		p += len;
	}
	if (!b->failed_why[0])
		snprintf(b->failed_why, sizeof(b->failed_why), "%s (%u)", text ? text : "error", r);
	if (used + (used ? 2 : 0) + len < sizeof(b->failed))
		snprintf(b->failed + used, sizeof(b->failed) - used, "%s%s", used ? ", " : "", call);
}

/*
 * Whether CALL's answer R carries a value for board B; a lost board or one
 * that needs a reset is noted on the way, and any other failure but "not
 * supported" is recorded (nvml_failed()).
 */
static bool
nvml_ok(const struct nvml_api *a, struct vendor_board *b, const char *call, unsigned r)
{
	if (r == NVML_OK)
		return true;
	if (r == NVML_E_GPU_IS_LOST) {
		if (!b->lost) {
			b->lost = true;
			snprintf(b->lost_call, sizeof(b->lost_call), "%s", call);
		}
	} else if (r == NVML_E_RESET_REQUIRED) {
		if (!b->reset_required) {
			b->reset_required = true;
			if (!b->lost)
				snprintf(b->lost_call, sizeof(b->lost_call), "%s", call);
		}
	} else if (!nvml_unsupported(r)) {
		nvml_failed(a, b, call, r);
	}
	return false;
}

static void
nvml_identity(const struct nvml_api *a, nvml_device d, struct vendor_board *b)
{
	struct nvml_pci_info pci;
	char name[96] = "";

	memset(&pci, 0, sizeof(pci));
	if (a->pci_info && nvml_ok(a, b, "nvmlDeviceGetPciInfo_v3", a->pci_info(d, &pci))) {
		unsigned long domain;
		unsigned bus, dev, fn = 0;

		pci.bus_id[sizeof(pci.bus_id) - 1] = '\0';
		/* "00000000:3B:00.0": an eight-digit domain, upper case. */
		if (sscanf(pci.bus_id, "%lx:%x:%x.%x", &domain, &bus, &dev, &fn) >= 3)
			bus_id(b->bus_id, sizeof(b->bus_id), domain, bus, dev, fn);
	}
	if (!b->lost && a->name &&
	    nvml_ok(a, b, "nvmlDeviceGetName", a->name(d, name, sizeof(name)))) {
		name[sizeof(name) - 1] = '\0';
		snprintf(b->name, sizeof(b->name), "%s", name);
	}
}

/* The count of a retired-pages query, whichever way the driver answers it. */
static void
nvml_retired(const struct nvml_api *a, nvml_device d, struct vendor_board *b, unsigned cause)
{
	unsigned long long addresses[256];
	unsigned n = 256, r;

	r = a->retired_pages(d, cause, &n, addresses);
	if (r == NVML_E_INSUFFICIENT_SIZE || nvml_ok(a, b, "nvmlDeviceGetRetiredPages", r))
		b->retired[cause] = n;
}

/* The recovery action, read as the integer type the driver says it is. */
static void
nvml_recovery(const struct nvml_api *a, nvml_device d, struct vendor_board *b)
{
	struct nvml_field_value v;

	memset(&v, 0, sizeof(v));
	v.field_id = NVML_FI_GPU_RECOVERY_ACTION;
	if (!nvml_ok(a, b, "nvmlDeviceGetFieldValues", a->field_values(d, 1, &v)) ||
	    !nvml_ok(a, b, "nvmlDeviceGetFieldValues", v.nvml_return))
		return;
	switch (v.value_type) {
	case NVML_VALUE_UINT: b->recovery = (int)v.value.ui; break;
	case NVML_VALUE_SINT: b->recovery = v.value.si; break;
	case NVML_VALUE_ULONG: b->recovery = (int)v.value.ul; break;
	case NVML_VALUE_ULONGLONG: b->recovery = (int)v.value.ull; break;
	case NVML_VALUE_SLONGLONG: b->recovery = (int)v.value.sll; break;
	case NVML_VALUE_USHORT: b->recovery = v.value.us; break;
	default: break;
	}
}

static void
nvml_memory_errors(const struct nvml_api *a, nvml_device d, struct vendor_board *b)
{
	unsigned cur = 0, pend = 0, c = 0, u = 0, p = 0, fail = 0;
	unsigned long long n;

	if (a->ecc_mode && nvml_ok(a, b, "nvmlDeviceGetEccMode", a->ecc_mode(d, &cur, &pend)))
		b->ecc_enabled = cur == NVML_FEATURE_ENABLED;
	for (unsigned t = 0; a->total_ecc && !b->lost && t < 2; t++) {
		if (nvml_ok(a, b, "nvmlDeviceGetTotalEccErrors",
		            a->total_ecc(d, t, NVML_ECC_VOLATILE, &n)))
			b->ecc_volatile[t] = n > LLONG_MAX ? LLONG_MAX : (long long)n;
		if (nvml_ok(a, b, "nvmlDeviceGetTotalEccErrors",
		            a->total_ecc(d, t, NVML_ECC_AGGREGATE, &n)))
			b->ecc_aggregate[t] = n > LLONG_MAX ? LLONG_MAX : (long long)n;
	}
	if (a->retired_pages && !b->lost) {
		nvml_retired(a, d, b, NVML_RETIRED_MULTIPLE_SBE);
		nvml_retired(a, d, b, NVML_RETIRED_DBE);
	}
	if (a->retired_pending && !b->lost &&
	    nvml_ok(a, b, "nvmlDeviceGetRetiredPagesPendingStatus", a->retired_pending(d, &p)))
		b->retired_pending = p == NVML_FEATURE_ENABLED;
	/* Ampere and later: row remapping replaces page retirement. */
	if (a->remapped_rows && !b->lost &&
	    nvml_ok(a, b, "nvmlDeviceGetRemappedRows", a->remapped_rows(d, &c, &u, &p, &fail))) {
		b->remapped[0] = c;
		b->remapped[1] = u;
		b->remap_pending = p != 0;
		b->remap_failure = fail != 0;
	}
	if (a->field_values && !b->lost)
		nvml_recovery(a, d, b);
}

/* The GPU's temperature: nvmlDeviceGetTemperatureV where the library has
 * it and the driver knows its struct, else the deprecated call. */
static void
nvml_temperature(const struct nvml_api *a, nvml_device d, struct vendor_board *b)
{
	unsigned t, r;

	if (a->temperature_v) {
		struct nvml_temperature tv = { NVML_TEMPERATURE_V1, NVML_TEMPERATURE_GPU, 0 };

		r = a->temperature_v(d, &tv);
		if (r != NVML_E_ARGUMENT_VERSION_MISMATCH && r != NVML_E_FUNCTION_NOT_FOUND) {
			if (nvml_ok(a, b, "nvmlDeviceGetTemperatureV", r))
				b->temperature = tv.temperature < 0 ? -1 : tv.temperature;
			return;
		}
	}
	if (a->temperature &&
	    nvml_ok(a, b, "nvmlDeviceGetTemperature", a->temperature(d, NVML_TEMPERATURE_GPU, &t)))
		b->temperature = t > INT_MAX ? INT_MAX : (int)t;
}

static void
nvml_clocks(const struct nvml_api *a, nvml_device d, struct vendor_board *b)
{
	unsigned long long reasons;
	unsigned t;

	if (a->clocks_reasons &&
	    nvml_ok(a, b, a->clocks_reasons_name, a->clocks_reasons(d, &reasons)))
		b->throttle = (long long)(reasons & 0xffffffffULL);
	if (!b->lost)
		nvml_temperature(a, d, b);
	if (a->temperature_threshold && !b->lost &&
	    nvml_ok(a, b, "nvmlDeviceGetTemperatureThreshold",
	            a->temperature_threshold(d, NVML_TEMPERATURE_THRESHOLD_SLOWDOWN, &t)))
		b->slowdown = t > INT_MAX ? INT_MAX : (int)t;
}

static void
nvml_links(const struct nvml_api *a, nvml_device d, struct vendor_board *b)
{
	for (unsigned i = 0; a->nvlink_state && !b->lost && i < VENDOR_MAX_LINKS; i++) {
		unsigned active = 0, r;

		r = a->nvlink_state(d, i, &active);
		/* NOT_SUPPORTED on link 0: no NVLink at all.  INVALID_ARGUMENT:
		 * past the board's last link. */
		if (r == NVML_E_INVALID_ARGUMENT || (r == NVML_E_NOT_SUPPORTED && i == 0))
			break;
		if (!nvml_ok(a, b, "nvmlDeviceGetNvLinkState", r))
			continue;
		b->link[i] = active == NVML_FEATURE_ENABLED;
		for (unsigned c = 0; a->nvlink_error && c < VENDOR_LINK_COUNTERS; c++) {
			unsigned long long v;

			if (nvml_ok(a, b, "nvmlDeviceGetNvLinkErrorCounter",
			            a->nvlink_error(d, i, c, &v)))
				b->link_errors[i][c] = v > LLONG_MAX ? LLONG_MAX : (long long)v;
		}
	}
}

static void
nvml_usage(const struct nvml_api *a, nvml_device d, struct vendor_board *b)
{
	struct nvml_utilization u;
	struct nvml_memory m;
	unsigned mw;

	if (a->utilization &&
	    nvml_ok(a, b, "nvmlDeviceGetUtilizationRates", a->utilization(d, &u)))
		b->utilization = u.gpu > 100 ? 100 : (int)u.gpu;
	if (a->memory && !b->lost && nvml_ok(a, b, "nvmlDeviceGetMemoryInfo", a->memory(d, &m))) {
		b->memory_used = m.used > LLONG_MAX ? LLONG_MAX : (long long)m.used;
		b->memory_total = m.total > LLONG_MAX ? LLONG_MAX : (long long)m.total;
	}
	if (a->power && !b->lost && nvml_ok(a, b, "nvmlDeviceGetPowerUsage", a->power(d, &mw)))
		b->power_mw = mw;
}

/* The entry of L's known boards for handle D, or NULL. */
static struct nvml_known *
nvml_known_of(struct vendor_lib *l, nvml_device d)
{
	for (unsigned i = 0; d && i < l->nknown; i++)
		if (l->known[i].device == d)
			return &l->known[i];
	return NULL;
}

/* Board B, handle D, was named: remember it for the library's life. */
static void
nvml_remember(struct vendor_lib *l, nvml_device d, const struct vendor_board *b)
{
	struct nvml_known *k = nvml_known_of(l, d);

	if (!b->bus_id[0])
		return;
	if (!k && l->nknown < VENDOR_MAX_BOARDS)
		k = &l->known[l->nknown++];
	if (!k)
		return;
	k->device = d;
	k->index = b->index;
	snprintf(k->bus_id, sizeof(k->bus_id), "%s", b->bus_id);
}

static bool
named_in(const struct vendor_facts *f, const char *bus)
{
	for (size_t i = 0; i < f->nboards; i++)
		if (strcmp(f->boards[i].bus_id, bus) == 0)
			return true;
	return false;
}

/*
 * Look BUS up (nvmlDeviceGetHandleByPciBusId_v2) for the boards of F that
 * have no name yet: the board whose handle it returns takes it; a lost
 * answer goes to the first lost board without a name (a board that fell
 * off the bus answers no call that would name it).
 */
static void
nvml_look_up(const struct vendor_lib *l, struct vendor_facts *f, const nvml_device *handles,
             const char *bus)
{
	const struct nvml_api *a = &l->api.nvml;
	nvml_device d = NULL;
	unsigned r = a->handle_by_bus(bus, &d);

	for (size_t i = 0; i < f->nboards; i++) {
		struct vendor_board *b = &f->boards[i];

		if (b->bus_id[0])
			continue;
		if ((r == NVML_OK && handles[i] && handles[i] == d) ||
		    (r == NVML_E_GPU_IS_LOST && b->lost)) {
			snprintf(b->bus_id, sizeof(b->bus_id), "%s", bus);
			return;
		}
		if (r != NVML_OK && r != NVML_E_GPU_IS_LOST && r != NVML_E_NOT_FOUND)
			nvml_failed(a, b, "nvmlDeviceGetHandleByPciBusId_v2", r);
	}
}

/* Name the boards of F whose PCI identity could not be read. */
static void
nvml_name_boards(struct vendor_lib *l, struct vendor_facts *f, const nvml_device *handles)
{
	unsigned nameless = 0;

	for (size_t i = 0; i < f->nboards; i++) {
		struct vendor_board *b = &f->boards[i];
		const struct nvml_known *k = nvml_known_of(l, handles[i]);

		if (b->bus_id[0])
			continue;
		if (k)
			snprintf(b->bus_id, sizeof(b->bus_id), "%s", k->bus_id);
		else
			nameless++;
	}
	/* The bus ids the node should have, then those named before. */
	for (unsigned i = 0; nameless && l->api.nvml.handle_by_bus && i < l->nexpect + l->nknown;
	     i++) {
		const char *bus = i < l->nexpect ? l->expect[i] : l->known[i - l->nexpect].bus_id;

		if (bus[0] && !named_in(f, bus)) {
			nvml_look_up(l, f, handles, bus);
			nameless -= named_in(f, bus);
		}
	}
}

static int
nvml_read(struct vendor_lib *l, struct vendor_facts *f)
{
	const struct nvml_api *a = &l->api.nvml;
	nvml_device handles[VENDOR_MAX_BOARDS] = { NULL };
	unsigned n = 0, r;

	r = a->count(&n);
	if (r != NVML_OK) {
		nvml_error(l, f, "nvmlDeviceGetCount_v2", r);
		return -EIO;
	}
	set_count(f, n);
	for (unsigned i = 0; i < n; i++) {
		struct vendor_board *b = next_board(f, (int)i);
		nvml_device d = NULL;

		if (!b)
			break;
		if (!nvml_ok(a, b, "nvmlDeviceGetHandleByIndex_v2", a->handle(i, &d)))
			continue;
		handles[f->nboards - 1] = d;
		nvml_identity(a, d, b);
		nvml_remember(l, d, b);
		if (!b->lost)
			nvml_memory_errors(a, d, b);
		if (!b->lost)
			nvml_clocks(a, d, b);
		if (!b->lost)
			nvml_links(a, d, b);
		if (!b->lost)
			nvml_usage(a, d, b);
	}
	nvml_name_boards(l, f, handles);
	return 0;
}

/* ---- ROCm SMI --------------------------------------------------------- */

static void
rsmi_error(const struct vendor_lib *l, struct vendor_facts *f, const char *call, uint32_t r)
{
	const char *s = NULL;

	if (!l->api.rsmi.status_string || l->api.rsmi.status_string(r, &s) != RSMI_OK || !s)
		s = "error";
	snprintf(f->error, sizeof(f->error), "%s failed: %s (%u)", call, s, r);
}

static bool
rsmi_load(struct vendor_lib *l)
{
	SYM(l, rsmi.init, rsmi_init_fn, "rsmi_init");
	SYM(l, rsmi.shut_down, rsmi_shut_down_fn, "rsmi_shut_down");
	SYM(l, rsmi.num_devices, rsmi_num_devices_fn, "rsmi_num_monitor_devices");
	SYM(l, rsmi.status_string, rsmi_status_string_fn, "rsmi_status_string");
	SYM(l, rsmi.version_str, rsmi_version_str_fn, "rsmi_version_str_get");
	SYM(l, rsmi.pci_id, rsmi_pci_id_fn, "rsmi_dev_pci_id_get");
	SYM(l, rsmi.name, rsmi_name_fn, "rsmi_dev_name_get");
	SYM(l, rsmi.temp_metric, rsmi_temp_metric_fn, "rsmi_dev_temp_metric_get");
	SYM(l, rsmi.ecc_enabled, rsmi_ecc_enabled_fn, "rsmi_dev_ecc_enabled_get");
	SYM(l, rsmi.ecc_count, rsmi_ecc_count_fn, "rsmi_dev_ecc_count_get");
	SYM(l, rsmi.busy_percent, rsmi_busy_percent_fn, "rsmi_dev_busy_percent_get");
	SYM(l, rsmi.memory_total, rsmi_memory_fn, "rsmi_dev_memory_total_get");
	SYM(l, rsmi.memory_usage, rsmi_memory_fn, "rsmi_dev_memory_usage_get");
	SYM(l, rsmi.power_ave, rsmi_power_ave_fn, "rsmi_dev_power_ave_get");
	/* ROCm 6: newer boards report current socket power only. */
	SYM(l, rsmi.socket_power, rsmi_socket_power_fn, "rsmi_dev_current_socket_power_get");
	SYM(l, rsmi.gpu_metrics, rsmi_gpu_metrics_fn, "rsmi_dev_gpu_metrics_info_get");
	return l->api.rsmi.init && l->api.rsmi.shut_down && l->api.rsmi.num_devices;
}

static int
rsmi_open(struct vendor_lib *l, struct vendor_facts *f)
{
	const struct rsmi_api *a = &l->api.rsmi;
	char buf[64] = "";
	uint32_t n = 0, r;

	r = a->init(0);
	if (r != RSMI_OK) {
		rsmi_error(l, f, "rsmi_init", r);
		return -EIO;
	}
	if (a->version_str && a->version_str(RSMI_SW_COMP_DRIVER, buf, sizeof(buf)) == RSMI_OK) {
		buf[sizeof(buf) - 1] = '\0';
		snprintf(f->version, sizeof(f->version), "%s", buf);
	}
	r = a->num_devices(&n);
	if (r != RSMI_OK) {
		rsmi_error(l, f, "rsmi_num_monitor_devices", r);
		(void)a->shut_down();
		return -EIO;
	}
	set_count(f, n);
	return 0;
}

/* Degrees Celsius of SENSOR's METRIC, or -1. */
static int
rsmi_celsius(const struct rsmi_api *a, uint32_t dev, uint32_t sensor, uint32_t metric)
{
	int64_t mc = 0;

	if (a->temp_metric(dev, sensor, metric, &mc) != RSMI_OK || mc < 0 || mc / 1000 > INT_MAX)
		return -1;
	return (int)(mc / 1000);
}

static void
rsmi_temperature(const struct rsmi_api *a, uint32_t dev, struct vendor_board *b)
{
	/* The junction (hotspot) is what the firmware throttles on; boards
	 * before Vega 20 have the edge sensor only. */
	b->temperature = rsmi_celsius(a, dev, RSMI_TEMP_TYPE_JUNCTION, RSMI_TEMP_CURRENT);
	if (b->temperature >= 0) {
		b->slowdown = rsmi_celsius(a, dev, RSMI_TEMP_TYPE_JUNCTION, RSMI_TEMP_CRITICAL);
		return;
	}
	b->temperature = rsmi_celsius(a, dev, RSMI_TEMP_TYPE_EDGE, RSMI_TEMP_CURRENT);
	if (b->temperature >= 0)
		b->slowdown = rsmi_celsius(a, dev, RSMI_TEMP_TYPE_EDGE, RSMI_TEMP_CRITICAL);
}

static void
rsmi_ras(const struct rsmi_api *a, uint32_t dev, struct vendor_board *b)
{
	uint64_t enabled = 0;

	if (!a->ecc_enabled || !a->ecc_count || a->ecc_enabled(dev, &enabled) != RSMI_OK)
		return;
	b->ecc_enabled = enabled != 0;
	for (unsigned i = 0; i < VENDOR_RAS_BLOCKS; i++) {
		struct rsmi_error_count ec = { 0, 0 };
		unsigned long block = (unsigned long)(RSMI_GPU_BLOCK_FIRST << i);

		if (!(enabled & block) || a->ecc_count(dev, block, &ec) != RSMI_OK)
			continue;
		b->ras[i][0] = ec.correctable_err > LLONG_MAX ? LLONG_MAX : (long long)ec.correctable_err;
		b->ras[i][1] = ec.uncorrectable_err > LLONG_MAX ? LLONG_MAX
		                                                : (long long)ec.uncorrectable_err;
	}
}

static void
rsmi_usage(const struct rsmi_api *a, uint32_t dev, struct vendor_board *b)
{
	uint64_t v = 0;
	uint32_t pct = 0;

	if (a->busy_percent && a->busy_percent(dev, &pct) == RSMI_OK)
		b->utilization = pct > 100 ? 100 : (int)pct;
	if (a->memory_total && a->memory_total(dev, RSMI_MEM_TYPE_VRAM, &v) == RSMI_OK)
		b->memory_total = v > LLONG_MAX ? LLONG_MAX : (long long)v;
	if (a->memory_usage && a->memory_usage(dev, RSMI_MEM_TYPE_VRAM, &v) == RSMI_OK)
		b->memory_used = v > LLONG_MAX ? LLONG_MAX : (long long)v;
	/* Microwatts. */
	if ((a->power_ave && a->power_ave(dev, 0, &v) == RSMI_OK) ||
	    (a->socket_power && a->socket_power(dev, &v) == RSMI_OK))
		b->power_mw = (long long)(v / 1000);
}

static void
rsmi_throttle(const struct rsmi_api *a, uint32_t dev, struct vendor_board *b)
{
	/* The library writes its whole rsmi_gpu_metrics_t, whose size grows
	 * with each version: give it room, read the common prefix. */
	uint64_t *buf;
	struct rsmi_metrics_prefix p;

	if (!a->gpu_metrics)
		return;
	buf = calloc(1, RSMI_METRICS_BUFFER);
	if (!buf)
		return;
	if (a->gpu_metrics(dev, buf) == RSMI_OK) {
		memcpy(&p, buf, sizeof(p));
		b->throttle = p.throttle_status;
	}
	free(buf);
}

static int
rsmi_read(struct vendor_lib *l, struct vendor_facts *f)
{
	const struct rsmi_api *a = &l->api.rsmi;
	uint32_t n = 0, r;

	r = a->num_devices(&n);
	if (r != RSMI_OK) {
		rsmi_error(l, f, "rsmi_num_monitor_devices", r);
		return -EIO;
	}
	set_count(f, n);
	for (uint32_t i = 0; i < n; i++) {
		struct vendor_board *b = next_board(f, (int)i);
		uint64_t bdf = 0;
		char name[96] = "";

		if (!b)
			break;
		/* BDFID: domain in bits 63-32, bus 15-8, device 7-3, function 2-0. */
		if (a->pci_id && a->pci_id(i, &bdf) == RSMI_OK)
			bus_id(b->bus_id, sizeof(b->bus_id), (unsigned long)(bdf >> 32),
			       (unsigned)(bdf >> 8), (unsigned)(bdf >> 3), (unsigned)bdf);
		if (a->name && a->name(i, name, sizeof(name)) == RSMI_OK) {
			name[sizeof(name) - 1] = '\0';
			snprintf(b->name, sizeof(b->name), "%s", name);
		}
		if (a->temp_metric)
			rsmi_temperature(a, i, b);
		rsmi_ras(a, i, b);
		rsmi_usage(a, i, b);
		rsmi_throttle(a, i, b);
	}
	return 0;
}

/* ---- CNDev ------------------------------------------------------------ */

static void
cndev_error(const struct vendor_lib *l, struct vendor_facts *f, const char *call, uint32_t r)
{
	const char *s = l->api.cndev.error_string ? l->api.cndev.error_string(r) : NULL;

	snprintf(f->error, sizeof(f->error), "%s failed: %s (%u)", call, s ? s : "error", r);
}

static bool
cndev_load(struct vendor_lib *l)
{
	SYM(l, cndev.init, cndev_init_fn, "cndevInit");
	SYM(l, cndev.release, cndev_release_fn, "cndevRelease");
	SYM(l, cndev.error_string, cndev_error_string_fn, "cndevGetErrorString");
	SYM(l, cndev.count, cndev_count_fn, "cndevGetDeviceCount");
	SYM(l, cndev.handle, cndev_handle_fn, "cndevGetDeviceHandleByIndex");
	SYM(l, cndev.version, cndev_version_fn, "cndevGetVersionInfo");
	SYM(l, cndev.health, cndev_health_fn, "cndevGetCardHealthState");
	SYM(l, cndev.ecc, cndev_ecc_fn, "cndevGetECCInfo");
	SYM(l, cndev.temperature, cndev_temperature_fn, "cndevGetTemperatureInfo");
	SYM(l, cndev.utilization, cndev_utilization_fn, "cndevGetDeviceUtilizationInfo");
	SYM(l, cndev.memory, cndev_memory_fn, "cndevGetMemoryUsageV2");
	SYM(l, cndev.power, cndev_power_fn, "cndevGetDevicePowerInfo");
	SYM(l, cndev.pcie, cndev_pcie_fn, "cndevGetPCIeInfoV2");
	return l->api.cndev.init && l->api.cndev.release && l->api.cndev.count;
}

/* The device handle of INDEX: cndevGetDeviceHandleByIndex since CNDev 5,
 * the index itself before. */
static int32_t
cndev_device(const struct cndev_api *a, uint32_t index)
{
	int32_t dev = (int32_t)index;

	if (a->handle && a->handle((int32_t)index, &dev) != CNDEV_OK)
		dev = (int32_t)index;
	return dev;
}

static int
cndev_count(struct vendor_lib *l, struct vendor_facts *f)
{
	struct cndev_card_info ci;
	uint32_t r;

	/* A library older than the API version named refuses it; ask again
	 * with the previous one, whose struct is the same. */
	memset(&ci, 0, sizeof(ci));
	ci.version = l->cndev_version;
	r = l->api.cndev.count(&ci);
	if (r == CNDEV_E_UNSUPPORTED_API_VERSION && l->cndev_version == CNDEV_API_VERSION) {
		l->cndev_version = CNDEV_API_VERSION - 1;
		memset(&ci, 0, sizeof(ci));
		ci.version = l->cndev_version;
		r = l->api.cndev.count(&ci);
	}
	if (r != CNDEV_OK) {
		cndev_error(l, f, "cndevGetDeviceCount", r);
		return -EIO;
	}
	set_count(f, ci.number);
	return 0;
}

static int
cndev_open(struct vendor_lib *l, struct vendor_facts *f)
{
	const struct cndev_api *a = &l->api.cndev;
	struct cndev_version_info vi;
	uint32_t r;

	r = a->init(0);
	if (r != CNDEV_OK) {
		cndev_error(l, f, "cndevInit", r);
		return -EIO;
	}
	l->cndev_version = CNDEV_API_VERSION;
	if (cndev_count(l, f) < 0) {
		(void)a->release();
		return -EIO;
	}
	if (a->version && f->count > 0) {
		memset(&vi, 0, sizeof(vi));
		vi.version = l->cndev_version;
		if (a->version(&vi, cndev_device(a, 0)) == CNDEV_OK)
			snprintf(f->version, sizeof(f->version), "%u.%u.%u", vi.driver_major,
			         vi.driver_minor, vi.driver_build);
	}
	return 0;
}

/* CNDev answers CNDEV_E_IN_PROBLEM for a device in trouble: a fact too. */
static bool
cndev_ok(struct vendor_board *b, uint32_t r)
{
	if (r == CNDEV_E_IN_PROBLEM) {
		b->health = 0;
		b->device_state = CNDEV_DEVICE_IN_PROBLEM;
	}
	return r == CNDEV_OK;
}

static void
cndev_board_health(const struct vendor_lib *l, int32_t dev, struct vendor_board *b)
{
	const struct cndev_api *a = &l->api.cndev;
	struct cndev_health h;
	struct cndev_ecc_info e;

	memset(&h, 0, sizeof(h));
	h.version = l->cndev_version;
	if (a->health && cndev_ok(b, a->health(&h, dev))) {
		b->health = h.health != 0;
		b->device_state = (int)h.device_state;
		b->driver_state = (int)h.driver_state;
	}
	memset(&e, 0, sizeof(e));
	e.version = l->cndev_version;
	if (a->ecc && cndev_ok(b, a->ecc(&e, dev))) {
		/* CNDev does not say since when it counts: taken as the
		 * driver's count, like NVML's volatile one. */
		b->ecc_volatile[0] = e.corrected_error > LLONG_MAX ? LLONG_MAX
		                                                   : (long long)e.corrected_error;
		b->ecc_volatile[1] = e.uncorrected_error > LLONG_MAX ? LLONG_MAX
		                                                     : (long long)e.uncorrected_error;
		b->ecc_enabled = 1;
	}
}

static void
cndev_board_usage(const struct vendor_lib *l, int32_t dev, struct vendor_board *b)
{
	const struct cndev_api *a = &l->api.cndev;
	struct cndev_temperature_info t;
	struct cndev_utilization_info u;
	struct cndev_memory_info_v2 m;
	struct cndev_power_info p;

	memset(&t, 0, sizeof(t));
	t.version = l->cndev_version;
	if (a->temperature && cndev_ok(b, a->temperature(&t, dev)))
		b->temperature = t.chip > 0 ? t.chip : t.board;
	memset(&u, 0, sizeof(u));
	u.version = l->cndev_version;
	if (a->utilization && cndev_ok(b, a->utilization(&u, dev)) &&
	    u.average_core_utilization >= 0)
		b->utilization = u.average_core_utilization > 100 ? 100 : u.average_core_utilization;
	memset(&m, 0, sizeof(m));
	if (a->memory && cndev_ok(b, a->memory(&m, dev)) && m.physical_total >= 0 &&
	    m.physical_used >= 0 && m.physical_total < (LLONG_MAX >> 20)) {
		b->memory_total = m.physical_total << 20;   /* MiB */
		b->memory_used = m.physical_used << 20;
	}
	memset(&p, 0, sizeof(p));
	if (a->power && cndev_ok(b, a->power(&p, dev)) && p.usage >= 0)
		b->power_mw = (long long)p.usage * 1000;   /* watts */
}

static int
cndev_read(struct vendor_lib *l, struct vendor_facts *f)
{
	const struct cndev_api *a = &l->api.cndev;
	int rc = cndev_count(l, f);

	if (rc < 0)
		return rc;
	for (int i = 0; i < f->count; i++) {
		struct vendor_board *b = next_board(f, i);
		struct cndev_pcie_info_v2 pci;
		int32_t dev = cndev_device(a, (uint32_t)i);

		if (!b)
			break;
		memset(&pci, 0, sizeof(pci));
		if (a->pcie && cndev_ok(b, a->pcie(&pci, dev)))
			bus_id(b->bus_id, sizeof(b->bus_id), pci.domain, pci.bus, pci.device,
			       pci.function);
		cndev_board_health(l, dev, b);
		cndev_board_usage(l, dev, b);
	}
	return 0;
}

/* ---- the interface ---------------------------------------------------- */

int
vendor_open(enum vendor_kind kind, const char *path, struct vendor_lib **out,
            struct vendor_facts *f)
{
	struct vendor_lib *l;
	const char *e;
	bool complete;
	int rc, fd = -1;

	*out = NULL;
	if ((unsigned)kind >= VENDOR_NKINDS)
		return -EINVAL;
	facts_reset(f, kind, path ? path : default_libraries[kind]);
	if (path) {
		fd = library_open(path, f->error, sizeof(f->error));
		if (fd < 0)
			return fd == -ENOENT ? -ENOENT : -EPERM;
	}
	l = calloc(1, sizeof(*l));
	if (!l) {
		if (fd >= 0)
			(void)close(fd);
		snprintf(f->error, sizeof(f->error), "out of memory");
		return -ENOMEM;
	}
	l->kind = kind;
	/* A default name is looked up as the dynamic linker always does. */
	l->dl = fd >= 0 ? load_fd(fd) : dlopen(f->library, RTLD_NOW | RTLD_LOCAL);
	if (fd >= 0)
		(void)close(fd);  /* mapped (or not) by now: the descriptor is done */
	if (!l->dl) {
		e = dlerror();
		snprintf(f->error, sizeof(f->error), "%s", e ? e : "cannot be loaded");
		free(l);
		return -ENOENT;
	}
	complete = kind == VENDOR_NVML ? nvml_load(l) : kind == VENDOR_RSMI ? rsmi_load(l)
	                                                                    : cndev_load(l);
	if (!complete) {
		snprintf(f->error, sizeof(f->error), "%.120s lacks the %s entry points vigil uses",
		         f->library, kind_names[kind]);
		rc = -ENOSYS;
		goto fail;
	}
	rc = kind == VENDOR_NVML ? nvml_open(l, f) : kind == VENDOR_RSMI ? rsmi_open(l, f)
	                                                                  : cndev_open(l, f);
	if (rc < 0)
		goto fail;
	snprintf(l->open_error, sizeof(l->open_error), "%s", f->error);
	*out = l;
	return 0;
fail:
	(void)dlclose(l->dl);
	free(l);
	return rc;
}

int
vendor_read(struct vendor_lib *l, struct vendor_facts *f)
{
	f->nboards = 0;
	snprintf(f->error, sizeof(f->error), "%s", l->open_error);
	switch (l->kind) {
	case VENDOR_NVML:
		return nvml_read(l, f);
	case VENDOR_RSMI:
		return rsmi_read(l, f);
	case VENDOR_CNDEV:
		return cndev_read(l, f);
	}
	return -EINVAL;
}

void
vendor_expect(struct vendor_lib *l, const char *const *bus_ids, size_t n)
{
	l->nexpect = 0;
	for (size_t i = 0; i < n && l->nexpect < VENDOR_MAX_BOARDS; i++)
		snprintf(l->expect[l->nexpect++], sizeof(l->expect[0]), "%s", bus_ids[i]);
}

/* Register board K for XIDs, and for double-bit ECC errors where it has ECC. */
static unsigned
nvml_register(const struct vendor_lib *l, const struct nvml_known *k)
{
	const struct nvml_api *a = &l->api.nvml;
	unsigned r;

	r = a->register_events(k->device, NVML_EVENT_XID_CRITICAL | NVML_EVENT_DOUBLE_BIT_ECC,
	                       l->events);
	/* Boards without ECC refuse the ECC event ("none of the requested
	 * types are registered", nvml.h): XIDs alone then. */
	if (r == NVML_E_NOT_SUPPORTED)
		r = a->register_events(k->device, NVML_EVENT_XID_CRITICAL, l->events);
	return r;
}

int
vendor_events_open(struct vendor_lib *l, char *err, size_t errlen)
{
	const struct nvml_api *a = &l->api.nvml;
	unsigned r, refused = 0;

	err[0] = '\0';
	if (l->kind != VENDOR_NVML || !a->event_set_create || !a->register_events ||
	    !a->event_set_wait || !a->event_set_free) {
		snprintf(err, errlen, "%s offers no events", kind_names[l->kind]);
		return -ENOTSUP;
	}
	if (l->nknown == 0) {
		snprintf(err, errlen, "no board to watch: NVML named none");
		return -ENOTSUP;
	}
	r = a->event_set_create(&l->events);
	if (r != NVML_OK) {
		snprintf(err, errlen, "nvmlEventSetCreate failed: %s (%u)", nvml_text(l, r), r);
		l->events = NULL;
		return -EIO;
	}
	l->nwatched = 0;
	for (unsigned i = 0; i < l->nknown; i++) {
		r = nvml_register(l, &l->known[i]);
		if (r == NVML_OK) {
			l->watched_lost[l->nwatched] = false;
			l->watched[l->nwatched++] = l->known[i];
			continue;
		}
		if (refused++ == 0) {
			snprintf(l->refused, sizeof(l->refused), "%s", l->known[i].bus_id);
			snprintf(err, errlen, "nvmlDeviceRegisterEvents failed on %s: %s (%u)",
			         l->known[i].bus_id, nvml_text(l, r), r);
		}
		/* "If function reports NVML_ERROR_UNKNOWN, event set is in
		 * undefined state and should be freed" (nvml.h). */
		if (r == NVML_E_UNKNOWN) {
			l->nwatched = 0;
			break;
		}
	}
	if (refused > 1) {
		size_t used = strlen(err);

		snprintf(err + used, errlen - used, ", and on %u more board%s", refused - 1,
		         refused > 2 ? "s" : "");
	}
	if (l->nwatched == 0) {
		(void)a->event_set_free(l->events);
		l->events = NULL;
		return r == NVML_E_UNKNOWN ? -EIO : -ENOTSUP;
	}
	return 0;
}

const char *
vendor_events_refused(const struct vendor_lib *l)
{
	return l->refused;
}

/* The wait answered "a GPU is lost": which registered board, looked up by
 * its bus id; one not named before first. */
static void
nvml_lost_board(struct vendor_lib *l, struct vendor_event *ev)
{
	const struct nvml_api *a = &l->api.nvml;
	int first = -1;

	for (unsigned i = 0; a->handle_by_bus && i < l->nwatched; i++) {
		nvml_device d = NULL;

		if (a->handle_by_bus(l->watched[i].bus_id, &d) != NVML_E_GPU_IS_LOST)
			continue;
		if (first < 0)
			first = (int)i;
		if (!l->watched_lost[i]) {
			first = (int)i;
			break;
		}
	}
	if (first < 0)
		return;
	l->watched_lost[first] = true;
	ev->board = l->watched[first].index;
	snprintf(ev->bus_id, sizeof(ev->bus_id), "%s", l->watched[first].bus_id);
}

int
vendor_events_wait(struct vendor_lib *l, unsigned timeout_ms, struct vendor_event *ev,
                   char *err, size_t errlen)
{
	const struct nvml_api *a = &l->api.nvml;
	struct nvml_event_data d;
	unsigned r;

	if (l->kind != VENDOR_NVML || !l->events)
		return -ENOTSUP;
	memset(&d, 0, sizeof(d));
	memset(ev, 0, sizeof(*ev));
	ev->board = -1;
	r = a->event_set_wait(l->events, &d, timeout_ms);
	if (r == NVML_E_TIMEOUT)
		return -ETIMEDOUT;
	if (r == NVML_E_GPU_IS_LOST) {
		ev->kind = VENDOR_EVENT_LOST;
		nvml_lost_board(l, ev);
		return 0;
	}
	if (r != NVML_OK) {
		if (err && errlen)
			snprintf(err, errlen, "%s failed: %s (%u)", a->event_set_wait_name,
			         nvml_text(l, r), r);
		return -EIO;
	}
	for (unsigned i = 0; i < l->nwatched; i++) {
		if (l->watched[i].device == d.device) {
			ev->board = l->watched[i].index;
			snprintf(ev->bus_id, sizeof(ev->bus_id), "%s", l->watched[i].bus_id);
		}
	}
	if (d.event_type & NVML_EVENT_XID_CRITICAL) {
		ev->kind = VENDOR_EVENT_XID;
		ev->xid = d.event_data;
	} else {
		ev->kind = VENDOR_EVENT_DBE;
	}
	return 0;
}

void
vendor_close(struct vendor_lib *l)
{
	if (!l)
		return;
	/* Failures here change nothing: the process is done with the library. */
	switch (l->kind) {
	case VENDOR_NVML:
		if (l->events)
			(void)l->api.nvml.event_set_free(l->events);
		(void)l->api.nvml.shutdown();
		break;
	case VENDOR_RSMI:
		(void)l->api.rsmi.shut_down();
		break;
	case VENDOR_CNDEV:
		(void)l->api.cndev.release();
		break;
	}
	(void)dlclose(l->dl);
	free(l);
}

/* ---- the slot check's query ------------------------------------------- */

static int
query(enum vendor_kind kind, struct vendor_info *out)
{
	struct vendor_facts *f = malloc(sizeof(*f));
	struct vendor_lib *l = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	out->count = -1;
	snprintf(out->library, sizeof(out->library), "%s", default_libraries[kind]);
	if (!f) {
		snprintf(out->error, sizeof(out->error), "out of memory");
		return -ENOMEM;
	}
	rc = vendor_open(kind, NULL, &l, f);
	snprintf(out->version, sizeof(out->version), "%s", f->version);
	snprintf(out->error, sizeof(out->error), "%.159s", f->error);
	out->count = f->count;
	vendor_close(l);
	free(f);
	return rc;
}

int
vendor_nvml_query(struct vendor_info *out)
{
	return query(VENDOR_NVML, out);
}

int
vendor_cndev_query(struct vendor_info *out)
{
	return query(VENDOR_CNDEV, out);
}
