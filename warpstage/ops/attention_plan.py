"""How ``ws.ops.flash_attention`` (``attention.py``) decides what a call runs: the measured
tables (``WGMMA_MIN_WORK`` here; ``WGMMA_DEFAULTS`` and ``WGMMA_SHORT`` in
``attention_tables.py``), the cached policies (``wgmma_policy_for``, ``policy_for``), and
``plan_call``, which checks a call's arguments and returns its ``AttentionPlan``: the kernel,
the policy and every fallback with its reason. ``explain`` prints that plan
(``ws.explain(ws.ops.flash_attention, q, k, v, ...)``); the op runs it
(``flash_attention_eager``). Host code only: nothing here launches or copies.
"""
from __future__ import annotations

import functools
import math

from ..errors import ArgumentError
from ..runtime.target import default_target
from .attention_host import (check_grid, count, cp_async_ok, describe, finite_scale, flag,
                             tma_compatible)
from .attention_tables import (SHORT_SEQ, SHORT_SEQ_AT, WGMMA_DEFAULTS, WGMMA_SHORT, is_short,
                               shipped_fields, short_bound)
from .attention_kernel import FlashAttention
from .attention_wgmma import FlashAttentionWgmma
from .descriptors import sm_count
from .host_fixes import cast_code, contiguous_code, fresh_copy_code

__all__ = ["AttentionPlan", "plan_call", "explain", "wgmma_policy_for", "policy_for",
           "WGMMA_DEFAULTS", "WGMMA_SHORT", "SHORT_SEQ", "SHORT_SEQ_AT", "short_bound",
           "is_short", "shipped_fields", "widened_to_two", "WGMMA_MIN_WORK", "NATIVE_HEAD_DIMS",
           "PADDED_HEAD_DIMS", "SIM_CTAS", "MMA_CHOICES"]

MMA_CHOICES = ("auto", "wgmma", "mma.sync")
WGMMA_MIN_WORK = 1 << 31
"""``mma='auto'`` picks the wgmma kernel from B * H * S_q * S_k * D >= this on. Measured on the
H200 (2026-11-29 13:20 UTC, benchmarks/flash_attention.py, bf16, non-causal, after descriptor
arguments moved to the generated launch path): at (2, 16, 1024, 1024, D) = 2^31 (D=64) the wgmma
kernel is 1.20x (D=64) and 1.12x (D=128) faster than mma.sync, at (2, 8, 8192, 8192, D) 1.36x and
1.07x. Smaller problems were not measured, so they keep the mma.sync kernel."""

_WS_DTYPES = {"f16": "Float16", "bf16": "BFloat16"}


PADDED_HEAD_DIMS = ()
"""Head dimensions the wgmma kernel takes natively (``FlashAttentionWgmma.head_dims``) that the
op still zero-pads to the next of ``NATIVE_HEAD_DIMS``: none since D = 96 was measured (session 5,
2026-12-02 02:19 UTC, sweep "attn5", device time, bf16): native 530 TFLOP/s at B=4 H=16 S=4096
against 505 for the padded D=128 kernel's useful work (673 x 96/128, its copy not counted),
causal 467 against 441; at S=1024 406 against 442 (causal 280 against 314), where the padded
path's copy of q, k and v (~13% of that kernel's time) evens it out."""

NATIVE_HEAD_DIMS = tuple(d for d in FlashAttentionWgmma.head_dims if d not in PADDED_HEAD_DIMS)
"""Head dimensions the op runs as they are (64 and 128 both kernels, 192 and 256 the wgmma
kernel); another D up to 256 is zero-padded to the next of these."""

SIM_CTAS = 3
"""CTAs of a persistent launch in the simulator: few, so each walks several output tiles."""

def widened_to_two(base: dict, fields: dict, overrides=()) -> bool:
    """Whether a policy built from the shipped ``base`` fields runs 2 consumer warpgroups in
    place of base's 3: its ``tile_n`` (given by the caller) is wider than base's and
    ``consumer_wgs`` was not given. Three warpgroups have 160 registers per consumer thread,
    and the shipped widths are the widest that fit there (D=128: 80 keys; 96 spill 48 bytes,
    128 spill 368; D=96: 112 keys, 128 spill 144 bytes); two have 240."""
    return (base.get("consumer_wgs") == 3 and "consumer_wgs" not in dict(overrides)
            and fields["tile_n"] > base["tile_n"])


@functools.lru_cache(maxsize=64)
def wgmma_policy_for(head_dim: int, dtype_name: str, causal: bool, scale: float,
                     tile_n=None, num_stages=None, causal_align: str = "top_left",
                     kv_group: int = 1, short: bool = False,
                     overrides: tuple = ()) -> FlashAttentionWgmma:
    """The wgmma + TMA policy for a configuration (cached like ``policy_for``): the measured
    ``WGMMA_DEFAULTS`` for (head_dim, causal), with ``short`` (``is_short``)
    ``WGMMA_SHORT``'s fields over them, then ``overrides`` ((field, value) pairs: the
    autotuner's candidates), and ``tile_n`` / ``num_stages`` overriding. A key tile wider than
    a 3-warpgroup default's, with ``consumer_wgs`` not given, runs 2 consumer warpgroups
    (``widened_to_two``); a shipped schedule field that cannot run with the caller's fields
    gives way (``yielding_field``: a shipped ``overlap_tiles`` whose second Q buffer does not
    fit in shared memory beside the caller's ring, D=128 with 3 stages of 128 keys: 256 KiB
    with it, 224 KiB without; the shipped ``dynamic_tiles`` / ``overlap_tiles`` under
    ``persistent=False``); ``explain`` lists each."""
    import warpstage as ws
    base = shipped_fields(head_dim, causal, short)
    fields = dict(base, causal_align=causal_align, kv_group=kv_group)
    fields.update(overrides)
    if tile_n is not None:
        fields["tile_n"] = tile_n
    if num_stages is not None:
        fields["num_stages"] = num_stages
    if widened_to_two(base, fields, overrides):
        fields["consumer_wgs"] = 2
    given = set(dict(overrides)) | {n for n, x in (("tile_n", tile_n), ("num_stages", num_stages))
                                    if x is not None}
    while True:
        try:
            return FlashAttentionWgmma(head_dim=head_dim, dtype=getattr(ws, dtype_name),
                                       causal=causal, softmax_scale=scale, **fields)
        except ValueError as e:
            drop = yielding_field(e, base, fields, given)
            if drop is None:
                raise
            fields[drop] = False


def yielding_field(err, base: dict, fields: dict, given):
    """The shipped schedule field that gives way to the caller's fields after ``err`` (the
    policy's OperandError), or None: a shipped boolean field set True that the caller did not
    give and that ``err`` names (``persistent=False`` refuses the shipped ``dynamic_tiles``,
    ``split_kv=False`` the shipped ``overlap_tiles``), or the shipped ``overlap_tiles`` when
    shared memory overflows (its second Q buffer beside the caller's ``tile_n`` /
    ``num_stages`` ring). An error about a field the caller gave stays the caller's."""
    name = "overlap_tiles" if getattr(err, "smem_overflow", False) else getattr(err, "field", None)
    if name in given or base.get(name) is not True or fields.get(name) is not True:
        return None
    return name


@functools.lru_cache(maxsize=64)
def policy_for(head_dim: int, dtype_name: str, causal: bool, scale: float, copy: str,
               tile_m: int = 128, tile_n: int = 128, num_stages: int = 3) -> FlashAttention:
    """The FlashAttention policy for a configuration (cached: one object per configuration,
    so repeated calls reuse the compiled kernel's key cheaply)."""
    import warpstage as ws
    return FlashAttention(head_dim=head_dim, dtype=getattr(ws, dtype_name), causal=causal,
                          softmax_scale=scale, copy=copy, tile_m=tile_m, tile_n=tile_n,
                          num_stages=num_stages)


def _shape_mismatch(q, k, v):
    """(what differs, the fix) for q, k, v shapes (4-tuples) that do not fit together, or
    None."""
    if k != v:
        axis = next(i for i in range(4) if k[i] != v[i])
        name = ("B", "H_kv", "S_k", "D")[axis]
        return (f"k and v differ in {name} (axis {axis}: {k[axis]} against {v[axis]})",
                "pass k and v of one shape (B, H_kv, S_k, D)")
    if k[0] != q[0]:
        return (f"k and v have B = {k[0]}, q B = {q[0]}",
                "pass the same batch in q, k and v (or expand k and v over the batch)")
    if k[3] != q[3]:
        return (f"k and v have D = {k[3]}, q D = {q[3]}",
                "project q, k and v to one head dimension")
    if (k[1] == 0 and q[1] != 0) or (k[1] != 0 and q[1] % k[1]):      # H_q = H_kv = 0: empty
        return (f"H_kv = {k[1]} does not divide H_q = {q[1]}",
                "repeat k and v to a divisor of H_q heads (k.repeat_interleave(r, dim=1))")
    return None


def _check_policy(policy, mma, tile_n, num_stages) -> None:
    """``policy``: None, or a dict of ``FlashAttentionWgmma`` fields for the wgmma kernel (the
    autotuner's candidates; ``flash_attention_eager`` and ``explain``), each field known, not
    one the op sets from its own arguments, and not given twice."""
    if policy is None:
        return
    if not isinstance(policy, dict):
        raise ArgumentError(f"flash_attention: policy={policy!r}; expected None or a dict of "
                            "FlashAttentionWgmma fields (e.g. {'consumer_wgs': 3}). Fix: "
                            "policy={'consumer_wgs': 3}, or leave it out")
    if mma == "mma.sync":
        raise ArgumentError(f"flash_attention(mma='mma.sync'): policy={policy!r} holds fields "
                            "of the wgmma kernel, which the mma.sync kernel does not read. Fix: "
                            "mma='wgmma', or leave policy out")
    import difflib
    fields = [f for f in FlashAttentionWgmma.key_fields if f not in ("causal_align", "kv_group")]
    for name in policy:
        if name not in fields:
            near = difflib.get_close_matches(str(name), fields, n=1)
            raise ArgumentError(f"flash_attention: policy field {name!r} is not a field of the "
                                f"wgmma kernel's policy (FlashAttentionWgmma: {', '.join(fields)};"
                                " causal_align, kv_group and the head dimension, dtype and scale "
                                "come from the call's arguments). Fix: "
                                + (f"{near[0]!r}" if near else "one of those fields"))
    for name, value in policy.items():      # plan_call keys the policy cache by the values
        try:
            hash(value)
        except TypeError:
            raise ArgumentError(f"flash_attention: policy field {name!r} = {value!r} "
                                f"({type(value).__name__}); expected a bool, number, string or "
                                f"None (a FlashAttentionWgmma field's value). Fix: "
                                f"policy={{{name!r}: ...}} with one such value") from None
    for name, given in (("tile_n", tile_n), ("num_stages", num_stages)):
        if given is not None and name in policy and policy[name] != given:
            raise ArgumentError(f"flash_attention: {name} given twice, {name}={given} and "
                                f"policy={{{name!r}: {policy[name]!r}}}. Fix: give it once")


def _wgmma_device(ta) -> bool:
    """Whether the launch runs on a GPU with wgmma (sm_90): CUDA tensors, the cuda target."""
    if ta.device != "cuda":
        return False
    from ..runtime.target import device_properties
    return default_target() == "cuda" and device_properties(ta.device_index or 0).cc_major == 9


class AttentionPlan:
    """What one ``flash_attention`` call runs, decided before anything is launched (and shown
    by ``ws.explain(ws.ops.flash_attention, ...)``): ``kernel`` ('wgmma', 'mma.sync', or None
    when there are no rows to compute), its ``policy``, ``pad_to`` (the head dimension the
    inputs are zero-padded to, or None), ``copy`` (q, k, v copied into TMA-readable tensors),
    and the reasons: ``fallbacks`` ((what, why) pairs: every way the call runs slower than the
    fast path would) and ``choices`` ((what, why): the selections that are not fallbacks)."""

    def __init__(self, q_shape, kv_shape, dtype, causal, return_lse, tensor_args):
        self.q_shape, self.kv_shape, self.dtype = q_shape, kv_shape, dtype
        self.causal, self.return_lse, self.tensor_args = causal, return_lse, tensor_args
        self.kernel = self.policy = self.pad_to = None
        self.copy = False
        self.fallbacks, self.choices = [], []


def plan_call(q, k, v, causal=False, scale=None, *, causal_align="top_left", return_lse=False,
              tile_n=None, num_stages=None, mma="auto", policy=None) -> AttentionPlan:
    """The ``AttentionPlan`` of ``flash_attention_eager(q, k, v, ...)`` (same arguments): every
    check of the call (the same ArgumentErrors), then the kernel, the policy and each fallback
    with its reason. Launches nothing, copies nothing."""
    tq, tk, tv = describe("q", q), describe("k", k), describe("v", v)
    causal = flag("causal", causal)
    tile_n = count("tile_n", tile_n, "keys per shared-memory stage, a multiple of 16 in "
                   "[16, 256]", "tile_n=128 (or None for the default)")
    num_stages = count("num_stages", num_stages, "the shared-memory ring depth, an int in "
                       "[1, 8]", "num_stages=2 (or None for the default)")
    dtype = _WS_DTYPES.get(str(tq.dtype))
    if dtype is None or tk.dtype != tq.dtype or tv.dtype != tq.dtype:
        names = ", ".join(str(getattr(t.owner, "dtype", t.dtype)) for t in (tq, tk, tv))
        raise ArgumentError(f"flash_attention: q, k, v have dtypes {names}; expected one of "
                            "float16 or bfloat16 (f16 / bf16) for all three. Fix: "
                            f"{cast_code((tq, tk, tv), 'bfloat16')} (or float16) each of them")
    batch, heads, seq_q, head_dim = tq.shape
    if head_dim == 0:
        raise ArgumentError(f"flash_attention: q has shape {tuple(tq.shape)}: head dimension D = "
                            "0 (no features per head); expected (B, H, S_q, D) with D >= 1. Fix: "
                            "check q's last axis (a (B, S, H, D) tensor's .transpose(1, 2))")
    if not 0 < head_dim <= NATIVE_HEAD_DIMS[-1]:
        raise ArgumentError(f"flash_attention: head dimension D = {head_dim}; the kernels take D "
                            f"up to {NATIVE_HEAD_DIMS[-1]} ({', '.join(map(str, NATIVE_HEAD_DIMS))}"
                            " natively, other sizes padded). Fix: split the heads' D into parts "
                            f"of at most {NATIVE_HEAD_DIMS[-1]}, or use SDPA")
    mismatch = _shape_mismatch(tuple(tq.shape), tuple(tk.shape), tuple(tv.shape))
    if mismatch:
        what, fix = mismatch
        raise ArgumentError(f"flash_attention: shapes q {tuple(tq.shape)}, k {tuple(tk.shape)}, "
                            f"v {tuple(tv.shape)}: {what}; expected q (B, H_q, S_q, D) and k, v "
                            "(B, H_kv, S_k, D) with the same B and D and H_kv dividing H_q "
                            "(grouped-query attention: query head h reads K/V head h // (H_q / "
                            f"H_kv)). Fix: {fix}")
    _check_policy(policy, mma, tile_n, num_stages)
    if causal_align not in ("top_left", "bottom_right"):
        raise ArgumentError(f"flash_attention: causal_align={causal_align!r}; expected "
                            "'top_left' (SDPA's is_causal) or 'bottom_right' (FlashAttention's, "
                            "for decoding). Fix: causal_align='top_left'")
    return_lse = flag("return_lse", return_lse)
    kv_group = heads // tk.shape[1] if tk.shape[1] else 1
    devices = [(t.device, t.device_index) for t in (tq, tk, tv)]
    if len(set(devices)) != 1:
        raise ArgumentError(f"flash_attention: q, k, v are on devices {devices}; expected one "
                            "device. Fix: move them to the same device")
    scale = 1.0 / math.sqrt(head_dim) if scale is None else finite_scale(scale)
    plan = AttentionPlan(tuple(tq.shape), tuple(tk.shape), dtype, causal, return_lse,
                         (tq, tk, tv))
    if batch * heads * seq_q == 0:
        plan.choices.append(("kernel", "none: B * H * S_q = 0, no rows to compute"))
        return plan
    if tk.shape[2] == 0:
        raise ArgumentError("flash_attention: k and v have no keys (S_k = 0); the softmax of "
                            "an empty row is undefined. Fix: pass at least one key")
    if mma not in MMA_CHOICES:
        raise ArgumentError(f"flash_attention: mma={mma!r}; expected one of {MMA_CHOICES}. "
                            "Fix: mma='auto'")
    tma_ok = all(tma_compatible(t) for t in (tq, tk, tv))
    if head_dim not in NATIVE_HEAD_DIMS:
        # zero columns change neither q.k nor the real columns of P V: pad D to the next
        # kernel size, keep the scale of the real D, and cut the output back
        plan.pad_to = next(d for d in NATIVE_HEAD_DIMS if d > head_dim)
        why = (f"the wgmma kernel takes D = {head_dim} natively, but the op pads it until "
               "that is measured faster (PADDED_HEAD_DIMS)" if head_dim in PADDED_HEAD_DIMS
               else f"D = {head_dim} is not one of the kernels' head dimensions "
               f"{NATIVE_HEAD_DIMS}")
        plan.fallbacks.append(("head dimension", (
            f"{why}: q, k and v are zero-padded to D = {plan.pad_to} (copies; "
            f"{round(100 * (1 - head_dim / plan.pad_to))}% of the tensor-core work multiplies "
            "zeros) and the output is cut back")))
        tma_ok = True                                  # the padded copies are fresh
    kernel_dim = plan.pad_to or head_dim
    align = causal_align if causal and tk.shape[2] != seq_q else "top_left"
    if causal and tk.shape[2] != seq_q:
        plan.choices.append(("causal alignment",
                             f"{align} (S_q = {seq_q}, S_k = {tk.shape[2]})"))
    elif causal and causal_align == "bottom_right":
        plan.choices.append(("causal alignment", "S_q = S_k: bottom-right is top-left"))
    needs = [x for x, on in (("return_lse=True", return_lse),
                             (f"grouped K/V heads (H_q / H_kv = {kv_group})", kv_group > 1),
                             ("bottom-right causal alignment with S_q != S_k",
                              align != "top_left"),
                             (f"D = {kernel_dim} > {FlashAttention.head_dims[-1]}",
                              kernel_dim > FlashAttention.head_dims[-1])) if on]
    if needs and mma == "mma.sync":
        raise ArgumentError("flash_attention(mma='mma.sync'): the mma.sync kernel has no "
                            "return_lse, grouped K/V heads, bottom-right causal alignment or "
                            f"head dimensions above {FlashAttention.head_dims[-1]} (D = "
                            f"{head_dim}). Fix: mma='auto'")
    wgmma_here = _wgmma_device(tq) or tq.device != "cuda"
    if needs and mma == "auto" and not tma_ok and wgmma_here:
        # only the wgmma kernel has these features: give it TMA-readable copies
        plan.copy = tma_ok = True
        plan.fallbacks.append(("copies", (
            f"{', '.join(needs)} need{'s' if len(needs) == 1 else ''} the wgmma kernel, and "
            f"TMA cannot read these tensors ({_tma_problem((tq, tk, tv))}): q, k and v are "
            "copied into new contiguous tensors first")))
    if needs and not (tma_ok and wgmma_here):
        raise ArgumentError("flash_attention: return_lse, grouped K/V heads, bottom-right "
                            f"causal alignment and D > {FlashAttention.head_dims[-1]} need the "
                            "wgmma kernel (an sm_90 GPU, or the simulator) and TMA-compatible "
                            "tensors. Fix: run on an H100/H200, or repeat k and v to H_q heads "
                            "and leave the other options out")
    if mma == "wgmma" and not tma_ok:
        tensors = (tq, tk, tv)
        copy = (fresh_copy_code(tensors) if any(t.data_ptr % 16 for t in tensors)
                else contiguous_code(tensors))
        raise ArgumentError("flash_attention(mma='wgmma'): TMA cannot read these tensors ("
                            f"{_tma_problem(tensors)}). Fix: mma='auto' (falls back to "
                            f"mma.sync) or {copy} each input")
    work = batch * heads * seq_q * tk.shape[2] * head_dim
    if mma == "wgmma" or needs or (mma == "auto" and tma_ok and work >= WGMMA_MIN_WORK
                                   and _wgmma_device(tq)):
        plan.kernel = "wgmma"
        plan.choices.append(("kernel", "mma='wgmma'" if mma == "wgmma" else
                             f"{', '.join(needs)}: only the wgmma kernel has it" if needs else
                             f"mma='auto', an sm_90 GPU, TMA-readable tensors and B H S_q S_k D "
                             f"= {work} >= WGMMA_MIN_WORK"))
        short = is_short(seq_q, kernel_dim, causal)
        overrides = tuple(sorted((policy or {}).items()))
        plan.policy = wgmma_policy_for(kernel_dim, dtype, causal, scale, tile_n=tile_n,
                                       num_stages=num_stages, causal_align=align,
                                       kv_group=kv_group, short=short, overrides=overrides)
        _wgmma_choices(plan, kernel_dim, short, overrides, tile_n, num_stages)
        check_grid(plan.policy.grid(batch, heads, seq_q))
        return plan
    plan.kernel = "mma.sync"
    plan.choices.append(("kernel", f"mma={mma!r}"))
    if mma == "auto":
        plan.fallbacks.append(("kernel", "the mma.sync kernel (FlashAttention-2 style), not "
                               "wgmma: " + _why_not_wgmma(tq, (tq, tk, tv), tma_ok, work)))
        if policy and kernel_dim in FlashAttentionWgmma.head_dims:
            # not run here, but checked as the wgmma kernel would check it: a bad field value
            # must not pass in the simulator (mma.sync) and fail on a GPU (wgmma)
            wgmma_policy_for(kernel_dim, dtype, causal, scale, tile_n=tile_n,
                             num_stages=num_stages, causal_align=align, kv_group=kv_group,
                             short=is_short(seq_q, kernel_dim, causal),
                             overrides=tuple(sorted(policy.items())))
        if policy:
            plan.fallbacks.append(("policy", f"policy={policy} is not used: it sets "
                                   "FlashAttentionWgmma fields, and the mma.sync kernel runs "
                                   "(mma='wgmma' runs it with them)"))
    if kernel_dim not in FlashAttention.head_dims:
        # a head dimension only the wgmma kernel takes natively: the mma.sync kernel pads it
        plan.pad_to = kernel_dim = next(d for d in FlashAttention.head_dims if d > kernel_dim)
        plan.fallbacks.append(("head dimension", f"D = {head_dim} runs on the mma.sync kernel "
                               f"zero-padded to D = {kernel_dim} (copies)"))
    copy = "cp.async" if cp_async_ok(tk) and cp_async_ok(tv) else "ld/st"
    if copy == "ld/st":
        plan.fallbacks.append(("K/V loads", "ld.global/st.shared instead of cp.async: k or v "
                               f"is not 16-byte aligned with strides in multiples of 8 elements "
                               f"(k {tk.strides}, v {tv.strides})"))
    plan.policy = policy_for(kernel_dim, dtype, causal, scale, copy,
                             tile_n=128 if tile_n is None else tile_n,
                             num_stages=3 if num_stages is None else num_stages)
    check_grid(plan.policy.grid(batch, heads, seq_q))
    return plan


def _tma_problem(tensors) -> str:
    """What keeps TMA from reading ``tensors`` (``tma_compatible``'s rules), for a reason."""
    bad = [f"{n} at {t.data_ptr % 16} bytes past 16-byte alignment" if t.data_ptr % 16 else
           f"{n} strides {t.strides}" for n, t in zip("qkv", tensors) if not tma_compatible(t)]
    return ("; ".join(bad) + "; TMA needs a 16-byte aligned base, D contiguous and the other "
            "strides multiples of 8 elements")


def _why_not_wgmma(tq, tensors, tma_ok, work) -> str:
    """Why ``mma='auto'`` did not take the wgmma kernel."""
    if not _wgmma_device(tq):
        if tq.device != "cuda":
            return ("the tensors are not on a GPU (the simulator runs the mma.sync kernel "
                    "unless mma='wgmma' is asked for)")
        if default_target() != "cuda":
            return f"the target is {default_target()!r}, not 'cuda'"
        from ..runtime.target import device_properties
        props = device_properties(tq.device_index or 0)
        return (f"the GPU has compute capability {props.cc_major}.{props.cc_minor}; wgmma "
                "needs sm_90 (H100/H200)")
    if not tma_ok:
        return _tma_problem(tensors)
    return (f"B H S_q S_k D = {work} < WGMMA_MIN_WORK = {WGMMA_MIN_WORK} (below it the "
            "wgmma kernel was not measured faster)")


def _wgmma_choices(plan, head_dim, short, overrides, tile_n, num_stages) -> None:
    """The wgmma policy's selections (measured defaults, overrides) and its own fallbacks."""
    fa = plan.policy
    picked = dict(WGMMA_DEFAULTS[(head_dim, plan.causal)])
    plan.choices.append(("tiling", f"WGMMA_DEFAULTS[({head_dim}, {plan.causal})] = {picked}"))
    if short and WGMMA_SHORT.get((head_dim, plan.causal)):
        bound = short_bound(head_dim, plan.causal)
        plan.choices.append(("short sequence", f"S_q <= {bound} (is_short): WGMMA_SHORT's "
                             f"{WGMMA_SHORT[(head_dim, plan.causal)]}"))
    given = dict(overrides, **{n: x for n, x in (("tile_n", tile_n), ("num_stages", num_stages))
                               if x is not None})
    if given:
        plan.choices.append(("given", f"{given} over the defaults"))
    base = shipped_fields(head_dim, plan.causal, short)
    if widened_to_two(base, {"tile_n": fa.tile_n}, overrides):
        plan.choices.append(("consumer warpgroups", f"2, not the default's 3: tile_n={fa.tile_n} "
                             f"is wider than the {base['tile_n']} keys that 3 warpgroups' 160 "
                             "registers per thread hold without spilling (to run 3 anyway, "
                             "launch ws.ops.FlashAttentionWgmma(consumer_wgs=3, ...) with "
                             "warpstage.ops.attention.launch_wgmma)"))
    for name, value in base.items():            # shipped fields that gave way (yielding_field)
        if value is True and getattr(fa, name, True) is False and name not in given:
            why = (f"its second Q buffer ({fa.q_layout.nbytes} bytes) does not fit in shared "
                   f"memory beside {fa.num_stages} stages of {fa.tile_n} keys"
                   if name == "overlap_tiles" and fa.persistent and fa.overlap and fa.split_kv
                   else f"it cannot run with the given {given}")
            plan.fallbacks.append((name, f"the shipped {name}=True is off: {why}"))
    if not fa.tma_store:
        why = ("tma_store=False was given" if "tma_store" in dict(overrides) else
               f"its buffers ({fa.consumer_wgs} x {fa.out.smem_bytes} bytes) do not fit beside "
               "the rings")
        plan.fallbacks.append(("epilogue", f"scalar 2-byte stores instead of the TMA-store "
                               f"epilogue: {why}"))


def explain(q, k, v, causal=False, scale=None, *, causal_align="top_left", return_lse=False,
            tile_n=None, num_stages=None, mma="auto", tune=False, policy=None,
            print_table=True) -> str:
    """``ws.explain(ws.ops.flash_attention, q, k, v, ...)``: print (and return) what the call
    with these arguments runs: the kernel, its policy, launch shape and shared memory, each
    fallback with its reason (a padded head dimension, copies, mma.sync instead of wgmma and
    why, ld/st loads, scalar-store epilogue) and the selections behind the policy. Tensors may
    be real or stand-ins with the same shape, dtype, strides and device; nothing is launched
    or copied. Raises the ArgumentError the call would raise."""
    from .attention_explain import format_plan
    plan = plan_call(q, k, v, causal, scale, causal_align=causal_align, return_lse=return_lse,
                     tile_n=tile_n, num_stages=num_stages,
                     mma="wgmma" if tune is True else mma, policy=policy)
    text = format_plan(plan, tuned=tune is True, sms=sm_count(plan.tensor_args[0], SIM_CTAS))
    if print_table:
        print(text)
    return text
