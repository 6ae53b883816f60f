"""
golden_ref.py - the library half of gen_interp_goldens.py: rounding to
each dtype of fgc (f32, f16, bf16, i32, i8, u8, bool and the 8-bit
floats) and the array each one is stored as; Philox-4x32-10 and dropout's
mask; the f64 reference ops (activations, correctly rounded sums by
math.fsum, matmul, softmax, the norms); and the case builder that turns a
case into CASE.fg, in/*.npy and expect/*.npy, with `case`, the decorator
whose registry CASES the generator walks.

Like the generator, an independent reading of shared/design/language.md
in NumPy, with no fgc code: values are computed in float64 and rounded
once, where they are written.  The self-tests cross-check the rounding
against NumPy's and Philox against the known-answer vectors; main() runs
them before it writes anything.
"""
import math
import os
import textwrap
import zlib

import numpy as np

F64 = np.float64

# ------------------------------------------------------------- rounding


def round_binary(x, sig, emin, maxfin):
    """Rounds float64 x to the binary format with `sig` significand bits
    (implicit bit included), minimum normal exponent `emin` and largest
    finite value `maxfin`, ties to even, straight from float64 (no double
    rounding).  NaN stays NaN; overflow goes to +-inf; subnormals exact."""
    x = np.asarray(x, F64)
    out = x.copy()
    fin = np.isfinite(x)
    v = x[fin]
    _, e = np.frexp(v)                      # v = m * 2^e, 0.5 <= |m| < 1
    e = np.maximum(e, emin + 1)             # subnormals share one quantum
    q = np.ldexp(1.0, e - sig)              # the ulp at v
    r = np.rint(v / q) * q                  # exact scaling; rint is RNE
    r = np.where(np.abs(r) > maxfin, np.copysign(np.inf, v), r)
    out[fin] = r
    return out


def to_f32(x):
    r = round_binary(x, 24, -126, float(np.finfo(np.float32).max))
    ref = np.asarray(x, F64).astype(np.float32).astype(F64)
    assert np.array_equal(r, ref, equal_nan=True), "f32 rounding disagrees with NumPy"
    return r


def to_f16(x):
    r = round_binary(x, 11, -14, 65504.0)
    # NumPy converts float64 to float16 directly (npy_double_to_half);
    # agreeing with it bit for bit cross-checks both.
    ref = np.asarray(x, F64).astype(np.float16)
    got = r.astype(np.float16)
    assert np.array_equal(got.view(np.uint16)[~np.isnan(r)],
                          ref.view(np.uint16)[~np.isnan(r)]), "f16 rounding disagrees with NumPy"
    return r


BF16_MAX = float.fromhex("0x1.fep127")


def to_bf16(x):
    return round_binary(x, 8, -126, BF16_MAX)


def to_i32(x):
    """Truncates toward zero and saturates; NaN becomes 0."""
    x = np.asarray(x, F64)
    r = np.trunc(np.nan_to_num(x, nan=0.0, posinf=2.0**31, neginf=-2.0**31))
    return np.clip(r, -2.0**31, 2.0**31 - 1)


def to_f8e4m3(x):
    """f8e4m3: no infinity, so anything past 448 saturates (NaN stays)."""
    x = np.asarray(x, F64)
    return round_binary(np.where(np.isnan(x), x, np.clip(x, -448.0, 448.0)), 4, -6, 448.0)


def to_f8e5m2(x):
    return round_binary(x, 3, -14, 57344.0)


def to_int(lo, hi):
    """i8, u8: toward zero, saturating at [lo, hi]; NaN becomes 0."""
    def f(x):
        x = np.asarray(x, F64)
        return np.clip(np.trunc(np.nan_to_num(x, nan=0.0, posinf=hi, neginf=lo)), lo, hi)
    return f


def wrap(v, bits, signed):
    """Two's complement wrap-around of integers v to `bits` bits."""
    v = np.asarray(v, np.int64) % (1 << bits)
    return np.where(signed & (v >= 1 << (bits - 1)), v - (1 << bits), v).astype(F64)


def to_bool(x):
    return (np.asarray(x, F64) != 0).astype(F64)


ROUND = {"f32": to_f32, "f16": to_f16, "bf16": to_bf16, "i32": to_i32, "bool": to_bool,
         "i8": to_int(-128, 127), "u8": to_int(0, 255), "f8e4m3": to_f8e4m3, "f8e5m2": to_f8e5m2}


def storage(dt, v):
    """The array written to a .npy file for a value v of dtype dt."""
    v = ROUND[dt](v)
    if dt == "f16":
        a = v.astype("<f2")
    elif dt in ("f32", "bf16", "f8e4m3", "f8e5m2"):
        a = v.astype("<f4")
    elif dt == "i32":
        a = v.astype("<i4")
    elif dt in ("i8", "u8"):
        a = v.astype("|i1" if dt == "i8" else "|u1")
    else:
        a = v != 0
    assert np.array_equal(a.astype(F64), v, equal_nan=True)
    return a


def self_test_rounding():
    p = 2.0 ** np.arange(-40, 0, dtype=F64)
    e16 = {1 + 2.0**-11: 1.0, 1 + 3 * 2.0**-11: 1 + 2.0**-9,
           1 + 2.0**-11 + 2.0**-40: 1 + 2.0**-10, 65519.0: 65504.0,
           65520.0: np.inf, -65520.0: -np.inf, 2.0**-25: 0.0,
           3 * 2.0**-26: 2.0**-24, 2.0**-24: 2.0**-24}
    ebf = {1 + 2.0**-8: 1.0, 1 + 3 * 2.0**-8: 1 + 2.0**-6,
           -(1 + 3 * 2.0**-8): -(1 + 2.0**-6), 1 + 2.0**-8 + 2.0**-40: 1 + 2.0**-7,
           70000.0: 70144.0, 3e9: 3003121664.0, -2.7: -2.703125,
           float.fromhex("0x1.ffp127"): np.inf, float.fromhex("0x1.fe8p127"): BF16_MAX,
           2.0**-133: 2.0**-133, 2.0**-134: 0.0, 3 * 2.0**-135: 2.0**-133}
    for table, f in ((e16, to_f16), (ebf, to_bf16)):
        for x, want in table.items():
            got = f(np.array([x]))[0]
            assert got == want, (f.__name__, x, got, want)
    assert np.isnan(to_bf16(np.array([np.nan]))[0])
    assert math.copysign(1, to_bf16(np.array([-0.0]))[0]) == -1
    to_f16(np.concatenate([p, -p, 1 + p, 60000 + p * 1e4]))
    assert list(to_i32(np.array([2.7, -2.7, 3e9, -3e9, np.nan]))) == [2, -2, 2**31 - 1, -2**31, 0]

# ----------------------------------------------------- Philox-4x32-10


M32 = np.uint64(0xFFFFFFFF)


def philox4x32_10(c, k):
    """c: four uint64 arrays holding 32-bit words; k: two.  As in
    runtime/fgrt_philox.h and Salmon et al., SC'11."""
    c0, c1, c2, c3 = (np.asarray(w, np.uint64) for w in c)
    k0, k1 = (np.uint64(w) for w in k)
    for _ in range(10):
        p0 = np.uint64(0xD2511F53) * c0
        p1 = np.uint64(0xCD9E8D57) * c2
        c0, c1, c2, c3 = ((p1 >> np.uint64(32)) ^ c1 ^ k0, p1 & M32,
                          (p0 >> np.uint64(32)) ^ c3 ^ k1, p0 & M32)
        k0 = (k0 + np.uint64(0x9E3779B9)) & M32
        k1 = (k1 + np.uint64(0xBB67AE85)) & M32
    return c0, c1, c2, c3


def self_test_philox():
    kat = [((0, 0, 0, 0), (0, 0), (0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8)),
           ((0xffffffff,) * 4, (0xffffffff,) * 2,
            (0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd)),
           ((0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344), (0xa4093822, 0x299f31d0),
            (0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1))]
    for ctr, key, want in kat:
        got = philox4x32_10([np.array([w], np.uint64) for w in ctr], key)
        assert tuple(int(w[0]) for w in got) == want, (ctr, key, got)


def dropout(x, p, seed):
    """fgrt_dropout_keep: kept when word 0 of Philox((idx lo, idx hi, 0, 0),
    (seed lo, seed hi)) >= ceil(p * 2^32); kept values scaled by 1/(1-p)."""
    x = np.asarray(x, F64)
    idx = np.arange(x.size, dtype=np.uint64)
    zero = np.zeros_like(idx)
    w0 = philox4x32_10((idx & M32, idx >> np.uint64(32), zero, zero),
                       (seed & 0xFFFFFFFF, seed >> 32))[0]
    thr = math.ceil(p * 4294967296.0)
    keep = (w0 >= np.uint64(thr)).reshape(x.shape)
    return np.where(keep, x * (1.0 / (1.0 - p)), 0.0)

# ------------------------------------------------ the f64 reference ops


def ufunc(f):
    vf = np.vectorize(f, otypes=[F64])
    return lambda *a: vf(*[np.asarray(v, F64) for v in a])


exp, log, sin, cos, tanh, erf, powf = (ufunc(f) for f in (
    math.exp, math.log, math.sin, math.cos, math.tanh, math.erf, math.pow))
SQRT2 = math.sqrt(2.0)


def sigmoid(x):
    return 1.0 / (1.0 + exp(-x))


def gelu(x):
    return 0.5 * x * (1.0 + erf(x / SQRT2))


def gelu_tanh(x):
    return 0.5 * x * (1.0 + tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x * x * x)))


def silu(x):
    return x * sigmoid(x)


def relu(x):
    return np.maximum(x, 0.0)


def _axes(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    axis = [axis] if isinstance(axis, int) else axis
    return tuple(sorted(a % ndim for a in axis))


def rsum(x, axis=None, keepdims=True):
    """Correctly rounded sums (math.fsum) over axis, as language.md's sum."""
    x = np.asarray(x, F64)
    ax = _axes(axis, x.ndim)
    rest = [i for i in range(x.ndim) if i not in ax]
    kept = [x.shape[i] for i in rest]
    rows = np.transpose(x, rest + list(ax)).reshape(int(np.prod(kept, dtype=np.int64)), -1)
    v = np.array([math.fsum(r) for r in rows], F64).reshape(kept)
    if keepdims:
        v = v.reshape([1 if i in ax else n for i, n in enumerate(x.shape)])
    return v


def rmean(x, axis=None, keepdims=True):
    x = np.asarray(x, F64)
    n = int(np.prod([x.shape[i] for i in _axes(axis, x.ndim)], dtype=np.int64))
    return rsum(x, axis, keepdims) / n


def rmax(x, axis=None, keepdims=True):
    x = np.asarray(x, F64)
    return np.max(x, axis=_axes(axis, x.ndim), keepdims=keepdims)


def rmin(x, axis=None, keepdims=True):
    x = np.asarray(x, F64)
    return np.min(x, axis=_axes(axis, x.ndim), keepdims=keepdims)


def matmul(a, b):
    """[..., M, K] x [..., K, N] with broadcast batch dims; each dot is a
    correctly rounded sum of exact products (operands have <= 24 bits)."""
    a, b = np.asarray(a, F64), np.asarray(b, F64)
    assert a.ndim >= 2 and b.ndim >= 2 and a.shape[-1] == b.shape[-2]
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    A = np.broadcast_to(a, batch + a.shape[-2:])
    B = np.broadcast_to(b, batch + b.shape[-2:])
    M, N = a.shape[-2], b.shape[-1]
    out = np.empty(batch + (M, N), F64)
    for ix in np.ndindex(*batch):
        for i in range(M):
            for j in range(N):
                out[ix + (i, j)] = math.fsum(A[ix + (i,)] * B[ix + (slice(None), j)])
    return out


def softmax(x, axis=-1):
    e = exp(x - rmax(x, axis))
    return e / rsum(e, axis)


def log_softmax(x, axis=-1):
    d = x - rmax(x, axis)
    return d - log(rsum(exp(d), axis))


def layernorm(x, g, b, eps=1e-5):
    d = x - rmean(x, -1)
    return d / np.sqrt(rmean(d * d, -1) + eps) * g + b


def rmsnorm(x, w, eps=1e-6):
    return x / np.sqrt(rmean(x * x, -1) + eps) * w


def tr(x):
    """transpose's default: swap the last two axes."""
    return np.swapaxes(x, -1, -2)

# ------------------------------------------------------ the case builder


FLOATS = ("f32", "f16", "bf16")
CASES = []


def case(name, doc, trans=False):
    """Registers a case.  trans: f32 outputs go through transcendentals
    (testing.md's rtol 1e-5 instead of 1.3e-6); "exact": the outputs are
    one rounding of exact values (casts), so they must match bit for bit."""
    def reg(fn):
        CASES.append((name, doc, trans, fn))
        return fn
    return reg


class Case:
    def __init__(self, name):
        self.name = name
        self.rng = np.random.RandomState(zlib.crc32(name.encode()))
        self.syms = {}
        self.decls, self.body, self.ins, self.outs, self.saved = [], [], [], [], []

    def _shape(self, dims):
        shape = []
        for d in (t.strip() for t in dims.split(",") if t.strip()):
            if "=" in d:
                sym, val = d.split("=")
                self.syms[sym.strip()] = int(val)
                shape.append(int(val))
            else:
                shape.append(int(d) if d.isdigit() else self.syms[d])
        return tuple(shape)

    def _draw(self, dt, shape, dom):
        r = self.rng
        if dt == "bool":
            return (r.random_sample(shape) < 0.5).astype(F64)
        if dt == "i32" or dom == "int":
            return r.choice([-8, -7, -5, -3, -2, -1, 1, 2, 3, 4, 6, 8], size=shape).astype(F64)
        if dom == "grid":       # few values, so that comparisons meet ties
            return r.choice([-1.5, -0.5, 0.5, 1.5], size=shape).astype(F64)
        if dom == "pos":        # log, sqrt, rsqrt, pow's base
            return r.uniform(0.25, 3.0, shape)
        if dom == "wide":       # softmax rows, sin, cos: [-3, 3] less a gap at 0
            return r.choice([-1.0, 1.0], size=shape) * r.uniform(0.05, 3.0, shape)
        assert dom == "any"     # [-2, 2] less a gap at 0: safe to divide by
        return r.choice([-1.0, 1.0], size=shape) * r.uniform(0.1, 2.0, shape)

    def inp(self, name, dt, dims, dom="any", values=None, kind="input"):
        shape = self._shape(dims)
        if values is None:
            v = self._draw(dt, shape, dom)
        else:
            v = np.asarray(values, F64).reshape(shape)
        v = ROUND[dt](v)
        self.decls.append("%s %s : %s[%s]" % (kind, name, dt, dims))
        self.ins.append((name, dt, v))
        return v

    def param(self, name, dt, dims, dom="any", values=None):
        return self.inp(name, dt, dims, dom, values, kind="param")

    def s(self, text):
        self.body.extend(text.strip("\n").split("\n"))

    def out(self, name, dt, value):
        self.outs.append((name, dt, np.asarray(value, F64)))

    def save(self, name, dt, value):
        assert any(name in [t.strip() for t in l.split("=")[0].split(",")] and "@save" in l
                   for l in self.body), name
        self.saved.append((name, dt, np.asarray(value, F64)))

    def tol(self, trans):
        """The `# tol:` line the outputs need, or None for the defaults."""
        dts = {dt for _, dt, _ in self.outs + self.saved}
        if trans == "exact":
            return "rtol=0 atol=0"
        if "bf16" in dts:
            return "rtol=1.6e-2 atol=1e-5"
        if "f16" in dts and trans:
            return "rtol=1e-3 atol=1e-5"
        if "f32" in dts and trans:
            return "rtol=1e-5 atol=1e-5"
        return None


def write_case(root, name, doc, trans, fn):
    c = Case(name)
    fn(c)
    assert c.outs, name
    lines = ["# " + l for l in textwrap.wrap("%s: %s" % (name, doc.strip()), 74,
                                             subsequent_indent="  ")]
    lines.append("# Generated by tests/golden/gen_interp_goldens.py: edit that, not this.")
    t = c.tol(trans)
    if t:
        lines.append("# tol: " + t)
    lines.append("graph %s {" % name.replace("-", "_"))
    lines += ["  " + d for d in c.decls]
    lines += [("  " + l) if l else "" for l in c.body]
    lines.append("  output " + ", ".join(n for n, _, _ in c.outs))
    lines.append("}")
    with open(os.path.join(root, name + ".fg"), "w", newline="\n") as f:
        f.write("\n".join(lines) + "\n")
    for sub, items, prefix in (("in", c.ins, ""), ("expect", c.outs, ""),
                               ("expect", c.saved, "saved.")):
        d = os.path.join(root, name, sub)
        os.makedirs(d, exist_ok=True)
        for n, dt, v in items:
            np.save(os.path.join(d, prefix + n + ".npy"), storage(dt, v), allow_pickle=False)
