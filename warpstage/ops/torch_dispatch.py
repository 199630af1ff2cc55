"""Whether an ``ws.ops`` call goes through its ``torch.library`` op (ops/torch_ops.py): only
while torch.compile traces it (eager calls run the eager function directly), only for torch
tensors, so this module never imports torch (it reads ``sys.modules``); the op module
is imported on the first such call."""
from __future__ import annotations

import sys

__all__ = ["torch_op"]


def torch_op(name: str, tensors, ok: bool):
    """The registered op ``torch.ops.warpstage.<name>`` when torch is loaded, every one of
    ``tensors`` is a ``torch.Tensor`` and the caller's other arguments fit the op's schema
    (``ok``); else None (the caller runs its eager function, which also explains bad
    arguments)."""
    torch = sys.modules.get("torch")
    if not ok or torch is None or not all(isinstance(t, torch.Tensor) for t in tensors):
        return None
    from .torch_ops import OPS          # registers the ops (~10 ms), so torch.ops.warpstage.* exist
    if not torch.compiler.is_compiling():
        # eager: the op would only add torch's dispatch to every call, and its first dispatch
        # costs ~4 s in a fresh process (measured on the CPU: 3.95 s against 0.14 s for the
        # eager function); under torch.compile the call must be the op, so the graph holds
        return None
    return OPS[name]
