/*
 * program.c - the whole file: the header, each group through its kind's
 * emitter, then the tensor table, the launch table, the cuBLASLt plans
 * and fg_program_run(), which enqueues the launches in plan order.
 *
 * One kernel per distinct group: before anything is written, every group
 * is emitted once under canonical names (find_owners); groups whose text
 * is equal compute the same thing on other tensors, and all but the first
 * launch the first one's kernels with their own pointers.  The launch
 * table still lists every launch by group; the kernel's comment lists the
 * groups that share it.
 */
#include <string.h>

#include "cuda.h"

/* The emitter of each group kind: compiler/cuda/KIND.c's cu_emit_KIND. */
static CuEmitFn *const emitters[FG_GROUP_COUNT] = {
#define X(id, stem, fill, border) [FG_GROUP_##id] = cu_emit_##stem,
	FG_GROUP_KINDS(X)
#undef X
};

static void record_step(Emit *E, int gi);

/* Group gi through its kind's emitter; canon: into the key (its text, the
 * tensors it names and its launch statements, under canonical names),
 * taking back whatever else it added to E.  1 when it has kernels, 0
 * when it has none (cuBLASLt alone), -1 when it cannot be compiled. */
static int run_emitter(Emit *E, int gi, int canon)
{
	int nl = E->launches.n, ng = E->gemms.n, kernels = 0;
	int64_t scratch = E->scratch, counters = E->counters;
	FgDiag *d = E->d;
	Kern k;

	E->canon = canon;
	E->quiet = !canon && E->owner[gi] != gi;
	E->run.n = E->params.n = 0;
	E->launch0 = E->launches.n;
	E->slot = -1;
	if (canon)
		E->d = NULL, E->key.n = 0;
	E->scratch_io[gi] = 0;
	cu_kern_init(&k, E, gi);
	emitters[k.gr->kind](E, &k);
	cu_kern_done(&k);
	for (int i = nl; i < E->launches.n; i++)
		kernels += E->launches.v[i].block > 0;
	E->nlaunch[gi] = k.failed ? -1 : E->launches.n - nl;
	E->max_grid[gi] = 0;
	E->shape[gi] = (FgLaunchShape){0, 0, 0, 0};
	for (int i = nl; i < E->launches.n; i++)
		if (E->launches.v[i].block > 0 && E->launches.v[i].grid > E->max_grid[gi]) {
			E->max_grid[gi] = E->launches.v[i].grid;
			E->shape[gi] = E->launches.v[i].shape;
		}
	if (canon) {
		for (int i = 0; i < E->run.n; i++) {
			for (const char *c = E->run.v[i]; *c; c++)
				fg_vec_push(E->a, &E->key, *c);
			fg_vec_push(E->a, &E->key, '\n');
		}
		fg_vec_push(E->a, &E->key, '\0');
		E->launches.n = nl, E->gemms.n = E->gemm_notes.n = ng, E->scratch = scratch, E->counters = counters;
		E->d = d;
	} else if (k.failed) {
		E->errors++;
	} else {
		record_step(E, gi);
	}
	E->canon = E->quiet = 0;
	return k.failed ? -1 : kernels > 0;
}

static uint64_t text_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;       /* FNV-1a */
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

/* One kernel per distinct group: each group is written once under
 * canonical names (member and read positions, K for its kernels, `slot`
 * and `launch` for its plan slot and first launch), and a group whose key
 * equals an earlier one's runs that group's code on its own tensors: the
 * same ops in the same order on the same shapes, dtypes, layouts and
 * constants, launched alike.  Sets E->owner and E->sharers (groups with
 * kernels only: cuBLASLt alone is no kernel of ours, though its step is
 * shared too); the number of groups with code of their own. */
static int find_owners(Emit *E)
{
	int n = E->plan->ngroups, cap = 2 * n + 1, owners = 0;	/* of kernels */
	int *table = fg_arena_array(E->a, (size_t)cap, sizeof(int));     /* open addressing */
	const char **keys = fg_arena_array(E->a, (size_t)n + 1, sizeof(char *));
	uint64_t *hash = fg_arena_array(E->a, (size_t)n + 1, sizeof(uint64_t));

	E->local = fg_arena_array(E->a, (size_t)E->g->nnodes + 1, sizeof(int));
	E->owner = fg_arena_array(E->a, (size_t)n + 1, sizeof(int));
	E->sharers = fg_arena_array(E->a, (size_t)n + 1, sizeof(int));
	E->kernels = fg_arena_array(E->a, (size_t)n + 1, sizeof(int));
	for (int i = 0; i < cap; i++)
		table[i] = -1;
	for (int gi = 0; gi < n; gi++) {
		E->owner[gi] = gi;
		int has = run_emitter(E, gi, 1);
		E->kernels[gi] = has > 0;
		if (has >= 0) {
			keys[gi] = fg_arena_strndup(E->a, E->key.v, (size_t)E->key.n);
			hash[gi] = text_hash(keys[gi]);
			int i = (int)(hash[gi] % (uint64_t)cap);
			for (; table[i] >= 0; i = (i + 1) % cap)
				if (hash[table[i]] == hash[gi] && strcmp(keys[table[i]], keys[gi]) == 0)
					break;
			if (table[i] >= 0)
				E->owner[gi] = table[i];
			else
				table[i] = gi;
		}
		if (E->kernels[gi]) {
			owners += E->owner[gi] == gi;
			E->sharers[E->owner[gi]]++;
		}
	}
	return owners;
}

/* Group gi's step: the owner writes its step function from the group's
 * launch statements, naming the tensors they use (a pick of its params)
 * through the tensor indices t[]; every group lists its own tensors for
 * the same pick, in the same order, since it asked for the same tensors
 * in the same order (the key holds them). */
static void record_step(Emit *E, int gi)
{
	Step *s = &E->steps[gi], *o = &E->steps[E->owner[gi]];

	s->owner = E->owner[gi];
	s->slot = E->slot;
	s->launch = E->launch0;
	if (s->owner == gi) {
		const char *decls = "", *body = "";
		int uses_slot = 0, uses_launch = 0;
		s->pick = fg_arena_array(E->a, (size_t)E->params.n + 1, sizeof(int));
		for (int j = 0; j < E->params.n; j++) {
			int id = E->params.v[j], used = 0;
			const char *name = cu_fmt(E->a, "t_%s", E->plan->names[id]);
			for (int i = 0; i < E->run.n && !used; i++)
				used = cu_uses(E->run.v[i], name);
			if (!used)
				continue;
			const char *ty = fg_dtype_info[E->g->nodes[id].dt].cuda_store;
			decls = cu_fmt(E->a, "%s\t%s *%s = (%s *)ctx->ptr[t[%d]];\n", decls, ty, name, ty, s->npick);
			s->pick[s->npick++] = j;
		}
		for (int i = 0; i < E->run.n; i++) {
			body = cu_fmt(E->a, "%s\t%s\n", body, E->run.v[i]);
			uses_slot |= cu_uses(E->run.v[i], "slot");
			uses_launch |= cu_uses(E->run.v[i], "launch");
		}
		s->code = cu_fmt(E->a, "static void run_%s(FgrtContext *ctx, const int *%s, int%s, int%s)\n{\n%s%s}\n",
				 E->plan->groups[gi].name, s->npick ? "t" : "", uses_slot ? " slot" : "",
				 uses_launch ? " launch" : "", decls, body);
	}
	s->tensors = E->step_tensors.n;
	for (int j = 0; j < o->npick; j++)
		fg_vec_push(E->a, &E->step_tensors, E->tensor[E->params.v[o->pick[j]]]);
}

/* Which of testing.md's gates checks each value (compiler/gates.c): a
 * float value is read back when some group reads it from memory. */
static void gates(Emit *E, unsigned char *gate)
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
	fg_gates(g, read_back, plan->opt.tf32, gate);
}

static void emit_tensors(Emit *E)
{
	const FgGraph *g = E->g;
	unsigned char *gate = fg_arena_alloc(E->a, (size_t)g->nnodes + 1);
	gates(E, gate);
	fprintf(E->f, "/* ------------------------------------------------------------ the program */\n\n");
	fprintf(E->f, "/* name, dtype, rank, shape, role, arena offset, --check's gate (FGRT_GATE_*: 1 RMSE, "
		"2 at tf32's precision, 4 fed by a transcendental op) */\n");
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
			gate[id]);
	}
	fprintf(E->f, "};\n\n");
}

/* Line `line` of the source (at most 240 bytes of it, unprintable bytes
 * as '?'), for a run-time error's caret; "" when there is none. */
static const char *source_line(Emit *E, int line)
{
	const FgSource *src = E->src;
	if (!src || !src->text || line < 1)
		return "";
	size_t i = 0;
	for (int l = 1; l < line && i < src->len; i++)
		l += src->text[i] == '\n';
	size_t j = i;
	while (j < src->len && src->text[j] != '\n' && j - i < 240)
		j++;
	char *s = fg_arena_alloc(E->a, j - i + 1);
	for (size_t k = i; k < j; k++) {
		unsigned char c = (unsigned char)src->text[k];
		s[k - i] = c == '\t' || (c >= 0x20 && c < 0x7f) ? (char)c : '?';
	}
	s[j - i] = 0;
	return s;
}

/* The run-time checks' table (FgrtFault) and their records' address. */
static void emit_faults(Emit *E)
{
	if (!E->faults.n)
		return;
	fprintf(E->f, "/* run-time checks: kind, where, source line, column, op, position's tensor, rank, shape, "
		"axis length */\nstatic const FgrtFault fg_faults_info[] = {\n");
	for (int i = 0; i < E->faults.n; i++) {
		const FgNode *n = &E->g->nodes[E->faults.v[i]];
		int index = n->op == FG_OP_GATHER || n->op == FG_OP_TAKE_ALONG_AXIS;
		const FgNode *at = index ? &E->g->nodes[n->in[1]] : n;
		char where[1024];
		snprintf(where, sizeof where, "%s:%d:%d", E->src ? E->src->name : "?", n->loc.line, n->loc.col);
		const char *dims = "";
		for (int j = 0; j < at->shape.rank; j++)
			dims = cu_fmt(E->a, "%s%s%lld", dims, j ? ", " : "", (long long)at->shape.d[j]);
		fprintf(E->f, "\t{%s, \"%s\", \"%s\", %d, \"%s\", %s%s%s, %d, {%s}, %lld},\n",
			index ? "FGRT_FAULT_INDEX" : "FGRT_FAULT_DIVISOR", cu_c_string(E->a, where),
			cu_c_string(E->a, source_line(E, n->loc.line)), n->loc.col, fg_op_info[n->op].name,
			at->name ? "\"" : "", at->name ? cu_c_string(E->a, at->name) : "NULL", at->name ? "\"" : "",
			at->shape.rank, dims,
			index ? (long long)E->g->nodes[n->in[0]].shape.d[n->a.axis] : 0LL);
	}
	fprintf(E->f, "};\n\n");
	fprintf(E->f, "/* the address of fg_faults, found once (the first run is never inside a graph capture) */\n"
		"static FgrtFaultRecord *fg_fault_records(void)\n{\n\tstatic void *p;\n"
		"\tif (!p)\n\t\tfgrt_cuda(cudaGetSymbolAddress(&p, fg_faults), \"cudaGetSymbolAddress(fg_faults)\");\n"
		"\treturn (FgrtFaultRecord *)p;\n}\n\n");
}

static void emit_program(Emit *E, const char *source)
{
	const FgPlan *plan = E->plan;
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
	/* compiler/cuda/cuda.h's CU_PATHS: what tests/run-coverage.sh counts */
	fprintf(E->f, "/* emitter paths: %s */\n\n", cu_path_names(E->a, E->paths));
	if (E->gemms.n) {
		fprintf(E->f, "/* cuBLASLt's matmuls, a plan slot each: groups with equal ones share it */\n");
		fprintf(E->f, "static const FgrtGemm fg_gemms[] = {\n");
		for (int i = 0; i < E->gemms.n; i++)
			fprintf(E->f, "\t/* %d: %s */\n%s\n", i, cu_in_comment(E->a, E->gemm_notes.v[i]), E->gemms.v[i]);
		fprintf(E->f, "};\n\n");
	}
	fprintf(E->f, "/* the outputs' tensors, in `output` order */\nstatic const int fg_outputs[] = {");
	for (int k = 0; k < E->g->noutputs; k++)
		fprintf(E->f, "%s%d", k ? ", " : "", E->tensor[E->g->outputs[k]]);
	fprintf(E->f, "};\n\n");
	emit_faults(E);
	fprintf(E->f, "extern const FgrtProgram fg_program = {\n");
	fprintf(E->f, "\t\"%s\", \"%s\",\n", E->g->name, cu_c_string(E->a, source));
	fprintf(E->f, "\tfg_tensors, %d, %d,\n", E->tensors.n, E->g->ninputs);
	fprintf(E->f, "\tfg_launches, %d, %d, %d,\n", E->launches.n, plan->ngroups, E->gemms.n);
	fprintf(E->f, "\t%lld, %lld, %lld,\t/* arena and scratch bytes, counters */\n", (long long)plan->planned_bytes,
		(long long)E->scratch, (long long)E->counters);
	fprintf(E->f, "\tfg_outputs, %d,\n", E->g->noutputs);
	if (E->faults.n)
		fprintf(E->f, "\tfg_faults_info, %d, fg_fault_records,\n};\n\n", E->faults.n);
	else
		fprintf(E->f, "\tNULL, 0, NULL,\t/* no run-time checks */\n};\n\n");
	/* the steps: a function per distinct group, run on each group's tensors */
	fprintf(E->f, "/* Each group's launches: a function per distinct group, on the tensors t[] (indices into\n"
		" * fg_tensors) of the group it runs for, its plan slot and its first launch. */\n");
	for (int gi = 0; gi < plan->ngroups; gi++)
		if (E->steps[gi].code && E->steps[gi].owner == gi)
			fprintf(E->f, "%s\n", E->steps[gi].code);
	fprintf(E->f, "typedef void FgStep(FgrtContext *, const int *, int, int);\n\n");
	fprintf(E->f, "static const int fg_step_tensors[] = {");
	for (int i = 0; i < E->step_tensors.n; i++)
		fprintf(E->f, "%s%d,", i % 16 ? " " : "\n\t", E->step_tensors.v[i]);
	fprintf(E->f, "%s\n};\n\n", E->step_tensors.n ? "" : "\n\t-1,");
	fprintf(E->f, "/* per group: its step, where its tensors start, its plan slot, its first launch */\n");
	fprintf(E->f, "static const struct {\n\tFgStep *run;\n\tint tensors, slot, launch;\n} fg_steps[] = {\n");
	for (int gi = 0; gi < plan->ngroups; gi++) {
		const Step *s = &E->steps[gi];
		fprintf(E->f, "\t{run_%s, %d, %d, %d},\t/* %s */\n", plan->groups[s->owner].name, s->tensors, s->slot,
			s->launch, plan->groups[gi].name);
	}
	if (plan->ngroups == 0)
		fprintf(E->f, "\t{NULL, 0, -1, 0},\n");
	fprintf(E->f, "};\n\n");
	fprintf(E->f, "void fg_program_run(FgrtContext *ctx)\n{\n");
	if (E->faults.n)
		fprintf(E->f, "\tfgrt_cuda(cudaMemsetAsync(fg_fault_records(), 0xff, sizeof fg_faults, ctx->stream), "
			"\"cudaMemsetAsync(fg_faults)\");\n");
	fprintf(E->f, "\tfor (int i = 0; i < %d; i++)\n", plan->ngroups);
	fprintf(E->f, "\t\tfg_steps[i].run(ctx, fg_step_tensors + fg_steps[i].tensors, fg_steps[i].slot, "
		"fg_steps[i].launch);\n");
	fprintf(E->f, "}\n");
}

static void emit_header(Emit *E, const char *source, int owners)
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
		" * -I runtime this.cu runtime/fgrt_lib.cu runtime/fgrt_main.cu runtime/npy.c runtime/half.c runtime/check.c\n"
		" * -lcublasLt (fgc compile --build), or -shared -Xcompiler -fPIC this.cu runtime/fgrt_lib.cu (--lib)\n",
		E->plan->ngroups, E->plan->ngroups == 1 ? "group" : "groups",
		E->plan->opt.no_fuse ? " (--no-fuse: one per op)" : "",
		(long long)E->plan->planned_bytes);
	int kernels = 0;
	for (int gi = 0; gi < E->plan->ngroups; gi++)
		kernels += E->kernels[gi] != 0;
	if (owners < kernels)
		fprintf(E->f, " * %d of the %d groups with kernels have code of their own; the other %d compute the\n"
			" * same as an earlier one on other tensors and launch its kernels with their own pointers.\n",
			owners, kernels, kernels - owners);
	fprintf(E->f, " */\n");
	fprintf(E->f, "#include \"fg_device.cuh\"\n#include \"fg_gemm_sm90.cuh\"\n#include \"fg_attn_sm90.cuh\"\n\n");
	if (E->faults.n)
		fprintf(E->f, "/* the run-time checks' records (fg_fault), fg_faults_info's order */\n"
			"__device__ FgrtFaultRecord fg_faults[%d];\n\n", E->faults.n);
}

static void emit_init(Emit *E, const FgPlan *plan, FgGemmChoice gemm, FgDiag *d, FILE *f)
{
	const FgGraph *g = plan->g;
	memset(E, 0, sizeof *E);
	E->gemm = gemm;
	E->a = g->arena;
	E->g = g;
	E->plan = plan;
	E->d = d;
	E->f = f;
	E->member = fg_arena_array(E->a, (size_t)g->nnodes + 1, sizeof(int));
	E->tensor = fg_arena_array(E->a, (size_t)g->nnodes + 1, sizeof(int));
	E->group_paths = fg_arena_array(E->a, (size_t)plan->ngroups + 1, sizeof(uint64_t));
	E->nlaunch = fg_arena_array(E->a, (size_t)plan->ngroups + 1, sizeof(int));
	E->max_grid = fg_arena_array(E->a, (size_t)plan->ngroups + 1, sizeof(int64_t));
	E->shape = fg_arena_array(E->a, (size_t)plan->ngroups + 1, sizeof(FgLaunchShape));
	E->scratch_io = fg_arena_array(E->a, (size_t)plan->ngroups + 1, sizeof(int64_t));
	for (int id = 0; id < g->nnodes; id++)
		E->tensor[id] = -1;
	for (int k = 0; k < g->ninputs; k++) {
		E->tensor[g->inputs[k]] = E->tensors.n;
		fg_vec_push(E->a, &E->tensors, g->inputs[k]);
	}
	for (int id = 0; id < g->nnodes; id++) {
		if (E->tensor[id] >= 0 || !plan->offset || plan->offset[id] < 0)
			continue;
		E->tensor[id] = E->tensors.n;
		fg_vec_push(E->a, &E->tensors, id);
	}
	E->src = d ? d->src : NULL;
	E->fault = fg_arena_array(E->a, (size_t)g->nnodes + 1, sizeof(int));
	for (int id = 0; id < g->nnodes; id++) {
		const FgNode *n = &g->nodes[id];
		int checked = n->op == FG_OP_GATHER || n->op == FG_OP_TAKE_ALONG_AXIS ||
			      ((n->op == FG_OP_FLOORDIV || n->op == FG_OP_MOD) && fg_dtype_is_int(n->dt));
		E->fault[id] = checked ? E->faults.n : -1;
		if (checked)
			fg_vec_push(E->a, &E->faults, id);
	}
}

int fg_cuda_emit(FILE *f, const FgPlan *plan, const char *source, FgGemmChoice gemm, FgDiag *d)
{
	Emit E;
	emit_init(&E, plan, gemm, d, f);
	int owners = find_owners(&E);
	E.steps = fg_arena_array(E.a, (size_t)plan->ngroups + 1, sizeof(Step));
	emit_header(&E, source, owners);
	for (int gi = 0; gi < plan->ngroups; gi++)
		run_emitter(&E, gi, 0);
	emit_program(&E, source);
	return E.errors;
}

void fg_cuda_plan_costs(FgPlan *plan, FgGemmChoice gemm)
{
	Emit E;
	plan->gemm = gemm;
	emit_init(&E, plan, gemm, NULL, NULL);
	plan->kernel_owners = find_owners(&E);
	plan->kernel_owner = fg_arena_array(E.a, (size_t)plan->ngroups + 1, sizeof(int));
	for (int gi = 0; gi < plan->ngroups; gi++) {
		FgCost *c = &plan->groups[gi].cost;
		plan->kernel_owner[gi] = E.kernels[gi] ? E.owner[gi] : -1;
		plan->groups[gi].max_grid = E.max_grid[gi];
		plan->groups[gi].shape = E.shape[gi];
		if (E.nlaunch[gi] >= 0) {
			c->launches = E.nlaunch[gi];
			c->bytes = fg_bytes_add(c->bytes, E.scratch_io[gi]);
			fg_cost_estimate(&plan->opt, c);
		}
	}
	fg_plan_total(plan);
}

int fg_cuda_kernel_owners(const FgPlan *plan, int *owner)
{
	Emit E;
	emit_init(&E, plan, plan->gemm, NULL, NULL);
	int owners = find_owners(&E);
	for (int gi = 0; gi < plan->ngroups; gi++)
		owner[gi] = E.kernels[gi] ? E.owner[gi] : -1;
	return owners;
}
