/*
 * index.c - index arithmetic: an Ix is one C expression per coordinate
 * (and the flat index when it is known) with the scope each needs.
 * Broadcasting drops and zeroes coordinates, a reshape goes through the
 * flat index (coordinates derived once per expression and shared), and
 * the lanes of a vectorized kernel say where each of a thread's elements
 * sits, so that side-by-side lanes become one vector access.
 */
#include <string.h>

#include "cuda.h"

/* The coordinates of flat index lin (scope lv) in shape s, as removable
 * definitions named prefix0, prefix1...; a shape with one dim above 1
 * needs none. */
Ix cu_ix_from_lin(Kern *k, const FgShape *s, const char *lin, int lv, const char *prefix)
{
	Ix x;
	int nonunit = 0;
	memset(&x, 0, sizeof x);
	x.rank = s->rank;
	x.lin = lin;
	x.lin_lv = lv;
	for (int i = 0; i < s->rank; i++)
		nonunit += s->d[i] > 1;
	int64_t inner = 1;
	int first = -1;
	for (int i = 0; i < s->rank; i++)
		if (s->d[i] > 1 && first < 0)
			first = i;
	const char *pl = cu_paren(k->a, lin);
	for (int i = s->rank - 1; i >= 0; i--) {
		x.c[i] = "0";
		x.lv[i] = 0;
		if (s->d[i] == 1)
			continue;
		x.lv[i] = lv;
		if (nonunit == 1) {
			x.c[i] = lin;
		} else {
			const char *name = cu_fresh(k, lv, cu_fmt(k->a, "%s%d", prefix, i));
			if (i == first)
				cu_kline(k, lv, name, "const %s %s = %s / %lld;", k->idx, name, pl, (long long)inner);
			else if (inner == 1)
				cu_kline(k, lv, name, "const %s %s = %s %% %lld;", k->idx, name, pl, (long long)s->d[i]);
			else
				cu_kline(k, lv, name, "const %s %s = %s / %lld %% %lld;", k->idx, name, pl,
				      (long long)inner, (long long)s->d[i]);
			x.c[i] = name;
		}
		inner *= s->d[i];
	}
	Cached c = {lin, *s, x, lv};
	fg_vec_push(k->a, &k->cache, c);
	return x;
}

/* The flat index of x in shape s, as an expression. */
const char *cu_ix_linear(Kern *k, const Ix *x, const FgShape *s)
{
	if (x->lin)
		return x->lin;
	const char *e = NULL;
	int64_t stride = 1;
	for (int i = s->rank - 1; i >= 0; i--) {
		if (s->d[i] > 1 && strcmp(x->c[i], "0") != 0) {
			const char *t = stride == 1 ? x->c[i] : cu_fmt(k->a, "%s * %lld", cu_paren(k->a, x->c[i]), (long long)stride);
			e = e ? cu_fmt(k->a, "%s + %s", t, e) : t;
		}
		stride *= s->d[i];
	}
	return e ? e : "0";
}

/* The scope level ix_linear's expression needs. */
int cu_ix_level(const Ix *x, const FgShape *s)
{
	if (x->lin)
		return x->lin_lv;
	int lv = 0;
	for (int i = 0; i < s->rank; i++)
		if (s->d[i] > 1 && strcmp(x->c[i], "0") != 0 && x->lv[i] > lv)
			lv = x->lv[i];
	return lv;
}

/* NumPy broadcasting: the index into operand shape to that element fs of
 * x reads. */
Ix cu_ix_bcast(const Ix *x, const FgShape *fs, const FgShape *to)
{
	Ix y;
	int lead = fs->rank - to->rank;
	FG_ASSERT(lead >= 0);
	memset(&y, 0, sizeof y);
	y.rank = to->rank;
	for (int j = 0; j < to->rank; j++) {
		if (to->d[j] == 1) {
			y.c[j] = "0";
			y.lv[j] = 0;
		} else {
			y.c[j] = x->c[j + lead];
			y.lv[j] = x->lv[j + lead];
		}
	}
	y.vw = x->vw;
	y.lane = x->lane;
	y.vmis = x->vmis;
	y.vbase = x->vbase;
	y.vd = x->vd;
	if (x->vw > 1 && x->vd >= 0)
		y.vd = x->vd < lead || to->d[x->vd - lead] == 1 ? LANES_SAME : x->vd - lead;
	if (fg_shape_eq(fs, to)) {
		y.lin = x->lin;
		y.lin_lv = x->lin_lv;
		y.vlin = x->vlin;
	} else if (cu_numel(to) == 1) {
		y.lin = "0";
		y.lin_lv = 0;
	}
	return y;
}

/* Coordinate vd and the flat index of lane x->lane, from vbase and vlin. */
void cu_lane_coords(Kern *k, Ix *x)
{
	if (x->vw < 2 || x->vd < 0)
		return;
	x->c[x->vd] = x->lane ? cu_fmt(k->a, "%s + %d", cu_paren(k->a, x->vbase), x->lane) : x->vbase;
	if (x->vlin)
		x->lin = x->lane ? cu_fmt(k->a, "%s + %d", cu_paren(k->a, x->vlin), x->lane) : x->vlin;
}

/* The index of lane 0 of the vector x is a lane of. */
Ix cu_lane0(Kern *k, const Ix *x)
{
	Ix y = *x;
	y.lane = 0;
	cu_lane_coords(k, &y);
	return y;
}

/* Whether the lanes of x, an index into shape s, are vw elements side by
 * side in memory from an address aligned to the vector's size: they run
 * along s's innermost dim above 1, whose rows split into whole vectors,
 * from a multiple of vw. */
int cu_lanes_contiguous(const Ix *x, const FgShape *s)
{
	if (x->vw < 2 || x->vd < 0 || x->vmis != 0 || s->d[x->vd] % x->vw != 0)
		return 0;
	for (int i = x->vd + 1; i < s->rank; i++)
		if (s->d[i] != 1)
			return 0;
	return 1;
}

/* The condition under which the thread at x (in space fs) writes the
 * element of a value of shape to that it sees: every coordinate that
 * broadcasting drops is 0.  NULL: always. */
const char *cu_write_cond(Kern *k, const Ix *x, const FgShape *fs, const FgShape *to)
{
	int lead = fs->rank - to->rank;
	const char *e = NULL;
	if (cu_numel(to) == 1 && x->lin && cu_numel(fs) > 1)
		return cu_fmt(k->a, "%s == 0", x->lin);
	for (int i = 0; i < fs->rank; i++) {
		int j = i - lead;
		if (fs->d[i] == 1 || (j >= 0 && to->d[j] != 1) || strcmp(x->c[i], "0") == 0)
			continue;
		const char *t = cu_fmt(k->a, "%s == 0", x->c[i]);
		e = e ? cu_fmt(k->a, "%s && %s", e, t) : t;
	}
	return e;
}

/* The index into shape ts of the element at flat index x (in shape fs):
 * coordinates derived from the flat index, shared with any earlier
 * derivation from the same expression. */
static Ix reshape_by_lin(Kern *k, const Ix *x, const FgShape *fs, const FgShape *ts)
{
	const char *lin = cu_ix_linear(k, x, fs);
	int lv = cu_ix_level(x, fs);
	for (int i = k->cache.n - 1; i >= 0; i--)
		if (strcmp(k->cache.v[i].lin, lin) == 0 && fg_shape_eq(&k->cache.v[i].s, ts))
			return k->cache.v[i].ix;
	if (!cu_simple(lin)) {
		const char *name = cu_fresh(k, lv, "l");
		cu_kline(k, lv, name, "const %s %s = %s;", k->idx, name, lin);
		lin = name;
	}
	return cu_ix_from_lin(k, ts, lin, lv, cu_fmt(k->a, "%s_", lin));
}

/* The operand index of a reshape from `from` (shape fs) to shape ts: the
 * flat index is the same; coordinates are copied when the two shapes
 * differ only in unit dims, else derived from the flat index. */
Ix cu_ix_reshape(Kern *k, const Ix *x, const FgShape *fs, const FgShape *ts)
{
	int a[FG_MAX_RANK], b[FG_MAX_RANK], na = 0, nb = 0, same;
	for (int i = 0; i < fs->rank; i++)
		if (fs->d[i] > 1)
			a[na++] = i;
	for (int i = 0; i < ts->rank; i++)
		if (ts->d[i] > 1)
			b[nb++] = i;
	same = na == nb;
	for (int i = 0; same && i < na; i++)
		same = fs->d[a[i]] == ts->d[b[i]];
	if (same) {
		Ix y;
		memset(&y, 0, sizeof y);
		y.rank = ts->rank;
		for (int i = 0; i < ts->rank; i++)
			y.c[i] = "0";
		y.vw = x->vw;
		y.lane = x->lane;
		y.vmis = x->vmis;
		y.vbase = x->vbase;
		y.vd = x->vd < 0 ? x->vd : LANES_APART;
		for (int i = 0; i < na; i++) {
			y.c[b[i]] = x->c[a[i]];
			y.lv[b[i]] = x->lv[a[i]];
			if (a[i] == x->vd)
				y.vd = b[i];
		}
		y.lin = x->lin;
		y.lin_lv = x->lin_lv;
		y.vlin = x->vlin;
		return y;
	}
	Ix y = reshape_by_lin(k, x, fs, ts);
	y.vw = x->vw;
	y.lane = x->lane;
	y.vd = x->vd == LANES_SAME ? LANES_SAME : LANES_APART;
	return y;
}

/* The last dim of s above 1, or -1. */
int cu_innermost(const FgShape *s)
{
	for (int i = s->rank - 1; i >= 0; i--)
		if (s->d[i] > 1)
			return i;
	return -1;
}

/* Lane l of the vw lanes that start at x (an index whose coordinate vd
 * is a multiple of vw). */
Ix cu_lane_of(Kern *k, const Ix *x, int vd, int vw, int l)
{
	Ix y = *x;
	y.vw = vw;
	y.lane = l;
	y.vd = vd;
	y.vmis = 0;
	y.vbase = x->c[vd];
	y.vlin = x->lin;
	cu_lane_coords(k, &y);
	return y;
}

/* The index of a value of shape os (matrices in its last two axes) at a
 * functor's batch z, row r and column c: the generated matmul's epilogue
 * and the attention kernel's functors, whose arguments are z_, r_ and c_
 * (lines for z, r and c in scope 0 of k). */
Ix cu_ix_pair(Kern *k, const FgShape *os)
{
	const int R = os->rank;
	Ix x;
	memset(&x, 0, sizeof x);
	x.rank = R;
	for (int i = 0; i < R; i++)
		x.c[i] = "0";
	cu_kline(k, 0, "z", "const %s z = z_;", k->idx);
	cu_kline(k, 0, "r", "const %s r = r_;", k->idx);
	cu_kline(k, 0, "c", "const %s c = c_;", k->idx);
	if (cu_numel(os) > os->d[R - 2] * os->d[R - 1]) {
		FgShape bs = *os;
		bs.rank = R - 2;
		Ix bx = cu_ix_from_lin(k, &bs, "z", 0, "z");
		for (int i = 0; i < R - 2; i++)
			x.c[i] = bx.c[i], x.lv[i] = bx.lv[i];
	}
	if (os->d[R - 2] > 1)
		x.c[R - 2] = "r";
	if (os->d[R - 1] > 1)
		x.c[R - 1] = "c";
	return x;
}
