/*
 * bench_parse.c - throughput of the timing-line parser, as a ratio to
 * splitting the same bytes into lines with memchr() alone (the least the
 * agent does with a training's output), measured in the same run; and of
 * the agent's whole path for a training's stdout, as node.c runs it: the
 * bytes in reads of 64 KiB through linebuf_feed_marked() (only the lines
 * that hold a timing line's mark come out of it) and the inline tail test
 * (progress_tail()), the others through progress_parse() and into the
 * node's iterations (perf_node_add(), forgotten as reductions would),
 * against memchr() splitting of the same reads.
 *
 * The input is generated in memory: about BENCH_MB (default 200) MB of
 * what a training prints -- logger lines behind torchrun's prefix, NCCL
 * and Python warnings, progress bars with UTF-8 blocks, an occasional
 * tensor dumped on one long line, and one timing line in 20
 * (BENCH_TIMING_PCT per cent of the lines, 0-99; default 5).  Each figure
 * is the median of REPS (default 5) runs, the two interleaved.
 *
 * Output: parse: <MB/s> vs memchr split <MB/s>: ratio X (goal >= 0.9)
 *         agent path: <MB/s> vs memchr split <MB/s>: ratio X (goal >= 0.9)
 * BENCH_ONLY=split|splitreads|parse|path runs that pass alone, once (for
 * callgrind: tests/bench/bench_cg.sh).
 * Exit status: 0, or 1 when the parser missed or invented a timing line.
 */
#include "autoconf.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/linebuf.h"
#include "perf/perf.h"
#include "perf/progress.h"

struct text {
	char *buf;
	size_t len, cap;
	size_t timing;        /* timing lines written */
};

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

/* xorshift64*: the same input on every run and machine */
static uint32_t
rnd(uint32_t n)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (uint32_t)((rng_state * 2685821657736338717u) >> 32) % n;
}

static void
add(struct text *t, const char *s, size_t n)
{
	if (t->len + n > t->cap) {
		fprintf(stderr, "bench_parse: generator overflow\n");
		exit(2);
	}
	memcpy(t->buf + t->len, s, n);
	t->len += n;
}

static void
addf_line(struct text *t, char *line, int n)
{
	if (n < 0 || (size_t)n >= 4096) {
		fprintf(stderr, "bench_parse: line too long\n");
		exit(2);
	}
	line[n] = '\n';
	add(t, line, (size_t)n + 1);
}

static void
add_tensor(struct text *t)
{
	size_t n = 2000 + rnd(14000);
	char num[32];
	int k;

	add(t, "tensor([[", 9);
	while (n > 0) {
		k = snprintf(num, sizeof(num), "%s%d.%04d, ", rnd(2) ? "-" : " ",
		             (int)rnd(3), (int)rnd(10000));
		add(t, num, (size_t)k);
		n = n > (size_t)k ? n - (size_t)k : 0;
	}
	add(t, "]], device='cuda:3')\n", 21);
}

/* Timing lines per 200 lines (BENCH_TIMING_PCT, default 5 %). */
static unsigned timing_per_200 = 10;

static void
generate(struct text *t, size_t want)
{
	static const char *const warnings[] = {
		"/usr/local/lib/python3.10/site-packages/torch/utils/data/dataloader.py:560: "
		"UserWarning: This DataLoader will create 8 worker processes in total.",
		"/usr/local/lib/python3.10/site-packages/torch/nn/modules/module.py:1501: "
		"FutureWarning: `torch.cuda.amp.autocast(args...)` is deprecated.",
		"[W socket.cpp:663] [c10d] The client socket has failed to connect to "
		"[localhost]:29500 (errno: 99 - Cannot assign requested address).",
	};
	char line[4096];
	unsigned step = 0;
	int n;

	t->cap = want + 65536;
	t->buf = malloc(t->cap);
	if (!t->buf) {
		perror("bench_parse: malloc");
		exit(2);
	}
	while (t->len < want) {
		unsigned rank = rnd(8);
		unsigned kind = rnd(200);

		if (kind < timing_per_200) {
			n = snprintf(line, sizeof(line),
			             "[default%u]:this iteration hardware time is %u.%03u "
			             "and e2e time is %u.%09u ms.",
			             rank, 2000 + rnd(400), rnd(1000), 3000 + rnd(600),
			             rnd(1000000000));
			t->timing++;
		} else if ((kind = 10 + (kind - timing_per_200) * 190 / (200 - timing_per_200)) < 110) {
			n = snprintf(line, sizeof(line),
			             "[default%u]:2026-11-20 12:%02u:%02u,%03u - INFO - "
			             "trainer.py:%u - step %u/100000 | loss %u.%04u | "
			             "lr %u.%02ue-04 | grad_norm %u.%04u | tokens/s %u",
			             rank, rnd(60), rnd(60), rnd(1000), 400 + rnd(100),
			             step++, rnd(4), rnd(10000), rnd(10), rnd(100), rnd(2),
			             rnd(10000), 100000 + rnd(50000));
		} else if (kind < 150) {
			n = snprintf(line, sizeof(line),
			             "n%u:%u:%u [%u] NCCL INFO Channel %02u/0 : %u[%u] -> "
			             "%u[%u] via P2P/IPC/read",
			             rnd(64), 1000 + rnd(9000), 1000 + rnd(9000), rank,
			             rnd(32), rank, rank, (rank + 1) % 8, (rank + 1) % 8);
		} else if (kind < 170) {
			n = snprintf(line, sizeof(line), "%s", warnings[rnd(3)]);
		} else if (kind < 198) {
			unsigned pct = rnd(101);

			n = snprintf(line, sizeof(line),
			             "Epoch %u:  %2u%%|\xe2\x96\x88\xe2\x96\x88\xe2\x96\x88"
			             "\xe2\x96\x8c      | %u/1000 [01:%02u<01:%02u,  %u.%02uit/s, "
			             "loss=%u.%02u, v_num=0]",
			             rnd(10), pct, pct * 10, rnd(60), rnd(60), rnd(9),
			             rnd(100), rnd(4), rnd(100));
		} else {
			add_tensor(t);
			continue;
		}
		addf_line(t, line, n);
	}
}

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* What both passes compute, so that neither can be optimised away. */
struct tally {
	size_t lines, bytes, timing;
	double e2e;
};

static struct tally
split_only(const struct text *t)
{
	struct tally s = { 0 };
	const char *p = t->buf, *end = t->buf + t->len, *nl;

	while (p < end && (nl = memchr(p, '\n', (size_t)(end - p))) != NULL) {
		s.lines++;
		s.bytes += (size_t)(nl - p);
		p = nl + 1;
	}
	return s;
}

static struct tally
split_parse(const struct text *t)
{
	struct tally s = { 0 };
	const char *p = t->buf, *end = t->buf + t->len, *nl;
	struct progress_line l;

	while (p < end && (nl = memchr(p, '\n', (size_t)(end - p))) != NULL) {
		s.lines++;
		s.bytes += (size_t)(nl - p);
		if (progress_parse(p, (size_t)(nl - p), &l)) {
			s.timing++;
			s.e2e += l.e2e_ms;
		}
		p = nl + 1;
	}
	return s;
}

/* ---- the agent's path, as node.c's stdout takes it --------------------- */

#define READ_SIZE 65536   /* a pipe's capacity: what one read() gets at most */
#define SCAN_LINE_MAX 4096

struct path {
	struct tally s;
	struct perf_node *node;
};

/* node.c's out_line() with its checkpoint test off, and run.c's
 * line_to_perf(), jobperf_line() behind it */
static void
path_line(const char *line, size_t len, bool truncated, void *arg)
{
	struct path *pa = arg;
	struct progress_line l;

	(void)truncated;
	if (!progress_tail(line, len))
		return;
	if (progress_parse(line, len, &l)) {
		perf_node_add(pa->node, &l);
		pa->s.timing++;
		pa->s.e2e += l.e2e_ms;
	}
}

static struct tally
agent_path(const struct text *t)
{
	struct linebuf *lb = linebuf_new(SCAN_LINE_MAX);
	struct path pa = { .node = perf_node_new(1024) };

	if (!lb || !pa.node) {
		fprintf(stderr, "bench_parse: out of memory\n");
		exit(2);
	}
	for (size_t off = 0; off < t->len; off += READ_SIZE) {
		size_t n = t->len - off < READ_SIZE ? t->len - off : READ_SIZE;

		linebuf_feed_marked(lb, t->buf + off, n, PROGRESS_MARK, PROGRESS_MARK_LEN,
		                    path_line, &pa);
		/* a reduction now and then: what is reported is forgotten */
		if ((off / READ_SIZE) % 64 == 0)
			perf_node_forget(pa.node, perf_node_done(pa.node));
	}
	/* the lines it passed over are not counted: its timing lines and
	 * their times are what is compared */
	pa.s.lines = linebuf_lines(lb);
	linebuf_free(lb);
	perf_node_free(pa.node);
	return pa.s;
}

/* memchr() splitting of the same reads: a partial line at the end of a
 * read is carried into the next one by its length alone. */
static struct tally
split_reads(const struct text *t)
{
	struct tally s = { 0 };

	for (size_t off = 0; off < t->len; off += READ_SIZE) {
		size_t n = t->len - off < READ_SIZE ? t->len - off : READ_SIZE;
		const char *p = t->buf + off, *end = p + n, *nl;

		while (p < end && (nl = memchr(p, '\n', (size_t)(end - p))) != NULL) {
			s.lines++;
			s.bytes += (size_t)(nl - p);
			p = nl + 1;
		}
		s.bytes += (size_t)(end - p);
	}
	return s;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double
median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return v[n / 2];
}

static long
env_long(const char *name, long def, long min, long max)
{
	const char *s = getenv(name);
	char *e;
	long v;

	if (!s || !*s)
		return def;
	v = strtol(s, &e, 10);
	if (*e || v < min || v > max) {
		fprintf(stderr, "bench_parse: %s must be a number in %ld..%ld\n", name, min, max);
		exit(2);
	}
	return v;
}

int
main(void)
{
	enum { MAX_REPS = 101 };
	long mb = env_long("BENCH_MB", 200, 1, 16384);
	int reps = (int)env_long("REPS", 5, 1, MAX_REPS);
	double ts[MAX_REPS], tp[MAX_REPS], tr[MAX_REPS], tq[MAX_REPS], t0, split_mbs, parse_mbs;
	const char *only = getenv("BENCH_ONLY");
	long pct = env_long("BENCH_TIMING_PCT", 5, 0, 99);
	struct text t = { 0 };
	struct tally a, b = { 0 }, c = { 0 };

	timing_per_200 = (unsigned)pct * 2;
	generate(&t, (size_t)mb * 1000000);
	if (only && *only) {
		/* one pass alone, for an instruction count */
		if (strcmp(only, "split") == 0)
			a = split_only(&t);
		else if (strcmp(only, "splitreads") == 0)
			a = split_reads(&t);
		else if (strcmp(only, "parse") == 0)
			a = split_parse(&t);
		else if (strcmp(only, "path") == 0)
			a = agent_path(&t);
		else
			return 2;
		printf("%s: %zu lines, %zu timing\n", only, a.lines, a.timing);
		free(t.buf);
		return 0;
	}
	/* Touch every page once before timing anything. */
	a = split_only(&t);
	for (int i = 0; i < reps; i++) {
		t0 = now_s();
		a = split_only(&t);
		ts[i] = now_s() - t0;
		t0 = now_s();
		b = split_parse(&t);
		tp[i] = now_s() - t0;
		t0 = now_s();
		(void)split_reads(&t);
		tr[i] = now_s() - t0;
		t0 = now_s();
		c = agent_path(&t);
		tq[i] = now_s() - t0;
	}
	if (b.timing != t.timing || a.lines != b.lines || c.timing != t.timing ||
	    c.e2e != b.e2e) {
		fprintf(stderr, "bench_parse: %zu and %zu timing lines found, %zu written\n",
		        b.timing, c.timing, t.timing);
		free(t.buf);
		return 1;
	}
	split_mbs = (double)t.len / median(ts, reps) / 1e6;
	parse_mbs = (double)t.len / median(tp, reps) / 1e6;
	printf("# %zu MB, %zu lines, %zu timing lines (mean e2e %.1f ms), median of %d\n",
	       t.len / 1000000, a.lines, b.timing, b.e2e / (double)b.timing, reps);
	printf("parse: %.0f MB/s vs memchr split %.0f MB/s: ratio %.2f (goal >= 0.9)\n",
	       parse_mbs, split_mbs, parse_mbs / split_mbs);
	split_mbs = (double)t.len / median(tr, reps) / 1e6;
	parse_mbs = (double)t.len / median(tq, reps) / 1e6;
	printf("agent path: %.0f MB/s vs memchr split %.0f MB/s: ratio %.2f (goal >= 0.9)\n",
	       parse_mbs, split_mbs, parse_mbs / split_mbs);
	free(t.buf);
	return 0;
}
