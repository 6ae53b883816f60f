/*
 * test_half.c - f16 and bf16 conversions (runtime/half.c): known bit
 * patterns at every boundary that rounding can get wrong (ties, the
 * overflow threshold, subnormals, the double-rounding trap), then every
 * one of the 65536 patterns of each format through f64 and f32 and back.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fgrt.h"

static uint32_t f32_bits(float x)
{
	uint32_t u;
	memcpy(&u, &x, sizeof(u));
	return u;
}

static uint64_t f64_bits(double x)
{
	uint64_t u;
	memcpy(&u, &x, sizeof(u));
	return u;
}

/* Both conversions to f16, from the double and from its float when the
 * float is the same value. */
static void expect_f16(double x, uint16_t want)
{
	uint16_t got = fgrt_f64_to_f16(x);
	ck_assert_msg(got == want, "f64 %a -> f16 0x%04x, want 0x%04x", x,
		      (unsigned)got, (unsigned)want);
	if ((double)(float)x == x || isnan(x)) {
		got = fgrt_f32_to_f16((float)x);
		ck_assert_msg(got == want, "f32 %a -> f16 0x%04x, want 0x%04x",
			      x, (unsigned)got, (unsigned)want);
	}
}

static void expect_bf16(double x, uint16_t want)
{
	uint16_t got = fgrt_f64_to_bf16(x);
	ck_assert_msg(got == want, "f64 %a -> bf16 0x%04x, want 0x%04x", x,
		      (unsigned)got, (unsigned)want);
	if ((double)(float)x == x || isnan(x)) {
		got = fgrt_f32_to_bf16((float)x);
		ck_assert_msg(got == want, "f32 %a -> bf16 0x%04x, want 0x%04x",
			      x, (unsigned)got, (unsigned)want);
	}
}

static int f16_is_nan(uint16_t h)
{
	return (h & 0x7C00) == 0x7C00 && (h & 0x03FF) != 0;
}

static int bf16_is_nan(uint16_t h)
{
	return (h & 0x7F80) == 0x7F80 && (h & 0x007F) != 0;
}

START_TEST(f16_normals)
{
	expect_f16(1.0, 0x3C00);
	expect_f16(-2.0, 0xC000);
	expect_f16(0.5, 0x3800);
	expect_f16(65504.0, 0x7BFF);
	expect_f16(-65504.0, 0xFBFF);
	expect_f16(0x1p-14, 0x0400);            /* smallest normal */
	expect_f16(0.1, 0x2E66);
	ck_assert(fgrt_f16_to_f64(0x3C00) == 1.0);
	ck_assert(fgrt_f16_to_f64(0x7BFF) == 65504.0);
	ck_assert(fgrt_f16_to_f64(0x0400) == 0x1p-14);
	ck_assert(fgrt_f16_to_f32(0xC000) == -2.0f);
}
END_TEST

START_TEST(f16_ties_to_even)
{
	expect_f16(1.0 + 0x1p-11, 0x3C00);      /* tie, 1.0 is even */
	expect_f16(1.0 + 3 * 0x1p-11, 0x3C02);  /* tie, 1+2^-9 is even */
	expect_f16(1.0 + 0x1p-11 + 0x1p-40, 0x3C01);    /* just above */
	expect_f16(1.0 + 0x1p-11 - 0x1p-40, 0x3C00);    /* just below */
	expect_f16(-(1.0 + 0x1p-11), 0xBC00);
	/* Rounding up across a binade carries into the exponent. */
	expect_f16(2.0 - 0x1p-12, 0x4000);
}
END_TEST

START_TEST(f16_overflow)
{
	expect_f16(65519.99, 0x7BFF);
	expect_f16(65520.0, 0x7C00);            /* tie above max: to inf */
	expect_f16(-65520.0, 0xFC00);
	expect_f16(1e10, 0x7C00);
	expect_f16(1e300, 0x7C00);
	expect_f16(INFINITY, 0x7C00);
	expect_f16(-INFINITY, 0xFC00);
	ck_assert(isinf(fgrt_f16_to_f64(0x7C00)) && fgrt_f16_to_f64(0x7C00) > 0);
	ck_assert(isinf(fgrt_f16_to_f64(0xFC00)) && fgrt_f16_to_f64(0xFC00) < 0);
}
END_TEST

START_TEST(f16_subnormals)
{
	expect_f16(0x1p-24, 0x0001);            /* smallest subnormal */
	expect_f16(0x1p-25, 0x0000);            /* tie, 0 is even */
	expect_f16(0x1p-25 + 0x1p-60, 0x0001);  /* just above the tie */
	expect_f16(3 * 0x1p-25, 0x0002);        /* tie, 2 is even */
	expect_f16(-0x1p-24, 0x8001);
	expect_f16(1023 * 0x1p-24, 0x03FF);     /* largest subnormal */
	expect_f16(1023.5 * 0x1p-24, 0x0400);   /* tie up into the normals */
	expect_f16(1e-300, 0x0000);
	expect_f16(-1e-300, 0x8000);
	expect_f16(4.9e-324, 0x0000);           /* double subnormal */
	ck_assert(fgrt_f16_to_f64(0x0001) == 0x1p-24);
	ck_assert(fgrt_f16_to_f64(0x03FF) == 1023 * 0x1p-24);
	ck_assert(fgrt_f16_to_f64(0x8001) == -0x1p-24);
}
END_TEST

START_TEST(f16_zero_and_nan)
{
	expect_f16(0.0, 0x0000);
	expect_f16(-0.0, 0x8000);
	double z = fgrt_f16_to_f64(0x8000);
	ck_assert(z == 0 && signbit(z));
	ck_assert(signbit(fgrt_f16_to_f32(0x8000)));
	uint16_t h = fgrt_f64_to_f16(NAN);
	ck_assert_msg(f16_is_nan(h) && (h & 0x0200), "NaN -> 0x%04x", h);
	h = fgrt_f32_to_f16(-NAN);
	ck_assert_msg(f16_is_nan(h) && (h & 0x0200), "-NaN -> 0x%04x", h);
	/* A NaN whose payload lies only in low double bits stays NaN. */
	double low;
	uint64_t u = UINT64_C(0x7FF0000000000001);
	memcpy(&low, &u, sizeof(low));
	ck_assert(f16_is_nan(fgrt_f64_to_f16(low)));
	ck_assert(bf16_is_nan(fgrt_f64_to_bf16(low)));
	ck_assert(isnan(fgrt_f16_to_f64(0x7C01)));      /* signalling in */
	ck_assert(isnan(fgrt_f16_to_f64(0xFE00)));
}
END_TEST

/* The trap that rounding through float falls into: x is just above an
 * f16 tie, but its nearest float is the tie itself, which then rounds to
 * even, down.  Rounding once from the double must round up. */
START_TEST(f16_no_double_rounding)
{
	double x = 1.0 + 0x1p-11 + 0x1p-40;
	ck_assert((double)(float)x == 1.0 + 0x1p-11);   /* the trap is set */
	ck_assert_uint_eq(fgrt_f32_to_f16((float)x), 0x3C00);
	ck_assert_uint_eq(fgrt_f64_to_f16(x), 0x3C01);
	/* The same in the subnormals and at the overflow threshold. */
	x = 0x1p-25 + 0x1p-60;
	ck_assert((double)(float)x == 0x1p-25);
	ck_assert_uint_eq(fgrt_f64_to_f16(x), 0x0001);
	x = 65520.0 - 0x1p-20;
	ck_assert((double)(float)x == 65520.0);
	ck_assert_uint_eq(fgrt_f64_to_f16(x), 0x7BFF);
	ck_assert_uint_eq(fgrt_f32_to_f16((float)x), 0x7C00);
	/* bf16: just above a tie between 1 and 1+2^-7. */
	x = 1.0 + 0x1p-8 + 0x1p-40;
	ck_assert((double)(float)x == 1.0 + 0x1p-8);
	ck_assert_uint_eq(fgrt_f64_to_bf16(x), 0x3F81);
	ck_assert_uint_eq(fgrt_f32_to_bf16((float)x), 0x3F80);
}
END_TEST

START_TEST(bf16_known)
{
	expect_bf16(1.0, 0x3F80);
	expect_bf16(-1.0, 0xBF80);
	expect_bf16(1.0 + 0x1p-8, 0x3F80);              /* tie to even */
	expect_bf16(1.0 + 3 * 0x1p-8, 0x3F82);          /* tie to even */
	expect_bf16(0x1.fep127, 0x7F7F);                /* max finite */
	expect_bf16(0x1.fe8p127 - 0x1p100, 0x7F7F);
	expect_bf16(0x1.ffp127, 0x7F80);                /* tie above max */
	expect_bf16(INFINITY, 0x7F80);
	expect_bf16(-INFINITY, 0xFF80);
	expect_bf16(1e300, 0x7F80);
	expect_bf16(0x1p-126, 0x0080);                  /* smallest normal */
	expect_bf16(0x1p-133, 0x0001);                  /* smallest subnormal */
	expect_bf16(0x1p-134, 0x0000);                  /* tie to 0 */
	expect_bf16(3 * 0x1p-134, 0x0002);              /* tie to 2 */
	expect_bf16(-0.0, 0x8000);
	ck_assert(fgrt_bf16_to_f64(0x7F7F) == 0x1.fep127);
	ck_assert(fgrt_bf16_to_f64(0x0001) == 0x1p-133);
	ck_assert(fgrt_bf16_to_f32(0x3F80) == 1.0f);
	ck_assert(isinf(fgrt_bf16_to_f32(0xFF80)));
	uint16_t h = fgrt_f64_to_bf16(NAN);
	ck_assert_msg(bf16_is_nan(h) && (h & 0x0040), "NaN -> 0x%04x", h);
	ck_assert(isnan(fgrt_bf16_to_f32(0x7F81)));
	/* bf16 is the top half of a float: exact floats convert exactly. */
	ck_assert_uint_eq(fgrt_f32_to_bf16(3.140625f), 0x4049);
}
END_TEST

/* Every pattern widens exactly and narrows back to itself; NaNs may lose
 * their payload but not their NaN-ness.  The float path must agree with
 * the double path bit for bit. */
START_TEST(f16_exhaustive)
{
	for (uint32_t i = 0; i < 65536; i++) {
		uint16_t h = (uint16_t)i;
		double d = fgrt_f16_to_f64(h);
		float f = fgrt_f16_to_f32(h);
		if (f16_is_nan(h)) {
			ck_assert_msg(isnan(d) && isnan(f), "0x%04x", h);
			ck_assert(f16_is_nan(fgrt_f64_to_f16(d)));
			ck_assert(f16_is_nan(fgrt_f32_to_f16(f)));
			continue;
		}
		ck_assert_msg((double)f == d || (isnan(d) && isnan(f)), "0x%04x", h);
		ck_assert_msg(fgrt_f64_to_f16(d) == h, "0x%04x via f64", h);
		ck_assert_msg(fgrt_f32_to_f16(f) == h, "0x%04x via f32", h);
		ck_assert(!!signbit(d) == !!(h & 0x8000));
	}
}
END_TEST

START_TEST(bf16_exhaustive)
{
	for (uint32_t i = 0; i < 65536; i++) {
		uint16_t h = (uint16_t)i;
		double d = fgrt_bf16_to_f64(h);
		float f = fgrt_bf16_to_f32(h);
		if (bf16_is_nan(h)) {
			ck_assert_msg(isnan(d) && isnan(f), "0x%04x", h);
			ck_assert(bf16_is_nan(fgrt_f64_to_bf16(d)));
			ck_assert(bf16_is_nan(fgrt_f32_to_bf16(f)));
			continue;
		}
		/* A bf16 is exactly the float with these top 16 bits. */
		ck_assert_msg(f32_bits(f) == (uint32_t)h << 16, "0x%04x", h);
		ck_assert_msg((double)f == d, "0x%04x", h);
		ck_assert_msg(fgrt_f64_to_bf16(d) == h, "0x%04x via f64", h);
		ck_assert_msg(fgrt_f32_to_bf16(f) == h, "0x%04x via f32", h);
	}
}
END_TEST

/* Between each pair of adjacent finite f16 values, the midpoint ties to
 * the even one and its double neighbours round to their own side. */
START_TEST(f16_midpoints)
{
	for (uint32_t i = 0; i < 0x7BFF; i++) {
		double lo = fgrt_f16_to_f64((uint16_t)i);
		double hi = fgrt_f16_to_f64((uint16_t)(i + 1));
		double mid = (lo + hi) / 2;     /* exact in double */
		uint16_t even = (uint16_t)((i & 1) ? i + 1 : i);
		ck_assert_msg(fgrt_f64_to_f16(mid) == even, "mid 0x%04x", i);
		ck_assert_msg(fgrt_f64_to_f16(nextafter(mid, 0)) == i,
			      "below mid 0x%04x", i);
		ck_assert_msg(fgrt_f64_to_f16(nextafter(mid, 1e9)) == i + 1,
			      "above mid 0x%04x", i);
		ck_assert_msg(fgrt_f64_to_f16(-mid) == (even | 0x8000),
			      "-mid 0x%04x", i);
	}
}
END_TEST

START_TEST(bf16_midpoints)
{
	for (uint32_t i = 0; i < 0x7F7F; i++) {
		double lo = fgrt_bf16_to_f64((uint16_t)i);
		double hi = fgrt_bf16_to_f64((uint16_t)(i + 1));
		double mid = (lo + hi) / 2;
		uint16_t even = (uint16_t)((i & 1) ? i + 1 : i);
		ck_assert_msg(fgrt_f64_to_bf16(mid) == even, "mid 0x%04x", i);
		ck_assert_msg(fgrt_f64_to_bf16(nextafter(mid, 0)) == i,
			      "below mid 0x%04x", i);
		ck_assert_msg(fgrt_f64_to_bf16(nextafter(mid, 1e300)) == i + 1,
			      "above mid 0x%04x", i);
	}
}
END_TEST

/* The quiet-NaN encodings the widening produces are real NaNs of f32 and
 * f64 (the exponent all ones, the quiet bit set). */
START_TEST(nan_is_quiet_when_widened)
{
	ck_assert((f64_bits(fgrt_f16_to_f64(0x7C01)) & UINT64_C(0x0008000000000000)) != 0);
	ck_assert((f32_bits(fgrt_bf16_to_f32(0x7F81)) & 0x00400000u) != 0);
}
END_TEST

static Suite *half_suite(void)
{
	Suite *s = suite_create("half");
	TCase *tc = tcase_create("known");
	tcase_add_test(tc, f16_normals);
	tcase_add_test(tc, f16_ties_to_even);
	tcase_add_test(tc, f16_overflow);
	tcase_add_test(tc, f16_subnormals);
	tcase_add_test(tc, f16_zero_and_nan);
	tcase_add_test(tc, f16_no_double_rounding);
	tcase_add_test(tc, bf16_known);
	tcase_add_test(tc, nan_is_quiet_when_widened);
	suite_add_tcase(s, tc);
	tc = tcase_create("exhaustive");
	tcase_add_test(tc, f16_exhaustive);
	tcase_add_test(tc, bf16_exhaustive);
	tcase_add_test(tc, f16_midpoints);
	tcase_add_test(tc, bf16_midpoints);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(half_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
