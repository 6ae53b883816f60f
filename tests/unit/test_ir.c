/*
 * test_ir.c - the IR builder's shape and dtype rules, composite expansion,
 * and the printer's round trip, on programs given as text.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "fg.h"

typedef struct Built {
	FgArena arena;
	FgSource src;
	FgDiag diag;
	FgGraph g;
	int errors;
	char *msgs;             /* everything the diagnostics printed */
	size_t msglen;
} Built;

static Built *build_defs(const char *text, FgDefine *defs, int ndefs)
{
	Built *b = calloc(1, sizeof *b);
	FgProgram prog;
	FILE *out = open_memstream(&b->msgs, &b->msglen);

	fg_arena_init(&b->arena);
	b->src.name = "t.fg";
	b->src.text = text;
	b->src.len = strlen(text);
	b->diag.src = &b->src;
	b->diag.out = out;
	b->errors = fg_parse(&b->arena, &b->diag, &b->src, &prog);
	if (!b->errors)
		b->errors = fg_ir_build(&b->arena, &b->diag, &prog, defs, ndefs, &b->g);
	fclose(out);
	return b;
}

static Built *build(const char *text)
{
	return build_defs(text, NULL, 0);
}

static void done(Built *b)
{
	fg_arena_free(&b->arena);
	free(b->msgs);
	free(b);
}

/* The node bound to `name`. */
static const FgNode *named(const Built *b, const char *name)
{
	for (int i = 0; i < b->g.nnodes; i++)
		if (b->g.nodes[i].name && strcmp(b->g.nodes[i].name, name) == 0)
			return &b->g.nodes[i];
	ck_abort_msg("no node named %s", name);
	return NULL;
}

static void assert_type(const Built *b, const char *name, const char *want)
{
	char buf[256];
	const FgNode *n = named(b, name);

	ck_assert_str_eq(fg_type_str(buf, sizeof buf, n->dt, &n->shape), want);
}

/* Builds text, which must fail with one error whose message holds want
 * at line:col. */
static void assert_error(const char *text, int line, int col, const char *want)
{
	Built *b = build(text);
	char where[64];

	snprintf(where, sizeof where, "t.fg:%d:%d: error: ", line, col);
	ck_assert_msg(b->errors >= 1, "no error for:\n%s", text);
	ck_assert_msg(strstr(b->msgs, where) != NULL, "expected %s in:\n%s", where, b->msgs);
	ck_assert_msg(strstr(b->msgs, want) != NULL, "expected '%s' in:\n%s", want, b->msgs);
	done(b);
}

START_TEST(broadcasting)
{
	Built *b = build("graph t {\n"
			 "  input x : f32[4, 1, 5]\n"
			 "  input y : f32[3, 1]\n"
			 "  input z : f32[]\n"
			 "  a = x + y\n"
			 "  c = a * z + 1\n"
			 "  m = x < 0.5\n"
			 "  w = where(m, x, 0)\n"
			 "  output a, c, m, w\n"
			 "}\n");
	ck_assert_int_eq(b->errors, 0);
	assert_type(b, "a", "f32[4,3,5]");
	assert_type(b, "c", "f32[4,3,5]");
	assert_type(b, "m", "bool[4,1,5]");
	assert_type(b, "w", "f32[4,1,5]");
	done(b);
}
END_TEST

START_TEST(reductions)
{
	Built *b = build("graph t {\n"
			 "  input x : f16[2, 3, 4]\n"
			 "  a = sum(x)\n"
			 "  c = mean(x, axis=-1)\n"
			 "  d = max(x, axis=[0, 2], keepdims=false)\n"
			 "  e = min(x, axis=1, keepdims=false)\n"
			 "  output a, c, d, e\n"
			 "}\n");
	ck_assert_int_eq(b->errors, 0);
	assert_type(b, "a", "f16[1,1,1]");
	assert_type(b, "c", "f16[2,3,1]");
	assert_type(b, "d", "f16[3]");
	assert_type(b, "e", "f16[2,4]");
	ck_assert_uint_eq(named(b, "d")->a.red.axes, 5);
	done(b);
}
END_TEST

START_TEST(layout_and_matmul)
{
	Built *b = build("graph t {\n"
			 "  input x : bf16[2, 1, 3, 4]\n"
			 "  input w : bf16[5, 4, 6]\n"
			 "  y = matmul(x, w)\n"
			 "  t = transpose(y)\n"
			 "  p = transpose(y, perm=[3, 0, 1, 2])\n"
			 "  r = reshape(y, shape=[10, -1])\n"
			 "  s = slice(y, axis=-1, start=-4, end=5)\n"
			 "  c = concat(y, y, y, axis=2)\n"
			 "  k = broadcast_to(w, shape=[3, 5, 4, 6])\n"
			 "  output t, p, r, s, c, k\n"
			 "}\n");
	ck_assert_int_eq(b->errors, 0);
	assert_type(b, "y", "bf16[2,5,3,6]");
	assert_type(b, "t", "bf16[2,5,6,3]");
	assert_type(b, "p", "bf16[6,2,5,3]");
	assert_type(b, "r", "bf16[10,18]");
	assert_type(b, "s", "bf16[2,5,3,3]");
	ck_assert_int_eq(named(b, "s")->a.slice.start, 2);
	assert_type(b, "c", "bf16[2,5,9,6]");
	assert_type(b, "k", "bf16[3,5,4,6]");
	done(b);
}
END_TEST

START_TEST(symbolic_dims)
{
	FgDefine defs[] = {{"B", 7, 0}};
	Built *b = build_defs("graph t {\n"
			      "  input x : f32[B=8192, N=3]\n"
			      "  input y : f32[B, N]\n"
			      "  z = x + y\n"
			      "  output z\n"
			      "}\n",
			      defs, 1);
	ck_assert_int_eq(b->errors, 0);
	assert_type(b, "z", "f32[7,3]");
	ck_assert_int_eq(defs[0].used, 1);
	done(b);
}
END_TEST

START_TEST(numbers_fold_and_adapt)
{
	Built *b = build("graph t {\n"
			 "  input x : f16[4]\n"
			 "  s = 1 / sqrt(16)\n"
			 "  y = x * s\n"
			 "  k = cast(3, dtype=i32)\n"
			 "  output y, k\n"
			 "}\n");
	ck_assert_int_eq(b->errors, 0);
	const FgNode *y = named(b, "y");
	const FgNode *c = &b->g.nodes[y->in[1]];
	ck_assert_int_eq(c->op, FG_OP_CONST);
	ck_assert_int_eq(c->dt, FG_DT_F16);
	ck_assert_double_eq(c->a.value, 0.25);
	assert_type(b, "k", "i32[]");
	done(b);
}
END_TEST

START_TEST(expand_softmax_and_layernorm)
{
	Built *b = build("graph t {\n"
			 "  input x : f32[3, 5]\n"
			 "  param g : f32[5]\n"
			 "  param bb : f32[5]\n"
			 "  s = softmax(x) @save\n"
			 "  l = layernorm(x, g, bb, eps=1e-3)\n"
			 "  output l\n"
			 "}\n");
	ck_assert_int_eq(b->errors, 0);
	fg_pass_expand(&b->g);
	int composites = 0, nreduce = 0;
	for (int i = 0; i < b->g.nnodes; i++) {
		const FgNode *n = &b->g.nodes[i];
		ck_assert_int_ne(fg_op_info[n->op].cls, FG_CLASS_COMPOSITE);
		composites += n->composite != NULL;
		nreduce += fg_op_info[n->op].cls == FG_CLASS_REDUCE;
	}
	ck_assert_int_eq(nreduce, 4);      /* max, sum; mean, mean */
	ck_assert_int_gt(composites, 8);
	ck_assert(named(b, "s")->flags & FG_NF_SAVED);
	ck_assert_int_eq(named(b, "s")->op, FG_OP_DIV);
	ck_assert_int_eq(b->g.nodes[b->g.outputs[0]].op, FG_OP_ADD);
	done(b);
}
END_TEST

/* Drops the printer's trailing comments (which name composites that a
 * re-parse no longer knows of). */
static void strip_comments(char *s)
{
	char *w = s;

	for (char *r = s; *r;) {
		if (r[0] == ' ' && r[1] == ' ' && r[2] == '#') {
			while (*r && *r != '\n')
				r++;
			continue;
		}
		*w++ = *r++;
	}
	*w = 0;
}

/* print -> parse -> print is a fixed point (up to comments). */
START_TEST(printer_round_trip)
{
	const char *src = "graph t {\n"
			  "  input x : f16[B=6, 4]\n"
			  "  input m : bool[6, 4]\n"
			  "  param w : f16[4, 3]\n"
			  "  h = matmul(x, w) * 0.5\n"
			  "  fuse {\n"
			  "    a = gelu(h) @save\n"
			  "    q = where(m, x, -inf)\n"
			  "  }\n"
			  "  s = softmax(q, axis=[0, 1])\n"
			  "  r = rmsnorm(x, x, eps=1e-6) @materialize\n"
			  "  d = dropout(a, p=0.25, seed=7)\n"
			  "  k = x + cast(2, dtype=f16)\n"
			  "  y = cast(sum(a, axis=0, keepdims=false), dtype=f32)\n"
			  "  output y, s, r, d, k\n"
			  "}\n";
	for (int expand = 0; expand < 2; expand++) {
		Built *b = build(src);
		ck_assert_int_eq(b->errors, 0);
		if (expand)
			fg_pass_expand(&b->g);
		char *p1, *p2;
		size_t n1, n2;
		FILE *f = open_memstream(&p1, &n1);
		fg_ir_print(f, &b->g);
		fclose(f);
		Built *b2 = build(p1);
		ck_assert_msg(b2->errors == 0, "dump does not parse:\n%s\n%s", p1, b2->msgs);
		ck_assert_int_eq(b2->g.nnodes, b->g.nnodes);
		f = open_memstream(&p2, &n2);
		fg_ir_print(f, &b2->g);
		fclose(f);
		strip_comments(p1);
		ck_assert_str_eq(p1, p2);
		free(p1);
		free(p2);
		done(b2);
		done(b);
	}
}
END_TEST

START_TEST(errors)
{
	const char *head = "graph t {\n  input x : f32[4, 8]\n";
	struct {
		const char *body;
		int line, col;
		const char *msg;
	} cases[] = {
		{"  y = x + z\n", 3, 11, "unknown name 'z'"},
		{"  y = gleu(x)\n", 3, 7, "did you mean 'gelu'"},
		{"  y = x + reshape(x, shape=[8, 4])\n", 3, 9, "cannot broadcast f32[4,8] with f32[8,4]"},
		{"  y = matmul(x, x)\n", 3, 7, "inner dimensions differ"},
		{"  y = cast(x, dtype=f16) + x\n", 3, 26, "mixed dtypes"},
		{"  y = reshape(x, shape=[5, -1])\n", 3, 24, "cannot reshape f32[4,8]"},
		{"  y = transpose(x, perm=[0, 0])\n", 3, 25, "permutation"},
		{"  y = slice(x, axis=1, start=2, end=9)\n", 3, 37, "out of range"},
		{"  y = where(x, x, x)\n", 3, 13, "bool"},
		{"  y = sum(x, axis=2)\n", 3, 19, "axis 2 is out of range"},
		{"  y = sum(x, axes=1)\n", 3, 14, "no attribute 'axes'"},
		{"  y = dropout(x, p=1.0)\n", 3, 20, "[0, 1)"},
		{"  y = exp(x, x)\n", 3, 7, "takes 1 operand"},
		{"  y = exp(x)\n  y = x\n", 4, 3, "redefinition of 'y'"},
		{"  y = exp(x) @save @save\n", 3, 20, "repeated"},
		{"  y = exp(x) @keep\n", 3, 14, "unknown annotation"},
		{"  y = cast(x)\n", 3, 7, "needs a target"},
		{"  y = exp(cast(x, dtype=i32))\n", 3, 7, "needs float operands"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char text[512];
		snprintf(text, sizeof text, "%s%s  output x\n}\n", head, cases[i].body);
		assert_error(text, cases[i].line, cases[i].col, cases[i].msg);
	}
	assert_error("graph t {\n  input x : f32[0]\n  output x\n}\n", 2, 17, "must be positive");
	assert_error("graph t {\n  input x : f32[B]\n  output x\n}\n", 2, 17, "has no value");
	assert_error("graph t {\n  input x : f32[4294967296, 4294967296]\n  output x\n}\n", 2, 9,
		     "more than 2^62");
	assert_error("graph t {\n  input x : f32[99999999999999999999]\n  output x\n}\n", 2, 17,
		     "64 bits");
	assert_error("graph t {\n  input x : f64[4]\n  output x\n}\n", 2, 13, "unknown dtype 'f64'");
	assert_error("graph t {\n  input x : f32[4]\n}\n", 1, 1, "no output");
	assert_error("graph t {\n  input x : f32[4]\n  output y\n}\n", 3, 10, "unknown output 'y'");
	assert_error("graph t {\n  input x : f32[4]\n  output x, x\n}\n", 3, 13, "already an output");
}
END_TEST

/* One mistake, one message: uses of a failed value stay quiet. */
START_TEST(no_cascades)
{
	Built *b = build("graph t {\n  input x : f32[4]\n  y = x + q\n  z = exp(y) * y\n  output z\n}\n");
	ck_assert_int_eq(b->errors, 1);
	done(b);
}
END_TEST

static Suite *ir_suite(void)
{
	Suite *s = suite_create("ir");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, broadcasting);
	tcase_add_test(tc, reductions);
	tcase_add_test(tc, layout_and_matmul);
	tcase_add_test(tc, symbolic_dims);
	tcase_add_test(tc, numbers_fold_and_adapt);
	tcase_add_test(tc, expand_softmax_and_layernorm);
	tcase_add_test(tc, printer_round_trip);
	tcase_add_test(tc, errors);
	tcase_add_test(tc, no_cascades);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(ir_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
