/*
 * topo.h - accelerator slots discovered through hwloc.
 *
 * The only module that calls hwloc.  A slot is one physical accelerator
 * board: an NVIDIA or AMD GPU, or a Cambricon MLU.  Discovery finds a board
 * through its OS devices (CUDA, NVML, RSMI, OpenCL) or, when no backend
 * names it, through its PCI vendor and class, and never counts a board
 * twice.  BMC VGA chips, NVSwitches and other non-accelerators are never
 * slots.
 */
#ifndef VIGIL_TOPO_H
#define VIGIL_TOPO_H

#include <stddef.h>

enum slot_vendor { SLOT_VENDOR_NVIDIA, SLOT_VENDOR_AMD, SLOT_VENDOR_CAMBRICON };

/* "nvidia", "amd", "cambricon" */
const char *slot_vendor_name(enum slot_vendor v);

struct slot_nic {
	char name[64];   /* OS device name: "eth0", "ib0", "mlx5_0", "hfi1_0" */
	char kind[16];   /* "ethernet", "infiniband", "fabric" (OpenFabrics without IB, EFA, OPA) */
};

struct slot {
	int index;               /* 0.. in PCI bus order: the visible-device index */
	enum slot_vendor vendor;
	char model[128];         /* "Tesla T4", "AMD Instinct MI50 32GB", "MLU370-X8" */
	char pci_bus_id[16];     /* "0000:3b:00.0" (domain:bus:dev.fn, lower case) */
	unsigned pci_vendor_id, pci_device_id, pci_class_id;
	unsigned *numa;          /* OS indexes of the nearest NUMA node(s), ascending */
	size_t nnuma;
	char *cpuset;            /* local PUs as a list: "0-23,48-71" */
	struct slot_nic *nics;   /* nearest NICs by hwloc locality, may be none */
	size_t nnics;
	float link_gbps;         /* PCIe link speed hwloc reports in GB/s; 0 if unknown */
};

struct topo;

/*
 * Load the topology of this machine (XML == NULL) or of an XML file
 * exported by lstopo, keeping I/O objects.  Returns 0 or a negative errno;
 * on failure *out is NULL.
 */
int topo_load(const char *xml, struct topo **out);

/*
 * Discover the slots.  *slots (array of *n, possibly 0 with *slots NULL)
 * belongs to the caller: release with topo_slots_free().  Returns 0 or a
 * negative errno.
 */
int topo_slots(struct topo *t, struct slot **slots, size_t *n);
void topo_slots_free(struct slot *slots, size_t n);

void topo_free(struct topo *t);

#endif
