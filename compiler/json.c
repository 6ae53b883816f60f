/*
 * json.c - a strict JSON reader (RFC 8259) for the files fgc reads back:
 * a fused binary's `--bench-json` timings (fgc report --measured).  Values
 * land in the arena as a tree; each keeps its line and column, so that
 * whoever reads the tree can point at what it refuses, with a caret,
 * through the ordinary diagnostics.
 *
 * Refused, each with one located error: anything after the value, nesting
 * past 64 levels, control characters in strings, bad escapes and lone
 * surrogates, numbers JSON does not allow (leading zeros, `+`, `.5`,
 * NaN) or that overflow a double, bytes that are not UTF-8 outside
 * strings.  \u escapes become UTF-8; a NUL (\u0000) is refused, as no
 * name fgc reads can hold one.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fg.h"

#define JSON_DEPTH_MAX 64

typedef FG_VEC(char) Text;

typedef struct Reader {
	FgArena *a;
	FgDiag *d;
	const char *s, *end;
	const char *line_start;
	int line;
} Reader;

static FgLoc here(const Reader *r)
{
	return (FgLoc){r->line, (int)(r->s - r->line_start) + 1};
}

static int fail(Reader *r, const char *what)
{
	if (r->s >= r->end)
		fg_error(r->d, here(r), "%s: the file ends here", what);
	else
		fg_error(r->d, here(r), "%s", what);
	return -1;
}

static void skip_space(Reader *r)
{
	for (; r->s < r->end; r->s++) {
		if (*r->s == '\n') {
			r->line++;
			r->line_start = r->s + 1;
		} else if (*r->s != ' ' && *r->s != '\t' && *r->s != '\r') {
			return;
		}
	}
}

static int literal(Reader *r, const char *word)
{
	size_t n = strlen(word);
	if ((size_t)(r->end - r->s) < n || memcmp(r->s, word, n) != 0)
		return fail(r, "expected a JSON value");
	r->s += n;
	return 0;
}

static int hex4(Reader *r, unsigned *u)
{
	*u = 0;
	for (int i = 0; i < 4; i++, r->s++) {
		char c = r->s < r->end ? *r->s : 0;
		int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
			: c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
		if (v < 0)
			return fail(r, "expected 4 hex digits after \\u");
		*u = *u << 4 | (unsigned)v;
	}
	return 0;
}

static void put_utf8(Reader *r, Text *out, unsigned u)
{
	if (u < 0x80) {
		fg_vec_push(r->a, out, (char)u);
	} else if (u < 0x800) {
		fg_vec_push(r->a, out, (char)(0xc0 | u >> 6));
		fg_vec_push(r->a, out, (char)(0x80 | (u & 0x3f)));
	} else if (u < 0x10000) {
		fg_vec_push(r->a, out, (char)(0xe0 | u >> 12));
		fg_vec_push(r->a, out, (char)(0x80 | (u >> 6 & 0x3f)));
		fg_vec_push(r->a, out, (char)(0x80 | (u & 0x3f)));
	} else {
		fg_vec_push(r->a, out, (char)(0xf0 | u >> 18));
		fg_vec_push(r->a, out, (char)(0x80 | (u >> 12 & 0x3f)));
		fg_vec_push(r->a, out, (char)(0x80 | (u >> 6 & 0x3f)));
		fg_vec_push(r->a, out, (char)(0x80 | (u & 0x3f)));
	}
}

/* The length of the valid UTF-8 sequence at s (before end), or 0. */
static int utf8_at(const unsigned char *s, const unsigned char *end)
{
	int n = s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 && s[0] < 0xe0 ? 2 : 0;
	if (n == 0 || end - s < n)
		return 0;
	for (int i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	if ((n == 3 && s[0] == 0xe0 && s[1] < 0xa0) || (n == 3 && s[0] == 0xed && s[1] >= 0xa0) ||
	    (n == 4 && s[0] == 0xf0 && s[1] < 0x90) || (n == 4 && s[0] == 0xf4 && s[1] >= 0x90))
		return 0;       /* overlong, a surrogate, past U+10FFFF */
	return n;
}

static int string(Reader *r, const char **out)
{
	Text t = {0};

	r->s++;                 /* the opening quote */
	for (;;) {
		if (r->s >= r->end)
			return fail(r, "a string that is not closed");
		unsigned char c = (unsigned char)*r->s;
		if (c == '"')
			break;
		if (c < 0x20)
			return fail(r, "a control character inside a string (write it as an escape)");
		if (c >= 0x80) {
			int n = utf8_at((const unsigned char *)r->s, (const unsigned char *)r->end);
			if (!n)
				return fail(r, "a byte that is not UTF-8 inside a string");
			for (int i = 0; i < n; i++)
				fg_vec_push(r->a, &t, *r->s++);
			continue;
		}
		if (c != '\\') {
			fg_vec_push(r->a, &t, *r->s++);
			continue;
		}
		r->s++;
		char e = r->s < r->end ? *r->s : 0, to = 0;
		switch (e) {
		case '"': case '\\': case '/': to = e; break;
		case 'b': to = '\b'; break;
		case 'f': to = '\f'; break;
		case 'n': to = '\n'; break;
		case 'r': to = '\r'; break;
		case 't': to = '\t'; break;
		default: break;
		}
		if (to) {
			fg_vec_push(r->a, &t, to);
			r->s++;
			continue;
		}
		if (e != 'u')
			return fail(r, "an escape JSON does not have (\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)");
		r->s++;
		unsigned u, lo;
		if (hex4(r, &u) != 0)
			return -1;
		if (u >= 0xdc00 && u < 0xe000)
			return fail(r, "a low surrogate without its high one");
		if (u >= 0xd800 && u < 0xdc00) {
			if (r->end - r->s < 2 || r->s[0] != '\\' || r->s[1] != 'u')
				return fail(r, "a high surrogate without its low one");
			r->s += 2;
			if (hex4(r, &lo) != 0)
				return -1;
			if (lo < 0xdc00 || lo >= 0xe000)
				return fail(r, "a high surrogate without its low one");
			u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
		}
		if (u == 0)
			return fail(r, "\\u0000: a NUL inside a string");
		put_utf8(r, &t, u);
	}
	r->s++;
	fg_vec_push(r->a, &t, '\0');
	*out = t.v;
	return 0;
}

static int number(Reader *r, double *out)
{
	const char *p = r->s;

	if (p < r->end && *p == '-')
		p++;
	if (p >= r->end || !(*p >= '0' && *p <= '9'))
		return fail(r, "expected a JSON value");
	if (*p == '0' && p + 1 < r->end && p[1] >= '0' && p[1] <= '9')
		return fail(r, "a number with a leading zero");
	while (p < r->end && *p >= '0' && *p <= '9')
		p++;
	if (p < r->end && *p == '.') {
		p++;
		if (p >= r->end || !(*p >= '0' && *p <= '9'))
			return fail(r, "a number with no digit after its '.'");
		while (p < r->end && *p >= '0' && *p <= '9')
			p++;
	}
	if (p < r->end && (*p == 'e' || *p == 'E')) {
		p++;
		if (p < r->end && (*p == '+' || *p == '-'))
			p++;
		if (p >= r->end || !(*p >= '0' && *p <= '9'))
			return fail(r, "a number with no digit in its exponent");
		while (p < r->end && *p >= '0' && *p <= '9')
			p++;
	}
	char *copy = fg_arena_printf(r->a, "%.*s", (int)(p - r->s), r->s);
	errno = 0;
	*out = strtod(copy, NULL);
	if (errno == ERANGE && fabs(*out) > 1)
		return fail(r, "a number too large for a double");
	r->s = p;
	return 0;
}

static int value(Reader *r, FgJson *v, int depth)
{
	skip_space(r);
	memset(v, 0, sizeof *v);
	v->loc = here(r);
	if (depth > JSON_DEPTH_MAX)
		return fail(r, "nested more than 64 levels deep");
	if (r->s >= r->end)
		return fail(r, "expected a JSON value");
	switch (*r->s) {
	case '{':
	case '[': {
		int obj = *r->s == '{';
		char close = obj ? '}' : ']';
		FG_VEC(FgJson) items = {0};
		FG_VEC(const char *) keys = {0};
		v->kind = obj ? FG_JSON_OBJECT : FG_JSON_ARRAY;
		r->s++;
		skip_space(r);
		if (r->s < r->end && *r->s == close) {
			r->s++;
			return 0;
		}
		for (;;) {
			FgJson item;
			skip_space(r);
			if (obj) {
				const char *key;
				if (r->s >= r->end || *r->s != '"')
					return fail(r, "expected a key (a string) in this object");
				if (string(r, &key) != 0)
					return -1;
				skip_space(r);
				if (r->s >= r->end || *r->s != ':')
					return fail(r, "expected ':' after the key");
				r->s++;
				fg_vec_push(r->a, &keys, key);
			}
			if (value(r, &item, depth + 1) != 0)
				return -1;
			fg_vec_push(r->a, &items, item);
			skip_space(r);
			if (r->s < r->end && *r->s == ',') {
				r->s++;
				continue;
			}
			if (r->s < r->end && *r->s == close) {
				r->s++;
				break;
			}
			return fail(r, obj ? "expected ',' or '}' in this object" : "expected ',' or ']' in this array");
		}
		v->items = items.v;
		v->keys = keys.v;
		v->n = items.n;
		return 0;
	}
	case '"':
		v->kind = FG_JSON_STRING;
		return string(r, &v->str);
	case 't':
		v->kind = FG_JSON_BOOL;
		v->num = 1;
		return literal(r, "true");
	case 'f':
		v->kind = FG_JSON_BOOL;
		return literal(r, "false");
	case 'n':
		v->kind = FG_JSON_NULL;
		return literal(r, "null");
	default:
		v->kind = FG_JSON_NUMBER;
		return number(r, &v->num);
	}
}

int fg_json_parse(FgArena *a, FgDiag *d, const FgSource *src, FgJson *out)
{
	Reader r = {a, d, src->text, src->text + src->len, src->text, 1};

	if (value(&r, out, 0) != 0)
		return 1;
	skip_space(&r);
	if (r.s < r.end) {
		fg_error(d, here(&r), "more after the JSON value");
		return 1;
	}
	return 0;
}

const FgJson *fg_json_get(const FgJson *obj, const char *key)
{
	if (obj->kind != FG_JSON_OBJECT)
		return NULL;
	for (int i = 0; i < obj->n; i++)
		if (strcmp(obj->keys[i], key) == 0)
			return &obj->items[i];
	return NULL;
}
