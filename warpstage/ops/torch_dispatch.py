"""Whether an ``ws.ops`` call goes through its ``torch.library`` op (ops/torch_ops.py): only
while torch.compile traces it (eager calls run the eager function directly), only for torch
tensors, so this module never imports torch (it reads ``sys.modules``); the op module
(which registers the ops) is imported on the first call that torch.compile traces, so an
eager program never pays for the registration."""
from __future__ import annotations

import sys

__all__ = ["torch_op"]


_OPS: dict = {}


def torch_op(name: str, tensors, ok: bool):
    """The registered op ``torch.ops.warpstage.<name>`` when torch is loaded, every one of
    ``tensors`` is a ``torch.Tensor``, the caller's other arguments fit the op's schema
    (``ok``) and torch.compile is tracing; else None (the caller runs its eager function, which
    also explains bad arguments). Called on every op call: about a microsecond."""
    torch = sys.modules.get("torch")
    if not ok or torch is None:
        return None
    T = torch.Tensor
    for t in tensors:
        if not isinstance(t, T):
            return None
    if not torch.compiler.is_compiling():
        # eager: the op would only add torch's dispatch to every call, and its first dispatch
        # costs ~4 s in a fresh process (measured on the CPU: 3.95 s against 0.14 s for the
        # eager function); under torch.compile the call must be the op, so the graph holds
        # it. Nor are the ops registered for an eager call: registering them costs 8-14 ms
        # of a fresh process's first call (H200 host, session 8), a disk-cache hit's largest
        # part
        return None
    if not _OPS:
        # the first call that torch.compile traces: registers the ops (torch.ops.warpstage.*
        # exist from here on; importing warpstage.ops.torch_ops registers them too)
        from .torch_ops import OPS
        _OPS.update(OPS)
    return _OPS[name]
