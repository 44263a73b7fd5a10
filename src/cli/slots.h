/*
 * slots.h - presenting discovered slots: `vigil slots` table and JSON.
 */
#ifndef VIGIL_SLOTS_H
#define VIGIL_SLOTS_H

#include <stdio.h>
#include <cJSON.h>

#include "sys/topo.h"

/*
 * The SLOTS value the platform manual defines: the number of accelerators,
 * or 1 on a CPU-only node.
 */
size_t slots_env_count(size_t nslots);

/*
 * {"slots": [ {index, vendor, model, pci_bus_id, pci_id, pci_class,
 *              numa:[..], cpuset, nics:[{name,kind,local}], link_gbps}, ... ],
 *  "count": N, "SLOTS": slots_env_count(N)}
 * pci_id is "vvvv:dddd" and pci_class "cccc" (hex); model is null when
 * nothing names the board; link_gbps is rounded to 0.01 GB/s, null when
 * unknown.  NULL on allocation failure.  The caller owns the result.
 */
cJSON *slots_to_json(const struct slot *slots, size_t n);

/*
 * Aligned table for people: a header line, then one line per slot with
 * the columns IDX VENDOR MODEL PCI NUMA CPUS NICS LINK; "-" marks an empty
 * cell, and a NIC that is not on the slot's NUMA node(s) is marked
 * "(remote)".  A CPU-only node gets one line saying so, with SLOTS=1.
 */
void slots_print_table(FILE *f, const struct slot *slots, size_t n);

#endif
