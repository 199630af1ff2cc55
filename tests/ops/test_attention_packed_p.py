"""The FlashAttention wgmma kernel's P V operand as packed bf16x2 registers (``packed_p``) and
O's rescale after its wait (``rescale_at_wait``), read from the PTX and SASS on the CPU
(docs/performance.md, "Session 7: packed P"): with ``overlap_tiles`` at D = 128 the 16-bit P
path has ptxas repack P's pairs (``PRMT .., 0x5432``) and multiply O inside the K/V loop's
ping-pong turn; the packed path converts each pair once (``cvt.rn.bf16x2.f32``), has no
repacking, and with ``rescale_at_wait`` no FMUL in that turn. The turns and loops are found by
scripts/sass_report.py's own readers."""
import functools
import importlib.util
import os
import re
import warnings

import numpy as np
import pytest

import warpstage as ws
from warpstage.backend import find_ptxas
from warpstage.ops.attention_wgmma import FlashAttentionWgmma, flash_attention_wgmma_kernel
from warpstage.options import CompileOptions

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _sass_report():
    spec = importlib.util.spec_from_file_location(
        "sass_report", os.path.join(ROOT, "scripts", "sass_report.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@functools.lru_cache(maxsize=None)
def _compiled(**fields):
    if find_ptxas(CompileOptions()) is None:
        pytest.skip("no ptxas")
    fa = FlashAttentionWgmma(head_dim=128, tile_n=128, fma_select=True, **fields)
    import ml_dtypes
    x = np.zeros((1, 1, 256, 128), ml_dtypes.bfloat16)
    q_box, kv_box = fa.descriptor_boxes()
    TD = ws.tma.TensorDescriptor
    tiles = ws.Tensor[ws.Int32, 1] if fa.dynamic_tiles else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ws.compile(flash_attention_wgmma_kernel, fa, TD(x, q_box, swizzle=fa.swizzle),
                          TD(x, kv_box, swizzle=fa.swizzle), TD(x, kv_box, swizzle=fa.swizzle),
                          ws.Tensor[ws.BFloat16, 4], ws.Int32, None, TD(x, fa.o_box), tiles,
                          block=(fa.threads, 1, 1))


def _kv_turn(ck):
    """The instructions of the K/V loop's ping-pong turn: of the turns with 16 HGMMA (S: D / 16
    k-steps, P V: tile_n / 16) inside a loop, the one whose innermost loop is shortest (the
    tile boundary's turn sits in the longer loop over output tiles)."""
    rep = _sass_report()
    lines = rep.sass_lines(ck)
    loops = rep.loops(rep.sass_lines(ck, labels=True))
    found = []
    for a, b in rep.turns(lines):
        inner = [hi - lo for lo, hi in loops if lo <= a and b <= hi]
        body = lines[a:b + 1]
        if inner and sum("HGMMA" in ln for ln in body) == 16:
            found.append((min(inner), body))
    assert found, "no turn with 16 HGMMA inside a loop in the SASS"
    return min(found, key=lambda x: x[0])[1]


def assert_clean_split(ck) -> None:
    """No spills, stack or local memory, no injected warpgroup waits (C7519 / C7517), and the
    24 / 240 ``setmaxnreg`` split in the SASS (skips the SASS checks without nvdisasm)."""
    res = ck.resources
    assert res.spill_stores == 0 and res.spill_loads == 0 and res.stack_frame == 0
    assert "C7519" not in ck.ptxas_log and "C7517" not in ck.ptxas_log, ck.ptxas_log
    if ck.sass is None:
        pytest.skip("SASS checks need nvdisasm or cuobjdump (the nvidia-cuda-nvdisasm wheel)")
    assert not re.search(r"\b(LDL|STL)\b", ck.sass)
    assert "USETMAXREG.DEALLOC.CTAPOOL 0x18" in ck.sass
    assert re.search(r"USETMAXREG\.TRY_ALLOC\.CTAPOOL \w+, 0xf0", ck.sass)


def loop_turns(ck, hgmma: int) -> list:
    """[(first, last)] SASS lines of the ping-pong turns with ``hgmma`` HGMMAs inside a loop."""
    rep = _sass_report()
    lines = rep.sass_lines(ck)
    loops = rep.loops(rep.sass_lines(ck, labels=True))
    return [(a, b) for a, b in rep.turns(lines)
            if sum("HGMMA" in ln for ln in lines[a:b + 1]) == hgmma
            and any(lo <= a and b <= hi for lo, hi in loops)]


_SWAP = re.compile(r"\bPRMT\b.*0x5432")
_MOV_PACK = re.compile(r"mov\.b32\s+%r\d+,\s*\{%rs")


def test_packed_p_ptx_converts_pairs_and_never_packs_halves():
    old, new = _compiled(overlap_tiles=True), _compiled(overlap_tiles=True, packed_p=True,
                                                        rescale_at_wait=True)
    assert _MOV_PACK.search(old.ptx)
    assert not _MOV_PACK.search(new.ptx)
    # the same conversions, one cvt per pair instead of one per element (LLVM pairs some of
    # the 16-bit ones already), tile_n / 4 pairs per conversion site
    pairs = new.ptx.count("cvt.rn.bf16x2.f32")
    assert "cvt.rn.bf16.f32" not in new.ptx and pairs > 0 and pairs % (128 // 4) == 0
    assert pairs == old.ptx.count("cvt.rn.bf16.f32") // 2 + old.ptx.count("cvt.rn.bf16x2.f32")
    for ck in (old, new):
        res = ck.resources
        assert res.spill_stores == 0 and res.spill_loads == 0
        assert "C7519" not in ck.ptxas_log and "C7517" not in ck.ptxas_log, ck.ptxas_log


def test_packed_p_sass_has_no_repacking_and_a_short_turn():
    old, new = _compiled(overlap_tiles=True), _compiled(overlap_tiles=True, packed_p=True,
                                                        rescale_at_wait=True)
    if new.sass is None:
        pytest.skip("SASS checks need nvdisasm or cuobjdump (the nvidia-cuda-nvdisasm wheel)")
    assert len(_SWAP.findall(old.sass)) >= 32          # the defect this fixes
    assert not _SWAP.search(new.sass)
    f2fp = "F2FP.BF16.F32.PACK_AB"
    assert new.sass.count(f2fp) == old.sass.count(f2fp) == new.ptx.count("cvt.rn.bf16x2.f32")
    old_turn, new_turn = _kv_turn(old), _kv_turn(new)
    fmul = lambda body: sum(1 for ln in body if re.search(r"\bFMUL\b", ln))   # noqa: E731
    assert fmul(old_turn) >= 32 and any(_SWAP.search(ln) for ln in old_turn)
    assert fmul(new_turn) == 0 and not any(re.search(r"\bPRMT\b", ln) for ln in new_turn)
    assert len(new_turn) < len(old_turn) - 64


def test_shipped_short_default_overlaps_claimed_tile_boundaries():
    # D=128 non-causal at S_q <= 1536 ships claimed tiles with overlapped boundaries and packed
    # P (attention_plan.WGMMA_SHORT; docs/performance.md, "Session 14"): no spills or local
    # memory, the 24 / 240 register split, and besides the K/V loop's turn a second turn of 16
    # HGMMA, the boundary's (the next tile's S'_0 with this tile's last P V), in the loop over
    # the claimed tiles; 48 HGMMA in all (first S, loop, boundary, the last P V alone)
    from warpstage.ops.attention_plan import shipped_fields
    fields = shipped_fields(128, False, short=True)
    assert fields["dynamic_tiles"] and fields["overlap_tiles"] and fields["packed_p"]
    assert (fields["tile_n"], fields["consumer_wgs"], fields["fma_select"]) == (128, 2, True)
    ck = _compiled(**{k: v for k, v in fields.items() if k not in ("tile_n", "fma_select")})
    assert_clean_split(ck)
    full = loop_turns(ck, 16)
    assert len(full) == 2, full
    assert ck.sass.count("HGMMA.64x") == ck.ptx.count("wgmma.mma_async") == 48
