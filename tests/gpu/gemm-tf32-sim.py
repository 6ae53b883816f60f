#!/usr/bin/env python3
"""gemm-tf32-sim.py - the NumPy estimate behind tests/gpu/gemm-tf32.fg's
comment and docs/testing.md's tf32 gate: the graph's five outputs with
f32 matmul operands cut to tf32 (truncated, as tensor cores may, or
rounded to nearest even), against the exact (f64) result, under
runtime/check.c's RMSE gate (m 3, unit roundoff 2^-10; the f32 output's
own rounding term).  Inputs as the fgc binaries draw them: uniform in
[-1, 1], weights (params of rank 2) scaled by 1/sqrt(fan-in).  Prints the
largest rmse / limit over 20 draws per conversion, for the tf32 gate and
for the f32 gate (m 2, 2^-24).

    /usr/bin/python3 tests/gpu/gemm-tf32-sim.py
"""
import math

import numpy as np

erf = np.vectorize(math.erf)


def trunc(a):
    """f32 values with the 13 low mantissa bits cleared."""
    b = a.astype(np.float32).view(np.uint32) & np.uint32(0xFFFFE000)
    return b.view(np.float32).astype(np.float64)


def rne(a):
    """f32 values rounded to 10 mantissa bits, ties to even."""
    u = a.astype(np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0xFFF + ((u >> 13) & 1)) & 0xFFFFE000
    return u.astype(np.uint32).view(np.float32).astype(np.float64)


def ratio(actual, exact, m, unit, atol=1e-5):
    """rmse / limit of check.c's RMSE gate for an f32 result."""
    rounded = exact.astype(np.float32).astype(np.float64)
    rmse = np.sqrt(np.mean((actual - exact) ** 2))
    rmse_r = np.sqrt(np.mean((rounded - exact) ** 2))
    rms = np.sqrt(np.mean(exact ** 2))
    return rmse / (m * max(rmse_r, unit * rms / np.sqrt(3)) + atol)


def softmax(z):
    p = np.exp(z - z.max(-1, keepdims=True))
    return p / p.sum(-1, keepdims=True)


def main():
    rng = np.random.default_rng(1)
    M, K, N = 64, 1000, 48
    f32 = lambda a: a.astype(np.float32).astype(np.float64)
    for name, cut in (("truncated", trunc), ("rounded", rne)):
        worst = {}
        for _ in range(20):
            x = f32(rng.uniform(-1, 1, (M, K)))
            w = f32(rng.uniform(-1, 1, (K, N)) / np.sqrt(K))
            b = f32(rng.uniform(-1, 1, N))
            wt = f32(rng.uniform(-1, 1, (N, K)) / np.sqrt(N))
            xb = f32(rng.uniform(-1, 1, (3, M, 40)))
            wb = f32(rng.uniform(-1, 1, (40, N)) / np.sqrt(40))
            e1, a1 = x @ w, cut(x) @ cut(w)
            pairs = {
                "y1": (a1, e1),
                "y2": (np.maximum(a1 + b, 0), np.maximum(e1 + b, 0)),
                "y3": (softmax(cut(xb) @ cut(wb) * 0.5), softmax(xb @ wb * 0.5)),
                "y4 before its bf16 cast": (np.tanh(a1 * 4), np.tanh(e1 * 4)),
                "y5": tuple(g * 0.5 * (1 + erf(g / math.sqrt(2))) for g in (cut(x) @ cut(wt).T + b, x @ wt.T + b)),
            }
            for k, (a, e) in pairs.items():
                t, f = ratio(a, e, 3, 2.0 ** -10), ratio(a, e, 2, 2.0 ** -24)
                worst[k] = max(worst.get(k, (0, 0))[0], t), max(worst.get(k, (0, 0))[1], f)
        for k, (t, f) in worst.items():
            print("%-9s %-24s tf32 gate %.3f  f32 gate %.0f" % (name, k, t, f))


if __name__ == "__main__":
    main()
