/*
 * cmdline.c - the run command's rules, from the platform manual
 * ("运行指令说明"): the command starts with an executable and holds one
 * command.  vigil executes the command itself (execvp), never through a
 * shell, so anything only a shell understands is refused with the
 * `bash -c "..."` form that asks for a shell explicitly.
 *
 * Two forms reach cmdline_check():
 *   - argv form: the words after `--`, already split by the shell that
 *     started vigil.  They are data, except that a word which is exactly a
 *     shell operator ("&&", "|", ">", "2>&1", ...) can only be a mistake:
 *     the user meant the shell to act on it.  A word such as "<unk>" or
 *     "a;b" is an ordinary argument (tokenizer vocabularies, python -c).
 *   - command-line form: one argument with blanks in it, as the platform's
 *     form takes the command.  It is split the way a POSIX shell splits
 *     words (blanks, '...', "...", backslashes, backslash-newline, and
 *     comments), and anything else the shell would act on is refused:
 *     unquoted ; & | < > ( ), a line break between two commands, and
 *     parameter or command substitution ($VAR, ${VAR}, $(...), `...`),
 *     since reading "$HOME" literally would silently pass the training a
 *     wrong value.  vigil's own variables are the exception: $WORLD_SIZE,
 *     $SLOTS, $RANK, $MASTER_ADDR and $MASTER_PORT (or ${NAME}) stay in
 *     the word as written, and modes.c replaces them with the node's
 *     values, as the platform's shell would (its manual's torchrun
 *     example).  Globs and ~ are left as written: the shell keeps a glob
 *     that matches nothing as is, and these rarely appear in training
 *     commands.
 *
 * A command that starts with KEY=VALUE and is one command is answered with
 * the `env KEY=VALUE cmd` form, which keeps the command what vigil sees
 * first (PyTorch mode still puts python under the torch launcher); with
 * several commands, bash -c "..." is the only form.
 */
#include "autoconf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launch/cmdline.h"
#include "lib/log.h"

/* A growing string; a failed allocation sticks, so callers check once. */
struct buf {
	char *s;
	size_t len;
	size_t cap;
	bool nomem;
};

static void
buf_putn(struct buf *b, const char *s, size_t n)
{
	if (b->nomem)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 64;
		char *p;

		while (b->len + n + 1 > cap)
			cap *= 2;
		p = realloc(b->s, cap);
		if (!p) {
			b->nomem = true;
			return;
		}
		b->s = p;
		b->cap = cap;
	}
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
}

static void
buf_putc(struct buf *b, char c)
{
	buf_putn(b, &c, 1);
}

static void
buf_puts(struct buf *b, const char *s)
{
	buf_putn(b, s, strlen(s));
}

/* The string built so far (never NULL unless out of memory), or NULL. */
static char *
buf_take(struct buf *b)
{
	if (!b->nomem && !b->s)
		buf_putn(b, "", 0);
	if (b->nomem) {
		free(b->s);
		b->s = NULL;
		return NULL;
	}
	return b->s;
}

struct words {
	char **v;
	size_t n;
	size_t cap;
};

/* Appends W (owned from now on); returns 0 or -ENOMEM (W is freed). */
static int
words_push(struct words *w, char *word)
{
	if (!word)
		return -ENOMEM;
	if (w->n + 2 > w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 8;
		char **v = realloc(w->v, cap * sizeof(*v));

		if (!v) {
			free(word);
			return -ENOMEM;
		}
		w->v = v;
		w->cap = cap;
	}
	w->v[w->n++] = word;
	w->v[w->n] = NULL;
	return 0;
}

void
cmdline_free(char **argv)
{
	if (!argv)
		return;
	for (char **a = argv; *a; a++)
		free(*a);
	free(argv);
}


/* Characters a word may hold and still need no quoting (those of Python's
 * shlex.quote). */
static bool
is_safe(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || strchr("_@%+=:,./-", c) != NULL;
}

/* Length of the NAME= (or NAME+=) that starts W when W is a shell variable
 * assignment, else 0. */
static size_t
assignment_len(const char *w)
{
	size_t i = 0;

	if (!((w[0] >= 'a' && w[0] <= 'z') || (w[0] >= 'A' && w[0] <= 'Z') || w[0] == '_'))
		return 0;
	while ((w[i] >= 'a' && w[i] <= 'z') || (w[i] >= 'A' && w[i] <= 'Z') ||
	       (w[i] >= '0' && w[i] <= '9') || w[i] == '_')
		i++;
	if (w[i] == '+' && w[i + 1] == '=')
		return i + 2;
	if (w[i] == '=')
		return i + 1;
	return 0;
}

/* Words the shell reads as syntax when they come first in a command. */
static bool
is_reserved(const char *w)
{
	static const char *const reserved[] = {
		"case", "coproc", "do", "done", "elif", "else", "esac", "fi", "for",
		"function", "if", "in", "select", "then", "time", "until", "while",
	};

	for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++) {
		if (strcmp(w, reserved[i]) == 0)
			return true;
	}
	return false;
}

/* W, single-quoted when it needs to be ('it'\''s'). */
static void
quote_word(struct buf *b, const char *w, bool first)
{
	bool plain = *w != '\0';

	for (const char *c = w; *c && plain; c++)
		plain = is_safe(*c);
	/* First in a command, NAME=x would be an assignment and "if" syntax. */
	if (plain && first && (assignment_len(w) || is_reserved(w)))
		plain = false;
	if (plain) {
		buf_puts(b, w);
		return;
	}
	buf_putc(b, '\'');
	for (const char *c = w; *c; c++) {
		if (*c == '\'')
			buf_puts(b, "'\\''");
		else
			buf_putc(b, *c);
	}
	buf_putc(b, '\'');
}

char *
cmdline_quote(char *const argv[])
{
	struct buf b = { 0 };

	for (size_t i = 0; argv && argv[i]; i++) {
		if (i > 0)
			buf_putc(&b, ' ');
		quote_word(&b, argv[i], i == 0);
	}
	return buf_take(&b);
}

/* What a shell operator is, for the message. */
enum op_kind { OP_NONE, OP_LIST, OP_PIPE, OP_BACKGROUND, OP_REDIRECT, OP_GROUP, OP_EXPAND };

/* Operators, longest first so that the first match is the longest. */
static const struct {
	const char *text;
	enum op_kind kind;
} ops[] = {
	{ "&>>", OP_REDIRECT }, { "<<<", OP_REDIRECT },
	{ "&&", OP_LIST }, { "||", OP_LIST }, { ";;", OP_LIST }, { ";&", OP_LIST },
	{ "|&", OP_PIPE },
	{ ">>", OP_REDIRECT }, { "<<", OP_REDIRECT }, { "<>", OP_REDIRECT },
	{ ">|", OP_REDIRECT }, { ">&", OP_REDIRECT }, { "<&", OP_REDIRECT },
	{ "&>", OP_REDIRECT },
	{ ";", OP_LIST }, { "|", OP_PIPE }, { "&", OP_BACKGROUND },
	{ ">", OP_REDIRECT }, { "<", OP_REDIRECT },
	{ "(", OP_GROUP }, { ")", OP_GROUP },
};

/* The operator that starts S (S is at an operator character), its length
 * in *LEN. */
static enum op_kind
op_at(const char *s, size_t *len)
{
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		size_t n = strlen(ops[i].text);

		if (strncmp(s, ops[i].text, n) == 0) {
			*len = n;
			return ops[i].kind;
		}
	}
	*len = 1;
	return OP_GROUP;
}

/*
 * Whether the argv-form word W is nothing but a shell operator: a control
 * operator, or a redirection without its target ("2>", ">>", "2>&1",
 * ">&-"), which is how these reach vigil when quoted or generated.
 */
static enum op_kind
word_op(const char *w)
{
	const char *c = w;
	enum op_kind k;
	size_t n;

	while (*c >= '0' && *c <= '9')
		c++;
	if (!*c || !strchr(";&|<>()", *c))
		return OP_NONE;
	k = op_at(c, &n);
	if (c != w && k != OP_REDIRECT)
		return OP_NONE;         /* "2&&" is no operator */
	c += n;
	if (k == OP_REDIRECT && (c[-1] == '&')) {
		/* >&N, >&N-, >&- : duplicating descriptors */
		while (*c >= '0' && *c <= '9')
			c++;
		if (*c == '-')
			c++;
	}
	return *c ? OP_NONE : k;
}

/* "the command ..." for an operator of kind K. */
static const char *
op_phrase(enum op_kind k)
{
	switch (k) {
	case OP_LIST:
		return "holds more than one command";
	case OP_PIPE:
		return "is a pipeline";
	case OP_BACKGROUND:
		return "asks for a background job";
	case OP_REDIRECT:
		return "redirects input or output";
	case OP_EXPAND:
		return "asks the shell to expand a value, which vigil does not do";
	case OP_GROUP:
	case OP_NONE:
		break;
	}
	return "uses shell syntax";
}

/* TEXT inside double quotes, for bash -c "TEXT". */
static void
put_double_quoted(struct buf *b, const char *text)
{
	buf_putc(b, '"');
	for (const char *c = text; *c; c++) {
		if (strchr("\"$`\\", *c))
			buf_putc(b, '\\');
		buf_putc(b, *c);
	}
	buf_putc(b, '"');
}

/* The argv-form words as shell text: operators as they are, assignments
 * with their value quoted (NAME='a b', which a shell still reads as an
 * assignment), other words quoted as needed. */
static void
put_shell_words(struct buf *b, int argc, char *const argv[])
{
	for (int i = 0; i < argc; i++) {
		size_t alen = assignment_len(argv[i]);

		if (i > 0)
			buf_putc(b, ' ');
		if (word_op(argv[i]) != OP_NONE) {
			buf_puts(b, argv[i]);
		} else if (alen) {
			buf_putn(b, argv[i], alen);
			if (argv[i][alen])
				quote_word(b, argv[i] + alen, false);
		} else {
			quote_word(b, argv[i], false);
		}
	}
}

/*
 * Writes the refusal into ERR: WHAT, then the bash -c form of SHELL_TEXT
 * (the command as a shell would read it).  Returns -EINVAL, or -ENOMEM.
 */
static int
refuse(char *err, size_t errlen, const char *what, bool several, const char *shell_text)
{
	struct buf b = { 0 };
	char *s;

	buf_puts(&b, what);
	buf_puts(&b, several ? "; to run them through a shell, use:  -- bash -c "
	                     : "; to run it through a shell, use:  -- bash -c ");
	put_double_quoted(&b, shell_text);
	s = buf_take(&b);
	if (!s) {
		log_errbuf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	log_errbuf(err, errlen, "%s", s);
	free(s);
	return -EINVAL;
}

/*
 * KEY=VALUE first.  With one command (SINGLE), the env form:
 * `env KEY=VALUE cmd ...` runs the same command with the same
 * environment, and the command is still what vigil sees (PyTorch mode
 * keeps its launcher); with several, bash -c "...".
 */
static int
refuse_assignment(char *err, size_t errlen, const char *word, const char *shell_text, bool single)
{
	char what[512];

	snprintf(what, sizeof(what),
	         "the command must start with an executable, but \"%.400s\" sets an environment variable",
	         word);
	if (!single)
		return refuse(err, errlen, what, false, shell_text);
	log_errbuf(err, errlen, "%s; to set it for the command, use:  -- env %s", what, shell_text);
	return -EINVAL;
}

static int
refuse_op(char *err, size_t errlen, enum op_kind k, const char *op, const char *shell_text)
{
	char what[256];

	snprintf(what, sizeof(what), "the command %s (%s%.32s%s)", op_phrase(k),
	         op[0] == '\n' ? "" : "\"", op[0] == '\n' ? "a line break" : op,
	         op[0] == '\n' ? "" : "\"");
	return refuse(err, errlen, what, k == OP_LIST, shell_text);
}

static int
refuse_empty(char *err, size_t errlen)
{
	log_errbuf(err, errlen, "the command is empty: give the training command after --");
	return -EINVAL;
}

static int
refuse_empty_first(char *err, size_t errlen)
{
	log_errbuf(err, errlen, "the command must start with an executable, but its first word is empty");
	return -EINVAL;
}

/*
 * The length of the reference to one of vigil's own variables at S (which
 * is at a "$"): "$RANK" (not followed by a name character) or "${RANK}";
 * 0 for anything else.
 */
static size_t
vigil_reference(const char *s)
{
	static const char *const names[] = { "WORLD_SIZE", "SLOTS", "RANK", "MASTER_ADDR", "MASTER_PORT" };
	bool braced = s[1] == '{';
	const char *n = s + (braced ? 2 : 1);

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		size_t len = strlen(names[i]);
		char next;

		if (strncmp(n, names[i], len) != 0)
			continue;
		next = n[len];  /* within N: its first LEN bytes matched */
		if (braced && next == '}')
			return len + 3;
		if (!braced && !((next >= 'a' && next <= 'z') || (next >= 'A' && next <= 'Z') ||
		                 (next >= '0' && next <= '9') || next == '_'))
			return len + 1;
	}
	return 0;
}

/* Whether "$" followed by C starts an expansion (else the shell keeps the
 * "$" as is, as in "cost: 5$"). */
static bool
starts_expansion(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || (c != '\0' && strchr("_{(@*#?$!-", c));
}

/*
 * The double-quoted part of a word at *CP (on its opening quote) into CUR,
 * as the shell reads it; *CP ends past the closing quote.  -EILSEQ when it
 * does not close; -EINVAL with *KIND and OP for an expansion vigil does
 * not perform.
 */
static int
double_quoted(const char **cp, struct buf *cur, enum op_kind *kind, char *op, size_t oplen)
{
	const char *c;

	for (c = *cp + 1; *c != '"'; c++) {
		if (!*c) {
			*cp = c;
			return -EILSEQ;
		}
		if (*c == '\\' && c[1] == '\n') {
			c++;
		} else if (*c == '\\' && c[1] && strchr("$`\"\\", c[1])) {
			buf_putc(cur, *++c);
		} else if (*c == '$' && vigil_reference(c)) {
			size_t n = vigil_reference(c);

			buf_putn(cur, c, n);
			c += n - 1;
		} else if (*c == '`' || (*c == '$' && starts_expansion(c[1]))) {
			*kind = OP_EXPAND;
			snprintf(op, oplen, "%c", *c);
			*cp = c;
			return -EINVAL;
		} else {
			buf_putc(cur, *c);
		}
	}
	*cp = c + 1;
	return 0;
}

/*
 * The command-line form: splits LINE into W.  On shell syntax that vigil
 * does not perform, returns -EINVAL with *KIND and OP (a short excerpt)
 * saying what, having stored the words read so far (the word being read
 * included) so that the caller can tell an assignment that came first.
 * -EILSEQ for an unterminated quote, -ENOMEM.
 */
static int
split_line(const char *line, struct words *w, enum op_kind *kind, char *op, size_t oplen)
{
	struct buf cur = { 0 };
	bool in_word = false;
	bool line_break = false;        /* a line break after the first command */
	const char *c = line;
	int rc = 0;

	while (*c) {
		if (*c == ' ' || *c == '\t' || *c == '\n') {
			if (in_word) {
				rc = words_push(w, buf_take(&cur));
				memset(&cur, 0, sizeof(cur));
				in_word = false;
				if (rc < 0)
					goto out;
			}
			if (*c == '\n' && w->n > 0)
				line_break = true;
			c++;
			continue;
		}
		if (!in_word) {
			if (*c == '#') {
				/* A comment runs to the end of its line. */
				while (*c && *c != '\n')
					c++;
				continue;
			}
			if (line_break) {
				*kind = OP_LIST;
				snprintf(op, oplen, "\n");
				rc = -EINVAL;
				goto out;
			}
		}
		if (*c == '\\') {
			if (c[1] == '\n') {             /* line continuation */
				c += 2;
				continue;
			}
			in_word = true;
			if (c[1])
				c++;
			buf_putc(&cur, *c++);
		} else if (*c == '\'') {
			const char *end = strchr(c + 1, '\'');

			if (!end) {
				rc = -EILSEQ;
				goto out;
			}
			in_word = true;
			buf_putn(&cur, c + 1, (size_t)(end - c - 1));
			c = end + 1;
		} else if (*c == '"') {
			in_word = true;
			rc = double_quoted(&c, &cur, kind, op, oplen);
			if (rc < 0)
				goto out;
		} else if (strchr(";&|<>()", *c)) {
			size_t n;

			*kind = op_at(c, &n);
			snprintf(op, oplen, "%.*s", (int)n, c);
			rc = -EINVAL;
			goto out;
		} else if (*c == '$' && vigil_reference(c)) {
			size_t n = vigil_reference(c);

			in_word = true;
			buf_putn(&cur, c, n);
			c += n;
		} else if (*c == '`' || (*c == '$' && starts_expansion(c[1]))) {
			*kind = OP_EXPAND;
			snprintf(op, oplen, "%c", *c);
			rc = -EINVAL;
			goto out;
		} else {
			in_word = true;
			buf_putc(&cur, *c++);
		}
	}
out:
	/* Also on -EINVAL: the caller looks at the first word. */
	if (in_word && (rc == 0 || rc == -EINVAL)) {
		int rc2 = words_push(w, buf_take(&cur));

		memset(&cur, 0, sizeof(cur));
		if (rc2 < 0)
			rc = rc2;
	}
	free(cur.s);
	if (rc == 0 && cur.nomem)
		rc = -ENOMEM;
	return rc;
}

static bool
has_blank(const char *s)
{
	return strpbrk(s, " \t\n") != NULL;
}

/* LINE without its leading and trailing blanks, for the message. */
static char *
trimmed(const char *line)
{
	size_t len;

	while (*line == ' ' || *line == '\t' || *line == '\n')
		line++;
	len = strlen(line);
	while (len > 0 && strchr(" \t\n", line[len - 1]))
		len--;
	return strndup(line, len);
}

static int
check_line(const char *line, struct words *w, char *err, size_t errlen)
{
	enum op_kind kind = OP_NONE;
	char op[8] = "";
	char *text = NULL;
	int rc = split_line(line, w, &kind, op, sizeof(op));

	if (rc == -EILSEQ) {
		log_errbuf(err, errlen, "the command has a quote that is not closed");
		return -EINVAL;
	}
	if (rc == -ENOMEM) {
		log_errbuf(err, errlen, "out of memory");
		return rc;
	}
	if (rc == 0 && w->n == 0)
		return refuse_empty(err, errlen);
	if (w->n > 0 && w->v[0][0] == '\0')
		return refuse_empty_first(err, errlen);
	if (rc == 0 && !assignment_len(w->v[0]))
		return 0;
	/* The line itself is already shell text: it goes into the suggestion
	 * as written, so that it means what the user wrote. */
	text = trimmed(line);
	if (!text) {
		log_errbuf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	if (w->n > 0 && assignment_len(w->v[0]))
		rc = refuse_assignment(err, errlen, w->v[0], text, rc == 0);
	else
		rc = refuse_op(err, errlen, kind, op, text);
	free(text);
	return rc;
}

static int
check_words(int argc, char *const argv[], struct words *w, char *err, size_t errlen)
{
	struct buf b = { 0 };
	char *text;
	int bad = -1;
	int rc;

	if (argv[0][0] == '\0')
		return refuse_empty_first(err, errlen);
	for (int i = 0; i < argc && bad < 0; i++) {
		if (word_op(argv[i]) != OP_NONE)
			bad = i;
	}
	if (bad >= 0 || assignment_len(argv[0])) {
		put_shell_words(&b, argc, argv);
		text = buf_take(&b);
		if (!text) {
			log_errbuf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		if (assignment_len(argv[0]))
			rc = refuse_assignment(err, errlen, argv[0], text, bad < 0);
		else
			rc = refuse_op(err, errlen, word_op(argv[bad]), argv[bad], text);
		free(text);
		return rc;
	}
	for (int i = 0; i < argc; i++) {
		rc = words_push(w, strdup(argv[i]));
		if (rc < 0) {
			log_errbuf(err, errlen, "out of memory");
			return rc;
		}
	}
	return 0;
}

int
cmdline_check(int argc, char *const argv[], char ***out, char *err, size_t errlen)
{
	struct words w = { 0 };
	int rc;

	*out = NULL;
	if (argc <= 0 || !argv || !argv[0])
		return refuse_empty(err, errlen);
	if (argc == 1 && has_blank(argv[0]))
		rc = check_line(argv[0], &w, err, errlen);
	else
		rc = check_words(argc, argv, &w, err, errlen);
	if (rc < 0) {
		cmdline_free(w.v);
		return rc;
	}
	*out = w.v;
	return 0;
}

/* ---- what a command runs ------------------------------------------------------- */

/* A command that runs the rest of its words as a command. */
struct wrapper {
	const char *name;
	const char *argopts;    /* short options that take a value */
	const char *lookopts;   /* short options with which it runs nothing */
	int operands;           /* words before the command (timeout's DURATION) */
	bool assignments;       /* NAME=VALUE words before the command (env) */
};

static const struct wrapper wrappers[] = {
	{ "env", "uSC", "", 0, true },
	{ "exec", "a", "", 0, false },
	{ "command", "", "vV", 0, false },
	{ "nohup", "", "", 0, false },
	{ "time", "fo", "", 0, false },
	{ "nice", "n", "", 0, false },
	{ "timeout", "sk", "", 1, false },
	{ "stdbuf", "ioe", "", 0, false },
	{ "setsid", "", "", 0, false },
};

static const char *
base_name(const char *path)
{
	const char *b = strrchr(path, '/');

	return b ? b + 1 : path;
}

static bool
word_in(const char *w, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(w, list[i]) == 0)
			return true;
	return false;
}

/* Past wrapper WR's options and operands, from W[I]; N when what follows
 * runs nothing (command -v). */
static size_t
past_wrapper(char *const *w, size_t n, size_t i, const struct wrapper *wr)
{
	while (i < n && w[i][0] == '-' && w[i][1]) {
		const char *o = w[i++];

		if (strcmp(o, "--") == 0)
			break;
		if (o[1] == '-')
			continue;       /* a long option: its value joined with '=' */
		for (size_t j = 1; o[j]; j++) {
			if (strchr(wr->lookopts, o[j]))
				return n;
			if (strchr(wr->argopts, o[j])) {
				if (!o[j + 1] && i < n)
					i++;    /* its value is the next word */
				break;
			}
		}
	}
	for (int k = 0; k < wr->operands && i < n; k++)
		i++;
	while (wr->assignments && i < n && assignment_len(w[i]))
		i++;
	return i;
}

size_t
cmdline_command_index(char *const *w, size_t n, bool script)
{
	/* reserved words after which a command follows, and those that open
	 * a construct whose next words are no command (for NAME in WORDS) */
	static const char *const before[] = {
		"!", "{", "}", "if", "then", "else", "elif", "fi", "do", "done",
		"while", "until", "esac",
	};
	static const char *const none[] = { "for", "case", "select", "function", "coproc", "in" };
	size_t i = 0;

	while (i < n) {
		const struct wrapper *wr = NULL;

		if (script && (assignment_len(w[i]) ||
		               word_in(w[i], before, sizeof(before) / sizeof(before[0])))) {
			i++;
			continue;
		}
		if (script && word_in(w[i], none, sizeof(none) / sizeof(none[0])))
			return n;
		for (size_t k = 0; k < sizeof(wrappers) / sizeof(wrappers[0]) && !wr; k++)
			if (strcmp(base_name(w[i]), wrappers[k].name) == 0)
				wr = &wrappers[k];
		if (!wr)
			return i;
		i = past_wrapper(w, n, i + 1, wr);
	}
	return n;
}

/* A POSIX-like shell that takes a script with -c. */
static bool
is_shell(const char *word)
{
	static const char *const shells[] = { "sh", "bash", "dash", "zsh", "ksh", "mksh", "ash" };

	return word_in(base_name(word), shells, sizeof(shells) / sizeof(shells[0]));
}

size_t
cmdline_shell_script(char *const *argv, size_t *shell)
{
	bool c = false;
	size_t n = 0, sh, i;

	while (argv && argv[n])
		n++;
	sh = cmdline_command_index(argv, n, false);
	if (sh >= n || !is_shell(argv[sh]))
		return 0;
	for (i = sh + 1; i < n; i++) {
		const char *w = argv[i];

		if (strcmp(w, "-") == 0 || strcmp(w, "--") == 0) {
			i++;            /* the end of the options */
			break;
		}
		if ((w[0] != '-' && w[0] != '+') || !w[1])
			break;
		if (w[1] == '-') {
			/* bash's long options; two take the next word */
			if ((strcmp(w, "--rcfile") == 0 || strcmp(w, "--init-file") == 0) && i + 1 < n)
				i++;
			continue;
		}
		for (size_t j = 1; w[j]; j++) {
			if (w[j] == 'c' && w[0] == '-')
				c = true;
			if ((w[j] == 'o' || w[j] == 'O') && i + 1 < n) {
				i++;    /* -o pipefail, -O extglob */
				break;
			}
		}
	}
	if (!c || i >= n)
		return 0;
	if (shell)
		*shell = sh;
	return i;
}

#define SCRIPT_WORDS 32         /* of a simple command: the command word comes early */
#define SCRIPT_WORD_MAX 256

/* Shell text read word by word, each simple command's first words kept. */
struct script_reader {
	char w[SCRIPT_WORDS][SCRIPT_WORD_MAX];
	char *v[SCRIPT_WORDS + 1];
	size_t n, len;
	bool in_word;
	bool (*fn)(const char *word);
	bool commands;          /* FN sees command words only, else every word */
};

static void
reader_put(struct script_reader *r, char c)
{
	size_t at = r->commands ? r->n : 0;

	r->in_word = true;
	if (at < SCRIPT_WORDS && r->len < SCRIPT_WORD_MAX - 1)
		r->w[at][r->len++] = c;
}

/* The end of a word; true when FN took it (every word). */
static bool
reader_word(struct script_reader *r)
{
	bool hit = false;

	if (!r->in_word)
		return false;
	if (!r->commands) {
		r->w[0][r->len] = '\0';  /* every word in turn, none kept */
		hit = r->fn(r->w[0]);
	} else if (r->n < SCRIPT_WORDS) {
		r->w[r->n][r->len] = '\0';
		r->v[r->n] = r->w[r->n];
		r->n++;
	}
	r->len = 0;
	r->in_word = false;
	return hit;
}

/* The end of a simple command; true when FN took its command word. */
static bool
reader_command(struct script_reader *r)
{
	size_t n = r->n, i;

	r->n = 0;
	if (!r->commands)
		return false;
	r->v[n] = NULL;
	i = cmdline_command_index(r->v, n, true);
	return i < n && r->fn(r->v[i]);
}

static bool
read_script(const char *script, struct script_reader *r)
{
	char quote = 0;

	for (const char *s = script;; s++) {
		char ch = *s;

		if (ch && quote) {
			if (ch == quote)
				quote = 0;
			else if (quote == '"' && ch == '\\' && s[1] && strchr("$`\"\\", s[1]))
				reader_put(r, *++s);
			else
				reader_put(r, ch);
			continue;
		}
		if (!ch || strchr(" \t;&|()`\n", ch)) {
			bool blank = ch == ' ' || ch == '\t';

			if (reader_word(r) || (!blank && reader_command(r)))
				return true;
			if (!ch)
				return false;
		} else if (ch == '#' && !r->in_word) {
			while (s[1] && s[1] != '\n')
				s++;    /* a comment, to the end of its line */
		} else if (ch == '\'' || ch == '"') {
			quote = ch;
			r->in_word = true;
		} else if (ch == '\\' && s[1]) {
			if (*++s != '\n')       /* backslash-newline joins lines */
				reader_put(r, *s);
		} else {
			reader_put(r, ch);
		}
	}
}

bool
cmdline_any_command_word(const char *script, bool (*fn)(const char *word))
{
	struct script_reader r = { .fn = fn, .commands = true };

	return read_script(script, &r);
}

bool
cmdline_any_script_word(const char *script, bool (*fn)(const char *word))
{
	struct script_reader r = { .fn = fn, .commands = false };

	return read_script(script, &r);
}
