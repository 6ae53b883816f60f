/*
 * ex2_fma.cu - runtime/fg_device.cuh's fg_ex2_fma (2^a by a polynomial on
 * the FMA pipe, a share of the attention kernel's softmax exponents), run
 * on the host (no GPU) against exp2 in double:
 *   - every f32 from -126 up to 127 on a sweep of 2^24 steps, and every
 *     f32 in [-1, 0] whose low 6 bits are 0 (the exponents near a row's
 *     max, where most of the mass is): relative error within 2^-18;
 *   - below -126 (to -inf) exactly 0, as ex2.approx.ftz flushes there:
 *     a row that a mask empties keeps its sum 0 (its output NaN, as the
 *     reference's);
 *   - NaN gives NaN.
 * Build: nvcc -O2 -I runtime tests/runtime/ex2_fma.cu (run-runtime.sh).
 */
#include <cmath>
#include <cstdio>
#include <cstring>

#include "fg_device.cuh"

static long long checked, bad;
static double worst;

static void one(float a)
{
	const double want = exp2((double)a), got = fg_ex2_fma(a);
	checked++;
	if (a < -126.0f) {
		if (got != 0.0 && bad++ < 10)
			fprintf(stderr, "2^%a: %a, want 0 (flushed)\n", a, got);
		return;
	}
	const double rel = fabs(got / want - 1);
	worst = rel > worst ? rel : worst;
	if (!(rel <= 0x1p-18) && bad++ < 10)
		fprintf(stderr, "2^%a: %a, want %a (relative error %.3g)\n", a, got, want, rel);
}

int main(void)
{
	for (long i = 0; i <= 1L << 24; i++)
		one((float)(-126.0 + 253.0 * (double)i / (double)(1L << 24)));
	for (unsigned int b = 0x80000000u; b <= 0xbf800000u; b += 64) {    /* [-1, -0] */
		float a;
		memcpy(&a, &b, sizeof a);
		one(a);
	}
	const float low[] = {-126.0001f, -127.0f, -150.0f, -1e30f, -INFINITY};
	for (float a : low)
		one(a);
	if (!std::isnan(fg_ex2_fma(NAN)) && bad++ < 10)
		fprintf(stderr, "2^NaN is not NaN\n");
	printf("ex2_fma: %lld inputs, worst relative error %.3g (2^%.2f), %lld wrong\n", checked, worst, log2(worst),
	       bad);
	return bad != 0;
}
