/*
 * trust.c - judging the files a shell command line would run (trust.h).
 */
#include "autoconf.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/safepath.h"
#include "proc/trust.h"

enum { WORD_END = 0, WORD_OK = 1, WORD_UNKNOWN = -1 };

/*
 * The next word of the simple command at *S into BUF (LEN bytes), with
 * quotes and backslashes taken as the shell takes them.  WORD_OK, WORD_END
 * at the end or at an operator or redirection (the command's words are
 * over), or WORD_UNKNOWN for a word the shell would expand.
 */
static int
next_word(const char **s, char *buf, size_t len)
{
	const char *p = *s;
	size_t n = 0;
	char quote = 0;

	while (*p == ' ' || *p == '\t')
		p++;
	if (!*p || strchr(";&|<>()\n#", *p))
		return WORD_END;
	if (*p == '~')
		return WORD_UNKNOWN;
	for (; *p; p++) {
		char c = *p;

		if (!quote && strchr(" \t;&|<>()\n", c))
			break;
		if (quote == '\'') {
			if (c == '\'') {
				quote = 0;
				continue;
			}
		} else if (quote == '"') {
			if (c == '"') {
				quote = 0;
				continue;
			}
			if (c == '$' || c == '`')
				return WORD_UNKNOWN;
			if (c == '\\' && p[1] && strchr("$`\"\\", p[1]))
				c = *++p;
		} else {
			if (c == '\'' || c == '"') {
				quote = c;
				continue;
			}
			if (strchr("$`*?[", c))
				return WORD_UNKNOWN;
			if (c == '\\' && p[1])
				c = *++p;
		}
		if (n + 1 >= len)
			return WORD_UNKNOWN;  /* longer than any path: not ours to guess */
		buf[n++] = c;
	}
	if (quote)
		return WORD_UNKNOWN;
	buf[n] = '\0';
	*s = p;
	return WORD_OK;
}

/* NAME=VALUE, a shell assignment before the command. */
static bool
assignment(const char *w)
{
	size_t n = strspn(w, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_0123456789");

	return n > 0 && w[n] == '=' && !(w[0] >= '0' && w[0] <= '9');
}

static bool
interpreter(const char *base)
{
	static const char *const names[] = {
		"sh", "bash", "dash", "ksh", "zsh", "python", "python3", "perl", "ruby",
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(base, names[i]) == 0)
			return true;
	return strncmp(base, "python3.", 8) == 0;
}

/* FILE, as a program or script root would run: 0 or why not. */
static int
judge(const char *file, char *why, size_t whylen)
{
	struct stat st;
	int fd;

	/* O_PATH: judged without opening it for real (a device's open
	 * could do something) */
	fd = safepath_file_open(file, SAFEPATH_FOLLOW, O_PATH, &st, why, whylen);
	if (fd == -EPERM || fd == -EACCES || fd == -ELOOP)
		return fd;
	if (fd < 0)
		return 0;  /* missing or unreadable: the shell says so when it runs it */
	(void)close(fd);
	if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
		snprintf(why, whylen, "%s is not a regular file", file);
		return -EPERM;
	}
	return 0;
}

/* The first word that is not an assignment, into W: WORD_* as next_word(). */
static int
command_word(const char **s, char *w, size_t len)
{
	int rc;

	while ((rc = next_word(s, w, len)) == WORD_OK && assignment(w))
		;
	return rc;
}

int
trust_command(const char *command, char *why, size_t whylen)
{
	char prog[PATH_MAX], script[PATH_MAX];
	const char *s = command, *base;
	int rc;

	if (geteuid() != 0 || !command)
		return 0;
	rc = command_word(&s, prog, sizeof(prog));
	if (rc == WORD_OK && strcmp(prog, "exec") == 0)
		rc = command_word(&s, prog, sizeof(prog));
	for (int hops = 0; rc == WORD_OK && hops < 2; hops++) {
		if (strchr(prog, '/') && (rc = judge(prog, why, whylen)) < 0)
			return rc;
		base = strrchr(prog, '/') ? strrchr(prog, '/') + 1 : prog;
		if (strcmp(base, "env") == 0) {
			rc = command_word(&s, prog, sizeof(prog));
			continue;
		}
		if (interpreter(base) && next_word(&s, script, sizeof(script)) == WORD_OK &&
		    script[0] != '-')
			return judge(script, why, whylen);
		break;
	}
	return 0;
}
