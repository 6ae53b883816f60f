/*
 * check.c - comparison of a computed tensor with its golden reference, the
 * verdict behind `--check` and every numeric test (testing.md,
 * "Tolerances"; docs/testing.md derives the outlier bound).
 *
 * Two gates.  Elementwise: |a - e| <= atol + rtol*|e| for every element,
 * where e is the f64 reference already rounded to the output dtype.
 * RMSE (rmse_m > 0, for reductions and matmuls whose summation order
 * legitimately differs): rmse(a, ref) <= m * rmse(base, ref) + atol, where
 * ref is the f64 reference and base the baseline: the reference computed
 * in the dtype (testing.md's ref_in_dtype: `fgc run --in-dtype`, each
 * float op rounded as an op-by-op program would; docs/interpreter.md)
 * when given, else round(ref), the reference rounded to the dtype; either
 * way the bar scales with what the dtype can compute, and never falls
 * below one rounding of each element (u * rms(ref) / sqrt(3)).
 *
 * An RMSE is a mean: one wrong element of N moves it by 1/sqrt(N) of its
 * error, so the RMSE gate alone passes a bf16 tensor of 8,643 elements
 * with one element off by 0.25.  Hence the outlier bound on every
 * RMSE-gated value (outlier_k > 0): no element's error may exceed
 * atol + K * (limit - atol) * max(1, |ref| / rms(ref)), K times the gate's
 * RMS error at the element's own magnitude (errors of rounded arithmetic
 * scale with the values; the floor at rms(ref) keeps the absolute bar for
 * results near zero, as after cancellation).
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
 * is zero (their relative error means nothing); rmse_limit is 0 and the
 * outlier fields empty in elementwise mode.
 */
#include "fgrt.h"

#include <math.h>
#include <stdio.h>
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

/* The outlier bound of the RMSE gate: the elements of a whose error
 * against e (finite pairs) exceeds atol + k * (limit - atol) * max(1,
 * |e| / rms_e); the worst by the ratio of error to that allowance. */
static void outliers(const double *a, const double *e, int64_t n, const FgrtTol *tol,
		     double rms_e, FgrtCheck *res)
{
	double bar = tol->outlier_k * (res->rmse_limit - tol->atol), worst = 0;
	for (int64_t i = 0; i < n; i++) {
		if (!isfinite(a[i]) || !isfinite(e[i]))
			continue;
		double mag = fabs(e[i]) > rms_e ? fabs(e[i]) / rms_e : 1;
		double allowed = tol->atol + bar * mag, err = fabs(a[i] - e[i]);
		if (err <= allowed)
			continue;
		res->outliers++;
		if (err / allowed > worst) {
			worst = err / allowed;
			res->outlier = i;
			res->outlier_allowed = allowed;
		}
	}
	if (res->outlier >= 0) {
		res->outlier_actual = a[res->outlier];
		res->outlier_expected = e[res->outlier];
	}
}

void fgrt_check_base(const double *actual, const double *expected,
		     const double *expected_rounded, const double *baseline,
		     int64_t numel, const FgrtTol *tol, FgrtCheck *res)
{
	const double *r = expected_rounded ? expected_rounded : expected;
	double rmse_r, rms_e;
	int specials_ok;
	memset(res, 0, sizeof *res);
	res->worst = res->outlier = -1;
	elementwise(actual, expected, numel, tol, res);
	if (tol->rmse_m > 0) {
		rmse_pair(actual, expected, r, baseline, numel, &res->rmse, &rmse_r,
			  &specials_ok, &rms_e);
		rmse_r = fmax(rmse_r, tol->unit_roundoff * rms_e / sqrt(3.0));
		res->rmse_limit = tol->rmse_m * rmse_r + tol->atol;
		if (tol->outlier_k > 0)
			outliers(actual, expected, numel, tol, rms_e, res);
		res->ok = specials_ok && res->rmse <= res->rmse_limit && res->outliers == 0;
	} else {
		rmse_pair(actual, expected, expected, NULL, numel, &res->rmse, &rmse_r,
			  &specials_ok, &rms_e);
		res->ok = res->nbad == 0;
	}
}

/* Why the verdict is what it is, after "max abs err": the RMSE against its
 * limit, then for a failure the broken rule and the element that shows it. */
char *fgrt_verdict_str(char *buf, size_t n, const FgrtTol *tol, const FgrtCheck *c, int rank,
		       const int64_t *shape, int64_t numel)
{
	char ix[256];
	size_t k = 0;
#define PUT(...) (k += (size_t)snprintf(buf + k, k < n ? n - k : 0, __VA_ARGS__))
	if (n)
		buf[0] = 0;
	if (tol->rmse_m > 0)
		PUT("  rmse %.3g %s %.3g", c->rmse, c->rmse <= c->rmse_limit ? "<=" : ">", c->rmse_limit);
	if (c->ok)
		return buf;
	if (tol->rmse_m > 0 && c->outliers > 0) {
		fgrt_index_str(ix, sizeof ix, rank, shape, c->outlier);
		PUT("  %lld of %lld beyond the outlier bound (K %g)  worst %s: got %.9g, want %.9g, "
		    "error %.3g > %.3g", (long long)c->outliers, (long long)numel, tol->outlier_k, ix,
		    c->outlier_actual, c->outlier_expected, fabs(c->outlier_actual - c->outlier_expected),
		    c->outlier_allowed);
		return buf;
	}
	if (tol->rmse_m > 0 && c->rmse <= c->rmse_limit)
		PUT("  NaN/Inf where the reference has none");
	else if (tol->rmse_m == 0)
		PUT("  %lld of %lld outside rtol %g atol %g", (long long)c->nbad, (long long)numel, tol->rtol,
		    tol->atol);
	if (c->worst >= 0) {
		fgrt_index_str(ix, sizeof ix, rank, shape, c->worst);
		PUT("  worst %s: got %.9g, want %.9g", ix, c->worst_actual, c->worst_expected);
	}
#undef PUT
	return buf;
}

/* ------------------------------------------------------ planted bugs */

static const char *const plant_names[FGRT_PLANT_COUNT] = {"", "element", "row", "column", "tile"};

FgrtPlant fgrt_plant_parse(const char *s)
{
	for (int k = FGRT_PLANT_ELEMENT; k < FGRT_PLANT_COUNT; k++)
		if (strcmp(s, plant_names[k]) == 0)
			return (FgrtPlant)k;
	return FGRT_PLANT_NONE;
}

const char *fgrt_plant_name(FgrtPlant p)
{
	return p > FGRT_PLANT_NONE && p < FGRT_PLANT_COUNT ? plant_names[p] : "none";
}

/* Element i as a bug would leave it: a float off by a quarter of its
 * scale, max(|a|, rms(a)), plus 1e-4, ten times every float gate's atol
 * (an error below the atol is no error by testing.md: a softmax over
 * 50,257 columns holds values of 2e-5), a non-finite float 0; an integer
 * off by one; a bool flipped.  An 8-bit float (unit roundoff 2^-4 or
 * more) is off by eight times its scale: its RMSE gate's outlier bound, K
 * times a bar of three units of roundoff or more, lets an element stray
 * by a few times itself (a softmax in f8e4m3, whose values sit among the
 * subnormals, allowed 3.7 times rms(a)), and a bug must pass that. */
static double planted(double a, double unit, int is_bool, double rms)
{
	if (is_bool)
		return a != 0 ? 0 : 1;
	if (unit <= 0)
		return a + 1;
	if (!isfinite(a))
		return 0;
	return a + (unit >= 0x1p-4 ? 8.0 : 0.25) * fmax(fabs(a), rms) + 1e-4;
}

int64_t fgrt_plant(FgrtPlant p, double *a, int rank, const int64_t *shape, double unit, int is_bool)
{
	int64_t cols = rank > 0 ? shape[rank - 1] : 1, numel = 1, n = 0;
	for (int i = 0; i < rank; i++)
		numel *= shape[i];
	if (numel <= 0 || p == FGRT_PLANT_NONE)
		return 0;
	int64_t rows = numel / cols;
	double ss = 0;
	int64_t fin = 0;
	for (int64_t i = 0; i < numel; i++)
		if (isfinite(a[i]))
			ss += a[i] * a[i], fin++;
	double rms = fin ? sqrt(ss / (double)fin) : 0;
	/* the rows and columns hit, as [r0, r1) x [c0, c1) of the [rows, cols] view */
	int64_t r0 = 0, r1 = rows, c0 = 0, c1 = cols;
	switch (p) {
	case FGRT_PLANT_ELEMENT:
		r0 = (numel / 2) / cols, r1 = r0 + 1, c0 = (numel / 2) % cols, c1 = c0 + 1;
		break;
	case FGRT_PLANT_ROW:
		r0 = rows - 1;
		break;
	case FGRT_PLANT_COLUMN:
		c0 = cols - 1;
		break;
	case FGRT_PLANT_TILE:
		r0 = (rows - 1) / FGRT_PLANT_TILE_SIZE * FGRT_PLANT_TILE_SIZE;
		c0 = (cols - 1) / FGRT_PLANT_TILE_SIZE * FGRT_PLANT_TILE_SIZE;
		break;
	default:
		return 0;
	}
	for (int64_t r = r0; r < r1; r++)
		for (int64_t c = c0; c < c1; c++, n++)
			a[r * cols + c] = planted(a[r * cols + c], unit, is_bool, rms);
	return n;
}

FgrtTol fgrt_tolerance(const char *dtype, int gate)
{
	FgrtTol t = {0, 0, 0, 0, 0};

	/* f32: testing.md's 1.3e-6 for correctly rounded arithmetic, 1e-5
	 * where a transcendental op (a few ulps on the GPU) feeds the value */
	if (strcmp(dtype, "f32") == 0)
		t = (FgrtTol){gate & FGRT_GATE_TRANSC ? 1e-5 : 1.3e-6, 1e-5, 2, 0x1p-24, FGRT_OUTLIER_K};
	else if (strcmp(dtype, "f16") == 0)
		t = (FgrtTol){1e-3, 1e-5, 3, 0x1p-11, FGRT_OUTLIER_K};
	else if (strcmp(dtype, "bf16") == 0)
		t = (FgrtTol){1.6e-2, 1e-5, 3, 0x1p-8, FGRT_OUTLIER_K};
	/* the 8-bit floats: two units of roundoff (one rounding either way of
	 * a tie), and half the smallest subnormal below */
	else if (strcmp(dtype, "f8e4m3") == 0)
		t = (FgrtTol){0.125, 0x1p-10, 3, 0x1p-4, FGRT_OUTLIER_K};
	else if (strcmp(dtype, "f8e5m2") == 0)
		t = (FgrtTol){0.25, 0x1p-17, 3, 0x1p-3, FGRT_OUTLIER_K};
	/* fed by a matmul that multiplied f32 as tf32 (10 bits kept of each
	 * operand's 23, rounded or truncated): a 16-bit type's gate with
	 * tf32's unit, 2^-10, where the dtype's own is finer */
	if ((gate & FGRT_GATE_TF32) && t.unit_roundoff > 0 && t.unit_roundoff < 0x1p-10)
		t.rmse_m = 3, t.unit_roundoff = 0x1p-10;
	if (!(gate & (FGRT_GATE_RMSE | FGRT_GATE_TF32)))
		t.rmse_m = 0, t.outlier_k = 0;
	return t;
}
