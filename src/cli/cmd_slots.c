/*
 * cmd_slots.c - `vigil slots`: what discovery finds on this node.
 */
#include "autoconf.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include <cJSON.h>

#include "vigil.h"
#include "check/facts.h"
#include "cli/cmd.h"
#include "cli/slots.h"
#include "lib/json.h"
#include "lib/log.h"
#include "sys/hwmon.h"
#include "sys/topo.h"

static const char slots_usage[] =
"usage: vigil slots [--json] [--topology FILE.xml]\n"
"\n"
"  --json            print one JSON object instead of a table\n"
"  --topology FILE   read an lstopo XML export instead of this machine\n";

/* On this machine, boards newer than its pci.ids (which hwloc names them
 * from) get the name their driver gives them, as `vigil check` does. */
static void
name_boards(struct slot *slots, size_t n)
{
	struct hwmon *hw = NULL;

	if (hwmon_open("/", &hw) < 0)
		return;
	for (size_t i = 0; i < n; i++) {
		struct slot *s = &slots[i];

		if (s->model[0])
			continue;
		(void)facts_board_model(hw, s->vendor, s->pci_bus_id, s->model, sizeof(s->model));
	}
	hwmon_free(hw);
}

int
cmd_slots(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "topology", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *topology = NULL;
	struct slot *slots = NULL;
	size_t n = 0;
	bool json = false;
	int c, rc;

	optind = 0;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (c) {
		case 'j': json = true; break;
		case 't': topology = optarg; break;
		case 'h': fputs(slots_usage, stdout); return VIGIL_EXIT_OK;
		default: return cmd_usage_error("slots", "invalid option");
		}
	}
	if (optind < argc)
		return cmd_usage_error("slots", "unexpected argument '%s'", argv[optind]);
	if (cmd_discover(topology, &slots, &n) < 0)
		return VIGIL_EXIT_INTERNAL;
	if (!topology)
		name_boards(slots, n);
	if (json) {
		cJSON *o = slots_to_json(slots, n);
		char *text = o ? json_print(o, true) : NULL;

		if (!text) {
			LOG_ERR("out of memory");
			rc = VIGIL_EXIT_INTERNAL;
		} else {
			printf("%s\n", text);
			rc = VIGIL_EXIT_OK;
		}
		free(text);
		cJSON_Delete(o);
	} else {
		slots_print_table(stdout, slots, n);
		rc = VIGIL_EXIT_OK;
	}
	topo_slots_free(slots, n);
	if (fflush(stdout) != 0)
		rc = VIGIL_EXIT_INTERNAL;
	return rc;
}
