/*
 * main.c - the fgc command line: parse the arguments against the flag
 * table, run the pipeline (parse, build the IR, the passes in the order of
 * `passes` below, each with its dump flag, the partitioner and the memory
 * plan where the command needs a plan) and hand the result to the
 * command, found in the command table.  Each flag says which commands
 * take it; any other use, and any flag not in the table, is an error.
 *
 * Exit status: 0 on success, 1 after any error, 2 never (usage errors are
 * errors too).  No command writes an output file unless it succeeds.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "fg.h"
#include "fgrt.h"

typedef struct Pass {
	const char *name;       /* for -d NAME */
	void (*run)(FgGraph *g);
} Pass;

/* The passes, in the order they run. */
static const Pass passes[] = {
	{"expand", fg_pass_expand},
	{"cse", fg_pass_cse},
};
#define NPASSES ((int)(sizeof passes / sizeof passes[0]))

typedef struct Options {
	const char *command;
	const char *file;
	const char *inputs, *outputs;
	const char *format;           /* report: text, json, dot */
	const char *dot_ops;          /* report: --dot-ops all|none|N,M,... */
	const char *explain;          /* report: --explain NAME */
	const char *diff;             /* report: --diff OTHER.fg or "FLAGS" */
	const char *measured;         /* report: --measured FILE (--bench-json) */
	const char *out;              /* compile: -o OUT (writes OUT.cu) */
	const char *arch;             /* compile: --arch for --build */
	int build;                    /* compile: --build runs nvcc */
	int lib;                      /* compile: --lib builds a shared library */
	int in_dtype;                 /* run: --in-dtype */
	int draw_missing;             /* run: --draw-missing */
	int precision;                /* verify: --precision f64|kernel */
	int plant;                    /* verify: --plant KIND (FgrtPlant) */
	FgGemmChoice gemm;            /* compile: --gemm auto|cublaslt|fgc */
	int group;                    /* extract: the group, or -1 */
	uint64_t seed;
	FgFuseOptions fuse;
	FG_VEC(FgDefine) defs;
	FG_VEC(const char *) dumps;   /* stages to print: build or a pass */
	unsigned given;               /* the flags given: bit i for flags[i] */
} Options;

static const char usage[] =
	"usage: fgc COMMAND [options] model.fg\n"
	"\n"
	"commands:\n"
	"  check   model.fg                             parse, type-check and partition; diagnostics only\n"
	"  run     model.fg --outputs DIR [--inputs DIR] run the reference interpreter (f64)\n"
	"  report  model.fg [--format text|json|dot]    the fusion plan and why\n"
	"  extract model.fg --group N                   group N as a standalone .fg\n"
	"  verify  model.fg                             run the plan group by group on the\n"
	"                                               interpreter against the op-by-op result\n"
	"  compile model.fg -o OUT [--build|--lib]      write OUT.cu: one CUDA kernel per group and\n"
	"                                               the program table; --build also runs nvcc\n"
	"  emit-torch model.fg [-o FILE]                the graph as a PyTorch function (Python),\n"
	"                                               composites as torch calls (docs/peers.md)\n"
	"\n"
	"options:\n"
	"  -D NAME=VALUE    bind a symbolic dimension\n"
	"  -d STAGE         print the IR as .fg after STAGE: build, expand, cse\n"
	"  --inputs DIR     (run) read NAME.npy for each input and param; a missing one is an\n"
	"                   error that lists what DIR holds (without --inputs all are drawn)\n"
	"  --draw-missing   (run) draw the inputs DIR has no file for, from the seed\n"
	"  --outputs DIR    (run) write NAME.npy per output and saved.NAME.npy per @save value\n"
	"  --in-dtype       (run) also write them evaluated in the graph's dtypes (each float\n"
	"                   op rounded to its dtype, sums in f32) into DIR/in-dtype: the\n"
	"                   baseline of a binary's --check DIR RMSE gate\n"
	"  --seed S         (run, verify) seed for inputs that are drawn (default 0)\n"
	"  --outputs DIR    (verify) also write the plan's values there, as run does\n"
	"  --precision P    (verify) each group in f64 (default: only the plan's stores\n"
	"                   round), or in the kernels' f32 arithmetic (kernel: what a\n"
	"                   binary should compute, judged as its --check judges it)\n"
	"  --plant KIND     (verify) put a bug into every value compared (element, row,\n"
	"                   column or tile: docs/testing.md), which must then fail\n"
	"  --dot-ops GROUPS (report, with --format dot) the groups drawn op by op:\n"
	"                   all, none, or numbers (0,3); the others are one node each\n"
	"                   (default: all when that is 150 ops or fewer, else none)\n"
	"  --explain NAME   (report) one value: what computes it, in which groups,\n"
	"                   whether it is written and why, each rule the partitioner\n"
	"                   tried on it, what reads it\n"
	"  --diff OTHER     (report) this plan against another: OTHER.fg's (planned with\n"
	"                   the same flags), or this graph's under other planning flags\n"
	"                   (--diff \"--no-fuse\", --diff \"--reg-limit 64\"); totals, then\n"
	"                   each group matched by its ops: the same, split, merged, moved\n"
	"  --measured FILE  (report) a binary's timings (its --bench N --bench-json FILE)\n"
	"                   beside the estimates, per group and in all\n"
	"  -o OUT           (compile) write OUT.cu, and the binary OUT with --build;\n"
	"                   (emit-torch) write the module to OUT instead of stdout\n"
	"  --build          (compile) build OUT with nvcc ($NVCC, else nvcc) and the runtime\n"
	"  --lib            (compile) OUT is a shared library with a C ABI (runtime/fgrt_model.h):\n"
	"                   writes DIR/NAME.cu and DIR/NAME.h beside it (NAME: the .fg's stem)\n"
	"  --arch SM        (compile) the GPU for --build (default sm_90a)\n"
	"  --gemm WHO       (compile, report) who runs float matmuls: auto (default:\n"
	"                   the generated sm_90a kernel for epilogues cuBLASLt cannot\n"
	"                   fuse), cublaslt, or fgc (the generated kernel wherever\n"
	"                   it can)\n"
	"  --tf32           (compile, report) f32 matmuls may multiply as tf32 on the\n"
	"                   tensor cores (10 bits of each operand's mantissa); --check\n"
	"                   then holds the values they feed to tf32's precision\n"
	"  --accurate-math  (compile) exp, sigmoid, silu and the GELUs of f16 and bf16\n"
	"                   values in their accurate f32 forms too (default: fast forms\n"
	"                   within 1/8 of the dtype's unit roundoff; docs/testing.md)\n"
	"  --no-pdl         (compile) launch each kernel plainly, to start only once the\n"
	"                   one before it has finished (default for sm_90 and later:\n"
	"                   programmatic dependent launch, the next kernel's blocks let\n"
	"                   in while this one runs)\n"
	"  --no-fuse        one group per op: the unfused baseline\n"
	"  --bw GBS         cost model: device bandwidth in GB/s (default 4300)\n"
	"  --tc-tflops R    cost model: tensor-core rate in TFLOP/s, for f16 and bf16\n"
	"                   matmuls (default 790, the H200's dense bf16)\n"
	"  --cc-tflops R    cost model: CUDA-core rate in TFLOP/s, for the other FLOPs\n"
	"                   (default 67, the H200's f32)\n"
	"  --launch-us US   cost model: cost of one kernel launch in us (default 3)\n"
	"  --reg-limit N    registers per thread by the estimate: where loop groups are\n"
	"                   cut, and how many elements a kernel gives a thread (default 128)\n"
	"  -h, --help       this text\n";


/* ------------------------------------------------------------ commands */

static int cmd_check(const Options *o, FgGraph *g, FgPlan *plan, FgDiag *d)
{
	(void)o, (void)g, (void)plan, (void)d;
	return 0;
}

static int cmd_run(const Options *o, FgGraph *g, FgPlan *plan, FgDiag *d)
{
	(void)plan;
	return fg_run(g, o->inputs, o->draw_missing, o->outputs, o->seed, o->in_dtype, d);
}

/* The plan --diff compares with: of another .fg, or of this graph under
 * other planning flags; la and lb say which. */
static int diff_plan(const Options *o, const FgGraph *g, FgPlan *b, const char **la, const char **lb, FgDiag *d);

/* --dot-ops: "all", "none" or group numbers "N,M,...", into a flag per
 * group of the plan. */
static int dot_groups(const char *v, const FgPlan *plan, char **out, FgDiag *d)
{
	char *ops = fg_arena_array(plan->g->arena, (size_t)plan->ngroups + 1, 1);

	*out = ops;
	if (strcmp(v, "all") == 0 || strcmp(v, "none") == 0) {
		memset(ops, v[0] == 'a', (size_t)plan->ngroups + 1);
		return 0;
	}
	for (const char *p = v;; p++) {
		char *end;
		errno = 0;
		long gi = strtol(p, &end, 10);
		if (end == p || *p == '-' || *p == '+' || errno || (*end && *end != ',')) {
			fg_error(d, (FgLoc){0, 0}, "--dot-ops %s: expected all, none or group numbers such as 0,3", v);
			return 1;
		}
		if (gi >= plan->ngroups) {
			fg_error(d, (FgLoc){0, 0}, "--dot-ops %s: the plan has %d groups (0 to %d)", v, plan->ngroups,
				 plan->ngroups - 1);
			return 1;
		}
		ops[gi] = 1;
		if (!*end)
			return 0;
		p = end;
	}
}

static int cmd_report(const Options *o, FgGraph *g, FgPlan *plan, FgDiag *d)
{
	/* launches and scratch as compile emits them, for the plan and for
	 * the unfused baseline (one group per op) beside it */
	fg_cuda_plan_costs(plan, o->gemm);
	if (plan->opt.no_fuse) {
		plan->unfused = plan->fused;
	} else {
		FgFuseOptions uo = plan->opt;
		FgPlan un;
		uo.no_fuse = 1;
		if (fg_pass_fuse(g, &uo, &un, d) == 0) {
			fg_pass_memplan(&un);
			fg_cuda_plan_costs(&un, o->gemm);
			plan->unfused = un.fused;
		}
	}
	if (o->dot_ops && (!o->format || strcmp(o->format, "dot") != 0)) {
		fg_error(d, (FgLoc){0, 0}, "--dot-ops %s: only with --format dot (which groups the picture draws op by op)",
			 o->dot_ops);
		return 1;
	}
	if (o->explain && o->format && strcmp(o->format, "text") != 0) {
		fg_error(d, (FgLoc){0, 0}, "--explain %s: the explanation is text; leave out --format %s", o->explain,
			 o->format);
		return 1;
	}
	if (o->measured && fg_report_measured(plan, o->measured, d) != 0)
		return 1;
	if (o->explain)
		return fg_report_explain(stdout, plan, o->explain, d);
	if (o->diff) {
		FgPlan b;
		const char *la, *lb;
		if (o->format && strcmp(o->format, "text") != 0) {
			fg_error(d, (FgLoc){0, 0}, "--diff %s: the comparison is text; leave out --format %s", o->diff,
				 o->format);
			return 1;
		}
		if (diff_plan(o, g, &b, &la, &lb, d) != 0)
			return 1;
		fg_report_diff(stdout, plan, la, &b, lb);
		return 0;
	}
	if (!o->format || strcmp(o->format, "text") == 0) {
		fg_report_text(stdout, plan);
	} else if (strcmp(o->format, "json") == 0) {
		fg_report_json(stdout, plan);
	} else {
		char *ops = NULL;
		if (o->dot_ops && dot_groups(o->dot_ops, plan, &ops, d) != 0)
			return 1;
		fg_report_dot_ops(stdout, plan, ops);
	}
	return 0;
}

static int cmd_extract(const Options *o, FgGraph *g, FgPlan *plan, FgDiag *d)
{
	FgGraph sub;

	(void)g;
	if (o->group >= plan->ngroups) {
		fg_error(d, (FgLoc){0, 0}, "--group %d: the plan has %d groups (0 to %d)", o->group, plan->ngroups,
			 plan->ngroups - 1);
		return 1;
	}
	fg_extract_group(plan, o->group, &sub);
	fg_ir_print(stdout, &sub);
	return 0;
}

static int cmd_verify(const Options *o, FgGraph *g, FgPlan *plan, FgDiag *d)
{
	FgVerifyOptions vo = {o->seed, o->precision, o->plant, o->outputs};
	(void)g;
	return fg_plan_verify(plan, &vo, d);
}

static int cmd_compile(const Options *o, FgGraph *g, FgPlan *plan, FgDiag *d)
{
	FgCudaOptions co = {o->out, o->file, o->arch, o->build, o->gemm, o->lib};

	(void)g;
	return fg_cuda_compile(plan, &co, d);
}

static int cmd_emit_torch(const Options *o, FgGraph *g, FgPlan *plan, FgDiag *d)
{
	(void)plan;
	return fg_torch_emit(g, o->out, o->file, d);
}

typedef struct Command {
	const char *name;
	int expanded;           /* runs on the expanded graph (else as built:
				   emit-torch writes composites as torch calls) */
	int planned;            /* needs the fusion plan and the memory plan:
				   1 always, 2 when the graph has fuse { }
				   blocks (check: whether each is one kernel) */
	int (*run)(const Options *o, FgGraph *g, FgPlan *plan, FgDiag *d);
} Command;

/* The commands; a flag's `cmds` names them by these bits. */
enum { C_CHECK = 1, C_RUN = 2, C_REPORT = 4, C_EXTRACT = 8, C_VERIFY = 16, C_COMPILE = 32, C_TORCH = 64 };
#define C_ALL 127u
#define C_PLAN (C_REPORT | C_EXTRACT | C_VERIFY | C_COMPILE)
static const Command commands[] = {
	{"check", 1, 2, cmd_check},     /* a fuse { } block that cannot be
					   one kernel is an error */
	{"run", 1, 0, cmd_run},
	{"report", 1, 1, cmd_report},
	{"extract", 1, 1, cmd_extract},
	{"verify", 1, 1, cmd_verify},
	{"compile", 1, 1, cmd_compile},
	{"emit-torch", 0, 0, cmd_emit_torch},
};
#define NCOMMANDS ((int)(sizeof commands / sizeof commands[0]))

/* --------------------------------------------------------------- flags */

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

static int flag_define(FgArena *a, Options *o, const char *arg)
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

static int flag_dump(FgArena *a, Options *o, const char *v)
{
	int known = strcmp(v, "build") == 0;

	for (int i = 0; i < NPASSES; i++)
		known |= strcmp(v, passes[i].name) == 0;
	if (!known)
		return usage_error("-d %s: no such stage; expected build, expand or cse", v);
	fg_vec_push(a, &o->dumps, v);
	return 0;
}

static int flag_seed(FgArena *a, Options *o, const char *v)
{
	(void)a;
	if (parse_u64(v, &o->seed) != 0)
		return usage_error("--seed %s: expected an unsigned 64-bit integer", v);
	return 0;
}

static int flag_format(FgArena *a, Options *o, const char *v)
{
	(void)a;
	if (strcmp(v, "text") != 0 && strcmp(v, "json") != 0 && strcmp(v, "dot") != 0)
		return usage_error("--format %s: expected text, json or dot", v);
	o->format = v;
	return 0;
}

static int flag_group(FgArena *a, Options *o, const char *v)
{
	uint64_t u;

	(void)a;
	if (parse_u64(v, &u) != 0 || u > 1000000000)
		return usage_error("--group %s: expected a group number", v);
	o->group = (int)u;
	return 0;
}

static const char *const gemm_who[] = {[FG_GEMM_AUTO] = "auto", [FG_GEMM_CUBLASLT] = "cublaslt", [FG_GEMM_FGC] = "fgc"};

static int flag_gemm(FgArena *a, Options *o, const char *v)
{
	(void)a;
	for (int i = 0; i < (int)(sizeof gemm_who / sizeof gemm_who[0]); i++)
		if (strcmp(v, gemm_who[i]) == 0) {
			o->gemm = (FgGemmChoice)i;
			return 0;
		}
	return usage_error("--gemm %s: expected auto, cublaslt or fgc", v);
}

static int flag_bw(FgArena *a, Options *o, const char *v)
{
	(void)a;
	return parse_positive("--bw", v, &o->fuse.bw_gbs);
}

static int flag_tc_tflops(FgArena *a, Options *o, const char *v)
{
	(void)a;
	return parse_positive("--tc-tflops", v, &o->fuse.tc_tflops);
}

static int flag_cc_tflops(FgArena *a, Options *o, const char *v)
{
	(void)a;
	return parse_positive("--cc-tflops", v, &o->fuse.cc_tflops);
}

static int flag_launch_us(FgArena *a, Options *o, const char *v)
{
	(void)a;
	return parse_positive("--launch-us", v, &o->fuse.launch_us);
}

static int flag_precision(FgArena *a, Options *o, const char *v)
{
	(void)a;
	if (strcmp(v, "f64") == 0)
		o->precision = FG_INTERP_F64;
	else if (strcmp(v, "kernel") == 0)
		o->precision = FG_INTERP_KERNEL;
	else
		return usage_error("--precision %s: expected f64 or kernel", v);
	return 0;
}

static int flag_plant(FgArena *a, Options *o, const char *v)
{
	(void)a;
	if ((o->plant = fgrt_plant_parse(v)) == FGRT_PLANT_NONE)
		return usage_error("--plant %s: expected element, row, column or tile", v);
	return 0;
}

static int flag_reg_limit(FgArena *a, Options *o, const char *v)
{
	char *end;

	(void)a;
	errno = 0;
	double x = strtod(v, &end);     /* one diagnostic, not parse_positive's too */
	if (errno || *end || !(x >= 1) || x > 255 || x != (int)x)
		return usage_error("--reg-limit %s: expected a whole number from 1 to 255", v);
	o->fuse.reg_limit = (int)x;
	return 0;
}

typedef struct Flag {
	const char *name;
	const char *value;      /* what it takes, for messages ("DIR"), or NULL */
	unsigned cmds;          /* the commands that take it: C_* bits */
	int (*apply)(FgArena *a, Options *o, const char *v);  /* or NULL: */
	size_t field;           /* the Options member it sets: a flag with a
				   value stores it (const char *), one without
				   sets an int to 1 */
} Flag;
#define SET(member) NULL, offsetof(Options, member)

/* Every flag.  -D and -d also take their value joined (-DB=4). */
static const Flag flags[] = {
	{"-D", "NAME=VALUE", C_ALL, flag_define, 0},
	{"-d", "STAGE", C_ALL, flag_dump, 0},
	{"--inputs", "DIR", C_RUN, SET(inputs)},
	{"--outputs", "DIR", C_RUN | C_VERIFY, SET(outputs)},
	{"--in-dtype", NULL, C_RUN, SET(in_dtype)},
	{"--draw-missing", NULL, C_RUN, SET(draw_missing)},
	{"--seed", "S", C_RUN | C_VERIFY, flag_seed, 0},
	{"--precision", "f64|kernel", C_VERIFY, flag_precision, 0},
	{"--plant", "KIND", C_VERIFY, flag_plant, 0},
	{"--format", "text|json|dot", C_REPORT, flag_format, 0},
	{"--dot-ops", "all|none|N,M", C_REPORT, SET(dot_ops)},
	{"--explain", "NAME", C_REPORT, SET(explain)},
	{"--diff", "OTHER", C_REPORT, SET(diff)},
	{"--measured", "FILE", C_REPORT, SET(measured)},
	{"--group", "N", C_EXTRACT, flag_group, 0},
	{"-o", "OUT", C_COMPILE | C_TORCH, SET(out)},
	{"--build", NULL, C_COMPILE, SET(build)},
	{"--lib", NULL, C_COMPILE, SET(lib)},
	{"--arch", "SM", C_COMPILE, SET(arch)},
	{"--gemm", "WHO", C_COMPILE | C_REPORT, flag_gemm, 0},
	{"--tf32", NULL, C_COMPILE | C_REPORT, SET(fuse.tf32)},
	{"--accurate-math", NULL, C_COMPILE, SET(fuse.accurate_math)},
	{"--no-pdl", NULL, C_COMPILE, SET(fuse.no_pdl)},
	{"--no-fuse", NULL, C_PLAN, SET(fuse.no_fuse)},
	{"--bw", "GBS", C_PLAN, flag_bw, 0},
	{"--tc-tflops", "R", C_PLAN, flag_tc_tflops, 0},
	{"--cc-tflops", "R", C_PLAN, flag_cc_tflops, 0},
	{"--launch-us", "US", C_PLAN, flag_launch_us, 0},
	{"--reg-limit", "N", C_PLAN, flag_reg_limit, 0},
};
#undef SET
#define NFLAGS ((int)(sizeof flags / sizeof flags[0]))

/* A command's arguments that it cannot run without, with its flags. */
static const struct {
	unsigned cmd;
	const char *flag;
} required[] = {
	{C_RUN, "--outputs"},
	{C_EXTRACT, "--group"},
	{C_COMPILE, "-o"},
};

static int flag_index(const char *name)
{
	for (int i = 0; i < NFLAGS; i++)
		if (strcmp(flags[i].name, name) == 0)
			return i;
	return -1;
}

static int parse_args(FgArena *a, int argc, char **argv, Options *o)
{
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i], *v = NULL;
		int f = flag_index(arg);
		if (f < 0 && (strncmp(arg, "-D", 2) == 0 || strncmp(arg, "-d", 2) == 0) && arg[2]) {
			f = arg[1] == 'D' ? flag_index("-D") : flag_index("-d");
			v = arg + 2;
		} else if (f >= 0 && flags[f].value) {
			if (i + 1 >= argc)
				return usage_error("%s needs a value", arg);
			v = argv[++i];
			if (!*v)        /* -o '': no name to write, read or make */
				return usage_error("%s needs a value, got ''", arg);
		} else if (f < 0 && arg[0] == '-' && arg[1]) {
			return usage_error("unknown option '%s'", arg);
		} else if (f < 0 && !o->command) {
			o->command = arg;
			continue;
		} else if (f < 0 && !o->file) {
			o->file = arg;
			continue;
		} else if (f < 0) {
			return usage_error("unexpected argument '%s': fgc takes one .fg file", arg);
		}
		o->given |= 1u << f;
		char *field = (char *)o + flags[f].field;
		if (!flags[f].apply && v)
			*(const char **)field = v;
		else if (!flags[f].apply)
			*(int *)field = 1;
		else if (flags[f].apply(a, o, v) != 0)
			return 1;
	}
	return 0;
}

/* "'report' and 'compile'": the commands of mask cmds joined by `and`,
 * for a message. */
static const char *command_list(FgArena *a, unsigned cmds, const char *and)
{
	const char *s = "";
	int n = 0, total = 0;

	for (int c = 0; c < NCOMMANDS; c++)
		total += cmds >> c & 1;
	for (int c = 0; c < NCOMMANDS; c++) {
		if (!(cmds >> c & 1))
			continue;
		const char *sep = n == 0 ? "" : n == total - 1 ? and : ", ";
		s = fg_arena_printf(a, "%s%s'%s'", s, sep, commands[c].name);
		n++;
	}
	return s;
}

/* Every flag given belongs to command c, and what c needs is given. */
static int check_flags(FgArena *a, const Options *o, int c)
{
	for (int f = 0; f < NFLAGS; f++)
		if ((o->given >> f & 1) && !(flags[f].cmds >> c & 1)) {
			const char *msg = fg_arena_printf(a, "%s belongs to %s, not '%%s'", flags[f].name,
							  command_list(a, flags[f].cmds, " and "));
			return usage_error(msg, commands[c].name);
		}
	for (size_t r = 0; r < sizeof required / sizeof required[0]; r++) {
		int f = flag_index(required[r].flag);
		if ((required[r].cmd >> c & 1) && !(o->given >> f & 1)) {
			const char *msg = fg_arena_printf(a, "'%%s' needs %s %s", flags[f].name, flags[f].value);
			return usage_error(msg, commands[c].name);
		}
	}
	return 0;
}

/* ------------------------------------------------------------ pipeline */

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

/* Whether flag f changes what the report says of a plan: a planning flag,
 * or one of compile's choices that the report follows (--tf32, --gemm). */
static int plans(int f)
{
	return flags[f].cmds == C_PLAN || flags[f].cmds == (C_COMPILE | C_REPORT);
}

/* What a plan is: its file and the planning flags given, with their
 * values (as o holds them). */
static const char *plan_label(FgArena *a, const Options *o, const char *file)
{
	const FgFuseOptions *u = &o->fuse;
	const char *s = file;
	for (int f = 0; f < NFLAGS; f++) {
		const char *n = flags[f].name;
		if (!(o->given >> f & 1) || !plans(f))
			continue;
		double v = !strcmp(n, "--bw") ? u->bw_gbs : !strcmp(n, "--tc-tflops") ? u->tc_tflops
			: !strcmp(n, "--cc-tflops") ? u->cc_tflops : !strcmp(n, "--launch-us") ? u->launch_us
			: !strcmp(n, "--reg-limit") ? u->reg_limit : 0;
		s = !flags[f].value ? fg_arena_printf(a, "%s %s", s, n)
		  : !strcmp(n, "--gemm") ? fg_arena_printf(a, "%s %s %s", s, n, gemm_who[o->gemm])
		  : fg_arena_printf(a, "%s %s %g", s, n, v);
	}
	return s;
}

static int diff_plan(const Options *o, const FgGraph *g, FgPlan *b, const char **la, const char **lb, FgDiag *d)
{
	FgArena *a = g->arena;
	Options ob = *o;
	const FgGraph *gb = g;

	ob.given = 0;
	if (o->diff[0] == '-') {        /* this graph, other flags */
		FG_VEC(char *) argv = {0};
		char *copy = fg_arena_printf(a, "%s", o->diff);
		fg_vec_push(a, &argv, "fgc");
		for (char *t = strtok(copy, " \t"); t; t = strtok(NULL, " \t"))
			fg_vec_push(a, &argv, t);
		/* only planning flags, each with its value */
		for (int i = 1; i < argv.n; i++) {
			int f = flag_index(argv.v[i]);
			const char *why = f < 0 && argv.v[i][0] == '-' ? "is no option of fgc"
				: f < 0 ? "is not a flag"
				: !plans(f) ? "does not change the plan"
				: flags[f].value && i + 1 == argv.n ? "needs a value" : NULL;
			if (why) {
				fg_error(d, (FgLoc){0, 0}, "--diff \"%s\": '%s' %s (give planning flags: --no-fuse, "
					 "--reg-limit N, --bw GBS, --launch-us US, --tc-tflops R, --cc-tflops R, --tf32, "
					 "--gemm WHO)",
					 o->diff, argv.v[i], why);
				return 1;
			}
			i += flags[f].value != NULL;
		}
		if (parse_args(a, argv.n, argv.v, &ob) != 0)
			return 1;
		*la = plan_label(a, o, o->file);
		*lb = fg_arena_printf(a, "%s, then %s", *la, o->diff);
	} else {                        /* another graph, the same flags */
		FgSource *src = fg_arena_array(a, 1, sizeof *src);
		FgGraph *g2 = fg_arena_array(a, 1, sizeof *g2);
		ob.file = o->diff;
		ob.dumps.n = 0;
		if (front_end(a, &ob, d, src, g2, NPASSES) != 0)
			return 1;
		gb = g2;
		ob.fuse = o->fuse;
		*la = plan_label(a, o, o->file);
		*lb = plan_label(a, o, o->diff);
	}
	if (fg_pass_fuse(gb, &ob.fuse, b, d) != 0)
		return 1;
	fg_pass_memplan(b);
	fg_cuda_plan_costs(b, ob.gemm);
	return 0;
}

int main(int argc, char **argv)
{
	FgArena arena;
	Options o;
	FgSource src;
	FgGraph g;
	FgPlan plan;
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
	o.gemm = FG_GEMM_AUTO;
	fg_fuse_defaults(&o.fuse);
	if (parse_args(&arena, argc, argv, &o) != 0)
		goto out;
	if (!o.command) {
		fputs(usage, stderr);
		goto out;
	}
	int c = -1;
	for (int i = 0; i < NCOMMANDS; i++)
		if (strcmp(o.command, commands[i].name) == 0)
			c = i;
	if (c < 0) {
		usage_error(fg_arena_printf(&arena, "unknown command '%%s'; expected %s", command_list(&arena, C_ALL, " or ")),
			    o.command);
		goto out;
	}
	if (!o.file) {
		usage_error("'%s' needs a .fg file", o.command);
		goto out;
	}
	if (check_flags(&arena, &o, c) != 0)
		goto out;
	const Command *cmd = &commands[c];
	if (front_end(&arena, &o, &d, &src, &g, cmd->expanded ? NPASSES : 0) != 0)
		goto out;
	int planned = cmd->planned == 1 || (cmd->planned == 2 && g.nfuse > 0);
	if (planned) {
		/* the attention kernel is sm_90a code (wgmma, TMA, setmaxnreg) */
		o.fuse.no_attention = o.arch && strcmp(o.arch, "sm_90a") != 0;
		/* programmatic dependent launch (griddepcontrol) is sm_90's */
		if (o.arch && strncmp(o.arch, "sm_", 3) == 0 && atoi(o.arch + 3) < 90)
			o.fuse.no_pdl = 1;
		if (fg_pass_fuse(&g, &o.fuse, &plan, &d) != 0)
			goto out;
		fg_pass_memplan(&plan);
	}
	status = cmd->run(&o, &g, planned ? &plan : NULL, &d);
out:
	fflush(stdout);
	fg_arena_free(&arena);
	return status;
}
