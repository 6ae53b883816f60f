/*
 * groups.c - the partition after the walk (passes/fuse.c): loop groups
 * whose estimated registers pass the limit are split where the estimate
 * peaks; then the groups are ordered so that each reads only what earlier
 * ones wrote, each value gets the group that writes it, sibling loop
 * groups that read the same tensor merge, groups left writing nothing are
 * dropped, and each group is finished with its reads, writes, bytes,
 * launches and kernel name, beside the edges between groups.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "fuse.h"

/* ------------------------------------------------- register pressure */

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/* For members m[0..n) (increasing ids) of group gi: last[i] is the
 * position of the last member that uses m[i] (i itself when none does). */
static int *last_uses(const Fuser *f, int gi, const int *m, int n)
{
	int *last = fg_arena_array(f->a, (size_t)n + 1, sizeof(int));

	for (int i = 0; i < n; i++) {
		last[i] = i;
		FOR_CONSUMERS(f, m[i], c) {
			int *pos = in_group(f, c, gi) ? bsearch(&c, m, (size_t)n, sizeof(int), cmp_int) : NULL;
			if (pos && pos - m > last[i])
				last[i] = (int)(pos - m);
		}
	}
	return last;
}

/* The tensors members read from memory (counted up to the register
 * model's FG_REGS_READS_MAX). */
static int group_reads_count(const Fuser *f, int gi, const int *m, int n)
{
	int reads = 0;

	for (int i = 0; i < n && reads < FG_REGS_READS_MAX; i++) {
		const FgNode *nd = node(f, m[i]);
		for (int k = 0; k < nd->nin; k++)
			reads += node(f, nd->in[k])->op != FG_OP_CONST && !in_group(f, nd->in[k], gi);
	}
	return reads;
}

/* Estimated registers per thread of group gi's members m[0..n): values
 * computed and still needed later are live; the peak count decides. */
static int estimate_regs(const Fuser *f, int gi, const int *m, int n)
{
	int *last = last_uses(f, gi, m, n);
	int *deaths = fg_arena_array(f->a, (size_t)n + 1, sizeof(int));
	int live = 0, peak = 0;

	for (int i = 0; i < n; i++) {
		deaths[last[i]]++;
		live++;
		if (live > peak)
			peak = live;
		live -= deaths[i];
	}
	return fg_kind_regs(group_reads_count(f, gi, m, n), peak);
}

/* A new, empty loop group rooted at root; members are added by the caller. */
static int piece_group(Fuser *f, int root)
{
	BGroup b;

	memset(&b, 0, sizeof b);
	b.kind = FG_GROUP_LOOP;
	b.root = root;
	b.space = node(f, root)->shape;
	fg_vec_push(f->a, &f->groups, b);
	return f->groups.n - 1;
}

/* Moves members m[from..to) of group gi into a new group. */
static void move_piece(Fuser *f, int gi, const int *m, int from, int to)
{
	int pg = piece_group(f, m[to - 1]);

	for (int i = to - 1; i >= from; i--) {
		for (int k = 0; k < f->memb[m[i]].n; k++)
			if (f->memb[m[i]].v[k] == gi)
				f->memb[m[i]].v[k] = pg;
		fg_vec_push(f->a, &f->groups.v[pg].nodes, m[i]);
	}
}

/* Live counts per member position, with range add and range max: a
 * segment tree with lazy adds (max of a node includes its own add). */
typedef struct Seg {
	int n;
	int *mx, *add;
} Seg;

static void seg_add(Seg *t, int node, int lo, int hi, int from, int to, int v)
{
	if (to < lo || hi < from)
		return;
	if (from <= lo && hi <= to) {
		t->mx[node] += v;
		t->add[node] += v;
		return;
	}
	int mid = (lo + hi) / 2;
	seg_add(t, 2 * node, lo, mid, from, to, v);
	seg_add(t, 2 * node + 1, mid + 1, hi, from, to, v);
	int l = t->mx[2 * node], r = t->mx[2 * node + 1];
	t->mx[node] = (l > r ? l : r) + t->add[node];
}

static int seg_max(const Seg *t, int node, int lo, int hi, int from, int to)
{
	if (to < lo || hi < from)
		return INT_MIN / 2;
	if (from <= lo && hi <= to)
		return t->mx[node];
	int mid = (lo + hi) / 2;
	int l = seg_max(t, 2 * node, lo, mid, from, to), r = seg_max(t, 2 * node + 1, mid + 1, hi, from, to);
	return (l > r ? l : r) + t->add[node];
}

/* Extends the live ranges of m[e]'s operands defined in the piece
 * [from, e) up to e; ext[d] is how far the value at position d is
 * counted live already. */
static void extend_operands(Fuser *f, int gi, const int *m, int n, int from, int e, int *ext, Seg *t)
{
	const FgNode *nd = node(f, m[e]);

	for (int k = 0; k < nd->nin; k++) {
		int o = nd->in[k];
		int *pos = in_group(f, o, gi) ? bsearch(&o, m, (size_t)n, sizeof(int), cmp_int) : NULL;
		int d = pos ? (int)(pos - m) : -1;
		if (d < from || ext[d] >= e)
			continue;
		seg_add(t, 1, 0, n - 1, ext[d], e - 1, 1);
		ext[d] = e;
	}
}

/* Splits loop group gi where its live values would pass the register
 * limit.  Each piece grows while its peak live count fits: a value stays
 * in a register from its definition to its last use inside the piece;
 * uses in later pieces read it back from memory (register pressure). */
void fuse_split_for_registers(Fuser *f, int gi)
{
	BGroup *b = &f->groups.v[gi];
	int n = b->nodes.n;
	int *m = fg_arena_array(f->a, (size_t)n + 1, sizeof(int));

	memcpy(m, b->nodes.v, (size_t)n * sizeof(int));
	qsort(m, (size_t)n, sizeof(int), cmp_int);
	int regs = estimate_regs(f, gi, m, n);
	if (fg_kind_regs_fit(&f->opt, regs))
		return;
	int reads = group_reads_count(f, gi, m, n);
	int max_live = (f->opt.reg_limit - fg_kind_regs(reads, 0)) / FG_REGS_ELEMS - 1;
	if (max_live < 1)
		max_live = 1;
	Seg t = {n, fg_arena_array(f->a, 4 * (size_t)n + 4, sizeof(int)), fg_arena_array(f->a, 4 * (size_t)n + 4, sizeof(int))};
	int *ext = fg_arena_array(f->a, (size_t)n + 1, sizeof(int));
	int *save = fg_arena_array(f->a, (size_t)n + 1, sizeof(int));
	int from = 0;
	for (int i = 0; i < n; i++)
		ext[i] = i;
	for (int e = 0; e < n; e++) {
		/* Try to add e; remember ext so that a refusal can undo it. */
		const FgNode *nd = node(f, m[e]);
		for (int k = 0; k < nd->nin; k++) {
			int *pos = bsearch(&nd->in[k], m, (size_t)n, sizeof(int), cmp_int);
			if (pos)
				save[pos - m] = ext[pos - m];
		}
		extend_operands(f, gi, m, n, from, e, ext, &t);
		if (e == from || seg_max(&t, 1, 0, n - 1, from, e) <= max_live)
			continue;
		for (int k = 0; k < nd->nin; k++) {
			int *pos = bsearch(&nd->in[k], m, (size_t)n, sizeof(int), cmp_int);
			int d = pos ? (int)(pos - m) : -1;
			if (d >= from && ext[d] == e && save[d] < e) {
				seg_add(&t, 1, 0, n - 1, save[d], e - 1, -1);
				ext[d] = save[d];
			}
		}
		/* Cut before e: what [from, e) defines and later members use
		 * is stored. */
		int est = fg_kind_regs(reads, seg_max(&t, 1, 0, n - 1, from, e - 1) + 2);
		for (int j = from; j < e; j++)
			FOR_CONSUMERS(f, m[j], c) {
				int *pos = in_group(f, c, gi) ? bsearch(&c, m, (size_t)n, sizeof(int), cmp_int) : NULL;
				if (pos && pos - m >= e && f->block[m[j]] == FG_WHY_NONE) {
					f->block[m[j]] = FG_WHY_REGISTERS;
					f->detail[m[j]] = fg_arena_printf(f->a,
						"keeping it in registers past this point needs more than %d registers "
						"per thread (the limit; this piece needs about %d)", f->opt.reg_limit, est);
				}
			}
		move_piece(f, gi, m, from, e);
		from = e;
	}
	move_piece(f, gi, m, from, n);
	f->groups.v[gi].dead = 1;
}

/* --------------------------------------------------------- finishing */

/* The members of every live group in increasing id order, with the
 * constants they use; groups in an order where each reads only what
 * earlier ones wrote. */
static int cmp_root(const void *a, const void *b);

/* g3_rowreduce_softmax: the group's number, kind, and its last op (or
 * the composite that op came from). */
static const char *kernel_name(Fuser *f, int gi, const FgGroup *gr)
{
	const char *what = "";

	for (int k = gr->nnodes - 1; k >= 0; k--) {
		const FgNode *n = node(f, gr->nodes[k]);
		if (n->op != FG_OP_CONST) {
			what = n->composite ? n->composite : fg_op_info[n->op].name;
			break;
		}
	}
	return fg_arena_printf(f->a, "g%d_%s_%s", gi, fg_group_kind_name[gr->kind], what);
}

typedef struct Order {
	int gi;
	int key;                /* highest member id */
} Order;

static int cmp_root(const void *a, const void *b)
{
	const Order *x = a, *y = b;

	if (x->key != y->key)
		return (x->key > y->key) - (x->key < y->key);
	return (x->gi > y->gi) - (x->gi < y->gi);
}

/* Whether id is written: an output, saved, or refused by its consumers. */
static FgReason written_why(const Fuser *f, int id)
{
	const FgNode *n = node(f, id);

	if (n->flags & FG_NF_OUTPUT)
		return FG_WHY_OUTPUT;
	if (n->flags & FG_NF_SAVED)
		return FG_WHY_SAVED;
	if (n->flags & FG_NF_MATERIALIZE)
		return FG_WHY_USER;
	return f->block[id];
}

static void finish_group(Fuser *f, FgGroup *out, const BGroup *b, int gi)
{
	const FgGraph *g = f->g;
	FgPlan *plan = f->plan;
	FG_VEC(int) nodes = {0};
	FG_VEC(int) reads = {0};
	FG_VEC(int) writes = {0};

	for (int k = b->nodes.n - 1; k >= 0; k--)
		fg_vec_push(f->a, &nodes, b->nodes.v[k]);
	qsort(nodes.v, (size_t)nodes.n, sizeof(int), cmp_int);
	int nmembers = nodes.n;
	int mark = ++f->stamp_now;
	for (int k = 0; k < nmembers; k++) {
		const FgNode *n = &g->nodes[nodes.v[k]];
		for (int j = 0; j < n->nin; j++) {
			int o = n->in[j];
			if (f->stamp[o] == mark || (g->nodes[o].op != FG_OP_CONST && in_group(f, o, gi)))
				continue;
			f->stamp[o] = mark;
			if (g->nodes[o].op == FG_OP_CONST)
				fg_vec_push(f->a, &nodes, o);
			else
				fg_vec_push(f->a, &reads, o);
		}
		if (plan->home[nodes.v[k]] == gi)
			fg_vec_push(f->a, &writes, nodes.v[k]);
	}
	qsort(nodes.v, (size_t)nodes.n, sizeof(int), cmp_int);
	memset(out, 0, sizeof *out);
	out->kind = b->kind;
	out->root = b->root;
	out->red_axes = b->red_axes;
	out->nodes = nodes.v;
	out->nnodes = nodes.n;
	out->reads = reads.v;
	out->nreads = reads.n;
	out->writes = writes.v;
	out->nwrites = writes.n;
	for (int k = 0; k < reads.n; k++)
		out->bytes_read = fg_bytes_add(out->bytes_read, fg_value_bytes(g, reads.v[k]));
	for (int k = 0; k < writes.n; k++)
		out->bytes_written = fg_bytes_add(out->bytes_written, fg_value_bytes(g, writes.v[k]));
	out->cost.bytes = fg_bytes_add(out->bytes_read, out->bytes_written);
	out->cost.launches = 1;
	if (b->kind == FG_GROUP_SCAN) {
		/* in parts: a launch for the parts' totals, reading it all */
		FgScanShape sc;
		fg_kind_scan_shape(&g->nodes[b->root].shape, g->nodes[b->root].a.scan.axis, &sc);
		if (sc.parts > 1) {
			out->cost.launches = 2;
			out->cost.bytes = fg_bytes_add(out->cost.bytes, out->bytes_read);
		}
	}
	int *sorted = fg_arena_array(f->a, (size_t)nmembers + 1, sizeof(int));
	int ns = 0;
	for (int k = 0; k < nodes.n; k++)
		if (in_group(f, nodes.v[k], gi)) {
			sorted[ns++] = nodes.v[k];
			fg_kind_flops(g, nodes.v[k], &f->opt, &out->cost.flops_tc, &out->cost.flops_cc);
		}
	if (b->kind == FG_GROUP_ATTENTION) {
		/* p written: the kernel multiplies the scores twice (a first pass
		 * for the rows' max and sum) */
		FgAttn a;
		const char *why;
		if (fg_kind_attention(g, b->root, &a, &why, f->a) == 1 && a.p_written)
			fg_kind_flops(g, a.mm1, &f->opt, &out->cost.flops_tc, &out->cost.flops_cc);
	}
	fg_cost_estimate(&f->opt, &out->cost);
	out->est_regs = estimate_regs(f, gi, sorted, ns);
}

/* The shape a group iterates over: its root's for a loop, its first
 * reduction's input for a reduction group (row or other axes). */
static const FgShape *sibling_space(Fuser *f, const FgGroup *gr)
{
	if (gr->kind == FG_GROUP_LOOP)
		return &node(f, gr->root)->shape;
	for (int k = 0; k < gr->nnodes; k++)
		if (cls(f, gr->nodes[k]) == FG_CLASS_REDUCE)
			return &node(f, node(f, gr->nodes[k])->in[0])->shape;
	return NULL;
}

/* Whether a row kernel keeps its rows in registers (FG_ROW_REGS a thread,
 * 1024 threads): only such siblings merge, a longer row's paths (shared
 * memory, a cluster, streaming with online pairs) being tuned to one
 * reduction chain. */
static int row_held(Fuser *f, const FgGroup *gr)
{
	const FgShape *s = sibling_space(f, gr);
	int64_t len = 1;
	for (int i = 0; i < s->rank; i++)
		if (gr->red_axes >> i & 1)
			len *= s->d[i];
	return len <= (int64_t)FG_ROW_REGS * 1024;
}

/* Reductions one merged reduction kernel holds, at most: each takes a
 * shared array of 2 KiB (compiler/cuda/reduce.c), within the 48 KiB a
 * kernel declares statically. */
#define SIBLING_REDS_MAX 8

/* Whether every reduction of groups a and b has the result shape of a's
 * first (the kernels index every result as their first reduction's:
 * keepdims one way for all), and they are SIBLING_REDS_MAX at most. */
static int same_results(Fuser *f, const FgGroup *a, const FgGroup *b)
{
	const FgShape *r = NULL;
	int n = 0;
	for (int g = 0; g < 2; g++) {
		const FgGroup *gr = g ? b : a;
		for (int k = 0; k < gr->nnodes; k++) {
			if (cls(f, gr->nodes[k]) != FG_CLASS_REDUCE)
				continue;
			n++;
			if (!r)
				r = &node(f, gr->nodes[k])->shape;
			else if (!fg_shape_eq(r, &node(f, gr->nodes[k])->shape))
				return 0;
		}
	}
	return n <= SIBLING_REDS_MAX;
}

/* Sibling fusion: group j over the same space as an earlier group i of
 * its kind that reads a tensor i reads too is merged into i, which then
 * reads it once: loops, and reduction groups (row kernels or other axes)
 * over the same axes of the same space, whose kernels then reduce each
 * element for both (dgamma's and dbeta's column sums of one dy), when
 * their results have one shape and the tensor they share is as large as
 * that space (row kernels: rows held in registers).  Legal when everything j reads is ready
 * by i's turn (an input, or written by a group before i) and the two fit
 * in the register limit together; nodes both recompute are computed
 * once. */
static int siblings(Fuser *f, int i, int j)
{
	const FgPlan *plan = f->plan;
	const FgGroup *a = &plan->groups[i], *b = &plan->groups[j];
	int shared = 0;

	if (a->kind != b->kind ||
	    (a->kind != FG_GROUP_LOOP && a->kind != FG_GROUP_REDUCE && a->kind != FG_GROUP_ROWREDUCE) ||
	    (a->kind != FG_GROUP_LOOP && a->red_axes != b->red_axes) || !sibling_space(f, a) ||
	    !sibling_space(f, b) || !fg_shape_eq(sibling_space(f, a), sibling_space(f, b)) ||
	    (a->kind != FG_GROUP_LOOP && !same_results(f, a, b)) ||
	    (a->kind == FG_GROUP_ROWREDUCE && !row_held(f, a)) ||
	    !fg_kind_regs_fit(&f->opt, fg_kind_regs_merged(a->est_regs, b->est_regs)))
		return 0;
	/* reductions share a tensor of their space's size (the reduced
	 * one), not a mere parameter (two layernorms' gamma) */
	int64_t least = a->kind == FG_GROUP_LOOP ? 0 : fg_shape_numel(sibling_space(f, a));
	int mark = ++f->stamp_now;
	for (int k = 0; k < a->nreads; k++)
		f->stamp[a->reads[k]] = mark;
	for (int k = 0; k < b->nreads; k++) {
		int r = b->reads[k];
		if (!is_source(f, r) && plan->home[r] >= i)
			return 0;
		shared |= f->stamp[r] == mark && fg_shape_numel(&node(f, r)->shape) >= least;
	}
	return shared;
}

/* Sorted union of two sorted id lists. */
static int *union_ids(Fuser *f, const int *x, int nx, const int *y, int ny, int *n)
{
	int *u = fg_arena_array(f->a, (size_t)(nx + ny) + 1, sizeof(int));
	int i = 0, j = 0, k = 0;

	while (i < nx || j < ny) {
		int v = j >= ny || (i < nx && x[i] <= y[j]) ? x[i] : y[j];
		i += i < nx && x[i] == v;
		j += j < ny && y[j] == v;
		u[k++] = v;
	}
	*n = k;
	return u;
}

static void merge_into(Fuser *f, int i, int j)
{
	FgPlan *plan = f->plan;
	FgGroup *a = &plan->groups[i], *b = &plan->groups[j];
	int n;

	a->nodes = union_ids(f, a->nodes, a->nnodes, b->nodes, b->nnodes, &n);
	a->nnodes = n;
	int *reads = fg_arena_array(f->a, (size_t)(a->nreads + b->nreads) + 1, sizeof(int));
	int mark = ++f->stamp_now, nr = 0;
	for (int k = 0; k < a->nreads + b->nreads; k++) {
		int r = k < a->nreads ? a->reads[k] : b->reads[k - a->nreads];
		if (f->stamp[r] != mark)
			reads[nr++] = r;
		f->stamp[r] = mark;
	}
	int *writes = fg_arena_array(f->a, (size_t)(a->nwrites + b->nwrites) + 1, sizeof(int));
	memcpy(writes, a->writes, (size_t)a->nwrites * sizeof(int));
	memcpy(writes + a->nwrites, b->writes, (size_t)b->nwrites * sizeof(int));
	for (int k = 0; k < b->nwrites; k++)
		plan->home[b->writes[k]] = i;
	a->reads = reads;
	a->nreads = nr;
	a->writes = writes;
	a->nwrites += b->nwrites;
	a->root = a->root > b->root ? a->root : b->root;
	a->est_regs = fg_kind_regs_merged(a->est_regs, b->est_regs);
	a->bytes_read = a->bytes_written = 0;
	for (int k = 0; k < a->nreads; k++)
		a->bytes_read = fg_bytes_add(a->bytes_read, fg_value_bytes(f->g, a->reads[k]));
	for (int k = 0; k < a->nwrites; k++)
		a->bytes_written = fg_bytes_add(a->bytes_written, fg_value_bytes(f->g, a->writes[k]));
	a->cost.bytes = fg_bytes_add(a->bytes_read, a->bytes_written);
	a->cost.flops_tc += b->cost.flops_tc;   /* nodes both recompute: counted twice (rare, small) */
	a->cost.flops_cc += b->cost.flops_cc;
	fg_cost_estimate(&f->opt, &a->cost);
	for (int k = 0; k < b->nnodes; k++) {
		int *mv = f->memb[b->nodes[k]].v, w = 0;
		for (int r = 0; r < f->memb[b->nodes[k]].n; r++) {     /* j becomes i, once */
			int gid = mv[r] == j ? i : mv[r];
			int dup = 0;
			for (int q = 0; q < w; q++)
				dup |= mv[q] == gid;
			if (!dup)
				mv[w++] = gid;
		}
		f->memb[b->nodes[k]].n = w;
	}
	b->nnodes = 0;          /* dead; compacted by merge_siblings */
}

static void merge_siblings(Fuser *f)
{
	FgPlan *plan = f->plan;
	const FgGraph *g = f->g;
	/* per kind that merges (loop, reduce, rowreduce) and value: the last
	 * group of that kind reading it */
	static const FgGroupKind kinds[3] = {FG_GROUP_LOOP, FG_GROUP_REDUCE, FG_GROUP_ROWREDUCE};
	int *last_reader[3];
	int *newid = fg_arena_array(f->a, (size_t)plan->ngroups + 1, sizeof(int));
	int merged = 0;

	for (int c = 0; c < 3; c++) {
		last_reader[c] = fg_arena_array(f->a, (size_t)g->nnodes + 1, sizeof(int));
		for (int v = 0; v < g->nnodes; v++)
			last_reader[c][v] = -1;
	}
	for (int j = 0; j < plan->ngroups; j++) {
		FgGroup *b = &plan->groups[j];
		int c = 0, into = -1;
		while (c < 3 && kinds[c] != b->kind)
			c++;
		if (c == 3)
			continue;
		for (int k = 0; k < b->nreads && into < 0; k++) {
			int i = last_reader[c][b->reads[k]];
			if (i >= 0 && siblings(f, i, j))
				into = i;
		}
		if (into >= 0) {
			merge_into(f, into, j);
			merged++;
		}
		int at = into >= 0 ? into : j;
		for (int k = 0; k < plan->groups[at].nreads; k++)
			last_reader[c][plan->groups[at].reads[k]] = at;
	}
	if (!merged)
		return;
	int n = 0;
	for (int j = 0; j < plan->ngroups; j++) {
		newid[j] = plan->groups[j].nnodes ? n : -1;
		if (plan->groups[j].nnodes)
			plan->groups[n++] = plan->groups[j];
	}
	plan->ngroups = n;
	for (int id = 0; id < g->nnodes; id++) {
		if (plan->home[id] >= 0)
			plan->home[id] = newid[plan->home[id]];
		for (int k = 0; k < f->memb[id].n; k++)
			f->memb[id].v[k] = newid[f->memb[id].v[k]];
	}
}

/* The first group (by position in order, as memberships are numbered)
 * that reads id without computing it; INT_MAX when none does. */
static int first_reader(const Fuser *f, int id)
{
	int first = INT_MAX;

	FOR_CONSUMERS(f, id, c)
		for (int k = 0; k < f->memb[c].n; k++)
			if (f->memb[c].v[k] < first && !in_group(f, id, f->memb[c].v[k]))
				first = f->memb[c].v[k];
	return first;
}

/* Group order[i], when it is a reduction group, writes what it holds at
 * the rows of its first reduction or over its input (fg_kind_write_place).  A
 * value homed there that fits neither (one that the register splitter
 * cut from a loop group which also computes it) moves to a loop or gemm
 * group that holds it and runs before its first reader. */
static void rehome(Fuser *f, const Order *order, int i)
{
	const BGroup *b = &f->groups.v[order[i].gi];

	if (b->kind != FG_GROUP_ROWREDUCE && b->kind != FG_GROUP_REDUCE)
		return;
	int first = first_reduction(f, b);
	for (int k = b->nodes.n - 1; k >= 0; k--) {        /* increasing ids */
		int v = b->nodes.v[k];
		const FgNode *n = node(f, v);
		f->seen[v] = cls(f, v) == FG_CLASS_REDUCE ? SEEN_DEP : 0;
		for (int j = 0; j < n->nin; j++)
			if (in_group(f, n->in[j], i))
				f->seen[v] |= f->seen[n->in[j]] & SEEN_DEP;
	}
	for (int k = 0; k < b->nodes.n; k++) {
		int v = b->nodes.v[k], reader, best = -1;
		if (f->plan->home[v] != i || fg_kind_write_place(f->g, first, v, f->seen[v] & SEEN_DEP))
			continue;
		reader = first_reader(f, v);
		for (int j = 0; j < f->memb[v].n; j++) {
			int h = f->memb[v].v[j];
			FgGroupKind kind = f->groups.v[order[h].gi].kind;
			if (h < reader && (kind == FG_GROUP_LOOP || kind == FG_GROUP_GEMM) && (best < 0 || h < best))
				best = h;
		}
		if (best >= 0)
			f->plan->home[v] = best;
	}
}

/* Drops the groups (order[0..n), memberships and homes numbered by
 * position in order) that write nothing: when the register splitter cuts
 * two groups that recompute the same cone at the same place, the later of
 * the two identical pieces is work nothing reads.  Returns how many
 * groups are left. */
static int drop_idle_groups(Fuser *f, Order *order, int n)
{
	FgPlan *plan = f->plan;
	int *nwrites = fg_arena_array(f->a, (size_t)n + 1, sizeof(int));
	int *renum = fg_arena_array(f->a, (size_t)n + 1, sizeof(int));
	int left = 0;

	for (int id = 0; id < f->g->nnodes; id++)
		if (plan->home[id] >= 0)
			nwrites[plan->home[id]]++;
	for (int i = 0; i < n; i++) {
		renum[i] = nwrites[i] ? left : -1;
		if (nwrites[i])
			order[left++] = order[i];
	}
	if (left == n)
		return n;
	for (int id = 0; id < f->g->nnodes; id++) {
		int w = 0;
		for (int k = 0; k < f->memb[id].n; k++)
			if (renum[f->memb[id].v[k]] >= 0)
				f->memb[id].v[w++] = renum[f->memb[id].v[k]];
		f->memb[id].n = w;
		if (plan->home[id] >= 0)
			plan->home[id] = renum[plan->home[id]];
	}
	return left;
}

/* Orders the groups, picks which group writes each value, and fills the
 * plan's groups, edges and totals. */
void fuse_finish(Fuser *f)
{
	FgPlan *plan = f->plan;
	const FgGraph *g = f->g;
	Order *order = fg_arena_array(f->a, (size_t)f->groups.n + 1, sizeof(Order));
	int *newid = fg_arena_array(f->a, (size_t)f->groups.n + 1, sizeof(int));
	int n = 0;

	for (int gi = 0; gi < f->groups.n; gi++) {
		BGroup *b = &f->groups.v[gi];
		if (b->dead || !b->nodes.n)
			continue;
		int key = 0;
		for (int k = 0; k < b->nodes.n; k++)
			if (b->nodes.v[k] > key)
				key = b->nodes.v[k];
		order[n].gi = gi;
		order[n++].key = key;
	}
	/* A group reads only values written by groups whose members all come
	 * earlier in topological order, so ordering by highest member works. */
	qsort(order, (size_t)n, sizeof(Order), cmp_root);
	for (int i = 0; i < f->groups.n; i++)
		newid[i] = -1;
	for (int i = 0; i < n; i++)
		newid[order[i].gi] = i;
	/* Renumber memberships, then decide the writer of each value: the
	 * earliest group that holds it, unless that is a reduction group that
	 * cannot (rehome). */
	for (int id = 0; id < g->nnodes; id++)
		for (int k = 0; k < f->memb[id].n; k++) {
			f->memb[id].v[k] = newid[f->memb[id].v[k]];
			FG_ASSERT(f->memb[id].v[k] >= 0);
		}
	for (int id = 0; id < g->nnodes; id++) {
		int best = -1;
		for (int k = 0; k < f->memb[id].n; k++)
			if (best < 0 || f->memb[id].v[k] < best)
				best = f->memb[id].v[k];
		plan->why[id] = is_source(f, id) || !f->live[id] ? FG_WHY_NONE : written_why(f, id);
		plan->home[id] = plan->why[id] != FG_WHY_NONE ? best : -1;
	}
	for (int i = 0; i < n; i++)
		rehome(f, order, i);
	n = drop_idle_groups(f, order, n);
	/* Groups renumbered: build them in the new order. */
	BGroup *old = fg_arena_array(f->a, (size_t)n + 1, sizeof(BGroup));
	for (int i = 0; i < n; i++)
		old[i] = f->groups.v[order[i].gi];
	plan->groups = fg_arena_array(f->a, (size_t)n + 1, sizeof(FgGroup));
	plan->ngroups = n;
	for (int i = 0; i < n; i++)
		finish_group(f, &plan->groups[i], &old[i], i);
	if (!f->opt.no_fuse)
		merge_siblings(f);
	for (int i = 0; i < plan->ngroups; i++)
		plan->groups[i].name = kernel_name(f, i, &plan->groups[i]);
	fg_plan_total(plan);
	/* Edges: every operand a group reads that another group wrote. */
	FG_VEC(FgEdge) edges = {0};
	for (int gi = 0; gi < plan->ngroups; gi++) {
		const FgGroup *gr = &plan->groups[gi];
		for (int k = 0; k < gr->nnodes; k++) {
			const FgNode *c = &g->nodes[gr->nodes[k]];
			if (c->op == FG_OP_CONST || !in_group(f, gr->nodes[k], gi))
				continue;
			for (int j = 0; j < c->nin; j++) {
				int p = c->in[j];
				if (is_source(f, p) || in_group(f, p, gi))
					continue;
				FgEdge e = {p, gr->nodes[k], plan->home[p], gi, f->block[p], f->detail[p]};
				if (e.why == FG_WHY_NONE)
					e.why = written_why(f, p);
				if (!e.detail)
					e.detail = "";
				fg_vec_push(f->a, &edges, e);
			}
		}
	}
	plan->edges = edges.v;
	plan->nedges = edges.n;
}

void fg_plan_total(FgPlan *plan)
{
	FgCost *t = &plan->fused;
	double bound = 0;

	memset(t, 0, sizeof *t);
	for (int i = 0; i < plan->ngroups; i++) {
		const FgCost *c = &plan->groups[i].cost;
		t->bytes = fg_bytes_add(t->bytes, c->bytes);
		t->launches += c->launches;
		t->flops_tc += c->flops_tc;
		t->flops_cc += c->flops_cc;
		t->est_us += c->est_us;
		bound += c->compute_bound ? c->est_us : 0;
	}
	t->compute_bound = bound > t->est_us / 2;
}

/* The cost of one kernel per op, every intermediate stored: the sum of
 * each op's estimate, as a group of its own. */
FgCost fuse_unfused_cost(const Fuser *f)
{
	const FgGraph *g = f->g;
	FgCost c;
	double bound = 0;

	memset(&c, 0, sizeof c);
	for (int i = 0; i < g->nnodes; i++) {
		const FgNode *n = &g->nodes[i];
		FgCost op;
		if (is_source(f, i) || !f->live[i])
			continue;
		memset(&op, 0, sizeof op);
		op.bytes = fg_value_bytes(g, i);
		for (int k = 0; k < n->nin; k++) {
			int dup = 0;
			for (int j = 0; j < k; j++)
				dup |= n->in[j] == n->in[k];
			if (!dup && g->nodes[n->in[k]].op != FG_OP_CONST)
				op.bytes = fg_bytes_add(op.bytes, fg_value_bytes(g, n->in[k]));
		}
		op.launches = 1;
		fg_kind_flops(g, i, &f->opt, &op.flops_tc, &op.flops_cc);
		fg_cost_estimate(&f->opt, &op);
		c.bytes = fg_bytes_add(c.bytes, op.bytes);
		c.launches += op.launches;
		c.flops_tc += op.flops_tc;
		c.flops_cc += op.flops_cc;
		c.est_us += op.est_us;
		bound += op.compute_bound ? op.est_us : 0;
	}
	c.compute_bound = bound > c.est_us / 2;
	return c;
}

