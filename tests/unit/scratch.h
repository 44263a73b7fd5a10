/*
 * scratch.h - scratch directories for unit tests, and reading back the
 * files the code under test wrote there.  Include after vigil_test.h.
 */
#ifndef VIGIL_TEST_SCRATCH_H
#define VIGIL_TEST_SCRATCH_H

#include <stdio.h>
#include <stdlib.h>

/*
 * Create a fresh directory "$TMPDIR/vigil-NAME-XXXXXX" ("/tmp" when TMPDIR
 * is unset or empty), its path in DIR (LEN bytes).  Returns 0, or -1 when
 * it could not be made (a path longer than LEN included).  The caller
 * removes it.
 */
static inline int
make_scratch_dir(char *dir, size_t len, const char *name)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(dir, len, "%s/vigil-%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", name);
	return mkdtemp(dir) ? 0 : -1;
}

/*
 * The contents of file PATH, at most SIZE - 1 bytes, NUL-terminated in a
 * buffer of SIZE (the caller frees it); how many were read in *LEN unless
 * LEN is NULL.  Fails the test when PATH cannot be opened.
 */
static inline char *
slurp(const char *path, size_t size, size_t *len)
{
	FILE *fp = fopen(path, "r");
	char *buf;
	size_t n;

	assert_non_null(fp);
	buf = calloc(1, size);
	assert_non_null(buf);
	n = fread(buf, 1, size - 1, fp);
	buf[n] = '\0';
	fclose(fp);
	if (len)
		*len = n;
	return buf;
}

#endif
