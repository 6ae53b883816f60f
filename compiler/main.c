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
	const char *format;           /* report: text, json, dot */
	const char *out;              /* compile: -o OUT (writes OUT.cu) */
	const char *arch;             /* compile: --arch for --build */
	int build;                    /* compile: --build runs nvcc */
	int in_dtype;                 /* run: --in-dtype */
	const char *gemm;             /* compile: --gemm auto|cublaslt|fgc */
	int group;                    /* extract: the group, or -1 */
	uint64_t seed;
	FgFuseOptions fuse;
	FG_VEC(FgDefine) defs;
	FG_VEC(const char *) dumps;   /* stages to print: build or a pass */
} Options;

static const char usage[] =
	"usage: fgc COMMAND [options] model.fg\n"
	"\n"
	"commands:\n"
	"  check   model.fg                             parse and type-check; diagnostics only\n"
	"  run     model.fg --outputs DIR [--inputs DIR] run the reference interpreter (f64)\n"
	"  report  model.fg [--format text|json|dot]    the fusion plan and why\n"
	"  extract model.fg --group N                   group N as a standalone .fg\n"
	"  verify  model.fg                             run the plan group by group on the\n"
	"                                               interpreter against the op-by-op result\n"
	"  compile model.fg -o OUT [--build]            write OUT.cu: one CUDA kernel per group and\n"
	"                                               the program table; --build also runs nvcc\n"
	"  emit-torch model.fg [-o FILE]                the graph as a PyTorch function (Python),\n"
	"                                               composites as torch calls (docs/peers.md)\n"
	"\n"
	"options:\n"
	"  -D NAME=VALUE    bind a symbolic dimension\n"
	"  -d STAGE         print the IR as .fg after STAGE: build, expand\n"
	"  --inputs DIR     (run) read NAME.npy for each input and param; missing ones are drawn\n"
	"  --outputs DIR    (run) write NAME.npy per output and saved.NAME.npy per @save value\n"
	"  --in-dtype       (run) also write them evaluated in the graph's dtypes (each float\n"
	"                   op rounded to its dtype, sums in f32) into DIR/in-dtype: the\n"
	"                   baseline of a binary's --check DIR RMSE gate\n"
	"  --seed S         (run, verify) seed for inputs that are drawn (default 0)\n"
	"  -o OUT           (compile) write OUT.cu, and the binary OUT with --build;\n"
	"                   (emit-torch) write the module to OUT instead of stdout\n"
	"  --build          (compile) build OUT with nvcc ($NVCC, else nvcc) and the runtime\n"
	"  --arch SM        (compile) the GPU for --build (default sm_90a)\n"
	"  --gemm WHO       (compile) who runs float matmuls: auto (default: the\n"
	"                   generated sm_90a kernel for epilogues cuBLASLt cannot\n"
	"                   fuse), cublaslt, or fgc (the generated kernel wherever\n"
	"                   it can)\n"
	"  --tf32           (compile, report) f32 matmuls may multiply as tf32 on the\n"
	"                   tensor cores (10 bits of each operand's mantissa); --check\n"
	"                   then holds the values they feed to tf32's precision\n"
	"  --no-fuse        one group per op: the unfused baseline\n"
	"  --bw GBS         cost model: device bandwidth in GB/s (default 4300)\n"
	"  --launch-us US   cost model: cost of one kernel launch in us (default 3)\n"
	"  --reg-limit N    registers per thread by the estimate: where loop groups are\n"
	"                   cut, and how many elements a kernel gives a thread (default 128)\n"
	"  -h, --help       this text\n";

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

/* A positive number for a cost-model flag. */
static int parse_positive(const char *flag, const char *v, double *out)
{
	char *end;

	errno = 0;
	double x = strtod(v, &end);
	if (errno || *end || !(x > 0) || x > 1e12)
		return usage_error("%s takes a positive number", flag);
	*out = x;
	return 0;
}

/* Applies flag `arg` with its value v. */
static int apply_flag(FgArena *a, Options *o, const char *arg, const char *v)
{
	uint64_t u;
	double x;

	if (arg[1] == 'D')
		return parse_define(a, o, v);
	if (arg[1] == 'd') {
		if (!known_stage(v))
			return usage_error("-d %s: no such stage; expected build or expand", v);
		fg_vec_push(a, &o->dumps, v);
	} else if (strcmp(arg, "--inputs") == 0) {
		o->inputs = v;
	} else if (strcmp(arg, "--outputs") == 0) {
		o->outputs = v;
	} else if (strcmp(arg, "-o") == 0) {
		o->out = v;
	} else if (strcmp(arg, "--arch") == 0) {
		o->arch = v;
	} else if (strcmp(arg, "--gemm") == 0) {
		if (strcmp(v, "auto") != 0 && strcmp(v, "cublaslt") != 0 && strcmp(v, "fgc") != 0)
			return usage_error("--gemm %s: expected auto, cublaslt or fgc", v);
		o->gemm = v;
	} else if (strcmp(arg, "--format") == 0) {
		if (strcmp(v, "text") != 0 && strcmp(v, "json") != 0 && strcmp(v, "dot") != 0)
			return usage_error("--format %s: expected text, json or dot", v);
		o->format = v;
	} else if (strcmp(arg, "--group") == 0) {
		if (parse_u64(v, &u) != 0 || u > 1000000000)
			return usage_error("--group %s: expected a group number", v);
		o->group = (int)u;
	} else if (strcmp(arg, "--seed") == 0) {
		if (parse_u64(v, &o->seed) != 0)
			return usage_error("--seed %s: expected an unsigned 64-bit integer", v);
	} else if (strcmp(arg, "--bw") == 0) {
		if (parse_positive(arg, v, &o->fuse.bw_gbs) != 0)
			return 1;
	} else if (strcmp(arg, "--launch-us") == 0) {
		if (parse_positive(arg, v, &o->fuse.launch_us) != 0)
			return 1;
	} else {
		if (parse_positive(arg, v, &x) != 0 || x > 255 || x != (int)x)
			return usage_error("--reg-limit %s: expected a whole number up to 255", v);
		o->fuse.reg_limit = (int)x;
	}
	return 0;
}

static const char *const value_flags[] = {
	"-D", "-d", "--inputs", "--outputs", "--seed", "--format", "--group", "--bw", "--launch-us", "--reg-limit",
	"-o", "--arch", "--gemm",
};

static int parse_args(FgArena *a, int argc, char **argv, Options *o)
{
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i], *v = NULL;
		int takes = 0;
		for (size_t k = 0; k < sizeof value_flags / sizeof value_flags[0]; k++)
			takes |= strcmp(arg, value_flags[k]) == 0;
		if (takes) {
			if (!(v = value_of(argc, argv, &i)))
				return 1;
		} else if (strncmp(arg, "-D", 2) == 0 || strncmp(arg, "-d", 2) == 0) {
			v = arg + 2;
		} else if (strcmp(arg, "--no-fuse") == 0) {
			o->fuse.no_fuse = 1;
			continue;
		} else if (strcmp(arg, "--build") == 0) {
			o->build = 1;
			continue;
		} else if (strcmp(arg, "--in-dtype") == 0) {
			o->in_dtype = 1;
			continue;
		} else if (strcmp(arg, "--tf32") == 0) {
			o->fuse.tf32 = 1;
			continue;
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
		if (apply_flag(a, o, arg, v) != 0)
			return 1;
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

/* Source to IR after the first npasses passes (all: expanded); the error
 * count (0: g is ready). */
static int front_end(FgArena *a, Options *o, FgDiag *d, FgSource *src, FgGraph *g, int npasses)
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
	for (int i = 0; i < npasses; i++) {
		passes[i].run(g);
		dump_if_asked(o, passes[i].name, g);
	}
	return 0;
}

/* Runs command cmd (an index into main's list) on the expanded graph. */
static int command(int cmd, const Options *o, FgGraph *g, FgDiag *d)
{
	FgPlan plan;
	FgGraph sub;

	if (cmd == 0)
		return 0;
	if (cmd == 1)
		return fg_run(g, o->inputs, o->outputs, o->seed, o->in_dtype, d);
	if (cmd == 6)
		return fg_torch_emit(g, o->out, o->file, d);
	if (fg_pass_fuse(g, &o->fuse, &plan, d) != 0)
		return 1;
	fg_pass_memplan(&plan);
	switch (cmd) {
	case 2:
		if (!o->format || strcmp(o->format, "text") == 0)
			fg_report_text(stdout, &plan);
		else if (strcmp(o->format, "json") == 0)
			fg_report_json(stdout, &plan);
		else
			fg_report_dot(stdout, &plan);
		return 0;
	case 5: {
		FgCudaOptions co = {o->out, o->file, o->arch, o->build, FG_GEMM_AUTO};
		if (o->gemm)
			co.gemm = !strcmp(o->gemm, "fgc") ? FG_GEMM_FGC : !strcmp(o->gemm, "cublaslt") ? FG_GEMM_CUBLASLT : FG_GEMM_AUTO;
		return fg_cuda_compile(&plan, &co, d);
	}
	case 3:
		if (o->group >= plan.ngroups) {
			fg_error(d, (FgLoc){0, 0}, "--group %d: the plan has %d groups (0 to %d)", o->group,
				 plan.ngroups, plan.ngroups - 1);
			return 1;
		}
		fg_extract_group(&plan, o->group, &sub);
		fg_ir_print(stdout, &sub);
		return 0;
	default:
		return fg_plan_verify(&plan, o->seed, d);
	}
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
	o.group = -1;
	fg_fuse_defaults(&o.fuse);
	if (parse_args(&arena, argc, argv, &o) != 0)
		goto out;
	if (!o.command) {
		fputs(usage, stderr);
		goto out;
	}
	static const char *const commands[] = {"check", "run", "report", "extract", "verify", "compile", "emit-torch"};
	int cmd = -1;
	for (int i = 0; i < 7; i++)
		if (strcmp(o.command, commands[i]) == 0)
			cmd = i;
	if (cmd < 0) {
		usage_error("unknown command '%s'; expected check, run, report, extract, verify, compile or emit-torch", o.command);
		goto out;
	}
	if (!o.file) {
		usage_error("'%s' needs a .fg file", o.command);
		goto out;
	}
	if (cmd == 1 && !o.outputs) {
		usage_error("'run' needs --outputs DIR%s", "");
		goto out;
	}
	if (cmd != 1 && (o.inputs || o.outputs || o.in_dtype)) {
		usage_error("--inputs, --outputs and --in-dtype belong to 'run', not '%s'", o.command);
		goto out;
	}
	if (cmd == 5 && !o.out) {
		usage_error("'compile' needs -o OUT%s", "");
		goto out;
	}
	if (cmd != 5 && (o.build || o.arch || o.gemm)) {
		usage_error("--build, --arch and --gemm belong to 'compile', not '%s'", o.command);
		goto out;
	}
	if (cmd != 5 && cmd != 2 && o.fuse.tf32) {
		usage_error("--tf32 belongs to 'compile' and 'report', not '%s'", o.command);
		goto out;
	}
	if (cmd != 5 && cmd != 6 && o.out) {
		usage_error("-o belongs to 'compile' and 'emit-torch', not '%s'", o.command);
		goto out;
	}
	if (cmd == 3 && o.group < 0) {
		usage_error("'extract' needs --group N%s", "");
		goto out;
	}
	/* emit-torch writes composites as torch calls: it takes the graph as built */
	if (front_end(&arena, &o, &d, &src, &g, cmd == 6 ? 0 : NPASSES) != 0)
		goto out;
	status = command(cmd, &o, &g, &d);
out:
	fflush(stdout);
	fg_arena_free(&arena);
	return status;
}
