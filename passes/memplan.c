/*
 * memplan.c - places every value the plan writes to device memory in one
 * arena, letting values whose lifetimes do not overlap share space.
 *
 * A value needs space when the plan writes it (plan->why[id] != NONE) and
 * it is not an input or a param, which live in buffers of their own.  Its
 * lifetime runs over groups in launch order, both ends included: from the
 * group that writes it (plan->home, or the first group listing it in its
 * writes) to the last group that lists it in its reads.  Outputs and
 * saved values last to the end, since the host reads them after the last
 * launch.  Two values may share bytes only when their lifetimes are
 * disjoint: a group that reads one while writing the other needs both.
 *
 * Placement is "greedy by size", as in the TFLite and XLA planners: the
 * biggest value first, each into the smallest gap that fits among the
 * values already placed whose lifetimes overlap its own, else past them
 * all.  Sizes round up to FG_MEM_ALIGN, so every offset is aligned.
 *
 * Lasting values (outputs, saved) are all live at the end, so no two of
 * them can ever share.  They first form a stack at the bottom of the arena
 * in the order they are written: at group t the lasting values written by
 * then are one span [0, floor[t]), and the space above it, which later
 * lasting values take, is free for temporaries until then.  Temporaries
 * go greedy by size on top, with the floor in their way.  With few lasting
 * values, placing them greedy by size like the rest can leave less waste
 * (a small output under big temporaries), so that is tried too, and so
 * are two tie orders among equal sizes; the smallest arena wins.  Every
 * order is total (ties end at the node id), so the same plan always gets
 * the same offsets.
 *
 * Speed: a query must not scan every placed value, nor meet every lasting
 * one (a training graph of 10,000 ops saves thousands): the stacked
 * lasting values count as the one floor span, and placed values go into a
 * segment tree over groups, at the O(log T) tree nodes that tile their
 * lifetimes.  A query visits only subtrees holding something, so it costs
 * about the number of values live beside it; a 10,000-group plan is placed
 * four times over in about 15 ms.
 */
#include <stdlib.h>
#include <string.h>

#include "fg.h"

#define FG_MEM_ALIGN 256
#define FG_MEM_FREE_LASTING 32    /* see fg_pass_memplan */

typedef struct Value {
	int id;                 /* node id */
	int start, end;         /* first and last group it is live in */
	int lasting;            /* an output or saved value: live to the end */
	int64_t size;           /* bytes, aligned, at least FG_MEM_ALIGN */
	int64_t offset;         /* in the arena, once placed */
} Value;

typedef struct Span {           /* bytes [lo, hi) of the arena */
	int64_t lo, hi;
} Span;

typedef struct Planner {
	FgPlan *plan;
	FgArena *a;
	Value *v;               /* the values that need space */
	int nv;
	int64_t *floor;         /* per group: bytes of the lasting values
				   written by then */
	int leaves;             /* segment tree: a power of two >= groups */
	int *first;             /* per tree node: its slice of `busy` */
	int *fill;              /* per tree node: spans stored so far */
	int *below;             /* per tree node: spans stored in its subtree */
	Span *busy;             /* the placed values' spans, one slice per
				   tree node, sized before placement */
	FG_VEC(Span) found;     /* the current query's busy spans */
} Planner;

static int64_t align_up(int64_t n)
{
	if (n < FG_MEM_ALIGN)
		return FG_MEM_ALIGN;
	if (n > INT64_MAX - FG_MEM_ALIGN)
		fg_die("a value of %lld bytes does not fit an arena", (long long)n);
	return (n + FG_MEM_ALIGN - 1) / FG_MEM_ALIGN * FG_MEM_ALIGN;
}

static int needs_space(const FgPlan *plan, int id)
{
	FgOp op = plan->g->nodes[id].op;

	return plan->why[id] != FG_WHY_NONE && op != FG_OP_INPUT && op != FG_OP_PARAM;
}

/* The values that need space, in node order, without lifetimes yet.
 * slot[id]: the value index of node id, or -1. */
static void find_values(Planner *p, int *slot)
{
	const FgPlan *plan = p->plan;
	const FgGraph *g = plan->g;

	for (int id = 0; id < g->nnodes; id++) {
		slot[id] = -1;
		if (!needs_space(plan, id))
			continue;
		Value *v = &p->v[p->nv];
		v->id = id;
		v->start = plan->home && plan->home[id] >= 0 ? plan->home[id] : -1;
		v->end = -1;
		v->lasting = (g->nodes[id].flags & (FG_NF_OUTPUT | FG_NF_SAVED)) != 0;
		v->size = align_up(fg_value_bytes(g, id));
		slot[id] = p->nv++;
	}
}

static void find_lifetimes(Planner *p, const int *slot)
{
	const FgPlan *plan = p->plan;
	int last = plan->ngroups > 0 ? plan->ngroups - 1 : 0;

	/* A value written by more than one group (recomputed and written
	 * again) lives from the first. */
	for (int gi = 0; gi < plan->ngroups; gi++) {
		const FgGroup *gr = &plan->groups[gi];
		for (int k = 0; k < gr->nwrites; k++) {
			int s = slot[gr->writes[k]];
			if (s >= 0 && (p->v[s].start < 0 || p->v[s].start > gi))
				p->v[s].start = gi;
		}
		for (int k = 0; k < gr->nreads; k++) {
			int s = slot[gr->reads[k]];
			if (s >= 0 && p->v[s].end < gi)
				p->v[s].end = gi;
		}
	}
	for (int i = 0; i < p->nv; i++) {
		Value *v = &p->v[i];
		if (v->start < 0)
			v->start = 0;
		if (v->start > last)
			v->start = last;
		if (v->lasting || v->end > last)
			v->end = last;
		if (v->end < v->start)
			v->end = v->start;
	}
}

/* Lasting values first, by start: their place in the stack.  The
 * temporaries' order comes later. */
static int lasting_first(const void *a, const void *b)
{
	const Value *x = a, *y = b;

	if (x->lasting != y->lasting)
		return x->lasting ? -1 : 1;
	if (x->lasting && x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return (x->id > y->id) - (x->id < y->id);
}

/* Temporaries biggest first; among equals the latest first: the floor
 * only rises, so later values have less room and choose first (a chain
 * then alternates between two buffers whatever its length). */
static int late_first(const void *a, const void *b)
{
	const Value *x = a, *y = b;

	if (x->size != y->size)
		return x->size > y->size ? -1 : 1;
	if (x->start != y->start)
		return x->start > y->start ? -1 : 1;
	return (x->id > y->id) - (x->id < y->id);
}

/* The same, but among equal sizes the longest-lived first: they are the
 * hardest to fit around the others. */
static int long_first(const void *a, const void *b)
{
	const Value *x = a, *y = b;

	if (x->size != y->size)
		return x->size > y->size ? -1 : 1;
	if (x->end - x->start != y->end - y->start)
		return x->end - x->start > y->end - y->start ? -1 : 1;
	return late_first(a, b);
}

static int by_offset(const void *a, const void *b)
{
	const Span *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return (x->hi > y->hi) - (x->hi < y->hi);
}

/* Stacks the lasting values (sorted first, by start) from offset 0 and
 * fills p->floor.  Returns how many there are. */
static int place_lasting(Planner *p)
{
	int n = 0, ntimes = p->plan->ngroups > 0 ? p->plan->ngroups : 1;
	int64_t top = 0;

	p->floor = fg_arena_array(p->a, (size_t)ntimes, sizeof(int64_t));
	for (int t = 0; t < ntimes; t++) {
		for (; n < p->nv && p->v[n].lasting && p->v[n].start <= t; n++) {
			p->v[n].offset = top;
			top += p->v[n].size;
		}
		p->floor[t] = top;
	}
	return n;
}

/* Calls visit(p, node, sp) for each of the fewest tree nodes that tile
 * groups [s, e]. */
static void cover(Planner *p, int s, int e, void (*visit)(Planner *, int, Span), Span sp)
{
	int l = s + p->leaves, r = e + p->leaves + 1;

	for (; l < r; l >>= 1, r >>= 1) {
		if (l & 1)
			visit(p, l++, sp);
		if (r & 1)
			visit(p, --r, sp);
	}
}

static void count_slot(Planner *p, int node, Span unused)
{
	(void)unused;
	p->first[node]++;
}

static void store(Planner *p, int node, Span sp)
{
	p->busy[p->first[node] + p->fill[node]++] = sp;
	for (; node >= 1; node >>= 1)
		p->below[node]++;
}

/* Sizes each tree node's slice: every value's lifetime is known, so the
 * tree is laid out once and never grows. */
static void tree_init(Planner *p)
{
	int nodes, total = 0;

	for (p->leaves = 1; p->leaves < p->plan->ngroups; p->leaves <<= 1)
		;
	nodes = 2 * p->leaves;
	p->first = fg_arena_array(p->a, (size_t)nodes + 1, sizeof(int));
	p->fill = fg_arena_array(p->a, (size_t)nodes, sizeof(int));
	p->below = fg_arena_array(p->a, (size_t)nodes, sizeof(int));
	for (int i = 0; i < p->nv; i++)
		cover(p, p->v[i].start, p->v[i].end, count_slot, (Span){0, 0});
	for (int n = 0; n < nodes; n++) {
		int c = p->first[n];
		p->first[n] = total;
		total += c;
	}
	p->first[nodes] = total;
	p->busy = fg_arena_array(p->a, (size_t)total + 1, sizeof(Span));
}

/* Gathers the spans stored under tree node `node` (which covers groups
 * [nl, nr]) at nodes that overlap groups [s, e]. */
static void collect(Planner *p, int node, int nl, int nr, int s, int e)
{
	if (!p->below[node] || nr < s || nl > e)
		return;
	for (int k = 0; k < p->fill[node]; k++)
		fg_vec_push(p->a, &p->found, p->busy[p->first[node] + k]);
	if (nl == nr)
		return;
	int mid = nl + (nr - nl) / 2;
	collect(p, 2 * node, nl, mid, s, e);
	collect(p, 2 * node + 1, mid + 1, nr, s, e);
}

/* The smallest gap that holds size bytes among the sorted spans (which
 * may overlap one another), or the end of the highest one. */
static int64_t best_fit(const Span *sp, int n, int64_t size)
{
	int64_t cursor = 0, best = -1, best_gap = INT64_MAX;

	for (int k = 0; k < n; k++) {
		if (sp[k].lo > cursor) {
			int64_t gap = sp[k].lo - cursor;
			if (gap >= size && gap < best_gap) {
				best = cursor;
				best_gap = gap;
			}
		}
		if (sp[k].hi > cursor)
			cursor = sp[k].hi;
	}
	return best >= 0 ? best : cursor;
}

/* Places one value: the values placed before it whose lifetimes overlap
 * its own are in its way, and so is the floor (the lasting bytes written
 * by the end of its life) when the lasting values are stacked. */
static void place_value(Planner *p, Value *v, int stacked)
{
	p->found.n = 0;
	if (stacked && p->floor[v->end] > 0)
		fg_vec_push(p->a, &p->found, ((Span){0, p->floor[v->end]}));
	collect(p, 1, 0, p->leaves - 1, v->start, v->end);
	if (p->found.n > 1)
		qsort(p->found.v, (size_t)p->found.n, sizeof *p->found.v, by_offset);
	v->offset = best_fit(p->found.v, p->found.n, v->size);
	cover(p, v->start, v->end, store, (Span){v->offset, v->offset + v->size});
}

/* Places p->v[from..] in the given order, starting from an empty tree;
 * returns the arena size they need. */
static int64_t place_values(Planner *p, int from, int (*order)(const void *, const void *), int stacked)
{
	int64_t top = 0;

	memset(p->fill, 0, 2 * (size_t)p->leaves * sizeof(int));
	memset(p->below, 0, 2 * (size_t)p->leaves * sizeof(int));
	qsort(p->v + from, (size_t)(p->nv - from), sizeof *p->v, order);
	for (int i = from; i < p->nv; i++) {
		place_value(p, &p->v[i], stacked);
		if (p->v[i].offset + p->v[i].size > top)
			top = p->v[i].offset + p->v[i].size;
	}
	return top;
}

/* Keeps the placement just made when it needs less than the best so far. */
static void keep_if_better(Planner *p, int64_t top)
{
	FgPlan *plan = p->plan;

	if (plan->planned_bytes >= 0 && top >= plan->planned_bytes)
		return;
	plan->planned_bytes = top;
	for (int i = 0; i < p->nv; i++)
		plan->offset[p->v[i].id] = p->v[i].offset;
}

void fg_pass_memplan(FgPlan *plan)
{
	/* Neither tie order wins on every graph, and a placement is cheap:
	 * try each and keep the smallest arena. */
	static int (*const orders[])(const void *, const void *) = {late_first, long_first};
	const FgGraph *g = plan->g;
	Planner p = {.plan = plan, .a = g->arena};
	int *slot = fg_arena_array(p.a, (size_t)g->nnodes + 1, sizeof(int));
	int nlasting;

	plan->offset = fg_arena_array(p.a, (size_t)g->nnodes + 1, sizeof(int64_t));
	plan->planned_bytes = -1;
	plan->naive_bytes = 0;
	p.v = fg_arena_array(p.a, (size_t)g->nnodes + 1, sizeof(Value));
	for (int id = 0; id < g->nnodes; id++)
		plan->offset[id] = -1;
	find_values(&p, slot);
	find_lifetimes(&p, slot);
	for (int i = 0; i < p.nv; i++)
		plan->naive_bytes = fg_bytes_add(plan->naive_bytes, p.v[i].size);
	if (plan->naive_bytes >= FG_BYTES_MAX) {
		/* Past 4 EiB no device holds it and the sums below would
		 * overflow: leave it unplanned. */
		plan->planned_bytes = plan->naive_bytes;
		return;
	}
	qsort(p.v, (size_t)p.nv, sizeof *p.v, lasting_first);
	nlasting = place_lasting(&p);
	tree_init(&p);
	int64_t stack = p.floor[plan->ngroups > 0 ? plan->ngroups - 1 : 0];
	for (size_t k = 0; k < sizeof orders / sizeof *orders; k++) {
		int64_t top = place_values(&p, nlasting, orders[k], 1);
		keep_if_better(&p, top > stack ? top : stack);
	}
	/* The stack pins lasting values to the bottom, which can strand a
	 * gap (a small output under two big temporaries).  With few of them,
	 * placing them like any other value costs little: try that too. */
	if (nlasting <= FG_MEM_FREE_LASTING)
		for (size_t k = 0; k < sizeof orders / sizeof *orders; k++)
			keep_if_better(&p, place_values(&p, 0, orders[k], 0));
}
