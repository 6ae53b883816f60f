/*
 * staged_lanes.cu - runtime/fg_attn_sm90.cuh's fga::StagedAt, run on the
 * host (no GPU): the addresses from which the attention kernel's
 * consumers read a staged score operand (a bias or a mask, fga::Staged)
 * must give each thread the pairs of the accumulator layout.  For every
 * plan the kernel can have (two or three consumers, key tiles of 16 to
 * 256, 1- and 2-byte elements, a tile of rows whole 128-byte blocks), at
 * three stages' offsets, every consumer, warp, lane and key block:
 *   - the element (r, k) of the tile is where the tensor-memory
 *     accelerator's 128-byte swizzle puts it, written here from its
 *     definition: key block b = k SE / 128 of row r at b BM 128 + r 128
 *     (linear), then byte bits 4-6 XORed with bits 7-9;
 *   - 2-byte elements: ldmatrix.x4 as the PTX ISA defines it (lane 8m + i
 *     gives the 16-byte row i of matrix m; register m of lane t is the
 *     4 bytes at 4 (t % 4) of row t / 4 of matrix m) must hand register
 *     2i + h of lane l the pair (row 16w + l / 4 + 8h, keys 8(j + i) +
 *     2(l % 4) and + 1), for j even;
 *   - 1-byte elements: the 2-byte load of row h, key block j must read
 *     that pair;
 *   - every lane's ldmatrix row is 16-byte aligned.
 * Build: nvcc -O2 -I runtime tests/runtime/staged_lanes.cu (run-runtime.sh).
 */
#include <cstdint>
#include <cstdio>

#include "fg_attn_sm90.cuh"

static long long checked, bad;

/* The byte of element (r, k) in a staged tile of BM rows (the swizzle's definition). */
static uint32_t swizzled(int BM, int SE, int r, int k)
{
	const uint32_t o = (uint32_t)(k * SE / 128 * BM * 128 + r * 128 + k * SE % 128);
	return o ^ ((o >> 7 & 7) << 4);
}

static void report(const char *what, int BM, int BN, int SE, int c, int w, int l, int j, long got, long want)
{
	if (bad++ < 10)
		fprintf(stderr, "%s: BM %d BN %d SE %d consumer %d warp %d lane %d key block %d: byte %ld, want %ld\n",
			what, BM, BN, SE, c, w, l, j, got, want);
}

template <int BM, int SE> static void plan(int BN)
{
	using At = fga::StagedAt<BM, SE>;
	const uint32_t tile = BM * BN * SE;     /* a stage's tile: a multiple of 1024 */
	for (int s = 0; s < 3; s++) {
		const uint32_t base = 1024 * 7 + s * tile;      /* a tile's start: 1024-aligned */
		for (int c = 0; c < BM / 64; c++)
			for (int w = 0; w < 4; w++)
				for (int j = 0; j < BN / 8; j++)
					for (int l = 0; l < 32; l++)
						for (int h = 0; h < 2; h++) {
							const int r = c * 64 + w * 16 + l / 4 + 8 * h, k = 8 * j + 2 * (l % 4);
							const long want = base + swizzled(BM, SE, r, k);
							long got;
							if (SE == 2) {
								/* the register 2 (j % 2) + h of the ldmatrix at key block j - j % 2 */
								const int m = 2 * (j % 2) + h, lane = 8 * m + l / 4;
								const uint32_t row = At::at(base + At::lane(c, w, lane, 0), j - j % 2);
								if (row % 16 != 0)
									report("ldmatrix row unaligned", BM, BN, SE, c, w, lane, j, row, row / 16 * 16);
								got = row + 4 * (l % 4);
							} else {
								got = At::at(base + At::lane(c, w, l, h), j);
							}
							/* the pair's second element follows in the same 16-byte chunk */
							const long want1 = base + swizzled(BM, SE, r, k + 1);
							if (got != want || want1 != want + SE)
								report(SE == 2 ? "ldmatrix" : "2-byte load", BM, BN, SE, c, w, l, j, got, want);
							checked++;
						}
	}
}

int main(void)
{
	for (int BN = 16; BN <= 256; BN += 16) {
		if (BN * 2 % 128 == 0) {
			plan<128, 2>(BN);
			plan<192, 2>(BN);
		}
		if (BN % 128 == 0) {
			plan<128, 1>(BN);
			plan<192, 1>(BN);
		}
	}
	printf("%lld pairs, %lld wrong\n", checked, bad);
	return bad != 0;
}
