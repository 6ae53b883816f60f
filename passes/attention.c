/*
 * attention.c - the attention group: found in primitives, never by name.
 *
 * fg_kind_attention matches, from the second matmul back, the pattern
 *
 *     s = matmul(q, transpose(k))          scores [.., Sq, Sk]
 *     x = f(s, ...)                        elementwise ops on the scores
 *     p = exp(x - max(x)) / sum(...)       softmax over the key axis
 *     o = matmul(g(p, ...), v)             [.., Sq, D]
 *
 * with g ops linear in p (dropout, a product, a quotient by another
 * value), which the kernel applies before the division by the row's sum,
 * and says whether the attention kernel (compiler/cuda/attention.c,
 * runtime/fg_attn_sm90.cuh) can run it: f16 or bf16, head dim 64, 128 or
 * 256, q with o's batch dims, k and v broadcast over them (GQA, MQA).
 * The emitter asks it again for its group, so the rule lives here once.
 *
 * fuse_attention runs after the partitioner's walk, which left such a
 * pattern as a scores gemm, a softmax row reduction and an output gemm
 * (the scores cross blocks twice).  Where the pattern and its groups
 * allow (nothing of the scores or the probabilities is written: not an
 * output, not saved, not read by another group, but a log-sum-exp of the
 * scores may be, and p itself, which the kernel then writes from a second
 * pass over the keys; the output's epilogue elementwise ops, transposes and
 * reshapes of o's elements, each stored once), the groups become one
 * attention group and those boundaries go away.  Where they do not, the
 * boundary of the probabilities says which condition failed.
 */
#include <string.h>

#include "fuse.h"

static const FgNode *nd(const FgGraph *g, int id)
{
	return &g->nodes[id];
}

/* Whether reduction r (of op) reduces the last axis of its operand alone,
 * keeping it as a dim of 1. */
static int last_axis_reduction(const FgGraph *g, int r, FgOp op)
{
	const FgNode *n = nd(g, r);
	if (n->op != op)
		return 0;
	const FgShape *in = &nd(g, n->in[0])->shape;
	return in->rank >= 2 && n->a.red.axes == 1u << (in->rank - 1) && n->shape.rank == in->rank;
}

/* A transpose of the last two axes alone (a gemm operand's layout). */
static int swaps_last_two(const FgGraph *g, int id)
{
	const FgNode *n = nd(g, id);
	int r = n->shape.rank;
	if (n->op != FG_OP_TRANSPOSE || r < 2 || n->a.perm[r - 2] != r - 1 || n->a.perm[r - 1] != r - 2)
		return 0;
	for (int i = 0; i < r - 2; i++)
		if (n->a.perm[i] != i)
			return 0;
	return 1;
}

/* The matmul with result shape S that id is computed from through at most
 * depth elementwise ops of shape S, or -1 (memo: per node, -2 unknown). */
static int scores_source(const FgGraph *g, int id, const FgShape *S, int depth, int *memo)
{
	const FgNode *n = nd(g, id);
	if (!fg_shape_eq(&n->shape, S))
		return -1;
	if (n->op == FG_OP_MATMUL)
		return id;
	if (fg_op_info[n->op].cls != FG_CLASS_EW || depth == 0)
		return -1;
	if (memo[id] != -2)
		return memo[id];
	int found = -1;
	for (int j = 0; j < n->nin && found < 0; j++)
		found = scores_source(g, n->in[j], S, depth - 1, memo);
	memo[id] = found;
	return found;
}

static const char *shape_str(FgArena *ar, const FgGraph *g, int id)
{
	char buf[256];
	return fg_arena_strdup(ar, fg_type_str(buf, sizeof buf, nd(g, id)->dt, &nd(g, id)->shape));
}

/* Whether batch dims of operand s (rank r, matrices last) broadcast into
 * o's: each 1 or o's (all equal: exact). */
static int batch_fits(const FgShape *s, const FgShape *o, int exact)
{
	if (s->rank > o->rank || (exact && s->rank != o->rank))
		return 0;
	for (int i = 0; i < s->rank - 2; i++) {
		int64_t d = s->d[i], od = o->d[i + o->rank - s->rank];
		if (d != od && (exact || d != 1))
			return 0;
	}
	return 1;
}

/* Whether id is a row max of x for a log-sum-exp: max(x) over the last
 * axis, or where(isinf(m), 0, m) of such an m; its ops into a. */
static int lse_max(const FgGraph *g, int id, int x, FgAttn *a)
{
	const FgNode *n = nd(g, id);
	if (n->op == FG_OP_WHERE) {
		const FgNode *c = nd(g, n->in[0]), *z = nd(g, n->in[1]);
		if (c->op != FG_OP_ISINF || c->in[0] != n->in[2] || z->op != FG_OP_CONST || z->a.value != 0 ||
		    !lse_max(g, n->in[2], x, a))
			return 0;
		a->lse[a->nlse++] = n->in[0];
		a->lse[a->nlse++] = id;
		return 1;
	}
	if (!last_axis_reduction(g, id, FG_OP_MAX) || n->in[0] != x)
		return 0;
	a->lse[a->nlse++] = id;
	return 1;
}

/* A log-sum-exp of a's scores x that node y (an add) computes, into a. */
static int lse_at(const FgGraph *g, int y, FgAttn *a)
{
	const FgNode *n = nd(g, y);
	if (n->op != FG_OP_ADD)
		return 0;
	for (int side = 0; side < 2; side++) {
		int lg = n->in[side], f = n->in[1 - side];
		const FgNode *L = nd(g, lg);
		if (L->op != FG_OP_LOG || !last_axis_reduction(g, L->in[0], FG_OP_SUM))
			continue;
		int sum = L->in[0], ex = nd(g, sum)->in[0];
		if (nd(g, ex)->op != FG_OP_EXP || nd(g, nd(g, ex)->in[0])->op != FG_OP_SUB)
			continue;
		int sub = nd(g, ex)->in[0];
		if (nd(g, sub)->in[0] != a->x)
			continue;
		a->nlse = 0;
		if (!lse_max(g, f, a->x, a) || (nd(g, sub)->in[1] != f && !lse_max(g, nd(g, sub)->in[1], a->x, a)))
			continue;
		a->lse_f = f;
		a->lse_f1 = nd(g, sub)->in[1];
		a->lse_add = y;
		a->lse[a->nlse++] = sub, a->lse[a->nlse++] = ex, a->lse[a->nlse++] = sum;
		a->lse[a->nlse++] = lg, a->lse[a->nlse++] = y;
		return 1;
	}
	return 0;
}

/* The log-sum-exp of a's scores that the graph writes (an output or a
 * saved value, or read by a reshape that drops the axis of 1 and is),
 * into a; a->lse_y -1 when none. */
static void find_lse(const FgGraph *g, FgAttn *a)
{
	const unsigned written = FG_NF_OUTPUT | FG_NF_SAVED;
	a->lse_y = -1;
	for (int y = a->x + 1; y < g->nnodes; y++) {
		if (!lse_at(g, y, a))
			continue;
		if (nd(g, y)->flags & written) {
			a->lse_y = y;
			return;
		}
		for (int r = y + 1; r < g->nnodes; r++) {
			const FgNode *rs = nd(g, r);
			if (rs->op == FG_OP_RESHAPE && rs->in[0] == y && (rs->flags & written) &&
			    fg_shape_numel(&rs->shape) == fg_shape_numel(&nd(g, y)->shape)) {
				a->lse_y = r;
				a->lse[a->nlse++] = r;
				return;
			}
		}
	}
	a->nlse = 0;
}

/* Whether id is a softmax's last op, p = e / sum(e) over the last axis. */
static int softmax_div(const FgGraph *g, int id)
{
	const FgNode *p = nd(g, id);
	return p->op == FG_OP_DIV && last_axis_reduction(g, p->in[1], FG_OP_SUM) && nd(g, p->in[1])->in[0] == p->in[0];
}

/* Whether id can be on the way from the softmax to the second matmul:
 * the softmax itself, or an op the kernel applies to the unnormalized
 * probabilities (linear in them, so that the division by the row's sum
 * may come at the end): dropout, a product, a quotient by another value. */
static int probs_op(const FgGraph *g, int id)
{
	FgOp op = nd(g, id)->op;
	return softmax_div(g, id) || op == FG_OP_DROPOUT || op == FG_OP_MUL || op == FG_OP_DIV;
}

int fg_kind_attention(const FgGraph *g, int mm2, FgAttn *a, const char **why, FgArena *ar)
{
	memset(a, 0, sizeof *a);
	*why = NULL;
	const FgNode *o = nd(g, mm2);
	if (o->op != FG_OP_MATMUL)
		return 0;
	/* the softmax, expanded: p = e / sum(e), e = exp(x - max(x)) */
	a->mm2 = mm2;
	/* the ops on the probabilities, back from the matmul to the softmax */
	int cur = o->in[0], prev[FG_ATTN_PROBS_MAX], np = 0;
	while (!softmax_div(g, cur)) {
		const FgNode *n = nd(g, cur);
		int next = n->op == FG_OP_DROPOUT || n->op == FG_OP_DIV ? n->in[0] : -1;
		if (n->op == FG_OP_MUL)
			next = probs_op(g, n->in[0]) ? n->in[0] : probs_op(g, n->in[1]) ? n->in[1] : -1;
		if (next < 0 || np == FG_ATTN_PROBS_MAX || !fg_shape_eq(&nd(g, next)->shape, &n->shape) ||
		    (n->op == FG_OP_MUL && n->in[0] == n->in[1]))
			return 0;
		prev[np++] = cur;
		cur = next;
	}
	for (int i = 0; i < np; i++)
		a->probs[i] = prev[np - 1 - i];
	a->nprobs = np;
	a->p = cur;
	const FgNode *p = nd(g, a->p);
	a->exp = p->in[0];
	a->sum = p->in[1];
	if (nd(g, a->sum)->in[0] != a->exp || nd(g, a->exp)->op != FG_OP_EXP)
		return 0;
	a->sub = nd(g, a->exp)->in[0];
	const FgNode *sub = nd(g, a->sub);
	if (sub->op != FG_OP_SUB || !last_axis_reduction(g, sub->in[1], FG_OP_MAX) || nd(g, sub->in[1])->in[0] != sub->in[0])
		return 0;
	a->max = sub->in[1];
	a->x = sub->in[0];
	const FgShape *S = &p->shape;
	if (!fg_shape_eq(&nd(g, a->x)->shape, S) || !fg_shape_eq(&sub->shape, S) || !fg_shape_eq(&nd(g, a->exp)->shape, S))
		return 0;
	/* the scores: the ops on them back to the first matmul */
	int *memo = fg_arena_array(ar, (size_t)g->nnodes + 1, sizeof(int));
	for (int i = 0; i < g->nnodes; i++)
		memo[i] = -2;
	int rev[FG_ATTN_CHAIN_MAX], nrev = 0;
	cur = a->x;
	if (scores_source(g, cur, S, FG_ATTN_CHAIN_MAX, memo) < 0)
		return 0;       /* a softmax of something else than a matmul's scores */
	while (nd(g, cur)->op != FG_OP_MATMUL) {
		const FgNode *n = nd(g, cur);
		int next = -1;
		for (int j = 0; j < n->nin; j++) {
			if (scores_source(g, n->in[j], S, FG_ATTN_CHAIN_MAX, memo) < 0)
				continue;
			if (next >= 0 && next != n->in[j]) {
				*why = fg_arena_printf(ar, "the %s at %d:%d combines two values computed from the scores "
						       "(the attention kernel carries one score an element)",
						       fg_op_info[n->op].name, n->loc.line, n->loc.col);
				return -1;
			}
			next = n->in[j];
		}
		if (nrev == FG_ATTN_CHAIN_MAX) {
			*why = fg_arena_printf(ar, "more than %d ops on the scores", FG_ATTN_CHAIN_MAX);
			return -1;
		}
		rev[nrev++] = cur;
		cur = next;
	}
	a->mm1 = cur;
	for (int i = 0; i < nrev; i++)
		a->chain[i] = rev[nrev - 1 - i];
	a->nchain = nrev;
	/* operands and layouts */
	const FgNode *m1 = nd(g, a->mm1);
	a->q = m1->in[0];
	a->kt = m1->in[1];
	a->v = o->in[1];
	FgDtype dt = m1->dt;
	if (dt != FG_DT_F16 && dt != FG_DT_BF16) {
		*why = fg_arena_printf(ar, "the scores' matmul multiplies %s: the attention kernel takes f16 or bf16",
				       fg_dtype_name[dt]);
		return -1;
	}
	if (swaps_last_two(g, a->q)) {
		*why = fg_arena_printf(ar, "q is read transposed (%s): the attention kernel reads q as [.., Sq, D] rows",
				       shape_str(ar, g, nd(g, a->q)->in[0]));
		return -1;
	}
	if (!swaps_last_two(g, a->kt)) {
		*why = fg_arena_printf(ar, "k^T is stored as %s: the attention kernel reads k as [.., Sk, D] rows, "
				       "through transpose(k)", shape_str(ar, g, a->kt));
		return -1;
	}
	a->k = nd(g, a->kt)->in[0];
	if (swaps_last_two(g, a->v)) {
		*why = fg_arena_printf(ar, "v is read transposed (%s): the attention kernel reads v as [.., Sk, D] rows",
				       shape_str(ar, g, nd(g, a->v)->in[0]));
		return -1;
	}
	if (nd(g, a->v)->dt != dt || o->dt != dt || p->dt != dt) {
		*why = fg_arena_printf(ar, "p and v (%s, %s) are not the scores' dtype %s", fg_dtype_name[p->dt],
				       fg_dtype_name[nd(g, a->v)->dt], fg_dtype_name[dt]);
		return -1;
	}
	const FgShape *qs = &nd(g, a->q)->shape, *ks = &nd(g, a->k)->shape, *vs = &nd(g, a->v)->shape;
	const FgShape *os = &o->shape;
	a->sq = qs->d[qs->rank - 2];
	a->d = qs->d[qs->rank - 1];
	a->sk = ks->d[ks->rank - 2];
	if ((a->d != 64 && a->d != 128 && a->d != 256) || vs->d[vs->rank - 1] != a->d) {
		*why = fg_arena_printf(ar, "head dims %lld (q %s) and %lld (v %s): the attention kernel takes 64, 128 or "
				       "256, the same for both", (long long)a->d, shape_str(ar, g, a->q),
				       (long long)vs->d[vs->rank - 1], shape_str(ar, g, a->v));
		return -1;
	}
	if (!batch_fits(qs, os, 1)) {
		*why = fg_arena_printf(ar, "q %s does not have the batch dims of the output %s", shape_str(ar, g, a->q),
				       shape_str(ar, g, mm2));
		return -1;
	}
	if (!batch_fits(ks, os, 0) || !batch_fits(vs, os, 0)) {
		*why = fg_arena_printf(ar, "k %s or v %s broadcasts over the output's batch %s otherwise than by dims "
				       "of 1", shape_str(ar, g, a->k), shape_str(ar, g, a->v), shape_str(ar, g, mm2));
		return -1;
	}
	if (fg_shape_numel(os) >= INT32_MAX || fg_shape_numel(S) / a->sk >= INT32_MAX || a->sk >= INT32_MAX) {
		*why = fg_arena_printf(ar, "the output %s or a row count past 2^31", shape_str(ar, g, mm2));
		return -1;
	}
	find_lse(g, a);
	a->p_written = (p->flags & (FG_NF_OUTPUT | FG_NF_SAVED | FG_NF_MATERIALIZE)) != 0;
	return 1;
}

/* ------------------------------------------------ the groups, merged */

/* Whether node id is one of pattern a's ops (the output matmul too). */
static int in_pattern(const FgAttn *a, int id)
{
	if (id == a->mm1 || id == a->mm2 || id == a->kt || id == a->max || id == a->sub || id == a->exp ||
	    id == a->sum || id == a->p)
		return 1;
	for (int i = 0; i < a->nchain; i++)
		if (a->chain[i] == id)
			return 1;
	for (int i = 0; i < a->nlse; i++)
		if (a->lse[i] == id)
			return 1;
	for (int i = 0; i < a->nprobs; i++)
		if (a->probs[i] == id)
			return 1;
	return 0;
}

/* Adds the groups of node id to set gs (n of them), unique; 0 when id
 * is in none, or there are more than max.  A value recomputed in several
 * groups (a row max that the softmax and a log-sum-exp share: passes/
 * cse.c merged them, the walk recomputes it in each row kernel) brings
 * them all: they merge, and the checks after say whether they may. */
static int add_group(Fuser *f, int id, int *gs, int *n, int max)
{
	if (f->memb[id].n == 0)
		return 0;
	for (int j = 0; j < f->memb[id].n; j++) {
		int gi = f->memb[id].v[j], seen = 0;
		for (int i = 0; i < *n && !seen; i++)
			seen = gs[i] == gi;
		if (seen)
			continue;
		if (*n == max)
			return 0;
		gs[(*n)++] = gi;
	}
	return 1;
}

static int in_set(const int *gs, int n, int gi)
{
	for (int i = 0; i < n; i++)
		if (gs[i] == gi)
			return 1;
	return 0;
}

/* Why the groups of pattern a cannot become one attention group, or
 * NULL; gs: those groups, *ngs of them. */
static const char *merge_refusal(Fuser *f, const FgAttn *a, int *gs, int *ngs)
{
	const FgGraph *g = f->g;
	int ids[FG_ATTN_CHAIN_MAX + FG_ATTN_PROBS_MAX + 20], n = 0, max = FG_ATTN_CHAIN_MAX + FG_ATTN_PROBS_MAX + 20;
	ids[n++] = a->mm1, ids[n++] = a->max, ids[n++] = a->sub, ids[n++] = a->exp, ids[n++] = a->sum;
	ids[n++] = a->p, ids[n++] = a->mm2;
	for (int i = 0; i < a->nchain; i++)
		ids[n++] = a->chain[i];
	for (int i = 0; i < a->nlse; i++)
		ids[n++] = a->lse[i];
	for (int i = 0; i < a->nprobs; i++)
		ids[n++] = a->probs[i];
	*ngs = 0;
	for (int i = 0; i < n; i++) {
		const FgNode *m = nd(g, ids[i]);
		if (ids[i] != a->mm2 && ids[i] != a->lse_y && ids[i] != a->p &&
		    (m->flags & (FG_NF_OUTPUT | FG_NF_SAVED | FG_NF_MATERIALIZE)))
			return fg_arena_printf(f->a, "%s %s at %d:%d is %s, and the attention kernel keeps the scores "
					       "and the probabilities on chip", m->name ? m->name : fg_op_info[m->op].name,
					       shape_str(f->a, g, ids[i]), m->loc.line, m->loc.col,
					       m->flags & FG_NF_OUTPUT ? "an output" : m->flags & FG_NF_SAVED ? "saved (@save)"
					       : "@materialize");
		if (!add_group(f, ids[i], gs, ngs, max))
			return f->memb[ids[i]].n == 0
				? fg_arena_printf(f->a, "the %s at %d:%d is computed in no group, so no attention kernel "
						  "can take it", fg_op_info[m->op].name, m->loc.line, m->loc.col)
				: fg_arena_printf(f->a, "the %s at %d:%d is computed in %d groups, more than one attention "
						  "kernel merges", fg_op_info[m->op].name, m->loc.line, m->loc.col,
						  f->memb[ids[i]].n);
		if (ids[i] == a->mm2 || ids[i] == a->lse_y)
			continue;
		FOR_CONSUMERS(f, ids[i], c)
			if (!in_pattern(a, c))
				return fg_arena_printf(f->a, "the %s at %d:%d is also read by the %s at %d:%d, and the "
						       "attention kernel keeps it on chip", fg_op_info[m->op].name,
						       m->loc.line, m->loc.col, fg_op_info[nd(g, c)->op].name,
						       nd(g, c)->loc.line, nd(g, c)->loc.col);
	}
	if (!in_group(f, a->kt, f->memb[a->mm1].v[0]))
		return fg_arena_printf(f->a, "k^T %s is written by a group of its own, and the attention kernel reads "
				       "k's rows", shape_str(f->a, g, a->kt));
	/* the output's group: elementwise ops on o's elements, and
	 * transposes and reshapes that move where each is stored (the head
	 * merge), each on one value computed from o */
	int g3 = f->memb[a->mm2].v[0];
	const BGroup *b3 = &f->groups.v[g3];
	unsigned char *dep = fg_arena_alloc(f->a, (size_t)g->nnodes + 1);
	memset(dep, 0, (size_t)g->nnodes + 1);
	dep[a->mm2] = 1;
	const int64_t on = fg_shape_numel(&nd(g, a->mm2)->shape);
	for (int k = b3->nodes.n - 1; k >= 0; k--) {     /* increasing ids */
		int id = b3->nodes.v[k], ndep = 0, same = 1;
		const FgNode *m = nd(g, id);
		FgOpClass c = fg_op_info[m->op].cls;
		if (id == a->mm2)
			continue;
		for (int j = 0; j < m->nin; j++) {
			ndep += dep[m->in[j]];
			same &= !dep[m->in[j]] || fg_shape_eq(&nd(g, m->in[j])->shape, &m->shape);
		}
		dep[id] = ndep > 0;
		if (dep[id] && (ndep > 1 || fg_shape_numel(&m->shape) != on || (c == FG_CLASS_EW && !same) ||
				(c != FG_CLASS_EW && m->op != FG_OP_TRANSPOSE && m->op != FG_OP_RESHAPE)))
			return fg_arena_printf(f->a, "the output's epilogue %s %s at %d:%d is not an elementwise op, transpose "
					       "or reshape of one value of o's elements (the attention kernel stores each "
					       "element of o once)", fg_op_info[m->op].name, shape_str(f->a, g, id),
					       m->loc.line, m->loc.col);
		if ((m->flags & (FG_NF_OUTPUT | FG_NF_SAVED | FG_NF_MATERIALIZE)) && !dep[id])
			return fg_arena_printf(f->a, "the output's group also writes %s, which is not computed from o",
					       shape_str(f->a, g, id));
	}
	/* the other groups: the pattern, and what the score ops read */
	for (int i = 0; i < *ngs; i++) {
		if (gs[i] == g3)
			continue;
		const BGroup *b = &f->groups.v[gs[i]];
		for (int k = 0; k < b->nodes.n; k++) {
			int id = b->nodes.v[k];
			FgOpClass c = fg_op_info[nd(g, id)->op].cls;
			if (in_pattern(a, id) || nd(g, id)->op == FG_OP_CONST)
				continue;
			if (c != FG_CLASS_EW && c != FG_CLASS_LAYOUT)
				return fg_arena_printf(f->a, "the %s at %d:%d shares a group with the scores",
						       fg_op_info[nd(g, id)->op].name, nd(g, id)->loc.line, nd(g, id)->loc.col);
			if (nd(g, id)->flags & (FG_NF_OUTPUT | FG_NF_SAVED | FG_NF_MATERIALIZE) || f->block[id] != FG_WHY_NONE)
				return fg_arena_printf(f->a, "%s %s, computed beside the scores, is written for other "
						       "groups", nd(g, id)->name ? nd(g, id)->name : fg_op_info[nd(g, id)->op].name,
						       shape_str(f->a, g, id));
		}
	}
	return NULL;
}

/* Groups gs (n) become one attention group rooted at a's output. */
static void merge(Fuser *f, const FgAttn *a, const int *gs, int n)
{
	BGroup b;
	memset(&b, 0, sizeof b);
	b.kind = FG_GROUP_ATTENTION;
	b.root = a->mm2;
	b.space = nd(f->g, a->mm2)->shape;
	fg_vec_push(f->a, &f->groups, b);
	int ni = f->groups.n - 1;
	int mark = ++f->stamp_now;
	for (int i = 0; i < n; i++) {
		BGroup *old = &f->groups.v[gs[i]];
		for (int k = 0; k < old->nodes.n; k++) {
			int id = old->nodes.v[k];
			if (f->stamp[id] != mark) {
				f->stamp[id] = mark;
				fg_vec_push(f->a, &f->groups.v[ni].nodes, id);
			}
		}
		old->dead = 1;
	}
	BGroup *nb = &f->groups.v[ni];
	/* members in decreasing id order, as the walk leaves them */
	for (int i = 1; i < nb->nodes.n; i++)
		for (int j = i; j > 0 && nb->nodes.v[j - 1] < nb->nodes.v[j]; j--) {
			int t = nb->nodes.v[j];
			nb->nodes.v[j] = nb->nodes.v[j - 1];
			nb->nodes.v[j - 1] = t;
		}
	for (int k = 0; k < nb->nodes.n; k++) {
		int id = nb->nodes.v[k], w = 0;
		int seen_new = 0;
		for (int j = 0; j < f->memb[id].n; j++) {
			int gi = f->memb[id].v[j];
			if (in_set(gs, n, gi))
				gi = ni;
			if (gi == ni && seen_new)
				continue;
			seen_new |= gi == ni;
			f->memb[id].v[w++] = gi;
		}
		f->memb[id].n = w;
		if (in_pattern(a, id) && id != a->mm2 && id != a->lse_y && !(id == a->p && a->p_written)) {
			f->block[id] = FG_WHY_NONE;
			f->detail[id] = NULL;
		}
	}
}

void fuse_attention(Fuser *f)
{
	const FgGraph *g = f->g;
	for (int id = g->nnodes - 1; id >= 0; id--) {
		if (nd(g, id)->op != FG_OP_MATMUL || !f->memb[id].n)
			continue;
		FgAttn a;
		const char *why;
		int r = fg_kind_attention(g, id, &a, &why, f->a);
		if (r == 0)
			continue;
		int gs[FG_ATTN_CHAIN_MAX + FG_ATTN_PROBS_MAX + 20], ngs = 0;
		if (r > 0)
			why = merge_refusal(f, &a, gs, &ngs);
		if (!why) {
			merge(f, &a, gs, ngs);
			continue;
		}
		/* the probabilities' boundary says why they cross it */
		if (f->block[a.p] != FG_WHY_NONE && f->detail[a.p])
			f->detail[a.p] = fg_arena_printf(f->a, "%s; not one attention kernel: %s", f->detail[a.p], why);
	}
}
