/*
 * access.c - loads and stores.  Operands outside the group are loaded from
 * memory and converted to the compute type (f32 for the float dtypes and
 * bool, int for i32); values are rounded to their dtype only where they
 * are stored.  Lanes that sit side by side in memory, aligned, become one
 * vector load or store (fg_ldv, fg_stv in runtime/fg_device.cuh).
 *
 * Writes.  A written value whose shape broadcasts into the group's space
 * is stored by the threads whose broadcast coordinates are 0 (each element
 * exactly once); a loop group's other writes (a side output behind a
 * transpose) get a loop of their own over their own shape.  Row and column
 * reductions store values of the reduced shape once per row or column.
 */
#include <string.h>

#include "cuda.h"

/* The vector of stored elements (from pointer p) that lane x of a read
 * of node id belongs to: one load for all the lanes. */
static Val load_vector(Kern *k, int id, const char *p, const Ix *x)
{
	const FgNode *n = &k->g->nodes[id];
	Ix x0 = cu_lane0(k, x);
	const char *key = cu_fmt(k->a, "V%s", cu_memo_key(k, id, &x0));
	for (int i = k->memo.n - 1; i >= 0; i--)
		if (k->memo.v[i].id == id && strcmp(k->memo.v[i].key, key) == 0)
			return k->memo.v[i].v;
	int lv = cu_ix_level(&x0, &n->shape);
	const char *w = cu_fresh(k, lv, cu_fmt(k->a, "w_%s", k->plan->names[id]));
	/* a float gemm's result waits in scratch as f32 */
	const char *t = id == k->mm && n->dt != FG_DT_I32 ? "float" : fg_dtype_info[n->dt].cuda_store;
	cu_kline(k, lv, NULL, "const FgVec<%s, %d> %s = fg_ldv%s<%d>(%s + %s);", t, x->vw, w, k->nc ? "_nc" : "", x->vw,
	      p, cu_paren(k->a, cu_ix_linear(k, &x0, &n->shape)));
	Memo m = {id, key, {w, lv}};
	fg_vec_push(k->a, &k->memo, m);
	return m.v;
}

/* Loads node id (a read of the group, or the gemm's result) at x. */
Val cu_load(Kern *k, int id, const Ix *x)
{
	const FgShape *s = cu_shape_of(k, id);
	const char *p;
	if (id == k->mm && k->acc[0]) {
		return (Val){k->acc[x->vw > 1 ? x->lane : 0], 0};
	} else if (id == k->mm) {
		p = cu_fmt(k->a, "mm_%s", k->plan->names[id]);
	} else {
		p = cu_tensor_param(k, id);
		int found = 0;
		for (int r = 0; r < k->gr->nreads; r++)
			if (k->gr->reads[r] == id) {
				k->used[r] = 1;
				found = 1;
			}
		if (!found) {
			cu_kern_error(k, id, "'%s' is neither computed by the group nor read by it",
				   k->plan->names[id]);
			return (Val){"0", 0};
		}
	}
	const FgNode *n = &k->g->nodes[id];
	if (cu_lanes_contiguous(x, s)) {
		Val w = load_vector(k, id, p, x);
		const char *v = cu_fresh(k, w.lv, cu_fmt(k->a, "v_%s", k->plan->names[id]));
		cu_kline(k, w.lv, NULL, "const %s %s = fg_read(%s.v[%d]);", fg_dtype_info[n->dt].cuda, v, w.e, x->lane);
		return (Val){v, w.lv};
	}
	int lv = cu_ix_level(x, s);
	const char *v = cu_fresh(k, lv, cu_fmt(k->a, "v_%s", k->plan->names[id]));
	if (k->nc)
		cu_kline(k, lv, NULL, "const %s %s = fg_read(__ldg(%s + %s));", fg_dtype_info[n->dt].cuda, v, p,
		      cu_paren(k->a, cu_ix_linear(k, x, s)));
	else
		cu_kline(k, lv, NULL, "const %s %s = fg_read(%s[%s]);", fg_dtype_info[n->dt].cuda, v, p, cu_ix_linear(k, x, s));
	return (Val){v, lv};
}

/* Stores written value w at index x of its shape, when cond holds. */
void cu_store(Kern *k, int w, const Ix *x, const char *cond, const char *extra_cond)
{
	Val v = cu_gen(k, w, x);
	const FgNode *n = &k->g->nodes[w];
	const char *c = cond;
	if (extra_cond)
		c = c ? cu_fmt(k->a, "%s && %s", extra_cond, c) : extra_cond;
	const char *st = cu_fmt(k->a, "%s[%s] = %s(%s);", cu_tensor_param(k, w), cu_ix_linear(k, x, &n->shape),
			     fg_dtype_info[n->dt].store, v.e);
	if (c)
		cu_kline(k, k->depth, NULL, "if (%s)", c), cu_kline(k, k->depth, NULL, "\t%s", st);
	else
		cu_kline(k, k->depth, NULL, "%s", st);
}

/* Stores written value w at the vw lanes xs, each when its conds[l]
 * holds (NULL: always) and extra_cond does: one vector store where the
 * lanes lie side by side in memory, else lane by lane. */
void cu_store_lanes(Kern *k, int w, const Ix *xs, const char *const *conds, const char *extra_cond)
{
	const FgNode *n = &k->g->nodes[w];
	int vw = xs[0].vw, vector = cu_lanes_contiguous(&xs[0], &n->shape);
	for (int l = 0; l < vw; l++)
		vector &= conds[l] == NULL;
	if (!vector) {
		for (int l = 0; l < vw; l++)
			cu_store(k, w, &xs[l], conds[l], extra_cond);
		return;
	}
	const char *e = "";
	for (int l = 0; l < vw; l++)
		e = cu_fmt(k->a, "%s%s%s(%s)", e, l ? ", " : "", fg_dtype_info[n->dt].store, cu_gen(k, w, &xs[l]).e);
	Ix x0 = cu_lane0(k, &xs[0]);
	const char *st = cu_fmt(k->a, "fg_stv(%s + %s, FgVec<%s, %d>{{%s}});", cu_tensor_param(k, w),
			     cu_paren(k->a, cu_ix_linear(k, &x0, &n->shape)), fg_dtype_info[n->dt].cuda_store, vw, e);
	if (extra_cond)
		cu_kline(k, k->depth, NULL, "if (%s)", extra_cond), cu_kline(k, k->depth, NULL, "\t%s", st);
	else
		cu_kline(k, k->depth, NULL, "%s", st);
}
