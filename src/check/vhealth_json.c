/*
 * vhealth_json.c - the vendor libraries' facts as JSON: the details of
 * `vigil check --json`, and each board's resource use for the metrics.
 *
 * A fact the library did not give (-1) is left out rather than written as
 * -1 or null: a reader tells "not offered" from a value by its absence.
 */
#include "autoconf.h"

#include <stdbool.h>
#include <stdio.h>

#include <cJSON.h>

#include "check/vhealth.h"
#include "check/vhealth_priv.h"

struct build {
	bool oom;
};

static cJSON *
track(struct build *b, cJSON *item)
{
	if (!item)
		b->oom = true;
	return item;
}

/* Attach ITEM to O under KEY (to array O when KEY is NULL); either way
 * ITEM is no longer the caller's. */
static void
put(struct build *b, cJSON *o, const char *key, cJSON *item)
{
	bool ok;

	if (!track(b, item))
		return;
	ok = o && (key ? cJSON_AddItemToObject(o, key, item) : cJSON_AddItemToArray(o, item));
	if (!ok) {
		cJSON_Delete(item);
		b->oom = true;
	}
}

static void
put_ll(struct build *b, cJSON *o, const char *key, long long v)
{
	if (v >= 0)
		put(b, o, key, cJSON_CreateNumber((double)v));
}

static void
put_flag(struct build *b, cJSON *o, const char *key, int v)
{
	if (v >= 0)
		put(b, o, key, cJSON_CreateBool(v));
}

/* {NAME0: v[0], NAME1: v[1]} under KEY; NAMES NULL: corrected, uncorrected. */
static void
put_pair(struct build *b, cJSON *o, const char *key, const long long v[2],
         const char *const *names)
{
	static const char *const ecc[2] = { "corrected", "uncorrected" };
	cJSON *p;

	if (v[0] < 0 && v[1] < 0)
		return;
	if (!names)
		names = ecc;
	p = track(b, cJSON_CreateObject());
	put_ll(b, p, names[0], v[0]);
	put_ll(b, p, names[1], v[1]);
	put(b, o, key, p);
}

static void
links_json(struct build *bld, cJSON *o, const struct vendor_board *b)
{
	cJSON *arr = NULL;

	for (unsigned i = 0; i < VENDOR_MAX_LINKS; i++) {
		cJSON *l;

		if (b->link[i] < 0)
			continue;
		if (!arr)
			arr = track(bld, cJSON_CreateArray());
		l = track(bld, cJSON_CreateObject());
		put_ll(bld, l, "link", i);
		put(bld, l, "active", cJSON_CreateBool(b->link[i] == 1));
		for (unsigned c = 0; c < VENDOR_LINK_COUNTERS; c++)
			put_ll(bld, l, vendor_link_counter_name(c), b->link_errors[i][c]);
		put(bld, arr, NULL, l);
	}
	if (arr)
		put(bld, o, "nvlinks", arr);
}

/* Names of the pairs that do not count corrected and uncorrected errors. */
static const char *const causes[2] = { "multiple_single_bit", "double_bit" };
static const char *const rows[2] = { "correctable", "uncorrectable" };

static cJSON *
board_json(struct build *bld, const struct vendor_board *b)
{
	cJSON *o = track(bld, cJSON_CreateObject()), *ras = NULL;

	put_ll(bld, o, "index", b->index);
	if (b->bus_id[0])
		put(bld, o, "pci_bus_id", cJSON_CreateString(b->bus_id));
	if (b->name[0])
		put(bld, o, "name", cJSON_CreateString(b->name));
	put(bld, o, "lost", cJSON_CreateBool(b->lost));
	if (b->reset_required)
		put(bld, o, "reset_required", cJSON_CreateTrue());
	if (b->lost || b->reset_required)
		put(bld, o, "lost_call", cJSON_CreateString(b->lost_call));
	if (b->failed[0]) {
		put(bld, o, "failed_calls", cJSON_CreateString(b->failed));
		put(bld, o, "failed_why", cJSON_CreateString(b->failed_why));
	}
	put_flag(bld, o, "ecc_enabled", b->ecc_enabled);
	put_pair(bld, o, "ecc_volatile", b->ecc_volatile, NULL);
	put_pair(bld, o, "ecc_aggregate", b->ecc_aggregate, NULL);
	put_pair(bld, o, "retired_pages", b->retired, causes);
	put_flag(bld, o, "retired_pages_pending", b->retired_pending);
	put_pair(bld, o, "remapped_rows", b->remapped, rows);
	put_flag(bld, o, "row_remap_pending", b->remap_pending);
	put_flag(bld, o, "row_remap_failure", b->remap_failure);
	put_ll(bld, o, "recovery_action", b->recovery);
	put_ll(bld, o, "throttle_reasons", b->throttle);
	put_ll(bld, o, "temperature_celsius", b->temperature);
	put_ll(bld, o, "slowdown_celsius", b->slowdown);
	links_json(bld, o, b);
	for (unsigned i = 0; i < VENDOR_RAS_BLOCKS; i++) {
		if (b->ras[i][0] < 0 && b->ras[i][1] < 0)
			continue;
		if (!ras)
			ras = track(bld, cJSON_CreateObject());
		put_pair(bld, ras, vendor_ras_block_name(i), b->ras[i], NULL);
	}
	if (ras)
		put(bld, o, "ras", ras);
	put_flag(bld, o, "healthy", b->health);
	put_ll(bld, o, "device_state", b->device_state);
	put_ll(bld, o, "driver_state", b->driver_state);
	put_ll(bld, o, "utilization_percent", b->utilization);
	put_ll(bld, o, "memory_used_bytes", b->memory_used);
	put_ll(bld, o, "memory_total_bytes", b->memory_total);
	put_ll(bld, o, "power_milliwatts", b->power_mw);
	return o;
}

cJSON *
vhealth_facts_to_json(const struct vhealth_facts *f)
{
	struct build bld = { false };
	cJSON *root = track(&bld, cJSON_CreateObject());

	for (unsigned k = 0; root && k < VENDOR_NKINDS; k++) {
		const struct vendor_facts *v = &f->lib[k];
		cJSON *o, *boards;

		if (!f->asked[k])
			continue;
		o = track(&bld, cJSON_CreateObject());
		put(&bld, o, "library", cJSON_CreateString(v->library));
		put(&bld, o, "available", cJSON_CreateBool(f->rc[k] == 0));
		put(&bld, o, "version", cJSON_CreateString(v->version));
		if (v->count >= 0)
			put(&bld, o, "count", cJSON_CreateNumber(v->count));
		put(&bld, o, "error", cJSON_CreateString(v->error));
		boards = track(&bld, cJSON_CreateArray());
		for (size_t i = 0; boards && i < v->nboards; i++)
			put(&bld, boards, NULL, board_json(&bld, &v->boards[i]));
		put(&bld, o, "boards", boards);
		put(&bld, root, vhealth_kind_key((enum vendor_kind)k), o);
	}
	if (bld.oom) {
		cJSON_Delete(root);
		return NULL;
	}
	return root;
}

cJSON *
vhealth_usage_to_json(const struct vhealth_facts *f, const struct slot *slots, size_t nslots)
{
	struct build bld = { false };
	cJSON *arr = track(&bld, cJSON_CreateArray());

	for (unsigned k = 0; arr && k < VENDOR_NKINDS; k++) {
		const struct vendor_facts *v = &f->lib[k];

		if (!f->asked[k] || f->rc[k] != 0)
			continue;
		for (size_t i = 0; i < v->nboards; i++) {
			const struct vendor_board *b = &v->boards[i];
			int slot = vhealth_slot_of(v, i, slots, nslots);
			cJSON *o;

			if (b->lost)
				continue;
			o = track(&bld, cJSON_CreateObject());
			put(&bld, o, "vendor", cJSON_CreateString(vhealth_kind_key((enum vendor_kind)k)));
			put_ll(&bld, o, "index", slot >= 0 ? slot : b->index);
			if (b->bus_id[0])
				put(&bld, o, "pci_bus_id", cJSON_CreateString(b->bus_id));
			if (b->utilization >= 0)
				put(&bld, o, "utilization", cJSON_CreateNumber(b->utilization / 100.0));
			put_ll(&bld, o, "memory_used_bytes", b->memory_used);
			put_ll(&bld, o, "memory_total_bytes", b->memory_total);
			put_ll(&bld, o, "temperature_celsius", b->temperature);
			if (b->power_mw >= 0)
				put(&bld, o, "power_watts", cJSON_CreateNumber(b->power_mw / 1000.0));
			put(&bld, arr, NULL, o);
		}
	}
	if (bld.oom) {
		cJSON_Delete(arr);
		return NULL;
	}
	return arr;
}
