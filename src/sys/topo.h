/*
 * topo.h - accelerator slots discovered through hwloc.
 *
 * The only module that calls hwloc.  A slot is one physical accelerator
 * board: an NVIDIA or AMD GPU, or a Cambricon MLU.  Discovery finds a board
 * through its OS devices (CUDA, NVML, RSMI, OpenCL) or, when no backend
 * names it, through its PCI vendor and class, and never counts a board
 * twice.  BMC VGA chips, NVSwitches and other non-accelerators are never
 * slots.
 *
 * None of these functions logs: they return what went wrong and the caller,
 * who knows what was being attempted, reports it.  Nothing here is
 * async-signal-safe; all of it may run inside loop callbacks.
 */
#ifndef VIGIL_TOPO_H
#define VIGIL_TOPO_H

#include <stdbool.h>
#include <stddef.h>

enum slot_vendor { SLOT_VENDOR_NVIDIA, SLOT_VENDOR_AMD, SLOT_VENDOR_CAMBRICON };

/* "nvidia", "amd", "cambricon"; "?" for an out-of-range value. */
const char *slot_vendor_name(enum slot_vendor v);

struct slot_nic {
	char name[64];   /* OS device name: "eth0", "ib0", "mlx5_0", "hfi1_0" */
	char kind[16];   /* "ethernet", "infiniband", "fabric" (OpenFabrics without IB, EFA, OPA) */
	bool local;      /* shares a NUMA node with the slot; false in topo_nics() */
};

struct slot {
	int index;               /* 0.. in PCI bus order: the visible-device index */
	enum slot_vendor vendor;
	char model[128];         /* "Tesla T4", "Vega 20", "MLU370-X8"; "" when nothing names it */
	char pci_bus_id[24];     /* "0000:3b:00.0" (domain:bus:dev.fn, lower case) */
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
 * exported by lstopo, keeping I/O objects.  As with every hwloc program,
 * HWLOC_XMLFILE in the environment replaces the live discovery.  Returns 0
 * or a negative errno (-ENOENT for a missing file, -EINVAL for one hwloc
 * cannot parse); on failure *out is NULL.
 */
int topo_load(const char *xml, struct topo **out);

/*
 * Discover the slots.  *slots (array of *n, possibly 0 with *slots NULL)
 * belongs to the caller: release with topo_slots_free().  Returns 0 or a
 * negative errno.
 *
 * Which PCI devices are slots:
 *  - a device that a GPU backend names: a CUDA, NVML, RSMI or OpenCL (GPU
 *    type) OS device below it, for NVIDIA or AMD;
 *  - otherwise by PCI ids alone: NVIDIA (10de) with class 0300, 0302 or
 *    0380; AMD (1002) with class 0380, or 0300 unless it is one of the
 *    ATI server-management display chips (ES1000, Rage XL); Cambricon
 *    (cabc) with class 1200.
 * The model is the GPUModel of the OS devices (CUDA first, then OpenCL,
 * NVML, RSMI), else the PCI device name.  NUMA nodes and cpuset are those
 * of the nearest non-I/O ancestor.  The nearest NICs are the Network and
 * OpenFabrics OS devices whose own non-I/O ancestor shares the deepest
 * common ancestor with the slot's, in topology order; `local` tells
 * whether a NIC also shares a NUMA node with the slot.
 */
int topo_slots(struct topo *t, struct slot **slots, size_t *n);
void topo_slots_free(struct slot *slots, size_t n);

/*
 * Every NIC of the node (Network and OpenFabrics OS devices) in topology
 * order, named and kinded as in slots.  *nics (array of *n, possibly 0
 * with *nics NULL) belongs to the caller: free().  Returns 0 or a negative
 * errno.
 */
int topo_nics(struct topo *t, struct slot_nic **nics, size_t *n);

/* topo_free(NULL) is a no-op. */
void topo_free(struct topo *t);

#endif
