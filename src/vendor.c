/*
 * vendor.c - NVML and CNDev through dlopen().
 *
 * The few prototypes used are declared here rather than taken from the
 * vendors' headers, which vigil cannot require at build time.  Both
 * libraries return 0 for success and keep these signatures across
 * versions (NVML's *_v2 entry points exist since driver 325; CNDev's
 * versioned structs carry their own API version).
 */
#include "autoconf.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "vendor.h"

typedef int nvml_void_fn(void);
typedef int nvml_version_fn(char *version, unsigned length);
typedef int nvml_count_fn(unsigned *count);
typedef const char *nvml_error_fn(int result);

/* cndevCardInfo_t and cndevVersionInfo_t of cndev.h */
struct cndev_card_info {
	int version;
	unsigned number;
};

struct cndev_version_info {
	int version;
	unsigned mcu_major, mcu_minor, mcu_build;
	unsigned driver_major, driver_minor, driver_build;
};

typedef int cndev_init_fn(int reserved);
typedef int cndev_release_fn(void);
typedef int cndev_count_fn(struct cndev_card_info *info);
typedef int cndev_handle_fn(int index, int *handle);
/* The second argument is a device index before CNDev 5 and a handle
 * (cndevDevice_t, an int) since: the same ABI. */
typedef int cndev_version_fn(struct cndev_version_info *info, int device);
typedef const char *cndev_error_fn(int result);

#define CNDEV_API_VERSION 6                 /* CNDEV_VERSION_6 */
#define CNDEV_ERROR_UNSUPPORTED_API_VERSION 3

static void
init_info(struct vendor_info *out, const char *library)
{
	memset(out, 0, sizeof(*out));
	snprintf(out->library, sizeof(out->library), "%s", library);
	out->count = -1;
}

static void *
load(struct vendor_info *out)
{
	void *lib;

	/* RTLD_LOCAL: the library's symbols must not resolve anything of ours. */
	lib = dlopen(out->library, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		const char *e = dlerror();

		snprintf(out->error, sizeof(out->error), "%s", e ? e : "cannot be loaded");
	}
	return lib;
}

static void
set_error(struct vendor_info *out, const char *call, int result, const char *text)
{
	if (text)
		snprintf(out->error, sizeof(out->error), "%s failed: %s (%d)", call, text, result);
	else
		snprintf(out->error, sizeof(out->error), "%s failed (%d)", call, result);
}

int
vendor_nvml_query(struct vendor_info *out)
{
	nvml_void_fn *init, *shutdown;
	nvml_version_fn *version;
	nvml_count_fn *count;
	nvml_error_fn *errstr;
	char buf[96] = "";
	unsigned n = 0;
	void *lib;
	int rc, r;

	init_info(out, "libnvidia-ml.so.1");
	lib = load(out);
	if (!lib)
		return -ENOENT;
	init = (nvml_void_fn *)dlsym(lib, "nvmlInit_v2");
	shutdown = (nvml_void_fn *)dlsym(lib, "nvmlShutdown");
	version = (nvml_version_fn *)dlsym(lib, "nvmlSystemGetDriverVersion");
	count = (nvml_count_fn *)dlsym(lib, "nvmlDeviceGetCount_v2");
	errstr = (nvml_error_fn *)dlsym(lib, "nvmlErrorString");
	if (!init || !shutdown || !version || !count) {
		snprintf(out->error, sizeof(out->error), "%s lacks the NVML entry points vigil uses",
		         out->library);
		rc = -ENOSYS;
		goto out;
	}
	r = init();
	if (r != 0) {
		set_error(out, "nvmlInit_v2", r, errstr ? errstr(r) : NULL);
		rc = -EIO;
		goto out;
	}
	rc = 0;
	r = version(buf, sizeof(buf));
	if (r == 0) {
		snprintf(out->version, sizeof(out->version), "%s", buf);
	} else {
		set_error(out, "nvmlSystemGetDriverVersion", r, errstr ? errstr(r) : NULL);
		rc = -EIO;
	}
	r = count(&n);
	if (r == 0) {
		out->count = (int)n;
	} else {
		set_error(out, "nvmlDeviceGetCount_v2", r, errstr ? errstr(r) : NULL);
		rc = -EIO;
	}
	(void)shutdown();  /* nothing to do if it fails: the query is over */
out:
	(void)dlclose(lib);
	return rc;
}

int
vendor_cndev_query(struct vendor_info *out)
{
	struct cndev_version_info vi;
	struct cndev_card_info ci;
	cndev_init_fn *init;
	cndev_release_fn *release;
	cndev_count_fn *count;
	cndev_handle_fn *handle;
	cndev_version_fn *version;
	cndev_error_fn *errstr;
	void *lib;
	int rc, r, dev = 0;

	init_info(out, "libcndev.so");
	lib = load(out);
	if (!lib)
		return -ENOENT;
	init = (cndev_init_fn *)dlsym(lib, "cndevInit");
	release = (cndev_release_fn *)dlsym(lib, "cndevRelease");
	count = (cndev_count_fn *)dlsym(lib, "cndevGetDeviceCount");
	handle = (cndev_handle_fn *)dlsym(lib, "cndevGetDeviceHandleByIndex");
	version = (cndev_version_fn *)dlsym(lib, "cndevGetVersionInfo");
	errstr = (cndev_error_fn *)dlsym(lib, "cndevGetErrorString");
	if (!init || !release || !count) {
		snprintf(out->error, sizeof(out->error), "%s lacks the CNDev entry points vigil uses",
		         out->library);
		rc = -ENOSYS;
		goto out;
	}
	r = init(0);
	if (r != 0) {
		set_error(out, "cndevInit", r, errstr ? errstr(r) : NULL);
		rc = -EIO;
		goto out;
	}
	rc = 0;
	/* Libraries older than the API version we name refuse it; ask again
	 * with the previous one, whose struct is the same. */
	memset(&ci, 0, sizeof(ci));
	ci.version = CNDEV_API_VERSION;
	r = count(&ci);
	if (r == CNDEV_ERROR_UNSUPPORTED_API_VERSION) {
		memset(&ci, 0, sizeof(ci));
		ci.version = CNDEV_API_VERSION - 1;
		r = count(&ci);
	}
	if (r == 0) {
		out->count = (int)ci.number;
	} else {
		set_error(out, "cndevGetDeviceCount", r, errstr ? errstr(r) : NULL);
		rc = -EIO;
	}
	if (version && out->count > 0 && (!handle || handle(0, &dev) == 0)) {
		memset(&vi, 0, sizeof(vi));
		vi.version = ci.version;
		r = version(&vi, dev);
		if (r == 0)
			snprintf(out->version, sizeof(out->version), "%u.%u.%u", vi.driver_major,
			         vi.driver_minor, vi.driver_build);
	}
	(void)release();  /* the query is over either way */
out:
	(void)dlclose(lib);
	return rc;
}
