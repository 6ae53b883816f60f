/*
 * tables.c - what derives from the FG_OPS and FG_DTYPES tables in fg.h:
 * the per-op and per-dtype information arrays, rounding to a dtype, name
 * lookups with "did you mean" suggestions, and folding a number through
 * an op (what the IR builder needs of the semantics, without the
 * interpreter).
 */
#include <math.h>
#include <string.h>

#include "fg.h"
#include "fgrt.h"

const FgOpInfo fg_op_info[FG_OP_COUNT] = {
#define X(id, nm, ar, cl, ty, at, ref, cu, py, tr) \
	[FG_OP_##id] = {nm, ar, FG_CLASS_##cl, FG_TY_##ty, at, cu, py, tr},
	FG_OPS(X)
#undef X
};

const FgDtypeInfo fg_dtype_info[FG_DT_COUNT] = {
#define X(id, nm, size, isf, ct, st, py, npy) [FG_DT_##id] = {ct, st, "FGRT_" #id, "fg_to_" nm, py},
	FG_DTYPES(X)
#undef X
};

const char *const fg_dtype_name[FG_DT_COUNT] = {
#define X(id, nm, size, isf, ct, st, py, npy) [FG_DT_##id] = nm,
	FG_DTYPES(X)
#undef X
};

const int fg_dtype_size[FG_DT_COUNT] = {
#define X(id, nm, size, isf, ct, st, py, npy) [FG_DT_##id] = size,
	FG_DTYPES(X)
#undef X
};

static const int dtype_is_float[FG_DT_COUNT] = {
#define X(id, nm, size, isf, ct, st, py, npy) [FG_DT_##id] = isf,
	FG_DTYPES(X)
#undef X
};

int fg_dtype_is_float(FgDtype t)
{
	return dtype_is_float[t];
}

int fg_dtype_is_int(FgDtype t)
{
	return t == FG_DT_I32 || t == FG_DT_I8 || t == FG_DT_U8;
}

void fg_dtype_int_range(FgDtype t, double *lo, double *hi)
{
	*lo = t == FG_DT_I8 ? -128.0 : t == FG_DT_U8 ? 0.0 : -2147483648.0;
	*hi = t == FG_DT_I8 ? 127.0 : t == FG_DT_U8 ? 255.0 : 2147483647.0;
}

double fg_wrap_int(FgDtype t, double v)
{
	double lo, hi;
	fg_dtype_int_range(t, &lo, &hi);
	if (v >= lo && v <= hi)
		return v;
	double span = hi - lo + 1, r = fmod(v - lo, span);
	return (r < 0 ? r + span : r) + lo;
}

/* Toward zero, saturating at the dtype's range; NaN gives 0. */
static double round_int(FgDtype t, double x)
{
	double lo, hi;
	fg_dtype_int_range(t, &lo, &hi);
	if (isnan(x))
		return 0.0;
	if (x >= hi)
		return hi;
	if (x <= lo)
		return lo;
	return trunc(x) + 0.0; /* -0.0 is no integer */
}

double fg_round_to(FgDtype dt, double x)
{
	switch (dt) {
	case FG_DT_F32:
		return fg_round_f32(x);
	case FG_DT_F16:
		return fgrt_f16_to_f64(fgrt_f64_to_f16(x));
	case FG_DT_BF16:
		return fgrt_bf16_to_f64(fgrt_f64_to_bf16(x));
	case FG_DT_I32:
	case FG_DT_I8:
	case FG_DT_U8:
		return round_int(dt, x);
	case FG_DT_F8E4M3:      /* saturates at +-448, NaN stays NaN */
		return fgrt_f8e4m3_to_f64(fgrt_f64_to_f8e4m3(x));
	case FG_DT_F8E5M2:      /* overflow gives infinity */
		return fgrt_f8e5m2_to_f64(fgrt_f64_to_f8e5m2(x));
	case FG_DT_BOOL:
		return x != 0 ? 1.0 : 0.0;
	case FG_DT_COUNT:
		break;
	}
	/* no default above: -Wswitch names a dtype without its case */
	fg_die("fg_round_to: bad dtype %d", (int)dt);
}

FgOp fg_op_lookup(const char *name)
{
	for (int i = 0; i < FG_OP_COUNT; i++)
		if (fg_op_info[i].cls != FG_CLASS_SOURCE && strcmp(fg_op_info[i].name, name) == 0)
			return (FgOp)i;
	return FG_OP_COUNT;
}

const char *fg_op_scalar(FgOp op)
{
	const FgOpInfo *in = &fg_op_info[op];
	return in->cls == FG_CLASS_EW && op != FG_OP_CAST && op != FG_OP_DROPOUT && op != FG_OP_IOTA && *in->attrs
		? in->attrs : NULL;
}

/* Names other frameworks give the language's ops, suggested by meaning
 * where spelling would not find them (NumPy's arctan2, PyTorch's clip or
 * swish); and names the language keeps for later: op NULL. */
static const struct {
	const char *name, *op;
} MEANINGS[] = {
	{"clip", "clamp"}, {"arctan2", "atan2"}, {"arcsin", "asin"}, {"arccos", "acos"}, {"arctan", "atan"},
	{"arcsinh", "asinh"}, {"arccosh", "acosh"}, {"arctanh", "atanh"}, {"logical_and", "and"},
	{"logical_or", "or"}, {"logical_not", "not"}, {"logical_xor", "xor"}, {"swish", "silu"},
	{"power", "pow"}, {"mm", "matmul"}, {"bmm", "matmul"}, {"dot", "matmul"}, {"rint", "round"},
	{"fix", "trunc"}, {"signum", "sign"}, {"sgn", "sign"}, {"reciprocal", "recip"}, {"negative", "neg"},
	{"absolute", "abs"}, {"amax", "max"}, {"amin", "min"}, {"hardtanh", "clamp"}, {"relu6", "clamp"},
	{"product", "prod"}, {"reduce_prod", "prod"}, {"reduce_sum", "sum"}, {"reduce_mean", "mean"},
	{"reduce_max", "max"}, {"reduce_min", "min"}, {"reduce_any", "any"}, {"reduce_all", "all"},
	{"conv1d", NULL}, {"conv2d", NULL}, {"conv3d", NULL}, {"conv_transpose2d", NULL},
	{"max_pool2d", NULL}, {"avg_pool2d", NULL}, {"scatter", NULL},
};

const char *fg_op_meaning(const char *name, int *reserved)
{
	*reserved = 0;
	for (size_t i = 0; i < sizeof MEANINGS / sizeof MEANINGS[0]; i++)
		if (strcmp(MEANINGS[i].name, name) == 0) {
			*reserved = MEANINGS[i].op == NULL;
			return MEANINGS[i].op;
		}
	return NULL;
}

const char *fg_op_suggest(const char *name)
{
	const char *best = NULL;
	int best_d = 3;         /* suggest only within two edits */

	for (int i = 0; i < FG_OP_COUNT; i++) {
		if (fg_op_info[i].cls == FG_CLASS_SOURCE)
			continue;
		int d = fg_edit_distance(name, fg_op_info[i].name, best_d - 1);
		if (d < best_d) {
			best_d = d;
			best = fg_op_info[i].name;
		}
	}
	return best;
}

FgDtype fg_dtype_lookup(const char *name)
{
	for (int i = 0; i < FG_DT_COUNT; i++)
		if (strcmp(fg_dtype_name[i], name) == 0)
			return (FgDtype)i;
	return FG_DT_COUNT;
}

const FgRedInfo *fg_red_info(FgOp op)
{
	static const FgRedInfo info[FG_OP_COUNT] = {
#define X(id, identity, ref, cu, functor) [FG_OP_##id] = {identity, cu, functor},
		FG_REDUCTIONS(X)
#undef X
	};
	return op >= 0 && op < FG_OP_COUNT && info[op].functor ? &info[op] : NULL;
}

FgOp fg_scan_reduction(FgOp op)
{
	switch (op) {
#define X(scan, red) \
	case FG_OP_##scan: return FG_OP_##red;
		FG_SCANS(X)
#undef X
	default:
		return FG_OP_COUNT;
	}
}

double fg_op_eval_scalar(FgOp op, double a, double b, double c, double k)
{
	(void)b;
	(void)c;
	(void)k;
	switch (op) {
#define X(id, nm, ar, cl, ty, at, ref, cu, py, tr) \
	case FG_OP_##id: return FG_CLASS_##cl == FG_CLASS_EW ? (double)(ref) : NAN;
	FG_OPS(X)
#undef X
	default:
		break;
	}
	fg_die("op %d is not elementwise", (int)op);
}

static int is_word_char(char c)
{
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

const char *fg_op_subst(FgArena *a, const char *t, const char *const *ops, int nops)
{
	for (int pass = 0, len = 0;; pass++) {
		char *out = pass ? fg_arena_alloc(a, (size_t)len + 1) : NULL;
		int n = 0;
		for (const char *p = t; *p;) {
			const char *s = p;
			while (is_word_char(*p))
				p++;
			size_t w = (size_t)(p - s);
			if (w == 0)
				w = 1, p++;
			/* a, b, c: the operands; k: the scalar attribute (ops[3]) */
			int which = w != 1 || is_word_char(s[1]) ? -1 : s[0] >= 'a' && s[0] <= 'c' ? s[0] - 'a' : s[0] == 'k' ? 3 : -1;
			const char *piece = which >= 0 && which < nops ? ops[which] : s;
			size_t m = which >= 0 && which < nops ? strlen(piece) : w;
			if (out)
				memcpy(out + n, piece, m);
			n += (int)m;
		}
		if (out) {
			out[n] = '\0';
			return out;
		}
		len = n;
	}
}
