/*
 * fg.h - the one internal header of the fgc compiler, a section per source
 * file.  Data flows one way:
 *
 *   .fg text --grammar/--> FgProgram (AST) --ir.c--> FgGraph (IR)
 *            --passes/--> FgGraph (primitives only) --interp.c--> values
 *
 * The AST is what was written, with locations and nothing checked.  The IR
 * is a flat array of nodes in topological order (every operand id is smaller
 * than the node's own id) whose dtypes and static shapes are all known.
 * Every op is one row of FG_OPS below: the enum, the name lookup, the type
 * rules, the interpreter and the emitters derive from it.
 */
#ifndef FG_H
#define FG_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "util.h"

/* ---------------------------------------------------------------- dtypes */

/* X(ID, name, bytes of storage, is float, compute type, storage type,
 *   torch, npy)
 *
 * compute type: the CUDA type a kernel computes the dtype's values in
 * (int for every integer dtype: i8 and u8 arithmetic wraps to 8 bits where
 * each op's result is taken, compiler/cuda/gen.c);
 * storage type: the CUDA type it stores them as (a kernel converts with
 * fg_to_NAME, runtime/fg_device.cuh; the program table names the dtype
 * FGRT_ID, runtime/fgrt_program.h); torch: PyTorch's dtype; npy: the .npy
 * type fgc run writes (FGRT_NPY_npy, runtime/fgrt.h: bf16 and the 8-bit
 * floats travel as f4;
 * i8 and u8 as NumPy's |i1 and |u1).  u8 is stored as FgU8, a struct of
 * one byte, so that no overload takes it for bool's unsigned char.
 */
#define FG_DTYPES(X)                                                                   \
	X(F32, "f32", 4, 1, "float", "float", "torch.float32", F4)                     \
	X(F16, "f16", 2, 1, "float", "__half", "torch.float16", F2)                    \
	X(BF16, "bf16", 2, 1, "float", "__nv_bfloat16", "torch.bfloat16", F4)          \
	X(I32, "i32", 4, 0, "int", "int", "torch.int32", I4)                           \
	X(BOOL, "bool", 1, 0, "float", "unsigned char", "torch.bool", B1)              \
	X(I8, "i8", 1, 0, "int", "signed char", "torch.int8", I1)                      \
	X(U8, "u8", 1, 0, "int", "FgU8", "torch.uint8", U1)                           \
	X(F8E4M3, "f8e4m3", 1, 1, "float", "__nv_fp8_e4m3", "torch.float8_e4m3fn", F4) \
	X(F8E5M2, "f8e5m2", 1, 1, "float", "__nv_fp8_e5m2", "torch.float8_e5m2", F4)

typedef enum FgDtype {
#define X(id, name, size, isf, ct, st, py, npy) FG_DT_##id,
	FG_DTYPES(X)
#undef X
	FG_DT_COUNT
} FgDtype;

/* ----------------------------------------------------------------- ops */

/* How an op takes part in fusion. */
typedef enum FgOpClass {
	FG_CLASS_SOURCE,        /* input, param, const: no operands */
	FG_CLASS_EW,            /* elementwise (with NumPy broadcasting) */
	FG_CLASS_REDUCE,        /* reduction over a set of axes */
	FG_CLASS_LAYOUT,        /* moves elements, computes nothing */
	FG_CLASS_MATMUL,        /* batched matrix product */
	FG_CLASS_SCAN,          /* a running sum or product along one axis */
	FG_CLASS_SELECT,        /* the positions of the k first along one axis */
	FG_CLASS_COMPOSITE,     /* expanded into the others by passes/expand.c */
} FgOpClass;

/* Which operand dtypes an op accepts and what it yields. */
typedef enum FgTypeRule {
	FG_TY_SOURCE,           /* declared, not inferred */
	FG_TY_FLOAT,            /* f32/f16/bf16 operands, all the same; same out */
	FG_TY_NUM,              /* float or i32 operands, all the same; same out */
	FG_TY_CMP,              /* any operands, all the same; bool out */
	FG_TY_WHERE,            /* bool, then two operands of one dtype */
	FG_TY_CAST,             /* any operand; out is attribute dtype= */
	FG_TY_ANY,              /* any dtype, all operands the same; same out */
	FG_TY_PRED,             /* float operands; bool out (isnan) */
	FG_TY_BOOL,             /* bool operands; bool out (and, not) */
	FG_TY_INDEX,            /* float or i32 operand; i32 out (argmax) */
} FgTypeRule;

/*
 * X(ID, name, arity, class, type rule, attributes, reference, cuda, torch,
 *   transcendental)
 *
 * arity: operand count; -1 means one or more (concat).
 * attributes: the keys the op accepts, space-separated (see FG_ATTRS).
 * reference: a C expression over doubles a, b, c giving the value in the
 *   reference interpreter (helpers fg_ref_* are defined below), and k, the
 *   op's scalar attribute (leaky_relu's slope, elu's alpha: FgNode.a.k); 0
 *   for ops that are not elementwise, which the interpreter handles apart.
 * cuda: the same as a CUDA expression over floats a, b, c and k (helpers
 *   fg_* live in runtime/fg_device.cuh); "" where the backend handles it
 *   apart.
 * torch: the same in PyTorch over tensors a, b (an infix operator where
 *   Python has one: emit-torch may then put a number on either side), or
 *   a reduction's function; "" where compiler/torch.c handles it apart.
 * transcendental: 1 when the kernel's f32 result is a libm approximation
 *   (a few ulps), not correctly rounded as + - * / sqrt are, so that
 *   testing.md gives f32 values it feeds the rtol 1e-5, not 1.3e-6
 *   (compiler/gates.c); a composite counts its expansion's exp or rsqrt.
 * Ops of class SOURCE cannot be called by name.  iota is elementwise with
 * no operands: a value of its index alone, computed where it is used; gather
 * and take_along_axis are layout ops whose second operand (i32) says where
 * along `axis` each element comes from (type rule SOURCE: their builders
 * check the dtypes).
 */
#define FG_OPS(X)                                                                                                              \
	X(INPUT, "input", 0, SOURCE, SOURCE, "", 0, "", "", 0)                                                                 \
	X(PARAM, "param", 0, SOURCE, SOURCE, "", 0, "", "", 0)                                                                 \
	X(CONST, "const", 0, SOURCE, SOURCE, "", 0, "", "", 0)                                                                 \
	X(IDENTITY, "identity", 1, EW, ANY, "", a, "a", "a", 0)                                                                \
	X(NEG, "neg", 1, EW, NUM, "", -a, "-a", "torch.neg(a)", 0)                                                             \
	X(ABS, "abs", 1, EW, NUM, "", fabs(a), "fabsf(a)", "torch.abs(a)", 0)                                                  \
	X(EXP, "exp", 1, EW, FLOAT, "", exp(a), "expf(a)", "torch.exp(a)", 1)                                                  \
	X(LOG, "log", 1, EW, FLOAT, "", log(a), "logf(a)", "torch.log(a)", 1)                                                  \
	X(SQRT, "sqrt", 1, EW, FLOAT, "", sqrt(a), "sqrtf(a)", "torch.sqrt(a)", 0)                                             \
	X(RSQRT, "rsqrt", 1, EW, FLOAT, "", 1.0 / sqrt(a), "rsqrtf(a)", "torch.rsqrt(a)", 1)                                   \
	X(RECIP, "recip", 1, EW, FLOAT, "", 1.0 / a, "(1.0f / a)", "torch.reciprocal(a)", 0)                                   \
	X(SQUARE, "square", 1, EW, NUM, "", a * a, "(a * a)", "torch.square(a)", 0)                                            \
	X(SIN, "sin", 1, EW, FLOAT, "", sin(a), "fg_sinf(a)", "torch.sin(a)", 1)                                               \
	X(COS, "cos", 1, EW, FLOAT, "", cos(a), "fg_cosf(a)", "torch.cos(a)", 1)                                               \
	X(TANH, "tanh", 1, EW, FLOAT, "", tanh(a), "tanhf(a)", "torch.tanh(a)", 1)                                             \
	X(SIGMOID, "sigmoid", 1, EW, FLOAT, "", fg_ref_sigmoid(a), "fg_sigmoid(a)", "torch.sigmoid(a)", 1)                     \
	X(RELU, "relu", 1, EW, NUM, "", fg_ref_relu(a), "fg_relu(a)", "torch.relu(a)", 0)                                      \
	X(GELU, "gelu", 1, EW, FLOAT, "", fg_ref_gelu(a), "fg_gelu(a)", "F.gelu(a)", 1)                                        \
	X(GELU_TANH, "gelu_tanh", 1, EW, FLOAT, "", fg_ref_gelu_tanh(a), "fg_gelu_tanh(a)", "F.gelu(a, approximate=\"tanh\")", 1) \
	X(SILU, "silu", 1, EW, FLOAT, "", fg_ref_silu(a), "fg_silu(a)", "F.silu(a)", 1)                                        \
	X(ERF, "erf", 1, EW, FLOAT, "", erf(a), "erff(a)", "torch.erf(a)", 1)                                                  \
	X(FLOOR, "floor", 1, EW, FLOAT, "", floor(a), "floorf(a)", "torch.floor(a)", 0)                                        \
	X(CEIL, "ceil", 1, EW, FLOAT, "", ceil(a), "ceilf(a)", "torch.ceil(a)", 0)                                             \
	X(ROUND, "round", 1, EW, FLOAT, "", nearbyint(a), "rintf(a)", "torch.round(a)", 0)                                     \
	X(TRUNC, "trunc", 1, EW, FLOAT, "", trunc(a), "truncf(a)", "torch.trunc(a)", 0)                                        \
	X(SIGN, "sign", 1, EW, NUM, "", fg_ref_sign(a), "fg_sign(a)", "torch.where(torch.isnan(a), a, torch.sign(a))", 0)      \
	X(LOG1P, "log1p", 1, EW, FLOAT, "", log1p(a), "log1pf(a)", "torch.log1p(a)", 1)                                        \
	X(EXPM1, "expm1", 1, EW, FLOAT, "", expm1(a), "expm1f(a)", "torch.expm1(a)", 1)                                        \
	X(EXP2, "exp2", 1, EW, FLOAT, "", exp2(a), "exp2f(a)", "torch.exp2(a)", 1)                                             \
	X(LOG2, "log2", 1, EW, FLOAT, "", log2(a), "log2f(a)", "torch.log2(a)", 1)                                             \
	X(TAN, "tan", 1, EW, FLOAT, "", tan(a), "fg_tanf(a)", "torch.tan(a)", 1)                                               \
	X(ASIN, "asin", 1, EW, FLOAT, "", asin(a), "asinf(a)", "torch.asin(a)", 1)                                             \
	X(ACOS, "acos", 1, EW, FLOAT, "", acos(a), "acosf(a)", "torch.acos(a)", 1)                                             \
	X(ATAN, "atan", 1, EW, FLOAT, "", atan(a), "atanf(a)", "torch.atan(a)", 1)                                             \
	X(SINH, "sinh", 1, EW, FLOAT, "", sinh(a), "sinhf(a)", "torch.sinh(a)", 1)                                             \
	X(COSH, "cosh", 1, EW, FLOAT, "", cosh(a), "coshf(a)", "torch.cosh(a)", 1)                                             \
	X(ASINH, "asinh", 1, EW, FLOAT, "", asinh(a), "asinhf(a)", "torch.asinh(a)", 1)                                        \
	X(ACOSH, "acosh", 1, EW, FLOAT, "", acosh(a), "acoshf(a)", "torch.acosh(a)", 1)                                        \
	X(ATANH, "atanh", 1, EW, FLOAT, "", atanh(a), "atanhf(a)", "torch.atanh(a)", 1)                                        \
	X(SOFTPLUS, "softplus", 1, EW, FLOAT, "", fg_ref_softplus(a), "fg_softplus(a)", "F.softplus(a)", 1)                    \
	X(MISH, "mish", 1, EW, FLOAT, "", a * tanh(fg_ref_softplus(a)), "fg_mish(a)", "F.mish(a)", 1)                          \
	X(HARDSIGMOID, "hardsigmoid", 1, EW, FLOAT, "", fg_ref_hardsigmoid(a), "fg_hardsigmoid(a)", "F.hardsigmoid(a)", 0)     \
	X(HARDSWISH, "hardswish", 1, EW, FLOAT, "", a * fg_ref_hardsigmoid(a), "fg_hardswish(a)", "F.hardswish(a)", 0)         \
	X(ISNAN, "isnan", 1, EW, PRED, "", (double)(a != a), "(float)(a != a)", "torch.isnan(a)", 0)                           \
	X(ISINF, "isinf", 1, EW, PRED, "", (double)(fabs(a) == INFINITY), "(float)isinf(a)", "torch.isinf(a)", 0)              \
	X(NOT, "not", 1, EW, BOOL, "", (double)(a == 0), "(float)(a == 0.0f)", "torch.logical_not(a)", 0)                      \
	X(LEAKY_RELU, "leaky_relu", 1, EW, FLOAT, "slope", a > 0 ? a : a * k, "fg_leaky_relu(a, k)", "F.leaky_relu(a, k)", 0)  \
	X(ELU, "elu", 1, EW, FLOAT, "alpha", a > 0 ? a : k * expm1(a), "fg_elu(a, k)", "F.elu(a, k)", 1)                       \
	X(ADD, "add", 2, EW, NUM, "", a + b, "(a + b)", "a + b", 0)                                                            \
	X(SUB, "sub", 2, EW, NUM, "", a - b, "(a - b)", "a - b", 0)                                                            \
	X(MUL, "mul", 2, EW, NUM, "", a * b, "(a * b)", "a * b", 0)                                                            \
	X(DIV, "div", 2, EW, FLOAT, "", a / b, "(a / b)", "a / b", 0)                                                          \
	X(POW, "pow", 2, EW, FLOAT, "", pow(a, b), "powf(a, b)", "", 1)                                                        \
	X(MAXIMUM, "maximum", 2, EW, NUM, "", fg_ref_maximum(a, b), "fg_maximum(a, b)", "", 0)                                 \
	X(MINIMUM, "minimum", 2, EW, NUM, "", fg_ref_minimum(a, b), "fg_minimum(a, b)", "", 0)                                 \
	X(LT, "lt", 2, EW, CMP, "", (double)(a < b), "(float)(a < b)", "a < b", 0)                                             \
	X(LE, "le", 2, EW, CMP, "", (double)(a <= b), "(float)(a <= b)", "a <= b", 0)                                          \
	X(GT, "gt", 2, EW, CMP, "", (double)(a > b), "(float)(a > b)", "a > b", 0)                                             \
	X(GE, "ge", 2, EW, CMP, "", (double)(a >= b), "(float)(a >= b)", "a >= b", 0)                                          \
	X(EQ, "eq", 2, EW, CMP, "", (double)(a == b), "(float)(a == b)", "a == b", 0)                                          \
	X(NE, "ne", 2, EW, CMP, "", (double)(a != b), "(float)(a != b)", "a != b", 0)                                          \
	X(WHERE, "where", 3, EW, WHERE, "", (a != 0 ? b : c), "(a != 0.0f ? b : c)", "", 0)                                    \
	X(CLAMP, "clamp", 3, EW, NUM, "", fg_ref_minimum(fg_ref_maximum(a, b), c), "fg_clampv(a, b, c)", "", 0)                \
	X(ATAN2, "atan2", 2, EW, FLOAT, "", atan2(a, b), "atan2f(a, b)", "torch.atan2(a, b)", 1)                               \
	X(AND, "and", 2, EW, BOOL, "", (double)(a != 0 && b != 0), "(float)(a != 0.0f && b != 0.0f)", "torch.logical_and(a, b)", 0) \
	X(OR, "or", 2, EW, BOOL, "", (double)(a != 0 || b != 0), "(float)(a != 0.0f || b != 0.0f)", "torch.logical_or(a, b)", 0) \
	X(XOR, "xor", 2, EW, BOOL, "", (double)((a != 0) != (b != 0)), "(float)((a != 0.0f) != (b != 0.0f))", "torch.logical_xor(a, b)", 0) \
	X(FLOORDIV, "floordiv", 2, EW, NUM, "", fg_ref_floordiv(a, b), "fg_floordiv(a, b)", "torch.div(a, b, rounding_mode=\"floor\")", 0) \
	X(MOD, "mod", 2, EW, NUM, "", fg_ref_mod(a, b), "fg_mod(a, b)", "torch.remainder(a, b)", 0)                             \
	X(CAST, "cast", 1, EW, CAST, "dtype", 0, "", "", 0)                                                                    \
	X(IOTA, "iota", 0, EW, SOURCE, "shape axis dtype", 0, "", "", 0)                                                       \
	X(DROPOUT, "dropout", 1, EW, FLOAT, "p seed", 0, "", "", 0)                                                            \
	X(SUM, "sum", 1, REDUCE, NUM, "axis keepdims", 0, "", "torch.sum", 0)                                                  \
	X(MEAN, "mean", 1, REDUCE, FLOAT, "axis keepdims", 0, "", "torch.mean", 0)                                             \
	X(MAX, "max", 1, REDUCE, NUM, "axis keepdims", 0, "", "torch.amax", 0)                                                 \
	X(MIN, "min", 1, REDUCE, NUM, "axis keepdims", 0, "", "torch.amin", 0)                                                 \
	X(PROD, "prod", 1, REDUCE, FLOAT, "axis keepdims", 0, "", "", 0)                                                       \
	X(ANY, "any", 1, REDUCE, BOOL, "axis keepdims", 0, "", "", 0)                                                          \
	X(ALL, "all", 1, REDUCE, BOOL, "axis keepdims", 0, "", "", 0)                                                          \
	X(ARGMAX, "argmax", 1, REDUCE, INDEX, "axis keepdims", 0, "", "torch.argmax", 0)                                       \
	X(ARGMIN, "argmin", 1, REDUCE, INDEX, "axis keepdims", 0, "", "torch.argmin", 0)                                       \
	X(TRANSPOSE, "transpose", 1, LAYOUT, ANY, "perm", 0, "", "", 0)                                                        \
	X(RESHAPE, "reshape", 1, LAYOUT, ANY, "shape", 0, "", "", 0)                                                           \
	X(BROADCAST_TO, "broadcast_to", 1, LAYOUT, ANY, "shape", 0, "", "", 0)                                                 \
	X(SLICE, "slice", 1, LAYOUT, ANY, "axis start end", 0, "", "", 0)                                                      \
	X(CONCAT, "concat", -1, LAYOUT, ANY, "axis", 0, "", "", 0)                                                             \
	X(GATHER, "gather", 2, LAYOUT, SOURCE, "axis", 0, "", "", 0)                                                           \
	X(TAKE_ALONG_AXIS, "take_along_axis", 2, LAYOUT, SOURCE, "axis", 0, "", "", 0)                                         \
	X(MATMUL, "matmul", 2, MATMUL, NUM, "", 0, "", "", 0)                                                                  \
	X(CUMSUM, "cumsum", 1, SCAN, NUM, "axis exclusive reverse", 0, "", "torch.cumsum", 0)                                 \
	X(CUMPROD, "cumprod", 1, SCAN, NUM, "axis exclusive reverse", 0, "", "torch.cumprod", 0)                              \
	X(TOPK, "topk", 1, SELECT, NUM, "k axis largest", 0, "", "", 0)                                                        \
	X(SOFTMAX, "softmax", 1, COMPOSITE, FLOAT, "axis", 0, "", "", 1)                                                       \
	X(LOG_SOFTMAX, "log_softmax", 1, COMPOSITE, FLOAT, "axis", 0, "", "", 1)                                               \
	X(LAYERNORM, "layernorm", 3, COMPOSITE, FLOAT, "axis eps", 0, "", "", 1)                                               \
	X(RMSNORM, "rmsnorm", 2, COMPOSITE, FLOAT, "axis eps", 0, "", "", 1)                                                   \
	X(LOGSUMEXP, "logsumexp", 1, COMPOSITE, FLOAT, "axis keepdims", 0, "", "", 1)                                          \
	X(VAR, "var", 1, COMPOSITE, FLOAT, "axis keepdims correction", 0, "", "", 0)                                           \
	X(STD, "std", 1, COMPOSITE, FLOAT, "axis keepdims correction", 0, "", "", 0)                                           \
	X(CROSS_ENTROPY, "cross_entropy", 2, COMPOSITE, SOURCE, "axis", 0, "", "", 1)

typedef enum FgOp {
#define X(id, name, ar, cl, ty, at, ref, cu, py, tr) FG_OP_##id,
	FG_OPS(X)
#undef X
	FG_OP_COUNT
} FgOp;

/*
 * X(ID, identity, reference step, cuda step, cuda functor): the algebra of
 * each reduction of FG_OPS.  The accumulator starts at identity (also the
 * result over no elements) and takes each value b as a = step(a, b): the
 * reference step over doubles in the interpreter, the cuda step (a
 * statement over the accumulator a, the value b, cast to the compute
 * type, and c, the value's index among the reduced elements in C order)
 * in a thread; the functor (runtime/fg_device.cuh) combines two threads'
 * accumulators.  A mean is a sum divided at the end; any and all reduce
 * bools held as 0 and 1; argmax and argmin keep a value and its index
 * (FgArg: the larger or smaller value, NaN above all, the lower index
 * among equals), whose reference step is the value's alone (the
 * interpreter keeps the index apart).  i32 accumulators start at the
 * type's bounds for max and min (compiler/cuda/reduction.c).
 */
#define FG_REDUCTIONS(X)                                                                             \
	X(SUM, 0.0, a + b, "a += b;", "FgSum()")                                                     \
	X(MEAN, 0.0, a + b, "a += b;", "FgSum()")                                                    \
	X(MAX, -INFINITY, fg_ref_maximum(a, b), "a = fg_maximum(a, b);", "FgMax()")                  \
	X(MIN, INFINITY, fg_ref_minimum(a, b), "a = fg_minimum(a, b);", "FgMin()")                   \
	X(PROD, 1.0, a * b, "a *= b;", "FgProd()")                                                   \
	X(ANY, 0.0, (double)(a != 0 || b != 0), "a = fmaxf(a, b);", "FgMax()")                       \
	X(ALL, 1.0, (double)(a != 0 && b != 0), "a = fminf(a, b);", "FgMin()")                       \
	X(ARGMAX, -INFINITY, fg_ref_maximum(a, b), "a = FgArgMax()(a, fg_arg(b, c));", "FgArgMax()") \
	X(ARGMIN, INFINITY, fg_ref_minimum(a, b), "a = FgArgMin()(a, fg_arg(b, c));", "FgArgMin()")

/* X(SCAN, REDUCTION): the scans of FG_OPS, each running the algebra of a
 * row of FG_REDUCTIONS (its identity, steps and functor) along its axis. */
#define FG_SCANS(X)                                                            \
	X(CUMSUM, SUM)                                                         \
	X(CUMPROD, PROD)

typedef struct FgRedInfo {
	double identity;        /* the accumulator's start */
	const char *cuda_step;  /* a statement over a and b */
	const char *functor;    /* combines two accumulators */
} FgRedInfo;

typedef struct FgOpInfo {
	const char *name;       /* as written in .fg */
	int arity;              /* operands, -1: one or more */
	FgOpClass cls;          /* fusion class */
	FgTypeRule ty;          /* dtype rule */
	const char *attrs;      /* accepted attribute keys, space-separated */
	const char *cuda;       /* CUDA expression over a, b, c, or "" */
	const char *torch;      /* PyTorch expression over a, b, or "" */
	int transcendental;     /* not correctly rounded in a kernel */
} FgOpInfo;

/* X(ID, key): every attribute key any op accepts. */
#define FG_ATTRS(X)                                                            \
	X(AXIS, "axis")                                                        \
	X(KEEPDIMS, "keepdims")                                                \
	X(EPS, "eps")                                                          \
	X(P, "p")                                                              \
	X(SEED, "seed")                                                        \
	X(PERM, "perm")                                                        \
	X(SHAPE, "shape")                                                      \
	X(START, "start")                                                      \
	X(END, "end")                                                          \
	X(DTYPE, "dtype")                                                      \
	X(SLOPE, "slope")                                                      \
	X(CORRECTION, "correction")                                            \
	X(ALPHA, "alpha")                                                      \
	X(EXCLUSIVE, "exclusive")                                              \
	X(REVERSE, "reverse")                                                  \
	X(K, "k")                                                              \
	X(LARGEST, "largest")

/* --------------------------------------------------- compiler/tables.c */

/* The reference semantics of the ops whose formula is more than one C
 * operator, named by the table's reference column.  They follow PyTorch:
 * NaN propagates through relu, maximum and minimum.  Defined once, here,
 * so that a folded number (fg_op_eval_scalar) and an evaluated node agree
 * to the bit; FG_REF makes them callable on the device too, where
 * tests/runtime/fast_math.cu judges the fast forms over every f32 input. */
#ifdef __CUDACC__
#define FG_REF static inline __host__ __device__
#else
#define FG_REF static inline
#endif
FG_REF double fg_ref_sigmoid(double a) { return 1.0 / (1.0 + exp(-a)); }
FG_REF double fg_ref_relu(double a) { return a < 0 ? 0.0 : a; }
FG_REF double fg_ref_gelu(double a) { return 0.5 * a * (1.0 + erf(a * 0.70710678118654752440)); }
/* x / (1 + e^-x), as torch computes it: -1000 gives -0, not NaN. */
FG_REF double fg_ref_silu(double a) { return a / (1.0 + exp(-a)); }
FG_REF double fg_ref_gelu_tanh(double a)
{
	const double k = 0.7978845608028654; /* sqrt(2 / pi) */
	return 0.5 * a * (1.0 + tanh(k * (a + 0.044715 * a * a * a)));
}
/* NumPy's sign: NaN stays NaN, both zeros give +0. */
FG_REF double fg_ref_sign(double a) { return a > 0 ? 1.0 : a < 0 ? -1.0 : a == 0 ? 0.0 : a; }
/* log(1 + e^a) without overflow: exact in f64 on both sides of 0. */
FG_REF double fg_ref_softplus(double a) { return a > 0 ? a + log1p(exp(-a)) : log1p(exp(a)); }
/* PyTorch's relu6(a + 3) / 6; NaN stays NaN. */
FG_REF double fg_ref_hardsigmoid(double a) { return a <= -3 ? 0.0 : a >= 3 ? 1.0 : a / 6 + 0.5; }
/* Python's and NumPy's floor division and modulo (npy_divmod): the
 * quotient rounded toward -inf, the remainder with the divisor's sign; a
 * zero divisor gives what the division gives (inf or NaN; the integer
 * case is a run-time error, caught before).  Exact on integers held as
 * doubles. */
FG_REF double fg_ref_floordiv(double a, double b)
{
	if (b == 0)
		return a / b;
	double mod = fmod(a, b), div = (a - mod) / b;
	if (mod != 0 && (b < 0) != (mod < 0))
		div -= 1.0;
	if (div == 0)
		return copysign(0.0, a / b);
	double fl = floor(div);
	return div - fl > 0.5 ? fl + 1.0 : fl;
}
FG_REF double fg_ref_mod(double a, double b)
{
	if (b == 0)
		return fmod(a, b);
	double mod = fmod(a, b);
	if (mod != 0 && (b < 0) != (mod < 0))
		mod += b;
	return mod != 0 ? mod : copysign(0.0, b);
}
FG_REF double fg_ref_maximum(double a, double b)
{
	return isnan(a) || isnan(b) ? NAN : a > b ? a : b;
}
FG_REF double fg_ref_minimum(double a, double b)
{
	return isnan(a) || isnan(b) ? NAN : a < b ? a : b;
}
/* The reference step of reduction op: the accumulator a after value b
 * (inline: the interpreter's reductions take it per element). */
static inline double fg_red_step(FgOp op, double a, double b)
{
	switch (op) {
#define X(id, identity, ref, cu, functor) \
	case FG_OP_##id: return ref;
		FG_REDUCTIONS(X)
#undef X
	default:
		return NAN;
	}
}


/* FG_DTYPES' columns, per dtype. */
typedef struct FgDtypeInfo {
	const char *cuda;       /* the CUDA type its values are computed in */
	const char *cuda_store; /* ... and stored as */
	const char *rt;         /* the runtime's constant: "FGRT_F32" */
	const char *store;      /* the device conversion that stores: "fg_to_f32" */
	const char *torch;      /* PyTorch's dtype: "torch.float32" */
} FgDtypeInfo;

extern const FgOpInfo fg_op_info[FG_OP_COUNT];
extern const FgDtypeInfo fg_dtype_info[FG_DT_COUNT];
extern const char *const fg_dtype_name[FG_DT_COUNT];
extern const int fg_dtype_size[FG_DT_COUNT];
int fg_dtype_is_float(FgDtype t);
/* i32, i8, u8: integers computed as int, whose arithmetic wraps. */
int fg_dtype_is_int(FgDtype t);
/* The range of integer dtype t. */
void fg_dtype_int_range(FgDtype t, double *lo, double *hi);
/* v wrapped into integer dtype t's range, two's complement (v an integer). */
double fg_wrap_int(FgDtype t, double v);
/* Rounds to float the way the hardware does (RNE), without the undefined
 * out-of-range conversion: from the midpoint between FLT_MAX and 2^128 up,
 * the nearest float is infinity. */
static inline double fg_round_f32(double x)
{
	const double overflow = 0x1.ffffffp127; /* 2^128 - 2^103 */
	if (fabs(x) >= overflow)
		return copysign(INFINITY, x);
	return (double)(float)x;
}
/* Rounds x to the nearest value of dtype dt (round to nearest even; the
 * integer dtypes truncate toward zero and saturate, NaN giving 0; bool is
 * x != 0): what a cast, a store and a folded constant do. */
double fg_round_to(FgDtype dt, double x);
/* A reduction's row of FG_REDUCTIONS, NULL for other ops. */
const FgRedInfo *fg_red_info(FgOp op);
/* The reduction whose algebra scan op runs (FG_SCANS); FG_OP_COUNT for
 * other ops. */
FgOp fg_scan_reduction(FgOp op);
/* Looks a callable op up by name; FG_OP_COUNT when there is none. */
FgOp fg_op_lookup(const char *name);
/* The callable op name nearest to `name`, or NULL when none is close. */
const char *fg_op_suggest(const char *name);
/* The name of an elementwise op's scalar attribute k (leaky_relu's
 * "slope", elu's "alpha": its attributes column), or NULL when it has none;
 * cast and dropout, whose attributes are not k, are handled apart. */
const char *fg_op_scalar(FgOp op);
/* The op another framework's name means (clip: clamp), or NULL; *reserved
 * set when the language keeps the name for a later version (conv2d). */
const char *fg_op_meaning(const char *name, int *reserved);
/* FG_DT_COUNT when `name` is no dtype. */
FgDtype fg_dtype_lookup(const char *name);
/* The value of elementwise op `op` on doubles, from the table's reference
 * column (the interpreter's semantics); used to fold numbers. */
double fg_op_eval_scalar(FgOp op, double a, double b, double c, double k);
/* Expression column t of FG_OPS (cuda, torch) with its operands a, b, c
 * (whole words) replaced by ops[0..nops), taken as they are, and with
 * nops 4 the scalar attribute k by ops[3]. */
const char *fg_op_subst(FgArena *a, const char *t, const char *const *ops, int nops);

/* ------------------------------------------------------------- the AST */

typedef struct FgNum {
	double val;             /* the value; +inf for 1e999 and `inf` */
	int is_int;             /* written as digits alone: 42 */
	int overflow;           /* digits beyond int64, or a real beyond double */
	int64_t ival;           /* the value, when is_int and not overflow */
} FgNum;

typedef enum FgAttrValKind {
	FG_AV_NUM,              /* 3, -1, 0.5, 1e-5, inf */
	FG_AV_IDENT,            /* true, false, f16, ... */
	FG_AV_LIST,             /* [1, 0, 2] */
} FgAttrValKind;

typedef struct FgAttrVal FgAttrVal;
struct FgAttrVal {
	FgAttrValKind kind;
	FgLoc loc;
	FgNum num;              /* FG_AV_NUM, with a leading '-' applied */
	const char *ident;      /* FG_AV_IDENT */
	FgAttrVal *items;       /* FG_AV_LIST: the elements */
	int nitems;
};

typedef struct FgAttrAst {
	const char *key;        /* as written: axis, eps, ... (unchecked) */
	FgLoc loc;              /* of the key */
	FgAttrVal val;
} FgAttrAst;

typedef enum FgExprKind {
	FG_EX_NUM,              /* a number literal */
	FG_EX_NAME,             /* a use of a name */
	FG_EX_CALL,             /* op(args, key=value), or an operator */
} FgExprKind;

typedef struct FgExpr FgExpr;
struct FgExpr {
	FgExprKind kind;
	FgLoc loc;              /* the name, the number, or the operator */
	FgNum num;              /* FG_EX_NUM */
	const char *name;       /* FG_EX_NAME: the name; FG_EX_CALL: the op
	                           name, "add" for '+', "neg" for unary '-',
	                           "lt" "le" "gt" "ge" "eq" "ne" for comparisons */
	const char *op_text;    /* FG_EX_CALL written as an operator: "+", else NULL */
	FgExpr **args;          /* FG_EX_CALL: operands */
	int nargs;
	FgAttrAst *attrs;       /* FG_EX_CALL: key=value pairs, as written */
	int nattrs;
};

typedef struct FgDimAst {
	FgLoc loc;
	const char *sym;        /* symbolic name, or NULL for a number */
	FgNum num;              /* the number (with a leading '-' applied) */
	int has_default;        /* sym written as B=8192 */
	FgNum def;              /* that default */
} FgDimAst;

typedef struct FgAnnot {
	const char *name;       /* after '@': save, materialize, or unknown */
	FgLoc loc;              /* of the '@' */
} FgAnnot;

typedef enum FgStmtKind {
	FG_ST_INPUT,            /* input NAME : DTYPE[DIMS] */
	FG_ST_PARAM,            /* param NAME : DTYPE[DIMS] */
	FG_ST_ASSIGN,           /* NAME = EXPR @annotations */
	FG_ST_OUTPUT,           /* output NAME, NAME */
	FG_ST_FUSE,             /* fuse { STATEMENTS } */
} FgStmtKind;

typedef struct FgStmt FgStmt;
struct FgStmt {
	FgStmtKind kind;
	FgLoc loc;              /* of the first token */
	const char *name;       /* INPUT PARAM ASSIGN */
	FgLoc name_loc;
	const char *dtype;      /* INPUT PARAM: as written, unchecked */
	FgLoc dtype_loc;
	FgDimAst *dims;         /* INPUT PARAM */
	int ndims;
	FgExpr *expr;           /* ASSIGN */
	FgAnnot *annots;        /* ASSIGN */
	int nannots;
	const char **outs;      /* OUTPUT: the names; ASSIGN binding several
				   names (values, indices = topk(...)): all of
				   them, name being the first */
	FgLoc *out_locs;
	int nouts;
	FgStmt *body;           /* FUSE: the statements inside */
	int nbody;
};

typedef struct FgProgram {
	const char *name;       /* graph NAME */
	FgLoc loc;
	FgStmt *stmts;
	int nstmts;
} FgProgram;

/* --------------------------------------------------- grammar/fg.y, fg.l */

/* Parses src into prog.  Reports every error it can through d and returns
 * the number of errors (0: prog is complete).  Never crashes, whatever the
 * bytes: NULs, invalid UTF-8, nesting too deep for the parser's stack. */
int fg_parse(FgArena *a, FgDiag *d, const FgSource *src, FgProgram *prog);

/* -------------------------------------------------------- compiler/ast.c */

/* The builders grammar/fg.y's actions call, and nothing else builds the AST.
 * Every node comes from the arena, so the half-built tree a syntax error
 * leaves behind costs nothing to drop.  Lists under construction are the
 * FgAst* vectors below; a NULL list is an empty one, so rules that match
 * nothing allocate nothing.  The builders also report the errors that one
 * construct shows on its own (a positional argument after a keyword one, a
 * declaration inside fuse, nesting past FG_AST_MAX_NEST); everything that
 * needs the whole program (names, dtypes, annotations) is compiler/ir.c's. */

/* Parentheses, calls and unary minuses open at once.  Bounds the parser's
 * stack and the depth of every AST walk except along left-associative
 * chains (a + a + ... is a left spine as long as the chain). */
#define FG_AST_MAX_NEST 1000

typedef struct FgAstName {      /* one slot of the intern table */
	const char *s;          /* the arena copy, NUL-terminated; NULL: free */
	uint32_t len;           /* fg_parse takes no source of 2 GiB or more */
	uint32_t hash;
} FgAstName;

typedef struct FgAst {
	FgArena *arena;         /* owns every node and name */
	FgDiag *diag;           /* where the builders' errors go */
	int depth;              /* nesting levels open (fg_ast_enter) */
	FgAstName *names;       /* intern table, open addressing */
	size_t nnames, capnames; /* capnames: 0 or a power of two */
} FgAst;

typedef struct FgAstArgs {      /* a call's arguments, as they come */
	FG_VEC(FgExpr *) pos;   /* positional */
	FG_VEC(FgAttrAst) kw;   /* key=value */
	int misplaced;          /* a positional after a key=value was reported */
} FgAstArgs;
typedef FG_VEC(FgAttrVal) FgAstVals;    /* [1, 0, 2] */
typedef FG_VEC(FgDimAst) FgAstDims;     /* [B, 4096] */
typedef FG_VEC(FgAnnot) FgAstAnnots;    /* @save @materialize */
typedef struct FgAstNames {     /* output a, b */
	FG_VEC(const char *) name;
	FG_VEC(FgLoc) loc;
} FgAstNames;
typedef FG_VEC(FgStmt *) FgAstStmts;    /* a block's statements, copied
                                           into one array at its end */

void fg_ast_init(FgAst *b, FgArena *a, FgDiag *d);
/* The one arena copy of the name s[0..n). */
const char *fg_ast_intern(FgAst *b, const char *s, size_t n);
/* The value of a number token (digits, a real, inf, nan; no sign).  s[n]
 * must be readable and not a digit, '.', 'e' or 'E' (flex's yytext is
 * NUL-terminated there). */
FgNum fg_ast_number(const char *s, size_t n);
FgNum fg_ast_num_neg(FgNum x);

/* Nesting: fg_ast_enter opens a level (0), or reports the limit and returns
 * -1, after which the parse must stop.  fg_ast_paren, fg_ast_neg and
 * fg_ast_call close the level their '(' or '-' opened; fg_ast_recover
 * closes all of them after error recovery threw their stack away. */
int fg_ast_enter(FgAst *b, FgLoc loc);
FgStmt *fg_ast_recover(FgAst *b);

FgExpr *fg_ast_num(FgAst *b, FgLoc loc, FgNum num);
FgExpr *fg_ast_name(FgAst *b, FgLoc loc, const char *name);
/* name: "add"..."ne"; text: "+"..."!="; loc: the operator's. */
FgExpr *fg_ast_binary(FgAst *b, FgLoc loc, const char *name, const char *text,
		      FgExpr *l, FgExpr *r);
/* Unary minus; a number operand folds into a negative FG_EX_NUM at loc. */
FgExpr *fg_ast_neg(FgAst *b, FgLoc loc, FgExpr *e);
FgExpr *fg_ast_paren(FgAst *b, FgExpr *e);
FgExpr *fg_ast_call(FgAst *b, FgLoc loc, const char *op, FgAstArgs *args);
/* at: where the argument starts, for "positional after keyword". */
FgAstArgs *fg_ast_arg(FgAst *b, FgAstArgs *args, FgLoc at, FgExpr *e);
FgAstArgs *fg_ast_kwarg(FgAst *b, FgAstArgs *args, FgLoc loc, const char *key,
			FgAttrVal v);

FgAttrVal fg_ast_av_num(FgLoc loc, FgNum num);
FgAttrVal fg_ast_av_ident(FgLoc loc, const char *name);
FgAttrVal fg_ast_av_list(FgLoc loc, FgAstVals *vals);
FgAstVals *fg_ast_val(FgAst *b, FgAstVals *vals, FgAttrVal v);

FgDimAst fg_ast_dim_num(FgLoc loc, FgNum num);
FgDimAst fg_ast_dim_sym(FgLoc loc, const char *sym);
FgDimAst fg_ast_dim_default(FgLoc loc, const char *sym, FgNum def);
FgAstDims *fg_ast_dim(FgAst *b, FgAstDims *dims, FgDimAst dim);

/* kind: FG_ST_INPUT or FG_ST_PARAM. */
FgStmt *fg_ast_decl(FgAst *b, FgStmtKind kind, FgLoc loc, const char *name,
		    FgLoc name_loc, const char *dtype, FgLoc dtype_loc,
		    FgAstDims *dims);
FgStmt *fg_ast_assign(FgAst *b, FgLoc loc, const char *name, FgExpr *e,
		      FgAstAnnots *annots);
/* NAME, NAMES... = EXPR @annotations: an op with several results. */
FgStmt *fg_ast_assign_many(FgAst *b, FgLoc loc, const char *name, FgAstNames *more, FgExpr *e,
			   FgAstAnnots *annots);
FgAstAnnots *fg_ast_annot(FgAst *b, FgAstAnnots *annots, FgLoc loc,
			  const char *name);
FgStmt *fg_ast_output(FgAst *b, FgLoc loc, FgAstNames *names);
FgAstNames *fg_ast_out_name(FgAst *b, FgAstNames *names, FgLoc loc,
			    const char *name);
FgStmt *fg_ast_fuse(FgAst *b, FgLoc loc, FgAstStmts *body);
/* Appends s (NULL: an empty or failed statement) to a block. */
FgAstStmts *fg_ast_stmt(FgAst *b, FgAstStmts *list, FgStmt *s);
/* The same inside fuse { }, which holds assignments only. */
FgAstStmts *fg_ast_fuse_stmt(FgAst *b, FgAstStmts *list, FgStmt *s);
void fg_ast_program(FgAst *b, FgProgram *prog, FgLoc loc, const char *name,
		    FgAstStmts *body);

/* --------------------------------------------------------- compiler/ir.c */

#define FG_MAX_RANK 8

typedef struct FgShape {
	int rank;
	int64_t d[FG_MAX_RANK];
} FgShape;

enum {
	FG_NF_OUTPUT = 1,       /* named in `output` */
	FG_NF_SAVED = 2,        /* @save: materialized, returned as saved.NAME */
	FG_NF_MATERIALIZE = 4,  /* @materialize: a user fusion boundary */
	FG_NF_COMPOSITE_END = 8,/* the last node of an expanded composite (its
				 * value); never printed */
};

typedef struct FgNode {
	FgOp op;
	FgDtype dt;
	FgShape shape;
	int *in;                /* operand ids, each smaller than this id */
	int nin;
	FgLoc loc;              /* the op as written (for composites: the call) */
	const char *name;       /* bound name, or NULL for a temporary */
	const char *composite;  /* the composite it was expanded from, or NULL */
	unsigned flags;         /* FG_NF_* */
	int fuse_block;         /* index of its fuse { } block, or -1 */
	union {
		struct {
			uint32_t axes;  /* bit i: axis i reduced (of the operand) */
			int keepdims;   /* reduced axes kept as 1 */
			double eps;     /* layernorm, rmsnorm; var and std's
					   correction (n - correction divides) */
		} red;                  /* reductions, softmax, norms */
		int perm[FG_MAX_RANK];  /* transpose: out axis i = in axis perm[i] */
		struct {
			int axis;
			int64_t start, end;  /* normalized: 0 <= start <= end <= dim */
		} slice;
		int axis;               /* concat, gather, take_along_axis, iota:
					   normalized to [0, rank) */
		struct {
			int axis;       /* normalized to [0, rank) */
			int exclusive;  /* element i combines those before it */
			int reverse;    /* ... after it, from the axis's end */
		} scan;                 /* cumsum, cumprod */
		struct {
			int axis;       /* normalized to [0, rank) */
			int largest;    /* the largest first (else the smallest) */
			int64_t k;      /* positions kept: the result's dim on axis */
		} sel;                  /* topk: its indices (i32); the values are
					   take_along_axis(x, indices), the next
					   node */
		struct {
			double p;       /* drop probability in [0, 1) */
			uint64_t seed;
		} drop;
		double value;           /* const */
		double k;               /* leaky_relu's slope, elu's alpha */
		int input;              /* input/param: index in FgGraph.inputs */
	} a;
} FgNode;

typedef struct FgSym {
	const char *name;
	int64_t value;
} FgSym;

typedef struct FgMerged {       /* a value passes/cse.c computes once */
	const char *name;       /* its name as written, or NULL */
	const char *composite;  /* the composite it came from, or NULL */
	FgOp op;
	FgLoc loc;
	int as;                 /* the node that computes it */
} FgMerged;

typedef struct FgGraph {
	const char *name;
	FgArena *arena;         /* owns everything below */
	FgNode *nodes;          /* topological order */
	int nnodes, cap;
	int *inputs;            /* INPUT and PARAM ids, in declaration order */
	int ninputs;
	int *outputs;           /* output ids, in `output` order */
	int noutputs;
	FgSym *syms;            /* symbolic dims and their bound values */
	int nsyms;
	int nfuse;              /* fuse { } blocks */
	FG_VEC(FgMerged) merged;/* duplicates passes/cse.c merged */
} FgGraph;

typedef struct FgDefine {       /* -D NAME=VALUE */
	const char *name;
	int64_t value;
	int used;               /* set by fg_ir_build when a dim names it */
} FgDefine;

/* Resolves names, binds symbolic dims, infers dtypes and shapes.  Reports
 * every error it can through d; returns the error count (0: g is valid). */
int fg_ir_build(FgArena *a, FgDiag *d, const FgProgram *prog,
		FgDefine *defs, int ndefs, FgGraph *g);
/* Appends a node (copied) and returns its id. */
int fg_ir_add(FgGraph *g, const FgNode *n);
/* Checks the IR's invariants; an internal bug calls fg_die(). */
void fg_ir_check(const FgGraph *g);

int64_t fg_shape_numel(const FgShape *s);
int fg_shape_eq(const FgShape *a, const FgShape *b);
/* NumPy broadcasting; returns -1 when the shapes do not broadcast. */
int fg_shape_broadcast(const FgShape *a, const FgShape *b, FgShape *out);
/* "f32[4096,1024]" into buf; returns buf. */
char *fg_type_str(char *buf, size_t n, FgDtype dt, const FgShape *s);

/* ------------------------------------------------------ compiler/print.c */

/* Writes g as a .fg program that fgc parses back to the same IR. */
void fg_ir_print(FILE *f, const FgGraph *g);
/* Per node, the name the printer uses: its own, or `_ID` made unique. */
const char **fg_ir_names(const FgGraph *g);

/* ------------------------------------------------------ passes/expand.c */

/* Replaces every composite node by primitives; each new node keeps the
 * composite's name in FgNode.composite and its location. */
void fg_pass_expand(FgGraph *g);

/* --------------------------------------------------------- passes/cse.c */

/* Computes each value once: a later node repeating an earlier one (op,
 * operands, attributes, dtype, shape) reads it instead; FgGraph.merged
 * says which. */
void fg_pass_cse(FgGraph *g);

/* -------------------------------------------------------- passes/fuse.c */

/* X(ID, name, fill, border): the kinds of fusion group; each runs as one
 * kernel (a full reduction as two).  The name is also the file of its CUDA
 * emitter, compiler/cuda/NAME.c; fill and border colour its groups in the
 * report's DOT picture. */
#define FG_GROUP_KINDS(X)                                                      \
	X(LOOP, loop, "#dbeafe", "#3b82f6")                                    \
	X(ROWREDUCE, rowreduce, "#dcfce7", "#16a34a")                          \
	X(REDUCE, reduce, "#fef3c7", "#d97706")                                \
	X(GEMM, gemm, "#f3e8ff", "#9333ea")                                    \
	X(SCAN, scan, "#fce7f3", "#db2777")                                    \
	X(TOPK, topk, "#e0f2fe", "#0284c7")                                    \
	X(ATTENTION, attention, "#ffe4e6", "#e11d48")

typedef enum FgGroupKind {
#define X(id, name, fill, border) FG_GROUP_##id,
	FG_GROUP_KINDS(X)
#undef X
	FG_GROUP_COUNT
} FgGroupKind;

/* X(ID, name): why a value is written to device memory. */
#define FG_REASONS(X)                                                          \
	X(NONE, "none")                 /* not written: stays on chip */        \
	X(OUTPUT, "output")             /* a graph output */                    \
	X(SAVED, "saved")               /* @save */                             \
	X(CROSS_BLOCK, "cross-block")   /* a consumer needs other blocks' work */ \
	X(REGISTERS, "register-pressure") /* fusing on would spill */          \
	X(FANOUT, "fan-out")            /* stored once beats recomputing */     \
	X(USER, "user")                 /* @materialize */

typedef enum FgReason {
#define X(id, name) FG_WHY_##id,
	FG_REASONS(X)
#undef X
	FG_WHY_COUNT
} FgReason;

extern const char *const fg_group_kind_name[FG_GROUP_COUNT];
extern const char *const fg_reason_name[FG_WHY_COUNT];

typedef struct FgCost {
	int64_t bytes;          /* read plus written */
	int launches;           /* kernels */
	double flops_tc;        /* matmul FLOPs on the tensor cores (fg_kind_flops) */
	double flops_cc;        /* FLOPs on the CUDA cores */
	double est_us;          /* max(memory time, compute time) + launches *
				   launch cost (fg_cost_estimate) */
	int compute_bound;      /* the compute time is the larger */
} FgCost;

/* A kernel launch as fgc writes it: blocks, threads a block, dynamic
 * shared memory a block, blocks a cluster (1: none). */
typedef struct FgLaunchShape {
	int64_t grid, block, smem;
	int cluster;
} FgLaunchShape;

typedef struct FgGroup {
	FgGroupKind kind;
	const char *name;       /* kernel name: g3_rowreduce_softmax */
	int *nodes;             /* members in topological order (a node may be
				   in several groups when it is recomputed) */
	int nnodes;
	int *reads;             /* values read from memory: inputs, params and
				   other groups' writes, in first-use order */
	int nreads;
	int *writes;            /* values this group writes */
	int nwrites;
	int root;               /* the member whose shape is the iteration space */
	uint32_t red_axes;      /* rowreduce, reduce: axes reduced */
	int est_regs;           /* estimated registers per thread */
	int64_t bytes_read, bytes_written;
	FgCost cost;            /* this group alone */
	int64_t max_grid;       /* the most blocks of one of its kernel launches,
				   once fg_cuda_plan_costs ran (0: unknown, or
				   cuBLASLt alone) */
	FgLaunchShape shape;    /* ... and that launch's shape, where fgc sized
				   all of it (grid 0: not such a launch) */
} FgGroup;

typedef struct FgEdge {         /* a producer-consumer edge between groups */
	int producer, consumer; /* node ids */
	int from, to;           /* group ids */
	FgReason why;           /* the rule that kept them apart */
	const char *detail;     /* the numbers behind it, for people */
} FgEdge;

typedef struct FgFuseOptions {
	int no_fuse;            /* one group per op: the unfused baseline */
	double bw_gbs;          /* device bandwidth, GB/s (default 4300) */
	double launch_us;       /* cost of one launch, us (default 3) */
	double tc_tflops;       /* tensor-core rate, TFLOP/s (default 790: the
				   H200's dense bf16) */
	double cc_tflops;       /* CUDA-core rate, TFLOP/s (default 67: the
				   H200's f32) */
	int reg_limit;          /* registers per thread (default 128) */
	int tf32;               /* --tf32: f32 matmuls may multiply as tf32 (the
				 * backend's choice: the partition ignores it;
				 * compile and the report's GPU notes follow it) */
	int no_attention;       /* no attention groups: the kernel is sm_90a code,
				 * and compile --arch names another GPU (the
				 * pattern stays a scores gemm, a softmax and a
				 * gemm) */
	int accurate_math;      /* --accurate-math: f16 and bf16 transcendentals
				 * in their accurate f32 forms too, not the fast
				 * ones (the backend's choice, as tf32) */
	int no_pdl;             /* --no-pdl, or --arch below sm_90: kernels
				 * launched with <<<>>>, each starting only once
				 * the one before it has finished (default:
				 * programmatic dependent launch,
				 * runtime/fg_device.cuh's fg_grid_wait) */
} FgFuseOptions;

/* The cost model's time: bytes over the bandwidth, plus the launches. */
static inline double fg_est_us(const FgFuseOptions *o, int64_t bytes, int launches)
{
	return (double)bytes / (o->bw_gbs * 1e3) + launches * o->launch_us;
}

/* A group's (or a graph's) estimate: the larger of its memory time
 * (bytes over the bandwidth) and its compute time (tensor-core FLOPs over
 * their rate plus CUDA-core FLOPs over theirs, as if they did not
 * overlap), plus its launches; and which of the two bounds it. */
static inline void fg_cost_estimate(const FgFuseOptions *o, FgCost *c)
{
	double mem = (double)c->bytes / (o->bw_gbs * 1e3);
	double cmp = c->flops_tc / (o->tc_tflops * 1e6) + c->flops_cc / (o->cc_tflops * 1e6);
	c->compute_bound = cmp > mem;
	c->est_us = (cmp > mem ? cmp : mem) + c->launches * o->launch_us;
}

typedef struct FgMeasured {     /* a binary's --bench-json, per group */
	const char *file;
	int runs;
	double replay_ms;       /* the graph replay, or -1 (--no-graph) */
	double eager_ms, copy_gbs;
	double *group_us;       /* per group: its launches' medians added */
} FgMeasured;

/* --gemm (fgc compile, and report's account of it): who runs a float
 * matmul.  AUTO: the generated sm_90a kernel where cuBLASLt cannot fuse
 * the group's epilogue, cuBLASLt elsewhere (compiler/cuda/gemm.c states the
 * rule); CUBLASLT: cuBLASLt always (an epilogue off its menu is a kernel of
 * its own); FGC: the generated kernel wherever it can run the group. */
typedef enum FgGemmChoice { FG_GEMM_AUTO, FG_GEMM_CUBLASLT, FG_GEMM_FGC } FgGemmChoice;

typedef struct FgPlan {
	const FgGraph *g;
	FgFuseOptions opt;
	const char **names;     /* per node: its printable name (fg_ir_names) */
	FgGroup *groups;        /* in launch order */
	int ngroups;
	FgReason *why;          /* per node: why it is written (NONE: it is not) */
	int *home;              /* per node: the group that writes it, or -1 */
	const char **trail;     /* per node: what the partitioner's walk did
				   with it and why (fgc report --explain), or
				   NULL */
	FgEdge *edges;          /* every edge that crosses groups */
	int nedges;
	FgCost fused, unfused;  /* totals, this plan and one kernel per op */
	int64_t *offset;        /* per node: arena offset (memplan), or -1 */
	int64_t planned_bytes;  /* arena size with reuse by liveness */
	int64_t naive_bytes;    /* one buffer per materialized value */
	const FgMeasured *measured; /* fgc report --measured, or NULL */
	int *kernel_owner;      /* per group, once fg_cuda_plan_costs ran: as
				   fg_cuda_kernel_owners answers; else NULL */
	int kernel_owners;
	FgGemmChoice gemm;      /* the --gemm that fg_cuda_plan_costs took (auto
				   before it ran), which fg_cuda_gemm_note and
				   fg_cuda_kernel_owners follow */
} FgPlan;

/* Partitions g (composites expanded) into fusion groups.  Reports a
 * fuse { } block that cannot be one group; returns the error count. */
int fg_pass_fuse(const FgGraph *g, const FgFuseOptions *o, FgPlan *plan, FgDiag *d);
/* plan->fused from its groups' costs: their bytes, launches and FLOPs
 * added, and their estimates (each group is bound by its own memory or
 * compute time); compute_bound when the compute time bounds most of it. */
void fg_plan_total(FgPlan *plan);
void fg_fuse_defaults(FgFuseOptions *o);
/* Byte counts saturate at FG_BYTES_MAX (4 EiB): a tensor may hold 2^62
 * elements, so its bytes, and sums of them, can pass int64. */
#define FG_BYTES_MAX ((int64_t)1 << 62)
/* Bytes of one value in memory. */
int64_t fg_value_bytes(const FgGraph *g, int id);
int64_t fg_bytes_add(int64_t a, int64_t b);

/* ------------------------------------------------------- passes/kinds.c */

/* What one group kind's kernel can hold, asked by the partitioner and by
 * the CUDA emitters alike. */

/* Whether shape s broadcasts into space (NumPy alignment, no growth). */
int fg_kind_fits(const FgShape *s, const FgShape *space);

/* Where a reduction group whose first reduction is r writes value w (dep:
 * w is computed from the group's reductions). */
typedef enum FgPlace {
	FG_PLACE_NONE,          /* nowhere: the group cannot write it */
	FG_PLACE_ROWS,          /* once per row or column, at r's result */
	FG_PLACE_SPACE,         /* per element of r's input, the space */
} FgPlace;
FgPlace fg_kind_write_place(const FgGraph *g, int r, int w, int dep);

/* The register model: a thread of the estimate carries FG_REGS_ELEMS
 * elements of each live value, a register each, beside a base for its
 * indices and a pointer per tensor it reads. */
#define FG_REGS_BASE 16         /* indices, loop control, the thread's id */
#define FG_REGS_PER_READ 2      /* a 64-bit pointer per tensor read */
#define FG_REGS_READS_MAX 8     /* pointers counted: beyond, constant memory */
#define FG_REGS_ELEMS 4         /* elements a thread, registers a live value */
/* Registers of a thread reading `reads` tensors with `live` values live. */
int fg_kind_regs(int reads, int live);
/* Two groups' estimates as one kernel's: they share the base. */
int fg_kind_regs_merged(int a, int b);
/* Group gr's estimate (est_regs) for a thread carrying `elems` elements
 * of each value instead of FG_REGS_ELEMS. */
int fg_kind_regs_at(const FgGroup *gr, int elems);
/* Whether an estimate stays within the limit (--reg-limit). */
int fg_kind_regs_fit(const FgFuseOptions *o, int regs);
/* Row elements a thread of a row kernel holds in registers, at most, its
 * block of up to 1024 threads keeping the whole row there: longer rows go
 * to shared memory, a cluster, or stream (compiler/cuda/rowreduce.c). */
#define FG_ROW_REGS 16

/* The FLOPs of node id, onto *tc (matmuls the tensor cores run: f16 and
 * bf16 operands, f32 under --tf32) or *cc (the rest: other matmuls, one
 * per result element of an elementwise op or a scan, one per input
 * element of a reduction or a topk); layout ops and sources have none. */
void fg_kind_flops(const FgGraph *g, int id, const FgFuseOptions *o, double *tc, double *cc);

/* The multiprocessors of the GPU the plan is for (the H200's), the
 * blocks and threads one holds at most and its shared memory (each
 * block's 1 KiB reserved of it counted). */
#define FG_SMS 132
#define FG_SM_BLOCKS 32
#define FG_SM_THREADS 2048
#define FG_SM_SMEM (228 << 10)
/* A topk group whose epilogue reduces along topk's axis (the picks'
 * sum, to renormalize them) keeps its k picks in registers, so k is at
 * most this (compiler/cuda/topk.c). */
#define FG_TOPK_PICKS_HELD 16
/* How a scan group's kernel walks its space (compiler/cuda/scan.c): rows
 * (every element with the same coordinates off the axis) of len
 * elements, a block of `threads` taking tiles of threads x items; parts
 * above 1: each row cut into that many parts of part_len elements (whole
 * tiles; the last may be shorter), one block each, in two launches (each
 * part's total, then each part scanned from the totals before it, reading
 * its inputs again). */
#define FG_SCAN_THREADS 256
#define FG_SCAN_ITEMS 8
#define FG_SCAN_BLOCKS_PER_SM 4
#define FG_SCAN_PART_TILES 4
typedef struct FgScanShape {
	int threads, items;
	int64_t rows, len, parts, part_len;
} FgScanShape;
void fg_kind_scan_shape(const FgShape *s, int axis, FgScanShape *out);

/* An attention group (passes/attention.c, compiler/cuda/attention.c):
 *     o = matmul(p, v), p = softmax(x) over the last axis (expanded: max,
 *     sub, exp, sum, div), x = elementwise ops on s, s = matmul(q, k^T)
 * found in primitives (p through dropout, products and quotients on its
 * way to the matmul).  The ops on the scores (chain, mm1's consumer
 * first, x last) each take the scores as one operand and, as the others,
 * values that broadcast into them (a scale, a mask, a bias).  q is
 * [.., Sq, D] and has o's batch dims; k and v are [.., Sk, D] with batch
 * dims of 1 or o's (GQA and MQA share K and V over query heads). */
#define FG_ATTN_CHAIN_MAX 16
#define FG_ATTN_PROBS_MAX 4
typedef struct FgAttn {
	int mm1, mm2;           /* the scores' matmul and the output's */
	int q, k, v;            /* the stored operands */
	int kt;                 /* the transpose of k that mm1 reads */
	int max, sub, exp, sum, p;      /* the softmax */
	int x;                  /* what the softmax reads (mm1 without a chain) */
	int chain[FG_ATTN_CHAIN_MAX], nchain;
	/* the ops on the probabilities, p's consumer first, the second
	 * matmul's operand last: dropout, products and quotients by other
	 * values (linear in p: applied to the unnormalized exp(x - m)) */
	int probs[FG_ATTN_PROBS_MAX], nprobs;
	int64_t sq, sk, d;
	/* A log-sum-exp of the scores, lse = f + log(sum(exp(x - f1))) with
	 * f and f1 each max(x) or where(isinf(max(x)), 0, max(x)) over the
	 * last axis (logsumexp expanded, or written by hand), what a backward
	 * pass keeps: the kernel writes it per row from its running max and
	 * sum.  lse_y: the value written (the add, or a reshape of it that
	 * drops the axis of 1), -1 when none; lse: its ops (f, f1 and their
	 * maxes, the sub, exp, sum, log and add, the reshape). */
	int lse_y, lse_f, lse_f1, lse_add;
	int lse[12], nlse;
	/* p written (an output, @save or @materialize): the kernel stores it
	 * from a second pass over the keys, once each row's max and sum are
	 * known */
	int p_written;
} FgAttn;
/* Whether matmul mm2 ends the attention pattern: 0 when it does not
 * (a matmul of something else), 1 with *a filled, -1 when it does but a
 * condition of the kernel fails: *why says which, with the shapes. */
int fg_kind_attention(const FgGraph *g, int mm2, FgAttn *a, const char **why, FgArena *ar);

/* ------------------------------------------------------ passes/memplan.c */

/* Gives every value written by a group and not an input an offset in one
 * arena (256-byte aligned), reusing space between values whose lifetimes
 * (first writing group .. last reading group, outputs and saved values to
 * the end) do not overlap.  Sets plan->offset, planned_bytes, naive_bytes. */
void fg_pass_memplan(FgPlan *plan);

/* ------------------------------------------------------- compiler/json.c */

typedef enum FgJsonKind {
	FG_JSON_NULL, FG_JSON_BOOL, FG_JSON_NUMBER, FG_JSON_STRING, FG_JSON_ARRAY, FG_JSON_OBJECT,
} FgJsonKind;

typedef struct FgJson {
	FgJsonKind kind;
	double num;             /* numbers; booleans as 0 and 1 */
	const char *str;        /* strings, UTF-8 */
	struct FgJson *items;   /* arrays and objects: n values */
	const char **keys;      /* objects: each value's key */
	int n;
	FgLoc loc;              /* where the value starts */
} FgJson;

/* Reads src as one JSON value into *out; a located error (through d,
 * whose src should be src) and 1 when it is not strict JSON. */
int fg_json_parse(FgArena *a, FgDiag *d, const FgSource *src, FgJson *out);
/* The value under key in an object, or NULL. */
const FgJson *fg_json_get(const FgJson *obj, const char *key);

/* ----------------------------------------------------- compiler/report.c */

void fg_report_text(FILE *f, const FgPlan *plan);
void fg_report_json(FILE *f, const FgPlan *plan);
/* The plan as a Graphviz picture: each group op by op (a cluster) when
 * that is a small picture, else one node per group. */
void fg_report_dot(FILE *f, const FgPlan *plan);
/* ... with ops[gi] nonzero for the groups drawn op by op, the others one
 * node each; ops NULL: fg_report_dot's choice. */
void fg_report_dot_ops(FILE *f, const FgPlan *plan, const char *ops);
/* One value by name (fgc report --explain NAME): what computes it, in
 * which groups, whether it is written and why, what the partitioner did
 * with it and what reads it.  An unknown name is an error (1). */
int fg_report_explain(FILE *f, const FgPlan *plan, const char *name, FgDiag *d);
/* Reads a binary's --bench-json FILE into plan->measured, each launch
 * checked against the plan's (the same graph, the same launches per
 * group); a located error and 1 when it is not. */
int fg_report_measured(FgPlan *plan, const char *path, FgDiag *d);
/* Two plans side by side (fgc report --diff): totals, then each group of
 * a matched to the groups of b holding its ops (by value name, else op
 * and source position): the same, split, merged, or what moved; la and
 * lb say what each plan is. */
void fg_report_diff(FILE *f, const FgPlan *a, const char *la, const FgPlan *b, const char *lb);

/* ---------------------------------------------------- compiler/extract.c */

/* Group `gi` as a standalone graph: its reads become inputs, its writes
 * outputs.  The result shares g's arena. */
void fg_extract_group(const FgPlan *plan, int gi, FgGraph *out);
/* fgc verify's options.  precision: FG_INTERP_F64, each group in double
 * precision, so that only what the plan stores differs from the op-by-op
 * result; or FG_INTERP_KERNEL, each group in the kernels' f32 arithmetic,
 * what a binary should compute, then judged as --check judges a binary
 * (the RMSE gate's baseline the graph in its dtypes).  plant: an
 * FgrtPlant, the bug put into every value compared.  outputs: where the
 * plan's values are written as fgc run writes results, or NULL. */
typedef struct FgVerifyOptions {
	uint64_t seed;
	int precision;
	int plant;
	const char *outputs;
} FgVerifyOptions;
/* Runs the plan group by group in the reference interpreter, rounding each
 * written value to its dtype, and compares every output and saved value
 * with the op-by-op result (tolerances of testing.md).  0 when they agree;
 * 1 after reporting the differences.  o NULL: seed 0, f64, nothing
 * planted or written. */
int fg_plan_verify(const FgPlan *plan, const FgVerifyOptions *o, FgDiag *d);

/* ------------------------------------------------------ compiler/gates.c */

/* Per node of g, the FGRT_GATE_* bits of the gate that judges it: RMSE fed
 * by a reduction, a matmul, or a node whose read_back[] is set (a float
 * value stored and read back; read_back may be NULL), TF32 fed by an f32
 * matmul when tf32, TRANSC fed by a transcendental op. */
void fg_gates(const FgGraph *g, const unsigned char *read_back, int tf32, unsigned char *gate);

/* ------------------------------------------------------ compiler/cuda/ */

typedef struct FgCudaOptions {
	const char *out;        /* -o OUT: writes OUT.cu, and OUT with build;
				   with lib, the library (OUT's folder/NAME.cu
				   and NAME.h beside it, NAME the .fg's stem) */
	const char *source;     /* the .fg path, named in the file's header */
	const char *arch;       /* --arch, for build: sm_90a when NULL */
	int build;              /* --build: run nvcc on OUT.cu and the runtime */
	FgGemmChoice gemm;      /* --gemm */
	int lib;                /* --lib: a shared library with a C ABI */
} FgCudaOptions;

/* Writes plan as one CUDA C++ file: a kernel per group, the program table
 * and fg_program_run() (runtime/fgrt_program.h); with plan->opt.tf32, f32
 * matmuls may multiply as tf32.  Returns the number of groups it cannot
 * compile, each reported through d. */
int fg_cuda_emit(FILE *f, const FgPlan *plan, const char *source, FgGemmChoice gemm, FgDiag *d);
/* What `fgc compile` (with plan->gemm) does with gemm group gi, in a phrase
 * for fgc report: the generated matmul or cuBLASLt, and why; with an
 * attention group, the flash kernel and what it skips and writes; NULL for
 * other groups. */
const char *fg_cuda_gemm_note(const FgPlan *plan, int gi);
/* Per group gi, owner[gi]: the group whose kernels it launches, itself
 * when its code is its own (groups that compute the same on other tensors
 * share one kernel; with plan->gemm), -1 when it has no kernel (cuBLASLt
 * alone).  Returns how many groups own theirs. */
int fg_cuda_kernel_owners(const FgPlan *plan, int *owner);
/* The plan's costs as compile (--gemm gemm) emits it: each group's launches
 * (kernels and cuBLASLt calls, the .cu's launch table) and its bytes with
 * the scratch it writes and reads back (a matmul into f32 scratch, a split
 * reduction's partial results, a scan's part totals); the totals again;
 * and, from the same emission, plan->kernel_owner(s).  Once per plan: the
 * scratch is added to the partitioner's bytes. */
void fg_cuda_plan_costs(FgPlan *plan, FgGemmChoice gemm);
/* fgc compile: writes o->out.cu (nothing on failure), then builds o->out
 * with nvcc when o->build; with o->lib the .cu, a header of the model's C
 * ABI and the shared library o->out.  0, or 1 after reporting the error. */
int fg_cuda_compile(const FgPlan *plan, const FgCudaOptions *o, FgDiag *d);

/* ----------------------------------------------------- compiler/torch.c */

/* fgc emit-torch: writes g (built, composites not expanded) as a Python
 * module over PyTorch into `out` (NULL: stdout; nothing on failure);
 * `source` is named in its header.  0, or 1 after reporting the error. */
int fg_torch_emit(const FgGraph *g, const char *out, const char *source, FgDiag *d);

/* ---------------------------------------------------- compiler/interp.c */

/* Evaluates g op by op in double precision.  in[i] holds the elements of
 * input g->inputs[i] (C order).  Returns one buffer per node, malloc'ed,
 * non-NULL exactly where keep[id] is set (keep NULL: every node); the
 * rest is freed as soon as its last consumer ran.  NULL when out of memory
 * or at a run-time error (an index out of range, an integer division by
 * zero: the first in graph order), with the error in d. */
double **fg_interp_eval(const FgGraph *g, double *const *in,
			const unsigned char *keep, FgDiag *d);
/* The same; in_dtype: in the graph's dtypes instead, the way an op-by-op
 * program computes (PyTorch eager): every float op's result rounded to its
 * dtype (to f32 inside a composite and for constants), sums in f32 in
 * blocks then pairwise, matmul products added in f32 in k order.  What the
 * RMSE gate measures legitimate error by (testing.md's ref_in_dtype). */
double **fg_interp_eval_in(const FgGraph *g, double *const *in,
			   const unsigned char *keep, int in_dtype, FgDiag *d);
/* in_dtype of fg_interp_eval_in: f64 (fg_interp_eval); the dtypes, as
 * above; or the kernels' precision: every float op rounded to f32, the
 * type a generated kernel computes in, sums and matmuls in f32 as above
 * (a fusion group's arithmetic; the caller rounds what it stores). */
enum { FG_INTERP_F64 = 0, FG_INTERP_IN_DTYPE = 1, FG_INTERP_KERNEL = 2 };
void fg_interp_free(const FgGraph *g, double **vals);

/* ------------------------------------------------------- compiler/run.c */

/* fgc run: reads inputs from indir (NAME.npy; a missing one is an error
 * that lists what indir holds, unless draw_missing: then drawn from seed),
 * evaluates g and writes outputs and saved values into outdir; in_dtype:
 * also evaluates g in its dtypes (fg_interp_eval_in) into
 * outdir/FGRT_IN_DTYPE_DIR, the RMSE gate's baseline.  Returns 0, or 1
 * after reporting the error. */
int fg_run(const FgGraph *g, const char *indir, int draw_missing, const char *outdir,
	   uint64_t seed, int in_dtype, FgDiag *d);
/* The values of g's inputs and params, in[k] for g->inputs[k]: read from
 * indir/NAME.npy (indir NULL: none) or drawn from seed as fgc run does.
 * Returns the number that failed (each reported); the caller frees every
 * in[k], which may be NULL. */
int fg_run_inputs(const FgGraph *g, const char *indir, uint64_t seed, FgDiag *d, double **in);
/* Writes vals[id] of every output and saved value, already rounded to its
 * dtype, into outdir (made when missing) as fgc run does.  0, or 1 after
 * reporting the error. */
int fg_run_write(const FgGraph *g, const char *outdir, double **vals, FgDiag *d);

#endif
