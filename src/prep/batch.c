/*
 * batch.c - one sub-task of a batch file, and where its outputs go.
 */
#include "autoconf.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cJSON.h>

#include "conf/config.h"
#include "conf/opts.h"
#include "lib/json.h"
#include "lib/safepath.h"
#include "lib/util.h"
#include "prep/batch.h"

/* The whole file, NUL-terminated, its length in *LEN; NULL with errno
 * (EFBIG when too large, EISDIR or ENODEV when not a regular file). */
static char *
slurp(const char *file, size_t *lenp)
{
	int fd = open(file, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	struct stat st;
	char *buf;
	ssize_t got;
	size_t len = 0;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > BATCH_FILE_MAX) {
		int e = errno;

		/* not -EINVAL, which is for what the text says */
		if (fstat(fd, &st) == 0)
			e = S_ISREG(st.st_mode) ? EFBIG : S_ISDIR(st.st_mode) ? EISDIR : ENODEV;
		(void)close(fd);
		errno = e;
		return NULL;
	}
	buf = malloc((size_t)st.st_size + 1);
	while (buf && len < (size_t)st.st_size &&
	       (got = read(fd, buf + len, (size_t)st.st_size - len)) > 0)
		len += (size_t)got;
	(void)close(fd);  /* read-only */
	if (buf)
		buf[len] = '\0';
	*lenp = len;
	return buf;
}

/* NAME for a directory name: letters, digits, '-', '_', '.'; not "." or "..". */
static int
name_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 100 || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
		return 0;
	return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") == n;
}

/* The file's name without its directory and extension: "sweep" for "/x/sweep.json". */
static char *
default_name(const char *file)
{
	const char *b = strrchr(file, '/');
	char *name = strdup(b ? b + 1 : file), *dot;

	if (name && (dot = strrchr(name, '.')) && dot != name)
		*dot = '\0';
	return name;
}

/* Keep a message on one line whatever the file's keys and names hold. */
static void
one_line(char *msg)
{
	for (char *c = msg; *c; c++) {
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
	}
}

/* The keys a batch file knows, at its top and in each task. */
static const char *const top_keys[] = { "name", "output", "tasks", NULL };
static const char *const task_keys[] = { "command", "algorithm", NULL };

/* Whether KEY is one of KEYS. */
static int
known(const char *key, const char *const *keys)
{
	for (; *keys; keys++) {
		if (strcmp(key, *keys) == 0)
			return 1;
	}
	return 0;
}

/* "FILE: KEY: unknown key (valid: A, B)"; -EINVAL. */
static int
unknown_key(const char *file, const char *where, const char *key, const char *const *keys,
            char *err, size_t errlen)
{
	char valid[128];
	size_t o = 0;

	valid[0] = '\0';
	for (; *keys && o < sizeof(valid); keys++) {
		int n = snprintf(valid + o, sizeof(valid) - o, "%s%s", o ? ", " : "", *keys);

		if (n < 0)
			break;
		o += (size_t)n;
	}
	snprintf(err, errlen, "%s: %s%.80s: unknown key (valid: %s)", file, where, key, valid);
	return -EINVAL;
}

/*
 * Refuse a key the batch file does not know, in any task: a misspelt
 * "output" or "algorithm" would otherwise run the task elsewhere, its
 * outputs nowhere, and every sub-task of the array should refuse it
 * alike.  0 or -EINVAL with ERR.
 */
static int
check_keys(const cJSON *doc, const char *file, char *err, size_t errlen)
{
	const cJSON *tasks = cJSON_GetObjectItemCaseSensitive(doc, "tasks"), *m, *task, *in;
	char where[32];
	int i = 0;

	cJSON_ArrayForEach(m, doc) {
		if (!known(m->string, top_keys))
			return unknown_key(file, "", m->string, top_keys, err, errlen);
	}
	if (!cJSON_IsArray(tasks))
		return 0;  /* said by take_task() */
	cJSON_ArrayForEach(task, tasks) {
		snprintf(where, sizeof(where), "tasks[%d].", i++);
		in = cJSON_IsObject(task) ? task : NULL;
		cJSON_ArrayForEach(m, in) {
			if (!known(m->string, task_keys))
				return unknown_key(file, where, m->string, task_keys, err, errlen);
		}
	}
	return 0;
}

static int
take_command(const cJSON *cmd, struct batch_task *t)
{
	const cJSON *w;
	int n = cJSON_GetArraySize(cmd), i = 0;

	if (!cJSON_IsArray(cmd) || n < 1 || n > 4096)
		return -EINVAL;
	t->argv = calloc((size_t)n + 1, sizeof(*t->argv));
	if (!t->argv)
		return -ENOMEM;
	cJSON_ArrayForEach(w, cmd) {
		if (!cJSON_IsString(w) || (i == 0 && !w->valuestring[0]))
			return -EINVAL;
		if (!(t->argv[i++] = strdup(w->valuestring)))
			return -ENOMEM;
	}
	t->argc = n;
	return 0;
}

/* The task at T->index of DOC.  0 or -EINVAL with ERR. */
static int
take_task(const cJSON *doc, const char *file, struct batch_task *t, char *err, size_t errlen)
{
	const cJSON *tasks = cJSON_GetObjectItemCaseSensitive(doc, "tasks"), *task;
	const char *alg = NULL;
	int rc;

	t->count = cJSON_GetArraySize(tasks);
	if (!cJSON_IsArray(tasks) || t->count < 1 || t->count > BATCH_TASKS_MAX) {
		snprintf(err, errlen, "%s: \"tasks\" must be an array of 1 to %d sub-tasks", file,
		         BATCH_TASKS_MAX);
		return -EINVAL;
	}
	if (t->index >= t->count) {
		snprintf(err, errlen, "%s: sub-task %d asked for, but the batch has %d (0 to %d)", file,
		         t->index, t->count, t->count - 1);
		return -EINVAL;
	}
	task = cJSON_GetArrayItem(tasks, t->index);
	rc = cJSON_IsObject(task) ? take_command(cJSON_GetObjectItemCaseSensitive(task, "command"),
	                                         t) : -EINVAL;
	if (rc == -EINVAL)
		snprintf(err, errlen, "%s: tasks[%d].command must be an array of strings, the "
		         "program first (e.g. [\"python3\", \"train.py\"])", file, t->index);
	if (rc == 0 && json_get_str(task, "algorithm", &alg) == -EINVAL) {
		snprintf(err, errlen, "%s: tasks[%d].algorithm must be a directory's path", file,
		         t->index);
		rc = -EINVAL;
	}
	if (rc == 0 && alg && alg[0] != '/') {
		snprintf(err, errlen, "%s: tasks[%d].algorithm must be an absolute path", file,
		         t->index);
		rc = -EINVAL;
	}
	if (rc == 0 && alg && !(t->algorithm = strdup(alg)))
		rc = -ENOMEM;
	return rc;
}

/* NAME and OUTPUT/NAME-INDEX. */
static int
take_names(const cJSON *doc, const char *file, const char *output, struct batch_task *t,
           char *err, size_t errlen)
{
	const char *name = json_str(doc, "name", NULL), *out = json_str(doc, "output", NULL);

	if (cJSON_GetObjectItemCaseSensitive(doc, "output") && !out) {
		snprintf(err, errlen, "%s: \"output\" must be a directory's path", file);
		return -EINVAL;
	}
	t->name = name ? strdup(name) : default_name(file);
	if (!t->name)
		return -ENOMEM;
	if (!name_ok(t->name)) {
		snprintf(err, errlen, "%s: the batch's name '%s' may hold letters, digits, '-', '_' "
		         "and '.' only (it names the sub-tasks' output directories)", file, t->name);
		return -EINVAL;
	}
	if (output)
		out = output;
	if (!out) {
		/* the training would write to an empty $VIGIL_OUTPUT_DIR: "/" */
		snprintf(err, errlen, "%s: no output directory for the sub-tasks: give \"output\" "
		         "in the file or --output-dir DIR (sub-task N writes to OUTPUT/%s-N, in "
		         "VIGIL_OUTPUT_DIR)", file, t->name);
		return -EINVAL;
	}
	if (out[0] != '/') {
		snprintf(err, errlen, "%s: the output path %s must be absolute", file, out);
		return -EINVAL;
	}
	if (asprintf(&t->output, "%s/%s-%d", out, t->name, t->index) < 0) {
		t->output = NULL;
		return -ENOMEM;
	}
	return 0;
}

int
batch_load(const char *file, int index, const char *output, struct batch_task *t, char *err,
           size_t errlen)
{
	char *text;
	cJSON *doc = NULL;
	size_t len = 0;
	int rc;

	memset(t, 0, sizeof(*t));
	t->index = index;
	text = slurp(file, &len);
	if (!text) {
		rc = -errno;
		snprintf(err, errlen, "cannot read the batch file %s: %s", file,
		         rc == -EFBIG ? "larger than 4 MiB" :
		         rc == -EISDIR || rc == -ENODEV ? "not a regular file" : strerror(-rc));
		return rc;
	}
	/* the configuration's parser: a mistake is named by line and column */
	rc = config_parse_json(text, len, file, &doc, err, errlen);
	free(text);
	if (rc == 0)
		rc = check_keys(doc, file, err, errlen);
	if (rc == 0)
		rc = take_task(doc, file, t, err, errlen);
	if (rc == 0)
		rc = take_names(doc, file, output, t, err, errlen);
	cJSON_Delete(doc);
	if (rc == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	if (rc < 0) {
		one_line(err);
		batch_task_free(t);
	}
	return rc;
}

int
batch_check_algorithm(const struct batch_task *t, const char *file, const char *node, char *err,
                      size_t errlen)
{
	struct stat st;
	int rc = 0;

	if (!t->algorithm)
		return 0;
	/* Checked before the launch: a chdir() failing in the child would
	 * be reported as the command's own failure (127), naming no
	 * directory. */
	if (stat(t->algorithm, &st) < 0)
		rc = -errno;
	else if (!S_ISDIR(st.st_mode))
		rc = -ENOTDIR;
	else if (access(t->algorithm, X_OK) < 0)
		rc = -errno;
	if (rc < 0) {
		snprintf(err, errlen, "%s: sub-task %d's algorithm directory %s on %s: %s "
		         "(tasks[%d].algorithm, the command's working directory, must be a "
		         "directory on every node)", file, t->index, t->algorithm, node,
		         strerror(-rc), t->index);
		one_line(err);
	}
	return rc;
}

int
batch_index(int opt, int *index, char *err, size_t errlen)
{
	const char *env = getenv("SLURM_ARRAY_TASK_ID");
	long long v;

	if (opt >= 0) {
		*index = opt;
		return 0;
	}
	if (!env || !*env) {
		snprintf(err, errlen, "--batch needs the sub-task: --batch-index N, or run it as a "
		         "Slurm job array (sbatch --array=0-N), which sets SLURM_ARRAY_TASK_ID");
		return -EINVAL;
	}
	if (opts_count(env, 0, BATCH_TASKS_MAX, &v) < 0) {
		snprintf(err, errlen, "SLURM_ARRAY_TASK_ID is '%.40s', not a sub-task's number", env);
		return -EINVAL;
	}
	*index = (int)v;
	return 0;
}

int
batch_make_output(const char *dir, char *err, size_t errlen)
{
	struct safepath_dir d;
	char why[PATH_MAX + 200];
	int rc;

	/* The same rules as the run directory's: the training writes here
	 * as the agent's user, root too, so nothing on the way may be
	 * another user's to re-point, and the directory is the user's. */
	rc = safepath_dir_open(dir, SAFEPATH_MKDIR | SAFEPATH_PARENTS | SAFEPATH_OWN, 0755, &d,
	                       why, sizeof(why));
	if (rc < 0) {
		snprintf(err, errlen, "the output directory %s refused: %s: use a directory of "
		         "your own, through directories of your own or root's, none a link", dir,
		         why);
		return rc;
	}
	safepath_dir_close(&d);
	return 0;
}

int
batch_setenv(const struct batch_task *t, const char *output)
{
	char n[32], c[32];

	if (t) {
		snprintf(n, sizeof(n), "%d", t->index);
		snprintf(c, sizeof(c), "%d", t->count);
		if (setenv("VIGIL_BATCH_NAME", t->name, 1) < 0 ||
		    setenv("VIGIL_BATCH_INDEX", n, 1) < 0 || setenv("VIGIL_BATCH_COUNT", c, 1) < 0)
			return -errno;
	}
	if (output && setenv("VIGIL_OUTPUT_DIR", output, 1) < 0)
		return -errno;
	return 0;
}

void
batch_task_free(struct batch_task *t)
{
	for (int i = 0; t->argv && t->argv[i]; i++)
		free(t->argv[i]);
	free(t->argv);
	free(t->name);
	free(t->algorithm);
	free(t->output);
	memset(t, 0, sizeof(*t));
}
