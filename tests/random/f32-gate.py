#!/usr/bin/python3
"""
f32-gate.py FGC - the two all-f32 graphs of the 1,000-graph GPU campaign
that fail --check on the H200 while their plans verify (seeds 600586 and
600639, docs/testing.md): does an independent f32 computation of the
failing value, NumPy's, meet the RMSE gate the GPU missed?

For each seed: draw the graph as gpu-campaign.sh does (gen_graph.py),
add the failing value's operand as an output, take the reference
interpreter's outputs (`fgc run --seed SEED`: f64 arithmetic, values stored
in f32), recompute the failing value from that stored f32 operand in
NumPy, once in f64 (it must agree with the interpreter's output within an
f32 ulp, or the recomputation is not the graph's: the interpreter used
the operand's unrounded f64 value) and once in f32, and apply
runtime/check.c's f32 gate (m = 2, unit roundoff 2^-24, atol 1e-5) to the
f32 result against the interpreter's output, as --check does.  Prints each case's RMSE and limit; exit status 0 when every
case is as the campaign classified it: NumPy's f32 result misses the gate
too (the gate, not fgc's kernels, is what these graphs exceed).
Needs python3-numpy (Debian's, /usr/bin/python3).
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
U = 2.0 ** -24


def gate(actual, exact):
    """(rmse, limit) of runtime/check.c's RMSE gate for an f32 value against
    the reference's output exact"""
    stored = exact.astype(np.float32).astype(np.float64)
    rounding = np.sqrt(np.mean((stored - exact) ** 2))
    rounding = max(rounding, U * np.sqrt(np.mean(exact ** 2)) / np.sqrt(3.0))
    rmse = np.sqrt(np.mean((actual.astype(np.float64) - exact) ** 2))
    return rmse, 2 * rounding + 1e-5


def matmul_self_t(x, dtype):
    """x @ transpose(x), summed in order k = 0, 1, ... in dtype."""
    x = x.astype(dtype)
    acc = np.zeros(x.shape[:-1] + (x.shape[-2],), dtype)
    for k in range(x.shape[-1]):
        acc = (acc + (x[..., :, k, None] * x[..., None, :, k]).astype(dtype)).astype(dtype)
    return acc


def layernorm_self(x, dtype, eps=1e-3):
    """layernorm(x, x, x, eps) over the last axis, in dtype."""
    x = x.astype(dtype)
    mean = x.mean(-1, keepdims=True, dtype=dtype)
    var = ((x - mean) ** 2).mean(-1, keepdims=True, dtype=dtype)
    return ((x - mean) / np.sqrt(var + dtype(eps)) * x + x).astype(dtype)


# seed, the failing output, its operand (made an output), the computation
CASES = [
    (600586, "v9", "v8", matmul_self_t),        # matmul, K = 70, values ~265
    (600639, "h25x", "v24", layernorm_self),    # rows of three equal values
]


def run_case(fgc, tmp, seed, value, operand, compute):
    g = os.path.join(tmp, "g%d.fg" % seed)
    subprocess.run([sys.executable, os.path.join(HERE, "gen_graph.py"), str(seed), "-o", g, "--fgc", fgc],
                   check=True, stdout=subprocess.DEVNULL)
    with open(g) as f:
        text = f.read()
    lines = text.rstrip().split("\n")
    out = [i for i, line in enumerate(lines) if line.strip().startswith("output ")]
    if len(out) != 1:
        sys.exit("g%d: expected one output line" % seed)
    lines[out[0]] += ", " + operand
    with open(g, "w") as f:
        f.write("\n".join(lines) + "\n")
    ref = os.path.join(tmp, "g%d.ref" % seed)
    subprocess.run([fgc, "run", g, "--seed", str(seed), "--outputs", ref], check=True, stdout=subprocess.DEVNULL)
    x = np.load(os.path.join(ref, operand + ".npy"))
    want = np.load(os.path.join(ref, value + ".npy")).astype(np.float64)
    ulp = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
    if x.dtype != np.float32 or np.any(np.abs(compute(x, np.float64) - want) > ulp):
        print("FAIL %d: NumPy's f64 %s is not the interpreter's" % (seed, value))
        return False
    rmse, limit = gate(compute(x, np.float32), want)
    print("%d %s: NumPy f32 rmse %.3g, limit %.3g (%.2fx)" % (seed, value, rmse, limit, rmse / limit))
    return rmse > limit


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: f32-gate.py FGC")
    fgc = os.path.realpath(sys.argv[1])
    with tempfile.TemporaryDirectory() as tmp:
        ok = [run_case(fgc, tmp, *case) for case in CASES]
    print("%d of %d cases miss the gate in NumPy's f32 too" % (sum(ok), len(ok)))
    sys.exit(0 if all(ok) else 1)


if __name__ == "__main__":
    main()
