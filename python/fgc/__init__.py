"""fgc - compiled fgc models in PyTorch.

    import fgc
    model = fgc.load("out/libmodel.so")    # fgc compile model.fg --lib -o out/libmodel.so
    y = model(x, w)                        # torch.Tensors on a CUDA device, in declaration order
    y, h = model(x, w)                     # several outputs (then @save values): a tuple
    model(x, w, out=(y,))                  # into tensors the caller holds (eager only)
    model.check()                          # waits; ModelError if an index was out of range
    model.release()                        # frees its device memory; the next call makes it again

A model takes its inputs and params in the order the .fg declares them and
returns its outputs in `output` order, then the values it saves (@save),
each a new tensor from PyTorch's caching allocator on the inputs' device.
It runs on PyTorch's current stream of that device, so it orders with the
caller's work, and it is a torch.library custom op (fgc::NAME_ID) with a
fake-tensor implementation: it traces into torch.compile graphs as one
opaque call, and is captured by torch.cuda.graphs (after one run outside a
capture, as PyTorch asks of any warm-up).  An eager call on plain tensors,
with no torch.compile tracing and no dispatch or function mode active,
runs the op's CUDA implementation without going through the dispatcher,
whose cost is larger than a small model's launches.  Arguments are checked before
anything runs: a wrong device, dtype, shape or a non-contiguous tensor is
an error that names the tensor.

Run-time errors (a gather index out of range, an integer division by
zero) are recorded by the kernels and read by model.check(), which waits
for the last call and raises ModelError with the message `fgc run` gives;
a call does not check by itself.

Each device, and each thread, gets a model of its own (its arena and
cuBLASLt state, fgrt_model.h), made at its first call: two threads on two
streams do not share device memory.  A tensor whose address is not
256-byte aligned (a view into a larger one) is copied first.
"""
import os
import threading

from ._abi import Library, ModelError, TensorSpec  # noqa: F401 (the package's names)

__all__ = ["load", "Library", "ModelError", "TensorSpec"]

_models = {}            # per library path: its model (one custom op each)
_lock = threading.Lock()


def load(path):
    """The model in the library at `path` (fgc compile --lib), as a callable
    over torch.Tensors: the same object for the same library."""
    try:
        import torch
        from ._torch import Model
    except ImportError as e:
        raise ModelError(f"fgc.load needs PyTorch: {e}") from None
    if not hasattr(torch.library, "register_fake"):
        raise ModelError(f"fgc.load needs PyTorch 2.4 or later (torch.library.register_fake); this is "
                         f"{torch.__version__}")
    key = os.path.realpath(path)
    with _lock:
        if key not in _models:
            _models[key] = Model(path)
        return _models[key]
