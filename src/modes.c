/*
 * modes.c - each training mode's environment, files and command, as the
 * platform manual ("分布式模式说明") defines them.
 *
 * Every mode exports the manual's five PyTorch variables (MASTER_ADDR,
 * MASTER_PORT, WORLD_SIZE = number of nodes, RANK = node rank, SLOTS =
 * accelerators on this node, 1 on a CPU node), harmless where a mode does
 * not read them, plus VIGIL_MODE, VIGIL_NODE_RANK and VIGIL_WORLD_SIZE,
 * which launchers cannot overwrite (torch.distributed.run sets its own RANK
 * and WORLD_SIZE for each process it starts).
 *
 *   single      the command as given, on one node.
 *   pytorch     a command that starts with python, python3 or python3.N
 *               runs under torch.distributed.run (the manual shows
 *               torch.distributed.launch, its deprecated former name, with
 *               the same arguments); anything else (torchrun, bash, a
 *               script) runs as given.
 *   deepspeed   a hostfile, "host slots=N" per node, at the configured path
 *               (the manual's is /job/hostfile, where the deepspeed
 *               launcher looks by default), also exported as
 *               VIGIL_HOSTFILE for `deepspeed --hostfile $VIGIL_HOSTFILE`
 *               when it lives elsewhere.  The command runs as given.
 *   horovod     an Open MPI hostfile ("host slots=N") and an MPICH one
 *               ("host:N"), named by OMPI_MCA_orte_default_hostfile and
 *               HYDRA_HOST_FILE.  Only node rank 0 runs a command, under
 *               the manual's mpirun prefix unless it is already an MPI
 *               launch; that mpirun starts the processes on every node.
 *               The manual's HYDRA_IFACE=eth0 is not set: interface names
 *               differ between clusters, and MPICH picks one without it.
 *   tensorflow  TF_CONFIG for PS/worker (the first --ps nodes are
 *               parameter servers) or AllReduce (--ps 0: all workers).
 */
#include "autoconf.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cJSON.h>

#include "cmdline.h"
#include "log.h"
#include "modes.h"
#include "util.h"

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

/*
 * Horovod's mpirun must not see the variables of the MPI job vigil itself
 * runs in: Open MPI's (OMPI_*, ORTE_*), PMIx's and PMI's would make the
 * inner mpirun believe it was started by the outer one's daemons.
 * OPAL_PREFIX stays: it is where Open MPI is installed, not job state.
 * MCA settings exported as OMPI_MCA_* go too, as the outer mpirun's own
 * are among them; the manual's prefix carries the options it needs, and a
 * command that starts with mpirun gives its own -mca options (or uses
 * $HOME/.openmpi/mca-params.conf).
 */
static bool
is_outer_mpi(const char *entry)
{
	static const char *const prefixes[] = { "OMPI_", "ORTE_", "PMIX_", "PMI_" };

	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		if (strncmp(entry, prefixes[i], strlen(prefixes[i])) == 0)
			return true;
	}
	return false;
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
		if (p->nnodes != 1) {
			log_errbuf(err, errlen, "single mode runs on one node; got %d", p->nnodes);
			return -EINVAL;
		}
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
		if (p->ps >= p->nnodes) {
			log_errbuf(err, errlen, "tensorflow: --ps %d leaves no worker among %d nodes",
			        p->ps, p->nnodes);
			return -EINVAL;
		}
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
	json = cJSON_PrintUnformatted(root);
	if (json)
		entry = strf("TF_CONFIG=%s", json);
out:
	cJSON_free(json);
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

/*
 * The pytorch mode's command.  [python, opts..., script, args...] becomes
 * [python, opts..., -m, torch.distributed.run, --nproc_per_node=S,
 * --nnodes=N, --node_rank=R, --master_addr=A, --master_port=P, script,
 * args...].  Interpreter options (python -u) stay before -m, the only
 * place Python reads them; they apply to the launcher process, which starts
 * each training process with its own command line (python -u script), so
 * options meant for those belong in the environment (PYTHONWARNINGS,
 * PYTHONOPTIMIZE, ...).  python -m MODULE runs under the launcher's own
 * -m ([..., --master_port=P, -m, MODULE, args...]).  python -c CODE,
 * python reading stdin and python with no program run as given: there is
 * no script for the launcher to start.
 *
 * --master_addr is node rank 0's address on every node, node rank 0
 * included, where the manual writes localhost: one address for all makes
 * the nodes' commands differ only in --node_rank.
 */
static void
pytorch_argv(const struct mode_plan *p, int slots, struct strv *out)
{
	char *const *argv = p->argv;
	struct py_cmd c;
	size_t i;

	py_parse(argv, &c);
	if (!is_python(argv[0]) || has_dist_launch(argv) || c.target == PY_NONE ||
	    c.target == PY_CODE || (c.target == PY_MODULE && is_dist_module(c.module))) {
		for (i = 0; argv[i]; i++)
			strv_add(out, strdup(argv[i]));
		return;
	}
	for (i = 0; i < c.opts_end; i++)
		strv_add(out, strdup(argv[i]));
	if (c.prefix_len)
		strv_add(out, strndup(argv[c.opts_end], c.prefix_len));
	strv_add(out, strdup("-m"));
	strv_add(out, strdup("torch.distributed.run"));
	strv_add(out, strf("--nproc_per_node=%d", slots));
	strv_add(out, strf("--nnodes=%d", p->nnodes));
	strv_add(out, strf("--node_rank=%d", p->node_rank));
	strv_add(out, strf("--master_addr=%s", p->master_addr));
	strv_add(out, strf("--master_port=%d", p->master_port));
	if (c.target == PY_MODULE) {
		strv_add(out, strdup("-m"));
		strv_add(out, strdup(c.module));
	}
	for (i = c.rest; argv[i]; i++)
		strv_add(out, strdup(argv[i]));
}

/* Already an MPI launch: mpirun, mpiexec, orterun, and their suffixed
 * names (mpirun.openmpi, mpiexec.hydra).  horovodrun starts its own
 * mpirun (or Gloo), so it is not put under another one either. */
static bool
is_mpi_launcher(const char *argv0)
{
	static const char *const launchers[] = { "mpirun", "mpiexec", "orterun", "horovodrun" };
	const char *b = strrchr(argv0, '/');

	b = b ? b + 1 : argv0;
	for (size_t i = 0; i < sizeof(launchers) / sizeof(launchers[0]); i++) {
		size_t n = strlen(launchers[i]);

		if (strncmp(b, launchers[i], n) == 0 && (b[n] == '\0' || b[n] == '.'))
			return true;
	}
	return false;
}

/* The manual's prefix, Open MPI's options; -np is every node's slots. */
static void
horovod_argv(const struct mode_plan *p, struct strv *out)
{
	static const char *const prefix_tail[] = {
		"-bind-to", "none", "-map-by", "slot",
		"-x", "NCCL_DEBUG=INFO", "-x", "LD_LIBRARY_PATH", "-x", "PATH",
		"-mca", "pml", "ob1", "-mca", "btl", "^openib",
	};
	long total = 0;

	if (!is_mpi_launcher(p->argv[0])) {
		for (int i = 0; i < p->nnodes; i++)
			total += p->nodes[i].slots;
		strv_add(out, strdup("mpirun"));
		strv_add(out, strdup("--allow-run-as-root"));
		strv_add(out, strdup("-np"));
		strv_add(out, strf("%ld", total));
		for (size_t i = 0; i < sizeof(prefix_tail) / sizeof(prefix_tail[0]); i++)
			strv_add(out, strdup(prefix_tail[i]));
	}
	for (size_t i = 0; p->argv[i]; i++)
		strv_add(out, strdup(p->argv[i]));
}

static int
add_file(struct mode_launch *l, const char *path, char *content)
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
	l->nfiles++;
	return 0;
}

int
mode_build(const struct mode_plan *p, struct mode_launch *out, char *err, size_t errlen)
{
	struct strv set = { 0 }, env = { 0 }, argv = { 0 };
	const char *vis = visible_var(p->vendor);
	const char *preset = NULL;
	int slots;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = check_plan(p, err, errlen);
	if (rc < 0)
		return rc;

	/*
	 * SLOTS is this node's slot count, 1 on a CPU node.  When the starting
	 * environment already names the visible boards (Slurm's GRES plugin,
	 * or an administrator constraining the allocation), that list is kept
	 * as it is and SLOTS counts its entries: the training must not reach
	 * boards outside it, and numbering 0..N-1 over it would.  An empty
	 * list hides every board: the training runs as on a CPU node.
	 */
	slots = p->vendor && p->nslots > 0 ? p->nslots : 1;
	if (vis) {
		preset = env_get(p->envp, vis, strlen(vis));
		if (preset) {
			int n = count_list(preset);

			slots = n > 0 ? n : 1;
		} else if (p->nslots > 0) {
			char *list = device_list(p->nslots);

			strv_add(&set, list ? strf("%s=%s", vis, list) : NULL);
			free(list);
		}
	}
	strv_add(&set, strf("MASTER_ADDR=%s", p->master_addr));
	strv_add(&set, strf("MASTER_PORT=%d", p->master_port));
	strv_add(&set, strf("WORLD_SIZE=%d", p->nnodes));
	strv_add(&set, strf("RANK=%d", p->node_rank));
	strv_add(&set, strf("SLOTS=%d", slots));
	strv_add(&set, strf("VIGIL_MODE=%s", mode_name(p->mode)));
	strv_add(&set, strf("VIGIL_NODE_RANK=%d", p->node_rank));
	strv_add(&set, strf("VIGIL_WORLD_SIZE=%d", p->nnodes));
	switch (p->mode) {
	case MODE_DEEPSPEED:
		strv_add(&set, strf("VIGIL_HOSTFILE=%s", p->hostfile));
		break;
	case MODE_HOROVOD:
		strv_add(&set, strf("OMPI_MCA_orte_default_hostfile=%s", p->hostfile));
		strv_add(&set, strf("HYDRA_HOST_FILE=%s", p->mpich_hostfile));
		strv_add(&set, strf("VIGIL_HOSTFILE=%s", p->hostfile));
		break;
	case MODE_TENSORFLOW:
		strv_add(&set, tf_config(p));
		break;
	case MODE_SINGLE:
	case MODE_PYTORCH:
		break;
	}
	if (set.nomem)
		goto nomem;

	/* The starting environment, less what is set here (and, for horovod,
	 * less the outer MPI job's variables), then what is set here. */
	for (size_t i = 0; p->envp && p->envp[i]; i++) {
		const char *e = p->envp[i];
		bool replaced = false;

		if (p->mode == MODE_HOROVOD && is_outer_mpi(e))
			continue;
		for (size_t j = 0; j < set.n && !replaced; j++)
			replaced = has_key(e, set.v[j], key_len(set.v[j]));
		if (!replaced)
			strv_add(&env, strdup(e));
	}
	for (size_t j = 0; j < set.n; j++) {
		strv_add(&env, set.v[j]);
		set.v[j] = NULL;
	}
	set.n = 0;
	out->envp = strv_take(&env);
	if (!out->envp)
		goto nomem;

	switch (p->mode) {
	case MODE_DEEPSPEED:
		rc = add_file(out, p->hostfile, hostfile_text(p, false));
		break;
	case MODE_HOROVOD:
		rc = add_file(out, p->hostfile, hostfile_text(p, false));
		if (rc == 0)
			rc = add_file(out, p->mpich_hostfile, hostfile_text(p, true));
		break;
	default:
		break;
	}
	if (rc < 0)
		goto nomem;

	out->run = p->mode != MODE_HOROVOD || p->node_rank == 0;
	if (out->run) {
		if (p->mode == MODE_PYTORCH) {
			pytorch_argv(p, slots, &argv);
		} else if (p->mode == MODE_HOROVOD) {
			horovod_argv(p, &argv);
		} else {
			for (size_t i = 0; p->argv[i]; i++)
				strv_add(&argv, strdup(p->argv[i]));
		}
		out->argv = strv_take(&argv);
		if (!out->argv)
			goto nomem;
	}
	strv_free(&set);
	return 0;
nomem:
	strv_free(&set);
	strv_free(&env);
	strv_free(&argv);
	mode_launch_free(out);
	log_errbuf(err, errlen, "%s: out of memory", mode_name(p->mode));
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
	memset(l, 0, sizeof(*l));
}

/* Creates the directories leading to PATH's last component, as mkdir -p. */
static int
make_parents(const char *path)
{
	char *dir = strdup(path);
	int rc = 0;

	if (!dir)
		return -ENOMEM;
	for (char *s = dir + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
			rc = -errno;
			break;
		}
		*s = '/';
	}
	free(dir);
	return rc;
}

/*
 * PATH gets CONTENT through the atomic writer: a training process that
 * reads the hostfile while vigil writes it (a restart) sees the old file
 * or the new one, never half of one; every process of the job reads it.
 */
static int
write_atomic(const char *path, const char *content)
{
	int rc = make_parents(path);

	if (rc < 0)
		return rc;
	return util_write_atomic_str(path, content, 0644);
}

int
mode_write_files(const struct mode_launch *l, char *err, size_t errlen)
{
	for (int i = 0; i < l->nfiles; i++) {
		int rc = write_atomic(l->files[i].path, l->files[i].content);

		if (rc < 0) {
			log_errbuf(err, errlen, "cannot write %s: %s", l->files[i].path, strerror(-rc));
			return rc;
		}
	}
	return 0;
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

		fprintf(f, "file: %s\n", l->files[i].path);
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
out:
	free(set);
	free(unset);
}
