/*
 * loop.c - a loop group's kernel: one grid-stride loop over the elements
 * of the group's space, each thread carrying its elements through the
 * whole chain in registers (vw neighbouring elements per thread where the
 * innermost dim allows: one 16-byte access per operand; one element where
 * the chain's arithmetic bounds it, not its traffic), storing every
 * write that fits the space; each other write (a side output behind a
 * transpose) gets a loop of its own over its own shape.  A gemm's
 * epilogue kernel after cuBLASLt is this kernel too, reading the matmul
 * from scratch.
 */
#include <string.h>

#include "cuda.h"

/* A loop kernel over the shape of `space`: writes that fit it in one
 * grid-stride loop, each other write in a loop of its own.  Also the
 * epilogue of a gemm (k->mm read from scratch). */
void cu_loop_kernel(Emit *E, Kern *k, int space_id, const Param *extra, int nextra, const char *what)
{
	const FgShape *S = cu_shape_of(k, space_id);
	int64_t N = cu_numel(S);
	int vd = cu_innermost(S);
	int vw = vd < 0 ? 1 : cu_lane_width(k, S->d[vd], 1);
	/* An element whose arithmetic is far past its traffic gains nothing
	 * from 16-byte accesses, and each lane repeats the whole chain's code:
	 * chain80 (bench/graphs) ran 0.2534 ms at one lane, 0.2755 at two and
	 * 0.3128 at four on an H100 (docs/performance.md v40). */
	double issue = vw > 1 ? cu_issue_per_byte(k) : 0;
	int compute = issue > LANES_ISSUE;
	if (compute)
		vw = 1;

	cu_kopen(k);
	const char *base = "i";
	if (vw > 1) {
		base = cu_fresh(k, 1, "b");
		cu_kline(k, 1, base, "const %s %s = i * %d;", k->idx, base, vw);
	}
	Ix root = cu_ix_from_lin(k, S, base, 1, "i");
	for (int w = 0; w < k->gr->nwrites; w++) {
		int id = k->gr->writes[w];
		const FgShape *ws = cu_shape_of(k, id);
		if (!fg_kind_fits(ws, S))
			continue;
		Ix ys[MAX_LANES];
		const char *conds[MAX_LANES];
		for (int l = 0; l < vw; l++) {
			Ix x = vw > 1 ? cu_lane_of(k, &root, vd, vw, l) : root;
			ys[l] = cu_ix_bcast(&x, S, ws);
			conds[l] = cu_write_cond(k, &x, S, ws);
		}
		if (vw > 1)
			cu_store_lanes(k, id, ys, conds, NULL);
		else
			cu_store(k, id, &ys[0], conds[0], NULL);
	}
	cu_kclose(k, cu_stride_loop(k, "i", N / vw));
	int64_t biggest = N;
	for (int w = 0; w < k->gr->nwrites; w++) {
		int id = k->gr->writes[w];
		const FgShape *ws = cu_shape_of(k, id);
		if (fg_kind_fits(ws, S))
			continue;
		cu_kopen(k);
		Ix own_ix = cu_ix_from_lin(k, ws, "i", 1, "i");
		cu_store(k, id, &own_ix, NULL, NULL);
		cu_kclose(k, cu_stride_loop(k, "i", cu_numel(ws)));
		biggest = cu_numel(ws) > biggest ? cu_numel(ws) : biggest;
	}
	if (k->failed)
		return;
	cu_path(E, k->gi, vw > 1 ? CU_PATH_LOOP_LANES : compute ? CU_PATH_LOOP_COMPUTE : CU_PATH_LOOP);
	if (what)
		cu_emit_comment(E, k->gi, vw > 1 ? cu_fmt(E->a, "%s; %d lanes a thread", what, vw)
				  : compute ? cu_fmt(E->a, "%s; one element a thread: %.0f instructions a byte of traffic, "
							   "past %d", what, issue, LANES_ISSUE)
				  : what);
	const char *args = cu_emit_kernel(k, cu_kname(k, NULL), LOOP_BLOCK, extra, nextra, 1);
	cu_add_launch(E, cu_kname(k, NULL), k->gi, cu_grid_for(biggest / vw, LOOP_BLOCK), LOOP_BLOCK, args);
}

void cu_emit_loop(Emit *E, Kern *k)
{
	int s = cu_sink(k);
	cu_loop_kernel(E, k, s, NULL, 0, cu_fmt(E->a, "loop over %s", cu_shape_str(E->a, E->g->nodes[s].dt, cu_shape_of(k, s))));
}
