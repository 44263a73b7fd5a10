/*
 * test_vendor_abi.c - vigil's own declarations of the ROCm SMI interface
 * (src/sys/vendor_abi.h) against the real header and library, which Debian
 * ships (librocm-smi-dev, librocm-smi64-1) while NVML and CNDev come only
 * with their drivers.
 *
 * At compile time: struct sizes and offsets, constants and function types
 * as <rocm_smi/rocm_smi.h> declares them.  At run time: the real library
 * loaded through vigil's dlopen() path answers rsmi_init; on a node
 * without AMD boards it fails, and vigil turns that into a reason.
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
