/*
 * fgrt_program.h - the contract between a model.cu that `fgc compile`
 * writes and the runtime library (fgrt_lib.cu) linked beside it.
 *
 * The generated file defines `fg_program` (the tables: every tensor the
 * program touches, every launch in plan order, the arena and scratch sizes)
 * and `fg_program_run()`, which enqueues the launches on ctx->stream.  The
 * runtime owns everything else: it allocates the arena and the scratch,
 * fills ctx->ptr (one device pointer per entry of fg_program.tensors: the
 * caller's buffers for the inputs, params, outputs and saved values, the
 * arena for the values between groups) and calls fg_program_run; the
 * standalone binary (fgrt_main.cu) also loads or draws the inputs, and
 * reads back, writes and checks the outputs and saved values.
 *
 * Invariants: tensors[] lists the inputs and params first, in declaration
 * order (tensor i < ninputs is input number i of the Philox input stream),
 * then every value the plan writes to device memory, in node order; a
 * value's offset is its place in the arena (fg_pass_memplan), 256-byte
 * aligned.  Scratch is shared by the groups in turn (gemm results in f32,
 * the partials of full reductions): one group's scratch is dead when the
 * next group starts.  Compiled by nvcc only (C++), never by the compiler.
 *
 * fg_program_run only enqueues work on ctx->stream: kernel launches,
 * fgrt_gemm calls and fgrt_launched after each; no synchronization, no
 * allocation, no host reads of device memory, no other stream.  The
 * runtime runs it once eagerly, then captures it into a CUDA graph and
 * replays that graph (fgrt_main.cu), so it must also not depend on what
 * the arena or scratch holds when it starts: the runtime fills both with
 * 0xff bytes before the first replay.  The counters are the exception:
 * the runtime zeroes them once, when it allocates them, and every kernel
 * that counts on them (blocks arriving, the last of them finishing the
 * work: fga::attention's split keys, a split column or full reduction)
 * leaves them at 0 when it ends, so that a run finds them at 0 without a
 * memset of its own.  Like the arena, they are the model's: one run at a
 * time.
 */
#ifndef FGRT_PROGRAM_H
#define FGRT_PROGRAM_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime.h>

#include "fgrt.h"

#define FGRT_PROGRAM_MAX_RANK 8

typedef enum FgrtDtype {
#define X(id, name, size, npy) FGRT_##id,
	FGRT_DTYPES(X)                  /* fgrt.h */
#undef X
	FGRT_TF32,                      /* FgrtGemm.ab only: f32 operands that the
					   matmul may multiply as tf32 (fgc compile
					   --tf32) */
} FgrtDtype;

/* Roles, a bit set: a value may be an output and saved at once. */
enum {
	FGRT_INPUT = 1,                 /* input NAME : ... */
	FGRT_PARAM = 2,                 /* param NAME : ... (a weight when rank >= 2) */
	FGRT_OUTPUT = 4,                /* written as NAME.npy */
	FGRT_SAVED = 8,                 /* @save: written as saved.NAME.npy */
	FGRT_INTERMEDIATE = 16,         /* crosses a group boundary, nothing more */
};

typedef struct FgrtTensor {
	const char *name;
	FgrtDtype dtype;
	int rank;
	int64_t shape[FGRT_PROGRAM_MAX_RANK];
	unsigned role;                  /* FGRT_INPUT ... */
	int64_t offset;                 /* in the arena; -1 for inputs and params */
	int gate;                       /* --check's gate, FGRT_GATE_* bits
					   (compiler/gates.c): the RMSE gate (fed by
					   a reduction, a matmul or a value stored
					   and read back), at tf32's precision,
					   fed by a transcendental op;
					   fgrt_tolerance() gives the numbers */
} FgrtTensor;

typedef struct FgrtLaunch {
	const char *kernel;             /* the __global__ function, or "cublasLt" */
	int group;                      /* the plan's group */
	unsigned grid, block;           /* 0 for cuBLASLt calls */
} FgrtLaunch;

/* A run-time check of the program (an index out of range, an integer
 * zero divisor), for the host's message: `where: error: OP index V out of
 * range [-len, len) at NAME[i, j]` (kind FGRT_FAULT_INDEX, the position
 * among the indices) or `where: error: integer division by zero in 'OP' at
 * NAME[i, j]` (FGRT_FAULT_DIVISOR, the position in the result), then the
 * source line and a caret under column col.  The device keeps one
 * FgrtFaultRecord per check (fg_fault, runtime/fg_device.cuh): all 0xff
 * bytes is "nothing found", which fg_program_run sets before its work. */
enum { FGRT_FAULT_INDEX, FGRT_FAULT_DIVISOR };
typedef struct FgrtFault {
	int kind;                       /* FGRT_FAULT_* */
	const char *where;              /* "model.fg:7:9" */
	const char *line;               /* source line `where` points into */
	int col;
	const char *op;                 /* "gather" */
	const char *tensor;             /* the position's tensor, or NULL */
	int rank;
	int64_t shape[FGRT_PROGRAM_MAX_RANK];   /* ... its shape */
	int64_t len;                    /* FGRT_FAULT_INDEX: the axis's length */
} FgrtFault;
typedef struct FgrtFaultRecord {
	unsigned long long pos;         /* the lowest position found, or ~0 */
	long long value;                /* the value found there */
	unsigned lock, pad;             /* 0xffffffff: free */
} FgrtFaultRecord;

typedef struct FgrtProgram {
	const char *graph;              /* graph NAME */
	const char *source;             /* the .fg it came from */
	const FgrtTensor *tensors;
	int ntensors, ninputs;
	const FgrtLaunch *launches;
	int nlaunches;
	int ngroups;
	int ngemms;                     /* cuBLASLt calls, each with a plan slot */
	int64_t arena_bytes;            /* fg_pass_memplan's planned size */
	int64_t scratch_bytes;
	int64_t counters;               /* arrival counters (unsigned), zero */
	const int *outputs;             /* the outputs' tensors, in `output` order */
	int noutputs;
	const FgrtFault *faults;        /* the run-time checks, in graph order */
	int nfaults;
	FgrtFaultRecord *(*fault_records)(void);        /* their device records */
} FgrtProgram;

/* cuBLASLt's fused epilogues, applied to the f32 accumulator before D is
 * rounded to its type.  BIAS adds bias[j] to every D[i,j] (one value per
 * column of the row-major D: a Linear layer's bias, length n).  GELU is
 * cuBLASLt's, the tanh approximation 0.5x(1 + tanh(sqrt(2/pi)(x +
 * 0.044715x^3))), not the erf form of fg_gelu.  The AUX forms also write
 * aux: GELU_AUX the GELU input (after the bias) in D's type, RELU_AUX a bit
 * mask, bit i*ld_aux + j set where the ReLU input was positive (within a
 * rounding of zero it may disagree with D: docs/runtime.md). */
typedef enum FgrtEpilogue {
	FGRT_EP_NONE,                   /* zero: a plain matmul */
	FGRT_EP_BIAS,
	FGRT_EP_RELU,
	FGRT_EP_RELU_BIAS,
	FGRT_EP_GELU,
	FGRT_EP_GELU_BIAS,
	FGRT_EP_RELU_AUX,
	FGRT_EP_RELU_AUX_BIAS,
	FGRT_EP_GELU_AUX,
	FGRT_EP_GELU_AUX_BIAS,
} FgrtEpilogue;

/* One matmul for cuBLASLt, row-major: D[m,n] = A[m,k] B[k,n], batched.  A
 * stored transposed is [k,m] (a transpose of its last two axes read as a
 * layout), B transposed [n,k].  `batch` matrices are one strided call;
 * the outer batch dims, which no single stride describes (broadcast
 * batches), are looped on the host.  Strides count elements; 0 repeats an
 * operand across a batch dim.
 *
 * The fields after outer_d describe an epilogue (fgrt_gemm_ep); all zero
 * is none, so a table written before they existed means a plain matmul.
 * The bias is in D's type (cuBLASLt's rule outside fp8: on cuBLASLt 13.0
 * an f32 bias for a bf16 or f16 D, or a bf16/f16 bias for an f32 D, is
 * refused with CUBLAS_STATUS_INVALID_VALUE).  The bias and aux tensors
 * move with D's batch dims by their own strides (0: one bias for every
 * matrix).  aux is row-major [m, ld_aux] per matrix: for GELU_AUX ld_aux
 * counts elements, a multiple of 8 and at least n; for RELU_AUX it counts
 * bits, a multiple of 128 and at least n (stride_aux and outer_aux
 * too).  residual 1 adds a tensor C laid out as D (D's type, strides and
 * batch) to the product, D = A B + C (+ bias), in f32 and rounded once:
 * cuBLASLt's beta = 1, with fgrt_gemm_ep's c; only with FGRT_EP_NONE or
 * FGRT_EP_BIAS (where cuBLASLt puts C against an activation is not
 * relied on).  C may be D itself. */
typedef struct FgrtGemm {
	FgrtDtype ab, d;                /* operand and result types */
	int64_t m, n, k;
	int trans_a, trans_b;
	int64_t batch, stride_a, stride_b, stride_d;
	int nouter;
	int64_t outer_n[FGRT_PROGRAM_MAX_RANK];
	int64_t outer_a[FGRT_PROGRAM_MAX_RANK], outer_b[FGRT_PROGRAM_MAX_RANK],
		outer_d[FGRT_PROGRAM_MAX_RANK];
	FgrtEpilogue epilogue;          /* FGRT_EP_NONE ... */
	int64_t stride_bias;            /* per matrix of the strided batch */
	int64_t ld_aux, stride_aux;     /* aux's row pitch and batch stride */
	int64_t outer_bias[FGRT_PROGRAM_MAX_RANK], outer_aux[FGRT_PROGRAM_MAX_RANK];
	int residual;                   /* 1: D = A B + C (+ bias) */
} FgrtGemm;

typedef struct FgrtGemmPlan FgrtGemmPlan;      /* the runtime's, per slot */

typedef struct FgrtContext {
	const FgrtProgram *prog;
	void **ptr;                     /* per tensor: its device address */
	char *arena, *scratch;
	unsigned *counters;             /* prog->counters, zeroed once */
	cudaStream_t stream;
	void *lt;                       /* cublasLtHandle_t */
	void *workspace;                /* cuBLASLt's */
	size_t workspace_bytes;
	FgrtGemmPlan **gemm;            /* per gemm slot, made at first use */
	cudaEvent_t *marks;             /* NULL, or one event per launch to time
					   groups: recorded after each launch */
} FgrtContext;

/* The generated file's. */
extern const FgrtProgram fg_program;
void fg_program_run(FgrtContext *ctx);

/* The runtime's, for the generated code: a cuBLASLt matmul (every status
 * checked) and the check after launch number `i` of fg_program.launches.
 * fgrt_gemm_ep is the same with g->epilogue applied: bias (g->n values
 * per matrix; NULL unless the epilogue adds one), aux (NULL unless it is
 * an AUX form) and c (NULL unless g->residual).  fgrt_gemm(...) is
 * fgrt_gemm_ep(..., NULL, NULL, NULL).  A
 * slot's plan (descriptors and algorithm) is made at its first call, so
 * every call of one slot must pass the same g. */
void fgrt_gemm(FgrtContext *ctx, int slot, const FgrtGemm *g, const void *a,
	       const void *b, void *d);
void fgrt_gemm_ep(FgrtContext *ctx, int slot, const FgrtGemm *g, const void *a,
		  const void *b, void *d, const void *bias, void *aux, const void *c);
void fgrt_launched(FgrtContext *ctx, int i);
/* After a run (synchronizes ctx->stream): 0 when no run-time check of the
 * program failed; else 1, with the first failure in graph order written
 * into msg (n bytes) as the interpreter reports it: `file:line:col: error:
 * ...`, the source line, a caret. */
int fgrt_faults(FgrtContext *ctx, char *msg, size_t n);

/* For the generated matmul and attention kernels (fg_gemm_sm90.cuh,
 * fg_attn_sm90.cuh): a CUDA call's failure as the runtime reports one, and
 * a tensor map (CUtensorMap, 64 bytes at map) of a 3-d tensor at base (f16,
 * bf16, f32 (also for FGRT_TF32), or a 1-byte type as bytes): dims
 * innermost first, the two outer pitches in bytes, a box of box[] elements;
 * 128-byte swizzle. */
void fgrt_cuda(cudaError_t e, const char *call);
/* cudaFuncSetAttribute(fn, attr, value) on the current device, unless
 * done[device] says it was (done: FGRT_DEVICES entries, one array per
 * kernel and attribute, zero at first): a kernel that takes more than 48
 * KiB of shared memory, or a cluster past the portable 8, asks once per
 * device, not before every launch.  A device index past the array fails
 * as fgrt_cuda does.  Returns the device's multiprocessors (asked once per
 * device), which a persistent kernel's grid takes. */
enum { FGRT_DEVICES = 64 };
int fgrt_func_attr(const void *fn, cudaFuncAttribute attr, int value, unsigned char *done);
void fgrt_tmap(void *map, const void *base, FgrtDtype dt, const uint64_t dims[3], const uint64_t pitch[2],
	       const uint32_t box[3]);

#endif
