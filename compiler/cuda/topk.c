/*
 * topk.c - a topk group's kernel: the k first elements of each row along
 * topk's axis (the larger or smaller values first, a NaN above every
 * number, equal values by lower index: fg_top_before in
 * runtime/fg_device.cuh, topk_before in the interpreter), with the
 * elementwise prologue that computes the row and the epilogue on the
 * results (the values are take_along_axis of the row at the indices).
 * One block runs along each row, in k rounds: each thread finds, among
 * its elements that come after the previous round's pick, the first, and
 * the block combines the threads' picks (fg_block_reduce, FgTopPick); the
 * round's pick is written by thread 0 at its place in the results, the
 * values being the pick's own (no load, no index check).  A
 * row of up to 16 elements a thread is computed once into registers;
 * a longer one is read (and its prologue computed) again each round.
 * The picks are exact, so the result does not depend on the order.
 */
#include "cuda.h"

#define TOPK_HELD 16            /* row elements a thread holds in registers, at most */
#define TOPK_THREADS 1024       /* threads a block, at most */
#define TOPK_STREAM_THREADS 512 /* ... of a block that rereads its row */

/* Element `pos` of the row at `row` along axis of shape S. */
static Ix row_at(const Ix *row, const FgShape *S, int axis, const char *pos, int lv)
{
	Ix x = *row;
	if (S->d[axis] > 1) {
		x.c[axis] = pos;
		x.lv[axis] = lv;
	}
	x.lin = NULL;
	return x;
}

void cu_emit_topk(Emit *E, Kern *k)
{
	int top = k->gr->root;
	const FgNode *n = &k->g->nodes[top];
	const FgNode *xn = &k->g->nodes[n->in[0]];
	const FgShape *S = &xn->shape;
	int axis = n->a.sel.axis;
	int64_t L = S->d[axis], K = n->a.sel.k, rows = cu_numel(S) / L;
	const char *vt = fg_dtype_info[xn->dt].cuda;
	const char *pick = n->a.sel.largest ? "FgTopPick<true>" : "FgTopPick<false>";
	const char *after = n->a.sel.largest ? "fg_top_before<true>" : "fg_top_before<false>";

	int threads = 32;
	while (threads < TOPK_THREADS && (int64_t)threads * TOPK_HELD < L)
		threads *= 2;
	int held = (int)((L + threads - 1) / threads);
	int stream = held > TOPK_HELD;
	if (stream)
		threads = TOPK_STREAM_THREADS;

	FgShape R = *S;
	R.d[axis] = 1;
	cu_kopen(k);
	cu_kline(k, 1, NULL, "const %s row = w;", k->idx);
	Ix row = cu_ix_from_lin(k, &R, "row", 1, "r");
	if (!stream) {
		/* the row in registers, the prologue computed once */
		cu_kline(k, 1, NULL, "%s e[%d];", vt, held);
		cu_kopen(k);
		cu_kline(k, 2, NULL, "const int pos = min((int)threadIdx.x + u * %d, %lld);", threads, (long long)(L - 1));
		Ix x = row_at(&row, S, axis, "pos", 2);
		Val v = cu_gen(k, n->in[0], &x);
		cu_kline(k, 2, NULL, "e[u] = %s;", v.e);
		cu_kline(k, 1, NULL, "#pragma unroll");
		cu_kclose(k, cu_fmt(k->a, "for (int u = 0; u < %d; u++)", held));
	}
	cu_kline(k, 1, NULL, "FgArg<%s> prev = fg_arg((%s)0, -1);", vt, vt);

	/* the rounds */
	cu_kopen(k);
	cu_kline(k, 2, NULL, "FgArg<%s> best = fg_arg((%s)0, -1);", vt, vt);
	cu_kopen(k);
	if (stream) {
		Ix x = row_at(&row, S, axis, "pos", 3);
		Val v = cu_gen(k, n->in[0], &x);
		cu_kline(k, 3, NULL, "const FgArg<%s> c = fg_arg(%s, (int)pos);", vt, v.e);
	} else {
		cu_kline(k, 3, NULL, "const int pos = threadIdx.x + u * %d;", threads);
		cu_kline(k, 3, NULL, "const FgArg<%s> c = fg_arg(e[u], pos);", vt);
	}
	cu_kline(k, 3, NULL, "if (%s(prev.i < 0 || %s(prev, c)))", stream ? "" : cu_fmt(k->a, "pos < %lld && ", (long long)L),
		 after);
	cu_kline(k, 3, NULL, "\tbest = %s()(best, c);", pick);
	if (stream) {
		cu_kclose(k, cu_fmt(k->a, "for (%s pos = threadIdx.x; pos < %lld; pos += %d)", k->idx, (long long)L, threads));
	} else {
		cu_kline(k, 2, NULL, "#pragma unroll");
		cu_kclose(k, cu_fmt(k->a, "for (int u = 0; u < %d; u++)", held));
	}
	cu_kline(k, 2, NULL, "best = fg_block_reduce(best, %s());", pick);
	/* the round's pick at its place: topk's value there, then the writes */
	Ix o = row_at(&row, &n->shape, axis, "r", 2);
	Memo m = {top, cu_memo_key(k, top, &o), {"best.i", 2}};
	fg_vec_push(k->a, &k->memo, m);
	/* the values, take_along_axis of the row at the pick: the pick's own
	 * value, its index known in range (no check, no load) */
	Ix at = row_at(&row, S, axis, "best.i", 2);
	Memo mv = {n->in[0], cu_memo_key(k, n->in[0], &at), {"best.v", 2}};
	fg_vec_push(k->a, &k->memo, mv);
	for (int i = 0; i < k->gr->nnodes; i++) {
		const FgNode *v = &k->g->nodes[k->gr->nodes[i]];
		if (v->op == FG_OP_TAKE_ALONG_AXIS && v->in[1] == top && cu_is_member(k, k->gr->nodes[i])) {
			Memo mi = {-1, cu_fmt(k->a, "I%d:best.i", k->gr->nodes[i]), {"best.i", 2}};
			fg_vec_push(k->a, &k->memo, mi);
		}
	}
	for (int w = 0; w < k->gr->nwrites; w++) {
		int id = k->gr->writes[w];
		const FgShape *ws = cu_shape_of(k, id);
		Ix y = cu_ix_bcast(&o, &n->shape, ws);
		cu_store(k, id, &y, cu_write_cond(k, &o, &n->shape, ws), "threadIdx.x == 0");
	}
	cu_kline(k, 2, NULL, "prev = best;");
	cu_kclose(k, cu_fmt(k->a, "for (int r = 0; r < %lld; r++)", (long long)K));
	cu_kclose(k, cu_fmt(k->a, "for (%s w = blockIdx.x; w < %lld; w += gridDim.x)", k->idx, (long long)rows));
	if (k->failed)
		return;
	cu_path(E, k->gi, stream ? CU_PATH_TOPK_STREAM : CU_PATH_TOPK_REGISTERS);
	cu_emit_comment(E, k->gi, cu_fmt(E->a, "topk k=%lld (%s first) along axis %d of %s: a block a row of %lld, %lld "
					 "rows, %d threads; %s", (long long)K, n->a.sel.largest ? "largest" : "smallest",
					 axis, cu_shape_str(E->a, xn->dt, S), (long long)L, (long long)rows, threads,
					 stream ? "the row read again each round"
						: cu_fmt(E->a, "%d elements a thread in registers", held)));
	const char *args = cu_emit_kernel(k, cu_kname(k, NULL), threads, NULL, 0, 1);
	cu_add_launch(E, cu_kname(k, NULL), k->gi, rows < 1 ? 1 : rows > MAX_GRID ? MAX_GRID : rows, threads, args);
}
