"""Session 14 review: reproducers of the problems a fresh user found in ``ws.ops.flash_attention``
and ``ws.ops.FlashAttentionWgmma`` (CPU simulator, numpy inputs). A script, not a test: each
``repro_*`` prints what it expected and what happened; nothing here asserts.

Run: .venv/bin/python scripts/review14_repros.py [name ...]   (all of them by default, about 1 min)
"""
import sys
import traceback
import warnings

import ml_dtypes
import numpy as np

import warpstage as ws
from warpstage.ops.attention import flash_attention_eager, launch_wgmma, reference

BF16 = ml_dtypes.bfloat16
FA = ws.ops.flash_attention


def qkv(b, h, s_q, s_k, d, h_kv=None, dtype=BF16, seed=0):
    """q (b, h, s_q, d) and k, v (b, h_kv, s_k, d) of standard-normal entries."""
    rng = np.random.default_rng(seed)
    h_kv = h if h_kv is None else h_kv
    return (rng.standard_normal((b, h, s_q, d)).astype(dtype),
            rng.standard_normal((b, h_kv, s_k, d)).astype(dtype),
            rng.standard_normal((b, h_kv, s_k, d)).astype(dtype))


def max_err(out, q, k, v, **kw):
    """max |out - reference| (float64), NaN when out holds NaN or inf."""
    return float(np.max(np.abs(out.astype(np.float64) - reference(q, k, v, **kw))))


def outcome(f):
    """What calling f did, as one line: 'ran' (and the value's shape, if it has one), or the
    error's type, first line and Fix line, and how many warpstage frames its traceback shows."""
    try:
        value = f()
    except Exception as e:      # the reproducers report every error, whatever its type
        frames = [fr.filename for fr in traceback.extract_tb(e.__traceback__)]
        inner = [name for name in frames if "/warpstage/" in name]
        lines = str(e).splitlines()
        fix = next((line for line in lines if line.startswith("Fix:")), "no Fix line")
        return (f"{type(e).__name__}: {lines[0]} | {fix}"
                + (f" [{len(inner)} warpstage frames in the traceback]" if inner else ""))
    return "ran" + (f", shape {value.shape}" if hasattr(value, "shape") else "")


def show(expected, got):
    print(f"    expected: {expected}\n    got:      {got}")


def repro_big_endian():
    """Byte order is ignored: big-endian arrays are read as little-endian (every kernel)."""
    q, k, v = (x.astype(">f2") for x in qkv(1, 1, 20, 20, 64, dtype=np.float16))
    show("the right result, or an ArgumentError naming the byte order",
         f"max |err| {max_err(FA(q, k, v), q, k, v):.3g} (garbage, no error)")


def repro_huge_scale():
    """A finite scale that overflows float32 (or makes scale * log2(e) do so) gives all NaN."""
    q, k, v = qkv(1, 1, 70, 90, 64)
    for scale in (1e38, 1e39):
        out = FA(q, k, v, scale=scale, mma="wgmma")
        show(f"scale={scale:g}: a hard-max softmax (the float64 reference is finite), or an "
             "ArgumentError like scale=inf's", f"{int(np.isnan(out.astype(np.float32)).sum())} "
             f"of {out.size} outputs NaN")


def repro_misaligned_fix():
    """mma='wgmma' on a misaligned contiguous view: the message shows only the strides, and its
    fix (np.ascontiguousarray) returns the same misaligned array."""
    flat = [np.zeros(2 * 70 * 64 + 1, BF16) for _ in range(3)]
    q, k, v = (f[1:].reshape(1, 2, 70, 64) for f in flat)
    fixed = [np.ascontiguousarray(x) for x in (q, k, v)]
    show("the base's misalignment named and a fix that works (np.array(x, copy=True))",
         outcome(lambda: FA(*fixed, mma="wgmma")))


def repro_recompile_warning():
    """An ops user gets a RecompileWarning (with a fix for kernel authors) after 8 legitimate
    head-dimension / dtype / causal combinations (and from tune=True's own candidates)."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        for d in (64, 96, 128, 192, 256):
            for causal in (False, True):
                FA(*qkv(1, 1, 16, 16, d), causal=causal, mma="wgmma")
    rec = [w for w in seen if type(w.message).__name__ == "RecompileWarning"]
    show("no warning: every call is a different problem the op must compile for",
         f"{len(rec)} RecompileWarning(s); fix text: "
         + (str(rec[0].message).splitlines()[-1] if rec else "-"))


def repro_policy_ignored():
    """policy= (flash_attention_eager, ws.explain) is silently dropped when mma='auto' picks the
    mma.sync kernel (the simulator; on a GPU below WGMMA_MIN_WORK); mma='mma.sync' rejects it."""
    q, k, v = qkv(1, 1, 64, 64, 64)
    text = ws.explain(FA, q, k, v, policy={"consumer_wgs": 2}, print_table=False)
    show("an error or a line saying the policy is not used",
         "explain: " + text.splitlines()[1].strip() + "; 'policy' named: "
         + str("consumer_wgs" in text))


def repro_overlap_drop_unexplained():
    """num_stages=3 at D=128, S_q <= 1536 drops the shipped overlap_tiles (documented), but
    ws.explain gives no reason for overlap_tiles=False."""
    q, k, v = qkv(1, 1, 200, 200, 128)
    text = ws.explain(FA, q, k, v, mma="wgmma", num_stages=3, print_table=False)
    reasons = [line.strip() for line in text.splitlines()
               if "overlap_tiles" in line and "policy:" not in line]
    show("a fallback line: overlap_tiles dropped (its second Q buffer does not fit)",
         f"policy has overlap_tiles=False; lines naming it: {reasons}")


def repro_policy_shipped_conflicts():
    """A policy field that conflicts with a shipped field the user never set is an error, with a
    fix that does not apply; and a caller's tile_n changes whether it is an error at all."""
    q, k, v = qkv(1, 1, 100, 100, 128)
    q64, k64, v64 = qkv(1, 1, 100, 100, 64)
    x = lambda *a, **kw: ws.explain(FA, *a, print_table=False, mma="wgmma", **kw)  # noqa: E731
    show("persistent=False runs (the op drops the shipped overlap_tiles for it already)",
         outcome(lambda: x(q, k, v, policy={"persistent": False})))
    show("split_kv=False: the fix names split_kv or the shipped overlap_tiles",
         outcome(lambda: x(q64, k64, v64, policy={"split_kv": False})))
    show("skip_idle=True: the same outcome with and without tile_n=128 (the default's value)",
         f"without: {outcome(lambda: x(q, k, v, policy={'skip_idle': True}))[:60]}...; "
         f"with tile_n=128: {outcome(lambda: x(q, k, v, tile_n=128, policy={'skip_idle': True}))}"
         " (overlap_tiles silently dropped)")


def repro_numpy_ints_in_policy():
    """numpy integers in FlashAttentionWgmma: accepted by some checks, then rejected by an
    internal one (TileLayout), or rejected with a reason that is false for the value."""
    W = ws.ops.FlashAttentionWgmma
    for kw in (dict(consumer_wgs=np.int64(2)), dict(head_dim=np.int64(64)),
               dict(tile_n=np.int64(128)), dict(rescale_threshold=np.float32(8))):
        show(f"{kw}: built, or 'expected a Python int / float'", outcome(lambda: W(**kw)))


def repro_smem_message():
    """The shared-memory error blames num_stages even at its minimum and when tma_store=True is
    the cause; it does not say which tile_n fits."""
    W = ws.ops.FlashAttentionWgmma
    show("names tile_n (num_stages=2 is already the least with overlap) and the widest that fits",
         outcome(lambda: W(head_dim=128, tile_n=256)))
    show("names tma_store=True as what does not fit",
         outcome(lambda: W(head_dim=256, tile_n=80, tma_store=True)))


def repro_wrong_fixes():
    """Fixes that name the wrong field."""
    W = ws.ops.FlashAttentionWgmma
    show("overlap_tiles with split_kv=False: fix 'split_kv=True' (persistent is already True)",
         outcome(lambda: W(overlap_tiles=True, split_kv=False)))
    show("narrow_last with overlap=False: fix 'overlap=True'",
         outcome(lambda: W(narrow_last=True, overlap=False, num_stages=1)))
    q, k, v = qkv(1, 1, 64, 64, 64)
    show("flash_attention(num_stages=1, mma='wgmma'): a fix flash_attention takes "
         "(it has no overlap argument)", outcome(lambda: FA(q, k, v, num_stages=1, mma="wgmma")))
    show("tune='yes': 'expected tune=True or False' (no tile_n was given)",
         outcome(lambda: FA(q, k, v, tune="yes")))


def repro_truthy_fields():
    """FlashAttentionWgmma takes any truthy value for its bool fields: overlap='no' is True."""
    p = ws.ops.FlashAttentionWgmma(overlap="no", persistent=None)
    show("an OperandError: expected a bool", f"overlap={p.overlap}, persistent={p.persistent}")


def repro_launch_wgmma_unchecked():
    """warpstage.ops.attention.launch_wgmma (which ws.explain's text points users to) checks
    neither kv_group nor head_dim against the tensors, nor lse's or o's shape."""
    W = ws.ops.FlashAttentionWgmma
    q, k, v = qkv(1, 2, 100, 100, 64)
    for label, fa in (("kv_group=2 with H_q == H_kv", W(head_dim=64, kv_group=2)),
                      ("head_dim=128 with D = 64", W(head_dim=128))):
        o = np.zeros(q.shape, BF16)
        launch_wgmma(fa, q, k, v, o)
        show(f"{label}: an ArgumentError", f"ran, max |err| {max_err(o, q, k, v):.3g}")
    o = np.zeros(q.shape, BF16)
    show("lse of shape (1, 2, 10): an ArgumentError on the host (on a GPU this writes past lse)",
         outcome(lambda: launch_wgmma(W(head_dim=64), q, k, v, o,
                                      lse=np.zeros((1, 2, 10), np.float32))))
    show("o of shape (1, 2, 50, 64) for S_q = 100: an ArgumentError",
         outcome(lambda: launch_wgmma(W(head_dim=64), q, k, v, np.zeros((1, 2, 50, 64), BF16))))
    show("o of dtype float32: 'o must be bfloat16 like q'",
         outcome(lambda: launch_wgmma(W(head_dim=64), q, k, v, np.zeros(q.shape, np.float32))))


def repro_tiles_unchecked():
    """launch_wgmma's tile counters: ``check_tiles``' docstring says their shape is checked on
    the host by launch_wgmma; 3 counters are taken, and non-zero ones leave rows unwritten."""
    W = ws.ops.FlashAttentionWgmma
    q, k, v = qkv(2, 2, 150, 150, 128)
    fa = W(head_dim=128, dynamic_tiles=True, overlap_tiles=True)
    o = np.zeros(q.shape, BF16)
    show("3 counters: an ArgumentError",
         outcome(lambda: launch_wgmma(fa, q, k, v, o, tiles=np.zeros(3, np.int32))))
    o = np.zeros(q.shape, BF16)
    launch_wgmma(fa, q, k, v, o, tiles=np.array([3, 0], np.int32))
    wrong = int((np.abs(o.astype(np.float64) - reference(q, k, v)).max(-1) > 0.05).sum())
    show("counters [3, 0] (not zero, against the documented precondition): an error in the "
         "simulator at least", f"ran, {wrong} of {2 * 2 * 150} rows wrong")


def repro_explain_grid_limit():
    """ws.explain promises the call's ArgumentError; at B * H > 65535 on the mma.sync kernel it
    prints the plan (grid (1, 70000)) while the call raises."""
    x = np.broadcast_to(np.zeros((1, 1, 1, 64), BF16), (1, 70000, 1, 64))
    text = outcome(lambda: ws.explain(FA, x, x, x, mma="mma.sync", print_table=False))
    show("the call's ArgumentError (grid.y limit)", f"explain: {text}; call: "
         + outcome(lambda: FA(x, x, x, mma="mma.sync")))


def repro_small_inconsistencies():
    """Small ones: a bool array's dtype reported as u8; H = 0 an error while B = 0 and S_q = 0
    return empty results."""
    q, k, v = qkv(1, 1, 20, 20, 64)
    show("dtypes bool, bool, bool", outcome(lambda: FA(*(x.astype(bool) for x in (q, k, v)))))
    show("an empty (1, 0, 20, 64) result, as for B = 0",
         outcome(lambda: FA(*qkv(1, 0, 20, 20, 64))))


REPROS = {name[len("repro_"):]: f for name, f in sorted(globals().items())
          if name.startswith("repro_")}

if __name__ == "__main__":
    warnings.simplefilter("ignore")
    for name in sys.argv[1:] or REPROS:
        print(f"== {name}: {REPROS[name].__doc__.splitlines()[0]}")
        REPROS[name]()
