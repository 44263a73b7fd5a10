/*
 * slots.h - presenting discovered slots: `vigil slots` table and JSON.
 */
#ifndef VIGIL_SLOTS_H
#define VIGIL_SLOTS_H

#include <stdio.h>
#include <cJSON.h>

#include "topo.h"

/*
 * The SLOTS value the platform manual defines: the number of accelerators,
 * or 1 on a CPU-only node.
 */
size_t slots_env_count(size_t nslots);

/*
 * {"slots": [ {index, vendor, model, pci_bus_id, pci_id, numa:[..],
 *              cpuset, nics:[{name,kind}], link_gbps}, ... ],
 *  "count": N, "SLOTS": slots_env_count(N)}
 * NULL on allocation failure.  The caller owns the result.
 */
cJSON *slots_to_json(const struct slot *slots, size_t n);

/* Aligned table for people; a CPU-only node gets one explanatory line. */
void slots_print_table(FILE *f, const struct slot *slots, size_t n);

#endif
