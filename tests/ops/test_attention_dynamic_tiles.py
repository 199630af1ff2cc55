"""``dynamic_tiles`` (warpstage/ops/attention_wgmma_sched.py): persistent CTAs claim the output
tiles of the one-CTA-per-tile grid's order from a global counter pair. In the CPU simulator:
the counters are read (a counter that starts past the last tile leaves the claimed tiles
unwritten), left zero after a launch, and every tile is computed exactly once whichever CTA
claims it; the host hands one kept counter pair per torch device. The outputs against the
reference: tests/examples/test_flash_attention_wgmma_sim.py's CASES."""
import numpy as np
import pytest

import warpstage as ws
from dtypes_helper import empty_like, randn, to_float64
from warpstage.ops import attention
from warpstage.ops.attention_plan import SIM_CTAS
from warpstage.ops.attention_wgmma import FlashAttentionWgmma, flash_attention_wgmma_kernel

pytestmark = pytest.mark.filterwarnings("ignore::warpstage.RecompileWarning")


def launch(fa, q, k, v, o, tiles):
    """A direct launch of ``fa`` on the simulator's SIM_CTAS persistent CTAs with ``tiles``."""
    b, h, s, _ = q.shape
    q_box, kv_box = fa.descriptor_boxes()
    TD = ws.tma.TensorDescriptor
    descs = [TD(x, box, swizzle=fa.swizzle) for x, box in ((q, q_box), (k, kv_box), (v, kv_box))]
    o_desc = TD(o, fa.o_box, swizzle=fa.out.swizzle) if fa.tma_store else None
    grid = fa.grid(b, h, s, sms=SIM_CTAS)
    flash_attention_wgmma_kernel[grid, fa.threads](fa, *descs, o, k.shape[2], None, o_desc,
                                                   tiles)
    return grid[0]


def inputs(heads=4, seq=256, d=64):
    q = randn((1, heads, seq, d), "bfloat16", 1)
    return q, randn((1, heads, seq, d), "bfloat16", 2), randn((1, heads, seq, d), "bfloat16", 3)


@pytest.mark.parametrize("causal, align, seq_k, overlap, shared", [
    (False, "top_left", 256, False, False), (True, "top_left", 256, False, False),
    (True, "bottom_right", 333, False, False), (False, "top_left", 256, True, False),
    (True, "bottom_right", 333, True, False), (False, "top_left", 256, True, True),
    (True, "bottom_right", 333, True, True)])
def test_counters_left_zero_and_every_tile_computed(sim_target, causal, align, seq_k, overlap,
                                                    shared):
    # shared: the tile boundary as a step of the K/V loop (shared_boundary)
    fa = FlashAttentionWgmma(head_dim=64, dtype=ws.BFloat16, causal=causal, dynamic_tiles=True,
                             causal_align=align, overlap_tiles=overlap, shared_boundary=shared)
    q, k, v = inputs()
    k, v = (randn((1, 4, seq_k, 64), "bfloat16", i) for i in (2, 3))
    o = np.full_like(q, np.nan)
    tiles = np.zeros(2, np.int32)
    for _ in range(2):                           # the second launch finds the counters zero
        launch(fa, q, k, v, o, tiles)
        assert tiles.tolist() == [0, 0]
    want = attention.reference(*(to_float64(x) for x in (q, k, v)), causal=causal,
                               causal_align=align)
    got = to_float64(o)
    assert np.isfinite(got).all()
    assert np.abs(got - want).max() < 2e-2


@pytest.mark.parametrize("overlap_tiles, shared", [(False, False), (True, False), (True, True)])
def test_the_counter_decides_the_tiles_after_the_first(sim_target, overlap_tiles, shared):
    # 4 heads x 2 row blocks = 8 tiles on SIM_CTAS = 3 CTAs: CTA c computes tile c, then claims.
    # A claim counter already past the last tile leaves tiles 3.. unwritten (NaN), so the
    # kernel reads it; the retire count is then reset with it. With overlap_tiles the consumers
    # learn it from the second Q buffer (b = -1) at the first tile's boundary (with
    # shared_boundary: the flat loop's first boundary runs the last P V alone and ends)
    fa = FlashAttentionWgmma(head_dim=64, dtype=ws.BFloat16, dynamic_tiles=True,
                             overlap_tiles=overlap_tiles, shared_boundary=shared)
    q, k, v = inputs()
    o = np.full_like(q, np.nan)
    tiles = np.array([100, 0], np.int32)
    ctas = launch(fa, q, k, v, o, tiles)
    assert ctas == SIM_CTAS == 3 and tiles.tolist() == [0, 0]
    done = [not np.isnan(to_float64(o[0, t // 2, 128 * (t % 2):128 * (t % 2 + 1)])).any()
            for t in range(8)]
    assert done == [True, True, True] + [False] * 5


def test_linear_order_is_the_one_cta_grids(sim_target):
    # the host-side twin of linear_tile: causal tiles longest first per batch-head (head_group
    # None: bands of one), which is the one-CTA grid's block order
    from warpstage.lang.sched import tile_coords
    heads, n_m = 3, 4
    order = []
    for t in range(heads * n_m):
        bh, j, _ = tile_coords(t, heads, n_m, "M", 1)
        order.append((bh, n_m - 1 - j))
    assert order == [(bh, m) for bh in range(heads) for m in reversed(range(n_m))]


def test_kernel_checks_the_counter_argument(sim_target):
    fa = FlashAttentionWgmma(head_dim=64, dtype=ws.BFloat16, dynamic_tiles=True)
    q, k, v = inputs(1, 128)
    with pytest.raises(ws.OperandError, match="tiles"):
        launch(fa, q, k, v, empty_like(q), None)
    with pytest.raises(ws.OperandError, match="tiles"):
        launch(FlashAttentionWgmma(head_dim=64, dtype=ws.BFloat16), q, k, v, empty_like(q),
               np.zeros(2, np.int32))
    with pytest.raises(ws.OperandError, match="int32"):
        launch(fa, q, k, v, empty_like(q), np.zeros(2, np.float32))


def test_op_path_and_a_counter_pair_per_call(sim_target):
    torch = pytest.importorskip("torch")
    fa = FlashAttentionWgmma(head_dim=64, dtype=ws.BFloat16, causal=True, dynamic_tiles=True)
    q, k, v = (torch.from_numpy(to_float64(x)).to(torch.bfloat16) for x in inputs(2, 200))
    o = torch.empty_like(q)
    pair = torch.zeros(2, dtype=torch.int32)
    attention.launch_wgmma(fa, q, k, v, o, tiles=pair)
    assert pair.tolist() == [0, 0]                  # left zero by the kernel
    # CPU tensors (no streams): a fresh pair per call
    a, b = attention.tile_counters(q), attention.tile_counters(q)
    assert a is not b and a.tolist() == b.tolist() == [0, 0]
    want = attention.reference(*(x.double().numpy() for x in (q, k, v)), causal=True)
    assert np.abs(o.double().numpy() - want).max() < 2e-2


@pytest.mark.gpu
@pytest.mark.parametrize("causal", [False, True])
def test_device_claims_and_resets(causal):
    # 2 x 16 heads x 8 row blocks = 256 tiles on the H200's 132 SMs: 124 tiles are claimed
    # from the counter; three launches in a row, each against SDPA, the counters zero after
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a GPU")
    fa = FlashAttentionWgmma(head_dim=128, dtype=ws.BFloat16, causal=causal, dynamic_tiles=True,
                             fma_select=True, rescale_threshold=8.0)
    g = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(2, 16, 1024, 128, generator=g).to(torch.bfloat16).cuda()
               for _ in range(3))
    ref = torch.nn.functional.scaled_dot_product_attention(q.double(), k.double(), v.double(),
                                                           is_causal=causal)
    pair = torch.zeros(2, dtype=torch.int32, device="cuda")
    for _ in range(3):                  # one pair, three launches: each leaves it zero
        o = torch.full_like(q, float("nan"))
        attention.launch_wgmma(fa, q, k, v, o, tiles=pair)
        torch.cuda.synchronize()
        assert pair.tolist() == [0, 0]
        assert torch.isfinite(o).all()
        assert ((o.double() - ref).norm() / ref.norm()).item() < 1e-2


@pytest.mark.gpu
def test_device_op_path_with_the_field_as_a_default(monkeypatch):
    # what a default flip would run: WGMMA_DEFAULTS[(128, True)] with persistent +
    # dynamic_tiles through ws.ops.flash_attention; the first call records a plan (the kept
    # counter pair at a constant address), the later ones launch it where plans run; each against SDPA, the
    # counters zero after each
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a GPU")
    from warpstage.ops import attention_plan, op_plans
    fields = dict(attention_plan.WGMMA_DEFAULTS[(128, True)], persistent=True,
                  dynamic_tiles=True)
    monkeypatch.setitem(attention_plan.WGMMA_DEFAULTS, (128, True), fields)
    attention_plan.wgmma_policy_for.cache_clear()
    op_plans.clear()
    try:
        g = torch.Generator().manual_seed(7)
        q, k, v = (torch.randn(2, 16, 1024, 128, generator=g).to(torch.bfloat16).cuda()
                   for _ in range(3))
        ref = torch.nn.functional.scaled_dot_product_attention(q.double(), k.double(),
                                                               v.double(), is_causal=True)
        for _ in range(3):
            o = ws.ops.flash_attention(q, k, v, causal=True)
            torch.cuda.synchronize()
            assert ((o.double() - ref).norm() / ref.norm()).item() < 1e-2
    finally:
        attention_plan.wgmma_policy_for.cache_clear()
        op_plans.clear()


@pytest.mark.gpu
def test_device_two_streams_at_once():
    # the default D=128 causal kernel (dynamic_tiles) on two streams at the same time, many
    # calls each: a counter pair shared between the streams' launches would hand tiles of one
    # launch to the other's CTAs (wrong or unwritten rows); each call's own pair cannot
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a GPU")
    g = torch.Generator().manual_seed(11)
    qkv = [tuple(torch.randn(4, 16, 1024, 128, generator=g).to(torch.bfloat16).cuda()
                 for _ in range(3)) for _ in range(2)]
    refs = [torch.nn.functional.scaled_dot_product_attention(
        *(x.double() for x in t), is_causal=True) for t in qkv]
    streams = [torch.cuda.Stream(), torch.cuda.Stream()]
    ws.ops.flash_attention(*qkv[0], causal=True)            # compiled before the race
    torch.cuda.synchronize()
    outs = [[], []]
    for _ in range(8):
        for i in (0, 1):
            with torch.cuda.stream(streams[i]):
                outs[i].append(ws.ops.flash_attention(*qkv[i], causal=True))
    torch.cuda.synchronize()
    for i in (0, 1):
        for o in outs[i]:
            assert torch.isfinite(o).all()
            assert ((o.double() - refs[i]).norm() / refs[i].norm()).item() < 1e-2


@pytest.mark.gpu
def test_device_one_counter_pair_per_stream():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a GPU")
    q = torch.empty(1, device="cuda")
    a = attention.tile_counters(q)
    assert attention.tile_counters(q) is a and a.tolist() == [0, 0]
    with torch.cuda.stream(torch.cuda.Stream()):
        b = attention.tile_counters(q)
    assert b is not a and b.data_ptr() != a.data_ptr()
