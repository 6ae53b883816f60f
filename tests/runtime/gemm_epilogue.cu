/*
 * gemm_epilogue.cu - the runtime's cuBLASLt matmul with fused epilogues
 * (fgrt_gemm_ep) against a CPU reference in double, on a GPU.
 *
 *   gemm_epilogue [--quick]        the sweep: PASS/FAIL per operand and
 *                                  result type and epilogue, exit 1 on a FAIL
 *   gemm_epilogue --case NAME      one failure on purpose (gpu-failures.sh):
 *                                  lt-null-handle, lt-unsupported, aux-ld,
 *                                  bias-missing, residual-relu; the runtime must report it
 *                                  and exit 1
 *
 * The sweep: every epilogue (none, BIAS, RELU, RELU_BIAS, GELU, GELU_BIAS
 * and the four AUX forms, and none and BIAS with a residual C added: D =
 * A B + C (+ bias), FgrtGemm.residual) for bf16, f16 and f32 operands with a result of
 * their own type, bf16 and f16 operands with an f32 result, and f32
 * operands multiplied as tf32 (FGRT_TF32, fgc compile --tf32) into f32,
 * judged by the tf32 gate (fgrt_tolerance(..., 2)); a tf32 group none of
 * whose cases leaves the f32 gate fails (tf32 was not in effect); odd shapes
 * (m, n, k among 1, 7, 33, 64, 127), A and B each stored plain or
 * transposed, one matrix or a strided batch of 3, and per pair one case
 * with an outer batch dim of 2 over a broadcast B and a bias per matrix
 * (and C per matrix, as D).
 * --quick keeps two shapes, two transposes and the batch of 3 (for
 * compute-sanitizer).  Inputs are drawn in [-1, 1] and rounded to their
 * types; D and aux are filled with 0xff bytes (NaN) first, so an element
 * left unwritten fails.
 *
 * Verdicts follow testing.md: D (and a GELU aux, the GELU input) by the
 * RMSE gate of its type against the f64 reference, fgrt_check with
 * fgrt_tolerance(type, 1); a ReLU aux mask bit by bit: each bit must
 * agree with the sign of the exact ReLU input or with the D the call wrote
 * (D being checked against the reference), or that input must lie within
 * 4 roundings in D's type of zero, 4u(|A B| + |bias|).  The band is
 * cuBLASLt's: on an H200 with cuBLASLt 13.0, RELU_AUX_BIAS with a bf16 or
 * f16 D set bits where it wrote D = 0, for exact inputs within 2e-3 of
 * zero (bf16; 2e-4 for f16), as if the mask came from the product rounded
 * to D's type before the bias was added; a bit in the wrong place fails
 * far outside the band.
 *
 * Linked with runtime/fgrt_lib.cu, half.c and check.c; it provides the
 * fg_program the library links against, and catches the runtime's
 * failures (FgrtError, fgrt_lib.h), printing them as the binaries do.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublasLt.h>
#include <cuda_runtime.h>

#include "fgrt.h"
#include "fgrt_lib.h"
#include "fgrt_program.h"

extern const FgrtProgram fg_program = {
	"gemm_epilogue", "tests/runtime/gemm_epilogue.cu", NULL, 0, 0, NULL, 0, 0, 0, 0, 0,
};

void fg_program_run(FgrtContext *ctx)
{
	(void)ctx;
}

/* The test's own CUDA calls: a failure here is the test's, not a verdict. */
static void check_cuda(cudaError_t e, const char *call, int line)
{
	if (e != cudaSuccess) {
		fprintf(stderr, "gemm_epilogue: %s:%d: %s: %s (%s)\n", __FILE__, line, call, cudaGetErrorString(e),
			cudaGetErrorName(e));
		exit(2);
	}
}
#define CK(call) check_cuda((call), #call, __LINE__)

/* A failure the runtime reported, as a binary prints it. */
static void report(const FgrtError &e)
{
	fprintf(stderr, "gemm_epilogue: error: %s\n", e.msg);
	fflush(stderr);
}

/* ------------------------------------------------------------- values */

/* A type's name; tf32: f32 data that cuBLASLt multiplies as tf32. */
static const char *type_name(FgrtDtype t)
{
	return t == FGRT_TF32 ? "tf32" : fgrt_dtype_name[t];
}
static const char *const ep_name[] = {"none", "BIAS", "RELU", "RELU_BIAS", "GELU", "GELU_BIAS",
				      "RELU_AUX", "RELU_AUX_BIAS", "GELU_AUX", "GELU_AUX_BIAS"};

static size_t type_size(FgrtDtype t)
{
	return t == FGRT_F32 || t == FGRT_TF32 ? 4 : 2;
}

static double round_to(FgrtDtype t, double x)
{
	switch (t) {
	case FGRT_F32:
	case FGRT_TF32:
		return (float)x;
	case FGRT_F16:
		return fgrt_f16_to_f64(fgrt_f64_to_f16(x));
	default:
		return fgrt_bf16_to_f64(fgrt_f64_to_bf16(x));
	}
}

/* x must be a value of type t already. */
static void put(FgrtDtype t, void *buf, int64_t i, double x)
{
	if (t == FGRT_F32 || t == FGRT_TF32)
		((float *)buf)[i] = (float)x;
	else if (t == FGRT_F16)
		((uint16_t *)buf)[i] = fgrt_f64_to_f16(x);
	else
		((uint16_t *)buf)[i] = fgrt_f64_to_bf16(x);
}

static double get(FgrtDtype t, const void *buf, int64_t i)
{
	if (t == FGRT_F32 || t == FGRT_TF32)
		return ((const float *)buf)[i];
	if (t == FGRT_F16)
		return fgrt_f16_to_f64(((const uint16_t *)buf)[i]);
	return fgrt_bf16_to_f64(((const uint16_t *)buf)[i]);
}

static uint64_t rng;
static double uniform(void)      /* [-1, 1) */
{
	rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
	return (double)(rng >> 11) * 0x1p-52 - 1.0;
}

/* cuBLASLt's GELU: the tanh form. */
static double gelu_tanh(double x)
{
	return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}

/* -------------------------------------------------------------- a case */

typedef struct Case {
	FgrtDtype ab, d;
	FgrtEpilogue ep;
	int64_t m, n, k, batch;
	int ta, tb;
	int outer;              /* an outer dim of 2 over a broadcast B, a bias per matrix */
	int residual;           /* C added, laid out as D */
} Case;

typedef struct Result {
	int died, ok;
	int past_f32;           /* D outside the f32 gate (tf32 operands: the
				   sign that cuBLASLt multiplied as tf32) */
	double worst;           /* largest rmse / limit over D and aux */
	char why[512];
} Result;

static int has_bias(FgrtEpilogue e)
{
	return e == FGRT_EP_BIAS || e == FGRT_EP_RELU_BIAS || e == FGRT_EP_GELU_BIAS || e == FGRT_EP_RELU_AUX_BIAS ||
	       e == FGRT_EP_GELU_AUX_BIAS;
}

static int is_relu(FgrtEpilogue e)
{
	return e == FGRT_EP_RELU || e == FGRT_EP_RELU_BIAS || e == FGRT_EP_RELU_AUX || e == FGRT_EP_RELU_AUX_BIAS;
}

static int is_gelu(FgrtEpilogue e)
{
	return e == FGRT_EP_GELU || e == FGRT_EP_GELU_BIAS || e == FGRT_EP_GELU_AUX || e == FGRT_EP_GELU_AUX_BIAS;
}

/* 0: none, 1: ReLU bit mask, 2: GELU input */
static int aux_kind(FgrtEpilogue e)
{
	return e == FGRT_EP_RELU_AUX || e == FGRT_EP_RELU_AUX_BIAS ? 1
	       : e == FGRT_EP_GELU_AUX || e == FGRT_EP_GELU_AUX_BIAS ? 2 : 0;
}

static void describe(const Case *c, char *buf, size_t n)
{
	snprintf(buf, n, "m=%lld n=%lld k=%lld batch %lld%s%s%s%s", (long long)c->m, (long long)c->n,
		 (long long)c->k, (long long)c->batch, c->outer ? " x outer 2" : "", c->ta ? " A^T" : "",
		 c->tb ? " B^T" : "", c->residual ? " + C" : "");
}

typedef struct Bufs {
	void *a, *b, *d, *bias, *aux, *c;
} Bufs;

static void free_bufs(Bufs *b)
{
	CK(cudaFree(b->a));
	CK(cudaFree(b->b));
	CK(cudaFree(b->d));
	CK(cudaFree(b->bias));
	CK(cudaFree(b->aux));
	CK(cudaFree(b->c));
	memset(b, 0, sizeof *b);
}

/* Runs case c through fgrt_gemm_ep on ctx (slot 0, a fresh plan) and
 * judges it. */
static void run_case(FgrtContext *ctx, const Case *c, uint64_t seed, Result *res)
{
	const int64_t O = c->outer ? 2 : 1, B = c->batch, m = c->m, n = c->n, k = c->k;
	const int64_t nmat = O * B;
	const int aux = aux_kind(c->ep);
	const FgrtDtype bdt = c->d;     /* the bias is in D's type */
	/* aux pitch: elements (GELU input) or bits (ReLU mask) */
	const int64_t ld_aux = aux == 1 ? (n + 127) / 128 * 128 : aux == 2 ? (n + 7) / 8 * 8 : 0;
	const size_t aux_bytes = aux == 1 ? (size_t)(nmat * m * ld_aux / 8)
					  : (size_t)(nmat * m * ld_aux) * type_size(c->d);
	const int64_t na = nmat * m * k, nb = B * k * n, nd = nmat * m * n;
	const int64_t nbias = has_bias(c->ep) ? (c->outer ? nmat * n : n) : 0;

	memset(res, 0, sizeof *res);
	rng = seed;
	double *A = (double *)malloc(sizeof(double) * (size_t)na), *Bm = (double *)malloc(sizeof(double) * (size_t)nb);
	double *bias = (double *)malloc(sizeof(double) * (size_t)(nbias + 1));
	const int64_t nc = c->residual ? nd : 0;
	double *C = (double *)malloc(sizeof(double) * (size_t)(nc + 1));
	void *hc = malloc((size_t)(nc + 1) * type_size(c->d));
	void *ha = malloc((size_t)na * type_size(c->ab)), *hb = malloc((size_t)nb * type_size(c->ab));
	void *hbias = malloc((size_t)(nbias + 1) * type_size(bdt));
	for (int64_t i = 0; i < na; i++)
		put(c->ab, ha, i, A[i] = round_to(c->ab, uniform()));
	for (int64_t i = 0; i < nb; i++)
		put(c->ab, hb, i, Bm[i] = round_to(c->ab, uniform()));
	for (int64_t i = 0; i < nbias; i++)
		put(bdt, hbias, i, bias[i] = round_to(bdt, uniform()));
	for (int64_t i = 0; i < nc; i++)
		put(c->d, hc, i, C[i] = round_to(c->d, uniform()));

	Bufs dev;
	memset(&dev, 0, sizeof dev);
	CK(cudaMalloc(&dev.a, (size_t)na * type_size(c->ab)));
	CK(cudaMalloc(&dev.b, (size_t)nb * type_size(c->ab)));
	CK(cudaMalloc(&dev.d, (size_t)nd * type_size(c->d)));
	/* on ctx->stream, the gemm's: a non-blocking stream does not wait for
	 * the legacy stream's copies and memsets */
	cudaStream_t st = ctx->stream;
	CK(cudaMemcpyAsync(dev.a, ha, (size_t)na * type_size(c->ab), cudaMemcpyHostToDevice, st));
	CK(cudaMemcpyAsync(dev.b, hb, (size_t)nb * type_size(c->ab), cudaMemcpyHostToDevice, st));
	CK(cudaMemsetAsync(dev.d, 0xff, (size_t)nd * type_size(c->d), st));
	if (nbias) {
		CK(cudaMalloc(&dev.bias, (size_t)nbias * type_size(bdt)));
		CK(cudaMemcpyAsync(dev.bias, hbias, (size_t)nbias * type_size(bdt), cudaMemcpyHostToDevice, st));
	}
	if (aux) {
		CK(cudaMalloc(&dev.aux, aux_bytes));
		CK(cudaMemsetAsync(dev.aux, 0xff, aux_bytes, st));
	}
	if (nc) {
		CK(cudaMalloc(&dev.c, (size_t)nc * type_size(c->d)));
		CK(cudaMemcpyAsync(dev.c, hc, (size_t)nc * type_size(c->d), cudaMemcpyHostToDevice, st));
	}

	/* The table a generated model.cu would hold: A [O][B][m,k] (or
	 * [k,m]), B [B][k,n] (or [n,k]) shared by the outer dim, D [O][B][m,n],
	 * bias [O][B][n] or one [n], aux [O][B][m, ld_aux]. */
	FgrtGemm g;
	memset(&g, 0, sizeof g);
	g.ab = c->ab, g.d = c->d;
	g.m = m, g.n = n, g.k = k;
	g.trans_a = c->ta, g.trans_b = c->tb;
	g.batch = B, g.stride_a = m * k, g.stride_b = k * n, g.stride_d = m * n;
	g.epilogue = c->ep;
	g.residual = c->residual;
	g.ld_aux = ld_aux, g.stride_aux = m * ld_aux;
	if (c->outer) {
		g.nouter = 1;
		g.outer_n[0] = O;
		g.outer_a[0] = B * m * k, g.outer_b[0] = 0, g.outer_d[0] = B * m * n;
		g.stride_bias = n, g.outer_bias[0] = B * n;
		g.outer_aux[0] = B * m * ld_aux;
	}
	ctx->gemm[0] = NULL;
	try {
		fgrt_gemm_ep(ctx, 0, &g, dev.a, dev.b, dev.d, dev.bias, dev.aux, dev.c);
		CK(cudaStreamSynchronize(ctx->stream));
	} catch (FgrtError &e) {
		report(e);
		res->died = 1;
		snprintf(res->why, sizeof res->why, "the runtime reported a failure (the error above)");
		CK(cudaStreamSynchronize(st));
		free_bufs(&dev);
		free(A), free(Bm), free(bias), free(ha), free(hb), free(hbias), free(C), free(hc);
		return;
	}

	void *hd = malloc((size_t)nd * type_size(c->d));
	void *haux = malloc(aux_bytes + 1);
	CK(cudaMemcpy(hd, dev.d, (size_t)nd * type_size(c->d), cudaMemcpyDeviceToHost));
	if (aux)
		CK(cudaMemcpy(haux, dev.aux, aux_bytes, cudaMemcpyDeviceToHost));

	/* The reference: pre = A B + C + bias in f64, out = act(pre). */
	double *pre = (double *)malloc(sizeof(double) * (size_t)nd), *out = (double *)malloc(sizeof(double) * (size_t)nd);
	double *outr = (double *)malloc(sizeof(double) * (size_t)nd), *got = (double *)malloc(sizeof(double) * (size_t)nd);
	double *mag = (double *)malloc(sizeof(double) * (size_t)nd);        /* |A B| + |bias| */
	double *prod = (double *)malloc(sizeof(double) * (size_t)nd);       /* A B (+ C) */
	for (int64_t o = 0; o < O; o++)
		for (int64_t bi = 0; bi < B; bi++) {
			const double *a = A + (o * B + bi) * m * k, *bm = Bm + bi * k * n;
			for (int64_t i = 0; i < m; i++)
				for (int64_t j = 0; j < n; j++) {
					double s = 0;
					for (int64_t kk = 0; kk < k; kk++)
						s += (c->ta ? a[kk * m + i] : a[i * k + kk]) *
						     (c->tb ? bm[j * k + kk] : bm[kk * n + j]);
					int64_t at = ((o * B + bi) * m + i) * n + j;
					if (nc)
						s += C[at];
					prod[at] = s;
					mag[at] = fabs(s);
					if (nbias) {
						double bj = bias[(c->outer ? (o * B + bi) * n : 0) + j];
						s += bj;
						mag[at] += fabs(bj);
					}
					pre[at] = s;
					out[at] = is_relu(c->ep) ? (s > 0 ? s : 0) : is_gelu(c->ep) ? gelu_tanh(s) : s;
					outr[at] = round_to(c->d, out[at]);
					got[at] = get(c->d, hd, at);
				}
		}
	FgrtTol tol = fgrt_tolerance(type_name(c->d), c->ab == FGRT_TF32 ? 2 : 1);
	FgrtCheck ck;
	if (c->ab == FGRT_TF32) {
		FgrtTol f32 = fgrt_tolerance("f32", 1);
		fgrt_check(got, out, outr, nd, &f32, &ck);
		res->past_f32 = !ck.ok;
	}
	fgrt_check(got, out, outr, nd, &tol, &ck);
	res->ok = ck.ok;
	res->worst = ck.rmse_limit > 0 ? ck.rmse / ck.rmse_limit : 0;
	if (!ck.ok)
		snprintf(res->why, sizeof res->why, "D: rmse %.3g > limit %.3g, max abs err %.3g, worst [%lld] got %.9g want %.9g",
			 ck.rmse, ck.rmse_limit, ck.max_abs_err, (long long)ck.worst, ck.worst_actual, ck.worst_expected);
	if (aux == 2) {
		/* aux: pre, in D's type, rows of ld_aux.  The gate's baseline with a
		 * bias: the product rounded to D's type, then the bias added and
		 * rounded, as the graph writes `matmul(x, w) + b` and as cuBLASLt
		 * 13.0 on an H200 does for a 16-bit D (runtime.md: RELU_AUX's mask
		 * likewise; f16 GELU_AUX_BIAS at m = n = k = 1 erred by 1.7 units
		 * of f16 where the product and the bias cancel) */
		for (int64_t r = 0; r < nmat * m; r++)
			for (int64_t j = 0; j < n; j++) {
				int64_t at = r * n + j;
				got[at] = get(c->d, haux, r * ld_aux + j);
				outr[at] = has_bias(c->ep) ? round_to(c->d, round_to(c->d, prod[at]) + (pre[at] - prod[at]))
							   : round_to(c->d, pre[at]);
			}
		fgrt_check(got, pre, outr, nd, &tol, &ck);
		if (ck.rmse_limit > 0 && ck.rmse / ck.rmse_limit > res->worst)
			res->worst = ck.rmse / ck.rmse_limit;
		if (!ck.ok && res->ok) {
			res->ok = 0;
			snprintf(res->why, sizeof res->why, "aux: rmse %.3g > limit %.3g, max abs err %.3g, worst [%lld] "
				 "got %.9g want %.9g", ck.rmse, ck.rmse_limit, ck.max_abs_err, (long long)ck.worst,
				 ck.worst_actual, ck.worst_expected);
		}
	} else if (aux == 1) {
		int64_t bad = 0, first = -1;
		for (int64_t r = 0; r < nmat * m; r++)
			for (int64_t j = 0; j < n; j++) {
				int64_t bit = r * ld_aux + j;
				int set = (((const unsigned char *)haux)[bit / 8] >> (bit % 8)) & 1;
				double x = pre[r * n + j], dj = get(c->d, hd, r * n + j);
				if (set != (x > 0) && set != (dj > 0) && fabs(x) > 4 * tol.unit_roundoff * mag[r * n + j]) {
					bad++;
					if (first < 0)
						first = r * n + j;
				}
			}
		if (bad && res->ok) {
			res->ok = 0;
			snprintf(res->why, sizeof res->why, "aux: %lld of %lld mask bits wrong, first at [%lld] (D %.6g, exact "
				 "ReLU input %.6g, |A B| + |bias| %.6g)", (long long)bad, (long long)nd, (long long)first,
				 get(c->d, hd, first), pre[first], mag[first]);
		}
	}
	free(pre), free(out), free(outr), free(got), free(mag), free(prod), free(hd), free(haux);
	free_bufs(&dev);
	free(A), free(Bm), free(bias), free(ha), free(hb), free(hbias), free(C), free(hc);
}

/* ------------------------------------------------------------- main */

static void setup(FgrtContext *ctx, FgrtGemmPlan **slots)
{
	int ndev = 0;
	cudaError_t e = cudaGetDeviceCount(&ndev);
	if (e != cudaSuccess || ndev < 1) {
		fprintf(stderr, "gemm_epilogue: no CUDA device: %s\n", e != cudaSuccess ? cudaGetErrorString(e) : "none");
		exit(1);
	}
	memset(ctx, 0, sizeof *ctx);
	ctx->prog = &fg_program;
	CK(cudaStreamCreateWithFlags(&ctx->stream, cudaStreamNonBlocking));
	cublasLtHandle_t lt;
	if (cublasLtCreate(&lt) != CUBLAS_STATUS_SUCCESS) {
		fprintf(stderr, "gemm_epilogue: cublasLtCreate failed\n");
		exit(2);
	}
	ctx->lt = lt;
	ctx->workspace_bytes = (size_t)32 << 20;
	CK(cudaMalloc(&ctx->workspace, ctx->workspace_bytes));
	ctx->gemm = slots;
}

/* One failure on purpose; returns only if the runtime did not report it. */
static int fail_case(FgrtContext *ctx, const char *name)
{
	FgrtGemm g;
	void *a, *b, *d, *aux;
	memset(&g, 0, sizeof g);
	g.ab = g.d = FGRT_BF16, g.m = 33, g.n = 40, g.k = 64, g.batch = 1;
	CK(cudaMalloc(&a, 1 << 16));
	CK(cudaMalloc(&b, 1 << 16));
	CK(cudaMalloc(&d, 1 << 16));
	CK(cudaMalloc(&aux, 1 << 16));
	if (!strcmp(name, "lt-null-handle")) {
		ctx->lt = NULL;                         /* a handle never created */
		fgrt_gemm(ctx, 0, &g, a, b, d);
	} else if (!strcmp(name, "lt-unsupported")) {
		g.ab = FGRT_F32, g.d = FGRT_F16;        /* no f32 x f32 -> f16 matmul */
		fgrt_gemm(ctx, 0, &g, a, b, d);
	} else if (!strcmp(name, "aux-ld")) {
		g.epilogue = FGRT_EP_GELU_AUX, g.ld_aux = 41;   /* no multiple of 8 */
		fgrt_gemm_ep(ctx, 0, &g, a, b, d, NULL, aux, NULL);
	} else if (!strcmp(name, "bias-missing")) {
		g.epilogue = FGRT_EP_BIAS;
		fgrt_gemm_ep(ctx, 0, &g, a, b, d, NULL, NULL, NULL);
	} else if (!strcmp(name, "residual-relu")) {
		g.epilogue = FGRT_EP_RELU, g.residual = 1;      /* C only with none or BIAS */
		fgrt_gemm_ep(ctx, 0, &g, a, b, d, NULL, NULL, aux);
	} else {
		fprintf(stderr, "gemm_epilogue: no case '%s' (lt-null-handle, lt-unsupported, aux-ld, bias-missing, "
			"residual-relu)\n", name);
		return 2;
	}
	CK(cudaStreamSynchronize(ctx->stream));
	return 0;
}

int main(int argc, char **argv)
{
	static const struct {
		FgrtDtype ab, d;
	} types[] = {{FGRT_BF16, FGRT_BF16}, {FGRT_F16, FGRT_F16}, {FGRT_F32, FGRT_F32}, {FGRT_BF16, FGRT_F32},
		     {FGRT_F16, FGRT_F32}, {FGRT_TF32, FGRT_F32}};
	static const int64_t shapes[][3] = {{1, 1, 1},  {1, 127, 33}, {127, 1, 64},  {7, 33, 64},
					    {33, 7, 127}, {64, 127, 33}, {127, 64, 7}, {33, 64, 1}};
	int quick = 0;
	const char *one = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick"))
			quick = 1;
		else if (!strcmp(argv[i], "--case") && i + 1 < argc)
			one = argv[++i];
		else {
			fprintf(stderr, "usage: %s [--quick] [--case NAME]\n", argv[0]);
			return 2;
		}
	}
	FgrtContext ctx;
	FgrtGemmPlan *slots[1] = {NULL};
	setup(&ctx, slots);
	if (one) {
		int rc;
		try {
			rc = fail_case(&ctx, one);
		} catch (FgrtError &e) {
			report(e);
			return 1;
		}
		if (rc)
			return rc;
		printf("gemm_epilogue: case %s: the runtime went on without reporting a failure\n", one);
		return 3;
	}

	int cases = 0, failed = 0, groups_failed = 0;
	uint64_t seed = 1;
	/* every epilogue, then none and BIAS with a residual C */
	const int neps = FGRT_EP_GELU_AUX_BIAS + 1, groups = neps + 2;
	for (size_t t = 0; t < sizeof types / sizeof types[0]; t++)
		for (int v = 0; v < groups; v++) {
			const int e = v < neps ? v : v == neps ? FGRT_EP_NONE : FGRT_EP_BIAS, residual = v >= neps;
			char name[32];
			snprintf(name, sizeof name, "%s%s", ep_name[e], residual ? "+C" : "");
			int n = 0, bad = 0, shown = 0, past_f32 = 0;
			double worst = 0;
			for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
				for (int tr = 0; tr < 4; tr++)
					for (int batch = 1; batch <= 3; batch += 2)
						for (int outer = 0; outer < 2; outer++) {
							/* the outer case once per pair: one shape, batch 3, A^T B^T */
							if (outer && (s != 3 || tr != 3 || batch != 3))
								continue;
							if (quick && (s < 3 || s > 4 || (tr != 0 && tr != 3) || batch != 3))
								continue;
							Case c;
							Result r;
							memset(&c, 0, sizeof c);
							c.ab = types[t].ab, c.d = types[t].d, c.ep = (FgrtEpilogue)e;
							c.m = shapes[s][0], c.n = shapes[s][1], c.k = shapes[s][2];
							c.ta = tr & 1, c.tb = tr >> 1, c.batch = batch, c.outer = outer;
							c.residual = residual;
							run_case(&ctx, &c, seed++, &r);
							n++;
							past_f32 += r.past_f32;
							if (r.worst > worst)
								worst = r.worst;
							if (r.ok)
								continue;
							bad++;
							if (shown++ < 3) {
								char d[256];
								describe(&c, d, sizeof d);
								printf("    %s %s->%s %s: %s: %s\n", r.died ? "DIED" : "WRONG",
								       type_name(c.ab), type_name(c.d), name, d, r.why);
							}
						}
			/* tf32 that never leaves the f32 gate was not tf32 */
			const int not_tf32 = types[t].ab == FGRT_TF32 && !past_f32;
			cases += n;
			failed += bad;
			groups_failed += bad > 0 || not_tf32;
			if (not_tf32)
				printf("FAIL %s->%s %s: every case within the f32 gate: cuBLASLt did not multiply as tf32\n",
				       type_name(types[t].ab), type_name(types[t].d), name);
			else if (bad)
				printf("FAIL %s->%s %s: %d of %d cases\n", type_name(types[t].ab), type_name(types[t].d),
				       name, bad, n);
			else
				printf("PASS %s->%s %s: %d cases (worst rmse / limit %.2f)\n", type_name(types[t].ab),
				       type_name(types[t].d), name, n, worst);
			fflush(stdout);
		}

	printf("%s gemm_epilogue: %d cases, %d failed, %d of %d groups failed\n", groups_failed ? "FAIL" : "ok", cases,
	       failed, groups_failed, (int)(sizeof types / sizeof types[0]) * groups);
	return groups_failed ? 1 : 0;
}
