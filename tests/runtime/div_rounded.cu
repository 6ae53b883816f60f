/*
 * div_rounded.cu - runtime/fg_device.cuh's fg_div_rounded, run on the host
 * (no GPU): a quotient computed as a * fg_rcp_rn(d), with the division
 * only near a rounding boundary, must round to the same integer as the
 * correctly rounded a / d.  Every finite f16 a over about 2,000 f16
 * divisors (all of the binades [1, 2) and [-2, -1), samples of the
 * others), for round (boundary 0.5) and for floor and ceil (boundary 0);
 * f32 pairs whose quotient is an integer or a half, or 1 or 2 ulp from
 * one; random f32 bit patterns; and the specials.  The
 * product q = a * r and t = q - boundary are evaluated both as two
 * roundings (the host) and with t fused from the exact product (fmaf:
 * what nvcc may contract on the device).
 * Build: nvcc -O2 -I runtime tests/runtime/div_rounded.cu (run-runtime.sh).
 */
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "fg_device.cuh"

/* fg_div_rounded with t from the unrounded product, as an FMA. */
static float div_rounded_fused(float a, float d, float r, float boundary)
{
	const float q = a * r, t = fmaf(a, r, -boundary);
	return fabsf(t - rintf(t)) > fabsf(q) * 0x1p-20f ? q : a / d;
}

static float f16_value(unsigned h)
{
	unsigned s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
	float v = e == 0 ? ldexpf((float)m, -24) : ldexpf((float)(m | 1024), (int)e - 25);
	return s ? -v : v;
}

static long long bad;

static void one(float a, float d)
{
	const float r = fg_rcp_rn(d), q = a / d;
	const float h[2] = {fg_div_rounded(a, d, r, 0.5f), div_rounded_fused(a, d, r, 0.5f)};
	const float z[2] = {fg_div_rounded(a, d, r, 0.0f), div_rounded_fused(a, d, r, 0.0f)};
	for (int k = 0; k < 2; k++) {
		const bool ok = (rintf(h[k]) == rintf(q) || (std::isnan(h[k]) && std::isnan(q))) &&
				(floorf(z[k]) == floorf(q) || (std::isnan(z[k]) && std::isnan(q))) &&
				(ceilf(z[k]) == ceilf(q) || (std::isnan(z[k]) && std::isnan(q)));
		if (!ok && bad++ < 10)
			printf("FAIL a=%a d=%a: a/d=%a, fast %a (round) %a (floor/ceil)%s\n", a, d, q, h[k], z[k],
			       k ? " fused" : "");
	}
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t next(void)
{
	rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
	return (uint32_t)rng;
}

static float bits(uint32_t u)
{
	float f;
	memcpy(&f, &u, 4);
	return f;
}

/* a moved by u units in the last place (a finite, not zero) */
static float ulps(float a, int u)
{
	uint32_t b;
	memcpy(&b, &a, 4);
	return a == 0.0f ? a : bits(b + (uint32_t)u);
}

int main(void)
{
	/* every finite f16 a over divisors d: every one of the binade [1, 2)
	 * and of [-2, -1), and in every other binade (subnormals too) its
	 * ends, its middle and 12 random mantissas */
	static unsigned ds[65536];
	int nd = 0;
	for (unsigned m = 0; m < 1024; m++)
		ds[nd++] = 15u << 10 | m, ds[nd++] = 0x8000u | 15u << 10 | m;
	for (unsigned e = 0; e < 31; e++) {
		if (e == 15)
			continue;
		unsigned ms[16] = {e == 0 ? 1u : 0u, 1, 512, 1023};
		for (int i = 4; i < 16; i++)
			ms[i] = 1 + next() % 1023;
		for (int i = 0; i < 16; i++)
			ds[nd++] = e << 10 | ms[i], ds[nd++] = 0x8000u | e << 10 | ms[i];
	}
	for (unsigned i = 0; i < 65536; i++)
		if (((i >> 10) & 31) != 31)
			for (int j = 0; j < nd; j++)
				one(f16_value(i), f16_value(ds[j]));
	/* f32: a near d times an integer or a half (the quotients at a
	 * boundary and one or two ulp off it), then random bit patterns */
	for (long n = 0; n < (1l << 21); n++) {
		const float d = bits((next() % 200 + 27) << 23 | (next() & 0x807fffffu));
		const float m = (float)((int)(next() % (1u << 14)) - (1 << 13)) * 0.5f;
		const float a = d * m;
		for (int u = -2; u <= 2; u++)
			one(ulps(a, u), d);
	}
	for (long n = 0; n < (1l << 22); n++)
		one(bits(next()), bits(next()));
	const float sp[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 0x1p-149f, 0x1p126f, 0x1.fffffep127f, 1.0f, 0.5f};
	for (float a : sp)
		for (float d : sp)
			one(a, d);
	printf("%s: %lld wrong\n", bad ? "FAIL div_rounded" : "PASS div_rounded", bad);
	return bad != 0;
}
