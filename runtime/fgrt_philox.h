/*
 * fgrt_philox.h - Philox-4x32-10 (Salmon et al., "Parallel random numbers:
 * as easy as 1, 2, 3", SC'11) and the two streams fgc draws from it.  Header
 * only, so that the reference interpreter, the host runtime and the CUDA
 * kernels compile the very same code and draw the very same bits.
 *
 * Streams (key = the 64-bit seed split into two words, low word first):
 *   dropout   counter = {idx lo, idx hi, 0, 0}; u = out[0] * 2^-32;
 *             the element is kept when u >= p, that is when out[0] >=
 *             ceil(p * 2^32), and then scaled by 1/(1-p).
 *   inputs    counter = {idx lo, idx hi, k, 0x46474331 ("FGC1")} for the
 *             k-th declared input or param; u = (out[0] >> 8) * 2^-24;
 *             floats get 2u - 1 (uniform in [-1, 1)), times 1/sqrt(K)
 *             for a param of rank >= 2 whose second-to-last dim is K (a
 *             weight's fan-in), then rounded to the dtype; i32 and i8
 *             get floor(17u) - 8 (uniform in [-8, 8]), u8 floor(17u)
 *             ([0, 16]), bool gets u < 0.5.
 */
#ifndef FGRT_PHILOX_H
#define FGRT_PHILOX_H

#include <stdint.h>

#ifdef __CUDACC__
#define FGRT_HD __host__ __device__ __forceinline__
#else
#define FGRT_HD static inline
#endif

#define FGRT_PHILOX_M0 0xD2511F53u
#define FGRT_PHILOX_M1 0xCD9E8D57u
#define FGRT_PHILOX_W0 0x9E3779B9u
#define FGRT_PHILOX_W1 0xBB67AE85u
#define FGRT_INPUT_STREAM 0x46474331u

FGRT_HD void fgrt_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2],
				uint32_t out[4])
{
	uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
	uint32_t k0 = key[0], k1 = key[1];
	for (int r = 0; r < 10; r++) {
		uint64_t p0 = (uint64_t)FGRT_PHILOX_M0 * c0;
		uint64_t p1 = (uint64_t)FGRT_PHILOX_M1 * c2;
		uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
		uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
		c0 = hi1 ^ c1 ^ k0;
		c1 = lo1;
		c2 = hi0 ^ c3 ^ k1;
		c3 = lo0;
		k0 += FGRT_PHILOX_W0;
		k1 += FGRT_PHILOX_W1;
	}
	out[0] = c0;
	out[1] = c1;
	out[2] = c2;
	out[3] = c3;
}

/* The first output word for (seed, counter words). */
FGRT_HD uint32_t fgrt_philox_word(uint64_t seed, uint64_t idx, uint32_t c2,
				  uint32_t c3)
{
	uint32_t ctr[4] = {(uint32_t)idx, (uint32_t)(idx >> 32), c2, c3};
	uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
	uint32_t out[4];
	fgrt_philox4x32_10(ctr, key, out);
	return out[0];
}

/* ceil(p * 2^32) for p in [0, 1): exact, since p * 2^32 only moves the
 * exponent.  Integer compares keep host and device in exact agreement. */
FGRT_HD uint64_t fgrt_dropout_threshold(double p)
{
	double t = p * 4294967296.0;
	uint64_t u = (uint64_t)t;
	return (double)u < t ? u + 1 : u;
}

/* Whether dropout with this threshold keeps element idx. */
FGRT_HD int fgrt_dropout_keep(uint64_t seed, uint64_t idx, uint64_t threshold)
{
	return (uint64_t)fgrt_philox_word(seed, idx, 0, 0) >= threshold;
}

/* u in [0, 1) with 24 random bits, for element idx of input number k. */
FGRT_HD double fgrt_input_uniform(uint64_t seed, uint32_t k, uint64_t idx)
{
	uint32_t w = fgrt_philox_word(seed, idx, k, FGRT_INPUT_STREAM);
	return (double)(w >> 8) * (1.0 / 16777216.0);
}

#endif
