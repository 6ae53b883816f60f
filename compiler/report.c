/*
 * report.c - explains a fusion plan to people (text) and to programs
 * (JSON; the Graphviz picture is report_dot.c's, --explain, --diff and
 * --measured report_plans.c's): the groups in launch order with their
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

#include "report.h"


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
Report report_open(FILE *f, const FgPlan *plan, int kernels)
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

const char *graph_name(const FgGraph *g)
{
	return g->name ? g->name : "graph";
}

const char *kind_name(FgGroupKind k)
{
	return (unsigned)k < FG_GROUP_COUNT ? fg_group_kind_name[k] : "?";
}

const char *reason_name(FgReason why)
{
	return (unsigned)why < FG_WHY_COUNT ? fg_reason_name[why] : "?";
}

/* "512 B", "4.0 KiB", "1.5 GiB". */
char *human_bytes(char *buf, size_t n, int64_t b)
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

char *loc_str(char *buf, size_t n, FgLoc loc)
{
	if (loc.line > 0)
		snprintf(buf, n, "%d:%d", loc.line, loc.col);
	else
		snprintf(buf, n, "-");
	return buf;
}

/* Free text on one line: control characters become spaces. */
void put_oneline(FILE *f, const char *s)
{
	for (; *s; s++)
		fputc((unsigned char)*s < 0x20 || *s == 0x7f ? ' ' : *s, f);
}


Members members_of(const FgPlan *plan)
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

int is_member(const Members *m, int gi, int id)
{
	for (int k = m->first[id]; k < m->first[id + 1]; k++)
		if (m->group[k] == gi)
			return 1;
	return 0;
}

/* ------------------------------------------------------------- text */

/* The op as the text report shows it: a constant with its value. */
const char *op_label(char *buf, size_t n, const FgNode *node)
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
 * has a block for 90% of the multiprocessors (an attention launch split
 * along the keys takes 128 blocks of 132 where 136 would take two waves),
 * and its work (its estimate less the launches) is 5 us or more, where
 * idle multiprocessors cost time (a small tensor's few blocks are no
 * loss). */
static int underfills(const Report *r, const FgGroup *gr)
{
	return gr->max_grid > 0 && gr->max_grid * 10 < FG_SMS * 9 &&
	       gr->cost.est_us - gr->cost.launches * r->plan->opt.launch_us >= 5.0;
}

/* The most blocks of launch l that a multiprocessor holds by its block
 * limit, its threads and the launch's dynamic shared memory (*by: which
 * one limits), and the waves of them the grid takes on FG_SMS.  Bounds,
 * not a count: the registers a thread takes, a kernel's static shared
 * memory and a cluster's placement within a GPC may hold fewer. */
static int64_t per_sm(const FgLaunchShape *l, const char **by, double *waves)
{
	int64_t n = FG_SM_THREADS / l->block;
	*by = "threads";
	if (n > FG_SM_BLOCKS) {
		n = FG_SM_BLOCKS;
		*by = "block limit";
	}
	if (l->smem > 0 && FG_SM_SMEM / (l->smem + 1024) < n) {
		n = FG_SM_SMEM / (l->smem + 1024);
		*by = "shared memory";
	}
	*waves = n > 0 ? (double)l->grid / (double)(n * FG_SMS) : 0.0;
	return n;
}

/* Group gr's largest launch, where fgc sized it: its shape and at most
 * how many of its blocks a multiprocessor holds (per_sm). */
static void text_launch(const Report *r, const FgGroup *gr)
{
	const FgLaunchShape *l = &gr->shape;
	const char *by;
	double waves;
	char sb[32];
	if (l->grid <= 0 || l->block <= 0)
		return;
	int64_t n = per_sm(l, &by, &waves);
	fprintf(r->f, "  launch: %lld block%s of %lld threads", (long long)l->grid, l->grid == 1 ? "" : "s",
		(long long)l->block);
	if (l->smem > 0)
		fprintf(r->f, ", %s of shared memory a block", human_bytes(sb, sizeof sb, l->smem));
	if (l->cluster > 1)
		fprintf(r->f, ", in clusters of %d", l->cluster);
	fprintf(r->f, "; at most %lld a multiprocessor (its %s): at least %.3g wave%s on %d\n", (long long)n, by, waves,
		waves == 1.0 ? "" : "s", FG_SMS);
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
		text_launch(r, gr);
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
const char *merged_name(const FgMerged *m)
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
int utf8_len(const unsigned char *s)
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
	if (gr->shape.grid > 0 && gr->shape.block > 0) {
		const char *by;
		double waves;
		int64_t n = per_sm(&gr->shape, &by, &waves);
		fprintf(r->f, ",\n      \"launch\": {\"grid\": %lld, \"block\": %lld, \"smem\": %lld, \"cluster\": %d, "
			"\"per_sm_most\": %lld, \"limit\": \"%s\", \"waves_least\": ", (long long)gr->shape.grid,
			(long long)gr->shape.block, (long long)gr->shape.smem, gr->shape.cluster, (long long)n, by);
		json_real(r->f, waves);
		fputc('}', r->f);
	}
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

