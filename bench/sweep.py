#!/usr/bin/env python3
"""
sweep.py - issue 20's shape sweep: softmax, layernorm, rmsnorm and a
bias+GELU over rows x columns, in f16, bf16 and f32, fgc against eager
PyTorch, torch.compile in its default mode and in mode="reduce-overhead"
(which replays CUDA graphs, as fgc's binary does) and the memory floor,
with bench/peers.py's harness: one process, the same tensors, the same
CUDA events, cold and sustained, the SM clock read.

    python3 bench/sweep.py [--fgc build/fgc] [--out out/sweep] [--ops softmax,...]
                           [--dtypes f16,...] [--rows 1,8,...] [--cols 128,...]
                           [--resume] [--report] [--build-only] [--jobs N] [--warm N]
                           [peers.py's timing options]

Each cell is a graph of OPS at R rows of C columns (written to WORK/graphs/,
the sizes given as -D), built as a library by `fgc compile --lib` (--jobs at
a time, every cell before the first timing) and run as peers.py runs a
sample: the four checked against the f64 reference under testing.md's
gates, then timed; cells whose floor is under REPLAY_FLOOR_MS also as
CUDA-graph replays (peers.captured: the replayed regime, the kernels
without the host's share of a call).  A cell whose tensors would pass
2^31 elements is left out (32768 x 131072: its f64 reference alone is 34
GB).

Before the first timing, --warm processes (default: half the CPUs) compile
every cell's torch.compile peers, both modes, once each: Inductor keeps what
it compiles and the kernels' tuned configs on disk (its FX graph and Triton
caches), so the timing process's own compilations find them there (0.1 s a
mode on the H200, where they took most of a cell's 4 s).  The warm
processes run before any timing, never beside it; a cell they could not
compile is compiled by the timing process as before.

Each row goes to OUT/sweep.json as it comes; --resume keeps the rows
already there (but failed ones: an error, a check not passed, a cell
that did not fit the card) and runs only the others, so a sweep can span several
device calls; a cell's library, built in WORK, is kept for them, and
--build-only builds them alone, without a GPU, to be carried to one
(all 348 took 26 minutes on 2 CPUs; xz packs them into 10 MB).  The
whole grid, 4 ops x 3 dtypes x 29 cells, took 15.8 minutes on the H200 in
two calls (16 CPUs: libraries 3 minutes, the warm processes 1 minute,
then about 1.5 s a cell).  At the end, or alone
with --report, OUT/sweep.md (per op and dtype, a rows x columns table of
fgc's speedup over the faster torch.compile mode and its % of the floor,
sustained then cold) and OUT/sweep.png (the sustained speedups as heat
maps, when matplotlib is there) are written from the JSON.
"""
import argparse
import collections
import concurrent.futures
import math
import multiprocessing
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers  # noqa: E402  (the harness: checks, timing, floors)

ROOT = peers.ROOT
log = peers.log

# op: (its parameters, each of shape [C], and its statement)
OPS = {
    "softmax": ([], "y = softmax(x)"),
    "layernorm": (["g", "b"], "y = layernorm(x, g, b)"),
    "rmsnorm": (["g"], "y = rmsnorm(x, g)"),
    "bias_gelu": (["b"], "y = gelu(x + b)"),
}
DTYPES = ["f16", "bf16", "f32"]
ROWS = [1, 8, 64, 512, 4096, 32768]
COLS = [128, 1024, 4096, 32768, 131072]
MAX_ELEMENTS = 1 << 31
# Cells whose floor is under this (ms) are also replayed (peers.captured):
# their calls take a few to tens of microseconds, of which the host's
# share, Python's and the launch's, is as large as the kernel's (v18: the
# 64-row cells "follow the call more than the kernel"); a graph's replay
# times the kernels alone
REPLAY_FLOOR_MS = 0.05


def graph(op, dt, work):
    """The .fg of op in dtype dt (sizes R and C, given as -D), its path."""
    params, stmt = OPS[op]
    lines = ["# %s in %s: bench/sweep.py's cell, sizes given as -D R=.. -D C=.." % (op, dt),
             "graph sweep_%s_%s {" % (op, dt), "  input x : %s[R=1, C=128]" % dt]
    lines += ["  param %s : %s[C]" % (p, dt) for p in params]
    lines += ["", "  " + stmt, "  output y", "}", ""]
    path = os.path.join(work, "graphs", "%s_%s.fg" % (op, dt))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    text = "\n".join(lines)
    if os.path.exists(path):
        with open(path) as f:
            if f.read() == text:        # unchanged: its libraries stay built
                return path
    with open(path, "w") as f:
        f.write(text)
    return path


def cells(args):
    """Every (op, dtype, rows, cols) of the grid the options select."""
    return [(op, dt, r, c) for op in args.ops for dt in args.dtypes for r in args.rows for c in args.cols
            if r * c <= MAX_ELEMENTS]


def cell_label(cell):
    """'softmax f16 8 x 4096' for (op, dtype, rows, cols)."""
    return "%s %s %d x %d" % tuple(cell)


def cell_names(todo, args):
    """peers.py's case for each cell: its graph's path (each graph written
    once) with its sizes."""
    paths = {(op, dt): graph(op, dt, args.work) for op, dt, _, _ in todo}
    return {cell: "%s:R=%d,C=%d" % (paths[cell[:2]], cell[2], cell[3]) for cell in todo}


# ------------------------------------------------------------------- warm

def warm_init():
    """A warm process compiles with one thread: the processes are the
    parallelism."""
    import torch._inductor.config as inductor
    inductor.compile_threads = 1


def warm_cell(name, args):
    """Compiles cell `name`'s torch.compile peers (the default mode and
    reduce-overhead) on its inputs, as bench_sample will, filling Inductor's
    on-disk caches; the seconds it took, or the error."""
    t0 = time.time()
    try:
        # the module where bench_sample writes it: the same source path,
        # which the compiled graph's stack traces carry
        work = os.path.join(args.work, peers.case(name, args)[2])
        os.makedirs(work, exist_ok=True)
        mod = peers.emit(name, args, work)
        inputs = list(mod.make_inputs(args.seed, args.device).values())
        for mode in (None, args.compile_ro):
            torch.compile(mod.forward, mode=mode)(*inputs)
            peers.free_device_memory(args.device)
        del inputs
        peers.cached_blocks_back(args.device)
        return time.time() - t0
    except Exception as e:  # the timing process compiles it then
        return "%s: %s" % (name, peers.first_line(e))


def warm(names, args):
    """warm_cell of every name, args.warm processes at a time."""
    t0, ok, failed = time.time(), 0, []
    context = multiprocessing.get_context("spawn")   # CUDA does not survive a fork
    with concurrent.futures.ProcessPoolExecutor(args.warm, mp_context=context, initializer=warm_init) as pool:
        for got in pool.map(warm_cell, names, [args] * len(names)):
            if isinstance(got, str):
                failed.append(got)
            else:
                ok += 1
    log("warmed torch.compile's caches for %d of %d cells in %.0f s%s" %
        (ok, len(names), time.time() - t0, "".join("\n  not warmed: " + f for f in failed)))


# ----------------------------------------------------------------- report

def best_compile(row, regime):
    """The faster torch.compile mode's time in a regime, or None."""
    t = [row[k] for k in ("%s_compile_ms" % regime, "%s_compile_ro_ms" % regime) if k in row]
    return min(t) if t else None


def speedup(row, regime, peer=best_compile):
    c, f = peer(row, regime), row.get("%s_fgc_ms" % regime)
    return c / f if c and f else None


def eager(row, regime):
    return row.get("%s_eager_ms" % regime)


CHECKS = ("eager_check", "compile_check", "compile_ro_check", "fgc_check")


def failed(row):
    """Whether a cell's row failed: an error, or a competitor's result that
    did not pass its check (--resume runs such a cell again)."""
    return "error" in row or any(row.get(k, "ok") != "ok" for k in CHECKS)


def cell_text(row, regime):
    """'1.23x (0.91x) 87%': fgc's speedup over the faster torch.compile mode
    and over eager, and its % of the floor (or 'launch' where the floor is
    under one launch); replayed, ', copy 95%' adds its % of a plain
    kernel's time over the same bytes (peers.same_size_copy); a failed
    check is named, and a cell whose tensors did not fit the card's
    memory (a competitor's or the f64 reference's) says so."""
    if row is None:
        return ""
    bad = [k for k in CHECKS if k in row and row[k] != "ok"]
    err = row.get("error", "")
    if any("out of memory" in t or "cannot allocate the arena" in t for t in [err] + [row[k] for k in bad]):
        return "does not fit this card's memory"
    if "error" in row or bad:
        return "error: " + (err or ", ".join("%s %s" % (k[:-6], row[k]) for k in bad))[:60]
    if regime == "replayed" and "replayed_fgc_ms" not in row:
        err = row.get("fgc_replayed_error")
        return ("fgc not captured: " + err)[:60] if err else ""
    s, e = speedup(row, regime), speedup(row, regime, eager)
    pct, copy = row.get("%s_fgc_pct_of_floor" % regime), row.get("%s_fgc_pct_of_copy" % regime)
    return "%s (%s) %s%s" % ("%.2fx" % s if s else "-", "%.2fx" % e if e else "-", "%.0f%%" % pct if pct else "launch",
                             ", copy %.0f%%" % copy if copy else "")


def summary(rows):
    """sweep.md's summary: the cells whose check failed, then per regime how
    many of the cells fgc leads the faster torch.compile mode in, the
    geometric mean and the least of its speedups, and each cell it does not
    lead, least first (with its % of the floor, and replayed of the plain
    kernel over the same bytes)."""
    name = lambda r: cell_label((r["op"], r["dtype"], r["rows"], r["cols"]))
    bad = [r for r in rows if failed(r)]
    out = ["## Summary", "",
           "- Checks: " + ("every competitor agreed with the f64 reference in all %d cells" % len(rows) if not bad
                           else "%d of %d cells failed: %s" % (len(bad), len(rows), ", ".join(name(r) for r in bad)))]
    for regime in ("sustained", "cold", "replayed"):
        got = [(speedup(r, regime), r) for r in rows if not failed(r)]
        got = sorted(((x, r) for x, r in got if x), key=lambda t: t[0])
        if not got:
            continue
        behind = [(x, r) for x, r in got if x <= 1.0]
        mean = math.exp(sum(math.log(x) for x, _ in got) / len(got))
        out.append("- %s: fgc ahead in %d of %d cells (geometric mean %.2fx, the least %.2fx)%s" % (
            regime.capitalize(), len(got) - len(behind), len(got), mean, got[0][0], "; not ahead:" if behind else ""))
        for x, r in behind:
            pct, copy = r.get("%s_fgc_pct_of_floor" % regime), r.get("%s_fgc_pct_of_copy" % regime)
            out.append("  - %s: %.3fx, %s%s" % (name(r), x, "%.0f%% of the floor" % pct if pct else "under a launch",
                                                ", %.0f%% of the plain kernel" % copy if copy else ""))
    return out + [""]


def report(data, args):
    """sweep.md: a table per op and dtype and regime; sweep.png."""
    rows = {(r["op"], r["dtype"], r["rows"], r["cols"]): r for r in data["rows"]}
    sizes_r = [r for r in ROWS if any(k[2] == r for k in rows)]
    sizes_c = [c for c in COLS if any(k[3] == c for k in rows)]
    replayed = [r for r in data["rows"] if "replayed_fgc_ms" in r]
    single = 1 in {r.get("replay_calls", 1) for r in replayed}
    out = ["# fgc's shape sweep", "",
           "Each cell: fgc's speedup over the faster of torch.compile's default and",
           "reduce-overhead modes (their times over fgc's), in parentheses its speedup",
           "over eager PyTorch, and fgc's % of the memory floor; `launch` where the",
           "floor is under one kernel launch.  Replayed: the cells whose floor is",
           "under %g us, each peer's call captured in a CUDA graph (%s) and" % (
               REPLAY_FLOOR_MS * 1e3, peers.replay_words(replayed)),
           "the graphs replayed back to back, the time per call (the kernels without",
           "the host's call; torch.compile's default mode only, reduce-overhead's",
           "kernels being the same); `copy N%`: a plain one-pass kernel over the",
           "cell's bytes (ATen's torch.neg on f32, reading and writing as many bytes",
           "as the cell), replayed the same way, its time over fgc's: what one",
           "launch of that size reaches where the floor is under a launch."]
    if single:
        out += ["A graph of one call times the host's replays as much as the kernels",
                "where a kernel is as short as a launch (a 1.6 us kernel replayed in",
                "3-5 us: docs/performance.md v45); read those cells with care."]
    out += ["Command(s):"]
    out += ["`%s`" % c for c in data.get("commands", [])] + [""]
    out += summary(data["rows"])
    for regime in ("sustained", "cold", "replayed"):
        out += ["## %s" % regime.capitalize(), ""]
        for op in OPS:
            for dt in DTYPES:
                if not any(k[0] == op and k[1] == dt and (regime != "replayed" or cell_text(v, regime))
                           for k, v in rows.items()):
                    continue
                out += ["### %s %s" % (op, dt), "",
                        "| rows \\ columns | " + " | ".join(str(c) for c in sizes_c) + " |",
                        "|---" * (len(sizes_c) + 1) + "|"]
                for r in sizes_r:
                    out.append("| %d | " % r + " | ".join(cell_text(rows.get((op, dt, r, c)), regime)
                                                          for c in sizes_c) + " |")
                out.append("")
    if data.get("environment"):
        env = data["environment"]
        out += ["Measured %s on %s (torch %s, triton %s, CUDA %s); copy bandwidth %s; "
                "fgc %s." % (env["date"], env["gpu"], env["torch"], env["triton"], env["cuda"],
                             copy_text(data["rows"], env["copy_gbs"]), env["fgc"]), ""]
    with open(os.path.join(args.out, "sweep.md"), "w") as f:
        f.write("\n".join(out))
    heatmap(rows, os.path.join(args.out, "sweep.png"))
    log("\n".join(out))


def copy_text(rows, last):
    """The copy bandwidth the floors came from: each call measures its own
    and its cells' floors use it, so a sweep resumed over several calls
    names each (the environment holds only the last call's)."""
    calls = collections.Counter(round(r["copy_gbs"]) for r in rows if r.get("copy_gbs"))
    if len(calls) <= 1:
        return "%.0f GB/s in the same run" % (next(iter(calls)) if calls else last)
    return "measured by each call, each cell's floor from its own call's: " + ", ".join(
        "%d GB/s (%d cell%s)" % (bw, n, "s"[:n != 1]) for bw, n in calls.most_common())


def heatmap(rows, path):
    """The sustained speedups, one heat map per op and dtype (log scale,
    1.0x white), when matplotlib is there."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.colors import LogNorm
    except ImportError:
        log("no matplotlib: %s not drawn" % path)
        return
    fig, axes = plt.subplots(len(DTYPES), len(OPS), figsize=(4.2 * len(OPS), 3.4 * len(DTYPES)), squeeze=False)
    norm = LogNorm(vmin=0.25, vmax=4.0)
    image = None
    for i, dt in enumerate(DTYPES):
        for j, op in enumerate(OPS):
            ax = axes[i][j]
            grid = [[speedup(rows[op, dt, r, c], "sustained") if (op, dt, r, c) in rows else None
                     for c in COLS] for r in ROWS]
            values = [[v if v else float("nan") for v in line] for line in grid]
            image = ax.imshow(values, cmap="RdBu", norm=norm, aspect="auto")
            for y, line in enumerate(grid):
                for x, v in enumerate(line):
                    if v:
                        ax.text(x, y, "%.2f" % v, ha="center", va="center", fontsize=7)
            ax.set_title("%s %s" % (op, dt), fontsize=9)
            ax.set_xticks(range(len(COLS)), [str(c) for c in COLS], fontsize=7)
            ax.set_yticks(range(len(ROWS)), [str(r) for r in ROWS], fontsize=7)
            # axis names on the outer panels only (an inner panel's ran
            # into the title below it and the panel to its left)
            if i == len(DTYPES) - 1:
                ax.set_xlabel("columns", fontsize=7)
            if j == 0:
                ax.set_ylabel("rows", fontsize=7)
    fig.subplots_adjust(hspace=0.3, wspace=0.2)
    fig.colorbar(image, ax=axes, shrink=0.6, label="fgc speedup over the faster torch.compile mode (sustained)")
    fig.savefig(path, dpi=110)
    log("wrote %s" % path)


# ------------------------------------------------------------------- main

def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[1], formatter_class=argparse.RawTextHelpFormatter)
    ints = lambda s: [int(v) for v in s.split(",") if v]  # noqa: E731
    names = lambda s: [v for v in s.split(",") if v]      # noqa: E731
    p.add_argument("--fgc", default=os.path.join(ROOT, "build", "fgc"), help="the fgc compiler (default build/fgc)")
    p.add_argument("--out", default=os.path.join(ROOT, "out", "sweep"), help="sweep.json, sweep.md, sweep.png")
    p.add_argument("--work", default="/tmp/fgc-sweep", help="graphs, modules, libraries")
    p.add_argument("--ops", type=names, default=list(OPS), help="comma-separated (default: %s)" % ",".join(OPS))
    p.add_argument("--dtypes", type=names, default=DTYPES, help="comma-separated (default: f16,bf16,f32)")
    p.add_argument("--rows", type=ints, default=ROWS, help="comma-separated (default: %s)" % ",".join(map(str, ROWS)))
    p.add_argument("--cols", type=ints, default=COLS, help="comma-separated (default: %s)" % ",".join(map(str, COLS)))
    p.add_argument("--resume", action="store_true",
                   help="keep OUT/sweep.json's rows but failed ones, run only the other cells")
    p.add_argument("--report", action="store_true", help="only write sweep.md and sweep.png from OUT/sweep.json")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="fgc compile --lib at a time")
    p.add_argument("--build-only", action="store_true",
                   help="build the cells' libraries in --work and stop (no GPU needed; a later run on the GPU\n"
                        "machine with the same --work, fgc and runtime keeps them: peers.compile_lib)")
    p.add_argument("--warm", type=int, default=max(1, (os.cpu_count() or 2) // 2),
                   help="processes that fill torch.compile's caches before the timing (0: none)")
    peers.timing_options(p, runs=5, rounds=1, sustain=0.1, warmup=3)
    args = peers.timing_checked(p.parse_args())
    for op in args.ops:
        if op not in OPS:
            p.error("--ops: no op %r (there are %s)" % (op, ", ".join(OPS)))
    for dt in args.dtypes:
        if dt not in DTYPES:
            p.error("--dtypes: no dtype %r (there are %s)" % (dt, ", ".join(DTYPES)))
    args.small = False
    args.replay_floor_ms = REPLAY_FLOOR_MS
    args.compile_ro = "reduce-overhead" if args.device.startswith("cuda") else None
    return args


def main():
    args = parse_args()
    os.makedirs(args.out, exist_ok=True)
    os.makedirs(args.work, exist_ok=True)
    path = os.path.join(args.out, "sweep.json")
    data = peers.load_rows(path) if args.resume or args.report else {"environment": None, "rows": []}
    if args.report:
        report(data, args)
        return
    if not args.build_only and args.device.startswith("cuda") and not torch.cuda.is_available():
        sys.exit("sweep.py: no CUDA device (use --device cpu --no-fgc to try the script without one)")
    done = {(r["op"], r["dtype"], r["rows"], r["cols"]) for r in data["rows"] if not failed(r)}
    data["rows"] = [r for r in data["rows"] if (r["op"], r["dtype"], r["rows"], r["cols"]) in done]
    todo = [c for c in cells(args) if c not in done]
    data.setdefault("commands", []).append("python3 bench/sweep.py " + " ".join(sys.argv[1:]))
    names = cell_names(todo, args)
    log("%d cells to run (%d kept)" % (len(todo), len(done)))
    # a grid's libraries --jobs at a time: all at once would start ~350 nvcc
    libs = {} if args.no_fgc else peers.build_libs(args, list(names.values()), args.jobs)
    if args.build_only:
        sys.exit(peers.built(libs, args.work))
    if args.warm and not args.no_compile and todo:
        warm([names[c] for c in todo], args)
    clock, nvml = peers.Clock(args.device), peers.Nvml(args.device)
    copy_bw, mm_rate = peers.copy_bandwidth(args.device, clock), peers.matmul_rate(args.device, clock)
    data["environment"] = peers.environment(args.device, copy_bw, mm_rate, args.fgc)
    for cell in todo:
        op, dt, r, c = cell
        log("== %s (%s)" % (cell_label(cell), time.strftime("%H:%M:%S")))
        try:
            row = peers.bench_sample(names[cell], args, clock, nvml, copy_bw, mm_rate, libs.get(names[cell]))
        except Exception as e:  # one cell's failure must not lose the others
            row = {"error": peers.first_line(e)}
            log("failed: %s" % e)
        row.update(op=op, dtype=dt, rows=r, cols=c, copy_gbs=copy_bw / 1e9)   # this call's floor
        data["rows"].append(row)
        peers.save_rows(path, data)
        log("sustained %s, cold %s, replayed %s" % tuple(cell_text(row, g) for g in ("sustained", "cold", "replayed")))
    report(data, args)


if __name__ == "__main__":
    main()
