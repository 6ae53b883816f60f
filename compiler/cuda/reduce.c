/*
 * reduce.c - a reduction group over other axes (columns, middle axes, all
 * of them): a thread per result element looping over the reduced ones
 * when they are few, blocks that split the reduced elements into slabs
 * with a second kernel combining the slabs' partials in order when they
 * are many, and two launches (partials, then one block) for a reduction
 * over all axes.  Deterministic: the same partials every run.  Sibling
 * reductions of one space over the same axes (dgamma's and dbeta's
 * column sums of one dy) run in one kernel: each element read once,
 * every reduction accumulated, a partial buffer and a combination each.
 */
#include <string.h>

#include "cuda.h"

#define SPLIT_COLS 32           /* result elements a block of a split reduction covers */
#define SPLIT_ROWS 8            /* its threads per result element */
#define SPLIT_MIN 64            /* reduced elements a thread takes, at least */
#define SPLIT_BLOCKS 2048       /* blocks a split reduction aims for */

/* The name of reduction i's partials (in scratch) or shared array: the
 * first keeps the plain name. */
static const char *red_name(Kern *k, const char *base, int i)
{
	return i ? cu_fmt(k->a, "%s%d", base, i) : base;
}

/* A parameter per reduction of k: its partials, `per` accumulators each,
 * one after the other in scratch (8 bytes an accumulator at most); const
 * for the kernel that reads them. */
static Param *partial_params(Kern *k, int64_t per, int in)
{
	Param *p = fg_arena_array(k->a, (size_t)k->reds.n + 1, sizeof *p);
	for (int i = 0; i < k->reds.n; i++) {
		const char *acct = cu_acc_type(k, &k->g->nodes[k->reds.v[i].id]);
		p[i].decl = cu_fmt(k->a, "%s%s *__restrict__ %s", in ? "const " : "", acct, red_name(k, "partial", i));
		p[i].arg = i ? cu_fmt(k->a, "(%s *)((char *)ctx->scratch + %lld)", acct, (long long)(i * per * 8))
			     : cu_fmt(k->a, "(%s *)ctx->scratch", acct);
	}
	return p;
}

/* Each reduction's final value, at result index `at` of level lv, then
 * the group's writes of the reduced shape. */
static void finish_reds(Kern *k, int first, const unsigned char *dep, const Ix *at, int lv, int64_t nred,
			const char *cond)
{
	for (int i = 0; i < k->reds.n; i++) {
		Red *rd = &k->reds.v[i];
		const FgNode *n = &k->g->nodes[rd->id];
		rd->at = *at;
		rd->lv = lv;
		rd->var = cu_fresh(k, lv, cu_fmt(k->a, "v_%s", cu_name(k, rd->id)));
		cu_kline(k, lv, NULL, "const %s %s = %s;", fg_dtype_info[n->dt].cuda, rd->var,
			 cu_red_final(k, n, rd->acc, nred));
	}
	cu_store_reduced(k, first, dep, at, cond);
}

/* Other axes, many reduced elements: a block covers SPLIT_COLS elements of
 * the result with SPLIT_ROWS threads each (neighbouring threads read
 * neighbouring elements, coalesced), and the reduced elements split into
 * `nsplit` slabs, one per block, so that enough blocks run.  Each block
 * combines its threads in order; with several slabs a second kernel
 * combines the slabs' partials (scratch) in order and runs the epilogue.
 * Deterministic: the same partials every run. */
static void emit_reduce_split(Emit *E, Kern *k, const RedInfo *ri, int first, const unsigned char *dep)
{
	int nr = k->reds.n;
	int64_t nbx = (ri->nkept + SPLIT_COLS - 1) / SPLIT_COLS;
	int64_t nsplit = (SPLIT_BLOCKS + nbx - 1) / nbx;
	if (nsplit > ri->nred / SPLIT_MIN)
		nsplit = ri->nred / SPLIT_MIN;
	if (nsplit < 1)
		nsplit = 1;
	int64_t chunk = (ri->nred + nsplit - 1) / nsplit;
	nsplit = (ri->nred + chunk - 1) / chunk;
	const char *pname = cu_kname(k, nsplit > 1 ? "partial" : NULL);
	Param *part_out = partial_params(k, nsplit * ri->nkept, 0);
	Param *part_in = partial_params(k, nsplit * ri->nkept, 1);
	if (nsplit > 1)
		cu_use_scratch(E, k->gi, nr * nsplit * ri->nkept * 8);

	for (int i = 0; i < nr; i++)
		cu_kline(k, 0, NULL, "__shared__ %s %s[%d][%d];", cu_acc_type(k, &k->g->nodes[k->reds.v[i].id]),
			 red_name(k, "part", i), SPLIT_ROWS, SPLIT_COLS + 1);
	cu_kline(k, 0, NULL, "const int tx = threadIdx.x %% %d, ty = threadIdx.x / %d;", SPLIT_COLS, SPLIT_COLS);
	cu_kline(k, 0, NULL, "const %s o = (%s)(blockIdx.x %% %lld) * %d + tx;", k->idx, k->idx, (long long)nbx, SPLIT_COLS);
	cu_kline(k, 0, NULL, "const %s r0 = (%s)(blockIdx.x / %lld) * %lld;", k->idx, k->idx, (long long)nbx,
	      (long long)chunk);
	cu_declare_reds(k, 0, 0, NULL);
	cu_kopen(k);       /* 1: this thread's element of the result */
	Ix kc = cu_ix_from_lin(k, &ri->kept, "o", 1, "o");
	cu_kopen(k);       /* 2: its share of the slab */
	Ix rc = cu_ix_from_lin(k, &ri->red, "r", 2, "r");
	Ix x = cu_merge_ix(ri, &kc, &rc, NULL, 0);
	cu_accumulate(k, &x, 0, NULL);
	cu_store_space(k, ri, first, dep, &x, 1, NULL);
	cu_kclose(k, cu_fmt(k->a, "for (%s r = r0 + ty; r < %s; r += %d)", k->idx,
		      nsplit > 1 ? cu_fmt(k->a, "min(r0 + %lld, (%s)%lld)", (long long)chunk, k->idx, (long long)ri->nred)
				 : cu_fmt(k->a, "%lld", (long long)ri->nred), SPLIT_ROWS));
	cu_kclose(k, cu_fmt(k->a, "if (o < %lld)", (long long)ri->nkept));
	for (int i = 0; i < nr; i++)
		cu_kline(k, 0, NULL, "%s[ty][tx] = %s;", red_name(k, "part", i), k->reds.v[i].acc);
	cu_kline(k, 0, NULL, "__syncthreads();");
	cu_kopen(k);       /* 1: the block's combinations, in order */
	for (int i = 0; i < nr; i++) {
		Red *rd = &k->reds.v[i];
		const char *part = red_name(k, "part", i);
		cu_kline(k, 1, NULL, "%s = %s[0][tx];", rd->acc, part);
		cu_kline(k, 1, NULL, "for (int q = 1; q < %d; q++)", SPLIT_ROWS);
		cu_kline(k, 1, NULL, "	%s", cu_red_combine(k, &k->g->nodes[rd->id], rd->acc,
							  cu_fmt(k->a, "%s[q][tx]", part)));
		if (nsplit > 1)
			cu_kline(k, 1, NULL, "%s[(blockIdx.x / %lld) * %lld + o] = %s;", red_name(k, "partial", i),
				 (long long)nbx, (long long)ri->nkept, rd->acc);
	}
	if (nsplit == 1) {
		Ix kc2 = cu_ix_from_lin(k, &ri->kept, "o", 1, "o");
		Ix at = cu_result_ix(k, ri, first, &kc2, "o", 1);
		finish_reds(k, first, dep, &at, 1, ri->nred, NULL);
	}
	cu_kclose(k, cu_fmt(k->a, "if (ty == 0 && o < %lld)", (long long)ri->nkept));
	if (k->failed)
		return;
	const char *how = cu_fmt(E->a, "reduce %s over axes %s to %lld elements; blocks of %d x %d threads",
			      cu_shape_str(E->a, FG_DT_F32, &ri->S) + 3, fg_axes_list(E->a, ri->axes), (long long)ri->nkept,
			      SPLIT_COLS, SPLIT_ROWS);
	int any_s = cu_writes_space(k, first, dep);
	cu_path(E, k->gi, nsplit > 1 ? CU_PATH_RED_SLABS : CU_PATH_RED_SPLIT1);
	cu_emit_comment(E, k->gi, nsplit > 1 ? cu_fmt(E->a, "%s, the reduced axes in %lld slabs: partials into scratch", how,
					       (long long)nsplit) : how);
	const char *args = cu_emit_kernel(k, pname, SPLIT_COLS * SPLIT_ROWS, nsplit > 1 ? part_out : NULL,
				       nsplit > 1 ? nr : 0, nsplit > 1 ? any_s : 1);
	cu_add_launch(E, pname, k->gi, nbx * nsplit, SPLIT_COLS * SPLIT_ROWS, args);
	if (nsplit == 1)
		return;

	/* the slabs' partials, in order, then the epilogue: a fresh kernel */
	Kern k2;
	cu_kern_init(&k2, E, k->gi);
	cu_collect_reds(&k2);
	cu_kopen(&k2);
	Ix kc2 = cu_ix_from_lin(&k2, &ri->kept, "o", 1, "o");
	Ix at2 = cu_result_ix(&k2, ri, first, &kc2, "o", 1);
	for (int i = 0; i < nr; i++) {
		Red *r2 = &k2.reds.v[i];
		const FgNode *n = &k2.g->nodes[r2->id];
		const char *partial = red_name(&k2, "partial", i);
		r2->acc = cu_fresh(&k2, 1, cu_fmt(k2.a, "acc_%s", cu_name(&k2, r2->id)));
		cu_kline(&k2, 1, NULL, "%s %s = %s[o];", cu_acc_type(&k2, n), r2->acc, partial);
		cu_kline(&k2, 1, NULL, "for (int s = 1; s < %lld; s++)", (long long)nsplit);
		cu_kline(&k2, 1, NULL, "	%s", cu_red_combine(&k2, n, r2->acc, cu_fmt(k2.a, "%s[s * %lld + o]", partial,
										  (long long)ri->nkept)));
	}
	finish_reds(&k2, first, dep, &at2, 1, ri->nred, NULL);
	cu_kclose(&k2, cu_stride_loop(&k2, "o", ri->nkept));
	k->failed |= k2.failed;
	if (k2.failed)
		return;
	cu_out(E, "/* %s, stage 2 of 2: a thread per element combines the %lld partials in order, then the "
	       "epilogue */\n", cu_kname(k, NULL), (long long)nsplit);
	const char *args2 = cu_emit_kernel(&k2, cu_kname(k, NULL), LOOP_BLOCK, part_in, nr, 1);
	cu_add_launch(E, cu_kname(k, NULL), k->gi, cu_grid_for(ri->nkept, LOOP_BLOCK), LOOP_BLOCK, args2);
}

/* Other axes: one thread per element of the result, looping over the
 * reduced elements in order (coalesced across threads for a column
 * reduction: neighbouring threads read neighbouring columns). */
static void emit_reduce_cols(Emit *E, Kern *k, const RedInfo *ri, int first, const unsigned char *dep)
{
	cu_kopen(k);       /* 1: an element of the result */
	Ix kc = cu_ix_from_lin(k, &ri->kept, "o", 1, "o");
	Ix at = cu_result_ix(k, ri, first, &kc, "o", 1);
	for (int i = 0; i < k->reds.n; i++) {
		k->reds.v[i].at = at;
		k->reds.v[i].lv = 1;
	}
	cu_declare_reds(k, 1, 0, NULL);
	cu_kopen(k);       /* 2: a reduced element */
	Ix rc = cu_ix_from_lin(k, &ri->red, "r", 2, "r");
	Ix x = cu_merge_ix(ri, &kc, &rc, NULL, 0);
	cu_accumulate(k, &x, 0, NULL);
	for (int w = 0; w < k->gr->nwrites; w++) {
		int id = k->gr->writes[w];
		if (fg_kind_write_place(k->g, first, id, dep[id]) != FG_PLACE_SPACE)
			continue;
		Ix y = cu_ix_bcast(&x, &ri->S, cu_shape_of(k, id));
		cu_store(k, id, &y, cu_write_cond(k, &x, &ri->S, cu_shape_of(k, id)), NULL);
	}
	cu_kclose(k, cu_fmt(k->a, "for (%s r = 0; r < %lld; r++)", k->idx, (long long)ri->nred));
	finish_reds(k, first, dep, &at, 1, ri->nred, NULL);
	cu_kclose(k, cu_stride_loop(k, "o", ri->nkept));
	if (k->failed)
		return;
	cu_path(E, k->gi, CU_PATH_RED_COLS);
	cu_emit_comment(E, k->gi, cu_fmt(E->a, "reduce %s over axes %s to %lld elements; a thread per element",
				   cu_shape_str(E->a, FG_DT_F32, &ri->S) + 3, fg_axes_list(E->a, ri->axes), (long long)ri->nkept));
	const char *args = cu_emit_kernel(k, cu_kname(k, NULL), LOOP_BLOCK, NULL, 0, 1);
	cu_add_launch(E, cu_kname(k, NULL), k->gi, cu_grid_for(ri->nkept, LOOP_BLOCK), LOOP_BLOCK, args);
}

/* All axes, in two launches: FULL_BLOCKS blocks each reduce a strided
 * share into a partial in scratch, then one block reduces the partials in
 * order and runs the epilogue.  The same partials every run: the result
 * does not depend on timing. */
static void emit_reduce_all(Emit *E, Kern *k, const RedInfo *ri, int first, const unsigned char *dep)
{
	int nr = k->reds.n;
	int64_t N = cu_numel(&ri->S);
	int vd = cu_innermost(&ri->S);
	int vw = vd < 0 ? 1 : cu_lane_width(k, ri->S.d[vd], 1);
	int64_t nb = cu_grid_for(N / vw, LOOP_BLOCK);
	if (nb > FULL_BLOCKS)
		nb = FULL_BLOCKS;
	cu_use_scratch(E, k->gi, nr * nb * 8);
	const char *pname = cu_kname(k, "partial");
	Param *part_out = partial_params(k, nb, 0);
	Param *part_in = partial_params(k, nb, 1);

	/* stage 1: vw lanes a thread */
	cu_declare_reds(k, 0, 0, NULL);
	cu_kopen(k);
	const char *base = "i";
	if (vw > 1) {
		base = cu_fresh(k, 1, "b");
		cu_kline(k, 1, base, "const %s %s = i * %d;", k->idx, base, vw);
	}
	Ix x = cu_ix_from_lin(k, &ri->S, base, 1, "i");
	Ix xs[MAX_LANES];
	for (int l = 0; l < vw; l++) {
		xs[l] = vw > 1 ? cu_lane_of(k, &x, vd, vw, l) : x;
		cu_accumulate(k, &xs[l], 0, NULL);
	}
	cu_store_space(k, ri, first, dep, xs, vw, NULL);
	cu_kclose(k, cu_stride_loop(k, "i", N / vw));
	for (int i = 0; i < nr; i++) {
		Red *rd = &k->reds.v[i];
		cu_kline(k, 0, NULL, "%s = fg_block_reduce(%s, %s);", rd->acc, rd->acc,
			 cu_red_functor(&k->g->nodes[rd->id]));
		cu_kline(k, 0, NULL, "if (threadIdx.x == 0)");
		cu_kline(k, 0, NULL, "\t%s[blockIdx.x] = %s;", red_name(k, "partial", i), rd->acc);
	}
	if (k->failed)
		return;
	cu_path(E, k->gi, CU_PATH_RED_ALL);
	cu_emit_comment(E, k->gi, cu_fmt(E->a, "reduce all of %s, stage 1 of 2: %lld partials into scratch",
				   cu_shape_str(E->a, FG_DT_F32, &ri->S) + 3, (long long)nb));
	int any_s = cu_writes_space(k, first, dep);
	const char *args = cu_emit_kernel(k, pname, LOOP_BLOCK, part_out, nr, any_s);
	cu_add_launch(E, pname, k->gi, nb, LOOP_BLOCK, args);

	/* stage 2: a fresh kernel */
	Kern k2;
	cu_kern_init(&k2, E, k->gi);
	cu_collect_reds(&k2);
	Ix at;
	memset(&at, 0, sizeof at);
	at.rank = k2.g->nodes[k2.reds.v[0].id].shape.rank;
	for (int i = 0; i < at.rank; i++)
		at.c[i] = "0";
	at.lin = "0";
	cu_declare_reds(&k2, 0, 0, NULL);
	for (int i = 0; i < nr; i++) {
		Red *r2 = &k2.reds.v[i];
		const FgNode *n = &k2.g->nodes[r2->id];
		cu_kline(&k2, 0, NULL, "for (int b = threadIdx.x; b < %lld; b += blockDim.x)", (long long)nb);
		cu_kline(&k2, 0, NULL, "\t%s", cu_red_combine(&k2, n, r2->acc,
							   cu_fmt(k2.a, "%s[b]", red_name(&k2, "partial", i))));
		cu_kline(&k2, 0, NULL, "%s = fg_block_reduce(%s, %s);", r2->acc, r2->acc, cu_red_functor(n));
	}
	finish_reds(&k2, first, dep, &at, 0, N, "threadIdx.x == 0");
	k->failed |= k2.failed;
	if (k2.failed)
		return;
	cu_out(E, "/* %s, stage 2 of 2: one block reduces the partials in order, then the epilogue */\n",
	       cu_kname(k, NULL));
	const char *args2 = cu_emit_kernel(&k2, cu_kname(k, NULL), LOOP_BLOCK, part_in, nr, 1);
	cu_add_launch(E, cu_kname(k, NULL), k->gi, 1, LOOP_BLOCK, args2);
}

void cu_emit_reduce(Emit *E, Kern *k)
{
	RedInfo ri;
	int first = cu_group_reductions(k, &ri, "a reduction group");
	if (first < 0)
		return;
	/* siblings only: no reduction reads another's result */
	int *passes = fg_arena_array(k->a, (size_t)k->reds.n + 1, sizeof(int));
	if (cu_red_passes(k, passes) > 1) {
		cu_kern_error(k, first, "a reduce group with a reduction of another's result (%d passes)",
			      cu_red_passes(k, passes));
		return;
	}
	unsigned char *dep = cu_after_reduction(k);
	if (ri.nkept == 1)
		emit_reduce_all(E, k, &ri, first, dep);
	else if (ri.nred >= SPLIT_MIN)
		emit_reduce_split(E, k, &ri, first, dep);
	else
		emit_reduce_cols(E, k, &ri, first, dep);
}
