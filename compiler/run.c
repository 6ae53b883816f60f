/*
 * run.c - `fgc run`: the reference interpreter from files to files.  Each
 * input and param is read from DIR/NAME.npy, or drawn from the seed when
 * that file is absent (the stream a fused binary draws, fgrt_philox.h);
 * the graph is evaluated in double precision; each output and saved value
 * is rounded once to its dtype and written as NAME.npy and saved.NAME.npy.
 * With --in-dtype the graph is also evaluated in its dtypes
 * (fg_interp_eval_in) and those values written the same way under
 * in-dtype/, the RMSE gate's baseline for a binary's --check, and the
 * reference itself, unrounded, as <f8 under f64/, what that gate measures
 * against; without it, a run removes this graph's files from an earlier
 * run's in-dtype/ and f64/, so that no stale baseline stands beside new
 * outputs.
 *
 * Invariants: a file's shape must equal the declaration exactly and its
 * .npy type must be the dtype's storage type (bf16 travels as <f4 holding
 * bf16 values, since NumPy has no bf16).  Every input problem is reported,
 * not just the first, and nothing is written unless every input was fine
 * and the whole graph evaluated; each file is written to a temporary name
 * and renamed, so a reader never sees half of one.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fg.h"
#include "fgrt.h"
#include "fgrt_philox.h"

static const FgLoc no_loc = {0, 0};

/* The .npy type each dtype is stored as (FG_DTYPES' npy column). */
static const FgrtNpyType storage[FG_DT_COUNT] = {
#define X(id, nm, size, isf, ct, st, py, npy) [FG_DT_##id] = FGRT_NPY_##npy,
	FG_DTYPES(X)
#undef X
};

static const char *role(const FgNode *n)
{
	return n->op == FG_OP_PARAM ? "param" : "input";
}

/* "dir/prefixNAME.npy", malloc'ed; NULL when out of memory. */
static char *npy_path(const char *dir, const char *prefix, const char *name)
{
	size_t len = strlen(dir) + strlen(prefix) + strlen(name) + 6;
	char *p = malloc(len);
	if (p != NULL)
		snprintf(p, len, "%s/%s%s.npy", dir, prefix, name);
	return p;
}

/* Element count of a declared shape, -1 when its doubles would not fit
 * in the address space. */
static int64_t numel_doubles(const FgShape *s)
{
	int64_t n = fg_shape_numel(s);
	return n < 0 || (uint64_t)n > SIZE_MAX / sizeof(double) ? -1 : n;
}

/* The k-th input's values from the seed: uniform in [-1, 1) rounded to
 * the dtype, i32 and i8 in [-8, 8], u8 in [0, 16], or fair bools.  A float param of rank 2
 * or more is a weight: it is scaled by 1/sqrt(fan-in), its second-to-last
 * dim, as initializers do, so that deep graphs keep activations near 1
 * and stay well conditioned in f16 and bf16. */
static void draw_input(const FgNode *n, int k, uint64_t seed, double *v, int64_t count)
{
	double scale = 1.0;

	if (n->op == FG_OP_PARAM && n->shape.rank >= 2)
		scale = 1.0 / sqrt((double)n->shape.d[n->shape.rank - 2]);
	for (int64_t i = 0; i < count; i++) {
		double u = fgrt_input_uniform(seed, (uint32_t)k, (uint64_t)i);
		switch (n->dt) {
		case FG_DT_I32:
		case FG_DT_I8:
			v[i] = floor(17.0 * u) - 8.0;
			break;
		case FG_DT_U8:
			v[i] = floor(17.0 * u);
			break;
		case FG_DT_BOOL:
			v[i] = u < 0.5 ? 1.0 : 0.0;
			break;
		default:
			v[i] = fg_round_to(n->dt, (2.0 * u - 1.0) * scale);
			break;
		}
	}
}

/* bf16 and the 8-bit floats: .npy files hold them as float32 values. */
static int travels_f4(FgDtype dt)
{
	return dt == FG_DT_BF16 || dt == FG_DT_F8E4M3 || dt == FG_DT_F8E5M2;
}

/* Whether file t can stand for node n: same shape, the dtype's storage
 * type.  Reports the mismatch otherwise. */
static int check_file(FgDiag *d, const char *path, const FgNode *n, const FgrtNpy *t)
{
	FgrtNpyType want = storage[n->dt];
	int same = t->type == want && t->rank == n->shape.rank;
	for (int i = 0; same && i < t->rank; i++)
		same = t->shape[i] == n->shape.d[i];
	if (same)
		return 0;
	char ty[256], got[256], need[256];
	fg_type_str(ty, sizeof ty, n->dt, &n->shape);
	fgrt_shape_str(got, sizeof got, t->rank, t->shape);
	fgrt_shape_str(need, sizeof need, n->shape.rank, n->shape.d);
	char note[64] = "";
	if (travels_f4(n->dt))
		snprintf(note, sizeof note, " (%s travels as float32 values)", fg_dtype_name[n->dt]);
	fg_error(d, no_loc, "'%s' holds %s %s, but %s '%s' is declared %s and needs %s %s%s",
		 path, fgrt_npy_type_descr(t->type), got, role(n), n->name, ty,
		 fgrt_npy_type_descr(want), need, note);
	return -1;
}

/* Widens the file's elements to doubles.  bf16 values arrive as floats;
 * any that bf16 cannot hold is rounded, with one warning per file. */
static void widen(FgDiag *d, const char *path, const FgNode *n, const FgrtNpy *t, double *v)
{
	int64_t rounded = 0;
	for (int64_t i = 0; i < t->numel; i++) {
		switch (t->type) {
		case FGRT_NPY_F4:
			v[i] = ((const float *)t->data)[i];
			break;
		case FGRT_NPY_F2:
			v[i] = fgrt_f16_to_f64(((const uint16_t *)t->data)[i]);
			break;
		case FGRT_NPY_I4:
			v[i] = ((const int32_t *)t->data)[i];
			break;
		case FGRT_NPY_B1:
			v[i] = ((const unsigned char *)t->data)[i] != 0;
			break;
		case FGRT_NPY_I1:
			v[i] = ((const int8_t *)t->data)[i];
			break;
		case FGRT_NPY_U1:
			v[i] = ((const uint8_t *)t->data)[i];
			break;
		case FGRT_NPY_F8:       /* no dtype is stored as f8: check_file refused it */
			v[i] = ((const double *)t->data)[i];
			break;
		}
		if (travels_f4(n->dt)) {
			double r = fg_round_to(n->dt, v[i]);
			rounded += r != v[i] && !isnan(v[i]);
			v[i] = r;
		}
	}
	if (rounded > 0)
		fg_warning(d, no_loc, "'%s': %lld of the %lld values of %s '%s' are not %s values; "
			   "rounded to the nearest %s (ties to even)", path, (long long)rounded, (long long)t->numel,
			   role(n), n->name, fg_dtype_name[n->dt], fg_dtype_name[n->dt]);
}

/* Reads input n from path into v (its declared element count). */
static int load_input(FgDiag *d, const char *path, const FgNode *n, double *v)
{
	char err[FGRT_ERRLEN];
	FgrtNpy t;
	if (fgrt_npy_read(path, 0, &t, err) != 0) {
		fg_error(d, no_loc, "%s", err);
		return -1;
	}
	int rc = check_file(d, path, n, &t);
	if (rc == 0)
		widen(d, path, n, &t, v);
	fgrt_npy_free(&t);
	return rc;
}

/* A missing --inputs directory is a typo far more often than a wish to
 * draw everything, so it is an error (a missing file in it too, unless
 * --draw-missing: check_complete). */
static int check_indir(FgDiag *d, const char *indir)
{
	struct stat st;
	if (stat(indir, &st) != 0) {
		fg_error(d, no_loc, "cannot read inputs from '%s': %s", indir, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		fg_error(d, no_loc, "cannot read inputs from '%s': not a directory", indir);
		return -1;
	}
	return 0;
}

/* Fills v with input k: from indir/NAME.npy when that file exists, else
 * drawn from the seed. */
static int fill_input(const FgGraph *g, int k, const char *indir, uint64_t seed, FgDiag *d,
		      double *v, int64_t count)
{
	const FgNode *n = &g->nodes[g->inputs[k]];
	struct stat st;
	if (indir == NULL) {
		draw_input(n, k, seed, v, count);
		return 0;
	}
	char *path = npy_path(indir, "", n->name);
	int rc = 0;
	if (path == NULL) {
		fg_error(d, no_loc, "out of memory");
		rc = -1;
	} else if (lstat(path, &st) == 0 || errno != ENOENT) {
		/* Present, even as a dangling link: read it, and fail loudly
		 * rather than draw the input behind the user's back. */
		rc = load_input(d, path, n, v);
	} else {
		draw_input(n, k, seed, v, count);
	}
	free(path);
	return rc;
}

/* Declared here until fg.h's compiler/run.c section takes it: the plan
 * verifier (extract.c) draws its inputs the way `fgc run` does. */
/* Fills in[k] for every input and param (indir NULL: all drawn from the
 * seed); returns the number of inputs that failed (each reported).  The
 * caller frees every in[k], which may be NULL after a failure. */
int fg_run_inputs(const FgGraph *g, const char *indir, uint64_t seed, FgDiag *d, double **in)
{
	int bad = 0;
	for (int k = 0; k < g->ninputs; k++) {
		const FgNode *n = &g->nodes[g->inputs[k]];
		int64_t count = numel_doubles(&n->shape);
		in[k] = count < 0 ? NULL : malloc(count > 0 ? (size_t)count * sizeof(double) : 1);
		if (in[k] == NULL) {
			char ty[256];
			fg_error(d, n->loc, "out of memory for %s '%s' : %s", role(n), n->name,
				 fg_type_str(ty, sizeof ty, n->dt, &n->shape));
			bad++;
			continue;
		}
		bad += fill_input(g, k, indir, seed, d, in[k], count) != 0;
	}
	return bad;
}

/* Refuses, before any work, an output path that can never be a writable
 * directory; one that does not exist yet is made after evaluation. */
static int check_outdir(FgDiag *d, const char *outdir)
{
	struct stat st;
	if (stat(outdir, &st) != 0)
		return 0;
	if (!S_ISDIR(st.st_mode)) {
		fg_error(d, no_loc, "cannot write outputs to '%s': it exists and is not a directory", outdir);
		return -1;
	}
	if (access(outdir, W_OK | X_OK) != 0) {
		fg_error(d, no_loc, "cannot write outputs to '%s': %s", outdir, strerror(errno));
		return -1;
	}
	return 0;
}

/* mkdir -p: every missing directory along the path, then a check that
 * the last one is a directory. */
static int make_dirs(FgDiag *d, const char *outdir)
{
	size_t len = strlen(outdir);
	char *p = malloc(len + 1);
	struct stat st;
	int rc = 0;

	if (p == NULL) {
		fg_error(d, no_loc, "out of memory");
		return -1;
	}
	memcpy(p, outdir, len + 1);
	for (size_t i = 1; i <= len && rc == 0; i++) {
		if (p[i] != '/' && p[i] != '\0')
			continue;
		if (p[i - 1] == '/')
			continue;
		char c = p[i];
		p[i] = '\0';
		if (mkdir(p, 0777) != 0 && errno != EEXIST) {
			fg_error(d, no_loc, "cannot create directory '%s': %s", p, strerror(errno));
			rc = -1;
		}
		p[i] = c;
	}
	if (rc == 0 && (stat(outdir, &st) != 0 || !S_ISDIR(st.st_mode))) {
		fg_error(d, no_loc, "cannot write outputs to '%s': not a directory", outdir);
		rc = -1;
	}
	free(p);
	return rc;
}

/* Narrows v (already rounded to the dtype, so exactly representable) to
 * the dtype's storage type and writes it; f64: as <f8, unrounded. */
static int write_value(FgDiag *d, const char *path, const FgNode *n, const double *v, int f64)
{
	FgrtNpy t;
	char err[FGRT_ERRLEN];
	memset(&t, 0, sizeof t);
	t.type = f64 ? FGRT_NPY_F8 : storage[n->dt];
	t.rank = n->shape.rank;
	for (int i = 0; i < t.rank; i++)
		t.shape[i] = n->shape.d[i];
	t.numel = fg_shape_numel(&n->shape);
	t.nbytes = (size_t)t.numel * fgrt_npy_type_size(t.type);
	t.data = malloc(t.nbytes ? t.nbytes : 1);
	if (t.data == NULL) {
		fg_error(d, no_loc, "out of memory writing '%s'", path);
		return -1;
	}
	for (int64_t i = 0; i < t.numel; i++) {
		switch (t.type) {
		case FGRT_NPY_F4:
			((float *)t.data)[i] = (float)v[i];
			break;
		case FGRT_NPY_F2:
			((uint16_t *)t.data)[i] = fgrt_f64_to_f16(v[i]);
			break;
		case FGRT_NPY_I4:
			((int32_t *)t.data)[i] = (int32_t)v[i];
			break;
		case FGRT_NPY_B1:
			((unsigned char *)t.data)[i] = v[i] != 0;
			break;
		case FGRT_NPY_I1:
			((int8_t *)t.data)[i] = (int8_t)v[i];
			break;
		case FGRT_NPY_U1:
			((uint8_t *)t.data)[i] = (uint8_t)v[i];
			break;
		case FGRT_NPY_F8:
			((double *)t.data)[i] = v[i];
			break;
		}
	}
	int rc = fgrt_npy_write(path, &t, err);
	if (rc != 0)
		fg_error(d, no_loc, "%s", err);
	free(t.data);
	return rc;
}

static int write_one(FgDiag *d, const char *outdir, const char *prefix,
		     const FgNode *n, const double *v, int f64)
{
	FG_ASSERT(n->name != NULL && v != NULL);
	char *path = npy_path(outdir, prefix, n->name);
	if (path == NULL) {
		fg_error(d, no_loc, "out of memory");
		return -1;
	}
	int rc = write_value(d, path, n, v, f64);
	free(path);
	return rc;
}

/* Writes every output as NAME.npy, in `output` order, then every saved
 * value as saved.NAME.npy; a value both output and saved gets both.  f64:
 * as <f8, the values as they are (the unrounded reference). */
static int write_results(const FgGraph *g, const char *outdir, double **vals, int f64, FgDiag *d)
{
	int bad = 0;
	for (int i = 0; i < g->noutputs; i++) {
		int id = g->outputs[i];
		bad += write_one(d, outdir, "", &g->nodes[id], vals[id], f64) != 0;
	}
	for (int id = 0; id < g->nnodes; id++)
		if (g->nodes[id].flags & FG_NF_SAVED)
			bad += write_one(d, outdir, "saved.", &g->nodes[id], vals[id], f64) != 0;
	return bad ? 1 : 0;
}

/* Removes what write_results would write into dir, and dir when that
 * leaves it empty: a baseline of an earlier run must not stand beside
 * this run's outputs (nor half of one after a failed write). */
static void remove_results(const FgGraph *g, const char *dir)
{
	for (int id = 0; id < g->nnodes; id++) {
		const FgNode *n = &g->nodes[id];
		for (int k = 0; k < 2; k++) {
			if (!(k ? n->flags & FG_NF_SAVED : n->flags & FG_NF_OUTPUT) || n->name == NULL)
				continue;
			char *path = npy_path(dir, k ? "saved." : "", n->name);
			if (path)
				unlink(path);
			free(path);
		}
	}
	rmdir(dir);
}

/* Rounds the kept values to their dtypes. */
static void round_results(const FgGraph *g, const unsigned char *keep, double **vals)
{
	for (int i = 0; vals != NULL && i < g->nnodes; i++) {
		const FgNode *n = &g->nodes[i];
		int64_t count = keep[i] ? fg_shape_numel(&n->shape) : 0;
		for (int64_t j = 0; j < count; j++)
			vals[i][j] = fg_round_to(n->dt, vals[i][j]);
	}
}

int fg_run_write(const FgGraph *g, const char *outdir, double **vals, FgDiag *d)
{
	if (check_outdir(d, outdir) != 0 || make_dirs(d, outdir) != 0)
		return 1;
	return write_results(g, outdir, vals, 0, d);
}

/* With --inputs and without --draw-missing every input and param must
 * have its file: a missing one is a typo (Res.npy for res) far more often
 * than a wish to draw it. */
static int check_complete(FgDiag *d, const FgGraph *g, const char *indir)
{
	const char **names = fg_arena_array(g->arena, (size_t)g->ninputs + 1, sizeof *names);
	char msg[4096];
	for (int k = 0; k < g->ninputs; k++)
		names[k] = g->nodes[g->inputs[k]].name;
	int missing = fgrt_inputs_missing(indir, names, g->ninputs, msg, sizeof msg);
	if (missing < 0)
		fg_error(d, no_loc, "out of memory");
	else if (missing > 0)
		fg_error(d, no_loc, "%s", msg);
	return missing != 0 ? -1 : 0;
}

int fg_run(const FgGraph *g, const char *indir, int draw_missing, const char *outdir,
	   uint64_t seed, int in_dtype, FgDiag *d)
{
	size_t nin = (size_t)g->ninputs, nn = (size_t)g->nnodes;
	double **in = calloc(nin ? nin : 1, sizeof *in);
	unsigned char *keep = calloc(nn ? nn : 1, 1);
	double **vals = NULL, **dvals = NULL;
	char *ddir = NULL, *fdir = NULL;
	int rc = 1;

	if (in == NULL || keep == NULL) {
		fg_error(d, no_loc, "out of memory");
		goto out;
	}
	if (check_outdir(d, outdir) != 0 || (indir && check_indir(d, indir) != 0) ||
	    (indir && !draw_missing && check_complete(d, g, indir) != 0))
		goto out;
	if (fg_run_inputs(g, indir, seed, d, in) != 0)
		goto out;
	for (size_t i = 0; i < nn; i++)
		keep[i] = (g->nodes[i].flags & FG_NF_SAVED) != 0;
	for (int i = 0; i < g->noutputs; i++)
		keep[g->outputs[i]] = 1;
	/* both evaluations before any file is written */
	if ((vals = fg_interp_eval(g, in, keep, d)) == NULL ||
	    (in_dtype && (dvals = fg_interp_eval_in(g, in, keep, FG_INTERP_IN_DTYPE, d)) == NULL))
		goto out;
	if ((ddir = malloc(strlen(outdir) + sizeof "/" FGRT_IN_DTYPE_DIR)) == NULL ||
	    (fdir = malloc(strlen(outdir) + sizeof "/" FGRT_F64_DIR)) == NULL) {
		fg_error(d, no_loc, "out of memory");
		goto out;
	}
	sprintf(ddir, "%s/%s", outdir, FGRT_IN_DTYPE_DIR);
	sprintf(fdir, "%s/%s", outdir, FGRT_F64_DIR);
	if (make_dirs(d, outdir) != 0)
		goto out;
	/* the unrounded reference first, then everything rounded */
	rc = in_dtype && (make_dirs(d, fdir) != 0 || write_results(g, fdir, vals, 1, d) != 0);
	round_results(g, keep, vals);
	round_results(g, keep, dvals);
	if (rc == 0)
		rc = write_results(g, outdir, vals, 0, d);
	if (rc == 0 && in_dtype && (make_dirs(d, ddir) != 0 || write_results(g, ddir, dvals, 0, d) != 0))
		rc = 1;
	if (rc != 0 || !in_dtype) {
		remove_results(g, ddir);
		remove_results(g, fdir);
	}
out:
	fg_interp_free(g, vals);
	fg_interp_free(g, dvals);
	for (size_t k = 0; in != NULL && k < nin; k++)
		free(in[k]);
	free(in);
	free(keep);
	free(ddir);
	free(fdir);
	return rc;
}
