#!/usr/bin/env python3
"""op_issue.py - the SASS instructions one call of each op form takes:
compiler/cuda/gen.c's ISSUE table, measured.

    tools/op_issue.py [--runtime DIR] [--nvdisasm PATH]

For each form (FORMS below: the accurate one, FG_OPS' cuda column, and
the fast one of gen.c's FAST table where there is one), two kernels chain
the call 8 and 16 times on one float (v = f(v), written out, not a loop);
the difference of their instruction counts over 8 is one call's inline
code, the out-of-line parts (a division's slow path, sin's far path)
counted once in both and so not at all.  NOPs are not counted.  Prints
ISSUE's rows; compiled and read as tools/sass.py does (its
--nvdisasm, or a cuobjdump beside nvcc).
"""
import argparse
import importlib.util
import os
import re
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("sass", os.path.join(HERE, "sass.py"))
sass = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sass)

# op: (accurate form, fast form or None), each over v
FORMS = {
    "SIN": ("fg_sinf(v)", None), "COS": ("fg_cosf(v)", None), "TAN": ("fg_tanf(v)", None),
    "EXP": ("expf(v)", "fg_fast_exp(v)"), "EXPM1": ("expm1f(v)", None),
    "LOG": ("logf(v)", None), "LOG2": ("log2f(v)", None), "LOG1P": ("log1pf(v)", None),
    "TANH": ("tanhf(v)", "fg_fast_tanh(v)"), "SIGMOID": ("fg_sigmoid(v)", "fg_fast_sigmoid(v)"),
    "SILU": ("fg_silu(v)", "fg_fast_silu(v)"), "GELU": ("fg_gelu(v)", "fg_fast_gelu(v)"),
    "GELU_TANH": ("fg_gelu_tanh(v)", "fg_fast_gelu_tanh(v)"), "ERF": ("erff(v)", None),
    "POW": ("powf(v, 1.3f)", None), "ASIN": ("asinf(v)", None), "ACOS": ("acosf(v)", None),
    "ATAN": ("atanf(v)", None), "SINH": ("sinhf(v)", None), "COSH": ("coshf(v)", None),
    "ASINH": ("asinhf(v)", None), "ACOSH": ("acoshf(v)", None), "ATANH": ("atanhf(v)", None),
    "SOFTPLUS": ("fg_softplus(v)", None), "MISH": ("fg_mish(v)", None), "ELU": ("fg_elu(v, 1.0f)", None),
    "DIV": ("(v / (v + 0.5f))", None), "RECIP": ("(1.0f / v)", None), "SQRT": ("sqrtf(v)", None),
    "RSQRT": ("rsqrtf(v)", None),
}


def source():
    lines = ['#include "fg_device.cuh"']
    for op, forms in FORMS.items():
        for which, expr in zip(("a", "f"), forms):
            for n in (8, 16):
                if expr:
                    lines.append("__global__ void k%d_%s_%s(const float *x, float *y) { float v = x[threadIdx.x]; %s "
                                 "y[threadIdx.x] = v; }" % (n, which, op, " ".join("v = %s;" % expr for _ in range(n))))
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runtime", default=os.path.join(HERE, "..", "runtime"))
    ap.add_argument("--nvdisasm", default=os.environ.get("FGC_NVDISASM"))
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cu, cubin = os.path.join(tmp, "forms.cu"), os.path.join(tmp, "forms.cubin")
        with open(cu, "w") as f:
            f.write(source())
        nvcc = sass.compile_cubin(cu, a.runtime, cubin)
        code, _ = sass.kernels(sass.disassemble(cubin, nvcc, a.nvdisasm, tmp))
    for op, (acc, fast) in per_call(code).items():
        print("\t{FG_OP_%s, %.0f, %.0f}," % (op, acc, fast))


def per_call(code):
    """{op: (accurate, fast)} instructions a call, from sass.kernels' code
    of source()'s kernels (the fast figure the accurate one where FORMS
    has no fast form)."""
    count = {}
    for name, insns in code.items():
        m = re.search(r"k(8|16)_([af])_([A-Z0-9_]+?)PKfPf", name)
        if m:
            count[m.groups()] = sum(1 for _, i in insns if not i.startswith("NOP"))
    calls = {}
    for op, (_, fast) in FORMS.items():
        per = [(count[("16", w, op)] - count[("8", w, op)]) / 8 for w in ("a", "f") if w == "a" or fast]
        calls[op] = (per[0], per[-1])
    return calls


if __name__ == "__main__":
    main()
