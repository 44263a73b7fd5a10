/*
 * test_slurm.c - drain/undrain against a fake scontrol.
 *
 * The fake is a shell script in a scratch directory: it appends its
 * arguments, one per line and then "--", to $FAKE_SCONTROL_LOG, and
 * answers `show node` with the canned output named by $FAKE_SCONTROL_SHOW.
 */
#include "autoconf.h"

#include "vigil_test.h"
#include "proc.h"
#include "scratch.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "slurm.h"

static const char fake_scontrol[] =
	"#!/bin/sh\n"
	"for a in \"$@\"; do printf '%s\\n' \"$a\"; done >> \"$FAKE_SCONTROL_LOG\"\n"
	"echo -- >> \"$FAKE_SCONTROL_LOG\"\n"
	"if [ \"$1\" = update ]; then\n"
	"  case \"$FAKE_SCONTROL_UPDATE\" in\n"
	"  fail) echo 'slurm_update error: Invalid node name specified' >&2; exit 1;;\n"
	"  hang) sleep 100;;\n"
	"  esac\n"
	"  exit 0\n"
	"fi\n"
	"state=IDLE reason=\n"
	"case \"$FAKE_SCONTROL_SHOW\" in\n"
	"vigil)         state=IDLE+DRAIN reason='vigil: slot 3 missing [root@2026-11-20T10:00:00]';;\n"
	"vigil-drained) state=DRAINED reason='vigil: nic eth1 down [root@2026-11-20T10:00:00]';;\n"
	"vigil-mixed)   state=MIXED+DRAIN reason='vigil: x [slurm@2026-11-20T10:00:00]';;\n"
	"vigil-drng)    state=DRAINING reason='vigil: x [root@2026-11-20T10:00:00]';;\n"
	"vigil-down)    state=DOWN+NOT_RESPONDING reason='vigil: x [root@2026-11-20T10:00:00]';;\n"
	"admin)         state=IDLE+DRAIN reason='maintenance [root@2026-11-20T10:00:00]';;\n"
	"admin-vigil)   state=IDLE+DRAIN reason='maintenance, not vigil: [root@2026-11-20T10:00:00]';;\n"
	"idle)          ;;\n"
	"missing)       echo \"Node $3 not found\" >&2; exit 1;;\n"
	"garbage)       echo 'no such thing here'; exit 0;;\n"
	"esac\n"
	"cat <<EOF\n"
	"NodeName=$3 Arch=x86_64 CoresPerSocket=16\n"
	"   CPUAlloc=0 CPUEfctv=32 CPUTot=32 CPULoad=0.01\n"
	"   AvailableFeatures=(null)\n"
	"   ActiveFeatures=(null)\n"
	"   Gres=gpu:8\n"
	"   NodeAddr=$3 NodeHostName=$3 Version=23.02.7\n"
	"   OS=Linux 5.14.0-362.8.1.el9_3.x86_64 #1 SMP PREEMPT_DYNAMIC Tue Nov 7 14:54:22 EST 2023\n"
	"   RealMemory=515000 AllocMem=0 FreeMem=500123 Sockets=2 Boards=1\n"
	"   State=$state ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A\n"
	"   Partitions=gpu\n"
	"   BootTime=2026-11-01T08:00:00 SlurmdStartTime=2026-11-01T08:01:00\n"
	"   LastBusyTime=2026-11-20T09:00:00 ResumeAfterTime=None\n"
	"   CfgTRES=cpu=32,mem=515000M,billing=32,gres/gpu=8\n"
	"   AllocTRES=\n"
	"   CapWatts=n/a\n"
	"   CurrentWatts=0 AveWatts=0\n"
	"   ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s\n"
	"EOF\n"
	"if [ -n \"$reason\" ]; then echo \"   Reason=$reason\"; fi\n"
	"echo '   Comment=(null)'\n";

struct fixture {
	char dir[PATH_MAX];
	char script[PATH_MAX + 16];
	char log[PATH_MAX + 16];
	char err[512];
};

static int
group_setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	FILE *fp;

	if (!f)
		return -1;
	if (make_scratch_dir(f->dir, sizeof(f->dir), "slurm") < 0)
		goto fail;
	snprintf(f->script, sizeof(f->script), "%s/scontrol", f->dir);
	snprintf(f->log, sizeof(f->log), "%s/argv.log", f->dir);
	fp = fopen(f->script, "w");
	if (!fp)
		goto fail;
	if (fputs(fake_scontrol, fp) < 0 || fclose(fp) != 0 || chmod(f->script, 0755) < 0)
		goto fail;
	if (setenv("FAKE_SCONTROL_LOG", f->log, 1) < 0)
		goto fail;
	*state = f;
	return 0;
fail:
	free(f);
	return -1;
}

static int
group_teardown(void **state)
{
	struct fixture *f = *state;
	int rc = 0;

	(void)unlink(f->log);
	if (unlink(f->script) < 0 || rmdir(f->dir) < 0)
		rc = -1;
	free(f);
	return rc;
}

/* Each test starts with an empty log and the fake as $VIGIL_SCONTROL. */
static int
setup(void **state)
{
	struct fixture *f = *state;

	if (unlink(f->log) < 0 && errno != ENOENT)
		return -1;
	f->err[0] = '\0';
	if (setenv("VIGIL_SCONTROL", f->script, 1) < 0)
		return -1;
	unsetenv("FAKE_SCONTROL_SHOW");
	unsetenv("FAKE_SCONTROL_UPDATE");
	return 0;
}

/* The fake's log: the argv of every call, or "" when it never ran. */
static const char *
read_log(struct fixture *f)
{
	static char buf[4096];
	FILE *fp = fopen(f->log, "r");
	size_t n;

	buf[0] = '\0';
	if (!fp)
		return buf;
	n = fread(buf, 1, sizeof(buf) - 1, fp);
	buf[n] = '\0';
	fclose(fp);
	return buf;
}

static void
test_drain_argv(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(slurm_drain("n1", "slot 3 missing", 5, f->err, sizeof(f->err)), 0);
	assert_string_equal(read_log(f),
	                    "update\nNodeName=n1\nState=DRAIN\nReason=vigil: slot 3 missing\n--\n");
}

static void
test_drain_reason_cleaned(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(slurm_drain("n1", "  slot 3\nmissing \"now\"\t\x01 ", 5,
	                             f->err, sizeof(f->err)), 0);
	assert_string_equal(read_log(f), "update\nNodeName=n1\nState=DRAIN\n"
	                                 "Reason=vigil: slot 3 missing 'now'\n--\n");
}

static void
test_drain_reason_capped(void **state)
{
	struct fixture *f = *state;
	char reason[600], *arg, *end;
	size_t len;

	/* 300 two-byte characters: a cut anywhere but between them splits one */
	for (size_t i = 0; i + 2 < sizeof(reason); i += 2)
		memcpy(reason + i, "\xc3\xa9", 2);  /* U+00E9 */
	reason[sizeof(reason) - 2] = '\0';
	assert_int_equal(slurm_drain("n1", reason, 5, f->err, sizeof(f->err)), 0);
	arg = strstr(read_log(f), "Reason=vigil: ");
	assert_non_null(arg);
	arg += strlen("Reason=");
	end = strchr(arg, '\n');
	assert_non_null(end);
	len = (size_t)(end - arg);
	assert_true(len <= 200);
	assert_true(len >= 190);
	/* "vigil: " is 7 bytes, then whole two-byte characters */
	assert_int_equal((len - 7) % 2, 0);
	assert_int_equal((unsigned char)end[-2], 0xc3);
}

static void
test_drain_empty_reason(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(slurm_drain("n1", NULL, 5, f->err, sizeof(f->err)), 0);
	assert_non_null(strstr(read_log(f), "\nReason=vigil: health check failed\n"));
}

static void
test_drain_bad_node(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(slurm_drain("", "x", 5, f->err, sizeof(f->err)), -EINVAL);
	assert_int_equal(slurm_drain("n1 State=RESUME", "x", 5, f->err, sizeof(f->err)),
	                 -EINVAL);
	assert_int_equal(slurm_undrain("n1\n", 5, f->err, sizeof(f->err)), -EINVAL);
	assert_non_null(strstr(f->err, "node name"));
	assert_null(strchr(f->err, '\n'));
	/* scontrol never ran */
	assert_string_equal(read_log(f), "");
}

static void
test_undrain_vigil(void **state)
{
	static const char *const modes[] = { "vigil", "vigil-drained", "vigil-mixed", "vigil-drng" };
	struct fixture *f = *state;

	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		assert_int_equal(setup(state), 0);
		setenv("FAKE_SCONTROL_SHOW", modes[i], 1);
		if (slurm_undrain("n7", 5, f->err, sizeof(f->err)) != 1)
			fail_msg("%s: not resumed: %s", modes[i], f->err);
		assert_string_equal(read_log(f), "show\nnode\nn7\n--\n"
		                                 "update\nNodeName=n7\nState=RESUME\n--\n");
	}
}

static void
test_undrain_leaves_others(void **state)
{
	/* an administrator's drain, one whose reason only mentions vigil,
	 * a node that is not drained, a down node with our reason */
	static const char *const modes[] = { "admin", "admin-vigil", "idle", "vigil-down" };
	struct fixture *f = *state;

	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		assert_int_equal(setup(state), 0);
		setenv("FAKE_SCONTROL_SHOW", modes[i], 1);
		if (slurm_undrain("n7", 5, f->err, sizeof(f->err)) != 0)
			fail_msg("%s: not left alone: %s", modes[i], f->err);
		assert_string_equal(read_log(f), "show\nnode\nn7\n--\n");
	}
}

static void
test_scontrol_fails(void **state)
{
	struct fixture *f = *state;

	setenv("FAKE_SCONTROL_UPDATE", "fail", 1);
	assert_int_equal(slurm_drain("n1", "x", 5, f->err, sizeof(f->err)), 1);
	assert_non_null(strstr(f->err, "slurm_update error: Invalid node name specified"));
	assert_null(strchr(f->err, '\n'));

	setenv("FAKE_SCONTROL_SHOW", "missing", 1);
	assert_int_equal(slurm_undrain("n9", 5, f->err, sizeof(f->err)), 1);
	assert_non_null(strstr(f->err, "Node n9 not found"));

	/* resume itself failing is reported too */
	setenv("FAKE_SCONTROL_SHOW", "vigil", 1);
	assert_int_equal(slurm_undrain("n9", 5, f->err, sizeof(f->err)), 1);
	assert_non_null(strstr(f->err, "Invalid node name specified"));
}

static void
test_unparsable_show(void **state)
{
	struct fixture *f = *state;

	setenv("FAKE_SCONTROL_SHOW", "garbage", 1);
	assert_int_equal(slurm_undrain("n1", 5, f->err, sizeof(f->err)), -EPROTO);
	assert_non_null(strstr(f->err, "State="));
}

static void
test_scontrol_hangs(void **state)
{
	struct fixture *f = *state;
	double t0 = now();

	setenv("FAKE_SCONTROL_UPDATE", "hang", 1);
	assert_int_equal(slurm_drain("n1", "x", 0.3, f->err, sizeof(f->err)), -ETIMEDOUT);
	assert_true(now() - t0 < 0.8);
	assert_non_null(strstr(f->err, "no answer"));
	reap_orphans();
}

static void
test_scontrol_missing(void **state)
{
	struct fixture *f = *state;

	setenv("VIGIL_SCONTROL", "/nonexistent/vigil/scontrol", 1);
	assert_int_equal(slurm_drain("n1", "x", 5, f->err, sizeof(f->err)), -ENOENT);
	assert_non_null(strstr(f->err, "No such file or directory"));
	assert_int_equal(slurm_undrain("n1", 5, f->err, sizeof(f->err)), -ENOENT);
}

static void
test_scontrol_from_path(void **state)
{
	struct fixture *f = *state;
	const char *old = getenv("PATH");
	char *saved = old ? strdup(old) : NULL;
	char path[2 * PATH_MAX];

	snprintf(path, sizeof(path), "%s:%s", f->dir, old ? old : "/usr/bin:/bin");
	unsetenv("VIGIL_SCONTROL");
	setenv("PATH", path, 1);
	assert_int_equal(slurm_drain("n2", "via PATH", 5, f->err, sizeof(f->err)), 0);
	if (saved)
		setenv("PATH", saved, 1);
	free(saved);
	assert_non_null(strstr(read_log(f), "NodeName=n2\n"));
}

static void
test_node_name(void **state)
{
	char buf[256], host[256], small[4];
	size_t n;

	(void)state;
	setenv("SLURMD_NODENAME", "gpu042", 1);
	assert_int_equal(slurm_node_name(buf, sizeof(buf)), 0);
	assert_string_equal(buf, "gpu042");
	assert_int_equal(slurm_node_name(small, sizeof(small)), -ENAMETOOLONG);

	unsetenv("SLURMD_NODENAME");
	assert_int_equal(gethostname(host, sizeof(host)), 0);
	host[sizeof(host) - 1] = '\0';
	n = strcspn(host, ".");
	assert_int_equal(slurm_node_name(buf, sizeof(buf)), 0);
	assert_int_equal(strlen(buf), n);
	assert_memory_equal(buf, host, n);
	assert_null(strchr(buf, '.'));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_drain_argv, setup),
		cmocka_unit_test_setup(test_drain_reason_cleaned, setup),
		cmocka_unit_test_setup(test_drain_reason_capped, setup),
		cmocka_unit_test_setup(test_drain_empty_reason, setup),
		cmocka_unit_test_setup(test_drain_bad_node, setup),
		cmocka_unit_test_setup(test_undrain_vigil, setup),
		cmocka_unit_test_setup(test_undrain_leaves_others, setup),
		cmocka_unit_test_setup(test_scontrol_fails, setup),
		cmocka_unit_test_setup(test_unparsable_show, setup),
		cmocka_unit_test_setup(test_scontrol_hangs, setup),
		cmocka_unit_test_setup(test_scontrol_missing, setup),
		cmocka_unit_test_setup(test_scontrol_from_path, setup),
		cmocka_unit_test(test_node_name),
	};

	(void)prctl(PR_SET_CHILD_SUBREAPER, 1);
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
