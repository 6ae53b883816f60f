"""fgc._abi - the C ABI of a compiled model's library (runtime/fgrt_model.h)
through ctypes, with no PyTorch: what the library holds (its graph's name
and tensors) and its models (one per device).  fgc/__init__.py puts
PyTorch on top.

    lib = Library("out/libmodel.so")
    lib.name, lib.tensors                  # TensorSpec per tensor, in order
    m = lib.create(0)                      # a model on device 0 (ModelError)
    lib.run(m, [ptr, ...], stream)         # device pointers, a cudaStream_t
    lib.check(m)                           # waits; ModelError if a run-time check failed
    lib.destroy(m)

Every failure the library reports is a ModelError with its message.
"""
import ctypes
import os

ABI = 2                         # FG_MODEL_ABI of runtime/fgrt_model.h
MAX_RANK = 8

# FG_MODEL_* dtypes, in FgrtDtype's order (runtime/fgrt.h FGRT_DTYPES)
DTYPES = ("f32", "f16", "bf16", "i32", "bool", "i8", "u8", "f8e4m3", "f8e5m2")
INPUT, PARAM, OUTPUT, SAVED = 1, 2, 4, 8


class ModelError(RuntimeError):
    """A failure the compiled model's library reported, with its message."""


class _Tensor(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_int), ("role", ctypes.c_uint),
                ("rank", ctypes.c_int), ("shape", ctypes.c_int64 * MAX_RANK)]


class TensorSpec:
    """One tensor of the model: its name, dtype name, shape and role."""

    def __init__(self, index, name, dtype, shape, role):
        self.index, self.name, self.dtype, self.shape, self.role = index, name, dtype, shape, role

    @property
    def is_input(self):
        """An input or param: the caller passes it."""
        return bool(self.role & (INPUT | PARAM))

    def __repr__(self):
        kind = "param" if self.role & PARAM else "input" if self.role & INPUT else \
            "output" if self.role & OUTPUT else "saved"
        return f"{self.name}: {self.dtype}[{','.join(map(str, self.shape))}] ({kind})"


class Library:
    """A library `fgc compile --lib` built, loaded on its own (RTLD_LOCAL):
    two libraries share no symbol."""

    def __init__(self, path):
        self.path = os.path.realpath(path)
        try:
            self._lib = ctypes.CDLL(self.path, mode=os.RTLD_NOW | os.RTLD_LOCAL)
        except OSError as e:
            raise ModelError(f"cannot load '{path}': {e}") from None
        lib = self._lib
        for name, res, args in [
                ("fg_model_abi", ctypes.c_int, []),
                ("fg_model_name", ctypes.c_char_p, []),
                ("fg_model_ntensors", ctypes.c_int, []),
                ("fg_model_tensor", ctypes.c_int, [ctypes.c_int, ctypes.POINTER(_Tensor)]),
                ("fg_model_create", ctypes.c_int, [ctypes.c_int, ctypes.POINTER(ctypes.c_void_p)]),
                ("fg_model_run", ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p),
                                                ctypes.c_void_p]),
                ("fg_model_check", ctypes.c_int, [ctypes.c_void_p]),
                ("fg_model_destroy", None, [ctypes.c_void_p]),
                ("fg_model_error", ctypes.c_char_p, [])]:
            try:
                fn = getattr(lib, name)
            except AttributeError:
                raise ModelError(f"'{path}' is no fgc model library: it has no {name}") from None
            fn.restype, fn.argtypes = res, args
        if lib.fg_model_abi() != ABI:
            raise ModelError(f"'{path}' has ABI {lib.fg_model_abi()}; this fgc package speaks {ABI}")
        self.name = lib.fg_model_name().decode()
        self.tensors = []
        for i in range(lib.fg_model_ntensors()):
            t = _Tensor()
            self._check(lib.fg_model_tensor(i, ctypes.byref(t)))
            self.tensors.append(TensorSpec(i, t.name.decode(), DTYPES[t.dtype], tuple(t.shape[:t.rank]),
                                           t.role))

    def _check(self, rc):
        if rc != 0:
            raise ModelError(self._lib.fg_model_error().decode())

    def create(self, device):
        """A model on CUDA device `device` (its arena, scratch and cuBLASLt
        state); a handle for run and destroy."""
        m = ctypes.c_void_p()
        self._check(self._lib.fg_model_create(device, ctypes.byref(m)))
        return m.value

    def run(self, model, ptrs, stream):
        """Enqueues one run of `model` on `stream` (a cudaStream_t as an int,
        0 for the default stream): ptrs[i] the device address of tensor i."""
        arr = (ctypes.c_void_p * len(ptrs))(*ptrs)
        self._check(self._lib.fg_model_run(model, arr, stream or None))

    def check(self, model):
        """Waits for `model`'s last run; a ModelError with the located message
        (file:line:col: error: ...) when one of its run-time checks failed
        (an index out of range, an integer divisor of 0)."""
        self._check(self._lib.fg_model_check(model))

    def destroy(self, model):
        self._lib.fg_model_destroy(model)
