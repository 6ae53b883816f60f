"""fgc._torch - a compiled model's library as a PyTorch custom op (the
package's text, fgc/__init__.py, says how it behaves)."""
import hashlib
import threading
import weakref

import torch

from ._abi import Library

# the ABI's dtype names as PyTorch's dtypes
TORCH_DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16,
                "i32": torch.int32, "bool": torch.bool, "i8": torch.int8, "u8": torch.uint8,
                "f8e4m3": getattr(torch, "float8_e4m3fn", None), "f8e5m2": getattr(torch, "float8_e5m2", None)}


class Model:
    """A compiled model's library in PyTorch (see the module's text)."""

    def __init__(self, path):
        self.lib = Library(path)
        self.name = self.lib.name
        self.inputs = [t for t in self.lib.tensors if t.is_input]
        self.results = [t for t in self.lib.tensors if not t.is_input]
        # what a call compares its inputs with (_plain) and makes (_compute, _fake)
        self._in_sig = [(TORCH_DTYPES[t.dtype], torch.Size(t.shape)) for t in self.inputs]
        self._out_sig = [(torch.Size(t.shape), TORCH_DTYPES[t.dtype]) for t in self.results]
        self._blanks = {}       # per device: a 0-d tensor per result, expanded to its shape (_compute)
        self._local = threading.local()
        self._models = []       # every (device, handle) made, for destroy and release
        self._models_lock = threading.Lock()
        self._generation = 0    # release's count: a thread's handles of an older one are gone
        weakref.finalize(self, _destroy_all, self.lib, self._models)
        tag = hashlib.sha1(self.lib.path.encode()).hexdigest()[:8]
        self.op_name = f"fgc::{self.name}_{tag}"
        self._register()

    def __repr__(self):
        return f"fgc.Model({self.name}: {self.inputs} -> {self.results})"

    # -- the custom op

    def _register(self):
        lib = torch.library.Library("fgc", "FRAGMENT")
        args = ", ".join(f"Tensor {_ident(t.name)}" for t in self.inputs)
        rets = ", ".join("Tensor" for _ in self.results)
        rets = f"({rets})" if len(self.results) != 1 else rets
        op = self.op_name.split("::")[1]
        lib.define(f"{op}({args}) -> {rets}")
        lib.impl(op, self._cuda, "CUDA")
        lib.impl(op, self._check, "CPU")       # refuses, naming the tensor
        torch.library.register_fake(self.op_name, self._fake, lib=lib)
        self._library = lib     # keeps the registration alive
        self._op = getattr(torch.ops.fgc, op).default

    def _fake(self, *args):
        self._check(args, fake=True)
        outs = tuple(torch.empty(size, dtype=dtype, device=args[0].device if args else "cuda")
                     for size, dtype in self._out_sig)
        return outs[0] if len(outs) == 1 else outs

    def _cuda(self, *args):
        self._check(args)
        return self._compute(args, args[0].get_device() if args else torch.cuda.current_device())

    def _compute(self, args, index):
        """The results of args, new tensors on CUDA device `index`: each
        empty_like of a one-element tensor expanded to its shape, made once a
        device: torch.empty's parse of a size, dtype and device cost twice
        empty_like's (8.0 against 3.6 us on the H200's host), and a call 3-4
        us more (docs/performance.md v20)."""
        blanks = self._blanks.get(index)
        if blanks is None:
            blanks = self._blanks[index] = [torch.empty((), dtype=dtype, device=index).expand(size)
                                            for size, dtype in self._out_sig]
        outs = [torch.empty_like(b, memory_format=torch.contiguous_format) for b in blanks]
        self._run(args, outs, index)
        return outs[0] if len(outs) == 1 else tuple(outs)

    # -- calls

    def __call__(self, *args, out=None):
        if out is None:
            # an eager call on plain tensors skips the dispatcher, which
            # costs more than the launches of a small model (docs/performance.md
            # v8), and _check, whose messages it does not need (v18)
            index = self._plain(args)
            if index is not None and _no_modes():
                return self._compute(args, index)
            self._check(args)   # before the dispatcher, which would name no tensor
            return self._op(*args)
        self._check(args)
        out = (out,) if isinstance(out, torch.Tensor) else tuple(out)
        if len(out) != len(self.results):
            raise ValueError(f"{self.name}: out= takes {len(self.results)} tensors "
                             f"({', '.join(t.name for t in self.results)}), got {len(out)}")
        self._check(out, specs=self.results)
        self._run(args, list(out), (args[0] if args else out[0]).get_device())
        return out[0] if len(out) == 1 else out

    def check(self, device=None):
        """Waits for this thread's last call on `device` (default: the current
        CUDA device) and raises ModelError with the located message when one
        of its run-time checks failed (a gather index out of range, an
        integer division by zero): that call's results are not to be used.
        Calls do not check by themselves, which would wait on every call."""
        device = torch.device("cuda", torch.cuda.current_device()) if device is None else torch.device(device)
        self.lib.check(self._handle(device.index if device.index is not None else torch.cuda.current_device()))

    def release(self):
        """Frees the device memory this model holds (on every device and
        for every thread: its arena, scratch and cuBLASLt state) once the
        work already queued on it is done; the next call makes them again.
        fgc.load keeps a library's model for the process's life, and its
        arena (the program's values between kernels, up to the size of its
        tensors) with it: a process that runs many models, or one once,
        releases what it no longer calls.  Not while another thread is in a
        call of this model, nor before a CUDA graph that captured a call
        is replayed again (the graph keeps the freed addresses)."""
        with self._models_lock:
            handles = list(self._models)
            self._models.clear()        # the finalizer's list too
            self._generation += 1
        for index in sorted({index for index, _ in handles}):
            torch.cuda.synchronize(index)
        _destroy_all(self.lib, handles)

    def _check(self, tensors, specs=None, fake=False):
        specs = self.inputs if specs is None else specs
        if len(tensors) != len(specs):
            raise TypeError(f"{self.name} takes {len(specs)} tensors ({', '.join(t.name for t in specs)}), "
                            f"got {len(tensors)}")
        device = None
        for t, s in zip(tensors, specs):
            if not isinstance(t, torch.Tensor):
                raise TypeError(f"{self.name}: '{s.name}' must be a torch.Tensor, got {type(t).__name__}")
            if not fake and t.device.type != "cuda":
                raise ValueError(f"{self.name}: '{s.name}' is on {t.device}; the model runs on a CUDA device")
            if device is not None and t.device != device:
                raise ValueError(f"{self.name}: '{s.name}' is on {t.device}, the tensors before it on {device}")
            device = t.device
            want = TORCH_DTYPES[s.dtype]
            if t.dtype != want:
                raise TypeError(f"{self.name}: '{s.name}' is {t.dtype}, the model declares {s.dtype} ({want})")
            if tuple(t.shape) != s.shape:
                raise ValueError(f"{self.name}: '{s.name}' has shape {tuple(t.shape)}, the model declares "
                                 f"{list(s.shape)}")
            if not t.is_contiguous():
                raise ValueError(f"{self.name}: '{s.name}' is not contiguous (strides {t.stride()}); "
                                 f"pass .contiguous()")

    def _plain(self, args):
        """The CUDA device index of args when each is a plain (no subclass
        such as FakeTensor), contiguous torch.Tensor of its declared dtype
        and shape, all on that device (the current device when the model
        takes none); else None (then _check says what is wrong, if anything
        is)."""
        if len(args) != len(self._in_sig):
            return None
        if not args:
            return torch.cuda.current_device()
        index = None
        for t, (dtype, size) in zip(args, self._in_sig):
            if type(t) is not torch.Tensor or t.dtype != dtype or t.shape != size or not t.is_cuda \
                    or not t.is_contiguous():
                return None
            d = t.get_device()
            if index is None:
                index = d
            elif d != index:
                return None
        return index

    def _handle(self, index):
        """This thread's model on CUDA device `index`, made at its first use."""
        handles = getattr(self._local, "handles", None)
        if handles is None or self._local.generation != self._generation:
            handles = self._local.handles = {}
            self._local.generation = self._generation
        if index not in handles:
            with torch.cuda.device(index):
                h = self.lib.create(index)
            with self._models_lock:
                self._models.append((index, h))
            handles[index] = h
        return handles[index]

    def _run(self, args, outs, index):
        """Enqueues the model on args into outs on device `index`'s current
        stream.  The library wants 256-byte aligned addresses: a view
        elsewhere is copied."""
        ptrs = [t.data_ptr() for t in args] + [o.data_ptr() for o in outs]
        if any(p % 256 for p in ptrs):
            args = [a if a.data_ptr() % 256 == 0 else a.clone() for a in args]
            aligned = [o if o.data_ptr() % 256 == 0 else torch.empty_like(o) for o in outs]
            self._run(args, aligned, index)
            for o, a in zip(outs, aligned):
                if o is not a:
                    o.copy_(a)
            return
        self.lib.run(self._handle(index), ptrs, torch._C._cuda_getCurrentRawStream(index))


def _no_modes():
    """Whether a call may run the op's CUDA kernel itself: nothing would
    see the dispatcher's call (no torch.compile tracing, no Python dispatch
    or function mode: FakeTensorMode, profilers' modes)."""
    return (not torch.compiler.is_compiling() and not torch._C._is_torch_function_mode_enabled()
            and torch._C._len_torch_dispatch_stack() == 0)


def _ident(name):
    """A tensor name as a schema argument name (Python keywords are taken)."""
    import keyword
    return name + "_" if keyword.iskeyword(name) or name in ("self", "out") else name


def _destroy_all(lib, handles):
    """Destroys (device, handle) pairs: release's, after waiting for their
    devices, and the finalizer's when the Model is gone."""
    for _, h in handles:
        lib.destroy(h)
    handles.clear()
