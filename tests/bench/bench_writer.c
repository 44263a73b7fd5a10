/*
 * bench_writer.c - a training's log for the pass-through benchmark
 * (tests/bench/bench_run.sh): LINES lines written one write() per line, as
 * a line-buffered training prints them, behind torchrun's "[defaultN]:"
 * prefix, one timing line in 20, the others a logger's lines of about
 * 120 bytes.
 *
 * Usage: bench_writer LINES
 * Exit status: 0, 1 when a write failed (the reader went away), 2 on
 * usage.
 */
#include "autoconf.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int
main(int argc, char **argv)
{
	char line[512], *end;
	long n = argc == 2 ? strtol(argv[1], &end, 10) : -1;

	if (argc != 2 || *end || n < 0) {
		fprintf(stderr, "usage: bench_writer LINES\n");
		return 2;
	}
	for (long i = 0; i < n; i++) {
		int k;

		if (i % 20 == 0)
			k = snprintf(line, sizeof(line), "[default%ld]:this iteration hardware time is "
			             "%ld.%03ld and e2e time is %ld.%09ld ms.\n", i % 8, 2000 + i % 400,
			             i % 1000, 3000 + i % 600, i % 1000000000);
		else
			k = snprintf(line, sizeof(line), "[default%ld]:2026-11-20 12:%02ld:%02ld,%03ld - "
			             "INFO - trainer.py:%ld - step %ld/100000 | loss %ld.%04ld | "
			             "lr 1.%02lde-04 | tokens/s %ld\n", i % 8, i / 60 % 60, i % 60,
			             i % 1000, 400 + i % 100, i, i % 4, i % 10000, i % 100,
			             100000 + i % 50000);
		if (k <= 0 || write(STDOUT_FILENO, line, (size_t)k) != k)
			return 1;
	}
	return 0;
}
