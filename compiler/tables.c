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

static double round_i32(double x)
{
	if (isnan(x))
		return 0.0;
	if (x >= 2147483647.0)
		return 2147483647.0;
	if (x <= -2147483648.0)
		return -2147483648.0;
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
		return round_i32(x);
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

double fg_op_eval_scalar(FgOp op, double a, double b, double c)
{
	(void)b;
	(void)c;
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
			int which = w == 1 && s[0] >= 'a' && s[0] <= 'c' && !is_word_char(s[1]) ? s[0] - 'a' : -1;
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
