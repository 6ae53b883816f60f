/*
 * test_report.c - the fusion report's three formats on plans made by hand
 * (so that they do not move with the partitioner) and on a few that
 * fg_pass_fuse made: the JSON parses under Python's strict reader and has
 * the schema the architecture promises, free text is escaped, the text
 * report names every group and boundary, and the DOT has one cluster per
 * group and renders with Graphviz.  Python or Graphviz missing skips the
 * check that needs it (with a note), never the others.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fg.h"

#define PYTHON "/usr/bin/python3"

typedef struct Fix {
	FgArena arena;
	FgSource src;
	FgDiag diag;
	FgGraph g;
	FgPlan plan;
} Fix;

static Fix *parse(const char *text)
{
	Fix *f = calloc(1, sizeof *f);
	FgProgram prog;

	fg_arena_init(&f->arena);
	f->src = (FgSource){"t.fg", text, strlen(text)};
	f->diag.src = &f->src;
	ck_assert_int_eq(fg_parse(&f->arena, &f->diag, &f->src, &prog), 0);
	ck_assert_int_eq(fg_ir_build(&f->arena, &f->diag, &prog, NULL, 0, &f->g), 0);
	fg_pass_expand(&f->g);
	f->plan.g = &f->g;
	fg_fuse_defaults(&f->plan.opt);
	f->plan.names = fg_ir_names(&f->g);
	return f;
}

static void fix_free(Fix *f)
{
	fg_arena_free(&f->arena);
	free(f);
}

static int named(const Fix *f, const char *name)
{
	for (int i = 0; i < f->g.nnodes; i++)
		if (strcmp(f->plan.names[i], name) == 0)
			return i;
	ck_abort_msg("no node named %s", name);
	return -1;
}

static int first_op(const Fix *f, FgOp op)
{
	for (int i = 0; i < f->g.nnodes; i++)
		if (f->g.nodes[i].op == op)
			return i;
	ck_abort_msg("no %s node", fg_op_info[op].name);
	return -1;
}

static int *ids(Fix *f, int n, const int *v)
{
	int *p = fg_arena_array(&f->arena, (size_t)n + 1, sizeof(int));

	memcpy(p, v, (size_t)n * sizeof(int));
	return p;
}

static const char *const nasty = "say \"hi\"\\ back\nslash\ttab\x01 end";

/*
 * h = matmul(x, w) in a gemm group; y = softmax(h) in a row reduction:
 *
 *   group 0  gemm       reads x, w   writes h (cross-block)
 *   group 1  rowreduce  reads h      writes y (output)
 *
 * with two boundary edges, h into the softmax's max and its sub; the
 * first one's detail is free text full of characters to escape.
 */
static const char *const mm_softmax =
	"graph rep {\n"
	"  input x : f32[4, 8]\n"
	"  param w : f32[8, 8]\n"
	"  h = matmul(x, w)\n"
	"  y = softmax(h)\n"
	"  output y\n"
	"}\n";

static Fix *hand_plan(void)
{
	Fix *f = parse(mm_softmax);
	FgPlan *p = &f->plan;
	int x = named(f, "x"), w = named(f, "w"), h = named(f, "h"), y = named(f, "y");
	int mx = first_op(f, FG_OP_MAX), sub = first_op(f, FG_OP_SUB);
	int soft[5] = {mx, sub, first_op(f, FG_OP_EXP), first_op(f, FG_OP_SUM), y};
	int rd0[2] = {x, w};

	p->why = fg_arena_array(&f->arena, (size_t)f->g.nnodes, sizeof(FgReason));
	p->home = fg_arena_array(&f->arena, (size_t)f->g.nnodes, sizeof(int));
	for (int i = 0; i < f->g.nnodes; i++)
		p->home[i] = -1;
	p->ngroups = 2;
	p->groups = fg_arena_array(&f->arena, 2, sizeof(FgGroup));
	p->groups[0] = (FgGroup){.kind = FG_GROUP_GEMM, .name = "g0_gemm_matmul", .nodes = ids(f, 1, &h),
				 .nnodes = 1, .reads = ids(f, 2, rd0), .nreads = 2, .writes = ids(f, 1, &h),
				 .nwrites = 1, .root = h, .est_regs = 30, .bytes_read = 384, .bytes_written = 128,
				 .cost = {.bytes = 512, .launches = 1, .est_us = 4.25}};
	p->groups[1] = (FgGroup){.kind = FG_GROUP_ROWREDUCE, .name = "g1_rowreduce_softmax",
				 .nodes = ids(f, 5, soft), .nnodes = 5, .reads = ids(f, 1, &h), .nreads = 1,
				 .writes = ids(f, 1, &y), .nwrites = 1, .root = y, .red_axes = 2, .est_regs = 32,
				 .bytes_read = 128, .bytes_written = 128, .cost = {.bytes = 256, .launches = 1, .est_us = 3.0625}};
	p->why[h] = FG_WHY_CROSS_BLOCK;
	p->why[y] = FG_WHY_OUTPUT;
	p->home[h] = 0;
	p->home[y] = 1;
	p->nedges = 2;
	p->edges = fg_arena_array(&f->arena, 2, sizeof(FgEdge));
	p->edges[0] = (FgEdge){h, mx, 0, 1, FG_WHY_CROSS_BLOCK, nasty};
	p->edges[1] = (FgEdge){h, sub, 0, 1, FG_WHY_CROSS_BLOCK, "a matmul result read a row at a time"};
	p->fused = (FgCost){.bytes = 768, .launches = 2, .est_us = 7.3125};
	p->unfused = (FgCost){.bytes = 2048, .launches = 6, .est_us = 18.5};
	return f;
}

/* ------------------------------------------------------------ helpers */

typedef void (*ReportFn)(FILE *, const FgPlan *);

static char *render(ReportFn fn, const FgPlan *p)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);

	ck_assert_ptr_nonnull(m);
	fn(m, p);
	fclose(m);
	return buf;
}

static int count(const char *s, const char *needle)
{
	int n = 0;

	for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

static void assert_has(const char *text, const char *want)
{
	ck_assert_msg(strstr(text, want) != NULL, "expected\n  %s\nin:\n%s", want, text);
}

typedef struct Tmp {
	char dir[64];
	char path[4][128];
} Tmp;

static void tmp_open(Tmp *t)
{
	strcpy(t->dir, "/tmp/fg-report-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(t->dir));
	for (int i = 0; i < 4; i++)
		snprintf(t->path[i], sizeof t->path[i], "%s/f%d", t->dir, i);
}

static void tmp_close(Tmp *t)
{
	for (int i = 0; i < 4; i++)
		unlink(t->path[i]);
	rmdir(t->dir);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "wb");

	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

/* Runs cmd; its exit status, with stdout and stderr in *out. */
static int run(const char *cmd, char **out)
{
	FILE *p = popen(cmd, "r");
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap);
	size_t got;

	ck_assert_ptr_nonnull(p);
	while ((got = fread(buf + len, 1, cap - len - 1, p)) > 0) {
		len += got;
		if (cap - len < 2)
			buf = realloc(buf, cap *= 2);
	}
	buf[len] = 0;
	*out = buf;
	return pclose(p);
}

static int have_python(void)
{
	if (access(PYTHON, X_OK) == 0)
		return 1;
	fprintf(stderr, "note: %s missing: JSON parse checks skipped\n", PYTHON);
	return 0;
}

static int have_dot(void)
{
	if (system("command -v dot >/dev/null 2>&1") == 0)
		return 1;
	fprintf(stderr, "note: Graphviz dot missing: render checks skipped\n");
	return 0;
}

/* The schema of architecture.md's JSON report, strictly: no NaN or
 * Infinity, integers where integers are due.  argv: file, groups, edges,
 * and optionally a file holding edge 0's detail. */
static const char *const schema_py =
	"import json, sys\n"
	"def bad(c):\n"
	"    raise ValueError('not JSON: ' + c)\n"
	"d = json.load(open(sys.argv[1], encoding='utf-8'), parse_constant=bad)\n"
	"ng, ne = int(sys.argv[2]), int(sys.argv[3])\n"
	"reasons = {'output', 'saved', 'cross-block', 'register-pressure', 'fan-out', 'user'}\n"
	"def isint(v): return isinstance(v, int) and not isinstance(v, bool)\n"
	"def isnum(v): return isint(v) or isinstance(v, float)\n"
	"def isstr(v): return isinstance(v, str)\n"
	"assert isstr(d['graph'])\n"
	"assert len(d['groups']) == ng, len(d['groups'])\n"
	"for i, g in enumerate(d['groups']):\n"
	"    assert g['id'] == i\n"
	"    assert g['kind'] in ('loop', 'rowreduce', 'reduce', 'gemm', 'scan', 'topk', 'attention'), g['kind']\n"
	"    assert isstr(g['name'])\n"
	"    assert isint(g['launches']) and isnum(g['est_us']) and isint(g['est_regs'])\n"
	"    assert isnum(g['flops_tc']) and isnum(g['flops_cc']) and g['bound'] in ('memory', 'compute'), g\n"
	"    for o in g['ops']:\n"
	"        assert isstr(o['op']) and isstr(o['value']) and isint(o['line']) and isint(o['col'])\n"
	"        assert o['composite'] is None or isstr(o['composite'])\n"
	"    for r in g['reads']:\n"
	"        assert isstr(r['value']) and isint(r['bytes'])\n"
	"    for w in g['writes']:\n"
	"        assert isstr(w['value']) and isint(w['bytes']) and w['reason'] in reasons, w\n"
	"assert len(d['edges']) == ne, len(d['edges'])\n"
	"for e in d['edges']:\n"
	"    assert isint(e['from']) and isint(e['to']) and e['reason'] in reasons, e\n"
	"    assert isstr(e['producer']) and isstr(e['consumer']) and isstr(e['detail'])\n"
	"for k in ('fused', 'unfused'):\n"
	"    t = d['totals'][k]\n"
	"    assert isint(t['bytes']) and isint(t['launches']) and isnum(t['est_us'])\n"
	"    assert isnum(t['flops_tc']) and isnum(t['flops_cc']) and t['bound'] in ('memory', 'compute'), t\n"
	"assert isint(d['memory']['planned_bytes']) and isint(d['memory']['naive_bytes'])\n"
	"if len(sys.argv) > 4:\n"
	"    want = open(sys.argv[4], 'rb').read().decode('utf-8')\n"
	"    assert d['edges'][0]['detail'] == want, (d['edges'][0]['detail'], want)\n"
	"print('ok')\n";

/* The plan's JSON must pass json.tool and the schema; detail (or NULL):
 * what edge 0's detail must read back as. */
static void check_json(const FgPlan *p, const char *detail)
{
	char *json = render(fg_report_json, p), *out, cmd[1024];
	Tmp t;

	if (!have_python()) {
		free(json);
		return;
	}
	tmp_open(&t);
	write_file(t.path[0], json);
	write_file(t.path[1], schema_py);
	snprintf(cmd, sizeof cmd, PYTHON " -m json.tool %s >/dev/null 2>&1", t.path[0]);
	ck_assert_msg(system(cmd) == 0, "json.tool rejects:\n%s", json);
	if (detail)
		write_file(t.path[2], detail);
	snprintf(cmd, sizeof cmd, PYTHON " %s %s %d %d %s 2>&1", t.path[1], t.path[0], p->ngroups, p->nedges,
		 detail ? t.path[2] : "");
	int rc = run(cmd, &out);
	ck_assert_msg(rc == 0 && strcmp(out, "ok\n") == 0, "schema check failed:\n%s\non:\n%s", out, json);
	free(out);
	tmp_close(&t);
	free(json);
}

/* What must hold of any DOT we write, Graphviz or not: one digraph, one
 * cluster per group, quotes closed on the line they open, braces
 * balanced outside quotes and HTML labels. */
static void check_dot_syntax(const char *dot, int ngroups)
{
	int depth = 0, angle = 0, quoted = 0;

	ck_assert_msg(strncmp(dot, "digraph ", 8) == 0, "%s", dot);
	ck_assert_int_eq(count(dot, "digraph"), 1);
	ck_assert_int_eq(count(dot, "subgraph cluster_"), ngroups);
	for (const char *c = dot; *c; c++) {
		if (quoted) {
			if (*c == '\\' && c[1])
				c++;
			else if (*c == '"')
				quoted = 0;
			else
				ck_assert_msg(*c != '\n', "a newline inside a quoted string");
		} else if (angle) {
			angle += *c == '<' ? 1 : *c == '>' ? -1 : 0;
		} else if (*c == '"') {
			quoted = 1;
		} else if (*c == '<') {
			angle = 1;
		} else if (*c == '{') {
			depth++;
		} else if (*c == '}') {
			ck_assert_int_gt(depth, 0);
			depth--;
		}
	}
	ck_assert(!quoted && !angle);
	ck_assert_int_eq(depth, 0);
	ck_assert_int_eq(dot[strlen(dot) - 1], '\n');
}

static void check_dot_renders(const char *dot)
{
	char cmd[512], *out;
	Tmp t;

	if (!have_dot())
		return;
	tmp_open(&t);
	write_file(t.path[0], dot);
	snprintf(cmd, sizeof cmd, "dot -Tsvg %s -o %s 2>&1", t.path[0], t.path[1]);
	int rc = run(cmd, &out);
	ck_assert_msg(rc == 0 && out[0] == 0, "dot -Tsvg failed (%d):\n%s\non:\n%s", rc, out, dot);
	FILE *svg = fopen(t.path[1], "r");
	ck_assert_ptr_nonnull(svg);
	fclose(svg);
	free(out);
	tmp_close(&t);
}

/* -------------------------------------------------------------- JSON */

START_TEST(json_parses_with_the_schema)
{
	Fix *f = hand_plan();

	fg_pass_memplan(&f->plan);
	check_json(&f->plan, nasty);
	fix_free(f);
}
END_TEST

START_TEST(json_names_groups_edges_and_reasons)
{
	Fix *f = hand_plan();
	char *json;

	fg_pass_memplan(&f->plan);
	json = render(fg_report_json, &f->plan);
	assert_has(json, "\"graph\": \"rep\"");
	assert_has(json, "\"kind\": \"gemm\"");
	assert_has(json, "\"kind\": \"rowreduce\"");
	assert_has(json, "\"name\": \"g1_rowreduce_softmax\"");
	assert_has(json, "{\"op\": \"matmul\", \"value\": \"h\", \"type\": \"f32[4,8]\", \"line\": 4, \"col\": 7, "
			 "\"composite\": null}");
	assert_has(json, "\"composite\": \"softmax\"");
	assert_has(json, "{\"value\": \"y\", \"bytes\": 128, \"reason\": \"output\"");
	assert_has(json, "{\"value\": \"h\", \"bytes\": 128, \"reason\": \"cross-block\"");
	assert_has(json, "{\"value\": \"w\", \"bytes\": 256}");
	assert_has(json, "\"est_us\": 4.250");
	assert_has(json, "\"fused\": {\"bytes\": 768, \"launches\": 2, \"est_us\": 7.312, \"flops_tc\": 0.000, "
		   "\"flops_cc\": 0.000, \"bound\": \"memory\"}");
	assert_has(json, "\"planned_bytes\": 512, \"naive_bytes\": 512");
	/* The escapes themselves, byte for byte. */
	assert_has(json, "\"detail\": \"say \\\"hi\\\"\\\\ back\\nslash\\ttab\\u0001 end\"");
	ck_assert_int_eq(count(json, "\"reason\": \"cross-block\""), 3);
	free(json);
	fix_free(f);
}
END_TEST

START_TEST(json_escapes_every_byte)
{
	/* Every control character, DEL, and bytes that are not UTF-8 (a lone
	 * continuation byte, a truncated sequence, an overlong encoding),
	 * beside real UTF-8, which must come through. */
	Fix *f = hand_plan();
	char detail[64];
	int n = 0;

	for (int c = 1; c < 0x20; c++)
		detail[n++] = (char)c;
	strcpy(detail + n, "\x7f \x80 \xe2\x82 \xc0\xaf caf\xc3\xa9 \xe2\x86\x92");
	f->plan.edges[1].detail = detail;
	check_json(&f->plan, NULL);
	char *json = render(fg_report_json, &f->plan);
	assert_has(json, "\\u0001\\u0002");
	assert_has(json, "\\n\\u000b\\u000c\\r");
	assert_has(json, "caf\xc3\xa9 \xe2\x86\x92");
	assert_has(json, "\\ufffd");
	free(json);
	fix_free(f);
}
END_TEST

START_TEST(json_without_memplan_or_groups)
{
	Fix *f = hand_plan();
	char *json = render(fg_report_json, &f->plan);

	assert_has(json, "\"offset\": null");
	free(json);
	check_json(&f->plan, nasty);
	f->plan.ngroups = 0;
	f->plan.nedges = 0;
	check_json(&f->plan, NULL);
	json = render(fg_report_json, &f->plan);
	assert_has(json, "\"groups\": [],");
	assert_has(json, "\"edges\": [],");
	free(json);
	fix_free(f);
}
END_TEST

/* -------------------------------------------------------------- text */

START_TEST(text_shows_groups_ops_and_io)
{
	Fix *f = hand_plan();
	char *text;

	fg_pass_memplan(&f->plan);
	text = render(fg_report_text, &f->plan);
	assert_has(text, "fusion report: graph rep\n");
	assert_has(text, "cost model: 4300 GB/s, 790 TFLOP/s on the tensor cores, 67 on the CUDA cores, 3 us per launch, "
		   "128 registers per thread\n");
	assert_has(text, "\ngroup 0  gemm       g0_gemm_matmul  (1 launch, est 4.25 us, est regs 30)\n");
	assert_has(text, "\ngroup 1  rowreduce  g1_rowreduce_softmax  (1 launch, est 3.06 us, est regs 32)\n");
	assert_has(text, "\n  h  matmul  f32[4,8]  4:7\n");
	assert_has(text, "  y   div  f32[4,8]  5:7  (from softmax)\n");
	assert_has(text, "\n  reads:   x  128 B\n           w  256 B\n  writes:  h  128 B  cross-block\n");
	assert_has(text, "\n  reads:   h  128 B\n  writes:  y  128 B  output\n");
	free(text);
	fix_free(f);
}
END_TEST

START_TEST(text_lists_every_boundary)
{
	Fix *f = hand_plan();
	const char *mx = f->plan.names[f->plan.edges[0].consumer];
	const char *sub = f->plan.names[f->plan.edges[1].consumer];
	char want[256];
	char *text = render(fg_report_text, &f->plan);

	assert_has(text, "\nboundaries (2)\n");
	/* Control characters in free text become spaces: one line per edge. */
	snprintf(want, sizeof want, "  h -> %s  (group 0 -> group 1)  cross-block: say \"hi\"\\ back slash tab  end "
		 "[costs 256 B: written once, read by 1 group, 0.00 us]\n", mx);
	assert_has(text, want);
	snprintf(want, sizeof want, "  h -> %s  (group 0 -> group 1)  cross-block: a matmul result read a row at a time "
		 "[costs 256 B: written once, read by 1 group, 0.00 us]\n", sub);
	assert_has(text, want);
	free(text);
	fix_free(f);
}
END_TEST

START_TEST(text_totals_and_memory)
{
	Fix *f = hand_plan();
	char *text = render(fg_report_text, &f->plan);

	assert_has(text, "\nmemory: not planned\n");
	free(text);
	fg_pass_memplan(&f->plan);
	text = render(fg_report_text, &f->plan);
	assert_has(text, "\ntotals      fused    unfused   unfused/fused\n"
			 "  bytes     768 B    2.0 KiB   2.67x\n"
			 "  launches  2        6         3.00x\n"
			 "  est time  7.31 us  18.50 us  2.53x\n");
	/* h and y are both live in group 1: nothing to share. */
	assert_has(text, "\n  planned   512 B  (512 bytes)\n"
			 "  naive     512 B  (512 bytes: one buffer per value)\n"
			 "  reuse saves 0.0%\n");
	/* No line ends in blanks. */
	ck_assert_ptr_null(strstr(text, " \n"));
	free(text);
	fix_free(f);
}
END_TEST

START_TEST(big_numbers_in_human_units)
{
	Fix *f = hand_plan();
	char *text;

	f->plan.fused.bytes = 3 * 1024 * 1024 + 512 * 1024;
	f->plan.unfused.bytes = (int64_t)5 << 30;
	text = render(fg_report_text, &f->plan);
	assert_has(text, "  bytes     3.5 MiB  5.0 GiB   1462.86x\n");
	free(text);
	fix_free(f);
}
END_TEST

/* --------------------------------------------------------------- DOT */

START_TEST(dot_clusters_and_boundaries)
{
	Fix *f = hand_plan();
	char want[128];
	char *dot = render(fg_report_dot, &f->plan);
	const FgEdge *e = &f->plan.edges[0];

	check_dot_syntax(dot, 2);
	assert_has(dot, "subgraph cluster_0 {");
	assert_has(dot, "subgraph cluster_1 {");
	snprintf(want, sizeof want, "\"g0_n%d\" [label=\"h = matmul\"", e->producer);
	assert_has(dot, want);
	snprintf(want, sizeof want, "\"g0_n%d\" -> \"g1_n%d\" [label=\"cross-block\"", e->producer, e->consumer);
	assert_has(dot, want);
	/* The detail rides along as a tooltip, escaped. */
	assert_has(dot, "tooltip=\"say \\\"hi\\\"\\\\ back\\nslash tab  end\"");
	/* Inputs and params are boxes of their own, outside every cluster. */
	snprintf(want, sizeof want, "\"in_%d\" [label=\"x\\nf32[4,8]\"", named(f, "x"));
	assert_has(dot, want);
	snprintf(want, sizeof want, "\"in_%d\" -> \"g0_n%d\";", named(f, "w"), e->producer);
	assert_has(dot, want);
	/* A legend, with each kind's fill. */
	assert_has(dot, ">rowreduce</td>");
	check_dot_renders(dot);
	free(dot);
	fix_free(f);
}
END_TEST

START_TEST(dot_renders_any_detail)
{
	/* Control characters, a lone continuation byte, a cut sequence: the
	 * tooltip stays one valid UTF-8 line, so Graphviz says nothing. */
	Fix *f = hand_plan();
	char *dot;

	f->plan.edges[1].detail = "a\x01" "b\x80" "c\xe2\x82 d\r\n\"q\" \xe2\x86\x92";
	dot = render(fg_report_dot, &f->plan);
	check_dot_syntax(dot, 2);
	assert_has(dot, "tooltip=\"a b?c?? d \\n\\\"q\\\" \xe2\x86\x92\"");
	check_dot_renders(dot);
	free(dot);
	fix_free(f);
}
END_TEST

/* Which groups fg_report_dot_ops draws op by op, for render(). */
static const char *dot_ops_flags;

static void dot_with_ops(FILE *f, const FgPlan *p)
{
	fg_report_dot_ops(f, p, dot_ops_flags);
}

START_TEST(dot_one_node_per_group)
{
	Fix *f = hand_plan();
	char want[160];
	const FgEdge *e = &f->plan.edges[0];

	/* none op by op: a node per group, its ops and inputs in its label,
	 * and the two edges of h into group 1 one edge, h named once */
	dot_ops_flags = "\0\0";
	char *dot = render(dot_with_ops, &f->plan);
	check_dot_syntax(dot, 0);
	assert_has(dot, "\"g0\" [label=\"group 0: gemm\\ng0_gemm_matmul\\n1 launch, 512 B, est 4.25 us\\nmatmul\\n"
			"reads x, w\"");
	assert_has(dot, "\"g1\" [label=\"group 1: rowreduce\\ng1_rowreduce_softmax\\n1 launch, 256 B, est 3.06 us\\n"
			"max, sub, exp, sum, div\"");
	assert_has(dot, "\"g0\" -> \"g1\" [label=\"h: cross-block\", tooltip=\"say \\\"hi\\\"\\\\ back\\nslash tab  end"
			"\\na matmul result read a row at a time\"");
	ck_assert_int_eq(count(dot, "->"), 1);
	ck_assert_int_eq(count(dot, "\"in_"), 0);
	check_dot_renders(dot);
	free(dot);

	/* group 0 op by op: its cluster and inputs, an edge from h's node */
	dot_ops_flags = "\1\0";
	dot = render(dot_with_ops, &f->plan);
	check_dot_syntax(dot, 1);
	snprintf(want, sizeof want, "\"g0_n%d\" -> \"g1\" [label=\"h: cross-block\"", e->producer);
	assert_has(dot, want);
	snprintf(want, sizeof want, "\"in_%d\" -> \"g0_n%d\";", named(f, "x"), e->producer);
	assert_has(dot, want);
	check_dot_renders(dot);
	free(dot);
	fix_free(f);
}
END_TEST

/* ---------------------------------------- on plans the partitioner made */

static const char *const real_graphs[] = {
	"graph block {\n"
	"  input x : f32[64, 128]\n"
	"  param w : f32[128, 128]\n"
	"  param g : f32[128]\n"
	"  param b : f32[128]\n"
	"  n = layernorm(x, g, b) @save\n"
	"  h = matmul(n, w)\n"
	"  a = gelu(h) @save\n"
	"  p = softmax(a)\n"
	"  s = sum(p * x)\n"
	"  y = x + p / s\n"
	"  output y\n"
	"}\n",
	"graph fanout {\n"
	"  input x : f16[32, 16]\n"
	"  e = exp(x)\n"
	"  m = e * 2 @materialize\n"
	"  c = mean(e, axis=0)\n"
	"  y = m + c\n"
	"  z = transpose(m)\n"
	"  output y, z\n"
	"}\n",
};

static void check_real(const char *text, int no_fuse)
{
	Fix *f = parse(text);
	FgFuseOptions o;
	char want[256];

	fg_fuse_defaults(&o);
	o.no_fuse = no_fuse;
	memset(&f->plan, 0, sizeof f->plan);
	ck_assert_int_eq(fg_pass_fuse(&f->g, &o, &f->plan, &f->diag), 0);
	fg_pass_memplan(&f->plan);
	check_json(&f->plan, NULL);
	char *dot = render(fg_report_dot, &f->plan);
	check_dot_syntax(dot, f->plan.ngroups);
	check_dot_renders(dot);
	char *txt = render(fg_report_text, &f->plan), *again = render(fg_report_text, &f->plan);
	ck_assert_str_eq(txt, again);
	for (int k = 0; k < f->plan.nedges; k++) {
		const FgEdge *e = &f->plan.edges[k];
		snprintf(want, sizeof want, "  %s -> %s", f->plan.names[e->producer], f->plan.names[e->consumer]);
		assert_has(txt, want);
		snprintf(want, sizeof want, "(group %d -> group %d)", e->from, e->to);
		assert_has(txt, want);
	}
	for (int gi = 0; gi < f->plan.ngroups; gi++) {
		snprintf(want, sizeof want, "  %s  (", f->plan.groups[gi].name);
		assert_has(txt, want);
	}
	free(txt);
	free(again);
	free(dot);
	fix_free(f);
}

START_TEST(partitioner_plans)
{
	for (size_t i = 0; i < sizeof real_graphs / sizeof *real_graphs; i++) {
		check_real(real_graphs[i], 0);
		check_real(real_graphs[i], 1);
	}
}
END_TEST

START_TEST(reports_are_deterministic)
{
	Fix *a = hand_plan(), *b = hand_plan();
	ReportFn fns[3] = {fg_report_text, fg_report_json, fg_report_dot};

	fg_pass_memplan(&a->plan);
	fg_pass_memplan(&b->plan);
	for (int k = 0; k < 3; k++) {
		char *x = render(fns[k], &a->plan), *y = render(fns[k], &b->plan);
		ck_assert_str_eq(x, y);
		free(x);
		free(y);
	}
	fix_free(a);
	fix_free(b);
}
END_TEST

static Suite *report_suite(void)
{
	Suite *s = suite_create("report");
	TCase *t = tcase_create("report");

	tcase_set_timeout(t, 60);
	tcase_add_test(t, json_parses_with_the_schema);
	tcase_add_test(t, json_names_groups_edges_and_reasons);
	tcase_add_test(t, json_escapes_every_byte);
	tcase_add_test(t, json_without_memplan_or_groups);
	tcase_add_test(t, text_shows_groups_ops_and_io);
	tcase_add_test(t, text_lists_every_boundary);
	tcase_add_test(t, text_totals_and_memory);
	tcase_add_test(t, big_numbers_in_human_units);
	tcase_add_test(t, dot_clusters_and_boundaries);
	tcase_add_test(t, dot_renders_any_detail);
	tcase_add_test(t, dot_one_node_per_group);
	tcase_add_test(t, partitioner_plans);
	tcase_add_test(t, reports_are_deterministic);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	SRunner *r = srunner_create(report_suite());
	int failed;

	srunner_run_all(r, CK_NORMAL);
	failed = srunner_ntests_failed(r);
	srunner_free(r);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
