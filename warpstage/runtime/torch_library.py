"""PyTorch integration: warpstage kernels as ``torch.library`` custom ops (``ws.torch``).

This module is ``ws.torch`` (``warpstage/__init__.py`` loads it on first access, so
``import warpstage`` does not import torch; ``ws.ops.flash_attention`` loads it only when given
torch tensors). It lives in ``runtime/``, the room of the tensor adapters (DESIGN §3), and
imports nothing of the package but torch.

- :func:`custom_op` registers a kernel author's launch function as a custom op in one call, so
  ``torch.compile(fullgraph=True)`` treats it as one opaque op (the fake implementation gives
  the output's shape, dtype and device while tracing) instead of breaking the graph at the
  warpstage launch.
- ``ws.ops``' own ops (registered in ``warpstage/ops/torch_ops.py`` with :func:`custom_op`):
  ``torch.ops.warpstage.flash_attention`` is ``ws.ops.flash_attention``
  for torch tensors (``return_lse=True`` calls the eager function: an op has one return type).
  No autograd formula is registered: there is no backward kernel, so
  ``loss.backward()`` through it raises torch's "does not require grad / no autograd kernel"
  error instead of silently giving zero gradients.
- ``torch.ops.warpstage.matmul`` is ``ws.ops.matmul`` for torch tensors without
  ``out=`` or ``epilogue=`` (an epilogue is a static Python object, which a schema cannot carry:
  such calls run eagerly, a graph break under torch.compile; wrap them with :func:`custom_op`).
  No autograd formula either.

Launches inside a custom op go to torch's current stream (the generated call path reads it), so
they are ordered with the surrounding torch work and captured by ``torch.cuda.graph``.
"""
from __future__ import annotations

from typing import Callable, Iterable, Optional, Union

import torch

__all__ = ["custom_op"]


def custom_op(name: str, launch_fn: Callable, *, mutates_args: Union[str, Iterable[str]],
              fake: Optional[Callable] = None, schema: Optional[str] = None,
              device_types=None):
    """Register ``launch_fn`` (host code that launches warpstage kernels on torch tensors) as the
    custom op ``name`` ('namespace::op_name') with ``torch.library.custom_op``, and ``fake`` as its
    fake (meta) implementation; returns the op (call it like ``launch_fn``; it is also
    ``torch.ops.namespace.op_name``).

    ``mutates_args``: the names of the tensor arguments the kernels write ('unknown' when not
    known; () when none: the op then must return new tensors). ``fake(*args)`` must return
    tensors of the outputs' shapes, dtypes and devices without running a kernel (e.g.
    ``torch.empty_like``); it is required for torch.compile when the op returns tensors, and may
    be None for an op that only mutates its arguments and returns None. The schema is inferred
    from ``launch_fn``'s type annotations (``torch.Tensor``, ``int``, ``float``, ``bool``,
    ``Optional[...]``, ...) unless ``schema`` gives it. Raises what ``torch.library.custom_op``
    raises (a missing annotation, a bad name). Example::

        def add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
            out = torch.empty_like(a)
            vector_add[(a.numel() + 255) // 256, 256](a, b, out, a.numel())
            return out
        add_op = ws.torch.custom_op("mylib::add", add, mutates_args=(),
                                    fake=lambda a, b: torch.empty_like(a))
    """
    op = torch.library.custom_op(name, launch_fn, mutates_args=mutates_args,
                                 device_types=device_types, schema=schema)
    if fake is not None:
        op.register_fake(fake)
    return op
