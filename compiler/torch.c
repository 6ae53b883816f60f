/*
 * torch.c - fgc emit-torch: the graph as a Python module over PyTorch, the
 * peer that bench/peers.py runs in eager mode and under torch.compile
 * beside the fgc binary, on the same inputs.
 *
 * The module holds, in this order:
 *   GRAPH, SOURCE, INPUTS, RESULTS, FLOPS, BYTES   what a harness needs:
 *       the inputs and params in declaration order with their dtypes and
 *       shapes; what forward returns (outputs by name, @save values as
 *       "saved.NAME", the names of fgc's .npy files) with the gate of
 *       testing.md that compares each; the matmul FLOPs and the ideal
 *       traffic of the floors in performance.md;
 *   forward(INPUTS..., *, reference=False)   one statement per node of
 *       the graph as built (composites are not expanded: softmax,
 *       log_softmax, layernorm and rmsnorm become the torch functions
 *       that compute the same formula as passes/expand.c, where one
 *       exists for the axes and shapes at hand);
 *   make_inputs(seed, device)   the inputs and params drawn exactly as
 *       `fgc run --seed` and the fgc binaries draw them (the Philox input
 *       stream of runtime/fgrt_philox.h, bit for bit);
 *   the helpers forward and make_inputs call, only those used.
 *
 * Semantics.  forward computes each op in its tensors' dtype, as eager
 * PyTorch does (f16 and bf16 values rounded after every op; torch itself
 * computes inside an op in f32), so outputs keep the graph's dtypes.  With
 * reference=True and float inputs given as float64, every float value is
 * computed in float64 and rounded only at a cast: the reference
 * interpreter's semantics (docs/interpreter.md), with results left in
 * float64 for the caller to round.  Numbers stay Python numbers where
 * torch takes one, so they keep their exact value as in the interpreter.
 * Dropout draws the same Philox mask as the interpreter and the binaries.
 *
 * Invariants: the text depends on the graph alone; every Python name in
 * forward is a valid identifier that shadows nothing forward uses (graph
 * names that would are given a trailing '_').
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fg.h"
#include "fgrt.h"

/* The helpers forward may call, each written into the module once. */
enum {
	HELP_CAST = 1,
	HELP_CONST = 2,
	HELP_DROPOUT = 4,
	HELP_SOFTMAX = 8,
	HELP_LOG_SOFTMAX = 16,
	HELP_LAYERNORM = 32,
	HELP_RMSNORM = 64,
	HELP_PROD = 128,
	HELP_ARGEXT = 256,
	HELP_IOTA = 512,
	HELP_GATHER = 1024,
	HELP_TAKE = 2048,
	HELP_SCAN = 4096,
	HELP_TOPK = 8192,
};

typedef struct Torch {
	FILE *f;
	const FgGraph *g;
	FgArena *a;
	const char **names;     /* per node: its Python name */
	unsigned char *rounded; /* per node: eager torch rounds it where the
	                           f64 reference does not */
	unsigned char *rmse;    /* per node: compared with the RMSE gate */
	unsigned char *gate;    /* per node: compiler/gates.c's bits (TRANSC) */
	unsigned helpers;       /* HELP_*: the helpers forward calls */
} Torch;

/* ------------------------------------------------------------- names */

/* Names a local of forward must not take: Python's keywords and the
 * globals forward reads. */
static const char *const reserved[] = {
	"False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue", "def",
	"del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import", "in", "is",
	"lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while", "with", "yield",
	"torch", "F", "math", "reference", "_cast", "_const", "_dropout", "_softmax", "_log_softmax",
	"_layernorm", "_rmsnorm", "_round", "_philox_word", "_mulhilo", "_draw",
};

static int is_reserved(const char *name)
{
	for (size_t i = 0; i < sizeof reserved / sizeof reserved[0]; i++)
		if (strcmp(name, reserved[i]) == 0)
			return 1;
	return 0;
}

static int name_taken(const char **names, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (names[i] && strcmp(names[i], name) == 0)
			return 1;
	return 0;
}

/* The printer's names (fg_ir_names), with a '_' appended to each that is
 * reserved until it is neither reserved nor another node's name. */
static const char **python_names(const FgGraph *g)
{
	const char **names = fg_ir_names(g);

	for (int i = 0; i < g->nnodes; i++) {
		if (!is_reserved(names[i]))
			continue;
		const char *name = names[i];
		do
			name = fg_arena_printf(g->arena, "%s_", name);
		while (is_reserved(name) || name_taken(names, g->nnodes, name));
		names[i] = name;
	}
	return names;
}

/* ------------------------------------------------------------- gates */

/* Which gate of testing.md compares each value with the f64 reference.
 * Eager torch rounds every float op's result to its dtype, where the
 * reference rounds only at casts and outputs; so a value is compared by
 * the RMSE gate when a reduction, a scan, a matmul or a composite feeds it, or
 * when one of its operands was rounded on the way (layout ops and
 * identity pass values through unrounded; a cast rounds in both). */
static void find_gates(Torch *t)
{
	const FgGraph *g = t->g;

	for (int id = 0; id < g->nnodes; id++) {
		const FgNode *n = &g->nodes[id];
		FgOpClass c = fg_op_info[n->op].cls;
		int rounded_in = 0;
		t->rmse[id] = c == FG_CLASS_REDUCE || c == FG_CLASS_SCAN || c == FG_CLASS_MATMUL || c == FG_CLASS_COMPOSITE;
		for (int k = 0; k < n->nin; k++) {
			t->rmse[id] |= t->rmse[n->in[k]] | t->rounded[n->in[k]];
			rounded_in |= t->rounded[n->in[k]];
		}
		if (c == FG_CLASS_SOURCE)
			t->rounded[id] = 0;
		else if (c == FG_CLASS_LAYOUT || n->op == FG_OP_IDENTITY || n->op == FG_OP_CAST)
			t->rounded[id] = (unsigned char)rounded_in;
		else
			t->rounded[id] = (unsigned char)fg_dtype_is_float(n->dt);
	}
	fg_gates(g, NULL, 0, t->gate);  /* for TRANSC; the RMSE rule is eager torch's, above */
}

/* RESULTS' name of the gate that judges value id. */
static const char *gate_name(const Torch *t, int id)
{
	if (t->rmse[id])
		return "rmse";
	return t->gate[id] & FGRT_GATE_TRANSC ? "transcendental" : "elementwise";
}

/* ------------------------------------------------------------- text */

static const char *torch_dtype(FgDtype dt)
{
	return fg_dtype_info[dt].torch;
}

/* A number as a Python literal of the kind torch gives dtype dt:
 * True/False, an int, or a float that always reads as a float. */
static const char *py_number(FgArena *a, double v, FgDtype dt)
{
	if (dt == FG_DT_BOOL)
		return v != 0 ? "True" : "False";
	if (isnan(v))
		return "math.nan";
	if (isinf(v))
		return v < 0 ? "-math.inf" : "math.inf";
	if (fg_dtype_is_int(dt) && fabs(v) < 9.2e18)
		return fg_arena_printf(a, "%lld", (long long)v);
	/* the fewest digits that read back as v, positional between 1e-4 and
	 * 1e16 as Python's repr writes them */
	int digits = 1;
	while (digits < 17 && strtod(fg_arena_printf(a, "%.*g", digits, v), NULL) != v)
		digits++;
	char *s = fg_arena_printf(a, "%.*g", digits, v);
	if (fabs(v) >= 1e-4 && fabs(v) < 1e16) {
		int decimals = digits - 1 - (int)floor(log10(fabs(v)));
		char *p = fg_arena_printf(a, "%.*f", decimals > 0 ? decimals : 0, v);
		if (strtod(p, NULL) == v)
			s = p;
	}
	if (!strpbrk(s, ".en"))
		s = fg_arena_printf(a, "%s.0", s);
	return s;
}

/* "(0, 2)": the axes of a reduction mask as a Python tuple. */
static const char *py_dims(FgArena *a, uint32_t axes)
{
	const char *s = "(";
	int n = 0;

	for (int i = 0; i < FG_MAX_RANK; i++)
		if (axes & (1u << i))
			s = fg_arena_printf(a, "%s%s%d", s, n++ ? ", " : "", i);
	return fg_arena_printf(a, "%s%s)", s, n == 1 ? "," : "");
}

/* "(32768, 4096)": a shape as a Python tuple. */
static const char *py_shape(FgArena *a, const FgShape *s)
{
	const char *t = "(";

	for (int i = 0; i < s->rank; i++)
		t = fg_arena_printf(a, "%s%s%lld", t, i ? ", " : "", (long long)s->d[i]);
	return fg_arena_printf(a, "%s%s)", t, s->rank == 1 ? "," : "");
}

static int is_const(const Torch *t, int id)
{
	return t->g->nodes[id].op == FG_OP_CONST;
}

/* Operand k of n.  A constant is written as a Python number when
 * number_ok (torch keeps its exact value, as the interpreter does), else
 * as a 0-d tensor of the dtype it adapted to. */
static const char *arg(Torch *t, const FgNode *n, int k, int number_ok)
{
	int id = n->in[k];
	const FgNode *c = &t->g->nodes[id];

	if (c->op != FG_OP_CONST)
		return t->names[id];
	if (number_ok)
		return py_number(t->a, c->a.value, c->dt);
	t->helpers |= HELP_CONST;
	const char *like = t->g->ninputs ? t->names[t->g->inputs[0]] : "None";
	return fg_arena_printf(t->a, "_const(%s, %s, %s, reference)", py_number(t->a, c->a.value, c->dt),
			       torch_dtype(c->dt), like);
}

/* ------------------------------------------------------------- ops */

/* An infix operand: a negative number in parentheses. */
static const char *infix_arg(Torch *t, const FgNode *n, int k, int number_ok)
{
	const char *s = arg(t, n, k, number_ok);
	return s[0] == '-' ? fg_arena_printf(t->a, "(%s)", s) : s;
}

/* The op's form (FG_OPS' torch column): a OP b takes a number on either
 * side but not on both, a call takes tensors. */
static const char *ew_form(Torch *t, const FgNode *n)
{
	const int scalar = fg_op_scalar(n->op) != NULL;
	const char *form = fg_op_info[n->op].torch, *ops[4] = {"0", "0", "0", scalar ? py_number(t->a, n->a.k, FG_DT_F32) : "0"};

	if (!*form)
		fg_die("emit-torch: no torch form for '%s'", fg_op_info[n->op].name);
	if (n->nin == 2 && strncmp(form, "a ", 2) == 0) {
		ops[0] = infix_arg(t, n, 0, !is_const(t, n->in[1]));
		ops[1] = infix_arg(t, n, 1, 1);
	} else {
		for (int k = 0; k < n->nin && k < 2; k++)
			ops[k] = arg(t, n, k, 0);
	}
	return fg_op_subst(t->a, form, ops, scalar ? 4 : n->nin < 2 ? n->nin : 2);
}

/* maximum and minimum: torch.maximum takes tensors only, so a number
 * side becomes clamp's bound (clamp propagates NaN as maximum does). */
static const char *ew_extremum(Torch *t, const FgNode *n)
{
	const char *fn = n->op == FG_OP_MAXIMUM ? "maximum" : "minimum";
	const char *bound = n->op == FG_OP_MAXIMUM ? "min" : "max";
	int x = is_const(t, n->in[0]) && !is_const(t, n->in[1]) ? 1 : 0;

	if (!is_const(t, n->in[1 - x]))
		return fg_arena_printf(t->a, "torch.%s(%s, %s)", fn, arg(t, n, 0, 0), arg(t, n, 1, 0));
	return fg_arena_printf(t->a, "torch.clamp(%s, %s=%s)", arg(t, n, x, 0), bound, arg(t, n, 1 - x, 1));
}

/* where(c, a, b): the condition is a tensor, a or b may be a number. */
static const char *ew_where(Torch *t, const FgNode *n)
{
	int a_num = !is_const(t, n->in[2]);
	return fg_arena_printf(t->a, "torch.where(%s, %s, %s)", arg(t, n, 0, 0), arg(t, n, 1, a_num),
			       arg(t, n, 2, 1));
}

static const char *ew_call(Torch *t, const FgNode *n)
{
	switch (n->op) {
	case FG_OP_POW:
		return fg_arena_printf(t->a, "torch.pow(%s, %s)", arg(t, n, 0, !is_const(t, n->in[1])),
				       arg(t, n, 1, 1));
	case FG_OP_MAXIMUM:
	case FG_OP_MINIMUM:
		return ew_extremum(t, n);
	case FG_OP_WHERE:
		return ew_where(t, n);
	case FG_OP_CLAMP:       /* numbers may bound it; torch.clamp propagates NaN */
		return fg_arena_printf(t->a, "torch.clamp(%s, %s, %s)", arg(t, n, 0, 0), arg(t, n, 1, 1), arg(t, n, 2, 1));
	case FG_OP_CAST:
		t->helpers |= HELP_CAST;
		return fg_arena_printf(t->a, "_cast(%s, %s, reference)", arg(t, n, 0, 0), torch_dtype(n->dt));
	case FG_OP_IOTA:
		t->helpers |= HELP_IOTA;
		return fg_arena_printf(t->a, "_iota(%s, %d, %s, %s, reference)", py_shape(t->a, &n->shape), n->a.axis,
				       torch_dtype(n->dt), t->g->ninputs ? t->names[t->g->inputs[0]] : "None");
	case FG_OP_DROPOUT:
		t->helpers |= HELP_DROPOUT;
		return fg_arena_printf(t->a, "_dropout(%s, %s, %llu)", arg(t, n, 0, 0),
				       py_number(t->a, n->a.drop.p, FG_DT_F32), (unsigned long long)n->a.drop.seed);
	default:
		return ew_form(t, n);
	}
}

/* A reduction over a mask of axes; a reduction over no axis (of a rank-0
 * value) is the value itself, since torch reads dim=() as all (argmax of
 * one value: index 0).  torch.prod, argmax and argmin take one dim
 * (helpers take several); any and all count in int64. */
static const char *reduce_call(Torch *t, const FgNode *n)
{
	const char *x = arg(t, n, 0, 0);
	const char *dims = py_dims(t->a, n->a.red.axes), *keep = n->a.red.keepdims ? "True" : "False";

	if (!n->a.red.axes)
		return n->op == FG_OP_ARGMAX || n->op == FG_OP_ARGMIN
			? fg_arena_printf(t->a, "torch.zeros_like(%s, dtype=torch.int32)", x) : x;
	switch (n->op) {
	case FG_OP_PROD:
		t->helpers |= HELP_PROD;
		return fg_arena_printf(t->a, "_prod(%s, %s, %s)", x, dims, keep);
	case FG_OP_ANY:
		return fg_arena_printf(t->a, "(torch.sum(%s, dim=%s, keepdim=%s) > 0)", x, dims, keep);
	case FG_OP_ALL:
		return fg_arena_printf(t->a, "(torch.sum(torch.logical_not(%s), dim=%s, keepdim=%s) == 0)", x, dims,
				       keep);
	case FG_OP_ARGMAX:
	case FG_OP_ARGMIN:
		t->helpers |= HELP_ARGEXT;
		return fg_arena_printf(t->a, "_argext(%s, %s, %s, %s)", fg_op_info[n->op].torch, x, dims, keep);
	default:
		if (n->op == FG_OP_SUM && (n->dt == FG_DT_I8 || n->dt == FG_DT_U8)) {     /* saturates */
			t->helpers |= HELP_CAST;
			return fg_arena_printf(t->a, "_cast(torch.sum(%s, dim=%s, keepdim=%s), %s, reference)", x, dims,
					       keep, torch_dtype(n->dt));
		}
		return fg_arena_printf(t->a, "%s(%s, dim=%s, keepdim=%s%s)", fg_op_info[n->op].torch, x, dims, keep,
				       n->op == FG_OP_SUM && n->dt == FG_DT_I32 ? ", dtype=torch.int32" : "");
	}
}

static const char *layout_call(Torch *t, const FgNode *n)
{
	const char *x = arg(t, n, 0, 0), *s = "";

	switch (n->op) {
	case FG_OP_TRANSPOSE:
		for (int i = 0; i < n->shape.rank; i++)
			s = fg_arena_printf(t->a, "%s%s%d", s, i ? ", " : "", n->a.perm[i]);
		return fg_arena_printf(t->a, "%s.permute(%s)", x, n->shape.rank ? s : "()");
	case FG_OP_RESHAPE:
		return fg_arena_printf(t->a, "%s.reshape(%s)", x, py_shape(t->a, &n->shape));
	case FG_OP_BROADCAST_TO:
		return fg_arena_printf(t->a, "torch.broadcast_to(%s, %s)", x, py_shape(t->a, &n->shape));
	case FG_OP_SLICE:
		return fg_arena_printf(t->a, "torch.narrow(%s, %d, %lld, %lld)", x, n->a.slice.axis,
				       (long long)n->a.slice.start, (long long)(n->a.slice.end - n->a.slice.start));
	case FG_OP_GATHER:
		t->helpers |= HELP_GATHER;
		return fg_arena_printf(t->a, "_gather(%s, %s, %d)", x, arg(t, n, 1, 0), n->a.axis);
	case FG_OP_TAKE_ALONG_AXIS:
		t->helpers |= HELP_TAKE;
		return fg_arena_printf(t->a, "_take_along_axis(%s, %s, %d)", x, arg(t, n, 1, 0), n->a.axis);
	default: /* concat */
		for (int k = 0; k < n->nin; k++)
			s = fg_arena_printf(t->a, "%s%s%s", s, k ? ", " : "", arg(t, n, k, 0));
		return fg_arena_printf(t->a, "torch.cat((%s%s), dim=%d)", s, n->nin == 1 ? "," : "", n->a.axis);
	}
}

/* The number of trailing axes a composite normalizes when they are the
 * last ones and every other operand has exactly their shape (what
 * F.layer_norm and F.rms_norm take); 0 otherwise. */
static int trailing_axes(const Torch *t, const FgNode *n)
{
	const FgShape *x = &t->g->nodes[n->in[0]].shape;
	int k = 0;

	while (k < x->rank && (n->a.red.axes & (1u << (x->rank - 1 - k))))
		k++;
	if (n->a.red.axes != ((1u << x->rank) - 1) - ((1u << (x->rank - k)) - 1))
		return 0;
	for (int j = 1; j < n->nin; j++) {
		const FgShape *w = &t->g->nodes[n->in[j]].shape;
		if (w->rank != k || memcmp(w->d, x->d + (x->rank - k), (size_t)k * sizeof w->d[0]) != 0)
			return 0;
	}
	return k;
}

/* Composites: the torch function where it computes passes/expand.c's
 * formula for these axes and shapes, else a helper that spells the
 * formula out. */
static const char *composite_call(Torch *t, const FgNode *n)
{
	FgArena *a = t->a;
	const char *x = arg(t, n, 0, 0), *dims = py_dims(a, n->a.red.axes);
	const char *eps = py_number(a, n->a.red.eps, FG_DT_F32);
	int one_axis = (n->a.red.axes & (n->a.red.axes - 1)) == 0, axis = 0;
	int k = trailing_axes(t, n);
	const FgShape *xs = &t->g->nodes[n->in[0]].shape;
	FgShape norm = {0};

	norm.rank = k;
	for (int i = 0; i < k; i++)
		norm.d[i] = xs->d[xs->rank - k + i];
	while (!(n->a.red.axes & (1u << axis)))
		axis++;
	switch (n->op) {
	case FG_OP_LOGSUMEXP:   /* torch's keeps -inf rows at -inf, as the expansion does */
		return fg_arena_printf(a, "torch.logsumexp(%s, dim=%s, keepdim=%s)", x, dims,
				       n->a.red.keepdims ? "True" : "False");
	case FG_OP_CROSS_ENTROPY:
		t->helpers |= HELP_TAKE;
		return fg_arena_printf(a, "torch.logsumexp(%s, dim=%d, keepdim=True) - _take_along_axis(%s, %s, %d)", x,
				       axis, x, arg(t, n, 1, 0), axis);
	case FG_OP_VAR:
	case FG_OP_STD:
		return fg_arena_printf(a, "torch.%s(%s, dim=%s, correction=%s, keepdim=%s)", fg_op_info[n->op].name, x,
				       dims, py_number(a, n->a.red.eps, FG_DT_F32), n->a.red.keepdims ? "True" : "False");
	case FG_OP_SOFTMAX:
	case FG_OP_LOG_SOFTMAX: {
		const char *fn = n->op == FG_OP_SOFTMAX ? "softmax" : "log_softmax";
		if (one_axis)
			return fg_arena_printf(a, "torch.%s(%s, dim=%d)", fn, x, axis);
		t->helpers |= n->op == FG_OP_SOFTMAX ? HELP_SOFTMAX : HELP_LOG_SOFTMAX;
		return fg_arena_printf(a, "_%s(%s, %s)", fn, x, dims);
	}
	case FG_OP_LAYERNORM:
		if (k)
			return fg_arena_printf(a, "F.layer_norm(%s, %s, %s, %s, eps=%s)", x, py_shape(a, &norm),
					       arg(t, n, 1, 0), arg(t, n, 2, 0), eps);
		t->helpers |= HELP_LAYERNORM;
		return fg_arena_printf(a, "_layernorm(%s, %s, %s, %s, %s)", x, arg(t, n, 1, 1), arg(t, n, 2, 1),
				       dims, eps);
	default: /* rmsnorm */
		if (k)
			return fg_arena_printf(a, "F.rms_norm(%s, %s, %s, eps=%s)", x, py_shape(a, &norm),
					       arg(t, n, 1, 0), eps);
		t->helpers |= HELP_RMSNORM;
		return fg_arena_printf(a, "_rmsnorm(%s, %s, %s, %s)", x, arg(t, n, 1, 1), dims, eps);
	}
}

/* One statement of forward:   NAME = EXPR  # op at line:col */
static void put_node(Torch *t, int id)
{
	const FgNode *n = &t->g->nodes[id];
	const char *e;

	switch (fg_op_info[n->op].cls) {
	case FG_CLASS_EW:
		e = ew_call(t, n);
		break;
	case FG_CLASS_REDUCE:
		e = reduce_call(t, n);
		break;
	case FG_CLASS_LAYOUT:
		e = layout_call(t, n);
		break;
	case FG_CLASS_MATMUL:
		e = fg_arena_printf(t->a, "torch.matmul(%s, %s)", arg(t, n, 0, 0), arg(t, n, 1, 0));
		break;
	case FG_CLASS_SELECT:
		t->helpers |= HELP_TOPK;
		e = fg_arena_printf(t->a, "_topk(%s, %lld, %d, %s)", arg(t, n, 0, 0), (long long)n->a.sel.k,
				    n->a.sel.axis, n->a.sel.largest ? "True" : "False");
		break;
	case FG_CLASS_SCAN:
		t->helpers |= HELP_SCAN;
		e = fg_arena_printf(t->a, "_scan(%s, %s, %d, %s, %s, reference)", fg_op_info[n->op].torch, arg(t, n, 0, 0),
				    n->a.scan.axis, n->a.scan.exclusive ? "True" : "False",
				    n->a.scan.reverse ? "True" : "False");
		break;
	case FG_CLASS_COMPOSITE:
		e = composite_call(t, n);
		break;
	default:
		return; /* inputs are forward's arguments, numbers are inline */
	}
	fprintf(t->f, "    %s = %s  # %s at %d:%d%s\n", t->names[id], e, fg_op_info[n->op].name, n->loc.line,
		n->loc.col, n->flags & FG_NF_SAVED ? ", @save" : "");
}

/* ------------------------------------------------------------- module */

/* The bytes an ideal program moves (each input and param read once, each
 * output and saved value written once) and the FLOPs of its matmuls: the
 * memory and compute floors of performance.md. */
static void floors(const FgGraph *g, int64_t *bytes, double *flops)
{
	*bytes = 0;
	*flops = 0;
	for (int id = 0; id < g->nnodes; id++) {
		const FgNode *n = &g->nodes[id];
		if (n->op == FG_OP_INPUT || n->op == FG_OP_PARAM || (n->flags & (FG_NF_OUTPUT | FG_NF_SAVED)))
			*bytes = fg_bytes_add(*bytes, fg_value_bytes(g, id));
		if (n->op == FG_OP_MATMUL) {
			const FgShape *a = &g->nodes[n->in[0]].shape;
			*flops += 2.0 * (double)fg_shape_numel(&n->shape) * (double)a->d[a->rank - 1];
		}
	}
}

static void put_header(Torch *t, const char *source)
{
	const FgGraph *g = t->g;
	FILE *f = t->f;

	fprintf(f, "# %s - %s as a PyTorch function, written by `fgc emit-torch`.\n", g->name, source);
	fprintf(f, "# Shapes as bound:");
	for (int i = 0; i < g->nsyms; i++)
		fprintf(f, " %s=%lld", g->syms[i].name, (long long)g->syms[i].value);
	fprintf(f, "%s\n", g->nsyms ? "" : " all static");
	fputs("#\n"
	      "# forward() computes each op in its tensors' dtype, as eager PyTorch does;\n"
	      "# forward(..., reference=True) on float64 inputs computes what `fgc run`\n"
	      "# computes (float64 throughout, rounding only at casts) and leaves the\n"
	      "# results in float64.  make_inputs() draws the inputs as `fgc run --seed`\n"
	      "# and the fgc binaries do, bit for bit.\n"
	      "import math\n\n"
	      "import torch\n"
	      "import torch.nn.functional as F\n\n", f);
	fprintf(f, "GRAPH = \"%s\"\nSOURCE = \"%s\"\n\n", g->name, source);
}

/* A string literal for a path: the characters Python would read as
 * escapes or quotes are dropped rather than escaped. */
static const char *py_string(FgArena *a, const char *s)
{
	char *out = fg_arena_alloc(a, strlen(s) + 1), *o = out;

	for (; *s; s++)
		if (*s != '"' && *s != '\\' && (unsigned char)*s >= ' ' && (unsigned char)*s < 127)
			*o++ = *s;
	return out;
}

static void put_tables(Torch *t)
{
	const FgGraph *g = t->g;
	FILE *f = t->f;
	int64_t bytes;
	double flops;

	fputs("# The inputs and params in declaration order: name -> (role, dtype, shape).\nINPUTS = {\n", f);
	for (int i = 0; i < g->ninputs; i++) {
		const FgNode *n = &g->nodes[g->inputs[i]];
		fprintf(f, "    \"%s\": (\"%s\", %s, %s),\n", n->name, n->op == FG_OP_INPUT ? "input" : "param",
			torch_dtype(n->dt), py_shape(t->a, &n->shape));
	}
	fputs("}\n\n"
	      "# What forward returns: outputs, then @save values as \"saved.NAME\" (the\n"
	      "# names of the fgc binary's .npy files): key -> (dtype, shape, gate), the\n"
	      "# gate of testing.md that compares it with the reference (\"rmse\" when a\n"
	      "# reduction, matmul or composite feeds it, or a value eager torch rounds;\n"
	      "# else elementwise: \"transcendental\" when such an op feeds it, which\n"
	      "# gives f32 the rtol 1e-5, \"elementwise\" with f32's 1.3e-6).\n"
	      "RESULTS = {\n", f);
	for (int i = 0; i < g->noutputs; i++) {
		const FgNode *n = &g->nodes[g->outputs[i]];
		fprintf(f, "    \"%s\": (%s, %s, \"%s\"),\n", n->name, torch_dtype(n->dt),
			py_shape(t->a, &n->shape), gate_name(t, g->outputs[i]));
	}
	for (int id = 0; id < g->nnodes; id++) {
		const FgNode *n = &g->nodes[id];
		if (n->flags & FG_NF_SAVED)
			fprintf(f, "    \"saved.%s\": (%s, %s, \"%s\"),\n", n->name, torch_dtype(n->dt),
				py_shape(t->a, &n->shape), gate_name(t, id));
	}
	floors(g, &bytes, &flops);
	fputs("}\n\n"
	      "# The floors of performance.md: matmul FLOPs, and the bytes an ideal program\n"
	      "# moves (each input and param read once, each result written once).\n", f);
	fprintf(f, "FLOPS = %.0f\nBYTES = %lld\n\n", flops, (long long)bytes);
}

static void put_forward(Torch *t)
{
	const FgGraph *g = t->g;
	FILE *f = t->f;

	fputs("\ndef forward(", f);
	for (int i = 0; i < g->ninputs; i++)
		fprintf(f, "%s, ", t->names[g->inputs[i]]);
	fputs("*, reference=False):\n", f);
	fprintf(f, "    \"\"\"The graph %s: RESULTS by key, in the graph's dtypes (float64 with\n"
		"    reference=True).\"\"\"\n", g->name);
	for (int id = 0; id < g->nnodes; id++)
		put_node(t, id);
	fputs("    return {\n", f);
	for (int i = 0; i < g->noutputs; i++)
		fprintf(f, "        \"%s\": %s,\n", g->nodes[g->outputs[i]].name, t->names[g->outputs[i]]);
	for (int id = 0; id < g->nnodes; id++)
		if (g->nodes[id].flags & FG_NF_SAVED)
			fprintf(f, "        \"saved.%s\": %s,\n", g->nodes[id].name, t->names[id]);
	fputs("    }\n", f);
}

/* ------------------------------------------------------------- helpers */

/* The Python helpers, each written once when forward calls it. */
static const struct {
	unsigned bit;
	const char *text;
} helper_text[] = {
	{HELP_CAST,
	 "def _cast(x, dtype, reference):\n"
	 "    \"\"\"cast(x, dtype=...) as the interpreter rounds: floats to nearest even,\n"
	 "    i32 toward zero and saturating (NaN gives 0), bool as x != 0.  In a\n"
	 "    reference run a float result stays in float64.\"\"\"\n"
	 "    if dtype == torch.bool:\n"
	 "        return x != 0\n"
	 "    if dtype in (torch.int32, torch.int8, torch.uint8) and dtype != x.dtype:\n"
	 "        x = torch.nan_to_num(x.to(torch.float64), nan=0.0)\n"
	 "        lo, hi = {torch.int32: (-2147483648.0, 2147483647.0), torch.int8: (-128.0, 127.0),\n"
	 "                  torch.uint8: (0.0, 255.0)}[dtype]\n"
	 "        return torch.clamp(x, lo, hi).trunc().to(dtype)\n"
	 "    if reference and dtype.is_floating_point:\n"
	 "        return _round(x.to(torch.float64), dtype)\n"
	 "    if dtype in _F8:  # e4m3 saturates, which torch's conversion does not\n"
	 "        return _round(x.to(torch.float64), dtype).to(dtype)\n"
	 "    return x.to(dtype)\n"},
	{HELP_CONST,
	 "def _const(value, dtype, like, reference):\n"
	 "    \"\"\"A number where torch wants a tensor (an op whose operands are all\n"
	 "    numbers): a 0-d tensor of the dtype it took, float64 in a reference\n"
	 "    run, on like's device.\"\"\"\n"
	 "    if reference and dtype.is_floating_point:\n"
	 "        dtype = torch.float64\n"
	 "    return torch.tensor(value, dtype=dtype, device=None if like is None else like.device)\n"},
	{HELP_DROPOUT,
	 "def _dropout(x, p, seed):\n"
	 "    \"\"\"dropout(x, p, seed): keeps element i (C order) when the first Philox\n"
	 "    word of key seed, counter (i, 0, 0, 0) is at least ceil(p * 2^32), and\n"
	 "    divides what it keeps by 1 - p: the mask every fgc backend draws.\"\"\"\n"
	 "    idx = torch.arange(x.numel(), dtype=torch.int64, device=x.device).reshape(x.shape)\n"
	 "    keep = _philox_word(seed, idx, 0, 0) >= math.ceil(p * 4294967296.0)\n"
	 "    return torch.where(keep, x / (1.0 - p), 0.0)\n"},
	{HELP_SOFTMAX,
	 "def _softmax(x, dims):\n"
	 "    \"\"\"softmax over several axes, as passes/expand.c writes it out.\"\"\"\n"
	 "    e = torch.exp(x - torch.amax(x, dim=dims, keepdim=True))\n"
	 "    return e / torch.sum(e, dim=dims, keepdim=True)\n"},
	{HELP_LOG_SOFTMAX,
	 "def _log_softmax(x, dims):\n"
	 "    \"\"\"log_softmax over several axes, as passes/expand.c writes it out.\"\"\"\n"
	 "    s = x - torch.amax(x, dim=dims, keepdim=True)\n"
	 "    return s - torch.log(torch.sum(torch.exp(s), dim=dims, keepdim=True))\n"},
	{HELP_LAYERNORM,
	 "def _layernorm(x, g, b, dims, eps):\n"
	 "    \"\"\"layernorm where F.layer_norm does not apply (axes other than the\n"
	 "    last ones, or g and b broadcast), as passes/expand.c writes it out.\"\"\"\n"
	 "    d = x - torch.mean(x, dim=dims, keepdim=True)\n"
	 "    return d * torch.rsqrt(torch.mean(d * d, dim=dims, keepdim=True) + eps) * g + b\n"},
	{HELP_RMSNORM,
	 "def _rmsnorm(x, w, dims, eps):\n"
	 "    \"\"\"rmsnorm where F.rms_norm does not apply (axes other than the last\n"
	 "    ones, or w broadcasts), as passes/expand.c writes it out.\"\"\"\n"
	 "    return x * torch.rsqrt(torch.mean(x * x, dim=dims, keepdim=True) + eps) * w\n"},
	{HELP_PROD,
	 "def _prod(x, dims, keepdim):\n"
	 "    \"\"\"prod over several axes (torch.prod takes one), the last first.\"\"\"\n"
	 "    for d in sorted(dims, reverse=True):\n"
	 "        x = torch.prod(x, dim=d, keepdim=keepdim)\n"
	 "    return x\n"},
	{HELP_IOTA,
	 "def _iota(shape, axis, dtype, like, reference):\n"
	 "    \"\"\"iota(shape, axis, dtype): each element its index along axis (float64\n"
	 "    in a reference run, for a float dtype), on like's device.\"\"\"\n"
	 "    if reference and dtype.is_floating_point:\n"
	 "        dtype = torch.float64\n"
	 "    r = torch.arange(shape[axis], dtype=torch.int64, device=None if like is None else like.device)\n"
	 "    r = r.reshape([shape[axis] if d == axis else 1 for d in range(len(shape))])\n"
	 "    return torch.broadcast_to(r, shape).to(dtype)\n"},
	{HELP_GATHER,
	 "def _gather(x, idx, axis):\n"
	 "    \"\"\"gather(x, idx, axis): NumPy's take, negative indices from the end;\n"
	 "    torch raises on an index out of range.\"\"\"\n"
	 "    i = torch.where(idx < 0, idx + x.shape[axis], idx).to(torch.int64)\n"
	 "    y = torch.index_select(x, axis, i.reshape(-1))\n"
	 "    return y.reshape(tuple(x.shape[:axis]) + tuple(idx.shape) + tuple(x.shape[axis + 1:]))\n"},
	{HELP_TAKE,
	 "def _take_along_axis(x, idx, axis):\n"
	 "    \"\"\"take_along_axis(x, idx, axis): NumPy's, negative indices from the end,\n"
	 "    idx and x broadcast on the other axes.\"\"\"\n"
	 "    i = torch.where(idx < 0, idx + x.shape[axis], idx).to(torch.int64)\n"
	 "    return torch.take_along_dim(x, i, dim=axis)\n"},
	{HELP_SCAN,
	 "def _scan(f, x, dim, exclusive, reverse, reference):\n"
	 "    \"\"\"cumsum or cumprod (f) along dim: floats accumulate in float32 (float64\n"
	 "    in a reference run), integers wrap into their dtype; exclusive: each\n"
	 "    element combines those before it; reverse: from the axis's end.\"\"\"\n"
	 "    if reverse:\n"
	 "        x = torch.flip(x, (dim,))\n"
	 "    acc = torch.int64 if not x.is_floating_point() else torch.float64 if reference else torch.float32\n"
	 "    y = f(x, dim=dim, dtype=acc)\n"
	 "    if exclusive and y.shape[dim] > 0:\n"
	 "        first = torch.zeros_like if f is torch.cumsum else torch.ones_like\n"
	 "        y = torch.cat((first(y.narrow(dim, 0, 1)), y.narrow(dim, 0, y.shape[dim] - 1)), dim=dim)\n"
	 "    if reverse:\n"
	 "        y = torch.flip(y, (dim,))\n"
	 "    return y.to(x.dtype)\n"},
	{HELP_TOPK,
	 "def _topk(x, k, dim, largest):\n"
	 "    \"\"\"topk's indices (i32) along dim: the k first, the larger (or smaller)\n"
	 "    value first, a NaN above every number, equal values by lower index (a\n"
	 "    stable sort: torch.topk does not promise that order among ties).\"\"\"\n"
	 "    i = torch.sort(x, dim=dim, descending=largest, stable=True)[1]\n"
	 "    return i.narrow(dim, 0, k).to(torch.int32)\n"},
	{HELP_ARGEXT,
	 "def _argext(f, x, dims, keepdim):\n"
	 "    \"\"\"argmax or argmin (f) over several axes: the index in C order among the\n"
	 "    reduced elements (the first of equal ones, a NaN's where there is one),\n"
	 "    as i32.\"\"\"\n"
	 "    kept = [d for d in range(len(x.shape)) if d not in dims]\n"
	 "    y = x.permute(*(kept + sorted(dims))).reshape([x.shape[d] for d in kept] + [-1])\n"
	 "    i = f(y, dim=-1).to(torch.int32)\n"
	 "    if keepdim:\n"
	 "        i = i.reshape([1 if d in dims else x.shape[d] for d in range(len(x.shape))])\n"
	 "    return i\n"},
};

/* make_inputs and what it needs, in every module. */
static const char inputs_text[] =
	"def make_inputs(seed=0, device=\"cpu\"):\n"
	"    \"\"\"The inputs and params, name -> tensor in declaration order, as\n"
	"    `fgc run --seed SEED` and the fgc binaries draw them\n"
	"    (runtime/fgrt_philox.h): element i of the k-th declared tensor takes\n"
	"    u = (w >> 8) / 2^24, w the first Philox-4x32-10 word of key seed and\n"
	"    counter (i, k, 0x46474331); floats get 2u - 1, times 1/sqrt(K) for a\n"
	"    float param of rank >= 2 with second-to-last dim K, rounded once to\n"
	"    the dtype; i32 and i8 get floor(17u) - 8, u8 floor(17u); bool gets\n"
	"    u < 0.5.\"\"\"\n"
	"    return {name: _draw(seed, k, role, dtype, shape, device)\n"
	"            for k, (name, (role, dtype, shape)) in enumerate(INPUTS.items())}\n"
	"\n\n"
	"_CHUNK = 1 << 24  # elements drawn at once: bounds the int64 temporaries\n"
	"\n\n"
	"def _draw(seed, k, role, dtype, shape, device):\n"
	"    n = math.prod(shape)\n"
	"    out = torch.empty(n, dtype=dtype, device=device)\n"
	"    scale = 1.0\n"
	"    if role == \"param\" and len(shape) >= 2 and dtype.is_floating_point:\n"
	"        scale = 1.0 / math.sqrt(shape[-2])\n"
	"    for lo in range(0, n, _CHUNK):\n"
	"        hi = min(n, lo + _CHUNK)\n"
	"        idx = torch.arange(lo, hi, dtype=torch.int64, device=device)\n"
	"        u = (_philox_word(seed, idx, k, 0x46474331) >> 8).to(torch.float64) * 2.0**-24\n"
	"        if dtype.is_floating_point:\n"
	"            out[lo:hi] = _round((2.0 * u - 1.0) * scale, dtype)\n"
	"        elif dtype == torch.uint8:\n"
	"            out[lo:hi] = torch.floor(17.0 * u)\n"
	"        elif dtype in (torch.int32, torch.int8):\n"
	"            out[lo:hi] = torch.floor(17.0 * u) - 8.0\n"
	"        else:\n"
	"            out[lo:hi] = u < 0.5\n"
	"    return out.reshape(shape)\n"
	"\n\n"
	"_MASK32 = 0xFFFFFFFF\n"
	"\n\n"
	"def _mulhilo(m, x):\n"
	"    \"\"\"The high and low words of m * x for 32-bit words m and x, in int64\n"
	"    arithmetic that cannot overflow: x is split into 16-bit halves.\"\"\"\n"
	"    lo = m * (x & 0xFFFF)\n"
	"    hi = m * (x >> 16)\n"
	"    mid = lo + ((hi & 0xFFFF) << 16)\n"
	"    return (hi >> 16) + (mid >> 32), mid & _MASK32\n"
	"\n\n"
	"def _philox_word(seed, idx, c2, c3):\n"
	"    \"\"\"The first output word of Philox-4x32-10 for key (seed low word, seed\n"
	"    high word) and counter (idx low word, idx high word, c2, c3), as\n"
	"    runtime/fgrt_philox.h computes it; idx is an int64 tensor.\"\"\"\n"
	"    c0, c1 = idx & _MASK32, idx >> 32\n"
	"    k0, k1 = seed & _MASK32, (seed >> 32) & _MASK32\n"
	"    for _ in range(10):\n"
	"        hi0, lo0 = _mulhilo(0xD2511F53, c0)\n"
	"        hi1, lo1 = _mulhilo(0xCD9E8D57, c2)\n"
	"        c0, c1, c2, c3 = c1 ^ hi1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0\n"
	"        k0 = (k0 + 0x9E3779B9) & _MASK32\n"
	"        k1 = (k1 + 0xBB67AE85) & _MASK32\n"
	"    return c0\n"
	"\n\n"
	"# significand bits, smallest normal exponent, largest finite value\n"
	"_FORMATS = {\n"
	"    torch.float32: (24, -126, 3.4028234663852886e38, False),\n"
	"    torch.float16: (11, -14, 65504.0, False),\n"
	"    torch.bfloat16: (8, -126, 3.3895313892515355e38, False),\n"
	"}\n"
	"_F8 = ()  # the 8-bit floats, in a torch that has them\n"
	"if hasattr(torch, \"float8_e4m3fn\"):\n"
	"    _F8 = (torch.float8_e4m3fn, torch.float8_e5m2)\n"
	"    _FORMATS[torch.float8_e4m3fn] = (4, -6, 448.0, True)  # no infinity: saturates\n"
	"    _FORMATS[torch.float8_e5m2] = (3, -14, 57344.0, False)\n"
	"\n\n"
	"def _round(x, dtype):\n"
	"    \"\"\"float64 x rounded to the nearest value of dtype, ties to even,\n"
	"    straight from float64 (through float32 it would round twice), kept in\n"
	"    float64: how fgc rounds drawn inputs and casts.\"\"\"\n"
	"    sig, emin, maxfin, saturates = _FORMATS[dtype]\n"
	"    if saturates:\n"
	"        x = torch.where(torch.isnan(x), x, torch.clamp(x, -maxfin, maxfin))\n"
	"    e = (x.view(torch.int64) >> 52) & 0x7FF  # |x| < 2^(e - 1022): frexp's exponent\n"
	"    e = torch.clamp(e - 1022, min=emin + 1)  # subnormals share the smallest ulp\n"
	"    ulp = ((e - sig + 1023) << 52).view(torch.float64)\n"
	"    r = torch.round(x / ulp) * ulp\n"
	"    r = torch.where(r.abs() > maxfin, torch.copysign(torch.full_like(x, math.inf), x), r)\n"
	"    return torch.where(torch.isfinite(x), r, x)\n";

static void put_helpers(Torch *t)
{
	fputs("\n\n# ---------------------------------------------------------------- inputs\n\n", t->f);
	fputs(inputs_text, t->f);
	if (t->helpers)
		fputs("\n\n# ---------------------------------------------------------------- helpers\n", t->f);
	for (size_t i = 0; i < sizeof helper_text / sizeof helper_text[0]; i++)
		if (t->helpers & helper_text[i].bit)
			fprintf(t->f, "\n\n%s", helper_text[i].text);
}

static void put_module(Torch *t, const char *source)
{
	put_header(t, source);
	put_tables(t);
	put_forward(t);
	put_helpers(t);
}

int fg_torch_emit(const FgGraph *g, const char *out, const char *source, FgDiag *d)
{
	Torch t = {0};
	char *tmp = NULL;
	int rc = 1;

	t.g = g;
	t.a = g->arena;
	t.names = python_names(g);
	t.rounded = fg_arena_alloc(t.a, (size_t)g->nnodes + 1);
	t.rmse = fg_arena_alloc(t.a, (size_t)g->nnodes + 1);
	t.gate = fg_arena_alloc(t.a, (size_t)g->nnodes + 1);
	find_gates(&t);
	source = py_string(t.a, source);
	if (!out) {
		t.f = stdout;
		put_module(&t, source);
		return fflush(stdout) == 0 && !ferror(stdout) ? 0 : 1;
	}
	/* written under a temporary name and renamed: no half-written module */
	tmp = fg_arena_printf(t.a, "%s.tmp.%ld", out, (long)getpid());
	t.f = fopen(tmp, "w");
	if (!t.f) {
		fg_error(d, (FgLoc){0, 0}, "cannot write '%s': %s", out, strerror(errno));
		return 1;
	}
	put_module(&t, source);
	int bad = ferror(t.f);
	if (fclose(t.f) != 0 || bad)
		fg_error(d, (FgLoc){0, 0}, "cannot write '%s'", out);
	else if (rename(tmp, out) != 0)
		fg_error(d, (FgLoc){0, 0}, "cannot write '%s': %s", out, strerror(errno));
	else
		rc = 0;
	if (rc)
		remove(tmp);
	return rc;
}
