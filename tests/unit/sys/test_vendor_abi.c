/*
 * test_vendor_abi.c - vigil's own declarations of the vendors' interfaces
 * (src/sys/vendor_abi.h) against the real headers: ROCm SMI's, which
 * Debian ships (librocm-smi-dev, librocm-smi64-1), and NVML's where CUDA's
 * <nvml.h> is installed (it comes with the CUDA toolkit, not with Debian);
 * CNDev's comes only with its driver.
 *
 * At compile time: struct sizes and offsets, constants and function types
 * as <rocm_smi/rocm_smi.h> and <nvml.h> declare them (NVML's handles are
 * opaque pointers of another name: its functions are compared with the
 * handle type replaced, see NVML_SAME_TYPE).  At run time: the real ROCm
 * SMI library loaded through vigil's dlopen() path answers rsmi_init; on a
 * node without AMD boards it fails, and vigil turns that into a reason.
 */
#include "autoconf.h"

#include "../vigil_test.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#if defined(__has_include)
#if __has_include(<rocm_smi/rocm_smi.h>)
#define HAVE_RSMI_HEADER 1
#include <rocm_smi/rocm_smi.h>
#endif
#if __has_include(<nvml.h>)
#define HAVE_NVML_HEADER 1
#include <nvml.h>
/* vigil's opaque handles become NVML's own, so that function types compare. */
#define nvml_device_st nvmlDevice_st
#define nvml_event_set_st nvmlEventSet_st
/* The values of the names vendor_abi.h also defines, as nvml.h has them,
 * before its macros hide them. */
enum {
	REAL_FEATURE_DISABLED = NVML_FEATURE_DISABLED,
	REAL_FEATURE_ENABLED = NVML_FEATURE_ENABLED,
	REAL_TEMPERATURE_GPU = NVML_TEMPERATURE_GPU,
	REAL_THRESHOLD_SHUTDOWN = NVML_TEMPERATURE_THRESHOLD_SHUTDOWN,
	REAL_THRESHOLD_SLOWDOWN = NVML_TEMPERATURE_THRESHOLD_SLOWDOWN,
	REAL_DL_REPLAY = NVML_NVLINK_ERROR_DL_REPLAY,
	REAL_DL_RECOVERY = NVML_NVLINK_ERROR_DL_RECOVERY,
	REAL_DL_CRC_FLIT = NVML_NVLINK_ERROR_DL_CRC_FLIT,
	REAL_DL_CRC_DATA = NVML_NVLINK_ERROR_DL_CRC_DATA,
	REAL_DL_ECC_DATA = NVML_NVLINK_ERROR_DL_ECC_DATA,
	REAL_NVLINK_ERROR_COUNT = NVML_NVLINK_ERROR_COUNT,
};
#endif
#endif

#include "check/vhealth.h"
#include "conf/config.h"
#include "sys/vendor.h"
#include "sys/vendor_abi.h"

#ifdef HAVE_RSMI_HEADER

#define SAME_SIZE(real, ours) _Static_assert(sizeof(real) == sizeof(ours), #ours " size")
#define SAME_OFFSET(real, rf, ours, of) \
	_Static_assert(offsetof(real, rf) == offsetof(ours, of), #ours "." #of " offset")
#define SAME_TYPE(fn, ours) \
	_Static_assert(__builtin_types_compatible_p(__typeof__(&fn), ours *), #fn " type")

SAME_SIZE(rsmi_error_count_t, struct rsmi_error_count);
SAME_OFFSET(rsmi_error_count_t, uncorrectable_err, struct rsmi_error_count, uncorrectable_err);
SAME_SIZE(struct metrics_table_header_t, struct rsmi_metrics_header);
SAME_OFFSET(rsmi_gpu_metrics_t, energy_accumulator, struct rsmi_metrics_prefix,
            energy_accumulator);
SAME_OFFSET(rsmi_gpu_metrics_t, current_gfxclk, struct rsmi_metrics_prefix, current_clocks);
SAME_OFFSET(rsmi_gpu_metrics_t, throttle_status, struct rsmi_metrics_prefix, throttle_status);
_Static_assert(sizeof(rsmi_gpu_metrics_t) <= RSMI_METRICS_BUFFER, "metrics buffer");
_Static_assert(sizeof(rsmi_status_t) == sizeof(uint32_t), "status size");
_Static_assert(sizeof(rsmi_gpu_block_t) == sizeof(unsigned long), "block size");

_Static_assert(RSMI_STATUS_SUCCESS == RSMI_OK && RSMI_STATUS_NOT_SUPPORTED == RSMI_E_NOT_SUPPORTED &&
               RSMI_STATUS_FILE_ERROR == RSMI_E_FILE_ERROR &&
               RSMI_STATUS_INIT_ERROR == RSMI_E_INIT_ERROR &&
               RSMI_STATUS_NOT_FOUND == RSMI_E_NOT_FOUND, "status values");
_Static_assert(RSMI_TEMP_CURRENT == 0 && RSMI_TEMP_MAX == 1 &&
               (int)RSMI_TEMP_CRITICAL == RSMI_TEMP_CRITICAL &&
               (int)RSMI_TEMP_EMERGENCY == RSMI_TEMP_EMERGENCY, "temperature metrics");
_Static_assert(RSMI_TEMP_TYPE_EDGE == 0 && RSMI_TEMP_TYPE_JUNCTION == 1 &&
               RSMI_TEMP_TYPE_MEMORY == 2, "sensors");
_Static_assert(RSMI_MEM_TYPE_VRAM == 0 && RSMI_SW_COMP_DRIVER == 0, "memory, component");
_Static_assert(RSMI_GPU_BLOCK_UMC == RSMI_GPU_BLOCK_FIRST &&
               RSMI_GPU_BLOCK_LAST == RSMI_GPU_BLOCK_FIRST << (RSMI_GPU_BLOCK_COUNT - 1) &&
               RSMI_GPU_BLOCK_XGMI_WAFL == RSMI_GPU_BLOCK_FIRST << 7, "blocks");

SAME_TYPE(rsmi_init, rsmi_init_fn);
SAME_TYPE(rsmi_shut_down, rsmi_shut_down_fn);
SAME_TYPE(rsmi_num_monitor_devices, rsmi_num_devices_fn);
SAME_TYPE(rsmi_version_str_get, rsmi_version_str_fn);
SAME_TYPE(rsmi_dev_pci_id_get, rsmi_pci_id_fn);
SAME_TYPE(rsmi_dev_name_get, rsmi_name_fn);
SAME_TYPE(rsmi_dev_temp_metric_get, rsmi_temp_metric_fn);
SAME_TYPE(rsmi_dev_ecc_enabled_get, rsmi_ecc_enabled_fn);
SAME_TYPE(rsmi_dev_busy_percent_get, rsmi_busy_percent_fn);
SAME_TYPE(rsmi_dev_memory_total_get, rsmi_memory_fn);
SAME_TYPE(rsmi_dev_memory_usage_get, rsmi_memory_fn);
SAME_TYPE(rsmi_dev_power_ave_get, rsmi_power_ave_fn);
/* These take the library's own struct or enum types, whose layouts and
 * values are asserted above: the parameter lists must match otherwise. */
_Static_assert(__builtin_types_compatible_p(__typeof__(&rsmi_status_string),
               uint32_t (*)(rsmi_status_t, const char **)), "rsmi_status_string type");
_Static_assert(__builtin_types_compatible_p(__typeof__(&rsmi_dev_ecc_count_get),
               uint32_t (*)(uint32_t, rsmi_gpu_block_t, rsmi_error_count_t *)),
               "rsmi_dev_ecc_count_get type");
_Static_assert(__builtin_types_compatible_p(__typeof__(&rsmi_dev_gpu_metrics_info_get),
               uint32_t (*)(uint32_t, rsmi_gpu_metrics_t *)), "metrics type");

#endif /* HAVE_RSMI_HEADER */

#ifdef HAVE_NVML_HEADER

#define NSIZE(real, ours) _Static_assert(sizeof(real) == sizeof(ours), #ours " size")
#define NOFFSET(real, rf, ours, of) \
	_Static_assert(offsetof(real, rf) == offsetof(ours, of), #ours "." #of " offset")
/* FN's type is OURS: vigil's handles are NVML's (see the top), enum
 * parameters unsigned int. */
#define NVML_SAME_TYPE(fn, ours) \
	_Static_assert(__builtin_types_compatible_p(__typeof__(fn) *, ours *), #fn " type")

_Static_assert(__builtin_types_compatible_p(nvmlDevice_t, nvml_device) &&
               __builtin_types_compatible_p(nvmlEventSet_t, nvml_event_set), "handles");
_Static_assert(sizeof(nvmlReturn_t) == sizeof(unsigned int), "nvmlReturn_t");
_Static_assert(NVML_SUCCESS == NVML_OK && NVML_ERROR_UNINITIALIZED == NVML_E_UNINITIALIZED &&
               NVML_ERROR_INVALID_ARGUMENT == NVML_E_INVALID_ARGUMENT &&
               NVML_ERROR_NOT_SUPPORTED == NVML_E_NOT_SUPPORTED &&
               NVML_ERROR_NO_PERMISSION == NVML_E_NO_PERMISSION &&
               NVML_ERROR_NOT_FOUND == NVML_E_NOT_FOUND &&
               NVML_ERROR_INSUFFICIENT_SIZE == NVML_E_INSUFFICIENT_SIZE &&
               NVML_ERROR_DRIVER_NOT_LOADED == NVML_E_DRIVER_NOT_LOADED &&
               NVML_ERROR_TIMEOUT == NVML_E_TIMEOUT &&
               NVML_ERROR_FUNCTION_NOT_FOUND == NVML_E_FUNCTION_NOT_FOUND &&
               NVML_ERROR_CORRUPTED_INFOROM == NVML_E_CORRUPTED_INFOROM &&
               NVML_ERROR_GPU_IS_LOST == NVML_E_GPU_IS_LOST &&
               NVML_ERROR_RESET_REQUIRED == NVML_E_RESET_REQUIRED &&
               NVML_ERROR_ARGUMENT_VERSION_MISMATCH == NVML_E_ARGUMENT_VERSION_MISMATCH &&
               NVML_ERROR_UNKNOWN == NVML_E_UNKNOWN, "nvmlReturn_t values");
_Static_assert(NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE == NVML_BUS_ID_LEGACY_SIZE &&
               NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE == NVML_BUS_ID_SIZE, "bus id sizes");
NSIZE(nvmlPciInfo_t, struct nvml_pci_info);
NOFFSET(nvmlPciInfo_t, domain, struct nvml_pci_info, domain);
NOFFSET(nvmlPciInfo_t, pciSubSystemId, struct nvml_pci_info, pci_subsystem_id);
NOFFSET(nvmlPciInfo_t, busId, struct nvml_pci_info, bus_id);
NSIZE(nvmlUtilization_t, struct nvml_utilization);
NSIZE(nvmlMemory_t, struct nvml_memory);
NOFFSET(nvmlMemory_t, used, struct nvml_memory, used);
NSIZE(nvmlValue_t, union nvml_value);
NSIZE(nvmlFieldValue_t, struct nvml_field_value);
NOFFSET(nvmlFieldValue_t, valueType, struct nvml_field_value, value_type);
NOFFSET(nvmlFieldValue_t, nvmlReturn, struct nvml_field_value, nvml_return);
NOFFSET(nvmlFieldValue_t, value, struct nvml_field_value, value);
_Static_assert(NVML_VALUE_TYPE_DOUBLE == NVML_VALUE_DOUBLE &&
               NVML_VALUE_TYPE_UNSIGNED_INT == NVML_VALUE_UINT &&
               NVML_VALUE_TYPE_UNSIGNED_LONG == NVML_VALUE_ULONG &&
               NVML_VALUE_TYPE_UNSIGNED_LONG_LONG == NVML_VALUE_ULONGLONG &&
               NVML_VALUE_TYPE_SIGNED_LONG_LONG == NVML_VALUE_SLONGLONG &&
               NVML_VALUE_TYPE_SIGNED_INT == NVML_VALUE_SINT &&
               NVML_VALUE_TYPE_UNSIGNED_SHORT == NVML_VALUE_USHORT, "value types");
_Static_assert(NVML_FI_DEV_GET_GPU_RECOVERY_ACTION == NVML_FI_GPU_RECOVERY_ACTION &&
               NVML_GPU_RECOVERY_ACTION_NONE == NVML_RECOVERY_NONE &&
               NVML_GPU_RECOVERY_ACTION_GPU_RESET == NVML_RECOVERY_GPU_RESET &&
               NVML_GPU_RECOVERY_ACTION_NODE_REBOOT == NVML_RECOVERY_NODE_REBOOT &&
               NVML_GPU_RECOVERY_ACTION_DRAIN_P2P == NVML_RECOVERY_DRAIN_P2P &&
               NVML_GPU_RECOVERY_ACTION_DRAIN_AND_RESET == NVML_RECOVERY_DRAIN_AND_RESET &&
               NVML_GPU_RECOVERY_ACTION_RECOVER_IMEX_DOMAIN == NVML_RECOVERY_RECOVER_IMEX_DOMAIN,
               "recovery actions");
NSIZE(nvmlEventData_t, struct nvml_event_data);
NOFFSET(nvmlEventData_t, eventData, struct nvml_event_data, event_data);
NOFFSET(nvmlEventData_t, computeInstanceId, struct nvml_event_data, compute_instance_id);
_Static_assert(nvmlEventTypeSingleBitEccError == NVML_EVENT_SINGLE_BIT_ECC &&
               nvmlEventTypeDoubleBitEccError == NVML_EVENT_DOUBLE_BIT_ECC &&
               nvmlEventTypeXidCriticalError == NVML_EVENT_XID_CRITICAL, "event types");
_Static_assert(nvmlClocksEventReasonGpuIdle == NVML_CLOCKS_GPU_IDLE &&
               nvmlClocksEventReasonApplicationsClocksSetting == NVML_CLOCKS_APPLICATIONS_SETTING &&
               nvmlClocksEventReasonSwPowerCap == NVML_CLOCKS_SW_POWER_CAP &&
               nvmlClocksThrottleReasonHwSlowdown == NVML_CLOCKS_HW_SLOWDOWN &&
               nvmlClocksEventReasonSyncBoost == NVML_CLOCKS_SYNC_BOOST &&
               nvmlClocksEventReasonSwThermalSlowdown == NVML_CLOCKS_SW_THERMAL_SLOWDOWN &&
               nvmlClocksThrottleReasonHwThermalSlowdown == NVML_CLOCKS_HW_THERMAL_SLOWDOWN &&
               nvmlClocksThrottleReasonHwPowerBrakeSlowdown == NVML_CLOCKS_HW_POWER_BRAKE &&
               nvmlClocksEventReasonDisplayClockSetting == NVML_CLOCKS_DISPLAY_SETTING,
               "clock event reasons");
_Static_assert(NVML_MEMORY_ERROR_TYPE_CORRECTED == NVML_MEMORY_ERROR_CORRECTED &&
               NVML_MEMORY_ERROR_TYPE_UNCORRECTED == NVML_MEMORY_ERROR_UNCORRECTED &&
               NVML_VOLATILE_ECC == NVML_ECC_VOLATILE && NVML_AGGREGATE_ECC == NVML_ECC_AGGREGATE &&
               NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS ==
                       NVML_RETIRED_MULTIPLE_SBE &&
               NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR == NVML_RETIRED_DBE,
               "ECC and retirement");
_Static_assert(REAL_FEATURE_DISABLED == NVML_FEATURE_DISABLED &&
               REAL_FEATURE_ENABLED == NVML_FEATURE_ENABLED &&
               REAL_TEMPERATURE_GPU == NVML_TEMPERATURE_GPU &&
               REAL_THRESHOLD_SHUTDOWN == NVML_TEMPERATURE_THRESHOLD_SHUTDOWN &&
               REAL_THRESHOLD_SLOWDOWN == NVML_TEMPERATURE_THRESHOLD_SLOWDOWN &&
               REAL_DL_REPLAY == NVML_NVLINK_ERROR_DL_REPLAY &&
               REAL_DL_RECOVERY == NVML_NVLINK_ERROR_DL_RECOVERY &&
               REAL_DL_CRC_FLIT == NVML_NVLINK_ERROR_DL_CRC_FLIT &&
               REAL_DL_CRC_DATA == NVML_NVLINK_ERROR_DL_CRC_DATA &&
               REAL_DL_ECC_DATA == NVML_NVLINK_ERROR_DL_ECC_DATA &&
               REAL_NVLINK_ERROR_COUNT == NVML_NVLINK_ERROR_COUNT, "shared names");
NSIZE(nvmlTemperature_t, struct nvml_temperature);
NOFFSET(nvmlTemperature_t, sensorType, struct nvml_temperature, sensor_type);
NOFFSET(nvmlTemperature_t, temperature, struct nvml_temperature, temperature);
_Static_assert(nvmlTemperature_v1 == NVML_TEMPERATURE_V1, "nvmlTemperature_v1");

/* Functions of scalars, enums (unsigned int, as vendor_abi.h says) and
 * handles: the same type as vigil's. */
NVML_SAME_TYPE(nvmlInit_v2, nvml_void_fn);
NVML_SAME_TYPE(nvmlShutdown, nvml_void_fn);
NVML_SAME_TYPE(nvmlSystemGetDriverVersion, nvml_driver_version_fn);
NVML_SAME_TYPE(nvmlDeviceGetCount_v2, nvml_count_fn);
NVML_SAME_TYPE(nvmlDeviceGetHandleByIndex_v2, nvml_handle_fn);
NVML_SAME_TYPE(nvmlDeviceGetHandleByPciBusId_v2, nvml_handle_by_bus_fn);
NVML_SAME_TYPE(nvmlDeviceGetName, nvml_name_fn);
NVML_SAME_TYPE(nvmlDeviceGetEccMode, nvml_ecc_mode_fn);
NVML_SAME_TYPE(nvmlDeviceGetTotalEccErrors, nvml_total_ecc_fn);
NVML_SAME_TYPE(nvmlDeviceGetRetiredPages, nvml_retired_pages_fn);
NVML_SAME_TYPE(nvmlDeviceGetRetiredPagesPendingStatus, nvml_retired_pending_fn);
NVML_SAME_TYPE(nvmlDeviceGetRemappedRows, nvml_remapped_rows_fn);
NVML_SAME_TYPE(nvmlDeviceGetCurrentClocksEventReasons, nvml_clocks_reasons_fn);
NVML_SAME_TYPE(nvmlDeviceGetTemperatureThreshold, nvml_temperature_threshold_fn);
NVML_SAME_TYPE(nvmlDeviceGetNvLinkState, nvml_nvlink_state_fn);
NVML_SAME_TYPE(nvmlDeviceGetNvLinkErrorCounter, nvml_nvlink_error_fn);
NVML_SAME_TYPE(nvmlDeviceGetPowerUsage, nvml_power_fn);
NVML_SAME_TYPE(nvmlEventSetCreate, nvml_event_set_create_fn);
NVML_SAME_TYPE(nvmlDeviceRegisterEvents, nvml_register_events_fn);
NVML_SAME_TYPE(nvmlEventSetFree, nvml_event_set_free_fn);
_Static_assert(__builtin_types_compatible_p(__typeof__(nvmlErrorString) *,
               nvml_error_string_fn *), "nvmlErrorString type");

/* Functions of the structs asserted above: the parameter lists, each
 * written out in both vocabularies. */
#define BOTH_TYPES(fn, ours, real, mine) \
	_Static_assert(__builtin_types_compatible_p(__typeof__(fn) *, real) && \
	               __builtin_types_compatible_p(ours *, mine), #fn " type")
BOTH_TYPES(nvmlDeviceGetPciInfo_v3, nvml_pci_info_fn,
           nvmlReturn_t (*)(nvmlDevice_t, nvmlPciInfo_t *),
           unsigned int (*)(nvml_device, struct nvml_pci_info *));
BOTH_TYPES(nvmlDeviceGetFieldValues, nvml_field_values_fn,
           nvmlReturn_t (*)(nvmlDevice_t, int, nvmlFieldValue_t *),
           unsigned int (*)(nvml_device, int, struct nvml_field_value *));
BOTH_TYPES(nvmlDeviceGetTemperatureV, nvml_temperature_v_fn,
           nvmlReturn_t (*)(nvmlDevice_t, nvmlTemperature_t *),
           unsigned int (*)(nvml_device, struct nvml_temperature *));
BOTH_TYPES(nvmlDeviceGetUtilizationRates, nvml_utilization_fn,
           nvmlReturn_t (*)(nvmlDevice_t, nvmlUtilization_t *),
           unsigned int (*)(nvml_device, struct nvml_utilization *));
BOTH_TYPES(nvmlDeviceGetMemoryInfo, nvml_memory_fn,
           nvmlReturn_t (*)(nvmlDevice_t, nvmlMemory_t *),
           unsigned int (*)(nvml_device, struct nvml_memory *));
BOTH_TYPES(nvmlEventSetWait_v2, nvml_event_set_wait_fn,
           nvmlReturn_t (*)(nvmlEventSet_t, nvmlEventData_t *, unsigned int),
           unsigned int (*)(nvml_event_set, struct nvml_event_data *, unsigned int));

#endif /* HAVE_NVML_HEADER */

/* The real library, by its default name, in a timed child as a node with
 * an AMD slot would ask it. */
static void
test_real_library(void **state)
{
	struct vhealth_facts *f = vhealth_facts_new();
	struct finding *found = NULL;
	struct slot s;
	struct config cfg;
	size_t n = 0;
	int rc;

	(void)state;
	assert_non_null(f);
	config_init(&cfg);
	memset(&s, 0, sizeof(s));
	s.vendor = SLOT_VENDOR_AMD;
	snprintf(s.pci_bus_id, sizeof(s.pci_bus_id), "0000:c1:00.0");
	assert_int_equal(vhealth_gather(&cfg, &s, 1, true, f), 0);
	assert_true(f->asked[VENDOR_RSMI]);
	rc = f->rc[VENDOR_RSMI];
	assert_string_equal(f->lib[VENDOR_RSMI].library, "librocm_smi64.so.1");
	if (rc == 0) {
		/* A node with /sys/class/drm: the library counts its boards. */
		assert_true(f->lib[VENDOR_RSMI].count >= 0);
	} else {
		/* No AMD driver here: rsmi_init refuses, and says why. */
		assert_int_equal(rc, -EIO);
		assert_non_null(strstr(f->lib[VENDOR_RSMI].error, "rsmi_init failed: "));
		assert_null(strstr(f->lib[VENDOR_RSMI].error, "failed: error ("));
		assert_int_equal(vhealth_judge(&cfg.boards, &s, 1, f, NULL, &found, &n), 0);
		assert_int_equal(n, 1);
		assert_string_equal(found[0].device, "rocm_smi");
		assert_int_equal(found[0].verdict, VERDICT_WARN);
		free(found);
	}
	free(f);
	config_free(&cfg);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_real_library),
	};

#ifndef HAVE_RSMI_HEADER
	/* automake's SKIP: CI installs librocm-smi-dev, and counts a skip
	 * as a failure. */
	fputs("test_vendor_abi: <rocm_smi/rocm_smi.h> not found: apt-get install "
	      "librocm-smi-dev\n", stderr);
	return 77;
#endif
	(void)prctl(PR_SET_CHILD_SUBREAPER, 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
