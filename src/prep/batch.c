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

#include "conf/opts.h"
#include "lib/json.h"
#include "lib/safepath.h"
#include "lib/util.h"
#include "prep/batch.h"

/* The whole file, NUL-terminated; NULL with errno (EFBIG when too large). */
static char *
slurp(const char *file)
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

		if (fstat(fd, &st) == 0)
			e = S_ISREG(st.st_mode) ? EFBIG : EINVAL;
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
	if (out && out[0] != '/') {
		snprintf(err, errlen, "%s: the output path %s must be absolute", file, out);
		return -EINVAL;
	}
	if (out && asprintf(&t->output, "%s/%s-%d", out, t->name, t->index) < 0) {
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
	cJSON *doc;
	int rc;

	memset(t, 0, sizeof(*t));
	t->index = index;
	text = slurp(file);
	if (!text) {
		rc = -errno;
		snprintf(err, errlen, "cannot read the batch file %s: %s", file,
		         rc == -EFBIG ? "larger than 4 MiB" : rc == -EINVAL ? "not a regular file" :
		         strerror(-rc));
		return rc;
	}
	doc = cJSON_Parse(text);
	if (!cJSON_IsObject(doc)) {
		if (!doc && json_too_deep(text, strlen(text)) < strlen(text))
			snprintf(err, errlen, "%s: nested too deeply (more than %d levels of arrays "
			         "and objects)", file, JSON_NESTING_LIMIT);
		else
			snprintf(err, errlen, "%s: not a JSON object (see --batch in vigil(1))",
			         file);
		free(text);
		cJSON_Delete(doc);
		return -EINVAL;
	}
	free(text);
	rc = take_task(doc, file, t, err, errlen);
	if (rc == 0)
		rc = take_names(doc, file, output, t, err, errlen);
	cJSON_Delete(doc);
	if (rc == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	if (rc < 0)
		batch_task_free(t);
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
