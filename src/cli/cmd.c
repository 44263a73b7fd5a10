/*
 * cmd.c - what vigil's commands share: usage errors, the node's name and
 * slot discovery.
 */
#include "autoconf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vigil.h"
#include "cli/cmd.h"
#include "lib/log.h"
#include "lib/util.h"
#include "sys/topo.h"

int
cmd_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "vigil %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry `vigil %s --help'.\n", cmd);
	return VIGIL_EXIT_USAGE;
}

/* NAME for a message on one line: control characters shown as '?', cut. */
static void
printable(const char *name, char *buf, size_t len)
{
	size_t i;

	for (i = 0; name[i] && i + 1 < len && i < 80; i++)
		buf[i] = (unsigned char)name[i] < 0x20 || name[i] == 0x7f ? '?' : name[i];
	buf[i] = '\0';
}

int
cmd_node_name(char *buf, size_t len)
{
	const char *env = getenv("VIGIL_NODE_NAME");
	char why[128], shown[96];

	if (env && *env) {
		if (util_hostname_check(env, why, sizeof(why)) < 0 || strlen(env) >= len) {
			printable(env, shown, sizeof(shown));
			fprintf(stderr, "vigil: VIGIL_NODE_NAME '%s' is not a valid host name (%s): "
			        "it names this node in hostfiles and events; set it to letters, "
			        "digits, '-', '_' and '.' only, or unset it to use the hostname\n",
			        shown, strlen(env) >= len ? "too long" : why);
			return VIGIL_EXIT_USAGE;
		}
		snprintf(buf, len, "%s", env);
		return 0;
	}
	if (gethostname(buf, len) < 0) {
		int rc = errno;

		fprintf(stderr, "vigil: cannot tell this node's name: %s; set VIGIL_NODE_NAME\n",
		        strerror(rc));
		return VIGIL_EXIT_USAGE;
	}
	buf[len - 1] = '\0';
	if (util_hostname_check(buf, why, sizeof(why)) < 0) {
		printable(buf, shown, sizeof(shown));
		fprintf(stderr, "vigil: this host's name '%s' is not a valid host name (%s); "
		        "set VIGIL_NODE_NAME to the name other nodes know it by\n", shown, why);
		return VIGIL_EXIT_USAGE;
	}
	return 0;
}

int
cmd_discover(const char *topology, struct slot **slots, size_t *nslots)
{
	struct topo *t = NULL;
	int rc;

	rc = topo_load(topology, &t);
	if (rc < 0) {
		LOG_ERR("cannot load the topology%s%s: %s",
		        topology ? " from " : "", topology ? topology : "", strerror(-rc));
		return rc;
	}
	rc = topo_slots(t, slots, nslots);
	if (rc < 0)
		LOG_ERR("slot discovery failed: %s", strerror(-rc));
	topo_free(t);
	return rc;
}
