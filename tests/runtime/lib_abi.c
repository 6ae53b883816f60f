/*
 * lib_abi.c - a C program over the C ABI of libraries that `fgc compile
 * --lib` builds (runtime/fgrt_model.h), loaded with dlopen as a program
 * that holds several models would: each library's name and tensors, then
 * fg_model_create, which on a machine without a GPU must fail with -1 and
 * "no CUDA device", and with a GPU succeed; fg_model_run of NULL,
 * fg_model_create into NULL, fg_model_check of NULL and fg_model_tensor
 * past the end fail with their messages; with a GPU, a fresh model's
 * fg_model_check passes.  One line per
 * fact; exit status 1 when any is wrong.
 *
 *   lib_abi [--gpu|--no-gpu] LIB.so[:NAME,NAME,...] ...
 *
 * NAME,...: the tensor names the library must list, in order.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fgrt_model.h"

typedef struct Abi {
	int (*abi)(void);
	const char *(*name)(void);
	int (*ntensors)(void);
	int (*tensor)(int, FgModelTensor *);
	int (*create)(int, FgModel **);
	int (*run)(FgModel *, void *const *, void *);
	int (*check)(FgModel *);
	void (*destroy)(FgModel *);
	const char *(*error)(void);
} Abi;

static int bad;

static void expect(int ok, const char *lib, const char *what)
{
	printf("%s %s: %s\n", ok ? "PASS" : "FAIL", lib, what);
	bad |= !ok;
}

static void *sym(void *h, const char *lib, const char *name)
{
	void *p = dlsym(h, name);
	if (!p) {
		printf("FAIL %s: no symbol %s\n", lib, name);
		bad = 1;
	}
	return p;
}

int main(int argc, char **argv)
{
	int gpu = -1;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--gpu") || !strcmp(argv[i], "--no-gpu")) {
			gpu = !strcmp(argv[i], "--gpu");
			continue;
		}
		char path[4096], msg[4096];
		snprintf(path, sizeof path, "%s", argv[i]);
		char *names = strchr(path, ':');
		if (names)
			*names++ = '\0';
		void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		if (!h) {
			printf("FAIL %s: dlopen: %s\n", path, dlerror());
			bad = 1;
			continue;
		}
		Abi a;
		*(void **)&a.abi = sym(h, path, "fg_model_abi");
		*(void **)&a.name = sym(h, path, "fg_model_name");
		*(void **)&a.ntensors = sym(h, path, "fg_model_ntensors");
		*(void **)&a.tensor = sym(h, path, "fg_model_tensor");
		*(void **)&a.create = sym(h, path, "fg_model_create");
		*(void **)&a.run = sym(h, path, "fg_model_run");
		*(void **)&a.check = sym(h, path, "fg_model_check");
		*(void **)&a.destroy = sym(h, path, "fg_model_destroy");
		*(void **)&a.error = sym(h, path, "fg_model_error");
		if (bad)
			continue;
		/* what else it exports: nothing the runtime or the program uses inside */
		expect(!dlsym(h, "fg_program") && !dlsym(h, "fgrt_gemm") && !dlsym(h, "fgrt_launched"), path,
		       "exports the C ABI alone (no fg_program, fgrt_gemm, fgrt_launched)");
		snprintf(msg, sizeof msg, "ABI version %d", a.abi());
		expect(a.abi() == FG_MODEL_ABI, path, msg);
		int n = a.ntensors();
		char listed[2048] = "";
		FgModelTensor t;
		for (int k = 0; k < n; k++) {
			if (a.tensor(k, &t) != 0) {
				expect(0, path, a.error());
				break;
			}
			snprintf(listed + strlen(listed), sizeof listed - strlen(listed), "%s%s", k ? "," : "", t.name);
		}
		snprintf(msg, sizeof msg, "graph %s, %d tensors: %s", a.name(), n, listed);
		expect(!names || !strcmp(names, listed), path, msg);
		expect(a.tensor(n, &t) != 0 && strstr(a.error(), "no tensor"), path, a.error());
		expect(a.run(NULL, NULL, NULL) != 0 && strstr(a.error(), "no model"), path, a.error());
		expect(a.create(0, NULL) != 0 && strstr(a.error(), "no place for the model"), path, a.error());
		expect(a.check(NULL) != 0 && strstr(a.error(), "no model"), path, a.error());
		FgModel *m = NULL;
		int rc = a.create(0, &m);
		if (gpu == 0)
			expect(rc == -1 && !m && strstr(a.error(), "no CUDA device"), path, rc ? a.error() : "created");
		else if (gpu == 1)
			expect(rc == 0 && m, path, rc ? a.error() : "created on device 0");
		if (gpu == 1 && m)
			expect(a.check(m) == 0, path, "fg_model_check of a model that never ran: nothing failed");
		a.destroy(m);
		dlclose(h);
	}
	return bad;
}
