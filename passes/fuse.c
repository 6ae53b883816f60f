/*
 * fuse.c - the partitioner: cuts the (expanded) graph into fusion groups,
 * each one kernel, and gives every value that crosses a group boundary the
 * reason it must.
 *
 * The walk goes from the outputs back to the inputs (reverse topological
 * order).  When a node is reached, all its consumers already have groups:
 *
 *   - consumers in one group: the node joins that group when the group's
 *     kind allows it (a loop takes elementwise and layout ops; a reduction
 *     turns a loop into a row reduction when it reduces trailing axes of
 *     the loop's own space, and every element reads the reduced values of
 *     its own row, whatever layout ops lie between (rows_kept); a matmul
 *     turns a loop of elementwise ops over its output into a gemm with
 *     that epilogue); otherwise it starts a group of its own and the rule
 *     that refused it is its boundary reason (a scan or topk turns a loop
 *     of elementwise ops over its own result into a scan or topk group,
 *     one block a row along its axis, and takes an elementwise prologue);
 *   - consumers in several groups (fan-out): a node every one of them can
 *     take (elementwise and layout ops; a reduction whose readers are all
 *     row kernels over its rows, each reading the row anyway) is
 *     recomputed in each when the cost model says recomputing is cheaper
 *     than storing it once and reading it back; a value close behind a
 *     matmul, scan or topk is stored as their epilogue.  Otherwise it is
 *     stored: written by the first of its reading groups that can take it
 *     and runs before the others (join_first), else by a group of its
 *     own;
 *   - @materialize, and --no-fuse, start a group unconditionally.
 *
 * A node joins only groups that hold all its consumers, so every group is
 * a cone that flows into its root and the group graph has no cycles.
 * @save and output values inside a group are written as side outputs and
 * fusion goes on past them.  What follows the walk (loop groups over
 * the register limit split, the groups ordered and finished, a group left
 * writing nothing dropped) is passes/groups.c's.
 */
#include <string.h>

#include "fuse.h"

#define NO_GROUP (-1)

const char *const fg_group_kind_name[FG_GROUP_COUNT] = {
#define X(id, name, fill, border) [FG_GROUP_##id] = #name,
	FG_GROUP_KINDS(X)
#undef X
};

const char *const fg_reason_name[FG_WHY_COUNT] = {
#define X(id, name) [FG_WHY_##id] = name,
	FG_REASONS(X)
#undef X
};

void fg_fuse_defaults(FgFuseOptions *o)
{
	memset(o, 0, sizeof *o);
	o->bw_gbs = 4300;
	o->launch_us = 3;
	o->tc_tflops = 790;
	o->cc_tflops = 67;
	o->reg_limit = 128;
}

int64_t fg_value_bytes(const FgGraph *g, int id)
{
	int64_t n = fg_shape_numel(&g->nodes[id].shape);

	return n > FG_BYTES_MAX / fg_dtype_size[g->nodes[id].dt] ? FG_BYTES_MAX : n * fg_dtype_size[g->nodes[id].dt];
}

int64_t fg_bytes_add(int64_t a, int64_t b)
{
	return a >= FG_BYTES_MAX - b ? FG_BYTES_MAX : a + b;
}

/* ---------------------------------------------------------- consumers */

static void index_consumers(Fuser *f)
{
	const FgGraph *g = f->g;
	int *fill;

	f->cons_start = fg_arena_array(f->a, (size_t)g->nnodes + 1, sizeof(int));
	for (int i = 0; i < g->nnodes; i++)
		for (int k = 0; k < g->nodes[i].nin; k++)
			f->cons_start[g->nodes[i].in[k] + 1]++;
	for (int i = 0; i < g->nnodes; i++)
		f->cons_start[i + 1] += f->cons_start[i];
	f->cons = fg_arena_array(f->a, (size_t)f->cons_start[g->nnodes] + 1, sizeof(int));
	fill = fg_arena_array(f->a, (size_t)g->nnodes + 1, sizeof(int));
	memcpy(fill, f->cons_start, (size_t)g->nnodes * sizeof(int));
	for (int i = 0; i < g->nnodes; i++)
		for (int k = 0; k < g->nodes[i].nin; k++) {
			int p = g->nodes[i].in[k];
			/* An op that uses p twice consumes it once. */
			if (fill[p] == f->cons_start[p] || f->cons[fill[p] - 1] != i)
				f->cons[fill[p]++] = i;
		}
	/* Duplicates left gaps: mark their end with -1. */
	for (int i = 0; i < g->nnodes; i++)
		for (int k = fill[i]; k < f->cons_start[i + 1]; k++)
			f->cons[k] = -1;
}

/* ------------------------------------------------------------- groups */

static int new_group(Fuser *f, int root)
{
	const FgNode *n = node(f, root);
	BGroup b;

	memset(&b, 0, sizeof b);
	b.root = root;
	b.space = n->shape;
	switch (fg_op_info[n->op].cls) {
	case FG_CLASS_MATMUL:
		b.kind = FG_GROUP_GEMM;
		break;
	case FG_CLASS_SCAN:
		b.kind = FG_GROUP_SCAN;
		b.red_axes = 1u << n->a.scan.axis;
		break;
	case FG_CLASS_SELECT:
		b.kind = FG_GROUP_TOPK;
		b.space = node(f, n->in[0])->shape;     /* it reads whole rows */
		b.red_axes = 1u << n->a.sel.axis;
		break;
	case FG_CLASS_REDUCE: {
		const FgShape *in = &node(f, n->in[0])->shape;
		b.kind = row_axes(in, n->a.red.axes) ? FG_GROUP_ROWREDUCE : FG_GROUP_REDUCE;
		b.space = *in;  /* a reduction iterates over its input */
		b.red_axes = n->a.red.axes;
		break;
	}
	default:
		b.kind = FG_GROUP_LOOP;
		break;
	}
	fg_vec_push(f->a, &f->groups, b);
	int gi = f->groups.n - 1;
	fg_vec_push(f->a, &f->groups.v[gi].nodes, root);
	fg_vec_push(f->a, &f->memb[root], gi);
	return gi;
}

static void join(Fuser *f, int gi, int p)
{
	BGroup *b = &f->groups.v[gi];
	const FgNode *n = node(f, p);

	if (n->op == FG_OP_MATMUL && b->kind == FG_GROUP_LOOP) {
		b->kind = FG_GROUP_GEMM;        /* the loop is its epilogue */
		b->root = p;
	}
	if (fg_op_info[n->op].cls == FG_CLASS_SCAN) {
		b->kind = FG_GROUP_SCAN;        /* ... or the scan's */
		b->root = p;
		b->red_axes = 1u << n->a.scan.axis;
	}
	if (fg_op_info[n->op].cls == FG_CLASS_SELECT) {
		b->kind = FG_GROUP_TOPK;        /* ... or topk's */
		b->root = p;
		b->space = node(f, n->in[0])->shape;
		b->red_axes = 1u << n->a.sel.axis;
	}
	if (fg_op_info[n->op].cls == FG_CLASS_REDUCE && b->kind == FG_GROUP_LOOP) {
		const FgShape *in = &node(f, n->in[0])->shape;
		b->red_axes = n->a.red.axes;
		if (fg_shape_eq(in, &b->space)) {
			b->kind = FG_GROUP_ROWREDUCE;   /* broadcast back over rows */
		} else {
			/* An epilogue on the reduced shape. */
			b->kind = row_axes(in, n->a.red.axes) ? FG_GROUP_ROWREDUCE : FG_GROUP_REDUCE;
			b->space = *in;
			b->root = p;
		}
	}
	fg_vec_push(f->a, &b->nodes, p);
	fg_vec_push(f->a, &f->memb[p], gi);
}

/* Which consumers of p inside group gi are operand-side (a matmul or a
 * transpose that the gemm reads as a layout flag). */
static int feeds_operand(const Fuser *f, int p, int gi)
{
	FOR_CONSUMERS(f, p, c)
		if (in_group(f, c, gi) && (node(f, c)->op == FG_OP_MATMUL || f->opside[c]))
			return 1;
	return 0;
}

/* A transpose that swaps the last two axes and keeps the others, which a
 * gemm reads as a layout.  (perm=[0, 1] keeps all: no layout flag.) */
static int is_operand_transpose(const Fuser *f, int p)
{
	const FgNode *n = node(f, p);
	int r = n->shape.rank;

	if (n->op != FG_OP_TRANSPOSE || r < 2 || n->a.perm[r - 2] != r - 1)
		return 0;
	for (int i = 0; i < r - 2; i++)
		if (n->a.perm[i] != i)
			return 0;
	return 1;
}

static const char *type_str(Fuser *f, int id)
{
	char buf[256];

	return fg_arena_strdup(f->a, fg_type_str(buf, sizeof buf, node(f, id)->dt, &node(f, id)->shape));
}

/* How a message names value id: 'y' where the program named it, else
 * its op and where it was written ("the mean of layernorm at 6:9"): the
 * printer's _12 is no name the user wrote. */
static const char *value_name(FgArena *a, const FgGraph *g, int id)
{
	const FgNode *n = &g->nodes[id];
	if (n->name)
		return fg_arena_printf(a, "'%s'", n->name);
	return fg_arena_printf(a, "the %s%s%s at %d:%d", fg_op_info[n->op].name, n->composite ? " of " : "",
			       n->composite ? n->composite : "", n->loc.line, n->loc.col);
}

/* ------------------------------------------ the rows of a reduction */

/* A reduction group runs one block per row (a thread per result element
 * for other axes): a reduced value exists only at the row its block
 * reduces.  rows_kept follows, for every member, which coordinates of
 * the space (the reductions' input) each of its axes is read at, from
 * where the kernel starts: the values it writes and the reductions'
 * inputs.  An axis entry is a space axis or one of these. */
enum {
	AX_UNSEEN = -1,         /* no member reads it at this axis yet */
	AX_ZERO = -2,           /* an axis of 1: index 0 */
	AX_OTHER = -3,          /* a computed coordinate (a slice's offset, a
				   concat, a flattening reshape), or several */
};

/* The space axis that axis d of reduction r's result keeps. */
static int kept_axis(const FgNode *r, const FgShape *in, int d)
{
	if (r->a.red.keepdims)
		return d;
	for (int i = 0; i < in->rank; i++)
		if (!(r->a.red.axes & (1u << i)) && d-- == 0)
			return i;
	fg_die("axis %d past the kept axes of a reduction", d);
}

/* dst: shape s read at the index of a value of rank srank read at src,
 * NumPy-aligned from the last axis (s broadcasts into that value). */
static void ax_align(signed char *dst, const FgShape *s, const signed char *src, int srank)
{
	if (s->rank > FG_MAX_RANK)      /* shapes are checked at build: tells gcc -O2 so */
		fg_die("rank %d past FG_MAX_RANK", s->rank);
	for (int j = 0; j < s->rank; j++)
		dst[j] = s->d[j] == 1 ? AX_ZERO : src[j + srank - s->rank];
}

/* The axes of s longer than 1, into ax; their count. */
static int long_axes(const FgShape *s, int *ax)
{
	int n = 0;

	for (int i = 0; i < s->rank; i++)
		if (s->d[i] > 1)
			ax[n++] = i;
	return n;
}

/* Where v's operand o is read when v is read at mv; *moved says whether
 * the op moves elements to other coordinates (how the index went wrong,
 * for the report). */
static void operand_axes(const Fuser *f, int v, int o, const signed char *mv, signed char *mo, int *moved)
{
	const FgNode *n = node(f, v);
	const FgShape *os = &node(f, o)->shape, *vs = &n->shape;
	int a[FG_MAX_RANK], b[FG_MAX_RANK], na, nb;

	if (os->rank > FG_MAX_RANK)     /* as in ax_align */
		fg_die("rank %d past FG_MAX_RANK", os->rank);
	*moved = 0;
	switch (n->op) {
	case FG_OP_TRANSPOSE:
		for (int i = 0; i < vs->rank; i++) {
			mo[n->a.perm[i]] = mv[i];
			*moved |= n->a.perm[i] != i;
		}
		break;
	case FG_OP_SLICE:
		memcpy(mo, mv, (size_t)os->rank);
		if (n->a.slice.start != 0)
			mo[n->a.slice.axis] = AX_OTHER;
		*moved = 1;
		break;
	case FG_OP_CONCAT:
		memcpy(mo, mv, (size_t)os->rank);
		mo[n->a.axis] = AX_OTHER;
		*moved = 1;
		break;
	case FG_OP_GATHER:
		/* x at a loaded position along the axis, the other axes
		 * around the indices' own; the indices at those */
		if (o == n->in[1] && o != n->in[0]) {
			for (int i = 0; i < os->rank; i++)
				mo[i] = mv[n->a.axis + i];
			*moved = n->a.axis != 0 || vs->rank != os->rank;
			break;
		}
		for (int i = 0; i < os->rank; i++)
			mo[i] = i < n->a.axis ? mv[i] : i > n->a.axis ? mv[i + vs->rank - os->rank] : AX_OTHER;
		*moved = 1;
		break;
	case FG_OP_TAKE_ALONG_AXIS:
		/* broadcast, x at a loaded position along the axis */
		ax_align(mo, os, mv, vs->rank);
		if (o == n->in[0]) {
			mo[n->a.axis] = AX_OTHER;
			*moved = 1;
		}
		break;
	case FG_OP_RESHAPE:
		/* Only axes of 1 come or go: the others keep their
		 * coordinates; else the index goes through a flat one. */
		na = long_axes(vs, a);
		nb = long_axes(os, b);
		*moved = na != nb;
		for (int i = 0; i < na && !*moved; i++)
			*moved = vs->d[a[i]] != os->d[b[i]];
		for (int i = 0; i < os->rank; i++)
			mo[i] = AX_OTHER;
		for (int i = 0; i < nb && !*moved; i++)
			mo[b[i]] = mv[a[i]];
		break;
	default:        /* elementwise and broadcast_to */
		ax_align(mo, os, mv, vs->rank);
		break;
	}
	for (int j = 0; j < os->rank; j++)
		if (os->d[j] == 1)
			mo[j] = AX_ZERO;
}

/* o is read at m as well (via: the op that moved the index, or -1). */
static void ax_merge(Fuser *f, int o, const signed char *m, int via)
{
	signed char *e = &f->ax[(size_t)o * FG_MAX_RANK];

	for (int j = 0; j < node(f, o)->shape.rank; j++)
		e[j] = !(f->seen[o] & SEEN_READ) || e[j] == m[j] ? m[j] : AX_OTHER;
	f->seen[o] |= SEEN_READ;
	if (f->via[o] < 0)
		f->via[o] = via;
}

static int in_group_or(const Fuser *f, int id, int gi, int p)
{
	return id == p || in_group(f, id, gi);
}

/* Whether a member is written by its group (whichever writes it). */
static int is_written(const Fuser *f, int id)
{
	return (node(f, id)->flags & (FG_NF_OUTPUT | FG_NF_SAVED | FG_NF_MATERIALIZE)) || f->block[id] != FG_WHY_NONE;
}

/* Why a group of this kind whose first reduction is r cannot write w. */
static const char *unplaceable(Fuser *f, int w, int r, FgGroupKind kind)
{
	char sp[256];

	return fg_arena_printf(f->a, "%s %s must be written, but it fits neither %s's result %s (the shape a "
			       "%s group writes per-row values in) nor the rows %s", value_name(f->a, f->g, w),
			       type_str(f, w), fg_op_info[node(f, r)->op].name, type_str(f, r),
			       fg_group_kind_name[kind],
			       fg_type_str(sp, sizeof sp, node(f, w)->dt, &node(f, node(f, r)->in[0])->shape));
}

/* Whether group gi with reduction p joined (p below all its members)
 * still runs as one reduction kernel (fg_kind_write_place):
 * every value the group writes fits either the rows (the result of p,
 * its first reduction) or the space (p's input), and every reduction is
 * read only at the row its own block reduces.  If not, *detail says why
 * (kind: the group's kind once p joins). */
static int rows_kept(Fuser *f, int gi, int p, FgGroupKind kind, const char **detail)
{
	const BGroup *b = &f->groups.v[gi];
	const FgNode *pn = node(f, p);
	const FgShape *S = &node(f, pn->in[0])->shape;
	signed char rows[FG_MAX_RANK], space[FG_MAX_RANK], m[FG_MAX_RANK];
	int nm = b->nodes.n + 1;

	for (int d = 0; d < pn->shape.rank; d++)
		rows[d] = pn->shape.d[d] == 1 ? AX_ZERO : kept_axis(pn, S, d);
	for (int i = 0; i < S->rank; i++)
		space[i] = S->d[i] == 1 ? AX_ZERO : i;
	/* Members in increasing id order: what depends on a reduction. */
	for (int k = nm - 1; k >= 0; k--) {
		int v = k < b->nodes.n ? b->nodes.v[k] : p;
		const FgNode *n = node(f, v);
		f->seen[v] = cls(f, v) == FG_CLASS_REDUCE ? SEEN_DEP : 0;
		f->via[v] = -1;
		for (int j = 0; j < n->nin; j++)
			if (in_group_or(f, n->in[j], gi, p))
				f->seen[v] |= f->seen[n->in[j]] & SEEN_DEP;
	}
	/* Where the kernel starts: each written value at the rows or the
	 * space (fg_kind_write_place), each reduction's input at
	 * the space. */
	for (int k = 0; k < nm; k++) {
		int v = k < b->nodes.n ? b->nodes.v[k] : p;
		const FgShape *vs = &node(f, v)->shape;
		if (cls(f, v) == FG_CLASS_REDUCE && in_group_or(f, node(f, v)->in[0], gi, p))
			ax_merge(f, node(f, v)->in[0], space, -1);
		if (!is_written(f, v))
			continue;
		FgPlace where = fg_kind_write_place(f->g, p, v, f->seen[v] & SEEN_DEP);
		if (where == FG_PLACE_ROWS) {
			ax_align(m, vs, rows, pn->shape.rank);
		} else if (where == FG_PLACE_SPACE) {
			ax_align(m, vs, space, S->rank);
		} else {
			*detail = unplaceable(f, v, p, kind);
			return 0;
		}
		ax_merge(f, v, m, -1);
	}
	/* From consumers to operands: where each member is read. */
	for (int k = 0; k < nm; k++) {
		int v = k < b->nodes.n ? b->nodes.v[k] : p;
		const FgNode *n = node(f, v);
		if (!(f->seen[v] & SEEN_READ) || cls(f, v) == FG_CLASS_REDUCE)
			continue;
		for (int j = 0; j < n->nin; j++) {
			int o = n->in[j], moved;
			if (!in_group_or(f, o, gi, p))
				continue;
			operand_axes(f, v, o, &f->ax[(size_t)v * FG_MAX_RANK], m, &moved);
			ax_merge(f, o, m, moved ? v : f->via[v]);
		}
	}
	for (int k = 0; k < nm; k++) {
		int r = k < b->nodes.n ? b->nodes.v[k] : p;
		const FgNode *rn = node(f, r);
		if (cls(f, r) != FG_CLASS_REDUCE || !(f->seen[r] & SEEN_READ))
			continue;
		for (int d = 0; d < rn->shape.rank; d++) {
			if (rn->shape.d[d] == 1 || f->ax[(size_t)r * FG_MAX_RANK + d] == kept_axis(rn, S, d))
				continue;
			int w = f->via[r];
			if (w < 0) {    /* NumPy alignment alone: sum(x, axis=-1, keepdims=false) + x */
				*detail = fg_arena_printf(f->a, "%s's result %s broadcasts across the rows it reduced, "
							  "so each element needs another row's value, computed by "
							  "another block", fg_op_info[rn->op].name, type_str(f, r));
				return 0;
			}
			const char *through = node(f, w)->name
				? fg_arena_printf(f->a, ", through %s '%s' (%d:%d),", fg_op_info[node(f, w)->op].name,
						  node(f, w)->name, node(f, w)->loc.line, node(f, w)->loc.col)
				: fg_arena_printf(f->a, ", through %s,", value_name(f->a, f->g, w));
			*detail = fg_arena_printf(f->a, "%s's result %s is read%s at other elements than the %s, "
						  "which other %s compute",
						  fg_op_info[rn->op].name, type_str(f, r), through,
						  kind == FG_GROUP_ROWREDUCE ? "row each block of the rowreduce group reduces"
									     : "one each thread of the reduce group reduces",
						  kind == FG_GROUP_ROWREDUCE ? "blocks" : "threads");
			return 0;
		}
	}
	return 1;
}

static int heavy_source(const Fuser *f, int p, int depth);

/* Whether node r reduces axes of S along rows kept as dims of 1 (a
 * reduction a topk group over rows of S computes, or over its picks). */
static int row_reduction(const Fuser *f, int r, const FgShape *S, uint32_t axes)
{
	const FgNode *n = node(f, r);
	FgShape kept = *S;

	for (int d = 0; d < S->rank; d++)
		if (axes & (1u << d))
			kept.d[d] = 1;
	return cls(f, r) == FG_CLASS_REDUCE && n->a.red.axes == axes && fg_shape_eq(&node(f, n->in[0])->shape, S) &&
	       fg_shape_eq(&n->shape, &kept);
}

/* The first reduction, scan or topk that p is computed from through at
 * most `depth` elementwise or layout ops and that topk group gi cannot
 * take (a reduction along other rows than its own), or -1. */
static int foreign_source(const Fuser *f, int gi, int p, int depth)
{
	const BGroup *b = &f->groups.v[gi];
	const FgNode *n = node(f, p);

	for (int k = 0; k < n->nin && depth > 0; k++) {
		int o = n->in[k];
		FgOpClass c = cls(f, o);
		if (c == FG_CLASS_REDUCE && row_reduction(f, o, &b->space, b->red_axes))
			continue;
		if (c == FG_CLASS_REDUCE || c == FG_CLASS_SCAN || c == FG_CLASS_SELECT)
			return o;
		if (c == FG_CLASS_EW || c == FG_CLASS_LAYOUT) {
			int h = foreign_source(f, gi, o, depth - 1);
			if (h >= 0)
				return h;
		}
	}
	return -1;
}

/* Whether group gi's threads can write p, a value that must be written
 * (an output, a saved value, one other groups read): they cover p's
 * elements, or as many.  *detail says why not. */
static int writable(Fuser *f, int gi, int p, const char **detail)
{
	const BGroup *b = &f->groups.v[gi];
	const FgNode *n = node(f, p);

	if (fg_kind_fits(&n->shape, &b->space) || fg_shape_numel(&n->shape) == fg_shape_numel(&b->space))
		return 1;
	*detail = fg_arena_printf(f->a, "%s must be written, but the %s group's threads cover %s, not each of its "
				  "elements", type_str(f, p), fg_group_kind_name[b->kind], type_str(f, b->root));
	return 0;
}

/* Whether p may join group gi.  If not, *why and *detail say which rule
 * refused it. */
static int can_join(Fuser *f, int gi, int p, FgReason *why, const char **detail)
{
	const BGroup *b = &f->groups.v[gi];
	const FgNode *n = node(f, p);
	FgOpClass c = fg_op_info[n->op].cls;
	const char *kind = fg_group_kind_name[b->kind];

	*why = FG_WHY_CROSS_BLOCK;
	if (b->kind == FG_GROUP_GEMM && feeds_operand(f, p, gi)) {
		if (is_operand_transpose(f, p) && !f->opside[p])
			return 1;
		*detail = fg_arena_printf(f->a, "a matmul operand: each output tile reads whole rows and "
					  "columns of %s, computed by other blocks", type_str(f, p));
		return 0;
	}
	if (c == FG_CLASS_EW || c == FG_CLASS_LAYOUT) {
		if ((n->flags & (FG_NF_OUTPUT | FG_NF_SAVED)) && !writable(f, gi, p, detail))
			return 0;
		if (b->kind == FG_GROUP_GEMM && !fg_kind_fits(&n->shape, &b->space) &&
		    !fg_kind_fits(&n->shape, &node(f, b->root)->shape)) {
			*detail = fg_arena_printf(f->a, "%s does not fit the gemm's output tile %s",
						  type_str(f, p), type_str(f, b->root));
			return 0;
		}
		if (b->kind == FG_GROUP_REDUCE && !fg_kind_fits(&n->shape, &b->space) &&
		    !fg_kind_fits(&n->shape, &node(f, b->root)->shape)) {
			char sp[256];
			*detail = fg_arena_printf(f->a, "%s fits neither the reduction's input %s nor its result",
						  type_str(f, p), fg_type_str(sp, sizeof sp, n->dt, &b->space));
			return 0;
		}
		int rr = b->kind == FG_GROUP_REDUCE ? heavy_source(f, p, 4) : -1;
		if (rr >= 0 && cls(f, rr) == FG_CLASS_REDUCE && fg_shape_eq(&n->shape, &node(f, rr)->shape) &&
		    row_axes(&node(f, node(f, rr)->in[0])->shape, node(f, rr)->a.red.axes)) {
			/* A value per row of a row reduction (a row's loss)
			 * stays with that row kernel: taken into a reduction
			 * over the rows, it would cut the row kernel apart
			 * and have it read its rows again. */
			*detail = fg_arena_printf(f->a, "%s %s is a value per row of %s, computed in that row kernel; the "
						  "%s group over the rows needs every row's, so it is written for it",
						  value_name(f->a, f->g, p), type_str(f, p), value_name(f->a, f->g, rr), kind);
			return 0;
		}
		int h = b->kind == FG_GROUP_TOPK && fg_kind_fits(&n->shape, &b->space) ? foreign_source(f, gi, p, 4) : -1;
		if (h >= 0) {
			/* Taking p would cut the kernel that computes it from
			 * its reductions (or scan, or topk). */
			*detail = fg_arena_printf(f->a, "%s %s is computed from %s, which needs a kernel of its own (it "
						  "does not reduce along the rows topk runs along); topk reads it from "
						  "memory rather than take it from that kernel", value_name(f->a, f->g, p),
						  type_str(f, p), value_name(f->a, f->g, h));
			return 0;
		}
		if (b->kind == FG_GROUP_TOPK && is_written(f, p) && !fg_kind_fits(&n->shape, &node(f, b->root)->shape)) {
			*detail = fg_arena_printf(f->a, "%s must be written, but the topk group writes once per "
						  "result of %s", type_str(f, p), type_str(f, b->root));
			return 0;
		}
		if (b->kind == FG_GROUP_SCAN && is_written(f, p) && !fg_kind_fits(&n->shape, &b->space)) {
			*detail = fg_arena_printf(f->a, "%s must be written, but the scan group's threads cover the "
						  "elements of %s", type_str(f, p), type_str(f, b->root));
			return 0;
		}
		if ((b->kind == FG_GROUP_ROWREDUCE || b->kind == FG_GROUP_REDUCE) && is_written(f, p)) {
			/* p comes before the group's reductions: not computed
			 * from them */
			int r = first_reduction(f, b);
			if (!fg_kind_write_place(f->g, r, p, 0)) {
				*detail = unplaceable(f, p, r, b->kind);
				return 0;
			}
		}
		return 1;
	}
	if (c == FG_CLASS_SCAN) {
		/* The epilogue: elementwise ops at each element of the scan. */
		int ok = b->kind == FG_GROUP_LOOP && fg_shape_eq(&n->shape, &b->space);
		for (int k = 0; ok && k < b->nodes.n; k++)
			ok = cls(f, b->nodes.v[k]) == FG_CLASS_EW;
		if (ok)
			return 1;
		*detail = fg_arena_printf(f->a, "%s along axis %d of %s: each element needs those %s it on the "
					  "axis, which the %s group's threads %s", fg_op_info[n->op].name,
					  n->a.scan.axis, type_str(f, p), n->a.scan.reverse ? "after" : "before", kind,
					  b->kind == FG_GROUP_LOOP ? "read through layout ops or broadcast"
								   : "do not hold");
		return 0;
	}
	if (c == FG_CLASS_SELECT) {
		/* The epilogue: elementwise ops on the results, the gather of
		 * the values (take_along_axis at the indices), and reductions
		 * along topk's axis (over the picks, which the kernel then
		 * holds: k at most FG_TOPK_PICKS_HELD). */
		int picks = b->kind == FG_GROUP_ROWREDUCE && b->red_axes == 1u << n->a.sel.axis &&
			    n->a.sel.k <= FG_TOPK_PICKS_HELD;
		int ok = (b->kind == FG_GROUP_LOOP || picks) && fg_shape_eq(&n->shape, &b->space);
		for (int k = 0; ok && k < b->nodes.n; k++)
			ok = cls(f, b->nodes.v[k]) == FG_CLASS_EW || node(f, b->nodes.v[k])->op == FG_OP_TAKE_ALONG_AXIS ||
			     (picks && row_reduction(f, b->nodes.v[k], &n->shape, b->red_axes));
		if (ok)
			return 1;
		if (b->kind == FG_GROUP_ROWREDUCE && b->red_axes == 1u << n->a.sel.axis && fg_shape_eq(&n->shape, &b->space) &&
		    n->a.sel.k > FG_TOPK_PICKS_HELD) {
			*detail = fg_arena_printf(f->a, "the rowreduce group reduces topk's %lld picks, more than the %d "
						  "a topk kernel holds to reduce", (long long)n->a.sel.k, FG_TOPK_PICKS_HELD);
			return 0;
		}
		*detail = fg_arena_printf(f->a, "topk along axis %d of %s needs its whole row, which the %s group's "
					  "threads %s", n->a.sel.axis, type_str(f, n->in[0]), kind,
					  b->kind == FG_GROUP_LOOP ? "read through layout ops or broadcast" : "do not hold");
		return 0;
	}
	if (b->kind == FG_GROUP_TOPK && row_reduction(f, p, &b->space, b->red_axes))
		return 1;       /* the prologue's reductions along topk's rows (a softmax) */
	if (b->kind == FG_GROUP_SCAN || b->kind == FG_GROUP_TOPK) {
		/* A reduction, a matmul, a scan or topk before it: no other
		 * block's work in a kernel that runs along rows */
		char sp[256];
		*detail = fg_arena_printf(f->a, "the %s group runs along each row of %s; %s %s needs %s", kind,
					  fg_type_str(sp, sizeof sp, node(f, node(f, b->root)->in[0])->dt, &b->space),
					  fg_op_info[n->op].name, type_str(f, p),
					  c == FG_CLASS_MATMUL ? "its output tiles computed by blocks of their own"
							       : "a kernel of its own before it (it does not run inside "
								 "this kernel)");
		return 0;
	}
	if (c == FG_CLASS_REDUCE) {
		const FgShape *in = &node(f, n->in[0])->shape;
		uint32_t ax = n->a.red.axes;
		FgGroupKind to = row_axes(in, ax) ? FG_GROUP_ROWREDUCE : FG_GROUP_REDUCE;
		if (b->kind == FG_GROUP_LOOP && fg_shape_eq(&n->shape, &b->space))
			return rows_kept(f, gi, p, to, detail);         /* epilogue on the reduced shape */
		if (b->kind == FG_GROUP_LOOP && row_axes(in, ax) && fg_shape_eq(in, &b->space))
			return rows_kept(f, gi, p, to, detail);         /* broadcast back over its own rows */
		if (b->kind == FG_GROUP_ROWREDUCE && ax == b->red_axes && fg_shape_eq(in, &b->space))
			return rows_kept(f, gi, p, to, detail);         /* another reduction over the same rows */
		if (all_axes(in, ax))
			*detail = fg_arena_printf(f->a, "%s reduces all axes: every block of the %s group needs "
						  "the total, and there is no grid-wide barrier",
						  fg_op_info[n->op].name, kind);
		else
			*detail = fg_arena_printf(f->a, "%s over axis %s of %s is needed across the %s group's "
						  "blocks, which split those axes",
						  fg_op_info[n->op].name, fg_axes_list(f->a, ax), type_str(f, n->in[0]), kind);
		return 0;
	}
	if (c == FG_CLASS_MATMUL) {
		/* The epilogue: elementwise ops, and transposes and reshapes
		 * that only move where each element of the tile is stored. */
		int ok = b->kind == FG_GROUP_LOOP && fg_shape_numel(&n->shape) == fg_shape_numel(&b->space);
		for (int k = 0; ok && k < b->nodes.n; k++) {
			FgOp op = node(f, b->nodes.v[k])->op;
			ok = fg_op_info[op].cls == FG_CLASS_EW || op == FG_OP_TRANSPOSE || op == FG_OP_RESHAPE;
		}
		if (ok)
			return 1;
		*detail = fg_arena_printf(f->a, "the matmul's output tile is computed by one block, but the %s "
					  "group needs it %s", kind,
					  b->kind == FG_GROUP_LOOP ? "through layout ops or broadcast" : "a row at a time");
		return 0;
	}
	fg_die("cannot join op '%s'", fg_op_info[n->op].name);
}

static int group_reads(const Fuser *f, int gi, int v)
{
	const BGroup *b = &f->groups.v[gi];

	for (int m = 0; m < b->nodes.n; m++)
		for (int j = 0; j < node(f, b->nodes.v[m])->nin; j++)
			if (node(f, b->nodes.v[m])->in[j] == v)
				return 1;
	return 0;
}

/* Bytes group gi would read more if it recomputed p: the tensors p's
 * elementwise cone starts from (inputs, stored values, matmuls and
 * reductions), less those the group reads already.  A cone of more than
 * 64 ops counts as unaffordable. */
static int64_t recompute_reads(const Fuser *f, int gi, int p)
{
	int stack[65], seen[64], nstack = 0, nseen = 0;
	int64_t bytes = 0;

	stack[nstack++] = p;
	while (nstack) {
		const FgNode *n = node(f, stack[--nstack]);
		for (int k = 0; k < n->nin; k++) {
			int o = n->in[k], dup = 0;
			for (int i = 0; i < nseen; i++)
				dup |= seen[i] == o;
			if (dup || node(f, o)->op == FG_OP_CONST)
				continue;
			if (nseen == 64)
				return FG_BYTES_MAX;
			seen[nseen++] = o;
			FgOpClass c = cls(f, o);
			if ((c == FG_CLASS_EW || c == FG_CLASS_LAYOUT) && !in_group(f, o, gi))
				stack[nstack++] = o;    /* nstack <= nseen + 1 */
			else if (!group_reads(f, gi, o) && !in_group(f, o, gi))
				bytes = fg_bytes_add(bytes, fg_value_bytes(f->g, o));
		}
	}
	return bytes;
}

/* The groups holding p's consumers, unique, into out; their count. */
static int consumer_groups(const Fuser *f, int p, int *out, int max)
{
	int n = 0;

	FOR_CONSUMERS(f, p, c)
		for (int k = 0; k < f->memb[c].n; k++) {
			int gi = f->memb[c].v[k], dup = 0;
			for (int j = 0; j < n; j++)
				dup |= out[j] == gi;
			if (!dup && n == max)
				return max + 1;
			if (!dup)
				out[n++] = gi;
		}
	return n;
}

/* The first matmul, reduction or scan that p is computed from through at most
 * `depth` elementwise or layout ops, or -1.  Recomputing p would leave
 * it to be stored anyway, so storing p itself is no dearer. */
static int heavy_source(const Fuser *f, int p, int depth)
{
	const FgNode *n = node(f, p);

	for (int k = 0; k < n->nin && depth > 0; k++) {
		int o = n->in[k];
		FgOpClass c = cls(f, o);
		if (c == FG_CLASS_MATMUL || c == FG_CLASS_REDUCE || c == FG_CLASS_SCAN || c == FG_CLASS_SELECT)
			return o;
		if (c == FG_CLASS_EW || c == FG_CLASS_LAYOUT) {
			int h = heavy_source(f, o, depth - 1);
			if (h >= 0)
				return h;
		}
	}
	return -1;
}

/* The highest member of group gi: groups run in the order of theirs
 * (passes/groups.c). */
static int last_member(const Fuser *f, int gi)
{
	const BGroup *b = &f->groups.v[gi];
	int key = -1;
	for (int k = 0; k < b->nodes.n; k++)
		key = b->nodes.v[k] > key ? b->nodes.v[k] : key;
	return key;
}

/* Whether p, joining group cg[k], is written there before its other
 * consumer groups read it: cg[k] runs before each of them, and none of
 * cg[k]'s members is computed from what they compute (from p through a
 * node outside cg[k]), which would be a cycle. */
static int runs_first(Fuser *f, int p, const int *cg, int ncg, int k)
{
	int key = last_member(f, cg[k]);
	for (int j = 0; j < ncg; j++)
		if (j != k && last_member(f, cg[j]) <= key)
			return 0;
	int *stack = fg_arena_array(f->a, (size_t)f->g->nnodes + 1, sizeof(int)), n = 0;
	int mark = ++f->stamp_now;
	FOR_CONSUMERS(f, p, c)
		if (!in_group(f, c, cg[k]) && f->stamp[c] != mark) {
			f->stamp[c] = mark;
			stack[n++] = c;
		}
	while (n) {
		int v = stack[--n];
		if (in_group(f, v, cg[k]))
			return 0;
		FOR_CONSUMERS(f, v, c)
			if (c <= key && f->stamp[c] != mark) {
				f->stamp[c] = mark;
				stack[n++] = c;
			}
	}
	return 1;
}

static void refuse(Fuser *f, int p, FgReason why, const char *detail)
{
	f->block[p] = why;
	f->detail[p] = detail;
	new_group(f, p);
}

/* What the walk did with p, for `fgc report --explain` (plan->trail):
 * the rule that decided, with its numbers. */
#define trail(f, p, ...) ((f)->plan->trail[p] = fg_arena_printf((f)->a, __VA_ARGS__))

/* The kinds of groups cg[0..n), for the trail: "a loop and a rowreduce". */
static const char *kinds_of(Fuser *f, const int *cg, int n)
{
	const char *s = "";
	for (int k = 0; k < n && k < 4; k++)
		s = fg_arena_printf(f->a, "%s%sa %s", s, k == 0 ? "" : k + 1 == n ? " and " : ", ",
				    fg_group_kind_name[f->groups.v[cg[k]].kind]);
	return n > 4 ? fg_arena_printf(f->a, "%s, ...", s) : s;
}

/* Whether group cg[k], writing p, runs before every piece the register
 * splitter may cut from the other loops reading p: its last member comes
 * before each of their members that reads p (a piece runs in the order
 * of its last member, at least that reader). */
static int before_pieces(Fuser *f, int p, const int *cg, int ncg, int k)
{
	int key = last_member(f, cg[k]);
	for (int j = 0; j < ncg; j++) {
		const BGroup *b = &f->groups.v[cg[j]];
		if (j == k || b->kind != FG_GROUP_LOOP)
			continue;
		for (int m = 0; m < b->nodes.n; m++) {
			const FgNode *n = node(f, b->nodes.v[m]);
			for (int i = 0; i < n->nin; i++)
				if (n->in[i] == p && b->nodes.v[m] <= key)
					return 0;
		}
	}
	return 1;
}

/* p, read by the groups cg[0..ncg) and to be written for them: joins the
 * first of them that can take it and runs before the others, which
 * writes it (the boundary's reason `why`, `detail`); 1 if one did, else
 * 0 (p then starts a group of its own). */
static int join_first(Fuser *f, int p, const int *cg, int ncg, FgReason why, const char *detail)
{
	FgReason w;
	const char *dt;

	for (int k = 0; k < ncg; k++) {
		if (!runs_first(f, p, cg, ncg, k) || !can_join(f, cg[k], p, &w, &dt) || !writable(f, cg[k], p, &dt) ||
		    !before_pieces(f, p, cg, ncg, k))
			continue;
		join(f, cg[k], p);
		f->block[p] = why;
		f->detail[p] = detail;
		return 1;
	}
	return 0;
}

/* Decides p's group(s), its consumers' groups all being known. */
static void place(Fuser *f, int p)
{
	const FgNode *n = node(f, p);
	int cg[64], ncg;
	FgReason why;
	const char *detail;

	if (f->opt.no_fuse) {
		refuse(f, p, FG_WHY_USER, "--no-fuse: one kernel per op");
		f->plan->trail[p] = "--no-fuse: a group of its own";
		return;
	}
	if (n->flags & FG_NF_MATERIALIZE) {
		refuse(f, p, FG_WHY_USER, "@materialize");
		f->plan->trail[p] = "@materialize: a group of its own, written for its readers";
		return;
	}
	ncg = consumer_groups(f, p, cg, 64);
	if (ncg > 64) {
		refuse(f, p, FG_WHY_FANOUT, "read by more than 64 groups");
		f->plan->trail[p] = "read by more than 64 groups: a group of its own, written for them";
		return;
	}
	if (ncg == 0) {
		new_group(f, p);
		f->plan->trail[p] = "no op reads it (an output or saved value): a group starts at it";
		return;
	}
	if (ncg == 1) {
		/* the common case, and a static text: a million-op chain
		 * allocates nothing more for its trail */
		static const char *const joined[FG_GROUP_COUNT] = {
#define X(id, name, fill, border) \
	[FG_GROUP_##id] = "every op reading it is in one group, a " #name ": it joined that group",
			FG_GROUP_KINDS(X)
#undef X
		};
		FgGroupKind kind = f->groups.v[cg[0]].kind;
		if (can_join(f, cg[0], p, &why, &detail)) {
			join(f, cg[0], p);
			f->plan->trail[p] = joined[kind];
		} else {
			refuse(f, p, why, detail);
			trail(f, p, "every op reading it is in one group, a %s, which cannot take it (%s: %s): a "
				  "group of its own, written for that group", fg_group_kind_name[kind], fg_reason_name[why],
			      detail);
		}
		return;
	}
	const char *kinds = kinds_of(f, cg, ncg);
	/* Fan-out: recompute in every consumer group, or store once. */
	FgOpClass c = fg_op_info[n->op].cls;
	for (int k = 0; k < ncg && c == FG_CLASS_SELECT; k++) {
		/* topk joins the first group that takes it (the picks'
		 * renormalization) and is written there for the others, when
		 * that group runs before them */
		if (!runs_first(f, p, cg, ncg, k) || !can_join(f, cg[k], p, &why, &detail))
			continue;
		join(f, cg[k], p);
		f->block[p] = FG_WHY_FANOUT;
		f->detail[p] = fg_arena_printf(f->a, "read by %d groups; computed in one of them (topk with its "
						     "epilogue) and written for the others, as recomputing a topk in "
						     "each would repeat it", ncg);
		trail(f, p, "read by %d groups (%s): %s", ncg, kinds, f->detail[p]);
		return;
	}
	/* Recomputed in each group only if each can take it: elementwise
	 * and layout ops, and a reduction that every group can take (row
	 * kernels over its rows: a row's max, where each reads the row
	 * anyway); the first group that refuses says why. */
	int64_t recompute = 0, bytes = fg_value_bytes(f->g, p);
	int refused = -1, recomputable = (c == FG_CLASS_EW || c == FG_CLASS_LAYOUT || c == FG_CLASS_REDUCE) &&
					  !f->opside[p];
	for (int k = 0; k < ncg && recomputable && refused < 0; k++) {
		if (!can_join(f, cg[k], p, &why, &detail))
			refused = k;
		else
			recompute = fg_bytes_add(recompute, recompute_reads(f, cg[k], p));
	}
	int64_t store = bytes > FG_BYTES_MAX / (1 + ncg) ? FG_BYTES_MAX : bytes * (1 + ncg);
	int in_fuse_block = n->fuse_block >= 0;
	int heavy = heavy_source(f, p, 4);
	if (!recomputable || (refused >= 0 && c == FG_CLASS_REDUCE)) {
		/* stored: written by the first group that can take it, else
		 * by a group of its own */
		const char *d = fg_arena_printf(f->a, "read by %d groups; recomputing a %s in each would repeat it",
						ncg, fg_op_info[n->op].name);
		if (refused >= 0)
			d = fg_arena_printf(f->a, "read by %d groups, not all of which can compute a %s (the %s: %s); "
						  "computed in one and written for the others", ncg,
					    fg_op_info[n->op].name, fg_group_kind_name[f->groups.v[cg[refused]].kind],
					    detail);
		if (recomputable && join_first(f, p, cg, ncg, FG_WHY_FANOUT, d)) {
			trail(f, p, "read by %d groups (%s), not all of which can compute a %s (the %s: %s): it joined "
				  "the first that can and runs before the others, which writes it for them", ncg, kinds,
			      fg_op_info[n->op].name, fg_group_kind_name[f->groups.v[cg[refused]].kind], detail);
			return;
		}
		refuse(f, p, FG_WHY_FANOUT, d);
		trail(f, p, "read by %d groups (%s); %s: stored once, written for them", ncg, kinds,
		      f->opside[p] ? "a matmul reads it as a layout of its operand, from memory"
				   : refused >= 0 ? d : "only elementwise and layout ops, and reductions, are recomputed");
		return;
	}
	/* a value close behind a matmul, a scan or a topk: recomputing it
	 * leaves their result (as large) to be stored, so it is stored, as
	 * their group's epilogue; behind a reduction, which a row kernel
	 * reading p can take, the cost model weighs reading the reduced
	 * value (and p's other inputs) in each group against storing p */
	if (heavy >= 0 && !in_fuse_block && cls(f, heavy) != FG_CLASS_REDUCE) {
		refuse(f, p, FG_WHY_FANOUT,
		       fg_arena_printf(f->a, "read by %d groups; recomputing it would still store the %s it "
					     "comes from, so it is stored instead, as that group's epilogue",
				       ncg, fg_op_info[node(f, heavy)->op].name));
		trail(f, p, "read by %d groups (%s); it is computed from a %s within four elementwise steps, "
			  "whose result is as large: stored once, as the epilogue of the group computing it",
		      ncg, kinds, fg_op_info[node(f, heavy)->op].name);
		return;
	}
	if (refused >= 0) {
		/* a group that cannot take it (a column reduction reading a
		 * row's value): written by the first group that can */
		if (join_first(f, p, cg, ncg, why, detail)) {
			trail(f, p, "read by %d groups (%s); the %s cannot take it (%s: %s): it joined the first group "
				  "that can, which writes it for the others", ncg, kinds,
			      fg_group_kind_name[f->groups.v[cg[refused]].kind], fg_reason_name[why], detail);
			return;
		}
		refuse(f, p, why, detail);
		trail(f, p, "read by %d groups (%s); recomputing it in each was tried, but the %s cannot take "
			  "it (%s: %s), nor can any that runs first: stored once by a group of its own", ncg, kinds,
		      fg_group_kind_name[f->groups.v[cg[refused]].kind], fg_reason_name[why], detail);
		return;
	}
	double t_store = fg_est_us(&f->opt, store, 1), t_recompute = fg_est_us(&f->opt, recompute, 0);
	const char *costs = fg_arena_printf(f->a, "storing it once costs %lld bytes and a launch (%.2f us), "
						  "recomputing it in each reads %lld bytes more (%.2f us)",
					    (long long)store, t_store, (long long)recompute, t_recompute);
	if (t_recompute <= t_store || in_fuse_block) {
		for (int k = 0; k < ncg; k++)
			join(f, cg[k], p);
		trail(f, p, "read by %d groups (%s), each of which can take it; %s: recomputed in each%s", ncg,
		      kinds, costs, in_fuse_block && t_recompute > t_store ? " (its fuse { } block asks for it)" : "");
		return;
	}
	const char *d = fg_arena_printf(f->a, "read by %d groups: %s", ncg, costs);
	if (join_first(f, p, cg, ncg, FG_WHY_FANOUT, d)) {
		trail(f, p, "read by %d groups (%s), each of which can take it; %s: stored once, by the first of "
			  "them, which it joined", ncg, kinds, costs);
		return;
	}
	refuse(f, p, FG_WHY_FANOUT, d);
	trail(f, p, "read by %d groups (%s), each of which can take it; %s: stored once, by a group of its own", ncg,
	      kinds, costs);
}

/* fuse { } asks for one kernel: report the boundary that split it. */
static void check_fuse_block(Fuser *f, int blk, FgDiag *d)
{
	const FgGraph *g = f->g;
	const FgPlan *plan = f->plan;
	int first = -1, split = 0;

	for (int i = 0; i < g->nnodes; i++) {
		if (g->nodes[i].fuse_block != blk || is_source(f, i) || !f->memb[i].n)
			continue;
		if (first < 0)
			first = i;
		else if (!in_group(f, i, f->memb[first].v[0]))
			split = 1;
	}
	if (!split)
		return;
	for (int e = 0; e < plan->nedges; e++) {
		const FgEdge *ed = &plan->edges[e];
		if (g->nodes[ed->producer].fuse_block == blk && g->nodes[ed->consumer].fuse_block == blk) {
			fg_error(d, g->nodes[ed->consumer].loc,
				 "this fuse block cannot be one kernel: %s reads %s across a group boundary (%s: %s)",
				 value_name(f->a, g, ed->consumer), value_name(f->a, g, ed->producer),
				 fg_reason_name[ed->why], ed->detail);
			return;
		}
	}
	fg_error(d, g->nodes[first].loc,
		 "this fuse block cannot be one kernel: its statements do not depend on each other and land in separate groups");
}

/* A transpose that joined a gemm on its operand side is a layout flag of
 * that operand, whatever other groups recompute it: what it reads must
 * then be stored (the gemm reads its operands from memory). */
static void mark_operand_side(Fuser *f, int p)
{
	if (node(f, p)->op != FG_OP_TRANSPOSE)
		return;
	for (int k = 0; k < f->memb[p].n; k++) {
		int gi = f->memb[p].v[k];
		if (f->groups.v[gi].kind == FG_GROUP_GEMM && f->groups.v[gi].root != p && feeds_operand(f, p, gi))
			f->opside[p] = 1;
	}
}

/* Marks what an output or saved value needs; the rest is dead code. */
static void mark_live(Fuser *f)
{
	const FgGraph *g = f->g;

	f->live = fg_arena_array(f->a, (size_t)g->nnodes + 1, 1);
	for (int i = g->nnodes - 1; i >= 0; i--) {
		if (g->nodes[i].flags & (FG_NF_OUTPUT | FG_NF_SAVED))
			f->live[i] = 1;
		if (f->live[i])
			for (int k = 0; k < g->nodes[i].nin; k++)
				f->live[g->nodes[i].in[k]] = 1;
	}
}

int fg_pass_fuse(const FgGraph *g, const FgFuseOptions *o, FgPlan *plan, FgDiag *d)
{
	Fuser f;

	memset(&f, 0, sizeof f);
	memset(plan, 0, sizeof *plan);
	f.g = g;
	f.a = g->arena;
	f.plan = plan;
	f.opt = *o;
	plan->g = g;
	plan->opt = *o;
	plan->names = fg_ir_names(g);
	plan->why = fg_arena_array(f.a, (size_t)g->nnodes + 1, sizeof(FgReason));
	plan->home = fg_arena_array(f.a, (size_t)g->nnodes + 1, sizeof(int));
	plan->trail = fg_arena_array(f.a, (size_t)g->nnodes + 1, sizeof(char *));
	f.memb = fg_arena_array(f.a, (size_t)g->nnodes + 1, sizeof(*f.memb));
	f.block = fg_arena_array(f.a, (size_t)g->nnodes + 1, sizeof(FgReason));
	f.detail = fg_arena_array(f.a, (size_t)g->nnodes + 1, sizeof(char *));
	f.opside = fg_arena_array(f.a, (size_t)g->nnodes + 1, 1);
	f.stamp = fg_arena_array(f.a, (size_t)g->nnodes + 1, sizeof(int));
	f.ax = fg_arena_array(f.a, (size_t)g->nnodes * FG_MAX_RANK + 1, 1);
	f.via = fg_arena_array(f.a, (size_t)g->nnodes + 1, sizeof(int));
	f.seen = fg_arena_array(f.a, (size_t)g->nnodes + 1, 1);
	index_consumers(&f);
	mark_live(&f);
	for (int p = g->nnodes - 1; p >= 0; p--) {
		if (is_source(&f, p) || !f.live[p])
			continue;
		place(&f, p);
		mark_operand_side(&f, p);
	}
	if (!o->no_fuse && !o->no_attention)
		fuse_attention(&f);
	for (int gi = 0, n = f.groups.n; gi < n; gi++)
		if (f.groups.v[gi].kind == FG_GROUP_LOOP && !f.groups.v[gi].dead && !o->no_fuse)
			fuse_split_for_registers(&f, gi);
	fuse_finish(&f);
	plan->unfused = fuse_unfused_cost(&f);
	int before = d->nerrors;
	for (int b = 0; b < g->nfuse && !o->no_fuse; b++)
		check_fuse_block(&f, b, d);
	return d->nerrors - before;
}
