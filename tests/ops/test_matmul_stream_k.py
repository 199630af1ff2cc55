"""Stream-K ``ws.ops.matmul`` (``Matmul(stream_k=True)``, ``ws.sched.StreamKScheduler``, the
fix-up in matmul_consumer.py): the scheduler's units cover every (tile, K step) once with the
contributors and workspace slots the fix-up reads; in the simulator, against float64 numpy, at
small odd shapes whose tiles are split over two and three CTAs (tails in M, N and K, batched,
both tile heights, transposes, every epilogue and output dtype), data-parallel and stream-K
units in one CTA, the counters back at zero after each call, the workspace reused, two calls
bitwise equal; and the plan's choice at the LLM shapes (matmul_plan.py)."""
import importlib

import numpy as np
import pytest

import warpstage as ws
from dtypes_helper import randn, to_float64
from warpstage.lang.sched import (stream_k_contributors, stream_k_range, stream_k_slot,
                                  stream_k_unit, stream_k_units)
from warpstage.ops import matmul_host
from warpstage.ops.matmul_config import choose_stream_k, explain
from warpstage.ops.matmul_plan import (estimate_stream_k_us, estimate_us, plan,
                                       stream_k_tiles)

from test_matmul_sim import make_operands, reference, relative_error

pytestmark = [pytest.mark.filterwarnings("ignore::warpstage.RecompileWarning"),
              pytest.mark.filterwarnings("error::warpstage.ops.MatmulCopyWarning")]


def walk(ctas, tiles, k_tiles, sk_tiles):
    """{(tile, K step): CTA} over every CTA's units, checking each partial unit's
    contributors and slot on the way; returns it and the most contributors of a tile."""
    cover, slots, most = {}, set(), 1
    for c in range(ctas):
        for j in range(stream_k_units(c, ctas, tiles, k_tiles, sk_tiles)):
            t, k0, count = stream_k_unit(c, j, ctas, tiles, k_tiles, sk_tiles)
            assert count >= 1
            for q in range(k0, k0 + count):
                assert (t, q) not in cover, (c, j, t, q)
                cover[(t, q)] = c
            if count < k_tiles:
                assert t < sk_tiles
                first, last = stream_k_contributors(t, ctas, k_tiles, sk_tiles)
                assert first <= c <= last and first < last
                most = max(most, last - first + 1)
                slot = stream_k_slot(c, t, ctas, k_tiles, sk_tiles)
                assert slot not in slots and 2 * c <= slot < 2 * c + 2
                slots.add(slot)
    for t in range(sk_tiles):
        first, last = stream_k_contributors(t, ctas, k_tiles, sk_tiles)
        assert sorted({cover[(t, q)] for q in range(k_tiles)}) == list(range(first, last + 1))
    return cover, most


@pytest.mark.parametrize("ctas", [1, 2, 3, 5, 7, 132])
@pytest.mark.parametrize("tiles", [1, 3, 7, 40, 133, 300])
@pytest.mark.parametrize("k_tiles", [1, 2, 7, 64])
def test_units_cover_every_k_step_once(ctas, tiles, k_tiles):
    for sk in sorted({0, stream_k_tiles(tiles, ctas, k_tiles), min(tiles, ctas), tiles}):
        if sk and sk * k_tiles < ctas:
            continue                    # empty ranges: the host never launches it
        cover, _ = walk(ctas, tiles, k_tiles, sk)
        assert len(cover) == tiles * k_tiles


def k_steps(c, ctas, tiles, k_tiles, sk_tiles) -> list:
    """CTA ``c``'s K steps in the order it runs them (its units in order)."""
    out = []
    for j in range(stream_k_units(c, ctas, tiles, k_tiles, sk_tiles)):
        _, k0, count = stream_k_unit(c, j, ctas, tiles, k_tiles, sk_tiles)
        out.extend(range(k0, k0 + count))
    return out


@pytest.mark.parametrize("ctas, tiles, k_tiles", [
    (132, 512, 64),        # 4096^3, 128 x 256: 116 stream-K tiles, 0.88 of a tile per CTA
    (132, 512, 172),       # 4096 x 4096 x 11008: measured 0.79x data-parallel in tile order
    (132, 86, 64),         # 256 x 11008 x 4096: every tile split, 0.65 of a tile per CTA
    (132, 2048, 128),      # 8192^3
    (132, 140, 64),        # a thin last wave: one full wave more (1.06 tiles per CTA)
    (7, 40, 7), (5, 3, 8)])
def test_ctas_stay_in_k_step(ctas, tiles, k_tiles):
    """At time step T (one K step per CTA) CTA c reads K step T + d with d = 0 in the head it
    takes first, d = k_tiles - r_c (its range's r_c iterations, modulo k_tiles) in the tail and
    the tiles after it, and 0 <= d <= k_tiles - r_c in a range inside one tile: every d within
    [0, the largest k_tiles - r_c], and at most three values when every range holds a whole
    tile. So the CTAs on the tiles of one A or B panel share its K slabs in L2 as a
    data-parallel wave does (docs/matmul.md, "Stream-K"). In tile order CTA c read K step
    T + c r mod k_tiles: as many offsets as CTAs, over the whole of K."""
    sk = stream_k_tiles(tiles, ctas, k_tiles)
    assert sk
    steps = [k_steps(c, ctas, tiles, k_tiles, sk) for c in range(ctas)]
    ranges = [stream_k_range(c, ctas, k_tiles, sk) for c in range(ctas)]
    widest = max((-(end - begin)) % k_tiles for begin, end in ranges)
    whole = all(end - begin >= k_tiles for begin, end in ranges)
    for t in range(max(map(len, steps))):
        now = {(s[t] - t) % k_tiles for s in steps if t < len(s)}
        assert max(now) <= widest, (t, sorted(now), widest)
        assert len(now) <= 3 or not whole, (t, sorted(now))


def test_stream_k_tiles_rule():
    assert stream_k_tiles(512, 132, 64) == 116         # 4096^3, 128 x 256: the last wave
    assert stream_k_tiles(2048, 132, 128) == 68        # 8192^3: 68 of 132 SMs' worth
    assert stream_k_tiles(140, 132, 64) == 8 + 132     # a thin last wave: one full wave more
    assert stream_k_tiles(86, 132, 64) == 86           # 256 x 11008, 128 x 256: all of them
    assert stream_k_tiles(528, 132, 64) == 0           # full waves
    assert stream_k_tiles(32, 132, 64) == 0            # fewer than half as many tiles as SMs
    # the rule keeps a tile's partials to at most three CTAs
    for tiles in (66, 86, 116, 140, 200, 512, 2048):
        sk = stream_k_tiles(tiles, 132, 64)
        assert walk(132, tiles, 64, sk)[1] <= 3


@pytest.fixture
def launches(monkeypatch):
    """The policies launched (``matmul_host.launch`` spied on)."""
    seen = []
    real = matmul_host.launch

    def spy(p, *args, **kw):
        seen.append(p)
        return real(p, *args, **kw)
    monkeypatch.setattr(matmul_host, "launch", spy)
    return seen


def counters_zero():
    return all(not np.any(c) for _, c in matmul_host._FIXUP.values())


# (M, N, K, dtype, A transposed, B transposed, batch, out dtype, CTAs, overrides,
#  most contributors of a tile)
CASES = [
    # 2 x 3 tiles of 128 x 64 on 4 CTAs, 7 K steps: the last 2 tiles split over 2 CTAs each
    # (4 full tiles first); f32 out, an M and N tail
    (200, 184, 448, "bfloat16", False, False, None, "float32", 4, dict(tile_n=64), 2),
    # 3 tiles on 5 CTAs: tile 1 over 3 CTAs; a K tail (6 steps, the last of 8)
    (300, 64, 328, "float16", False, False, None, None, 5, dict(tile_n=64), 3),
    # 7 tiles on 3 CTAs: 1 data-parallel wave + 4 stream-K tiles (a thin wave: one more);
    # A M-major, B K-major
    (56, 443, 256, "bfloat16", True, True, None, "bfloat16", 3, dict(tile_n=64), 2),
    # batched, 64-row tiles (one consumer warpgroup), 128-wide
    (100, 136, 200, "bfloat16", False, False, 2, None, 3, dict(tile_m=64, tile_n=128), 2),
]


@pytest.mark.usefixtures("sim_target")
@pytest.mark.parametrize("m, n, k, dtype, ta, tb, batch, out_dtype, ctas, kw, most", CASES)
def test_stream_k_matches_numpy(monkeypatch, launches, m, n, k, dtype, ta, tb, batch,
                                out_dtype, ctas, kw, most):
    monkeypatch.setattr(matmul_host, "SIM_CTAS", ctas)
    a, b = make_operands(m, n, k, dtype, ta, tb, batch, seed=m + n)
    c = ws.ops.matmul(a, b, out_dtype=out_dtype, stream_k=True, **kw)
    p, = launches
    assert p.stream_k
    tiles = -(-m // p.tile_m) * -(-n // p.tile_n) * (batch or 1)
    k_tiles = -(-k // p.tile_k)
    sk = stream_k_tiles(tiles, ctas, k_tiles)
    assert sk and walk(ctas, tiles, k_tiles, sk)[1] == most      # the case is what it says
    ref = reference(a, b)
    assert c.shape == ref.shape
    assert relative_error(c, ref) < (2e-6 if out_dtype == "float32" else 1e-2)
    assert counters_zero()


@pytest.mark.usefixtures("sim_target")
def test_stream_k_argument_errors_name_the_call():
    a, b = make_operands(64, 64, 64, "bfloat16")
    with pytest.raises(ws.ArgumentError, match="stream_k=True with cluster=\\(2, 1\\)"):
        ws.ops.matmul(a, b, stream_k=True, cluster=(2, 1))
    with pytest.raises(ws.ArgumentError, match="stream_k=1; expected None"):
        ws.ops.matmul(a, b, stream_k=1)


@pytest.mark.usefixtures("sim_target")
def test_stream_k_epilogues_determinism_and_reuse(monkeypatch, launches):
    """BiasGelu and Residual see the whole sum (a non-linear epilogue on a partial would be
    wrong); two calls are bitwise equal; the workspace is one allocation across calls and the
    counters are zero after each."""
    monkeypatch.setattr(matmul_host, "SIM_CTAS", 5)
    a, b = make_operands(300, 64, 328, "bfloat16", seed=5)
    bias = randn((64,), "float32", 6)
    y = reference(a, b) + to_float64(bias)
    gelu = 0.5 * y * (1 + np.tanh(np.sqrt(2 / np.pi) * (y + 0.044715 * y ** 3)))
    one = ws.ops.matmul(a, b, epilogue=ws.ops.BiasGelu(bias), out_dtype=np.float32,
                        tile_n=64, stream_k=True)
    assert relative_error(one, gelu) < 1e-5 and counters_zero()
    buffers = dict(matmul_host._FIXUP)
    two = ws.ops.matmul(a, b, epilogue=ws.ops.BiasGelu(bias), out_dtype=np.float32,
                        tile_n=64, stream_k=True)
    assert np.array_equal(one.view(np.uint32), two.view(np.uint32))
    assert all(matmul_host._FIXUP[key][0] is ws_ for key, (ws_, _) in buffers.items())
    res = randn((300, 64), "float32", 7)
    got = ws.ops.matmul(a, b, epilogue=ws.ops.Residual(res, 0.5), out_dtype=np.float16,
                        tile_n=64, stream_k=True)
    assert relative_error(got, 0.5 * reference(a, b) + res) < 2e-3
    assert counters_zero()
    assert all(p.stream_k for p in launches) and len(launches) == 3
    # stream-K and data-parallel agree to f32 rounding (their sums are ordered differently)
    dp = ws.ops.matmul(a, b, epilogue=ws.ops.BiasGelu(bias), out_dtype=np.float32,
                       tile_n=64, stream_k=False)
    assert not launches[-1].stream_k
    assert np.allclose(dp, one, rtol=1e-5, atol=1e-4)


@pytest.mark.usefixtures("sim_target")
def test_fixup_sum_does_not_depend_on_who_adds_it(monkeypatch):
    """The simulator runs CTAs one at a time; in CTA order the last contributor of a tile
    completes its count and adds its own partial from registers, in reverse order the first
    does and reads the last's back from the workspace: the same sum (0 + P[last] + ... +
    P[first]), bitwise, either way, with tiles of two and three contributors."""
    sim_run = importlib.import_module("warpstage.sim.run")
    monkeypatch.setattr(matmul_host, "SIM_CTAS", 5)
    a, b = make_operands(300, 64, 328, "bfloat16", seed=11)      # 3 tiles on 5 CTAs
    forward = ws.ops.matmul(a, b, out_dtype=np.float32, tile_n=64, stream_k=True)

    class BackwardNumpy:                     # numpy, with the grid walked last CTA first
        def __getattr__(self, name):
            return getattr(np, name)

        @staticmethod
        def ndindex(*shape):
            return reversed(list(np.ndindex(*shape)))
    monkeypatch.setattr(sim_run, "np", BackwardNumpy())
    backward = ws.ops.matmul(a, b, out_dtype=np.float32, tile_n=64, stream_k=True)
    assert np.array_equal(forward.view(np.uint32), backward.view(np.uint32))
    assert relative_error(forward, reference(a, b)) < 2e-6 and counters_zero()


@pytest.fixture
def auto_stream_k(monkeypatch):
    """The model's choice with ``STREAM_K_AUTO`` on (it is off by default: measured slower)."""
    from warpstage.ops import matmul_plan
    monkeypatch.setattr(matmul_plan, "STREAM_K_AUTO", True)
    choose_stream_k.cache_clear()
    yield
    choose_stream_k.cache_clear()


def test_stream_k_is_not_picked_by_itself():
    """Session 8 on the H200: stream-K slower at every swept shape, so stream_k=None never
    picks it, where the model would (the next test); stream_k=True still does."""
    sms = 132
    for shape in ((256, 11008, 4096), (8192, 8192, 8192), (4096, 11008, 4096)):
        assert choose_stream_k(*shape, 1, sms) is None
        assert choose_stream_k(*shape, 1, sms, stream_k=True) is not None
    assert "not picked by itself" in explain(256, 11008, 4096)


def test_plan_picks_stream_k_where_the_last_wave_is_partial(auto_stream_k):
    sms = 132
    # 256 x 11008 x 4096: data-parallel 128 x 192 (116 tiles, 88% of a wave; 0.89x cuBLAS)
    assert plan(256, 11008, 4096, 1, sms, (256, 192, 128)) == (128, 192, 1)
    tm, tn, _, sk = choose_stream_k(256, 11008, 4096, 1, sms)
    assert tm == 128 and sk == stream_k_tiles(-(-256 // tm) * -(-11008 // tn), sms, 64) > 0
    assert estimate_stream_k_us(256, 11008, 4096, 1, sms, tm, tn) < estimate_us(
        256, 11008, 4096, 1, sms, 128, 192, 1)
    # 4096^3: 3.88 waves; the fix-up costs about what the last wave's idle SMs lose: kept
    # data-parallel (the GPU script measures both); 8192^3 (15.5 waves) and 4096 x 11008 x
    # 4096 (10.4) take it
    assert choose_stream_k(4096, 4096, 4096, 1, sms) is None
    assert choose_stream_k(8192, 8192, 8192, 1, sms)[:2] == (128, 256)
    assert choose_stream_k(4096, 11008, 4096, 1, sms)[:2] == (128, 256)
    # full waves, small M (fewer tiles than half the SMs), given tiles or splits: never
    assert choose_stream_k(128 * sms, 256, 4096, 1, sms) is None     # one full wave
    assert choose_stream_k(128, 4096, 4096, 1, sms) is None
    assert choose_stream_k(256, 11008, 4096, 1, sms, tile_n=192) is None
    assert choose_stream_k(256, 11008, 4096, 1, sms, stream_k=False) is None
    assert choose_stream_k(256, 11008, 4096, 1, sms, "pingpong") is None
    assert choose_stream_k(8192, 8192, 8192, 1, sms, k_step=128) is None      # fp8: unmeasured
    assert choose_stream_k(8192, 8192, 8192, 1, sms, k_step=128, stream_k=True) is not None
    assert choose_stream_k(256, 11008, 4096, 1, sms, tile_n=256, stream_k=True)[1] == 256


def test_explain_says_which_is_chosen(auto_stream_k):
    text = explain(256, 11008, 4096)
    assert "data-parallel: 128 x 192 tiles" in text and "chosen: stream-K" in text
    assert "172 of 172 split over 132 CTAs" in text          # 128 x 128 tiles, all of them
    assert explain(4096, 4096, 4096).endswith("over 1% faster)")
    assert "no partial wave" in explain(128, 4096, 4096)


def test_stream_k_errors():
    with pytest.raises(ws.ArgumentError, match="stream_k='yes'; expected None"):
        choose_stream_k(256, 11008, 4096, 1, 132, stream_k="yes")
    for kw in (dict(splits=2), dict(schedule="pingpong")):
        with pytest.raises(ws.ArgumentError, match="stream_k=True with schedule=.*Fix: drop"):
            choose_stream_k(256, 11008, 4096, 1, 132, stream_k=True, **kw)
    for bad in (dict(schedule="pingpong", tile_n=128), dict(split_k=True,
                                                           out_dtype=ws.Float32),
                dict(cluster=(2, 1))):
        with pytest.raises(ValueError, match="stream_k"):
            ws.ops.Matmul(stream_k=True, **bad)
