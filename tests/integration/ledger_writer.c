/*
 * ledger_writer.c - one writer of the node ledger for ledger_concurrency.sh:
 * COUNT incidents, each its own ledger_append(), against the NODES in
 * turn, each with the evidence "writer ID record K".  After each record
 * is in place it prints "wrote ID K" (flushed), so the test knows what
 * must be read back whatever happens next.
 *
 * usage: ledger_writer DIR ID COUNT [PAUSE_AT PAUSE_FILE] NODE...
 * With PAUSE_AT >= 0, the write of record PAUSE_AT stops between the
 * write of its temporary file and its rename: the writer creates
 * PAUSE_FILE and waits there for the test's SIGKILL.  $LEDGER_GAP_MS
 * spaces the records out, and the writer stops early, between records,
 * once the file $LEDGER_STOP exists: the test keeps the writers going
 * until its readers have run among them.
 */
#include "autoconf.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check/ledger.h"
#include "lib/util.h"

static const char *pause_file;

/* The test's moment to kill: the record is written, not yet in place. */
static void
stop_here(void *arg)
{
	int fd = open(pause_file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);

	(void)arg;
	if (fd >= 0)
		(void)close(fd);
	for (;;)
		pause();
}

int
main(int argc, char **argv)
{
	struct ledger *l = NULL;
	char why[512];
	long id, count, pause_at = -1;
	const char *gap = getenv("LEDGER_GAP_MS"), *stop = getenv("LEDGER_STOP");
	int first = 4;

	if (argc < 5) {
		fprintf(stderr, "usage: ledger_writer DIR ID COUNT [PAUSE_AT PAUSE_FILE] NODE...\n");
		return 64;
	}
	id = strtol(argv[2], NULL, 10);
	count = strtol(argv[3], NULL, 10);
	if (argc > 6 && strspn(argv[4], "-0123456789") == strlen(argv[4])) {
		pause_at = strtol(argv[4], NULL, 10);
		pause_file = argv[5];
		first = 6;
	}
	if (ledger_open(argv[1], true, &l, why, sizeof(why)) < 0) {
		fprintf(stderr, "ledger_writer %ld: %s\n", id, why);
		return 1;
	}
	for (long k = 0; k < count && !(stop && access(stop, F_OK) == 0); k++) {
		struct ledger_record r = { .kind = CONFIG_LEDGER_FAULT, .time = util_wall_s(),
		                           .uid = -1 };
		const char *node = argv[first + k % (argc - first)];

		snprintf(r.node, sizeof(r.node), "%s", node);
		snprintf(r.check, sizeof(r.check), "nic");
		snprintf(r.device, sizeof(r.device), "eth1");
		snprintf(r.evidence, sizeof(r.evidence), "writer %ld record %ld", id, k);
		ledger_set_test_hook(l, k == pause_at ? stop_here : NULL, NULL);
		if (ledger_append(l, &r, 1, why, sizeof(why)) < 0) {
			fprintf(stderr, "ledger_writer %ld: %s\n", id, why);
			ledger_close(l);
			return 1;
		}
		printf("wrote %ld %ld\n", id, k);
		fflush(stdout);
		if (gap)
			(void)usleep((useconds_t)strtol(gap, NULL, 10) * 1000);
	}
	ledger_close(l);
	return 0;
}
