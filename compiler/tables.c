/*
 * tables.c - what derives from the FG_OPS and FG_DTYPES tables in fg.h:
 * the per-op information array, dtype names and sizes, and name lookups
 * with "did you mean" suggestions.
 */
#include <math.h>
#include <string.h>

#include "fg.h"

const FgOpInfo fg_op_info[FG_OP_COUNT] = {
#define X(id, nm, ar, cl, ty, at, ref, cu) \
	[FG_OP_##id] = {nm, ar, FG_CLASS_##cl, FG_TY_##ty, at, cu},
	FG_OPS(X)
#undef X
};

const char *const fg_dtype_name[FG_DT_COUNT] = {
#define X(id, nm, size, isf) [FG_DT_##id] = nm,
	FG_DTYPES(X)
#undef X
};

const int fg_dtype_size[FG_DT_COUNT] = {
#define X(id, nm, size, isf) [FG_DT_##id] = size,
	FG_DTYPES(X)
#undef X
};

static const int dtype_is_float[FG_DT_COUNT] = {
#define X(id, nm, size, isf) [FG_DT_##id] = isf,
	FG_DTYPES(X)
#undef X
};

int fg_dtype_is_float(FgDtype t)
{
	return dtype_is_float[t];
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
#define X(id, nm, ar, cl, ty, at, ref, cu) \
	case FG_OP_##id: return FG_CLASS_##cl == FG_CLASS_EW ? (double)(ref) : NAN;
	FG_OPS(X)
#undef X
	default:
		break;
	}
	fg_die("op %d is not elementwise", (int)op);
}
