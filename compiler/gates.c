/*
 * gates.c - which of testing.md's gates judges each value: the facts the
 * plan verifier, a binary's --check (through the program's tensor table)
 * and emit-torch's RESULTS all take from here, so that a value is held to
 * one standard whoever compares it.
 *
 * A value gets the RMSE gate (FGRT_GATE_RMSE) when a reduction, a scan or
 * a matmul feeds it (their summation order legitimately differs from the
 * reference's), or a float value that is stored and read back (rounded
 * once more than the reference: in f16, gelu(x + b) unfused is 2 ulp from
 * the reference where one fused kernel is within 1); TF32 as well when an
 * f32 matmul done in tf32 feeds it.  Everything else is compared element
 * by element, and TRANSC, set when a transcendental op (FG_OPS' column)
 * feeds the value, gives f32 the rtol 1e-5 where correctly rounded
 * arithmetic gets 1.3e-6.  "Feeds" is any path through the graph, so the
 * bits flow forward in one pass over the nodes, which are in topological
 * order.
 */
#include "fg.h"
#include "fgrt.h"

void fg_gates(const FgGraph *g, const unsigned char *read_back, int tf32, unsigned char *gate)
{
	for (int id = 0; id < g->nnodes; id++) {
		const FgNode *n = &g->nodes[id];
		FgOpClass c = fg_op_info[n->op].cls;
		unsigned v = 0;
		if (c == FG_CLASS_REDUCE || c == FG_CLASS_SCAN || c == FG_CLASS_MATMUL)
			v |= FGRT_GATE_RMSE;
		if (c == FG_CLASS_MATMUL && tf32 && g->nodes[n->in[0]].dt == FG_DT_F32)
			v |= FGRT_GATE_TF32;
		if (fg_op_info[n->op].transcendental)
			v |= FGRT_GATE_TRANSC;
		for (int k = 0; k < n->nin; k++) {
			v |= gate[n->in[k]];
			if (read_back && read_back[n->in[k]])
				v |= FGRT_GATE_RMSE;
		}
		gate[id] = (unsigned char)v;
	}
}
