/*
 * test_interp.c - the reference interpreter (compiler/interp.c) and `fgc
 * run` (compiler/run.c) on graphs built by hand with fg_ir_add.  Expected
 * values come from explicit index loops written here, independent of the
 * interpreter's strided walks, or from numbers worked out by hand: every
 * broadcasting pattern, every reduction over several axis sets with and
 * without keepdims, each layout op, batched matmul with broadcast batch
 * dims, dropout's mask, cast and rounding at ties, NaN through maximum and
 * minimum, buffer freeing after the last use, and running out of memory.
 */
#include <check.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fg.h"
#include "fgrt.h"
#include "fgrt_philox.h"

/* The OOM tests ask for absurd sizes on purpose: under ASan, malloc must
 * answer NULL as glibc does rather than abort the test. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "allocator_may_return_null=1";
}

typedef struct T {
	FgArena arena;
	FgGraph g;
	FgDiag d;
	FILE *out;              /* diagnostics, collected in msgs */
	char *msgs;
	size_t msglen;
} T;

static void t_init(T *t)
{
	memset(t, 0, sizeof *t);
	fg_arena_init(&t->arena);
	t->g.arena = &t->arena;
	t->g.name = "t";
	t->out = open_memstream(&t->msgs, &t->msglen);
	t->d.out = t->out;
}

/* Everything the diagnostics printed so far. */
static const char *t_msgs(T *t)
{
	fflush(t->out);
	return t->msgs ? t->msgs : "";
}

static void t_done(T *t)
{
	fclose(t->out);
	free(t->msgs);
	fg_arena_free(&t->arena);
}

static FgShape shape_of(int rank, const int64_t *d)
{
	FgShape s;
	memset(&s, 0, sizeof s);
	s.rank = rank;
	for (int i = 0; i < rank; i++)
		s.d[i] = d[i];
	return s;
}

#define SH(...) shape_of((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), \
			 (int64_t[]){__VA_ARGS__})
static const FgShape scalar_shape = {0, {0}};

/* A node of op with operands in[0..nin); the caller sets attributes and
 * adds it. */
static FgNode mk(T *t, FgOp op, FgDtype dt, FgShape s, int nin, const int *in)
{
	FgNode n;
	memset(&n, 0, sizeof n);
	n.op = op;
	n.dt = dt;
	n.shape = s;
	n.nin = nin;
	n.in = fg_arena_array(&t->arena, (size_t)(nin ? nin : 1), sizeof(int));
	if (nin)
		memcpy(n.in, in, (size_t)nin * sizeof(int));
	n.loc = (FgLoc){1, 1};
	n.fuse_block = -1;
	return n;
}

static int add(T *t, FgNode n)
{
	return fg_ir_add(&t->g, &n);
}

static int input(T *t, int k, FgDtype dt, FgShape s)
{
	FgNode n = mk(t, FG_OP_INPUT, dt, s, 0, NULL);
	n.a.input = k;
	return add(t, n);
}

static int cnst(T *t, double v, FgShape s)
{
	FgNode n = mk(t, FG_OP_CONST, FG_DT_F32, s, 0, NULL);
	n.a.value = v;
	return add(t, n);
}

static int op1(T *t, FgOp op, FgShape s, int x)
{
	return add(t, mk(t, op, FG_DT_F32, s, 1, (int[]){x}));
}

static int op2(T *t, FgOp op, FgShape s, int x, int y)
{
	return add(t, mk(t, op, FG_DT_F32, s, 2, (int[]){x, y}));
}

/* Evaluates with every node kept (keep NULL), or with keep as given. */
static double **eval(T *t, double *const *in, const unsigned char *keep)
{
	return fg_interp_eval(&t->g, in, keep, &t->d);
}

/* Equal as values: NaN where NaN is wanted, infinities exactly, the rest
 * within tol (0: exactly). */
static void expect(const double *got, const double *want, int64_t n, double tol)
{
	for (int64_t i = 0; i < n; i++) {
		int ok = isnan(want[i]) ? isnan(got[i])
			 : isinf(want[i]) || tol == 0 ? got[i] == want[i]
			 : fabs(got[i] - want[i]) <= tol * (1 + fabs(want[i]));
		ck_assert_msg(ok, "element %lld: got %.17g, want %.17g", (long long)i, got[i], want[i]);
	}
}

static void iota(double *v, int64_t n, double start)
{
	for (int64_t i = 0; i < n; i++)
		v[i] = start + (double)i;
}

/* ------------------------------------------------------- elementwise */

START_TEST(broadcast_column_with_row)
{
	T t;
	double x[3] = {1, 2, 3}, y[4] = {10, 20, 30, 40}, want[12];
	double *in[] = {x, y};
	t_init(&t);
	int a = input(&t, 0, FG_DT_F32, SH(3, 1));
	int b = input(&t, 1, FG_DT_F32, SH(4));
	int s = op2(&t, FG_OP_ADD, SH(3, 4), a, b);
	double **v = eval(&t, in, NULL);
	ck_assert_ptr_nonnull(v);
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 4; j++)
			want[i * 4 + j] = x[i] + y[j];
	expect(v[s], want, 12, 0);
	fg_interp_free(&t.g, v);
	t_done(&t);
}
END_TEST

START_TEST(broadcast_rank3_with_matrix)
{
	T t;
	double x[24], y[3] = {1, -2, 0.5}, want[24];
	double *in[] = {x, y};
	iota(x, 24, -7);
	t_init(&t);
	int a = input(&t, 0, FG_DT_F32, SH(2, 3, 4));
	int b = input(&t, 1, FG_DT_F32, SH(3, 1));
	int m = op2(&t, FG_OP_MUL, SH(2, 3, 4), a, b);
	int m2 = op2(&t, FG_OP_MUL, SH(2, 3, 4), b, a); /* the broadcast side first */
	double **v = eval(&t, in, NULL);
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 3; j++)
			for (int k = 0; k < 4; k++)
				want[(i * 3 + j) * 4 + k] = x[(i * 3 + j) * 4 + k] * y[j];
	expect(v[m], want, 24, 0);
	expect(v[m2], want, 24, 0);
	fg_interp_free(&t.g, v);
	t_done(&t);
}
END_TEST

/* Each operand stretches along a different axis: [2,1,4] - [3,1]. */
START_TEST(broadcast_both_ways)
{
	T t;
	double x[8], y[3] = {100, 200, 300}, want[24];
	double *in[] = {x, y};
	iota(x, 8, 1);
	t_init(&t);
	int a = input(&t, 0, FG_DT_F32, SH(2, 1, 4));
	int b = input(&t, 1, FG_DT_F32, SH(3, 1));
	int s = op2(&t, FG_OP_SUB, SH(2, 3, 4), a, b);
	int c = cnst(&t, 0.5, scalar_shape);
	int s2 = op2(&t, FG_OP_DIV, SH(2, 3, 4), s, c);
	double **v = eval(&t, in, NULL);
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 3; j++)
			for (int k = 0; k < 4; k++)
				want[(i * 3 + j) * 4 + k] = x[i * 4 + k] - y[j];
	expect(v[s], want, 24, 0);
	for (int i = 0; i < 24; i++)
		want[i] *= 2;
	expect(v[s2], want, 24, 0);
	fg_interp_free(&t.g, v);
	t_done(&t);
}
END_TEST

START_TEST(where_broadcasts_three_operands)
{
	T t;
	double c[2] = {1, 0}, a[3] = {1, 2, 3}, want[6] = {1, 2, 3, 7, 7, 7};
	double *in[] = {c, a};
	t_init(&t);
	int ci = input(&t, 0, FG_DT_BOOL, SH(2, 1));
	int ai = input(&t, 1, FG_DT_F32, SH(3));
	int k = cnst(&t, 7, scalar_shape);
	int w = add(&t, mk(&t, FG_OP_WHERE, FG_DT_F32, SH(2, 3), 3, (int[]){ci, ai, k}));
	double **v = eval(&t, in, NULL);
	expect(v[w], want, 6, 0);
	fg_interp_free(&t.g, v);
	t_done(&t);
}
END_TEST

/* A constant node of any shape is filled with its value. */
START_TEST(const_fills_its_shape)
{
	T t;
	double want[6] = {2.5, 2.5, 2.5, 2.5, 2.5, 2.5};
	t_init(&t);
	int c = cnst(&t, 2.5, SH(2, 3));
	double **v = eval(&t, NULL, NULL);
	expect(v[c], want, 6, 0);
	fg_interp_free(&t.g, v);
	t_done(&t);
}
END_TEST

START_TEST(unary_values)
{
	static const struct {
		FgOp op;
		double x, want;
	} cases[] = {
		{FG_OP_GELU, 1.0, 0.8413447460685429},
		{FG_OP_GELU, -0.5, -0.15426876936299344},
		{FG_OP_GELU_TANH, 1.0, 0.8411919906082768},
		{FG_OP_GELU_TANH, -0.5, -0.15428599017485606},
		{FG_OP_SIGMOID, 1.0, 0.7310585786300049},
		{FG_OP_SIGMOID, 0.0, 0.5},
		{FG_OP_SIGMOID, -800.0, 0.0},
		{FG_OP_SIGMOID, 800.0, 1.0},
		{FG_OP_SILU, 1.0, 0.7310585786300049},
		{FG_OP_SILU, -2.0, -0.2384058440442351},
		{FG_OP_SILU, -1000.0, -0.0},
		{FG_OP_RELU, -2.0, 0.0},
		{FG_OP_RELU, 3.0, 3.0},
		{FG_OP_RELU, NAN, NAN},
		{FG_OP_NEG, 2.0, -2.0},
		{FG_OP_ABS, -2.0, 2.0},
		{FG_OP_SQUARE, -3.0, 9.0},
		{FG_OP_RSQRT, 4.0, 0.5},
		{FG_OP_RECIP, 4.0, 0.25},
		{FG_OP_SQRT, -1.0, NAN},
		{FG_OP_LOG, 0.0, -INFINITY},
		{FG_OP_EXP, 1.0, 2.718281828459045},
		{FG_OP_TANH, INFINITY, 1.0},
		{FG_OP_ERF, 0.5, 0.5204998778130465},
		{FG_OP_IDENTITY, -1.5, -1.5},
	};
	int n = (int)(sizeof cases / sizeof cases[0]);
	T t;
	double *x = malloc((size_t)n * sizeof *x);
	int *ids = malloc((size_t)n * sizeof *ids);
	t_init(&t);
	for (int i = 0; i < n; i++) {
		x[i] = cases[i].x;
		ids[i] = op1(&t, cases[i].op, scalar_shape, input(&t, i, FG_DT_F32, scalar_shape));
	}
	double **xs = malloc((size_t)n * sizeof *xs);
	for (int i = 0; i < n; i++)
		xs[i] = &x[i];
	double **v = eval(&t, xs, NULL);
	for (int i = 0; i < n; i++) {
		double got = v[ids[i]][0], want = cases[i].want;
		ck_assert_msg(isnan(want) ? isnan(got) : got == want || fabs(got - want) <= 1e-15 * (1 + fabs(want)),
			      "%s(%g) = %.17g, want %.17g", fg_op_info[cases[i].op].name,
			      cases[i].x, got, want);
	}
	fg_interp_free(&t.g, v);
	free(xs);
	free(ids);
	free(x);
	t_done(&t);
}
END_TEST

START_TEST(binary_values_and_comparisons)
{
	T t;
	double x[5] = {1, 2, -3, NAN, 4}, y[5] = {2, 2, 3, 1, 0.5};
	double *in[] = {x, y};
	t_init(&t);
	int a = input(&t, 0, FG_DT_F32, SH(5));
	int b = input(&t, 1, FG_DT_F32, SH(5));
	int p = op2(&t, FG_OP_POW, SH(5), a, b);
	int lt = add(&t, mk(&t, FG_OP_LT, FG_DT_BOOL, SH(5), 2, (int[]){a, b}));
	int le = add(&t, mk(&t, FG_OP_LE, FG_DT_BOOL, SH(5), 2, (int[]){a, b}));
	int eq = add(&t, mk(&t, FG_OP_EQ, FG_DT_BOOL, SH(5), 2, (int[]){a, b}));
	int ne = add(&t, mk(&t, FG_OP_NE, FG_DT_BOOL, SH(5), 2, (int[]){a, b}));
	double **v = eval(&t, in, NULL);
	expect(v[p], (double[]){1, 4, -27, NAN, 2}, 5, 1e-15);
	expect(v[lt], (double[]){1, 0, 1, 0, 0}, 5, 0);
	expect(v[le], (double[]){1, 1, 1, 0, 0}, 5, 0);
	expect(v[eq], (double[]){0, 1, 0, 0, 0}, 5, 0);
	expect(v[ne], (double[]){1, 0, 1, 1, 1}, 5, 0);
	fg_interp_free(&t.g, v);
	t_done(&t);
}
END_TEST

START_TEST(maximum_minimum_propagate_nan)
{
	T t;
	double x[5] = {NAN, 1, 1, -INFINITY, 5}, y[5] = {1, NAN, 2, 3, 4};
	double *in[] = {x, y};
	t_init(&t);
	int a = input(&t, 0, FG_DT_F32, SH(5));
	int b = input(&t, 1, FG_DT_F32, SH(5));
	int mx = op2(&t, FG_OP_MAXIMUM, SH(5), a, b);
	int mn = op2(&t, FG_OP_MINIMUM, SH(5), a, b);
	double **v = eval(&t, in, NULL);
	expect(v[mx], (double[]){NAN, NAN, 2, 3, 5}, 5, 0);
	expect(v[mn], (double[]){NAN, NAN, 1, -INFINITY, 4}, 5, 0);
	fg_interp_free(&t.g, v);
	t_done(&t);
}
END_TEST

/* Integer arithmetic wraps in two's complement (46341^2 passes 2^31 - 1);
 * x * x reuses x's buffer when x dies there, and must still read each
 * element before writing it. */
START_TEST(i32_in_place_square)
{
	T t;
	double x[4] = {-3, 7, 0, 46341};
	double *in[] = {x};
	unsigned char keep[3] = {0, 0, 1};
	t_init(&t);
	int a = input(&t, 0, FG_DT_I32, SH(4));
	int n = op1(&t, FG_OP_NEG, SH(4), a);
	t.g.nodes[n].dt = FG_DT_I32;
	int m = add(&t, mk(&t, FG_OP_MUL, FG_DT_I32, SH(4), 2, (int[]){n, n}));
	double **v = eval(&t, in, keep);
	ck_assert_ptr_null(v[a]);
	ck_assert_ptr_null(v[n]);
	expect(v[m], (double[]){9, 49, 0, 2147488281.0 - 4294967296.0}, 4, 0);
	fg_interp_free(&t.g, v);
	t_done(&t);
}
END_TEST

/* ------------------------------------------------------- reductions */

/* The reduction over the axes in mask, by brute force: each input index
 * decomposed by division, the kept coordinates recombined. */
static void brute_reduce(FgOp op, const double *x, const FgShape *s, uint32_t mask, double *out,
			 int64_t *nout)
{
	int64_t n = 1, no = 1, count = 1;
	for (int i = 0; i < s->rank; i++) {
		n *= s->d[i];
		if (mask >> i & 1)
			count *= s->d[i];
		else
			no *= s->d[i];
	}
	for (int64_t o = 0; o < no; o++)
		out[o] = op == FG_OP_MAX ? -INFINITY : op == FG_OP_MIN ? INFINITY : 0;
	for (int64_t f = 0; f < n; f++) {
		int64_t rem = f, o = 0, scale = 1;
		for (int i = s->rank - 1; i >= 0; i--) {
			int64_t c = rem % s->d[i];
			rem /= s->d[i];
			if (!(mask >> i & 1)) {
				o += c * scale;
				scale *= s->d[i];
			}
		}
		if (op == FG_OP_SUM || op == FG_OP_MEAN)
			out[o] += x[f];
		else if (isnan(x[f]) || isnan(out[o]))
			out[o] = NAN;
		else if (op == FG_OP_MAX)
			out[o] = x[f] > out[o] ? x[f] : out[o];
		else
			out[o] = x[f] < out[o] ? x[f] : out[o];
	}
	if (op == FG_OP_MEAN)
		for (int64_t o = 0; o < no; o++)
			out[o] /= (double)count;
	*nout = no;
}

static FgShape reduced_shape(const FgShape *s, uint32_t mask, int keepdims)
{
	FgShape r;
	memset(&r, 0, sizeof r);
	for (int i = 0; i < s->rank; i++) {
		if (!(mask >> i & 1))
			r.d[r.rank++] = s->d[i];
		else if (keepdims)
			r.d[r.rank++] = 1;
	}
	return r;
}

static int reduce(T *t, FgOp op, int x, uint32_t mask, int keepdims)
{
	const FgShape xs = t->g.nodes[x].shape;
	FgNode n = mk(t, op, FG_DT_F32, reduced_shape(&xs, mask, keepdims), 1, (int[]){x});
	n.a.red.axes = mask;
	n.a.red.keepdims = keepdims;
	return add(t, n);
}

/* Every op, every non-empty axis set of a rank-3 and a rank-4 tensor,
 * keepdims both ways.  Values are multiples of 1/4, so that sums are
 * exact in any order and the comparison can be exact. */
START_TEST(reductions_all_axis_sets)
{
	static const FgOp ops[] = {FG_OP_SUM, FG_OP_MEAN, FG_OP_MAX, FG_OP_MIN};
	const FgShape shapes[] = {SH(2, 3, 4), SH(3, 1, 5, 2)};
	double x[60], want[60];
	for (int i = 0; i < 60; i++)
		x[i] = (double)((i * 37) % 23 - 11) * 0.25;
	double *in[] = {x};
	for (int si = 0; si < 2; si++) {
		const FgShape *s = &shapes[si];
		for (int oi = 0; oi < 4; oi++) {
			for (uint32_t mask = 1; mask < (1u << s->rank); mask++) {
				for (int kd = 0; kd < 2; kd++) {
					T t;
					int64_t nout;
					t_init(&t);
					int a = input(&t, 0, FG_DT_F32, *s);
					int r = reduce(&t, ops[oi], a, mask, kd);
					double **v = eval(&t, in, NULL);
					ck_assert_ptr_nonnull(v);
					brute_reduce(ops[oi], x, s, mask, want, &nout);
					ck_assert_int_eq(nout, fg_shape_numel(&t.g.nodes[r].shape));
					expect(v[r], want, nout, 0);
					fg_interp_free(&t.g, v);
					t_done(&t);
				}
			}
		}
	}
}
END_TEST

/* In the dtypes (fg_interp_eval_in): each float op's result rounded to its
 * dtype, sums and matmul products accumulated in f32 in order; the f64
 * evaluation of the same graph keeps what f32 loses. */
START_TEST(in_dtype_rounds_and_sums_in_f32)
{
	T t;
	const double u = 0x1p-24, x = 0x1.e75a0cp+2;    /* f32: (x + x + x) / 3 != x */
	double row[4] = {1, u, u, u}, col[3] = {1, 1, 1}, same[3] = {x, x, x}, one[1] = {1}, lhs[3] = {1, u, u};
	double *in[] = {row, col, same, one, lhs};
	t_init(&t);
	int a = input(&t, 0, FG_DT_F32, SH(4));
	int b = input(&t, 1, FG_DT_F32, SH(3, 1));
	int c = input(&t, 2, FG_DT_F32, SH(3));
	int h = input(&t, 3, FG_DT_F16, SH(1));
	int s = reduce(&t, FG_OP_SUM, a, 1, 0);
	int m = reduce(&t, FG_OP_MEAN, c, 1, 0);
	int l = input(&t, 4, FG_DT_F32, SH(1, 3));
	int mm = op2(&t, FG_OP_MATMUL, SH(1, 1), l, b);
	int e = add(&t, mk(&t, FG_OP_EXP, FG_DT_F16, SH(1), 1, (int[]){h}));
	double **v = fg_interp_eval_in(&t.g, in, NULL, 1, &t.d);
	double **w = eval(&t, in, NULL);
	ck_assert_ptr_nonnull(v);
	ck_assert_ptr_nonnull(w);
	expect(v[s], (double[]){1}, 1, 0);                     /* 1 + u rounds back to 1, thrice */
	expect(w[s], (double[]){1 + 3 * u}, 1, 0);
	expect(v[m], (double[]){0x1.e75a0ap+2}, 1, 0);         /* an ulp below x */
	expect(w[m], (double[]){x}, 1, 0);
	expect(v[mm], (double[]){1}, 1, 0);                    /* 1*1 + u*1 + u*1, in f32 */
	expect(w[mm], (double[]){1 + 2 * u}, 1, 0);
	expect(v[e], (double[]){2.71875}, 1, 0);               /* e in f16 */
	expect(w[e], (double[]){exp(1.0)}, 1, 1e-16);
	fg_interp_free(&t.g, v);
	fg_interp_free(&t.g, w);
	t_done(&t);
}
END_TEST

/* In the dtypes, the rest of the rules: a long f32 sum goes in blocks of
 * 32 whose sums add pairwise (so 64 terms of u after a 1 are not all lost,
 * where one running sum loses every one); an f16 sum adds in f32 and
 * rounds once; inside a composite a value rounds to f32, its last node to
 * the dtype; a constant stays f32 in a bf16 graph; i32 is exact. */
START_TEST(in_dtype_sums_pairwise_and_keeps_f32_inside)
{
	T t;
	const double u = 0x1p-24;
	double big[96], h16[3] = {1, 0x1p-11, 0x1p-11}, hx[1] = {1}, ints[3] = {16777217, 1, 0};
	for (int i = 0; i < 96; i++)
		big[i] = i < 32 ? (i == 0 ? 1 : 0) : u;
	double *in[] = {big, h16, hx, ints};
	t_init(&t);
	int a = input(&t, 0, FG_DT_F32, SH(96));
	int h = input(&t, 1, FG_DT_F16, SH(3));
	int x = input(&t, 2, FG_DT_F16, SH(1));
	int k = input(&t, 3, FG_DT_I32, SH(3));
	int s = reduce(&t, FG_OP_SUM, a, 1, 0);
	FgNode hs = mk(&t, FG_OP_SUM, FG_DT_F16, SH(1), 1, (int[]){h});
	hs.a.red.axes = 1, hs.a.red.keepdims = 1;
	int hsum = add(&t, hs);
	FgNode c = mk(&t, FG_OP_CONST, FG_DT_BF16, SH(1), 0, NULL);
	c.a.value = 0.1;
	int c1 = add(&t, c);
	FgNode inner = mk(&t, FG_OP_MUL, FG_DT_F16, SH(1), 2, (int[]){x, c1});
	inner.composite = "layernorm";
	int in1 = add(&t, inner);
	FgNode last = mk(&t, FG_OP_ADD, FG_DT_F16, SH(1), 2, (int[]){in1, x});
	last.composite = "layernorm";
	last.flags = FG_NF_COMPOSITE_END;
	int l = add(&t, last);
	FgNode is = mk(&t, FG_OP_SUM, FG_DT_I32, SH(1), 1, (int[]){k});
	is.a.red.axes = 1, is.a.red.keepdims = 1;
	int isum = add(&t, is);
	double **v = fg_interp_eval_in(&t.g, in, NULL, 1, &t.d);
	ck_assert_ptr_nonnull(v);
	expect(v[s], (double[]){1 + 64 * u}, 1, 0);     /* (1 + 0) + 32u + 32u */
	expect(v[hsum], (double[]){1 + 0x1p-10}, 1, 0);  /* exact in f32, then f16 */
	expect(v[c1], (double[]){(double)0.1f}, 1, 0);   /* not bf16's 0.10009765625 */
	expect(v[in1], (double[]){(double)(float)(0.1f * 1.0)}, 1, 0);
	expect(v[l], (double[]){1.099609375}, 1, 0);     /* 1.1000000015 in f16 */
	expect(v[isum], (double[]){16777218}, 1, 0);     /* i32 exact: f32 would hold 16777216 */
	fg_interp_free(&t.g, v);
	t_done(&t);
}
END_TEST

START_TEST(reductions_nan_and_inf)
{
	T t;
	double x[12] = {1, NAN, 3, INFINITY, 1, 2, INFINITY, -INFINITY, 0, -1, -5, 2};
	double *in[] = {x};
	t_init(&t);
	int a = input(&t, 0, FG_DT_F32, SH(4, 3));
	int sum = reduce(&t, FG_OP_SUM, a, 2, 0);
	int mx = reduce(&t, FG_OP_MAX, a, 2, 1);
	int mn = reduce(&t, FG_OP_MIN, a, 2, 0);
	int mean = reduce(&t, FG_OP_MEAN, a, 2, 0);
	int colmax = reduce(&t, FG_OP_MAX, a, 1, 0);
	double **v = eval(&t, in, NULL);
	expect(v[sum], (double[]){NAN, INFINITY, NAN, -4}, 4, 0);
	expect(v[mx], (double[]){NAN, INFINITY, INFINITY, 2}, 4, 0);
	expect(v[mn], (double[]){NAN, 1, -INFINITY, -5}, 4, 0);
	expect(v[mean], (double[]){NAN, INFINITY, NAN, -4.0 / 3}, 4, 1e-15);
	expect(v[colmax], (double[]){INFINITY, NAN, 3}, 3, 0);
	fg_interp_free(&t.g, v);
	t_done(&t);
}
END_TEST

/* Compensated summation recovers what plain summation loses, along a row
 * (the scalar accumulator) and down a column (the vector one). */
START_TEST(sums_are_compensated)
{
	T t;
	double row[4] = {1, 1e100, 1, -1e100};
	double col[8] = {1, 0, 1e100, 0, 1, 0, -1e100, 0};
	double *in[] = {row, col};
	t_init(&t);
	int a = input(&t, 0, FG_DT_F32, SH(4));
	int b = input(&t, 1, FG_DT_F32, SH(4, 2));
	int s = reduce(&t, FG_OP_SUM, a, 1, 0);
	int m = reduce(&t, FG_OP_MEAN, a, 1, 1);
	int c = reduce(&t, FG_OP_SUM, b, 1, 0);
	double **v = eval(&t, in, NULL);
	expect(v[s], (double[]){2}, 1, 0);
	expect(v[m], (double[]){0.5}, 1, 0);
	expect(v[c], (double[]){2, 0}, 2, 0);
	fg_interp_free(&t.g, v);
	t_done(&t);
}
END_TEST

/* ----------------------------------------------------------- layout */

START_TEST(transpose_every_3d_perm)
{
	static const int perms[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2},
					{1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
	const int64_t d[3] = {2, 3, 4};
	double x[24], want[24];
	double *in[] = {x};
	iota(x, 24, 0);
	for (int p = 0; p < 6; p++) {
		T t;
		const int *pm = perms[p];
		t_init(&t);
		int a = input(&t, 0, FG_DT_F32, SH(2, 3, 4));
		FgNode n = mk(&t, FG_OP_TRANSPOSE, FG_DT_F32, SH(d[pm[0]], d[pm[1]], d[pm[2]]), 1, (int[]){a});
		for (int i = 0; i < 3; i++)
			n.a.perm[i] = pm[i];
		int tr = add(&t, n);
		/* out[i0,i1,i2] = x[j] with j's axis pm[k] = ik */
		for (int i0 = 0; i0 < d[pm[0]]; i0++)
			for (int i1 = 0; i1 < d[pm[1]]; i1++)
				for (int i2 = 0; i2 < d[pm[2]]; i2++) {
					int j[3];
					j[pm[0]] = i0;
					j[pm[1]] = i1;
					j[pm[2]] = i2;
					want[(i0 * d[pm[1]] + i1) * d[pm[2]] + i2] = x[(j[0] * 3 + j[1]) * 4 + j[2]];
				}
		double **v = eval(&t, in, NULL);
		expect(v[tr], want, 24, 0);
		fg_interp_free(&t.g, v);
		t_done(&t);
	}
}
END_TEST

/* Unit dims are dropped and contiguous runs merged before walking. */
START_TEST(transpose_with_unit_dims)
{
	T t;
	double x[6], want[6];
	double *in[] = {x};
	iota(x, 6, 1);
	t_init(&t);
	int a = input(&t, 0, FG_DT_F32, SH(2, 1, 3, 1));
	FgNode n = mk(&t, FG_OP_TRANSPOSE, FG_DT_F32, SH(1, 3, 1, 2), 1, (int[]){a});
	memcpy(n.a.perm, (int[]){3, 2, 1, 0}, 4 * sizeof(int));
	int tr = add(&t, n);
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 2; j++)
			want[i * 2 + j] = x[j * 3 + i];
	double **v = eval(&t, in, NULL);
	expect(v[tr], want, 6, 0);
	fg_interp_free(&t.g, v);
	t_done(&t);
}
END_TEST

/* Planes larger than a tile, on sizes that are no multiple of one. */
START_TEST(transpose_in_tiles)
{
	enum { A = 3, B = 70, C = 45 };
	T t;
	double x[A * B * C], want[A * B * C];
	double *in[] = {x};
	iota(x, A * B * C, 0);
	t_init(&t);
	int a = input(&t, 0, FG_DT_F32, SH(A, B, C));
	FgNode n = mk(&t, FG_OP_TRANSPOSE, FG_DT_F32, SH(A, C, B), 1, (int[]){a});
	memcpy(n.a.perm, (int[]){0, 2, 1}, 3 * sizeof(int));
	int t1 = add(&t, n);
	n = mk(&t, FG_OP_TRANSPOSE, FG_DT_F32, SH(C, B, A), 1, (int[]){a});
	memcpy(n.a.perm, (int[]){2, 1, 0}, 3 * sizeof(int));
	int t2 = add(&t, n);
	double **v = eval(&t, in, NULL);
	for (int i = 0; i < A; i++)
		for (int j = 0; j < B; j++)
			for (int k = 0; k < C; k++)
				want[(i * C + k) * B + j] = x[(i * B + j) * C + k];
	expect(v[t1], want, A * B * C, 0);
	for (int i = 0; i < A; i++)
		for (int j = 0; j < B; j++)
			for (int k = 0; k < C; k++)
				want[(k * B + j) * A + i] = x[(i * B + j) * C + k];
	expect(v[t2], want, A * B * C, 0);
	fg_interp_free(&t.g, v);
	t_done(&t);
}
END_TEST

/* A reshape keeps C order.  Kept operands keep their buffer; a dying one
 * is handed over. */
START_TEST(reshape_copies_or_takes_over)
{
	T t;
	double x[24];
	double *in[] = {x};
	iota(x, 24, 0);
	t_init(&t);
	int a = input(&t, 0, FG_DT_F32, SH(2, 3, 4));
	int r1 = op1(&t, FG_OP_RESHAPE, SH(4, 6), a);
	int e = op1(&t, FG_OP_NEG, SH(4, 6), r1);
	int r2 = op1(&t, FG_OP_RESHAPE, SH(24), e);
	unsigned char keep[4] = {1, 1, 0, 1};
	double **v = eval(&t, in, keep);
	expect(v[a], x, 24, 0);
	expect(v[r1], x, 24, 0);
	ck_assert_ptr_null(v[e]);
	ck_assert_ptr_ne(v[a], v[r1]);
	for (int i = 0; i < 24; i++)
		ck_assert(v[r2][i] == -x[i]);
	fg_interp_free(&t.g, v);
	t_done(&t);
}
END_TEST

START_TEST(broadcast_to)
{
	T t;
	double x[3] = {1, 2, 3}, want[24];
	double *in[] = {x};
	t_init(&t);
	int a = input(&t, 0, FG_DT_F32, SH(3, 1));
	int b = op1(&t, FG_OP_BROADCAST_TO, SH(2, 3, 4), a);
	int c = input(&t, 0, FG_DT_F32, SH(3, 1));
	int d = op1(&t, FG_OP_BROADCAST_TO, SH(3, 1), c); /* to its own shape */
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 3; j++)
			for (int k = 0; k < 4; k++)
				want[(i * 3 + j) * 4 + k] = x[j];
	double **v = eval(&t, in, NULL);
	expect(v[b], want, 24, 0);
	expect(v[d], x, 3, 0);
	fg_interp_free(&t.g, v);
	t_done(&t);
}
END_TEST

static int slice(T *t, int x, int axis, int64_t start, int64_t end)
{
	FgShape s = t->g.nodes[x].shape;
	s.d[axis] = end - start;
	FgNode n = mk(t, FG_OP_SLICE, FG_DT_F32, s, 1, (int[]){x});
	n.a.slice.axis = axis;
	n.a.slice.start = start;
	n.a.slice.end = end;
	return add(t, n);
}

START_TEST(slices)
{
	T t;
	double x[24], w1[12], w2[8];
	double *in[] = {x};
	iota(x, 24, 0);
	t_init(&t);
	int a = input(&t, 0, FG_DT_F32, SH(2, 4, 3));
	int s1 = slice(&t, a, 1, 1, 3);
	int s2 = slice(&t, a, 2, 2, 3);
	int s0 = slice(&t, a, 0, 1, 2);
	int empty = slice(&t, a, 1, 2, 2);
	int esum = reduce(&t, FG_OP_SUM, empty, 7, 0);
	int emax = reduce(&t, FG_OP_MAX, empty, 2, 0);
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 2; j++)
			for (int k = 0; k < 3; k++)
				w1[(i * 2 + j) * 3 + k] = x[(i * 4 + j + 1) * 3 + k];
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 4; j++)
			w2[i * 4 + j] = x[(i * 4 + j) * 3 + 2];
	double **v = eval(&t, in, NULL);
	expect(v[s1], w1, 12, 0);
	expect(v[s2], w2, 8, 0);
	expect(v[s0], x + 12, 12, 0);
	expect(v[esum], (double[]){0}, 1, 0);
	expect(v[emax], (double[]){-INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY}, 6, 0);
	fg_interp_free(&t.g, v);
	t_done(&t);
}
END_TEST

START_TEST(concat_three_on_middle_axis)
{
	T t;
	double x[6], y[12], z[18], want[36];
	double *in[] = {x, y, z};
	iota(x, 6, 0);
	iota(y, 12, 100);
	iota(z, 18, 200);
	t_init(&t);
	int a = input(&t, 0, FG_DT_F32, SH(2, 1, 3));
	int b = input(&t, 1, FG_DT_F32, SH(2, 2, 3));
	int c = input(&t, 2, FG_DT_F32, SH(2, 3, 3));
	FgNode n = mk(&t, FG_OP_CONCAT, FG_DT_F32, SH(2, 6, 3), 3, (int[]){a, b, c});
	n.a.axis = 1;
	int cat = add(&t, n);
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 6; j++)
			for (int k = 0; k < 3; k++)
				want[(i * 6 + j) * 3 + k] = j < 1 ? x[(i * 1 + j) * 3 + k]
							    : j < 3 ? y[(i * 2 + j - 1) * 3 + k]
								    : z[(i * 3 + j - 3) * 3 + k];
	double **v = eval(&t, in, NULL);
	expect(v[cat], want, 36, 0);
	fg_interp_free(&t.g, v);
	t_done(&t);
}
END_TEST

/* ----------------------------------------------------------- matmul */

START_TEST(matmul_small)
{
	T t;
	double a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {7, 8, 9, 10, 11, 12};
	double *in[] = {a, b};
	t_init(&t);
	int x = input(&t, 0, FG_DT_F32, SH(2, 3));
	int y = input(&t, 1, FG_DT_F32, SH(3, 2));
	int m = op2(&t, FG_OP_MATMUL, SH(2, 2), x, y);
	double **v = eval(&t, in, NULL);
	expect(v[m], (double[]){58, 64, 139, 154}, 4, 0);
	fg_interp_free(&t.g, v);
	t_done(&t);
}
END_TEST

/* [2,1,3,4] x [5,4,2] -> [2,5,3,2]: a's batch dim of 1 stretches to 5,
 * b's missing leading dim to 2. */
START_TEST(matmul_broadcast_batch)
{
	T t;
	double a[24], b[40], want[60];
	double *in[] = {a, b};
	for (int i = 0; i < 24; i++)
		a[i] = (double)(i % 7) - 3;
	for (int i = 0; i < 40; i++)
		b[i] = (double)(i % 5) * 0.5 - 1;
	t_init(&t);
	int x = input(&t, 0, FG_DT_F32, SH(2, 1, 3, 4));
	int y = input(&t, 1, FG_DT_F32, SH(5, 4, 2));
	int m = op2(&t, FG_OP_MATMUL, SH(2, 5, 3, 2), x, y);
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 5; j++)
			for (int r = 0; r < 3; r++)
				for (int c = 0; c < 2; c++) {
					double s = 0;
					for (int k = 0; k < 4; k++)
						s += a[(i * 3 + r) * 4 + k] * b[(j * 4 + k) * 2 + c];
					want[((i * 5 + j) * 3 + r) * 2 + c] = s;
				}
	double **v = eval(&t, in, NULL);
	expect(v[m], want, 60, 0);
	fg_interp_free(&t.g, v);
	t_done(&t);
}
END_TEST

/* Rows not a multiple of the 4-row kernel, columns past one column block. */
START_TEST(matmul_odd_sizes)
{
	enum { M = 7, K = 5, N = 600 };
	T t;
	double *a = malloc(M * K * sizeof *a), *b = malloc(K * N * sizeof *b);
	double *want = malloc(M * N * sizeof *want);
	double *in[] = {a, b};
	for (int i = 0; i < M * K; i++)
		a[i] = (double)((i * 13) % 17) - 8;
	for (int i = 0; i < K * N; i++)
		b[i] = (double)((i * 7) % 19) - 9;
	for (int i = 0; i < M; i++)
		for (int j = 0; j < N; j++) {
			double s = 0;
			for (int k = 0; k < K; k++)
				s += a[i * K + k] * b[k * N + j];
			want[i * N + j] = s;
		}
	t_init(&t);
	int x = input(&t, 0, FG_DT_F32, SH(M, K));
	int y = input(&t, 1, FG_DT_F32, SH(1, K, N));
	int m = op2(&t, FG_OP_MATMUL, SH(1, M, N), x, y);
	double **v = eval(&t, in, NULL);
	expect(v[m], want, M * N, 0);
	fg_interp_free(&t.g, v);
	free(a);
	free(b);
	free(want);
	t_done(&t);
}
END_TEST

/* ---------------------------------------------------------- dropout */

static int dropout(T *t, int x, double p, uint64_t seed)
{
	FgNode n = mk(t, FG_OP_DROPOUT, FG_DT_F32, t->g.nodes[x].shape, 1, (int[]){x});
	n.a.drop.p = p;
	n.a.drop.seed = seed;
	return add(t, n);
}

/* The mask is Philox at the flat index, the same from run to run, and
 * kept elements are scaled by 1/(1-p); p = 0 keeps everything as is. */
START_TEST(dropout_mask_and_scale)
{
	enum { R = 100, C = 100 };
	T t;
	double *x = malloc(R * C * sizeof *x);
	double *in[] = {x};
	for (int i = 0; i < R * C; i++)
		x[i] = 1 + i % 10;
	t_init(&t);
	int a = input(&t, 0, FG_DT_F32, SH(R, C));
	int d1 = dropout(&t, a, 0.25, 42);
	int d2 = dropout(&t, a, 0.25, 42);
	int d3 = dropout(&t, a, 0.25, 43);
	int d0 = dropout(&t, a, 0.0, 42);
	double **v = eval(&t, in, NULL);
	uint64_t thr = fgrt_dropout_threshold(0.25);
	int64_t dropped = 0, differ = 0;
	for (int64_t i = 0; i < R * C; i++) {
		int kept = fgrt_dropout_keep(42, (uint64_t)i, thr);
		ck_assert(v[d1][i] == (kept ? x[i] / 0.75 : 0.0));
		ck_assert(v[d1][i] == v[d2][i]);
		ck_assert(v[d0][i] == x[i]);
		dropped += !kept;
		differ += (v[d3][i] == 0) != (v[d1][i] == 0);
	}
	ck_assert_msg(dropped > 2300 && dropped < 2700, "dropped %lld of 10000", (long long)dropped);
	ck_assert(differ > 1000);
	fg_interp_free(&t.g, v);
	free(x);
	t_done(&t);
}
END_TEST

/* ---------------------------------------------------- cast, rounding */

START_TEST(round_to_ties_even)
{
	/* f16: ulp(1) = 2^-10; bf16: 2^-7; f32: 2^-23. */
	ck_assert(fg_round_to(FG_DT_F16, 1 + 0x1p-11) == 1);
	ck_assert(fg_round_to(FG_DT_F16, 1 + 3 * 0x1p-11) == 1 + 0x1p-9);
	ck_assert(fg_round_to(FG_DT_F16, 1 + 0x1p-11 + 0x1p-40) == 1 + 0x1p-10); /* rounded once */
	ck_assert(fg_round_to(FG_DT_F16, 65519) == 65504);
	ck_assert(fg_round_to(FG_DT_F16, 65520) == INFINITY);
	ck_assert(fg_round_to(FG_DT_BF16, 1 + 0x1p-8) == 1);
	ck_assert(fg_round_to(FG_DT_BF16, 1 + 3 * 0x1p-8) == 1 + 0x1p-6);
	ck_assert(fg_round_to(FG_DT_BF16, -(1 + 3 * 0x1p-8)) == -(1 + 0x1p-6));
	ck_assert(fg_round_to(FG_DT_F32, 1 + 0x1p-24) == 1);
	ck_assert(fg_round_to(FG_DT_F32, 1 + 3 * 0x1p-24) == 1 + 0x1p-22);
	ck_assert(fg_round_to(FG_DT_F32, 0x1.fffffefffffffp127) == 0x1.fffffep127);
	ck_assert(fg_round_to(FG_DT_F32, 0x1.ffffffp127) == INFINITY);
	ck_assert(fg_round_to(FG_DT_F32, -1e300) == -INFINITY);
	ck_assert(isnan(fg_round_to(FG_DT_F32, NAN)));
	ck_assert(fg_round_to(FG_DT_I32, 2.5) == 2);
	ck_assert(fg_round_to(FG_DT_I32, -2.5) == -2);
	ck_assert(fg_round_to(FG_DT_BOOL, -0.0) == 0);
}
END_TEST

START_TEST(cast_to_each_dtype)
{
	static const double x[] = {1 + 0x1p-11, 1 + 3 * 0x1p-8, 70000, -2.7, 3e9, -3e9,
				   NAN, INFINITY, -INFINITY, -0.0, 0.5};
	enum { N = sizeof x / sizeof x[0] };
	static const FgDtype dts[] = {FG_DT_F16, FG_DT_BF16, FG_DT_I32, FG_DT_BOOL, FG_DT_F32};
	static const double want[5][N] = {
		{1, 1 + 3 * 0x1p-8, INFINITY, -2.69921875, INFINITY, -INFINITY, NAN, INFINITY, -INFINITY, 0, 0.5},
		{1, 1 + 0x1p-6, 70144, -2.703125, 3003121664.0, -3003121664.0, NAN, INFINITY, -INFINITY, 0, 0.5},
		{1, 1, 70000, -2, 2147483647, -2147483648.0, 0, 2147483647, -2147483648.0, 0, 0},
		{1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1},
		{1 + 0x1p-11, 1 + 3 * 0x1p-8, 70000, (float)-2.7, 3e9, -3e9, NAN, INFINITY, -INFINITY, 0, 0.5},
	};
	T t;
	double xv[N];
	double *in[] = {xv};
	int ids[5];
	memcpy(xv, x, sizeof xv);
	t_init(&t);
	int a = input(&t, 0, FG_DT_F32, SH(N));
	for (int i = 0; i < 5; i++)
		ids[i] = add(&t, mk(&t, FG_OP_CAST, dts[i], SH(N), 1, (int[]){a}));
	double **v = eval(&t, in, NULL);
	for (int i = 0; i < 5; i++) {
		expect(v[ids[i]], want[i], N, 0);
		/* -0.0 survives the float casts and becomes +0 for i32/bool */
		ck_assert_int_eq(signbit(v[ids[i]][9]) != 0, dts[i] != FG_DT_I32 && dts[i] != FG_DT_BOOL);
	}
	fg_interp_free(&t.g, v);
	t_done(&t);
}
END_TEST

/* ---------------------------------------------- liveness and memory */

/* Only kept nodes come back; the rest are freed after their last use
 * (ASan's leak check verifies that they really are). */
START_TEST(only_kept_buffers_survive)
{
	T t;
	double x[4] = {0, 1, 2, 3};
	double *in[] = {x};
	t_init(&t);
	int a = input(&t, 0, FG_DT_F32, SH(4));
	int e = op1(&t, FG_OP_EXP, SH(4), a);
	int n = op1(&t, FG_OP_NEG, SH(4), e);
	int s = op2(&t, FG_OP_ADD, SH(4), a, n);
	int m = op2(&t, FG_OP_MUL, SH(4), s, s);
	unsigned char *keep = calloc((size_t)t.g.nnodes, 1);
	keep[m] = 1;
	double **v = eval(&t, in, keep);
	for (int i = 0; i < t.g.nnodes; i++)
		if (i != m)
			ck_assert_ptr_null(v[i]);
	for (int i = 0; i < 4; i++) {
		double w = (x[i] - exp(x[i])) * (x[i] - exp(x[i]));
		ck_assert(fabs(v[m][i] - w) <= 1e-15 * fabs(w));
	}
	fg_interp_free(&t.g, v);

	/* A kept intermediate is never overwritten by a later in-place op. */
	keep[e] = 1;
	v = eval(&t, in, keep);
	for (int i = 0; i < 4; i++)
		ck_assert(v[e][i] == exp(x[i]));
	ck_assert_ptr_null(v[n]);
	fg_interp_free(&t.g, v);
	free(keep);
	t_done(&t);
}
END_TEST

/* Buffers large enough for the pool: taken over in place, given back when
 * taken over (a NULL slot), recycled by a later node of the same size,
 * and a transpose larger than one tile on sizes that are no multiple of
 * it. */
START_TEST(large_buffers_are_recycled)
{
	enum { R = 256, C = 300 };
	T t;
	double *x = malloc(R * C * sizeof *x), *want = malloc(R * C * sizeof *want);
	double *in[] = {x};
	for (int i = 0; i < R * C; i++)
		x[i] = (double)(i % 101) * 0.01;
	t_init(&t);
	int a = input(&t, 0, FG_DT_F32, SH(R, C));
	int e1 = op1(&t, FG_OP_NEG, SH(R, C), a);
	int e2 = op1(&t, FG_OP_EXP, SH(R, C), e1);
	FgNode tn = mk(&t, FG_OP_TRANSPOSE, FG_DT_F32, SH(C, R), 1, (int[]){e2});
	tn.a.perm[0] = 1;
	tn.a.perm[1] = 0;
	int tr = add(&t, tn);
	int m = op2(&t, FG_OP_MUL, SH(C, R), tr, tr);
	int r = op1(&t, FG_OP_RESHAPE, SH(C * R), m);
	int s = op2(&t, FG_OP_ADD, SH(C * R), r, cnst(&t, 1, scalar_shape));
	int r2 = op1(&t, FG_OP_RESHAPE, SH(C, R), s);
	tn = mk(&t, FG_OP_TRANSPOSE, FG_DT_F32, SH(R, C), 1, (int[]){r2});
	tn.a.perm[0] = 1;
	tn.a.perm[1] = 0;
	int back = add(&t, tn);
	int sum = reduce(&t, FG_OP_SUM, back, 1, 0);
	int out = op2(&t, FG_OP_SUB, SH(R, C), back, sum);
	unsigned char *keep = calloc((size_t)t.g.nnodes, 1);
	keep[out] = 1;
	double **v = eval(&t, in, keep);
	double col[C] = {0};
	for (int i = 0; i < R * C; i++) {
		want[i] = exp(-x[i]) * exp(-x[i]) + 1;
		col[i % C] += want[i];
	}
	for (int i = 0; i < R * C; i++)
		want[i] -= col[i % C];
	expect(v[out], want, R * C, 1e-12);
	for (int i = 0; i < t.g.nnodes; i++)
		if (i != out)
			ck_assert_ptr_null(v[i]);
	fg_interp_free(&t.g, v);
	free(keep);
	free(x);
	free(want);
	t_done(&t);
}
END_TEST

/* A node no kept node depends on is never evaluated, however large. */
START_TEST(dead_nodes_are_skipped)
{
	T t;
	t_init(&t);
	int big = cnst(&t, 1, SH(1 << 20, 1 << 20, 1 << 20));
	(void)op1(&t, FG_OP_EXP, SH(1 << 20, 1 << 20, 1 << 20), big);
	int c = cnst(&t, 3, SH(2));
	unsigned char *keep = calloc((size_t)t.g.nnodes, 1);
	keep[c] = 1;
	double **v = eval(&t, NULL, keep);
	ck_assert_ptr_nonnull(v);
	ck_assert_int_eq(t.d.nerrors, 0);
	expect(v[c], (double[]){3, 3}, 2, 0);
	fg_interp_free(&t.g, v);
	free(keep);
	t_done(&t);
}
END_TEST

START_TEST(out_of_memory_is_an_error)
{
	T t;
	t_init(&t);
	int c = cnst(&t, 1, SH(2));
	int huge = cnst(&t, 1, SH(1 << 20, 1 << 20, 1 << 17)); /* 2^60 bytes */
	(void)op2(&t, FG_OP_ADD, SH(1 << 20, 1 << 20, 1 << 17), huge, c);
	double **v = eval(&t, NULL, NULL);
	ck_assert_ptr_null(v);
	ck_assert_int_eq(t.d.nerrors, 1);
	ck_assert_msg(strstr(t_msgs(&t), "out of memory evaluating const") != NULL, "%s", t_msgs(&t));
	ck_assert_msg(strstr(t_msgs(&t), "f32[1048576,1048576,131072]") != NULL, "%s", t_msgs(&t));
	t_done(&t);

	/* 2^93 elements: the byte count itself overflows. */
	t_init(&t);
	(void)cnst(&t, 1, SH(INT64_C(1) << 31, INT64_C(1) << 31, INT64_C(1) << 31));
	v = eval(&t, NULL, NULL);
	ck_assert_ptr_null(v);
	ck_assert_int_eq(t.d.nerrors, 1);
	ck_assert_msg(strstr(t_msgs(&t), "too large") != NULL, "%s", t_msgs(&t));
	t_done(&t);
}
END_TEST

/* A million-node chain: no recursion, and each buffer freed as it dies. */
START_TEST(million_node_chain)
{
	enum { N = 1000000 };
	T t;
	double x[2] = {1.5, -2};
	double *in[] = {x};
	t_init(&t);
	int id = input(&t, 0, FG_DT_F32, SH(2));
	for (int i = 0; i < N; i++)
		id = op1(&t, FG_OP_NEG, SH(2), id);
	unsigned char *keep = calloc((size_t)t.g.nnodes, 1);
	keep[id] = 1;
	double **v = eval(&t, in, keep);
	expect(v[id], x, 2, 0);
	fg_interp_free(&t.g, v);
	free(keep);
	t_done(&t);
}
END_TEST

START_TEST(composite_is_an_internal_error)
{
	T t;
	double x[2] = {1, 2};
	double *in[] = {x};
	t_init(&t);
	int a = input(&t, 0, FG_DT_F32, SH(2));
	FgNode n = mk(&t, FG_OP_SOFTMAX, FG_DT_F32, SH(2), 1, (int[]){a});
	n.a.red.axes = 1;
	add(&t, n);
	eval(&t, in, NULL); /* aborts through fg_die */
}
END_TEST

/* -------------------------------------------------------------- run */

/* A scratch directory under /tmp, removed with its files by rm_tree. */
static char *scratch(void)
{
	char *dir = strdup("/tmp/fgc-test-interp-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	return dir;
}

static void rm_tree(const char *dir)
{
	char cmd[512];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}

static char *path2(const char *dir, const char *name)
{
	size_t n = strlen(dir) + strlen(name) + 2;
	char *p = malloc(n);
	snprintf(p, n, "%s/%s", dir, name);
	return p;
}

static int exists(const char *dir, const char *name)
{
	struct stat st;
	char *p = path2(dir, name);
	int r = stat(p, &st) == 0;
	free(p);
	return r;
}

static void write_npy(const char *dir, const char *name, FgrtNpyType type, int rank,
		      const int64_t *shape, const void *data)
{
	FgrtNpy t;
	char err[FGRT_ERRLEN];
	char *p = path2(dir, name);
	memset(&t, 0, sizeof t);
	t.type = type;
	t.rank = rank;
	t.numel = 1;
	for (int i = 0; i < rank; i++) {
		t.shape[i] = shape[i];
		t.numel *= shape[i];
	}
	t.nbytes = (size_t)t.numel * fgrt_npy_type_size(type);
	t.data = (void *)data;
	ck_assert_msg(fgrt_npy_write(p, &t, err) == 0, "%s", err);
	free(p);
}

static void read_npy(const char *dir, const char *name, FgrtNpy *t)
{
	char err[FGRT_ERRLEN];
	char *p = path2(dir, name);
	ck_assert_msg(fgrt_npy_read(p, 0, t, err) == 0, "%s", err);
	free(p);
}

/* graph g { input x : f32[2,3]; param w : bf16[3]; param h : f16[3];
 *           input k : i32[3]; y = x * w @save; output y, z } where
 * z = cast(k, f16) + h, as a hand-built IR. */
static void run_graph(T *t)
{
	int x = input(t, 0, FG_DT_F32, SH(2, 3));
	int w = input(t, 1, FG_DT_BF16, SH(3));
	int h = input(t, 2, FG_DT_F16, SH(3));
	int k = input(t, 3, FG_DT_I32, SH(3));
	t->g.nodes[x].name = "x";
	t->g.nodes[w].name = "w";
	t->g.nodes[w].op = FG_OP_PARAM;
	t->g.nodes[h].name = "h";
	t->g.nodes[h].op = FG_OP_PARAM;
	t->g.nodes[k].name = "k";
	int y = op2(t, FG_OP_MUL, SH(2, 3), x, w);
	t->g.nodes[y].name = "y";
	t->g.nodes[y].flags = FG_NF_SAVED | FG_NF_OUTPUT;
	int kc = add(t, mk(t, FG_OP_CAST, FG_DT_F16, SH(3), 1, (int[]){k}));
	int z = add(t, mk(t, FG_OP_ADD, FG_DT_F16, SH(3), 2, (int[]){kc, h}));
	t->g.nodes[z].name = "z";
	t->g.nodes[z].flags = FG_NF_OUTPUT;
	t->g.inputs = fg_arena_array(&t->arena, 4, sizeof(int));
	memcpy(t->g.inputs, (int[]){x, w, h, k}, 4 * sizeof(int));
	t->g.ninputs = 4;
	t->g.outputs = fg_arena_array(&t->arena, 2, sizeof(int));
	memcpy(t->g.outputs, (int[]){y, z}, 2 * sizeof(int));
	t->g.noutputs = 2;
}

/* Drawn inputs follow fgrt_philox.h's input stream; outputs are written
 * in their storage types (bf16 as <f4), saved values as saved.NAME. */
START_TEST(run_draws_and_writes)
{
	T t;
	char *dir = scratch();
	char *out = path2(dir, "a/b");
	FgrtNpy y, z, sy;
	t_init(&t);
	run_graph(&t);
	ck_assert_int_eq(fg_run(&t.g, NULL, 0, out, 7, 0, &t.d), 0);
	ck_assert_int_eq(t.d.nerrors, 0);
	read_npy(out, "y.npy", &y);
	read_npy(out, "saved.y.npy", &sy);
	read_npy(out, "z.npy", &z);
	ck_assert_int_eq(y.type, FGRT_NPY_F4);
	ck_assert_int_eq(y.rank, 2);
	ck_assert_int_eq(z.type, FGRT_NPY_F2);
	ck_assert_int_eq(z.rank, 1);
	ck_assert_int_eq(memcmp(y.data, sy.data, y.nbytes), 0);
	for (int i = 0; i < 6; i++) {
		double xv = 2 * fgrt_input_uniform(7, 0, (uint64_t)i) - 1;
		double wv = fg_round_to(FG_DT_BF16, 2 * fgrt_input_uniform(7, 1, (uint64_t)(i % 3)) - 1);
		ck_assert(((float *)y.data)[i] == (float)(xv * wv));
	}
	for (int i = 0; i < 3; i++) {
		double hv = fg_round_to(FG_DT_F16, 2 * fgrt_input_uniform(7, 2, (uint64_t)i) - 1);
		double kv = floor(17 * fgrt_input_uniform(7, 3, (uint64_t)i)) - 8;
		ck_assert(kv >= -8 && kv <= 8);
		ck_assert(fgrt_f16_to_f64(((uint16_t *)z.data)[i]) == fg_round_to(FG_DT_F16, kv + hv));
	}
	fgrt_npy_free(&y);
	fgrt_npy_free(&sy);
	fgrt_npy_free(&z);
	rm_tree(dir);
	free(out);
	free(dir);
	t_done(&t);
}
END_TEST

/* Files given are read; a bf16 param with values bf16 cannot hold is
 * rounded with one warning that counts them. */
START_TEST(run_reads_inputs)
{
	T t;
	char *dir = scratch();
	char *in = path2(dir, "in"), *out = path2(dir, "out");
	float x[6] = {1, 2, 3, 4, 5, 6}, w[3] = {1, 1 + 0x1p-9f, 1 + 3 * 0x1p-8f};
	int32_t k[3] = {1, -2, 3};
	uint16_t h[3] = {0x3C00, 0x4000, 0x3800}; /* 1, 2, 0.5 */
	FgrtNpy y, z;
	ck_assert_int_eq(mkdir(in, 0777), 0);
	write_npy(in, "x.npy", FGRT_NPY_F4, 2, (int64_t[]){2, 3}, x);
	write_npy(in, "w.npy", FGRT_NPY_F4, 1, (int64_t[]){3}, w);
	write_npy(in, "h.npy", FGRT_NPY_F2, 1, (int64_t[]){3}, h);
	write_npy(in, "k.npy", FGRT_NPY_I4, 1, (int64_t[]){3}, k);
	t_init(&t);
	run_graph(&t);
	ck_assert_int_eq(fg_run(&t.g, in, 0, out, 0, 0, &t.d), 0);
	ck_assert_int_eq(t.d.nwarnings, 1);
	ck_assert_msg(strstr(t_msgs(&t), "2 of the 3 values of param 'w'") != NULL, "%s", t_msgs(&t));
	ck_assert_msg(strstr(t_msgs(&t), "w.npy") != NULL, "%s", t_msgs(&t));
	read_npy(out, "y.npy", &y);
	read_npy(out, "z.npy", &z);
	float wy[6] = {1, 2, 3 * (1 + 0x1p-6f), 4, 5, 6 * (1 + 0x1p-6f)};
	for (int i = 0; i < 6; i++)
		ck_assert(((float *)y.data)[i] == wy[i]);
	double wz[3] = {2, 0, 3.5};
	for (int i = 0; i < 3; i++)
		ck_assert(fgrt_f16_to_f64(((uint16_t *)z.data)[i]) == wz[i]);
	fgrt_npy_free(&y);
	fgrt_npy_free(&z);
	rm_tree(dir);
	free(in);
	free(out);
	free(dir);
	t_done(&t);
}
END_TEST

/* Mismatched files are errors naming the file, the tensor and both
 * types; every one is reported, and nothing is written (the inputs given
 * no file are drawn: --draw-missing). */
START_TEST(run_rejects_mismatches)
{
	T t;
	char *dir = scratch();
	char *in = path2(dir, "in"), *out = path2(dir, "out");
	float x[8] = {0};
	uint16_t w[3] = {0};
	ck_assert_int_eq(mkdir(in, 0777), 0);
	write_npy(in, "x.npy", FGRT_NPY_F4, 2, (int64_t[]){2, 4}, x);
	write_npy(in, "w.npy", FGRT_NPY_F2, 1, (int64_t[]){3}, w);
	t_init(&t);
	run_graph(&t);
	ck_assert_int_eq(fg_run(&t.g, in, 1, out, 0, 0, &t.d), 1);
	ck_assert_int_eq(t.d.nerrors, 2);
	const char *m = t_msgs(&t);
	ck_assert_msg(strstr(m, "x.npy' holds <f4 (2, 4), but input 'x' is declared f32[2,3] and needs <f4 (2, 3)") != NULL, "%s", m);
	ck_assert_msg(strstr(m, "w.npy' holds <f2 (3,), but param 'w' is declared bf16[3] and needs <f4 (3,)") != NULL, "%s", m);
	ck_assert(!exists(dir, "out"));
	rm_tree(dir);
	free(in);
	free(out);
	free(dir);
	t_done(&t);
}
END_TEST

START_TEST(run_rejects_bad_dirs)
{
	T t;
	char *dir = scratch();
	char *file = path2(dir, "file"), *missing = path2(dir, "missing");
	FILE *f = fopen(file, "w");
	ck_assert_ptr_nonnull(f);
	fclose(f);
	t_init(&t);
	run_graph(&t);
	ck_assert_int_eq(fg_run(&t.g, NULL, 0, file, 0, 0, &t.d), 1);
	ck_assert_msg(strstr(t_msgs(&t), "is not a directory") != NULL, "%s", t_msgs(&t));
	ck_assert_int_eq(fg_run(&t.g, missing, 0, dir, 0, 0, &t.d), 1);
	ck_assert_msg(strstr(t_msgs(&t), "cannot read inputs from") != NULL, "%s", t_msgs(&t));
	ck_assert(!exists(dir, "y.npy"));
	rm_tree(dir);
	free(file);
	free(missing);
	free(dir);
	t_done(&t);
}
END_TEST

static Suite *interp_suite(void)
{
	Suite *s = suite_create("interp");
	TCase *tc = tcase_create("elementwise");
	tcase_add_test(tc, broadcast_column_with_row);
	tcase_add_test(tc, broadcast_rank3_with_matrix);
	tcase_add_test(tc, broadcast_both_ways);
	tcase_add_test(tc, where_broadcasts_three_operands);
	tcase_add_test(tc, const_fills_its_shape);
	tcase_add_test(tc, unary_values);
	tcase_add_test(tc, binary_values_and_comparisons);
	tcase_add_test(tc, maximum_minimum_propagate_nan);
	tcase_add_test(tc, i32_in_place_square);
	suite_add_tcase(s, tc);
	tc = tcase_create("reduce");
	tcase_add_test(tc, reductions_all_axis_sets);
	tcase_add_test(tc, reductions_nan_and_inf);
	tcase_add_test(tc, sums_are_compensated);
	tcase_add_test(tc, in_dtype_rounds_and_sums_in_f32);
	tcase_add_test(tc, in_dtype_sums_pairwise_and_keeps_f32_inside);
	suite_add_tcase(s, tc);
	tc = tcase_create("layout");
	tcase_add_test(tc, transpose_every_3d_perm);
	tcase_add_test(tc, transpose_with_unit_dims);
	tcase_add_test(tc, transpose_in_tiles);
	tcase_add_test(tc, reshape_copies_or_takes_over);
	tcase_add_test(tc, broadcast_to);
	tcase_add_test(tc, slices);
	tcase_add_test(tc, concat_three_on_middle_axis);
	suite_add_tcase(s, tc);
	tc = tcase_create("matmul");
	tcase_add_test(tc, matmul_small);
	tcase_add_test(tc, matmul_broadcast_batch);
	tcase_add_test(tc, matmul_odd_sizes);
	suite_add_tcase(s, tc);
	tc = tcase_create("dropout_cast");
	tcase_add_test(tc, dropout_mask_and_scale);
	tcase_add_test(tc, round_to_ties_even);
	tcase_add_test(tc, cast_to_each_dtype);
	suite_add_tcase(s, tc);
	tc = tcase_create("memory");
	tcase_add_test(tc, only_kept_buffers_survive);
	tcase_add_test(tc, large_buffers_are_recycled);
	tcase_add_test(tc, dead_nodes_are_skipped);
	tcase_add_test(tc, out_of_memory_is_an_error);
	tcase_add_test(tc, million_node_chain);
	tcase_add_test_raise_signal(tc, composite_is_an_internal_error, SIGABRT);
	suite_add_tcase(s, tc);
	tc = tcase_create("run");
	tcase_add_test(tc, run_draws_and_writes);
	tcase_add_test(tc, run_reads_inputs);
	tcase_add_test(tc, run_rejects_mismatches);
	tcase_add_test(tc, run_rejects_bad_dirs);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(interp_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
