/*
 * scan.c - a scan group's kernel: cumsum or cumprod along one axis of its
 * space, with the elementwise prologue that computes what it scans and
 * the epilogue that uses each running value.  A row is every element
 * with the same coordinates off the axis; one block runs along each row
 * (a grid-stride loop over rows) in tiles of `threads` x `items`
 * elements, thread t holding the items consecutive elements from
 * t * items.  Each thread combines its elements in registers, the block
 * scans the threads' totals (fg_block_scan), and a carry takes the row's
 * running value from one tile to the next: each element is read once and
 * written once, in one pass, combined in the same order every run.  A
 * reversed scan runs the row from the axis's end.  Floats accumulate in
 * f32, integers modulo 2^32 (then wrapped into their dtype, as the
 * interpreter's).
 */
#include <string.h>

#include "cuda.h"

#define SCAN_ITEMS 8            /* elements a thread holds per tile */
#define SCAN_THREADS 256        /* threads a block, at most */

/* Which members depend on the scan: computed in the second pass. */
static unsigned char *after_scan(Kern *k, int scan)
{
	unsigned char *dep = fg_arena_alloc(k->a, (size_t)k->g->nnodes);
	memset(dep, 0, (size_t)k->g->nnodes);
	dep[scan] = 1;
	for (int i = 0; i < k->gr->nnodes; i++) {
		int id = k->gr->nodes[i];
		const FgNode *n = &k->g->nodes[id];
		for (int j = 0; j < n->nin && cu_is_member(k, id); j++)
			dep[id] |= dep[n->in[j]];
	}
	return dep;
}

/* Stores the group's writes that are (after 1) or are not (after 0)
 * computed from the scan, at element x of the space, when `in` holds. */
static void store_writes(Kern *k, const unsigned char *dep, int after, const Ix *x, const char *in)
{
	const FgShape *S = cu_shape_of(k, k->gr->root);
	for (int w = 0; w < k->gr->nwrites; w++) {
		int id = k->gr->writes[w];
		if (dep[id] != after)
			continue;
		const FgShape *ws = cu_shape_of(k, id);
		Ix y = cu_ix_bcast(x, S, ws);
		cu_store(k, id, &y, cu_write_cond(k, x, S, ws), in);
	}
}

/* The open item loop's position p (in scan order) and element x: the
 * position clamped into the row, so that every load is in bounds, and
 * mapped to the axis's coordinate (from its end when reversed). */
static Ix item_index(Kern *k, const FgNode *scan, const Ix *row, int items, const char **p)
{
	int64_t L = scan->shape.d[scan->a.scan.axis];
	*p = cu_fresh(k, 3, "p");
	cu_kline(k, 3, NULL, "const %s %s = t0 + threadIdx.x * %d + u;", k->idx, *p, items);
	const char *j = cu_fresh(k, 3, "j");
	if (scan->a.scan.reverse)
		cu_kline(k, 3, NULL, "const %s %s = %lld - min(%s, (%s)%lld);", k->idx, j, (long long)(L - 1), *p,
			 k->idx, (long long)(L - 1));
	else
		cu_kline(k, 3, NULL, "const %s %s = min(%s, (%s)%lld);", k->idx, j, *p, k->idx, (long long)(L - 1));
	Ix x = *row;
	x.c[scan->a.scan.axis] = j;
	x.lv[scan->a.scan.axis] = 3;
	x.lin = NULL;
	return x;
}

void cu_emit_scan(Emit *E, Kern *k)
{
	int scan = k->gr->root;
	const FgNode *n = &k->g->nodes[scan];
	const FgShape *S = &n->shape;
	int axis = n->a.scan.axis, integer = fg_dtype_is_int(n->dt);
	int64_t L = S->d[axis], rows = cu_numel(S) / (L ? L : 1);
	FgOp red = fg_scan_reduction(n->op);
	const char *acc = integer ? "unsigned" : "float";
	const char *id = red == FG_OP_PROD ? (integer ? "1u" : "1.0f") : (integer ? "0u" : "0.0f");
	const char *functor = fg_red_info(red)->functor;
	unsigned char *dep = after_scan(k, scan);

	/* Threads: a warp at least, enough for the row at SCAN_ITEMS each
	 * (fewer items a thread for a short row), at most SCAN_THREADS. */
	int threads = 32, items = SCAN_ITEMS;
	while (threads < SCAN_THREADS && (int64_t)threads * items < L)
		threads *= 2;
	while (items > 1 && (int64_t)threads * (items / 2) >= L)
		items /= 2;
	int64_t tile = (int64_t)threads * items;

	/* Scope 1: a row.  Its coordinates off the axis, from the row index. */
	FgShape R = *S;
	R.d[axis] = 1;
	cu_kopen(k);
	Ix row = cu_ix_from_lin(k, &R, "row", 1, "r");
	cu_kline(k, 1, NULL, "%s carry = %s;", acc, id);

	/* Scope 2: a tile.  First pass over its items: the prologue, each
	 * thread's inclusive scan of its own items, the writes before the
	 * scan. */
	cu_kopen(k);
	cu_kline(k, 2, NULL, "%s s[%d];", acc, items);
	cu_kopen(k);
	const char *p;
	Ix x = item_index(k, n, &row, items, &p);
	Val v = cu_gen(k, n->in[0], &x);
	cu_kline(k, 3, NULL, "s[u] = %s < %lld ? (%s)%s : %s;", p, (long long)L, acc, cu_paren(k->a, v.e), id);
	cu_kline(k, 3, NULL, "if (u > 0)");
	cu_kline(k, 3, NULL, "\ts[u] = %s(s[u - 1], s[u]);", functor);
	store_writes(k, dep, 0, &x, cu_fmt(k->a, "%s < %lld", p, (long long)L));
	cu_kline(k, 2, NULL, "#pragma unroll");
	cu_kclose(k, cu_fmt(k->a, "for (int u = 0; u < %d; u++)", items));

	/* The block's scan of the threads' totals. */
	cu_kline(k, 2, NULL, "%s total;", acc);
	cu_kline(k, 2, NULL, "const %s before = %s(carry, fg_block_scan(s[%d], %s, %s, &total));", acc, functor,
		 items - 1, functor, id);

	/* Second pass: each item's running value, the epilogue, the writes
	 * after the scan. */
	cu_kopen(k);
	x = item_index(k, n, &row, items, &p);
	const char *r = cu_fresh(k, 3, "run");
	if (n->a.scan.exclusive)
		cu_kline(k, 3, NULL, "const %s %s = u > 0 ? %s(before, s[u > 0 ? u - 1 : 0]) : before;", acc, r,
			 functor);
	else
		cu_kline(k, 3, NULL, "const %s %s = %s(before, s[u]);", acc, r, functor);
	const char *val = cu_fresh(k, 3, cu_fmt(k->a, "v_%s", cu_name(k, scan)));
	const char *wrap = n->dt == FG_DT_I8 ? "(int)(signed char)" : n->dt == FG_DT_U8 ? "(int)(unsigned char)"
									   : integer ? "(int)" : "";
	cu_kline(k, 3, NULL, "const %s %s = %s%s;", fg_dtype_info[n->dt].cuda, val, wrap, r);
	Memo m = {scan, cu_memo_key(k, scan, &x), {val, 3}};
	fg_vec_push(k->a, &k->memo, m);
	store_writes(k, dep, 1, &x, cu_fmt(k->a, "%s < %lld", p, (long long)L));
	cu_kline(k, 2, NULL, "#pragma unroll");
	cu_kclose(k, cu_fmt(k->a, "for (int u = 0; u < %d; u++)", items));
	cu_kline(k, 2, NULL, "carry = %s(carry, total);", functor);
	cu_kclose(k, cu_fmt(k->a, "for (%s t0 = 0; t0 < %lld; t0 += %lld)", k->idx, (long long)L, (long long)tile));
	cu_kclose(k, cu_fmt(k->a, "for (%s row = blockIdx.x; row < %lld; row += gridDim.x)", k->idx, (long long)rows));
	if (k->failed)
		return;
	cu_path(E, k->gi, CU_PATH_SCAN_BLOCK);
	cu_emit_comment(E, k->gi, cu_fmt(E->a, "%s along axis %d of %s%s%s: a block a row of %lld, %lld rows; %d threads "
					 "x %d elements a tile", fg_op_info[n->op].name, axis,
					 cu_shape_str(E->a, n->dt, S), n->a.scan.exclusive ? ", exclusive" : "",
					 n->a.scan.reverse ? ", reversed" : "", (long long)L, (long long)rows,
					 threads, items));
	const char *args = cu_emit_kernel(k, cu_kname(k, NULL), threads, NULL, 0, 1);
	cu_add_launch(E, cu_kname(k, NULL), k->gi, rows < 1 ? 1 : rows > MAX_GRID ? MAX_GRID : rows, threads, args);
}
