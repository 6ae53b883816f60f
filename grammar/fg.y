/*
 * fg.y - the grammar of a .fg file (shared/design/language.md, version 1,
 * and version 2's infix `**` and `@`).
 *
 * A pure LALR(1) parser over grammar/fg.l's reentrant scanner.  Actions call
 * compiler/ast.c's builders and nothing else; the rules below are the
 * language's syntax, precedence included, and nothing more.  Only the
 * syntax-error reporter at the end is hand-written.
 *
 * Invariants:
 * - A statement ends at a NEWLINE token or at the '}' of its block; the
 *   scanner sends no NEWLINE inside ( ) or [ ], so expressions may run over
 *   several lines there.
 * - Error recovery is one rule, `stmt: error`: after a syntax error the
 *   parser skips to the end of the statement and goes on, so one bad
 *   statement gives one error and later ones are still checked.  Bad bytes
 *   reach the parser as YYerror, which recovers the same way silently.
 * - Nesting is bounded: each '(', call and unary '-' opens a level through
 *   `nest`, and the parse stops with one located error past
 *   FG_AST_MAX_NEST levels, long before bison's stack (YYMAXDEPTH) could
 *   run out.  Left-associative chains (a + a + ...) reduce as they go and
 *   use constant stack, however long.
 * - Error messages say what was expected, what was found and, for a closing
 *   bracket, where the opening one is: "expected ')' to close '(' at 4:12,
 *   found newline".  Parse errors use LAC (parse.lac full) so that the
 *   expected set is exact rather than what default reductions leave.
 */

%define api.pure full
%define api.token.prefix {FG_T_}
%define api.location.type {FgLoc}
%define parse.error custom
%define parse.lac full
%locations
%expect 0
%param {yyscan_t scanner}
%parse-param {FgParser *p}

%code requires {
#include "fg.h"

#ifndef YY_TYPEDEF_YY_SCANNER_T
#define YY_TYPEDEF_YY_SCANNER_T
typedef void *yyscan_t;
#endif

/* The scanner remembers this many open brackets by place (for "to close
 * '(' at 4:12"); deeper ones, which are errors anyway, are only counted. */
#define FG_LEX_MAX_OPEN 4096

typedef struct FgBracket {
	char c;                 /* '(' '[' '{', or 0: none */
	FgLoc loc;
} FgBracket;

typedef struct FgToken {
	int kind;               /* FG_T_*; FG_T_YYEOF at the end */
	size_t off, len;        /* its bytes in the source */
	FgLoc loc;              /* its first byte */
	FgLoc end;              /* just past its last byte */
	FgBracket open;         /* the innermost bracket open before it */
} FgToken;

/* What the scanner and the parser share: yyextra and %parse-param. */
typedef struct FgParser {
	FgAst ast;              /* the builders' state */
	FgProgram *prog;        /* the result */
	const FgSource *src;
	size_t off;             /* bytes scanned */
	int line, col;          /* position of the next byte */
	size_t tok_off, tok_len; /* the match being scanned */
	FgLoc last_nl;          /* the last newline's place: end of file if the
	                           file ends with one */
	FgBracket *open;        /* open brackets, innermost last */
	int nopen;              /* how many are open (the first
	                           FG_LEX_MAX_OPEN are in open[]) */
	int nparen;             /* how many of them are '(' or '[', inside
	                           which newlines are blanks */
	FgToken prev, cur;      /* the last two tokens the parser received */
	const char *val_name;   /* the value of the last name scanned */
	FgNum val_num;          /* the value of the last number scanned */
	int replay;             /* 1: send a NEWLINE, then cur again; 2: cur */
	int quiet;              /* a lexical error was reported on this line */
} FgParser;

/* grammar/fg.l: after a syntax error that shows the brackets are wrong,
 * forget the open ( and [ so that the next newline ends the statement. */
void fg_lex_forget_parens(FgParser *p);
/* grammar/fg.l: after a syntax error on a token that starts a later line
 * inside ( ), hand the parser the newline it should have seen, then that
 * token again, so the statement on that line is parsed and checked. */
void fg_lex_replay(FgParser *p);
}

%code provides {
int yylex(YYSTYPE *lval, YYLTYPE *lloc, yyscan_t scanner);
void yyerror(YYLTYPE *lloc, yyscan_t scanner, FgParser *p, const char *msg);
}

%code {
#include <string.h>

/* Enough for FG_AST_MAX_NEST levels, so that `nest` always fires first:
 * one level holds at most eleven stack entries, in
 *   f(x, a < b + c * g( ...   arglist ',' expr '<' expr '+' expr '*' IDENT '(' nest
 * and tests/unit/test_parse.c nests that to the limit. */
#define YYMAXDEPTH (16 * FG_AST_MAX_NEST + 100)

/* A location is where a construct starts; an empty rule sits where the
 * symbol before it does (for `nest`: the '(' or '-'). */
#define YYLLOC_DEFAULT(cur, rhs, n)                                           \
	do {                                                                   \
		(cur) = (n) ? YYRHSLOC(rhs, 1) : YYRHSLOC(rhs, 0);             \
	} while (0)
}

%union {
	const char *name;
	FgNum num;
	FgExpr *expr;
	FgAstArgs *args;
	FgAttrVal val;
	FgAstVals *vals;
	FgDimAst dim;
	FgAstDims *dims;
	FgAstAnnots *annots;
	FgAstNames *names;
	FgStmt *stmt;
	FgAstStmts *stmts;
}

%token GRAPH "graph" INPUT "input" PARAM "param" OUTPUT "output" FUSE "fuse"
%token <name> IDENT "name"
%token <num> NUMBER "number"
%token NEWLINE "newline"
%token LPAREN "(" RPAREN ")" LBRACK "[" RBRACK "]" LBRACE "{" RBRACE "}"
%token COMMA "," COLON ":" ASSIGN "=" AT "@"
%token PLUS "+" MINUS "-" STAR "*" SLASH "/" POW "**" MATMUL "@ (matmul)"
%token LT "<" LE "<=" GT ">" GE ">=" EQ "==" NE "!="

%type <expr> expr
%type <args> args arglist
%type <val> attrval
%type <vals> nums numlist
%type <num> snum
%type <dim> dim
%type <dims> dims dimlist
%type <annots> annots
%type <names> outputs
%type <stmt> stmt
%type <stmts> stmts fuse_stmts

/* Comparisons do not chain: `a < b < c` is an error, not (a < b) < c. */
%nonassoc "<" "<=" ">" ">=" "==" "!="
%left "+" "-"
%left "*" "/"
%left "@ (matmul)"
%precedence UMINUS
%right "**"

%%

program
	: nls GRAPH IDENT "{" stmts "}" nls
		{ fg_ast_program(&p->ast, p->prog, @2, $3, $5); }
	;

nls
	: %empty
	| nls NEWLINE
	;

stmts
	: stmt                  { $$ = fg_ast_stmt(&p->ast, NULL, $1); }
	| stmts NEWLINE stmt    { $$ = fg_ast_stmt(&p->ast, $1, $3); }
	;

fuse_stmts
	: stmt                  { $$ = fg_ast_fuse_stmt(&p->ast, NULL, $1); }
	| fuse_stmts NEWLINE stmt { $$ = fg_ast_fuse_stmt(&p->ast, $1, $3); }
	;

stmt
	: %empty                { $$ = NULL; }
	| error                 { $$ = fg_ast_recover(&p->ast); }
	| INPUT IDENT ":" IDENT "[" dims "]"
		{ $$ = fg_ast_decl(&p->ast, FG_ST_INPUT, @1, $2, @2, $4, @4, $6); }
	| PARAM IDENT ":" IDENT "[" dims "]"
		{ $$ = fg_ast_decl(&p->ast, FG_ST_PARAM, @1, $2, @2, $4, @4, $6); }
	| IDENT "=" expr annots { $$ = fg_ast_assign(&p->ast, @1, $1, $3, $4); }
	| IDENT "," outputs "=" expr annots
		{ $$ = fg_ast_assign_many(&p->ast, @1, $1, $3, $5, $6); }
	| OUTPUT outputs        { $$ = fg_ast_output(&p->ast, @1, $2); }
	| FUSE "{" fuse_stmts "}" { $$ = fg_ast_fuse(&p->ast, @1, $3); }
	;

dims
	: %empty                { $$ = NULL; }
	| dimlist
	;

dimlist
	: dim                   { $$ = fg_ast_dim(&p->ast, NULL, $1); }
	| dimlist "," dim       { $$ = fg_ast_dim(&p->ast, $1, $3); }
	;

/* -4 parses so that the IR builder can say a dimension must be positive. */
dim
	: snum                  { $$ = fg_ast_dim_num(@1, $1); }
	| IDENT                 { $$ = fg_ast_dim_sym(@1, $1); }
	| IDENT "=" snum        { $$ = fg_ast_dim_default(@1, $1, $3); }
	;

annots
	: %empty                { $$ = NULL; }
	| annots "@" IDENT      { $$ = fg_ast_annot(&p->ast, $1, @2, $3); }
	;

outputs
	: IDENT                 { $$ = fg_ast_out_name(&p->ast, NULL, @1, $1); }
	| outputs "," IDENT     { $$ = fg_ast_out_name(&p->ast, $1, @3, $3); }
	;

expr
	: expr "+" expr         { $$ = fg_ast_binary(&p->ast, @2, "add", "+", $1, $3); }
	| expr "-" expr         { $$ = fg_ast_binary(&p->ast, @2, "sub", "-", $1, $3); }
	| expr "*" expr         { $$ = fg_ast_binary(&p->ast, @2, "mul", "*", $1, $3); }
	| expr "/" expr         { $$ = fg_ast_binary(&p->ast, @2, "div", "/", $1, $3); }
	| expr "**" expr        { $$ = fg_ast_binary(&p->ast, @2, "pow", "**", $1, $3); }
	| expr "@ (matmul)" expr { $$ = fg_ast_binary(&p->ast, @2, "matmul", "@", $1, $3); }
	| expr "<" expr         { $$ = fg_ast_binary(&p->ast, @2, "lt", "<", $1, $3); }
	| expr "<=" expr        { $$ = fg_ast_binary(&p->ast, @2, "le", "<=", $1, $3); }
	| expr ">" expr         { $$ = fg_ast_binary(&p->ast, @2, "gt", ">", $1, $3); }
	| expr ">=" expr        { $$ = fg_ast_binary(&p->ast, @2, "ge", ">=", $1, $3); }
	| expr "==" expr        { $$ = fg_ast_binary(&p->ast, @2, "eq", "==", $1, $3); }
	| expr "!=" expr        { $$ = fg_ast_binary(&p->ast, @2, "ne", "!=", $1, $3); }
	| "-" nest expr %prec UMINUS { $$ = fg_ast_neg(&p->ast, @1, $3); }
	| "(" nest expr ")"     { $$ = fg_ast_paren(&p->ast, $3); }
	| NUMBER                { $$ = fg_ast_num(&p->ast, @1, $1); }
	| IDENT                 { $$ = fg_ast_name(&p->ast, @1, $1); }
	| IDENT "(" nest args ")" { $$ = fg_ast_call(&p->ast, @1, $1, $4); }
	;

/* Opens a nesting level at the '(' or '-' just shifted. */
nest
	: %empty                { if (fg_ast_enter(&p->ast, @$)) YYABORT; }
	;

args
	: %empty                { $$ = NULL; }
	| arglist
	;

/* Positional arguments first: fg_ast_arg reports one that comes late. */
arglist
	: expr                  { $$ = fg_ast_arg(&p->ast, NULL, @1, $1); }
	| IDENT "=" attrval     { $$ = fg_ast_kwarg(&p->ast, NULL, @1, $1, $3); }
	| arglist "," expr      { $$ = fg_ast_arg(&p->ast, $1, @3, $3); }
	| arglist "," IDENT "=" attrval { $$ = fg_ast_kwarg(&p->ast, $1, @3, $3, $5); }
	;

attrval
	: snum                  { $$ = fg_ast_av_num(@1, $1); }
	| IDENT                 { $$ = fg_ast_av_ident(@1, $1); }
	| "[" nums "]"          { $$ = fg_ast_av_list(@1, $2); }
	;

nums
	: %empty                { $$ = NULL; }
	| numlist
	;

/* numbers, or symbolic dims standing for theirs (shape=[T, 64]) */
numlist
	: snum                  { $$ = fg_ast_val(&p->ast, NULL, fg_ast_av_num(@1, $1)); }
	| IDENT                 { $$ = fg_ast_val(&p->ast, NULL, fg_ast_av_ident(@1, $1)); }
	| numlist "," snum      { $$ = fg_ast_val(&p->ast, $1, fg_ast_av_num(@3, $3)); }
	| numlist "," IDENT     { $$ = fg_ast_val(&p->ast, $1, fg_ast_av_ident(@3, $3)); }
	;

snum
	: NUMBER
	| "-" NUMBER            { $$ = fg_ast_num_neg($2); }
	;

%%

/*
 * The syntax-error reporter.  It turns bison's set of acceptable tokens into
 * a sentence: groups of tokens that start one construct become its name
 * ("an expression", "a dimension"), a closing bracket names the bracket it
 * would close, and when only one thing would do, the message says after
 * what.  Two repairs make the first error the right one:
 * - inside ( or [ newlines are blanks, so a missing ')' at the end of a line
 *   is only noticed on a later line; the error is then put where the ')'
 *   belongs: "expected ')' to close '(' at 4:12, found newline";
 * - when the brackets are evidently wrong (that case, or a keyword, a brace
 *   or the end of file inside parentheses), the scanner forgets the open
 *   ( and [ so that recovery stops at the end of this line, not at the end
 *   of the file.
 */

/* How a token is named in a message, when it is what was expected. */
static const char *spelling(yysymbol_kind_t k)
{
	switch (k) {
	case YYSYMBOL_YYEOF: return "end of file";
	case YYSYMBOL_GRAPH: return "'graph'";
	case YYSYMBOL_INPUT: return "'input'";
	case YYSYMBOL_PARAM: return "'param'";
	case YYSYMBOL_OUTPUT: return "'output'";
	case YYSYMBOL_FUSE: return "'fuse'";
	case YYSYMBOL_IDENT: return "a name";
	case YYSYMBOL_NUMBER: return "a number";
	case YYSYMBOL_NEWLINE: return "newline";
	case YYSYMBOL_LPAREN: return "'('";
	case YYSYMBOL_RPAREN: return "')'";
	case YYSYMBOL_LBRACK: return "'['";
	case YYSYMBOL_RBRACK: return "']'";
	case YYSYMBOL_LBRACE: return "'{'";
	case YYSYMBOL_RBRACE: return "'}'";
	case YYSYMBOL_COMMA: return "','";
	case YYSYMBOL_COLON: return "':'";
	case YYSYMBOL_ASSIGN: return "'='";
	case YYSYMBOL_AT: return "'@'";
	case YYSYMBOL_PLUS: return "'+'";
	case YYSYMBOL_MINUS: return "'-'";
	case YYSYMBOL_STAR: return "'*'";
	case YYSYMBOL_SLASH: return "'/'";
	case YYSYMBOL_POW: return "'**'";
	case YYSYMBOL_MATMUL: return "'@'";
	case YYSYMBOL_LT: return "'<'";
	case YYSYMBOL_LE: return "'<='";
	case YYSYMBOL_GT: return "'>'";
	case YYSYMBOL_GE: return "'>='";
	case YYSYMBOL_EQ: return "'=='";
	case YYSYMBOL_NE: return "'!='";
	default: return "another token";
	}
}

static int is_keyword(yysymbol_kind_t k)
{
	return k == YYSYMBOL_GRAPH || k == YYSYMBOL_INPUT || k == YYSYMBOL_PARAM ||
	       k == YYSYMBOL_OUTPUT || k == YYSYMBOL_FUSE;
}

static int is_comparison(yysymbol_kind_t k)
{
	return k == YYSYMBOL_LT || k == YYSYMBOL_LE || k == YYSYMBOL_GT ||
	       k == YYSYMBOL_GE || k == YYSYMBOL_EQ || k == YYSYMBOL_NE;
}

/* A token as found: its text, quoted, cut short when it is a long name. */
static void found_text(char *buf, size_t n, const FgParser *p,
		       const FgToken *t, yysymbol_kind_t k, int want_name)
{
	if (k == YYSYMBOL_YYEOF || k == YYSYMBOL_NEWLINE) {
		snprintf(buf, n, "%s", spelling(k));
		return;
	}
	const char *s = p->src->text + t->off;
	int len = t->len > 40 ? 32 : (int)t->len;
	snprintf(buf, n, "%s'%.*s%s'", want_name && is_keyword(k) ? "keyword " : "",
		 len, s, t->len > 40 ? "..." : "");
}

/* Appends "A", ", B", " or C" style items to a message. */
typedef struct Items {
	const char *s[16];
	int n;
} Items;

static void add(Items *it, const char *s)
{
	if (it->n < 16)
		it->s[it->n++] = s;
}

/* Takes the group g[] out of want[] and names it, if all of g is there. */
static int group(unsigned char *want, Items *it, const char *name,
		 const yysymbol_kind_t *g, int ng)
{
	for (int i = 0; i < ng; i++)
		if (!want[g[i]])
			return 0;
	for (int i = 0; i < ng; i++)
		want[g[i]] = 0;
	if (name)
		add(it, name);
	return 1;
}

static int yyreport_syntax_error(const yypcontext_t *ctx, yyscan_t scanner,
				 FgParser *p)
{
	(void)scanner;
	yysymbol_kind_t exp[YYNTOKENS];
	unsigned char want[YYNTOKENS] = {0};
	int nexp = yypcontext_expected_tokens(ctx, exp, YYNTOKENS);
	for (int i = 0; i < nexp; i++)
		want[exp[i]] = 1;
	yysymbol_kind_t found = yypcontext_token(ctx);
	const FgToken *t = &p->cur;
	FgLoc loc = *yypcontext_location(ctx);
	int later_line = found != YYSYMBOL_YYEOF && t->loc.line > p->prev.end.line;
	int in_parens = t->open.c == '(' || t->open.c == '[';
	int closer_ok = (t->open.c == '(' && want[YYSYMBOL_RPAREN]) ||
			(t->open.c == '[' && want[YYSYMBOL_RBRACK]);
	char what[128];
	char msg[512];

	/* Brackets evidently unbalanced: recover at the end of this line. */
	if (in_parens && (later_line || is_keyword(found) || found == YYSYMBOL_YYEOF ||
			  found == YYSYMBOL_LBRACE || found == YYSYMBOL_RBRACE))
		fg_lex_forget_parens(p);

	if (in_parens && closer_ok && later_line) {
		fg_error(p->ast.diag, p->prev.end,
			 "expected '%c' to close '%c' at %d:%d, found newline",
			 t->open.c == '(' ? ')' : ']', t->open.c,
			 t->open.loc.line, t->open.loc.col);
		/* A '}' ends the recovery itself, a newline cannot be here. */
		if (found != YYSYMBOL_RBRACE)
			fg_lex_replay(p);
		return 0;
	}
	if (is_comparison(found) && want[YYSYMBOL_PLUS] && !want[YYSYMBOL_LT]) {
		fg_error(p->ast.diag, loc,
			 "comparisons do not chain: put parentheses around one of them");
		return 0;
	}
	/* '@' then nothing: the matmul's operand, or an annotation's name
	 * that a blank parted from its '@' */
	if (p->prev.kind == FG_T_MATMUL && (found == YYSYMBOL_NEWLINE || found == YYSYMBOL_YYEOF)) {
		fg_error(p->ast.diag, loc, "expected an expression after '@' (a matmul), or an annotation "
			 "name right after it (@save), found %s", spelling(found));
		return 0;
	}
	if ((found == YYSYMBOL_RPAREN || found == YYSYMBOL_RBRACK) && !in_parens) {
		fg_error(p->ast.diag, loc, "unmatched '%c'",
			 found == YYSYMBOL_RPAREN ? ')' : ']');
		return 0;
	}
	found_text(what, sizeof what, p, t, found, want[YYSYMBOL_IDENT]);
	if (want[YYSYMBOL_GRAPH]) {
		fg_error(p->ast.diag, loc, "expected 'graph', found %s", what);
		return 0;
	}
	if (want[YYSYMBOL_YYEOF]) {
		fg_error(p->ast.diag, loc,
			 "expected end of file after the graph's closing '}', found %s%s",
			 what, found == YYSYMBOL_GRAPH ? " (a file holds one graph)" : "");
		return 0;
	}

	static const yysymbol_kind_t g_stmt[] = {
		YYSYMBOL_INPUT, YYSYMBOL_PARAM, YYSYMBOL_OUTPUT, YYSYMBOL_FUSE, YYSYMBOL_IDENT};
	static const yysymbol_kind_t g_expr[] = {
		YYSYMBOL_NUMBER, YYSYMBOL_IDENT, YYSYMBOL_LPAREN, YYSYMBOL_MINUS};
	static const yysymbol_kind_t g_attr[] = {
		YYSYMBOL_NUMBER, YYSYMBOL_IDENT, YYSYMBOL_MINUS, YYSYMBOL_LBRACK};
	static const yysymbol_kind_t g_dim[] = {
		YYSYMBOL_NUMBER, YYSYMBOL_IDENT, YYSYMBOL_MINUS};
	static const yysymbol_kind_t g_num[] = {YYSYMBOL_NUMBER, YYSYMBOL_MINUS};
	static const yysymbol_kind_t g_ops[] = {
		YYSYMBOL_PLUS, YYSYMBOL_MINUS, YYSYMBOL_STAR, YYSYMBOL_SLASH, YYSYMBOL_POW, YYSYMBOL_MATMUL};
	static const yysymbol_kind_t g_cmp[] = {
		YYSYMBOL_LT, YYSYMBOL_LE, YYSYMBOL_GT, YYSYMBOL_GE, YYSYMBOL_EQ, YYSYMBOL_NE};
	Items it = {.n = 0};

	/* At the end of the file only a closing bracket can help. */
	if (found == YYSYMBOL_YYEOF && (want[YYSYMBOL_RPAREN] || want[YYSYMBOL_RBRACK] ||
					want[YYSYMBOL_RBRACE]))
		for (int k = 0; k < YYNTOKENS; k++)
			if (k != YYSYMBOL_RPAREN && k != YYSYMBOL_RBRACK &&
			    k != YYSYMBOL_RBRACE)
				want[k] = 0;
	if (group(want, &it, "a statement", g_stmt, 5))
		want[YYSYMBOL_NEWLINE] = 0;     /* blank lines say nothing */
	int expr = group(want, &it, "an expression", g_expr, 4);
	if (!expr && !group(want, &it, "an attribute value", g_attr, 4) &&
	    !group(want, &it, "a dimension", g_dim, 3))
		group(want, &it, "a number", g_num, 2);
	int ops = group(want, &it, NULL, g_ops, 6);
	group(want, &it, NULL, g_cmp, 6);
	if (ops) {
		/* After an operand, '(' (a call) and '=' (a keyword argument)
		 * only continue a name; they are never what was forgotten. */
		want[YYSYMBOL_LPAREN] = 0;
		want[YYSYMBOL_ASSIGN] = 0;
	}
	/* Inside a call, ',' or ')' is the likely fix; at the end of a
	 * statement, a forgotten operator is. */
	if (ops && !want[YYSYMBOL_COMMA] && !want[YYSYMBOL_RPAREN] &&
	    !want[YYSYMBOL_RBRACK])
		add(&it, "an operator");
	if (want[YYSYMBOL_NEWLINE])
		want[YYSYMBOL_RBRACE] = 0;      /* '}' only ends a line early */
	/* After a statement's first name, '=' is what was meant (a second
	 * name after ',' is rare: topk's several results). */
	if (want[YYSYMBOL_ASSIGN] && want[YYSYMBOL_COMMA] && p->prev.kind == FG_T_IDENT) {
		size_t b = p->prev.off;
		while (b > 0 && (p->src->text[b - 1] == ' ' || p->src->text[b - 1] == '\t'))
			b--;
		if (b == 0 || p->src->text[b - 1] == '\n')
			want[YYSYMBOL_COMMA] = 0;
	}
	static const yysymbol_kind_t order[] = {
		YYSYMBOL_IDENT, YYSYMBOL_NUMBER, YYSYMBOL_COLON, YYSYMBOL_ASSIGN,
		YYSYMBOL_LBRACK, YYSYMBOL_LBRACE, YYSYMBOL_LPAREN, YYSYMBOL_AT,
		YYSYMBOL_COMMA, YYSYMBOL_NEWLINE, YYSYMBOL_RPAREN, YYSYMBOL_RBRACK,
		YYSYMBOL_RBRACE};
	const char *closer = NULL;      /* the item that takes "to close" */
	for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
		yysymbol_kind_t k = order[i];
		if (!want[k])
			continue;
		add(&it, spelling(k));
		if ((k == YYSYMBOL_RPAREN && t->open.c == '(') ||
		    (k == YYSYMBOL_RBRACK && t->open.c == '[') ||
		    (k == YYSYMBOL_RBRACE && t->open.c == '{'))
			closer = spelling(k);
	}
	if (it.n == 0) {
		fg_error(p->ast.diag, loc, "unexpected %s", what);
		return 0;
	}
	/* "expected ':' after 'x'": only when one specific thing would do. */
	int single = it.n == 1 && !closer && !expr &&
		     strcmp(it.s[0], "a statement") != 0 &&
		     p->prev.kind != 0 && p->prev.kind != FG_T_NEWLINE;

	size_t m = (size_t)snprintf(msg, sizeof msg, "expected ");
	for (int i = 0; i < it.n && m < sizeof msg; i++) {
		const char *sep = i == 0 ? "" : i == it.n - 1 ? " or " : ", ";
		m += (size_t)snprintf(msg + m, sizeof msg - m, "%s%s", sep, it.s[i]);
		if (it.s[i] == closer && m < sizeof msg)
			m += (size_t)snprintf(msg + m, sizeof msg - m,
					      " to close '%c' at %d:%d", t->open.c,
					      t->open.loc.line, t->open.loc.col);
	}
	if (single && m < sizeof msg) {
		int len = p->prev.len > 40 ? 32 : (int)p->prev.len;
		m += (size_t)snprintf(msg + m, sizeof msg - m, " after '%.*s%s'", len,
				      p->src->text + p->prev.off,
				      p->prev.len > 40 ? "..." : "");
	}
	fg_error(p->ast.diag, loc, "%s, found %s", msg, what);
	return 0;
}

/* Called by bison only when its stack is full, which `nest` prevents;
 * kept as a located diagnostic should the bound ever be wrong. */
void yyerror(YYLTYPE *lloc, yyscan_t scanner, FgParser *p, const char *msg)
{
	(void)scanner;
	if (strstr(msg, "exhausted"))
		fg_error(p->ast.diag, *lloc,
			 "expression nested too deeply (more than %d levels)",
			 FG_AST_MAX_NEST);
	else
		fg_error(p->ast.diag, *lloc, "%s", msg);
}
