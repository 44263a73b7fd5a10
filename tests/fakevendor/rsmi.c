/*
 * rsmi.c - a fake librocm_smi64.so.1 for vigil's tests: the ROCm SMI calls
 * vigil makes, with the contract rocm_smi.h documents (millidegrees,
 * microwatts, a BDFID of domain/bus/device/function bits, an ECC count per
 * RAS block enabled in a bit mask), answering from the script that
 * VIGIL_FAKE_VENDOR names (script.h, README.md).
 */
#include <stdio.h>
#include <string.h>

#include "script.h"
#include "sys/vendor_abi.h"

#define V "amd"

rsmi_init_fn rsmi_init;
rsmi_shut_down_fn rsmi_shut_down;
rsmi_num_devices_fn rsmi_num_monitor_devices;
rsmi_status_string_fn rsmi_status_string;
rsmi_version_str_fn rsmi_version_str_get;
rsmi_pci_id_fn rsmi_dev_pci_id_get;
rsmi_name_fn rsmi_dev_name_get;
rsmi_temp_metric_fn rsmi_dev_temp_metric_get;
rsmi_ecc_enabled_fn rsmi_dev_ecc_enabled_get;
rsmi_ecc_count_fn rsmi_dev_ecc_count_get;
rsmi_busy_percent_fn rsmi_dev_busy_percent_get;
rsmi_memory_fn rsmi_dev_memory_total_get, rsmi_dev_memory_usage_get;
rsmi_power_ave_fn rsmi_dev_power_ave_get;
rsmi_gpu_metrics_fn rsmi_dev_gpu_metrics_info_get;

static const char *const blocks[RSMI_GPU_BLOCK_COUNT] = {
	"umc", "sdma", "gfx", "mmhub", "athub", "pcie_bif", "hdp",
	"xgmi_wafl", "df", "smn", "sem", "mp0", "mp1", "fuse",
};

static int initialised;

/* The script's board for device DEV, or -1. */
static int
board(uint32_t dev)
{
	return initialised ? script_nth(V, (int)dev) : -1;
}

uint32_t
rsmi_init(uint64_t flags)
{
	(void)flags;
	script_load();
	script_maybe_hang(V, "init");
	if (script_has(V, -1, "init"))
		return (uint32_t)script_ll(V, -1, "init", RSMI_E_INIT_ERROR);
	initialised = 1;
	return RSMI_OK;
}

uint32_t
rsmi_shut_down(void)
{
	initialised = 0;
	return RSMI_OK;
}

uint32_t
rsmi_num_monitor_devices(uint32_t *count)
{
	if (!count)
		return RSMI_E_INVALID_ARGS;
	*count = initialised ? (uint32_t)script_present(V) : 0;
	return RSMI_OK;
}

uint32_t
rsmi_status_string(uint32_t status, const char **text)
{
	if (!text)
		return RSMI_E_INVALID_ARGS;
	switch (status) {
	case RSMI_OK: *text = "RSMI_STATUS_SUCCESS: The function has been executed successfully."; break;
	case RSMI_E_NOT_SUPPORTED: *text = "RSMI_STATUS_NOT_SUPPORTED"; break;
	case RSMI_E_INIT_ERROR: *text = "RSMI_STATUS_INIT_ERROR"; break;
	default: *text = "RSMI_STATUS_UNKNOWN_ERROR"; break;
	}
	return RSMI_OK;
}

uint32_t
rsmi_version_str_get(uint32_t component, char *text, uint32_t len)
{
	const char *v = script_value(V, -1, "driver");

	if (component != RSMI_SW_COMP_DRIVER || !text)
		return RSMI_E_INVALID_ARGS;
	if (snprintf(text, len, "%s", v ? v : "6.3.6") >= (int)len)
		return 11;  /* RSMI_STATUS_INSUFFICIENT_SIZE */
	return RSMI_OK;
}

uint32_t
rsmi_dev_pci_id_get(uint32_t dev, uint64_t *bdfid)
{
	unsigned dom, bus, d, fn;
	int b = board(dev);

	if (b < 0 || !bdfid)
		return RSMI_E_INVALID_ARGS;
	script_maybe_hang(V, "read");
	if (script_bus(script_value(V, b, "bus"), &dom, &bus, &d, &fn) < 0)
		return RSMI_E_NOT_SUPPORTED;
	*bdfid = ((uint64_t)dom << 32) | ((uint64_t)(bus & 0xff) << 8) | ((d & 0x1f) << 3) |
	         (fn & 7);
	return RSMI_OK;
}

uint32_t
rsmi_dev_name_get(uint32_t dev, char *name, size_t len)
{
	const char *v;
	int b = board(dev);

	if (b < 0 || !name)
		return RSMI_E_INVALID_ARGS;
	v = script_value(V, b, "name");
	snprintf(name, len, "%s", v ? v : "Fake Instinct");
	return RSMI_OK;
}

uint32_t
rsmi_dev_temp_metric_get(uint32_t dev, uint32_t sensor, uint32_t metric, int64_t *millicelsius)
{
	static const char *const sensors[] = { "edge", "junction", "memory" };
	char key[48];
	int b = board(dev);

	if (b < 0 || !millicelsius || sensor > RSMI_TEMP_TYPE_MEMORY)
		return RSMI_E_INVALID_ARGS;
	if (metric == RSMI_TEMP_CURRENT)
		snprintf(key, sizeof(key), "temperature.%s", sensors[sensor]);
	else if (metric == RSMI_TEMP_CRITICAL)
		snprintf(key, sizeof(key), "critical.%s", sensors[sensor]);
	else
		return RSMI_E_NOT_SUPPORTED;
	if (!script_has(V, b, key))
		return RSMI_E_NOT_SUPPORTED;
	*millicelsius = script_ll(V, b, key, 0) * 1000;
	return RSMI_OK;
}

uint32_t
rsmi_dev_ecc_enabled_get(uint32_t dev, uint64_t *mask)
{
	char key[32];
	int b = board(dev);

	if (b < 0 || !mask)
		return RSMI_E_INVALID_ARGS;
	*mask = 0;
	for (unsigned i = 0; i < RSMI_GPU_BLOCK_COUNT; i++) {
		snprintf(key, sizeof(key), "ras.%s", blocks[i]);
		if (script_has(V, b, key))
			*mask |= RSMI_GPU_BLOCK_FIRST << i;
	}
	return RSMI_OK;
}

uint32_t
rsmi_dev_ecc_count_get(uint32_t dev, unsigned long block, struct rsmi_error_count *count)
{
	unsigned long long c = 0, u = 0;
	const char *v = NULL;
	char key[32];
	int b = board(dev);

	if (b < 0 || !count)
		return RSMI_E_INVALID_ARGS;
	for (unsigned i = 0; i < RSMI_GPU_BLOCK_COUNT; i++) {
		if (block != (unsigned long)(RSMI_GPU_BLOCK_FIRST << i))
			continue;
		snprintf(key, sizeof(key), "ras.%s", blocks[i]);
		v = script_value(V, b, key);
	}
	if (!v)
		return RSMI_E_NOT_SUPPORTED;
	if (sscanf(v, "%llu %llu", &c, &u) != 2)
		return RSMI_E_NOT_SUPPORTED;
	count->correctable_err = c;
	count->uncorrectable_err = u;
	return RSMI_OK;
}

uint32_t
rsmi_dev_busy_percent_get(uint32_t dev, uint32_t *percent)
{
	int b = board(dev);

	if (b < 0 || !percent)
		return RSMI_E_INVALID_ARGS;
	*percent = (uint32_t)script_ll(V, b, "busy", 0);
	return RSMI_OK;
}

uint32_t
rsmi_dev_memory_total_get(uint32_t dev, uint32_t type, uint64_t *bytes)
{
	int b = board(dev);

	if (b < 0 || !bytes || type != RSMI_MEM_TYPE_VRAM)
		return RSMI_E_INVALID_ARGS;
	*bytes = (uint64_t)script_ll(V, b, "vram.total", 68719476736LL);
	return RSMI_OK;
}

uint32_t
rsmi_dev_memory_usage_get(uint32_t dev, uint32_t type, uint64_t *bytes)
{
	int b = board(dev);

	if (b < 0 || !bytes || type != RSMI_MEM_TYPE_VRAM)
		return RSMI_E_INVALID_ARGS;
	*bytes = (uint64_t)script_ll(V, b, "vram.used", 0);
	return RSMI_OK;
}

uint32_t
rsmi_dev_power_ave_get(uint32_t dev, uint32_t sensor, uint64_t *microwatts)
{
	int b = board(dev);

	if (b < 0 || !microwatts || sensor != 0)
		return RSMI_E_INVALID_ARGS;
	if (!script_has(V, b, "power"))
		return RSMI_E_NOT_SUPPORTED;
	*microwatts = (uint64_t)script_ll(V, b, "power", 0);
	return RSMI_OK;
}

uint32_t
rsmi_dev_gpu_metrics_info_get(uint32_t dev, void *metrics)
{
	struct rsmi_metrics_prefix p;
	int b = board(dev);

	if (b < 0 || !metrics)
		return RSMI_E_INVALID_ARGS;
	memset(&p, 0, sizeof(p));
	p.header.structure_size = sizeof(p);
	p.header.format_revision = 1;
	p.header.content_revision = 0;
	p.temperature_edge = (uint16_t)script_ll(V, b, "temperature.edge", 0);
	p.temperature_hotspot = (uint16_t)script_ll(V, b, "temperature.junction", 0);
	p.throttle_status = (uint32_t)script_ll(V, b, "throttle", 0);
	memcpy(metrics, &p, sizeof(p));
	return RSMI_OK;
}
