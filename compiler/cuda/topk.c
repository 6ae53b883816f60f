/*
 * topk.c - a topk group's kernel: the k first elements of each row along
 * topk's axis (the larger or smaller values first, a NaN above every
 * number, equal values by lower index: fg_top_before in
 * runtime/fg_device.cuh, topk_before in the interpreter), with the
 * prologue that computes the row (elementwise ops, and reductions along
 * the same rows: a softmax before its top k) and the epilogue on the
 * results (the values are take_along_axis of the row at the indices;
 * reductions along the picks: their sum, to renormalize them).
 * One block runs along each row: first the prologue's reductions, a pass
 * over the row each (as a row-reduction kernel does, in the order their
 * inputs need them); then k rounds: each thread finds, among its
 * elements that come after the previous round's pick, the first, and the
 * block combines the threads' picks (fg_block_reduce, FgTopPick, which
 * hands every thread the same pick).  A row of up to 16 elements a
 * thread is computed once into registers; a longer one is read (and its
 * prologue computed) again each pass and each round.  The values are the
 * pick's own (no load, no index check).  Without reductions after topk,
 * thread 0 writes each round's pick at its place; with them, the k picks
 * stay in registers (k at most FG_TOPK_PICKS_HELD) and the epilogue runs
 * over them once the rounds are done.  The picks are exact, so the
 * result does not depend on the order.
 */
#include "cuda.h"

#define TOPK_HELD 16            /* row elements a thread holds in registers, at most */
#define TOPK_THREADS 1024       /* threads a block, at most */
#define TOPK_STREAM_THREADS 512 /* ... of a block that rereads its row */
#define TOPK_LIST 4             /* ... each keeping its first 4 elements */

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

/* Whether member id depends on the topk node top (comes after it). */
static int after_top(const Kern *k, int id, int top, unsigned char *memo)
{
	if (id == top)
		return 1;
	if (memo[id])
		return memo[id] - 1;
	const FgNode *n = &k->g->nodes[id];
	int a = 0;
	for (int j = 0; j < n->nin && !a; j++)
		a = cu_is_member(k, n->in[j]) && after_top(k, n->in[j], top, memo);
	memo[id] = (unsigned char)(a + 1);
	return a;
}

/* Combines reduction rd's accumulator over the block (when `block`) and
 * defines its value, of `count` elements, in scope lv. */
static void red_value(Kern *k, Red *rd, int block, int64_t count, int lv)
{
	const FgNode *n = &k->g->nodes[rd->id];
	if (block)
		cu_kline(k, lv, NULL, "%s = fg_block_reduce(%s, %s);", rd->acc, rd->acc, cu_red_functor(n));
	rd->var = cu_fresh(k, lv, cu_fmt(k->a, "v_%s", cu_name(k, rd->id)));
	rd->lv = lv;
	cu_kline(k, lv, NULL, "const %s %s = %s;", fg_dtype_info[n->dt].cuda, rd->var, cu_red_final(k, n, rd->acc, count));
}

/* The round's pick (a FgArg named `pick`) at the results' index o: topk's
 * value there, the values (take_along_axis of the row at the pick: its
 * own value, its index known in range) and other take_along_axis at its
 * index, for cu_gen. */
static void memo_pick(Kern *k, int top, const Ix *row, int axis, const Ix *o, const char *pick, int lv)
{
	const FgNode *n = &k->g->nodes[top];
	const char *i = cu_fmt(k->a, "%s.i", pick);
	Memo m = {top, cu_memo_key(k, top, o), {i, lv}};
	fg_vec_push(k->a, &k->memo, m);
	Ix at = row_at(row, &k->g->nodes[n->in[0]].shape, axis, i, lv);
	Memo mv = {n->in[0], cu_memo_key(k, n->in[0], &at), {cu_fmt(k->a, "%s.v", pick), lv}};
	fg_vec_push(k->a, &k->memo, mv);
	for (int j = 0; j < k->gr->nnodes; j++) {
		const FgNode *v = &k->g->nodes[k->gr->nodes[j]];
		if (v->op == FG_OP_TAKE_ALONG_AXIS && v->in[1] == top && cu_is_member(k, k->gr->nodes[j])) {
			Memo mi = {-1, cu_fmt(k->a, "I%d:%s", k->gr->nodes[j], i), {i, lv}};
			fg_vec_push(k->a, &k->memo, mi);
		}
	}
}

/* The group's writes at the results' index o, by thread 0. */
static void store_picks(Kern *k, const FgShape *res, const Ix *o)
{
	for (int w = 0; w < k->gr->nwrites; w++) {
		int id = k->gr->writes[w];
		const FgShape *ws = cu_shape_of(k, id);
		Ix y = cu_ix_bcast(o, res, ws);
		cu_store(k, id, &y, cu_write_cond(k, o, res, ws), "threadIdx.x == 0");
	}
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

	/* the reductions: along the row before topk, along the picks after */
	cu_collect_reds(k);
	int *passes = fg_arena_array(k->a, (size_t)k->reds.n + 1, sizeof(int));
	unsigned char *later = fg_arena_alloc(k->a, (size_t)k->g->nnodes + 1);
	int npass = cu_red_passes(k, passes), hold = 0, npro = 0;
	for (int r = 0; r < k->reds.n; r++)
		hold |= after_top(k, k->reds.v[r].id, top, later);
	if (hold && K > FG_TOPK_PICKS_HELD) {
		cu_kern_error(k, top, "reductions along topk's %lld picks: more than the %d a thread holds",
			      (long long)K, FG_TOPK_PICKS_HELD);
		return;
	}

	FgShape R = *S;
	R.d[axis] = 1;
	/* scope 0: the thread's elements of a row, held */
	const char **pos = fg_arena_array(k->a, (size_t)held + 1, sizeof(char *));
	for (int u = 0; u < held && !stream; u++) {
		pos[u] = cu_fresh(k, 0, cu_fmt(k->a, "pos%d", u));
		cu_kline(k, 0, pos[u], "const int %s = (int)threadIdx.x + %d;", pos[u], u * threads);
	}
	cu_kopen(k);       /* 1: a row */
	cu_kline(k, 1, NULL, "const %s row = w;", k->idx);
	Ix row = cu_ix_from_lin(k, &R, "row", 1, "r");
	for (int r = 0; r < k->reds.n; r++) {
		k->reds.v[r].at = row;
		k->reds.v[r].lv = 1;
	}
	Ix *xs = fg_arena_array(k->a, (size_t)held + 1, sizeof(Ix));
	for (int u = 0; u < held && !stream; u++)
		xs[u] = row_at(&row, S, axis, (int64_t)(u + 1) * threads > L ? cu_fmt(k->a, "min(%s, %lld)", pos[u], (long long)(L - 1)) : pos[u], 1);
	/* the prologue's reductions, a pass each */
	for (int p = 1; p <= npass; p++) {
		int any = 0;
		for (int r = 0; r < k->reds.n; r++)
			any |= passes[r] == p && later[k->reds.v[r].id] != 2;
		if (!any)
			continue;
		npro++;
		cu_kline(k, 1, NULL, "/* pass %d */", p);
		for (int r = 0; r < k->reds.n; r++) {
			Red *rd = &k->reds.v[r];
			if (passes[r] != p || later[rd->id] == 2)
				continue;
			const FgNode *rn = &k->g->nodes[rd->id];
			rd->acc = cu_fresh(k, 1, cu_fmt(k->a, "acc_%s", cu_name(k, rd->id)));
			cu_kline(k, 1, NULL, "%s %s = %s;", cu_acc_type(k, rn), rd->acc, cu_red_init(k, rn));
			if (stream) {
				cu_kopen(k);
				Ix x = row_at(&row, S, axis, "pos", 2);
				cu_kline(k, 2, NULL, "%s", cu_red_step(k, rn, rd->acc, cu_gen(k, rn->in[0], &x).e, &x));
				cu_kclose(k, cu_fmt(k->a, "for (%s pos = threadIdx.x; pos < %lld; pos += %d)", k->idx, (long long)L,
						    threads));
			}
			for (int u = 0; u < held && !stream; u++) {
				const char *step = cu_red_step(k, rn, rd->acc, cu_gen(k, rn->in[0], &xs[u]).e, &xs[u]);
				if ((int64_t)(u + 1) * threads > L)
					cu_kline(k, 1, NULL, "if (%s < %lld)", pos[u], (long long)L), cu_kline(k, 1, NULL, "\t%s", step);
				else
					cu_kline(k, 1, NULL, "%s", step);
			}
			red_value(k, rd, 1, L, 1);
		}
	}
	if (!stream) {
		/* the row in registers, the prologue computed once */
		cu_kline(k, 1, NULL, "%s e[%d];", vt, held);
		for (int u = 0; u < held; u++)
			cu_kline(k, 1, NULL, "e[%d] = %s;", u, cu_gen(k, n->in[0], &xs[u]).e);
	}
	const char *share = cu_fmt(k->a, "for (%s pos = threadIdx.x; pos < %lld; pos += %d)", k->idx, (long long)L, threads);
	int list = K < TOPK_LIST ? (int)K : TOPK_LIST;
	if (stream) {
		/* the thread's first elements of its share (FgTopList) */
		cu_kline(k, 1, NULL, "FgTopList<%s, %s, %d> mine;", n->a.sel.largest ? "true" : "false", vt, list);
		cu_kline(k, 1, NULL, "mine.clear();");
		cu_kopen(k);
		Ix x = row_at(&row, S, axis, "pos", 2);
		cu_kline(k, 2, NULL, "mine.offer(fg_arg(%s, (int)pos));", cu_gen(k, n->in[0], &x).e);
		cu_kclose(k, share);
	} else {
		cu_kline(k, 1, NULL, "FgArg<%s> prev = fg_arg((%s)0, -1);", vt, vt);
	}
	if (hold)
		cu_kline(k, 1, NULL, "FgArg<%s> pk[%lld];", vt, (long long)K);

	/* the rounds */
	cu_kopen(k);
	if (stream) {
		/* the pick among the heads; its thread pops it, and reads its
		 * share again, for what comes after the pick, once its list is
		 * empty */
		cu_kline(k, 2, NULL, "const FgArg<%s> best = fg_block_reduce(mine.e[0], %s());", vt, pick);
		cu_kopen(k);
		cu_kline(k, 3, NULL, "mine.pop();");
		cu_kopen(k);
		cu_kopen(k);
		Ix x = row_at(&row, S, axis, "pos", 5);
		cu_kline(k, 5, NULL, "const FgArg<%s> c = fg_arg(%s, (int)pos);", vt, cu_gen(k, n->in[0], &x).e);
		cu_kline(k, 5, NULL, "if (%s(best, c))", after);
		cu_kline(k, 5, NULL, "\tmine.offer(c);");
		cu_kclose(k, share);
		cu_kclose(k, "if (mine.e[0].i < 0)");
		cu_kclose(k, "if (best.i >= 0 && mine.e[0].i == best.i)");
	} else {
		cu_kline(k, 2, NULL, "FgArg<%s> best = fg_arg((%s)0, -1);", vt, vt);
		cu_kopen(k);
		cu_kline(k, 3, NULL, "const int pos = threadIdx.x + u * %d;", threads);
		cu_kline(k, 3, NULL, "const FgArg<%s> c = fg_arg(e[u], pos);", vt);
		cu_kline(k, 3, NULL, "if (pos < %lld && (prev.i < 0 || %s(prev, c)))", (long long)L, after);
		cu_kline(k, 3, NULL, "\tbest = %s()(best, c);", pick);
		cu_kline(k, 2, NULL, "#pragma unroll");
		cu_kclose(k, cu_fmt(k->a, "for (int u = 0; u < %d; u++)", held));
		cu_kline(k, 2, NULL, "best = fg_block_reduce(best, %s());", pick);
	}
	if (hold) {
		cu_kline(k, 2, NULL, "pk[r] = best;");
	} else {
		/* the round's pick at its place, then the writes */
		Ix o = row_at(&row, &n->shape, axis, "r", 2);
		memo_pick(k, top, &row, axis, &o, "best", 2);
		store_picks(k, &n->shape, &o);
	}
	if (!stream)
		cu_kline(k, 2, NULL, "prev = best;");
	if (hold)
		cu_kline(k, 1, NULL, "#pragma unroll");        /* pk[r] in registers */
	cu_kclose(k, cu_fmt(k->a, "for (int r = 0; r < %lld; r++)", (long long)K));
	if (hold) {
		/* the epilogue over the picks: its reductions, then the writes */
		Ix *os = fg_arena_array(k->a, (size_t)K, sizeof(Ix));
		for (int r = 0; r < K; r++) {
			os[r] = row_at(&row, &n->shape, axis, cu_fmt(k->a, "%d", r), 1);
			memo_pick(k, top, &row, axis, &os[r], cu_fmt(k->a, "pk[%d]", r), 1);
		}
		for (int p = 1; p <= npass; p++)
			for (int r = 0; r < k->reds.n; r++) {
				Red *rd = &k->reds.v[r];
				if (passes[r] != p || later[rd->id] != 2)
					continue;
				const FgNode *rn = &k->g->nodes[rd->id];
				rd->acc = cu_fresh(k, 1, cu_fmt(k->a, "acc_%s", cu_name(k, rd->id)));
				cu_kline(k, 1, NULL, "%s %s = %s;", cu_acc_type(k, rn), rd->acc, cu_red_init(k, rn));
				for (int q = 0; q < K; q++)
					cu_kline(k, 1, NULL, "%s", cu_red_step(k, rn, rd->acc, cu_gen(k, rn->in[0], &os[q]).e, &os[q]));
				red_value(k, rd, 0, K, 1);
			}
		for (int r = 0; r < K; r++)
			store_picks(k, &n->shape, &os[r]);
	}
	cu_kclose(k, cu_fmt(k->a, "for (%s w = blockIdx.x; w < %lld; w += gridDim.x)", k->idx, (long long)rows));
	if (k->failed)
		return;
	cu_path(E, k->gi, stream ? CU_PATH_TOPK_STREAM : CU_PATH_TOPK_REGISTERS);
	cu_emit_comment(E, k->gi, cu_fmt(E->a, "topk k=%lld (%s first) along axis %d of %s: a block a row of %lld, %lld "
					 "rows, %d threads; %s%s%s", (long long)K, n->a.sel.largest ? "largest" : "smallest",
					 axis, cu_shape_str(E->a, xn->dt, S), (long long)L, (long long)rows, threads,
					 stream ? "the row read again each pass and round"
						: cu_fmt(E->a, "%d elements a thread in registers", held),
					 npro ? cu_fmt(E->a, "; %d pass%s of reductions before", npro, npro > 1 ? "es" : "") : "",
					 hold ? "; the picks in registers, reduced after" : ""));
	const char *args = cu_emit_kernel(k, cu_kname(k, NULL), threads, NULL, 0, 1);
	cu_add_launch(E, cu_kname(k, NULL), k->gi, rows < 1 ? 1 : rows > MAX_GRID ? MAX_GRID : rows, threads, args);
}
