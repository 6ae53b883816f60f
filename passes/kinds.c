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
 *     thread;
 *   - how a scan's kernel walks its rows, and so how many launches it
 *     takes and how often it reads its inputs;
 *   - what an op computes, in FLOPs, for the cost model's compute time.
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

void fg_kind_flops(const FgGraph *g, int id, const FgFuseOptions *o, double *tc, double *cc)
{
	const FgNode *n = &g->nodes[id];
	double out = (double)fg_shape_numel(&n->shape);

	switch (fg_op_info[n->op].cls) {
	case FG_CLASS_MATMUL: {
		const FgShape *a = &g->nodes[n->in[0]].shape;
		FgDtype t = g->nodes[n->in[0]].dt;
		double f = 2.0 * out * (double)a->d[a->rank - 1];
		if (t == FG_DT_F16 || t == FG_DT_BF16 || (t == FG_DT_F32 && o->tf32))
			*tc += f;
		else
			*cc += f;
		break;
	}
	case FG_CLASS_EW:
		if (n->op != FG_OP_IOTA)
			*cc += out;
		break;
	case FG_CLASS_SCAN:
		*cc += out;
		break;
	case FG_CLASS_REDUCE:
	case FG_CLASS_SELECT:
		*cc += (double)fg_shape_numel(&g->nodes[n->in[0]].shape);
		break;
	default:
		break;
	}
}

/* A block of up to FG_SCAN_THREADS threads, enough for the row at
 * FG_SCAN_ITEMS elements a thread (fewer for a short row).  Rows too few
 * to give each multiprocessor FG_SCAN_BLOCKS_PER_SM blocks are cut into
 * parts of whole tiles, at least FG_SCAN_PART_TILES each, so that the
 * blocks fill the GPU. */
void fg_kind_scan_shape(const FgShape *s, int axis, FgScanShape *out)
{
	int64_t L = s->d[axis], n = fg_shape_numel(s);

	out->len = L;
	out->rows = L ? n / L : 0;
	out->threads = 32;
	out->items = FG_SCAN_ITEMS;
	while (out->threads < FG_SCAN_THREADS && (int64_t)out->threads * out->items < L)
		out->threads *= 2;
	while (out->items > 1 && (int64_t)out->threads * (out->items / 2) >= L)
		out->items /= 2;
	int64_t tile = (int64_t)out->threads * out->items, want = (int64_t)FG_SMS * FG_SCAN_BLOCKS_PER_SM;
	out->parts = 1;
	out->part_len = L;
	if (out->rows > 0 && out->rows < want) {
		int64_t parts = (want + out->rows - 1) / out->rows, most = L / (tile * FG_SCAN_PART_TILES);
		parts = parts < most ? parts : most;
		if (parts >= 2) {
			int64_t tiles = (L + tile - 1) / tile;
			out->part_len = (tiles + parts - 1) / parts * tile;
			out->parts = (L + out->part_len - 1) / out->part_len;
		}
	}
}
