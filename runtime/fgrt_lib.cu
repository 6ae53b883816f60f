/*
 * fgrt_lib.cu - the runtime library: what every compiled model links,
 * whether as a standalone binary (fgrt_main.cu's main over it) or as the
 * shared library of `fgc compile --lib` (the C ABI of fgrt_model.h).
 *
 *   - what the generated code calls: cuBLASLt matmuls by plan slot
 *     (fgrt_gemm, fgrt_gemm_ep), the check after each launch
 *     (fgrt_launched), the generated matmul's tensor maps (fgrt_tmap);
 *   - a model: the program's arena, scratch and cuBLASLt state on one
 *     device (fgrt_model_new), its interface tensors, a run on caller-owned
 *     pointers and a caller's stream (fgrt_model_run);
 *   - the C ABI over them, which turns every FgrtError into -1 and a
 *     message for the calling thread.
 *
 * Invariants: every CUDA and cuBLASLt call is checked, and a failure
 * throws FgrtError with the file, line, call and error string, or for the
 * foreseeable failures (no device, device memory exhausted, no cuBLASLt
 * algorithm) what could not be done and why.  Nothing here exits, prints
 * or synchronizes inside a run: a run only enqueues work on its stream,
 * so that it can be captured into a CUDA graph.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublasLt.h>
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include "fgrt_lib.h"

/* ---------------------------------------------------------------- errors */

void fgrt_fail(const char *fmt, ...)
{
	FgrtError e;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e.msg, sizeof e.msg, fmt, ap);
	va_end(ap);
	throw e;
}

void fgrt_cuda_check(cudaError_t e, const char *call, const char *file, int line)
{
	if (e != cudaSuccess)
		fgrt_fail("%s:%d: %s: %s (%s)", file, line, call, cudaGetErrorString(e), cudaGetErrorName(e));
}

void fgrt_lt_check(cublasStatus_t s, const char *call, const char *file, int line)
{
	if (s != CUBLAS_STATUS_SUCCESS)
		fgrt_fail("%s:%d: %s: %s (%s)", file, line, call, cublasLtGetStatusString(s), cublasLtGetStatusName(s));
}

/* ---------------------------------------------------------------- dtypes */

const char *const fgrt_dtype_name[] = {
#define X(id, name, size, npy) name,
	FGRT_DTYPES(X)
#undef X
	"f32 (as tf32)",
};
const size_t fgrt_dtype_size[] = {
#define X(id, name, size, npy) size,
	FGRT_DTYPES(X)
#undef X
	4,
};
static_assert(sizeof fgrt_dtype_size / sizeof fgrt_dtype_size[0] == FGRT_TF32 + 1, "a size per FgrtDtype");

int64_t fgrt_numel(const FgrtTensor *t)
{
	int64_t n = 1;
	for (int i = 0; i < t->rank; i++)
		n *= t->shape[i];
	return n;
}

size_t fgrt_nbytes(const FgrtTensor *t)
{
	return (size_t)fgrt_numel(t) * fgrt_dtype_size[t->dtype];
}

char *fgrt_type_str(char *buf, size_t n, const FgrtTensor *t)
{
	size_t at = (size_t)snprintf(buf, n, "%s[", fgrt_dtype_name[t->dtype]);
	for (int i = 0; i < t->rank && at < n; i++)
		at += (size_t)snprintf(buf + at, n - at, "%s%lld", i ? "," : "", (long long)t->shape[i]);
	if (at < n)
		snprintf(buf + at, n - at, "]");
	return buf;
}

/* --------------------------------------------------------------- cuBLASLt */

/* FgrtEpilogue's rows, in its order: cuBLASLt's value, whether it adds a
 * bias, and what it writes to aux. */
enum { AUX_NONE, AUX_RELU_BITS, AUX_GELU_INPUT };

typedef struct Epilogue {
	const char *name;
	cublasLtEpilogue_t lt;
	int bias, aux;
} Epilogue;

static const Epilogue epilogues[] = {
	{"none", CUBLASLT_EPILOGUE_DEFAULT, 0, AUX_NONE},
	{"BIAS", CUBLASLT_EPILOGUE_BIAS, 1, AUX_NONE},
	{"RELU", CUBLASLT_EPILOGUE_RELU, 0, AUX_NONE},
	{"RELU_BIAS", CUBLASLT_EPILOGUE_RELU_BIAS, 1, AUX_NONE},
	{"GELU", CUBLASLT_EPILOGUE_GELU, 0, AUX_NONE},
	{"GELU_BIAS", CUBLASLT_EPILOGUE_GELU_BIAS, 1, AUX_NONE},
	{"RELU_AUX", CUBLASLT_EPILOGUE_RELU_AUX, 0, AUX_RELU_BITS},
	{"RELU_AUX_BIAS", CUBLASLT_EPILOGUE_RELU_AUX_BIAS, 1, AUX_RELU_BITS},
	{"GELU_AUX", CUBLASLT_EPILOGUE_GELU_AUX, 0, AUX_GELU_INPUT},
	{"GELU_AUX_BIAS", CUBLASLT_EPILOGUE_GELU_AUX_BIAS, 1, AUX_GELU_INPUT},
};
static_assert(sizeof epilogues / sizeof epilogues[0] == FGRT_EP_GELU_AUX_BIAS + 1, "one row per FgrtEpilogue");

struct FgrtGemmPlan {
	cublasLtMatmulDesc_t op;
	cublasLtMatrixLayout_t a, b, d;         /* cuBLASLt's: a is our B, b our A */
	cublasLtMatmulAlgo_t algo;
	const Epilogue *ep;
	size_t ebias;                           /* bias element size in bytes: D's */
	int aux_bits;                           /* aux element size in bits */
};

static cudaDataType_t lt_type(FgrtDtype t)
{
	switch (t) {
	case FGRT_F32:
	case FGRT_TF32:
		return CUDA_R_32F;
	case FGRT_F16:
		return CUDA_R_16F;
	case FGRT_BF16:
		return CUDA_R_16BF;
	default:
		fgrt_fail("cuBLASLt takes no %s operands", fgrt_dtype_name[t]);
	}
}

/* The largest power of two up to 256 dividing every x. */
static uint64_t alignment(const uint64_t *x, int n)
{
	uint64_t a = 256;
	for (int i = 0; i < n; i++)
		while (a > 1 && x[i] % a)
			a /= 2;
	return a;
}

/* A pointer value as aligned as the least aligned address a slot's calls
 * pass (x: the base address and byte offsets of every call).  cuBLASLt's
 * heuristic reads no memory through the bias and aux pointers but judges
 * their alignment by the value, and one plan serves every call. */
static void *least_aligned(void *base, const uint64_t *x, int n)
{
	uint64_t a = alignment(x, n);
	uintptr_t p = (uintptr_t)base;
	return (void *)(p % (2 * a) ? p : p + a);
}

static void layout(cublasLtMatrixLayout_t *l, cudaDataType_t t, uint64_t rows, uint64_t cols, int64_t ld,
		   int64_t batch, int64_t stride)
{
	int32_t b = (int32_t)batch;
	LT(cublasLtMatrixLayoutCreate(l, t, rows, cols, ld));
	LT(cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &b, sizeof b));
	LT(cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride));
}

/* The epilogue's requirements on g and on the pointers passed. */
static const Epilogue *check_epilogue(int slot, const FgrtGemm *g, const void *bias, const void *aux, const void *c)
{
	if ((unsigned)g->epilogue > FGRT_EP_GELU_AUX_BIAS)
		fgrt_fail("gemm slot %d: no epilogue number %d", slot, (int)g->epilogue);
	const Epilogue *ep = &epilogues[g->epilogue];
	if (ep->bias && !bias)
		fgrt_fail("gemm slot %d: the %s epilogue needs a bias vector, and none was passed", slot, ep->name);
	if (!ep->bias && bias)
		fgrt_fail("gemm slot %d: a bias vector was passed, but the %s epilogue adds none", slot, ep->name);
	if (ep->aux && !aux)
		fgrt_fail("gemm slot %d: the %s epilogue writes an aux tensor, and none was passed", slot, ep->name);
	if (!ep->aux && aux)
		fgrt_fail("gemm slot %d: an aux tensor was passed, but the %s epilogue writes none", slot, ep->name);
	if (g->residual && !c)
		fgrt_fail("gemm slot %d: the matmul adds a residual C, and none was passed", slot);
	if (!g->residual && c)
		fgrt_fail("gemm slot %d: a residual C was passed, but the matmul adds none", slot);
	if (g->residual && g->epilogue != FGRT_EP_NONE && g->epilogue != FGRT_EP_BIAS)
		fgrt_fail("gemm slot %d: a residual C with the %s epilogue (only with none or BIAS)", slot, ep->name);
	if (ep->aux) {
		/* cuBLASLt's rule: GELU input pitch in elements, a multiple of 8;
		 * the ReLU mask's in bits, a multiple of 128; strides alike */
		int64_t q = ep->aux == AUX_RELU_BITS ? 128 : 8;
		const char *unit = ep->aux == AUX_RELU_BITS ? "bits" : "elements";
		if (g->ld_aux < g->n || g->ld_aux % q)
			fgrt_fail("gemm slot %d: the %s epilogue needs aux rows (ld_aux) of at least n = %lld %s and a multiple "
			    "of %lld; got ld_aux %lld", slot, ep->name, (long long)g->n, unit, (long long)q,
			    (long long)g->ld_aux);
		int bad = g->stride_aux % q != 0;
		for (int i = 0; i < g->nouter; i++)
			bad |= g->outer_aux[i] % q != 0;
		if (bad)
			fgrt_fail("gemm slot %d: the %s epilogue needs aux batch strides that are multiples of %lld %s",
			    slot, ep->name, (long long)q, unit);
	}
	return ep;
}

/* Row-major D = A B is column-major D^T = B^T A^T: cuBLASLt's A is our B
 * and its B our A, each read as stored (column-major [n,k] is row-major
 * [k,n]), with its op set when ours is stored transposed.  D^T has n rows,
 * so cuBLASLt's bias (one value per row of its D, broadcast along the
 * columns) is one value per column of ours, and aux, stored like D^T with
 * leading dimension ld_aux, is row-major [m, ld_aux]. */
static FgrtGemmPlan *make_plan(FgrtContext *ctx, int slot, const FgrtGemm *g, const void *A, const void *B,
			       const void *D, const void *bias, void *aux, const void *C)
{
	const Epilogue *ep = check_epilogue(slot, g, bias, aux, C);
	FgrtGemmPlan *p = (FgrtGemmPlan *)calloc(1, sizeof *p);
	if (!p)
		fgrt_fail("out of memory");
	if (g->batch > INT32_MAX)
		fgrt_fail("a batch of %lld matrices is more than cuBLASLt takes", (long long)g->batch);
	cudaDataType_t ab = lt_type(g->ab), dt = lt_type(g->d);
	cublasOperation_t opa = g->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
	cublasOperation_t opb = g->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
	/* f32 operands under --tf32: the tensor cores' tf32 path */
	LT(cublasLtMatmulDescCreate(&p->op, g->ab == FGRT_TF32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F,
				    CUDA_R_32F));
	LT(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof opa));
	LT(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof opb));
	if (g->trans_b)
		layout(&p->a, ab, g->k, g->n, g->k, g->batch, g->stride_b);
	else
		layout(&p->a, ab, g->n, g->k, g->n, g->batch, g->stride_b);
	if (g->trans_a)
		layout(&p->b, ab, g->m, g->k, g->m, g->batch, g->stride_a);
	else
		layout(&p->b, ab, g->k, g->m, g->k, g->batch, g->stride_a);
	layout(&p->d, dt, g->n, g->m, g->n, g->batch, g->stride_d);

	/* Alignment of every matrix any call touches: base, batch and outer
	 * strides in bytes. */
	size_t ea = fgrt_dtype_size[g->ab], ed = fgrt_dtype_size[g->d];
	uint64_t xa[2 + FGRT_PROGRAM_MAX_RANK], xb[2 + FGRT_PROGRAM_MAX_RANK], xd[2 + FGRT_PROGRAM_MAX_RANK];
	int n = 0;
	xa[n] = (uint64_t)(uintptr_t)A, xb[n] = (uint64_t)(uintptr_t)B, xd[n++] = (uint64_t)(uintptr_t)D;
	xa[n] = (uint64_t)g->stride_a * ea, xb[n] = (uint64_t)g->stride_b * ea, xd[n++] = (uint64_t)g->stride_d * ed;
	for (int i = 0; i < g->nouter; i++, n++)
		xa[n] = (uint64_t)g->outer_a[i] * ea, xb[n] = (uint64_t)g->outer_b[i] * ea,
		xd[n] = (uint64_t)g->outer_d[i] * ed;
	uint32_t al_a = (uint32_t)alignment(xb, n), al_b = (uint32_t)alignment(xa, n), al_d = (uint32_t)alignment(xd, n);
	/* C (a residual) is laid out as D: its base alone may differ */
	uint32_t al_c = al_d;
	if (C) {
		xd[0] = (uint64_t)(uintptr_t)C;
		al_c = (uint32_t)alignment(xd, n);
	}

	/* The epilogue: its kind, then the bias and aux strides, and for the
	 * heuristic pointers as aligned as the least aligned call's. */
	p->ep = ep;
	p->ebias = ed;
	p->aux_bits = ep->aux == AUX_RELU_BITS ? 1 : 8 * (int)ed;
	uint32_t lt_ep = ep->lt;
	LT(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &lt_ep, sizeof lt_ep));
	if (ep->bias) {
		uint64_t x[2 + FGRT_PROGRAM_MAX_RANK];
		int nx = 0;
		x[nx++] = (uint64_t)(uintptr_t)bias;
		x[nx++] = (uint64_t)g->stride_bias * p->ebias;
		for (int i = 0; i < g->nouter; i++)
			x[nx++] = (uint64_t)g->outer_bias[i] * p->ebias;
		const void *probe = least_aligned((void *)bias, x, nx);
		int64_t stride = g->stride_bias;
		LT(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &probe, sizeof probe));
		LT(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, &stride, sizeof stride));
	}
	if (ep->aux) {
		uint64_t x[2 + FGRT_PROGRAM_MAX_RANK];
		int nx = 0;
		x[nx++] = (uint64_t)(uintptr_t)aux;
		x[nx++] = (uint64_t)g->stride_aux * (uint64_t)p->aux_bits / 8;
		for (int i = 0; i < g->nouter; i++)
			x[nx++] = (uint64_t)g->outer_aux[i] * (uint64_t)p->aux_bits / 8;
		void *probe = least_aligned(aux, x, nx);
		int64_t ld = g->ld_aux, stride = g->stride_aux;
		LT(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &probe, sizeof probe));
		LT(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ld, sizeof ld));
		LT(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE, &stride,
						  sizeof stride));
	}

	cublasLtMatmulPreference_t pref;
	LT(cublasLtMatmulPreferenceCreate(&pref));
	uint64_t ws = ctx->workspace_bytes;
	LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
	LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al_a, sizeof al_a));
	LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al_b, sizeof al_b));
	LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al_c, sizeof al_c));
	LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al_d, sizeof al_d));
	cublasLtMatmulHeuristicResult_t res;
	int found = 0;
	LT(cublasLtMatmulAlgoGetHeuristic((cublasLtHandle_t)ctx->lt, p->op, p->a, p->b, p->d, p->d, pref, 1, &res, &found));
	LT(cublasLtMatmulPreferenceDestroy(pref));
	if (found < 1)
		fgrt_fail("gemm slot %d: cuBLASLt has no algorithm for a %s matmul [%lld,%lld] x [%lld,%lld] (batch %lld%s%s) "
		    "into %s with the epilogue %s", slot, fgrt_dtype_name[g->ab], (long long)g->m, (long long)g->k,
		    (long long)g->k, (long long)g->n, (long long)g->batch, g->trans_a ? ", A stored transposed" : "",
		    g->trans_b ? ", B stored transposed" : "", fgrt_dtype_name[g->d], ep->name);
	p->algo = res.algo;
	return p;
}

void fgrt_gemm_ep(FgrtContext *ctx, int slot, const FgrtGemm *g, const void *a, const void *b, void *d,
		  const void *bias, void *aux, const void *c)
{
	if (!ctx->gemm[slot])
		ctx->gemm[slot] = make_plan(ctx, slot, g, a, b, d, bias, aux, c);
	const FgrtGemmPlan *p = ctx->gemm[slot];
	const float alpha = 1.0f, beta = g->residual ? 1.0f : 0.0f;
	size_t ea = fgrt_dtype_size[g->ab], ed = fgrt_dtype_size[g->d];
	int64_t idx[FGRT_PROGRAM_MAX_RANK] = {0};
	for (;;) {
		int64_t oa = 0, ob = 0, od = 0, obias = 0, oaux = 0;
		for (int i = 0; i < g->nouter; i++) {
			oa += idx[i] * g->outer_a[i], ob += idx[i] * g->outer_b[i], od += idx[i] * g->outer_d[i];
			obias += idx[i] * g->outer_bias[i], oaux += idx[i] * g->outer_aux[i];
		}
		const char *pa = (const char *)a + oa * (int64_t)ea, *pb = (const char *)b + ob * (int64_t)ea;
		char *pd = (char *)d + od * (int64_t)ed;
		const char *pc = g->residual ? (const char *)c + od * (int64_t)ed : pd;
		/* the epilogue's pointers live in the descriptor: this call's */
		if (p->ep->bias) {
			const void *pbias = (const char *)bias + obias * (int64_t)p->ebias;
			LT(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &pbias, sizeof pbias));
		}
		if (p->ep->aux) {
			void *paux = (char *)aux + oaux * p->aux_bits / 8;
			LT(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &paux,
							  sizeof paux));
		}
		LT(cublasLtMatmul((cublasLtHandle_t)ctx->lt, p->op, &alpha, pb, p->a, pa, p->b, &beta, pc, p->d, pd, p->d,
				  &p->algo, ctx->workspace, ctx->workspace_bytes, ctx->stream));
		int i = g->nouter - 1;
		for (; i >= 0 && ++idx[i] == g->outer_n[i]; i--)
			idx[i] = 0;
		if (i < 0)
			break;
	}
}

void fgrt_gemm(FgrtContext *ctx, int slot, const FgrtGemm *g, const void *a, const void *b, void *d)
{
	fgrt_gemm_ep(ctx, slot, g, a, b, d, NULL, NULL, NULL);
}

void fgrt_cuda(cudaError_t e, const char *call)
{
	if (e != cudaSuccess)
		fgrt_fail("%s: %s (%s)", call, cudaGetErrorString(e), cudaGetErrorName(e));
}

int fgrt_func_attr(const void *fn, cudaFuncAttribute attr, int value, unsigned char *done)
{
	static int sms[FGRT_DEVICES];
	int dev;
	fgrt_cuda(cudaGetDevice(&dev), "cudaGetDevice");
	if (dev < 0 || dev >= FGRT_DEVICES)
		fgrt_cuda(cudaErrorInvalidDevice, "a kernel's attribute on a device past the 64th");
	if (!done[dev]) {
		fgrt_cuda(cudaFuncSetAttribute(fn, attr, value), "cudaFuncSetAttribute");
		done[dev] = 1;
	}
	if (!sms[dev])
		fgrt_cuda(cudaDeviceGetAttribute(&sms[dev], cudaDevAttrMultiProcessorCount, dev), "cudaDeviceGetAttribute");
	return sms[dev];
}

/* cuTensorMapEncodeTiled through the runtime's entry point, so that the
 * binary links no libcuda: 128-byte swizzle, zeros outside the tensor. */
void fgrt_tmap(void *map, const void *base, FgrtDtype dt, const uint64_t dims[3], const uint64_t pitch[2],
	       const uint32_t box[3])
{
	static PFN_cuTensorMapEncodeTiled_v12000 encode;
	if (!encode) {
		void *fn = NULL;
		cudaDriverEntryPointQueryResult q;
		CUDA(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &q));
		if (q != cudaDriverEntryPointSuccess || !fn)
			fgrt_fail("the driver has no cuTensorMapEncodeTiled (query result %d): the generated matmul needs "
			    "CUDA 12 or later", (int)q);
		encode = (PFN_cuTensorMapEncodeTiled_v12000)fn;
	}
	const cuuint32_t unit[3] = {1, 1, 1};
	/* tf32 operands travel as f32: the tensor cores read the bits they use */
	const int bytes1 = dt == FGRT_BOOL || dt == FGRT_I8 || dt == FGRT_U8 || dt == FGRT_F8E4M3 || dt == FGRT_F8E5M2;
	CUresult r = encode((CUtensorMap *)map, dt == FGRT_F16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 :
			    dt == FGRT_BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 :
			    bytes1 ? CU_TENSOR_MAP_DATA_TYPE_UINT8 : CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
			    3, (void *)base, dims, pitch, box, unit,
			    CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
			    CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
	if (r != CUDA_SUCCESS)
		fgrt_fail("cuTensorMapEncodeTiled refused an operand at %p (dims %llu x %llu x %llu, pitches %llu "
		    "and %llu bytes, box %u x %u): CUresult %d", base, (unsigned long long)dims[0],
		    (unsigned long long)dims[1], (unsigned long long)dims[2], (unsigned long long)pitch[0],
		    (unsigned long long)pitch[1], box[0], box[1], (int)r);
}

int fgrt_faults(FgrtContext *ctx, char *msg, size_t n)
{
	const FgrtProgram *p = ctx->prog;
	if (p->nfaults == 0)
		return 0;
	FgrtFaultRecord *rec = (FgrtFaultRecord *)malloc(sizeof *rec * (size_t)p->nfaults);
	if (!rec)
		fgrt_fail("out of memory");
	CUDA(cudaStreamSynchronize(ctx->stream));
	CUDA(cudaMemcpy(rec, p->fault_records(), sizeof *rec * (size_t)p->nfaults, cudaMemcpyDeviceToHost));
	int k = 0;
	while (k < p->nfaults && rec[k].pos == ~0ull)
		k++;
	if (k == p->nfaults) {
		free(rec);
		return 0;
	}
	const FgrtFault *f = &p->faults[k];
	unsigned long long pos = rec[k].pos;
	long long value = rec[k].value;
	free(rec);
	/* the position's coordinates, as the interpreter names them */
	char at[512];
	long long c[FGRT_PROGRAM_MAX_RANK];
	for (int i = f->rank - 1; i >= 0; i--) {
		c[i] = (long long)(pos % (unsigned long long)f->shape[i]);
		pos /= (unsigned long long)f->shape[i];
	}
	int m = snprintf(at, sizeof at, f->tensor ? "%s[" : "position [", f->tensor);
	for (int i = 0; i < f->rank && m > 0 && (size_t)m < sizeof at; i++)
		m += snprintf(at + m, sizeof at - (size_t)m, "%s%lld", i ? ", " : "", c[i]);
	if (m > 0 && (size_t)m < sizeof at)
		snprintf(at + m, sizeof at - (size_t)m, "]%s",
			 f->tensor ? "" : f->kind == FGRT_FAULT_INDEX ? " of the indices" : " of its result");
	if (f->kind == FGRT_FAULT_INDEX)
		m = snprintf(msg, n, "%s: error: %s index %lld out of range [-%lld, %lld) at %s\n", f->where, f->op,
			     value, (long long)f->len, (long long)f->len, at);
	else
		m = snprintf(msg, n, "%s: error: integer division by zero in '%s' at %s\n", f->where, f->op, at);
	/* the source line, then a caret under the column (tabs kept) */
	if (m > 0 && (size_t)m < n)
		m += snprintf(msg + m, n - (size_t)m, "  %s\n  ", f->line);
	for (int i = 0; i + 1 < f->col && f->line[i] && m > 0 && (size_t)m + 2 < n; i++)
		msg[m++] = f->line[i] == '\t' ? '\t' : ' ';
	if (m > 0 && (size_t)m + 2 < n) {
		msg[m++] = '^';
		msg[m] = 0;
	}
	return 1;
}

void fgrt_launched(FgrtContext *ctx, int i)
{
	const FgrtLaunch *l = &ctx->prog->launches[i];
	cudaError_t e = cudaGetLastError();
	if (e != cudaSuccess)
		fgrt_fail("launch %d (%s, group %d, grid %u, block %u): %s (%s)", i, l->kernel, l->group, l->grid, l->block,
		    cudaGetErrorString(e), cudaGetErrorName(e));
	if (ctx->marks)
		CUDA(cudaEventRecord(ctx->marks[i], ctx->stream));
}


void fgrt_free_plan(FgrtGemmPlan *p)
{
	if (!p)
		return;
	LT(cublasLtMatrixLayoutDestroy(p->a));
	LT(cublasLtMatrixLayoutDestroy(p->b));
	LT(cublasLtMatrixLayoutDestroy(p->d));
	LT(cublasLtMatmulDescDestroy(p->op));
	free(p);
}

/* ---------------------------------------------------------------- model */

void *fgrt_dev_alloc(size_t n, const char *what)
{
	void *p = NULL;
	cudaError_t e = cudaMalloc(&p, n ? n : 1);
	if (e == cudaSuccess)
		return p;
	(void)cudaGetLastError();       /* not sticky: clear it */
	size_t free_b, total;
	if (cudaMemGetInfo(&free_b, &total) == cudaSuccess)
		fgrt_fail("cannot allocate %s (%zu bytes, %.2f GiB; the device has %.2f GiB free of %.2f GiB): %s (%s)",
			  what, n, (double)n / (1 << 30), (double)free_b / (1 << 30), (double)total / (1 << 30),
			  cudaGetErrorString(e), cudaGetErrorName(e));
	fgrt_fail("cannot allocate %s (%zu bytes, %.2f GiB): %s (%s)", what, n, (double)n / (1 << 30),
		  cudaGetErrorString(e), cudaGetErrorName(e));
}

/* Interface tensor i's index in fg_program.tensors, in fgrt_model.h's
 * order (inputs and params, the outputs in `output` order, then saved
 * values that are no outputs), or -1 past the last; *n: how many. */
static int interface_tensor(int i, int *n)
{
	const FgrtProgram *p = &fg_program;
	int at = -1, k = p->ninputs + p->noutputs;
	if (i >= 0 && i < p->ninputs)
		at = i;
	else if (i >= p->ninputs && i < k)
		at = p->outputs[i - p->ninputs];
	for (int t = p->ninputs; t < p->ntensors; t++)
		if ((p->tensors[t].role & FGRT_SAVED) && !(p->tensors[t].role & FGRT_OUTPUT))
			at = k++ == i ? t : at;
	*n = k;
	return at;
}

/* The current device, restored when the scope ends; neither set nor
 * restored when it is the model's already (every call from one device's
 * code: one runtime call a run instead of two). */
struct DeviceScope {
	int old, changed;
	explicit DeviceScope(int device)
	{
		CUDA(cudaGetDevice(&old));
		changed = device != old;
		if (changed)
			CUDA(cudaSetDevice(device));
	}
	~DeviceScope()
	{
		if (changed)
			(void)cudaSetDevice(old);
	}
};

void fgrt_model_free(FgModel *m)
{
	if (!m)
		return;
	int old = -1;
	(void)cudaGetDevice(&old);
	(void)cudaSetDevice(m->device);
	FgrtContext *c = &m->ctx;
	for (int g = 0; c->gemm && g < c->prog->ngemms; g++)
		try {
			fgrt_free_plan(c->gemm[g]);
		} catch (FgrtError &) {
			/* freeing goes on: the first failure is what a caller hears of */
		}
	if (c->lt)
		(void)cublasLtDestroy((cublasLtHandle_t)c->lt);
	(void)cudaFree(c->workspace);
	(void)cudaFree(c->arena);
	(void)cudaFree(c->scratch);
	(void)cudaFree(c->counters);
	if (old >= 0)
		(void)cudaSetDevice(old);
	free(c->gemm);
	free(c->ptr);
	free(m->iface);
	free(m);
}

FgModel *fgrt_model_new(int device)
{
	const FgrtProgram *p = &fg_program;
	int ndev = 0;
	cudaError_t e = cudaGetDeviceCount(&ndev);
	if (e != cudaSuccess)
		fgrt_fail("no CUDA device: %s (%s)", cudaGetErrorString(e), cudaGetErrorName(e));
	if (ndev < 1)
		fgrt_fail("no CUDA device: the driver reports none");
	if (device < 0 || device >= ndev)
		fgrt_fail("no CUDA device %d: the driver reports %d (0 to %d)", device, ndev, ndev - 1);
	FgModel *m = (FgModel *)calloc(1, sizeof *m);
	if (!m)
		fgrt_fail("out of memory");
	m->device = device;
	FgrtContext *c = &m->ctx;
	c->prog = p;
	try {
		DeviceScope scope(device);
		c->ptr = (void **)calloc((size_t)p->ntensors + 1, sizeof(void *));
		c->gemm = (FgrtGemmPlan **)calloc((size_t)p->ngemms + 1, sizeof(FgrtGemmPlan *));
		m->iface = (int *)calloc((size_t)p->ntensors + 1, sizeof(int));
		if (!c->ptr || !c->gemm || !m->iface)
			fgrt_fail("out of memory");
		interface_tensor(0, &m->niface);
		for (int i = 0; i < m->niface; i++)
			m->iface[i] = interface_tensor(i, &m->niface);
		c->arena = (char *)fgrt_dev_alloc((size_t)p->arena_bytes, "the arena");
		c->scratch = (char *)fgrt_dev_alloc((size_t)p->scratch_bytes, "the scratch buffer");
		if (p->counters) {
			c->counters = (unsigned *)fgrt_dev_alloc((size_t)p->counters * sizeof(unsigned), "the counters");
			CUDA(cudaMemset(c->counters, 0, (size_t)p->counters * sizeof(unsigned)));
		}
		for (int t = p->ninputs; t < p->ntensors; t++)
			c->ptr[t] = c->arena + p->tensors[t].offset;
		if (p->ngemms) {
			cublasLtHandle_t lt;
			LT(cublasLtCreate(&lt));
			c->lt = lt;
			c->workspace_bytes = (size_t)32 << 20;
			c->workspace = fgrt_dev_alloc(c->workspace_bytes, "cuBLASLt's workspace");
		}
	} catch (FgrtError &) {
		fgrt_model_free(m);
		throw;
	}
	return m;
}

void fgrt_model_run(FgModel *m, void *const *ptrs, cudaStream_t stream)
{
	const FgrtProgram *p = m->ctx.prog;
	if (!ptrs && m->niface)
		fgrt_fail("no tensor pointers (NULL) for the %d tensors of '%s'", m->niface, p->graph);
	DeviceScope scope(m->device);
	for (int i = 0; i < m->niface; i++) {
		const FgrtTensor *t = &p->tensors[m->iface[i]];
		if (!ptrs[i] && fgrt_nbytes(t))
			fgrt_fail("tensor %d ('%s') is a null pointer", i, t->name);
		if ((uintptr_t)ptrs[i] % 256)
			fgrt_fail("tensor %d ('%s') at %p is not 256-byte aligned", i, t->name, ptrs[i]);
		if (i < p->ninputs || m->iface[i] >= p->ninputs)        /* not an input named as an output */
			m->ctx.ptr[m->iface[i]] = ptrs[i];
	}
	/* whether a capture is under way matters until the first run outside
	 * one (warm): asked until then only */
	cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
	if (!m->warm)
		CUDA(cudaStreamIsCapturing(stream, &capturing));
	if (capturing != cudaStreamCaptureStatusNone)
		fgrt_fail("the first run of '%s' is inside a CUDA-graph capture: run it once outside one first (that "
			  "makes its cuBLASLt plans and loads its kernels)", p->graph);
	m->ctx.stream = stream;
	fg_program_run(&m->ctx);
	/* an input that is also an output: its copy in the output's buffer */
	for (int i = p->ninputs; i < m->niface; i++)
		if (m->iface[i] < p->ninputs && ptrs[i] != ptrs[m->iface[i]])
			CUDA(cudaMemcpyAsync(ptrs[i], ptrs[m->iface[i]], fgrt_nbytes(&p->tensors[m->iface[i]]),
					     cudaMemcpyDeviceToDevice, stream));
	if (capturing == cudaStreamCaptureStatusNone)
		m->warm = 1;
}

/* ------------------------------------------------------------- the C ABI */

static thread_local char last_error[3 * FGRT_ERRLEN];  /* the graph's name, then FgrtError.msg */

static int failed(const FgrtError &e)
{
	snprintf(last_error, sizeof last_error, "%s: %s", fg_program.graph, e.msg);
	return -1;
}

extern "C" {

#define FG_API __attribute__((visibility("default")))

FG_API int fg_model_abi(void)
{
	return FG_MODEL_ABI;
}

FG_API const char *fg_model_name(void)
{
	return fg_program.graph;
}

FG_API int fg_model_ntensors(void)
{
	int n;
	interface_tensor(0, &n);
	return n;
}

FG_API int fg_model_tensor(int i, FgModelTensor *out)
{
	const FgrtProgram *p = &fg_program;
	int n, t = interface_tensor(i, &n);
	if (t < 0) {
		snprintf(last_error, sizeof last_error, "%s: no tensor %d: the model has %d (0 to %d)", p->graph, i, n,
			 n - 1);
		return -1;
	}
	const FgrtTensor *tt = &p->tensors[t];
	memset(out, 0, sizeof *out);
	out->name = tt->name;
	out->dtype = (int)tt->dtype;
	out->role = tt->role & (FGRT_INPUT | FGRT_PARAM | FGRT_OUTPUT | FGRT_SAVED);
	out->rank = tt->rank;
	for (int d = 0; d < tt->rank; d++)
		out->shape[d] = tt->shape[d];
	return 0;
}

FG_API int fg_model_create(int device, FgModel **model)
{
	if (!model)
		return failed(FgrtError{"fg_model_create: no place for the model (NULL)"});
	*model = NULL;
	try {
		*model = fgrt_model_new(device);
		return 0;
	} catch (FgrtError &e) {
		return failed(e);
	}
}

FG_API int fg_model_run(FgModel *model, void *const *ptrs, void *stream)
{
	try {
		if (!model)
			fgrt_fail("no model (NULL)");
		fgrt_model_run(model, ptrs, (cudaStream_t)stream);
		return 0;
	} catch (FgrtError &e) {
		return failed(e);
	}
}

FG_API int fg_model_check(FgModel *model)
{
	try {
		if (!model)
			fgrt_fail("no model (NULL)");
		char msg[3 * FGRT_ERRLEN - 256];
		if (!model->warm || !fgrt_faults(&model->ctx, msg, sizeof msg))      /* no run: nothing failed */
			return 0;
		size_t n = strlen(msg);
		while (n && msg[n - 1] == '\n')
			msg[--n] = 0;
		snprintf(last_error, sizeof last_error, "%s", msg);
		return -1;
	} catch (FgrtError &e) {
		return failed(e);
	}
}

FG_API void fg_model_destroy(FgModel *model)
{
	fgrt_model_free(model);
}

FG_API const char *fg_model_error(void)
{
	return last_error;
}

} /* extern "C" */
