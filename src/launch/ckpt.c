/*
 * ckpt.c - the evidence of a saved checkpoint (see ckpt.h).
 */
#include "autoconf.h"

#include <errno.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "launch/ckpt.h"
#include "lib/log.h"
#include "lib/sig.h"

enum kind { BY_EXIT, BY_FILE, BY_OUTPUT };

/* What the file was when the signal went out; a difference is a save. */
struct file_state {
	bool exists;
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
};

struct ckpt_confirm {
	enum kind kind;
	char *path;             /* BY_FILE */
	char *pattern;          /* BY_OUTPUT, as given */
	regex_t re;             /* BY_OUTPUT */
	bool started;
	bool confirmed;
	struct file_state before;
};

/* Lines longer than this are matched on their first part only. */
#define LINE_MAX_MATCH 4096

int
ckpt_confirm_new(const char *spec, struct ckpt_confirm **out, char *err, size_t errlen)
{
	struct ckpt_confirm *c;
	int rc;

	*out = NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	if (!spec || !*spec) {
		c->kind = BY_EXIT;
	} else if (strncmp(spec, "file:", 5) == 0 && spec[5]) {
		c->kind = BY_FILE;
		c->path = strdup(spec + 5);
		if (!c->path)
			goto nomem;
	} else if (strncmp(spec, "output:", 7) == 0 && spec[7]) {
		c->kind = BY_OUTPUT;
		c->pattern = strdup(spec + 7);
		if (!c->pattern)
			goto nomem;
		rc = regcomp(&c->re, c->pattern, REG_EXTENDED | REG_NOSUB);
		if (rc != 0) {
			char msg[128];

			regerror(rc, &c->re, msg, sizeof(msg));
			log_errbuf(err, errlen, "--ckpt-confirm: \"%s\" is not a regular expression: %s",
			           c->pattern, msg);
			free(c->pattern);
			free(c);
			return -EINVAL;
		}
	} else {
		log_errbuf(err, errlen, "--ckpt-confirm: \"%s\" is neither file:PATH nor output:REGEX",
		           spec);
		free(c);
		return -EINVAL;
	}
	*out = c;
	return 0;
nomem:
	free(c);
	log_errbuf(err, errlen, "out of memory");
	return -ENOMEM;
}

void
ckpt_confirm_free(struct ckpt_confirm *c)
{
	if (!c)
		return;
	if (c->kind == BY_OUTPUT)
		regfree(&c->re);
	free(c->pattern);
	free(c->path);
	free(c);
}

static void
file_state(const char *path, struct file_state *s)
{
	struct stat st;

	memset(s, 0, sizeof(*s));
	if (stat(path, &st) < 0)
		return;         /* absent (or unreadable): its appearance is a save */
	s->exists = true;
	s->dev = st.st_dev;
	s->ino = st.st_ino;
	s->size = st.st_size;
	s->mtime = st.st_mtim;
}

void
ckpt_confirm_start(struct ckpt_confirm *c)
{
	c->started = true;
	c->confirmed = false;
	if (c->kind == BY_FILE)
		file_state(c->path, &c->before);
}

bool
ckpt_confirm_line(struct ckpt_confirm *c, const char *line, size_t len)
{
	char buf[LINE_MAX_MATCH + 1];

	if (!c->started || c->confirmed || c->kind != BY_OUTPUT)
		return c->confirmed;
	if (len > LINE_MAX_MATCH)
		len = LINE_MAX_MATCH;
	memcpy(buf, line, len);
	buf[len] = '\0';
	/* A NUL inside the line ends it for the match: what follows a NUL
	 * is not text a training prints on purpose. */
	c->confirmed = regexec(&c->re, buf, 0, NULL, 0) == 0;
	return c->confirmed;
}

bool
ckpt_confirm_poll(struct ckpt_confirm *c)
{
	struct file_state now;

	if (!c->started || c->confirmed || c->kind != BY_FILE)
		return c->confirmed;
	file_state(c->path, &now);
	c->confirmed = now.exists &&
	               (!c->before.exists || now.dev != c->before.dev || now.ino != c->before.ino ||
	                now.size != c->before.size || now.mtime.tv_sec != c->before.mtime.tv_sec ||
	                now.mtime.tv_nsec != c->before.mtime.tv_nsec);
	return c->confirmed;
}

bool
ckpt_confirmed(const struct ckpt_confirm *c)
{
	return c->confirmed;
}

bool
ckpt_confirm_verdict(struct ckpt_confirm *c, bool exited, int wait_status, int ckpt_signal,
                     char *why, size_t len)
{
	if (c->kind == BY_FILE)
		(void)ckpt_confirm_poll(c);   /* the last rename may have come just before the exit */
	if (c->kind == BY_FILE || c->kind == BY_OUTPUT) {
		if (c->confirmed)
			snprintf(why, len, "%s", c->kind == BY_FILE ? "the checkpoint file changed"
			                                            : "the training printed the save line");
		else if (c->kind == BY_FILE)
			snprintf(why, len, "%s did not change after the checkpoint signal", c->path);
		else
			snprintf(why, len, "no output line matched \"%s\" after the checkpoint signal",
			         c->pattern);
		return c->confirmed;
	}
	if (!c->started) {
		snprintf(why, len, "no checkpoint signal was sent");
		return false;
	}
	if (!exited) {
		snprintf(why, len, "the training did not exit within the grace period");
		return false;
	}
	if (WIFSIGNALED(wait_status)) {
		int sig = WTERMSIG(wait_status);

		snprintf(why, len, "died of %s%s", sig_name(sig),
		         sig == ckpt_signal ? ": no handler for the checkpoint signal" : "");
		return false;
	}
	if (WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0) {
		c->confirmed = true;
		snprintf(why, len, "exit status 0 after the checkpoint signal");
		return true;
	}
	snprintf(why, len, "exit status %d after the checkpoint signal",
	         WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -1);
	return false;
}
