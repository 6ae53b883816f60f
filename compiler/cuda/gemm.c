/*
 * gemm.c - a gemm group: a matmul and the epilogue on its output.  Who
 * multiplies (plan_gemm): cuBLASLt straight into the result for a plain
 * matmul or one whose epilogue is on its menu (bias, relu, gelu_tanh);
 * fgc's generated sm_90a wgmma/TMA kernel (runtime/fg_gemm_sm90.cuh) with
 * the epilogue as a functor on its registers where the cost rule says it
 * pays (or --gemm fgc); else cuBLASLt into f32 scratch and an epilogue
 * kernel (loop.c); an i32 matmul, which cuBLASLt does not take, is a
 * thread per element into scratch, then the epilogue kernel.
 */
#include <string.h>

#include "cuda.h"

/* The stored operand behind matmul operand `id`: transposes of the last
 * two axes inside the group are read as a layout flag. */
static int gemm_operand(Kern *k, int id, int *trans)
{
	*trans = 0;
	while (cu_is_member(k, id) && k->g->nodes[id].op == FG_OP_TRANSPOSE) {
		const FgNode *n = &k->g->nodes[id];
		int r = n->shape.rank;
		for (int i = 0; i < r - 2; i++)
			if (n->a.perm[i] != i)
				cu_kern_error(k, id, "a transpose of batch axes as a matmul operand");
		if (n->a.perm[r - 2] != r - 1)
			cu_kern_error(k, id, "a transpose that keeps the last two axes as a matmul operand");
		*trans ^= 1;
		id = n->in[0];
	}
	if (cu_is_member(k, id))
		cu_kern_error(k, id, "matmul operand '%s' is computed inside the gemm group", k->plan->names[id]);
	return id;
}

void cu_batch_strides(const FgShape *s, int nb, const int64_t *bn, int64_t mat, int64_t *st)
{
	int sb = s->rank - 2;
	int64_t acc = mat;
	for (int i = nb - 1; i >= 0; i--) {
		int j = i - (nb - sb);
		if (j < 0 || s->d[j] == 1) {
			st[i] = 0;
			if (j >= 0)
				acc *= s->d[j];
			continue;
		}
		FG_ASSERT(s->d[j] == bn[i]);
		st[i] = acc;
		acc *= s->d[j];
	}
}

/* An i32 matmul, which cuBLASLt does not take: one thread per output
 * element sums its products in 64 bits, saturates into i32 scratch, and
 * the epilogue kernel reads it from there. */
/* Whether matmul mm runs on the simple kernel below: i32 operands, and
 * the 8-bit floats (correct, not fast: the fp8 matmul issue's). */
static int simple_matmul(const FgGraph *g, const FgNode *mm)
{
	FgDtype t = g->nodes[mm->in[0]].dt;
	return t == FG_DT_I32 || t == FG_DT_F8E4M3 || t == FG_DT_F8E5M2;
}

/* matmul of i32 (exact, saturated where stored) or f8 operands (f32
 * accumulation in k order): a thread an element, into scratch as int or
 * float, then the group's epilogue kernel reads it there. */
static void emit_matmul_simple(Emit *E, Kern *k, int mm, int A, int ta, int B, int tb, const int64_t *sa,
			       const int64_t *sb)
{
	const FgNode *n = &k->g->nodes[mm];
	int f8 = n->dt != FG_DT_I32;
	const char *st = fg_dtype_info[k->g->nodes[A].dt].cuda_store, *acc_t = f8 ? "float" : "int";
	const FgShape *os = &n->shape;
	const FgShape *as = cu_shape_of(k, n->in[0]), *bs = cu_shape_of(k, n->in[1]);
	int nb = os->rank - 2;
	int64_t M = as->d[as->rank - 2], K = as->d[as->rank - 1], N = bs->d[bs->rank - 1];
	int64_t scratch = cu_numel(os) * 4;
	const char *name = cu_kname(k, "matmul");
	Kern m;
	cu_kern_init(&m, E, k->gi);
	cu_kopen(&m);
	Ix o = cu_ix_from_lin(&m, os, "o", 1, "o");
	const char *ea = "", *eb = "";
	for (int i = 0; i < nb; i++) {
		if (sa[i])
			ea = cu_fmt(k->a, "%s%s * %lld + ", ea, cu_paren(k->a, o.c[i]), (long long)sa[i]);
		if (sb[i])
			eb = cu_fmt(k->a, "%s%s * %lld + ", eb, cu_paren(k->a, o.c[i]), (long long)sb[i]);
	}
	const char *row = cu_paren(k->a, o.c[nb]), *col = cu_paren(k->a, o.c[nb + 1]);
	cu_kline(&m, 1, NULL, "const %s a0 = %s%s * %lld;", m.idx, ea, row, (long long)(ta ? 1 : K));
	cu_kline(&m, 1, NULL, "const %s b0 = %s%s * %lld;", m.idx, eb, col, (long long)(tb ? K : 1));
	cu_kline(&m, 1, NULL, "%s acc = 0;", f8 ? "float" : "long long");
	cu_kline(&m, 1, NULL, "for (%s kk = 0; kk < %lld; kk++)", m.idx, (long long)K);
	cu_kline(&m, 1, NULL, "\tacc += (%s)fg_read(%s[a0 + kk * %lld]) * fg_read(%s[b0 + kk * %lld]);",
		 f8 ? "float" : "long long", cu_tensor_param(k, A), (long long)(ta ? M : 1), cu_tensor_param(k, B),
		 (long long)(tb ? 1 : N));
	cu_kline(&m, 1, NULL, f8 ? "mm[o] = acc;" : "mm[o] = fg_cast_i32(acc);");
	cu_kclose(&m, cu_stride_loop(&m, "o", cu_numel(os)));
	Param ps[3] = {
		{cu_fmt(k->a, "%s *__restrict__ mm", acc_t), cu_fmt(k->a, "(%s *)ctx->scratch", acc_t)},
		{cu_fmt(k->a, "const %s *__restrict__ %s", st, cu_tensor_param(k, A)), cu_tensor_param(k, A)},
		{cu_fmt(k->a, "const %s *__restrict__ %s", st, cu_tensor_param(k, B)), cu_tensor_param(k, B)},
	};
	cu_use_scratch(E, k->gi, scratch);
	cu_path(E, k->gi, f8 ? CU_PATH_GEMM_F8 : CU_PATH_GEMM_I32);
	cu_emit_comment(E, k->gi, cu_fmt(E->a, "gemm: %s = matmul(%s%s, %s%s) in %s, a thread per element into scratch "
				   "(%s), then the epilogue (%s)", k->plan->names[mm], k->plan->names[A], ta ? "^T" : "",
				   k->plan->names[B], tb ? "^T" : "", f8 ? "f32 from 8-bit floats" : "i32", name,
				   k->gr->name));
	if (m.failed) {
		k->failed = 1;
		return;
	}
	/* matmul(x, transpose(x)) reads one tensor twice: one parameter */
	const char *args = cu_emit_kernel(&m, name, LOOP_BLOCK, ps, A == B ? 2 : 3, 0);
	cu_add_launch(E, name, k->gi, cu_grid_for(cu_numel(os), LOOP_BLOCK), LOOP_BLOCK, args);
	k->mm = mm;
	Param acc = {cu_fmt(k->a, "const %s *__restrict__ mm_%s", acc_t, cu_name(k, mm)),
		     cu_fmt(k->a, "(const %s *)ctx->scratch", acc_t)};
	cu_loop_kernel(E, k, cu_sink(k), &acc, 1, NULL);
}

/* Whether member id of a gemm group is a transpose that the matmul mm
 * reads as an operand layout. */
static int operand_side(const Kern *k, const FgNode *mm, int id)
{
	for (int j = 0; j < 2; j++)
		for (int t = mm->in[j]; cu_is_member(k, t) && k->g->nodes[t].op == FG_OP_TRANSPOSE; t = k->g->nodes[t].in[0])
			if (t == id)
				return 1;
	return 0;
}

/* Whether node b, outside the group, is a bias of mm's result (dtype dt,
 * shape s): one value per column, in D's type. */
static int column_bias(const Kern *k, int b, FgDtype dt, const FgShape *s)
{
	const FgNode *n = &k->g->nodes[b];
	return !cu_is_member(k, b) && n->op != FG_OP_CONST && n->dt == dt && n->shape.rank >= 1 &&
	       n->shape.d[n->shape.rank - 1] == s->d[s->rank - 1] && cu_numel(&n->shape) == s->d[s->rank - 1];
}

/* Whether node r, outside the group, can be cuBLASLt's C for mm's result
 * (dtype dt, shape s): a tensor of D's type and shape, laid out as D. */
static int residual_operand(const Kern *k, int r, FgDtype dt, const FgShape *s)
{
	const FgNode *n = &k->g->nodes[r];
	return !cu_is_member(k, r) && n->op != FG_OP_CONST && n->dt == dt && fg_shape_eq(&n->shape, s);
}

/* cuBLASLt's own epilogue for the gemm group of matmul mm, when it is
 * exactly what the group computes after mm: a bias per column, then relu
 * or gelu_tanh, or either alone, each rounded once into the one value the
 * group writes (*y); a written GELU input (the sum with the bias, or mm)
 * is the AUX output (*aux).  Without an activation, a tensor of D's shape
 * added before or after the bias (a residual) is cuBLASLt's C (*res, beta
 * 1): D = A B + C + bias, rounded once.  Returns the FGRT_EP_ constant, or
 * NULL (the group then takes the matmul and one epilogue kernel). */
static const char *lt_epilogue(const Kern *k, int mm, int *y, int *bias, int *aux, int *res)
{
	const FgNode *m = &k->g->nodes[mm];
	int chain[3], nc = 0;
	*y = *bias = *aux = *res = -1;
	if (simple_matmul(k->g, m))
		return NULL;
	for (int i = 0; i < k->gr->nnodes; i++) {
		int id = k->gr->nodes[i];
		const FgNode *n = &k->g->nodes[id];
		if (!cu_is_member(k, id) || id == mm || n->op == FG_OP_CONST || operand_side(k, m, id))
			continue;
		if (nc == 3 || n->dt != m->dt || !fg_shape_eq(&n->shape, &m->shape))
			return NULL;
		chain[nc++] = id;
	}
	int at = 0, pre = mm;         /* pre: what the activation reads */
	while (at < nc && k->g->nodes[chain[at]].op == FG_OP_ADD) {
		const FgNode *a = &k->g->nodes[chain[at]];
		int other = a->in[0] == pre ? a->in[1] : a->in[1] == pre ? a->in[0] : -1;
		if (other >= 0 && *bias < 0 && column_bias(k, other, m->dt, &m->shape))
			*bias = other;
		else if (other >= 0 && *res < 0 && residual_operand(k, other, m->dt, &m->shape))
			*res = other;
		else
			return NULL;
		pre = chain[at++];
	}
	int act = -1;
	if (at < nc) {
		const FgNode *a = &k->g->nodes[chain[at]];
		if ((a->op != FG_OP_RELU && a->op != FG_OP_GELU_TANH) || a->in[0] != pre)
			return NULL;
		act = chain[at++];
	}
	if (at != nc || nc == 0 || (*res >= 0 && act >= 0))
		return NULL;
	*y = chain[nc - 1];
	int writes_pre = 0;
	for (int w = 0; w < k->gr->nwrites; w++) {
		int id = k->gr->writes[w];
		if (id == pre && act >= 0)
			writes_pre = 1;
		else if (id != *y)
			return NULL;
	}
	if (writes_pre) {       /* GELU's input as AUX: rows of a multiple of 8 */
		if (k->g->nodes[act].op != FG_OP_GELU_TANH || m->shape.d[m->shape.rank - 1] % 8 != 0)
			return NULL;
		*aux = pre;
		return *bias >= 0 ? "FGRT_EP_GELU_AUX_BIAS" : "FGRT_EP_GELU_AUX";
	}
	if (act < 0)
		return *bias >= 0 ? "FGRT_EP_BIAS" : "FGRT_EP_NONE";
	if (k->g->nodes[act].op == FG_OP_RELU)
		return *bias >= 0 ? "FGRT_EP_RELU_BIAS" : "FGRT_EP_RELU";
	return *bias >= 0 ? "FGRT_EP_GELU_BIAS" : "FGRT_EP_GELU";
}

/* How a gemm group runs: its matmul and operands, the merged batch, and
 * who multiplies (plan_gemm). */
typedef struct GemmPlan {
	int mm, A, B, ta, tb;
	int64_t M, N, K;
	int nd;                         /* merged batch dims, innermost first */
	int64_t cnt[FG_MAX_RANK], ms[3][FG_MAX_RANK];
	int64_t st[3][FG_MAX_RANK];     /* per batch dim: A's, B's and D's strides */
	int direct;                     /* the matmul alone, written as it is */
	const char *ep;                 /* cuBLASLt's own epilogue, or NULL */
	int y, bias, aux, res;          /* its value, bias, AUX output and C */
	const char *refusal;            /* why not the generated kernel, or NULL */
	double est_own, est_lt;         /* own_gemm_pays' estimates, s */
	int own;                        /* the generated kernel runs it */
} GemmPlan;

/* The generated matmul (runtime/fg_gemm_sm90.cuh): which schedule and
 * tile.  A consumer warpgroup computes wm x bn of D; cooperative (pp 0)
 * blocks are two of those side by side in rows, ping-pong blocks one, the
 * two consumers taking turns tile by tile. */
typedef struct GemmTile {
	int wm, bn, pp;
} GemmTile;

/* The tile for an M x N result, Z of them, by what was measured on the
 * H200 (tests/runtime/gemm_sm90.cu --bench, medians of interleaved rounds,
 * docs/performance.md).  With an epilogue that computes or reads (heavy),
 * ping-pong 128 x 128: the tensor cores run one consumer's wgmma while
 * the other's epilogue runs, and it beat cooperative 2 x 64 x 256 with
 * such an epilogue on every large shape under sustained load (by 3-12%,
 * e.g. 8192 x 14336 x 4096: 1.630 ms against 1.831).  A store alone:
 * cooperative, whose larger tile reads less from L2 (8192^3: 1.683 ms
 * against 1.765), while it has 4 tiles per multiprocessor (132).  Below
 * 132 tiles, the smaller ping-pong tiles keep more of them busy. */
static GemmTile gemm_tile(int64_t M, int64_t N, int64_t Z, int heavy)
{
	static const GemmTile t[] = {{64, 256, 0}, {128, 128, 1}, {64, 128, 1}, {64, 64, 1}};
	static const int64_t least[] = {4 * 132, 132, 132};
	for (int i = heavy; i < 3; i++) {
		int64_t rows = t[i].pp ? t[i].wm : 2 * t[i].wm;
		if (((M + rows - 1) / rows) * ((N + t[i].bn - 1) / t[i].bn) * Z >= least[i] && N > t[i].bn / 2)
			return t[i];
	}
	return t[3];
}

/* The rule (own_gemm_pays) that picks the generated matmul over cuBLASLt
 * for a gemm group whose epilogue cuBLASLt cannot fuse (fgc compile --gemm
 * auto), made in plan_gemm from gemm_estimates(), with figures measured on
 * the H200 (`make -f Makefile.gpu bench-gemm`, docs/performance.md v13).
 * cuBLASLt's path is its plain matmul into f32 scratch, then an epilogue
 * kernel, which moved its bytes (4 an element of D, the scratch it reads,
 * and the group's other reads and writes: 402 MB in 0.0934 ms for
 * gemm_bias_gelu_bf16's) at 4.3-4.4 TB/s, about the copy bandwidth: flops
 * / LT_TFLOPS + bytes / bandwidth + a launch.  The generated kernel with
 * the epilogue in its registers (bias, erf-GELU, residual) ran at
 * 93.2-99.7% of cuBLASLt's plain matmul at the samples' five large shapes
 * (median 97.2%; K 4096-16384, 2,048 tiles of 128 x 128 or more) and at
 * 55-61% at the two small ones measured (K = 1024: 4096 x 4096 and 4096 x
 * 1024), so flops / (share * LT_TFLOPS), share OWN_SHARE_LARGE where K >=
 * 4096 and the tiles fill 4 waves of 132 multiprocessors, OWN_SHARE_SMALL
 * elsewhere (unmeasured between: the smaller figure keeps cuBLASLt).
 * LT_TFLOPS is cuBLASLt's plain rate at those shapes: 792 TFLOP/s at the
 * large ones, 614-674 at the small ones (0.014 and 0.051 ms; the slower
 * taken).  The smaller estimate wins: the generated kernel wherever the
 * epilogue kernel would take more than about 3% of the matmul's time at
 * the large shapes, cuBLASLt at transformer_block's FFN up projection
 * (4096 x 4096 x 1024, bias and GELU, h saved: 82 us measured for
 * cuBLASLt and its epilogue kernel against 92 for the generated kernel;
 * the rule had charged the scratch's bytes twice and taken the large
 * shapes' rate, and estimated 78.9 us against 93.2). */
#define LT_TFLOPS_LARGE 792.0
#define LT_TFLOPS_SMALL 614.0
#define OWN_SHARE_LARGE 0.972
#define OWN_SHARE_SMALL 0.55
/* tf32 (--tf32): the tensor cores' tf32 rate is half their 16-bit one (the
 * H200's datasheet); not measured here yet */
#define TF32_SHARE 0.5

/* Whether an epilogue op of gemm p (a member other than the matmul and its
 * operand transposes) reads node id: an operand read again, a residual. */
static int epilogue_reads(const Kern *k, const GemmPlan *p, int id)
{
	const FgNode *mm = &k->g->nodes[p->mm];
	for (int i = 0; i < k->gr->nnodes; i++) {
		int m = k->gr->nodes[i];
		const FgNode *n = &k->g->nodes[m];
		if (m == p->mm || !cu_is_member(k, m) || operand_side(k, mm, m))
			continue;
		for (int j = 0; j < n->nin; j++)
			if (n->in[j] == id)
				return 1;
	}
	return 0;
}

/* own_gemm_pays' two estimates for p, in seconds: the generated kernel
 * (p->est_own) and cuBLASLt with the epilogue kernel after it (p->est_lt). */
static void gemm_estimates(const Kern *k, GemmPlan *p)
{
	const FgNode *n = &k->g->nodes[p->mm];
	double flops = 2.0 * (double)cu_numel(&n->shape) * (double)p->K, other = 0;
	for (int r = 0; r < k->gr->nreads + k->gr->nwrites; r++) {
		int id = r < k->gr->nreads ? k->gr->reads[r] : k->gr->writes[r - k->gr->nreads];
		if ((id != p->A && id != p->B) || epilogue_reads(k, p, id))
			other += (double)cu_numel(cu_shape_of(k, id)) * fg_dtype_size[k->g->nodes[id].dt];
	}
	const FgFuseOptions *o = &k->plan->opt;
	const int64_t tiles = (p->M + 127) / 128 * ((p->N + 127) / 128) * (cu_numel(&n->shape) / (p->M * p->N));
	const int large = p->K >= 4096 && tiles >= 4 * 132;
	const double rate = (large ? LT_TFLOPS_LARGE : LT_TFLOPS_SMALL) * 1e12 * (n->dt == FG_DT_F32 ? TF32_SHARE : 1);
	p->est_own = flops / ((large ? OWN_SHARE_LARGE : OWN_SHARE_SMALL) * rate);
	p->est_lt = flops / rate + (4.0 * (double)cu_numel(&n->shape) + other) / (o->bw_gbs * 1e9) + o->launch_us * 1e-6;
}

/* Why the generated matmul cannot run gemm p of group k, or NULL when it
 * can. */
static const char *own_gemm_refusal(const Kern *k, const GemmPlan *p)
{
	const int mm = p->mm;
	const FgNode *n = &k->g->nodes[mm];
	const FgShape *as = cu_shape_of(k, p->A), *bs = cu_shape_of(k, p->B), *os = &n->shape;
	const int tf32 = n->dt == FG_DT_F32 && k->plan->opt.tf32;
	if ((n->dt != FG_DT_F16 && n->dt != FG_DT_BF16 && !tf32) || k->g->nodes[p->A].dt != n->dt ||
	    k->g->nodes[p->B].dt != n->dt)
		return k->plan->opt.tf32 ? "operands other than f16, bf16 or f32" : "operands other than f16 or bf16 (f32 "
		       "with --tf32)";
	if (tf32 && (p->ta || !p->tb))
		return "tf32 operands not both K-major (wgmma transposes 16-bit ones only: A [M,K] and B [N,K])";
	if (p->nd > 1)
		return "batch dims that no single stride describes";
	if (p->M >= INT32_MAX || p->N >= INT32_MAX || p->K >= INT32_MAX || cu_numel(os) / (p->M * p->N) >= INT32_MAX)
		return "a dimension of 2^31 or more";
	/* the tensor-memory accelerator: pitches and strides of 16 bytes (the
	 * stored rows: K of A, or M when A is stored transposed; N or K of B) */
	const int64_t v = 16 / fg_dtype_size[n->dt];
	if (as->d[as->rank - 1] % v || bs->d[bs->rank - 1] % v || (p->nd && (p->ms[0][0] % v || p->ms[1][0] % v)))
		return "an operand row or batch stride not a multiple of 16 bytes";
	/* the accumulator is this thread's element: whatever reads it must be
	 * elementwise on D's index, and every write has D's shape */
	unsigned char *dep = fg_arena_alloc(k->a, (size_t)k->g->nnodes);
	memset(dep, 0, (size_t)k->g->nnodes);
	dep[mm] = 1;
	for (int i = 0; i < k->gr->nnodes; i++) {
		int id = k->gr->nodes[i];
		const FgNode *m = &k->g->nodes[id];
		if (id == mm || !cu_is_member(k, id))
			continue;
		for (int j = 0; j < m->nin; j++)
			dep[id] |= dep[m->in[j]];
		if (dep[id] && (fg_op_info[m->op].cls != FG_CLASS_EW || !fg_shape_eq(&m->shape, os)))
			return "an epilogue that moves the result's elements (a layout op or a broadcast)";
	}
	for (int w = 0; w < k->gr->nwrites; w++)
		if (!fg_shape_eq(cu_shape_of(k, k->gr->writes[w]), os))
			return "a write of another shape than the result";
	return NULL;
}

/* The emitter path (CU_PATHS) of the generated matmul on tile t. */
static CuPath own_path(const GemmTile *t)
{
	static const struct {
		GemmTile t;
		CuPath p;
	} paths[] = {
		{{64, 256, 0}, CU_PATH_GEMM_COOP_64x256},
		{{128, 128, 1}, CU_PATH_GEMM_PP_128x128},
		{{64, 128, 1}, CU_PATH_GEMM_PP_64x128},
		{{64, 64, 1}, CU_PATH_GEMM_PP_64x64},
	};
	for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
		if (paths[i].t.wm == t->wm && paths[i].t.bn == t->bn && paths[i].t.pp == t->pp)
			return paths[i].p;
	fg_die("gemm tile %d x %d (pp %d) has no emitter path", t->wm, t->bn, t->pp);
}

/* The path of cuBLASLt's epilogue ep ("FGRT_EP_GELU_BIAS"): the one of
 * CU_PATHS named gemm.cublaslt.GELU_BIAS. */
static CuPath ep_path(Emit *E, const char *ep)
{
	return cu_path_named(cu_fmt(E->a, "gemm.cublaslt.%s", ep + strlen("FGRT_EP_")));
}

/* A cuBLASLt matmul of operand A on path p, and tf32's when A is f32
 * under --tf32. */
static void lt_paths(Emit *E, const Kern *k, int A, CuPath p)
{
	cu_path(E, k->gi, p);
	if (k->g->nodes[A].dt == FG_DT_F32 && E->plan->opt.tf32)
		cu_path(E, k->gi, CU_PATH_GEMM_LT_TF32);
}

/* The tile gemm p runs on: ping-pong for an epilogue (heavy), by size. */
static GemmTile plan_tile(const GemmPlan *p)
{
	return gemm_tile(p->M, p->N, p->nd ? p->cnt[0] : 1, !p->direct);
}

/* Group k's gemm p on the generated kernel: the epilogue is a functor
 * (NAME_epilogue) that the kernel calls for the pairs of elements a
 * thread holds, D[z][r][c] and D[z][r][c + 1] in v0 and v1; it computes
 * and stores every write of the group there, its loads read-only. */
static void emit_own_gemm(Emit *E, Kern *k, const GemmPlan *p, const char *why)
{
	const int mm = p->mm, A = p->A, B = p->B, ta = p->ta, tb = p->tb;
	const FgNode *n = &k->g->nodes[mm];
	const FgShape *os = &n->shape;
	const int R = os->rank;
	const int64_t M = p->M, N = p->N, K = p->K, Z = p->nd ? p->cnt[0] : 1;
	const int64_t sa = p->nd ? p->ms[0][0] : 0, sb = p->nd ? p->ms[1][0] : 0;
	const GemmTile t = plan_tile(p);
	const char *name = cu_kname(k, "epilogue");
	k->mm = mm;
	k->nc = 1;
	Ix x = cu_ix_pair(k, os);
	if (N % 2 == 0) {       /* both lanes inside D: one vector access where it can */
		k->acc[0] = "v0", k->acc[1] = "v1";
		for (int w = 0; w < k->gr->nwrites; w++) {
			Ix ys[2];
			const char *conds[2] = {NULL, NULL};
			for (int l = 0; l < 2; l++)
				ys[l] = cu_lane_of(k, &x, R - 1, 2, l);
			cu_store_lanes(k, k->gr->writes[w], ys, conds, NULL);
		}
	} else {                /* lane 1 is past D's last column in the last pair */
		k->acc[0] = "v0";
		for (int w = 0; w < k->gr->nwrites; w++)
			cu_store(k, k->gr->writes[w], &x, NULL, NULL);
		cu_kopen(k);
		k->acc[0] = "v1";
		Ix x1 = x;
		x1.c[R - 1] = "c + 1";
		x1.lv[R - 1] = 1;
		for (int w = 0; w < k->gr->nwrites; w++)
			cu_store(k, k->gr->writes[w], &x1, NULL, NULL);
		cu_kclose(k, cu_fmt(k->a, "if (c + 1 < %lld)", (long long)N));
	}
	if (k->failed)
		return;
	cu_path(E, k->gi, own_path(&t));
	if (k->g->nodes[k->g->nodes[mm].in[0]].dt == FG_DT_F32)
		cu_path(E, k->gi, CU_PATH_GEMM_FGC_TF32);
	const char *sched = t.pp ? cu_fmt(k->a, "ping-pong %d x %d tiles", t.wm, t.bn) :
				   cu_fmt(k->a, "cooperative 2 x %d x %d tiles", t.wm, t.bn);
	cu_emit_comment(E, k->gi, cu_fmt(E->a, "gemm on the generated sm_90a matmul (%s, %s%s%s), the epilogue in "
				   "registers (%s, below) before the one store; %s", sched, ta ? "A^T" : "A",
				   tb ? " B^T" : " B", Z > 1 ? ", batched" : "", name, why));
	/* the functor: the group's reads and writes, then the body */
	const char *args = "";
	cu_out(E, "struct %s {\n", name);
	for (int r = 0; r < k->gr->nreads + k->gr->nwrites; r++) {
		int id = r < k->gr->nreads ? k->gr->reads[r] : k->gr->writes[r - k->gr->nreads];
		if (r < k->gr->nreads && !k->used[r])  /* the operands, unless the epilogue reads them too */
			continue;
		cu_out(E, "\t%s%s *%s;\n", r < k->gr->nreads ? "const " : "", fg_dtype_info[k->g->nodes[id].dt].cuda_store,
			cu_tensor_param(k, id));
		args = cu_fmt(k->a, "%s%s%s", args, *args ? ", " : "", cu_tensor_param(k, id));
	}
	cu_drop_unused(k, &k->lines[0]);
	cu_out(E, "\t__device__ __forceinline__ void operator()(int z_, int r_, int c_, float v0, float v1) const\n\t{\n");
	cu_out(E, "\t\t(void)v0, (void)v1;\n");
	for (int i = 0; i < k->lines[0].n; i++)
		cu_out(E, "\t\t%s\n", k->lines[0].v[i].text);
	cu_out(E, "\t}\n};\n\n");
	const char *tname = fg_dtype_info[n->dt].cuda_store;
	int64_t rows = t.pp ? t.wm : 2 * t.wm;
	int64_t tiles = ((M + rows - 1) / rows) * ((N + t.bn - 1) / t.bn) * Z;
	cu_add_call(E, cu_kname(k, NULL), k->gi, tiles, 384,
		 cu_fmt(E->a, "fgg::launch<%s, %d, %d, %d, %d, %d>(ctx, %s, %s, %lld, %lld, %lld, %lld, %lld, %lld, "
		     "%s{%s});", tname, t.wm, t.bn, t.pp, ta, !tb, cu_tensor_param(k, A), cu_tensor_param(k, B), (long long)M,
		     (long long)N, (long long)K, (long long)Z, (long long)sa, (long long)sb, name, args));
}

/* t seconds in microseconds, to 3 or 4 digits. */
static const char *us_str(FgArena *a, double t)
{
	double us = t * 1e6;
	return cu_fmt(a, us >= 100 ? "%.0f us" : us >= 10 ? "%.1f us" : "%.2f us", us);
}

/* Fills p for gemm group k; 0 (k->failed) when it cannot run. */
static int plan_gemm(Emit *E, Kern *k, GemmPlan *p)
{
	memset(p, 0, sizeof *p);
	p->mm = p->y = p->bias = p->aux = p->res = -1;
	for (int i = 0; i < k->gr->nnodes; i++)
		if (k->g->nodes[k->gr->nodes[i]].op == FG_OP_MATMUL && cu_is_member(k, k->gr->nodes[i]))
			p->mm = p->mm < 0 ? k->gr->nodes[i] : -2;
	if (p->mm < 0) {
		cu_kern_error(k, -1, "a gemm group needs exactly one matmul");
		return 0;
	}
	const int mm = p->mm;
	const FgNode *n = &k->g->nodes[mm];
	p->A = gemm_operand(k, n->in[0], &p->ta);
	p->B = gemm_operand(k, n->in[1], &p->tb);
	if (k->failed)
		return 0;
	const FgShape *as = cu_shape_of(k, n->in[0]), *bs = cu_shape_of(k, n->in[1]), *os = &n->shape;
	int nb = os->rank - 2;
	p->M = as->d[as->rank - 2], p->K = as->d[as->rank - 1], p->N = bs->d[bs->rank - 1];
	cu_batch_strides(as, nb, os->d, p->M * p->K, p->st[0]);
	cu_batch_strides(bs, nb, os->d, p->K * p->N, p->st[1]);
	cu_batch_strides(os, nb, os->d, p->M * p->N, p->st[2]);
	/* merge batch dims, innermost first, where every stride allows */
	for (int i = nb - 1; i >= 0; i--) {
		if (os->d[i] == 1)
			continue;
		if (p->nd > 0) {
			int ok = 1;
			for (int t = 0; t < 3; t++)
				ok &= p->st[t][i] == p->ms[t][p->nd - 1] * p->cnt[p->nd - 1];
			if (ok) {
				p->cnt[p->nd - 1] *= os->d[i];
				continue;
			}
		}
		p->cnt[p->nd] = os->d[i];
		for (int t = 0; t < 3; t++)
			p->ms[t][p->nd] = p->st[t][i];
		p->nd++;
	}
	/* ms[.][0] is the innermost: cuBLASLt's strided batch */
	p->direct = 1;
	for (int i = 0; i < k->gr->nnodes; i++) {
		int id = k->gr->nodes[i];
		const FgNode *m = &k->g->nodes[id];
		if (id != mm && m->op != FG_OP_CONST && cu_is_member(k, id) && !operand_side(k, n, id))
			p->direct = 0;
	}
	p->direct &= E->plan->home[mm] == k->gi;
	/* straight into the result writes nothing else: an operand's saved
	 * transpose (the GPU campaign's seed 800914) needs the epilogue kernel */
	for (int w = 0; w < k->gr->nwrites; w++)
		p->direct &= k->gr->writes[w] == mm;
	p->ep = p->direct ? NULL : lt_epilogue(k, mm, &p->y, &p->bias, &p->aux, &p->res);
	if (p->ep && (E->plan->home[p->y] != k->gi || (p->aux >= 0 && E->plan->home[p->aux] != k->gi)))
		p->ep = NULL;
	if (simple_matmul(k->g, n))
		return 1;
	/* --gemm auto: cuBLASLt for a plain matmul and for an epilogue on its
	 * menu; for any other epilogue whichever estimate is smaller; and
	 * cuBLASLt for tf32: the generated kernel's tf32 path passes its tests
	 * on the H200, but its speed against cuBLASLt's has not been measured,
	 * so no rule weighs them (--gemm fgc takes it) */
	p->refusal = own_gemm_refusal(k, p);
	if (!p->refusal && n->dt == FG_DT_F32 && E->gemm != FG_GEMM_FGC)
		p->refusal = "tf32, kept on cuBLASLt by --gemm auto: the generated kernel's tf32 speed is not measured "
			     "(--gemm fgc takes it)";
	gemm_estimates(k, p);
	int pays = !p->refusal && !p->direct && !p->ep && p->est_own < p->est_lt;
	p->own = !p->refusal && (E->gemm == FG_GEMM_FGC || (E->gemm == FG_GEMM_AUTO && pays));
	return 1;
}

void cu_emit_gemm(Emit *E, Kern *k)
{
	GemmPlan p;
	if (!plan_gemm(E, k, &p))
		return;
	const int mm = p.mm, A = p.A, B = p.B, ta = p.ta, tb = p.tb, nd = p.nd, direct = p.direct;
	const int64_t M = p.M, N = p.N, K = p.K, *cnt = p.cnt;
	const FgNode *n = &k->g->nodes[mm];
	const FgShape *os = &n->shape;
	const char *ep = p.ep;
	const int y = p.y, bias = p.bias, aux = p.aux, res = p.res;
	int64_t(*ms)[FG_MAX_RANK] = p.ms;
	if (simple_matmul(k->g, n)) {
		emit_matmul_simple(E, k, mm, A, ta, B, tb, p.st[0], p.st[1]);
		return;
	}
	if (p.own) {
		emit_own_gemm(E, k, &p, E->gemm == FG_GEMM_FGC ? "--gemm fgc" :
			      cu_fmt(k->a, "an epilogue off cuBLASLt's menu, estimated %s here against %s for cuBLASLt "
				  "and an epilogue kernel (own_gemm_pays)", us_str(k->a, p.est_own), us_str(k->a, p.est_lt)));
		return;
	}
	const char *outer_n = "", *outer_a = "", *outer_b = "", *outer_d = "", *outer_0 = "";
	for (int i = nd - 1; i >= 1; i--) {
		const char *sep = i == nd - 1 ? "" : ", ";
		outer_n = cu_fmt(k->a, "%s%s%lld", outer_n, sep, (long long)cnt[i]);
		outer_a = cu_fmt(k->a, "%s%s%lld", outer_a, sep, (long long)ms[0][i]);
		outer_b = cu_fmt(k->a, "%s%s%lld", outer_b, sep, (long long)ms[1][i]);
		outer_d = cu_fmt(k->a, "%s%s%lld", outer_d, sep, (long long)ms[2][i]);
		outer_0 = cu_fmt(k->a, "%s%s0", outer_0, sep);
	}
	/* an epilogue's bias is one row for every matrix; aux and C are laid
	 * out as D */
	const char *epf = !ep ? "" : cu_fmt(k->a, "\t%s, 0, %lld, %lld, {%s}, {%s},\t/* epilogue: bias and aux strides */\n"
					 "\t%d,\t/* C: %s */\n",
					 ep, (long long)(aux >= 0 ? N : 0), (long long)(aux >= 0 && nd ? ms[2][0] : 0),
					 outer_0, aux >= 0 ? outer_d : outer_0, res >= 0,
					 res >= 0 ? cu_fmt(k->a, "%s, added (beta 1)", k->plan->names[res]) : "none");
	const char *def = cu_fmt(k->a,
		"\t{%s, %s,\t/* operands, result */\n"
		"\t%lld, %lld, %lld,\t/* m, n, k */\n"
		"\t%d, %d,\t/* A, B stored transposed */\n"
		"\t%lld, %lld, %lld, %lld,\t/* batch and its strides */\n"
		"\t%d, {%s}, {%s}, {%s}, {%s},\t/* outer batch dims */\n"
		"%s"
		"\t},",
		k->g->nodes[A].dt == FG_DT_F32 && E->plan->opt.tf32 ? "FGRT_TF32" : fg_dtype_info[k->g->nodes[A].dt].rt,
		direct || ep ? fg_dtype_info[n->dt].rt : "FGRT_F32",
		(long long)M, (long long)N, (long long)K, ta, tb,
		(long long)(nd ? cnt[0] : 1), (long long)(nd ? ms[0][0] : 0), (long long)(nd ? ms[1][0] : 0),
		(long long)(nd ? ms[2][0] : 0), nd > 1 ? nd - 1 : 0, outer_n, outer_a, outer_b, outer_d, epf);
	int slot = cu_add_gemm(E, def, cu_fmt(k->a, "%s: %s = matmul(%s%s, %s%s)", k->gr->name, k->plan->names[mm],
					     k->plan->names[A], ta ? "^T" : "", k->plan->names[B], tb ? "^T" : ""));
	/* the operands' own tensors */
	const char *pa = cu_tensor_param(k, A), *pb = cu_tensor_param(k, B);
	if (direct) {
		fg_vec_push(E->a, &E->run, cu_fmt(E->a, "fgrt_gemm(ctx, slot, &fg_gemms[slot], %s, %s, %s);", pa, pb,
					      cu_tensor_param(k, mm)));
		cu_add_launch(E, "cublasLt", k->gi, 0, 0, NULL);
		lt_paths(E, k, A, CU_PATH_GEMM_LT);
		cu_emit_comment(E, k->gi, cu_fmt(E->a, "gemm on cuBLASLt (fg_gemms[%d]), straight into %s; no epilogue kernel",
					   slot, k->plan->names[mm]));
		cu_out(E, "\n");
		return;
	}
	if (ep) {
		const char *pbias = bias >= 0 ? cu_tensor_param(k, bias) : "NULL";
		const char *paux = aux >= 0 ? cu_tensor_param(k, aux) : "NULL";
		const char *pres = res >= 0 ? cu_tensor_param(k, res) : "NULL";
		fg_vec_push(E->a, &E->run, cu_fmt(E->a, "fgrt_gemm_ep(ctx, slot, &fg_gemms[slot], %s, %s, %s, %s, %s, %s);",
					      pa, pb, cu_tensor_param(k, y), pbias, paux, pres));
		cu_add_launch(E, "cublasLt", k->gi, 0, 0, NULL);
		lt_paths(E, k, A, strcmp(ep, "FGRT_EP_NONE") ? ep_path(E, ep) : CU_PATH_GEMM_LT_RESIDUAL);
		if (res >= 0)
			cu_path(E, k->gi, CU_PATH_GEMM_LT_RESIDUAL);
		const char *how = cu_fmt(k->a, "%s%s%s%s", strcmp(ep, "FGRT_EP_NONE") ? " with its own epilogue " : "",
					 strcmp(ep, "FGRT_EP_NONE") ? ep + strlen("FGRT_EP_") : "",
					 res >= 0 ? strcmp(ep, "FGRT_EP_NONE") ? " and " : " with " : "",
					 res >= 0 ? cu_fmt(k->a, "%s added as its C (beta 1)", k->plan->names[res]) : "");
		cu_emit_comment(E, k->gi, cu_fmt(E->a, "gemm on cuBLASLt%s (fg_gemms[%d]), straight into %s%s%s; no epilogue "
					   "kernel", how, slot,
					   k->plan->names[y], aux >= 0 ? " and, as AUX, " : "", aux >= 0 ? k->plan->names[aux] : ""));
		cu_out(E, "\n");
		return;
	}
	cu_use_scratch(E, k->gi, cu_numel(os) * 4);
	fg_vec_push(E->a, &E->run, cu_fmt(E->a, "fgrt_gemm(ctx, slot, &fg_gemms[slot], %s, %s, ctx->scratch);", pa, pb));
	cu_add_launch(E, "cublasLt", k->gi, 0, 0, NULL);
	lt_paths(E, k, A, CU_PATH_GEMM_LT_SCRATCH);
	k->mm = mm;
	Param acc = {cu_fmt(k->a, "const float *__restrict__ mm_%s", cu_name(k, mm)), "(const float *)ctx->scratch"};
	int s = cu_sink(k);
	cu_loop_kernel(E, k, s, &acc, 1, cu_fmt(E->a, "gemm: %s = matmul on cuBLASLt (fg_gemms[%d]) into scratch as f32, "
					"then this epilogue over %s%s%s%s", k->plan->names[mm], slot,
					cu_shape_str(E->a, k->g->nodes[s].dt, cu_shape_of(k, s)),
					E->gemm == FG_GEMM_CUBLASLT ? "" : " (not the generated matmul: ",
					E->gemm == FG_GEMM_CUBLASLT ? "" : p.refusal ? p.refusal :
					cu_fmt(k->a, "estimated %s there against %s for this pair (own_gemm_pays)",
					    us_str(k->a, p.est_own), us_str(k->a, p.est_lt)),
					E->gemm == FG_GEMM_CUBLASLT ? "" : ")"));
}

/* What fgc compile does with gemm group gi under plan->gemm, in a phrase
 * (fgc report; with --tf32 when plan->opt.tf32), or with an attention group
 * (cu_attention_note); NULL for other groups and for a group it cannot
 * compile.  Why: auto's estimates, or the flag that chose. */
const char *fg_cuda_gemm_note(const FgPlan *plan, int gi)
{
	const FgGraph *g = plan->g;
	if (gi >= 0 && gi < plan->ngroups && plan->groups[gi].kind == FG_GROUP_ATTENTION)
		return cu_attention_note(plan, gi);
	if (gi < 0 || gi >= plan->ngroups || plan->groups[gi].kind != FG_GROUP_GEMM)
		return NULL;
	Emit E;
	memset(&E, 0, sizeof E);
	E.a = g->arena;
	E.g = g;
	E.plan = plan;
	E.gemm = plan->gemm;
	E.member = fg_arena_array(E.a, (size_t)g->nnodes + 1, sizeof(int));
	Kern k;
	GemmPlan p;
	cu_kern_init(&k, &E, gi);
	int ok = plan_gemm(&E, &k, &p);
	cu_kern_done(&k);
	if (!ok)
		return NULL;
	const FgNode *n = &g->nodes[p.mm];
	if (simple_matmul(g, n))
		return cu_fmt(E.a, "a simple kernel for %s operands (a thread an element, into scratch), then the epilogue "
			      "kernel", fg_dtype_name[g->nodes[n->in[0]].dt]);
	if (p.own) {
		GemmTile t = plan_tile(&p);
		return cu_fmt(E.a, "the generated sm_90a matmul, %s %s%d x %d tiles, the epilogue on its registers (%s)",
			   t.pp ? "ping-pong" : "cooperative", t.pp ? "" : "2 x ", t.wm, t.bn,
			   E.gemm == FG_GEMM_FGC ? "--gemm fgc" :
			   cu_fmt(E.a, "est %s, against %s for cuBLASLt and an epilogue kernel", us_str(E.a, p.est_own),
				  us_str(E.a, p.est_lt)));
	}
	if (p.direct)
		return cu_fmt(E.a, "cuBLASLt, straight into %s", plan->names[p.mm]);
	if (p.ep)
		return cu_fmt(E.a, "cuBLASLt%s%s%s", strcmp(p.ep, "FGRT_EP_NONE") ? " with its own epilogue " : "",
			   strcmp(p.ep, "FGRT_EP_NONE") ? p.ep + strlen("FGRT_EP_") : "",
			   p.res >= 0 ? cu_fmt(E.a, ", %s added as its C (beta 1)", plan->names[p.res]) : "");
	if (E.gemm == FG_GEMM_CUBLASLT)
		return "cuBLASLt into f32 scratch, then an epilogue kernel (--gemm cublaslt)";
	if (p.refusal)
		return cu_fmt(E.a, "cuBLASLt into f32 scratch, then an epilogue kernel; not the generated matmul: %s",
			   p.refusal);
	return cu_fmt(E.a, "cuBLASLt into f32 scratch, then an epilogue kernel (est %s, against %s for the generated "
		   "matmul)", us_str(E.a, p.est_lt), us_str(E.a, p.est_own));
}
