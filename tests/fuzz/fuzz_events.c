/*
 * fuzz_events.c - libFuzzer target for the event-log reader of `vigil
 * report`: reading, deriving, and the three presentations.
 *
 * Built and run by `make fuzz` (tests/fuzz/run.sh).  Besides the
 * sanitizers' findings, it aborts when a result breaks the contract of
 * report.h: counts that disagree, a summary or plot that cannot be
 * written, a JSON summary that does not print as valid UTF-8.
 */
#include "autoconf.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "lib/json.h"
#include "lib/util.h"
#include "report/report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Lines in DATA, as getline() counts them. */
static size_t
lines(const uint8_t *data, size_t size)
{
	size_t n = 0;

	for (size_t i = 0; i < size; i++)
		n += data[i] == '\n';
	return n + (size > 0 && data[size - 1] != '\n');
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *null;
	struct report *r = NULL;
	const size_t *at;
	size_t nat, torn;
	cJSON *o;
	char *text;
	FILE *fp;

	if (!null && !(null = fopen("/dev/null", "w")))
		abort();
	if (size == 0)
		return 0;  /* fmemopen() wants a buffer */
	fp = fmemopen((void *)data, size, "r");
	if (!fp)
		abort();
	if (report_load_stream(fp, "fuzz.jsonl", &r) < 0)
		abort();  /* only ENOMEM may fail, and the fuzzer does not run out */
	fclose(fp);
	torn = report_torn(r, &at, &nat);
	if (torn > report_malformed(r) || report_malformed(r) > lines(data, size) ||
	    nat > torn || (nat > 0 && at[nat - 1] > lines(data, size)))
		abort();
	if (report_print(r, null) < 0 || report_plot(r, null) < 0)
		abort();
	o = report_json(r);
	text = o ? json_print(o, true) : NULL;
	if (!text || !util_utf8_valid(text, strlen(text)))
		abort();
	free(text);
	cJSON_Delete(o);
	report_free(r);
	return 0;
}
