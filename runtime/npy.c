/*
 * npy.c - reading and writing .npy files (NumPy format versions 1.0, 2.0
 * and 3.0), the only way tensors enter and leave fgc and its fused binaries.
 *
 * The reader treats every file as hostile (testing.md, ".npy, defensively").
 * It trusts nothing it has not checked against the file's size from fstat:
 * the header length is bounded by the file before the header is read, and
 * the data length must equal numel * itemsize exactly before the data buffer
 * is allocated, so a 12-byte file that claims a terabyte allocates nothing
 * large.  The header parser is a small recursive-descent parser over an
 * explicit (pointer, length) pair: it never reads past the header, never
 * depends on a NUL terminator, and accepts only the subset of Python literal
 * syntax that NumPy's writers produce (a dict of exactly 'descr',
 * 'fortran_order' and 'shape', in any order, with free whitespace and
 * trailing commas).  On failure *t is left empty, so fgrt_npy_free is safe.
 *
 * The writer pads the preamble (magic, version, length, header and its
 * final '\n') to a multiple of 64 bytes as NumPy does, and writes through a
 * temporary file renamed into place, so a reader never sees half a file.
 *
 * Data is stored as the host holds it; the host must be little-endian,
 * which the #error below enforces where the compiler can tell.
 */
#include "fgrt.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "fgrt's .npy code assumes a little-endian host"
#endif

#if defined(__GNUC__)
#define NPY_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define NPY_PRINTF(f, a)
#endif

/* Headers are a few hundred bytes; NumPy itself refuses more than 10000
 * by default.  The bound keeps a header length of 4 GB from costing 4 GB. */
#define NPY_MAX_HEADER (1u << 20)
#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAGIC_LEN 6

static const char *const npy_descrs[] = {"<f4", "<f2", "<i4", "|b1", "<f8", "|i1", "|u1"};
static const size_t npy_sizes[] = {4, 2, 4, 1, 8, 1, 1};
#define NPY_NTYPES 7
#define NPY_ACCEPTED "'<f4', '<f2', '<i4', '|b1', '<f8', '|i1', '|u1'"

size_t fgrt_npy_type_size(FgrtNpyType t)
{
	return (unsigned)t < NPY_NTYPES ? npy_sizes[t] : 0;
}

const char *fgrt_npy_type_descr(FgrtNpyType t)
{
	return (unsigned)t < NPY_NTYPES ? npy_descrs[t] : "invalid";
}

char *fgrt_shape_str(char *buf, size_t n, int rank, const int64_t *shape)
{
	size_t used = 0;
	if (n == 0)
		return buf;
	buf[0] = '\0';
	used += (size_t)snprintf(buf, n, "(");
	for (int i = 0; i < rank && used < n; i++)
		used += (size_t)snprintf(buf + used, n - used, "%s%lld",
					 i ? ", " : "", (long long)shape[i]);
	/* Python's spelling: a 1-tuple keeps its comma, as in the header. */
	if (used < n)
		snprintf(buf + used, n - used, "%s)", rank == 1 ? "," : "");
	return buf;
}

void fgrt_npy_free(FgrtNpy *t)
{
	if (!t)
		return;
	free(t->data);
	memset(t, 0, sizeof(*t));
}

/* Formats "path: message" into err (which may be NULL) and returns -1. */
static int npy_fail(char *err, const char *path, const char *fmt, ...)
	NPY_PRINTF(3, 4);
static int npy_fail(char *err, const char *path, const char *fmt, ...)
{
	if (!err)
		return -1;
	int k = snprintf(err, FGRT_ERRLEN, "%s: ", path);
	if (k < 0 || k >= FGRT_ERRLEN)
		return -1;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err + k, (size_t)(FGRT_ERRLEN - k), fmt, ap);
	va_end(ap);
	return -1;
}

/* ---- the header parser ------------------------------------------------ */

/* The header as an explicit span: `i` never passes `n`, so every peek is
 * in bounds whatever bytes the file holds. */
typedef struct NpyParser {
	const char *s;          /* header bytes, not NUL-terminated */
	size_t n;               /* their number */
	size_t i;               /* next unread byte */
	const char *path;       /* for messages */
	char *err;              /* message buffer (FGRT_ERRLEN) or NULL */
} NpyParser;

/* What a header says, before it is checked against the file. */
typedef struct NpyHeader {
	int type;               /* FgrtNpyType, -1 until 'descr' is seen */
	int fortran;            /* -1 until 'fortran_order' is seen */
	int rank;               /* -1 until 'shape' is seen */
	int64_t shape[FGRT_MAX_RANK];
} NpyHeader;

static int peek(const NpyParser *p)
{
	return p->i < p->n ? (unsigned char)p->s[p->i] : -1;
}

/* Python's whitespace between tokens; NumPy pads with spaces and ends
 * the header with '\n'. */
static void skip_ws(NpyParser *p)
{
	for (int c = peek(p); c == ' ' || c == '\t' || c == '\n' || c == '\r' ||
	     c == '\f' || c == '\v'; c = peek(p))
		p->i++;
}

/* Names what the parser is looking at, for "expected X, found Y". */
static const char *found(const NpyParser *p, char *buf, size_t n)
{
	int c = peek(p);
	if (c < 0)
		snprintf(buf, n, "the end of the header");
	else if (c >= 0x20 && c < 0x7f)
		snprintf(buf, n, "'%c'", c);
	else
		snprintf(buf, n, "byte 0x%02x", (unsigned)c);
	return buf;
}

static int expect(NpyParser *p, char c, const char *what)
{
	char f[32];
	skip_ws(p);
	if (peek(p) == (unsigned char)c) {
		p->i++;
		return 0;
	}
	return npy_fail(p->err, p->path, "bad header: expected '%c' %s, found %s",
			c, what, found(p, f, sizeof(f)));
}

/* A Python string literal without escapes: NumPy never writes any, and
 * refusing them keeps every accepted string printable as is. */
static int parse_string(NpyParser *p, const char **s, size_t *len)
{
	char f[32];
	skip_ws(p);
	int q = peek(p);
	if (q != '\'' && q != '"')
		return npy_fail(p->err, p->path,
				"bad header: expected a quoted string, found %s",
				found(p, f, sizeof(f)));
	size_t start = ++p->i;
	for (; p->i < p->n && p->s[p->i] != q; p->i++) {
		unsigned char c = (unsigned char)p->s[p->i];
		if (c < 0x20 || c >= 0x7f || c == '\\')
			return npy_fail(p->err, p->path,
					"bad header: unsupported byte 0x%02x in a string",
					(unsigned)c);
	}
	if (p->i >= p->n)
		return npy_fail(p->err, p->path, "bad header: unterminated string");
	*s = p->s + start;
	*len = p->i - start;
	p->i++;
	return 0;
}

static int parse_descr(NpyParser *p, NpyHeader *h)
{
	const char *s;
	size_t len;
	skip_ws(p);
	if (peek(p) == '[' || peek(p) == '{')
		return npy_fail(p->err, p->path,
				"unsupported dtype: structured dtypes are not accepted (accepted: %s)",
				NPY_ACCEPTED);
	if (parse_string(p, &s, &len) < 0)
		return -1;
	for (int t = 0; t < NPY_NTYPES; t++) {
		if (len == 3 && memcmp(s, npy_descrs[t], 3) == 0) {
			h->type = t;
			return 0;
		}
	}
	return npy_fail(p->err, p->path, "unsupported dtype '%.*s' (accepted: %s)",
			len > 40 ? 40 : (int)len, s, NPY_ACCEPTED);
}

static int parse_fortran(NpyParser *p, NpyHeader *h)
{
	skip_ws(p);
	size_t start = p->i;
	while (p->i < p->n && (p->s[p->i] == '_' ||
			       (p->s[p->i] >= 'A' && p->s[p->i] <= 'Z') ||
			       (p->s[p->i] >= 'a' && p->s[p->i] <= 'z')))
		p->i++;
	size_t len = p->i - start;
	if (len == 4 && memcmp(p->s + start, "True", 4) == 0)
		return npy_fail(p->err, p->path,
				"Fortran order is not supported (fortran_order is True; "
				"write the array with C order)");
	if (len == 5 && memcmp(p->s + start, "False", 5) == 0) {
		h->fortran = 0;
		return 0;
	}
	return npy_fail(p->err, p->path,
			"bad header: fortran_order must be True or False");
}

/* One dimension: decimal digits, checked against INT64_MAX digit by
 * digit so that no intermediate value overflows. */
static int parse_dim(NpyParser *p, int64_t *d)
{
	char f[32];
	skip_ws(p);
	if (peek(p) == '-')
		return npy_fail(p->err, p->path,
				"bad shape: negative dimension in the shape");
	if (peek(p) < '0' || peek(p) > '9')
		return npy_fail(p->err, p->path,
				"bad shape: expected a dimension, found %s",
				found(p, f, sizeof(f)));
	int64_t v = 0;
	while (peek(p) >= '0' && peek(p) <= '9') {
		int digit = peek(p) - '0';
		if (v > (INT64_MAX - digit) / 10)
			return npy_fail(p->err, p->path,
					"bad shape: a dimension overflows int64");
		v = v * 10 + digit;
		p->i++;
	}
	*d = v;
	return 0;
}

/* shape := '(' ')' | '(' dim ',' ')' | '(' dim (',' dim)+ ','? ')' */
static int parse_shape(NpyParser *p, NpyHeader *h)
{
	char f[32];
	int rank = 0, comma = 0;
	if (expect(p, '(', "to open the shape tuple") < 0)
		return -1;
	skip_ws(p);
	while (peek(p) != ')') {
		int64_t d = 0;
		if (parse_dim(p, &d) < 0)
			return -1;
		if (rank < FGRT_MAX_RANK)
			h->shape[rank] = d;
		rank++;
		skip_ws(p);
		comma = peek(p) == ',';
		if (comma) {
			p->i++;
			skip_ws(p);
		} else if (peek(p) != ')') {
			return npy_fail(p->err, p->path,
					"bad shape: expected ',' or ')', found %s",
					found(p, f, sizeof(f)));
		}
	}
	p->i++;
	if (rank == 1 && !comma)
		return npy_fail(p->err, p->path,
				"bad shape: (%lld) is not a tuple; a 1-tuple is written (%lld,)",
				(long long)h->shape[0], (long long)h->shape[0]);
	if (rank > FGRT_MAX_RANK)
		return npy_fail(p->err, p->path,
				"rank %d is above the maximum %d", rank, FGRT_MAX_RANK);
	h->rank = rank;
	return 0;
}

static int is_key(const char *key, size_t len, const char *name)
{
	return len == strlen(name) && memcmp(key, name, len) == 0;
}

/* entry := string ':' value, where the key decides the value's syntax.
 * Python would let a repeated key win silently; a file that has one was
 * not written by NumPy, so it is refused. */
static int parse_entry(NpyParser *p, NpyHeader *h)
{
	const char *key;
	size_t len;
	if (parse_string(p, &key, &len) < 0 ||
	    expect(p, ':', "after a key") < 0)
		return -1;
	int seen;
	if (is_key(key, len, "descr"))
		seen = h->type >= 0;
	else if (is_key(key, len, "fortran_order"))
		seen = h->fortran >= 0;
	else if (is_key(key, len, "shape"))
		seen = h->rank >= 0;
	else
		return npy_fail(p->err, p->path,
				"bad header: unexpected key '%.*s' (expected exactly "
				"'descr', 'fortran_order', 'shape')",
				len > 40 ? 40 : (int)len, key);
	if (seen)
		return npy_fail(p->err, p->path,
				"bad header: duplicate key '%.*s'", (int)len, key);
	return key[0] == 'd' ? parse_descr(p, h) :
	       key[0] == 'f' ? parse_fortran(p, h) : parse_shape(p, h);
}

/* header := ws '{' (entry (',' entry)* ','?)? '}' ws */
static int parse_header(NpyParser *p, NpyHeader *h)
{
	char f[32];
	h->type = h->fortran = h->rank = -1;
	skip_ws(p);
	if (peek(p) != '{')
		return npy_fail(p->err, p->path,
				"bad header: not a dict (found %s where '{' should be)",
				found(p, f, sizeof(f)));
	p->i++;
	skip_ws(p);
	while (peek(p) != '}') {
		if (parse_entry(p, h) < 0)
			return -1;
		skip_ws(p);
		if (peek(p) == ',') {
			p->i++;
			skip_ws(p);
		} else if (peek(p) != '}') {
			return npy_fail(p->err, p->path,
					"bad header: expected ',' or '}', found %s",
					found(p, f, sizeof(f)));
		}
	}
	p->i++;
	skip_ws(p);
	if (p->i != p->n)
		return npy_fail(p->err, p->path,
				"bad header: unexpected %s after the dict",
				found(p, f, sizeof(f)));
	const char *missing = h->type < 0 ? "descr" :
			      h->fortran < 0 ? "fortran_order" :
			      h->rank < 0 ? "shape" : NULL;
	if (missing)
		return npy_fail(p->err, p->path,
				"bad header: missing key '%s'", missing);
	return 0;
}

/* ---- reading ------------------------------------------------------------ */

/* Reads exactly n bytes unless the file ends or fails first. */
static size_t read_full(int fd, void *buf, size_t n)
{
	size_t got = 0;
	while (got < n) {
		size_t chunk = n - got > (1u << 30) ? (1u << 30) : n - got;
		ssize_t r = read(fd, (char *)buf + got, chunk);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	return got;
}

/* Reads the magic, version and header length.  *pre becomes the number
 * of bytes before the header. */
static int read_preamble(int fd, const char *path, int64_t size,
			 uint32_t *hlen, int *pre, char *err)
{
	unsigned char b[12];
	if (size < 10)
		return npy_fail(err, path, "file too short for .npy: %lld bytes, "
				"the preamble alone needs 10", (long long)size);
	size_t want = size < 12 ? (size_t)size : 12;
	errno = 0;
	if (read_full(fd, b, want) != want)
		return npy_fail(err, path, "read error: %s",
				errno ? strerror(errno) : "file shrank");
	if (memcmp(b, NPY_MAGIC, NPY_MAGIC_LEN) != 0)
		return npy_fail(err, path, "bad magic: not a .npy file "
				"(expected \\x93NUMPY at the start)");
	if (b[6] < 1 || b[6] > 3 || b[7] != 0)
		return npy_fail(err, path, "unsupported .npy format version %u.%u "
				"(expected 1.0, 2.0 or 3.0)", (unsigned)b[6],
				(unsigned)b[7]);
	if (b[6] == 1) {
		*hlen = (uint32_t)b[8] | (uint32_t)b[9] << 8;
		*pre = 10;
	} else {
		if (size < 12)
			return npy_fail(err, path, "file too short for .npy "
					"version %u.0: %lld bytes, the preamble "
					"needs 12", (unsigned)b[6], (long long)size);
		*hlen = (uint32_t)b[8] | (uint32_t)b[9] << 8 |
			(uint32_t)b[10] << 16 | (uint32_t)b[11] << 24;
		*pre = 12;
	}
	if ((int64_t)*hlen > size - *pre)
		return npy_fail(err, path, "header length %lu runs past the end "
				"of the file (%lld bytes)", (unsigned long)*hlen,
				(long long)size);
	if (*hlen > NPY_MAX_HEADER)
		return npy_fail(err, path, "header length %lu is larger than the "
				"%u accepted", (unsigned long)*hlen, NPY_MAX_HEADER);
	/* The file position must be at the header for the reads that follow. */
	if (lseek(fd, *pre, SEEK_SET) != *pre)
		return npy_fail(err, path, "seek error: %s", strerror(errno));
	return 0;
}

static int read_header(int fd, const char *path, uint32_t hlen, NpyHeader *h,
		       char *err)
{
	char *s = (char *)malloc(hlen ? hlen : 1);
	if (!s)
		return npy_fail(err, path, "out of memory for a %lu-byte header",
				(unsigned long)hlen);
	int rc;
	errno = 0;
	if (read_full(fd, s, hlen) != hlen) {
		rc = npy_fail(err, path, "read error in the header: %s",
			      errno ? strerror(errno) : "file shrank");
	} else {
		NpyParser p = {s, hlen, 0, path, err};
		rc = parse_header(&p, h);
	}
	free(s);
	return rc;
}

/* Sets numel and nbytes from the shape, rejecting overflow of int64 or
 * size_t.  A zero dim makes the product zero whatever the other dims are. */
static int shape_size(const char *path, const NpyHeader *h, FgrtNpy *t,
		      char *err)
{
	char sh[256];
	int64_t numel = 1;
	int zero = 0;
	for (int i = 0; i < h->rank; i++)
		zero |= h->shape[i] == 0;
	for (int i = 0; i < h->rank && !zero; i++) {
		if (numel > INT64_MAX / h->shape[i])
			return npy_fail(err, path, "bad shape: the product of "
					"shape %s overflows int64", fgrt_shape_str(
					sh, sizeof(sh), h->rank, h->shape));
		numel *= h->shape[i];
	}
	if (zero)
		numel = 0;
	size_t isz = fgrt_npy_type_size((FgrtNpyType)h->type);
	if ((uint64_t)numel > (uint64_t)INT64_MAX / isz ||
	    (uint64_t)numel > SIZE_MAX / isz)
		return npy_fail(err, path, "bad shape: shape %s of %s overflows "
				"the byte count", fgrt_shape_str(sh, sizeof(sh),
				h->rank, h->shape), npy_descrs[h->type]);
	t->type = (FgrtNpyType)h->type;
	t->rank = h->rank;
	memcpy(t->shape, h->shape, sizeof(t->shape));
	t->numel = numel;
	t->nbytes = (size_t)numel * isz;
	return 0;
}

/* The data must fill the rest of the file exactly: checked before the
 * buffer is allocated, so what a header claims costs nothing. */
static int check_data_len(const char *path, const FgrtNpy *t, int64_t avail,
			  size_t max_bytes, char *err)
{
	char sh[256];
	fgrt_shape_str(sh, sizeof(sh), t->rank, t->shape);
	if ((uint64_t)t->nbytes != (uint64_t)avail)
		return npy_fail(err, path, "%s: shape %s of %s needs %llu bytes, "
				"file has %lld", (uint64_t)t->nbytes >
				(uint64_t)avail ? "truncated data" :
				"trailing data", sh, npy_descrs[t->type],
				(unsigned long long)t->nbytes, (long long)avail);
	if (max_bytes && t->nbytes > max_bytes)
		return npy_fail(err, path, "data of %llu bytes (shape %s of %s) "
				"exceeds the limit of %llu bytes",
				(unsigned long long)t->nbytes, sh,
				npy_descrs[t->type],
				(unsigned long long)max_bytes);
	return 0;
}

/* Bools are bytes 0 and 1; anything else would make later arithmetic on
 * them disagree between the interpreter and the GPU. */
static int check_bools(const char *path, const FgrtNpy *t, char *err)
{
	const unsigned char *b = (const unsigned char *)t->data;
	for (size_t i = 0; i < t->nbytes; i++)
		if (b[i] > 1)
			return npy_fail(err, path, "bool element %zu holds byte "
					"0x%02x (expected 0 or 1)", i,
					(unsigned)b[i]);
	return 0;
}

static int read_data(int fd, const char *path, FgrtNpy *t, char *err)
{
	t->data = malloc(t->nbytes ? t->nbytes : 1);
	if (!t->data)
		return npy_fail(err, path, "out of memory for %zu bytes of data",
				t->nbytes);
	errno = 0;
	if (read_full(fd, t->data, t->nbytes) != t->nbytes)
		return npy_fail(err, path, "read error in the data: %s",
				errno ? strerror(errno) : "file shrank");
	return t->type == FGRT_NPY_B1 ? check_bools(path, t, err) : 0;
}

static int read_fd(int fd, const char *path, size_t max_bytes, FgrtNpy *t,
		   char *err)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return npy_fail(err, path, "cannot stat: %s", strerror(errno));
	if (S_ISDIR(st.st_mode))
		return npy_fail(err, path, "is a directory, not a .npy file");
	if (!S_ISREG(st.st_mode))
		return npy_fail(err, path, "not a regular file");
	int64_t size = (int64_t)st.st_size;
	uint32_t hlen = 0;
	int pre = 0;
	NpyHeader h;
	if (read_preamble(fd, path, size, &hlen, &pre, err) < 0 ||
	    read_header(fd, path, hlen, &h, err) < 0 ||
	    shape_size(path, &h, t, err) < 0 ||
	    check_data_len(path, t, size - pre - (int64_t)hlen, max_bytes,
			   err) < 0)
		return -1;
	return read_data(fd, path, t, err);
}

int fgrt_npy_read(const char *path, size_t max_bytes, FgrtNpy *t, char *err)
{
	memset(t, 0, sizeof(*t));
	/* O_NONBLOCK: opening a FIFO must not wait for a writer; read_fd
	 * refuses anything but a regular file, where the flag does nothing. */
	int fd = open(path, O_RDONLY | O_NONBLOCK);
	if (fd < 0)
		return npy_fail(err, path, "cannot open: %s", strerror(errno));
	int rc = read_fd(fd, path, max_bytes, t, err);
	close(fd);
	if (rc < 0)
		fgrt_npy_free(t);
	return rc;
}

/* ---- writing ------------------------------------------------------------ */

/* A tensor is written only if its fields agree with each other: a wrong
 * numel or nbytes would otherwise write a file that cannot be read back. */
static int check_tensor(const char *path, const FgrtNpy *t, char *err)
{
	if ((unsigned)t->type >= NPY_NTYPES)
		return npy_fail(err, path, "cannot write: invalid type %d",
				(int)t->type);
	if (t->rank < 0 || t->rank > FGRT_MAX_RANK)
		return npy_fail(err, path, "cannot write: rank %d is outside "
				"0..%d", t->rank, FGRT_MAX_RANK);
	NpyHeader h;
	FgrtNpy want;
	h.type = (int)t->type;
	h.rank = t->rank;
	for (int i = 0; i < t->rank; i++) {
		if (t->shape[i] < 0)
			return npy_fail(err, path, "cannot write: negative "
					"dimension %lld", (long long)t->shape[i]);
		h.shape[i] = t->shape[i];
	}
	if (shape_size(path, &h, &want, err) < 0)
		return -1;
	if (want.numel != t->numel || want.nbytes != t->nbytes)
		return npy_fail(err, path, "cannot write: numel %lld / nbytes %zu "
				"disagree with the shape (%lld / %zu)",
				(long long)t->numel, t->nbytes,
				(long long)want.numel, want.nbytes);
	if (t->nbytes && !t->data)
		return npy_fail(err, path, "cannot write: no data");
	return 0;
}

/* Builds the preamble in buf (at least 256 bytes): NumPy's own spelling
 * of the dict, then spaces and '\n' up to a multiple of 64.  Returns its
 * length. */
static size_t make_preamble(const FgrtNpy *t, char *buf, size_t n)
{
	char sh[256], dict[400];
	int dl = snprintf(dict, sizeof(dict),
			  "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
			  npy_descrs[t->type],
			  fgrt_shape_str(sh, sizeof(sh), t->rank, t->shape));
	/* Rank 8 of 19-digit dims is under 300 bytes: version 1.0 always
	 * fits, and 2.0 (for headers over 65535 bytes) is never needed. */
	size_t pre = 10;
	size_t total = (pre + (size_t)dl + 1 + 63) / 64 * 64;
	size_t hlen = total - pre;
	if (total > n)
		return 0;
	memcpy(buf, NPY_MAGIC, NPY_MAGIC_LEN);
	buf[6] = 1;
	buf[7] = 0;
	buf[8] = (char)(hlen & 0xff);
	buf[9] = (char)(hlen >> 8);
	memcpy(buf + pre, dict, (size_t)dl);
	memset(buf + pre + dl, ' ', hlen - (size_t)dl - 1);
	buf[total - 1] = '\n';
	return total;
}

static int write_full(int fd, const void *buf, size_t n)
{
	size_t done = 0;
	while (done < n) {
		size_t chunk = n - done > (1u << 30) ? (1u << 30) : n - done;
		ssize_t w = write(fd, (const char *)buf + done, chunk);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		done += (size_t)w;
	}
	return 0;
}

static int write_tmp(const char *tmp, const char *path, const FgrtNpy *t,
		     char *err)
{
	char pre[512];
	size_t plen = make_preamble(t, pre, sizeof(pre));
	if (plen == 0)
		return npy_fail(err, path, "cannot write: header too long");
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0666);
	if (fd < 0)
		return npy_fail(err, path, "cannot create %s: %s", tmp,
				strerror(errno));
	int bad = write_full(fd, pre, plen) < 0 ||
		  write_full(fd, t->data, t->nbytes) < 0;
	int saved = errno;
	if (close(fd) < 0 && !bad) {
		bad = 1;
		saved = errno;
	}
	if (bad)
		return npy_fail(err, path, "write error in %s: %s", tmp,
				strerror(saved));
	return 0;
}

int fgrt_npy_write(const char *path, const FgrtNpy *t, char *err)
{
	if (check_tensor(path, t, err) < 0)
		return -1;
	size_t n = strlen(path) + 32;
	char *tmp = (char *)malloc(n);
	if (!tmp)
		return npy_fail(err, path, "out of memory");
	snprintf(tmp, n, "%s.tmp.%ld", path, (long)getpid());
	int rc = write_tmp(tmp, path, t, err);
	if (rc == 0 && rename(tmp, path) < 0)
		rc = npy_fail(err, path, "cannot rename %s into place: %s", tmp,
			      strerror(errno));
	if (rc < 0)
		unlink(tmp);
	free(tmp);
	return rc;
}

char *fgrt_index_str(char *buf, size_t n, int rank, const int64_t *shape, int64_t i)
{
	int64_t ix[FGRT_MAX_RANK];
	size_t at = 0;

	for (int r = rank - 1; r >= 0; r--) {
		ix[r] = shape[r] ? i % shape[r] : 0;
		i = shape[r] ? i / shape[r] : 0;
	}
	at += (size_t)snprintf(buf, n, "[");
	for (int r = 0; r < rank && at < n; r++)
		at += (size_t)snprintf(buf + at, n - at, "%s%lld", r ? "," : "", (long long)ix[r]);
	if (at < n)
		snprintf(buf + at, n - at, "]");
	return buf;
}

/* ---------------------------------------------------- an inputs folder */

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Appends to msg (size n, NUL-terminated), never past it. */
static void put(char *msg, size_t n, const char *fmt, ...) NPY_PRINTF(3, 4);
static void put(char *msg, size_t n, const char *fmt, ...)
{
	size_t used = strlen(msg);
	if (used + 1 >= n)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg + used, n - used, fmt, ap);
	va_end(ap);
}

#define LIST_MAX 12     /* names a message lists before "and N more" */

int fgrt_inputs_missing(const char *dir, const char *const *names, int count, char *msg, size_t n)
{
	int missing = 0, nfound = 0, cap = 0;
	char **found = NULL;
	unsigned char *absent = calloc((size_t)count + 1, 1);
	msg[0] = '\0';
	if (!absent)
		return -1;
	for (int i = 0; i < count; i++) {
		size_t len = strlen(dir) + strlen(names[i]) + 6;
		char *path = malloc(len);
		struct stat st;
		if (!path) {
			free(absent);
			return -1;
		}
		snprintf(path, len, "%s/%s.npy", dir, names[i]);
		absent[i] = lstat(path, &st) != 0 && errno == ENOENT;
		missing += absent[i];
		free(path);
	}
	if (!missing) {
		free(absent);
		return 0;
	}
	DIR *dp = opendir(dir);
	for (struct dirent *e; dp && (e = readdir(dp)) != NULL;) {
		size_t len = strlen(e->d_name);
		if (len <= 4 || strcmp(e->d_name + len - 4, ".npy") != 0)
			continue;
		if (nfound == cap) {
			cap = cap ? 2 * cap : 16;
			char **grown = realloc(found, (size_t)cap * sizeof *found);
			if (!grown)
				break;
			found = grown;
		}
		if ((found[nfound] = strdup(e->d_name)) != NULL)
			nfound++;
	}
	if (dp)
		closedir(dp);
	qsort(found, (size_t)nfound, sizeof *found, cmp_str);
	put(msg, n, "'%s' has no file for %d of the %d inputs and params:", dir, missing, count);
	for (int i = 0, shown = 0; i < count; i++)
		if (absent[i] && shown++ < LIST_MAX)
			put(msg, n, "%s %s.npy", shown > 1 ? "," : "", names[i]);
	if (missing > LIST_MAX)
		put(msg, n, " and %d more", missing - LIST_MAX);
	put(msg, n, "; it holds ");
	if (!nfound)
		put(msg, n, "no .npy file");
	for (int i = 0; i < nfound && i < LIST_MAX; i++)
		put(msg, n, "%s%s", i ? ", " : "", found[i]);
	if (nfound > LIST_MAX)
		put(msg, n, " and %d more", nfound - LIST_MAX);
	/* the same name but for case: the likeliest typo */
	for (int i = 0; i < count; i++)
		for (int j = 0; j < nfound; j++)
			if (strlen(found[j]) == strlen(names[i]) + 4 && strncasecmp(found[j], names[i], strlen(names[i])) == 0 &&
			    strncmp(found[j], names[i], strlen(names[i])) != 0)
				put(msg, n, "; did you mean '%s' for '%s'?", found[j], names[i]);
	put(msg, n, " (--draw-missing draws the missing ones from the seed)");
	for (int i = 0; i < nfound; i++)
		free(found[i]);
	free(found);
	free(absent);
	return missing;
}
