/*
 * text.c - the backend's text: printf into the arena, C expressions that
 * need no parentheses, strings and comments made safe to embed, number
 * literals, and the CUDA names of each dtype (the type a value is
 * computed in, the type it is stored in, its runtime constant and the
 * conversion that stores it).
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cuda.h"

char *cu_vfmt(FgArena *a, const char *fmt, va_list ap)
{
	va_list aq;
	va_copy(aq, ap);
	int n = vsnprintf(NULL, 0, fmt, aq);
	va_end(aq);
	FG_ASSERT(n >= 0);
	char *s = fg_arena_alloc(a, (size_t)n + 1);
	vsnprintf(s, (size_t)n + 1, fmt, ap);
	return s;
}
char *cu_fmt(FgArena *a, const char *f, ...)
{
	va_list ap;
	va_start(ap, f);
	char *s = cu_vfmt(a, f, ap);
	va_end(ap);
	return s;
}

int cu_is_ident_char(char c)
{
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* Whether s needs no parentheses inside a larger expression: a name, a
 * number without sign, a call, or one parenthesized whole. */
int cu_simple(const char *s)
{
	size_t n = strlen(s), i = 0;
	int depth = 0;
	if (n == 0)
		return 0;
	if (s[0] >= '0' && s[0] <= '9')     /* a number: 1e-05f */
		return strspn(s, "0123456789abcdefxABCDEFX.+-ul") == n;
	while (i < n && (cu_is_ident_char(s[i]) || s[i] == '.'))
		i++;
	if (i == n)
		return 1;
	if (s[i] != '(' || s[n - 1] != ')')
		return 0;
	for (size_t j = i; j < n; j++) {
		if (s[j] == '(')
			depth++;
		else if (s[j] == ')' && --depth == 0 && j != n - 1)
			return 0;
	}
	return 1;
}

const char *cu_paren(FgArena *a, const char *s)
{
	return cu_simple(s) ? s : cu_fmt(a, "(%s)", s);
}

/* s as the body of a C string literal. */
const char *cu_c_string(FgArena *a, const char *s)
{
	char *out = fg_arena_alloc(a, 4 * strlen(s) + 1), *o = out;
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			o += sprintf(o, "\\%c", c);
		else if (c < 32 || c >= 127)
			o += sprintf(o, "\\%03o", c);
		else
			*o++ = (char)c;
	}
	*o = '\0';
	return out;
}

/* s with every star-slash broken, to sit inside a C comment. */
const char *cu_in_comment(FgArena *a, const char *s)
{
	char *out = fg_arena_alloc(a, 2 * strlen(s) + 1), *o = out;
	for (; *s; s++) {
		*o++ = *s;
		if (s[0] == '*' && s[1] == '/')
			*o++ = ' ';
	}
	*o = '\0';
	return out;
}

/* Whether identifier id occurs in s as a whole token. */
int cu_uses(const char *s, const char *id)
{
	size_t n = strlen(id);
	for (const char *p = strstr(s, id); p; p = strstr(p + 1, id))
		if ((p == s || !cu_is_ident_char(p[-1])) && !cu_is_ident_char(p[n]))
			return 1;
	return 0;
}

/* A number as a literal of dt's compute type (FgDtypeInfo.cuda),
 * parenthesized when negative. */
const char *cu_literal(FgArena *a, FgDtype dt, double v)
{
	if (isnan(v))
		return "CUDART_NAN_F";
	if (isinf(v))
		return v > 0 ? "CUDART_INF_F" : "(-CUDART_INF_F)";
	if (dt == FG_DT_BOOL)
		return v != 0 ? "1.0f" : "0.0f";
	if (fg_dtype_is_int(dt) && v == floor(v) && fabs(v) < 2147483648.0) {
		long long i = (long long)v;
		return i < 0 ? cu_fmt(a, "(%lld)", i) : cu_fmt(a, "%lld", i);
	}
	char buf[64];
	snprintf(buf, sizeof buf, "%.9g", v);
	if (!strpbrk(buf, ".en"))
		strcat(buf, ".0");
	return v < 0 || (v == 0 && signbit(v)) ? cu_fmt(a, "(%sf)", buf) : cu_fmt(a, "%sf", buf);
}

const char *cu_shape_str(FgArena *a, FgDtype dt, const FgShape *s)
{
	char buf[256];
	return fg_arena_strdup(a, fg_type_str(buf, sizeof buf, dt, s));
}

