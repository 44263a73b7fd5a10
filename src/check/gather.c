/*
 * gather.c - consolidating every node's check report on the coordinator.
 */
#include "autoconf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vigil.h"
#include "check/gather.h"
#include "lib/json.h"
#include "lib/util.h"

char *
gather_payload(const char *node, int rank, const struct check_report *r,
               const char *error)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *rep = NULL;
	char *text = NULL;

	if (!o)
		return NULL;
	if (!cJSON_AddStringToObject(o, "node", node) ||
	    !cJSON_AddNumberToObject(o, "rank", rank))
		goto out;
	if (error) {
		if (!cJSON_AddStringToObject(o, "error", error))
			goto out;
	} else {
		rep = check_report_to_json(r);
		if (!rep)
			goto out;
		cJSON_AddItemToObject(o, "report", rep);
	}
	text = json_print(o, false);
out:
	cJSON_Delete(o);
	return text;
}

int
gather_init(struct gather *g, int n)
{
	g->n = 0;
	g->nodes = calloc((size_t)n, sizeof(*g->nodes));
	if (!g->nodes)
		return -ENOMEM;
	g->n = n;
	for (int i = 0; i < n; i++)
		g->nodes[i].rank = i;
	return 0;
}

static int
set_error(struct gather_node *gn, const char *text)
{
	free(gn->error);
	gn->error = strdup(text);
	return gn->error ? 0 : -ENOMEM;
}

int
gather_add(struct gather *g, int rank, const char *payload, double timeout_s)
{
	struct gather_node *gn;
	const cJSON *node, *err, *rep;
	cJSON *doc;
	char name[32];
	int rc = 0;

	if (rank < 0 || rank >= g->n)
		return -EINVAL;
	gn = &g->nodes[rank];
	if (!gn->node) {
		snprintf(name, sizeof(name), "rank %d", rank);
		gn->node = strdup(name);
		if (!gn->node)
			return -ENOMEM;
	}
	if (!payload) {
		char msg[64];

		snprintf(msg, sizeof(msg), "no report within %.0f s", timeout_s);
		return set_error(gn, msg);
	}
	doc = cJSON_Parse(payload);
	if (!doc)
		return set_error(gn, "malformed report");
	node = cJSON_GetObjectItemCaseSensitive(doc, "node");
	if (cJSON_IsString(node) && node->valuestring[0]) {
		char *copy = strdup(node->valuestring);

		if (!copy) {
			rc = -ENOMEM;
			goto out;
		}
		free(gn->node);
		gn->node = copy;
	}
	err = cJSON_GetObjectItemCaseSensitive(doc, "error");
	rep = cJSON_GetObjectItemCaseSensitive(doc, "report");
	if (cJSON_IsString(err))
		rc = set_error(gn, err->valuestring);
	else if (!rep || check_report_from_json(rep, &gn->report) < 0)
		rc = set_error(gn, "malformed report");
	else
		gn->arrived = true;
out:
	cJSON_Delete(doc);
	return rc;
}

/* One fact of one node, as text, for comparison. */
enum fact { FACT_NSLOTS, FACT_MODELS, FACT_DRIVER };

static void
fact_text(const struct gather_node *gn, enum fact f, char *buf, size_t len)
{
	switch (f) {
	case FACT_NSLOTS:
		snprintf(buf, len, "%d", gn->report.facts.nslots);
		break;
	case FACT_MODELS:
		snprintf(buf, len, "%s", gn->report.facts.models);
		break;
	case FACT_DRIVER:
		snprintf(buf, len, "%s", gn->report.facts.driver);
		break;
	}
}

static int
add_result(struct check_report *r, const char *name, enum verdict v,
           const char *reason, cJSON *details)
{
	struct check_result *res;

	res = realloc(r->results, (r->n + 1) * sizeof(*res));
	if (!res) {
		cJSON_Delete(details);
		return -ENOMEM;
	}
	r->results = res;
	res = &r->results[r->n++];
	memset(res, 0, sizeof(*res));
	snprintf(res->name, sizeof(res->name), "%s", name);
	res->verdict = v;
	snprintf(res->reason, sizeof(res->reason), "%s", reason);
	res->details = details ? details : cJSON_CreateObject();
	return 0;
}

struct fact_entry {
	char text[256];
	int rank;
};

static int
cmp_entry(const void *a, const void *b)
{
	const struct fact_entry *x = a, *y = b;
	int c = strcmp(x->text, y->text);

	return c ? c : (x->rank > y->rank) - (x->rank < y->rank);
}

/*
 * The reference value of fact F: the most common among the nodes that
 * reported (ties: the value of the lowest rank).  Sorted, so O(N log N)
 * for N nodes.  Returns how many nodes reported (0: none), the reference
 * in REF and its count in *BEST; -ENOMEM.
 */
static int
reference(const struct gather *g, enum fact f, char *ref, size_t len, int *best)
{
	struct fact_entry *e = calloc(g->n > 0 ? (size_t)g->n : 1, sizeof(*e));
	int n = 0, best_rank = -1;

	if (!e)
		return -ENOMEM;
	for (int i = 0; i < g->n; i++) {
		if (!g->nodes[i].arrived)
			continue;
		fact_text(&g->nodes[i], f, e[n].text, sizeof(e[n].text));
		e[n++].rank = i;
	}
	qsort(e, (size_t)n, sizeof(*e), cmp_entry);
	*best = 0;
	for (int i = 0, j; i < n; i = j) {
		/* a run of equal values; its first entry has its lowest rank */
		for (j = i + 1; j < n && strcmp(e[j].text, e[i].text) == 0; j++)
			;
		if (j - i > *best || (j - i == *best && e[i].rank < best_rank)) {
			*best = j - i;
			best_rank = e[i].rank;
			snprintf(ref, len, "%s", e[i].text);
		}
	}
	free(e);
	return n;
}

static void
compare_fact(struct gather *g, enum fact f)
{
	static const char *const what[] = { "slot count", "slot models", "driver version" };
	char ref[256] = "", mine[256];
	int best = 0, nref;

	nref = reference(g, f, ref, sizeof(ref), &best);
	if (nref <= 0 || best == nref)
		return;  /* all agree, nobody reported, or no memory to tell */
	for (int i = 0; i < g->n; i++) {
		struct gather_node *gn = &g->nodes[i];
		char reason[sizeof(gn->report.results[0].reason)];
		cJSON *d;

		if (!gn->arrived)
			continue;
		fact_text(gn, f, mine, sizeof(mine));
		if (strcmp(mine, ref) == 0)
			continue;
		/* Values are at most 255 bytes; a long one is cut in the
		 * reason, whole in the details. */
		snprintf(reason, sizeof(reason), "%s \"%.80s\" differs from \"%.80s\" on %d other node%s",
		         what[f], mine, ref, best, util_plural(best));
		d = cJSON_CreateObject();
		if (d) {
			cJSON_AddStringToObject(d, "fact", what[f]);
			cJSON_AddStringToObject(d, "value", mine);
			cJSON_AddStringToObject(d, "reference", ref);
			cJSON_AddNumberToObject(d, "nodes_with_reference", best);
		}
		(void)add_result(&gn->report, "consistency", VERDICT_FAIL, reason, d);
	}
}

void
gather_consistency(struct gather *g)
{
	compare_fact(g, FACT_NSLOTS);
	compare_fact(g, FACT_MODELS);
	compare_fact(g, FACT_DRIVER);
}

enum verdict
gather_node_verdict(const struct gather_node *n)
{
	if (!n->arrived)
		return VERDICT_FAIL;
	return check_report_verdict(&n->report);
}

int
gather_failed(const struct gather *g)
{
	int failed = 0;

	for (int i = 0; i < g->n; i++)
		failed += gather_node_verdict(&g->nodes[i]) == VERDICT_FAIL;
	return failed;
}

static void
print_node(FILE *f, const struct gather_node *gn, enum verdict level)
{
	const struct check_result *first = NULL;
	int more = -1;

	if (!gn->arrived) {
		fprintf(f, "vigil: %s (rank %d): %s\n", gn->node, gn->rank, gn->error);
		return;
	}
	for (size_t i = 0; i < gn->report.n; i++) {
		if (gn->report.results[i].verdict != level)
			continue;
		if (!first)
			first = &gn->report.results[i];
		more++;
	}
	if (!first)
		return;
	fprintf(f, "vigil: %s (rank %d): %s%s: %s", gn->node, gn->rank,
	        level == VERDICT_WARN ? "warning: " : "", first->name, first->reason);
	if (more > 0)
		fprintf(f, " (and %d more)", more);
	fputc('\n', f);
}

void
gather_print(FILE *f, const struct gather *g, bool verbose)
{
	int failed = gather_failed(g);

	for (int i = 0; i < g->n; i++) {
		enum verdict v = gather_node_verdict(&g->nodes[i]);

		if (v == VERDICT_FAIL)
			print_node(f, &g->nodes[i], VERDICT_FAIL);
		else if (verbose && v == VERDICT_WARN)
			print_node(f, &g->nodes[i], VERDICT_WARN);
	}
	if (failed) {
		fprintf(f, "vigil: %d of %d node%s unhealthy\n", failed, g->n,
		        util_plural(g->n));
		return;
	}
	/* All passed, so all arrived and agree: node 0 speaks for them. */
	const struct check_facts *facts = &g->nodes[0].report.facts;
	fprintf(f, "vigil: all %d node%s healthy (", g->n, util_plural(g->n));
	if (facts->nslots == 0)
		fprintf(f, "no accelerators");
	else
		fprintf(f, "%d slot%s each: %s", facts->nslots,
		        util_plural(facts->nslots), facts->models);
	if (facts->driver[0])
		fprintf(f, "; driver %s", facts->driver);
	fprintf(f, ")\n");
}

static enum verdict
overall(const struct gather *g)
{
	enum verdict worst = VERDICT_PASS;

	for (int i = 0; i < g->n; i++) {
		enum verdict v = gather_node_verdict(&g->nodes[i]);

		if (v > worst)
			worst = v;
	}
	return worst;
}

cJSON *
gather_to_json(const struct gather *g)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *arr;

	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "verdict", verdict_name(overall(g)));
	cJSON_AddNumberToObject(o, "nodes_total", g->n);
	cJSON_AddNumberToObject(o, "nodes_failed", gather_failed(g));
	arr = cJSON_AddArrayToObject(o, "nodes");
	if (!arr)
		goto fail;
	for (int i = 0; i < g->n; i++) {
		const struct gather_node *gn = &g->nodes[i];
		cJSON *n = cJSON_CreateObject();

		if (!n)
			goto fail;
		cJSON_AddItemToArray(arr, n);
		cJSON_AddStringToObject(n, "node", gn->node ? gn->node : "");
		cJSON_AddNumberToObject(n, "rank", gn->rank);
		cJSON_AddStringToObject(n, "verdict", verdict_name(gather_node_verdict(gn)));
		if (gn->error)
			cJSON_AddStringToObject(n, "error", gn->error);
		if (gn->arrived) {
			cJSON *rep = check_report_to_json(&gn->report);

			if (!rep)
				goto fail;
			cJSON_AddItemToObject(n, "report", rep);
		}
	}
	return o;
fail:
	cJSON_Delete(o);
	return NULL;
}

static const char *
severity_of(enum verdict v)
{
	return v == VERDICT_FAIL ? VIGIL_SEVERITY_ERROR :
	       v == VERDICT_WARN ? VIGIL_SEVERITY_WARNING : VIGIL_SEVERITY_INFO;
}

static int
emit(struct events *ev, const struct gather_node *gn, const char *kind,
     const char *severity, const char *message, cJSON *details)
{
	cJSON *e = events_make(gn->node, gn->rank, kind, severity, message, details);
	int rc;

	if (!e)
		return -ENOMEM;
	rc = events_write(ev, e);
	cJSON_Delete(e);
	return rc;
}

int
gather_write_events(const struct gather *g, struct events *ev)
{
	char msg[512];
	int rc, first = 0, failed = gather_failed(g);
	cJSON *d;

	for (int i = 0; i < g->n; i++) {
		const struct gather_node *gn = &g->nodes[i];

		if (!gn->arrived) {
			d = cJSON_CreateObject();
			if (d)
				cJSON_AddStringToObject(d, "error", gn->error ? gn->error : "");
			rc = emit(ev, gn, VIGIL_EVENT_NODE_LOST, VIGIL_SEVERITY_ERROR,
			          gn->error ? gn->error : "no report", d);
			if (rc < 0 && !first)
				first = rc;
			continue;
		}
		for (size_t j = 0; j < gn->report.n; j++) {
			const struct check_result *r = &gn->report.results[j];
			int consistency = strcmp(r->name, "consistency") == 0;

			d = cJSON_CreateObject();
			if (!d)
				return -ENOMEM;
			cJSON_AddStringToObject(d, "check", r->name);
			cJSON_AddStringToObject(d, "verdict", verdict_name(r->verdict));
			if (r->details)
				cJSON_AddItemToObject(d, "facts", cJSON_Duplicate(r->details, 1));
			snprintf(msg, sizeof(msg), "%s: %s", r->name, r->reason);
			rc = emit(ev, gn, consistency ? VIGIL_EVENT_CONSISTENCY : VIGIL_EVENT_CHECK,
			          severity_of(r->verdict), msg, d);
			if (rc < 0 && !first)
				first = rc;
		}
	}
	d = cJSON_CreateObject();
	if (d) {
		cJSON *names = cJSON_AddArrayToObject(d, "failed_nodes");

		cJSON_AddStringToObject(d, "verdict", verdict_name(overall(g)));
		cJSON_AddNumberToObject(d, "nodes_total", g->n);
		cJSON_AddNumberToObject(d, "nodes_failed", failed);
		for (int i = 0; names && i < g->n; i++)
			if (gather_node_verdict(&g->nodes[i]) == VERDICT_FAIL)
				cJSON_AddItemToArray(names, cJSON_CreateString(g->nodes[i].node));
	}
	if (failed)
		snprintf(msg, sizeof(msg), "%d of %d nodes unhealthy", failed, g->n);
	else
		snprintf(msg, sizeof(msg), "all %d nodes healthy", g->n);
	rc = emit(ev, &g->nodes[0], VIGIL_EVENT_VERDICT,
	          failed ? VIGIL_SEVERITY_ERROR : VIGIL_SEVERITY_INFO, msg, d);
	if (rc < 0 && !first)
		first = rc;
	return first;
}

void
gather_free(struct gather *g)
{
	for (int i = 0; i < g->n; i++) {
		free(g->nodes[i].node);
		free(g->nodes[i].error);
		check_report_free(&g->nodes[i].report);
	}
	free(g->nodes);
	g->nodes = NULL;
	g->n = 0;
}
