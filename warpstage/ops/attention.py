"""``ws.ops.flash_attention``: scaled dot-product attention with the warp-specialized
FlashAttention kernels (``attention_kernel.py``: mma.sync, FlashAttention-2 style, any strides;
``attention_wgmma.py``: wgmma + TMA, FlashAttention-3 style, TMA-compatible tensors), called like
torch's ``scaled_dot_product_attention``.

The tensors may be torch tensors (CUDA tensors run on the GPU; CPU tensors, or any tensor when
the target is 'sim', run in the CPU simulator; the launch layer picks) or numpy arrays
(simulator; bf16 as ``ml_dtypes.bfloat16`` arrays). Only this module's host code looks at them;
the kernel sees them through warpstage's tensor arguments, strides included, so non-contiguous
views need no copy.
"""
from __future__ import annotations

import functools
import math
import operator

from ..errors import ArgumentError
from ..runtime.target import default_target
from ..runtime.tensors import as_tensor_arg
from .attention_kernel import FlashAttention, flash_attention_kernel
from .torch_dispatch import torch_op
from .attention_wgmma import FlashAttentionWgmma, flash_attention_wgmma_kernel
from .descriptors import descriptor, sm_count
from .host_fixes import cast_code, contiguous_code

__all__ = ["flash_attention", "launch", "launch_wgmma", "policy_for",
           "wgmma_policy_for", "tma_compatible", "reference"]
MMA_CHOICES = ("auto", "wgmma", "mma.sync")
WGMMA_MIN_WORK = 1 << 31
"""``mma='auto'`` picks the wgmma kernel from B * H * S_q * S_k * D >= this on. Measured on the
H200 (2026-11-29 13:20 UTC, benchmarks/flash_attention.py, bf16, non-causal, after descriptor
arguments moved to the generated launch path): at (2, 16, 1024, 1024, D) = 2^31 (D=64) the wgmma
kernel is 1.20x (D=64) and 1.12x (D=128) faster than mma.sync, at (2, 8, 8192, 8192, D) 1.36x and
1.07x. Smaller problems were not measured, so they keep the mma.sync kernel."""

_WS_DTYPES = {"f16": "Float16", "bf16": "BFloat16"}


def launch(fa: FlashAttention, q, k, v, o) -> None:
    """Run the kernel of policy ``fa`` on (B, H, S, D) tensors q, k, v into o (o has q's shape).
    Grid ``fa.grid(B, H, S_q)``, block ``fa.threads``; the launch layer passes
    ``fa.smem_bytes`` of dynamic shared memory."""
    batch, heads, seq_q, _ = q.shape
    grid = fa.grid(batch, heads, seq_q)
    if grid[1] > 65535:
        raise ArgumentError(f"flash_attention: B * H = {grid[1]} CTAs along grid y; at most 65535 "
                            "(CUDA's grid.y limit). Fix: split the batch into several calls")
    flash_attention_kernel[grid, fa.threads](fa, q, k, v, o)


def launch_wgmma(fa: FlashAttentionWgmma, q, k, v, o, tensor_args=None, lse=None) -> None:
    """Run the wgmma + TMA kernel of policy ``fa`` on (B, H, S, D) tensors q, k, v into o: takes
    the three TMA descriptors (4-D, 128-byte swizzle; ``tma_compatible`` must hold for q, k, v)
    from ``descriptor`` and launches ``fa.grid(B, H, S_q, sms)`` x ``fa.threads`` threads
    (``sms``: the GPU's multiprocessors; ``SIM_CTAS`` in the simulator). ``tensor_args``: q's,
    k's and v's TensorArgs when the caller has them. ``lse``: None, or a (B, H, S_q) float32
    tensor for the rows' log-sum-exp."""
    batch, heads, seq_q, _ = q.shape
    tq, tk, tv = tensor_args or (_describe("q", q), _describe("k", k), _describe("v", v))
    grid = fa.grid(batch, heads, seq_q, sms=sm_count(tq, SIM_CTAS))
    if grid[1] > 65535:
        raise ArgumentError(f"flash_attention: B * H = {grid[1]} CTAs along grid y; at most 65535 "
                            "(CUDA's grid.y limit). Fix: split the batch into several calls")
    q_box, kv_box = fa.descriptor_boxes()
    descs = (descriptor(q, tq, q_box), descriptor(k, tk, kv_box), descriptor(v, tv, kv_box))
    o_desc = descriptor(o, _describe("o", o), fa.o_box) if fa.tma_store else None
    flash_attention_wgmma_kernel[grid, fa.threads](fa, *descs, o, k.shape[2], lse, o_desc)


NATIVE_HEAD_DIMS = FlashAttentionWgmma.head_dims
"""Head dimensions a kernel takes as they are (64 and 128 both kernels, 192 and 256 the wgmma
kernel); another D up to 256 is zero-padded to the next of these."""

SIM_CTAS = 3
"""CTAs of a persistent launch in the simulator: few, so each walks several output tiles."""

WGMMA_DEFAULTS = {
    (128, False): dict(tile_n=128, num_stages=2),
    (128, True): dict(tile_n=128, num_stages=2, persistent=False),
    (64, False): dict(tile_n=128, num_stages=2, consumer_wgs=3),
    (64, True): dict(tile_n=128, num_stages=3, consumer_wgs=3, late_wait=False),
    (192, False): dict(tile_n=96, num_stages=2),
    (192, True): dict(tile_n=96, num_stages=2, persistent=False),
    (256, False): dict(tile_n=64, num_stages=2),
    (256, True): dict(tile_n=64, num_stages=2, persistent=False),
}
"""The wgmma kernel's tiling per (D, causal), chosen by measurement on the H200
(benchmarks/attention.py --sweep, 2026-12-01 19:51-20:52 UTC, bf16; RESULTS.md), every variant
with split K/V rings, ping-pong turns, ftz exp2, the P V wait below the softmax and the
TMA-store epilogue. D=128: 128-key tiles, persistent: 658 TFLOP/s at S=4096 (1.00x cuDNN), 540
at S=1024 (1.07x); causal one CTA per tile: 578 (1.05x), 370 (1.07x). D=64: 3 consumer
warpgroups (192-row tiles), persistent: 481 (1.02x) and 371 (0.97x); causal 411 (1.04x) and
246 (1.04x). D=192 and 256 (session 4, 22:47 UTC, sweep "wide", device time): 96- and 64-key
tiles (2 stages fill shared memory): 722 and 702 TFLOP/s at S=4096 (1.03x and 0.96x cuDNN),
685 and 717 at S=2048; causal one CTA per tile: 616 and 626 (0.99x, 0.97x); the wider 112- and
80-key tiles were 6-14% slower.

``WGMMA_SHORT`` overrides these for S_q <= ``SHORT_SEQ``: D=64 causal there takes 2 consumer
warpgroups (128-row tiles: 302 TFLOP/s against 260 for 192-row tiles at B=16 H=16 S=1024,
0.93x against 0.80x cuDNN; equal at S=2048, session 4 sweep "short")."""

SHORT_SEQ = 1536
WGMMA_SHORT = {
    (64, True): dict(consumer_wgs=2),
}


@functools.lru_cache(maxsize=64)
def wgmma_policy_for(head_dim: int, dtype_name: str, causal: bool, scale: float,
                     tile_n=None, num_stages=None, causal_align: str = "top_left",
                     kv_group: int = 1, short: bool = False,
                     overrides: tuple = ()) -> FlashAttentionWgmma:
    """The wgmma + TMA policy for a configuration (cached like ``policy_for``): the measured
    ``WGMMA_DEFAULTS`` for (head_dim, causal), with ``short`` (S_q <= ``SHORT_SEQ``)
    ``WGMMA_SHORT``'s fields over them, then ``overrides`` ((field, value) pairs: the
    autotuner's candidates), and ``tile_n`` / ``num_stages`` overriding."""
    import warpstage as ws
    fields = dict(WGMMA_DEFAULTS[(head_dim, causal)], causal_align=causal_align,
                  kv_group=kv_group)
    if short:
        fields.update(WGMMA_SHORT.get((head_dim, causal), {}))
    fields.update(overrides)
    if tile_n is not None:
        fields["tile_n"] = tile_n
    if num_stages is not None:
        fields["num_stages"] = num_stages
    return FlashAttentionWgmma(head_dim=head_dim, dtype=getattr(ws, dtype_name), causal=causal,
                               softmax_scale=scale, **fields)


@functools.lru_cache(maxsize=64)
def policy_for(head_dim: int, dtype_name: str, causal: bool, scale: float, copy: str,
               tile_m: int = 128, tile_n: int = 128, num_stages: int = 3) -> FlashAttention:
    """The FlashAttention policy for a configuration (cached: one object per configuration,
    so repeated calls reuse the compiled kernel's key cheaply)."""
    import warpstage as ws
    return FlashAttention(head_dim=head_dim, dtype=getattr(ws, dtype_name), causal=causal,
                          softmax_scale=scale, copy=copy, tile_m=tile_m, tile_n=tile_n,
                          num_stages=num_stages)


def _describe(name: str, x):
    ta = as_tensor_arg(x, name)
    if ta is None:
        raise ArgumentError(f"flash_attention: {name} is a {type(x).__name__}; expected a tensor "
                            "(torch, numpy) of shape (B, H, S, D). Fix: pass torch tensors or "
                            "numpy arrays (as to torch.nn.functional."
                            "scaled_dot_product_attention)")
    if ta.ndim != 4:
        raise ArgumentError(f"flash_attention: {name} has shape {tuple(ta.shape)}; expected 4 "
                            "dimensions (B, H, S, D). Fix: add the batch/head dimensions "
                            "(x[None, None]) or reshape")
    return ta


def _cp_async_ok(ta) -> bool:
    """16-byte cp.async copies need a 16-byte aligned base, D contiguous and every other stride
    a multiple of 8 elements (16 bytes)."""
    return (ta.data_ptr % 16 == 0 and ta.strides[3] == 1
            and all(s % 8 == 0 for s in ta.strides[:3]))


def tma_compatible(ta) -> bool:
    """Whether TMA can read the (B, H, S, D) tensor ``ta`` (cuTensorMapEncodeTiled's rules): a
    16-byte aligned base, D contiguous, every other stride a non-negative multiple of 16 bytes
    (8 elements) below 2^40 (size-1 dimensions excepted)."""
    return (ta.data_ptr % 16 == 0 and (ta.strides[3] == 1 or ta.shape[3] == 1)
            and all(n == 1 or (s >= 0 and s % 8 == 0 and 2 * s < 1 << 40)
                    for n, s in zip(ta.shape[:3], ta.strides[:3])))


def _wgmma_device(ta) -> bool:
    """Whether the launch runs on a GPU with wgmma (sm_90): CUDA tensors, the cuda target."""
    if ta.device != "cuda":
        return False
    from ..runtime.target import device_properties
    return default_target() == "cuda" and device_properties(ta.device_index or 0).cc_major == 9


def flash_attention(q, k, v, causal: bool = False, scale=None, *, causal_align="top_left",
                    return_lse: bool = False, tile_n=None, num_stages=None, mma: str = "auto",
                    tune=False):
    if tune is not False:
        return _tuned(q, k, v, causal, scale, causal_align, return_lse, tune,
                      (tile_n, num_stages, None if mma in ("auto", "wgmma") else mma))
    op = _torch_op(q, k, v, causal, scale, causal_align, return_lse, tile_n, num_stages, mma)
    if op is not None:      # torch tensors: the torch.library op, so torch.compile sees one op
        return op(q, k, v, causal, scale, causal_align, tile_n, num_stages, mma)
    return flash_attention_eager(q, k, v, causal, scale, causal_align=causal_align,
                                 return_lse=return_lse, tile_n=tile_n, num_stages=num_stages,
                                 mma=mma)


def _tuned(q, k, v, causal, scale, causal_align, return_lse, tune, given):
    """``flash_attention(..., tune=True)``: the wgmma kernel with the autotuned policy
    (warpstage/ops/tune_spaces.py)."""
    from ..jit.tracebacks import _user_error
    if tune is not True or any(x is not None for x in given):
        raise _user_error(ArgumentError(
            f"flash_attention: tune={tune!r} with tile_n / num_stages or mma='mma.sync'; "
            "expected tune=True alone (it tunes the wgmma kernel's policy) or tune=False. Fix: "
            "drop those arguments, or tune=False"))
    from .tune_spaces import tuner
    return tuner("attention")(q, k, v, causal, scale, causal_align, return_lse)


def _torch_op(q, k, v, causal, scale, causal_align, return_lse, tile_n, num_stages, mma):
    """``torch.ops.warpstage.flash_attention`` for torch tensors whose other arguments fit its
    schema (``return_lse=True`` does not: an op has one return type); else None."""
    ok = return_lse is False and type(causal) is bool and type(mma) is str and \
        type(causal_align) is str and (scale is None or type(scale) in (int, float)) and \
        all(n is None or type(n) is int for n in (tile_n, num_stages))
    return torch_op("flash_attention", (q, k, v), ok)


def flash_attention_eager(q, k, v, causal: bool = False, scale=None, *, causal_align="top_left",
                          return_lse: bool = False, tile_n=None, num_stages=None,
                          mma: str = "auto", policy=None):
    """softmax(q @ k^T * scale [+ causal mask]) @ v, like
    ``torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale)``.

    ``q``: (B, H, S_q, D); ``k``, ``v``: (B, H, S_k, D); fp16 or bf16, all one dtype and device;
    D up to 256 (64, 128, 192 and 256 natively; other sizes zero-padded to the next one, a
    copy; D > 128 runs on the wgmma kernel only, so it needs an sm_90 GPU or the simulator); any
    strides (e.g. a (B, S, H, D) tensor's ``.transpose(1, 2)``). ``causal``
    (a bool): key j is masked for query i when j > i (top-left aligned). ``scale``: None
    (1/sqrt(D)) or a finite real number. Returns a new contiguous (B, H, S_q, D) tensor of q's
    dtype, on q's device (torch in, torch out; numpy in, numpy out). Tensor cores (mma.sync or
    wgmma) with fp32 accumulation; the softmax probabilities are rounded to q's dtype for
    P @ V, as in FlashAttention-2 and -3. ``tile_n``, ``num_stages``: the policy's keys per
    shared-memory stage (a multiple of 16 in [16, 256]) and ring depth ([1, 8]); None picks the
    defaults, the measured ``WGMMA_DEFAULTS`` for wgmma, 128 and 3 for mma.sync.

    The scale is compiled into the kernel (a constant of the policy, folded into the softmax's
    FMA): each distinct ``scale`` value compiles the kernel once (a trace, 0.3-0.4 s measured
    on the CPU, plus ptxas for the GPU), kept in memory and, for the GPU, in the disk cache, so
    later calls and later processes reuse it. A scale that
    changes on every call (a temperature schedule) is better folded into q (``q * (t / s)``
    with a fixed ``scale=s``); past ``CompileOptions.max_specializations`` a RecompileWarning
    names ``softmax_scale`` as what changed.

    ``mma``: 'wgmma' runs the FlashAttention-3-style kernel (``attention_wgmma.py``: TMA loads,
    warpgroup MMA); it needs q, k, v TMA-compatible (``tma_compatible``: 16-byte aligned base, D
    contiguous, other strides multiples of 8 elements). 'mma.sync' runs the FlashAttention-2-style
    kernel (``attention_kernel.py``), which takes any strides. 'auto' (default) picks 'wgmma' for
    TMA-compatible CUDA tensors on an sm_90 GPU when B * H * S_q * S_k * D >= ``WGMMA_MIN_WORK``
    (2^31, where it was measured faster), else 'mma.sync' (the simulator included:
    the wgmma kernel runs there only when asked for).

    ``policy``: None, or a dict of ``FlashAttentionWgmma`` fields over the measured defaults
    for the wgmma kernel (the autotuner's candidates, ``tune_spaces.attention_space``).
    ``flash_attention(..., tune=True)`` chooses them per shape class with ``ws.autotune``
    (docs/autotune.md): the first call of a class compiles and times the space, the winner is
    kept on disk; ``tune=False`` (default) keeps the shipped defaults.

    Raises ArgumentError for shapes, dtypes or devices the kernel does not take and for
    arguments of the wrong type (``causal`` not a bool, ``scale`` not a finite number,
    ``tile_n`` / ``num_stages`` not None or an int), ValueError (from the policy) for a
    ``tile_n`` / ``num_stages`` out of range; the message says which and the fix."""
    tq, tk, tv = _describe("q", q), _describe("k", k), _describe("v", v)
    causal = _flag("causal", causal)
    tile_n = _count("tile_n", tile_n, "keys per shared-memory stage, a multiple of 16 in "
                    "[16, 256]", "tile_n=128 (or None for the default)")
    num_stages = _count("num_stages", num_stages, "the shared-memory ring depth, an int in "
                        "[1, 8]", "num_stages=2 (or None for the default)")
    dtype = _WS_DTYPES.get(str(tq.dtype))
    if dtype is None or tk.dtype != tq.dtype or tv.dtype != tq.dtype:
        raise ArgumentError(f"flash_attention: q, k, v have dtypes {tq.dtype}, {tk.dtype}, "
                            f"{tv.dtype}; expected one of f16 or bf16 for all three. Fix: "
                            f"{cast_code((tq, tk, tv), 'bfloat16')} (or float16) each of them")
    batch, heads, seq_q, head_dim = tq.shape
    if not 0 < head_dim <= NATIVE_HEAD_DIMS[-1]:
        raise ArgumentError(f"flash_attention: head dimension D = {head_dim}; the kernels take D "
                            f"up to {NATIVE_HEAD_DIMS[-1]} ({', '.join(map(str, NATIVE_HEAD_DIMS))}"
                            " natively, other sizes padded). Fix: split the heads' D into parts "
                            f"of at most {NATIVE_HEAD_DIMS[-1]}, or use SDPA")
    if head_dim not in NATIVE_HEAD_DIMS:
        # zero columns change neither q.k nor the real columns of P V: pad D to the next
        # kernel size, keep the scale of the real D, and cut the output back
        padded = next(d for d in NATIVE_HEAD_DIMS if d > head_dim)
        scale = 1.0 / math.sqrt(head_dim) if scale is None else scale
        out = flash_attention_eager(*(_pad_last(x, padded) for x in (q, k, v)), causal=causal,
                                    scale=scale, causal_align=causal_align,
                                    return_lse=return_lse, tile_n=tile_n,
                                    num_stages=num_stages, mma=mma, policy=policy)
        if return_lse:
            return out[0][..., :head_dim], out[1]
        return out[..., :head_dim]
    if (tk.shape != tv.shape or tk.shape[0] != batch or tk.shape[3] != head_dim
            or tk.shape[1] == 0 or heads % tk.shape[1]):
        raise ArgumentError(f"flash_attention: shapes q {tuple(tq.shape)}, k {tuple(tk.shape)}, "
                            f"v {tuple(tv.shape)}; expected q (B, H_q, S_q, D) and k, v (B, H_kv, "
                            "S_k, D) with the same B and D and H_kv dividing H_q (grouped-query "
                            "attention: query head h reads K/V head h // (H_q / H_kv)). Fix: "
                            "reshape, or repeat k and v to a divisor of H_q heads")
    if causal_align not in ("top_left", "bottom_right"):
        raise ArgumentError(f"flash_attention: causal_align={causal_align!r}; expected "
                            "'top_left' (SDPA's is_causal) or 'bottom_right' (FlashAttention's, "
                            "for decoding). Fix: causal_align='top_left'")
    return_lse = _flag("return_lse", return_lse)
    kv_group = heads // tk.shape[1]
    devices = [(t.device, t.device_index) for t in (tq, tk, tv)]
    if len(set(devices)) != 1:
        raise ArgumentError(f"flash_attention: q, k, v are on devices {devices}; expected one "
                            "device. Fix: move them to the same device")
    scale = 1.0 / math.sqrt(head_dim) if scale is None else _scale(scale)
    o = _empty_like(q, (batch, heads, seq_q, head_dim))
    lse = _empty_like(q, (batch, heads, seq_q), float32=True) if return_lse else None
    if batch * heads * seq_q == 0:
        return (o, lse) if return_lse else o
    if tk.shape[2] == 0:
        raise ArgumentError("flash_attention: k and v have no keys (S_k = 0); the softmax of "
                            "an empty row is undefined. Fix: pass at least one key")
    if mma not in MMA_CHOICES:
        raise ArgumentError(f"flash_attention: mma={mma!r}; expected one of {MMA_CHOICES}. "
                            "Fix: mma='auto'")
    tma_ok = all(tma_compatible(t) for t in (tq, tk, tv))
    align = causal_align if causal and tk.shape[2] != seq_q else "top_left"
    needs_wgmma = (return_lse or kv_group > 1 or align != "top_left"
                   or head_dim not in FlashAttention.head_dims)
    if needs_wgmma and mma == "mma.sync":
        raise ArgumentError("flash_attention(mma='mma.sync'): the mma.sync kernel has no "
                            "return_lse, grouped K/V heads, bottom-right causal alignment or "
                            f"head dimensions above {FlashAttention.head_dims[-1]} (D = "
                            f"{head_dim}). Fix: mma='auto'")
    if needs_wgmma and mma == "auto" and not tma_ok and (_wgmma_device(tq) or tq.device != "cuda"):
        # only the wgmma kernel has these features: give it TMA-readable copies
        q, k, v = (_copy(x) for x in (q, k, v))
        tq, tk, tv = _describe("q", q), _describe("k", k), _describe("v", v)
        tma_ok = all(tma_compatible(t) for t in (tq, tk, tv))
    if needs_wgmma and not (tma_ok and (_wgmma_device(tq) or tq.device != "cuda")):
        raise ArgumentError("flash_attention: return_lse, grouped K/V heads, bottom-right "
                            f"causal alignment and D > {FlashAttention.head_dims[-1]} need the "
                            "wgmma kernel (an sm_90 GPU, or the simulator) and TMA-compatible "
                            "tensors. Fix: run on an H100/H200, or repeat k and v to H_q heads "
                            "and leave the other options out")
    if mma == "wgmma" and not tma_ok:
        raise ArgumentError("flash_attention(mma='wgmma'): TMA cannot read these tensors (it "
                            "needs a 16-byte aligned base, D contiguous and the other strides "
                            f"multiples of 8 elements; strides q {tq.strides}, k {tk.strides}, "
                            f"v {tv.strides}). Fix: mma='auto' (falls back to mma.sync) or "
                            f"{contiguous_code((tq, tk, tv))} each input")
    work = batch * heads * seq_q * tk.shape[2] * head_dim
    if mma == "wgmma" or needs_wgmma or (mma == "auto" and tma_ok and work >= WGMMA_MIN_WORK
                                         and _wgmma_device(tq)):
        fa = wgmma_policy_for(head_dim, dtype, causal, scale, tile_n=tile_n,
                              num_stages=num_stages, causal_align=align, kv_group=kv_group,
                              short=seq_q <= SHORT_SEQ,
                              overrides=tuple(sorted((policy or {}).items())))
        launch_wgmma(fa, q, k, v, o, (tq, tk, tv), lse)
        return (o, lse) if return_lse else o
    copy = "cp.async" if _cp_async_ok(tk) and _cp_async_ok(tv) else "ld/st"
    fa = policy_for(head_dim, dtype, causal, scale, copy,
                    tile_n=128 if tile_n is None else tile_n,
                    num_stages=3 if num_stages is None else num_stages)
    launch(fa, q, k, v, o)
    return o


def _flag(name: str, x) -> bool:
    """``x`` as a bool: a Python or numpy bool, else ArgumentError (torch's
    scaled_dot_product_attention raises TypeError for a non-bool ``is_causal`` too)."""
    import numpy as np
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    raise ArgumentError(f"flash_attention: {name}={x!r} ({type(x).__name__}); expected a bool. "
                        f"Fix: {name}=True or {name}=False")


def _count(name: str, x, expected: str, fix: str):
    """None (the kernel's default) or ``x`` as an int (Python or numpy integer; not bool):
    ArgumentError for another type. The range is the policy's to check (ValueError)."""
    if x is None:
        return None
    if not isinstance(x, bool):
        try:
            return operator.index(x)
        except TypeError:
            pass
    raise ArgumentError(f"flash_attention: {name}={x!r} ({type(x).__name__}); expected None "
                        f"or an int: {expected}. Fix: {fix}")


def _scale(x) -> float:
    """``x`` as a finite float (a Python or numpy real number, or a 0-d tensor), else
    ArgumentError."""
    if not isinstance(x, (bool, str, bytes)):
        try:
            f = float(x)
        except (TypeError, ValueError):
            f = None
        if f is not None and math.isfinite(f):
            return f
    raise ArgumentError(f"flash_attention: scale={x!r} ({type(x).__name__}); expected None "
                        "(1/sqrt(D)) or a finite real number. Fix: scale=1 / math.sqrt(D), or "
                        "leave it out")


def _empty_like(x, shape, float32: bool = False):
    """A new contiguous tensor of ``shape`` with x's dtype (or float32) and device (torch), or a
    numpy array."""
    if type(x).__module__.startswith("torch"):
        import torch
        return torch.empty(shape, dtype=torch.float32 if float32 else x.dtype, device=x.device)
    import numpy as np
    return np.empty(shape, dtype=np.float32 if float32 else x.dtype)


def _pad_last(x, n: int):
    """``x`` with its last dimension zero-padded to ``n`` (a new contiguous tensor)."""
    if type(x).__module__.startswith("torch"):
        import torch
        return torch.nn.functional.pad(x, (0, n - x.shape[-1]))
    import numpy as np
    return np.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, n - x.shape[-1])])


def _copy(x):
    """A new contiguous copy of ``x`` (torch or numpy) in a fresh allocation (16-byte aligned,
    which a contiguous view of misaligned memory is not)."""
    if type(x).__module__.startswith("torch"):
        import torch
        return x.clone(memory_format=torch.contiguous_format)
    import numpy as np
    return np.array(x, order="C", copy=True)


def reference(q, k, v, causal: bool = False, scale=None, causal_align: str = "top_left",
              return_lse: bool = False):
    """Attention in float64 numpy (for tests and the demo): q (B, H_q, S_q, D), k and v
    (B, H_kv, S_k, D), H_kv dividing H_q, as numpy arrays (any float dtype,
    ``ml_dtypes.bfloat16`` included); returns (B, H_q, S_q, D) float64, and with
    ``return_lse`` also the (B, H_q, S_q) log-sum-exp of the scaled scores. A row with no key
    (bottom-right causal, S_q > S_k) gives 0 and an LSE of -inf."""
    import numpy as np
    q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    group = q.shape[1] // k.shape[1]
    k, v = (np.repeat(x, group, axis=1) for x in (k, v))
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = np.einsum("bhid,bhjd->bhij", q, k) * scale
    if causal:
        offset = k.shape[2] - q.shape[2] if causal_align == "bottom_right" else 0
        i = np.arange(q.shape[2])[:, None]
        j = np.arange(k.shape[2])[None, :]
        s = np.where(j > i + offset, -np.inf, s)
    m = s.max(axis=-1, keepdims=True)
    m_safe = np.where(np.isfinite(m), m, 0.0)
    p = np.exp(s - m_safe)
    total = p.sum(axis=-1, keepdims=True)
    out = np.einsum("bhij,bhjd->bhid", p / np.where(total > 0, total, 1.0), v)
    if not return_lse:
        return out
    with np.errstate(divide="ignore"):
        lse = (m_safe + np.log(total))[..., 0]
    return out, lse


flash_attention.__doc__ = flash_attention_eager.__doc__ + """

    With torch tensors (and ``return_lse=False``) the call goes through the PyTorch custom op
    ``torch.ops.warpstage.flash_attention`` (warpstage/torch.py: a fake implementation for
    torch.compile, no autograd formula since there is no backward kernel), so a model calling it
    compiles with ``torch.compile(fullgraph=True)`` without a graph break;
    ``flash_attention_eager`` is the same function without the op."""
