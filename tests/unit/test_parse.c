/*
 * test_parse.c - the front end (grammar/fg.l, grammar/fg.y, compiler/ast.c)
 * from text to AST: every token, numbers, precedence, calls and attributes,
 * statements over several lines, the language.md examples, and the errors,
 * each checked for its exact first line `t.fg:L:C: error: message` and its
 * count (one per bad statement).  The pathological inputs of testing.md
 * layer 2 are generated here: 120,000-deep nesting, million-term chains,
 * huge names, random bytes.  Expressions are compared as S-expressions,
 * (sub (sub a b) c), which say the tree's shape in one line.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fg.h"

#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

/* ------------------------------------------------------------ harness */

/* One parse: the program, the error count, and everything printed. */
typedef struct Parse {
	FgArena arena;
	FgSource src;
	FgDiag diag;
	FgProgram prog;
	int nerrors;
	char *out;
	size_t outlen;
	char first[1024];       /* the first line printed, or "" */
} Parse;

static Parse P;

static void release(void)
{
	fg_arena_free(&P.arena);
	free(P.out);
	memset(&P, 0, sizeof P);
}

static int parse_bytes(const char *text, size_t len)
{
	release();
	fg_arena_init(&P.arena);
	/* The source keeps its own NUL-terminated copy, as fg_source_read's. */
	char *copy = fg_arena_alloc(&P.arena, len + 1);
	memcpy(copy, text, len);
	P.src = (FgSource){.name = "t.fg", .text = copy, .len = len};
	FILE *f = open_memstream(&P.out, &P.outlen);
	ck_assert_ptr_nonnull(f);
	P.diag = (FgDiag){.src = &P.src, .out = f, .max_errors = 1000000};
	P.nerrors = fg_parse(&P.arena, &P.diag, &P.src, &P.prog);
	fclose(f);
	ck_assert_int_eq(P.nerrors, P.diag.nerrors);
	size_t n = strcspn(P.out, "\n");
	if (n >= sizeof P.first)
		n = sizeof P.first - 1;
	memcpy(P.first, P.out, n);
	P.first[n] = 0;
	return P.nerrors;
}

static int parse(const char *text)
{
	return parse_bytes(text, strlen(text));
}

/* Parses and expects no error. */
static void parse_ok(const char *text)
{
	if (parse(text) != 0)
		ck_abort_msg("unexpected errors for:\n%s\n---\n%s", text, P.out);
}

/* Parses and expects exactly `count` errors, the first printed as `first`. */
static void parse_err(const char *text, int count, const char *first)
{
	parse(text);
	ck_assert_msg(strcmp(P.first, first) == 0,
		      "for:\n%s\n---\nexpected: %s\n     got: %s\n(all: %s)", text,
		      first, P.first, P.out);
	ck_assert_msg(P.nerrors == count, "expected %d errors, got %d:\n%s", count,
		      P.nerrors, P.out);
}

/* The errors of a whole-graph body: wraps `body` in graph g { } so that
 * it starts on line 3. */
static void body_err(const char *body, int count, const char *first)
{
	char text[4096];
	snprintf(text, sizeof text, "graph g {\n  # body\n%s\n}\n", body);
	parse_err(text, count, first);
}

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* A growing text buffer for generated inputs. */
typedef struct Buf {
	char *s;
	size_t n, cap;
} Buf;

static void put(Buf *b, const char *s, size_t n)
{
	if (b->n + n + 1 > b->cap) {
		b->cap = (b->n + n + 1) * 2;
		b->s = realloc(b->s, b->cap);
		ck_assert_ptr_nonnull(b->s);
	}
	memcpy(b->s + b->n, s, n);
	b->n += n;
	b->s[b->n] = 0;
}

static void puts_(Buf *b, const char *s)
{
	put(b, s, strlen(s));
}

static void repeat(Buf *b, const char *s, long n)
{
	for (long i = 0; i < n; i++)
		puts_(b, s);
}

/* ------------------------------------------------ S-expression dumper */

static char dumpbuf[8192];
static size_t dumplen;

static void out(const char *fmt, ...) FG_PRINTF(1, 2);
static void out(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (dumplen < sizeof dumpbuf)
		dumplen += (size_t)vsnprintf(dumpbuf + dumplen, sizeof dumpbuf - dumplen,
					     fmt, ap);
	va_end(ap);
}

static void dump_num(const FgNum *n)
{
	if (n->is_int && !n->overflow)
		out("%lld", (long long)n->ival);
	else
		out("%g", n->val);
	if (n->overflow)
		out("!");
}

static void dump_val(const FgAttrVal *v)
{
	switch (v->kind) {
	case FG_AV_NUM: dump_num(&v->num); break;
	case FG_AV_IDENT: out("%s", v->ident); break;
	case FG_AV_LIST:
		out("[");
		for (int i = 0; i < v->nitems; i++) {
			out(i ? " " : "");
			dump_val(&v->items[i]);
		}
		out("]");
		break;
	}
}

/* Grammar: (name args... key=value...) for calls and operators. */
static void dump_expr(const FgExpr *e)
{
	switch (e->kind) {
	case FG_EX_NUM: dump_num(&e->num); break;
	case FG_EX_NAME: out("%s", e->name); break;
	case FG_EX_CALL:
		out("(%s", e->name);
		for (int i = 0; i < e->nargs; i++) {
			out(" ");
			dump_expr(e->args[i]);
		}
		for (int i = 0; i < e->nattrs; i++) {
			out(" %s=", e->attrs[i].key);
			dump_val(&e->attrs[i].val);
		}
		out(")");
		break;
	}
}

static const char *dump(const FgExpr *e)
{
	dumplen = 0;
	dumpbuf[0] = 0;
	dump_expr(e);
	return dumpbuf;
}

/* The tree of `y = <text>`, written on the second line of a graph. */
static const char *expr_of(const char *text)
{
	char src[4096];
	snprintf(src, sizeof src, "graph g {\n  y = %s\n}\n", text);
	parse_ok(src);
	ck_assert_int_eq(P.prog.nstmts, 1);
	ck_assert_int_eq(P.prog.stmts[0].kind, FG_ST_ASSIGN);
	return dump(P.prog.stmts[0].expr);
}

#define ck_assert_loc(l, ln, cl)                                               \
	do {                                                                   \
		ck_assert_int_eq((l).line, (ln));                              \
		ck_assert_int_eq((l).col, (cl));                               \
	} while (0)

/* ------------------------------------------------------------- tokens */

START_TEST(test_every_token)
{
	parse_ok("# header\n"
		 "graph g {\n"
		 "  input x : f32[B=2, 3]\n"
		 "  param w : bf16[]\n"
		 "  fuse {\n"
		 "    y = (x + 1 - 2 * 3 / 4.5) @save\n"
		 "  }\n"
		 "  z = f(y, k=[1, -2], m=true) < 1\n"
		 "  c = a <= b\n"
		 "  d = a > b\n"
		 "  e = a >= b\n"
		 "  f = a == b\n"
		 "  h = a != b\n"
		 "  output z, y\n"
		 "}\n");
	const FgProgram *p = &P.prog;
	ck_assert_str_eq(p->name, "g");
	ck_assert_loc(p->loc, 2, 1);
	ck_assert_int_eq(p->nstmts, 10);
	ck_assert_int_eq(p->stmts[0].kind, FG_ST_INPUT);
	ck_assert_int_eq(p->stmts[1].kind, FG_ST_PARAM);
	ck_assert_int_eq(p->stmts[2].kind, FG_ST_FUSE);
	ck_assert_int_eq(p->stmts[2].nbody, 1);
	ck_assert_str_eq(dump(p->stmts[2].body[0].expr),
			 "(sub (add x 1) (div (mul 2 3) 4.5))");
	ck_assert_str_eq(dump(p->stmts[3].expr), "(lt (f y k=[1 -2] m=true) 1)");
	ck_assert_str_eq(dump(p->stmts[4].expr), "(le a b)");
	ck_assert_str_eq(dump(p->stmts[5].expr), "(gt a b)");
	ck_assert_str_eq(dump(p->stmts[6].expr), "(ge a b)");
	ck_assert_str_eq(dump(p->stmts[7].expr), "(eq a b)");
	ck_assert_str_eq(dump(p->stmts[8].expr), "(ne a b)");
	ck_assert_int_eq(p->stmts[9].kind, FG_ST_OUTPUT);
	ck_assert_str_eq(p->stmts[4].expr->op_text, "<=");
	ck_assert_str_eq(p->stmts[8].expr->op_text, "!=");
	ck_assert_ptr_null(p->stmts[3].expr->args[0]->op_text);   /* a call */
}
END_TEST

/* dtype names, true/false, inf-like names are identifiers; keywords are
 * whole words only. */
START_TEST(test_identifiers)
{
	ck_assert_str_eq(expr_of("graphs + inputs + output_ + _fuse + f32 + true + info + nan_"),
			 "(add (add (add (add (add (add (add graphs inputs) output_) _fuse) f32) true) info) nan_)");
	ck_assert_str_eq(expr_of("_ + A9 + a_b_9"), "(add (add _ A9) a_b_9)");
	/* Equal names are one interned string. */
	parse_ok("graph g {\n a = b + b\n}\n");
	const FgExpr *e = P.prog.stmts[0].expr;
	ck_assert_ptr_eq(e->args[0]->name, e->args[1]->name);
}
END_TEST

/* ------------------------------------------------------------ numbers */

typedef struct NumCase {
	const char *text;
	int is_int, overflow;
	double val;
	long long ival;
} NumCase;

START_TEST(test_numbers)
{
	static const NumCase cases[] = {
		{"42", 1, 0, 42, 42},
		{"0", 1, 0, 0, 0},
		{"007", 1, 0, 7, 7},
		{"0.5", 0, 0, 0.5, 0},
		{"1e-5", 0, 0, 1e-5, 0},
		{"1E+5", 0, 0, 1e5, 0},
		{"1e5", 0, 0, 1e5, 0},
		{"3.", 0, 0, 3, 0},
		{".5", 0, 0, 0.5, 0},
		{"2.5e3", 0, 0, 2500, 0},
		{"1.e2", 0, 0, 100, 0},
		{"1e-999", 0, 0, 0, 0},         /* underflow is not overflow */
		{"inf", 0, 0, INFINITY, 0},
		{"1e999", 0, 1, INFINITY, 0},
		{"9223372036854775807", 1, 0, 9223372036854775807.0, 9223372036854775807LL},
		{"9223372036854775808", 1, 1, 9223372036854775808.0, 0},
		{"99999999999999999999", 1, 1, 1e20, 0},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const NumCase *c = &cases[i];
		char src[256];
		snprintf(src, sizeof src, "graph g {\n y = %s\n}\n", c->text);
		parse_ok(src);
		const FgExpr *e = P.prog.stmts[0].expr;
		ck_assert_msg(e->kind == FG_EX_NUM, "%s", c->text);
		ck_assert_msg(e->num.is_int == c->is_int, "%s: is_int", c->text);
		ck_assert_msg(e->num.overflow == c->overflow, "%s: overflow", c->text);
		ck_assert_msg(e->num.val == c->val, "%s: val %g", c->text, e->num.val);
		ck_assert_msg(e->num.ival == c->ival, "%s: ival", c->text);
		ck_assert_loc(e->loc, 2, 6);
	}
	ck_assert_str_eq(expr_of("nan"), "nan");
	ck_assert(isnan(P.prog.stmts[0].expr->num.val));
	/* Huge integers keep a value for the message that rejects them. */
	Buf b = {0};
	puts_(&b, "graph g {\n y = 1");
	repeat(&b, "0", 400);
	puts_(&b, "\n}\n");
	parse_ok(b.s);
	ck_assert(P.prog.stmts[0].expr->num.overflow);
	ck_assert(isinf(P.prog.stmts[0].expr->num.val));
	free(b.s);
}
END_TEST

START_TEST(test_number_builder)
{
	FgNum n = fg_ast_number("12", 2);
	ck_assert(n.is_int && !n.overflow && n.ival == 12 && n.val == 12);
	n = fg_ast_num_neg(n);
	ck_assert(n.ival == -12 && n.val == -12);
	n = fg_ast_num_neg(fg_ast_number("0", 1));
	ck_assert(n.ival == 0 && !signbit(n.val));      /* -0 is the integer 0 */
	n = fg_ast_num_neg(fg_ast_number("0.0", 3));
	ck_assert(signbit(n.val));
	n = fg_ast_num_neg(fg_ast_number("inf", 3));
	ck_assert(isinf(n.val) && n.val < 0);
}
END_TEST

/* A minus is an operator, folded into a literal it applies to. */
START_TEST(test_minus_is_not_part_of_a_number)
{
	ck_assert_str_eq(expr_of("a-1"), "(sub a 1)");
	ck_assert_str_eq(expr_of("a -1"), "(sub a 1)");
	ck_assert_str_eq(expr_of("-3"), "-3");
	ck_assert_loc(P.prog.stmts[0].expr->loc, 2, 7);        /* at the '-' */
	ck_assert_str_eq(expr_of("-(3)"), "-3");
	ck_assert_str_eq(expr_of("- -2"), "2");
	ck_assert_str_eq(expr_of("x * -1.5"), "(mul x -1.5)");
	ck_assert_str_eq(expr_of("-inf"), "-inf");
	ck_assert_str_eq(expr_of("-x"), "(neg x)");
	ck_assert_str_eq(P.prog.stmts[0].expr->op_text, "-");
	ck_assert_loc(P.prog.stmts[0].expr->loc, 2, 7);
}
END_TEST

/* ------------------------------------------------------- precedence */

START_TEST(test_precedence)
{
	static const char *const cases[][2] = {
		{"a - b - c", "(sub (sub a b) c)"},
		{"a / b / c", "(div (div a b) c)"},
		{"a + b * c", "(add a (mul b c))"},
		{"a * b + c * d", "(add (mul a b) (mul c d))"},
		{"a * b - c / d", "(sub (mul a b) (div c d))"},
		{"-a * b", "(mul (neg a) b)"},
		{"a * -b", "(mul a (neg b))"},
		{"-a - -b", "(sub (neg a) (neg b))"},
		{"- -a", "(neg (neg a))"},
		{"-(a + b)", "(neg (add a b))"},
		{"(a + b) * c", "(mul (add a b) c)"},
		{"a < b + c", "(lt a (add b c))"},
		{"a + b >= c * d", "(ge (add a b) (mul c d))"},
		{"(a < b) == (c > d)", "(eq (lt a b) (gt c d))"},
		{"((((a))))", "a"},
		{"x - mean(x, axis=-1)", "(sub x (mean x axis=-1))"},
		{"gelu(matmul(x, w) + b)", "(gelu (add (matmul x w) b))"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		ck_assert_str_eq(expr_of(cases[i][0]), cases[i][1]);
	/* An operator's node sits at the operator. */
	expr_of("a - b * c");
	const FgExpr *e = P.prog.stmts[0].expr;
	ck_assert_loc(e->loc, 2, 9);
	ck_assert_loc(e->args[1]->loc, 2, 13);
	ck_assert_loc(e->args[0]->loc, 2, 7);
}
END_TEST

/* ------------------------------------------------------------- calls */

START_TEST(test_calls)
{
	ck_assert_str_eq(expr_of("layernorm(x, gamma, beta, axis=-1, eps=1e-5)"),
			 "(layernorm x gamma beta axis=-1 eps=1e-05)");
	const FgExpr *e = P.prog.stmts[0].expr;
	ck_assert_loc(e->loc, 2, 7);
	ck_assert_int_eq(e->nattrs, 2);
	ck_assert_loc(e->attrs[0].loc, 2, 33);
	ck_assert_int_eq(e->attrs[0].val.kind, FG_AV_NUM);
	ck_assert_loc(e->attrs[0].val.loc, 2, 38);
	ck_assert(e->attrs[0].val.num.is_int && e->attrs[0].val.num.ival == -1);

	ck_assert_str_eq(expr_of("transpose(x, perm=[1, 0, -2])"),
			 "(transpose x perm=[1 0 -2])");
	const FgAttrVal *v = &P.prog.stmts[0].expr->attrs[0].val;
	ck_assert_int_eq(v->kind, FG_AV_LIST);
	ck_assert_int_eq(v->nitems, 3);
	ck_assert_loc(v->loc, 2, 25);
	ck_assert_loc(v->items[2].loc, 2, 32);

	ck_assert_str_eq(expr_of("reshape(x, shape=[])"), "(reshape x shape=[])");
	ck_assert_int_eq(P.prog.stmts[0].expr->attrs[0].val.nitems, 0);
	ck_assert_str_eq(expr_of("cast(x, dtype=f16)"), "(cast x dtype=f16)");
	ck_assert_int_eq(P.prog.stmts[0].expr->attrs[0].val.kind, FG_AV_IDENT);
	ck_assert_str_eq(expr_of("sum(x, axis=[0, 1], keepdims=false)"),
			 "(sum x axis=[0 1] keepdims=false)");
	ck_assert_str_eq(expr_of("dropout(x, p=0.1, seed=1234)"),
			 "(dropout x p=0.1 seed=1234)");
	ck_assert_str_eq(expr_of("slice(x, axis=1, start=0, end=768)"),
			 "(slice x axis=1 start=0 end=768)");
	ck_assert_str_eq(expr_of("concat(a, b, c, axis=-1)"), "(concat a b c axis=-1)");
	ck_assert_str_eq(expr_of("where(c, a, b)"), "(where c a b)");
	ck_assert_str_eq(expr_of("f()"), "(f)");
	ck_assert_int_eq(P.prog.stmts[0].expr->nargs, 0);
	ck_assert_str_eq(expr_of("f(axis=1)"), "(f axis=1)");
	ck_assert_str_eq(expr_of("f(eps=-inf, p=nan)"), "(f eps=-inf p=nan)");
	ck_assert_str_eq(expr_of("f(g(h(x, a=1), b=[2]), c=3) * 2"),
			 "(mul (f (g (h x a=1) b=[2]) c=3) 2)");
	ck_assert_str_eq(expr_of("f(x == 1, -x, (x))"), "(f (eq x 1) (neg x) x)");
}
END_TEST

/* ---------------------------------------------------- lines, comments */

START_TEST(test_multiline)
{
	parse_ok("graph g {\n"
		 "  input x : f32[\n"
		 "     B=8,\n"
		 "     4]\n"
		 "  y = matmul(   # the product\n"
		 "         x,\n"
		 "\n"
		 "         w\n"
		 "      ) + (b\n"
		 "         + 1)\n"
		 "  t = transpose(x, perm=[1,\n"
		 "                         0])\n"
		 "  output y, t\n"
		 "}\n");
	ck_assert_int_eq(P.prog.nstmts, 4);
	ck_assert_int_eq(P.prog.stmts[0].ndims, 2);
	ck_assert_str_eq(dump(P.prog.stmts[1].expr), "(add (matmul x w) (add b 1))");
	ck_assert_loc(P.prog.stmts[1].expr->loc, 9, 9);
	ck_assert_str_eq(dump(P.prog.stmts[2].expr), "(transpose x perm=[1 0])");
	ck_assert_loc(P.prog.stmts[3].loc, 13, 3);
	/* Outside brackets a newline ends the statement, braces or not. */
	body_err("  y = a +\n    b", 1,
		 "t.fg:3:10: error: expected an expression, found newline");
	body_err("  output a,\n    b", 1,
		 "t.fg:3:12: error: expected a name after ',', found newline");
	parse_err("graph g\n{\n}\n", 1,
		  "t.fg:1:8: error: expected '{' after 'g', found newline");
}
END_TEST

START_TEST(test_comments_and_blank_lines)
{
	parse_ok("# leading comment\n\n   \t\n"
		 "graph g { # trailing\n"
		 "# a full line \xe2\x80\x94 with UTF-8, and bytes: \x01\xff ok\n"
		 "\n\n"
		 "  y = x # comment after a statement\n"
		 "  #indented comment\n"
		 "  output y#no space\n"
		 "}   # after the graph\n"
		 "# and at the end without a newline");
	/* strlen stops at the NUL above: parse the whole thing instead. */
	static const char text[] = "graph g {\n# \0 \xff\xfe\n  y = x\n}\n";
	ck_assert_int_eq(parse_bytes(text, sizeof text - 1), 0);
	ck_assert_int_eq(P.prog.nstmts, 1);
}
END_TEST

START_TEST(test_crlf_and_final_newline)
{
	parse_ok("graph g {\r\n  y = f(x,\r\n    w)  # c\r\n  output y\r\n}\r\n");
	ck_assert_int_eq(P.prog.nstmts, 2);
	ck_assert_loc(P.prog.stmts[1].loc, 4, 3);
	parse_err("graph g {\r\n  y = * x\r\n}\r\n", 1,
		  "t.fg:2:7: error: expected an expression, found '*'");
	parse_ok("graph g {\n  y = x\n}");
	parse_ok("graph g { y = x }");
	ck_assert_int_eq(P.prog.nstmts, 1);
	parse_ok("graph g {}");
	ck_assert_int_eq(P.prog.nstmts, 0);
	parse_ok("\n\ngraph g {\n}\n\n\n");
	/* A lone CR is not a newline. */
	parse_err("graph g {\r  y = x\n}\n", 1, "t.fg:1:10: error: unexpected character 0x0D");
}
END_TEST

START_TEST(test_empty_files)
{
	parse_err("", 1, "t.fg:1:1: error: expected 'graph', found end of file");
	parse_err("# nothing but a comment\n", 1,
		  "t.fg:1:24: error: expected 'graph', found end of file");
	parse_err("\n\n\n", 1, "t.fg:3:1: error: expected 'graph', found end of file");
	parse_err("   ", 1, "t.fg:1:4: error: expected 'graph', found end of file");
}
END_TEST

/* ------------------------------------------------- language.md examples */

static const char mlp[] =
	"# mlp.fg \xe2\x80\x94 a transformer MLP block, forward pass of a training step\n"
	"graph mlp_block {\n"
	"  input  x  : bf16[B, 4096]          # B is bound at compile time: -D B=8192\n"
	"  param  w1 : bf16[4096, 16384]\n"
	"  param  b1 : bf16[16384]\n"
	"  param  w2 : bf16[16384, 4096]\n"
	"  param  b2 : bf16[4096]\n"
	"\n"
	"  h = matmul(x, w1) + b1\n"
	"  a = gelu(h)                 @save  # the backward pass reads it again\n"
	"  y = matmul(a, w2) + b2 + x\n"
	"  output y\n"
	"}\n";

START_TEST(test_mlp_example)
{
	parse_ok(mlp);
	const FgProgram *p = &P.prog;
	ck_assert_str_eq(p->name, "mlp_block");
	ck_assert_int_eq(p->nstmts, 9);
	const FgStmt *x = &p->stmts[0];
	ck_assert_int_eq(x->kind, FG_ST_INPUT);
	ck_assert_str_eq(x->name, "x");
	ck_assert_loc(x->loc, 3, 3);
	ck_assert_loc(x->name_loc, 3, 10);
	ck_assert_str_eq(x->dtype, "bf16");
	ck_assert_loc(x->dtype_loc, 3, 15);
	ck_assert_int_eq(x->ndims, 2);
	ck_assert_str_eq(x->dims[0].sym, "B");
	ck_assert(!x->dims[0].has_default);
	ck_assert_loc(x->dims[0].loc, 3, 20);
	ck_assert_ptr_null(x->dims[1].sym);
	ck_assert_int_eq(x->dims[1].num.ival, 4096);
	ck_assert_loc(x->dims[1].loc, 3, 23);
	ck_assert_int_eq(p->stmts[2].kind, FG_ST_PARAM);
	ck_assert_str_eq(p->stmts[4].name, "b2");
	ck_assert_str_eq(dump(p->stmts[5].expr), "(add (matmul x w1) b1)");
	const FgStmt *a = &p->stmts[6];
	ck_assert_str_eq(dump(a->expr), "(gelu h)");
	ck_assert_int_eq(a->nannots, 1);
	ck_assert_str_eq(a->annots[0].name, "save");
	ck_assert_loc(a->annots[0].loc, 10, 31);
	ck_assert_str_eq(dump(p->stmts[7].expr), "(add (add (matmul a w2) b2) x)");
	const FgStmt *o = &p->stmts[8];
	ck_assert_int_eq(o->kind, FG_ST_OUTPUT);
	ck_assert_int_eq(o->nouts, 1);
	ck_assert_str_eq(o->outs[0], "y");
	ck_assert_loc(o->out_locs[0], 12, 10);
}
END_TEST

START_TEST(test_declarations)
{
	parse_ok("graph g {\n"
		 "  input x : f32[B=8192, 1024]\n"
		 "  param s : f32[]\n"
		 "  input n : i32[-4, 0, 2.5, T=-1]\n"
		 "  output x, s, n\n"
		 "}\n");
	const FgStmt *s = P.prog.stmts;
	ck_assert_str_eq(s[0].dims[0].sym, "B");
	ck_assert(s[0].dims[0].has_default);
	ck_assert_int_eq(s[0].dims[0].def.ival, 8192);
	ck_assert_int_eq(s[1].ndims, 0);
	ck_assert_ptr_null(s[1].dims);
	/* Values the IR builder rejects still parse, with their sign. */
	ck_assert_int_eq(s[2].dims[0].num.ival, -4);
	ck_assert_loc(s[2].dims[0].loc, 4, 17);
	ck_assert_int_eq(s[2].dims[1].num.ival, 0);
	ck_assert(!s[2].dims[2].num.is_int);
	ck_assert_int_eq(s[2].dims[3].def.ival, -1);
	ck_assert_int_eq(s[3].nouts, 3);
	ck_assert_str_eq(s[3].outs[2], "n");
	ck_assert_loc(s[3].out_locs[2], 5, 16);
}
END_TEST

START_TEST(test_annotations)
{
	parse_ok("graph g {\n  a = gelu(h) @save @materialize @bogus\n}\n");
	const FgStmt *a = &P.prog.stmts[0];
	ck_assert_int_eq(a->nannots, 3);
	ck_assert_str_eq(a->annots[0].name, "save");
	ck_assert_str_eq(a->annots[1].name, "materialize");
	ck_assert_str_eq(a->annots[2].name, "bogus");   /* the IR builder judges */
	ck_assert_loc(a->annots[1].loc, 2, 21);
	parse_ok("graph g {\n  a = h @save @save\n}\n");   /* so are repeats */
	ck_assert_int_eq(P.prog.stmts[0].nannots, 2);
}
END_TEST

START_TEST(test_fuse)
{
	parse_ok("graph g {\n"
		 "  input x : f32[4]\n"
		 "  fuse {\n"
		 "    a = exp(x)\n"
		 "\n"
		 "    b = a / sum(a, axis=-1)   @save\n"
		 "  }\n"
		 "  fuse { c = b }\n"
		 "  fuse {\n"
		 "  }\n"
		 "  output b\n"
		 "}\n");
	const FgStmt *f = &P.prog.stmts[1];
	ck_assert_int_eq(f->kind, FG_ST_FUSE);
	ck_assert_loc(f->loc, 3, 3);
	ck_assert_int_eq(f->nbody, 2);
	ck_assert_str_eq(f->body[1].name, "b");
	ck_assert_int_eq(f->body[1].nannots, 1);
	ck_assert_int_eq(P.prog.stmts[2].nbody, 1);
	ck_assert_int_eq(P.prog.stmts[3].nbody, 0);
	body_err("  fuse {\n    fuse {\n      a = 1\n    }\n  }", 1,
		 "t.fg:4:5: error: 'fuse' blocks do not nest");
	body_err("  fuse {\n    input x : f32[]\n    a = x\n    output a\n  }", 2,
		 "t.fg:4:5: error: only assignments may appear inside a 'fuse' block; "
		 "move this declaration before it");
	ck_assert_ptr_nonnull(strstr(P.out, "t.fg:6:5: error: only assignments may appear "
					    "inside a 'fuse' block; move 'output' after it"));
	body_err("  fuse {\n    a = 1\n", 1,
		 "t.fg:6:2: error: expected '}' to close '{' at 1:9, found end of file");
}
END_TEST

/* ------------------------------------------------------------- errors */

START_TEST(test_syntax_errors)
{
	body_err("  input x : f32[4]\n  y = f(a, b\n  z = 1\n  output y", 1,
		 "t.fg:4:13: error: expected ')' to close '(' at 4:8, found newline");
	body_err("  y = * 3", 1, "t.fg:3:7: error: expected an expression, found '*'");
	body_err("  y", 1, "t.fg:3:4: error: expected '=' after 'y', found newline");
	body_err("  y + 1", 1, "t.fg:3:5: error: expected '=' after 'y', found '+'");
	body_err("  input x f32[4]", 1, "t.fg:3:11: error: expected ':' after 'x', found 'f32'");
	body_err("  input x : [4]", 1, "t.fg:3:13: error: expected a name after ':', found '['");
	body_err("  input x : f32", 1, "t.fg:3:16: error: expected '[' after 'f32', found newline");
	body_err("  input x : f32[4,]", 1, "t.fg:3:19: error: expected a dimension after ',', found ']'");
	body_err("  input x : f32[4 5]", 1,
		 "t.fg:3:19: error: expected ',' or ']' to close '[' at 3:16, found '5'");
	body_err("  input x : f32[B=]", 1, "t.fg:3:19: error: expected a number after '=', found ']'");
	body_err("  input output : f32[]", 1,
		 "t.fg:3:9: error: expected a name after 'input', found keyword 'output'");
	body_err("  y = f(a b)", 1,
		 "t.fg:3:11: error: expected ',' or ')' to close '(' at 3:8, found 'b'");
	body_err("  y = (a b)", 1,
		 "t.fg:3:10: error: expected ')' to close '(' at 3:7, found 'b'");
	body_err("  y = a b", 1,
		 "t.fg:3:9: error: expected an operator, '@' or newline, found 'b'");
	body_err("  y = a @", 1,
		 "t.fg:3:10: error: expected an expression after '@' (a matmul), or an annotation name right "
		 "after it (@save), found newline");
	body_err("  y = a @save x", 1,
		 "t.fg:3:15: error: expected '@' or newline, found 'x'");
	body_err("  output", 1, "t.fg:3:9: error: expected a name after 'output', found newline");
	body_err("  output a b", 1, "t.fg:3:12: error: expected ',' or newline, found 'b'");
	body_err("  y = f(x, axis=)", 1,
		 "t.fg:3:17: error: expected an attribute value after '=', found ')'");
	/* a name in a list is a symbolic dim (language v2); '(' is nothing */
	body_err("  y = f(x, perm=[1, (])", 1, "t.fg:3:21: error: expected a dimension after ',', found '('");
	body_err("  y = f(x, perm=[1 2])", 1,
		 "t.fg:3:20: error: expected ',' or ']' to close '[' at 3:17, found '2'");
	body_err("  y = f(x, p=0.1*2)", 1,
		 "t.fg:3:17: error: expected ',' or ')' to close '(' at 3:8, found '*'");
	body_err("  y = f(x,, y)", 1, "t.fg:3:11: error: expected an expression, found ','");
	body_err("  y = f(x,)", 1, "t.fg:3:11: error: expected an expression, found ')'");
	body_err("  y = a < b < c", 1,
		 "t.fg:3:13: error: comparisons do not chain: put parentheses around one of them");
	body_err("  y = a == b != c", 1,
		 "t.fg:3:14: error: comparisons do not chain: put parentheses around one of them");
	body_err("  y = f(x))", 1, "t.fg:3:11: error: unmatched ')'");
	body_err("  y = (x]", 1, "t.fg:3:9: error: expected ')' to close '(' at 3:7, found ']'");
	body_err("  y = f(axis=1, x)", 1,
		 "t.fg:3:17: error: positional argument after keyword argument 'axis=' "
		 "(keyword arguments come last)");
	body_err("  y = f(axis=1, a + b, c)", 1,
		 "t.fg:3:17: error: positional argument after keyword argument 'axis=' "
		 "(keyword arguments come last)");
	body_err("  = x", 1,
		 "t.fg:3:3: error: expected a statement or '}' to close '{' at 1:9, found '='");
	body_err("  graph h {}", 1,
		 "t.fg:3:3: error: expected a statement or '}' to close '{' at 1:9, found keyword 'graph'");
	parse_err("grph g {\n}\n", 1, "t.fg:1:1: error: expected 'graph', found 'grph'");
	parse_err("graph {\n}\n", 1, "t.fg:1:7: error: expected a name after 'graph', found '{'");
	parse_err("graph g {\n  y = x\n", 1,
		  "t.fg:2:8: error: expected '}' to close '{' at 1:9, found end of file");
	parse_err("graph g {\n  y = f(x", 1,
		  "t.fg:2:10: error: expected ')' to close '(' at 2:8, found end of file");
	parse_err("graph g {\n  y = f(x\n", 1,
		  "t.fg:2:10: error: expected ')' to close '(' at 2:8, found end of file");
	parse_err("graph g {\n}\ngraph h {\n}\n", 1,
		  "t.fg:3:1: error: expected end of file after the graph's closing '}', "
		  "found 'graph' (a file holds one graph)");
	parse_err("graph g {\n}\n}\n", 1,
		  "t.fg:3:1: error: expected end of file after the graph's closing '}', found '}'");
	/* A long name is cut short in the message. */
	Buf b = {0};
	puts_(&b, "graph g {\n  ");
	repeat(&b, "n", 100000);
	puts_(&b, " ");
	repeat(&b, "m", 100000);
	puts_(&b, "\n}\n");
	parse(b.s);
	ck_assert_int_eq(P.nerrors, 1);
	ck_assert_str_eq(P.first, "t.fg:2:100004: error: expected '=' after "
				  "'nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn...', "
				  "found 'mmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmm...'");
	free(b.s);
}
END_TEST

START_TEST(test_lexical_errors)
{
	body_err("  y = x $ 3", 1, "t.fg:3:9: error: unexpected character '$'");
	body_err("  y = x ! 3", 1, "t.fg:3:9: error: unexpected character '!'");
	body_err("  y = a.b", 1, "t.fg:3:8: error: unexpected character '.'");
	body_err("  y = x \x01 3", 1, "t.fg:3:9: error: unexpected character 0x01");
	body_err("  y = x \x7f", 1, "t.fg:3:9: error: unexpected character 0x7F");
	body_err("  y = 1e", 1, "t.fg:3:7: error: malformed number '1e'");
	body_err("  y = 3x + 1", 1, "t.fg:3:7: error: malformed number '3x'");
	body_err("  y = 1.5.2", 1, "t.fg:3:7: error: malformed number '1.5.2'");
	body_err("  y = 0x10", 1, "t.fg:3:7: error: malformed number '0x10'");
	body_err("  y = \xce\xb1\xce\xb2 + \xce\xb3", 1,
		 "t.fg:3:7: error: unexpected non-ASCII character U+03B1");
	body_err("  y = x \xe2\x80\x94 1", 1,
		 "t.fg:3:9: error: unexpected non-ASCII character U+2014");
	body_err("  y = \xf0\x9f\x98\x80", 1,
		 "t.fg:3:7: error: unexpected non-ASCII character U+1F600");
	/* Invalid UTF-8: stray continuation, overlong, surrogate, too big,
	 * cut short, 0xFF. */
	static const char *const bad[] = {"\x80", "\xc0\x80", "\xed\xa0\x80",
					  "\xf4\x90\x80\x80", "\xe2\x82", "\xff\xfe"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char body[64], want[128];
		snprintf(body, sizeof body, "  y = %s + 1", bad[i]);
		snprintf(want, sizeof want,
			 "t.fg:3:7: error: unexpected non-ASCII byte 0x%02X (not UTF-8)",
			 (unsigned char)bad[i][0]);
		body_err(body, 1, want);
	}
	/* NUL bytes, counted by position, not by strlen. */
	static const char nul[] = "graph g {\n  y = x\0 + 1\n  z = \0\0\0\n}\n";
	parse_bytes(nul, sizeof nul - 1);
	ck_assert_int_eq(P.nerrors, 2);
	ck_assert_str_eq(P.first, "t.fg:2:8: error: unexpected character 0x00");
	/* One report per line, and no syntax error after it. */
	body_err("  y = $ $ $ * ) ( \x80\x80 \xff", 1,
		 "t.fg:3:7: error: unexpected character '$'");
	body_err("  y = $\n  z = 1 #ok $\n  w = \x01", 2,
		 "t.fg:3:7: error: unexpected character '$'");
}
END_TEST

/* Each bad statement gives one error; the good ones around it parse. */
START_TEST(test_recovery)
{
	body_err("  y = * 3\n"
		 "  z = (a\n"
		 "  w = 1 2\n"
		 "  ok = a + b\n"
		 "  v = f(x,\n"
		 "     y\n"
		 "     z)\n"
		 "  u = f(x,, y)\n"
		 "  t = $\n"
		 "  output y", 6, "t.fg:3:7: error: expected an expression, found '*'");
	static const char *const rest[] = {
		"t.fg:4:9: error: expected ')' to close '(' at 4:7, found newline",
		"t.fg:5:9: error: expected an operator, '@' or newline, found '2'",
		"t.fg:8:7: error: expected ')' to close '(' at 7:8, found newline",
		"t.fg:10:11: error: expected an expression, found ','",
		"t.fg:11:7: error: unexpected character '$'",
	};
	for (size_t i = 0; i < sizeof rest / sizeof rest[0]; i++)
		ck_assert_msg(strstr(P.out, rest[i]), "missing: %s\nin:\n%s", rest[i], P.out);
	/* Errors inside fuse recover inside it. */
	body_err("  fuse {\n    a = +\n    b = )\n  }\n  c = *", 3,
		 "t.fg:4:9: error: expected an expression, found '+'");
	ck_assert_ptr_nonnull(strstr(P.out, "t.fg:5:9: error: unmatched ')'"));
	ck_assert_ptr_nonnull(strstr(P.out, "t.fg:7:7: error: expected an expression, found '*'"));
	/* A '}' inside parentheses closes the block they were never closed in. */
	body_err("  fuse {\n    a = f(x\n  }\n  b = *", 2,
		 "t.fg:4:12: error: expected ')' to close '(' at 4:10, found newline");
}
END_TEST

/* --------------------------------------------------------- pathology */

START_TEST(test_deep_parentheses)
{
	Buf b = {0};
	puts_(&b, "graph g {\n y = ");
	repeat(&b, "(", 120000);
	puts_(&b, "x");
	repeat(&b, ")", 120000);
	puts_(&b, "\n output y\n}\n");
	parse_err(b.s, 1, "t.fg:2:1006: error: expression nested too deeply (more than 1000 levels)");
	free(b.s);
}
END_TEST

START_TEST(test_deep_unary_minus)
{
	Buf b = {0};
	puts_(&b, "graph g {\n y = ");
	repeat(&b, "-", 120000);
	puts_(&b, "x\n}\n");
	parse_err(b.s, 1, "t.fg:2:1006: error: expression nested too deeply (more than 1000 levels)");
	free(b.s);
	b = (Buf){0};
	puts_(&b, "graph g {\n y = ");
	repeat(&b, "- ", 1000000);
	puts_(&b, "1\n}\n");
	parse_err(b.s, 1, "t.fg:2:2006: error: expression nested too deeply (more than 1000 levels)");
	free(b.s);
}
END_TEST

START_TEST(test_deep_calls_and_brackets)
{
	Buf b = {0};
	puts_(&b, "graph g {\n y = ");
	repeat(&b, "f(", 120000);
	puts_(&b, "x");
	repeat(&b, ")", 120000);
	puts_(&b, "\n}\n");
	parse_err(b.s, 1, "t.fg:2:2007: error: expression nested too deeply (more than 1000 levels)");
	free(b.s);
	/* Brackets cannot nest: the first extra one is the error, and the
	 * scanner's bracket stack survives the other 119,999. */
	b = (Buf){0};
	puts_(&b, "graph g {\n y = f(k=");
	repeat(&b, "[", 120000);
	puts_(&b, "\n z = 1 2\n}\n");
	parse_err(b.s, 1, "t.fg:2:11: error: expected a dimension or ']' to close '[' at 2:10, found '['");
	free(b.s);
	b = (Buf){0};
	puts_(&b, "graph g {\n y = x)");
	repeat(&b, "({[", 100000);
	puts_(&b, "\n z = 1 2\n}\n");
	parse(b.s);
	ck_assert_int_ge(P.nerrors, 1);
	ck_assert_str_eq(P.first, "t.fg:2:7: error: unmatched ')'");
	free(b.s);
}
END_TEST

/* FG_AST_MAX_NEST levels of the pattern that stacks the most per level
 * parse; one more is the nesting error, never bison's "memory exhausted". */
START_TEST(test_nesting_limit_is_exact)
{
	static const struct {
		const char *open, *close;
		int levels;     /* opened by one `open` */
	} units[] = {
		{"(", ")", 1},
		{"-", "", 1},
		{"a < b + c * (", ")", 1},
		{"a < b + c * f(x, ", ")", 1},
		{"a < b + c * -(", ")", 2},
		{"a < b + c * -f(", ")", 2},
	};
	for (size_t u = 0; u < sizeof units / sizeof units[0]; u++) {
		for (int extra = 0; extra <= 1; extra++) {
			Buf b = {0};
			int n = FG_AST_MAX_NEST / units[u].levels + extra;
			puts_(&b, "graph g {\n y = ");
			repeat(&b, units[u].open, n);
			puts_(&b, "x");
			repeat(&b, units[u].close, n);
			puts_(&b, "\n}\n");
			parse(b.s);
			if (extra) {
				ck_assert_int_eq(P.nerrors, 1);
				ck_assert_msg(strstr(P.first, "nested too deeply (more than 1000 levels)"),
					      "%s", P.first);
			} else {
				ck_assert_msg(P.nerrors == 0, "%s: %s", units[u].open, P.out);
			}
			free(b.s);
		}
	}
}
END_TEST

START_TEST(test_million_term_chain)
{
	Buf b = {0};
	puts_(&b, "graph g {\n y = a");
	repeat(&b, " + a", 999999);
	puts_(&b, "\n output y\n}\n");
	double t0 = now_ms();
	parse_ok(b.s);
	double ms = now_ms() - t0;
	/* A left spine: walk it without recursion. */
	long n = 0;
	const FgExpr *e = P.prog.stmts[0].expr;
	for (; e->kind == FG_EX_CALL; e = e->args[0], n++)
		ck_assert_str_eq(e->name, "add");
	ck_assert_int_eq(n, 999999);
	ck_assert_loc(P.prog.stmts[0].expr->loc, 2, 6 + 4 * 999999 - 2);
	/* A guard against quadratic behaviour, not a benchmark: typical is
	 * 0.2 s on bare metal, 1 s in a loaded VM. */
	if (!SANITIZED)
		ck_assert_msg(ms < 10000, "a million terms took %.0f ms", ms);
	free(b.s);
	/* A million comparisons do not chain: one error. */
	b = (Buf){0};
	puts_(&b, "graph g {\n y = a");
	repeat(&b, " < a", 1000000);
	puts_(&b, "\n}\n");
	parse_err(b.s, 1,
		  "t.fg:2:12: error: comparisons do not chain: put parentheses around one of them");
	free(b.s);
}
END_TEST

START_TEST(test_ten_thousand_statements)
{
	Buf b = {0};
	puts_(&b, "graph g {\n  input x : f32[B=8, 4096]\n  v0 = x\n");
	char line[128];
	for (int i = 1; i <= 10000; i++) {
		snprintf(line, sizeof line, "  v%d = gelu(v%d * 0.5 + x)%s\n", i, i - 1,
			 i % 100 ? "" : " @save");
		puts_(&b, line);
	}
	puts_(&b, "  output v10000\n}\n");
	double best = 1e9;
	for (int r = 0; r < 3; r++) {
		double t0 = now_ms();
		parse_ok(b.s);
		double ms = now_ms() - t0;
		best = ms < best ? ms : best;
	}
	ck_assert_int_eq(P.prog.nstmts, 10003);
	ck_assert_str_eq(dump(P.prog.stmts[10001].expr), "(gelu (add (mul v9999 0.5) x))");
	/* As above: typical is a few ms on bare metal, 20-50 ms in a VM
	 * where each page fault is slow. */
	if (!SANITIZED)
		ck_assert_msg(best < 1000, "10,000 statements took %.1f ms", best);
	free(b.s);
}
END_TEST

START_TEST(test_huge_identifiers)
{
	for (size_t len = 100000; len <= 10000000; len *= 100) {
		Buf b = {0};
		puts_(&b, "graph g {\n  ");
		repeat(&b, "a", (long)len);
		puts_(&b, " = x\n  output ");
		repeat(&b, "a", (long)len);
		puts_(&b, "\n}\n");
		parse_ok(b.s);
		ck_assert_uint_eq(strlen(P.prog.stmts[0].name), len);
		ck_assert_ptr_eq(P.prog.stmts[0].name, P.prog.stmts[1].outs[0]);
		ck_assert_loc(P.prog.stmts[0].expr->loc, 2, (int)len + 6);
		free(b.s);
	}
}
END_TEST

static unsigned long long rng = 88172645463325252ull;

static unsigned next_byte(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (unsigned)(rng >> 24) & 0xff;
}

/* Random bytes alone and inside a graph: errors, located, at most one per
 * line, and no crash; the sanitizer build checks the rest. */
START_TEST(test_binary_garbage)
{
	static const char alphabet[] = "()[]{},:=@+-*/<>!#\n\r\t 0123456789.eEabfgiu_$\x80\xff";
	for (int round = 0; round < 200; round++) {
		Buf b = {0};
		int inside = round % 2;
		if (inside)
			puts_(&b, "graph g {\n");
		size_t n = 1 + next_byte() * 8;
		for (size_t i = 0; i < n; i++) {
			char c = round % 4 < 2 ? (char)next_byte()
					       : alphabet[next_byte() % (sizeof alphabet - 1)];
			put(&b, &c, 1);
		}
		if (inside)
			puts_(&b, "\n}\n");
		size_t lines = 1;
		for (size_t i = 0; i < b.n; i++)
			lines += b.s[i] == '\n';
		parse_bytes(b.s, b.n);
		if (P.nerrors > 0) {
			ck_assert_msg(strncmp(P.first, "t.fg:", 5) == 0, "%s", P.first);
			ck_assert_msg(strstr(P.first, ": error: "), "%s", P.first);
		}
		/* One per statement, and a statement spans one line at least. */
		ck_assert_msg((size_t)P.nerrors <= lines, "%d errors for %zu lines:\n%s",
			      P.nerrors, lines, P.out);
		free(b.s);
	}
}
END_TEST

static Suite *parse_suite(void)
{
	Suite *s = suite_create("parse");
	TCase *tc = tcase_create("parse");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_every_token);
	tcase_add_test(tc, test_identifiers);
	tcase_add_test(tc, test_numbers);
	tcase_add_test(tc, test_number_builder);
	tcase_add_test(tc, test_minus_is_not_part_of_a_number);
	tcase_add_test(tc, test_precedence);
	tcase_add_test(tc, test_calls);
	tcase_add_test(tc, test_multiline);
	tcase_add_test(tc, test_comments_and_blank_lines);
	tcase_add_test(tc, test_crlf_and_final_newline);
	tcase_add_test(tc, test_empty_files);
	tcase_add_test(tc, test_mlp_example);
	tcase_add_test(tc, test_declarations);
	tcase_add_test(tc, test_annotations);
	tcase_add_test(tc, test_fuse);
	tcase_add_test(tc, test_syntax_errors);
	tcase_add_test(tc, test_lexical_errors);
	tcase_add_test(tc, test_recovery);
	tcase_add_test(tc, test_deep_parentheses);
	tcase_add_test(tc, test_deep_unary_minus);
	tcase_add_test(tc, test_deep_calls_and_brackets);
	tcase_add_test(tc, test_nesting_limit_is_exact);
	tcase_add_test(tc, test_million_term_chain);
	tcase_add_test(tc, test_ten_thousand_statements);
	tcase_add_test(tc, test_huge_identifiers);
	tcase_add_test(tc, test_binary_garbage);
	/* Every test leaves its last parse behind; free it. */
	tcase_add_checked_fixture(tc, NULL, release);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(parse_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed != 0;
}
