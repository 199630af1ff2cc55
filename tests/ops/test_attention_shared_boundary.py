"""``shared_boundary`` (warpstage/ops/attention_wgmma_tiles.py, ``consume_tiles_shared``): with
``overlap_tiles`` the tile boundary is one more ``kv_step`` of a flat loop over the CTA's
(output tile, K/V tile) steps instead of a peeled copy of the step. In the CPU simulator its
output is bit for bit the peeled form's (the same operations on the same values) and matches the
float64 reference, on claimed and static tiles, several tiles per CTA, S off the tiles, causal
(rows that see no key too), every rescale form, one K/V tile per output tile (every step a
boundary); the PTX and SASS hold the K/V step once (GEMMs and softmax) where the peeled form has it
twice, with the register budget and the loop's ping-pong turn kept. The claimed walk's end (b =
-1 at the first boundary) and the NaN-filled shared memory with the race detector: tests/ops/
test_attention_dynamic_tiles.py and tests/examples/test_flash_attention_wgmma_sim.py."""
import re
import os
import sys

import numpy as np
import pytest

import warpstage as ws
from warpstage.ops.attention import reference
from warpstage.ops.attention_wgmma import FlashAttentionWgmma

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "examples"))
from dtypes_helper import to_float64  # noqa: E402
from test_flash_attention_wgmma_sim import TOL, make_inputs, run_case  # noqa: E402
from test_attention_packed_p import _compiled, assert_clean_split, loop_turns  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::warpstage.RecompileWarning")

D128 = dict(tile_n=128, fma_select=True, rescale_threshold=8.0, packed_p=True)
# (batch, heads, S_q, S_k, D, causal, dtype, scale, policy without shared_boundary)
CASES = [
    # the D=128 short default (claimed tiles): 12 tiles on 3 CTAs, S_q and S_k off the tiles
    (2, 2, 300, 200, 128, False, "bfloat16", None, dict(dynamic_tiles=True, overlap_tiles=True,
                                                        **D128)),
    # its causal twin (WGMMA_DEFAULTS[(128, True)] + overlap_tiles), bottom-right with
    # S_q > S_k: the first 150 rows see no key
    (1, 3, 300, 150, 128, True, "bfloat16", None, dict(dynamic_tiles=True, overlap_tiles=True,
                                                       causal_align="bottom_right", **D128)),
    # claimed, O rescaled in the turn (no threshold, no rescale_at_wait)
    (1, 3, 200, 333, 128, True, "float16", None, dict(dynamic_tiles=True, overlap_tiles=True)),
    # static schedule, one K/V tile per output tile (every step a boundary), O rescaled right
    # after its wait by alpha (a boundary must not rescale the finished O by the next tile's)
    (3, 2, 400, 64, 64, False, "float16", None, dict(overlap_tiles=True, consumer_wgs=3,
                                                     rescale_at_wait=True)),
    # the D=64 non-causal default's form (static schedule, 3 warpgroups)
    (2, 2, 300, 200, 64, False, "bfloat16", None, dict(overlap_tiles=True, consumer_wgs=3,
                                                       fma_select=True, packed_p=True,
                                                       rescale_at_wait=True)),
    # the D=64 causal short default's form; only warpgroup 0 waits on the rings
    (2, 2, 300, 300, 64, True, "float16", None, dict(overlap_tiles=True, lead_waits=True)),
]


def _ids(case):
    b, h, sq, sk, d, causal, dtype, _, pol = case
    return f"{b}x{h}x{sq}x{sk}-d{d}-{'causal' if causal else 'full'}-" + "-".join(pol)


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_same_output_as_the_peeled_boundary(sim_target, case):
    q, k, v = make_inputs(case, seed=5)
    peeled = run_case(case, q, k, v)
    shared = run_case(case[:-1] + (dict(case[-1], shared_boundary=True),), q, k, v)
    want = reference(*(to_float64(x) for x in (q, k, v)), causal=case[5],
                     causal_align=case[-1].get("causal_align", "top_left"))
    got = to_float64(shared)
    assert np.isfinite(got).all()
    assert np.linalg.norm(got - want) / np.linalg.norm(want) < TOL[case[6]]
    assert np.array_equal(peeled.view(np.uint16), shared.view(np.uint16))


@pytest.mark.parametrize("fields, match", [
    (dict(shared_boundary=True), r"(?s)shared_boundary: expected False unless overlap_tiles=True"
                                 r".*Fix: shared_boundary=False, or overlap_tiles=True"),
    (dict(shared_boundary=1, overlap_tiles=True), r"shared_boundary: expected True or False, "
                                                  r"got 1")])
def test_policy_errors(fields, match):
    with pytest.raises(ValueError, match=match):
        FlashAttentionWgmma(head_dim=128, **fields)


def _short_default(causal):
    from warpstage.ops.attention_plan import shipped_fields
    fields = shipped_fields(128, causal, short=True)
    assert fields["overlap_tiles"] and fields["dynamic_tiles"] and fields["packed_p"]
    assert (fields["tile_n"], fields["fma_select"]) == (128, True)
    return {k: v for k, v in fields.items()
            if k not in ("tile_n", "fma_select", "shared_boundary")}


@pytest.mark.parametrize("causal", [False, True])
def test_the_step_exists_once_in_ptx_and_sass(causal):
    # the peeled form issues the K/V step's GEMMs (S: D / 16 k-steps, P V: tile_n / 16) and
    # its softmax at the first S, in the loop and at the boundary; the shared one at the first
    # S and in the loop: one copy fewer of each, within the same register split, no spills
    fields = _short_default(causal)
    if causal:
        fields = dict(fields, causal=True)
    peeled = _compiled(**fields, shared_boundary=False)
    shared = _compiled(**fields, shared_boundary=True)
    step = 128 // 16 + 128 // 16
    wgmma = [ck.ptx.count("wgmma.mma_async") for ck in (peeled, shared)]
    assert wgmma[1] == wgmma[0] - step
    ex2 = [len(re.findall(r"\bex2\.approx", ck.ptx)) for ck in (peeled, shared)]
    assert ex2[1] * 3 == ex2[0] * 2, ex2                    # three softmax copies -> two
    assert_clean_split(shared)
    assert shared.sass.count("HGMMA.64x") == wgmma[1]
    full = {name: loop_turns(ck, 16) for name, ck in (("peeled", peeled), ("shared", shared))}
    # the loop body's turn and the boundary's in the peeled form; one turn, both, shared
    assert len(full["peeled"]) == 2 and len(full["shared"]) == 1, full


@pytest.mark.gpu
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shape", [(8, 16, 1024), (2, 3, 1000)])
def test_device_short_default_against_sdpa(causal, shape):
    # the D=128 short default (claimed tiles, several per CTA at B=8 H=16) in both forms of
    # the boundary on the GPU: SDPA's answer, and the two forms' outputs alike
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a GPU")
    from warpstage.ops import attention
    g = torch.Generator().manual_seed(shape[2])
    q, k, v = (torch.randn(*shape, 128, generator=g).to(torch.bfloat16).cuda()
               for _ in range(3))
    ref = torch.nn.functional.scaled_dot_product_attention(q.double(), k.double(), v.double(),
                                                           is_causal=causal)
    outs = []
    for shared in (False, True):
        fields = dict(_short_default(causal), shared_boundary=shared)
        fa = FlashAttentionWgmma(head_dim=128, dtype=ws.BFloat16, causal=causal, tile_n=128,
                                 fma_select=True, **fields)
        o = torch.full_like(q, float("nan"))
        attention.launch_wgmma(fa, q, k, v, o)
        torch.cuda.synchronize()
        assert torch.isfinite(o).all()
        assert ((o.double() - ref).norm() / ref.norm()).item() < 1e-2
        outs.append(o)
    assert (outs[0].float() - outs[1].float()).abs().max().item() < 1e-2
