/*
 * vhealth_priv.h - what vhealth.c, vhealth_json.c and vhealth_monitor.c
 * share and nothing else uses.
 */
#ifndef VIGIL_VHEALTH_PRIV_H
#define VIGIL_VHEALTH_PRIV_H

#include <stdbool.h>
#include <stddef.h>

#include "check/vhealth.h"
#include "conf/config.h"
#include "sys/topo.h"
#include "sys/vendor.h"

/* The configured path of K's library, NULL for the default name. */
const char *vhealth_library_path(const struct config_boards *rules, enum vendor_kind k);

/* Which libraries SLOTS call for: see vhealth_gather(). */
void vhealth_asked(const struct config_boards *rules, const struct slot *slots, size_t n,
                   bool live, bool asked[VENDOR_NKINDS]);

/* "nvml", "rocm_smi", "cndev": JSON keys and device names. */
const char *vhealth_kind_key(enum vendor_kind k);

/* Open K's library and read every board into F, a board the library
 * cannot name looked up among the bus ids of SLOTS (vendor_expect()); with
 * KEEP, an open library is left there for more reads.  Returns as
 * vendor_open/read. */
int vhealth_ask(enum vendor_kind kind, const char *path, const struct slot *slots,
                size_t nslots, struct vendor_lib **keep, struct vendor_facts *f);

/* In a child: standard output and error to /dev/null. */
void vhealth_quiet_stdio(void);

/* The slot index of board B of library KIND, or -1 when no slot is it. */
int vhealth_slot_of(const struct vendor_facts *f, size_t board, const struct slot *slots,
                    size_t nslots);

#endif
