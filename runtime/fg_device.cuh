/*
 * fg_device.cuh - what every kernel fgc generates includes: the device
 * forms of the ops whose CUDA expression (FG_OPS' cuda column) is more
 * than one operator, the loads and stores of each storage dtype, index
 * helpers, the block-wide reduction the row and column kernels share
 * (and its cluster-wide form, for a row split over a cluster's blocks),
 * and the launch every kernel takes (fg_launch) with the wait it begins
 * with (fg_grid_wait).
 *
 * Semantics follow the reference interpreter (compiler/interp.c), in f32:
 * relu, maximum and minimum propagate NaN as PyTorch does; gelu is the exact
 * erf form; silu is x / (1 + e^-x), so -1000 gives -0 and not NaN.  Values
 * of dtype f16 and bf16 live in registers as float and are rounded once, by
 * fg_to_f16 / fg_to_bf16, where they are stored; bool lives as float 0 or 1
 * and is stored as one byte 0 or 1; i32 lives as int.
 *
 * fg_block_reduce and fg_block_scan are deterministic: for a given block
 * size each thread's partial is combined in the same order every run.  blockDim.x must be a
 * multiple of 32, at most 1024, and every thread of the block must call it.
 */
#ifndef FG_DEVICE_CUH
#define FG_DEVICE_CUH

#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <math_constants.h>
#include <stdint.h>
#include <string.h>
#include <cooperative_groups.h>

#include "fgrt_philox.h"
#include "fgrt_program.h"

#define FG_DEV static __device__ __forceinline__
#define FG_HD static __host__ __device__ __forceinline__ /* also a host test's (tests/runtime) */

/* ------------------------------------------------------------ the ops */

FG_DEV float fg_sigmoid(float a) { return 1.0f / (1.0f + expf(-a)); }
FG_DEV float fg_relu(float a) { return a < 0.0f ? 0.0f : a; }  /* NaN stays */
FG_DEV int fg_relu(int a) { return a < 0 ? 0 : a; }
FG_DEV float fg_gelu(float a) { return 0.5f * a * (1.0f + erff(a * 0.70710678118654752f)); }
FG_DEV float fg_gelu_tanh(float a)
{
	const float k = 0.79788456080286536f; /* sqrt(2 / pi) */
	return 0.5f * a * (1.0f + tanhf(k * (a + 0.044715f * a * a * a)));
}
FG_DEV float fg_silu(float a) { return a / (1.0f + expf(-a)); }

/* sin, cos and tan with their far-argument reduction out of line.  Inline,
 * sinf carries Payne-Hanek's reduction for arguments past about 10^5 (a
 * table walked through local memory): 106 of its 137 instructions, so
 * bench/graphs/chain80_f32.fg's loop at four lanes a thread was 280 KB.  Here
 * the near call is sinf under a guard that lets the compiler drop that
 * path, and the far call is sinf itself, out of line once a kernel: the
 * same function of every input (NaN and the infinities take the far call). */
#define FG_TRIG_NEAR 100000.0f
static __device__ __noinline__ float fg_sinf_far(float a) { return sinf(a); }
static __device__ __noinline__ float fg_cosf_far(float a) { return cosf(a); }
static __device__ __noinline__ float fg_tanf_far(float a) { return tanf(a); }
FG_DEV float fg_sinf(float a) { return fabsf(a) <= FG_TRIG_NEAR ? sinf(a) : fg_sinf_far(a); }
FG_DEV float fg_cosf(float a) { return fabsf(a) <= FG_TRIG_NEAR ? cosf(a) : fg_cosf_far(a); }
FG_DEV float fg_tanf(float a) { return fabsf(a) <= FG_TRIG_NEAR ? tanf(a) : fg_tanf_far(a); }

/* Language version 2's elementwise ops, as the interpreter's fg_ref_* in
 * compiler/fg.h: sign keeps NaN and gives +0 for both zeros (NumPy's);
 * softplus is log(1 + e^a) without overflow; hardsigmoid is relu6(a + 3) / 6;
 * clamp is minimum(maximum(a, lo), hi), NaN from any operand. */
FG_DEV float fg_sign(float a) { return a > 0.0f ? 1.0f : a < 0.0f ? -1.0f : a == 0.0f ? 0.0f : a; }
FG_DEV int fg_sign(int a) { return (a > 0) - (a < 0); }
FG_DEV float fg_softplus(float a) { return a > 0.0f ? a + log1pf(expf(-a)) : log1pf(expf(a)); }
FG_DEV float fg_mish(float a) { return a * tanhf(fg_softplus(a)); }
FG_DEV float fg_hardsigmoid(float a) { return a <= -3.0f ? 0.0f : a >= 3.0f ? 1.0f : a / 6.0f + 0.5f; }
FG_DEV float fg_hardswish(float a) { return a * fg_hardsigmoid(a); }
FG_DEV float fg_leaky_relu(float a, float slope) { return a > 0.0f ? a : a * slope; }
FG_DEV float fg_elu(float a, float alpha) { return a > 0.0f ? a : alpha * expm1f(a); }

/* The fast forms: what an op of dtype f16 or bf16 computes instead of the
 * accurate form above (compiler/cuda/gen.c's FAST table; not under
 * `fgc compile --accurate-math`).  Each is within an eighth of the
 * dtype's unit roundoff of the exact value for every input, so that the
 * stored value is the correctly rounded one or its neighbour, and a
 * chain keeps most of its margin (docs/testing.md, "Fast
 * transcendentals", measured by tests/runtime/fast_math.cu).  f32 keeps
 * the accurate forms: the CUDA guide bounds __expf, the same ex2.approx,
 * by 2 + 1.173 |x| ulps, past f32's gate (1e-5, about 84 ulps) from |x|
 * near 70.
 *
 * fg_ex2 and fg_rcp are single MUFU instructions (ftz: results below
 * 2^-126 become 0, which every dtype's atol admits).  The sigmoid family
 * is 1 / (1 + e^-z): for z far below 0, e^-z is inf and the rcp 0, so
 * the tails are right to the last bit without a cancellation.  The erf
 * GELU is x * sigmoid(p(x)) with p = logit(Phi), an odd function fitted
 * as x * q(|x|), q a degree-8 polynomial on [0, 5.8] fitted for
 * Phi(-|x|) |dp| <= 4e-5 by tools/gelu-fit.py (|x| clamped there: past
 * it Phi is 1 within 4e-9, and |x Phi(x)| below 2^-24, f16's smallest
 * subnormal), with -log2(e) folded into q's coefficients; two MUFU and a
 * dozen other instructions where erff's form takes about twice as many. */
FG_DEV float fg_ex2(float a)
{
	float r;
	asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(a));
	return r;
}
FG_DEV float fg_rcp(float a)
{
	float r;
	asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(a));
	return r;
}
FG_DEV float fg_fast_exp(float a) { return fg_ex2(a * 1.44269504f); }
FG_DEV float fg_fast_sigmoid(float a) { return fg_rcp(1.0f + fg_ex2(a * -1.44269504f)); }
FG_DEV float fg_fast_silu(float a) { return a * fg_fast_sigmoid(a); }
FG_DEV float fg_fast_gelu(float a)
{
	const float t = fminf(fabsf(a), 5.8f);
	float q = -2.681086471e-06f;
	q = fmaf(q, t, 6.642388325e-05f);
	q = fmaf(q, t, -6.276263157e-04f);
	q = fmaf(q, t, 2.574332058e-03f);
	q = fmaf(q, t, -2.664508531e-03f);
	q = fmaf(q, t, -2.523877658e-03f);
	q = fmaf(q, t, -9.655710310e-02f);
	q = fmaf(q, t, -6.306097843e-03f);
	q = fmaf(q, t, -2.300775528e+00f);
	return a * fg_rcp(1.0f + fg_ex2(a * q));
}
/* 0.5 (1 + tanh(z)) is sigmoid(2z): the tanh GELU without its
 * cancellation for x < 0. */
FG_DEV float fg_fast_gelu_tanh(float a)
{
	const float k = -2.0f * 0.79788456080286536f * 1.44269504f; /* -2 sqrt(2/pi) log2(e) */
	return a * fg_rcp(1.0f + fg_ex2(k * a * (1.0f + 0.044715f * a * a)));
}
/* tanh.approx.f32: one MUFU.TANH.  PTX specifies it only to 2^-10.987
 * relative, about an ulp of f16, so fgc rests on what
 * tests/runtime/fast_math.cu measures over every f32 input on the GPU
 * the kernels run on (docs/testing.md): within an eighth of f16's and
 * bf16's u there.  It replaced 1 - 2 / (1 + e^2a) (an ex2, a rcp and a
 * series near 0: ten instructions, three MUFU with the softmax's in a
 * softcapped attention score), now fast_math's candidate. */
FG_DEV float fg_fast_tanh(float a)
{
	float r;
	asm("tanh.approx.f32 %0, %1;" : "=f"(r) : "f"(a));
	return r;
}

/* NaN in, NaN out, whichever side it is on. */
/* NaN in either gives NaN (NumPy's maximum): one max.NaN / min.NaN
 * (sm_80 on), where the comparisons and selects took five instructions
 * in every max reduction and clamp. */
FG_DEV float fg_maximum(float a, float b)
{
	float r;
	asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
	return r;
}
FG_DEV float fg_minimum(float a, float b)
{
	float r;
	asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
	return r;
}
FG_DEV double fg_maximum(double a, double b) { return a != a ? a : b != b ? b : a > b ? a : b; }
FG_DEV double fg_minimum(double a, double b) { return a != a ? a : b != b ? b : a < b ? a : b; }
FG_DEV int fg_maximum(int a, int b) { return a > b ? a : b; }
FG_DEV int fg_minimum(int a, int b) { return a < b ? a : b; }
FG_DEV long long fg_maximum(long long a, long long b) { return a > b ? a : b; }
FG_DEV long long fg_minimum(long long a, long long b) { return a < b ? a : b; }
FG_DEV float fg_clampv(float a, float lo, float hi) { return fg_minimum(fg_maximum(a, lo), hi); }
FG_DEV int fg_clampv(int a, int lo, int hi) { return fg_minimum(fg_maximum(a, lo), hi); }

/* A quotient a / d that is then rounded to an integer (compiler/cuda/gen.c,
 * rounded_later), from r = fg_rcp_rn(d), d's reciprocal computed once: the
 * product a * r is within 2^-21 of the quotient relative to it (r
 * correctly rounded and normal, one more rounding), so it rounds to the
 * same integer unless it lies within 2^-20 of a boundary of that rounding
 * (boundary 0.5: the halves, round's; 0: the integers, floor's, ceil's,
 * trunc's), where the correctly rounded division decides.  NaN, an
 * infinity, a zero divisor and an r that fg_rcp_rn refused (NaN) all take
 * the division.  tests/runtime/div_rounded.cu checks it against a / d over
 * f16 and f32 pairs (boundaries at 2^-23 pass there too; 2^-25 fail). */
FG_HD float fg_rcp_rn(float d) { return fabsf(d) < 0x1p126f ? 1.0f / d : nanf(""); }
FG_HD float fg_div_rounded(float a, float d, float r, float boundary)
{
	const float q = a * r, t = q - boundary;
	return fabsf(t - rintf(t)) > fabsf(q) * 0x1p-20f ? q : a / d;
}

/* floordiv and mod as Python's // and % (the interpreter's fg_ref_floordiv
 * and fg_ref_mod, NumPy's npy_divmod): the quotient rounded toward -inf,
 * the remainder with the divisor's sign.  An integer zero divisor is the
 * caller's to catch (a run-time error, fg_fault); here it gives 0, and
 * INT_MIN // -1 wraps to INT_MIN. */
FG_DEV float fg_floordiv(float a, float b)
{
	if (b == 0.0f)
		return a / b;
	float mod = fmodf(a, b), div = (a - mod) / b;
	if (mod != 0.0f && (b < 0.0f) != (mod < 0.0f))
		div -= 1.0f;
	if (div == 0.0f)
		return copysignf(0.0f, a / b);
	float fl = floorf(div);
	return div - fl > 0.5f ? fl + 1.0f : fl;
}
FG_DEV float fg_mod(float a, float b)
{
	float mod = fmodf(a, b);
	if (b == 0.0f)
		return mod;
	if (mod != 0.0f && (b < 0.0f) != (mod < 0.0f))
		mod += b;
	return mod != 0.0f ? mod : copysignf(0.0f, b);
}
FG_DEV int fg_floordiv(int a, int b)
{
	if (b == 0)
		return 0;
	if (b == -1)
		return (int)(0u - (unsigned)a);
	int q = a / b;
	return a % b != 0 && (a < 0) != (b < 0) ? q - 1 : q;
}
FG_DEV int fg_mod(int a, int b)
{
	if (b == 0 || b == -1)
		return 0;
	int m = a % b;
	return m != 0 && (m < 0) != (b < 0) ? m + b : m;
}

/* Run-time errors (an index out of range, an integer zero divisor): the
 * thread that meets one records it at its check's FgrtFaultRecord
 * (runtime/fgrt_program.h), keeping the lowest position and the value
 * found there; the host reads the records after the run.  A record is
 * taken under its lock only by a thread that lowered its position, so a
 * grid full of bad indices serializes on few of them. */
FG_DEV void fg_fault(FgrtFaultRecord *f, unsigned long long pos, long long value)
{
	if (atomicMin(&f->pos, pos) < pos)
		return;
	while (atomicCAS(&f->lock, 0xffffffffu, 0u) != 0xffffffffu)
		;
	if (*(volatile unsigned long long *)&f->pos == pos)
		*(volatile long long *)&f->value = value;
	__threadfence();
	atomicExch(&f->lock, 0xffffffffu);
}
/* An index into an axis of n: negative counts from the end; out of
 * [-n, n) it is recorded at f (pos: its place among the indices) and
 * replaced by 0, so that the load stays inside the tensor. */
FG_DEV long long fg_index(int i, long long n, FgrtFaultRecord *f, unsigned long long pos)
{
	long long j = i < 0 ? (long long)i + n : (long long)i;
	if (j < 0 || j >= n) {
		fg_fault(f, pos, i);
		return 0;
	}
	return j;
}
/* An integer divisor: 0 is recorded at f (pos: the result element it
 * would divide) and replaced by 1. */
FG_DEV int fg_divisor(int b, FgrtFaultRecord *f, unsigned long long pos)
{
	if (b == 0) {
		fg_fault(f, pos, 0);
		return 1;
	}
	return b;
}

/* cast(x, dtype=...): rounded the way a store to that dtype rounds. */
FG_DEV float fg_round_f16(float a) { return __half2float(__float2half_rn(a)); }
FG_DEV float fg_round_bf16(float a) { return __bfloat162float(__float2bfloat16_rn(a)); }
/* Toward zero, saturating, NaN to 0: the interpreter's i32 rounding. */
FG_DEV int fg_cast_i32(float a)
{
	if (a != a)
		return 0;
	if (a >= 2147483647.0f)
		return 2147483647;
	if (a <= -2147483648.0f)
		return (int)(-2147483647 - 1);
	return (int)a;
}
FG_DEV int fg_cast_i32(long long a)
{
	return a > 2147483647LL ? 2147483647 : a < -2147483648LL ? (int)(-2147483647 - 1) : (int)a;
}
/* The same into i8 and u8: from a float (NaN to 0) or an integer. */
FG_DEV int fg_saturate(float a, int lo, int hi)
{
	/* __float2int_rz clamps to the int range; NaN is 0 by the test, a
	 * select (as a branch, the test cost two instructions an element) */
	const int i = min(max(__float2int_rz(a), lo), hi);
	return a != a ? 0 : i;
}
FG_DEV int fg_saturate(long long a, int lo, int hi) { return a > hi ? hi : a < lo ? lo : (int)a; }
FG_DEV int fg_cast_i8(float a) { return fg_saturate(a, -128, 127); }
FG_DEV int fg_cast_i8(long long a) { return fg_saturate(a, -128, 127); }
FG_DEV int fg_cast_i8(int a) { return fg_saturate((long long)a, -128, 127); }
FG_DEV int fg_cast_u8(float a) { return fg_saturate(a, 0, 255); }
FG_DEV int fg_cast_u8(long long a) { return fg_saturate(a, 0, 255); }
FG_DEV int fg_cast_u8(int a) { return fg_saturate((long long)a, 0, 255); }

/* ----------------------------------------------- loads and stores */

/* A stored element as the value a kernel computes with. */
FG_DEV float fg_read(float x) { return x; }
FG_DEV float fg_read(__half x) { return __half2float(x); }
FG_DEV float fg_read(__nv_bfloat16 x) { return __bfloat162float(x); }
FG_DEV float fg_read(unsigned char x) { return x ? 1.0f : 0.0f; }
FG_DEV int fg_read(int x) { return x; }
FG_DEV int fg_read(signed char x) { return x; }
/* u8 is stored as FgU8, a byte of its own type: bool owns unsigned char's
 * overloads (nonzero reads as 1). */
struct FgU8 {
	unsigned char v;
};
FG_DEV int fg_read(FgU8 x) { return x.v; }
FG_DEV float fg_read(__nv_fp8_e4m3 x) { return (float)x; }
FG_DEV float fg_read(__nv_fp8_e5m2 x) { return (float)x; }
/* One element through the read-only path, any storage type. */
template <typename T>
FG_DEV T fg_ldg(const T *p) { return __ldg(p); }
FG_DEV FgU8 fg_ldg(const FgU8 *p) { return FgU8{__ldg(&p->v)}; }
template <typename T>
FG_DEV T fg_ldg_byte(const T *p)
{
	T r;
	r.__x = __ldg((const unsigned char *)p);
	return r;
}
FG_DEV __nv_fp8_e4m3 fg_ldg(const __nv_fp8_e4m3 *p) { return fg_ldg_byte(p); }
FG_DEV __nv_fp8_e5m2 fg_ldg(const __nv_fp8_e5m2 *p) { return fg_ldg_byte(p); }
/* An accumulator (4 or 8 bytes: a float, a double, an FgArg) through L2
 * alone (ld.global.cg): a partial another block of this launch wrote and
 * fenced before counting its arrival (a split reduction's last block). */
template <typename T>
FG_DEV T fg_ldcg(const T *p)
{
	static_assert(sizeof(T) == 4 || sizeof(T) == 8, "fg_ldcg: an accumulator of 4 or 8 bytes");
	T v;
	if constexpr (sizeof(T) == 8) {
		const unsigned long long u = __ldcg((const unsigned long long *)p);
		memcpy(&v, &u, sizeof v);
	} else {
		const unsigned u = __ldcg((const unsigned *)p);
		memcpy(&v, &u, sizeof v);
	}
	return v;
}

/* A computed value as the element its dtype stores: rounded once. */
FG_DEV float fg_to_f32(float v) { return v; }
FG_DEV __half fg_to_f16(float v) { return __float2half_rn(v); }
FG_DEV __nv_bfloat16 fg_to_bf16(float v) { return __float2bfloat16_rn(v); }
FG_DEV int fg_to_i32(int v) { return v; }
FG_DEV unsigned char fg_to_bool(float v) { return v != 0.0f; }
/* i8 and u8 values are already in range (arithmetic wraps where it is
 * computed, compiler/cuda/gen.c; casts saturate) */
FG_DEV signed char fg_to_i8(int v) { return (signed char)v; }
FG_DEV FgU8 fg_to_u8(int v) { return FgU8{(unsigned char)v}; }
/* The 8-bit floats, rounded to nearest even: e4m3 saturates at +-448 (it
 * has no infinity; NaN stays NaN), e5m2 overflows to infinity (language.md;
 * the host's fgrt_f64_to_f8e4m3 and _f8e5m2 round alike). */
FG_DEV __nv_fp8_e4m3 fg_to_f8e4m3(float v)
{
	__nv_fp8_e4m3 r;
	r.__x = __nv_cvt_float_to_fp8(v, __NV_SATFINITE, __NV_E4M3);
	return r;
}
FG_DEV __nv_fp8_e5m2 fg_to_f8e5m2(float v)
{
	__nv_fp8_e5m2 r;
	r.__x = __nv_cvt_float_to_fp8(v, __NV_NOSAT, __NV_E5M2);
	return r;
}
FG_DEV float fg_round_f8e4m3(float a) { return (float)fg_to_f8e4m3(a); }
FG_DEV float fg_round_f8e5m2(float a) { return (float)fg_to_f8e5m2(a); }

/* vw neighbouring elements, moved by one access (two for 32 bytes): a
 * vectorized kernel's loads and stores, at addresses aligned to the
 * vector's size. */
template <typename T, int N>
struct __align__(sizeof(T) * N) FgVec {
	T v[N];
};

/* Lane I of vector w, as fg_read reads it.  A bf16 is the upper half of
 * the f32 of the same value, so in a vector of an even number of lanes
 * the even lane is its pair's 32-bit word shifted up 16 and the odd one
 * the word with its lower half cleared: one instruction each, where
 * fg_read's conversion of the odd lane took a PRMT and an IMAD.U32 (a
 * bias staged in bf16: 64 of the attention loop's 1,052 instructions).
 * Bit for bit __bfloat162float's, NaNs' payloads too
 * (tests/runtime/bf16_lanes.cu). */
template <int I, typename T, int N>
FG_DEV auto fg_lane(const FgVec<T, N> &w) { return fg_read(w.v[I]); }
template <int I, int N>
FG_HD float fg_lane(const FgVec<__nv_bfloat16, N> &w)
{
	if constexpr (N % 2 != 0) {
		return __bfloat162float(w.v[I]);
	} else {
		unsigned int u;
		memcpy(&u, &w.v[I & ~1], sizeof u);
		float f;
		const unsigned int b = I % 2 ? u & 0xffff0000u : u << 16;
		memcpy(&f, &b, sizeof f);
		return f;
	}
}

template <int N, typename T>
FG_DEV FgVec<T, N> fg_ldv(const T *p) { return *(const FgVec<T, N> *)p; }
template <typename T, int N>
FG_DEV void fg_stv(T *p, const FgVec<T, N> &v) { *(FgVec<T, N> *)p = v; }
/* fg_ldv through the read-only path (ld.global.nc): for data no thread of
 * the kernel writes, so the compiler may issue it above earlier stores. */
template <int N, typename T>
FG_DEV FgVec<T, N> fg_ldv_nc(const T *p)
{
	FgVec<T, N> v;
	if constexpr (sizeof v == 16)
		*(uint4 *)&v = __ldg((const uint4 *)p);
	else if constexpr (sizeof v == 8)
		*(uint2 *)&v = __ldg((const uint2 *)p);
	else if constexpr (sizeof v == 4)
		*(unsigned *)&v = __ldg((const unsigned *)p);
	else if constexpr (sizeof v == 2)
		*(unsigned short *)&v = __ldg((const unsigned short *)p);
	else
		v = *(const FgVec<T, N> *)p;
	return v;
}

/* ------------------------------------------------------------ indices */

/* v clamped to [0, hi]: concat reads each operand at a clamped index and
 * selects, so that every load stays inside its tensor. */
template <typename I>
FG_DEV I fg_clamp(I v, I hi) { return v < 0 ? (I)0 : v > hi ? hi : v; }

/* --------------------------------------------------------- reductions */

struct FgSum {
	template <typename T> __device__ T operator()(T a, T b) const { return a + b; }
};
struct FgMax {
	template <typename T> __device__ T operator()(T a, T b) const { return fg_maximum(a, b); }
};
struct FgMin {
	template <typename T> __device__ T operator()(T a, T b) const { return fg_minimum(a, b); }
};
struct FgProd {
	template <typename T> __device__ T operator()(T a, T b) const { return a * b; }
};

/* argmax and argmin: a value and its index among the reduced elements;
 * the larger (smaller) value wins, a NaN above all, and among equal
 * values, NaNs included, the lower index: the first extreme, in any
 * order of combination. */
template <typename T>
struct FgArg {
	T v;
	int i;
};
FG_DEV FgArg<float> fg_arg(float v, int i) { return FgArg<float>{v, i}; }
FG_DEV FgArg<int> fg_arg(int v, int i) { return FgArg<int>{v, i}; }
FG_DEV bool fg_nan(float v) { return v != v; }
FG_DEV bool fg_nan(int) { return false; }
template <bool Max>
struct FgArgExtreme {
	template <typename T> __device__ FgArg<T> operator()(FgArg<T> a, FgArg<T> b) const
	{
		const bool na = fg_nan(a.v), nb = fg_nan(b.v);
		const bool beyond = Max ? b.v > a.v : b.v < a.v;
		const bool take = na || nb ? nb && (!na || b.i < a.i) : beyond || (b.v == a.v && b.i < a.i);
		return take ? b : a;
	}
};
typedef FgArgExtreme<true> FgArgMax;
typedef FgArgExtreme<false> FgArgMin;

/* Two reductions one pass over a row's parts computes together (an
 * online formulation, compiler/cuda/rowreduce.c), each part of a row
 * summarized by a pair and the pairs combined in order:
 * - a mean and the sum of squared deviations from it (var, layernorm):
 *   Chan's combination of counts, means and sums of squares, never the
 *   cancelling sum(x^2) - n mean^2;
 * - a max and the sum of exp(x - max) (softmax): each sum rescaled to the
 *   larger max.  A part whose max is -inf sums to 0 (its exp(x - max)
 *   would be NaN); the row's sum, where the row's max is -inf, is NaN, as
 *   the two passes give. */
struct FgMoments {
	float n, mean, m2;
};
struct FgWelford {
	__device__ FgMoments operator()(FgMoments a, FgMoments b) const
	{
		if (b.n == 0.0f)
			return a;
		if (a.n == 0.0f)
			return b;
		const float n = a.n + b.n, d = b.mean - a.mean, w = b.n / n;
		return FgMoments{n, a.mean + d * w, a.m2 + b.m2 + d * d * a.n * w};
	}
};
/* FgWelford's combine, taken in steps across a block or a cluster
 * (fg_block_reduce, fg_combine_slots) */
struct FgWelfordSteps : FgWelford {
};
/* A thread's pair after its next part of nc elements (nc > 0): their mean
 * mc and squared deviations c from it, by Chan's combination without
 * branches and with a fast division, so that the loads of later parts
 * need not wait behind a slow path (the IEEE division's). */
FG_DEV FgMoments fg_pair_add(FgMoments a, float nc, float mc, float c)
{
	const float n = a.n + nc, d = mc - a.mean, w = __fdividef(nc, n);
	return FgMoments{n, a.mean + d * w, a.m2 + c + d * d * a.n * w};
}
struct FgExpSum {
	float m, s;
};
/* a's sum rescaled to the max m (m >= a.m): exp(a.m - m) a.s, or a.s
 * itself where the max is a's (m == a.m, -inf or +inf included); a
 * NaN max makes it NaN. */
FG_DEV float fg_rescaled(FgExpSum a, float m) { return a.m == m ? a.s : a.s * expf(a.m - m); }
/* Softmax pairs' combine: the larger max, each sum rescaled to it.  No
 * operator: a block and a cluster combine them in steps (fg_block_reduce,
 * fg_combine_slots), and a reduction that would combine them pair by pair
 * does not compile. */
struct FgOnlineSoftmax {
};
/* A softmax's: the running max mc (a's and the part's: mc >= a.m) and
 * the sum c of the part's exp(x - mc); a's sum is rescaled only where the
 * max grew. */
FG_DEV FgExpSum fg_pair_add(FgExpSum a, float, float mc, float c)
{
	if (mc == -CUDART_INF_F)        /* nothing but -inf yet: c is NaN (0 against logsumexp's guard) */
		return a;
	return FgExpSum{mc, fg_rescaled(a, mc) + c};
}
/* A combined pair's two reductions: the mean and the squared deviations;
 * the max and the sum of exps (NaN where the max is -inf). */
FG_DEV float fg_pair_first(FgMoments a) { return a.mean; }
FG_DEV float fg_pair_second(FgMoments a) { return a.m2; }
FG_DEV float fg_pair_first(FgExpSum a) { return a.m; }
FG_DEV float fg_pair_second(FgExpSum a) { return a.m == -CUDART_INF_F ? CUDART_NAN_F : a.s; }

/* topk's order (compiler/interp.c, topk_before): whether a comes before
 * b, the larger (Largest) or smaller value first, a NaN above every
 * number, equal values (NaNs too) by lower index; an empty pick (index
 * -1) after everything. */
template <bool Largest, typename T>
FG_DEV bool fg_top_before(FgArg<T> a, FgArg<T> b)
{
	if (a.i < 0 || b.i < 0)
		return a.i >= 0 && b.i < 0;
	bool an = fg_nan(a.v), bn = fg_nan(b.v);
	if (an != bn)
		return Largest ? an : bn;
	if (!an && a.v != b.v)
		return Largest ? a.v > b.v : a.v < b.v;
	return a.i < b.i;
}
/* The one of two picks that comes first: one round of topk. */
template <bool Largest>
struct FgTopPick {
	template <typename T> __device__ FgArg<T> operator()(FgArg<T> a, FgArg<T> b) const
	{
		return fg_top_before<Largest>(b, a) ? b : a;
	}
};

/* A thread's first C elements of its share of a row in topk's order,
 * sorted (an empty slot: index -1, after everything), for the rounds of
 * a topk whose row is too long for registers (compiler/cuda/topk.c):
 * each round the block picks among the threads' heads, and the thread
 * whose head was picked pops it, reading its share again only once its
 * list is empty. */
template <bool Largest, typename T, int C>
struct FgTopList {
	FgArg<T> e[C];
	__device__ void clear()
	{
#pragma unroll
		for (int j = 0; j < C; j++)
			e[j] = FgArg<T>{(T)0, -1};
	}
	__device__ void offer(FgArg<T> c)
	{
		if (!fg_top_before<Largest>(c, e[C - 1]))
			return;
		e[C - 1] = c;
#pragma unroll
		for (int j = C - 1; j > 0; j--)
			if (fg_top_before<Largest>(e[j], e[j - 1])) {
				const FgArg<T> t = e[j];
				e[j] = e[j - 1];
				e[j - 1] = t;
			}
	}
	__device__ void pop()
	{
#pragma unroll
		for (int j = 0; j < C - 1; j++)
			e[j] = e[j + 1];
		e[C - 1] = FgArg<T>{(T)0, -1};
	}
};

/* __shfl_xor_sync (xor) or __shfl_sync from lane 0 of each `width`
 * lanes of any accumulator, the pairs and FgArg included: word by word
 * (one SHFL for a float).  Every lane of the warp takes part. */
template <typename T>
FG_DEV T fg_shfl(T v, int o, bool xor_, int width = 32)
{
	static_assert(sizeof(T) % 4 == 0, "an accumulator of whole words");
	unsigned w[sizeof(T) / 4];
	memcpy(w, &v, sizeof v);
	for (unsigned i = 0; i < sizeof(T) / 4; i++)
		w[i] = xor_ ? __shfl_xor_sync(0xffffffffu, w[i], o) : __shfl_sync(0xffffffffu, w[i], 0, width);
	memcpy(&v, w, sizeof v);
	return v;
}

/* Combines the v of each W lanes of a warp (W a power of 2, 32: the
 * warp) with op and returns the first lane's result to all W of them (a
 * butterfly leaves each lane its own rounding).  Every lane of the warp
 * calls it, each W lanes on their own row. */
template <int W = 32, typename T, typename Op>
static __device__ __forceinline__ T fg_warp_reduce(T v, Op op)
{
	static_assert(W >= 1 && W <= 32 && (W & (W - 1)) == 0, "a power of 2 lanes");
	for (int o = W / 2; o > 0; o >>= 1)
		v = op(v, fg_shfl(v, o, true));
	return fg_shfl(v, 0, false, W);
}

/* Combines every thread's v with op and returns the result to all of
 * them: a butterfly within each warp, then every thread combines the
 * warps' results in warp order (the same order, so the same value, in
 * every thread and every run).  The __syncthreads() on entry lets a block
 * call it again right after the previous call returned. */
template <typename T, typename Op>
static __device__ __forceinline__ T fg_block_reduce(T v, Op op)
{
	__shared__ T part[32];
	const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;

	for (int o = 16; o > 0; o >>= 1)
		v = op(v, fg_shfl(v, o, true));
	__syncthreads();
	if (lane == 0)
		part[warp] = v;
	__syncthreads();
	T w = part[0];
	for (unsigned k = 1; k < (blockDim.x + 31u) >> 5; k++)
		w = op(w, part[k]);
	return w;
}

/* A softmax pair over the block in two steps: the max, then the sum of
 * each thread's sum rescaled to it, so that every thread takes one exp
 * where combining pair by pair took two at each step of one chain (5
 * steps in the warp, then one a warp).  The same values in every
 * thread and run.  A cluster's blocks combine theirs alike
 * (fg_combine_slots): softmax f32 at 1 x 32768 7.1 -> 6.5 us, 8 x 131072
 * 9.7 -> 8.7, 4096 x 32768 308 -> 300 (H200, docs/performance.md v22). */
FG_DEV FgExpSum fg_block_reduce(FgExpSum v, FgOnlineSoftmax)
{
	const float m = fg_block_reduce(v.m, FgMax());
	return FgExpSum{m, fg_block_reduce(fg_rescaled(v, m), FgSum())};
}
/* Moments over the block in steps as well (FgWelfordSteps, what fgc
 * passes where one wave holds every row: compiler/cuda/rowreduce.c,
 * FEW_ROWS): the count and the weighted sum of the means, then the
 * squared deviations with each part's distance to the mean, where
 * FgWelford's combine divides at every step of its chain.  A part of no
 * elements counts for nothing. */
FG_DEV float fg_deviations(FgMoments a, float mean)
{
	const float d = a.mean - mean;
	return a.m2 + a.n * d * d;
}
FG_DEV FgMoments fg_block_reduce(FgMoments v, FgWelfordSteps)
{
	const float n = fg_block_reduce(v.n, FgSum()), s = fg_block_reduce(v.n * v.mean, FgSum());
	const float mean = n == 0.0f ? 0.0f : s / n;
	return FgMoments{n, mean, fg_block_reduce(fg_deviations(v, mean), FgSum())};
}

/* The exclusive scan of the threads' v over the block in thread order
 * with op (id its identity): thread t gets the combination of the v of
 * threads 0 .. t-1, and *total that of all of them.  Within a warp a
 * shuffle ladder, then each thread combines the totals of the warps
 * before its own in warp order: the same order, so the same bits, every
 * run.  blockDim.x a multiple of 32; every thread must call it; the
 * __syncthreads() on entry lets a block call it again right away. */
template <typename T, typename Op>
static __device__ __forceinline__ T fg_block_scan(T v, Op op, T id, T *total)
{
	__shared__ T part[32];
	const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;

	for (unsigned o = 1; o < 32; o <<= 1) {
		T u = __shfl_up_sync(0xffffffffu, v, o);
		if (lane >= o)
			v = op(u, v);
	}
	__syncthreads();
	if (lane == 31)
		part[warp] = v;
	__syncthreads();
	T before = id, all = id;
	for (unsigned k = 0; k < blockDim.x >> 5; k++) {
		before = k == warp ? all : before;
		all = op(all, part[k]);
	}
	*total = all;
	T in_warp = __shfl_up_sync(0xffffffffu, v, 1);
	return lane ? op(before, in_warp) : before;
}

/* fg_block_reduce over the C blocks of a thread-block cluster (sm_90),
 * for a row split into C parts: each block writes its result into slot
 * [turn & 1][its rank] of every block's shared memory, the cluster meets
 * at one barrier, and every thread combines its own block's C slots in
 * rank order, so each block gets the same value, in every run.  Every
 * thread of the cluster must call it, `turn` counting the calls from 0.
 * A block that runs ahead writes its next result into the other slots;
 * it comes back to these only past the next call's barrier, which every
 * block reaches after reading them.  Every write into a block comes
 * before its writer's arrival, so a block may leave after its last call.
 * One barrier a call; reading the others' results through distributed
 * shared memory took two (softmax at 64 x 131072 bf16 and 8 x 262144 f32
 * 10-11% and 9-12% faster on the H200, docs/performance.md v21).
 * A block may write into another only once that one has started: every
 * thread calls fg_cluster_start at the kernel's start, and the first
 * call (turn 0) waits for every block's arrival there before its writes
 * (without it, compute-sanitizer's racecheck saw writes into blocks that
 * might not have entered yet). */
FG_DEV void fg_cluster_start(void)
{
	/* clusters are sm_90's; a host test that includes this file compiles
	 * what is not a template (fg_cluster_reduce is one) for another arch */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
	__cluster_barrier_arrive_relaxed();
#endif
}

/* Programmatic dependent launch (sm_90).  fgc launches its kernels with
 * fg_launch, which lets a kernel start before the one ahead of it in the
 * stream has finished, once that one lets it (griddepcontrol.
 * launch_dependents, or its exit); the first statement of every kernel
 * fgc writes is fg_grid_wait, which blocks until the kernel ahead has
 * completed and its writes are visible.  So no load or store of a kernel
 * comes before its predecessor is done: what overlaps is the launch, the
 * next grid's blocks made resident while this grid runs.  A grid of at
 * most a quarter of a wave (its multiprocessors, %nsmid, times the blocks
 * each holds; or at most half as many blocks as multiprocessors) lets the
 * next kernel in at once, its blocks waiting in free slots (rmsnorm bf16
 * at 8 x 1024: 1.56 -> 1.12 us a call, 20 calls a graph; softmax bf16 at
 * 512 x 1024, 512 blocks of 64: 1.98 -> 1.77 us; docs/performance.md v45,
 * v46); a larger grid only as it exits: let in at their start, grids of
 * half a wave to a wave lost up to 22% (rmsnorm bf16 at 4096 x 1024: 4.12
 * -> 5.30 us; at 64 x 131072, 512 blocks of 32 KiB: 10.8 -> 12.7 us). */
FG_DEV void fg_grid_wait(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
	asm volatile("griddepcontrol.wait;" ::: "memory");
	unsigned nsm, smem;
	asm("mov.u32 %0, %%nsmid;" : "=r"(nsm));
	asm("mov.u32 %0, %%total_smem_size;" : "=r"(smem));
	/* a quarter of a wave by each of a multiprocessor's limits: 2,048
	 * threads, 32 blocks, 228 KiB of shared memory (1 KiB more a block
	 * reserved), the limits fgc's report bounds a wave by (compiler/fg.h
	 * FG_SM_*, report.c per_sm); compared by products, since quotients
	 * made a kernel held to 32 registers a thread spill */
	const unsigned long long g4 = 4ull * gridDim.x * gridDim.y * gridDim.z;
	if (g4 <= 2ull * nsm ||
	    (g4 <= 32ull * nsm && g4 * (blockDim.x * blockDim.y * blockDim.z) <= 2048ull * nsm &&
	     g4 * (smem + 1024u) <= (228ull << 10) * nsm))
		asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

template <typename... P, typename... A>
static inline void fg_launch(void (*kernel)(P...), unsigned grid, unsigned block, size_t smem, cudaStream_t stream,
			     A &&...args)
{
	cudaLaunchAttribute at[1];
	at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
	at[0].val.programmaticStreamSerializationAllowed = 1;
	cudaLaunchConfig_t c = {};
	c.gridDim = dim3(grid);
	c.blockDim = dim3(block);
	c.dynamicSmemBytes = smem;
	c.stream = stream;
	c.attrs = at;
	c.numAttrs = 1;
	(void)cudaLaunchKernelEx(&c, kernel, static_cast<A &&>(args)...); /* errors as <<<>>>'s: cudaGetLastError */
}

/* The combination of a block's C slots in rank order: with op, one after
 * the other; a softmax pair's and moments in steps, as fg_block_reduce's. */
template <int C, typename T, typename Op>
static __device__ __forceinline__ T fg_combine_slots(const T *s, Op op)
{
	T w = s[0];
	for (int r = 1; r < C; r++)
		w = op(w, s[r]);
	return w;
}
template <int C>
static __device__ __forceinline__ FgExpSum fg_combine_slots(const FgExpSum *s, FgOnlineSoftmax)
{
	float m = s[0].m, t = 0.0f;
	#pragma unroll
	for (int r = 1; r < C; r++)
		m = fg_maximum(m, s[r].m);
	/* eight at a time: unrolled whole, a cluster of 16 blocks spilled 4
	 * bytes (v2-reduction-composites' logsumexp, 40 registers; 32 so) */
	#pragma unroll 8
	for (int r = 0; r < C; r++)
		t += fg_rescaled(s[r], m);
	return FgExpSum{m, t};
}
template <int C>
static __device__ __forceinline__ FgMoments fg_combine_slots(const FgMoments *s, FgWelfordSteps)
{
	float n = 0.0f, t = 0.0f, m2 = 0.0f;
	#pragma unroll
	for (int r = 0; r < C; r++) {
		n += s[r].n;
		t += s[r].n * s[r].mean;
	}
	const float mean = n == 0.0f ? 0.0f : t / n;
	#pragma unroll 8
	for (int r = 0; r < C; r++)
		m2 += fg_deviations(s[r], mean);
	return FgMoments{n, mean, m2};
}

template <int C, typename T, typename Op>
static __device__ __forceinline__ T fg_cluster_reduce(T v, Op op, unsigned turn)
{
	__shared__ T slot[2][C];
	cooperative_groups::cluster_group cl = cooperative_groups::this_cluster();
	T *const mine = slot[turn & 1u];

	v = fg_block_reduce(v, op);
	if (turn == 0)
		__cluster_barrier_wait();
	if (threadIdx.x < C)
		*cl.map_shared_rank(&mine[cl.block_rank()], threadIdx.x) = v;
	cl.sync();
	return fg_combine_slots<C>(mine, op);
}

#endif
