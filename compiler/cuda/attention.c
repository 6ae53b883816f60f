/*
 * attention.c - an attention group (passes/attention.c finds the pattern
 * and says what the kernel takes): one launch of the flash-style sm_90a
 * kernel of runtime/fg_attn_sm90.cuh, with two functors written here per
 * group:
 *
 *   NAME_scores: the ops between the scores' matmul and the softmax
 *     (scale, mask, bias, softcap), evaluated in f32 on a pair of the
 *     accumulators S[z][r][c], S[z][r][c + 1], in place; the values they
 *     read (a mask, a bias) are loaded at that index, read-only;
 *   NAME_out: the group's writes at O[z][r][c], O[z][r][c + 1] (the
 *     normalized output, and any epilogue on it), as the generated
 *     matmul's epilogue functor does.
 *
 * The matmuls' operands are read through tensor maps: q, k (under its
 * transpose) and v as stored, k and v at the batch of each output matrix
 * that fga::Batch gives (their strides in matrices, 0 where broadcast).
 */
#include <math.h>
#include <string.h>

#include "cuda.h"

/* The index of a value of shape os at the functor's batch z, row r and
 * column c (lines for z, r and c in scope 0 of k). */
static Ix pair_index(Kern *k, const FgShape *os)
{
	const int R = os->rank;
	Ix x;
	memset(&x, 0, sizeof x);
	x.rank = R;
	for (int i = 0; i < R; i++)
		x.c[i] = "0";
	cu_kline(k, 0, "z", "const %s z = z_;", k->idx);
	cu_kline(k, 0, "r", "const %s r = r_;", k->idx);
	cu_kline(k, 0, "c", "const %s c = c_;", k->idx);
	if (cu_numel(os) > os->d[R - 2] * os->d[R - 1]) {
		FgShape bs = *os;
		bs.rank = R - 2;
		Ix bx = cu_ix_from_lin(k, &bs, "z", 0, "z");
		for (int i = 0; i < R - 2; i++)
			x.c[i] = bx.c[i], x.lv[i] = bx.lv[i];
	}
	if (os->d[R - 2] > 1)
		x.c[R - 2] = "r";
	if (os->d[R - 1] > 1)
		x.c[R - 1] = "c";
	return x;
}

/* Writes functor `name` of k: a field per read it loaded (and per write
 * when writes), then operator() with signature sig over k's lines.
 * Returns the initializer's arguments. */
static const char *functor(Emit *E, Kern *k, const char *name, const char *sig, int writes)
{
	const char *args = "";
	cu_out(E, "struct %s {\n", name);
	for (int r = 0; r < k->gr->nreads + (writes ? k->gr->nwrites : 0); r++) {
		int id = r < k->gr->nreads ? k->gr->reads[r] : k->gr->writes[r - k->gr->nreads];
		if (r < k->gr->nreads && !k->used[r])
			continue;
		cu_out(E, "\t%s%s *%s;\n", r < k->gr->nreads ? "const " : "", fg_dtype_info[k->g->nodes[id].dt].cuda_store,
		       cu_tensor_param(k, id));
		args = cu_fmt(k->a, "%s%s%s", args, *args ? ", " : "", cu_tensor_param(k, id));
	}
	cu_drop_unused(k, &k->lines[0]);
	cu_out(E, "\t__device__ __forceinline__ void operator()(%s) const\n\t{\n", sig);
	cu_out(E, "\t\t(void)v0, (void)v1;\n");
	for (int i = 0; i < k->lines[0].n; i++)
		cu_out(E, "\t\t%s\n", k->lines[0].v[i].text);
	cu_out(E, "\t}\n};\n\n");
	return args;
}

/* The score ops of a on the pair (v0, v1) at S[z][r][c], in place; c + 1
 * may be Sk when Sk is odd. */
static void score_ops(Kern *k, const FgAttn *a)
{
	const FgShape *S = &k->g->nodes[a->x].shape;
	const int R = S->rank;
	k->mm = a->mm1;
	k->nc = 1;
	Ix x = pair_index(k, S);
	if (a->sk % 2 == 0) {
		k->acc[0] = "v0", k->acc[1] = "v1";
		Val v[2];
		for (int l = 0; l < 2; l++) {
			Ix y = cu_lane_of(k, &x, R - 1, 2, l);
			v[l] = cu_gen(k, a->x, &y);
		}
		cu_kline(k, 0, NULL, "v0 = %s, v1 = %s;", v[0].e, v[1].e);
		return;
	}
	k->acc[0] = "v0";
	cu_kline(k, 0, NULL, "v0 = %s;", cu_gen(k, a->x, &x).e);
	cu_kopen(k);
	k->acc[0] = "v1";
	Ix x1 = x;
	x1.c[R - 1] = "c + 1";
	x1.lv[R - 1] = 1;
	cu_kline(k, 1, NULL, "v1 = %s;", cu_gen(k, a->x, &x1).e);
	cu_kclose(k, cu_fmt(k->a, "if (c + 1 < %lld)", (long long)a->sk));
}

/* The group's writes at the pair O[z][r][c], O[z][r][c + 1] (D is even). */
static void out_stores(Kern *k, const FgAttn *a)
{
	const FgShape *os = &k->g->nodes[a->mm2].shape;
	k->mm = a->mm2;
	k->nc = 1;
	k->acc[0] = "v0", k->acc[1] = "v1";
	Ix x = pair_index(k, os);
	for (int w = 0; w < k->gr->nwrites; w++) {
		Ix ys[2];
		const char *conds[2] = {NULL, NULL};
		for (int l = 0; l < 2; l++)
			ys[l] = cu_lane_of(k, &x, os->rank - 1, 2, l);
		cu_store_lanes(k, k->gr->writes[w], ys, conds, NULL);
	}
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
 * skips the tiles above the diagonal, a sliding window those outside it. */
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
		case FG_OP_CAST:        /* exact from an integer to a number */
			if (!fg_dtype_is_int(b->g->nodes[n->in[0]].dt) || n->dt == FG_DT_BOOL)
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

/* Writes NAME_tiles for a's mask when its tiles can be bounded; returns
 * its initializer, or "fga::NoSkip{}" (every tile computed). */
static const char *tile_functor(Emit *E, const Kern *k, const FgAttn *a, const char *name)
{
	const FgNode *x = &k->g->nodes[a->x];
	if (a->nchain == 0 || x->op != FG_OP_WHERE)
		return "fga::NoSkip{}";
	int neg = -1;
	for (int j = 1; j < 3; j++) {
		const FgNode *c = &k->g->nodes[x->in[j]];
		if (c->op == FG_OP_CONST && isinf(c->a.value) && c->a.value < 0)
			neg = j;
	}
	Bounds b = {k->a, k->g, &x->shape, NULL, NULL, ""};
	b.lo = fg_arena_array(k->a, (size_t)k->g->nnodes + 1, sizeof(char *));
	b.hi = fg_arena_array(k->a, (size_t)k->g->nnodes + 1, sizeof(char *));
	if (neg < 0 || !bound(&b, x->in[0]))
		return "fga::NoSkip{}";
	cu_out(E, "struct %s {\n\t/* whether where(%s) puts -inf at every score of rows [r0, r1] and keys [c0, c1] */\n"
	       "\t__device__ __forceinline__ bool operator()(int r0, int r1, int c0, int c1) const\n\t{\n%s"
	       "\t\treturn %s;\n\t}\n};\n\n", name, neg == 2 ? "cond, s, -inf" : "cond, -inf, s", b.text,
	       neg == 2 ? cu_fmt(k->a, "!(%s)", b.hi[x->in[0]]) : b.lo[x->in[0]]);
	return cu_fmt(k->a, "%s{}", name);
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
	Kern ks_;
	cu_kern_init(&ks_, E, k->gi);
	score_ops(&ks_, &a);
	out_stores(k, &a);
	if (ks_.failed || k->failed) {
		k->failed = 1;
		return;
	}
	cu_path(E, k->gi, a.d == 64 ? CU_PATH_ATTN_D64 : CU_PATH_ATTN_D128);
	cu_emit_comment(E, k->gi, cu_fmt(E->a, "attention on the generated sm_90a flash kernel (fga::attention, head dim "
				   "%lld, %lld query rows against %lld keys, %lld matrices%s): the scores (%s) and the "
				   "probabilities (%s) stay on chip; score ops in %s, the output's stores in %s",
				   (long long)a.d, (long long)a.sq, (long long)a.sk, (long long)Z,
				   cu_numel(kshape) < cu_numel(os) / a.sq * a.sk ? ", k and v shared across the batch" : "",
				   k->plan->names[a.mm1], k->plan->names[a.p], sname, oname));
	const char *tiles = tile_functor(E, k, &a, cu_kname(k, "tiles"));
	const char *sargs = functor(E, &ks_, sname, "int z_, int r_, int c_, float &v0, float &v1", 0);
	const char *oargs = functor(E, k, oname, "int z_, int r_, int c_, float v0, float v1", 1);
	int64_t ext[FG_MAX_RANK];
	for (int i = 0; i < nb; i++)
		ext[i] = os->d[i];
	const int64_t blocks = (a.sq + 127) / 128 * Z;
	cu_add_call(E, cu_kname(k, NULL), k->gi, blocks, 384,
		    cu_fmt(E->a, "fga::launch<%s, %lld>(ctx, %s, %s, %s, %lld, %lld, %lld, %lld, %lld, "
			   "fga::Batch{%d, %s, %s, %s}, %s{%s}, %s, %s{%s});", tname, (long long)a.d,
			   cu_tensor_param(k, a.q), cu_tensor_param(k, a.k), cu_tensor_param(k, a.v), (long long)a.sq,
			   (long long)a.sk, (long long)Z, (long long)(cu_numel(kshape) / (a.sk * a.d)),
			   (long long)(cu_numel(vshape) / (a.sk * a.d)), nb, int_list(k->a, ext, nb), int_list(k->a, ks, nb),
			   int_list(k->a, vs, nb), sname, sargs, tiles, oname, oargs));
}
