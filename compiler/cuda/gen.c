/*
 * gen.c - a value at an index, as C expressions in the kernel's scopes.
 *
 * A group is a cone of elementwise and layout ops (plus reductions, or a
 * matmul); every value it writes is computed per element by cu_gen(),
 * which evaluates a node at an index (an Ix: one C expression per
 * coordinate, and the C-order flat index when it is known) by evaluating
 * its operands at the indices the op maps it to: broadcasting drops and
 * zeroes coordinates, transpose permutes them, slice offsets one, reshape
 * goes through the flat index, concat reads every operand at a clamped
 * index and selects.  A value already computed at the same index is
 * reused (memo); a value reached at two indices is computed twice, which
 * is always correct.
 *
 * Loads.  Operands outside the group are loaded from memory and converted
 * to the compute type (f32 for the float dtypes and bool, int for i32);
 * lanes that sit side by side in memory, aligned, become one vector load
 * (fg_ldv in runtime/fg_device.cuh), shared by the lanes through the memo.
 * The attention kernel's staged score operand is read from shared memory
 * instead (Kern.st_id; compiler/cuda/attention.c).
 *
 * Ops.  An elementwise op is FG_OPS' cuda expression over its operands,
 * except the transcendental ops of dtype f16 and bf16, which take the
 * fast forms of the FAST table (unless --accurate-math): each is within
 * an eighth of the dtype's unit roundoff, so what is stored is rounded as
 * the accurate form's would be, give or take one ulp (docs/testing.md).
 */
#include <math.h>
#include <string.h>

#include "cuda.h"
#include "fgrt_philox.h"

const char *cu_memo_key(Kern *k, int id, const Ix *x)
{
	size_t len = 16;
	for (int i = 0; i < x->rank; i++)
		len += strlen(x->c[i]) + 1;
	char *s = fg_arena_alloc(k->a, len);
	char *p = s;
	p += sprintf(p, "%d:", id);
	for (int i = 0; i < x->rank; i++)
		p += sprintf(p, "%s,", x->c[i]);
	(void)p;
	return s;
}

/* The fast form of an op whose result is f16 or bf16 (runtime/fg_device.cuh;
 * their errors measured over every input by tests/runtime/fast_math.cu).
 * Ops not here keep their accurate form in every dtype: sin, cos and log's
 * fast forms miss the eighth of an ulp, and rcp.approx flushes bf16's
 * subnormals, whose reciprocals are finite (docs/testing.md). */
static const struct {
	FgOp op;
	const char *cuda;
} FAST[] = {
	{FG_OP_EXP, "fg_fast_exp(a)"},
	{FG_OP_SIGMOID, "fg_fast_sigmoid(a)"},
	{FG_OP_SILU, "fg_fast_silu(a)"},
	{FG_OP_GELU, "fg_fast_gelu(a)"},
	{FG_OP_GELU_TANH, "fg_fast_gelu_tanh(a)"},
	{FG_OP_TANH, "fg_fast_tanh(a)"},
};

/* Whether node n takes its op's fast form (FAST). */
static int fast_form(const Kern *k, const FgNode *n)
{
	return (n->dt == FG_DT_F16 || n->dt == FG_DT_BF16) && !k->plan->opt.accurate_math;
}

/* Node n's CUDA expression over a, b, c: FG_OPS' column, or its fast form. */
static const char *op_form(const Kern *k, const FgNode *n)
{
	if (fast_form(k, n))
		for (size_t i = 0; i < sizeof FAST / sizeof FAST[0]; i++)
			if (FAST[i].op == n->op)
				return FAST[i].cuda;
	return fg_op_info[n->op].cuda;
}

/* The SASS instructions one call of an op's form takes, accurate (FG_OPS'
 * cuda column) and fast (FAST's, where it has one): each form's inline
 * code, the difference between 16 chained calls and 8, as tools/op_issue.py
 * prints these rows (sm_90a, nvcc -O3; a division's slow path and sin's
 * far one are out of line).  An op not here is about one.  A gauge of
 * the arithmetic an element costs (cu_issue_per_byte), not a schedule. */
static const struct {
	FgOp op;
	int accurate, fast;
} ISSUE[] = {
	{FG_OP_SIN, 31, 31},       {FG_OP_COS, 32, 32},        {FG_OP_TAN, 26, 26},
	{FG_OP_EXP, 8, 2},         {FG_OP_EXPM1, 28, 28},
	{FG_OP_LOG, 25, 25},       {FG_OP_LOG2, 27, 27},       {FG_OP_LOG1P, 29, 29},
	{FG_OP_TANH, 15, 1},       {FG_OP_SIGMOID, 24, 4},     {FG_OP_SILU, 24, 5},
	{FG_OP_GELU, 25, 14},      {FG_OP_GELU_TANH, 22, 8},   {FG_OP_ERF, 21, 21},
	{FG_OP_POW, 76, 76},       {FG_OP_ASIN, 22, 22},       {FG_OP_ACOS, 23, 23},
	{FG_OP_ATAN, 18, 18},      {FG_OP_SINH, 23, 23},       {FG_OP_COSH, 15, 15},
	{FG_OP_ASINH, 41, 41},     {FG_OP_ACOSH, 43, 43},      {FG_OP_ATANH, 37, 37},
	{FG_OP_SOFTPLUS, 78, 78},  {FG_OP_MISH, 94, 94},       {FG_OP_ELU, 32, 32},
	{FG_OP_DIV, 16, 16},       {FG_OP_RECIP, 13, 13},      {FG_OP_SQRT, 13, 13},
	{FG_OP_RSQRT, 4, 4},
};

/* The instructions a loop kernel's element costs (ISSUE over the group's
 * elementwise members) over the bytes it reads and writes: past the
 * machine's balance (about 10 on an H100), the arithmetic, not the
 * traffic, bounds the kernel. */
double cu_issue_per_byte(const Kern *k)
{
	double issue = 0, bytes = 0;
	for (int i = 0; i < k->gr->nnodes; i++) {
		const FgNode *n = &k->g->nodes[k->gr->nodes[i]];
		if (!cu_is_member(k, k->gr->nodes[i]) || fg_op_info[n->op].cls != FG_CLASS_EW)
			continue;
		int c = 1;
		for (size_t j = 0; j < sizeof ISSUE / sizeof ISSUE[0]; j++)
			if (ISSUE[j].op == n->op)
				c = fast_form(k, n) ? ISSUE[j].fast : ISSUE[j].accurate;
		issue += c;
	}
	for (int r = 0; r < k->gr->nreads + k->gr->nwrites; r++)
		bytes += fg_dtype_size[k->g->nodes[r < k->gr->nreads ? k->gr->reads[r] : k->gr->writes[r - k->gr->nreads]].dt];
	return bytes > 0 ? issue / bytes : issue;
}

/* A new variable of node id's compute type holding expr, in scope lv; an
 * i8 or u8 result wraps to 8 bits, as the interpreter's (fg_wrap_int). */
const char *cu_wrap_int(FgArena *a, FgDtype dt, const char *expr)
{
	if (dt != FG_DT_I8 && dt != FG_DT_U8)
		return expr;
	return cu_fmt(a, "(int)(%s)%s", dt == FG_DT_I8 ? "signed char" : "unsigned char", cu_paren(a, expr));
}

/* x where expr is the one call fn(x), else NULL. */
static const char *call_argument(FgArena *a, const char *expr, const char *fn)
{
	size_t nf = strlen(fn), ne = strlen(expr);
	if (strncmp(expr, fn, nf) != 0 || expr[nf] != '(' || expr[ne - 1] != ')')
		return NULL;
	int depth = 0;
	for (size_t i = nf; i < ne; i++) {
		depth += expr[i] == '(' ? 1 : expr[i] == ')' ? -1 : 0;
		if (depth == 0 && i != ne - 1)
			return NULL;    /* fn(x) op (y) */
	}
	return cu_fmt(a, "%.*s", (int)(ne - nf - 2), expr + nf + 1);
}

static Val define(Kern *k, int id, int lv, const char *expr)
{
	const FgNode *n = &k->g->nodes[id];
	if (n->op != FG_OP_CAST)
		expr = cu_wrap_int(k->a, n->dt, expr);
	const char *v = cu_fresh(k, lv, cu_fmt(k->a, "v_%s", cu_name(k, id)));
	cu_kline(k, lv, NULL, "const %s %s = %s;", fg_dtype_info[n->dt].cuda, v, expr);
	/* a value rounded to a narrow float dtype, fg_round_DT(x): its store
	 * converts x (cu_stored_form) */
	const char *x = call_argument(k->a, expr, cu_fmt(k->a, "fg_round_%s", fg_dtype_name[n->dt]));
	if (x) {
		Memo m = {-1, cu_fmt(k->a, "U%s %s", v, fg_dtype_name[n->dt]), {x, lv}};
		fg_vec_push(k->a, &k->memo, m);
	}
	return (Val){v, lv};
}

/* What a store of value v converts to dtype dt: the unrounded x where v
 * was defined as fg_round_DT(x) with DT dt (another dtype, a wider one
 * above all, must store the rounded value; converting the rounded value
 * again costs two conversions an element, which nvcc keeps: f16's F2FP
 * and HADD2 in quant_int8_f16's SASS), else v. */
const char *cu_stored_form(Kern *k, Val v, FgDtype dt)
{
	const char *key = cu_fmt(k->a, "U%s %s", v.e, fg_dtype_name[dt]);
	for (int i = k->memo.n - 1; i >= 0; i--)
		if (k->memo.v[i].id == -1 && strcmp(k->memo.v[i].key, key) == 0)
			return k->memo.v[i].v.e;
	return v.e;
}

/* The read (its index in gr->reads) that a row kernel keeping its row in
 * shared memory holds there, when x (lane 0) is where the kernel's row
 * element sits in it: its flat index is the space's (Kern.stage_lin).
 * -1 for any other load. */
static int staged_read(Kern *k, int id, const Ix *x0)
{
	if (!k->stage_lin || id == k->mm || strcmp(cu_ix_linear(k, x0, cu_shape_of(k, id)), k->stage_lin) != 0)
		return -1;
	for (int r = 0; r < k->gr->nreads; r++)
		if (k->gr->reads[r] == id)
			return r;
	return -1;
}

/* Whether the load of node id at x0 (lane 0) is the attention kernel's
 * staged operand at the functor's own pair: then the kernel holds it in
 * shared memory at st_ (Kern.st_id). */
static int at_stage(const Kern *k, int id, const Ix *x0)
{
	if (id != k->st_id || x0->rank != k->st_at.rank)
		return 0;
	for (int i = 0; i < x0->rank; i++)
		if (strcmp(x0->c[i], k->st_at.c[i]) != 0)
			return 0;
	return 1;
}

/* The vector of stored elements (from pointer p) that lane x of a read
 * of node id belongs to: one load for all the lanes.  In a row kernel
 * that keeps its row in shared memory, a read at the row's element comes
 * from memory in the first pass that needs it, which puts it in the
 * read's array there, and from that array in later passes. */
static Val load_vector(Kern *k, int id, const char *p, const Ix *x)
{
	const FgNode *n = &k->g->nodes[id];
	int vw = x->vw > 1 ? x->vw : 1;
	Ix x0 = cu_lane0(k, x);
	const char *key = cu_fmt(k->a, "V%s", cu_memo_key(k, id, &x0));
	for (int i = k->memo.n - 1; i >= 0; i--)
		if (k->memo.v[i].id == id && strcmp(k->memo.v[i].key, key) == 0)
			return k->memo.v[i].v;
	int lv = cu_ix_level(&x0, &n->shape);
	const char *w = cu_fresh(k, lv, cu_fmt(k->a, "w_%s", cu_name(k, id)));
	/* a float gemm's result waits in scratch as f32 */
	const char *t = id == k->mm && n->dt != FG_DT_I32 ? "float" : fg_dtype_info[n->dt].cuda_store;
	int r = staged_read(k, id, &x0);
	if (at_stage(k, id, &x0)) {
		cu_kline(k, lv, NULL, "const FgVec<%s, %d> %s = fg_ldv<%d>((const %s *)st_);", t, vw, w, vw, t);
	} else if (r >= 0 && k->staged[r]) {
		cu_kline(k, lv, NULL, "const FgVec<%s, %d> %s = fg_ldv<%d>(%s + %s);", t, vw, w, vw, k->stage_sm[r],
			 k->stage_off);
	} else {
		cu_kline(k, lv, NULL, "const FgVec<%s, %d> %s = fg_ldv%s<%d>(%s + %s);", t, vw, w, k->nc ? "_nc" : "",
			 vw, p, cu_paren(k->a, cu_ix_linear(k, &x0, &n->shape)));
	}
	if (r >= 0 && !k->staged[r]) {
		if (!k->stage_sm[r]) {
			k->stage_sm[r] = cu_fresh(k, 0, cu_fmt(k->a, "sm_%s", cu_name(k, id)));
			cu_kline(k, 0, NULL, "%s *const %s = (%s *)(fg_smem + %lld);", t, k->stage_sm[r], t,
				 (long long)k->smem);
			k->smem += (k->stage_len * fg_dtype_size[n->dt] + 15) / 16 * 16;
		}
		cu_kline(k, lv, NULL, "fg_stv(%s + %s, %s);", k->stage_sm[r], k->stage_off, w);
	}
	Memo m = {id, key, {w, lv}};
	fg_vec_push(k->a, &k->memo, m);
	return m.v;
}

/* Loads node id (a read of the group, or the gemm's result) at x. */
Val cu_load(Kern *k, int id, const Ix *x)
{
	const FgShape *s = cu_shape_of(k, id);
	const char *p;
	if (id == k->mm && k->acc[0]) {
		return (Val){k->acc[x->vw > 1 ? x->lane : 0], 0};
	} else if (id == k->mm) {
		p = cu_fmt(k->a, "mm_%s", cu_name(k, id));
	} else {
		p = cu_tensor_param(k, id);
		int found = 0;
		for (int r = 0; r < k->gr->nreads; r++)
			if (k->gr->reads[r] == id) {
				k->used[r] = 1;
				found = 1;
			}
		if (!found) {
			cu_kern_error(k, id, "'%s' is neither computed by the group nor read by it",
				   k->plan->names[id]);
			return (Val){"0", 0};
		}
	}
	const FgNode *n = &k->g->nodes[id];
	int one = x->vw < 2 && staged_read(k, id, x) >= 0;        /* a vector of one */
	if (one || cu_lanes_contiguous(x, s)) {
		Val w = load_vector(k, id, p, x);
		/* a lane stored narrower than it computes, loaded in a scope
		 * outside this one (a row kernel's parameter row, loaded before
		 * the row loop), where the kernel asks: widened where it is
		 * used, so the loop holds the packed vector, not a float a lane */
		if (k->widen_at_use && w.lv < k->depth && fg_dtype_size[n->dt] < (int)sizeof(float)) {
			cu_path(k->E, k->gi, CU_PATH_ROW_PACKED);
			return (Val){cu_fmt(k->a, "fg_lane<%d>(%s)", one ? 0 : x->lane, w.e), w.lv};
		}
		const char *v = cu_fresh(k, w.lv, cu_fmt(k->a, "v_%s", cu_name(k, id)));
		cu_kline(k, w.lv, NULL, "const %s %s = fg_lane<%d>(%s);", fg_dtype_info[n->dt].cuda, v, one ? 0 : x->lane,
			 w.e);
		return (Val){v, w.lv};
	}
	int lv = cu_ix_level(x, s);
	const char *v = cu_fresh(k, lv, cu_fmt(k->a, "v_%s", cu_name(k, id)));
	if (k->nc)
		cu_kline(k, lv, NULL, "const %s %s = fg_read(fg_ldg(%s + %s));", fg_dtype_info[n->dt].cuda, v, p,
		      cu_paren(k->a, cu_ix_linear(k, x, s)));
	else
		cu_kline(k, lv, NULL, "const %s %s = fg_read(%s[%s]);", fg_dtype_info[n->dt].cuda, v, p, cu_ix_linear(k, x, s));
	return (Val){v, lv};
}

/* The op's CUDA expression (FG_OPS' cuda column) with a, b, c replaced by
 * the operands' expressions, parenthesized where they need it. */
/* Form t over node n's operands (and its scalar attribute, k). */
static const char *subst(FgArena *a, const char *t, const FgNode *n, const Val *ops)
{
	const char *e[4] = {"0", "0", "0", fg_op_scalar(n->op) ? cu_literal(a, FG_DT_F32, n->a.k) : "0"};
	for (int i = 0; i < n->nin && i < 3; i++)
		e[i] = cu_paren(a, ops[i].e);
	return fg_op_subst(a, t, e, 4);
}

static const char *cast_expr(Kern *k, FgDtype to, FgDtype from, const char *a)
{
	int fromint = fg_dtype_is_int(from);
	a = cu_paren(k->a, a);
	switch (to) {
	case FG_DT_F32:
		return fromint ? cu_fmt(k->a, "(float)%s", a) : a;
	case FG_DT_F16:
		return cu_fmt(k->a, fromint ? "fg_round_f16((float)%s)" : "fg_round_f16(%s)", a);
	case FG_DT_BF16:
		return cu_fmt(k->a, fromint ? "fg_round_bf16((float)%s)" : "fg_round_bf16(%s)", a);
	case FG_DT_I32:
		return fromint ? a : cu_fmt(k->a, "fg_cast_i32(%s)", a);
	case FG_DT_I8:  /* saturating, from an int as from a float */
	case FG_DT_U8:
		return to == from ? a : cu_fmt(k->a, "fg_cast_%s(%s)", fg_dtype_name[to], a);
	case FG_DT_F8E4M3:
	case FG_DT_F8E5M2:
		return cu_fmt(k->a, fromint ? "fg_round_%s((float)%s)" : "fg_round_%s(%s)", fg_dtype_name[to], a);
	default:
		return cu_fmt(k->a, fromint ? "(%s != 0 ? 1.0f : 0.0f)" : "(%s != 0.0f ? 1.0f : 0.0f)", a);
	}
}

/* Whether the divisor ops[1] of float division n computed in scope lv
 * is the same for many quotients: a value of an outer scope, or a
 * reduction's result (a row's sum divides every element of the row).
 * A literal (1.5f, (-2.0f), CUDART_INF_F) nvcc divides by exactly, in
 * about 16 instructions and a slow path; it counts only in an attention
 * group, whose score and probability ops feed the softmax and the second
 * matmul, continuous in them (a softcap's s / c a score), and only where
 * its reciprocal is a normal f32. */
static int uniform_divisor(const Kern *k, const FgNode *n, const Val *ops, int lv)
{
	const char *d = ops[1].e;
	if (!((d[0] >= 'a' && d[0] <= 'z') || d[0] == '_')) {
		double c = k->g->nodes[n->in[1]].a.value;
		return k->gr->kind == FG_GROUP_ATTENTION && k->g->nodes[n->in[1]].op == FG_OP_CONST &&
		       fabs(c) >= 0x1p-126 && fabs(c) <= 0x1p126;
	}
	if (ops[1].lv < lv)
		return 1;
	for (int i = 0; i < k->reds.n; i++)
		if (k->reds.v[i].var && strcmp(k->reds.v[i].var, d) == 0)
			return 1;
	return 0;
}

/* How the readers of node id round it to an integer: 0 none, else where
 * a value's rounding changes, which a quotient there must get as the
 * division does (int8 quantization's round(x * 127 / max|x|) of f16
 * values is often exactly a half): ROUND_HALVES for round, ROUND_INTEGERS
 * for floor, ceil, trunc and a cast to an integer dtype, ROUND_BOTH for
 * both.  Readers in other groups count too: they round the value this
 * group stores. */
enum { ROUND_HALVES = 1, ROUND_INTEGERS = 2, ROUND_BOTH = 3 };
static int rounded_later(const Kern *k, int id)
{
	int how = 0;
	for (int i = 0; i < k->g->nnodes; i++) {
		const FgNode *c = &k->g->nodes[i];
		if (c->nin < 1 || c->in[0] != id)
			continue;
		if (c->op == FG_OP_ROUND)
			how |= ROUND_HALVES;
		if (c->op == FG_OP_FLOOR || c->op == FG_OP_CEIL || c->op == FG_OP_TRUNC ||
		    (c->op == FG_OP_CAST && fg_dtype_is_int(c->dt)))
			how |= ROUND_INTEGERS;
	}
	return how;
}

/* 1 / d, once, where d is defined: a division by a uniform divisor becomes
 * a multiplication (within 2 ulp of the quotient in f32, far inside every
 * float dtype's tolerance), which costs one instruction, not a dozen. */
static const char *reciprocal(Kern *k, Val d, int rounded)
{
	const char *key = cu_fmt(k->a, "R%d%s", rounded, d.e);
	for (int i = k->memo.n - 1; i >= 0; i--)
		if (k->memo.v[i].id == -1 && strcmp(k->memo.v[i].key, key) == 0)
			return k->memo.v[i].v.e;
	const int named = ((d.e[0] >= 'a' && d.e[0] <= 'z') || d.e[0] == '_') && cu_simple(d.e); /* not a literal */
	const char *r = cu_fresh(k, d.lv, cu_fmt(k->a, "rcp_%s", named ? d.e : "d"));
	cu_kline(k, d.lv, r, rounded ? "const float %s = fg_rcp_rn(%s);" : "const float %s = 1.0f / %s;", r,
		 rounded ? d.e : cu_paren(k->a, d.e));
	Memo m = {-1, key, {r, d.lv}};
	fg_vec_push(k->a, &k->memo, m);
	return r;
}

/* The device record of node id's run-time check (fg_fault). */
static const char *fault_record(Kern *k, int id)
{
	FG_ASSERT(k->E->fault[id] >= 0);
	return cu_fmt(k->a, "&fg_faults[%d]", k->E->fault[id]);
}

static Val gen_ew(Kern *k, int id, const Ix *x)
{
	const FgNode *n = &k->g->nodes[id];
	Val ops[3];
	int lv = 0;
	if (n->op == FG_OP_IOTA) {      /* the coordinate itself */
		const char *c = x->c[n->a.axis];
		int clv = strcmp(c, "0") == 0 ? 0 : x->lv[n->a.axis];
		return define(k, id, clv, cu_fmt(k->a, "(%s)%s", fg_dtype_info[n->dt].cuda, cu_paren(k->a, c)));
	}
	FG_ASSERT(n->nin >= 1 && n->nin <= 3);
	for (int j = 0; j < n->nin; j++) {
		Ix y = cu_ix_bcast(x, &n->shape, cu_shape_of(k, n->in[j]));
		ops[j] = cu_gen(k, n->in[j], &y);
		if (ops[j].lv > lv)
			lv = ops[j].lv;
	}
	const char *e;
	switch (n->op) {
	case FG_OP_IDENTITY:
		return ops[0];
	case FG_OP_CAST:
		e = cast_expr(k, n->dt, k->g->nodes[n->in[0]].dt, ops[0].e);
		break;
	case FG_OP_DROPOUT: {
		/* The mask of element i (C order of this node): Philox of
		 * (seed, i), as the interpreter draws it. */
		uint64_t thr = fgrt_dropout_threshold(n->a.drop.p);
		int ilv = cu_ix_level(x, &n->shape);
		if (ilv > lv)
			lv = ilv;
		e = cu_fmt(k->a, "fgrt_dropout_keep(%lluull, (uint64_t)%s, %lluull) ? %s / %s : 0.0f",
			(unsigned long long)n->a.drop.seed, cu_paren(k->a, cu_ix_linear(k, x, &n->shape)),
			(unsigned long long)thr, cu_paren(k->a, ops[0].e), cu_literal(k->a, FG_DT_F32, 1.0 - n->a.drop.p));
		break;
	}
	case FG_OP_DIV:
		if (!fg_dtype_is_int(n->dt) && uniform_divisor(k, n, ops, lv)) {
			/* a quotient rounded to an integer: the product, but
			 * the division where the product is near a boundary
			 * of that rounding (fg_div_rounded); in a narrower
			 * dtype the quotient is rounded to it first, whose
			 * boundaries next to an integer the test does not
			 * see: the division */
			int how = rounded_later(k, id);
			if (how && n->dt != FG_DT_F32)
				how = ROUND_BOTH;
			if (how == 0)
				e = cu_fmt(k->a, "%s * %s", cu_paren(k->a, ops[0].e), reciprocal(k, ops[1], 0));
			else if (how != ROUND_BOTH)
				e = cu_fmt(k->a, "fg_div_rounded(%s, %s, %s, %s)", ops[0].e, ops[1].e, reciprocal(k, ops[1], 1),
					   how == ROUND_HALVES ? "0.5f" : "0.0f");
			if (how != ROUND_BOTH)
				break;
		}
		e = subst(k->a, fg_op_info[n->op].cuda, n, ops);
		break;
	case FG_OP_FLOORDIV:
	case FG_OP_MOD:
		if (fg_dtype_is_int(n->dt) && !(k->g->nodes[n->in[1]].op == FG_OP_CONST &&
					     k->g->nodes[n->in[1]].a.value != 0)) {  /* a zero divisor: a run-time error */
			int ilv = cu_ix_level(x, &n->shape);
			lv = ilv > lv ? ilv : lv;
			ops[1].e = cu_fmt(k->a, "fg_divisor(%s, %s, (unsigned long long)%s)", ops[1].e,
					  fault_record(k, id), cu_paren(k->a, cu_ix_linear(k, x, &n->shape)));
		}
		e = subst(k->a, fg_op_info[n->op].cuda, n, ops);
		break;
	case FG_OP_ABS:
		if (fg_dtype_is_int(n->dt)) {
			e = cu_fmt(k->a, "abs(%s)", ops[0].e);
			break;
		}
		/* fall through */
	default:
		if (!*fg_op_info[n->op].cuda)
			fg_die("no CUDA form for '%s' (FG_OPS' cuda column)", fg_op_info[n->op].name);
		e = subst(k->a, op_form(k, n), n, ops);
		break;
	}
	return define(k, id, lv, e);
}

static Val gen_concat(Kern *k, int id, const Ix *x)
{
	const FgNode *n = &k->g->nodes[id];
	int ax = n->a.axis;
	const char *c = x->c[ax];
	int64_t off = 0;
	Val v[64] = {{0}};
	int64_t offs[64] = {0};
	int lv = x->lv[ax];
	if (n->nin > 64) {
		cu_kern_error(k, id, "concat of more than 64 operands");
		return (Val){"0", 0};
	}
	for (int j = 0; j < n->nin; j++) {
		const FgShape *s = cu_shape_of(k, n->in[j]);
		Ix y = *x;
		y.lin = y.vlin = NULL;
		if (x->vw > 1 && ax == x->vd)
			y.vd = LANES_APART;
		if (s->d[ax] == 1) {
			y.c[ax] = "0";
			y.lv[ax] = 0;
		} else {
			const char *shifted = off ? cu_fmt(k->a, "%s - %lld", cu_paren(k->a, c), (long long)off) : c;
			y.c[ax] = cu_fmt(k->a, "fg_clamp<%s>(%s, %lld)", k->idx, shifted, (long long)(s->d[ax] - 1));
		}
		offs[j] = off;
		off += s->d[ax];
		v[j] = cu_gen(k, n->in[j], &y);
		if (v[j].lv > lv)
			lv = v[j].lv;
	}
	if (n->nin == 1)
		return v[0];
	const char *e = v[n->nin - 1].e;
	for (int j = n->nin - 2; j >= 0; j--)
		e = cu_fmt(k->a, "%s < %lld ? %s : %s", cu_paren(k->a, c), (long long)offs[j + 1], v[j].e, e);
	return define(k, id, lv, e);
}

/* x's lanes, as they are, into an operand's index y (whose vd the caller
 * maps). */
static void lanes_to(Ix *y, const Ix *x)
{
	y->vw = x->vw;
	y->lane = x->lane;
	y->vmis = x->vmis;
	y->vbase = x->vbase;
	y->vd = x->vd;
}

/* gather (NumPy's take) and take_along_axis: the index at the element's
 * place among the indices, checked (fg_index: out of [-n, n) is a run-time
 * error, then 0), then x at that position along the axis.  Lanes along
 * another axis of x stay lanes: an embedding row is vector loads. */
static Val gen_gather(Kern *k, int id, const Ix *x)
{
	const FgNode *n = &k->g->nodes[id];
	const FgShape *xs = cu_shape_of(k, n->in[0]), *is = cu_shape_of(k, n->in[1]);
	int ax = n->a.axis, r = is->rank, vd = x->vw > 1 ? x->vd : -1;
	Ix iy, y;
	if (n->op == FG_OP_GATHER) {
		memset(&iy, 0, sizeof iy);
		memset(&y, 0, sizeof y);
		iy.rank = r;
		lanes_to(&iy, x);
		for (int j = 0; j < r; j++) {
			iy.c[j] = is->d[j] == 1 ? "0" : x->c[ax + j];
			iy.lv[j] = is->d[j] == 1 ? 0 : x->lv[ax + j];
		}
		if (vd >= 0)
			iy.vd = vd >= ax && vd < ax + r && is->d[vd - ax] != 1 ? vd - ax : LANES_SAME;
		y.rank = xs->rank;
		lanes_to(&y, x);
		for (int i = 0; i < xs->rank; i++) {
			int from = i < ax ? i : i + r - 1;
			y.c[i] = i == ax || xs->d[i] == 1 ? "0" : x->c[from];
			y.lv[i] = i == ax || xs->d[i] == 1 ? 0 : x->lv[from];
		}
		if (vd >= 0)
			y.vd = vd < ax ? vd : vd >= ax + r ? vd - r + 1 : LANES_APART;
	} else {
		iy = cu_ix_bcast(x, &n->shape, is);
		y = cu_ix_bcast(x, &n->shape, xs);
		y.lin = y.vlin = NULL;
		if (vd == ax)
			y.vd = LANES_APART;
	}
	if (y.vw > 1 && y.vd >= 0 && xs->d[y.vd] == 1)
		y.vd = LANES_SAME;
	Val iv = cu_gen(k, n->in[1], &iy);
	int plv = cu_ix_level(&iy, is), lv = iv.lv > plv ? iv.lv : plv;
	/* one checked index per index value: lanes that share it share
	 * the position, and their load is one vector */
	const char *key = cu_fmt(k->a, "I%d:%s", id, iv.e);
	const char *t = NULL;
	for (int i = k->memo.n - 1; i >= 0 && !t; i--)
		if (k->memo.v[i].id == -1 && strcmp(k->memo.v[i].key, key) == 0)
			t = k->memo.v[i].v.e;
	if (!t) {
		t = cu_fresh(k, lv, "ix");
		cu_kline(k, lv, NULL, "const %s %s = (%s)fg_index(%s, %lldLL, %s, (unsigned long long)%s);", k->idx, t,
			 k->idx, iv.e, (long long)xs->d[ax], fault_record(k, id),
			 cu_paren(k->a, cu_ix_linear(k, &iy, is)));
		Memo m = {-1, key, {t, lv}};
		fg_vec_push(k->a, &k->memo, m);
	}
	if (xs->d[ax] > 1) {
		y.c[ax] = t;
		y.lv[ax] = lv;
	}
	return cu_gen(k, n->in[0], &y);
}

static Val gen_layout(Kern *k, int id, const Ix *x)
{
	const FgNode *n = &k->g->nodes[id];
	const FgShape *in = cu_shape_of(k, n->in[0]);
	Ix y;
	memset(&y, 0, sizeof y);
	y.rank = in->rank;
	switch (n->op) {
	case FG_OP_TRANSPOSE: {
		int ident = 1;
		for (int i = 0; i < n->shape.rank; i++) {
			y.c[n->a.perm[i]] = x->c[i];
			y.lv[n->a.perm[i]] = x->lv[i];
			ident &= n->a.perm[i] == i;
		}
		y.vw = x->vw;
		y.lane = x->lane;
		y.vmis = x->vmis;
		y.vbase = x->vbase;
		y.vd = x->vw > 1 && x->vd >= 0 ? n->a.perm[x->vd] : x->vd;
		if (ident) {
			y.lin = x->lin;
			y.lin_lv = x->lin_lv;
			y.vlin = x->vlin;
		}
		break;
	}
	case FG_OP_SLICE: {
		int ax = n->a.slice.axis;
		long long st = (long long)n->a.slice.start;
		y = *x;
		y.lin = y.vlin = NULL;
		if (st != 0 && x->vw > 1 && ax == x->vd) {
			y.vbase = cu_fmt(k->a, "%s + %lld", cu_paren(k->a, x->vbase), st);
			y.vmis = (int)((x->vmis + st) % x->vw);
			cu_lane_coords(k, &y);
		} else if (st != 0) {
			y.c[ax] = strcmp(x->c[ax], "0") == 0 ? cu_fmt(k->a, "%lld", st)
							      : cu_fmt(k->a, "%s + %lld", cu_paren(k->a, x->c[ax]), st);
		}
		break;
	}
	case FG_OP_RESHAPE:
		y = cu_ix_reshape(k, x, &n->shape, in);
		break;
	case FG_OP_BROADCAST_TO:
		y = cu_ix_bcast(x, &n->shape, in);
		break;
	case FG_OP_CONCAT:
		return gen_concat(k, id, x);
	case FG_OP_GATHER:
	case FG_OP_TAKE_ALONG_AXIS:
		return gen_gather(k, id, x);
	default:
		fg_die("gen_layout: %s", fg_op_info[n->op].name);
	}
	return cu_gen(k, n->in[0], &y);
}

/* A reduction's value: the thread's own row (or column, or total); any
 * other element would need another block's work. */
static Val gen_reduce(Kern *k, int id, const Ix *x)
{
	const FgShape *s = cu_shape_of(k, id);
	for (int i = 0; i < k->reds.n; i++) {
		Red *r = &k->reds.v[i];
		if (r->id != id)
			continue;
		if (!r->var)
			fg_die("reduction %s used before it is computed", k->plan->names[id]);
		for (int d = 0; d < s->rank; d++)
			if (s->d[d] > 1 && strcmp(x->c[d], r->at.c[d]) != 0) {
				cu_kern_error(k, id, "'%s' is needed at an element this thread does not reduce "
					   "(a reduced value broadcast across its own rows)", k->plan->names[id]);
				return (Val){"0", 0};
			}
		return (Val){r->var, r->lv};
	}
	cu_kern_error(k, id, "reduction '%s' is not the group's own", k->plan->names[id]);
	return (Val){"0", 0};
}

/* Node id's value at index x (of its own shape). */
Val cu_gen(Kern *k, int id, const Ix *x)
{
	const FgNode *n = &k->g->nodes[id];
	if (k->failed)
		return (Val){"0", 0};
	if (n->op == FG_OP_CONST)
		return (Val){cu_literal(k->a, n->dt, n->a.value), 0};
	if (id == k->unscaled) {        /* its factor is the attention kernel's scale */
		Ix y = cu_ix_bcast(x, &n->shape, cu_shape_of(k, k->unscaled_to));
		return cu_gen(k, k->unscaled_to, &y);
	}
	const char *key = cu_memo_key(k, id, x);
	for (int i = k->memo.n - 1; i >= 0; i--)
		if (k->memo.v[i].id == id && strcmp(k->memo.v[i].key, key) == 0)
			return k->memo.v[i].v;
	Val v;
	if (!cu_is_member(k, id)) {
		v = cu_load(k, id, x);
	} else {
		switch (fg_op_info[n->op].cls) {
		case FG_CLASS_EW:
			v = gen_ew(k, id, x);
			break;
		case FG_CLASS_LAYOUT:
			v = gen_layout(k, id, x);
			break;
		case FG_CLASS_REDUCE:
			v = gen_reduce(k, id, x);
			break;
		case FG_CLASS_SCAN:     /* the scan kernel memoizes its own element */
			cu_kern_error(k, id, "'%s' is needed at an element this thread does not scan",
				      k->plan->names[id]);
			return (Val){"0", 0};
		default:
			cu_kern_error(k, id, "%s inside a %s group", fg_op_info[n->op].name,
				   fg_group_kind_name[k->gr->kind]);
			return (Val){"0", 0};
		}
	}
	Memo m = {id, key, v};
	fg_vec_push(k->a, &k->memo, m);
	return v;
}
