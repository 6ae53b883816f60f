/*
 * test_json.c - compiler/json.c, the strict JSON reader behind `fgc
 * report --measured`: values, escapes and surrogate pairs, positions, and
 * one located error for each kind of input it refuses.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg.h"

typedef struct Fix {
	FgArena arena;
	FgSource src;
	FgDiag diag;
	char *err;              /* what the diagnostics printed */
	size_t errlen;
	FgJson v;
	int rc;
} Fix;

static Fix *parse(const char *text, size_t len)
{
	Fix *f = calloc(1, sizeof *f);
	FILE *m = open_memstream(&f->err, &f->errlen);

	ck_assert_ptr_nonnull(m);
	fg_arena_init(&f->arena);
	char *copy = fg_arena_alloc(&f->arena, len + 1);
	memcpy(copy, text, len);
	copy[len] = 0;
	f->src = (FgSource){"t.json", copy, len};
	f->diag.src = &f->src;
	f->diag.out = m;
	f->rc = fg_json_parse(&f->arena, &f->diag, &f->src, &f->v);
	fclose(m);
	return f;
}

static void fix_free(Fix *f)
{
	fg_arena_free(&f->arena);
	free(f->err);
	free(f);
}

START_TEST(values_and_positions)
{
	const char *t = "{\n  \"a\": [1, -2.5e3, 0, true, false, null],\n  \"b\": {\"c\": \"x\"},\n  \"e\": []\n}\n";
	Fix *f = parse(t, strlen(t));

	ck_assert_msg(f->rc == 0, "%s", f->err);
	ck_assert_int_eq(f->v.kind, FG_JSON_OBJECT);
	ck_assert_int_eq(f->v.n, 3);
	const FgJson *a = fg_json_get(&f->v, "a");
	ck_assert_ptr_nonnull(a);
	ck_assert_int_eq(a->kind, FG_JSON_ARRAY);
	ck_assert_int_eq(a->n, 6);
	ck_assert(a->items[0].num == 1 && a->items[1].num == -2500 && a->items[2].num == 0);
	ck_assert(a->items[3].kind == FG_JSON_BOOL && a->items[3].num == 1);
	ck_assert(a->items[4].kind == FG_JSON_BOOL && a->items[4].num == 0);
	ck_assert_int_eq(a->items[5].kind, FG_JSON_NULL);
	ck_assert_int_eq(a->loc.line, 2);
	ck_assert_int_eq(a->loc.col, 8);
	ck_assert_int_eq(a->items[1].loc.col, 12);
	const FgJson *c = fg_json_get(fg_json_get(&f->v, "b"), "c");
	ck_assert_str_eq(c->str, "x");
	ck_assert_int_eq(fg_json_get(&f->v, "e")->n, 0);
	ck_assert_ptr_null(fg_json_get(&f->v, "nope"));
	ck_assert_ptr_null(fg_json_get(a, "a"));
	fix_free(f);
}
END_TEST

START_TEST(escapes_become_utf8)
{
	const char *t = "\"q\\\" b\\\\ s\\/ \\b\\f\\n\\r\\t \\u00e9 \\u20ac \\ud83d\\ude00 \xc3\xa9\"";
	Fix *f = parse(t, strlen(t));

	ck_assert_msg(f->rc == 0, "%s", f->err);
	ck_assert_str_eq(f->v.str, "q\" b\\ s/ \b\f\n\r\t \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xc3\xa9");
	fix_free(f);
}
END_TEST

/* Each refused input: its message and where the caret goes. */
static const struct {
	const char *text;
	const char *want;
} bad[] = {
	{"", "1:1: error: expected a JSON value: the file ends here"},
	{"{\"a\": 1} x", "1:10: error: more after the JSON value"},
	{"{\"a\" 1}", "1:6: error: expected ':' after the key"},
	{"{a: 1}", "1:2: error: expected a key (a string) in this object"},
	{"[1, 2", "1:6: error: expected ',' or ']' in this array: the file ends here"},
	{"[1,]", "1:4: error: expected a JSON value"},
	{"{\"a\": 1,}", "1:9: error: expected a key (a string) in this object"},
	{"01", "1:1: error: a number with a leading zero"},
	{"+1", "1:1: error: expected a JSON value"},
	{".5", "1:1: error: expected a JSON value"},
	{"1.", "1:1: error: a number with no digit after its '.'"},
	{"1e", "1:1: error: a number with no digit in its exponent"},
	{"1e999", "1:1: error: a number too large for a double"},
	{"NaN", "1:1: error: expected a JSON value"},
	{"tru", "1:1: error: expected a JSON value"},
	{"\"a\tb\"", "1:3: error: a control character inside a string"},
	{"\"a\\x\"", "1:4: error: an escape JSON does not have"},
	{"\"\\u12g4\"", "1:6: error: expected 4 hex digits after \\u"},
	{"\"\\ude00\"", "1:8: error: a low surrogate without its high one"},
	{"\"\\ud83d x\"", "1:8: error: a high surrogate without its low one"},
	{"\"\\u0000\"", "1:8: error: \\u0000: a NUL inside a string"},
	{"\"\xc3\"", "1:2: error: a byte that is not UTF-8 inside a string"},
	{"\"\xed\xa0\x80\"", "1:2: error: a byte that is not UTF-8 inside a string"},
	{"\"abc", "1:5: error: a string that is not closed: the file ends here"},
	{"[\n  1,\n  @]", "3:3: error: expected a JSON value"},
};

START_TEST(refused_with_a_location)
{
	Fix *f = parse(bad[_i].text, strlen(bad[_i].text));

	ck_assert_msg(f->rc == 1, "accepted: %s", bad[_i].text);
	ck_assert_msg(strstr(f->err, bad[_i].want) != NULL, "for %s wanted\n  %s\ngot\n%s", bad[_i].text,
		      bad[_i].want, f->err);
	ck_assert_msg(strchr(f->err, '^') != NULL || !*bad[_i].text, "no caret:\n%s", f->err);
	fix_free(f);
}
END_TEST

START_TEST(deep_nesting_refused)
{
	char t[200];

	memset(t, '[', 100);
	memset(t + 100, ']', 100);
	Fix *f = parse(t, sizeof t);
	ck_assert_int_eq(f->rc, 1);
	ck_assert_msg(strstr(f->err, "nested more than 64 levels deep") != NULL, "%s", f->err);
	fix_free(f);
	f = parse(t + 36, 128);         /* 64 levels: fine */
	ck_assert_msg(f->rc == 0, "%s", f->err);
	fix_free(f);
}
END_TEST

START_TEST(nul_in_the_file_refused)
{
	Fix *f = parse("[1]\0", 4);
	ck_assert_int_eq(f->rc, 1);
	ck_assert_msg(strstr(f->err, "more after the JSON value") != NULL, "%s", f->err);
	fix_free(f);
}
END_TEST

static Suite *json_suite(void)
{
	Suite *s = suite_create("json");
	TCase *t = tcase_create("reader");
	tcase_add_test(t, values_and_positions);
	tcase_add_test(t, escapes_become_utf8);
	tcase_add_loop_test(t, refused_with_a_location, 0, (int)(sizeof bad / sizeof bad[0]));
	tcase_add_test(t, deep_nesting_refused);
	tcase_add_test(t, nul_in_the_file_refused);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(json_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
