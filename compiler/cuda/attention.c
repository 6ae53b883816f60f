/*
 * attention.c - an attention group (passes/attention.c finds the pattern
 * and says what the kernel takes): one launch of the flash-style sm_90a
 * kernel of runtime/fg_attn_sm90.cuh, with two functors written here per
 * group:
 *
 *   NAME_scores: the ops between the scores' matmul and the softmax
 *     (scale, mask, bias, softcap), evaluated in f32 on a pair of the
 *     accumulators S[z][r][c], S[z][r][c + 1], in place; the values they
 *     read (a mask, a bias) are loaded at that index, read-only, one of
 *     them from shared memory where the kernel stages it (staged_operand);
 *   NAME_probs: the ops between the softmax and the second matmul
 *     (dropout, a product), on a pair of the unnormalized probabilities
 *     exp(x - m), in place (linear in them: the division by the row's sum
 *     comes at the end);
 *   NAME_out: the group's writes at O[z][r][c], O[z][r][c + 1] (the
 *     normalized output, and any epilogue on it), as the generated
 *     matmul's epilogue functor does;
 *   NAME_tiles, NAME_rows: below.
 *
 * The matmuls' operands are read through tensor maps: q, k (under its
 * transpose) and v as stored, k and v at the batch of each output matrix
 * that fga::Batch gives (their strides in matrices, 0 where broadcast).
 */
#include <math.h>
#include <string.h>

#include "cuda.h"

/* Which of the group's writes a functor stores. */
typedef enum Writes {
	W_NONE,
	W_OUT,                  /* all but the log-sum-exp and p (NAME_out) */
	W_P,                    /* p alone (NAME_psave) */
} Writes;

static int stores(const FgAttn *a, Writes w, int id)
{
	return w == W_P ? id == a->p : w == W_OUT && id != a->lse_y && !(id == a->p && a->p_written);
}

/* Writes functor `name` of k: a field per read it loaded and per write it
 * stores (w), then operator() with signature sig over k's lines; head: a
 * line before them, or NULL.
 * Returns the initializer's arguments. */
static const char *functor(Emit *E, Kern *k, const char *name, const char *sig, const FgAttn *a, Writes w,
			   const char *head)
{
	const char *args = "";
	cu_out(E, "struct %s {\n", name);
	if (head)
		cu_out(E, "\t%s\n", head);
	for (int r = 0; r < k->gr->nreads + (w != W_NONE ? k->gr->nwrites : 0); r++) {
		int id = r < k->gr->nreads ? k->gr->reads[r] : k->gr->writes[r - k->gr->nreads];
		if (r < k->gr->nreads ? !k->used[r] : !stores(a, w, id))
			continue;
		cu_out(E, "\t%s%s *%s;\n", r < k->gr->nreads ? "const " : "", fg_dtype_info[k->g->nodes[id].dt].cuda_store,
		       cu_tensor_param(k, id));
		args = cu_fmt(k->a, "%s%s%s", args, *args ? ", " : "", cu_tensor_param(k, id));
	}
	cu_drop_unused(k, &k->lines[0]);
	cu_out(E, "\t__device__ __forceinline__ void operator()(%s) const\n\t{\n", sig);
	cu_out(E, "\t\t(void)v0, (void)v1;%s\n", strstr(sig, "st_") ? " (void)st_;" : "");
	for (int i = 0; i < k->lines[0].n; i++)
		cu_out(E, "\t\t%s\n", k->lines[0].v[i].text);
	cu_out(E, "\t}\n};\n\n");
	return args;
}

/* A score chain's constant factors, taken out of its functor (a multiply
 * a pair each, on every score of every tile):
 *   - its leading products and quotients by constants (`s * 0.0884 / 30`)
 *     are one product, `pre`, on the kernel's scores as they come;
 *   - where every op after them keeps a scale (a where that puts -inf
 *     elsewhere: k where(c, s, -inf) = where(c, k s, -inf); an identity,
 *     `x = s`) and the product is positive, it is the kernel's `scale`
 *     instead, applied in the exponent (the max of the unscaled scores is
 *     the scaled ones' over the scale; fga::attention);
 *   - else a last product by a positive constant, or quotient by one,
 *     after which every op keeps a scale (the softcap's 30 in
 *     `30 * tanh(s / 30)`, or a 20 as `/ 0.05`) is the kernel's `scale`:
 *     the functor takes that op for its operand (Kern.unscaled).
 * A factor counts where it and its reciprocal are normal f32 numbers. */
typedef struct ScoreFold {
	double scale;           /* the kernel's; 1: none */
	double pre;             /* the functor's first product; 1: none */
	int under;              /* the leading factors' ops (the functor starts
				   from the last one's value: fold_from) */
	int unscaled;           /* the last product, the kernel's scale; -1 */
	int ops;                /* the ops the functor computes (pre one,
				   identities and the scale none) */
} ScoreFold;

static int normal_factor(double c)
{
	return isfinite(c) && fabs(c) >= 0x1p-126 && fabs(c) <= 0x1p126;
}

/* The factor by which op id scales value prev (s * c, c * s, s / c),
 * or 0 when it is not such a product. */
static double const_factor(const FgGraph *g, int id, int prev)
{
	const FgNode *n = &g->nodes[id];
	if (n->op != FG_OP_MUL && n->op != FG_OP_DIV)
		return 0;
	int other = n->in[0] == prev ? 1 : n->op == FG_OP_MUL && n->in[1] == prev ? 0 : -1;
	if (other < 0 || g->nodes[n->in[other]].op != FG_OP_CONST || !normal_factor(g->nodes[n->in[other]].a.value))
		return 0;
	return n->op == FG_OP_MUL ? g->nodes[n->in[other]].a.value : 1 / g->nodes[n->in[other]].a.value;
}

/* The operand of product id that is not its constant factor. */
static int factor_operand(const FgGraph *g, int id)
{
	const FgNode *n = &g->nodes[id];
	return g->nodes[n->in[0]].op == FG_OP_CONST && n->op == FG_OP_MUL ? n->in[1] : n->in[0];
}

/* The value chain op i of a takes: the previous op's, or the scores. */
static int chain_in(const FgAttn *a, int i)
{
	return i ? a->chain[i - 1] : a->mm1;
}

/* Whether op id, taking value prev, keeps a scale of prev: an identity,
 * or a where with -inf as its other branch. */
static int keeps_scale(const FgGraph *g, int id, int prev)
{
	const FgNode *w = &g->nodes[id];
	if (w->op == FG_OP_IDENTITY)
		return 1;
	if (w->op != FG_OP_WHERE || (w->in[1] != prev && w->in[2] != prev))
		return 0;
	const FgNode *o = &g->nodes[w->in[w->in[1] == prev ? 2 : 1]];
	return o->op == FG_OP_CONST && o->a.value == -INFINITY;
}

static void score_fold(const FgGraph *g, const FgAttn *a, ScoreFold *f)
{
	*f = (ScoreFold){1, 1, 0, -1, 0};
	double c = 1;
	int n = 0;
	for (double t; n < a->nchain && (t = const_factor(g, a->chain[n], chain_in(a, n))) != 0 &&
		       normal_factor(c * t) && normal_factor(1 / (c * t)); n++)
		c *= t;
	/* the last op that does not keep a scale: tail */
	int tail = a->nchain - 1;
	while (tail >= n && keeps_scale(g, a->chain[tail], chain_in(a, tail)))
		tail--;
	for (int i = 0; i < a->nchain; i++)
		f->ops += g->nodes[a->chain[i]].op != FG_OP_IDENTITY;
	if (n > 0 && tail < n && c > 0) {       /* the leading factors are the scale */
		f->scale = c, f->under = n;
		f->ops -= n;
		return;
	}
	if (n > 0)
		f->pre = c, f->under = n, f->ops -= n - 1;
	double t = tail >= n ? const_factor(g, a->chain[tail], chain_in(a, tail)) : 0;
	if (t > 0) {
		f->scale = t, f->unscaled = a->chain[tail];
		f->ops--;
	}
}

/* The value the kernel gives a's score functor: the scores, or the last
 * leading factor's (its product the kernel's scale, or pre). */
static int fold_from(const FgAttn *a, const ScoreFold *f)
{
	return chain_in(a, f->under);
}

/* The folds in a phrase, for the note and the kernel's comment ("" when
 * none). */
static const char *fold_phrase(FgArena *ar, const ScoreFold *f)
{
	const int pre1 = f->pre != 1 && f->under > 1;  /* one product of several */
	if (!pre1 && f->unscaled < 0 && f->under < 2)
		return "";      /* none, or the one leading factor as the scale (always so) */
	const char *pre = pre1 ? cu_fmt(ar, "the score ops' leading factors taken as one product by %.9g", f->pre) : "";
	const char *sc = f->scale == 1 ? "" :
			 cu_fmt(ar, "%s%s, %.9g, applied in the exponent", pre1 ? ", " : "",
				f->unscaled >= 0 ? (pre1 ? "their last factor" : "the score ops' last factor") :
				f->under > 1 ? "the score ops' factors" : "the score ops' factor", f->scale);
	return cu_fmt(ar, "%s%s", pre, sc);
}

/* The ops from value `from` (the kernel's, in the pair, times pre) to
 * value `to`, on the pair (v0, v1) at S[z][r][c], in place (c + 1 may be
 * Sk when Sk is odd): the score ops, from the scores (or from their
 * leading factors' last op: ScoreFold) to the softmax's input; the ops on
 * the probabilities, from the softmax to the matmul's operand. */
static void pair_ops(Kern *k, const FgAttn *a, int from, double pre, int to)
{
	const FgShape *S = &k->g->nodes[a->x].shape;
	const int R = S->rank;
	k->mm = from;
	k->nc = 1;
	if (from == to && pre == 1)
		return;         /* no op: the functor leaves the pair */
	const char *lit = cu_literal(k->a, FG_DT_F32, pre), *v[2] = {"v0", "v1"};
	for (int l = 0; l < 2 && pre != 1; l++)
		v[l] = cu_fmt(k->a, "(%s * %s)", v[l], lit);
	Ix x = cu_ix_pair(k, S);
	if (k->st_id >= 0)
		k->st_at = cu_ix_bcast(&x, S, cu_shape_of(k, k->st_id));
	if (a->sk % 2 == 0) {
		k->acc[0] = v[0], k->acc[1] = v[1];
		Val e[2];
		for (int l = 0; l < 2; l++) {
			Ix y = cu_lane_of(k, &x, R - 1, 2, l);
			e[l] = cu_gen(k, to, &y);
		}
		cu_kline(k, 0, NULL, "v0 = %s, v1 = %s;", e[0].e, e[1].e);
		return;
	}
	k->acc[0] = v[0];
	cu_kline(k, 0, NULL, "v0 = %s;", cu_gen(k, to, &x).e);
	cu_kopen(k);
	k->acc[0] = v[1];
	Ix x1 = x;
	x1.c[R - 1] = "c + 1";
	x1.lv[R - 1] = 1;
	cu_kline(k, 1, NULL, "v1 = %s;", cu_gen(k, to, &x1).e);
	cu_kclose(k, cu_fmt(k->a, "if (c + 1 < %lld)", (long long)a->sk));
}

/* Per node, whether it is computed from the output matmul mm2 inside k's
 * group (passes/attention.c's rule: each op from o takes one such value). */
static unsigned char *from_o(const Kern *k, int mm2)
{
	unsigned char *dep = fg_arena_alloc(k->a, (size_t)k->g->nnodes + 1);
	memset(dep, 0, (size_t)k->g->nnodes + 1);
	dep[mm2] = 1;
	for (int i = 0; i < k->gr->nnodes; i++) {      /* topological order */
		const FgNode *m = &k->g->nodes[k->gr->nodes[i]];
		for (int j = 0; j < m->nin && cu_is_member(k, k->gr->nodes[i]); j++)
			dep[k->gr->nodes[i]] |= dep[m->in[j]];
	}
	return dep;
}

/* Write w's path back to the output matmul mm2 through the values dep
 * marks, w first; its length.  *moves: a transpose or reshape lies on it. */
static int o_path(const Kern *k, const unsigned char *dep, int mm2, int w, int *path, int *moves)
{
	int n = 0;
	*moves = 0;
	for (int cur = w; cur != mm2 && n < k->gr->nnodes;) {
		const FgNode *m = &k->g->nodes[cur];
		path[n++] = cur;
		*moves |= m->op == FG_OP_TRANSPOSE || m->op == FG_OP_RESHAPE;
		int next = -1;
		for (int j = 0; j < m->nin; j++)
			if (dep[m->in[j]])
				next = m->in[j];
		FG_ASSERT(next >= 0);
		cur = next;
	}
	return n;
}

/* Index x of o, carried along path[n - 1] .. path[0] (elementwise ops
 * keep it; a transpose permutes it; a reshape goes through the flat
 * index): where that element sits in path[0]. */
static Ix carried(Kern *k, const Ix *x, const int *path, int n)
{
	Ix y = *x;
	for (int i = n - 1; i >= 0; i--) {
		const FgNode *m = &k->g->nodes[path[i]];
		if (m->op == FG_OP_TRANSPOSE) {
			Ix t = y;
			for (int d = 0; d < m->shape.rank; d++)
				t.c[d] = y.c[m->a.perm[d]], t.lv[d] = y.lv[m->a.perm[d]];
			t.lin = NULL;
			y = t;
		} else if (m->op == FG_OP_RESHAPE) {
			const char *lin = cu_ix_linear(k, &y, cu_shape_of(k, m->in[0]));
			y = cu_ix_from_lin(k, &m->shape, lin, 0, "w");
		}
	}
	return y;
}

/* Whether the pair at c, c + 1 (c even) stays side by side along path
 * (o_path): every value on it has an even last dim, so that the pair, at
 * an even flat index, never straddles two rows (a reshape keeps the flat
 * order), and every transpose keeps the last axis last. */
static int keeps_pair(const Kern *k, const int *path, int n)
{
	for (int i = 0; i < n; i++) {
		const FgNode *m = &k->g->nodes[path[i]];
		if (m->shape.d[m->shape.rank - 1] % 2 != 0 ||
		    (m->op == FG_OP_TRANSPOSE && m->a.perm[m->shape.rank - 1] != m->shape.rank - 1))
			return 0;
	}
	return 1;
}

/* The group's writes at the pair O[z][r][c], O[z][r][c + 1] (D is even):
 * one vector store of both where a write is o's elements as they are, or
 * carried by transposes and reshapes that keep them side by side (heads
 * merged back, [B, H, S, D] to [B, S, H D]); otherwise each element where
 * the layout ops carry it. */
static void out_stores(Kern *k, const FgAttn *a)
{
	const FgShape *os = &k->g->nodes[a->mm2].shape;
	const int R = os->rank;
	k->mm = a->mm2;
	k->nc = 1;
	Ix x = cu_ix_pair(k, os);
	int *path = fg_arena_array(k->a, (size_t)k->gr->nnodes + 1, sizeof(int));
	const unsigned char *dep = from_o(k, a->mm2);
	for (int w = 0; w < k->gr->nwrites; w++) {
		if (!stores(a, W_OUT, k->gr->writes[w]))
			continue;       /* NAME_rows or NAME_psave writes it */
		int moves, n = o_path(k, dep, a->mm2, k->gr->writes[w], path, &moves);
		if (!moves || keeps_pair(k, path, n)) {
			Ix ys[2], y = moves ? carried(k, &x, path, n) : x;
			const char *conds[2] = {NULL, NULL};
			k->acc[0] = "v0", k->acc[1] = "v1";
			for (int l = 0; l < 2; l++)
				ys[l] = cu_lane_of(k, &y, y.rank - 1, 2, l);
			cu_store_lanes(k, k->gr->writes[w], ys, conds, NULL);
			continue;
		}
		for (int l = 0; l < 2; l++) {
			Ix xl = x;
			xl.c[R - 1] = l ? "c + 1" : "c";
			k->acc[0] = l ? "v1" : "v0";
			Ix y = carried(k, &xl, path, n);
			cu_store(k, k->gr->writes[w], &y, NULL, NULL);
		}
	}
}

/* The stores of p at the pair P[z][r][c], P[z][r][c + 1] (the second
 * when c + 1 < Sk), from the kernel's normalized probabilities. */
static void p_stores(Kern *k, const FgAttn *a)
{
	const FgShape *ps = &k->g->nodes[a->p].shape;
	k->mm = a->p;
	k->nc = 1;
	k->acc[0] = "v0", k->acc[1] = "v1";
	Ix x = cu_ix_pair(k, ps), ys[2];
	for (int l = 0; l < 2; l++)
		ys[l] = cu_lane_of(k, &x, ps->rank - 1, 2, l);
	const char *conds[2] = {NULL, a->sk % 2 ? cu_fmt(k->a, "c + 1 < %lld", (long long)a->sk) : NULL};
	cu_store_lanes(k, a->p, ys, conds, NULL);
}

/* The C form of a log-sum-exp's row max f (passes/attention.c's lse_max)
 * from the kernel's running max m. */
static const char *lse_form(const Kern *k, int f)
{
	return k->g->nodes[f].op == FG_OP_WHERE ? "(isinf(m) ? 0.0f : m)" : "m";
}

/* Writes NAME_rows when the group writes a's log-sum-exp: per row, from
 * the kernel's max m of the scores and its sum l of exp(x - mu) (mu: m,
 * or 0 for a row of -inf), f + log(sum(exp(x - f1))) = f + log(l) + (mu -
 * f1), stored at the row's flat index z Sq + r (the value is [.., Sq, 1]
 * or a reshape of it).  Returns the initializer, or "fga::NoRows{}". */
static const char *rows_functor(Emit *E, Kern *k, const FgAttn *a, const char *name)
{
	if (a->lse_y < 0)
		return "fga::NoRows{}";
	const FgNode *y = &k->g->nodes[a->lse_y];
	const char *t = cu_tensor_param(k, a->lse_y);
	cu_out(E, "struct %s {\n\t%s *%s;\n", name, fg_dtype_info[y->dt].cuda_store, t);
	cu_out(E, "\t/* %s (%s) of row r of matrix z: f + log(l) + (mu - f1) */\n", k->plan->names[a->lse_y],
	       cu_shape_str(k->a, y->dt, &y->shape));
	cu_out(E, "\t__device__ __forceinline__ void operator()(int z, int r, float m, float l) const\n\t{\n");
	cu_out(E, "\t\tconst float mu = m == -CUDART_INF_F ? 0.0f : m;\n");
	cu_out(E, "\t\t%s[(long long)z * %lld + r] = %s(%s + logf(l) + (mu - %s));\n\t}\n};\n\n", t, (long long)a->sq,
	       fg_dtype_info[y->dt].store, lse_form(k, a->lse_f), lse_form(k, a->lse_f1));
	return cu_fmt(k->a, "%s{%s}", name, t);
}

/* ------------------------------------------------ tiles masked whole */

/* Tile skipping.  When the last score op is where(cond, s, -inf) (or
 * where(cond, -inf, s)), a key tile whose every score is -inf adds
 * nothing to a row (exp(-inf - m) = 0), so the kernel need not load or
 * multiply it.  NAME_tiles says so from cond over the tile's rows [r0, r1]
 * and keys [c0, c1] by interval arithmetic: each value of cond's cone an
 * interval [lo, hi] (a bool: lo 1 certainly true, hi 0 certainly false),
 * built from iota along the query or the key axis, constants and the ops
 * below; anything else (a mask read from memory, an iota along a batch
 * axis) makes no functor, and every tile is computed.  A causal mask
 * skips the tiles above the diagonal, a sliding window those outside it.
 * The same bounds say where the mask keeps every score of a tile (below
 * the diagonal, inside the window): there the kernel runs the score ops
 * inside the where alone (NAME_inner), not its condition (5-11% faster
 * under causal and window masks on the H200, docs/performance.md v16). */
typedef struct Bounds {
	FgArena *a;
	const FgGraph *g;
	const FgShape *S;       /* the scores' shape */
	const char **lo, **hi;  /* per node, once bounded: its variables */
	const char *text;       /* their definitions so far */
} Bounds;

/* Bounds of node id's values as C variables (defined in b->text), or 0
 * when an op of its cone is not one that interval arithmetic follows. */
static int bound(Bounds *b, int id)
{
	if (b->lo[id])
		return 1;
	const FgNode *n = &b->g->nodes[id];
	const char *lo = NULL, *hi = NULL, *L[3], *H[3];
	FgArena *a = b->a;
	if (n->op == FG_OP_CONST) {
		if (!isfinite(n->a.value))
			return 0;
		lo = hi = cu_fmt(a, "%.17g", n->a.value);
	} else if (n->op == FG_OP_IOTA) {
		int ax = n->a.axis + b->S->rank - n->shape.rank;
		if (n->shape.d[n->a.axis] == 1)
			lo = hi = "0.0";
		else if (ax == b->S->rank - 2)
			lo = "(double)r0", hi = "(double)r1";
		else if (ax == b->S->rank - 1)
			lo = "(double)c0", hi = "(double)c1";
		else
			return 0;
	} else {
		if (n->nin > 3)
			return 0;
		for (int j = 0; j < n->nin; j++) {
			if (!bound(b, n->in[j]))
				return 0;
			L[j] = b->lo[n->in[j]], H[j] = b->hi[n->in[j]];
		}
		switch (n->op) {
		case FG_OP_ADD:
			lo = cu_fmt(a, "%s + %s", L[0], L[1]), hi = cu_fmt(a, "%s + %s", H[0], H[1]);
			break;
		case FG_OP_SUB:
			lo = cu_fmt(a, "%s - %s", L[0], H[1]), hi = cu_fmt(a, "%s - %s", H[0], L[1]);
			break;
		case FG_OP_NEG:
			lo = cu_fmt(a, "-%s", H[0]), hi = cu_fmt(a, "-%s", L[0]);
			break;
		case FG_OP_MUL: {
			const char *p = cu_fmt(a, "%s * %s, %s * %s, %s * %s, %s * %s", L[0], L[1], L[0], H[1], H[0], L[1],
					       H[0], H[1]);
			lo = cu_fmt(a, "fga::min4(%s)", p), hi = cu_fmt(a, "fga::max4(%s)", p);
			break;
		}
		case FG_OP_ABS:
			lo = cu_fmt(a, "%s >= 0.0 ? %s : %s <= 0.0 ? -%s : 0.0", L[0], L[0], H[0], H[0]);
			hi = cu_fmt(a, "fmax(-%s, %s)", L[0], H[0]);
			break;
		case FG_OP_MINIMUM:
			lo = cu_fmt(a, "fmin(%s, %s)", L[0], L[1]), hi = cu_fmt(a, "fmin(%s, %s)", H[0], H[1]);
			break;
		case FG_OP_MAXIMUM:
			lo = cu_fmt(a, "fmax(%s, %s)", L[0], L[1]), hi = cu_fmt(a, "fmax(%s, %s)", H[0], H[1]);
			break;
		case FG_OP_CAST:        /* exact: from an integer to i32 */
			/* not to a float: bf16 rounds 767 and 769 both to 768,
			 * so a strict compare of positions in bf16 masks scores
			 * that the exact bounds would keep, or skip */
			if (!fg_dtype_is_int(b->g->nodes[n->in[0]].dt) || n->dt != FG_DT_I32)
				return 0;
			lo = L[0], hi = H[0];
			break;
		case FG_OP_LT:          /* certainly true; possibly true */
			lo = cu_fmt(a, "%s < %s", H[0], L[1]), hi = cu_fmt(a, "%s < %s", L[0], H[1]);
			break;
		case FG_OP_LE:
			lo = cu_fmt(a, "%s <= %s", H[0], L[1]), hi = cu_fmt(a, "%s <= %s", L[0], H[1]);
			break;
		case FG_OP_GT:
			lo = cu_fmt(a, "%s > %s", L[0], H[1]), hi = cu_fmt(a, "%s > %s", H[0], L[1]);
			break;
		case FG_OP_GE:
			lo = cu_fmt(a, "%s >= %s", L[0], H[1]), hi = cu_fmt(a, "%s >= %s", H[0], L[1]);
			break;
		case FG_OP_EQ:
		case FG_OP_NE: {
			const char *t = cu_fmt(a, "(%s == %s && %s == %s && %s == %s)", L[0], H[0], L[1], H[1], L[0], L[1]);
			const char *f = cu_fmt(a, "(%s < %s || %s < %s)", H[0], L[1], H[1], L[0]);
			lo = n->op == FG_OP_EQ ? t : f;
			hi = cu_fmt(a, "!%s", n->op == FG_OP_EQ ? f : t);
			break;
		}
		case FG_OP_AND:
			lo = cu_fmt(a, "%s && %s", L[0], L[1]), hi = cu_fmt(a, "%s && %s", H[0], H[1]);
			break;
		case FG_OP_OR:
			lo = cu_fmt(a, "%s || %s", L[0], L[1]), hi = cu_fmt(a, "%s || %s", H[0], H[1]);
			break;
		case FG_OP_NOT:
			lo = cu_fmt(a, "!%s", H[0]), hi = cu_fmt(a, "!%s", L[0]);
			break;
		case FG_OP_WHERE:       /* the branch the condition certainly takes, else both */
			lo = cu_fmt(a, "%s ? %s : !%s ? %s : fmin(%s, %s)", L[0], L[1], H[0], L[2], L[1], L[2]);
			hi = cu_fmt(a, "%s ? %s : !%s ? %s : fmax(%s, %s)", L[0], H[1], H[0], H[2], H[1], H[2]);
			break;
		default:
			return 0;
		}
	}
	b->lo[id] = cu_fmt(a, "b%d.lo", id);
	b->hi[id] = cu_fmt(a, "b%d.hi", id);
	b->text = cu_fmt(a, "%s\t\tconst fga::Range b%d = {(double)(%s), (double)(%s)};\n", b->text, id, lo, hi);
	return 1;
}

/* The op that ends a's score ops: that of the softmax's input a->x, or
 * below it the value that identities name again (`x = m`) and the last
 * factor that the kernel applies as its scale takes (f->unscaled): a
 * mask's where before them still bounds the tiles. */
static int score_end(const FgGraph *g, const FgAttn *a, const ScoreFold *f)
{
	for (int x = a->x;;) {
		if (g->nodes[x].op == FG_OP_IDENTITY)
			x = g->nodes[x].in[0];
		else if (x == f->unscaled)
			x = factor_operand(g, x);
		else
			return x;
	}
}

/* Bounds b of a's mask when its tiles can be bounded: the where that ends
 * the score ops (end), with -inf as its operand *neg (1 or 2), its
 * condition's cone made of what bound() follows.  0 when not, and when p
 * is written (a skipped tile's zeros of p would not be). */
static int mask_bounds(FgArena *ar, const FgGraph *g, const FgAttn *a, int end, Bounds *b, int *neg)
{
	const FgNode *x = &g->nodes[end];
	*neg = -1;
	if (a->nchain == 0 || x->op != FG_OP_WHERE || a->p_written)
		return 0;
	for (int j = 1; j < 3; j++) {
		const FgNode *c = &g->nodes[x->in[j]];
		if (c->op == FG_OP_CONST && isinf(c->a.value) && c->a.value < 0)
			*neg = j;
	}
	*b = (Bounds){ar, g, &x->shape, NULL, NULL, ""};
	b->lo = fg_arena_array(ar, (size_t)g->nnodes + 1, sizeof(char *));
	b->hi = fg_arena_array(ar, (size_t)g->nnodes + 1, sizeof(char *));
	return *neg > 0 && bound(b, x->in[0]);
}

/* Writes NAME_tiles for a's mask, the where end, from its bounds b
 * (mask_bounds; NULL when the tiles cannot be bounded): whether a tile's scores are all
 * -inf (skipped), and whether the mask keeps them all (`kept`: the score
 * ops inside the where alone, NAME_inner); returns its initializer, or
 * "fga::NoSkip{}" (every tile computed, all its score ops). */
static const char *tile_functor(Emit *E, const Kern *k, int end, const Bounds *bp, int neg, const char *name)
{
	if (!bp)
		return "fga::NoSkip{}";
	const Bounds b = *bp;
	const int c = k->g->nodes[end].in[0];
	const char *sig = "\t__device__ __forceinline__ %s %s(int r0, int r1, int c0, int c1) const\n\t{\n%s";
	cu_out(E, "struct %s {\n\t/* the least and the greatest value of the mask's condition over rows [r0, r1] "
	       "and keys [c0, c1] */\n", name);
	cu_out(E, sig, "fga::Range", "cond", b.text);
	cu_out(E, "\t\treturn fga::Range{(double)(%s), (double)(%s)};\n\t}\n", b.lo[c], b.hi[c]);
	cu_out(E, "\t/* whether where(%s) puts -inf at every score there */\n", neg == 2 ? "cond, s, -inf" : "cond, -inf, s");
	cu_out(E, sig, "bool", "operator()", "");
	cu_out(E, "\t\treturn %scond(r0, r1, c0, c1).%s;\n\t}\n\t/* whether it keeps every score there */\n",
	       neg == 2 ? "!" : "", neg == 2 ? "hi" : "lo");
	cu_out(E, sig, "bool", "kept", "");
	cu_out(E, "\t\treturn %scond(r0, r1, c0, c1).%s;\n\t}\n};\n\n", neg == 2 ? "" : "!", neg == 2 ? "lo" : "hi");
	return cu_fmt(k->a, "%s{}", name);
}

/* ------------------------------------------------ keys split (decode) */

/* Splitting the keys (flash-decoding; fga::Part).  The kernel runs one
 * block a multiprocessor, each walking all nkt key tiles for its query
 * rows; a launch of fewer blocks than the GPU has multiprocessors (a
 * decode step: a few query rows against a long cache) leaves the rest
 * idle.  Then the tiles are cut into runs, a block each, and the last
 * block to finish a row's runs merges their partials: of n = 1 .. nkt
 * runs, the fewest waves x (tiles a block + 2) (the 2: a block's start,
 * its barriers, q's tile and the first loads in flight, and its
 * partials), the fewer blocks among equals, split only where that saves
 * more than 3 tiles' time (the launch of the second kernel that merged
 * them until the last block did; kept for the merge's reads at the end:
 * at four decode steps the runs this picks were within 3% of the fastest
 * of 11 others tried by hand, docs/performance.md v31).  Returns the
 * number of runs (1: not split), *kts the tiles of each (the last may
 * have fewer). */
static int64_t key_splits(int64_t blocks, int64_t nkt, int64_t *kts)
{
	int64_t best = nkt + 2;
	*kts = nkt;
	if (blocks >= SMS)
		return 1;
	for (int64_t n = 2; n <= nkt; n++) {
		const int64_t t = (nkt + n - 1) / n, cost = (blocks * n + SMS - 1) / SMS * (t + 2) + 3;
		if (cost < best)
			best = cost, *kts = t;
	}
	return (nkt + *kts - 1) / *kts;
}

/* The consumer warpgroups of group gr's kernel (fga::Plan's NC): three at
 * head dim 64, where two cannot cover a third's softmax, but two when p
 * is written or the group computes a transcendental op besides the
 * softmax's exp and a log-sum-exp's (at the three's 160 registers a
 * thread, tests/gpu/attention-mods.fg's bias, softcap and mask spilled 4
 * bytes, and attention-saved.fg's saved p with a causal mask and dropout
 * 56), and two at 128 (240 registers); attn_plan may take two for three.
 * A block has 64 query rows a consumer, and a producer warpgroup. */
static int attn_consumers(const FgGraph *g, const FgGroup *gr, const FgAttn *a)
{
	if (a->d != 64 || a->p_written)
		return 2;
	for (int i = 0; i < gr->nnodes; i++) {
		int id = gr->nodes[i], lse = 0;
		for (int j = 0; j < a->nlse; j++)
			lse |= a->lse[j] == id;
		if (fg_op_info[g->nodes[id].op].transcendental && id != a->exp && !lse)
			return 2;
	}
	return 3;
}

/* The keys of a tile of a's kernel (fga::Plan's BN): 64 at head dim 256,
 * where O takes half the registers; 176 at 128 where the functor computes
 * no score op (f: a scale and identities only) and O is all it writes
 * (FlashAttention-3's tile: fewer turns a row, each longer; 2.7-3.9%
 * faster than 128 at 4k and 8k keys on the H200, docs/performance.md v16;
 * 3.7-5.6% in the harness, v23); else 128.  At 176 (nvcc 13), a
 * sliding window and a log-sum-exp spill registers (tests/gpu's and
 * bench/attention.py's graphs); a bias would not be staged (176 keys of
 * 2 bytes are not whole 128-byte blocks); a softcap ran slower (v30);
 * and a causal mask, without spills, ran 3-11% slower than at 128 from
 * 1,024 to 16,384 keys (H100, docs/performance.md v36; v16: at half the
 * speed, when it spilled). */
static int64_t attn_keys(const FgAttn *a, const ScoreFold *f)
{
	const int bare = f->ops == 0 && !a->nprobs && !a->p_written && a->lse_y < 0;
	return a->d == 256 ? 64 : a->d == 128 && bare ? 176 : 128;
}

/* a's key tiles of bn keys, the last one a residue where bn does not
 * divide Sk */
static int64_t key_tiles(const FgAttn *a, int64_t bn)
{
	return (a->sk + bn - 1) / bn;
}

/* The runs of a's key tiles of bn keys, *kts tiles each (key_splits), for
 * a launch of `units` query tiles; none when p is written (a run does not
 * know its rows' max and sum). */
static int64_t attn_splits(const FgAttn *a, int64_t bn, int64_t units, int64_t *kts)
{
	if (a->p_written) {
		*kts = key_tiles(a, bn);
		return 1;
	}
	return key_splits(units, key_tiles(a, bn), kts);
}

/* The score operand the kernel stages (fga::Staged), or -1: a read of
 * group gr that an op of the score chain takes directly (so the functor
 * loads it at its own pair), of Sq x Sk matrices (one for every output
 * matrix, or one each), of 1 or 2 bytes an element, rows a multiple of 16
 * bytes (the accelerator's pitch) and tiles whole 128-byte blocks, whose
 * tiles fit beside two stages of K and V; with a mask the compiler bounds
 * (skips), only at two consumers: at three (head dim 64, 160 registers)
 * the two score functors (NAME_scores, NAME_inner) spill (52 bytes; a
 * causal mask with a bias [4096, 4096]).  Read per pair from global
 * memory, a bias ran at 60% of the plain kernel's rate; staged, at 81%
 * (docs/performance.md v24).  The first such read of the chain.  The fit
 * is fga::Plan's: smem(2) within 227 KB. */
static int staged_operand(const FgGraph *g, const FgGroup *gr, const FgAttn *a, int nc, int64_t bn, int skips,
			  int *se)
{
	if (skips && nc > 2)
		return -1;
	const FgShape *S = &g->nodes[a->x].shape;
	const int64_t Z = cu_numel(S) / (a->sq * a->sk), bm = 64 * nc;
	for (int i = 0; i < a->nchain; i++) {
		const FgNode *op = &g->nodes[a->chain[i]];
		for (int j = 0; j < op->nin; j++) {
			const int id = op->in[j];
			const FgShape *T = &g->nodes[id].shape;
			int read = 0;
			for (int r = 0; r < gr->nreads; r++)
				read |= gr->reads[r] == id;
			const int64_t e = fg_dtype_size[g->nodes[id].dt];
			if (!read || T->rank < 2 || T->d[T->rank - 1] != a->sk || T->d[T->rank - 2] != a->sq || e > 2 ||
			    a->sk * e % 16 != 0 || bn * e % 128 != 0 ||
			    1024 + bm * a->d * 2 + 2 * (2 * bn * a->d * 2 + bm * bn * e) + 8 * (2 + 4 * 2) > 227 * 1024)
				continue;
			const int64_t nz = cu_numel(T) / (a->sq * a->sk);
			if (nz != 1 && !(nz == Z && fg_shape_eq(T, S)))
				continue;
			*se = (int)e;
			return id;
		}
	}
	return -1;
}

/* What the kernel of attention group gr does with a, decided once for the
 * report's note and the emitter: the mask's bounds (skips), the consumers,
 * the key tile, the staged operand, the split keys, the persistent grid. */
typedef struct AttnPlan {
	ScoreFold fold;
	int end;                /* score_end */
	Bounds bounds;
	int neg, skips, nc;
	int64_t bn;
	int st, se;             /* staged_operand */
	int64_t nsplit, kts;
	int64_t qtiles;         /* query tiles of a matrix: 64 rows a consumer */
	int64_t units;          /* query tiles of all matrices: a block each, unless */
	int persist;            /* attn_persist: a block a multiprocessor takes them in turn */
	int pairs;              /* persistent where a mask skips tiles: in pairs of like cost */
	int64_t lpt;            /* attn_lpt: the last matrices whose tiles run by cost */
} AttnPlan;

/* Whether a's kernel runs persistent (fga::launch's PERSIST): a block a
 * multiprocessor, each taking every 132nd query tile (unit) in turn, the
 * producer bringing a unit's q and first key tiles while the consumers
 * finish the unit before.  A block a unit spends 2.7 us of its start
 * before its first S = Q K^T is done and 1.6 us from its last O += P V to
 * its end, with the tensor cores idle: 17% of a block at 2,048 keys, 2.5%
 * at 16,384 (H100, docs/performance.md v32), where cuDNN's kernel is
 * persistent.  Where there are more units than multiprocessors, each of
 * at most 16 key tiles (persistent, 1,024 and 2,048 keys ran 4-9%
 * faster; 4,096 level; 8,192 and 16,384 1% slower; again with v34's
 * turns, 4,096 and 8,192 keys gained under 2% where they gained and the
 * bias and causal rows lost 1-4%, v35); where a mask skips tiles, an
 * even count of query tiles a matrix and more pairs of them than
 * multiprocessors, taken in pairs that cost alike under a causal mask
 * (AttnPlan's pairs; a fixed share of single units left some blocks more
 * keys than others, 2-17% slower from 4,096 causal keys; in pairs,
 * causal 1,024 keys ran 11.6% faster than a block a unit, 2,048 3.3%,
 * docs/performance.md v34); p not written (its two passes), the keys not
 * split, and every unit with rows for all consumers (the kernel's
 * barriers count them once). */
static int attn_persist(const FgAttn *a, const AttnPlan *p)
{
	const int64_t bm = 64 * p->nc, rest = a->sq % bm;
	return p->nsplit == 1 && !a->p_written && (!p->skips || p->qtiles % 2 == 0) &&
	       p->units > (p->skips ? 2 : 1) * SMS && key_tiles(a, p->bn) <= 16 && (rest == 0 || rest > bm - 64);
}

/* The last matrices whose query tiles run together by cost (fga::Order's
 * lpt), where a mask skips tiles and a block takes a unit.  Under a
 * causal mask a matrix's query tiles cost from 1 to all its key tiles,
 * the last the most; blocks start in order as multiprocessors come free,
 * so the matrices one after another leave the grid's last blocks with
 * the costliest tiles of the last matrix, the rest of the GPU idle.  The
 * last matrices' tiles taken together, every matrix's last tile first,
 * then every one's tile before it, end the grid on its cheapest tiles.
 * Two turns of 132 multiprocessors' units of them, their keys and values
 * at most 24 MiB (while their tiles run, every one of those matrices'
 * keys is read at once, where a matrix's keys in turn stay in L2): on
 * an H100, 64 causal matrices ran 8.3% faster at 1,024 keys (33
 * matrices together; 64 of them 4.8%), 7.2% at 2,048 (17; 33 of them
 * 3.5%), 2.6% at 4,096 (9; 33 of them 3.2% slower), 2.5% at 8,192 (5;
 * 9 of them 4.1%, 17 level) and 0.8% at 16,384 (3; 9 of them 3.9%
 * slower; docs/performance.md v33).  The matrices before them keep
 * their order.  0: none (one matrix by cost is its order as it is; a
 * persistent launch's units go in pairs instead, AttnPlan's pairs). */
static int64_t attn_lpt(const FgGraph *g, const FgAttn *a, const AttnPlan *p)
{
	if (!p->skips || p->persist || p->nsplit > 1 || p->qtiles == 1)
		return 0;
	const int64_t kv = 2 * a->sk * a->d * fg_dtype_size[g->nodes[a->k].dt], fit = (24 << 20) / kv;
	int64_t lpt = (2 * SMS + p->qtiles - 1) / p->qtiles;
	lpt = lpt < fit ? lpt : fit;
	lpt = lpt < p->units / p->qtiles ? lpt : p->units / p->qtiles;
	return lpt > 1 ? lpt : 0;       /* the last matrix alone: its order as it is */
}

/* The launch of p's kernel at nc consumers: the staged operand, the
 * units, the split keys, the persistent grid and the order. */
static void attn_launch(const FgGraph *g, const FgGroup *gr, const FgAttn *a, int nc, AttnPlan *p)
{
	p->nc = nc;
	p->se = 0;
	p->st = staged_operand(g, gr, a, p->nc, p->bn, p->skips, &p->se);
	p->qtiles = (a->sq + 64 * p->nc - 1) / (64 * p->nc);
	p->units = p->qtiles * (cu_numel(&g->nodes[a->mm2].shape) / (a->sq * a->d));
	p->nsplit = attn_splits(a, p->bn, p->units, &p->kts);
	p->persist = attn_persist(a, p);
	p->pairs = p->persist && p->skips;      /* attn_persist: a matrix's query tiles t and last - t */
	p->lpt = attn_lpt(g, a, p);
}

/* The plan; three consumers (attn_consumers) give way to two where two
 * make a persistent launch and three cannot (three's last unit leaves a
 * consumer without rows, attn_persist): at head dim 64 on an H100, 64
 * matrices of 1,024 keys took 7% less time plain and 17% causal (in
 * pairs), of 2,048 keys 4% and 4%; at 4,096, where neither is
 * persistent, two took 14-17% longer (docs/performance.md v36). */
static void attn_plan(FgArena *ar, const FgGraph *g, const FgGroup *gr, const FgAttn *a, AttnPlan *p)
{
	score_fold(g, a, &p->fold);
	p->end = score_end(g, a, &p->fold);
	p->skips = mask_bounds(ar, g, a, p->end, &p->bounds, &p->neg);
	p->bn = attn_keys(a, &p->fold);
	attn_launch(g, gr, a, attn_consumers(g, gr, a), p);
	if (p->nc == 3 && !p->persist) {
		AttnPlan two = *p;
		attn_launch(g, gr, a, 2, &two);
		if (two.persist)
			*p = two;
	}
}

/* The staged operand's tiles, in the note and the kernel's comment. */
static const char *staged_phrase(FgArena *ar, const FgPlan *plan, int st)
{
	return cu_fmt(ar, "%s's tiles brought to shared memory beside k's by the tensor-memory accelerator",
		      plan->names[st]);
}

/* How fgc compile runs attention group gi, in a phrase (fgc report's "on
 * the GPU", through fg_cuda_gemm_note). */
const char *cu_attention_note(const FgPlan *plan, int gi)
{
	const FgGraph *g = plan->g;
	FgArena *ar = g->arena;
	FgAttn a;
	const char *why;
	if (fg_kind_attention(g, plan->groups[gi].root, &a, &why, ar) != 1)
		return NULL;
	AttnPlan p;
	attn_plan(ar, g, &plan->groups[gi], &a, &p);
	const char *fold = fold_phrase(ar, &p.fold);
	return cu_fmt(ar, "the generated sm_90a flash kernel, head dim %lld, %lld query rows against %lld keys in tiles of "
		      "%lld x %lld, %s%s%s%s%s%s%s", (long long)a.d, (long long)a.sq, (long long)a.sk, 64LL * p.nc,
		      (long long)p.bn, *fold ? cu_fmt(ar, "%s, ", fold) : "",
		      p.st >= 0 ? cu_fmt(ar, "%s, ", staged_phrase(ar, plan, p.st)) : "",
		      p.skips ? "key tiles that the mask's iota bounds put at -inf skipped, those it keeps whole computed without "
			      "its compare" : "every key tile computed",
		      a.lse_y >= 0 ? cu_fmt(ar, ", %s written per row", plan->names[a.lse_y]) : "",
		      a.p_written ? cu_fmt(ar, ", %s written from a second pass over the keys (the first finds each row's "
					   "max and sum)", plan->names[a.p]) : "",
		      a.nprobs ? (a.p_written ? ", the ops on p applied to it" :
				  ", the ops on p applied before the division by the row's sum") : "",
		      p.nsplit > 1 ? cu_fmt(ar, "; too few blocks to fill the GPU, so the keys are split into %lld runs of "
					    "%lld tile%s, a block each, their partial softmaxes merged in order by the "
					    "last block to finish (flash-decoding)", (long long)p.nsplit, (long long)p.kts,
					    p.kts == 1 ? "" : "s") :
		      p.persist ? cu_fmt(ar, "; persistent: a block a multiprocessor takes the %lld query tiles in turn%s, "
					 "each tile's first product issued beside the last of the one before", (long long)p.units,
					 p.pairs ? " in pairs that cost alike (a matrix's tiles t and last - t)" : "") :
		      p.lpt > 0 ? cu_fmt(ar, "; the last %lld matrices' query tiles run together, the costliest first, so "
					 "that the grid ends on its cheapest", (long long)p.lpt) : "");
}

/* "{a, b, c}" of the first n of v, padded with zeros to fga::MAX_BATCH. */
static const char *int_list(FgArena *a, const int64_t *v, int n)
{
	const char *s = "";
	for (int i = 0; i < 6; i++)
		s = cu_fmt(a, "%s%s%lld", s, i ? ", " : "", (long long)(i < n ? v[i] : 0));
	return cu_fmt(a, "{%s}", s);
}

void cu_emit_attention(Emit *E, Kern *k)
{
	FgAttn a;
	const char *why;
	if (fg_kind_attention(k->g, k->gr->root, &a, &why, k->a) != 1) {
		cu_kern_error(k, k->gr->root, "an attention group the kernel cannot run: %s",
			      why ? why : "not the attention pattern");
		return;
	}
	const FgShape *os = &k->g->nodes[a.mm2].shape;
	const int nb = os->rank - 2;
	if (nb > 6) {
		cu_kern_error(k, a.mm2, "attention with %d batch dims (the kernel takes 6)", nb);
		return;
	}
	int64_t Z = cu_numel(os) / (a.sq * a.d), ks[FG_MAX_RANK], vs[FG_MAX_RANK];
	const FgShape *kshape = cu_shape_of(k, a.k), *vshape = cu_shape_of(k, a.v);
	cu_batch_strides(kshape, nb, os->d, 1, ks);
	cu_batch_strides(vshape, nb, os->d, 1, vs);
	const char *tname = fg_dtype_info[k->g->nodes[a.mm1].dt].cuda_store;
	const char *sname = cu_kname(k, "scores"), *oname = cu_kname(k, "out");
	AttnPlan pl;
	attn_plan(k->a, k->g, k->gr, &a, &pl);
	const int nc = pl.nc, skips = pl.skips, neg = pl.neg, st = pl.st;
	const int64_t bn = pl.bn, nsplit = pl.nsplit, kts = pl.kts;
	Kern ks_;
	cu_kern_init(&ks_, E, k->gi);
	ks_.st_id = st;
	const ScoreFold *f = &pl.fold;
	const double scale = f->scale;
	ks_.unscaled = f->unscaled;
	ks_.unscaled_to = f->unscaled >= 0 ? factor_operand(k->g, f->unscaled) : -1;
	pair_ops(&ks_, &a, fold_from(&a, f), f->pre, a.x);
	/* with a mask that bounds tiles, the ops inside it, for the tiles it
	 * keeps whole */
	Kern ki;
	cu_kern_init(&ki, E, k->gi);
	ki.st_id = st;          /* the staged operand is read in both */
	ki.unscaled = ks_.unscaled, ki.unscaled_to = ks_.unscaled_to;
	if (skips)
		pair_ops(&ki, &a, fold_from(&a, f), f->pre, k->g->nodes[pl.end].in[3 - neg]);
	Kern kp, kw;
	cu_kern_init(&kp, E, k->gi);
	if (a.nprobs)
		pair_ops(&kp, &a, a.p, 1, a.probs[a.nprobs - 1]);
	cu_kern_init(&kw, E, k->gi);
	if (a.p_written)
		p_stores(&kw, &a);
	out_stores(k, &a);
	if (ks_.failed || ki.failed || kp.failed || kw.failed || k->failed) {
		k->failed = 1;
		return;
	}
	cu_path(E, k->gi, a.d == 64 ? CU_PATH_ATTN_D64 : a.d == 128 ? CU_PATH_ATTN_D128 : CU_PATH_ATTN_D256);
	const int64_t obytes = nsplit * Z * a.sq * a.d * 4;
	if (bn == 176)
		cu_path(E, k->gi, CU_PATH_ATTN_KEYS176);
	if (skips)
		cu_path(E, k->gi, CU_PATH_ATTN_KEPT);
	if (st >= 0)
		cu_path(E, k->gi, CU_PATH_ATTN_STAGED);
	if (pl.persist)
		cu_path(E, k->gi, CU_PATH_ATTN_PERSIST);
	if (nsplit > 1) {
		cu_path(E, k->gi, CU_PATH_ATTN_SPLIT);
		cu_use_scratch(E, k->gi, obytes + nsplit * Z * a.sq * 8);
		cu_use_counters(E, pl.units * nc * 4);  /* fga::Part's arrivals: a counter a consumer warp */
	}
	const char *fold = fold_phrase(E->a, f);
	cu_emit_comment(E, k->gi, cu_fmt(E->a, "attention on the generated sm_90a flash kernel (fga::attention, head dim "
				   "%lld, %lld query rows against %lld keys, %lld matrices%s): the scores (%s) and the "
				   "probabilities (%s) %s; score ops in %s%s%s, the output's stores in %s%s%s%s%s%s",
				   (long long)a.d, (long long)a.sq, (long long)a.sk, (long long)Z,
				   cu_numel(kshape) < cu_numel(os) / a.sq * a.sk ? ", k and v shared across the batch" : "",
				   k->plan->names[a.mm1], k->plan->names[a.p], a.p_written ? cu_fmt(E->a, "written by %s "
				   "from a second pass over the keys, the scores on chip" , cu_kname(k, "psave")) :
				   "stay on chip", sname,
				   st >= 0 ? cu_fmt(E->a, " (%s)", staged_phrase(E->a, k->plan, st)) : "",
				   *fold ? cu_fmt(E->a, " (%s)", fold) : "",
				   oname,
				   skips ?
				   cu_fmt(E->a, ", key tiles masked or kept whole in %s (a kept one takes %s)", cu_kname(k, "tiles"),
					  cu_kname(k, "inner")) : "",
				   a.lse_y >= 0 ? cu_fmt(E->a, ", %s per row in %s", k->plan->names[a.lse_y],
							  cu_kname(k, "rows")) : "",
				   a.nprobs ? cu_fmt(E->a, ", the ops on p in %s", cu_kname(k, "probs")) : "",
				   nsplit > 1 ? cu_fmt(E->a, "; the keys in %lld runs of %lld tile%s, a block each, their "
						       "partials (scratch) merged in order by the last to arrive (ctx->counters)",
						       (long long)nsplit,
						       (long long)kts, kts == 1 ? "" : "s") : "",
				   pl.persist ? cu_fmt(E->a, "; persistent: a block a multiprocessor, each taking every "
						       "gridDim.x-th %s of the %lld query tiles", pl.pairs ? "pair (a matrix's "
						       "tiles t and last - t, alike in cost)" : "one", (long long)pl.units) :
				   pl.lpt > 0 ? cu_fmt(E->a, "; the last %lld matrices' query tiles together, the costliest "
						       "first", (long long)pl.lpt) : ""));
	const char *tiles = tile_functor(E, k, pl.end, skips ? &pl.bounds : NULL, neg, cu_kname(k, "tiles"));
	const char *rows = rows_functor(E, k, &a, cu_kname(k, "rows"));
	const char *ssig = "int z_, int r_, int c_, float &v0, float &v1, const void *st_", *iname = cu_kname(k, "inner");
	const char *sargs = functor(E, &ks_, sname, ssig, &a, W_NONE, NULL);
	const char *inner = skips ? cu_fmt(k->a, "%s{%s}", iname, functor(E, &ki, iname, ssig, &a, W_NONE, NULL)) :
			    cu_fmt(k->a, "%s{%s}", sname, sargs);
	const char *pname = cu_kname(k, "probs"), *wname = cu_kname(k, "psave");
	const char *probs = a.nprobs ? cu_fmt(k->a, "%s{%s}", pname, functor(E, &kp, pname, "int z_, int r_, int c_, "
							       "float &v0, float &v1", &a, W_NONE, NULL)) : "fga::NoProbs{}";
	const char *psave = a.p_written ? cu_fmt(k->a, "%s{%s}", wname, functor(E, &kw, wname, "int z_, int r_, int c_, "
								     "float v0, float v1", &a, W_P,
								     "static constexpr bool on = true;")) : "fga::NoPsave{}";
	const char *oargs = functor(E, k, oname, "int z_, int r_, int c_, float v0, float v1", &a, W_OUT, NULL);
	int64_t ext[FG_MAX_RANK];
	for (int i = 0; i < nb; i++)
		ext[i] = os->d[i];
	const int64_t blocks = pl.persist ? SMS : pl.units * nsplit;  /* persistent: more units (pairs) than SMS */
	const char *part = nsplit > 1 ? cu_fmt(k->a, "fga::Part{(float *)ctx->scratch, (float2 *)(ctx->scratch + %lld), "
					       "%lld, %lld, ctx->counters}", (long long)obytes, (long long)nsplit, (long long)kts) :
				 "fga::Part{}";
	const char *scl = cu_literal(k->a, FG_DT_F32, scale), *outf = cu_fmt(k->a, "%s{%s}", oname, oargs);
	cu_add_call(E, cu_kname(k, NULL), k->gi, blocks, 128 * (nc + 1),
		    cu_fmt(E->a, "fga::launch<%s, %lld, %d, %lld, %s, %s, %d>(ctx, %s, %s, %s, %lld, %lld, %s, %lld, %lld, %lld, "
			   "fga::Batch{%d, %s, %s, %s}, %s{%s}, %s, %s, %s, %s, %s, %s, %s, fga::Order{%lld, %s}%s);", tname,
			   (long long)a.d, nc, (long long)bn, nsplit > 1 ? "true" : "false", pl.persist ? "true" : "false", pl.se,
			   cu_tensor_param(k, a.q), cu_tensor_param(k, a.k), cu_tensor_param(k, a.v), (long long)a.sq,
			   (long long)a.sk, scl, (long long)Z,
			   (long long)(cu_numel(kshape) / (a.sk * a.d)), (long long)(cu_numel(vshape) / (a.sk * a.d)), nb,
			   int_list(k->a, ext, nb), int_list(k->a, ks, nb), int_list(k->a, vs, nb), sname, sargs, inner, tiles,
			   outf, rows, probs, psave, part, (long long)pl.lpt, pl.pairs ? "true" : "false",
			   st >= 0 ? cu_fmt(k->a, ", fga::Staged{%s, %s, %lld}", cu_tensor_param(k, st),
					    fg_dtype_info[k->g->nodes[st].dt].rt,
					    (long long)(cu_numel(cu_shape_of(k, st)) / (a.sq * a.sk))) : ""));
}
