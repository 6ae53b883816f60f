/*
 * fgrt_main.cu - the standalone binary of every model `fgc compile
 * --build` writes: main() over the runtime library (fgrt_lib.cu), with
 * the device memory of the inputs and outputs, .npy files, --check and
 * --bench.  Linked with one generated model.cu, fgrt_lib.cu, npy.c,
 * half.c and check.c.
 *
 *   model [--inputs DIR] [--outputs DIR] [--seed S] [--check DIR [--plant KIND]] [--bench N
 *         [--bench-json FILE]] [--no-graph]
 *
 * Inputs are read from DIR/NAME.npy with the interpreter's rules (the
 * exact declared shape, the dtype's file type: <f4 for f32 and bf16, <f2,
 * <i4, |b1), or drawn from the seed exactly as `fgc run` draws them (the
 * Philox input stream of fgrt_philox.h, weights scaled by 1/sqrt(fan-in)),
 * so a binary and the interpreter given the same seed see the same bits.
 * Outputs and saved values are written as NAME.npy and saved.NAME.npy in
 * the same file types.  --check compares each with DIR's golden file
 * under the tolerance the compiler put in the tensor table (testing.md),
 * one verdict line each, and exits 1 when any fails; a value under the
 * RMSE gate takes DIR/in-dtype/'s file, when there is one (fgc run
 * --in-dtype), as the gate's baseline.  --plant KIND puts a bug
 * (runtime/check.c: one element, row, column or residue tile off) into
 * each value before it is compared, to show that --check catches it.
 *
 * The program runs once eagerly (each launch checked as it is made, the
 * cuBLASLt plans made, every kernel loaded), then its launches are
 * captured into one CUDA graph, instantiated once, and every later run is
 * a replay of it: the outputs and saved values are the first replay's
 * (the arena, scratch and output buffers are poisoned before it), and
 * --bench times replays.  --no-graph keeps every run eager, for
 * debugging.  --bench N prints the median of N runs after warm-up, with
 * CUDA events: the whole program as replayed, the whole program launched
 * eagerly, and each launch of eager runs with an event after every launch,
 * the three taking turns run by run; --bench-json FILE writes them as
 * JSON too, for `fgc report --measured FILE`.
 *
 * A failure anywhere (the library's FgrtError, or this file's) ends the
 * binary with exit status 1 and one line: `GRAPH: error: what and why`.
 * Device memory is the model's (arena, scratch, cuBLASLt) and one buffer
 * per input, param, output and saved value, all freed before exit.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cuda_runtime.h>

#include "fgrt.h"
#include "fgrt_lib.h"
#include "fgrt_philox.h"

/* The .npy type each dtype travels as (bf16 as float values). */
/* bf16 and the 8-bit floats: .npy files hold them as float32 values. */
static int travels_f4(FgrtDtype t)
{
	return t == FGRT_BF16 || t == FGRT_F8E4M3 || t == FGRT_F8E5M2;
}

/* The float dtypes: a param of rank >= 2 of one is a weight. */
static int travels_float(FgrtDtype t)
{
	return t == FGRT_F32 || t == FGRT_F16 || t == FGRT_BF16 || t == FGRT_F8E4M3 || t == FGRT_F8E5M2;
}

static const FgrtNpyType storage[] = {
#define X(id, name, size, npy) FGRT_NPY_##npy,
	FGRT_DTYPES(X)
#undef X
};

static const char *role_name(const FgrtTensor *t)
{
	return t->role & FGRT_PARAM ? "param" : t->role & FGRT_INPUT ? "input" : "value";
}

/* Element i of host data in the dtype's device layout, as a double. */
static double element(const FgrtTensor *t, const void *data, int64_t i)
{
	switch (t->dtype) {
	case FGRT_F32:
		return ((const float *)data)[i];
	case FGRT_F16:
		return fgrt_f16_to_f64(((const uint16_t *)data)[i]);
	case FGRT_BF16:
		return fgrt_bf16_to_f64(((const uint16_t *)data)[i]);
	case FGRT_I32:
		return ((const int32_t *)data)[i];
	case FGRT_F8E4M3:
		return fgrt_f8e4m3_to_f64(((const uint8_t *)data)[i]);
	case FGRT_F8E5M2:
		return fgrt_f8e5m2_to_f64(((const uint8_t *)data)[i]);
	case FGRT_I8:
		return ((const int8_t *)data)[i];
	case FGRT_U8:
		return ((const uint8_t *)data)[i];
	default:
		return ((const unsigned char *)data)[i] != 0;
	}
}

/* ----------------------------------------------------------------- paths */

static char *path_of(const char *dir, const char *prefix, const char *name)
{
	size_t n = strlen(dir) + strlen(prefix) + strlen(name) + 6;
	char *p = (char *)malloc(n);
	if (!p)
		fgrt_fail("out of memory");
	snprintf(p, n, "%s/%s%s.npy", dir, prefix, name);
	return p;
}

static void make_dirs(const char *dir)
{
	char *p = strdup(dir);
	if (!p)
		fgrt_fail("out of memory");
	for (char *q = p + 1;; q++) {
		if (*q != '/' && *q != '\0')
			continue;
		char c = *q;
		*q = '\0';
		if (mkdir(p, 0777) != 0 && errno != EEXIST)
			fgrt_fail("cannot create directory '%s': %s", p, strerror(errno));
		*q = c;
		if (!c)
			break;
	}
	struct stat st;
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
		fgrt_fail("cannot write outputs to '%s': not a directory", dir);
	free(p);
}

/* --------------------------------------------------------------- inputs */

/* Reads path as tensor t's file and converts it to t's device layout in
 * out.  Same rules as `fgc run`: exact shape, the dtype's file type. */
static void load_file(const char *path, const FgrtTensor *t, void *out)
{
	char err[FGRT_ERRLEN], ty[256], got[256], need[256];
	FgrtNpy f;
	if (fgrt_npy_read(path, 0, &f, err) != 0)
		fgrt_fail("%s", err);
	int same = f.type == storage[t->dtype] && f.rank == t->rank;
	for (int i = 0; same && i < f.rank; i++)
		same = f.shape[i] == t->shape[i];
	if (!same) {
		fgrt_shape_str(got, sizeof got, f.rank, f.shape);
		fgrt_shape_str(need, sizeof need, t->rank, t->shape);
		fgrt_fail("'%s' holds %s %s, but %s '%s' is declared %s and needs %s %s%s", path,
		    fgrt_npy_type_descr(f.type), got, role_name(t), t->name, fgrt_type_str(ty, sizeof ty, t),
		    fgrt_npy_type_descr(storage[t->dtype]), need,
		    travels_f4(t->dtype) ? " (bf16 and the 8-bit floats travel as float32 values)" : "");
	}
	if (travels_f4(t->dtype)) {
		int64_t rounded = 0;
		for (int64_t i = 0; i < f.numel; i++) {
			float x = ((const float *)f.data)[i];
			double r;
			if (t->dtype == FGRT_BF16) {
				uint16_t h = fgrt_f32_to_bf16(x);
				((uint16_t *)out)[i] = h;
				r = fgrt_bf16_to_f32(h);
			} else {
				int e4 = t->dtype == FGRT_F8E4M3;
				uint8_t b = e4 ? fgrt_f64_to_f8e4m3(x) : fgrt_f64_to_f8e5m2(x);
				((uint8_t *)out)[i] = b;
				r = e4 ? fgrt_f8e4m3_to_f64(b) : fgrt_f8e5m2_to_f64(b);
			}
			rounded += r != x && x == x;
		}
		if (rounded)
			fprintf(stderr, "%s: warning: '%s': %lld of the %lld values of %s '%s' are not %s values; "
				"rounded to the nearest %s (ties to even)\n", fg_program.graph, path,
				(long long)rounded, (long long)f.numel, role_name(t), t->name,
				fgrt_dtype_name[t->dtype], fgrt_dtype_name[t->dtype]);
	} else {
		memcpy(out, f.data, f.nbytes);
	}
	fgrt_npy_free(&f);
}

typedef struct Draw {
	const FgrtTensor *t;
	int k;                  /* input number: the Philox stream's k */
	uint64_t seed;
	double scale;
	void *out;
	int64_t from, to;
} Draw;

/* Elements [from, to) of input k, as compiler/run.c draws them. */
static void *draw_range(void *arg)
{
	const Draw *d = (const Draw *)arg;
	for (int64_t i = d->from; i < d->to; i++) {
		double u = fgrt_input_uniform(d->seed, (uint32_t)d->k, (uint64_t)i);
		double x = (2.0 * u - 1.0) * d->scale;
		switch (d->t->dtype) {
		case FGRT_F32:
			((float *)d->out)[i] = (float)x;
			break;
		case FGRT_F16:
			((uint16_t *)d->out)[i] = fgrt_f64_to_f16(x);
			break;
		case FGRT_BF16:
			((uint16_t *)d->out)[i] = fgrt_f64_to_bf16(x);
			break;
		case FGRT_I32:
			((int32_t *)d->out)[i] = (int32_t)(floor(17.0 * u) - 8.0);
			break;
		case FGRT_I8:
			((int8_t *)d->out)[i] = (int8_t)(floor(17.0 * u) - 8.0);
			break;
		case FGRT_F8E4M3:
			((uint8_t *)d->out)[i] = fgrt_f64_to_f8e4m3(x);
			break;
		case FGRT_F8E5M2:
			((uint8_t *)d->out)[i] = fgrt_f64_to_f8e5m2(x);
			break;
		case FGRT_U8:
			((uint8_t *)d->out)[i] = (uint8_t)floor(17.0 * u);
			break;
		case FGRT_BOOL:
			((unsigned char *)d->out)[i] = u < 0.5;
			break;
		}
	}
	return NULL;
}

/* Draws input k from the seed, on every core for large tensors.  A float
 * param of rank >= 2 is a weight: scaled by 1/sqrt(its second-to-last
 * dim). */
static void draw(const FgrtTensor *t, int k, uint64_t seed, void *out)
{
	enum { MAXT = 64 };
	Draw d[MAXT];
	pthread_t th[MAXT];
	int64_t n = fgrt_numel(t);
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	int nt = n < (1 << 20) ? 1 : cores < 1 ? 1 : cores > MAXT ? MAXT : (int)cores;
	double scale = 1.0;
	if ((t->role & FGRT_PARAM) && t->rank >= 2 && travels_float(t->dtype))
		scale = 1.0 / sqrt((double)t->shape[t->rank - 2]);
	for (int i = 0; i < nt; i++) {
		d[i] = (Draw){t, k, seed, scale, out, n * i / nt, n * (i + 1) / nt};
		if (nt > 1 && pthread_create(&th[i], NULL, draw_range, &d[i]) != 0)
			fgrt_fail("cannot start a thread to draw '%s'", t->name);
	}
	if (nt == 1)
		draw_range(&d[0]);
	for (int i = 0; nt > 1 && i < nt; i++)
		pthread_join(th[i], NULL);
}


/* ------------------------------------------------------------- outputs */

/* Device tensor t, copied to the host in its device layout. */
static void *download(const FgrtContext *ctx, int t)
{
	const FgrtTensor *tt = &fg_program.tensors[t];
	size_t n = fgrt_nbytes(tt);
	void *h = malloc(n ? n : 1);
	if (!h)
		fgrt_fail("out of memory reading back '%s'", tt->name);
	if (n)
		CUDA(cudaMemcpy(h, ctx->ptr[t], n, cudaMemcpyDeviceToHost));
	return h;
}

static void write_npy(const char *path, const FgrtTensor *t, const void *data)
{
	FgrtNpy f;
	char err[FGRT_ERRLEN];
	memset(&f, 0, sizeof f);
	f.type = storage[t->dtype];
	f.rank = t->rank;
	for (int i = 0; i < t->rank; i++)
		f.shape[i] = t->shape[i];
	f.numel = fgrt_numel(t);
	f.nbytes = (size_t)f.numel * fgrt_npy_type_size(f.type);
	f.data = malloc(f.nbytes ? f.nbytes : 1);
	if (!f.data)
		fgrt_fail("out of memory writing '%s'", path);
	if (travels_f4(t->dtype)) {
		for (int64_t i = 0; i < f.numel; i++)
			((float *)f.data)[i] = (float)element(t, data, i);
	} else {
		memcpy(f.data, data, f.nbytes);
	}
	if (fgrt_npy_write(path, &f, err) != 0)
		fgrt_fail("%s", err);
	free(f.data);
}

/* The golden file at path as t's numel doubles into e: 0, or 1 after a
 * FAIL line for label (a missing file with missing_ok: -1, silently).
 * f64: the file holds the unrounded reference, as <f8. */
static int read_golden(const char *path, const char *label, const FgrtTensor *t, double *e, int missing_ok,
		       int f64)
{
	char err[FGRT_ERRLEN], ty[256];
	FgrtNpy f;
	if (missing_ok && access(path, F_OK) != 0 && errno == ENOENT)
		return -1;
	if (fgrt_npy_read(path, 0, &f, err) != 0) {
		printf("FAIL %s  %s  %s\n", label, fgrt_type_str(ty, sizeof ty, t), err);
		return 1;
	}
	int same = f.type == (f64 ? FGRT_NPY_F8 : storage[t->dtype]) && f.rank == t->rank;
	for (int i = 0; same && i < f.rank; i++)
		same = f.shape[i] == t->shape[i];
	if (!same) {
		char got[256];
		fgrt_shape_str(got, sizeof got, f.rank, f.shape);
		printf("FAIL %s  %s  '%s' holds %s %s\n", label, fgrt_type_str(ty, sizeof ty, t), path,
		       fgrt_npy_type_descr(f.type), got);
		fgrt_npy_free(&f);
		return 1;
	}
	for (int64_t i = 0, n = fgrt_numel(t); i < n; i++) {
		switch (f.type) {
		case FGRT_NPY_F4:
			e[i] = ((const float *)f.data)[i];
			break;
		case FGRT_NPY_F2:
			e[i] = fgrt_f16_to_f64(((const uint16_t *)f.data)[i]);
			break;
		case FGRT_NPY_I4:
			e[i] = ((const int32_t *)f.data)[i];
			break;
		case FGRT_NPY_B1:
			e[i] = ((const unsigned char *)f.data)[i] != 0;
			break;
		case FGRT_NPY_I1:
			e[i] = ((const int8_t *)f.data)[i];
			break;
		case FGRT_NPY_U1:
			e[i] = ((const uint8_t *)f.data)[i];
			break;
		case FGRT_NPY_F8:
			e[i] = ((const double *)f.data)[i];
			break;
		}
	}
	fgrt_npy_free(&f);
	return 0;
}

/* Compares t's values (host copy) with the golden file DIR/PREFIXNAME.npy;
 * a value under the RMSE gate takes DIR/in-dtype/PREFIXNAME.npy as its
 * baseline and is measured against the unrounded DIR/f64/PREFIXNAME.npy
 * when those exist (fgc run --in-dtype).  Prints one verdict line; 0 when
 * they agree. */
static int check_one(const char *dir, const char *prefix, const FgrtTensor *t, const void *data, FgrtPlant plant)
{
	char ty[256], label[512];
	snprintf(label, sizeof label, "%s%s", prefix, t->name);
	FgrtTol tol = fgrt_tolerance(fgrt_dtype_name[t->dtype], t->gate);
	int64_t n = fgrt_numel(t);
	double *a = (double *)malloc((size_t)(n ? n : 1) * sizeof *a);
	double *e = (double *)malloc((size_t)(n ? n : 1) * sizeof *e);
	double *b = tol.rmse_m > 0 ? (double *)malloc((size_t)(n ? n : 1) * sizeof *b) : NULL;
	double *r = tol.rmse_m > 0 ? (double *)malloc((size_t)(n ? n : 1) * sizeof *r) : NULL;
	char *path = path_of(dir, prefix, t->name);
	char *bdir = (char *)malloc(strlen(dir) + sizeof "/" FGRT_IN_DTYPE_DIR);
	char *fdir = (char *)malloc(strlen(dir) + sizeof "/" FGRT_F64_DIR);
	if (!a || !e || (tol.rmse_m > 0 && (!b || !r)) || !bdir || !fdir)
		fgrt_fail("out of memory checking '%s'", t->name);
	sprintf(bdir, "%s/%s", dir, FGRT_IN_DTYPE_DIR);
	sprintf(fdir, "%s/%s", dir, FGRT_F64_DIR);
	char *bpath = path_of(bdir, prefix, t->name), *fpath = path_of(fdir, prefix, t->name);
	int bad = read_golden(path, label, t, e, 0, 0), base = 0, f64 = 0;
	if (!bad && tol.rmse_m > 0) {
		base = read_golden(bpath, label, t, b, 1, 0);
		f64 = base > 0 ? 1 : read_golden(fpath, label, t, r, 1, 1);
		bad = base > 0 || f64 > 0;
		base = base == 0;
		f64 = f64 == 0;
	}
	if (!bad) {
		for (int64_t i = 0; i < n; i++)
			a[i] = element(t, data, i);
		fgrt_plant(plant, a, t->rank, t->shape, tol.unit_roundoff, t->dtype == FGRT_BOOL);
		FgrtCheck c;
		fgrt_check_base(a, f64 ? r : e, f64 ? e : NULL, base ? b : NULL, n, &tol, &c);
		char why[1024];
		printf("%-4s %s  %s  max abs err %.3g%s%s%s", c.ok ? "ok" : "FAIL", label, fgrt_type_str(ty, sizeof ty, t),
		       c.max_abs_err, fgrt_verdict_str(why, sizeof why, &tol, &c, t->rank, t->shape, n),
		       base ? "  (baseline in the dtype)" : "", f64 ? "  (against the f64 reference)" : "");
		putchar('\n');
		bad = !c.ok;
	}
	free(a);
	free(e);
	free(b);
	free(r);
	free(path);
	free(bdir);
	free(fdir);
	free(bpath);
	free(fpath);
	return bad;
}

/* ---------------------------------------------------------------- bench */

static int cmp_float(const void *x, const void *y)
{
	float a = *(const float *)x, b = *(const float *)y;
	return (a > b) - (a < b);
}

static float median(float *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_float);
	return n % 2 ? v[n / 2] : 0.5f * (v[n / 2 - 1] + v[n / 2]);
}

/* Device-to-device copy bandwidth, bytes read plus written per second:
 * the memory floor's yardstick, measured in the same run. */
static double copy_gbs(cudaStream_t s)
{
	const size_t n = (size_t)512 << 20;
	void *a, *b;
	cudaEvent_t e0, e1;
	float t[10];
	CUDA(cudaMalloc(&a, n));
	CUDA(cudaMalloc(&b, n));
	CUDA(cudaMemsetAsync(a, 1, n, s));
	CUDA(cudaEventCreate(&e0));
	CUDA(cudaEventCreate(&e1));
	for (int i = 0; i < 13; i++) {
		CUDA(cudaEventRecord(e0, s));
		CUDA(cudaMemcpyAsync(b, a, n, cudaMemcpyDeviceToDevice, s));
		CUDA(cudaEventRecord(e1, s));
		CUDA(cudaEventSynchronize(e1));
		if (i >= 3)
			CUDA(cudaEventElapsedTime(&t[i - 3], e0, e1));
	}
	CUDA(cudaEventDestroy(e0));
	CUDA(cudaEventDestroy(e1));
	CUDA(cudaFree(a));
	CUDA(cudaFree(b));
	return 2.0 * (double)n / (median(t, 10) * 1e-3) / 1e9;
}

/* One whole run: a replay of the graph, or eager launches without one. */
static void run_once(FgrtContext *ctx, cudaGraphExec_t exec)
{
	if (exec)
		CUDA(cudaGraphLaunch(exec, ctx->stream));
	else
		fg_program_run(ctx);
}

/* One whole run timed by events around it, in ms. */
static float time_run(FgrtContext *ctx, cudaGraphExec_t exec, cudaEvent_t e0, cudaEvent_t e1)
{
	float ms;
	CUDA(cudaEventRecord(e0, ctx->stream));
	run_once(ctx, exec);
	CUDA(cudaEventRecord(e1, ctx->stream));
	CUDA(cudaEventSynchronize(e1));
	CUDA(cudaEventElapsedTime(&ms, e0, e1));
	return ms;
}

/* exec: the program's graph, or NULL (--no-graph).  Three timings, each
 * the median of `runs`: the replayed graph (the headline total), eager
 * launches with no event between them, and each launch of eager runs
 * with an event recorded after every launch (which costs a little).  The
 * three take turns run by run, after 3 warm-ups of each: timed one after
 * the other, a matmul's later timings ran under lower clocks (the H200's
 * power cap sets in after a few tens of milliseconds of load), which made
 * the graph replay, timed second, look 5-13% slower than the eager
 * launches timed first (docs/performance.md v13). */
/* A JSON string of s (names are identifiers, kernels too: quotes and
 * backslashes escaped all the same). */
static void json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', f);
		if ((unsigned char)*s >= 0x20)
			fputc(*s, f);
	}
	fputc('"', f);
}

/* The timings of bench() as JSON, for `fgc report --measured FILE`:
 * written to FILE.tmp, then renamed, so no half-written FILE is left. */
static void bench_json(const char *path, int runs, float replay, float eager, double copy, double ideal,
		       const float *per_launch)
{
	const FgrtProgram *p = &fg_program;
	size_t n = strlen(path) + 5;
	char *tmp = (char *)malloc(n);
	if (!tmp)
		fgrt_fail("out of memory");
	snprintf(tmp, n, "%s.tmp", path);
	FILE *f = fopen(tmp, "w");
	if (!f)
		fgrt_fail("--bench-json %s: %s", path, strerror(errno));
	fputs("{\n  \"graph\": ", f);
	json_string(f, p->graph);
	fprintf(f, ",\n  \"runs\": %d,\n  \"replay_ms\": ", runs);
	if (replay >= 0)
		fprintf(f, "%.6f", replay);
	else
		fputs("null", f);
	fprintf(f, ",\n  \"eager_ms\": %.6f,\n  \"copy_gbs\": %.1f,\n  \"ideal_bytes\": %.0f,\n  \"inputs\": [",
		eager, copy, ideal);
	/* the sizes timed: fgc checks them against the plan it reports */
	for (int i = 0, k = 0; i < p->ntensors; i++) {
		const FgrtTensor *t = &p->tensors[i];
		if (!(t->role & (FGRT_INPUT | FGRT_PARAM)))
			continue;
		fputs(k++ ? ",\n    {\"name\": " : "\n    {\"name\": ", f);
		json_string(f, t->name);
		fputs(", \"shape\": [", f);
		for (int d = 0; d < t->rank; d++)
			fprintf(f, "%s%lld", d ? ", " : "", (long long)t->shape[d]);
		fputs("]}", f);
	}
	fputs("\n  ],\n  \"launches\": [", f);
	for (int i = 0; i < p->nlaunches; i++) {
		fprintf(f, "%s\n    {\"group\": %d, \"kernel\": ", i ? "," : "", p->launches[i].group);
		json_string(f, p->launches[i].kernel);
		fprintf(f, ", \"ms\": %.6f}", per_launch[i]);
	}
	fputs(p->nlaunches ? "\n  ]\n}\n" : "]\n}\n", f);
	if (fclose(f) != 0 || rename(tmp, path) != 0) {
		remove(tmp);
		fgrt_fail("--bench-json %s: %s", path, strerror(errno));
	}
	free(tmp);
}

static void bench(FgrtContext *ctx, cudaGraphExec_t exec, int runs, const char *json)
{
	const FgrtProgram *p = &fg_program;
	cudaEvent_t e0, e1;
	float *te = (float *)calloc((size_t)runs, sizeof *te), *tg = (float *)calloc((size_t)runs, sizeof *tg);
	float *per = (float *)calloc((size_t)runs * (size_t)(p->nlaunches + 1), sizeof *per);
	if (!te || !tg || !per)
		fgrt_fail("out of memory");
	double ideal = 0;
	for (int i = 0; i < p->ntensors; i++)
		if (p->tensors[i].role & (FGRT_INPUT | FGRT_PARAM | FGRT_OUTPUT | FGRT_SAVED))
			ideal += (double)fgrt_nbytes(&p->tensors[i]);
	double copy = copy_gbs(ctx->stream);
	CUDA(cudaEventCreate(&e0));
	CUDA(cudaEventCreate(&e1));
	/* each launch: the time between its mark and the one before */
	cudaEvent_t *marks = (cudaEvent_t *)calloc((size_t)p->nlaunches + 1, sizeof(cudaEvent_t));
	if (!marks)
		fgrt_fail("out of memory");
	for (int i = 0; i < p->nlaunches; i++)
		CUDA(cudaEventCreate(&marks[i]));
	for (int w = 0; w < 3; w++) {
		run_once(ctx, NULL);
		if (exec)
			run_once(ctx, exec);
	}
	for (int r = 0; r < runs; r++) {
		te[r] = time_run(ctx, NULL, e0, e1);
		if (exec)
			tg[r] = time_run(ctx, exec, e0, e1);
		if (p->nlaunches == 0)
			continue;
		ctx->marks = marks;
		CUDA(cudaEventRecord(e0, ctx->stream));
		fg_program_run(ctx);
		ctx->marks = NULL;
		CUDA(cudaEventSynchronize(marks[p->nlaunches - 1]));
		for (int i = 0; i < p->nlaunches; i++)
			CUDA(cudaEventElapsedTime(&per[(size_t)i * runs + r], i ? marks[i - 1] : e0, marks[i]));
	}
	const float eager = median(te, runs), ms = exec ? median(tg, runs) : eager;
	printf("bench %s: %d runs after 3 warm-ups, medians of CUDA-event times, the timings taking turns run by run\n",
	       p->graph, runs);
	printf("  per launch: eager runs, an event recorded after every launch\n");
	float *launch_ms = (float *)calloc((size_t)p->nlaunches + 1, sizeof *launch_ms);
	if (!launch_ms)
		fgrt_fail("out of memory");
	for (int i = 0; i < p->nlaunches; i++) {
		launch_ms[i] = median(&per[(size_t)i * runs], runs);
		printf("  launch %-2d group %-3d %-40s %10.4f ms\n", i, p->launches[i].group, p->launches[i].kernel,
		       launch_ms[i]);
	}
	if (exec)
		printf("  eager total %.4f ms: launched one by one, no events between launches\n", eager);
	double gbs = ideal / (ms * 1e-3) / 1e9;
	printf("  total %.4f ms (%s); ideal traffic %.1f MB (inputs read once, outputs and saved values written "
	       "once): %.0f GB/s, %.1f%% of copy bandwidth %.0f GB/s (floor %.4f ms)\n",
	       ms, exec ? "replay of one CUDA graph" : "eager launches, --no-graph", ideal / 1e6, gbs,
	       100.0 * gbs / copy, copy, ideal / (copy * 1e9) * 1e3);
	if (json)
		bench_json(json, runs, exec ? ms : -1.0f, eager, copy, ideal, launch_ms);
	free(launch_ms);
	for (int i = 0; i < p->nlaunches; i++)
		CUDA(cudaEventDestroy(marks[i]));
	free(marks);
	CUDA(cudaEventDestroy(e0));
	CUDA(cudaEventDestroy(e1));
	free(te);
	free(tg);
	free(per);
}

/* ------------------------------------------------------------ CUDA graph */

/* fg_program_run's launches, captured once into a graph and instantiated.
 * Called after an eager run: the cuBLASLt plans exist by then (their
 * heuristics are host work that must not run inside a capture) and every
 * kernel is loaded (lazy module loading must not happen inside one
 * either).  A launch whose configuration is refused fails here as it
 * would eagerly, through fgrt_launched. */
static cudaGraphExec_t capture(FgrtContext *ctx)
{
	cudaGraph_t graph;
	cudaGraphExec_t exec;
	CUDA(cudaStreamBeginCapture(ctx->stream, cudaStreamCaptureModeThreadLocal));
	fg_program_run(ctx);
	CUDA(cudaStreamEndCapture(ctx->stream, &graph));
	CUDA(cudaGraphInstantiate(&exec, graph, 0));
	CUDA(cudaGraphDestroy(graph));
	return exec;
}


/* ----------------------------------------------------------------- main */

static const char usage[] =
	"usage: %s [--inputs DIR [--draw-missing]] [--outputs DIR] [--seed S] [--check DIR [--plant KIND]] [--bench N]\n"
	"          [--bench-json FILE] [--no-graph]\n"
	"  --inputs DIR   read NAME.npy for each input and param; a missing one is an error that lists\n"
	"                 what DIR holds (without --inputs every input is drawn from the seed)\n"
	"  --draw-missing with --inputs: draw the inputs DIR has no file for, from the seed\n"
	"  --outputs DIR  write NAME.npy per output and saved.NAME.npy per @save value\n"
	"  --seed S       seed of drawn inputs (default 0), as `fgc run --seed S`\n"
	"  --check DIR    compare every output and saved value with DIR's .npy files; exit 1 on a mismatch\n"
	"                 (DIR/in-dtype/, from fgc run --in-dtype: the RMSE gate's baseline)\n"
	"  --plant KIND   with --check: put a bug into every value compared first (element, row,\n"
	"                 column or tile: one element, the last row, column or 64x64 tile off)\n"
	"  --bench N      time N runs after warm-up: medians of the graph replay, of eager launches and of\n"
	"                 each launch, GB/s\n"
	"  --bench-json FILE  with --bench: also write those timings to FILE as JSON, which\n"
	"                 `fgc report --measured FILE` puts beside its estimates\n"
	"  --no-graph     launch every run eagerly, each launch checked as it is made, instead of replaying\n"
	"                 one CUDA graph of the program (for debugging)\n";

typedef struct Options {
	const char *inputs, *outputs, *check;
	FgrtPlant plant;
	uint64_t seed;
	int bench;
	const char *bench_json;
	int no_graph;
	int draw_missing;
} Options;

static void parse(int argc, char **argv, Options *o)
{
	memset(o, 0, sizeof *o);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			printf(usage, argv[0]);
			exit(0);
		}
		if (!strcmp(a, "--no-graph")) {
			o->no_graph = 1;
			continue;
		}
		if (!strcmp(a, "--draw-missing")) {
			o->draw_missing = 1;
			continue;
		}
		static const char *const with_value[] = {"--inputs", "--outputs", "--check", "--seed", "--bench", "--plant",
							 "--bench-json"};
		int known = 0;
		for (size_t j = 0; j < sizeof with_value / sizeof with_value[0]; j++)
			known |= !strcmp(a, with_value[j]);
		if (!known)
			fgrt_fail("unknown option '%s' (see --help)", a);
		if (i + 1 >= argc)
			fgrt_fail("%s needs a value (see --help)", a);
		const char *v = argv[++i];
		char *end;
		if (!strcmp(a, "--inputs")) {
			o->inputs = v;
		} else if (!strcmp(a, "--outputs")) {
			o->outputs = v;
		} else if (!strcmp(a, "--check")) {
			o->check = v;
		} else if (!strcmp(a, "--bench-json")) {
			o->bench_json = v;
		} else if (!strcmp(a, "--plant")) {
			if ((o->plant = fgrt_plant_parse(v)) == FGRT_PLANT_NONE)
				fgrt_fail("--plant %s: expected element, row, column or tile", v);
		} else if (!strcmp(a, "--seed")) {
			errno = 0;
			o->seed = strtoull(v, &end, 10);
			if (errno || *end || !*v || *v == '-')
				fgrt_fail("--seed %s: expected an unsigned 64-bit integer", v);
		} else if (!strcmp(a, "--bench")) {
			errno = 0;
			long n = strtol(v, &end, 10);
			if (errno || *end || n < 1 || n > 100000)
				fgrt_fail("--bench %s: expected a number of runs from 1 to 100000", v);
			o->bench = (int)n;
		}
	}
	if (o->plant && !o->check)
		fgrt_fail("--plant needs --check (see --help)");
	if (o->bench_json && !o->bench)
		fgrt_fail("--bench-json needs --bench N (see --help)");
}

/* The binary's run of the model, as the options say; its exit status. */
static int run_main(int argc, char **argv)
{
	const FgrtProgram *p = &fg_program;
	Options o;
	struct stat st;
	char what[512];

	parse(argc, argv, &o);
	if (o.inputs && (stat(o.inputs, &st) != 0 || !S_ISDIR(st.st_mode)))
		fgrt_fail("cannot read inputs from '%s': %s", o.inputs, errno ? strerror(errno) : "not a directory");
	if (o.inputs && !o.draw_missing) {      /* before the device: a typo costs nothing */
		const char **names = (const char **)calloc((size_t)p->ninputs + 1, sizeof *names);
		static char msg[4096];
		if (!names)
			fgrt_fail("out of memory");
		for (int k = 0; k < p->ninputs; k++)
			names[k] = p->tensors[k].name;
		int missing = fgrt_inputs_missing(o.inputs, names, p->ninputs, msg, sizeof msg);
		free(names);
		if (missing)
			fgrt_fail("%s", missing < 0 ? "out of memory" : msg);
	}
	FgModel *m = fgrt_model_new(0);
	FgrtContext *ctx = &m->ctx;
	cudaStream_t stream;
	CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

	/* inputs: from files or drawn, then to the device; buffers for the
	 * outputs and saved values */
	void **ptrs = (void **)calloc((size_t)m->niface + 1, sizeof(void *));
	if (!ptrs)
		fgrt_fail("out of memory");
	for (int i = 0; i < m->niface; i++) {
		int t = m->iface[i];
		const FgrtTensor *tt = &p->tensors[t];
		size_t n = fgrt_nbytes(tt);
		snprintf(what, sizeof what, "%s '%s'", role_name(tt), tt->name);
		ptrs[i] = fgrt_dev_alloc(n, what);
		if (t >= p->ninputs)
			continue;
		void *h = malloc(n ? n : 1);
		if (!h)
			fgrt_fail("out of memory for %s '%s'", role_name(tt), tt->name);
		char *path = o.inputs ? path_of(o.inputs, "", tt->name) : NULL;
		if (path && (stat(path, &st) == 0 || errno != ENOENT))
			load_file(path, tt, h);
		else
			draw(tt, t, o.seed, h);
		free(path);
		CUDA(cudaMemcpy(ptrs[i], h, n, cudaMemcpyHostToDevice));
		free(h);
	}
	/* cudaMemcpy from pageable memory may return before its DMA lands,
	 * and the stream (non-blocking) does not wait for the legacy stream */
	CUDA(cudaDeviceSynchronize());

	/* One eager run, each launch checked as it is made; then, unless
	 * --no-graph, the graph, and the arena, scratch, outputs and saved
	 * values poisoned (0xff: NaN in every float type) so that what is read
	 * back is its replay's. */
	cudaGraphExec_t exec = NULL;
	fgrt_model_run(m, ptrs, stream);
	CUDA(cudaStreamSynchronize(stream));
	CUDA(cudaGetLastError());
	/* a run-time error (an index out of range, a zero divisor): the
	 * interpreter's message, and no output file */
	char fault[2048];
	if (fgrt_faults(ctx, fault, sizeof fault)) {
		fprintf(stderr, "%s\n", fault);
		return 1;
	}
	if (!o.no_graph && p->nlaunches > 0) {
		exec = capture(ctx);
		CUDA(cudaMemsetAsync(ctx->arena, 0xff, (size_t)p->arena_bytes, stream));
		CUDA(cudaMemsetAsync(ctx->scratch, 0xff, (size_t)p->scratch_bytes, stream));
		for (int i = 0; i < m->niface; i++)
			if (m->iface[i] >= p->ninputs)
				CUDA(cudaMemsetAsync(ptrs[i], 0xff, fgrt_nbytes(&p->tensors[m->iface[i]]), stream));
		CUDA(cudaGraphLaunch(exec, stream));
		CUDA(cudaStreamSynchronize(stream));
		CUDA(cudaGetLastError());
	}

	/* outputs and saved values: write, check */
	int bad = 0, checked = 0;
	if (o.outputs)
		make_dirs(o.outputs);
	for (int pass = 0; pass < 2; pass++)
		for (int t = 0; t < p->ntensors; t++) {
			const FgrtTensor *tt = &p->tensors[t];
			if (!(tt->role & (pass ? FGRT_SAVED : FGRT_OUTPUT)) || (!o.outputs && !o.check))
				continue;
			const char *prefix = pass ? "saved." : "";
			void *h = download(ctx, t);
			if (o.outputs) {
				char *path = path_of(o.outputs, prefix, tt->name);
				write_npy(path, tt, h);
				free(path);
			}
			if (o.check) {
				bad += check_one(o.check, prefix, tt, h, o.plant);
				checked++;
			}
			free(h);
		}
	if (o.check)
		printf("%s %s: %d of %d values match %s\n", bad ? "FAIL" : "ok", p->graph, checked - bad, checked, o.check);
	if (o.bench)
		bench(ctx, exec, o.bench, o.bench_json);
	if (exec)
		CUDA(cudaGraphExecDestroy(exec));

	for (int i = 0; i < m->niface; i++)
		CUDA(cudaFree(ptrs[i]));
	free(ptrs);
	fgrt_model_free(m);
	CUDA(cudaStreamDestroy(stream));
	return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	try {
		return run_main(argc, argv);
	} catch (FgrtError &e) {
		fprintf(stderr, "%s: error: %s\n", fg_program.graph, e.msg);
		fflush(stderr);
		return 1;
	}
}
