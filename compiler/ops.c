/*
 * ops.c - each op's call, from the AST to nodes of the IR: its operand
 * count, attributes and dtypes checked (every error located), its result's
 * shape and dtype inferred, numbers folded, and the node built; a
 * composite is kept whole here for passes/expand.c, and topk builds its
 * two results.  compiler/ir.c walks the expressions and calls
 * ir_build_call for each call it meets.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir_build.h"

/* -------------------------------------------------------- attributes */

/* An integer attribute's value v: a number, or a symbolic dim of the
 * graph standing for its value (`slice(x, end=T)`, language version 2);
 * `what` names what the attribute takes, for the message. */
static int attr_item_int(Builder *b, const FgAttrAst *at, const FgAttrVal *v, const char *what, int64_t *out)
{
	if (v->kind == FG_AV_IDENT) {
		for (int i = 0; i < b->dims.n; i++)
			if (strcmp(b->dims.v[i].name, v->ident) == 0) {
				*out = b->dims.v[i].value;
				return 0;
			}
		fg_error(b->d, v->loc, "'%s' takes %s; '%s' is no dimension of the graph", at->key, what, v->ident);
		return -1;
	}
	if (v->kind != FG_AV_NUM || !v->num.is_int || v->num.overflow) {
		fg_error(b->d, v->loc, "'%s' takes %s", at->key, what);
		return -1;
	}
	*out = v->num.ival;
	return 0;
}

static int attr_int(Builder *b, const FgAttrAst *at, int64_t *out)
{
	return attr_item_int(b, at, &at->val, "an integer", out);
}

static int attr_real(Builder *b, const FgAttrAst *at, double *out)
{
	if (at->val.kind != FG_AV_NUM) {
		fg_error(b->d, at->val.loc, "'%s' takes a number", at->key);
		return -1;
	}
	*out = at->val.num.val;
	return 0;
}

static int attr_bool(Builder *b, const FgAttrAst *at, int *out)
{
	if (at->val.kind == FG_AV_IDENT && strcmp(at->val.ident, "true") == 0)
		*out = 1;
	else if (at->val.kind == FG_AV_IDENT && strcmp(at->val.ident, "false") == 0)
		*out = 0;
	else {
		fg_error(b->d, at->val.loc, "'%s' takes true or false", at->key);
		return -1;
	}
	return 0;
}

/* A list of integers (an integer alone counts as a list of one when
 * `single` is set).  At most FG_MAX_RANK entries. */
static int attr_ints(Builder *b, const FgAttrAst *at, int single, int64_t *out, int *n)
{
	const FgAttrVal *items = &at->val;
	int count = 1;

	if (at->val.kind == FG_AV_LIST) {
		items = at->val.items;
		count = at->val.nitems;
	} else if (!single) {
		fg_error(b->d, at->val.loc, "'%s' takes a list of integers like [0, 1]", at->key);
		return -1;
	}
	if (count > FG_MAX_RANK) {
		fg_error(b->d, at->val.loc, "'%s' has %d entries; the rank limit is %d", at->key, count,
			 FG_MAX_RANK);
		return -1;
	}
	for (int i = 0; i < count; i++)
		if (attr_item_int(b, at, &items[i], single ? "an integer or a list of integers" : "a list of integers",
				  &out[i]) != 0)
			return -1;
	*n = count;
	return 0;
}

/* Normalizes a (possibly negative) axis for `rank`; -1 after an error. */
static int norm_axis(Builder *b, FgLoc loc, int64_t axis, int rank, const char *type)
{
	if (axis < -rank || axis >= rank) {
		fg_error(b->d, loc, "axis %lld is out of range for %s (rank %d)", (long long)axis, type, rank);
		return -1;
	}
	return (int)(axis < 0 ? axis + rank : axis);
}

static int attr_axes(Builder *b, const FgAttrAst *at, int rank, const char *type, uint32_t *mask)
{
	int64_t ax[FG_MAX_RANK];
	int n;

	if (attr_ints(b, at, 1, ax, &n) != 0)
		return -1;
	*mask = 0;
	for (int i = 0; i < n; i++) {
		int k = norm_axis(b, at->val.loc, ax[i], rank, type);
		if (k < 0)
			return -1;
		if (*mask & (1u << k)) {
			fg_error(b->d, at->val.loc, "axis %d is listed twice", k);
			return -1;
		}
		*mask |= 1u << k;
	}
	if (n == 0) {
		fg_error(b->d, at->val.loc, "'%s' lists no axis", at->key);
		return -1;
	}
	return 0;
}

/* Checks every key against the op's accepted list; returns the attribute
 * for `key` or NULL.  Called once per key the op knows. */
static const FgAttrAst *find_attr(const FgExpr *e, const char *key)
{
	for (int i = 0; i < e->nattrs; i++)
		if (strcmp(e->attrs[i].key, key) == 0)
			return &e->attrs[i];
	return NULL;
}

static int key_accepted(const char *keys, const char *key)
{
	size_t n = strlen(key);

	for (const char *p = keys; *p;) {
		const char *end = strchr(p, ' ');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (len == n && strncmp(p, key, n) == 0)
			return 1;
		p += len + (end ? 1 : 0);
	}
	return 0;
}

static int check_attr_keys(Builder *b, const FgExpr *e, FgOp op)
{
	const char *keys = fg_op_info[op].attrs;
	int bad = 0;

	for (int i = 0; i < e->nattrs; i++) {
		const FgAttrAst *at = &e->attrs[i];
		if (!key_accepted(keys, at->key)) {
			if (*keys)
				fg_error(b->d, at->loc, "'%s' has no attribute '%s'; it takes: %s",
					 fg_op_info[op].name, at->key, keys);
			else
				fg_error(b->d, at->loc, "'%s' takes no attributes", fg_op_info[op].name);
			bad = 1;
			continue;
		}
		for (int j = 0; j < i; j++)
			if (strcmp(e->attrs[j].key, at->key) == 0) {
				fg_error(b->d, at->loc, "attribute '%s' is given twice", at->key);
				bad = 1;
			}
	}
	return bad ? -1 : 0;
}

/* -------------------------------------------------------- type rules */

/* The dtype operands adapt to: the first tensor operand's (for where, the
 * first of the two values).  FG_DT_COUNT when every operand is a number. */
static FgDtype common_dtype(Builder *b, FgOp op, const Val *args, int nargs)
{
	for (int i = op == FG_OP_WHERE ? 1 : 0; i < nargs; i++)
		if (args[i].kind == V_NODE)
			return node(b, args[i].node)->dt;
	return FG_DT_COUNT;
}

static int check_dtypes(Builder *b, const FgExpr *e, FgOp op, const Val *args, int nargs, FgDtype dt)
{
	const char *name = fg_op_info[op].name;
	int first = op == FG_OP_WHERE ? 1 : 0;

	if (op == FG_OP_WHERE && (args[0].kind != V_NODE || node(b, args[0].node)->dt != FG_DT_BOOL)) {
		fg_error(b->d, e->args[0]->loc, "the condition of 'where' must be a bool tensor, got %s",
			 args[0].kind == V_NODE ? fg_dtype_name[node(b, args[0].node)->dt] : "a number");
		return -1;
	}
	for (int i = first; i < nargs; i++) {
		if (args[i].kind == V_NODE && node(b, args[i].node)->dt != dt) {
			fg_error(b->d, e->loc, "mixed dtypes in '%s': %s and %s; convert one with cast(x, dtype=%s)",
				 e->op_text ? e->op_text : name, fg_dtype_name[dt],
				 fg_dtype_name[node(b, args[i].node)->dt], fg_dtype_name[dt]);
			return -1;
		}
		double lo = -INFINITY, hi = INFINITY;
		if (fg_dtype_is_int(dt))
			fg_dtype_int_range(dt, &lo, &hi);
		if (args[i].kind == V_NUM && !fg_dtype_is_float(dt) &&
		    (args[i].num != floor(args[i].num) || args[i].num < lo || args[i].num > hi)) {
			fg_error(b->d, e->args[i]->loc, "the number %g does not fit the %s operand", args[i].num,
				 fg_dtype_name[dt]);
			return -1;
		}
	}
	FgTypeRule ty = fg_op_info[op].ty;
	if ((ty == FG_TY_FLOAT || ty == FG_TY_PRED) && !fg_dtype_is_float(dt)) {
		fg_error(b->d, e->loc, "'%s' needs float operands, got %s", name, fg_dtype_name[dt]);
		return -1;
	}
	if ((ty == FG_TY_NUM || ty == FG_TY_INDEX) && dt == FG_DT_BOOL) {
		fg_error(b->d, e->loc, "'%s' needs numeric operands, got bool", e->op_text ? e->op_text : name);
		return -1;
	}
	if (ty == FG_TY_BOOL && dt != FG_DT_BOOL) {
		fg_error(b->d, e->loc, "'%s' needs bool operands, got %s (a comparison gives bool: %s(x > 0%s))", name,
			 fg_dtype_name[dt], name, fg_op_info[op].arity == 2 ? ", y > 0" : "");
		return -1;
	}
	return 0;
}

/* -------------------------------------------------------------- calls */

/* A rank-0 constant of dtype dt. */
static int add_const(Builder *b, double v, FgDtype dt, FgLoc loc)
{
	FgShape s = {0};
	int id = ir_add_node(b, FG_OP_CONST, dt, &s, NULL, 0, loc);

	node(b, id)->a.value = v;
	return id;
}

/* Operands as node ids, numbers turned into constants of dtype dt. */
static void operand_ids(Builder *b, const FgExpr *e, const Val *args, int nargs, FgDtype dt, int *ids)
{
	for (int i = 0; i < nargs; i++)
		ids[i] = args[i].kind == V_NODE ? args[i].node : add_const(b, args[i].num, dt, e->args[i]->loc);
}

/* Elementwise ops: broadcast every operand to one shape. */
static Val build_ew(Builder *b, const FgExpr *e, FgOp op, const Val *args, int nargs)
{
	FgDtype dt = common_dtype(b, op, args, nargs);
	int ids[3];
	char t1[256], t2[256];

	if (dt == FG_DT_COUNT)
		dt = FG_DT_F32;
	if (check_dtypes(b, e, op, args, nargs, dt) != 0)
		return err_val();
	FgShape shape = {0};
	for (int i = 0; i < nargs; i++) {
		FgShape next;
		if (args[i].kind != V_NODE)
			continue;
		if (fg_shape_broadcast(&shape, &node(b, args[i].node)->shape, &next) != 0) {
			fg_error(b->d, e->loc, "cannot broadcast %s with %s", fg_type_str(t1, sizeof t1, dt, &shape),
				 type_of(b, args[i].node, t2, sizeof t2));
			return err_val();
		}
		shape = next;
	}
	if (ir_checked_numel(&shape) < 0) {
		fg_error(b->d, e->loc, "the result of '%s' has more than 2^62 elements",
			 e->op_text ? e->op_text : e->name);
		return err_val();
	}
	FgDtype out = dt;
	FgNode tmp = {0};
	if (fg_op_info[op].ty == FG_TY_CMP || fg_op_info[op].ty == FG_TY_PRED)
		out = FG_DT_BOOL;
	if (op == FG_OP_CAST) {
		const FgAttrAst *at = find_attr(e, "dtype");
		if (!at) {
			fg_error(b->d, e->loc, "'cast' needs a target: cast(x, dtype=f16)");
			return err_val();
		}
		if (at->val.kind != FG_AV_IDENT) {
			fg_error(b->d, at->val.loc, "'dtype' takes a dtype name: %s", ir_dtype_list());
			return err_val();
		}
		out = ir_lookup_dtype(b, at->val.ident, at->val.loc);
		if (out == FG_DT_COUNT)
			return err_val();
		if (args[0].kind == V_NUM) /* cast(2, dtype=f16): a typed scalar */
			return node_val(add_const(b, fg_round_to(out, args[0].num), out, e->loc));
	}
	if (op == FG_OP_DROPOUT) {
		const FgAttrAst *pa = find_attr(e, "p"), *sa = find_attr(e, "seed");
		int64_t seed = 1234;
		tmp.a.drop.p = 0.1;
		if (pa && attr_real(b, pa, &tmp.a.drop.p) != 0)
			return err_val();
		if (!(tmp.a.drop.p >= 0 && tmp.a.drop.p < 1)) {
			fg_error(b->d, pa->val.loc, "dropout's p must be in [0, 1), got %g", tmp.a.drop.p);
			return err_val();
		}
		if (sa && attr_int(b, sa, &seed) != 0)
			return err_val();
		if (seed < 0) {
			fg_error(b->d, sa->val.loc, "dropout's seed must not be negative");
			return err_val();
		}
		tmp.a.drop.seed = (uint64_t)seed;
	}
	const char *key = fg_op_scalar(op);
	if (key) {
		const FgAttrAst *ka = find_attr(e, key);
		tmp.a.k = op == FG_OP_ELU ? 1.0 : 0.01;
		if (ka && attr_real(b, ka, &tmp.a.k) != 0)
			return err_val();
		if (!isfinite(tmp.a.k)) {
			fg_error(b->d, ka->val.loc, "%s's %s must be finite, got %g", fg_op_info[op].name, key, tmp.a.k);
			return err_val();
		}
	}
	if (args[0].kind == V_NUM && (nargs < 2 || args[1].kind == V_NUM) &&
	    (nargs < 3 || args[2].kind == V_NUM)) {
		if (op == FG_OP_DROPOUT) {
			fg_error(b->d, e->loc, "'dropout' needs a tensor, not a number");
			return err_val();
		}
		Val v = {V_NUM, fg_op_eval_scalar(op, args[0].num, nargs > 1 ? args[1].num : 0,
						  nargs > 2 ? args[2].num : 0, tmp.a.k), 0};
		return v;
	}
	operand_ids(b, e, args, nargs, dt, ids);
	int id = ir_add_node(b, op, out, &shape, ids, nargs, e->loc);
	node(b, id)->a = tmp.a;
	return node_val(id);
}

/* Every other op takes tensors only. */
static int require_tensors(Builder *b, const FgExpr *e, const Val *args, int nargs)
{
	for (int i = 0; i < nargs; i++)
		if (args[i].kind != V_NODE) {
			fg_error(b->d, e->args[i]->loc, "'%s' needs a tensor here, not a number", e->name);
			return -1;
		}
	return 0;
}

/* A reduction node of op over x's `axis` attribute (default: the axes of
 * mask) with `keepdims` (default true). */
static Val reduce_node(Builder *b, const FgExpr *e, FgOp op, int x, uint32_t mask)
{
	const FgNode *in = node(b, x);
	const FgAttrAst *ax = find_attr(e, "axis"), *kd = find_attr(e, "keepdims");
	int keep = 1;
	char t[256];

	if (ax && attr_axes(b, ax, in->shape.rank, type_of(b, x, t, sizeof t), &mask) != 0)
		return err_val();
	if (kd && attr_bool(b, kd, &keep) != 0)
		return err_val();
	FgShape shape = {0};
	for (int i = 0; i < in->shape.rank; i++)
		if (!(mask & (1u << i)))
			shape.d[shape.rank++] = in->shape.d[i];
		else if (keep)
			shape.d[shape.rank++] = 1;
	/* argmax, argmin: an i32 index among the reduced elements */
	FgDtype dt = in->dt;
	if (fg_op_info[op].ty == FG_TY_INDEX) {
		int64_t count = 1;
		for (int i = 0; i < in->shape.rank; i++)
			if (mask & (1u << i))
				count *= in->shape.d[i];
		if (count > INT32_MAX) {
			fg_error(b->d, e->loc, "'%s' over %lld elements: an index past 2^31 - 1 does not fit its i32 result",
				 fg_op_info[op].name, (long long)count);
			return err_val();
		}
		dt = FG_DT_I32;
	}
	int id = ir_add_node(b, op, dt, &shape, &x, 1, e->loc);
	node(b, id)->a.red.axes = mask;
	node(b, id)->a.red.keepdims = keep;
	return node_val(id);
}

static Val build_reduce(Builder *b, const FgExpr *e, FgOp op, int x)
{
	int rank = node(b, x)->shape.rank;
	return reduce_node(b, e, op, x, rank ? (1u << rank) - 1 : 0);
}

static Val build_transpose(Builder *b, const FgExpr *e, int x)
{
	const FgNode *in = node(b, x);
	const FgAttrAst *pa = find_attr(e, "perm");
	int64_t perm[FG_MAX_RANK];
	int n = in->shape.rank, seen = 0;
	char t[256];

	if (pa) {
		if (attr_ints(b, pa, 0, perm, &n) != 0)
			return err_val();
		for (int i = 0; i < n; i++)
			if (perm[i] >= 0 && perm[i] < in->shape.rank)
				seen |= 1 << perm[i];
		if (n != in->shape.rank || seen != (1 << n) - 1) {
			fg_error(b->d, pa->val.loc, "perm must be a permutation of 0..%d for %s",
				 in->shape.rank - 1, type_of(b, x, t, sizeof t));
			return err_val();
		}
	} else {
		if (n < 2) {
			fg_error(b->d, e->loc, "transpose without perm swaps the last two axes; %s has fewer",
				 type_of(b, x, t, sizeof t));
			return err_val();
		}
		for (int i = 0; i < n; i++)
			perm[i] = i;
		perm[n - 2] = n - 1;
		perm[n - 1] = n - 2;
	}
	FgShape shape = {n, {0}};
	for (int i = 0; i < n; i++)
		shape.d[i] = in->shape.d[perm[i]];
	int id = ir_add_node(b, FG_OP_TRANSPOSE, in->dt, &shape, &x, 1, e->loc);
	for (int i = 0; i < n; i++)
		node(b, id)->a.perm[i] = (int)perm[i];
	return node_val(id);
}

/* reshape and broadcast_to: the target shape from shape=[...]. */
static Val build_reshape(Builder *b, const FgExpr *e, FgOp op, int x)
{
	const FgNode *in = node(b, x);
	const FgAttrAst *sa = find_attr(e, "shape");
	int64_t dims[FG_MAX_RANK];
	int n, infer = -1;
	char t[256];

	if (!sa) {
		fg_error(b->d, e->loc, "'%s' needs shape=[...]", e->name);
		return err_val();
	}
	if (attr_ints(b, sa, 0, dims, &n) != 0)
		return err_val();
	FgShape shape = {n, {0}};
	for (int i = 0; i < n; i++) {
		if (dims[i] == -1 && op == FG_OP_RESHAPE && infer < 0) {
			infer = i;
			shape.d[i] = 1;
			continue;
		}
		if (dims[i] <= 0) {
			fg_error(b->d, sa->val.items[i].loc, "shape entries must be positive%s, got %lld",
				 op == FG_OP_RESHAPE ? " (or one -1)" : "", (long long)dims[i]);
			return err_val();
		}
		shape.d[i] = dims[i];
	}
	int64_t numel = ir_checked_numel(&shape), have = fg_shape_numel(&in->shape);
	if (numel < 0) {
		fg_error(b->d, sa->val.loc, "shape has more than 2^62 elements");
		return err_val();
	}
	if (op == FG_OP_RESHAPE) {
		if (infer >= 0 && have % numel == 0)
			shape.d[infer] = have / numel;
		if (fg_shape_numel(&shape) != have) {
			fg_error(b->d, sa->val.loc, "cannot reshape %s (%lld elements) to this shape",
				 type_of(b, x, t, sizeof t), (long long)have);
			return err_val();
		}
	} else {
		FgShape r;
		if (fg_shape_broadcast(&in->shape, &shape, &r) != 0 || !fg_shape_eq(&r, &shape)) {
			char t2[256];
			fg_error(b->d, sa->val.loc, "cannot broadcast %s to %s", type_of(b, x, t, sizeof t),
				 fg_type_str(t2, sizeof t2, in->dt, &shape));
			return err_val();
		}
	}
	return node_val(ir_add_node(b, op, in->dt, &shape, &x, 1, e->loc));
}

static Val build_slice(Builder *b, const FgExpr *e, int x)
{
	const FgNode *in = node(b, x);
	const FgAttrAst *aa = find_attr(e, "axis"), *sa = find_attr(e, "start"), *ea = find_attr(e, "end");
	int64_t axis = 0, start = 0, end;
	char t[256];

	if (in->shape.rank == 0) {
		fg_error(b->d, e->loc, "cannot slice a rank-0 tensor");
		return err_val();
	}
	if ((aa && attr_int(b, aa, &axis) != 0) || (sa && attr_int(b, sa, &start) != 0) ||
	    (ea && attr_int(b, ea, &end) != 0))
		return err_val();
	int k = norm_axis(b, aa ? aa->val.loc : e->loc, axis, in->shape.rank, type_of(b, x, t, sizeof t));
	if (k < 0)
		return err_val();
	int64_t dim = in->shape.d[k];
	if (!ea)
		end = dim;
	int64_t s = start < 0 ? start + dim : start, en = end < 0 ? end + dim : end;
	if (s < 0 || en > dim || s >= en) {
		int start_bad = s < 0 || s >= dim;
		const FgAttrAst *at = start_bad ? sa : ea ? ea : sa;
		fg_error(b->d, at ? at->val.loc : e->loc, "slice [%lld, %lld) is out of range for axis %d of %s (size %lld)", (long long)start,
			 (long long)end, k, t, (long long)dim);
		return err_val();
	}
	FgShape shape = in->shape;
	shape.d[k] = en - s;
	int id = ir_add_node(b, FG_OP_SLICE, in->dt, &shape, &x, 1, e->loc);
	node(b, id)->a.slice.axis = k;
	node(b, id)->a.slice.start = s;
	node(b, id)->a.slice.end = en;
	return node_val(id);
}

static Val build_concat(Builder *b, const FgExpr *e, const Val *args, int nargs)
{
	const FgAttrAst *aa = find_attr(e, "axis");
	const FgNode *first = node(b, args[0].node);
	int64_t axis = -1;
	char t1[256], t2[256];

	if (aa && attr_int(b, aa, &axis) != 0)
		return err_val();
	if (first->shape.rank == 0) {
		fg_error(b->d, e->loc, "cannot concatenate rank-0 tensors");
		return err_val();
	}
	int k = norm_axis(b, aa ? aa->val.loc : e->loc, axis, first->shape.rank,
			  type_of(b, args[0].node, t1, sizeof t1));
	if (k < 0)
		return err_val();
	FgShape shape = first->shape;
	int *ids = fg_arena_array(b->a, (size_t)nargs, sizeof(int));
	for (int i = 0; i < nargs; i++) {
		const FgNode *n = node(b, args[i].node);
		ids[i] = args[i].node;
		if (i == 0)
			continue;
		int ok = n->dt == first->dt && n->shape.rank == first->shape.rank;
		for (int j = 0; ok && j < n->shape.rank; j++)
			ok = j == k || n->shape.d[j] == first->shape.d[j];
		if (!ok) {
			fg_error(b->d, e->args[i]->loc, "cannot concatenate %s with %s on axis %d",
				 type_of(b, args[0].node, t1, sizeof t1), type_of(b, args[i].node, t2, sizeof t2), k);
			return err_val();
		}
		if (shape.d[k] > FG_NUMEL_MAX - n->shape.d[k]) {
			fg_error(b->d, e->loc, "the concatenation has more than 2^62 elements");
			return err_val();
		}
		shape.d[k] += n->shape.d[k];
	}
	if (ir_checked_numel(&shape) < 0) {
		fg_error(b->d, e->loc, "the concatenation has more than 2^62 elements");
		return err_val();
	}
	int id = ir_add_node(b, FG_OP_CONCAT, first->dt, &shape, ids, nargs, e->loc);
	node(b, id)->a.axis = k;
	return node_val(id);
}

static Val build_matmul(Builder *b, const FgExpr *e, int x, int y)
{
	const FgNode *l = node(b, x), *r = node(b, y);
	char t1[256], t2[256];

	if (l->dt == FG_DT_I8 || l->dt == FG_DT_U8) {
		fg_error(b->d, e->loc, "matmul of %s operands is not in the language; cast them to i32, f16 or bf16",
			 fg_dtype_name[l->dt]);
		return err_val();
	}
	if (l->shape.rank < 2 || r->shape.rank < 2) {
		fg_error(b->d, e->loc, "matmul needs operands of rank 2 or more, got %s and %s",
			 type_of(b, x, t1, sizeof t1), type_of(b, y, t2, sizeof t2));
		return err_val();
	}
	int64_t k1 = l->shape.d[l->shape.rank - 1], k2 = r->shape.d[r->shape.rank - 2];
	if (k1 != k2) {
		fg_error(b->d, e->loc, "matmul inner dimensions differ: %s x %s (%lld vs %lld)",
			 type_of(b, x, t1, sizeof t1), type_of(b, y, t2, sizeof t2), (long long)k1, (long long)k2);
		return err_val();
	}
	FgShape bl = l->shape, br = r->shape, shape;
	bl.rank -= 2;
	br.rank -= 2;
	if (fg_shape_broadcast(&bl, &br, &shape) != 0) {
		fg_error(b->d, e->loc, "matmul batch dimensions do not broadcast: %s x %s",
			 type_of(b, x, t1, sizeof t1), type_of(b, y, t2, sizeof t2));
		return err_val();
	}
	shape.d[shape.rank++] = l->shape.d[l->shape.rank - 2];
	shape.d[shape.rank++] = r->shape.d[r->shape.rank - 1];
	if (ir_checked_numel(&shape) < 0) {
		fg_error(b->d, e->loc, "the matmul result has more than 2^62 elements");
		return err_val();
	}
	/* f8 operands accumulate in f32 and give f32 (language.md) */
	FgDtype dt = l->dt == FG_DT_F8E4M3 || l->dt == FG_DT_F8E5M2 ? FG_DT_F32 : l->dt;
	return node_val(ir_add_node(b, FG_OP_MATMUL, dt, &shape, (int[]){x, y}, 2, e->loc));
}

/* iota(shape=[...], axis=0, dtype=i32): each element its index along axis. */
static Val build_iota(Builder *b, const FgExpr *e)
{
	const FgAttrAst *sa = find_attr(e, "shape"), *aa = find_attr(e, "axis"), *da = find_attr(e, "dtype");
	int64_t dims[FG_MAX_RANK], axis = 0;
	int n;
	char t[256];

	if (!sa) {
		fg_error(b->d, e->loc, "'iota' needs shape=[...]: iota(shape=[S, S], axis=1)");
		return err_val();
	}
	if (attr_ints(b, sa, 1, dims, &n) != 0 || (aa && attr_int(b, aa, &axis) != 0))
		return err_val();
	FgShape shape = {n, {0}};
	for (int i = 0; i < n; i++) {
		if (dims[i] <= 0) {
			fg_error(b->d, sa->val.kind == FG_AV_LIST ? sa->val.items[i].loc : sa->val.loc,
				 "shape entries must be positive, got %lld", (long long)dims[i]);
			return err_val();
		}
		shape.d[i] = dims[i];
	}
	if (n == 0) {
		fg_error(b->d, sa->val.loc, "'iota' needs a shape of rank 1 or more");
		return err_val();
	}
	if (ir_checked_numel(&shape) < 0) {
		fg_error(b->d, sa->val.loc, "shape has more than 2^62 elements");
		return err_val();
	}
	FgDtype dt = FG_DT_I32;
	if (da && da->val.kind != FG_AV_IDENT) {
		fg_error(b->d, da->val.loc, "'dtype' takes a dtype name: %s", ir_dtype_list());
		return err_val();
	}
	if (da && (dt = ir_lookup_dtype(b, da->val.ident, da->val.loc)) == FG_DT_COUNT)
		return err_val();
	if (dt == FG_DT_BOOL) {
		fg_error(b->d, da->val.loc, "'iota' gives numbers: i32 or a float dtype, not bool");
		return err_val();
	}
	int k = norm_axis(b, aa ? aa->val.loc : e->loc, axis, n, fg_type_str(t, sizeof t, dt, &shape));
	if (k < 0)
		return err_val();
	if (dt == FG_DT_I32 && shape.d[k] - 1 > INT32_MAX) {
		fg_error(b->d, sa->val.loc, "axis %d has %lld positions; an i32 holds indices up to 2^31 - 1", k,
			 (long long)shape.d[k]);
		return err_val();
	}
	int id = ir_add_node(b, FG_OP_IOTA, dt, &shape, NULL, 0, e->loc);
	node(b, id)->a.axis = k;
	return node_val(id);
}

/* gather(x, idx, axis=0): NumPy's take, the result x.shape[:axis] +
 * idx.shape + x.shape[axis+1:]; take_along_axis(x, idx, axis=-1): idx of
 * x's rank, broadcast with x on the other axes.  idx is i32. */
static Val build_gather(Builder *b, const FgExpr *e, FgOp op, int x, int idx)
{
	const FgNode *xn = node(b, x), *in = node(b, idx);
	const FgAttrAst *aa = find_attr(e, "axis");
	int64_t axis = op == FG_OP_GATHER ? 0 : -1;
	char t1[256], t2[256];

	if (in->dt != FG_DT_I32) {
		fg_error(b->d, e->args[1]->loc, "'%s' takes i32 indices, got %s; convert with cast(..., dtype=i32)",
			 e->name, fg_dtype_name[in->dt]);
		return err_val();
	}
	if (xn->shape.rank == 0) {
		fg_error(b->d, e->args[0]->loc, "'%s' needs a tensor of rank 1 or more to index, got %s", e->name,
			 type_of(b, x, t1, sizeof t1));
		return err_val();
	}
	if (aa && attr_int(b, aa, &axis) != 0)
		return err_val();
	int k = norm_axis(b, aa ? aa->val.loc : e->loc, axis, xn->shape.rank, type_of(b, x, t1, sizeof t1));
	if (k < 0)
		return err_val();
	FgShape shape = {0};
	if (op == FG_OP_GATHER) {
		if (xn->shape.rank - 1 + in->shape.rank > FG_MAX_RANK) {
			fg_error(b->d, e->loc, "gathering %s from %s gives rank %d; the rank limit is %d",
				 type_of(b, idx, t2, sizeof t2), t1, xn->shape.rank - 1 + in->shape.rank, FG_MAX_RANK);
			return err_val();
		}
		for (int i = 0; i < k; i++)
			shape.d[shape.rank++] = xn->shape.d[i];
		for (int i = 0; i < in->shape.rank; i++)
			shape.d[shape.rank++] = in->shape.d[i];
		for (int i = k + 1; i < xn->shape.rank; i++)
			shape.d[shape.rank++] = xn->shape.d[i];
	} else {
		if (in->shape.rank != xn->shape.rank) {
			fg_error(b->d, e->args[1]->loc, "'take_along_axis' needs indices of the rank of %s (%d), got %s",
				 t1, xn->shape.rank, type_of(b, idx, t2, sizeof t2));
			return err_val();
		}
		shape.rank = xn->shape.rank;
		for (int i = 0; i < shape.rank; i++) {
			int64_t a = xn->shape.d[i], c = in->shape.d[i];
			if (i != k && a != c && a != 1 && c != 1) {
				fg_error(b->d, e->loc, "take_along_axis: %s and indices %s do not broadcast on axis %d "
					 "(%lld vs %lld)", t1, type_of(b, idx, t2, sizeof t2), i, (long long)a, (long long)c);
				return err_val();
			}
			shape.d[i] = i == k ? c : a > c ? a : c;
		}
	}
	if (ir_checked_numel(&shape) < 0) {
		fg_error(b->d, e->loc, "the result of '%s' has more than 2^62 elements", e->name);
		return err_val();
	}
	int id = ir_add_node(b, op, xn->dt, &shape, (int[]){x, idx}, 2, e->loc);
	node(b, id)->a.axis = k;
	return node_val(id);
}

/* logsumexp, var, std (x): reductions over `axis` (default the last) with
 * keepdims (default true), var and std dividing by n - correction (default
 * 0); kept whole here, as the other composites. */
static Val build_reduction_composite(Builder *b, const FgExpr *e, FgOp op, int x)
{
	const FgAttrAst *ca = find_attr(e, "correction");
	double correction = 0;

	if (node(b, x)->shape.rank == 0) {
		fg_error(b->d, e->loc, "'%s' needs a tensor of rank 1 or more", e->name);
		return err_val();
	}
	if (ca && attr_real(b, ca, &correction) != 0)
		return err_val();
	if (!(correction >= 0) || isinf(correction)) {
		fg_error(b->d, ca->val.loc, "correction must be a finite number >= 0, got %g", correction);
		return err_val();
	}
	Val v = reduce_node(b, e, op, x, 1u << (node(b, x)->shape.rank - 1));
	if (v.kind == V_NODE)
		node(b, v.node)->a.red.eps = correction;
	return v;
}

/* The one axis a scan or topk runs along: attribute `axis` (default the
 * last) of x, which must have one; -1 after reporting an error. */
static int along_axis(Builder *b, const FgExpr *e, int x)
{
	const FgAttrAst *aa = find_attr(e, "axis");
	int64_t axis = -1;
	char t[256];

	if (node(b, x)->shape.rank == 0) {
		fg_error(b->d, e->args[0]->loc, "'%s' needs a tensor of rank 1 or more, got %s", e->name,
			 type_of(b, x, t, sizeof t));
		return -1;
	}
	if (aa && attr_int(b, aa, &axis) != 0)
		return -1;
	return norm_axis(b, aa ? aa->val.loc : e->loc, axis, node(b, x)->shape.rank, type_of(b, x, t, sizeof t));
}

/* cumsum, cumprod (x, axis=-1, exclusive=false, reverse=false): x's shape
 * and dtype; bool is refused by the type rule. */
static Val build_scan(Builder *b, const FgExpr *e, FgOp op, int x)
{
	const FgAttrAst *ea = find_attr(e, "exclusive"), *ra = find_attr(e, "reverse");
	int exclusive = 0, reverse = 0;
	int k = along_axis(b, e, x);

	if (k < 0 || (ea && attr_bool(b, ea, &exclusive) != 0) || (ra && attr_bool(b, ra, &reverse) != 0))
		return err_val();
	FgShape shape = node(b, x)->shape;
	int id = ir_add_node(b, op, node(b, x)->dt, &shape, &x, 1, e->loc);
	node(b, id)->a.scan.axis = k;
	node(b, id)->a.scan.exclusive = exclusive;
	node(b, id)->a.scan.reverse = reverse;
	return node_val(id);
}

/* values, indices = topk(x, k=8, axis=-1, largest=true): the indices (i32,
 * x's shape with k on the axis), then the values, take_along_axis(x,
 * indices): the node after them, which the call's value is. */
static Val build_topk(Builder *b, const FgExpr *e, int x)
{
	const FgAttrAst *ka = find_attr(e, "k"), *la = find_attr(e, "largest");
	int64_t k = 8;
	int largest = 1;
	char t[256];

	if (e != b->many) {
		fg_error(b->d, e->loc, "'topk' gives two results, values and indices: bind both names, as in "
			 "'values, indices = topk(x, k=8)'");
		return err_val();
	}
	int ax = along_axis(b, e, x);
	if (ax < 0 || (ka && attr_int(b, ka, &k) != 0) || (la && attr_bool(b, la, &largest) != 0))
		return err_val();
	type_of(b, x, t, sizeof t);
	int64_t len = node(b, x)->shape.d[ax];
	if (k < 1 || k > len) {
		fg_error(b->d, ka ? ka->val.loc : e->loc, "k=%lld%s is out of range for axis %d of %s: 1 <= k <= %lld",
			 (long long)k, ka ? "" : " (the default)", ax, t, (long long)len);
		return err_val();
	}
	if (len > INT32_MAX) {
		fg_error(b->d, e->loc, "'topk' over %lld elements: an index past 2^31 - 1 does not fit its i32 result",
			 (long long)len);
		return err_val();
	}
	FgShape shape = node(b, x)->shape;
	shape.d[ax] = k;
	int id = ir_add_node(b, FG_OP_TOPK, FG_DT_I32, &shape, &x, 1, e->loc);
	node(b, id)->a.sel.axis = ax;
	node(b, id)->a.sel.k = k;
	node(b, id)->a.sel.largest = largest;
	int v = ir_add_node(b, FG_OP_TAKE_ALONG_AXIS, node(b, x)->dt, &shape, (int[]){x, id}, 2, e->loc);
	node(b, v)->a.axis = ax;
	return node_val(v);
}

/* cross_entropy(logits, target, axis=-1): per row, logsumexp(logits) -
 * take_along_axis(logits, target); target is i32 of the logits' rank, 1
 * (or k targets) on the axis, broadcast on the others. */
static Val build_cross_entropy(Builder *b, const FgExpr *e, int x, int t)
{
	const FgNode *xn = node(b, x), *tn = node(b, t);
	const FgAttrAst *aa = find_attr(e, "axis");
	uint32_t mask;
	char t1[256], t2[256];

	if (!fg_dtype_is_float(xn->dt)) {
		fg_error(b->d, e->args[0]->loc, "'cross_entropy' needs float logits, got %s", type_of(b, x, t1, sizeof t1));
		return err_val();
	}
	if (tn->dt != FG_DT_I32) {
		fg_error(b->d, e->args[1]->loc, "'cross_entropy' takes i32 targets, got %s; convert with cast(..., dtype=i32)",
			 fg_dtype_name[tn->dt]);
		return err_val();
	}
	if (xn->shape.rank == 0 || tn->shape.rank != xn->shape.rank) {
		fg_error(b->d, e->args[1]->loc, "'cross_entropy' needs targets of the rank of the logits %s, got %s "
			 "(one target per row: [N, 1] for logits [N, C])", type_of(b, x, t1, sizeof t1),
			 type_of(b, t, t2, sizeof t2));
		return err_val();
	}
	mask = 1u << (xn->shape.rank - 1);
	if (aa && attr_axes(b, aa, xn->shape.rank, type_of(b, x, t1, sizeof t1), &mask) != 0)
		return err_val();
	if (mask & (mask - 1)) {
		fg_error(b->d, aa->val.loc, "'cross_entropy' takes one axis, the classes'");
		return err_val();
	}
	FgShape shape = xn->shape;
	for (int i = 0; i < shape.rank; i++) {
		int64_t a = xn->shape.d[i], c = tn->shape.d[i];
		if (!(mask & (1u << i)) && a != c && a != 1 && c != 1) {
			fg_error(b->d, e->loc, "cross_entropy: logits %s and targets %s do not broadcast on axis %d",
				 type_of(b, x, t1, sizeof t1), type_of(b, t, t2, sizeof t2), i);
			return err_val();
		}
		shape.d[i] = mask & (1u << i) ? c : a > c ? a : c;
	}
	int id = ir_add_node(b, FG_OP_CROSS_ENTROPY, xn->dt, &shape, (int[]){x, t}, 2, e->loc);
	node(b, id)->a.red.axes = mask;
	node(b, id)->a.red.keepdims = 1;
	return node_val(id);
}

/* softmax, log_softmax (x), layernorm (x, gamma, beta), rmsnorm (x, w):
 * kept whole here; passes/expand.c writes them out in primitives. */
static Val build_composite(Builder *b, const FgExpr *e, FgOp op, const Val *args, int nargs)
{
	const FgNode *x = node(b, args[0].node);
	const FgAttrAst *ax = find_attr(e, "axis"), *ea = find_attr(e, "eps");
	uint32_t mask;
	double eps = op == FG_OP_RMSNORM ? 1e-6 : 1e-5;
	char t1[256], t2[256];

	if (x->shape.rank == 0) {
		fg_error(b->d, e->loc, "'%s' needs a tensor of rank 1 or more", e->name);
		return err_val();
	}
	mask = 1u << (x->shape.rank - 1);
	if (ax && attr_axes(b, ax, x->shape.rank, type_of(b, args[0].node, t1, sizeof t1), &mask) != 0)
		return err_val();
	if (ea && attr_real(b, ea, &eps) != 0)
		return err_val();
	if (!(eps >= 0) || isinf(eps)) {
		fg_error(b->d, ea->val.loc, "eps must be a finite number >= 0");
		return err_val();
	}
	int ids[3];
	for (int i = 0; i < nargs; i++) {
		const FgNode *n = node(b, args[i].node);
		FgShape r;
		ids[i] = args[i].node;
		if (n->dt != x->dt) {
			fg_error(b->d, e->args[i]->loc, "mixed dtypes in '%s': %s and %s", e->name,
				 fg_dtype_name[x->dt], fg_dtype_name[n->dt]);
			return err_val();
		}
		if (i > 0 && (fg_shape_broadcast(&x->shape, &n->shape, &r) != 0 || !fg_shape_eq(&r, &x->shape))) {
			fg_error(b->d, e->args[i]->loc, "cannot broadcast %s to %s in '%s'",
				 type_of(b, args[i].node, t2, sizeof t2), type_of(b, args[0].node, t1, sizeof t1), e->name);
			return err_val();
		}
	}
	int id = ir_add_node(b, op, x->dt, &x->shape, ids, nargs, e->loc);
	node(b, id)->a.red.axes = mask;
	node(b, id)->a.red.keepdims = 1;
	node(b, id)->a.red.eps = eps;
	return node_val(id);
}

Val ir_build_call(Builder *b, const FgExpr *e, const Val *args)
{
	FgOp op = fg_op_lookup(e->name);
	int nargs = e->nargs;

	if (op == FG_OP_COUNT) {
		int reserved;
		const char *s = fg_op_meaning(e->name, &reserved);
		if (reserved) {
			fg_error(b->d, e->loc, "'%s' is not in the language yet (reserved for a later version)", e->name);
			return err_val();
		}
		if (!s)
			s = fg_op_suggest(e->name);
		if (s)
			fg_error(b->d, e->loc, "unknown op '%s'; did you mean '%s'?", e->name, s);
		else
			fg_error(b->d, e->loc, "unknown op '%s'", e->name);
		return err_val();
	}
	const FgOpInfo *info = &fg_op_info[op];
	if (info->arity >= 0 && nargs != info->arity) {
		fg_error(b->d, e->loc, "'%s' takes %d operand%s, got %d", info->name, info->arity,
			 info->arity == 1 ? "" : "s", nargs);
		return err_val();
	}
	if (info->arity < 0 && nargs < 1) {
		fg_error(b->d, e->loc, "'%s' takes one or more operands", info->name);
		return err_val();
	}
	if (check_attr_keys(b, e, op) != 0)
		return err_val();
	for (int i = 0; i < nargs; i++)
		if (args[i].kind == V_ERR)
			return err_val();
	if (op == FG_OP_IOTA)
		return build_iota(b, e);
	if (info->cls == FG_CLASS_EW)
		return build_ew(b, e, op, args, nargs);
	if (require_tensors(b, e, args, nargs) != 0)
		return err_val();
	if (info->ty == FG_TY_FLOAT || info->ty == FG_TY_NUM || info->ty == FG_TY_BOOL || info->ty == FG_TY_INDEX) {
		if (check_dtypes(b, e, op, args, nargs, node(b, args[0].node)->dt) != 0)
			return err_val();
	}
	if (fg_red_info(op))      /* every row of FG_REDUCTIONS */
		return build_reduce(b, e, op, args[0].node);
	switch (op) {
	case FG_OP_TRANSPOSE:
		return build_transpose(b, e, args[0].node);
	case FG_OP_RESHAPE:
	case FG_OP_BROADCAST_TO:
		return build_reshape(b, e, op, args[0].node);
	case FG_OP_SLICE:
		return build_slice(b, e, args[0].node);
	case FG_OP_CONCAT:
		return build_concat(b, e, args, nargs);
	case FG_OP_MATMUL:
		return build_matmul(b, e, args[0].node, args[1].node);
	case FG_OP_GATHER:
	case FG_OP_TAKE_ALONG_AXIS:
		return build_gather(b, e, op, args[0].node, args[1].node);
	case FG_OP_CUMSUM:
	case FG_OP_CUMPROD:
		return build_scan(b, e, op, args[0].node);
	case FG_OP_TOPK:
		return build_topk(b, e, args[0].node);
	default:
		break;
	}
	FG_ASSERT(info->cls == FG_CLASS_COMPOSITE);
	if (op == FG_OP_LOGSUMEXP || op == FG_OP_VAR || op == FG_OP_STD)
		return build_reduction_composite(b, e, op, args[0].node);
	if (op == FG_OP_CROSS_ENTROPY)
		return build_cross_entropy(b, e, args[0].node, args[1].node);
	return build_composite(b, e, op, args, nargs);
}

