/*
 * expand.c - writes composites out in primitives, so that every later pass
 * and the interpreter see only elementwise, reduction, layout and matmul
 * ops.  Each new node keeps the composite's location and name (for the
 * report: "exp, from softmax at 7:9"); the last one takes over the
 * composite's own name, flags and fuse block, and is marked
 * FG_NF_COMPOSITE_END (the interpreter's in-dtype mode rounds the others
 * to f32 only, as an eager program computes inside one op).
 *
 *   softmax(x)        m = max(x); s = x - m; e = exp(s); y = e / sum(e)
 *   log_softmax(x)    m = max(x); s = x - m; y = s - log(sum(exp(s)))
 *   layernorm(x,g,b)  d = x - mean(x); r = rsqrt(mean(d*d) + eps);
 *                     y = d * r * g + b
 *   rmsnorm(x,w)      r = rsqrt(mean(x*x) + eps); y = x * r * w
 *   logsumexp(x)      m = max(x); f = where(isinf(m), 0, m);
 *                     y = log(sum(exp(x - f))) + f
 *   var(x)            d = x - mean(x); y = sum(d*d) / (n - correction)
 *   std(x)            sqrt(var(x))
 *   cross_entropy(x, t)  logsumexp(x) - take_along_axis(x, t)
 *
 * All reductions run over the composite's axes with keepdims, so the
 * reduced values broadcast back over the row; a reduction composite
 * written with keepdims=false ends in a reshape that drops those axes.
 * logsumexp's f keeps a row of -inf at -inf (and one holding +inf at
 * +inf) rather than NaN, as torch.logsumexp does.
 */
#include <string.h>

#include "fg.h"

typedef struct Expander {
	FgGraph *g;             /* the graph being rebuilt */
	const FgNode *c;        /* the composite being expanded */
} Expander;

static int emit3(Expander *x, FgOp op, FgDtype dt, const FgShape *shape, int a, int b, int c)
{
	FgNode n;
	int in[3] = {a, b, c};
	int nin = fg_op_info[op].arity;

	memset(&n, 0, sizeof n);
	n.op = op;
	n.dt = dt;
	n.shape = *shape;
	n.nin = nin;
	n.in = fg_arena_array(x->g->arena, (size_t)(nin ? nin : 1), sizeof(int));
	memcpy(n.in, in, (size_t)nin * sizeof(int));
	n.loc = x->c->loc;
	n.composite = fg_op_info[x->c->op].name;
	n.fuse_block = x->c->fuse_block;
	return fg_ir_add(x->g, &n);
}

static int emit(Expander *x, FgOp op, const FgShape *shape, int a, int b)
{
	return emit3(x, op, x->c->dt, shape, a, b, -1);
}

static int reduce(Expander *x, FgOp op, int a)
{
	const FgShape *in = &x->g->nodes[a].shape;
	FgShape s = *in;

	for (int i = 0; i < s.rank; i++)
		if (x->c->a.red.axes & (1u << i))
			s.d[i] = 1;
	int id = emit(x, op, &s, a, -1);
	x->g->nodes[id].a.red.axes = x->c->a.red.axes;
	x->g->nodes[id].a.red.keepdims = 1;
	return id;
}

static int binary(Expander *x, FgOp op, int a, int b)
{
	FgShape s;

	if (fg_shape_broadcast(&x->g->nodes[a].shape, &x->g->nodes[b].shape, &s) != 0)
		fg_die("composite operands do not broadcast");
	return emit(x, op, &s, a, b);
}

static int unary(Expander *x, FgOp op, int a)
{
	FgShape s = x->g->nodes[a].shape;

	return emit(x, op, &s, a, -1);
}

static int constant(Expander *x, double v)
{
	FgShape s = {0};
	int id = emit(x, FG_OP_CONST, &s, -1, -1);

	x->g->nodes[id].a.value = v;
	return id;
}

/* The elements a reduction over c's axes of node a combines. */
static double reduced_count(Expander *x, int a)
{
	const FgShape *in = &x->g->nodes[a].shape;
	double n = 1;

	for (int i = 0; i < in->rank; i++)
		if (x->c->a.red.axes & (1u << i))
			n *= (double)in->d[i];
	return n;
}

/* A reduction composite's value y (kept dims) as c's shape. */
static int kept(Expander *x, int y)
{
	return x->c->a.red.keepdims ? y : emit(x, FG_OP_RESHAPE, &x->c->shape, y, -1);
}

/* logsumexp of a over c's axes, kept dims: a row of -inf gives -inf, a
 * row holding +inf gives +inf (f: the max, or 0 where it is infinite). */
static int logsumexp(Expander *x, int a)
{
	int m = reduce(x, FG_OP_MAX, a);
	FgShape one = x->g->nodes[m].shape;
	int f = emit3(x, FG_OP_WHERE, x->c->dt, &one, emit3(x, FG_OP_ISINF, FG_DT_BOOL, &one, m, -1, -1),
		      constant(x, 0.0), m);
	int s = reduce(x, FG_OP_SUM, unary(x, FG_OP_EXP, binary(x, FG_OP_SUB, a, f)));
	return binary(x, FG_OP_ADD, unary(x, FG_OP_LOG, s), f);
}

/* Emits the primitives of composite c over operands in[]; returns the id
 * of the node that stands for c. */
static int expand(Expander *x, const int *in)
{
	int m, s, e, d, r;

	switch (x->c->op) {
	case FG_OP_SOFTMAX:
		m = reduce(x, FG_OP_MAX, in[0]);
		e = unary(x, FG_OP_EXP, binary(x, FG_OP_SUB, in[0], m));
		return binary(x, FG_OP_DIV, e, reduce(x, FG_OP_SUM, e));
	case FG_OP_LOG_SOFTMAX:
		m = reduce(x, FG_OP_MAX, in[0]);
		s = binary(x, FG_OP_SUB, in[0], m);
		e = unary(x, FG_OP_EXP, s);
		return binary(x, FG_OP_SUB, s, unary(x, FG_OP_LOG, reduce(x, FG_OP_SUM, e)));
	case FG_OP_LAYERNORM:
		d = binary(x, FG_OP_SUB, in[0], reduce(x, FG_OP_MEAN, in[0]));
		r = reduce(x, FG_OP_MEAN, unary(x, FG_OP_SQUARE, d));
		r = unary(x, FG_OP_RSQRT, binary(x, FG_OP_ADD, r, constant(x, x->c->a.red.eps)));
		return binary(x, FG_OP_ADD, binary(x, FG_OP_MUL, binary(x, FG_OP_MUL, d, r), in[1]), in[2]);
	case FG_OP_RMSNORM:
		r = reduce(x, FG_OP_MEAN, unary(x, FG_OP_SQUARE, in[0]));
		r = unary(x, FG_OP_RSQRT, binary(x, FG_OP_ADD, r, constant(x, x->c->a.red.eps)));
		return binary(x, FG_OP_MUL, binary(x, FG_OP_MUL, in[0], r), in[1]);
	case FG_OP_LOGSUMEXP:
		return kept(x, logsumexp(x, in[0]));
	case FG_OP_CROSS_ENTROPY: {
		int axis = 0, lse = logsumexp(x, in[0]);
		while (!(x->c->a.red.axes & (1u << axis)))
			axis++;
		/* the targets' logits: c's shape */
		int t = emit(x, FG_OP_TAKE_ALONG_AXIS, &x->c->shape, in[0], in[1]);
		x->g->nodes[t].a.axis = axis;
		return binary(x, FG_OP_SUB, lse, t);
	}
	case FG_OP_VAR:
	case FG_OP_STD:
		d = binary(x, FG_OP_SUB, in[0], reduce(x, FG_OP_MEAN, in[0]));
		r = binary(x, FG_OP_DIV, reduce(x, FG_OP_SUM, unary(x, FG_OP_SQUARE, d)),
			   constant(x, reduced_count(x, in[0]) - x->c->a.red.eps));
		return kept(x, x->c->op == FG_OP_STD ? unary(x, FG_OP_SQRT, r) : r);
	default:
		fg_die("no expansion for '%s'", fg_op_info[x->c->op].name);
	}
}

void fg_pass_expand(FgGraph *g)
{
	FgGraph old = *g;
	int *map = fg_arena_array(g->arena, (size_t)(old.nnodes ? old.nnodes : 1), sizeof(int));

	g->nodes = NULL;
	g->nnodes = g->cap = 0;
	for (int i = 0; i < old.nnodes; i++) {
		const FgNode *n = &old.nodes[i];
		int *in = fg_arena_array(g->arena, (size_t)(n->nin ? n->nin : 1), sizeof(int));
		for (int k = 0; k < n->nin; k++)
			in[k] = map[n->in[k]];
		if (fg_op_info[n->op].cls != FG_CLASS_COMPOSITE) {
			FgNode copy = *n;
			copy.in = in;
			map[i] = fg_ir_add(g, &copy);
			continue;
		}
		Expander x = {g, n};
		map[i] = expand(&x, in);
		FgNode *last = &g->nodes[map[i]];
		last->name = n->name;
		last->flags = n->flags | FG_NF_COMPOSITE_END;
	}
	for (int i = 0; i < g->ninputs; i++)
		g->inputs[i] = map[g->inputs[i]];
	for (int i = 0; i < g->noutputs; i++)
		g->outputs[i] = map[g->outputs[i]];
	fg_ir_check(g);
}
