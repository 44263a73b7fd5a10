/*
 * fuzz_progress.c - libFuzzer target for the timing-line parser.
 *
 * Built and run by `make fuzz` (tests/fuzz/run.sh).  The input is one
 * line, exactly SIZE bytes with no terminator, so the sanitizers catch
 * any read past its end.  Besides their findings, it aborts when a
 * success breaks the contract of progress.h: a time that is not finite,
 * a negative hardware time, an e2e time that is not positive, a key
 * without its NUL or with bytes no launcher tag yields, a line that does
 * not hold the fixed text or PROGRESS_MARK (the agent hands the parser
 * only the lines that hold it), or a second parse that disagrees.
 */
#include "autoconf.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "perf/progress.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check_key(const char *key, size_t size)
{
	const char *nul = memchr(key, '\0', size);

	if (!nul)
		abort();
	for (const char *p = key; p < nul; p++) {
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
		            "0123456789_-.,:/~", *p))
			abort();
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char head[] = "this iteration hardware time is ";
	struct progress_line l, again;

	memset(&l, 0x5a, sizeof(l));
	if (!progress_parse((const char *)data, size, &l))
		return 0;
	if (!isfinite(l.hw_ms) || !isfinite(l.e2e_ms) || !(l.hw_ms >= 0.0) ||
	    !(l.e2e_ms > 0.0))
		abort();
	check_key(l.key, sizeof(l.key));
	if (!memmem(data, size, head, sizeof(head) - 1) ||
	    !memmem(data, size, PROGRESS_MARK, PROGRESS_MARK_LEN))
		abort();
	memset(&again, 0, sizeof(again));
	if (!progress_parse((const char *)data, size, &again) ||
	    again.hw_ms != l.hw_ms || again.e2e_ms != l.e2e_ms ||
	    strcmp(again.key, l.key) != 0)
		abort();
	return 0;
}
