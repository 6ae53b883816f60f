/*
 * fgrt_lib.h - the runtime library's inside, for its own files and tests:
 * the error it throws, the model behind the C ABI (fgrt_model.h), and the
 * dtype facts.  C++ (nvcc), never included by generated code.
 *
 * Errors.  Whatever fails inside the runtime (a CUDA or cuBLASLt call, an
 * allocation, an argument it refuses) throws FgrtError with one line that
 * says what and why; the C ABI catches it and returns -1 with the line as
 * fg_model_error(), the standalone binary (fgrt_main.cu) prints it as
 * `GRAPH: error: LINE` and exits 1, a test catches it and goes on.
 */
#ifndef FGRT_LIB_H
#define FGRT_LIB_H

#include <cublasLt.h>
#include <cuda_runtime.h>

#include "fgrt.h"
#include "fgrt_model.h"
#include "fgrt_program.h"

struct FgrtError {
	char msg[2 * FGRT_ERRLEN];
};

/* Throws FgrtError with the formatted message. */
[[noreturn]] void fgrt_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void fgrt_cuda_check(cudaError_t e, const char *call, const char *file, int line);
void fgrt_lt_check(cublasStatus_t s, const char *call, const char *file, int line);
#define CUDA(call) fgrt_cuda_check((call), #call, __FILE__, __LINE__)
#define LT(call) fgrt_lt_check((call), #call, __FILE__, __LINE__)

/* Per FgrtDtype (FGRT_DTYPES, then FGRT_TF32): its name and size. */
extern const char *const fgrt_dtype_name[];
extern const size_t fgrt_dtype_size[];
int64_t fgrt_numel(const FgrtTensor *t);
size_t fgrt_nbytes(const FgrtTensor *t);
/* "f32[4096,1024]" into buf */
char *fgrt_type_str(char *buf, size_t n, const FgrtTensor *t);

/* A model: the program's context on one device.  ctx.ptr holds the arena
 * addresses of the values between groups; a run points the interface
 * tensors' entries (iface) at the caller's buffers. */
struct FgModel {
	FgrtContext ctx;
	int device;
	int warm;               /* has run once outside a capture */
	int *iface;             /* per interface tensor: its fg_program.tensors index */
	int niface;
};

/* fg_model_create and fg_model_run, throwing instead of returning -1. */
FgModel *fgrt_model_new(int device);
void fgrt_model_run(FgModel *m, void *const *ptrs, cudaStream_t stream);
void fgrt_model_free(FgModel *m);
/* cudaMalloc of n bytes (at least 1) for `what`, failing with how much was
 * asked and how much the device has free. */
void *fgrt_dev_alloc(size_t n, const char *what);
/* A cuBLASLt plan slot's resources. */
void fgrt_free_plan(FgrtGemmPlan *p);

#endif
