/*
 * fuzz_config.c - libFuzzer target for the configuration parser.
 *
 * Built and run by `make fuzz` (tests/fuzz/run.sh).  Besides the
 * sanitizers' findings, it aborts when a result breaks the contract of
 * config.h: an error without its one-line message, or a success that
 * leaves a value the parser should have refused.
 */
#include "autoconf.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "conf/config.h"
#include "conf/opts.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check_ok(const struct config *cfg)
{
	if (!cfg->sysfs_root || cfg->sysfs_root[0] != '/')
		abort();
	if (cfg->check_timeout_s <= 0 || cfg->gather_timeout_s <= 0)
		abort();
	if ((cfg->npaths > 0) != (cfg->paths != NULL))
		abort();
	for (size_t i = 0; i < cfg->npaths; i++) {
		if (!cfg->paths[i].path || cfg->paths[i].path[0] != '/' ||
		    cfg->paths[i].min_free_mb < 0 || cfg->paths[i].min_free_inodes < 0)
			abort();
	}
	for (size_t i = 0; i < cfg->nnics; i++) {
		if (!cfg->nics[i][0] || strchr(cfg->nics[i], '/'))
			abort();
	}
	for (size_t i = 0; i < cfg->nib_devices; i++) {
		if (!cfg->ib_devices[i][0] || strchr(cfg->ib_devices[i], '/'))
			abort();
	}
	if (cfg->slots_expected < -1 || cfg->aer_correctable_max < -1 ||
	    cfg->mem_min_free_mb < 0 || cfg->shm_min_mb < 0 || cfg->nofile_min < 0 ||
	    cfg->nic_min_speed_mbps < 0 || cfg->ib_min_rate_gbps < 0)
		abort();
	if ((unsigned)cfg->pcie_degraded > VERDICT_FAIL)
		abort();
	/* the run section: rows of the table, values its parsers accept */
	for (size_t i = 0; i < cfg->nrun + cfg->nrun_limits; i++) {
		const struct config_setting *s = i < cfg->nrun ? &cfg->run[i] :
		                                 &cfg->run_limits[i - cfg->nrun];
		char why[320];

		if (s->opt < opts_run_table || s->opt >= opts_run_table + opts_run_count ||
		    opts_run_check(s->opt, s->text, s->num, NULL, why, sizeof(why)) != 0)
			abort();
		if (i >= cfg->nrun && (!(s->opt->flags & OPTS_LIMIT) || !(s->num >= 0)))
			abort();
		if (i < cfg->nrun && !(s->opt->flags & OPTS_SITE))
			abort();
	}
	if (!cfg->origin || strcmp(cfg->origin, "fuzz.json") != 0)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char origin[] = "fuzz.json";
	struct config cfg;
	char err[512];
	int rc;

	config_init(&cfg);
	memset(err, 0, sizeof(err));
	rc = config_load_buffer(&cfg, (const char *)data, size, origin, err, sizeof(err));
	if (rc == 0) {
		check_ok(&cfg);
	} else {
		/* "fuzz.json: ...", one line, NUL-terminated within the buffer */
		if (rc > 0 || strncmp(err, "fuzz.json: ", strlen("fuzz.json: ")) != 0 ||
		    strchr(err, '\n') || !memchr(err, '\0', sizeof(err)))
			abort();
	}
	config_free(&cfg);
	return 0;
}
