/*
 * kernel.c - a kernel's text and frame: its lines, built in nested scopes,
 * its signature from the reads it used and its writes, the comment above
 * it, and the shapes of threads it runs (grid-stride loops, lanes per
 * thread).  Its launch is fg_launch's, which may start it before the
 * kernel ahead has finished, so its first statement is fg_grid_wait
 * (programmatic dependent launch, runtime/fg_device.cuh; --no-pdl: a
 * plain <<<>>> and no wait).
 *
 * Scopes.  Kernel text is built in nested scopes (0: the kernel's top, 1:
 * a loop over elements or rows, 2: the loop inside a row or over reduced
 * elements).  Each computed value goes to the outermost scope whose
 * variables it uses, so a load of a scalar lands before the loops and a
 * row's mean and rsqrt land between the row's passes, without any special
 * case.  Coordinates are defined eagerly and dropped when their scope
 * closes if no line uses them, so a plain elementwise kernel never
 * divides.
 */
#include <stdarg.h>
#include <string.h>

#include "cuda.h"

/* Writes group text: kernels, their comments, the generated matmul's
 * functors.  Into the key while it is written, nowhere for a group that
 * runs another's kernels. */
void cu_out(Emit *E, const char *fmt_, ...)
{
	va_list ap;
	va_start(ap, fmt_);
	if (E->canon) {
		char *s = cu_vfmt(E->a, fmt_, ap);
		for (; *s; s++)
			fg_vec_push(E->a, &E->key, *s);
	} else if (!E->quiet) {
		vfprintf(E->f, fmt_, ap);
	}
	va_end(ap);
}

void cu_kern_error(Kern *k, int id, const char *fmt_, ...)
{
	va_list ap;
	va_start(ap, fmt_);
	char *msg = cu_vfmt(k->a, fmt_, ap);
	va_end(ap);
	if (!k->failed && k->E->d)     /* none: fg_cuda_gemm_note asks quietly */
		fg_error(k->E->d, id >= 0 ? k->g->nodes[id].loc : (FgLoc){0, 0},
			 "cannot compile group %d (%s) to CUDA yet: %s", k->gi, k->gr->name, msg);
	k->failed = 1;
}

/* Appends a line to scope lv; def names the variable of a removable
 * definition (dropped when its scope closes if nothing uses it). */
void cu_kline(Kern *k, int lv, const char *def, const char *f, ...)
{
	va_list ap;
	FG_ASSERT(lv >= 0 && lv <= k->depth);
	va_start(ap, f);
	Line l = {cu_vfmt(k->a, f, ap), def};
	va_end(ap);
	fg_vec_push(k->a, &k->lines[lv], l);
}

/* A variable name not in use, based on base. */
const char *cu_fresh(Kern *k, int lv, const char *base)
{
	const char *s = base;
	for (int n = 2;; n++) {
		int taken = 0;
		for (int i = 0; i < k->names.n && !taken; i++)
			taken = strcmp(k->names.v[i].s, s) == 0;
		if (!taken)
			break;
		s = cu_fmt(k->a, "%s_%d", base, n);
	}
	Name nm = {s, lv};
	fg_vec_push(k->a, &k->names, nm);
	return s;
}

void cu_kopen(Kern *k)
{
	FG_ASSERT(k->depth + 1 < MAXLV);
	k->depth++;
	k->lines[k->depth].n = 0;
}

/* Closes the innermost scope into its parent as `head { lines }`; what
 * was defined in it is forgotten. */
void cu_kclose(Kern *k, const char *head)
{
	int L = k->depth;
	int n = 0;
	for (int i = 0; i < k->memo.n; i++)
		if (k->memo.v[i].v.lv < L)
			k->memo.v[n++] = k->memo.v[i];
	k->memo.n = n;
	n = 0;
	for (int i = 0; i < k->names.n; i++)
		if (k->names.v[i].lv < L)
			k->names.v[n++] = k->names.v[i];
	k->names.n = n;
	n = 0;
	for (int i = 0; i < k->cache.n; i++)
		if (k->cache.v[i].lv < L)
			k->cache.v[n++] = k->cache.v[i];
	k->cache.n = n;
	/* a scope's definitions are used inside it or nowhere */
	cu_drop_unused(k, &k->lines[L]);
	k->depth--;
	cu_kline(k, L - 1, NULL, "%s {", head);
	for (int i = 0; i < k->lines[L].n; i++) {
		Line l = {cu_fmt(k->a, "\t%s", k->lines[L].v[i].text), NULL};
		fg_vec_push(k->a, &k->lines[L - 1], l);
	}
	cu_kline(k, L - 1, NULL, "}");
	k->lines[L].n = 0;
}

/* Drops removable definitions nothing uses, until none is left. */
void cu_drop_unused(Kern *k, Lines *ls)
{
	for (int changed = 1; changed;) {
		changed = 0;
		for (int i = 0; i < ls->n; i++) {
			if (!ls->v[i].def)
				continue;
			int used = 0;
			for (int j = 0; j < ls->n && !used; j++)
				used = j != i && cu_uses(ls->v[j].text, ls->v[i].def);
			if (!used) {
				memmove(&ls->v[i], &ls->v[i + 1], (size_t)(ls->n - i - 1) * sizeof(Line));
				ls->n--;
				i--;
				changed = 1;
			}
		}
	}
	(void)k;
}

const FgShape *cu_shape_of(const Kern *k, int id)
{
	return &k->g->nodes[id].shape;
}

int64_t cu_numel(const FgShape *s)
{
	return fg_shape_numel(s);
}

int cu_is_member(const Kern *k, int id)
{
	return k->E->member[id] == k->gi + 1 && id != k->mm;
}

/* The name node id's identifiers are made from (t_NAME, v_NAME): its own,
 * or while the key is written its place in the group, m3 for the fourth
 * member, r0 for the first read, so that groups that compute the same on
 * other tensors write the same text. */
const char *cu_name(const Kern *k, int id)
{
	if (!k->E->canon)
		return k->plan->names[id];
	int at = k->E->local[id];
	if (at == 0)
		fg_die("'%s' is neither a member nor a read of group %d", k->plan->names[id], k->gi);
	return at > 0 ? cu_fmt(k->a, "m%d", at - 1) : cu_fmt(k->a, "r%d", -at - 1);
}

/* The name of one of the group's kernels: the group's name (that of the
 * group whose kernels it runs), or K while the key is written; suffix
 * (NULL: none) tells a group's kernels apart. */
const char *cu_kname(const Kern *k, const char *suffix)
{
	const char *base = k->E->canon ? "K" : k->plan->groups[k->E->owner ? k->E->owner[k->gi] : k->gi].name;
	return suffix ? cu_fmt(k->a, "%s_%s", base, suffix) : base;
}

/* t_NAME: the pointer of tensor id in the group's code.  The group's
 * launches name their tensors through this alone, so the tensors it is
 * asked for, in order (Emit.params), are what another group that shares
 * the code passes in their place; the key holds their canonical names. */
const char *cu_tensor_param(const Kern *k, int id)
{
	Emit *E = k->E;
	const char *s = cu_fmt(k->a, "t_%s", cu_name(k, id));
	if (E->canon) {
		for (const char *c = s; *c; c++)
			fg_vec_push(E->a, &E->key, *c);
		fg_vec_push(E->a, &E->key, ';');
		return s;
	}
	for (int i = 0; i < E->params.n; i++)
		if (E->params.v[i] == id)
			return s;
	fg_vec_push(E->a, &E->params, id);
	return s;
}

void cu_kern_init(Kern *k, Emit *E, int gi)
{
	memset(k, 0, sizeof *k);
	k->E = E;
	k->a = E->a;
	k->g = E->g;
	k->plan = E->plan;
	k->gi = gi;
	k->gr = &E->plan->groups[gi];
	k->mm = -1;
	k->st_id = -1;
	k->unscaled = k->unscaled_to = -1;
	k->used = fg_arena_alloc(E->a, (size_t)k->gr->nreads + 1);
	int64_t big = 0;
	for (int i = 0; i < k->gr->nnodes; i++) {
		const FgNode *n = &E->g->nodes[k->gr->nodes[i]];
		big = cu_numel(&n->shape) > big ? cu_numel(&n->shape) : big;
		for (int j = 0; j < n->nin; j++)
			big = cu_numel(cu_shape_of(k, n->in[j])) > big ? cu_numel(cu_shape_of(k, n->in[j])) : big;
	}
	/* 32-bit indices while every index and a grid stride stay below 2^31 */
	int narrow = big + ((int64_t)MAX_GRID * LOOP_BLOCK) < INT32_MAX;
	k->idx = narrow ? "int" : "int64_t";
	cu_path(E, gi, narrow ? CU_PATH_INDEX32 : CU_PATH_INDEX64);
	for (int i = 0; i < k->gr->nnodes; i++) {
		E->member[k->gr->nodes[i]] = gi + 1;
		if (E->local)
			E->local[k->gr->nodes[i]] = i + 1;
	}
	for (int r = 0; r < k->gr->nreads && E->local; r++)
		E->local[k->gr->reads[r]] = -(r + 1);
}

void cu_kern_done(Kern *k)
{
	for (int i = 0; i < k->gr->nnodes; i++) {
		k->E->member[k->gr->nodes[i]] = 0;
		if (k->E->local)
			k->E->local[k->gr->nodes[i]] = 0;
	}
	for (int r = 0; r < k->gr->nreads && k->E->local; r++)
		k->E->local[k->gr->reads[r]] = 0;
}

/* The comment above a group's kernel: its kind and space, then each op
 * with its operands, type and source location, in aligned columns. */
void cu_emit_comment(Emit *E, int gi, const char *what)
{
	const FgGroup *gr = &E->plan->groups[gi];
	if (E->canon || E->quiet)
		return;
	const char *src = cu_in_comment(E->a, E->d->src ? E->d->src->name : "");
	const char **col[3];
	int w[3] = {0, 0, 0}, nrow = 0;
	for (int c = 0; c < 3; c++)
		col[c] = fg_arena_array(E->a, (size_t)gr->nnodes + 1, sizeof(char *));
	for (int i = 0; i < gr->nnodes; i++) {
		int id = gr->nodes[i];
		const FgNode *n = &E->g->nodes[id];
		if (n->op == FG_OP_CONST)
			continue;
		const char *ops = "";
		for (int j = 0; j < n->nin; j++) {
			const FgNode *o = &E->g->nodes[n->in[j]];
			const char *s = o->op == FG_OP_CONST ? cu_fmt(E->a, "%.9g", o->a.value) : E->plan->names[n->in[j]];
			ops = cu_fmt(E->a, "%s%s%s", ops, j ? ", " : "", s);
		}
		col[0][nrow] = cu_fmt(E->a, "%s = %s(%s)", E->plan->names[id], fg_op_info[n->op].name, ops);
		col[1][nrow] = cu_shape_str(E->a, n->dt, &n->shape);
		col[2][nrow] = cu_fmt(E->a, "%s:%d:%d%s%s%s", src, n->loc.line, n->loc.col, n->composite ? "  (from " : "",
				   n->composite ? n->composite : "", n->composite ? ")" : "");
		for (int c = 0; c < 2; c++)
			w[c] = (int)strlen(col[c][nrow]) > w[c] ? (int)strlen(col[c][nrow]) : w[c];
		nrow++;
	}
	cu_out(E, "/*\n * %s: %s\n", gr->name, what);
	for (int r = 0; r < nrow; r++)
		cu_out(E, " *   %-*s  %-*s  %s\n", w[0], col[0][r], w[1], col[1][r], col[2][r]);
	cu_out(E, " * reads:");
	for (int i = 0; i < gr->nreads; i++)
		cu_out(E, " %s", E->plan->names[gr->reads[i]]);
	cu_out(E, "%s\n * writes:", gr->nreads ? "" : " nothing");
	for (int i = 0; i < gr->nwrites; i++)
		cu_out(E, " %s (%s)", E->plan->names[gr->writes[i]], fg_reason_name[E->plan->why[gr->writes[i]]]);
	cu_out(E, "\n");
	if (E->sharers && E->sharers[gi] > 1) {
		/* the groups that launch these kernels on their own tensors */
		const char *line = cu_fmt(E->a, " * shared by %d groups, each on its own tensors:", E->sharers[gi]);
		for (int g = gi; g < E->plan->ngroups; g++) {
			if (E->owner[g] != gi)
				continue;
			if (strlen(line) > 72) {
				cu_out(E, "%s\n", line);
				line = " *  ";
			}
			line = cu_fmt(E->a, "%s %d", line, g);
		}
		cu_out(E, "%s\n", line);
	}
	if (E->group_paths && E->group_paths[gi])
		cu_out(E, " * paths: %s\n", cu_path_names(E->a, E->group_paths[gi]));
	cu_out(E, " */\n");
}

static const char *const path_name[CU_PATH_COUNT] = {
#define X(id, name) [CU_PATH_##id] = name,
	CU_PATHS(X)
#undef X
};

void cu_path(Emit *E, int gi, CuPath p)
{
	E->paths |= (uint64_t)1 << p;
	if (E->group_paths)
		E->group_paths[gi] |= (uint64_t)1 << p;
}

CuPath cu_path_named(const char *name)
{
	for (int p = 0; p < CU_PATH_COUNT; p++)
		if (strcmp(path_name[p], name) == 0)
			return (CuPath)p;
	fg_die("no emitter path is named %s", name);
}

const char *cu_path_names(FgArena *a, uint64_t mask)
{
	const char *s = "";
	for (int p = 0; p < CU_PATH_COUNT; p++)
		if (mask >> p & 1)
			s = cu_fmt(a, "%s%s%s", s, *s ? " " : "", path_name[p]);
	return s;
}

/* Prints a kernel: signature from the reads it used and its writes, body
 * from scope 0.  Returns the host's argument list. */
const char *cu_emit_kernel(Kern *k, const char *name, int block, const Param *extra, int nextra,
			       int with_writes)
{
	FG_VEC(Param) ps = {0};
	for (int i = 0; i < nextra; i++)
		fg_vec_push(k->a, &ps, extra[i]);
	for (int r = 0; r < k->gr->nreads; r++) {
		int id = k->gr->reads[r];
		if (!k->used[r])
			continue;
		Param p = {cu_fmt(k->a, "const %s *__restrict__ %s", fg_dtype_info[k->g->nodes[id].dt].cuda_store, cu_tensor_param(k, id)),
			   cu_tensor_param(k, id)};
		fg_vec_push(k->a, &ps, p);
	}
	for (int w = 0; with_writes && w < k->gr->nwrites; w++) {
		int id = k->gr->writes[w];
		Param p = {cu_fmt(k->a, "%s *__restrict__ %s", fg_dtype_info[k->g->nodes[id].dt].cuda_store, cu_tensor_param(k, id)),
			   cu_tensor_param(k, id)};
		fg_vec_push(k->a, &ps, p);
	}
	cu_drop_unused(k, &k->lines[0]);
	Emit *E = k->E;
	const char *bounds = k->min_blocks ? cu_fmt(k->a, "%d, %d", block, k->min_blocks) : cu_fmt(k->a, "%d", block);
	cu_out(E, "__global__ void __launch_bounds__(%s)%s%s\n%s(", bounds, k->attrs ? " " : "", k->attrs ? k->attrs : "",
	       name);
	const char *args = "";
	for (int i = 0; i < ps.n; i++) {
		cu_out(E, "%s%s", i ? ",\n\t" : "", ps.v[i].decl);
		args = cu_fmt(k->a, "%s%s%s", args, i ? ", " : "", ps.v[i].arg);
	}
	cu_out(E, ")\n{\n");
	if (!k->plan->opt.no_pdl)
		cu_out(E, "\tfg_grid_wait();\n");  /* before any load or store (fg_device.cuh) */
	for (int i = 0; i < k->lines[0].n; i++)
		cu_out(E, "\t%s\n", k->lines[0].v[i].text);
	cu_out(E, "}\n\n");
	return args;
}

void cu_use_scratch(Emit *E, int gi, int64_t bytes)
{
	if (bytes > E->scratch)
		E->scratch = bytes;
	E->scratch_io[gi] += 2 * bytes;
}

void cu_use_counters(Emit *E, int64_t n)
{
	if (n > E->counters)
		E->counters = n;
}

void cu_reread(Emit *E, int gi, int64_t bytes)
{
	E->scratch_io[gi] = fg_bytes_add(E->scratch_io[gi], bytes);
}

/* Records launch `kernel` of group gi, enqueued by the statement `line`
 * (none for a cuBLASLt call: the caller wrote it), then its check, which
 * counts launches from the group's first (`launch`, program.c). */
void cu_add_call(Emit *E, const char *kernel, int gi, int64_t grid, int64_t block, const char *line)
{
	Launch l = {kernel, gi, grid, block, {0, 0, 0, 0}};
	fg_vec_push(E->a, &E->launches, l);
	if (line)
		fg_vec_push(E->a, &E->run, line);
	int at = E->launches.n - 1 - E->launch0;
	fg_vec_push(E->a, &E->run, at ? cu_fmt(E->a, "fgrt_launched(ctx, launch + %d);", at) : "fgrt_launched(ctx, launch);");
}

/* The cuBLASLt plan slot of FgrtGemm initializer def (the group's matmul,
 * named by note): one slot for equal ones, which may share a plan.  The
 * group's launches name it `slot`. */
int cu_add_gemm(Emit *E, const char *def, const char *note)
{
	int slot = 0;
	while (slot < E->gemms.n && strcmp(E->gemms.v[slot], def) != 0)
		slot++;
	if (slot == E->gemms.n) {
		fg_vec_push(E->a, &E->gemms, def);
		fg_vec_push(E->a, &E->gemm_notes, note);
	}
	E->slot = slot;
	return slot;
}

void cu_add_launch(Emit *E, const char *kernel, int gi, int64_t grid, int64_t block, const char *args)
{
	cu_add_launch_smem(E, kernel, gi, grid, block, 0, 1, args);
}

/* The statement that sets attribute attr of kernel to value before its
 * first launch on each device (fgrt_func_attr): the attribute stays with
 * the kernel on that device, and setting it is no stream work, so a first
 * launch inside a CUDA-graph capture may set it too. */
const char *cu_func_attr(Emit *E, const char *kernel, const char *attr, int64_t value)
{
	return cu_fmt(E->a, "{ static unsigned char done[FGRT_DEVICES]; fgrt_func_attr((const void *)%s, %s, %lld, done); }",
		      kernel, attr, (long long)value);
}

/* A launch with smem bytes of dynamic shared memory, its blocks in
 * clusters of `cluster` (the kernel's __cluster_dims__; 1: none); past the
 * 48 KiB a kernel may take without asking, it asks first, once per
 * device.  Its shape is recorded for the report (Launch.shape). */
void cu_add_launch_smem(Emit *E, const char *kernel, int gi, int64_t grid, int64_t block, int64_t smem, int cluster,
			const char *args)
{
	if (smem > (48 << 10))
		fg_vec_push(E->a, &E->run, cu_func_attr(E, kernel, "cudaFuncAttributeMaxDynamicSharedMemorySize", smem));
	const char *shape = cu_fmt(E->a, "%lld, %lld, %lld, ctx->stream", (long long)grid, (long long)block, (long long)smem);
	cu_add_call(E, kernel, gi, grid, block,
		    block <= 0 ? NULL
		    : E->plan->opt.no_pdl ? cu_fmt(E->a, "%s<<<%s>>>(%s);", kernel, shape, args)
					 : cu_fmt(E->a, "fg_launch(%s, %s%s%s);", kernel, shape, *args ? ", " : "", args));
	if (block > 0)
		E->launches.v[E->launches.n - 1].shape = (FgLaunchShape){grid, block, smem, cluster};
}

int64_t cu_grid_for(int64_t n, int64_t block)
{
	int64_t g = (n + block - 1) / block;
	return g < 1 ? 1 : g > MAX_GRID ? MAX_GRID : g;
}

/* A grid-stride loop head over n elements with index variable v. */
const char *cu_stride_loop(Kern *k, const char *v, int64_t n)
{
	if (strcmp(k->idx, "int") == 0)
		return cu_fmt(k->a, "for (int %s = blockIdx.x * blockDim.x + threadIdx.x; %s < %lld; %s += gridDim.x * blockDim.x)",
			   v, v, (long long)n, v);
	return cu_fmt(k->a, "for (int64_t %s = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; %s < %lld; "
		   "%s += (int64_t)gridDim.x * blockDim.x)", v, v, (long long)n, v);
}

/* The group's last member: every other member flows into it. */
int cu_sink(const Kern *k)
{
	int s = -1;
	for (int i = 0; i < k->gr->nnodes; i++)
		if (k->g->nodes[k->gr->nodes[i]].op != FG_OP_CONST && cu_is_member(k, k->gr->nodes[i]))
			s = k->gr->nodes[i];
	return s < 0 ? k->gr->root : s;
}

/* Lanes per thread for a kernel whose vectors run along a dim of size
 * inner: 16 bytes of the narrowest value the group reads or writes (so
 * every access is one or two 16-byte loads or stores), halved until the
 * dim splits into whole vectors and (regs) the registers stay within the
 * limit by the partitioner's model. */
int cu_lane_width(const Kern *k, int64_t inner, int regs)
{
	int size = 4;
	for (int r = 0; r < k->gr->nreads + k->gr->nwrites; r++) {
		int id = r < k->gr->nreads ? k->gr->reads[r] : k->gr->writes[r - k->gr->nreads];
		size = fg_dtype_size[k->g->nodes[id].dt] < size ? fg_dtype_size[k->g->nodes[id].dt] : size;
	}
	int vw = 16 / size > MAX_LANES ? MAX_LANES : 16 / size;
	while (vw > 1 && (inner % vw != 0 || (regs && !fg_kind_regs_fit(&k->plan->opt, fg_kind_regs_at(k->gr, vw)))))
		vw /= 2;
	return vw;
}
