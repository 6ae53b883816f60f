/*
 * rowreduce.c - a row-reduction group's kernel: the reduced axes are the
 * trailing ones, so one team of threads owns each row.  Where the row fits
 * in the team's registers (a few lanes of a warp, 128 / lanes rows to a
 * block and up to 4 of them a thread, in turn; a warp, four rows to a
 * block; or a block of up to 1024), it is read once and every pass and
 * the epilogue run on registers.  A longer row is read once into shared
 * memory: the first pass loads what the row reads from memory and keeps
 * it there, the later passes (softmax: the sum after the max) and the
 * epilogue read it back.  A row longer than a block's share of shared
 * memory (ROW_SMEM), or too few rows to fill the GPU, is cut into parts,
 * one block each, the blocks of one row a thread-block cluster that
 * combines its partial reductions through distributed shared memory.  Only
 * a row that reads nothing at its own elements (no memory to save) or
 * that even a cluster cannot hold streams from memory once per pass, cut
 * into a cluster's parts the same way where the rows are too few; there a
 * softmax's max and sum, or a mean and the squared deviations from it,
 * take one pass together (online pairs, below).
 */
#include <string.h>

#include "cuda.h"

/* How a row kernel that keeps its row in registers splits a row: a team
 * of `threads` per row (some lanes of a warp or a warp, rows_per_block to
 * a block of 128, or a whole block), each thread holding `vecs` vectors
 * of vw elements; element (u * threads + t) * vw + l of the row is lane
 * l of vector u of thread t.  `guard`: the last vectors run past the row
 * (clamped, not counted). */
typedef struct RowTeam {
	int threads, rows_per_block, vw, vecs, guard;
	int vd;                 /* the space's coordinate the lanes run along */
} RowTeam;

#define ROW_REGS FG_ROW_REGS    /* row elements a thread holds, at most */
#define ROW_REGS_WIDE 32        /* ... when a block of 1024 is not enough */

/* The lanes a thread takes of a row: vectors along the space's innermost
 * dim (*vd) where the row has one dim above 1, else single elements. */
static int row_lanes(const Kern *k, const RedInfo *ri, int *vd)
{
	int nonunit = 0;
	for (int i = 0; i < ri->red.rank; i++)
		nonunit += ri->red.d[i] > 1;
	*vd = cu_innermost(&ri->S);
	return nonunit == 1 ? cu_lane_width(k, ri->nred, 0) : 1;
}

/* Vectors a lane of a team smaller than a warp holds, at most: 2, twice
 * the loads in flight a thread and half the lanes a row of 1 (rows of
 * 128 columns at 32768 rows: 1.68-1.80x main's replayed, where 1 a lane
 * gave 1.50-1.57x; docs/performance.md v48) */
enum { ROW_LANE_VECS = 2 };

/* Whether the row fits in the registers of a team, and its shape.  A
 * row of at most 16 x ROW_LANE_VECS vectors takes the fewest lanes of a
 * warp that hold it ROW_LANE_VECS vectors each, 32 / w rows to a warp
 * (128 bf16 columns: 8 lanes of 2 vectors, not a warp 3/4 of whose
 * lanes idle), where the rows are a multiple of that: a warp's rows then
 * run the row loop alike, and its shuffles take all 32 lanes. */
static int row_team(const Kern *k, const RedInfo *ri, RowTeam *rt)
{
	memset(rt, 0, sizeof *rt);
	rt->vw = row_lanes(k, ri, &rt->vd);
	int64_t nv = (ri->nred + rt->vw - 1) / rt->vw;
	int w0 = 32;
	while (w0 > 1 && nv <= (int64_t)(w0 / 2) * ROW_LANE_VECS && ri->nkept % (32 / (w0 / 2)) == 0)
		w0 /= 2;
	for (int w = w0; w <= 1024; w *= 2) {
		int64_t vecs = (ri->nred + (int64_t)w * rt->vw - 1) / ((int64_t)w * rt->vw);
		int64_t held = vecs * rt->vw;
		if ((held <= ROW_REGS || (w == 1024 && held <= ROW_REGS_WIDE)) && fg_kind_regs_fit(&k->plan->opt, fg_kind_regs_at(k->gr, (int)held))) {
			rt->threads = w;
			rt->vecs = (int)vecs;
			break;
		}
	}
	if (!rt->threads)
		return 0;
	rt->rows_per_block = rt->threads <= 32 ? 128 / rt->threads : 1;
	rt->guard = ri->nred % ((int64_t)rt->threads * rt->vw) != 0;
	return 1;
}

/* Rows a thread of a team smaller than a warp takes: up to
 * ROW_THREAD_ROWS, rows_per_block apart, in a loop of known trip count
 * that ptxas unrolls, so a row's loads issue before the row before it
 * is stored (SASS of rmsnorm f32 at 32768 x 128).  Where the rows fill
 * whole blocks and the grid keeps ROW_THREAD_GRID of them, in a kernel
 * of one pass or of rows of at most ROW_THREAD_HELD elements a thread.
 * Measured with rows of 128 at 4096 and 32768 rows (docs/performance.md
 * v49), 4 rows a thread against 1, replayed: rmsnorm 1.05-1.07x in 16
 * bits and 1.23x in f32 (512 and 1,024 blocks); softmax and layernorm
 * f32 (8 elements a thread) 1.05x and 1.08x; but softmax and layernorm
 * in 16 bits (16 elements a thread, two passes) 0.78-0.91x, and at 2
 * rows 0.87-0.95x; and 2 rows at 4096 rows of f32, 256 blocks, 0.85x
 * (rmsnorm) and 0.88x (softmax). */
enum { ROW_THREAD_ROWS = 4, ROW_THREAD_GRID = 512, ROW_THREAD_HELD = 8 };

static int thread_rows(const RedInfo *ri, const RowTeam *rt, int npass)
{
	if (rt->threads >= 32 || (npass > 1 && rt->vecs * rt->vw > ROW_THREAD_HELD))
		return 1;
	for (int R = ROW_THREAD_ROWS; R > 1; R /= 2) {
		int64_t span = (int64_t)rt->rows_per_block * R;
		if (ri->nkept % span == 0 && ri->nkept / span >= ROW_THREAD_GRID && ri->nkept / span < INT32_MAX)
			return R;
	}
	return 1;
}

/* Combines reduction rd's accumulators across the row's team (reduce:
 * the warp's, block's or cluster's function; tail: its arguments after
 * the accumulator and the functor, "" or a cluster's ", turn++") and
 * defines its value. */
static void combine(Kern *k, Red *rd, const char *reduce, const char *tail, int64_t nred)
{
	const FgNode *n = &k->g->nodes[rd->id];
	cu_kline(k, 1, NULL, "%s = %s(%s, %s%s);", rd->acc, reduce, rd->acc, cu_red_functor(n), tail);
	rd->var = cu_fresh(k, 1, cu_fmt(k->a, "v_%s", cu_name(k, rd->id)));
	cu_kline(k, 1, NULL, "const %s %s = %s;", fg_dtype_info[n->dt].cuda, rd->var, cu_red_final(k, n, rd->acc, nred));
}

/* A row kernel that reads its row once: a team of threads per row (see
 * RowTeam) holds the row's elements in registers.  Every pass and the
 * epilogue evaluate the same element indices, so the memo hands the loads
 * (and whatever was computed from them before a reduction) of the first
 * pass to the later ones: softmax reads x once, keeps exp(x - max) from
 * the sum to the division. */
static void emit_rowreduce_regs(Emit *E, Kern *k, const RedInfo *ri, const RowTeam *rt, int first,
				const int *passes, int npass, const unsigned char *dep)
{
	int W = rt->threads, vw = rt->vw, U = rt->vecs, block = W * rt->rows_per_block;
	/* the parameter rows (g, b), loaded before the row loop, stay packed
	 * through it: layernorm f16 at 32768 x 4096, 63 registers to 48 and
	 * 80% of the copy bandwidth to 90% (H200, docs/performance.md v17).
	 * Not in a block of 64: given that block size alone, ptxas held such
	 * a layernorm of 1,024 bf16 columns to 40 registers and spilled */
	k->widen_at_use = block >= 128;
	const char *t = W <= 32 ? cu_fmt(k->a, "(int)(threadIdx.x & %d)", W - 1) : "(int)threadIdx.x";
	const char *reduce = W == 32 ? "fg_warp_reduce" : W < 32 ? cu_fmt(k->a, "fg_warp_reduce<%d>", W) : "fg_block_reduce";
	int shift = 0;     /* the team of a thread: threadIdx.x >> shift */
	while ((1 << shift) < W)
		shift++;
	Ix *xs = fg_arena_array(k->a, (size_t)U * vw, sizeof(Ix));
	const char **in = fg_arena_array(k->a, (size_t)U, sizeof(char *));

	/* scope 0: where each thread's elements sit in a row */
	for (int u = 0; u < U; u++) {
		const char *j = cu_fresh(k, 0, cu_fmt(k->a, "j%d", u));
		const char *at = cu_fmt(k->a, "(%d + %s) * %d", u * W, t, vw);
		in[u] = NULL;
		if (rt->guard && u == U - 1) {
			in[u] = cu_fresh(k, 0, cu_fmt(k->a, "in%d", u));
			cu_kline(k, 0, in[u], "const bool %s = %s < %lld;", in[u], at, (long long)ri->nred);
			at = cu_fmt(k->a, "min(%s, %lld)", at, (long long)(ri->nred - vw));
		}
		cu_kline(k, 0, j, "const %s %s = %s;", k->idx, j, at);
	}
	cu_kopen(k);       /* 1: a row */
	int R = thread_rows(ri, rt, npass), span = rt->rows_per_block * R;
	if (R > 1)
		cu_kline(k, 1, "row", "const %s row = ((%s)blockIdx.x * %d + rr) * %d + (threadIdx.x >> %d);", k->idx, k->idx,
			 R, rt->rows_per_block, shift);
	Ix kc = cu_ix_from_lin(k, &ri->kept, "row", 1, "r");
	for (int r = 0; r < k->reds.n; r++) {
		k->reds.v[r].at = cu_result_ix(k, ri, k->reds.v[r].id, &kc, "row", 1);
		k->reds.v[r].lv = 1;
	}
	for (int u = 0; u < U; u++) {
		const char *j = cu_fmt(k->a, "j%d", u);
		Ix rc = cu_ix_from_lin(k, &ri->red, j, 0, cu_fmt(k->a, "j%d_", u));
		const char *i = cu_fresh(k, 1, cu_fmt(k->a, "i%d", u));
		cu_kline(k, 1, i, "const %s %s = row * %lld + %s;", k->idx, i, (long long)ri->nred, j);
		Ix x = cu_merge_ix(ri, &kc, &rc, i, 1);
		for (int l = 0; l < vw; l++)
			xs[u * vw + l] = vw > 1 ? cu_lane_of(k, &x, rt->vd, vw, l) : x;
	}
	for (int p = 1; p <= npass; p++) {
		cu_kline(k, 1, NULL, "/* pass %d */", p);
		cu_declare_reds(k, 1, p, passes);
		for (int r = 0; r < k->reds.n; r++) {
			Red *rd = &k->reds.v[r];
			if (passes[r] != p)
				continue;
			const FgNode *n = &k->g->nodes[rd->id];
			for (int e = 0; e < U * vw; e++) {
				const char *step = cu_red_step(k, n, rd->acc, cu_gen(k, n->in[0], &xs[e]).e, &xs[e]);
				if (in[e / vw])
					cu_kline(k, 1, NULL, "if (%s)", in[e / vw]), cu_kline(k, 1, NULL, "\t%s", step);
				else
					cu_kline(k, 1, NULL, "%s", step);
			}
			combine(k, rd, reduce, "", ri->nred);
		}
	}
	/* once per row: values of the reduced shape */
	Ix rx = cu_result_ix(k, ri, first, &kc, "row", 1);
	cu_store_reduced(k, first, dep, &rx, cu_fmt(k->a, "%s == 0", t));
	/* the epilogue: values of the row's elements, from registers */
	cu_kline(k, 1, NULL, "/* epilogue */");
	for (int u = 0; u < U; u++)
		cu_store_space(k, ri, first, dep, &xs[u * vw], vw, in[u]);
	if (R > 1)
		cu_kline(k, 0, NULL, "#pragma unroll");
	const char *row = R > 1 ? cu_fmt(k->a, "for (int rr = 0; rr < %d; rr++)", R)
		: rt->rows_per_block > 1
		? cu_fmt(k->a, "for (%s row = blockIdx.x * %d + (threadIdx.x >> %d); row < %lld; row += gridDim.x * %d)",
		      k->idx, rt->rows_per_block, shift, (long long)ri->nkept, rt->rows_per_block)
		: cu_fmt(k->a, "for (%s row = blockIdx.x; row < %lld; row += gridDim.x)", k->idx, (long long)ri->nkept);
	cu_kclose(k, row);
	if (k->failed)
		return;
	int64_t grid = (ri->nkept + span - 1) / span;
	cu_path(E, k->gi, W == 32 ? CU_PATH_ROW_WARP : W < 32 ? CU_PATH_ROW_LANES : CU_PATH_ROW_BLOCK);
	if (R > 1)
		cu_path(E, k->gi, CU_PATH_ROW_ROWS);
	const char *team = W == 32 ? "a warp"
		: W < 32 ? cu_fmt(E->a, "%d lane%s of a warp", W, W > 1 ? "s" : "") : cu_fmt(E->a, "a block of %d", W);
	cu_emit_comment(E, k->gi, cu_row_desc(E, ri, cu_fmt(E->a, "%s per row, the row in registers (%d x %d elements a thread%s)",
						  team, U, vw, R > 1 ? cu_fmt(E->a, ", %d rows", R) : "")));
	const char *args = cu_emit_kernel(k, cu_kname(k, NULL), block, NULL, 0, 1);
	cu_add_launch(E, cu_kname(k, NULL), k->gi, grid < INT32_MAX ? grid : INT32_MAX, block, args);
}

/* How a row kernel that does not keep its row in registers splits a
 * row: `parts` blocks to a row (a cluster when more than one), each
 * taking `len` elements of it (a multiple of vw), `block` threads each
 * taking vectors of vw elements at a stride of block * vw.  `stage`: the
 * part is read once into shared memory; else it streams from memory once
 * per pass. */
typedef struct RowParts {
	int parts, block, vw, vd, stage;
	int64_t len, bytes;     /* bytes: a row element's, in shared memory */
} RowParts;

/* Whether the row leaves registers, and how it is split.  `fits`: the row
 * fits in registers, which it keeps unless there are too few rows to fill
 * the multiprocessors and a split gives them work, or `wide` (only a block
 * of 1024 holds it) and shared memory can.  `once`: streamed, the row
 * would be read once (one pass, its pairs taken, and no epilogue at its
 * elements), so there is nothing to keep in shared memory (a
 * cross-entropy's logsumexp). */
static int row_parts(const Kern *k, const RedInfo *ri, int fits, int wide, int once, RowParts *rp)
{
	/* bytes a row element takes in shared memory: the reads as large as
	 * the space (a read that broadcasts along the row stays in cache) */
	int64_t bytes = 0;
	for (int r = 0; r < k->gr->nreads && !once; r++) {
		int id = k->gr->reads[r];
		if (cu_numel(cu_shape_of(k, id)) == ri->nkept * ri->nred)
			bytes += fg_dtype_size[k->g->nodes[id].dt];
	}
	memset(rp, 0, sizeof *rp);
	rp->bytes = bytes;
	rp->vw = row_lanes(k, ri, &rp->vd);
	int64_t vecs = ri->nred / rp->vw;
	/* the fewest parts whose shares of the row fit in shared memory: at
	 * most ROW_SMEM a block, but ROW_SMEM_PART in a cluster of 2 or 4, so
	 * that more blocks share a multiprocessor and one's loads overlap
	 * another's reductions and stores (8 parts of a 131,072 f16 row
	 * instead of 4: softmax 83% -> 87% of the floor, layernorm 77% -> 79%;
	 * 4 of a 32,768 f32 row instead of 2: 81% -> 83%; a row of one part
	 * in 2, or of 8 in 16, lost 3-7%; H200, docs/performance.md v18) */
	for (rp->parts = 1; bytes > 0 && rp->parts <= ROW_CLUSTER; rp->parts *= 2)
		if ((vecs + rp->parts - 1) / rp->parts * rp->vw * bytes <=
		    (rp->parts == 2 || rp->parts == 4 ? ROW_SMEM_PART : ROW_SMEM))
			break;
	rp->stage = bytes > 0 && rp->parts <= ROW_CLUSTER;
	if (!rp->stage)
		rp->parts = 1;
	/* few rows: more parts while the grid leaves multiprocessors idle
	 * and each part is still 2,048 elements or more, 4,096 of a row that
	 * registers hold (1-64 rows of 4,096 in one block of registers, not
	 * a cluster of 2 staged blocks: 1.25-1.46x in all 27 cells of
	 * softmax, rmsnorm and layernorm, replayed on the H100,
	 * docs/performance.md v47).  A streamed part
	 * wants two blocks a multiprocessor to keep loads in flight, and
	 * takes up to 16; a staged row splits only to 8 for this (softmax f32
	 * at 8 x 131072 ran 10% slower in 16 parts than in 8 on the H200,
	 * docs/performance.md v9) */
	int64_t fill = rp->stage ? SMS : 2 * SMS;
	int most = rp->stage ? (rp->parts > 8 ? rp->parts : 8) : ROW_CLUSTER;
	while (ri->nkept * rp->parts < fill && rp->parts < most &&
	       vecs / (rp->parts * 2) * rp->vw >= (fits ? 4096 : 2048))
		rp->parts *= 2;
	if (fits && (!rp->stage || (rp->parts == 1 && !wide)))
		return 0;
	rp->len = (vecs + rp->parts - 1) / rp->parts * rp->vw;
	/* about eight vectors a thread a pass, in at most 512 threads: a pass
	 * keeps four vectors in flight and what it computes from them, more
	 * than the 64 registers a thread of 1024 gets (a softmax of 70,001
	 * f16 elements, one element a vector, spilled there) */
	rp->block = 128;
	while (rp->block < 512 && rp->block * 8 < rp->len / rp->vw)
		rp->block *= 2;
	return 1;
}

/* Two reductions of a row split into parts that one pass computes
 * together, where the second's input needs the first's value
 * (runtime/fg_device.cuh, FgWelford and FgOnlineSoftmax, fg_pair_*): the
 * deviations' squares from a mean (var, layernorm) and the exps of the
 * distances to a max (softmax).  Saves a read of a streamed row from memory, and a pass
 * over shared memory and a cluster combine of a staged one. */
typedef enum PairKind { PAIR_NONE, PAIR_MOMENTS, PAIR_EXPSUM, PAIR_EXPSUM_SHIFT } PairKind;

/* A pair's accumulator, its combine (few: where one wave of blocks holds
 * every row, see FEW_ROWS), its start, and its second value (%s: the
 * accumulator). */
static const struct {
	const char *acc, *functor, *few, *init, *second;
} PAIRS[] = {
	[PAIR_MOMENTS] = {"FgMoments", "FgWelford()", "FgWelfordSteps()", "FgMoments{0.0f, 0.0f, 0.0f}",
			  "fg_pair_second(%s)"},
	[PAIR_EXPSUM] = {"FgExpSum", "FgOnlineSoftmax()", "FgOnlineSoftmax()", "FgExpSum{-CUDART_INF_F, 0.0f}",
			 "fg_pair_second(%s)"},
	/* exp(x - f), f the max where finite, else 0 (logsumexp's guard,
	 * passes/expand.c): a row of -inf sums to 0, one holding +inf to
	 * +inf, which the running sum gives as it is */
	[PAIR_EXPSUM_SHIFT] = {"FgExpSum", "FgOnlineSoftmax()", "FgOnlineSoftmax()", "FgExpSum{-CUDART_INF_F, 0.0f}",
			       "%s.s"},
};

/* Rows few enough that one wave of blocks holds them all (at most four
 * blocks a multiprocessor): every block waits on each combine with nothing
 * else to run, and moments combine in steps (FgWelfordSteps: layernorm f32
 * at 8 and 64 x 131072 8-9% faster), where with more rows other blocks
 * hide Welford's chain and the steps' extra barriers cost 1% (4096 x
 * 32768; H200, docs/performance.md v22). */
#define FEW_ROWS(rows, parts) ((rows) * (parts) <= 4 * SMS)

/* Whether node id, a member, is where(isinf(a), 0, a): the max a where it
 * is finite, else 0. */
static int finite_or_zero(const Kern *k, int id, int a)
{
	const FgNode *w = &k->g->nodes[id];
	if (!cu_is_member(k, id) || w->op != FG_OP_WHERE || w->in[2] != a)
		return 0;
	const FgNode *c = &k->g->nodes[w->in[0]], *z = &k->g->nodes[w->in[1]];
	return c->op == FG_OP_ISINF && c->in[0] == a && z->op == FG_OP_CONST && z->a.value == 0.0;
}

/* Whether reduction b's input is f(e - a) with a a reduction of e: the
 * square under a sum or mean, with a a mean (square(d), or d * d as a
 * hand-written layernorm has it); exp under a sum, with a a max, or with
 * a max where it is finite (float rows only). */
static PairKind pair_of(const Kern *k, const Red *a, const Red *b)
{
	const FgNode *na = &k->g->nodes[a->id], *nb = &k->g->nodes[b->id];
	const FgNode *f = &k->g->nodes[nb->in[0]];
	int square = f->op == FG_OP_SQUARE || (f->op == FG_OP_MUL && f->nin == 2 && f->in[0] == f->in[1]);
	if (!cu_is_member(k, nb->in[0]) || (f->nin != 1 && !square) || !cu_is_member(k, f->in[0]) ||
	    !fg_dtype_is_float(na->dt))
		return PAIR_NONE;
	const FgNode *d = &k->g->nodes[f->in[0]];
	if (d->op != FG_OP_SUB || d->in[0] != na->in[0])
		return PAIR_NONE;
	int shift = d->in[1] != a->id;
	if (shift && !finite_or_zero(k, d->in[1], a->id))
		return PAIR_NONE;
	if (!shift && square && na->op == FG_OP_MEAN && (nb->op == FG_OP_SUM || nb->op == FG_OP_MEAN))
		return PAIR_MOMENTS;
	if (f->op == FG_OP_EXP && na->op == FG_OP_MAX && nb->op == FG_OP_SUM)
		return shift ? PAIR_EXPSUM_SHIFT : PAIR_EXPSUM;
	return PAIR_NONE;
}

/* Pairs the reductions of a streamed row (partner[b] = a, kinds[b]: b is
 * computed with a, in a's pass) and renumbers the passes left, 1 on;
 * returns their count. */
static int pair_passes(const Kern *k, int *passes, int npass, int *partner, PairKind *kinds)
{
	for (int b = 0; b < k->reds.n; b++) {
		partner[b] = -1;
		kinds[b] = PAIR_NONE;
		for (int a = 0; a < k->reds.n && partner[b] < 0; a++)
			if (passes[a] == passes[b] - 1 && partner[a] < 0 &&
			    (kinds[b] = pair_of(k, &k->reds.v[a], &k->reds.v[b])) != PAIR_NONE)
				partner[b] = a;
	}
	for (int b = 0; b < k->reds.n; b++)
		if (partner[b] >= 0)
			passes[b] = passes[partner[b]];
	int n = 0;
	for (int p = 1; p <= npass; p++) {
		int used = 0;
		for (int r = 0; r < k->reds.n; r++)
			used |= passes[r] == p;
		if (!used)
			continue;
		n++;
		for (int r = 0; r < k->reds.n; r++)
			if (passes[r] == p)
				passes[r] = -n;
	}
	for (int r = 0; r < k->reds.n; r++)
		passes[r] = -passes[r];
	return n;
}

/* Pair b (with its partner a) at the vector of lanes xs: the lanes'
 * statistic of a (their mean, or the running max: theirs and pacc's),
 * b's reduction of its input over the lanes with a bound to that
 * statistic, and the two added to the pair's accumulator pacc
 * (fg_pair_add).  The exps of a softmax are taken against the running
 * max, not the lanes' own, so that only a max that grows rescales the
 * sum: one exp a vector fewer than combining the lanes' pair with the
 * accumulator (softmax f32 at 8 x 131072 and 64 x 32768 3-4% faster, at
 * 64 x 131072 and 8 x 262144 1%; H200, docs/performance.md v21). */
static void pair_step(Kern *k, Red *a, Red *b, PairKind kind, const char *pacc, const Ix *xs, int vw)
{
	const FgNode *na = &k->g->nodes[a->id], *nb = &k->g->nodes[b->id];
	const char *ta = cu_fresh(k, 2, cu_fmt(k->a, "c_%s", cu_name(k, a->id)));
	cu_kline(k, 2, NULL, "%s %s = %s;", cu_acc_type(k, na), ta, cu_red_init(k, na));
	for (int l = 0; l < vw; l++)
		cu_kline(k, 2, NULL, "%s", cu_red_step(k, na, ta, cu_gen(k, na->in[0], &xs[l]).e, &xs[l]));
	const char *m = cu_fresh(k, 2, cu_fmt(k->a, "m_%s", cu_name(k, a->id)));
	const char *stat = cu_red_final(k, na, ta, vw);
	if (kind != PAIR_MOMENTS)
		stat = cu_fmt(k->a, "fg_maximum(%s.m, %s)", pacc, stat);
	cu_kline(k, 2, NULL, "const float %s = %s;", m, stat);
	a->var = m;
	a->lv = 2;
	const char *tb = cu_fresh(k, 2, cu_fmt(k->a, "c_%s", cu_name(k, b->id)));
	cu_kline(k, 2, NULL, "%s %s = %s;", cu_acc_type(k, nb), tb, cu_red_init(k, nb));
	for (int l = 0; l < vw; l++)
		cu_kline(k, 2, NULL, "%s", cu_red_step(k, nb, tb, cu_gen(k, nb->in[0], &xs[l]).e, &xs[l]));
	a->var = NULL;
	cu_kline(k, 2, NULL, "%s = fg_pair_add(%s, %d.0f, %s, %s);", pacc, pacc, vw, m, tb);
}

/* Whether a row split as rp computes its pairs in one pass: a streamed
 * row always (a read of memory fewer); a staged row of f32 too (one pass
 * and one cluster combine fewer: layernorm f32 at 4096 and 32768 x 32768,
 * 9% and 11% faster); and a cluster's row of 16-bit elements, a cluster
 * combine fewer (on an H100: layernorm f16 at 8 and 64 x 131072 5-9%
 * faster, bf16 1-3%, softmax f16 and bf16 1-6%, docs/performance.md v42;
 * at 512 x 131072 layernorm f16 and bf16 3%, softmax f16 2%; at 4096 x
 * 131072 layernorm f16 1.3%, v44).  v9 (H200) found the 16-bit pair's
 * arithmetic costing more than the second pass over shared memory it
 * saves, 5-15% at 4096 x 32768 and x 131072, before v21 and v22 changed
 * the cluster's combines and softmax's pair; a block's own 16-bit row
 * (4096 x 32768), whose combine is within the block and which was not
 * timed again, keeps that rule. */
static int takes_pairs(const RowParts *rp)
{
	return !rp->stage || rp->bytes >= 4 || rp->parts > 1;
}

/* Whether a pair of a row in shared memory is taken thread first: the
 * thread's max over its whole part, then in a second sweep (over shared
 * memory) the sum of its exps against that max, and that pair combined
 * (fg_pair_add) and then across the row.  One exp an element and no
 * rescaling chain from vector to vector, where the running max
 * (pair_step) rescales the sum each time the max grows: softmax f32 at 1
 * x 32768 6.5 -> 5.3 us, 8 x 131072 8.7 -> 7.6, 64 x 32768 9.6 -> 8.9,
 * 4096 x 32768 300 -> 279 (H200, docs/performance.md v22).  A streamed
 * row would read its part twice; moments keep the running form (their
 * mean first, then the squared deviations, was no faster: v22). */
static int thread_first(const RowParts *rp, PairKind kind)
{
	return rp->stage && (kind == PAIR_EXPSUM || kind == PAIR_EXPSUM_SHIFT);
}

/* A reduction's accumulator of a thread, declared in the row's scope. */
static void declare_acc(Kern *k, Red *rd)
{
	const FgNode *n = &k->g->nodes[rd->id];
	rd->acc = cu_fresh(k, 1, cu_fmt(k->a, "acc_%s", cu_name(k, rd->id)));
	cu_kline(k, 1, NULL, "%s %s = %s;", cu_acc_type(k, n), rd->acc, cu_red_init(k, n));
}

/* A thread-first pair (a, b) at the vector of lanes xs: a's step in the
 * pass's first sweep (by the first of the pairs that share a: `lead`),
 * b's with a bound to the thread's a in its second. */
static void thread_first_step(Kern *k, Red *a, Red *b, int sweep, int lead, const Ix *xs, int vw)
{
	Red *rd = sweep ? b : a;
	const FgNode *n = &k->g->nodes[rd->id];
	if (!sweep && !lead)
		return;
	if (sweep) {       /* at the sweep's depth, so that its memo goes with it */
		a->var = a->acc;
		a->lv = 2;
	}
	for (int l = 0; l < vw; l++)
		cu_kline(k, 2, NULL, "%s", cu_red_step(k, n, rd->acc, cu_gen(k, n->in[0], &xs[l]).e, &xs[l]));
	a->var = NULL;
}

/* The pair's values once its accumulator is combined over the row. */
static void pair_values(Kern *k, Red *a, Red *b, PairKind kind, const char *pacc, const char *reduce,
			const char *tail, int64_t nred, int few)
{
	cu_kline(k, 1, NULL, "%s = %s(%s, %s%s);", pacc, reduce, pacc, few ? PAIRS[kind].few : PAIRS[kind].functor,
		 tail);
	a->var = cu_fresh(k, 1, cu_fmt(k->a, "v_%s", cu_name(k, a->id)));
	cu_kline(k, 1, a->var, "const float %s = fg_pair_first(%s);", a->var, pacc);
	a->lv = 1;
	b->var = cu_fresh(k, 1, cu_fmt(k->a, "v_%s", cu_name(k, b->id)));
	cu_kline(k, 1, b->var, "const float %s = %s;", b->var,
		 cu_red_final(k, &k->g->nodes[b->id], cu_fmt(k->a, PAIRS[kind].second, pacc), nred));
	b->lv = 1;
}

/* A row kernel that splits its row into parts (see RowParts), a block
 * each: every pass loops over the block's part of the row.  Staged, the
 * first pass that reads a tensor at the row's elements keeps it in shared
 * memory for the others (load_vector in gen.c); each thread reads back
 * only what it stored (every pass visits the same elements in the same
 * threads), so no barrier is needed between passes.  Streamed, each pass
 * reads the part from memory again.  The blocks of a cluster combine each
 * reduction in rank order (fg_cluster_reduce), the same result in every
 * block and every run. */
static void emit_rowreduce_parts(Emit *E, Kern *k, const RedInfo *ri, const RowParts *rp, int first,
				 int *passes, int npass, const unsigned char *dep)
{
	int vw = rp->vw, C = rp->parts;
	Ix xs[MAX_LANES];
	/* a streamed row: pairs of reductions share a pass */
	int *partner = fg_arena_array(k->a, (size_t)k->reds.n + 1, sizeof(int));
	PairKind *kinds = fg_arena_array(k->a, (size_t)k->reds.n + 1, sizeof(PairKind));
	int *declared = fg_arena_array(k->a, (size_t)k->reds.n + 1, sizeof(int));
	const char **pacc = fg_arena_array(k->a, (size_t)k->reds.n + 1, sizeof(char *));
	unsigned char *mate = fg_arena_alloc(k->a, (size_t)k->reds.n + 1);   /* a partner[] */
	unsigned char *tf = fg_arena_alloc(k->a, (size_t)k->reds.n + 1);     /* b of a thread-first pair */
	int *lead = fg_arena_array(k->a, (size_t)k->reds.n + 1, sizeof(int)); /* a's first such b */
	for (int r = 0; r < k->reds.n; r++)
		partner[r] = lead[r] = -1;
	if (takes_pairs(rp))
		npass = pair_passes(k, passes, npass, partner, kinds);
	for (int r = 0; r < k->reds.n; r++)
		if (partner[r] >= 0)
			mate[partner[r]] = 1;
	/* thread first (thread_first); a max that two such pairs share (a
	 * softmax's and a logsumexp's) is declared and stepped by the first */
	for (int r = 0; r < k->reds.n; r++) {
		tf[r] = partner[r] >= 0 && thread_first(rp, kinds[r]);
		if (tf[r] && lead[partner[r]] < 0)
			lead[partner[r]] = r;
	}
	if (rp->stage) {
		k->stage_sm = fg_arena_array(k->a, (size_t)k->gr->nreads + 1, sizeof(char *));
		k->staged = fg_arena_alloc(k->a, (size_t)k->gr->nreads + 1);
		k->stage_len = rp->len;
		cu_kline(k, 0, NULL, "extern __shared__ __align__(16) unsigned char fg_smem[];");
	}
	if (C > 1)
		k->attrs = cu_fmt(k->a, "__cluster_dims__(%d, 1, 1)", C);
	/* a block holding its whole row in shared memory, whose threads fgc
	 * estimates at 32 registers or fewer: ptxas is told the blocks that
	 * fill a multiprocessor's threads.  Left to itself (told only the
	 * block) it spilled rmsnorm f16's loop bounds at 32 registers, and
	 * scheduled softmax and rmsnorm 2-8% slower (H200, 4096 x 32768, f16
	 * and bf16); layernorm, estimated at 36, ran 1-2% slower told so and
	 * is not, nor are a cluster's blocks of 256 (told 8: rmsnorm and
	 * softmax f32 at 32768 columns 1-3% slower; docs/performance.md v20) */
	if (rp->stage && C == 1 && k->gr->est_regs <= SM_REGS / SM_THREADS)
		k->min_blocks = SM_THREADS / rp->block;
	/* the vectors of the part, at a stride of the block's: where a
	 * cluster's parts are each a few whole strides (eight or fewer: the
	 * block's size is chosen for eight), a counted loop unrolled whole, so
	 * that a pass issues all its loads at once (softmax bf16 at 64 to
	 * 4096 x 131072 4-5% faster, f32 1-5%, layernorm 1-2%; H200,
	 * docs/performance.md v21); else four vectors in flight */
	const int64_t stride = (int64_t)rp->block * vw;
	const int64_t sweeps = C > 1 && ri->nred % rp->len == 0 && rp->len % stride == 0 && rp->len / stride <= 8
		? rp->len / stride : 0;
	/* scope 0: the block's part of a row, [c0, c1) */
	const char *c0 = "0", *c1 = cu_fmt(k->a, "%lld", (long long)ri->nred);
	if (C > 1) {
		c0 = cu_fresh(k, 0, "c0");
		cu_kline(k, 0, NULL, "const %s %s = (%s)(blockIdx.x %% %d) * %lld;", k->idx, c0, k->idx, C,
			 (long long)rp->len);
	}
	if (C > 1 && !sweeps) {
		c1 = cu_fresh(k, 0, "c1");
		cu_kline(k, 0, NULL, "const %s %s = min(%s + %lld, (%s)%lld);", k->idx, c1, c0, (long long)rp->len,
			 k->idx, (long long)ri->nred);
	}
	const char *jloop = sweeps ? cu_fmt(k->a, "for (int u = 0; u < %lld; u++)", (long long)sweeps)
		: cu_fmt(k->a, "for (%s j = %s%sthreadIdx.x * %d; j < %s; j += %lld)", k->idx, C > 1 ? c0 : "",
			 C > 1 ? " + " : "", vw, c1, (long long)stride);
	const char *reduce = "fg_block_reduce", *tail = "";
	if (C > 1) {       /* the cluster's combines count their calls (fg_cluster_reduce) */
		reduce = cu_fmt(k->a, "fg_cluster_reduce<%d>", C);
		const char *turn = cu_fresh(k, 0, "turn");
		cu_kline(k, 0, NULL, "fg_cluster_start();");
		cu_kline(k, 0, NULL, "unsigned %s = 0;", turn);
		tail = cu_fmt(k->a, ", %s++", turn);
	}
	cu_kopen(k);       /* 1: a row */
	Ix kc = cu_ix_from_lin(k, &ri->kept, "row", 1, "r");
	for (int r = 0; r < k->reds.n; r++) {
		k->reds.v[r].at = cu_result_ix(k, ri, k->reds.v[r].id, &kc, "row", 1);
		k->reds.v[r].lv = 1;
	}
	/* the lanes of the vector at j: in pass p (npass + 1: the epilogue) */
	for (int p = 1; p <= npass + 1; p++) {
		if (p > npass && !cu_writes_space(k, first, dep))
			break;
		cu_kline(k, 1, NULL, p > npass ? "/* epilogue */" : "/* pass %d */", p);
		int sweeps_of_pass = 1;       /* 2: a thread-first pair's second sweep */
		if (p <= npass) {
			/* a pair's two reductions: one accumulator, or a thread's two */
			for (int r = 0; r < k->reds.n; r++) {
				declared[r] = passes[r] == p && partner[r] < 0 && !mate[r] ? p : 0;
				if (tf[r] && passes[r] == p) {
					if (lead[partner[r]] == r)
						declare_acc(k, &k->reds.v[partner[r]]);
					declare_acc(k, &k->reds.v[r]);
					sweeps_of_pass = 2;
				} else if (partner[r] >= 0 && passes[r] == p) {
					pacc[r] = cu_fresh(k, 1, cu_fmt(k->a, "acc_%s", cu_name(k, k->reds.v[r].id)));
					cu_kline(k, 1, NULL, "%s %s = %s;", PAIRS[kinds[r]].acc, pacc[r], PAIRS[kinds[r]].init);
				}
			}
			cu_declare_reds(k, 1, p, declared);
		}
		for (int sweep = 0; sweep < sweeps_of_pass; sweep++) {
			cu_kopen(k);       /* 2: a vector of the row */
			if (sweeps)
				cu_kline(k, 2, NULL, "const %s j = %s + threadIdx.x * %d + u * %lld;", k->idx, c0, vw,
					 (long long)stride);
			Ix rc = cu_ix_from_lin(k, &ri->red, "j", 2, "j");
			const char *i = cu_fresh(k, 2, "i");
			cu_kline(k, 2, i, "const %s %s = row * %lld + j;", k->idx, i, (long long)ri->nred);
			Ix x = cu_merge_ix(ri, &kc, &rc, i, 2);
			for (int l = 0; l < vw; l++)
				xs[l] = vw > 1 ? cu_lane_of(k, &x, rp->vd, vw, l) : x;
			if (rp->stage) {
				k->stage_lin = i;
				k->stage_off = C > 1 ? cu_fmt(k->a, "(j - %s)", c0) : "j";
			}
			if (p > npass) {
				cu_store_space(k, ri, first, dep, xs, vw, NULL);
			} else {
				for (int r = 0; r < k->reds.n; r++) {
					Red *rd = &k->reds.v[r];
					const FgNode *n = &k->g->nodes[rd->id];
					if (tf[r] && passes[r] == p)
						thread_first_step(k, &k->reds.v[partner[r]], rd, sweep, lead[partner[r]] == r, xs,
							  vw);
					else if (partner[r] >= 0 && passes[r] == p)
						pair_step(k, &k->reds.v[partner[r]], rd, kinds[r], pacc[r], xs, vw);
					for (int l = 0; l < vw && declared[r] == p && sweep == 0; l++)
						cu_kline(k, 2, NULL, "%s",
							 cu_red_step(k, n, rd->acc, cu_gen(k, n->in[0], &xs[l]).e, &xs[l]));
				}
			}
			k->stage_lin = NULL;
			cu_kline(k, 1, NULL, sweeps ? "#pragma unroll" : "#pragma unroll 4");
			cu_kclose(k, jloop);
			for (int r = 0; r < k->gr->nreads && rp->stage; r++)
				k->staged[r] |= k->stage_sm[r] != NULL;
		}
		for (int r = 0; r < k->reds.n && p <= npass; r++) {
			if (tf[r] && passes[r] == p) {
				Red *a = &k->reds.v[partner[r]], *b = &k->reds.v[r];
				pacc[r] = cu_fresh(k, 1, cu_fmt(k->a, "pair_%s", cu_name(k, b->id)));
				cu_kline(k, 1, NULL, "%s %s = fg_pair_add(%s, 0.0f, %s, %s);", PAIRS[kinds[r]].acc,
					 pacc[r], PAIRS[kinds[r]].init, a->acc, b->acc);
			}
			if (partner[r] >= 0 && passes[r] == p)
				pair_values(k, &k->reds.v[partner[r]], &k->reds.v[r], kinds[r], pacc[r], reduce, tail,
					    ri->nred, FEW_ROWS(ri->nkept, C));
			else if (declared[r] == p)
				combine(k, &k->reds.v[r], reduce, tail, ri->nred);
		}
		if (p == npass) {
			/* once per row: values of the reduced shape */
			Ix rx = cu_result_ix(k, ri, first, &kc, "row", 1);
			cu_store_reduced(k, first, dep, &rx, C > 1 ? cu_fmt(k->a, "threadIdx.x == 0 && %s == 0", c0)
								     : "threadIdx.x == 0");
		}
	}
	cu_kclose(k, C > 1 ? cu_fmt(k->a, "for (%s row = blockIdx.x / %d; row < %lld; row += gridDim.x / %d)", k->idx, C,
				    (long long)ri->nkept, C)
			   : cu_fmt(k->a, "for (%s row = blockIdx.x; row < %lld; row += gridDim.x)", k->idx,
				    (long long)ri->nkept));
	if (k->failed)
		return;
	int64_t rows = ri->nkept < INT32_MAX / C ? ri->nkept : INT32_MAX / C;
	cu_path(E, k->gi, rp->stage ? (C > 1 ? CU_PATH_ROW_CLUSTER : CU_PATH_ROW_SMEM)
				    : (C > 1 ? CU_PATH_ROW_STREAM_CLUSTER : CU_PATH_ROW_STREAM));
	const char *how = rp->stage ? "the row read once into shared memory" : "the row streamed from memory once a pass";
	how = C > 1 ? cu_fmt(E->a, "a cluster of %d blocks of %d per row, each taking %lld of its elements, %s (%lld "
			     "bytes a block)", C, rp->block, (long long)rp->len, how, (long long)k->smem)
		    : cu_fmt(E->a, "a block of %d per row, %s (%lld bytes)", rp->block, how, (long long)k->smem);
	cu_emit_comment(E, k->gi, cu_row_desc(E, ri, how));
	const char *name = cu_kname(k, NULL);
	const char *args = cu_emit_kernel(k, name, rp->block, NULL, 0, 1);
	if (C > 8)         /* past the portable cluster size */
		fg_vec_push(E->a, &E->run, cu_func_attr(E, name, "cudaFuncAttributeNonPortableClusterSizeAllowed", 1));
	cu_add_launch_smem(E, name, k->gi, rows * C, rp->block, k->smem, C, args);
	if (!rp->stage) {       /* streamed: the row's tensors read again by each pass after the first */
		int reads = npass + cu_writes_space(k, first, dep) - 1;
		for (int r = 0; r < k->gr->nreads && reads > 0; r++)
			if (cu_numel(cu_shape_of(k, k->gr->reads[r])) == cu_numel(&ri->S))
				cu_reread(E, k->gi, reads * fg_value_bytes(k->g, k->gr->reads[r]));
	}
}

/* A row-reduction group's kernel: the passes each reduction needs (softmax:
 * max, then sum), then the epilogue, over a row in registers where it fits
 * them, else over parts of it (staged in shared memory or streamed). */
void cu_emit_rowreduce(Emit *E, Kern *k)
{
	RedInfo ri;
	int first = cu_group_reductions(k, &ri, "a row reduction group");
	if (first < 0)
		return;
	int *passes = fg_arena_array(k->a, (size_t)k->reds.n + 1, sizeof(int));
	int npass = cu_red_passes(k, passes);
	unsigned char *dep = cu_after_reduction(k);
	RowTeam rt;
	RowParts rp;
	int fits = row_team(k, &ri, &rt);
	/* a row that only a block of 1024 holds, 32 elements a thread, goes to
	 * shared memory where it fits: such a block fills its multiprocessor
	 * alone, which then idles at each reduction (rmsnorm f16 at 32768
	 * columns: 75% of the floor in registers, 98% for layernorm's row in
	 * shared memory, docs/performance.md v8) */
	int wide = fits && rt.vecs * rt.vw > ROW_REGS;
	int *paired = fg_arena_array(k->a, (size_t)k->reds.n + 1, sizeof(int));
	int *partner = fg_arena_array(k->a, (size_t)k->reds.n + 1, sizeof(int));
	PairKind *kinds = fg_arena_array(k->a, (size_t)k->reds.n + 1, sizeof(PairKind));
	memcpy(paired, passes, (size_t)k->reds.n * sizeof(int));
	int once = pair_passes(k, paired, npass, partner, kinds) == 1 && !cu_writes_space(k, first, dep);
	if (row_parts(k, &ri, fits, wide, once, &rp))
		emit_rowreduce_parts(E, k, &ri, &rp, first, passes, npass, dep);
	else
		emit_rowreduce_regs(E, k, &ri, &rt, first, passes, npass, dep);
}
