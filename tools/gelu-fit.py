#!/usr/bin/python3
"""
gelu-fit.py - the coefficients of fg_fast_gelu (runtime/fg_device.cuh), the
erf GELU of f16 and bf16 values: x * sigmoid(p(x)), where p = logit(Phi) is
odd, written x * q(|x|) with q a polynomial of degree DEG on [0, T] (|x|
clamped to T).  -log2(e) is folded into q, so that the kernel computes
x * rcp(1 + ex2(x * q2(|x|))).

    /usr/bin/python3 tools/gelu-fit.py [T DEG]      (default 5.8 8)

The fit minimizes max over t of Phi(t) |dp(t)|, the relative error of
x * sigmoid(p) at x = -t (at x = +t it is (1 - Phi(t)) |dp|, smaller), by
Lawson's iteratively reweighted least squares in a Chebyshev basis, then
rounds the coefficients to f32 and re-measures in f32 Horner arithmetic
on a fine grid of [0, T], and over x in [-8, 8] where |gelu(x)| >= 2^-24
(the domain tests/runtime/fast_math.cu judges: T must cover it).  NumPy
only; the exact values from math.erfc.
"""
import math
import sys

import numpy as np

LOG2E = 1.4426950408889634


def logit_phi(t):
    """p(t) = log(Phi(t) / Phi(-t)) for t >= 0, without cancellation."""
    return math.log(0.5 * math.erfc(-t / math.sqrt(2))) - math.log(0.5 * math.erfc(t / math.sqrt(2)))


def phi(t):
    return 0.5 * math.erfc(-t / math.sqrt(2))


def fit(T, deg, iterations=3000):
    t = np.linspace(0, T, 20001)
    t[0] = 1e-7
    q = np.array([logit_phi(v) / v for v in t])
    weight = np.array([phi(v) * v for v in t])      # |dp| = t |dq|, times Phi(t)
    V = np.polynomial.chebyshev.chebvander(2 * t / T - 1, deg)
    w = np.full(len(t), 1.0 / len(t))
    best = None
    for _ in range(iterations):
        sw = weight * np.sqrt(w)
        c, *_ = np.linalg.lstsq(V * sw[:, None], q * sw, rcond=None)
        e = np.abs((V @ c - q) * weight)
        if best is None or e.max() < best[0]:
            best = (e.max(), c)
        w = w * e
        w /= w.sum()
    mono = np.polynomial.Polynomial(np.polynomial.chebyshev.cheb2poly(best[1]))
    in_t = mono(np.polynomial.Polynomial([-1, 2 / T]))          # s = 2t/T - 1
    return best[0], (-LOG2E * in_t.coef).astype(np.float32)


def horner_f32(co, t):
    q = np.full_like(t, co[-1], dtype=np.float32)
    for c in co[-2::-1]:
        q = (q.astype(np.float64) * t + float(c)).astype(np.float32)   # one rounding, as fmaf
    return q


def main():
    T = float(sys.argv[1]) if len(sys.argv) > 1 else 5.8
    deg = int(sys.argv[2]) if len(sys.argv) > 2 else 8
    err, co = fit(T, deg)
    x = np.concatenate([-np.linspace(0, 8, 800001), np.linspace(0, 8, 80001)]).astype(np.float32)
    q2 = horner_f32(co, np.minimum(np.abs(x), np.float32(T)))
    z = (x * q2).astype(np.float32)
    fast = x.astype(np.float64) / (1 + np.exp2(z.astype(np.float64)))
    ref = np.array([0.5 * v * math.erfc(-v / math.sqrt(2)) for v in x.astype(np.float64)])
    dom = np.abs(ref) >= 2.0 ** -24
    rel = np.abs(fast - ref)[dom] / np.abs(ref)[dom]
    print("T %g, degree %d: fit max Phi|dp| %.3g; in f32, max relative error %.3g (%.3f of f16's u, %.4f of bf16's)"
          % (T, deg, err, rel.max(), rel.max() / 2.0 ** -11, rel.max() / 2.0 ** -8))
    print("q2 coefficients, t^0 first:")
    print(", ".join("%.9ef" % c for c in co))


if __name__ == "__main__":
    main()
