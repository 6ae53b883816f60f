/*
 * fgrt_model.h - the C ABI of a model that `fgc compile --lib` builds into
 * a shared library (the compiler copies this text into OUT/NAME.h, below
 * the model's own table of tensors).  C, and no CUDA header: a stream is a
 * void * (a cudaStream_t), a tensor a device pointer.
 *
 *   FgModel *m;
 *   if (fg_model_create(0, &m) != 0)
 *           fprintf(stderr, "%s\n", fg_model_error());
 *   void *ptrs[] = {x, w, y};       one device pointer per tensor below
 *   if (fg_model_run(m, ptrs, stream) != 0) ...
 *   fg_model_destroy(m);
 *
 * The library holds one program.  Its tensors, what a caller passes in and
 * gets back, are numbered 0 .. fg_model_ntensors() - 1: the inputs and
 * params in declaration order, then the outputs in `output` order, then
 * the saved values (@save) that are no outputs.  A model (fg_model_create)
 * owns the device memory the program needs between its tensors (one
 * arena, one scratch buffer, cuBLASLt's handle and workspace), allocated
 * once on the device it was created for.  fg_model_run enqueues the
 * program on the caller's stream, reading and writing the caller's
 * pointers (contiguous, C order, 256-byte aligned), and returns without
 * waiting: no allocation, no synchronization, no other stream, so a run
 * may be captured into the caller's CUDA graph once the model has run
 * once outside a capture (which makes its cuBLASLt plans and loads its
 * kernels).  One run at a time per model: its arena is the run's; two
 * models, each on its own thread and stream, do not interfere.
 *
 * Every call that can fail returns 0 or -1; after -1, fg_model_error()
 * says why in one line, for the calling thread.  Nothing exits or prints.
 */
#ifndef FGRT_MODEL_H
#define FGRT_MODEL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FG_MODEL_ABI 2          /* fg_model_abi() of this header's library */
#define FG_MODEL_MAX_RANK 8

/* dtypes, as FgrtDtype numbers them (FGRT_DTYPES, runtime/fgrt.h) */
enum {
	FG_MODEL_F32, FG_MODEL_F16, FG_MODEL_BF16, FG_MODEL_I32, FG_MODEL_BOOL, FG_MODEL_I8, FG_MODEL_U8,
	FG_MODEL_F8E4M3, FG_MODEL_F8E5M2
};

/* roles, a bit set: a value may be an output and saved */
enum { FG_MODEL_INPUT = 1, FG_MODEL_PARAM = 2, FG_MODEL_OUTPUT = 4, FG_MODEL_SAVED = 8 };

typedef struct FgModelTensor {
	const char *name;       /* as in the .fg */
	int dtype;              /* FG_MODEL_F32 ... */
	unsigned role;          /* FG_MODEL_INPUT ... */
	int rank;
	int64_t shape[FG_MODEL_MAX_RANK];
} FgModelTensor;

typedef struct FgModel FgModel;

/* FG_MODEL_ABI, for a caller to check the library against its header. */
int fg_model_abi(void);
/* The graph's name, and its tensors (no device needed). */
const char *fg_model_name(void);
int fg_model_ntensors(void);
int fg_model_tensor(int i, FgModelTensor *t);
/* A model on CUDA device `device`. */
int fg_model_create(int device, FgModel **model);
/* Enqueues one run on `stream` (NULL: the legacy default stream) with
 * ptrs[i] the device address of tensor i. */
int fg_model_run(FgModel *model, void *const *ptrs, void *stream);
/* Waits for the model's last run (its stream) and returns -1 when one of
 * its run-time checks failed (an index out of range, an integer divisor
 * of 0): fg_model_error() is then the located message the interpreter
 * gives (`model.fg:7:9: error: gather index ... at ids[3, 17]`, the
 * source line and a caret), and that run's results are not to be used.
 * A run does not check by itself: this is the one call that waits.  The
 * records live in the library, so models of one library on several
 * threads share them; check after a run whose model runs alone. */
int fg_model_check(FgModel *model);
/* Frees what create allocated (after the caller's work on it is done);
 * NULL is fine. */
void fg_model_destroy(FgModel *model);
/* Why the calling thread's last failed call failed. */
const char *fg_model_error(void);

#ifdef __cplusplus
}
#endif

#endif
