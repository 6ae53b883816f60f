"""torch.nn.functional, as far as `fgc emit-torch` modules call it (see
torch/__init__.py: a NumPy stand-in, not PyTorch)."""
import math

import numpy as np

import torch


def gelu(x, approximate="none"):
    x = np.asarray(x)
    if approximate == "tanh":
        k = math.sqrt(2.0 / math.pi)
        return torch.from_numpy(0.5 * x * (1.0 + np.tanh(k * (x + 0.044715 * x * x * x))))
    return torch.from_numpy(0.5 * x * (1.0 + np.asarray(torch.erf(x / math.sqrt(2.0)))))


def silu(x):
    x = np.asarray(x)
    return torch.from_numpy(x / (1.0 + np.exp(-x)))


def softplus(x):
    x = np.asarray(x)
    return torch.from_numpy(np.logaddexp(0.0, x))


def mish(x):
    return torch.from_numpy(np.asarray(x) * np.tanh(np.asarray(softplus(x))))


def hardsigmoid(x):
    x = np.asarray(x)
    return torch.from_numpy(np.clip(x + 3.0, 0.0, 6.0) / 6.0)


def hardswish(x):
    return torch.from_numpy(np.asarray(x) * np.asarray(hardsigmoid(x)))


def leaky_relu(x, negative_slope=0.01):
    x = np.asarray(x)
    return torch.from_numpy(np.where(x > 0, x, x * negative_slope))


def elu(x, alpha=1.0):
    x = np.asarray(x)
    return torch.from_numpy(np.where(x > 0, x, alpha * np.expm1(x)))


def _last_axes(x, normalized_shape):
    return tuple(range(np.ndim(x) - len(normalized_shape), np.ndim(x)))


def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    axes = _last_axes(x, normalized_shape)
    d = np.asarray(x) - np.mean(x, axis=axes, keepdims=True)
    y = d / np.sqrt(np.mean(d * d, axis=axes, keepdims=True) + eps)
    return torch.from_numpy(y * weight + bias)


def rms_norm(x, normalized_shape, weight=None, eps=None):
    axes = _last_axes(x, normalized_shape)
    x = np.asarray(x)
    return torch.from_numpy(x / np.sqrt(np.mean(x * x, axis=axes, keepdims=True) + eps) * weight)
