/*
 * cuda.h - the CUDA backend's own header: its types, then a section per
 * source file of compiler/cuda/, as compiler/fg.h is for the compiler.
 *
 * The backend writes a fusion plan as one CUDA C++ file: a __global__
 * kernel per group (two for a reduction over all axes or split into slabs,
 * a functor for the generated matmul), then the program table and
 * fg_program_run(), which the runtime library (runtime/fgrt_lib.cu, contract
 * in runtime/fgrt_program.h) calls.  The pieces:
 *
 *   text.c       formatting, literals, the dtypes' CUDA names
 *   kernel.c     a kernel's text in scopes, its signature, comment and
 *                launches
 *   index.c      index arithmetic: coordinates, flat indices, lanes
 *   gen.c        a value at an index, as C expressions; loads
 *   store.c      stores, vectorized where the lanes allow
 *   reduction.c  what row and other-axes reductions share
 *   loop.c rowreduce.c reduce.c gemm.c scan.c topk.c
 *                one file per group kind: its kernel and launches
 *   program.c    the kind table, the tensor and launch tables, fg_program_run
 *   nvcc.c       fgc compile: the file, then nvcc
 *
 * Invariants: the output depends on the plan alone (no addresses, no hash
 * order), so the same model gives the same bytes; everything is allocated
 * from the graph's arena.
 */
#ifndef FG_CUDA_H
#define FG_CUDA_H

#include <stdarg.h>

#include "fg.h"

#define MAXLV 6                 /* scope levels */
#define LOOP_BLOCK 256          /* threads per block of loop and reduce kernels */
#define MAX_GRID (1 << 20)      /* blocks of a grid-stride loop */
#define FULL_BLOCKS 1024        /* partials of a reduction over all axes */
#define MAX_LANES 8             /* elements per thread of a vectorized kernel */
#define LANES_ISSUE 32          /* instructions a byte past which a loop takes one
				   element a thread (cu_issue_per_byte, loop.c) */
#define SMS FG_SMS              /* the H200's multiprocessors: a grid that fills
				   them all has at least this many blocks */
#define ROW_SMEM (96 << 10)     /* shared memory a row kernel's block may hold:
				   two such blocks to a multiprocessor (of its
				   228 KiB; one block of 128 KiB held a 131,072
				   f16 row at 49% of the memory floor, two of 64
				   KiB at 64%: docs/performance.md v7) */
#define ROW_SMEM_PART (32 << 10) /* ... and each block of a cluster of 2 or 4
				   (rowreduce.c row_parts) */
#define SM_THREADS FG_SM_THREADS /* threads a multiprocessor holds at most ... */
#define SM_REGS 65536           /* ... and registers it has (32 each for that many) */
#define ROW_CLUSTER 16          /* blocks of a cluster on one row, at most (the
				   Hopper limit: past 8, the portable size, the
				   kernel allows it with an attribute) */

/* X(ID, name): every path the emitter can take, its code paths by index
 * width, kind, strategy, tile and schedule, and epilogue.  A group's
 * kernel header names the paths it took (cu_path), and the .cu ends with
 * the program's; tests/run-coverage.sh fails when a path of this table
 * has no GPU test graph reaching it (extend both as kinds land). */
#define CU_PATHS(X)                                                                     \
	X(INDEX32, "index.i32")                 /* 32-bit indices */                    \
	X(INDEX64, "index.i64")                 /* some index reaches 2^31 */           \
	X(LOOP, "loop")                         /* a thread an element */               \
	X(LOOP_LANES, "loop.lanes")             /* several elements a thread, vector accesses */ \
	X(LOOP_COMPUTE, "loop.compute")         /* a thread an element: arithmetic-bound (LANES_ISSUE) */ \
	X(ROW_WARP, "rowreduce.registers.warp") /* the row in a warp's registers */     \
	X(ROW_LANES, "rowreduce.registers.lanes") /* ... in some lanes', rows to a warp */ \
	X(ROW_ROWS, "rowreduce.registers.rows") /* ... several rows a thread, in turn */ \
	X(ROW_BLOCK, "rowreduce.registers.block") /* ... in a block's */                \
	X(ROW_PACKED, "rowreduce.registers.packed") /* parameter rows packed through the row loop */ \
	X(ROW_SMEM, "rowreduce.smem")           /* a block a row, read once into shared memory */ \
	X(ROW_CLUSTER, "rowreduce.cluster")     /* a cluster a row, each block a part */ \
	X(ROW_STREAM, "rowreduce.stream")       /* a block a row, streamed a pass */    \
	X(ROW_STREAM_CLUSTER, "rowreduce.stream.cluster") /* a cluster a row, each block a part */ \
	X(RED_COLS, "reduce.cols")              /* a thread a result element */         \
	X(RED_SPLIT1, "reduce.split")           /* blocks over result columns, one slab */ \
	X(RED_SLABS, "reduce.split.slabs")      /* ... slabs into scratch, the last block combines */ \
	X(RED_ALL, "reduce.all")                /* partials, the last block combines */ \
	X(SCAN_BLOCK, "scan.block")             /* a block a row, tile by tile with a carry */ \
	X(SCAN_PARTS, "scan.parts")             /* a block a part of a row: totals, then the scan */ \
	X(TOPK_REGISTERS, "topk.registers")     /* a block a row, held in registers, k rounds */ \
	X(TOPK_STREAM, "topk.stream")           /* ... the row read again each round */ \
	X(GEMM_I32, "gemm.i32")                 /* a thread an element into scratch */  \
	X(GEMM_F8, "gemm.f8")                   /* the same, f8 operands, f32 sums */   \
	X(GEMM_LT, "gemm.cublaslt")             /* straight into the result */          \
	X(GEMM_LT_TF32, "gemm.cublaslt.tf32")   /* f32 operands as tf32 */              \
	X(GEMM_LT_BIAS, "gemm.cublaslt.BIAS")                                           \
	X(GEMM_LT_RELU, "gemm.cublaslt.RELU")                                           \
	X(GEMM_LT_RELU_BIAS, "gemm.cublaslt.RELU_BIAS")                                 \
	X(GEMM_LT_GELU, "gemm.cublaslt.GELU")                                           \
	X(GEMM_LT_GELU_BIAS, "gemm.cublaslt.GELU_BIAS")                                 \
	X(GEMM_LT_GELU_AUX, "gemm.cublaslt.GELU_AUX")                                   \
	X(GEMM_LT_GELU_AUX_BIAS, "gemm.cublaslt.GELU_AUX_BIAS") /* (ReLU's AUX, a bit mask, unused) */ \
	X(GEMM_LT_RESIDUAL, "gemm.cublaslt.C")  /* a residual added as C (beta 1) */    \
	X(GEMM_LT_SCRATCH, "gemm.cublaslt.scratch") /* into f32 scratch, then an epilogue kernel */ \
	X(GEMM_COOP_64x256, "gemm.fgc.cooperative.64x256") /* the generated matmul */   \
	X(GEMM_PP_128x128, "gemm.fgc.pingpong.128x128")                                 \
	X(GEMM_PP_64x128, "gemm.fgc.pingpong.64x128")                                   \
	X(GEMM_PP_64x64, "gemm.fgc.pingpong.64x64")                                     \
	X(GEMM_FGC_TF32, "gemm.fgc.tf32")                                               \
	X(ATTN_D64, "attention.d64")            /* the flash kernel, head dim 64 */     \
	X(ATTN_D128, "attention.d128")          /* ... 128 */                           \
	X(ATTN_D256, "attention.d256")          /* ... 256 */                           \
	X(ATTN_SPLIT, "attention.split")        /* the keys split across blocks, then a combine */ \
	X(ATTN_KEYS176, "attention.keys176")    /* key tiles of 176 (D = 128, bare scores) */ \
	X(ATTN_KEPT, "attention.kept")          /* a mask's kept tiles without its compare */ \
	X(ATTN_STAGED, "attention.staged")      /* a score operand's tiles by TMA beside K */ \
	X(ATTN_PERSIST, "attention.persistent") /* a block a multiprocessor, query tiles in turn */

typedef enum CuPath {
#define X(id, name) CU_PATH_##id,
	CU_PATHS(X)
#undef X
	CU_PATH_COUNT
} CuPath;

/* ---------------------------------------------------------------- types */

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
 * by element.  cu_load() and cu_store_lanes() turn lanes that sit side by side
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
	int id;                 /* the node, or -1 for a value keyed by its text
				   alone: R a reciprocal, I a checked index, U a
				   stored value's unrounded form (gen.c) */
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

/* How fg_program_run runs a group (program.c): the step function of the
 * group whose code it shares (owner, its own when none), on the tensors
 * at `tensors` of the step table, with its plan slot and first launch. */
typedef struct Step {
	int owner;
	int tensors;            /* offset in the tensor-index table */
	int slot, launch;
	const char *code;       /* the owner's: its step function */
	int *pick;              /* the owner's: which of its params the code
				   names (indices into Emit.params, in order) */
	int npick;
} Step;

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
	int min_blocks;         /* __launch_bounds__'s blocks a multiprocessor
				   (ptxas keeps to SM_REGS / (min_blocks *
				   block) registers), or 0 */
	const char *attrs;      /* after __launch_bounds__ (__cluster_dims__), or NULL */
	int widen_at_use;       /* a lane stored narrower than f32 and loaded
				   outside the innermost scope is widened where
				   it is used (gen.c, cu_load; rowreduce.c) */
	/* A row kernel that keeps its row in shared memory (rowreduce.c):
	 * a read loaded at the space's flat index stage_lin is loaded from
	 * memory by the first pass that needs it, which also puts it at
	 * stage_off of its array in shared memory, and from there by every
	 * later pass. */
	const char *stage_lin, *stage_off;
	int64_t stage_len;      /* elements of a row part: each array's length */
	const char **stage_sm;  /* per read: its array, once one pass put it there */
	unsigned char *staged;  /* per read: put there by a pass already closed */
	int64_t smem;           /* bytes of the arrays (dynamic shared memory) */
	/* An attention score functor whose operand st_id (a read, -1: none)
	 * the kernel stages in shared memory (attention.c): a load of it at
	 * st_at, the functor's pair (z, r, c) broadcast to its shape, reads
	 * the pair through the functor's argument st_. */
	int st_id;
	Ix st_at;
	/* An attention score functor's last factor that the kernel applies as
	 * its scale (attention.c, ScoreFold), or -1: its value is that of
	 * unscaled_to, its other operand. */
	int unscaled, unscaled_to;
	int failed;
} Kern;

typedef struct Launch {
	const char *kernel;
	int group;
	int64_t grid, block;
	FgLaunchShape shape;    /* a kernel of fgc's own (cu_add_launch_smem),
				   else grid 0 */
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
	FG_VEC(const char *) gemms;     /* FgrtGemm initializers, one per slot */
	FG_VEC(const char *) gemm_notes;/* ... and the matmul each is for */
	/* the group being written: */
	FG_VEC(const char *) run;       /* the statements that launch its work */
	FG_VEC(int) params;             /* the tensors they name (cu_tensor_param) */
	int launch0;                    /* its first launch */
	int slot;                       /* its cuBLASLt plan slot, or -1 */
	Step *steps;                    /* per group: how fg_program_run runs it */
	int64_t scratch;
	int64_t counters;               /* arrival counters (ctx->counters), the most a group takes */
	FgGemmChoice gemm;
	int errors;
	/* One kernel per distinct group (program.c): a group is first written
	 * under canonical names into `key`; a group whose key an earlier one
	 * has launches that one's kernels, and its own text is dropped. */
	int canon;              /* writing the key: names by position (cu_name),
				   text into key, no comments */
	FG_VEC(char) key;
	int quiet;              /* text dropped: the group runs another's kernels */
	int *local;             /* per node, while its group is written: its
				   position among the members (i + 1) or the
				   reads (-(r + 1)), 0 elsewhere */
	int *owner;             /* per group: the group whose kernels it runs */
	int *sharers;           /* per group: how many groups run its kernels */
	int *kernels;           /* per group: whether it writes kernels */
	int *nlaunch;           /* per group: its launches (kernels and cuBLASLt calls) */
	int64_t *max_grid;      /* per group: the most blocks of one of its kernel launches (0: none) */
	FgLaunchShape *shape;   /* ... that launch's shape, where fgc's own */
	int64_t *scratch_io;    /* per group: bytes it moves beyond reading its reads and
				   writing its writes once: scratch written and read
				   back (cu_use_scratch), rows read again (cu_reread) */
	FG_VEC(int) step_tensors;       /* the steps' tensor indices (program.c) */
	/* Run-time checks (gather and take_along_axis indices, integer
	 * divisors): per node, its check's record in fg_faults[], or -1;
	 * numbered in node order (program.c). */
	int *fault;
	FG_VEC(int) faults;             /* the checked nodes, in that order */
	const FgSource *src;            /* the .fg text, for their messages */
	uint64_t paths;                 /* CU_PATH_* bits the program took */
	uint64_t *group_paths;          /* ... per group */
};

typedef struct RedInfo {
	FgShape S;              /* the reductions' input shape: the space */
	uint32_t axes;          /* reduced axes of S */
	FgShape kept, red;      /* S's kept and reduced dims, in order */
	int64_t nkept, nred;
} RedInfo;

/* ------------------------------------------------ compiler/cuda/text.c */

char *cu_vfmt(FgArena *a, const char *fmt, va_list ap);
char *cu_fmt(FgArena *a, const char *f, ...) FG_PRINTF(2, 3);
int cu_is_ident_char(char c);
int cu_simple(const char *s);
const char *cu_paren(FgArena *a, const char *s);
const char *cu_c_string(FgArena *a, const char *s);
const char *cu_in_comment(FgArena *a, const char *s);
int cu_uses(const char *s, const char *id);
const char *cu_literal(FgArena *a, FgDtype dt, double v);
const char *cu_shape_str(FgArena *a, FgDtype dt, const FgShape *s);

/* ---------------------------------------------- compiler/cuda/kernel.c */

void cu_out(Emit *E, const char *fmt_, ...) FG_PRINTF(2, 3);
void cu_kern_error(Kern *k, int id, const char *fmt_, ...) FG_PRINTF(3, 4);
void cu_kline(Kern *k, int lv, const char *def, const char *f, ...) FG_PRINTF(4, 5);
const char *cu_fresh(Kern *k, int lv, const char *base);
void cu_kopen(Kern *k);
void cu_kclose(Kern *k, const char *head);
void cu_drop_unused(Kern *k, Lines *ls);
const FgShape *cu_shape_of(const Kern *k, int id);
int64_t cu_numel(const FgShape *s);
int cu_is_member(const Kern *k, int id);
const char *cu_name(const Kern *k, int id);
const char *cu_kname(const Kern *k, const char *suffix);
const char *cu_tensor_param(const Kern *k, int id);
void cu_kern_init(Kern *k, Emit *E, int gi);
void cu_kern_done(Kern *k);
void cu_emit_comment(Emit *E, int gi, const char *what);
/* Records that group gi's code takes path p (its header names it). */
void cu_path(Emit *E, int gi, CuPath p);
/* The path of that name (a bug when there is none). */
CuPath cu_path_named(const char *name);
/* The names of the paths in mask, space-separated. */
const char *cu_path_names(FgArena *a, uint64_t mask);
const char *cu_emit_kernel(Kern *k, const char *name, int block, const Param *extra, int nextra,
			       int with_writes);
/* Scratch of bytes for group gi: the buffer grows to it, and the group's
 * traffic counts it written and read back once. */
void cu_use_scratch(Emit *E, int gi, int64_t bytes);
/* n arrival counters (ctx->counters, unsigned, zero when a launch starts
 * and left so when it ends): the buffer grows to n.  Groups share it. */
void cu_use_counters(Emit *E, int64_t n);
/* Group gi reads bytes a second (third...) time: a row streamed once a
 * pass; its traffic counts them. */
void cu_reread(Emit *E, int gi, int64_t bytes);
void cu_add_call(Emit *E, const char *kernel, int gi, int64_t grid, int64_t block, const char *line);
void cu_add_launch(Emit *E, const char *kernel, int gi, int64_t grid, int64_t block, const char *args);
const char *cu_func_attr(Emit *E, const char *kernel, const char *attr, int64_t value);
void cu_add_launch_smem(Emit *E, const char *kernel, int gi, int64_t grid, int64_t block, int64_t smem, int cluster,
			const char *args);
int cu_add_gemm(Emit *E, const char *def, const char *note);
int64_t cu_grid_for(int64_t n, int64_t block);
const char *cu_stride_loop(Kern *k, const char *v, int64_t n);
int cu_sink(const Kern *k);
int cu_lane_width(const Kern *k, int64_t inner, int regs);
double cu_issue_per_byte(const Kern *k);

/* ----------------------------------------------- compiler/cuda/index.c */

Ix cu_ix_from_lin(Kern *k, const FgShape *s, const char *lin, int lv, const char *prefix);
const char *cu_ix_linear(Kern *k, const Ix *x, const FgShape *s);
int cu_ix_level(const Ix *x, const FgShape *s);
Ix cu_ix_bcast(const Ix *x, const FgShape *fs, const FgShape *to);
void cu_lane_coords(Kern *k, Ix *x);
Ix cu_lane0(Kern *k, const Ix *x);
int cu_lanes_contiguous(const Ix *x, const FgShape *s);
const char *cu_write_cond(Kern *k, const Ix *x, const FgShape *fs, const FgShape *to);
Ix cu_ix_reshape(Kern *k, const Ix *x, const FgShape *fs, const FgShape *ts);
int cu_innermost(const FgShape *s);
Ix cu_lane_of(Kern *k, const Ix *x, int vd, int vw, int l);
Ix cu_ix_pair(Kern *k, const FgShape *os);

/* ------------------------------------------------- compiler/cuda/gen.c */

const char *cu_memo_key(Kern *k, int id, const Ix *x);
Val cu_load(Kern *k, int id, const Ix *x);
/* expr, an int, wrapped into i8 or u8 as the interpreter's fg_wrap_int
 * (other dtypes: expr itself). */
const char *cu_wrap_int(FgArena *a, FgDtype dt, const char *expr);
Val cu_gen(Kern *k, int id, const Ix *x);
const char *cu_stored_form(Kern *k, Val v, FgDtype dt);

/* ----------------------------------------------- compiler/cuda/store.c */

void cu_store(Kern *k, int w, const Ix *x, const char *cond, const char *extra_cond);
void cu_store_lanes(Kern *k, int w, const Ix *xs, const char *const *conds, const char *extra_cond);

/* ------------------------------------------- compiler/cuda/reduction.c */

const char *cu_acc_type(const Kern *k, const FgNode *n);
const char *cu_red_functor(const FgNode *n);
/* A reduction's accumulator at its start (FG_REDUCTIONS' identity). */
const char *cu_red_init(const Kern *k, const FgNode *n);
const char *cu_red_step(Kern *k, const FgNode *n, const char *acc, const char *v, const Ix *x);
const char *cu_red_combine(Kern *k, const FgNode *n, const char *acc, const char *other);
const char *cu_red_final(Kern *k, const FgNode *n, const char *acc, int64_t count);
Ix cu_merge_ix(const RedInfo *ri, const Ix *kc, const Ix *rc, const char *lin, int lin_lv);
Ix cu_result_ix(const Kern *k, const RedInfo *ri, int id, const Ix *kc, const char *lin, int lv);
unsigned char *cu_after_reduction(Kern *k);
void cu_declare_reds(Kern *k, int lv, int pass, const int *passes);
void cu_accumulate(Kern *k, const Ix *x, int pass, const int *passes);
void cu_collect_reds(Kern *k);
int cu_red_passes(Kern *k, int *passes);
int cu_group_reductions(Kern *k, RedInfo *ri, const char *what);
const char *cu_row_desc(Emit *E, const RedInfo *ri, const char *how);
void cu_store_reduced(Kern *k, int first, const unsigned char *dep, const Ix *at,
			  const char *extra_cond);
void cu_store_space(Kern *k, const RedInfo *ri, int first, const unsigned char *dep, const Ix *xs, int nl,
			const char *extra_cond);
int cu_writes_space(const Kern *k, int first, const unsigned char *dep);

/* ------------------------------------------------- the group kinds */

/* A group kind's emitter: writes group k's kernels (through E) and adds
 * its launches; on a group it cannot compile it reports why and sets
 * k->failed.  One per kind, cu_emit_KIND in compiler/cuda/KIND.c, found
 * through FG_GROUP_KINDS (program.c): a new kind is a file and a row. */
typedef void CuEmitFn(Emit *E, Kern *k);
#define X(id, stem, fill, border) CuEmitFn cu_emit_##stem;
FG_GROUP_KINDS(X)
#undef X

/* ------------------------------------------------ compiler/cuda/gemm.c */

/* Batch strides (st[0..nb), elements) of an operand of shape s, matrices
 * of mat elements, against the output's batch dims bn[0..nb): 0 where it
 * broadcasts (attention.c reads K and V so, in matrices). */
void cu_batch_strides(const FgShape *s, int nb, const int64_t *bn, int64_t mat, int64_t *st);

/* ------------------------------------------- compiler/cuda/attention.c */

/* How compile runs attention group gi, in a phrase (fgc report). */
const char *cu_attention_note(const FgPlan *plan, int gi);

/* ------------------------------------------------ compiler/cuda/loop.c */

void cu_loop_kernel(Emit *E, Kern *k, int space_id, const Param *extra, int nextra, const char *what);

#endif
