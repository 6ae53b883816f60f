/*
 * half.c - IEEE binary16 (f16) and bfloat16 (bf16), the storage dtypes,
 * converted to and from f32 and f64 on the host; and the OCP 8-bit floats
 * f8e4m3 (no infinity: a value past 448 saturates to 448, NaN is 0x7f)
 * and f8e5m2 (IEEE-like: past 57344 plus half an ulp is infinity), each
 * rounded once to nearest even as CUDA's __nv_cvt_double_to_fp8 does
 * (__NV_SATFINITE for e4m3, __NV_NOSAT for e5m2).
 *
 * Narrowing works on the bits of a double and rounds exactly once, to
 * nearest with ties to even, straight from the double's 53-bit significand
 * to the target's precision.  Going through float first would round twice:
 * a double just above an f16 tie can round down onto the tie as a float and
 * then to even, the wrong way.  Floats are widened to double (exact) and
 * take the same path, so one routine decides every rounding.  Both formats
 * are described by their mantissa bits and exponent bias, since bf16 is f16
 * with a float's exponent range and less precision.
 *
 * Invariants: widening is exact; NaN stays NaN with the quiet bit set (and
 * as much payload as fits); infinities and signed zeros are kept; values
 * at or above the largest finite value plus half an ulp become infinity.
 */
#include "fgrt.h"

#include <math.h>
#include <string.h>

/* A narrow binary format: 1 sign bit, ebits exponent bits, mbits
 * mantissa bits. */
typedef struct HalfFormat {
	int mbits;              /* stored mantissa bits: 10 (f16), 7 (bf16) */
	int bias;               /* exponent bias: 15 (f16), 127 (bf16) */
} HalfFormat;

static const HalfFormat F16 = {10, 15};
static const HalfFormat BF16 = {7, 127};

static uint64_t f64_bits(double x)
{
	uint64_t u;
	memcpy(&u, &x, sizeof(u));
	return u;
}

static double bits_f64(uint64_t u)
{
	double x;
	memcpy(&x, &u, sizeof(x));
	return x;
}

/* sig >> shift, rounded to nearest even; shift in 1..63. */
static uint64_t round_shift(uint64_t sig, int shift)
{
	uint64_t q = sig >> shift;
	uint64_t rem = sig & ((UINT64_C(1) << shift) - 1);
	uint64_t half = UINT64_C(1) << (shift - 1);
	if (rem > half || (rem == half && (q & 1)))
		q++;
	return q;
}

/* The magnitude bits of |x| (finite, not NaN) in format f.  The rounded
 * significand is added to the exponent field rather than or'ed into it,
 * so a carry out of the mantissa bumps the exponent, and a carry out of
 * the largest binade lands exactly on the infinity encoding. */
static uint16_t narrow_finite(uint64_t u, HalfFormat f)
{
	int e = (int)((u >> 52) & 0x7ff);
	uint64_t m = u & ((UINT64_C(1) << 52) - 1);
	uint32_t inf = (uint32_t)(2 * f.bias + 1) << f.mbits;
	if (e == 0)
		return 0;       /* double subnormals are below 2^-1022: zero */
	int exp = e - 1023;     /* |x| = sig * 2^(exp - 52) */
	uint64_t sig = m | (UINT64_C(1) << 52);
	if (exp > f.bias)
		return (uint16_t)inf;
	int emin = 1 - f.bias;
	int shift = 52 - f.mbits + (exp < emin ? emin - exp : 0);
	if (shift > 53)
		return 0;       /* below half the smallest subnormal */
	uint32_t q = (uint32_t)round_shift(sig, shift);
	/* Normal: the field holds exp+bias, and q's implicit bit adds one. */
	uint32_t bits = exp < emin ? q :
			((uint32_t)(exp + f.bias - 1) << f.mbits) + q;
	return (uint16_t)(bits >= inf ? inf : bits);
}

static uint16_t narrow(double x, HalfFormat f)
{
	uint64_t u = f64_bits(x);
	uint16_t sign = (uint16_t)((u >> 48) & 0x8000);
	uint16_t inf = (uint16_t)((2 * f.bias + 1) << f.mbits);
	if (isnan(x)) {
		/* Keep the top payload bits, and set the quiet bit. */
		uint16_t quiet = (uint16_t)(1u << (f.mbits - 1));
		uint16_t payload = (uint16_t)((u >> (52 - f.mbits)) &
					      ((1u << f.mbits) - 1));
		return (uint16_t)(sign | inf | quiet | payload);
	}
	return (uint16_t)(sign | narrow_finite(u & ~(UINT64_C(1) << 63), f));
}

/* Exact: every narrow value is a double. */
static double widen(uint16_t h, HalfFormat f)
{
	uint64_t sign = (uint64_t)(h >> 15) << 63;
	int e = (h >> f.mbits) & (2 * f.bias + 1);
	uint64_t m = h & ((1u << f.mbits) - 1);
	if (e == 2 * f.bias + 1)       /* inf, or NaN made quiet */
		return bits_f64(sign | (UINT64_C(0x7ff) << 52) |
				(m ? UINT64_C(1) << 51 : 0) |
				(m << (52 - f.mbits)));
	if (e == 0) {                   /* zero or subnormal: m * 2^(emin-mbits) */
		double v = ldexp((double)m, 1 - f.bias - f.mbits);
		return sign ? -v : v;
	}
	return bits_f64(sign | (uint64_t)(e - f.bias + 1023) << 52 |
			m << (52 - f.mbits));
}

uint16_t fgrt_f64_to_f16(double x)
{
	return narrow(x, F16);
}

double fgrt_f16_to_f64(uint16_t h)
{
	return widen(h, F16);
}

uint16_t fgrt_f64_to_bf16(double x)
{
	return narrow(x, BF16);
}

double fgrt_bf16_to_f64(uint16_t h)
{
	return widen(h, BF16);
}

/* An 8-bit float: 1 sign bit, 7 - mbits exponent bits, mbits mantissa
 * bits. */
typedef struct F8Format {
	int mbits, bias;
	double maxfin;          /* the largest finite value */
	uint8_t over;           /* the code past it: e4m3 saturates (0x7e),
				   e5m2 is infinite (0x7c) */
	uint8_t nan;            /* NaN's code */
	int ieee;               /* the top exponent holds inf and NaN (e5m2);
				   else only all ones is NaN (e4m3) */
} F8Format;

static const F8Format E4M3 = {3, 7, 448.0, 0x7e, 0x7f, 0};
static const F8Format E5M2 = {2, 15, 57344.0, 0x7c, 0x7e, 1};

static uint8_t narrow8(double x, F8Format f)
{
	uint8_t s = signbit(x) ? 0x80 : 0;
	if (isnan(x))
		return (uint8_t)(s | f.nan);
	double a = fabs(x);
	int emin = 1 - f.bias, e;
	if (a == 0)
		return s;
	/* the quantum at a: 2^(e - mbits) for a in [2^e, 2^(e+1)), e >= emin */
	frexp(a, &e);
	e = e - 1 < emin ? emin : e - 1;
	double q = ldexp(1.0, e - f.mbits);
	double r = isinf(a) ? a : nearbyint(a / q) * q;     /* a / q is exact */
	if (r > f.maxfin)
		return (uint8_t)(s | f.over);
	if (r == 0)
		return s;
	frexp(r, &e);
	e -= 1;
	if (e < emin)   /* subnormal: r / 2^(emin - mbits) */
		return (uint8_t)(s | (uint8_t)ldexp(r, f.mbits - emin));
	return (uint8_t)(s | (uint8_t)((e + f.bias) << f.mbits) | (uint8_t)(ldexp(r, f.mbits - e) - (1 << f.mbits)));
}

static double widen8(uint8_t b, F8Format f)
{
	int ebits = 7 - f.mbits;
	int e = (b >> f.mbits) & ((1 << ebits) - 1), m = b & ((1 << f.mbits) - 1);
	double v;
	if (!f.ieee && e == (1 << ebits) - 1 && m == (1 << f.mbits) - 1)
		v = NAN;
	else if (f.ieee && e == (1 << ebits) - 1)
		v = m ? NAN : INFINITY;
	else if (e == 0)
		v = ldexp((double)m, 1 - f.bias - f.mbits);
	else
		v = ldexp(1.0 + ldexp((double)m, -f.mbits), e - f.bias);
	return b & 0x80 ? -v : v;
}

uint8_t fgrt_f64_to_f8e4m3(double x)
{
	return narrow8(x, E4M3);
}

double fgrt_f8e4m3_to_f64(uint8_t b)
{
	return widen8(b, E4M3);
}

uint8_t fgrt_f64_to_f8e5m2(double x)
{
	return narrow8(x, E5M2);
}

double fgrt_f8e5m2_to_f64(uint8_t b)
{
	return widen8(b, E5M2);
}

uint16_t fgrt_f32_to_f16(float x)
{
	return narrow((double)x, F16);
}

float fgrt_f16_to_f32(uint16_t h)
{
	return (float)widen(h, F16);
}

uint16_t fgrt_f32_to_bf16(float x)
{
	return narrow((double)x, BF16);
}

float fgrt_bf16_to_f32(uint16_t h)
{
	return (float)widen(h, BF16);
}
