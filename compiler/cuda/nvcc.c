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
