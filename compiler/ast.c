/*
 * ast.c - the AST builders.  grammar/fg.y's actions call these and nothing
 * else, so the grammar stays a list of rules and this file holds what the
 * rules mean: which FgExpr an operator becomes, how a minus folds into a
 * number, how lists grow.
 *
 * Invariants: every node, list and name lives in the arena (no malloc, so
 * nothing leaks when a syntax error abandons half a tree); names are
 * interned, so equal names are one pointer; a NULL list is an empty list.
 * The AST records what was written and checks almost nothing: the only
 * errors reported here are those one construct shows on its own, each once,
 * at the place the user must edit.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fg.h"

void fg_ast_init(FgAst *b, FgArena *a, FgDiag *d)
{
	memset(b, 0, sizeof *b);
	b->arena = a;
	b->diag = d;
}

/* FNV-1a: names are short and few; this is fast enough and has no worst
 * case worth defending against in a compiler's own input. */
static uint32_t hash_bytes(const char *s, size_t n)
{
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 16777619u;
	return h;
}

/* Keeps the table at most half full; the old table stays in the arena,
 * which doubling bounds to the size of the new one. */
static void intern_grow(FgAst *b)
{
	size_t cap = b->capnames ? 2 * b->capnames : 256;
	FgAstName *t = fg_arena_array(b->arena, cap, sizeof *t);
	for (size_t i = 0; i < b->capnames; i++) {
		FgAstName *e = &b->names[i];
		if (!e->s)
			continue;
		size_t j = e->hash & (cap - 1);
		while (t[j].s)
			j = (j + 1) & (cap - 1);
		t[j] = *e;
	}
	b->names = t;
	b->capnames = cap;
}

const char *fg_ast_intern(FgAst *b, const char *s, size_t n)
{
	if (2 * (b->nnames + 1) > b->capnames)
		intern_grow(b);
	uint32_t h = hash_bytes(s, n);
	size_t j = h & (b->capnames - 1);
	for (;; j = (j + 1) & (b->capnames - 1)) {
		FgAstName *e = &b->names[j];
		if (!e->s) {
			e->s = fg_arena_strndup(b->arena, s, n);
			e->len = (uint32_t)n;
			e->hash = h;
			b->nnames++;
			return e->s;
		}
		if (e->hash == h && e->len == n && memcmp(e->s, s, n) == 0)
			return e->s;
	}
}

/* Integers keep an exact int64 when they fit; val is always strtod's
 * correctly rounded double, so 99999999999999999999 still has a value for
 * the message that rejects it. */
FgNum fg_ast_number(const char *s, size_t n)
{
	FgNum x = {0};
	if (n == 3 && memcmp(s, "inf", 3) == 0) {
		x.val = INFINITY;
		return x;
	}
	if (n == 3 && memcmp(s, "nan", 3) == 0) {
		x.val = NAN;
		return x;
	}
	x.is_int = 1;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9') {
			x.is_int = 0;
			break;
		}
		int dig = s[i] - '0';
		if (x.ival > (INT64_MAX - dig) / 10)
			x.overflow = 1;
		else
			x.ival = x.ival * 10 + dig;
	}
	if (x.overflow)
		x.ival = 0;
	errno = 0;
	x.val = strtod(s, NULL);
	if (!x.is_int) {
		x.ival = 0;
		if (errno == ERANGE && isinf(x.val))
			x.overflow = 1;
	}
	return x;
}

FgNum fg_ast_num_neg(FgNum x)
{
	x.val = -x.val;
	if (x.is_int && !x.overflow) {
		x.ival = -x.ival;
		x.val = (double)x.ival;         /* -0 is the integer 0, not -0.0 */
	}
	return x;
}

int fg_ast_enter(FgAst *b, FgLoc loc)
{
	if (++b->depth <= FG_AST_MAX_NEST)
		return 0;
	fg_error(b->diag, loc, "expression nested too deeply (more than %d levels)",
		 FG_AST_MAX_NEST);
	return -1;
}

static void leave(FgAst *b)
{
	FG_ASSERT(b->depth > 0);
	b->depth--;
}

FgStmt *fg_ast_recover(FgAst *b)
{
	b->depth = 0;
	return NULL;
}

/* nargs operand slots live right after the node: one allocation per
 * operator, which keeps a million-term chain fast and compact. */
static FgExpr *new_expr(FgAst *b, FgExprKind kind, FgLoc loc, int nargs)
{
	FgExpr *e = fg_arena_alloc(b->arena, sizeof *e + (size_t)nargs * sizeof(FgExpr *));
	e->kind = kind;
	e->loc = loc;
	if (nargs) {
		e->args = (FgExpr **)(e + 1);
		e->nargs = nargs;
	}
	return e;
}

FgExpr *fg_ast_num(FgAst *b, FgLoc loc, FgNum num)
{
	FgExpr *e = new_expr(b, FG_EX_NUM, loc, 0);
	e->num = num;
	return e;
}

FgExpr *fg_ast_name(FgAst *b, FgLoc loc, const char *name)
{
	FgExpr *e = new_expr(b, FG_EX_NAME, loc, 0);
	e->name = name;
	return e;
}

FgExpr *fg_ast_binary(FgAst *b, FgLoc loc, const char *name, const char *text,
		      FgExpr *l, FgExpr *r)
{
	FgExpr *e = new_expr(b, FG_EX_CALL, loc, 2);
	e->name = name;
	e->op_text = text;
	e->args[0] = l;
	e->args[1] = r;
	return e;
}

/* -3 is one number, so that `x * -1` and `axis=-1` mean the same constant
 * and the IR never sees neg(const). */
FgExpr *fg_ast_neg(FgAst *b, FgLoc loc, FgExpr *e)
{
	leave(b);
	if (e->kind == FG_EX_NUM) {
		e->num = fg_ast_num_neg(e->num);
		e->loc = loc;
		return e;
	}
	FgExpr *n = new_expr(b, FG_EX_CALL, loc, 1);
	n->name = "neg";
	n->op_text = "-";
	n->args[0] = e;
	return n;
}

FgExpr *fg_ast_paren(FgAst *b, FgExpr *e)
{
	leave(b);
	return e;
}

FgExpr *fg_ast_call(FgAst *b, FgLoc loc, const char *op, FgAstArgs *args)
{
	leave(b);
	FgExpr *e = new_expr(b, FG_EX_CALL, loc, 0);
	e->name = op;
	if (args) {
		e->args = args->pos.v;
		e->nargs = args->pos.n;
		e->attrs = args->kw.v;
		e->nattrs = args->kw.n;
	}
	return e;
}

/* First storage for a list, sized for the usual case (two arguments, one
 * annotation) where fg_vec_push would start at eight: the AST of a large
 * file is mostly small lists, and its size is what parsing costs. */
#define FIRST(b, vec, n)                                                       \
	do {                                                                   \
		if ((vec)->cap == 0) {                                         \
			(vec)->v = fg_arena_array((b)->arena, (n), sizeof *(vec)->v); \
			(vec)->cap = (n);                                      \
		}                                                              \
	} while (0)

static FgAstArgs *args_new(FgAst *b, FgAstArgs *args)
{
	return args ? args : fg_arena_alloc(b->arena, sizeof *args);
}

/* One report per call: `f(axis=1, a, b)` has one mistake, not two. */
FgAstArgs *fg_ast_arg(FgAst *b, FgAstArgs *args, FgLoc at, FgExpr *e)
{
	args = args_new(b, args);
	if (args->kw.n > 0 && !args->misplaced) {
		fg_error(b->diag, at,
			 "positional argument after keyword argument '%s=' "
			 "(keyword arguments come last)", args->kw.v[0].key);
		args->misplaced = 1;
	}
	FIRST(b, &args->pos, 2);
	fg_vec_push(b->arena, &args->pos, e);
	return args;
}

FgAstArgs *fg_ast_kwarg(FgAst *b, FgAstArgs *args, FgLoc loc, const char *key,
			FgAttrVal v)
{
	args = args_new(b, args);
	FgAttrAst a = {.key = key, .loc = loc, .val = v};
	FIRST(b, &args->kw, 2);
	fg_vec_push(b->arena, &args->kw, a);
	return args;
}

FgAttrVal fg_ast_av_num(FgLoc loc, FgNum num)
{
	return (FgAttrVal){.kind = FG_AV_NUM, .loc = loc, .num = num};
}

FgAttrVal fg_ast_av_ident(FgLoc loc, const char *name)
{
	return (FgAttrVal){.kind = FG_AV_IDENT, .loc = loc, .ident = name};
}

FgAttrVal fg_ast_av_list(FgLoc loc, FgAstVals *vals)
{
	FgAttrVal v = {.kind = FG_AV_LIST, .loc = loc};
	if (vals) {
		v.items = vals->v;
		v.nitems = vals->n;
	}
	return v;
}

FgAstVals *fg_ast_val(FgAst *b, FgAstVals *vals, FgAttrVal v)
{
	if (!vals)
		vals = fg_arena_alloc(b->arena, sizeof *vals);
	FIRST(b, vals, 4);
	fg_vec_push(b->arena, vals, v);
	return vals;
}

FgDimAst fg_ast_dim_num(FgLoc loc, FgNum num)
{
	return (FgDimAst){.loc = loc, .num = num};
}

FgDimAst fg_ast_dim_sym(FgLoc loc, const char *sym)
{
	return (FgDimAst){.loc = loc, .sym = sym};
}

FgDimAst fg_ast_dim_default(FgLoc loc, const char *sym, FgNum def)
{
	return (FgDimAst){.loc = loc, .sym = sym, .has_default = 1, .def = def};
}

FgAstDims *fg_ast_dim(FgAst *b, FgAstDims *dims, FgDimAst dim)
{
	if (!dims)
		dims = fg_arena_alloc(b->arena, sizeof *dims);
	FIRST(b, dims, 4);
	fg_vec_push(b->arena, dims, dim);
	return dims;
}

static FgStmt *new_stmt(FgAst *b, FgStmtKind kind, FgLoc loc)
{
	FgStmt *s = fg_arena_alloc(b->arena, sizeof *s);
	s->kind = kind;
	s->loc = loc;
	return s;
}

FgStmt *fg_ast_decl(FgAst *b, FgStmtKind kind, FgLoc loc, const char *name,
		    FgLoc name_loc, const char *dtype, FgLoc dtype_loc,
		    FgAstDims *dims)
{
	FG_ASSERT(kind == FG_ST_INPUT || kind == FG_ST_PARAM);
	FgStmt *s = new_stmt(b, kind, loc);
	s->name = name;
	s->name_loc = name_loc;
	s->dtype = dtype;
	s->dtype_loc = dtype_loc;
	if (dims) {
		s->dims = dims->v;
		s->ndims = dims->n;
	}
	return s;
}

FgStmt *fg_ast_assign(FgAst *b, FgLoc loc, const char *name, FgExpr *e,
		      FgAstAnnots *annots)
{
	FgStmt *s = new_stmt(b, FG_ST_ASSIGN, loc);
	s->name = name;
	s->name_loc = loc;
	s->expr = e;
	if (annots) {
		s->annots = annots->v;
		s->nannots = annots->n;
	}
	return s;
}

FgStmt *fg_ast_assign_many(FgAst *b, FgLoc loc, const char *name, FgAstNames *more, FgExpr *e,
			   FgAstAnnots *annots)
{
	FgStmt *s = fg_ast_assign(b, loc, name, e, annots);
	FgAstNames *all = fg_ast_out_name(b, NULL, loc, name);
	for (int i = 0; i < more->name.n; i++)
		all = fg_ast_out_name(b, all, more->loc.v[i], more->name.v[i]);
	s->outs = all->name.v;
	s->out_locs = all->loc.v;
	s->nouts = all->name.n;
	return s;
}

FgAstAnnots *fg_ast_annot(FgAst *b, FgAstAnnots *annots, FgLoc loc,
			  const char *name)
{
	if (!annots)
		annots = fg_arena_alloc(b->arena, sizeof *annots);
	FgAnnot a = {.name = name, .loc = loc};
	FIRST(b, annots, 1);
	fg_vec_push(b->arena, annots, a);
	return annots;
}

FgStmt *fg_ast_output(FgAst *b, FgLoc loc, FgAstNames *names)
{
	FgStmt *s = new_stmt(b, FG_ST_OUTPUT, loc);
	s->outs = names->name.v;
	s->out_locs = names->loc.v;
	s->nouts = names->name.n;
	return s;
}

FgAstNames *fg_ast_out_name(FgAst *b, FgAstNames *names, FgLoc loc,
			    const char *name)
{
	if (!names)
		names = fg_arena_alloc(b->arena, sizeof *names);
	FIRST(b, &names->name, 1);
	FIRST(b, &names->loc, 1);
	fg_vec_push(b->arena, &names->name, name);
	fg_vec_push(b->arena, &names->loc, loc);
	return names;
}

/* A block's statements become one exact array when the block ends; the
 * list meanwhile holds pointers, as doubling an array of statements would
 * cost up to four times their size. */
static FgStmt *block(FgAst *b, FgAstStmts *list, int *n)
{
	*n = list ? list->n : 0;
	if (*n == 0)
		return NULL;
	FgStmt *v = fg_arena_array(b->arena, (size_t)*n, sizeof *v);
	for (int i = 0; i < *n; i++)
		v[i] = *list->v[i];
	return v;
}

FgStmt *fg_ast_fuse(FgAst *b, FgLoc loc, FgAstStmts *body)
{
	FgStmt *s = new_stmt(b, FG_ST_FUSE, loc);
	s->body = block(b, body, &s->nbody);
	return s;
}

FgAstStmts *fg_ast_stmt(FgAst *b, FgAstStmts *list, FgStmt *s)
{
	if (!s)
		return list;
	if (!list)
		list = fg_arena_alloc(b->arena, sizeof *list);
	fg_vec_push(b->arena, list, s);
	return list;
}

/* Checked here, as each statement ends, so the error comes in line order
 * with the syntax errors around it, and the IR builder may rely on a fuse
 * body holding assignments only. */
FgAstStmts *fg_ast_fuse_stmt(FgAst *b, FgAstStmts *list, FgStmt *s)
{
	if (!s)
		return list;
	switch (s->kind) {
	case FG_ST_ASSIGN:
		return fg_ast_stmt(b, list, s);
	case FG_ST_FUSE:
		fg_error(b->diag, s->loc, "'fuse' blocks do not nest");
		return list;
	case FG_ST_INPUT:
	case FG_ST_PARAM:
		fg_error(b->diag, s->loc,
			 "only assignments may appear inside a 'fuse' block; "
			 "move this declaration before it");
		return list;
	case FG_ST_OUTPUT:
		fg_error(b->diag, s->loc,
			 "only assignments may appear inside a 'fuse' block; "
			 "move 'output' after it");
		return list;
	}
	fg_die("statement kind %d", (int)s->kind);
}

void fg_ast_program(FgAst *b, FgProgram *prog, FgLoc loc, const char *name,
		    FgAstStmts *body)
{
	prog->name = name;
	prog->loc = loc;
	prog->stmts = block(b, body, &prog->nstmts);
}
