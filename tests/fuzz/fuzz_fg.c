/*
 * fuzz_fg.c - libFuzzer target for the front end and the passes: parse,
 * build the IR, expand composites, partition, plan memory and write every
 * report format, on arbitrary bytes.  Any crash, hang, leak or sanitizer
 * report is a bug; diagnostics are expected and go to /dev/null.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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
	FgSource src;
	FgDiag diag;
	FgProgram prog;
	FgGraph g;
	FgPlan plan;
	FgFuseOptions opt;

	fg_arena_init(&arena);
	char *text = fg_arena_alloc(&arena, size + 1);
	memcpy(text, data, size);
	src.name = "fuzz.fg";
	src.text = text;
	src.len = size;
	memset(&diag, 0, sizeof diag);
	diag.src = &src;
	diag.out = sink();
	if (fg_parse(&arena, &diag, &src, &prog) == 0 && fg_ir_build(&arena, &diag, &prog, NULL, 0, &g) == 0) {
		fg_pass_expand(&g);
		fg_pass_cse(&g);
		fg_fuse_defaults(&opt);
		for (opt.no_fuse = 0; opt.no_fuse < 2; opt.no_fuse++) {
			if (fg_pass_fuse(&g, &opt, &plan, &diag) != 0)
				continue;
			fg_pass_memplan(&plan);
			fg_report_text(sink(), &plan);
			fg_report_json(sink(), &plan);
			fg_report_dot(sink(), &plan);
			fg_ir_print(sink(), &g);
		}
	}
	fg_arena_free(&arena);
	return 0;
}
