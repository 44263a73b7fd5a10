/*
 * slots.c - presenting discovered slots: `vigil slots` table and JSON.
 */
#include "autoconf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/slots.h"

size_t
slots_env_count(size_t nslots)
{
	/* The manual: SLOTS is the accelerator count, 1 on a CPU node, so a
	 * launcher starts one process either way. */
	return nslots ? nslots : 1;
}

/* The speed as people read it (hwloc's 15.753846 is "15.75"), without
 * libm: printf rounds, strtod reads it back. */
static double
round_gbps(float gbps)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%.2f", (double)gbps);
	return strtod(buf, NULL);
}

static cJSON *
slot_json(const struct slot *s)
{
	cJSON *o = cJSON_CreateObject(), *a;
	char buf[16];

	if (!o)
		return NULL;
	if (!cJSON_AddNumberToObject(o, "index", s->index)
	    || !cJSON_AddStringToObject(o, "vendor", slot_vendor_name(s->vendor))
	    || !(s->model[0] ? cJSON_AddStringToObject(o, "model", s->model)
	                     : cJSON_AddNullToObject(o, "model"))
	    || !cJSON_AddStringToObject(o, "pci_bus_id", s->pci_bus_id))
		goto fail;
	snprintf(buf, sizeof(buf), "%04x:%04x", s->pci_vendor_id & 0xffffu, s->pci_device_id & 0xffffu);
	if (!cJSON_AddStringToObject(o, "pci_id", buf))
		goto fail;
	snprintf(buf, sizeof(buf), "%04x", s->pci_class_id & 0xffffu);
	if (!cJSON_AddStringToObject(o, "pci_class", buf))
		goto fail;
	a = cJSON_AddArrayToObject(o, "numa");
	if (!a)
		goto fail;
	for (size_t i = 0; i < s->nnuma; i++) {
		cJSON *num = cJSON_CreateNumber(s->numa[i]);

		if (!num)
			goto fail;
		cJSON_AddItemToArray(a, num);
	}
	if (!cJSON_AddStringToObject(o, "cpuset", s->cpuset ? s->cpuset : ""))
		goto fail;
	a = cJSON_AddArrayToObject(o, "nics");
	if (!a)
		goto fail;
	for (size_t i = 0; i < s->nnics; i++) {
		cJSON *nic = cJSON_CreateObject();

		if (!nic)
			goto fail;
		cJSON_AddItemToArray(a, nic);
		if (!cJSON_AddStringToObject(nic, "name", s->nics[i].name)
		    || !cJSON_AddStringToObject(nic, "kind", s->nics[i].kind)
		    || !cJSON_AddBoolToObject(nic, "local", s->nics[i].local))
			goto fail;
	}
	if (!(s->link_gbps > 0 ? cJSON_AddNumberToObject(o, "link_gbps", round_gbps(s->link_gbps))
	                       : cJSON_AddNullToObject(o, "link_gbps")))
		goto fail;
	return o;
fail:
	cJSON_Delete(o);
	return NULL;
}

cJSON *
slots_to_json(const struct slot *slots, size_t n)
{
	cJSON *root = cJSON_CreateObject(), *arr;

	if (!root)
		return NULL;
	arr = cJSON_AddArrayToObject(root, "slots");
	if (!arr)
		goto fail;
	for (size_t i = 0; i < n; i++) {
		cJSON *o = slot_json(&slots[i]);

		if (!o)
			goto fail;
		cJSON_AddItemToArray(arr, o);
	}
	if (!cJSON_AddNumberToObject(root, "count", (double)n)
	    || !cJSON_AddNumberToObject(root, "SLOTS", (double)slots_env_count(n)))
		goto fail;
	return root;
fail:
	cJSON_Delete(root);
	return NULL;
}

/*
 * The table is written twice over the same cell functions: once to
 * measure (f NULL), once to print, so no cell is ever stored or cut.
 */
struct out {
	FILE *f;
	size_t len;
};

static void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int len;

	va_start(ap, fmt);
	if (o->f)
		len = vfprintf(o->f, fmt, ap);
	else
		len = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (len > 0)
		o->len += (size_t)len;
}

enum column { COL_IDX, COL_VENDOR, COL_MODEL, COL_PCI, COL_NUMA, COL_CPUS, COL_NICS, COL_LINK, NCOLS };

static const char *const headers[NCOLS] = {
	"IDX", "VENDOR", "MODEL", "PCI", "NUMA", "CPUS", "NICS", "LINK",
};

static void
cell(struct out *o, const struct slot *s, enum column col)
{
	switch (col) {
	case COL_IDX:
		put(o, "%d", s->index);
		break;
	case COL_VENDOR:
		put(o, "%s", slot_vendor_name(s->vendor));
		break;
	case COL_MODEL:
		put(o, "%s", s->model[0] ? s->model : "-");
		break;
	case COL_PCI:
		put(o, "%s", s->pci_bus_id);
		break;
	case COL_NUMA:
		for (size_t i = 0; i < s->nnuma; i++)
			put(o, "%s%u", i ? "," : "", s->numa[i]);
		if (s->nnuma == 0)
			put(o, "-");
		break;
	case COL_CPUS:
		put(o, "%s", s->cpuset && s->cpuset[0] ? s->cpuset : "-");
		break;
	case COL_NICS:
		for (size_t i = 0; i < s->nnics; i++)
			put(o, "%s%s%s", i ? "," : "", s->nics[i].name, s->nics[i].local ? "" : "(remote)");
		if (s->nnics == 0)
			put(o, "-");
		break;
	case COL_LINK:
		if (s->link_gbps > 0)
			put(o, "%.2f GB/s", (double)s->link_gbps);
		else
			put(o, "-");
		break;
	case NCOLS:
		break;
	}
}

static void
row(FILE *f, const struct slot *s, const size_t *width)
{
	for (int col = 0; col < NCOLS; col++) {
		struct out o = { f, 0 };

		if (s)
			cell(&o, s, (enum column)col);
		else
			put(&o, "%s", headers[col]);
		/* No padding after the last column: lines end without blanks. */
		if (col + 1 < NCOLS)
			fprintf(f, "%*s", (int)(width[col] - o.len + 2), "");
	}
	fputc('\n', f);
}

void
slots_print_table(FILE *f, const struct slot *slots, size_t n)
{
	size_t width[NCOLS];

	if (n == 0) {
		fprintf(f, "no accelerators found: CPU-only node, SLOTS=%zu\n", slots_env_count(0));
		return;
	}
	for (int col = 0; col < NCOLS; col++) {
		width[col] = strlen(headers[col]);
		for (size_t i = 0; i < n; i++) {
			struct out o = { NULL, 0 };

			cell(&o, &slots[i], (enum column)col);
			if (o.len > width[col])
				width[col] = o.len;
		}
	}
	row(f, NULL, width);
	for (size_t i = 0; i < n; i++)
		row(f, &slots[i], width);
}
