#!/usr/bin/python3
"""
tanh-bound.py - the error fg_fast_tanh (runtime/fg_device.cuh) can have,
emulated on the CPU before tests/runtime/fast_math.cu measures it on the
GPU: tanh a = 1 - 2 r, r = rcp(1 + ex2(2 log2(e) a)), and a (1 - a^2 / 3)
below |a| = T.

    /usr/bin/python3 tools/tanh-bound.py [T]      (default 0.0625)

Each f32 step is rounded to nearest as the kernel's FMUL, FADD and FFMA
are; the two MUFU results carry a relative error of -E, 0 or +E (E = 2^-22
for ex2.approx.ftz, 2^-23 for rcp.approx.ftz: about 2 ulp and 1 ulp, what
the other fast forms' measurements allow), all nine combinations, and the
worst relative error before rounding is taken over the inputs
fast_math.cu judges: every finite f16 and bf16 value and every 512th f32
bit pattern of each sign, where |tanh a| >= 2^-24.  Printed in units of
f16's and bf16's unit roundoff u; the fast forms' bar is u/8.  An
emulation, not the hardware: it bounds what the formula loses given those
errors, and the GPU measurement decides.  NumPy only.
"""
import sys

import numpy as np

F = np.float32
EX2_ERR, RCP_ERR = 2.0 ** -22, 2.0 ** -23


def form(a, e_ex2, e_rcp, t):
    """fg_fast_tanh over f32 array a, its ex2 and rcp off by the given
    relative errors."""
    w = (np.exp2((a * F(2.885390081777927)).astype(np.float64)) * (1 + e_ex2)).astype(F)
    d = F(1) + w
    r = ((1.0 / d.astype(np.float64)) * (1 + e_rcp)).astype(F)
    big = (-2.0 * r.astype(np.float64) + 1.0).astype(F)                 # fmaf: one rounding
    p = ((a * a).astype(np.float64) * np.float64(F(-0.333333343)) + 1.0).astype(F)
    return np.where(np.abs(a) < F(t), a * p, big)


def inputs():
    f16 = np.arange(65536, dtype=np.uint16).view(np.float16).astype(F)
    bf16 = (np.arange(65536, dtype=np.uint32) << 16).view(F)
    sweep = np.arange(0, 2 ** 31, 512, dtype=np.uint32).view(F)
    return {"f16": f16, "bf16": bf16, "f32 sweep": np.concatenate([sweep, -sweep])}


def main():
    t = float(sys.argv[1]) if len(sys.argv) > 1 else 0.0625
    worst_all = 0.0
    for name, x in inputs().items():
        x = x[np.isfinite(x)]
        ref = np.tanh(x.astype(np.float64))
        keep = np.abs(ref) >= 2.0 ** -24
        worst, at = 0.0, 0.0
        for e1 in (-EX2_ERR, 0.0, EX2_ERR):
            for e2 in (-RCP_ERR, 0.0, RCP_ERR):
                with np.errstate(over="ignore", invalid="ignore"):
                    y = form(x, e1, e2, t).astype(np.float64)
                rel = np.abs(y[keep] - ref[keep]) / np.abs(ref[keep])
                i = int(np.argmax(rel))
                if rel[i] > worst:
                    worst, at = float(rel[i]), float(x[keep][i])
        worst_all = max(worst_all, worst)
        print("%-9s worst relative error 2^%.2f (%.4f u of f16, %.5f u of bf16) at a = %.9g"
              % (name, np.log2(worst), worst / 2.0 ** -11, worst / 2.0 ** -8, at))
    print("within u/8 of f16" if worst_all <= 2.0 ** -14 else "PAST u/8 of f16")
    return 0 if worst_all <= 2.0 ** -14 else 1


if __name__ == "__main__":
    sys.exit(main())
