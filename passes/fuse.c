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
 *   - consumers in several groups (fan-out): an elementwise or layout node
 *     is recomputed in each of them when the cost model says recomputing
 *     is cheaper than storing it once and reading it back; otherwise it is
 *     stored;
 *   - @materialize, and --no-fuse, start a group unconditionally.
 *
 * A node joins only groups that hold all its consumers, so every group is
 * a cone that flows into its root and the group graph has no cycles.
 * @save and output values inside a group are written as side outputs and
 * fusion goes on past them.  A last pass splits loop groups whose
 * estimated registers per thread exceed the limit; a group left writing
 * nothing (a piece another group also computes) is dropped.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "fg.h"

#define NO_GROUP (-1)

typedef struct BGroup {         /* a group while it is being built */
	FgGroupKind kind;
	int root;               /* its space is the root's shape (a reduction's
				   input shape for row reductions) */
	FgShape space;
	uint32_t red_axes;
	int full;               /* a reduction over all axes: two launches */
	FG_VEC(int) nodes;      /* members, in decreasing id order */
	int dead;               /* merged away or split */
} BGroup;

typedef struct Fuser {
	const FgGraph *g;
	FgArena *a;
	FgPlan *plan;
	FgFuseOptions opt;
	int *cons_start;        /* consumers of node i: cons[cons_start[i] ..
				   cons_start[i+1]) */
	int *cons;
	FG_VEC(BGroup) groups;
	FG_VEC(int) *memb;      /* per node: the groups it is a member of */
	FgReason *block;        /* per node: why it was not fused into its
				   consumers (NONE: it was) */
	const char **detail;    /* the numbers behind block */
	unsigned char *opside;  /* per node: a matmul operand (layout flag) */
	unsigned char *live;    /* per node: an output or saved value needs it */
	int *stamp;             /* per node: scratch marks for dedupe */
	int stamp_now;
	signed char *ax;        /* per node, FG_MAX_RANK entries: scratch of
				   rows_kept (which space axis each axis reads) */
	int *via;               /* per node: scratch of rows_kept (the layout op
				   that moved its index, or -1) */
	unsigned char *seen;    /* per node: scratch of rows_kept (SEEN_*) */
} Fuser;

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

static double est_us(const FgFuseOptions *o, int64_t bytes, int launches)
{
	return (double)bytes / (o->bw_gbs * 1e3) + launches * o->launch_us;
}

static FgOpClass cls(const Fuser *f, int id)
{
	return fg_op_info[f->g->nodes[id].op].cls;
}

static const FgNode *node(const Fuser *f, int id)
{
	return &f->g->nodes[id];
}

static int is_source(const Fuser *f, int id)
{
	return cls(f, id) == FG_CLASS_SOURCE;
}

/* Whether reduction axes ax of shape in are a run of trailing axes that
 * keeps some leading axis: then one block can own each row. */
static int row_axes(const FgShape *in, uint32_t ax)
{
	uint32_t all = in->rank ? (1u << in->rank) - 1 : 0;

	return ax && ax != all && ((ax + (ax & -ax)) & all) == 0;
}

static int all_axes(const FgShape *in, uint32_t ax)
{
	return ax == (in->rank ? (1u << in->rank) - 1 : 0);
}

static int in_group(const Fuser *f, int id, int gi)
{
	for (int k = 0; k < f->memb[id].n; k++)
		if (f->memb[id].v[k] == gi)
			return 1;
	return 0;
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

#define FOR_CONSUMERS(f, p, c)                                                 \
	for (int c##_k = (f)->cons_start[p], c;                                \
	     c##_k < (f)->cons_start[(p) + 1] && ((c = (f)->cons[c##_k]) >= 0 || 1); c##_k++) \
		if (c >= 0)

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
		b.full = all_axes(in, n->a.red.axes);
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
			b->full = all_axes(in, n->a.red.axes);
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

/* A mask of axes as a list: "[0, 2]". */
static const char *axes_list(FgArena *a, uint32_t ax)
{
	const char *s = "[";
	for (int i = 0; i < FG_MAX_RANK; i++)
		if (ax & (1u << i))
			s = fg_arena_printf(a, "%s%s%d", s, s[1] ? ", " : "", i);
	return fg_arena_printf(a, "%s]", s);
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

enum {
	SEEN_DEP = 1,           /* computed from a reduction of the group */
	SEEN_READ = 2,          /* read somewhere: its ax entries are set */
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

/* The group's first reduction: its lowest member id of that class. */
static int first_reduction(const Fuser *f, const BGroup *b)
{
	for (int k = b->nodes.n - 1; k >= 0; k--)
		if (cls(f, b->nodes.v[k]) == FG_CLASS_REDUCE)
			return b->nodes.v[k];
	fg_die("a reduction group without a reduction");
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
		if ((n->flags & (FG_NF_OUTPUT | FG_NF_SAVED)) && !fg_kind_fits(&n->shape, &b->space) &&
		    fg_shape_numel(&n->shape) != fg_shape_numel(&b->space)) {
			*detail = fg_arena_printf(f->a, "%s must be written, but the %s group's threads cover %s, "
						  "not each of its elements", type_str(f, p), kind, type_str(f, b->root));
			return 0;
		}
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
		int h = b->kind == FG_GROUP_TOPK && fg_kind_fits(&n->shape, &b->space) ? heavy_source(f, p, 4) : -1;
		if (h >= 0) {
			/* Taking p would cut the row kernel that computes it
			 * (a softmax's division) from its reductions. */
			*detail = fg_arena_printf(f->a, "%s %s is computed from %s, which needs a kernel of its own; topk "
						  "reads it from memory rather than take it from that kernel (a row "
						  "kernel and topk are not one kernel yet)", value_name(f->a, f->g, p), type_str(f, p),
						  value_name(f->a, f->g, h));
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
		/* The epilogue: elementwise ops on the results, and the gather
		 * of the values (take_along_axis at the indices). */
		int ok = b->kind == FG_GROUP_LOOP && fg_shape_eq(&n->shape, &b->space);
		for (int k = 0; ok && k < b->nodes.n; k++)
			ok = cls(f, b->nodes.v[k]) == FG_CLASS_EW || node(f, b->nodes.v[k])->op == FG_OP_TAKE_ALONG_AXIS;
		if (ok)
			return 1;
		*detail = fg_arena_printf(f->a, "topk along axis %d of %s needs its whole row, which the %s group's "
					  "threads %s", n->a.sel.axis, type_str(f, n->in[0]), kind,
					  b->kind == FG_GROUP_LOOP ? "read through layout ops or broadcast" : "do not hold");
		return 0;
	}
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
						  fg_op_info[n->op].name, axes_list(f->a, ax), type_str(f, n->in[0]), kind);
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

static void refuse(Fuser *f, int p, FgReason why, const char *detail)
{
	f->block[p] = why;
	f->detail[p] = detail;
	new_group(f, p);
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
		return;
	}
	if (n->flags & FG_NF_MATERIALIZE) {
		refuse(f, p, FG_WHY_USER, "@materialize");
		return;
	}
	ncg = consumer_groups(f, p, cg, 64);
	if (ncg > 64) {
		refuse(f, p, FG_WHY_FANOUT, "read by more than 64 groups");
		return;
	}
	if (ncg == 0) {
		new_group(f, p);
		return;
	}
	if (ncg == 1) {
		if (can_join(f, cg[0], p, &why, &detail))
			join(f, cg[0], p);
		else
			refuse(f, p, why, detail);
		return;
	}
	/* Fan-out: recompute in every consumer group, or store once. */
	FgOpClass c = fg_op_info[n->op].cls;
	int64_t recompute = 0, bytes = fg_value_bytes(f->g, p);
	for (int k = 0; k < ncg; k++) {
		if ((c != FG_CLASS_EW && c != FG_CLASS_LAYOUT) || f->opside[p]) {
			refuse(f, p, FG_WHY_FANOUT,
			       fg_arena_printf(f->a, "read by %d groups; recomputing a %s in each would repeat it",
					       ncg, fg_op_info[n->op].name));
			return;
		}
		if (!can_join(f, cg[k], p, &why, &detail)) {
			refuse(f, p, why, detail);
			return;
		}
		recompute = fg_bytes_add(recompute, recompute_reads(f, cg[k], p));
	}
	int64_t store = bytes > FG_BYTES_MAX / (1 + ncg) ? FG_BYTES_MAX : bytes * (1 + ncg);
	int in_fuse_block = n->fuse_block >= 0;
	int heavy = heavy_source(f, p, 4);
	if (heavy >= 0 && !in_fuse_block) {
		refuse(f, p, FG_WHY_FANOUT,
		       fg_arena_printf(f->a, "read by %d groups; recomputing it would still store the %s it "
					     "comes from, so it is stored instead, as that group's epilogue",
				       ncg, fg_op_info[node(f, heavy)->op].name));
		return;
	}
	double t_store = est_us(&f->opt, store, 1), t_recompute = est_us(&f->opt, recompute, 0);
	if (t_recompute <= t_store || in_fuse_block) {
		for (int k = 0; k < ncg; k++)
			join(f, cg[k], p);
		return;
	}
	refuse(f, p, FG_WHY_FANOUT,
	       fg_arena_printf(f->a, "read by %d groups: storing it once costs %lld bytes and a launch "
				     "(%.2f us), recomputing it in each reads %lld bytes more (%.2f us)",
			       ncg, (long long)store, t_store, (long long)recompute, t_recompute));
}

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
static void split_for_registers(Fuser *f, int gi)
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
	out->cost.launches = b->full ? 2 : 1;
	if (b->kind == FG_GROUP_SCAN) {
		/* in parts: a launch for the parts' totals, reading it all */
		FgScanShape sc;
		fg_kind_scan_shape(&g->nodes[b->root].shape, g->nodes[b->root].a.scan.axis, &sc);
		if (sc.parts > 1) {
			out->cost.launches = 2;
			out->cost.bytes = fg_bytes_add(out->cost.bytes, out->bytes_read);
		}
	}
	out->cost.est_us = est_us(&f->opt, out->cost.bytes, out->cost.launches);
	int *sorted = fg_arena_array(f->a, (size_t)nmembers + 1, sizeof(int));
	int ns = 0;
	for (int k = 0; k < nodes.n; k++)
		if (in_group(f, nodes.v[k], gi))
			sorted[ns++] = nodes.v[k];
	out->est_regs = estimate_regs(f, gi, sorted, ns);
}

/* Sibling fusion: loop group j over the same space as an earlier loop
 * group i that reads a tensor i reads too is merged into i, which then
 * reads it once.  Legal when everything j reads is ready by i's turn
 * (an input, or written by a group before i) and the two fit in the
 * register limit together; nodes both recompute are computed once. */
static int siblings(Fuser *f, int i, int j)
{
	const FgPlan *plan = f->plan;
	const FgGroup *a = &plan->groups[i], *b = &plan->groups[j];
	int shared = 0;

	if (a->kind != FG_GROUP_LOOP || b->kind != FG_GROUP_LOOP ||
	    !fg_shape_eq(&node(f, a->root)->shape, &node(f, b->root)->shape) ||
	    !fg_kind_regs_fit(&f->opt, fg_kind_regs_merged(a->est_regs, b->est_regs)))
		return 0;
	int mark = ++f->stamp_now;
	for (int k = 0; k < a->nreads; k++)
		f->stamp[a->reads[k]] = mark;
	for (int k = 0; k < b->nreads; k++) {
		int r = b->reads[k];
		if (!is_source(f, r) && plan->home[r] >= i)
			return 0;
		shared |= f->stamp[r] == mark;
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
	a->cost.est_us = est_us(&f->opt, a->cost.bytes, a->cost.launches);
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
	int *last_reader = fg_arena_array(f->a, (size_t)g->nnodes + 1, sizeof(int));
	int *newid = fg_arena_array(f->a, (size_t)plan->ngroups + 1, sizeof(int));
	int merged = 0;

	for (int v = 0; v < g->nnodes; v++)
		last_reader[v] = -1;
	for (int j = 0; j < plan->ngroups; j++) {
		FgGroup *b = &plan->groups[j];
		int into = -1;
		for (int k = 0; k < b->nreads && into < 0; k++) {
			int i = last_reader[b->reads[k]];
			if (i >= 0 && siblings(f, i, j))
				into = i;
		}
		if (into >= 0) {
			merge_into(f, into, j);
			merged++;
		}
		int at = into >= 0 ? into : j;
		if (plan->groups[at].kind == FG_GROUP_LOOP)
			for (int k = 0; k < plan->groups[at].nreads; k++)
				last_reader[plan->groups[at].reads[k]] = at;
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
static void finish(Fuser *f)
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
	for (int i = 0; i < plan->ngroups; i++) {
		plan->groups[i].name = kernel_name(f, i, &plan->groups[i]);
		plan->fused.bytes = fg_bytes_add(plan->fused.bytes, plan->groups[i].cost.bytes);
		plan->fused.launches += plan->groups[i].cost.launches;
	}
	plan->fused.est_us = est_us(&f->opt, plan->fused.bytes, plan->fused.launches);
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

/* The cost of one kernel per op, every intermediate stored. */
static FgCost unfused_cost(const Fuser *f)
{
	const FgGraph *g = f->g;
	FgCost c = {0, 0, 0};

	for (int i = 0; i < g->nnodes; i++) {
		const FgNode *n = &g->nodes[i];
		if (is_source(f, i) || !f->live[i])
			continue;
		c.bytes = fg_bytes_add(c.bytes, fg_value_bytes(g, i));
		for (int k = 0; k < n->nin; k++) {
			int dup = 0;
			for (int j = 0; j < k; j++)
				dup |= n->in[j] == n->in[k];
			if (!dup && g->nodes[n->in[k]].op != FG_OP_CONST)
				c.bytes = fg_bytes_add(c.bytes, fg_value_bytes(g, n->in[k]));
		}
		c.launches++;
		/* A reduction over all axes takes two kernels, as fused. */
		if (fg_op_info[n->op].cls == FG_CLASS_REDUCE && all_axes(&g->nodes[n->in[0]].shape, n->a.red.axes))
			c.launches++;
	}
	c.est_us = est_us(&f->opt, c.bytes, c.launches);
	return c;
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
	for (int gi = 0, n = f.groups.n; gi < n; gi++)
		if (f.groups.v[gi].kind == FG_GROUP_LOOP && !o->no_fuse)
			split_for_registers(&f, gi);
	finish(&f);
	plan->unfused = unfused_cost(&f);
	int before = d->nerrors;
	for (int b = 0; b < g->nfuse && !o->no_fuse; b++)
		check_fuse_block(&f, b, d);
	return d->nerrors - before;
}
