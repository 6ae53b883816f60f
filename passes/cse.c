/*
 * cse.c - common subexpressions: a value computed twice (the same op on
 * the same operands with the same attributes, dtype and shape) is
 * computed once, before the partitioner sees the graph.  `mean(x,
 * axis=0)` written twice, the max of two softmaxes of one row, `x * 2`
 * in two places: one node each, which every reader shares.
 *
 * One walk in topological order, in place (a node only moves down), with
 * a hash table of the nodes kept: operands are renamed to the kept nodes
 * first, so a chain of duplicates collapses in one pass.  Sources are
 * never merged: inputs and params are distinct tensors, and a constant is
 * a literal in the code of each group that reads it (one constant node
 * read by two groups would tie their code together for nothing), so
 * operands that are constants compare by value.  A duplicate is merged
 * only when nothing sets it apart: not an output, not @save or
 * @materialize (its own name must survive: a user asked for it), in the
 * same fuse { } block, and both or neither the end of a composite (the
 * interpreter's in-dtype mode rounds those).  The kept node takes a merged node's name when it has none.
 * Each merge is recorded in FgGraph.merged for the report.  Dropout is
 * deterministic (its mask is a function of its seed and the element's
 * position), so two dropouts of one value with one seed are one.
 */
#include <string.h>

#include "fg.h"

/* The bits that set a duplicate apart from the node it repeats. */
#define KEEP_FLAGS (FG_NF_OUTPUT | FG_NF_SAVED | FG_NF_MATERIALIZE)

typedef struct Cse {
	const FgGraph *g;       /* the rebuilt graph */
	int *slot;              /* open addressing over node ids, -1 empty */
	unsigned mask;          /* table size - 1 */
} Cse;

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15u + (h << 6) + (h >> 2);
	return h;
}

static uint64_t bits(double x)
{
	uint64_t u;
	memcpy(&u, &x, sizeof u);
	return u;
}

/* The attributes an op's value depends on beyond its operands, dtype and
 * shape, as up to 4 words (the count); one case per attribute layout of
 * FgNode.a. */
static int attrs(const FgNode *n, uint64_t w[4])
{
	switch (n->op) {
	case FG_OP_LEAKY_RELU:
	case FG_OP_ELU:
		w[0] = bits(n->a.k);
		return 1;
	case FG_OP_DROPOUT:
		w[0] = bits(n->a.drop.p);
		w[1] = n->a.drop.seed;
		return 2;
	case FG_OP_TRANSPOSE: {
		uint64_t p = 0;
		for (int i = 0; i < n->shape.rank; i++)
			p = p << 4 | (uint64_t)n->a.perm[i];
		w[0] = p;
		return 1;
	}
	case FG_OP_SLICE:
		w[0] = (uint64_t)n->a.slice.axis;
		w[1] = (uint64_t)n->a.slice.start;
		w[2] = (uint64_t)n->a.slice.end;
		return 3;
	case FG_OP_IOTA:
	case FG_OP_CONCAT:
	case FG_OP_GATHER:
	case FG_OP_TAKE_ALONG_AXIS:
		w[0] = (uint64_t)n->a.axis;
		return 1;
	case FG_OP_TOPK:
		w[0] = (uint64_t)n->a.sel.axis;
		w[1] = (uint64_t)n->a.sel.largest;
		w[2] = (uint64_t)n->a.sel.k;
		return 3;
	default:
		break;
	}
	switch (fg_op_info[n->op].cls) {
	case FG_CLASS_REDUCE:
		w[0] = n->a.red.axes;
		w[1] = (uint64_t)n->a.red.keepdims;
		return 2;
	case FG_CLASS_SCAN:
		w[0] = (uint64_t)n->a.scan.axis;
		w[1] = (uint64_t)n->a.scan.exclusive;
		w[2] = (uint64_t)n->a.scan.reverse;
		return 3;
	case FG_CLASS_EW:       /* cast: its dtype is the node's */
	case FG_CLASS_LAYOUT:   /* reshape, broadcast_to: the shape */
	case FG_CLASS_MATMUL:
		return 0;
	default:
		fg_die("cse: '%s' is not expanded", fg_op_info[n->op].name);
	}
}

/* Operand k of n, for comparing: a constant by its value (constants are
 * not merged: each stays where it is written, a literal in the code of
 * each group that reads it), anything else by its kept node. */
static uint64_t operand_key(const Cse *c, const FgNode *n, int k)
{
	const FgNode *o = &c->g->nodes[n->in[k]];

	if (o->op != FG_OP_CONST)
		return (uint64_t)n->in[k];
	return mix(mix(bits(o->a.value), (uint64_t)o->dt), (uint64_t)o->shape.rank) | 1ull << 63;
}

static uint64_t hash_node(const Cse *c, const FgNode *n)
{
	uint64_t w[4], h = mix((uint64_t)n->op, (uint64_t)n->dt);
	int k = attrs(n, w);

	h = mix(h, (uint64_t)n->shape.rank);
	for (int i = 0; i < n->shape.rank; i++)
		h = mix(h, (uint64_t)n->shape.d[i]);
	for (int i = 0; i < n->nin; i++)
		h = mix(h, operand_key(c, n, i));
	for (int i = 0; i < k; i++)
		h = mix(h, w[i]);
	return mix(h, (uint64_t)(n->fuse_block + 1));
}

static int same_const(const FgNode *a, const FgNode *b)
{
	return a->op == FG_OP_CONST && b->op == FG_OP_CONST && a->dt == b->dt &&
	       bits(a->a.value) == bits(b->a.value) && fg_shape_eq(&a->shape, &b->shape);
}

/* Whether b, a later node, computes what a does and may read a instead. */
static int same(const Cse *c, const FgNode *a, const FgNode *b)
{
	uint64_t wa[4], wb[4];
	int k = attrs(a, wa);

	if (a->op != b->op || a->dt != b->dt || a->nin != b->nin || a->fuse_block != b->fuse_block ||
	    (a->flags & FG_NF_COMPOSITE_END) != (b->flags & FG_NF_COMPOSITE_END) ||
	    !fg_shape_eq(&a->shape, &b->shape))
		return 0;
	for (int i = 0; i < a->nin; i++)
		if (a->in[i] != b->in[i] && !same_const(&c->g->nodes[a->in[i]], &c->g->nodes[b->in[i]]))
			return 0;
	return attrs(b, wb) == k && memcmp(wa, wb, (size_t)k * sizeof *wa) == 0;
}

/* The kept node n repeats, or -1 after keeping n (to be id) in the table. */
static int lookup(Cse *c, const FgNode *n, int id)
{
	unsigned i = (unsigned)hash_node(c, n) & c->mask;

	for (; c->slot[i] >= 0; i = (i + 1) & c->mask)
		if (same(c, &c->g->nodes[c->slot[i]], n))
			return c->slot[i];
	c->slot[i] = id;
	return -1;
}

void fg_pass_cse(FgGraph *g)
{
	unsigned size = 16;
	int *map = fg_arena_array(g->arena, (size_t)(g->nnodes ? g->nnodes : 1), sizeof(int));
	int out = 0;

	while (size < 2u * (unsigned)g->nnodes)
		size *= 2;
	Cse c = {g, fg_arena_array(g->arena, size, sizeof(int)), size - 1};
	memset(c.slot, 0xff, size * sizeof(int));
	/* in place: node i moves down to out <= i, over nodes already moved */
	for (int i = 0; i < g->nnodes; i++) {
		FgNode n = g->nodes[i];
		for (int k = 0; k < n.nin; k++)
			n.in[k] = map[n.in[k]];
		int kept = fg_op_info[n.op].cls == FG_CLASS_SOURCE ? -1 : lookup(&c, &n, out);
		if (kept < 0 || (n.flags & KEEP_FLAGS)) {
			g->nodes[out] = n;
			map[i] = out++;
			continue;
		}
		FgNode *k = &g->nodes[kept];
		FgMerged m = {n.name, n.composite, n.op, n.loc, kept};
		fg_vec_push(g->arena, &g->merged, m);
		if (!k->name && n.name)
			k->name = n.name;
		map[i] = kept;
	}
	g->nnodes = out;
	for (int i = 0; i < g->ninputs; i++)
		g->inputs[i] = map[g->inputs[i]];
	for (int i = 0; i < g->noutputs; i++)
		g->outputs[i] = map[g->outputs[i]];
	fg_ir_check(g);
}
