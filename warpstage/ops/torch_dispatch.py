"""Whether an ``ws.ops`` call goes through its ``torch.library`` op (ops/torch_ops.py): only
for torch tensors, so this module never imports torch (it reads ``sys.modules``); the op module
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
    from .torch_ops import OPS
    return OPS[name]
