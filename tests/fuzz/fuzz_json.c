/*
 * fuzz_json.c - libFuzzer target for `fgc report --measured`: the bytes
 * become an in-memory file (memfd) read as a binary's --bench-json timings
 * of a small softmax graph named as the sample is (so the committed
 * timings of tests/measured are seeds it accepts): compiler/json.c's reader,
 * then the checks against the plan, then the text and JSON reports with
 * whatever was accepted.  Diagnostics are expected and go to /dev/null.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char graph[] =
	"graph softmax_f16 {\n"
	"  input x : f16[32768, 4096]\n"
	"  y = softmax(x)\n"
	"  output y\n"
	"}\n";

static FILE *sink(void)
{
	static FILE *null;

	if (!null)
		null = fopen("/dev/null", "w");
	return null;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	FgArena arena;
	FgSource src = {"softmax_f16.fg", graph, sizeof graph - 1};
	FgDiag diag;
	FgProgram prog;
	FgGraph g;
	FgPlan plan;
	FgFuseOptions opt;
	char path[64];
	int fd = memfd_create("fuzz.json", 0);

	if (fd < 0 || write(fd, data, size) != (ssize_t)size) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	fg_arena_init(&arena);
	memset(&diag, 0, sizeof diag);
	diag.src = &src;
	diag.out = sink();
	if (fg_parse(&arena, &diag, &src, &prog) != 0 || fg_ir_build(&arena, &diag, &prog, NULL, 0, &g) != 0)
		abort();        /* the graph above is valid */
	fg_pass_expand(&g);
	fg_pass_cse(&g);
	fg_fuse_defaults(&opt);
	if (fg_pass_fuse(&g, &opt, &plan, &diag) != 0)
		abort();
	fg_pass_memplan(&plan);
	fg_cuda_plan_costs(&plan, FG_GEMM_AUTO);
	if (fg_report_measured(&plan, path, &diag) == 0) {
		fg_report_text(sink(), &plan);
		fg_report_json(sink(), &plan);
	}
	fg_arena_free(&arena);
	close(fd);
	return 0;
}
