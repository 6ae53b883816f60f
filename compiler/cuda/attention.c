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
	const char *sargs = functor(E, &ks_, sname, "int z_, int r_, int c_, float &v0, float &v1", 0);
	const char *oargs = functor(E, k, oname, "int z_, int r_, int c_, float v0, float v1", 1);
	int64_t ext[FG_MAX_RANK];
	for (int i = 0; i < nb; i++)
		ext[i] = os->d[i];
	const int64_t blocks = (a.sq + 127) / 128 * Z;
	cu_add_call(E, cu_kname(k, NULL), k->gi, blocks, 384,
		    cu_fmt(E->a, "fga::launch<%s, %lld>(ctx, %s, %s, %s, %lld, %lld, %lld, %lld, %lld, "
			   "fga::Batch{%d, %s, %s, %s}, %s{%s}, %s{%s});", tname, (long long)a.d,
			   cu_tensor_param(k, a.q), cu_tensor_param(k, a.k), cu_tensor_param(k, a.v), (long long)a.sq,
			   (long long)a.sk, (long long)Z, (long long)(cu_numel(kshape) / (a.sk * a.d)),
			   (long long)(cu_numel(vshape) / (a.sk * a.d)), nb, int_list(k->a, ext, nb), int_list(k->a, ks, nb),
			   int_list(k->a, vs, nb), sname, sargs, oname, oargs));
}
