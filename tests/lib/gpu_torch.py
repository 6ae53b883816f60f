#!/usr/bin/env python3
"""gpu_torch.py - compiled models as libraries inside PyTorch, on a GPU
(tests/run-lib.sh checks the libraries without one).

    python3 tests/lib/gpu_torch.py --fgc FGC [--work DIR] [--samples a,b] [--seed S]

For every samples/*.fg at its `# test-dims:` sizes: `fgc compile --lib` and
`fgc emit-torch`, then, with the module's make_inputs(seed) on the GPU:
  1. eager: fgc.load(lib)(*inputs) matches the float64 reference under
     testing.md's gates (bench/peers.py's), as eager PyTorch must too;
  2. CUDA graph: captured by torch.cuda.graph after a warm-up on a side
     stream, replayed on other inputs copied into the static ones: matches
     those inputs' reference;
  3. torch.compile(fullgraph=True) of a function that calls it between
     PyTorch ops: matches;
  4. two threads on two streams, each its own seed, 10 calls each at once:
     every call equals its seed's single-threaded result bit for bit;
  5. a wrong dtype, shape, device or a non-contiguous tensor is refused
     with an error that names the tensor;
  6. model.release() takes no memory and gives back some in at least one
     sample (every thread's arena and scratch), and the call after it
     matches.
One PASS/FAIL line per check; exit status 1 when any failed.  A library
already in --work (DIR/NAME/libNAME.so) built from the same fgc, runtime
and source is kept (peers.compile_lib): built beforehand on a machine
without a GPU, where nvcc's minutes cost no device time, and carried.
"""
import argparse
import os
import subprocess
import sys
import threading
import traceback

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import fgc  # noqa: E402
from peers import check_all, compile_lib, fgc_results, load_module, test_dims  # noqa: E402

failures = []
released = []   # bytes each sample's model.release() gave back


def verdict(name, ok, why=""):
    print("%s %s%s" % ("PASS" if ok else "FAIL", name, (": " + why) if why else ""), flush=True)
    if not ok:
        failures.append(name)


def reference(mod, inputs):
    ref = mod.forward(*[t.to(torch.float64) if t.dtype.is_floating_point else t for t in inputs], reference=True)
    return ref


def check(mod, model, inputs, outs):
    got = fgc_results(mod, model, outs)
    ref = reference(mod, inputs)
    wanted = {k: v for k, v in ref.items() if k in got}
    missing = [k for k in ref if k not in got]
    if missing:
        return "FAIL %s: not among the library's results %s" % (missing, list(got))
    sub = type("M", (), {"RESULTS": {k: mod.RESULTS[k] for k in wanted}, "_round": mod._round})
    return check_all(got, wanted, sub)


def sample(name, args):
    source = os.path.join(ROOT, "samples", name + ".fg")
    dims = test_dims(source)
    work = os.path.join(args.work, name)
    os.makedirs(work, exist_ok=True)
    lib = compile_lib(args.fgc, source, os.path.join(work, "lib%s.so" % name), dims)
    if isinstance(lib, Exception):
        raise lib
    subprocess.run([args.fgc, "emit-torch", source, "-o", os.path.join(work, name + ".py")] + dims, check=True)
    mod = load_module(os.path.join(work, name + ".py"))
    model = fgc.load(lib)
    dev = "cuda"
    inputs = list(mod.make_inputs(args.seed, dev).values())

    # 1. eager, against the reference and as eager PyTorch
    v = check(mod, model, inputs, model(*inputs))
    verdict("%s eager" % name, v == "ok", v)
    torch_v = check_all(mod.forward(*inputs), reference(mod, inputs), mod)
    verdict("%s eager PyTorch on the same inputs" % name, torch_v == "ok", torch_v)

    # 2. a CUDA graph: warm-up on a side stream, capture, replay on new inputs
    static = [t.clone() for t in inputs]
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        model(*static)
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        static_out = model(*static)
    other = list(mod.make_inputs(args.seed + 1, dev).values())
    for s, o in zip(static, other):
        s.copy_(o)
    g.replay()
    torch.cuda.synchronize()
    v = check(mod, model, other, static_out)
    verdict("%s in a CUDA graph, replayed on other inputs" % name, v == "ok", v)

    # 3. torch.compile, the op between PyTorch ops
    def f(*a):
        r = model(*[x.clone() for x in a])
        return tuple(t.clone() for t in r) if isinstance(r, tuple) else r.clone()
    torch._dynamo.reset()       # each sample's f is a new closure of one code object
    try:
        out = torch.compile(f, fullgraph=True)(*inputs)
        v = check(mod, model, inputs, out)
    except Exception as e:  # reported as the verdict
        v = "error: %s" % str(e).strip().splitlines()[0][:200]
    verdict("%s inside torch.compile(fullgraph=True)" % name, v == "ok", v)

    # 4. two threads, two streams, two seeds, at once
    seeds = [args.seed + 2, args.seed + 3]
    ins = {s: list(mod.make_inputs(s, dev).values()) for s in seeds}
    alone = {}
    for s in seeds:
        r = model(*ins[s])
        alone[s] = r if isinstance(r, tuple) else (r,)
    torch.cuda.synchronize()
    bad = []

    def worker(s):
        try:
            stream = torch.cuda.Stream()
            with torch.cuda.stream(stream):
                outs = []
                for _ in range(10):
                    r = model(*ins[s])
                    outs.append(r if isinstance(r, tuple) else (r,))
                stream.synchronize()
            for r in outs:
                if not all(torch.equal(a, b) for a, b in zip(r, alone[s])):
                    bad.append("seed %d: a result differs from the single-threaded one" % s)
                    break
        except Exception as e:  # reported as the verdict
            bad.append("seed %d: %s" % (s, e))
    threads = [threading.Thread(target=worker, args=(s,)) for s in seeds]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    verdict("%s from two threads on two streams" % name, not bad, "; ".join(bad))

    # 5. refusals that name the tensor
    x = inputs[0]
    spec = model.inputs[0]
    wrong = {
        "dtype": x.to(torch.float64 if x.dtype != torch.float64 else torch.float32),
        "shape": x.reshape(-1) if x.dim() != 1 else x[:-1],
        "device": x.cpu(),
    }
    if x.dim() >= 2 and x.shape[-1] > 1 and x.shape[-2] > 1:
        wrong["contiguity"] = x.transpose(-1, -2).contiguous().transpose(-1, -2)
    missed = []
    for what, t in wrong.items():
        try:
            model(t, *inputs[1:])
            missed.append(what + " accepted")
        except (TypeError, ValueError, RuntimeError) as e:
            if "'%s'" % spec.name not in str(e):
                missed.append("%s: %s" % (what, e))
    verdict("%s refuses a wrong %s, naming '%s'" % (name, ", ".join(wrong), spec.name), not missed,
            "; ".join(missed))

    # 6. release: the handles of every thread above freed, none of the
    # device's memory taken; the next call makes its own again and matches
    torch.cuda.synchronize()
    before = torch.cuda.mem_get_info()[0]
    model.release()
    freed = torch.cuda.mem_get_info()[0] - before
    released.append(freed)
    v = check(mod, model, inputs, model(*inputs))
    verdict("%s released (%d MiB back), then called again" % (name, freed >> 20), v == "ok" and freed >= 0,
            v if v != "ok" else "%d bytes taken" % -freed if freed < 0 else "")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--fgc", default=os.path.join(ROOT, "build", "fgc"))
    p.add_argument("--work", default="/tmp/fgc-gpu-torch")
    p.add_argument("--samples", default="")
    p.add_argument("--seed", type=int, default=7)
    args = p.parse_args()
    names = args.samples.split(",") if args.samples else sorted(
        f[:-3] for f in os.listdir(os.path.join(ROOT, "samples")) if f.endswith(".fg"))
    for name in names:
        try:
            sample(name, args)
        except Exception:
            verdict("%s" % name, False, traceback.format_exc().strip().splitlines()[-1])
    if len(released) == len(names):     # every sample got as far as release
        verdict("release gives memory back (in %d of %d samples)" % (sum(r > 0 for r in released), len(names)),
                any(r > 0 for r in released))
    print("%d failed" % len(failures) if failures else "all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
