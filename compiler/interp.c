/*
 * interp.c - the reference interpreter: evaluates a graph of primitive ops
 * node by node, on the CPU, in double precision.  Every other result (the
 * fused kernels, the unfused ones, a fusion plan run on the CPU) is compared
 * with what this file computes, so it favours plain, checkable semantics;
 * it must still get through samples of 10^7 elements and graphs of 10^6
 * nodes, hence no recursion, index arithmetic that costs one offset update
 * per row rather than a division per element, and each buffer freed right
 * after its last consumer ran.
 *
 * Invariants.  Values are doubles in C order; nothing is rounded between
 * ops except by `cast`, which rounds to its target dtype.  A node is
 * evaluated only when a kept node depends on it.  A buffer has exactly one
 * owner slot in vals[]: an elementwise op or a reshape may take over the
 * buffer of an operand that dies with it (never a kept one), clearing the
 * operand's slot, so the free after the last use never sees it twice.
 * Inputs that are not kept point at the caller's buffers (`borrowed`):
 * read, never written, taken over or freed; kept ones are copies.  Dead
 * buffers go to a small pool that a later node of the same size draws
 * from; it is empty again when fg_interp_eval returns.
 * Sums and means use Neumaier's compensated summation in input order;
 * matmuls accumulate plainly in double, in k order.
 *
 * In the dtypes (fg_interp_eval_in), the RMSE gate's baseline: each float
 * op's result is rounded to its dtype, as an op-by-op program stores it,
 * except inside an expanded composite and for constants, which an eager
 * op keeps in f32 (its opmath): there to f32.  Sums and means add in f32,
 * blocks of SUM_BLOCK in order, then the block sums pairwise (a kernel's
 * threads, then its tree); matmuls add each product to an f32 running sum
 * in k order (one rounding a step, as an FMA).  i32 and bool as usual.
 * In the kernels' precision (FG_INTERP_KERNEL, for one fusion group of a
 * plan: `fgc verify --precision kernel`) every float op rounds to f32, the
 * type a generated kernel computes in whatever the dtype, and sums and
 * matmuls add in f32 as above.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fg.h"
#include "fgrt.h"
#include "fgrt_philox.h"

/* ------------------------------------------------- elementwise semantics */

/* The reference column as text: "0" marks ops the table gives no
 * expression, which must never reach the generated switch below. */
static const char *const ref_text[FG_OP_COUNT] = {
#define X(id, name, ar, cl, ty, at, ref, cu, py, tr) #ref,
	FG_OPS(X)
#undef X
};

/* ------------------------------------------------------- strided walks */

#define WALK_MAXOP 4    /* the output and up to three operands */

/* A walk over an index space, row by row, carrying one element offset per
 * buffer.  Unit dims are dropped and adjacent dims that every buffer steps
 * through contiguously are merged, so a broadcast or a transpose costs one
 * offset update per row and the inner loop is a plain strided loop. */
typedef struct Walk {
	int rank;                               /* dims left, >= 1 */
	int nop;                                /* buffers walked together */
	int64_t n[FG_MAX_RANK];                 /* n[rank-1] is the row length */
	int64_t st[WALK_MAXOP][FG_MAX_RANK];    /* element strides per buffer */
	int64_t idx[FG_MAX_RANK];               /* position in the outer dims */
	int64_t off[WALK_MAXOP];                /* offset of the current row */
} Walk;

static int merges(const Walk *w, int r, const int64_t (*st)[FG_MAX_RANK], int dim)
{
	for (int k = 0; k < w->nop; k++)
		if (st[k][dim] != w->st[k][r] * w->n[r])
			return 0;
	return 1;
}

/* Returns 0 when the space is empty (some dim is 0): nothing to visit. */
static int walk_init(Walk *w, int rank, const int64_t *n, int nop,
		     const int64_t (*st)[FG_MAX_RANK])
{
	FG_ASSERT(nop <= WALK_MAXOP && rank <= FG_MAX_RANK);
	for (int i = 0; i < rank; i++)
		if (n[i] == 0)
			return 0;
	memset(w, 0, sizeof *w);
	w->nop = nop;
	int r = 0; /* built innermost first, reversed below */
	for (int i = rank - 1; i >= 0; i--) {
		if (n[i] == 1)
			continue;
		if (r > 0 && merges(w, r - 1, st, i)) {
			w->n[r - 1] *= n[i];
			continue;
		}
		w->n[r] = n[i];
		for (int k = 0; k < nop; k++)
			w->st[k][r] = st[k][i];
		r++;
	}
	if (r == 0) {
		w->n[0] = 1;
		r = 1;
	}
	for (int i = 0, j = r - 1; i < j; i++, j--) {
		int64_t t = w->n[i];
		w->n[i] = w->n[j];
		w->n[j] = t;
		for (int k = 0; k < nop; k++) {
			t = w->st[k][i];
			w->st[k][i] = w->st[k][j];
			w->st[k][j] = t;
		}
	}
	w->rank = r;
	return 1;
}

/* Steps to the next row; 0 after the last one. */
static int walk_next(Walk *w)
{
	for (int d = w->rank - 2; d >= 0; d--) {
		if (++w->idx[d] < w->n[d]) {
			for (int k = 0; k < w->nop; k++)
				w->off[k] += w->st[k][d];
			return 1;
		}
		w->idx[d] = 0;
		for (int k = 0; k < w->nop; k++)
			w->off[k] -= w->st[k][d] * (w->n[d] - 1);
	}
	return 0;
}

static int64_t walk_len(const Walk *w)
{
	return w->n[w->rank - 1];
}

static int64_t walk_stride(const Walk *w, int k)
{
	return w->st[k][w->rank - 1];
}

/* ------------------------------------------------------------- shapes */

static void contig_strides(const FgShape *s, int64_t *st)
{
	int64_t acc = 1;
	for (int i = s->rank - 1; i >= 0; i--) {
		st[i] = acc;
		acc *= s->d[i];
	}
}

/* Strides that read operand shape `x` broadcast NumPy-style to `out`:
 * trailing dims aligned, missing and unit dims stride 0. */
static void bcast_strides(const FgShape *x, const FgShape *out, int64_t *st)
{
	int64_t xs[FG_MAX_RANK];
	int lead = out->rank - x->rank;
	FG_ASSERT(lead >= 0);
	contig_strides(x, xs);
	for (int i = 0; i < out->rank; i++) {
		int j = i - lead;
		if (j < 0 || x->d[j] == 1) {
			st[i] = 0;
			continue;
		}
		FG_ASSERT(x->d[j] == out->d[i]);
		st[i] = xs[j];
	}
}

/* Elements of s, or -1 when they would not fit in memory as doubles. */
static int64_t numel_checked(const FgShape *s)
{
	int64_t n = 1;
	for (int i = 0; i < s->rank; i++) {
		if (s->d[i] < 0)
			return -1;
		if (s->d[i] != 0 && n > (INT64_MAX / 8) / s->d[i])
			return -1;
		n *= s->d[i];
	}
	return n;
}

static int64_t numel(const FgShape *s)
{
	int64_t n = numel_checked(s);
	FG_ASSERT(n >= 0);
	return n;
}

/* ------------------------------------------------------ the evaluation */

/* Dead buffers of at least POOL_MIN elements wait here for a node of the
 * same element count instead of going back to the system: glibc returns
 * large blocks to the kernel at once, and touching fresh pages again can
 * cost more than the op itself.  Few slots, so that little memory idles. */
#define POOL_MAX 4
#define POOL_MIN ((int64_t)1 << 16)

typedef struct Pool {
	double *buf[POOL_MAX];
	int64_t count[POOL_MAX];        /* elements each holds */
	int n;
} Pool;

/* What one evaluation needs at hand; vals and pool change as it goes. */
typedef struct Eval {
	const FgGraph *g;
	double *const *in;              /* the caller's input values */
	const unsigned char *keep;      /* NULL: keep everything */
	int *last;                      /* last consumer id; -1: not needed */
	double **vals;                  /* one buffer per live node */
	Pool pool;
	FgDiag *d;
	int in_dtype;                   /* FG_INTERP_*: every result in its dtype
					   (or f32), sums in f32 */
} Eval;

static int kept(const Eval *e, int id)
{
	return e->keep == NULL || e->keep[id];
}

/* last[id] = the id of its last needed consumer (itself when kept and
 * consumed by nobody), -1 when no kept node depends on it.  Consumers have
 * larger ids, so one backward sweep sees every consumer before its
 * operands. */
static void plan_liveness(Eval *e)
{
	const FgGraph *g = e->g;
	for (int id = 0; id < g->nnodes; id++)
		e->last[id] = kept(e, id) ? id : -1;
	for (int id = g->nnodes - 1; id >= 0; id--) {
		if (e->last[id] < 0)
			continue;
		const FgNode *n = &g->nodes[id];
		for (int k = 0; k < n->nin; k++) {
			int j = n->in[k];
			FG_ASSERT(j >= 0 && j < id);
			if (e->last[j] < id)
				e->last[j] = id;
		}
	}
}

/* Inputs nobody keeps are read where the caller holds them, never
 * written or freed here: inputs are often the largest tensors. */
static int borrowed(const Eval *e, int id)
{
	FgOp op = e->g->nodes[id].op;
	return (op == FG_OP_INPUT || op == FG_OP_PARAM) && !kept(e, id);
}

static void report_oom(Eval *e, const FgNode *n, int64_t count)
{
	char ty[160];
	if (e->d == NULL)
		return;
	fg_type_str(ty, sizeof ty, n->dt, &n->shape);
	if (count < 0)
		fg_error(e->d, n->loc, "out of memory evaluating %s: %s is too large to hold in memory",
			 fg_op_info[n->op].name, ty);
	else
		fg_error(e->d, n->loc, "out of memory evaluating %s: %s needs %lld bytes",
			 fg_op_info[n->op].name, ty, (long long)count * 8);
}

/* A buffer of `count` doubles for node n; NULL (reported) when it cannot
 * be had.  count -1 means the size overflowed. */
static double *alloc_values(Eval *e, const FgNode *n, int64_t count)
{
	Pool *pl = &e->pool;
	for (int i = 0; i < pl->n; i++) {
		if (pl->count[i] != count)
			continue;
		double *p = pl->buf[i];
		pl->n--;
		pl->buf[i] = pl->buf[pl->n];
		pl->count[i] = pl->count[pl->n];
		return p;
	}
	double *p = NULL;
	if (count >= 0 && (uint64_t)count <= SIZE_MAX / sizeof(double))
		p = malloc(count > 0 ? (size_t)count * sizeof(double) : 1);
	if (p == NULL)
		report_oom(e, n, count);
	return p;
}

/* Gives back a buffer of `count` elements that nothing uses any more. */
static void release_values(Eval *e, double *p, int64_t count)
{
	Pool *pl = &e->pool;
	if (count < POOL_MIN || pl->n == POOL_MAX) {
		free(p);
		return;
	}
	pl->buf[pl->n] = p;
	pl->count[pl->n] = count;
	pl->n++;
}

static void pool_drain(Eval *e)
{
	for (int i = 0; i < e->pool.n; i++)
		free(e->pool.buf[i]);
	e->pool.n = 0;
}

/* An operand buffer that dies with node id and has its shape, taken over
 * as the node's output (elementwise ops write element i after reading it,
 * so in place is safe); NULL when there is none. */
static double *take_dying(Eval *e, int id, int same_shape_only)
{
	const FgNode *n = &e->g->nodes[id];
	for (int k = 0; k < n->nin; k++) {
		int j = n->in[k];
		const FgNode *x = &e->g->nodes[j];
		if (e->last[j] != id || kept(e, j) || borrowed(e, j) || e->vals[j] == NULL)
			continue;
		if (same_shape_only ? !fg_shape_eq(&x->shape, &n->shape)
				    : numel(&x->shape) != numel(&n->shape))
			continue;
		double *p = e->vals[j];
		e->vals[j] = NULL;
		return p;
	}
	return NULL;
}

/* One row of an elementwise op: o[i] = op(p[0][i*s[0]], ...).  `flat` is
 * the C-order index of o[0] in the output, which dropout's mask needs. */
static void ew_row(const FgNode *n, double *o, const double *const *p,
		   const int64_t *s, int64_t len, int64_t flat)
{
	const double *pa = p[0], *pb = p[1], *pc = p[2];
	int64_t sa = s[0], sb = s[1], sc = s[2];

	if (n->op == FG_OP_CAST) {
		for (int64_t i = 0; i < len; i++)
			o[i] = fg_round_to(n->dt, pa[i * sa]);
		return;
	}
	if (n->op == FG_OP_DROPOUT) {
		uint64_t thr = fgrt_dropout_threshold(n->a.drop.p);
		/* x / (1 - p), not x * (1 / (1 - p)): one rounding, not two */
		double keep_p = 1.0 - n->a.drop.p;
		for (int64_t i = 0; i < len; i++) {
			int keep = fgrt_dropout_keep(n->a.drop.seed, (uint64_t)(flat + i), thr);
			o[i] = keep ? pa[i * sa] / keep_p : 0.0;
		}
		return;
	}
	/* One case per elementwise row of FG_OPS; the token paste on the
	 * class keeps the other classes out of the switch.  CAST and DROPOUT
	 * (reference 0) were handled above. */
#define EW_CASE_SOURCE(id, ref)
#define EW_CASE_REDUCE(id, ref)
#define EW_CASE_LAYOUT(id, ref)
#define EW_CASE_MATMUL(id, ref)
#define EW_CASE_SCAN(id, ref)
#define EW_CASE_SELECT(id, ref)
#define EW_CASE_COMPOSITE(id, ref)
#define EW_CASE_EW(id, ref)                                                    \
	case FG_OP_##id:                                                       \
		for (int64_t i = 0; i < len; i++) {                            \
			double a = pa[i * sa], b = pb[i * sb], c = pc[i * sc]; \
			const double k = n->a.k;                               \
			(void)a, (void)b, (void)c, (void)k;                    \
			o[i] = (ref);                                          \
		}                                                              \
		break;
#define X(id, name, ar, cl, ty, at, ref, cu, py, tr) EW_CASE_##cl(id, ref)
	switch (n->op) {
		FG_OPS(X)
	default:
		fg_die("ew_row: %s is not elementwise", fg_op_info[n->op].name);
	}
#undef X
#undef EW_CASE_EW
#undef EW_CASE_COMPOSITE
#undef EW_CASE_MATMUL
#undef EW_CASE_SCAN
#undef EW_CASE_SELECT
#undef EW_CASE_LAYOUT
#undef EW_CASE_REDUCE
#undef EW_CASE_SOURCE
}

/* Elementwise ops with NumPy broadcasting.  Operand and output buffers may
 * coincide (take_dying): the same shape walks with the same strides. */
static void eval_ew(const Eval *e, const FgNode *n, const double *const *src, double *out)
{
	static const double zero = 0.0; /* stands for absent operands */
	int64_t st[WALK_MAXOP][FG_MAX_RANK] = {{0}};
	const double *p[3] = {&zero, &zero, &zero};
	Walk w;

	FG_ASSERT(n->nin >= 1 && n->nin <= 3);
	if ((n->op != FG_OP_CAST && n->op != FG_OP_DROPOUT) && strcmp(ref_text[n->op], "0") == 0)
		fg_die("%s has no reference expression in FG_OPS", fg_op_info[n->op].name);
	if (n->op == FG_OP_DROPOUT)
		FG_ASSERT(n->a.drop.p >= 0 && n->a.drop.p < 1);
	contig_strides(&n->shape, st[0]);
	for (int k = 0; k < n->nin; k++) {
		bcast_strides(&e->g->nodes[n->in[k]].shape, &n->shape, st[k + 1]);
		p[k] = src[k];
	}
	if (!walk_init(&w, n->shape.rank, n->shape.d, n->nin + 1, st))
		return;
	int64_t s[3] = {0, 0, 0};
	for (int k = 0; k < n->nin; k++)
		s[k] = walk_stride(&w, k + 1);
	FG_ASSERT(walk_stride(&w, 0) == 1 || walk_len(&w) == 1);
	do {
		const double *q[3] = {p[0], p[1], p[2]};
		for (int k = 0; k < n->nin; k++)
			q[k] += w.off[k + 1];
		ew_row(n, out + w.off[0], q, s, walk_len(&w), w.off[0]);
	} while (walk_next(&w));
}

/* In the dtypes: the dtype op id's float result is rounded to (f32 inside
 * a composite and for a constant; always f32, the kernels' compute type,
 * in FG_INTERP_KERNEL, where only a cast and the caller's stores round to
 * a 16-bit type), or FG_DT_COUNT when it is not rounded. */
static FgDtype in_dtype_of(const Eval *e, int id)
{
	const FgNode *n = &e->g->nodes[id];
	if (!e->in_dtype || !fg_dtype_is_float(n->dt))
		return FG_DT_COUNT;
	if (e->in_dtype == FG_INTERP_KERNEL || n->op == FG_OP_CONST ||
	    (n->composite && !(n->flags & FG_NF_COMPOSITE_END)))
		return FG_DT_F32;
	return n->dt;
}

/* In the dtypes: x[0..n) summed (or multiplied: op) in f32, SUM_BLOCK at
 * a time in order, then the block results pairwise; x is overwritten. */
enum { SUM_BLOCK = 32 };
static double sum_f32(FgOp op, double *x, int64_t n)
{
	int64_t nb = 0;
	for (int64_t i = 0; i < n; i += SUM_BLOCK, nb++) {
		double s = fg_red_info(op)->identity;
		for (int64_t j = i; j < n && j < i + SUM_BLOCK; j++)
			s = fg_round_f32(fg_red_step(op, s, x[j]));
		x[nb] = s;
	}
	for (int64_t step = 1; step < nb; step *= 2)
		for (int64_t i = 0; i + step < nb; i += 2 * step)
			x[i] = fg_round_f32(fg_red_step(op, x[i], x[i + step]));
	return nb ? x[0] : fg_red_info(op)->identity;
}

/* Neumaier's variant of Kahan summation: also right when the addend is
 * larger than the running sum. */
static inline void sum_add(double *s, double *c, double x)
{
	double t = *s + x;
	if (fabs(*s) >= fabs(x))
		*c += (*s - t) + x;
	else
		*c += (x - t) + *s;
	*s = t;
}

static void reduce_row(FgOp op, double *o, double *comp, int64_t so,
		       const double *x, int64_t sx, int64_t len)
{
	if (op == FG_OP_SUM || op == FG_OP_MEAN) {
		if (so == 0) {
			double s = o[0], c = comp[0];
			for (int64_t i = 0; i < len; i++)
				sum_add(&s, &c, x[i * sx]);
			o[0] = s;
			comp[0] = c;
		} else {
			for (int64_t i = 0; i < len; i++)
				sum_add(&o[i * so], &comp[i * so], x[i * sx]);
		}
		return;
	}
	/* one loop per row of FG_REDUCTIONS, the step inlined */
	switch (op) {
#define X(id, identity, ref, cu, functor)                              \
	case FG_OP_##id:                                               \
		for (int64_t i = 0; i < len; i++) {                    \
			double a = o[i * so], b = x[i * sx];           \
			o[i * so] = (ref);                             \
		}                                                      \
		break;
		FG_REDUCTIONS(X)
#undef X
	default:
		fg_die("reduce_row: %s is no reduction", fg_op_info[op].name);
	}
}

/* A reduction's walk: st[0] the operand's C-order strides, st[1] the
 * output's, 0 on the reduced axes; *count the elements each output sums.
 * Returns the output's element count. */
static int64_t reduce_strides(const FgNode *n, const FgShape *xs, int64_t (*st)[FG_MAX_RANK], int64_t *count)
{
	int64_t nout = 1;

	FG_ASSERT((n->a.red.axes >> xs->rank) == 0);
	FG_ASSERT(!n->a.red.keepdims || n->shape.rank == xs->rank);
	contig_strides(xs, st[0]);
	*count = 1;
	for (int i = xs->rank - 1; i >= 0; i--) {
		if (n->a.red.axes >> i & 1) {
			st[1][i] = 0;
			*count *= xs->d[i];
		} else {
			st[1][i] = nout;
			nout *= xs->d[i];
		}
	}
	FG_ASSERT(nout == numel(&n->shape));
	return nout;
}

/* Reductions walk the operand in C order (cache friendly) and scatter into
 * the output through strides that are 0 on the reduced axes; keepdims
 * changes the shape, never the layout.  comp holds the sums' compensation
 * terms (SUM and MEAN only). */
static void eval_reduce(const Eval *e, const FgNode *n, const double *x, double *out, double *comp)
{
	const FgShape *xs = &e->g->nodes[n->in[0]].shape;
	int64_t st[WALK_MAXOP][FG_MAX_RANK], count;
	int64_t nout = reduce_strides(n, xs, st, &count);
	Walk w;

	double init = fg_red_info(n->op)->identity;
	for (int64_t i = 0; i < nout; i++)
		out[i] = init;
	if (comp != NULL)
		memset(comp, 0, (size_t)nout * sizeof *comp);
	if (walk_init(&w, xs->rank, xs->d, 2, st)) {
		do {
			reduce_row(n->op, out + w.off[1], comp ? comp + w.off[1] : NULL,
				   walk_stride(&w, 1), x + w.off[0], walk_stride(&w, 0),
				   walk_len(&w));
		} while (walk_next(&w));
	}
	if (comp == NULL)
		return;
	for (int64_t i = 0; i < nout; i++) {
		/* An infinite or NaN running sum is already the answer; the
		 * compensation would only turn inf into NaN. */
		double s = isfinite(out[i]) ? out[i] + comp[i] : out[i];
		out[i] = n->op == FG_OP_MEAN ? s / (double)count : s;
	}
}

/* argmax, argmin: the first index (C order among the reduced elements) of
 * the extreme, a NaN counting as the extreme (the first NaN wins), as
 * NumPy's.  Returns -1 (reported) when memory runs out. */
static int eval_argreduce(Eval *e, const FgNode *n, const double *x, double *out)
{
	const FgShape *xs = &e->g->nodes[n->in[0]].shape;
	int64_t st[WALK_MAXOP][FG_MAX_RANK], count;
	int64_t nout = reduce_strides(n, xs, st, &count);
	Walk w;

	double *best = malloc((size_t)(nout > 0 ? nout : 1) * sizeof *best);
	int64_t *seen = calloc((size_t)(nout > 0 ? nout : 1), sizeof *seen);
	if (best == NULL || seen == NULL) {
		free(best);
		free(seen);
		report_oom(e, n, nout);
		return -1;
	}
	for (int64_t o = 0; o < nout; o++) {
		best[o] = fg_red_info(n->op)->identity;
		out[o] = 0;
	}
	if (walk_init(&w, xs->rank, xs->d, 2, st)) {
		do {
			for (int64_t k = 0; k < walk_len(&w); k++) {
				int64_t o = w.off[1] + k * walk_stride(&w, 1), i = seen[o]++;
				double v = x[w.off[0] + k * walk_stride(&w, 0)];
				int better = n->op == FG_OP_ARGMAX ? v > best[o] : v < best[o];
				if (!isnan(best[o]) && (isnan(v) || better)) {
					best[o] = v;
					out[o] = (double)i;
				}
			}
		} while (walk_next(&w));
	}
	free(best);
	free(seen);
	return 0;
}

/* A sum, mean or product in the dtypes: each output's operands gathered
 * in C order, then sum_f32.  Returns -1 (reported) when memory runs out. */
static int eval_reduce_f32(Eval *e, const FgNode *n, const double *x, double *out)
{
	const FgShape *xs = &e->g->nodes[n->in[0]].shape;
	int64_t st[WALK_MAXOP][FG_MAX_RANK], count;
	int64_t nout = reduce_strides(n, xs, st, &count);
	Walk w;

	double *buf = malloc((size_t)(nout * count > 0 ? nout * count : 1) * sizeof *buf);
	int64_t *pos = calloc((size_t)(nout > 0 ? nout : 1), sizeof *pos);
	if (buf == NULL || pos == NULL) {
		free(buf);
		free(pos);
		report_oom(e, n, nout * count);
		return -1;
	}
	if (walk_init(&w, xs->rank, xs->d, 2, st)) {
		do {
			for (int64_t k = 0; k < walk_len(&w); k++) {
				int64_t o = w.off[1] + k * walk_stride(&w, 1);
				buf[o * count + pos[o]++] = x[w.off[0] + k * walk_stride(&w, 0)];
			}
		} while (walk_next(&w));
	}
	for (int64_t o = 0; o < nout; o++) {
		double s = sum_f32(n->op, buf + o * count, count);
		out[o] = n->op == FG_OP_MEAN ? fg_round_f32(s / (double)count) : s;
	}
	free(buf);
	free(pos);
	return 0;
}

/* One plane of a transposing copy, in square tiles, so that neither the
 * reads nor the writes cross a whole row for every element. */
static void copy_tiled(double *o, int64_t o_row, const double *x, int64_t x_row, int64_t x_col,
		       int64_t rows, int64_t cols)
{
	enum { TILE = 32 };
	for (int64_t r0 = 0; r0 < rows; r0 += TILE) {
		int64_t r1 = rows - r0 < TILE ? rows : r0 + TILE;
		for (int64_t c0 = 0; c0 < cols; c0 += TILE) {
			int64_t c1 = cols - c0 < TILE ? cols : c0 + TILE;
			for (int64_t r = r0; r < r1; r++)
				for (int64_t c = c0; c < c1; c++)
					o[r * o_row + c] = x[r * x_row + c * x_col];
		}
	}
}

/* out (C order, shape os) = x read through strides xst: the one loop
 * behind transpose, broadcast_to and slice. */
static void gather(const FgShape *os, double *out, const double *x, const int64_t *xst)
{
	int64_t st[WALK_MAXOP][FG_MAX_RANK];
	Walk w;
	contig_strides(os, st[0]);
	memcpy(st[1], xst, sizeof st[1]);
	if (!walk_init(&w, os->rank, os->d, 2, st))
		return;
	int64_t len = walk_len(&w), sx = walk_stride(&w, 1);
	if (w.rank >= 2 && sx > 1) {
		/* Walk planes of the two inner dims instead of rows. */
		int r = w.rank;
		int64_t rows = w.n[r - 2], o_row = w.st[0][r - 2], x_row = w.st[1][r - 2];
		w.n[r - 2] = 1;
		w.rank = r - 1;
		do {
			copy_tiled(out + w.off[0], o_row, x + w.off[1], x_row, sx, rows, len);
		} while (walk_next(&w));
		return;
	}
	do {
		double *o = out + w.off[0];
		const double *p = x + w.off[1];
		if (sx == 1) {
			memcpy(o, p, (size_t)len * sizeof *o);
			continue;
		}
		for (int64_t i = 0; i < len; i++)
			o[i] = p[i * sx];
	} while (walk_next(&w));
}

static void eval_transpose(const FgNode *n, const FgShape *xs, const double *x, double *out)
{
	int64_t xst[FG_MAX_RANK], st[FG_MAX_RANK] = {0};
	unsigned seen = 0;
	FG_ASSERT(xs->rank == n->shape.rank);
	contig_strides(xs, xst);
	for (int i = 0; i < n->shape.rank; i++) {
		int p = n->a.perm[i];
		FG_ASSERT(p >= 0 && p < xs->rank && !(seen >> p & 1));
		FG_ASSERT(xs->d[p] == n->shape.d[i]);
		seen |= 1u << p;
		st[i] = xst[p];
	}
	gather(&n->shape, out, x, st);
}

static void eval_slice(const FgNode *n, const FgShape *xs, const double *x, double *out)
{
	int64_t st[FG_MAX_RANK] = {0};
	int ax = n->a.slice.axis;
	FG_ASSERT(xs->rank == n->shape.rank && ax >= 0 && ax < xs->rank);
	FG_ASSERT(0 <= n->a.slice.start && n->a.slice.start <= n->a.slice.end &&
		  n->a.slice.end <= xs->d[ax]);
	FG_ASSERT(n->shape.d[ax] == n->a.slice.end - n->a.slice.start);
	contig_strides(xs, st);
	gather(&n->shape, out, x + n->a.slice.start * st[ax], st);
}

/* The elements of s before axis ax (its rows' count, in C order) and
 * after it (the stride of the axis). */
static void around_axis(const FgShape *s, int ax, int64_t *outer, int64_t *inner)
{
	*outer = *inner = 1;
	for (int i = 0; i < ax; i++)
		*outer *= s->d[i];
	for (int i = ax + 1; i < s->rank; i++)
		*inner *= s->d[i];
}

/* Each operand fills a slab of every outer row: outer rows are the dims
 * before the axis, a slab is the operand's extent on the axis times the
 * dims after it. */
static void eval_concat(const Eval *e, const FgNode *n, double *out)
{
	const FgShape *os = &n->shape;
	int ax = n->a.axis;
	int64_t outer, inner, at = 0;
	FG_ASSERT(ax >= 0 && ax < os->rank);
	around_axis(os, ax, &outer, &inner);
	int64_t row = os->d[ax] * inner;
	for (int k = 0; k < n->nin; k++) {
		const FgShape *xs = &e->g->nodes[n->in[k]].shape;
		const double *x = e->vals[n->in[k]];
		FG_ASSERT(x != NULL && xs->rank == os->rank);
		int64_t chunk = xs->d[ax] * inner;
		FG_ASSERT(at + chunk <= row);
		for (int64_t o = 0; o < outer && chunk > 0; o++)
			memcpy(out + o * row + at, x + o * chunk, (size_t)chunk * sizeof *out);
		at += chunk;
	}
	FG_ASSERT(at == row);
}

/* C[M,N] = A[M,K] B[K,N], all row-major and dense.  Four rows of C share
 * each row of B, and columns go in blocks that keep those rows in L1; each
 * C element still sums its products in plain k order. */
static void gemm(double *restrict c, const double *restrict a, const double *restrict b,
		 int64_t M, int64_t K, int64_t N)
{
	enum { JB = 512 };
	for (int64_t i = 0; i < M; i += 4) {
		int64_t rows = M - i < 4 ? M - i : 4;
		for (int64_t j0 = 0; j0 < N; j0 += JB) {
			int64_t nj = N - j0 < JB ? N - j0 : JB;
			double *c0 = c + i * N + j0;
			for (int64_t r = 0; r < rows; r++)
				memset(c0 + r * N, 0, (size_t)nj * sizeof *c0);
			for (int64_t k = 0; k < K; k++) {
				const double *bk = b + k * N + j0;
				const double *ak = a + i * K + k;
				if (rows == 4) {
					double a0 = ak[0], a1 = ak[K], a2 = ak[2 * K], a3 = ak[3 * K];
					double *c1 = c0 + N, *c2 = c1 + N, *c3 = c2 + N;
					for (int64_t j = 0; j < nj; j++) {
						double bv = bk[j];
						c0[j] += a0 * bv;
						c1[j] += a1 * bv;
						c2[j] += a2 * bv;
						c3[j] += a3 * bv;
					}
					continue;
				}
				for (int64_t r = 0; r < rows; r++) {
					double av = ak[r * K];
					double *cr = c0 + r * N;
					for (int64_t j = 0; j < nj; j++)
						cr[j] += av * bk[j];
				}
			}
		}
	}
}

/* gemm in the dtype: each C element a running f32 sum of its products in k
 * order (a product of two f32, f16 or bf16 values is exact in double, so
 * each step rounds once, as an FMA does). */
static void gemm_f32(double *restrict c, const double *restrict a, const double *restrict b,
		     int64_t M, int64_t K, int64_t N)
{
	for (int64_t i = 0; i < M; i++) {
		double *ci = c + i * N;
		for (int64_t j = 0; j < N; j++)
			ci[j] = 0;
		for (int64_t k = 0; k < K; k++) {
			const double av = a[i * K + k], *bk = b + k * N;
			for (int64_t j = 0; j < N; j++)
				ci[j] = fg_round_f32(ci[j] + av * bk[j]);
		}
	}
}

/* Batch strides of a matmul operand whose matrices hold `mat` elements,
 * aligned to the nb broadcast batch dims bn. */
static void batch_strides(const FgShape *x, int nb, const int64_t *bn, int64_t mat, int64_t *st)
{
	int xb = x->rank - 2;
	int64_t acc = mat;
	for (int i = nb - 1; i >= 0; i--) {
		int j = i - (nb - xb);
		if (j < 0) {
			st[i] = 0;
			continue;
		}
		FG_ASSERT(x->d[j] == bn[i] || x->d[j] == 1);
		st[i] = x->d[j] == 1 ? 0 : acc;
		acc *= x->d[j];
	}
}

/* numpy.matmul for operands of rank 2 or more: [...,M,K] x [...,K,N], the
 * batch dims broadcast; one dense gemm per batch index (gemm_f32 when f32:
 * in the dtypes). */
static void eval_matmul(const Eval *e, const FgNode *n, const double *A, const double *B, double *C, int f32)
{
	const FgShape *as = &e->g->nodes[n->in[0]].shape;
	const FgShape *bs = &e->g->nodes[n->in[1]].shape;
	int ra = as->rank, rb = bs->rank, nb = n->shape.rank - 2;
	FG_ASSERT(ra >= 2 && rb >= 2 && nb >= ra - 2 && nb >= rb - 2);
	int64_t M = as->d[ra - 2], K = as->d[ra - 1], N = bs->d[rb - 1];
	FG_ASSERT(bs->d[rb - 2] == K && n->shape.d[nb] == M && n->shape.d[nb + 1] == N);
	const int64_t *bn = n->shape.d;
	int64_t st[WALK_MAXOP][FG_MAX_RANK];
	int64_t acc = M * N;
	for (int i = nb - 1; i >= 0; i--) {
		st[0][i] = acc;
		acc *= bn[i];
	}
	batch_strides(as, nb, bn, M * K, st[1]);
	batch_strides(bs, nb, bn, K * N, st[2]);
	Walk w;
	if (M * N == 0 || !walk_init(&w, nb, bn, 3, st))
		return;
	do {
		for (int64_t t = 0; t < walk_len(&w); t++) {
			double *c = C + w.off[0] + t * walk_stride(&w, 0);
			const double *a = A + w.off[1] + t * walk_stride(&w, 1);
			const double *b = B + w.off[2] + t * walk_stride(&w, 2);
			if (f32)
				gemm_f32(c, a, b, M, K, N);
			else
				gemm(c, a, b, M, K, N);
		}
	} while (walk_next(&w));
}

/* ------------------------------------------- positions and indices */

/* "ids[3, 17]": flat position pos of node id's value, by name (a value
 * without one is named by its role). */
static const char *position(char *buf, size_t size, const FgGraph *g, int id, int64_t pos, const char *role)
{
	const FgShape *s = &g->nodes[id].shape;
	int64_t c[FG_MAX_RANK];
	for (int i = s->rank - 1; i >= 0; i--) {
		c[i] = pos % s->d[i];
		pos /= s->d[i];
	}
	int n = g->nodes[id].name ? snprintf(buf, size, "%s[", g->nodes[id].name)
				  : snprintf(buf, size, "position [");
	for (int i = 0; i < s->rank && n > 0 && (size_t)n < size; i++)
		n += snprintf(buf + n, size - (size_t)n, "%s%lld", i ? ", " : "", (long long)c[i]);
	if (n > 0 && (size_t)n < size)
		snprintf(buf + n, size - (size_t)n, "]%s", g->nodes[id].name ? "" : role);
	return buf;
}

/* The run-time error of an index outside [-len, len): the first in the
 * indices' C order, as a compiled binary reports it (runtime/fgrt_main.cu). */
static int index_check(Eval *e, const FgNode *n, int idx, const double *v, int64_t len)
{
	int64_t cnt = numel(&e->g->nodes[idx].shape);
	for (int64_t j = 0; j < cnt; j++)
		if (v[j] < (double)-len || v[j] >= (double)len) {
			char at[512];
			if (e->d)
				fg_error(e->d, n->loc, "%s index %lld out of range [-%lld, %lld) at %s",
					 fg_op_info[n->op].name, (long long)v[j], (long long)len, (long long)len,
					 position(at, sizeof at, e->g, idx, j, " of the indices"));
			return -1;
		}
	return 0;
}

/* cumsum, cumprod: along the axis, from its end when reversed, each
 * element the combination of those up to it (exclusive: before it).
 * Floats in double, or with f32 set each step rounded to f32, as a kernel
 * accumulates; integers modulo 2^32, then wrapped into the dtype. */
static void eval_scan(const FgNode *n, const double *x, double *out, int f32)
{
	FgOp red = fg_scan_reduction(n->op);
	int ax = n->a.scan.axis, integer = fg_dtype_is_int(n->dt);
	int64_t outer, len = n->shape.d[ax], inner;

	around_axis(&n->shape, ax, &outer, &inner);
	for (int64_t o = 0; o < outer; o++)
		for (int64_t i = 0; i < inner; i++) {
			double acc = fg_red_info(red)->identity;
			uint32_t iacc = red == FG_OP_PROD;
			for (int64_t s = 0; s < len; s++) {
				int64_t j = n->a.scan.reverse ? len - 1 - s : s;
				int64_t at = (o * len + j) * inner + i;
				double v = x[at];
				if (n->a.scan.exclusive)
					out[at] = integer ? fg_wrap_int(n->dt, (double)iacc) : acc;
				if (integer) {
					uint32_t u = (uint32_t)(int64_t)v;
					iacc = red == FG_OP_PROD ? iacc * u : iacc + u;
				} else {
					acc = fg_red_step(red, acc, v);
					acc = f32 ? fg_round_f32(acc) : acc;
				}
				if (!n->a.scan.exclusive)
					out[at] = integer ? fg_wrap_int(n->dt, (double)iacc) : acc;
			}
		}
}

/* Whether (a, i) comes before (b, j) in topk's order: the larger value
 * first (largest) or the smaller, a NaN above every number (first when
 * largest, last otherwise: as argmax takes it, and PyTorch's sort), equal
 * values (NaNs too) by lower index. */
static int topk_before(int largest, double a, int64_t i, double b, int64_t j)
{
	int an = isnan(a), bn = isnan(b);
	if (an != bn)
		return largest ? an : bn;
	if (!an && a != b)
		return largest ? a > b : a < b;
	return i < j;
}

/* topk's indices: along the axis, the positions of the k first elements
 * in topk_before's order, in that order (k rounds, each taking the first
 * element that comes after the previous round's). */
static void eval_topk(const FgNode *n, const FgShape *xs, const double *x, double *out)
{
	int ax = n->a.sel.axis, largest = n->a.sel.largest;
	int64_t outer, len = xs->d[ax], inner, k = n->a.sel.k;

	around_axis(xs, ax, &outer, &inner);
	for (int64_t o = 0; o < outer; o++)
		for (int64_t i = 0; i < inner; i++) {
			const double *row = x + o * len * inner + i;
			int64_t prev = -1;
			for (int64_t r = 0; r < k; r++) {
				int64_t best = -1;
				for (int64_t j = 0; j < len; j++) {
					double v = row[j * inner];
					if (prev >= 0 && !topk_before(largest, row[prev * inner], prev, v, j))
						continue;
					if (best < 0 || topk_before(largest, v, j, row[best * inner], best))
						best = j;
				}
				out[(o * k + r) * inner + i] = (double)best;
				prev = best;
			}
		}
}

/* iota: each element its index along the axis. */
static void eval_iota(const FgNode *n, double *out)
{
	int64_t outer, inner, len = n->shape.d[n->a.axis], cnt = numel(&n->shape);
	around_axis(&n->shape, n->a.axis, &outer, &inner);
	for (int64_t i = 0; i < cnt; i++)
		out[i] = (double)(i / inner % len);
}

/* gather (NumPy's take) and take_along_axis, after index_check. */
static void eval_gather(const Eval *e, const FgNode *n, const double *x, const double *idx, double *out)
{
	const FgShape *xs = &e->g->nodes[n->in[0]].shape, *is = &e->g->nodes[n->in[1]].shape;
	int ax = n->a.axis;
	int64_t len = xs->d[ax], xst[FG_MAX_RANK];
	contig_strides(xs, xst);
	if (n->op == FG_OP_GATHER) {
		int64_t outer = 1, inner = xst[ax], ni = numel(is);
		for (int i = 0; i < ax; i++)
			outer *= xs->d[i];
		for (int64_t o = 0; o < outer; o++)
			for (int64_t j = 0; j < ni; j++) {
				int64_t t = (int64_t)idx[j];
				t += t < 0 ? len : 0;
				memcpy(out + (o * ni + j) * inner, x + (o * len + t) * inner, (size_t)inner * sizeof *out);
			}
		return;
	}
	/* take_along_axis: walk the result in C order; x and idx broadcast */
	const FgShape *rs = &n->shape;
	int64_t ist[FG_MAX_RANK], c[FG_MAX_RANK] = {0}, cnt = numel(rs);
	bcast_strides(is, rs, ist);
	for (int i = 0; i < rs->rank; i++)
		if (xs->d[i] == 1)
			xst[i] = 0;
	for (int64_t r = 0; r < cnt; r++) {
		int64_t ip = 0, xp = 0;
		for (int i = 0; i < rs->rank; i++) {
			ip += c[i] * ist[i];
			xp += i == ax ? 0 : c[i] * xst[i];
		}
		int64_t t = (int64_t)idx[ip];
		t += t < 0 ? len : 0;
		out[r] = x[xp + t * xst[ax]];
		for (int i = rs->rank - 1; i >= 0 && ++c[i] == rs->d[i]; i--)
			c[i] = 0;
	}
}

/* An integer floordiv or mod: a zero divisor is a run-time error at the
 * first element of the result (C order) it would divide.  The quotients
 * themselves are FG_OPS' reference column (exact on integers), wrapped
 * to the dtype as every integer op's result is. */
static int divisor_check(Eval *e, int id, const double *b)
{
	const FgNode *n = &e->g->nodes[id];
	int64_t st[WALK_MAXOP][FG_MAX_RANK] = {{0}};
	Walk w;
	contig_strides(&n->shape, st[0]);
	bcast_strides(&e->g->nodes[n->in[1]].shape, &n->shape, st[1]);
	if (!walk_init(&w, n->shape.rank, n->shape.d, 2, st))
		return 0;
	do {
		for (int64_t i = 0; i < walk_len(&w); i++)
			if (b[w.off[1] + i * walk_stride(&w, 1)] == 0) {
				char at[512];
				if (e->d)
					fg_error(e->d, n->loc, "integer division by zero in '%s' at %s",
						 fg_op_info[n->op].name,
						 position(at, sizeof at, e->g, id, w.off[0] + i, " of its result"));
				return -1;
			}
	} while (walk_next(&w));
	return 0;
}

/* The caller's buffer for input or param node n. */
static double *input_values(const Eval *e, const FgNode *n)
{
	int k = n->a.input;
	if (e->in == NULL || k < 0 || e->in[k] == NULL)
		fg_die("no value given for input %d (%s)", k, n->name ? n->name : "?");
	return e->in[k];
}

static void eval_source(const Eval *e, const FgNode *n, double *out)
{
	int64_t cnt = numel(&n->shape);
	if (n->op == FG_OP_CONST) {
		for (int64_t i = 0; i < cnt; i++)
			out[i] = n->a.value;
	} else if (cnt > 0) {
		memcpy(out, input_values(e, n), (size_t)cnt * sizeof *out);
	}
}

/* Evaluates node id into a fresh or inherited buffer.  Returns -1 (with
 * the error reported) when memory runs out or the op meets a run-time
 * error (an index out of range, an integer division by zero). */
static int eval_node(Eval *e, int id)
{
	const FgNode *n = &e->g->nodes[id];
	FgOpClass cls = fg_op_info[n->op].cls;
	int64_t cnt = numel_checked(&n->shape);
	const double *src[3] = {NULL, NULL, NULL};
	double *out = NULL;

	for (int k = 0; k < n->nin && k < 3; k++) {
		src[k] = e->vals[n->in[k]];
		FG_ASSERT(src[k] != NULL);
	}
	if (borrowed(e, id)) {
		e->vals[id] = input_values(e, n);
		return 0;
	}
	if (n->op == FG_OP_RESHAPE && (out = take_dying(e, id, 0)) != NULL) {
		e->vals[id] = out; /* C order: the same elements, nothing moves */
		return 0;
	}
	if (cls == FG_CLASS_EW)
		out = take_dying(e, id, 1);
	if (out == NULL && (out = alloc_values(e, n, cnt)) == NULL)
		return -1;

	switch (cls) {
	case FG_CLASS_SOURCE:
		eval_source(e, n, out);
		break;
	case FG_CLASS_EW:
		if (n->op == FG_OP_IOTA) {
			eval_iota(n, out);
		} else if ((n->op == FG_OP_FLOORDIV || n->op == FG_OP_MOD) && fg_dtype_is_int(n->dt) &&
			   divisor_check(e, id, src[1]) != 0) {
			release_values(e, out, cnt);
			return -1;
		} else {
			eval_ew(e, n, src, out);
		}
		break;
	case FG_CLASS_REDUCE: {
		double *comp = NULL;
		if (n->op == FG_OP_ARGMAX || n->op == FG_OP_ARGMIN) {
			if (eval_argreduce(e, n, src[0], out) != 0) {
				release_values(e, out, cnt);
				return -1;
			}
			break;
		}
		if ((n->op == FG_OP_SUM || n->op == FG_OP_MEAN || n->op == FG_OP_PROD) && in_dtype_of(e, id) != FG_DT_COUNT) {
			if (eval_reduce_f32(e, n, src[0], out) != 0) {
				release_values(e, out, cnt);
				return -1;
			}
			break;
		}
		if (n->op == FG_OP_SUM || n->op == FG_OP_MEAN) {
			comp = alloc_values(e, n, cnt);
			if (comp == NULL) {
				release_values(e, out, cnt);
				return -1;
			}
		}
		eval_reduce(e, n, src[0], out, comp);
		if (comp != NULL)
			release_values(e, comp, cnt);
		break;
	}
	case FG_CLASS_LAYOUT: {
		const FgShape *xs = &e->g->nodes[n->in[0]].shape;
		int64_t st[FG_MAX_RANK] = {0};
		switch (n->op) {
		case FG_OP_TRANSPOSE:
			eval_transpose(n, xs, src[0], out);
			break;
		case FG_OP_RESHAPE:
			FG_ASSERT(numel(xs) == cnt);
			if (cnt > 0)
				memcpy(out, src[0], (size_t)cnt * sizeof *out);
			break;
		case FG_OP_BROADCAST_TO:
			bcast_strides(xs, &n->shape, st);
			gather(&n->shape, out, src[0], st);
			break;
		case FG_OP_SLICE:
			eval_slice(n, xs, src[0], out);
			break;
		case FG_OP_CONCAT:
			eval_concat(e, n, out);
			break;
		case FG_OP_GATHER:
		case FG_OP_TAKE_ALONG_AXIS:
			if (index_check(e, n, n->in[1], src[1], xs->d[n->a.axis]) != 0) {
				release_values(e, out, cnt);
				return -1;
			}
			eval_gather(e, n, src[0], src[1], out);
			break;
		default:
			fg_die("unknown layout op %s", fg_op_info[n->op].name);
		}
		break;
	}
	case FG_CLASS_MATMUL:
		eval_matmul(e, n, src[0], src[1], out, in_dtype_of(e, id) != FG_DT_COUNT);
		break;
	case FG_CLASS_SCAN:
		eval_scan(n, src[0], out, in_dtype_of(e, id) != FG_DT_COUNT);
		break;
	case FG_CLASS_SELECT:
		eval_topk(n, &e->g->nodes[n->in[0]].shape, src[0], out);
		break;
	case FG_CLASS_COMPOSITE:
		fg_die("composite %s reached the interpreter unexpanded", fg_op_info[n->op].name);
	}
	FgDtype rd = in_dtype_of(e, id);
	for (int64_t i = 0; rd != FG_DT_COUNT && i < cnt; i++)
		out[i] = fg_round_to(rd, out[i]);
	/* integer arithmetic wraps in two's complement (a cast saturates) */
	if (cls == FG_CLASS_EW && fg_dtype_is_int(n->dt) && n->op != FG_OP_CAST)
		for (int64_t i = 0; i < cnt; i++)
			out[i] = fg_wrap_int(n->dt, out[i]);
	e->vals[id] = out;
	return 0;
}

/* Frees the operands of node id whose last consumer it was. */
static void release_operands(Eval *e, int id)
{
	const FgNode *n = &e->g->nodes[id];
	for (int k = 0; k < n->nin; k++) {
		int j = n->in[k];
		if (e->last[j] == id && !kept(e, j)) {
			/* NULL: taken over by id, or an operand listed twice */
			if (e->vals[j] != NULL && !borrowed(e, j))
				release_values(e, e->vals[j], numel(&e->g->nodes[j].shape));
			e->vals[j] = NULL;
		}
	}
}

/* Frees everything evaluated so far, except the caller's own buffers. */
static void discard(Eval *e)
{
	for (int id = 0; id < e->g->nnodes; id++)
		if (borrowed(e, id))
			e->vals[id] = NULL;
	fg_interp_free(e->g, e->vals);
	pool_drain(e);
}

double **fg_interp_eval(const FgGraph *g, double *const *in,
			const unsigned char *keep, FgDiag *d)
{
	return fg_interp_eval_in(g, in, keep, 0, d);
}

double **fg_interp_eval_in(const FgGraph *g, double *const *in,
			   const unsigned char *keep, int in_dtype, FgDiag *d)
{
	Eval e = {g, in, keep, NULL, NULL, {{NULL}, {0}, 0}, d, in_dtype};
	size_t nn = (size_t)g->nnodes;

	e.vals = calloc(nn ? nn : 1, sizeof *e.vals);
	e.last = malloc((nn ? nn : 1) * sizeof *e.last);
	if (e.vals == NULL || e.last == NULL) {
		if (d != NULL)
			fg_error(d, (FgLoc){0, 0}, "out of memory evaluating graph '%s' (%d nodes)",
				 g->name ? g->name : "?", g->nnodes);
		free(e.vals);
		free(e.last);
		return NULL;
	}
	plan_liveness(&e);
	for (int id = 0; id < g->nnodes; id++) {
		if (e.last[id] < 0)
			continue;
		if (eval_node(&e, id) != 0) {
			discard(&e);
			free(e.last);
			return NULL;
		}
		release_operands(&e, id);
	}
	pool_drain(&e);
	free(e.last);
	return e.vals;
}

void fg_interp_free(const FgGraph *g, double **vals)
{
	if (vals == NULL)
		return;
	for (int i = 0; i < g->nnodes; i++)
		free(vals[i]);
	free(vals);
}
