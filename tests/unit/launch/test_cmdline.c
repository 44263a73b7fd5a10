/*
 * test_cmdline.c - the run command's rules: which commands are accepted
 * and as which words, which are refused and with which message, and
 * quoting that a shell reads back to the same words.
 */
#include "autoconf.h"

#include "../vigil_test.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launch/cmdline.h"

#define MAXW 16

static int
count(const char *const *v)
{
	int n = 0;

	while (v[n])
		n++;
	return n;
}

static void
assert_words(char **got, const char *const *want, const char *what)
{
	int i;

	for (i = 0; want[i]; i++) {
		if (!got[i] || strcmp(got[i], want[i]) != 0)
			fail_msg("%s: word %d is \"%s\", want \"%s\"", what, i,
			         got[i] ? got[i] : "(end)", want[i]);
	}
	if (got[i])
		fail_msg("%s: extra word %d \"%s\"", what, i, got[i]);
}

/* Accepted commands and the words they become. */
static const struct {
	const char *in[MAXW];
	const char *want[MAXW];
} accepted[] = {
	/* argv form: words are data, whatever they hold */
	{ { "python3", "train.py" }, { "python3", "train.py" } },
	{ { "./run.sh" }, { "./run.sh" } },
	{ { "python", "-c", "import a; a.main()" }, { "python", "-c", "import a; a.main()" } },
	{ { "python", "train.py", "--unk", "<unk>", "--sep", "a;b", "x|y", "2>x" },
	  { "python", "train.py", "--unk", "<unk>", "--sep", "a;b", "x|y", "2>x" } },
	{ { "bash", "-c", "KEY=VALUE python3 train.py && python3 evaluate.py" },
	  { "bash", "-c", "KEY=VALUE python3 train.py && python3 evaluate.py" } },
	{ { "python", "train.py", "--lr=0.1", "$HOME", "" },
	  { "python", "train.py", "--lr=0.1", "$HOME", "" } },
	{ { "a&&b" }, { "a&&b" } },     /* one word without blanks: argv form */
	/* command-line form: split like a shell, nothing expanded */
	{ { "python3 train.py --lr 0.1" }, { "python3", "train.py", "--lr", "0.1" } },
	{ { "  python3 \t train.py  \n" }, { "python3", "train.py" } },
	{ { "python -c 'import a; a.main()'" }, { "python", "-c", "import a; a.main()" } },
	{ { "python -c \"print('hi')\"" }, { "python", "-c", "print('hi')" } },
	{ { "echo \"a\\\"b\\\\\" 'c\\d' e\\ f \"\\x\"" },
	  { "echo", "a\"b\\", "c\\d", "e f", "\\x" } },
	{ { "torchrun \\\n  --nnodes 2 \\\n  train.py" }, { "torchrun", "--nnodes", "2", "train.py" } },
	{ { "python train.py # the rest is a comment; && |" }, { "python", "train.py" } },
	{ { "# a comment line\npython train.py\n\n" }, { "python", "train.py" } },
	{ { "echo cost$ 5 a#b" }, { "echo", "cost$", "5", "a#b" } },
	{ { "echo '$HOME' \"\\$HOME\" '`x`'" }, { "echo", "$HOME", "$HOME", "`x`" } },
	{ { "python '' \"\"x '&&' \";\"" }, { "python", "", "x", "&&", ";" } },
	{ { "pyth'on' tr\"ain\".py" }, { "python", "train.py" } },
	{ { "echo a\\" }, { "echo", "a\\" } },
	/* vigil's own variables stay for modes.c to replace: the manual's
	 * torchrun example as printed */
	{ { "torchrun \\\n--nnodes ${WORLD_SIZE} \\\n--nproc_per_node ${SLOTS} \\\n"
	    "--node_rank ${RANK} \\\n--master_addr ${MASTER_ADDR} \\\n"
	    "--master_port ${MASTER_PORT} \\\n/workspace/algorithm/train.py" },
	  { "torchrun", "--nnodes", "${WORLD_SIZE}", "--nproc_per_node", "${SLOTS}", "--node_rank",
	    "${RANK}", "--master_addr", "${MASTER_ADDR}", "--master_port", "${MASTER_PORT}",
	    "/workspace/algorithm/train.py" } },
	{ { "python t.py --out=ckpt.$RANK \"$MASTER_ADDR:$MASTER_PORT\"" },
	  { "python", "t.py", "--out=ckpt.$RANK", "$MASTER_ADDR:$MASTER_PORT" } },
	/* the env form vigil suggests is accepted */
	{ { "env KEY=VALUE python3 train.py" }, { "env", "KEY=VALUE", "python3", "train.py" } },
};

static void
test_accepted(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(accepted) / sizeof(accepted[0]); i++) {
		char err[512] = "";
		char what[64];
		char **out = NULL;
		int rc = cmdline_check(count(accepted[i].in), (char *const *)accepted[i].in, &out,
		                       err, sizeof(err));

		snprintf(what, sizeof(what), "accepted[%zu]", i);
		if (rc != 0)
			fail_msg("%s: refused (%d): %s", what, rc, err);
		assert_non_null(out);
		assert_words(out, accepted[i].want, what);
		cmdline_free(out);
	}
}

/* Refused commands and their exact messages. */
static const struct {
	const char *in[MAXW];
	const char *msg;
} refused[] = {
	/* the manual's examples, argv form */
	/* one command: the env form, which keeps python the command (and
	 * PyTorch mode's launcher) */
	{ { "KEY=VALUE", "python3", "train.py" },
	  "the command must start with an executable, but \"KEY=VALUE\" sets an environment "
	  "variable; to set it for the command, use:  -- env KEY=VALUE python3 train.py" },
	{ { "KEY=VALUE python3 train.py" },
	  "the command must start with an executable, but \"KEY=VALUE\" sets an environment "
	  "variable; to set it for the command, use:  -- env KEY=VALUE python3 train.py" },
	{ { "A='x y' B=2 python3 train.py --rank $RANK" },
	  "the command must start with an executable, but \"A=x y\" sets an environment "
	  "variable; to set it for the command, use:  -- env A='x y' B=2 python3 train.py --rank $RANK" },
	{ { "python3", "train.py", "&&", "python3", "evaluate.py" },
	  "the command holds more than one command (\"&&\"); to run them through a shell, use:  "
	  "-- bash -c \"python3 train.py && python3 evaluate.py\"" },
	{ { "python3", "train.py", ";", "python3", "evaluate.py" },
	  "the command holds more than one command (\";\"); to run them through a shell, use:  "
	  "-- bash -c \"python3 train.py ; python3 evaluate.py\"" },
	{ { "python3", "train.py", "||", "true" },
	  "the command holds more than one command (\"||\"); to run them through a shell, use:  "
	  "-- bash -c \"python3 train.py || true\"" },
	{ { "python3", "train.py", "|", "tee", "log" },
	  "the command is a pipeline (\"|\"); to run it through a shell, use:  "
	  "-- bash -c \"python3 train.py | tee log\"" },
	{ { "python3", "train.py", "&" },
	  "the command asks for a background job (\"&\"); to run it through a shell, use:  "
	  "-- bash -c \"python3 train.py &\"" },
	{ { "python3", "train.py", ">", "out.log", "2>&1" },
	  "the command redirects input or output (\">\"); to run it through a shell, use:  "
	  "-- bash -c \"python3 train.py > out.log 2>&1\"" },
	{ { "python3", "train.py", "2>&1" },
	  "the command redirects input or output (\"2>&1\"); to run it through a shell, use:  "
	  "-- bash -c \"python3 train.py 2>&1\"" },
	/* words that need quoting inside bash -c "..." */
	{ { "KEY=a b", "python", "-c", "print(\"$x\")", "&&", "echo", "it's" },
	  "the command must start with an executable, but \"KEY=a b\" sets an environment "
	  "variable; to run it through a shell, use:  "
	  "-- bash -c \"KEY='a b' python -c 'print(\\\"\\$x\\\")' && echo 'it'\\\\''s'\"" },
	{ { "python", "a\\b.py", "`x`", ";" },
	  "the command holds more than one command (\";\"); to run them through a shell, use:  "
	  "-- bash -c \"python 'a\\\\b.py' '\\`x\\`' ;\"" },
	/* empty */
	{ { NULL }, "the command is empty: give the training command after --" },
	{ { "" }, "the command must start with an executable, but its first word is empty" },
	{ { "", "train.py" }, "the command must start with an executable, but its first word is empty" },
	/* command-line form: the line goes into the suggestion as written */
	{ { "KEY=VALUE python3 train.py && python3 evaluate.py" },
	  "the command must start with an executable, but \"KEY=VALUE\" sets an environment "
	  "variable; to run it through a shell, use:  "
	  "-- bash -c \"KEY=VALUE python3 train.py && python3 evaluate.py\"" },
	{ { " python3 train.py && python3 evaluate.py " },
	  "the command holds more than one command (\"&&\"); to run them through a shell, use:  "
	  "-- bash -c \"python3 train.py && python3 evaluate.py\"" },
	{ { "python3 train.py; python3 evaluate.py" },
	  "the command holds more than one command (\";\"); to run them through a shell, use:  "
	  "-- bash -c \"python3 train.py; python3 evaluate.py\"" },
	{ { "python3 train.py|tee log" },
	  "the command is a pipeline (\"|\"); to run it through a shell, use:  "
	  "-- bash -c \"python3 train.py|tee log\"" },
	{ { "python3 train.py >>log" },
	  "the command redirects input or output (\">>\"); to run it through a shell, use:  "
	  "-- bash -c \"python3 train.py >>log\"" },
	{ { "python3 train.py\npython3 evaluate.py" },
	  "the command holds more than one command (a line break); to run them through a shell, "
	  "use:  -- bash -c \"python3 train.py\npython3 evaluate.py\"" },
	/* only vigil's own five variables are kept for expansion */
	{ { "torchrun --nnodes $WORLD_SIZES train.py" },
	  "the command asks the shell to expand a value, which vigil does not do (\"$\"); to run "
	  "it through a shell, use:  -- bash -c \"torchrun --nnodes \\$WORLD_SIZES train.py\"" },
	{ { "echo ${RANK:-0}" },
	  "the command asks the shell to expand a value, which vigil does not do (\"$\"); to run "
	  "it through a shell, use:  -- bash -c \"echo \\${RANK:-0}\"" },
	{ { "echo \"${HOME}/x\" y" },
	  "the command asks the shell to expand a value, which vigil does not do (\"$\"); to run "
	  "it through a shell, use:  -- bash -c \"echo \\\"\\${HOME}/x\\\" y\"" },
	{ { "echo `date` y" },
	  "the command asks the shell to expand a value, which vigil does not do (\"`\"); to run "
	  "it through a shell, use:  -- bash -c \"echo \\`date\\` y\"" },
	{ { "(cd x && make) y" },
	  "the command uses shell syntax (\"(\"); to run it through a shell, use:  "
	  "-- bash -c \"(cd x && make) y\"" },
	{ { "&& python x" },
	  "the command holds more than one command (\"&&\"); to run them through a shell, use:  "
	  "-- bash -c \"&& python x\"" },
	{ { "A=1&&b c" },
	  "the command must start with an executable, but \"A=1\" sets an environment "
	  "variable; to run it through a shell, use:  -- bash -c \"A=1&&b c\"" },
	{ { "python 'unterminated" }, "the command has a quote that is not closed" },
	{ { "python \"unterminated" }, "the command has a quote that is not closed" },
	{ { "   \n\t " }, "the command is empty: give the training command after --" },
	{ { " # only a comment" }, "the command is empty: give the training command after --" },
	{ { "'' train.py" }, "the command must start with an executable, but its first word is empty" },
};

static void
test_refused(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		char err[1024] = "";
		char **out = (char **)&out;     /* must be reset to NULL */
		int rc = cmdline_check(count(refused[i].in), (char *const *)refused[i].in, &out,
		                       err, sizeof(err));

		if (rc != -EINVAL)
			fail_msg("refused[%zu]: rc %d, want -EINVAL", i, rc);
		assert_null(out);
		if (strcmp(err, refused[i].msg) != 0)
			fail_msg("refused[%zu]:\n got: %s\nwant: %s", i, err, refused[i].msg);
	}
}

/* A NULL argv or argc 0 is the empty command, not a crash. */
static void
test_no_argv(void **state)
{
	char err[256] = "";
	char **out = NULL;

	(void)state;
	assert_int_equal(cmdline_check(0, NULL, &out, err, sizeof(err)), -EINVAL);
	assert_null(out);
	assert_string_equal(err, "the command is empty: give the training command after --");
	/* and a zero-length ERR is left alone */
	assert_int_equal(cmdline_check(0, NULL, &out, NULL, 0), -EINVAL);
}

static const struct {
	const char *in[MAXW];
	const char *want;
} quoted[] = {
	{ { "python3", "train.py", "--lr=0.1", "a/b:c,d@e%f+g" },
	  "python3 train.py --lr=0.1 a/b:c,d@e%f+g" },
	{ { "python", "it's" }, "python 'it'\\''s'" },
	{ { "a b", "" }, "'a b' ''" },
	{ { "KEY=V", "KEY=V" }, "'KEY=V' KEY=V" },  /* first: not an assignment */
	{ { "if", "if" }, "'if' if" },
	{ { "echo", "$HOME", "`x`", "\\", "\"", "~", "#", "*", "^openib" },
	  "echo '$HOME' '`x`' '\\' '\"' '~' '#' '*' '^openib'" },
	{ { "echo", "new\nline" }, "echo 'new\nline'" },
	{ { NULL }, "" },
};

static void
test_quote(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(quoted) / sizeof(quoted[0]); i++) {
		char *s = cmdline_quote((char *const *)quoted[i].in);

		assert_non_null(s);
		if (strcmp(s, quoted[i].want) != 0)
			fail_msg("quoted[%zu]: got <%s> want <%s>", i, s, quoted[i].want);
		free(s);
	}
}

/* Words that need every kind of quoting. */
static const char *const nasty[] = {
	"python", "a b", "it's", "'", "''", "$HOME", "${X}", "$(id)", "`id`",
	"back\\slash", "\\", "", "new\nline", "tab\there", "\"dq\"", "&&", ";", "|",
	">", "2>&1", "(", "*", "?", "~", "~root", "#c", "!", "%", "KEY=V", "-", "--",
	"ünï ☃", " lead", "trail ", NULL
};

/* cmdline_check() splits cmdline_quote()'s line back into the same words. */
static void
test_round_trip(void **state)
{
	char *line = cmdline_quote((char *const *)nasty);
	char *one[2] = { line, NULL };
	char err[512] = "";
	char **out = NULL;

	(void)state;
	assert_non_null(line);
	if (cmdline_check(1, one, &out, err, sizeof(err)) != 0)
		fail_msg("refused its own quoting: %s\n%s", err, line);
	assert_words(out, (const char *const *)nasty, "round trip");
	cmdline_free(out);
	free(line);

	/* each word alone after the command, so each is also a last word */
	for (size_t i = 1; nasty[i]; i++) {
		const char *two[] = { "python", nasty[i], NULL };

		line = cmdline_quote((char *const *)two);
		assert_non_null(line);
		one[0] = line;
		if (cmdline_check(1, one, &out, err, sizeof(err)) != 0)
			fail_msg("word %zu: refused its own quoting: %s", i, err);
		assert_words(out, two, line);
		cmdline_free(out);
		free(line);
	}
}

/* A POSIX shell reads cmdline_quote()'s line back to the same words. */
static void
test_quote_sh(void **state)
{
	char *line = cmdline_quote((char *const *)nasty + 1);
	char *cmd;
	char buf[4096];
	size_t len, off = 0;
	FILE *p;

	(void)state;
	assert_non_null(line);
	cmd = malloc(strlen(line) + 32);
	assert_non_null(cmd);
	sprintf(cmd, "printf '%%s\\0' %s", line);
	p = popen(cmd, "r");
	assert_non_null(p);
	len = fread(buf, 1, sizeof(buf), p);
	assert_int_equal(pclose(p), 0);
	for (size_t i = 1; nasty[i]; i++) {
		size_t n = strlen(nasty[i]);

		if (off + n >= len || memcmp(buf + off, nasty[i], n) != 0 || buf[off + n] != '\0')
			fail_msg("sh read word %zu differently (want \"%s\")", i, nasty[i]);
		off += n + 1;
	}
	assert_int_equal(off, len);
	free(cmd);
	free(line);
}

/* The suggested bash -c "..." hands bash the command as the user meant
 * it: a shell reading the double-quoted part gets back that text. */
static void
test_suggestion_sh(void **state)
{
	const char *in[] = { "KEY=a b", "python", "-c", "print(\"$x\\n\")", "&&", "echo", "`it's`", NULL };
	const char *inner = "KEY='a b' python -c 'print(\"$x\\n\")' && echo '`it'\\''s`'";
	char err[1024];
	char cmd[1200];
	char buf[1024];
	const char *dq;
	char **out = NULL;
	size_t len;
	FILE *p;

	(void)state;
	assert_int_equal(cmdline_check(count(in), (char *const *)in, &out, err, sizeof(err)), -EINVAL);
	dq = strstr(err, "-- bash -c \"");
	assert_non_null(dq);
	snprintf(cmd, sizeof(cmd), "printf '%%s' %s", dq + strlen("-- bash -c "));
	p = popen(cmd, "r");
	assert_non_null(p);
	len = fread(buf, 1, sizeof(buf) - 1, p);
	buf[len] = '\0';
	assert_int_equal(pclose(p), 0);
	assert_string_equal(buf, inner);
}

/* The command word past wrappers, assignments and reserved words. */
static void
test_command_index(void **state)
{
	static const struct {
		const char *w[12];
		bool script;
		int want;       /* -1: none */
	} cases[] = {
		{ { "mpirun", "-np", "2" }, false, 0 },
		{ { "env", "A=1", "B=2", "mpirun" }, false, 3 },
		{ { "/usr/bin/env", "-i", "-u", "X", "A=1", "python3" }, false, 5 },
		{ { "nice", "-n", "5", "nohup", "srun", "x" }, false, 4 },
		{ { "nice", "-n5", "x" }, false, 2 },
		{ { "timeout", "-k", "5", "1h", "x" }, false, 4 },
		{ { "timeout", "--signal=INT", "10", "x" }, false, 3 },
		{ { "stdbuf", "-oL", "x" }, false, 2 },
		{ { "command", "-v", "mpirun" }, false, -1 },
		{ { "exec", "-a", "name", "x" }, false, 3 },
		{ { "A=1", "x" }, false, 0 },               /* argv form: no assignments */
		{ { "A=1", "B+=2", "x" }, true, 2 },
		{ { "if", "!", "x" }, true, 2 },
		{ { "then", "time", "-p", "x" }, true, 3 },
		{ { "for", "x", "in", "mpirun" }, true, -1 },
		{ { "case", "$1", "in", "mpirun" }, true, -1 },
		{ { "env" }, false, -1 },
		{ { NULL }, false, -1 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int n = count(cases[i].w);
		size_t got = cmdline_command_index((char *const *)cases[i].w, (size_t)n, cases[i].script);
		int want = cases[i].want < 0 ? n : cases[i].want;

		if ((int)got != want)
			fail_msg("case %zu (%s): %zu, want %d", i, cases[i].w[0] ? cases[i].w[0] : "-", got,
			         want);
	}
}

/* The script of a shell's -c, whatever the options around -c. */
static void
test_shell_script(void **state)
{
	static const struct {
		const char *w[10];
		int script;     /* 0: none */
	} cases[] = {
		{ { "bash", "-c", "S" }, 2 },
		{ { "/bin/sh", "-c", "S", "arg0" }, 2 },
		{ { "bash", "-lc", "S" }, 2 },
		{ { "bash", "-ce", "S" }, 2 },
		{ { "bash", "-e", "-c", "S" }, 3 },
		{ { "bash", "-c", "-e", "S" }, 3 },
		{ { "bash", "-o", "pipefail", "-c", "S" }, 4 },
		{ { "bash", "-eo", "pipefail", "-c", "S" }, 4 },
		{ { "bash", "+o", "posix", "-c", "S" }, 4 },
		{ { "bash", "-O", "extglob", "-c", "S" }, 4 },
		{ { "bash", "--norc", "--noprofile", "-c", "S" }, 4 },
		{ { "bash", "--rcfile", "f", "-c", "S" }, 4 },
		{ { "bash", "-c", "--", "S" }, 3 },
		{ { "zsh", "-c", "S" }, 2 },
		{ { "ksh", "-c", "S" }, 2 },
		{ { "dash", "-c", "S" }, 2 },
		{ { "env", "X=1", "bash", "-c", "S" }, 4 },
		{ { "nohup", "sh", "-c", "S" }, 3 },
		{ { "bash", "run.sh", "-c" }, 0 },
		{ { "bash", "-e", "run.sh" }, 0 },
		{ { "bash", "+c", "S" }, 0 },
		{ { "bash", "-c" }, 0 },
		{ { "python3", "-c", "S" }, 0 },
		{ { "bashful", "-c", "S" }, 0 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t shell = 99, got = cmdline_shell_script((char *const *)cases[i].w, &shell);

		if ((int)got != cases[i].script)
			fail_msg("case %zu (%s %s): %zu, want %d", i, cases[i].w[0], cases[i].w[1], got,
			         cases[i].script);
		if (got && strcmp(cases[i].w[shell] + strlen(cases[i].w[shell]) - 2, "sh") != 0)
			fail_msg("case %zu: shell %s", i, cases[i].w[shell]);
	}
}

static const char *seen[16];
static size_t nseen;

static bool
record(const char *w)
{
	if (nseen < 16)
		seen[nseen++] = strdup(w);
	return false;
}

/* The command words FN sees in SCRIPT, joined by ','. */
static void
assert_command_words(const char *script, const char *want)
{
	char got[512] = "";
	size_t o = 0;

	nseen = 0;
	assert_false(cmdline_any_command_word(script, record));
	for (size_t i = 0; i < nseen; i++) {
		o += (size_t)snprintf(got + o, sizeof(got) - o, "%s%s", i ? "," : "", seen[i]);
		free((char *)seen[i]);
	}
	if (strcmp(got, want) != 0)
		fail_msg("%s: \"%s\", want \"%s\"", script, got, want);
}

/* Each simple command's command word, and nothing else. */
static void
test_command_words(void **state)
{
	(void)state;
	assert_command_words("echo mpirun; python3 t.py", "echo,python3");
	assert_command_words("a && b || c | d & e", "a,b,c,d,e");
	assert_command_words("X=1 Y=\"a b\" env Z=2 ./run x", "./run");
	assert_command_words("if [ -x a ]; then mpirun a; else b; fi", "[,mpirun,b");
	assert_command_words("for x in mpirun a; do echo $x; done", "echo");
	assert_command_words("# mpirun\npython3 t.py # mpirun", "python3");
	assert_command_words("echo 'mpirun; x' \"; mpirun\" \\; mpirun", "echo");
	assert_command_words("(cd /w && exec mpiexec -n 2 a)", "cd,mpiexec");
	assert_command_words("x=$(hostname) y=`id -u`", "hostname,id");
	assert_command_words("a \\\n b; 'c'd", "a,cd");
	assert_command_words("'unterminated", "unterminated");
	assert_command_words("", "");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_accepted),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_no_argv),
		cmocka_unit_test(test_quote),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_quote_sh),
		cmocka_unit_test(test_suggestion_sh),
		cmocka_unit_test(test_command_index),
		cmocka_unit_test(test_shell_script),
		cmocka_unit_test(test_command_words),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
