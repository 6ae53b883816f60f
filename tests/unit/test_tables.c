/*
 * test_tables.c - every row of the op and dtype tables reaches every
 * backend.  The per-op and per-dtype facts are columns of FG_OPS and
 * FG_DTYPES (compiler/fg.h); what a backend handles apart it handles in a
 * switch.  So for every callable op, and for every dtype, this builds a
 * graph that uses it and runs it through the interpreter, the CUDA
 * emitter and emit-torch: an op or dtype that one of them lacks fails
 * here (an fg_die, an error count, an empty table entry), not in a user's
 * model.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fg.h"
#include "fgrt.h"
#include "fgrt_model.h"

typedef struct Fix {
	FgArena arena;
	FgSource src;
	FgDiag diag;
	FgGraph g;
} Fix;

static Fix *build(const char *text)
{
	Fix *f = calloc(1, sizeof *f);
	FgProgram prog;

	fg_arena_init(&f->arena);
	f->src = (FgSource){"t.fg", fg_arena_strdup(&f->arena, text), strlen(text)};
	f->diag.src = &f->src;
	ck_assert_msg(fg_parse(&f->arena, &f->diag, &f->src, &prog) == 0, "does not parse:\n%s", text);
	ck_assert_msg(fg_ir_build(&f->arena, &f->diag, &prog, NULL, 0, &f->g) == 0, "does not build:\n%s", text);
	return f;
}

static void fix_free(Fix *f)
{
	fg_arena_free(&f->arena);
	free(f);
}

/* The graph's text through emit-torch (as built), then, expanded, the
 * interpreter and the CUDA emitter (fused and one kernel per op). */
static void through_backends(const char *text)
{
	Fix *f = build(text);
	char path[] = "/tmp/fgc-test-tables-XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_msg(fg_torch_emit(&f->g, path, "t.fg", &f->diag) == 0, "emit-torch failed:\n%s", text);
	remove(path);

	fg_pass_expand(&f->g);
	double **in = calloc((size_t)f->g.ninputs + 1, sizeof *in);
	ck_assert_int_eq(fg_run_inputs(&f->g, NULL, 1, &f->diag, in), 0);
	double **vals = fg_interp_eval(&f->g, in, NULL, &f->diag);
	ck_assert_msg(vals != NULL, "the interpreter failed:\n%s", text);
	fg_interp_free(&f->g, vals);
	for (int k = 0; k < f->g.ninputs; k++)
		free(in[k]);
	free(in);

	for (int no_fuse = 0; no_fuse < 2; no_fuse++) {
		FgFuseOptions o;
		FgPlan plan;
		fg_fuse_defaults(&o);
		o.no_fuse = no_fuse;
		ck_assert_int_eq(fg_pass_fuse(&f->g, &o, &plan, &f->diag), 0);
		fg_pass_memplan(&plan);
		FILE *cu = tmpfile();
		ck_assert_ptr_nonnull(cu);
		ck_assert_msg(fg_cuda_emit(cu, &plan, "t.fg", FG_GEMM_AUTO, &f->diag) == 0, "the CUDA emitter failed:\n%s",
			      text);
		fclose(cu);
	}
	fix_free(f);
}

/* A value for each attribute key, over x : f32[4, 6]; "shape" is
 * reshape's unless the op is broadcast_to.  A key not here is an axis. */
static const struct {
	const char *key, *value;
} attr_values[] = {
	{"dtype", "f16"}, {"p", "0.25"}, {"seed", "3"}, {"eps", "0.00001"}, {"keepdims", "true"},
	{"perm", "[1, 0]"}, {"shape", "[3, 8]"}, {"start", "1"}, {"end", "3"}, {"slope", "0.2"},
	{"alpha", "0.5"}, {"correction", "1"}, {"exclusive", "true"}, {"reverse", "true"}, {"k", "2"},
	{"largest", "false"},
};

static const char *attr_value(FgOp op, const char *key)
{
	if (!strcmp(key, "shape") && op != FG_OP_RESHAPE)
		return "[2, 4, 6]";
	for (size_t i = 0; i < sizeof attr_values / sizeof attr_values[0]; i++)
		if (!strcmp(key, attr_values[i].key))
			return attr_values[i].value;
	return "-1";
}

/* op(operands, every attribute it takes) over x, y : f32[4, 6], bound to
 * z (topk, which gives two results: z, zi) (a bool
 * condition first for where, bools for and, or, xor, not, a [6, 4] right side for matmul, [6]-wide
 * gamma and beta for the norms, i32 indices in range for gather, take_along_axis and
 * cross_entropy). */
START_TEST(every_op)
{
	int tested = 0;

	for (int op = 0; op < FG_OP_COUNT; op++) {
		const FgOpInfo *in = &fg_op_info[op];
		if (in->cls == FG_CLASS_SOURCE)
			continue;
		char call[512], text[1024];
		int n = snprintf(call, sizeof call, "%s(", in->name);
		int arity = in->arity < 0 ? 2 : in->arity;
		for (int k = 0; k < arity; k++) {
			const char *operand = k == 0 ? "x" : "y";
			if ((op == FG_OP_WHERE && k == 0) || in->ty == FG_TY_BOOL)
				operand = "c";
			else if (op == FG_OP_WHERE)
				operand = k == 1 ? "x" : "y";
			else if (op == FG_OP_MATMUL && k == 1)
				operand = "w";
			else if ((op == FG_OP_LAYERNORM || op == FG_OP_RMSNORM) && k > 0)
				operand = k == 1 ? "gamma" : "beta";
			else if (k == 1 && (op == FG_OP_GATHER || op == FG_OP_TAKE_ALONG_AXIS || op == FG_OP_CROSS_ENTROPY))
				operand = "ki";
			n += snprintf(call + n, sizeof call - (size_t)n, "%s%s", k ? ", " : "", operand);
		}
		char keys[128];
		snprintf(keys, sizeof keys, "%s", in->attrs);
		for (char *save = NULL, *key = strtok_r(keys, " ", &save); key; key = strtok_r(NULL, " ", &save))
			n += snprintf(call + n, sizeof call - (size_t)n, "%s%s=%s", call[n - 1] == '(' ? "" : ", ", key,
				      attr_value((FgOp)op, key));
		snprintf(call + n, sizeof call - (size_t)n, ")");
		snprintf(text, sizeof text,
			 "graph every_op {\n  input x : f32[4, 6]\n  input y : f32[4, 6]\n  param w : f32[6, 4]\n"
			 "  param gamma : f32[6]\n  param beta : f32[6]\n  c = x > y\n  ki = iota(shape=[4, 1], axis=0)\n"
			 "  %s = %s\n  output %s\n}\n", op == FG_OP_TOPK ? "z, zi" : "z", call,
			 op == FG_OP_TOPK ? "z, zi" : "z");
		through_backends(text);
		tested++;
	}
	ck_assert_int_gt(tested, 40);
}
END_TEST

/* The runtime's dtypes (runtime/fgrt.h) are the compiler's: the same
 * constants, names, sizes and .npy types, in the same order; and the C
 * ABI's (fgrt_model.h) number them alike. */
START_TEST(runtime_dtypes)
{
	static const struct {
		const char *rt, *name;
		int size;
		FgrtNpyType npy;
	} rt[] = {
#define X(id, name, size, npy) {"FGRT_" #id, name, size, FGRT_NPY_##npy},
		FGRT_DTYPES(X)
#undef X
	};
	static const FgrtNpyType npy[] = {
#define X(id, nm, size, isf, ct, st, py, npy) FGRT_NPY_##npy,
		FG_DTYPES(X)
#undef X
	};
	/* the C ABI's dtype numbers (fgrt_model.h) are FgrtDtype's */
	static const int abi[] = {FG_MODEL_F32, FG_MODEL_F16, FG_MODEL_BF16, FG_MODEL_I32, FG_MODEL_BOOL, FG_MODEL_I8,
				  FG_MODEL_U8, FG_MODEL_F8E4M3, FG_MODEL_F8E5M2};
	ck_assert_int_eq((int)(sizeof abi / sizeof abi[0]), FG_DT_COUNT);
	for (int d = 0; d < FG_DT_COUNT; d++)
		ck_assert_int_eq(abi[d], d);
	ck_assert_int_eq((int)(sizeof rt / sizeof rt[0]), FG_DT_COUNT);
	for (int d = 0; d < FG_DT_COUNT; d++) {
		ck_assert_str_eq(rt[d].rt, fg_dtype_info[d].rt);
		ck_assert_str_eq(rt[d].name, fg_dtype_name[d]);
		ck_assert_int_eq(rt[d].size, fg_dtype_size[d]);
		ck_assert_int_eq(rt[d].npy, npy[d]);
	}
}
END_TEST

/* A value of each dtype, read, cast to every dtype, and stored. */
START_TEST(every_dtype)
{
	for (int from = 0; from < FG_DT_COUNT; from++) {
		const FgDtypeInfo *di = &fg_dtype_info[from];
		ck_assert_msg(di->cuda && di->cuda_store && di->rt && di->store && di->torch, "dtype %s lacks a column",
			      fg_dtype_name[from]);
		ck_assert_int_gt(fg_dtype_size[from], 0);
		ck_assert(fg_round_to((FgDtype)from, 1.0) == 1.0);
		char text[2048];
		int n = snprintf(text, sizeof text, "graph every_dtype {\n  input x : %s[4, 8]\n  y = identity(x)\n",
				 fg_dtype_name[from]);
		for (int to = 0; to < FG_DT_COUNT; to++)
			n += snprintf(text + n, sizeof text - (size_t)n, "  c%d = cast(x, dtype=%s)\n", to, fg_dtype_name[to]);
		n += snprintf(text + n, sizeof text - (size_t)n, "  output y");
		for (int to = 0; to < FG_DT_COUNT; to++)
			n += snprintf(text + n, sizeof text - (size_t)n, ", c%d", to);
		snprintf(text + n, sizeof text - (size_t)n, "\n}\n");
		through_backends(text);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("tables");
	TCase *tc = tcase_create("tables");

	tcase_add_test(tc, every_op);
	tcase_add_test(tc, every_dtype);
	tcase_add_test(tc, runtime_dtypes);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
