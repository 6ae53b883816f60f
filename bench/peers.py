#!/usr/bin/env python3
"""
peers.py - fgc against PyTorch eager and torch.compile on the samples, in
one run on one GPU, with the floors of shared/design/performance.md.

    python3 bench/peers.py [--fgc .gpu/fgc] [--gpuout out/gpu] [--out out/peers]
                           [--samples NAME,...] [--runs N] [--rounds R] [--seed S]

For each samples/NAME.fg at its default sizes:
  1. `fgc emit-torch` writes the graph as a PyTorch module (docs/peers.md);
     its make_inputs(seed) draws on the GPU the very inputs that the fgc
     binary draws from --seed, so all three run on the same data;
  2. the module's forward runs in float64 (reference=True: the reference
     interpreter's semantics), and eager PyTorch, torch.compile and the fgc
     binary (GPUOUT/bench/NAME, built by `make -f Makefile.gpu`, its outputs
     read back from --outputs) are each compared with it under testing.md's
     gates, per output and saved value;
  3. eager and compiled forward are timed with CUDA events, interleaved run
     by run, after warm-up; the fgc binary times itself (--bench: CUDA
     events in its own process, the median of N runs after 3 warm-ups), in
     R rounds alternating with the PyTorch timings; medians throughout;
  4. floor = max(BYTES / copy bandwidth, FLOPS / bf16 matmul rate), both
     ceilings measured at the start of this run (a 512 MiB device-to-device
     copy counting bytes read plus written; an 8192^3 bf16 torch.matmul).

torch.compile uses the default mode, and mode="max-autotune-no-cudagraphs"
for samples with a matmul.  Writes OUT/peers.md (the table and its notes),
OUT/peers.json (every figure) and OUT/peers.png (when matplotlib is there),
and prints the table.  --device cpu --no-fgc runs the same flow without a
GPU (timings from the wall clock), to try the script itself.
"""
import argparse
import glob
import importlib.util
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# testing.md's tolerances as runtime/check.c applies them:
# rtol, atol, RMSE-gate m, the dtype's unit roundoff
TOLERANCE = {
    torch.float32: (1e-5, 1e-5, 2.0, 2.0**-24),
    torch.float16: (1e-3, 1e-5, 3.0, 2.0**-11),
    torch.bfloat16: (1.6e-2, 1e-5, 3.0, 2.0**-8),
}


# A floor under this is no floor: one kernel launch alone costs 3-4 us
# (performance.md), so such a row is launch-bound.
LAUNCH_BOUND_MS = 0.002


def log(*args):
    print(*args, flush=True)


# ----------------------------------------------------------------- timing

class Clock:
    """CUDA events on a GPU, the wall clock (after a synchronize) on the CPU."""

    def __init__(self, device):
        self.cuda = device.startswith("cuda")
        if self.cuda:
            self.start = torch.cuda.Event(enable_timing=True)
            self.end = torch.cuda.Event(enable_timing=True)

    def time(self, fn):
        """Milliseconds of one call of fn, from an idle device to its end."""
        if self.cuda:
            self.start.record()
            fn()
            self.end.record()
            self.end.synchronize()
            return self.start.elapsed_time(self.end)
        t0 = time.perf_counter()
        fn()
        return (time.perf_counter() - t0) * 1e3

    def sync(self):
        if self.cuda:
            torch.cuda.synchronize()


def time_interleaved(clock, fns, runs, warmup):
    """Per fn, the times of `runs` calls, the fns taking turns call by call."""
    for fn in fns:
        for _ in range(warmup):
            fn()
    clock.sync()
    times = [[] for _ in fns]
    for _ in range(runs):
        for i, fn in enumerate(fns):
            times[i].append(clock.time(fn))
    return times


def copy_bandwidth(device, clock):
    """Bytes read plus written per second by a 512 MiB device-to-device
    copy, the median of 10 after 3 warm-ups."""
    n = 512 << 20
    a = torch.empty(n, dtype=torch.uint8, device=device).fill_(1)
    b = torch.empty_like(a)
    t = time_interleaved(clock, [lambda: b.copy_(a)], 10, 3)[0]
    return 2.0 * n / (statistics.median(t) * 1e-3)


def matmul_rate(device, clock):
    """FLOP/s of an 8192^3 bf16 matmul on random data (1024^3 on a CPU), the
    median of 10 after 3 warm-ups."""
    m = 8192 if device.startswith("cuda") else 1024
    x = torch.randn(m, m, device=device).to(torch.bfloat16)
    y = torch.randn(m, m, device=device).to(torch.bfloat16)
    t = time_interleaved(clock, [lambda: torch.matmul(x, y)], 10, 3)[0]
    return 2.0 * m**3 / (statistics.median(t) * 1e-3)


# ------------------------------------------------------------- the checks

def gate(actual, ref64, dtype, kind, round_to):
    """testing.md's verdict on one result: (True, detail) or (False, why).
    ref64 is the float64 reference (for i32 and bool: the exact values);
    kind is "elementwise" or "rmse" (the module's RESULTS says which)."""
    if actual.dtype != dtype:
        return False, "dtype %s, want %s" % (actual.dtype, dtype)
    if tuple(actual.shape) != tuple(ref64.shape):
        return False, "shape %s, want %s" % (tuple(actual.shape), tuple(ref64.shape))
    if not dtype.is_floating_point:
        bad = int((actual != ref64.to(dtype)).sum())
        return bad == 0, "exact" if bad == 0 else "%d of %d differ" % (bad, actual.numel())
    rtol, atol, m, unit = TOLERANCE[dtype]
    a = actual.to(torch.float64)
    r = round_to(ref64, dtype)  # the reference rounded once to the dtype
    nan_ok = torch.equal(torch.isnan(a), torch.isnan(r))
    inf_ok = torch.equal(torch.where(torch.isinf(a), a, 0.0), torch.where(torch.isinf(r), r, 0.0))
    if kind == "rmse":
        fin = torch.isfinite(a) & torch.isfinite(r) & torch.isfinite(ref64)
        cnt = max(int(fin.sum()), 1)
        e = torch.where(fin, ref64, 0.0)
        rmse = math.sqrt(float(torch.where(fin, a - e, 0.0).square().sum()) / cnt)
        rmse_r = math.sqrt(float(torch.where(fin, r - e, 0.0).square().sum()) / cnt)
        rms_e = math.sqrt(float(e.square().sum()) / cnt)
        limit = m * max(rmse_r, unit * rms_e / math.sqrt(3.0)) + atol
        ok = nan_ok and inf_ok and rmse <= limit
        return ok, "rmse %.3g %s %.3g%s" % (rmse, "<=" if rmse <= limit else ">", limit,
                                            "" if nan_ok and inf_ok else ", NaN/Inf misplaced")
    fin = torch.isfinite(a) & torch.isfinite(r)
    err = torch.where(fin, (a - r).abs(), 0.0)
    bad = int((err > atol + rtol * r.abs()).sum())
    ok = nan_ok and inf_ok and bad == 0
    return ok, "max abs err %.3g, %d outside rtol %g%s" % (
        float(err.max()) if err.numel() else 0.0, bad, rtol, "" if nan_ok and inf_ok else ", NaN/Inf misplaced")


def check_all(results, ref, mod):
    """One verdict for a competitor: "ok", or the first failing key and why."""
    for key, (dtype, _shape, kind) in mod.RESULTS.items():
        if key not in results:
            return "FAIL %s: missing" % key
        ok, why = gate(results[key], ref[key], dtype, kind, mod._round)
        if not ok:
            return "FAIL %s: %s" % (key, why)
    return "ok"


# ------------------------------------------------------------------ fgc

def run_binary(binary, seed, runs, outputs=None):
    """Runs the fgc binary with --bench; its headline total (and the eager
    total, when it prints one) in ms, and its output."""
    cmd = [binary, "--seed", str(seed), "--bench", str(runs)]
    if outputs:
        cmd += ["--outputs", outputs]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=1200)
    text = p.stdout + p.stderr
    if p.returncode != 0:
        raise RuntimeError("%s exited with status %d:\n%s" % (" ".join(cmd), p.returncode, text[-2000:]))
    total = re.search(r"^  total ([0-9.]+) ms", text, re.M)
    eager = re.search(r"^  eager total ([0-9.]+) ms", text, re.M)
    if not total:
        raise RuntimeError("no '  total X ms' line in the output of %s:\n%s" % (" ".join(cmd), text[-2000:]))
    return float(total.group(1)), float(eager.group(1)) if eager else None, text


def read_outputs(mod, directory, device):
    """The binary's --outputs files as tensors of the graph's dtypes."""
    out = {}
    for key, (dtype, _shape, _kind) in mod.RESULTS.items():
        path = os.path.join(directory, key + ".npy")
        if os.path.exists(path):
            out[key] = torch.from_numpy(np.load(path)).to(device).to(dtype)
    return out


# --------------------------------------------------------------- a sample

def load_module(path):
    spec = importlib.util.spec_from_file_location("peer_" + os.path.basename(path)[:-3], path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_dims(source):
    """The -D flags of a sample's `# test-dims:` line."""
    with open(source) as f:
        for line in f:
            if line.startswith("# test-dims:"):
                return line.split(":", 1)[1].split()
    return []


def emit(name, args, work):
    """The sample's module, written by fgc emit-torch and imported."""
    source = os.path.join(ROOT, "samples", name + ".fg")
    module = os.path.join(work, name + ".py")
    dims = test_dims(source) if args.small else []
    subprocess.run([args.fgc, "emit-torch", source, "-o", module] + dims, check=True)
    return load_module(module)


def first_line(e):
    return "error: %s" % (str(e).strip().splitlines() or [type(e).__name__])[0][:160]


def compile_peer(mod, args_in, ref, row):
    """torch.compile'd forward, checked; None when it fails to compile."""
    mode = "max-autotune-no-cudagraphs" if mod.FLOPS else None
    row["compile_mode"] = mode or "default"
    try:
        compiled = torch.compile(mod.forward, mode=mode)
        t0 = time.time()
        row["compile_check"] = check_all(compiled(*args_in), ref, mod)
        row["compile_s"] = round(time.time() - t0, 1)
        return compiled
    except Exception as e:  # reported in the row; eager and fgc still run
        row["compile_check"] = first_line(e)
        log("torch.compile failed: %s" % e)
        return None


def check_fgc(mod, binary, args, work, ref, row):
    """Runs the binary once for its outputs and checks them; False when it
    cannot run."""
    outdir = os.path.join(work, "fgc-outputs")
    try:
        _, _, text = run_binary(binary, args.seed, 1, outdir)
    except Exception as e:  # reported in the row
        row["fgc_check"] = first_line(e)
        log("fgc binary failed: %s" % e)
        return False
    with open(os.path.join(work, "fgc-run.txt"), "w") as f:
        f.write(text)
    row["fgc_check"] = check_all(read_outputs(mod, outdir, args.device), ref, mod)
    shutil.rmtree(outdir, ignore_errors=True)
    return True


def time_all(fns, binary, args, clock, work, row):
    """Times the PyTorch callables (name -> fn) and the binary in rounds."""
    times = {label: [] for label in fns}
    fgc_totals, fgc_eager = [], []
    per_round = max(1, args.runs // args.rounds)
    for r in range(args.rounds):
        ts = time_interleaved(clock, list(fns.values()), per_round, args.warmup if r == 0 else 2)
        for label, t in zip(fns, ts):
            times[label] += t
        if binary:
            total, eager_total, text = run_binary(binary, args.seed, args.runs)
            fgc_totals.append(total)
            if eager_total is not None:
                fgc_eager.append(eager_total)
            with open(os.path.join(work, "fgc-bench.txt"), "w") as f:
                f.write(text)
    for label, t in times.items():
        row[label + "_ms"] = statistics.median(t)
    if fgc_totals:
        row["fgc_ms"] = statistics.median(fgc_totals)
        row["fgc_rounds_ms"] = fgc_totals
        if row["floor_kind"] != "launch":
            row["fgc_pct_of_floor"] = 100.0 * row["floor_ms"] / row["fgc_ms"]
        if "compile_ms" in row:
            row["fgc_speedup_vs_compile"] = row["compile_ms"] / row["fgc_ms"]
    if fgc_eager:
        row["fgc_eager_ms"] = statistics.median(fgc_eager)


def bench_sample(name, args, clock, copy_bw, mm_rate):
    """One row of the table: floor, checks and times of the three."""
    row = {"sample": name}
    work = os.path.join(args.work, name)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    mod = emit(name, args, work)
    mem_floor = mod.BYTES / copy_bw * 1e3
    flop_floor = mod.FLOPS / mm_rate * 1e3
    floor = max(mem_floor, flop_floor)
    row.update(bytes=mod.BYTES, flops=mod.FLOPS, floor_ms=floor,
               floor_kind="launch" if floor < LAUNCH_BOUND_MS else "compute" if flop_floor > mem_floor else "memory")

    inputs = list(mod.make_inputs(args.seed, args.device).values())
    ref = mod.forward(*[t.to(torch.float64) if t.is_floating_point() else t for t in inputs], reference=True)
    fns = {"eager": lambda: mod.forward(*inputs)}
    row["eager_check"] = check_all(fns["eager"](), ref, mod)
    compiled = None if args.no_compile else compile_peer(mod, inputs, ref, row)
    if compiled:
        fns["compile"] = lambda: compiled(*inputs)
    binary = None
    if not args.no_fgc:
        binary = os.path.join(args.gpuout, name) if args.small else os.path.join(args.gpuout, "bench", name)
        if not check_fgc(mod, binary, args, work, ref, row):
            binary = None
    ref.clear()  # the float64 results can be large: gone before the timing
    time_all(fns, binary, args, clock, work, row)
    return row


# ----------------------------------------------------------------- report

COLUMNS = [
    ("sample", "sample", "%s"),
    ("floor_ms", "floor ms", "%.4g"),
    ("eager_ms", "eager ms", "%.4g"),
    ("compile_ms", "torch.compile ms", "%.4g"),
    ("fgc_ms", "fgc ms", "%.4g"),
    ("fgc_pct_of_floor", "fgc % of floor", "%.0f%%"),
    ("fgc_speedup_vs_compile", "fgc speedup vs compile", "%.2fx"),
    ("fgc_eager_ms", "fgc eager-launch ms", "%.4g"),
    ("checks", "agree with the f64 reference (eager / compile / fgc)", "%s"),
]


def cell(row, key, fmt):
    if key == "checks":
        return " / ".join(row.get(k, "-") for k in ("eager_check", "compile_check", "fgc_check"))
    if key == "fgc_pct_of_floor" and row.get("floor_kind") == "launch":
        return "launch-bound"
    if key not in row:
        return row.get("error", "-") if key == "eager_ms" else "-"
    return fmt % row[key]


def table(rows):
    lines = ["| " + " | ".join(title for _, title, _ in COLUMNS) + " |",
             "|" + "---|" * len(COLUMNS)]
    for row in rows:
        lines.append("| " + " | ".join(cell(row, k, f) for k, _, f in COLUMNS) + " |")
    return "\n".join(lines)


def notes(env, args):
    return "\n".join([
        "Measured %s on %s (torch %s, triton %s, CUDA %s); copy bandwidth %.0f GB/s "
        "(512 MiB device-to-device copy, bytes read plus written), bf16 matmul %.0f TFLOP/s "
        "(8192^3 torch.matmul); fgc %s." % (env["date"], env["gpu"], env["torch"], env["triton"], env["cuda"],
                                            env["copy_gbs"], env["matmul_tflops"], env["fgc"]),
        "",
        "- floor: max(ideal bytes / copy bandwidth, matmul FLOPs / matmul rate); ideal bytes = each input "
        "and param read once, each output and @save value written once (performance.md). A floor under "
        "%g ms is less than one kernel launch: such a row is launch-bound, and its %% of floor means "
        "nothing." % LAUNCH_BOUND_MS,
        "- eager and torch.compile: the module `fgc emit-torch` writes (composites as torch.softmax, "
        "F.layer_norm, F.rms_norm), timed in this process with CUDA events around each call, the two "
        "interleaved call by call; the median of %d calls after warm-up. torch.compile: default mode, "
        "mode=\"max-autotune-no-cudagraphs\" for samples with a matmul; neither uses CUDA graphs." % args.runs,
        "- fgc: the binary `make -f Makefile.gpu` builds (GPUOUT/bench/NAME), timed by itself in its own "
        "process (`--bench %d`: CUDA events, median after 3 warm-ups; its headline total, which replays "
        "the program as one CUDA graph where the runtime does so, with the eager-launch total beside it "
        "when the binary prints one); the median of %d such runs, alternating with the PyTorch timings."
        % (args.runs, args.rounds),
        "- fgc % of floor = floor / fgc time; speedup = torch.compile time / fgc time.",
        "- agree: each output and @save value against the float64 reference (the module run with "
        "reference=True, the interpreter's semantics) under testing.md's gates: elementwise "
        "(|a - e| <= atol + rtol |e|) or, for values fed by a reduction, a matmul, a composite or a "
        "value eager PyTorch rounds, the RMSE gate. All three run on the same inputs: the binary draws "
        "them from --seed %d and the module's make_inputs draws the same bits." % args.seed,
    ])


SERIES = [("eager_ms", "PyTorch eager", "tab:blue"), ("compile_ms", "torch.compile", "tab:orange"),
          ("fgc_ms", "fgc", "tab:green")]


def bars(ax, rows, scale):
    """One group of bars per row, one bar per competitor: time / scale(row)."""
    width = 0.8 / len(SERIES)
    for i, (key, label, color) in enumerate(SERIES):
        xs = [j + (i - 1) * width for j, r in enumerate(rows) if key in r]
        if xs:
            ax.bar(xs, [r[key] / scale(r) for r in rows if key in r], width, label=label, color=color)
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels([r["sample"] for r in rows], rotation=30, ha="right")


def plot(rows, path, env):
    """Time over floor per sample (log scale); launch-bound rows, whose floor
    is no yardstick, in microseconds in a panel of their own."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("matplotlib is not installed: no plot")
        return
    bound = [r for r in rows if r.get("floor_kind") in ("memory", "compute")]
    launch = [r for r in rows if r.get("floor_kind") == "launch"]
    panels = [p for p in (bound, launch) if p]
    if not panels:
        return
    fig, axes = plt.subplots(1, len(panels), figsize=(max(8, 1.1 * len(rows) + 2), 5), squeeze=False,
                             gridspec_kw={"width_ratios": [max(len(p), 1) + 1 for p in panels]})
    ax = axes[0][0]
    if bound:
        bars(ax, bound, lambda r: r["floor_ms"])
        ax.axhline(1.0, color="black", linewidth=1, label="floor")
        ax.set_yscale("log")
        ax.set_ylabel("time / floor (lower is better)")
        ax.legend()
    if launch:
        ax = axes[0][-1]
        bars(ax, launch, lambda r: 1e-3)
        ax.set_ylabel("launch-bound: time in us")
        if not bound:
            ax.legend()
    fig.suptitle("fgc and its peers on %s: copy %.0f GB/s, bf16 matmul %.0f TFLOP/s"
                 % (env["gpu"], env["copy_gbs"], env["matmul_tflops"]))
    fig.tight_layout()
    fig.savefig(path, dpi=150)
    log("plot: %s" % path)


def environment(device, copy_bw, mm_rate, fgc):
    try:
        import triton
        triton_version = triton.__version__
    except ImportError:
        triton_version = "-"
    try:
        rev = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True).stdout.strip() or "?"
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain"], capture_output=True,
                               text=True).stdout.strip()
    except OSError:
        rev, dirty = "?", ""
    return {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "gpu": torch.cuda.get_device_name() if device.startswith("cuda") else "CPU",
        "torch": torch.__version__, "triton": triton_version, "cuda": torch.version.cuda or "-",
        "copy_gbs": copy_bw / 1e9, "matmul_tflops": mm_rate / 1e12,
        "fgc": "%s (commit %s%s)" % (fgc, rev, ", with uncommitted changes" if dirty else ""),
    }


# ------------------------------------------------------------------- main

def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[1], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--fgc", default=os.path.join(ROOT, "build", "fgc"), help="the fgc compiler (default build/fgc)")
    p.add_argument("--gpuout", default=os.path.join(ROOT, "out", "gpu"),
                   help="Makefile.gpu's GPUOUT: the binaries are GPUOUT/bench/NAME (default out/gpu)")
    p.add_argument("--out", default=os.path.join(ROOT, "out", "peers"), help="where the table and plot go")
    p.add_argument("--work", default="/tmp/fgc-peers", help="modules, fgc outputs and logs")
    p.add_argument("--samples", default="", help="comma-separated names (default: every samples/*.fg)")
    p.add_argument("--runs", type=int, default=60, help="timed calls of each competitor (default 60)")
    p.add_argument("--rounds", type=int, default=3, help="rounds alternating PyTorch and fgc (default 3)")
    p.add_argument("--warmup", type=int, default=5, help="untimed calls before timing (default 5)")
    p.add_argument("--seed", type=int, default=7, help="the inputs' seed (default 7)")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="make -j (default: every core)")
    p.add_argument("--device", default="cuda", help="cuda, or cpu to try the script without a GPU")
    p.add_argument("--small", action="store_true",
                   help="each sample at its `# test-dims:` sizes, binaries GPUOUT/NAME: a quick\n"
                        "check that the three agree; its timings mean little")
    p.add_argument("--no-make", action="store_true", help="use the binaries as they are")
    p.add_argument("--no-fgc", action="store_true", help="time PyTorch alone")
    p.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    args = p.parse_args()
    args.rounds = max(1, args.rounds)
    if not hasattr(torch, "compile"):
        args.no_compile = True
    return args


def build(args, names):
    targets = [os.path.join(args.gpuout, n) if args.small else os.path.join(args.gpuout, "bench", n) for n in names]
    cmd = ["make", "-f", "Makefile.gpu", "FGC=" + os.path.abspath(args.fgc), "GPUOUT=" + args.gpuout,
           "-j%d" % args.jobs] + targets
    log("building: " + " ".join(cmd))
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if p.returncode != 0:
        log("make failed (status %d); samples without a binary get no fgc column:\n%s"
            % (p.returncode, (p.stdout + p.stderr)[-3000:]))


def main():
    args = parse_args()
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        sys.exit("peers.py: no CUDA device (use --device cpu --no-fgc to try the script without one)")
    names = [n for n in args.samples.split(",") if n] or sorted(
        os.path.basename(p)[:-3] for p in glob.glob(os.path.join(ROOT, "samples", "*.fg")))
    os.makedirs(args.out, exist_ok=True)
    os.makedirs(args.work, exist_ok=True)
    if not args.no_fgc and not args.no_make:
        build(args, names)
    clock = Clock(args.device)
    copy_bw, mm_rate = copy_bandwidth(args.device, clock), matmul_rate(args.device, clock)
    env = environment(args.device, copy_bw, mm_rate, args.fgc)
    log("ceilings: copy %.0f GB/s, bf16 matmul %.0f TFLOP/s" % (env["copy_gbs"], env["matmul_tflops"]))
    rows = []
    for name in names:
        log("== %s" % name)
        try:
            row = bench_sample(name, args, clock, copy_bw, mm_rate)
        except Exception as e:  # one sample's failure must not lose the others' rows
            row = {"sample": name, "error": first_line(e)}
            log("%s failed:\n%s" % (name, e))
        if not args.no_compile:
            torch._dynamo.reset()
        if clock.cuda:
            torch.cuda.empty_cache()  # this sample's tensors died with bench_sample
        rows.append(row)
        log(table([row]).splitlines()[-1])
    md = "# fgc and its peers\n\n%s\n\n%s\n" % (table(rows), notes(env, args))
    with open(os.path.join(args.out, "peers.md"), "w") as f:
        f.write(md)
    with open(os.path.join(args.out, "peers.json"), "w") as f:
        json.dump({"environment": env, "rows": rows}, f, indent=1)
    log("\n" + md)
    plot(rows, os.path.join(args.out, "peers.png"), env)


if __name__ == "__main__":
    main()
