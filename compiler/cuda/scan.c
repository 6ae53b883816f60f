/*
 * scan.c - a scan group's kernel: cumsum or cumprod along one axis of its
 * space, with the elementwise prologue that computes what it scans and
 * the epilogue that uses each running value.  A row is every element
 * with the same coordinates off the axis; a block runs along a row in
 * tiles of threads x items elements (the shape: fg_kind_scan_shape in
 * passes/kinds.c), read and written side by side through shared memory,
 * thread t scanning the items consecutive elements from t * items.  Each
 * thread combines its elements in registers, the block scans the
 * threads' totals (fg_block_scan), and a carry takes the running value
 * from one tile to the next, so each element is read once and written
 * once, combined in the same order every run.  A reversed
 * scan runs from the axis's end.  Floats accumulate in f32, integers
 * modulo 2^32 (then wrapped into their dtype, as the interpreter's).
 *
 * Rows too few to fill the GPU are cut into parts, a block each, in two
 * launches: the first writes each part's total to scratch (and the
 * values the prologue writes), the second starts each part's carry from
 * the totals of the parts before it, combined in order, and scans it.
 */
#include <string.h>

#include "cuda.h"

/* The scan's facts, shared by the kernels of its group. */
typedef struct Scan {
	const FgNode *n;
	int id;
	FgScanShape sh;
	const char *acc, *ident, *functor;
	unsigned char *dep;     /* per node: computed from the scan */
} Scan;

static void scan_init(Kern *k, Scan *sc)
{
	sc->id = k->gr->root;
	sc->n = &k->g->nodes[sc->id];
	fg_kind_scan_shape(&sc->n->shape, sc->n->a.scan.axis, &sc->sh);
	int integer = fg_dtype_is_int(sc->n->dt), prod = fg_scan_reduction(sc->n->op) == FG_OP_PROD;
	sc->acc = integer ? "unsigned" : "float";
	sc->ident = prod ? (integer ? "1u" : "1.0f") : (integer ? "0u" : "0.0f");
	sc->functor = fg_red_info(fg_scan_reduction(sc->n->op))->functor;
	sc->dep = fg_arena_alloc(k->a, (size_t)k->g->nnodes);
	memset(sc->dep, 0, (size_t)k->g->nnodes);
	sc->dep[sc->id] = 1;
	for (int i = 0; i < k->gr->nnodes; i++) {
		int id = k->gr->nodes[i];
		const FgNode *n = &k->g->nodes[id];
		for (int j = 0; j < n->nin && cu_is_member(k, id); j++)
			sc->dep[id] |= sc->dep[n->in[j]];
	}
}

/* Stores the group's writes that are (after 1) or are not (after 0)
 * computed from the scan, at element x of the space, when `in` holds. */
static void store_writes(Kern *k, const Scan *sc, int after, const Ix *x, const char *in)
{
	const FgShape *S = &sc->n->shape;
	for (int w = 0; w < k->gr->nwrites; w++) {
		int id = k->gr->writes[w];
		if (sc->dep[id] != after)
			continue;
		const FgShape *ws = cu_shape_of(k, id);
		Ix y = cu_ix_bcast(x, S, ws);
		cu_store(k, id, &y, cu_write_cond(k, x, S, ws), in);
	}
}

/* Opens the work loop (scope 1: a row, or with parts a part of a row,
 * `row` and `part` its numbers) and the row's coordinates. */
static Ix open_work(Kern *k, const Scan *sc)
{
	FgShape R = sc->n->shape;
	R.d[sc->n->a.scan.axis] = 1;
	cu_kopen(k);
	if (sc->sh.parts > 1) {
		cu_kline(k, 1, NULL, "const %s row = w / %lld, part = w %% %lld;", k->idx, (long long)sc->sh.parts,
			 (long long)sc->sh.parts);
		cu_kline(k, 1, NULL, "const %s lo = part * %lld, hi = min(lo + %lld, (%s)%lld);", k->idx,
			 (long long)sc->sh.part_len, (long long)sc->sh.part_len, k->idx, (long long)sc->sh.len);
	} else {
		cu_kline(k, 1, NULL, "const %s row = w, lo = 0, hi = %lld;", k->idx, (long long)sc->sh.len);
	}
	return cu_ix_from_lin(k, &R, "row", 1, "r");
}

static void close_work(Kern *k, const Scan *sc)
{
	int64_t work = sc->sh.rows * sc->sh.parts;
	cu_kclose(k, cu_fmt(k->a, "for (%s w = blockIdx.x; w < %lld; w += gridDim.x)", k->idx, (long long)work));
}

/* Opens an item loop (scope 3) inside the tile loop and returns its
 * element: position p in scan order (item u of thread t is the tile's
 * element u * threads + t, so that a warp's accesses are side by side),
 * clamped into the row so that every load is in bounds (*in says whether
 * it is inside the part), mapped to the axis's coordinate (from its end
 * when reversed). */
static Ix open_item(Kern *k, const Scan *sc, const Ix *row, const char **in)
{
	int64_t last = sc->sh.len - 1;
	cu_kopen(k);
	const char *p = cu_fresh(k, 3, "p");
	cu_kline(k, 3, NULL, "const %s %s = t0 + u * %d + threadIdx.x;", k->idx, p, sc->sh.threads);
	const char *j = cu_fresh(k, 3, "j");
	if (sc->n->a.scan.reverse)
		cu_kline(k, 3, NULL, "const %s %s = %lld - min(%s, (%s)%lld);", k->idx, j, (long long)last, p, k->idx,
			 (long long)last);
	else
		cu_kline(k, 3, NULL, "const %s %s = min(%s, (%s)%lld);", k->idx, j, p, k->idx, (long long)last);
	*in = cu_fmt(k->a, "%s < hi", p);
	Ix x = *row;
	if (sc->sh.len > 1) {   /* an axis of 1 keeps its coordinate 0, as every index does */
		x.c[sc->n->a.scan.axis] = j;
		x.lv[sc->n->a.scan.axis] = 3;
	}
	x.lin = NULL;
	return x;
}

static void close_item(Kern *k, const Scan *sc)
{
	cu_kline(k, 2, NULL, "#pragma unroll");
	cu_kclose(k, cu_fmt(k->a, "for (int u = 0; u < %d; u++)", sc->sh.items));
}

/* The item loop that reads a tile: what each item scans (the identity
 * past the part), `sink` a statement that takes it as v, and the writes
 * of the prologue. */
static void read_tile(Kern *k, const Scan *sc, const Ix *row, const char *sink)
{
	const char *in;
	Ix x = open_item(k, sc, row, &in);
	Val v = cu_gen(k, sc->n->in[0], &x);
	cu_kline(k, 3, NULL, "const %s v = %s ? (%s)%s : %s;", sc->acc, in, sc->acc, cu_paren(k->a, v.e), sc->ident);
	cu_kline(k, 3, NULL, "%s", sink);
	store_writes(k, sc, 0, &x, in);
	close_item(k, sc);
}

static const char *tile_loop(Kern *k, const Scan *sc)
{
	int64_t tile = (int64_t)sc->sh.threads * sc->sh.items;
	return cu_fmt(k->a, "for (%s t0 = lo; t0 < hi; t0 += %lld)", k->idx, (long long)tile);
}

/* The scan proper: scope 1 starts from `carry`.  Each tile is read side
 * by side into shared memory (sm, one word of padding every `items`, so
 * that neither the side-by-side nor the thread-by-thread accesses share
 * a bank), each thread scans its `items` consecutive elements from there,
 * the block scans the threads' totals, each thread puts its running
 * values back, and the epilogue takes them side by side again to the
 * writes after the scan. */
static void scan_part(Kern *k, const Scan *sc, const Ix *row)
{
	const FgNode *n = sc->n;
	int items = sc->sh.items;
	const char *f = sc->functor;
	cu_kopen(k);
	read_tile(k, sc, row, cu_fmt(k->a, "sm[u * %d + threadIdx.x + (u * %d + threadIdx.x) / %d] = v;", sc->sh.threads,
				     sc->sh.threads, items));
	cu_kline(k, 2, NULL, "__syncthreads();");
	cu_kline(k, 2, NULL, "%s s[%d];", sc->acc, items);
	cu_kline(k, 2, NULL, "#pragma unroll");
	cu_kline(k, 2, NULL, "for (int u = 0; u < %d; u++)", items);
	cu_kline(k, 2, NULL, "\ts[u] = u > 0 ? %s(s[u > 0 ? u - 1 : 0], sm[threadIdx.x * %d + u]) : sm[threadIdx.x * %d];",
		 f, items + 1, items + 1);
	cu_kline(k, 2, NULL, "%s total;", sc->acc);
	cu_kline(k, 2, NULL, "const %s before = %s(carry, fg_block_scan(s[%d], %s, %s, &total));", sc->acc, f, items - 1,
		 f, sc->ident);
	cu_kline(k, 2, NULL, "#pragma unroll");
	cu_kline(k, 2, NULL, "for (int u = 0; u < %d; u++)", items);
	if (n->a.scan.exclusive)
		cu_kline(k, 2, NULL, "\tsm[threadIdx.x * %d + u] = u > 0 ? %s(before, s[u > 0 ? u - 1 : 0]) : before;",
			 items + 1, f);
	else
		cu_kline(k, 2, NULL, "\tsm[threadIdx.x * %d + u] = %s(before, s[u]);", items + 1, f);
	cu_kline(k, 2, NULL, "__syncthreads();");
	const char *in;
	Ix x = open_item(k, sc, row, &in);
	const char *val = cu_fresh(k, 3, cu_fmt(k->a, "v_%s", cu_name(k, sc->id)));
	const char *run = cu_fmt(k->a, "%ssm[u * %d + threadIdx.x + (u * %d + threadIdx.x) / %d]",
				 fg_dtype_is_int(n->dt) ? "(int)" : "", sc->sh.threads, sc->sh.threads, items);
	cu_kline(k, 3, NULL, "const %s %s = %s;", fg_dtype_info[n->dt].cuda, val, cu_wrap_int(k->a, n->dt, run));
	Memo m = {sc->id, cu_memo_key(k, sc->id, &x), {val, 3}};
	fg_vec_push(k->a, &k->memo, m);
	store_writes(k, sc, 1, &x, in);
	close_item(k, sc);
	cu_kline(k, 2, NULL, "carry = %s(carry, total);", f);
	cu_kline(k, 2, NULL, "__syncthreads();");
	cu_kclose(k, tile_loop(k, sc));
}

/* Launch 1 of 2: each part's total into scratch, and the prologue's
 * writes. */
static int emit_totals(Emit *E, Kern *k, const Scan *sc, Param *out)
{
	Kern k1;
	cu_kern_init(&k1, E, k->gi);
	Ix row = open_work(&k1, sc);
	cu_kline(&k1, 1, NULL, "%s acc = %s;", sc->acc, sc->ident);
	cu_kopen(&k1);
	read_tile(&k1, sc, &row, cu_fmt(k->a, "acc = %s(acc, v);", sc->functor));
	cu_kclose(&k1, tile_loop(&k1, sc));
	cu_kline(&k1, 1, NULL, "acc = fg_block_reduce(acc, %s);", sc->functor);
	cu_kline(&k1, 1, NULL, "if (threadIdx.x == 0)");
	cu_kline(&k1, 1, NULL, "\ttotals[w] = acc;");
	close_work(&k1, sc);
	k->failed |= k1.failed;
	if (k1.failed)
		return -1;
	cu_out(E, "/* %s: launch 1 of 2, each part's total into scratch (and what the prologue writes) */\n",
	       cu_kname(k, "totals"));
	int any = 0;
	for (int w = 0; w < k->gr->nwrites; w++)
		any |= !sc->dep[k->gr->writes[w]];
	const char *args = cu_emit_kernel(&k1, cu_kname(k, "totals"), sc->sh.threads, out, 1, any);
	cu_add_launch(E, cu_kname(k, "totals"), k->gi, sc->sh.rows * sc->sh.parts, sc->sh.threads, args);
	return 0;
}

void cu_emit_scan(Emit *E, Kern *k)
{
	Scan sc;
	scan_init(k, &sc);
	const FgNode *n = sc.n;
	int64_t work = sc.sh.rows * sc.sh.parts;
	Param totals_out = {cu_fmt(k->a, "%s *__restrict__ totals", sc.acc), cu_fmt(k->a, "(%s *)ctx->scratch", sc.acc)};
	Param totals_in = {cu_fmt(k->a, "const %s *__restrict__ totals", sc.acc), totals_out.arg};
	if (sc.sh.parts > 1) {
		cu_use_scratch(E, k->gi, work * 4);
		if (emit_totals(E, k, &sc, &totals_out) != 0)
			return;
	}
	cu_kline(k, 0, NULL, "__shared__ %s sm[%d];", sc.acc, sc.sh.threads * (sc.sh.items + 1));
	Ix row = open_work(k, &sc);
	if (sc.sh.parts > 1) {
		/* the parts before this one, in order */
		cu_kline(k, 1, NULL, "%s carry = %s;", sc.acc, sc.ident);
		cu_kline(k, 1, NULL, "for (%s q = w - part; q < w; q++)", k->idx);
		cu_kline(k, 1, NULL, "\tcarry = %s(carry, totals[q]);", sc.functor);
	} else {
		cu_kline(k, 1, NULL, "%s carry = %s;", sc.acc, sc.ident);
	}
	if (sc.sh.parts > 1) {
		/* the prologue's writes were launch 1's */
		for (int w = 0; w < k->gr->nwrites; w++)
			if (!sc.dep[k->gr->writes[w]])
				sc.dep[k->gr->writes[w]] = 2;
	}
	scan_part(k, &sc, &row);
	close_work(k, &sc);
	if (k->failed)
		return;
	cu_path(E, k->gi, sc.sh.parts > 1 ? CU_PATH_SCAN_PARTS : CU_PATH_SCAN_BLOCK);
	const char *how = sc.sh.parts > 1
		? cu_fmt(E->a, "%lld rows of %lld in %lld parts of %lld, a block a part; launch 2 of 2", (long long)sc.sh.rows,
			 (long long)sc.sh.len, (long long)sc.sh.parts, (long long)sc.sh.part_len)
		: cu_fmt(E->a, "a block a row of %lld, %lld rows", (long long)sc.sh.len, (long long)sc.sh.rows);
	cu_emit_comment(E, k->gi, cu_fmt(E->a, "%s along axis %d of %s%s%s: %s; %d threads x %d elements a tile",
					 fg_op_info[n->op].name, n->a.scan.axis, cu_shape_str(E->a, n->dt, &n->shape),
					 n->a.scan.exclusive ? ", exclusive" : "", n->a.scan.reverse ? ", reversed" : "",
					 how, sc.sh.threads, sc.sh.items));
	const char *args = cu_emit_kernel(k, cu_kname(k, NULL), sc.sh.threads, sc.sh.parts > 1 ? &totals_in : NULL,
					  sc.sh.parts > 1, 1);
	cu_add_launch(E, cu_kname(k, NULL), k->gi, work < 1 ? 1 : work > MAX_GRID ? MAX_GRID : work, sc.sh.threads,
		      args);
}
