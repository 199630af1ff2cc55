"""The generated call path: a cache-hit launch of a ``@ws.kernel`` in one Python frame.

A cache-hit launch with torch tensors used to spend most of its time in Python frames and small
allocations (a binder call, a TensorArg and a key tuple per tensor, the key lookup, the launch
helpers), not in the driver. For each kernel, :func:`make_call` writes the source
of one function for its parameters' annotations and compiles it: it reads every argument inline,
builds a flat *call signature* (the block, then per parameter what its cache key depends on: a
tensor's dtype, shape, strides and base address mod 16; an unannotated scalar's type and width; a
``ws.tma.TensorDescriptor``'s geometry, as a token from ``binders.descriptor_key``; a static
value's key) and looks it up in a memo that only the full path fills; a hit checks the
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

Writing and compiling the source costs about 2 ms per kernel, once (at its first
``kern[grid, block]``). The source is kept as ``FastCall.call.source`` and in ``linecache``, so a
traceback under ``debug=True`` shows its lines.
"""
from __future__ import annotations

import linecache
import os
import sys
import textwrap

from ..lang.scalars import Scalar
from ..lang.tensor import Tensor, TensorSpec
from ..runtime.tensormap import TensorDescriptor, TensorMapArg
from ..runtime.tensors import as_tensor_arg
from .binders import _F32_MAX, _INF, _range_of, descriptor_key
from .binding_time import _StaticAnnotation
from .static_key import UnkeyableError, static_key

__all__ = ["FastCall", "kind_of", "call_source", "make_call", "tensor_tails"]

_HEAD = '''\
def {fn}(L{hit}{params}):
    """{doc}"""
'''

# reading a tensor argument into s (strides), p (address), h (shape): a plain torch tensor
# inline, anything else through the tensor adapter (one call)
_READ_TORCH = '''\
        try:
            s{i} = {v}.stride()
        except RuntimeError:
            {miss}
        p{i} = {v}.data_ptr()
        h{i} = {v}.shape
'''

_READ_ADAPTED = '''\
        a{i} = _adapt({v})
        if a{i} is None or a{i}.device != "cuda" or a{i}.device_index:
            {miss}
        p{i} = a{i}.data_ptr
        h{i} = a{i}.shape
        s{i} = a{i}.strides
'''

_TENSOR = ('''\
    if type({v}) is _Tensor:
        if not {v}.is_cuda or {v}.get_device():
            {miss}
''' + _READ_TORCH + "        d{i} = {v}.dtype\n    else:\n" + _READ_ADAPTED
           + "        d{i} = (a{i}.kind, a{i}.dtype)\n")

_SCALAR = '''\
    t{i} = type({v})
    if ({not_number}) or not _lo{i} <= {v} <= _hi{i}:
        {miss}
'''

_STATIC = '''\
    try:
        k{i} = _static_key({v})
    except _Unkeyable:
        {miss}
'''

_AUTO = '''\
    t{i} = type({v})
    if t{i} is int:
        if -2147483648 <= {v} <= 2147483647:
            g{i} = 0
        elif -9223372036854775808 <= {v} <= 9223372036854775807:
            g{i} = 1
        else:
            {miss}
        c{i} = ({v},)
    elif t{i} is float:
        if not -_F32_MAX <= {v} <= _F32_MAX and {v} == {v} and {v} not in (_INF, -_INF):
            {miss}
        g{i} = 2
        c{i} = ({v},)
    elif t{i} is bool:
        g{i} = 3
        c{i} = ({v},)
    elif {v} is None:
        g{i} = 4
        c{i} = ()
    elif t{i} is _Tensor and {v}.is_cuda and not {v}.get_device():
''' + _READ_TORCH + '''\
        g{i} = ({v}.dtype, h{i}, s{i}, p{i} & 15)
        c{i} = None
    elif t{i} is _Descriptor:
        a{i} = {v}.tensor_arg
        if a{i}.kind != "torch" or a{i}.device != "cuda" or a{i}.device_index:
            {miss}
        g{i} = ({v}._launch_key or _descriptor_key({v}))[1]
        c{i} = False
    else:
''' + _READ_ADAPTED + '''\
        g{i} = (a{i}.kind, a{i}.dtype, h{i}, s{i}, p{i} & 15)
        c{i} = None
'''

_LOOKUP = '''\
    sig = (L.block{sig},)
    last_sig, hit = L.last                  # one attribute: threads see a matching pair
    if sig != last_sig:
        hit = _memo.get(sig)
        if hit is None:
            return _miss(L, {args}, sig)
        L.last = (sig, hit)
    launcher, guards, smem, torch_stream{xs} = hit
    if guards and not _guards_hold(guards):
        return _miss(L, {args}, sig)
'''

_GIVEN = '''\
    sig = (L.block{sig},)
    launcher, guards, smem, torch_stream{xs} = hit
'''

_FINISH = '''\
{auto_leaves}\
    stream = L.stream
    if stream is None:
        stream = _raw_stream(0) if torch_stream else 0
    elif type(stream) is not int:
        stream = _stream_handle(stream)
    if smem < L.smem:
        smem = L.smem
'''


def kind_of(annotation, self_rule: bool):
    """How the generated call path reads a parameter: 'static', 'tensor', 'auto',
    ('scalar', lo, hi, is_float) for an annotated scalar (what ``bind_scalar`` accepts), or None
    when it cannot (the kernel then always takes the full path)."""
    if self_rule or isinstance(annotation, _StaticAnnotation):
        return "static"
    if isinstance(annotation, type) and issubclass(annotation, Scalar) and annotation.ir_type is not None:
        return ("scalar", *_range_of(annotation.ir_type), annotation.ir_type.is_float)
    if annotation is Tensor or isinstance(annotation, TensorSpec):
        return "tensor"
    if annotation is None or annotation is TensorDescriptor:   # the full path reads both alike
        return "auto"
    return None


def _tuple(items) -> str:
    return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"


def call_source(kinds, name: str = "kernel") -> str:
    """The Python source of two functions for parameters of ``kinds``:

    ``fast_call(L, v0, ..., /, *more, **kwargs)``, the ``__call__`` of a launch object ``L``:
    launches on a memo hit; else ``_miss(L, args, sig)`` (the full path; ``sig`` None when the
    arguments cannot be read inline), or ``_full(L, given, more, kwargs)`` for another arity or
    keywords; errors are re-raised without warpstage's frames, as ``_Launch.__call__`` does.

    ``fast_values(L, hit, v0, ...)``: what ``fast_call`` would launch with the memo entry
    ``hit``, as ``(sig, smem, stream, values)``, or None.

    ``fast_lookup(L, v0, ...)``: ``(sig, memo entry or None)``, or ``(None, None)`` when the
    arguments cannot be read inline (prepared launches, warpstage/prepared.py).
    """
    names = [f"v{i}" for i in range(len(kinds))]
    args = _tuple(names)
    reads, sig, xs, leaves, auto_leaves = [], [], [], [], []
    for i, kind in enumerate(kinds):
        v = f"v{i}"
        if kind == "tensor":
            reads.append(_TENSOR.format(v=v, i=i, miss="{miss}"))
            sig.append(f"d{i}, h{i}, s{i}, p{i} & 15")
            xs.append(f"x{i}")
            leaves.append(f"p{i}, *x{i}")
        elif kind == "static":
            reads.append(_STATIC.format(v=v, i=i, miss="{miss}"))
            sig.append(f"k{i}")
        elif kind == "auto":
            reads.append(_AUTO.format(v=v, i=i, miss="{miss}"))
            sig.append(f"g{i}")
            xs.append(f"x{i}")
            auto_leaves.append(f"    if c{i} is None:\n        c{i} = (p{i}, *x{i})\n"  # tensor
                               f"    elif c{i} is False:\n"                           # descriptor
                               f"        c{i} = ({v}._encoded or {v}.encode(),)\n")
            leaves.append(f"*c{i}")
        else:
            types = ("int", "float", "bool") if kind[3] else ("int", "bool")
            reads.append(_SCALAR.format(v=v, i=i, miss="{miss}",
                                        not_number=" and ".join(f"t{i} is not {t}" for t in types)))
            leaves.append(v)                    # the key part is the annotation's
    fields = dict(sig="".join(", " + x for x in sig), xs="".join(", " + x for x in xs), args=args,
                  auto_leaves="".join(auto_leaves))
    target = '    if _target() != "cuda":\n        {miss}\n'
    finish = _FINISH.format(**fields)
    body = (target + "".join(reads) + _LOOKUP.format(**fields) + finish
            + f"    launcher.launch(L.grid, L.block, smem, stream, {_tuple(leaves)})\n")
    arity = (f"    if {names[-1]} is _NA or more or kwargs:\n" if names else
             "    if more or kwargs:\n") + f"        return _full(L, {args}, more, kwargs)\n"
    call = (_HEAD.format(fn="fast_call", hit="",
                         params="".join(f", {v}=_NA" for v in names) + (", /" if names else "")
                         + ", *more, **kwargs",
                         doc=f"Launch {name}: the generated call path (frontend/fast_call.py).")
            + "    try:\n" + textwrap.indent(arity + body, "    ")
            + "    except Exception as e:\n"
            + "        if L.kernel.options.debug:\n            raise\n"
            + "        _user_error(e)\n        raise\n")       # bare: no frame of its own
    values = (_HEAD.format(fn="fast_values", hit=", hit", params="".join(", " + v for v in names),
                           doc=f"What fast_call would launch for {name} with the entry hit.")
              + target + "".join(reads) + _GIVEN.format(**fields) + finish
              + f"    return sig, smem, stream, {_tuple(leaves)}\n")
    lookup = (_HEAD.format(fn="fast_lookup", hit="", params="".join(", " + v for v in names),
                           doc=f"The call signature of {name} and its memo entry (or None).")
              + target + "".join(reads) + f"    sig = (L.block{fields['sig']},)\n"
              + "    return sig, _memo.get(sig)\n")
    return (call.replace("{miss}", f"return _miss(L, {args}, None)") + "\n\n"
            + values.replace("{miss}", "return None") + "\n\n"
            + lookup.replace("{miss}", "return None, None"))


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
    ns.update(_static_key=static_key, _Unkeyable=UnkeyableError, _F32_MAX=_F32_MAX, _INF=_INF,
              _Descriptor=TensorDescriptor, _descriptor_key=descriptor_key, _adapt=adapt_tensor)
    for i, kind in enumerate(kinds):
        if isinstance(kind, tuple):
            ns[f"_lo{i}"], ns[f"_hi{i}"] = kind[1:3]
    # a file name inside the package (beside api.py, whose frame it replaces): tracebacks and
    # warnings skip it like warpstage's own frames (tracebacks._user_error, _user_stacklevel);
    # linecache shows its lines when debugging
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    filename = os.path.join(package, f"<fast call of {name}>")
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), ns)
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
        from ..launch import get_target, stream_handle
        from ..runtime.launcher import torch_stream_reader
        from .guards import guards_hold
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

    def miss(self, launch, args, sig):
        """The full path for a call the generated code did not launch (classify, specialize,
        launch); then, when the generated code computed the call signature ``sig``, remember
        what a hit on ``sig`` launches (:meth:`fill`)."""
        from ..launch import get_target, launch_specialized
        launch.last = (None, None)      # a stale memo entry (guards changed) is looked up again
        if self._notice_torch():
            sig = None                  # read with _adapt, not inline: not the signature of a hit
        target = get_target()
        ck, leaves = self.kernel.specialize(list(args), launch.block, target)
        before = list(leaves) if sig is not None and target == "cuda" else None
        result = launch_specialized(ck, leaves, target, launch.grid, launch.block, launch.smem,
                                    launch.stream)
        if before is not None and ck._cuda is not None:
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
        warpstage/prepared.py): specialize (compile on a miss) and :meth:`fill`."""
        ck, leaves = self.kernel.specialize(list(args), launch.block, "cuda")
        if ck._cuda is None:
            ck.cuda_launcher()
        self.fill(launch, args, sig, ck, list(leaves))

    def fill(self, launch, args, sig, ck, leaves) -> None:
        """Store the memo entry for ``sig`` if the generated code reproduces, for these
        arguments, exactly the launch the full path just made from ``leaves`` (its ABI values
        before the launch: values, smem bytes, stream)."""
        from ..launch import stream_handle
        from ..runtime.launcher import current_stream
        from ..runtime.tensors import TensorArg
        tensor_type = self.torch.Tensor if self.torch is not None else _NoTensor
        tensors = [x if type(x) is TensorArg else x.tensor_arg for x in leaves
                   if type(x) is TensorArg or type(x) is TensorMapArg]
        entry = (ck._cuda[2], ck.guards, ck.dynamic_smem,
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
