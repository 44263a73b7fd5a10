/*
 * test_slurm.c - drain/undrain against a fake scontrol, the job's end time
 * against a fake squeue, and the end-time parser.
 *
 * The fakes are shell scripts in a scratch directory: each appends its
 * arguments, one per line and then "--", to $FAKE_SCONTROL_LOG; scontrol
 * answers `show node` with the canned output named by $FAKE_SCONTROL_SHOW,
 * squeue prints $FAKE_SQUEUE_OUT (or fails, or hangs) and logs the
 * SLURM_TIME_FORMAT it was given.  With $FAKE_FDS set, scontrol also lists
 * its open descriptors there.  (Against the real Slurm 22.05:
 * tests/integration/slurm_*.sh.)
 */
#include "autoconf.h"

#include "../vigil_test.h"
#include "../proc.h"
#include "../scratch.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proc/slurm.h"

static const char fake_scontrol[] =
	"#!/bin/sh\n"
	"for a in \"$@\"; do printf '%s\\n' \"$a\"; done >> \"$FAKE_SCONTROL_LOG\"\n"
	"echo -- >> \"$FAKE_SCONTROL_LOG\"\n"
	"if [ -n \"$FAKE_FDS\" ]; then ls -l /proc/$$/fd/ >> \"$FAKE_FDS\"; fi\n"
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
	"admin-down)    state=DOWN reason='admin: replace DIMM [root@2026-11-20T10:00:00]';;\n"
	"admin-fail)    state=IDLE+FAIL reason='failing disk [root@2026-11-20T10:00:00]';;\n"
	"admin-empty)   state=DRAINED reason=;;\n"
	"vigil-same)    state=IDLE+DRAIN reason='vigil: slot 3 missing [root@2026-11-20T10:00:00]';;\n"
	"vigil-longer)  state=IDLE+DRAIN reason='vigil: slot 3 missing again [root@2026-11-20T10:00:00]';;\n"
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

static const char fake_squeue[] =
	"#!/bin/sh\n"
	"for a in \"$@\"; do printf '%s\\n' \"$a\"; done >> \"$FAKE_SCONTROL_LOG\"\n"
	"echo \"-- SLURM_TIME_FORMAT=$SLURM_TIME_FORMAT\" >> \"$FAKE_SCONTROL_LOG\"\n"
	"case \"$FAKE_SQUEUE\" in\n"
	"fail) echo 'slurm_load_jobs error: Invalid job id specified' >&2; exit 1;;\n"
	"hang) sleep 100;;\n"
	"warn) echo 'squeue: warning: something' >&2;;\n"
	"esac\n"
	"printf '%s\\n' \"$FAKE_SQUEUE_OUT\"\n";

struct fixture {
	char dir[PATH_MAX];
	char script[PATH_MAX + 16];
	char squeue[PATH_MAX + 16];
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
	snprintf(f->squeue, sizeof(f->squeue), "%s/squeue", f->dir);
	fp = fopen(f->script, "w");
	if (!fp)
		goto fail;
	if (fputs(fake_scontrol, fp) < 0 || fclose(fp) != 0 || chmod(f->script, 0755) < 0)
		goto fail;
	fp = fopen(f->squeue, "w");
	if (!fp)
		goto fail;
	if (fputs(fake_squeue, fp) < 0 || fclose(fp) != 0 || chmod(f->squeue, 0755) < 0)
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
	if (unlink(f->script) < 0 || unlink(f->squeue) < 0 || rmdir(f->dir) < 0)
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
	if (setenv("VIGIL_SCONTROL", f->script, 1) < 0 ||
	    setenv("VIGIL_SQUEUE", f->squeue, 1) < 0)
		return -1;
	unsetenv("FAKE_SCONTROL_SHOW");
	unsetenv("FAKE_SCONTROL_UPDATE");
	unsetenv("FAKE_SQUEUE");
	unsetenv("FAKE_SQUEUE_OUT");
	unsetenv("FAKE_FDS");
	unsetenv("SLURM_JOB_ID");
	unsetenv("SLURM_JOB_END_TIME");
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

#define SHOW_N1 "show\nnode\nn1\n--\n"

static void
test_drain_argv(void **state)
{
	struct fixture *f = *state;

	/* the node's state first, then the drain */
	assert_int_equal(slurm_drain("n1", "slot 3 missing", 5, f->err, sizeof(f->err)), 1);
	assert_string_equal(read_log(f), SHOW_N1
	                    "update\nNodeName=n1\nState=DRAIN\nReason=vigil: slot 3 missing\n--\n");
}

static void
test_drain_reason_cleaned(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(slurm_drain("n1", "  slot 3\nmissing \"now\"\t\x01 ", 5,
	                             f->err, sizeof(f->err)), 1);
	assert_string_equal(read_log(f), SHOW_N1 "update\nNodeName=n1\nState=DRAIN\n"
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
	assert_int_equal(slurm_drain("n1", reason, 5, f->err, sizeof(f->err)), 1);
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

	assert_int_equal(slurm_drain("n1", NULL, 5, f->err, sizeof(f->err)), 1);
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

/* A node someone else took out of service keeps their reason: drained,
 * down or failed by hand, an empty reason included. */
static void
test_drain_leaves_others(void **state)
{
	static const char *const modes[] = {
		"admin", "admin-vigil", "admin-down", "admin-fail", "admin-empty"
	};
	struct fixture *f = *state;

	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		assert_int_equal(setup(state), 0);
		setenv("FAKE_SCONTROL_SHOW", modes[i], 1);
		if (slurm_drain("n1", "nics: eth1 is down", 5, f->err, sizeof(f->err)) != 0)
			fail_msg("%s: not left alone: %s", modes[i], f->err);
		assert_string_equal(read_log(f), SHOW_N1);
		assert_non_null(strstr(f->err, "someone else's"));
	}
	/* and the administrator's reason is named */
	assert_int_equal(setup(state), 0);
	setenv("FAKE_SCONTROL_SHOW", "admin-down", 1);
	assert_int_equal(slurm_drain("n1", "x", 5, f->err, sizeof(f->err)), 0);
	assert_non_null(strstr(f->err, "admin: replace DIMM"));
}

/* vigil's own drain: left as it is for the same reason, replaced for
 * another (the node's problem changed); a node vigil had marked down
 * is drained. */
static void
test_drain_ours_again(void **state)
{
	struct fixture *f = *state;

	setenv("FAKE_SCONTROL_SHOW", "vigil-same", 1);
	assert_int_equal(slurm_drain("n1", "slot 3 missing", 5, f->err, sizeof(f->err)), 0);
	assert_string_equal(read_log(f), SHOW_N1);
	assert_non_null(strstr(f->err, "already"));

	assert_int_equal(setup(state), 0);
	setenv("FAKE_SCONTROL_SHOW", "vigil-longer", 1);
	assert_int_equal(slurm_drain("n1", "slot 3 missing", 5, f->err, sizeof(f->err)), 1);
	assert_string_equal(read_log(f), SHOW_N1
	                    "update\nNodeName=n1\nState=DRAIN\nReason=vigil: slot 3 missing\n--\n");

	assert_int_equal(setup(state), 0);
	setenv("FAKE_SCONTROL_SHOW", "vigil-down", 1);
	assert_int_equal(slurm_drain("n1", "x", 5, f->err, sizeof(f->err)), 1);
	assert_non_null(strstr(read_log(f), "State=DRAIN"));
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
	 * one without a reason, a node that is not drained, a down node
	 * with our reason */
	static const char *const modes[] = {
		"admin", "admin-vigil", "admin-empty", "idle", "vigil-down"
	};
	struct fixture *f = *state;

	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		assert_int_equal(setup(state), 0);
		setenv("FAKE_SCONTROL_SHOW", modes[i], 1);
		if (slurm_undrain("n7", 5, f->err, sizeof(f->err)) != 0)
			fail_msg("%s: not left alone: %s", modes[i], f->err);
		assert_string_equal(read_log(f), "show\nnode\nn7\n--\n");
		assert_true(f->err[0] != '\0');
	}
}

static void
test_scontrol_fails(void **state)
{
	struct fixture *f = *state;

	setenv("FAKE_SCONTROL_UPDATE", "fail", 1);
	assert_int_equal(slurm_drain("n1", "x", 5, f->err, sizeof(f->err)), -EIO);
	assert_non_null(strstr(f->err, "slurm_update error: Invalid node name specified"));
	assert_null(strchr(f->err, '\n'));

	/* the state cannot be read: nothing is changed */
	assert_int_equal(setup(state), 0);
	setenv("FAKE_SCONTROL_SHOW", "missing", 1);
	assert_int_equal(slurm_drain("n9", "x", 5, f->err, sizeof(f->err)), -EIO);
	assert_non_null(strstr(f->err, "Node n9 not found"));
	assert_string_equal(read_log(f), "show\nnode\nn9\n--\n");
	assert_int_equal(slurm_undrain("n9", 5, f->err, sizeof(f->err)), -EIO);
	assert_non_null(strstr(f->err, "Node n9 not found"));

	/* resume itself failing is reported too */
	setenv("FAKE_SCONTROL_UPDATE", "fail", 1);
	setenv("FAKE_SCONTROL_SHOW", "vigil", 1);
	assert_int_equal(slurm_undrain("n9", 5, f->err, sizeof(f->err)), -EIO);
	assert_non_null(strstr(f->err, "Invalid node name specified"));
}

static void
test_unparsable_show(void **state)
{
	struct fixture *f = *state;

	setenv("FAKE_SCONTROL_SHOW", "garbage", 1);
	assert_int_equal(slurm_undrain("n1", 5, f->err, sizeof(f->err)), -EPROTO);
	assert_non_null(strstr(f->err, "State="));
	assert_int_equal(slurm_drain("n1", "x", 5, f->err, sizeof(f->err)), -EPROTO);
	assert_null(strstr(read_log(f), "update"));
}

static void
test_scontrol_hangs(void **state)
{
	struct fixture *f = *state;
	double t0 = now();

	setenv("FAKE_SCONTROL_UPDATE", "hang", 1);
	assert_int_equal(slurm_drain("n1", "x", 0.3, f->err, sizeof(f->err)), -ETIMEDOUT);
	assert_true(now() - t0 < 1.0);
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
	assert_int_equal(slurm_drain("n2", "via PATH", 5, f->err, sizeof(f->err)), 1);
	if (saved)
		setenv("PATH", saved, 1);
	free(saved);
	assert_non_null(strstr(read_log(f), "NodeName=n2\n"));
}

/*
 * scontrol gets none of the agent's descriptors: under mpirun the agent
 * holds MPI's sockets, opened without close-on-exec, and a scontrol (or
 * anything it leaves behind) holding them would keep them open.
 */
static void
test_no_descriptor_leak(void **state)
{
	struct fixture *f = *state;
	char fds[PATH_MAX + 16], marker[PATH_MAX + 16], *list;
	int fd, sv[2];

	snprintf(fds, sizeof(fds), "%s/fds", f->dir);
	snprintf(marker, sizeof(marker), "%s/leak-marker", f->dir);
	fd = open(marker, O_RDWR | O_CREAT, 0600);  /* no O_CLOEXEC */
	assert_true(fd > 2);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	setenv("FAKE_FDS", fds, 1);
	assert_int_equal(slurm_drain("n1", "x", 5, f->err, sizeof(f->err)), 1);
	list = slurp(fds, 65536, NULL);
	/* the list is there, from both calls (show and update) ... */
	assert_non_null(strstr(list, " 0 -> "));
	assert_non_null(strstr(strstr(list, " 0 -> ") + 1, " 0 -> "));
	/* ... without the file or the sockets */
	if (strstr(list, "leak-marker") || strstr(list, "socket:"))
		fail_msg("a descriptor reached scontrol:\n%s", list);
	free(list);
	close(fd);
	close(sv[0]);
	close(sv[1]);
	unlink(marker);
	unlink(fds);
}

/* ---- the job's end time ---- */

static void
test_end_parse_epoch(void **state)
{
	char err[256];
	time_t now = 1795168800, end = 0;  /* 2026-11-20T10:00:00Z */

	(void)state;
	assert_int_equal(slurm_end_time_parse("1795172400", now, &end, err, sizeof(err)), 1);
	assert_int_equal(end, 1795172400);
	assert_int_equal(slurm_end_time_parse(" 1795172400\n", now, &end, err, sizeof(err)), 1);
	assert_int_equal(end, 1795172400);
	/* a little past: the limit is passing, that is a real end time */
	assert_int_equal(slurm_end_time_parse("1795168700", now, &end, err, sizeof(err)), 1);
	assert_int_equal(end, 1795168700);
	/* nine years ahead is believed */
	assert_int_equal(slurm_end_time_parse("2079000000", now, &end, err, sizeof(err)), 1);
}

static void
test_end_parse_none(void **state)
{
	static const char *const none[] = {
		"Unknown", "N/A", "NONE", "None", "UNLIMITED", "INVALID", "unknown", " NONE \n"
	};
	char err[256];
	time_t end = 42;

	(void)state;
	for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++) {
		if (slurm_end_time_parse(none[i], 1795168800, &end, err, sizeof(err)) != 0)
			fail_msg("\"%s\" is no end time", none[i]);
	}
	assert_int_equal(end, 42);  /* untouched */
}

/* Absurd values are refused with a reason, not taken as "expire now". */
static void
test_end_parse_absurd(void **state)
{
	static const char *const absurd[] = {
		"99999999999999999999",        /* overflows */
		"9223372036854775807",         /* fits, but billions of years ahead */
		"0",                           /* 1970 */
		"1795082300",                  /* a day and 100 s ago */
		"2150000000",                  /* eleven years ahead */
	};
	char err[256];
	time_t end = 42;

	(void)state;
	for (size_t i = 0; i < sizeof(absurd) / sizeof(absurd[0]); i++) {
		err[0] = '\0';
		if (slurm_end_time_parse(absurd[i], 1795168800, &end, err, sizeof(err)) != -ERANGE)
			fail_msg("\"%s\" not refused", absurd[i]);
		assert_non_null(strstr(err, "not believed"));
	}
	assert_int_equal(end, 42);
	slurm_end_time_parse("99999999999999999999", 1795168800, &end, err, sizeof(err));
	assert_non_null(strstr(err, "99999999999999999999"));
	assert_non_null(strstr(err, "out of range"));
	slurm_end_time_parse("1795082300", 1795168800, &end, err, sizeof(err));
	assert_non_null(strstr(err, "in the past"));
	slurm_end_time_parse("2150000000", 1795168800, &end, err, sizeof(err));
	assert_non_null(strstr(err, "ten years"));
}

static void
test_end_parse_garbage(void **state)
{
	static const char *const bad[] = {
		"", "  ", "abc", "-5", "1e9", "0x10", "12:00", "Tomorr 12:00", "1795172400s",
		"2026-13-01T00:00:00", "2026-11-20T10:00:00Z", "2026-11-20 10:00:00",
		"2026-11-20T10:00", "2026-11-20T24:00:00",
	};
	char err[256];
	time_t end = 42;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		if (slurm_end_time_parse(bad[i], 1795168800, &end, err, sizeof(err)) != -EINVAL)
			fail_msg("\"%s\" not refused", bad[i]);
		assert_true(err[0] != '\0');
		assert_null(strchr(err, '\n'));
	}
	assert_int_equal(end, 42);
}

/* Slurm's standard format is local time, summer time included. */
static void
test_end_parse_local(void **state)
{
	const char *old = getenv("TZ");
	char *saved = old ? strdup(old) : NULL;
	char err[256];
	time_t end = 0;

	(void)state;
	setenv("TZ", "UTC0", 1);
	tzset();
	assert_int_equal(slurm_end_time_parse("2026-11-20T10:00:00", 1795168800, &end,
	                                      err, sizeof(err)), 1);
	assert_int_equal(end, 1795168800);
	/* Central Europe: +1 in November, +2 in July */
	setenv("TZ", "CET-1CEST,M3.5.0,M10.5.0/3", 1);
	tzset();
	assert_int_equal(slurm_end_time_parse("2026-11-20T11:00:00", 1795168800, &end,
	                                      err, sizeof(err)), 1);
	assert_int_equal(end, 1795168800);
	assert_int_equal(slurm_end_time_parse("2026-07-01T12:00:00", 1782900000, &end,
	                                      err, sizeof(err)), 1);
	assert_int_equal(end, 1782900000);
	if (saved)
		setenv("TZ", saved, 1);
	else
		unsetenv("TZ");
	tzset();
	free(saved);
}

static void
test_job_end_time_argv(void **state)
{
	struct fixture *f = *state;
	time_t end = 0, want = time(NULL) + 3600;
	char out[32];

	snprintf(out, sizeof(out), "%lld", (long long)want);
	setenv("FAKE_SQUEUE_OUT", out, 1);
	assert_int_equal(slurm_job_end_time("1234", 5, &end, f->err, sizeof(f->err)), 1);
	assert_int_equal(end, want);
	/* seconds since 1970 asked for, whatever the caller's format */
	assert_string_equal(read_log(f), "-h\n-j\n1234\n-o\n%e\n-- SLURM_TIME_FORMAT=%s\n");

	/* a warning before the answer */
	setenv("FAKE_SQUEUE", "warn", 1);
	assert_int_equal(slurm_job_end_time("1234", 5, &end, f->err, sizeof(f->err)), 1);
	assert_int_equal(end, want);

	setenv("FAKE_SQUEUE_OUT", "NONE", 1);
	assert_int_equal(slurm_job_end_time("1234", 5, &end, f->err, sizeof(f->err)), 0);
}

/* The allocation's start and when it became eligible: squeue's StartTime
 * and EligibleTime as seconds since 1970; a start that is not a time, one
 * in the future or a job id that is no number: refused; an eligible time
 * that is none, or after the start: 0. */
static void
test_job_start_time(void **state)
{
	struct fixture *f = *state;
	time_t start = 0, eligible = 1;

	setenv("FAKE_SQUEUE_OUT", "1782900000          1782899880          ", 1);
	assert_int_equal(slurm_job_start_time("1234", 5, &start, &eligible, f->err,
	                                      sizeof(f->err)), 0);
	assert_int_equal(start, 1782900000);
	assert_int_equal(eligible, 1782899880);
	assert_string_equal(read_log(f),
	                    "-h\n-j\n1234\n-O\nStartTime,EligibleTime\n-- SLURM_TIME_FORMAT=%s\n");
	setenv("FAKE_SQUEUE_OUT", "1782900000          Unknown", 1);
	assert_int_equal(slurm_job_start_time("1234", 5, &start, &eligible, f->err,
	                                      sizeof(f->err)), 0);
	assert_int_equal(eligible, 0);
	setenv("FAKE_SQUEUE_OUT", "1782900000 1782900001", 1);
	eligible = 1;
	assert_int_equal(slurm_job_start_time("1234", 5, &start, &eligible, f->err,
	                                      sizeof(f->err)), 0);
	assert_int_equal(eligible, 0);
	setenv("FAKE_SQUEUE_OUT", "1782900000", 1);
	eligible = 1;
	assert_int_equal(slurm_job_start_time("1234", 5, &start, &eligible, f->err,
	                                      sizeof(f->err)), 0);
	assert_int_equal(eligible, 0);
	setenv("FAKE_SQUEUE_OUT", "N/A                 1782899880", 1);
	assert_int_equal(slurm_job_start_time("1234", 5, &start, &eligible, f->err,
	                                      sizeof(f->err)), -EPROTO);
	assert_non_null(strstr(f->err, "N/A"));
	setenv("FAKE_SQUEUE_OUT", "1782900000x", 1);
	assert_int_equal(slurm_job_start_time("1234", 5, &start, &eligible, f->err,
	                                      sizeof(f->err)), -EPROTO);
	setenv("FAKE_SQUEUE_OUT", "99999999999", 1);
	assert_int_equal(slurm_job_start_time("1234", 5, &start, &eligible, f->err,
	                                      sizeof(f->err)), -EPROTO);
	assert_int_equal(slurm_job_start_time("1 2", 5, &start, &eligible, f->err,
	                                      sizeof(f->err)), -EINVAL);
	assert_int_equal(start, 1782900000);
}

static void
test_job_end_time_fails(void **state)
{
	struct fixture *f = *state;
	time_t end = 42;
	double t0;

	setenv("FAKE_SQUEUE", "fail", 1);
	assert_int_equal(slurm_job_end_time("1234", 5, &end, f->err, sizeof(f->err)), -EIO);
	assert_non_null(strstr(f->err, "Invalid job id specified"));

	assert_int_equal(setup(state), 0);
	setenv("FAKE_SQUEUE_OUT", "", 1);
	assert_int_equal(slurm_job_end_time("1234", 5, &end, f->err, sizeof(f->err)), -EPROTO);
	setenv("FAKE_SQUEUE_OUT", "Tomorr 12:00", 1);
	assert_int_equal(slurm_job_end_time("1234", 5, &end, f->err, sizeof(f->err)), -EPROTO);
	assert_non_null(strstr(f->err, "Tomorr 12:00"));
	setenv("FAKE_SQUEUE_OUT", "99999999999999999999", 1);
	assert_int_equal(slurm_job_end_time("1234", 5, &end, f->err, sizeof(f->err)), -ERANGE);

	/* a job id is digits: nothing runs otherwise */
	assert_int_equal(setup(state), 0);
	assert_int_equal(slurm_job_end_time("12 -u root", 5, &end, f->err, sizeof(f->err)), -EINVAL);
	assert_int_equal(slurm_job_end_time("", 5, &end, f->err, sizeof(f->err)), -EINVAL);
	assert_int_equal(slurm_job_end_time(NULL, 5, &end, f->err, sizeof(f->err)), -EINVAL);
	assert_string_equal(read_log(f), "");

	/* bounded: a slurmctld that does not answer costs the timeout */
	setenv("FAKE_SQUEUE", "hang", 1);
	t0 = now();
	assert_int_equal(slurm_job_end_time("1234", 0.3, &end, f->err, sizeof(f->err)), -ETIMEDOUT);
	assert_true(now() - t0 < 1.0);
	assert_non_null(strstr(f->err, "no answer"));
	reap_orphans();
	assert_int_equal(end, 42);
}

static void
test_end_time_sources(void **state)
{
	struct fixture *f = *state;
	time_t end = 0, want = time(NULL) + 3600, env = time(NULL) + 600;
	const char *src = "x";
	char out[32], envs[32];

	snprintf(out, sizeof(out), "%lld", (long long)want);
	snprintf(envs, sizeof(envs), "%lld", (long long)env);

	/* no Slurm job */
	assert_int_equal(slurm_end_time(5, &end, &src, f->err, sizeof(f->err)), -ENOENT);
	assert_null(src);
	assert_non_null(strstr(f->err, "not a Slurm job"));

	/* Slurm's answer first: it follows `scontrol update TimeLimit=` */
	setenv("SLURM_JOB_ID", "77", 1);
	setenv("SLURM_JOB_END_TIME", envs, 1);
	setenv("FAKE_SQUEUE_OUT", out, 1);
	assert_int_equal(slurm_end_time(5, &end, &src, f->err, sizeof(f->err)), 1);
	assert_int_equal(end, want);
	assert_string_equal(src, "squeue");

	/* Slurm does not answer: the variable */
	setenv("FAKE_SQUEUE", "fail", 1);
	assert_int_equal(slurm_end_time(5, &end, &src, f->err, sizeof(f->err)), 1);
	assert_int_equal(end, env);
	assert_string_equal(src, "SLURM_JOB_END_TIME");

	/* neither: both reasons */
	setenv("SLURM_JOB_END_TIME", "99999999999999999999", 1);
	assert_true(slurm_end_time(5, &end, &src, f->err, sizeof(f->err)) < 0);
	assert_null(src);
	assert_non_null(strstr(f->err, "Invalid job id specified"));
	assert_non_null(strstr(f->err, "SLURM_JOB_END_TIME: end time 99999999999999999999"));

	/* the variable alone, absurd: refused, not "expire now" */
	unsetenv("SLURM_JOB_ID");
	end = 42;
	assert_int_equal(slurm_end_time(5, &end, &src, f->err, sizeof(f->err)), -ERANGE);
	assert_int_equal(end, 42);
	/* the variable alone, good */
	setenv("SLURM_JOB_END_TIME", envs, 1);
	assert_int_equal(slurm_end_time(5, &end, &src, f->err, sizeof(f->err)), 1);
	assert_int_equal(end, env);

	/* a job without a limit */
	setenv("SLURM_JOB_ID", "77", 1);
	unsetenv("FAKE_SQUEUE");
	setenv("FAKE_SQUEUE_OUT", "NONE", 1);
	assert_int_equal(slurm_end_time(5, &end, &src, f->err, sizeof(f->err)), 0);
	assert_string_equal(src, "squeue");
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

/* What squeue shows while Slurm ends a job, as Slurm 22.05 printed it. */
static void
test_cancel_parse(void **state)
{
	(void)state;
	/* scancel: COMPLETING (the flag hides CANCELLED), nothing else */
	assert_int_equal(slurm_cancel_parse("COMPLETING|0|N/A|None", 0), 1);
	assert_int_equal(slurm_cancel_parse("COMPLETING|2|N/A|None\n", 2), 1);
	assert_int_equal(slurm_cancel_parse("CANCELLED|0|N/A|None", 0), 1);
	/* the time limit, a failed node, a requeue, preemption: not a cancel */
	assert_int_equal(slurm_cancel_parse("COMPLETING|0|N/A|TimeLimit", 0), 0);
	assert_int_equal(slurm_cancel_parse("COMPLETING|0|N/A|NodeDown", 0), 0);
	assert_int_equal(slurm_cancel_parse("COMPLETING|1|N/A|None", 0), 0);
	assert_int_equal(slurm_cancel_parse("COMPLETING|0|1795827921|None", 0), 0);
	assert_int_equal(slurm_cancel_parse("TIMEOUT|0|N/A|TimeLimit", 0), 0);
	assert_int_equal(slurm_cancel_parse("PREEMPTED|0|N/A|None", 0), 0);
	/* a plain SIGTERM (scancel --signal=TERM): the job runs on */
	assert_int_equal(slurm_cancel_parse("RUNNING|0|N/A|None", 0), 0);
	/* a reason with bars and spaces stays the last field */
	assert_int_equal(slurm_cancel_parse("COMPLETING|0|N/A|a | b", 0), 0);
	/* not squeue's line */
	assert_int_equal(slurm_cancel_parse("COMPLETING", 0), -EINVAL);
	assert_int_equal(slurm_cancel_parse("COMPLETING|x|N/A|None", 0), -EINVAL);
	assert_int_equal(slurm_cancel_parse("", 0), -EINVAL);
	assert_int_equal(slurm_cancel_parse(NULL, 0), -EINVAL);
}

static void
test_cancelled(void **state)
{
	struct fixture *f = *state;

	unsetenv("SLURM_JOB_ID");
	assert_int_equal(slurm_cancelled(5, f->err, sizeof(f->err)), -ENOENT);
	assert_string_equal(read_log(f), "");

	setenv("SLURM_JOB_ID", "77", 1);
	setenv("SLURM_RESTART_COUNT", "1", 1);
	setenv("FAKE_SQUEUE_OUT", "COMPLETING|1|N/A|None", 1);
	assert_int_equal(slurm_cancelled(5, f->err, sizeof(f->err)), 1);
	assert_string_equal(read_log(f), "-h\n-j\n77\n-O\n"
	                    "State:0|,RestartCnt:0|,PreemptTime:0|,Reason:0\n"
	                    "-- SLURM_TIME_FORMAT=%s\n");
	/* requeued by someone else since this run began */
	setenv("FAKE_SQUEUE_OUT", "COMPLETING|2|N/A|None", 1);
	assert_int_equal(slurm_cancelled(5, f->err, sizeof(f->err)), 0);
	setenv("FAKE_SQUEUE_OUT", "garbage", 1);
	assert_int_equal(slurm_cancelled(5, f->err, sizeof(f->err)), -EPROTO);
	assert_non_null(strstr(f->err, "garbage"));
	setenv("FAKE_SQUEUE", "fail", 1);
	assert_int_equal(slurm_cancelled(5, f->err, sizeof(f->err)), -EIO);
	setenv("SLURM_RESTART_COUNT", "-3", 1);
	assert_int_equal(slurm_cancelled(5, f->err, sizeof(f->err)), -EINVAL);
	unsetenv("SLURM_RESTART_COUNT");
	unsetenv("SLURM_JOB_ID");
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
		cmocka_unit_test_setup(test_drain_leaves_others, setup),
		cmocka_unit_test_setup(test_drain_ours_again, setup),
		cmocka_unit_test_setup(test_undrain_vigil, setup),
		cmocka_unit_test_setup(test_undrain_leaves_others, setup),
		cmocka_unit_test_setup(test_scontrol_fails, setup),
		cmocka_unit_test_setup(test_unparsable_show, setup),
		cmocka_unit_test_setup(test_scontrol_hangs, setup),
		cmocka_unit_test_setup(test_scontrol_missing, setup),
		cmocka_unit_test_setup(test_scontrol_from_path, setup),
		cmocka_unit_test_setup(test_no_descriptor_leak, setup),
		cmocka_unit_test(test_node_name),
		cmocka_unit_test(test_end_parse_epoch),
		cmocka_unit_test(test_end_parse_none),
		cmocka_unit_test(test_end_parse_absurd),
		cmocka_unit_test(test_end_parse_garbage),
		cmocka_unit_test(test_end_parse_local),
		cmocka_unit_test_setup(test_job_end_time_argv, setup),
		cmocka_unit_test_setup(test_job_end_time_fails, setup),
		cmocka_unit_test_setup(test_job_start_time, setup),
		cmocka_unit_test_setup(test_end_time_sources, setup),
		cmocka_unit_test(test_cancel_parse),
		cmocka_unit_test_setup(test_cancelled, setup),
	};

	(void)prctl(PR_SET_CHILD_SUBREAPER, 1);
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
