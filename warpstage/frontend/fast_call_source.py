"""The source of the generated call path (jit/fast_call.py): the device agreement, the call
signature, the memo lookup and the launch, and :func:`call_source`, which writes the three
functions for a kernel's parameters from each parameter kind's snippet (``fast_parts``:
frontend/kinds/, the kind's ``FAST`` / ``AUTO`` templates).
What the generated code does and why a hit is sound: fast_call.py's docstring."""
from __future__ import annotations

import textwrap

from .kinds.table import fast_parts, kind_of

__all__ = ["kind_of", "call_source", "device_source"]

_HEAD = '''\
def {fn}(L{hit}{params}):
    """{doc}"""
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
        parts = fast_parts(i, f"v{i}", kind)      # the kind's snippet (frontend/kinds/)
        reads.append(parts["read"])
        for out, field in ((sig, "sig"), (xs, "xs"), (leaves, "leaves"),
                           (auto_leaves, "auto_leaves")):
            if field in parts:
                out.append(parts[field])
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
