/*
 * prepview.c - every node's preparation, as the coordinator sees it.
 */
#include "autoconf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/util.h"
#include "prep/prepview.h"

#define NAMES_IN_LINE 8   /* nodes named in a progress line before "(+N more)" */

struct pnode {
	char *node;
	bool heard, done, ok, silent, staging;
	char *error;
	double last;                   /* when it was last heard */
	double copied_bytes, copied_files, copy_bytes, copy_files, data_bytes, data_files;
	double seconds;                /* its staging's time so far */
	/* what a byte and a file cost it: sums of the least-squares fit of
	 * each interval's time to its bytes and files (learn()) */
	double at_s, at_b, at_f;       /* the last interval's end */
	double sbb, sbf, sff, stb, stf;
};

struct prepview {
	struct pnode *nodes;
	int n;
	double t0;
};

struct prepview *
prepview_new(int size, double now)
{
	struct prepview *v = calloc(1, sizeof(*v));

	if (!v || size < 1 || !(v->nodes = calloc((size_t)size, sizeof(*v->nodes)))) {
		free(v);
		errno = size < 1 ? EINVAL : ENOMEM;
		return NULL;
	}
	v->n = size;
	v->t0 = now;
	for (int r = 0; r < size; r++)
		v->nodes[r].last = now;
	return v;
}

void
prepview_free(struct prepview *v)
{
	if (!v)
		return;
	for (int r = 0; r < v->n; r++) {
		free(v->nodes[r].node);
		free(v->nodes[r].error);
	}
	free(v->nodes);
	free(v);
}

/*
 * The interval since P's last progress, for the fit of time to bytes and
 * files: so that the small files left at the end of a copy (each costs
 * far more than its bytes) are not taken for nothing.  An interval in
 * which nothing moved (a large file between two reports) is added to the
 * next one.
 */
static void
learn(struct pnode *p)
{
	double dt = p->seconds - p->at_s, db = p->copied_bytes - p->at_b;
	double df = p->copied_files - p->at_f;

	if (dt <= 0 || db < 0 || df < 0 || (db == 0 && df == 0))
		return;
	p->sbb += db * db;
	p->sbf += db * df;
	p->sff += df * df;
	p->stb += dt * db;
	p->stf += dt * df;
	p->at_s = p->seconds;
	p->at_b = p->copied_bytes;
	p->at_f = p->copied_files;
}

int
prepview_update(struct prepview *v, int rank, const struct msg_prep *m, double now)
{
	struct pnode *p;

	if (rank < 0 || rank >= v->n || !m->node)
		return 0;
	p = &v->nodes[rank];
	if (p->done)
		return 0;
	if (!p->node && !(p->node = strdup(m->node)))
		return -ENOMEM;
	p->heard = true;
	p->silent = false;
	p->last = now;
	p->copied_bytes = m->copied_bytes;
	p->copied_files = m->copied_files;
	p->copy_bytes = m->copy_bytes;
	p->copy_files = m->copy_files;
	p->data_bytes = m->data_bytes;
	p->data_files = m->data_files;
	p->seconds = m->seconds;
	learn(p);
	p->staging = p->staging || (m->step && strcmp(m->step, "staging") == 0) ||
	             m->data_bytes > 0;
	if (!m->step || strcmp(m->step, "done") != 0)
		return 0;
	p->done = true;
	p->ok = m->ok;
	if (m->error && !(p->error = strdup(m->error)))
		return -ENOMEM;
	return 1;
}

int
prepview_expire(struct prepview *v, double now, double silent_s)
{
	int k = 0;

	for (int r = 0; r < v->n; r++) {
		struct pnode *p = &v->nodes[r];

		if (p->done || p->silent || now - p->last < silent_s)
			continue;
		p->silent = true;
		k++;
	}
	return k;
}

bool
prepview_complete(const struct prepview *v)
{
	for (int r = 0; r < v->n; r++)
		if (!v->nodes[r].done && !v->nodes[r].silent)
			return false;
	return true;
}

bool
prepview_silent(const struct prepview *v, int rank)
{
	return rank >= 0 && rank < v->n && v->nodes[rank].silent;
}

bool
prepview_done(const struct prepview *v, int rank)
{
	return rank >= 0 && rank < v->n && v->nodes[rank].done;
}

/*
 * P's time left (s): its bytes and files left at the costs the fit gives;
 * where the copy so far cannot tell the two costs apart (every interval
 * alike), the larger of "all the time was bytes" and "all of it was
 * files".  < 0 when nothing was copied yet.
 */
static double
node_left(const struct pnode *p)
{
	double lb = p->copy_bytes - p->copied_bytes, lf = p->copy_files - p->copied_files;
	double det = p->sbb * p->sff - p->sbf * p->sbf, byb, byf;

	lb = lb > 0 ? lb : 0;
	lf = lf > 0 ? lf : 0;
	if (p->sbb <= 0 && p->sff <= 0)
		return -1;
	if (p->sbb > 0 && p->sff > 0 && det > 1e-9 * p->sbb * p->sff) {
		double a = (p->stb * p->sff - p->stf * p->sbf) / det;
		double b = (p->stf * p->sbb - p->stb * p->sbf) / det;

		if (a >= 0 && b >= 0)
			return a * lb + b * lf;
	}
	byb = p->sbb > 0 ? p->stb / p->sbb * lb : 0;
	byf = p->sff > 0 ? p->stf / p->sff * lf : 0;
	return byb > byf ? byb : byf;
}

/* The slowest node's time left (s), or < 0 when unknown. */
static double
eta(const struct prepview *v)
{
	double worst = 0;

	for (int r = 0; r < v->n; r++) {
		const struct pnode *p = &v->nodes[r];
		double left;

		if (p->done || p->silent ||
		    (p->copy_bytes <= p->copied_bytes && p->copy_files <= p->copied_files))
			continue;
		left = node_left(p);
		if (left < 0)
			return -1;
		worst = left > worst ? left : worst;
	}
	return worst;
}

/* "; n1 45%, n2 done" for the nodes that stage. */
static void
per_node(const struct prepview *v, char *buf, size_t len)
{
	size_t o = 0;
	int named = 0, more = 0;

	buf[0] = '\0';
	for (int r = 0; r < v->n; r++) {
		const struct pnode *p = &v->nodes[r];
		char what[32];
		int w;

		if (!p->heard && !p->silent)
			continue;
		if (named == NAMES_IN_LINE) {
			more++;
			continue;
		}
		if (p->silent)
			snprintf(what, sizeof(what), "silent");
		else if (p->done)
			snprintf(what, sizeof(what), "%s", p->ok ? "done" : "failed");
		else if (p->copy_bytes > 0)
			snprintf(what, sizeof(what), "%.0f%%", 100 * p->copied_bytes / p->copy_bytes);
		else
			snprintf(what, sizeof(what), "%s", p->staging ? "comparing" : "waiting");
		w = snprintf(buf + o, len - o, "%s%s %s", o ? ", " : "; ", p->node ? p->node : "?",
		             what);
		if (w < 0 || o + (size_t)w >= len)
			return;
		o += (size_t)w;
		named++;
	}
	if (more)
		snprintf(buf + o, len - o, " (+%d more)", more);
}

bool
prepview_line(const struct prepview *v, double now, char *buf, size_t len)
{
	double cb = 0, cf = 0, tb = 0, tf = 0, left = eta(v), el = now - v->t0;
	char a[32], b[32], rate[32], nodes[600], when[48];

	for (int r = 0; r < v->n; r++) {
		cb += v->nodes[r].copied_bytes;
		cf += v->nodes[r].copied_files;
		tb += v->nodes[r].copy_bytes;
		tf += v->nodes[r].copy_files;
	}
	if (tb <= 0 && tf <= 0)
		return false;
	util_fmt_bytes(cb, a, sizeof(a));
	util_fmt_bytes(tb, b, sizeof(b));
	util_fmt_bytes(el > 0 ? cb / el : 0, rate, sizeof(rate));
	if (left < 0)
		snprintf(when, sizeof(when), "time left unknown yet");
	else
		snprintf(when, sizeof(when), "about %.0f s left", left);
	per_node(v, nodes, sizeof(nodes));
	snprintf(buf, len, "staging: %s of %s, %.0f of %.0f files (%.0f%%), %s/s, %s%s", a, b, cf,
	         tf, tb > 0 ? 100 * cb / tb : 100, rate, when, nodes);
	return true;
}

bool
prepview_summary(const struct prepview *v, char *buf, size_t len)
{
	double cb = 0, data = 0, secs = 0, kept = 0;
	int staged = 0, failed = 0;
	char a[32], d[32], rate[32], k[32], copied[96];

	for (int r = 0; r < v->n; r++) {
		const struct pnode *p = &v->nodes[r];

		if (!p->staging)
			continue;
		staged++;
		failed += !p->ok;
		cb += p->copied_bytes;
		/* what a node found in its copy already: its data less what it had to copy */
		kept += p->data_bytes > p->copy_bytes ? p->data_bytes - p->copy_bytes : 0;
		data = p->data_bytes > data ? p->data_bytes : data;
		secs = p->seconds > secs ? p->seconds : secs;
	}
	if (staged == 0)
		return false;
	util_fmt_bytes(cb, a, sizeof(a));
	util_fmt_bytes(data, d, sizeof(d));
	util_fmt_bytes(kept, k, sizeof(k));
	util_fmt_bytes(secs > 0 ? cb / secs : 0, rate, sizeof(rate));
	if (cb <= 0 && kept > 0)
		snprintf(copied, sizeof(copied), "nothing copied (every copy reused)");
	else if (kept > 0)
		snprintf(copied, sizeof(copied), "%s copied in all, %s reused", a, k);
	else
		snprintf(copied, sizeof(copied), "%s copied in all", a);
	snprintf(buf, len, "staged on %d node%s in %.1f s%s: %s of data on each node, %s, %s/s",
	         staged - failed, util_plural(staged - failed), secs,
	         failed ? " (failed on some: see the pre-check)" : "", d, copied, rate);
	return true;
}

static cJSON *
node_json(const struct pnode *p, int rank)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "node", p->node ? p->node : "?");
	cJSON_AddNumberToObject(o, "rank", rank);
	cJSON_AddBoolToObject(o, "ok", p->done && p->ok);
	if (p->silent)
		cJSON_AddStringToObject(o, "error", "no word from the node");
	else if (p->error)
		cJSON_AddStringToObject(o, "error", p->error);
	cJSON_AddNumberToObject(o, "seconds", p->seconds);
	cJSON_AddNumberToObject(o, "copied_bytes", p->copied_bytes);
	cJSON_AddNumberToObject(o, "copied_files", p->copied_files);
	cJSON_AddNumberToObject(o, "copy_bytes", p->copy_bytes);
	cJSON_AddNumberToObject(o, "data_bytes", p->data_bytes);
	cJSON_AddNumberToObject(o, "data_files", p->data_files);
	return o;
}

cJSON *
prepview_report(const struct prepview *v)
{
	cJSON *r, *nodes;
	double cb = 0, cf = 0, data = 0, secs = 0;
	bool any = false;

	for (int k = 0; k < v->n; k++)
		any = any || v->nodes[k].staging;
	if (!any || !(r = cJSON_CreateObject()))
		return NULL;
	nodes = cJSON_AddArrayToObject(r, "nodes");
	for (int k = 0; k < v->n; k++) {
		const struct pnode *p = &v->nodes[k];

		if (!p->staging && !p->silent)
			continue;
		cb += p->copied_bytes;
		cf += p->copied_files;
		data = p->data_bytes > data ? p->data_bytes : data;
		secs = p->seconds > secs ? p->seconds : secs;
		cJSON_AddItemToArray(nodes, node_json(p, k));
	}
	cJSON_AddNumberToObject(r, "seconds", secs);
	cJSON_AddNumberToObject(r, "copied_bytes", cb);
	cJSON_AddNumberToObject(r, "copied_files", cf);
	cJSON_AddNumberToObject(r, "data_bytes", data);
	return r;
}
