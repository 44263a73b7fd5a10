/*
 * test_node.c - one node's side of `vigil run`, driven through its
 * node_ops with a fake clock: a small real training (/bin/sh) runs, the
 * messages the node sends and the lines it hands out are recorded, its
 * stdout and stderr go to pipes read back here, and every timer (the
 * grace, the KILL, a line's wait) moves with the clock, never by sleep.
 */
#include "autoconf.h"

#include "../vigil_test.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "agent/node.h"
#include "comm/msg.h"
#include "conf/config.h"
#include "conf/run_opts.h"
#include "launch/stream.h"
#include "lib/log.h"
#include "lib/loop.h"

#include "../proc.h"

#define MAXSENT 32
#define MAXLINES 8
#define CAPTURE (64u << 10)
#define TURNS 300           /* loop turns of at most 100 ms: 30 s for a real child */
#define MS 1000ull          /* us */

/*
 * A training that waits for signals: dash loses a trapped signal that
 * comes while it forks (vfork) a command, so once it has said it is
 * ready it forks nothing more.  It waits on a sleep that ignores the
 * signals and holds none of its pipes (the group's KILL ends it).
 */
#define WAITS_BEGIN "trap '' USR1 USR2 TERM; sleep 1000 >/dev/null 2>&1 & trap - USR1 USR2 TERM; "
#define WAITS_END " while :; do wait; done"

struct fixture {
	struct loop *l;
	uint64_t now_us;        /* the fake clock */
	struct run_opts ro;
	struct config cfg;
	char *argv[4];
	struct node *n;
	sigset_t oldmask;
	int sfd;                /* SIGCHLD, read as the agent reads it */
	int saved_out, saved_err;   /* our own stdout and stderr, put back at the end */
	int out_r, err_r;       /* the read ends of the pipes the node writes to */
	char out[CAPTURE];      /* what the node passed on to its stdout */
	size_t nout;
	char err[CAPTURE];      /* to its stderr: the training's, and the log's */
	size_t nerr;
	enum msg_kind kinds[MAXSENT];
	char *texts[MAXSENT];
	int nsent;
	char lines[MAXLINES][128];  /* ops->line */
	int nlines;
};

static uint64_t
fake_clock(void *arg)
{
	return ((struct fixture *)arg)->now_us;
}

static int
rec_send(void *arg, enum msg_kind kind, const char *text)
{
	struct fixture *fx = arg;

	if (fx->nsent >= MAXSENT)
		return -ENOSPC;
	fx->kinds[fx->nsent] = kind;
	fx->texts[fx->nsent] = strdup(text);
	fx->nsent++;
	return 0;
}

static void
rec_line(void *arg, const char *line, size_t len)
{
	struct fixture *fx = arg;

	if (fx->nlines < MAXLINES)
		snprintf(fx->lines[fx->nlines++], sizeof(fx->lines[0]), "%.*s", (int)len, line);
}

static void
on_sigchld(struct loop *l, int fd, short revents, void *arg)
{
	struct fixture *fx = arg;
	struct signalfd_siginfo si;

	(void)l;
	(void)revents;
	while (read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si))
		;
	if (fx->n)
		node_signal(fx->n, SIGCHLD);
}

/* Read back what the node wrote to its stdout and stderr so far. */
static void
capture(struct fixture *fx)
{
	ssize_t got;

	while (fx->nout < CAPTURE - 1 &&
	       (got = read(fx->out_r, fx->out + fx->nout, CAPTURE - 1 - fx->nout)) > 0)
		fx->nout += (size_t)got;
	fx->out[fx->nout] = '\0';
	while (fx->nerr < CAPTURE - 1 &&
	       (got = read(fx->err_r, fx->err + fx->nerr, CAPTURE - 1 - fx->nerr)) > 0)
		fx->nerr += (size_t)got;
	fx->err[fx->nerr] = '\0';
}

/* The node's stdout and stderr become pipes read back by capture(). */
static int
redirect(struct fixture *fx)
{
	int out[2], err[2];

	fflush(stdout);
	fflush(stderr);
	fx->saved_out = dup(STDOUT_FILENO);
	fx->saved_err = dup(STDERR_FILENO);
	if (fx->saved_out < 0 || fx->saved_err < 0 || pipe2(out, O_CLOEXEC) < 0 ||
	    pipe2(err, O_CLOEXEC) < 0)
		return -1;
	if (dup2(out[1], STDOUT_FILENO) < 0 || dup2(err[1], STDERR_FILENO) < 0)
		return -1;
	close(out[1]);
	close(err[1]);
	fx->out_r = out[0];
	fx->err_r = err[0];
	if (fcntl(fx->out_r, F_SETFL, O_NONBLOCK) < 0 || fcntl(fx->err_r, F_SETFL, O_NONBLOCK) < 0)
		return -1;
	return 0;
}

static int
setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));
	sigset_t chld;

	if (!fx)
		return -1;
	*state = fx;
	fx->sfd = fx->out_r = fx->err_r = fx->saved_out = fx->saved_err = -1;
	fx->now_us = 1000 * MS;
	fx->l = loop_new();
	if (!fx->l)
		return -1;
	loop_set_clock(fx->l, fake_clock, fx);
	run_opts_init(&fx->ro);
	config_init(&fx->cfg);
	fx->ro.mode = MODE_SINGLE;
	fx->ro.grace_s = 2;
	fx->ro.inspect_s = 0;
	fx->ro.cmd = fx->argv;
	/* the training gets pipes, not a pseudo-terminal */
	setenv("VIGIL_PTY", "0", 1);
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	if (sigprocmask(SIG_BLOCK, &chld, &fx->oldmask) < 0)
		return -1;
	fx->sfd = signalfd(-1, &chld, SFD_NONBLOCK | SFD_CLOEXEC);
	if (fx->sfd < 0 || loop_add_fd(fx->l, fx->sfd, POLLIN, on_sigchld, fx) < 0)
		return -1;
	log_set_level(LOG_LEVEL_DEBUG);
	return redirect(fx);
}

static int
teardown(void **state)
{
	struct fixture *fx = *state;

	node_free(fx->n);
	fx->n = NULL;
	loop_free(fx->l);
	config_free(&fx->cfg);
	reap_orphans();
	if (fx->out_r >= 0)
		capture(fx);
	fflush(stdout);
	fflush(stderr);
	if (fx->saved_out >= 0)
		dup2(fx->saved_out, STDOUT_FILENO);
	if (fx->saved_err >= 0)
		dup2(fx->saved_err, STDERR_FILENO);
	/* what the node said, for the test's log */
	if (fx->nerr > 0 && write(STDERR_FILENO, fx->err, fx->nerr) < 0)
		fx->nerr = 0;
	for (int i = 0; i < fx->nsent; i++)
		free(fx->texts[i]);
	for (int fd = 0; fd < 5; fd++) {
		int f[] = { fx->saved_out, fx->saved_err, fx->out_r, fx->err_r, fx->sfd };

		if (f[fd] >= 0)
			close(f[fd]);
	}
	(void)sigprocmask(SIG_SETMASK, &fx->oldmask, NULL);
	log_set_level(LOG_LEVEL_WARN);
	unsetenv("VIGIL_PTY");
	free(fx);
	return 0;
}

/* Launch SCRIPT (sh -c) as this node's training, the only member of the job. */
static void
launch(struct fixture *fx, const char *script)
{
	struct msg_node nodes[1] = { { .host = "n0", .addr = "127.0.0.1", .slots = 0 } };
	int members[1] = { 0 };
	struct msg_plan plan = {
		.go = true, .master_addr = "127.0.0.1", .master_port = 29500, .job = "t",
		.nodes = nodes, .nnodes = 1, .members = members, .nmembers = 1,
	};
	struct node_opts no = {
		.run = &fx->ro, .cfg = &fx->cfg, .name = "n0", .rank = 0,
		.sigmask = &fx->oldmask,
	};
	struct node_ops ops = { rec_send, rec_line, fx };

	fx->argv[0] = (char *)"/bin/sh";
	fx->argv[1] = (char *)"-c";
	fx->argv[2] = (char *)script;
	fx->argv[3] = NULL;
	fx->n = node_new(&no, fx->l, &ops);
	assert_non_null(fx->n);
	assert_int_equal(node_take_plan(fx->n, &plan), 0);
	assert_int_equal(node_launch(fx->n), 0);
}

/* The first message of KIND the node sent, or -1. */
static int
sent(const struct fixture *fx, enum msg_kind kind)
{
	for (int i = 0; i < fx->nsent; i++)
		if (fx->kinds[i] == kind)
			return i;
	return -1;
}

static bool
has_result(struct fixture *fx)
{
	return sent(fx, MSG_RESULT) >= 0;
}

/* How many times TEXT is in what the node wrote to its stderr so far. */
static int
count_in_err(struct fixture *fx, const char *text)
{
	int k = 0;

	capture(fx);

	for (const char *p = fx->err; (p = strstr(p, text)) != NULL; p += strlen(text))
		k++;
	return k;
}

/*
 * Turn the loop (without moving the clock: only the real training and
 * its pipes wake it) until WANT is in the node's stdout, or, WANT NULL,
 * a result was sent.  False when neither came within TURNS turns.
 */
static bool
pump(struct fixture *fx, const char *want)
{
	for (int i = 0; i < TURNS; i++) {
		capture(fx);
		if (want ? strstr(fx->out, want) != NULL : has_result(fx))
			return true;
		if (loop_run_once(fx->l, 100) < 0)
			return false;
	}
	capture(fx);
	return want ? strstr(fx->out, want) != NULL : has_result(fx);
}

/* Move the clock by US and run what is due then. */
static void
advance(struct fixture *fx, uint64_t us)
{
	fx->now_us += us;
	assert_true(loop_run_once(fx->l, 0) >= 0);
	capture(fx);
}

/* The result the node sent (assert_true(pump(fx, NULL)) first); msg_clear() it. */
static void
result(struct fixture *fx, struct msg *m)
{
	int i = sent(fx, MSG_RESULT);

	assert_true(i >= 0);
	assert_int_equal(msg_decode(MSG_RESULT, fx->texts[i], 1, m), 0);
}

/* ---- the tests ---------------------------------------------------------------------- */

/* Started, exited, drained: one result with the status and stderr's last lines. */
static void
test_exit_sends_result(void **state)
{
	struct fixture *fx = *state;
	struct msg m;

	launch(fx, "echo hello; echo 'step 1: this iteration hardware time is 5 and e2e time "
	           "is 7 ms'; echo 'e2e time is not a timing line'; echo oops >&2; exit 3");
	assert_false(node_waiting(fx->n));
	assert_true(pump(fx, NULL));
	assert_true(node_waiting(fx->n));
	result(fx, &m);
	assert_int_equal(m.u.result.exit_code, 3);
	assert_int_equal(m.u.result.signal, 0);
	assert_false(m.u.result.idle);
	assert_false(m.u.result.ckpt);
	assert_int_equal(m.u.result.ntail, 1);
	assert_string_equal(m.u.result.tail[0], "oops");
	msg_clear(&m);
	assert_int_equal(fx->nsent, 1);
	/* passed through unchanged; only the timing line handed out */
	assert_string_equal(fx->out, "hello\nstep 1: this iteration hardware time is 5 and e2e "
	                    "time is 7 ms\ne2e time is not a timing line\n");
	assert_int_equal(fx->nlines, 1);
	assert_string_equal(fx->lines[0],
	                    "step 1: this iteration hardware time is 5 and e2e time is 7 ms");
	assert_non_null(strstr(fx->err, "oops\n"));
	assert_int_equal(count_in_err(fx, "node: unwatched -> watching (launch)"), 1);
	assert_int_equal(count_in_err(fx, "node: idle -> running (launch)"), 1);
	assert_int_equal(count_in_err(fx, "node: running -> draining (exit)"), 1);
	assert_int_equal(count_in_err(fx, "node: draining -> reported (result)"), 1);
}

/*
 * A stop by signal: the signal to the training, KILL when the grace is
 * over on the clock and not a microsecond before; a second stop sends
 * the signal again but starts no second grace.
 */
static void
test_stop_escalates_to_kill(void **state)
{
	struct fixture *fx = *state;
	struct msg_command stop = { .command = MSG_CMD_STOP, .reason = "test" };
	struct msg m;

	launch(fx, WAITS_BEGIN "trap 'echo term' TERM; echo ready;" WAITS_END);
	assert_true(pump(fx, "ready\n"));
	node_signal(fx->n, SIGTERM);
	assert_int_equal(count_in_err(fx, "node: running -> stopping (signal)"), 1);
	assert_true(pump(fx, "term\n"));
	node_command(fx->n, &stop);
	assert_int_equal(count_in_err(fx, "node: stopping: no transition on stop, refused"), 1);
	assert_true(pump(fx, "term\nterm\n"));

	advance(fx, 2000 * MS - 1);
	assert_int_equal(count_in_err(fx, "killing it"), 0);
	assert_false(has_result(fx));
	advance(fx, 1);
	assert_int_equal(count_in_err(fx, "the training did not end when told to: killing it"), 1);
	assert_true(pump(fx, NULL));
	result(fx, &m);
	assert_int_equal(m.u.result.signal, SIGKILL);
	assert_int_equal(m.u.result.exit_code, 128 + SIGKILL);
	assert_int_equal(m.u.result.agent_signal, SIGTERM);
	msg_clear(&m);
	assert_int_equal(count_in_err(fx, "node: stopping -> draining (exit)"), 1);
	assert_int_equal(count_in_err(fx, "killing it"), 1);
}

/* The checkpoint signal, then the exit: the verdict comes with the result. */
static void
test_checkpoint_then_exit(void **state)
{
	struct fixture *fx = *state;
	struct msg_command ckpt = { .command = MSG_CMD_CHECKPOINT, .reason = "test" };
	struct msg m;

	launch(fx, WAITS_BEGIN "trap 'echo saved; exit 0' USR1; echo ready;" WAITS_END);
	assert_true(pump(fx, "ready\n"));
	node_command(fx->n, &ckpt);
	assert_int_equal(count_in_err(fx, "node: unasked -> saving (checkpoint)"), 1);
	assert_true(pump(fx, NULL));
	result(fx, &m);
	assert_true(m.u.result.ckpt);
	assert_true(m.u.result.ckpt_confirmed);
	assert_int_equal(m.u.result.exit_code, 0);
	msg_clear(&m);
	assert_string_equal(fx->out, "ready\nsaved\n");
	assert_int_equal(count_in_err(fx, "node: saving -> judged (result)"), 1);
	assert_int_equal(count_in_err(fx, "node: running -> draining (exit)"), 1);
}

/*
 * A second checkpoint in the same attempt has no transition: refused,
 * said, and no second signal.  The grace then ends on the clock: the
 * verdict (not saved), and the training is stopped.
 */
static void
test_second_checkpoint_refused(void **state)
{
	struct fixture *fx = *state;
	struct msg_command ckpt = { .command = MSG_CMD_CHECKPOINT, .reason = "test" };
	struct msg m;

	launch(fx, WAITS_BEGIN "trap 'echo usr1' USR1; echo ready;" WAITS_END);
	assert_true(pump(fx, "ready\n"));
	node_command(fx->n, &ckpt);
	node_command(fx->n, &ckpt);
	assert_int_equal(count_in_err(fx, "checkpoint: SIGUSR1 to the training"), 1);
	assert_int_equal(count_in_err(fx, "node: saving: no transition on checkpoint, refused"),
	                 1);
	assert_true(pump(fx, "usr1\n"));

	advance(fx, 2000 * MS - 1);
	assert_int_equal(count_in_err(fx, "node: saving -> judged"), 0);
	advance(fx, 1);
	assert_int_equal(count_in_err(fx, "node: saving -> judged (grace)"), 1);
	assert_int_equal(count_in_err(fx, "node: running -> stopping (grace)"), 1);
	assert_true(pump(fx, NULL));
	result(fx, &m);
	assert_true(m.u.result.ckpt);
	assert_false(m.u.result.ckpt_confirmed);
	assert_int_equal(m.u.result.signal, SIGTERM);
	msg_clear(&m);
	assert_int_equal(count_in_err(fx, "checkpoint: SIGUSR1 to the training"), 1);
}


/*
 * A training that fails on a node whose NIC is down: the node inspects
 * before it reports, so the coordinator hears of the fault before the
 * result and plans no restart there (the interval's inspection is an
 * hour away here).
 */
/* eth1 of the fake sysfs tree under ROOT: up with carrier, or down. */
static void
set_eth1(const char *root, bool up)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "mkdir -p %s/sys/class/net/eth1", root);
	assert_int_equal(system(path), 0);
	snprintf(path, sizeof(path), "%s/sys/class/net/eth1/operstate", root);
	assert_non_null(f = fopen(path, "w"));
	fputs(up ? "up\n" : "down\n", f);
	fclose(f);
	snprintf(path, sizeof(path), "%s/sys/class/net/eth1/carrier", root);
	assert_non_null(f = fopen(path, "w"));
	fputs(up ? "1\n" : "0\n", f);
	fclose(f);
}

/* The node inspects eth1 of the tree under ROOT every INSPECT_S. */
static void
inspect_eth1(struct fixture *fx, const char *root, double inspect_s)
{
	free(fx->cfg.sysfs_root);
	fx->cfg.sysfs_root = strdup(root);
	fx->cfg.nics = calloc(1, sizeof(*fx->cfg.nics));
	assert_non_null(fx->cfg.nics);
	fx->cfg.nics[0] = strdup("eth1");
	fx->cfg.nnics = 1;
	fx->ro.inspect_s = inspect_s;
}

/* How many notes the node sent that hold NEEDLE. */
static int
notes_with(const struct fixture *fx, const char *needle)
{
	int k = 0;

	for (int i = 0; i < fx->nsent; i++)
		k += fx->kinds[i] == MSG_NOTE && strstr(fx->texts[i], needle) != NULL;
	return k;
}

static void
test_failure_inspects_before_result(void **state)
{
	struct fixture *fx = *state;
	char root[] = "/tmp/vigil-node-XXXXXX", path[256];
	int note;

	assert_non_null(mkdtemp(root));
	set_eth1(root, false);
	inspect_eth1(fx, root, 3600);
	launch(fx, "exit 1");
	assert_true(pump(fx, NULL));
	note = sent(fx, MSG_NOTE);
	assert_true(note >= 0);
	assert_true(note < sent(fx, MSG_RESULT));
	assert_non_null(strstr(fx->texts[note], "eth1"));
	snprintf(path, sizeof(path), "rm -rf %s", root);
	assert_int_equal(system(path), 0);
}


/* A NIC down, then up again: a failing note, then one that it passes; down again: again. */
static void
test_failure_over_said(void **state)
{
	struct fixture *fx = *state;
	char root[] = "/tmp/vigil-node-XXXXXX", path[256];

	assert_non_null(mkdtemp(root));
	set_eth1(root, false);
	inspect_eth1(fx, root, 1);
	launch(fx, WAITS_BEGIN "echo ready;" WAITS_END);
	assert_true(pump(fx, "ready\n"));
	advance(fx, 1000 * MS);
	assert_int_equal(notes_with(fx, "\"verdict\":\"fail\""), 1);
	advance(fx, 1000 * MS);
	assert_int_equal(notes_with(fx, "\"verdict\":\"fail\""), 1);  /* said once */
	set_eth1(root, true);
	advance(fx, 1000 * MS);
	assert_int_equal(notes_with(fx, "\"verdict\":\"pass\""), 1);
	assert_int_equal(notes_with(fx, "eth1 passes again"), 1);
	advance(fx, 1000 * MS);
	assert_int_equal(notes_with(fx, "\"verdict\":\"pass\""), 1);
	set_eth1(root, false);
	advance(fx, 1000 * MS);
	assert_int_equal(notes_with(fx, "\"verdict\":\"fail\""), 2);
	node_command(fx->n, &(struct msg_command){ .command = MSG_CMD_STOP, .reason = "end" });
	assert_true(pump(fx, NULL));
	snprintf(path, sizeof(path), "rm -rf %s", root);
	assert_int_equal(system(path), 0);
}

/*
 * The relay, line by line: whole lines go out at once; a line begun
 * waits for its end up to STREAM_LINE_WAIT_US on the clock, then goes as
 * it is; the one begun when the training ends goes at its end.
 */
static void
test_relay_lines(void **state)
{
	struct fixture *fx = *state;
	struct msg_command stop = { .command = MSG_CMD_STOP, .reason = "test" };
	struct msg m;

	launch(fx, WAITS_BEGIN "trap 'printf \" end\\ncut\"' USR2; "
	           "trap 'printf \" more\\nlast\"; exit 0' TERM; printf 'whole\\nbegun';" WAITS_END);
	assert_true(pump(fx, "whole\n"));
	assert_string_equal(fx->out, "whole\n");
	advance(fx, STREAM_LINE_WAIT_US - 1);
	assert_string_equal(fx->out, "whole\n");

	/* the end came within the wait: the line goes out whole */
	node_signal(fx->n, SIGUSR2);
	assert_true(pump(fx, "begun end\n"));
	assert_string_equal(fx->out, "whole\nbegun end\n");

	/* the next one's end does not come: it goes as it is when its wait is over */
	advance(fx, STREAM_LINE_WAIT_US - 1);
	assert_string_equal(fx->out, "whole\nbegun end\n");
	advance(fx, 1);
	assert_string_equal(fx->out, "whole\nbegun end\ncut");

	/* the rest of that line goes at once; the last, begun, at the end */
	node_command(fx->n, &stop);
	assert_true(pump(fx, NULL));
	assert_string_equal(fx->out, "whole\nbegun end\ncut more\nlast");
	result(fx, &m);
	assert_int_equal(m.u.result.exit_code, 0);
	msg_clear(&m);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_exit_sends_result, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stop_escalates_to_kill, setup, teardown),
		cmocka_unit_test_setup_teardown(test_checkpoint_then_exit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_failure_inspects_before_result, setup, teardown),
		cmocka_unit_test_setup_teardown(test_failure_over_said, setup, teardown),
		cmocka_unit_test_setup_teardown(test_second_checkpoint_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_relay_lines, setup, teardown),
	};

	/* the orphans of a killed group (sleep) come back to us, not to init */
	(void)prctl(PR_SET_CHILD_SUBREAPER, 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
