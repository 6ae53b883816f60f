#!/usr/bin/python3
"""
f32-gate.py FGC - the RMSE gate's baseline, the reference computed in the
dtypes (`fgc run --in-dtype`, testing.md's ref_in_dtype), checked against
an independent f32 computation, NumPy's, on the two all-f32 graphs of the
1,000-graph GPU campaign that failed --check on the H200 while their plans
verify (seeds 600586 and 600639, docs/testing.md).

For each seed: take the graph gpu-campaign.sh drew (gen_graph.py before
it drew language version 2's ops, kept as tests/random/f32-gate-SEED.fg), add
the failing value's operand as an output, run `fgc run --seed SEED
--in-dtype` (the reference, f64, and the same evaluated in the dtypes),
then recompute the failing value in NumPy, in f32, in order:

1. from the in-dtype operand: it must match fgc's in-dtype value within a
   few f32 ulps of the value's scale (the in-dtype interpreter computes
   what f32 arithmetic computes);
2. from the reference's own operand (as a kernel fed exactly would): that
   f32 result must pass runtime/check.c's f32 gate (m = 2, unit roundoff
   2^-24, atol 1e-5) with fgc's in-dtype baseline, and miss it with the
   baseline of the reference rounded once, which is what failed these
   graphs on the GPU: legitimate f32 arithmetic that the old baseline
   rejected.

Prints each case's figures; exit status 0 when every check holds.
Needs python3-numpy (Debian's, /usr/bin/python3).
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
U = 2.0 ** -24


def rmse(a, b):
    return float(np.sqrt(np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)))


def limit(base, ref):
    """runtime/check.c's f32 RMSE limit for baseline base against ref."""
    floor = U * float(np.sqrt(np.mean(ref.astype(np.float64) ** 2))) / np.sqrt(3.0)
    return 2 * max(rmse(base, ref), floor) + 1e-5


def matmul_self_t(x):
    """x @ transpose(x) in f32, each product added in order k = 0, 1, ..."""
    acc = np.zeros(x.shape[:-1] + (x.shape[-2],), np.float32)
    for k in range(x.shape[-1]):
        acc = (acc + x[..., :, k, None] * x[..., None, :, k]).astype(np.float32)
    return acc


def layernorm_self(x, eps=np.float32(1e-3)):
    """layernorm(x, x, x, eps) over the last axis in f32, as passes/expand.c
    writes it: d = x - mean(x); r = rsqrt(mean(d*d) + eps); d * r * x + x."""
    d = x - x.mean(-1, keepdims=True, dtype=np.float32)
    r = np.float32(1) / np.sqrt((d * d).mean(-1, keepdims=True, dtype=np.float32) + eps)
    return (d * r * x + x).astype(np.float32)


# seed, the failing output, its operand (made an output), the computation
CASES = [
    (600586, "v9", "v8", matmul_self_t),        # matmul, K = 70, values ~265
    (600639, "h25x", "v24", layernorm_self),    # rows of three equal values
]


def run_case(fgc, tmp, seed, value, operand, compute):
    g = os.path.join(tmp, "g%d.fg" % seed)
    with open(os.path.join(HERE, "f32-gate-%d.fg" % seed)) as f:
        lines = f.read().rstrip().split("\n")
    out = [i for i, line in enumerate(lines) if line.strip().startswith("output ")]
    if len(out) != 1:
        sys.exit("g%d: expected one output line" % seed)
    lines[out[0]] += ", " + operand
    with open(g, "w") as f:
        f.write("\n".join(lines) + "\n")
    ref = os.path.join(tmp, "g%d.ref" % seed)
    subprocess.run([fgc, "run", g, "--seed", str(seed), "--outputs", ref, "--in-dtype"], check=True,
                   stdout=subprocess.DEVNULL)
    load = lambda sub, name: np.load(os.path.join(ref, sub, name + ".npy"))
    want, base = load("", value), load("in-dtype", value)
    ok = True
    # 1. fgc's in-dtype value is NumPy's f32 arithmetic on the same operand
    mine = compute(load("in-dtype", operand))
    scale = float(np.max(np.abs(want)))
    diff = float(np.max(np.abs(mine.astype(np.float64) - base)))
    if not diff <= 4 * U * scale:
        print("FAIL %d %s: fgc's in-dtype value is %.3g from NumPy's f32 (allowed %.3g)"
              % (seed, value, diff, 4 * U * scale))
        ok = False
    # 2. an f32 computation fed the reference's operand, against both gates
    f32 = compute(load("", operand))
    new, old = limit(base, want), limit(want, want)
    print("%d %s: in-dtype vs NumPy f32 %.3g (of %.3g); NumPy f32 fed the reference: rmse %.3g, "
          "limit %.3g with the in-dtype baseline, %.3g with the rounded reference"
          % (seed, value, diff, scale, rmse(f32, want), new, old))
    if not rmse(f32, want) <= new:
        print("FAIL %d %s: f32 arithmetic misses the gate with the in-dtype baseline" % (seed, value))
        ok = False
    if not rmse(f32, want) > old:
        print("FAIL %d %s: f32 arithmetic meets the rounded reference's gate: not the case it was"
              % (seed, value))
        ok = False
    return ok


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: f32-gate.py FGC")
    fgc = os.path.realpath(sys.argv[1])
    with tempfile.TemporaryDirectory() as tmp:
        ok = [run_case(fgc, tmp, *case) for case in CASES]
    print("%d of %d cases as expected" % (sum(ok), len(ok)))
    sys.exit(0 if all(ok) else 1)


if __name__ == "__main__":
    main()
