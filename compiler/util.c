/*
 * util.c - the arena, growable arrays and fg_die().
 *
 * An arena is a chain of malloc'ed blocks; allocations are bumped from the
 * newest block and never freed alone.  Running out of memory while
 * compiling is reported once, cleanly, and ends the process: the compiler
 * has no partial state worth saving and writes output files only at the end.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

#define FG_ARENA_BLOCK (64 * 1024)

struct FgArenaBlock {
	FgArenaBlock *next;
	size_t size;            /* usable bytes after the header */
	_Alignas(16) unsigned char data[];
};

void fg_die_at(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "fgc: internal error at %s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

static FG_NORETURN void out_of_memory(size_t n)
{
	fflush(stdout);
	fprintf(stderr, "fgc: error: out of memory (asked for %zu bytes)\n", n);
	exit(1);
}

void fg_arena_init(FgArena *a)
{
	memset(a, 0, sizeof *a);
}

void fg_arena_free(FgArena *a)
{
	FgArenaBlock *b = a->head;

	while (b) {
		FgArenaBlock *next = b->next;
		free(b);
		b = next;
	}
	memset(a, 0, sizeof *a);
}

void *fg_arena_alloc(FgArena *a, size_t n)
{
	size_t need = (n + 15) & ~(size_t)15;
	FgArenaBlock *b;

	if (need < n)
		out_of_memory(n);
	if (!a->head || a->head->size - a->used < need) {
		size_t size = need > FG_ARENA_BLOCK ? need : FG_ARENA_BLOCK;
		b = malloc(sizeof *b + size);
		if (!b)
			out_of_memory(n);
		b->size = size;
		if (a->head && need > FG_ARENA_BLOCK) {
			/* A big block goes behind the current one, so the
			 * current one's free space is not abandoned. */
			b->next = a->head->next;
			a->head->next = b;
			memset(b->data, 0, need);
			a->total += need;
			return b->data;
		}
		b->next = a->head;
		a->head = b;
		a->used = 0;
	}
	b = a->head;
	void *p = b->data + a->used;
	a->used += need;
	a->total += need;
	memset(p, 0, need);
	return p;
}

void *fg_arena_array(FgArena *a, size_t n, size_t elem)
{
	if (elem && n > (size_t)-1 / elem)
		out_of_memory((size_t)-1);
	return fg_arena_alloc(a, n * elem);
}

char *fg_arena_strndup(FgArena *a, const char *s, size_t n)
{
	char *p = fg_arena_alloc(a, n + 1);

	memcpy(p, s, n);
	p[n] = 0;
	return p;
}

char *fg_arena_strdup(FgArena *a, const char *s)
{
	return fg_arena_strndup(a, s, strlen(s));
}

char *fg_arena_printf(FgArena *a, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		fg_die("vsnprintf failed for '%s'", fmt);
	char *p = fg_arena_alloc(a, (size_t)n + 1);
	va_start(ap, fmt);
	vsnprintf(p, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return p;
}

const char *fg_axes_list(FgArena *a, uint32_t axes)
{
	const char *s = "[";
	for (int i = 0; i < 32; i++)
		if (axes & (1u << i))
			s = fg_arena_printf(a, "%s%s%d", s, s[1] ? ", " : "", i);
	return fg_arena_printf(a, "%s]", s);
}

void fg_vec_grow_(FgArena *a, void **v, int *cap, size_t elem, int n)
{
	int ncap = *cap ? *cap * 2 : 8;

	if (*cap > (1 << 29))
		out_of_memory((size_t)*cap * 2 * elem);
	void *nv = fg_arena_array(a, (size_t)ncap, elem);
	if (n)
		memcpy(nv, *v, (size_t)n * elem);
	*v = nv;
	*cap = ncap;
}

int fg_edit_distance(const char *a, const char *b, int cap)
{
	size_t la = strlen(a), lb = strlen(b);
	int row[64];

	if (lb >= 64 || la >= 64)
		return cap + 1;
	if ((la > lb ? la - lb : lb - la) > (size_t)cap)
		return cap + 1;
	for (size_t j = 0; j <= lb; j++)
		row[j] = (int)j;
	for (size_t i = 1; i <= la; i++) {
		int diag = row[0], best;
		row[0] = (int)i;
		best = row[0];
		for (size_t j = 1; j <= lb; j++) {
			int up = row[j];
			int cost = a[i - 1] == b[j - 1] ? 0 : 1;
			int v = diag + cost;
			if (up + 1 < v)
				v = up + 1;
			if (row[j - 1] + 1 < v)
				v = row[j - 1] + 1;
			row[j] = v;
			diag = up;
			if (v < best)
				best = v;
		}
		if (best > cap)
			return cap + 1;
	}
	return row[lb];
}
