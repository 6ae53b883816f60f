/*
 * main.c - the fgc command line: parse the arguments, run the pipeline
 * (parse, build the IR, the passes in the order of `passes` below, each
 * with its dump flag) and hand the result to the command.
 *
 * Exit status: 0 on success, 1 after any error, 2 never (usage errors are
 * errors too).  No command writes an output file unless it succeeds.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fg.h"

typedef struct Pass {
	const char *name;       /* for -d NAME */
	void (*run)(FgGraph *g);
} Pass;

/* The passes, in the order they run. */
static const Pass passes[] = {
	{"expand", fg_pass_expand},
};
#define NPASSES ((int)(sizeof passes / sizeof passes[0]))

typedef struct Options {
	const char *command;
	const char *file;
	const char *inputs, *outputs;
	uint64_t seed;
	FG_VEC(FgDefine) defs;
	FG_VEC(const char *) dumps;   /* stages to print: build or a pass */
} Options;

static const char usage[] =
	"usage: fgc COMMAND [options] model.fg\n"
	"\n"
	"commands:\n"
	"  check  model.fg                            parse and type-check; diagnostics only\n"
	"  run    model.fg --inputs DIR --outputs DIR  run the reference interpreter (f64)\n"
	"\n"
	"options:\n"
	"  -D NAME=VALUE   bind a symbolic dimension\n"
	"  -d STAGE        print the IR as .fg after STAGE: build, expand\n"
	"  --inputs DIR    (run) read NAME.npy for each input and param; missing ones are drawn\n"
	"  --outputs DIR   (run) write NAME.npy per output and saved.NAME.npy per @save value\n"
	"  --seed S        (run) seed for inputs that are drawn (default 0)\n"
	"  -h, --help      this text\n";

static int usage_error(const char *fmt, const char *arg)
{
	fputs("fgc: error: ", stderr);
	fprintf(stderr, fmt, arg);
	fputs("\n(fgc --help lists the commands and options)\n", stderr);
	return 1;
}

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;

	if (!*s || *s == '-' || *s == '+')
		return -1;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end)
		return -1;
	*out = v;
	return 0;
}

static int parse_define(FgArena *a, Options *o, const char *arg)
{
	const char *eq = strchr(arg, '=');
	uint64_t v;

	if (!eq || eq == arg)
		return usage_error("-D takes NAME=VALUE, got '%s'", arg);
	for (const char *p = arg; p < eq; p++)
		if (!(p[0] == '_' || (p[0] >= 'A' && p[0] <= 'Z') || (p[0] >= 'a' && p[0] <= 'z') ||
		      (p > arg && p[0] >= '0' && p[0] <= '9')))
			return usage_error("-D %s: the name is not an identifier", arg);
	if (parse_u64(eq + 1, &v) != 0 || v == 0 || v > INT64_MAX)
		return usage_error("-D %s: the value must be a positive integer that fits in 64 bits", arg);
	FgDefine d = {fg_arena_strndup(a, arg, (size_t)(eq - arg)), (int64_t)v, 0};
	for (int i = 0; i < o->defs.n; i++)
		if (strcmp(o->defs.v[i].name, d.name) == 0)
			return usage_error("-D %s is given twice", d.name);
	fg_vec_push(a, &o->defs, d);
	return 0;
}

static int known_stage(const char *s)
{
	if (strcmp(s, "build") == 0)
		return 1;
	for (int i = 0; i < NPASSES; i++)
		if (strcmp(s, passes[i].name) == 0)
			return 1;
	return 0;
}

/* A flag's value: the next argument, which must exist. */
static const char *value_of(int argc, char **argv, int *i)
{
	if (*i + 1 >= argc) {
		usage_error("%s needs a value", argv[*i]);
		return NULL;
	}
	return argv[++*i];
}

static int parse_args(FgArena *a, int argc, char **argv, Options *o)
{
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i], *v;
		if (strcmp(arg, "-D") == 0 || strcmp(arg, "-d") == 0 || strcmp(arg, "--inputs") == 0 ||
		    strcmp(arg, "--outputs") == 0 || strcmp(arg, "--seed") == 0) {
			if (!(v = value_of(argc, argv, &i)))
				return 1;
		} else if (strncmp(arg, "-D", 2) == 0 || strncmp(arg, "-d", 2) == 0) {
			v = arg + 2;
		} else if (arg[0] == '-' && arg[1]) {
			return usage_error("unknown option '%s'", arg);
		} else if (!o->command) {
			o->command = arg;
			continue;
		} else if (!o->file) {
			o->file = arg;
			continue;
		} else {
			return usage_error("unexpected argument '%s': fgc takes one .fg file", arg);
		}
		if (arg[1] == 'D') {
			if (parse_define(a, o, v) != 0)
				return 1;
		} else if (arg[1] == 'd') {
			if (!known_stage(v))
				return usage_error("-d %s: no such stage; expected build or expand", v);
			fg_vec_push(a, &o->dumps, v);
		} else if (strcmp(arg, "--inputs") == 0) {
			o->inputs = v;
		} else if (strcmp(arg, "--outputs") == 0) {
			o->outputs = v;
		} else if (parse_u64(v, &o->seed) != 0) {
			return usage_error("--seed %s: expected an unsigned 64-bit integer", v);
		}
	}
	return 0;
}

static void dump_if_asked(const Options *o, const char *stage, const FgGraph *g)
{
	for (int i = 0; i < o->dumps.n; i++)
		if (strcmp(o->dumps.v[i], stage) == 0) {
			printf("# fgc: after %s\n", stage);
			fg_ir_print(stdout, g);
		}
}

/* Source to expanded IR; the error count (0: g is ready). */
static int front_end(FgArena *a, Options *o, FgDiag *d, FgSource *src, FgGraph *g)
{
	FgProgram prog;

	if (fg_source_read(a, o->file, src) != 0)
		return 1;
	d->src = src;
	if (fg_parse(a, d, src, &prog) != 0)
		return d->nerrors;
	if (fg_ir_build(a, d, &prog, o->defs.v, o->defs.n, g) != 0)
		return d->nerrors;
	dump_if_asked(o, "build", g);
	for (int i = 0; i < NPASSES; i++) {
		passes[i].run(g);
		dump_if_asked(o, passes[i].name, g);
	}
	return 0;
}

int main(int argc, char **argv)
{
	FgArena arena;
	Options o;
	FgSource src;
	FgGraph g;
	FgDiag d;
	int status = 1;

	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			fputs(usage, stdout);
			return 0;
		}
	fg_arena_init(&arena);
	memset(&o, 0, sizeof o);
	memset(&d, 0, sizeof d);
	if (parse_args(&arena, argc, argv, &o) != 0)
		goto out;
	if (!o.command) {
		fputs(usage, stderr);
		goto out;
	}
	int is_run = strcmp(o.command, "run") == 0;
	if (!is_run && strcmp(o.command, "check") != 0) {
		usage_error("unknown command '%s'; expected check or run", o.command);
		goto out;
	}
	if (!o.file) {
		usage_error("'%s' needs a .fg file", o.command);
		goto out;
	}
	if (is_run && !o.outputs) {
		usage_error("'run' needs --outputs DIR%s", "");
		goto out;
	}
	if (!is_run && (o.inputs || o.outputs)) {
		usage_error("--inputs and --outputs belong to 'run', not '%s'", o.command);
		goto out;
	}
	if (front_end(&arena, &o, &d, &src, &g) != 0)
		goto out;
	status = is_run ? fg_run(&g, o.inputs, o.outputs, o.seed, &d) : 0;
out:
	fflush(stdout);
	fg_arena_free(&arena);
	return status;
}
