#!/usr/bin/env python3
"""gen_graph.py - random .fg programs for differential testing of fusion
(testing.md, layer 5).  Python 3 standard library only; the same seed
always gives the same program.

    gen_graph.py SEED [-o OUT]                 write graph SEED (stdout by default)
    gen_graph.py SEED -o OUT --fgc FGC         ... checked: `fgc check` must accept
                                               it (exit 2 otherwise: a generator
                                               bug), and `fgc run --seed SEED`
                                               must give finite outputs, else the
                                               next variant of the seed is drawn
    gen_graph.py --promote IN OUT              IN with every f16/bf16 made f32,
                                               explicit casts to them kept (each
                                               rounds, then goes back to f32)
    gen_graph.py SEED --variant K              the K-th replacement of graph SEED
    gen_graph.py --plan-sig < REPORT.json      the groups of a plan, one a line
    gen_graph.py --lint < REPORT.json          exit 1 when a group holds ops its kind
                                               cannot run (a matmul in a loop, ...)
                                               or writes nothing
    gen_graph.py --finite DIR                  exit 1 unless every .npy in DIR
                                               holds finite numbers only
    gen_graph.py --round-stored IN.fg REPORT.json OUT.fg
                                               IN (an `fgc check -d expand` dump)
                                               with every float value its plan
                                               (REPORT: `fgc report --format json
                                               IN`) stores and reads back made
                                               cast(v, dtype=its own): the op-by-op
                                               result of OUT rounds where the plan
                                               does
    gen_graph.py --stores-within IN.json OUT.json
                                               exit 1 unless the plan of OUT.json
                                               (of --round-stored's OUT) stores and
                                               reads back only what IN.json's did

What a graph holds: 1-4 inputs and params of small shapes with odd sizes
(1, 3, 5, 7, 17, 31, ...), ranks 0-4, mostly f32 with some f16/bf16, and
i32/bool inputs now and then; 5-60 ops of every class: elementwise unary
and binary ops with broadcasting operands, comparisons, where, cast and
dropout, reductions on random axes with keepdims either way, the
composites (softmax, log_softmax, layernorm, rmsnorm), layout ops
(transpose, reshape, slice, concat, broadcast_to), 2-d and batched matmuls
with broadcast batch dims; fan-out, deep chains, nested expressions, infix
operators, @save and @materialize, several outputs, symbolic dims with
defaults, and sometimes a fuse { } block around an elementwise chain that
must land in one group.

How it stays finite and well conditioned: every value carries a bound on
its magnitude (inputs are drawn in [-1, 1)); exp only sees values bounded
by 4, anything bounded by more than 60 is squashed (tanh, sigmoid, a
norm, a scale) before it grows further, and log, sqrt, rsqrt, recip, div
and pow only see values bounded away from 0 (exp(x) of a bounded x,
abs(x) + c, square(x) + c, sigmoid(x) + c).  Comparisons and float->i32
casts read values the plan cannot change by storing them ("exact" ones:
inputs, their layouts, casts, max/min, ...), or compare an f32 value with
a number no op lands on exactly, so that a stored rounding cannot flip a
bool; sin and cos see values bounded by 4 (a rounding of a large x moves
sin(x) as much as x's own error).
"""
import json
import math
import os
import random
import re
import struct
import subprocess
import sys
import tempfile

MAX_NUMEL = 20000
DIMS = [1, 3, 5, 7, 17, 31, 1, 3, 5, 7, 3, 5, 2, 4, 9, 11, 13]
SYM_NAMES = ["B", "T", "N", "S", "H"]
FLOATS = ("f32", "f16", "bf16")
SQUASH_AT = 60.0
TYPES = os.environ.get("GEN_GRAPH_TYPES") == "1"


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def bcast(a, b):
    """NumPy broadcast of two shapes, or None."""
    r = []
    for i in range(1, max(len(a), len(b)) + 1):
        x = a[-i] if i <= len(a) else 1
        y = b[-i] if i <= len(b) else 1
        if x != y and x != 1 and y != 1:
            return None
        r.append(max(x, y))
    return tuple(reversed(r))


def fits(small, big):
    return bcast(small, big) == tuple(big)


def factor(n):
    f, p = [], 2
    while p * p <= n:
        while n % p == 0:
            f.append(p)
            n //= p
        p += 1
    if n > 1:
        f.append(n)
    return f


NAMED = {}      # number -> the name a graph bound it to (`s = 1 / sqrt(16)`)


def fmt_num(x):
    if x in NAMED:
        return NAMED[x]
    if x == int(x) and abs(x) < 1e6:
        return str(int(x))
    return repr(float(x))


class Val:
    def __init__(self, name, dt, shape, bound, lo=None, exact=False):
        self.name = name
        self.dt = dt
        self.shape = tuple(shape)
        self.bound = float(bound)       # |value| <= bound
        self.lo = lo                    # value >= lo > 0, when known
        self.exact = exact              # storing it in its dtype changes nothing
        self.uses = 0
        self.private = False            # inside a fuse block: not reused
        self.is_input = False


class Expr:
    """A (possibly nested) expression: text plus what is known of it."""

    def __init__(self, text, dt, shape, bound, lo=None, exact=False, simple=False, ops=1):
        self.text = text
        self.dt = dt
        self.shape = tuple(shape)
        self.bound = float(bound)
        self.lo = lo
        self.exact = exact
        self.simple = simple    # a name or a call: needs no parentheses
        self.ops = ops


def ref(v):
    return Expr(v.name, v.dt, v.shape, v.bound, v.lo, v.exact, simple=True, ops=0)


def paren(e):
    return e.text if e.simple else "(" + e.text + ")"


class Gen:
    def __init__(self, seed):
        self.r = random.Random(seed)
        self.seed = seed
        self.decls = []
        self.lines = []
        self.pool = []
        self.count = 0
        self.ops = 0
        self.syms = {}
        self.in_fuse = False    # inside fuse { }: elementwise ops only
        self.written = []       # (value, expression) of float statements

    # ------------------------------------------------------------ helpers
    def chance(self, p):
        return self.r.random() < p

    def newname(self):
        self.count += 1
        style = self.r.random()
        if style < 0.7:
            return "v%d" % self.count
        if style < 0.85:
            return "t_%d" % self.count
        return "h%dx" % self.count

    def usable(self, pred=lambda v: True):
        return [v for v in self.pool if not v.private and pred(v)]

    def pick(self, pred=lambda v: True):
        """The latest matching value (deep chains) or an earlier one (fan-out)."""
        c = self.usable(pred)
        if not c:
            return None
        x = self.r.random()
        if x < 0.45:
            return c[-1]
        if x < 0.75:
            return c[max(0, len(c) - 1 - int(self.r.expovariate(0.5)))]
        return self.r.choice(c)

    def dtype_shape_ok(self, shape):
        return 0 < numel(shape) <= MAX_NUMEL and len(shape) <= 6

    def const(self, dt, choices=(0.5, 2, 1.5, 0.25, 3, 0.1, 0.7, 1.25, 0.125, 1)):
        if dt == "i32":
            return self.r.choice([1, 2, 3, 4, 5])
        if NAMED and self.chance(0.3):
            return self.r.choice(sorted(NAMED))
        return self.r.choice(choices)

    # --------------------------------------------------------- declarations
    def decl_dim(self, d, i):
        """A declared dim: sometimes a symbolic name with a default."""
        if i == 0 and self.use_sym and d in self.sym_of_value:
            name = self.sym_of_value[d]
            if name in self.syms:
                return name
            self.syms[name] = d
            return "%s=%d" % (name, d)
        return str(d)

    def declare(self, kind, dt, shape, bound=1.0):
        name = self.r.choice(["x", "y", "w", "p", "a", "inp", "k", "m"]) + str(len(self.decls))
        dims = ", ".join(self.decl_dim(d, i) for i, d in enumerate(shape))
        self.decls.append("  %s %s : %s[%s]" % (kind, name, dt, dims))
        v = Val(name, dt, shape, bound, exact=True)
        v.is_input = True
        if dt == "i32":
            v.bound = 8
        self.pool.append(v)
        return v

    def numbers(self):
        """A number bound to a name (folded), and typed rank-0 constants."""
        if self.chance(0.15):
            n = self.r.choice([4, 16, 64])
            name = "sc%d" % n
            self.lines.append("  %s = 1 / sqrt(%d)" % (name, n))
            NAMED[1 / math.sqrt(n)] = name
        if self.chance(0.1):
            dt = self.r.choice([self.fdt, "f32", "i32"])
            c = self.r.choice([2, 3]) if dt == "i32" else self.r.choice([0.5, 1.5, 2])
            v = self.emit(Expr("cast(%s, dtype=%s)" % (fmt_num(c), dt), dt, (), c, lo=c, exact=True, simple=True))
            v.is_input = True   # a constant: not an output of its own choosing

    def base_shape(self):
        rank = self.r.choice([1, 2, 2, 3, 3, 4])
        while True:
            s = tuple(self.r.choice(DIMS) for _ in range(rank))
            if numel(s) <= 6000 and numel(s) > 1:
                return s

    def declarations(self):
        r = self.r
        x = r.random()
        self.fdt = "f32" if x < 0.6 else ("f16" if x < 0.8 else "bf16")
        base = self.base_shape()
        self.base = base
        self.use_sym = self.chance(0.2)
        self.sym_of_value = {}
        if self.use_sym:
            self.sym_of_value[base[0]] = r.choice(SYM_NAMES)
        n = r.choice([1, 2, 2, 3, 3, 4])
        self.declare("input", self.fdt, base)
        for _ in range(n - 1):
            k = r.random()
            kind = "param" if self.chance(0.4) else "input"
            if k < 0.25 and len(base) >= 1:            # a weight [K, N]
                sh = (base[-1], r.choice(DIMS))
                self.declare("param", self.fdt, sh)
            elif k < 0.45:                              # broadcastable variant
                sh = tuple(1 if self.chance(0.4) else d for d in base)
                sh = sh[r.randint(0, len(sh)):] if self.chance(0.3) else sh
                self.declare(kind, self.fdt, sh)
            elif k < 0.55:                              # the last dim (gamma, bias)
                self.declare("param", self.fdt, base[-1:])
            elif k < 0.62:
                self.declare(kind, self.fdt, ())       # rank 0
            elif k < 0.72:
                self.declare("input", "i32", tuple(1 if self.chance(0.3) else d for d in base))
            elif k < 0.80:
                self.declare("input", "bool", tuple(1 if self.chance(0.3) else d for d in base))
            elif k < 0.87:
                other = r.choice([d for d in FLOATS if d != self.fdt])
                self.declare(kind, other, base)
            else:                                       # unrelated shape
                sh = self.base_shape()
                if len(sh) >= 2 and self.chance(0.5):
                    sh = sh[:-2] + (base[-1], sh[-1])
                self.declare(kind, self.fdt, sh)

    # ------------------------------------------------------------ statements
    def emit(self, e, annotate=True, private=False, indent="  "):
        name = self.newname()
        ann = ""
        if annotate and not private:
            x = self.r.random()
            if x < 0.07:
                ann = " @save"
            elif x < 0.12:
                ann = " @materialize"
            elif x < 0.13:
                ann = " @save @materialize"
            elif x < 0.135:
                ann = " @materialize @save"
        self.lines.append("%s%s = %s%s%s" % (indent, name, e.text, ann,
                                             "  # %s%s" % (e.dt, list(e.shape)) if TYPES else ""))
        v = Val(name, e.dt, e.shape, e.bound, e.lo, e.exact)
        v.private = private
        self.pool.append(v)
        self.ops += max(e.ops, 1)
        return v

    def use(self, *vals):
        for v in vals:
            if isinstance(v, Val):
                v.uses += 1

    # Expressions over values.  Each returns an Expr or None when the
    # operand does not fit the op.

    def squash(self, e):
        """e bounded by about 1, whatever its bound was."""
        if e.dt not in FLOATS:
            return e
        k = self.r.random()
        if k < 0.35:
            return Expr("tanh(%s)" % e.text, e.dt, e.shape, 1.0, ops=e.ops + 1, simple=True)
        if k < 0.55:
            return Expr("sigmoid(%s)" % e.text, e.dt, e.shape, 1.0, lo=None, ops=e.ops + 1, simple=True)
        if k < 0.7:
            return Expr("erf(%s)" % e.text, e.dt, e.shape, 1.0, ops=e.ops + 1, simple=True)
        if k < 0.8 and e.bound <= 4:   # sin of a large number is ill conditioned
            return Expr("sin(%s)" % e.text, e.dt, e.shape, 1.0, ops=e.ops + 1, simple=True)
        s = 2.0 ** -math.ceil(math.log2(max(e.bound, 1.0)))
        return Expr("%s * %s" % (paren(e), fmt_num(s)), e.dt, e.shape, e.bound * s,
                    exact=e.exact, ops=e.ops + 1)

    def positive(self, e):
        """An expression of e bounded away from 0 (and its lower bound)."""
        if e.lo is not None and e.lo >= 0.05:
            return e
        k = self.r.random()
        c = self.r.choice([1, 0.5, 1.5, 0.25])
        if k < 0.3 and e.bound <= 3:
            return Expr("exp(%s)" % e.text, e.dt, e.shape, math.exp(e.bound),
                        lo=math.exp(-e.bound), ops=e.ops + 1, simple=True)
        if k < 0.55:
            return Expr("abs(%s) + %s" % (e.text, fmt_num(c)), e.dt, e.shape, e.bound + c, lo=c,
                        ops=e.ops + 2)
        if k < 0.8:
            if e.bound > 30:
                e = self.squash(e)
            return Expr("square(%s) + %s" % (e.text, fmt_num(c)), e.dt, e.shape, e.bound ** 2 + c,
                        lo=c, ops=e.ops + 2)
        return Expr("sigmoid(%s) + %s" % (e.text, fmt_num(c)), e.dt, e.shape, 1 + c, lo=c, ops=e.ops + 2)

    def unary(self, v):
        e = ref(v)
        if v.dt not in FLOATS:
            if v.dt == "bool":
                return None
            op = self.r.choice(["neg", "abs", "square", "relu", "neg_infix"])
            if op == "neg_infix":
                return Expr("-%s" % paren(e), v.dt, v.shape, v.bound, exact=True, ops=1)
            b = v.bound ** 2 if op == "square" else v.bound
            if b > 1e5:
                return None
            return Expr("%s(%s)" % (op, e.text), v.dt, v.shape, b, exact=True, simple=True)
        if e.bound > SQUASH_AT:
            return self.squash(e)
        r = self.r.random()
        if r < 0.45:
            op = self.r.choice(["neg", "abs", "sin", "cos", "tanh", "sigmoid", "relu", "gelu",
                                "gelu_tanh", "silu", "erf", "square", "exp", "neg_infix"])
            b = {"neg": e.bound, "abs": e.bound, "relu": e.bound, "gelu": e.bound, "gelu_tanh": e.bound,
                 "silu": e.bound, "square": e.bound ** 2, "neg_infix": e.bound}.get(op, 1.0)
            lo = None
            exact = op in ("neg", "abs", "relu", "neg_infix") and e.exact
            if op in ("sin", "cos") and e.bound > 4:
                # a rounding of x moves sin(x) by as much as x's error
                sc = 2.0 ** -math.ceil(math.log2(e.bound / 2))
                e = Expr("%s * %s" % (paren(e), fmt_num(sc)), e.dt, e.shape, e.bound * sc, ops=e.ops + 1)
            if op == "exp":
                if e.bound > 4:
                    e = self.squash(e)
                b, lo = math.exp(e.bound), math.exp(-e.bound)
            if op == "neg_infix":
                return Expr("-%s" % paren(e), v.dt, v.shape, b, exact=exact, ops=e.ops + 1)
            return Expr("%s(%s)" % (op, e.text), v.dt, v.shape, b, lo=lo, exact=exact, simple=True,
                        ops=e.ops + 1)
        if r < 0.7:
            op = self.r.choice(["log", "sqrt", "rsqrt", "recip"])
            p = self.positive(e)
            if op == "log":
                b = max(abs(math.log(p.lo)), math.log(max(p.bound, 1.0)))
                return Expr("log(%s)" % p.text, v.dt, v.shape, b, ops=p.ops + 1, simple=True)
            if op == "sqrt":
                return Expr("sqrt(%s)" % p.text, v.dt, v.shape, math.sqrt(p.bound), lo=math.sqrt(p.lo),
                            ops=p.ops + 1, simple=True)
            if op == "rsqrt":
                return Expr("rsqrt(%s)" % p.text, v.dt, v.shape, 1 / math.sqrt(p.lo),
                            lo=1 / math.sqrt(p.bound), ops=p.ops + 1, simple=True)
            return Expr("recip(%s)" % p.text, v.dt, v.shape, 1 / p.lo, lo=1 / p.bound, ops=p.ops + 1,
                        simple=True)
        if r < 0.85:
            # scale and shift by numbers, infix or called
            c = self.const(v.dt)
            op = self.r.choice(["+", "-", "*", "mul", "add", "sub", "num-"])
            if op == "num-":
                return Expr("%s - %s" % (fmt_num(c), paren(e)), v.dt, v.shape, e.bound + c, ops=e.ops + 1)
            if op in ("+", "-", "*"):
                b = e.bound * c if op == "*" else e.bound + c
                exact = e.exact and op == "*" and c in (2, 0.5, 0.25, 0.125, 1)
                return Expr("%s %s %s" % (paren(e), op, fmt_num(c)), v.dt, v.shape, b, exact=exact,
                            ops=e.ops + 1)
            b = e.bound * c if op == "mul" else e.bound + c
            return Expr("%s(%s, %s)" % (op, e.text, fmt_num(c)), v.dt, v.shape, b, simple=True, ops=e.ops + 1)
        if r < 0.93:
            p = self.positive(e)
            ex = self.r.choice([0.5, 2, 1.5, 3, -0.5, -1])
            lo, hi = p.lo, p.bound
            b = max(hi ** ex, lo ** ex) if ex > 0 else max(lo ** ex, hi ** ex)
            if b > 1e4:
                return None
            return Expr("pow(%s, %s)" % (p.text, fmt_num(ex)), v.dt, v.shape, b, ops=p.ops + 1, simple=True)
        if self.chance(0.5):
            p = self.r.choice([0, 0.1, 0.25, 0.5, 0.3])
            seed = self.r.randint(0, 100000)
            if self.chance(0.2):
                return Expr("dropout(%s)" % e.text, v.dt, v.shape, e.bound / 0.9, ops=e.ops + 1, simple=True)
            return Expr("dropout(%s, p=%s, seed=%d)" % (e.text, repr(p) if p else "0", seed), v.dt, v.shape,
                        e.bound / (1 - p), ops=e.ops + 1, simple=True)
        # a float cast round trip or a change of dtype
        to = self.r.choice([d for d in FLOATS if d != v.dt])
        return Expr("cast(%s, dtype=%s)" % (e.text, to), to, v.shape, e.bound, exact=True, ops=e.ops + 1,
                    simple=True)

    def partner(self, v, same_shape=False):
        """A second operand for v: a value of its dtype that broadcasts
        with it, or None."""
        def ok(w):
            if w.dt != v.dt or w is v and self.chance(0.7):
                return False
            s = bcast(v.shape, w.shape)
            if s is None or numel(s) > MAX_NUMEL:
                return False
            return not same_shape or w.shape == v.shape
        c = self.usable(ok)
        if not c:
            return None
        diff = [w for w in c if w.shape != v.shape]
        if diff and self.chance(0.5):
            return self.r.choice(diff)
        return self.pick(ok)

    def binary(self, v):
        if v.dt == "bool":
            return None
        w = self.partner(v)
        a, b = ref(v), None
        if w is None:
            # x - reduce(x): a broadcasting partner made on the spot
            if v.shape and v.dt in FLOATS and not self.in_fuse and self.chance(0.6):
                axes = self.rand_axes(len(v.shape))
                op = self.r.choice(["mean", "max", "min"])
                b = Expr("%s(%s, axis=%s)" % (op, v.name, axes[1]), v.dt,
                         tuple(1 if i in axes[0] else d for i, d in enumerate(v.shape)), v.bound,
                         exact=v.exact and op != "mean", simple=True)
            else:
                return None
        else:
            self.use(w)
            b = ref(w)
        if self.chance(0.5):
            a, b = b, a
        shape = bcast(a.shape, b.shape)
        if a.bound > SQUASH_AT and v.dt in FLOATS:
            a = self.squash(a)
        if b.bound > SQUASH_AT and v.dt in FLOATS:
            b = self.squash(b)
        ops = a.ops + b.ops + 1
        if v.dt == "i32":
            op = self.r.choice(["add", "sub", "mul", "maximum", "minimum", "+", "-", "*"])
            bd = a.bound * b.bound if op in ("mul", "*") else a.bound + b.bound
            if bd > 1e6:
                return None
            if op in "+-*":
                return Expr("%s %s %s" % (paren(a), op, paren(b)), "i32", shape, bd, exact=True, ops=ops)
            return Expr("%s(%s, %s)" % (op, a.text, b.text), "i32", shape, bd, exact=True, simple=True,
                        ops=ops)
        k = self.r.random()
        if k < 0.55:
            op = self.r.choice(["+", "-", "*", "add", "sub", "mul", "maximum", "minimum"])
            if op in ("mul", "*"):
                bd = a.bound * b.bound
            elif op in ("maximum", "minimum"):
                bd = max(a.bound, b.bound)
            else:
                bd = a.bound + b.bound
            exact = op in ("maximum", "minimum") and a.exact and b.exact
            if op in "+-*":
                return Expr("%s %s %s" % (paren(a), op, paren(b)), v.dt, shape, bd, exact=exact, ops=ops)
            return Expr("%s(%s, %s)" % (op, a.text, b.text), v.dt, shape, bd, exact=exact, simple=True,
                        ops=ops)
        if k < 0.8:
            p = self.positive(b)
            if self.chance(0.5):
                return Expr("%s / %s" % (paren(a), paren(p)), v.dt, shape, a.bound / p.lo,
                            ops=a.ops + p.ops + 1)
            return Expr("div(%s, %s)" % (a.text, p.text), v.dt, shape, a.bound / p.lo, simple=True,
                        ops=a.ops + p.ops + 1)
        if k < 0.9:
            p = self.positive(a)
            ex = b if b.bound <= 2 else self.squash(b)
            bd = max(p.bound, 1 / p.lo) ** ex.bound
            if bd > 1e4:
                return None
            return Expr("pow(%s, %s)" % (p.text, ex.text), v.dt, shape, bd, simple=True, ops=p.ops + ex.ops + 1)
        # where(cond, a, b) with a comparison made on the spot
        c = self.comparison(v)
        if c is None:
            return None
        if bcast(c.shape, shape) is None or numel(bcast(c.shape, shape)) > MAX_NUMEL:
            return None
        return Expr("where(%s, %s, %s)" % (c.text, a.text, b.text), v.dt, bcast(c.shape, shape),
                    max(a.bound, b.bound), exact=a.exact and b.exact, simple=True, ops=ops + c.ops + 1)

    def comparison(self, v):
        """A bool expression over values the plan cannot change by
        rounding: exact ones compared with each other or a number, or an
        f32 value compared with a number no op lands on (not 0 or 1,
        which relu or a saturated tanh reach exactly in f32 only)."""
        def exactish(w):
            return w.exact or w.dt == "f32" or w.dt == "bool"
        cands = self.usable(lambda w: exactish(w) and bcast(w.shape, v.shape) is not None)
        if not cands:
            return None
        x = self.r.choice(cands)
        if x.dt == "bool":
            if self.chance(0.5):
                return Expr(x.name, "bool", x.shape, 1, exact=True, simple=True, ops=0)
            y = self.usable(lambda w: w.dt == "bool" and bcast(w.shape, x.shape) is not None)
            y = self.r.choice(y)
            op = self.r.choice(["==", "!=", "eq", "ne"])
            self.use(x, y)
            if op in ("==", "!="):
                return Expr("%s %s %s" % (x.name, op, y.name), "bool", bcast(x.shape, y.shape), 1, exact=True)
            return Expr("%s(%s, %s)" % (op, x.name, y.name), "bool", bcast(x.shape, y.shape), 1, exact=True,
                        simple=True)
        self.use(x)
        ys = self.usable(lambda w: w.dt == x.dt and w.exact and bcast(w.shape, x.shape) is not None)
        if ys and x.exact and self.chance(0.5):
            y = self.r.choice(ys)
            self.use(y)
            yt, ysh = y.name, y.shape
        else:
            if x.dt == "i32":
                yt = str(self.r.randint(-3, 3))
            elif x.exact:
                yt = fmt_num(self.r.choice([0, 0.3, -0.2, 0.5, 1, -1]))
            else:
                yt = fmt_num(self.r.choice([0.3, -0.2, 0.45, -0.7, 0.6]))
            ysh = x.shape
        op = self.r.choice(["<", "<=", ">", ">=", "==", "!=", "lt", "le", "gt", "ge"])
        shape = bcast(x.shape, ysh)
        if op in ("lt", "le", "gt", "ge"):
            return Expr("%s(%s, %s)" % (op, x.name, yt), "bool", shape, 1, exact=True, simple=True)
        return Expr("%s %s %s" % (x.name, op, yt), "bool", shape, 1, exact=True)

    def rand_axes(self, rank):
        """(set of axes, attribute text) for a reduction over rank axes."""
        n = self.r.randint(1, rank)
        axes = sorted(self.r.sample(range(rank), n))
        neg = self.chance(0.3)
        txt = [str(a - rank) if neg else str(a) for a in axes]
        if n == 1 and self.chance(0.6):
            return set(axes), txt[0]
        return set(axes), "[" + ", ".join(txt) + "]"

    def reduction(self, v):
        if v.dt == "bool" or not v.shape:
            return None
        ops = ["sum", "max", "min"] + (["mean", "mean"] if v.dt in FLOATS else [])
        op = self.r.choice(ops)
        e = ref(v)
        if e.bound > SQUASH_AT and v.dt in FLOATS:
            e = self.squash(e)
        attrs = []
        if self.chance(0.12):
            axes = set(range(len(v.shape)))
        else:
            axes, txt = self.rand_axes(len(v.shape))
            attrs.append("axis=" + txt)
        keep = True
        k = self.r.random()
        if k < 0.35:
            attrs.append("keepdims=false")
            keep = False
        elif k < 0.5:
            attrs.append("keepdims=true")
        shape = tuple((1 if i in axes else d) for i, d in enumerate(v.shape) if keep or i not in axes)
        count = numel([d for i, d in enumerate(v.shape) if i in axes])
        bound = e.bound * count if op == "sum" else e.bound
        if v.dt == "i32" and bound > 1e6:
            return None
        text = "%s(%s%s)" % (op, e.text, "".join(", " + a for a in attrs))
        r = Expr(text, v.dt, shape, bound, exact=e.exact and op in ("max", "min"), simple=True, ops=e.ops + 1)
        if op == "sum" and v.dt in FLOATS and count > 4 and self.chance(0.6):
            r = Expr("%s * %s" % (text, fmt_num(1.0 / 2 ** round(math.log2(count)))), v.dt, shape,
                     bound / 2 ** round(math.log2(count)), ops=e.ops + 2)
        return r

    def composite(self, v):
        if v.dt not in FLOATS or not v.shape:
            return None
        e = ref(v)
        rank = len(v.shape)
        op = self.r.choice(["softmax", "log_softmax", "layernorm", "rmsnorm"])
        attrs = []
        axes = {rank - 1}
        if self.chance(0.35):
            axes, txt = self.rand_axes(rank)
            attrs.append("axis=" + txt)
        count = numel([d for i, d in enumerate(v.shape) if i in axes])
        if op == "softmax":
            return Expr("softmax(%s%s)" % (e.text, "".join(", " + a for a in attrs)), v.dt, v.shape, 1.0,
                        simple=True, ops=2)
        if op == "log_softmax":
            if e.bound > SQUASH_AT:
                e = self.squash(e)
            return Expr("log_softmax(%s%s)" % (e.text, "".join(", " + a for a in attrs)), v.dt, v.shape,
                        2 * e.bound + math.log(count) + 1, simple=True, ops=e.ops + 2)
        # a norm's weights: values that broadcast to x's shape
        ws = []
        for _ in range(2 if op == "layernorm" else 1):
            def ok(w):
                return w.dt == v.dt and fits(w.shape, v.shape) and w.bound <= SQUASH_AT
            w = self.pick(ok) if self.chance(0.8) else None
            if w is None:
                sh = tuple(d if i in axes else 1 for i, d in enumerate(v.shape))
                ws.append(Expr("mean(%s, axis=%s)" % (v.name, "[" + ", ".join(str(i) for i in sorted(set(range(rank)) - axes)) + "]"),
                               v.dt, sh, min(v.bound, SQUASH_AT), simple=True)
                          if len(axes) < rank else Expr("1", v.dt, (), 1))
                if ws[-1].text == "1":
                    return None
            else:
                self.use(w)
                ws.append(ref(w))
        if self.chance(0.3):
            attrs.append("eps=%s" % self.r.choice(["1e-5", "1e-3", "0.01", "1e-6"]))
        nb = math.sqrt(count) + 1
        bound = nb * ws[0].bound + (ws[1].bound if len(ws) > 1 else 0)
        return Expr("%s(%s%s)" % (op, ", ".join([e.text] + [w.text for w in ws]),
                                  "".join(", " + a for a in attrs)), v.dt, v.shape, bound, simple=True, ops=4)

    def layout(self, v):
        r = self.r.random()
        e = ref(v)
        rank = len(v.shape)
        if r < 0.22 and rank >= 2:
            perm = list(range(rank))
            self.r.shuffle(perm)
            if self.chance(0.25):
                perm = list(range(rank))
                perm[-2], perm[-1] = perm[-1], perm[-2]
                return Expr("transpose(%s)" % e.text, v.dt, tuple(v.shape[p] for p in perm), v.bound,
                            v.lo, v.exact, simple=True)
            return Expr("transpose(%s, perm=[%s])" % (e.text, ", ".join(map(str, perm))), v.dt,
                        tuple(v.shape[p] for p in perm), v.bound, v.lo, v.exact, simple=True)
        if r < 0.42:
            n = numel(v.shape)
            fs = factor(n)
            self.r.shuffle(fs)
            k = self.r.randint(1, 4) if n > 1 else self.r.randint(0, 2)
            dims = [1] * k
            for f in fs:
                if k == 0:
                    break
                dims[self.r.randrange(k)] *= f
            if k == 0 and n != 1:
                return None
            txt = [str(d) for d in dims]
            if k and self.chance(0.3):
                txt[self.r.randrange(k)] = "-1"
            return Expr("reshape(%s, shape=[%s])" % (e.text, ", ".join(txt)), v.dt, tuple(dims), v.bound,
                        v.lo, v.exact, simple=True)
        if r < 0.62 and rank >= 1:
            axes = [i for i in range(rank) if v.shape[i] > 1] or list(range(rank))
            ax = self.r.choice(axes)
            d = v.shape[ax]
            s = self.r.randint(0, d - 1)
            en = self.r.randint(s + 1, d)
            attrs = []
            if ax != 0 or self.chance(0.5):
                attrs.append("axis=%d" % (ax - rank if self.chance(0.3) else ax))
            if s != 0 or self.chance(0.5):
                attrs.append("start=%d" % (s - d if self.chance(0.3) else s))
            if en != d or self.chance(0.5):
                attrs.append("end=%d" % (en - d if en < d and self.chance(0.3) else en))
            sh = list(v.shape)
            sh[ax] = en - s
            return Expr("slice(%s%s)" % (e.text, "".join(", " + a for a in attrs)), v.dt, sh, v.bound, v.lo,
                        v.exact, simple=True)
        if r < 0.8 and rank >= 1:
            ax = self.r.randrange(rank)
            parts = [e]
            for _ in range(self.r.choice([1, 1, 2])):
                def ok(w):
                    return (w.dt == v.dt and len(w.shape) == rank and
                            all(w.shape[i] == v.shape[i] for i in range(rank) if i != ax))
                w = self.pick(ok) if self.chance(0.6) else None
                if w is not None:
                    self.use(w)
                    parts.append(ref(w))
                elif v.shape[ax] > 1 and self.chance(0.5):
                    s = self.r.randint(0, v.shape[ax] - 1)
                    sh = list(v.shape)
                    sh[ax] = v.shape[ax] - s
                    parts.append(Expr("slice(%s, axis=%d, start=%d)" % (v.name, ax, s), v.dt, sh, v.bound,
                                      v.lo, v.exact, simple=True))
                else:
                    u = self.unary(v)
                    if u is None or u.shape != v.shape or u.dt != v.dt:
                        u = e
                    parts.append(u)
            sh = list(v.shape)
            sh[ax] = sum(p.shape[ax] for p in parts)
            if numel(sh) > MAX_NUMEL:
                return None
            self.r.shuffle(parts)
            axt = "" if ax == rank - 1 and self.chance(0.4) else ", axis=%d" % (ax - rank if self.chance(0.3) else ax)
            lo = min((p.lo for p in parts), default=None) if all(p.lo is not None for p in parts) else None
            return Expr("concat(%s%s)" % (", ".join(p.text for p in parts), axt), v.dt, sh,
                        max(p.bound for p in parts), lo, all(p.exact for p in parts), simple=True,
                        ops=sum(p.ops for p in parts) + 1)
        # broadcast_to: grow size-1 dims, prepend new ones
        sh = [self.r.choice(DIMS) if d == 1 and self.chance(0.7) else d for d in v.shape]
        for _ in range(self.r.choice([0, 0, 1, 1, 2])):
            if len(sh) < 5:
                sh.insert(0, self.r.choice(DIMS))
        if numel(sh) > MAX_NUMEL:
            return None
        return Expr("broadcast_to(%s, shape=[%s])" % (e.text, ", ".join(map(str, sh))), v.dt, sh, v.bound,
                    v.lo, v.exact, simple=True)

    def matmul(self, v):
        if v.dt == "bool":
            return None
        r = self.r
        if len(v.shape) < 2:
            if len(v.shape) == 1 and v.shape[0] > 1 and self.chance(0.5):
                e = Expr("reshape(%s, shape=[1, %d])" % (v.name, v.shape[0]), v.dt, (1, v.shape[0]),
                         v.bound, exact=v.exact, simple=True)
            else:
                return None
        else:
            e = ref(v)
        if e.bound > 8 and v.dt != "i32":
            e = self.squash(e)
        K = e.shape[-1]

        def ok(w):
            if w.dt != v.dt or len(w.shape) < 2 or w.shape[-2] != K:
                return False
            return bcast(e.shape[:-2], w.shape[:-2]) is not None
        w = self.pick(ok)
        if w is not None and self.chance(0.8):
            self.use(w)
            b = ref(w)
        else:
            # a transposed operand: something whose last dim is K
            def okt(w):
                return (w.dt == v.dt and len(w.shape) >= 2 and w.shape[-1] == K and
                        bcast(e.shape[:-2], w.shape[:-2]) is not None)
            w = self.pick(okt)
            if w is None:
                return None
            self.use(w)
            b = Expr("transpose(%s)" % w.name, w.dt, w.shape[:-2] + (w.shape[-1], w.shape[-2]), w.bound,
                     simple=True)
        if b.bound > 8 and v.dt != "i32":
            b = self.squash(b)
        batch = bcast(e.shape[:-2], b.shape[:-2])
        shape = batch + (e.shape[-2], b.shape[-1])
        if numel(shape) > MAX_NUMEL or numel(batch) * e.shape[-2] * b.shape[-1] * K > 400000:
            return None
        bound = K * e.bound * b.bound
        if v.dt == "i32" and bound > 1e6:
            return None
        if r.random() < 0.5:
            e, b = (e, b)
        return Expr("matmul(%s, %s)" % (e.text, b.text), v.dt, shape, bound, exact=v.dt == "i32", simple=True,
                    ops=e.ops + b.ops + 1)

    def convert(self, v):
        """Casts between dtype families: float <-> i32, bool -> numbers,
        comparisons to bool."""
        r = self.r.random()
        if v.dt == "bool":
            to = self.r.choice(["f32", self.fdt, "i32"])
            return Expr("cast(%s, dtype=%s)" % (v.name, to), to, v.shape, 1, exact=True, simple=True)
        if v.dt == "i32":
            to = self.r.choice([self.fdt, "f32", "bool"] if r < 0.7 else [self.fdt])
            return Expr("cast(%s, dtype=%s)" % (v.name, to), to, v.shape, v.bound, exact=True, simple=True)
        if r < 0.4 and v.exact:
            e = Expr("%s * 4" % v.name, v.dt, v.shape, v.bound * 4, exact=True) if self.chance(0.6) else ref(v)
            if e.bound > 1e6:
                return None
            return Expr("cast(%s, dtype=i32)" % e.text, "i32", v.shape, math.floor(e.bound), exact=True,
                        simple=True, ops=e.ops + 1)
        c = self.comparison(v)
        return c

    def where(self, v):
        """where(cond, v, other) with a stored bool value or a comparison."""
        if v.dt == "bool":
            return None
        cs = self.usable(lambda w: w.dt == "bool" and bcast(w.shape, v.shape) is not None)
        c = ref(self.r.choice(cs)) if cs and self.chance(0.7) else self.comparison(v)
        if c is None:
            return None
        w = self.partner(v)
        other = ref(w) if w is not None else Expr(fmt_num(self.const(v.dt, (0, -1, 0.5, 1e-4, 2))), v.dt, (), 1)
        if w is not None:
            self.use(w)
        shape = bcast(c.shape, v.shape)
        shape = None if shape is None else bcast(shape, other.shape)
        if shape is None or numel(shape) > MAX_NUMEL:
            return None
        a, b = (ref(v), other) if self.chance(0.5) else (other, ref(v))
        if a.bound > SQUASH_AT or b.bound > SQUASH_AT:
            pass
        return Expr("where(%s, %s, %s)" % (c.text, a.text, b.text), v.dt, shape, max(a.bound, b.bound),
                    exact=a.exact and b.exact, simple=True, ops=c.ops + 1)

    # ------------------------------------------------------------- fuse { }
    def fuse_block(self):
        v = self.pick(lambda w: w.dt in FLOATS)
        if v is None:
            return
        self.use(v)
        self.lines.append("  fuse {")
        self.in_fuse = True
        cur = v
        n = self.r.randint(2, 6)
        for i in range(n):
            e = None
            for _ in range(5):
                k = self.r.random()
                if k < 0.6:
                    e = self.unary(cur)
                    if e is not None and e.dt != cur.dt and self.chance(0.7):
                        e = None
                else:
                    e = self.binary(cur)
                if e is not None and numel(e.shape) <= MAX_NUMEL:
                    break
                e = None
            if e is None:
                e = Expr("tanh(%s)" % cur.name, cur.dt, cur.shape, 1.0, simple=True)
            last = i == n - 1
            cur.uses += 1
            cur = self.emit(e, annotate=False, private=not last, indent="    ")
        self.lines.append("  }")
        self.in_fuse = False

    # --------------------------------------------------------------- motifs
    def same_type_unary(self, src):
        for _ in range(4):
            e = self.unary(src)
            if e is not None and e.dt == src.dt and e.shape == src.shape:
                return e
        return Expr("tanh(%s)" % src.name, src.dt, src.shape, 1.0, simple=True)

    def wide(self):
        """Many values live at once: k branches from one value, then
        combined one by one (register pressure, its splitter)."""
        v = self.pick(lambda w: w.dt in FLOATS)
        if v is None:
            return
        self.use(v)
        branches = []
        for _ in range(self.r.randint(8, max(8, min(30, (self.target - self.ops) // 2 + 6)))):
            src = v if not branches or self.chance(0.6) else self.r.choice(branches)
            src.uses += 1
            branches.append(self.emit(self.same_type_unary(src), annotate=self.chance(0.15)))
        acc = branches[0]
        for b in branches[1:]:
            a, c = ref(acc), ref(b)
            if a.bound > SQUASH_AT:
                a = self.squash(a)
            if c.bound > SQUASH_AT:
                c = self.squash(c)
            op = self.r.choice(["+", "-", "+", "maximum", "minimum", "*"])
            if op == "*" and a.bound * c.bound > SQUASH_AT:
                op = "+"
            bd = a.bound * c.bound if op == "*" else max(a.bound, c.bound) if op in ("maximum", "minimum") \
                else a.bound + c.bound
            text = "%s %s %s" % (paren(a), op, paren(c)) if len(op) == 1 else "%s(%s, %s)" % (op, a.text, c.text)
            acc.uses += 1
            b.uses += 1
            acc = self.emit(Expr(text, v.dt, v.shape, bd, ops=a.ops + c.ops + 1),
                            annotate=self.chance(0.1))

    def attention(self):
        """Heads split, scores, softmax, context, heads merged: layouts on
        both sides of two matmuls."""
        v = self.pick(lambda w: w.dt in FLOATS and len(w.shape) >= 2 and w.shape[-1] > 1)
        if v is None:
            return
        D = v.shape[-1]
        T = numel(v.shape) // D
        if T * T * D > 40000 or T * T > MAX_NUMEL:
            return
        divs = [h for h in range(1, D + 1) if D % h == 0]
        h = self.r.choice(divs)
        d = D // h
        self.use(v)
        x = ref(v)
        if x.bound > 4:
            x = self.squash(x)
        flat = x if len(v.shape) == 2 else Expr("reshape(%s, shape=[-1, %d])" % (x.text, D), v.dt, (T, D), x.bound,
                                                 simple=True, ops=x.ops + 1)
        if flat.ops:
            flat = ref(self.emit(flat, annotate=False))
        heads = []
        for _ in range(3):
            src = flat if self.chance(0.5) else self.same_type_unary(Val(flat.text, v.dt, (T, D), flat.bound))
            hv = self.emit(Expr("transpose(reshape(%s, shape=[%d, %d, %d]), perm=[1, 0, 2])" % (src.text, T, h, d),
                                v.dt, (h, T, d), min(src.bound, 1.0) if src.bound <= 1 else src.bound, simple=True,
                                ops=2), annotate=self.chance(0.3))
            heads.append(hv)
        q, k, val = heads
        scale = fmt_num(2.0 ** -math.ceil(math.log2(max(1, math.sqrt(d)))))
        s = self.emit(Expr("matmul(%s, transpose(%s)) * %s" % (q.name, k.name, scale), v.dt, (h, T, T),
                           d * q.bound * k.bound, ops=3))
        p = self.emit(Expr("softmax(%s)" % (s.name if s.bound <= SQUASH_AT else "tanh(%s)" % s.name), v.dt,
                           (h, T, T), 1.0, simple=True), annotate=self.chance(0.3))
        o = self.emit(Expr("matmul(%s, %s)" % (p.name, val.name), v.dt, (h, T, d), val.bound, simple=True))
        self.emit(Expr("reshape(transpose(%s, perm=[1, 0, 2]), shape=[%d, %d])" % (o.name, T, D), v.dt, (T, D),
                       o.bound, simple=True, ops=2), annotate=self.chance(0.3))
        for w in (q, k, val, s, p, o):
            w.uses += 1

    # ------------------------------------------------------ language v2
    def v2_unary(self, v):
        """A version 2 elementwise op of one float input, on values where
        it is well conditioned; the rounding ones (floor ceil round trunc
        sign) only on exact values, as comparisons."""
        e = ref(v)
        if e.bound > SQUASH_AT:
            e = self.squash(e)
        op = self.r.choice(["log1p", "expm1", "exp2", "log2", "tan", "asin", "acos", "atan", "sinh", "cosh",
                            "asinh", "acosh", "atanh", "softplus", "mish", "hardsigmoid", "hardswish",
                            "leaky_relu", "elu", "rounding", "clamp", "pow_infix"])
        b = e.bound
        if op == "rounding":
            if not e.exact:
                return None
            op = self.r.choice(["floor", "ceil", "round", "trunc", "sign"])
            x = Expr("%s * 4" % paren(e), e.dt, e.shape, b * 4, exact=True, ops=e.ops + 1) if op != "sign" else e
            return Expr("%s(%s)" % (op, x.text), v.dt, v.shape, x.bound + 1, exact=True, simple=True,
                        ops=x.ops + 1)
        if op in ("expm1", "exp2", "sinh", "cosh") and b > 4:
            e, b = self.squash(e), 1.0
        if op in ("asin", "acos", "atanh"):
            # |x| <= 0.5: away from the ends, where the slope is infinite
            e = Expr("tanh(%s) * 0.5" % e.text, e.dt, e.shape, 0.5, ops=e.ops + 2)
        if op in ("log1p",):
            e = Expr("abs(%s)" % e.text, e.dt, e.shape, b, ops=e.ops + 1, simple=True)
        if op in ("log2",):
            e = self.positive(e)
        if op == "acosh":
            e = Expr("abs(%s) + 1.5" % e.text, e.dt, e.shape, b + 1.5, lo=1.5, ops=e.ops + 2)
        if op == "tan":
            e = Expr("tanh(%s)" % e.text, e.dt, e.shape, 1.0, ops=e.ops + 1, simple=True)
        bound = {"log1p": math.log1p(b), "expm1": math.exp(min(b, 4)), "exp2": 2 ** min(b, 4),
                 "log2": max(abs(math.log2(e.lo or 1)), math.log2(max(e.bound, 1))) if op == "log2" else 1,
                 "tan": 1.6, "asin": 0.53, "acos": 2.1, "atan": 1.6, "sinh": math.exp(min(b, 4)),
                 "cosh": math.exp(min(b, 4)), "asinh": math.asinh(b), "acosh": math.acosh(max(e.bound, 1.0)),
                 "atanh": 0.55, "softplus": b + 1, "mish": b + 1, "hardsigmoid": 1, "hardswish": b + 1,
                 "leaky_relu": b, "elu": max(b, 1), "clamp": min(b, 0.5), "pow_infix": 0}[op]
        if op == "leaky_relu":
            return Expr("leaky_relu(%s, slope=0.1)" % e.text, v.dt, v.shape, bound, simple=True, ops=e.ops + 1)
        if op == "elu":
            return Expr("elu(%s, alpha=1.0)" % e.text, v.dt, v.shape, bound, simple=True, ops=e.ops + 1)
        if op == "clamp":
            return Expr("clamp(%s, -0.5, 0.5)" % e.text, v.dt, v.shape, bound, exact=e.exact, simple=True,
                        ops=e.ops + 1)
        if op == "pow_infix":
            p = self.positive(e)
            ex = self.r.choice([2, 0.5, 3])
            return Expr("%s ** %s" % (paren(p), fmt_num(ex)), v.dt, v.shape, p.bound ** ex, ops=p.ops + 1)
        return Expr("%s(%s)" % (op, e.text), v.dt, v.shape, bound, simple=True, ops=e.ops + 1)

    def index_expr(self, shape, axis, n):
        """An i32 expression of shape: indices in [-n, n) from positions
        (iota), some negative (counted from the end)."""
        other = self.r.randrange(len(shape))
        a, c = self.r.choice([1, 3, 7]), self.r.choice([0, 1, 2])
        t = "mod(iota(shape=[%s], axis=%d) * %d + iota(shape=[%s], axis=%d) + %d, %d)" % (
            ", ".join(map(str, shape)), axis, a, ", ".join(map(str, shape)), other, c, n)
        return t + (" - %d" % n if self.chance(0.3) else "")

    def v2(self, v):
        """A version 2 op on v: the elementwise ones, the new reductions and
        scans, topk, gather and take_along_axis at computed indices, a
        cross-entropy."""
        if v.dt not in FLOATS:
            return None
        e = ref(v)
        rank = len(v.shape)
        k = self.r.random()
        if k < 0.35:
            return self.v2_unary(v)
        if k < 0.42:
            w = self.partner(v)
            if w is None:
                return None
            self.use(w)
            p = self.positive(ref(w))
            return Expr("atan2(%s, %s)" % (e.text, p.text), v.dt, bcast(v.shape, w.shape), 1.6, simple=True,
                        ops=p.ops + 1)
        if not v.shape:
            return None
        axis = self.r.randrange(rank)
        n = v.shape[axis]
        if e.bound > SQUASH_AT:
            e = self.squash(e)
        if k < 0.58:
            op = self.r.choice(["prod", "logsumexp", "var", "std", "argmax", "argmin", "any", "all"])
            keep = self.chance(0.5)
            shape = tuple((1 if i == axis else d) for i, d in enumerate(v.shape) if keep or i != axis)
            attrs = "axis=%d%s" % (axis, "" if keep else ", keepdims=false")
            if op == "prod":
                if n > 17:
                    return None
                x = Expr("sigmoid(%s) + 0.5" % e.text, v.dt, v.shape, 1.5, ops=e.ops + 2)
                return Expr("prod(%s, %s)" % (x.text, attrs), v.dt, shape, 1.5 ** n, simple=True, ops=x.ops + 1)
            if op in ("var", "std"):
                if n < 3:
                    return None
                c = ", correction=1" if self.chance(0.3) else ""
                return Expr("%s(%s, %s%s)" % (op, e.text, attrs, c), v.dt, shape, e.bound ** 2 * 2 + 1,
                            simple=True, ops=e.ops + 4)
            if op == "logsumexp":
                if e.bound > 4:
                    e = self.squash(e)
                return Expr("logsumexp(%s, %s)" % (e.text, attrs), v.dt, shape, e.bound + math.log(n) + 1,
                            simple=True, ops=e.ops + 4)
            if op in ("argmax", "argmin"):
                if not e.exact:
                    return None
                return Expr("%s(%s, %s)" % (op, e.text, attrs), "i32", shape, n, exact=True, simple=True,
                            ops=e.ops + 1)
            if not e.exact:
                return None
            return Expr("%s(%s > 0.1, %s)" % (op, paren(e), attrs), "bool", shape, 1, exact=True, simple=True,
                        ops=e.ops + 2)
        if k < 0.68:
            op = self.r.choice(["cumsum", "cumprod"])
            attrs = "axis=%d" % axis + (", exclusive=true" if self.chance(0.3) else "") + \
                (", reverse=true" if self.chance(0.3) else "")
            if op == "cumprod":
                if n > 17:
                    return None
                x = Expr("sigmoid(%s) + 0.5" % e.text, v.dt, v.shape, 1.5, ops=e.ops + 2)
                return Expr("cumprod(%s, %s)" % (x.text, attrs), v.dt, v.shape, 1.5 ** n, simple=True,
                            ops=x.ops + 1)
            # a running sum grows with the axis: scaled back, as sum's
            sc = 2.0 ** -round(math.log2(n)) if n > 2 else 1.0
            return Expr("cumsum(%s, %s)%s" % (e.text, attrs, " * " + fmt_num(sc) if sc != 1 else ""), v.dt, v.shape,
                        e.bound * n * sc, ops=e.ops + 1 + (sc != 1))
        if k < 0.78:
            # topk of exact values (a rounding cannot reorder them)
            if not e.exact:
                return None
            kk = self.r.randint(1, min(n, 5))
            vals, idx = self.newname(), self.newname()
            shape = tuple(kk if i == axis else d for i, d in enumerate(v.shape))
            ann = " @save" if self.chance(0.1) else ""
            self.lines.append("  %s, %s = topk(%s, k=%d, axis=%d%s)%s" % (
                vals, idx, e.text, kk, axis, ", largest=false" if self.chance(0.3) else "", ann))
            self.ops += e.ops + 2
            self.pool.append(Val(vals, v.dt, shape, e.bound, exact=True))
            self.pool.append(Val(idx, "i32", shape, n, exact=True))
            return None
        if k < 0.92:
            m = self.r.choice([1, 2, 3, 5, n])
            if self.chance(0.5):
                ishape = (m,) if self.chance(0.6) else (m, 2)
                shape = v.shape[:axis] + ishape + v.shape[axis + 1:]
                if numel(shape) > MAX_NUMEL or len(shape) > 6:
                    return None
                return Expr("gather(%s, %s, axis=%d)" % (e.text, self.index_expr(ishape, 0, n), axis), v.dt, shape,
                            e.bound, exact=e.exact, simple=True, ops=e.ops + 1)
            ishape = tuple(m if i == axis else (d if self.chance(0.7) else 1) for i, d in enumerate(v.shape))
            shape = tuple(m if i == axis else d for i, d in enumerate(v.shape))
            return Expr("take_along_axis(%s, %s, axis=%d)" % (e.text, self.index_expr(ishape, axis, n), axis),
                        v.dt, shape, e.bound, exact=e.exact, simple=True, ops=e.ops + 1)
        # a cross-entropy along the last axis, targets from positions
        tshape = v.shape[:-1] + (1,)
        if e.bound > 4:
            e = self.squash(e)
        return Expr("cross_entropy(%s, %s)" % (e.text, self.index_expr(tshape, 0, v.shape[-1])), v.dt, tshape,
                    2 * e.bound + math.log(v.shape[-1]) + 1, simple=True, ops=e.ops + 5)

    # ---------------------------------------------------------------- graph
    def step(self):
        v = self.pick(lambda w: w.dt in FLOATS) if self.chance(0.8) else self.pick()
        if v is None:
            v = self.pick()
        k = self.r.random()
        table = [(0.2, self.unary), (0.4, self.binary), (0.49, self.reduction), (0.56, self.composite),
                 (0.7, self.layout), (0.79, self.matmul), (0.85, self.convert), (0.9, self.where), (1.0, self.v2)]
        f = next(fn for lim, fn in table if k < lim)
        e = f(v)
        if e is None or not self.dtype_shape_ok(e.shape):
            return
        self.use(v)
        if e.ops == 0 or (e.simple and e.text == v.name):
            return
        out = self.emit(e)
        if e.dt in FLOATS:
            self.written.append((out, e))
        # a plain copy now and then: identity, saved or output apart
        if self.chance(0.03):
            w = self.emit(Expr(out.name, out.dt, out.shape, out.bound, out.lo, out.exact, simple=True, ops=1))
            out.uses += 1

    def outputs(self):
        pub = self.usable(lambda w: not w.is_input)
        last = pub[-1]
        outs = [last]
        leaves = [w for w in pub if w.uses == 0 and w is not last]
        self.r.shuffle(leaves)
        outs += leaves[:self.r.randint(0, 3)]
        for w in self.r.sample(pub, min(len(pub), self.r.choice([0, 0, 1, 2]))):
            if w not in outs:
                outs.append(w)
        if self.chance(0.03):
            ins = [w for w in self.pool if w.is_input]
            outs.append(self.r.choice(ins))
        self.r.shuffle(outs)
        return outs

    def build(self):
        NAMED.clear()
        self.declarations()
        self.numbers()
        self.target = target = self.r.choice([5, 8, 12, 16, 20, 25, 30, 40, 50, 60])
        fuse_at = self.r.randint(1, target) if self.chance(0.25) else -1
        guard = 0
        while self.ops < target and guard < 2000:
            guard += 1
            if fuse_at >= 0 and self.ops >= fuse_at:
                self.fuse_block()
                fuse_at = -1
                continue
            x = self.r.random()
            if x < 0.015:
                self.wide()
            elif x < 0.03:
                self.attention()
            else:
                self.step()
        if not self.usable(lambda w: not w.is_input):
            self.emit(Expr("tanh(%s)" % self.pool[0].name if self.pool[0].dt in FLOATS
                           else "abs(%s)" % self.pool[0].name, self.pool[0].dt, self.pool[0].shape, 1,
                           simple=True))
        outs = self.outputs()
        # A statement written again, as an output beside the value: one
        # node once passes/cse.c merges them (its own random stream, drawn
        # last, so each seed's graph is otherwise what it was before).
        rep = random.Random(self.seed * 7919 + 1)
        if self.written and rep.random() < 0.3:
            v, e = rep.choice(self.written)
            self.lines.append("  rep_%s = %s + %s" % (v.name, paren(e), v.name))
            outs.append(Val("rep_" + v.name, v.dt, v.shape, 2 * v.bound))
        head = ["# random graph, seed %d (tests/random/gen_graph.py)" % self.seed,
                "graph rg%d {" % self.seed]
        return "\n".join(head + self.decls + self.lines +
                         ["  output " + ", ".join(w.name for w in outs), "}"]) + "\n"


def generate(seed, attempt=0):
    """Graph `seed`; attempt k > 0 draws the k-th replacement, for a graph
    whose reference went non-finite."""
    g = Gen(seed * 1000 + attempt if attempt else seed)
    text = g.build()
    if attempt:
        text = text.replace("(tests/random/gen_graph.py)",
                            "variant %d (tests/random/gen_graph.py %d --variant %d)" % (attempt, seed, attempt), 1)
    return text


# ----------------------------------------------------------------- .npy

def npy_values(path):
    """The numbers of a little-endian .npy file as a list."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:6] != b"\x93NUMPY":
        raise ValueError("%s: not a .npy file" % path)
    major = data[6]
    if major == 1:
        hlen = struct.unpack("<H", data[8:10])[0]
        start = 10 + hlen
    else:
        hlen = struct.unpack("<I", data[8:12])[0]
        start = 12 + hlen
    header = data[start - hlen:start].decode("latin1")
    descr = re.search(r"'descr':\s*'([^']+)'", header).group(1)
    code = {"<f4": "f", "<f2": "e", "<i4": "i", "|b1": "?", "<f8": "d"}[descr]
    size = struct.calcsize(code)
    body = data[start:]
    return struct.unpack("<%d%s" % (len(body) // size, code), body[:len(body) // size * size])


def all_finite(d):
    for name in sorted(os.listdir(d)):
        if name.endswith(".npy"):
            for x in npy_values(os.path.join(d, name)):
                if isinstance(x, float) and not math.isfinite(x):
                    return False, name
    return True, None


def checked(fgc, seed, out):
    """Writes a graph for seed that fgc accepts and whose reference is
    finite; exit status 0, or 2 for a generator bug."""
    for attempt in range(8):
        text = generate(seed, attempt)
        with open(out, "w") as f:
            f.write(text)
        p = subprocess.run([fgc, "check", out], capture_output=True, text=True)
        if p.returncode != 0:
            sys.stderr.write("gen_graph.py: seed %d attempt %d: fgc check rejects %s (a generator bug):\n%s"
                             % (seed, attempt, out, p.stderr))
            return 2
        with tempfile.TemporaryDirectory() as tmp:
            od = os.path.join(tmp, "o")
            p = subprocess.run([fgc, "run", out, "--outputs", od, "--seed", str(seed)],
                               capture_output=True, text=True)
            if p.returncode != 0:
                sys.stderr.write("gen_graph.py: seed %d: fgc run fails on %s:\n%s" % (seed, out, p.stderr))
                return 2
            ok, bad = all_finite(od)
        if ok:
            return 0
        sys.stderr.write("gen_graph.py: seed %d attempt %d: %s is not finite; drawing again\n"
                         % (seed, attempt, bad))
    sys.stderr.write("gen_graph.py: seed %d: no finite graph in 8 attempts\n" % seed)
    return 2


def value_types(report):
    """value name -> type text ("f32[3,5]"), from `fgc report --format json`."""
    return {o["value"]: o["type"] for g in report["groups"] for o in g["ops"]}


def stored(report):
    """The float values a plan (`fgc report --format json`) writes and
    another group reads back."""
    types = value_types(report)
    return {e["producer"] for e in report["edges"]
            if types.get(e["producer"], "").split("[")[0] in FLOATS}


def round_stored(src, report, dst):
    """src, a dump with one op a statement, with each value the plan of
    report stores made cast(op(...), dtype=D): the reference then rounds
    it as the plan's store does, and every use reads the rounded value."""
    keep, types = stored(report), value_types(report)
    stmt = re.compile(r"^(\s*)([A-Za-z_][A-Za-z0-9_]*) = (.*?)((?: @\w+)*)(\s*#.*)?$")
    out = []
    with open(src) as f:
        for line in f.read().rstrip("\n").split("\n"):
            m = stmt.match(line)
            if m and m.group(2) in keep:
                dt = types[m.group(2)].split("[")[0]
                line = "%s%s = cast(%s, dtype=%s)%s%s" % (m.group(1), m.group(2), m.group(3), dt, m.group(4),
                                                           m.group(5) or "")
            out.append(line)
    with open(dst, "w") as f:
        f.write("\n".join(out) + "\n")


def stores_within(before, after):
    """Whether the plan `after` (of round_stored's graph) stores and reads
    back only values `before` stored: each is one of those (now a cast) or
    the op under such a cast, whose rounding the cast repeats."""
    keep, now = stored(before), stored(after)
    return all(e["producer"] in keep or e["consumer"] in keep
               for e in after["edges"] if e["producer"] in now)


def keep_casts(text):
    """text with each explicit cast(E, dtype=f16 or bf16) made
    cast(cast(E, dtype=KEEP_f16), dtype=f32): the cast's rounding stays
    where the program asked for it, its value f32 like the rest."""
    out, i = [], 0
    while True:
        j = text.find("cast(", i)
        if j < 0:
            break
        out.append(text[i:j])
        depth, k = 0, j + 4
        while True:                     # k: the cast's closing parenthesis
            depth += {"(": 1, ")": -1}.get(text[k], 0)
            if depth == 0:
                break
            k += 1
        m = re.search(r"dtype\s*=\s*(bf16|f16)\s*$", text[j:k])
        inner = keep_casts(text[j + 5:k])
        if m:
            inner = re.sub(r"(bf16|f16)\s*$", lambda x: "KEEP_" + x.group(1), inner)
            out.append("cast(cast(%s), dtype=f32)" % inner)
        else:
            out.append("cast(%s)" % inner)
        i = k + 1
    out.append(text[i:])
    return "".join(out)


def promote(src, dst):
    """src with every f16/bf16 value made f32; explicit casts to them still
    round there (keep_casts), so that the promoted graph tells a cast's
    rounding from the storage's."""
    with open(src) as f:
        text = f.read()
    text = re.sub(r"\b(bf16|f16)\b", "f32", keep_casts(text))
    text = text.replace("KEEP_bf16", "bf16").replace("KEEP_f16", "f16")
    with open(dst, "w") as f:
        f.write(text)


def main(argv):
    if len(argv) >= 3 and argv[0] == "--promote":
        promote(argv[1], argv[2])
        return 0
    if len(argv) == 4 and argv[0] == "--round-stored":
        with open(argv[2]) as f:
            round_stored(argv[1], json.load(f), argv[3])
        return 0
    if len(argv) == 3 and argv[0] == "--stores-within":
        with open(argv[1]) as f, open(argv[2]) as g:
            return 0 if stores_within(json.load(f), json.load(g)) else 1
    if argv[:1] == ["--lint"]:
        # `fgc report --format json` on stdin: each group's ops fit its kind
        rep = json.load(sys.stdin)
        bad = 0
        for g in rep["groups"]:
            ops = [o["op"] for o in g["ops"]]
            mm = ops.count("matmul")
            red = sum(ops.count(r) for r in ("sum", "mean", "max", "min", "prod", "any", "all", "argmax", "argmin"))
            scan = ops.count("cumsum") + ops.count("cumprod")
            top = ops.count("topk")
            ok = {"loop": mm == 0 and red == 0 and scan == 0 and top == 0,
                  "gemm": mm == 1 and red == 0 and scan == 0 and top == 0,
                  "rowreduce": mm == 0 and red >= 1 and scan == 0 and top == 0,
                  "reduce": mm == 0 and red >= 1 and scan == 0 and top == 0,
                  "scan": mm == 0 and red == 0 and scan == 1 and top == 0,
                  "topk": mm == 0 and scan == 0 and top == 1}.get(g["kind"], False)
            if not ok:
                print("group %s (%s) holds %s" % (g["id"], g["kind"], " ".join(ops)))
                bad += 1
            if not g["writes"]:
                print("group %s (%s) writes nothing: a kernel whose work nobody reads" % (g["id"], g["kind"]))
                bad += 1
        return 1 if bad else 0
    if argv[:1] == ["--plan-sig"]:
        # `fgc report --format json` on stdin: the groups' kinds and members,
        # without casts and identities (--promote makes a cast to f16 of an
        # f16 value, an identity, a cast to f16 and back) and with the
        # compiler's temporaries unnumbered (the extra cast shifts them)
        rep = json.load(sys.stdin)
        name = lambda v: "_" if v.startswith("_") else v
        for g in rep["groups"]:
            print(g["kind"], " ".join(o["op"] + ":" + name(o["value"]) for o in g["ops"]
                                      if o["op"] not in ("cast", "identity")),
                  "| writes", " ".join(name(w["value"]) for w in g["writes"]))
        return 0
    if len(argv) >= 2 and argv[0] == "--finite":
        ok, bad = all_finite(argv[1])
        if not ok:
            print("not finite: %s" % bad)
        return 0 if ok else 1
    seed, out, fgc, variant = None, None, None, 0
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "-o":
            out = argv[i + 1]
            i += 2
        elif a == "--variant":
            variant = int(argv[i + 1])
            i += 2
        elif a == "--fgc":
            fgc = argv[i + 1]
            i += 2
        else:
            seed = int(a)
            i += 1
    if seed is None:
        sys.stderr.write(__doc__)
        return 2
    if fgc:
        if not out:
            sys.stderr.write("gen_graph.py: --fgc needs -o OUT\n")
            return 2
        return checked(fgc, seed, out)
    text = generate(seed, variant)
    if out:
        with open(out, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
