#!/usr/bin/env python3
"""
peers.py - fgc against PyTorch eager and torch.compile on the samples, in
one run, in one process, on one GPU, with the floors of
shared/design/performance.md.

    python3 bench/peers.py [--fgc build/fgc] [--out out/peers] [--samples NAME,...]
                           [--runs N] [--rounds R] [--gap S] [--sustain S] [--seed S]

For each samples/NAME.fg at its default sizes:
  1. `fgc emit-torch` writes the graph as a PyTorch module (docs/peers.md);
     its make_inputs(seed) draws on the GPU the very inputs that `fgc run
     --seed` draws, and `fgc compile --lib` builds the model as a library,
     loaded with python/fgc (fgc.load: a torch.library op on the current
     stream), so all three run on the same tensors in this process;
  2. the module's forward runs in float64 (reference=True: the reference
     interpreter's semantics), and eager PyTorch, torch.compile and fgc
     are each compared with it under testing.md's gates, per output and
     saved value;
  3. all three are timed alike, with the same CUDA events and schedule, in
     two regimes: cold (each call after an idle gap of --gap seconds, from
     an idle GPU to the call's end; the three take turns call by call) and
     sustained (back to back for at least --sustain seconds, the time per
     call; the three take turns, R rounds each, in reverse order every
     other round, so that none always follows the same one); the SM
     clock, the board's power draw and the clock-event (throttle) reasons
     are read through NVML after each cold call and all along each
     sustained run (sweep.py adds a third for its small cells, replayed:
     each call captured --replay-calls times in a CUDA graph, the graphs
     timed as sustained, the time per call);
  4. floor = max(BYTES / copy bandwidth, FLOPS / bf16 matmul rate), both
     ceilings measured at the start of this run (a 512 MiB device-to-device
     copy counting bytes read plus written; an 8192^3 bf16 torch.matmul).

torch.compile uses the default mode, and mode="max-autotune-no-cudagraphs"
for samples with a matmul; none of the three replays a CUDA graph.  Writes
OUT/peers.md (the two tables and their notes), OUT/peers.json (every figure)
and OUT/peers.png (when matplotlib is there), and prints the tables.
--device cpu --no-fgc runs the same flow without a GPU (timings from the wall
clock), to try the script itself.
"""
import argparse
import concurrent.futures
import ctypes
import gc
import glob
import hashlib
import importlib.util
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))

# testing.md's tolerances as runtime/check.c applies them:
# rtol, atol, RMSE-gate m, the dtype's unit roundoff
OUTLIER_K = 10.0  # runtime/fgrt.h's FGRT_OUTLIER_K
TOLERANCE = {
    torch.float32: (1.3e-6, 1e-5, 2.0, 2.0**-24),  # rtol 1e-5 for kind "transcendental"
    torch.float16: (1e-3, 1e-5, 3.0, 2.0**-11),
    torch.bfloat16: (1.6e-2, 1e-5, 3.0, 2.0**-8),
}
if hasattr(torch, "float8_e4m3fn"):     # runtime/check.c's
    TOLERANCE[torch.float8_e4m3fn] = (0.125, 2.0**-10, 3.0, 2.0**-4)
    TOLERANCE[torch.float8_e5m2] = (0.25, 2.0**-17, 3.0, 2.0**-3)


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


class Nvml:
    """The SM clock, the board's power draw and the clock-event (throttle)
    reasons of the GPU, from NVML (libnvidia-ml, the driver's); None
    readings where it is missing.  Under the power cap (reason
    sw-power-cap) a kernel's clock is what the cap leaves it: the watts
    say whether two kernels at unlike clocks both drew the cap."""

    REASONS = {0x1: "idle", 0x2: "app-clocks", 0x4: "sw-power-cap", 0x8: "hw-slowdown", 0x10: "sync-boost",
               0x20: "sw-thermal", 0x40: "hw-thermal", 0x80: "hw-power-brake", 0x100: "display-clocks"}

    def __init__(self, device):
        self.lib = None
        if not device.startswith("cuda"):
            return
        try:
            lib = ctypes.CDLL("libnvidia-ml.so.1")
            self.handle = ctypes.c_void_p()
            visible = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0]
            index = int(visible) if visible.isdigit() else 0
            if lib.nvmlInit_v2() == 0 and lib.nvmlDeviceGetHandleByIndex_v2(index, ctypes.byref(self.handle)) == 0:
                self.lib = lib
                self.reasons_fn = getattr(lib, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
                    lib.nvmlDeviceGetCurrentClocksThrottleReasons
        except (OSError, AttributeError):
            self.lib = None

    def sample(self):
        """(SM clock in MHz, reason bits, board power in W), or (None, 0,
        None)."""
        if not self.lib:
            return None, 0, None
        mhz, reasons, mw = ctypes.c_uint(), ctypes.c_ulonglong(), ctypes.c_uint()
        self.lib.nvmlDeviceGetClockInfo(self.handle, 1, ctypes.byref(mhz))   # NVML_CLOCK_SM
        self.reasons_fn(self.handle, ctypes.byref(reasons))
        watts = mw.value / 1e3 if self.lib.nvmlDeviceGetPowerUsage(self.handle, ctypes.byref(mw)) == 0 else None
        return mhz.value, reasons.value, watts

    def watch(self):
        """A context in which a thread samples every 2 ms; .samples after."""
        nvml = self

        class Watch:
            def __enter__(self):
                self.samples, self.stop = [], threading.Event()
                self.thread = threading.Thread(target=self.run)
                self.thread.start()
                return self

            def run(self):
                while not self.stop.is_set():
                    self.samples.append(nvml.sample())
                    time.sleep(0.002)

            def __exit__(self, *exc):
                self.stop.set()
                self.thread.join()
        return Watch()

    @classmethod
    def summary(cls, samples):
        """{"mhz": median SM clock, "mhz_min", "mhz_max", "watts": median
        power, "watts_max", "reasons": the names seen} of (mhz, bits,
        watts) samples."""
        mhz = [m for m, _, _ in samples if m]
        watts = [w for _, _, w in samples if w]
        bits = 0
        for _, b, _ in samples:
            bits |= b
        names = [name for bit, name in sorted(cls.REASONS.items()) if bits & bit and bit != 0x1]
        return {"mhz": statistics.median(mhz) if mhz else None, "mhz_min": min(mhz) if mhz else None,
                "mhz_max": max(mhz) if mhz else None, "watts": statistics.median(watts) if watts else None,
                "watts_max": max(watts) if watts else None, "reasons": names}


def time_cold(clock, nvml, fns, runs, gap):
    """Cold: per fn, the median of `runs` calls, each after `gap` seconds of
    an idle GPU, timed from idle to the call's end; the fns take turns call
    by call.  With the SM clock read right after each call."""
    times = {k: [] for k in fns}
    samples = {k: [] for k in fns}
    clock.sync()
    for _ in range(runs):
        for k, fn in fns.items():
            time.sleep(gap)
            times[k].append(clock.time(fn))
            samples[k].append(nvml.sample())
    return ({k: statistics.median(v) for k, v in times.items()},
            {k: Nvml.summary(v) for k, v in samples.items()})


def time_sustained(clock, nvml, fns, rounds, seconds, estimate):
    """Sustained: per fn, the time per call of back-to-back calls for at
    least `seconds` (CUDA events around the whole run, n calls sized from
    the cold time `estimate`), the median of `rounds` such runs, the fns
    taking turns run by run, in reverse order every other round (a run
    inherits the heat and clock its predecessor left).  With the SM clock
    and the power sampled all along."""
    per = {k: [] for k in fns}
    samples = {k: [] for k in fns}
    for r in range(rounds):
        for k in (list(fns) if r % 2 == 0 else list(fns)[::-1]):
            fn = fns[k]
            n = max(10, int(math.ceil(seconds * 1e3 / max(estimate[k], 1e-3))))
            fn()
            clock.sync()

            def run():          # each result dropped as the next call starts
                for _ in range(n):
                    fn()
            with nvml.watch() as w:
                ms = clock.time(run)
            per[k].append(ms / n)
            samples[k] += w.samples
    return ({k: statistics.median(v) for k, v in per.items()},
            {k: Nvml.summary(v) for k, v in samples.items()})


def captured(fns, row, calls):
    """Each fn's call captured `calls` times into one CUDA graph (as a
    server or a captured model runs it: no host work between the kernels),
    as the graph's replay; a peer whose call cannot be captured is left
    out, its error in row[NAME_replayed_error].  Each call's result is
    dropped as the next starts."""
    graphs = {}
    for name, fn in fns.items():
        try:
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(3):
                    fn()
            torch.cuda.current_stream().wait_stream(side)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                for _ in range(calls):
                    fn()
            g.replay()
            torch.cuda.synchronize()
            graphs[name] = g.replay
        except Exception as e:
            row[name + "_replayed_error"] = first_line(e)
    return graphs


def time_replayed(clock, nvml, fns, row, args, estimate):
    """The replayed regime (sweep.py's small cells, attention.py's short
    rows): each fn's call captured args.replay_calls times into one graph,
    the graphs timed as sustained, the time per call.  A graph of one call
    times the host's replays as much as the kernels where a kernel is as
    short as a launch (docs/performance.md v45: a 1.6 us kernel replayed
    in 3-5 us), so the calls are captured several to a graph, as
    Triton's do_bench_cudagraph does; row["replay_calls"] says how many."""
    n = args.replay_calls
    row["replay_calls"] = n
    graphs = captured(fns, row, n)
    times, clocks = time_sustained(clock, nvml, graphs, args.rounds, args.sustain,
                                   {k: estimate[k] * n for k in graphs})
    return {k: t / n for k, t in times.items()}, clocks


def replay_words(rows):
    """The replayed rows' graphs in words: "20 calls a graph" (rows timed
    before --replay-calls captured one)."""
    n = sorted({r.get("replay_calls", 1) for r in rows})
    return "%s call%s a graph" % (" or ".join(map(str, n)), "" if n == [1] else "s")


def same_size_copy(nbytes, device):
    """A call of one plain elementwise kernel (ATen's torch.neg over f32)
    that reads nbytes / 2 and writes as many: the replayed regime's
    measured floor of a cell of nbytes, where one launch, a memory
    latency and the grid's start and end, not the bandwidth, bound a
    kernel (the bytes at copy_bandwidth's rate take less than a launch)."""
    n = max(1, nbytes // 8)
    src = torch.ones(n, dtype=torch.float32, device=device)
    dst = torch.empty_like(src)
    return lambda: torch.neg(src, out=dst)


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

# Elements a step of a check takes: each float64 temporary of a step is
# 128 MiB, so a result of 2^30 elements is checked beside its float64
# reference on an 80 GB card (taken whole, the gate's temporaries were
# several times the reference, v44).
CHUNK = 1 << 24


def gate(actual, ref64, dtype, kind, round_to, chunk=CHUNK):
    """testing.md's verdict on one result: (True, detail) or (False, why).
    ref64 is the float64 reference (for i32 and bool: the exact values);
    kind is "elementwise", "transcendental" (elementwise, f32's rtol 1e-5)
    or "rmse" (the module's RESULTS says which); the RMSE gate has
    runtime/check.c's outlier bound.  Taken `chunk` elements at a time
    (float_verdict)."""
    if actual.dtype != dtype:
        return False, "dtype %s, want %s" % (actual.dtype, dtype)
    if tuple(actual.shape) != tuple(ref64.shape):
        return False, "shape %s, want %s" % (tuple(actual.shape), tuple(ref64.shape))
    parts = slices(actual, ref64, chunk)
    if not dtype.is_floating_point:
        bad = sum(int((x != r.to(dtype)).sum()) for x, r in parts)
        return bad == 0, "exact" if bad == 0 else "%d of %d differ" % (bad, actual.numel())
    rtol, atol, m, unit = TOLERANCE[dtype]
    if kind == "transcendental" and dtype == torch.float32:
        rtol = 1e-5
    return float_verdict(parts, (rtol, atol, m, unit), kind == "rmse", lambda r: round_to(r, dtype))


def slices(actual, ref64, chunk):
    """(actual, ref64) as pairs of flat views of `chunk` elements."""
    a, e = actual.reshape(-1), ref64.reshape(-1)
    return [(a[i:i + chunk], e[i:i + chunk]) for i in range(0, a.numel(), chunk)]


def float_verdict(parts, tol, rmse_gate, rounded):
    """gate's verdict on a floating-point result given as (actual, ref64)
    pairs of flat slices, one slice in memory at a time: the elementwise
    gate in one pass, or the RMSE gate in two (its outlier bound needs the
    whole result's RMS first).  tol is TOLERANCE's (rtol, atol, m, unit);
    rounded(r) is r rounded once to the dtype."""
    rtol, atol, m, unit = tol
    misplaced = 0       # NaN or Inf where the rounded reference has none, or the other way

    def view(x, e, first=True):     # a slice in float64, its reference rounded; the first pass counts
        nonlocal misplaced
        a, r = x.to(torch.float64), rounded(e)
        if first:
            misplaced += int((torch.isnan(a) != torch.isnan(r)).sum())
            misplaced += int((torch.where(torch.isinf(a), a, 0.0) != torch.where(torch.isinf(r), r, 0.0)).sum())
        return a, r

    def finite(x, e, first):        # the RMSE gate's view: where all three are finite, e there
        a, r = view(x, e, first)
        fin = torch.isfinite(a) & torch.isfinite(r) & torch.isfinite(e)
        return a, r, fin, torch.where(fin, e, 0.0)
    if rmse_gate:
        cnt, s_a, s_r, s_e = 0, 0.0, 0.0, 0.0
        for x, e in parts:
            a, r, fin, e = finite(x, e, True)
            cnt += int(fin.sum())
            s_a += float(torch.square(torch.where(fin, a - e, 0.0)).sum())
            s_r += float(torch.square(torch.where(fin, r - e, 0.0)).sum())
            s_e += float(torch.square(e).sum())
        cnt = max(cnt, 1)
        rmse, rmse_r, rms_e = math.sqrt(s_a / cnt), math.sqrt(s_r / cnt), math.sqrt(s_e / cnt)
        limit = m * max(rmse_r, unit * rms_e / math.sqrt(3.0)) + atol
        # the outlier bound: no element beyond K times the gate at its magnitude
        outliers = 0
        for x, e in parts:
            a, _, fin, e = finite(x, e, False)
            mag = torch.clamp(e.abs() / rms_e, min=1.0) if rms_e > 0 else 1.0
            allowed = atol + OUTLIER_K * (limit - atol) * mag
            outliers += int((torch.where(fin, (a - e).abs(), 0.0) > allowed).sum())
        ok = rmse <= limit and outliers == 0
        text = "rmse %.3g %s %.3g%s" % (rmse, "<=" if rmse <= limit else ">", limit,
                                         ", %d beyond the outlier bound" % outliers if outliers else "")
    else:
        bad, worst = 0, 0.0
        for x, e in parts:
            a, r = view(x, e)
            fin = torch.isfinite(a) & torch.isfinite(r)
            err = torch.where(fin, (a - r).abs(), 0.0)
            bad += int((err > atol + rtol * r.abs()).sum())
            worst = max(worst, float(err.max()))
        ok = bad == 0
        text = "max abs err %.3g, %d outside rtol %g" % (worst, bad, rtol)
    return ok and not misplaced, text + (", NaN/Inf misplaced" if misplaced else "")


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

def case(name, args):
    """A case of --samples: NAME (samples/NAME.fg) or a path ending in .fg,
    optionally followed by :DIM=V,DIM=V (its sizes) and @FLAG,FLAG (fgc
    compile flags without their dashes: @accurate-math); its source, its -D
    flags (the test dims with --small), a name for files, and the compile
    flags."""
    name, _, extra = name.partition("@")
    name, _, dims = name.partition(":")
    source = os.path.join(ROOT, name) if name.endswith(".fg") else os.path.join(ROOT, "samples", name + ".fg")
    flags = [f for d in dims.split(",") if d for f in ("-D", d)]
    if getattr(args, "small", False) and not flags:
        flags = test_dims(source)
    cflags = [f for f in extra.split(",") if f]
    stem = os.path.basename(name)[:-3] if name.endswith(".fg") else name
    return (source, flags, "_".join([stem] + [d.replace("=", "") for d in dims.split(",") if d] + cflags),
            ["--" + f for f in cflags])


def lib_key(fgc, source, flags):
    """The digest of what a library is built from: fgc, the runtime's files
    (FGC_RUNTIME or runtime/), the graph's source and the flags."""
    rt = os.environ.get("FGC_RUNTIME") or os.path.join(ROOT, "runtime")
    h = hashlib.sha256()
    for path in [fgc, source] + sorted(p for p in glob.glob(os.path.join(rt, "*")) if os.path.isfile(p)):
        h.update(os.path.basename(path).encode() + b"\0")
        with open(path, "rb") as f:
            h.update(f.read())
    h.update("\0".join(flags).encode())
    return h.hexdigest()


def compile_lib(fgc, source, lib, flags=()):
    """`fgc compile SOURCE --lib -o LIB FLAGS`, unless LIB was built from the
    same bytes (lib_key, kept in LIB.key): by content, not by time, so that
    libraries built on one machine and carried to another with the tree are
    not built again there.  LIB, or a RuntimeError with fgc's last words."""
    flags = list(flags)
    key, stamp = lib_key(fgc, source, flags), lib + ".key"
    if os.path.exists(lib) and os.path.exists(stamp):
        with open(stamp) as f:
            if f.read().strip() == key:
                return lib
    os.makedirs(os.path.dirname(lib), exist_ok=True)
    if os.path.exists(stamp):
        os.remove(stamp)        # the old key never vouches for a library built since
    p = subprocess.run([fgc, "compile", source, "--lib", "-o", lib] + flags,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        return RuntimeError(p.stdout.strip()[-2000:] or "fgc failed")
    with open(stamp, "w") as f:
        f.write(key + "\n")
    return lib


def build_libs(args, names, jobs=None):
    """`fgc compile --lib` of every case (test dims with --small), `jobs` at
    a time (default: all at once); per name, the library's path, or the
    error (compile_lib: a library built from the same bytes is kept)."""
    def one(name):
        source, dims, stem, cflags = case(name, args)
        lib = os.path.join(args.work, "lib", stem, "lib%s.so" % os.path.basename(source)[:-3])
        return compile_lib(args.fgc, source, lib, dims + cflags)
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs or max(1, len(names))) as pool:
        return dict(zip(names, pool.map(one, names)))


def built(libs, work):
    """--build-only's end: each library that fgc failed to build, named;
    the exit status (1 when any failed)."""
    failed = {n: l for n, l in libs.items() if isinstance(l, Exception)}
    for name, err in failed.items():
        log("%s: fgc failed:\n%s" % (name, err))
    log("%d of %d libraries built in %s" % (len(libs) - len(failed), len(libs), work))
    return 1 if failed else 0


def fgc_results(mod, model, outs):
    """The model's results by the module's RESULTS keys ("saved.NAME" for a
    saved value; one that is also an output is the output's tensor)."""
    import fgc
    outs = outs if isinstance(outs, tuple) else (outs,)
    got = {(t.name if t.role & fgc._abi.OUTPUT else "saved." + t.name): o for t, o in zip(model.results, outs)}
    for key in mod.RESULTS:
        if key.startswith("saved.") and key not in got and key[6:] in got:
            got[key] = got[key[6:]]
    return got


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
    """The case's module, written by fgc emit-torch and imported."""
    source, dims, stem, _ = case(name, args)
    module = os.path.join(work, stem + ".py")
    subprocess.run([args.fgc, "emit-torch", source, "-o", module] + dims, check=True)
    return load_module(module)


def load_rows(path):
    """A table's JSON written before by save_rows ({"environment": None,
    "rows": []} when there is none): what --resume goes on from."""
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        return {"environment": None, "rows": []}


def save_rows(path, data):
    """The table's JSON, replaced whole (a call cut short leaves the last
    complete one)."""
    with open(path + ".tmp", "w") as f:
        json.dump(data, f, indent=1)
    os.replace(path + ".tmp", path)


def first_line(e):
    return "error: %s" % (str(e).strip().splitlines() or [type(e).__name__])[0][:160]


def compile_peer(mod, args_in, ref, row, key="compile", mode=None):
    """torch.compile'd forward, checked; None when it fails to compile.
    Without a mode: the default, or max-autotune-no-cudagraphs with a
    matmul.  The row's fields take the prefix `key`."""
    mode = mode or ("max-autotune-no-cudagraphs" if mod.FLOPS else None)
    row[key + "_mode"] = mode or "default"
    try:
        compiled = torch.compile(mod.forward, mode=mode)
        t0 = time.time()
        row[key + "_check"] = check_all(compiled(*args_in), ref, mod)
        row[key + "_s"] = round(time.time() - t0, 1)
        return compiled
    except Exception as e:  # reported in the row; eager and fgc still run
        row[key + "_check"] = first_line(e)
        log("torch.compile (%s) failed: %s" % (mode or "default", e))
        return None


LOADED = []     # the fgc models bench_sample loaded (free_device_memory releases them)


def free_device_memory(device):
    """What earlier rows left on the device, freed before the next: their
    fgc models' arenas (fgc.load keeps a model for the process's life),
    torch.compile's code and reduce-overhead's CUDA graphs with their
    memory pool (reset_cudagraph_trees), and the caching allocator's free
    blocks, which fgc's cudaMalloc cannot take.  When the models kept
    their arenas and the gates their float64 temporaries, a sweep's 32768
    x 32768 cells, after 82 others, found 0.9-6.4 GiB of 79 free
    (docs/performance.md v43, v44)."""
    for model in LOADED:
        model.release()
    LOADED.clear()
    if device.startswith("cuda"):
        torch._dynamo.reset()
        try:    # private: reduce-overhead's graphs and pool, should torch._dynamo.reset leave them
            from torch._inductor.cudagraph_trees import reset_cudagraph_trees
            reset_cudagraph_trees()
        except ImportError:
            pass
    cached_blocks_back(device)


def cached_blocks_back(device):
    """The caching allocator's free blocks (after a collection) back to the
    driver, where fgc's arena, a cudaMalloc, can take them."""
    gc.collect()
    if device.startswith("cuda"):
        torch.cuda.empty_cache()


def bench_sample(name, args, clock, nvml, copy_bw, mm_rate, lib):
    """One row of the tables: floor, checks and times of the three, cold
    and sustained."""
    free_device_memory(args.device)
    row = {"sample": name}
    work = os.path.join(args.work, case(name, args)[2])
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
    # a second mode, as a peer of its own ("compile_ro": sweep.py's
    # reduce-overhead, which replays CUDA graphs)
    ro = getattr(args, "compile_ro", None)
    compiled_ro = None if args.no_compile or not ro else compile_peer(mod, inputs, ref, row, "compile_ro", ro)
    if compiled_ro:
        fns["compile_ro"] = lambda: compiled_ro(*inputs)
    if isinstance(lib, Exception):
        row["fgc_check"] = first_line(lib)
    elif lib:
        try:
            import fgc
            model = fgc.load(lib)
            LOADED.append(model)
            cached_blocks_back(args.device)     # the peers' checks' leftovers, before fgc's arena
            row["fgc_check"] = check_all(fgc_results(mod, model, model(*inputs)), ref, mod)
            fns["fgc"] = lambda: model(*inputs)
        except Exception as e:  # reported in the row; eager and torch.compile still run
            row["fgc_check"] = first_line(e)
            log("fgc failed: %s" % e)
    ref.clear()  # the float64 results can be large: gone before the timing
    for fn in fns.values():
        for _ in range(args.warmup):
            fn()
    cold, cold_clock = time_cold(clock, nvml, fns, args.runs, args.gap)
    sus, sus_clock = time_sustained(clock, nvml, fns, args.rounds, args.sustain, cold)
    regimes = [("cold", cold, cold_clock), ("sustained", sus, sus_clock)]
    # replayed (sweep.py's cells whose floor is under args.replay_floor_ms):
    # the calls captured in a CUDA graph and replayed back to back, where
    # the host's share of a call would otherwise be most of its time, for
    # every peer.  Not reduce-overhead, which replays its own graphs of
    # the default mode's kernels.  A plain kernel over the cell's bytes
    # replays beside them ("copy", same_size_copy): what one launch moving
    # that much reaches, where the floor (the bytes at a large copy's
    # bandwidth) is under a launch; its replays are sized as the peers'
    # are, by a cold call's time (eager's: sized by the floor, 100,000
    # replays of a small cell, ~2.4 s, v46)
    if clock.cuda and floor < getattr(args, "replay_floor_ms", 0):
        replayed = {k: fn for k, fn in fns.items() if k != "compile_ro"}
        replayed["copy"] = same_size_copy(mod.BYTES, args.device)
        regimes.append(("replayed",) + time_replayed(clock, nvml, replayed, row, args, dict(cold, copy=cold["eager"])))
    for regime, times, clocks in regimes:
        for k in times:
            row["%s_%s_ms" % (regime, k)] = times[k]
            row["%s_%s_clock" % (regime, k)] = clocks[k]
        if "fgc" in times:
            if row["floor_kind"] != "launch":
                row["%s_fgc_pct_of_floor" % regime] = 100.0 * floor / times["fgc"]
            if "copy" in times:
                row["%s_fgc_pct_of_copy" % regime] = 100.0 * times["copy"] / times["fgc"]
            for k in ("compile", "compile_ro"):
                if k in times:
                    row["%s_fgc_speedup_vs_%s" % (regime, k)] = times[k] / times["fgc"]
    return row


# ----------------------------------------------------------------- report

COLUMNS = [
    ("sample", "sample", "%s"),
    ("floor_ms", "floor ms", "%.4g"),
    ("R_eager_ms", "eager ms", "%.4g"),
    ("R_compile_ms", "torch.compile ms", "%.4g"),
    ("R_fgc_ms", "fgc ms", "%.4g"),
    ("R_fgc_pct_of_floor", "fgc % of floor", "%.0f%%"),
    ("R_fgc_speedup_vs_compile", "fgc speedup vs compile", "%.2fx"),
    ("clocks", "SM MHz eager / compile / fgc", "%s"),
    ("watts", "W eager / compile / fgc", "%s"),
    ("reasons", "clock events", "%s"),
    ("checks", "agree with the f64 reference (eager / compile / fgc)", "%s"),
]


def cell(row, regime, key, fmt):
    key = key.replace("R_", regime + "_")
    if key == "checks":
        return " / ".join(row.get(k, "-") for k in ("eager_check", "compile_check", "fgc_check"))
    if key in ("clocks", "watts", "reasons"):
        c = [row.get("%s_%s_clock" % (regime, k)) for k in ("eager", "compile", "fgc")]
        if key != "reasons":
            q = "mhz" if key == "clocks" else "watts"
            return " / ".join("%.0f" % x[q] if x and x.get(q) else "-" for x in c)
        seen = sorted({r for x in c if x for r in x["reasons"]})
        return ", ".join(seen) or "none"
    if key.endswith("fgc_pct_of_floor") and row.get("floor_kind") == "launch":
        return "launch-bound"
    if key not in row:
        return row.get("error", "-") if key.endswith("eager_ms") else "-"
    return fmt % row[key]


def table(rows, regime):
    lines = ["| " + " | ".join(title for _, title, _ in COLUMNS) + " |",
             "|" + "---|" * len(COLUMNS)]
    for row in rows:
        lines.append("| " + " | ".join(cell(row, regime, k, f) for k, _, f in COLUMNS) + " |")
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
        "- the three, in this process, on the same tensors: eager and torch.compile run the module `fgc "
        "emit-torch` writes (composites as torch.softmax, F.layer_norm, F.rms_norm); torch.compile: default "
        "mode, mode=\"max-autotune-no-cudagraphs\" for samples with a matmul; fgc runs the model `fgc "
        "compile --lib` built, through python/fgc (fgc.load, a torch.library op on the current stream). "
        "None replays a CUDA graph; each is timed with the same CUDA events around the same calls.",
        "- cold: each call after %.0f ms of an idle GPU, timed from idle to its end, the three taking "
        "turns call by call; the median of %d calls each. sustained: back-to-back calls for at least "
        "%.0f ms, events around the whole run, the time per call; the three taking turns, the median of "
        "%d runs each. SM MHz: the median SM clock NVML reported right after each cold call, or all along "
        "the sustained runs; clock events: NVML's clock-event (throttle) reasons seen, idle left out."
        % (args.gap * 1e3, args.runs, args.sustain * 1e3, args.rounds),
        "- fgc % of floor = floor / fgc time; speedup = torch.compile time / fgc time, in the same regime.",
        "- agree: each output and @save value against the float64 reference (the module run with "
        "reference=True, the interpreter's semantics) under testing.md's gates: elementwise "
        "(|a - e| <= atol + rtol |e|) or, for values fed by a reduction, a matmul, a composite or a "
        "value eager PyTorch rounds, the RMSE gate. All three run on the same inputs: the module's "
        "make_inputs(%d) draws the bits `fgc run --seed %d` draws." % (args.seed, args.seed),
    ])


SERIES = [("sustained_eager_ms", "PyTorch eager", "tab:blue"), ("sustained_compile_ms", "torch.compile", "tab:orange"),
          ("sustained_fgc_ms", "fgc", "tab:green")]


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
    fig.suptitle("fgc and its peers on %s, sustained: copy %.0f GB/s, bf16 matmul %.0f TFLOP/s"
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
    p.add_argument("--out", default=os.path.join(ROOT, "out", "peers"), help="where the tables and plot go")
    p.add_argument("--work", default="/tmp/fgc-peers", help="modules, libraries and logs")
    p.add_argument("--samples", default="",
                   help="cases (default: every samples/*.fg), separated by spaces (or commas between\n"
                        "cases without sizes or flags): NAME (samples/NAME.fg) or PATH.fg, each optionally\n"
                        "followed by :DIM=V,DIM=V (sizes, as -D) and @FLAG,FLAG (fgc compile flags\n"
                        "without their dashes: bias_gelu_f16@accurate-math)")
    timing_options(p, runs=20, rounds=3, sustain=0.2, warmup=5)
    p.add_argument("--build-only", action="store_true",
                   help="build the samples' libraries in --work and stop (no GPU needed; a later run on the\n"
                        "GPU machine with the same --work, fgc and runtime keeps them: compile_lib)")
    p.add_argument("--small", action="store_true",
                   help="each sample at its `# test-dims:` sizes: a quick check that the three\n"
                        "agree; its timings mean little")
    return timing_checked(p.parse_args())


def timing_options(p, runs, rounds, sustain, warmup):
    """The options of the harness's schedule and competitors, with these
    defaults (peers.py's and sweep.py's)."""
    p.add_argument("--runs", type=int, default=runs, help="cold calls of each competitor (default %d)" % runs)
    p.add_argument("--rounds", type=int, default=rounds, help="sustained runs of each competitor (default %d)" % rounds)
    p.add_argument("--gap", type=float, default=0.05, help="idle seconds before each cold call (default 0.05)")
    p.add_argument("--sustain", type=float, default=sustain,
                   help="seconds of each sustained run (default %g)" % sustain)
    p.add_argument("--warmup", type=int, default=warmup, help="untimed calls before timing (default %d)" % warmup)
    p.add_argument("--replay-calls", type=int, default=20,
                   help="calls captured in one CUDA graph in the replayed regime (default 20)")
    p.add_argument("--seed", type=int, default=7, help="the inputs' seed (default 7)")
    p.add_argument("--device", default="cuda", help="cuda, or cpu to try the script without a GPU")
    p.add_argument("--no-fgc", action="store_true", help="time PyTorch alone")
    p.add_argument("--no-compile", action="store_true", help="skip torch.compile")


def timing_checked(args):
    args.rounds = max(1, args.rounds)
    args.replay_calls = max(1, args.replay_calls)
    if not hasattr(torch, "compile"):
        args.no_compile = True
    return args


def main():
    args = parse_args()
    if not args.build_only and args.device.startswith("cuda") and not torch.cuda.is_available():
        sys.exit("peers.py: no CUDA device (use --device cpu --no-fgc to try the script without one)")
    names = [n for w in args.samples.split() for n in (w.split(",") if ":" not in w and "@" not in w else [w]) if n] or sorted(
        os.path.basename(p)[:-3] for p in glob.glob(os.path.join(ROOT, "samples", "*.fg")))
    os.makedirs(args.out, exist_ok=True)
    os.makedirs(args.work, exist_ok=True)
    libs = {} if args.no_fgc else build_libs(args, names)
    if args.build_only:
        sys.exit(built(libs, args.work))
    clock = Clock(args.device)
    nvml = Nvml(args.device)
    copy_bw, mm_rate = copy_bandwidth(args.device, clock), matmul_rate(args.device, clock)
    env = environment(args.device, copy_bw, mm_rate, args.fgc)
    log("ceilings: copy %.0f GB/s, bf16 matmul %.0f TFLOP/s" % (env["copy_gbs"], env["matmul_tflops"]))
    rows = []
    for name in names:
        log("== %s" % name)
        try:
            row = bench_sample(name, args, clock, nvml, copy_bw, mm_rate, libs.get(name))
        except Exception as e:  # one sample's failure must not lose the others' rows
            row = {"sample": name, "error": first_line(e)}
            log("%s failed:\n%s" % (name, e))
        rows.append(row)
        for regime in ("cold", "sustained"):
            log(regime + ": " + table([row], regime).splitlines()[-1])
    md = "# fgc and its peers\n\n## Cold\n\n%s\n\n## Sustained\n\n%s\n\n%s\n" % (
        table(rows, "cold"), table(rows, "sustained"), notes(env, args))
    with open(os.path.join(args.out, "peers.md"), "w") as f:
        f.write(md)
    with open(os.path.join(args.out, "peers.json"), "w") as f:
        json.dump({"environment": env, "rows": rows}, f, indent=1)
    log("\n" + md)
    plot(rows, os.path.join(args.out, "peers.png"), env)


if __name__ == "__main__":
    main()
