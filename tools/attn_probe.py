#!/usr/bin/env python3
"""attn_probe.py - where an attention launch's time goes, block by block.

    tools/attn_probe.py build X.cu -o BIN    (here: nvcc, no GPU needed)
    tools/attn_probe.py runtime DIR          (the probed runtime alone:
                                              tests/run-cuda-compile.sh)
    FGA_PROBE=FILE BIN --bench 3 --no-graph  (on the GPU: FILE holds the
                                              last eager launch's records)
    tools/attn_probe.py read FILE            (the summary)

`build` compiles a generated .cu (one attention launch of fewer than 8,192
blocks) against a copy of runtime/ whose fga::attention records, for each
consumer warpgroup (its first warp's lane 0), its multiprocessor, its
%globaltimer at the block's start and end, and its clock64 at the start,
when q's tile is in, when the first S = Q K^T is done, when the last O +=
P V is done, and at the end; the launcher copies the records back after
each eager launch and writes them to $FGA_PROBE (none under a graph's
capture).  The probes are register reads and one store a consumer, in
the main loop none: docs/performance.md v32 timed the probed kernel
within 0.2% of the plain one.  A persistent launch's consumers record
their first unit's start and their last unit's end.

`read` prints the medians of each phase in cycles and microseconds, the
gaps between one block's end and the next one's start on a
multiprocessor, and the share of the blocks' time spent before the first
S and after the last O += P V, when the tensor cores wait on a block's
start and end.
"""
import argparse
import collections
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NVCC = os.environ.get("NVCC", "/usr/local/cuda/bin/nvcc")
MAX = 16384     # consumer records

# The probes: (anchor in runtime/fg_attn_sm90.cuh, text put before it,
# text put after it); each anchor must occur once.
PATCHES = [
    # the records, before the kernel
    ("template <class T, int D, int NC, int BN_, bool SPLIT, bool PERSIST, int SE, class Score, class Inner, class Tiles,\n",
     "constexpr int PROBE_MAX = %d;\n__device__ unsigned long long probe_buf[PROBE_MAX * 8];\n\n" % MAX, ""),
    # the start
    ("\textern __shared__ uint8_t fg_smem[];\n", "",
     "\tunsigned long long pg0, pc0, pcq = 0, pcs = 0, pcl = 0;\n"
     "\tasm volatile(\"mov.u64 %0, %%globaltimer;\" : \"=l\"(pg0));\n"
     "\tpc0 = clock64();\n"),
    # q in, the first unit's
    ("\t\t\tbar_wait(&qfull[PERSIST ? c : 0], i & 1);\n", "", "\t\t\tif (i == 0)\n\t\t\t\tpcq = clock64();\n"),
    # the first S done, the first unit's
    ("\t\t\t\tsoft(sc, n * BN, nullptr);\n", "\t\t\t\tif (i == 0)\n\t\t\t\t\tpcs = clock64();\n", ""),
    # the last O += P V done, the last unit's
    ("\t\t/* O / l to the epilogue", "\t\tpcl = clock64();\n", ""),
    # the end: the consumer's record
    ("#else\n\t__trap();       /* built for another target: the launcher refuses first */\n",
     "\tif (l == 0 && w == 0 && blockIdx.x * NC + c < PROBE_MAX) {\n"
     "\t\tunsigned long long pge, pce = clock64();\n\t\tunsigned smid;\n"
     "\t\tasm volatile(\"mov.u64 %0, %%globaltimer;\" : \"=l\"(pge));\n"
     "\t\tasm volatile(\"mov.u32 %0, %%smid;\" : \"=r\"(smid));\n"
     "\t\tunsigned long long *pb = probe_buf + (blockIdx.x * NC + c) * 8;\n"
     "\t\tpb[0] = smid, pb[1] = pg0, pb[2] = pge, pb[3] = pc0, pb[4] = pcq, pb[5] = pcs, pb[6] = pcl, pb[7] = pce;\n"
     "\t}\n", ""),
    # the launcher: the records to $FGA_PROBE after an eager launch
    ("inner, masked, out, rows, probs, psave, part,\n\t\t\t\t\t\t\t\t     (int)units, ord);\n", "",
     "\tcudaStreamCaptureStatus cs;\n"
     "\tif (getenv(\"FGA_PROBE\") && cudaStreamIsCapturing(ctx->stream, &cs) == cudaSuccess &&\n"
     "\t    cs == cudaStreamCaptureStatusNone) {\n"
     "\t\tstatic unsigned long long hb[PROBE_MAX * 8];\n"
     "\t\tfgrt_cuda(cudaStreamSynchronize(ctx->stream), \"probe\");\n"
     "\t\tfgrt_cuda(cudaMemcpyFromSymbol(hb, probe_buf, sizeof hb), \"probe\");\n"
     "\t\tFILE *f = fopen(getenv(\"FGA_PROBE\"), \"w\");\n"
     "\t\tfor (int64_t i = 0; f && i < grid * NC && i < PROBE_MAX; i++)\n"
     "\t\t\tfprintf(f, \"%lld %lld %llu %llu %llu %llu %llu %llu %llu %llu\\n\", (long long)(i / NC),\n"
     "\t\t\t\t(long long)(i % NC), hb[8 * i], hb[8 * i + 1], hb[8 * i + 2], hb[8 * i + 3], hb[8 * i + 4],\n"
     "\t\t\t\thb[8 * i + 5], hb[8 * i + 6], hb[8 * i + 7]);\n"
     "\t\tif (f)\n\t\t\tfclose(f);\n"
     "\t}\n"),
]


def patched_runtime(dst):
    """A copy of runtime/ under dst with the probes in fg_attn_sm90.cuh."""
    shutil.copytree(os.path.join(ROOT, "runtime"), dst)
    path = os.path.join(dst, "fg_attn_sm90.cuh")
    s = open(path).read()
    for anchor, before, after in PATCHES:
        if s.count(anchor) != 1:
            sys.exit("attn_probe.py: runtime/fg_attn_sm90.cuh has changed (%d of %r): update PATCHES"
                     % (s.count(anchor), anchor[:60]))
        s = s.replace(anchor, before + anchor + after)
    open(path, "w").write(s)


def build(cu, out):
    with tempfile.TemporaryDirectory() as tmp:
        rt = os.path.join(tmp, "runtime")
        patched_runtime(rt)
        srcs = [os.path.join(ROOT, "runtime", f) for f in ("fgrt_lib.cu", "fgrt_main.cu", "npy.c", "half.c", "check.c")]
        cmd = [NVCC, "-O3", "-gencode=arch=compute_90a,code=sm_90a", "-I" + rt, cu] + srcs + ["-lcublasLt", "-o", out]
        if subprocess.run(cmd).returncode != 0:
            sys.exit("attn_probe.py: nvcc failed")


def read(path):
    rows = [list(map(int, ln.split())) for ln in open(path) if ln.strip()]
    if not rows:
        sys.exit("attn_probe.py: %s has no records" % path)
    blocks = collections.defaultdict(list)
    for b, _c, sm, g0, ge, c0, cq, cs, cl, ce in rows:
        blocks[b].append((sm, g0, ge, c0, cq, cs, cl, ce))
    span = max(r[4] for r in rows) - min(r[3] for r in rows)
    ghz = statistics.median((r[9] - r[5]) / (r[4] - r[3]) for r in rows if r[4] > r[3])
    print("%s: %d blocks, %d consumers, launch %.1f us, SM clock %.2f GHz" % (path, len(blocks), len(rows), span / 1e3, ghz))
    for name, xs in (("start to q in", [r[6] - r[5] for r in rows]),
                     ("start to the first S", [r[7] - r[5] for r in rows]),
                     ("first S to the last P V", [r[8] - r[7] for r in rows]),
                     ("last P V to the end", [r[9] - r[8] for r in rows]),
                     ("a consumer's whole", [r[9] - r[5] for r in rows])):
        xs = sorted(xs)
        m = statistics.median(xs)
        print("  %-24s median %8.0f cycles (%.2f us), p10 %8.0f, p90 %8.0f"
              % (name, m, m / ghz / 1e3, xs[len(xs) // 10], xs[9 * len(xs) // 10]))
    persm = collections.defaultdict(list)
    for cons in blocks.values():
        persm[cons[0][0]].append((min(x[3] for x in cons), max(x[7] for x in cons), min(x[5] for x in cons),
                                  max(x[6] for x in cons)))
    gaps, busy, head, tail = [], 0, 0, 0
    for bl in persm.values():
        bl.sort()
        for i, (st, en, first_s, last_pv) in enumerate(bl):
            busy, head, tail = busy + en - st, head + first_s - st, tail + en - last_pv
            if i:
                gaps.append(st - bl[i - 1][1])
    whole = sum(max(x[1] for x in bl) - min(x[0] for x in bl) for bl in persm.values())
    print("  %d multiprocessors, %.2f blocks each; a block's end to the next one's start: median %.0f cycles (%.2f us)"
          % (len(persm), len(blocks) / len(persm), statistics.median(gaps) if gaps else 0,
             (statistics.median(gaps) if gaps else 0) / ghz / 1e3))
    print("  of the multiprocessors' time: blocks %.1f%%, between blocks %.1f%%; of the blocks' time: before the "
          "first S %.1f%%, after the last P V %.1f%%" % (100 * busy / whole, 100 * sum(gaps) / whole,
                                                        100 * head / busy, 100 * tail / busy))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("cu")
    b.add_argument("-o", required=True)
    r = sub.add_parser("read")
    r.add_argument("file")
    d = sub.add_parser("runtime")
    d.add_argument("dir")
    a = p.parse_args()
    if a.cmd == "build":
        build(a.cu, a.o)
    elif a.cmd == "runtime":
        patched_runtime(a.dir)
    else:
        read(a.file)


if __name__ == "__main__":
    main()
