/*
 * reduction.c - what the row-reduction and reduction kernels share: the
 * reduced and kept dims of the space, accumulators and their steps, the
 * result index a thread sees, and where each write goes (once per row or
 * column, or over the space).
 */
#include <math.h>
#include <string.h>

#include "cuda.h"

static int is_arg(const FgNode *n)
{
	return fg_op_info[n->op].ty == FG_TY_INDEX;
}

/* The type a reduction's values are computed in: argmax's operand's. */
static const char *value_type(const Kern *k, const FgNode *n)
{
	FgDtype t = is_arg(n) ? k->g->nodes[n->in[0]].dt : n->dt;
	return fg_dtype_is_int(t) ? "int" : "float";
}

const char *cu_acc_type(const Kern *k, const FgNode *n)
{
	if (is_arg(n))
		return cu_fmt(k->a, "FgArg<%s>", value_type(k, n));
	if (fg_dtype_is_int(n->dt))
		return n->op == FG_OP_SUM ? "long long" : "int";
	/* Column and full sums run long serial chains: f64 keeps them
	 * within the RMSE gate whatever the length. */
	if (k->gr->kind == FG_GROUP_REDUCE && (n->op == FG_OP_SUM || n->op == FG_OP_MEAN))
		return "double";
	return "float";
}

const char *cu_red_init(const Kern *k, const FgNode *n)
{
	int i32 = strcmp(value_type(k, n), "int") == 0;
	double v = fg_red_info(n->op)->identity;
	const char *init = v == 1 ? "1" : "0";
	if (isinf(v))
		init = v < 0 ? (i32 ? "INT_MIN" : "-CUDART_INF_F") : (i32 ? "INT_MAX" : "CUDART_INF_F");
	/* an index past every element's: the first of equals wins */
	return is_arg(n) ? cu_fmt(k->a, "%s{%s, INT_MAX}", cu_acc_type(k, n), init) : init;
}

const char *cu_red_functor(const FgNode *n)
{
	return fg_red_info(n->op)->functor;
}

/* The index among the reduced elements, in C order, of the element at
 * space index x (argmax's). */
static const char *red_index(Kern *k, const FgNode *n, const Ix *x)
{
	const FgShape *s = cu_shape_of(k, n->in[0]);
	const char *e = NULL;
	int64_t stride = 1;
	for (int i = s->rank - 1; i >= 0; i--) {
		if (!(n->a.red.axes >> i & 1) || s->d[i] == 1)
			continue;
		const char *t = stride == 1 ? cu_paren(k->a, x->c[i]) : cu_fmt(k->a, "%s * %lld", cu_paren(k->a, x->c[i]),
										(long long)stride);
		e = e ? cu_fmt(k->a, "%s + %s", t, e) : t;
		stride *= s->d[i];
	}
	return e ? e : "0";
}

/* acc = acc (op) v, v at space index x: FG_REDUCTIONS' cuda step */
const char *cu_red_step(Kern *k, const FgNode *n, const char *acc, const char *v, const Ix *x)
{
	const char *ops[] = {acc, cu_fmt(k->a, "(%s)%s", value_type(k, n), cu_paren(k->a, v)),
			     is_arg(n) ? red_index(k, n, x) : "0"};
	return fg_op_subst(k->a, fg_red_info(n->op)->cuda_step, ops, 3);
}

/* acc = acc (op) other, two accumulators: the functor where a step would
 * not do (argmax's pairs), else the step. */
const char *cu_red_combine(Kern *k, const FgNode *n, const char *acc, const char *other)
{
	if (is_arg(n))
		return cu_fmt(k->a, "%s = %s(%s, %s);", acc, cu_red_functor(n), acc, other);
	const char *ops[] = {acc, cu_fmt(k->a, "(%s)%s", cu_acc_type(k, n), cu_paren(k->a, other))};
	return fg_op_subst(k->a, fg_red_info(n->op)->cuda_step, ops, 2);
}

/* The reduced value from the final accumulator: a mean divides, an
 * integer sum saturates, a float sum in f64 narrows, argmax keeps the
 * index. */
const char *cu_red_final(Kern *k, const FgNode *n, const char *acc, int64_t count)
{
	if (is_arg(n))
		return cu_fmt(k->a, "%s.i", acc);
	if (fg_dtype_is_int(n->dt))
		return n->op == FG_OP_SUM ? cu_fmt(k->a, "fg_cast_%s(%s)", fg_dtype_name[n->dt], acc) : acc;
	if (n->op == FG_OP_MEAN && strcmp(cu_acc_type(k, n), "float") == 0)
		return cu_fmt(k->a, "%s / %lld.0f", acc, (long long)count);
	if (n->op == FG_OP_MEAN)
		return cu_fmt(k->a, "(float)(%s / %lld.0)", acc, (long long)count);
	return strcmp(cu_acc_type(k, n), "float") == 0 ? acc : cu_fmt(k->a, "(float)%s", acc);
}

static int is_reduction(const Kern *k, int id)
{
	return fg_op_info[k->g->nodes[id].op].cls == FG_CLASS_REDUCE && cu_is_member(k, id);
}

/* Fills ri from the group's first reduction; -1 when it has none. */
static int red_info(Kern *k, RedInfo *ri)
{
	int first = -1;
	for (int i = 0; i < k->gr->nnodes && first < 0; i++)
		if (is_reduction(k, k->gr->nodes[i]))
			first = k->gr->nodes[i];
	if (first < 0)
		return -1;
	const FgNode *r = &k->g->nodes[first];
	memset(ri, 0, sizeof *ri);
	ri->S = *cu_shape_of(k, r->in[0]);
	ri->axes = r->a.red.axes;
	ri->nkept = ri->nred = 1;
	for (int i = 0; i < ri->S.rank; i++) {
		if (ri->axes >> i & 1) {
			ri->red.d[ri->red.rank++] = ri->S.d[i];
			ri->nred *= ri->S.d[i];
		} else {
			ri->kept.d[ri->kept.rank++] = ri->S.d[i];
			ri->nkept *= ri->S.d[i];
		}
	}
	for (int i = 0; i < k->gr->nnodes; i++) {
		int id = k->gr->nodes[i];
		const FgNode *n = &k->g->nodes[id];
		if (is_reduction(k, id) &&
		    (n->a.red.axes != ri->axes || !fg_shape_eq(cu_shape_of(k, n->in[0]), &ri->S)))
			cu_kern_error(k, id, "reductions over different axes or shapes in one group");
	}
	return first;
}

/* A space index from kept coordinates kc and reduced coordinates rc. */
Ix cu_merge_ix(const RedInfo *ri, const Ix *kc, const Ix *rc, const char *lin, int lin_lv)
{
	Ix x;
	int a = 0, b = 0;
	memset(&x, 0, sizeof x);
	x.rank = ri->S.rank;
	for (int i = 0; i < ri->S.rank; i++) {
		if (ri->axes >> i & 1) {
			x.c[i] = rc->c[b];
			x.lv[i] = rc->lv[b++];
		} else {
			x.c[i] = kc->c[a];
			x.lv[i] = kc->lv[a++];
		}
	}
	x.lin = lin;
	x.lin_lv = lin_lv;
	return x;
}

/* The index a thread sees of reduction id's result, from kept coords kc
 * (flat index lin over the kept dims). */
Ix cu_result_ix(const Kern *k, const RedInfo *ri, int id, const Ix *kc, const char *lin, int lv)
{
	const FgNode *n = &k->g->nodes[id];
	Ix x;
	int a = 0;
	memset(&x, 0, sizeof x);
	x.rank = n->shape.rank;
	for (int i = 0, o = 0; i < ri->S.rank; i++) {
		if (ri->axes >> i & 1) {
			if (n->a.red.keepdims)
				x.c[o++] = "0";
		} else {
			x.c[o] = kc->c[a];
			x.lv[o++] = kc->lv[a++];
		}
	}
	x.lin = lin;
	x.lin_lv = lv;
	return x;
}

/* Per member: whether it depends on one of the group's reductions. */
unsigned char *cu_after_reduction(Kern *k)
{
	unsigned char *dep = fg_arena_alloc(k->a, (size_t)k->g->nnodes + 1);
	for (int i = 0; i < k->gr->nnodes; i++) {
		int id = k->gr->nodes[i];
		const FgNode *n = &k->g->nodes[id];
		if (!cu_is_member(k, id))
			continue;
		dep[id] = is_reduction(k, id);
		for (int j = 0; j < n->nin; j++)
			dep[id] |= dep[n->in[j]];
	}
	return dep;
}

void cu_declare_reds(Kern *k, int lv, int pass, const int *passes)
{
	for (int i = 0; i < k->reds.n; i++) {
		Red *r = &k->reds.v[i];
		if (passes && passes[i] != pass)
			continue;
		const FgNode *n = &k->g->nodes[r->id];
		r->acc = cu_fresh(k, lv, cu_fmt(k->a, "acc_%s", cu_name(k, r->id)));
		cu_kline(k, lv, NULL, "%s %s = %s;", cu_acc_type(k, n), r->acc, cu_red_init(k, n));
	}
}

/* Accumulates the reductions of `pass` (all when passes is NULL) at
 * space index x, in the current scope. */
void cu_accumulate(Kern *k, const Ix *x, int pass, const int *passes)
{
	for (int i = 0; i < k->reds.n; i++) {
		Red *r = &k->reds.v[i];
		if (passes && passes[i] != pass)
			continue;
		const FgNode *n = &k->g->nodes[r->id];
		Val v = cu_gen(k, n->in[0], x);    /* its input is the space */
		cu_kline(k, k->depth, NULL, "%s", cu_red_step(k, n, r->acc, v.e, x));
	}
}

/* The pass of each of the group's reductions (k->reds) into passes[]:
 * one more than the reductions its input needs (softmax: the max in
 * pass 1, the sum of exps in pass 2); returns their count. */
int cu_red_passes(Kern *k, int *passes)
{
	int *need = fg_arena_array(k->a, (size_t)k->g->nnodes + 1, sizeof(int));
	int npass = 0;
	for (int i = 0; i < k->gr->nnodes; i++) {
		int id = k->gr->nodes[i], m = 0;
		const FgNode *n = &k->g->nodes[id];
		if (!cu_is_member(k, id))
			continue;
		for (int j = 0; j < n->nin; j++)
			m = need[n->in[j]] > m ? need[n->in[j]] : m;
		need[id] = m;
		for (int r = 0; r < k->reds.n; r++)
			if (k->reds.v[r].id == id) {
				passes[r] = need[id] = m + 1;
				npass = m + 1 > npass ? m + 1 : npass;
			}
	}
	return npass;
}

void cu_collect_reds(Kern *k)
{
	for (int i = 0; i < k->gr->nnodes; i++) {
		int id = k->gr->nodes[i];
		if (!is_reduction(k, id))
			continue;
		Red r;
		memset(&r, 0, sizeof r);
		r.id = id;
		fg_vec_push(k->a, &k->reds, r);
	}
}

/* red_info, then the group's reductions into k->reds; the first one, or
 * -1 when the group (of the kind `what` names) has none or failed. */
int cu_group_reductions(Kern *k, RedInfo *ri, const char *what)
{
	int first = red_info(k, ri);
	if (first < 0 && !k->failed)
		cu_kern_error(k, -1, "%s without a reduction", what);
	if (first < 0 || k->failed)
		return -1;
	cu_collect_reds(k);
	return first;
}

const char *cu_row_desc(Emit *E, const RedInfo *ri, const char *how)
{
	return cu_fmt(E->a, "%lld %s of %lld over %s; %s", (long long)ri->nkept,
		   ri->nkept == 1 ? "row" : "rows", (long long)ri->nred,
		   cu_shape_str(E->a, FG_DT_F32, &ri->S) + 3, how);
}

/* Stores the writes of the reduced shape (FG_PLACE_ROWS) at the result index `at`
 * of the group's reduction, once it is reduced, when extra_cond holds
 * (NULL: always). */
void cu_store_reduced(Kern *k, int first, const unsigned char *dep, const Ix *at,
			  const char *extra_cond)
{
	for (int w = 0; w < k->gr->nwrites; w++) {
		int id = k->gr->writes[w];
		FgPlace where = fg_kind_write_place(k->g, first, id, dep[id]);
		if (where == FG_PLACE_ROWS) {
			Ix y = cu_ix_bcast(at, cu_shape_of(k, first), cu_shape_of(k, id));
			cu_store(k, id, &y, cu_write_cond(k, at, cu_shape_of(k, first), cu_shape_of(k, id)), extra_cond);
		} else if (where == FG_PLACE_NONE) {
			cu_kern_error(k, id, "'%s' %s is written, but it fits neither the reduction's input nor its result",
				   k->plan->names[id], cu_shape_str(k->a, k->g->nodes[id].dt, cu_shape_of(k, id)));
		}
	}
}

/* Stores the writes of the space's shape (FG_PLACE_SPACE: the epilogue, or values
 * before the reduction) at the nl lanes xs of the space, when extra_cond
 * holds (NULL: always). */
void cu_store_space(Kern *k, const RedInfo *ri, int first, const unsigned char *dep, const Ix *xs, int nl,
			const char *extra_cond)
{
	for (int w = 0; w < k->gr->nwrites; w++) {
		int id = k->gr->writes[w];
		if (fg_kind_write_place(k->g, first, id, dep[id]) != FG_PLACE_SPACE)
			continue;
		Ix ys[MAX_LANES];
		const char *conds[MAX_LANES];
		for (int l = 0; l < nl; l++) {
			ys[l] = cu_ix_bcast(&xs[l], &ri->S, cu_shape_of(k, id));
			conds[l] = cu_write_cond(k, &xs[l], &ri->S, cu_shape_of(k, id));
		}
		if (nl > 1)
			cu_store_lanes(k, id, ys, conds, extra_cond);
		else
			cu_store(k, id, &ys[0], conds[0], extra_cond);
	}
}

/* Whether the group writes a value over the space (FG_PLACE_SPACE). */
int cu_writes_space(const Kern *k, int first, const unsigned char *dep)
{
	for (int w = 0; w < k->gr->nwrites; w++)
		if (fg_kind_write_place(k->g, first, k->gr->writes[w], dep[k->gr->writes[w]]) == FG_PLACE_SPACE)
			return 1;
	return 0;
}
