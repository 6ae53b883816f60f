/*
 * kinds.c - what one group kind's kernel can hold.  The partitioner
 * (passes/fuse.c) asks while it builds groups and the CUDA emitters
 * (compiler/cuda/) ask while they write them, so a group the partitioner
 * forms is a kernel the emitter can write, with no copy of a rule kept in
 * step by comments:
 *
 *   - whether a value's shape fits a group's space (broadcasts into it);
 *   - where a reduction group writes a value: once per row (or column) at
 *     its first reduction's result, or over the space it reduces;
 *   - the register model: an estimate of a thread's registers, and the
 *     limit from the plan's options (--reg-limit), which decides both
 *     where the partitioner cuts and how many elements a kernel gives a
 *     thread.
 */
#include "fg.h"

int fg_kind_fits(const FgShape *s, const FgShape *space)
{
	FgShape r;

	return fg_shape_broadcast(s, space, &r) == 0 && fg_shape_eq(&r, space);
}

FgPlace fg_kind_write_place(const FgGraph *g, int r, int w, int dep)
{
	const FgShape *ws = &g->nodes[w].shape, *S = &g->nodes[g->nodes[r].in[0]].shape;
	int fr = fg_kind_fits(ws, &g->nodes[r].shape), fs = fg_kind_fits(ws, S);

	if (fr && (dep || !fs))
		return FG_PLACE_ROWS;
	if (fs && (!dep || fg_shape_numel(ws) == fg_shape_numel(S)))
		return FG_PLACE_SPACE;
	return FG_PLACE_NONE;
}

int fg_kind_regs(int reads, int live)
{
	return FG_REGS_BASE + FG_REGS_PER_READ * (reads < FG_REGS_READS_MAX ? reads : FG_REGS_READS_MAX) +
	       FG_REGS_ELEMS * live;
}

int fg_kind_regs_merged(int a, int b)
{
	return a + b - FG_REGS_BASE;
}

int fg_kind_regs_at(const FgGroup *gr, int elems)
{
	return FG_REGS_BASE + (gr->est_regs - FG_REGS_BASE) * elems / FG_REGS_ELEMS;
}

int fg_kind_regs_fit(const FgFuseOptions *o, int regs)
{
	return regs <= o->reg_limit;
}
