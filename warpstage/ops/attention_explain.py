"""The text of ``ws.explain(ws.ops.flash_attention, q, k, v, ...)``: an ``AttentionPlan``
(``attention.py``'s ``plan_call``) as lines a user reads: the call, the kernel and where it
lives, the policy (every field of its static key), the launch shape and shared memory, then
each fallback with its reason and the selections behind the policy."""
from __future__ import annotations

__all__ = ["format_plan"]

_KERNELS = {
    "wgmma": "flash_attention_wgmma_kernel (wgmma + TMA, FlashAttention-3 style; "
             "warpstage/ops/attention_wgmma.py)",
    "mma.sync": "flash_attention_kernel (mma.sync, FlashAttention-2 style; "
                "warpstage/ops/attention_kernel.py)",
}


def format_plan(plan, tuned: bool = False, sms: int = 132) -> str:
    """The explain text of ``plan`` (an ``AttentionPlan``); ``tuned``: the call has
    ``tune=True`` (the policy shown is the shipped default the autotuner starts from); ``sms``:
    the multiprocessors a persistent grid is sized for."""
    b, h, s_q, d = plan.q_shape
    lines = [f"ws.ops.flash_attention: q {plan.q_shape}, k/v {plan.kv_shape}, "
             f"{plan.dtype}, causal={plan.causal}, return_lse={plan.return_lse}"]
    if plan.kernel is None:
        lines.append("  kernel:    none (B * H * S_q = 0: an empty output)")
        return "\n".join(lines)
    fa = plan.policy
    lines.append(f"  kernel:    {_KERNELS[plan.kernel]}")
    key = ", ".join(f"{n}={x!r}" for n, x in fa.__static_key__()[1:])
    lines.append(f"  policy:    {fa.policy_name}({key})")
    grid = fa.grid(b, h, s_q, sms=sms) if plan.kernel == "wgmma" else fa.grid(b, h, s_q)
    lines.append(f"  launch:    grid {grid} x {fa.threads} threads, {fa.smem_bytes} bytes of "
                 "dynamic shared memory")
    if tuned:
        lines.append("  tune=True: the autotuner (ops/tune_spaces.py) picks the wgmma policy per "
                     "shape class on the first call; shown: the shipped default it starts from")
    lines.append("  fallbacks: " + ("none (the fast path)" if not plan.fallbacks else ""))
    lines += [f"    - {what}: {why}" for what, why in plan.fallbacks]
    lines.append("  because:")
    lines += [f"    - {what}: {why}" for what, why in plan.choices]
    return "\n".join(lines)
