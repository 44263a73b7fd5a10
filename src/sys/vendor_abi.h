/*
 * vendor_abi.h - the part of the NVML, ROCm SMI and CNDev C interfaces
 * that vigil calls, written from their documented ABI.
 *
 * vigil cannot require the vendors' headers at build time (they come with
 * the drivers, or not at all), so the few types, constants and entry
 * points it uses are declared here under vigil's own names.  Each block
 * names the header it follows:
 *   NVML:     nvml.h of the CUDA toolkit / NVIDIA's go-nvml (API 13, which
 *             keeps every entry point and value of 12.x used here);
 *   ROCm SMI: rocm_smi/rocm_smi.h (rocm_smi_lib, 5.x and 6.x);
 *   CNDev:    cndev.h of Cambricon's device plugin (CNDEV_VERSION_6).
 * Sizes and offsets must match those headers exactly: a struct the library
 * fills is written with the library's layout.  tests/unit/sys/test_vendor_abi.c
 * checks the ROCm SMI part against the real header, and the NVML part
 * wherever CUDA's nvml.h is installed; tests/fakevendor/
 * implements all three from this file for the tests.
 *
 * Every enum of these interfaces has no negative value, so the compilers
 * the vendors use give it the type unsigned int (rsmi_gpu_block_t, which
 * has a 64-bit member, is unsigned long); the function types below use
 * those integer types.
 */
#ifndef VIGIL_VENDOR_ABI_H
#define VIGIL_VENDOR_ABI_H

#include <stddef.h>
#include <stdint.h>

/* ---- NVML (libnvidia-ml.so.1) ---------------------------------------- */

#define NVML_LIBRARY "libnvidia-ml.so.1"

/* nvmlReturn_t */
#define NVML_OK                     0
#define NVML_E_UNINITIALIZED        1
#define NVML_E_INVALID_ARGUMENT     2
#define NVML_E_NOT_SUPPORTED        3
#define NVML_E_NO_PERMISSION        4
#define NVML_E_NOT_FOUND            6
#define NVML_E_INSUFFICIENT_SIZE    7
#define NVML_E_DRIVER_NOT_LOADED    9
#define NVML_E_TIMEOUT              10
#define NVML_E_FUNCTION_NOT_FOUND   13  /* this driver lacks the call */
#define NVML_E_CORRUPTED_INFOROM    14
#define NVML_E_GPU_IS_LOST          15  /* fallen off the bus or inaccessible */
#define NVML_E_RESET_REQUIRED       16  /* the GPU needs a reset before use */
#define NVML_E_ARGUMENT_VERSION_MISMATCH 25  /* a versioned struct this driver does not know */
#define NVML_E_UNKNOWN              999

/* nvmlDevice_t and nvmlEventSet_t: opaque pointers. */
typedef struct nvml_device_st *nvml_device;
typedef struct nvml_event_set_st *nvml_event_set;

#define NVML_BUS_ID_LEGACY_SIZE 16  /* NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE */
#define NVML_BUS_ID_SIZE        32  /* NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE */

/* nvmlPciInfo_t (nvmlDeviceGetPciInfo_v3) */
struct nvml_pci_info {
	char bus_id_legacy[NVML_BUS_ID_LEGACY_SIZE];
	unsigned int domain;
	unsigned int bus;
	unsigned int device;
	unsigned int pci_device_id;
	unsigned int pci_subsystem_id;
	char bus_id[NVML_BUS_ID_SIZE];  /* "00000000:3B:00.0" */
};

/* nvmlUtilization_t: percent of the last sample period. */
struct nvml_utilization {
	unsigned int gpu;
	unsigned int memory;
};

/* nvmlMemory_t: bytes. */
struct nvml_memory {
	unsigned long long total;
	unsigned long long free;
	unsigned long long used;
};

/* nvmlValue_t and nvmlValueType_t */
union nvml_value {
	double d;
	int si;
	unsigned int ui;
	unsigned long ul;
	unsigned long long ull;
	long long sll;
	unsigned short us;
};

#define NVML_VALUE_DOUBLE     0
#define NVML_VALUE_UINT       1
#define NVML_VALUE_ULONG      2
#define NVML_VALUE_ULONGLONG  3
#define NVML_VALUE_SLONGLONG  4
#define NVML_VALUE_SINT       5
#define NVML_VALUE_USHORT     6

/* nvmlFieldValue_t (nvmlDeviceGetFieldValues) */
struct nvml_field_value {
	unsigned int field_id;
	unsigned int scope_id;
	long long timestamp;
	long long latency_usec;
	unsigned int value_type;      /* NVML_VALUE_* */
	unsigned int nvml_return;     /* this field's own result */
	union nvml_value value;
};

/* NVML_FI_DEV_GET_GPU_RECOVERY_ACTION, and nvmlDeviceGpuRecoveryAction_t
 * (NVML_GPU_RECOVERY_ACTION_*; RECOVER_IMEX_DOMAIN came with CUDA 13.3) */
#define NVML_FI_GPU_RECOVERY_ACTION 230
#define NVML_RECOVERY_NONE              0
#define NVML_RECOVERY_GPU_RESET         1
#define NVML_RECOVERY_NODE_REBOOT       2
#define NVML_RECOVERY_DRAIN_P2P         3
#define NVML_RECOVERY_DRAIN_AND_RESET   4
#define NVML_RECOVERY_RECOVER_IMEX_DOMAIN 5

/* nvmlEventData_t (nvmlEventSetWait_v2; _v1 fills the first three) */
struct nvml_event_data {
	nvml_device device;
	unsigned long long event_type;
	unsigned long long event_data;   /* the XID of an XID event */
	unsigned int gpu_instance_id;
	unsigned int compute_instance_id;
};

/* nvmlEventType bits */
#define NVML_EVENT_SINGLE_BIT_ECC   0x0000000000000001ULL
#define NVML_EVENT_DOUBLE_BIT_ECC   0x0000000000000002ULL
#define NVML_EVENT_XID_CRITICAL     0x0000000000000008ULL

/* nvmlClocksEventReason / nvmlClocksThrottleReason bits */
#define NVML_CLOCKS_GPU_IDLE                0x0000000000000001ULL
#define NVML_CLOCKS_APPLICATIONS_SETTING    0x0000000000000002ULL
#define NVML_CLOCKS_SW_POWER_CAP            0x0000000000000004ULL
#define NVML_CLOCKS_HW_SLOWDOWN             0x0000000000000008ULL
#define NVML_CLOCKS_SYNC_BOOST              0x0000000000000010ULL
#define NVML_CLOCKS_SW_THERMAL_SLOWDOWN     0x0000000000000020ULL
#define NVML_CLOCKS_HW_THERMAL_SLOWDOWN     0x0000000000000040ULL
#define NVML_CLOCKS_HW_POWER_BRAKE          0x0000000000000080ULL
#define NVML_CLOCKS_DISPLAY_SETTING         0x0000000000000100ULL

/* nvmlMemoryErrorType_t, nvmlEccCounterType_t */
#define NVML_MEMORY_ERROR_CORRECTED     0
#define NVML_MEMORY_ERROR_UNCORRECTED   1
#define NVML_ECC_VOLATILE               0   /* since the driver loaded */
#define NVML_ECC_AGGREGATE              1   /* over the board's life */

/* nvmlPageRetirementCause_t */
#define NVML_RETIRED_MULTIPLE_SBE   0
#define NVML_RETIRED_DBE            1

/* nvmlEnableState_t */
#define NVML_FEATURE_DISABLED 0
#define NVML_FEATURE_ENABLED  1

/* nvmlTemperatureSensors_t, nvmlTemperatureThresholds_t */
#define NVML_TEMPERATURE_GPU                0
#define NVML_TEMPERATURE_THRESHOLD_SHUTDOWN 0
#define NVML_TEMPERATURE_THRESHOLD_SLOWDOWN 1

/* nvmlTemperature_v1_t (nvmlDeviceGetTemperatureV, in nvml.h since CUDA
 * 12.8; nvmlDeviceGetTemperature is deprecated since 13.0) and its version,
 * NVML_STRUCT_VERSION(Temperature, 1): the size, and the version in the
 * top byte. */
struct nvml_temperature {
	unsigned int version;           /* NVML_TEMPERATURE_V1 */
	unsigned int sensor_type;       /* NVML_TEMPERATURE_GPU */
	int temperature;                /* degrees Celsius */
};

#define NVML_TEMPERATURE_V1 ((unsigned int)(sizeof(struct nvml_temperature) | (1U << 24)))

/* nvmlNvLinkErrorCounter_t; NVML_NVLINK_MAX_LINKS (12 before CUDA 11, 18
 * before 12.8): a driver with fewer links answers INVALID_ARGUMENT above
 * its last one. */
#define NVML_NVLINK_ERROR_DL_REPLAY     0
#define NVML_NVLINK_ERROR_DL_RECOVERY   1
#define NVML_NVLINK_ERROR_DL_CRC_FLIT   2
#define NVML_NVLINK_ERROR_DL_CRC_DATA   3
#define NVML_NVLINK_ERROR_DL_ECC_DATA   4
#define NVML_NVLINK_ERROR_COUNT         5
#define NVML_NVLINK_MAX_LINKS           36

typedef unsigned int nvml_void_fn(void);
typedef const char *nvml_error_string_fn(unsigned int result);
typedef unsigned int nvml_driver_version_fn(char *version, unsigned int length);
typedef unsigned int nvml_count_fn(unsigned int *count);
typedef unsigned int nvml_handle_fn(unsigned int index, nvml_device *device);
typedef unsigned int nvml_handle_by_bus_fn(const char *bus_id, nvml_device *device);
typedef unsigned int nvml_pci_info_fn(nvml_device device, struct nvml_pci_info *pci);
typedef unsigned int nvml_name_fn(nvml_device device, char *name, unsigned int length);
typedef unsigned int nvml_ecc_mode_fn(nvml_device device, unsigned int *current,
                                      unsigned int *pending);
typedef unsigned int nvml_total_ecc_fn(nvml_device device, unsigned int error_type,
                                       unsigned int counter_type, unsigned long long *count);
typedef unsigned int nvml_retired_pages_fn(nvml_device device, unsigned int cause,
                                           unsigned int *count, unsigned long long *addresses);
typedef unsigned int nvml_retired_pending_fn(nvml_device device, unsigned int *pending);
typedef unsigned int nvml_remapped_rows_fn(nvml_device device, unsigned int *corr,
                                           unsigned int *unc, unsigned int *pending,
                                           unsigned int *failure);
typedef unsigned int nvml_field_values_fn(nvml_device device, int count,
                                          struct nvml_field_value *values);
typedef unsigned int nvml_clocks_reasons_fn(nvml_device device, unsigned long long *reasons);
typedef unsigned int nvml_temperature_fn(nvml_device device, unsigned int sensor,
                                         unsigned int *celsius);
typedef unsigned int nvml_temperature_v_fn(nvml_device device, struct nvml_temperature *t);
typedef unsigned int nvml_temperature_threshold_fn(nvml_device device, unsigned int type,
                                                   unsigned int *celsius);
typedef unsigned int nvml_nvlink_state_fn(nvml_device device, unsigned int link,
                                          unsigned int *active);
typedef unsigned int nvml_nvlink_error_fn(nvml_device device, unsigned int link,
                                          unsigned int counter, unsigned long long *value);
typedef unsigned int nvml_utilization_fn(nvml_device device, struct nvml_utilization *u);
typedef unsigned int nvml_memory_fn(nvml_device device, struct nvml_memory *m);
typedef unsigned int nvml_power_fn(nvml_device device, unsigned int *milliwatts);
typedef unsigned int nvml_event_set_create_fn(nvml_event_set *set);
typedef unsigned int nvml_register_events_fn(nvml_device device, unsigned long long types,
                                             nvml_event_set set);
typedef unsigned int nvml_event_set_wait_fn(nvml_event_set set, struct nvml_event_data *data,
                                            unsigned int timeout_ms);
typedef unsigned int nvml_event_set_free_fn(nvml_event_set set);

/* ---- ROCm SMI (librocm_smi64.so.1) ----------------------------------- */

#define RSMI_LIBRARY "librocm_smi64.so.1"

/* rsmi_status_t */
#define RSMI_OK                         0
#define RSMI_E_INVALID_ARGS             1
#define RSMI_E_NOT_SUPPORTED            2
#define RSMI_E_FILE_ERROR               3
#define RSMI_E_PERMISSION               4
#define RSMI_E_INIT_ERROR               8
#define RSMI_E_NOT_YET_IMPLEMENTED      9
#define RSMI_E_NOT_FOUND                10

/* rsmi_temperature_metric_t (values in millidegrees Celsius) */
#define RSMI_TEMP_CURRENT   0
#define RSMI_TEMP_MAX       1
#define RSMI_TEMP_CRITICAL  5   /* amdgpu's temp*_crit: where the SMU throttles */
#define RSMI_TEMP_EMERGENCY 7   /* where the board shuts down */

/* rsmi_temperature_type_t */
#define RSMI_TEMP_TYPE_EDGE     0
#define RSMI_TEMP_TYPE_JUNCTION 1
#define RSMI_TEMP_TYPE_MEMORY   2

/* rsmi_memory_type_t */
#define RSMI_MEM_TYPE_VRAM 0

/* rsmi_sw_component_t */
#define RSMI_SW_COMP_DRIVER 0

/* rsmi_gpu_block_t: one bit per RAS block, UMC (1 << 0) to FUSE (1 << 13). */
#define RSMI_GPU_BLOCK_FIRST 0x1ULL
#define RSMI_GPU_BLOCK_COUNT 14

/* rsmi_error_count_t */
struct rsmi_error_count {
	uint64_t correctable_err;
	uint64_t uncorrectable_err;
};

/* metrics_table_header_t */
struct rsmi_metrics_header {
	uint16_t structure_size;
	uint8_t format_revision;
	uint8_t content_revision;
};

/*
 * The start of rsmi_gpu_metrics_t, identical in every version of the
 * library up to throttle_status.  Later versions append fields, so the
 * library is handed RSMI_METRICS_BUFFER bytes and only this prefix is read.
 * throttle_status is the firmware's own bit field, whose meaning depends
 * on the ASIC.
 */
struct rsmi_metrics_prefix {
	struct rsmi_metrics_header header;
	uint16_t temperature_edge;
	uint16_t temperature_hotspot;
	uint16_t temperature_mem;
	uint16_t temperature_vrgfx;
	uint16_t temperature_vrsoc;
	uint16_t temperature_vrmem;
	uint16_t average_gfx_activity;
	uint16_t average_umc_activity;
	uint16_t average_mm_activity;
	uint16_t average_socket_power;
	uint64_t energy_accumulator;
	uint64_t system_clock_counter;
	uint16_t average_clocks[7];
	uint16_t current_clocks[7];
	uint32_t throttle_status;
};

/* Larger than any rsmi_gpu_metrics_t so far (about 1.5 KiB in ROCm 6.4). */
#define RSMI_METRICS_BUFFER 16384

typedef uint32_t rsmi_init_fn(uint64_t flags);
typedef uint32_t rsmi_shut_down_fn(void);
typedef uint32_t rsmi_num_devices_fn(uint32_t *count);
typedef uint32_t rsmi_status_string_fn(uint32_t status, const char **text);
typedef uint32_t rsmi_version_str_fn(uint32_t component, char *text, uint32_t len);
typedef uint32_t rsmi_pci_id_fn(uint32_t device, uint64_t *bdfid);
typedef uint32_t rsmi_name_fn(uint32_t device, char *name, size_t len);
typedef uint32_t rsmi_temp_metric_fn(uint32_t device, uint32_t sensor, uint32_t metric,
                                     int64_t *millicelsius);
typedef uint32_t rsmi_ecc_enabled_fn(uint32_t device, uint64_t *blocks);
typedef uint32_t rsmi_ecc_count_fn(uint32_t device, unsigned long block,
                                   struct rsmi_error_count *count);
typedef uint32_t rsmi_busy_percent_fn(uint32_t device, uint32_t *percent);
typedef uint32_t rsmi_memory_fn(uint32_t device, uint32_t type, uint64_t *bytes);
typedef uint32_t rsmi_power_ave_fn(uint32_t device, uint32_t sensor, uint64_t *microwatts);
typedef uint32_t rsmi_socket_power_fn(uint32_t device, uint64_t *microwatts);
typedef uint32_t rsmi_gpu_metrics_fn(uint32_t device, void *metrics);

/* ---- CNDev (libcndev.so) --------------------------------------------- */

#define CNDEV_LIBRARY "libcndev.so"

/* cndevRet_t */
#define CNDEV_OK                            0
#define CNDEV_E_NO_DRIVER                   1
#define CNDEV_E_UNSUPPORTED_API_VERSION     3
#define CNDEV_E_NOT_SUPPORTED               10
#define CNDEV_E_NO_DEVICES                  12
#define CNDEV_E_IN_PROBLEM                  18  /* the device is in trouble */

/* The API version that versioned structs carry (CNDEV_VERSION_6); the
 * library refuses a newer one with CNDEV_E_UNSUPPORTED_API_VERSION. */
#define CNDEV_API_VERSION 6

/* cndevCardInfo_t */
struct cndev_card_info {
	int32_t version;
	uint32_t number;
};

/* cndevVersionInfo_t */
struct cndev_version_info {
	int32_t version;
	uint32_t mcu_major, mcu_minor, mcu_build;
	uint32_t driver_major, driver_minor, driver_build;
};

/* cndevHealthStateEnum_t, cndevDriverHealthStateEnum_t */
#define CNDEV_DEVICE_IN_PROBLEM 0
#define CNDEV_DEVICE_GOOD       1
#define CNDEV_DRIVER_RUNNING        4
#define CNDEV_DRIVER_BOOT_ERROR     5
#define CNDEV_DRIVER_RESET          6
#define CNDEV_DRIVER_RESET_ERROR    7
#define CNDEV_DRIVER_UNKNOWN        8

/* cndevCardHealthState_t */
struct cndev_health {
	int32_t version;
	int32_t health;              /* 1 healthy, 0 not */
	uint32_t device_state;       /* CNDEV_DEVICE_* */
	uint32_t driver_state;       /* CNDEV_DRIVER_* */
};

/* cndevECCInfo_t (the header's __uint64_t is unsigned long: 64 bits on
 * the LP64 systems CNDev supports) */
struct cndev_ecc_info {
	int32_t version;
	uint64_t one_bit_error;
	uint64_t multiple_one_error;
	uint64_t multiple_error;
	uint64_t multiple_multiple_error;
	uint64_t corrected_error;
	uint64_t uncorrected_error;
	uint64_t total_error;
	uint64_t address_forbidden_error;
};

/* cndevTemperatureInfo_t, degrees Celsius */
struct cndev_temperature_info {
	int32_t version;
	int32_t board;
	int32_t cluster[20];
	int32_t memory_die[8];
	int32_t chip;
	int32_t air_inlet;
	int32_t air_outlet;
	int32_t memory;
	int32_t video_input;
	int32_t cpu;
	int32_t isp;
};

/* cndevUtilizationInfo_t, percent */
struct cndev_utilization_info {
	int32_t version;
	int32_t average_core_utilization;
	int32_t core_utilization[80];
};

/* cndevMemoryInfoV2_t, MiB */
struct cndev_memory_info_v2 {
	int64_t physical_total;
	int64_t physical_used;
	int64_t reserved_memory;
	int64_t virtual_total;
	int64_t virtual_used;
	uint64_t global_memory;
	uint64_t reserved[16];
};

/* cndevDevicePowerInfo_t, watts */
struct cndev_power_info {
	int32_t usage;
	int32_t cap;
	int32_t machine;
	int32_t tdp;
	int32_t max_power;
	int32_t reserved[16];
};

/* cndevPCIeInfoV2_t */
struct cndev_pcie_info_v2 {
	uint32_t subsystem_id;
	uint32_t device_id;
	uint16_t vendor;
	uint16_t subsystem_vendor;
	uint32_t domain;
	uint32_t bus;
	uint32_t device;
	uint32_t function;
	uint16_t module_id;
	uint16_t slot_id;
	uint32_t reserved[8];
};

typedef uint32_t cndev_init_fn(int32_t reserved);
typedef uint32_t cndev_release_fn(void);
typedef const char *cndev_error_string_fn(uint32_t result);
typedef uint32_t cndev_count_fn(struct cndev_card_info *info);
typedef uint32_t cndev_handle_fn(int32_t index, int32_t *handle);
/* The second argument is a device index before CNDev 5 and a handle
 * (cndevDevice_t, an int) since: the same ABI. */
typedef uint32_t cndev_version_fn(struct cndev_version_info *info, int32_t device);
typedef uint32_t cndev_health_fn(struct cndev_health *health, int32_t device);
typedef uint32_t cndev_ecc_fn(struct cndev_ecc_info *ecc, int32_t device);
typedef uint32_t cndev_temperature_fn(struct cndev_temperature_info *t, int32_t device);
typedef uint32_t cndev_utilization_fn(struct cndev_utilization_info *u, int32_t device);
typedef uint32_t cndev_memory_fn(struct cndev_memory_info_v2 *m, int32_t device);
typedef uint32_t cndev_power_fn(struct cndev_power_info *p, int32_t device);
typedef uint32_t cndev_pcie_fn(struct cndev_pcie_info_v2 *p, int32_t device);

#endif
