#!/usr/bin/python3
"""
gen_interp_goldens.py - writes the golden tests of fgc's reference
interpreter (`fgc run`): for each case, interp/CASE.fg (a small graph),
interp/CASE/in/NAME.npy (its inputs) and interp/CASE/expect/NAME.npy (its
outputs; saved values as expect/saved.NAME.npy).

The expected values come from this file and golden_ref.py alone, an
independent reading of shared/design/language.md in NumPy: computed in
float64 and rounded once, to the output dtype, where they are written (and
at every cast).  Sums and dot products use math.fsum and transcendentals
use Python's math module, so that the values are correctly rounded sums
and libm results, the same on every machine: the committed files are
byte-for-byte reproducible.  golden_ref.py holds the rounding, Philox,
the f64 reference ops and the case builder; this file holds the cases
and main().

Storage: f32 '<f4', f16 '<f2', bf16 '<f4' holding the bf16 value, i32
'<i4', i8 '|i1', u8 '|u1', bool '|b1', f8e4m3 and f8e5m2 '<f4' holding
their values.  Inputs are random, non-zero, drawn from a seed made of
the case's name (adding a case changes no other), in valid domains.

A case whose outputs need a looser gate than the per-dtype default of
npycmp.py (bf16; f32 through transcendentals) carries a `# tol:` line.

Usage:
    gen_interp_goldens.py           rewrite tests/golden/interp/
    gen_interp_goldens.py --check   regenerate into a temporary directory
                                    and compare with the committed files
"""
import argparse
import math
import os
import shutil
import sys
import tempfile

import numpy as np

# golden_ref.py sits beside this file, and Python puts a script's own
# folder first on sys.path, so this works from any directory.
from golden_ref import (
    F64, ROUND, to_f32, to_f16, to_bf16, to_i32, to_f8e4m3, to_f8e5m2, wrap,
    self_test_rounding, self_test_philox, dropout,
    ufunc, exp, log, sin, cos, tanh, erf, powf, sigmoid, gelu, gelu_tanh, silu, relu,
    rsum, rmean, rmax, rmin, matmul, softmax, log_softmax, layernorm, rmsnorm, tr,
    CASES, case, write_case)

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "interp")


# ================================================================ cases
# ------------------------------------------------- elementwise, unary


UNARY = [  # op, domain, reference, transcendental
    ("neg", "any", lambda x: -x, False),
    ("abs", "any", np.abs, False),
    ("exp", "wide", exp, True),
    ("log", "pos", log, True),
    ("sqrt", "pos", np.sqrt, False),
    ("rsqrt", "pos", lambda x: 1.0 / np.sqrt(x), False),
    ("recip", "any", lambda x: 1.0 / x, False),
    ("square", "any", lambda x: x * x, False),
    ("sin", "wide", sin, True),
    ("cos", "wide", cos, True),
    ("tanh", "wide", tanh, True),
    ("sigmoid", "wide", sigmoid, True),
    ("relu", "any", relu, False),
    ("gelu", "wide", gelu, True),
    ("gelu_tanh", "wide", gelu_tanh, True),
    ("silu", "wide", silu, True),
    ("erf", "wide", erf, True),
    ("identity", "any", lambda x: x, False),
]

for _op, _dom, _f, _tr in UNARY:
    def _unary(c, op=_op, dom=_dom, f=_f):
        x = c.inp("x", "f32", "5, 7", dom)
        c.s("y = %s(x)" % op)
        c.out("y", "f32", f(x))
    case("unary-%s-f32" % _op.replace("_", "-"), "%s, elementwise on f32." % _op, _tr)(_unary)


@case("unary-f16", "unary ops on f16: computed in f64, rounded once to f16.", trans=True)
def _(c):
    x = c.inp("x", "f16", "3, 31", "wide")
    p = c.inp("p", "f16", "3, 31", "pos")
    c.s("e = exp(x)\nt = tanh(x)\ns = sigmoid(x)\nl = log(p)\nr = rsqrt(p)")
    for n, v in (("e", exp(x)), ("t", tanh(x)), ("s", sigmoid(x)), ("l", log(p)),
                 ("r", 1 / np.sqrt(p))):
        c.out(n, "f16", v)


@case("unary-bf16", "unary ops on bf16 (stored as <f4 holding bf16 values).", trans=True)
def _(c):
    x = c.inp("x", "bf16", "7, 5", "wide")
    c.s("g = gelu(x)\nh = gelu_tanh(x)\ns = silu(x)\nq = square(x)\nn = neg(x)")
    for n, v in (("g", gelu(x)), ("h", gelu_tanh(x)), ("s", silu(x)), ("q", x * x), ("n", -x)):
        c.out(n, "bf16", v)


@case("unary-i32", "the unary ops that take i32: neg, abs, square, relu.")
def _(c):
    i = c.inp("i", "i32", "5, 7")
    c.s("n = neg(i)\na = abs(i)\ns = square(i)\nr = relu(i)\nm = -i")
    for n, v in (("n", -i), ("a", np.abs(i)), ("s", i * i), ("r", relu(i)), ("m", -i)):
        c.out(n, "i32", v)

# ------------------------------------------------ elementwise, binary


BINARY = [  # op, domain of b, reference, transcendental
    ("add", "any", lambda a, b: a + b, False),
    ("sub", "any", lambda a, b: a - b, False),
    ("mul", "any", lambda a, b: a * b, False),
    ("div", "any", lambda a, b: a / b, False),
    ("pow", "any", powf, True),
    ("maximum", "any", np.maximum, False),
    ("minimum", "any", np.minimum, False),
]

for _op, _dom, _f, _tr in BINARY:
    def _binary(c, op=_op, f=_f):
        a = c.inp("a", "f32", "5, 7", "pos" if op == "pow" else "any")
        b = c.inp("b", "f32", "5, 7", "any")
        c.s("y = %s(a, b)" % op)
        c.out("y", "f32", f(a, b))
    case("binary-%s-f32" % _op, "%s, by name, on f32." % _op, _tr)(_binary)


@case("binary-infix-f32", "the infix operators + - * / on f32.")
def _(c):
    a = c.inp("a", "f32", "5, 7")
    b = c.inp("b", "f32", "5, 7")
    c.s("s = a + b\nd = a - b\np = a * b\nq = a / b")
    for n, v in (("s", a + b), ("d", a - b), ("p", a * b), ("q", a / b)):
        c.out(n, "f32", v)


@case("binary-maximum-ties", "maximum and minimum where the operands are equal.")
def _(c):
    a = c.inp("a", "f32", "31", "grid")
    b = c.inp("b", "f32", "31", "grid")
    c.s("hi = maximum(a, b)\nlo = minimum(a, b)")
    c.out("hi", "f32", np.maximum(a, b))
    c.out("lo", "f32", np.minimum(a, b))


@case("binary-f16", "binary ops on f16, one rounding each.")
def _(c):
    a = c.inp("a", "f16", "7, 31")
    b = c.inp("b", "f16", "7, 31")
    c.s("s = a + b\np = a * b\nq = a / b\nm = maximum(a, b)")
    for n, v in (("s", a + b), ("p", a * b), ("q", a / b), ("m", np.maximum(a, b))):
        c.out(n, "f16", v)


@case("binary-bf16", "binary ops on bf16, one rounding each.")
def _(c):
    a = c.inp("a", "bf16", "31, 7")
    b = c.inp("b", "bf16", "31, 7")
    c.s("d = a - b\np = a * b\nq = div(a, b)\nm = minimum(a, b)")
    for n, v in (("d", a - b), ("p", a * b), ("q", a / b), ("m", np.minimum(a, b))):
        c.out(n, "bf16", v)


@case("binary-i32", "i32 arithmetic is exact; numbers adapt to i32.")
def _(c):
    i = c.inp("i", "i32", "5, 7")
    j = c.inp("j", "i32", "5, 7")
    c.s("s = i + j\nd = sub(i, j)\np = i * j\nhi = maximum(i, j)\nlo = minimum(i, j)\n"
        "k = i * 3 - 2")
    for n, v in (("s", i + j), ("d", i - j), ("p", i * j), ("hi", np.maximum(i, j)),
                 ("lo", np.minimum(i, j)), ("k", i * 3 - 2)):
        c.out(n, "i32", v)


@case("binary-pow-number", "pow with a number as exponent; numbers on either side of - and /.")
def _(c):
    x = c.inp("x", "f32", "3, 7", "pos")
    c.s("p = pow(x, 2.5)\nr = 1 / x\nm = 3 - x")
    c.out("p", "f32", powf(x, 2.5))
    c.out("r", "f32", 1 / x)
    c.out("m", "f32", 3 - x)

# ---------------------------------------------------------- comparisons


CMP = [("lt", "<", np.less), ("le", "<=", np.less_equal), ("gt", ">", np.greater),
       ("ge", ">=", np.greater_equal), ("eq", "==", np.equal), ("ne", "!=", np.not_equal)]

for _op, _sym, _f in CMP:
    def _cmp(c, sym=_sym, f=_f):
        a = c.inp("a", "f32", "5, 7", "grid")
        b = c.inp("b", "f32", "5, 7", "grid")
        c.s("y = a %s b" % sym)
        c.out("y", "bool", f(a, b))
    case("cmp-%s-f32" % _op, "a %s b on f32 with ties; gives bool." % _sym)(_cmp)


@case("cmp-named", "the comparisons called by name: lt le gt ge eq ne.")
def _(c):
    a = c.inp("a", "f32", "31", "grid")
    b = c.inp("b", "f32", "31", "grid")
    c.s("\n".join("%s_ab = %s(a, b)" % (op, op) for op, _, _ in CMP))
    for op, _, f in CMP:
        c.out(op + "_ab", "bool", f(a, b))


@case("cmp-i32", "comparisons of i32 with i32 and with a number.")
def _(c):
    i = c.inp("i", "i32", "5, 7")
    j = c.inp("j", "i32", "5, 7")
    c.s("e = i == j\nl = i < j\ng = i >= 2")
    c.out("e", "bool", i == j)
    c.out("l", "bool", i < j)
    c.out("g", "bool", i >= 2)


@case("cmp-bool", "== and != between bool tensors.")
def _(c):
    m = c.inp("m", "bool", "5, 7")
    n = c.inp("n", "bool", "5, 7")
    c.s("e = m == n\nd = m != n")
    c.out("e", "bool", m == n)
    c.out("d", "bool", m != n)


@case("cmp-f16-number", "f16 comparisons, with a number, and broadcast [5,1] against [7].")
def _(c):
    a = c.inp("a", "f16", "5, 1", "grid")
    b = c.inp("b", "f16", "7", "grid")
    c.s("l = a <= b\ng = a > b\nz = b > 0")
    c.out("l", "bool", a <= b)
    c.out("g", "bool", a > b)
    c.out("z", "bool", b > 0)

# ---------------------------------------------------------------- where


@case("where-f32", "where(c, a, b) with operands of one shape.")
def _(c):
    m = c.inp("m", "bool", "5, 7")
    a = c.inp("a", "f32", "5, 7")
    b = c.inp("b", "f32", "5, 7")
    c.s("y = where(m, a, b)")
    c.out("y", "f32", np.where(m != 0, a, b))


@case("where-broadcast", "where broadcasts all three operands; a number adapts to the "
      "other branch.")
def _(c):
    m = c.inp("m", "bool", "5, 1")
    a = c.inp("a", "f32", "7")
    b = c.inp("b", "f32", "3, 1, 1")
    c.s("y = where(m, a, b)\nz = where(m, a, 0.5)\nw = where(m, -2, a)")
    c.out("y", "f32", np.where(m != 0, a, b))
    c.out("z", "f32", np.where(m != 0, a, 0.5))
    c.out("w", "f32", np.where(m != 0, -2.0, a))


@case("where-cmp-f16", "a comparison feeding where, on f16 (an elementwise max).")
def _(c):
    a = c.inp("a", "f16", "7, 5")
    b = c.inp("b", "f16", "7, 5")
    c.s("y = where(a > b, a, b)")
    c.out("y", "f16", np.where(a > b, a, b))


@case("where-i32-bool", "where choosing between i32 tensors and between bool tensors.")
def _(c):
    m = c.inp("m", "bool", "5, 7")
    i = c.inp("i", "i32", "5, 7")
    j = c.inp("j", "i32", "5, 7")
    n = c.inp("n", "bool", "5, 7")
    c.s("k = where(m, i, j)\nb = where(m, n, i < j)")
    c.out("k", "i32", np.where(m != 0, i, j))
    c.out("b", "bool", np.where(m != 0, n, i < j))

# ----------------------------------------------------------------- cast


def _edge_f32(c, extra):
    """Edge values followed by random ones, 33 in all."""
    rand = c._draw("f32", (33 - len(extra),), "any") * 100
    return to_f32(np.concatenate([np.array(extra, F64), rand]))


@case("cast-f32-to-f16", "cast to f16 rounds once to nearest even: ties, overflow to inf, "
      "subnormals.",
      trans="exact")
def _(c):
    v = _edge_f32(c, [1 + 2.0**-11, 1 + 3 * 2.0**-11, 65504, 65519, 65520, -65520, 1e5,
                      1e-7, -3e-8, 2.0**-25, 3 * 2.0**-26, 0.1, -2.7])
    x = c.inp("x", "f32", "3, 11", values=v)
    c.s("y = cast(x, dtype=f16)")
    c.out("y", "f16", to_f16(x))


@case("cast-f32-to-bf16", "cast to bf16 rounds once to nearest even: ties, overflow, subnormals.",
      trans="exact")
def _(c):
    v = _edge_f32(c, [1 + 2.0**-8, 1 + 3 * 2.0**-8, -(1 + 3 * 2.0**-8), 1 + 2.0**-8 + 2.0**-20,
                      70000, 3e9, -2.7, float.fromhex("0x1.fffffep127"),
                      float.fromhex("0x1.fe8p127"), 1e-40, 2.0**-133, -0.0, 0.1])
    x = c.inp("x", "f32", "3, 11", values=v)
    c.s("y = cast(x, dtype=bf16)")
    c.out("y", "bf16", to_bf16(x))


@case("cast-f32-to-i32", "cast to i32 truncates toward zero and saturates.", trans="exact")
def _(c):
    v = _edge_f32(c, [2.7, -2.7, 0.5, -0.5, 2.5, -2.5, 3e9, -3e9, 2147483520.0, -2147483648.0,
                      1e20, 7.0, -8.0])
    x = c.inp("x", "f32", "33", values=v)
    c.s("y = cast(x, dtype=i32)")
    c.out("y", "i32", to_i32(x))


@case("cast-f32-to-bool", "cast to bool is x != 0 (-0.0 is false).", trans="exact")
def _(c):
    v = _edge_f32(c, [0.0, -0.0, 1e-30, -1e-45, 0.0, 2.0, 0.0])
    x = c.inp("x", "f32", "3, 11", values=v)
    c.s("y = cast(x, dtype=bool)")
    c.out("y", "bool", x != 0)


@case("cast-f32-to-f32", "a cast to the same dtype changes nothing.", trans="exact")
def _(c):
    x = c.inp("x", "f32", "5, 7")
    c.s("y = cast(x, dtype=f32)")
    c.out("y", "f32", x)


@case("cast-i32-to-floats", "i32 to f32 (2^24+1 rounds), f16 (ties, overflow), bf16 (ties).",
      trans="exact")
def _(c):
    v = [16777217, -16777219, 2049, 2051, 65519, 65520, 257, 259, -1, 7, 100000, 3]
    i = c.inp("i", "i32", "12", values=v)
    c.s("f = cast(i, dtype=f32)\nh = cast(i, dtype=f16)\nb = cast(i, dtype=bf16)")
    c.out("f", "f32", to_f32(i))
    c.out("h", "f16", to_f16(i))
    c.out("b", "bf16", to_bf16(i))


@case("cast-i32-to-bool", "i32 to bool is i != 0.", trans="exact")
def _(c):
    i = c.inp("i", "i32", "12", values=[0, 1, -1, 0, 5, 0, -8, 3, 0, 2, 0, 7])
    c.s("y = cast(i, dtype=bool)")
    c.out("y", "bool", i != 0)


@case("cast-bool-to-numbers", "bool to f32, i32, f16: true is 1, false is 0.", trans="exact")
def _(c):
    m = c.inp("m", "bool", "5, 7")
    c.s("f = cast(m, dtype=f32)\ni = cast(m, dtype=i32)\nh = cast(m, dtype=f16)")
    c.out("f", "f32", m)
    c.out("i", "i32", m)
    c.out("h", "f16", m)


@case("cast-f16-to-others", "f16 to f32 (exact), to bf16 (rounds from the f16 value), to i32.",
      trans="exact")
def _(c):
    x = c.inp("x", "f16", "5, 7", values=np.concatenate(
        [[1 + 2.0**-8, 1 + 3 * 2.0**-8, 65504, -2.0**-24, 1.5 + 2.0**-9],
         c._draw("f16", (30,), "any") * 50]))
    c.s("f = cast(x, dtype=f32)\nb = cast(x, dtype=bf16)\ni = cast(x, dtype=i32)")
    c.out("f", "f32", x)
    c.out("b", "bf16", to_bf16(x))
    c.out("i", "i32", to_i32(x))


@case("cast-bf16-to-others", "bf16 to f32 (exact) and to f16 (overflow, underflow, rounding).",
      trans="exact")
def _(c):
    x = c.inp("x", "bf16", "5, 7", values=np.concatenate(
        [[1e5, -7e4, 1e-10, 3e-6, 1 + 2.0**-7],
         c._draw("bf16", (30,), "any") * 50]))
    c.s("f = cast(x, dtype=f32)\nh = cast(x, dtype=f16)")
    c.out("f", "f32", x)
    c.out("h", "f16", to_f16(x))


@case("cast-rounds-midway", "a cast rounds in the middle of a chain: later ops see the "
      "rounded value.",
      trans="exact")
def _(c):
    x = c.inp("x", "f32", "31")
    c.s("h = cast(x, dtype=f16)\ny = cast(h, dtype=f32) * 3\n"
        "b = cast(cast(x, dtype=bf16), dtype=f32) - x")
    c.out("y", "f32", to_f16(x) * 3)
    c.out("b", "f32", to_bf16(x) - x)

# -------------------------------------------------------------- dropout


@case("dropout-f32", "dropout's mask is Philox-4x32-10 at the flat index; kept values "
      "scale by 1/(1-p).")
def _(c):
    x = c.inp("x", "f32", "31, 33")
    c.s("y = dropout(x, p=0.1, seed=1234)")
    c.out("y", "f32", dropout(x, 0.1, 1234))


@case("dropout-f16", "dropout on f16, p=0.5.")
def _(c):
    x = c.inp("x", "f16", "7, 31")
    c.s("y = dropout(x, p=0.5, seed=42)")
    c.out("y", "f16", dropout(x, 0.5, 42))


@case("dropout-bf16", "dropout on bf16, p=0.25.")
def _(c):
    x = c.inp("x", "bf16", "5, 31")
    c.s("y = dropout(x, p=0.25, seed=7)")
    c.out("y", "bf16", dropout(x, 0.25, 7))


@case("dropout-seed-64bit", "a seed above 2^32 uses both key words (low word first).")
def _(c):
    x = c.inp("x", "f32", "1000")
    c.s("y = dropout(x, p=0.3, seed=81985529216486895)")
    c.out("y", "f32", dropout(x, 0.3, 0x0123456789ABCDEF))


@case("dropout-p-zero", "p=0 keeps every element unscaled.")
def _(c):
    x = c.inp("x", "f32", "7, 5")
    c.s("y = dropout(x, p=0.0, seed=5)")
    c.out("y", "f32", x)


@case("dropout-after-broadcast", "the flat index is that of dropout's own (broadcast) operand.")
def _(c):
    x = c.inp("x", "f32", "5, 7")
    b = c.inp("b", "f32", "7")
    c.s("y = dropout(x + b, p=0.2, seed=99)\nz = dropout(x, p=0.2, seed=99)")
    c.out("y", "f32", dropout(x + b, 0.2, 99))
    c.out("z", "f32", dropout(x, 0.2, 99))

# ----------------------------------------------------------- reductions


REDUCE = [("sum", rsum, "f32"), ("mean", rmean, "f32"), ("max", rmax, "f32"), ("min", rmin, "f32")]

for _op, _f, _dt in REDUCE:
    def _reduce(c, op=_op, f=_f):
        x = c.inp("x", "f32", "5, 7, 3")
        forms = [("by_int", "axis=1", dict(axis=1)),
                 ("by_list", "axis=[0, 2]", dict(axis=[0, 2])),
                 ("by_neg", "axis=-1", dict(axis=-1)),
                 ("no_keep", "axis=1, keepdims=false", dict(axis=1, keepdims=False)),
                 ("keep", "axis=-2, keepdims=true", dict(axis=-2, keepdims=True)),
                 ("all", "", {}),
                 ("all_no_keep", "keepdims=false", dict(keepdims=False))]
        for n, attrs, kw in forms:
            c.s("%s = %s(x%s)" % (n, op, ", " + attrs if attrs else ""))
            c.out(n, "f32", f(x, **kw))
    case("reduce-%s-f32" % _op, "%s over an int axis, a list, a negative axis, keepdims "
         "false and true, and all axes (default, keepdims true: shape [1,1,1]; keepdims "
         "false: rank 0)." % _op)(_reduce)


@case("reduce-axis-lists", "axis lists with negative entries, unsorted, on a rank-4 tensor.")
def _(c):
    x = c.inp("x", "f32", "3, 5, 2, 7")
    c.s("a = sum(x, axis=[-1, 0])\nb = mean(x, axis=[3, 1], keepdims=false)\n"
        "m = max(x, axis=[-3, -2, -1], keepdims=false)")
    c.out("a", "f32", rsum(x, [-1, 0]))
    c.out("b", "f32", rmean(x, [3, 1], False))
    c.out("m", "f32", rmax(x, [1, 2, 3], False))


@case("reduce-i32", "sum, max, min of i32 are exact.")
def _(c):
    i = c.inp("i", "i32", "5, 7")
    c.s("s = sum(i, axis=0)\nhi = max(i, axis=-1, keepdims=false)\nlo = min(i)")
    c.out("s", "i32", rsum(i, 0))
    c.out("hi", "i32", rmax(i, -1, False))
    c.out("lo", "i32", rmin(i))


@case("reduce-f16", "f16 reductions accumulate in f64 and round once.")
def _(c):
    x = c.inp("x", "f16", "31, 7")
    c.s("s = sum(x, axis=-1)\nm = mean(x, axis=0)\nhi = max(x, axis=1, keepdims=false)")
    c.out("s", "f16", rsum(x, -1))
    c.out("m", "f16", rmean(x, 0))
    c.out("hi", "f16", rmax(x, 1, False))


@case("reduce-bf16", "bf16 reductions accumulate in f64 and round once.")
def _(c):
    x = c.inp("x", "bf16", "7, 31")
    c.s("s = sum(x, axis=1)\nm = mean(x)\nlo = min(x, axis=0, keepdims=false)")
    c.out("s", "bf16", rsum(x, 1))
    c.out("m", "bf16", rmean(x))
    c.out("lo", "bf16", rmin(x, 0, False))


@case("reduce-broadcast-back", "keepdims=true by default, so reductions broadcast back as "
      "written; x / sum(x) is a global normalize.")
def _(c):
    x = c.inp("x", "f32", "5, 31", "pos")
    c.s("centered = x - mean(x, axis=-1)\ncols = x / sum(x, axis=0)\nglobal = x / sum(x)")
    c.out("centered", "f32", x - rmean(x, -1))
    c.out("cols", "f32", x / rsum(x, 0))
    c.out("global", "f32", x / rsum(x))

# --------------------------------------------------------------- layout


@case("transpose-default", "transpose without perm swaps the last two axes.")
def _(c):
    x = c.inp("x", "f32", "3, 5, 7")
    m = c.inp("m", "f32", "5, 7")
    c.s("t3 = transpose(x)\nt2 = transpose(m)")
    c.out("t3", "f32", tr(x))
    c.out("t2", "f32", tr(m))


@case("transpose-perm", "transpose with perm: out axis i is in axis perm[i].")
def _(c):
    x = c.inp("x", "f32", "3, 5, 7")
    w = c.inp("w", "f32", "2, 3, 5, 7")
    c.s("a = transpose(x, perm=[2, 0, 1])\nb = transpose(x, perm=[1, 0, 2])\n"
        "d = transpose(w, perm=[3, 1, 0, 2])\ne = transpose(x, perm=[0, 1, 2])")
    c.out("a", "f32", np.transpose(x, [2, 0, 1]))
    c.out("b", "f32", np.transpose(x, [1, 0, 2]))
    c.out("d", "f32", np.transpose(w, [3, 1, 0, 2]))
    c.out("e", "f32", x)


@case("reshape", "reshape in C order, with one -1 inferred, to rank 1 and with unit dims.")
def _(c):
    x = c.inp("x", "f32", "3, 5, 7")
    c.s("a = reshape(x, shape=[-1, 7])\nb = reshape(x, shape=[5, -1])\n"
        "f = reshape(x, shape=[105])\nu = reshape(x, shape=[1, -1, 1, 5])\n"
        "t = reshape(transpose(x), shape=[3, 35])")
    c.out("a", "f32", x.reshape(-1, 7))
    c.out("b", "f32", x.reshape(5, -1))
    c.out("f", "f32", x.reshape(105))
    c.out("u", "f32", x.reshape(1, -1, 1, 5))
    c.out("t", "f32", tr(x).reshape(3, 35))


@case("broadcast-to", "broadcast_to stretches unit dims and adds leading ones.")
def _(c):
    col = c.inp("col", "f32", "5, 1")
    row = c.inp("row", "f32", "7")
    c.s("a = broadcast_to(col, shape=[3, 5, 7])\nb = broadcast_to(row, shape=[2, 5, 7])")
    c.out("a", "f32", np.broadcast_to(col, (3, 5, 7)))
    c.out("b", "f32", np.broadcast_to(row, (2, 5, 7)))


@case("slice", "slice is half-open; negative start, end and axis count from the end.")
def _(c):
    x = c.inp("x", "f32", "5, 7")
    c.s("a = slice(x, axis=1, start=-3, end=7)\nb = slice(x, axis=0, start=1, end=-1)\n"
        "d = slice(x, axis=-1, start=2, end=5)\ne = slice(x, axis=0, start=0, end=5)")
    c.out("a", "f32", x[:, 4:7])
    c.out("b", "f32", x[1:4, :])
    c.out("d", "f32", x[:, 2:5])
    c.out("e", "f32", x)


@case("concat", "concat of three operands on the last axis (also by default) and on axis 0.")
def _(c):
    a = c.inp("a", "f32", "5, 2")
    b = c.inp("b", "f32", "5, 3")
    d = c.inp("d", "f32", "5, 1")
    r = c.inp("r", "f32", "3, 2")
    c.s("last = concat(a, b, d, axis=-1)\ndflt = concat(a, b, d)\nrows = concat(a, r, a, axis=0)")
    c.out("last", "f32", np.concatenate([a, b, d], -1))
    c.out("dflt", "f32", np.concatenate([a, b, d], -1))
    c.out("rows", "f32", np.concatenate([a, r, a], 0))


@case("layout-i32-bool", "layout ops move i32 and bool values too.")
def _(c):
    i = c.inp("i", "i32", "3, 5")
    m = c.inp("m", "bool", "3, 5")
    c.s("t = transpose(i)\nr = reshape(m, shape=[5, 3])\ns = slice(i, axis=1, start=1, end=4)\n"
        "k = concat(m, m, axis=0)\n"
        "b = broadcast_to(slice(m, axis=0, start=0, end=1), shape=[2, 5])")
    c.out("t", "i32", tr(i))
    c.out("r", "bool", m.reshape(5, 3))
    c.out("s", "i32", i[:, 1:4])
    c.out("k", "bool", np.concatenate([m, m], 0))
    c.out("b", "bool", np.broadcast_to(m[0:1], (2, 5)))


@case("layout-chain", "layout ops mixed with arithmetic: transpose, add a bias, flatten.")
def _(c):
    x = c.inp("x", "f32", "3, 5, 7")
    b = c.inp("b", "f32", "5")
    c.s("y = reshape(transpose(x) * 2 + b, shape=[-1])")
    c.out("y", "f32", (tr(x) * 2 + b).reshape(-1))

# --------------------------------------------------------------- matmul


@case("matmul-2d", "matmul [5,7] x [7,3].")
def _(c):
    a = c.inp("a", "f32", "5, 7")
    b = c.inp("b", "f32", "7, 3")
    c.s("y = matmul(a, b)")
    c.out("y", "f32", matmul(a, b))


@case("matmul-batched", "batched matmul [2,5,7] x [2,7,3].")
def _(c):
    a = c.inp("a", "f32", "2, 5, 7")
    b = c.inp("b", "f32", "2, 7, 3")
    c.s("y = matmul(a, b)")
    c.out("y", "f32", matmul(a, b))


@case("matmul-broadcast-batch", "batch dims broadcast: [4,1,5,7] x [3,7,2] and [2,5,7] x [7,3].")
def _(c):
    a = c.inp("a", "f32", "4, 1, 5, 7")
    b = c.inp("b", "f32", "3, 7, 2")
    x = c.inp("x", "f32", "2, 5, 7")
    w = c.inp("w", "f32", "7, 3")
    c.s("y = matmul(a, b)\nz = matmul(x, w)")
    c.out("y", "f32", matmul(a, b))
    c.out("z", "f32", matmul(x, w))


@case("matmul-transposed-operands", "matmul of transposes: q k^T and a^T b.")
def _(c):
    q = c.inp("q", "f32", "3, 5, 7")
    k = c.inp("k", "f32", "3, 31, 7")
    a = c.inp("a", "f32", "7, 5")
    b = c.inp("b", "f32", "7, 3")
    c.s("s = matmul(q, transpose(k))\nt = matmul(transpose(a), b)")
    c.out("s", "f32", matmul(q, tr(k)))
    c.out("t", "f32", matmul(tr(a), b))


@case("matmul-f16", "f16 matmul accumulates in f64 here, rounds once.")
def _(c):
    a = c.inp("a", "f16", "5, 31")
    b = c.inp("b", "f16", "31, 3")
    c.s("y = matmul(a, b)")
    c.out("y", "f16", matmul(a, b))


@case("matmul-bf16", "bf16 matmul accumulates in f64 here, rounds once.")
def _(c):
    a = c.inp("a", "bf16", "7, 33")
    b = c.inp("b", "bf16", "33, 5")
    c.s("y = matmul(a, b)")
    c.out("y", "bf16", matmul(a, b))


@case("matmul-i32", "i32 matmul is exact.")
def _(c):
    a = c.inp("a", "i32", "5, 7")
    b = c.inp("b", "i32", "7, 3")
    c.s("y = matmul(a, b)")
    c.out("y", "i32", matmul(a, b))


@case("matmul-epilogue", "gelu(matmul(x, w) + b), the gemm_bias_gelu sample in small.", trans=True)
def _(c):
    x = c.inp("x", "f32", "M=5, K=31")
    w = c.param("w", "f32", "K, N=7")
    b = c.param("b", "f32", "N")
    c.s("y = gelu(matmul(x, w) + b)")
    c.out("y", "f32", gelu(matmul(x, w) + b))

# ----------------------------------------------------------- composites


@case("softmax-f32", "softmax over the last axis (default) and over axis 0.", trans=True)
def _(c):
    x = c.inp("x", "f32", "5, 7", "wide")
    c.s("a = softmax(x)\nb = softmax(x, axis=0)")
    c.out("a", "f32", softmax(x))
    c.out("b", "f32", softmax(x, 0))


@case("softmax-rank3", "softmax over a middle axis of a rank-3 tensor.", trans=True)
def _(c):
    x = c.inp("x", "f32", "3, 5, 7", "wide")
    c.s("y = softmax(x, axis=1)")
    c.out("y", "f32", softmax(x, 1))


@case("softmax-f16", "softmax on f16 rows.", trans=True)
def _(c):
    x = c.inp("x", "f16", "7, 31", "wide")
    c.s("y = softmax(x)")
    c.out("y", "f16", softmax(x))


@case("softmax-bf16", "softmax on bf16 rows.", trans=True)
def _(c):
    x = c.inp("x", "bf16", "5, 33", "wide")
    c.s("y = softmax(x)")
    c.out("y", "bf16", softmax(x))


@case("softmax-masked-inf", "where(mask, x, -inf) then softmax: masked entries give "
      "exactly 0.", trans=True)
def _(c):
    m = c.rng.random_sample((7, 7)) < 0.5
    m[np.arange(7), np.arange(7)] = True        # every row keeps one
    mask = c.inp("mask", "bool", "7, 7", values=m)
    x = c.inp("x", "f32", "7, 7", "wide")
    c.s("s = where(mask, x, -inf)\ny = softmax(s)")
    c.out("y", "f32", softmax(np.where(mask != 0, x, -np.inf)))


@case("log-softmax", "log_softmax over the last axis (default) and over axis 0.", trans=True)
def _(c):
    x = c.inp("x", "f32", "5, 7", "wide")
    c.s("a = log_softmax(x)\nb = log_softmax(x, axis=0)")
    c.out("a", "f32", log_softmax(x))
    c.out("b", "f32", log_softmax(x, 0))


@case("layernorm-f32", "layernorm: (x - mean) / sqrt(var + eps) * gamma + beta, biased variance; "
      "default eps 1e-5 and eps=1e-3.", trans=True)
def _(c):
    x = c.inp("x", "f32", "5, 31", "wide")
    g = c.param("g", "f32", "31")
    b = c.param("b", "f32", "31")
    c.s("a = layernorm(x, g, b)\nd = layernorm(x, g, b, axis=-1, eps=1e-3)")
    c.out("a", "f32", layernorm(x, g, b))
    c.out("d", "f32", layernorm(x, g, b, 1e-3))


@case("layernorm-f16", "layernorm on f16.", trans=True)
def _(c):
    x = c.inp("x", "f16", "7, 31", "wide")
    g = c.param("g", "f16", "31")
    b = c.param("b", "f16", "31")
    c.s("y = layernorm(x, g, b)")
    c.out("y", "f16", layernorm(x, g, b))


@case("rmsnorm-f32", "rmsnorm: x / sqrt(mean(x^2) + eps) * w; default eps 1e-6 and "
      "eps=1e-2.", trans=True)
def _(c):
    x = c.inp("x", "f32", "5, 31", "wide")
    w = c.param("w", "f32", "31")
    c.s("a = rmsnorm(x, w)\nd = rmsnorm(x, w, eps=1e-2)")
    c.out("a", "f32", rmsnorm(x, w))
    c.out("d", "f32", rmsnorm(x, w, 1e-2))


@case("rmsnorm-bf16", "rmsnorm on bf16.", trans=True)
def _(c):
    x = c.inp("x", "bf16", "7, 31", "wide")
    w = c.param("w", "bf16", "31")
    c.s("y = rmsnorm(x, w)")
    c.out("y", "bf16", rmsnorm(x, w))

# ---------------------------------------------------------- broadcasting


@case("broadcast-patterns", "NumPy broadcasting: column with row, vector over matrix, rank 3 with "
      "rank 2, [1] over a matrix, a rank-0 tensor, numbers on either side.")
def _(c):
    col = c.inp("col", "f32", "5, 1")
    row = c.inp("row", "f32", "1, 7")
    vec = c.inp("vec", "f32", "7")
    mat = c.inp("mat", "f32", "5, 7")
    cube = c.inp("cube", "f32", "3, 1, 7")
    one = c.inp("one", "f32", "1")
    s = c.inp("s", "f32", "")
    c.s("a = col + row\nb = vec * mat\nd = cube - col\ne = one + mat\nf = mat / s\n"
        "g = 2 * mat - 0.5\nh = s + 1")
    c.out("a", "f32", col + row)
    c.out("b", "f32", vec * mat)
    c.out("d", "f32", cube - col)
    c.out("e", "f32", one + mat)
    c.out("f", "f32", mat / s)
    c.out("g", "f32", 2 * mat - 0.5)
    c.out("h", "f32", s + 1)


@case("broadcast-rank4", "both operands stretch: [2,1,5,1] * [3,1,7] is [2,3,5,7].")
def _(c):
    a = c.inp("a", "f32", "2, 1, 5, 1")
    b = c.inp("b", "f32", "3, 1, 7")
    c.s("y = a * b")
    c.out("y", "f32", a * b)


@case("broadcast-f16-bias", "an f16 bias row over f16 rows, and gelu on top.", trans=True)
def _(c):
    x = c.inp("x", "f16", "R=7, C=31", "wide")
    b = c.param("b", "f16", "C", "wide")
    c.s("y = gelu(x + b)")
    c.out("y", "f16", gelu(x + b))

# ------------------------------------------------- syntax and structure


@case("infix-precedence", "* / bind tighter than + -, both left-associative; unary minus binds "
      "tightest; comparisons bind loosest; parentheses override.")
def _(c):
    a = c.inp("a", "f32", "7")
    b = c.inp("b", "f32", "7")
    d = c.inp("d", "f32", "7")
    exprs = [("p1", "a + b * d", a + b * d),
             ("p2", "a - b - d", (a - b) - d),
             ("p3", "a / b / d", (a / b) / d),
             ("p4", "-a + b", (-a) + b),
             ("p5", "a - -b", a + b),
             ("p6", "(a + b) * d", (a + b) * d),
             ("p7", "a * b + d * a", a * b + d * a),
             ("p8", "-(a + b) * d", -(a + b) * d),
             ("p9", "a - b * d + a / b", a - b * d + a / b),
             ("p10", "a * 2 - 3 / b", a * 2 - 3 / b),
             ("p11", "a - (b - d)", a - (b - d)),
             ("p12", "- - a * b", a * b)]
    for n, e, _v in exprs:
        c.s("%s = %s" % (n, e))
    c.s("c1 = a + b < d * a\nc2 = a - b >= -d")
    for n, _e, v in exprs:
        c.out(n, "f32", v)
    c.out("c1", "bool", (a + b) < (d * a))
    c.out("c2", "bool", (a - b) >= -d)


@case("number-literals", "numbers: integers, reals, 3., 2.5e1, 1e-1, inf; they take the other "
      "operand's dtype.")
def _(c):
    x = c.inp("x", "f32", "5, 7")
    c.s("a = x * 3. + 2.5e1\nb = x - 1e-1\nd = x * 0.25 + 7\ne = minimum(x, inf)\n"
        "f = maximum(x, -inf)\ng = 1 / 8 * x")
    c.out("a", "f32", x * 3.0 + 25.0)
    c.out("b", "f32", x - 0.1)
    c.out("d", "f32", x * 0.25 + 7)
    c.out("e", "f32", x)
    c.out("f", "f32", x)
    c.out("g", "f32", x / 8)


@case("inf-nan-values", "infinities and NaN flow through where; outputs hold them exactly.")
def _(c):
    x = c.inp("x", "f32", "5, 7")
    c.s("pos = where(x > 0, x, -inf)\nnan_neg = where(x > 0, x, nan)\nbig = x * 1e38 * 10")
    c.out("pos", "f32", np.where(x > 0, x, -np.inf))
    c.out("nan_neg", "f32", np.where(x > 0, x, np.nan))
    c.out("big", "f32", x * 1e38 * 10)


@case("multiline-and-comments", "a statement may span lines inside parentheses and brackets; "
      "comments and blank lines anywhere.")
def _(c):
    x = c.inp("x", "f32", "3, 5")
    b = c.inp("b", "f32", "5")
    c.s("# a comment on a line of its own\n"
        "\n"
        "y = add(        # a comment inside the call\n"
        "      x,\n"
        "      b\n"
        "    )\n"
        "t = transpose(y,\n"
        "              perm=[1,\n"
        "                    0])   # the list spans lines too\n"
        "z = (x\n"
        "     * 2)\n")
    c.out("y", "f32", x + b)
    c.out("t", "f32", (x + b).T)
    c.out("z", "f32", x * 2)


@case("symbolic-dims", "symbolic dims with defaults at first use, used again without.")
def _(c):
    x = c.inp("x", "f32", "N=5, M=7")
    w = c.param("w", "f32", "M, K=3")
    b = c.param("b", "f32", "K")
    r = c.inp("r", "f32", "N, K")
    c.s("y = matmul(x, w) + b + r")
    c.out("y", "f32", matmul(x, w) + b + r)


@case("rank0", "rank-0 tensors: an f32[] input, a rank-0 output, reductions to rank 0.")
def _(c):
    x = c.inp("x", "f32", "5, 7")
    s = c.inp("s", "f32", "")
    c.s("y = x * s\nt = s * s + 1\nm = max(x, keepdims=false) - s")
    c.out("y", "f32", x * s)
    c.out("t", "f32", s * s + 1)
    c.out("m", "f32", rmax(x, None, False) - s)


@case("multi-output-order", "several outputs of different dtypes and shapes, in `output` order.")
def _(c):
    x = c.inp("x", "f32", "5, 7")
    i = c.inp("i", "i32", "7")
    c.s("k = i * 2\nf = sum(x, axis=0)\nm = x > 0")
    c.out("m", "bool", x > 0)
    c.out("k", "i32", i * 2)
    c.out("f", "f32", rsum(x, 0))


@case("save-basic", "@save returns the value as saved.NAME beside the outputs.", trans=True)
def _(c):
    x = c.inp("x", "f32", "5, 7")
    c.s("h = x * 2 + 1 @save\ny = tanh(h)")
    h = x * 2 + 1
    c.out("y", "f32", tanh(h))
    c.save("h", "f32", h)


@case("save-and-output", "a value both saved and output is written twice: y.npy and saved.y.npy.")
def _(c):
    x = c.inp("x", "f32", "3, 5")
    c.s("y = x - 1 @save\nz = y * y")
    c.out("y", "f32", x - 1)
    c.out("z", "f32", (x - 1) ** 2)
    c.save("y", "f32", x - 1)


@case("save-f16", "a saved f16 value is rounded to f16 where it is written.")
def _(c):
    x = c.inp("x", "f16", "7, 5")
    c.s("h = x * 3 @save\ny = h - x")
    c.out("y", "f16", x * 3 - x)
    c.save("h", "f16", x * 3)


@case("save-materialize", "@save and @materialize change no value; both may annotate one "
      "statement.",
      trans=True)
def _(c):
    x = c.inp("x", "f32", "5, 7", "wide")
    c.s("a = exp(x) @save @materialize\nb = a * 2 @materialize\nd = b + a @materialize @save")
    a = exp(x)
    c.out("d", "f32", a * 3)
    c.save("a", "f32", a)
    c.save("d", "f32", a * 3)


@case("save-mlp", "a small MLP saving what backward needs: the layernorm output and the "
      "pre-activation.", trans=True)
def _(c):
    x = c.inp("x", "f32", "T=5, D=7", "wide")
    g = c.param("g", "f32", "D")
    be = c.param("be", "f32", "D")
    w1 = c.param("w1", "f32", "D, F=11")
    b1 = c.param("b1", "f32", "F")
    w2 = c.param("w2", "f32", "F, D")
    c.s("n = layernorm(x, g, be) @save\nh = matmul(n, w1) + b1 @save\ny = matmul(gelu(h), w2) + x")
    n = layernorm(x, g, be)
    h = matmul(n, w1) + b1
    c.out("y", "f32", matmul(gelu(h), w2) + x)
    c.save("n", "f32", n)
    c.save("h", "f32", h)


@case("fuse-block", "fuse { } asks for one kernel; the values are the same as without it.",
      trans=True)
def _(c):
    x = c.inp("x", "f32", "5, 7")
    b = c.inp("b", "f32", "7")
    c.s("fuse {\n  a = x + b\n  t = tanh(a) * 0.5\n}\ny = t - x")
    c.out("y", "f32", tanh(x + b) * 0.5 - x)


@case("ew-chain", "a chain of elementwise ops through temporaries (the tiny_chain sample "
      "in small).",
      trans=True)
def _(c):
    x = c.inp("x", "f32", "N=31")
    c.s("a1 = x * 1.5\na2 = a1 + 0.25\na3 = tanh(a2)\na4 = a3 * x\na5 = sigmoid(a4 - 0.5)\n"
        "a6 = exp(a5 * a5) - a3\na7 = sqrt(abs(a6)) + x\na8 = cos(sin(a7)) * a7\n"
        "a9 = minimum(maximum(a8, a5), 2)\ny = gelu(rsqrt(square(silu(a9)) + 1) * a9) - x")
    a1 = x * 1.5
    a3 = tanh(a1 + 0.25)
    a4 = a3 * x
    a5 = sigmoid(a4 - 0.5)
    a6 = exp(a5 * a5) - a3
    a7 = np.sqrt(np.abs(a6)) + x
    a8 = cos(sin(a7)) * a7
    a9 = np.minimum(np.maximum(a8, a5), 2)
    c.out("y", "f32", gelu(1 / np.sqrt(silu(a9) ** 2 + 1) * a9) - x)


@case("attention-small", "q k^T scaled, softmax, times v: the attn sample in small.", trans=True)
def _(c):
    q = c.inp("q", "f32", "BH=3, S=7, D=5", "wide")
    k = c.inp("k", "f32", "BH, S, D", "wide")
    v = c.inp("v", "f32", "BH, S, D")
    c.s("s = matmul(q, transpose(k)) * 0.5\np = softmax(s) @save\no = matmul(p, v)")
    p = softmax(matmul(q, tr(k)) * 0.5)
    c.out("o", "f32", matmul(p, v))
    c.save("p", "f32", p)

# ----------------------------------------- language version 2: elementwise

log1p, expm1, exp2, log2, tan, asin, acos, atan, sinh, cosh, asinh, acosh, atanh = (
    ufunc(f) for f in (math.log1p, math.expm1, math.exp2, math.log2, math.tan, math.asin, math.acos,
                       math.atan, math.sinh, math.cosh, math.asinh, math.acosh, math.atanh))
atan2 = ufunc(math.atan2)


def softplus(x):
    """log(1 + e^x), NumPy's logaddexp(0, x): no overflow either side."""
    return np.logaddexp(0.0, np.asarray(x, F64))


def hardsigmoid(x):
    return np.clip(np.asarray(x, F64) + 3.0, 0.0, 6.0) / 6.0


@case("v2-rounding-f32", "floor, ceil, round (half to even), trunc and sign (NaN stays NaN, "
      "both zeros give +0), exact.", trans="exact")
def _(c):
    v = _edge_f32(c, [-2.5, -1.5, -0.5, -0.0, 0.0, 0.5, 1.5, 2.5, 3.5, -1.7, 1.2, np.nan, np.inf, -np.inf,
                      0.49999997, 8388609.0])
    x = c.inp("x", "f32", "3, 11", values=v)
    c.s("f = floor(x)\nc = ceil(x)\nr = round(x)\nt = trunc(x)\ns = sign(x)")
    with np.errstate(invalid="ignore"):
        for n, val in (("f", np.floor(x)), ("c", np.ceil(x)), ("r", np.rint(x)), ("t", np.trunc(x)),
                       ("s", np.sign(x) + 0.0)):
            c.out(n, "f32", val)


@case("v2-unary-f32", "log1p expm1 exp2 log2 tan asin acos atan sinh cosh asinh acosh atanh "
      "and atan2 on f32, each in its domain.", trans=True)
def _(c):
    x = c.inp("x", "f32", "5, 7")
    y = c.inp("y", "f32", "5, 7")
    p = c.inp("p", "f32", "5, 7", "pos")
    c.s("l1 = log1p(p)\ne1 = expm1(x)\ne2 = exp2(x)\nl2 = log2(p)\nt = tan(x)\n"
        "as = asin(x / 2)\nac = acos(x / 2)\nat = atan(x)\nsh = sinh(x)\nch = cosh(x)\n"
        "ash = asinh(x)\nach = acosh(p + 1)\nath = atanh(x / 2.5)\na2 = atan2(x, y)")
    for n, v in (("l1", log1p(p)), ("e1", expm1(x)), ("e2", exp2(x)), ("l2", log2(p)), ("t", tan(x)),
                 ("as", asin(x / 2)), ("ac", acos(x / 2)), ("at", atan(x)), ("sh", sinh(x)), ("ch", cosh(x)),
                 ("ash", asinh(x)), ("ach", acosh(p + 1)), ("ath", atanh(x / 2.5)), ("a2", atan2(x, y))):
        c.out(n, "f32", v)


@case("v2-activations-f32", "softplus (no overflow at +-100), mish, hardsigmoid, hardswish, "
      "leaky_relu and elu with their default and given slope and alpha.", trans=True)
def _(c):
    v = _edge_f32(c, [-100.0, -30.0, -3.0, 3.0, 30.0, 100.0, -0.0, 0.0])
    x = c.inp("x", "f32", "3, 11", values=v / 25)
    w = c.inp("w", "f32", "11", values=[-100.0, -30.0, -3.0, 3.0, 30.0, 100.0, -2.9, 2.9, -0.5, 0.5, 0.0])
    c.s("sp = softplus(x)\nspw = softplus(w)\nmi = mish(x)\nhs = hardsigmoid(x * 2)\nhw = hardswish(w)\n"
        "lr = leaky_relu(x)\nlr2 = leaky_relu(x, slope=0.2)\nel = elu(x)\nel2 = elu(x, alpha=0.5)")
    for n, val in (("sp", softplus(x)), ("spw", softplus(w)), ("mi", x * np.tanh(softplus(x))),
                   ("hs", hardsigmoid(x * 2)), ("hw", w * hardsigmoid(w)),
                   ("lr", np.where(x > 0, x, x * 0.01)), ("lr2", np.where(x > 0, x, x * 0.2)),
                   ("el", np.where(x > 0, x, expm1(x))), ("el2", np.where(x > 0, x, 0.5 * expm1(x)))):
        c.out(n, "f32", val)


@case("v2-activations-f16", "version 2's unary ops on f16, one rounding each.", trans=True)
def _(c):
    x = c.inp("x", "f16", "3, 31", "wide")
    c.s("sp = softplus(x)\nmi = mish(x)\nel = elu(x)\ne1 = expm1(x)\nat = atan(x)")
    for n, v in (("sp", softplus(x)), ("mi", x * np.tanh(softplus(x))), ("el", np.where(x > 0, x, expm1(x))),
                 ("e1", expm1(x)), ("at", atan(x))):
        c.out(n, "f16", v)


@case("v2-activations-bf16", "version 2's unary ops on bf16, one rounding each.", trans=True)
def _(c):
    x = c.inp("x", "bf16", "7, 5", "wide")
    c.s("hs = hardswish(x)\nlr = leaky_relu(x, slope=0.1)\nsh = sinh(x)\nl1 = log1p(abs(x))\nr = round(x * 4)")
    for n, v in (("hs", x * hardsigmoid(x)), ("lr", np.where(x > 0, x, x * 0.1)), ("sh", sinh(x)),
                 ("l1", log1p(np.abs(x))), ("r", np.rint(x * 4))):
        c.out(n, "bf16", v)


@case("v2-predicates", "isnan and isinf give bool; not, and, or, xor take it.", trans="exact")
def _(c):
    x = c.inp("x", "f32", "12", values=[np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 3e38, -1e-40,
                                        np.nan, 2.0, -2.0])
    m = c.inp("m", "bool", "12")
    n_ = c.inp("n", "bool", "12")
    c.s("isn = isnan(x)\nisi = isinf(x)\nno = not(m)\nan = and(m, n)\nor = or(isnan(x), n)\n"
        "xo = xor(m, x > 0)")
    for name, v in (("isn", np.isnan(x)), ("isi", np.isinf(x)), ("no", m == 0), ("an", (m != 0) & (n_ != 0)),
                    ("or", np.isnan(x) | (n_ != 0)), ("xo", (m != 0) ^ (x > 0))):
        c.out(name, "bool", v.astype(F64))


@case("v2-clamp", "clamp: number bounds, tensor bounds that broadcast, NaN from any operand, "
      "lo > hi giving hi; and on i32.", trans="exact")
def _(c):
    x = c.inp("x", "f32", "4, 6", values=[np.nan, -3.0, -0.75, -0.5, 0.0, 0.25, 0.5, 1.0, 2.0, 5.0, -5.0, 0.7]
              + list(c._draw("f32", (12,), "any")))
    lo = c.inp("lo", "f32", "6", values=[-1.0, np.nan, -0.5, 0.5, 0.0, 1.0])
    hi = c.inp("hi", "f32", "4, 1", values=[1.0, 0.75, 2.0, -1.0])
    i = c.inp("i", "i32", "5, 7")
    c.s("a = clamp(x, -0.5, 1)\nb = clamp(x, lo, hi)\nk = clamp(i, -3, 4)\ns = sign(i)")
    with np.errstate(invalid="ignore"):
        c.out("a", "f32", np.minimum(np.maximum(x, -0.5), 1.0))
        c.out("b", "f32", np.minimum(np.maximum(x, lo), hi))
    c.out("k", "i32", np.minimum(np.maximum(i, -3), 4))
    c.out("s", "i32", np.sign(i))

@case("v2-logsumexp", "logsumexp over the last axis (kept) and over axis 0 (dropped); a row of "
      "-inf gives -inf and a row holding +inf gives +inf, as torch.logsumexp.", trans=True)
def _(c):
    v = c._draw("f32", (5, 7), "wide") * 10
    v[1, :] = -np.inf
    v[3, 2] = np.inf
    x = c.inp("x", "f32", "5, 7", values=v)
    c.s("l = logsumexp(x)\nk = logsumexp(x, axis=0, keepdims=false)")

    def lse(row):
        m = max(row)
        f = 0.0 if math.isinf(m) else m
        s = math.fsum(math.exp(r - f) for r in row)
        return (math.log(s) if s > 0 else -math.inf) + f
    c.out("l", "f32", np.array([[lse(r)] for r in x]))
    c.out("k", "f32", np.array([lse(col) for col in x.T]))


@case("v2-var-std", "var and std: over the last axis with correction 0 and 1, over every axis "
      "dropped to a scalar, in f32 and bf16.", trans=True)
def _(c):
    x = c.inp("x", "f32", "6, 9")
    h = c.inp("h", "bf16", "4, 8", "wide")
    c.s("v = var(x)\ns1 = std(x, correction=1)\nva = var(x, axis=[0, 1], keepdims=false)\n"
        "hs = std(h, axis=0)")

    def var(a, ddof):
        a = [float(t) for t in a]
        mu = math.fsum(a) / len(a)
        return math.fsum((t - mu) ** 2 for t in a) / (len(a) - ddof)
    c.out("v", "f32", np.array([[var(r, 0)] for r in x]))
    c.out("s1", "f32", np.array([[math.sqrt(var(r, 1))] for r in x]))
    c.out("va", "f32", np.array(var(x.ravel(), 0)))
    c.out("hs", "bf16", np.array([[math.sqrt(var(col, 0)) for col in h.T]]))

@case("v2-prod-any-all", "prod over the last axis (kept), over axis 0 (dropped) and over every "
      "axis, in f32 and f16; any and all over a bool tensor by row, by column and in whole, a row of "
      "all-false and one of all-true included.")
def _(c):
    x = c.inp("x", "f32", "5, 6", values=1.0 + 0.25 * c._draw("f32", (30,), "any"))
    h = c.inp("h", "f16", "3, 4", values=1.0 + 0.5 * c._draw("f16", (12,), "any"))
    bv = (c._draw("f32", (4, 7), "any") > 0).astype(F64)
    bv[1, :] = 0.0
    bv[2, :] = 1.0
    b = c.inp("b", "bool", "4, 7", values=bv)
    c.s("p = prod(x, axis=-1)\npc = prod(x, axis=0, keepdims=false)\npa = prod(h)\n"
        "an = any(b, axis=-1)\nal = all(b, axis=-1)\nac = all(b, axis=0, keepdims=false)\n"
        "aa = any(b > b)")
    c.out("p", "f32", np.array([[math.prod(r)] for r in x]))
    c.out("pc", "f32", np.array([math.prod(col) for col in x.T]))
    c.out("pa", "f16", np.array([[math.prod(h.ravel())]]))
    c.out("an", "bool", np.any(b != 0, axis=-1, keepdims=True).astype(F64))
    c.out("al", "bool", np.all(b != 0, axis=-1, keepdims=True).astype(F64))
    c.out("ac", "bool", np.all(b != 0, axis=0).astype(F64))
    c.out("aa", "bool", np.zeros((1, 1)))


@case("v2-argmax-argmin", "argmax and argmin over the last axis (kept), over axis 0 (dropped), over two "
      "axes (the index in C order among the reduced elements) and over all; the first of equal values, "
      "a NaN counting as the extreme (the first NaN wins), a row of -inf giving 0; f32, f16 and i32.",
      trans="exact")
def _(c):
    v = c._draw("f32", (4, 6), "any")
    v[1, 2] = v[1, 4] = 5.0          # a tie: the first
    v[2, 1] = np.nan                 # NaN wins, for both
    v[2, 3] = np.nan
    v[3, :] = -np.inf                # all -inf: index 0
    x = c.inp("x", "f32", "4, 6", values=v)
    h = c.inp("h", "f16", "3, 2, 5")
    i = c.inp("i", "i32", "5, 4")
    c.s("am = argmax(x, axis=-1)\nan = argmin(x, axis=-1)\nac = argmax(x, axis=0, keepdims=false)\n"
        "hm = argmax(h, axis=[1, 2], keepdims=false)\nha = argmin(h)\nim = argmax(i, axis=0)\n"
        "ii = argmin(i, axis=-1, keepdims=false)")

    def arg(a, axes, f):
        """NumPy's argmax/argmin over `axes` moved last and flattened."""
        a = np.asarray(a)
        kept = [d for d in range(a.ndim) if d not in axes]
        y = np.transpose(a, kept + sorted(axes)).reshape([a.shape[d] for d in kept] + [-1])
        return f(y, axis=-1)
    c.out("am", "i32", arg(x, [1], np.argmax).reshape(4, 1))
    c.out("an", "i32", arg(x, [1], np.argmin).reshape(4, 1))
    c.out("ac", "i32", arg(x, [0], np.argmax))
    c.out("hm", "i32", arg(h, [1, 2], np.argmax))
    c.out("ha", "i32", arg(h, [0, 1, 2], np.argmin).reshape(1, 1, 1))
    c.out("im", "i32", arg(i, [0], np.argmax).reshape(1, 4))
    c.out("ii", "i32", arg(i, [1], np.argmin))


@case("v2-dims-in-attributes", "a symbolic dim of the graph standing for its integer in integer "
      "attributes: reshape's shape, slice's start and end, broadcast_to's shape.")
def _(c):
    x = c.inp("x", "f32", "T=6, D=8")
    c.s("r = reshape(x, shape=[T, 2, 4])\ns = slice(x, axis=1, start=2, end=D)\n"
        "b = broadcast_to(slice(x, axis=0, end=1), shape=[T, D])")
    c.out("r", "f32", x.reshape(6, 2, 4))
    c.out("s", "f32", x[:, 2:8])
    c.out("b", "f32", np.broadcast_to(x[0:1, :], (6, 8)))


@case("v2-iota-gather", "iota along each axis (i32 and f32) and a causal mask from two; gather as NumPy's "
      "take: an embedding lookup (negative ids count from the end), on axis 1 with 2-D indices, and "
      "fused with arithmetic on both sides; take_along_axis with indices broadcast on the other axes, "
      "and the target logit of a cross-entropy.", trans="exact")
def _(c):
    ids = c.inp("ids", "i32", "T=5", values=[0, 9, -1, -10, 3])
    table = c.param("table", "f32", "V=10, D=4")
    h = c.inp("h", "f16", "2, 9, 3")
    j = c.inp("j", "i32", "3, 2", values=[5, -6, 0, 2, -1, 4])
    x = c.inp("x", "bf16", "R=3, C=9")
    tg = c.inp("tg", "i32", "R, 1", values=[8, -9, 2])
    k = c.inp("k", "i32", "1, 2", values=[1, -1])
    c.s("ia = iota(shape=[3, 4], axis=1)\nib = iota(shape=[3, 4], axis=0, dtype=f32)\n"
        "ic = iota(shape=[T, T], axis=1) <= iota(shape=[T, T], axis=0)\n"
        "e = gather(table, ids)\ne2 = gather(table * 2, ids) + iota(shape=[T, D], axis=0, dtype=f32)\n"
        "g = gather(h, j, axis=1)\n"
        "t = take_along_axis(x, tg)\nt2 = take_along_axis(x, k, axis=-1)\n"
        "t3 = take_along_axis(h, cast(iota(shape=[1, 1, 3], axis=2), dtype=i32), axis=1)")
    idx = np.array([0, 9, -1, -10, 3])
    c.out("ia", "i32", np.broadcast_to(np.arange(4), (3, 4)))
    c.out("ib", "f32", np.broadcast_to(np.arange(3)[:, None], (3, 4)))
    c.out("ic", "bool", (np.arange(5)[None, :] <= np.arange(5)[:, None]).astype(F64))
    c.out("e", "f32", np.take(table, idx, axis=0))
    c.out("e2", "f32", np.take(table * 2, idx, axis=0) + np.arange(5)[:, None])
    c.out("g", "f16", np.take(h, np.array(j, dtype=np.int64), axis=1))
    c.out("t", "bf16", np.take_along_axis(x, np.array(tg, dtype=np.int64) % 9, axis=-1))
    c.out("t2", "bf16", np.take_along_axis(x, np.broadcast_to(np.array(k, dtype=np.int64) % 9, (3, 2)),
                                           axis=-1))
    c.out("t3", "f16", np.take_along_axis(h, np.broadcast_to(np.arange(3)[None, None, :], (2, 1, 3)), axis=1))


@case("v2-floordiv-mod", "floordiv and mod as Python's // and %: the quotient rounded toward -inf, the "
      "remainder with the divisor's sign (also for floats, with exact zeros signed by the divisor); "
      "i32 with every sign pairing and INT_MIN // -1 wrapping to INT_MIN (the divisor kept from 0, "
      "so that drawn inputs divide too).", trans="exact")
def _(c):
    a = c.inp("a", "f32", "8", values=[7.5, -7.5, 7.5, -7.5, 6.0, -6.0, 0.25, -1e-8])
    b = c.inp("b", "f32", "8", values=[2.0, 2.0, -2.0, -2.0, 3.0, -3.0, -0.5, 3.0])
    i = c.inp("i", "i32", "9", values=[7, -7, 7, -7, 6, -6, 0, -2147483648, 2147483647])
    j = c.inp("j", "i32", "9", values=[2, 2, -2, -2, 3, 3, -5, -1, -2147483648])
    c.s("jj = where(j == 0, 1, j)\nq = floordiv(a, b)\nr = mod(a, b)\nqi = floordiv(i, jj)\nri = mod(i, jj)\n"
        "qn = floordiv(i, 4)\nrn = mod(a, 1.5)")
    c.out("q", "f32", np.floor_divide(a, b))
    c.out("r", "f32", np.mod(a, b))
    ii, jj = np.array(i, dtype=np.int64), np.array(j, dtype=np.int64)
    wrap = lambda v: ((v + 2**31) % 2**32) - 2**31
    c.out("qi", "i32", wrap(ii // jj))
    c.out("ri", "i32", wrap(ii % jj))
    c.out("qn", "i32", ii // 4)
    c.out("rn", "f32", np.mod(a, 1.5))


@case("v2-cross-entropy", "cross_entropy as logsumexp of each row less the logit its target picks "
      "(negative targets from the end): over the last axis of f32 logits, and over axis 0 of f16 "
      "with targets broadcast.",
      trans=True)
def _(c):
    v = c._draw("f32", (4, 10), "wide")
    lg = c.inp("lg", "f32", "4, 10", values=v)
    tg = c.inp("tg", "i32", "4, 1", values=[3, -1, 0, 9])
    h = c.inp("h", "f16", "9, 3", dom="wide")
    th = c.inp("th", "i32", "1, 3", values=[4, -9, 8])
    c.s("l = cross_entropy(lg, tg)\nl0 = cross_entropy(h, th, axis=0)")

    def lse(x, axis):
        m = rmax(x, axis)
        return m + log(rsum(exp(x - m), axis))
    t = np.array(tg, dtype=np.int64) % 10
    c.out("l", "f32", lse(lg, -1) - np.take_along_axis(lg, t, axis=-1))
    c.out("l0", "f16", lse(h, 0) - np.take_along_axis(h, np.array(th, dtype=np.int64) % 9, axis=0))


@case("v2-int8", "i8 and u8: one byte a value in memory; add, sub, mul, neg and abs wrap in two's "
      "complement (127 + 1 is -128, abs(-128) is -128, 0 - 1 in u8 is 255); casts from floats and "
      "from i32 truncate toward zero and saturate (NaN gives 0); floordiv, mod, comparisons, max; a "
      "sum saturates where it is written.", trans="exact")
def _(c):
    a = c.inp("a", "i8", "8", values=[127, -128, 100, -100, 5, -7, 0, 64])
    b = c.inp("b", "i8", "8", values=[1, -1, 100, -100, -3, 2, 9, 2])
    u = c.inp("u", "u8", "8", values=[255, 0, 200, 1, 17, 128, 3, 250])
    x = c.inp("x", "f32", "8", values=[300.7, -300.2, 1.9, -1.9, np.nan, 127.5, -128.9, 0.4])
    c.s("s = a + b\nm = a * b - 1\nn = neg(a)\nab = abs(a)\nus = u + u\nud = u - 1\n"
        "ci = cast(x, dtype=i8)\ncu = cast(x, dtype=u8)\nc8 = cast(cast(a, dtype=i32) * 1000, dtype=i8)\n"
        "q = floordiv(a, where(b == 0, 1, b))\nr = mod(u, 7)\nsm = sum(u, axis=0)\nmx = max(a, axis=0)\n"
        "lt = a < b\nf = cast(u, dtype=f32) * 0.5")
    ai, bi, ui = (np.array(v, dtype=np.int64) for v in (a, b, u))
    c.out("s", "i8", wrap(ai + bi, 8, True))
    c.out("m", "i8", wrap(wrap(ai * bi, 8, True) - 1, 8, True))
    c.out("n", "i8", wrap(-ai, 8, True))
    c.out("ab", "i8", wrap(np.abs(ai), 8, True))
    c.out("us", "u8", wrap(ui + ui, 8, False))
    c.out("ud", "u8", wrap(ui - 1, 8, False))
    c.out("ci", "i8", ROUND["i8"](x))
    c.out("cu", "u8", ROUND["u8"](x))
    c.out("c8", "i8", np.clip(ai * 1000, -128, 127))
    c.out("q", "i8", wrap(ai // bi, 8, True))
    c.out("r", "u8", ui % 7)
    c.out("sm", "u8", [min(255, int(ui.sum()))])
    c.out("mx", "i8", [ai.max()])
    c.out("lt", "bool", (ai < bi).astype(F64))
    c.out("f", "f32", ui * 0.5)


@case("v2-scan", "cumsum and cumprod along the last, a middle and the first axis; exclusive (the "
      "identity first, the last element left out) and reversed (from the axis's end), and both; f32 "
      "and f16 in f64 (the reference), rounded once; i32 products of 40 factors wrapping modulo "
      "2^32, i32, i8 and u8 sums wrapping; a scan fused with arithmetic on both sides.")
def _(c):
    x = c.inp("x", "f32", "3, 7")
    h = c.inp("h", "f16", "2, 5, 3")
    k = c.inp("k", "i32", "2, 40")
    q = c.inp("q", "i8", "8", values=[100, 100, -50, -128, 7, 127, 1, -3])
    u = c.inp("u", "u8", "6", values=[200, 100, 0, 255, 3, 16])
    c.s("a = cumsum(x)\nb = cumsum(x, axis=0, exclusive=true)\nd = cumprod(h, axis=1, reverse=true)\n"
        "e = cumprod(h, axis=1, exclusive=true, reverse=true)\nf = cumsum(x * 2 - 1, axis=-1) * x\n"
        "kp = cumprod(k, axis=-1)\nks = cumsum(k, axis=0, reverse=true)\nqs = cumsum(q)\n"
        "us = cumsum(u, exclusive=true)")

    def flip_scan(f, v, axis, exclusive, reverse, one):
        """f (np.cumsum or np.cumprod) along axis; exclusive shifts in `one`."""
        v = np.flip(v, axis) if reverse else np.asarray(v)
        y = f(v, axis=axis)
        if exclusive:
            first = np.full_like(np.take(y, [0], axis=axis), one)
            y = np.concatenate([first, np.take(y, range(y.shape[axis] - 1), axis=axis)], axis=axis)
        return np.flip(y, axis) if reverse else y
    c.out("a", "f32", np.cumsum(x, axis=1))
    c.out("b", "f32", flip_scan(np.cumsum, x, 0, True, False, 0))
    c.out("d", "f16", flip_scan(np.cumprod, h, 1, False, True, 1))
    c.out("e", "f16", flip_scan(np.cumprod, h, 1, True, True, 1))
    c.out("f", "f32", np.cumsum(x * 2 - 1, axis=-1) * x)
    ki = np.array(k, dtype=np.int64)
    c.out("kp", "i32", wrap(np.cumprod(ki.astype(np.uint64), axis=-1).astype(np.int64), 32, True))
    c.out("ks", "i32", wrap(flip_scan(np.cumsum, ki, 0, False, True, 0), 32, True))
    c.out("qs", "i8", wrap(np.cumsum(np.array(q, dtype=np.int64)), 8, True))
    c.out("us", "u8", wrap(flip_scan(np.cumsum, np.array(u, dtype=np.int64), 0, True, False, 0), 8, False))


@case("v2-topk", "topk: values and indices, sorted, the larger (or, largest=false, the smaller) values "
      "first, equal values by lower index, a NaN above every number; along the last and a middle axis, "
      "k of 1, of some and of the whole row; f32 with ties and NaNs, f16, i32 full of ties; values and "
      "indices used by arithmetic after it, @save on both.", trans="exact")
def _(c):
    v = c._draw("f32", (3, 7), "any")
    v[0, 1] = v[0, 5] = 9.0          # a tie for first: the lower index
    v[1, 2] = np.nan                 # NaN above every number
    v[1, 6] = np.nan
    v[2, :] = [1, 1, -1, 1, -1, 1, 1]
    x = c.inp("x", "f32", "3, 7", values=v)
    h = c.inp("h", "f16", "2, 6, 3")
    k = c.inp("k", "i32", "4, 9")
    c.s("xv, xi = topk(x, k=3)\nsv, si = topk(x, k=2, largest=false)\nav, ai = topk(x, k=7) @save\n"
        "hv, hi = topk(h, k=4, axis=1)\nkv, ki = topk(k, k=1)\nkw, kj = topk(k, k=5, largest=false)\n"
        "y = xv * 2 + cast(xi, dtype=f32)")

    def topk(a, kk, axis, largest):
        """Indices of the kk first along axis in the order above, and the values."""
        a = np.moveaxis(np.asarray(a, F64), axis, -1)
        idx = np.empty(a.shape[:-1] + (kk,), np.int64)
        for pos in np.ndindex(a.shape[:-1]):
            row = a[pos]
            key = [((0 if largest else 1) if np.isnan(e) else (1 if largest else 0),
                    0.0 if np.isnan(e) else (-e if largest else e), j) for j, e in enumerate(row)]
            idx[pos] = [j for _, _, j in sorted(key)[:kk]]
        val = np.take_along_axis(a, idx, axis=-1)
        return np.moveaxis(val, -1, axis), np.moveaxis(idx, -1, axis).astype(F64)
    for name, dt, a, kk, axis, largest in (("x", "f32", x, 3, 1, True), ("s", "f32", x, 2, 1, False),
                                           ("a", "f32", x, 7, 1, True), ("h", "f16", h, 4, 1, True),
                                           ("k", "i32", k, 1, 1, True), ("kw", "i32", k, 5, 1, False)):
        val, idx = topk(a, kk, axis, largest)
        vn, iname = (name + "v", name + "i") if name != "kw" else ("kw", "kj")
        c.out(vn, dt, val)
        c.out(iname, "i32", idx)
        if name == "a":
            c.save(vn, dt, val)
            c.save(iname, "i32", idx)
    xv, xi = topk(x, 3, 1, True)
    c.out("y", "f32", xv * 2 + xi)


@case("v2-f8", "the 8-bit floats: casts round to nearest even, f8e4m3 saturating at +-448 (inf too; "
      "NaN stays NaN) and f8e5m2 overflowing to inf, both flushing below half the smallest "
      "subnormal; arithmetic in f32 rounded once where stored; a matmul of f8e4m3 giving f32.",
      trans="exact")
def _(c):
    a = c.inp("a", "f8e4m3", "8", values=[448, -448, 0.5, -2.0**-9, 1.125, 3.5, -240, 0.0625])
    b = c.inp("b", "f8e5m2", "8", values=[57344, -57344, 1.5, 2.0**-16, 3.0, -0.75, 1024, 0.25])
    w = c.inp("w", "f8e4m3", "4, 2", values=[1, -2, 0.5, 0.25, 8, -0.125, 3, 1.5])
    x = c.inp("x", "f32", "8", values=[500, -1e6, 0.3, np.nan, np.inf, -np.inf, 1.0625, 2.0**-11])
    c.s("ca = cast(x, dtype=f8e4m3)\ncb = cast(x, dtype=f8e5m2)\ns = a * 2 + a\nsb = b * 0.5 - 1\n"
        "p = matmul(reshape(a, shape=[2, 4]), w)\nh = cast(a, dtype=f16) + cast(b, dtype=f16)\n"
        "m = max(a, axis=0)")
    c.out("ca", "f8e4m3", to_f8e4m3(x))
    c.out("cb", "f8e5m2", to_f8e5m2(x))
    c.out("s", "f8e4m3", to_f8e4m3(a * 2 + a))
    c.out("sb", "f8e5m2", to_f8e5m2(b * 0.5 - 1))
    c.out("p", "f32", np.asarray(a).reshape(2, 4) @ np.asarray(w))
    c.out("h", "f16", to_f16(a + to_f16(b)))
    c.out("m", "f8e4m3", [np.max(a)])


# ================================================================= main


def generate(root):
    if os.path.isdir(root):
        shutil.rmtree(root)
    os.makedirs(root)
    names = [n for n, _, _, _ in CASES]
    assert len(names) == len(set(names)), "duplicate case names"
    for name, doc, trans, fn in CASES:
        write_case(root, name, doc, trans, fn)
    return len(CASES)


def tree(root):
    files = {}
    for d, _, fs in os.walk(root):
        for f in fs:
            p = os.path.join(d, f)
            with open(p, "rb") as fh:
                files[os.path.relpath(p, root)] = fh.read()
    return files


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true",
                    help="regenerate into a temporary directory and compare with %s" % OUT)
    args = ap.parse_args()
    np.seterr(all="ignore")
    self_test_rounding()
    self_test_philox()
    if not args.check:
        n = generate(OUT)
        print("wrote %d cases into %s" % (n, OUT))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        n = generate(os.path.join(tmp, "interp"))
        new, old = tree(os.path.join(tmp, "interp")), tree(OUT)
    bad = sorted(p for p in set(new) | set(old) if new.get(p) != old.get(p))
    for p in bad:
        why = "missing" if p not in old else "stale" if p not in new else "differs"
        print("gen_interp_goldens: %s: %s" % (p, why))
    if bad:
        print("gen_interp_goldens: %d of the committed files differ from what the generator "
              "writes; run %s to regenerate" % (len(bad), sys.argv[0]))
        return 1
    print("gen_interp_goldens: %d cases, %d files, all identical" % (n, len(new)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
