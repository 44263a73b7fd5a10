/*
 * modes.c - each training mode's environment, files and command, as the
 * platform manual ("分布式模式说明") defines them; modes.h says what each
 * mode sets and runs, and why.
 *
 * Every mode exports the manual's five PyTorch variables (MASTER_ADDR,
 * MASTER_PORT, WORLD_SIZE = number of nodes, RANK = node rank, SLOTS =
 * accelerators on this node, 1 on a CPU node), harmless where a mode does
 * not read them, plus VIGIL_MODE, VIGIL_NODE_RANK and VIGIL_WORLD_SIZE,
 * which launchers cannot overwrite (torch.distributed.run sets its own RANK
 * and WORLD_SIZE for each process it starts).
 */
#include "autoconf.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include <cJSON.h>

#include "launch/cmdline.h"
#include "launch/modes.h"
#include "lib/json.h"
#include "lib/log.h"
#include "lib/util.h"

static const char *const names[] = { "single", "pytorch", "deepspeed", "horovod", "tensorflow" };

const char *
mode_name(enum mode m)
{
	if ((unsigned)m >= sizeof(names) / sizeof(names[0]))
		return "?";
	return names[m];
}

int
mode_parse(const char *s, enum mode *out)
{
	for (size_t i = 0; s && i < sizeof(names) / sizeof(names[0]); i++) {
		if (strcmp(s, names[i]) == 0) {
			*out = (enum mode)i;
			return 0;
		}
	}
	return -EINVAL;
}

/*
 * A NULL-terminated list of strings it owns.  A failed allocation sticks
 * (nomem) and later additions are dropped, so a builder checks once at
 * the end instead of after every line.
 */
struct strv {
	char **v;
	size_t n;
	size_t cap;
	bool nomem;
};

/* Appends S, owned from now on; S NULL means an allocation failed. */
static void
strv_add(struct strv *s, char *str)
{
	if (!str)
		s->nomem = true;
	if (s->nomem) {
		free(str);
		return;
	}
	if (s->n + 2 > s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		char **v = realloc(s->v, cap * sizeof(*v));

		if (!v) {
			s->nomem = true;
			free(str);
			return;
		}
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = str;
	s->v[s->n] = NULL;
}

static char *
strf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static char *
strf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return NULL;
	s = malloc((size_t)n + 1);
	if (!s)
		return NULL;
	va_start(ap, fmt);
	vsnprintf(s, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return s;
}

static void
strv_free(struct strv *s)
{
	cmdline_free(s->v);
	memset(s, 0, sizeof(*s));
}

/* The list, NULL-terminated even when empty; NULL (and freed) on ENOMEM. */
static char **
strv_take(struct strv *s)
{
	char **v;

	if (!s->nomem && !s->v) {
		s->v = calloc(1, sizeof(*s->v));
		if (!s->v)
			s->nomem = true;
	}
	if (s->nomem) {
		strv_free(s);
		return NULL;
	}
	v = s->v;
	memset(s, 0, sizeof(*s));
	return v;
}

static size_t
key_len(const char *entry)
{
	return strcspn(entry, "=");
}

static bool
has_key(const char *entry, const char *key, size_t klen)
{
	return key_len(entry) == klen && strncmp(entry, key, klen) == 0;
}

/* KEY's value in ENVP (the first entry, as getenv() finds it), or NULL. */
static const char *
env_get(char *const *envp, const char *key, size_t klen)
{
	for (size_t i = 0; envp && envp[i]; i++) {
		if (has_key(envp[i], key, klen))
			return envp[i][klen] == '=' ? envp[i] + klen + 1 : "";
	}
	return NULL;
}

const char *
mode_torch_name(enum mode_torch t)
{
	return t == MODE_TORCH_RUN ? "run" : t == MODE_TORCH_LAUNCH ? "launch" : "auto";
}

int
mode_torch_parse(const char *s, enum mode_torch *out)
{
	if (s && strcmp(s, "auto") == 0)
		*out = MODE_TORCH_AUTO;
	else if (s && strcmp(s, "launch") == 0)
		*out = MODE_TORCH_LAUNCH;
	else if (s && strcmp(s, "run") == 0)
		*out = MODE_TORCH_RUN;
	else
		return -EINVAL;
	return 0;
}

static bool
starts_with(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Whether ENTRY's key is exactly KEY. */
static bool
key_is(const char *entry, const char *key)
{
	size_t n = strlen(key);

	return strncmp(entry, key, n) == 0 && (entry[n] == '=' || entry[n] == '\0');
}

/*
 * The outer job's identity, as observed in the environment of a process
 * started by Open MPI 4.1's mpirun and by MPICH 4.0's Hydra, and as
 * ORTE's launcher (orte/mca/odls, orte/mca/schizo/ompi) writes it: where
 * the process sits in that job, how to reach its daemons, its session
 * directories.  A training that inherited them would call MPI_Init as a
 * member of the agents' job (and fail, leaving the agents' MPI_Finalize
 * waiting), and an mpirun inside it would take itself for a process of
 * the outer job.  Removing them makes MPI_Init a singleton and an inner
 * mpirun a fresh job.
 *
 * Everything else stays: OMPI_ALLOW_RUN_AS_ROOT*, OMPI_MCA_* settings
 * (btl_tcp_if_exclude, plm_rsh_agent, ...; mpirun forwards the ones it
 * was given, which are the user's and the site's), PMIX_MCA_* settings,
 * MPIR_CVAR_* settings, OPAL_PREFIX.  Among OMPI_MCA_orte_*, which ORTE
 * uses for per-job state, the parameters users set are kept
 * (orte_tmpdir_base, which mpirun also sets by itself, is weighed by
 * mode_env_kept()).
 */
bool
mode_is_job_identity(const char *e)
{
	static const char *const exact[] = {
		/* Open MPI (ORTE) */
		"OMPI_UNIVERSE_SIZE", "OMPI_APP_CTX_NUM_PROCS", "OMPI_NUM_APP_CTX",
		"OMPI_FIRST_RANKS", "OMPI_ARGV", "OMPI_COMMAND", "OMPI_FILE_LOCATION",
		"OMPI_MCA_ess", "OMPI_MCA_pmix", "OMPI_MCA_initial_wdir",
		"OMPI_MCA_shmem_RUNTIME_QUERY_hint", "OMPI_MCA_mpi_oversubscribe",
		/* MPICH (Hydra) */
		"MPI_LOCALRANKID", "MPI_LOCALNRANKS", "MPIR_CVAR_CH3_INTERFACE_HOSTNAME",
	};
	static const char *const orte_settings[] = {
		"OMPI_MCA_orte_default_hostfile", "OMPI_MCA_orte_default_dash_host",
		"OMPI_MCA_orte_keep_fqdn_hostnames", "OMPI_MCA_orte_tmpdir_base",
	};

	for (size_t i = 0; i < sizeof(exact) / sizeof(exact[0]); i++)
		if (key_is(e, exact[i]))
			return true;
	if (starts_with(e, "OMPI_COMM_WORLD_") || starts_with(e, "OMPI_MCA_ess_") ||
	    starts_with(e, "HYDI_") || starts_with(e, "PMI_"))
		return true;
	if (starts_with(e, "PMIX_"))
		return !starts_with(e, "PMIX_MCA_");
	if (starts_with(e, "OMPI_MCA_orte_")) {
		for (size_t i = 0; i < sizeof(orte_settings) / sizeof(orte_settings[0]); i++)
			if (key_is(e, orte_settings[i]))
				return false;
		return true;
	}
	return false;
}

/*
 * What Open MPI's launcher chooses for orte_tmpdir_base when nobody set
 * it, on a node with environment ENVP: opal_tmp_directory() (opal/util/
 * os_path.c), the first of TMPDIR, TEMP and TMP that is set, else /tmp.
 * mpirun and orted pass their value to every process they start
 * (OMPI_MCA_orte_tmpdir_base, with the session directories under it).
 */
static const char *
ompi_default_tmpdir(char *const *envp)
{
	static const char *const vars[] = { "TMPDIR", "TEMP", "TMP" };

	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		const char *v = env_get(envp, vars[i], strlen(vars[i]));

		if (v)
			return v;
	}
	return "/tmp";
}

bool
mode_env_kept(const char *e, char *const *envp)
{
	static const char tmpdir[] = "OMPI_MCA_orte_tmpdir_base";

	if (mode_is_job_identity(e) || key_is(e, "PMIX_MCA_mca_base_component_show_load_errors"))
		return false;
	if (key_is(e, tmpdir)) {
		const char *v = e[sizeof(tmpdir) - 1] == '=' ? e + sizeof(tmpdir) : "";

		return strcmp(v, ompi_default_tmpdir(envp)) != 0;
	}
	return true;
}

static const char *
base_name(const char *path)
{
	const char *b = strrchr(path, '/');

	return b ? b + 1 : path;
}

/* An MPI launcher's name: mpirun, mpiexec, orterun, horovodrun, srun
 * (Slurm starts the ranks itself), or one of the names Debian and the MPI
 * libraries install them under (mpirun.openmpi, mpiexec.hydra, ...), with
 * or without a directory. */
static bool
is_mpi_launcher(const char *word)
{
	static const char *const launchers[] = { "mpirun", "mpiexec", "orterun", "horovodrun", "srun" };
	static const char *const suffixes[] = {
		"openmpi", "mpich", "hydra", "slurm", "gforker", "remshell", "mpd",
	};
	const char *b = base_name(word);

	for (size_t i = 0; i < sizeof(launchers) / sizeof(launchers[0]); i++) {
		size_t n = strlen(launchers[i]);

		if (strncmp(b, launchers[i], n) != 0)
			continue;
		if (b[n] == '\0')
			return true;
		for (size_t j = 0; b[n] == '.' && j < sizeof(suffixes) / sizeof(suffixes[0]); j++)
			if (strcmp(b + n + 1, suffixes[j]) == 0)
				return true;
	}
	return false;
}

bool
mode_launches_mpi(char *const *argv)
{
	size_t n = 0, cmd, script;

	while (argv && argv[n])
		n++;
	cmd = cmdline_command_index(argv, n, false);
	if (cmd < n && is_mpi_launcher(argv[cmd]))
		return true;
	script = cmdline_shell_script(argv, NULL);
	return script && cmdline_any_command_word(argv[script], is_mpi_launcher);
}

/* The variable that selects the boards a process may use, by vendor. */
static const char *
visible_var(const char *vendor)
{
	if (!vendor)
		return NULL;
	if (strcmp(vendor, "nvidia") == 0)
		return "CUDA_VISIBLE_DEVICES";
	/* ROCR_VISIBLE_DEVICES filters at the ROCm runtime, below HIP and
	 * OpenCL alike.  HIP_VISIBLE_DEVICES is left alone: it indexes into
	 * what ROCR already lets through, so the same list there would be
	 * wrong whenever ROCR_VISIBLE_DEVICES names boards other than 0..N-1. */
	if (strcmp(vendor, "amd") == 0)
		return "ROCR_VISIBLE_DEVICES";
	if (strcmp(vendor, "cambricon") == 0)
		return "MLU_VISIBLE_DEVICES";
	return NULL;
}

/* Entries in a comma-separated device list ("" has none). */
static int
count_list(const char *s)
{
	int n = 0;

	while (*s) {
		size_t len = strcspn(s, ",");

		if (len > 0)
			n++;
		s += len;
		if (*s == ',')
			s++;
	}
	return n;
}

/* "0,1,...,N-1" */
static char *
device_list(int n)
{
	char *s = malloc((size_t)n * 12 + 1);
	size_t o = 0;

	if (!s)
		return NULL;
	s[0] = '\0';
	for (int i = 0; i < n; i++)
		o += (size_t)sprintf(s + o, i ? ",%d" : "%d", i);
	return s;
}


static bool
valid_port(int port)
{
	return port > 0 && port <= 65535;
}

int
mode_check_nodes(enum mode m, int ps, int nnodes, char *err, size_t errlen)
{
	if (m == MODE_SINGLE && nnodes != 1) {
		log_errbuf(err, errlen, "single mode runs on one node; got %d", nnodes);
		return -EINVAL;
	}
	if (m == MODE_TENSORFLOW && ps >= nnodes && ps >= 0) {
		log_errbuf(err, errlen, "tensorflow: --ps %d leaves no worker among %d nodes", ps,
		           nnodes);
		return -EINVAL;
	}
	return 0;
}

static int
check_plan(const struct mode_plan *p, char *err, size_t errlen)
{
	if ((unsigned)p->mode >= sizeof(names) / sizeof(names[0])) {
		log_errbuf(err, errlen, "unknown mode %d", (int)p->mode);
		return -EINVAL;
	}
	if (!p->nodes || p->nnodes < 1) {
		log_errbuf(err, errlen, "%s: no nodes to run on", mode_name(p->mode));
		return -EINVAL;
	}
	if (p->node_rank < 0 || p->node_rank >= p->nnodes) {
		log_errbuf(err, errlen, "%s: node rank %d is not among %d nodes",
		        mode_name(p->mode), p->node_rank, p->nnodes);
		return -EINVAL;
	}
	for (int i = 0; i < p->nnodes; i++) {
		const struct mode_node *n = &p->nodes[i];

		if (!n->host || !n->host[0]) {
			log_errbuf(err, errlen, "%s: node rank %d has no host name", mode_name(p->mode), i);
			return -EINVAL;
		}
		if (n->slots < 1) {
			log_errbuf(err, errlen, "%s: node %s has %d slots; a node has at least 1",
			        mode_name(p->mode), n->host, n->slots);
			return -EINVAL;
		}
	}
	if (!p->argv || !p->argv[0]) {
		log_errbuf(err, errlen, "%s: no command to run", mode_name(p->mode));
		return -EINVAL;
	}
	if (!p->master_addr || !p->master_addr[0]) {
		log_errbuf(err, errlen, "%s: no master address", mode_name(p->mode));
		return -EINVAL;
	}
	if (!valid_port(p->master_port)) {
		log_errbuf(err, errlen, "%s: master port %d is out of range (1-65535)",
		        mode_name(p->mode), p->master_port);
		return -EINVAL;
	}
	switch (p->mode) {
	case MODE_SINGLE:
		if (mode_check_nodes(p->mode, p->ps, p->nnodes, err, errlen) < 0)
			return -EINVAL;
		break;
	case MODE_DEEPSPEED:
	case MODE_HOROVOD:
		if (!p->hostfile || !p->hostfile[0] ||
		    (p->mode == MODE_HOROVOD && (!p->mpich_hostfile || !p->mpich_hostfile[0]))) {
			log_errbuf(err, errlen, "%s: no hostfile path", mode_name(p->mode));
			return -EINVAL;
		}
		break;
	case MODE_TENSORFLOW:
		if (p->ps < 0) {
			log_errbuf(err, errlen, "tensorflow: --ps %d is negative", p->ps);
			return -EINVAL;
		}
		if (mode_check_nodes(p->mode, p->ps, p->nnodes, err, errlen) < 0)
			return -EINVAL;
		if (!valid_port(p->tf_port)) {
			log_errbuf(err, errlen, "tensorflow: port %d is out of range (1-65535)", p->tf_port);
			return -EINVAL;
		}
		break;
	case MODE_PYTORCH:
		break;
	}
	return 0;
}

/* One line per node: "host slots=N" (Open MPI, DeepSpeed) or "host:N"
 * (MPICH), in node-rank order. */
static char *
hostfile_text(const struct mode_plan *p, bool mpich)
{
	char *s = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&s, &len);

	if (!f)
		return NULL;
	for (int i = 0; i < p->nnodes; i++)
		fprintf(f, mpich ? "%s:%d\n" : "%s slots=%d\n", p->nodes[i].host, p->nodes[i].slots);
	if (ferror(f)) {
		(void)fclose(f);
		free(s);
		return NULL;
	}
	if (fclose(f) != 0) {
		free(s);
		return NULL;
	}
	return s;
}

/* "host:port"; an IPv6 address goes in brackets. */
static cJSON *
tf_address(const char *host, int port)
{
	char *s = strf(strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, port);
	cJSON *j;

	if (!s)
		return NULL;
	j = cJSON_CreateString(s);
	free(s);
	return j;
}

static bool
tf_add_hosts(cJSON *cluster, const char *type, const struct mode_plan *p, int from, int to)
{
	cJSON *a = cJSON_AddArrayToObject(cluster, type);

	if (!a)
		return false;
	for (int i = from; i < to; i++) {
		cJSON *h = tf_address(p->nodes[i].host, p->tf_port);

		if (!h)
			return false;
		cJSON_AddItemToArray(a, h);
	}
	return true;
}

/*
 * TF_CONFIG=..., compact, with the manual's keys in the manual's order.
 * The manual writes the index as a string ("${VK_TASK_INDEX}", a shell
 * substitution inside JSON quotes); TensorFlow's TFConfigClusterResolver
 * takes task.index as a number, so it is one here.
 */
static char *
tf_config(const struct mode_plan *p)
{
	cJSON *root = cJSON_CreateObject();
	cJSON *cluster = NULL, *task = NULL;
	bool is_ps = p->node_rank < p->ps;
	char *json = NULL, *entry = NULL;

	if (!root)
		return NULL;
	cluster = cJSON_AddObjectToObject(root, "cluster");
	if (!cluster)
		goto out;
	if (p->ps > 0 && !tf_add_hosts(cluster, "ps", p, 0, p->ps))
		goto out;
	if (!tf_add_hosts(cluster, "worker", p, p->ps, p->nnodes))
		goto out;
	task = cJSON_AddObjectToObject(root, "task");
	if (!task || !cJSON_AddStringToObject(task, "type", is_ps ? "ps" : "worker") ||
	    !cJSON_AddNumberToObject(task, "index", is_ps ? p->node_rank : p->node_rank - p->ps) ||
	    !cJSON_AddStringToObject(root, "environment", "cloud"))
		goto out;
	json = json_print(root, false);
	if (json)
		entry = strf("TF_CONFIG=%s", json);
out:
	free(json);
	cJSON_Delete(root);
	return entry;
}

/* argv[0] names a Python interpreter: python, python3, python3.N, with or
 * without a directory. */
static bool
is_python(const char *argv0)
{
	const char *b = strrchr(argv0, '/');

	b = b ? b + 1 : argv0;
	if (strncmp(b, "python", 6) != 0)
		return false;
	b += 6;
	if (*b == '\0')
		return true;
	if (*b++ != '3')
		return false;
	if (*b == '\0')
		return true;
	if (*b++ != '.' || !(*b >= '0' && *b <= '9'))
		return false;
	while (*b >= '0' && *b <= '9')
		b++;
	return *b == '\0';
}

static bool
is_dist_module(const char *m)
{
	return strcmp(m, "torch.distributed.launch") == 0 || strcmp(m, "torch.distributed.run") == 0;
}

/* The command already is a distributed launch: -m torch.distributed.launch
 * or .run, separate or joined (-mtorch.distributed.run), anywhere. */
static bool
has_dist_launch(char *const *argv)
{
	for (size_t i = 1; argv[i]; i++) {
		if (strcmp(argv[i], "-m") == 0 && argv[i + 1] && is_dist_module(argv[i + 1]))
			return true;
		if (strncmp(argv[i], "-m", 2) == 0 && is_dist_module(argv[i] + 2))
			return true;
	}
	return false;
}

/* What the Python command runs, found by reading the interpreter's own
 * options (python(1): -c and -m end them and take an argument, -W and -X
 * take one, the others are flags and may be combined as in -uB). */
enum py_target { PY_NONE, PY_SCRIPT, PY_MODULE, PY_CODE };

struct py_cmd {
	enum py_target target;
	size_t opts_end;        /* argv[1..opts_end) are interpreter options */
	size_t prefix_len;      /* PY_MODULE: bytes of argv[opts_end] before its 'm' ("-u" of "-um") */
	const char *module;     /* PY_MODULE */
	size_t rest;            /* first word after the script or module name */
};

static void
py_parse(char *const *argv, struct py_cmd *c)
{
	size_t i = 1;

	memset(c, 0, sizeof(*c));
	while (argv[i]) {
		const char *w = argv[i];

		if (strcmp(w, "--") == 0) {
			/* The next word is the script even if it starts with '-'. */
			if (argv[i + 1] && strcmp(argv[i + 1], "-") != 0) {
				c->target = PY_SCRIPT;
				c->opts_end = i;
				c->rest = i + 1;
			}
			return;
		}
		if (strcmp(w, "-") == 0)
			return;                 /* the program comes on stdin */
		if (w[0] != '-') {
			c->target = PY_SCRIPT;
			c->opts_end = i;
			c->rest = i;
			return;
		}
		if (w[1] == '-') {
			/* --check-hash-based-pycs takes the next word; other long
			 * options (--help, --version, ...) are flags. */
			i += strcmp(w, "--check-hash-based-pycs") == 0 ? 2 : 1;
			continue;
		}
		for (size_t j = 1;; j++) {
			char ch = w[j];
			const char *arg;
			size_t used;

			if (ch == '\0') {
				i++;
				break;
			}
			if (!strchr("cmWX", ch))
				continue;
			arg = w[j + 1] ? w + j + 1 : argv[i + 1];
			used = w[j + 1] ? 1 : 2;
			if (!arg)
				return;
			if (ch == 'c') {
				c->target = PY_CODE;
				return;
			}
			if (ch == 'm') {
				c->target = PY_MODULE;
				c->opts_end = i;
				c->prefix_len = j > 1 ? j : 0;
				c->module = arg;
				c->rest = i + used;
				return;
			}
			i += used;              /* -W or -X and its argument */
			break;
		}
	}
}

/* A word `env` reads as NAME=VALUE. */
static bool
is_assignment(const char *w)
{
	size_t i = 0;

	if (!((w[0] >= 'a' && w[0] <= 'z') || (w[0] >= 'A' && w[0] <= 'Z') || w[0] == '_'))
		return false;
	while ((w[i] >= 'a' && w[i] <= 'z') || (w[i] >= 'A' && w[i] <= 'Z') ||
	       (w[i] >= '0' && w[i] <= '9') || w[i] == '_')
		i++;
	return w[i] == '=';
}

/*
 * The number of words of an `env NAME=VALUE ...` prefix before the
 * command it runs (0 when ARGV does not start with env, or env is given
 * options or no command).  `env KEY=VALUE python train.py` is the form
 * cmdline.c suggests for `KEY=VALUE python train.py`, so that PyTorch mode
 * still finds the python command behind it.
 */
static size_t
env_prefix_len(char *const *argv)
{
	size_t i = 1;

	if (strcmp(base_name(argv[0]), "env") != 0)
		return 0;
	while (argv[i] && is_assignment(argv[i]))
		i++;
	return argv[i] && argv[i][0] != '-' ? i : 0;
}

/*
 * Whether PyTorch mode puts ARGV (past an env prefix) under the torch
 * launcher: python SCRIPT or python -m MODULE, not already a distributed
 * launch; *C says what it runs.
 */
static bool
pytorch_wraps(char *const *argv, struct py_cmd *c)
{
	py_parse(argv, c);
	return is_python(argv[0]) && !has_dist_launch(argv) &&
	       (c->target == PY_SCRIPT || (c->target == PY_MODULE && !is_dist_module(c->module)));
}

/* A string literal in TEXT that names the option: "--local_rank" or
 * "--local-rank", closed there or followed by "=" (startswith("--local_rank=")). */
static bool
declares_local_rank(const char *text, size_t len)
{
	const char *end = text + len;

	for (const char *s = text; (s = memmem(s, (size_t)(end - s), "--local", 7)); s += 7) {
		if (s == text || (s[-1] != '"' && s[-1] != '\'') || end - s < 13)
			continue;
		if ((s[7] == '_' || s[7] == '-') && memcmp(s + 8, "rank", 4) == 0 &&
		    (s[12] == s[-1] || s[12] == '='))
			return true;
	}
	return false;
}

#define SCRIPT_READ_MAX (4 << 20)

/*
 * Whether the script at PATH (relative: under WORKDIR) declares
 * --local_rank: 1 or 0, or a negative errno when that cannot be told
 * (-EINVAL: not a regular file, -EILSEQ: not text).
 */
static int
script_declares(const char *path, const char *workdir)
{
	char full[PATH_MAX], self[64];
	struct stat st;
	char *buf = NULL;
	size_t len, cap;
	ssize_t n;
	int pfd, fd = -1, rc;

	if (snprintf(full, sizeof(full), "%s%s%s", path[0] != '/' && workdir ? workdir : "",
	             path[0] != '/' && workdir ? "/" : "", path) >= (int)sizeof(full))
		return -ENAMETOOLONG;
	/* Only a regular file is opened to be read: opening a device or a
	 * FIFO can act (a watchdog arms, a reader blocks), and vigil may run
	 * as root.  O_PATH looks without opening; /proc/self/fd opens what
	 * was looked at, with the permission checks of an open. */
	pfd = open(full, O_PATH | O_CLOEXEC);
	if (pfd < 0)
		return -errno;
	if (fstat(pfd, &st) < 0) {
		rc = -errno;
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
		goto out;
	}
	snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
	fd = open(self, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	cap = st.st_size < SCRIPT_READ_MAX ? (size_t)st.st_size : SCRIPT_READ_MAX;
	if (fd < 0 || !(buf = malloc(cap + 1))) {
		rc = fd < 0 ? -errno : -ENOMEM;
		goto out;
	}
	n = util_read_all(fd, buf, cap);
	if (n < 0) {
		rc = (int)n;
		goto out;
	}
	len = (size_t)n;
	rc = memchr(buf, '\0', len) ? -EILSEQ : declares_local_rank(buf, len);
out:
	free(buf);
	if (fd >= 0)
		close(fd);
	close(pfd);
	return rc;
}

/* MODULE's file under WORKDIR, as python -m finds it first (the working
 * directory leads sys.path): M.py, else M/__main__.py, dots as '/'. */
static int
module_declares(const char *module, const char *workdir, char *path, size_t len)
{
	char rel[PATH_MAX];
	int rc;

	if (snprintf(rel, sizeof(rel), "%s", module) >= (int)sizeof(rel) - 16)
		return -ENAMETOOLONG;
	for (char *c = rel; *c; c++)
		if (*c == '.')
			*c = '/';
	if (snprintf(path, len, "%s.py", rel) >= (int)len)
		return -ENAMETOOLONG;
	rc = script_declares(path, workdir);
	if (rc != -ENOENT)
		return rc;
	if (snprintf(path, len, "%s/__main__.py", rel) >= (int)len)
		return -ENAMETOOLONG;
	return script_declares(path, workdir);
}

enum mode_torch
mode_torch_choose(char *const *argv, enum mode_torch t, const char *workdir, char *why,
                  size_t whylen)
{
	char path[PATH_MAX];
	struct py_cmd c;
	int rc;

	if (t != MODE_TORCH_AUTO) {
		snprintf(why, whylen, "torch.distributed.%s (--torch-launcher %s)", mode_torch_name(t),
		         mode_torch_name(t));
		return t;
	}
	argv += env_prefix_len(argv);
	py_parse(argv, &c);
	if (c.target == PY_MODULE) {
		rc = module_declares(c.module, workdir, path, sizeof(path));
	} else if (c.target == PY_SCRIPT) {
		snprintf(path, sizeof(path), "%s", argv[c.rest]);
		rc = script_declares(path, workdir);
	} else {
		snprintf(why, whylen, "torch.distributed.launch");
		return MODE_TORCH_LAUNCH;
	}
	if (rc >= 0) {
		snprintf(why, whylen, "torch.distributed.%s: %.300s declares %s --local_rank option",
		         rc ? "launch" : "run", path, rc ? "a" : "no");
		return rc ? MODE_TORCH_LAUNCH : MODE_TORCH_RUN;
	}
	if (c.target == PY_MODULE && rc == -ENOENT)
		snprintf(why, whylen, "torch.distributed.launch, the manual's: module %.200s is not "
		         "found in the working directory; --torch-launcher run for one that reads "
		         "LOCAL_RANK only", c.module);
	else
		snprintf(why, whylen, "torch.distributed.launch, the manual's: %.300s cannot be read "
		         "(%s); --torch-launcher run for a script that reads LOCAL_RANK only", path,
		         rc == -EINVAL ? "not a regular file" : rc == -EILSEQ ? "not text" :
		         strerror(-rc));
	return MODE_TORCH_LAUNCH;
}

/* mode_torch_explain(), the choice in *T. */
static bool
torch_choice(const struct mode_plan *p, enum mode_torch *t, char *why, size_t whylen)
{
	char *const *argv = p->argv + env_prefix_len(p->argv);
	struct py_cmd c;

	if (p->mode != MODE_PYTORCH || !pytorch_wraps(argv, &c))
		return false;
	*t = mode_torch_choose(p->argv, p->torch_launcher, p->workdir, why, whylen);
	return true;
}

bool
mode_torch_explain(const struct mode_plan *p, char *why, size_t whylen)
{
	enum mode_torch t;

	return torch_choice(p, &t, why, whylen);
}

const char *
mode_failure_hint(enum mode m, const char *text, size_t len)
{
	static const char marker[] = "unrecognized arguments: ";
	const char *end = text + len;

	if (m != MODE_PYTORCH || !text)
		return NULL;
	/* argparse's "error: unrecognized arguments: --local_rank=0 ...", one line */
	for (const char *s = text; (s = memmem(s, (size_t)(end - s), marker, sizeof(marker) - 1));) {
		const char *eol = memchr(s, '\n', (size_t)(end - s));
		size_t n = (size_t)((eol ? eol : end) - s);

		if (memmem(s, n, "--local_rank", 12) || memmem(s, n, "--local-rank", 12))
			return "the script rejects the --local_rank argument that torch.distributed.launch "
			       "passes: run it with --torch-launcher run (torch.distributed.run, which "
			       "sets LOCAL_RANK only), or let it accept --local_rank";
		s += sizeof(marker) - 1;
	}
	return NULL;
}

#define ALL_WORDS SIZE_MAX

/* ARGV[FROM..TO) (TO past the end: all that follow) into OUT. */
static void
copy_words(char *const *argv, size_t from, size_t to, struct strv *out)
{
	for (size_t i = from; i < to && argv[i]; i++)
		strv_add(out, strdup(argv[i]));
}

/*
 * The pytorch mode's command.  [python, opts..., script, args...] becomes
 * [python, opts..., -m, torch.distributed.launch (or .run),
 * --nproc_per_node=S, --nnodes=N, --node_rank=R, --master_addr=A,
 * --master_port=P, script, args...]: the manual's rewriting.  Interpreter
 * options (python -u) stay before -m, the only place Python reads them;
 * they apply to the launcher process, which starts each training process
 * with its own command line (python -u script), so options meant for
 * those belong in the environment (PYTHONWARNINGS, PYTHONOPTIMIZE, ...).
 * python -m MODULE runs under the launcher's own -m ([...,
 * --master_port=P, -m, MODULE, args...]).  python -c CODE, python reading
 * stdin and python with no program run as given: there is no script for
 * the launcher to start.  An `env NAME=VALUE ...` prefix stays in front.
 *
 * --master_addr is node rank 0's address on every node, node rank 0
 * included, where the manual writes localhost: one address for all makes
 * the nodes' commands differ only in --node_rank.
 */
static void
pytorch_argv(const struct mode_plan *p, int slots, struct strv *out)
{
	size_t pre = env_prefix_len(p->argv);
	char *const *argv = p->argv + pre;
	struct py_cmd c;

	if (!pytorch_wraps(argv, &c)) {
		copy_words(p->argv, 0, ALL_WORDS, out);
		return;
	}
	copy_words(p->argv, 0, pre, out);
	copy_words(argv, 0, c.opts_end, out);
	if (c.prefix_len)
		strv_add(out, strndup(argv[c.opts_end], c.prefix_len));
	strv_add(out, strdup("-m"));
	strv_add(out, strf("torch.distributed.%s", mode_torch_name(p->torch_launcher)));
	strv_add(out, strf("--nproc_per_node=%d", slots));
	strv_add(out, strf("--nnodes=%d", p->nnodes));
	strv_add(out, strf("--node_rank=%d", p->node_rank));
	strv_add(out, strf("--master_addr=%s", p->master_addr));
	strv_add(out, strf("--master_port=%d", p->master_port));
	if (c.target == PY_MODULE) {
		strv_add(out, strdup("-m"));
		strv_add(out, strdup(c.module));
	}
	copy_words(argv, c.rest, ALL_WORDS, out);
}

static bool
is_torch_launch_word(const char *w)
{
	return strcmp(base_name(w), "torchrun") == 0 || is_dist_module(w) ||
	       (strncmp(w, "-m", 2) == 0 && is_dist_module(w + 2));
}

/*
 * PyTorch mode does not look inside a shell's script: a python command
 * there runs as written, without the launcher, and trains alone on each
 * node.  *OUT says so, with the form that keeps the launcher; NULL when
 * the command is not such a script.  0 or -ENOMEM.
 */
static int
pytorch_shell_warning(char *const *argv, char **out)
{
	size_t shell = 0, script = cmdline_shell_script(argv, &shell);

	*out = NULL;
	if (!script || !cmdline_any_command_word(argv[script], is_python) ||
	    cmdline_any_script_word(argv[script], is_torch_launch_word))
		return 0;
	*out = strf("pytorch: the command runs python through %s -c, so vigil does not put it "
	            "under the torch launcher and each node would train alone; write the "
	            "launcher into the script: python -m torch.distributed.launch "
	            "--nproc_per_node=$SLOTS --nnodes=$WORLD_SIZE --node_rank=$RANK "
	            "--master_addr=$MASTER_ADDR --master_port=$MASTER_PORT SCRIPT ARGS "
	            "(or, for KEY=VALUE before one command, use: env KEY=VALUE python SCRIPT ARGS)",
	            base_name(argv[shell]));
	return *out ? 0 : -ENOMEM;
}

/* The DeepSpeed launcher's names (DeepSpeed's bin/: deepspeed, ds, deepspeed.pt). */
static bool
is_deepspeed(const char *argv0)
{
	const char *b = base_name(argv0);

	return strcmp(b, "deepspeed") == 0 || strcmp(b, "ds") == 0 ||
	       strcmp(b, "deepspeed.pt") == 0;
}

/*
 * DeepSpeed's no-SSH mode, as its tutorial documents it: every node runs
 * `deepspeed --hostfile=FILE --no_ssh --node_rank=R --master_addr=A
 * --master_port=P SCRIPT ARGS`, and each launches its own slots' processes
 * with ranks numbered across the hostfile.  The options go right after the
 * launcher's name, so options the user gives come later and win
 * (argparse keeps the last).  --master_addr is needed even so: without it
 * the runner asks the first host for its address over ssh.  Any other
 * command runs as given.
 */
static void
deepspeed_argv(const struct mode_plan *p, struct strv *out)
{
	if (!is_deepspeed(p->argv[0])) {
		copy_words(p->argv, 0, ALL_WORDS, out);
		return;
	}
	strv_add(out, strdup(p->argv[0]));
	strv_add(out, strf("--hostfile=%s", p->hostfile));
	strv_add(out, strdup("--no_ssh"));
	strv_add(out, strf("--node_rank=%d", p->node_rank));
	strv_add(out, strf("--master_addr=%s", p->master_addr));
	strv_add(out, strf("--master_port=%d", p->master_port));
	copy_words(p->argv, 1, ALL_WORDS, out);
}

/* horovodrun without hosts runs everything on localhost (its launch.py:
 * no -H, no --hostfile, no discovery script means localhost:np). */
static bool
horovodrun_has_hosts(char *const *argv)
{
	static const char *const opts[] = {
		"-H", "--hosts", "-hostfile", "--hostfile", "--host-discovery-script",
	};

	for (size_t i = 1; argv[i]; i++)
		for (size_t j = 0; j < sizeof(opts) / sizeof(opts[0]); j++) {
			size_t n = strlen(opts[j]);

			if (strncmp(argv[i], opts[j], n) == 0 && (argv[i][n] == '\0' || argv[i][n] == '='))
				return true;
		}
	return false;
}

/* The manual's prefix, Open MPI's options; -np is every node's slots.  A
 * command that launches MPI itself runs as given; horovodrun without
 * hosts gets the hostfile. */
static void
horovod_argv(const struct mode_plan *p, struct strv *out)
{
	static const char *const prefix_tail[] = {
		"-bind-to", "none", "-map-by", "slot",
		"-x", "NCCL_DEBUG=INFO", "-x", "LD_LIBRARY_PATH", "-x", "PATH",
		"-mca", "pml", "ob1", "-mca", "btl", "^openib",
	};
	long total = 0;

	if (mode_launches_mpi(p->argv)) {
		if (strcmp(base_name(p->argv[0]), "horovodrun") == 0 && !horovodrun_has_hosts(p->argv)) {
			strv_add(out, strdup(p->argv[0]));
			strv_add(out, strf("--hostfile=%s", p->hostfile));
			copy_words(p->argv, 1, ALL_WORDS, out);
			return;
		}
		copy_words(p->argv, 0, ALL_WORDS, out);
		return;
	}
	for (int i = 0; i < p->nnodes; i++)
		total += p->nodes[i].slots;
	strv_add(out, strdup("mpirun"));
	strv_add(out, strdup("--allow-run-as-root"));
	strv_add(out, strdup("-np"));
	strv_add(out, strf("%ld", total));
	for (size_t i = 0; i < sizeof(prefix_tail) / sizeof(prefix_tail[0]); i++)
		strv_add(out, strdup(prefix_tail[i]));
	copy_words(p->argv, 0, ALL_WORDS, out);
}

static int
add_file(struct mode_launch *l, const char *path, char *content, bool optional)
{
	struct mode_file *f = &l->files[l->nfiles];

	if (!content)
		return -ENOMEM;
	f->path = strdup(path);
	if (!f->path) {
		free(content);
		return -ENOMEM;
	}
	f->content = content;
	f->optional = optional;
	l->nfiles++;
	return 0;
}

/* vigil's own variables, which the command's words may name. */
struct expansion {
	const char *name;
	char value[300];
};

/*
 * WORD with ${NAME} and $NAME replaced, for the names in X (NX of them);
 * any other $ stays as it is.  $NAME takes the longest name that follows
 * ($RANKS is not $RANK).  NULL on ENOMEM.
 */
static char *
expand_word(const char *word, const struct expansion *x, size_t nx)
{
	char *s = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&s, &len);
	const char *c = word;

	if (!f)
		return NULL;
	while (*c) {
		bool braced = c[0] == '$' && c[1] == '{';
		const char *name = c + (braced ? 2 : 1);
		size_t n = 0;
		bool done = false;

		if (*c == '$') {
			while ((name[n] >= 'a' && name[n] <= 'z') || (name[n] >= 'A' && name[n] <= 'Z') ||
			       (name[n] >= '0' && name[n] <= '9') || name[n] == '_')
				n++;
			for (size_t i = 0; i < nx && n > 0 && !done; i++) {
				if (strlen(x[i].name) != n || strncmp(name, x[i].name, n) != 0)
					continue;
				if (braced && name[n] != '}')
					continue;
				fputs(x[i].value, f);
				c = name + n + (braced ? 1 : 0);
				done = true;
			}
		}
		if (!done)
			fputc(*c++, f);
	}
	if (fclose(f) != 0) {
		free(s);
		return NULL;
	}
	return s;
}

/*
 * The user's command with vigil's variables replaced by this node's
 * values, in the words vigil runs itself: not in a shell's -c script, where
 * '$RANK' in single quotes, RANK=... and `for RANK in ...` mean what the
 * shell says, and where the environment holds the same values.
 */
static char **
expand_argv(const struct mode_plan *p, int slots)
{
	struct expansion x[] = {
		{ "WORLD_SIZE", "" }, { "SLOTS", "" }, { "RANK", "" },
		{ "MASTER_ADDR", "" }, { "MASTER_PORT", "" },
	};
	size_t script = cmdline_shell_script(p->argv, NULL);
	struct strv v = { 0 };

	snprintf(x[0].value, sizeof(x[0].value), "%d", p->nnodes);
	snprintf(x[1].value, sizeof(x[1].value), "%d", slots);
	snprintf(x[2].value, sizeof(x[2].value), "%d", p->node_rank);
	snprintf(x[3].value, sizeof(x[3].value), "%s", p->master_addr);
	snprintf(x[4].value, sizeof(x[4].value), "%d", p->master_port);
	for (size_t i = 0; p->argv[i]; i++)
		strv_add(&v, i > 0 && i == script ? strdup(p->argv[i]) :
		             expand_word(p->argv[i], x, sizeof(x) / sizeof(x[0])));
	return strv_take(&v);
}

/* Slots per vendor on this node. */
struct vendor_slots {
	const char *vendor;
	int n;
};

#define MAX_VENDORS 8

static size_t
count_vendors(const struct mode_plan *p, struct vendor_slots *v)
{
	size_t nv = 0;

	if (p->nslots <= 0)
		return 0;
	if (!p->slot_vendors) {
		if (!p->vendor)
			return 0;
		v[0].vendor = p->vendor;
		v[0].n = p->nslots;
		return 1;
	}
	for (int i = 0; i < p->nslots; i++) {
		const char *name = p->slot_vendors[i];
		size_t k;

		if (!name)
			continue;
		for (k = 0; k < nv && strcmp(v[k].vendor, name) != 0; k++)
			;
		if (k == nv) {
			if (nv == MAX_VENDORS)
				continue;
			v[nv].vendor = name;
			v[nv++].n = 0;
		}
		v[k].n++;
	}
	return nv;
}

/*
 * The visible-device variables into SET, one per vendor present, each
 * listing that vendor's boards only (CUDA numbers NVIDIA boards alone,
 * ROCm AMD boards alone); returns SLOTS.  When the starting environment
 * already names a vendor's visible boards (Slurm's GRES plugin, or an
 * administrator constraining the allocation), that list is kept as it is
 * and counts for SLOTS: the training must not reach boards outside it,
 * and numbering 0..N-1 over it would.  An empty list hides every board.
 * No slot at all, or every board hidden: 1, the manual's CPU node.
 */
static int
visible_devices(const struct mode_plan *p, struct strv *set)
{
	struct vendor_slots v[MAX_VENDORS];
	size_t nv = count_vendors(p, v);
	int slots = 0;

	for (size_t i = 0; i < nv; i++) {
		const char *vis = visible_var(v[i].vendor);
		const char *preset = vis ? env_get(p->envp, vis, strlen(vis)) : NULL;
		char *list;

		if (preset) {
			slots += count_list(preset);
			continue;
		}
		slots += v[i].n;
		if (!vis)
			continue;
		list = device_list(v[i].n);
		strv_add(set, list ? strf("%s=%s", vis, list) : NULL);
		free(list);
	}
	return slots > 0 ? slots : 1;
}

/*
 * Debian 12's torch 1.13 on Python 3.11: torch.distributed.run dies at
 * start ("'NoneType' object has no attribute 'get'" in to_map()) because
 * its Std.from_str() finds no enum member for the default "0" of
 * --redirects and --tee (Python 3.11 no longer iterates the zero flag).
 * A mapping that names local rank 9 parses on every version and changes
 * nothing on nodes with fewer than 10 processes (on larger ones, local
 * rank 9's output is also copied to torch's log directory).  Set only when
 * the environment does not choose; remove once torch >= 2.0 is the oldest
 * in use (fixed upstream there).
 */
static void
torch_workaround(const struct mode_plan *p, struct strv *set)
{
	static const char *const vars[] = { "PET_REDIRECTS", "PET_TEE" };

	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		if (!env_get(p->envp, vars[i], strlen(vars[i])))
			strv_add(set, strf("%s=9:1", vars[i]));
}

/*
 * torch's launchers (launch and run alike, torchrun a user writes too)
 * look at their workers every PET_MONITOR_INTERVAL seconds, 5 by
 * default (torch/distributed/run.py, --monitor_interval): a worker that
 * saved and exited on the checkpoint signal is seen up to 5 s later, and
 * only then does the launcher exit.  With a grace period of 5 s that was
 * a checkpoint reported as not confirmed.  A tenth of the grace, between
 * 0.1 and 1 s: the look is a waitpid() per worker, nothing to save on.
 * Set only when the environment does not choose.
 */
static void
torch_monitor(const struct mode_plan *p, struct strv *set)
{
	double s = p->grace_s > 0 ? p->grace_s / 10 : 1;

	if (env_get(p->envp, "PET_MONITOR_INTERVAL", strlen("PET_MONITOR_INTERVAL")))
		return;
	strv_add(set, strf("PET_MONITOR_INTERVAL=%g", s < 0.1 ? 0.1 : s > 1 ? 1 : s));
}

/* What this mode exports besides the visible devices. */
static void
mode_vars(const struct mode_plan *p, int slots, struct strv *set)
{
	strv_add(set, strf("MASTER_ADDR=%s", p->master_addr));
	strv_add(set, strf("MASTER_PORT=%d", p->master_port));
	strv_add(set, strf("WORLD_SIZE=%d", p->nnodes));
	strv_add(set, strf("RANK=%d", p->node_rank));
	strv_add(set, strf("SLOTS=%d", slots));
	strv_add(set, strf("VIGIL_MODE=%s", mode_name(p->mode)));
	strv_add(set, strf("VIGIL_NODE_RANK=%d", p->node_rank));
	strv_add(set, strf("VIGIL_WORLD_SIZE=%d", p->nnodes));
	switch (p->mode) {
	case MODE_DEEPSPEED:
		strv_add(set, strf("VIGIL_HOSTFILE=%s", p->hostfile));
		break;
	case MODE_HOROVOD:
		strv_add(set, strf("OMPI_MCA_orte_default_hostfile=%s", p->hostfile));
		strv_add(set, strf("HYDRA_HOST_FILE=%s", p->mpich_hostfile));
		/* The manual's eth0 unless the plan knows the interface; a
		 * site's own HYDRA_IFACE wins. */
		if (!env_get(p->envp, "HYDRA_IFACE", strlen("HYDRA_IFACE")))
			strv_add(set, strf("HYDRA_IFACE=%s", p->iface && *p->iface ? p->iface : "eth0"));
		strv_add(set, strf("VIGIL_HOSTFILE=%s", p->hostfile));
		break;
	case MODE_TENSORFLOW:
		strv_add(set, tf_config(p));
		break;
	case MODE_PYTORCH:
		torch_workaround(p, set);
		torch_monitor(p, set);
		break;
	case MODE_SINGLE:
		break;
	}
}

/* The starting environment, less the outer MPI job's identity and what
 * SET replaces, then SET (whose strings move into ENV). */
static void
merge_env(const struct mode_plan *p, struct strv *set, struct strv *env)
{
	for (size_t i = 0; p->envp && p->envp[i]; i++) {
		const char *e = p->envp[i];
		bool replaced = !mode_env_kept(e, p->envp);

		for (size_t j = 0; j < set->n && !replaced; j++)
			replaced = has_key(e, set->v[j], key_len(set->v[j]));
		if (!replaced)
			strv_add(env, strdup(e));
	}
	for (size_t j = 0; j < set->n; j++) {
		strv_add(env, set->v[j]);
		set->v[j] = NULL;
	}
	set->n = 0;
}

static int
mode_files(const struct mode_plan *p, struct mode_launch *out)
{
	const char *job = p->job_hostfile ? p->job_hostfile : "/job/hostfile";
	int rc = 0;

	switch (p->mode) {
	case MODE_DEEPSPEED:
		rc = add_file(out, p->hostfile, hostfile_text(p, false), false);
		/* Where DeepSpeed looks by default, for the user's own scripts;
		 * the command names the job's own file, which two jobs sharing
		 * a node cannot overwrite for each other. */
		if (rc == 0 && *job && strcmp(job, p->hostfile) != 0)
			rc = add_file(out, job, hostfile_text(p, false), true);
		break;
	case MODE_HOROVOD:
		rc = add_file(out, p->hostfile, hostfile_text(p, false), false);
		if (rc == 0)
			rc = add_file(out, p->mpich_hostfile, hostfile_text(p, true), false);
		break;
	default:
		break;
	}
	return rc;
}

static void
mode_argv(const struct mode_plan *p, int slots, struct strv *argv)
{
	switch (p->mode) {
	case MODE_PYTORCH:
		pytorch_argv(p, slots, argv);
		break;
	case MODE_HOROVOD:
		horovod_argv(p, argv);
		break;
	case MODE_DEEPSPEED:
		deepspeed_argv(p, argv);
		break;
	default:
		copy_words(p->argv, 0, ALL_WORDS, argv);
		break;
	}
}

int
mode_build(const struct mode_plan *plan, struct mode_launch *out, char *err, size_t errlen)
{
	struct strv set = { 0 }, env = { 0 }, argv = { 0 };
	struct mode_plan p = *plan;
	char **expanded = NULL;
	char why[512];
	int slots;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = check_plan(&p, err, errlen);
	if (rc < 0)
		return rc;

	slots = visible_devices(&p, &set);
	mode_vars(&p, slots, &set);
	if (set.nomem)
		goto nomem;
	merge_env(&p, &set, &env);
	out->envp = strv_take(&env);
	if (!out->envp)
		goto nomem;
	if (mode_files(&p, out) < 0)
		goto nomem;

	expanded = expand_argv(&p, slots);
	if (!expanded)
		goto nomem;
	p.argv = expanded;
	if (torch_choice(&p, &p.torch_launcher, why, sizeof(why)) && !(out->note = strdup(why)))
		goto nomem;
	out->run = p.mode != MODE_HOROVOD || p.node_rank == 0;
	if (out->run) {
		mode_argv(&p, slots, &argv);
		out->argv = strv_take(&argv);
		if (!out->argv)
			goto nomem;
	}
	if (p.mode == MODE_PYTORCH && pytorch_shell_warning(p.argv, &out->warning) < 0)
		goto nomem;
	cmdline_free(expanded);
	strv_free(&set);
	return 0;
nomem:
	cmdline_free(expanded);
	strv_free(&set);
	strv_free(&env);
	strv_free(&argv);
	mode_launch_free(out);
	log_errbuf(err, errlen, "%s: out of memory", mode_name(p.mode));
	return -ENOMEM;
}

void
mode_launch_free(struct mode_launch *l)
{
	if (!l)
		return;
	cmdline_free(l->argv);
	cmdline_free(l->envp);
	for (int i = 0; i < l->nfiles; i++) {
		free(l->files[i].path);
		free(l->files[i].content);
	}
	free(l->warning);
	free(l->note);
	memset(l, 0, sizeof(*l));
}

/* PATH's directory into DIR (LEN bytes): "/" for "/x".  -EINVAL for a
 * bare name or a directory too long. */
static int
dir_of(const char *path, char *dir, size_t len)
{
	const char *slash = strrchr(path, '/');

	if (!slash || (size_t)(slash - path) >= len)
		return -EINVAL;
	snprintf(dir, len, "%.*s", slash == path ? 1 : (int)(slash - path), path);
	return 0;
}

/*
 * PATH gets CONTENT through the atomic writer, its directories made first
 * (mode 0755): a training process that reads the hostfile while vigil
 * writes it (a restart) sees the old file or the new one, never half of
 * one; every process of the job reads it.
 */
static int
write_atomic(const char *path, const char *content)
{
	char dir[PATH_MAX];
	int rc;

	/* a bare name goes to the working directory, which is there */
	if (dir_of(path, dir, sizeof(dir)) == 0 && (rc = util_mkdir_p(dir, 0755)) < 0)
		return rc;
	return util_write_atomic_str(path, content, 0644);
}

/*
 * Whether an optional file may go to PATH: its directory exists and is
 * private to the caller, or does not exist and is created now (with its
 * parents, mode 0755).  0, or a negative errno saying why not.
 */
static int
optional_dir_ok(const char *path)
{
	char dir[PATH_MAX];
	int rc = dir_of(path, dir, sizeof(dir));

	if (rc < 0)
		return rc;
	rc = util_dir_is_private(dir);
	if (rc != -ENOENT)
		return rc;
	rc = util_mkdir_p(dir, 0755);
	return rc < 0 ? rc : util_dir_is_private(dir);
}

/* PATH's name when PATH is DIR/NAME, else NULL. */
static const char *
name_in(const char *path, const char *dir)
{
	size_t n = dir ? strlen(dir) : 0;

	if (n == 0 || strncmp(path, dir, n) != 0 || path[n] != '/' || !path[n + 1] ||
	    strchr(path + n + 1, '/'))
		return NULL;
	return path + n + 1;
}

int
mode_write_files_in(const struct mode_launch *l, int dirfd, const char *dir, char *err,
                    size_t errlen)
{
	const char *required = NULL, *name;

	for (int i = 0; i < l->nfiles; i++) {
		if (!l->files[i].optional)
			required = l->files[i].path;
	}
	for (int i = 0; i < l->nfiles; i++) {
		const struct mode_file *f = &l->files[i];
		int rc = f->optional ? optional_dir_ok(f->path) : 0;

		name = dirfd >= 0 ? name_in(f->path, dir) : NULL;
		if (rc == 0 && name)
			rc = util_write_atomic_at(dirfd, name, f->content, strlen(f->content), 0644);
		else if (rc == 0)
			rc = write_atomic(f->path, f->content);
		if (rc < 0 && f->optional) {
			LOG_WARN("%s not written (%s); the hostfile is %s, which the command "
			         "names with --hostfile", f->path,
			         rc == -EPERM ? "its directory belongs to another user" :
			         rc == -EACCES ? "its directory is writable by others" :
			         rc == -ELOOP ? "its directory is a symbolic link" : strerror(-rc),
			         required ? required : "not written either");
			continue;
		}
		if (rc < 0) {
			log_errbuf(err, errlen, "cannot write %s: %s", f->path, strerror(-rc));
			return rc;
		}
	}
	return 0;
}

int
mode_write_files(const struct mode_launch *l, char *err, size_t errlen)
{
	return mode_write_files_in(l, -1, NULL, err, errlen);
}

/* Orders "KEY=..." entries by KEY. */
static int
cmp_key(const void *a, const void *b)
{
	const char *x = *(char *const *)a, *y = *(char *const *)b;
	size_t lx = key_len(x), ly = key_len(y);
	int c = strncmp(x, y, lx < ly ? lx : ly);

	if (c != 0)
		return c;
	return lx < ly ? -1 : lx > ly;
}

void
mode_describe(FILE *f, const struct mode_launch *l, char *const *base_envp)
{
	size_t nl = 0, nb = 0, nset = 0, nunset = 0;
	const char **set, **unset;

	while (l->envp && l->envp[nl])
		nl++;
	while (base_envp && base_envp[nb])
		nb++;
	set = calloc(nl + 1, sizeof(*set));
	unset = calloc(nb + 1, sizeof(*unset));
	if (!set || !unset) {
		fprintf(f, "(out of memory)\n");
		goto out;
	}
	for (size_t i = 0; i < nl; i++) {
		const char *e = l->envp[i];
		size_t k = key_len(e);
		const char *was = env_get(base_envp, e, k);
		const char *now = e[k] == '=' ? e + k + 1 : "";

		if (!was || strcmp(was, now) != 0)
			set[nset++] = e;
	}
	for (size_t i = 0; i < nb; i++) {
		const char *e = base_envp[i];
		size_t k = key_len(e);
		bool dup = false;

		for (size_t j = 0; j < i && !dup; j++)
			dup = has_key(base_envp[j], e, k);
		if (!dup && !env_get(l->envp, e, k))
			unset[nunset++] = e;
	}
	qsort(set, nset, sizeof(*set), cmp_key);
	qsort(unset, nunset, sizeof(*unset), cmp_key);
	for (size_t i = 0; i < nset; i++)
		fprintf(f, "env: %s\n", set[i]);
	for (size_t i = 0; i < nunset; i++)
		fprintf(f, "unset: %.*s\n", (int)key_len(unset[i]), unset[i]);
	for (int i = 0; i < l->nfiles; i++) {
		const char *c = l->files[i].content;

		fprintf(f, "file: %s%s\n", l->files[i].path,
		        l->files[i].optional ? " (where that can be done safely)" : "");
		while (*c) {
			size_t len = strcspn(c, "\n");

			fprintf(f, "  %.*s\n", (int)len, c);
			c += len;
			if (*c == '\n')
				c++;
		}
	}
	if (l->run) {
		char *cmd = cmdline_quote(l->argv);

		fprintf(f, "command: %s\n", cmd ? cmd : "(out of memory)");
		free(cmd);
	} else {
		fprintf(f, "command: (none on this node: the mpirun on node rank 0 starts the processes here)\n");
	}
	if (l->note)
		fprintf(f, "launcher: %s\n", l->note);
	if (l->warning)
		fprintf(f, "warning: %s\n", l->warning);
out:
	free(set);
	free(unset);
}
