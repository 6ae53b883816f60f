/*
 * fg_attn_sm90.cuh - the attention kernel fgc generates for Hopper
 * (sm_90a): o = softmax(f(q k^T)) v in one launch, the scores and the
 * probabilities never leaving the chip (the attention group,
 * compiler/cuda/attention.c; issue 16).
 *
 * fga::attention<T, D, NC, BN, SPLIT, PERSIST, SE, Score, Inner, Tiles, Out, Rows, Probs, Psave>:
 * q [Z, Sq, D], k [Zk, Sk, D], v [Zv, Sk, D] of T (f16 or bf16),
 * row-major; output matrix z reads k's matrix bt.k(z) and v's bt.v(z) (K
 * and V shared over query heads: GQA, MQA).  A block takes BM query rows
 * of one z (Plan: 192 at D = 64, else 128) and walks the keys in tiles of
 * BN (Plan), FlashAttention-style, with a producer
 * warpgroup whose one thread feeds the tensor-memory accelerator (q's
 * tile once, then each key tile's K and V, 128-byte swizzle, into STAGES
 * buffers completing on `kfull` and `vfull` mbarriers), and NC consumer
 * warpgroups of 64 query rows each, which per key tile
 *   1. multiply S = Q K^T on wgmma (m64nBNk16, both from shared memory,
 *      f32 accumulators in registers),
 *   2. apply the group's score ops (the Score functor: scale, mask,
 *      bias, softcap, in f32 on the accumulators) and mask the keys past
 *      Sk to -inf (a positive scale that the ops after it commute with
 *      comes as `scale` instead, applied in the exponent: the max of the
 *      unscaled scores is the scaled ones' over the scale),
 *   3. update each row's running max m and sum l (online softmax: the
 *      output so far and l rescaled by exp(m_old - m_new)), P = exp(S - m)
 *      in exp2 form,
 *   4. multiply O += P V on wgmma with P from registers (the accumulator
 *      layout of S is the A-operand layout of the next product, a pair of
 *      T per register) and V by descriptor (N-major, transposed by the
 *      instruction),
 * then release the stage on its `empty` mbarrier.  At the end O / l goes
 * to the Out functor, which computes the group's epilogue and stores.
 * The consumers take turns on the tensor cores (one's softmax runs during
 * the others' products), and the producer runs STAGES tiles ahead.
 *
 * A row whose scores are all -inf (masked out) has l = 0 and yields NaN,
 * as softmax's reference does (max -inf, exp(-inf - -inf)); the running
 * max stands at 0 for such a row meanwhile, so no NaN enters the others.
 * Residues need no code beyond the -inf: the accelerator fills rows past
 * Sq and Sk with zeros, the functors are called for r < Sq and c < Sk
 * only (c even, c + 1 may be Sk when Sk is odd: the functor checks).
 *
 * The functors the compiler writes per group:
 *     void Score::operator()(int z, int r, int c, float &v0, float &v1, const void *st) const
 *     void Inner::operator()(int z, int r, int c, float &v0, float &v1, const void *st) const
 *     bool Tiles::operator()(int r0, int r1, int c0, int c1) const
 *     bool Tiles::kept(int r0, int r1, int c0, int c1) const
 *     void Out::operator()(int z, int r, int c, float v0, float v1) const
 *     void Rows::operator()(int z, int r, float m, float l) const
 *     void Probs::operator()(int z, int r, int c, float &p0, float &p1) const
 *     void Psave::operator()(int z, int r, int c, float p0, float p1) const
 * for S[z][r][c], S[z][r][c + 1] (and O's, P's); st points at the staged
 * operand's pair [r][c], [r][c + 1], read from shared memory into a
 * register of the caller's (Staged; null without one).
 * The accumulator layout gives each thread such pairs: for n8 block j of
 * each 64 rows, thread t of the warpgroup holds rows 16(t/32) + (t%32)/4
 * (+ 8) at columns 8j + 2(t%4).
 *
 * Probs applies the ops between the softmax and the second product
 * (dropout) to the unnormalized probabilities exp(s - m), after the row's
 * sum took them: they are linear in p, so the division by the sum may
 * wait for the end.  Rows gets each row's max m of the scores and sum l
 * of exp(s - m) (m taken as 0 in a row of -inf) at the end, to write a
 * log-sum-exp.
 * Tiles says that every score of rows [r0, r1] and keys [c0, c1] is -inf
 * (a causal mask above the diagonal, a sliding window's outside): such a
 * tile adds nothing to a row.  The producer skips the tiles masked for
 * the block's rows (and the consumers with it).  Query tiles are walked
 * last first, as a causal mask gives them the most keys.  Tiles::kept
 * says that the mask keeps every score there: a consumer calls Inner,
 * the score ops inside the mask alone, on such a tile of its 64 rows (a
 * causal mask's compare runs on the diagonal's tiles only; without a
 * mask the compiler bounds, Inner is Score).
 *
 * Psave writes the probabilities P = exp(s - m) / l themselves, where
 * the graph keeps them (a @save on p, or p an output).  m and l must then
 * be final before the first P: the consumers walk the key tiles twice, a
 * first pass of S = Q K^T alone for each row's max and sum (the producer
 * brings K only), then the pass above with P exact, normalized before
 * the second product (O needs no rescaling and no division at the end).
 *
 * Few blocks (decoding: a handful of query rows against a long cache)
 * would leave most multiprocessors idle.  Then the launch splits the key
 * tiles into runs of part.kts (SPLIT: flash-decoding), a block each; a
 * block leaves its rows' unnormalized O, max m and sum l in part (f32)
 * and counts its arrival, a warp's rows on a counter of their own
 * (part.arrivals); the warp that arrives last for its rows, whichever
 * split it has, merges every split's partials in split order (the same
 * result every run), leaves the counter at 0 for the next launch, then
 * divides and calls Out and Rows: one kernel, where a second one merged
 * the splits before.  Consumers past the block's last query row (one
 * row of a decode step needs one) leave at once; those left take the
 * turns.
 *
 * Many blocks (PERSIST: more query tiles than multiprocessors) would each
 * pay a start (q and the first K tile in, the first product alone) and an
 * end (the last product, the stores) with the tensor cores idle: then the
 * launch is a block a multiprocessor, each taking every gridDim.x-th
 * query tile (a unit) in turn (the compiler's choice where the units are
 * alike and short: a fixed share suits only units of one cost).  The K
 * and V stages run on from unit to unit, as do the consumers' turns, and
 * a consumer's last turn of a unit also issues S = Q K^T of the next
 * unit's first tile beside the last O += P V: the tensor cores get a
 * whole turn there, and the first tile's softmax and the unit's stores
 * run beside the other consumers' turns, where a turn of each product
 * alone left them idle at every unit's start and end.  So a consumer's
 * q rows come on their own (qfull[c]), brought once its last S = Q K^T
 * of the unit before is done (qempty[c]), after the next unit's first K
 * tile; each unit's O, max and sum start from zero.
 */
#ifndef FG_ATTN_SM90_CUH
#define FG_ATTN_SM90_CUH

#include "fg_gemm_sm90.cuh"

namespace fga {

using fgg::bar_arrive;
using fgg::bar_expect;
using fgg::bar_init;
using fgg::bar_wait;
using fgg::desc;
using fgg::desc_add;
using fgg::pin;
using fgg::tma_load;
using fgg::wg_commit;
using fgg::wg_fence;
using fgg::wg_wait;

constexpr int ROW = 128;        /* bytes of a swizzled row: 64 values */
constexpr int MAX_BATCH = 6;    /* batch dims of the output */

/* The consumers, NC warpgroups of 64 query rows (BM a block), and the
 * registers each thread of theirs takes (setmaxnreg; the producer keeps
 * 24): two at 240 registers, or three at 160 (at D = 64, where a tile's
 * products take half as long as at 128 while its softmax does not, so
 * that two consumers' turns cover the third's softmax; the compiler
 * chooses, compiler/cuda/attention.c), and BN, the keys of a tile, also
 * the compiler's: 64 at D = 256, 176 at D = 128 where the scores have no
 * op but the scale (FlashAttention-3's tile: fewer turns a row, each
 * longer), else 128.  Shared memory: q's tile (D / 64 blocks of BM rows
 * of ROW bytes), then STAGES K tiles and STAGES V tiles (D / 64 blocks of
 * BN rows each), then the barriers: at D = 128 three stages of 128-wide K
 * and V (192 KB; two ran within 2% of three on the H200,
 * docs/performance.md v15) or two of 176-wide (176 KB), at D = 64 four,
 * at D = 256 two of 64-wide K and V (128 KB beside q's 64 KB; O alone
 * takes 128 of the 240 registers there, a 64-wide S 32 more).  With a
 * staged score operand of SE bytes an element (Staged), each stage also
 * holds its BM x BN tile (BN * SE / 128 blocks of BM rows of ROW bytes),
 * and the stages are as many of those as fit in the 227 KB a block may
 * have. */
template <int D, int NC, int BN_, int SE = 0> struct Plan {
	static_assert(D == 64 || D == 128 || D == 256, "head dims 64, 128 and 256");
	static_assert(NC == 2 || (NC == 3 && D == 64), "two consumers, or three at D = 64");
	static_assert(BN_ % 16 == 0 && BN_ <= 256 && (D < 256 || BN_ == 64), "key tiles of a multiple of 16 keys up to 256, 64 at D = 256");
	static constexpr int BN = BN_;          /* keys a tile */
	static constexpr int BM = 64 * NC;
	static constexpr int THREADS = 128 * (NC + 1);
	static constexpr int REGS = NC == 3 ? 160 : 240;
	static constexpr int Q_BYTES = BM * D * 2;
	static constexpr int KV_BYTES = BN * D * 2;
	static constexpr int ST_BYTES = BM * BN * SE;   /* a stage's tile of the staged operand */
	static constexpr int smem(int st)
	{
		return 1024 + Q_BYTES + st * (2 * KV_BYTES + ST_BYTES) + 8 * (2 * NC + 4 * st);
	}
	static constexpr int SMEM_MAX = 227 * 1024;    /* a block's dynamic shared memory on sm_90 */
	static constexpr int fit(int st)
	{
		return st > 2 && smem(st) > SMEM_MAX ? fit(st - 1) : st;
	}
	static constexpr int STAGES = fit(D == 64 ? 4 : D == 128 && BN <= 128 ? 3 : 2);
	static constexpr int SMEM = smem(STAGES);
	static_assert(SMEM <= SMEM_MAX, "the stages fit in 227 KB of shared memory");
	static_assert(SE == 0 || BN * SE % 128 == 0, "a staged tile's rows are whole 128-byte blocks");
};

/* A score operand the kernel stages (Plan's SE > 0): the tensor at p of dt
 * holds nz matrices of Sq x Sk (nz 1: shared by every output matrix, else
 * one each), row-major, rows 16-byte aligned.  The producer brings its
 * tile of the block's rows and the key tile's keys by the tensor-memory
 * accelerator, beside K on the same barrier, and the consumers read the
 * score functors' pairs from there (stage_read; 2-byte elements the whole
 * tile's at once, stage_ahead, while the turn's products run: v28-v29):
 * a bias or a mask read per score from global memory ran at 60% of the
 * plain kernel's rate, the L1 busy with eight 128-byte lines a warp load
 * (docs/performance.md v24). */
struct Staged {
	const void *p;
	FgrtDtype dt;
	int nz;
};

/* Where the consumers read a stage's staged tile (byte offsets in it): key
 * block b (ROW bytes, ROW / SE keys) of query row r at b BM ROW + r ROW,
 * its 16-byte chunks swizzled by the row (chunk ^ r % 8: the accelerator's
 * 128-byte swizzle).  A thread reads the pairs of the accumulator layout:
 * its rows 16w + (l / 4) (+ 8) of consumer c's 64, keys 8j + 2(l % 4).
 * lane(c, w, l, h) is the row's start with the row's swizzle in, and at()
 * XORs a key block's chunk into it (the row's start is 128-aligned, its
 * swizzle in bits 4-6): one XOR a read, valid for a lane address plus a
 * tile's start that is 1024-aligned.
 *   SE 2: one ldmatrix.x4 reads key blocks j and j + 1 (j even) of both
 *   rows: lane 8m + i gives row i of matrix m, the warp's rows +8 (m & 1)
 *   at keys +8 (m >> 1), and register m comes back holding the layout's
 *   pair of matrix m (h = m & 1, key block j + (m >> 1)); h is unused.
 *   SE 1: a 2-byte load a pair, row h's address (ldmatrix's 4-byte pieces
 *   do not fall on the layout's pairs).
 * tests/runtime/staged_lanes.cu checks both against the swizzle, lane by
 * lane. */
template <int BM, int SE> struct StagedAt {
	static_assert(SE == 1 || SE == 2, "1- and 2-byte staged elements");
	static __host__ __device__ constexpr uint32_t lane(int c, int w, int l, int h)
	{
		const int r = c * 64 + w * 16 + (SE == 2 ? (l >> 3 & 1) * 8 + (l & 7) : 8 * h + l / 4);
		return r * ROW + ((r & 7) ^ (SE == 2 ? l >> 4 : 0)) * 16 + (SE == 2 ? 0 : 2 * (l % 4));
	}
	static __host__ __device__ constexpr uint32_t at(uint32_t a, int j)
	{
		const int b = 8 * j * SE;       /* the key block's first byte in its row */
		return (a ^ (b % ROW / 16 * 16 + b % 16)) + b / ROW * BM * ROW;
	}
};

/* Where the blocks of a launch split along the keys leave their partial
 * results: per split, output matrix and query row (in that order, C
 * order), O not yet divided by the sum (D floats) and the pair (m, l),
 * the row's max of the scores (-inf when the split's keys are all masked
 * for the row) and its sum of exp(scale (s - m)).  arrivals: a counter
 * per warp of consumer rows (output matrix, query tile, consumer, warp:
 * Z ceil(Sq / BM) NC 4 of them), 0 before a launch and after it
 * (ctx->counters, which the runtime zeroes once). */
struct Part {
	float *o;
	float2 *ml;
	int nsplit, kts;        /* splits; key tiles a split (the last may have fewer) */
	unsigned *arrivals;
};

/* The order in which a launch's blocks take its units (query tiles), the
 * compiler's choice (attn_lpt, AttnPlan's pairs).  lpt, neither SPLIT
 * nor PERSIST: the last lpt matrices' units in one run, the last
 * (costliest under a causal mask) tile of each first; 0, the matrices
 * one after another.  pairs, PERSIST only: the units in pairs that cost
 * alike under a causal mask, a matrix's query tiles t and last - t, a
 * block taking every gridDim.x-th pair (an even count of query tiles). */
struct Order {
	int lpt;
	bool pairs;
};

/* Where output matrix z reads k and v: the output's batch dims (ext, C
 * order), and per dim the stride of k's and v's matrices (0 where they
 * broadcast). */
struct Batch {
	int nd;
	int ext[MAX_BATCH], ks[MAX_BATCH], vs[MAX_BATCH];
	__device__ __forceinline__ void of(int z, int &kz, int &vz) const
	{
		kz = vz = 0;
#pragma unroll
		for (int i = MAX_BATCH - 1; i >= 0; i--) {
			if (i >= nd)
				continue;
			const int c = z % ext[i];
			z /= ext[i];
			kz += c * ks[i];
			vz += c * vs[i];
		}
	}
};

/* wgmma m64nNk16 with A from registers (a[4]: pairs of T, the m16k16
 * fragment of each warp) and B by descriptor, N-major (transposed by the
 * instruction), accumulating into d. */
template <int N, class T> struct WgmmaRA;

/* One width N: its R = N / 2 accumulators (fg_gemm_sm90.cuh's FG_WG_DR
 * operands and FG_WG_PR placeholders, named by pasting R so that their
 * commas never pass through a macro's arguments), then A's four registers
 * and B's descriptor, numbered after them (AB). */
#define FG_WGMMA_RA(N, R, CT, TY, AB) \
template <> struct WgmmaRA<N, CT> { \
	static __device__ __forceinline__ void mma(float *d, const uint32_t *a, uint64_t db) \
	{ \
		asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n" \
			"wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TY "." TY " {" \
			FG_WG_P##R \
			"}, " AB ", p, 1, 1, 1;\n}\n" \
			: FG_WG_D##R \
			: "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db)); \
	} \
};
#define FG_WGMMA_RA_TYPES(N, R, AB) \
	FG_WGMMA_RA(N, R, __nv_bfloat16, "bf16", AB) \
	FG_WGMMA_RA(N, R, __half, "f16", AB)
FG_WGMMA_RA_TYPES(64, 32, "{%32, %33, %34, %35}, %36")
FG_WGMMA_RA_TYPES(128, 64, "{%64, %65, %66, %67}, %68")
FG_WGMMA_RA_TYPES(256, 128, "{%128, %129, %130, %131}, %132")

/* Pins P's registers at this point (fgg::pin's, for wgmma's A operand):
 * computed before the fence that precedes the wgmma reading them, as
 * ptxas otherwise waits for them (its C7519). */
template <int N> static __device__ __forceinline__ void pin_a(uint32_t *a)
{
#pragma unroll
	for (int i = 0; i < N; i++)
		asm volatile("" : "+r"(a[i])::"memory");
}

/* Two floats as a pair of T, the first in the low half. */
template <class T> static __device__ __forceinline__ uint32_t pack2(float lo, float hi);
template <> __device__ __forceinline__ uint32_t pack2<__nv_bfloat16>(float lo, float hi)
{
	__nv_bfloat162 p = __floats2bfloat162_rn(lo, hi);
	return *(uint32_t *)&p;
}
template <> __device__ __forceinline__ uint32_t pack2<__half>(float lo, float hi)
{
	__half2 p = __floats2half2_rn(lo, hi);
	return *(uint32_t *)&p;
}

constexpr float LOG2E = 1.4426950408889634f;

/* The Tiles functor of a group without a mask the compiler can bound:
 * no tile is skipped, none kept whole. */
struct NoSkip {
	__device__ __forceinline__ bool operator()(int, int, int, int) const
	{
		return false;
	}
	__device__ __forceinline__ bool kept(int, int, int, int) const
	{
		return false;
	}
};

/* The Probs functor of a group without ops on the probabilities. */
struct NoProbs {
	__device__ __forceinline__ void operator()(int, int, int, float &, float &) const
	{
	}
};

/* The Psave functor of a group that does not write p (one that does has
 * on = true and stores p[z][r][c], p[z][r][c + 1]). */
struct NoPsave {
	static constexpr bool on = false;
	__device__ __forceinline__ void operator()(int, int, int, float, float) const
	{
	}
};

/* The Rows functor of a group that writes no log-sum-exp. */
struct NoRows {
	__device__ __forceinline__ void operator()(int, int, float, float) const
	{
	}
};

/* The tile bounds' intervals and helpers (compiler/cuda/attention.c,
 * NAME_tiles): a value's least and greatest over a tile. */
struct Range {
	double lo, hi;
};
static __device__ __forceinline__ double min4(double a, double b, double c, double d)
{
	return fmin(fmin(a, b), fmin(c, d));
}
static __device__ __forceinline__ double max4(double a, double b, double c, double d)
{
	return fmax(fmax(a, b), fmax(c, d));
}

/* The merge of a split launch's partials for rows [wr, wr + rv) of
 * matrix z (rv <= RS), by the warp that counted the last split of them:
 * the RS rows side by side, 32 / RS lanes each (LPR), a lane CPL pairs of
 * columns.  O and l are the sums of each split's O and l scaled by
 * exp(scale (m_i - m)), m the largest of the splits' maxima m_i; a split
 * whose keys are all masked for the row (m_i = -inf) adds nothing.  In
 * one pass: the splits in batches of U, a batch's reads in flight at
 * once (a lane's registers for them at most 64), m the largest so far
 * and O and l rescaled when a batch raises it (the online softmax's
 * step), so that up to U splits take one round trip to memory.  The sums
 * run in split order, each lane of a row the same: the same bits
 * whichever split arrived last.  Then O / l to Out and (m, l) to Rows, as
 * the unsplit kernel's end does. */
template <int D, int RS, class Out, class Rows>
static __device__ __forceinline__ void merge_rows(const Part &part, int64_t nrows, int z, int Sq, int wr, int rv,
						  float sl2, float scale, const Out &out, const Rows &rows)
{
	constexpr int LPR = 32 / RS, CPL = D / 2 / LPR, U = CPL < 32 ? 32 / (CPL + 1) : 1;
	const int l = threadIdx.x % 32, s = l / LPR, q = l % LPR, n = part.nsplit;
	if (s >= rv)
		return;
	const int64_t row = (int64_t)z * Sq + wr + s;
	float2 acc[CPL];
#pragma unroll
	for (int c = 0; c < CPL; c++)
		acc[c] = make_float2(0.0f, 0.0f);
	float m = -CUDART_INF_F, ls = 0.0f;
	for (int i0 = 0; i0 < n; i0 += U) {
		float2 ml[U], v[U][CPL];
		float mk = -CUDART_INF_F;
#pragma unroll
		for (int k = 0; k < U; k++) {
			const int64_t at = (int64_t)(i0 + k) * nrows + row;
			ml[k] = make_float2(-CUDART_INF_F, 0.0f);
			if (i0 + k >= n)
				continue;
			ml[k] = __ldcg(&part.ml[at]);
#pragma unroll
			for (int c = 0; c < CPL; c++)
				v[k][c] = __ldcg((const float2 *)(part.o + at * D) + q + LPR * c);
		}
#pragma unroll
		for (int k = 0; k < U; k++)
			mk = fmaxf(mk, ml[k].x);
		if (mk > m) {
			const float a = m == -CUDART_INF_F ? 0.0f : fg_ex2((m - mk) * sl2);
			ls *= a;
#pragma unroll
			for (int c = 0; c < CPL; c++)
				acc[c] = make_float2(acc[c].x * a, acc[c].y * a);
			m = mk;
		}
		const float mb = m * sl2;
#pragma unroll
		for (int k = 0; k < U; k++) {
			if (ml[k].x == -CUDART_INF_F)
				continue;
			const float f = fg_ex2(fmaf(ml[k].x, sl2, -mb));
			ls = fmaf(ml[k].y, f, ls);
#pragma unroll
			for (int c = 0; c < CPL; c++)
				acc[c] = make_float2(fmaf(v[k][c].x, f, acc[c].x), fmaf(v[k][c].y, f, acc[c].y));
		}
	}
	const float inv = 1.0f / ls;
#pragma unroll
	for (int c = 0; c < CPL; c++)
		out(z, wr + s, 2 * (q + LPR * c), acc[c].x * inv, acc[c].y * inv);
	if (q == 0)
		rows(z, wr + s, m * scale, ls);
}

/* The rows of a warp of consumer rows, from wr, merged (merge_rows):
 * side by side as many as a warp's registers take (a lane's pairs at
 * most 32: 16 rows up to D = 128, 8 at 256), in turn past that. */
template <int D, class Out, class Rows>
static __device__ __forceinline__ void merge(const Part &part, int64_t nrows, int z, int Sq, int wr, float sl2,
					     float scale, const Out &out, const Rows &rows)
{
	constexpr int MAXRS = D > 128 ? 2048 / D : 16;
	const int rv = min(16, Sq - wr);
	if (rv == 1)
		merge_rows<D, 1>(part, nrows, z, Sq, wr, 1, sl2, scale, out, rows);
	else if (rv == 2)
		merge_rows<D, 2>(part, nrows, z, Sq, wr, 2, sl2, scale, out, rows);
	else if (rv <= 4)
		merge_rows<D, 4>(part, nrows, z, Sq, wr, rv, sl2, scale, out, rows);
	else
		for (int s0 = 0; s0 < rv; s0 += MAXRS)
			merge_rows<D, MAXRS>(part, nrows, z, Sq, wr + s0, min(MAXRS, rv - s0), sl2, scale, out, rows);
}

template <class T, int D, int NC, int BN_, bool SPLIT, bool PERSIST, int SE, class Score, class Inner, class Tiles,
	  class Out, class Rows, class Probs, class Psave>
__global__ void __launch_bounds__(Plan<D, NC, BN_, SE>::THREADS, 1)
attention(const __grid_constant__ CUtensorMap mq, const __grid_constant__ CUtensorMap mk,
	  const __grid_constant__ CUtensorMap mv, const __grid_constant__ CUtensorMap ms, int msz, int Sq, int Sk,
	  float scale, Batch bt, Score score, Inner inner, Tiles masked, Out out, Rows rows, Probs probs, Psave psave,
	  Part part, int units, Order ord)
{
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
	using P = Plan<D, NC, BN_, SE>;
	constexpr int DB = D / 64, ST = P::STAGES, BM = P::BM, BN = P::BN;
	extern __shared__ uint8_t fg_smem[];
	uint8_t *sq = (uint8_t *)(((uintptr_t)fg_smem + 1023) & ~(uintptr_t)1023);
	uint8_t *sk = sq + P::Q_BYTES, *sv = sk + ST * P::KV_BYTES, *ss = sv + ST * P::KV_BYTES;
	uint64_t *qfull = (uint64_t *)(ss + ST * P::ST_BYTES), *kfull = qfull + NC, *vfull = kfull + ST,
		 *kempty = vfull + ST, *vempty = kempty + ST, *qempty = vempty + ST;
	const int wg = fgg::warpgroup(), t = threadIdx.x % 128;
	const float sl2 = scale * LOG2E;        /* exp(scale s) = 2^(s sl2) */
	/* the last query tiles first: under a causal mask they have the most
	 * keys; a split's blocks side by side */
	const int split = SPLIT ? blockIdx.x % part.nsplit : 0;
	/* the block's unit b (a query tile of one output matrix), and under
	 * PERSIST every gridDim.x-th after it (next_b): its matrix z, first
	 * row m0, last row rlast.  The matrices one after another, but the
	 * last lpt matrices' tiles taken together, the last of each first:
	 * blocks start in order as multiprocessors come free, so that the
	 * grid ends on its shortest units (a causal mask's first tiles)
	 * wherever those units' costs differ.  In pairs: a matrix's query
	 * tiles ntm - 1 - t and t one after the other in a block, every
	 * gridDim.x-th pair: under a causal mask every pair costs alike, and
	 * so does a block's fixed share */
	const bool pairs = PERSIST && ord.pairs;
	const int lpt = ord.lpt;
	int b = SPLIT ? blockIdx.x / part.nsplit : pairs ? 2 * blockIdx.x : blockIdx.x;
	const int ntm = (Sq + BM - 1) / BM, hd = units - lpt * ntm;
	int z, m0, rlast;
	auto unit = [&]() {
		if (pairs) {
			const int tp = b / 2 % (ntm / 2);
			z = b / ntm, m0 = (b % 2 ? tp : ntm - 1 - tp) * BM;
		} else if (!PERSIST && !SPLIT && b >= hd) {
			z = hd / ntm + (b - hd) % lpt, m0 = (ntm - 1 - (b - hd) / lpt) * BM;
		} else {
			z = b / ntm, m0 = (ntm - 1 - b % ntm) * BM;
		}
		rlast = min(m0 + BM, Sq) - 1;
	};
	auto next_b = [&]() { return !pairs ? b + (int)gridDim.x : b % 2 ? b - 1 + 2 * (int)gridDim.x : b + 1; };
	unit();
	/* consumers with rows: those past the last row leave at once (every
	 * unit of a persistent launch has rows for all NC: the compiler's
	 * condition) */
	const int nact = PERSIST ? NC : min(NC, (Sq - m0 + 63) / 64);
	/* this block's key tiles: [n0, nkt) */
	const int nall = (Sk + BN - 1) / BN, n0 = SPLIT ? split * part.kts : 0;
	const int nkt = SPLIT ? min(nall, n0 + part.kts) : nall;
	if (threadIdx.x == 0) {
		for (int c = 0; c < NC; c++) {
			bar_init(&qfull[c], 1);
			bar_init(&qempty[c], 4);        /* q's rows read by the consumer's every S = Q K^T of a unit */
		}
		for (int s = 0; s < ST; s++) {
			bar_init(&kfull[s], 1);
			bar_init(&vfull[s], 1);
			bar_init(&kempty[s], 4 * nact);         /* lane 0 of each consumer warp */
			bar_init(&vempty[s], 4 * nact);
		}
		asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
	}
	__syncthreads();
	if (wg == 0) {
		fgg::regs_dec<24>();
		if (t != 0)
			return;
		/* q's tile of the unit (under PERSIST each consumer's rows once
		 * its last S = Q K^T of the unit before is done, qempty[c], and
		 * after the unit's first K tile, or at its end where it has none:
		 * the consumers' last turns of the unit before take both); K of a
		 * stage is free once every consumer's S = Q K^T read it, V once
		 * their O += P V did: K runs a product ahead of V, and the stages
		 * run on from one unit into the next.  With P written, a first
		 * pass of K alone (the rows' max and sum) */
		int ks = 0, kph = 0, vs = 0, vph = 0, i = 0;
		auto load_q = [&]() {
			if constexpr (PERSIST) {
				for (int c = 0; c < NC; c++) {
					bar_wait(&qempty[c], (i & 1) ^ 1);
					bar_expect(&qfull[c], P::Q_BYTES / NC);
#pragma unroll
					for (int j = 0; j < DB; j++)
						tma_load(sq + j * BM * ROW + c * 64 * ROW, &mq, &qfull[c], 64 * j, m0 + 64 * c, z);
				}
			} else {
				bar_expect(qfull, P::Q_BYTES);
#pragma unroll
				for (int j = 0; j < DB; j++)
					tma_load(sq + j * BM * ROW, &mq, qfull, 64 * j, m0, z);
			}
		};
		do {
			if (i > 0)
				unit();
			int kz, vz;
			bt.of(z, kz, vz);
			bool qin = i == 0;
			if (qin)
				load_q();
			for (int pass = Psave::on ? 0 : 1; pass < 2; pass++)
				for (int n = n0; n < nkt; n++) {
					if (masked(m0, rlast, n * BN, min(n * BN + BN, Sk) - 1))
						continue;
					bar_wait(&kempty[ks], kph ^ 1);
					bar_expect(&kfull[ks], P::KV_BYTES + P::ST_BYTES);
#pragma unroll
					for (int j = 0; j < DB; j++)
						tma_load(sk + ks * P::KV_BYTES + j * BN * ROW, &mk, &kfull[ks], 64 * j, n * BN,
							 kz);
					/* the staged operand's tile, released with K */
					if constexpr (SE > 0) {
#pragma unroll
						for (int j = 0; j < BN * SE / ROW; j++)
							tma_load(ss + ks * P::ST_BYTES + j * BM * ROW, &ms, &kfull[ks],
								 n * BN + ROW / SE * j, m0, msz == 1 ? 0 : z);
					}
					if (++ks == ST)
						ks = 0, kph ^= 1;
					if (!qin)
						load_q(), qin = true;   /* after the unit's first K tile */
					if (pass == 0)
						continue;
					bar_wait(&vempty[vs], vph ^ 1);
					bar_expect(&vfull[vs], P::KV_BYTES);
#pragma unroll
					for (int j = 0; j < DB; j++)
						tma_load(sv + vs * P::KV_BYTES + j * BN * ROW, &mv, &vfull[vs], 64 * j, n * BN,
							 vz);
					if (++vs == ST)
						vs = 0, vph ^= 1;
				}
			if (!qin)
				load_q();
			i++;
		} while (PERSIST && (b = next_b()) < units);
		return;
	}
	if (wg > nact)
		return;         /* no rows */
	fgg::regs_inc<P::REGS>();
	const int c = wg - 1, w = t / 32, l = t % 32;
	int r0, rows_in;        /* the unit's: this thread's rows r0, r0 + 8; every row of the unit one of q's */
	float o[D / 2], mrow[2] = {-CUDART_INF_F, -CUDART_INF_F}, lsum[2] = {0.0f, 0.0f};
	uint32_t pa[BN / 16][4];        /* the previous tile's P, as wgmma's A */
	/* The consumers take turns on the tensor cores in order, round and
	 * round (consumer c waits on named barrier 1 + c, as the generated
	 * matmul's ping-pong): a turn issues O += P V of the previous tile and
	 * S = Q K^T of this one, back to back, then passes the turn; the
	 * softmax of S runs while the others' turns keep the tensor cores
	 * busy.  Consumer 0 takes the first turn without waiting; the last
	 * passes no turn after its last (its last unit's, in a persistent
	 * launch, the turns going round from one unit into the next).  A lone
	 * consumer takes them all. */
	int turns = 0, ps = -1, pph = 0;
	bool owed = false;      /* the last consumer passed consumer 0 a turn it has not taken (PERSIST) */
	auto take_turn = [&]() {
		if (nact > 1 && (c > 0 || turns > 0))
			fgg::named_sync(1 + c);
		turns++;
		owed = false;
	};
	auto pass_turn = [&]() {
		/* the next consumer, c + 1 or 0, by a compare: `% nact` put an
		 * integer division (a MUFU.RCP among ~20 instructions) between
		 * every turn's products and its pass (ncu, docs/performance.md
		 * v23), ptxas recomputing it there rather than keep a register */
		if (nact > 1)
			fgg::named_arrive(c + 1 == nact ? 1 : c + 2);
	};
	/* The operands' descriptors, each buffer's once (desc_add moves them) */
	const uint64_t dq = desc(sq + c * 64 * ROW, 16, 1024), dk = desc(sk, 16, 1024), dv = desc(sv, BN * ROW, 1024);
	/* O += P V of the previous tile (stage ps), issued */
	auto pv = [&]() {
		const uint64_t d0 = desc_add(dv, ps * P::KV_BYTES);
#pragma unroll
		for (int kk = 0; kk < BN / 16; kk++)
			WgmmaRA<D, T>::mma(o, pa[kk], desc_add(d0, kk * 16 * ROW));
	};
	/* S = Q K^T of stage s, issued */
	auto qk = [&](float *sc, int s) {
		const uint64_t d0 = desc_add(dk, s * P::KV_BYTES);
#pragma unroll
		for (int j = 0; j < DB; j++)
#pragma unroll
			for (int kk = 0; kk < 4; kk++)
				fgg::Wgmma<BN, T>::template mma<0, 0>(sc, desc_add(dq, j * BM * ROW + kk * 32),
								      desc_add(d0, j * BN * ROW + kk * 32), j > 0 || kk > 0);
	};
	/* After a tile's turn, on its S: the score ops (with -inf past the
	 * keys), the online softmax, P packed as the next turn's A operand;
	 * the V stage advanced (K's: kdone).  With P written, the max m and
	 * sum l are the first pass's, final: P = exp(s - m) / l exactly, to
	 * Psave, and O needs no rescaling or division. */
	int s = 0, ph = 0, vs = 0, vph = 0;
	auto kdone = [&]() {
		if (l == 0)
			bar_arrive(&kempty[s]);
		if (++s == ST)
			s = 0, ph ^= 1;
	};
	/* The staged operand's pairs of this thread in the tile of K's stage
	 * s, read into registers 16 keys (key blocks j and j + 1, j even) at
	 * a time: sv[2i + h] holds the pair of row r0 + 8h, keys 8(j + i) +
	 * 2(l % 4) (StagedAt says where; one ldmatrix.x4 with 2-byte
	 * elements, where a 4-byte load a pair took 4 loads and their
	 * addresses; four 2-byte loads with 1-byte elements) */
	using At = StagedAt<BM, SE == 0 ? 1 : SE>;
	const uint32_t sa[2] = {fgg::smem_addr(ss) + At::lane(c, w, l, 0), fgg::smem_addr(ss) + At::lane(c, w, l, 1)};
	auto stage_read = [&](uint32_t *sv, int j) {
		if constexpr (SE == 2) {
			asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
				     : "=r"(sv[0]), "=r"(sv[1]), "=r"(sv[2]), "=r"(sv[3])
				     : "r"(At::at(sa[0] + s * P::ST_BYTES, j)));
		} else if constexpr (SE == 1) {
#pragma unroll
			for (int i = 0; i < 2; i++)
#pragma unroll
				for (int h = 0; h < 2; h++) {
					uint16_t v;
					asm volatile("ld.shared.u16 %0, [%1];" : "=h"(v) : "r"(At::at(sa[h] + s * P::ST_BYTES, j + i)));
					sv[2 * i + h] = v;
				}
		}
	};
	/* A 2-byte staged operand's pairs of the whole tile, read ahead: by
	 * BN / 16 ldmatrix.x4 as soon as the turn's products are issued, so
	 * that the reads run beside them, not after S = Q K^T is done,
	 * between its wait and the score ops (stage_read's j, 2i) */
	using Ahead = uint32_t[SE == 2 ? BN / 16 : 1][4];
	auto stage_ahead = [&](Ahead &a) {
		if constexpr (SE == 2) {
#pragma unroll
			for (int i = 0; i < BN / 16; i++)
				stage_read(a[i], 2 * i);
		}
	};
	auto score_ops = [&](float *sc, int k0, const Ahead *ahead) {
		/* 2. the score ops, and -inf past the keys: a tile whose scores
		 * the mask keeps whole for this consumer's rows takes the ops
		 * inside the mask alone (Inner) */
		const int c0 = k0 + 2 * (l % 4);
		auto ops = [&](const auto &f) {
			uint32_t sv[4];         /* key blocks j and j + 1's staged pairs (stage_read) */
			/* pair i of key blocks j and j + 1 (j even) */
			auto st = [&](int j, int i) -> const void * {
				return SE == 0 ? nullptr : ahead ? (const void *)&(*ahead)[j / 2][i] : (const void *)&sv[i];
			};
			if (rows_in && k0 + BN <= Sk) {
#pragma unroll
				for (int j = 0; j < BN / 8; j++) {
					if (j % 2 == 0 && !ahead)
						stage_read(sv, j);
					f(z, r0, c0 + 8 * j, sc[4 * j], sc[4 * j + 1], st(j, j % 2 * 2));
					f(z, r0 + 8, c0 + 8 * j, sc[4 * j + 2], sc[4 * j + 3], st(j, j % 2 * 2 + 1));
				}
			} else {
#pragma unroll
				for (int j = 0; j < BN / 8; j++) {
					const int col = c0 + 8 * j;
					if (j % 2 == 0 && !ahead)
						stage_read(sv, j);      /* every lane (ldmatrix); within the tile */
					if (col < Sk && r0 < Sq)
						f(z, r0, col, sc[4 * j], sc[4 * j + 1], st(j, j % 2 * 2));
					if (col < Sk && r0 + 8 < Sq)
						f(z, r0 + 8, col, sc[4 * j + 2], sc[4 * j + 3], st(j, j % 2 * 2 + 1));
					if (col >= Sk)
						sc[4 * j] = sc[4 * j + 2] = -CUDART_INF_F;
					if (col + 1 >= Sk)
						sc[4 * j + 1] = sc[4 * j + 3] = -CUDART_INF_F;
				}
			}
		};
		if (masked.kept(m0 + 64 * c, min(m0 + 64 * c + 63, Sq - 1), k0, min(k0 + BN, Sk) - 1))
			ops(inner);
		else
			ops(score);
		/* with a staged operand, K's stage is released here, its tile
		 * read (without, as soon as S = Q K^T is done: kdone's callers) */
		if constexpr (SE > 0)
			kdone();
	};
	/* 3. the online softmax of row r0 + 8h, over a tile's scores: the
	 * new max; alpha, what rescales the old sum (and O) to it; l. */
	auto online = [&](const float *sc, int h, float &mb) {
		float mx = mrow[h];
#pragma unroll
		for (int j = 0; j < BN / 8; j++)
			mx = fmaxf(mx, fmaxf(sc[4 * j + 2 * h], sc[4 * j + 2 * h + 1]));
		mx = fmaxf(mx, __shfl_xor_sync(0xffffffff, mx, 1));
		mx = fmaxf(mx, __shfl_xor_sync(0xffffffff, mx, 2));
		mb = (mx == -CUDART_INF_F ? 0.0f : mx) * sl2;
		const float alpha = mx == mrow[h] ? 1.0f : fg_ex2(mrow[h] * sl2 - mb);
		mrow[h] = mx;
		lsum[h] *= alpha;
		return alpha;
	};
	float linv[2];          /* with P written: 1 / l of the first pass */
	/* O's rescaling to the new max, row r0 + 8h (1: none), due before the
	 * next O += P V: two consumers apply it in their next turn, once S =
	 * Q K^T is issued (FlashAttention-3's order: the multiplies run beside
	 * that product, not between this turn and the next; 2-2.7% faster at
	 * D = 128 on the H200, docs/performance.md v23), three at once (their
	 * turn issues both products together: 0.4% slower the other way at
	 * D = 64) */
	float ares[2] = {1.0f, 1.0f};
	auto soft = [&](float *sc, int k0, const Ahead *ahead) {
		score_ops(sc, k0, ahead);
		/* 3. the online softmax, row r0 + 8h of each pair: l rescaled to
		 * the new max now, O (with the previous tile's P V) by rescale,
		 * only where some row of the warp has a new max (64 multiplies a
		 * thread; after the first tiles most rows keep theirs) */
#pragma unroll
		for (int h = 0; h < 2; h++) {
			float mb = (mrow[h] == -CUDART_INF_F ? 0.0f : mrow[h]) * sl2;
			if constexpr (!Psave::on)
				ares[h] = online(sc, h, mb);
#pragma unroll
			for (int j = 0; j < BN / 8; j++) {
				sc[4 * j + 2 * h] = fg_ex2(fmaf(sc[4 * j + 2 * h], sl2, -mb));
				sc[4 * j + 2 * h + 1] = fg_ex2(fmaf(sc[4 * j + 2 * h + 1], sl2, -mb));
				if constexpr (Psave::on) {
					sc[4 * j + 2 * h] *= linv[h];
					sc[4 * j + 2 * h + 1] *= linv[h];
				} else {
					lsum[h] += sc[4 * j + 2 * h] + sc[4 * j + 2 * h + 1];
				}
			}
		}
		/* P written; the ops on the probabilities, after the sums took them */
#pragma unroll
		for (int j = 0; j < BN / 8; j++) {
			const int col = k0 + 2 * (l % 4) + 8 * j;
			if (col < Sk && r0 < Sq) {
				psave(z, r0, col, sc[4 * j], sc[4 * j + 1]);
				probs(z, r0, col, sc[4 * j], sc[4 * j + 1]);
			}
			if (col < Sk && r0 + 8 < Sq) {
				psave(z, r0 + 8, col, sc[4 * j + 2], sc[4 * j + 3]);
				probs(z, r0 + 8, col, sc[4 * j + 2], sc[4 * j + 3]);
			}
		}
	};
	auto rescale = [&]() {
		if (!Psave::on && __any_sync(0xffffffff, ares[0] != 1.0f || ares[1] != 1.0f)) {
#pragma unroll
			for (int j = 0; j < D / 8; j++) {
				o[4 * j] *= ares[0];
				o[4 * j + 1] *= ares[0];
				o[4 * j + 2] *= ares[1];
				o[4 * j + 3] *= ares[1];
			}
		}
		ares[0] = ares[1] = 1.0f;
	};
	/* The rest, once O += P V of the previous tile is done: O rescaled
	 * (three consumers; two in their next turn), P packed into the
	 * operand that product read */
	auto fin = [&](const float *sc) {
		if constexpr (NC != 2)
			rescale();
		/* 4. P as the next turn's A operand */
#pragma unroll
		for (int kk = 0; kk < BN / 16; kk++)
#pragma unroll
			for (int i = 0; i < 4; i++)
				pa[kk][i] = pack2<T>(sc[8 * kk + 2 * i], sc[8 * kk + 2 * i + 1]);
		ps = vs, pph = vph;
		if (++vs == ST)
			vs = 0, vph ^= 1;
	};
	/* Each row's sum l (ls: lsum, or a unit's kept), over the four
	 * threads of its quad */
	auto sum_rows = [&](float *ls) {
#pragma unroll
		for (int h = 0; h < 2; h++) {
			ls[h] += __shfl_xor_sync(0xffffffff, ls[h], 1);
			ls[h] += __shfl_xor_sync(0xffffffff, ls[h], 2);
		}
	};
	/* O / l to Out, (m, l) to Rows, for the thread's rows re0 and re0 + 8
	 * of matrix ze, their max and sum me and le (summed here: a unit's
	 * kept where the next unit's first tile has begun, PERSIST).  A quad
	 * holds 8 columns (16 bytes of 16-bit O) of its rows a key block; the
	 * quads of rows r and r + 1 (lanes l and l ^ 4) trade a block each, so
	 * that one store instruction writes 32 bytes of a row (a whole sector)
	 * from 8 lanes where it wrote 16 bytes from 4: the quad of the even
	 * row stores block j of both rows, the other block j + 1 */
	auto store_unit = [&](int ze, int re0, const float *me, float *le) {
		if constexpr (!Psave::on)
			sum_rows(le);
		const float inv[2] = {Psave::on ? 1.0f : 1.0f / le[0], Psave::on ? 1.0f : 1.0f / le[1]};
		const int cb = 2 * (l % 4), q = (l >> 2) & 1;   /* q: this quad's row is the odd one of the two */
#pragma unroll
		for (int h = 0; h < 2; h++) {
			const int re = re0 - q + 8 * h;  /* the even row */
#pragma unroll
			for (int j = 0; j < D / 8; j += 2) {
				const float a0 = o[4 * j + 2 * h] * inv[h], a1 = o[4 * j + 2 * h + 1] * inv[h];
				const float b0 = o[4 * j + 4 + 2 * h] * inv[h], b1 = o[4 * j + 4 + 2 * h + 1] * inv[h];
				const float g0 = __shfl_xor_sync(~0u, q ? a0 : b0, 4);
				const float g1 = __shfl_xor_sync(~0u, q ? a1 : b1, 4);
				if (re < Sq)
					out(ze, re, cb + 8 * (j + q), q ? g0 : a0, q ? g1 : a1);
				if (re + 1 < Sq)
					out(ze, re + 1, cb + 8 * (j + q), q ? b0 : g0, q ? b1 : g1);
			}
		}
#pragma unroll
		for (int h = 0; h < 2; h++)
			if (l % 4 == 0 && re0 + 8 * h < Sq)
				rows(ze, re0 + 8 * h, me[h] * scale, le[h]);
	};
	/* The unit's first key tile that the mask does not skip (nkt: none),
	 * and its last (nlast, under PERSIST: q's rows are free once its S =
	 * Q K^T is done, q_read) */
	auto first_tile = [&]() {
		int n = n0;
		while (n < nkt && masked(m0, rlast, n * BN, min(n * BN + BN, Sk) - 1))
			n++;
		return n;
	};
	int nlast = nkt - 1;
	auto q_read = [&](int n) {
		if (PERSIST && n == nlast && l == 0)
			bar_arrive(&qempty[c]);
	};
	/* A turn of S = Q K^T alone, into sc, the K stage released (no
	 * wgmma under a branch between a fence and its commit: ptxas would
	 * serialize) */
	auto qk_turn = [&](float *sc) {
		take_turn();
		bar_wait(&kfull[s], ph);
		pin<BN / 2>(sc);
		wg_fence();
		qk(sc, s);
		wg_commit();
		pass_turn();
		wg_wait<0>();
		pin<BN / 2>(sc);
		if constexpr (SE == 0)
			kdone();
	};
	/* A turn: S = Q K^T of tile n into sc, then O += P V of the previous
	 * tile.  Two consumers commit them apart, O rescaled between: the
	 * softmax of S starts once S is done, beside the product into O
	 * (FlashAttention-3's overlap within a warpgroup), and the new P waits
	 * for it.  Three (at 160 registers, where S, O and P live at once
	 * would spill) wait for both: the other two's turns cover a softmax.
	 * done() runs once O += P V is done, before P is packed. */
	auto turn = [&](float *sc, int n, const auto &done) {
		take_turn();
		bar_wait(&kfull[s], ph);
		bar_wait(&vfull[ps], pph);
		pin<D / 2>(o);
		pin<BN / 2>(sc);
		pin_a<BN / 4>(&pa[0][0]);
		wg_fence();
		qk(sc, s);
		if constexpr (NC == 2) {
			wg_commit();
			rescale();      /* beside S = Q K^T on the tensor cores */
			pin<D / 2>(o);
			wg_fence();
		}
		pv();
		wg_commit();
		pass_turn();
		Ahead ahead;
		stage_ahead(ahead);
		if constexpr (NC == 2)
			wg_wait<1>();
		else
			wg_wait<0>();
		pin<BN / 2>(sc);
		if constexpr (SE == 0)
			kdone();
		q_read(n);
		soft(sc, n * BN, SE == 2 ? &ahead : nullptr);
		wg_wait<0>();
		pin<D / 2>(o);
		pin_a<BN / 4>(&pa[0][0]);
		if (l == 0)
			bar_arrive(&vempty[ps]);
		done();
		fin(sc);
	};
	auto rows_of = [&]() {
		r0 = m0 + c * 64 + w * 16 + l / 4;
		rows_in = m0 + BM <= Sq;
		if constexpr (PERSIST) {
			nlast = nkt - 1;
			while (nlast >= n0 && masked(m0, rlast, nlast * BN, min(nlast * BN + BN, Sk) - 1))
				nlast--;
		}
	};
	bool carried = false;   /* the unit's first tile (nf) taken in the unit before's last turn (PERSIST) */
	int nf = n0;
	for (int i = 0;; i++) {
		const bool more = PERSIST && next_b() < units;    /* a unit after this one */
		int n = carried ? nf : n0;
		if (!carried) {
			/* the unit: O, each row's max and sum from zero */
			if (i > 0)
				unit();
			rows_of();
#pragma unroll
			for (int j = 0; j < D / 2; j++)
				o[j] = 0.0f;
			mrow[0] = mrow[1] = -CUDART_INF_F, lsum[0] = lsum[1] = 0.0f;
			ps = -1;
			bar_wait(&qfull[PERSIST ? c : 0], i & 1);
			if (PERSIST && nlast < n0 && l == 0)
				bar_arrive(&qempty[c]);         /* no key tile: q's rows read by none */
			if constexpr (Psave::on) {
				/* the first pass: S = Q K^T a turn, the rows' max and sum */
				for (int n = n0; n < nkt; n++) {
					if (masked(m0, rlast, n * BN, min(n * BN + BN, Sk) - 1))
						continue;
					float sc[BN / 2];
					qk_turn(sc);
					score_ops(sc, n * BN, nullptr);
#pragma unroll
					for (int h = 0; h < 2; h++) {
						float mb;
						online(sc, h, mb);
#pragma unroll
						for (int j = 0; j < BN / 8; j++)
							lsum[h] += fg_ex2(fmaf(sc[4 * j + 2 * h], sl2, -mb)) +
								   fg_ex2(fmaf(sc[4 * j + 2 * h + 1], sl2, -mb));
					}
				}
				sum_rows(lsum);
				linv[0] = 1.0f / lsum[0], linv[1] = 1.0f / lsum[1];
			}
			n = first_tile();       /* the tiles before it not loaded */
			if (n < nkt) {
				/* the first tile's turn: S = Q K^T alone (peeled) */
				float sc[BN / 2];
				qk_turn(sc);
				q_read(n);
				soft(sc, n * BN, nullptr);
				fin(sc);
			}
		}
		for (n++; n < nkt; n++) {
			if (masked(m0, rlast, n * BN, min(n * BN + BN, Sk) - 1))
				continue;       /* not loaded */
			float sc[BN / 2];
			turn(sc, n, [] {});
		}
		/* the last turn with a unit after this one that has key tiles
		 * takes that unit's first tile: its S = Q K^T with the last
		 * tile's O += P V, its softmax beside that product, this unit's
		 * stores once it is done (its matrix, rows, max and sum kept),
		 * then O from zero */
		const int ze = z, re0 = r0;
		nf = nkt;
		if (PERSIST && more && ps >= 0) {
			const int bo = b;
			b = next_b();
			unit();
			nf = first_tile();
			if (nf == nkt)
				b = bo, unit();         /* none: the last turn below */
		}
		if (nf < nkt) {
			float me[2] = {mrow[0], mrow[1]}, le[2] = {lsum[0], lsum[1]};
			rows_of();
			mrow[0] = mrow[1] = -CUDART_INF_F, lsum[0] = lsum[1] = 0.0f;
			bar_wait(&qfull[c], (i + 1) & 1);
			float sc[BN / 2];
			turn(sc, nf, [&] {
				store_unit(ze, re0, me, le);
#pragma unroll
				for (int j = 0; j < D / 2; j++)
					o[j] = 0.0f;
			});
			carried = true;
			continue;
		}
		if (ps >= 0) {          /* the last turn: the last tile's O += P V */
			take_turn();
			bar_wait(&vfull[ps], pph);
			rescale();
			pin<D / 2>(o);
			pin_a<BN / 4>(&pa[0][0]);
			wg_fence();
			pv();
			wg_commit();
			if (c != nact - 1 || more)
				pass_turn();
			owed = more;
			wg_wait<0>();
			pin<D / 2>(o);
			if (l == 0)
				bar_arrive(&vempty[ps]);
		}
		/* O / l to the epilogue (O as it is when P was normalized), or O, m
		 * and l to the split's partials */
		if constexpr (SPLIT) {
			sum_rows(lsum);
			const int cb = 2 * (l % 4);
			/* the partials, then the arrival: the last of the splits' warps
			 * for these rows merges them all (merge) */
			const int64_t nrows = (int64_t)(gridDim.x / part.nsplit / ntm) * Sq, row = (int64_t)z * Sq + r0;
#pragma unroll
			for (int h = 0; h < 2; h++) {
				if (r0 + 8 * h >= Sq)
					continue;
				const int64_t at = split * nrows + row + 8 * h;
				float2 *po = (float2 *)(part.o + at * D + cb);
#pragma unroll
				for (int j = 0; j < D / 8; j++)
					po[4 * j] = make_float2(o[4 * j + 2 * h], o[4 * j + 2 * h + 1]);
				if (l % 4 == 0)
					part.ml[at] = make_float2(mrow[h], lsum[h]);
			}
			if (r0 - l / 4 >= Sq)
				return;         /* none of the warp's rows is one of q's: no partials, no count */
			__threadfence();
			__syncwarp();
			unsigned *const count = part.arrivals + ((int64_t)b * NC + c) * 4 + w;
			int last = 0;
			if (l == 0)
				last = atomicAdd(count, 1u) == (unsigned)part.nsplit - 1;
			if (!__shfl_sync(~0u, last, 0))
				return;
			if (l == 0)
				*count = 0;     /* every split counted: ready for the next launch */
			__threadfence();
			merge<D>(part, nrows, z, Sq, r0 - l / 4, sl2, scale, out, rows);
			return;
		}
		store_unit(z, r0, mrow, lsum);
		if (!more)
			break;
		b = next_b();
		carried = false;
	}
	/* the units after the last one with key tiles (a mask that leaves
	 * some no key) take no turn: consumer 0 takes the one passed to it */
	if (PERSIST && owed && c == 0 && nact > 1)
		fgg::named_sync(1);
#else
	__trap();       /* built for another target: the launcher refuses first */
#endif
}

/* ------------------------------------------------------------ the host */

/* A 3-d tensor map of n matrices [rows, D] of T at p, boxes of 64
 * columns by box_rows rows. */
template <class T>
static void tmap(CUtensorMap *m, const void *p, int64_t rows, int D, int64_t n, uint32_t box_rows)
{
	const FgrtDtype dt = std::is_same<T, __half>::value ? FGRT_F16 : FGRT_BF16;
	const uint64_t dims[3] = {(uint64_t)D, (uint64_t)rows, (uint64_t)n};
	const uint64_t pitch[2] = {(uint64_t)D * sizeof(T), (uint64_t)rows * D * sizeof(T)};
	const uint32_t box[3] = {64, box_rows, 1};
	fgrt_tmap(m, p, dt, dims, pitch, box);
}

/* Launches attention<T, D, NC, SPLIT, PERSIST> on ctx->stream: Z output
 * matrices of Sq rows; k and v hold zk and zv matrices of Sk rows.
 * SPLIT: the key tiles in part.nsplit runs, a block each, merged by the
 * last to arrive (part.arrivals zero).  PERSIST: a block a multiprocessor
 * (at most), each taking every gridDim.x-th query tile (unit) in turn;
 * the compiler's choice (attn_persist).  ord: the order in which the
 * blocks take the units (Order).  SE > 0: st is the staged score
 * operand, of SE-byte elements. */
template <class T, int D, int NC, int BN_, bool SPLIT, bool PERSIST, int SE = 0, class Score, class Inner, class Tiles,
	  class Out, class Rows, class Probs, class Psave>
static void launch(FgrtContext *ctx, const void *q, const void *k, const void *v, int Sq, int Sk, float scale,
		   int Z, int zk, int zv, const Batch &bt, const Score &score, const Inner &inner, const Tiles &masked,
		   const Out &out, const Rows &rows, const Probs &probs, const Psave &psave, const Part &part, const Order &ord,
		   const Staged &st = Staged{})
{
	using P = Plan<D, NC, BN_, SE>;
	CUtensorMap mq, mk, mv, ms = {};
	tmap<T>(&mq, q, Sq, D, Z, PERSIST ? 64 : P::BM);      /* PERSIST: a consumer's rows a load */
	tmap<T>(&mk, k, Sk, D, zk, P::BN);
	tmap<T>(&mv, v, Sk, D, zv, P::BN);
	if constexpr (SE > 0) {
		const uint64_t dims[3] = {(uint64_t)Sk, (uint64_t)Sq, (uint64_t)st.nz};
		const uint64_t pitch[2] = {(uint64_t)Sk * SE, (uint64_t)Sq * Sk * SE};
		const uint32_t box[3] = {ROW / SE, P::BM, 1};
		fgrt_tmap(&ms, st.p, st.dt, dims, pitch, box);
	}
	static_assert(!(SPLIT && PERSIST), "a split launch is not persistent");
	static_assert(!(PERSIST && Psave::on), "a launch that writes P is not persistent");
	auto *kernel = attention<T, D, NC, BN_, SPLIT, PERSIST, SE, Score, Inner, Tiles, Out, Rows, Probs, Psave>;
	static unsigned char ready[FGRT_DEVICES];
	const int sms = fgrt_func_attr((const void *)kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, P::SMEM,
				       ready);
	const int64_t units = (int64_t)((Sq + P::BM - 1) / P::BM) * Z;
	const int64_t shares = PERSIST && ord.pairs ? units / 2 : units;        /* a block's: units, or pairs of them */
	const int64_t grid = PERSIST ? (shares < sms ? shares : sms) : units * (SPLIT ? part.nsplit : 1);
	kernel<<<(unsigned)grid, P::THREADS, P::SMEM, ctx->stream>>>(mq, mk, mv, ms, st.nz, Sq, Sk, scale, bt, score,
								     inner, masked, out, rows, probs, psave, part,
								     (int)units, ord);
}

} /* namespace fga */

#endif
