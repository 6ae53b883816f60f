/*
 * extract.c - one fusion group as a graph of its own (`fgc extract`), and
 * the plan verifier (`fgc verify`) that runs a whole plan that way on the
 * CPU, group by group, as a fused binary would.
 *
 * Extraction: the group's reads become inputs (a param stays a param), its
 * members are copied in order with their operands renumbered, and its
 * writes become the outputs, plain ones (no @save, no @materialize: inside
 * one group they mean nothing, and outside it every write is a result).
 * Every node keeps the plan's printable name, so the printed graph reads
 * like the original and parses back.  Constants a member uses come along
 * even when the plan does not list them: they live in no buffer and cost
 * nothing.  A group that is not well formed (an operand neither read nor
 * computed, a write that is not computed, a read listed twice) is a bug in
 * the pass that made it, hence fg_die.
 *
 * Verification mimics memory: only values some group writes exist between
 * groups, each rounded to its dtype when written, exactly as a kernel
 * stores it; inputs stay as drawn.  A plan is legal when each group reads
 * only inputs and values earlier groups wrote, and every output and saved
 * value is written; it is right when those values agree with the op-by-op
 * evaluation within testing.md's tolerances.  Legality and well-formedness
 * are checked for the whole plan before any arithmetic, so a broken plan
 * gets every problem reported as an error rather than an internal one.
 *
 * Invariants: extraction allocates from the plan graph's arena only; the
 * verifier's buffers are malloc'ed, each materialized value freed after
 * its last reader ran, and everything freed before it returns.
 */
#include <stdlib.h>
#include <string.h>

#include "fg.h"
#include "fgrt.h"

/* compiler/run.c: the inputs `fgc run` draws (to move into fg.h). */

static const FgLoc no_loc = {0, 0};

static int is_input(const FgNode *n)
{
	return n->op == FG_OP_INPUT || n->op == FG_OP_PARAM;
}

/* The plan's names, or the printer's when a hand-made plan has none. */
static const char **plan_names(const FgPlan *p)
{
	return p->names ? p->names : fg_ir_names(p->g);
}

/* ------------------------------------------------------------ extraction */

static void add_input(const FgGraph *g, const char **names, int id, int *local, FgGraph *out)
{
	const FgNode *src = &g->nodes[id];
	FgNode n;

	if (local[id] >= 0)
		fg_die("%s reads %s twice", out->name, names[id]);
	memset(&n, 0, sizeof n);
	n.op = src->op == FG_OP_PARAM ? FG_OP_PARAM : FG_OP_INPUT;
	n.dt = src->dt;
	n.shape = src->shape;
	n.loc = src->loc;
	n.name = names[id];
	n.fuse_block = -1; /* declarations never sit in fuse { } */
	n.a.input = out->ninputs;
	local[id] = fg_ir_add(out, &n);
	out->inputs[out->ninputs++] = local[id];
}

/* Copies node id, its operands already copied or constants. */
static void add_member(const FgGraph *g, const char **names, int id, int *local, FgGraph *out)
{
	FgNode n = g->nodes[id];

	n.in = fg_arena_array(out->arena, (size_t)(n.nin ? n.nin : 1), sizeof(int));
	for (int k = 0; k < n.nin; k++) {
		int o = g->nodes[id].in[k];
		if (local[o] < 0 && g->nodes[o].op == FG_OP_CONST)
			local[o] = fg_ir_add(out, &g->nodes[o]);
		if (local[o] < 0)
			fg_die("%s computes %s from %s, which it neither reads nor computes", out->name,
			       names[id], names[o]);
		n.in[k] = local[o];
	}
	if (n.op != FG_OP_CONST)
		n.name = names[id];
	n.flags = 0;
	local[id] = fg_ir_add(out, &n);
}

static void add_output(const char **names, int id, const int *local, FgGraph *out)
{
	int x = local[id];

	if (x < 0 || is_input(&out->nodes[x]))
		fg_die("%s writes %s, which it does not compute", out->name, names[id]);
	if (out->nodes[x].flags & FG_NF_OUTPUT)
		fg_die("%s writes %s twice", out->name, names[id]);
	out->nodes[x].flags |= FG_NF_OUTPUT;
	out->outputs[out->noutputs++] = x;
}

/* Group gi into out.  local[] is -1 everywhere on entry and again on
 * return, so that the verifier pays for each group's size, not the
 * graph's. */
static void extract(const FgPlan *p, const char **names, int gi, int *local, FgGraph *out)
{
	const FgGraph *g = p->g;
	const FgGroup *gr = &p->groups[gi];

	memset(out, 0, sizeof *out);
	out->name = fg_arena_printf(g->arena, "%s_g%d", g->name, gi);
	out->arena = g->arena;
	out->syms = g->syms;
	out->nsyms = g->nsyms;
	out->nfuse = g->nfuse;
	out->inputs = fg_arena_array(g->arena, (size_t)gr->nreads + 1, sizeof(int));
	out->outputs = fg_arena_array(g->arena, (size_t)gr->nwrites + 1, sizeof(int));
	for (int i = 0; i < gr->nreads; i++)
		add_input(g, names, gr->reads[i], local, out);
	for (int i = 0; i < gr->nnodes; i++) {
		int id = gr->nodes[i];
		const FgNode *n = &g->nodes[id];
		if (is_input(n) && local[id] < 0)
			fg_die("%s has input %s as a member but does not read it", out->name, names[id]);
		if (is_input(n) || (n->op == FG_OP_CONST && local[id] >= 0))
			continue; /* read already, or copied for an earlier member */
		if (local[id] >= 0)
			fg_die("%s lists %s as read or member twice", out->name, names[id]);
		add_member(g, names, id, local, out);
	}
	for (int i = 0; i < gr->nwrites; i++)
		add_output(names, gr->writes[i], local, out);
	for (int i = 0; i < gr->nreads; i++)
		local[gr->reads[i]] = -1;
	for (int i = 0; i < gr->nnodes; i++) {
		const FgNode *n = &g->nodes[gr->nodes[i]];
		local[gr->nodes[i]] = -1;
		for (int k = 0; k < n->nin; k++)
			local[n->in[k]] = -1;
	}
	fg_ir_check(out);
}

void fg_extract_group(const FgPlan *plan, int gi, FgGraph *out)
{
	size_t nn = (size_t)plan->g->nnodes;
	int *local = malloc((nn ? nn : 1) * sizeof *local);

	FG_ASSERT(gi >= 0 && gi < plan->ngroups);
	if (local == NULL)
		fg_die("out of memory extracting group %d", gi);
	for (size_t i = 0; i < nn; i++)
		local[i] = -1;
	extract(plan, plan_names(plan), gi, local, out);
	free(local);
}

/* -------------------------------------------------------------- legality */

enum {
	M_MAT = 1,              /* in memory now: an input, or written */
	M_READ = 2,             /* read by the group being checked */
	M_MEMBER = 4,           /* computed by it */
	M_WRITE = 8,            /* written by it */
	M_GROUP = M_READ | M_MEMBER | M_WRITE,
};

/* What one verification holds; every pointer is malloc'ed. */
typedef struct Verify {
	const FgPlan *p;
	const FgVerifyOptions *o;
	const FgGraph *g;
	const char **names;
	FgDiag *d;
	unsigned char *mark;    /* per node: M_* */
	unsigned char *final;   /* per node: an output or saved value */
	unsigned char *read_back;/* per node: a float value a group reads back */
	unsigned char *gate;    /* per node: FGRT_GATE_* bits */
	int *local;             /* per node: its id in the extracted group */
	int *last_read;         /* per node: the last group reading it, -1 */
	double **in;            /* per graph input: as drawn */
	double **mat;           /* per node: its value in memory, or NULL */
	double **base;          /* per node: the RMSE gate's baseline, the
				   graph in its dtypes (--precision kernel),
				   or NULL */
} Verify;

static int valid_ids(Verify *v, int gi, const int *ids, int n)
{
	for (int i = 0; i < n; i++)
		if (ids[i] < 0 || ids[i] >= v->g->nnodes) {
			fg_error(v->d, no_loc, "group %d lists node %d, which is not in the graph", gi, ids[i]);
			return 0;
		}
	return 1;
}

static void check_reads(Verify *v, int gi, const FgGroup *gr)
{
	for (int i = 0; i < gr->nreads; i++) {
		int id = gr->reads[i];
		if (v->mark[id] & M_READ)
			fg_error(v->d, no_loc, "group %d reads %s twice", gi, v->names[id]);
		else if (!(v->mark[id] & M_MAT))
			fg_error(v->d, no_loc, "group %d reads %s before any group writes it", gi, v->names[id]);
		v->mark[id] |= M_READ;
	}
}

/* Each member's operands must be read, computed earlier in the group, or
 * constants. */
static void check_members(Verify *v, int gi, const FgGroup *gr)
{
	for (int i = 0; i < gr->nnodes; i++) {
		int id = gr->nodes[i];
		const FgNode *n = &v->g->nodes[id];
		if (is_input(n)) {
			if (!(v->mark[id] & M_READ))
				fg_error(v->d, no_loc, "group %d lists input %s as a member but does not read it",
					 gi, v->names[id]);
			continue;
		}
		if (v->mark[id] & (M_READ | M_MEMBER)) {
			fg_error(v->d, no_loc, "group %d both reads and computes %s, or computes it twice",
				 gi, v->names[id]);
			continue;
		}
		for (int k = 0; k < n->nin; k++) {
			int o = n->in[k];
			if (!(v->mark[o] & (M_READ | M_MEMBER)) && v->g->nodes[o].op != FG_OP_CONST)
				fg_error(v->d, no_loc, "group %d computes %s from %s, which it neither reads "
					 "nor computes before it", gi, v->names[id], v->names[o]);
		}
		v->mark[id] |= M_MEMBER;
	}
}

static void check_writes(Verify *v, int gi, const FgGroup *gr)
{
	for (int i = 0; i < gr->nwrites; i++) {
		int id = gr->writes[i];
		if (!(v->mark[id] & M_MEMBER))
			fg_error(v->d, no_loc, "group %d writes %s, which it does not compute", gi, v->names[id]);
		else if (v->mark[id] & M_WRITE)
			fg_error(v->d, no_loc, "group %d writes %s twice", gi, v->names[id]);
		v->mark[id] |= M_WRITE;
	}
}

static void clear_group_marks(Verify *v, const FgGroup *gr)
{
	for (int i = 0; i < gr->nreads; i++)
		v->mark[gr->reads[i]] &= (unsigned char)~M_GROUP;
	for (int i = 0; i < gr->nnodes; i++)
		v->mark[gr->nodes[i]] &= (unsigned char)~M_GROUP;
	for (int i = 0; i < gr->nwrites; i++)
		v->mark[gr->writes[i]] &= (unsigned char)~M_GROUP;
}

/* One group in launch order: well formed, and reading only what is in
 * memory by then.  Its writes are in memory afterwards. */
static void check_group(Verify *v, int gi)
{
	const FgGroup *gr = &v->p->groups[gi];

	if (!valid_ids(v, gi, gr->reads, gr->nreads) || !valid_ids(v, gi, gr->nodes, gr->nnodes) ||
	    !valid_ids(v, gi, gr->writes, gr->nwrites))
		return;
	check_reads(v, gi, gr);
	check_members(v, gi, gr);
	check_writes(v, gi, gr);
	clear_group_marks(v, gr);
	for (int i = 0; i < gr->nwrites; i++)
		v->mark[gr->writes[i]] |= M_MAT;
	for (int i = 0; i < gr->nreads; i++)
		v->last_read[gr->reads[i]] = gi;
}

/* The error count; on 0 the plan can be run and every final value will be
 * in memory at the end. */
static int check_plan(Verify *v)
{
	const FgGraph *g = v->g;
	int before = v->d->nerrors;

	for (int k = 0; k < g->ninputs; k++)
		v->mark[g->inputs[k]] |= M_MAT;
	for (int gi = 0; gi < v->p->ngroups; gi++)
		check_group(v, gi);
	for (int id = 0; id < g->nnodes; id++)
		if (v->final[id] && !(v->mark[id] & M_MAT))
			fg_error(v->d, no_loc, "%s %s is written by no group",
				 g->nodes[id].flags & FG_NF_SAVED ? "saved value" : "output", v->names[id]);
	return v->d->nerrors - before;
}

/* ------------------------------------------------------------- execution */

/* Whether id's memory can go once group gi ran: no later group reads it
 * and nobody compares it at the end.  Inputs belong to v->in. */
static int dies_after(const Verify *v, int id, int gi)
{
	return !is_input(&v->g->nodes[id]) && !v->final[id] && v->last_read[id] <= gi;
}

static void release_dead(Verify *v, int gi)
{
	const FgGroup *gr = &v->p->groups[gi];

	for (int i = 0; i < gr->nreads + gr->nwrites; i++) {
		int id = i < gr->nreads ? gr->reads[i] : gr->writes[i - gr->nreads];
		if (dies_after(v, id, gi)) {
			free(v->mat[id]);
			v->mat[id] = NULL;
		}
	}
}

/* Takes the values ex computed for gi's writes, rounded as a kernel's
 * stores round them. */
static void store_writes(Verify *v, const FgGroup *gr, const FgGraph *ex, double **vals)
{
	for (int j = 0; j < gr->nwrites; j++) {
		int id = gr->writes[j], x = ex->outputs[j];
		const FgNode *n = &v->g->nodes[id];
		int64_t cnt = fg_shape_numel(&n->shape);
		double *buf = vals[x];
		FG_ASSERT(buf != NULL);
		for (int64_t i = 0; i < cnt; i++)
			buf[i] = fg_round_to(n->dt, buf[i]);
		free(v->mat[id]);
		v->mat[id] = buf;
		vals[x] = NULL;
	}
}

/* Runs group gi on what is in memory; -1 when memory runs out. */
static int run_group(Verify *v, int gi)
{
	const FgGroup *gr = &v->p->groups[gi];
	FgGraph ex;
	int rc = -1;

	extract(v->p, v->names, gi, v->local, &ex);
	double **xin = calloc((size_t)ex.ninputs + 1, sizeof *xin);
	unsigned char *keep = calloc((size_t)ex.nnodes + 1, 1);
	double **vals = NULL;
	if (xin == NULL || keep == NULL) {
		fg_error(v->d, no_loc, "out of memory running group %d", gi);
		goto out;
	}
	for (int k = 0; k < ex.ninputs; k++) {
		xin[k] = v->mat[gr->reads[k]];
		FG_ASSERT(xin[k] != NULL);
	}
	for (int j = 0; j < ex.noutputs; j++)
		keep[ex.outputs[j]] = 1;
	vals = fg_interp_eval_in(&ex, xin, keep, v->o->precision, v->d);
	if (vals == NULL)
		goto out;
	store_writes(v, gr, &ex, vals);
	release_dead(v, gi);
	rc = 0;
out:
	fg_interp_free(&ex, vals);
	free(keep);
	free(xin);
	return rc;
}

/* ------------------------------------------------------------ comparison */

/* Which gate judges each value (compiler/gates.c), a float value that
 * some group reads back from memory being rounded there.  verify runs a
 * matmul in f64 whatever --tf32 says, so no value takes tf32's gate. */
static void find_gates(Verify *v)
{
	for (int id = 0; id < v->g->nnodes; id++) {
		const FgNode *n = &v->g->nodes[id];
		v->read_back[id] = v->last_read[id] >= 0 && !is_input(n) && fg_dtype_is_float(n->dt);
	}
	fg_gates(v->g, v->read_back, 0, v->gate);
}

static void print_verdict(const FgNode *n, const char *label, const FgrtTol *t, const FgrtCheck *c)
{
	char ty[256], why[1024];

	printf("%-4s %s  %s  max abs err %.3g%s\n", c->ok ? "ok" : "FAIL", label,
	       fg_type_str(ty, sizeof ty, n->dt, &n->shape), c->max_abs_err,
	       fgrt_verdict_str(why, sizeof why, t, c, n->shape.rank, n->shape.d, fg_shape_numel(&n->shape)));
}

/* Compares the plan's value of id with the op-by-op one (ref), after
 * planting --plant's bug into a copy of it; 1 when they disagree, -1 when
 * memory runs out. */
static int compare(Verify *v, int id, const char *prefix, const double *ref)
{
	const FgNode *n = &v->g->nodes[id];
	int64_t cnt = fg_shape_numel(&n->shape);
	size_t bytes = (size_t)(cnt > 0 ? cnt : 1) * sizeof(double);
	double *rounded = malloc(bytes), *got = malloc(bytes);
	FgrtTol t = fgrt_tolerance(fg_dtype_name[n->dt], v->gate[id]);
	FgrtCheck c;
	char label[512];

	if (rounded == NULL || got == NULL) {
		free(rounded);
		free(got);
		fg_error(v->d, no_loc, "out of memory comparing %s", v->names[id]);
		return -1;
	}
	for (int64_t i = 0; i < cnt; i++)
		rounded[i] = fg_round_to(n->dt, ref[i]);
	memcpy(got, v->mat[id], (size_t)cnt * sizeof *got);
	fgrt_plant((FgrtPlant)v->o->plant, got, n->shape.rank, n->shape.d, t.unit_roundoff, n->dt == FG_DT_BOOL);
	fgrt_check_base(got, t.rmse_m > 0 ? ref : rounded, rounded, v->base ? v->base[id] : NULL, cnt, &t,
			&c);
	snprintf(label, sizeof label, "%s%s", prefix, v->names[id]);
	print_verdict(n, label, &t, &c);
	free(rounded);
	free(got);
	return c.ok ? 0 : 1;
}

/* One line per value `fgc run` would write: outputs, then saved values. */
static int compare_all(Verify *v, double **ref)
{
	const FgGraph *g = v->g;
	int bad = 0, total = 0, rc;

	find_gates(v);
	for (int i = 0; i < g->noutputs; i++, total++)
		if ((rc = compare(v, g->outputs[i], "", ref[g->outputs[i]])) != 0) {
			if (rc < 0)
				return 1;
			bad++;
		}
	for (int id = 0; id < g->nnodes; id++) {
		if (!(g->nodes[id].flags & FG_NF_SAVED))
			continue;
		total++;
		if ((rc = compare(v, id, "saved.", ref[id])) != 0) {
			if (rc < 0)
				return 1;
			bad++;
		}
	}
	if (bad)
		fg_error(v->d, no_loc, "the plan's results differ from the op-by-op evaluation in %d of %d values",
			 bad, total);
	return bad ? 1 : 0;
}

/* ----------------------------------------------------------- the verifier */

static int verify_alloc(Verify *v)
{
	size_t nn = (size_t)v->g->nnodes + 1;

	v->mark = calloc(nn, 1);
	v->final = calloc(nn, 1);
	v->read_back = calloc(nn, 1);
	v->gate = calloc(nn, 1);
	v->local = malloc(nn * sizeof *v->local);
	v->last_read = malloc(nn * sizeof *v->last_read);
	v->in = calloc((size_t)v->g->ninputs + 1, sizeof *v->in);
	v->mat = calloc(nn, sizeof *v->mat);
	if (!v->mark || !v->final || !v->read_back || !v->gate || !v->local || !v->last_read || !v->in || !v->mat) {
		fg_error(v->d, no_loc, "out of memory verifying graph '%s' (%d nodes)", v->g->name,
			 v->g->nnodes);
		return -1;
	}
	for (size_t i = 0; i < nn; i++)
		v->local[i] = v->last_read[i] = -1;
	for (int id = 0; id < v->g->nnodes; id++)
		v->final[id] = (v->g->nodes[id].flags & FG_NF_SAVED) != 0;
	for (int i = 0; i < v->g->noutputs; i++)
		v->final[v->g->outputs[i]] = 1;
	return 0;
}

static void verify_free(Verify *v)
{
	const FgGraph *g = v->g;

	for (int id = 0; v->mat && id < g->nnodes; id++)
		if (!is_input(&g->nodes[id]))
			free(v->mat[id]);
	for (int k = 0; v->in && k < g->ninputs; k++)
		free(v->in[k]);
	free(v->mat);
	free(v->in);
	free(v->last_read);
	free(v->local);
	free(v->gate);
	free(v->read_back);
	free(v->final);
	free(v->mark);
}

/* Draws the inputs and runs the plan; the op-by-op values of the final
 * ones, or NULL (reported).  In the kernels' precision, also the graph in
 * its dtypes, the RMSE gate's baseline (as a binary's --check reads it). */
static double **run_both(Verify *v, uint64_t seed)
{
	const FgGraph *g = v->g;

	if (fg_run_inputs(g, NULL, seed, v->d, v->in) != 0)
		return NULL;
	for (int k = 0; k < g->ninputs; k++)
		v->mat[g->inputs[k]] = v->in[k];
	double **ref = fg_interp_eval(g, v->in, v->final, v->d);
	if (ref == NULL)
		return NULL;
	if (v->o->precision == FG_INTERP_KERNEL) {
		v->base = fg_interp_eval_in(g, v->in, v->final, FG_INTERP_IN_DTYPE, v->d);
		for (int id = 0; v->base != NULL && id < g->nnodes; id++)
			for (int64_t i = 0, cnt = v->final[id] ? fg_shape_numel(&g->nodes[id].shape) : 0; i < cnt; i++)
				v->base[id][i] = fg_round_to(g->nodes[id].dt, v->base[id][i]);
		if (v->base == NULL) {
			fg_interp_free(g, ref);
			return NULL;
		}
	}
	for (int gi = 0; gi < v->p->ngroups; gi++)
		if (run_group(v, gi) != 0) {
			fg_interp_free(g, ref);
			return NULL;
		}
	return ref;
}

int fg_plan_verify(const FgPlan *plan, const FgVerifyOptions *o, FgDiag *d)
{
	static const FgVerifyOptions plain = {0, FG_INTERP_F64, 0, NULL};
	Verify v;
	double **ref = NULL;
	int rc = 1;

	memset(&v, 0, sizeof v);
	v.p = plan;
	v.o = o ? o : &plain;
	v.g = plan->g;
	v.names = plan_names(plan);
	v.d = d;
	if (verify_alloc(&v) == 0 && check_plan(&v) == 0 && (ref = run_both(&v, v.o->seed)) != NULL) {
		/* the plan's values before any verdict, as fgc run writes them */
		if (v.o->outputs && fg_run_write(v.g, v.o->outputs, v.mat, d) != 0)
			rc = 1;
		else
			rc = compare_all(&v, ref);
	}
	fg_interp_free(v.g, ref);
	fg_interp_free(v.g, v.base);
	verify_free(&v);
	fflush(stdout);
	return rc;
}
