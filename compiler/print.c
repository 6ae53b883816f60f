/*
 * print.c - the IR printer.  It writes .fg that the parser reads back to
 * the same graph: declarations with their bound (concrete) dims, one
 * statement per node, constants inline, fuse blocks kept, and `output`
 * last.  Temporaries are named `_ID` (made unique against the user's
 * names); nodes expanded from a composite say so in a trailing comment.
 *
 * Invariant the tests rely on: print(parse(print(g))) == print(g).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fg.h"

typedef struct Printer {
	FILE *f;
	const FgGraph *g;
	const char **names;     /* per node: the name printed for it */
} Printer;

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

const char **fg_ir_names(const FgGraph *g)
{
	const char **used = fg_arena_array(g->arena, (size_t)g->nnodes + 1, sizeof(char *));
	const char **names = fg_arena_array(g->arena, (size_t)g->nnodes + 1, sizeof(char *));
	int nused = 0;

	for (int i = 0; i < g->nnodes; i++)
		if (g->nodes[i].name)
			used[nused++] = g->nodes[i].name;
	qsort(used, (size_t)nused, sizeof *used, cmp_str);
	for (int i = 0; i < g->nnodes; i++) {
		const char *name = g->nodes[i].name;
		if (!name) {
			name = fg_arena_printf(g->arena, "_%d", i);
			while (bsearch(&name, used, (size_t)nused, sizeof *used, cmp_str))
				name = fg_arena_printf(g->arena, "%s_", name);
		}
		names[i] = name;
	}
	return names;
}

static void print_number(FILE *f, double v)
{
	if (isnan(v))
		fputs("nan", f);
	else if (isinf(v))
		fputs(v < 0 ? "-inf" : "inf", f);
	else
		fprintf(f, "%.17g", v);
}

/* The dtype a bare number takes among node n's operands (ir.c's rule),
 * or FG_DT_COUNT when no operand is a tensor: numbers alone would fold
 * into a number, so every constant must then be written as a cast. */
static FgDtype adapted_dtype(const FgGraph *g, const FgNode *n)
{
	for (int k = n->op == FG_OP_WHERE ? 1 : 0; k < n->nin; k++)
		if (g->nodes[n->in[k]].op != FG_OP_CONST)
			return g->nodes[n->in[k]].dt;
	return FG_DT_COUNT;
}

static void print_operand(Printer *p, const FgNode *n, int k)
{
	const FgNode *c = &p->g->nodes[n->in[k]];

	if (c->op != FG_OP_CONST) {
		fputs(p->names[n->in[k]], p->f);
	} else if (c->dt == adapted_dtype(p->g, n)) {
		print_number(p->f, c->a.value);
	} else {
		fputs("cast(", p->f);
		print_number(p->f, c->a.value);
		fprintf(p->f, ", dtype=%s)", fg_dtype_name[c->dt]);
	}
}

static void print_list(FILE *f, const char *key, const int64_t *v, int n)
{
	fprintf(f, ", %s=[", key);
	for (int i = 0; i < n; i++)
		fprintf(f, "%s%lld", i ? ", " : "", (long long)v[i]);
	fputc(']', f);
}

static void print_axes(FILE *f, uint32_t axes)
{
	int64_t v[FG_MAX_RANK];
	int n = 0;

	for (int i = 0; i < FG_MAX_RANK; i++)
		if (axes & (1u << i))
			v[n++] = i;
	if (n)
		print_list(f, "axis", v, n);
}

static void print_attrs(FILE *f, const FgNode *n)
{
	int64_t v[FG_MAX_RANK];

	if (fg_red_info(n->op)) {       /* every row of FG_REDUCTIONS */
		print_axes(f, n->a.red.axes);
		if (!n->a.red.keepdims)
			fputs(", keepdims=false", f);
		return;
	}
	switch (fg_op_info[n->op].cls == FG_CLASS_COMPOSITE ? FG_OP_SOFTMAX : n->op) {
	case FG_OP_SOFTMAX:
		print_axes(f, n->a.red.axes);
		if (n->op == FG_OP_LAYERNORM || n->op == FG_OP_RMSNORM) {
			fputs(", eps=", f);
			print_number(f, n->a.red.eps);
		}
		if (n->op == FG_OP_LOGSUMEXP || n->op == FG_OP_VAR || n->op == FG_OP_STD) {
			if (!n->a.red.keepdims)
				fputs(", keepdims=false", f);
			if (n->op != FG_OP_LOGSUMEXP && n->a.red.eps != 0) {
				fputs(", correction=", f);
				print_number(f, n->a.red.eps);
			}
		}
		break;
	case FG_OP_TRANSPOSE:
		for (int i = 0; i < n->shape.rank; i++)
			v[i] = n->a.perm[i];
		print_list(f, "perm", v, n->shape.rank);
		break;
	case FG_OP_RESHAPE:
	case FG_OP_BROADCAST_TO:
		print_list(f, "shape", n->shape.d, n->shape.rank);
		break;
	case FG_OP_SLICE:
		fprintf(f, ", axis=%d, start=%lld, end=%lld", n->a.slice.axis, (long long)n->a.slice.start,
			(long long)n->a.slice.end);
		break;
	case FG_OP_CONCAT:
	case FG_OP_GATHER:
	case FG_OP_TAKE_ALONG_AXIS:
		fprintf(f, ", axis=%d", n->a.axis);
		break;
	case FG_OP_TOPK:
		fprintf(f, ", k=%lld, axis=%d%s", (long long)n->a.sel.k, n->a.sel.axis,
			n->a.sel.largest ? "" : ", largest=false");
		break;
	case FG_OP_CUMSUM:
	case FG_OP_CUMPROD:
		fprintf(f, ", axis=%d%s%s", n->a.scan.axis, n->a.scan.exclusive ? ", exclusive=true" : "",
			n->a.scan.reverse ? ", reverse=true" : "");
		break;
	case FG_OP_CAST:
		fprintf(f, ", dtype=%s", fg_dtype_name[n->dt]);
		break;
	case FG_OP_DROPOUT:
		fputs(", p=", f);
		print_number(f, n->a.drop.p);
		fprintf(f, ", seed=%llu", (unsigned long long)n->a.drop.seed);
		break;
	default:
		if (fg_op_scalar(n->op)) {
			fprintf(f, ", %s=", fg_op_scalar(n->op));
			print_number(f, n->a.k);
		}
		break;
	}
}

static void print_decl(Printer *p, const FgNode *n)
{
	fprintf(p->f, "  %s %s : %s[", n->op == FG_OP_INPUT ? "input" : "param", n->name, fg_dtype_name[n->dt]);
	for (int i = 0; i < n->shape.rank; i++)
		fprintf(p->f, "%s%lld", i ? ", " : "", (long long)n->shape.d[i]);
	fputs("]\n", p->f);
}

/* Whether topk node id is followed by its values, as the builder makes
 * them (take_along_axis of its operand at it); a group cut out of a plan
 * (compiler/extract.c) may hold the one without the other. */
static int topk_values(const FgGraph *g, int id)
{
	const FgNode *v = id + 1 < g->nnodes ? &g->nodes[id + 1] : NULL;
	return v && v->op == FG_OP_TAKE_ALONG_AXIS && v->in[0] == g->nodes[id].in[0] && v->in[1] == id;
}

static void print_node(Printer *p, int id, const char *indent)
{
	const FgNode *n = &p->g->nodes[id];

	if (n->op == FG_OP_TOPK && topk_values(p->g, id))       /* values, indices */
		fprintf(p->f, "%s%s, %s = %s(", indent, p->names[id + 1], p->names[id], fg_op_info[n->op].name);
	else if (n->op == FG_OP_TOPK)   /* values not in this graph: a name nothing uses */
		fprintf(p->f, "%s_%d_values, %s = %s(", indent, id, p->names[id], fg_op_info[n->op].name);
	else
		fprintf(p->f, "%s%s = %s(", indent, p->names[id], fg_op_info[n->op].name);
	for (int k = 0; k < n->nin; k++) {
		if (k)
			fputs(", ", p->f);
		print_operand(p, n, k);
	}
	if (n->op == FG_OP_IOTA) {      /* no operand before its attributes */
		fputs("shape=[", p->f);
		for (int i = 0; i < n->shape.rank; i++)
			fprintf(p->f, "%s%lld", i ? ", " : "", (long long)n->shape.d[i]);
		fprintf(p->f, "], axis=%d, dtype=%s", n->a.axis, fg_dtype_name[n->dt]);
	}
	print_attrs(p->f, n);
	fputc(')', p->f);
	if (n->flags & FG_NF_SAVED)
		fputs(" @save", p->f);
	if (n->flags & FG_NF_MATERIALIZE)
		fputs(" @materialize", p->f);
	if (n->composite)
		fprintf(p->f, "  # %s at %d:%d", n->composite, n->loc.line, n->loc.col);
	fputc('\n', p->f);
}

void fg_ir_print(FILE *f, const FgGraph *g)
{
	Printer p = {f, g, fg_ir_names(g)};
	int block = -1;

	fprintf(f, "graph %s {\n", g->name);
	for (int i = 0; i < g->nnodes; i++) {
		const FgNode *n = &g->nodes[i];
		if (n->op == FG_OP_CONST)
			continue;
		if (n->fuse_block != block) {
			if (block >= 0)
				fputs("  }\n", f);
			if (n->fuse_block >= 0)
				fputs("  fuse {\n", f);
			block = n->fuse_block;
		}
		if (n->op == FG_OP_INPUT || n->op == FG_OP_PARAM)
			print_decl(&p, n);
		else
			print_node(&p, i, block >= 0 ? "    " : "  ");
		if (n->op == FG_OP_TOPK && topk_values(g, i))
			i++;    /* its values, printed with it */
	}
	if (block >= 0)
		fputs("  }\n", f);
	fputs("  output ", f);
	for (int i = 0; i < g->noutputs; i++)
		fprintf(f, "%s%s", i ? ", " : "", p.names[g->outputs[i]]);
	fputs("\n}\n", f);
}
