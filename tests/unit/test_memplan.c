/*
 * test_memplan.c - the memory planner on plans made by hand: lifetimes
 * (writer to last reader, outputs and saved values to the end), no two
 * values live at once ever share a byte, offsets are aligned, space is
 * reused where lifetimes allow, the result does not depend on anything but
 * the plan, and a 10,000-group plan is placed fast.  Every plan is checked
 * against a lifetime computation of the test's own, pair by pair.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fg.h"

#define ALIGN 256

#if defined(__SANITIZE_ADDRESS__)
#define SLOW_BUILD 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SLOW_BUILD 1
#endif
#endif
#ifndef SLOW_BUILD
#define SLOW_BUILD 0
#endif

/* A graph of nnodes f32[64] values (256 bytes each) and an empty plan. */
typedef struct Fix {
	FgArena arena;
	FgGraph g;
	FgPlan plan;
	int capgroups;
} Fix;

static Fix *fix_new(int nnodes, int maxgroups)
{
	Fix *f = calloc(1, sizeof *f);

	fg_arena_init(&f->arena);
	f->g.name = "t";
	f->g.arena = &f->arena;
	f->g.nodes = fg_arena_array(&f->arena, (size_t)nnodes, sizeof(FgNode));
	f->g.nnodes = f->g.cap = nnodes;
	for (int i = 0; i < nnodes; i++) {
		FgNode *n = &f->g.nodes[i];
		n->op = FG_OP_EXP;
		n->dt = FG_DT_F32;
		n->shape.rank = 1;
		n->shape.d[0] = 64;
		n->fuse_block = -1;
	}
	f->plan.g = &f->g;
	fg_fuse_defaults(&f->plan.opt);
	f->plan.why = fg_arena_array(&f->arena, (size_t)nnodes, sizeof(FgReason));
	f->plan.home = fg_arena_array(&f->arena, (size_t)nnodes, sizeof(int));
	for (int i = 0; i < nnodes; i++)
		f->plan.home[i] = -1;
	f->plan.groups = fg_arena_array(&f->arena, (size_t)maxgroups, sizeof(FgGroup));
	f->capgroups = maxgroups;
	return f;
}

static void fix_free(Fix *f)
{
	fg_arena_free(&f->arena);
	free(f);
}

static int *copy_ids(Fix *f, const int *ids, int n)
{
	int *p = fg_arena_array(&f->arena, (size_t)n + 1, sizeof(int));

	if (n)
		memcpy(p, ids, (size_t)n * sizeof(int));
	return p;
}

/* Appends a group reading and writing the given values; what it writes
 * gets the group as home and cross-block as reason unless it has one. */
static int add_group(Fix *f, const int *reads, int nr, const int *writes, int nw)
{
	int gi = f->plan.ngroups++;
	FgGroup *gr = &f->plan.groups[gi];

	ck_assert_int_le(f->plan.ngroups, f->capgroups);
	gr->kind = FG_GROUP_LOOP;
	gr->reads = copy_ids(f, reads, nr);
	gr->nreads = nr;
	gr->writes = copy_ids(f, writes, nw);
	gr->nwrites = nw;
	gr->nodes = copy_ids(f, writes, nw);
	gr->nnodes = nw;
	gr->root = nw ? writes[nw - 1] : -1;
	for (int k = 0; k < nw; k++) {
		f->plan.home[writes[k]] = gi;
		if (f->plan.why[writes[k]] == FG_WHY_NONE)
			f->plan.why[writes[k]] = FG_WHY_CROSS_BLOCK;
	}
	return gi;
}

static int64_t aligned(const FgGraph *g, int id)
{
	int64_t b = fg_value_bytes(g, id);

	return b < ALIGN ? ALIGN : (b + ALIGN - 1) / ALIGN * ALIGN;
}

static int needs_space(const FgPlan *p, int id)
{
	FgOp op = p->g->nodes[id].op;

	return p->why[id] != FG_WHY_NONE && op != FG_OP_INPUT && op != FG_OP_PARAM;
}

/* The test's own lifetimes: from the first writer (or home) to the last
 * reader; outputs and saved values to the last group. */
static void lifetimes(const FgPlan *p, int *start, int *end)
{
	int last = p->ngroups ? p->ngroups - 1 : 0;

	for (int id = 0; id < p->g->nnodes; id++) {
		start[id] = p->home[id] >= 0 ? p->home[id] : INT32_MAX;
		end[id] = -1;
	}
	for (int gi = 0; gi < p->ngroups; gi++) {
		const FgGroup *gr = &p->groups[gi];
		for (int k = 0; k < gr->nwrites; k++)
			if (gi < start[gr->writes[k]])
				start[gr->writes[k]] = gi;
		for (int k = 0; k < gr->nreads; k++)
			if (gi > end[gr->reads[k]])
				end[gr->reads[k]] = gi;
	}
	for (int id = 0; id < p->g->nnodes; id++) {
		if (start[id] == INT32_MAX)
			start[id] = 0;
		if (p->g->nodes[id].flags & (FG_NF_OUTPUT | FG_NF_SAVED))
			end[id] = last;
		if (end[id] < start[id])
			end[id] = start[id];
	}
}

/* Every invariant of fg_pass_memplan's result.  Plain ifs, not
 * ck_assert: a passing ck_assert writes a mark to Check's log, which
 * would cost seconds over the pairs of a 10,000-value plan. */
static void check_memory(const FgPlan *p)
{
	int n = p->g->nnodes;
	int *start = calloc((size_t)n, sizeof(int)), *end = calloc((size_t)n, sizeof(int));
	int64_t naive = 0, top = 0;

	lifetimes(p, start, end);
	ck_assert_ptr_nonnull(p->offset);
	for (int id = 0; id < n; id++) {
		if (!needs_space(p, id)) {
			if (p->offset[id] != -1)
				ck_abort_msg("node %d needs no space but has offset %lld", id,
					     (long long)p->offset[id]);
			continue;
		}
		if (p->offset[id] < 0 || p->offset[id] % ALIGN != 0)
			ck_abort_msg("node %d: offset %lld is not aligned", id, (long long)p->offset[id]);
		naive += aligned(p->g, id);
		if (p->offset[id] + aligned(p->g, id) > top)
			top = p->offset[id] + aligned(p->g, id);
	}
	ck_assert_int_eq(p->naive_bytes, naive);
	ck_assert_int_eq(p->planned_bytes, top);
	ck_assert_int_le(p->planned_bytes, p->naive_bytes);
	for (int i = 0; i < n; i++) {
		if (!needs_space(p, i))
			continue;
		for (int j = i + 1; j < n; j++) {
			if (!needs_space(p, j) || end[i] < start[j] || end[j] < start[i])
				continue;
			int64_t a0 = p->offset[i], a1 = a0 + aligned(p->g, i);
			int64_t b0 = p->offset[j], b1 = b0 + aligned(p->g, j);
			if (a1 > b0 && b1 > a0)
				ck_abort_msg("values %d [%d,%d] @%lld and %d [%d,%d] @%lld are live together and overlap",
					     i, start[i], end[i], (long long)a0, j, start[j], end[j], (long long)b0);
		}
	}
	free(start);
	free(end);
}

/* x -> v1 -> ... -> vn: group i reads v(i-1) (x for the first) and writes
 * vi; the last is the output. */
static Fix *chain(int n)
{
	Fix *f = fix_new(n + 1, n);

	f->g.nodes[0].op = FG_OP_INPUT;
	for (int i = 1; i <= n; i++) {
		int r = i - 1, w = i;
		add_group(f, &r, 1, &w, 1);
	}
	f->g.nodes[n].flags |= FG_NF_OUTPUT;
	f->plan.why[n] = FG_WHY_OUTPUT;
	return f;
}

START_TEST(disjoint_lifetimes_share)
{
	Fix *f = chain(3);      /* a [0,1], b [1,2], c [2,2] */

	fg_pass_memplan(&f->plan);
	check_memory(&f->plan);
	ck_assert_int_eq(f->plan.offset[0], -1);
	ck_assert_int_eq(f->plan.offset[1], f->plan.offset[3]);
	ck_assert_int_ne(f->plan.offset[1], f->plan.offset[2]);
	ck_assert_int_eq(f->plan.planned_bytes, 2 * ALIGN);
	ck_assert_int_eq(f->plan.naive_bytes, 3 * ALIGN);
	fix_free(f);
}
END_TEST

START_TEST(reader_in_the_writing_group_overlaps)
{
	/* Group 1 reads a and writes b: both live in group 1, so they may not
	 * share even though a dies there. */
	Fix *f = fix_new(3, 2);
	int a = 1, b = 2, x = 0;

	f->g.nodes[0].op = FG_OP_INPUT;
	add_group(f, &x, 1, &a, 1);
	add_group(f, &a, 1, &b, 1);
	f->g.nodes[b].flags |= FG_NF_OUTPUT;
	f->plan.why[b] = FG_WHY_OUTPUT;
	fg_pass_memplan(&f->plan);
	check_memory(&f->plan);
	ck_assert_int_ne(f->plan.offset[a], f->plan.offset[b]);
	fix_free(f);
}
END_TEST

START_TEST(chain_of_100_needs_two_buffers)
{
	Fix *f = chain(100);

	fg_pass_memplan(&f->plan);
	check_memory(&f->plan);
	ck_assert_int_eq(f->plan.planned_bytes, 2 * ALIGN);
	ck_assert_int_eq(f->plan.naive_bytes, 100 * ALIGN);
	fix_free(f);
}
END_TEST

START_TEST(outputs_and_saved_are_never_reused)
{
	/* o (output) and s (saved) are written early and never read again;
	 * eight temporaries follow in a chain.  Without the rule, the chain
	 * would reuse their space. */
	Fix *f = fix_new(12, 11);
	int x = 0, o = 1, s = 2;

	f->g.nodes[0].op = FG_OP_INPUT;
	add_group(f, &x, 1, &o, 1);
	add_group(f, &x, 1, &s, 1);
	f->g.nodes[o].flags |= FG_NF_OUTPUT;
	f->plan.why[o] = FG_WHY_OUTPUT;
	f->g.nodes[s].flags |= FG_NF_SAVED;
	f->plan.why[s] = FG_WHY_SAVED;
	for (int i = 3; i < 11; i++) {
		int r = i == 3 ? x : i - 1;
		add_group(f, &r, 1, &i, 1);
	}
	int last = 10, y = 11;
	add_group(f, &last, 1, &y, 1);
	f->g.nodes[y].flags |= FG_NF_OUTPUT;
	fg_pass_memplan(&f->plan);
	check_memory(&f->plan);
	for (int id = 3; id < 12; id++) {
		ck_assert_int_ne(f->plan.offset[id], f->plan.offset[o]);
		ck_assert_int_ne(f->plan.offset[id], f->plan.offset[s]);
	}
	ck_assert_int_eq(f->plan.planned_bytes, 4 * ALIGN);   /* o, s, two for the chain */
	fix_free(f);
}
END_TEST

START_TEST(offsets_are_aligned)
{
	/* 1, 6, 257 and 1024 bytes: aligned sizes 256, 256, 512, 1024. */
	Fix *f = fix_new(5, 1);
	int x = 0, w[4] = {1, 2, 3, 4};

	f->g.nodes[0].op = FG_OP_INPUT;
	f->g.nodes[1].dt = FG_DT_BOOL, f->g.nodes[1].shape.d[0] = 1;
	f->g.nodes[2].dt = FG_DT_F16, f->g.nodes[2].shape.d[0] = 3;
	f->g.nodes[3].dt = FG_DT_BOOL, f->g.nodes[3].shape.d[0] = 257;
	f->g.nodes[4].dt = FG_DT_F32, f->g.nodes[4].shape.d[0] = 256;
	add_group(f, &x, 1, w, 4);
	for (int k = 0; k < 4; k++) {
		f->g.nodes[w[k]].flags |= FG_NF_OUTPUT;
		f->plan.why[w[k]] = FG_WHY_OUTPUT;
	}
	fg_pass_memplan(&f->plan);
	check_memory(&f->plan);
	ck_assert_int_eq(f->plan.naive_bytes, 256 + 256 + 512 + 1024);
	ck_assert_int_eq(f->plan.planned_bytes, f->plan.naive_bytes);
	fix_free(f);
}
END_TEST

START_TEST(inputs_and_unwritten_values_get_no_space)
{
	Fix *f = fix_new(4, 2);
	int x = 0, p = 1, t = 2, y = 3;
	int r0[2] = {x, p}, w0[2] = {t, y};

	f->g.nodes[x].op = FG_OP_INPUT;
	f->g.nodes[p].op = FG_OP_PARAM;
	f->plan.why[x] = FG_WHY_OUTPUT;         /* an input that is also an output */
	f->plan.why[p] = FG_WHY_USER;
	add_group(f, r0, 2, w0, 2);
	f->plan.why[t] = FG_WHY_NONE;           /* stays in registers */
	f->g.nodes[y].flags |= FG_NF_OUTPUT;
	f->plan.why[y] = FG_WHY_OUTPUT;
	fg_pass_memplan(&f->plan);
	check_memory(&f->plan);
	ck_assert_int_eq(f->plan.offset[x], -1);
	ck_assert_int_eq(f->plan.offset[p], -1);
	ck_assert_int_eq(f->plan.offset[t], -1);
	ck_assert_int_eq(f->plan.offset[y], 0);
	ck_assert_int_eq(f->plan.planned_bytes, ALIGN);
	fix_free(f);
}
END_TEST

START_TEST(small_values_fill_a_big_ones_gap)
{
	/* big [0,1] is 4 KiB; after it dies, a chain of 256-byte values fits
	 * in its space, so the arena is big's size plus what lives beside it. */
	Fix *f = fix_new(8, 7);
	int x = 0, big = 1;

	f->g.nodes[0].op = FG_OP_INPUT;
	f->g.nodes[big].shape.d[0] = 1024;
	add_group(f, &x, 1, &big, 1);
	for (int i = 2; i < 8; i++) {
		int r = i - 1;
		add_group(f, &r, 1, &i, 1);
	}
	f->g.nodes[7].flags |= FG_NF_OUTPUT;
	f->plan.why[7] = FG_WHY_OUTPUT;
	fg_pass_memplan(&f->plan);
	check_memory(&f->plan);
	ck_assert_int_eq(f->plan.planned_bytes, 4096 + ALIGN);
	for (int i = 3; i < 8; i++)
		ck_assert_int_lt(f->plan.offset[i], 4096);
	fix_free(f);
}
END_TEST

START_TEST(small_output_does_not_strand_a_gap)
{
	/* t [0,1] and u [1,2] take 8 KiB each; the output o [2,2] is 3.5 KiB.
	 * Pinned under them, o would leave a gap too small for t: 20 KiB.
	 * In t's old place: 16 KiB, the most ever live at once. */
	Fix *f = fix_new(4, 3);
	int x = 0, t = 1, u = 2, o = 3;

	f->g.nodes[x].op = FG_OP_INPUT;
	f->g.nodes[t].shape.d[0] = 2048;
	f->g.nodes[u].shape.d[0] = 2048;
	f->g.nodes[o].shape.d[0] = 896;
	add_group(f, &x, 1, &t, 1);
	add_group(f, &t, 1, &u, 1);
	add_group(f, &u, 1, &o, 1);
	f->g.nodes[o].flags |= FG_NF_OUTPUT;
	f->plan.why[o] = FG_WHY_OUTPUT;
	fg_pass_memplan(&f->plan);
	check_memory(&f->plan);
	ck_assert_int_eq(f->plan.planned_bytes, 16384);
	fix_free(f);
}
END_TEST

static uint64_t rng_next(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return *s >> 33;
}

/* A random plan: ninputs inputs, then nvals values, value i written by
 * group i, read by up to three later groups; sizes, dtypes, outputs,
 * saved values and values that stay on chip all drawn from seed. */
static Fix *random_plan(uint64_t seed, int ninputs, int nvals)
{
	Fix *f = fix_new(ninputs + nvals, nvals);
	int n = ninputs + nvals;
	FG_VEC(int) *reads = calloc((size_t)nvals, sizeof *reads);
	uint64_t s = seed;

	for (int i = 0; i < ninputs; i++)
		f->g.nodes[i].op = i % 2 ? FG_OP_PARAM : FG_OP_INPUT;
	for (int id = ninputs; id < n; id++) {
		FgNode *node = &f->g.nodes[id];
		node->dt = (FgDtype)(rng_next(&s) % FG_DT_COUNT);
		node->shape.d[0] = 1 + (int64_t)(rng_next(&s) % 3000);
		int r = (int)(rng_next(&s) % 20);
		if (r == 0)
			node->flags |= FG_NF_OUTPUT;
		else if (r == 1)
			node->flags |= FG_NF_SAVED;
	}
	for (int v = 0; v < nvals; v++) {
		int nr = (int)(rng_next(&s) % 4);
		for (int k = 0; k < nr; k++) {
			int later = v + 1 + (int)(rng_next(&s) % 8);
			if (later < nvals)
				fg_vec_push(&f->arena, &reads[later], ninputs + v);
		}
		if (ninputs)
			fg_vec_push(&f->arena, &reads[v], (int)(rng_next(&s) % (uint64_t)ninputs));
	}
	for (int v = 0; v < nvals; v++) {
		int id = ninputs + v;
		add_group(f, reads[v].v, reads[v].n, &id, 1);
		unsigned flags = f->g.nodes[id].flags;
		f->plan.why[id] = flags & FG_NF_OUTPUT ? FG_WHY_OUTPUT
				  : flags & FG_NF_SAVED ? FG_WHY_SAVED
				  : rng_next(&s) % 5 == 0 ? FG_WHY_NONE : FG_WHY_CROSS_BLOCK;
	}
	free(reads);
	return f;
}

START_TEST(random_plans_never_overlap_live_values)
{
	for (uint64_t seed = 1; seed <= 150; seed++) {
		Fix *f = random_plan(seed, (int)(seed % 4), 5 + (int)(seed % 120));
		fg_pass_memplan(&f->plan);
		check_memory(&f->plan);
		fix_free(f);
	}
}
END_TEST

START_TEST(same_plan_same_offsets)
{
	Fix *f = random_plan(42, 3, 300), *h = random_plan(42, 3, 300);

	fg_pass_memplan(&f->plan);
	fg_pass_memplan(&h->plan);
	ck_assert_int_eq(f->plan.planned_bytes, h->plan.planned_bytes);
	for (int id = 0; id < f->g.nnodes; id++)
		ck_assert_int_eq(f->plan.offset[id], h->plan.offset[id]);
	/* Running it again on the same plan changes nothing either. */
	int64_t *first = f->plan.offset;
	fg_pass_memplan(&f->plan);
	ck_assert_ptr_ne(first, f->plan.offset);
	for (int id = 0; id < f->g.nnodes; id++)
		ck_assert_int_eq(f->plan.offset[id], first[id]);
	fix_free(f);
	fix_free(h);
}
END_TEST

START_TEST(empty_plan)
{
	Fix *f = fix_new(1, 1);

	f->g.nodes[0].op = FG_OP_INPUT;
	fg_pass_memplan(&f->plan);
	ck_assert_int_eq(f->plan.offset[0], -1);
	ck_assert_int_eq(f->plan.planned_bytes, 0);
	ck_assert_int_eq(f->plan.naive_bytes, 0);
	fix_free(f);
}
END_TEST

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static void assert_fast(Fix *f, const char *what)
{
	double t0 = now_ms();
	fg_pass_memplan(&f->plan);
	double ms = now_ms() - t0;
	/* A guard against quadratic work (seconds at this size), not a
	 * benchmark: the bound leaves room for a loaded CI machine. */
	double limit = SLOW_BUILD ? 5000 : 1000;

	ck_assert_msg(ms < limit, "%s: %d values placed in %.1f ms (limit %.0f)", what, f->g.nnodes, ms, limit);
}

START_TEST(ten_thousand_groups_are_fast)
{
	Fix *f = chain(10000);

	assert_fast(f, "chain");
	ck_assert_int_eq(f->plan.planned_bytes, 2 * ALIGN);
	fix_free(f);

	/* A training-like forward pass: a fifth of the values saved, so many
	 * values stay live to the end, and reads reach back a few groups. */
	f = random_plan(7, 8, 10000);
	for (int id = 8; id < f->g.nnodes; id += 5) {
		f->g.nodes[id].flags |= FG_NF_SAVED;
		f->plan.why[id] = FG_WHY_SAVED;
	}
	assert_fast(f, "saved");
	check_memory(&f->plan);
	fix_free(f);
}
END_TEST

/* ------------------------------------------- on plans the partitioner made */

static void plan_text(const char *text, int no_fuse)
{
	FgArena arena;
	FgSource src = {"t.fg", text, strlen(text)};
	FgDiag diag = {.src = &src};
	FgProgram prog;
	FgGraph g;
	FgFuseOptions o;
	FgPlan plan;

	fg_arena_init(&arena);
	ck_assert_int_eq(fg_parse(&arena, &diag, &src, &prog), 0);
	ck_assert_int_eq(fg_ir_build(&arena, &diag, &prog, NULL, 0, &g), 0);
	fg_pass_expand(&g);
	fg_fuse_defaults(&o);
	o.no_fuse = no_fuse;
	memset(&plan, 0, sizeof plan);
	ck_assert_int_eq(fg_pass_fuse(&g, &o, &plan, &diag), 0);
	fg_pass_memplan(&plan);
	check_memory(&plan);
	fg_arena_free(&arena);
}

static const char *const block_text =
	"graph t {\n"
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
	"}\n";

START_TEST(partitioner_plans)
{
	plan_text(block_text, 0);
	plan_text(block_text, 1);
}
END_TEST

static Suite *memplan_suite(void)
{
	Suite *s = suite_create("memplan");
	TCase *t = tcase_create("memplan");

	tcase_add_test(t, disjoint_lifetimes_share);
	tcase_add_test(t, reader_in_the_writing_group_overlaps);
	tcase_add_test(t, chain_of_100_needs_two_buffers);
	tcase_add_test(t, outputs_and_saved_are_never_reused);
	tcase_add_test(t, offsets_are_aligned);
	tcase_add_test(t, inputs_and_unwritten_values_get_no_space);
	tcase_add_test(t, small_values_fill_a_big_ones_gap);
	tcase_add_test(t, small_output_does_not_strand_a_gap);
	tcase_add_test(t, random_plans_never_overlap_live_values);
	tcase_add_test(t, same_plan_same_offsets);
	tcase_add_test(t, empty_plan);
	tcase_add_test(t, ten_thousand_groups_are_fast);
	tcase_add_test(t, partitioner_plans);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	SRunner *r = srunner_create(memplan_suite());
	int failed;

	srunner_run_all(r, CK_NORMAL);
	failed = srunner_ntests_failed(r);
	srunner_free(r);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
