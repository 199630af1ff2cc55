"""What a worker process needs to rebuild a candidate: the tuned function by name, the
configurations and the arguments as bytes.

- A function (or ``@ws.kernel``) travels as (module, qualified name), found again with
  ``importlib`` (precompile.py's rule: not for ``__main__`` or locally defined functions).
- A configuration is pickled; a policy object that does not pickle (one holding a class made at
  run time, like a shared-storage struct) travels as its class and the values of its
  ``__init__`` parameters read from its attributes of the same names, accepted only when the
  rebuilt object has the same static key (so the worker compiles the same kernel).
- Arguments are pickled. For the compile step a CUDA torch tensor travels as a stand-in
  (shape, strides, dtype, device), rebuilt with ``torch.empty_strided`` on the device: compiling
  reads no data. For timing the data itself travels, as a CPU copy (the worker times on copies),
  rebuilt on the worker's GPU: a per-GPU timing worker rebuilds every CUDA tensor on its own
  device whatever device it came from.

Each ``pack_*`` returns None for what cannot travel; the autotuner then works in-process. What
names a class or function of ``__main__`` or a local one cannot travel either: it pickles, but
the worker (whose ``__main__`` is worker_main, and which never re-imports the user's script)
cannot find it again (``_dumps``).
"""
from __future__ import annotations

import inspect
import io
import pickle
from typing import Optional

__all__ = ["function_ref", "resolve", "pack_config", "pack_args", "unpack"]


def function_ref(fn) -> Optional[tuple]:
    """(module, qualname) of ``fn`` (a function or a ``@ws.kernel``) if a worker can import it
    by that name and gets the same object, else None."""
    from ..jit.precompile import _resolve
    target = getattr(fn, "fn", fn) if _is_kernel(fn) else fn
    module, qualname = getattr(target, "__module__", None), getattr(target, "__qualname__", "")
    if not module or module == "__main__" or "<locals>" in qualname:
        return None
    try:
        found = _resolve(module, qualname)
    except Exception:  # noqa: BLE001 - not importable by name
        return None
    # a function decorated with @ws.autotune is found as its Tuned object, which wraps it
    return (module, qualname) if found is fn or _unwrap(found) is fn else None


def _unwrap(obj):
    from .autotune import Tuned
    return obj.target if isinstance(obj, Tuned) else obj


def resolve(ref: tuple):
    """The function or kernel a ``function_ref`` names (in a worker): a ``Tuned`` found under
    the name gives the function it wraps."""
    from ..jit.precompile import _resolve
    return _unwrap(_resolve(*ref))


def _is_kernel(x) -> bool:
    from ..jit.kernel import Kernel
    return isinstance(x, Kernel)


class _NotImportable(pickle.PicklingError):
    """A class or function a worker process could not import by its name."""


class _WorkerPickler(pickle.Pickler):
    def reducer_override(self, obj):
        if isinstance(obj, type) or inspect.isfunction(obj):
            if obj.__module__ == "__main__" or "<locals>" in getattr(obj, "__qualname__", ""):
                raise _NotImportable(f"{obj.__module__}.{obj.__qualname__}")
        return NotImplemented


def _dumps(obj) -> bytes:
    """``pickle.dumps(obj)``, refusing (``_NotImportable``) what names a class or function of
    ``__main__`` or a local one, which would pickle here and fail to unpickle in a worker."""
    buf = io.BytesIO()
    _WorkerPickler(buf).dump(obj)
    return buf.getvalue()


def _construct(cls, kwargs):
    return cls(**kwargs)


def pack_config(config) -> Optional[bytes]:
    """``config`` as bytes a worker can unpickle into an equal configuration, or None."""
    try:
        return _dumps(("config", config))
    except _NotImportable:
        return None
    except Exception:  # noqa: BLE001 - fall back to the constructor's arguments
        pass
    cls = type(config)
    try:
        params = [p for p in inspect.signature(cls.__init__).parameters.values()][1:]
        if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params):
            return None
        kwargs = {p.name: getattr(config, p.name) for p in params}
        blob = _dumps((_construct, cls, kwargs))
        from ..core.static_key import static_key
        if static_key(_construct(cls, kwargs)) != static_key(config):
            return None
        return blob
    except Exception:  # noqa: BLE001 - no attribute for a parameter, unpicklable values
        return None


class _TorchStandIn:
    """A CUDA torch tensor's shape, strides, dtype and device: rebuilt uninitialized in the
    worker."""

    def __init__(self, t):
        self.shape, self.stride = tuple(t.shape), tuple(t.stride())
        self.dtype, self.device = str(t.dtype).replace("torch.", ""), str(t.device)

    def rebuild(self, device=None):
        import torch
        return torch.empty_strided(self.shape, self.stride, dtype=getattr(torch, self.dtype),
                                   device=device or self.device)


class _TorchData:
    """A CUDA torch tensor with its contents: a CPU copy of its whole storage, and its view
    (shape, strides, storage offset), so a slice or transpose is rebuilt as the same view (the
    same strides and alignment: the same specialization). Rebuilt on its device, or on the
    worker's own when the worker was given one (a per-GPU timing worker sees its GPU as
    cuda:0, warpstage/tune/devices.py)."""

    def __init__(self, t):
        import torch
        storage = t.untyped_storage()
        whole = torch.empty(0, dtype=t.dtype, device=t.device).set_(
            storage, 0, (storage.nbytes() // t.element_size(),), (1,))
        self.whole, self.device = whole.detach().cpu(), str(t.device)
        self.view = (tuple(t.shape), tuple(t.stride()), t.storage_offset())

    def rebuild(self, device=None):
        shape, stride, offset = self.view
        return self.whole.to(device or self.device).as_strided(shape, stride, offset)


def _travelling(x, data: bool):
    t = type(x)
    if t.__module__.startswith("torch") and t.__name__ in ("Tensor", "Parameter") \
            and x.device.type == "cuda":
        return _TorchData(x) if data else _TorchStandIn(x)
    if t in (tuple, list):
        return t(_travelling(v, data) for v in x)
    if t is dict:
        return {k: _travelling(v, data) for k, v in x.items()}
    return x


def _rebuild(x, device=None):
    if type(x) in (_TorchStandIn, _TorchData):
        return x.rebuild(device)
    if type(x) in (tuple, list):
        return type(x)(_rebuild(v, device) for v in x)
    if type(x) is dict:
        return {k: _rebuild(v, device) for k, v in x.items()}
    return x


def pack_args(args: tuple, kwargs: dict, data: bool) -> Optional[bytes]:
    """(args, kwargs) as bytes, or None when they do not pickle. ``data`` False: CUDA torch
    tensors as stand-ins (compile step); True: with their contents (timing)."""
    try:
        return _dumps(("data" if data else "stand-ins", _travelling(args, data),
                       _travelling(kwargs, data)))
    except Exception:  # noqa: BLE001 - lambdas, open files, ...
        return None


def unpack(blob: bytes, device: Optional[str] = None):
    """The object ``pack_config`` / ``pack_args`` packed (in a worker); ``device`` (e.g.
    'cuda:0'): where CUDA tensors are rebuilt, instead of the device they were on."""
    x = pickle.loads(blob)
    if type(x) is tuple and len(x) == 2 and x[0] == "config":
        return x[1]
    if type(x) is tuple and len(x) == 3 and x[0] is _construct:
        return _construct(x[1], x[2])
    if type(x) is tuple and len(x) == 3 and x[0] in ("data", "stand-ins"):
        return _rebuild(x[1], device), _rebuild(x[2], device)
    return x
