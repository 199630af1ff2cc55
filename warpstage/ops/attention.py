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

import math
import sys

from ..errors import ArgumentError
from ..runtime.tensors import as_tensor_arg
from . import op_plans
from .attention_kernel import FlashAttention, flash_attention_kernel
from .host_fixes import check_no_grad, check_tune
from .torch_dispatch import torch_op
from .attention_wgmma import FlashAttentionWgmma, flash_attention_wgmma_kernel
from .descriptors import descriptor, sm_count
from .attention_host import (check_grid, describe, empty_like, fresh_copy, pad_last,
                             tma_compatible)
from .attention_plan import (MMA_CHOICES, NATIVE_HEAD_DIMS, SHORT_SEQ, SIM_CTAS,  # noqa: F401
                             WGMMA_DEFAULTS, WGMMA_MIN_WORK, WGMMA_SHORT, AttentionPlan,
                             explain, plan_call, policy_for, wgmma_policy_for)

__all__ = ["flash_attention", "launch", "launch_wgmma", "policy_for", "plan_call",
           "AttentionPlan", "explain", "wgmma_policy_for", "tma_compatible", "reference"]


def launch(fa: FlashAttention, q, k, v, o) -> None:
    """Run the kernel of policy ``fa`` on (B, H, S, D) tensors q, k, v into o (o has q's shape).
    Grid ``fa.grid(B, H, S_q)``, block ``fa.threads``; the launch layer passes
    ``fa.smem_bytes`` of dynamic shared memory."""
    batch, heads, seq_q, _ = q.shape
    grid = fa.grid(batch, heads, seq_q)
    check_grid(grid)
    op_plans.launch(flash_attention_kernel, grid, fa.threads, (fa, q, k, v, o))


def launch_wgmma(fa: FlashAttentionWgmma, q, k, v, o, tensor_args=None, lse=None,
                 tiles=None) -> None:
    """Run the wgmma + TMA kernel of policy ``fa`` on (B, H, S, D) tensors q, k, v into o: takes
    the three TMA descriptors (4-D, ``fa.swizzle``-byte swizzle: 128, or 64 at D = 96;
    ``tma_compatible`` must hold for q, k, v) from ``descriptor`` and launches ``fa.grid(B, H, S_q,
    sms)`` x ``fa.threads`` threads
    (``sms``: the GPU's multiprocessors; ``SIM_CTAS`` in the simulator). ``tensor_args``: q's,
    k's and v's TensorArgs when the caller has them. ``lse``: None, or a (B, H, S_q) float32
    tensor for the rows' log-sum-exp. With ``fa.dynamic_tiles`` the launch also takes two
    int32 tile counters, zero, on q's device: ``tiles``, or a new pair (``tile_counters``);
    the kernel leaves them zero. ArgumentError (``check_launch``) for tensors that do not fit
    ``fa`` or each other."""
    batch, heads, seq_q, _ = q.shape
    tq, tk, tv = tensor_args or (describe("q", q), describe("k", k), describe("v", v))
    to = check_launch(fa, tq, tk, tv, o, lse, tiles)
    grid = fa.grid(batch, heads, seq_q, sms=sm_count(tq, SIM_CTAS))
    check_grid(grid)
    q_box, kv_box = fa.descriptor_boxes()
    sw = fa.swizzle
    descs = (descriptor(q, tq, q_box, sw), descriptor(k, tk, kv_box, sw),
             descriptor(v, tv, kv_box, sw))
    o_desc = descriptor(o, to, fa.o_box, fa.out.swizzle) if fa.tma_store else None
    if not fa.dynamic_tiles:
        tiles = None
    elif tiles is None:
        tiles = tile_counters(q)
    op_plans.launch(flash_attention_wgmma_kernel, grid, fa.threads,
                    (fa, *descs, o, k.shape[2], lse, o_desc, tiles))


def check_launch(fa: FlashAttentionWgmma, tq, tk, tv, o, lse, tiles):
    """o's TensorArg, after checking (ArgumentError unless q, k, v (their TensorArgs), o, lse and tiles fit policy ``fa`` and
    each other: D = ``fa.head_dim``, H_q = H_kv x ``fa.kv_group``, k and v of one shape with
    q's batch and D, o q's shape and dtype, lse None or a (B, H, S_q) float32 tensor, tiles
    None or two int32 counters). What the kernel cannot check itself: it indexes o and lse by
    q's rows, so a smaller one would be written past its end."""
    def fail(what, expected, got, fix):
        raise ArgumentError(f"launch_wgmma: {what}: expected {expected}, got {got}. Fix: {fix}")
    qs, ks = tuple(tq.shape), tuple(tk.shape)
    if ks != tuple(tv.shape) or ks[0] != qs[0] or ks[3] != qs[3]:
        fail("k and v", f"one shape (B={qs[0]}, H_kv, S_k, D={qs[3]})",
             f"k {ks} and v {tuple(tv.shape)}", "pass k and v of q's batch and head dim")
    if qs[3] != fa.head_dim:
        fail("the head dim", f"the policy's head_dim={fa.head_dim}", f"q's D = {qs[3]}",
             f"FlashAttentionWgmma(head_dim={qs[3]}, ...)")
    if qs[1] != ks[1] * fa.kv_group:
        fail("the heads", f"H_q = H_kv x kv_group = {ks[1]} x {fa.kv_group}",
             f"H_q = {qs[1]}", f"FlashAttentionWgmma(kv_group=H_q // H_kv, ...) with H_kv "
             "dividing H_q")
    to = describe("o", o)
    if tuple(to.shape) != qs or to.dtype != tq.dtype:
        fail("o", f"q's shape {qs} and dtype {tq.dtype.name}",
             f"{tuple(to.shape)} {to.dtype.name}", "o = an empty tensor like q")
    if lse is not None:
        tl = as_tensor_arg(lse, "lse")
        if tl is None or tuple(tl.shape) != qs[:3] or tl.dtype.name != "f32":
            got = "a " + type(lse).__name__ if tl is None else f"{tuple(tl.shape)} {tl.dtype.name}"
            fail("lse", f"None or a {qs[:3]} float32 tensor", got,
                 "lse = torch.empty(B, H, S_q, dtype=torch.float32, device=q.device)")
    if tiles is not None and fa.dynamic_tiles:
        tt = as_tensor_arg(tiles, "tiles")
        if tt is None or tuple(tt.shape) != (2,) or tt.dtype.name != "i32":
            got = ("a " + type(tiles).__name__ if tt is None
                   else f"{tuple(tt.shape)} {tt.dtype.name}")
            fail("tiles", "two int32 counters, zero", got, "leave tiles out (a zero pair is "
                 "made), or pass torch.zeros(2, dtype=torch.int32, device=q.device)")
        if tt.kind == "numpy" and tiles.any():     # host memory: readable for free
            fail("tiles", "two int32 counters, zero", f"{tiles.tolist()}", "tiles[:] = 0, or "
                 "leave tiles out")
    return to


def tile_counters(like):
    """The two int32 tile counters of a ``dynamic_tiles`` launch on ``like``'s device, zero:
    on a GPU the current stream's pair (``op_plans.stream_zeros``: made once per stream and
    left zero by every launch, whose last CTA resets both), so launches queued on one stream
    take turns with it, two streams never share one, and no zeroing kernel runs per call;
    numpy arrays and CPU tensors (the simulator) get fresh zeros."""
    torch = sys.modules.get("torch")           # a torch tensor means torch is imported
    if torch is not None and isinstance(like, torch.Tensor):
        return op_plans.stream_zeros((2,), torch.int32, like.device)
    import numpy as np
    return np.zeros(2, dtype=np.int32)


def flash_attention(q, k, v, causal: bool = False, scale=None, *, causal_align="top_left",
                    return_lse: bool = False, tile_n=None, num_stages=None, mma: str = "auto",
                    tune=False):
    check_no_grad("flash_attention", "q k v", q, k, v)
    if tune is not False:
        return _tuned(q, k, v, causal, scale, causal_align, return_lse, tune,
                      dict(tile_n=tile_n, num_stages=num_stages,
                           mma=None if mma in ("auto", "wgmma") else mma))
    op = _torch_op(q, k, v, causal, scale, causal_align, return_lse, tile_n, num_stages, mma)
    if op is not None:      # torch tensors: the torch.library op, so torch.compile sees one op
        return op(q, k, v, causal, scale, causal_align, tile_n, num_stages, mma)
    return flash_attention_eager(q, k, v, causal, scale, causal_align=causal_align,
                                 return_lse=return_lse, tile_n=tile_n, num_stages=num_stages,
                                 mma=mma)


def _tuned(q, k, v, causal, scale, causal_align, return_lse, tune, given):
    """``flash_attention(..., tune=True)``: the wgmma kernel with the autotuned policy
    (warpstage/ops/tune_spaces.py)."""
    check_tune("flash_attention", tune, given)
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

    ``q``: (B, H, S_q, D); ``k``, ``v``: (B, H_kv, S_k, D) with H_kv dividing H (grouped heads,
    GQA / MQA, read without copies); fp16 or bf16, all one dtype and device;
    D up to 256 (64, 96, 128, 192 and 256 natively; other sizes zero-padded to the next one, a
    copy; D > 128 runs on the wgmma kernel only, so it needs an sm_90 GPU or the simulator); any
    strides (e.g. a (B, S, H, D) tensor's ``.transpose(1, 2)``). ``causal``
    (a bool): key j is masked for query i when j > i + offset; ``causal_align`` 'top_left'
    (default, offset 0: SDPA's ``is_causal``) or 'bottom_right' (offset S_k - S_q:
    FlashAttention's, for decoding; a query row with no key gives 0). ``scale``: None
    (1/sqrt(D)) or a finite real number. Returns a new contiguous (B, H, S_q, D) tensor of q's
    dtype, on q's device (torch in, torch out; numpy in, numpy out); with ``return_lse=True``
    the pair (out, lse), lse the float32 (B, H, S_q) log-sum-exp of the scaled scores (natural
    log; -inf for a row with no key). Tensor cores (mma.sync or
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

    ``policy`` (``flash_attention_eager`` only; ``flash_attention`` has no such argument):
    None, or a dict of ``FlashAttentionWgmma`` fields over the measured defaults for the wgmma
    kernel (the autotuner's candidates, ``tune_spaces.attention_space``).
    ``flash_attention(..., tune=True)`` chooses them per shape class with ``ws.autotune``
    (docs/autotune.md): the first call of a class compiles and times the space, the winner is
    kept on disk; ``tune=False`` (default) keeps the shipped defaults.

    Raises ArgumentError for shapes, dtypes or devices the kernel does not take and for
    arguments of the wrong type (``causal`` not a bool, ``scale`` not a finite number,
    ``tile_n`` / ``num_stages`` not None or an int), ValueError (from the policy) for a
    ``tile_n`` / ``num_stages`` out of range; the message says which and the fix."""
    others = (causal, scale, causal_align, return_lse, tile_n, num_stages, mma, policy)
    return op_plans.run("flash_attention", (q, k, v), (others, tuple(map(type, others))),
        lambda: _attention(q, k, v, causal, scale, causal_align, return_lse, tile_n,
                           num_stages, mma, policy))


def _attention(q, k, v, causal, scale, causal_align, return_lse, tile_n, num_stages, mma,
               policy):
    """``flash_attention_eager``'s work: plan the call, allocate, launch (``op_plans.py``
    records it; a repeated call with the same facts launches the recording)."""
    plan = plan_call(q, k, v, causal, scale, causal_align=causal_align, return_lse=return_lse,
                     tile_n=tile_n, num_stages=num_stages, mma=mma, policy=policy)
    batch, heads, seq_q, head_dim = plan.q_shape
    o = op_plans.fresh(empty_like(q, (batch, heads, seq_q, head_dim)))
    lse = op_plans.fresh(empty_like(q, (batch, heads, seq_q), float32=True)) \
        if plan.return_lse else None
    if plan.kernel is None:
        return (o, lse) if plan.return_lse else o
    tensor_args = plan.tensor_args
    if plan.pad_to is not None:
        q, k, v = (pad_last(x, plan.pad_to) for x in (q, k, v))
    elif plan.copy:
        q, k, v = (fresh_copy(x) for x in (q, k, v))
    if plan.pad_to is not None or plan.copy:
        tensor_args = describe("q", q), describe("k", k), describe("v", v)
    out = o if plan.pad_to is None else empty_like(q, (batch, heads, seq_q, plan.pad_to))
    if plan.kernel == "wgmma":
        launch_wgmma(plan.policy, q, k, v, out, tensor_args, lse)
    else:
        launch(plan.policy, q, k, v, out)
    if plan.pad_to is not None:
        o[...] = out[..., :head_dim]
    else:
        op_plans.plannable(not plan.copy)
    return (o, lse) if plan.return_lse else o


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
    ``torch.ops.warpstage.flash_attention`` (warpstage/runtime/torch_library.py: a fake
    implementation for torch.compile, no autograd formula since there is no backward kernel), so
    a model calling it compiles with ``torch.compile(fullgraph=True)`` without a graph break;
    ``flash_attention_eager`` is the same function without the op. A torch tensor that requires
    grad while grad mode is on is an ArgumentError (no backward is registered)."""
flash_attention.__ws_explain__ = explain
flash_attention_eager.__ws_explain__ = explain
