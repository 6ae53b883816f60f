/*
 * gemm_sm90.cu - the generated matmul's kernel (runtime/fg_gemm_sm90.cuh)
 * on its own, on an sm_90a GPU: against a double-precision reference
 * kernel, then timed against cuBLASLt.
 *
 *   gemm_sm90 [--quick]            the sweep: PASS/FAIL per tile width,
 *                                  operand layout and type; exit 1 on a FAIL
 *   gemm_sm90 --bench [M N K]      bf16, D[M,N] = A[M,K] B[K,N] (default
 *                                  8192^3): cuBLASLt's plain matmul and
 *                                  its bias + GELU epilogue, then the
 *                                  kernel in three schedules with a plain
 *                                  store and with a bias + GELU + residual
 *                                  epilogue; each timed as the mean of 20
 *                                  runs in each of 7 rounds taken in turn,
 *                                  the medians compared
 *   gemm_sm90 --profile [M N K]    the same variants, each launched twice,
 *                                  the second in a profiler range: for
 *                                  ncu --profile-from-start off
 *   gemm_sm90 --sustain S [M N K]  the same variants, each alone for S
 *                                  seconds of back-to-back launches, three
 *                                  rounds in turn (the second in reverse),
 *                                  NVML's SM clock and board power read as
 *                                  launches end: time, clock, watts and
 *                                  work a joule (and against cuBLASLt
 *                                  plain's): under the power cap a
 *                                  kernel's time is its energy a flop
 *
 * The sweep: both schedules, tile widths 64, 128 and 256; A stored [M,K]
 * or [K,M], B [K,N] or [N,K]; bf16 and f16, and f32 multiplied as tf32
 * (K-major operands only, their values cut to tf32 first so that the
 * products are exact as in the 16-bit cases); M, N, K among 1, 7, 64, 127,
 * 1000 and 4097 (the stored row lengths a multiple of 8, the
 * accelerator's 16 bytes), one matrix or a batch of 3 (B shared or not).
 * Inputs are drawn in [-1, 1] and rounded to their type; D (f32) is
 * filled with NaN first, so an element left unwritten fails.  Each
 * element of D must lie within 2^-20 sqrt(K) + 2^-22 K of the reference:
 * f32 accumulation of exact products, in another order.
 *
 * Linked with runtime/fgrt_lib.cu, half.c and
 * check.c, like gemm_epilogue.cu.
 */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublasLt.h>
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>

#include <chrono>

#include "fg_gemm_sm90.cuh"
#include "fgrt_lib.h"

extern const FgrtProgram fg_program = {
	"gemm_sm90", "tests/runtime/gemm_sm90.cu", NULL, 0, 0, NULL, 0, 0, 0, 0, 0,
};

void fg_program_run(FgrtContext *ctx)
{
	(void)ctx;
}

static void check_cuda(cudaError_t e, const char *call, int line)
{
	if (e != cudaSuccess) {
		fprintf(stderr, "gemm_sm90: %s:%d: %s: %s (%s)\n", __FILE__, line, call, cudaGetErrorString(e),
			cudaGetErrorName(e));
		exit(2);
	}
}
#define CK(call) check_cuda((call), #call, __LINE__)

/* D[z][r][c] as f32, row-major [Z, M, N]. */
struct StoreF32 {
	float *d;
	int M, N;
	__device__ __forceinline__ void operator()(int z, int r, int c, float v0, float v1) const
	{
		float *p = d + ((int64_t)z * M + r) * N + c;
		p[0] = v0;
		if (c + 1 < N)
			p[1] = v1;
	}
};

/* The benchmark's: D in bf16, N even. */
struct StoreBf16 {
	__nv_bfloat16 *d;
	int N;
	__device__ __forceinline__ void operator()(int z, int r, int c, float v0, float v1) const
	{
		(void)z;
		*(__nv_bfloat162 *)(d + (int64_t)r * N + c) = __floats2bfloat162_rn(v0, v1);
	}
};

/* gelu(D + bias[c]) + res[r][c], in bf16: an epilogue off cuBLASLt's menu
 * (its loads read-only, ld.global.nc, free to move above the stores). */
struct BiasGeluRes {
	const __nv_bfloat16 *bias, *res;
	__nv_bfloat16 *d;
	int N;
	__device__ __forceinline__ void operator()(int z, int r, int c, float v0, float v1) const
	{
		(void)z;
		const int64_t o = (int64_t)r * N + c;
		const __nv_bfloat162 b = __ldg((const __nv_bfloat162 *)(bias + c));
		const __nv_bfloat162 x = __ldg((const __nv_bfloat162 *)(res + o));
		*(__nv_bfloat162 *)(d + o) = __floats2bfloat162_rn(fg_gelu(v0 + __low2float(b)) + __low2float(x),
								   fg_gelu(v1 + __high2float(b)) + __high2float(x));
	}
};

template <class T>
__global__ void reference(const T *a, const T *b, double *d, int M, int N, int K, int Z, int64_t sa, int64_t sb,
			  int ma, int nb)
{
	int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
	if (i >= (int64_t)Z * M * N)
		return;
	const int c = i % N, r = i / N % M, z = i / N / M;
	const T *A = a + z * sa, *B = b + z * sb;
	double s = 0;
	for (int k = 0; k < K; k++)
		s += (double)(float)(ma ? A[(int64_t)k * M + r] : A[(int64_t)r * K + k]) *
		     (double)(float)(nb ? B[(int64_t)k * N + c] : B[(int64_t)c * K + k]);
	d[i] = s;
}

/* v as an operand of type T: rounded to T; for float (tf32 operands)
 * truncated to tf32's 10 mantissa bits, so that the tensor cores read it
 * exactly whether they round or truncate. */
template <class T> __device__ T operand(float v)
{
	return (T)v;
}

template <> __device__ float operand<float>(float v)
{
	return __uint_as_float(__float_as_uint(v) & 0xFFFFE000u);
}

template <class T> __global__ void fill(T *p, int64_t n, uint64_t seed)
{
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
		uint64_t x = (i + 1) * 0x9E3779B97F4A7C15ull ^ seed;
		x ^= x >> 31, x *= 0xBF58476D1CE4E5B9ull, x ^= x >> 29;
		p[i] = operand<T>((float)(x >> 40) / (float)(1 << 23) - 1.0f);
	}
}

__global__ void fill_nan(float *p, int64_t n)
{
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
		p[i] = __int_as_float(0x7fffffff);
}

template <class T, int WM, int BN, int PP, int MA, int NB>
static int one_case(FgrtContext *ctx, int M, int N, int K, int Z, int bshared, uint64_t seed, double *worst)
{
	const int64_t sa = (int64_t)M * K, sb = bshared ? 0 : (int64_t)K * N, nd = (int64_t)Z * M * N;
	T *a, *b;
	float *d;
	double *ref;
	CK(cudaMalloc(&a, sa * Z * sizeof(T)));
	CK(cudaMalloc(&b, (int64_t)K * N * (bshared ? 1 : Z) * sizeof(T)));
	CK(cudaMalloc(&d, nd * 4));
	CK(cudaMalloc(&ref, nd * 8));
	fill<<<256, 256>>>(a, sa * Z, seed);
	fill<<<256, 256>>>(b, (int64_t)K * N * (bshared ? 1 : Z), seed * 7 + 1);
	fill_nan<<<256, 256>>>(d, nd);
	reference<<<(unsigned)((nd + 255) / 256), 256>>>(a, b, ref, M, N, K, Z, sa, sb, MA, NB);
	CK(cudaDeviceSynchronize());
	fgg::launch<T, WM, BN, PP, MA, NB>(ctx, a, b, M, N, K, Z, sa, sb, StoreF32{d, M, N});
	CK(cudaGetLastError());
	CK(cudaStreamSynchronize(ctx->stream));
	float *hd = (float *)malloc(nd * 4);
	double *hr = (double *)malloc(nd * 8);
	CK(cudaMemcpy(hd, d, nd * 4, cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(hr, ref, nd * 8, cudaMemcpyDeviceToHost));
	const double tol = ldexp(1.0, -20) * sqrt((double)K) + ldexp(1.0, -22) * K;
	int ok = 1;
	for (int64_t i = 0; i < nd; i++) {
		double e = fabs((double)hd[i] - hr[i]);
		if (!(e <= tol)) {
			if (ok)
				printf("  first bad element z %lld r %lld c %lld: %g, reference %g\n", (long long)(i / N / M),
				       (long long)(i / N % M), (long long)(i % N), hd[i], hr[i]);
			ok = 0;
		}
		if (e > *worst || e != e)
			*worst = e;
	}
	free(hd);
	free(hr);
	CK(cudaFree(a));
	CK(cudaFree(b));
	CK(cudaFree(d));
	CK(cudaFree(ref));
	return ok;
}

template <class T, int WM, int BN, int PP, int MA, int NB> static int sweep(FgrtContext *ctx, int quick, const char *what)
{
	static const int sizes[] = {1, 7, 64, 127, 1000, 4097};
	int n = 0, bad = 0;
	double worst = 0;
	for (int i = 0; i < 6; i++)
		for (int j = 0; j < 6; j++)
			for (int k = 0; k < 6; k++) {
				const int M = sizes[i], N = sizes[j], K = sizes[k];
				/* the stored rows: A's K (M when MA), B's N (K when B is [N,K]) */
				if ((MA ? M : K) % 8 || (NB ? N : K) % 8)
					continue;
				if (quick && (M > 1000 || N > 1000 || K > 1000))
					continue;
				if ((int64_t)M * N * K > (int64_t)1 << 33)
					continue;
				for (int z = 0; z < 3; z++) {
					const int Z = z ? 3 : 1, shared = z == 2;
					if (Z > 1 && (int64_t)M * N * K > (int64_t)1 << 30)
						continue;
					n++;
					if (!one_case<T, WM, BN, PP, MA, NB>(ctx, M, N, K, Z, shared, 1000 * n + BN, &worst)) {
						printf("  FAIL %s M %d N %d K %d batch %d%s\n", what, M, N, K, Z,
						       shared ? " (B shared)" : "");
						bad++;
					}
				}
			}
	printf("%s %s: %d cases, worst error %.3g\n", bad ? "FAIL" : "PASS", what, n, worst);
	return bad;
}

/* The mean of 20 runs of enqueue(), in ms, after one. */
template <class F> static float time_of(FgrtContext *ctx, F enqueue)
{
	cudaEvent_t e0, e1;
	CK(cudaEventCreate(&e0));
	CK(cudaEventCreate(&e1));
	enqueue();
	CK(cudaEventRecord(e0, ctx->stream));
	for (int i = 0; i < 20; i++)
		enqueue();
	CK(cudaEventRecord(e1, ctx->stream));
	CK(cudaGetLastError());         /* a failed launch is no fast one */
	CK(cudaEventSynchronize(e1));
	float ms;
	CK(cudaEventElapsedTime(&ms, e0, e1));
	CK(cudaEventDestroy(e0));
	CK(cudaEventDestroy(e1));
	return ms / 20;
}

/* The kernel in schedule WM x BN (PP), A [M,K], B [K,N]. */
template <int WM, int BN, int PP, class Epi>
static void launch_own(FgrtContext *ctx, const void *a, const void *b, int M, int N, int K, const Epi &epi)
{
	fgg::launch<__nv_bfloat16, WM, BN, PP, 0, 1>(ctx, a, b, M, N, K, 1, 0, 0, epi);
}

static int cmp_float(const void *x, const void *y)
{
	float a = *(const float *)x, b = *(const float *)y;
	return a < b ? -1 : a > b;
}

/* The benchmark's variants, in the order of its output: cuBLASLt plain and
 * with its nearest epilogue (bias + tanh GELU; no residual on its menu),
 * then fgc's kernel in three schedules, plain and with bias + erf GELU +
 * residual. */
static const char *const VARIANT_NAMES[] = {
	"cuBLASLt plain",
	"cuBLASLt bias+gelu(tanh) epilogue",
	"fgc cooperative 2x64x256 plain",
	"fgc ping-pong 128x128 plain",
	"fgc ping-pong 64x256 plain",
	"fgc cooperative 2x64x256 bias+gelu+residual",
	"fgc ping-pong 128x128 bias+gelu+residual",
	"fgc ping-pong 64x256 bias+gelu+residual",
};

/* The clocks of a GPU under a long matmul load settle below their idle
 * burst (power), so every variant is timed in each of ROUNDS rounds, in
 * turn, after a warm-up: the medians are compared. */
enum { ROUNDS = 7, VARIANTS = sizeof VARIANT_NAMES / sizeof VARIANT_NAMES[0] };

/* The driver's NVML, opened at run time (the binary needs no
 * libnvidia-ml to link): the SM clock in MHz and the board's power in W
 * of the current CUDA device, found by its PCI bus id. */
struct Nvml {
	void *dev = NULL;
	int (*clock)(void *, int, unsigned *) = NULL;
	int (*power)(void *, unsigned *) = NULL;

	bool open()
	{
		void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW);
		if (!lib)
			return false;
		auto init = (int (*)(void))dlsym(lib, "nvmlInit_v2");
		auto by_bus = (int (*)(const char *, void **))dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2");
		clock = (int (*)(void *, int, unsigned *))dlsym(lib, "nvmlDeviceGetClockInfo");
		power = (int (*)(void *, unsigned *))dlsym(lib, "nvmlDeviceGetPowerUsage");
		char bus[32];
		int d;
		return init && by_bus && clock && power && init() == 0 && cudaGetDevice(&d) == cudaSuccess &&
		       cudaDeviceGetPCIBusId(bus, sizeof bus, d) == cudaSuccess && by_bus(bus, &dev) == 0;
	}
	/* MHz and W now; 0 where a reading fails */
	void read(float &mhz, float &watts) const
	{
		unsigned m = 0, mw = 0;
		mhz = clock(dev, 1 /* NVML_CLOCK_SM */, &m) == 0 ? (float)m : 0.0f;
		watts = power(dev, &mw) == 0 ? mw / 1e3f : 0.0f;
	}
};

static float median_of(float *x, int n)
{
	qsort(x, n, sizeof(float), cmp_float);
	return n ? x[n / 2] : 0.0f;
}

/* One sustained run: enqueue() back to back for `seconds` (at least 10
 * launches), at most four in flight, NVML read as each one ends; the time
 * per launch (CUDA events around the run), the median clock and watts. */
enum { MAX_READS = 1 << 16 };
template <class F>
static void sustain(FgrtContext *ctx, const Nvml &nvml, double seconds, F enqueue, float &ms, float &mhz,
		    float &watts)
{
	static float clocks[MAX_READS], power[MAX_READS];
	cudaEvent_t e0, e1, ring[4];
	CK(cudaEventCreate(&e0));
	CK(cudaEventCreate(&e1));
	for (int i = 0; i < 4; i++)
		CK(cudaEventCreateWithFlags(&ring[i], cudaEventDisableTiming));
	const auto t0 = std::chrono::steady_clock::now();
	int n = 0, reads = 0;
	CK(cudaEventRecord(e0, ctx->stream));
	while (n < 10 || std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < seconds) {
		enqueue();
		CK(cudaEventRecord(ring[n % 4], ctx->stream));
		n++;
		if (n >= 4) {   /* the launch of four ago has ended, and ring[n % 4] is reused next */
			CK(cudaEventSynchronize(ring[n % 4]));
			if (reads < MAX_READS) {
				nvml.read(clocks[reads], power[reads]);
				reads++;
			}
		}
	}
	CK(cudaEventRecord(e1, ctx->stream));
	CK(cudaGetLastError());
	CK(cudaEventSynchronize(e1));
	CK(cudaEventElapsedTime(&ms, e0, e1));
	ms /= n;
	mhz = median_of(clocks, reads);
	watts = median_of(power, reads);
	CK(cudaEventDestroy(e0));
	CK(cudaEventDestroy(e1));
	for (int i = 0; i < 4; i++)
		CK(cudaEventDestroy(ring[i]));
}

enum Mode { TIME, PROFILE, SUSTAIN };

/* bf16 D[M,N] = A[M,K] B[K,N]: each variant timed (PROFILE: launched
 * twice, the second between cudaProfilerStart and Stop, for ncu;
 * SUSTAIN: each alone for `seconds`, with its clock and power). */
static int bench(FgrtContext *ctx, int M, int N, int K, Mode mode, double seconds)
{
	__nv_bfloat16 *a, *b, *d, *bias, *res;
	CK(cudaMalloc(&a, (int64_t)M * K * 2));
	CK(cudaMalloc(&b, (int64_t)K * N * 2));
	CK(cudaMalloc(&d, (int64_t)M * N * 2));
	CK(cudaMalloc(&res, (int64_t)M * N * 2));
	CK(cudaMalloc(&bias, N * 2));
	fill<<<1024, 256>>>(a, (int64_t)M * K, 1);
	fill<<<1024, 256>>>(b, (int64_t)K * N, 2);
	fill<<<1024, 256>>>(res, (int64_t)M * N, 3);
	fill<<<64, 256>>>(bias, N, 4);
	CK(cudaDeviceSynchronize());    /* the legacy stream's fills, before ctx->stream's launches */
	const double flop = 2.0 * M * (double)N * K;
	FgrtGemm g, ge;
	memset(&g, 0, sizeof g);
	g.ab = g.d = FGRT_BF16, g.m = M, g.n = N, g.k = K, g.batch = 1;
	ge = g;
	ge.epilogue = FGRT_EP_GELU_BIAS;
	const StoreBf16 st = {d, N};
	const BiasGeluRes ep = {bias, res, d, N};
	auto launch = [&](int v) {
		switch (v) {
		case 0: fgrt_gemm(ctx, 0, &g, a, b, d); break;
		case 1: fgrt_gemm_ep(ctx, 1, &ge, a, b, d, bias, NULL, NULL); break;
		case 2: launch_own<64, 256, 0>(ctx, a, b, M, N, K, st); break;
		case 3: launch_own<128, 128, 1>(ctx, a, b, M, N, K, st); break;
		case 4: launch_own<64, 256, 1>(ctx, a, b, M, N, K, st); break;
		case 5: launch_own<64, 256, 0>(ctx, a, b, M, N, K, ep); break;
		case 6: launch_own<128, 128, 1>(ctx, a, b, M, N, K, ep); break;
		default: launch_own<64, 256, 1>(ctx, a, b, M, N, K, ep); break;
		}
	};
	if (mode == SUSTAIN) {
		Nvml nvml;
		if (!nvml.open()) {
			fprintf(stderr, "gemm_sm90: --sustain: NVML (libnvidia-ml.so.1) cannot read this device\n");
			return 2;
		}
		enum { SR = 3 };
		float ms[VARIANTS][SR], mhz[VARIANTS][SR], watts[VARIANTS][SR];
		for (int v = 0; v < VARIANTS; v++)
			time_of(ctx, [&] { launch(v); });
		for (int r = 0; r < SR; r++)
			for (int i = 0; i < VARIANTS; i++) {
				const int v = r % 2 ? VARIANTS - 1 - i : i;
				sustain(ctx, nvml, seconds, [&] { launch(v); }, ms[v][r], mhz[v][r], watts[v][r]);
			}
		printf("sustained bf16 M %d N %d K %d, A[M,K] B[K,N], each variant alone for %.2f s, medians of %d "
		       "rounds:\n", M, N, K, seconds, SR);
		/* work a joule against cuBLASLt plain's: at the power cap a
		 * variant's time follows it (performance.md v38), where the median
		 * of NVML's clock readings does not */
		float j0 = 0;
		for (int v = 0; v < VARIANTS; v++) {
			const float t = median_of(ms[v], SR), f = median_of(mhz[v], SR), w = median_of(watts[v], SR);
			const float tflops = flop / t / 1e9, perj = w > 0 ? tflops / w : 0.0f;
			if (v == 0)
				j0 = perj;
			printf("  %-44s %.3f ms  %4.0f TFLOP/s  %4.0f MHz  %3.0f W  %.3f TFLOP/J  %5.1f%% of cuBLASLt "
			       "plain a joule\n", VARIANT_NAMES[v], t, tflops, f, w, perj, j0 > 0 ? 100 * perj / j0 : 0.0f);
		}
	} else if (mode == PROFILE) {
		/* ncu --profile-from-start off: the second launch of each */
		for (int v = 0; v < VARIANTS; v++) {
			launch(v);
			CK(cudaStreamSynchronize(ctx->stream));
			CK(cudaProfilerStart());
			launch(v);
			CK(cudaStreamSynchronize(ctx->stream));
			CK(cudaProfilerStop());
		}
		for (int v = 0; v < VARIANTS; v++)
			printf("profiled %d: %s\n", v, VARIANT_NAMES[v]);
	} else {
		float t[VARIANTS][ROUNDS], med[VARIANTS];
		for (int v = 0; v < VARIANTS; v++)
			time_of(ctx, [&] { launch(v); });
		for (int r = 0; r < ROUNDS; r++)
			for (int v = 0; v < VARIANTS; v++)
				t[v][r] = time_of(ctx, [&] { launch(v); });
		printf("bench bf16 M %d N %d K %d, A[M,K] B[K,N], medians of %d rounds:\n", M, N, K, ROUNDS);
		for (int v = 0; v < VARIANTS; v++) {
			med[v] = median_of(t[v], ROUNDS);
			printf("  %-44s %.3f ms  %4.0f TFLOP/s  %5.1f%% of cuBLASLt plain\n", VARIANT_NAMES[v],
			       med[v], flop / med[v] / 1e9, 100 * med[0] / med[v]);
		}
	}
	CK(cudaFree(a));
	CK(cudaFree(b));
	CK(cudaFree(d));
	CK(cudaFree(res));
	CK(cudaFree(bias));
	return 0;
}

static int run_main(int argc, char **argv)
{
	int quick = 0, mnk[3] = {0, 0, 0};
	Mode mode = TIME;
	double seconds = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick")) {
			quick = 1;
		} else if (!strcmp(argv[i], "--bench") || !strcmp(argv[i], "--profile") || !strcmp(argv[i], "--sustain")) {
			mode = argv[i][2] == 'p' ? PROFILE : argv[i][2] == 's' ? SUSTAIN : TIME;
			if (mode == SUSTAIN) {
				char *end = NULL;
				seconds = i + 1 < argc ? strtod(argv[++i], &end) : 0;
				if (!end || *end || !(seconds > 0 && seconds <= 60)) {
					fprintf(stderr, "gemm_sm90: --sustain S: seconds in (0, 60]\n");
					return 2;
				}
			}
			for (int j = 0; j < 3; j++)
				mnk[j] = i + 1 < argc && argv[i + 1][0] != '-' ? atoi(argv[++i]) : 8192;
			if (mnk[0] < 1 || mnk[1] < 2 || mnk[2] < 1 || mnk[1] % 8 || mnk[2] % 8) {
				fprintf(stderr, "gemm_sm90: --bench M N K: N and K multiples of 8\n");
				return 2;
			}
		} else {
			fprintf(stderr, "usage: %s [--quick] [--bench|--profile|--sustain S [M N K]]\n", argv[0]);
			return 2;
		}
	}
	FgrtContext ctx;
	FgrtGemmPlan *slots[2] = {NULL, NULL};
	memset(&ctx, 0, sizeof ctx);
	ctx.prog = &fg_program;
	CK(cudaStreamCreateWithFlags(&ctx.stream, cudaStreamNonBlocking));
	cublasLtHandle_t lt;
	if (cublasLtCreate(&lt) != CUBLAS_STATUS_SUCCESS) {
		fprintf(stderr, "gemm_sm90: cublasLtCreate failed\n");
		return 2;
	}
	ctx.lt = lt;
	ctx.workspace_bytes = (size_t)32 << 20;
	CK(cudaMalloc(&ctx.workspace, ctx.workspace_bytes));
	ctx.gemm = slots;
	if (mnk[0])
		return bench(&ctx, mnk[0], mnk[1], mnk[2], mode, seconds);
	int bad = 0;
	bad += sweep<__nv_bfloat16, 64, 256, 0, 0, 1>(&ctx, quick, "bf16 cooperative 2x64x256 A[M,K] B[K,N]");
	bad += sweep<__nv_bfloat16, 64, 256, 0, 0, 0>(&ctx, quick, "bf16 cooperative 2x64x256 A[M,K] B[N,K]");
	bad += sweep<__nv_bfloat16, 128, 128, 1, 0, 1>(&ctx, quick, "bf16 ping-pong 128x128 A[M,K] B[K,N]");
	bad += sweep<__nv_bfloat16, 128, 128, 1, 1, 0>(&ctx, quick, "bf16 ping-pong 128x128 A[K,M] B[N,K]");
	bad += sweep<__nv_bfloat16, 64, 256, 1, 0, 1>(&ctx, quick, "bf16 ping-pong 64x256 A[M,K] B[K,N]");
	bad += sweep<__nv_bfloat16, 128, 64, 1, 0, 1>(&ctx, quick, "bf16 ping-pong 128x64 A[M,K] B[K,N]");
	bad += sweep<__nv_bfloat16, 64, 128, 0, 1, 1>(&ctx, quick, "bf16 cooperative 2x64x128 A[K,M] B[K,N]");
	bad += sweep<__half, 128, 128, 1, 0, 1>(&ctx, quick, "f16 ping-pong 128x128 A[M,K] B[K,N]");
	bad += sweep<__half, 64, 64, 0, 1, 0>(&ctx, quick, "f16 cooperative 2x64x64 A[K,M] B[N,K]");
	bad += sweep<float, 64, 256, 0, 0, 0>(&ctx, quick, "tf32 cooperative 2x64x256 A[M,K] B[N,K]");
	bad += sweep<float, 128, 128, 1, 0, 0>(&ctx, quick, "tf32 ping-pong 128x128 A[M,K] B[N,K]");
	bad += sweep<float, 64, 64, 1, 0, 0>(&ctx, quick, "tf32 ping-pong 64x64 A[M,K] B[N,K]");
	printf("%s\n", bad ? "FAILED" : "all passed");
	return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	try {
		return run_main(argc, argv);
	} catch (FgrtError &e) {       /* the runtime's failure, as a binary reports it */
		fprintf(stderr, "gemm_sm90: error: %s\n", e.msg);
		return 1;
	}
}
