/*
 * nvcc.c - fgc compile: writes OUT.cu beside a temporary name and renames
 * it into place only when every group compiled (no partial output), then,
 * with --build, runs nvcc on it and the runtime's sources.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cuda.h"

/* The folder path goes into exists: compile writes files, never folders
 * (a mistyped -o is an error, not a new tree). */
static int check_parent(FgDiag *d, const char *path)
{
	char *p = strdup(path);
	struct stat st;
	int rc = 0;
	if (!p)
		return -1;
	char *slash = strrchr(p, '/');
	const char *dir = ".";
	if (slash == p)
		dir = "/";
	else if (slash) {
		*slash = '\0';
		dir = p;
	}
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
		fg_error(d, (FgLoc){0, 0}, "cannot write '%s': no folder '%s' (create it first)", path, dir);
		rc = -1;
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

/* nvcc on cu and the runtime's sources: the standalone binary o->out, or
 * with o->lib the shared library o->out (position-independent, nothing
 * exported but the C ABI of fgrt_model.h). */
static int build(const FgCudaOptions *o, const char *cu, FgDiag *d)
{
	static const char *const binary[] = {"fgrt_lib.cu", "fgrt_main.cu", "npy.c", "half.c", "check.c"};
	static const char *const library[] = {"fgrt_lib.cu"};
	const char *const *srcs = o->lib ? library : binary;
	int nsrcs = o->lib ? 1 : (int)(sizeof binary / sizeof binary[0]);
	char *rt = runtime_dir();
	const char *arch = o->arch ? o->arch : "sm_90a";
	const char *nvcc = getenv("NVCC");
	char gencode[128], inc[4200], paths[5][4200];
	if (!nvcc || !*nvcc)
		nvcc = on_path("nvcc") || !file_exists("/usr/local/cuda/bin/nvcc") ? "nvcc" : "/usr/local/cuda/bin/nvcc";
	snprintf(gencode, sizeof gencode, "-gencode=arch=compute_%s,code=%s", arch + 3, arch);
	snprintf(inc, sizeof inc, "-I%s", rt);
	for (int i = 0; i < nsrcs; i++)
		snprintf(paths[i], sizeof paths[i], "%s/%s", rt, srcs[i]);
	if (!file_exists(paths[0])) {
		fg_error(d, (FgLoc){0, 0}, "cannot find the runtime at '%s' (set FGC_RUNTIME to fgc's runtime/ folder)", rt);
		free(rt);
		return 1;
	}
	char *argv[24];
	int n = 0;
	argv[n++] = (char *)nvcc;
	argv[n++] = "-O3";
	argv[n++] = gencode;
	argv[n++] = inc;
	if (o->lib) {
		argv[n++] = "-shared";
		argv[n++] = "-Xcompiler";
		argv[n++] = "-fPIC,-fvisibility=hidden";
	}
	argv[n++] = "-o";
	argv[n++] = (char *)o->out;
	argv[n++] = (char *)cu;
	for (int i = 0; i < nsrcs; i++)
		argv[n++] = paths[i];
	argv[n++] = "-lcublasLt";
	argv[n] = NULL;
	int rc = run_command(argv);
	free(rt);
	if (rc != 0) {
		fg_error(d, (FgLoc){0, 0}, "nvcc failed (status %d) building '%s'", rc, o->out);
		return 1;
	}
	return 0;
}

/* Writes `path` through `write` into a temporary name, renamed into place
 * when everything was written: never a partial file.  The writer's error
 * count; 0 on success. */
static int write_file(const char *path, int (*write)(FILE *f, const void *arg, FgDiag *d), const void *arg,
		      FgDiag *d)
{
	size_t len = strlen(path) + 40;
	char *tmp = malloc(len);
	if (!tmp) {
		fg_error(d, (FgLoc){0, 0}, "out of memory writing '%s'", path);
		return 1;
	}
	snprintf(tmp, len, "%s.tmp.%ld", path, (long)getpid());
	int errors = 1;
	if (check_parent(d, path) != 0) {
		free(tmp);
		return 1;
	}
	FILE *f = fopen(tmp, "w");
	if (f) {
		errors = write(f, arg, d);
		int bad = ferror(f);
		if (fclose(f) != 0 || bad) {
			fg_error(d, (FgLoc){0, 0}, "cannot write '%s'", path);
			errors++;
		}
		if (!errors && rename(tmp, path) != 0) {
			fg_error(d, (FgLoc){0, 0}, "cannot write '%s': %s", path, strerror(errno));
			errors++;
		}
		if (errors)
			remove(tmp);
	} else {
		fg_error(d, (FgLoc){0, 0}, "cannot write '%s': %s", path, strerror(errno));
	}
	free(tmp);
	return errors;
}

typedef struct Emission {
	const FgPlan *plan;
	const char *source;
	FgGemmChoice gemm;
} Emission;

static int write_cu(FILE *f, const void *arg, FgDiag *d)
{
	const Emission *e = arg;
	return fg_cuda_emit(f, e->plan, e->source, e->gemm, d);
}

/* OUT/NAME.h of a library: the model's tensors by index, then the C ABI
 * (runtime/fgrt_model.h, copied). */
static int write_header(FILE *f, const void *arg, FgDiag *d)
{
	const FgPlan *plan = arg;
	const FgGraph *g = plan->g;
	char *rt = runtime_dir(), path[4200];
	snprintf(path, sizeof path, "%s/fgrt_model.h", rt);
	free(rt);
	FgSource abi;
	if (fg_source_read(g->arena, path, &abi) != 0) {
		d->nerrors++;
		return 1;
	}
	fprintf(f, "/*\n * The C ABI of graph %s as a library, written by `fgc compile --lib`; do not edit.\n"
		" * Its tensors, by fg_model_tensor index (the order of fg_model_run's pointers):\n", g->name);
	FG_VEC(int) iface = {0};
	for (int k = 0; k < g->ninputs; k++)
		fg_vec_push(g->arena, &iface, g->inputs[k]);
	for (int k = 0; k < g->noutputs; k++)
		fg_vec_push(g->arena, &iface, g->outputs[k]);
	for (int id = 0; id < g->nnodes; id++)
		if ((g->nodes[id].flags & FG_NF_SAVED) && !(g->nodes[id].flags & FG_NF_OUTPUT))
			fg_vec_push(g->arena, &iface, id);
	for (int i = 0; i < iface.n; i++) {
		const FgNode *n = &g->nodes[iface.v[i]];
		char ty[256];
		const char *role = n->op == FG_OP_INPUT ? "input" : n->op == FG_OP_PARAM ? "param" :
				   i < g->ninputs + g->noutputs ? "output" : "saved";
		fprintf(f, " *   %3d  %-24s %-24s %s\n", i, plan->names[iface.v[i]],
			fg_type_str(ty, sizeof ty, n->dt, &n->shape), role);
	}
	fprintf(f, " */\n#ifndef FG_MODEL_%s_H\n#define FG_MODEL_%s_H\n\n", g->name, g->name);
	fwrite(abi.text, 1, abi.len, f);
	fprintf(f, "\n/* graph %s's tensors, by index */\nenum {\n", g->name);
	for (int i = 0; i < iface.n; i++)
		fprintf(f, "\t%s_%s = %d,\n", g->name, plan->names[iface.v[i]], i);
	fprintf(f, "\t%s_NTENSORS = %d\n};\n\n#endif\n", g->name, iface.n);
	return 0;
}

/* OUT with a new ending: the folder of OUT and the stem of the .fg for a
 * library (out/libm.so -> out/m.cu), else OUT itself (out/m -> out/m.cu). */
static char *sibling(const FgCudaOptions *o, const char *ext)
{
	const char *slash = strrchr(o->out, '/'), *src = o->source ? o->source : "model.fg";
	const char *base = strrchr(src, '/') ? strrchr(src, '/') + 1 : src;
	size_t dir = o->lib && slash ? (size_t)(slash - o->out + 1) : 0;
	size_t stem = strlen(base) > 3 && !strcmp(base + strlen(base) - 3, ".fg") ? strlen(base) - 3 : strlen(base);
	size_t n = (o->lib ? dir + stem : strlen(o->out)) + strlen(ext) + 1;
	char *s = malloc(n);
	if (!s)
		return NULL;
	if (o->lib)
		snprintf(s, n, "%.*s%.*s%s", (int)dir, o->out, (int)stem, base, ext);
	else
		snprintf(s, n, "%s%s", o->out, ext);
	return s;
}

int fg_cuda_compile(const FgPlan *plan, const FgCudaOptions *o, FgDiag *d)
{
	char *cu = sibling(o, ".cu"), *h = o->lib ? sibling(o, ".h") : NULL;
	int rc = 1;
	if (!cu || (o->lib && !h)) {
		fg_error(d, (FgLoc){0, 0}, "out of memory");
		goto out;
	}
	if ((o->build || o->lib) && o->arch && !arch_ok(o->arch)) {
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
	Emission e = {plan, o->source ? o->source : "", gemm};
	if (write_file(cu, write_cu, &e, d) != 0 || (h && write_file(h, write_header, plan, d) != 0))
		goto out;
	rc = o->build || o->lib ? build(o, cu, d) : 0;
out:
	free(cu);
	free(h);
	return rc;
}
