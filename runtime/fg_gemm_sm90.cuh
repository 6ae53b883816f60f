/*
 * fg_gemm_sm90.cuh - the matmul fgc generates for Hopper (sm_90a), with the
 * group's epilogue applied to the accumulator tile in registers before the
 * one store (issue 7).
 *
 * One kernel per gemm group: fgg::gemm<T, WM, BN, PP, MA, NB, Epi>.
 * D[z] = A[z] B[z] for z < Z, row-major, A [M,K] (or [K,M] when MA: a
 * transpose read as a layout), B [K,N] when NB (N-major, a weight as
 * stored) or [N,K].  Operands are f16 or bf16 (T), accumulated in f32, or
 * f32 (T float) multiplied as tf32 (fgc compile --tf32; the tensor cores
 * read 10 of each operand's 23 mantissa bits), then both K-major: wgmma
 * has no transposed tf32 operands.  A block is three warpgroups: a
 * producer whose one thread feeds the tensor-memory accelerator
 * (cp.async.bulk.tensor, 128-byte swizzle) into STAGES shared buffers,
 * each completing on a `full` mbarrier, and two consumers, each issuing
 * wgmma m64nBNk16 (k8 for tf32) for its WM x BN of D (WM / 64
 * instructions a k step) and releasing a buffer on its `empty` mbarrier
 * once the wgmma that read it retired.  Cooperative blocks (PP 0) give the
 * two consumers the two halves of one 2WM x BN tile; ping-pong blocks (PP
 * 1) give them alternate WM x BN tiles, in turn on named barriers, so that
 * one's epilogue runs while the other's wgmma run.  setmaxnreg moves
 * registers from the producer to the consumers.  The grid is persistent
 * (one block per multiprocessor, tiles t, t + grid, ...), the tile order
 * grouped by 8 tile rows so that neighbouring blocks share A rows and B
 * columns in L2.
 *
 * Residues need no code: the accelerator fills what lies outside [M,K] /
 * [K,N] with zeros, so a partial tile multiplies zeros, and the epilogue
 * is called only for r < M, c < N.  What TMA cannot describe is refused
 * by the compiler, which keeps cuBLASLt for it (compiler/cuda/gemm.c
 * own_gemm_refusal): a row pitch or batch stride that is not a multiple
 * of 16 bytes.
 *
 * The epilogue is a functor the compiler writes per group:
 *     void operator()(int z, int r, int c, float v0, float v1) const
 * v0 and v1 are D[z][r][c] and D[z][r][c + 1] (c even; c + 1 may be N when
 * N is odd: the functor checks).  The wgmma accumulator layout gives each
 * thread such pairs: for n8 block j of each 64 rows, thread t of the
 * warpgroup holds rows 16(t/32) + (t%32)/4 (+ 8) at columns 8j + 2(t%4).
 * A tile wholly inside D calls it unguarded, so the compiler may issue
 * the epilogue's loads together.
 */
#ifndef FG_GEMM_SM90_CUH
#define FG_GEMM_SM90_CUH

#include <type_traits>

#include <cuda.h>               /* CUtensorMap: the type only, no libcuda */

#include "fg_device.cuh"

#define FG_GEMM_DEV static __device__ __forceinline__

namespace fgg {

constexpr int ROW = 128;        /* bytes of a stage's row: one swizzle row */
/* A k block of T: one row of ROW bytes (64 16-bit values, 32 f32). */
template <class T> __host__ __device__ constexpr int bk()
{
	return ROW / (int)sizeof(T);
}
constexpr int CONSUMERS = 2;
constexpr int THREADS = 128 * (1 + CONSUMERS);

/* A consumer warpgroup computes WM x BN of D (WM 64 or 128, BN 64, 128 or
 * 256, at most 128 accumulators a thread).  Cooperative (PP 0): the two
 * consumers split a block tile of 2 WM rows.  Ping-pong (PP 1): the block
 * tile is WM rows and the consumers take turns, tile by tile, so one
 * runs its epilogue while the other's wgmma use the tensor cores.  The
 * shared-memory plan: STAGES buffers of A (BMB rows) and B (BN rows) of
 * ROW bytes, then the barriers: as many buffers as 200 KB hold, at most
 * 8, and at most 4 in ping-pong blocks of 128 accumulators a thread
 * (128 x 128, 64 x 256).  On an H100 the 8192^3 matmul in ping-pong
 * 128 x 128 tiles took 25% less time with 4 than with the 6 that 200 KB
 * hold (8% with a bias, GELU and residual epilogue), its reads from DRAM
 * 2.0 GB instead of 3.8 (ncu), and in 64 x 256 tiles 13-21% less than
 * with 5; with 3 both starved, and cooperative blocks ran alike with 3
 * and 4 (docs/performance.md v35). */
template <int WM, int BN, int PP> struct Tile {
	static_assert(WM * BN <= 128 * 128 && WM % 64 == 0 && BN % 64 == 0, "128 accumulators a thread at most");
	static constexpr int BMB = PP ? WM : 2 * WM;
	static constexpr int A_BYTES = BMB * ROW;
	static constexpr int B_BYTES = BN * ROW;
	static constexpr int FIT = 200 * 1024 / (A_BYTES + B_BYTES), MOST = PP && WM * BN > 64 * 128 ? 4 : 8;
	static constexpr int STAGES = FIT < MOST ? FIT : MOST;
	static constexpr int SMEM = 1024 + STAGES * (A_BYTES + B_BYTES) + 2 * STAGES * 8;
};

/* ------------------------------------------------- the instructions */

FG_GEMM_DEV uint32_t smem_addr(const void *p)
{
	return (uint32_t)__cvta_generic_to_shared(p);
}

FG_GEMM_DEV void bar_init(uint64_t *b, int count)
{
	asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(b)), "r"(count));
}

FG_GEMM_DEV void bar_expect(uint64_t *b, uint32_t bytes)
{
	asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(b)), "r"(bytes)
		     : "memory");
}

FG_GEMM_DEV void bar_arrive(uint64_t *b)
{
	asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_addr(b)) : "memory");
}

/* Until the phase of parity `parity` has completed. */
FG_GEMM_DEV void bar_wait(uint64_t *b, int parity)
{
	asm volatile("{\n.reg .pred done;\nFG_WAIT:\n"
		     "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
		     "@!done bra FG_WAIT;\n}\n" ::"r"(smem_addr(b)),
		     "r"(parity)
		     : "memory");
}

/* A box of map m at coordinates (c0, c1, c2), innermost first, into dst;
 * completes on bar with the box's bytes. */
FG_GEMM_DEV void tma_load(void *dst, const CUtensorMap *m, uint64_t *bar, int c0, int c1, int c2)
{
	asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
		     " [%0], [%1, {%3, %4, %5}], [%2];" ::"r"(smem_addr(dst)),
		     "l"((uint64_t)m), "r"(smem_addr(bar)), "r"(c0), "r"(c1), "r"(c2)
		     : "memory");
}

/* The calling thread's warpgroup, by a shuffle from lane 0: threadIdx.x
 * / 128 itself, but a value ptxas knows is the same across the warp
 * (CUTLASS's canonical_warp_group_idx does the same), so that what is
 * built from it, the wgmma descriptors of a consumer's operands, stays in
 * uniform registers.  From threadIdx.x / 128 ptxas built each descriptor
 * per thread and moved it over (R2UR) before every wgmma: a k block of the
 * generated matmul took 224 instructions for its 16 wgmma, 105 this way;
 * the attention kernel's main loop 820 a tile, 781 (tools/sass.py,
 * docs/performance.md v26).  Every thread of the warp must call it. */
FG_GEMM_DEV int warpgroup()
{
	return __shfl_sync(0xffffffff, threadIdx.x / 128, 0);
}

/* A wgmma shared-memory descriptor, 128-byte swizzle: K-major tiles are
 * rows of 128 bytes, 8 rows (1024 bytes) apart per core-matrix group
 * (sbo), lbo unused; MN-major tiles (16-bit only) are blocks of 64
 * columns, lbo bytes apart, each bk rows of 128 bytes, 8 rows per group
 * (sbo 1024). */
FG_GEMM_DEV uint64_t desc(const void *p, uint32_t lbo, uint32_t sbo)
{
	return (uint64_t)((smem_addr(p) & 0x3FFFF) >> 4) | (uint64_t)(lbo >> 4) << 16 | (uint64_t)(sbo >> 4) << 32 |
	       1ull << 62;
}

/* A descriptor moved by `bytes` (a multiple of 16) through its buffer:
 * the start address field (bits 0-13) holds the address / 16, and shared
 * memory ends below 2^18 bytes, so the sum never carries out of it. A
 * kernel builds each buffer's descriptor once and adds offsets; building
 * one per wgmma cost an address conversion, a mask and a shift apiece
 * (docs/performance.md v24). */
FG_GEMM_DEV uint64_t desc_add(uint64_t d, uint32_t bytes)
{
	return d + (bytes >> 4);
}

FG_GEMM_DEV void wg_fence()
{
	asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}

FG_GEMM_DEV void wg_commit()
{
	asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}

template <int N> FG_GEMM_DEV void wg_wait()
{
	asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}

/* Pins the accumulators at this point of the program: nothing reads or
 * writes them across it (an asm that "changes" each one). */
template <int N> FG_GEMM_DEV void pin(float *d)
{
#pragma unroll
	for (int i = 0; i < N; i++)
		asm volatile("" : "+f"(d[i])::"memory");
}

/* Named barrier id of 256 threads: one consumer waits (sync), the other
 * signals (arrive). */
FG_GEMM_DEV void named_sync(int id)
{
	asm volatile("bar.sync %0, 256;" ::"r"(id) : "memory");
}

FG_GEMM_DEV void named_arrive(int id)
{
	asm volatile("bar.arrive %0, 256;" ::"r"(id) : "memory");
}

template <int R> FG_GEMM_DEV void regs_dec()
{
	asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(R));
}

template <int R> FG_GEMM_DEV void regs_inc()
{
	asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(R));
}

/* wgmma m64nNkK with f32 accumulators d (N / 2 a thread), A and B from
 * shared memory by descriptor; acc 0 overwrites d.  TA / TB: A M-major, B
 * N-major.  The operand lists are written out (PTX takes no arrays), one
 * macro for every width N (FG_WGMMA); the operand type (CT, its PTX name
 * TY), K (16, or 8 for tf32) and the transpose operands (TR: none for
 * tf32, which takes K-major operands alone) are its parameters. */
/* wgmma's accumulator operands: d[0..R) of a thread ("+f"), R = N / 2
 * for a width N, and their placeholders in the instruction's text ("%0,
 * %1, ..."), the first R operands of every wgmma asm below and in
 * fg_attn_sm90.cuh. */
#define FG_WG_D32 \
	"+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
	"+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
	"+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
	"+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
#define FG_WG_D64 FG_WG_D32, \
	"+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
	"+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
	"+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
	"+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
#define FG_WG_D88 FG_WG_D64, \
	"+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), \
	"+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), \
	"+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87])
#define FG_WG_D128 FG_WG_D64, \
	"+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), \
	"+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), \
	"+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), \
	"+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), \
	"+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), \
	"+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), \
	"+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), \
	"+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
#define FG_WG_P32 \
	"%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15" \
	", %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define FG_WG_P64 FG_WG_P32 \
	", %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47" \
	", %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define FG_WG_P88 FG_WG_P64 \
	", %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79" \
	", %80, %81, %82, %83, %84, %85, %86, %87"
#define FG_WG_P128 FG_WG_P64 \
	", %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79" \
	", %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95" \
	", %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111" \
	", %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"

template <int N, class T> struct Wgmma;

/* One width N: its R = N / 2 accumulators (FG_WG_D##R, FG_WG_P##R), then
 * the descriptors' placeholders AB, the accumulate flag's ACC and the
 * transposes' TR, numbered after them. */
#define FG_WGMMA(N, R, CT, TY, K, AB, ACC, TR) \
template <> struct Wgmma<N, CT> { \
	template <int TA, int TB> static __device__ __forceinline__ void mma(float *d, uint64_t da, uint64_t db, int acc) \
	{ \
		asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " ACC ", 0;\n" \
			"wgmma.mma_async.sync.aligned.m64n" #N "k" K ".f32." TY "." TY " {" \
			FG_WG_P##R \
			"}, " AB ", p, 1, 1" TR ";\n}\n" \
			: FG_WG_D##R \
			: "l"(da), "l"(db), "r"(acc), "n"(TA), "n"(TB)); \
	} \
};
/* Its bf16, f16 and tf32 forms (tf32 takes K-major operands alone: no
 * transposes) */
#define FG_WGMMA_TYPES(N, R, AB, ACC, TR) \
	FG_WGMMA(N, R, __nv_bfloat16, "bf16", "16", AB, ACC, TR) \
	FG_WGMMA(N, R, __half, "f16", "16", AB, ACC, TR) \
	FG_WGMMA(N, R, float, "tf32", "8", AB, ACC, "")
FG_WGMMA_TYPES(64, 32, "%32, %33", "%34", ", %35, %36")
FG_WGMMA_TYPES(128, 64, "%64, %65", "%66", ", %67, %68")
FG_WGMMA_TYPES(256, 128, "%128, %129", "%130", ", %131, %132")
/* 176 (the attention kernel's key tile at D = 128): bf16 and f16 */
FG_WGMMA(176, 88, __nv_bfloat16, "bf16", "16", "%88, %89", "%90", ", %91, %92")
FG_WGMMA(176, 88, __half, "f16", "16", "%88, %89", "%90", ", %91, %92")

/* ------------------------------------------------------------ the kernel */

/* Tile t of the persistent order: batch z, then groups of 8 tile rows
 * walked column by column. */
FG_GEMM_DEV void tile_of(int t, int ntm, int ntn, int &z, int &tm, int &tn)
{
	const int per_z = ntm * ntn;
	z = t / per_z;
	const int r = t - z * per_z, per_g = 8 * ntn, g = r / per_g, first = g * 8;
	const int rows = ntm - first < 8 ? ntm - first : 8, q = r - g * per_g;
	tm = first + q % rows;
	tn = q / rows;
}

template <class T, int WM, int BN, int PP, int MA, int NB, class Epi>
__global__ void __launch_bounds__(THREADS, 1)
gemm(const __grid_constant__ CUtensorMap ma, const __grid_constant__ CUtensorMap mb, int M, int N, int K, int Z,
     int za, int zb, Epi epi)
{
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
	using C = Tile<WM, BN, PP>;
	/* a k block of T, and a wgmma k step: 32 bytes of each K-major row */
	constexpr int BK = bk<T>(), KS = 32 / (int)sizeof(T);
	static_assert(sizeof(T) == 2 || (!MA && !NB), "tf32 operands are K-major (wgmma transposes 16-bit ones only)");
	extern __shared__ uint8_t fg_smem[];
	uint8_t *sa = (uint8_t *)(((uintptr_t)fg_smem + 1023) & ~(uintptr_t)1023);
	uint8_t *sb = sa + C::STAGES * C::A_BYTES;
	uint64_t *full = (uint64_t *)(sb + C::STAGES * C::B_BYTES), *empty = full + C::STAGES;
	const int wg = warpgroup(), t = threadIdx.x % 128;
	if (threadIdx.x == 0) {
		for (int s = 0; s < C::STAGES; s++) {
			bar_init(&full[s], 1);
			bar_init(&empty[s], PP ? 4 : 4 * CONSUMERS);     /* lane 0 of each consumer warp */
		}
		asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
	}
	__syncthreads();
	const int ntm = (M + C::BMB - 1) / C::BMB, ntn = (N + BN - 1) / BN, tiles = ntm * ntn * Z;
	const int nk = (K + BK - 1) / BK;
	if (wg == 0) {
		regs_dec<40>();
		if (t != 0)
			return;
		int s = 0, ph = 0;
		for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
			int z, tm, tn;
			tile_of(tile, ntm, ntn, z, tm, tn);
			const int m0 = tm * C::BMB, n0 = tn * BN, az = za ? z : 0, bz = zb ? z : 0;
			for (int kb = 0; kb < nk; kb++) {
				bar_wait(&empty[s], ph ^ 1);
				bar_expect(&full[s], C::A_BYTES + C::B_BYTES);
				uint8_t *a = sa + s * C::A_BYTES, *b = sb + s * C::B_BYTES;
				const int k0 = kb * BK;
				if (MA) {
#pragma unroll
					for (int j = 0; j < C::BMB / 64; j++)
						tma_load(a + j * BK * ROW, &ma, &full[s], m0 + 64 * j, k0, az);
				} else {
					tma_load(a, &ma, &full[s], k0, m0, az);
				}
				if (NB) {
#pragma unroll
					for (int j = 0; j < BN / 64; j++)
						tma_load(b + j * BK * ROW, &mb, &full[s], n0 + 64 * j, k0, bz);
				} else {
					tma_load(b, &mb, &full[s], k0, n0, bz);
				}
				if (++s == C::STAGES)
					s = 0, ph ^= 1;
			}
		}
	} else {
		regs_inc<232>();
		const int c = wg - 1, w = t / 32, l = t % 32;
		float d[WM / 64][BN / 2];
		const uint64_t da0 = desc(sa + (PP ? 0 : c * WM * ROW), MA ? BK * ROW : 16, 1024),
			       db0 = desc(sb, NB ? BK * ROW : 16, 1024);
		/* ping-pong: this consumer's tiles are every other one of the block's */
		for (int i = PP ? c : 0, tile = blockIdx.x + i * gridDim.x; tile < tiles;
		     i += PP ? 2 : 1, tile += (PP ? 2 : 1) * gridDim.x) {
			int z, tm, tn, held = -1;
			tile_of(tile, ntm, ntn, z, tm, tn);
			int s = (int)((int64_t)i * nk % C::STAGES), ph = (int)((int64_t)i * nk / C::STAGES & 1);
			/* ping-pong: after the other consumer's wgmma for the tile before,
			 * so that a wait below is for the barrier's next phase (a parity
			 * names only that one) and the tensor cores serve one at a time */
			if (PP && i > 0)
				named_sync(1 + c);
			for (int kb = 0; kb < nk; kb++) {
				bar_wait(&full[s], ph);
				const uint64_t a = desc_add(da0, s * C::A_BYTES), b = desc_add(db0, s * C::B_BYTES);
#pragma unroll
				for (int mi = 0; mi < WM / 64; mi++)
					pin<BN / 2>(d[mi]);
				wg_fence();
#pragma unroll
				for (int kk = 0; kk < BK / KS; kk++) {
					const uint64_t db = desc_add(b, NB ? kk * 16 * ROW : kk * 32);
					/* 64 rows are 8 KB of A's buffer in either layout */
#pragma unroll
					for (int mi = 0; mi < WM / 64; mi++)
						Wgmma<BN, T>::template mma<MA, NB>(
						    d[mi], desc_add(a, mi * 64 * ROW + (MA ? kk * 16 * ROW : kk * 32)), db, kb > 0 || kk > 0);
				}
				wg_commit();
				/* the previous k block's wgmma have retired: its buffer is free */
				wg_wait<1>();
				if (held >= 0 && l == 0)
					bar_arrive(&empty[held]);
				held = s;
				if (++s == C::STAGES)
					s = 0, ph ^= 1;
			}
			/* every wgmma of the tile issued: the other consumer's next tile
			 * may start, its wgmma queued behind these (waiting for them
			 * first would drain the tensor cores at each tile) */
			if (PP && tile + gridDim.x < tiles)
				named_arrive(2 - c);
			wg_wait<0>();
#pragma unroll
			for (int mi = 0; mi < WM / 64; mi++)
				pin<BN / 2>(d[mi]);
			if (l == 0)
				bar_arrive(&empty[held]);
			const int c0 = tn * BN + (l % 4) * 2, rb = tm * C::BMB + (PP ? 0 : c * WM) + w * 16 + l / 4;
			/* a tile inside D calls the epilogue unguarded, so that the
			 * compiler may issue its loads together, ahead of the stores */
			if ((tm + 1) * C::BMB <= M && (tn + 1) * BN <= N) {
#pragma unroll
				for (int mi = 0; mi < WM / 64; mi++)
#pragma unroll
					for (int j = 0; j < BN / 8; j++) {
						epi(z, rb + mi * 64, c0 + 8 * j, d[mi][4 * j], d[mi][4 * j + 1]);
						epi(z, rb + mi * 64 + 8, c0 + 8 * j, d[mi][4 * j + 2], d[mi][4 * j + 3]);
					}
			} else {
#pragma unroll
				for (int mi = 0; mi < WM / 64; mi++)
#pragma unroll
					for (int j = 0; j < BN / 8; j++) {
						const int r = rb + mi * 64, col = c0 + 8 * j;
						if (col < N && r < M)
							epi(z, r, col, d[mi][4 * j], d[mi][4 * j + 1]);
						if (col < N && r + 8 < M)
							epi(z, r + 8, col, d[mi][4 * j + 2], d[mi][4 * j + 3]);
					}
			}
		}
	}
#else
	__trap();       /* built for another target: the launcher refuses first */
#endif
}

/* ------------------------------------------------------------ the host */

/* Launches gemm<T, WM, BN, PP, MA, NB> on ctx->stream: A and B at a and b, batch
 * strides sa and sb in elements (0: one matrix for every z). */
template <class T, int WM, int BN, int PP, int MA, int NB, class Epi>
static void launch(FgrtContext *ctx, const void *a, const void *b, int M, int N, int K, int Z, int64_t sa,
		   int64_t sb, const Epi &epi)
{
	using C = Tile<WM, BN, PP>;
	const FgrtDtype dt = std::is_same<T, float>::value    ? FGRT_TF32
			     : std::is_same<T, __half>::value ? FGRT_F16 : FGRT_BF16;
	const uint64_t es = sizeof(T);
	const uint32_t BK = bk<T>();
	CUtensorMap ma, mb;
	const int za = sa != 0 && Z > 1, zb = sb != 0 && Z > 1;
	{
		const uint64_t rows = MA ? K : M, cols = MA ? M : K;
		const uint64_t dims[3] = {cols, rows, za ? (uint64_t)Z : 1};
		const uint64_t pitch[2] = {cols * es, za ? (uint64_t)sa * es : rows * cols * es};
		const uint32_t box[3] = {MA ? 64u : BK, MA ? BK : (uint32_t)C::BMB, 1};
		fgrt_tmap(&ma, a, dt, dims, pitch, box);
	}
	{
		const uint64_t rows = NB ? K : N, cols = NB ? N : K;
		const uint64_t dims[3] = {cols, rows, zb ? (uint64_t)Z : 1};
		const uint64_t pitch[2] = {cols * es, zb ? (uint64_t)sb * es : rows * cols * es};
		const uint32_t box[3] = {NB ? 64u : BK, NB ? BK : (uint32_t)BN, 1};
		fgrt_tmap(&mb, b, dt, dims, pitch, box);
	}
	/* per device (a library's models may live on several): the kernel's
	 * shared memory allowed once, and its multiprocessors */
	static unsigned char ready[FGRT_DEVICES];
	const int sms = fgrt_func_attr((const void *)gemm<T, WM, BN, PP, MA, NB, Epi>,
				       cudaFuncAttributeMaxDynamicSharedMemorySize, C::SMEM, ready);
	const int64_t tiles = (int64_t)((M + C::BMB - 1) / C::BMB) * ((N + BN - 1) / BN) * Z;
	const int grid = tiles < sms ? (int)tiles : sms;
	gemm<T, WM, BN, PP, MA, NB, Epi><<<grid, THREADS, C::SMEM, ctx->stream>>>(ma, mb, M, N, K, Z, za, zb, epi);
}

} /* namespace fgg */

#endif
