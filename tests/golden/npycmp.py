#!/usr/bin/python3
"""
npycmp.py - compares produced .npy files with golden ones, as testing.md
says: |actual - expected| <= atol + rtol * |expected| elementwise,
infinities equal, NaN only where the golden value is NaN; i32 and bool
exactly.  Types and shapes must match exactly.

    npycmp.py [--rtol R] [--atol A] EXPECTED ACTUAL
    npycmp.py --cases GOLDEN_DIR OUT_DIR

EXPECTED and ACTUAL are two files, or two directories: then every *.npy
of EXPECTED must be in ACTUAL and match it, and ACTUAL must hold nothing
else.  Default tolerances by file type: <f4 rtol 1.3e-6, <f2 rtol 1e-3,
atol 1e-5 (a bf16 tensor is stored as <f4, so its case passes --rtol).
--cases compares GOLDEN_DIR/CASE/expect with OUT_DIR/CASE for every
GOLDEN_DIR/CASE.fg, with the tolerances of its `# tol: rtol=R atol=A`
line if it has one (one process for all cases: NumPy loads once).
Prints one line per problem, with the worst element; exits 1 if any.
"""
import argparse
import os
import re
import sys

import numpy as np

RTOL = {"<f4": 1.3e-6, "<f2": 1e-3}


def compare(exp_path, act_path, rtol, atol):
    """Returns None when the files agree, else a one-line reason."""
    try:
        e = np.load(exp_path, allow_pickle=False)
    except Exception as err:    # a broken golden file is a test bug: say so
        return "cannot read golden %s: %s" % (exp_path, err)
    try:
        a = np.load(act_path, allow_pickle=False)
    except FileNotFoundError:
        return "missing"
    except Exception as err:
        return "cannot read: %s" % err
    if a.dtype.str != e.dtype.str or a.shape != e.shape:
        return "holds %s %s, expected %s %s" % (a.dtype.str, a.shape, e.dtype.str, e.shape)
    if e.dtype.kind != "f":
        bad = a != e
        if not bad.any():
            return None
        i = np.unravel_index(np.argmax(bad), e.shape)
        return "%d of %d elements differ; first at %s: %s, expected %s" % (
            bad.sum(), e.size, tuple(int(k) for k in i), a[i], e[i])
    rt = RTOL[e.dtype.str] if rtol is None else rtol
    at = 1e-5 if atol is None else atol
    a64, e64 = a.astype(np.float64), e.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        allow = at + rt * np.abs(e64)
        err = np.abs(a64 - e64)
        fin = np.isfinite(e64)
        bad = np.where(fin, ~(err <= allow), False)   # a NaN or inf actual fails
        bad |= np.isnan(e64) & ~np.isnan(a64)
        bad |= np.isinf(e64) & (a64 != e64)
        # the worst element is the one furthest outside its own allowance
        ratio = err / np.where(allow > 0, allow, 1.0)
        score = np.where(bad, np.where(fin & np.isfinite(a64), ratio, np.inf), -1.0)
    if not bad.any():
        return None
    i = np.unravel_index(np.argmax(score), e.shape)
    return ("%d of %d elements outside rtol=%g atol=%g; worst at %s: %r, expected %r "
            "(abs err %.3g)" % (bad.sum(), e.size, rt, at, tuple(int(k) for k in i), float(a64[i]),
               float(e64[i]), abs(float(a64[i]) - float(e64[i]))))


def compare_dirs(expected, actual, rtol, atol, prefix=""):
    """Prints each problem; returns how many there were."""
    names = sorted(f for f in os.listdir(expected) if f.endswith(".npy"))
    have = sorted(os.listdir(actual)) if os.path.isdir(actual) else []
    fails = 0
    for n in names:
        why = compare(os.path.join(expected, n), os.path.join(actual, n), rtol, atol)
        if why:
            print("%s%s: %s" % (prefix, n, why))
            fails += 1
    for f in have:
        if f not in names:
            print("%s%s: unexpected output file" % (prefix, f))
            fails += 1
    return fails


def case_tol(fg):
    with open(fg) as f:
        for line in f:
            m = re.match(r"# tol: *rtol=(\S+) +atol=(\S+)", line)
            if m:
                return float(m.group(1)), float(m.group(2))
    return None, None


def main():
    ap = argparse.ArgumentParser(description="compare .npy files with golden ones")
    ap.add_argument("--rtol", type=float)
    ap.add_argument("--atol", type=float)
    ap.add_argument("--cases", action="store_true",
                    help="EXPECTED holds CASE.fg and CASE/expect/ for each case")
    ap.add_argument("expected")
    ap.add_argument("actual")
    args = ap.parse_args()
    if args.cases:
        fails = 0
        for fg in sorted(f for f in os.listdir(args.expected) if f.endswith(".fg")):
            case = fg[:-3]
            rtol, atol = case_tol(os.path.join(args.expected, fg))
            fails += compare_dirs(os.path.join(args.expected, case, "expect"),
                                  os.path.join(args.actual, case), rtol, atol, case + ": ")
    elif os.path.isdir(args.expected):
        fails = compare_dirs(args.expected, args.actual, args.rtol, args.atol)
    else:
        why = compare(args.expected, args.actual, args.rtol, args.atol)
        fails = 1 if why else 0
        if why:
            print("%s: %s" % (args.actual, why))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
