/*
 * cuda.c - the CUDA backend: writes a fusion plan as one CUDA C++ file,
 * one __global__ kernel per group (two for a reduction over all axes),
 * then the program table and fg_program_run(), which the host runtime
 * (runtime/fgrt_host.cu, contract in runtime/fgrt_program.h) calls.
 *
 * How a kernel computes its values.  A group is a cone of elementwise and
 * layout ops (plus reductions, or a matmul); every value it writes is
 * computed per element by gen(), which evaluates a node at an index (an
 * Ix: one C expression per coordinate, and the C-order flat index when it
 * is known) by evaluating its operands at the indices the op maps it to:
 * broadcasting drops and zeroes coordinates, transpose permutes them,
 * slice offsets one, reshape goes through the flat index, concat reads
 * every operand at a clamped index and selects.  A value already computed
 * at the same index is reused (memo); a value reached at two indices is
 * computed twice, which is always correct.  Operands outside the group are
 * loaded from memory, converted to the compute type (f32 for the float
 * dtypes and bool, int for i32); values are rounded to their dtype only
 * where they are stored.
 *
 * Scopes.  Kernel text is built in nested scopes (0: the kernel's top, 1:
 * a loop over elements or rows, 2: the loop inside a row or over reduced
 * elements).  Each computed value goes to the outermost scope whose
 * variables it uses, so a load of a scalar lands before the loops and a
 * row's mean and rsqrt land between the row's passes, without any special
 * case.  Coordinates are defined eagerly and dropped when their scope
 * closes if no line uses them, so a plain elementwise kernel never
 * divides.
 *
 * Writes.  A written value whose shape broadcasts into the group's space
 * is stored by the threads whose broadcast coordinates are 0 (each element
 * exactly once); a loop group's other writes (a side output behind a
 * transpose) get a loop of their own over their own shape.  Row and column
 * reductions store values of the reduced shape once per row or column.
 *
 * Invariants: the output depends on the plan alone (no addresses, no hash
 * order), so the same model gives the same bytes; everything is allocated
 * from the graph's arena.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fg.h"
#include "fgrt_philox.h"

#define MAXLV 4                 /* scope levels */
#define LOOP_BLOCK 256          /* threads per block of loop and reduce kernels */
#define MAX_GRID (1 << 20)      /* blocks of a grid-stride loop */
#define FULL_BLOCKS 1024        /* partials of a reduction over all axes */
#define MAX_LANES 8             /* elements per thread of a vectorized kernel */
#define REG_LIMIT 128           /* registers a thread may use by the estimate
				   (fgc's default --reg-limit) */

/* ------------------------------------------------------------- text */

static char *vfmt(FgArena *a, const char *fmt, va_list ap)
{
	va_list aq;
	va_copy(aq, ap);
	int n = vsnprintf(NULL, 0, fmt, aq);
	va_end(aq);
	FG_ASSERT(n >= 0);
	char *s = fg_arena_alloc(a, (size_t)n + 1);
	vsnprintf(s, (size_t)n + 1, fmt, ap);
	return s;
}

static char *fmt(FgArena *a, const char *f, ...) FG_PRINTF(2, 3);
static char *fmt(FgArena *a, const char *f, ...)
{
	va_list ap;
	va_start(ap, f);
	char *s = vfmt(a, f, ap);
	va_end(ap);
	return s;
}

static int is_ident_char(char c)
{
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* Whether s needs no parentheses inside a larger expression: a name, a
 * number without sign, a call, or one parenthesized whole. */
static int simple(const char *s)
{
	size_t n = strlen(s), i = 0;
	int depth = 0;
	if (n == 0)
		return 0;
	if (s[0] >= '0' && s[0] <= '9')     /* a number: 1e-05f */
		return strspn(s, "0123456789abcdefxABCDEFX.+-ul") == n;
	while (i < n && (is_ident_char(s[i]) || s[i] == '.'))
		i++;
	if (i == n)
		return 1;
	if (s[i] != '(' || s[n - 1] != ')')
		return 0;
	for (size_t j = i; j < n; j++) {
		if (s[j] == '(')
			depth++;
		else if (s[j] == ')' && --depth == 0 && j != n - 1)
			return 0;
	}
	return 1;
}

static const char *paren(FgArena *a, const char *s)
{
	return simple(s) ? s : fmt(a, "(%s)", s);
}

/* s as the body of a C string literal. */
static const char *c_string(FgArena *a, const char *s)
{
	char *out = fg_arena_alloc(a, 4 * strlen(s) + 1), *o = out;
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			o += sprintf(o, "\\%c", c);
		else if (c < 32 || c >= 127)
			o += sprintf(o, "\\%03o", c);
		else
			*o++ = (char)c;
	}
	*o = '\0';
	return out;
}

/* s with every star-slash broken, to sit inside a C comment. */
static const char *in_comment(FgArena *a, const char *s)
{
	char *out = fg_arena_alloc(a, 2 * strlen(s) + 1), *o = out;
	for (; *s; s++) {
		*o++ = *s;
		if (s[0] == '*' && s[1] == '/')
			*o++ = ' ';
	}
	*o = '\0';
	return out;
}

/* Whether identifier id occurs in s as a whole token. */
static int uses(const char *s, const char *id)
{
	size_t n = strlen(id);
	for (const char *p = strstr(s, id); p; p = strstr(p + 1, id))
		if ((p == s || !is_ident_char(p[-1])) && !is_ident_char(p[n]))
			return 1;
	return 0;
}

/* ----------------------------------------------------------- dtypes */

static const char *ctype(FgDtype dt)
{
	return dt == FG_DT_I32 ? "int" : "float";
}

static const char *stype(FgDtype dt)
{
	static const char *const t[FG_DT_COUNT] = {
		[FG_DT_F32] = "float", [FG_DT_F16] = "__half", [FG_DT_BF16] = "__nv_bfloat16",
		[FG_DT_I32] = "int", [FG_DT_BOOL] = "unsigned char",
	};
	return t[dt];
}

static const char *rt_dtype(FgDtype dt)
{
	static const char *const t[FG_DT_COUNT] = {
		[FG_DT_F32] = "FGRT_F32", [FG_DT_F16] = "FGRT_F16", [FG_DT_BF16] = "FGRT_BF16",
		[FG_DT_I32] = "FGRT_I32", [FG_DT_BOOL] = "FGRT_BOOL",
	};
	return t[dt];
}

/* A number as a literal of compute type ctype(dt), parenthesized when
 * negative. */
static const char *literal(FgArena *a, FgDtype dt, double v)
{
	if (isnan(v))
		return "CUDART_NAN_F";
	if (isinf(v))
		return v > 0 ? "CUDART_INF_F" : "(-CUDART_INF_F)";
	if (dt == FG_DT_BOOL)
		return v != 0 ? "1.0f" : "0.0f";
	if (dt == FG_DT_I32 && v == floor(v) && fabs(v) < 2147483648.0) {
		long long i = (long long)v;
		return i < 0 ? fmt(a, "(%lld)", i) : fmt(a, "%lld", i);
	}
	char buf[64];
	snprintf(buf, sizeof buf, "%.9g", v);
	if (!strpbrk(buf, ".en"))
		strcat(buf, ".0");
	return v < 0 || (v == 0 && signbit(v)) ? fmt(a, "(%sf)", buf) : fmt(a, "%sf", buf);
}

/* ---------------------------------------------------------- shapes */

static int fits(const FgShape *s, const FgShape *space)
{
	FgShape r;
	return fg_shape_broadcast(s, space, &r) == 0 && fg_shape_eq(&r, space);
}

static const char *shape_str(FgArena *a, FgDtype dt, const FgShape *s)
{
	char buf[256];
	return fg_arena_strdup(a, fg_type_str(buf, sizeof buf, dt, s));
}

/* ------------------------------------------------------ the emitter */

typedef struct Line {
	const char *text;       /* without indentation or newline */
	const char *def;        /* a removable definition: the name it defines */
} Line;
typedef FG_VEC(Line) Lines;

typedef struct Val {
	const char *e;          /* a variable or a literal */
	int lv;                 /* the scope it is defined in */
} Val;

/* An index into a value of shape s (rank s.rank): coordinates as C
 * expressions ("0" on every unit dim), each with its scope level, and the
 * C-order flat index when known.
 *
 * Lanes.  A vectorized kernel computes vw neighbouring elements per
 * thread; the index of lane `lane` (vw > 1) says where the lanes go:
 * along coordinate vd, lane l at vbase + l (vlin + l the flat index, when
 * lin is known), vbase being vmis past a multiple of vw; vd = LANES_SAME:
 * every lane reads this one element; LANES_APART: somewhere else, element
 * by element.  load() and store_lanes() turn lanes that sit side by side
 * in memory, aligned, into one vector access.  With vw below 2 the lane
 * fields mean nothing (an index of a scalar kernel, or one built from
 * coordinates: vd is 0 there). */
typedef struct Ix {
	int rank;
	const char *c[FG_MAX_RANK];
	int lv[FG_MAX_RANK];
	const char *lin;
	int lin_lv;
	int vw, lane, vd, vmis;
	const char *vbase, *vlin;
} Ix;

enum { LANES_SAME = -1, LANES_APART = -2 };

typedef struct Memo {
	int id;
	const char *key;
	Val v;
} Memo;

typedef struct Name {
	const char *s;
	int lv;
} Name;

typedef struct Cached {         /* coordinates already derived from a flat index */
	const char *lin;
	FgShape s;
	Ix ix;
	int lv;
} Cached;

typedef struct Red {            /* a reduction of the kernel */
	int id;
	const char *acc;        /* its accumulator */
	const char *var;        /* its value, once reduced (NULL before) */
	int lv;
	Ix at;                  /* the one index of its result a thread sees */
	int pass;               /* rowreduce: the pass that computes it */
} Red;

typedef struct Param {
	const char *decl;       /* const float *__restrict__ t_x */
	const char *arg;        /* what the host passes: t_x */
} Param;

typedef struct Emit Emit;

typedef struct Kern {
	Emit *E;
	FgArena *a;
	const FgGraph *g;
	const FgPlan *plan;
	int gi;
	const FgGroup *gr;
	const char *idx;        /* the index type: int or int64_t */
	int depth;
	Lines lines[MAXLV];
	FG_VEC(Memo) memo;
	FG_VEC(Name) names;
	FG_VEC(Cached) cache;
	FG_VEC(Red) reds;
	unsigned char *used;    /* per read (index in gr->reads): loaded */
	int mm;                 /* gemm epilogue: the matmul, read from scratch */
	const char *acc[2];     /* ... or, in the generated matmul, the
				   accumulators of lanes 0 and 1 */
	int nc;                 /* loads through the read-only path (ld.global.nc),
				   free to move above the kernel's stores */
	int failed;
} Kern;

typedef struct Launch {
	const char *kernel;
	int group;
	int64_t grid, block;
} Launch;

struct Emit {
	FgArena *a;
	const FgGraph *g;
	const FgPlan *plan;
	FgDiag *d;
	FILE *f;
	int *member;            /* per node: group index + 1 while its group is emitted */
	int *tensor;            /* per node: its entry in the tensor table, or -1 */
	int ntensors;
	FG_VEC(int) tensors;    /* the table: node ids */
	FG_VEC(Launch) launches;
	FG_VEC(const char *) run;       /* fg_program_run's body */
	FG_VEC(const char *) gemms;     /* FgrtGemm definitions */
	int64_t scratch;
	FgGemmChoice gemm;
	int errors;
};

static void kern_error(Kern *k, int id, const char *fmt_, ...) FG_PRINTF(3, 4);
static void kern_error(Kern *k, int id, const char *fmt_, ...)
{
	va_list ap;
	va_start(ap, fmt_);
	char *msg = vfmt(k->a, fmt_, ap);
	va_end(ap);
	if (!k->failed && k->E->d)     /* none: fg_cuda_gemm_note asks quietly */
		fg_error(k->E->d, id >= 0 ? k->g->nodes[id].loc : (FgLoc){0, 0},
			 "cannot compile group %d (%s) to CUDA yet: %s", k->gi, k->gr->name, msg);
	k->failed = 1;
}

/* Appends a line to scope lv; def names the variable of a removable
 * definition (dropped when its scope closes if nothing uses it). */
static void kline(Kern *k, int lv, const char *def, const char *f, ...) FG_PRINTF(4, 5);
static void kline(Kern *k, int lv, const char *def, const char *f, ...)
{
	va_list ap;
	FG_ASSERT(lv >= 0 && lv <= k->depth);
	va_start(ap, f);
	Line l = {vfmt(k->a, f, ap), def};
	va_end(ap);
	fg_vec_push(k->a, &k->lines[lv], l);
}

/* A variable name not in use, based on base. */
static const char *fresh(Kern *k, int lv, const char *base)
{
	const char *s = base;
	for (int n = 2;; n++) {
		int taken = 0;
		for (int i = 0; i < k->names.n && !taken; i++)
			taken = strcmp(k->names.v[i].s, s) == 0;
		if (!taken)
			break;
		s = fmt(k->a, "%s_%d", base, n);
	}
	Name nm = {s, lv};
	fg_vec_push(k->a, &k->names, nm);
	return s;
}

static void drop_unused(Kern *k, Lines *ls);

static void kopen(Kern *k)
{
	FG_ASSERT(k->depth + 1 < MAXLV);
	k->depth++;
	k->lines[k->depth].n = 0;
}

/* Closes the innermost scope into its parent as `head { lines }`; what
 * was defined in it is forgotten. */
static void kclose(Kern *k, const char *head)
{
	int L = k->depth;
	int n = 0;
	for (int i = 0; i < k->memo.n; i++)
		if (k->memo.v[i].v.lv < L)
			k->memo.v[n++] = k->memo.v[i];
	k->memo.n = n;
	n = 0;
	for (int i = 0; i < k->names.n; i++)
		if (k->names.v[i].lv < L)
			k->names.v[n++] = k->names.v[i];
	k->names.n = n;
	n = 0;
	for (int i = 0; i < k->cache.n; i++)
		if (k->cache.v[i].lv < L)
			k->cache.v[n++] = k->cache.v[i];
	k->cache.n = n;
	/* a scope's definitions are used inside it or nowhere */
	drop_unused(k, &k->lines[L]);
	k->depth--;
	kline(k, L - 1, NULL, "%s {", head);
	for (int i = 0; i < k->lines[L].n; i++) {
		Line l = {fmt(k->a, "\t%s", k->lines[L].v[i].text), NULL};
		fg_vec_push(k->a, &k->lines[L - 1], l);
	}
	kline(k, L - 1, NULL, "}");
	k->lines[L].n = 0;
}

/* Drops removable definitions nothing uses, until none is left. */
static void drop_unused(Kern *k, Lines *ls)
{
	for (int changed = 1; changed;) {
		changed = 0;
		for (int i = 0; i < ls->n; i++) {
			if (!ls->v[i].def)
				continue;
			int used = 0;
			for (int j = 0; j < ls->n && !used; j++)
				used = j != i && uses(ls->v[j].text, ls->v[i].def);
			if (!used) {
				memmove(&ls->v[i], &ls->v[i + 1], (size_t)(ls->n - i - 1) * sizeof(Line));
				ls->n--;
				i--;
				changed = 1;
			}
		}
	}
	(void)k;
}

/* ---------------------------------------------------------- indices */

static const FgShape *shape_of(const Kern *k, int id)
{
	return &k->g->nodes[id].shape;
}

static int64_t numel(const FgShape *s)
{
	return fg_shape_numel(s);
}

/* The coordinates of flat index lin (scope lv) in shape s, as removable
 * definitions named prefix0, prefix1...; a shape with one dim above 1
 * needs none. */
static Ix ix_from_lin(Kern *k, const FgShape *s, const char *lin, int lv, const char *prefix)
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
	const char *pl = paren(k->a, lin);
	for (int i = s->rank - 1; i >= 0; i--) {
		x.c[i] = "0";
		x.lv[i] = 0;
		if (s->d[i] == 1)
			continue;
		x.lv[i] = lv;
		if (nonunit == 1) {
			x.c[i] = lin;
		} else {
			const char *name = fresh(k, lv, fmt(k->a, "%s%d", prefix, i));
			if (i == first)
				kline(k, lv, name, "const %s %s = %s / %lld;", k->idx, name, pl, (long long)inner);
			else if (inner == 1)
				kline(k, lv, name, "const %s %s = %s %% %lld;", k->idx, name, pl, (long long)s->d[i]);
			else
				kline(k, lv, name, "const %s %s = %s / %lld %% %lld;", k->idx, name, pl,
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
static const char *ix_linear(Kern *k, const Ix *x, const FgShape *s)
{
	if (x->lin)
		return x->lin;
	const char *e = NULL;
	int64_t stride = 1;
	for (int i = s->rank - 1; i >= 0; i--) {
		if (s->d[i] > 1 && strcmp(x->c[i], "0") != 0) {
			const char *t = stride == 1 ? x->c[i] : fmt(k->a, "%s * %lld", paren(k->a, x->c[i]), (long long)stride);
			e = e ? fmt(k->a, "%s + %s", t, e) : t;
		}
		stride *= s->d[i];
	}
	return e ? e : "0";
}

/* The scope level ix_linear's expression needs. */
static int ix_level(const Ix *x, const FgShape *s)
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
static Ix ix_bcast(const Ix *x, const FgShape *fs, const FgShape *to)
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
	} else if (numel(to) == 1) {
		y.lin = "0";
		y.lin_lv = 0;
	}
	return y;
}

/* Coordinate vd and the flat index of lane x->lane, from vbase and vlin. */
static void lane_coords(Kern *k, Ix *x)
{
	if (x->vw < 2 || x->vd < 0)
		return;
	x->c[x->vd] = x->lane ? fmt(k->a, "%s + %d", paren(k->a, x->vbase), x->lane) : x->vbase;
	if (x->vlin)
		x->lin = x->lane ? fmt(k->a, "%s + %d", paren(k->a, x->vlin), x->lane) : x->vlin;
}

/* The index of lane 0 of the vector x is a lane of. */
static Ix lane0(Kern *k, const Ix *x)
{
	Ix y = *x;
	y.lane = 0;
	lane_coords(k, &y);
	return y;
}

/* Whether the lanes of x, an index into shape s, are vw elements side by
 * side in memory from an address aligned to the vector's size: they run
 * along s's innermost dim above 1, whose rows split into whole vectors,
 * from a multiple of vw. */
static int lanes_contiguous(const Ix *x, const FgShape *s)
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
static const char *write_cond(Kern *k, const Ix *x, const FgShape *fs, const FgShape *to)
{
	int lead = fs->rank - to->rank;
	const char *e = NULL;
	if (numel(to) == 1 && x->lin && numel(fs) > 1)
		return fmt(k->a, "%s == 0", x->lin);
	for (int i = 0; i < fs->rank; i++) {
		int j = i - lead;
		if (fs->d[i] == 1 || (j >= 0 && to->d[j] != 1) || strcmp(x->c[i], "0") == 0)
			continue;
		const char *t = fmt(k->a, "%s == 0", x->c[i]);
		e = e ? fmt(k->a, "%s && %s", e, t) : t;
	}
	return e;
}

/* The index into shape ts of the element at flat index x (in shape fs):
 * coordinates derived from the flat index, shared with any earlier
 * derivation from the same expression. */
static Ix reshape_by_lin(Kern *k, const Ix *x, const FgShape *fs, const FgShape *ts)
{
	const char *lin = ix_linear(k, x, fs);
	int lv = ix_level(x, fs);
	for (int i = k->cache.n - 1; i >= 0; i--)
		if (strcmp(k->cache.v[i].lin, lin) == 0 && fg_shape_eq(&k->cache.v[i].s, ts))
			return k->cache.v[i].ix;
	if (!simple(lin)) {
		const char *name = fresh(k, lv, "l");
		kline(k, lv, name, "const %s %s = %s;", k->idx, name, lin);
		lin = name;
	}
	return ix_from_lin(k, ts, lin, lv, fmt(k->a, "%s_", lin));
}

/* The operand index of a reshape from `from` (shape fs) to shape ts: the
 * flat index is the same; coordinates are copied when the two shapes
 * differ only in unit dims, else derived from the flat index. */
static Ix ix_reshape(Kern *k, const Ix *x, const FgShape *fs, const FgShape *ts)
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

/* ------------------------------------------------------- generation */

static int is_member(const Kern *k, int id)
{
	return k->E->member[id] == k->gi + 1 && id != k->mm;
}

static const char *tensor_param(const Kern *k, int id)
{
	return fmt(k->a, "t_%s", k->plan->names[id]);
}

static const char *memo_key(Kern *k, int id, const Ix *x)
{
	size_t len = 16;
	for (int i = 0; i < x->rank; i++)
		len += strlen(x->c[i]) + 1;
	char *s = fg_arena_alloc(k->a, len);
	char *p = s;
	p += sprintf(p, "%d:", id);
	for (int i = 0; i < x->rank; i++)
		p += sprintf(p, "%s,", x->c[i]);
	(void)p;
	return s;
}

static Val gen(Kern *k, int id, const Ix *x);

/* A new variable of node id's compute type holding expr, in scope lv. */
static Val define(Kern *k, int id, int lv, const char *expr)
{
	const FgNode *n = &k->g->nodes[id];
	const char *v = fresh(k, lv, fmt(k->a, "v_%s", k->plan->names[id]));
	kline(k, lv, NULL, "const %s %s = %s;", ctype(n->dt), v, expr);
	return (Val){v, lv};
}

/* The vector of stored elements (from pointer p) that lane x of a read
 * of node id belongs to: one load for all the lanes. */
static Val load_vector(Kern *k, int id, const char *p, const Ix *x)
{
	const FgNode *n = &k->g->nodes[id];
	Ix x0 = lane0(k, x);
	const char *key = fmt(k->a, "V%s", memo_key(k, id, &x0));
	for (int i = k->memo.n - 1; i >= 0; i--)
		if (k->memo.v[i].id == id && strcmp(k->memo.v[i].key, key) == 0)
			return k->memo.v[i].v;
	int lv = ix_level(&x0, &n->shape);
	const char *w = fresh(k, lv, fmt(k->a, "w_%s", k->plan->names[id]));
	/* a float gemm's result waits in scratch as f32 */
	const char *t = id == k->mm && n->dt != FG_DT_I32 ? "float" : stype(n->dt);
	kline(k, lv, NULL, "const FgVec<%s, %d> %s = fg_ldv%s<%d>(%s + %s);", t, x->vw, w, k->nc ? "_nc" : "", x->vw,
	      p, paren(k->a, ix_linear(k, &x0, &n->shape)));
	Memo m = {id, key, {w, lv}};
	fg_vec_push(k->a, &k->memo, m);
	return m.v;
}

/* Loads node id (a read of the group, or the gemm's result) at x. */
static Val load(Kern *k, int id, const Ix *x)
{
	const FgShape *s = shape_of(k, id);
	const char *p;
	if (id == k->mm && k->acc[0]) {
		return (Val){k->acc[x->vw > 1 ? x->lane : 0], 0};
	} else if (id == k->mm) {
		p = fmt(k->a, "mm_%s", k->plan->names[id]);
	} else {
		p = tensor_param(k, id);
		int found = 0;
		for (int r = 0; r < k->gr->nreads; r++)
			if (k->gr->reads[r] == id) {
				k->used[r] = 1;
				found = 1;
			}
		if (!found) {
			kern_error(k, id, "'%s' is neither computed by the group nor read by it",
				   k->plan->names[id]);
			return (Val){"0", 0};
		}
	}
	const FgNode *n = &k->g->nodes[id];
	if (lanes_contiguous(x, s)) {
		Val w = load_vector(k, id, p, x);
		const char *v = fresh(k, w.lv, fmt(k->a, "v_%s", k->plan->names[id]));
		kline(k, w.lv, NULL, "const %s %s = fg_read(%s.v[%d]);", ctype(n->dt), v, w.e, x->lane);
		return (Val){v, w.lv};
	}
	int lv = ix_level(x, s);
	const char *v = fresh(k, lv, fmt(k->a, "v_%s", k->plan->names[id]));
	if (k->nc)
		kline(k, lv, NULL, "const %s %s = fg_read(__ldg(%s + %s));", ctype(n->dt), v, p,
		      paren(k->a, ix_linear(k, x, s)));
	else
		kline(k, lv, NULL, "const %s %s = fg_read(%s[%s]);", ctype(n->dt), v, p, ix_linear(k, x, s));
	return (Val){v, lv};
}

/* The op's CUDA expression (FG_OPS' cuda column) with a, b, c replaced by
 * the operands' expressions. */
static const char *subst(FgArena *a, const char *t, const Val *ops, int nops)
{
	size_t cap = strlen(t) + 1;
	for (int i = 0; i < nops; i++)
		cap += 4 * (strlen(ops[i].e) + 2);
	char *out = fg_arena_alloc(a, cap), *o = out;
	while (*t) {
		if (is_ident_char(*t)) {
			const char *s = t;
			while (is_ident_char(*t))
				t++;
			size_t n = (size_t)(t - s);
			int which = n == 1 && s[0] >= 'a' && s[0] <= 'c' ? s[0] - 'a' : -1;
			if (which >= 0 && which < nops) {
				const char *e = paren(a, ops[which].e);
				size_t m = strlen(e);
				memcpy(o, e, m);
				o += m;
			} else {
				memcpy(o, s, n);
				o += n;
			}
		} else {
			*o++ = *t++;
		}
	}
	*o = '\0';
	return out;
}

static const char *cast_expr(Kern *k, FgDtype to, FgDtype from, const char *a)
{
	int fromint = from == FG_DT_I32;
	a = paren(k->a, a);
	switch (to) {
	case FG_DT_F32:
		return fromint ? fmt(k->a, "(float)%s", a) : a;
	case FG_DT_F16:
		return fmt(k->a, fromint ? "fg_round_f16((float)%s)" : "fg_round_f16(%s)", a);
	case FG_DT_BF16:
		return fmt(k->a, fromint ? "fg_round_bf16((float)%s)" : "fg_round_bf16(%s)", a);
	case FG_DT_I32:
		return fromint ? a : fmt(k->a, "fg_cast_i32(%s)", a);
	default:
		return fmt(k->a, fromint ? "(%s != 0 ? 1.0f : 0.0f)" : "(%s != 0.0f ? 1.0f : 0.0f)", a);
	}
}

/* Whether the divisor ops[1] of a float division computed in scope lv
 * is the same for many quotients: a value of an outer scope, or a
 * reduction's result (a row's sum divides every element of the row). */
static int uniform_divisor(const Kern *k, const Val *ops, int lv)
{
	const char *d = ops[1].e;
	if (!((d[0] >= 'a' && d[0] <= 'z') || d[0] == '_'))
		return 0;       /* a literal (1.5f, (-2.0f), CUDART_INF_F): nvcc divides by it exactly */
	if (ops[1].lv < lv)
		return 1;
	for (int i = 0; i < k->reds.n; i++)
		if (k->reds.v[i].var && strcmp(k->reds.v[i].var, d) == 0)
			return 1;
	return 0;
}

/* 1 / d, once, where d is defined: a division by a uniform divisor becomes
 * a multiplication (within 2 ulp of the quotient in f32, far inside every
 * float dtype's tolerance), which costs one instruction, not a dozen. */
static const char *reciprocal(Kern *k, Val d)
{
	const char *key = fmt(k->a, "R%s", d.e);
	for (int i = k->memo.n - 1; i >= 0; i--)
		if (k->memo.v[i].id == -1 && strcmp(k->memo.v[i].key, key) == 0)
			return k->memo.v[i].v.e;
	const char *r = fresh(k, d.lv, fmt(k->a, "rcp_%s", simple(d.e) ? d.e : "d"));
	kline(k, d.lv, r, "const float %s = 1.0f / %s;", r, paren(k->a, d.e));
	Memo m = {-1, key, {r, d.lv}};
	fg_vec_push(k->a, &k->memo, m);
	return r;
}

static Val gen_ew(Kern *k, int id, const Ix *x)
{
	const FgNode *n = &k->g->nodes[id];
	Val ops[3];
	int lv = 0;
	FG_ASSERT(n->nin >= 1 && n->nin <= 3);
	for (int j = 0; j < n->nin; j++) {
		Ix y = ix_bcast(x, &n->shape, shape_of(k, n->in[j]));
		ops[j] = gen(k, n->in[j], &y);
		if (ops[j].lv > lv)
			lv = ops[j].lv;
	}
	const char *e;
	switch (n->op) {
	case FG_OP_IDENTITY:
		return ops[0];
	case FG_OP_CAST:
		e = cast_expr(k, n->dt, k->g->nodes[n->in[0]].dt, ops[0].e);
		break;
	case FG_OP_DROPOUT: {
		/* The mask of element i (C order of this node): Philox of
		 * (seed, i), as the interpreter draws it. */
		uint64_t thr = fgrt_dropout_threshold(n->a.drop.p);
		int ilv = ix_level(x, &n->shape);
		if (ilv > lv)
			lv = ilv;
		e = fmt(k->a, "fgrt_dropout_keep(%lluull, (uint64_t)%s, %lluull) ? %s / %s : 0.0f",
			(unsigned long long)n->a.drop.seed, paren(k->a, ix_linear(k, x, &n->shape)),
			(unsigned long long)thr, paren(k->a, ops[0].e), literal(k->a, FG_DT_F32, 1.0 - n->a.drop.p));
		break;
	}
	case FG_OP_DIV:
		if (n->dt != FG_DT_I32 && uniform_divisor(k, ops, lv)) {
			e = fmt(k->a, "%s * %s", paren(k->a, ops[0].e), reciprocal(k, ops[1]));
			break;
		}
		e = subst(k->a, fg_op_info[n->op].cuda, ops, n->nin);
		break;
	case FG_OP_ABS:
		if (n->dt == FG_DT_I32) {
			e = fmt(k->a, "abs(%s)", ops[0].e);
			break;
		}
		/* fall through */
	default:
		e = subst(k->a, fg_op_info[n->op].cuda, ops, n->nin);
		break;
	}
	return define(k, id, lv, e);
}

static Val gen_concat(Kern *k, int id, const Ix *x)
{
	const FgNode *n = &k->g->nodes[id];
	int ax = n->a.axis;
	const char *c = x->c[ax];
	int64_t off = 0;
	Val v[64] = {{0}};
	int64_t offs[64] = {0};
	int lv = x->lv[ax];
	if (n->nin > 64) {
		kern_error(k, id, "concat of more than 64 operands");
		return (Val){"0", 0};
	}
	for (int j = 0; j < n->nin; j++) {
		const FgShape *s = shape_of(k, n->in[j]);
		Ix y = *x;
		y.lin = y.vlin = NULL;
		if (x->vw > 1 && ax == x->vd)
			y.vd = LANES_APART;
		if (s->d[ax] == 1) {
			y.c[ax] = "0";
			y.lv[ax] = 0;
		} else {
			const char *shifted = off ? fmt(k->a, "%s - %lld", paren(k->a, c), (long long)off) : c;
			y.c[ax] = fmt(k->a, "fg_clamp<%s>(%s, %lld)", k->idx, shifted, (long long)(s->d[ax] - 1));
		}
		offs[j] = off;
		off += s->d[ax];
		v[j] = gen(k, n->in[j], &y);
		if (v[j].lv > lv)
			lv = v[j].lv;
	}
	if (n->nin == 1)
		return v[0];
	const char *e = v[n->nin - 1].e;
	for (int j = n->nin - 2; j >= 0; j--)
		e = fmt(k->a, "%s < %lld ? %s : %s", paren(k->a, c), (long long)offs[j + 1], v[j].e, e);
	return define(k, id, lv, e);
}

static Val gen_layout(Kern *k, int id, const Ix *x)
{
	const FgNode *n = &k->g->nodes[id];
	const FgShape *in = shape_of(k, n->in[0]);
	Ix y;
	memset(&y, 0, sizeof y);
	y.rank = in->rank;
	switch (n->op) {
	case FG_OP_TRANSPOSE: {
		int ident = 1;
		for (int i = 0; i < n->shape.rank; i++) {
			y.c[n->a.perm[i]] = x->c[i];
			y.lv[n->a.perm[i]] = x->lv[i];
			ident &= n->a.perm[i] == i;
		}
		y.vw = x->vw;
		y.lane = x->lane;
		y.vmis = x->vmis;
		y.vbase = x->vbase;
		y.vd = x->vw > 1 && x->vd >= 0 ? n->a.perm[x->vd] : x->vd;
		if (ident) {
			y.lin = x->lin;
			y.lin_lv = x->lin_lv;
			y.vlin = x->vlin;
		}
		break;
	}
	case FG_OP_SLICE: {
		int ax = n->a.slice.axis;
		long long st = (long long)n->a.slice.start;
		y = *x;
		y.lin = y.vlin = NULL;
		if (st != 0 && x->vw > 1 && ax == x->vd) {
			y.vbase = fmt(k->a, "%s + %lld", paren(k->a, x->vbase), st);
			y.vmis = (int)((x->vmis + st) % x->vw);
			lane_coords(k, &y);
		} else if (st != 0) {
			y.c[ax] = strcmp(x->c[ax], "0") == 0 ? fmt(k->a, "%lld", st)
							      : fmt(k->a, "%s + %lld", paren(k->a, x->c[ax]), st);
		}
		break;
	}
	case FG_OP_RESHAPE:
		y = ix_reshape(k, x, &n->shape, in);
		break;
	case FG_OP_BROADCAST_TO:
		y = ix_bcast(x, &n->shape, in);
		break;
	case FG_OP_CONCAT:
		return gen_concat(k, id, x);
	default:
		fg_die("gen_layout: %s", fg_op_info[n->op].name);
	}
	return gen(k, n->in[0], &y);
}

/* A reduction's value: the thread's own row (or column, or total); any
 * other element would need another block's work. */
static Val gen_reduce(Kern *k, int id, const Ix *x)
{
	const FgShape *s = shape_of(k, id);
	for (int i = 0; i < k->reds.n; i++) {
		Red *r = &k->reds.v[i];
		if (r->id != id)
			continue;
		if (!r->var)
			fg_die("reduction %s used before it is computed", k->plan->names[id]);
		for (int d = 0; d < s->rank; d++)
			if (s->d[d] > 1 && strcmp(x->c[d], r->at.c[d]) != 0) {
				kern_error(k, id, "'%s' is needed at an element this thread does not reduce "
					   "(a reduced value broadcast across its own rows)", k->plan->names[id]);
				return (Val){"0", 0};
			}
		return (Val){r->var, r->lv};
	}
	kern_error(k, id, "reduction '%s' is not the group's own", k->plan->names[id]);
	return (Val){"0", 0};
}

/* Node id's value at index x (of its own shape). */
static Val gen(Kern *k, int id, const Ix *x)
{
	const FgNode *n = &k->g->nodes[id];
	if (k->failed)
		return (Val){"0", 0};
	if (n->op == FG_OP_CONST)
		return (Val){literal(k->a, n->dt, n->a.value), 0};
	const char *key = memo_key(k, id, x);
	for (int i = k->memo.n - 1; i >= 0; i--)
		if (k->memo.v[i].id == id && strcmp(k->memo.v[i].key, key) == 0)
			return k->memo.v[i].v;
	Val v;
	if (!is_member(k, id)) {
		v = load(k, id, x);
	} else {
		switch (fg_op_info[n->op].cls) {
		case FG_CLASS_EW:
			v = gen_ew(k, id, x);
			break;
		case FG_CLASS_LAYOUT:
			v = gen_layout(k, id, x);
			break;
		case FG_CLASS_REDUCE:
			v = gen_reduce(k, id, x);
			break;
		default:
			kern_error(k, id, "%s inside a %s group", fg_op_info[n->op].name,
				   fg_group_kind_name[k->gr->kind]);
			return (Val){"0", 0};
		}
	}
	Memo m = {id, key, v};
	fg_vec_push(k->a, &k->memo, m);
	return v;
}

static const char *store_fn(FgDtype dt)
{
	static const char *const t[FG_DT_COUNT] = {
		[FG_DT_F32] = "fg_to_f32", [FG_DT_F16] = "fg_to_f16", [FG_DT_BF16] = "fg_to_bf16",
		[FG_DT_I32] = "fg_to_i32", [FG_DT_BOOL] = "fg_to_bool",
	};
	return t[dt];
}

/* Stores written value w at index x of its shape, when cond holds. */
static void store(Kern *k, int w, const Ix *x, const char *cond, const char *extra_cond)
{
	Val v = gen(k, w, x);
	const FgNode *n = &k->g->nodes[w];
	const char *c = cond;
	if (extra_cond)
		c = c ? fmt(k->a, "%s && %s", extra_cond, c) : extra_cond;
	const char *st = fmt(k->a, "%s[%s] = %s(%s);", tensor_param(k, w), ix_linear(k, x, &n->shape),
			     store_fn(n->dt), v.e);
	if (c)
		kline(k, k->depth, NULL, "if (%s)", c), kline(k, k->depth, NULL, "\t%s", st);
	else
		kline(k, k->depth, NULL, "%s", st);
}

/* Stores written value w at the vw lanes xs, each when its conds[l]
 * holds (NULL: always) and extra_cond does: one vector store where the
 * lanes lie side by side in memory, else lane by lane. */
static void store_lanes(Kern *k, int w, const Ix *xs, const char *const *conds, const char *extra_cond)
{
	const FgNode *n = &k->g->nodes[w];
	int vw = xs[0].vw, vector = lanes_contiguous(&xs[0], &n->shape);
	for (int l = 0; l < vw; l++)
		vector &= conds[l] == NULL;
	if (!vector) {
		for (int l = 0; l < vw; l++)
			store(k, w, &xs[l], conds[l], extra_cond);
		return;
	}
	const char *e = "";
	for (int l = 0; l < vw; l++)
		e = fmt(k->a, "%s%s%s(%s)", e, l ? ", " : "", store_fn(n->dt), gen(k, w, &xs[l]).e);
	Ix x0 = lane0(k, &xs[0]);
	const char *st = fmt(k->a, "fg_stv(%s + %s, FgVec<%s, %d>{{%s}});", tensor_param(k, w),
			     paren(k->a, ix_linear(k, &x0, &n->shape)), stype(n->dt), vw, e);
	if (extra_cond)
		kline(k, k->depth, NULL, "if (%s)", extra_cond), kline(k, k->depth, NULL, "\t%s", st);
	else
		kline(k, k->depth, NULL, "%s", st);
}

/* ------------------------------------------------------- kernels */

static void kern_init(Kern *k, Emit *E, int gi)
{
	memset(k, 0, sizeof *k);
	k->E = E;
	k->a = E->a;
	k->g = E->g;
	k->plan = E->plan;
	k->gi = gi;
	k->gr = &E->plan->groups[gi];
	k->mm = -1;
	k->used = fg_arena_alloc(E->a, (size_t)k->gr->nreads + 1);
	int64_t big = 0;
	for (int i = 0; i < k->gr->nnodes; i++) {
		const FgNode *n = &E->g->nodes[k->gr->nodes[i]];
		big = numel(&n->shape) > big ? numel(&n->shape) : big;
		for (int j = 0; j < n->nin; j++)
			big = numel(shape_of(k, n->in[j])) > big ? numel(shape_of(k, n->in[j])) : big;
	}
	/* 32-bit indices while every index and a grid stride stay below 2^31 */
	k->idx = big + ((int64_t)MAX_GRID * LOOP_BLOCK) < INT32_MAX ? "int" : "int64_t";
	for (int i = 0; i < k->gr->nnodes; i++)
		E->member[k->gr->nodes[i]] = gi + 1;
}

static void kern_done(Kern *k)
{
	for (int i = 0; i < k->gr->nnodes; i++)
		k->E->member[k->gr->nodes[i]] = 0;
}

/* The comment above a group's kernel: its kind and space, then each op
 * with its operands, type and source location, in aligned columns. */
static void emit_comment(Emit *E, int gi, const char *what)
{
	const FgGroup *gr = &E->plan->groups[gi];
	const char *src = in_comment(E->a, E->d->src ? E->d->src->name : "");
	const char **col[3];
	int w[3] = {0, 0, 0}, nrow = 0;
	for (int c = 0; c < 3; c++)
		col[c] = fg_arena_array(E->a, (size_t)gr->nnodes + 1, sizeof(char *));
	for (int i = 0; i < gr->nnodes; i++) {
		int id = gr->nodes[i];
		const FgNode *n = &E->g->nodes[id];
		if (n->op == FG_OP_CONST)
			continue;
		const char *ops = "";
		for (int j = 0; j < n->nin; j++) {
			const FgNode *o = &E->g->nodes[n->in[j]];
			const char *s = o->op == FG_OP_CONST ? fmt(E->a, "%.9g", o->a.value) : E->plan->names[n->in[j]];
			ops = fmt(E->a, "%s%s%s", ops, j ? ", " : "", s);
		}
		col[0][nrow] = fmt(E->a, "%s = %s(%s)", E->plan->names[id], fg_op_info[n->op].name, ops);
		col[1][nrow] = shape_str(E->a, n->dt, &n->shape);
		col[2][nrow] = fmt(E->a, "%s:%d:%d%s%s%s", src, n->loc.line, n->loc.col, n->composite ? "  (from " : "",
				   n->composite ? n->composite : "", n->composite ? ")" : "");
		for (int c = 0; c < 2; c++)
			w[c] = (int)strlen(col[c][nrow]) > w[c] ? (int)strlen(col[c][nrow]) : w[c];
		nrow++;
	}
	fprintf(E->f, "/*\n * %s: %s\n", gr->name, what);
	for (int r = 0; r < nrow; r++)
		fprintf(E->f, " *   %-*s  %-*s  %s\n", w[0], col[0][r], w[1], col[1][r], col[2][r]);
	fprintf(E->f, " * reads:");
	for (int i = 0; i < gr->nreads; i++)
		fprintf(E->f, " %s", E->plan->names[gr->reads[i]]);
	fprintf(E->f, "%s\n * writes:", gr->nreads ? "" : " nothing");
	for (int i = 0; i < gr->nwrites; i++)
		fprintf(E->f, " %s (%s)", E->plan->names[gr->writes[i]], fg_reason_name[E->plan->why[gr->writes[i]]]);
	fprintf(E->f, "\n */\n");
}

/* Prints a kernel: signature from the reads it used and its writes, body
 * from scope 0.  Returns the host's argument list. */
static const char *emit_kernel(Kern *k, const char *name, int block, const Param *extra, int nextra,
			       int with_writes)
{
	FG_VEC(Param) ps = {0};
	for (int i = 0; i < nextra; i++)
		fg_vec_push(k->a, &ps, extra[i]);
	for (int r = 0; r < k->gr->nreads; r++) {
		int id = k->gr->reads[r];
		if (!k->used[r])
			continue;
		Param p = {fmt(k->a, "const %s *__restrict__ %s", stype(k->g->nodes[id].dt), tensor_param(k, id)),
			   tensor_param(k, id)};
		fg_vec_push(k->a, &ps, p);
	}
	for (int w = 0; with_writes && w < k->gr->nwrites; w++) {
		int id = k->gr->writes[w];
		Param p = {fmt(k->a, "%s *__restrict__ %s", stype(k->g->nodes[id].dt), tensor_param(k, id)),
			   tensor_param(k, id)};
		fg_vec_push(k->a, &ps, p);
	}
	drop_unused(k, &k->lines[0]);
	FILE *f = k->E->f;
	fprintf(f, "__global__ void __launch_bounds__(%d)\n%s(", block, name);
	const char *args = "";
	for (int i = 0; i < ps.n; i++) {
		fprintf(f, "%s%s", i ? ",\n\t" : "", ps.v[i].decl);
		args = fmt(k->a, "%s%s%s", args, i ? ", " : "", ps.v[i].arg);
	}
	fprintf(f, ")\n{\n");
	for (int i = 0; i < k->lines[0].n; i++)
		fprintf(f, "\t%s\n", k->lines[0].v[i].text);
	fprintf(f, "}\n\n");
	return args;
}

/* Records launch `kernel` of group gi, enqueued by the statement `line`
 * (none for a cuBLASLt call: the caller wrote it), then its check. */
static void add_call(Emit *E, const char *kernel, int gi, int64_t grid, int64_t block, const char *line)
{
	Launch l = {kernel, gi, grid, block};
	fg_vec_push(E->a, &E->launches, l);
	if (line)
		fg_vec_push(E->a, &E->run, line);
	fg_vec_push(E->a, &E->run, fmt(E->a, "fgrt_launched(ctx, %d);", E->launches.n - 1));
}

static void add_launch(Emit *E, const char *kernel, int gi, int64_t grid, int64_t block, const char *args)
{
	add_call(E, kernel, gi, grid, block, block > 0 ? fmt(E->a, "%s<<<%lld, %lld, 0, ctx->stream>>>(%s);", kernel,
							      (long long)grid, (long long)block, args) : NULL);
}

static int64_t grid_for(int64_t n, int64_t block)
{
	int64_t g = (n + block - 1) / block;
	return g < 1 ? 1 : g > MAX_GRID ? MAX_GRID : g;
}

/* A grid-stride loop head over n elements with index variable v. */
static const char *stride_loop(Kern *k, const char *v, int64_t n)
{
	if (strcmp(k->idx, "int") == 0)
		return fmt(k->a, "for (int %s = blockIdx.x * blockDim.x + threadIdx.x; %s < %lld; %s += gridDim.x * blockDim.x)",
			   v, v, (long long)n, v);
	return fmt(k->a, "for (int64_t %s = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; %s < %lld; "
		   "%s += (int64_t)gridDim.x * blockDim.x)", v, v, (long long)n, v);
}

/* The group's last member: every other member flows into it. */
static int sink(const Kern *k)
{
	int s = -1;
	for (int i = 0; i < k->gr->nnodes; i++)
		if (k->g->nodes[k->gr->nodes[i]].op != FG_OP_CONST && is_member(k, k->gr->nodes[i]))
			s = k->gr->nodes[i];
	return s < 0 ? k->gr->root : s;
}

/* The last dim of s above 1, or -1. */
static int innermost(const FgShape *s)
{
	for (int i = s->rank - 1; i >= 0; i--)
		if (s->d[i] > 1)
			return i;
	return -1;
}

/* Registers a thread of the group needs to carry n elements at once, by
 * the partitioner's model (passes/fuse.c: est_regs is a base of 16 for
 * indices plus the live values of 4 elements a thread). */
static int regs_for(const Kern *k, int n)
{
	return 16 + (k->gr->est_regs - 16) * n / 4;
}

/* Lanes per thread for a kernel whose vectors run along a dim of size
 * inner: 16 bytes of the narrowest value the group reads or writes (so
 * every access is one or two 16-byte loads or stores), halved until the
 * dim splits into whole vectors and (regs) the registers stay within the
 * limit by the partitioner's model. */
static int lane_width(const Kern *k, int64_t inner, int regs)
{
	int size = 4;
	for (int r = 0; r < k->gr->nreads + k->gr->nwrites; r++) {
		int id = r < k->gr->nreads ? k->gr->reads[r] : k->gr->writes[r - k->gr->nreads];
		size = fg_dtype_size[k->g->nodes[id].dt] < size ? fg_dtype_size[k->g->nodes[id].dt] : size;
	}
	int vw = 16 / size > MAX_LANES ? MAX_LANES : 16 / size;
	while (vw > 1 && (inner % vw != 0 || (regs && regs_for(k, vw) > REG_LIMIT)))
		vw /= 2;
	return vw;
}

/* Lane l of the vw lanes that start at x (an index whose coordinate vd
 * is a multiple of vw). */
static Ix lane_of(Kern *k, const Ix *x, int vd, int vw, int l)
{
	Ix y = *x;
	y.vw = vw;
	y.lane = l;
	y.vd = vd;
	y.vmis = 0;
	y.vbase = x->c[vd];
	y.vlin = x->lin;
	lane_coords(k, &y);
	return y;
}

/* A loop kernel over the shape of `space`: writes that fit it in one
 * grid-stride loop, each other write in a loop of its own.  Also the
 * epilogue of a gemm (k->mm read from scratch). */
static void emit_loop(Emit *E, Kern *k, int space_id, const Param *extra, int nextra, const char *what)
{
	const FgShape *S = shape_of(k, space_id);
	int64_t N = numel(S);
	int vd = innermost(S);
	int vw = vd < 0 ? 1 : lane_width(k, S->d[vd], 1);

	kopen(k);
	const char *base = "i";
	if (vw > 1) {
		base = fresh(k, 1, "b");
		kline(k, 1, base, "const %s %s = i * %d;", k->idx, base, vw);
	}
	Ix root = ix_from_lin(k, S, base, 1, "i");
	for (int w = 0; w < k->gr->nwrites; w++) {
		int id = k->gr->writes[w];
		const FgShape *ws = shape_of(k, id);
		if (!fits(ws, S))
			continue;
		Ix ys[MAX_LANES];
		const char *conds[MAX_LANES];
		for (int l = 0; l < vw; l++) {
			Ix x = vw > 1 ? lane_of(k, &root, vd, vw, l) : root;
			ys[l] = ix_bcast(&x, S, ws);
			conds[l] = write_cond(k, &x, S, ws);
		}
		if (vw > 1)
			store_lanes(k, id, ys, conds, NULL);
		else
			store(k, id, &ys[0], conds[0], NULL);
	}
	kclose(k, stride_loop(k, "i", N / vw));
	int64_t biggest = N;
	for (int w = 0; w < k->gr->nwrites; w++) {
		int id = k->gr->writes[w];
		const FgShape *ws = shape_of(k, id);
		if (fits(ws, S))
			continue;
		kopen(k);
		Ix own_ix = ix_from_lin(k, ws, "i", 1, "i");
		store(k, id, &own_ix, NULL, NULL);
		kclose(k, stride_loop(k, "i", numel(ws)));
		biggest = numel(ws) > biggest ? numel(ws) : biggest;
	}
	if (k->failed)
		return;
	if (what)
		emit_comment(E, k->gi, vw > 1 ? fmt(E->a, "%s; %d lanes a thread", what, vw) : what);
	const char *args = emit_kernel(k, k->gr->name, LOOP_BLOCK, extra, nextra, 1);
	add_launch(E, k->gr->name, k->gi, grid_for(biggest / vw, LOOP_BLOCK), LOOP_BLOCK, args);
}

/* ------------------------------------------------------- reductions */

typedef struct RedInfo {
	FgShape S;              /* the reductions' input shape: the space */
	uint32_t axes;          /* reduced axes of S */
	FgShape kept, red;      /* S's kept and reduced dims, in order */
	int64_t nkept, nred;
} RedInfo;

static const char *acc_type(const Kern *k, const FgNode *n)
{
	if (n->dt == FG_DT_I32)
		return n->op == FG_OP_SUM ? "long long" : "int";
	/* Column and full sums run long serial chains: f64 keeps them
	 * within the RMSE gate whatever the length. */
	if (k->gr->kind == FG_GROUP_REDUCE && (n->op == FG_OP_SUM || n->op == FG_OP_MEAN))
		return "double";
	return "float";
}

static const char *acc_init(const FgNode *n)
{
	int i32 = n->dt == FG_DT_I32;
	switch (n->op) {
	case FG_OP_MAX:
		return i32 ? "INT_MIN" : "-CUDART_INF_F";
	case FG_OP_MIN:
		return i32 ? "INT_MAX" : "CUDART_INF_F";
	default:
		return "0";
	}
}

static const char *red_functor(const FgNode *n)
{
	return n->op == FG_OP_MAX ? "FgMax()" : n->op == FG_OP_MIN ? "FgMin()" : "FgSum()";
}

/* acc = acc (op) v */
static const char *red_step(Kern *k, const FgNode *n, const char *acc, const char *v)
{
	switch (n->op) {
	case FG_OP_MAX:
		return fmt(k->a, "%s = fg_maximum(%s, (%s)%s);", acc, acc, acc_type(k, n), paren(k->a, v));
	case FG_OP_MIN:
		return fmt(k->a, "%s = fg_minimum(%s, (%s)%s);", acc, acc, acc_type(k, n), paren(k->a, v));
	default:
		return fmt(k->a, "%s += %s;", acc, v);
	}
}

/* The reduced value from the final accumulator: a mean divides, an i32
 * sum saturates, a float sum in f64 narrows. */
static const char *red_final(Kern *k, const FgNode *n, const char *acc, int64_t count)
{
	if (n->dt == FG_DT_I32)
		return n->op == FG_OP_SUM ? fmt(k->a, "fg_cast_i32(%s)", acc) : acc;
	if (n->op == FG_OP_MEAN && strcmp(acc_type(k, n), "float") == 0)
		return fmt(k->a, "%s / %lld.0f", acc, (long long)count);
	if (n->op == FG_OP_MEAN)
		return fmt(k->a, "(float)(%s / %lld.0)", acc, (long long)count);
	return strcmp(acc_type(k, n), "float") == 0 ? acc : fmt(k->a, "(float)%s", acc);
}

static int is_reduction(const Kern *k, int id)
{
	return fg_op_info[k->g->nodes[id].op].cls == FG_CLASS_REDUCE && is_member(k, id);
}

/* Fills ri from the group's first reduction; -1 when it has none. */
static int red_info(Kern *k, RedInfo *ri)
{
	int first = -1;
	for (int i = 0; i < k->gr->nnodes && first < 0; i++)
		if (is_reduction(k, k->gr->nodes[i]))
			first = k->gr->nodes[i];
	if (first < 0)
		return -1;
	const FgNode *r = &k->g->nodes[first];
	memset(ri, 0, sizeof *ri);
	ri->S = *shape_of(k, r->in[0]);
	ri->axes = r->a.red.axes;
	ri->nkept = ri->nred = 1;
	for (int i = 0; i < ri->S.rank; i++) {
		if (ri->axes >> i & 1) {
			ri->red.d[ri->red.rank++] = ri->S.d[i];
			ri->nred *= ri->S.d[i];
		} else {
			ri->kept.d[ri->kept.rank++] = ri->S.d[i];
			ri->nkept *= ri->S.d[i];
		}
	}
	for (int i = 0; i < k->gr->nnodes; i++) {
		int id = k->gr->nodes[i];
		const FgNode *n = &k->g->nodes[id];
		if (is_reduction(k, id) &&
		    (n->a.red.axes != ri->axes || !fg_shape_eq(shape_of(k, n->in[0]), &ri->S)))
			kern_error(k, id, "reductions over different axes or shapes in one group");
	}
	return first;
}

/* A space index from kept coordinates kc and reduced coordinates rc. */
static Ix merge_ix(const RedInfo *ri, const Ix *kc, const Ix *rc, const char *lin, int lin_lv)
{
	Ix x;
	int a = 0, b = 0;
	memset(&x, 0, sizeof x);
	x.rank = ri->S.rank;
	for (int i = 0; i < ri->S.rank; i++) {
		if (ri->axes >> i & 1) {
			x.c[i] = rc->c[b];
			x.lv[i] = rc->lv[b++];
		} else {
			x.c[i] = kc->c[a];
			x.lv[i] = kc->lv[a++];
		}
	}
	x.lin = lin;
	x.lin_lv = lin_lv;
	return x;
}

/* The index a thread sees of reduction id's result, from kept coords kc
 * (flat index lin over the kept dims). */
static Ix result_ix(const Kern *k, const RedInfo *ri, int id, const Ix *kc, const char *lin, int lv)
{
	const FgNode *n = &k->g->nodes[id];
	Ix x;
	int a = 0;
	memset(&x, 0, sizeof x);
	x.rank = n->shape.rank;
	for (int i = 0, o = 0; i < ri->S.rank; i++) {
		if (ri->axes >> i & 1) {
			if (n->a.red.keepdims)
				x.c[o++] = "0";
		} else {
			x.c[o] = kc->c[a];
			x.lv[o++] = kc->lv[a++];
		}
	}
	x.lin = lin;
	x.lin_lv = lv;
	return x;
}

/* Per member: whether it depends on one of the group's reductions. */
static unsigned char *after_reduction(Kern *k)
{
	unsigned char *dep = fg_arena_alloc(k->a, (size_t)k->g->nnodes + 1);
	for (int i = 0; i < k->gr->nnodes; i++) {
		int id = k->gr->nodes[i];
		const FgNode *n = &k->g->nodes[id];
		if (!is_member(k, id))
			continue;
		dep[id] = is_reduction(k, id);
		for (int j = 0; j < n->nin; j++)
			dep[id] |= dep[n->in[j]];
	}
	return dep;
}

/* Where a write of a reduction group goes: 'R' once per row or column
 * (its shape fits a reduction's result), 'S' per element of the space,
 * 0 when neither. */
static int write_place(const Kern *k, const RedInfo *ri, int first, const unsigned char *dep, int w)
{
	const FgShape *ws = shape_of(k, w);
	int fr = fits(ws, shape_of(k, first)), fs = fits(ws, &ri->S);
	if (fr && (dep[w] || !fs))
		return 'R';
	if (fs && !dep[w])
		return 'S';
	if (fs && numel(ws) == numel(&ri->S))
		return 'S';
	return 0;
}

static void declare_reds(Kern *k, int lv, int pass, const int *passes)
{
	for (int i = 0; i < k->reds.n; i++) {
		Red *r = &k->reds.v[i];
		if (passes && passes[i] != pass)
			continue;
		const FgNode *n = &k->g->nodes[r->id];
		r->acc = fresh(k, lv, fmt(k->a, "acc_%s", k->plan->names[r->id]));
		kline(k, lv, NULL, "%s %s = %s;", acc_type(k, n), r->acc, acc_init(n));
	}
}

/* Accumulates the reductions of `pass` (all when passes is NULL) at
 * space index x, in the current scope. */
static void accumulate(Kern *k, const Ix *x, int pass, const int *passes)
{
	for (int i = 0; i < k->reds.n; i++) {
		Red *r = &k->reds.v[i];
		if (passes && passes[i] != pass)
			continue;
		const FgNode *n = &k->g->nodes[r->id];
		Val v = gen(k, n->in[0], x);    /* its input is the space */
		kline(k, k->depth, NULL, "%s", red_step(k, n, r->acc, v.e));
	}
}

static void collect_reds(Kern *k)
{
	for (int i = 0; i < k->gr->nnodes; i++) {
		int id = k->gr->nodes[i];
		if (!is_reduction(k, id))
			continue;
		Red r;
		memset(&r, 0, sizeof r);
		r.id = id;
		fg_vec_push(k->a, &k->reds, r);
	}
}

/* red_info, then the group's reductions into k->reds; the first one, or
 * -1 when the group (of the kind `what` names) has none or failed. */
static int group_reductions(Kern *k, RedInfo *ri, const char *what)
{
	int first = red_info(k, ri);
	if (first < 0 && !k->failed)
		kern_error(k, -1, "%s without a reduction", what);
	if (first < 0 || k->failed)
		return -1;
	collect_reds(k);
	return first;
}

static const char *row_desc(Emit *E, const RedInfo *ri, const char *how)
{
	return fmt(E->a, "%lld %s of %lld over %s; %s", (long long)ri->nkept,
		   ri->nkept == 1 ? "row" : "rows", (long long)ri->nred,
		   shape_str(E->a, FG_DT_F32, &ri->S) + 3, how);
}

/* Stores the writes of the reduced shape ('R') at the result index `at`
 * of the group's reduction, once it is reduced, when extra_cond holds
 * (NULL: always). */
static void store_reduced(Kern *k, const RedInfo *ri, int first, const unsigned char *dep, const Ix *at,
			  const char *extra_cond)
{
	for (int w = 0; w < k->gr->nwrites; w++) {
		int id = k->gr->writes[w];
		int where = write_place(k, ri, first, dep, id);
		if (where == 'R') {
			Ix y = ix_bcast(at, shape_of(k, first), shape_of(k, id));
			store(k, id, &y, write_cond(k, at, shape_of(k, first), shape_of(k, id)), extra_cond);
		} else if (where == 0) {
			kern_error(k, id, "'%s' %s is written, but it fits neither the reduction's input nor its result",
				   k->plan->names[id], shape_str(k->a, k->g->nodes[id].dt, shape_of(k, id)));
		}
	}
}

/* Stores the writes of the space's shape ('S': the epilogue, or values
 * before the reduction) at the nl lanes xs of the space, when extra_cond
 * holds (NULL: always). */
static void store_space(Kern *k, const RedInfo *ri, int first, const unsigned char *dep, const Ix *xs, int nl,
			const char *extra_cond)
{
	for (int w = 0; w < k->gr->nwrites; w++) {
		int id = k->gr->writes[w];
		if (write_place(k, ri, first, dep, id) != 'S')
			continue;
		Ix ys[MAX_LANES];
		const char *conds[MAX_LANES];
		for (int l = 0; l < nl; l++) {
			ys[l] = ix_bcast(&xs[l], &ri->S, shape_of(k, id));
			conds[l] = write_cond(k, &xs[l], &ri->S, shape_of(k, id));
		}
		if (nl > 1)
			store_lanes(k, id, ys, conds, extra_cond);
		else
			store(k, id, &ys[0], conds[0], extra_cond);
	}
}

/* How a row kernel that keeps its row in registers splits a row: a team
 * of `threads` per row (a warp, rows_per_block to a block, or a whole
 * block), each thread holding `vecs` vectors of vw elements; element
 * (u * threads + t) * vw + l of the row is lane l of vector u of thread
 * t.  `guard`: the last vectors run past the row (clamped, not counted). */
typedef struct RowTeam {
	int threads, rows_per_block, vw, vecs, guard;
	int vd;                 /* the space's coordinate the lanes run along */
} RowTeam;

#define ROW_REGS 16             /* row elements a thread holds, at most */
#define ROW_REGS_WIDE 32        /* ... when a block of 1024 is not enough */

/* Whether the row fits in the registers of a team, and its shape. */
static int row_team(const Kern *k, const RedInfo *ri, RowTeam *rt)
{
	int nonunit = 0;
	for (int i = 0; i < ri->red.rank; i++)
		nonunit += ri->red.d[i] > 1;
	memset(rt, 0, sizeof *rt);
	rt->vd = innermost(&ri->S);
	rt->vw = nonunit == 1 ? lane_width(k, ri->nred, 0) : 1;
	for (int w = 32; w <= 1024; w *= 2) {
		int64_t vecs = (ri->nred + (int64_t)w * rt->vw - 1) / ((int64_t)w * rt->vw);
		int64_t held = vecs * rt->vw;
		if ((held <= ROW_REGS || (w == 1024 && held <= ROW_REGS_WIDE)) && regs_for(k, (int)held) <= REG_LIMIT) {
			rt->threads = w;
			rt->vecs = (int)vecs;
			break;
		}
	}
	if (!rt->threads)
		return 0;
	rt->rows_per_block = rt->threads == 32 ? 4 : 1;
	rt->guard = ri->nred % ((int64_t)rt->threads * rt->vw) != 0;
	return 1;
}

/* A row kernel that reads its row once: a team of threads per row (see
 * RowTeam) holds the row's elements in registers.  Every pass and the
 * epilogue evaluate the same element indices, so the memo hands the loads
 * (and whatever was computed from them before a reduction) of the first
 * pass to the later ones: softmax reads x once, keeps exp(x - max) from
 * the sum to the division. */
static void emit_rowreduce_regs(Emit *E, Kern *k, const RedInfo *ri, const RowTeam *rt, int first,
				const int *passes, int npass, const unsigned char *dep)
{
	int W = rt->threads, vw = rt->vw, U = rt->vecs, block = W * rt->rows_per_block;
	const char *t = W == 32 ? "(int)(threadIdx.x & 31)" : "(int)threadIdx.x";
	const char *reduce = W == 32 ? "fg_warp_reduce" : "fg_block_reduce";
	Ix *xs = fg_arena_array(k->a, (size_t)U * vw, sizeof(Ix));
	const char **in = fg_arena_array(k->a, (size_t)U, sizeof(char *));

	/* scope 0: where each thread's elements sit in a row */
	for (int u = 0; u < U; u++) {
		const char *j = fresh(k, 0, fmt(k->a, "j%d", u));
		const char *at = fmt(k->a, "(%d + %s) * %d", u * W, t, vw);
		in[u] = NULL;
		if (rt->guard && u == U - 1) {
			in[u] = fresh(k, 0, fmt(k->a, "in%d", u));
			kline(k, 0, in[u], "const bool %s = %s < %lld;", in[u], at, (long long)ri->nred);
			at = fmt(k->a, "min(%s, %lld)", at, (long long)(ri->nred - vw));
		}
		kline(k, 0, j, "const %s %s = %s;", k->idx, j, at);
	}
	kopen(k);       /* 1: a row */
	Ix kc = ix_from_lin(k, &ri->kept, "row", 1, "r");
	for (int r = 0; r < k->reds.n; r++) {
		k->reds.v[r].at = result_ix(k, ri, k->reds.v[r].id, &kc, "row", 1);
		k->reds.v[r].lv = 1;
	}
	for (int u = 0; u < U; u++) {
		const char *j = fmt(k->a, "j%d", u);
		Ix rc = ix_from_lin(k, &ri->red, j, 0, fmt(k->a, "j%d_", u));
		const char *i = fresh(k, 1, fmt(k->a, "i%d", u));
		kline(k, 1, i, "const %s %s = row * %lld + %s;", k->idx, i, (long long)ri->nred, j);
		Ix x = merge_ix(ri, &kc, &rc, i, 1);
		for (int l = 0; l < vw; l++)
			xs[u * vw + l] = vw > 1 ? lane_of(k, &x, rt->vd, vw, l) : x;
	}
	for (int p = 1; p <= npass; p++) {
		kline(k, 1, NULL, "/* pass %d */", p);
		declare_reds(k, 1, p, passes);
		for (int r = 0; r < k->reds.n; r++) {
			Red *rd = &k->reds.v[r];
			if (passes[r] != p)
				continue;
			const FgNode *n = &k->g->nodes[rd->id];
			for (int e = 0; e < U * vw; e++) {
				const char *step = red_step(k, n, rd->acc, gen(k, n->in[0], &xs[e]).e);
				if (in[e / vw])
					kline(k, 1, NULL, "if (%s)", in[e / vw]), kline(k, 1, NULL, "\t%s", step);
				else
					kline(k, 1, NULL, "%s", step);
			}
			kline(k, 1, NULL, "%s = %s(%s, %s);", rd->acc, reduce, rd->acc, red_functor(n));
			rd->var = fresh(k, 1, fmt(k->a, "v_%s", k->plan->names[rd->id]));
			kline(k, 1, NULL, "const %s %s = %s;", ctype(n->dt), rd->var, red_final(k, n, rd->acc, ri->nred));
		}
	}
	/* once per row: values of the reduced shape */
	Ix rx = result_ix(k, ri, first, &kc, "row", 1);
	store_reduced(k, ri, first, dep, &rx, fmt(k->a, "%s == 0", t));
	/* the epilogue: values of the row's elements, from registers */
	kline(k, 1, NULL, "/* epilogue */");
	for (int u = 0; u < U; u++)
		store_space(k, ri, first, dep, &xs[u * vw], vw, in[u]);
	const char *row = rt->rows_per_block > 1
		? fmt(k->a, "for (%s row = blockIdx.x * %d + (threadIdx.x >> 5); row < %lld; row += gridDim.x * %d)",
		      k->idx, rt->rows_per_block, (long long)ri->nkept, rt->rows_per_block)
		: fmt(k->a, "for (%s row = blockIdx.x; row < %lld; row += gridDim.x)", k->idx, (long long)ri->nkept);
	kclose(k, row);
	if (k->failed)
		return;
	int64_t grid = (ri->nkept + rt->rows_per_block - 1) / rt->rows_per_block;
	emit_comment(E, k->gi, row_desc(E, ri, fmt(E->a, "%s per row, the row in registers (%d x %d elements a thread)",
						  W == 32 ? "a warp" : fmt(E->a, "a block of %d", W), U, vw)));
	const char *args = emit_kernel(k, k->gr->name, block, NULL, 0, 1);
	add_launch(E, k->gr->name, k->gi, grid < INT32_MAX ? grid : INT32_MAX, block, args);
}

/* One block per row: each pass streams the row once for the reductions
 * whose inputs are ready (softmax: max, then sum), a last pass computes
 * and stores the epilogue.  Rows too long for registers take this. */
static void emit_rowreduce(Emit *E, Kern *k)
{
	RedInfo ri;
	int first = group_reductions(k, &ri, "a row reduction group");
	if (first < 0)
		return;
	/* pass of each reduction: one more than the reductions its input needs */
	int *passes = fg_arena_array(k->a, (size_t)k->reds.n + 1, sizeof(int));
	int *need = fg_arena_array(k->a, (size_t)k->g->nnodes + 1, sizeof(int));
	int npass = 0;
	for (int i = 0; i < k->gr->nnodes; i++) {
		int id = k->gr->nodes[i];
		const FgNode *n = &k->g->nodes[id];
		if (!is_member(k, id))
			continue;
		int m = 0;
		for (int j = 0; j < n->nin; j++)
			m = need[n->in[j]] > m ? need[n->in[j]] : m;
		need[id] = m;
		for (int r = 0; r < k->reds.n; r++)
			if (k->reds.v[r].id == id) {
				passes[r] = m + 1;
				need[id] = m + 1;
				npass = m + 1 > npass ? m + 1 : npass;
			}
	}
	unsigned char *dep = after_reduction(k);
	RowTeam rt;
	if (row_team(k, &ri, &rt)) {
		emit_rowreduce_regs(E, k, &ri, &rt, first, passes, npass, dep);
		return;
	}
	int block = 32;
	while (block < 1024 && block * 8 < ri.nred)
		block *= 2;

	kopen(k);       /* 1: a row */
	Ix kc = ix_from_lin(k, &ri.kept, "row", 1, "r");
	for (int r = 0; r < k->reds.n; r++) {
		k->reds.v[r].at = result_ix(k, &ri, k->reds.v[r].id, &kc, "row", 1);
		k->reds.v[r].lv = 1;
	}
	const char *jloop = fmt(k->a, "for (%s j = threadIdx.x; j < %lld; j += blockDim.x)", k->idx, (long long)ri.nred);
	for (int p = 1; p <= npass; p++) {
		kline(k, 1, NULL, "/* pass %d */", p);
		declare_reds(k, 1, p, passes);
		kopen(k);
		Ix rc = ix_from_lin(k, &ri.red, "j", 2, "j");
		const char *i = fresh(k, 2, "i");
		kline(k, 2, i, "const %s %s = row * %lld + j;", k->idx, i, (long long)ri.nred);
		Ix x = merge_ix(&ri, &kc, &rc, i, 2);
		accumulate(k, &x, p, passes);
		kclose(k, jloop);
		for (int r = 0; r < k->reds.n; r++) {
			Red *rd = &k->reds.v[r];
			if (passes[r] != p)
				continue;
			const FgNode *n = &k->g->nodes[rd->id];
			kline(k, 1, NULL, "%s = fg_block_reduce(%s, %s);", rd->acc, rd->acc, red_functor(n));
			rd->var = fresh(k, 1, fmt(k->a, "v_%s", k->plan->names[rd->id]));
			kline(k, 1, NULL, "const %s %s = %s;", ctype(n->dt), rd->var, red_final(k, n, rd->acc, ri.nred));
		}
	}
	/* once per row: values of the reduced shape */
	Ix rx = result_ix(k, &ri, first, &kc, "row", 1);
	store_reduced(k, &ri, first, dep, &rx, "threadIdx.x == 0");
	/* the epilogue: values of the row's elements */
	int any = 0;
	for (int w = 0; w < k->gr->nwrites; w++)
		any |= write_place(k, &ri, first, dep, k->gr->writes[w]) == 'S';
	if (any) {
		kline(k, 1, NULL, "/* epilogue */");
		kopen(k);
		Ix rc = ix_from_lin(k, &ri.red, "j", 2, "j");
		const char *i = fresh(k, 2, "i");
		kline(k, 2, i, "const %s %s = row * %lld + j;", k->idx, i, (long long)ri.nred);
		Ix x = merge_ix(&ri, &kc, &rc, i, 2);
		for (int w = 0; w < k->gr->nwrites; w++) {
			int id = k->gr->writes[w];
			if (write_place(k, &ri, first, dep, id) != 'S')
				continue;
			Ix y = ix_bcast(&x, &ri.S, shape_of(k, id));
			store(k, id, &y, write_cond(k, &x, &ri.S, shape_of(k, id)), NULL);
		}
		kclose(k, jloop);
	}
	kclose(k, fmt(k->a, "for (%s row = blockIdx.x; row < %lld; row += gridDim.x)", k->idx, (long long)ri.nkept));
	if (k->failed)
		return;
	int64_t grid = ri.nkept < INT32_MAX ? ri.nkept : INT32_MAX;
	emit_comment(E, k->gi, row_desc(E, &ri, "one block per row"));
	const char *args = emit_kernel(k, k->gr->name, block, NULL, 0, 1);
	add_launch(E, k->gr->name, k->gi, grid, block, args);
}

#define SPLIT_COLS 32           /* result elements a block of a split reduction covers */
#define SPLIT_ROWS 8            /* its threads per result element */
#define SPLIT_MIN 64            /* reduced elements a thread takes, at least */
#define SPLIT_BLOCKS 2048       /* blocks a split reduction aims for */

/* Other axes, many reduced elements: a block covers SPLIT_COLS elements of
 * the result with SPLIT_ROWS threads each (neighbouring threads read
 * neighbouring elements, coalesced), and the reduced elements split into
 * `nsplit` slabs, one per block, so that enough blocks run.  Each block
 * combines its threads in order; with several slabs a second kernel
 * combines the slabs' partials (scratch) in order and runs the epilogue.
 * Deterministic: the same partials every run. */
static void emit_reduce_split(Emit *E, Kern *k, const RedInfo *ri, int first, const unsigned char *dep)
{
	Red *rd = &k->reds.v[0];
	const FgNode *n = &k->g->nodes[rd->id];
	const char *acct = acc_type(k, n);
	int64_t nbx = (ri->nkept + SPLIT_COLS - 1) / SPLIT_COLS;
	int64_t nsplit = (SPLIT_BLOCKS + nbx - 1) / nbx;
	if (nsplit > ri->nred / SPLIT_MIN)
		nsplit = ri->nred / SPLIT_MIN;
	if (nsplit < 1)
		nsplit = 1;
	int64_t chunk = (ri->nred + nsplit - 1) / nsplit;
	nsplit = (ri->nred + chunk - 1) / chunk;
	const char *pname = nsplit > 1 ? fmt(k->a, "%s_partial", k->gr->name) : k->gr->name;
	Param part_out = {fmt(k->a, "%s *__restrict__ partial", acct), fmt(k->a, "(%s *)ctx->scratch", acct)};
	Param part_in = {fmt(k->a, "const %s *__restrict__ partial", acct), part_out.arg};
	if (nsplit > 1 && nsplit * ri->nkept * 8 > E->scratch)
		E->scratch = nsplit * ri->nkept * 8;

	kline(k, 0, NULL, "__shared__ %s part[%d][%d];", acct, SPLIT_ROWS, SPLIT_COLS + 1);
	kline(k, 0, NULL, "const int tx = threadIdx.x %% %d, ty = threadIdx.x / %d;", SPLIT_COLS, SPLIT_COLS);
	kline(k, 0, NULL, "const %s o = (%s)(blockIdx.x %% %lld) * %d + tx;", k->idx, k->idx, (long long)nbx, SPLIT_COLS);
	kline(k, 0, NULL, "const %s r0 = (%s)(blockIdx.x / %lld) * %lld;", k->idx, k->idx, (long long)nbx,
	      (long long)chunk);
	declare_reds(k, 0, 0, NULL);
	kopen(k);       /* 1: this thread's element of the result */
	Ix kc = ix_from_lin(k, &ri->kept, "o", 1, "o");
	kopen(k);       /* 2: its share of the slab */
	Ix rc = ix_from_lin(k, &ri->red, "r", 2, "r");
	Ix x = merge_ix(ri, &kc, &rc, NULL, 0);
	accumulate(k, &x, 0, NULL);
	store_space(k, ri, first, dep, &x, 1, NULL);
	kclose(k, fmt(k->a, "for (%s r = r0 + ty; r < %s; r += %d)", k->idx,
		      nsplit > 1 ? fmt(k->a, "min(r0 + %lld, (%s)%lld)", (long long)chunk, k->idx, (long long)ri->nred)
				 : fmt(k->a, "%lld", (long long)ri->nred), SPLIT_ROWS));
	kclose(k, fmt(k->a, "if (o < %lld)", (long long)ri->nkept));
	kline(k, 0, NULL, "part[ty][tx] = %s;", rd->acc);
	kline(k, 0, NULL, "__syncthreads();");
	kopen(k);       /* 1: the block's combination, in order */
	kline(k, 1, NULL, "%s = part[0][tx];", rd->acc);
	kline(k, 1, NULL, "for (int q = 1; q < %d; q++)", SPLIT_ROWS);
	kline(k, 1, NULL, "	%s", red_step(k, n, rd->acc, "part[q][tx]"));
	if (nsplit > 1) {
		kline(k, 1, NULL, "partial[(blockIdx.x / %lld) * %lld + o] = %s;", (long long)nbx, (long long)ri->nkept,
		      rd->acc);
	} else {
		Ix kc2 = ix_from_lin(k, &ri->kept, "o", 1, "o");
		rd->at = result_ix(k, ri, first, &kc2, "o", 1);
		rd->lv = 1;
		rd->var = fresh(k, 1, fmt(k->a, "v_%s", k->plan->names[rd->id]));
		kline(k, 1, NULL, "const %s %s = %s;", ctype(n->dt), rd->var, red_final(k, n, rd->acc, ri->nred));
		store_reduced(k, ri, first, dep, &rd->at, NULL);
	}
	kclose(k, fmt(k->a, "if (ty == 0 && o < %lld)", (long long)ri->nkept));
	if (k->failed)
		return;
	const char *how = fmt(E->a, "reduce %s over axes 0x%x to %lld elements; blocks of %d x %d threads",
			      shape_str(E->a, FG_DT_F32, &ri->S) + 3, (unsigned)ri->axes, (long long)ri->nkept,
			      SPLIT_COLS, SPLIT_ROWS);
	int any_s = 0;
	for (int w = 0; w < k->gr->nwrites; w++)
		any_s |= write_place(k, ri, first, dep, k->gr->writes[w]) == 'S';
	emit_comment(E, k->gi, nsplit > 1 ? fmt(E->a, "%s, the reduced axes in %lld slabs: partials into scratch", how,
					       (long long)nsplit) : how);
	const char *args = emit_kernel(k, pname, SPLIT_COLS * SPLIT_ROWS, nsplit > 1 ? &part_out : NULL,
				       nsplit > 1, nsplit > 1 ? any_s : 1);
	add_launch(E, pname, k->gi, nbx * nsplit, SPLIT_COLS * SPLIT_ROWS, args);
	if (nsplit == 1)
		return;

	/* the slabs' partials, in order, then the epilogue: a fresh kernel */
	Kern k2;
	kern_init(&k2, E, k->gi);
	collect_reds(&k2);
	Red *r2 = &k2.reds.v[0];
	kopen(&k2);
	Ix kc2 = ix_from_lin(&k2, &ri->kept, "o", 1, "o");
	r2->at = result_ix(&k2, ri, first, &kc2, "o", 1);
	r2->lv = 1;
	r2->acc = fresh(&k2, 1, fmt(k2.a, "acc_%s", k2.plan->names[r2->id]));
	kline(&k2, 1, NULL, "%s %s = partial[o];", acct, r2->acc);
	kline(&k2, 1, NULL, "for (int s = 1; s < %lld; s++)", (long long)nsplit);
	kline(&k2, 1, NULL, "	%s", red_step(&k2, n, r2->acc, fmt(k2.a, "partial[s * %lld + o]", (long long)ri->nkept)));
	r2->var = fresh(&k2, 1, fmt(k2.a, "v_%s", k2.plan->names[r2->id]));
	kline(&k2, 1, NULL, "const %s %s = %s;", ctype(n->dt), r2->var, red_final(&k2, n, r2->acc, ri->nred));
	store_reduced(&k2, ri, first, dep, &r2->at, NULL);
	kclose(&k2, stride_loop(&k2, "o", ri->nkept));
	k->failed |= k2.failed;
	if (k2.failed)
		return;
	fprintf(E->f, "/* %s, stage 2 of 2: a thread per element combines the %lld partials in order, then the "
		"epilogue */\n", k->gr->name, (long long)nsplit);
	const char *args2 = emit_kernel(&k2, k->gr->name, LOOP_BLOCK, &part_in, 1, 1);
	add_launch(E, k->gr->name, k->gi, grid_for(ri->nkept, LOOP_BLOCK), LOOP_BLOCK, args2);
}

/* Other axes: one thread per element of the result, looping over the
 * reduced elements in order (coalesced across threads for a column
 * reduction: neighbouring threads read neighbouring columns). */
static void emit_reduce_cols(Emit *E, Kern *k, const RedInfo *ri, int first, const unsigned char *dep)
{
	kopen(k);       /* 1: an element of the result */
	Ix kc = ix_from_lin(k, &ri->kept, "o", 1, "o");
	k->reds.v[0].at = result_ix(k, ri, first, &kc, "o", 1);
	k->reds.v[0].lv = 1;
	declare_reds(k, 1, 0, NULL);
	kopen(k);       /* 2: a reduced element */
	Ix rc = ix_from_lin(k, &ri->red, "r", 2, "r");
	Ix x = merge_ix(ri, &kc, &rc, NULL, 0);
	accumulate(k, &x, 0, NULL);
	for (int w = 0; w < k->gr->nwrites; w++) {
		int id = k->gr->writes[w];
		if (write_place(k, ri, first, dep, id) != 'S')
			continue;
		Ix y = ix_bcast(&x, &ri->S, shape_of(k, id));
		store(k, id, &y, write_cond(k, &x, &ri->S, shape_of(k, id)), NULL);
	}
	kclose(k, fmt(k->a, "for (%s r = 0; r < %lld; r++)", k->idx, (long long)ri->nred));
	Red *rd = &k->reds.v[0];
	const FgNode *n = &k->g->nodes[rd->id];
	rd->var = fresh(k, 1, fmt(k->a, "v_%s", k->plan->names[rd->id]));
	kline(k, 1, NULL, "const %s %s = %s;", ctype(n->dt), rd->var, red_final(k, n, rd->acc, ri->nred));
	store_reduced(k, ri, first, dep, &rd->at, NULL);
	kclose(k, stride_loop(k, "o", ri->nkept));
	if (k->failed)
		return;
	emit_comment(E, k->gi, fmt(E->a, "reduce %s over axes 0x%x to %lld elements; a thread per element",
				   shape_str(E->a, FG_DT_F32, &ri->S) + 3, (unsigned)ri->axes, (long long)ri->nkept));
	const char *args = emit_kernel(k, k->gr->name, LOOP_BLOCK, NULL, 0, 1);
	add_launch(E, k->gr->name, k->gi, grid_for(ri->nkept, LOOP_BLOCK), LOOP_BLOCK, args);
}

/* All axes, in two launches: FULL_BLOCKS blocks each reduce a strided
 * share into a partial in scratch, then one block reduces the partials in
 * order and runs the epilogue.  The same partials every run: the result
 * does not depend on timing. */
static void emit_reduce_all(Emit *E, Kern *k, const RedInfo *ri, int first, const unsigned char *dep)
{
	Red *rd = &k->reds.v[0];
	const FgNode *n = &k->g->nodes[rd->id];
	int64_t N = numel(&ri->S);
	int vd = innermost(&ri->S);
	int vw = vd < 0 ? 1 : lane_width(k, ri->S.d[vd], 1);
	int64_t nb = grid_for(N / vw, LOOP_BLOCK);
	const char *acct = acc_type(k, n);
	if (nb > FULL_BLOCKS)
		nb = FULL_BLOCKS;
	int64_t scratch = nb * 8;
	if (scratch > E->scratch)
		E->scratch = scratch;
	const char *pname = fmt(k->a, "%s_partial", k->gr->name);
	Param part_out = {fmt(k->a, "%s *__restrict__ partial", acct), fmt(k->a, "(%s *)ctx->scratch", acct)};
	Param part_in = {fmt(k->a, "const %s *__restrict__ partial", acct), part_out.arg};

	/* stage 1: vw lanes a thread */
	declare_reds(k, 0, 0, NULL);
	kopen(k);
	const char *base = "i";
	if (vw > 1) {
		base = fresh(k, 1, "b");
		kline(k, 1, base, "const %s %s = i * %d;", k->idx, base, vw);
	}
	Ix x = ix_from_lin(k, &ri->S, base, 1, "i");
	Ix xs[MAX_LANES];
	for (int l = 0; l < vw; l++) {
		xs[l] = vw > 1 ? lane_of(k, &x, vd, vw, l) : x;
		accumulate(k, &xs[l], 0, NULL);
	}
	store_space(k, ri, first, dep, xs, vw, NULL);
	kclose(k, stride_loop(k, "i", N / vw));
	kline(k, 0, NULL, "%s = fg_block_reduce(%s, %s);", rd->acc, rd->acc, red_functor(n));
	kline(k, 0, NULL, "if (threadIdx.x == 0)");
	kline(k, 0, NULL, "\tpartial[blockIdx.x] = %s;", rd->acc);
	if (k->failed)
		return;
	emit_comment(E, k->gi, fmt(E->a, "reduce all of %s, stage 1 of 2: %lld partials into scratch",
				   shape_str(E->a, FG_DT_F32, &ri->S) + 3, (long long)nb));
	int any_s = 0;
	for (int w = 0; w < k->gr->nwrites; w++)
		any_s |= write_place(k, ri, first, dep, k->gr->writes[w]) == 'S';
	const char *args = emit_kernel(k, pname, LOOP_BLOCK, &part_out, 1, any_s);
	add_launch(E, pname, k->gi, nb, LOOP_BLOCK, args);

	/* stage 2: a fresh kernel */
	Kern k2;
	kern_init(&k2, E, k->gi);
	collect_reds(&k2);
	Red *r2 = &k2.reds.v[0];
	memset(&r2->at, 0, sizeof r2->at);
	r2->at.rank = n->shape.rank;
	for (int i = 0; i < r2->at.rank; i++)
		r2->at.c[i] = "0";
	r2->at.lin = "0";
	r2->lv = 0;
	declare_reds(&k2, 0, 0, NULL);
	kline(&k2, 0, NULL, "for (int b = threadIdx.x; b < %lld; b += blockDim.x)", (long long)nb);
	kline(&k2, 0, NULL, "\t%s", red_step(&k2, n, r2->acc, "partial[b]"));
	kline(&k2, 0, NULL, "%s = fg_block_reduce(%s, %s);", r2->acc, r2->acc, red_functor(n));
	r2->var = fresh(&k2, 0, fmt(k2.a, "v_%s", k2.plan->names[r2->id]));
	kline(&k2, 0, NULL, "const %s %s = %s;", ctype(n->dt), r2->var, red_final(&k2, n, r2->acc, N));
	store_reduced(&k2, ri, first, dep, &r2->at, "threadIdx.x == 0");
	k->failed |= k2.failed;
	if (k2.failed)
		return;
	fprintf(E->f, "/* %s, stage 2 of 2: one block reduces the partials in order, then the epilogue */\n",
		k->gr->name);
	const char *args2 = emit_kernel(&k2, k->gr->name, LOOP_BLOCK, &part_in, 1, 1);
	add_launch(E, k->gr->name, k->gi, 1, LOOP_BLOCK, args2);
}

static void emit_reduce(Emit *E, Kern *k)
{
	RedInfo ri;
	int first = group_reductions(k, &ri, "a reduction group");
	if (first < 0)
		return;
	if (k->reds.n != 1) {
		kern_error(k, first, "%d reductions in one reduce group", k->reds.n);
		return;
	}
	unsigned char *dep = after_reduction(k);
	if (ri.nkept == 1)
		emit_reduce_all(E, k, &ri, first, dep);
	else if (ri.nred >= SPLIT_MIN)
		emit_reduce_split(E, k, &ri, first, dep);
	else
		emit_reduce_cols(E, k, &ri, first, dep);
}

/* -------------------------------------------------------------- gemm */

/* The stored operand behind matmul operand `id`: transposes of the last
 * two axes inside the group are read as a layout flag. */
static int gemm_operand(Kern *k, int id, int *trans)
{
	*trans = 0;
	while (is_member(k, id) && k->g->nodes[id].op == FG_OP_TRANSPOSE) {
		const FgNode *n = &k->g->nodes[id];
		int r = n->shape.rank;
		for (int i = 0; i < r - 2; i++)
			if (n->a.perm[i] != i)
				kern_error(k, id, "a transpose of batch axes as a matmul operand");
		if (n->a.perm[r - 2] != r - 1)
			kern_error(k, id, "a transpose that keeps the last two axes as a matmul operand");
		*trans ^= 1;
		id = n->in[0];
	}
	if (is_member(k, id))
		kern_error(k, id, "matmul operand '%s' is computed inside the gemm group", k->plan->names[id]);
	return id;
}

/* Batch strides of an operand of shape s (matrices of mat elements)
 * against the output's batch dims bn[0..nb). */
static void batch_strides(const FgShape *s, int nb, const int64_t *bn, int64_t mat, int64_t *st)
{
	int sb = s->rank - 2;
	int64_t acc = mat;
	for (int i = nb - 1; i >= 0; i--) {
		int j = i - (nb - sb);
		if (j < 0 || s->d[j] == 1) {
			st[i] = 0;
			if (j >= 0)
				acc *= s->d[j];
			continue;
		}
		FG_ASSERT(s->d[j] == bn[i]);
		st[i] = acc;
		acc *= s->d[j];
	}
}

/* An i32 matmul, which cuBLASLt does not take: one thread per output
 * element sums its products in 64 bits, saturates into i32 scratch, and
 * the epilogue kernel reads it from there. */
static void emit_matmul_i32(Emit *E, Kern *k, int mm, int A, int ta, int B, int tb, const int64_t *sa,
			    const int64_t *sb)
{
	const FgNode *n = &k->g->nodes[mm];
	const FgShape *os = &n->shape;
	const FgShape *as = shape_of(k, n->in[0]), *bs = shape_of(k, n->in[1]);
	int nb = os->rank - 2;
	int64_t M = as->d[as->rank - 2], K = as->d[as->rank - 1], N = bs->d[bs->rank - 1];
	int64_t scratch = numel(os) * 4;
	const char *name = fmt(k->a, "%s_matmul", k->gr->name);
	Kern m;
	kern_init(&m, E, k->gi);
	kopen(&m);
	Ix o = ix_from_lin(&m, os, "o", 1, "o");
	const char *ea = "", *eb = "";
	for (int i = 0; i < nb; i++) {
		if (sa[i])
			ea = fmt(k->a, "%s%s * %lld + ", ea, paren(k->a, o.c[i]), (long long)sa[i]);
		if (sb[i])
			eb = fmt(k->a, "%s%s * %lld + ", eb, paren(k->a, o.c[i]), (long long)sb[i]);
	}
	const char *row = paren(k->a, o.c[nb]), *col = paren(k->a, o.c[nb + 1]);
	kline(&m, 1, NULL, "const %s a0 = %s%s * %lld;", m.idx, ea, row, (long long)(ta ? 1 : K));
	kline(&m, 1, NULL, "const %s b0 = %s%s * %lld;", m.idx, eb, col, (long long)(tb ? K : 1));
	kline(&m, 1, NULL, "long long acc = 0;");
	kline(&m, 1, NULL, "for (%s kk = 0; kk < %lld; kk++)", m.idx, (long long)K);
	kline(&m, 1, NULL, "\tacc += (long long)t_%s[a0 + kk * %lld] * t_%s[b0 + kk * %lld];", k->plan->names[A],
	      (long long)(ta ? M : 1), k->plan->names[B], (long long)(tb ? 1 : N));
	kline(&m, 1, NULL, "mm[o] = fg_cast_i32(acc);");
	kclose(&m, stride_loop(&m, "o", numel(os)));
	Param ps[3] = {
		{"int *__restrict__ mm", "(int *)ctx->scratch"},
		{fmt(k->a, "const int *__restrict__ t_%s", k->plan->names[A]), fmt(k->a, "t_%s", k->plan->names[A])},
		{fmt(k->a, "const int *__restrict__ t_%s", k->plan->names[B]), fmt(k->a, "t_%s", k->plan->names[B])},
	};
	if (scratch > E->scratch)
		E->scratch = scratch;
	emit_comment(E, k->gi, fmt(E->a, "gemm: %s = matmul(%s%s, %s%s) in i32, a thread per element into scratch "
				   "(%s), then the epilogue (%s)", k->plan->names[mm], k->plan->names[A], ta ? "^T" : "",
				   k->plan->names[B], tb ? "^T" : "", name, k->gr->name));
	if (m.failed) {
		k->failed = 1;
		return;
	}
	/* matmul(x, transpose(x)) reads one tensor twice: one parameter */
	const char *args = emit_kernel(&m, name, LOOP_BLOCK, ps, A == B ? 2 : 3, 0);
	add_launch(E, name, k->gi, grid_for(numel(os), LOOP_BLOCK), LOOP_BLOCK, args);
	k->mm = mm;
	Param acc = {fmt(k->a, "const int *__restrict__ mm_%s", k->plan->names[mm]), "(const int *)ctx->scratch"};
	emit_loop(E, k, sink(k), &acc, 1, NULL);
}

/* Whether member id of a gemm group is a transpose that the matmul mm
 * reads as an operand layout. */
static int operand_side(const Kern *k, const FgNode *mm, int id)
{
	for (int j = 0; j < 2; j++)
		for (int t = mm->in[j]; is_member(k, t) && k->g->nodes[t].op == FG_OP_TRANSPOSE; t = k->g->nodes[t].in[0])
			if (t == id)
				return 1;
	return 0;
}

/* Whether node b, outside the group, is a bias of mm's result (dtype dt,
 * shape s): one value per column, in D's type. */
static int column_bias(const Kern *k, int b, FgDtype dt, const FgShape *s)
{
	const FgNode *n = &k->g->nodes[b];
	return !is_member(k, b) && n->op != FG_OP_CONST && n->dt == dt && n->shape.rank >= 1 &&
	       n->shape.d[n->shape.rank - 1] == s->d[s->rank - 1] && numel(&n->shape) == s->d[s->rank - 1];
}

/* cuBLASLt's own epilogue for the gemm group of matmul mm, when it is
 * exactly what the group computes after mm: a bias per column, then relu
 * or gelu_tanh, or either alone, each rounded once into the one value the
 * group writes (*y); a written GELU input (the sum with the bias, or mm)
 * is the AUX output (*aux).  Returns the FGRT_EP_ constant, or NULL (the
 * group then takes the matmul and one epilogue kernel). */
static const char *lt_epilogue(const Kern *k, int mm, int *y, int *bias, int *aux)
{
	const FgNode *m = &k->g->nodes[mm];
	int chain[2], nc = 0;
	*y = *bias = *aux = -1;
	if (m->dt == FG_DT_I32)
		return NULL;
	for (int i = 0; i < k->gr->nnodes; i++) {
		int id = k->gr->nodes[i];
		const FgNode *n = &k->g->nodes[id];
		if (!is_member(k, id) || id == mm || n->op == FG_OP_CONST || operand_side(k, m, id))
			continue;
		if (nc == 2 || n->dt != m->dt || !fg_shape_eq(&n->shape, &m->shape))
			return NULL;
		chain[nc++] = id;
	}
	int at = 0, pre = mm;         /* pre: what the activation reads */
	if (at < nc && k->g->nodes[chain[at]].op == FG_OP_ADD) {
		const FgNode *a = &k->g->nodes[chain[at]];
		int other = a->in[0] == mm ? a->in[1] : a->in[1] == mm ? a->in[0] : -1;
		if (other < 0 || !column_bias(k, other, m->dt, &m->shape))
			return NULL;
		*bias = other;
		pre = chain[at++];
	}
	int act = -1;
	if (at < nc) {
		const FgNode *a = &k->g->nodes[chain[at]];
		if ((a->op != FG_OP_RELU && a->op != FG_OP_GELU_TANH) || a->in[0] != pre)
			return NULL;
		act = chain[at++];
	}
	if (at != nc || nc == 0)
		return NULL;
	*y = chain[nc - 1];
	int writes_pre = 0;
	for (int w = 0; w < k->gr->nwrites; w++) {
		int id = k->gr->writes[w];
		if (id == pre && act >= 0)
			writes_pre = 1;
		else if (id != *y)
			return NULL;
	}
	if (writes_pre) {       /* GELU's input as AUX: rows of a multiple of 8 */
		if (k->g->nodes[act].op != FG_OP_GELU_TANH || m->shape.d[m->shape.rank - 1] % 8 != 0)
			return NULL;
		*aux = pre;
		return *bias >= 0 ? "FGRT_EP_GELU_AUX_BIAS" : "FGRT_EP_GELU_AUX";
	}
	if (act < 0)
		return "FGRT_EP_BIAS";
	if (k->g->nodes[act].op == FG_OP_RELU)
		return *bias >= 0 ? "FGRT_EP_RELU_BIAS" : "FGRT_EP_RELU";
	return *bias >= 0 ? "FGRT_EP_GELU_BIAS" : "FGRT_EP_GELU";
}

/* How a gemm group runs: its matmul and operands, the merged batch, and
 * who multiplies (plan_gemm). */
typedef struct GemmPlan {
	int mm, A, B, ta, tb;
	int64_t M, N, K;
	int nd;                         /* merged batch dims, innermost first */
	int64_t cnt[FG_MAX_RANK], ms[3][FG_MAX_RANK];
	int64_t st[3][FG_MAX_RANK];     /* per batch dim: A's, B's and D's strides */
	int direct;                     /* the matmul alone, written as it is */
	const char *ep;                 /* cuBLASLt's own epilogue, or NULL */
	int y, bias, aux;               /* its value, bias and AUX output */
	const char *refusal;            /* why not the generated kernel, or NULL */
	double est_own, est_lt;         /* own_gemm_pays' estimates, s */
	int own;                        /* the generated kernel runs it */
} GemmPlan;

/* The generated matmul (runtime/fg_gemm_sm90.cuh): which schedule and
 * tile.  A consumer warpgroup computes wm x bn of D; cooperative (pp 0)
 * blocks are two of those side by side in rows, ping-pong blocks one, the
 * two consumers taking turns tile by tile. */
typedef struct GemmTile {
	int wm, bn, pp;
} GemmTile;

/* The tile for an M x N result, Z of them, by what was measured on the
 * H200 (tests/runtime/gemm_sm90.cu --bench, medians of interleaved rounds,
 * docs/performance.md).  With an epilogue that computes or reads (heavy),
 * ping-pong 128 x 128: the tensor cores run one consumer's wgmma while
 * the other's epilogue runs, and it beat cooperative 2 x 64 x 256 with
 * such an epilogue on every large shape under sustained load (by 3-12%,
 * e.g. 8192 x 14336 x 4096: 1.630 ms against 1.831).  A store alone:
 * cooperative, whose larger tile reads less from L2 (8192^3: 1.683 ms
 * against 1.765), while it has 4 tiles per multiprocessor (132).  Below
 * 132 tiles, the smaller ping-pong tiles keep more of them busy. */
static GemmTile gemm_tile(int64_t M, int64_t N, int64_t Z, int heavy)
{
	static const GemmTile t[] = {{64, 256, 0}, {128, 128, 1}, {64, 128, 1}, {64, 64, 1}};
	static const int64_t least[] = {4 * 132, 132, 132};
	for (int i = heavy; i < 3; i++) {
		int64_t rows = t[i].pp ? t[i].wm : 2 * t[i].wm;
		if (((M + rows - 1) / rows) * ((N + t[i].bn - 1) / t[i].bn) * Z >= least[i] && N > t[i].bn / 2)
			return t[i];
	}
	return t[3];
}

/* The rule (own_gemm_pays) that picks the generated matmul over cuBLASLt
 * for a gemm group whose epilogue cuBLASLt cannot fuse (fgc compile --gemm
 * auto), a cost comparison calibrated on the H200 (docs/performance.md),
 * made in plan_gemm from gemm_estimates().  cuBLASLt
 * writes D in f32 to scratch, and an epilogue kernel reads it back beside
 * the group's other reads and writes, one launch more: flops / LT_TFLOPS
 * + (8 bytes an element of D + the other bytes) / bandwidth + a launch.
 * The generated kernel ran the matmul alone at 87-103% of cuBLASLt's rate
 * (OWN_SHARE between), but its epilogue's traffic shows through at about
 * OWN_EPI_GBS: on the samples, swiglu_bf16's up projection (470 MB read
 * and written by the epilogue) took 0.23 ms more than cuBLASLt and its
 * pass, gemm_bias_gelu_bf16 (134 MB) tied.  So flops / (OWN_SHARE
 * LT_TFLOPS) + the other bytes / OWN_EPI_GBS; the smaller wins: the
 * generated kernel for an epilogue that moves about 2 bytes an element
 * of D with K below ~4000, cuBLASLt for the rest. */
#define LT_TFLOPS 792.0
#define OWN_SHARE 0.97
#define OWN_EPI_GBS 1000.0
/* tf32 (--tf32): the tensor cores' tf32 rate is half their 16-bit one (the
 * H200's datasheet); not measured here yet */
#define TF32_SHARE 0.5

/* Whether an epilogue op of gemm p (a member other than the matmul and its
 * operand transposes) reads node id: an operand read again, a residual. */
static int epilogue_reads(const Kern *k, const GemmPlan *p, int id)
{
	const FgNode *mm = &k->g->nodes[p->mm];
	for (int i = 0; i < k->gr->nnodes; i++) {
		int m = k->gr->nodes[i];
		const FgNode *n = &k->g->nodes[m];
		if (m == p->mm || !is_member(k, m) || operand_side(k, mm, m))
			continue;
		for (int j = 0; j < n->nin; j++)
			if (n->in[j] == id)
				return 1;
	}
	return 0;
}

/* own_gemm_pays' two estimates for p, in seconds: the generated kernel
 * (p->est_own) and cuBLASLt with the epilogue kernel after it (p->est_lt). */
static void gemm_estimates(const Kern *k, GemmPlan *p)
{
	const FgNode *n = &k->g->nodes[p->mm];
	double flops = 2.0 * (double)numel(&n->shape) * (double)p->K, other = 0;
	for (int r = 0; r < k->gr->nreads + k->gr->nwrites; r++) {
		int id = r < k->gr->nreads ? k->gr->reads[r] : k->gr->writes[r - k->gr->nreads];
		if ((id != p->A && id != p->B) || epilogue_reads(k, p, id))
			other += (double)numel(shape_of(k, id)) * fg_dtype_size[k->g->nodes[id].dt];
	}
	const FgFuseOptions *o = &k->plan->opt;
	const double rate = LT_TFLOPS * 1e12 * (n->dt == FG_DT_F32 ? TF32_SHARE : 1);
	p->est_own = flops / (OWN_SHARE * rate) + other / (OWN_EPI_GBS * 1e9);
	p->est_lt = flops / rate + (8.0 * (double)numel(&n->shape) + other) / (o->bw_gbs * 1e9) + o->launch_us * 1e-6;
}

/* Why the generated matmul cannot run gemm p of group k, or NULL when it
 * can. */
static const char *own_gemm_refusal(const Kern *k, const GemmPlan *p)
{
	const int mm = p->mm;
	const FgNode *n = &k->g->nodes[mm];
	const FgShape *as = shape_of(k, p->A), *bs = shape_of(k, p->B), *os = &n->shape;
	const int tf32 = n->dt == FG_DT_F32 && k->plan->opt.tf32;
	if ((n->dt != FG_DT_F16 && n->dt != FG_DT_BF16 && !tf32) || k->g->nodes[p->A].dt != n->dt ||
	    k->g->nodes[p->B].dt != n->dt)
		return k->plan->opt.tf32 ? "operands other than f16, bf16 or f32" : "operands other than f16 or bf16 (f32 "
		       "with --tf32)";
	if (tf32 && (p->ta || !p->tb))
		return "tf32 operands not both K-major (wgmma transposes 16-bit ones only: A [M,K] and B [N,K])";
	if (p->nd > 1)
		return "batch dims that no single stride describes";
	if (p->M >= INT32_MAX || p->N >= INT32_MAX || p->K >= INT32_MAX || numel(os) / (p->M * p->N) >= INT32_MAX)
		return "a dimension of 2^31 or more";
	/* the tensor-memory accelerator: pitches and strides of 16 bytes (the
	 * stored rows: K of A, or M when A is stored transposed; N or K of B) */
	const int64_t v = 16 / fg_dtype_size[n->dt];
	if (as->d[as->rank - 1] % v || bs->d[bs->rank - 1] % v || (p->nd && (p->ms[0][0] % v || p->ms[1][0] % v)))
		return "an operand row or batch stride not a multiple of 16 bytes";
	/* the accumulator is this thread's element: whatever reads it must be
	 * elementwise on D's index, and every write has D's shape */
	unsigned char *dep = fg_arena_alloc(k->a, (size_t)k->g->nnodes);
	memset(dep, 0, (size_t)k->g->nnodes);
	dep[mm] = 1;
	for (int i = 0; i < k->gr->nnodes; i++) {
		int id = k->gr->nodes[i];
		const FgNode *m = &k->g->nodes[id];
		if (id == mm || !is_member(k, id))
			continue;
		for (int j = 0; j < m->nin; j++)
			dep[id] |= dep[m->in[j]];
		if (dep[id] && (fg_op_info[m->op].cls != FG_CLASS_EW || !fg_shape_eq(&m->shape, os)))
			return "an epilogue that moves the result's elements (a layout op or a broadcast)";
	}
	for (int w = 0; w < k->gr->nwrites; w++)
		if (!fg_shape_eq(shape_of(k, k->gr->writes[w]), os))
			return "a write of another shape than the result";
	return NULL;
}

/* The tile gemm p runs on: ping-pong for an epilogue (heavy), by size. */
static GemmTile plan_tile(const GemmPlan *p)
{
	return gemm_tile(p->M, p->N, p->nd ? p->cnt[0] : 1, !p->direct);
}

/* Group k's gemm p on the generated kernel: the epilogue is a functor
 * (NAME_epilogue) that the kernel calls for the pairs of elements a
 * thread holds, D[z][r][c] and D[z][r][c + 1] in v0 and v1; it computes
 * and stores every write of the group there, its loads read-only. */
static void emit_own_gemm(Emit *E, Kern *k, const GemmPlan *p, const char *why)
{
	const int mm = p->mm, A = p->A, B = p->B, ta = p->ta, tb = p->tb;
	const FgNode *n = &k->g->nodes[mm];
	const FgShape *os = &n->shape;
	const int R = os->rank, nb = R - 2;
	const int64_t M = p->M, N = p->N, K = p->K, Z = p->nd ? p->cnt[0] : 1;
	const int64_t sa = p->nd ? p->ms[0][0] : 0, sb = p->nd ? p->ms[1][0] : 0;
	const GemmTile t = plan_tile(p);
	const char *name = fmt(k->a, "%s_epilogue", k->gr->name);
	k->mm = mm;
	k->nc = 1;
	Ix x;
	memset(&x, 0, sizeof x);
	x.rank = R;
	for (int i = 0; i < R; i++)
		x.c[i] = "0";
	kline(k, 0, "z", "const %s z = z_;", k->idx);
	kline(k, 0, "r", "const %s r = r_;", k->idx);
	kline(k, 0, "c", "const %s c = c_;", k->idx);
	if (numel(os) > M * N) {
		FgShape bs = *os;
		bs.rank = nb;
		Ix bx = ix_from_lin(k, &bs, "z", 0, "z");
		for (int i = 0; i < nb; i++)
			x.c[i] = bx.c[i], x.lv[i] = bx.lv[i];
	}
	if (M > 1)
		x.c[R - 2] = "r";
	if (N > 1)
		x.c[R - 1] = "c";
	if (N % 2 == 0) {       /* both lanes inside D: one vector access where it can */
		k->acc[0] = "v0", k->acc[1] = "v1";
		for (int w = 0; w < k->gr->nwrites; w++) {
			Ix ys[2];
			const char *conds[2] = {NULL, NULL};
			for (int l = 0; l < 2; l++)
				ys[l] = lane_of(k, &x, R - 1, 2, l);
			store_lanes(k, k->gr->writes[w], ys, conds, NULL);
		}
	} else {                /* lane 1 is past D's last column in the last pair */
		k->acc[0] = "v0";
		for (int w = 0; w < k->gr->nwrites; w++)
			store(k, k->gr->writes[w], &x, NULL, NULL);
		kopen(k);
		k->acc[0] = "v1";
		Ix x1 = x;
		x1.c[R - 1] = "c + 1";
		x1.lv[R - 1] = 1;
		for (int w = 0; w < k->gr->nwrites; w++)
			store(k, k->gr->writes[w], &x1, NULL, NULL);
		kclose(k, fmt(k->a, "if (c + 1 < %lld)", (long long)N));
	}
	if (k->failed)
		return;
	const char *sched = t.pp ? fmt(k->a, "ping-pong %d x %d tiles", t.wm, t.bn) :
				   fmt(k->a, "cooperative 2 x %d x %d tiles", t.wm, t.bn);
	emit_comment(E, k->gi, fmt(E->a, "gemm on the generated sm_90a matmul (%s, %s%s%s), the epilogue in "
				   "registers (%s, below) before the one store; %s", sched, ta ? "A^T" : "A",
				   tb ? " B^T" : " B", Z > 1 ? ", batched" : "", name, why));
	/* the functor: the group's reads and writes, then the body */
	FILE *f = E->f;
	const char *args = "";
	fprintf(f, "struct %s {\n", name);
	for (int r = 0; r < k->gr->nreads + k->gr->nwrites; r++) {
		int id = r < k->gr->nreads ? k->gr->reads[r] : k->gr->writes[r - k->gr->nreads];
		if (r < k->gr->nreads && !k->used[r])  /* the operands, unless the epilogue reads them too */
			continue;
		fprintf(f, "\t%s%s *%s;\n", r < k->gr->nreads ? "const " : "", stype(k->g->nodes[id].dt),
			tensor_param(k, id));
		args = fmt(k->a, "%s%s%s", args, *args ? ", " : "", tensor_param(k, id));
	}
	drop_unused(k, &k->lines[0]);
	fprintf(f, "\t__device__ __forceinline__ void operator()(int z_, int r_, int c_, float v0, float v1) const\n\t{\n");
	fprintf(f, "\t\t(void)v0, (void)v1;\n");
	for (int i = 0; i < k->lines[0].n; i++)
		fprintf(f, "\t\t%s\n", k->lines[0].v[i].text);
	fprintf(f, "\t}\n};\n\n");
	const char *tname = n->dt == FG_DT_F32 ? "float" : n->dt == FG_DT_F16 ? "__half" : "__nv_bfloat16";
	int64_t rows = t.pp ? t.wm : 2 * t.wm;
	int64_t tiles = ((M + rows - 1) / rows) * ((N + t.bn - 1) / t.bn) * Z;
	add_call(E, k->gr->name, k->gi, tiles, 384,
		 fmt(E->a, "fgg::launch<%s, %d, %d, %d, %d, %d>(ctx, t_%s, t_%s, %lld, %lld, %lld, %lld, %lld, %lld, "
		     "%s{%s});", tname, t.wm, t.bn, t.pp, ta, !tb, k->plan->names[A], k->plan->names[B], (long long)M,
		     (long long)N, (long long)K, (long long)Z, (long long)sa, (long long)sb, name, args));
}

/* t seconds in microseconds, to 3 or 4 digits. */
static const char *us_str(FgArena *a, double t)
{
	double us = t * 1e6;
	return fmt(a, us >= 100 ? "%.0f us" : us >= 10 ? "%.1f us" : "%.2f us", us);
}

/* Fills p for gemm group k; 0 (k->failed) when it cannot run. */
static int plan_gemm(Emit *E, Kern *k, GemmPlan *p)
{
	memset(p, 0, sizeof *p);
	p->mm = p->y = p->bias = p->aux = -1;
	for (int i = 0; i < k->gr->nnodes; i++)
		if (k->g->nodes[k->gr->nodes[i]].op == FG_OP_MATMUL && is_member(k, k->gr->nodes[i]))
			p->mm = p->mm < 0 ? k->gr->nodes[i] : -2;
	if (p->mm < 0) {
		kern_error(k, -1, "a gemm group needs exactly one matmul");
		return 0;
	}
	const int mm = p->mm;
	const FgNode *n = &k->g->nodes[mm];
	p->A = gemm_operand(k, n->in[0], &p->ta);
	p->B = gemm_operand(k, n->in[1], &p->tb);
	if (k->failed)
		return 0;
	const FgShape *as = shape_of(k, n->in[0]), *bs = shape_of(k, n->in[1]), *os = &n->shape;
	int nb = os->rank - 2;
	p->M = as->d[as->rank - 2], p->K = as->d[as->rank - 1], p->N = bs->d[bs->rank - 1];
	batch_strides(as, nb, os->d, p->M * p->K, p->st[0]);
	batch_strides(bs, nb, os->d, p->K * p->N, p->st[1]);
	batch_strides(os, nb, os->d, p->M * p->N, p->st[2]);
	/* merge batch dims, innermost first, where every stride allows */
	for (int i = nb - 1; i >= 0; i--) {
		if (os->d[i] == 1)
			continue;
		if (p->nd > 0) {
			int ok = 1;
			for (int t = 0; t < 3; t++)
				ok &= p->st[t][i] == p->ms[t][p->nd - 1] * p->cnt[p->nd - 1];
			if (ok) {
				p->cnt[p->nd - 1] *= os->d[i];
				continue;
			}
		}
		p->cnt[p->nd] = os->d[i];
		for (int t = 0; t < 3; t++)
			p->ms[t][p->nd] = p->st[t][i];
		p->nd++;
	}
	/* ms[.][0] is the innermost: cuBLASLt's strided batch */
	p->direct = 1;
	for (int i = 0; i < k->gr->nnodes; i++) {
		int id = k->gr->nodes[i];
		const FgNode *m = &k->g->nodes[id];
		if (id != mm && m->op != FG_OP_CONST && is_member(k, id) && !operand_side(k, n, id))
			p->direct = 0;
	}
	p->direct &= E->plan->home[mm] == k->gi;
	p->ep = p->direct ? NULL : lt_epilogue(k, mm, &p->y, &p->bias, &p->aux);
	if (p->ep && (E->plan->home[p->y] != k->gi || (p->aux >= 0 && E->plan->home[p->aux] != k->gi)))
		p->ep = NULL;
	if (n->dt == FG_DT_I32)
		return 1;
	/* --gemm auto: cuBLASLt for a plain matmul and for an epilogue on its
	 * menu; for any other epilogue whichever estimate is smaller; and
	 * cuBLASLt for tf32: the generated kernel's tf32 path passes its tests
	 * on the H200, but its speed against cuBLASLt's has not been measured,
	 * so no rule weighs them (--gemm fgc takes it) */
	p->refusal = own_gemm_refusal(k, p);
	if (!p->refusal && n->dt == FG_DT_F32 && E->gemm != FG_GEMM_FGC)
		p->refusal = "tf32, kept on cuBLASLt by --gemm auto: the generated kernel's tf32 speed is not measured "
			     "(--gemm fgc takes it)";
	gemm_estimates(k, p);
	int pays = !p->refusal && !p->direct && !p->ep && p->est_own < p->est_lt;
	p->own = !p->refusal && (E->gemm == FG_GEMM_FGC || (E->gemm == FG_GEMM_AUTO && pays));
	return 1;
}

static void emit_gemm(Emit *E, Kern *k)
{
	GemmPlan p;
	if (!plan_gemm(E, k, &p))
		return;
	const int mm = p.mm, A = p.A, B = p.B, ta = p.ta, tb = p.tb, nd = p.nd, direct = p.direct;
	const int64_t M = p.M, N = p.N, K = p.K, *cnt = p.cnt;
	const FgNode *n = &k->g->nodes[mm];
	const FgShape *os = &n->shape;
	const char *ep = p.ep;
	const int y = p.y, bias = p.bias, aux = p.aux;
	int64_t(*ms)[FG_MAX_RANK] = p.ms;
	if (n->dt == FG_DT_I32) {
		emit_matmul_i32(E, k, mm, A, ta, B, tb, p.st[0], p.st[1]);
		return;
	}
	if (p.own) {
		emit_own_gemm(E, k, &p, E->gemm == FG_GEMM_FGC ? "--gemm fgc" :
			      fmt(k->a, "an epilogue off cuBLASLt's menu, estimated %s here against %s for cuBLASLt "
				  "and an epilogue kernel (own_gemm_pays)", us_str(k->a, p.est_own), us_str(k->a, p.est_lt)));
		return;
	}
	int slot = E->gemms.n;
	const char *outer_n = "", *outer_a = "", *outer_b = "", *outer_d = "", *outer_0 = "";
	for (int i = nd - 1; i >= 1; i--) {
		const char *sep = i == nd - 1 ? "" : ", ";
		outer_n = fmt(k->a, "%s%s%lld", outer_n, sep, (long long)cnt[i]);
		outer_a = fmt(k->a, "%s%s%lld", outer_a, sep, (long long)ms[0][i]);
		outer_b = fmt(k->a, "%s%s%lld", outer_b, sep, (long long)ms[1][i]);
		outer_d = fmt(k->a, "%s%s%lld", outer_d, sep, (long long)ms[2][i]);
		outer_0 = fmt(k->a, "%s%s0", outer_0, sep);
	}
	/* an epilogue's bias is one row for every matrix; aux is laid out as D */
	const char *epf = !ep ? "" : fmt(k->a, "\t%s, 0, %lld, %lld, {%s}, {%s},\t/* epilogue: bias and aux strides */\n",
					 ep, (long long)(aux >= 0 ? N : 0), (long long)(aux >= 0 && nd ? ms[2][0] : 0),
					 outer_0, aux >= 0 ? outer_d : outer_0);
	const char *def = fmt(k->a,
		"/* %s: %s = matmul(%s%s, %s%s) */\n"
		"static const FgrtGemm fg_gemm_%d = {\n"
		"\t%s, %s,\t/* operands, result */\n"
		"\t%lld, %lld, %lld,\t/* m, n, k */\n"
		"\t%d, %d,\t/* A, B stored transposed */\n"
		"\t%lld, %lld, %lld, %lld,\t/* batch and its strides */\n"
		"\t%d, {%s}, {%s}, {%s}, {%s},\t/* outer batch dims */\n"
		"%s"
		"};\n",
		k->gr->name, k->plan->names[mm], k->plan->names[A], ta ? "^T" : "", k->plan->names[B], tb ? "^T" : "",
		slot, k->g->nodes[A].dt == FG_DT_F32 && E->plan->opt.tf32 ? "FGRT_TF32" : rt_dtype(k->g->nodes[A].dt),
		direct || ep ? rt_dtype(n->dt) : "FGRT_F32",
		(long long)M, (long long)N, (long long)K, ta, tb,
		(long long)(nd ? cnt[0] : 1), (long long)(nd ? ms[0][0] : 0), (long long)(nd ? ms[1][0] : 0),
		(long long)(nd ? ms[2][0] : 0), nd > 1 ? nd - 1 : 0, outer_n, outer_a, outer_b, outer_d, epf);
	fg_vec_push(E->a, &E->gemms, def);
	/* the operands' own tensors */
	const char *pa = fmt(k->a, "t_%s", k->plan->names[A]), *pb = fmt(k->a, "t_%s", k->plan->names[B]);
	if (direct) {
		fg_vec_push(E->a, &E->run, fmt(E->a, "fgrt_gemm(ctx, %d, &fg_gemm_%d, %s, %s, t_%s);", slot, slot, pa, pb,
					      k->plan->names[mm]));
		add_launch(E, "cublasLt", k->gi, 0, 0, NULL);
		emit_comment(E, k->gi, fmt(E->a, "gemm on cuBLASLt (fg_gemm_%d), straight into %s; no epilogue kernel",
					   slot, k->plan->names[mm]));
		fprintf(E->f, "\n");
		return;
	}
	if (ep) {
		const char *pbias = bias >= 0 ? fmt(k->a, "t_%s", k->plan->names[bias]) : "NULL";
		const char *paux = aux >= 0 ? fmt(k->a, "t_%s", k->plan->names[aux]) : "NULL";
		fg_vec_push(E->a, &E->run, fmt(E->a, "fgrt_gemm_ep(ctx, %d, &fg_gemm_%d, %s, %s, t_%s, %s, %s);", slot, slot,
					      pa, pb, k->plan->names[y], pbias, paux));
		add_launch(E, "cublasLt", k->gi, 0, 0, NULL);
		emit_comment(E, k->gi, fmt(E->a, "gemm on cuBLASLt with its own epilogue %s (fg_gemm_%d), straight into "
					   "%s%s%s; no epilogue kernel", ep + strlen("FGRT_EP_"), slot, k->plan->names[y],
					   aux >= 0 ? " and, as AUX, " : "", aux >= 0 ? k->plan->names[aux] : ""));
		fprintf(E->f, "\n");
		return;
	}
	int64_t scratch = numel(os) * 4;
	if (scratch > E->scratch)
		E->scratch = scratch;
	fg_vec_push(E->a, &E->run, fmt(E->a, "fgrt_gemm(ctx, %d, &fg_gemm_%d, %s, %s, ctx->scratch);", slot, slot,
				      pa, pb));
	add_launch(E, "cublasLt", k->gi, 0, 0, NULL);
	k->mm = mm;
	Param acc = {fmt(k->a, "const float *__restrict__ mm_%s", k->plan->names[mm]), "(const float *)ctx->scratch"};
	int s = sink(k);
	emit_loop(E, k, s, &acc, 1, fmt(E->a, "gemm: %s = matmul on cuBLASLt (fg_gemm_%d) into scratch as f32, "
					"then this epilogue over %s%s%s%s", k->plan->names[mm], slot,
					shape_str(E->a, k->g->nodes[s].dt, shape_of(k, s)),
					E->gemm == FG_GEMM_CUBLASLT ? "" : " (not the generated matmul: ",
					E->gemm == FG_GEMM_CUBLASLT ? "" : p.refusal ? p.refusal :
					fmt(k->a, "estimated %s there against %s for this pair (own_gemm_pays)",
					    us_str(k->a, p.est_own), us_str(k->a, p.est_lt)),
					E->gemm == FG_GEMM_CUBLASLT ? "" : ")"));
}

/* What fgc compile --gemm auto does with gemm group gi, in a phrase (fgc
 * report; with --tf32 when plan->opt.tf32); NULL for other groups and for a
 * group it cannot compile. */
const char *fg_cuda_gemm_note(const FgPlan *plan, int gi)
{
	const FgGraph *g = plan->g;
	if (gi < 0 || gi >= plan->ngroups || plan->groups[gi].kind != FG_GROUP_GEMM)
		return NULL;
	Emit E;
	memset(&E, 0, sizeof E);
	E.a = g->arena;
	E.g = g;
	E.plan = plan;
	E.gemm = FG_GEMM_AUTO;
	E.member = fg_arena_array(E.a, (size_t)g->nnodes + 1, sizeof(int));
	Kern k;
	GemmPlan p;
	kern_init(&k, &E, gi);
	int ok = plan_gemm(&E, &k, &p);
	kern_done(&k);
	if (!ok)
		return NULL;
	const FgNode *n = &g->nodes[p.mm];
	const char *est = fmt(E.a, "est %s, against %s for cuBLASLt and an epilogue kernel", us_str(E.a, p.est_own),
			      us_str(E.a, p.est_lt));
	if (n->dt == FG_DT_I32)
		return "an i32 kernel (a thread an element, into scratch), then the epilogue kernel";
	if (p.own) {
		GemmTile t = plan_tile(&p);
		return fmt(E.a, "the generated sm_90a matmul, %s %s%d x %d tiles, the epilogue on its registers (%s)",
			   t.pp ? "ping-pong" : "cooperative", t.pp ? "" : "2 x ", t.wm, t.bn, est);
	}
	if (p.direct)
		return fmt(E.a, "cuBLASLt, straight into %s", plan->names[p.mm]);
	if (p.ep)
		return fmt(E.a, "cuBLASLt with its own epilogue %s", p.ep + strlen("FGRT_EP_"));
	if (p.refusal)
		return fmt(E.a, "cuBLASLt into f32 scratch, then an epilogue kernel; not the generated matmul: %s",
			   p.refusal);
	return fmt(E.a, "cuBLASLt into f32 scratch, then an epilogue kernel (est %s, against %s for the generated "
		   "matmul)", us_str(E.a, p.est_lt), us_str(E.a, p.est_own));
}

/* ------------------------------------------------------------ groups */

static void emit_group(Emit *E, int gi)
{
	Kern k;
	kern_init(&k, E, gi);
	const FgGroup *gr = k.gr;
	switch (gr->kind) {
	case FG_GROUP_LOOP: {
		int s = sink(&k);
		emit_loop(E, &k, s, NULL, 0, fmt(E->a, "loop over %s", shape_str(E->a, E->g->nodes[s].dt, shape_of(&k, s))));
		break;
	}
	case FG_GROUP_ROWREDUCE:
		emit_rowreduce(E, &k);
		break;
	case FG_GROUP_REDUCE:
		emit_reduce(E, &k);
		break;
	case FG_GROUP_GEMM:
		emit_gemm(E, &k);
		break;
	default:
		fg_die("group kind %d", (int)gr->kind);
	}
	if (k.failed)
		E->errors++;
	kern_done(&k);
}

/* --------------------------------------------------------- the table */

/* Which of testing.md's gates checks each value: the RMSE gate for values
 * fed by a reduction or a matmul, or by a float value the plan stores and
 * reads back (rounded once more than the reference), as fg_plan_verify
 * decides; else the elementwise one.  2: the RMSE gate at tf32's precision,
 * for values fed by an f32 matmul under --tf32. */
static void rmse_gates(Emit *E, unsigned char *rmse)
{
	const FgGraph *g = E->g;
	const FgPlan *plan = E->plan;
	unsigned char *read_back = fg_arena_alloc(E->a, (size_t)g->nnodes + 1);
	for (int gi = 0; gi < plan->ngroups; gi++)
		for (int r = 0; r < plan->groups[gi].nreads; r++) {
			int id = plan->groups[gi].reads[r];
			FgOp op = g->nodes[id].op;
			read_back[id] = op != FG_OP_INPUT && op != FG_OP_PARAM && fg_dtype_is_float(g->nodes[id].dt);
		}
	for (int id = 0; id < g->nnodes; id++) {
		const FgNode *n = &g->nodes[id];
		FgOpClass c = fg_op_info[n->op].cls;
		int tf32 = c == FG_CLASS_MATMUL && E->plan->opt.tf32 && g->nodes[n->in[0]].dt == FG_DT_F32;
		rmse[id] = c == FG_CLASS_REDUCE || c == FG_CLASS_MATMUL;
		for (int j = 0; j < n->nin; j++) {
			rmse[id] |= rmse[n->in[j]] != 0 || read_back[n->in[j]];
			tf32 |= rmse[n->in[j]] == 2;
		}
		if (tf32)
			rmse[id] = 2;
	}
}

static void emit_tensors(Emit *E)
{
	const FgGraph *g = E->g;
	unsigned char *rmse = fg_arena_alloc(E->a, (size_t)g->nnodes + 1);
	rmse_gates(E, rmse);
	fprintf(E->f, "/* ------------------------------------------------------------ the program */\n\n");
	fprintf(E->f, "/* name, dtype, rank, shape, role, arena offset, --check by the RMSE gate (2: at tf32's "
		"precision) */\n");
	fprintf(E->f, "static const FgrtTensor fg_tensors[] = {\n");
	for (int t = 0; t < E->tensors.n; t++) {
		int id = E->tensors.v[t];
		const FgNode *n = &g->nodes[id];
		const char *role = "";
		unsigned roles = 0;
		if (n->op == FG_OP_INPUT)
			roles |= 1;
		if (n->op == FG_OP_PARAM)
			roles |= 2;
		if (n->flags & FG_NF_OUTPUT)
			roles |= 4;
		if (n->flags & FG_NF_SAVED)
			roles |= 8;
		if (!roles)
			roles = 16;
		static const char *const rn[] = {"FGRT_INPUT", "FGRT_PARAM", "FGRT_OUTPUT", "FGRT_SAVED",
						 "FGRT_INTERMEDIATE"};
		for (int b = 0; b < 5; b++)
			if (roles >> b & 1)
				role = fmt(E->a, "%s%s%s", role, *role ? " | " : "", rn[b]);
		const char *shape = "";
		for (int i = 0; i < n->shape.rank; i++)
			shape = fmt(E->a, "%s%s%lld", shape, i ? ", " : "", (long long)n->shape.d[i]);
		int64_t off = E->plan->offset ? E->plan->offset[id] : -1;
		fprintf(E->f, "\t{\"%s\", %s, %d, {%s}, %s, %lld, %d},\n", E->plan->names[id], rt_dtype(n->dt),
			n->shape.rank, shape, role, (long long)(n->op == FG_OP_INPUT || n->op == FG_OP_PARAM ? -1 : off),
			rmse[id]);
	}
	fprintf(E->f, "};\n\n");
}

static void emit_program(Emit *E, const char *source)
{
	emit_tensors(E);
	fprintf(E->f, "/* kernel, group, grid, block: in launch order */\n");
	fprintf(E->f, "static const FgrtLaunch fg_launches[] = {\n");
	for (int i = 0; i < E->launches.n; i++) {
		const Launch *l = &E->launches.v[i];
		fprintf(E->f, "\t{\"%s\", %d, %lld, %lld},\n", l->kernel, l->group, (long long)l->grid, (long long)l->block);
	}
	if (E->launches.n == 0)
		fprintf(E->f, "\t{\"none\", -1, 0, 0},\n");
	fprintf(E->f, "};\n\n");
	for (int i = 0; i < E->gemms.n; i++)
		fprintf(E->f, "%s\n", E->gemms.v[i]);
	fprintf(E->f, "extern const FgrtProgram fg_program = {\n");
	fprintf(E->f, "\t\"%s\", \"%s\",\n", E->g->name, c_string(E->a, source));
	fprintf(E->f, "\tfg_tensors, %d, %d,\n", E->tensors.n, E->g->ninputs);
	fprintf(E->f, "\tfg_launches, %d, %d, %d,\n", E->launches.n, E->plan->ngroups, E->gemms.n);
	fprintf(E->f, "\t%lld, %lld,\t/* arena and scratch bytes */\n};\n\n", (long long)E->plan->planned_bytes,
		(long long)E->scratch);
	fprintf(E->f, "void fg_program_run(FgrtContext *ctx)\n{\n");
	for (int t = 0; t < E->tensors.n; t++) {
		int id = E->tensors.v[t], used = 0;
		const char *ty = stype(E->g->nodes[id].dt), *name = fmt(E->a, "t_%s", E->plan->names[id]);
		for (int i = 0; i < E->run.n && !used; i++)
			used = uses(E->run.v[i], name);
		if (used)       /* an input no group reads (the host still loads it) needs none */
			fprintf(E->f, "\t%s *%s = (%s *)ctx->ptr[%d];\n", ty, name, ty, t);
	}
	for (int i = 0; i < E->run.n; i++)
		fprintf(E->f, "\t%s\n", E->run.v[i]);
	fprintf(E->f, "}\n");
}

static void emit_header(Emit *E, const char *source)
{
	const FgGraph *g = E->g;
	fprintf(E->f, "/*\n * %s.cu - graph %s from %s, written by `fgc compile`; do not edit.\n", g->name, g->name,
		in_comment(E->a, source));
	if (g->nsyms) {
		fprintf(E->f, " * dims:");
		for (int i = 0; i < g->nsyms; i++)
			fprintf(E->f, " %s=%lld", g->syms[i].name, (long long)g->syms[i].value);
		fprintf(E->f, "\n");
	}
	fprintf(E->f, " * %d %s%s; arena %lld bytes.  Build: nvcc -O3 -gencode=arch=compute_90a,code=sm_90a\n"
		" * -I runtime this.cu runtime/fgrt_host.cu runtime/npy.c runtime/half.c runtime/check.c -lcublasLt\n */\n",
		E->plan->ngroups, E->plan->ngroups == 1 ? "group" : "groups",
		E->plan->opt.no_fuse ? " (--no-fuse: one per op)" : "",
		(long long)E->plan->planned_bytes);
	fprintf(E->f, "#include \"fg_device.cuh\"\n#include \"fg_gemm_sm90.cuh\"\n\n");
}

int fg_cuda_emit(FILE *f, const FgPlan *plan, const char *source, FgGemmChoice gemm, FgDiag *d)
{
	Emit E;
	const FgGraph *g = plan->g;
	memset(&E, 0, sizeof E);
	E.gemm = gemm;
	E.a = g->arena;
	E.g = g;
	E.plan = plan;
	E.d = d;
	E.f = f;
	E.member = fg_arena_array(E.a, (size_t)g->nnodes + 1, sizeof(int));
	E.tensor = fg_arena_array(E.a, (size_t)g->nnodes + 1, sizeof(int));
	for (int id = 0; id < g->nnodes; id++)
		E.tensor[id] = -1;
	for (int k = 0; k < g->ninputs; k++) {
		E.tensor[g->inputs[k]] = E.tensors.n;
		fg_vec_push(E.a, &E.tensors, g->inputs[k]);
	}
	for (int id = 0; id < g->nnodes; id++) {
		if (E.tensor[id] >= 0 || !plan->offset || plan->offset[id] < 0)
			continue;
		E.tensor[id] = E.tensors.n;
		fg_vec_push(E.a, &E.tensors, id);
	}
	emit_header(&E, source);
	for (int gi = 0; gi < plan->ngroups; gi++)
		emit_group(&E, gi);
	emit_program(&E, source);
	return E.errors;
}

/* ----------------------------------------------------- fgc compile */

/* mkdir -p of the directory part of path. */
static int make_parent(FgDiag *d, const char *path)
{
	char *p = strdup(path);
	int rc = 0;
	if (!p)
		return -1;
	char *slash = strrchr(p, '/');
	if (slash && slash != p) {
		*slash = '\0';
		for (char *q = p + 1; rc == 0; q++) {
			if (*q != '/' && *q != '\0')
				continue;
			char c = *q;
			*q = '\0';
			if (mkdir(p, 0777) != 0 && errno != EEXIST) {
				fg_error(d, (FgLoc){0, 0}, "cannot create directory '%s': %s", p, strerror(errno));
				rc = -1;
			}
			*q = c;
			if (c == '\0')
				break;
		}
	}
	free(p);
	return rc;
}

static int file_exists(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0;
}

/* The runtime's folder: $FGC_RUNTIME, else runtime/ beside the folder of
 * the fgc binary (build/fgc -> runtime/), else ./runtime. */
static char *runtime_dir(void)
{
	const char *env = getenv("FGC_RUNTIME");
	char buf[4096];
	if (env && *env)
		return strdup(env);
	ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 32);
	if (n > 0) {
		buf[n] = '\0';
		for (int up = 0; up < 3; up++) {
			char *s = strrchr(buf, '/');
			if (!s)
				break;
			*s = '\0';
			char probe[4200];
			snprintf(probe, sizeof probe, "%s/runtime/fg_device.cuh", buf);
			if (file_exists(probe)) {
				strcat(buf, "/runtime");
				return strdup(buf);
			}
		}
	}
	return strdup("runtime");
}

/* Runs argv, waits; its exit status, or -1. */
static int run_command(char *const *argv)
{
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		execvp(argv[0], argv);
		fprintf(stderr, "fgc: error: cannot run '%s': %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Whether name is an executable in a folder of $PATH. */
static int on_path(const char *name)
{
	const char *path = getenv("PATH");
	char buf[4200];
	while (path && *path) {
		size_t n = strcspn(path, ":");
		snprintf(buf, sizeof buf, "%.*s/%s", (int)n, path, name);
		if (n > 0 && access(buf, X_OK) == 0)
			return 1;
		path += n + (path[n] == ':');
	}
	return 0;
}

static int arch_ok(const char *arch)
{
	size_t n = strlen(arch);
	return strncmp(arch, "sm_", 3) == 0 && n >= 5 && n <= 8 && strspn(arch + 3, "0123456789") >= 2 &&
	       strspn(arch + 3, "0123456789af") == n - 3;
}

static int build(const FgCudaOptions *o, const char *cu, FgDiag *d)
{
	char *rt = runtime_dir();
	const char *arch = o->arch ? o->arch : "sm_90a";
	const char *nvcc = getenv("NVCC");
	char gencode[128], inc[4200], host[4200], npy[4200], half[4200], check[4200];
	if (!nvcc || !*nvcc)
		nvcc = on_path("nvcc") || !file_exists("/usr/local/cuda/bin/nvcc") ? "nvcc" : "/usr/local/cuda/bin/nvcc";
	snprintf(gencode, sizeof gencode, "-gencode=arch=compute_%s,code=%s", arch + 3, arch);
	snprintf(inc, sizeof inc, "-I%s", rt);
	snprintf(host, sizeof host, "%s/fgrt_host.cu", rt);
	snprintf(npy, sizeof npy, "%s/npy.c", rt);
	snprintf(half, sizeof half, "%s/half.c", rt);
	snprintf(check, sizeof check, "%s/check.c", rt);
	if (!file_exists(host)) {
		fg_error(d, (FgLoc){0, 0}, "cannot find the runtime at '%s' (set FGC_RUNTIME to fgc's runtime/ folder)", rt);
		free(rt);
		return 1;
	}
	char *argv[] = {(char *)nvcc, "-O3", gencode, inc, "-o", (char *)o->out, (char *)cu, host, npy, half, check,
			"-lcublasLt", NULL};
	int rc = run_command(argv);
	free(rt);
	if (rc != 0) {
		fg_error(d, (FgLoc){0, 0}, "nvcc failed (status %d) building '%s'", rc, o->out);
		return 1;
	}
	return 0;
}

int fg_cuda_compile(const FgPlan *plan, const FgCudaOptions *o, FgDiag *d)
{
	size_t len = strlen(o->out);
	char *cu = malloc(len + 4), *tmp = malloc(len + 40);
	int rc = 1;
	FILE *f = NULL;
	if (!cu || !tmp)
		goto out;
	if (o->build && o->arch && !arch_ok(o->arch)) {
		fg_error(d, (FgLoc){0, 0}, "--arch %s: expected sm_NN or sm_NNa (sm_90a, sm_100a)", o->arch);
		goto out;
	}
	/* the generated matmul is sm_90a code (wgmma, setmaxnreg) */
	FgGemmChoice gemm = o->gemm;
	if (o->arch && strcmp(o->arch, "sm_90a") != 0) {
		if (gemm == FG_GEMM_FGC) {
			fg_error(d, (FgLoc){0, 0}, "--gemm fgc needs --arch sm_90a: the generated matmul uses wgmma");
			goto out;
		}
		gemm = FG_GEMM_CUBLASLT;
	}
	snprintf(cu, len + 4, "%s.cu", o->out);
	snprintf(tmp, len + 40, "%s.cu.tmp.%ld", o->out, (long)getpid());
	if (make_parent(d, cu) != 0)
		goto out;
	f = fopen(tmp, "w");
	if (!f) {
		fg_error(d, (FgLoc){0, 0}, "cannot write '%s': %s", cu, strerror(errno));
		goto out;
	}
	int errors = fg_cuda_emit(f, plan, o->source ? o->source : "", gemm, d);
	int bad = ferror(f);
	if (fclose(f) != 0 || bad) {
		fg_error(d, (FgLoc){0, 0}, "cannot write '%s'", cu);
		errors++;
	}
	f = NULL;
	if (errors || rename(tmp, cu) != 0) {
		if (!errors)
			fg_error(d, (FgLoc){0, 0}, "cannot write '%s': %s", cu, strerror(errno));
		remove(tmp);
		goto out;
	}
	rc = o->build ? build(o, cu, d) : 0;
out:
	free(cu);
	free(tmp);
	return rc;
}
