/*
 * pair_combine.cu - a softmax pair's combination across a block and across
 * a cluster (runtime/fg_device.cuh: fg_block_reduce and fg_cluster_reduce
 * of FgExpSum with FgOnlineSoftmax, which take the max first and then the
 * sum of each pair's sum rescaled to it) against the same combination in
 * f64 on the host, for pairs as a row kernel's threads hold them: finite
 * maxima far apart (exps that underflow), threads whose part held only
 * -inf ({-inf, 0}), a whole row of -inf, a +inf in the row (that thread's
 * sum NaN), a NaN.  Every thread of the block, and every block of the
 * cluster, must get the same bits; the cluster kernel combines twice, so
 * that its second call takes the other slots (its turn).
 *
 * One line per case; exit status 1 if any value differs from the f64
 * combination by more than 4e-6 relative (its sum of up to 512 positive
 * terms in f32, each rescaled by one expf), where the two differ in NaN or
 * infinity, or where two threads or blocks disagree.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg_device.cuh"

#define BLOCK 256
#define CLUSTER 4
#define CBLOCK 128

#define CUDA_OK(x)                                                                            \
	do {                                                                                  \
		cudaError_t e_ = (x);                                                         \
		if (e_ != cudaSuccess) {                                                      \
			fprintf(stderr, "pair_combine: %s: %s\n", #x, cudaGetErrorString(e_)); \
			exit(1);                                                              \
		}                                                                             \
	} while (0)

/* out[t]: thread t's combination of the block's pairs */
__global__ void __launch_bounds__(BLOCK) block_pairs(const FgExpSum *in, FgExpSum *out)
{
	out[threadIdx.x] = fg_block_reduce(in[threadIdx.x], FgOnlineSoftmax());
}

/* out[2 * (b * CBLOCK + t) + c]: call c's combination in thread t of block
 * b; call 0 combines in[0 .. CLUSTER * CBLOCK), call 1 the next as many */
__global__ void __launch_bounds__(CBLOCK) __cluster_dims__(CLUSTER, 1, 1)
	cluster_pairs(const FgExpSum *in, FgExpSum *out)
{
	fg_cluster_start();
	unsigned turn = 0;
	const int t = blockIdx.x * CBLOCK + threadIdx.x, n = CLUSTER * CBLOCK;
	const FgExpSum a = fg_cluster_reduce<CLUSTER>(in[t], FgOnlineSoftmax(), turn++);
	const FgExpSum b = fg_cluster_reduce<CLUSTER>(in[n + t], FgOnlineSoftmax(), turn++);
	out[2 * t] = a;
	out[2 * t + 1] = b;
}

/* the combination in f64: the max (NaN if any is), then each sum rescaled
 * to it (a pair whose max is the max keeps its sum, -inf and +inf too) */
static void reference(const FgExpSum *p, int n, double *m, double *s)
{
	double mx = -INFINITY, sum = 0;
	for (int i = 0; i < n; i++)
		mx = isnan(p[i].m) || isnan(mx) ? NAN : fmax(mx, p[i].m);
	for (int i = 0; i < n; i++)
		sum += (double)p[i].m == mx ? (double)p[i].s : (double)p[i].s * exp((double)p[i].m - mx);
	*m = mx;
	*s = sum;
}

/* whether got matches the f64 value want */
static int agrees(float got, double want)
{
	if (isnan(want) || isnan(got))
		return isnan(want) && isnan(got);
	if (isinf(want) || isinf(got))
		return (double)got == want;
	return fabs((double)got - want) <= 4e-6 * fabs(want);
}

static unsigned rng = 12345u;
static double uniform(void)
{
	rng = rng * 1664525u + 1013904223u;
	return (rng >> 8) / 16777216.0;
}

/* case k's pairs into p[0 .. n): a thread's pair is its part's max and
 * its sum of exp(x - max), so a finite max has a sum of 1 or more */
static const char *fill(int k, FgExpSum *p, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = FgExpSum{(float)(40.0 * uniform() - 20.0), (float)(1.0 + 99.0 * uniform())};
	switch (k) {
	case 0:
		return "finite maxima in [-20, 20)";
	case 1:
		for (int i = 0; i < n; i++)
			p[i].m = (float)(180.0 * uniform() - 100.0);
		return "maxima in [-100, 80): most rescalings underflow";
	case 2:
		for (int i = 0; i < n; i += 3)
			p[i] = FgExpSum{-INFINITY, 0.0f};
		return "a third of the parts only -inf";
	case 3:
		for (int i = 0; i < n; i++)
			p[i] = FgExpSum{-INFINITY, 0.0f};
		return "every part only -inf";
	case 4:
		p[n / 2 + 7] = FgExpSum{INFINITY, NAN};
		return "a +inf in one part";
	case 5:
		p[n - 1].m = NAN;
		return "a NaN in the last part";
	default:
		p[0] = FgExpSum{-INFINITY, 0.0f};
		p[1] = FgExpSum{5.0f, 1.0f};
		return "the max in one part, the first part -inf";
	}
}

int main(void)
{
	int ndev = 0;
	if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
		fprintf(stderr, "pair_combine: error: no CUDA device\n");
		return 1;
	}
	const int ncases = 7, nc = CLUSTER * CBLOCK;
	FgExpSum *din, *dout;
	CUDA_OK(cudaMalloc(&din, sizeof(FgExpSum) * 2 * nc));
	CUDA_OK(cudaMalloc(&dout, sizeof(FgExpSum) * 2 * nc));
	FgExpSum in[2 * nc], out[2 * nc];
	int bad = 0;
	for (int k = 0; k < ncases; k++) {
		/* the block: BLOCK pairs */
		const char *what = fill(k, in, BLOCK);
		double m, s;
		reference(in, BLOCK, &m, &s);
		CUDA_OK(cudaMemcpy(din, in, sizeof(FgExpSum) * BLOCK, cudaMemcpyHostToDevice));
		block_pairs<<<1, BLOCK>>>(din, dout);
		CUDA_OK(cudaGetLastError());
		CUDA_OK(cudaMemcpy(out, dout, sizeof(FgExpSum) * BLOCK, cudaMemcpyDeviceToHost));
		int same = 1;
		for (int t = 1; t < BLOCK; t++)
			same &= !memcmp(&out[t], &out[0], sizeof out[0]);
		int ok = same && agrees(out[0].m, m) && agrees(out[0].s, s);
		printf("%s block of %d, %s: max %g sum %.9g (f64: %g %.9g)%s\n", ok ? "ok  " : "FAIL", BLOCK, what,
		       out[0].m, out[0].s, m, s, same ? "" : "; threads disagree");
		bad |= !ok;

		/* the cluster: two calls of CLUSTER * CBLOCK pairs each */
		fill(k, in, nc);
		fill((k + 1) % ncases, in + nc, nc);
		double m2, s2;
		reference(in, nc, &m, &s);
		reference(in + nc, nc, &m2, &s2);
		CUDA_OK(cudaMemcpy(din, in, sizeof(FgExpSum) * 2 * nc, cudaMemcpyHostToDevice));
		cluster_pairs<<<CLUSTER, CBLOCK>>>(din, dout);
		CUDA_OK(cudaGetLastError());
		CUDA_OK(cudaMemcpy(out, dout, sizeof(FgExpSum) * 2 * nc, cudaMemcpyDeviceToHost));
		same = 1;
		for (int t = 2; t < 2 * nc; t++)
			same &= !memcmp(&out[t], &out[t & 1], sizeof out[0]);
		ok = same && agrees(out[0].m, m) && agrees(out[0].s, s) && agrees(out[1].m, m2) && agrees(out[1].s, s2);
		printf("%s cluster of %d x %d, %s, then the next case: max %g sum %.9g, then %g %.9g (f64: %g %.9g, %g "
		       "%.9g)%s\n", ok ? "ok  " : "FAIL", CLUSTER, CBLOCK, what, out[0].m, out[0].s, out[1].m, out[1].s, m,
		       s, m2, s2, same ? "" : "; threads or blocks disagree");
		bad |= !ok;
	}
	CUDA_OK(cudaFree(din));
	CUDA_OK(cudaFree(dout));
	printf("pair_combine: %s\n", bad ? "FAILED" : "all cases agree with f64");
	return bad;
}
