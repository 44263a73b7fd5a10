/*
 * opts_rows - the table of `vigil run`'s options, one row a line, for
 * opts_docs.sh to hold --help and the manual pages to:
 *   NAME LETTER SITE LIMIT
 * LETTER is the short option or "-"; SITE and LIMIT are 1 when the
 * configuration's "run" section may set the option, and "run.limits" cap it.
 */
#include "autoconf.h"

#include <stdio.h>

#include "conf/opts.h"

int
main(void)
{
	for (const struct opts_run *opt = opts_run_table; opt->name; opt++)
		printf("%s %c %d %d\n", opt->name, opt->letter ? opt->letter : '-',
		       (opt->flags & OPTS_SITE) != 0, (opt->flags & OPTS_LIMIT) != 0);
	return ferror(stdout) ? 1 : 0;
}
