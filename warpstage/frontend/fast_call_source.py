"""The source of the generated call path (jit/fast_call.py): the templates for reading
each kind of parameter, the device agreement, the call signature, the memo lookup and the
launch, and :func:`call_source`, which writes the three functions for a kernel's parameters.
What the generated code does and why a hit is sound: fast_call.py's docstring."""
from __future__ import annotations

import textwrap

from ..lang.scalars import Scalar
from ..lang.tensor import Tensor, TensorSpec
from ..runtime.tensormap import TensorDescriptor
from .binders import _range_of
from ..core.static import _StaticAnnotation

__all__ = ["kind_of", "call_source", "device_source"]

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
        if a{i} is None or a{i}.device != "cuda":
            {miss}
        e{i} = a{i}.device_index or 0
        p{i} = a{i}.data_ptr
        h{i} = a{i}.shape
        s{i} = a{i}.strides
'''

_TENSOR = ('''\
    if type({v}) is _Tensor:
        if not {v}.is_cuda:
            {miss}
        e{i} = {v}.get_device()
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
        e{i} = None
    elif t{i} is float:
        if not -_F32_MAX <= {v} <= _F32_MAX and {v} == {v} and {v} not in (_INF, -_INF):
            {miss}
        g{i} = 2
        c{i} = ({v},)
        e{i} = None
    elif t{i} is bool:
        g{i} = 3
        c{i} = ({v},)
        e{i} = None
    elif {v} is None:
        g{i} = 4
        c{i} = ()
        e{i} = None
    elif t{i} is _Tensor and {v}.is_cuda:
        e{i} = {v}.get_device()
''' + _READ_TORCH + '''\
        g{i} = ({v}.dtype, h{i}, s{i}, p{i} & 15)
        c{i} = None
    elif t{i} is _Descriptor:
        a{i} = {v}.tensor_arg
        if a{i}.kind != "torch" or a{i}.device != "cuda":
            {miss}
        e{i} = a{i}.device_index
        g{i} = ({v}._launch_key or _descriptor_key({v}))[1]
        c{i} = False
    else:
''' + _READ_ADAPTED + '''\
        g{i} = (a{i}.kind, a{i}.dtype, h{i}, s{i}, p{i} & 15)
        c{i} = None
'''

_LOOKUP = '''\
    sig = (L.block, dev{sig},)
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
    sig = (L.block, dev{sig},)
    launcher, guards, smem, torch_stream{xs} = hit
'''

_FINISH = '''\
{auto_leaves}\
    stream = L.stream
    if stream is None:
        stream = _raw_stream(dev) if torch_stream else 0
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


def device_source(kinds) -> str:
    """The generated lines that set ``dev``, the GPU the launch runs on: the device of its
    tensors (``e{i}`` per tensor or descriptor, None for an auto parameter given no tensor), 0
    without tensors; tensors on two devices miss (the full path names both)."""
    tensors = [i for i, k in enumerate(kinds) if k == "tensor"]
    autos = [i for i, k in enumerate(kinds) if k == "auto"]
    if not tensors and not autos:
        return "    dev = 0\n"
    if tensors:
        lines = [f"    dev = e{tensors[0]}\n"]
        others = [f"e{i} != dev" for i in tensors[1:]]
        others += [f"(e{i} is not None and e{i} != dev)" for i in autos]
        if others:
            lines.append(f"    if {' or '.join(others)}:\n        {{miss}}\n")
        return "".join(lines)
    lines = ["    dev = None\n"]
    for i in autos:
        lines.append(f"    if e{i} is not None:\n        if dev is None:\n            dev = e{i}\n"
                     f"        elif e{i} != dev:\n            {{miss}}\n")
    return "".join(lines) + "    if dev is None:\n        dev = 0\n"


def call_source(kinds, name: str = "kernel") -> str:
    """The Python source of two functions for parameters of ``kinds``:

    ``fast_call(L, v0, ..., /, *more, **kwargs)``, the ``__call__`` of a launch object ``L``:
    launches on a memo hit; else ``_miss(L, args, sig)`` (the full path; ``sig`` None when the
    arguments cannot be read inline), or ``_full(L, given, more, kwargs)`` for another arity or
    keywords; errors are re-raised without warpstage's frames, as ``_Launch.__call__`` does.

    ``fast_values(L, hit, v0, ...)``: what ``fast_call`` would launch with the memo entry
    ``hit``, as ``(sig, smem, stream, values)``, or None.

    ``fast_lookup(L, v0, ...)``: ``(sig, memo entry or None)``, or ``(None, None)`` when the
    arguments cannot be read inline (prepared launches, warpstage/jit/prepared.py).
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
    reads.append(device_source(kinds))
    body = (target + "".join(reads) + _LOOKUP.format(**fields) + finish
            + f"    launcher.launch(L.grid, L.block, smem, stream, {_tuple(leaves)})\n")
    arity = (f"    if {names[-1]} is _NA or more or kwargs:\n" if names else
             "    if more or kwargs:\n") + f"        return _full(L, {args}, more, kwargs)\n"
    call = (_HEAD.format(fn="fast_call", hit="",
                         params="".join(f", {v}=_NA" for v in names) + (", /" if names else "")
                         + ", *more, **kwargs",
                         doc=f"Launch {name}: the generated call path (jit/fast_call.py).")
            + "    try:\n" + textwrap.indent(arity + body, "    ")
            + "    except Exception as e:\n"
            + "        if L.kernel.options.compiler_frames:\n            raise\n"
            + "        _user_error(e)\n        raise\n")       # bare: no frame of its own
    values = (_HEAD.format(fn="fast_values", hit=", hit", params="".join(", " + v for v in names),
                           doc=f"What fast_call would launch for {name} with the entry hit.")
              + target + "".join(reads) + _GIVEN.format(**fields) + finish
              + f"    return sig, smem, stream, {_tuple(leaves)}\n")
    lookup = (_HEAD.format(fn="fast_lookup", hit="", params="".join(", " + v for v in names),
                           doc=f"The call signature of {name} and its memo entry (or None).")
              + target + "".join(reads) + f"    sig = (L.block, dev{fields['sig']},)\n"
              + "    return sig, _memo.get(sig)\n")
    return (call.replace("{miss}", f"return _miss(L, {args}, None)") + "\n\n"
            + values.replace("{miss}", "return None") + "\n\n"
            + lookup.replace("{miss}", "return None, None"))
