/*
 * bf16_lanes.cu - runtime/fg_device.cuh's fg_lane, run on the host (no
 * GPU): the generated kernels read each lane of a loaded vector through
 * fg_lane<I>, which for bf16 vectors of an even width takes the lane from
 * its pair's 32-bit word (a shift, or a mask).  Every one of the 65,536
 * bf16 bit patterns (NaNs, infinities, subnormals, both zeros among them)
 * at every lane of vectors of 2, 4 and 8, beside other patterns in the
 * other lanes, must read bit for bit as __bfloat162float reads it:
 * 917,504 reads.  (Odd widths take fg_read itself: nothing to compare.)
 * Build: nvcc -O2 -I runtime tests/runtime/bf16_lanes.cu (run-runtime.sh).
 */
#include <cstdio>
#include <cstring>

#include "fg_device.cuh"

static long long checked, bad;

static unsigned int bits(float f)
{
	unsigned int u;
	memcpy(&u, &f, sizeof u);
	return u;
}

static __nv_bfloat16 bf(unsigned int pattern)
{
	__nv_bfloat16 b;
	const unsigned short s = (unsigned short)pattern;
	memcpy(&b, &s, sizeof s);
	return b;
}

template <int N, int I> static void lane(unsigned int p)
{
	FgVec<__nv_bfloat16, N> w;
	for (int j = 0; j < N; j++)     /* the neighbours: other patterns */
		w.v[j] = bf(p * 40503u + 7919u * (unsigned)(j + 1));
	w.v[I] = bf(p);
	const unsigned int got = bits(fg_lane<I>(w)), want = bits(__bfloat162float(w.v[I]));
	checked++;
	if (got != want && bad++ < 10)
		fprintf(stderr, "bf16 0x%04x at lane %d of %d: 0x%08x, want 0x%08x\n", p, I, N, got, want);
}

template <int N, int... I> static void lanes(unsigned int p, std::integer_sequence<int, I...>)
{
	(lane<N, I>(p), ...);
}

int main(void)
{
	for (unsigned int p = 0; p < 65536; p++) {
		lanes<2>(p, std::make_integer_sequence<int, 2>{});
		lanes<4>(p, std::make_integer_sequence<int, 4>{});
		lanes<8>(p, std::make_integer_sequence<int, 8>{});
	}
	printf("bf16_lanes: %lld reads, %lld wrong\n", checked, bad);
	return bad != 0 || checked != 65536LL * 14;
}
