/*
 * test_philox.c - Philox-4x32-10 and fgc's streams (runtime/fgrt_philox.h):
 * Random123's published known-answer vectors (kat_vectors, the three
 * "philox4x32 10" lines), the dropout threshold at its edges, and the kept
 * fraction of a million draws.  The GPU kernels compile the same header,
 * so these pin down the bits they draw too.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>

#include "fgrt_philox.h"

static void expect_kat(const uint32_t ctr[4], const uint32_t key[2],
		       const uint32_t want[4])
{
	uint32_t out[4];
	fgrt_philox4x32_10(ctr, key, out);
	for (int i = 0; i < 4; i++)
		ck_assert_msg(out[i] == want[i], "word %d: 0x%08x, want 0x%08x",
			      i, out[i], want[i]);
}

START_TEST(kat_zeros)
{
	const uint32_t ctr[4] = {0, 0, 0, 0}, key[2] = {0, 0};
	const uint32_t want[4] = {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8};
	expect_kat(ctr, key, want);
}
END_TEST

START_TEST(kat_ones)
{
	const uint32_t ctr[4] = {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff};
	const uint32_t key[2] = {0xffffffff, 0xffffffff};
	const uint32_t want[4] = {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd};
	expect_kat(ctr, key, want);
}
END_TEST

START_TEST(kat_pi)
{
	const uint32_t ctr[4] = {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344};
	const uint32_t key[2] = {0xa4093822, 0x299f31d0};
	const uint32_t want[4] = {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1};
	expect_kat(ctr, key, want);
}
END_TEST

/* fgrt_philox_word lays out seed and index low word first. */
START_TEST(word_layout)
{
	const uint32_t ctr[4] = {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344};
	const uint32_t key[2] = {0xa4093822, 0x299f31d0};
	uint32_t out[4];
	fgrt_philox4x32_10(ctr, key, out);
	uint64_t seed = (uint64_t)0x299f31d0 << 32 | 0xa4093822;
	uint64_t idx = (uint64_t)0x85a308d3 << 32 | 0x243f6a88;
	ck_assert_uint_eq(fgrt_philox_word(seed, idx, 0x13198a2e, 0x03707344),
			  0xd16cfe09);
	ck_assert_uint_eq(out[0], 0xd16cfe09);
}
END_TEST

START_TEST(threshold_edges)
{
	ck_assert_uint_eq(fgrt_dropout_threshold(0.0), 0);
	ck_assert_uint_eq(fgrt_dropout_threshold(0.5), UINT64_C(1) << 31);
	ck_assert_uint_eq(fgrt_dropout_threshold(0.25), UINT64_C(1) << 30);
	/* ceil: the smallest p above zero drops something eventually. */
	ck_assert_uint_eq(fgrt_dropout_threshold(0x1p-40), 1);
	ck_assert_uint_eq(fgrt_dropout_threshold(0x1p-32), 1);
	ck_assert_uint_eq(fgrt_dropout_threshold(3 * 0x1p-33), 2);
	/* The largest p below 1 still keeps the top word value. */
	ck_assert_uint_eq(fgrt_dropout_threshold(nextafter(1.0, 0)),
			  UINT64_C(0xffffffff) + 1);
	ck_assert_uint_eq(fgrt_dropout_threshold(1.0 - 0x1p-32),
			  UINT64_C(0xffffffff));
	/* p = 0 keeps everything, even a word of 0. */
	for (uint64_t i = 0; i < 1000; i++)
		ck_assert(fgrt_dropout_keep(42, i, fgrt_dropout_threshold(0)));
}
END_TEST

static double kept_fraction(uint64_t seed, double p, uint64_t n)
{
	uint64_t t = fgrt_dropout_threshold(p), kept = 0;
	for (uint64_t i = 0; i < n; i++)
		kept += (uint64_t)fgrt_dropout_keep(seed, i, t);
	return (double)kept / (double)n;
}

START_TEST(kept_fraction_matches)
{
	static const double ps[] = {0.1, 0.5, 0.9};
	for (int k = 0; k < 3; k++) {
		double f = kept_fraction(1234 + (uint64_t)k, ps[k], 1000000);
		ck_assert_msg(fabs(f - (1 - ps[k])) < 0.005,
			      "p=%g kept %g", ps[k], f);
	}
}
END_TEST

START_TEST(input_uniform_range)
{
	double sum = 0, lo = 1, hi = 0;
	for (uint64_t i = 0; i < 100000; i++) {
		double u = fgrt_input_uniform(7, 3, i);
		ck_assert(u >= 0 && u < 1);
		ck_assert(u * 16777216.0 == floor(u * 16777216.0));
		sum += u;
		lo = fmin(lo, u);
		hi = fmax(hi, u);
	}
	ck_assert_msg(fabs(sum / 100000 - 0.5) < 0.01, "mean %g", sum / 100000);
	ck_assert(lo < 0.001 && hi > 0.999);
	/* Different inputs draw different streams. */
	ck_assert(fgrt_input_uniform(7, 3, 0) != fgrt_input_uniform(7, 4, 0) ||
		  fgrt_input_uniform(7, 3, 1) != fgrt_input_uniform(7, 4, 1));
}
END_TEST

static Suite *philox_suite(void)
{
	Suite *s = suite_create("philox");
	TCase *tc = tcase_create("kat");
	tcase_add_test(tc, kat_zeros);
	tcase_add_test(tc, kat_ones);
	tcase_add_test(tc, kat_pi);
	tcase_add_test(tc, word_layout);
	suite_add_tcase(s, tc);
	tc = tcase_create("streams");
	tcase_add_test(tc, threshold_edges);
	tcase_add_test(tc, kept_fraction_matches);
	tcase_add_test(tc, input_uniform_range);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(philox_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
