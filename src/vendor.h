/*
 * vendor.h - the accelerator vendors' management libraries, when present.
 *
 * NVML (libnvidia-ml.so.1, shipped with the NVIDIA driver) and Cambricon
 * CNDev (libcndev.so, shipped with the MLU driver) are loaded with
 * dlopen(), so vigil builds and runs on nodes that have neither.  They
 * describe the live system only: callers skip them when checking a sysfs
 * tree other than "/".
 *
 * A query initialises the library, reads what it needs and shuts it down
 * again.  NVML's initialisation can take seconds, and hang on a wedged
 * board: run queries in a child under a deadline (timed_run()), which is
 * also why the result is a flat struct.
 */
#ifndef VIGIL_VENDOR_H
#define VIGIL_VENDOR_H

struct vendor_info {
	char library[32];   /* the library asked: "libnvidia-ml.so.1" */
	char version[64];   /* driver version the library reports, "" if unknown */
	int count;          /* boards the library sees, -1 if unknown */
	char error[160];    /* why the query failed, "" on success */
};

/*
 * Ask NVML for the driver version (nvmlSystemGetDriverVersion) and the
 * number of GPUs (nvmlDeviceGetCount_v2).  Returns 0; -ENOENT when the
 * library is not installed (not an error on a node without NVIDIA
 * boards); -ENOSYS when it lacks a needed symbol; -EIO when it fails.
 * OUT is filled in every case, error saying why.
 */
int vendor_nvml_query(struct vendor_info *out);

/* As vendor_nvml_query, with CNDev: cndevGetDeviceCount, cndevGetVersionInfo. */
int vendor_cndev_query(struct vendor_info *out);

#endif
