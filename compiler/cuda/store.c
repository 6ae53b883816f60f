/*
 * store.c - stores: a written value, computed at an index (cu_gen) in its
 * compute type, converted to its dtype (fg_to_NAME) and stored; lanes that
 * sit side by side in memory, aligned, become one vector store (fg_stv in
 * runtime/fg_device.cuh).
 *
 * Writes.  A written value whose shape broadcasts into the group's space
 * is stored by the threads whose broadcast coordinates are 0 (each element
 * exactly once); a loop group's other writes (a side output behind a
 * transpose) get a loop of their own over their own shape.  Row and column
 * reductions store values of the reduced shape once per row or column.
 */
#include <string.h>

#include "cuda.h"

/* Stores written value w at index x of its shape, when cond holds. */
void cu_store(Kern *k, int w, const Ix *x, const char *cond, const char *extra_cond)
{
	Val v = cu_gen(k, w, x);
	const FgNode *n = &k->g->nodes[w];
	const char *c = cond;
	if (extra_cond)
		c = c ? cu_fmt(k->a, "%s && %s", extra_cond, c) : extra_cond;
	const char *st = cu_fmt(k->a, "%s[%s] = %s(%s);", cu_tensor_param(k, w), cu_ix_linear(k, x, &n->shape),
			     fg_dtype_info[n->dt].store, cu_stored_form(k, v, n->dt));
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
		e = cu_fmt(k->a, "%s%s%s(%s)", e, l ? ", " : "", fg_dtype_info[n->dt].store,
			   cu_stored_form(k, cu_gen(k, w, &xs[l]), n->dt));
	Ix x0 = cu_lane0(k, &xs[0]);
	const char *st = cu_fmt(k->a, "fg_stv(%s + %s, FgVec<%s, %d>{{%s}});", cu_tensor_param(k, w),
			     cu_paren(k->a, cu_ix_linear(k, &x0, &n->shape)), fg_dtype_info[n->dt].cuda_store, vw, e);
	if (extra_cond)
		cu_kline(k, k->depth, NULL, "if (%s)", extra_cond), cu_kline(k, k->depth, NULL, "\t%s", st);
	else
		cu_kline(k, k->depth, NULL, "%s", st);
}
