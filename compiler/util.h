/*
 * util.h - generic utilities every layer of fgc uses: the arena that owns a
 * compilation's memory, growable arrays kept in that arena, source files and
 * the one diagnostic format, and fg_die() for internal bugs.
 *
 * Invariants: nothing allocated from an FgArena is freed piecemeal; the whole
 * arena goes at once with fg_arena_free().  Every user-facing error goes
 * through fg_error() so it reads `file:line:col: error: message`, then the
 * source line and a caret under the column.
 */
#ifndef FG_UTIL_H
#define FG_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define FG_PRINTF(f, a) __attribute__((format(printf, f, a)))
#define FG_NORETURN __attribute__((noreturn))
#else
#define FG_PRINTF(f, a)
#define FG_NORETURN
#endif

/* compiler/util.c: internal bugs */
FG_NORETURN void fg_die_at(const char *file, int line, const char *fmt, ...) FG_PRINTF(3, 4);
#define fg_die(...) fg_die_at(__FILE__, __LINE__, __VA_ARGS__)
#define FG_ASSERT(c) ((c) ? (void)0 : fg_die("assertion failed: %s", #c))

/* compiler/util.c: the arena.  Blocks are malloc'ed and chained; an
 * allocation that does not fit gets a block of its own size. */
typedef struct FgArenaBlock FgArenaBlock;
typedef struct FgArena {
	FgArenaBlock *head;     /* newest block first */
	size_t used;            /* bytes used in head */
	size_t total;           /* bytes handed out overall, for statistics */
} FgArena;

void fg_arena_init(FgArena *a);
void fg_arena_free(FgArena *a);
void *fg_arena_alloc(FgArena *a, size_t n);     /* zeroed, 16-byte aligned */
void *fg_arena_array(FgArena *a, size_t n, size_t elem); /* n*elem, checked */
char *fg_arena_strndup(FgArena *a, const char *s, size_t n);
char *fg_arena_strdup(FgArena *a, const char *s);
char *fg_arena_printf(FgArena *a, const char *fmt, ...) FG_PRINTF(2, 3);
/* A mask of axes as a list: "[0, 2]". */
const char *fg_axes_list(FgArena *a, uint32_t axes);

/* Growable arrays in the arena: a struct with fields `v`, `n`, `cap` of any
 * element type.  Growth doubles and copies; the old storage stays in the
 * arena until it is freed, which costs at most as much again. */
#define FG_VEC(T) struct { T *v; int n; int cap; }
#define fg_vec_push(arena, vec, x)                                             \
	do {                                                                   \
		if ((vec)->n == (vec)->cap)                                    \
			fg_vec_grow_((arena), (void **)&(vec)->v, &(vec)->cap, \
				     sizeof(*(vec)->v), (vec)->n);             \
		(vec)->v[(vec)->n++] = (x);                                    \
	} while (0)
void fg_vec_grow_(FgArena *a, void **v, int *cap, size_t elem, int n);

/* compiler/diag.c: sources and diagnostics */
typedef struct FgLoc {
	int line;               /* 1-based; 0 means "no location" */
	int col;                /* 1-based byte column */
} FgLoc;

typedef struct FgSource {
	const char *name;       /* file name as the user gave it */
	const char *text;       /* contents, NUL-terminated (may hold NULs) */
	size_t len;             /* bytes in text, not counting the final NUL */
} FgSource;

typedef struct FgDiag {
	const FgSource *src;    /* the file locations point into */
	int nerrors;            /* errors reported so far */
	int nwarnings;          /* warnings reported so far */
	int max_errors;         /* stop printing past this many (0: 50) */
	void *out;              /* FILE* to print to (NULL: stderr) */
} FgDiag;

/* Reads a whole file; on failure prints `error: cannot read 'x': reason`
 * and returns -1.  Refuses directories and files over 1 GiB. */
int fg_source_read(FgArena *a, const char *path, FgSource *out);

void fg_error(FgDiag *d, FgLoc loc, const char *fmt, ...) FG_PRINTF(3, 4);
void fg_warning(FgDiag *d, FgLoc loc, const char *fmt, ...) FG_PRINTF(3, 4);
void fg_note(FgDiag *d, FgLoc loc, const char *fmt, ...) FG_PRINTF(3, 4);
void fg_verror(FgDiag *d, FgLoc loc, const char *kind, const char *fmt, va_list ap);

/* Levenshtein distance, capped: used for "did you mean" suggestions. */
int fg_edit_distance(const char *a, const char *b, int cap);

#endif
