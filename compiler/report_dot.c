/*
 * report_dot.c - the fusion plan as a Graphviz picture: each group a
 * cluster of its ops, or, past DOT_OPS_MAX ops or where --dot-ops says,
 * one node (kind, name, launches, bytes, its ops in order, the inputs it
 * reads); the boundaries as red edges labelled with their values and
 * reasons, one per pair of nodes; a legend of the group kinds.
 */
#include <stdlib.h>
#include <string.h>

#include "report.h"

/* Fill and border per group kind (FG_GROUP_KINDS): pale enough for black
 * text. */
static const char *const kind_fill[FG_GROUP_COUNT] = {
#define X(id, name, fill, border) [FG_GROUP_##id] = fill,
	FG_GROUP_KINDS(X)
#undef X
};
static const char *const kind_border[FG_GROUP_COUNT] = {
#define X(id, name, fill, border) [FG_GROUP_##id] = border,
	FG_GROUP_KINDS(X)
#undef X
};
#define BOUNDARY_COLOR "#dc2626"

typedef struct Dot {
	Report r;
	Members m;
	const char *ops;        /* per group: drawn op by op (else one node) */
	int *declared;          /* per node: a stand-alone DOT node was written */
	const FgEdge **by_consumer; /* edges sorted by (to, consumer, producer) */
} Dot;

/* Above this many ops drawn, the picture is one node per group: Graphviz
 * lays out a few hundred nodes in a second, but took over a minute on an
 * 80-step chain (561 edges) and gave up on a 96-layer model. */
#define DOT_OPS_MAX 150

/* A DOT string: quotes and backslashes escaped, newlines as \n, other
 * control characters as spaces, bytes that are not UTF-8 (which Graphviz
 * warns about) as '?'. */
static void dot_str(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	int n;

	fputc('"', f);
	for (; *p; p += n) {
		n = 1;
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p == '\n')
			fputs("\\n", f);
		else if (*p < 0x20)
			fputc(' ', f);
		else if (*p < 0x80)
			fputc(*p, f);
		else if ((n = utf8_len(p)) > 0)
			fwrite(p, 1, (size_t)n, f);
		else {
			fputc('?', f);
			n = 1;
		}
	}
	fputc('"', f);
}

static int is_source(const FgGraph *g, int id)
{
	return g->nodes[id].op == FG_OP_INPUT || g->nodes[id].op == FG_OP_PARAM;
}

static int edge_order(const void *a, const void *b)
{
	const FgEdge *x = *(const FgEdge *const *)a, *y = *(const FgEdge *const *)b;

	if (x->to != y->to)
		return x->to < y->to ? -1 : 1;
	if (x->consumer != y->consumer)
		return x->consumer < y->consumer ? -1 : 1;
	return (x->producer > y->producer) - (x->producer < y->producer);
}

static int has_edge(const Dot *d, int to, int consumer, int producer)
{
	FgEdge key = {.producer = producer, .consumer = consumer, .to = to};
	const FgEdge *kp = &key;

	return bsearch(&kp, d->by_consumer, (size_t)d->r.plan->nedges, sizeof *d->by_consumer,
		       edge_order) != NULL;
}

/* The DOT node that stands for value id at an edge into or out of group
 * gi, in buf: "in_ID" for inputs and params, "gG_nID" in gi or else in
 * its home group ("gG" when that group is one node), or a stand-alone
 * "v_ID" when no group holds it (a plan may name a producer outside its
 * home group), declared on first use.  Call it before starting the edge's
 * line. */
static const char *dot_ref(Dot *d, int gi, int id, char *buf, size_t n)
{
	const FgPlan *plan = d->r.plan;

	if (gi < 0 || !is_member(&d->m, gi, id))
		gi = plan->home && plan->home[id] >= 0 && is_member(&d->m, plan->home[id], id) ? plan->home[id] : -1;
	if (is_source(d->r.g, id))
		snprintf(buf, n, "in_%d", id);
	else if (gi >= 0 && !d->ops[gi])
		snprintf(buf, n, "g%d", gi);
	else if (gi >= 0)
		snprintf(buf, n, "g%d_n%d", gi, id);
	else {
		snprintf(buf, n, "v_%d", id);
		if (!d->declared[id]) {
			d->declared[id] = 1;
			fprintf(d->r.f, "  \"%s\" [label=", buf);
			dot_str(d->r.f, d->r.names[id]);
			fputs(", style=dashed];\n", d->r.f);
		}
	}
	return buf;
}

/* The inputs and params that groups drawn op by op read, as boxes. */
static void dot_sources(const Dot *d)
{
	const FgGraph *g = d->r.g;
	char type[256];

	for (int k = 0; k < g->ninputs; k++) {
		int id = g->inputs[k], drawn = 0;
		const FgNode *n = &g->nodes[id];
		for (int gi = 0; gi < d->r.plan->ngroups; gi++)
			for (int j = 0; j < d->r.plan->groups[gi].nreads && d->ops[gi] && !drawn; j++)
				drawn = d->r.plan->groups[gi].reads[j] == id;
		if (!drawn)
			continue;
		char *label = fg_arena_printf(g->arena, "%s\n%s", d->r.names[id],
					      fg_type_str(type, sizeof type, n->dt, &n->shape));
		fprintf(d->r.f, "  \"in_%d\" [label=", id);
		dot_str(d->r.f, label);
		fprintf(d->r.f, ", shape=box, style=\"filled%s\", fillcolor=\"#f3f4f6\"];\n",
			n->op == FG_OP_PARAM ? ",dashed" : "");
	}
}

/* A group's heading: number, kind, name, launches, bytes, estimate. */
static char *group_label(const Dot *d, int gi)
{
	const FgGroup *gr = &d->r.plan->groups[gi];
	char b[32];

	return fg_arena_printf(d->r.g->arena, "group %d: %s\n%s\n%d launch%s, %s, est %.2f us", gi,
			       kind_name(gr->kind), gr->name ? gr->name : "-", gr->cost.launches,
			       gr->cost.launches == 1 ? "" : "es", human_bytes(b, sizeof b, gr->cost.bytes),
			       gr->cost.est_us);
}

/* A group drawn as one node: its heading and its ops in order, a run of
 * one op as "exp x3", lines of about 40 characters, 4 lines at most. */
static void dot_group_node(const Dot *d, int gi)
{
	const FgGroup *gr = &d->r.plan->groups[gi];
	unsigned kind = (unsigned)gr->kind < FG_GROUP_COUNT ? (unsigned)gr->kind : 0;
	FG_VEC(char) t = {0};
	int line = 0, lines = 1, left = 0;

	for (const char *c = group_label(d, gi); *c; c++)
		fg_vec_push(d->r.g->arena, &t, *c);
	for (int k = 0; k < gr->nnodes; k++) {
		FgOp op = d->r.g->nodes[gr->nodes[k]].op;
		int run = 1;
		if (op == FG_OP_CONST)
			continue;
		while (k + run < gr->nnodes && d->r.g->nodes[gr->nodes[k + run]].op == op)
			run++;
		k += run - 1;
		if (lines > 4) {
			left += run;
			continue;
		}
		char item[48];
		int n = snprintf(item, sizeof item, run > 1 ? "%s x%d" : "%s", fg_op_info[op].name, run);
		if (line == 0 || line + n + 2 > 40) {
			if (line && ++lines > 4) {
				left += run;
				continue;
			}
			fg_vec_push(d->r.g->arena, &t, '\n');
			line = 0;
		} else {
			fg_vec_push(d->r.g->arena, &t, ',');
			fg_vec_push(d->r.g->arena, &t, ' ');
			line += 2;
		}
		for (int i = 0; i < n; i++)
			fg_vec_push(d->r.g->arena, &t, item[i]);
		line += n;
	}
	if (left) {
		char more[48];
		int n = snprintf(more, sizeof more, "\n... %d more op%s", left, left == 1 ? "" : "s");
		for (int i = 0; i < n; i++)
			fg_vec_push(d->r.g->arena, &t, more[i]);
	}
	/* its inputs and params by name: as nodes of their own they would be
	 * most of a large picture (a model's weights) */
	const char *sep = "\nreads ";
	for (int k = 0, shown = 0, len = 0; k < gr->nreads; k++) {
		int id = gr->reads[k];
		if (!is_source(d->r.g, id))
			continue;
		const char *name = d->r.names[id];
		if (shown == 3 || len + (int)strlen(name) > 40) {
			int rest = 0;
			for (; k < gr->nreads; k++)
				rest += is_source(d->r.g, gr->reads[k]);
			name = fg_arena_printf(d->r.g->arena, "%d more", rest);
		}
		for (const char *c = fg_arena_printf(d->r.g->arena, "%s%s", sep, name); *c; c++)
			fg_vec_push(d->r.g->arena, &t, *c);
		sep = ", ";
		len += (int)strlen(name) + 2;
		shown++;
	}
	fg_vec_push(d->r.g->arena, &t, '\0');
	fprintf(d->r.f, "  \"g%d\" [label=", gi);
	dot_str(d->r.f, t.v);
	fprintf(d->r.f, ", style=\"filled,rounded\", fillcolor=\"%s\", color=\"%s\"];\n", kind_fill[kind],
		kind_border[kind]);
}

static void dot_cluster(const Dot *d, int gi)
{
	FILE *f = d->r.f;
	const FgPlan *plan = d->r.plan;
	const FgGroup *gr = &plan->groups[gi];
	unsigned kind = (unsigned)gr->kind < FG_GROUP_COUNT ? (unsigned)gr->kind : 0;
	char *label = group_label(d, gi);

	fprintf(f, "  subgraph cluster_%d {\n    label=", gi);
	dot_str(f, label);
	fprintf(f, ";\n    style=\"filled,rounded\"; fillcolor=\"%s\"; color=\"%s\";\n", kind_fill[kind],
		kind_border[kind]);
	for (int k = 0; k < gr->nnodes; k++) {
		int id = gr->nodes[k];
		if (d->r.g->nodes[id].op == FG_OP_CONST)
			continue;
		fprintf(f, "    \"g%d_n%d\" [label=", gi, id);
		dot_str(f, fg_arena_printf(plan->g->arena, "%s = %s", d->r.names[id],
					   fg_op_info[d->r.g->nodes[id].op].name));
		fputs(plan->home && plan->home[id] == gi && plan->why[id] != FG_WHY_NONE ? ", peripheries=2" : "",
		      f);
		fputs("];\n", f);
	}
	fputs("  }\n", f);
}

/* The edges into group gi's members that no FgEdge explains: inside the
 * group, from graph inputs, and (dashed) any other read. */
static void dot_plain_edges(Dot *d, int gi)
{
	const FgGroup *gr = &d->r.plan->groups[gi];
	char from[48];

	for (int k = 0; k < gr->nnodes; k++) {
		const FgNode *n = &d->r.g->nodes[gr->nodes[k]];
		for (int j = 0; j < n->nin; j++) {
			int in = n->in[j];
			int plain = is_member(&d->m, gi, in) || is_source(d->r.g, in);
			if (d->r.g->nodes[in].op == FG_OP_CONST || (!plain && has_edge(d, gi, gr->nodes[k], in)))
				continue;
			dot_ref(d, gi, in, from, sizeof from);
			fprintf(d->r.f, "  \"%s\" -> \"g%d_n%d\"%s;\n", from, gi, gr->nodes[k],
				plain ? "" : " [style=dashed, color=\"#6b7280\"]");
		}
	}
}

/* Whether a boundary edge brings value id into group gi. */
static int crosses_into(const Dot *d, int gi, int id)
{
	const FgEdge *const *e = d->by_consumer;
	int lo = 0, hi = d->r.plan->nedges;

	while (lo < hi) {       /* the first edge into gi */
		int mid = (lo + hi) / 2;
		if (e[mid]->to < gi)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < d->r.plan->nedges && e[lo]->to == gi; lo++)
		if (e[lo]->producer == id)
			return 1;
	return 0;
}

/* The reads of group gi, drawn as one node, that no boundary explains
 * (dashed): its label names its inputs and params. */
static void dot_group_reads(Dot *d, int gi)
{
	const FgGroup *gr = &d->r.plan->groups[gi];
	char from[48];

	for (int k = 0; k < gr->nreads; k++) {
		int id = gr->reads[k];
		if (is_source(d->r.g, id) || crosses_into(d, gi, id))
			continue;
		dot_ref(d, -1, id, from, sizeof from);
		if (strcmp(from, fg_arena_printf(d->r.g->arena, "g%d", gi)) != 0)
			fprintf(d->r.f, "  \"%s\" -> \"g%d\" [style=dashed, color=\"#6b7280\"];\n", from, gi);
	}
}

/* Boundary edges in the order of their DOT ends, then their values and
 * reasons: those between the same two DOT nodes become one edge. */
static int boundary_order(const void *a, const void *b)
{
	const int *x = a, *y = b;
	for (int i = 0; i < 6; i++)
		if (x[i] != y[i])
			return x[i] < y[i] ? -1 : 1;
	return 0;
}

/* One DOT edge per pair of DOT nodes a boundary joins: labelled with each
 * value and reason that crosses it (4 at most, then a count), the
 * details as its tooltip (each once in a row, about 4 KB at most). */
static void dot_boundaries(Dot *d)
{
	FILE *f = d->r.f;
	const FgPlan *plan = d->r.plan;
	FgArena *a = plan->g->arena;
	char from[48], to[48];
	/* per edge: from, producer's DOT node, to, consumer's, producer, why;
	 * a group drawn as one node has -1 for its members */
	int *key = fg_arena_array(a, 7 * (size_t)plan->nedges + 1, sizeof(int));

	for (int k = 0; k < plan->nedges; k++) {
		const FgEdge *e = &plan->edges[k];
		int *q = &key[7 * k];
		q[0] = e->from, q[1] = d->ops[e->from] ? e->producer : -1;
		q[2] = e->to, q[3] = d->ops[e->to] ? e->consumer : -1;
		q[4] = e->producer, q[5] = (int)e->why, q[6] = k;
	}
	qsort(key, (size_t)plan->nedges, 7 * sizeof(int), boundary_order);
	for (int k = 0; k < plan->nedges;) {
		const FgEdge *e = &plan->edges[key[7 * k + 6]];
		FG_VEC(char) label = {0}, tip = {0};
		int n = 0, end = k;
		while (end < plan->nedges && memcmp(&key[7 * end], &key[7 * k], 4 * sizeof(int)) == 0)
			end++;
		const char *said = NULL;
		for (int j = k; j < end; j++) {
			const FgEdge *x = &plan->edges[key[7 * j + 6]];
			const char *detail = x->detail ? x->detail : "";
			if (tip.n < 4096 && (!said || strcmp(said, detail) != 0))
				for (const char *c = fg_arena_printf(a, "%s%s", said ? "\n" : "", detail); *c; c++)
					fg_vec_push(a, &tip, *c);
			said = detail;
			if (j > k && key[7 * j + 4] == key[7 * j - 3] && key[7 * j + 5] == key[7 * j - 2])
				continue;       /* the same value for the same reason */
			const char *item = d->ops[x->from] && d->ops[x->to] ? reason_name(x->why)
				: fg_arena_printf(a, "%s: %s", d->r.names[x->producer], reason_name(x->why));
			if (n < 4)
				for (const char *c = n ? fg_arena_printf(a, "\n%s", item) : item; *c; c++)
					fg_vec_push(a, &label, *c);
			n++;
		}
		if (n > 4)
			for (const char *c = fg_arena_printf(a, "\n... %d more", n - 4); *c; c++)
				fg_vec_push(a, &label, *c);
		fg_vec_push(a, &label, '\0');
		fg_vec_push(a, &tip, '\0');
		dot_ref(d, e->from, e->producer, from, sizeof from);
		dot_ref(d, e->to, e->consumer, to, sizeof to);
		fprintf(f, "  \"%s\" -> \"%s\" [label=", from, to);
		dot_str(f, label.v);
		fputs(", tooltip=", f);
		dot_str(f, tip.v);
		fputs(", style=bold, penwidth=2, color=\"" BOUNDARY_COLOR "\", fontcolor=\"" BOUNDARY_COLOR "\"];\n",
		      f);
		k = end;
	}
}

static void dot_legend(FILE *f)
{
	fputs("  legend [shape=plaintext, label=<<table border=\"0\" cellborder=\"1\" cellspacing=\"0\" "
	      "cellpadding=\"4\">\n    <tr><td><b>group kinds</b></td></tr>\n",
	      f);
	for (int k = 0; k < FG_GROUP_COUNT; k++)
		fprintf(f, "    <tr><td bgcolor=\"%s\" color=\"%s\">%s</td></tr>\n", kind_fill[k], kind_border[k],
			fg_group_kind_name[k]);
	fputs("    <tr><td bgcolor=\"#f3f4f6\">input (param: dashed)</td></tr>\n"
	      "    <tr><td>double border: written to memory</td></tr>\n"
	      "    <tr><td><font color=\"" BOUNDARY_COLOR "\">red edge: boundary, with its reason</font></td></tr>\n"
	      "  </table>>];\n",
	      f);
}

void fg_report_dot(FILE *f, const FgPlan *plan)
{
	fg_report_dot_ops(f, plan, NULL);
}

void fg_report_dot_ops(FILE *f, const FgPlan *plan, const char *ops)
{
	Dot d = {report_open(f, plan, 0), members_of(plan), ops, NULL, NULL};
	FgArena *a = plan->g->arena;

	if (!ops) {             /* every group op by op, when that is small */
		int drawn = 0;
		for (int gi = 0; gi < plan->ngroups; gi++)
			for (int k = 0; k < plan->groups[gi].nnodes; k++)
				drawn += plan->g->nodes[plan->groups[gi].nodes[k]].op != FG_OP_CONST;
		char *all = fg_arena_array(a, (size_t)plan->ngroups + 1, 1);
		memset(all, drawn <= DOT_OPS_MAX, (size_t)plan->ngroups + 1);
		d.ops = all;
	}

	d.declared = fg_arena_array(a, (size_t)plan->g->nnodes + 1, sizeof(int));
	d.by_consumer = fg_arena_array(a, (size_t)plan->nedges + 1, sizeof *d.by_consumer);
	for (int k = 0; k < plan->nedges; k++)
		d.by_consumer[k] = &plan->edges[k];
	qsort(d.by_consumer, (size_t)plan->nedges, sizeof *d.by_consumer, edge_order);

	fputs("digraph ", f);
	dot_str(f, graph_name(d.r.g));
	fputs(" {\n  graph [fontname=\"Helvetica\", labelloc=t, label=", f);
	dot_str(f, fg_arena_printf(a, "%s: %d groups, est %.2f us fused, %.2f us unfused", graph_name(d.r.g),
				   plan->ngroups, plan->fused.est_us, plan->unfused.est_us));
	fputs("];\n  node [fontname=\"Helvetica\", fontsize=10, shape=box, style=\"rounded,filled\", "
	      "fillcolor=white];\n  edge [fontname=\"Helvetica\", fontsize=9];\n",
	      f);
	dot_sources(&d);
	for (int gi = 0; gi < plan->ngroups; gi++) {
		if (d.ops[gi])
			dot_cluster(&d, gi);
		else
			dot_group_node(&d, gi);
	}
	for (int gi = 0; gi < plan->ngroups; gi++) {
		if (d.ops[gi])
			dot_plain_edges(&d, gi);
		else
			dot_group_reads(&d, gi);
	}
	dot_boundaries(&d);
	dot_legend(f);
	fputs("}\n", f);
}
