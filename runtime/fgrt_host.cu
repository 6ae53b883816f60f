/*
 * fgrt_host.cu - the host side of every binary `fgc compile` builds: main(),
 * the device memory, the inputs, the launches, the outputs, --check and
 * --bench.  It is linked with one generated model.cu, which provides
 * fg_program (the tables) and fg_program_run() (fgrt_program.h), and with
 * npy.c, half.c and check.c.
 *
 *   model [--inputs DIR] [--outputs DIR] [--seed S] [--check DIR] [--bench N] [--no-graph]
 *
 * Inputs are read from DIR/NAME.npy with the interpreter's rules (the
 * exact declared shape, the dtype's file type: <f4 for f32 and bf16, <f2,
 * <i4, |b1), or drawn from the seed exactly as `fgc run` draws them (the
 * Philox input stream of fgrt_philox.h, weights scaled by 1/sqrt(fan-in)),
 * so a binary and the interpreter given the same seed see the same bits.
 * Outputs and saved values are written as NAME.npy and saved.NAME.npy in
 * the same file types.  --check compares each with DIR's golden file
 * under the tolerance the compiler put in the tensor table (testing.md),
 * one verdict line each, and exits 1 when any fails; a value under the
 * RMSE gate takes DIR/in-dtype/'s file, when there is one (fgc run
 * --in-dtype), as the gate's baseline.
 *
 * The program runs once eagerly (each launch checked as it is made, the
 * cuBLASLt plans made, every kernel loaded), then its launches are
 * captured into one CUDA graph, instantiated once, and every later run is
 * a replay of it: the outputs and saved values are the first replay's
 * (the arena and scratch are poisoned before it), and --bench times
 * replays.  --no-graph keeps every run eager, for debugging.  --bench N
 * prints the median of N runs after warm-up, with CUDA events: the whole
 * program as replayed, the whole program launched eagerly, and each
 * launch of eager runs with an event after every launch.
 *
 * Invariants: every CUDA and cuBLASLt call is checked, and a failure stops
 * the program with exit status 1 and one line: the file, line, call and
 * error string, or for the foreseeable failures (no device, device memory
 * exhausted, no cuBLASLt algorithm) what could not be done and why.
 * Device memory is one arena of the planned size, one scratch buffer and
 * one buffer per input, all freed before exit.
 *
 * Built with -DFGRT_NO_MAIN (tests/runtime/), the file keeps only what
 * the generated code calls (fgrt_gemm, fgrt_gemm_ep, fgrt_launched) and
 * the error reporting, and a test may set fgrt_die_hook to regain control
 * after a failure has been reported.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cublasLt.h>
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include "fgrt.h"
#include "fgrt_philox.h"
#include "fgrt_program.h"

/* ---------------------------------------------------------------- errors */

#ifdef FGRT_NO_MAIN
/* Called after a failure is reported, instead of exit(1), when set: the
 * tests of tests/runtime/ throw from it to go on with the next case. */
void (*fgrt_die_hook)(void);
#endif

static void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void die(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "%s: error: ", fg_program.graph);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(stderr);
#ifdef FGRT_NO_MAIN
	if (fgrt_die_hook)
		fgrt_die_hook();
#endif
	exit(1);
}

static void cuda_check(cudaError_t e, const char *call, const char *file, int line)
{
	if (e != cudaSuccess)
		die("%s:%d: %s: %s (%s)", file, line, call, cudaGetErrorString(e), cudaGetErrorName(e));
}

static void lt_check(cublasStatus_t s, const char *call, const char *file, int line)
{
	if (s != CUBLAS_STATUS_SUCCESS)
		die("%s:%d: %s: %s (%s)", file, line, call, cublasLtGetStatusString(s), cublasLtGetStatusName(s));
}

#define CUDA(call) cuda_check((call), #call, __FILE__, __LINE__)
#define LT(call) lt_check((call), #call, __FILE__, __LINE__)

/* ---------------------------------------------------------------- dtypes */

/* Per FgrtDtype (FGRT_DTYPES, then FGRT_TF32): its name and size. */
static const char *const dtype_name[] = {
#define X(id, name, size, npy) name,
	FGRT_DTYPES(X)
#undef X
	"f32 (as tf32)",
};
static const size_t dtype_size[] = {
#define X(id, name, size, npy) size,
	FGRT_DTYPES(X)
#undef X
	4,
};
#ifndef FGRT_NO_MAIN
/* The .npy type each dtype travels as (bf16 as float values). */
static const FgrtNpyType storage[] = {
#define X(id, name, size, npy) FGRT_NPY_##npy,
	FGRT_DTYPES(X)
#undef X
};

static int64_t numel(const FgrtTensor *t)
{
	int64_t n = 1;
	for (int i = 0; i < t->rank; i++)
		n *= t->shape[i];
	return n;
}

static size_t nbytes(const FgrtTensor *t)
{
	return (size_t)numel(t) * dtype_size[t->dtype];
}

static const char *role_name(const FgrtTensor *t)
{
	return t->role & FGRT_PARAM ? "param" : t->role & FGRT_INPUT ? "input" : "value";
}

/* "f32[4096,1024]" */
static char *type_str(char *buf, size_t n, const FgrtTensor *t)
{
	size_t at = (size_t)snprintf(buf, n, "%s[", dtype_name[t->dtype]);
	for (int i = 0; i < t->rank && at < n; i++)
		at += (size_t)snprintf(buf + at, n - at, "%s%lld", i ? "," : "", (long long)t->shape[i]);
	if (at < n)
		snprintf(buf + at, n - at, "]");
	return buf;
}

/* Element i of host data in the dtype's device layout, as a double. */
static double element(const FgrtTensor *t, const void *data, int64_t i)
{
	switch (t->dtype) {
	case FGRT_F32:
		return ((const float *)data)[i];
	case FGRT_F16:
		return fgrt_f16_to_f64(((const uint16_t *)data)[i]);
	case FGRT_BF16:
		return fgrt_bf16_to_f64(((const uint16_t *)data)[i]);
	case FGRT_I32:
		return ((const int32_t *)data)[i];
	default:
		return ((const unsigned char *)data)[i] != 0;
	}
}

/* ----------------------------------------------------------------- paths */

static char *path_of(const char *dir, const char *prefix, const char *name)
{
	size_t n = strlen(dir) + strlen(prefix) + strlen(name) + 6;
	char *p = (char *)malloc(n);
	if (!p)
		die("out of memory");
	snprintf(p, n, "%s/%s%s.npy", dir, prefix, name);
	return p;
}

static void make_dirs(const char *dir)
{
	char *p = strdup(dir);
	if (!p)
		die("out of memory");
	for (char *q = p + 1;; q++) {
		if (*q != '/' && *q != '\0')
			continue;
		char c = *q;
		*q = '\0';
		if (mkdir(p, 0777) != 0 && errno != EEXIST)
			die("cannot create directory '%s': %s", p, strerror(errno));
		*q = c;
		if (!c)
			break;
	}
	struct stat st;
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
		die("cannot write outputs to '%s': not a directory", dir);
	free(p);
}

/* --------------------------------------------------------------- inputs */

/* Reads path as tensor t's file and converts it to t's device layout in
 * out.  Same rules as `fgc run`: exact shape, the dtype's file type. */
static void load_file(const char *path, const FgrtTensor *t, void *out)
{
	char err[FGRT_ERRLEN], ty[256], got[256], need[256];
	FgrtNpy f;
	if (fgrt_npy_read(path, 0, &f, err) != 0)
		die("%s", err);
	int same = f.type == storage[t->dtype] && f.rank == t->rank;
	for (int i = 0; same && i < f.rank; i++)
		same = f.shape[i] == t->shape[i];
	if (!same) {
		fgrt_shape_str(got, sizeof got, f.rank, f.shape);
		fgrt_shape_str(need, sizeof need, t->rank, t->shape);
		die("'%s' holds %s %s, but %s '%s' is declared %s and needs %s %s%s", path,
		    fgrt_npy_type_descr(f.type), got, role_name(t), t->name, type_str(ty, sizeof ty, t),
		    fgrt_npy_type_descr(storage[t->dtype]), need,
		    t->dtype == FGRT_BF16 ? " (bf16 travels as float32 values)" : "");
	}
	if (t->dtype == FGRT_BF16) {
		int64_t rounded = 0;
		for (int64_t i = 0; i < f.numel; i++) {
			float x = ((const float *)f.data)[i];
			uint16_t h = fgrt_f32_to_bf16(x);
			rounded += fgrt_bf16_to_f32(h) != x && x == x;
			((uint16_t *)out)[i] = h;
		}
		if (rounded)
			fprintf(stderr, "%s: warning: '%s': %lld of the %lld values of %s '%s' are not bf16 values; "
				"rounded to the nearest bf16 (ties to even)\n", fg_program.graph, path,
				(long long)rounded, (long long)f.numel, role_name(t), t->name);
	} else {
		memcpy(out, f.data, f.nbytes);
	}
	fgrt_npy_free(&f);
}

typedef struct Draw {
	const FgrtTensor *t;
	int k;                  /* input number: the Philox stream's k */
	uint64_t seed;
	double scale;
	void *out;
	int64_t from, to;
} Draw;

/* Elements [from, to) of input k, as compiler/run.c draws them. */
static void *draw_range(void *arg)
{
	const Draw *d = (const Draw *)arg;
	for (int64_t i = d->from; i < d->to; i++) {
		double u = fgrt_input_uniform(d->seed, (uint32_t)d->k, (uint64_t)i);
		double x = (2.0 * u - 1.0) * d->scale;
		switch (d->t->dtype) {
		case FGRT_F32:
			((float *)d->out)[i] = (float)x;
			break;
		case FGRT_F16:
			((uint16_t *)d->out)[i] = fgrt_f64_to_f16(x);
			break;
		case FGRT_BF16:
			((uint16_t *)d->out)[i] = fgrt_f64_to_bf16(x);
			break;
		case FGRT_I32:
			((int32_t *)d->out)[i] = (int32_t)(floor(17.0 * u) - 8.0);
			break;
		case FGRT_BOOL:
			((unsigned char *)d->out)[i] = u < 0.5;
			break;
		}
	}
	return NULL;
}

/* Draws input k from the seed, on every core for large tensors.  A float
 * param of rank >= 2 is a weight: scaled by 1/sqrt(its second-to-last
 * dim). */
static void draw(const FgrtTensor *t, int k, uint64_t seed, void *out)
{
	enum { MAXT = 64 };
	Draw d[MAXT];
	pthread_t th[MAXT];
	int64_t n = numel(t);
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	int nt = n < (1 << 20) ? 1 : cores < 1 ? 1 : cores > MAXT ? MAXT : (int)cores;
	double scale = 1.0;
	if ((t->role & FGRT_PARAM) && t->rank >= 2 && t->dtype <= FGRT_BF16)
		scale = 1.0 / sqrt((double)t->shape[t->rank - 2]);
	for (int i = 0; i < nt; i++) {
		d[i] = (Draw){t, k, seed, scale, out, n * i / nt, n * (i + 1) / nt};
		if (nt > 1 && pthread_create(&th[i], NULL, draw_range, &d[i]) != 0)
			die("cannot start a thread to draw '%s'", t->name);
	}
	if (nt == 1)
		draw_range(&d[0]);
	for (int i = 0; nt > 1 && i < nt; i++)
		pthread_join(th[i], NULL);
}

#endif /* !FGRT_NO_MAIN */

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
		die("cuBLASLt takes no %s operands", dtype_name[t]);
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
static const Epilogue *check_epilogue(int slot, const FgrtGemm *g, const void *bias, const void *aux)
{
	if ((unsigned)g->epilogue > FGRT_EP_GELU_AUX_BIAS)
		die("gemm slot %d: no epilogue number %d", slot, (int)g->epilogue);
	const Epilogue *ep = &epilogues[g->epilogue];
	if (ep->bias && !bias)
		die("gemm slot %d: the %s epilogue needs a bias vector, and none was passed", slot, ep->name);
	if (!ep->bias && bias)
		die("gemm slot %d: a bias vector was passed, but the %s epilogue adds none", slot, ep->name);
	if (ep->aux && !aux)
		die("gemm slot %d: the %s epilogue writes an aux tensor, and none was passed", slot, ep->name);
	if (!ep->aux && aux)
		die("gemm slot %d: an aux tensor was passed, but the %s epilogue writes none", slot, ep->name);
	if (ep->aux) {
		/* cuBLASLt's rule: GELU input pitch in elements, a multiple of 8;
		 * the ReLU mask's in bits, a multiple of 128; strides alike */
		int64_t q = ep->aux == AUX_RELU_BITS ? 128 : 8;
		const char *unit = ep->aux == AUX_RELU_BITS ? "bits" : "elements";
		if (g->ld_aux < g->n || g->ld_aux % q)
			die("gemm slot %d: the %s epilogue needs aux rows (ld_aux) of at least n = %lld %s and a multiple "
			    "of %lld; got ld_aux %lld", slot, ep->name, (long long)g->n, unit, (long long)q,
			    (long long)g->ld_aux);
		int bad = g->stride_aux % q != 0;
		for (int i = 0; i < g->nouter; i++)
			bad |= g->outer_aux[i] % q != 0;
		if (bad)
			die("gemm slot %d: the %s epilogue needs aux batch strides that are multiples of %lld %s",
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
			       const void *D, const void *bias, void *aux)
{
	const Epilogue *ep = check_epilogue(slot, g, bias, aux);
	FgrtGemmPlan *p = (FgrtGemmPlan *)calloc(1, sizeof *p);
	if (!p)
		die("out of memory");
	if (g->batch > INT32_MAX)
		die("a batch of %lld matrices is more than cuBLASLt takes", (long long)g->batch);
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
	size_t ea = dtype_size[g->ab], ed = dtype_size[g->d];
	uint64_t xa[2 + FGRT_PROGRAM_MAX_RANK], xb[2 + FGRT_PROGRAM_MAX_RANK], xd[2 + FGRT_PROGRAM_MAX_RANK];
	int n = 0;
	xa[n] = (uint64_t)(uintptr_t)A, xb[n] = (uint64_t)(uintptr_t)B, xd[n++] = (uint64_t)(uintptr_t)D;
	xa[n] = (uint64_t)g->stride_a * ea, xb[n] = (uint64_t)g->stride_b * ea, xd[n++] = (uint64_t)g->stride_d * ed;
	for (int i = 0; i < g->nouter; i++, n++)
		xa[n] = (uint64_t)g->outer_a[i] * ea, xb[n] = (uint64_t)g->outer_b[i] * ea,
		xd[n] = (uint64_t)g->outer_d[i] * ed;
	uint32_t al_a = (uint32_t)alignment(xb, n), al_b = (uint32_t)alignment(xa, n), al_d = (uint32_t)alignment(xd, n);

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
	LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al_d, sizeof al_d));
	LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al_d, sizeof al_d));
	cublasLtMatmulHeuristicResult_t res;
	int found = 0;
	LT(cublasLtMatmulAlgoGetHeuristic((cublasLtHandle_t)ctx->lt, p->op, p->a, p->b, p->d, p->d, pref, 1, &res, &found));
	LT(cublasLtMatmulPreferenceDestroy(pref));
	if (found < 1)
		die("gemm slot %d: cuBLASLt has no algorithm for a %s matmul [%lld,%lld] x [%lld,%lld] (batch %lld%s%s) "
		    "into %s with the epilogue %s", slot, dtype_name[g->ab], (long long)g->m, (long long)g->k,
		    (long long)g->k, (long long)g->n, (long long)g->batch, g->trans_a ? ", A stored transposed" : "",
		    g->trans_b ? ", B stored transposed" : "", dtype_name[g->d], ep->name);
	p->algo = res.algo;
	return p;
}

void fgrt_gemm_ep(FgrtContext *ctx, int slot, const FgrtGemm *g, const void *a, const void *b, void *d,
		  const void *bias, void *aux)
{
	if (!ctx->gemm[slot])
		ctx->gemm[slot] = make_plan(ctx, slot, g, a, b, d, bias, aux);
	const FgrtGemmPlan *p = ctx->gemm[slot];
	const float alpha = 1.0f, beta = 0.0f;
	size_t ea = dtype_size[g->ab], ed = dtype_size[g->d];
	int64_t idx[FGRT_PROGRAM_MAX_RANK] = {0};
	for (;;) {
		int64_t oa = 0, ob = 0, od = 0, obias = 0, oaux = 0;
		for (int i = 0; i < g->nouter; i++) {
			oa += idx[i] * g->outer_a[i], ob += idx[i] * g->outer_b[i], od += idx[i] * g->outer_d[i];
			obias += idx[i] * g->outer_bias[i], oaux += idx[i] * g->outer_aux[i];
		}
		const char *pa = (const char *)a + oa * (int64_t)ea, *pb = (const char *)b + ob * (int64_t)ea;
		char *pd = (char *)d + od * (int64_t)ed;
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
		LT(cublasLtMatmul((cublasLtHandle_t)ctx->lt, p->op, &alpha, pb, p->a, pa, p->b, &beta, pd, p->d, pd, p->d,
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
	fgrt_gemm_ep(ctx, slot, g, a, b, d, NULL, NULL);
}

void fgrt_cuda(cudaError_t e, const char *call)
{
	if (e != cudaSuccess)
		die("%s: %s (%s)", call, cudaGetErrorString(e), cudaGetErrorName(e));
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
			die("the driver has no cuTensorMapEncodeTiled (query result %d): the generated matmul needs "
			    "CUDA 12 or later", (int)q);
		encode = (PFN_cuTensorMapEncodeTiled_v12000)fn;
	}
	const cuuint32_t unit[3] = {1, 1, 1};
	/* tf32 operands travel as f32: the tensor cores read the bits they use */
	CUresult r = encode((CUtensorMap *)map, dt == FGRT_F16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 :
			    dt == FGRT_BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
			    3, (void *)base, dims, pitch, box, unit,
			    CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
			    CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
	if (r != CUDA_SUCCESS)
		die("cuTensorMapEncodeTiled refused a matmul operand at %p (dims %llu x %llu x %llu, pitches %llu "
		    "and %llu bytes, box %u x %u): CUresult %d", base, (unsigned long long)dims[0],
		    (unsigned long long)dims[1], (unsigned long long)dims[2], (unsigned long long)pitch[0],
		    (unsigned long long)pitch[1], box[0], box[1], (int)r);
}

void fgrt_launched(FgrtContext *ctx, int i)
{
	const FgrtLaunch *l = &ctx->prog->launches[i];
	cudaError_t e = cudaGetLastError();
	if (e != cudaSuccess)
		die("launch %d (%s, group %d, grid %u, block %u): %s (%s)", i, l->kernel, l->group, l->grid, l->block,
		    cudaGetErrorString(e), cudaGetErrorName(e));
	if (ctx->marks)
		CUDA(cudaEventRecord(ctx->marks[i], ctx->stream));
}

#ifndef FGRT_NO_MAIN

static void free_plan(FgrtGemmPlan *p)
{
	if (!p)
		return;
	LT(cublasLtMatrixLayoutDestroy(p->a));
	LT(cublasLtMatrixLayoutDestroy(p->b));
	LT(cublasLtMatrixLayoutDestroy(p->d));
	LT(cublasLtMatmulDescDestroy(p->op));
	free(p);
}

/* ------------------------------------------------------------- outputs */

/* Device tensor t, copied to the host in its device layout. */
static void *download(const FgrtContext *ctx, int t)
{
	const FgrtTensor *tt = &fg_program.tensors[t];
	size_t n = nbytes(tt);
	void *h = malloc(n ? n : 1);
	if (!h)
		die("out of memory reading back '%s'", tt->name);
	if (n)
		CUDA(cudaMemcpy(h, ctx->ptr[t], n, cudaMemcpyDeviceToHost));
	return h;
}

static void write_npy(const char *path, const FgrtTensor *t, const void *data)
{
	FgrtNpy f;
	char err[FGRT_ERRLEN];
	memset(&f, 0, sizeof f);
	f.type = storage[t->dtype];
	f.rank = t->rank;
	for (int i = 0; i < t->rank; i++)
		f.shape[i] = t->shape[i];
	f.numel = numel(t);
	f.nbytes = (size_t)f.numel * fgrt_npy_type_size(f.type);
	f.data = malloc(f.nbytes ? f.nbytes : 1);
	if (!f.data)
		die("out of memory writing '%s'", path);
	if (t->dtype == FGRT_BF16) {
		for (int64_t i = 0; i < f.numel; i++)
			((float *)f.data)[i] = fgrt_bf16_to_f32(((const uint16_t *)data)[i]);
	} else {
		memcpy(f.data, data, f.nbytes);
	}
	if (fgrt_npy_write(path, &f, err) != 0)
		die("%s", err);
	free(f.data);
}

/* The golden file at path as t's numel doubles into e: 0, or 1 after a
 * FAIL line for label (a missing file with missing_ok: -1, silently). */
static int read_golden(const char *path, const char *label, const FgrtTensor *t, double *e, int missing_ok)
{
	char err[FGRT_ERRLEN], ty[256];
	FgrtNpy f;
	if (missing_ok && access(path, F_OK) != 0 && errno == ENOENT)
		return -1;
	if (fgrt_npy_read(path, 0, &f, err) != 0) {
		printf("FAIL %s  %s  %s\n", label, type_str(ty, sizeof ty, t), err);
		return 1;
	}
	int same = f.type == storage[t->dtype] && f.rank == t->rank;
	for (int i = 0; same && i < f.rank; i++)
		same = f.shape[i] == t->shape[i];
	if (!same) {
		char got[256];
		fgrt_shape_str(got, sizeof got, f.rank, f.shape);
		printf("FAIL %s  %s  '%s' holds %s %s\n", label, type_str(ty, sizeof ty, t), path,
		       fgrt_npy_type_descr(f.type), got);
		fgrt_npy_free(&f);
		return 1;
	}
	for (int64_t i = 0, n = numel(t); i < n; i++) {
		switch (f.type) {
		case FGRT_NPY_F4:
			e[i] = ((const float *)f.data)[i];
			break;
		case FGRT_NPY_F2:
			e[i] = fgrt_f16_to_f64(((const uint16_t *)f.data)[i]);
			break;
		case FGRT_NPY_I4:
			e[i] = ((const int32_t *)f.data)[i];
			break;
		case FGRT_NPY_B1:
			e[i] = ((const unsigned char *)f.data)[i] != 0;
			break;
		}
	}
	fgrt_npy_free(&f);
	return 0;
}

/* Compares t's values (host copy) with the golden file DIR/PREFIXNAME.npy;
 * a value under the RMSE gate takes DIR/in-dtype/PREFIXNAME.npy as its
 * baseline when that exists (fgc run --in-dtype).  Prints one verdict
 * line; 0 when they agree. */
static int check_one(const char *dir, const char *prefix, const FgrtTensor *t, const void *data)
{
	char ty[256], label[512], ix[256];
	snprintf(label, sizeof label, "%s%s", prefix, t->name);
	FgrtTol tol = fgrt_tolerance(dtype_name[t->dtype], t->rmse);
	int64_t n = numel(t);
	double *a = (double *)malloc((size_t)(n ? n : 1) * sizeof *a);
	double *e = (double *)malloc((size_t)(n ? n : 1) * sizeof *e);
	double *b = tol.rmse_m > 0 ? (double *)malloc((size_t)(n ? n : 1) * sizeof *b) : NULL;
	char *path = path_of(dir, prefix, t->name);
	char *bdir = (char *)malloc(strlen(dir) + sizeof "/" FGRT_IN_DTYPE_DIR);
	if (!a || !e || (tol.rmse_m > 0 && !b) || !bdir)
		die("out of memory checking '%s'", t->name);
	sprintf(bdir, "%s/%s", dir, FGRT_IN_DTYPE_DIR);
	char *bpath = path_of(bdir, prefix, t->name);
	int bad = read_golden(path, label, t, e, 0), base = 0;
	if (!bad && tol.rmse_m > 0) {
		base = read_golden(bpath, label, t, b, 1);
		bad = base > 0;
		base = base == 0;
	}
	if (!bad) {
		for (int64_t i = 0; i < n; i++)
			a[i] = element(t, data, i);
		FgrtCheck c;
		fgrt_check_base(a, e, NULL, base ? b : NULL, n, &tol, &c);
		printf("%-4s %s  %s  max abs err %.3g", c.ok ? "ok" : "FAIL", label, type_str(ty, sizeof ty, t),
		       c.max_abs_err);
		if (tol.rmse_m > 0)
			printf("  rmse %.3g %s %.3g%s", c.rmse, c.rmse <= c.rmse_limit ? "<=" : ">", c.rmse_limit,
			       base ? " (baseline in the dtype)" : "");
		if (!c.ok && tol.rmse_m > 0 && c.rmse <= c.rmse_limit)
			printf("  NaN/Inf where the reference has none");
		else if (!c.ok && tol.rmse_m == 0)
			printf("  %lld of %lld outside rtol %g atol %g", (long long)c.nbad, (long long)n, tol.rtol,
			       tol.atol);
		if (c.worst >= 0) {
			fgrt_index_str(ix, sizeof ix, t->rank, t->shape, c.worst);
			printf("  worst %s: got %.9g, want %.9g", ix, c.worst_actual, c.worst_expected);
		}
		putchar('\n');
		bad = !c.ok;
	}
	free(a);
	free(e);
	free(b);
	free(path);
	free(bdir);
	free(bpath);
	return bad;
}

/* ---------------------------------------------------------------- bench */

static int cmp_float(const void *x, const void *y)
{
	float a = *(const float *)x, b = *(const float *)y;
	return (a > b) - (a < b);
}

static float median(float *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_float);
	return n % 2 ? v[n / 2] : 0.5f * (v[n / 2 - 1] + v[n / 2]);
}

/* Device-to-device copy bandwidth, bytes read plus written per second:
 * the memory floor's yardstick, measured in the same run. */
static double copy_gbs(cudaStream_t s)
{
	const size_t n = (size_t)512 << 20;
	void *a, *b;
	cudaEvent_t e0, e1;
	float t[10];
	CUDA(cudaMalloc(&a, n));
	CUDA(cudaMalloc(&b, n));
	CUDA(cudaMemsetAsync(a, 1, n, s));
	CUDA(cudaEventCreate(&e0));
	CUDA(cudaEventCreate(&e1));
	for (int i = 0; i < 13; i++) {
		CUDA(cudaEventRecord(e0, s));
		CUDA(cudaMemcpyAsync(b, a, n, cudaMemcpyDeviceToDevice, s));
		CUDA(cudaEventRecord(e1, s));
		CUDA(cudaEventSynchronize(e1));
		if (i >= 3)
			CUDA(cudaEventElapsedTime(&t[i - 3], e0, e1));
	}
	CUDA(cudaEventDestroy(e0));
	CUDA(cudaEventDestroy(e1));
	CUDA(cudaFree(a));
	CUDA(cudaFree(b));
	return 2.0 * (double)n / (median(t, 10) * 1e-3) / 1e9;
}

/* One whole run: a replay of the graph, or eager launches without one. */
static void run_once(FgrtContext *ctx, cudaGraphExec_t exec)
{
	if (exec)
		CUDA(cudaGraphLaunch(exec, ctx->stream));
	else
		fg_program_run(ctx);
}

/* The median of `runs` whole runs after 3 warm-ups, from events around
 * each; t holds runs floats. */
static float time_runs(FgrtContext *ctx, cudaGraphExec_t exec, int runs, float *t, cudaEvent_t e0, cudaEvent_t e1)
{
	for (int i = 0; i < 3; i++)
		run_once(ctx, exec);
	for (int r = 0; r < runs; r++) {
		CUDA(cudaEventRecord(e0, ctx->stream));
		run_once(ctx, exec);
		CUDA(cudaEventRecord(e1, ctx->stream));
		CUDA(cudaEventSynchronize(e1));
		CUDA(cudaEventElapsedTime(&t[r], e0, e1));
	}
	return median(t, runs);
}

/* exec: the program's graph, or NULL (--no-graph).  Three timings, each
 * the median of `runs`: the replayed graph (the headline total), eager
 * launches with no event between them, and each launch of eager runs
 * with an event recorded after every launch (which costs a little). */
static void bench(FgrtContext *ctx, cudaGraphExec_t exec, int runs)
{
	const FgrtProgram *p = &fg_program;
	cudaEvent_t e0, e1;
	float *t = (float *)calloc((size_t)runs, sizeof *t);
	float *per = (float *)calloc((size_t)runs * (size_t)(p->nlaunches + 1), sizeof *per);
	if (!t || !per)
		die("out of memory");
	double ideal = 0;
	for (int i = 0; i < p->ntensors; i++)
		if (p->tensors[i].role & (FGRT_INPUT | FGRT_PARAM | FGRT_OUTPUT | FGRT_SAVED))
			ideal += (double)nbytes(&p->tensors[i]);
	double copy = copy_gbs(ctx->stream);
	CUDA(cudaEventCreate(&e0));
	CUDA(cudaEventCreate(&e1));
	float eager = time_runs(ctx, NULL, runs, t, e0, e1);
	float ms = exec ? time_runs(ctx, exec, runs, t, e0, e1) : eager;
	/* each launch: the time between its mark and the one before */
	ctx->marks = (cudaEvent_t *)calloc((size_t)p->nlaunches + 1, sizeof(cudaEvent_t));
	if (!ctx->marks)
		die("out of memory");
	for (int i = 0; i < p->nlaunches; i++)
		CUDA(cudaEventCreate(&ctx->marks[i]));
	for (int r = 0; r < runs && p->nlaunches > 0; r++) {
		CUDA(cudaEventRecord(e0, ctx->stream));
		fg_program_run(ctx);
		CUDA(cudaEventSynchronize(ctx->marks[p->nlaunches - 1]));
		for (int i = 0; i < p->nlaunches; i++)
			CUDA(cudaEventElapsedTime(&per[(size_t)i * runs + r], i ? ctx->marks[i - 1] : e0, ctx->marks[i]));
	}
	printf("bench %s: %d runs after 3 warm-ups, medians of CUDA-event times\n", p->graph, runs);
	printf("  per launch: eager runs, an event recorded after every launch\n");
	for (int i = 0; i < p->nlaunches; i++)
		printf("  launch %-2d group %-3d %-40s %10.4f ms\n", i, p->launches[i].group, p->launches[i].kernel,
		       median(&per[(size_t)i * runs], runs));
	if (exec)
		printf("  eager total %.4f ms: launched one by one, no events between launches\n", eager);
	double gbs = ideal / (ms * 1e-3) / 1e9;
	printf("  total %.4f ms (%s); ideal traffic %.1f MB (inputs read once, outputs and saved values written "
	       "once): %.0f GB/s, %.1f%% of copy bandwidth %.0f GB/s (floor %.4f ms)\n",
	       ms, exec ? "replay of one CUDA graph" : "eager launches, --no-graph", ideal / 1e6, gbs,
	       100.0 * gbs / copy, copy, ideal / (copy * 1e9) * 1e3);
	for (int i = 0; i < p->nlaunches; i++)
		CUDA(cudaEventDestroy(ctx->marks[i]));
	free(ctx->marks);
	ctx->marks = NULL;
	CUDA(cudaEventDestroy(e0));
	CUDA(cudaEventDestroy(e1));
	free(t);
	free(per);
}

/* ------------------------------------------------------------ CUDA graph */

/* fg_program_run's launches, captured once into a graph and instantiated.
 * Called after an eager run: the cuBLASLt plans exist by then (their
 * heuristics are host work that must not run inside a capture) and every
 * kernel is loaded (lazy module loading must not happen inside one
 * either).  A launch whose configuration is refused fails here as it
 * would eagerly, through fgrt_launched. */
static cudaGraphExec_t capture(FgrtContext *ctx)
{
	cudaGraph_t graph;
	cudaGraphExec_t exec;
	CUDA(cudaStreamBeginCapture(ctx->stream, cudaStreamCaptureModeThreadLocal));
	fg_program_run(ctx);
	CUDA(cudaStreamEndCapture(ctx->stream, &graph));
	CUDA(cudaGraphInstantiate(&exec, graph, 0));
	CUDA(cudaGraphDestroy(graph));
	return exec;
}

/* ----------------------------------------------------------------- main */

static const char usage[] =
	"usage: %s [--inputs DIR] [--outputs DIR] [--seed S] [--check DIR] [--bench N] [--no-graph]\n"
	"  --inputs DIR   read NAME.npy for each input and param; missing ones are drawn from the seed\n"
	"  --outputs DIR  write NAME.npy per output and saved.NAME.npy per @save value\n"
	"  --seed S       seed of drawn inputs (default 0), as `fgc run --seed S`\n"
	"  --check DIR    compare every output and saved value with DIR's .npy files; exit 1 on a mismatch\n"
	"                 (DIR/in-dtype/, from fgc run --in-dtype: the RMSE gate's baseline)\n"
	"  --bench N      time N runs after warm-up: medians of the graph replay, of eager launches and of\n"
	"                 each launch, GB/s\n"
	"  --no-graph     launch every run eagerly, each launch checked as it is made, instead of replaying\n"
	"                 one CUDA graph of the program (for debugging)\n";

typedef struct Options {
	const char *inputs, *outputs, *check;
	uint64_t seed;
	int bench;
	int no_graph;
} Options;

static void parse(int argc, char **argv, Options *o)
{
	memset(o, 0, sizeof *o);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			printf(usage, argv[0]);
			exit(0);
		}
		if (!strcmp(a, "--no-graph")) {
			o->no_graph = 1;
			continue;
		}
		static const char *const with_value[] = {"--inputs", "--outputs", "--check", "--seed", "--bench"};
		int known = 0;
		for (size_t j = 0; j < sizeof with_value / sizeof with_value[0]; j++)
			known |= !strcmp(a, with_value[j]);
		if (!known)
			die("unknown option '%s' (see --help)", a);
		if (i + 1 >= argc)
			die("%s needs a value (see --help)", a);
		const char *v = argv[++i];
		char *end;
		if (!strcmp(a, "--inputs")) {
			o->inputs = v;
		} else if (!strcmp(a, "--outputs")) {
			o->outputs = v;
		} else if (!strcmp(a, "--check")) {
			o->check = v;
		} else if (!strcmp(a, "--seed")) {
			errno = 0;
			o->seed = strtoull(v, &end, 10);
			if (errno || *end || !*v || *v == '-')
				die("--seed %s: expected an unsigned 64-bit integer", v);
		} else if (!strcmp(a, "--bench")) {
			errno = 0;
			long n = strtol(v, &end, 10);
			if (errno || *end || n < 1 || n > 100000)
				die("--bench %s: expected a number of runs from 1 to 100000", v);
			o->bench = (int)n;
		}
	}
}

/* cudaMalloc of n bytes (at least 1) for `what`; failing, one line that
 * says how much was asked and how much the device has free. */
static void *dev_alloc(size_t n, const char *what)
{
	void *p = NULL;
	cudaError_t e = cudaMalloc(&p, n ? n : 1);
	if (e == cudaSuccess)
		return p;
	(void)cudaGetLastError();       /* not sticky: clear it */
	size_t free_b, total;
	if (cudaMemGetInfo(&free_b, &total) == cudaSuccess)
		die("cannot allocate %s (%zu bytes, %.2f GiB; the device has %.2f GiB free of %.2f GiB): %s (%s)", what,
		    n, (double)n / (1 << 30), (double)free_b / (1 << 30), (double)total / (1 << 30),
		    cudaGetErrorString(e), cudaGetErrorName(e));
	die("cannot allocate %s (%zu bytes, %.2f GiB): %s (%s)", what, n, (double)n / (1 << 30), cudaGetErrorString(e),
	    cudaGetErrorName(e));
}

int main(int argc, char **argv)
{
	const FgrtProgram *p = &fg_program;
	FgrtContext ctx;
	Options o;
	struct stat st;
	char what[512];
	int ndev = 0;

	parse(argc, argv, &o);
	if (o.inputs && (stat(o.inputs, &st) != 0 || !S_ISDIR(st.st_mode)))
		die("cannot read inputs from '%s': %s", o.inputs, errno ? strerror(errno) : "not a directory");
	cudaError_t e = cudaGetDeviceCount(&ndev);
	if (e != cudaSuccess)
		die("no CUDA device: %s (%s)", cudaGetErrorString(e), cudaGetErrorName(e));
	if (ndev < 1)
		die("no CUDA device: the driver reports none");
	memset(&ctx, 0, sizeof ctx);
	ctx.prog = p;
	ctx.ptr = (void **)calloc((size_t)p->ntensors + 1, sizeof(void *));
	ctx.gemm = (FgrtGemmPlan **)calloc((size_t)p->ngemms + 1, sizeof(FgrtGemmPlan *));
	if (!ctx.ptr || !ctx.gemm)
		die("out of memory");
	CUDA(cudaStreamCreateWithFlags(&ctx.stream, cudaStreamNonBlocking));
	ctx.arena = (char *)dev_alloc((size_t)p->arena_bytes, "the arena");
	ctx.scratch = (char *)dev_alloc((size_t)p->scratch_bytes, "the scratch buffer");
	if (p->ngemms) {
		cublasLtHandle_t lt;
		LT(cublasLtCreate(&lt));
		ctx.lt = lt;
		ctx.workspace_bytes = (size_t)32 << 20;
		ctx.workspace = dev_alloc(ctx.workspace_bytes, "cuBLASLt's workspace");
	}

	/* inputs: from files or drawn, then to the device */
	for (int t = 0; t < p->ntensors; t++) {
		const FgrtTensor *tt = &p->tensors[t];
		if (t >= p->ninputs) {
			ctx.ptr[t] = ctx.arena + tt->offset;
			continue;
		}
		size_t n = nbytes(tt);
		void *h = malloc(n ? n : 1);
		if (!h)
			die("out of memory for %s '%s'", role_name(tt), tt->name);
		char *path = o.inputs ? path_of(o.inputs, "", tt->name) : NULL;
		if (path && (stat(path, &st) == 0 || errno != ENOENT))
			load_file(path, tt, h);
		else
			draw(tt, t, o.seed, h);
		free(path);
		snprintf(what, sizeof what, "%s '%s'", role_name(tt), tt->name);
		ctx.ptr[t] = dev_alloc(n, what);
		CUDA(cudaMemcpy(ctx.ptr[t], h, n, cudaMemcpyHostToDevice));
		free(h);
	}
	/* cudaMemcpy from pageable memory may return before its DMA lands,
	 * and ctx.stream (non-blocking) does not wait for the legacy stream */
	CUDA(cudaDeviceSynchronize());

	/* One eager run, each launch checked as it is made; then, unless
	 * --no-graph, the graph, and the arena and scratch poisoned (0xff:
	 * NaN in every float type) so that what is read back is its replay's. */
	cudaGraphExec_t exec = NULL;
	fg_program_run(&ctx);
	CUDA(cudaStreamSynchronize(ctx.stream));
	CUDA(cudaGetLastError());
	if (!o.no_graph && p->nlaunches > 0) {
		exec = capture(&ctx);
		CUDA(cudaMemsetAsync(ctx.arena, 0xff, (size_t)p->arena_bytes, ctx.stream));
		CUDA(cudaMemsetAsync(ctx.scratch, 0xff, (size_t)p->scratch_bytes, ctx.stream));
		CUDA(cudaGraphLaunch(exec, ctx.stream));
		CUDA(cudaStreamSynchronize(ctx.stream));
		CUDA(cudaGetLastError());
	}

	/* outputs and saved values: write, check */
	int bad = 0, checked = 0;
	if (o.outputs)
		make_dirs(o.outputs);
	for (int pass = 0; pass < 2; pass++)
		for (int t = 0; t < p->ntensors; t++) {
			const FgrtTensor *tt = &p->tensors[t];
			if (!(tt->role & (pass ? FGRT_SAVED : FGRT_OUTPUT)) || (!o.outputs && !o.check))
				continue;
			const char *prefix = pass ? "saved." : "";
			void *h = download(&ctx, t);
			if (o.outputs) {
				char *path = path_of(o.outputs, prefix, tt->name);
				write_npy(path, tt, h);
				free(path);
			}
			if (o.check) {
				bad += check_one(o.check, prefix, tt, h);
				checked++;
			}
			free(h);
		}
	if (o.check)
		printf("%s %s: %d of %d values match %s\n", bad ? "FAIL" : "ok", p->graph, checked - bad, checked, o.check);
	if (o.bench)
		bench(&ctx, exec, o.bench);
	if (exec)
		CUDA(cudaGraphExecDestroy(exec));

	for (int g = 0; g < p->ngemms; g++)
		free_plan(ctx.gemm[g]);
	for (int t = 0; t < p->ninputs; t++)
		CUDA(cudaFree(ctx.ptr[t]));
	if (ctx.lt) {
		LT(cublasLtDestroy((cublasLtHandle_t)ctx.lt));
		CUDA(cudaFree(ctx.workspace));
	}
	CUDA(cudaFree(ctx.arena));
	CUDA(cudaFree(ctx.scratch));
	CUDA(cudaStreamDestroy(ctx.stream));
	free(ctx.ptr);
	free(ctx.gemm);
	return bad ? 1 : 0;
}

#endif /* !FGRT_NO_MAIN */
