/*
 * test_extract.c - group extraction and the plan verifier
 * (compiler/extract.c) on plans made by hand, so that they test this file
 * and not passes/fuse.c: one group per op, everything in one group, and a
 * three-group plan cut by value.  Extracted groups must print as .fg that
 * parses and builds again with the right inputs and outputs; legal plans
 * must verify; illegal ones (a read before any write, an output nobody
 * writes, an operand the group neither reads nor computes) and plans whose
 * materialized roundings change the result must not.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg.h"

typedef struct T {
	FgArena arena;
	FgSource src;
	FgDiag d;
	FgGraph g;
	FgPlan plan;
	FILE *out;              /* diagnostics, collected in msgs */
	char *msgs;
	size_t msglen;
} T;

/* Parses, builds and expands text; the plan is empty until a plan_*
 * helper fills it. */
static T *t_new(const char *text)
{
	T *t = calloc(1, sizeof *t);
	FgProgram prog;

	fg_arena_init(&t->arena);
	t->src.name = "t.fg";
	t->src.text = text;
	t->src.len = strlen(text);
	t->out = open_memstream(&t->msgs, &t->msglen);
	t->d.src = &t->src;
	t->d.out = t->out;
	ck_assert_int_eq(fg_parse(&t->arena, &t->d, &t->src, &prog), 0);
	ck_assert_int_eq(fg_ir_build(&t->arena, &t->d, &prog, NULL, 0, &t->g), 0);
	fg_pass_expand(&t->g);
	t->plan.g = &t->g;
	t->plan.names = fg_ir_names(&t->g);
	return t;
}

static const char *t_msgs(T *t)
{
	fflush(t->out);
	return t->msgs ? t->msgs : "";
}

static void t_done(T *t)
{
	fclose(t->out);
	free(t->msgs);
	fg_arena_free(&t->arena);
	free(t);
}

static int node_id(const T *t, const char *name)
{
	for (int i = 0; i < t->g.nnodes; i++)
		if (strcmp(t->plan.names[i], name) == 0)
			return i;
	ck_abort_msg("no node named %s", name);
	return -1;
}

static int is_source(const FgNode *n)
{
	return fg_op_info[n->op].cls == FG_CLASS_SOURCE;
}

static int *ids(T *t, int n)
{
	return fg_arena_array(&t->arena, (size_t)n + 1, sizeof(int));
}

/* Appends id to a group's list unless it is there already. */
static void push_once(int *list, int *n, int id)
{
	for (int i = 0; i < *n; i++)
		if (list[i] == id)
			return;
	list[(*n)++] = id;
}

/* A group computing nodes [from, to) (sources skipped), reading every
 * non-constant operand computed outside it, writing what `writes` flags
 * among its members. */
static void add_group(T *t, int from, int to, const unsigned char *writes)
{
	FgGroup *gr = &t->plan.groups[t->plan.ngroups++];
	int n = t->g.nnodes;

	gr->nodes = ids(t, n);
	gr->reads = ids(t, n);
	gr->writes = ids(t, n);
	for (int id = from; id < to; id++) {
		const FgNode *x = &t->g.nodes[id];
		if (x->op == FG_OP_CONST)
			gr->nodes[gr->nnodes++] = id;
		if (is_source(x))
			continue;
		for (int k = 0; k < x->nin; k++) {
			int o = x->in[k];
			if (t->g.nodes[o].op != FG_OP_CONST && (o < from || is_source(&t->g.nodes[o])))
				push_once(gr->reads, &gr->nreads, o);
		}
		gr->nodes[gr->nnodes++] = id;
		if (writes[id])
			gr->writes[gr->nwrites++] = id;
	}
}

/* Per node: an output, a saved value, or a computed value read across a
 * cut. */
static unsigned char *needed(T *t, const int *cuts, int ncuts)
{
	unsigned char *w = fg_arena_alloc(&t->arena, (size_t)t->g.nnodes + 1);

	for (int i = 0; i < t->g.noutputs; i++)
		w[t->g.outputs[i]] = 1;
	for (int id = 0; id < t->g.nnodes; id++) {
		const FgNode *x = &t->g.nodes[id];
		if (x->flags & FG_NF_SAVED)
			w[id] = 1;
		for (int k = 0; k < x->nin; k++)
			for (int c = 0; c < ncuts; c++)
				if (x->in[k] < cuts[c] && id >= cuts[c] && !is_source(&t->g.nodes[x->in[k]]))
					w[x->in[k]] = 1;
	}
	return w;
}

/* Groups [cuts[i], cuts[i+1]) in order; cuts[0] = 0, the last = nnodes. */
static void plan_cuts(T *t, const int *cuts, int ncuts)
{
	unsigned char *w = needed(t, cuts, ncuts);

	t->plan.groups = fg_arena_array(&t->arena, (size_t)ncuts, sizeof(FgGroup));
	t->plan.ngroups = 0;
	for (int i = 0; i + 1 < ncuts; i++)
		add_group(t, cuts[i], cuts[i + 1], w);
}

/* One group per op, every op written: the unfused plan. */
static void plan_per_op(T *t)
{
	int n = t->g.nnodes, ncuts = 0;
	int *cuts = ids(t, n + 1);

	for (int id = 0; id < n; id++)
		if (!is_source(&t->g.nodes[id]))
			cuts[ncuts++] = id;
	cuts[ncuts++] = n;
	plan_cuts(t, cuts, ncuts); /* sources before the first op: no group */
}

static void plan_one(T *t)
{
	int cuts[2] = {0, t->g.nnodes};
	plan_cuts(t, cuts, 2);
}

/* fg_plan_verify's verdict, its printed lines kept out of the test log. */
static int verify(T *t, uint64_t seed)
{
	fflush(stdout);
	FgVerifyOptions o = {seed, FG_INTERP_F64, 0, NULL};
	return fg_plan_verify(&t->plan, &o, &t->d);
}

/* ---------------------------------------------------------- extraction */

static const char *const three_groups =
	"graph t {\n"
	"  input x : f32[4, 8]\n"
	"  param w : f32[8]\n"
	"  a = exp(x) * 2\n"
	"  b = a + w\n"
	"  c = relu(b) @save\n"
	"  d = sum(c * 0.5, axis=[1])\n"
	"  output d, a\n"
	"}\n";

/* Groups {a}, {b, c}, {d}. */
static void plan_three(T *t)
{
	int cuts[4] = {0, node_id(t, "a") + 1, node_id(t, "c") + 1, t->g.nnodes};
	plan_cuts(t, cuts, 4);
}

/* Prints ex, then parses and builds the text into a fresh T. */
static T *reparse(const FgGraph *ex, char **text)
{
	size_t len;
	FILE *f = open_memstream(text, &len);

	fg_ir_print(f, ex);
	fclose(f);
	return t_new(*text);
}

static const char *input_decl(const FgGraph *g, int k)
{
	return g->nodes[g->inputs[k]].op == FG_OP_PARAM ? "param" : "input";
}

START_TEST(extract_middle_group)
{
	T *t = t_new(three_groups);
	FgGraph ex;
	char *text = NULL, ty[64];

	plan_three(t);
	ck_assert_int_eq(t->plan.ngroups, 3);
	fg_extract_group(&t->plan, 1, &ex);
	ck_assert_str_eq(ex.name, "t_g1");
	T *r = reparse(&ex, &text);
	const FgGraph *g = &r->g;
	ck_assert_msg(strstr(text, "graph t_g1 {") != NULL, "%s", text);
	ck_assert_msg(strstr(text, "@save") == NULL, "%s", text);
	ck_assert_int_eq(g->ninputs, 2);
	ck_assert_str_eq(g->nodes[g->inputs[0]].name, "a");
	ck_assert_str_eq(input_decl(g, 0), "input");
	ck_assert_str_eq(g->nodes[g->inputs[1]].name, "w");
	ck_assert_str_eq(input_decl(g, 1), "param");
	ck_assert_str_eq(fg_type_str(ty, sizeof ty, g->nodes[g->inputs[0]].dt,
				     &g->nodes[g->inputs[0]].shape), "f32[4,8]");
	ck_assert_int_eq(g->noutputs, 1);
	ck_assert_str_eq(g->nodes[g->outputs[0]].name, "c");
	ck_assert_int_eq(g->nodes[g->outputs[0]].op, FG_OP_RELU);
	ck_assert_uint_eq(g->nodes[g->outputs[0]].flags & FG_NF_SAVED, 0);
	ck_assert_int_eq(r->g.nodes[node_id(r, "b")].op, FG_OP_ADD);
	free(text);
	t_done(r);
	t_done(t);
}
END_TEST

/* The printed graph is a fixed point of print(parse(.)). */
START_TEST(extract_prints_back_the_same)
{
	T *t = t_new(three_groups);
	FgGraph ex;
	char *text = NULL, *again = NULL;
	size_t len;

	plan_three(t);
	for (int gi = 0; gi < t->plan.ngroups; gi++) {
		fg_extract_group(&t->plan, gi, &ex);
		T *r = reparse(&ex, &text);
		FILE *f = open_memstream(&again, &len);
		fg_ir_print(f, &r->g);
		fclose(f);
		ck_assert_str_eq(again, text);
		free(text);
		free(again);
		t_done(r);
	}
	t_done(t);
}
END_TEST

/* Constants the members use travel with them; temporaries keep the plan's
 * _ID names; a group's several writes are its outputs in order. */
START_TEST(extract_whole_softmax)
{
	T *t = t_new("graph s {\n"
		     "  input x : f16[3, 5]\n"
		     "  y = softmax(x * 0.25) @save\n"
		     "  z = y + 1\n"
		     "  output z\n"
		     "}\n");
	FgGraph ex;
	char *text = NULL;

	plan_one(t);
	fg_extract_group(&t->plan, 0, &ex);
	T *r = reparse(&ex, &text);
	ck_assert_int_eq(r->g.ninputs, 1);
	ck_assert_int_eq(r->g.noutputs, 2);
	ck_assert_str_eq(r->g.nodes[r->g.outputs[0]].name, "y");
	ck_assert_str_eq(r->g.nodes[r->g.outputs[1]].name, "z");
	ck_assert_msg(strstr(text, "0.25") != NULL, "%s", text);
	ck_assert_msg(strstr(text, "# softmax at") != NULL, "%s", text);
	free(text);
	t_done(r);
	t_done(t);
}
END_TEST

/* A group using a value it neither reads nor computes is a bug in the
 * pass that made the plan. */
START_TEST(extract_missing_operand_dies)
{
	T *t = t_new(three_groups);
	FgGraph ex;

	plan_three(t);
	t->plan.groups[1].nreads = 1; /* drops w */
	fg_extract_group(&t->plan, 1, &ex);
}
END_TEST

/* ------------------------------------------------------------ verifier */

static const char *const mixed =
	"graph m {\n"
	"  input x : f16[6, 9]\n"
	"  param w : f16[9, 5]\n"
	"  param ga : f16[5]\n"
	"  param be : f16[5]\n"
	"  input k : i32[6, 9]\n"
	"  s = softmax(x, axis=[1]) @save\n"
	"  h = gelu(matmul(s, w))\n"
	"  n = layernorm(h, ga, be)\n"
	"  q = where(k > 0, x, -x)\n"
	"  i = k * k + 3\n"
	"  b = cast(q, dtype=bf16) * 3\n"
	"  output n, q, i, b, x\n"
	"}\n";

START_TEST(verify_per_op_plan)
{
	T *t = t_new(mixed);

	plan_per_op(t);
	ck_assert_int_ge(t->plan.ngroups, 10);
	ck_assert_int_eq(verify(t, 0), 0);
	ck_assert_int_eq(verify(t, 12345), 0);
	ck_assert_int_eq(t->d.nerrors, 0);
	t_done(t);
}
END_TEST

START_TEST(verify_one_group_plan)
{
	T *t = t_new(mixed);

	plan_one(t);
	ck_assert_int_eq(t->plan.ngroups, 1);
	ck_assert_int_eq(verify(t, 3), 0);
	ck_assert_int_eq(t->d.nerrors, 0);
	t_done(t);
}
END_TEST

START_TEST(verify_three_group_plan)
{
	T *t = t_new(three_groups);

	plan_three(t);
	ck_assert_int_eq(verify(t, 0), 0);
	t_done(t);
}
END_TEST

/* Groups {b, c} before {a}: b reads a before anything wrote it. */
START_TEST(verify_read_before_write_fails)
{
	T *t = t_new(three_groups);

	plan_three(t);
	FgGroup first = t->plan.groups[0];
	t->plan.groups[0] = t->plan.groups[1];
	t->plan.groups[1] = first;
	ck_assert_int_eq(verify(t, 0), 1);
	ck_assert_msg(strstr(t_msgs(t), "group 0 reads a before any group writes it") != NULL, "%s",
		      t_msgs(t));
	t_done(t);
}
END_TEST

START_TEST(verify_unwritten_output_fails)
{
	T *t = t_new(three_groups);

	plan_three(t);
	t->plan.groups[1].nwrites = 0; /* c: read by group 2 and saved */
	ck_assert_int_eq(verify(t, 0), 1);
	ck_assert_msg(strstr(t_msgs(t), "group 2 reads c before any group writes it") != NULL, "%s",
		      t_msgs(t));
	ck_assert_msg(strstr(t_msgs(t), "saved value c is written by no group") != NULL, "%s",
		      t_msgs(t));
	t_done(t);
}
END_TEST

/* Reported as an error, not an internal one, when the verifier sees it. */
START_TEST(verify_missing_operand_fails)
{
	T *t = t_new(three_groups);

	plan_three(t);
	t->plan.groups[1].nreads = 1; /* drops w */
	ck_assert_int_eq(verify(t, 0), 1);
	ck_assert_msg(strstr(t_msgs(t), "group 1 computes b from w, which it neither reads") != NULL,
		      "%s", t_msgs(t));
	t_done(t);
}
END_TEST

/* A legal plan can still be wrong: storing y = x + 1000 in f32 rounds
 * away what z = y - 1000 needs.  Fused, the same graph is exact. */
START_TEST(verify_rounding_loss_fails)
{
	const char *text = "graph c {\n"
			   "  input x : f32[64]\n"
			   "  y = x + 1000\n"
			   "  z = y - 1000\n"
			   "  output z\n"
			   "}\n";
	T *t = t_new(text);

	plan_per_op(t);
	ck_assert_int_eq(verify(t, 0), 1);
	ck_assert_msg(strstr(t_msgs(t), "differ from the op-by-op evaluation in 1 of 1") != NULL, "%s",
		      t_msgs(t));
	t_done(t);
	t = t_new(text);
	plan_one(t);
	ck_assert_int_eq(verify(t, 0), 0);
	t_done(t);
}
END_TEST

static Suite *extract_suite(void)
{
	Suite *s = suite_create("extract");
	TCase *tc = tcase_create("extract");

	tcase_add_test(tc, extract_middle_group);
	tcase_add_test(tc, extract_prints_back_the_same);
	tcase_add_test(tc, extract_whole_softmax);
	tcase_add_test_raise_signal(tc, extract_missing_operand_dies, SIGABRT);
	suite_add_tcase(s, tc);
	tc = tcase_create("verify");
	tcase_add_test(tc, verify_per_op_plan);
	tcase_add_test(tc, verify_one_group_plan);
	tcase_add_test(tc, verify_three_group_plan);
	tcase_add_test(tc, verify_read_before_write_fails);
	tcase_add_test(tc, verify_unwritten_output_fails);
	tcase_add_test(tc, verify_missing_operand_fails);
	tcase_add_test(tc, verify_rounding_loss_fails);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(extract_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
