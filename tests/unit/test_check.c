/*
 * test_check.c - the golden-comparison gates (runtime/check.c): the
 * elementwise gate exactly at its boundary, NaN and infinity positions in
 * both modes, the RMSE gate passing and failing, the report fields, the
 * tf32 gate, the outlier bound (one wrong element that the RMSE alone
 * lets through, and no false alarm on a million legitimate errors spread
 * over six orders of magnitude), f32's per-value rtol, and where the
 * planted bugs land.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "fgrt.h"

static FgrtCheck run(const double *a, const double *e, const double *r,
		     int64_t n, double rtol, double atol, double m)
{
	FgrtTol tol = {rtol, atol, m, 0, 0};
	FgrtCheck res;
	fgrt_check(a, e, r, n, &tol, &res);
	return res;
}

/* Powers of two keep the arithmetic exact, so the boundary is exact. */
START_TEST(elementwise_boundary)
{
	double e[3] = {1.0, -4.0, 0.0};
	/* allowed = 0.25 + 0.5 * |e|: 0.75, 2.25, 0.25 */
	double on[3] = {1.75, -1.75, -0.25};
	FgrtCheck c = run(on, e, NULL, 3, 0.5, 0.25, 0);
	ck_assert_int_eq(c.ok, 1);
	ck_assert_int_eq(c.nbad, 0);
	ck_assert(c.max_abs_err == 2.25);
	ck_assert(c.max_rel_err == 0.75);   /* e = 0 does not count */
	ck_assert(c.rmse_limit == 0);
	double over[3] = {1.75, -1.75, nextafter(-0.25, -1)};
	c = run(over, e, NULL, 3, 0.5, 0.25, 0);
	ck_assert_int_eq(c.ok, 0);
	ck_assert_int_eq(c.nbad, 1);
	ck_assert_int_eq(c.worst, 2);
	ck_assert(c.worst_actual == over[2] && c.worst_expected == 0.0);
}
END_TEST

START_TEST(elementwise_exact_for_ints)
{
	double e[4] = {0, 1, -8, 7};
	double a[4] = {0, 1, -8, 7};
	FgrtCheck c = run(a, e, NULL, 4, 0, 0, 0);
	ck_assert_int_eq(c.ok, 1);
	ck_assert(c.max_abs_err == 0 && c.rmse == 0);
	a[3] = 6;
	c = run(a, e, NULL, 4, 0, 0, 0);
	ck_assert_int_eq(c.ok, 0);
	ck_assert_int_eq(c.worst, 3);
	ck_assert(c.max_abs_err == 1);
}
END_TEST

/* The worst element is the one furthest outside its own allowance, not
 * the one with the largest absolute error. */
START_TEST(worst_is_relative_to_allowance)
{
	double e[2] = {1000.0, 1.0};
	double a[2] = {1001.0, 1.5};        /* allowed 100.0 and 0.1 */
	FgrtCheck c = run(a, e, NULL, 2, 0.1, 0, 0);
	ck_assert_int_eq(c.ok, 0);
	ck_assert_int_eq(c.nbad, 1);
	ck_assert_int_eq(c.worst, 1);
	ck_assert(c.max_abs_err == 1.0);
	/* A passing tensor still names its closest call, which need not
	 * have the largest absolute error. */
	a[1] = 1.0625;
	c = run(a, e, NULL, 2, 0.1, 0, 0);
	ck_assert_int_eq(c.ok, 1);
	ck_assert_int_eq(c.nbad, 0);
	ck_assert_int_eq(c.worst, 1);
	ck_assert(c.worst_actual == 1.0625 && c.max_abs_err == 1.0);
}
END_TEST

START_TEST(nan_positions)
{
	double e[3] = {NAN, 1.0, 2.0};
	double a[3] = {NAN, 1.0, 2.0};
	FgrtCheck c = run(a, e, NULL, 3, 1e-3, 1e-5, 0);
	ck_assert_int_eq(c.ok, 1);
	ck_assert_int_eq(c.nbad, 0);
	ck_assert(isfinite(c.rmse) && c.rmse == 0);
	double moved[3] = {0.0, NAN, 2.0};          /* NaN in the wrong place */
	c = run(moved, e, NULL, 3, 1e9, 1e9, 0);
	ck_assert_int_eq(c.ok, 0);
	ck_assert_int_eq(c.nbad, 2);
	ck_assert(c.worst == 0 || c.worst == 1);
	double missing[3] = {5.0, 1.0, 2.0};        /* NaN expected, got 5 */
	c = run(missing, e, NULL, 3, 1e9, 1e9, 0);
	ck_assert_int_eq(c.ok, 0);
	ck_assert_int_eq(c.worst, 0);
	ck_assert(isnan(c.worst_expected) && c.worst_actual == 5.0);
}
END_TEST

START_TEST(inf_positions)
{
	double e[3] = {INFINITY, -INFINITY, 1.0};
	double a[3] = {INFINITY, -INFINITY, 1.0};
	FgrtCheck c = run(a, e, NULL, 3, 0, 0, 0);
	ck_assert_int_eq(c.ok, 1);
	ck_assert(isfinite(c.max_abs_err));
	double flipped[3] = {-INFINITY, -INFINITY, 1.0};
	c = run(flipped, e, NULL, 3, 1e9, 1e9, 0);
	ck_assert_int_eq(c.ok, 0);
	ck_assert_int_eq(c.worst, 0);
	double finite[3] = {1e308, -INFINITY, 1.0}; /* inf expected */
	c = run(finite, e, NULL, 3, 1e9, 1e9, 0);
	ck_assert_int_eq(c.ok, 0);
	double extra[3] = {INFINITY, -INFINITY, INFINITY};
	c = run(extra, e, NULL, 3, 1e9, 1e9, 0);
	ck_assert_int_eq(c.ok, 0);
	ck_assert_int_eq(c.worst, 2);
}
END_TEST

/* ref64 is 0.1 * k; its f16 rounding has some RMSE r0.  Actual within
 * m * r0 + atol passes, beyond fails, and NaN/Inf positions still rule. */
START_TEST(rmse_gate)
{
	enum { N = 64 };
	double ref[N], rnd[N], a[N];
	for (int i = 0; i < N; i++) {
		ref[i] = 0.1 * (i + 1);
		rnd[i] = fgrt_f16_to_f64(fgrt_f64_to_f16(ref[i]));
		a[i] = ref[i] + 2.5 * (rnd[i] - ref[i]);
	}
	FgrtCheck c = run(a, ref, rnd, N, 0, 0, 3);
	ck_assert(c.rmse > 0 && c.rmse_limit > 0);
	ck_assert(fabs(c.rmse / c.rmse_limit - 2.5 / 3) < 1e-9);
	ck_assert_int_eq(c.ok, 1);
	c = run(a, ref, rnd, N, 0, 0, 2);     /* m = 2 < 2.5 */
	ck_assert_int_eq(c.ok, 0);
	ck_assert(c.rmse > c.rmse_limit);
	/* The elementwise statistics are filled in RMSE mode too. */
	ck_assert(c.nbad > 0 && c.worst >= 0 && c.max_abs_err > 0);
	/* atol lifts the limit. */
	c = run(a, ref, rnd, N, 0, 1.0, 2);
	ck_assert_int_eq(c.ok, 1);
	ck_assert(c.rmse_limit > 1.0);
}
END_TEST

START_TEST(rmse_specials)
{
	double ref[4] = {1.0, NAN, 70000.0, 2.0};
	double rnd[4] = {1.0, NAN, INFINITY, 2.0};  /* f16 overflows */
	double a[4] = {1.0, NAN, INFINITY, 2.0};
	FgrtCheck c = run(a, ref, rnd, 4, 0, 0, 3);
	ck_assert_int_eq(c.ok, 1);
	ck_assert(c.rmse == 0 && isfinite(c.rmse_limit));
	double b[4] = {1.0, 0.0, INFINITY, 2.0};    /* NaN missing */
	c = run(b, ref, rnd, 4, 0, 1e9, 3);
	ck_assert_int_eq(c.ok, 0);
	double d[4] = {1.0, NAN, 65504.0, 2.0};     /* inf missing */
	c = run(d, ref, rnd, 4, 0, 1e9, 3);
	ck_assert_int_eq(c.ok, 0);
	/* Without a rounded reference, positions follow the reference. */
	double e[4] = {1.0, NAN, 70000.0, NAN};
	c = run(e, ref, NULL, 4, 0, 1e9, 3);
	ck_assert_int_eq(c.ok, 0);
	e[3] = 2.0;
	c = run(e, ref, NULL, 4, 0, 0, 3);
	ck_assert_int_eq(c.ok, 1);
	ck_assert(c.rmse_limit == 0);
}
END_TEST

START_TEST(empty)
{
	FgrtCheck c = run(NULL, NULL, NULL, 0, 0, 0, 0);
	ck_assert_int_eq(c.ok, 1);
	ck_assert_int_eq(c.worst, -1);
	ck_assert_int_eq(c.nbad, 0);
	c = run(NULL, NULL, NULL, 0, 0, 0, 2);
	ck_assert_int_eq(c.ok, 1);
	ck_assert(c.rmse == 0);
}
END_TEST

/* A reference exact in the dtype makes rmse(round(ref), ref) zero; the
 * unit-roundoff floor keeps the gate at the dtype's rounding noise. */
START_TEST(rmse_floor_for_exact_reference)
{
	double e[64], a[64];
	for (int i = 0; i < 64; i++) {
		e[i] = 2.0 * (i - 32);                  /* exact in f16 */
		a[i] = e[i] * (1 + (i % 2 ? 1 : -1) * 0x1p-12);
	}
	FgrtTol tol = {1e-3, 1e-5, 3, 0, 0};
	FgrtCheck res;
	fgrt_check(a, e, e, 64, &tol, &res);
	ck_assert(!res.ok);                             /* gate = atol */
	tol.unit_roundoff = 0x1p-11;
	fgrt_check(a, e, e, 64, &tol, &res);
	ck_assert(res.ok);
	for (int i = 0; i < 64; i++)
		a[i] = e[i] * (1 + 0x1p-8);             /* far beyond f16 noise */
	fgrt_check(a, e, e, 64, &tol, &res);
	ck_assert(!res.ok);
}
END_TEST

/* A baseline (the reference computed in the dtype) sets the RMSE gate's
 * bar in place of the rounded reference: a result as far off as twice the
 * baseline passes (m 2) and fails without it; a non-finite baseline element
 * counts the rounded reference's; NaN/Inf positions still follow the
 * rounded reference, not the baseline. */
START_TEST(rmse_baseline)
{
	double e[64], r[64], b[64], a[64];
	for (int i = 0; i < 64; i++) {
		e[i] = 1.0 + i / 64.0;
		r[i] = e[i];
		b[i] = e[i] + (i % 2 ? 1 : -1) * 0x1p-10;
		a[i] = e[i] + (i % 2 ? -1 : 1) * 0x1p-9;
	}
	FgrtTol tol = {1.3e-6, 0, 2, 0x1p-24, 0};
	FgrtCheck res;
	fgrt_check_base(a, e, r, b, 64, &tol, &res);
	ck_assert(res.ok);
	ck_assert(res.rmse_limit == 2 * 0x1p-10);
	fgrt_check_base(a, e, r, NULL, 64, &tol, &res);
	ck_assert(!res.ok);
	fgrt_check(a, e, r, 64, &tol, &res);
	ck_assert(!res.ok);
	b[0] = INFINITY;                /* counts r[0]: no error there */
	fgrt_check_base(a, e, r, b, 64, &tol, &res);
	ck_assert(fabs(res.rmse_limit - 2 * sqrt(63.0 / 64) * 0x1p-10) < 1e-18);
	ck_assert(!res.ok);             /* 2^-9 > 2 * 0.992 * 2^-10 */
	b[0] = e[0];
	a[5] = NAN;                     /* where r has a number: fails, whatever b says */
	b[5] = NAN;
	fgrt_check_base(a, e, r, b, 64, &tol, &res);
	ck_assert(!res.ok);
}
END_TEST

/* fgrt_tolerance's tf32 gate (rmse 2): f32 values a tf32 matmul fed take
 * the unit roundoff 2^-10 and m 3; bf16 keeps its own, coarser unit; an f32
 * value off by 2^-12 relative passes it and fails the f32 gate. */
START_TEST(tf32_gate)
{
	FgrtTol f = fgrt_tolerance("f32", 1), t = fgrt_tolerance("f32", 2), b = fgrt_tolerance("bf16", 2);
	ck_assert(f.rmse_m == 2 && f.unit_roundoff == 0x1p-24);
	ck_assert(t.rmse_m == 3 && t.unit_roundoff == 0x1p-10);
	ck_assert(b.rmse_m == 3 && b.unit_roundoff == 0x1p-8);
	double e[64], a[64];
	for (int i = 0; i < 64; i++) {
		e[i] = 0.3 + i / 64.0;
		a[i] = e[i] * (1 + (i % 2 ? 1 : -1) * 0x1p-12);
	}
	FgrtCheck res;
	fgrt_check(a, e, e, 64, &t, &res);
	ck_assert(res.ok);
	fgrt_check(a, e, e, 64, &f, &res);
	ck_assert(!res.ok);
}
END_TEST

/* A fixed stream of uniforms in [0, 1) (a 64-bit LCG's top 53 bits). */
static double uniform(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return (double)(*s >> 11) * 0x1p-53;
}

/* Roughly normal, unit variance: twelve uniforms less six. */
static double normal(uint64_t *s)
{
	double x = -6;
	for (int i = 0; i < 12; i++)
		x += uniform(s);
	return x;
}

/* issue 19's two cases: a bf16 tensor of 8,643 values in [-1, 1) with one
 * element off by 0.25, an f16 one of 65,536 with one off by 0.1.  Each
 * passes the RMSE gate alone (outlier_k 0) and fails the outlier bound,
 * which names the element. */
START_TEST(outlier_one_element)
{
	static const struct {
		const char *dtype;
		int64_t n;
		double off;
	} cases[] = {
		{"bf16", 8643, 0.25},
		{"f16", 65536, 0.1},
	};
	for (int k = 0; k < 2; k++) {
		int64_t n = cases[k].n, bad = n / 3;
		double *e = malloc((size_t)n * sizeof *e), *a = malloc((size_t)n * sizeof *a);
		uint64_t seed = 7;
		ck_assert(e && a);
		for (int64_t i = 0; i < n; i++) {
			e[i] = 2 * uniform(&seed) - 1;
			a[i] = k == 0 ? fgrt_bf16_to_f64(fgrt_f64_to_bf16(e[i])) : fgrt_f16_to_f64(fgrt_f64_to_f16(e[i]));
		}
		a[bad] += cases[k].off;
		FgrtTol tol = fgrt_tolerance(cases[k].dtype, FGRT_GATE_RMSE);
		ck_assert(tol.outlier_k == FGRT_OUTLIER_K);
		FgrtCheck c;
		fgrt_check(a, e, NULL, n, &tol, &c);
		ck_assert(!c.ok);
		ck_assert(c.rmse <= c.rmse_limit);     /* the RMSE alone would pass it */
		ck_assert_int_eq(c.outliers, 1);
		ck_assert_int_eq(c.outlier, bad);
		ck_assert(c.outlier_actual == a[bad] && c.outlier_expected == e[bad]);
		tol.outlier_k = 0;
		fgrt_check(a, e, NULL, n, &tol, &c);
		ck_assert(c.ok && c.outliers == 0 && c.outlier == -1);
		free(e);
		free(a);
	}
}
END_TEST

/* No false alarm: 2^20 values whose magnitudes span six orders (e^(3g)),
 * each off by a normal relative error of one f32 unit, the baseline off
 * by an independent one.  The RMSE and the bound both hold (errors scale
 * with the values; the bound's allowance does too), and a bound without
 * the magnitude factor would fail it.  Then one element larger than the
 * RMS of the values off by 1e-5 relative: caught.  (One below the RMS is
 * held to the RMS's absolute bar, the price of the floor that keeps
 * results of cancellation from false alarms.) */
START_TEST(outlier_no_false_alarm)
{
	const int64_t n = 1 << 20;
	double *e = malloc((size_t)n * sizeof *e), *a = malloc((size_t)n * sizeof *a);
	double *b = malloc((size_t)n * sizeof *b);
	uint64_t seed = 11;
	ck_assert(e && a && b);
	for (int64_t i = 0; i < n; i++) {
		e[i] = exp(3 * normal(&seed)) * (i % 2 ? 1 : -1);
		a[i] = e[i] * (1 + 0x1p-24 * normal(&seed));
		b[i] = e[i] * (1 + 0x1p-24 * normal(&seed));
	}
	FgrtTol tol = fgrt_tolerance("f32", FGRT_GATE_RMSE);
	tol.atol = 0;                   /* the values go down to 1e-6: no help from atol */
	FgrtCheck c;
	fgrt_check_base(a, e, e, b, n, &tol, &c);
	ck_assert_msg(c.ok, "rmse %g limit %g outliers %lld", c.rmse, c.rmse_limit, (long long)c.outliers);
	double worst = 0;               /* the largest error against K times the limit, unscaled */
	for (int64_t i = 0; i < n; i++)
		worst = fmax(worst, fabs(a[i] - e[i]) / (tol.outlier_k * c.rmse_limit));
	ck_assert(worst > 1);
	double ss = 0;
	for (int64_t i = 0; i < n; i++)
		ss += e[i] * e[i];
	int64_t mid = 0;
	while (fabs(e[mid]) < 2 * sqrt(ss / (double)n))
		mid++;
	a[mid] = e[mid] * (1 + 1e-5);
	fgrt_check_base(a, e, e, b, n, &tol, &c);
	ck_assert(!c.ok && c.outliers == 1 && c.outlier == mid);
	free(e);
	free(a);
	free(b);
}
END_TEST

/* f32's elementwise rtol is decided per value: 1.3e-6 for correctly
 * rounded arithmetic, 1e-5 where a transcendental op feeds it; the 16-bit
 * types and the RMSE gate do not care. */
START_TEST(f32_rtol_per_value)
{
	FgrtTol plain = fgrt_tolerance("f32", 0), tr = fgrt_tolerance("f32", FGRT_GATE_TRANSC);
	ck_assert(plain.rtol == 1.3e-6 && tr.rtol == 1e-5);
	ck_assert(plain.rmse_m == 0 && tr.rmse_m == 0 && plain.outlier_k == 0);
	ck_assert(fgrt_tolerance("f16", FGRT_GATE_TRANSC).rtol == fgrt_tolerance("f16", 0).rtol);
	FgrtTol r = fgrt_tolerance("f32", FGRT_GATE_RMSE | FGRT_GATE_TRANSC);
	ck_assert(r.rmse_m == 2 && r.outlier_k == FGRT_OUTLIER_K);
	double e[1] = {100.0}, a[1] = {100.0 * (1 + 5e-6)};
	FgrtCheck c;
	fgrt_check(a, e, NULL, 1, &plain, &c);
	ck_assert(!c.ok);
	fgrt_check(a, e, NULL, 1, &tr, &c);
	ck_assert(c.ok);
	FgrtTol i32 = fgrt_tolerance("i32", FGRT_GATE_RMSE);
	ck_assert(i32.rtol == 0 && i32.atol == 0 && i32.rmse_m == 0 && i32.outlier_k == 0);
}
END_TEST

/* Where each planted bug lands on a [130, 70] tensor of ones: the middle
 * element, the last row, the last column, the last 64-square tile (rows
 * 128-129, columns 64-69); a bool is flipped, an i32 off by one; names
 * parse both ways. */
START_TEST(plant_positions)
{
	static double a[130 * 70];
	const int64_t shape[2] = {130, 70};
	static const struct {
		FgrtPlant p;
		int64_t n, first, last;
	} cases[] = {
		{FGRT_PLANT_ELEMENT, 1, 4550, 4550},
		{FGRT_PLANT_ROW, 70, 129 * 70, 130 * 70 - 1},
		{FGRT_PLANT_COLUMN, 130, 69, 130 * 70 - 1},
		{FGRT_PLANT_TILE, 12, 128 * 70 + 64, 130 * 70 - 1},
	};
	for (int k = 0; k < 4; k++) {
		for (int i = 0; i < 130 * 70; i++)
			a[i] = 1;
		ck_assert_int_eq(fgrt_plant(cases[k].p, a, 2, shape, 0x1p-24, 0), cases[k].n);
		int64_t n = 0, first = -1, last = -1;
		for (int i = 0; i < 130 * 70; i++)
			if (a[i] != 1) {
				ck_assert(fabs(a[i] - 1.2501) < 1e-12);
				n++, last = i;
				if (first < 0)
					first = i;
			}
		ck_assert_int_eq(n, cases[k].n);
		ck_assert_int_eq(first, cases[k].first);
		ck_assert_int_eq(last, cases[k].last);
		ck_assert(fgrt_plant_parse(fgrt_plant_name(cases[k].p)) == cases[k].p);
	}
	double flag[3] = {0, 1, 0}, num[3] = {-8, 0, 8};
	const int64_t three = 3;
	ck_assert_int_eq(fgrt_plant(FGRT_PLANT_ELEMENT, flag, 1, &three, 0, 1), 1);
	ck_assert(flag[1] == 0);
	ck_assert_int_eq(fgrt_plant(FGRT_PLANT_ROW, num, 1, &three, 0, 0), 3);
	ck_assert(num[0] == -7 && num[2] == 9);
	ck_assert(fgrt_plant_parse("rows") == FGRT_PLANT_NONE);
	double scalar = NAN;
	ck_assert_int_eq(fgrt_plant(FGRT_PLANT_TILE, &scalar, 0, NULL, 0x1p-24, 0), 1);
	ck_assert(scalar == 0);
}
END_TEST

static Suite *check_suite(void)
{
	Suite *s = suite_create("check");
	TCase *tc = tcase_create("elementwise");
	tcase_add_test(tc, elementwise_boundary);
	tcase_add_test(tc, elementwise_exact_for_ints);
	tcase_add_test(tc, worst_is_relative_to_allowance);
	tcase_add_test(tc, nan_positions);
	tcase_add_test(tc, inf_positions);
	tcase_add_test(tc, empty);
	suite_add_tcase(s, tc);
	tc = tcase_create("rmse");
	tcase_add_test(tc, rmse_gate);
	tcase_add_test(tc, rmse_specials);
	tcase_add_test(tc, rmse_floor_for_exact_reference);
	tcase_add_test(tc, tf32_gate);
	tcase_add_test(tc, rmse_baseline);
	tcase_add_test(tc, outlier_one_element);
	tcase_add_test(tc, outlier_no_false_alarm);
	tcase_add_test(tc, f32_rtol_per_value);
	tcase_add_test(tc, plant_positions);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(check_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
