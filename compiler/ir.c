/*
 * ir.c - from the AST to the graph IR: names resolved, symbolic dims bound,
 * every value's dtype and static shape inferred, and every error reported
 * with its location.
 *
 * Expressions are walked with an explicit stack, never recursively: a
 * million-term chain `a + a + ...` is as deep as it is long.  A value under
 * construction is a tensor (a node id), a number (folded at once, so that
 * `1 / sqrt(128)` is a number that later adapts to the other operand's
 * dtype), or an error that has been reported already and silently poisons
 * whatever uses it, so that one mistake gives one message.
 *
 * Numbers adapt their dtype to the tensor they meet but keep their exact
 * value: f16 and bf16 are storage types and a number is never stored.
 * Each call's own checks and nodes are compiler/ops.c's (ir_build_call).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ir_build.h"

/* ------------------------------------------------------------ shapes */

int64_t fg_shape_numel(const FgShape *s)
{
	int64_t n = 1;

	for (int i = 0; i < s->rank; i++)
		n *= s->d[i];
	return n;
}

int fg_shape_eq(const FgShape *a, const FgShape *b)
{
	if (a->rank != b->rank)
		return 0;
	for (int i = 0; i < a->rank; i++)
		if (a->d[i] != b->d[i])
			return 0;
	return 1;
}

int fg_shape_broadcast(const FgShape *a, const FgShape *b, FgShape *out)
{
	FgShape r;

	r.rank = a->rank > b->rank ? a->rank : b->rank;
	for (int i = 0; i < r.rank; i++) {
		int ia = a->rank - r.rank + i, ib = b->rank - r.rank + i;
		int64_t da = ia >= 0 ? a->d[ia] : 1, db = ib >= 0 ? b->d[ib] : 1;
		if (da != db && da != 1 && db != 1)
			return -1;
		r.d[i] = da == 1 ? db : da;
	}
	*out = r;
	return 0;
}

char *fg_type_str(char *buf, size_t n, FgDtype dt, const FgShape *s)
{
	size_t k = (size_t)snprintf(buf, n, "%s[", fg_dtype_name[dt]);

	for (int i = 0; i < s->rank && k < n; i++)
		k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? "," : "", (long long)s->d[i]);
	if (k < n)
		snprintf(buf + k, n - k, "]");
	return buf;
}

/* Product of dims, or -1 past FG_NUMEL_MAX. */
int64_t ir_checked_numel(const FgShape *s)
{
	int64_t n = 1;

	for (int i = 0; i < s->rank; i++) {
		if (s->d[i] <= 0 || n > FG_NUMEL_MAX / s->d[i])
			return -1;
		n *= s->d[i];
	}
	return n;
}

/* ------------------------------------------------------------- nodes */

int fg_ir_add(FgGraph *g, const FgNode *n)
{
	if (g->nnodes == g->cap)
		fg_vec_grow_(g->arena, (void **)&g->nodes, &g->cap, sizeof *g->nodes, g->nnodes);
	g->nodes[g->nnodes] = *n;
	return g->nnodes++;
}

int ir_add_node(Builder *b, FgOp op, FgDtype dt, const FgShape *shape,
		    const int *in, int nin, FgLoc loc)
{
	FgNode n;

	memset(&n, 0, sizeof n);
	n.op = op;
	n.dt = dt;
	n.shape = *shape;
	n.nin = nin;
	n.in = fg_arena_array(b->a, (size_t)(nin ? nin : 1), sizeof(int));
	if (nin)
		memcpy(n.in, in, (size_t)nin * sizeof(int));
	n.loc = loc;
	n.fuse_block = b->fuse_block;
	return fg_ir_add(b->g, &n);
}

/* ----------------------------------------------------------- symbols */

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ull;
	return h;
}

static Sym *sym_slot(Builder *b, const char *name)
{
	uint64_t mask = (uint64_t)b->capsyms - 1;

	for (uint64_t i = hash_str(name) & mask;; i = (i + 1) & mask)
		if (!b->syms[i].name || strcmp(b->syms[i].name, name) == 0)
			return &b->syms[i];
}

static Sym *sym_find(Builder *b, const char *name)
{
	if (!b->capsyms)
		return NULL;
	Sym *s = sym_slot(b, name);

	return s->name ? s : NULL;
}

static void sym_bind(Builder *b, const char *name, Val v, FgLoc loc)
{
	if (2 * (b->nsyms + 1) > b->capsyms) {
		Sym *old = b->syms;
		int oldcap = b->capsyms;
		b->capsyms = oldcap ? oldcap * 2 : 64;
		b->syms = fg_arena_array(b->a, (size_t)b->capsyms, sizeof(Sym));
		for (int i = 0; i < oldcap; i++)
			if (old[i].name)
				*sym_slot(b, old[i].name) = old[i];
	}
	Sym *s = sym_slot(b, name);
	s->name = name;
	s->val = v;
	s->loc = loc;
	b->nsyms++;
}

/* The bound name nearest to `name`, for "did you mean". */
static const char *sym_suggest(Builder *b, const char *name)
{
	const char *best = NULL;
	int best_d = 3;

	for (int i = 0; i < b->capsyms; i++) {
		if (!b->syms[i].name)
			continue;
		int dist = fg_edit_distance(name, b->syms[i].name, best_d - 1);
		if (dist < best_d) {
			best_d = dist;
			best = b->syms[i].name;
		}
	}
	return best;
}

/* Defines a new name, or reports the redefinition.  0 on success. */
static int define(Builder *b, const char *name, FgLoc loc, Val v)
{
	Sym *s = sym_find(b, name);

	if (s && s->unresolved) {
		/* Used too early, which was reported; this is the definition. */
		s->val = v;
		s->loc = loc;
		s->unresolved = 0;
		return 0;
	}
	if (s) {
		fg_error(b->d, loc, "redefinition of '%s'", name);
		fg_note(b->d, s->loc, "'%s' was defined here", name);
		return -1;
	}
	if (fg_dtype_lookup(name) != FG_DT_COUNT) {
		fg_error(b->d, loc, "'%s' is a dtype name and cannot name a value", name);
		return -1;
	}
	sym_bind(b, name, v, loc);
	return 0;
}

/* ------------------------------------------------------- declarations */

static int64_t dim_value(Builder *b, const FgNum *num, FgLoc loc, const char *what)
{
	if (!num->is_int) {
		fg_error(b->d, loc, "%s must be an integer, got %g", what, num->val);
		return -1;
	}
	if (num->overflow) {
		fg_error(b->d, loc, "%s does not fit in 64 bits", what);
		return -1;
	}
	if (num->ival <= 0) {
		fg_error(b->d, loc, "%s must be positive, got %lld", what, (long long)num->ival);
		return -1;
	}
	return num->ival;
}

static int64_t bind_symbolic(Builder *b, const FgDimAst *dim)
{
	int64_t def = 0;

	if (dim->has_default) {
		def = dim_value(b, &dim->def, dim->loc, "the default of a dimension");
		if (def < 0)
			return -1;
	}
	for (int i = 0; i < b->dims.n; i++) {
		if (strcmp(b->dims.v[i].name, dim->sym) != 0)
			continue;
		if (dim->has_default && !b->dims.v[i].value) {
			/* -D bound it; the default yields. */
		} else if (dim->has_default) {
			fg_error(b->d, dim->loc, "'%s' already has a default; write it at its first use only",
				 dim->sym);
			fg_note(b->d, b->dim_locs.v[i], "'%s' was bound here", dim->sym);
			return -1;
		}
		return b->dims.v[i].value;
	}
	int64_t v = 0;
	for (int i = 0; i < b->ndefs; i++)
		if (strcmp(b->defs[i].name, dim->sym) == 0) {
			v = b->defs[i].value;
			b->defs[i].used = 1;
		}
	if (!v && dim->has_default)
		v = def;
	if (!v) {
		fg_error(b->d, dim->loc,
			 "symbolic dimension '%s' has no value; bind it with -D %s=N or write a default '%s=N' at its first use",
			 dim->sym, dim->sym, dim->sym);
		return -1;
	}
	FgSym s = {dim->sym, v};
	fg_vec_push(b->a, &b->dims, s);
	fg_vec_push(b->a, &b->dim_locs, dim->loc);
	return v;
}

const char *ir_dtype_list(void)
{
	static char list[128];  /* FG_DTYPES' names, joined once */

	if (!list[0])
		for (int i = 0; i < FG_DT_COUNT; i++)
			snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "",
				 fg_dtype_name[i]);
	return list;
}

FgDtype ir_lookup_dtype(Builder *b, const char *name, FgLoc loc)
{
	FgDtype dt = fg_dtype_lookup(name);

	if (dt == FG_DT_COUNT)
		fg_error(b->d, loc, "unknown dtype '%s'; expected one of %s", name, ir_dtype_list());
	return dt;
}

static void declare(Builder *b, const FgStmt *st)
{
	FgShape shape = {0};
	int bad = 0;

	FgDtype dt = ir_lookup_dtype(b, st->dtype, st->dtype_loc);
	if (st->ndims > FG_MAX_RANK) {
		fg_error(b->d, st->dims[FG_MAX_RANK].loc, "rank %d is above the limit of %d",
			 st->ndims, FG_MAX_RANK);
		bad = 1;
	}
	for (int i = 0; i < st->ndims && i < FG_MAX_RANK; i++) {
		const FgDimAst *dim = &st->dims[i];
		int64_t v = dim->sym ? bind_symbolic(b, dim) : dim_value(b, &dim->num, dim->loc, "a dimension");
		if (v < 0)
			bad = 1;
		shape.d[shape.rank++] = v;
	}
	if (!bad && ir_checked_numel(&shape) < 0) {
		fg_error(b->d, st->name_loc, "'%s' has more than 2^62 elements", st->name);
		bad = 1;
	}
	Val v = {V_ERR, 0, 0};
	if (!bad && dt != FG_DT_COUNT) {
		FgLoc loc = st->name_loc;
		v.kind = V_NODE;
		v.node = ir_add_node(b, st->kind == FG_ST_INPUT ? FG_OP_INPUT : FG_OP_PARAM, dt, &shape, NULL, 0, loc);
		node(b, v.node)->name = st->name;
		node(b, v.node)->a.input = b->inputs.n;
		fg_vec_push(b->a, &b->inputs, v.node);
	}
	define(b, st->name, st->name_loc, v);
}

/* -------------------------------------------------------- expressions */

static Val build_leaf(Builder *b, const FgExpr *e)
{
	if (e->kind == FG_EX_NUM) {
		Val v = {V_NUM, e->num.val, 0};
		return v;
	}
	Sym *s = sym_find(b, e->name);
	if (!s) {
		const char *near = sym_suggest(b, e->name);
		if (strcmp(e->name, "save") == 0 || strcmp(e->name, "materialize") == 0)
			fg_error(b->d, e->loc, "unknown name '%s' (an annotation is written '@%s', without a space)",
				 e->name, e->name);
		else if (near)
			fg_error(b->d, e->loc, "unknown name '%s'; did you mean '%s'?", e->name, near);
		else
			fg_error(b->d, e->loc, "unknown name '%s'", e->name);
		/* Bind it as an error so that later uses stay quiet. */
		sym_bind(b, e->name, err_val(), e->loc);
		sym_find(b, e->name)->unresolved = 1;
		return err_val();
	}
	return s->val;
}

/* Post-order walk with explicit stacks of frames and values. */
static Val build_expr(Builder *b, const FgExpr *root)
{
	Frame f0 = {root, 0};

	b->frames.n = b->vals.n = 0;
	fg_vec_push(b->a, &b->frames, f0);
	while (b->frames.n) {
		Frame *f = &b->frames.v[b->frames.n - 1];
		const FgExpr *e = f->e;
		if (e->kind == FG_EX_CALL && f->next < e->nargs) {
			Frame c = {e->args[f->next++], 0};
			fg_vec_push(b->a, &b->frames, c);
			continue;
		}
		b->frames.n--;
		Val v;
		if (e->kind == FG_EX_CALL) {
			b->vals.n -= e->nargs;
			/* concat() has no operands, and vals may be empty. */
			v = ir_build_call(b, e, e->nargs ? b->vals.v + b->vals.n : NULL);
		} else {
			v = build_leaf(b, e);
		}
		fg_vec_push(b->a, &b->vals, v);
	}
	return b->vals.v[0];
}

/* --------------------------------------------------------- statements */

/* NAME, NAME = EXPR: an op with several results binds one name each
 * (topk: values, then indices); the annotations apply to each. */
static int assign_many(Builder *b, const FgStmt *st, Val v, unsigned flags)
{
	const FgExpr *e = st->expr;
	int ok = v.kind == V_NODE;
	if (v.kind == V_ERR) {
		/* reported */
	} else if (e->kind != FG_EX_CALL || fg_op_lookup(e->name) != FG_OP_TOPK) {
		fg_error(b->d, st->out_locs[1], "%s gives one result; only an op with several results (topk) binds "
			 "several names", e->kind == FG_EX_CALL ? fg_arena_printf(b->a, "'%s'", e->op_text ? e->op_text : e->name)
								: "this expression");
		ok = 0;
	} else if (st->nouts != 2) {
		fg_error(b->d, st->out_locs[st->nouts > 2 ? 2 : 0], "'topk' gives two results, values and indices; "
			 "%d names are bound", st->nouts);
		ok = 0;
	}
	/* on an error every name is bound to it, so that no use of one is
	 * reported again */
	int ids[2] = {ok ? v.node : -1, ok ? node(b, v.node)->in[1] : -1};
	for (int i = 0; i < st->nouts; i++) {
		if (define(b, st->outs[i], st->out_locs[i], i < 2 && ok ? node_val(ids[i]) : err_val()) != 0 || !ok)
			continue;
		node(b, ids[i])->name = st->outs[i];
		node(b, ids[i])->flags |= flags;
	}
	return ok ? 0 : -1;
}

static void assign(Builder *b, const FgStmt *st)
{
	b->many = st->nouts > 1 ? st->expr : NULL;
	Val v = build_expr(b, st->expr);
	b->many = NULL;
	unsigned flags = 0;

	for (int i = 0; i < st->nannots; i++) {
		const FgAnnot *an = &st->annots[i];
		unsigned f = strcmp(an->name, "save") == 0 ? FG_NF_SAVED
			     : strcmp(an->name, "materialize") == 0 ? FG_NF_MATERIALIZE : 0;
		if (!f) {
			fg_error(b->d, an->loc, "unknown annotation '@%s'; expected @save or @materialize%s", an->name,
				 sym_find(b, an->name) ? " (a matmul is written 'a @ b', with a space after '@')" : "");
			continue;
		}
		if (flags & f)
			fg_error(b->d, an->loc, "annotation '@%s' is repeated", an->name);
		flags |= f;
	}
	if (st->nouts > 1) {
		assign_many(b, st, v, flags);
		return;
	}
	if (v.kind == V_NUM && flags) {
		fg_error(b->d, st->annots[0].loc, "'%s' is a number; only tensors can be annotated", st->name);
		v = err_val();
	}
	if (v.kind == V_NODE && (node(b, v.node)->name || node(b, v.node)->op == FG_OP_CONST)) {
		/* `y = x` makes y a value of its own, which can be saved,
		 * output or materialized apart from x. */
		FgNode *src = node(b, v.node);
		v.node = ir_add_node(b, FG_OP_IDENTITY, src->dt, &src->shape, &v.node, 1, st->expr->loc);
	}
	if (define(b, st->name, st->name_loc, v) != 0 || v.kind != V_NODE)
		return;
	node(b, v.node)->name = st->name;
	node(b, v.node)->flags |= flags;
}

static void output(Builder *b, const FgStmt *st)
{
	for (int i = 0; i < st->nouts; i++) {
		Sym *s = sym_find(b, st->outs[i]);
		if (!s) {
			const char *near = sym_suggest(b, st->outs[i]);
			if (near)
				fg_error(b->d, st->out_locs[i], "unknown output '%s'; did you mean '%s'?", st->outs[i], near);
			else
				fg_error(b->d, st->out_locs[i], "unknown output '%s'", st->outs[i]);
			continue;
		}
		if (s->val.kind == V_NUM) {
			fg_error(b->d, st->out_locs[i], "output '%s' is a number; give it a dtype with cast(..., dtype=f32)",
				 st->outs[i]);
			continue;
		}
		if (s->val.kind != V_NODE)
			continue;
		FgNode *n = node(b, s->val.node);
		if (n->flags & FG_NF_OUTPUT) {
			fg_error(b->d, st->out_locs[i], "'%s' is already an output", st->outs[i]);
			continue;
		}
		n->flags |= FG_NF_OUTPUT;
		fg_vec_push(b->a, &b->outputs, s->val.node);
	}
}

static void statements(Builder *b, const FgStmt *st, int n)
{
	for (int i = 0; i < n; i++, st++) {
		switch (st->kind) {
		case FG_ST_INPUT:
		case FG_ST_PARAM:
			if (b->fuse_block >= 0)
				fg_error(b->d, st->loc, "declarations cannot appear inside a fuse block");
			else
				declare(b, st);
			break;
		case FG_ST_ASSIGN:
			assign(b, st);
			break;
		case FG_ST_OUTPUT:
			if (b->fuse_block >= 0)
				fg_error(b->d, st->loc, "'output' cannot appear inside a fuse block");
			else
				output(b, st);
			break;
		case FG_ST_FUSE:
			if (b->fuse_block >= 0) {
				fg_error(b->d, st->loc, "fuse blocks cannot nest");
				break;
			}
			b->fuse_block = b->g->nfuse++;
			statements(b, st->body, st->nbody);
			b->fuse_block = -1;
			break;
		}
	}
}

/* A named tensor past 2^40 bytes (1 TiB, seven times an H200) is legal
 * but almost surely a dim set wrong (-D T=10000000): a warning each, at
 * most FG_HUGE_WARNINGS. */
#define FG_HUGE_WARNINGS 8
static void warn_huge(FgDiag *d, const FgGraph *g)
{
	int n = 0;
	for (int id = 0; id < g->nnodes && n < FG_HUGE_WARNINGS; id++) {
		const FgNode *nd = &g->nodes[id];
		int64_t bytes = fg_value_bytes(g, id);
		if (!nd->name || bytes <= (int64_t)1 << 40)
			continue;
		char t[256];
		fg_warning(d, nd->loc, "'%s' %s holds %.3g TiB, past 2^40 bytes: is a dim set too large?", nd->name,
			   fg_type_str(t, sizeof t, nd->dt, &nd->shape), (double)bytes / 1099511627776.0);
		n++;
	}
}

int fg_ir_build(FgArena *a, FgDiag *d, const FgProgram *prog, FgDefine *defs, int ndefs, FgGraph *g)
{
	Builder b;
	int before = d->nerrors;

	memset(&b, 0, sizeof b);
	memset(g, 0, sizeof *g);
	b.a = a;
	b.d = d;
	b.g = g;
	b.defs = defs;
	b.ndefs = ndefs;
	b.fuse_block = -1;
	g->arena = a;
	g->name = prog->name;
	statements(&b, prog->stmts, prog->nstmts);
	if (!b.outputs.n && d->nerrors == before)
		fg_error(d, prog->loc, "graph '%s' has no output; add 'output NAME'", prog->name);
	for (int i = 0; i < ndefs; i++) {
		if (defs[i].used)
			continue;
		/* the nearest dim: another case first (t for T), then two edits */
		const char *near = NULL;
		int best = 3;
		for (int j = 0; j < b.dims.n; j++) {
			int dist = strcasecmp(defs[i].name, b.dims.v[j].name) == 0
				? 0 : fg_edit_distance(defs[i].name, b.dims.v[j].name, best - 1);
			if (dist < best && dist < (int)strlen(defs[i].name)) {  /* Q is not T */
				best = dist;
				near = b.dims.v[j].name;
			}
		}
		if (near)
			fg_error(d, (FgLoc){0, 0}, "-D %s=%lld names no dimension of graph '%s'; did you mean '%s'?",
				 defs[i].name, (long long)defs[i].value, prog->name, near);
		else
			fg_error(d, (FgLoc){0, 0}, "-D %s=%lld names no dimension of graph '%s'", defs[i].name,
				 (long long)defs[i].value, prog->name);
	}
	g->inputs = b.inputs.v;
	g->ninputs = b.inputs.n;
	g->outputs = b.outputs.v;
	g->noutputs = b.outputs.n;
	g->syms = b.dims.v;
	g->nsyms = b.dims.n;
	if (d->nerrors == before) {
		fg_ir_check(g);
		warn_huge(d, g);
	}
	return d->nerrors - before;
}

/* ------------------------------------------------------------ checker */

void fg_ir_check(const FgGraph *g)
{
	for (int i = 0; i < g->nnodes; i++) {
		const FgNode *n = &g->nodes[i];
		const FgOpInfo *info = &fg_op_info[n->op];
		if (n->op >= FG_OP_COUNT)
			fg_die("node %d: bad op %d", i, (int)n->op);
		if (info->arity >= 0 ? n->nin != info->arity : n->nin < 1)
			fg_die("node %d (%s): %d operands", i, info->name, n->nin);
		if (n->shape.rank < 0 || n->shape.rank > FG_MAX_RANK || ir_checked_numel(&n->shape) < 0)
			fg_die("node %d (%s): bad shape", i, info->name);
		for (int k = 0; k < n->nin; k++)
			if (n->in[k] < 0 || n->in[k] >= i)
				fg_die("node %d (%s): operand %d is %d, not earlier", i, info->name, k, n->in[k]);
		if (n->op == FG_OP_TOPK && (n->a.sel.axis < 0 || n->a.sel.axis >= n->shape.rank ||
					     n->shape.d[n->a.sel.axis] != n->a.sel.k))
			fg_die("node %d (topk): bad axis or k", i);
		if (info->cls == FG_CLASS_SCAN && (!fg_shape_eq(&n->shape, &g->nodes[n->in[0]].shape) ||
						   n->a.scan.axis < 0 || n->a.scan.axis >= n->shape.rank))
			fg_die("node %d (%s): not a scan of its operand", i, info->name);
		if (info->cls == FG_CLASS_EW && n->op != FG_OP_IOTA) {  /* iota: its own shape */
			FgShape s = {0};
			for (int k = 0; k < n->nin; k++)
				if (fg_shape_broadcast(&s, &g->nodes[n->in[k]].shape, &s) != 0)
					fg_die("node %d (%s): operands do not broadcast", i, info->name);
			if (!fg_shape_eq(&s, &n->shape))
				fg_die("node %d (%s): shape is not the operands' broadcast", i, info->name);
		}
	}
	for (int i = 0; i < g->noutputs; i++)
		if (g->outputs[i] < 0 || g->outputs[i] >= g->nnodes)
			fg_die("output %d is node %d", i, g->outputs[i]);
	for (int i = 0; i < g->ninputs; i++)
		if (g->nodes[g->inputs[i]].a.input != i)
			fg_die("input %d has index %d", i, g->nodes[g->inputs[i]].a.input);
}
