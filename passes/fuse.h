/*
 * fuse.h - what the partitioner's two files share: the groups while they
 * are built and the walk's state (passes/fuse.c, the walk from the
 * outputs back that forms the groups; passes/groups.c, what follows it:
 * groups over the register limit split, then every group ordered,
 * finished and costed, siblings merged, the edges between groups).
 */
#ifndef FG_FUSE_H
#define FG_FUSE_H

#include "fg.h"

typedef struct BGroup {         /* a group while it is being built */
	FgGroupKind kind;
	int root;               /* its space is the root's shape (a reduction's
				   input shape for row reductions) */
	FgShape space;
	uint32_t red_axes;
	FG_VEC(int) nodes;      /* members, in decreasing id order */
	int dead;               /* merged away or split */
} BGroup;

/* Fuser.seen's bits (rows_kept in passes/fuse.c, rehome in groups.c) */
enum {
	SEEN_DEP = 1,           /* computed from a reduction of the group */
	SEEN_READ = 2,          /* read somewhere: its ax entries are set */
};

typedef struct Fuser {
	const FgGraph *g;
	FgArena *a;
	FgPlan *plan;
	FgFuseOptions opt;
	int *cons_start;        /* consumers of node i: cons[cons_start[i] ..
				   cons_start[i+1]) */
	int *cons;
	FG_VEC(BGroup) groups;
	FG_VEC(int) *memb;      /* per node: the groups it is a member of */
	FgReason *block;        /* per node: why it was not fused into its
				   consumers (NONE: it was) */
	const char **detail;    /* the numbers behind block */
	unsigned char *opside;  /* per node: a matmul operand (layout flag) */
	unsigned char *live;    /* per node: an output or saved value needs it */
	int *stamp;             /* per node: scratch marks for dedupe */
	int stamp_now;
	signed char *ax;        /* per node, FG_MAX_RANK entries: scratch of
				   rows_kept (which space axis each axis reads) */
	int *via;               /* per node: scratch of rows_kept (the layout op
				   that moved its index, or -1) */
	unsigned char *seen;    /* per node: scratch of rows_kept (SEEN_*) */
} Fuser;


static inline FgOpClass cls(const Fuser *f, int id)
{
	return fg_op_info[f->g->nodes[id].op].cls;
}

static inline const FgNode *node(const Fuser *f, int id)
{
	return &f->g->nodes[id];
}

static inline int is_source(const Fuser *f, int id)
{
	return cls(f, id) == FG_CLASS_SOURCE;
}

/* Whether reduction axes ax of shape in are a run of trailing axes that
 * keeps some leading axis: then one block can own each row. */
static inline int row_axes(const FgShape *in, uint32_t ax)
{
	uint32_t all = in->rank ? (1u << in->rank) - 1 : 0;

	return ax && ax != all && ((ax + (ax & -ax)) & all) == 0;
}

static inline int all_axes(const FgShape *in, uint32_t ax)
{
	return ax == (in->rank ? (1u << in->rank) - 1 : 0);
}

static inline int in_group(const Fuser *f, int id, int gi)
{
	for (int k = 0; k < f->memb[id].n; k++)
		if (f->memb[id].v[k] == gi)
			return 1;
	return 0;
}

#define FOR_CONSUMERS(f, p, c)                                                 \
	for (int c##_k = (f)->cons_start[p], c;                                \
	     c##_k < (f)->cons_start[(p) + 1] && ((c = (f)->cons[c##_k]) >= 0 || 1); c##_k++) \
		if (c >= 0)

/* The group's first reduction: its lowest member id of that class. */
static inline int first_reduction(const Fuser *f, const BGroup *b)
{
	for (int k = b->nodes.n - 1; k >= 0; k--)
		if (cls(f, b->nodes.v[k]) == FG_CLASS_REDUCE)
			return b->nodes.v[k];
	fg_die("a reduction group without a reduction");
}

/* passes/attention.c */
/* Merges the scores gemm, softmax and output gemm of each attention
 * pattern into one attention group where the kernel can run it; where
 * not, the probabilities' boundary says why. */
void fuse_attention(Fuser *f);

/* passes/groups.c */
/* Splits loop group gi where its estimated registers pass the limit. */
void fuse_split_for_registers(Fuser *f, int gi);
/* Orders, finishes and costs the groups, merges siblings, and lists the
 * edges between groups into f->plan. */
void fuse_finish(Fuser *f);
/* The cost of one kernel per op, every intermediate stored. */
FgCost fuse_unfused_cost(const Fuser *f);

#endif
