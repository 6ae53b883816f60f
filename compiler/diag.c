/*
 * diag.c - source files and the one diagnostic format:
 *
 *   model.fg:4:12: error: cannot broadcast f32[4096,1024] with f32[512]
 *     y = x + b
 *           ^
 *
 * A diagnostic without a location (line 0) reads `fgc: error: message`.
 * The quoted line is cleaned for the terminal (control bytes and bytes
 * outside ASCII become '?') and cut to a window around the column, so a
 * 100,000-byte line or binary garbage still prints one readable line.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util.h"

#define FG_SOURCE_MAX (1u << 30)
#define FG_QUOTE_WINDOW 100     /* bytes quoted on each side of the column */
#define FG_MESSAGE_MAX 1024     /* bytes of a message, then "..." */

int fg_source_read(FgArena *a, const char *path, FgSource *out)
{
	FILE *f = fopen(path, "rb");
	struct stat st;

	memset(out, 0, sizeof *out);
	if (!f) {
		fprintf(stderr, "fgc: error: cannot read '%s': %s\n", path, strerror(errno));
		return -1;
	}
	if (fstat(fileno(f), &st) != 0 || S_ISDIR(st.st_mode)) {
		fprintf(stderr, "fgc: error: cannot read '%s': %s\n", path,
			S_ISDIR(st.st_mode) ? "is a directory" : strerror(errno));
		fclose(f);
		return -1;
	}
	/* Regular files are read in one go; pipes grow a buffer as they come. */
	size_t cap = S_ISREG(st.st_mode) ? (size_t)st.st_size + 1 : 4096, n = 0;
	char *buf = malloc(cap);
	for (;;) {
		if (!buf) {
			fprintf(stderr, "fgc: error: cannot read '%s': out of memory\n", path);
			fclose(f);
			return -1;
		}
		n += fread(buf + n, 1, cap - n, f);
		if (n < cap || ferror(f))
			break;
		if (cap >= FG_SOURCE_MAX) {
			fprintf(stderr, "fgc: error: cannot read '%s': larger than 1 GiB\n", path);
			free(buf);
			fclose(f);
			return -1;
		}
		char *nb = realloc(buf, cap * 2);
		if (!nb)
			free(buf);
		buf = nb;
		cap *= 2;
	}
	if (ferror(f)) {
		fprintf(stderr, "fgc: error: cannot read '%s': %s\n", path, strerror(errno));
		free(buf);
		fclose(f);
		return -1;
	}
	fclose(f);
	char *text = fg_arena_alloc(a, n + 1);
	memcpy(text, buf, n);
	free(buf);
	out->name = fg_arena_strdup(a, path);
	out->text = text;
	out->len = n;
	return 0;
}

/* The bytes of line `line` (1-based): start offset and length. */
static int find_line(const FgSource *src, int line, size_t *start, size_t *len)
{
	size_t i = 0;

	for (int l = 1; l < line; l++) {
		const char *nl = memchr(src->text + i, '\n', src->len - i);
		if (!nl)
			return -1;
		i = (size_t)(nl - src->text) + 1;
	}
	size_t e = i;
	while (e < src->len && src->text[e] != '\n' && src->text[e] != '\r')
		e++;
	*start = i;
	*len = e - i;
	return 0;
}

static void quote_line(FILE *out, const FgSource *src, FgLoc loc)
{
	size_t start, len, col = (size_t)(loc.col > 0 ? loc.col - 1 : 0);

	if (!src || !src->text || find_line(src, loc.line, &start, &len) != 0)
		return;
	size_t from = col > FG_QUOTE_WINDOW ? col - FG_QUOTE_WINDOW : 0;
	size_t to = len - from > 2 * FG_QUOTE_WINDOW ? from + 2 * FG_QUOTE_WINDOW : len;
	const char *prefix = from ? "..." : "";
	fputs("  ", out);
	fputs(prefix, out);
	for (size_t i = from; i < to; i++) {
		unsigned char c = (unsigned char)src->text[start + i];
		fputc(c == '\t' || (c >= 0x20 && c < 0x7f) ? c : '?', out);
	}
	fputs(to < len ? "...\n  " : "\n  ", out);
	fputs(prefix, out);
	for (size_t i = from; i < col && i < len; i++)
		fputc(src->text[start + i] == '\t' ? '\t' : ' ', out);
	for (size_t i = len; i < col && i < from + 2 * FG_QUOTE_WINDOW; i++)
		fputc(' ', out);
	fputs("^\n", out);
}

void fg_verror(FgDiag *d, FgLoc loc, const char *kind, const char *fmt, va_list ap)
{
	FILE *out = d->out ? d->out : stderr;
	int limit = d->max_errors ? d->max_errors : 50;

	if (kind[0] == 'e') {
		if (d->nerrors++ == limit)
			fprintf(out, "fgc: too many errors; stopping here\n");
		if (d->nerrors > limit)
			return;
	} else if (kind[0] == 'w') {
		d->nwarnings++;
	}
	fflush(stdout);
	if (loc.line > 0 && d->src)
		fprintf(out, "%s:%d:%d: %s: ", d->src->name, loc.line, loc.col, kind);
	else
		fprintf(out, "fgc: %s: ", kind);
	/* Messages quote names, which may be megabytes long: one line of a
	 * diagnostic is cut at FG_MESSAGE_MAX bytes. */
	char msg[FG_MESSAGE_MAX];
	int n = vsnprintf(msg, sizeof msg, fmt, ap);
	fputs(msg, out);
	if (n >= (int)sizeof msg)
		fputs("...", out);
	fputc('\n', out);
	if (loc.line > 0)
		quote_line(out, d->src, loc);
}

void fg_error(FgDiag *d, FgLoc loc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fg_verror(d, loc, "error", fmt, ap);
	va_end(ap);
}

void fg_warning(FgDiag *d, FgLoc loc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fg_verror(d, loc, "warning", fmt, ap);
	va_end(ap);
}

void fg_note(FgDiag *d, FgLoc loc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fg_verror(d, loc, "note", fmt, ap);
	va_end(ap);
}
