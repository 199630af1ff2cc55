"""The generated call path: a cache-hit launch of a ``@ws.kernel`` in one Python frame.

A cache-hit launch with torch tensors used to spend most of its time in Python frames and small
allocations (a binder call, a TensorArg and a key tuple per tensor, the key lookup, the launch
helpers), not in the driver. For each kernel, :func:`make_call` writes the source
of one function for its parameters' annotations and compiles it: it reads every argument inline,
builds a flat *call signature* (the block, then per parameter what its cache key depends on: a
tensor's dtype, shape, strides and base address mod 16; an unannotated scalar's type and width; a
``ws.tma.TensorDescriptor``'s geometry, as a token from ``frontend.kinds.tma.descriptor_key``; a static
value's type and key) and looks it up in a memo that only the full path fills; a hit checks the
guards, picks the stream and calls ``Launcher.launch``. The function is the ``__call__`` of the
kernel's launch objects (``kern[grid, block]``), so a hit costs one frame besides the Launcher's.
A descriptor's ABI leaf is its 128-byte CUtensorMap, encoded at its first launch and kept in the
descriptor, so a hit with descriptors built once costs no more than one with tensors.

Why a hit is exactly what the full path would launch: the cache key is a pure function of the call
signature, so a hit names the specialization the full path would pick (its guards are checked on
every hit, as the full path does); anything the code does not read inline (other tensor kinds,
composites, keywords, another arity, a tensor on another device or without strides, the simulator
target) misses and takes the full path, which checks, explains and raises; and before a memo entry
is stored, ``fast_call.values`` (the same source, ending in a return instead of the launch) must
reproduce the full path's launch for that call exactly (values, shared memory, stream).

The source is written by frontend/fast_call_source.py from each parameter kind's snippet
(frontend/kinds/), once per kernel and process (at its first ``kern[grid, block]``). Writing it
costs about 1-2 ms; compiling it costs more where parameters are bare (each reads every kind
inline: ~380 lines for the wgmma FlashAttention kernel, 15-38 ms of ``compile`` on the loaded
CI machine), so the code object is kept in the disk cache's code store
(jit/cache/code_store.py, keyed by the source, its file name and the Python version) and a
fresh process reads it back (``marshal``) instead of compiling again. The source is kept as
``FastCall.call.source`` and in ``linecache``, so a traceback under ``compiler_frames=True``
shows its lines.
"""
from __future__ import annotations

import hashlib
import importlib.util
import linecache
import marshal
import os
import sys
import types

from ..runtime.tensormap import TensorDescriptor, TensorMapArg
from ..runtime.tensors import as_tensor_arg
from ..frontend.fast_call_source import call_source, device_source, kind_of
from ..frontend.kinds import descriptor_key, fast_parts
from ..frontend.kinds.scalar import F32_MAX, INF
from ..core.static_key import UnkeyableError, static_key

__all__ = ["FastCall", "kind_of", "call_source", "device_source", "make_call", "compiled",
           "tensor_tails"]


def compiled(source: str, filename: str) -> types.CodeType:
    """``compile(source, filename, "exec")``, through the disk cache's code store: a code object
    an earlier process compiled from the same source and file name under the same Python (its
    bytecode magic and version) is read back with ``marshal``; else compiled now and stored.
    Loading it runs no code (the cache folder is trusted as ``__pycache__`` is: code_store.py)."""
    from .cache import code_store
    text = f"{sys.version}\0{importlib.util.MAGIC_NUMBER.hex()}\0{filename}\0{source}"
    key = "fast call " + hashlib.sha256(text.encode()).hexdigest()
    data = code_store.get(key)
    if data is not None:
        try:
            code = marshal.loads(data)
        except (EOFError, ValueError, TypeError):   # not a code object of this Python
            code = None
        if type(code) is types.CodeType and code.co_filename == filename:
            return code
    code = compile(source, filename, "exec")
    code_store.put(key, marshal.dumps(code))
    return code


def make_call(kinds, name: str, namespace: dict):
    """The generated call path ``fast_call`` for parameters of ``kinds`` (see :func:`kind_of`),
    with ``fast_call.values`` and ``fast_call.lookup`` (see :func:`call_source`); None when a parameter has no fast
    reading. ``namespace`` becomes the code's globals, so later updates take effect; it provides
    ``_memo`` (call signature -> (Launcher, guards, dynamic smem bytes, torch stream?, then
    :func:`tensor_tails`)), ``_miss``, ``_full``, ``_NA`` (the default of an argument not given),
    ``_user_error``, ``_target``, ``_guards_hold``, ``_raw_stream``, ``_stream_handle`` and
    ``_Tensor`` (torch.Tensor, or a class no argument has)."""
    if any(k is None for k in kinds):
        return None
    source = call_source(kinds, name)
    ns = namespace
    ns.update(_static_key=static_key, _Unkeyable=UnkeyableError, _F32_MAX=F32_MAX, _INF=INF,
              _Descriptor=TensorDescriptor, _descriptor_key=descriptor_key, _adapt=adapt_tensor)
    for i, kind in enumerate(kinds):
        ns.update(fast_parts(i, f"v{i}", kind).get("namespace", {}))   # a kind's constants
    # a file name inside the package (beside jit/kernel.py, whose frame it replaces): tracebacks and
    # warnings skip it like warpstage's own frames (tracebacks._user_error, _user_stacklevel);
    # linecache shows its lines when debugging
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    filename = os.path.join(package, f"<fast call of {name}>")
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compiled(source, filename), ns)
    fn = ns["fast_call"]
    fn.values = ns["fast_values"]
    fn.lookup = ns["fast_lookup"]
    fn.source = source
    fn.namespace = ns
    return fn


def adapt_tensor(value):
    """``value`` as a TensorArg (runtime/tensors.py: a torch subclass, cupy, anything with
    ``__cuda_array_interface__`` or ``__dlpack__``, a DLPack capsule), or None when it is not a
    tensor or cannot be read (the full path then explains)."""
    try:
        return as_tensor_arg(value)
    except Exception:                   # noqa: BLE001 - the full path raises the real error
        return None


def tensor_tails(kinds, args, tensor_type) -> list:
    """Per tensor-or-auto parameter: the ABI leaves after its data pointer (its shape, then its
    non-unit strides: constant for one call signature, which holds both), or None for an auto
    parameter that got no tensor. The tail of a memo entry."""
    tails = []
    for kind, a in zip(kinds, args):
        if kind != "tensor" and kind != "auto":
            continue
        if type(a) is tensor_type:
            shape, strides = a.shape, a.stride()
        else:
            ta = adapt_tensor(a) if type(a) not in _SCALARS and type(a) is not TensorDescriptor \
                else None
            if ta is None:
                tails.append(None)
                continue
            shape, strides = ta.shape, ta.strides
        tails.append((*shape, *[s for s in strides if s != 1]))
    return tails


_SCALARS = frozenset({int, float, bool, type(None)})


class _NoTensor:
    """Stands for torch.Tensor in the generated code while torch is not imported."""


class FastCall:
    """One kernel's generated call path: its code, namespace and memo (call signature ->
    (Launcher, guards, dynamic smem bytes, torch stream?, then :func:`tensor_tails`)).

    ``launch_type`` is the class of the kernel's launch objects: a subclass of ``base`` (the
    full-path ``_Launch``) whose ``__call__`` is the generated code, or ``base`` itself when a
    parameter has no fast reading. ``full_call(launch, given, more, kwargs)`` runs ``base``'s
    call for another arity or keywords; ``user_error`` strips warpstage's frames from an error.
    """

    def __init__(self, kernel, annotations: dict, base: type, full_call, user_error, not_given):
        from .launch import get_target, stream_handle
        from ..runtime.launcher import torch_stream_reader
        from ..frontend.guards import guards_hold
        self.kernel = kernel
        self.kinds = [kind_of(annotations.get(p.name), i == 0 and p.name == "self")
                      for i, p in enumerate(kernel.params)]
        self.memo: dict = {}
        self.torch = torch = sys.modules.get("torch")
        self.namespace = {
            "_memo": self.memo, "_miss": self.miss, "_full": full_call, "_NA": not_given,
            "_user_error": user_error, "_target": get_target, "_guards_hold": guards_hold,
            "_stream_handle": stream_handle,
            "_Tensor": torch.Tensor if torch is not None else _NoTensor,
            "_raw_stream": torch_stream_reader(torch) if torch is not None else None}
        self.call = make_call(self.kinds, kernel.__qualname__, self.namespace)
        self.launch_type = base if self.call is None else type(
            base.__name__, (base,), {"__slots__": (), "__call__": self.call,
                                     "__doc__": base.__doc__})
        if self.call is not None:               # the C-level path in front of it (c_call.py)
            from .c_call import launch_type
            self.launch_type = launch_type(self, self.launch_type) or self.launch_type

    def miss(self, launch, args, sig):
        """The full path for a call the generated code did not launch (classify, specialize,
        launch); then, when the generated code computed the call signature ``sig``, remember
        what a hit on ``sig`` launches (:meth:`fill`)."""
        from .launch import get_target, launch_specialized
        launch.last = (None, None)      # a stale memo entry (guards changed) is looked up again
        if self._notice_torch():
            sig = None                  # read with _adapt, not inline: not the signature of a hit
        target = get_target()
        ck, leaves = self.kernel.specialize(list(args), launch.block, target)
        before = list(leaves) if sig is not None and target == "cuda" else None
        result = launch_specialized(ck, leaves, target, launch.grid, launch.block, launch.smem,
                                    launch.stream)
        if before is not None and ck._devices:
            self.fill(launch, args, sig, ck, before)
        return result

    def _notice_torch(self) -> bool:
        """Switch the generated code to reading torch tensors inline once torch is imported
        after it was made; True when that happened now."""
        if self.torch is not None or "torch" not in sys.modules:
            return False
        from ..runtime.launcher import torch_stream_reader
        torch = self.torch = sys.modules["torch"]
        self.namespace.update(_Tensor=torch.Tensor, _raw_stream=torch_stream_reader(torch))
        return True

    def prepare_entry(self, launch, args, sig) -> None:
        """Store the memo entry for ``sig`` without launching (a prepared launch's first bind,
        warpstage/jit/prepared.py): specialize (compile on a miss) and :meth:`fill`."""
        ck, leaves = self.kernel.specialize(list(args), launch.block, "cuda")
        if sig[1] not in ck._devices:           # sig[1]: the device (device_source)
            ck.cuda_launcher(sig[1])
        self.fill(launch, args, sig, ck, list(leaves))

    def fill(self, launch, args, sig, ck, leaves) -> None:
        """Store the memo entry for ``sig`` if the generated code reproduces, for these
        arguments, exactly the launch the full path just made from ``leaves`` (its ABI values
        before the launch: values, smem bytes, stream)."""
        from .launch import stream_handle
        from ..runtime.launcher import current_stream
        from ..runtime.tensors import TensorArg
        tensor_type = self.torch.Tensor if self.torch is not None else _NoTensor
        tensors = [x if type(x) is TensorArg else x.tensor_arg for x in leaves
                   if type(x) is TensorArg or type(x) is TensorMapArg]
        device = (tensors[0].device_index or 0) if tensors else 0   # one, as the launch checked
        loaded = ck._devices.get(device)
        if loaded is None or device != sig[1]:
            return
        entry = (loaded[2], ck.guards, ck.dynamic_smem,
                 any(t.kind == "torch" for t in tensors),       # launch on torch's stream
                 *tensor_tails(self.kinds, args, tensor_type))
        stream = current_stream(tensors) if launch.stream is None else stream_handle(launch.stream)
        full = (sig, max(ck.dynamic_smem, launch.smem), stream,
                tuple(x.data_ptr if type(x) is TensorArg else
                      x.desc.encode() if type(x) is TensorMapArg else x for x in leaves))
        if self.call.values(launch, entry, *args) == full:
            if len(self.memo) >= 1024:
                self.memo.clear()
            self.memo[sig] = entry
