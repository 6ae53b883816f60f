/*
 * report_plans.c - questions about a plan beyond its report: one value
 * explained (fgc report --explain NAME: what computes it, where, whether
 * it is written and why, what the partitioner's walk did with it), two
 * plans compared (--diff: groups matched by their ops), and a binary's
 * --bench-json timings read back and checked against the plan
 * (--measured), for the report to print beside its estimates.
 */
#include <math.h>
#include <string.h>

#include "report.h"

/* ---------------------------------------------------------- explain */

/* The group list "group 2 (loop g2_loop_mul)" of value id's groups. */
static void explain_groups(const Report *r, const Members *m, int id)
{
	for (int k = m->first[id]; k < m->first[id + 1]; k++) {
		const FgGroup *gr = &r->plan->groups[m->group[k]];
		fprintf(r->f, "%sgroup %d (%s %s)", k == m->first[id] ? "" : ", ", m->group[k], kind_name(gr->kind),
			gr->name ? gr->name : "-");
	}
}

/* One value by name: what computes it, in which groups, whether it is
 * written and why, what the partitioner's walk did with it (plan->trail),
 * who reads it and the boundaries it crosses.  A name passes/cse.c
 * merged is explained as the value that computes it. */
int fg_report_explain(FILE *f, const FgPlan *plan, const char *name, FgDiag *d)
{
	Report r = report_open(f, plan, 0);
	const FgGraph *g = r.g;
	Members m = members_of(plan);
	char type[256], loc[32], b[32];
	int id = -1;

	for (int k = 0; k < g->merged.n && id < 0; k++)
		if (g->merged.v[k].name && strcmp(g->merged.v[k].name, name) == 0) {
			const FgMerged *mg = &g->merged.v[k];
			id = mg->as;
			fprintf(f, "%s (%s at %s) repeats %s: computed once (passes/cse.c), as that value\n\n", name,
				fg_op_info[mg->op].name, loc_str(loc, sizeof loc, mg->loc), r.names[id]);
		}
	for (int i = 0; i < g->nnodes && id < 0; i++)
		if (strcmp(r.names[i], name) == 0)
			id = i;
	if (id < 0) {
		const char *near = NULL;
		int best = 3;
		for (int i = 0; i < g->nnodes; i++) {
			int dist = fg_edit_distance(name, r.names[i], best - 1);
			if (dist < best)
				best = dist, near = r.names[i];
		}
		if (near)
			fg_error(d, (FgLoc){0, 0}, "--explain %s: graph '%s' has no value of that name; did you mean '%s'?",
				 name, graph_name(g), near);
		else
			fg_error(d, (FgLoc){0, 0}, "--explain %s: graph '%s' has no value of that name", name,
				 graph_name(g));
		return 1;
	}
	const FgNode *n = &g->nodes[id];
	fprintf(f, "%s  %s  %s", r.names[id], fg_type_str(type, sizeof type, n->dt, &n->shape),
		n->op == FG_OP_CONST ? op_label(b, sizeof b, n) : fg_op_info[n->op].name);
	if (n->loc.line)
		fprintf(f, " at %s", loc_str(loc, sizeof loc, n->loc));
	if (n->composite)
		fprintf(f, " (from %s)", n->composite);
	fprintf(f, ", %s\n", human_bytes(b, sizeof b, fg_value_bytes(g, id)));
	if (n->nin) {
		fputs("  computed from: ", f);
		for (int k = 0; k < n->nin; k++)
			fprintf(f, "%s%s", k ? ", " : "", r.names[n->in[k]]);
		fputc('\n', f);
	}
	if (fg_op_info[n->op].cls == FG_CLASS_SOURCE && n->op != FG_OP_CONST) {
		fprintf(f, "  an %s of the graph: in memory before the first launch\n",
			n->op == FG_OP_INPUT ? "input" : "param");
	} else if (m.first[id] == m.first[id + 1]) {
		fputs(n->op == FG_OP_CONST ? "  a constant nothing reads\n"
			: "  in no group: no output or saved value needs it, so it is not computed\n", f);
	} else {
		fputs(m.first[id + 1] - m.first[id] > 1 ? "  computed in each of: " : "  computed in: ", f);
		explain_groups(&r, &m, id);
		fputc('\n', f);
		if (plan->why[id] != FG_WHY_NONE && plan->home && plan->home[id] >= 0)
			fprintf(f, "  written to memory by group %d: %s\n", plan->home[id], reason_name(plan->why[id]));
		else
			fputs("  not written to memory: it stays in the registers of the groups that compute it\n", f);
	}
	for (int k = 0; k < g->merged.n; k++)
		if (g->merged.v[k].as == id)
			fprintf(f, "  written again: %s at %s%s%s%s, computed once (passes/cse.c)\n",
				merged_name(&g->merged.v[k]), loc_str(loc, sizeof loc, g->merged.v[k].loc),
				g->merged.v[k].composite ? " (from " : "",
				g->merged.v[k].composite ? g->merged.v[k].composite : "", g->merged.v[k].composite ? ")" : "");
	if (plan->trail && plan->trail[id])
		fprintf(f, "  the walk: %s\n", plan->trail[id]);
	int readers = 0;
	for (int i = id + 1; i < g->nnodes; i++)
		for (int k = 0; k < g->nodes[i].nin; k++) {
			if (g->nodes[i].in[k] != id)
				continue;
			fprintf(f, "%s%s (%s", readers++ ? ", " : "  read by: ", r.names[i], fg_op_info[g->nodes[i].op].name);
			for (int j = m.first[i]; j < m.first[i + 1]; j++)
				fprintf(f, "%s%d", j == m.first[i] ? ", group " : " and ", m.group[j]);
			fputc(')', f);
			break;
		}
	if (readers)
		fputc('\n', f);
	for (int i = 0; i < g->noutputs; i++)
		if (g->outputs[i] == id)
			fputs("  an output of the graph\n", f);
	if (n->flags & FG_NF_SAVED)
		fprintf(f, "  @save: returned as saved.%s\n", r.names[id]);
	for (int k = 0, any = 0; k < plan->nedges; k++) {
		const FgEdge *e = &plan->edges[k];
		if (e->producer != id && e->consumer != id)
			continue;
		if (!any++)
			fputs("  boundaries:\n", f);
		fprintf(f, "    %s -> %s (group %d -> group %d) %s: ", r.names[e->producer], r.names[e->consumer], e->from,
			e->to, reason_name(e->why));
		put_oneline(f, e->detail ? e->detail : "");
		fputc('\n', f);
	}
	return 0;
}

/* ------------------------------------------------------------- diff */

static uint64_t str_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;       /* FNV-1a */
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

/* Per node, its identity across two plans: its name where the program
 * gave one; else its op within the statement that names a value on its
 * line (`mean in n`: a composite's ops, the temporaries of an
 * expression), numbered when several share it; else its op and source
 * position.  The same file under other flags matches every node; an
 * edited file, what kept its statement's name, or its place. */
static const char **graph_keys(FgArena *a, const FgGraph *g)
{
	const char **key = fg_arena_array(a, (size_t)g->nnodes + 1, sizeof(char *));
	const char **stmt = fg_arena_array(a, (size_t)g->nnodes + 1, sizeof(char *));
	unsigned size = 16;
	while (size < 2u * (unsigned)g->nnodes + 2)
		size *= 2;
	const char **seen = fg_arena_array(a, size, sizeof(char *));
	int *count = fg_arena_array(a, size, sizeof(int));

	/* a statement's named node is the last of those on its line */
	for (int id = g->nnodes - 1, line = 0; id >= 0; id--) {
		const FgNode *n = &g->nodes[id];
		if (n->name)
			line = n->loc.line;
		stmt[id] = n->name ? n->name : line && n->loc.line == line ? stmt[id + 1] : NULL;
	}
	for (int id = 0; id < g->nnodes; id++) {
		const FgNode *n = &g->nodes[id];
		if (n->name) {
			key[id] = n->name;
			continue;
		}
		const char *base = stmt[id] ? fg_arena_printf(a, "%s in %s", fg_op_info[n->op].name, stmt[id])
			: fg_arena_printf(a, "%s@%d:%d%s", fg_op_info[n->op].name, n->loc.line, n->loc.col,
					  n->composite ? n->composite : "");
		unsigned i = (unsigned)str_hash(base) & (size - 1);
		while (seen[i] && strcmp(seen[i], base) != 0)
			i = (i + 1) & (size - 1);
		seen[i] = base;
		key[id] = count[i]++ ? fg_arena_printf(a, "%s#%d", base, count[i]) : base;
	}
	return key;
}

typedef struct KeyMap {         /* key -> the groups of one plan holding it */
	const char **nodes;     /* per node of the plan's graph: its key */
	const char **key;
	FG_VEC(int) *groups;
	unsigned mask;
} KeyMap;

static KeyMap keymap_of(FgArena *a, const FgPlan *plan)
{
	unsigned size = 16;
	int total = 0;
	for (int gi = 0; gi < plan->ngroups; gi++)
		total += plan->groups[gi].nnodes;
	while (size < 2u * (unsigned)total + 2)
		size *= 2;
	KeyMap m = {graph_keys(a, plan->g), fg_arena_array(a, size, sizeof(char *)),
		    fg_arena_array(a, size, sizeof(*m.groups)), size - 1};
	for (int gi = 0; gi < plan->ngroups; gi++)
		for (int k = 0; k < plan->groups[gi].nnodes; k++) {
			const FgNode *n = &plan->g->nodes[plan->groups[gi].nodes[k]];
			if (n->op == FG_OP_CONST)
				continue;
			const char *key = m.nodes[plan->groups[gi].nodes[k]];
			unsigned i = (unsigned)str_hash(key) & m.mask;
			while (m.key[i] && strcmp(m.key[i], key) != 0)
				i = (i + 1) & m.mask;
			m.key[i] = key;
			if (!m.groups[i].n || m.groups[i].v[m.groups[i].n - 1] != gi)
				fg_vec_push(a, &m.groups[i], gi);
		}
	return m;
}

static const int *keymap_get(const KeyMap *m, const char *key, int *n)
{
	unsigned i = (unsigned)str_hash(key) & m->mask;
	while (m->key[i] && strcmp(m->key[i], key) != 0)
		i = (i + 1) & m->mask;
	*n = m->key[i] ? m->groups[i].n : 0;
	return m->key[i] ? m->groups[i].v : NULL;
}

/* The groups of `to` holding any op of group gi of `from`, into out
 * (sorted, unique); their count. */
static int counterparts(const FgPlan *from, const KeyMap *fk, int gi, const KeyMap *to, int *out, int max)
{
	const FgGroup *gr = &from->groups[gi];
	int n = 0;
	for (int k = 0; k < gr->nnodes; k++) {
		const FgNode *node = &from->g->nodes[gr->nodes[k]];
		int m;
		if (node->op == FG_OP_CONST)
			continue;
		const int *gs = keymap_get(to, fk->nodes[gr->nodes[k]], &m);
		for (int j = 0; j < m; j++) {
			int at = 0;
			while (at < n && out[at] < gs[j])
				at++;
			if ((at < n && out[at] == gs[j]) || n == max)
				continue;
			memmove(&out[at + 1], &out[at], (size_t)(n - at) * sizeof *out);
			out[at] = gs[j];
			n++;
		}
	}
	return n;
}

static void diff_group(FILE *f, const char *side, const FgPlan *p, int gi)
{
	const FgGroup *gr = &p->groups[gi];
	char b[32];
	fprintf(f, "%s %d %s %s (%d op%s, %d launch%s, %s)", side, gi, kind_name(gr->kind), gr->name ? gr->name : "-",
		gr->nnodes, gr->nnodes == 1 ? "" : "s", gr->cost.launches, gr->cost.launches == 1 ? "" : "es",
		human_bytes(b, sizeof b, gr->cost.bytes));
}

/* Ops of group gi of `from` that no group of `to` in `in[0..n)` holds
 * but another does: "exp (4:3) to B 2". */
static void diff_moved(FILE *f, const FgPlan *from, const KeyMap *fk, int gi, const KeyMap *to, int home,
		       const char *other)
{
	const FgGroup *gr = &from->groups[gi];
	char loc[32];
	int said = 0;
	for (int k = 0; k < gr->nnodes; k++) {
		const FgNode *node = &from->g->nodes[gr->nodes[k]];
		int m, there = 0;
		if (node->op == FG_OP_CONST)
			continue;
		const int *gs = keymap_get(to, fk->nodes[gr->nodes[k]], &m);
		for (int j = 0; j < m; j++)
			there |= gs[j] == home;
		if (there)
			continue;
		if (said++ == 6) {
			fputs(", ...", f);
			break;
		}
		fprintf(f, "%s%s %s (%s) ", said == 1 ? "\n      moved: " : ", ", from->names[gr->nodes[k]],
			fg_op_info[node->op].name, loc_str(loc, sizeof loc, node->loc));
		if (m == 0)
			fprintf(f, "in no group of %s", other);
		for (int j = 0; j < m; j++)
			fprintf(f, "%s%s %d", j ? " and " : "to ", other, gs[j]);
	}
}

/* B/A to 3 significant digits: a plan can move 1000 times fewer bytes. */
static void diff_ratio(char *buf, size_t n, double num, double den)
{
	if (den > 0 && isfinite(num / den))
		snprintf(buf, n, "%.3gx", num / den);
	else
		snprintf(buf, n, "-");
}

void fg_report_diff(FILE *f, const FgPlan *a, const char *la, const FgPlan *b, const char *lb)
{
	FgArena *arena = a->g->arena;
	KeyMap ka = keymap_of(arena, a), kb = keymap_of(arena, b);
	int *to = fg_arena_array(arena, (size_t)b->ngroups + 1, sizeof(int));
	int *back = fg_arena_array(arena, (size_t)a->ngroups + 1, sizeof(int));
	char c[4][32];
	int same = 0;

	fprintf(f, "plan diff\n  A: %s\n  B: %s\n\n", la, lb);
	fprintf(f, "            %-12s %-12s B/A\n", "A", "B");
	fprintf(f, "  groups    %-12d %-12d\n", a->ngroups, b->ngroups);
	diff_ratio(c[0], 32, b->fused.launches, a->fused.launches);
	fprintf(f, "  launches  %-12d %-12d %s\n", a->fused.launches, b->fused.launches, c[0]);
	human_bytes(c[1], 32, a->fused.bytes);
	human_bytes(c[2], 32, b->fused.bytes);
	diff_ratio(c[0], 32, (double)b->fused.bytes, (double)a->fused.bytes);
	fprintf(f, "  bytes     %-12s %-12s %s\n", c[1], c[2], c[0]);
	snprintf(c[1], 32, "%.2f us", a->fused.est_us);
	snprintf(c[2], 32, "%.2f us", b->fused.est_us);
	diff_ratio(c[0], 32, b->fused.est_us, a->fused.est_us);
	fprintf(f, "  est time  %-12s %-12s %s\n", c[1], c[2], c[0]);

	fputs("\ngroups of A, matched to B by their ops\n", f);
	for (int gi = 0; gi < a->ngroups; gi++) {
		int n = counterparts(a, &ka, gi, &kb, to, b->ngroups);
		fputs("  ", f);
		diff_group(f, "A", a, gi);
		if (n == 0) {
			fputs("\n      only in A: B computes none of its ops\n", f);
			continue;
		}
		int nb = n == 1 ? counterparts(b, &kb, to[0], &ka, back, a->ngroups) : 0;
		const FgGroup *ga = &a->groups[gi], *gb = &b->groups[to[0]];
		if (n == 1 && nb == 1 && ga->nnodes == gb->nnodes && ga->kind == gb->kind) {
			same++;
			fprintf(f, " = B %d: the same ops", to[0]);
			if (ga->cost.bytes != gb->cost.bytes || ga->cost.launches != gb->cost.launches)
				fprintf(f, "; in B %d launch%s, %s", gb->cost.launches, gb->cost.launches == 1 ? "" : "es",
					human_bytes(c[0], 32, gb->cost.bytes));
			fputc('\n', f);
			continue;
		}
		fputs(n > 1 ? "\n    split into " : "\n    -> ", f);
		for (int j = 0; j < n; j++) {
			fputs(j ? "\n      and " : "", f);
			diff_group(f, "B", b, to[j]);
		}
		if (nb > 1) {
			fputs("\n      which also takes ops of ", f);
			for (int j = 0, k = 0; j < nb; j++)
				if (back[j] != gi)
					fprintf(f, "%sA %d", k++ ? ", " : "", back[j]);
		}
		/* the ops that left for another group than the first */
		diff_moved(f, a, &ka, gi, &kb, to[0], "B");
		fputc('\n', f);
	}
	int only = 0;
	for (int gj = 0; gj < b->ngroups; gj++)
		if (counterparts(b, &kb, gj, &ka, back, a->ngroups) == 0) {
			fputs(only++ ? "  " : "\ngroups only in B (A computes none of their ops)\n  ", f);
			diff_group(f, "B", b, gj);
			fputc('\n', f);
		}
	fprintf(f, "\n%d of A's %d groups are in B with the same ops\n", same, a->ngroups);
}

/* --------------------------------------------------------- measured */

/* The number under key in o, checked: *out, or a located error. */
static int json_number(FgDiag *d, const FgJson *o, const char *key, double lo, int null_ok, double *out)
{
	const FgJson *v = fg_json_get(o, key);
	if (!v) {
		fg_error(d, o->loc, "this object has no \"%s\"", key);
		return 1;
	}
	if (null_ok && v->kind == FG_JSON_NULL) {
		*out = -1;
		return 0;
	}
	if (v->kind != FG_JSON_NUMBER || !(v->num >= lo)) {
		fg_error(d, v->loc, "\"%s\": expected a number of at least %g%s", key, lo, null_ok ? " or null" : "");
		return 1;
	}
	*out = v->num;
	return 0;
}

/* The timings' "inputs" (name and shape of each input and param) are
 * this graph's, at these sizes. */
static int check_inputs(const FgPlan *plan, const FgJson *root, FgDiag *d)
{
	const FgGraph *g = plan->g;
	const FgJson *in = fg_json_get(root, "inputs");
	char want[256];

	if (!in || in->kind != FG_JSON_ARRAY) {
		fg_error(d, in ? in->loc : root->loc, "\"inputs\": expected an array of the inputs timed");
		return 1;
	}
	for (int k = 0; k < g->ninputs; k++) {
		const FgNode *n = &g->nodes[g->inputs[k]];
		const char *name = plan->names[g->inputs[k]];
		const FgJson *t = NULL, *shape = NULL;
		for (int i = 0; i < in->n && !t; i++) {
			const FgJson *nm = fg_json_get(&in->items[i], "name");
			if (nm && nm->kind == FG_JSON_STRING && strcmp(nm->str, name) == 0)
				t = &in->items[i];
		}
		if (!t) {
			fg_error(d, in->loc, "no input '%s' here: timings of another graph", name);
			return 1;
		}
		shape = fg_json_get(t, "shape");
		int same = shape && shape->kind == FG_JSON_ARRAY && shape->n == n->shape.rank;
		for (int i = 0; same && i < shape->n; i++)
			same = shape->items[i].kind == FG_JSON_NUMBER && shape->items[i].num == (double)n->shape.d[i];
		if (!same) {
			fg_error(d, shape ? shape->loc : t->loc, "input '%s' was timed at another shape than this graph's %s "
				 "(give the -D the binary was compiled with)", name,
				 fg_type_str(want, sizeof want, n->dt, &n->shape));
			return 1;
		}
	}
	return 0;
}

static int read_measured(FgPlan *plan, const FgJson *root, FgMeasured *m, FgDiag *d)
{
	const char *graph = graph_name(plan->g);
	double runs;
	int *count = fg_arena_array(plan->g->arena, (size_t)plan->ngroups + 1, sizeof(int));

	if (root->kind != FG_JSON_OBJECT) {
		fg_error(d, root->loc, "expected an object, as a binary's --bench-json writes");
		return 1;
	}
	const FgJson *g = fg_json_get(root, "graph"), *ls = fg_json_get(root, "launches");
	if (!g || g->kind != FG_JSON_STRING) {
		fg_error(d, g ? g->loc : root->loc, "\"graph\": expected the graph's name, a string");
		return 1;
	}
	if (strcmp(g->str, graph) != 0) {
		fg_error(d, g->loc, "timings of graph '%s', not of '%s'", g->str, graph);
		return 1;
	}
	if (json_number(d, root, "runs", 1, 0, &runs) || json_number(d, root, "replay_ms", 0, 1, &m->replay_ms) ||
	    json_number(d, root, "eager_ms", 0, 0, &m->eager_ms) || json_number(d, root, "copy_gbs", 0, 0, &m->copy_gbs))
		return 1;
	m->runs = runs > 1e9 ? 1000000000 : (int)runs;
	if (check_inputs(plan, root, d) != 0)
		return 1;
	if (!ls || ls->kind != FG_JSON_ARRAY) {
		fg_error(d, ls ? ls->loc : root->loc, "\"launches\": expected an array of the launches");
		return 1;
	}
	if (ls->n != plan->fused.launches) {
		fg_error(d, ls->loc, "%d launches, where the plan has %d: timings of another plan of '%s' (other flags "
			 "or sizes?)", ls->n, plan->fused.launches, graph);
		return 1;
	}
	for (int i = 0; i < ls->n; i++) {
		const FgJson *l = &ls->items[i];
		double gi, ms;
		if (l->kind != FG_JSON_OBJECT) {
			fg_error(d, l->loc, "expected a launch: {\"group\": N, \"kernel\": NAME, \"ms\": T}");
			return 1;
		}
		if (json_number(d, l, "group", 0, 0, &gi) || json_number(d, l, "ms", 0, 0, &ms))
			return 1;
		if (gi >= plan->ngroups || gi != (int)gi) {
			fg_error(d, fg_json_get(l, "group")->loc, "group %g: the plan has groups 0 to %d", gi,
				 plan->ngroups - 1);
			return 1;
		}
		m->group_us[(int)gi] += ms * 1e3;
		count[(int)gi]++;
	}
	for (int gi = 0; gi < plan->ngroups; gi++)
		if (count[gi] != plan->groups[gi].cost.launches) {
			fg_error(d, ls->loc, "group %d has %d launch%s here, %d in the plan: timings of another plan of "
				 "'%s'", gi, count[gi], count[gi] == 1 ? "" : "es", plan->groups[gi].cost.launches, graph);
			return 1;
		}
	return 0;
}

int fg_report_measured(FgPlan *plan, const char *path, FgDiag *d)
{
	FgArena *a = plan->g->arena;
	FgSource *src = fg_arena_array(a, 1, sizeof *src);
	FgMeasured *m = fg_arena_array(a, 1, sizeof *m);
	FgJson root;
	const FgSource *was = d->src;

	if (fg_source_read(a, path, src) != 0)
		return 1;
	m->file = path;
	m->group_us = fg_arena_array(a, (size_t)plan->ngroups + 1, sizeof(double));
	d->src = src;
	int bad = fg_json_parse(a, d, src, &root) || read_measured(plan, &root, m, d);
	d->src = was;
	if (!bad)
		plan->measured = m;
	return bad;
}
