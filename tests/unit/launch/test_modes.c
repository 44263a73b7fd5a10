/*
 * test_modes.c - each training mode's environment, files and command.
 *
 * Golden files: tests/data/golden/modes/NAME.txt hold what `vigil run
 * --dry-run` shows (mode_describe()) on every node of a job, for 1, 2 and
 * 4 nodes in every mode.  They are the specification, checked line by line
 * against the platform manual, so a difference fails the test.  To rewrite
 * them after a deliberate change, run the test with VIGIL_REGEN_GOLDEN=1
 * (it then writes into $TESTS_SRCDIR/data/golden/modes instead of
 * comparing) and review the change with git diff before keeping it.
 *
 * Direct assertions cover the facts the golden files rest on: the
 * variables' values, TF_CONFIG as TensorFlow parses it, boards kept when
 * the environment already restricts them, the errors, and the atomic
 * writing of the files.
 */
#include "autoconf.h"

#include "../vigil_test.h"
#include "../scratch.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cJSON.h>

#include "launch/modes.h"

#define MAXW 32

static const char *const hosts[] = { "server1", "server2", "server3", "server4" };

/* The environment vigil starts from on node RANK of N: what mpirun gives
 * its agents, with the outer job's Open MPI and PMIx variables. */
struct base_env {
	char rank[48], size[48], pmix_rank[48];
	char *v[16];
};

static void
base_env_init(struct base_env *b, int rank, int n)
{
	int i = 0;

	snprintf(b->rank, sizeof(b->rank), "OMPI_COMM_WORLD_RANK=%d", rank);
	snprintf(b->size, sizeof(b->size), "OMPI_COMM_WORLD_SIZE=%d", n);
	snprintf(b->pmix_rank, sizeof(b->pmix_rank), "PMIX_RANK=%d", rank);
	b->v[i++] = (char *)"HOME=/home/alice";
	b->v[i++] = (char *)"PATH=/usr/local/bin:/usr/bin:/bin";
	b->v[i++] = (char *)"LD_LIBRARY_PATH=/usr/local/cuda/lib64";
	b->v[i++] = (char *)"SLURM_JOB_ID=4242";
	b->v[i++] = (char *)"OPAL_PREFIX=/opt/openmpi";
	b->v[i++] = b->rank;
	b->v[i++] = b->size;
	b->v[i++] = (char *)"OMPI_MCA_orte_hnp_uri=1234.0;tcp://10.0.0.1:40000";
	b->v[i++] = b->pmix_rank;
	b->v[i++] = (char *)"PMIX_NAMESPACE=1234.1";
	b->v[i] = NULL;
}

struct scenario {
	const char *name;
	enum mode mode;
	int nnodes;
	const char *vendor;     /* NULL: CPU nodes */
	int slots;              /* per node */
	int ps;
	const char *cmd[MAXW];
};

#define TRAIN "/workspace/algorithm/train.py"

static const struct scenario scenarios[] = {
	{ "single-1", MODE_SINGLE, 1, "nvidia", 8, 0, { "python", TRAIN } },
	{ "pytorch-python-1", MODE_PYTORCH, 1, NULL, 1, 0, { "python", TRAIN } },
	{ "pytorch-python-2", MODE_PYTORCH, 2, "nvidia", 4, 0, { "python", TRAIN } },
	{ "pytorch-python-4", MODE_PYTORCH, 4, "nvidia", 8, 0,
	  { "python3", "-u", TRAIN, "--config", "cfg.yaml" } },
	{ "pytorch-torchrun-1", MODE_PYTORCH, 1, "nvidia", 8, 0,
	  { "torchrun", "--standalone", "--nproc_per_node=8", TRAIN } },
	{ "pytorch-torchrun-2", MODE_PYTORCH, 2, "nvidia", 4, 0,
	  { "torchrun", "--nnodes=2", "--nproc_per_node=4", "--rdzv_backend=c10d",
	    "--rdzv_endpoint=server1:29400", TRAIN } },
	{ "pytorch-torchrun-4", MODE_PYTORCH, 4, "nvidia", 4, 0,
	  { "torchrun", "--nnodes=4", "--nproc_per_node=4", "--rdzv_backend=c10d",
	    "--rdzv_endpoint=server1:29400", TRAIN } },
	{ "deepspeed-1", MODE_DEEPSPEED, 1, "amd", 8, 0,
	  { "deepspeed", TRAIN, "--deepspeed", "--deepspeed_config", "ds_config.json" } },
	{ "deepspeed-2", MODE_DEEPSPEED, 2, "amd", 4, 0,
	  { "deepspeed", TRAIN, "--deepspeed", "--deepspeed_config", "ds_config.json" } },
	{ "deepspeed-4", MODE_DEEPSPEED, 4, "amd", 4, 0,
	  { "deepspeed", TRAIN, "--deepspeed", "--deepspeed_config", "ds_config.json" } },
	{ "horovod-python-1", MODE_HOROVOD, 1, "nvidia", 4, 0, { "python", TRAIN } },
	{ "horovod-python-2", MODE_HOROVOD, 2, "nvidia", 4, 0, { "python", TRAIN } },
	{ "horovod-python-4", MODE_HOROVOD, 4, "nvidia", 4, 0, { "python", TRAIN } },
	{ "horovod-mpirun-1", MODE_HOROVOD, 1, "nvidia", 4, 0,
	  { "mpirun", "-np", "4", "-bind-to", "none", "-map-by", "slot",
	    "-x", "NCCL_DEBUG=INFO", "-x", "LD_LIBRARY_PATH", "-x", "PATH",
	    "-x", "NCCL_SOCKET_IFNAME=^lo,docker0", "-mca", "pml", "ob1", "-mca", "btl", "^openib",
	    "-mca", "btl_tcp_if_exclude", "lo,docker0", "python", TRAIN } },
	{ "horovod-mpirun-2", MODE_HOROVOD, 2, "nvidia", 4, 0,
	  { "mpirun", "-np", "8", "-bind-to", "none", "-map-by", "slot",
	    "-x", "NCCL_DEBUG=INFO", "-x", "LD_LIBRARY_PATH", "-x", "PATH",
	    "-x", "NCCL_SOCKET_IFNAME=^lo,docker0", "-mca", "pml", "ob1", "-mca", "btl", "^openib",
	    "-mca", "btl_tcp_if_exclude", "lo,docker0", "python", TRAIN } },
	{ "horovod-mpirun-4", MODE_HOROVOD, 4, "nvidia", 4, 0,
	  { "mpirun", "-np", "16", "-bind-to", "none", "-map-by", "slot",
	    "-x", "NCCL_DEBUG=INFO", "-x", "LD_LIBRARY_PATH", "-x", "PATH",
	    "-x", "NCCL_SOCKET_IFNAME=^lo,docker0", "-mca", "pml", "ob1", "-mca", "btl", "^openib",
	    "-mca", "btl_tcp_if_exclude", "lo,docker0", "python", TRAIN } },
	{ "tensorflow-ps1-2", MODE_TENSORFLOW, 2, "cambricon", 4, 1, { "python", TRAIN } },
	{ "tensorflow-ps1-4", MODE_TENSORFLOW, 4, "cambricon", 4, 1, { "python", TRAIN } },
	{ "tensorflow-allreduce-1", MODE_TENSORFLOW, 1, NULL, 1, 0, { "python", TRAIN } },
	{ "tensorflow-allreduce-2", MODE_TENSORFLOW, 2, "cambricon", 4, 0, { "python", TRAIN } },
	{ "tensorflow-allreduce-4", MODE_TENSORFLOW, 4, "cambricon", 4, 0, { "python", TRAIN } },
};

#define NSCEN (sizeof(scenarios) / sizeof(scenarios[0]))

/* A job like the scenario's, seen from node RANK. */
struct job {
	struct mode_node nodes[4];
	struct base_env base;
	struct mode_plan plan;
};

static void
job_init(struct job *j, enum mode m, int nnodes, const char *vendor, int slots, int rank,
         const char *const *cmd)
{
	memset(j, 0, sizeof(*j));
	for (int i = 0; i < nnodes; i++) {
		j->nodes[i].host = hosts[i];
		j->nodes[i].slots = slots;
	}
	base_env_init(&j->base, rank, nnodes);
	j->plan.mode = m;
	j->plan.nodes = j->nodes;
	j->plan.nnodes = nnodes;
	j->plan.node_rank = rank;
	j->plan.master_addr = "server1";
	j->plan.master_port = 2222;
	j->plan.tf_port = 2223;         /* unlike the master port, so a mix-up shows */
	j->plan.vendor = vendor;
	j->plan.nslots = vendor ? slots : 0;
	j->plan.hostfile = m == MODE_DEEPSPEED ? "/tmp/vigil.4242/hostfile" : "/etc/mpi/hostfile";
	j->plan.mpich_hostfile = "/etc/mpi/mpich_hostfile";
	j->plan.argv = (char *const *)cmd;
	j->plan.envp = j->base.v;
}

static const char *
srcdir(void)
{
	static char dir[PATH_MAX];
	const char *env = getenv("TESTS_SRCDIR");
	const char *slash;

	if (env && *env)
		return env;
	/* Run by hand from the build tree: the source path the compiler saw. */
	slash = strrchr(__FILE__, '/');
	snprintf(dir, sizeof(dir), "%.*s/../..", slash ? (int)(slash - __FILE__) : 1,
	         slash ? __FILE__ : ".");
	return dir;
}

static char *
read_text(const char *path)
{
	FILE *f = fopen(path, "r");
	char *s = NULL;
	long len;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
		s = calloc(1, (size_t)len + 1);
		if (s && fread(s, 1, (size_t)len, f) != (size_t)len) {
			free(s);
			s = NULL;
		}
	}
	fclose(f);
	return s;
}

/* Compares ACTUAL with NAME's golden file, or rewrites the file. */
static void
check_golden(const char *name, const char *actual)
{
	const char *regen = getenv("VIGIL_REGEN_GOLDEN");
	char dir[PATH_MAX + 32], path[PATH_MAX + 64];
	const char *e, *a;
	char *expected;
	int line = 1;

	snprintf(dir, sizeof(dir), "%s/data/golden/modes", srcdir());
	snprintf(path, sizeof(path), "%s/%s.txt", dir, name);
	if (regen && strcmp(regen, "1") == 0) {
		FILE *f;

		char golden[PATH_MAX + 32];

		/* They may exist; fopen() says if they are unusable. */
		snprintf(golden, sizeof(golden), "%s/data/golden", srcdir());
		(void)mkdir(golden, 0755);
		(void)mkdir(dir, 0755);
		f = fopen(path, "w");
		if (!f)
			fail_msg("cannot write %s: %s", path, strerror(errno));
		fputs(actual, f);
		assert_int_equal(fclose(f), 0);
		return;
	}
	expected = read_text(path);
	if (!expected)
		fail_msg("cannot read %s: %s (VIGIL_REGEN_GOLDEN=1 writes it)", path, strerror(errno));
	for (e = expected, a = actual; *e && *a; line++) {
		size_t le = strcspn(e, "\n"), la = strcspn(a, "\n");

		if (le != la || memcmp(e, a, le) != 0) {
			print_error("%s:%d: differs\n-%.*s\n+%.*s\n", path, line, (int)le, e, (int)la, a);
			break;
		}
		e += le + (e[le] == '\n');
		a += la + (a[la] == '\n');
	}
	if (*e || *a) {
		if (!*e || !*a)
			print_error("%s:%d: %s\n", path, line,
			            *e ? "the output ends here" : "the output goes on past the file's end");
		print_error("(after a deliberate change: run with VIGIL_REGEN_GOLDEN=1, then review "
		            "the change with git diff)\n");
		free(expected);
		fail();
	}
	free(expected);
}

/* mode_describe() for every node of the scenario, with a header saying
 * what the job is. */
static void
test_golden(void **state)
{
	const struct scenario *s = *state;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	fprintf(f, "# vigil run --dry-run --mode %s", mode_name(s->mode));
	if (s->mode == MODE_TENSORFLOW)
		fprintf(f, " --ps %d", s->ps);
	fprintf(f, ", %d node%s of %d %s slot%s each\n", s->nnodes, s->nnodes > 1 ? "s" : "",
	        s->slots, s->vendor ? s->vendor : "cpu", s->slots > 1 ? "s" : "");
	fprintf(f, "# master server1:2222%s; base environment: base_env_init() in test_modes.c\n",
	        s->mode == MODE_TENSORFLOW ? ", TensorFlow tasks on port 2223" : "");
	for (int r = 0; r < s->nnodes; r++) {
		struct job j;
		struct mode_launch l;
		char err[256] = "";
		int rc;

		job_init(&j, s->mode, s->nnodes, s->vendor, s->slots, r, s->cmd);
		j.plan.ps = s->ps;
		rc = mode_build(&j.plan, &l, err, sizeof(err));
		if (rc != 0)
			fail_msg("%s rank %d: %d %s", s->name, r, rc, err);
		fprintf(f, "\n== node rank %d (%s) ==\n", r, hosts[r]);
		mode_describe(f, &l, j.base.v);
		mode_launch_free(&l);
	}
	assert_int_equal(fclose(f), 0);
	check_golden(s->name, text);
	free(text);
}

static const char *
env_of(char *const *envp, const char *key)
{
	size_t k = strlen(key);
	const char *found = NULL;
	int n = 0;

	for (size_t i = 0; envp[i]; i++) {
		if (strncmp(envp[i], key, k) == 0 && envp[i][k] == '=') {
			found = envp[i] + k + 1;
			n++;
		}
	}
	if (n > 1)
		fail_msg("%s is set %d times", key, n);
	return found;
}

static void
assert_argv(char *const *got, const char *const *want, const char *what)
{
	int i;

	assert_non_null(got);
	for (i = 0; want[i]; i++) {
		if (!got[i] || strcmp(got[i], want[i]) != 0)
			fail_msg("%s: word %d is \"%s\", want \"%s\"", what, i, got[i] ? got[i] : "(end)",
			         want[i]);
	}
	if (got[i])
		fail_msg("%s: extra word %d \"%s\"", what, i, got[i]);
}

static void
test_mode_names(void **state)
{
	enum mode m = MODE_SINGLE;

	(void)state;
	for (int i = MODE_SINGLE; i <= MODE_TENSORFLOW; i++) {
		assert_int_equal(mode_parse(mode_name((enum mode)i), &m), 0);
		assert_int_equal(m, i);
	}
	assert_string_equal(mode_name(MODE_DEEPSPEED), "deepspeed");
	assert_string_equal(mode_name((enum mode)42), "?");
	assert_int_equal(mode_parse("PyTorch", &m), -EINVAL);
	assert_int_equal(mode_parse("", &m), -EINVAL);
	assert_int_equal(mode_parse(NULL, &m), -EINVAL);
}

static void
test_env_values(void **state)
{
	static const char *const cmd[] = { "python", "train.py", NULL };
	char *env[] = { (char *)"RANK=9", (char *)"HOME=/h", (char *)"OMPI_COMM_WORLD_RANK=2", NULL };
	struct mode_launch l;
	struct job j;
	char err[256];

	(void)state;
	job_init(&j, MODE_PYTORCH, 4, "nvidia", 8, 2, cmd);
	j.plan.envp = env;
	assert_int_equal(mode_build(&j.plan, &l, err, sizeof(err)), 0);
	assert_true(l.run);
	assert_string_equal(env_of(l.envp, "RANK"), "2");
	assert_string_equal(env_of(l.envp, "WORLD_SIZE"), "4");
	assert_string_equal(env_of(l.envp, "SLOTS"), "8");
	assert_string_equal(env_of(l.envp, "MASTER_ADDR"), "server1");
	assert_string_equal(env_of(l.envp, "MASTER_PORT"), "2222");
	assert_string_equal(env_of(l.envp, "VIGIL_MODE"), "pytorch");
	assert_string_equal(env_of(l.envp, "VIGIL_NODE_RANK"), "2");
	assert_string_equal(env_of(l.envp, "VIGIL_WORLD_SIZE"), "4");
	assert_string_equal(env_of(l.envp, "CUDA_VISIBLE_DEVICES"), "0,1,2,3,4,5,6,7");
	assert_string_equal(env_of(l.envp, "HOME"), "/h");
	/* the outer MPI job's identity is gone in every mode */
	assert_null(env_of(l.envp, "OMPI_COMM_WORLD_RANK"));
	assert_null(env_of(l.envp, "TF_CONFIG"));
	assert_int_equal(l.nfiles, 0);
	mode_launch_free(&l);
	assert_null(l.envp);
	mode_launch_free(&l);           /* twice is harmless */
}

static void
test_cpu_node(void **state)
{
	static const char *const cmd[] = { "python", "train.py", NULL };
	static const char *const want[] = { "python", "-m", "torch.distributed.launch",
		"--nproc_per_node=1", "--nnodes=2", "--node_rank=1", "--master_addr=server1",
		"--master_port=2222", "train.py", NULL };
	struct mode_launch l;
	struct job j;
	char err[256];

	(void)state;
	job_init(&j, MODE_PYTORCH, 2, NULL, 1, 1, cmd);
	assert_int_equal(mode_build(&j.plan, &l, err, sizeof(err)), 0);
	assert_string_equal(env_of(l.envp, "SLOTS"), "1");
	assert_null(env_of(l.envp, "CUDA_VISIBLE_DEVICES"));
	assert_null(env_of(l.envp, "ROCR_VISIBLE_DEVICES"));
	assert_null(env_of(l.envp, "MLU_VISIBLE_DEVICES"));
	assert_argv(l.argv, want, "cpu");
	mode_launch_free(&l);

	/* a vendor with no slots is a CPU node too */
	job_init(&j, MODE_SINGLE, 1, "nvidia", 1, 0, cmd);
	j.plan.nslots = 0;
	assert_int_equal(mode_build(&j.plan, &l, err, sizeof(err)), 0);
	assert_string_equal(env_of(l.envp, "SLOTS"), "1");
	assert_null(env_of(l.envp, "CUDA_VISIBLE_DEVICES"));
	mode_launch_free(&l);
}

static void
test_visible_vendors(void **state)
{
	static const char *const cmd[] = { "./train.sh", NULL };
	static const struct {
		const char *vendor, *var;
	} v[] = {
		{ "nvidia", "CUDA_VISIBLE_DEVICES" },
		{ "amd", "ROCR_VISIBLE_DEVICES" },
		{ "cambricon", "MLU_VISIBLE_DEVICES" },
	};
	struct mode_launch l;
	struct job j;
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		job_init(&j, MODE_SINGLE, 1, v[i].vendor, 4, 0, cmd);
		assert_int_equal(mode_build(&j.plan, &l, err, sizeof(err)), 0);
		assert_string_equal(env_of(l.envp, v[i].var), "0,1,2,3");
		for (size_t k = 0; k < sizeof(v) / sizeof(v[0]); k++) {
			if (k != i)
				assert_null(env_of(l.envp, v[k].var));
		}
		/* HIP's list indexes into ROCR's: never set by vigil */
		assert_null(env_of(l.envp, "HIP_VISIBLE_DEVICES"));
		assert_string_equal(env_of(l.envp, "SLOTS"), "4");
		mode_launch_free(&l);
	}
}

/* A list already in the environment (Slurm's GRES, an administrator) is
 * kept, and SLOTS counts it. */
static void
test_visible_preset(void **state)
{
	static const char *const cmd[] = { "python", "train.py", NULL };
	static const struct {
		const char *vendor, *key, *value, *slots;
	} c[] = {
		{ "nvidia", "CUDA_VISIBLE_DEVICES", "2,3", "2" },
		{ "nvidia", "CUDA_VISIBLE_DEVICES", "GPU-8f6e,GPU-11aa,GPU-0c3d", "3" },
		{ "nvidia", "CUDA_VISIBLE_DEVICES", "", "1" },
		{ "amd", "ROCR_VISIBLE_DEVICES", "5", "1" },
		{ "cambricon", "MLU_VISIBLE_DEVICES", "0,1,2,3,4,5", "6" },
	};
	struct mode_launch l;
	struct job j;
	char err[256];
	char want_np[64];

	(void)state;
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		char entry[128];
		char *env[] = { (char *)"HOME=/h", entry, NULL };

		snprintf(entry, sizeof(entry), "%s=%s", c[i].key, c[i].value);
		job_init(&j, MODE_PYTORCH, 2, c[i].vendor, 8, 0, cmd);
		j.plan.envp = env;
		assert_int_equal(mode_build(&j.plan, &l, err, sizeof(err)), 0);
		assert_string_equal(env_of(l.envp, c[i].key), c[i].value);
		assert_string_equal(env_of(l.envp, "SLOTS"), c[i].slots);
		snprintf(want_np, sizeof(want_np), "--nproc_per_node=%s", c[i].slots);
		assert_string_equal(l.argv[3], want_np);
		mode_launch_free(&l);
	}
}

static cJSON *
tf_config_of(int ps, int nnodes, int rank)
{
	static const char *const cmd[] = { "python", "train.py", NULL };
	struct mode_launch l;
	struct job j;
	char err[256];
	cJSON *tf;

	job_init(&j, MODE_TENSORFLOW, nnodes, "cambricon", 4, rank, cmd);
	j.plan.ps = ps;
	j.plan.tf_port = 2223;
	assert_int_equal(mode_build(&j.plan, &l, err, sizeof(err)), 0);
	assert_non_null(env_of(l.envp, "TF_CONFIG"));
	tf = cJSON_Parse(env_of(l.envp, "TF_CONFIG"));
	assert_non_null(tf);
	/* the command is the user's, on every node */
	assert_string_equal(l.argv[0], "python");
	assert_null(l.argv[2]);
	mode_launch_free(&l);
	return tf;
}

static void
assert_tf_task(const cJSON *tf, const char *type, int index)
{
	const cJSON *task = cJSON_GetObjectItemCaseSensitive(tf, "task");
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(task, "type");
	const cJSON *i = cJSON_GetObjectItemCaseSensitive(task, "index");

	assert_true(cJSON_IsString(t));
	assert_string_equal(t->valuestring, type);
	assert_true(cJSON_IsNumber(i));     /* TensorFlow wants a number */
	assert_int_equal(i->valueint, index);
	t = cJSON_GetObjectItemCaseSensitive(tf, "environment");
	assert_true(cJSON_IsString(t));
	assert_string_equal(t->valuestring, "cloud");
}

static void
assert_tf_hosts(const cJSON *tf, const char *type, const char *const *want)
{
	const cJSON *cluster = cJSON_GetObjectItemCaseSensitive(tf, "cluster");
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(cluster, type);
	int n = 0;

	if (!want) {
		assert_null(a);
		return;
	}
	assert_true(cJSON_IsArray(a));
	while (want[n])
		n++;
	assert_int_equal(cJSON_GetArraySize(a), n);
	for (int i = 0; i < n; i++)
		assert_string_equal(cJSON_GetArrayItem(a, i)->valuestring, want[i]);
}

static void
test_tf_config(void **state)
{
	static const char *const ps1[] = { "server1:2223", NULL };
	static const char *const workers3[] = { "server2:2223", "server3:2223", "server4:2223", NULL };
	static const char *const ps2[] = { "server1:2223", "server2:2223", NULL };
	static const char *const workers2[] = { "server3:2223", "server4:2223", NULL };
	static const char *const all4[] = { "server1:2223", "server2:2223", "server3:2223",
		"server4:2223", NULL };
	cJSON *tf;

	(void)state;
	for (int r = 0; r < 4; r++) {
		tf = tf_config_of(1, 4, r);
		assert_tf_hosts(tf, "ps", ps1);
		assert_tf_hosts(tf, "worker", workers3);
		assert_tf_task(tf, r == 0 ? "ps" : "worker", r == 0 ? 0 : r - 1);
		cJSON_Delete(tf);

		tf = tf_config_of(2, 4, r);
		assert_tf_hosts(tf, "ps", ps2);
		assert_tf_hosts(tf, "worker", workers2);
		assert_tf_task(tf, r < 2 ? "ps" : "worker", r < 2 ? r : r - 2);
		cJSON_Delete(tf);

		tf = tf_config_of(0, 4, r);
		assert_tf_hosts(tf, "ps", NULL);
		assert_tf_hosts(tf, "worker", all4);
		assert_tf_task(tf, "worker", r);
		cJSON_Delete(tf);
	}
}

/* An IPv6 address in TF_CONFIG goes in brackets. */
static void
test_tf_ipv6(void **state)
{
	static const char *const cmd[] = { "python", "train.py", NULL };
	struct mode_launch l;
	struct job j;
	char err[256];

	(void)state;
	job_init(&j, MODE_TENSORFLOW, 2, NULL, 1, 1, cmd);
	j.nodes[0].host = "fd00::1";
	assert_int_equal(mode_build(&j.plan, &l, err, sizeof(err)), 0);
	assert_string_equal(env_of(l.envp, "TF_CONFIG"),
	                    "{\"cluster\":{\"worker\":[\"[fd00::1]:2223\",\"server2:2223\"]},"
	                    "\"task\":{\"type\":\"worker\",\"index\":1},\"environment\":\"cloud\"}");
	mode_launch_free(&l);
}

enum breakage { B_NONE, B_PS, B_NNODES, B_RANK, B_HOSTFILE, B_MPICH, B_PORT, B_TFPORT,
	B_SLOTS, B_HOST, B_ARGV, B_MASTER, B_MODE };

static const struct {
	enum mode mode;
	int nnodes;
	enum breakage what;
	int value;
	const char *msg;
} bad_plans[] = {
	{ MODE_TENSORFLOW, 3, B_PS, 3, "tensorflow: --ps 3 leaves no worker among 3 nodes" },
	{ MODE_TENSORFLOW, 1, B_PS, 1, "tensorflow: --ps 1 leaves no worker among 1 nodes" },
	{ MODE_TENSORFLOW, 2, B_PS, -1, "tensorflow: --ps -1 is negative" },
	{ MODE_TENSORFLOW, 2, B_TFPORT, 70000, "tensorflow: port 70000 is out of range (1-65535)" },
	{ MODE_SINGLE, 2, B_NONE, 0, "single mode runs on one node; got 2" },
	{ MODE_PYTORCH, 4, B_RANK, 4, "pytorch: node rank 4 is not among 4 nodes" },
	{ MODE_PYTORCH, 4, B_RANK, -1, "pytorch: node rank -1 is not among 4 nodes" },
	{ MODE_PYTORCH, 2, B_NNODES, 0, "pytorch: no nodes to run on" },
	{ MODE_PYTORCH, 2, B_PORT, 0, "pytorch: master port 0 is out of range (1-65535)" },
	{ MODE_PYTORCH, 2, B_SLOTS, 0, "pytorch: node server2 has 0 slots; a node has at least 1" },
	{ MODE_PYTORCH, 2, B_HOST, 0, "pytorch: node rank 1 has no host name" },
	{ MODE_PYTORCH, 2, B_ARGV, 0, "pytorch: no command to run" },
	{ MODE_PYTORCH, 2, B_MASTER, 0, "pytorch: no master address" },
	{ MODE_DEEPSPEED, 2, B_HOSTFILE, 0, "deepspeed: no hostfile path" },
	{ MODE_HOROVOD, 2, B_MPICH, 0, "horovod: no hostfile path" },
	{ MODE_PYTORCH, 2, B_MODE, 0, "unknown mode 7" },
};

static void
test_errors(void **state)
{
	static const char *const cmd[] = { "python", "train.py", NULL };
	static const char *const empty[] = { NULL };

	(void)state;
	for (size_t i = 0; i < sizeof(bad_plans) / sizeof(bad_plans[0]); i++) {
		struct mode_launch l;
		struct job j;
		char err[256] = "";
		int rc;

		job_init(&j, bad_plans[i].mode, bad_plans[i].nnodes, "nvidia", 4, 0, cmd);
		switch (bad_plans[i].what) {
		case B_PS: j.plan.ps = bad_plans[i].value; break;
		case B_NNODES: j.plan.nnodes = bad_plans[i].value; break;
		case B_RANK: j.plan.node_rank = bad_plans[i].value; break;
		case B_HOSTFILE: j.plan.hostfile = NULL; break;
		case B_MPICH: j.plan.mpich_hostfile = ""; break;
		case B_PORT: j.plan.master_port = bad_plans[i].value; break;
		case B_TFPORT: j.plan.tf_port = bad_plans[i].value; break;
		case B_SLOTS: j.nodes[1].slots = bad_plans[i].value; break;
		case B_HOST: j.nodes[1].host = ""; break;
		case B_ARGV: j.plan.argv = (char *const *)empty; break;
		case B_MASTER: j.plan.master_addr = NULL; break;
		case B_MODE: j.plan.mode = (enum mode)7; break;
		case B_NONE: break;
		}
		memset(&l, 0x5a, sizeof(l));
		rc = mode_build(&j.plan, &l, err, sizeof(err));
		if (rc != -EINVAL || strcmp(err, bad_plans[i].msg) != 0)
			fail_msg("bad_plans[%zu]: rc %d \"%s\", want \"%s\"", i, rc, err, bad_plans[i].msg);
		/* nothing to free after a failure */
		assert_null(l.argv);
		assert_null(l.envp);
		assert_int_equal(l.nfiles, 0);
		assert_false(l.run);
	}
}

static const struct {
	const char *in[MAXW];
	const char *want[MAXW];     /* { NULL }: unchanged */
} pytorch_cmds[] = {
	/* the manual's example, and interpreter spellings */
	{ { "python", "/workspace/algorithm/train.py" },
	  { "python", "-m", "T", "L", "/workspace/algorithm/train.py" } },
	{ { "python3", "train.py", "--lr", "0.1" },
	  { "python3", "-m", "T", "L", "train.py", "--lr", "0.1" } },
	{ { "/usr/bin/python3.11", "train.py" },
	  { "/usr/bin/python3.11", "-m", "T", "L", "train.py" } },
	{ { "/opt/conda/bin/python", "train.py" },
	  { "/opt/conda/bin/python", "-m", "T", "L", "train.py" } },
	/* interpreter options stay before -m */
	{ { "python", "-u", "train.py", "-u" },
	  { "python", "-u", "-m", "T", "L", "train.py", "-u" } },
	{ { "python", "-uB", "-W", "ignore", "-Xdev", "train.py" },
	  { "python", "-uB", "-W", "ignore", "-Xdev", "-m", "T", "L", "train.py" } },
	{ { "python", "-X", "dev", "--check-hash-based-pycs", "never", "train.py" },
	  { "python", "-X", "dev", "--check-hash-based-pycs", "never", "-m", "T",
	    "L", "train.py" } },
	{ { "python", "-O", "--", "train.py", "--", "x" },
	  { "python", "-O", "-m", "T", "L", "train.py", "--", "x" } },
	/* a module runs under the launcher's own -m */
	{ { "python", "-m", "mypkg.train", "--epochs", "3" },
	  { "python", "-m", "T", "L", "-m", "mypkg.train", "--epochs", "3" } },
	{ { "python", "-u", "-mmypkg.train" },
	  { "python", "-u", "-m", "T", "L", "-m", "mypkg.train" } },
	{ { "python", "-um", "mypkg.train", "x" },
	  { "python", "-u", "-m", "T", "L", "-m", "mypkg.train", "x" } },
	/* after env's assignments (the form vigil suggests for KEY=VALUE python ...) */
	{ { "env", "A=1", "B=x y", "python3", "train.py" },
	  { "env", "A=1", "B=x y", "python3", "-m", "T", "L", "train.py" } },
	{ { "/usr/bin/env", "python", "-u", "train.py" },
	  { "/usr/bin/env", "python", "-u", "-m", "T", "L", "train.py" } },
	{ { "env", "-i", "python", "train.py" }, { NULL } },
	{ { "env", "A=1" }, { NULL } },
	{ { "env", "A=1", "python", "-m", "torch.distributed.run", "train.py" }, { NULL } },
	/* already a distributed launch, or no script: as given */
	{ { "python", "-m", "torch.distributed.launch", "--nproc_per_node=4", "train.py" }, { NULL } },
	{ { "python", "-m", "torch.distributed.run", "train.py" }, { NULL } },
	{ { "python", "-mtorch.distributed.run", "train.py" }, { NULL } },
	{ { "python", "-um", "torch.distributed.run", "train.py" }, { NULL } },
	{ { "python", "wrap.py", "-m", "torch.distributed.launch" }, { NULL } },
	{ { "python", "-c", "import train; train.main()" }, { NULL } },
	{ { "python", "-uc", "print(1)" }, { NULL } },
	{ { "python", "-" }, { NULL } },
	{ { "python", "-V" }, { NULL } },
	{ { "python" }, { NULL } },
	{ { "python", "-m" }, { NULL } },
	{ { "python", "-W" }, { NULL } },
	/* not python: the user's own launcher */
	{ { "torchrun", "--nnodes=2", "train.py" }, { NULL } },
	{ { "bash", "-c", "python train.py" }, { NULL } },
	{ { "deepspeed", "train.py" }, { NULL } },
	{ { "./train.sh" }, { NULL } },
	{ { "python2", "train.py" }, { NULL } },
	{ { "python3.", "train.py" }, { NULL } },
	{ { "python3.x", "train.py" }, { NULL } },
	{ { "pythonw", "train.py" }, { NULL } },
	{ { "ipython", "train.py" }, { NULL } },
};

static void
test_pytorch_argv(void **state)
{
	static const char *const launcher[] = { "--nproc_per_node=4", "--nnodes=2", "--node_rank=1",
		"--master_addr=server1", "--master_port=2222" };

	(void)state;
	for (size_t i = 0; i < 2 * sizeof(pytorch_cmds) / sizeof(pytorch_cmds[0]); i++) {
		const enum mode_torch t = i % 2 ? MODE_TORCH_RUN : MODE_TORCH_LAUNCH;
		const char *want[MAXW + 8];
		struct mode_launch l;
		struct job j;
		char err[256];
		char what[64];
		size_t n = 0;

		/* "L" stands for the launcher's arguments, "T" for its module */
		if (pytorch_cmds[i / 2].want[0]) {
			for (size_t k = 0; pytorch_cmds[i / 2].want[k]; k++) {
				const char *w = pytorch_cmds[i / 2].want[k];

				if (strcmp(w, "L") == 0) {
					for (size_t m = 0; m < 5; m++)
						want[n++] = launcher[m];
				} else if (strcmp(w, "T") == 0) {
					want[n++] = t == MODE_TORCH_RUN ? "torch.distributed.run"
					                                : "torch.distributed.launch";
				} else {
					want[n++] = w;
				}
			}
		} else {
			for (size_t k = 0; pytorch_cmds[i / 2].in[k]; k++)
				want[n++] = pytorch_cmds[i / 2].in[k];
		}
		want[n] = NULL;
		job_init(&j, MODE_PYTORCH, 2, "nvidia", 4, 1, pytorch_cmds[i / 2].in);
		j.plan.torch_launcher = t;
		assert_int_equal(mode_build(&j.plan, &l, err, sizeof(err)), 0);
		snprintf(what, sizeof(what), "pytorch_cmds[%zu] (%s)", i / 2, mode_torch_name(t));
		assert_argv(l.argv, want, what);
		mode_launch_free(&l);
	}
}

static void
test_horovod(void **state)
{
	static const char *const cmd[] = { "python", "train.py", NULL };
	static const char *const want[] = { "mpirun", "--allow-run-as-root", "-np", "10",
		"-bind-to", "none", "-map-by", "slot", "-x", "NCCL_DEBUG=INFO", "-x", "LD_LIBRARY_PATH",
		"-x", "PATH", "-mca", "pml", "ob1", "-mca", "btl", "^openib", "python", "train.py", NULL };
	static const char *const launchers[] = { "mpirun", "/usr/bin/mpiexec", "orterun",
		"mpirun.openmpi", "mpiexec.hydra", "horovodrun" };
	char *env[] = { (char *)"OMPI_COMM_WORLD_RANK=0", (char *)"OMPI_MCA_ess=pmi",
		(char *)"PMIX_RANK=0", (char *)"PMI_FD=5", (char *)"ORTE_SCHIZO_DETECTION=x",
		(char *)"OPAL_PREFIX=/opt/ompi", (char *)"HOME=/h", (char *)"OMPIX=keep", NULL };
	struct mode_launch l;
	struct job j;
	char err[256];

	(void)state;
	for (int r = 0; r < 2; r++) {
		job_init(&j, MODE_HOROVOD, 2, "nvidia", 4, r, cmd);
		j.nodes[1].slots = 6;
		j.plan.envp = env;
		assert_int_equal(mode_build(&j.plan, &l, err, sizeof(err)), 0);
		for (size_t i = 0; l.envp[i]; i++) {
			if (strncmp(l.envp[i], "OMPI_", 5) == 0)
				assert_string_equal(l.envp[i], "OMPI_MCA_orte_default_hostfile=/etc/mpi/hostfile");
			assert_true(strncmp(l.envp[i], "PMIX_", 5) != 0);
			assert_true(strncmp(l.envp[i], "PMI_", 4) != 0);
		}
		assert_string_equal(env_of(l.envp, "OPAL_PREFIX"), "/opt/ompi");
		/* the manual's HYDRA_IFACE */
		assert_string_equal(env_of(l.envp, "HYDRA_IFACE"), "eth0");
		assert_string_equal(env_of(l.envp, "OMPIX"), "keep");
		assert_string_equal(env_of(l.envp, "HYDRA_HOST_FILE"), "/etc/mpi/mpich_hostfile");
		assert_string_equal(env_of(l.envp, "VIGIL_HOSTFILE"), "/etc/mpi/hostfile");
		/* both files on every node */
		assert_int_equal(l.nfiles, 2);
		assert_string_equal(l.files[0].path, "/etc/mpi/hostfile");
		assert_string_equal(l.files[0].content, "server1 slots=4\nserver2 slots=6\n");
		assert_string_equal(l.files[1].path, "/etc/mpi/mpich_hostfile");
		assert_string_equal(l.files[1].content, "server1:4\nserver2:6\n");
		if (r == 0) {
			assert_true(l.run);
			assert_argv(l.argv, want, "horovod prefix");
		} else {
			assert_false(l.run);
			assert_null(l.argv);
		}
		mode_launch_free(&l);
	}
	for (size_t i = 0; i < sizeof(launchers) / sizeof(launchers[0]); i++) {
		const char *c[] = { launchers[i], "-np", "8", "-H", "a:4,b:4", "python", "train.py", NULL };

		job_init(&j, MODE_HOROVOD, 2, "nvidia", 4, 0, c);
		assert_int_equal(mode_build(&j.plan, &l, err, sizeof(err)), 0);
		assert_argv(l.argv, c, launchers[i]);
		mode_launch_free(&l);
	}
}

/* "A command that contains mpirun is left unchanged": also behind env,
 * in the manual's bash -c form, and in a shell script's later command. */
static void
test_horovod_contains_mpirun(void **state)
{
	static const char *const cmds[][8] = {
		{ "bash", "-c", "mpirun -np 8 python train.py" },
		{ "sh", "-ec", "cd /w && exec mpirun -np 8 python train.py" },
		{ "bash", "-c", "KEY=VALUE /usr/bin/mpirun.openmpi -np 8 python train.py; echo done" },
		{ "bash", "-lc", "echo x|tee y;(mpiexec -n 8 python train.py)" },
		{ "bash", "-c", "'mpirun' -np 8 python t.py" },
		{ "env", "X=1", "mpirun", "-np", "8", "python", "train.py" },
		{ "nohup", "mpiexec.hydra", "-n", "8", "python", "train.py" },
	};
	static const char *const more[][12] = {
		{ "bash", "-c", "if true; then mpirun -np 8 a; fi" },
		{ "bash", "-c", "x=$(hostname)\nsrun python t.py" },
		{ "env", "-u", "DISPLAY", "A=1", "timeout", "-s", "INT", "1h", "mpirun", "a" },
		{ "bash", "-o", "pipefail", "-c", "time nice -n 5 mpiexec -n 2 a | tee log" },
		{ "env", "X=1", "sh", "-c", "! orterun a" },
	};
	static const char *const not_mpi[][8] = {
		{ "python", "train.py", "--log", "mpirun.log" },
		{ "bash", "-c", "python mpirunner.py" },
		{ "python", "mpirun.py" },
		{ "bash", "-c", "echo mpirun; python3 t.py" },
		{ "echo", "mpirun" },
		{ "python", "launch.py", "--launcher", "mpirun" },
		{ "bash", "-c", "echo 'x && mpirun' \"; mpirun\"; python3 t.py" },
		{ "bash", "-c", "# run with mpirun later\npython3 t.py" },
		{ "bash", "-c", "for l in mpirun mpiexec; do echo $l; done" },
		{ "bash", "-c", "command -v mpirun && python3 t.py" },
		{ "bash", "-c", "case $1 in mpirun) echo;; esac" },
		{ "bash", "run.sh", "mpirun" },
	};
	struct mode_launch l;
	struct job j;
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		assert_true(mode_launches_mpi((char *const *)cmds[i]));
		job_init(&j, MODE_HOROVOD, 2, "nvidia", 4, 0, cmds[i]);
		assert_int_equal(mode_build(&j.plan, &l, err, sizeof(err)), 0);
		assert_argv(l.argv, cmds[i], cmds[i][0]);
		mode_launch_free(&l);
	}
	for (size_t i = 0; i < sizeof(more) / sizeof(more[0]); i++)
		if (!mode_launches_mpi((char *const *)more[i]))
			fail_msg("more[%zu] launches MPI", i);
	for (size_t i = 0; i < sizeof(not_mpi) / sizeof(not_mpi[0]); i++) {
		if (mode_launches_mpi((char *const *)not_mpi[i]))
			fail_msg("not_mpi[%zu] taken for an MPI launch", i);
		job_init(&j, MODE_HOROVOD, 2, "nvidia", 4, 0, not_mpi[i]);
		assert_int_equal(mode_build(&j.plan, &l, err, sizeof(err)), 0);
		assert_string_equal(l.argv[0], "mpirun");
		mode_launch_free(&l);
	}
}

/* horovodrun without hosts would run on localhost only (its launch.py):
 * it gets the hostfile; with hosts of its own, nothing is added. */
static void
test_horovodrun(void **state)
{
	static const char *const in[] = { "horovodrun", "-np", "8", "python", "train.py", NULL };
	static const char *const want[] = { "horovodrun", "--hostfile=/etc/mpi/hostfile", "-np", "8",
		"python", "train.py", NULL };
	static const char *const given[] = { "horovodrun", "-np", "8", "--hostfile=h", "python", "t.py", NULL };
	struct mode_launch l;
	struct job j;
	char err[256];

	(void)state;
	job_init(&j, MODE_HOROVOD, 2, "nvidia", 4, 0, in);
	assert_int_equal(mode_build(&j.plan, &l, err, sizeof(err)), 0);
	assert_argv(l.argv, want, "horovodrun");
	mode_launch_free(&l);
	job_init(&j, MODE_HOROVOD, 2, "nvidia", 4, 0, given);
	assert_int_equal(mode_build(&j.plan, &l, err, sizeof(err)), 0);
	assert_argv(l.argv, given, "horovodrun --hostfile");
	mode_launch_free(&l);
}

/* HYDRA_IFACE: the manual's eth0, the plan's interface, or the site's own. */
static void
test_hydra_iface(void **state)
{
	static const char *const cmd[] = { "python", "train.py", NULL };
	char *env[] = { (char *)"HYDRA_IFACE=ib0", NULL };
	struct mode_launch l;
	struct job j;
	char err[256];

	(void)state;
	job_init(&j, MODE_HOROVOD, 2, NULL, 1, 1, cmd);
	j.plan.iface = "eno1";
	assert_int_equal(mode_build(&j.plan, &l, err, sizeof(err)), 0);
	assert_string_equal(env_of(l.envp, "HYDRA_IFACE"), "eno1");
	mode_launch_free(&l);
	j.plan.envp = env;
	assert_int_equal(mode_build(&j.plan, &l, err, sizeof(err)), 0);
	assert_string_equal(env_of(l.envp, "HYDRA_IFACE"), "ib0");
	mode_launch_free(&l);
	/* other modes do not set it */
	job_init(&j, MODE_PYTORCH, 2, NULL, 1, 1, cmd);
	assert_int_equal(mode_build(&j.plan, &l, err, sizeof(err)), 0);
	assert_null(env_of(l.envp, "HYDRA_IFACE"));
	mode_launch_free(&l);
}

/*
 * The environment of a process that Open MPI 4.1.4's mpirun started
 * (`mpirun -np 2 --mca btl_tcp_if_exclude lo,docker0 --oversubscribe env`
 * as root on Debian 12) and of one MPICH 4.0's Hydra started: what is the
 * job's identity goes, the user's and the site's settings stay.
 */
static void
test_job_identity(void **state)
{
	static const char *const identity[] = {
		"OMPI_APP_CTX_NUM_PROCS=2", "OMPI_ARGV=-c env", "OMPI_COMMAND=sh",
		"OMPI_COMM_WORLD_LOCAL_RANK=0", "OMPI_COMM_WORLD_LOCAL_SIZE=2",
		"OMPI_COMM_WORLD_NODE_RANK=0", "OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_SIZE=2",
		"OMPI_FILE_LOCATION=/tmp/ompi.vm.0/pid.12497/0/0", "OMPI_FIRST_RANKS=0",
		"OMPI_MCA_ess=^singleton", "OMPI_MCA_ess_base_jobid=1546584065",
		"OMPI_MCA_ess_base_vpid=0", "OMPI_MCA_initial_wdir=/tmp", "OMPI_MCA_mpi_oversubscribe=0",
		"OMPI_MCA_orte_app_num=0", "OMPI_MCA_orte_bound_at_launch=1",
		"OMPI_MCA_orte_ess_node_rank=0", "OMPI_MCA_orte_ess_num_procs=2",
		"OMPI_MCA_orte_hnp_uri=1546584064.0;tcp://192.0.2.2:52521",
		"OMPI_MCA_orte_jobfam_session_dir=/tmp/ompi.vm.0/pid.12497", "OMPI_MCA_orte_launch=1",
		"OMPI_MCA_orte_local_daemon_uri=1546584064.0;tcp://192.0.2.2:52521",
		"OMPI_MCA_orte_num_nodes=1", "OMPI_MCA_orte_precondition_transports=8350c9c6-af4c7ffa",
		"OMPI_MCA_orte_top_session_dir=/tmp/ompi.vm.0", "OMPI_MCA_pmix=^s1,s2,cray,isolated",
		"OMPI_MCA_shmem_RUNTIME_QUERY_hint=mmap", "OMPI_NUM_APP_CTX=1", "OMPI_UNIVERSE_SIZE=2",
		"PMIX_BFROP_BUFFER_TYPE=PMIX_BFROP_BUFFER_NON_DESC", "PMIX_GDS_MODULE=ds21,ds12,hash",
		"PMIX_HOSTNAME=vm", "PMIX_ID=1546584065.0", "PMIX_NAMESPACE=1546584065", "PMIX_RANK=0",
		"PMIX_SECURITY_MODE=native", "PMIX_SERVER_TMPDIR=/tmp/ompi.vm.0/pid.12497",
		"PMIX_SERVER_URI41=pmix-server.12497;tcp4://127.0.0.1:39117", "PMIX_SYSTEM_TMPDIR=/tmp",
		"PMIX_VERSION=4.2.2rc2",
		/* MPICH's Hydra */
		"HYDI_CONTROL_FD=7", "MPIR_CVAR_CH3_INTERFACE_HOSTNAME=vm", "MPI_LOCALNRANKS=2",
		"MPI_LOCALRANKID=0", "PMI_FD=6", "PMI_RANK=0", "PMI_SIZE=2",
	};
	static const char *const settings[] = {
		"OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1",
		"OMPI_MCA_btl_tcp_if_exclude=lo,docker0", "OMPI_MCA_rmaps_base_oversubscribe=1",
		"OMPI_MCA_plm_rsh_agent=/usr/local/bin/rsh-agent", "OMPI_MCA_btl=self,vader,tcp",
		"OMPI_MCA_orte_default_hostfile=/etc/mpi/hostfile", "OMPI_MCA_orte_keep_fqdn_hostnames=1",
		"OMPI_MCA_orte_tmpdir_base=/scratch", "OMPI_MCA_essential=1", "OMPI_MCA_pmix_base_verbose=5",
		"PMIX_MCA_gds=hash", "PMIX_MCA_mca_base_component_show_load_errors=1",
		"MPIR_CVAR_CH4_NETMOD=ofi", "OPAL_PREFIX=/opt/ompi", "HFI_NO_BACKTRACE=1",
		"IPATH_NO_BACKTRACE=1", "SLURM_JOB_ID=42", "SLURM_PROCID=0", "HYDRA_IFACE=ib0",
		"OMPI", "PMIX", "MPI_HOME=/opt/mpi",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(identity) / sizeof(identity[0]); i++)
		if (!mode_is_job_identity(identity[i]))
			fail_msg("%s is the outer job's identity", identity[i]);
	for (size_t i = 0; i < sizeof(settings) / sizeof(settings[0]); i++)
		if (mode_is_job_identity(settings[i]))
			fail_msg("%s is a setting, not identity", settings[i]);
}

/*
 * What Open MPI's mpirun sets by itself for every process it starts,
 * beside the identity: OMPI_MCA_orte_tmpdir_base (its own default, or the
 * user's value) and PMIX_MCA_mca_base_component_show_load_errors.  Only a
 * tmpdir that differs from the default seen here is the user's (or the
 * site's) and stays.
 */
static void
test_env_kept(void **state)
{
	static const char *const cmd[] = { "python", "train.py", NULL };
	char *plain[] = { (char *)"OMPI_MCA_orte_tmpdir_base=/tmp",
		(char *)"PMIX_MCA_mca_base_component_show_load_errors=1",
		(char *)"PMIX_MCA_gds=hash", (char *)"OMPI_MCA_btl=self,tcp", NULL };
	char *tmpdir[] = { (char *)"TMPDIR=/scratch/job", (char *)"OMPI_MCA_orte_tmpdir_base=/scratch/job",
		NULL };
	char *temp[] = { (char *)"TEMP=/t", (char *)"TMP=/u", (char *)"OMPI_MCA_orte_tmpdir_base=/t", NULL };
	char *user[] = { (char *)"OMPI_MCA_orte_tmpdir_base=/site/tmp", NULL };
	char *user2[] = { (char *)"TMPDIR=/scratch/job", (char *)"OMPI_MCA_orte_tmpdir_base=/tmp", NULL };
	struct mode_launch l;
	struct job j;
	char err[256];

	(void)state;
	assert_false(mode_env_kept("OMPI_MCA_orte_tmpdir_base=/tmp", plain));
	assert_false(mode_env_kept("PMIX_MCA_mca_base_component_show_load_errors=1", plain));
	assert_true(mode_env_kept("PMIX_MCA_gds=hash", plain));
	assert_true(mode_env_kept("OMPI_MCA_btl=self,tcp", plain));
	assert_false(mode_env_kept("OMPI_COMM_WORLD_RANK=0", plain));
	assert_false(mode_env_kept("OMPI_MCA_orte_tmpdir_base=/scratch/job", tmpdir));
	assert_false(mode_env_kept("OMPI_MCA_orte_tmpdir_base=/t", temp));
	assert_true(mode_env_kept("OMPI_MCA_orte_tmpdir_base=/site/tmp", user));
	assert_true(mode_env_kept("OMPI_MCA_orte_tmpdir_base=/tmp", user2));

	job_init(&j, MODE_HOROVOD, 2, NULL, 1, 0, cmd);
	j.plan.envp = plain;
	assert_int_equal(mode_build(&j.plan, &l, err, sizeof(err)), 0);
	assert_null(env_of(l.envp, "OMPI_MCA_orte_tmpdir_base"));
	assert_null(env_of(l.envp, "PMIX_MCA_mca_base_component_show_load_errors"));
	assert_string_equal(env_of(l.envp, "PMIX_MCA_gds"), "hash");
	mode_launch_free(&l);
	j.plan.envp = user;
	assert_int_equal(mode_build(&j.plan, &l, err, sizeof(err)), 0);
	assert_string_equal(env_of(l.envp, "OMPI_MCA_orte_tmpdir_base"), "/site/tmp");
	mode_launch_free(&l);
}

/* Every mode: no agent MPI identity in the training's environment, so
 * MPI_Init there runs as a singleton; the settings stay. */
static void
test_identity_every_mode(void **state)
{
	static const char *const cmd[] = { "./train", NULL };
	char *env[] = { (char *)"OMPI_COMM_WORLD_RANK=1", (char *)"OMPI_MCA_ess=^singleton",
		(char *)"OMPI_MCA_orte_hnp_uri=1.0;tcp://10.0.0.1:4000", (char *)"PMIX_RANK=1",
		(char *)"PMI_RANK=1", (char *)"OMPI_ALLOW_RUN_AS_ROOT=1",
		(char *)"OMPI_MCA_btl_tcp_if_exclude=lo,docker0", (char *)"HOME=/h", NULL };
	struct mode_launch l;
	struct job j;
	char err[256];

	(void)state;
	for (int m = MODE_SINGLE; m <= MODE_TENSORFLOW; m++) {
		job_init(&j, (enum mode)m, m == MODE_SINGLE ? 1 : 2, NULL, 1, 0, cmd);
		j.plan.envp = env;
		assert_int_equal(mode_build(&j.plan, &l, err, sizeof(err)), 0);
		for (size_t i = 0; l.envp[i]; i++)
			if (mode_is_job_identity(l.envp[i]))
				fail_msg("%s mode keeps %s", mode_name((enum mode)m), l.envp[i]);
		assert_string_equal(env_of(l.envp, "OMPI_ALLOW_RUN_AS_ROOT"), "1");
		assert_string_equal(env_of(l.envp, "OMPI_MCA_btl_tcp_if_exclude"), "lo,docker0");
		assert_string_equal(env_of(l.envp, "HOME"), "/h");
		mode_launch_free(&l);
	}
}

/*
 * DeepSpeed's no-SSH mode, as its getting-started tutorial documents it
 * ("Launching without passwordless SSH"): every node runs `deepspeed
 * --hostfile=FILE --no_ssh --node_rank=R --master_addr=A --master_port=P
 * SCRIPT ARGS`, and together they are one job of every slot in the
 * hostfile.  DeepSpeed is not packaged in Debian: this checks the command
 * against that documented contract.
 */
static void
test_deepspeed(void **state)
{
	static const char *const cmd[] = { "deepspeed", "train.py", "--deepspeed",
		"--deepspeed_config", "ds_config.json", NULL };
	static const char *const want[] = { "deepspeed", "--hostfile=/scratch/job/hostfile",
		"--no_ssh", "--node_rank=2", "--master_addr=server1", "--master_port=2222",
		"train.py", "--deepspeed", "--deepspeed_config", "ds_config.json", NULL };
	static const char *const own[] = { "python", "train.py", NULL };
	static const char *const ds[] = { "/opt/bin/ds", "--num_gpus=2", "t.py", NULL };
	static const char *const ds_want[] = { "/opt/bin/ds", "--hostfile=/scratch/job/hostfile",
		"--no_ssh", "--node_rank=2", "--master_addr=server1", "--master_port=2222",
		"--num_gpus=2", "t.py", NULL };
	struct mode_launch l;
	struct job j;
	char err[256];

	(void)state;
	job_init(&j, MODE_DEEPSPEED, 3, "nvidia", 8, 2, cmd);
	j.nodes[2].slots = 2;
	j.plan.hostfile = "/scratch/job/hostfile";
	assert_int_equal(mode_build(&j.plan, &l, err, sizeof(err)), 0);
	assert_true(l.run);
	assert_argv(l.argv, want, "deepspeed");
	/* the job's own hostfile, and DeepSpeed's default place when safe */
	assert_int_equal(l.nfiles, 2);
	assert_string_equal(l.files[0].path, "/scratch/job/hostfile");
	assert_false(l.files[0].optional);
	assert_string_equal(l.files[0].content, "server1 slots=8\nserver2 slots=8\nserver3 slots=2\n");
	assert_string_equal(l.files[1].path, "/job/hostfile");
	assert_true(l.files[1].optional);
	assert_string_equal(l.files[1].content, l.files[0].content);
	assert_string_equal(env_of(l.envp, "VIGIL_HOSTFILE"), "/scratch/job/hostfile");
	assert_null(env_of(l.envp, "OMPI_COMM_WORLD_RANK"));
	mode_launch_free(&l);

	/* DeepSpeed's other name for its runner */
	job_init(&j, MODE_DEEPSPEED, 3, "nvidia", 8, 2, ds);
	j.plan.hostfile = "/scratch/job/hostfile";
	assert_int_equal(mode_build(&j.plan, &l, err, sizeof(err)), 0);
	assert_argv(l.argv, ds_want, "ds");
	mode_launch_free(&l);

	/* the hostfile already at /job/hostfile: written once */
	job_init(&j, MODE_DEEPSPEED, 3, "nvidia", 8, 2, own);
	j.plan.hostfile = "/job/hostfile";
	assert_int_equal(mode_build(&j.plan, &l, err, sizeof(err)), 0);
	assert_int_equal(l.nfiles, 1);
	assert_false(l.files[0].optional);
	/* not the DeepSpeed launcher: as given */
	assert_argv(l.argv, own, "deepspeed mode, own command");
	mode_launch_free(&l);
}

/* The manual's torchrun example runs as printed: vigil's variables in the
 * command's words take this node's values. */
static void
test_expand(void **state)
{
	static const char *const cmd[] = { "torchrun", "--nnodes", "${WORLD_SIZE}",
		"--nproc_per_node", "${SLOTS}", "--node_rank", "${RANK}", "--master_addr",
		"${MASTER_ADDR}", "--master_port", "${MASTER_PORT}", "/w/train.py",
		"--out=ckpt.$RANK.pt", "$RANKS", "${RANK", "$", "${HOME}", "$$RANK", "a$SLOTS$RANK", NULL };
	static const char *const want[] = { "torchrun", "--nnodes", "4", "--nproc_per_node", "8",
		"--node_rank", "2", "--master_addr", "server1", "--master_port", "2222", "/w/train.py",
		"--out=ckpt.2.pt", "$RANKS", "${RANK", "$", "${HOME}", "$2", "a82", NULL };
	struct mode_launch l;
	struct job j;
	char err[256];

	(void)state;
	for (int m = MODE_SINGLE; m <= MODE_TENSORFLOW; m++) {
		if (m == MODE_HOROVOD || m == MODE_SINGLE)
			continue;
		job_init(&j, (enum mode)m, 4, "nvidia", 8, 2, cmd);
		assert_int_equal(mode_build(&j.plan, &l, err, sizeof(err)), 0);
		assert_argv(l.argv, want, mode_name((enum mode)m));
		mode_launch_free(&l);
	}
}

/*
 * vigil's variables are replaced in the words vigil runs, never in the
 * text of a shell's -c script: there '$RANK' in single quotes, an
 * assignment and a loop variable mean what the shell says, and the
 * environment holds the same values.  The words around the script (the
 * shell's own arguments, an env prefix) are the command's and are replaced.
 */
static void
test_expand_shell(void **state)
{
	static const char script[] =
		"echo '$RANK' \"$WORLD_SIZE\"; RANK=$((RANK+10)); echo $RANK; "
		"for WORLD_SIZE in a b; do echo $WORLD_SIZE; done";
	static const char *const shells[][8] = {
		{ "bash", "-c", script, "name", "$RANK" },
		{ "/bin/bash", "-c", script, "name", "$RANK" },
		{ "sh", "-c", script, "name", "$RANK" },
		{ "dash", "-c", script, "name", "$RANK" },
		{ "zsh", "-c", script, "name", "$RANK" },
		{ "ksh", "-c", script, "name", "$RANK" },
		{ "bash", "-lc", script, "name", "$RANK" },
		{ "bash", "-e", "-c", script, "name", "$RANK" },
		{ "bash", "-o", "pipefail", "-c", script, "name", "$RANK" },
		{ "bash", "--norc", "-c", script, "name", "$RANK" },
		{ "bash", "-c", "--", script, "name", "$RANK" },
		{ "env", "X=$RANK", "bash", "-c", script, "name", "$RANK" },
	};
	static const char *const python[] = { "python3", "-c", "print('$RANK')", NULL };
	struct mode_launch l;
	struct job j;
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(shells) / sizeof(shells[0]); i++) {
		size_t n = 0;
		bool seen = false;

		job_init(&j, MODE_SINGLE, 1, NULL, 1, 0, shells[i]);
		j.nodes[0].slots = 1;
		assert_int_equal(mode_build(&j.plan, &l, err, sizeof(err)), 0);
		for (n = 0; shells[i][n]; n++) {
			if (shells[i][n] == script) {
				assert_string_equal(l.argv[n], script);
				seen = true;
			} else if (strcmp(shells[i][n], "$RANK") == 0) {
				assert_string_equal(l.argv[n], "0");        /* the shell's $1 */
			} else if (strcmp(shells[i][n], "X=$RANK") == 0) {
				assert_string_equal(l.argv[n], "X=0");
			} else {
				assert_string_equal(l.argv[n], shells[i][n]);
			}
		}
		assert_true(seen);
		assert_null(l.argv[n]);
		mode_launch_free(&l);
	}
	/* a shell without -c runs a script file: its words are vigil's to fill */
	{
		static const char *const file[] = { "bash", "run.sh", "$RANK", NULL };
		static const char *const want[] = { "bash", "run.sh", "0", NULL };

		job_init(&j, MODE_SINGLE, 1, NULL, 1, 0, file);
		assert_int_equal(mode_build(&j.plan, &l, err, sizeof(err)), 0);
		assert_argv(l.argv, want, "bash run.sh");
		mode_launch_free(&l);
	}
	/* python's -c is not a shell script: replaced as before */
	job_init(&j, MODE_SINGLE, 1, NULL, 1, 0, python);
	assert_int_equal(mode_build(&j.plan, &l, err, sizeof(err)), 0);
	assert_string_equal(l.argv[2], "print('0')");
	mode_launch_free(&l);
}

/* A node with boards of several vendors (the bare-PCI synthetic node:
 * NVIDIA, AMD, AMD, NVIDIA, NVIDIA in slot order): each visible-device
 * variable lists its own vendor's boards. */
static void
test_mixed_vendors(void **state)
{
	static const char *const cmd[] = { "./train", NULL };
	static const char *const vendors[] = { "nvidia", "amd", "amd", "nvidia", "nvidia" };
	char *env[] = { (char *)"ROCR_VISIBLE_DEVICES=1", NULL };
	struct mode_launch l;
	struct job j;
	char err[256];

	(void)state;
	job_init(&j, MODE_SINGLE, 1, "nvidia", 5, 0, cmd);
	j.plan.slot_vendors = vendors;
	assert_int_equal(mode_build(&j.plan, &l, err, sizeof(err)), 0);
	assert_string_equal(env_of(l.envp, "CUDA_VISIBLE_DEVICES"), "0,1,2");
	assert_string_equal(env_of(l.envp, "ROCR_VISIBLE_DEVICES"), "0,1");
	assert_null(env_of(l.envp, "MLU_VISIBLE_DEVICES"));
	assert_string_equal(env_of(l.envp, "SLOTS"), "5");
	mode_launch_free(&l);

	/* a preset list of one vendor is kept and counted as it is */
	j.plan.envp = env;
	assert_int_equal(mode_build(&j.plan, &l, err, sizeof(err)), 0);
	assert_string_equal(env_of(l.envp, "CUDA_VISIBLE_DEVICES"), "0,1,2");
	assert_string_equal(env_of(l.envp, "ROCR_VISIBLE_DEVICES"), "1");
	assert_string_equal(env_of(l.envp, "SLOTS"), "4");
	mode_launch_free(&l);
}

/* PyTorch mode and a python command inside a shell's script: warned, with
 * the form that keeps the launcher; not when the script has one. */
static void
test_pytorch_shell(void **state)
{
	static const char *const plain[] = { "bash", "-c", "KEY=1 python3 train.py && python3 eval.py", NULL };
	static const char *const has[] = { "bash", "-c",
		"python -m torch.distributed.launch --nproc_per_node=$SLOTS t.py && python e.py", NULL };
	static const char *const run[] = { "sh", "-c", "torchrun --nnodes $WORLD_SIZE t.py", NULL };
	static const char *const none[] = { "bash", "-c", "./train.sh", NULL };
	struct mode_launch l;
	struct job j;
	char err[256];

	(void)state;
	job_init(&j, MODE_PYTORCH, 2, NULL, 1, 0, plain);
	assert_int_equal(mode_build(&j.plan, &l, err, sizeof(err)), 0);
	assert_non_null(l.warning);
	assert_non_null(strstr(l.warning, "python -m torch.distributed.launch --nproc_per_node=$SLOTS "
	                                  "--nnodes=$WORLD_SIZE --node_rank=$RANK"));
	assert_non_null(strstr(l.warning, "env KEY=VALUE python"));
	mode_launch_free(&l);
	job_init(&j, MODE_PYTORCH, 2, NULL, 1, 0, has);
	assert_int_equal(mode_build(&j.plan, &l, err, sizeof(err)), 0);
	assert_null(l.warning);
	mode_launch_free(&l);
	job_init(&j, MODE_PYTORCH, 2, NULL, 1, 0, run);
	assert_int_equal(mode_build(&j.plan, &l, err, sizeof(err)), 0);
	assert_null(l.warning);
	mode_launch_free(&l);
	job_init(&j, MODE_PYTORCH, 2, NULL, 1, 0, none);
	assert_int_equal(mode_build(&j.plan, &l, err, sizeof(err)), 0);
	assert_null(l.warning);
	mode_launch_free(&l);
	/* other modes run shells as given, silently */
	job_init(&j, MODE_SINGLE, 1, NULL, 1, 0, plain);
	assert_int_equal(mode_build(&j.plan, &l, err, sizeof(err)), 0);
	assert_null(l.warning);
	mode_launch_free(&l);
}

/* Debian 12's torch 1.13 on Python 3.11 needs PET_REDIRECTS and PET_TEE
 * (a value other than its default "0") for torch.distributed.run to start;
 * the user's own values win. */
static void
test_torch_workaround(void **state)
{
	static const char *const cmd[] = { "python", "train.py", NULL };
	char *env[] = { (char *)"PET_TEE=1", NULL };
	enum mode_torch t = MODE_TORCH_RUN;
	struct mode_launch l;
	struct job j;
	char err[256];

	(void)state;
	job_init(&j, MODE_PYTORCH, 2, NULL, 1, 0, cmd);
	assert_int_equal(mode_build(&j.plan, &l, err, sizeof(err)), 0);
	assert_string_equal(env_of(l.envp, "PET_REDIRECTS"), "9:1");
	assert_string_equal(env_of(l.envp, "PET_TEE"), "9:1");
	mode_launch_free(&l);
	j.plan.envp = env;
	assert_int_equal(mode_build(&j.plan, &l, err, sizeof(err)), 0);
	assert_string_equal(env_of(l.envp, "PET_TEE"), "1");
	mode_launch_free(&l);

	assert_int_equal(mode_torch_parse("auto", &t), 0);
	assert_int_equal(t, MODE_TORCH_AUTO);
	assert_int_equal(mode_torch_parse("launch", &t), 0);
	assert_int_equal(t, MODE_TORCH_LAUNCH);
	assert_int_equal(mode_torch_parse("run", &t), 0);
	assert_int_equal(t, MODE_TORCH_RUN);
	assert_int_equal(mode_torch_parse("torchrun", &t), -EINVAL);
	assert_int_equal(mode_torch_parse(NULL, &t), -EINVAL);
	assert_string_equal(mode_torch_name(MODE_TORCH_LAUNCH), "launch");
	assert_string_equal(mode_torch_name(MODE_TORCH_RUN), "run");
	assert_string_equal(mode_torch_name(MODE_TORCH_AUTO), "auto");
}

/*
 * torch's launchers look at their workers every PET_MONITOR_INTERVAL
 * seconds (5 by default): a tenth of the grace period, between 0.1 and 1 s,
 * so that a worker that saved and exited is seen well within the grace;
 * the user's own value wins.
 */
static void
test_torch_monitor(void **state)
{
	static const char *const cmd[] = { "torchrun", "--nproc_per_node=2", "t.py", NULL };
	static const struct {
		double grace;
		const char *want;
	} cases[] = { { 5, "0.5" }, { 30, "1" }, { 0, "1" }, { 0.2, "0.1" }, { 2.5, "0.25" } };
	char *env[] = { (char *)"PET_MONITOR_INTERVAL=3", NULL };
	struct mode_launch l;
	struct job j;
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		job_init(&j, MODE_PYTORCH, 2, NULL, 1, 0, cmd);
		j.plan.grace_s = cases[i].grace;
		assert_int_equal(mode_build(&j.plan, &l, err, sizeof(err)), 0);
		assert_string_equal(env_of(l.envp, "PET_MONITOR_INTERVAL"), cases[i].want);
		mode_launch_free(&l);
	}
	j.plan.envp = env;
	assert_int_equal(mode_build(&j.plan, &l, err, sizeof(err)), 0);
	assert_string_equal(env_of(l.envp, "PET_MONITOR_INTERVAL"), "3");
	mode_launch_free(&l);
	/* other modes leave torch alone */
	job_init(&j, MODE_DEEPSPEED, 2, NULL, 1, 0, cmd);
	assert_int_equal(mode_build(&j.plan, &l, err, sizeof(err)), 0);
	assert_null(env_of(l.envp, "PET_MONITOR_INTERVAL"));
	mode_launch_free(&l);
}

/* A scratch directory (tmp_setup()). */
struct tmp {
	char dir[PATH_MAX];
};

/* Writes TEXT (LEN bytes) to DIR/NAME, making NAME's directory. */
static void
put_file(const char *dir, const char *name, const char *text, size_t len)
{
	char path[PATH_MAX + 64], sub[PATH_MAX + 64];
	const char *slash = strrchr(name, '/');
	FILE *f;

	if (slash) {
		snprintf(sub, sizeof(sub), "%s/%.*s", dir, (int)(slash - name), name);
		assert_int_equal(mkdir(sub, 0755), 0);
	}
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

/* The command mode_build() makes of CMD under --torch-launcher T, in DIR;
 * its launcher module ("launch", "run" or "" when none) and the note. */
static void
torch_case(const char *dir, const char *const *cmd, enum mode_torch t, const char *want,
           const char *note)
{
	struct mode_launch l;
	struct job j;
	char err[256];
	const char *got = "";

	job_init(&j, MODE_PYTORCH, 2, NULL, 1, 0, cmd);
	j.plan.torch_launcher = t;
	j.plan.workdir = dir;
	assert_int_equal(mode_build(&j.plan, &l, err, sizeof(err)), 0);
	for (size_t i = 0; l.argv[i]; i++)
		if (strncmp(l.argv[i], "torch.distributed.", 18) == 0 && strcmp(l.argv[i - 1], "-m") == 0)
			got = l.argv[i] + 18;
	if (strcmp(got, want) != 0)
		fail_msg("%s: launcher \"%s\", want \"%s\"", cmd[1], got, want);
	if (!note)
		assert_null(l.note);
	else if (!l.note || !strstr(l.note, note))
		fail_msg("%s: note \"%s\" lacks \"%s\"", cmd[1], l.note ? l.note : "(none)", note);
	mode_launch_free(&l);
}

/*
 * --torch-launcher auto (the default) reads the script: one that declares
 * --local_rank or --local-rank gets torch.distributed.launch, which passes
 * it; one that does not gets torch.distributed.run, whose workers read
 * LOCAL_RANK (pytorch/examples' ddp-tutorial-series/multinode.py is one).
 * What cannot be read keeps the manual's launch.  The note says which and
 * why; launch and run given are taken as they are.
 */
static void
test_torch_auto(void **state)
{
	struct tmp *d = *state;
	static const char legacy[] = "import argparse\np = argparse.ArgumentParser()\n"
		"p.add_argument(\"--local_rank\", type=int, default=0)\nargs = p.parse_args()\n";
	static const char dash[] = "parser.add_argument('--local-rank', '--local_rank', type=int)\n";
	static const char argv_style[] = "import sys\nfor a in sys.argv:\n"
		"    if a.startswith(\"--local_rank=\"):\n        lr = int(a.split('=')[1])\n";
	static const char modern[] = "# torchrun passes no --local_rank; LOCAL_RANK is read\n"
		"import argparse, os\np = argparse.ArgumentParser()\n"
		"p.add_argument('total_epochs', type=int)\np.add_argument('--local_rank_file')\n"
		"p.parse_args()\nlocal_rank = int(os.environ[\"LOCAL_RANK\"])\n";
	static const char zipapp[] = "PK\003\004\0\0--local_rank";
	static const char *const c_legacy[] = { "python3", "legacy.py", NULL };
	static const char *const c_dash[] = { "python3", "dash.py", "--epochs", "3", NULL };
	static const char *const c_argv[] = { "python3", "-u", "argv_style.py", NULL };
	static const char *const c_modern[] = { "env", "A=1", "python3", "modern.py", "10", NULL };
	static const char *const c_zip[] = { "python3", "app.pyz", NULL };
	static const char *const c_missing[] = { "python3", "missing.py", NULL };
	static const char *const c_dir[] = { "python3", "pkg", NULL };
	static const char *const c_mod[] = { "python3", "-m", "pkg.train", NULL };
	static const char *const c_mainmod[] = { "python3", "-m", "app", NULL };
	static const char *const c_nomod[] = { "python3", "-m", "site.train", NULL };
	static const char *const c_torchrun[] = { "torchrun", "--nproc_per_node=2", "modern.py", NULL };
	char abs[PATH_MAX + 32];
	const char *c_abs[] = { "python3", abs, NULL };

	put_file(d->dir, "legacy.py", legacy, sizeof(legacy) - 1);
	put_file(d->dir, "dash.py", dash, sizeof(dash) - 1);
	put_file(d->dir, "argv_style.py", argv_style, sizeof(argv_style) - 1);
	put_file(d->dir, "modern.py", modern, sizeof(modern) - 1);
	put_file(d->dir, "app.pyz", zipapp, sizeof(zipapp) - 1);
	put_file(d->dir, "pkg/train.py", legacy, sizeof(legacy) - 1);
	put_file(d->dir, "app/__main__.py", modern, sizeof(modern) - 1);

	torch_case(d->dir, c_legacy, MODE_TORCH_AUTO, "launch",
	           "torch.distributed.launch: legacy.py declares a --local_rank option");
	torch_case(d->dir, c_dash, MODE_TORCH_AUTO, "launch", "dash.py declares a --local_rank");
	torch_case(d->dir, c_argv, MODE_TORCH_AUTO, "launch", "argv_style.py declares a");
	torch_case(d->dir, c_modern, MODE_TORCH_AUTO, "run",
	           "torch.distributed.run: modern.py declares no --local_rank option");
	torch_case(d->dir, c_zip, MODE_TORCH_AUTO, "launch", "app.pyz cannot be read (not text)");
	torch_case(d->dir, c_missing, MODE_TORCH_AUTO, "launch",
	           "torch.distributed.launch, the manual's: missing.py cannot be read (No such file");
	torch_case(d->dir, c_dir, MODE_TORCH_AUTO, "launch", "pkg cannot be read (Is a directory)");
	torch_case(d->dir, c_mod, MODE_TORCH_AUTO, "launch", "pkg/train.py declares a");
	torch_case(d->dir, c_mainmod, MODE_TORCH_AUTO, "run", "app/__main__.py declares no");
	torch_case(d->dir, c_nomod, MODE_TORCH_AUTO, "launch", "module site.train is not found in the working directory");
	/* given, it is taken as it is */
	torch_case(d->dir, c_modern, MODE_TORCH_LAUNCH, "launch",
	           "torch.distributed.launch (--torch-launcher launch)");
	torch_case(d->dir, c_legacy, MODE_TORCH_RUN, "run", "torch.distributed.run (--torch-launcher run)");
	/* a command vigil does not put under a launcher has no note */
	torch_case(d->dir, c_torchrun, MODE_TORCH_AUTO, "", NULL);
	/* an absolute path, whatever the working directory */
	snprintf(abs, sizeof(abs), "%s/modern.py", d->dir);
	torch_case("/nonexistent", c_abs, MODE_TORCH_AUTO, "run", "declares no --local_rank");
}

/* A failure vigil knows the fix for: a script that rejects --local_rank. */
static void
test_failure_hint(void **state)
{
	static const char argparse[] = "usage: t.py [-h]\nt.py: error: unrecognized arguments: "
		"--local_rank=0\nERROR:torch.distributed.elastic:failed (exitcode: 2)\n";
	static const char torch2[] = "t.py: error: unrecognized arguments: --foo --local-rank=1";
	static const char other[] = "t.py: error: unrecognized arguments: --foo\n--local_rank=0 was given\n";

	(void)state;
	assert_non_null(mode_failure_hint(MODE_PYTORCH, argparse, sizeof(argparse) - 1));
	assert_non_null(strstr(mode_failure_hint(MODE_PYTORCH, argparse, sizeof(argparse) - 1),
	                       "--torch-launcher run"));
	assert_non_null(mode_failure_hint(MODE_PYTORCH, torch2, sizeof(torch2) - 1));
	assert_null(mode_failure_hint(MODE_PYTORCH, other, sizeof(other) - 1));
	assert_null(mode_failure_hint(MODE_DEEPSPEED, argparse, sizeof(argparse) - 1));
	assert_null(mode_failure_hint(MODE_PYTORCH, argparse, 20));
	assert_null(mode_failure_hint(MODE_PYTORCH, "", 0));
}

static void
test_describe(void **state)
{
	static const char *const cmd[] = { "python", "it's.py", NULL };
	char *env[] = { (char *)"HOME=/h", (char *)"PMIX_Z=1", (char *)"PMIX_Y=2", (char *)"PMIX_Z=3",
		(char *)"A=1", NULL };
	struct mode_launch l;
	struct job j;
	char err[256];
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	job_init(&j, MODE_HOROVOD, 1, NULL, 1, 0, cmd);
	j.plan.envp = env;
	assert_int_equal(mode_build(&j.plan, &l, err, sizeof(err)), 0);
	f = open_memstream(&text, &len);
	assert_non_null(f);
	mode_describe(f, &l, env);
	assert_int_equal(fclose(f), 0);
	assert_string_equal(text,
		"env: HYDRA_HOST_FILE=/etc/mpi/mpich_hostfile\n"
		"env: HYDRA_IFACE=eth0\n"
		"env: MASTER_ADDR=server1\n"
		"env: MASTER_PORT=2222\n"
		"env: OMPI_MCA_orte_default_hostfile=/etc/mpi/hostfile\n"
		"env: RANK=0\n"
		"env: SLOTS=1\n"
		"env: VIGIL_HOSTFILE=/etc/mpi/hostfile\n"
		"env: VIGIL_MODE=horovod\n"
		"env: VIGIL_NODE_RANK=0\n"
		"env: VIGIL_WORLD_SIZE=1\n"
		"env: WORLD_SIZE=1\n"
		"unset: PMIX_Y\n"
		"unset: PMIX_Z\n"
		"file: /etc/mpi/hostfile\n"
		"  server1 slots=1\n"
		"file: /etc/mpi/mpich_hostfile\n"
		"  server1:1\n"
		"command: mpirun --allow-run-as-root -np 1 -bind-to none -map-by slot "
		"-x NCCL_DEBUG=INFO -x LD_LIBRARY_PATH -x PATH -mca pml ob1 -mca btl '^openib' "
		"python 'it'\\''s.py'\n");
	free(text);
	mode_launch_free(&l);
}

static int
tmp_setup(void **state)
{
	const char *t = getenv("TMPDIR");
	struct tmp *d = calloc(1, sizeof(*d));

	if (!d)
		return -1;
	snprintf(d->dir, sizeof(d->dir), "%s/vigil-modes-XXXXXX", t && *t ? t : "/tmp");
	if (!mkdtemp(d->dir)) {
		free(d);
		return -1;
	}
	*state = d;
	return 0;
}

/* rm -r of what the tests created: plain files and directories. */
static int
remove_tree(const char *path)
{
	struct stat st;
	DIR *d;
	struct dirent *e;
	int rc = 0;

	if (lstat(path, &st) < 0)
		return -1;
	if (!S_ISDIR(st.st_mode))
		return unlink(path);
	d = opendir(path);
	if (!d)
		return -1;
	while ((e = readdir(d))) {
		char sub[PATH_MAX];

		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name);
		if (remove_tree(sub) < 0)
			rc = -1;
	}
	closedir(d);
	if (rmdir(path) < 0)
		rc = -1;
	return rc;
}

static int
tmp_teardown(void **state)
{
	struct tmp *d = *state;
	int rc = remove_tree(d->dir);

	free(d);
	return rc;
}

/* Names in DIR, sorted, joined by spaces. */
static void
list_dir(const char *dir, char *out, size_t outlen)
{
	struct dirent **names;
	int n = scandir(dir, &names, NULL, alphasort);
	size_t o = 0;

	out[0] = '\0';
	assert_true(n >= 0);
	for (int i = 0; i < n; i++) {
		if (strcmp(names[i]->d_name, ".") != 0 && strcmp(names[i]->d_name, "..") != 0)
			o += (size_t)snprintf(out + o, outlen - o, "%s%s", o ? " " : "", names[i]->d_name);
		free(names[i]);
	}
	free(names);
}

static void
assert_file(const char *path, const char *content)
{
	struct stat st;
	char *s = read_text(path);

	assert_non_null(s);
	assert_string_equal(s, content);
	free(s);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0644);
}

static void
test_write_files(void **state)
{
	struct tmp *d = *state;
	char p1[PATH_MAX + 32], p2[PATH_MAX + 32], sub[PATH_MAX + 32], names[256];
	struct mode_launch l = { 0 };
	char err[PATH_MAX + 128] = "";

	snprintf(p1, sizeof(p1), "%s/etc/mpi/hostfile", d->dir);
	snprintf(p2, sizeof(p2), "%s/mpich_hostfile", d->dir);
	l.files[0].path = p1;
	l.files[0].content = (char *)"server1 slots=4\nserver2 slots=4\n";
	l.files[1].path = p2;
	l.files[1].content = (char *)"server1:4\nserver2:4\n";
	l.nfiles = 2;
	assert_int_equal(mode_write_files(&l, err, sizeof(err)), 0);
	assert_file(p1, "server1 slots=4\nserver2 slots=4\n");
	assert_file(p2, "server1:4\nserver2:4\n");
	/* no temporary file left beside them */
	list_dir(d->dir, names, sizeof(names));
	assert_string_equal(names, "etc mpich_hostfile");
	snprintf(sub, sizeof(sub), "%s/etc/mpi", d->dir);
	list_dir(sub, names, sizeof(names));
	assert_string_equal(names, "hostfile");

	/* rewriting replaces the file whole: a new inode renamed in place */
	{
		struct stat before, after;

		assert_int_equal(stat(p1, &before), 0);
		l.files[0].content = (char *)"server3 slots=2\n";
		l.nfiles = 1;
		assert_int_equal(mode_write_files(&l, err, sizeof(err)), 0);
		assert_file(p1, "server3 slots=2\n");
		assert_int_equal(stat(p1, &after), 0);
		assert_true(before.st_ino != after.st_ino);
		list_dir(sub, names, sizeof(names));
		assert_string_equal(names, "hostfile");
	}

	/* a relative path works too */
	{
		char cwd[PATH_MAX];

		assert_non_null(getcwd(cwd, sizeof(cwd)));
		assert_int_equal(chdir(d->dir), 0);
		l.files[0].path = (char *)"rel_hostfile";
		l.files[0].content = (char *)"x slots=1\n";
		assert_int_equal(mode_write_files(&l, err, sizeof(err)), 0);
		assert_int_equal(chdir(cwd), 0);
		snprintf(p1, sizeof(p1), "%s/rel_hostfile", d->dir);
		assert_file(p1, "x slots=1\n");
	}
}

/* A directory on the way that is a regular file: a clean error naming the
 * path, and nothing left behind. */
static void
test_write_files_fail(void **state)
{
	struct tmp *d = *state;
	char reg[PATH_MAX + 32], path[PATH_MAX + 64], want[PATH_MAX + 128], names[256];
	struct mode_launch l = { 0 };
	char err[PATH_MAX + 128] = "";
	FILE *f;

	snprintf(reg, sizeof(reg), "%s/regular", d->dir);
	f = fopen(reg, "w");
	assert_non_null(f);
	assert_int_equal(fclose(f), 0);
	snprintf(path, sizeof(path), "%s/regular/mpi/hostfile", d->dir);
	l.files[0].path = path;
	l.files[0].content = (char *)"server1 slots=1\n";
	l.nfiles = 1;
	assert_int_equal(mode_write_files(&l, err, sizeof(err)), -ENOTDIR);
	snprintf(want, sizeof(want), "cannot write %s: %s", path, strerror(ENOTDIR));
	assert_string_equal(err, want);

	snprintf(path, sizeof(path), "%s/regular/hostfile", d->dir);
	assert_int_equal(mode_write_files(&l, err, sizeof(err)), -ENOTDIR);
	list_dir(d->dir, names, sizeof(names));
	assert_string_equal(names, "regular");

	/* the first file fails: the second is not written */
	snprintf(reg, sizeof(reg), "%s/second", d->dir);
	l.files[1].path = reg;
	l.files[1].content = (char *)"x";
	l.nfiles = 2;
	assert_true(mode_write_files(&l, err, sizeof(err)) < 0);
	list_dir(d->dir, names, sizeof(names));
	assert_string_equal(names, "regular");
}

/* DeepSpeed's /job/hostfile: written into a directory vigil creates or
 * that is private to the caller; skipped, without failing, elsewhere. */
static void
test_write_optional(void **state)
{
	struct tmp *d = *state;
	char job[PATH_MAX + 32], opt[PATH_MAX + 64], req[PATH_MAX + 32], names[256];
	struct mode_launch l = { 0 };
	char err[PATH_MAX + 128] = "";
	char *got;

	snprintf(req, sizeof(req), "%s/hostfile", d->dir);
	snprintf(job, sizeof(job), "%s/job", d->dir);
	snprintf(opt, sizeof(opt), "%s/job/hostfile", d->dir);
	l.files[0].path = req;
	l.files[0].content = (char *)"server1 slots=2\n";
	l.files[1].path = opt;
	l.files[1].content = (char *)"server1 slots=2\n";
	l.files[1].optional = true;
	l.nfiles = 2;

	/* absent: created, written */
	assert_int_equal(mode_write_files(&l, err, sizeof(err)), 0);
	got = slurp(opt, 256, NULL);
	assert_string_equal(got, "server1 slots=2\n");
	free(got);
	assert_int_equal(unlink(opt), 0);

	/* writable by others: not written, and the job goes on */
	assert_int_equal(chmod(job, 0777), 0);
	assert_int_equal(mode_write_files(&l, err, sizeof(err)), 0);
	assert_int_equal(access(opt, F_OK), -1);
	assert_int_equal(access(req, F_OK), 0);
	assert_int_equal(rmdir(job), 0);

	/* a symbolic link where the directory should be: not followed */
	assert_int_equal(symlink(d->dir, job), 0);
	assert_int_equal(mode_write_files(&l, err, sizeof(err)), 0);
	assert_int_equal(unlink(job), 0);
	list_dir(d->dir, names, sizeof(names));
	assert_string_equal(names, "hostfile");
}

int
main(void)
{
	static const struct CMUnitTest direct[] = {
		cmocka_unit_test(test_mode_names),
		cmocka_unit_test(test_env_values),
		cmocka_unit_test(test_cpu_node),
		cmocka_unit_test(test_visible_vendors),
		cmocka_unit_test(test_visible_preset),
		cmocka_unit_test(test_tf_config),
		cmocka_unit_test(test_tf_ipv6),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_pytorch_argv),
		cmocka_unit_test(test_horovod),
		cmocka_unit_test(test_horovod_contains_mpirun),
		cmocka_unit_test(test_horovodrun),
		cmocka_unit_test(test_hydra_iface),
		cmocka_unit_test(test_job_identity),
		cmocka_unit_test(test_identity_every_mode),
		cmocka_unit_test(test_deepspeed),
		cmocka_unit_test(test_expand),
		cmocka_unit_test(test_expand_shell),
		cmocka_unit_test(test_env_kept),
		cmocka_unit_test(test_torch_monitor),
		cmocka_unit_test_setup_teardown(test_torch_auto, tmp_setup, tmp_teardown),
		cmocka_unit_test(test_failure_hint),
		cmocka_unit_test(test_mixed_vendors),
		cmocka_unit_test(test_pytorch_shell),
		cmocka_unit_test(test_torch_workaround),
		cmocka_unit_test(test_describe),
		cmocka_unit_test_setup_teardown(test_write_files, tmp_setup, tmp_teardown),
		cmocka_unit_test_setup_teardown(test_write_files_fail, tmp_setup, tmp_teardown),
		cmocka_unit_test_setup_teardown(test_write_optional, tmp_setup, tmp_teardown),
	};
	const size_t ndirect = sizeof(direct) / sizeof(direct[0]);
	struct CMUnitTest tests[sizeof(direct) / sizeof(direct[0]) + NSCEN];

	memcpy(tests, direct, sizeof(direct));
	/* one test per golden file, named after it */
	for (size_t i = 0; i < NSCEN; i++) {
		tests[ndirect + i] = (struct CMUnitTest){
			.name = scenarios[i].name,
			.test_func = test_golden,
			.initial_state = (void *)&scenarios[i],
		};
	}
	return _cmocka_run_group_tests("test_modes", tests, ndirect + NSCEN, NULL, NULL);
}
