/*
 * program.c - the whole file: the header, each group through its kind's
 * emitter, then the tensor table, the launch table, the cuBLASLt plans
 * and fg_program_run(), which enqueues the launches in plan order.
 */
#include <string.h>

#include "cuda.h"

/* The emitter of each group kind: compiler/cuda/KIND.c's cu_emit_KIND. */
static CuEmitFn *const emitters[FG_GROUP_COUNT] = {
#define X(id, stem) [FG_GROUP_##id] = cu_emit_##stem,
	FG_GROUP_KINDS(X)
#undef X
};

static void emit_group(Emit *E, int gi)
{
	Kern k;
	cu_kern_init(&k, E, gi);
	emitters[k.gr->kind](E, &k);
	if (k.failed)
		E->errors++;
	cu_kern_done(&k);
}

/* Which of testing.md's gates checks each value: the RMSE gate for values
 * fed by a reduction or a matmul, or by a float value the plan stores and
 * reads back (rounded once more than the reference), as fg_plan_verify
 * decides; else the elementwise one.  2: the RMSE gate at tf32's precision,
 * for values fed by an f32 matmul under --tf32. */
static void rmse_gates(Emit *E, unsigned char *rmse)
{
	const FgGraph *g = E->g;
	const FgPlan *plan = E->plan;
	unsigned char *read_back = fg_arena_alloc(E->a, (size_t)g->nnodes + 1);
	for (int gi = 0; gi < plan->ngroups; gi++)
		for (int r = 0; r < plan->groups[gi].nreads; r++) {
			int id = plan->groups[gi].reads[r];
			FgOp op = g->nodes[id].op;
			read_back[id] = op != FG_OP_INPUT && op != FG_OP_PARAM && fg_dtype_is_float(g->nodes[id].dt);
		}
	for (int id = 0; id < g->nnodes; id++) {
		const FgNode *n = &g->nodes[id];
		FgOpClass c = fg_op_info[n->op].cls;
		int tf32 = c == FG_CLASS_MATMUL && E->plan->opt.tf32 && g->nodes[n->in[0]].dt == FG_DT_F32;
		rmse[id] = c == FG_CLASS_REDUCE || c == FG_CLASS_MATMUL;
		for (int j = 0; j < n->nin; j++) {
			rmse[id] |= rmse[n->in[j]] != 0 || read_back[n->in[j]];
			tf32 |= rmse[n->in[j]] == 2;
		}
		if (tf32)
			rmse[id] = 2;
	}
}

static void emit_tensors(Emit *E)
{
	const FgGraph *g = E->g;
	unsigned char *rmse = fg_arena_alloc(E->a, (size_t)g->nnodes + 1);
	rmse_gates(E, rmse);
	fprintf(E->f, "/* ------------------------------------------------------------ the program */\n\n");
	fprintf(E->f, "/* name, dtype, rank, shape, role, arena offset, --check by the RMSE gate (2: at tf32's "
		"precision) */\n");
	fprintf(E->f, "static const FgrtTensor fg_tensors[] = {\n");
	for (int t = 0; t < E->tensors.n; t++) {
		int id = E->tensors.v[t];
		const FgNode *n = &g->nodes[id];
		const char *role = "";
		unsigned roles = 0;
		if (n->op == FG_OP_INPUT)
			roles |= 1;
		if (n->op == FG_OP_PARAM)
			roles |= 2;
		if (n->flags & FG_NF_OUTPUT)
			roles |= 4;
		if (n->flags & FG_NF_SAVED)
			roles |= 8;
		if (!roles)
			roles = 16;
		static const char *const rn[] = {"FGRT_INPUT", "FGRT_PARAM", "FGRT_OUTPUT", "FGRT_SAVED",
						 "FGRT_INTERMEDIATE"};
		for (int b = 0; b < 5; b++)
			if (roles >> b & 1)
				role = cu_fmt(E->a, "%s%s%s", role, *role ? " | " : "", rn[b]);
		const char *shape = "";
		for (int i = 0; i < n->shape.rank; i++)
			shape = cu_fmt(E->a, "%s%s%lld", shape, i ? ", " : "", (long long)n->shape.d[i]);
		int64_t off = E->plan->offset ? E->plan->offset[id] : -1;
		fprintf(E->f, "\t{\"%s\", %s, %d, {%s}, %s, %lld, %d},\n", E->plan->names[id], fg_dtype_info[n->dt].rt,
			n->shape.rank, shape, role, (long long)(n->op == FG_OP_INPUT || n->op == FG_OP_PARAM ? -1 : off),
			rmse[id]);
	}
	fprintf(E->f, "};\n\n");
}

static void emit_program(Emit *E, const char *source)
{
	emit_tensors(E);
	fprintf(E->f, "/* kernel, group, grid, block: in launch order */\n");
	fprintf(E->f, "static const FgrtLaunch fg_launches[] = {\n");
	for (int i = 0; i < E->launches.n; i++) {
		const Launch *l = &E->launches.v[i];
		fprintf(E->f, "\t{\"%s\", %d, %lld, %lld},\n", l->kernel, l->group, (long long)l->grid, (long long)l->block);
	}
	if (E->launches.n == 0)
		fprintf(E->f, "\t{\"none\", -1, 0, 0},\n");
	fprintf(E->f, "};\n\n");
	for (int i = 0; i < E->gemms.n; i++)
		fprintf(E->f, "%s\n", E->gemms.v[i]);
	fprintf(E->f, "extern const FgrtProgram fg_program = {\n");
	fprintf(E->f, "\t\"%s\", \"%s\",\n", E->g->name, cu_c_string(E->a, source));
	fprintf(E->f, "\tfg_tensors, %d, %d,\n", E->tensors.n, E->g->ninputs);
	fprintf(E->f, "\tfg_launches, %d, %d, %d,\n", E->launches.n, E->plan->ngroups, E->gemms.n);
	fprintf(E->f, "\t%lld, %lld,\t/* arena and scratch bytes */\n};\n\n", (long long)E->plan->planned_bytes,
		(long long)E->scratch);
	fprintf(E->f, "void fg_program_run(FgrtContext *ctx)\n{\n");
	for (int t = 0; t < E->tensors.n; t++) {
		int id = E->tensors.v[t], used = 0;
		const char *ty = fg_dtype_info[E->g->nodes[id].dt].cuda_store, *name = cu_fmt(E->a, "t_%s", E->plan->names[id]);
		for (int i = 0; i < E->run.n && !used; i++)
			used = cu_uses(E->run.v[i], name);
		if (used)       /* an input no group reads (the host still loads it) needs none */
			fprintf(E->f, "\t%s *%s = (%s *)ctx->ptr[%d];\n", ty, name, ty, t);
	}
	for (int i = 0; i < E->run.n; i++)
		fprintf(E->f, "\t%s\n", E->run.v[i]);
	fprintf(E->f, "}\n");
}

static void emit_header(Emit *E, const char *source)
{
	const FgGraph *g = E->g;
	fprintf(E->f, "/*\n * %s.cu - graph %s from %s, written by `fgc compile`; do not edit.\n", g->name, g->name,
		cu_in_comment(E->a, source));
	if (g->nsyms) {
		fprintf(E->f, " * dims:");
		for (int i = 0; i < g->nsyms; i++)
			fprintf(E->f, " %s=%lld", g->syms[i].name, (long long)g->syms[i].value);
		fprintf(E->f, "\n");
	}
	fprintf(E->f, " * %d %s%s; arena %lld bytes.  Build: nvcc -O3 -gencode=arch=compute_90a,code=sm_90a\n"
		" * -I runtime this.cu runtime/fgrt_host.cu runtime/npy.c runtime/half.c runtime/check.c -lcublasLt\n */\n",
		E->plan->ngroups, E->plan->ngroups == 1 ? "group" : "groups",
		E->plan->opt.no_fuse ? " (--no-fuse: one per op)" : "",
		(long long)E->plan->planned_bytes);
	fprintf(E->f, "#include \"fg_device.cuh\"\n#include \"fg_gemm_sm90.cuh\"\n\n");
}

int fg_cuda_emit(FILE *f, const FgPlan *plan, const char *source, FgGemmChoice gemm, FgDiag *d)
{
	Emit E;
	const FgGraph *g = plan->g;
	memset(&E, 0, sizeof E);
	E.gemm = gemm;
	E.a = g->arena;
	E.g = g;
	E.plan = plan;
	E.d = d;
	E.f = f;
	E.member = fg_arena_array(E.a, (size_t)g->nnodes + 1, sizeof(int));
	E.tensor = fg_arena_array(E.a, (size_t)g->nnodes + 1, sizeof(int));
	for (int id = 0; id < g->nnodes; id++)
		E.tensor[id] = -1;
	for (int k = 0; k < g->ninputs; k++) {
		E.tensor[g->inputs[k]] = E.tensors.n;
		fg_vec_push(E.a, &E.tensors, g->inputs[k]);
	}
	for (int id = 0; id < g->nnodes; id++) {
		if (E.tensor[id] >= 0 || !plan->offset || plan->offset[id] < 0)
			continue;
		E.tensor[id] = E.tensors.n;
		fg_vec_push(E.a, &E.tensors, id);
	}
	emit_header(&E, source);
	for (int gi = 0; gi < plan->ngroups; gi++)
		emit_group(&E, gi);
	emit_program(&E, source);
	return E.errors;
}
