/*
 * report.c - explains a fusion plan to people (text), to programs (JSON)
 * and as a picture (Graphviz DOT): the groups in launch order with their
 * ops, what each reads and writes and why, every edge the plan did not
 * fuse with the rule and the numbers behind it, the cost model's totals
 * fused and unfused, and the arena the memory planner laid out.
 *
 * The report only reads the plan: it works on any plan, whether the
 * memory planner ran (plan->offset set) or not.  Output is deterministic
 * text, a function of the plan alone, so reports can be golden files.
 * Names come from plan->names (fg_ir_names), which are unique; the free
 * text in an edge's detail is escaped for JSON and DOT, and kept on one
 * line in the text report.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fg.h"

typedef struct Report {
	FILE *f;
	const FgPlan *plan;
	const FgGraph *g;
	const char **names;     /* per node */
	int *owner;             /* per group: the group whose kernels it runs,
				   or -1 (fg_cuda_kernel_owners) */
	int owners;             /* groups that run kernels of their own */
	int kernels;            /* groups with kernels */
	int *readers;           /* per node: the groups reading it across a
				   boundary (count_readers) */
} Report;

static int pair_order(const void *a, const void *b)
{
	const int *x = a, *y = b;
	return x[0] != y[0] ? (x[0] > y[0]) - (x[0] < y[0]) : (x[1] > y[1]) - (x[1] < y[1]);
}

/* Per node, the distinct groups its boundary edges go to: the (producer,
 * group) pairs sorted, then counted once each. */
static int *count_readers(const FgPlan *plan)
{
	int *readers = fg_arena_array(plan->g->arena, (size_t)plan->g->nnodes + 1, sizeof(int));
	int *pair = fg_arena_array(plan->g->arena, 2 * (size_t)plan->nedges + 2, sizeof(int));

	for (int k = 0; k < plan->nedges; k++) {
		pair[2 * k] = plan->edges[k].producer;
		pair[2 * k + 1] = plan->edges[k].to;
	}
	qsort(pair, (size_t)plan->nedges, 2 * sizeof(int), pair_order);
	for (int k = 0; k < plan->nedges; k++)
		readers[pair[2 * k]] += k == 0 || pair_order(&pair[2 * k], &pair[2 * k - 2]) != 0;
	return readers;
}

/* kernels: which groups share kernels is asked of the CUDA backend. */
static Report report_open(FILE *f, const FgPlan *plan, int kernels)
{
	Report r = {f, plan, plan->g, plan->names, NULL, 0, 0, count_readers(plan)};

	if (!r.names)
		r.names = fg_ir_names(plan->g);
	if (!kernels)
		return r;
	if (plan->kernel_owner) {       /* fg_cuda_plan_costs asked already */
		r.owner = plan->kernel_owner;
		r.owners = plan->kernel_owners;
	} else {
		r.owner = fg_arena_array(plan->g->arena, (size_t)plan->ngroups + 1, sizeof(int));
		r.owners = fg_cuda_kernel_owners(plan, r.owner);
	}
	for (int gi = 0; gi < plan->ngroups; gi++)
		r.kernels += r.owner[gi] >= 0;
	return r;
}

/* What compile does with group gi's code (fg_cuda_kernel_owners): the
 * kernels of an earlier group that computes the same on other tensors, or
 * its own, which later groups may launch too. */
static void text_kernel(const Report *r, int gi)
{
	const FgPlan *plan = r->plan;
	int shared = 0;

	if (r->owner[gi] < 0)
		return;
	if (r->owner[gi] != gi) {
		fprintf(r->f, "  kernel: group %d's (the same code), launched on this group's tensors\n", r->owner[gi]);
		return;
	}
	for (int g = gi + 1; g < plan->ngroups; g++)
		shared += r->owner[g] == gi;
	if (!shared)
		return;
	fprintf(r->f, "  kernel: also launched by %d later group%s, each on its own tensors:", shared,
		shared == 1 ? "" : "s");
	for (int g = gi + 1; g < plan->ngroups; g++)
		if (r->owner[g] == gi)
			fprintf(r->f, " %d", g);
	fputc('\n', r->f);
}

static const char *graph_name(const FgGraph *g)
{
	return g->name ? g->name : "graph";
}

static const char *kind_name(FgGroupKind k)
{
	return (unsigned)k < FG_GROUP_COUNT ? fg_group_kind_name[k] : "?";
}

static const char *reason_name(FgReason why)
{
	return (unsigned)why < FG_WHY_COUNT ? fg_reason_name[why] : "?";
}

/* "512 B", "4.0 KiB", "1.5 GiB". */
static char *human_bytes(char *buf, size_t n, int64_t b)
{
	static const char *const unit[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
	double v = (double)b;
	int u = -1;

	if (b < 1024 && b > -1024) {
		snprintf(buf, n, "%lld B", (long long)b);
		return buf;
	}
	/* 1023.96 KiB would print as 1024.0 KiB: promote it. */
	while (u < 5 && fabs(v) >= 1023.95) {
		v /= 1024;
		u++;
	}
	snprintf(buf, n, "%.1f %s", v, unit[u]);
	return buf;
}

static int int_width(long long v)
{
	char buf[32];

	return snprintf(buf, sizeof buf, "%lld", v);
}

static int max_int(int a, int b)
{
	return a > b ? a : b;
}

static char *loc_str(char *buf, size_t n, FgLoc loc)
{
	if (loc.line > 0)
		snprintf(buf, n, "%d:%d", loc.line, loc.col);
	else
		snprintf(buf, n, "-");
	return buf;
}

/* Free text on one line: control characters become spaces. */
static void put_oneline(FILE *f, const char *s)
{
	for (; *s; s++)
		fputc((unsigned char)*s < 0x20 || *s == 0x7f ? ' ' : *s, f);
}

/* Which groups hold each node: a node may be recomputed in several. */
typedef struct Members {
	int *first;             /* per node: its slice of `group` */
	int *group;
} Members;

static Members members_of(const FgPlan *plan)
{
	FgArena *a = plan->g->arena;
	int n = plan->g->nnodes, total = 0;
	Members m = {fg_arena_array(a, (size_t)n + 2, sizeof(int)), NULL};
	int *fill = fg_arena_array(a, (size_t)n + 1, sizeof(int));

	for (int gi = 0; gi < plan->ngroups; gi++)
		for (int k = 0; k < plan->groups[gi].nnodes; k++)
			m.first[plan->groups[gi].nodes[k] + 1]++;
	for (int id = 0; id < n; id++)
		m.first[id + 1] = (total += m.first[id + 1]);
	m.group = fg_arena_array(a, (size_t)total + 1, sizeof(int));
	for (int gi = 0; gi < plan->ngroups; gi++)
		for (int k = 0; k < plan->groups[gi].nnodes; k++) {
			int id = plan->groups[gi].nodes[k];
			m.group[m.first[id] + fill[id]++] = gi;
		}
	return m;
}

static int is_member(const Members *m, int gi, int id)
{
	for (int k = m->first[id]; k < m->first[id + 1]; k++)
		if (m->group[k] == gi)
			return 1;
	return 0;
}

/* ------------------------------------------------------------- text */

/* The op as the text report shows it: a constant with its value. */
static const char *op_label(char *buf, size_t n, const FgNode *node)
{
	if (node->op != FG_OP_CONST)
		return fg_op_info[node->op].name;
	snprintf(buf, n, "const %g", node->a.value);
	return buf;
}

static void text_ops(const Report *r, const FgGroup *gr)
{
	int wn = 0, wo = 0, wt = 0, wl = 0;
	char type[256], loc[32], op[64];

	for (int k = 0; k < gr->nnodes; k++) {
		const FgNode *n = &r->g->nodes[gr->nodes[k]];
		wn = max_int(wn, (int)strlen(r->names[gr->nodes[k]]));
		wo = max_int(wo, (int)strlen(op_label(op, sizeof op, n)));
		wt = max_int(wt, (int)strlen(fg_type_str(type, sizeof type, n->dt, &n->shape)));
		wl = max_int(wl, (int)strlen(loc_str(loc, sizeof loc, n->loc)));
	}
	for (int k = 0; k < gr->nnodes; k++) {
		const FgNode *n = &r->g->nodes[gr->nodes[k]];
		fprintf(r->f, "  %-*s  %-*s  %-*s  ", wn, r->names[gr->nodes[k]], wo, op_label(op, sizeof op, n),
			wt, fg_type_str(type, sizeof type, n->dt, &n->shape));
		if (n->composite)
			fprintf(r->f, "%-*s  (from %s)\n", wl, loc_str(loc, sizeof loc, n->loc), n->composite);
		else
			fprintf(r->f, "%s\n", loc_str(loc, sizeof loc, n->loc));
	}
}

/* One of a group's value lists: reads, or writes with their reasons. */
static void text_values(const Report *r, const char *label, const int *ids, int n, int wn, int wb,
			int with_reason)
{
	char b[32];

	if (n == 0) {
		fprintf(r->f, "  %-8s (none)\n", label);
		return;
	}
	for (int k = 0; k < n; k++) {
		int id = ids[k];
		fprintf(r->f, "  %-8s %-*s  %*s", k ? "" : label, wn, r->names[id], wb,
			human_bytes(b, sizeof b, fg_value_bytes(r->g, id)));
		if (with_reason)
			fprintf(r->f, "  %s", reason_name(r->plan->why[id]));
		fputc('\n', r->f);
	}
}

static void text_io(const Report *r, const FgGroup *gr)
{
	int wn = 0, wb = 0;
	char b[32];

	for (int pass = 0; pass < 2; pass++) {
		const int *ids = pass ? gr->writes : gr->reads;
		int n = pass ? gr->nwrites : gr->nreads;
		for (int k = 0; k < n; k++) {
			wn = max_int(wn, (int)strlen(r->names[ids[k]]));
			wb = max_int(wb, (int)strlen(human_bytes(b, sizeof b, fg_value_bytes(r->g, ids[k]))));
		}
	}
	text_values(r, "reads:", gr->reads, gr->nreads, wn, wb, 0);
	text_values(r, "writes:", gr->writes, gr->nwrites, wn, wb, 1);
	int64_t more = gr->cost.bytes - fg_bytes_add(gr->bytes_read, gr->bytes_written);
	if (more > 0)   /* fg_cuda_plan_costs: scratch written and read back; a scan's second read */
		fprintf(r->f, "  and:     %s more, scratch written and read back or a second read: %s in all\n",
			human_bytes(b, sizeof b, more), human_bytes((char[32]){0}, 32, gr->cost.bytes));
}

/* Whether group gr's kernels cannot fill the GPU: none of its launches
 * has a block for every multiprocessor, and its work (its estimate less
 * the launches) is 5 us or more, where idle multiprocessors cost time
 * (a small tensor's few blocks are no loss). */
static int underfills(const Report *r, const FgGroup *gr)
{
	return gr->max_grid > 0 && gr->max_grid < FG_SMS &&
	       gr->cost.est_us - gr->cost.launches * r->plan->opt.launch_us >= 5.0;
}

/* FLOPs as "137.4 GFLOP", three digits. */
static void human_flops(char *buf, size_t n, double f)
{
	static const char *const unit[] = {"", "k", "M", "G", "T", "P"};
	int u = 0;
	while (f >= 1000 && u < 5)
		f /= 1000, u++;
	snprintf(buf, n, u ? (f >= 100 ? "%.0f %sFLOP" : f >= 10 ? "%.1f %sFLOP" : "%.2f %sFLOP") : "%.0f %sFLOP",
		 f, unit[u]);
}

/* Group gr's floor: the larger of its ideal traffic (each tensor it reads
 * read once, each value it writes written once) over the bandwidth and its
 * compute time, no launch counted, in us. */
static double floor_us(const Report *r, const FgGroup *gr)
{
	const FgFuseOptions *o = &r->plan->opt;
	double mem = (double)fg_bytes_add(gr->bytes_read, gr->bytes_written) / (o->bw_gbs * 1e3);
	double cmp = gr->cost.flops_tc / (o->tc_tflops * 1e6) + gr->cost.flops_cc / (o->cc_tflops * 1e6);
	return mem > cmp ? mem : cmp;
}

/* Group gr's roofline: its ideal bytes against the planned ones (scratch
 * and re-reads), its FLOPs (the tensor cores' share) and their intensity
 * over the planned bytes, the bound, and the estimate against the floor.
 * Where the compute time is a tenth of the estimate or more, the compute
 * time of each kind of core beside the memory time. */
static void text_roofline(const Report *r, const FgGroup *gr)
{
	const FgFuseOptions *o = &r->plan->opt;
	const FgCost *c = &gr->cost;
	char ib[32], pb[32], fl[32], tf[32], cf[32];
	double flops = c->flops_tc + c->flops_cc;
	human_bytes(ib, sizeof ib, fg_bytes_add(gr->bytes_read, gr->bytes_written));
	human_bytes(pb, sizeof pb, c->bytes);
	human_flops(fl, sizeof fl, flops);
	human_flops(tf, sizeof tf, c->flops_tc);
	double in = c->bytes > 0 ? flops / (double)c->bytes : 0.0;
	fprintf(r->f, "  roofline: %s ideal, %s planned; %s%s%s%s, %.*f FLOP/B; %s-bound, est %.2f us against a floor "
		"of %.2f us\n", ib, pb, fl, c->flops_tc > 0 ? " (" : "", c->flops_tc > 0 ? tf : "",
		c->flops_tc > 0 ? " on the tensor cores)" : "", in >= 100 ? 0 : in >= 10 ? 1 : 2, in,
		c->compute_bound ? "compute" : "memory", c->est_us, floor_us(r, gr));
	double mem = (double)c->bytes / (o->bw_gbs * 1e3);
	double tc = c->flops_tc / (o->tc_tflops * 1e6), cc = c->flops_cc / (o->cc_tflops * 1e6);
	if (tc + cc < 0.1 * c->est_us)
		return;
	human_flops(cf, sizeof cf, c->flops_cc);
	fprintf(r->f, "  compute: %s on the tensor cores (%.2f us), %s on the CUDA cores (%.2f us), against %.2f us of "
		"memory\n", tf, tc, cf, cc, mem);
}

/* Measured against estimated, for one group or the whole plan. */
static void measured_vs(FILE *f, double us, double est)
{
	fprintf(f, "%.2f us, est %.2f us", us, est);
	if (us > 0 && est > 0)
		fprintf(f, ": the estimate %.0f%% %s", fabs(est / us - 1) * 100, est < us ? "low" : "high");
}

static void text_measured(const Report *r, int gi)
{
	const FgGroup *gr = &r->plan->groups[gi];
	fputs("  measured: ", r->f);
	measured_vs(r->f, r->plan->measured->group_us[gi], gr->cost.est_us);
	if (gr->cost.launches == 1)
		fputs(" (the median of its launch)\n", r->f);
	else
		fprintf(r->f, " (%s %d launches' medians added)\n", gr->cost.launches ? "its" : "no launch:",
			gr->cost.launches);
}

static void text_groups(const Report *r)
{
	const FgPlan *plan = r->plan;
	int wi = int_width(plan->ngroups > 0 ? plan->ngroups - 1 : 0), wk = 0;

	for (int gi = 0; gi < plan->ngroups; gi++)
		wk = max_int(wk, (int)strlen(kind_name(plan->groups[gi].kind)));
	for (int gi = 0; gi < plan->ngroups; gi++) {
		const FgGroup *gr = &plan->groups[gi];
		fprintf(r->f, "\ngroup %-*d  %-*s  %s  (%d launch%s, est %.2f us%s, est regs %d)\n", wi, gi,
			wk, kind_name(gr->kind), gr->name ? gr->name : "-", gr->cost.launches,
			gr->cost.launches == 1 ? "" : "es", gr->cost.est_us, gr->cost.compute_bound ? " compute-bound" : "",
			gr->est_regs);
		const char *note = fg_cuda_gemm_note(plan, gi);
		if (note)
			fprintf(r->f, "  on the GPU: %s\n", note);
		text_roofline(r, gr);
		if (plan->measured)
			text_measured(r, gi);
		if (underfills(r, gr))
			fprintf(r->f, "  warning: its largest launch, %lld block%s, fills %lld of the %d multiprocessors\n",
				(long long)gr->max_grid, gr->max_grid == 1 ? "" : "s", (long long)gr->max_grid, FG_SMS);
		text_kernel(r, gi);
		text_ops(r, gr);
		text_io(r, gr);
	}
}

/* What crossing edge k's boundary costs: its value written once and read
 * back by each group that reads it, in bytes (*bytes) and their time at
 * the bandwidth; fusing it away would save them (and a launch, where the
 * groups merge). */
static double edge_traffic(const Report *r, int k, int64_t *bytes, int *readers)
{
	const FgPlan *plan = r->plan;
	int p = plan->edges[k].producer, n = r->readers[p];
	int64_t b = fg_value_bytes(r->g, p);

	*bytes = b > FG_BYTES_MAX / (1 + n) ? FG_BYTES_MAX : b * (1 + n);
	*readers = n;
	return (double)*bytes / (plan->opt.bw_gbs * 1e3);
}

static void text_edges(const Report *r)
{
	const FgPlan *plan = r->plan;
	int wv = 0, wg = 0;
	char buf[64];

	fprintf(r->f, "\nboundaries (%d)\n", plan->nedges);
	if (plan->nedges == 0) {
		fputs("  none: no value crosses a group boundary\n", r->f);
		return;
	}
	for (int k = 0; k < plan->nedges; k++) {
		const FgEdge *e = &plan->edges[k];
		wv = max_int(wv, (int)(strlen(r->names[e->producer]) + strlen(r->names[e->consumer]) + 4));
		wg = max_int(wg, snprintf(buf, sizeof buf, "(group %d -> group %d)", e->from, e->to));
	}
	for (int k = 0; k < plan->nedges; k++) {
		const FgEdge *e = &plan->edges[k];
		int len = (int)(strlen(r->names[e->producer]) + strlen(r->names[e->consumer]) + 4);
		snprintf(buf, sizeof buf, "(group %d -> group %d)", e->from, e->to);
		fprintf(r->f, "  %s -> %s%*s  %-*s  %s", r->names[e->producer], r->names[e->consumer],
			wv - len, "", wg, buf, reason_name(e->why));
		if (e->detail && *e->detail) {
			fputs(": ", r->f);
			put_oneline(r->f, e->detail);
		}
		int64_t bytes;
		int readers;
		double us = edge_traffic(r, k, &bytes, &readers);
		fprintf(r->f, " [costs %s: written once, read by %d group%s, %.2f us]\n",
			human_bytes(buf, sizeof buf, bytes), readers, readers == 1 ? "" : "s", us);
	}
}

/* The values computed in more than one group (recomputed rather than
 * stored: each of those groups reads their inputs), with their groups. */
static void text_recomputed(const Report *r)
{
	const FgGraph *g = r->g;
	Members m = members_of(r->plan);
	char type[256], loc[32];
	int n = 0;

	for (int id = 0; id < g->nnodes; id++)
		n += g->nodes[id].op != FG_OP_CONST && m.first[id + 1] - m.first[id] > 1;
	if (n == 0)
		return;
	fprintf(r->f, "\nrecomputed (%d value%s computed in more than one group, not stored: each group reads "
		"what %s computed from)\n", n, n == 1 ? "" : "s", n == 1 ? "it is" : "they are");
	int w[4] = {0, 0, 0, 0};
	for (int pass = 0; pass < 2; pass++)
		for (int id = 0; id < g->nnodes; id++) {
			const FgNode *nd = &g->nodes[id];
			if (nd->op == FG_OP_CONST || m.first[id + 1] - m.first[id] < 2)
				continue;
			const char *col[4] = {r->names[id], fg_op_info[nd->op].name,
					      fg_type_str(type, sizeof type, nd->dt, &nd->shape),
					      loc_str(loc, sizeof loc, nd->loc)};
			if (pass == 0) {
				for (int c = 0; c < 4; c++)
					w[c] = max_int(w[c], (int)strlen(col[c]));
				continue;
			}
			fprintf(r->f, "  %-*s  %-*s  %-*s  %-*s  in groups ", w[0], col[0], w[1], col[1], w[2], col[2],
				w[3], col[3]);
			for (int k = m.first[id]; k < m.first[id + 1]; k++)
				fprintf(r->f, "%s%d", k == m.first[id] ? "" : k + 1 == m.first[id + 1] ? " and " : ", ",
					m.group[k]);
			fputc('\n', r->f);
		}
}

/* The name a merged value had, or its op where it had none. */
static const char *merged_name(const FgMerged *m)
{
	return m->name ? m->name : fg_op_info[m->op].name;
}

static const char *from(char *buf, size_t n, const char *composite)
{
	snprintf(buf, n, "(from %s)", composite);
	return buf;
}

/* What passes/cse.c computed once: each repeat, where it was written, and
 * the value that computes it. */
static void text_merged(const Report *r)
{
	const FgGraph *g = r->g;
	char loc[32], at[32], buf[64];
	int wn = 0, wl = 0, wc = 0;

	if (g->merged.n == 0)
		return;
	fprintf(r->f, "\ncomputed once (%d repeated value%s, merged before partitioning)\n", g->merged.n,
		g->merged.n == 1 ? "" : "s");
	for (int k = 0; k < g->merged.n; k++) {
		const FgMerged *m = &g->merged.v[k];
		wn = max_int(wn, (int)strlen(merged_name(m)));
		wl = max_int(wl, (int)strlen(loc_str(loc, sizeof loc, m->loc)));
		wc = max_int(wc, m->composite ? (int)strlen(from(buf, sizeof buf, m->composite)) : 0);
	}
	for (int k = 0; k < g->merged.n; k++) {
		const FgMerged *m = &g->merged.v[k];
		const FgNode *as = &g->nodes[m->as];
		fprintf(r->f, "  %-*s  %-*s  ", wn, merged_name(m), wl, loc_str(loc, sizeof loc, m->loc));
		if (wc)
			fprintf(r->f, "%-*s  ", wc, m->composite ? from(buf, sizeof buf, m->composite) : "");
		fprintf(r->f, "is %s, the %s at %s", r->names[m->as], fg_op_info[as->op].name,
			loc_str(at, sizeof at, as->loc));
		if (as->composite)
			fprintf(r->f, " (from %s)", as->composite);
		fputc('\n', r->f);
	}
}

static void ratio_str(char *buf, size_t n, double num, double den)
{
	if (den > 0 && isfinite(num / den))
		snprintf(buf, n, "%.2fx", num / den);
	else
		snprintf(buf, n, "-");
}

/* Fused and unfused side by side, with their ratio, columns as wide as
 * their widest cell. */
static void text_totals(const Report *r)
{
	static const char *const row[5] = {"totals", "bytes", "launches", "est time", "FLOP"};
	const FgCost *fu = &r->plan->fused, *un = &r->plan->unfused;
	char cell[5][3][32] = {{"fused", "unfused", "unfused/fused"}};
	const int rows = fu->flops_tc + fu->flops_cc > 0 ? 5 : 4;
	int w[3] = {0, 0, 0};

	human_bytes(cell[1][0], 32, fu->bytes);
	human_bytes(cell[1][1], 32, un->bytes);
	ratio_str(cell[1][2], 32, (double)un->bytes, (double)fu->bytes);
	snprintf(cell[2][0], 32, "%d", fu->launches);
	snprintf(cell[2][1], 32, "%d", un->launches);
	ratio_str(cell[2][2], 32, un->launches, fu->launches);
	snprintf(cell[3][0], 32, "%.2f us", fu->est_us);
	snprintf(cell[3][1], 32, "%.2f us", un->est_us);
	ratio_str(cell[3][2], 32, un->est_us, fu->est_us);
	human_flops(cell[4][0], 32, fu->flops_tc + fu->flops_cc);
	human_flops(cell[4][1], 32, un->flops_tc + un->flops_cc);
	ratio_str(cell[4][2], 32, un->flops_tc + un->flops_cc, fu->flops_tc + fu->flops_cc);
	for (int i = 0; i < rows; i++)
		for (int j = 0; j < 2; j++)
			w[j] = max_int(w[j], (int)strlen(cell[i][j]));
	fputc('\n', r->f);
	for (int i = 0; i < rows; i++)
		fprintf(r->f, "%s%-*s  %-*s  %-*s  %s\n", i ? "  " : "", i ? 8 : 10, row[i], w[0], cell[i][0],
			w[1], cell[i][1], cell[i][2]);
}

static void text_memory(const Report *r)
{
	const FgPlan *plan = r->plan;
	char a[32], b[32];
	int w;

	if (!plan->offset) {
		fputs("\nmemory: not planned\n", r->f);
		return;
	}
	human_bytes(a, sizeof a, plan->planned_bytes);
	human_bytes(b, sizeof b, plan->naive_bytes);
	w = max_int((int)strlen(a), (int)strlen(b));
	fputs("\nmemory (one arena; values share space when their lifetimes do not overlap)\n", r->f);
	fprintf(r->f, "  planned   %*s  (%lld bytes)\n", w, a, (long long)plan->planned_bytes);
	fprintf(r->f, "  naive     %*s  (%lld bytes: one buffer per value)\n", w, b,
		(long long)plan->naive_bytes);
	if (plan->naive_bytes > 0)
		fprintf(r->f, "  reuse saves %.1f%%\n",
			100.0 * (double)(plan->naive_bytes - plan->planned_bytes) / (double)plan->naive_bytes);
}

void fg_report_text(FILE *f, const FgPlan *plan)
{
	Report r = report_open(f, plan, 1);

	fprintf(f, "fusion report: graph %s\n", graph_name(r.g));
	fprintf(f, "cost model: %g GB/s, %g TFLOP/s on the tensor cores, %g on the CUDA cores, %g us per launch, "
		"%d registers per thread\n", plan->opt.bw_gbs, plan->opt.tc_tflops, plan->opt.cc_tflops,
		plan->opt.launch_us, plan->opt.reg_limit);
	fprintf(f, "%d group%s, %d boundar%s", plan->ngroups, plan->ngroups == 1 ? "" : "s",
		plan->nedges, plan->nedges == 1 ? "y" : "ies");
	if (r.owners < r.kernels)
		fprintf(f, "; %d groups with kernels, %d of them launching an earlier group's (the same code) on "
			"their own tensors", r.kernels, r.kernels - r.owners);
	fputc('\n', f);
	text_groups(&r);
	text_edges(&r);
	text_recomputed(&r);
	text_merged(&r);
	text_totals(&r);
	if (plan->measured) {
		const FgMeasured *m = plan->measured;
		double sum = 0;
		for (int gi = 0; gi < plan->ngroups; gi++)
			sum += m->group_us[gi];
		fprintf(f, "\nmeasured (%s: medians of %d runs; copy bandwidth %.0f GB/s)\n  the launches  ", m->file,
			m->runs, m->copy_gbs);
		measured_vs(f, sum, plan->fused.est_us);
		fprintf(f, "\n  eager run     %.2f us\n", m->eager_ms * 1e3);
		if (m->replay_ms >= 0)
			fprintf(f, "  graph replay  %.2f us\n", m->replay_ms * 1e3);
	}
	text_memory(&r);
}

/* ------------------------------------------------------------- JSON */

/* The length of the valid UTF-8 sequence at s, or 0. */
static int utf8_len(const unsigned char *s)
{
	int n = s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 && s[0] < 0xe0 ? 2 : 0;

	for (int k = 1; k < n; k++)
		if ((s[k] & 0xc0) != 0x80)
			return 0;
	if ((n == 3 && s[0] == 0xe0 && s[1] < 0xa0) || (n == 3 && s[0] == 0xed && s[1] >= 0xa0) ||
	    (n == 4 && s[0] == 0xf0 && s[1] < 0x90) || (n == 4 && s[0] == 0xf4 && s[1] >= 0x90))
		return 0;
	return n;
}

/* Writes the character at p as JSON wants it; returns the bytes it
 * took.  Bytes that are not UTF-8 become U+FFFD, so the output always
 * parses. */
static int json_char(FILE *f, const unsigned char *p)
{
	int n;

	switch (*p) {
	case '"':
		fputs("\\\"", f);
		return 1;
	case '\\':
		fputs("\\\\", f);
		return 1;
	case '\n':
		fputs("\\n", f);
		return 1;
	case '\r':
		fputs("\\r", f);
		return 1;
	case '\t':
		fputs("\\t", f);
		return 1;
	}
	if (*p < 0x20 || *p == 0x7f) {
		fprintf(f, "\\u%04x", *p);
		return 1;
	}
	if (*p < 0x80) {
		fputc(*p, f);
		return 1;
	}
	if ((n = utf8_len(p)) > 0) {
		fwrite(p, 1, (size_t)n, f);
		return n;
	}
	fputs("\\ufffd", f);
	return 1;
}

static void json_str(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");

	fputc('"', f);
	while (*p)
		p += json_char(f, p);
	fputc('"', f);
}

/* A real number with a fixed number of decimals; JSON has no infinity. */
static void json_real(FILE *f, double x)
{
	if (isfinite(x))
		fprintf(f, "%.3f", x);
	else
		fputs("null", f);
}

static void json_ops(const Report *r, const FgGroup *gr)
{
	char type[256];

	fputs("      \"ops\": [", r->f);
	for (int k = 0; k < gr->nnodes; k++) {
		const FgNode *n = &r->g->nodes[gr->nodes[k]];
		fprintf(r->f, "%s\n        {\"op\": ", k ? "," : "");
		json_str(r->f, fg_op_info[n->op].name);
		fputs(", \"value\": ", r->f);
		json_str(r->f, r->names[gr->nodes[k]]);
		fputs(", \"type\": ", r->f);
		json_str(r->f, fg_type_str(type, sizeof type, n->dt, &n->shape));
		fprintf(r->f, ", \"line\": %d, \"col\": %d, \"composite\": ", n->loc.line, n->loc.col);
		if (n->composite)
			json_str(r->f, n->composite);
		else
			fputs("null", r->f);
		fputc('}', r->f);
	}
	fputs(gr->nnodes ? "\n      ],\n" : "],\n", r->f);
}

static void json_values(const Report *r, const char *key, const int *ids, int n, int writes)
{
	fprintf(r->f, "      \"%s\": [", key);
	for (int k = 0; k < n; k++) {
		int id = ids[k];
		fprintf(r->f, "%s\n        {\"value\": ", k ? "," : "");
		json_str(r->f, r->names[id]);
		fprintf(r->f, ", \"bytes\": %lld", (long long)fg_value_bytes(r->g, id));
		if (writes) {
			fputs(", \"reason\": ", r->f);
			json_str(r->f, reason_name(r->plan->why[id]));
			if (r->plan->offset && r->plan->offset[id] >= 0)
				fprintf(r->f, ", \"offset\": %lld", (long long)r->plan->offset[id]);
			else
				fputs(", \"offset\": null", r->f);
		}
		fputc('}', r->f);
	}
	fputs(n ? "\n      ]" : "]", r->f);
}

static void json_group(const Report *r, int gi)
{
	const FgGroup *gr = &r->plan->groups[gi];

	fprintf(r->f, "    {\n      \"id\": %d,\n      \"kind\": ", gi);
	json_str(r->f, kind_name(gr->kind));
	fputs(",\n      \"name\": ", r->f);
	json_str(r->f, gr->name);
	fputs(",\n      \"root\": ", r->f);
	if (gr->root >= 0 && gr->root < r->g->nnodes)
		json_str(r->f, r->names[gr->root]);
	else
		fputs("null", r->f);
	fprintf(r->f, ",\n      \"launches\": %d,\n      \"est_us\": ", gr->cost.launches);
	json_real(r->f, gr->cost.est_us);
	fputs(",\n      \"flops_tc\": ", r->f);
	json_real(r->f, gr->cost.flops_tc);
	fputs(",\n      \"flops_cc\": ", r->f);
	json_real(r->f, gr->cost.flops_cc);
	fprintf(r->f, ",\n      \"bound\": \"%s\",\n      \"max_grid\": %lld,\n      \"underfills\": %s",
		gr->cost.compute_bound ? "compute" : "memory", (long long)gr->max_grid, underfills(r, gr) ? "true" : "false");
	fputs(",\n      \"floor_us\": ", r->f);
	json_real(r->f, floor_us(r, gr));
	if (r->plan->measured) {
		fputs(",\n      \"measured_us\": ", r->f);
		json_real(r->f, r->plan->measured->group_us[gi]);
	}
	fprintf(r->f, ",\n      \"est_regs\": %d,\n      \"bytes_read\": %lld,\n      \"bytes_written\": %lld,\n"
		"      \"bytes\": %lld,\n", gr->est_regs, (long long)gr->bytes_read, (long long)gr->bytes_written,
		(long long)gr->cost.bytes);
	if (r->owner[gi] >= 0)
		fprintf(r->f, "      \"kernel_of\": %d,\n", r->owner[gi]);
	else
		fputs("      \"kernel_of\": null,\n", r->f);
	const char *note = fg_cuda_gemm_note(r->plan, gi);
	if (note) {
		fputs("      \"on_gpu\": ", r->f);
		json_str(r->f, note);
		fputs(",\n", r->f);
	}
	json_ops(r, gr);
	json_values(r, "reads", gr->reads, gr->nreads, 0);
	fputs(",\n", r->f);
	json_values(r, "writes", gr->writes, gr->nwrites, 1);
	fputs("\n    }", r->f);
}

static void json_edges(const Report *r)
{
	const FgPlan *plan = r->plan;

	fputs("  \"edges\": [", r->f);
	for (int k = 0; k < plan->nedges; k++) {
		const FgEdge *e = &plan->edges[k];
		fprintf(r->f, "%s\n    {\"from\": %d, \"to\": %d, \"producer\": ", k ? "," : "", e->from, e->to);
		json_str(r->f, r->names[e->producer]);
		fputs(", \"consumer\": ", r->f);
		json_str(r->f, r->names[e->consumer]);
		fputs(", \"reason\": ", r->f);
		json_str(r->f, reason_name(e->why));
		fputs(", \"detail\": ", r->f);
		json_str(r->f, e->detail);
		int64_t bytes;
		int readers;
		double us = edge_traffic(r, k, &bytes, &readers);
		fprintf(r->f, ", \"bytes\": %lld, \"readers\": %d, \"us\": ", (long long)bytes, readers);
		json_real(r->f, us);
		fputc('}', r->f);
	}
	fputs(plan->nedges ? "\n  ],\n" : "],\n", r->f);
}

static void json_recomputed(const Report *r)
{
	const FgGraph *g = r->g;
	Members m = members_of(r->plan);
	int n = 0;

	fputs("  \"recomputed\": [", r->f);
	for (int id = 0; id < g->nnodes; id++) {
		if (g->nodes[id].op == FG_OP_CONST || m.first[id + 1] - m.first[id] < 2)
			continue;
		fprintf(r->f, "%s\n    {\"value\": ", n++ ? "," : "");
		json_str(r->f, r->names[id]);
		fputs(", \"groups\": [", r->f);
		for (int k = m.first[id]; k < m.first[id + 1]; k++)
			fprintf(r->f, "%s%d", k == m.first[id] ? "" : ", ", m.group[k]);
		fputs("]}", r->f);
	}
	fputs(n ? "\n  ],\n" : "],\n", r->f);
}

static void json_merged(const Report *r)
{
	const FgGraph *g = r->g;

	fputs("  \"merged\": [", r->f);
	for (int k = 0; k < g->merged.n; k++) {
		const FgMerged *m = &g->merged.v[k];
		fprintf(r->f, "%s\n    {\"name\": ", k ? "," : "");
		if (m->name)
			json_str(r->f, m->name);
		else
			fputs("null", r->f);
		fputs(", \"op\": ", r->f);
		json_str(r->f, fg_op_info[m->op].name);
		fprintf(r->f, ", \"line\": %d, \"col\": %d, \"as\": ", m->loc.line, m->loc.col);
		json_str(r->f, r->names[m->as]);
		fputc('}', r->f);
	}
	fputs(g->merged.n ? "\n  ],\n" : "],\n", r->f);
}

static void json_cost(FILE *f, const char *key, const FgCost *c, const char *end)
{
	fprintf(f, "    \"%s\": {\"bytes\": %lld, \"launches\": %d, \"est_us\": ", key, (long long)c->bytes,
		c->launches);
	json_real(f, c->est_us);
	fputs(", \"flops_tc\": ", f);
	json_real(f, c->flops_tc);
	fputs(", \"flops_cc\": ", f);
	json_real(f, c->flops_cc);
	fprintf(f, ", \"bound\": \"%s\"}%s\n", c->compute_bound ? "compute" : "memory", end);
}

void fg_report_json(FILE *f, const FgPlan *plan)
{
	Report r = report_open(f, plan, 1);

	fputs("{\n  \"graph\": ", f);
	json_str(f, graph_name(r.g));
	fputs(",\n  \"cost_model\": {\"bw_gbs\": ", f);
	json_real(f, plan->opt.bw_gbs);
	fputs(", \"launch_us\": ", f);
	json_real(f, plan->opt.launch_us);
	fputs(", \"tc_tflops\": ", f);
	json_real(f, plan->opt.tc_tflops);
	fputs(", \"cc_tflops\": ", f);
	json_real(f, plan->opt.cc_tflops);
	fprintf(f, ", \"reg_limit\": %d},\n  \"groups\": [", plan->opt.reg_limit);
	for (int gi = 0; gi < plan->ngroups; gi++) {
		fputs(gi ? ",\n" : "\n", f);
		json_group(&r, gi);
	}
	fputs(plan->ngroups ? "\n  ],\n" : "],\n", f);
	json_edges(&r);
	json_recomputed(&r);
	json_merged(&r);
	fputs("  \"totals\": {\n", f);
	json_cost(f, "fused", &plan->fused, ",");
	json_cost(f, "unfused", &plan->unfused, "");
	if (plan->measured) {
		const FgMeasured *m = plan->measured;
		fputs("  },\n  \"measured\": {\"file\": ", f);
		json_str(f, m->file);
		fprintf(f, ", \"runs\": %d, \"eager_ms\": ", m->runs);
		json_real(f, m->eager_ms);
		fputs(", \"replay_ms\": ", f);
		if (m->replay_ms >= 0)
			json_real(f, m->replay_ms);
		else
			fputs("null", f);
		fputs(", \"copy_gbs\": ", f);
		json_real(f, m->copy_gbs);
		fputc('\n', f);
	}
	fprintf(f, "  },\n  \"memory\": {\"planned\": %s, \"planned_bytes\": %lld, \"naive_bytes\": %lld}\n}\n",
		plan->offset ? "true" : "false", (long long)plan->planned_bytes, (long long)plan->naive_bytes);
}

/* -------------------------------------------------------------- DOT */

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
