/*
 * fast_math.cu - the error of each fast form in runtime/fg_device.cuh (what
 * an op of dtype f16 or bf16 computes: compiler/cuda/gen.c's FAST table),
 * of the accurate forms every f32 op keeps, and of the fast candidates fgc
 * does not use, over every f16 input, every bf16 input and a sweep of f32
 * inputs (every 512th bit pattern of each sign, and the specials), against
 * the reference interpreter's f64 formula (FG_OPS' reference column).
 *
 * One line per form, input set and dtype it is judged in: the largest
 * relative error before rounding, in units of that dtype's unit roundoff u
 * (over inputs whose exact result is a normal number there and at least
 * 2^-24, f16's smallest subnormal: below, the gates' atol of 1e-5
 * judges, and ex2.approx.ftz flushes), the largest distance in ulps
 * between the stored value and the correctly rounded one (same inputs),
 * and how many inputs break the dtype's elementwise gate (runtime/check.c,
 * as a binary's --check judges a value fed by a transcendental op), with
 * the worst input (the gate's worst where it fails, else the input of the
 * largest relative error).  Exit status 1 when a used fast form errs by more than
 * u/8 or breaks its gate anywhere, or an accurate form breaks f32's gate:
 * docs/testing.md's table ("Fast transcendentals") is this output.
 *
 * Then the fast forms and the tanh candidate over every f32 input, all
 * 2^32 bit patterns, judged as f16 and bf16 on the device (the reference
 * in f64 there: compiler/fg.h's FG_REF), so that a bound fgc rests on is
 * measured at every input a kernel can feed the form, not one in 512.
 * Its gate column counts the inputs where the form gives inf or NaN and
 * the reference rounds to a finite value of the dtype; the gate itself is
 * not run there (2^32 values): a form within u/8 stores the correctly
 * rounded value or its neighbour, inside the gate.
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

#include "fg_device.cuh"
#include "fgrt.h"
extern "C" {
#include "fg.h"
}

enum Use { ACCURATE, FAST, CANDIDATE };
static const char *const use_name[] = {"accurate", "fast", "candidate"};

/* Every form measured: the op whose reference judges it, and how fgc uses
 * it (ACCURATE: FG_OPS' cuda column, every f32 op; FAST: gen.c's table,
 * f16 and bf16 ops; CANDIDATE: not used, measured to show why). */
#define FORMS(X)                                                                       \
	X(EXP, ACCURATE, "expf", expf(a))                                              \
	X(SIGMOID, ACCURATE, "fg_sigmoid", fg_sigmoid(a))                              \
	X(SILU, ACCURATE, "fg_silu", fg_silu(a))                                       \
	X(GELU, ACCURATE, "fg_gelu", fg_gelu(a))                                       \
	X(GELU_TANH, ACCURATE, "fg_gelu_tanh", fg_gelu_tanh(a))                        \
	X(RECIP, ACCURATE, "1.0f / a", 1.0f / a)                                       \
	X(TANH, ACCURATE, "tanhf", tanhf(a))                                           \
	X(ERF, ACCURATE, "erff", erff(a))                                              \
	X(LOG, ACCURATE, "logf", logf(a))                                              \
	X(SIN, ACCURATE, "fg_sinf", fg_sinf(a))                                        \
	X(COS, ACCURATE, "fg_cosf", fg_cosf(a))                                        \
	X(EXP, FAST, "fg_fast_exp", fg_fast_exp(a))                                    \
	X(SIGMOID, FAST, "fg_fast_sigmoid", fg_fast_sigmoid(a))                        \
	X(SILU, FAST, "fg_fast_silu", fg_fast_silu(a))                                 \
	X(GELU, FAST, "fg_fast_gelu", fg_fast_gelu(a))                                 \
	X(GELU_TANH, FAST, "fg_fast_gelu_tanh", fg_fast_gelu_tanh(a))                  \
	X(TANH, FAST, "fg_fast_tanh", fg_fast_tanh(a))                                 \
	X(RECIP, CANDIDATE, "fg_rcp", fg_rcp(a))                                       \
	X(TANH, CANDIDATE, "1 - 2 / (1 + e^2a)", tanh_by_ex2(a))                       \
	X(LOG, CANDIDATE, "__logf", __logf(a))                                         \
	X(SIN, CANDIDATE, "__sinf", __sinf(a))                                         \
	X(COS, CANDIDATE, "__cosf", __cosf(a))                                         \
	X(EXP, CANDIDATE, "__expf", __expf(a))                                         \
	X(SIGMOID, CANDIDATE, "__fdividef sigmoid", __fdividef(1.0f, 1.0f + __expf(-a)))

/* tanh a = 1 - 2 / (1 + e^2a), fg_fast_tanh until tanh.approx.f32 was
 * measured over every f32 input: exact in the tails, but 1 - 2r cancels
 * as a nears 0, so below |a| = 1/16 the series a (1 - a^2 / 3), whose next
 * term is (2/15) a^4 = 2^-18.9 of it there (docs/testing.md). */
static __device__ float tanh_by_ex2(float a)
{
	const float t = fmaf(-2.0f, fg_rcp(1.0f + fg_ex2(a * 2.885390081777927f)), 1.0f); /* 2 log2(e) */
	return fabsf(a) < 0.0625f ? a * fmaf(a * a, -0.333333343f, 1.0f) : t;
}

static const struct Form {
	FgOp op;
	Use use;
	const char *name;
} forms[] = {
#define X(op, use, name, expr) {FG_OP_##op, use, name},
	FORMS(X)
#undef X
};
enum { NFORMS = sizeof forms / sizeof forms[0] };

/* The form of index `form` at a (FORMS' order). */
static __device__ float form_at(int form, float a)
{
	float r = 0.0f;
	int f = 0;
#define X(op, use, name, expr) if (form == f++) r = expr;
	FORMS(X)
#undef X
	return r;
}

static __global__ void eval(int form, const float *x, float *y, int64_t n)
{
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
		y[i] = form_at(form, x[i]);
}

/* The op's name and its f64 reference over operands a, b, c (unary ops
 * read only a). */
static const char *const op_name[] = {
#define X(id, nm, ar, cl, ty, at, ref, cu, py, tr) nm,
	FG_OPS(X)
#undef X
};

static __host__ __device__ double reference(FgOp op, double a, double b, double c)
{
	/* the attribute of leaky_relu and elu (compiler/interp.c's n->a.k),
	 * which no form measured here reads */
	const double k = 0.0;
	(void)b;
	(void)c;
	switch (op) {
#define X(id, nm, ar, cl, ty, at, ref, cu, py, tr) \
	case FG_OP_##id:                            \
		return (double)(ref);
		FG_OPS(X)
#undef X
	default:
#ifdef __CUDA_ARCH__
		__trap();
#else
		abort();
#endif
	}
	return NAN;
}

/* A dtype values are judged in: its rounding, unit roundoff, smallest
 * normal and largest finite value. */
static const struct Judge {
	const char *name;
	double (*round)(double);
	double u, tiny, huge;
} judges[] = {
	{"f16", [](double v) { return fgrt_f16_to_f64(fgrt_f64_to_f16(v)); }, 0x1p-11, 0x1p-14, 65504.0},
	{"bf16", [](double v) { return fgrt_bf16_to_f64(fgrt_f64_to_bf16(v)); }, 0x1p-8, 0x1p-126, 0x1.fep127},
	{"f32", [](double v) { return (double)(float)v; }, 0x1p-24, 0x1p-126, 0x1.fffffep127},
};
enum { J_F16, J_BF16, J_F32 };

static void check_cuda(cudaError_t e, const char *what)
{
	if (e != cudaSuccess) {
		fprintf(stderr, "fast_math: %s: %s\n", what, cudaGetErrorString(e));
		exit(2);
	}
}

/* Distance in ulps of a dtype (unit roundoff u, smallest normal tiny)
 * between two values it holds (finite). */
static __host__ __device__ double ulps_of(double u, double tiny, double a, double b)
{
	if (a == b)
		return 0;
	double m = fmax(fabs(a), fabs(b));
	int e;
	frexp(fmax(m, tiny), &e);
	return fabs(a - b) / ldexp(u * 2, e - 1);
}
static double ulps(int j, double a, double b) { return ulps_of(judges[j].u, judges[j].tiny, a, b); }

/* Every f32 input, judged as f16 (k = 0) and bf16 (k = 1) on the device:
 * per dtype, the largest relative error in u and the largest distance in
 * ulps between the rounded values, each packed with its input as
 * (float bits << 32 | input bits) so that one atomicMax keeps both, and
 * the count of inf or NaN where the reference is finite in the dtype. */
typedef struct Every {
	unsigned long long rel[2], ulp[2];
	unsigned long long nonfinite[2];
} Every;

/* judges' u, tiny and huge of f16 and bf16, for the device */
typedef struct Bounds {
	double u[2], tiny[2], huge[2];
} Bounds;

static __device__ double round_dev(int k, double v)
{
	return k == 0 ? (double)__half2float(__double2half(v)) : (double)__bfloat162float(__double2bfloat16(v));
}

static __global__ void every_f32(int form, FgOp op, Bounds b, Every *out)
{
	const double *u = b.u, *tiny = b.tiny, *huge = b.huge;
	unsigned long long rel[2] = {0, 0}, ulp[2] = {0, 0}, nonfinite[2] = {0, 0};
	const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
	for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < 1ull << 32; i += stride) {
		const float a = __uint_as_float((uint32_t)i);
		const float y = form_at(form, a);
		const double ref = reference(op, (double)a, 0, 0), r = fabs(ref);
		if (!isfinite(ref))
			continue;
		for (int k = 0; k < 2; k++) {
			if (r < fmax(tiny[k], 0x1p-24) || r > huge[k])
				continue;
			if (!isfinite(y)) {
				nonfinite[k]++;
				continue;
			}
			const float e = (float)(fabs((double)y - ref) / r / u[k]);
			rel[k] = max(rel[k], (unsigned long long)__float_as_uint(e) << 32 | i);
			const double act = round_dev(k, (double)y), exp_r = round_dev(k, ref);
			if (isfinite(act) && isfinite(exp_r)) {
				const float d = (float)ulps_of(u[k], tiny[k], act, exp_r);
				ulp[k] = max(ulp[k], (unsigned long long)__float_as_uint(d) << 32 | i);
			}
		}
	}
	for (int k = 0; k < 2; k++) {
		atomicMax(&out->rel[k], rel[k]);
		atomicMax(&out->ulp[k], ulp[k]);
		atomicAdd(&out->nonfinite[k], nonfinite[k]);
	}
}

/* The float whose bits are b: a key's value (its high half) or input. */
static float bits_float(uint32_t b)
{
	float f;
	memcpy(&f, &b, 4);
	return f;
}

/* The fast forms and the candidates that could replace one (tanh's) over
 * every f32 input: lines of the same table; returns how many fail. */
static int every_f32_lines(void)
{
	Every *d, h;
	Bounds b;
	int bad = 0;
	const int judged[2] = {J_F16, J_BF16};  /* Every's k */
	for (int k = 0; k < 2; k++) {
		const Judge &J = judges[judged[k]];
		b.u[k] = J.u, b.tiny[k] = J.tiny, b.huge[k] = J.huge;
	}
	check_cuda(cudaMalloc(&d, sizeof h), "cudaMalloc");
	for (int f = 0; f < NFORMS; f++) {
		const Form &F = forms[f];
		if (F.use != FAST && !(F.use == CANDIDATE && F.op == FG_OP_TANH))
			continue;
		check_cuda(cudaMemset(d, 0, sizeof h), "cudaMemset");
		every_f32<<<132 * 16, 256>>>(f, F.op, b, d);
		check_cuda(cudaGetLastError(), "launch");
		check_cuda(cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost), "copy out");
		for (int k = 0; k < 2; k++) {
			const double rel = bits_float((uint32_t)(h.rel[k] >> 32));
			const int fails = F.use == FAST && (rel > 0.125 || h.nonfinite[k] > 0);
			printf("| %s | %s | %s | every f32 (2^32) | %s | %.4f | %.0f | %llu non-finite | %.9g |%s\n", F.name,
			       op_name[F.op], use_name[F.use], judges[judged[k]].name, rel,
			       (double)bits_float((uint32_t)(h.ulp[k] >> 32)), h.nonfinite[k],
			       (double)bits_float((uint32_t)h.rel[k]), fails ? " FAIL" : "");
			bad += fails;
		}
	}
	cudaFree(d);
	return bad;
}

typedef struct Set {
	const char *name;
	std::vector<float> x;
	int judged[3];          /* the dtypes this set is judged in */
	int nj;
} Set;

int main(void)
{
	Set sets[3] = {{"every f16", {}, {J_F16}, 1}, {"every bf16", {}, {J_BF16}, 1},
		       {"f32 sweep", {}, {J_F16, J_BF16, J_F32}, 3}};
	for (uint32_t h = 0; h < 65536; h++) {
		sets[0].x.push_back(fgrt_f16_to_f32((uint16_t)h));
		sets[1].x.push_back(fgrt_bf16_to_f32((uint16_t)h));
	}
	for (uint32_t b = 0; b < 0x7f800000u; b += 512)
		for (uint32_t s = 0; s < 2; s++) {
			uint32_t u = b | s << 31;
			float f;
			memcpy(&f, &u, 4);
			sets[2].x.push_back(f);
		}
	sets[2].x.push_back(INFINITY);
	sets[2].x.push_back(-INFINITY);
	sets[2].x.push_back(NAN);

	int bad = 0;
	printf("| form | op | used | inputs | judged as | max rel err (u) | max ulps stored | gate fails | worst input |\n");
	printf("|---|---|---|---|---|---|---|---|---|\n");
	for (Set &s : sets) {
		int64_t n = (int64_t)s.x.size();
		float *dx, *dy;
		check_cuda(cudaMalloc(&dx, n * sizeof(float)), "cudaMalloc");
		check_cuda(cudaMalloc(&dy, n * sizeof(float)), "cudaMalloc");
		check_cuda(cudaMemcpy(dx, s.x.data(), n * sizeof(float), cudaMemcpyHostToDevice), "copy in");
		std::vector<float> y(n);
		std::vector<double> ref(n), act(n), exp_r(n);
		FgOp ref_op = FG_OP_COUNT;
		for (int f = 0; f < NFORMS; f++) {
			const Form &F = forms[f];
			eval<<<264, 256>>>(f, dx, dy, n);
			check_cuda(cudaGetLastError(), "launch");
			check_cuda(cudaMemcpy(y.data(), dy, n * sizeof(float), cudaMemcpyDeviceToHost), "copy out");
			if (F.op != ref_op) {
				for (int64_t i = 0; i < n; i++)
					ref[i] = reference(F.op, (double)s.x[i], 0, 0);
				ref_op = F.op;
			}
			for (int jj = 0; jj < s.nj; jj++) {
				const int j = s.judged[jj];
				const Judge &J = judges[j];
				if (F.use == FAST && j == J_F32)
					continue;       /* f32 never runs the fast forms */
				double worst_rel = 0, worst_ulps = 0;
				int64_t worst_i = -1;
				for (int64_t i = 0; i < n; i++) {
					act[i] = J.round((double)y[i]);
					exp_r[i] = J.round(ref[i]);
					const double r = fabs(ref[i]);
					if (r < fmax(J.tiny, 0x1p-24) || r > J.huge || !isfinite(y[i]))
						continue;
					const double rel = fabs((double)y[i] - ref[i]) / r / J.u;
					if (rel > worst_rel) {
						worst_rel = rel;
						worst_i = i;
					}
					if (isfinite(act[i]) && isfinite(exp_r[i]))
						worst_ulps = fmax(worst_ulps, ulps(j, act[i], exp_r[i]));
				}
				FgrtTol tol = fgrt_tolerance(J.name, FGRT_GATE_TRANSC);
				FgrtCheck c;
				fgrt_check(act.data(), exp_r.data(), NULL, n, &tol, &c);
				int fails = F.use == FAST ? c.nbad > 0 || worst_rel > 0.125 : F.use == ACCURATE && j == J_F32 && c.nbad > 0;
				/* the input of the largest relative error, or the
				 * gate's worst where one fails */
				const int64_t w = c.nbad > 0 ? c.worst : worst_i;
				char worst[64] = "-";
				if (w >= 0)
					snprintf(worst, sizeof worst, "%.9g", (double)s.x[w]);
				printf("| %s | %s | %s | %s | %s | %.4f | %.0f | %lld | %s |%s\n", F.name, op_name[F.op],
				       use_name[F.use], s.name, J.name, worst_rel, worst_ulps, (long long)c.nbad, worst,
				       fails ? " FAIL" : "");
				bad += fails;
			}
		}
		cudaFree(dx);
		cudaFree(dy);
	}
	bad += every_f32_lines();
	printf("%s: %d line(s) fail\n", bad ? "FAIL" : "ok", bad);
	return bad ? 1 : 0;
}
