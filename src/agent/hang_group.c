/*
 * hang_group.c - the coordinator's reading of every node's forensics
 * (hang.h: hang_group()): the training's processes grouped by what they
 * wait in, and the odd ones out named.
 *
 * A hung collective leaves most ranks waiting in the same place (the
 * collective's wait) and the rank that holds it somewhere else: stopped,
 * in the kernel (a file system), asleep in its own loop.  The signature
 * of a process is its state and where it waits: the kernel's wait
 * channel, the first named frames of its user stack when gdb could
 * read one, and the innermost Python frame when gdb could read that.
 * Where every rank but one waits in a collective (its innermost Python
 * frame in torch.distributed) the one outside it is odd, even among two
 * ranks, where counting cannot tell.  Only the ranks are grouped
 * (processes that carry LOCAL_RANK, as every launcher sets it) when
 * there are any; the launchers' own processes are in the forensics file,
 * not in the verdict.
 *
 * A rank whose stack gdb could not read (it did not finish within the
 * budget on a loaded node) is not known to be anywhere: it is never
 * odd, and it does not count against the others.  It counts as in the
 * collective when its state and wait channel are those of a rank that
 * is, since that is all there is to tell them apart.
 */
#include "autoconf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "agent/hang.h"

/* Named user frames that make a signature, after the kernel's wait channel. */
#define SIG_FRAMES 2

struct item {
	const cJSON *proc;
	const char *node;
	int rank;            /* the agent's rank */
	char label[160];     /* "n3 rank 5" */
	char sig[256];
	char state;
	bool collective;     /* its main thread waits in a collective */
	bool unread;         /* gdb was asked for its stack and gave none */
	size_t coarse;       /* the length of sig's state and wait channel */
	int group;
};

static const char *
str(const cJSON *o, const char *key, const char *def)
{
	const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(x) && x->valuestring ? x->valuestring : def;
}

static int
num(const cJSON *o, const char *key, int def)
{
	const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsNumber(x) ? (int)x->valuedouble : def;
}

/* A frame worth naming: a function, not an address gdb could not name. */
static bool
named(const char *f)
{
	return f && *f && strncmp(f, "??", 2) != 0;
}

/*
 * The innermost Python frame of the main thread, after the signature's
 * first W bytes: " at all_reduce (distributed_c10d.py:1536)".  It names
 * where in the training a rank waits, where the C frames name only the
 * wait (the collective's, a sleep's).
 */
static void
py_where(struct item *it, size_t w)
{
	const cJSON *py = cJSON_GetObjectItemCaseSensitive(it->proc, "py_stack");
	const cJSON *top = cJSON_GetArrayItem(py, 0);
	const char *s, *file, *fend, *func, *slash;
	long line;

	if (!cJSON_IsString(top) || w + 8 >= sizeof(it->sig))
		return;
	s = top->valuestring;
	file = strstr(s, "File \"");
	fend = file ? strstr(file + 6, "\", line ") : NULL;
	func = fend ? strstr(fend, ", in ") : NULL;
	if (!func)
		return;
	file += 6;
	for (slash = file; slash < fend; slash++)
		if (*slash == '/')
			file = slash + 1;
	line = strtol(fend + 8, NULL, 10);
	it->collective = strstr(s, "/torch/distributed/") != NULL;
	snprintf(it->sig + w, sizeof(it->sig) - w, " at %.60s (%.*s:%ld)", func + 5,
	         (int)(fend - file > 60 ? 60 : fend - file), file, line);
}

static void
signature(struct item *it)
{
	const cJSON *stack = cJSON_GetObjectItemCaseSensitive(it->proc, "stack"), *fr;
	const char *st = str(it->proc, "state", "?"), *wchan = str(it->proc, "wchan", "");
	size_t w;
	int k = 0;

	it->state = st[0];
	switch (it->state) {
	case 'T': case 't':
		snprintf(it->sig, sizeof(it->sig), "stopped (T)");
		return;
	case 'Z':
		snprintf(it->sig, sizeof(it->sig), "zombie (Z)");
		return;
	case 'D':
		w = (size_t)snprintf(it->sig, sizeof(it->sig), "uninterruptible (D) in %s",
		                     *wchan ? wchan : "the kernel");
		break;
	case 'R':
		w = (size_t)snprintf(it->sig, sizeof(it->sig), "running");
		break;
	default:
		w = (size_t)snprintf(it->sig, sizeof(it->sig), "wait in %s",
		                     *wchan && strcmp(wchan, "0") ? wchan : "?");
		break;
	}
	it->coarse = w < sizeof(it->sig) ? w : sizeof(it->sig) - 1;
	cJSON_ArrayForEach(fr, stack) {
		if (k == SIG_FRAMES || w + 8 >= sizeof(it->sig))
			break;
		if (!cJSON_IsString(fr) || !named(fr->valuestring))
			continue;
		w += (size_t)snprintf(it->sig + w, sizeof(it->sig) - w, "%s%.60s",
		                      k ? " < " : " (", fr->valuestring);
		k++;
	}
	if (k && w + 2 < sizeof(it->sig))
		w += (size_t)snprintf(it->sig + w, sizeof(it->sig) - w, ")");
	py_where(it, w);
}

/* Whether gdb was asked for IT's stack and gave none (stopped and dead ones are not asked). */
static bool
unread(const struct item *it)
{
	return cJSON_HasObjectItem(it->proc, "stack_error") &&
	       !cJSON_HasObjectItem(it->proc, "stack") && !cJSON_HasObjectItem(it->proc, "py_stack") &&
	       !strchr("TtZD", it->state);
}

/* The processes to judge: the ranks where there are any, else every process. */
static struct item *
collect(const cJSON *nodes, size_t *np)
{
	const cJSON *nd, *p;
	struct item *v = NULL;
	size_t n = 0, cap = 0;
	bool ranks = false;

	cJSON_ArrayForEach(nd, nodes)
		cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(nd, "processes"))
			ranks = ranks || num(p, "train_rank", -1) >= 0;
	cJSON_ArrayForEach(nd, nodes) {
		cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(nd, "processes")) {
			int tr = num(p, "train_rank", -1);

			if (ranks && tr < 0)
				continue;
			if (n == cap) {
				struct item *nv = realloc(v, (cap = cap ? 2 * cap : 16) * sizeof(*v));

				if (!nv) {
					free(v);
					return NULL;
				}
				v = nv;
			}
			memset(&v[n], 0, sizeof(v[n]));
			v[n].proc = p;
			v[n].node = str(nd, "node", "?");
			v[n].rank = num(nd, "rank", -1);
			if (tr >= 0)
				snprintf(v[n].label, sizeof(v[n].label), "%.100s rank %d", v[n].node, tr);
			else
				snprintf(v[n].label, sizeof(v[n].label), "%.100s pid %d", v[n].node,
				         num(p, "pid", 0));
			signature(&v[n]);
			v[n].unread = unread(&v[n]);
			n++;
		}
	}
	*np = n;
	return v;
}

struct group {
	const char *sig;
	int count;
	int known;           /* members whose stack was read */
	cJSON *members;
};

static int
by_count(const void *a, const void *b)
{
	const struct group *x = a, *y = b;

	return (y->count > x->count) - (y->count < x->count);
}

static void
add_odd(cJSON *odd, const struct item *it, const char *why)
{
	cJSON *o = cJSON_CreateObject();
	int tr = num(it->proc, "train_rank", -1);

	cJSON_AddStringToObject(o, "node", it->node);
	cJSON_AddNumberToObject(o, "rank", it->rank);
	if (tr >= 0)
		cJSON_AddNumberToObject(o, "train_rank", tr);
	cJSON_AddNumberToObject(o, "pid", num(it->proc, "pid", 0));
	cJSON_AddStringToObject(o, "state", str(it->proc, "state", "?"));
	cJSON_AddStringToObject(o, "label", it->label);
	cJSON_AddStringToObject(o, "why", why);
	cJSON_AddItemToArray(odd, o);
}

/* "n3 rank 5: stopped (T); 7 ranks wait in ...": into BUF. */
static void
summarise(const cJSON *odd, const struct group *g, size_t ng, size_t total, char *buf,
          size_t len)
{
	const cJSON *o;
	size_t w = 0;
	int k = 0;

	buf[0] = '\0';
	cJSON_ArrayForEach(o, odd) {
		if (k++ == 4 || w + 32 >= len)
			break;
		w += (size_t)snprintf(buf + w, len - w, "%s%s: %s", w ? "; " : "",
		                      str(o, "label", "?"), str(o, "why", "?"));
	}
	if (ng > 0 && w + 32 < len)
		snprintf(buf + w, len - w, "%s%d of %zu %s: %s", w ? "; " : "", g[0].count, total,
		         total == 1 ? "process" : "processes", g[0].sig);
}

/* The state and wait channel of ranks in the collective, a few at most. */
#define REFS 4

/* Whether unread IT waits as a rank in the collective does (one of REF[0..NREF)). */
static bool
waits_as_collective(const struct item *it, const struct item *const *ref, int nref)
{
	for (int k = 0; k < nref; k++)
		if (ref[k]->coarse == it->coarse && strncmp(ref[k]->sig, it->sig, it->coarse) == 0)
			return true;
	return false;
}

cJSON *
hang_group(const cJSON *nodes, int *suspect_node)
{
	size_t n = 0, ng = 0, known = 0;
	struct item *v = collect(nodes, &n);
	struct group *g = calloc(n ? n : 1, sizeof(*g));
	cJSON *out = cJSON_CreateObject(), *groups = cJSON_CreateArray(), *odd = cJSON_CreateArray();
	const struct item *ref[REFS];
	int suspect = -1, in_collective = 0, most = 0, nref = 0;
	bool several = false;
	char line[1024];

	*suspect_node = -1;
	if ((!v && n) || !g || !out || !groups || !odd)
		goto fail;
	for (size_t i = 0; i < n; i++) {
		size_t k;

		for (k = 0; k < ng && strcmp(g[k].sig, v[i].sig) != 0; k++)
			;
		if (k == ng) {
			g[ng].sig = v[i].sig;
			g[ng].members = cJSON_CreateArray();
			ng++;
		}
		g[k].count++;
		g[k].known += !v[i].unread;
		most = g[k].known > most ? g[k].known : most;
		known += !v[i].unread;
		cJSON_AddItemToArray(g[k].members, cJSON_CreateString(v[i].label));
		v[i].group = (int)k;
	}
	for (size_t i = 0; i < n && nref < REFS; i++)
		if (v[i].collective && !waits_as_collective(&v[i], ref, nref))
			ref[nref++] = &v[i];
	for (size_t i = 0; i < n; i++)
		in_collective += v[i].collective || (v[i].unread && waits_as_collective(&v[i], ref, nref));
	for (size_t i = 0; i < n; i++) {
		const struct group *mine = &g[v[i].group];
		char why[300];

		if (v[i].unread)
			continue;
		if (strchr("TtZD", v[i].state))
			snprintf(why, sizeof(why), "%s", v[i].sig);
		else if (mine->known == 1 && known >= 3 && (size_t)most * 2 > known)
			snprintf(why, sizeof(why), "alone: %s", v[i].sig);
		else if (in_collective && !v[i].collective && (size_t)in_collective + 1 >= n)
			snprintf(why, sizeof(why), "not in the collective: %s", v[i].sig);
		else
			continue;
		add_odd(odd, &v[i], why);
		if (suspect >= 0 && suspect != v[i].rank)
			several = true;
		suspect = v[i].rank;
	}
	qsort(g, ng, sizeof(*g), by_count);
	for (size_t k = 0; k < ng; k++) {
		cJSON *o = cJSON_CreateObject();

		cJSON_AddStringToObject(o, "signature", g[k].sig);
		cJSON_AddNumberToObject(o, "count", g[k].count);
		cJSON_AddItemToObject(o, "members", g[k].members);
		g[k].members = NULL;
		cJSON_AddItemToArray(groups, o);
	}
	summarise(odd, g, ng, n, line, sizeof(line));
	cJSON_AddItemToObject(out, "groups", groups);
	cJSON_AddItemToObject(out, "odd", odd);
	cJSON_AddStringToObject(out, "summary", line);
	cJSON_AddNumberToObject(out, "unread", (double)(n - known));
	*suspect_node = several ? -1 : suspect;
	free(v);
	free(g);
	return out;
fail:
	for (size_t k = 0; g && k < ng; k++)
		cJSON_Delete(g[k].members);
	free(v);
	free(g);
	cJSON_Delete(out);
	cJSON_Delete(groups);
	cJSON_Delete(odd);
	return NULL;
}
