#!/usr/bin/env python3
"""
gemm_table.py - issue 7's benchmark table in one run on one GPU: fgc's
generated matmul against cuBLAS, cuBLASLt's nearest epilogue, PyTorch
eager and torch.compile.

    python3 bench/gemm_table.py [--gpuout out/gpu] [--out out/gemm-table]
                                [--shapes M,N,K ...] [--samples NAME,...]
                                [--rounds R] [--runs N]

`make -f Makefile.gpu bench-gemm` builds what it runs and runs it.

1. The kernel alone, bf16, D[M,N] = A[M,K] B[K,N], for each --shapes entry
   (default 8192,8192,8192 and six shapes of the samples' matmuls): the
   runtime test GPUOUT/runtime-tests/gemm_sm90 --bench times, in one
   process, 7 rounds taken in turn, cuBLASLt's plain matmul, cuBLASLt with
   its bias + GELU(tanh) epilogue (the nearest on its menu: it has no
   residual add), and fgc's kernel in three schedules, plain and with the
   epilogue gelu(D + bias) + residual.  For the first shape PyTorch runs
   the same in this process: torch.matmul (cuBLAS), and the epilogue
   graph `F.gelu(a @ b + bias) + res` eager and under torch.compile
   (mode max-autotune-no-cudagraphs), its result checked against eager,
   timed the binary's way (7 rounds, each the mean of N calls issued back
   to back: the clocks of a matmul under sustained load).  R rounds
   alternate the binary and the PyTorch timings; medians.  Then, for the
   first shape, per clock: each of the binary's kernels and torch.matmul's
   once under Nsight Compute (ncu, which locks the clocks at base), in SM
   cycles.  The timed rows of two processes can differ by several percent
   for one kernel (the power-managed clocks: torch.matmul runs the very
   kernel cuBLASLt plain runs); the cycles are the like-for-like figure.
2. The matmul samples at their default sizes (peers.py's flow: the module
   `fgc emit-torch` writes, float64 reference, testing.md's gates): fgc as
   compiled (--gemm auto), on its generated matmul wherever it can run
   (--gemm fgc), on cuBLASLt with its nearest epilogue and epilogue kernels
   (--gemm cublaslt), each a library (fgc compile --lib) called through
   python/fgc, PyTorch eager and torch.compile; every one checked, all
   timed in this process alike, sustained and cold (peers.py's regimes).

Writes OUT/gemm-table.md and OUT/gemm-table.json and prints the tables,
with the issue's two targets (the matmul alone at >= 95% of cuBLAS, with
its epilogue within 3% of cuBLAS's plain matmul) stated as met or missed,
timed and per clock.
"""
import argparse
import concurrent.futures
import csv
import json
import os
import re
import shutil
import statistics
import subprocess
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers  # noqa: E402  (the samples' flow, checks and timing)

ROOT = peers.ROOT
SHAPES = ["8192,8192,8192", "8192,16384,4096", "8192,4096,16384", "8192,14336,4096", "8192,4096,14336",
          "4096,4096,1024", "4096,1024,1024"]
SAMPLES = "gemm_bias_gelu_bf16,mlp_bf16,swiglu_bf16,transformer_block"
VARIANT = re.compile(r"^  (\S.*?)\s+([0-9.]+) ms\s+\d+ TFLOP/s", re.M)
KERNEL_RUNS = 20        # launches per timing in gemm_sm90's time_of: PyTorch's kernel rows the same
SAMPLE_LIBS = [("auto", [], "fgc --gemm auto"), ("fgc", ["--gemm", "fgc"], "fgc --gemm fgc"),
               ("lt", ["--gemm", "cublaslt"], "fgc --gemm cublaslt")]
log = peers.log


def kernel_bench(binary, shape):
    """gemm_sm90 --bench M N K: variant name -> ms."""
    cmd = [binary, "--bench"] + shape.split(",")
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        raise RuntimeError("%s: status %d\n%s" % (" ".join(cmd), p.returncode, (p.stdout + p.stderr)[-2000:]))
    found = {name: float(ms) for name, ms in VARIANT.findall(p.stdout)}
    if not found:
        raise RuntimeError("%s printed no variant lines:\n%s" % (" ".join(cmd), p.stdout[-2000:]))
    return found


def operands(shape, seed):
    """PyTorch's bf16 operands for shape M,N,K: a [M,K], b [K,N], bias [N],
    res [M,N], drawn from seed."""
    m, n, k = (int(x) for x in shape.split(","))
    g = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.rand(m, k, device="cuda", generator=g).sub_(0.5).to(torch.bfloat16)
    b = torch.rand(k, n, device="cuda", generator=g).sub_(0.5).mul_(0.05).to(torch.bfloat16)
    bias = torch.rand(n, device="cuda", generator=g).sub_(0.5).to(torch.bfloat16)
    res = torch.rand(m, n, device="cuda", generator=g).sub_(0.5).to(torch.bfloat16)
    return a, b, bias, res


def torch_peers(shape, args):
    """PyTorch's callables for one shape, the epilogue graph checked."""
    a, b, bias, res = operands(shape, args.seed)

    def epilogue(a, b, bias, res):
        return F.gelu(a @ b + bias) + res

    compiled = torch.compile(epilogue, mode="max-autotune-no-cudagraphs")
    want, got = epilogue(a, b, bias, res).float(), compiled(a, b, bias, res).float()
    err = float((want - got).abs().max())
    check = "ok (max abs diff from eager %.3g)" % err if err <= 1.6e-2 * float(want.abs().max()) + 1e-5 \
        else "FAIL: max abs diff from eager %.3g" % err
    return {
        "torch.matmul (cuBLAS) plain": lambda: torch.matmul(a, b),
        "PyTorch eager gelu(a@b + bias) + res": lambda: epilogue(a, b, bias, res),
        "torch.compile gelu(a@b + bias) + res": lambda: compiled(a, b, bias, res),
    }, check


def back_to_back(fns, runs, warmup, rounds=7):
    """gemm_sm90's method, for PyTorch's callables: in each of `rounds`
    rounds, each fn in turn, the mean of `runs` calls issued back to back
    between two CUDA events (a matmul under sustained load, its clocks
    what the power allows); the median over the rounds, in ms."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    t = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            start.record()
            for _ in range(runs):
                fn()
            end.record()
            end.synchronize()
            t[name].append(start.elapsed_time(end) / runs)
    return {name: statistics.median(v) for name, v in t.items()}


NCU_METRICS = {"gpu__time_duration.sum": "ms", "sm__cycles_elapsed.avg": "cycles"}
NCU_UNITS = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3, "nsecond": 1e-6, "usecond": 1e-3, "msecond": 1.0,
             "second": 1e3, "cycle": 1.0, "cycles": 1.0}     # to ms; cycles as counted


def ncu_kernels(cmd):
    """The kernels cmd launches between cudaProfilerStart and Stop, run
    under Nsight Compute (which locks the clocks at base and, by default,
    flushes the caches before each one): a
    list in launch order of {"name", "ms", "cycles"} (cycles: SM cycles
    elapsed, the average over the SMs), and cmd's own output."""
    ncu = shutil.which("ncu")
    if not ncu:
        raise RuntimeError("ncu is not on PATH")
    full = [ncu, "--profile-from-start", "off", "--csv", "--metrics", ",".join(NCU_METRICS)] + cmd
    p = subprocess.run(full, capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        raise RuntimeError("%s: status %d\n%s" % (" ".join(full), p.returncode, (p.stdout + p.stderr)[-2000:]))
    rows = list(csv.reader(line for line in p.stdout.splitlines() if line.startswith('"')))
    if not rows:
        raise RuntimeError("%s printed no metrics:\n%s" % (" ".join(full), (p.stdout + p.stderr)[-2000:]))
    col = {name: i for i, name in enumerate(rows[0])}
    kernels = {}
    for r in rows[1:]:
        k = kernels.setdefault(int(r[col["ID"]]), {"name": r[col["Kernel Name"]]})
        unit = r[col["Metric Unit"]]
        if unit not in NCU_UNITS:
            raise RuntimeError("ncu: unexpected unit %r for %s" % (unit, r[col["Metric Name"]]))
        k[NCU_METRICS[r[col["Metric Name"]]]] = float(r[col["Metric Value"]].replace(",", "")) * NCU_UNITS[unit]
    return [kernels[i] for i in sorted(kernels)], p.stdout


def per_clock(binary, shape, seed):
    """gemm_sm90 --profile's variants and torch.matmul under ncu: variant
    name -> {"name", "ms", "cycles"} (the fair comparison per clock: the
    timed rows follow the power-managed clocks of each process)."""
    cmd = [binary, "--profile"] + shape.split(",")
    found, printed = ncu_kernels(cmd)
    names = re.findall(r"^profiled \d+: (.*)$", printed, re.M)
    if len(names) != len(found):
        raise RuntimeError("%s: %d variants, %d kernels profiled" % (" ".join(cmd), len(names), len(found)))
    out = dict(zip(names, found))
    mm, _ = ncu_kernels([sys.executable, os.path.abspath(__file__), "--ncu-torch", shape, str(seed)])
    if len(mm) != 1:
        raise RuntimeError("torch.matmul ran %d kernels under ncu, not one" % len(mm))
    out["torch.matmul (cuBLAS) plain"] = mm[0]
    return out


def ncu_torch(shape, seed):
    """What ncu profiles for per_clock: one torch.matmul of the timed rows'
    operands, after a warm-up call."""
    a, b, _, _ = operands(shape, seed)
    torch.matmul(a, b)
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    torch.matmul(a, b)
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()


def bench_kernels(args):
    """Part 1: one row per shape and variant, name -> median ms."""
    binary = os.path.join(args.gpuout, "runtime-tests", "gemm_sm90")
    rows = []
    for i, shape in enumerate(args.shapes):
        log("== kernel %s" % shape)
        m, n, k = (int(x) for x in shape.split(","))
        row = {"shape": shape, "flop": 2.0 * m * n * k}
        try:
            fns, check = torch_peers(shape, args) if i == 0 else ({}, None)
            times = {}
            for r in range(args.rounds):
                for name, ms in kernel_bench(binary, shape).items():
                    times.setdefault(name, []).append(ms)
                if fns:
                    for name, ms in back_to_back(fns, KERNEL_RUNS, args.warmup if r == 0 else 2).items():
                        times.setdefault(name, []).append(ms)
            row.update(ms={v: statistics.median(t) for v, t in times.items()}, rounds_ms=times)
            if check:
                row["compile_check"] = check
            if i == 0:
                try:
                    row["ncu"] = per_clock(binary, shape, args.seed)
                except Exception as e:  # no ncu, or no permission: the timed rows stand
                    row["ncu_error"] = peers.first_line(e)
        except Exception as e:  # one shape's failure must not lose the others' rows
            row["error"] = peers.first_line(e)
            log("%s failed: %s" % (shape, e))
        rows.append(row)
        torch._dynamo.reset()
        torch.cuda.empty_cache()
    return rows


def build_sample_libs(args):
    """Per (sample, variant), its library (fgc compile --lib with the
    variant's --gemm), all built at once; or the error (peers.compile_lib:
    a library built from the same bytes is kept)."""
    jobs = [(name, key, flags) for name in args.samples for key, flags, _ in SAMPLE_LIBS]

    def one(job):
        name, key, flags = job
        lib = os.path.join(args.work, "lib", "%s.%s" % (name, key), "lib%s.so" % name)
        return peers.compile_lib(args.fgc, os.path.join(ROOT, "samples", name + ".fg"), lib, flags)
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        return {(name, key): lib for (name, key, _), lib in zip(jobs, pool.map(one, jobs))}


def bench_samples(args, clock):
    """Part 2: one row per sample: checks and median ms of each competitor,
    in this process, cold and sustained (peers.py's regimes)."""
    import fgc
    libs = build_sample_libs(args)
    nvml = peers.Nvml("cuda")
    rows = []
    for name in args.samples:
        log("== sample %s" % name)
        row = {"sample": name}
        try:
            work = os.path.join(args.work, name)
            os.makedirs(work, exist_ok=True)
            mod = peers.emit(name, args, work)
            inputs = list(mod.make_inputs(args.seed, "cuda").values())
            ref = mod.forward(*[t.to(torch.float64) if t.is_floating_point() else t for t in inputs],
                              reference=True)
            fns = {"eager": lambda: mod.forward(*inputs)}
            row["eager_check"] = peers.check_all(fns["eager"](), ref, mod)
            compiled = peers.compile_peer(mod, inputs, ref, row)
            if compiled:
                fns["compile"] = lambda: compiled(*inputs)
            for key, _, _ in SAMPLE_LIBS:
                lib = libs[name, key]
                try:
                    if isinstance(lib, Exception):
                        raise lib
                    model = fgc.load(lib)
                    row[key + "_check"] = peers.check_all(peers.fgc_results(mod, model, model(*inputs)), ref, mod)
                    fns[key] = (lambda m: lambda: m(*inputs))(model)
                except Exception as e:  # reported in the row; the others still run
                    row[key + "_check"] = peers.first_line(e)
            ref.clear()
            for fn in fns.values():
                for _ in range(args.warmup):
                    fn()
            cold, row["cold_clock"] = peers.time_cold(clock, nvml, fns, args.runs, 0.05)
            row["ms"], row["sustained_clock"] = peers.time_sustained(clock, nvml, fns, args.rounds, 0.2, cold)
            row["cold_ms"] = cold
        except Exception as e:  # one sample's failure must not lose the others' rows
            row["error"] = peers.first_line(e)
            log("%s failed: %s" % (name, e))
        torch._dynamo.reset()
        torch.cuda.empty_cache()
        rows.append(row)
    return rows


def best(ms, prefix, suffix):
    """The fastest fgc schedule among the variants named prefix...suffix."""
    hits = [(t, v) for v, t in ms.items() if v.startswith(prefix) and v.endswith(suffix)]
    return min(hits) if hits else (None, None)


def pct(lt, t):
    """cuBLASLt plain's time over t, as a percentage; "-" when either is
    missing."""
    return "%.1f%%" % (100 * lt / t) if lt and t else "-"


def target(what, lt, t, goal):
    """One of issue 7's targets: what, the percentage, met or missed."""
    if not (lt and t):
        return "- %s: not measured" % what
    p = 100 * lt / t
    return "- %s: %.1f%%, %s" % (what, p, "met" if p >= goal else "missed by %.1f points" % (goal - p))


def kernel_tables(rows):
    """The first shape's every competitor, then one line per shape, then
    the targets."""
    first = rows[0]
    if "error" in first:
        return "### Kernel %s: %s" % (first["shape"], first["error"])
    lt = first["ms"].get("cuBLASLt plain")
    lines = ["### %s bf16, D = A[M,K] B[K,N]; epilogue gelu(D + bias) + residual" % first["shape"].replace(",", " x "),
             "", "| implementation | ms | TFLOP/s | % of cuBLASLt plain |", "|---|---|---|---|"]
    for v, t in first["ms"].items():
        lines.append("| %s | %.3f | %.0f | %s |" % (v, t, first["flop"] / t / 1e9, pct(lt, t)))
    if "compile_check" in first:
        lines += ["", "torch.compile's result against eager: %s." % first["compile_check"]]
    lines += ["", "### Every shape (bf16, medians; % of cuBLASLt plain in the same run)", "",
              "| M,N,K | cuBLASLt plain ms | cuBLASLt bias+gelu(tanh) | fgc best plain | fgc best bias+gelu+residual |",
              "|---|---|---|---|---|"]
    for row in rows:
        if "error" in row:
            lines.append("| %s | %s | | | |" % (row["shape"], row["error"]))
            continue
        ms = row["ms"]
        lt = ms.get("cuBLASLt plain")
        tp, vp = best(ms, "fgc ", " plain")
        te, ve = best(ms, "fgc ", " bias+gelu+residual")
        lines.append("| %s | %s | %s | %s (%s) | %s (%s) |" % (
            row["shape"], "%.3f" % lt if lt else "-", pct(lt, ms.get("cuBLASLt bias+gelu(tanh) epilogue")),
            pct(lt, tp), vp[4:-6] if vp else "-", pct(lt, te), ve[4:-19] if ve else "-"))
    ms = first["ms"]
    lt, (tp, _), (te, _) = ms.get("cuBLASLt plain"), best(ms, "fgc ", " plain"), best(ms, "fgc ", " bias+gelu+residual")
    verdict = [target("the matmul alone at >= 95%% of cuBLAS (%s)" % first["shape"], lt, tp, 95),
               target("with the epilogue within 3% of cuBLAS's plain matmul (>= 97%)", lt, te, 97)]
    lines += ["", "Targets (issue 7), first shape, timed:"] + verdict
    if "ncu" in first:
        nc = first["ncu"]
        cyc = {v: k["cycles"] for v, k in nc.items()}
        lt = cyc.get("cuBLASLt plain")
        lines += ["", "### %s per clock: each kernel once under ncu (clocks locked at base, caches flushed), SM cycles" %
                  first["shape"].replace(",", " x "), "",
                  "| implementation | kernel | ms | SM cycles (M) | % of cuBLASLt plain |", "|---|---|---|---|---|"]
        for v, k in nc.items():
            lines.append("| %s | %s | %.3f | %.3f | %s |" % (v, k["name"].split("(")[0].strip()[:80], k["ms"],
                                                           k["cycles"] / 1e6, pct(lt, k["cycles"])))
        (cp, _), (ce, _) = best(cyc, "fgc ", " plain"), best(cyc, "fgc ", " bias+gelu+residual")
        lines += ["", "Targets (issue 7), first shape, per clock:",
                  target("the matmul alone at >= 95% of cuBLAS", lt, cp, 95),
                  target("with the epilogue within 3% of cuBLAS's plain matmul (>= 97%)", lt, ce, 97)]
    elif "ncu_error" in first:
        lines += ["", "Per clock: not measured (%s)." % first["ncu_error"]]
    return "\n".join(lines)


def sample_table(rows, regime="ms"):
    cols = [k for k, _, _ in SAMPLE_LIBS] + ["eager", "compile"]
    titles = [t for _, _, t in SAMPLE_LIBS] + ["PyTorch eager", "torch.compile"]
    lines = ["| sample | " + " | ".join(t + " ms" for t in titles) + " | agree with the f64 reference ("
             + " / ".join(titles) + ") |", "|" + "---|" * (len(cols) + 2)]
    for row in rows:
        if "error" in row:
            lines.append("| %s | %s |" % (row["sample"], row["error"]) + " |" * len(cols))
            continue
        cells = ["%.3f" % row[regime][k] if k in row.get(regime, {}) else "-" for k in cols]
        checks = " / ".join(row.get(k + "_check", "-") for k in cols)
        lines.append("| %s | %s | %s |" % (row["sample"], " | ".join(cells), checks))
    return "\n".join(lines)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[1], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--fgc", default=os.path.join(ROOT, "build", "fgc"), help="the fgc compiler (default build/fgc)")
    p.add_argument("--gpuout", default=os.path.join(ROOT, "out", "gpu"),
                   help="Makefile.gpu's GPUOUT (the kernel rows' runtime-tests/gemm_sm90)")
    p.add_argument("--out", default=os.path.join(ROOT, "out", "gemm-table"), help="where the tables go")
    p.add_argument("--work", default="/tmp/fgc-gemm-table", help="modules, outputs and logs")
    p.add_argument("--shapes", nargs="*", default=SHAPES, help="M,N,K of the kernel rows (the first gets PyTorch's)")
    p.add_argument("--samples", default=SAMPLES, help="comma-separated sample names (default %s)" % SAMPLES)
    p.add_argument("--rounds", type=int, default=3, help="rounds alternating the competitors (default 3)")
    p.add_argument("--runs", type=int, default=20, help="timed calls of a sample per round (default 20)")
    p.add_argument("--warmup", type=int, default=5, help="untimed calls before timing (default 5)")
    p.add_argument("--seed", type=int, default=7, help="the inputs' seed (default 7)")
    args = p.parse_args()
    args.samples = [s for s in args.samples.split(",") if s]
    args.small, args.device, args.rounds = False, "cuda", max(1, args.rounds)
    return args


def write_tables(args, env, kernels, samples):
    """OUT/gemm-table.md and .json from what has run; samples None: not yet."""
    md = ["# fgc's generated matmul against cuBLAS and torch.compile", "",
          "Measured %s on %s (torch %s, CUDA %s); fgc %s." % (env["date"], env["gpu"], env["torch"], env["cuda"],
                                                              env["fgc"]), ""]
    if kernels:
        md += [kernel_tables(kernels), ""]
    md += ["Kernel rows: gemm_sm90 --bench and PyTorch alike, 7 rounds of each variant in turn, each the mean of "
           "%d launches back to back, the median of the 7; then the median of %d such runs. Clocks follow the "
           "power of a sustained matmul: compare rows of one run only. Sample rows: peers.py's method, every "
           "competitor in this process, fgc through its library (fgc compile --lib, python/fgc): sustained, "
           "back-to-back calls for at least 200 ms, the time per call, the median of %d runs each in turn; "
           "cold, each call after 50 ms idle, the median of %d." % (KERNEL_RUNS, args.rounds, args.rounds,
                                                                    args.runs), ""]
    if samples is None:
        md += ["(The samples' table is still being measured.)", ""]
    elif samples:
        md += ["### The matmul samples at their default sizes, sustained (ms a call)", "",
               sample_table(samples, "ms"), "",
               "### The same, cold (ms a call after an idle gap)", "", sample_table(samples, "cold_ms"), ""]
    text = "\n".join(md)
    with open(os.path.join(args.out, "gemm-table.md"), "w") as f:
        f.write(text)
    with open(os.path.join(args.out, "gemm-table.json"), "w") as f:
        json.dump({"environment": env, "kernels": kernels, "samples": samples}, f, indent=1)  # None: pending
    return text


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--ncu-torch":     # per_clock's child, under ncu
        ncu_torch(sys.argv[2], int(sys.argv[3]))
        return
    args = parse_args()
    if not torch.cuda.is_available():
        sys.exit("gemm_table.py: no CUDA device")
    os.makedirs(args.out, exist_ok=True)
    os.makedirs(args.work, exist_ok=True)
    clock = peers.Clock("cuda")
    env = peers.environment("cuda", 0.0, 0.0, args.fgc)
    kernels = bench_kernels(args) if args.shapes else []
    if args.samples:    # the kernel rows are kept if the samples do not finish
        write_tables(args, env, kernels, None)
        samples = bench_samples(args, clock)
    else:
        samples = []
    log("\n" + write_tables(args, env, kernels, samples))


if __name__ == "__main__":
    main()
