/*
 * fgrt.h - the public header of the fgc host runtime: .npy files, the
 * storage dtypes' conversions, and comparison with golden files.  It is
 * compiled into the compiler (reference interpreter) and, by nvcc, into
 * every fused binary, so it includes no compiler header and depends on
 * nothing but libc and libm.
 *
 * Every function that can fail returns 0 on success and -1 on failure,
 * with a one-line message in err (no trailing newline) that names the file
 * and says what was found and what was expected.
 */
#ifndef FGRT_H
#define FGRT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FGRT_MAX_RANK 8
#define FGRT_ERRLEN 512

/* X(ID, name, bytes, npy): the dtypes of a program's tensors (FgrtDtype,
 * fgrt_program.h: FGRT_ID), with the .npy type each travels as (bf16 as f4
 * values).  The compiler's FG_DTYPES (compiler/fg.h) names the same ones
 * with the same names and sizes; tests/unit/test_tables.c checks it. */
#define FGRT_DTYPES(X)                                                         \
	X(F32, "f32", 4, F4)                                                   \
	X(F16, "f16", 2, F2)                                                   \
	X(BF16, "bf16", 2, F4)                                                 \
	X(I32, "i32", 4, I4)                                                   \
	X(BOOL, "bool", 1, B1)                                                 \
	X(I8, "i8", 1, I1)                                                     \
	X(U8, "u8", 1, U1)                                                     \
	X(F8E4M3, "f8e4m3", 1, F4)                                             \
	X(F8E5M2, "f8e5m2", 1, F4)

/* The element types a .npy file may hold: little-endian f4 f2 i4 b1 i1 u1, and
 * f8 for the f64 reference that --check's RMSE gate measures against
 * (`fgc run --in-dtype` writes it under FGRT_F64_DIR; no tensor is f8). */
typedef enum FgrtNpyType {
	FGRT_NPY_F4,
	FGRT_NPY_F2,
	FGRT_NPY_I4,
	FGRT_NPY_B1,
	FGRT_NPY_F8,
	FGRT_NPY_I1,
	FGRT_NPY_U1,
} FgrtNpyType;

typedef struct FgrtNpy {
	FgrtNpyType type;
	int rank;
	int64_t shape[FGRT_MAX_RANK];
	int64_t numel;          /* product of shape (1 for rank 0) */
	size_t nbytes;          /* numel * element size */
	void *data;             /* malloc'ed, C order, little-endian */
} FgrtNpy;

/* runtime/npy.c */

/* Reads a .npy file of format version 1.0, 2.0 or 3.0, C order, one of the
 * four types above.  Everything else is rejected before anything large is
 * allocated: bad magic, header lengths past the end of the file, headers
 * that are not exactly {descr, fortran_order, shape}, Fortran order,
 * big-endian or other dtypes, negative or overflowing dims, ranks above
 * FGRT_MAX_RANK, data shorter or longer than the shape says, and data
 * larger than max_bytes (0: no limit beyond the file's size).  |b1 data
 * must hold only the bytes 0 and 1.  On failure *t is left empty (data
 * NULL), so fgrt_npy_free(t) is always safe. */
int fgrt_npy_read(const char *path, size_t max_bytes, FgrtNpy *t, char *err);
/* Writes t as format 1.0 (2.0 when the header needs it), preamble padded
 * to a multiple of 64 bytes.  Writes path.tmp.PID first, then renames it,
 * so a failure never leaves a partial file at path. */
int fgrt_npy_write(const char *path, const FgrtNpy *t, char *err);
/* --inputs DIR without --draw-missing: how many of the count tensors
 * names[] have no DIR/NAME.npy; when some, msg (n bytes) says which, the
 * .npy files DIR holds, a file that differs from a name only in case
 * (Res.npy for res), and that --draw-missing draws them.  -1 when out of
 * memory. */
int fgrt_inputs_missing(const char *dir, const char *const *names, int count, char *msg, size_t n);
void fgrt_npy_free(FgrtNpy *t);
/* Element size in bytes of a .npy type, and its descr ("<f4"). */
size_t fgrt_npy_type_size(FgrtNpyType t);
const char *fgrt_npy_type_descr(FgrtNpyType t);
/* Formats "(4096, 1024)" into buf, as Python spells tuples ("(5,)",
 * "()"), truncated to n bytes. */
char *fgrt_shape_str(char *buf, size_t n, int rank, const int64_t *shape);
/* Formats flat C-order index i of a tensor of this shape as "[3,17]". */
char *fgrt_index_str(char *buf, size_t n, int rank, const int64_t *shape, int64_t i);

/* runtime/half.c: IEEE binary16 and bfloat16, round to nearest even,
 * NaN kept NaN (quiet), infinities and subnormals exact.  Conversions from
 * double round once (no double rounding through float). */
uint16_t fgrt_f64_to_f16(double x);
double fgrt_f16_to_f64(uint16_t h);
uint16_t fgrt_f64_to_bf16(double x);
double fgrt_bf16_to_f64(uint16_t h);
/* The OCP 8-bit floats: f8e4m3 saturates at +-448 (no infinity; NaN stays
 * NaN), f8e5m2 overflows to infinity; both round to nearest even, once. */
uint8_t fgrt_f64_to_f8e4m3(double x);
double fgrt_f8e4m3_to_f64(uint8_t b);
uint8_t fgrt_f64_to_f8e5m2(double x);
double fgrt_f8e5m2_to_f64(uint8_t b);
uint16_t fgrt_f32_to_f16(float x);
float fgrt_f16_to_f32(uint16_t h);
uint16_t fgrt_f32_to_bf16(float x);
float fgrt_bf16_to_f32(uint16_t h);

/* runtime/check.c: comparison with a golden tensor (testing.md).
 * Elementwise mode: |a - e| <= atol + rtol*|e|, infinities equal, NaN only
 * where e is NaN.  RMSE mode (reductions, matmuls): rmse(a, ref) <=
 * m * rmse(round(ref), ref) + atol, no element beyond the outlier bound,
 * with NaN/Inf positions exact. */
typedef struct FgrtTol {
	double rtol, atol;      /* elementwise gate */
	double rmse_m;          /* > 0: use the RMSE gate with this m */
	double unit_roundoff;   /* > 0: the dtype's u (2^-11 for f16); the
				   RMSE gate's rounding term is then at least
				   u * rms(expected) / sqrt(3), the RMS error of
				   rounding values of that size, so that a
				   reference that happens to be exact in the
				   dtype (2x, small integers) does not shrink
				   the gate to atol */
	double outlier_k;       /* > 0 in RMSE mode: no element's error above
				   atol + outlier_k * (rmse_limit - atol) *
				   max(1, |ref| / rms(ref)) */
} FgrtTol;

/* The outlier bound's K (docs/testing.md): the largest of N normal errors
 * is about sqrt(2 ln N) sigma, 7.4 sigma for N = 2^40, and a value that
 * passes the RMSE gate has sigma at most its limit. */
#define FGRT_OUTLIER_K 10.0

/* Which gate judges a value, bits (compiler/gates.c decides them from the
 * graph; a program's tensor table carries them): RMSE, for values fed by a
 * reduction, a matmul or a float value stored and read back; TF32, the
 * RMSE gate at tf32's precision, for values fed by an f32 matmul under
 * --tf32 (implies RMSE); TRANSC, a transcendental op feeds the value (f32's
 * elementwise rtol 1e-5 rather than 1.3e-6). */
enum { FGRT_GATE_RMSE = 1, FGRT_GATE_TF32 = 2, FGRT_GATE_TRANSC = 4 };

typedef struct FgrtCheck {
	int ok;                 /* verdict */
	int64_t nbad;           /* elements outside the elementwise gate */
	int64_t worst;          /* flat index of the largest err - allowed (a
				 * NaN/Inf mismatch first), -1 if none */
	double worst_actual, worst_expected;
	double max_abs_err, max_rel_err;
	double rmse, rmse_limit;/* rmse over finite elements; limit 0 in
				 * elementwise mode */
	int64_t outliers;       /* RMSE mode: elements beyond the outlier bound */
	int64_t outlier;        /* the one furthest beyond it (by ratio), -1 */
	double outlier_actual, outlier_expected, outlier_allowed;
} FgrtCheck;

/* The tolerances of testing.md for a dtype named as in .fg ("f16") and a
 * value judged by gate (FGRT_GATE_* bits): f32's rtol 1.3e-6, 1e-5 with
 * TRANSC; the RMSE gate with its outlier bound under RMSE or TF32 (whose
 * unit roundoff 2^-10 the gate then takes where the dtype's is finer);
 * exact for i32 and bool. */
FgrtTol fgrt_tolerance(const char *dtype, int gate);

/* actual and expected are numel doubles; expected_rounded may be NULL
 * (then the RMSE gate uses expected itself).  In RMSE mode NaN/Inf
 * positions are matched against expected_rounded, since a finite
 * reference may overflow in the dtype; elementwise mode ignores it. */
void fgrt_check(const double *actual, const double *expected,
		const double *expected_rounded, int64_t numel,
		const FgrtTol *tol, FgrtCheck *res);
/* The same with the RMSE gate's baseline given: the reference computed in
 * the dtype (check.c); NULL: expected_rounded, or expected. */
void fgrt_check_base(const double *actual, const double *expected,
		     const double *expected_rounded, const double *baseline,
		     int64_t numel, const FgrtTol *tol, FgrtCheck *res);
/* What a verdict line prints after "max abs err E": the RMSE against its
 * limit, and for a failure the rule broken and its worst element, into
 * buf (n bytes, truncated); returns buf. */
char *fgrt_verdict_str(char *buf, size_t n, const FgrtTol *tol, const FgrtCheck *c, int rank,
		       const int64_t *shape, int64_t numel);

/* Planted bugs (`fgc verify --plant`, a binary's --check --plant): what a
 * kernel gets wrong one element, one row, one column or one residue tile
 * at a time, to show that the gates catch each.  The tensor is viewed as
 * [rows, cols], cols its last dim: ELEMENT the middle one (flat numel/2),
 * ROW the last row, COLUMN the last column, TILE the last
 * FGRT_PLANT_TILE_SIZE-square tile, partial where a dim is not a
 * multiple of it (a matmul's or a 2-D kernel's residue). */
typedef enum FgrtPlant {
	FGRT_PLANT_NONE, FGRT_PLANT_ELEMENT, FGRT_PLANT_ROW, FGRT_PLANT_COLUMN, FGRT_PLANT_TILE,
	FGRT_PLANT_COUNT
} FgrtPlant;
#define FGRT_PLANT_TILE_SIZE 64
/* "element", "row", "column", "tile" to its kind; NONE for anything else. */
FgrtPlant fgrt_plant_parse(const char *s);
const char *fgrt_plant_name(FgrtPlant p);
/* Puts the bug into a's values (numel of the shape; a float's off by a
 * quarter of max(|a|, rms(a)) plus 1e-4, eight times max(...) for the 8-bit
 * floats, a non-finite one made 0, an integer's off by one, a bool
 * flipped); unit: the dtype's unit roundoff (FgrtTol's), 0 for an
 * integer.  Returns how many elements it changed. */
int64_t fgrt_plant(FgrtPlant p, double *a, int rank, const int64_t *shape, double unit, int is_bool);

/* Where `fgc run --in-dtype` writes the reference computed in the dtypes,
 * under its --outputs DIR, and where --check DIR looks for it. */
#define FGRT_IN_DTYPE_DIR "in-dtype"
/* ... and the reference itself in f64 (<f8), unrounded: the RMSE gate of
 * testing.md measures rmse(actual, ref64), which the rounded golden file
 * would shift by up to half an ulp an element. */
#define FGRT_F64_DIR "f64"

#ifdef __cplusplus
}
#endif

#endif
