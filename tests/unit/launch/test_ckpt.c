/*
 * test_ckpt.c - the evidence of a saved checkpoint: the spec, the output
 * matcher, the file watch and the verdict.
 */
#include "autoconf.h"

#include "../vigil_test.h"
#include "../scratch.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "launch/ckpt.h"

static void
test_spec(void **state)
{
	static const char *const bad[] = { "file:", "output:", "saved", "FILE:/x", "output:(" };
	struct ckpt_confirm *c = NULL;
	char err[256];

	(void)state;
	assert_int_equal(ckpt_confirm_new(NULL, &c, err, sizeof(err)), 0);
	ckpt_confirm_free(c);
	assert_int_equal(ckpt_confirm_new("", &c, err, sizeof(err)), 0);
	ckpt_confirm_free(c);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		assert_int_equal(ckpt_confirm_new(bad[i], &c, err, sizeof(err)), -EINVAL);
		assert_null(c);
		assert_non_null(strstr(err, "--ckpt-confirm"));
	}
	assert_non_null(strstr(err, "not a regular expression"));
	ckpt_confirm_free(NULL);
}

static void
test_output(void **state)
{
	struct ckpt_confirm *c;
	char err[256], why[256];
	const char *line = "checkpoint saved at iteration 42";

	(void)state;
	assert_int_equal(ckpt_confirm_new("output:^checkpoint saved at iteration [0-9]+$", &c, err,
	                                  sizeof(err)), 0);
	/* before the signal, nothing counts */
	assert_false(ckpt_confirm_line(c, line, strlen(line)));
	ckpt_confirm_start(c);
	assert_false(ckpt_confirm_line(c, "this iteration hardware time is 1.0 and e2e time is 2 ms.", 55));
	assert_false(ckpt_confirm_line(c, "checkpoint saved at iteration", 29));
	/* the length counts, not a NUL */
	assert_false(ckpt_confirm_line(c, line, 20));
	assert_true(ckpt_confirm_line(c, line, strlen(line)));
	assert_true(ckpt_confirmed(c));
	/* once confirmed, it stays, whatever the exit */
	assert_true(ckpt_confirm_verdict(c, true, W_EXITCODE(0, SIGKILL), SIGUSR1, why, sizeof(why)));
	assert_string_equal(why, "the training printed the save line");
	/* a new signal wants new evidence */
	ckpt_confirm_start(c);
	assert_false(ckpt_confirmed(c));
	assert_false(ckpt_confirm_verdict(c, true, 0, SIGUSR1, why, sizeof(why)));
	assert_non_null(strstr(why, "no output line matched"));
	ckpt_confirm_free(c);
}

static void
test_file(void **state)
{
	struct ckpt_confirm *c;
	char dir[256], path[300], spec[310], err[256], why[512];
	FILE *f;

	(void)state;
	assert_int_equal(make_scratch_dir(dir, sizeof(dir), "ckpt"), 0);
	snprintf(path, sizeof(path), "%s/ckpt.pt", dir);
	snprintf(spec, sizeof(spec), "file:%s", path);
	assert_int_equal(ckpt_confirm_new(spec, &c, err, sizeof(err)), 0);

	/* absent at the signal, then written: a save */
	ckpt_confirm_start(c);
	assert_false(ckpt_confirm_poll(c));
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("v1", f);
	fclose(f);
	assert_true(ckpt_confirm_poll(c));

	/* there at the signal and untouched: no save, whatever the exit */
	ckpt_confirm_start(c);
	assert_false(ckpt_confirm_poll(c));
	assert_false(ckpt_confirm_verdict(c, true, 0, SIGUSR1, why, sizeof(why)));
	assert_non_null(strstr(why, "did not change after the checkpoint signal"));

	/* replaced by rename (a new inode), as torch.save to a temporary
	 * file and os.replace() do: seen even within one clock tick */
	ckpt_confirm_start(c);
	{
		char tmp[320];

		snprintf(tmp, sizeof(tmp), "%s.tmp", path);
		f = fopen(tmp, "w");
		assert_non_null(f);
		fputs("v2", f);
		fclose(f);
		assert_int_equal(rename(tmp, path), 0);
	}
	assert_true(ckpt_confirm_verdict(c, false, 0, SIGUSR1, why, sizeof(why)));
	assert_string_equal(why, "the checkpoint file changed");
	ckpt_confirm_free(c);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(rmdir(dir), 0);
}

/* Without a spec the exit is the evidence. */
static void
test_exit(void **state)
{
	struct ckpt_confirm *c;
	char err[256], why[256];

	(void)state;
	assert_int_equal(ckpt_confirm_new(NULL, &c, err, sizeof(err)), 0);
	assert_false(ckpt_confirm_verdict(c, true, W_EXITCODE(0, 0), SIGUSR1, why, sizeof(why)));
	assert_string_equal(why, "no checkpoint signal was sent");
	ckpt_confirm_start(c);
	assert_true(ckpt_confirm_verdict(c, true, W_EXITCODE(0, 0), SIGUSR1, why, sizeof(why)));
	assert_string_equal(why, "exit status 0 after the checkpoint signal");
	ckpt_confirm_start(c);
	assert_false(ckpt_confirm_verdict(c, true, W_EXITCODE(0, SIGUSR1), SIGUSR1, why, sizeof(why)));
	assert_string_equal(why, "died of SIGUSR1: no handler for the checkpoint signal");
	assert_false(ckpt_confirm_verdict(c, true, W_EXITCODE(0, SIGKILL), SIGUSR1, why, sizeof(why)));
	assert_string_equal(why, "died of SIGKILL");
	assert_false(ckpt_confirm_verdict(c, true, W_EXITCODE(3, 0), SIGUSR1, why, sizeof(why)));
	assert_string_equal(why, "exit status 3 after the checkpoint signal");
	assert_false(ckpt_confirm_verdict(c, false, 0, SIGUSR1, why, sizeof(why)));
	assert_string_equal(why, "the training did not exit within the grace period");
	/* output lines mean nothing here */
	assert_false(ckpt_confirm_line(c, "checkpoint saved", 16));
	assert_false(ckpt_confirm_poll(c));
	ckpt_confirm_free(c);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spec),
		cmocka_unit_test(test_output),
		cmocka_unit_test(test_file),
		cmocka_unit_test(test_exit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
