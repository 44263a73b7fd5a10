/*
 * metrics_prog.c - write the --metrics textfile the way the coordinator
 * fills it, from real sources: the boards of a (fake) vendor library
 * through vhealth_gather() and vhealth_usage_to_json() (what a node sends
 * in its note), metrics_set_boards_json() (what the coordinator does with
 * it), and this process's own CPU and memory from getrusage().  For
 * metrics_promtool.sh, which checks the file with promtool.
 *
 * Usage: metrics_prog OUT [--nvml LIB] [--slot BUS]... [--node NAME]...
 *                         [--timings]
 */
#include "autoconf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <cJSON.h>

#include "check/vhealth.h"
#include "conf/config.h"
#include "perf/metrics.h"
#include "sys/topo.h"

#define MAX_SLOTS 8
#define MAX_NODES 8

static int
usage_error(void)
{
	fprintf(stderr, "usage: metrics_prog OUT [--nvml LIB] [--slot BUS]... [--node NAME]... "
	                "[--timings]\n");
	return 2;
}

int
main(int argc, char **argv)
{
	struct slot slots[MAX_SLOTS];
	const char *nodes[MAX_NODES], *out;
	size_t nslots = 0, nnodes = 0;
	struct vhealth_facts *facts;
	struct rusage ru;
	struct config cfg;
	struct metrics *m;
	bool timings = false;
	cJSON *usage;
	int rc = 1;

	if (argc < 2)
		return usage_error();
	out = argv[1];
	config_init(&cfg);
	memset(slots, 0, sizeof(slots));
	for (int i = 2; i < argc; i++) {
		if (strcmp(argv[i], "--nvml") == 0 && i + 1 < argc) {
			free(cfg.boards.nvml_library);
			cfg.boards.nvml_library = strdup(argv[++i]);
		} else if (strcmp(argv[i], "--slot") == 0 && i + 1 < argc && nslots < MAX_SLOTS) {
			slots[nslots].index = (int)nslots;
			slots[nslots].vendor = SLOT_VENDOR_NVIDIA;
			snprintf(slots[nslots].pci_bus_id, sizeof(slots[0].pci_bus_id), "%s", argv[++i]);
			nslots++;
		} else if (strcmp(argv[i], "--node") == 0 && i + 1 < argc && nnodes < MAX_NODES) {
			nodes[nnodes++] = argv[++i];
		} else if (strcmp(argv[i], "--timings") == 0) {
			timings = true;
		} else {
			config_free(&cfg);
			return usage_error();
		}
	}
	if (nnodes == 0)
		nodes[nnodes++] = "n1";

	facts = vhealth_facts_new();
	m = metrics_new();
	if (!facts || !m || vhealth_gather(&cfg, slots, nslots, true, facts) < 0)
		goto out;
	usage = vhealth_usage_to_json(facts, slots, nslots);
	if (!usage)
		goto out;
	(void)metrics_set_state(m, "running");
	for (size_t i = 0; i < nnodes; i++)
		if (metrics_set_boards_json(m, nodes[i], usage) < 0)
			goto out_usage;
	if (getrusage(RUSAGE_SELF, &ru) == 0)
		for (size_t i = 0; i < nnodes; i++)
			(void)metrics_set_training_usage(
				m, nodes[i],
				(double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
					(double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6,
				(double)ru.ru_maxrss * 1024);
	if (timings) {
		struct metrics_stats hw = { 80, 90, 100 }, e2e = { 100, 110, 120 },
		                     r = { 0.7, 0.8, 0.9 };

		metrics_set_iterations(m, 10);
		metrics_set_iteration(m, &hw, &e2e, &r);
		for (size_t i = 0; i < nnodes; i++)
			(void)metrics_set_node_e2e(m, nodes[i], 110);
		(void)metrics_add_alert(m, "straggler");
	}
	metrics_set_nodes(m, (unsigned)nnodes, 0);
	if (metrics_write(m, out) < 0)
		goto out_usage;
	rc = 0;
out_usage:
	cJSON_Delete(usage);
out:
	if (rc)
		fprintf(stderr, "metrics_prog: could not build or write %s\n", out);
	metrics_free(m);
	free(facts);
	config_free(&cfg);
	return rc;
}
