/*
 * pair_combine.cu - a row kernel's pairs combined across a block and across
 * a cluster (runtime/fg_device.cuh: fg_block_reduce and fg_cluster_reduce
 * of FgExpSum with FgOnlineSoftmax, which take the max first and then the
 * sum of each pair's sum rescaled to it, and of FgMoments with FgWelford,
 * Chan's combination step after step, and with FgWelfordSteps, the count
 * and mean first and then the squared deviations) against f64
 * on the host.  Moments: each thread's part drawn as elements (0 to 40 of
 * them, around 1000 with a spread of 1 or of 0.1: Welford's case), the
 * mean and the squared deviations of all the elements computed directly.
 * Softmax pairs against their combination in f64, as a row kernel's
 * threads hold them: finite
 * maxima far apart (exps that underflow), threads whose part held only
 * -inf ({-inf, 0}), a whole row of -inf, a +inf in the row (that thread's
 * sum NaN), a NaN.  Every thread of the block, and every block of the
 * cluster, must get the same bits; the cluster kernel combines twice, so
 * that its second call takes the other slots (its turn).
 *
 * One line per case; exit status 1 if any value differs from the f64
 * combination by more than 4e-6 relative (its sum of up to 512 positive
 * terms in f32, each rescaled by one expf; a count exactly, a mean within
 * 2.5e-7 relative (2 of f32's units at 1000), the squared deviations
 * within 2e-4 relative: each part's mean, rounded to f32, is off by up to
 * 3e-5 in distances to the mean of about 0.02 at a spread of 0.1, which
 * errs by 3e-3 in their squares, and those make about 5% of the total:
 * 1.5e-4; 2.6e-5 seen on the H200), where the two differ in NaN or infinity,
 * or where two threads or blocks disagree.
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

/* out[t]: thread t's combination of the block's pairs with Op */
template <typename T, typename Op>
__global__ void __launch_bounds__(BLOCK) block_combine(const T *in, T *out)
{
	out[threadIdx.x] = fg_block_reduce(in[threadIdx.x], Op());
}

/* out[2 * (b * CBLOCK + t) + c]: call c's combination in thread t of block
 * b; call 0 combines in[0 .. CLUSTER * CBLOCK), call 1 the next as many */
template <typename T, typename Op>
__global__ void __launch_bounds__(CBLOCK) __cluster_dims__(CLUSTER, 1, 1)
	cluster_combine(const T *in, T *out)
{
	fg_cluster_start();
	unsigned turn = 0;
	const int t = blockIdx.x * CBLOCK + threadIdx.x, n = CLUSTER * CBLOCK;
	const T a = fg_cluster_reduce<CLUSTER>(in[t], Op(), turn++);
	const T b = fg_cluster_reduce<CLUSTER>(in[n + t], Op(), turn++);
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

/* n parts of moments drawn as elements around 1000 with the given spread
 * (every fourth part empty when `gaps`): each part's f32 moments into p,
 * the f64 count, mean and squared deviations of all the elements */
static void moments(FgMoments *p, int n, double spread, int gaps, double *cnt, double *mean, double *m2)
{
	static double x[64];
	double all_n = 0, all_s = 0, all_q = 0;
	for (int pass = 0; pass < 2; pass++) {
		unsigned keep = rng;
		for (int i = 0; i < n; i++) {
			int k = gaps && i % 4 == 0 ? 0 : 1 + (int)(40 * uniform());
			double s = 0, q = 0;
			for (int j = 0; j < k; j++)
				s += x[j] = (double)(float)(1000.0 + spread * (2.0 * uniform() - 1.0));
			if (pass == 0) {
				all_n += k;
				all_s += s;
				continue;
			}
			for (int j = 0; j < k; j++)
				q += (x[j] - s / k) * (x[j] - s / k);
			for (int j = 0; j < k; j++)
				all_q += (x[j] - all_s / all_n) * (x[j] - all_s / all_n);
			p[i] = FgMoments{(float)k, k ? (float)(s / k) : 0.0f, (float)q};
		}
		if (pass == 0)
			rng = keep;       /* the same elements again */
	}
	*cnt = all_n;
	*mean = all_s / all_n;
	*m2 = all_q;
}

static int moments_agree(FgMoments g, double n, double mean, double m2)
{
	return (double)g.n == n && fabs((double)g.mean - mean) <= 2.5e-7 * fabs(mean) && fabs((double)g.m2 - m2) <= 2e-4 * m2;
}

int main(void)
{
	int ndev = 0;
	if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
		fprintf(stderr, "pair_combine: error: no CUDA device\n");
		return 1;
	}
	const int ncases = 7, nc = CLUSTER * CBLOCK;
	void *dev_in, *dev_out;
	CUDA_OK(cudaMalloc(&dev_in, sizeof(FgMoments) * 2 * nc));
	CUDA_OK(cudaMalloc(&dev_out, sizeof(FgMoments) * 2 * nc));
	FgExpSum in[2 * nc], out[2 * nc];
	FgExpSum *din = (FgExpSum *)dev_in, *dout = (FgExpSum *)dev_out;
	int bad = 0;
	for (int k = 0; k < ncases; k++) {
		/* the block: BLOCK pairs */
		const char *what = fill(k, in, BLOCK);
		double m, s;
		reference(in, BLOCK, &m, &s);
		CUDA_OK(cudaMemcpy(din, in, sizeof(FgExpSum) * BLOCK, cudaMemcpyHostToDevice));
		block_combine<FgExpSum, FgOnlineSoftmax><<<1, BLOCK>>>(din, dout);
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
		cluster_combine<FgExpSum, FgOnlineSoftmax><<<CLUSTER, CBLOCK>>>(din, dout);
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
	FgMoments mi[2 * nc], mo[2 * nc];
	for (int k = 0; k < 8; k++) {
		const double spread = k & 1 ? 0.1 : 1.0;
		const int gaps = k & 2, steps = k & 4;
		const char *op = steps ? "FgWelfordSteps" : "FgWelford";
		double n, mean, m2, n2, mean2, m22;
		moments(mi, BLOCK, spread, gaps, &n, &mean, &m2);
		CUDA_OK(cudaMemcpy(din, mi, sizeof(FgMoments) * BLOCK, cudaMemcpyHostToDevice));
		if (steps)
			block_combine<FgMoments, FgWelfordSteps><<<1, BLOCK>>>((const FgMoments *)dev_in, (FgMoments *)dev_out);
		else
			block_combine<FgMoments, FgWelford><<<1, BLOCK>>>((const FgMoments *)dev_in, (FgMoments *)dev_out);
		CUDA_OK(cudaGetLastError());
		CUDA_OK(cudaMemcpy(mo, dout, sizeof(FgMoments) * BLOCK, cudaMemcpyDeviceToHost));
		int same = 1;
		for (int t = 1; t < BLOCK; t++)
			same &= !memcmp(&mo[t], &mo[0], sizeof mo[0]);
		int ok = same && moments_agree(mo[0], n, mean, m2);
		printf("%s block of %d, %s, moments around 1000, spread %g%s: n %g mean %.9g m2 %.9g (f64: %g %.9g %.9g)%s\n",
		       ok ? "ok  " : "FAIL", BLOCK, op, spread, gaps ? ", every fourth part empty" : "", mo[0].n, mo[0].mean,
		       mo[0].m2, n, mean, m2, same ? "" : "; threads disagree");
		bad |= !ok;
		moments(mi, nc, spread, gaps, &n, &mean, &m2);
		moments(mi + nc, nc, spread, !gaps, &n2, &mean2, &m22);
		CUDA_OK(cudaMemcpy(din, mi, sizeof(FgMoments) * 2 * nc, cudaMemcpyHostToDevice));
		if (steps)
			cluster_combine<FgMoments, FgWelfordSteps><<<CLUSTER, CBLOCK>>>((const FgMoments *)dev_in, (FgMoments *)dev_out);
		else
			cluster_combine<FgMoments, FgWelford><<<CLUSTER, CBLOCK>>>((const FgMoments *)dev_in, (FgMoments *)dev_out);
		CUDA_OK(cudaGetLastError());
		CUDA_OK(cudaMemcpy(mo, dout, sizeof(FgMoments) * 2 * nc, cudaMemcpyDeviceToHost));
		same = 1;
		for (int t = 2; t < 2 * nc; t++)
			same &= !memcmp(&mo[t], &mo[t & 1], sizeof mo[0]);
		ok = same && moments_agree(mo[0], n, mean, m2) && moments_agree(mo[1], n2, mean2, m22);
		printf("%s cluster of %d x %d, %s, moments around 1000, spread %g: n %g mean %.9g m2 %.9g, then %g %.9g "
		       "%.9g (f64: %g %.9g %.9g, %g %.9g %.9g)%s\n", ok ? "ok  " : "FAIL", CLUSTER, CBLOCK, op, spread, mo[0].n,
		       mo[0].mean, mo[0].m2, mo[1].n, mo[1].mean, mo[1].m2, n, mean, m2, n2, mean2, m22,
		       same ? "" : "; threads or blocks disagree");
		bad |= !ok;
	}
	CUDA_OK(cudaFree(dev_in));
	CUDA_OK(cudaFree(dev_out));
	printf("pair_combine: %s\n", bad ? "FAILED" : "all cases agree with f64");
	return bad;
}
