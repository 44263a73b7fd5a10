/*
 * topo.c - accelerator slots discovered through hwloc.
 */
#include "autoconf.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <hwloc.h>

#include "sys/topo.h"

#define PCI_VENDOR_NVIDIA    0x10de
#define PCI_VENDOR_AMD       0x1002
#define PCI_VENDOR_CAMBRICON 0xcabc

#define PCI_CLASS_VGA          0x0300
#define PCI_CLASS_3D           0x0302
#define PCI_CLASS_DISPLAY      0x0380  /* display controller, "other" */
#define PCI_CLASS_INFINIBAND   0x0207
#define PCI_CLASS_FABRIC       0x0208
#define PCI_CLASS_SERIAL_IB    0x0c06
#define PCI_CLASS_ACCELERATOR  0x1200

/* Hardware addresses as Linux gives them: Ethernet MACs are 6 bytes, IPoIB
 * hardware addresses 20 (4 bytes of QPN and flags, then the 16-byte GID). */
#define HWADDR_LEN_ETHER  6
#define HWADDR_LEN_IPOIB  20

struct topo {
	hwloc_topology_t h;
};

/*
 * GPU backends in the order their GPUModel is preferred as the slot model.
 * The compute runtimes come first: CUDA and OpenCL name the board the way
 * the training framework will print it.  The management libraries come
 * next, and RSMI last because hwloc exports have been seen with its model
 * cut short ("deon Instinct MI50 32GB" on a Corona node, hwloc 2.5).
 */
enum backend { BACKEND_NONE = -1, BACKEND_CUDA, BACKEND_OPENCL, BACKEND_NVML, BACKEND_RSMI };

static const struct {
	const char *name;    /* Backend info and subtype, as hwloc writes them */
	const char *prefix;  /* OS device name: cuda0, opencl0d0, nvml0, rsmi0 */
	enum backend backend;
} backends[] = {
	{ "CUDA", "cuda", BACKEND_CUDA },
	{ "OpenCL", "opencl", BACKEND_OPENCL },
	{ "NVML", "nvml", BACKEND_NVML },
	{ "RSMI", "rsmi", BACKEND_RSMI },
};

#define NBACKENDS (sizeof(backends) / sizeof(backends[0]))

/*
 * ATI display chips that server boards carry for the BMC console.  They
 * share AMD's vendor id and the VGA class with real Radeon and early
 * Instinct boards (Vega 20 reports class 0300), and hwloc gives nothing
 * else that tells them apart: no backend ever names them, so the rule
 * that needs the table only applies to a device without GPU OS devices.
 */
static const unsigned short amd_bmc_device_ids[] = {
	0x515e,  /* ES1000 */
	0x5969,  /* ES1000 */
	0x4752,  /* Rage XL */
};

struct nic {
	hwloc_obj_t os;
	hwloc_obj_t where;   /* nearest non-I/O ancestor */
	const char *kind;
};

struct candidate {
	hwloc_obj_t pci;
	enum slot_vendor vendor;
	const char *model;   /* GPUModel from a backend, NULL if none gives one */
};

const char *
slot_vendor_name(enum slot_vendor v)
{
	switch (v) {
	case SLOT_VENDOR_NVIDIA:
		return "nvidia";
	case SLOT_VENDOR_AMD:
		return "amd";
	case SLOT_VENDOR_CAMBRICON:
		return "cambricon";
	}
	return "?";
}

int
topo_load(const char *xml, struct topo **out)
{
	struct topo *t;
	int rc;

	*out = NULL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	if (hwloc_topology_init(&t->h) < 0) {
		rc = errno ? -errno : -ENOMEM;
		free(t);
		return rc;
	}
	/*
	 * hwloc 2 drops every I/O object unless told otherwise, and a board
	 * that no backend names (no CUDA or RSMI plugin, an MLU) exists only
	 * as a PCI device.  KEEP_ALL rather than KEEP_IMPORTANT: which PCI
	 * classes hwloc deems important has changed between releases, and our
	 * own rules decide what is an accelerator.
	 */
	errno = 0;
	/* hwloc 2.9 reads and parses an XML file in set_xml, not in load:
	 * a missing file fails there with ENOENT, garbage with EINVAL. */
	if (hwloc_topology_set_io_types_filter(t->h, HWLOC_TYPE_FILTER_KEEP_ALL) < 0
	    || (xml && hwloc_topology_set_xml(t->h, xml) < 0)
	    || hwloc_topology_load(t->h) < 0) {
		rc = errno ? -errno : -EINVAL;
		goto out;
	}
	*out = t;
	return 0;
out:
	topo_free(t);
	return rc;
}

void
topo_free(struct topo *t)
{
	if (!t)
		return;
	hwloc_topology_destroy(t->h);
	free(t);
}

/* Bytes in a hardware address written as "xx:xx:...", 0 if none. */
static size_t
address_len(hwloc_obj_t os)
{
	const char *a = hwloc_obj_get_info_by_name(os, "Address");
	size_t n;

	if (!a || !*a)
		return 0;
	n = 1;
	for (; *a; a++)
		if (*a == ':')
			n++;
	return n;
}

static int
is_ipoib(hwloc_obj_t os)
{
	return os->type == HWLOC_OBJ_OS_DEVICE
	       && os->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK
	       && address_len(os) == HWADDR_LEN_IPOIB;
}

static hwloc_obj_t
pci_parent(hwloc_obj_t os)
{
	hwloc_obj_t p = os->parent;

	return p && p->type == HWLOC_OBJ_PCI_DEVICE ? p : NULL;
}

/*
 * A net device is classed by its link layer, which its hardware address
 * length gives: IPoIB interfaces (ib0, hsi0, also over Omni-Path) are
 * InfiniBand, 6-byte addresses Ethernet.  An OpenFabrics (RDMA) device is
 * InfiniBand when its PCI function says so: class InfiniBand, or, for
 * cards that report a generic network class (ConnectX-3: 0280), an IPoIB
 * interface on the same function.  Omni-Path (class 0208, hfi1_*), EFA
 * (class 0200, rdmap*), RoCE and iWARP devices are other fabrics.
 */
static const char *
nic_kind(hwloc_obj_t os)
{
	hwloc_obj_t pci = pci_parent(os);
	unsigned cls = pci ? pci->attr->pcidev.class_id : 0;

	if (os->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK) {
		size_t len = address_len(os);

		if (len == HWADDR_LEN_IPOIB)
			return "infiniband";
		return len == HWADDR_LEN_ETHER ? "ethernet" : "fabric";
	}
	if (cls == PCI_CLASS_INFINIBAND || cls == PCI_CLASS_SERIAL_IB)
		return "infiniband";
	if (pci && cls != PCI_CLASS_FABRIC)
		for (hwloc_obj_t c = pci->io_first_child; c; c = c->next_sibling)
			if (is_ipoib(c))
				return "infiniband";
	return "fabric";
}

static int
is_nic(hwloc_obj_t os)
{
	return os->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK
	       || os->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS;
}

static int
collect_nics(struct topo *t, struct nic **out, size_t *n)
{
	struct nic *nics = NULL;
	size_t count = 0, i = 0;
	hwloc_obj_t os;

	*out = NULL;
	*n = 0;
	for (os = NULL; (os = hwloc_get_next_osdev(t->h, os)) != NULL;)
		if (is_nic(os))
			count++;
	if (count == 0)
		return 0;
	nics = calloc(count, sizeof(*nics));
	if (!nics)
		return -ENOMEM;
	for (os = NULL; (os = hwloc_get_next_osdev(t->h, os)) != NULL;) {
		if (!is_nic(os))
			continue;
		nics[i].os = os;
		nics[i].where = hwloc_get_non_io_ancestor_obj(t->h, os);
		nics[i].kind = nic_kind(os);
		i++;
	}
	*out = nics;
	*n = count;
	return 0;
}

static void
set_nic(struct slot_nic *dst, const struct nic *src, int local)
{
	snprintf(dst->name, sizeof(dst->name), "%s", src->os->name ? src->os->name : "");
	snprintf(dst->kind, sizeof(dst->kind), "%s", src->kind);
	dst->local = local;
}

int
topo_nics(struct topo *t, struct slot_nic **out, size_t *n)
{
	struct slot_nic *list;
	struct nic *nics;
	size_t count;
	int rc;

	*out = NULL;
	*n = 0;
	rc = collect_nics(t, &nics, &count);
	if (rc < 0 || count == 0)
		return rc;
	list = calloc(count, sizeof(*list));
	if (!list) {
		free(nics);
		return -ENOMEM;
	}
	for (size_t i = 0; i < count; i++)
		set_nic(&list[i], &nics[i], 0);
	free(nics);
	*out = list;
	*n = count;
	return 0;
}

/*
 * Which GPU backend an OS device comes from.  Exports by hwloc 2.2 and
 * trimmed test files carry NVML devices with neither subtype nor Backend
 * info, sometimes as CoProc rather than GPU objects; their name is then
 * all that tells.
 */
static enum backend
osdev_backend(hwloc_obj_t os)
{
	const char *tag = hwloc_obj_get_info_by_name(os, "Backend");
	enum backend b = BACKEND_NONE;

	if (!tag)
		tag = os->subtype;
	for (size_t i = 0; i < NBACKENDS && b == BACKEND_NONE; i++) {
		size_t len = strlen(backends[i].prefix);

		if (tag) {
			if (strcasecmp(tag, backends[i].name) == 0)
				b = backends[i].backend;
		} else if (os->name && strncmp(os->name, backends[i].prefix, len) == 0
		           && isdigit((unsigned char)os->name[len])) {
			b = backends[i].backend;
		}
	}
	return b;
}

static int
amd_bmc_chip(unsigned device_id)
{
	for (size_t i = 0; i < sizeof(amd_bmc_device_ids) / sizeof(amd_bmc_device_ids[0]); i++)
		if (amd_bmc_device_ids[i] == device_id)
			return 1;
	return 0;
}

/*
 * The most preferred GPU backend among the OS devices of a PCI device
 * (BACKEND_NONE if none); *model gets the GPUModel of the most preferred
 * one that gives a model, NULL if none does.  No model is corrected: a
 * truncated or odd one shows what the node reports.
 */
static enum backend
gpu_backend(hwloc_obj_t pci, const char **model)
{
	enum backend best = BACKEND_NONE, best_model = BACKEND_NONE;

	*model = NULL;
	for (hwloc_obj_t c = pci->io_first_child; c; c = c->next_sibling) {
		const char *m;
		enum backend b;

		if (c->type != HWLOC_OBJ_OS_DEVICE)
			continue;
		b = osdev_backend(c);
		if (b == BACKEND_NONE)
			continue;
		if (best == BACKEND_NONE || b < best)
			best = b;
		m = hwloc_obj_get_info_by_name(c, "GPUModel");
		if (m && *m && (best_model == BACKEND_NONE || b < best_model)) {
			*model = m;
			best_model = b;
		}
	}
	return best;
}

/*
 * Is this PCI device a slot, and whose?  A board is identified by its PCI
 * vendor; a GPU backend naming it settles that it computes.  Without one,
 * the class decides: NVIDIA boards are 3D (Tesla), VGA (RTX, Quadro) or
 * display controllers, and NVIDIA makes no BMC chips, while its NVSwitch
 * (class 0680) is no GPU; AMD compute boards are display controllers
 * (Instinct) or VGA (Radeon, and Vega 20 boards whose firmware says VGA),
 * less the BMC chips above; an MLU is a processing accelerator, and hwloc
 * has no MLU backend.  When the PCI ids are unreadable, a CUDA, NVML or
 * RSMI device still tells the vendor.
 */
static int
is_slot(hwloc_obj_t pci, enum backend named, enum slot_vendor *vendor)
{
	const struct hwloc_pcidev_attr_s *p = &pci->attr->pcidev;

	switch (p->vendor_id) {
	case PCI_VENDOR_NVIDIA:
		*vendor = SLOT_VENDOR_NVIDIA;
		return named != BACKEND_NONE || p->class_id == PCI_CLASS_VGA
		       || p->class_id == PCI_CLASS_3D || p->class_id == PCI_CLASS_DISPLAY;
	case PCI_VENDOR_AMD:
		*vendor = SLOT_VENDOR_AMD;
		return named != BACKEND_NONE || p->class_id == PCI_CLASS_DISPLAY
		       || (p->class_id == PCI_CLASS_VGA && !amd_bmc_chip(p->device_id));
	case PCI_VENDOR_CAMBRICON:
		*vendor = SLOT_VENDOR_CAMBRICON;
		return p->class_id == PCI_CLASS_ACCELERATOR;
	}
	if (named == BACKEND_CUDA || named == BACKEND_NVML) {
		*vendor = SLOT_VENDOR_NVIDIA;
		return 1;
	}
	if (named == BACKEND_RSMI) {
		*vendor = SLOT_VENDOR_AMD;
		return 1;
	}
	return 0;
}

static int
by_bus_id(const void *a, const void *b)
{
	const struct hwloc_pcidev_attr_s *x = &((const struct candidate *)a)->pci->attr->pcidev;
	const struct hwloc_pcidev_attr_s *y = &((const struct candidate *)b)->pci->attr->pcidev;

	if (x->domain != y->domain)
		return x->domain < y->domain ? -1 : 1;
	if (x->bus != y->bus)
		return x->bus < y->bus ? -1 : 1;
	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	if (x->func != y->func)
		return x->func < y->func ? -1 : 1;
	return 0;
}

static int
slot_numa(hwloc_obj_t where, struct slot *s)
{
	hwloc_const_nodeset_t ns = where->nodeset;
	int weight = ns ? hwloc_bitmap_weight(ns) : 0;
	size_t i = 0;

	if (weight <= 0)
		return 0;
	s->numa = calloc((size_t)weight, sizeof(*s->numa));
	if (!s->numa)
		return -ENOMEM;
	for (int id = hwloc_bitmap_first(ns); id >= 0 && i < (size_t)weight;
	     id = hwloc_bitmap_next(ns, id))
		s->numa[i++] = (unsigned)id;
	s->nnuma = i;
	return 0;
}

/*
 * The nearest NICs are those whose non-I/O ancestor meets the slot's at
 * the deepest common ancestor: on the same Package (or Group, L3) if any
 * NIC is there, else one level up, and so on to the whole machine.  So a
 * node with NICs always gives each slot some, and `local` says whether
 * they are on the slot's own NUMA node(s): every NUMA node the NIC is
 * attached to is one of the slot's.  A NIC hwloc could not place (under
 * the Machine) of a multi-NUMA node is thus never local.
 */
static int
slot_nics(struct topo *t, hwloc_obj_t where, const struct nic *nics, size_t nnics, struct slot *s)
{
	int best = -1;
	size_t count = 0, j = 0;

	for (size_t i = 0; i < nnics; i++) {
		hwloc_obj_t common = hwloc_get_common_ancestor_obj(t->h, where, nics[i].where);

		if (common->depth > best) {
			best = common->depth;
			count = 0;
		}
		if (common->depth == best)
			count++;
	}
	if (count == 0)
		return 0;
	s->nics = calloc(count, sizeof(*s->nics));
	if (!s->nics)
		return -ENOMEM;
	for (size_t i = 0; i < nnics && j < count; i++) {
		hwloc_obj_t common = hwloc_get_common_ancestor_obj(t->h, where, nics[i].where);

		if (common->depth != best)
			continue;
		set_nic(&s->nics[j++], &nics[i],
		        hwloc_bitmap_isincluded(nics[i].where->nodeset, where->nodeset));
	}
	s->nnics = j;
	return 0;
}

static int
fill_slot(struct topo *t, const struct candidate *c, int index, const struct nic *nics,
          size_t nnics, struct slot *s)
{
	const struct hwloc_pcidev_attr_s *p = &c->pci->attr->pcidev;
	hwloc_obj_t where = hwloc_get_non_io_ancestor_obj(t->h, c->pci);
	const char *model = c->model;
	int rc;

	/* Without a backend's model, the name the pci.ids of the host that
	 * ran hwloc gives; some exports have none. */
	if (!model)
		model = hwloc_obj_get_info_by_name(c->pci, "PCIDevice");
	s->index = index;
	s->vendor = c->vendor;
	snprintf(s->model, sizeof(s->model), "%s", model ? model : "");
	snprintf(s->pci_bus_id, sizeof(s->pci_bus_id), "%04x:%02x:%02x.%01x",
	         (unsigned)p->domain, (unsigned)p->bus, (unsigned)p->dev, (unsigned)p->func);
	s->pci_vendor_id = p->vendor_id;
	s->pci_device_id = p->device_id;
	s->pci_class_id = p->class_id;
	s->link_gbps = p->linkspeed;
	rc = slot_numa(where, s);
	if (rc < 0)
		return rc;
	if (hwloc_bitmap_list_asprintf(&s->cpuset, where->cpuset) < 0) {
		s->cpuset = NULL;
		return -ENOMEM;
	}
	return slot_nics(t, where, nics, nnics, s);
}

int
topo_slots(struct topo *t, struct slot **slots, size_t *n)
{
	struct candidate *cand = NULL, *grown;
	struct slot *s = NULL;
	struct nic *nics = NULL;
	size_t ncand = 0, cap = 0, nnics = 0;
	hwloc_obj_t pci;
	int rc;

	*slots = NULL;
	*n = 0;
	for (pci = NULL; (pci = hwloc_get_next_pcidev(t->h, pci)) != NULL;) {
		enum slot_vendor vendor;
		const char *model;

		if (!is_slot(pci, gpu_backend(pci, &model), &vendor))
			continue;
		if (ncand == cap) {
			cap = cap ? 2 * cap : 8;
			grown = realloc(cand, cap * sizeof(*cand));
			if (!grown) {
				rc = -ENOMEM;
				goto out;
			}
			cand = grown;
		}
		cand[ncand].pci = pci;
		cand[ncand].vendor = vendor;
		cand[ncand].model = model;
		ncand++;
	}
	if (ncand == 0) {
		rc = 0;
		goto out;
	}
	/* hwloc lists PCI devices depth-first under their NUMA locality;
	 * visible-device indexes follow the bus (CUDA_DEVICE_ORDER=PCI_BUS_ID). */
	qsort(cand, ncand, sizeof(*cand), by_bus_id);
	rc = collect_nics(t, &nics, &nnics);
	if (rc < 0)
		goto out;
	s = calloc(ncand, sizeof(*s));
	if (!s) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < ncand; i++) {
		rc = fill_slot(t, &cand[i], (int)i, nics, nnics, &s[i]);
		if (rc < 0)
			goto out;
	}
	*slots = s;
	*n = ncand;
	s = NULL;
	rc = 0;
out:
	topo_slots_free(s, ncand);
	free(nics);
	free(cand);
	return rc;
}

void
topo_slots_free(struct slot *slots, size_t n)
{
	if (!slots)
		return;
	for (size_t i = 0; i < n; i++) {
		free(slots[i].numa);
		free(slots[i].cpuset);
		free(slots[i].nics);
	}
	free(slots);
}
