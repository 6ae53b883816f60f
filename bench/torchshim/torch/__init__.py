"""A NumPy stand-in for the slice of PyTorch that `fgc emit-torch` modules
call, so that tests/run-torch.sh can run forward(..., reference=True) and
make_inputs() on a machine without PyTorch and compare them with `fgc run`.

It is not PyTorch.  It covers what a reference run needs: float64, int32,
int64 and bool tensors with torch's names and argument conventions.  f16
values live in NumPy's float16; bf16 values, which NumPy lacks, live in
float64 arrays holding bf16-representable values.  Arithmetic in f16 or
bf16 (what eager PyTorch does outside a reference run) is not emulated:
the GPU benchmark (bench/peers.py) checks that path against real PyTorch.
"""
import math as _math

import numpy as _np

_np.seterr(all="ignore")  # inf and NaN are values here, as in torch


class dtype:
    """torch.dtype: a name, the NumPy storage, and is_floating_point."""

    def __init__(self, name, storage, is_floating_point):
        self.name = name
        self.storage = _np.dtype(storage)
        self.is_floating_point = is_floating_point

    def __repr__(self):
        return "torch." + self.name


float64 = dtype("float64", _np.float64, True)
float32 = dtype("float32", _np.float32, True)
float16 = dtype("float16", _np.float16, True)
bfloat16 = dtype("bfloat16", _np.float64, True)  # see the module's docstring
float8_e4m3fn = dtype("float8_e4m3fn", _np.float64, True)  # as bfloat16
float8_e5m2 = dtype("float8_e5m2", _np.float64, True)
int64 = dtype("int64", _np.int64, False)
int32 = dtype("int32", _np.int32, False)
int8 = dtype("int8", _np.int8, False)
uint8 = dtype("uint8", _np.uint8, False)
bool = dtype("bool", _np.bool_, False)  # noqa: A001 - torch's own name


class Tensor(_np.ndarray):
    """An ndarray with the methods torch code calls on tensors."""

    device = "cpu"

    def permute(self, *dims):
        if len(dims) == 1 and isinstance(dims[0], tuple):
            dims = dims[0]
        return self.transpose(dims)

    def to(self, dt):
        if isinstance(dt, _np.dtype):  # a tensor's own .dtype, here NumPy's
            return _np.asarray(self).astype(dt).view(Tensor)
        if dt is bfloat16:
            return _round_bf16(_np.asarray(self, _np.float64))
        if dt is float8_e4m3fn or dt is float8_e5m2:
            return _round_f8(_np.asarray(self, _np.float64), dt is float8_e4m3fn)
        return _np.asarray(self).astype(dt.storage).view(Tensor)

    def view(self, dt=None, *rest):
        if isinstance(dt, dtype):
            return _np.ndarray.view(self, dt.storage)
        return _np.ndarray.view(self, dt, *rest) if dt is not None else _np.ndarray.view(self)

    def narrow(self, dim, start, length):
        return narrow(self, dim, start, length)

    def is_floating_point(self):
        return self.dtype.kind == "f"

    def numel(self):
        return self.size

    def abs(self):
        return _np.abs(self)

    def trunc(self):
        return _np.trunc(self)

    def double(self):
        return self.to(float64)

    def detach(self):
        return self

    def cpu(self):
        return self

    def numpy(self):
        return _np.asarray(self)


def _t(x):
    return _np.asarray(x).view(Tensor)


def _round_bf16(x):
    """float64 to the nearest bf16 value (ties to even), kept in float64."""
    out = x.copy()
    fin = _np.isfinite(x)
    _, e = _np.frexp(x[fin])
    q = _np.ldexp(1.0, _np.maximum(e, -125) - 8)
    r = _np.rint(x[fin] / q) * q
    out[fin] = _np.where(_np.abs(r) > 3.3895313892515355e38, _np.copysign(_np.inf, x[fin]), r)
    return _t(out)


def _round_f8(x, e4m3):
    """float64 to the nearest f8e4m3 (saturating at 448) or f8e5m2 value."""
    sig, emin, maxfin = (4, -6, 448.0) if e4m3 else (3, -14, 57344.0)
    x = _np.where(_np.isnan(x), x, _np.clip(x, -maxfin, maxfin)) if e4m3 else x.copy()
    out = x.copy()
    fin = _np.isfinite(x)
    _, e = _np.frexp(x[fin])
    q = _np.ldexp(1.0, _np.maximum(e - 1, emin) - (sig - 1))
    r = _np.rint(x[fin] / q) * q
    out[fin] = _np.where(_np.abs(r) > maxfin, _np.copysign(_np.inf, x[fin]), r)
    return _t(out)


# --------------------------------------------------------------- creation

def from_numpy(a):
    return _t(a)


def tensor(value, dtype=None, device=None):
    return _t(_np.array(value, dtype=dtype.storage if dtype else None))


def empty(n, dtype=float32, device=None):
    return _t(_np.empty(n, dtype.storage))


def arange(start, end=None, dtype=int64, device=None):
    return _t(_np.arange(start, end, dtype=dtype.storage) if end is not None
              else _np.arange(start, dtype=dtype.storage))


def full_like(x, value):
    return _t(_np.full_like(x, value))


# ------------------------------------------------------------ elementwise

def _ufunc(f):
    return lambda x: _t(f(x))


abs = _ufunc(_np.abs)  # noqa: A001
neg = _ufunc(_np.negative)
exp = _ufunc(_np.exp)
log = _ufunc(_np.log)
sqrt = _ufunc(_np.sqrt)
sin = _ufunc(_np.sin)
cos = _ufunc(_np.cos)
tanh = _ufunc(_np.tanh)
floor = _ufunc(_np.floor)
isfinite = _ufunc(_np.isfinite)
square = _ufunc(_np.square)
round = _ufunc(_np.rint)  # noqa: A001 - ties to even, as torch.round
# language version 2's elementwise ops
ceil = _ufunc(_np.ceil)
trunc = _ufunc(_np.trunc)
sign = _ufunc(_np.sign)     # torch.sign(NaN) is 0; the modules keep NaN with where
isnan = _ufunc(_np.isnan)
isinf = _ufunc(_np.isinf)
log1p = _ufunc(_np.log1p)
expm1 = _ufunc(_np.expm1)
exp2 = _ufunc(_np.exp2)
log2 = _ufunc(_np.log2)
tan = _ufunc(_np.tan)
asin = _ufunc(_np.arcsin)
acos = _ufunc(_np.arccos)
atan = _ufunc(_np.arctan)
sinh = _ufunc(_np.sinh)
cosh = _ufunc(_np.cosh)
asinh = _ufunc(_np.arcsinh)
acosh = _ufunc(_np.arccosh)
atanh = _ufunc(_np.arctanh)
logical_not = _ufunc(_np.logical_not)


def atan2(a, b):
    return _t(_np.arctan2(a, b))


def logical_and(a, b):
    return _t(_np.logical_and(a, b))


def logical_or(a, b):
    return _t(_np.logical_or(a, b))


def logical_xor(a, b):
    return _t(_np.logical_xor(a, b))
_erf = _np.frompyfunc(_math.erf, 1, 1)


def rsqrt(x):
    return _t(1.0 / _np.sqrt(x))


def reciprocal(x):
    return _t(1.0 / _np.asarray(x))


def sigmoid(x):
    return _t(1.0 / (1.0 + _np.exp(-_np.asarray(x))))


def relu(x):
    x = _np.asarray(x)
    return _t(_np.where(x < 0, _np.zeros_like(x), x))


def erf(x):
    x = _np.asarray(x)
    return _t(_erf(x).astype(x.dtype))


def pow(a, b):  # noqa: A001
    return _t(_np.power(a, b))


def maximum(a, b):
    return _t(_np.maximum(a, b))


def minimum(a, b):
    return _t(_np.minimum(a, b))


def clamp(x, min=None, max=None):  # noqa: A002 - torch's argument names
    x = _np.asarray(x)
    if min is not None:
        x = _np.maximum(x, _np.asarray(min, x.dtype))
    if max is not None:
        x = _np.minimum(x, _np.asarray(max, x.dtype))
    return _t(x)


def where(c, a, b):
    return _t(_np.where(c, a, b))


def copysign(a, b):
    return _t(_np.copysign(a, b))


def nan_to_num(x, nan=0.0):
    return _t(_np.nan_to_num(_np.asarray(x), nan=nan))


# ------------------------------------------------------ reductions, layout

def sum(x, dim=None, keepdim=False, dtype=None):  # noqa: A001
    return _t(_np.sum(x, axis=dim, keepdims=keepdim, dtype=dtype.storage if dtype else None))


def mean(x, dim=None, keepdim=False):
    return _t(_np.mean(x, axis=dim, keepdims=keepdim))


def prod(x, dim, keepdim=False):
    """torch.prod: over one dim."""
    return _t(_np.prod(x, axis=dim, keepdims=keepdim))


def argmax(x, dim, keepdim=False):
    """torch.argmax over one dim: the first index of the largest, a NaN's
    first where there is one (NumPy's argmax does the same)."""
    return _t(_np.argmax(x, axis=dim, keepdims=keepdim).astype(_np.int64))


def argmin(x, dim, keepdim=False):
    return _t(_np.argmin(x, axis=dim, keepdims=keepdim).astype(_np.int64))


def zeros_like(x, dtype=None):
    return _t(_np.zeros(_np.shape(x), dtype=dtype.storage if dtype else _np.asarray(x).dtype))


def ones_like(x, dtype=None):
    return _t(_np.ones(_np.shape(x), dtype=dtype.storage if dtype else _np.asarray(x).dtype))


def cumsum(x, dim, dtype=None):
    return _t(_np.cumsum(x, axis=dim, dtype=dtype.storage if dtype else None))


def cumprod(x, dim, dtype=None):
    return _t(_np.cumprod(x, axis=dim, dtype=dtype.storage if dtype else None))


def sort(x, dim=-1, descending=False, stable=False):
    """torch.sort, stable: (values, indices); a NaN above every number."""
    a = _np.moveaxis(_np.asarray(x), dim, -1)
    nan = _np.isnan(a) if a.dtype.kind == "f" else _np.zeros(a.shape, _np.bool_)
    key = _np.where(nan, 0, a).astype(_np.float64)
    first, then = (~nan, -key) if descending else (nan, key)
    i = _np.lexsort((then, first), axis=-1)
    v = _np.take_along_axis(a, i, axis=-1)
    return _t(_np.moveaxis(v, -1, dim)), _t(_np.moveaxis(i.astype(_np.int64), -1, dim))


def flip(x, dims):
    return _t(_np.flip(x, axis=dims))


def amax(x, dim=None, keepdim=False):
    return _t(_np.amax(x, axis=dim, keepdims=keepdim))


def amin(x, dim=None, keepdim=False):
    return _t(_np.amin(x, axis=dim, keepdims=keepdim))


def softmax(x, dim):
    e = _np.exp(x - _np.amax(x, axis=dim, keepdims=True))
    return _t(e / _np.sum(e, axis=dim, keepdims=True))


def logsumexp(x, dim, keepdim=False):
    x = _np.asarray(x)
    m = _np.max(x, axis=dim, keepdims=True)
    m = _np.where(_np.isinf(m), 0.0, m)
    y = _np.log(_np.sum(_np.exp(x - m), axis=dim, keepdims=True)) + m
    return _t(y if keepdim else _np.squeeze(y, axis=dim))


def var(x, dim=None, correction=1, keepdim=False):
    x = _np.asarray(x)
    return _t(_np.var(x, axis=dim, ddof=correction, keepdims=keepdim))


def std(x, dim=None, correction=1, keepdim=False):
    x = _np.asarray(x)
    return _t(_np.std(x, axis=dim, ddof=correction, keepdims=keepdim))


def log_softmax(x, dim):
    s = x - _np.amax(x, axis=dim, keepdims=True)
    return _t(s - _np.log(_np.sum(_np.exp(s), axis=dim, keepdims=True)))


def div(a, b, rounding_mode=None):
    assert rounding_mode == "floor"
    return _t(_np.floor_divide(a, b))


def remainder(a, b):
    return _t(_np.mod(a, b))


def index_select(x, dim, index):
    return _t(_np.take(_np.asarray(x), _np.asarray(index), axis=dim))


def take_along_dim(x, idx, dim):
    x, idx = _np.asarray(x), _np.asarray(idx)
    shape = [max(a, b) if d != dim else b for d, (a, b) in enumerate(zip(x.shape, idx.shape))]
    xs = [s if d != dim else x.shape[d] for d, s in enumerate(shape)]
    return _t(_np.take_along_axis(_np.broadcast_to(x, xs), _np.broadcast_to(idx, shape), axis=dim))


def broadcast_to(x, shape):
    return _t(_np.broadcast_to(x, shape))


def narrow(x, dim, start, length):
    index = [slice(None)] * _np.ndim(x)
    index[dim] = slice(start, start + length)
    return _t(_np.asarray(x)[tuple(index)])


def cat(tensors, dim=0):
    return _t(_np.concatenate(tensors, axis=dim))


def matmul(a, b):
    return _t(_np.matmul(a, b))
