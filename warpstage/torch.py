"""PyTorch integration: warpstage kernels as ``torch.library`` custom ops (``ws.torch``).

Importing this module imports torch; ``import warpstage`` does not (``ws.torch`` is loaded on
first access, and ``ws.ops.flash_attention`` loads it only when given torch tensors).

- :func:`custom_op` registers a kernel author's launch function as a custom op in one call, so
  ``torch.compile(fullgraph=True)`` treats it as one opaque op (the fake implementation gives
  the output's shape, dtype and device while tracing) instead of breaking the graph at the
  warpstage launch.
- ``flash_attention_op`` is ``torch.ops.warpstage.flash_attention``: ``ws.ops.flash_attention``
  for torch tensors (``return_lse=True`` calls the eager function: an op has one return type).
  No autograd formula is registered: there is no backward kernel, so
  ``loss.backward()`` through it raises torch's "does not require grad / no autograd kernel"
  error instead of silently giving zero gradients.
- ``matmul_op`` is ``torch.ops.warpstage.matmul``: ``ws.ops.matmul`` for torch tensors without
  ``out=`` or ``epilogue=`` (an epilogue is a static Python object, which a schema cannot carry:
  such calls run eagerly, a graph break under torch.compile; wrap them with :func:`custom_op`).
  No autograd formula either.

Launches inside a custom op go to torch's current stream (the generated call path reads it), so
they are ordered with the surrounding torch work and captured by ``torch.cuda.graph``.
"""
from __future__ import annotations

from typing import Callable, Iterable, Optional, Union

import torch

__all__ = ["custom_op", "flash_attention_op", "matmul_op", "OPS"]


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


def _flash_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False,
                     scale: Optional[float] = None, causal_align: str = "top_left",
                     tile_n: Optional[int] = None, num_stages: Optional[int] = None,
                     mma: str = "auto") -> torch.Tensor:
    from .ops.attention import flash_attention_eager
    return flash_attention_eager(q, k, v, causal, scale, causal_align=causal_align,
                                 tile_n=tile_n, num_stages=num_stages, mma=mma)


def _flash_attention_fake(q, k, v, causal=False, scale=None, causal_align="top_left",
                          tile_n=None, num_stages=None, mma="auto"):
    batch, heads, seq_q, head_dim = q.shape
    return torch.empty((batch, heads, seq_q, head_dim), dtype=q.dtype, device=q.device)


flash_attention_op = custom_op("warpstage::flash_attention", _flash_attention, mutates_args=(),
                               fake=_flash_attention_fake)


def _matmul(a: torch.Tensor, b: torch.Tensor, out_dtype: Optional[torch.dtype] = None,
            tile_n: Optional[int] = None, num_stages: Optional[int] = None, raster: str = "M",
            group: Optional[int] = None, schedule: str = "cooperative",
            splits: Optional[int] = None) -> torch.Tensor:
    from .ops.matmul_host import matmul_eager
    return matmul_eager(a, b, out_dtype=out_dtype, tile_n=tile_n, num_stages=num_stages,
                        raster=raster, group=group, schedule=schedule, splits=splits)


def _matmul_fake(a, b, out_dtype=None, tile_n=None, num_stages=None, raster="M", group=None,
                 schedule="cooperative", splits=None):
    m, n = a.shape[-2], b.shape[-1]
    batch = a.shape[:-2] or b.shape[:-2]                # a 2-D operand broadcasts over the batch
    return torch.empty((*batch, m, n), dtype=out_dtype or a.dtype, device=a.device)


matmul_op = custom_op("warpstage::matmul", _matmul, mutates_args=(), fake=_matmul_fake)

OPS = {"flash_attention": flash_attention_op, "matmul": matmul_op}
