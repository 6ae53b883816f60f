/*
 * test_npy.c - .npy reading and writing (runtime/npy.c): round trips of
 * every type at every rank, headers as NumPy writes them in format 1.0,
 * 2.0 and 3.0, every way a file can be rejected (each must fail with -1
 * and a message that names the file and the problem), and robustness on
 * every prefix and on random mutations of a valid file.
 *
 * Files are built byte by byte here rather than by NumPy, so the test
 * needs nothing but libc; they live in a mkdtemp directory that the
 * fixture creates once and removes with everything in it.
 */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fgrt.h"

/* Set once by the unchecked fixture, before any test forks. */
static char tmpdir[64];

static void make_tmpdir(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/fgrt-npy-XXXXXX");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		exit(EXIT_FAILURE);
	}
}

static void remove_tree(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	char p[512];
	while ((e = readdir(d)) != NULL) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		struct stat st;
		if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
			remove_tree(p);
		else
			unlink(p);
	}
	closedir(d);
	rmdir(dir);
}

static void remove_tmpdir(void)
{
	remove_tree(tmpdir);
}

static const char *tpath(char *buf, const char *name)
{
	snprintf(buf, 256, "%s/%s", tmpdir, name);
	return buf;
}

static void write_bytes(const char *path, const void *b, size_t n)
{
	FILE *f = fopen(path, "wb");
	ck_assert_msg(f != NULL, "cannot create %s", path);
	ck_assert(n == 0 || fwrite(b, 1, n, f) == n);
	ck_assert(fclose(f) == 0);
}

/* A string literal's bytes, without the terminating NUL. */
#define WRITE_LIT(path, lit) write_bytes((path), (lit), sizeof(lit) - 1)

static size_t file_size(const char *path)
{
	struct stat st;
	ck_assert(stat(path, &st) == 0);
	return (size_t)st.st_size;
}

/* A .npy file as a writer would build it: magic, version major.0, the
 * header length (u16 for 1.0, u32 after), dict, then spaces and '\n' so
 * the preamble is a multiple of `align` (NumPy uses 64; before 1.14 it
 * used 16).  align 0 leaves the dict unpadded and without '\n'. */
static void write_npy(const char *path, int major, const char *dict,
		      int align, const void *data, size_t dlen)
{
	size_t pre = major == 1 ? 10 : 12, dl = strlen(dict);
	size_t total = align ? (pre + dl + 1 + (size_t)align - 1) /
			       (size_t)align * (size_t)align : pre + dl;
	size_t hlen = total - pre;
	unsigned char *b = malloc(total + dlen + 1);
	ck_assert(b != NULL);
	memcpy(b, "\x93NUMPY", 6);
	b[6] = (unsigned char)major;
	b[7] = 0;
	for (size_t i = 0; i < pre - 8; i++)
		b[8 + i] = (unsigned char)(hlen >> (8 * i));
	memcpy(b + pre, dict, dl);
	if (align) {
		memset(b + pre + dl, ' ', hlen - dl - 1);
		b[total - 1] = '\n';
	}
	if (dlen)
		memcpy(b + total, data, dlen);
	write_bytes(path, b, total + dlen);
	free(b);
}

/* Reading must fail with a message that names the file and contains
 * `word`, and leave the tensor empty. */
static void expect_reject_max(const char *path, size_t max_bytes,
			      const char *word)
{
	FgrtNpy t;
	char err[FGRT_ERRLEN] = "";
	int rc = fgrt_npy_read(path, max_bytes, &t, err);
	ck_assert_msg(rc == -1, "%s: accepted, expected a '%s' error", path, word);
	ck_assert_msg(strstr(err, word) != NULL, "message '%s' lacks '%s'",
		      err, word);
	ck_assert_msg(strncmp(err, path, strlen(path)) == 0,
		      "message '%s' does not name the file", err);
	ck_assert(strchr(err, '\n') == NULL);
	ck_assert(t.data == NULL && t.rank == 0 && t.numel == 0);
	fgrt_npy_free(&t);
}

static void expect_reject(const char *path, const char *word)
{
	expect_reject_max(path, 0, word);
}

/* A header dict, as NumPy spells it, is rejected with `word`. */
static void reject_dict(const char *dict, const void *data, size_t dlen,
			const char *word)
{
	char p[256];
	write_npy(tpath(p, "bad.npy"), 1, dict, 64, data, dlen);
	expect_reject(p, word);
}

static void fill(FgrtNpy *t, FgrtNpyType type, int rank, const int64_t *shape)
{
	memset(t, 0, sizeof(*t));
	t->type = type;
	t->rank = rank;
	t->numel = 1;
	for (int i = 0; i < rank; i++) {
		t->shape[i] = shape[i];
		t->numel *= shape[i];
	}
	t->nbytes = (size_t)t->numel * fgrt_npy_type_size(type);
	t->data = malloc(t->nbytes ? t->nbytes : 1);
	ck_assert(t->data != NULL);
	unsigned char *b = t->data;
	for (size_t i = 0; i < t->nbytes; i++)
		b[i] = type == FGRT_NPY_B1 ? (unsigned char)(i % 3 == 0) :
		       (unsigned char)(i * 37 + 11);
}

/* The written preamble is NumPy's: 1.0, dict, spaces, '\n', a multiple
 * of 64 in all, and the data right after it. */
static void check_written(const char *path, const FgrtNpy *t)
{
	unsigned char b[512];
	FILE *f = fopen(path, "rb");
	ck_assert(f != NULL);
	size_t n = fread(b, 1, sizeof(b), f);
	fclose(f);
	ck_assert(n >= 10 && memcmp(b, "\x93NUMPY\x01\x00", 8) == 0);
	size_t hlen = (size_t)b[8] | (size_t)b[9] << 8;
	ck_assert_msg((10 + hlen) % 64 == 0, "preamble %zu", 10 + hlen);
	ck_assert(10 + hlen <= n && b[10 + hlen - 1] == '\n');
	ck_assert(file_size(path) == 10 + hlen + t->nbytes);
	char want[32];
	snprintf(want, sizeof(want), "{'descr': '%s', ",
		 fgrt_npy_type_descr(t->type));
	ck_assert(memcmp(b + 10, want, strlen(want)) == 0);
}

static void roundtrip(FgrtNpyType type, int rank, const int64_t *shape)
{
	char p[256], err[FGRT_ERRLEN] = "";
	FgrtNpy t, u;
	fill(&t, type, rank, shape);
	tpath(p, "rt.npy");
	ck_assert_msg(fgrt_npy_write(p, &t, err) == 0, "%s", err);
	check_written(p, &t);
	ck_assert_msg(fgrt_npy_read(p, 0, &u, err) == 0, "%s", err);
	ck_assert_int_eq(u.type, type);
	ck_assert_int_eq(u.rank, rank);
	for (int i = 0; i < rank; i++)
		ck_assert_int_eq(u.shape[i], shape[i]);
	ck_assert_int_eq(u.numel, t.numel);
	ck_assert_uint_eq(u.nbytes, t.nbytes);
	ck_assert(u.data != NULL);
	ck_assert(memcmp(u.data, t.data, t.nbytes) == 0);
	fgrt_npy_free(&t);
	fgrt_npy_free(&u);
	ck_assert(u.data == NULL);
}

START_TEST(roundtrip_all_types_and_ranks)
{
	static const int64_t dims[FGRT_MAX_RANK] = {3, 1, 2, 4, 1, 2, 3, 2};
	for (int type = 0; type <= FGRT_NPY_U1; type++)
		for (int rank = 0; rank <= FGRT_MAX_RANK; rank++)
			roundtrip((FgrtNpyType)type, rank, dims);
}
END_TEST

START_TEST(roundtrip_zero_elements)
{
	static const int64_t zero1[1] = {0};
	static const int64_t zero3[3] = {3, 0, 2};
	static const int64_t big0[2] = {INT64_C(1) << 40, 0};
	for (int type = 0; type <= FGRT_NPY_U1; type++) {
		roundtrip((FgrtNpyType)type, 1, zero1);
		roundtrip((FgrtNpyType)type, 3, zero3);
		roundtrip((FgrtNpyType)type, 2, big0);
	}
}
END_TEST

START_TEST(roundtrip_values)
{
	char p[256], err[FGRT_ERRLEN];
	float v[3] = {1.5f, -0.0f, 3e38f};
	FgrtNpy t = {FGRT_NPY_F4, 1, {3}, 3, 12, v}, u;
	ck_assert_msg(fgrt_npy_write(tpath(p, "v.npy"), &t, err) == 0, "%s", err);
	/* Overwriting an existing file is the normal case. */
	ck_assert_msg(fgrt_npy_write(p, &t, err) == 0, "%s", err);
	ck_assert_msg(fgrt_npy_read(p, 0, &u, err) == 0, "%s", err);
	ck_assert(memcmp(u.data, v, sizeof(v)) == 0);
	fgrt_npy_free(&u);
}
END_TEST

/* The header NumPy >= 1.14 writes for float32 (2, 3), in each version. */
#define NUMPY_DICT "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"

static void expect_f4_2x3(const char *path)
{
	FgrtNpy t;
	char err[FGRT_ERRLEN] = "";
	ck_assert_msg(fgrt_npy_read(path, 0, &t, err) == 0, "%s", err);
	ck_assert_int_eq(t.type, FGRT_NPY_F4);
	ck_assert_int_eq(t.rank, 2);
	ck_assert_int_eq(t.shape[0], 2);
	ck_assert_int_eq(t.shape[1], 3);
	ck_assert_int_eq(t.numel, 6);
	ck_assert_uint_eq(t.nbytes, 24);
	const float *f = t.data;
	for (int i = 0; i < 6; i++)
		ck_assert(f[i] == (float)i - 2.5f);
	fgrt_npy_free(&t);
}

START_TEST(numpy_versions)
{
	float v[6];
	for (int i = 0; i < 6; i++)
		v[i] = (float)i - 2.5f;
	char p[256];
	tpath(p, "np.npy");
	for (int major = 1; major <= 3; major++) {
		write_npy(p, major, NUMPY_DICT, 64, v, sizeof(v));
		ck_assert((file_size(p) - sizeof(v)) % 64 == 0);
		expect_f4_2x3(p);
		write_npy(p, major, NUMPY_DICT, 16, v, sizeof(v));      /* old */
		expect_f4_2x3(p);
		write_npy(p, major, NUMPY_DICT, 0, v, sizeof(v));       /* bare */
		expect_f4_2x3(p);
	}
}
END_TEST

/* Spellings NumPy's reader (ast.literal_eval) accepts. */
START_TEST(header_variants)
{
	static const char *const ok[] = {
		"{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (2, 3)}",
		"{'shape': (2, 3), 'descr': '<f4', 'fortran_order': False}",
		"{'fortran_order':False,'shape':(2,3,),'descr':'<f4',}",
		" \t{ 'descr' : '<f4' ,\n 'fortran_order' : False , 'shape' : ( 2 , 3 ) , } \r\n",
	};
	float v[6];
	for (int i = 0; i < 6; i++)
		v[i] = (float)i - 2.5f;
	char p[256];
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		write_npy(tpath(p, "var.npy"), 1, ok[i], 64, v, sizeof(v));
		expect_f4_2x3(p);
	}
}
END_TEST

START_TEST(other_types_and_ranks)
{
	char p[256], err[FGRT_ERRLEN] = "";
	FgrtNpy t;
	int32_t i5[5] = {1, -2, 3, -4, 5};
	write_npy(tpath(p, "i.npy"), 1,
		  "{'descr': '<i4', 'fortran_order': False, 'shape': (5,), }",
		  64, i5, sizeof(i5));
	ck_assert_msg(fgrt_npy_read(p, 0, &t, err) == 0, "%s", err);
	ck_assert(t.type == FGRT_NPY_I4 && t.rank == 1 && t.shape[0] == 5);
	ck_assert(((int32_t *)t.data)[3] == -4);
	fgrt_npy_free(&t);
	uint16_t h = 0x3C00;
	write_npy(p, 1, "{'descr': '<f2', 'fortran_order': False, 'shape': (), }",
		  64, &h, 2);
	ck_assert_msg(fgrt_npy_read(p, 0, &t, err) == 0, "%s", err);
	ck_assert(t.type == FGRT_NPY_F2 && t.rank == 0 && t.numel == 1);
	ck_assert(*(uint16_t *)t.data == 0x3C00);
	fgrt_npy_free(&t);
	unsigned char b[4] = {1, 0, 0, 1};
	write_npy(p, 1, "{'descr': '|b1', 'fortran_order': False, 'shape': (2, 2), }",
		  64, b, 4);
	ck_assert_msg(fgrt_npy_read(p, 0, &t, err) == 0, "%s", err);
	ck_assert(t.type == FGRT_NPY_B1 && t.numel == 4);
	fgrt_npy_free(&t);
	write_npy(p, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (0,), }",
		  64, NULL, 0);
	ck_assert_msg(fgrt_npy_read(p, 0, &t, err) == 0, "%s", err);
	ck_assert(t.numel == 0 && t.nbytes == 0 && t.data != NULL);
	fgrt_npy_free(&t);
}
END_TEST

START_TEST(reject_preamble)
{
	char p[256];
	unsigned char b[128];
	memset(b, ' ', sizeof(b));
	memcpy(b, "\x93NUMPZ\x01\x00\x76\x00", 10);
	write_bytes(tpath(p, "magic.npy"), b, sizeof(b));
	expect_reject(p, "magic");
	WRITE_LIT(p, "PK\x03\x04 zip file, not npy");
	expect_reject(p, "magic");
	WRITE_LIT(tpath(p, "short.npy"), "\x93NUMPY\x01");
	expect_reject(p, "short");
	WRITE_LIT(p, "");
	expect_reject(p, "short");
	WRITE_LIT(p, "\x93NUMPY\x02\x00\x00\x00");     /* 2.0 needs 12 */
	expect_reject(p, "short");
	write_npy(tpath(p, "ver.npy"), 4, NUMPY_DICT, 64, NULL, 0);
	expect_reject(p, "version");
	memcpy(b, "\x93NUMPY\x01\x01\x76\x00", 10);
	write_bytes(p, b, sizeof(b));
	expect_reject(p, "version");
	memcpy(b, "\x93NUMPY\x00\x00\x76\x00", 10);
	write_bytes(p, b, sizeof(b));
	expect_reject(p, "version");
}
END_TEST

START_TEST(reject_header_length)
{
	char p[256];
	unsigned char b[64];
	memset(b, ' ', sizeof(b));
	memcpy(b, "\x93NUMPY\x01\x00\xe8\x03", 10);          /* 1000 > 54 */
	write_bytes(tpath(p, "hlen.npy"), b, sizeof(b));
	expect_reject(p, "past the end");
	memcpy(b, "\x93NUMPY\x01\x00\x37\x00", 10);          /* 55 > 54 */
	write_bytes(p, b, sizeof(b));
	expect_reject(p, "past the end");
	memcpy(b, "\x93NUMPY\x02\x00\xff\xff\xff\xff", 12);  /* 4 GiB */
	write_bytes(p, b, sizeof(b));
	expect_reject(p, "past the end");
	/* 12 bytes in all, and a header length that asks for 60000. */
	WRITE_LIT(p, "\x93NUMPY\x01\x00\x60\xea{}");
	expect_reject(p, "past the end");
}
END_TEST

START_TEST(reject_header_syntax)
{
	reject_dict("['descr', '<f4']", NULL, 0, "dict");
	reject_dict("", NULL, 0, "dict");
	reject_dict("descr: <f4", NULL, 0, "dict");
	reject_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)",
		    NULL, 0, "'}'");
	reject_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} x",
		    NULL, 0, "after the dict");
	reject_dict("{'descr': '<f4' 'fortran_order': False, 'shape': (2,)}",
		    NULL, 0, "expected ','");
	reject_dict("{'descr: '<f4', 'fortran_order': False, 'shape': (2,)}",
		    NULL, 0, "bad header");
	reject_dict("{'descr': '<f\\x34', 'fortran_order': False, 'shape': ()}",
		    NULL, 0, "bad header");
	reject_dict("{'descr': '<f4', 'fortran_order': 0, 'shape': (2,)}",
		    NULL, 0, "True or False");
	reject_dict("{'descr': '<f4', 'fortran_order': Falsey, 'shape': (2,)}",
		    NULL, 0, "True or False");
	reject_dict("{'descr': '<f4', 'fortran_order': False, 'shape': [2]}",
		    NULL, 0, "shape");
	reject_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (2)}",
		    NULL, 0, "not a tuple");
	reject_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (2.5,)}",
		    NULL, 0, "shape");
	reject_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (,)}",
		    NULL, 0, "shape");
	reject_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (2,,)}",
		    NULL, 0, "shape");
	reject_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3}",
		    NULL, 0, "shape");
}
END_TEST

START_TEST(reject_keys)
{
	reject_dict("{'descr': '<f4', 'fortran_order': False}", NULL, 0,
		    "missing key 'shape'");
	reject_dict("{'fortran_order': False, 'shape': ()}", NULL, 0,
		    "missing key 'descr'");
	reject_dict("{'descr': '<f4', 'shape': ()}", NULL, 0,
		    "missing key 'fortran_order'");
	reject_dict("{}", NULL, 0, "missing key");
	reject_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (), "
		    "'extra': 1}", NULL, 0, "unexpected key 'extra'");
	reject_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (), "
		    "'shape': ()}", NULL, 0, "duplicate key");
	reject_dict("{'Descr': '<f4', 'fortran_order': False, 'shape': ()}",
		    NULL, 0, "unexpected key");
}
END_TEST

START_TEST(reject_fortran)
{
	float v[6] = {0};
	reject_dict("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }",
		    v, sizeof(v), "Fortran");
}
END_TEST

START_TEST(reject_dtypes)
{
	static const char *const bad[] = {
		">f4", "|O", "<i8", "|u2", "<b1", "<c8", ">i4", "f4", "<u1x",
		"<U3", "", "<f4 ",
	};
	char dict[128];
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(dict, sizeof(dict), "{'descr': '%s', 'fortran_order': "
			 "False, 'shape': (1,), }", bad[i]);
		reject_dict(dict, "\0\0\0\0\0\0\0\0", 8, "dtype");
	}
	/* The message says what was found and what is accepted. */
	char p[256], err[FGRT_ERRLEN];
	FgrtNpy t;
	write_npy(tpath(p, "dt.npy"), 1, "{'descr': '>f4', 'fortran_order': "
		  "False, 'shape': (1,), }", 64, "\0\0\0\0", 4);
	ck_assert(fgrt_npy_read(p, 0, &t, err) == -1);
	ck_assert_msg(strstr(err, "'>f4'") && strstr(err, "'<f4'") &&
		      strstr(err, "'|b1'"), "%s", err);
	reject_dict("{'descr': [('a', '<f4')], 'fortran_order': False, "
		    "'shape': (1,), }", "\0\0\0\0", 4, "dtype");
}
END_TEST

START_TEST(reject_shapes)
{
	reject_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (-3,), }",
		    NULL, 0, "negative");
	reject_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (2, -1), }",
		    NULL, 0, "negative");
	reject_dict("{'descr': '<f4', 'fortran_order': False, "
		    "'shape': (9223372036854775808,), }", NULL, 0, "overflows int64");
	reject_dict("{'descr': '<f4', 'fortran_order': False, "
		    "'shape': (99999999999999999999999,), }", NULL, 0, "overflow");
	reject_dict("{'descr': '<f4', 'fortran_order': False, "
		    "'shape': (4294967296, 4294967296), }", NULL, 0, "overflow");
	reject_dict("{'descr': '<f4', 'fortran_order': False, "
		    "'shape': (3037000500, 3037000500), }", NULL, 0, "overflow");
	/* numel fits int64 but the byte count does not. */
	reject_dict("{'descr': '<f4', 'fortran_order': False, "
		    "'shape': (4611686018427387904,), }", NULL, 0, "overflow");
	reject_dict("{'descr': '<f4', 'fortran_order': False, "
		    "'shape': (1, 1, 1, 1, 1, 1, 1, 1, 1), }", "\0\0\0\0", 4,
		    "rank 9");
	reject_dict("{'descr': '<f4', 'fortran_order': False, "
		    "'shape': (1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1), }",
		    "\0\0\0\0", 4, "rank 12");
}
END_TEST

START_TEST(reject_data_length)
{
	char p[256], err[FGRT_ERRLEN];
	float v[21] = {0};
	FgrtNpy t;
	const char *d = "{'descr': '<f4', 'fortran_order': False, 'shape': (4, 5), }";
	write_npy(tpath(p, "x.npy"), 1, d, 64, v, 64);
	expect_reject(p, "truncated");
	ck_assert(fgrt_npy_read(p, 0, &t, err) == -1);
	char want[400];
	snprintf(want, sizeof(want), "%s: truncated data: shape (4, 5) of <f4 "
		 "needs 80 bytes, file has 64", p);
	ck_assert_str_eq(err, want);
	write_npy(p, 1, d, 64, v, 84);
	expect_reject(p, "trailing");
	write_npy(p, 1, d, 64, v, 81);
	expect_reject(p, "trailing");
	write_npy(p, 1, d, 64, v, 0);
	expect_reject(p, "truncated");
	write_npy(p, 1, d, 64, v, 80);
	ck_assert_msg(fgrt_npy_read(p, 0, &t, err) == 0, "%s", err);
	fgrt_npy_free(&t);
}
END_TEST

/* The loader attack from testing.md: a tiny file whose header asks for
 * terabytes.  It is refused by comparing with the file size, before any
 * allocation (an attempt to allocate 4 TB would fail or be killed). */
START_TEST(reject_huge_claim)
{
	reject_dict("{'descr': '<f4', 'fortran_order': False, "
		    "'shape': (1000000000000,), }", "\0\0\0\0", 4, "truncated");
	reject_dict("{'descr': '|b1', 'fortran_order': False, "
		    "'shape': (1048576, 1048576, 1048576), }", NULL, 0, "truncated");
}
END_TEST

START_TEST(max_bytes)
{
	char p[256], err[FGRT_ERRLEN];
	float v[20] = {0};
	FgrtNpy t;
	write_npy(tpath(p, "max.npy"), 1, "{'descr': '<f4', 'fortran_order': "
		  "False, 'shape': (4, 5), }", 64, v, sizeof(v));
	expect_reject_max(p, 79, "limit");
	expect_reject_max(p, 1, "limit");
	ck_assert_msg(fgrt_npy_read(p, 80, &t, err) == 0, "%s", err);
	fgrt_npy_free(&t);
}
END_TEST

START_TEST(reject_paths)
{
	char p[256];
	expect_reject(tpath(p, "does-not-exist.npy"), "No such file");
	expect_reject(tpath(p, "does-not-exist.npy"), "cannot open");
	expect_reject(tmpdir, "directory");
	expect_reject("/dev/null", "not a regular file");
}
END_TEST

START_TEST(reject_bad_bools)
{
	unsigned char b[3] = {0, 2, 1};
	reject_dict("{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }",
		    b, 3, "bool");
}
END_TEST

/* Every proper prefix of a valid file is rejected cleanly. */
START_TEST(every_prefix)
{
	char p[256], q[256], err[FGRT_ERRLEN];
	int32_t v[6] = {1, 2, 3, 4, 5, 6};
	write_npy(tpath(p, "full.npy"), 1, "{'descr': '<i4', 'fortran_order': "
		  "False, 'shape': (2, 3), }", 64, v, sizeof(v));
	size_t n = file_size(p);
	unsigned char *b = malloc(n);
	FILE *f = fopen(p, "rb");
	ck_assert(b && f && fread(b, 1, n, f) == n);
	fclose(f);
	tpath(q, "prefix.npy");
	for (size_t k = 0; k < n; k++) {
		FgrtNpy t;
		write_bytes(q, b, k);
		err[0] = '\0';
		ck_assert_msg(fgrt_npy_read(q, 0, &t, err) == -1, "prefix %zu", k);
		ck_assert(err[0] != '\0' && t.data == NULL);
	}
	free(b);
}
END_TEST

/* xorshift64*: the fuzz is the same on every run. */
static uint64_t next_rand(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * UINT64_C(2685821657736338717);
}

/* Random byte mutations and truncations of a valid file: the reader may
 * accept or reject, but what it accepts is consistent, and it never
 * crashes (the sanitizer build checks bounds). */
START_TEST(mutations)
{
	char p[256], err[FGRT_ERRLEN];
	float v[6] = {0};
	write_npy(tpath(p, "m.npy"), 1, NUMPY_DICT, 64, v, sizeof(v));
	size_t n = file_size(p);
	unsigned char *orig = malloc(n), *b = malloc(n);
	FILE *f = fopen(p, "rb");
	ck_assert(orig && b && f && fread(orig, 1, n, f) == n);
	fclose(f);
	uint64_t s = 0x9E3779B97F4A7C15u;
	int accepted = 0;
	for (int it = 0; it < 3000; it++) {
		memcpy(b, orig, n);
		int flips = 1 + (int)(next_rand(&s) % 4);
		for (int k = 0; k < flips; k++) {
			size_t at = (size_t)(next_rand(&s) % n);
			b[at] = (unsigned char)next_rand(&s);
		}
		size_t len = next_rand(&s) % 8 ? n : (size_t)(next_rand(&s) % (n + 1));
		write_bytes(p, b, len);
		FgrtNpy t;
		err[0] = '\0';
		if (fgrt_npy_read(p, 0, &t, err) == 0) {
			accepted++;
			ck_assert(t.data != NULL && t.rank <= FGRT_MAX_RANK);
			ck_assert(t.nbytes == (size_t)t.numel *
						      fgrt_npy_type_size(t.type));
			fgrt_npy_free(&t);
		} else {
			ck_assert(err[0] != '\0' && t.data == NULL);
		}
	}
	ck_assert(accepted > 0);        /* padding bytes are free to change */
	free(orig);
	free(b);
}
END_TEST

START_TEST(write_failures)
{
	char p[256], err[FGRT_ERRLEN];
	float v[2] = {1, 2};
	FgrtNpy t = {FGRT_NPY_F4, 1, {2}, 2, 8, v};
	/* No such directory: nothing is created. */
	tpath(p, "no-such-dir/x.npy");
	ck_assert(fgrt_npy_write(p, &t, err) == -1);
	ck_assert_msg(strncmp(err, p, strlen(p)) == 0 &&
		      strstr(err, "cannot create"), "%s", err);
	/* The target is a directory: the rename fails and the temporary
	 * file is removed. */
	tpath(p, "dir.npy");
	ck_assert(mkdir(p, 0777) == 0);
	ck_assert(fgrt_npy_write(p, &t, err) == -1);
	ck_assert_msg(strstr(err, "rename"), "%s", err);
	char tmp[300];
	snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", p, (long)getpid());
	ck_assert(access(tmp, F_OK) != 0);
	rmdir(p);
	/* Inconsistent tensors are refused before anything is written. */
	tpath(p, "bad.npy");
	t.numel = 3;
	ck_assert(fgrt_npy_write(p, &t, err) == -1);
	ck_assert_msg(strstr(err, "disagree"), "%s", err);
	t.numel = 2;
	t.rank = 9;
	ck_assert(fgrt_npy_write(p, &t, err) == -1);
	ck_assert_msg(strstr(err, "rank"), "%s", err);
	t.rank = 1;
	t.shape[0] = -2;
	ck_assert(fgrt_npy_write(p, &t, err) == -1);
	ck_assert_msg(strstr(err, "negative"), "%s", err);
	t.shape[0] = 2;
	t.data = NULL;
	ck_assert(fgrt_npy_write(p, &t, err) == -1);
	t.data = v;
	t.type = (FgrtNpyType)7;
	ck_assert(fgrt_npy_write(p, &t, err) == -1);
	ck_assert_msg(strstr(err, "type"), "%s", err);
	ck_assert(access(p, F_OK) != 0);
}
END_TEST

START_TEST(helpers)
{
	char b[64];
	int64_t s[3] = {4096, 1024, 7};
	ck_assert_str_eq(fgrt_shape_str(b, sizeof(b), 2, s), "(4096, 1024)");
	ck_assert_str_eq(fgrt_shape_str(b, sizeof(b), 1, s), "(4096,)");
	ck_assert_str_eq(fgrt_shape_str(b, sizeof(b), 0, s), "()");
	ck_assert_str_eq(fgrt_shape_str(b, 6, 3, s), "(4096");
	ck_assert_str_eq(fgrt_shape_str(b, 1, 3, s), "");
	ck_assert_uint_eq(fgrt_npy_type_size(FGRT_NPY_F4), 4);
	ck_assert_uint_eq(fgrt_npy_type_size(FGRT_NPY_F2), 2);
	ck_assert_uint_eq(fgrt_npy_type_size(FGRT_NPY_I4), 4);
	ck_assert_uint_eq(fgrt_npy_type_size(FGRT_NPY_B1), 1);
	ck_assert_str_eq(fgrt_npy_type_descr(FGRT_NPY_F4), "<f4");
	ck_assert_str_eq(fgrt_npy_type_descr(FGRT_NPY_F2), "<f2");
	ck_assert_str_eq(fgrt_npy_type_descr(FGRT_NPY_I4), "<i4");
	ck_assert_str_eq(fgrt_npy_type_descr(FGRT_NPY_B1), "|b1");
	ck_assert_uint_eq(fgrt_npy_type_size(FGRT_NPY_F8), 8);
	ck_assert_str_eq(fgrt_npy_type_descr(FGRT_NPY_F8), "<f8");
	ck_assert_uint_eq(fgrt_npy_type_size(FGRT_NPY_I1), 1);
	ck_assert_uint_eq(fgrt_npy_type_size(FGRT_NPY_U1), 1);
	ck_assert_str_eq(fgrt_npy_type_descr(FGRT_NPY_I1), "|i1");
	ck_assert_str_eq(fgrt_npy_type_descr(FGRT_NPY_U1), "|u1");
	FgrtNpy t = {FGRT_NPY_F4, 0, {0}, 1, 4, NULL};
	fgrt_npy_free(&t);
	fgrt_npy_free(NULL);
}
END_TEST

static Suite *npy_suite(void)
{
	Suite *s = suite_create("npy");
	TCase *tc = tcase_create("read-write");
	tcase_add_unchecked_fixture(tc, make_tmpdir, remove_tmpdir);
	tcase_add_test(tc, roundtrip_all_types_and_ranks);
	tcase_add_test(tc, roundtrip_zero_elements);
	tcase_add_test(tc, roundtrip_values);
	tcase_add_test(tc, numpy_versions);
	tcase_add_test(tc, header_variants);
	tcase_add_test(tc, other_types_and_ranks);
	tcase_add_test(tc, max_bytes);
	tcase_add_test(tc, write_failures);
	tcase_add_test(tc, helpers);
	suite_add_tcase(s, tc);
	tc = tcase_create("reject");
	tcase_add_unchecked_fixture(tc, make_tmpdir, remove_tmpdir);
	tcase_add_test(tc, reject_preamble);
	tcase_add_test(tc, reject_header_length);
	tcase_add_test(tc, reject_header_syntax);
	tcase_add_test(tc, reject_keys);
	tcase_add_test(tc, reject_fortran);
	tcase_add_test(tc, reject_dtypes);
	tcase_add_test(tc, reject_shapes);
	tcase_add_test(tc, reject_data_length);
	tcase_add_test(tc, reject_huge_claim);
	tcase_add_test(tc, reject_paths);
	tcase_add_test(tc, reject_bad_bools);
	tcase_add_test(tc, every_prefix);
	tcase_add_test(tc, mutations);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(npy_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
