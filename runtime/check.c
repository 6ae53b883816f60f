/*
 * check.c - comparison of a computed tensor with its golden reference, the
 * verdict behind `--check` and every numeric test (testing.md,
 * "Tolerances").
 *
 * Two gates.  Elementwise: |a - e| <= atol + rtol*|e| for every element,
 * where e is the f64 reference already rounded to the output dtype.
 * RMSE (rmse_m > 0, for reductions and matmuls whose summation order
 * legitimately differs): rmse(a, ref) <= m * rmse(base, ref) + atol, where
 * ref is the f64 reference and base the baseline: the reference computed
 * in the dtype (testing.md's ref_in_dtype: `fgc run --in-dtype`, each
 * float op rounded as an op-by-op program would; docs/interpreter.md)
 * when given, else round(ref), the
 * reference rounded to the dtype; either way the bar scales with what the
 * dtype can compute, and never falls below one rounding of each element
 * (u * rms(ref) / sqrt(3)).
 *
 * Non-finite values never average out: in both modes a NaN must sit exactly
 * where the reference has one, and an infinity exactly where the reference
 * has the same infinity.  In RMSE mode "the reference" for these positions
 * is round(ref) when given, because a finite f64 value may legitimately
 * overflow to infinity in the output dtype.  The RMSE sums run over the
 * elements where every operand is finite.
 *
 * Every field of FgrtCheck is filled in both modes, so a report can print
 * the worst element and the error statistics whatever the verdict:
 * nbad, worst and the maxima always describe the elementwise gate; worst
 * is the element with the largest err - allowed, a non-finite mismatch
 * counting as infinitely bad; max_rel_err skips elements whose reference
 * is zero (their relative error means nothing); rmse_limit is 0 in
 * elementwise mode.
 */
#include "fgrt.h"

#include <math.h>
#include <string.h>

/* How far element (a, e) is outside the elementwise gate: <= 0 inside,
 * +inf for a non-finite mismatch.  NAN when both are the same non-finite
 * value, which has no error to rank. */
static double excess(double a, double e, const FgrtTol *tol)
{
	if (isnan(a) || isnan(e))
		return isnan(a) && isnan(e) ? NAN : INFINITY;
	if (isinf(a) || isinf(e))
		return a == e ? NAN : INFINITY;
	return fabs(a - e) - (tol->atol + tol->rtol * fabs(e));
}

/* Non-finite positions must agree exactly: NaN with NaN, inf with the
 * same inf.  Finite pairs always agree here. */
static int same_specials(double a, double e)
{
	if (isnan(a) || isnan(e))
		return isnan(a) && isnan(e);
	if (isinf(a) || isinf(e))
		return a == e;
	return 1;
}

static void elementwise(const double *a, const double *e, int64_t n,
			const FgrtTol *tol, FgrtCheck *res)
{
	double worst = -INFINITY;
	for (int64_t i = 0; i < n; i++) {
		double x = excess(a[i], e[i], tol);
		if (isnan(x))
			continue;
		if (x > 0)
			res->nbad++;
		if (x > worst) {
			worst = x;
			res->worst = i;
		}
		if (isinf(x))
			continue;
		double err = fabs(a[i] - e[i]);
		res->max_abs_err = fmax(res->max_abs_err, err);
		if (e[i] != 0)
			res->max_rel_err = fmax(res->max_rel_err, err / fabs(e[i]));
	}
	if (res->worst >= 0) {
		res->worst_actual = a[res->worst];
		res->worst_expected = e[res->worst];
	}
}

/* rmse(a, e) and rmse(b, e) over elements where a, e and r are finite (b
 * NULL: r; an element where b is not finite counts r's); *specials_ok says
 * whether a's NaN/Inf positions match r's. */
static void rmse_pair(const double *a, const double *e, const double *r, const double *b,
		      int64_t n, double *rmse_a, double *rmse_r,
		      int *specials_ok, double *rms_e)
{
	double sa = 0, sr = 0, se = 0;
	int64_t cnt = 0;
	*specials_ok = 1;
	for (int64_t i = 0; i < n; i++) {
		if (!same_specials(a[i], r[i]))
			*specials_ok = 0;
		if (!isfinite(a[i]) || !isfinite(e[i]) || !isfinite(r[i]))
			continue;
		double bi = b && isfinite(b[i]) ? b[i] : r[i];
		sa += (a[i] - e[i]) * (a[i] - e[i]);
		sr += (bi - e[i]) * (bi - e[i]);
		se += e[i] * e[i];
		cnt++;
	}
	*rmse_a = cnt ? sqrt(sa / (double)cnt) : 0;
	*rmse_r = cnt ? sqrt(sr / (double)cnt) : 0;
	*rms_e = cnt ? sqrt(se / (double)cnt) : 0;
}

void fgrt_check(const double *actual, const double *expected,
		const double *expected_rounded, int64_t numel,
		const FgrtTol *tol, FgrtCheck *res)
{
	fgrt_check_base(actual, expected, expected_rounded, NULL, numel, tol, res);
}

void fgrt_check_base(const double *actual, const double *expected,
		     const double *expected_rounded, const double *baseline,
		     int64_t numel, const FgrtTol *tol, FgrtCheck *res)
{
	const double *r = expected_rounded ? expected_rounded : expected;
	double rmse_r;
	int specials_ok;
	res->ok = 0;
	res->nbad = 0;
	res->worst = -1;
	res->worst_actual = res->worst_expected = 0;
	res->max_abs_err = res->max_rel_err = 0;
	res->rmse_limit = 0;
	elementwise(actual, expected, numel, tol, res);
	if (tol->rmse_m > 0) {
		double rms_e;
		rmse_pair(actual, expected, r, baseline, numel, &res->rmse, &rmse_r,
			  &specials_ok, &rms_e);
		rmse_r = fmax(rmse_r, tol->unit_roundoff * rms_e / sqrt(3.0));
		res->rmse_limit = tol->rmse_m * rmse_r + tol->atol;
		res->ok = specials_ok && res->rmse <= res->rmse_limit;
	} else {
		double rms_e;
		rmse_pair(actual, expected, expected, NULL, numel, &res->rmse, &rmse_r,
			  &specials_ok, &rms_e);
		res->ok = res->nbad == 0;
	}
}

FgrtTol fgrt_tolerance(const char *dtype, int rmse)
{
	FgrtTol t = {0, 0, 0, 0};

	if (strcmp(dtype, "f32") == 0)
		t = (FgrtTol){1e-5, 1e-5, 2, 0x1p-24};
	else if (strcmp(dtype, "f16") == 0)
		t = (FgrtTol){1e-3, 1e-5, 3, 0x1p-11};
	else if (strcmp(dtype, "bf16") == 0)
		t = (FgrtTol){1.6e-2, 1e-5, 3, 0x1p-8};
	/* fed by a matmul that multiplied f32 as tf32 (10 bits kept of each
	 * operand's 23, rounded or truncated): a 16-bit type's gate with
	 * tf32's unit, 2^-10, where the dtype's own is finer */
	if (rmse == 2 && t.unit_roundoff > 0 && t.unit_roundoff < 0x1p-10)
		t.rmse_m = 3, t.unit_roundoff = 0x1p-10;
	if (!rmse)
		t.rmse_m = 0;
	return t;
}
