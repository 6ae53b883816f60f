#!/usr/bin/env python3
"""
check_emitted.py - runs modules written by `fgc emit-torch` in reference
mode (float64, rounding only at casts: the interpreter's semantics) and
compares every result with what `fgc run` wrote for the same graph.

    check_emitted.py MANIFEST

Each line of MANIFEST names one case:

    MODULE.py REF_DIR INPUT_DIR SEED exact|tol

MODULE.py is the emitted module, REF_DIR the --outputs directory of
`fgc run`, INPUT_DIR its --inputs directory ('-' for none: every input was
drawn from SEED) and SEED its --seed.  Inputs without a file are drawn by
the module's make_inputs(SEED), so a case also checks that the module draws
the interpreter's inputs.  Results are rounded to their dtype and compared
with the files: bit for bit with 'exact', else within testing.md's
elementwise tolerances (both sides are float64 computations rounded once,
so they differ only where a sum's order or a libm result does).

It runs under real PyTorch or under the NumPy stand-in bench/torchshim
(put it first on PYTHONPATH), whichever `import torch` finds.  One
PASS/FAIL line per case, then 'N passed, N failed'; exit status 1 on any
failure.
"""
import importlib.util
import os
import sys
import traceback

import numpy as np
import torch

# rtol, atol per float dtype (testing.md; f32's rtol is 1e-5 for a value
# RESULTS calls "transcendental")
TOLERANCE = {torch.float32: (1.3e-6, 1e-5), torch.float16: (1e-3, 1e-5), torch.bfloat16: (1.6e-2, 1e-5)}
if hasattr(torch, "float8_e4m3fn"):     # runtime/check.c's: two units of roundoff
    TOLERANCE[torch.float8_e4m3fn] = (0.125, 2.0**-10)
    TOLERANCE[torch.float8_e5m2] = (0.25, 2.0**-17)


def load_module(path):
    name = "fg_emitted_" + os.path.basename(path)[:-3].replace("-", "_").replace(".", "_")
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def to_numpy(t):
    return np.asarray(t.detach().cpu().numpy())


def reference_inputs(mod, input_dir, seed):
    """forward's arguments for a reference run: floats as float64."""
    drawn = mod.make_inputs(seed)
    args = []
    for name, (_role, dtype, _shape) in mod.INPUTS.items():
        path = os.path.join(input_dir, name + ".npy") if input_dir != "-" else ""
        t = torch.from_numpy(np.load(path)) if path and os.path.exists(path) else drawn[name]
        args.append(t.to(torch.float64) if dtype.is_floating_point else t.to(dtype))
    return args


def compare(key, got, dtype, want, exact, round_to, gate):
    """None when got (a float64 result, rounded here to dtype by round_to,
    or an int or bool tensor) matches the file's values, else a message."""
    if dtype.is_floating_point:
        got = to_numpy(round_to(got, dtype)).astype(np.float64)
    else:
        got = to_numpy(got).astype(np.float64)
    want = want.astype(np.float64)
    if got.shape != want.shape:
        return "%s: shape %s, the reference has %s" % (key, got.shape, want.shape)
    same_nan = np.isnan(got) == np.isnan(want)
    if exact or not dtype.is_floating_point:
        bad = ~((got == want) | (np.isnan(got) & np.isnan(want)))
    else:
        rtol, atol = TOLERANCE[dtype]
        if gate == "transcendental" and dtype == torch.float32:
            rtol = 1e-5
        with np.errstate(invalid="ignore"):
            close = np.abs(got - want) <= atol + rtol * np.abs(want)
            bad = ~(close | (got == want) | (np.isnan(got) & np.isnan(want))) | ~same_nan
    if not bad.any():
        return None
    i = np.unravel_index(np.argmax(bad), bad.shape) if bad.ndim else ()
    return "%s: %d of %d differ; at %s got %r, want %r" % (
        key, int(bad.sum()), bad.size, tuple(int(k) for k in i), got[i], want[i])


def check_case(module, ref_dir, input_dir, seed, exact):
    mod = load_module(module)
    results = mod.forward(*reference_inputs(mod, input_dir, seed), reference=True)
    problems = []
    for key, (dtype, shape, gate) in mod.RESULTS.items():
        if key not in results:
            problems.append("%s: forward does not return it" % key)
            continue
        if tuple(results[key].shape) != tuple(shape):
            problems.append("%s: shape %s, RESULTS says %s" % (key, tuple(results[key].shape), shape))
            continue
        path = os.path.join(ref_dir, key + ".npy")
        if not os.path.exists(path):
            problems.append("%s: fgc run wrote no %s" % (key, path))
            continue
        msg = compare(key, results[key], dtype, np.load(path), exact, mod._round, gate)
        if msg:
            problems.append(msg)
    extra = set(os.path.basename(f)[:-4] for f in os.listdir(ref_dir) if f.endswith(".npy")) - set(mod.RESULTS)
    if extra:
        problems.append("fgc run wrote values the module does not return: %s" % ", ".join(sorted(extra)))
    return problems


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    passed = failed = 0
    with open(sys.argv[1]) as f:
        cases = [line.split() for line in f if line.strip()]
    for module, ref_dir, input_dir, seed, mode in cases:
        name = os.path.basename(module)[:-3]
        try:
            problems = check_case(module, ref_dir, input_dir, int(seed), mode == "exact")
        except Exception:  # a module that does not run is a failure to report, not a crash
            problems = [traceback.format_exc(limit=3).strip().replace("\n", "\n    ")]
        if problems:
            failed += 1
            print("FAIL %s" % name)
            for p in problems:
                print("    " + p)
        else:
            passed += 1
            print("PASS %s" % name)
    print("%d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
