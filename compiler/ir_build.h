/*
 * ir_build.h - what the IR builder's two files share: its state and values
 * (compiler/ir.c: names, declarations, expressions and statements;
 * compiler/ops.c: each op's call checked and built into nodes).
 */
#ifndef FG_IR_BUILD_H
#define FG_IR_BUILD_H

#include "fg.h"

#define FG_NUMEL_MAX ((int64_t)1 << 62)

typedef enum { V_ERR, V_NUM, V_NODE } ValKind;

typedef struct Val {
	ValKind kind;
	double num;             /* V_NUM */
	int node;               /* V_NODE */
} Val;

typedef struct Frame {          /* an expression being walked */
	const FgExpr *e;
	int next;               /* next argument to evaluate */
} Frame;

typedef struct Sym {            /* a bound name */
	const char *name;       /* NULL: free slot */
	Val val;
	FgLoc loc;              /* where it was defined */
	int unresolved;         /* used before any definition (reported) */
} Sym;

typedef struct Builder {
	FgArena *a;
	FgDiag *d;
	FgGraph *g;
	FgDefine *defs;
	int ndefs;
	Sym *syms;              /* open addressing, power-of-two size */
	int nsyms, capsyms;
	FG_VEC(FgSym) dims;     /* symbolic dims bound so far */
	FG_VEC(FgLoc) dim_locs; /* where each was bound */
	FG_VEC(int) inputs;
	FG_VEC(int) outputs;
	int fuse_block;         /* current fuse { } block, or -1 */
	const FgExpr *many;     /* the expression several names are bound to */
	FG_VEC(Frame) frames; /* build_expr's stacks, reused */
	FG_VEC(Val) vals;
} Builder;

static inline FgNode *node(Builder *b, int id)
{
	return &b->g->nodes[id];
}

static inline const char *type_of(Builder *b, int id, char *buf, size_t n)
{
	return fg_type_str(buf, n, node(b, id)->dt, &node(b, id)->shape);
}

static inline Val err_val(void)
{
	Val v = {V_ERR, 0, 0};
	return v;
}

static inline Val node_val(int id)
{
	Val v = {V_NODE, 0, id};
	return v;
}

/* compiler/ir.c */
/* Elements of s, or -1 past 2^62 or for a dim below 1. */
int64_t ir_checked_numel(const FgShape *s);
/* A new node built from the current fuse block; its id. */
int ir_add_node(Builder *b, FgOp op, FgDtype dt, const FgShape *shape, const int *in, int nin, FgLoc loc);
/* The dtype called `name`, or FG_DT_COUNT after reporting it at loc. */
FgDtype ir_lookup_dtype(Builder *b, const char *name, FgLoc loc);
/* The dtypes' names, for messages: "f32, f16, ...". */
const char *ir_dtype_list(void);

/* compiler/ops.c */
/* The value of call e on its evaluated operands args. */
Val ir_build_call(Builder *b, const FgExpr *e, const Val *args);

#endif
