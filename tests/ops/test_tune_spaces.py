"""The spaces ws.ops.matmul(tune=True) and ws.ops.flash_attention(tune=True) search
(warpstage/ops/tune_spaces.py): sizes, the shipped default first, every candidate a policy the
kernel accepts; the tuned launch functions run in the simulator; tune=True refuses policy
arguments."""
import ml_dtypes
import numpy as np
import pytest

import warpstage as ws
from warpstage.core.static_key import static_key
from warpstage.ops import tune_spaces as ts
from warpstage.ops.attention import wgmma_policy_for
from warpstage.ops.matmul_host import choose_config, policy_for

BF16 = ml_dtypes.bfloat16


class ByIndexTimer:
    """Fake times: the later a candidate in the space, the faster."""

    def __init__(self, space):
        self.space = space

    def measure(self, run, config, warmup, rep):
        run()
        return 10.0 - self.space.index(config)


@pytest.mark.parametrize("shape", [(4096, 4096, 4096), (256, 512, 128), (64, 4096, 4096)])
def test_the_gemm_space_has_the_shipped_default_first_and_only_valid_policies(shape):
    m, n, k = shape
    a, b = np.zeros((m, k), BF16), np.zeros((k, n), BF16)
    space = ts.matmul_space(a, b)
    assert len(space) >= 24 and len(set(space)) == len(space)
    tile_m, tile_n, group, _ = choose_config(m, n, k, 1, 2)
    assert (space[0].tile_m, space[0].tile_n, space[0].group) == (tile_m, tile_n, group)
    for c in space:                  # tile_m None: the host's choice (ping-pong: 128 rows)
        rows = c.tile_m or choose_config(m, n, k, 1, 2, c.schedule, c.tile_n)[0]
        policy_for(ws.BFloat16, ws.BFloat16, "K", "MN", False, c.tile_n, c.num_stages,
                   c.raster, c.group, c.schedule, tile_m=rows)     # raises for an invalid one


@pytest.mark.parametrize("d, least", [(64, 12), (128, 12), (192, 6), (256, 4)])
@pytest.mark.parametrize("causal", [False, True])
def test_the_attention_space_has_the_default_first_and_distinct_valid_policies(d, least,
                                                                              causal):
    q = np.zeros((1, 2, 128, d), BF16)
    space = ts.attention_space(q, q, q, causal)
    assert len(space) >= least and space[0] == ts.AttentionTuning(())
    keys = [static_key(wgmma_policy_for(d, "BFloat16", causal, 0.1, short=True,
                                        overrides=c.fields)) for c in space]
    assert len(set(keys)) == len(keys)
    assert keys[0] == static_key(wgmma_policy_for(d, "BFloat16", causal, 0.1, short=True))
    assert any(dict(c.fields).get("tile_n") == 64 for c in space)


def test_shape_classes_round_extents_up_to_powers_of_two():
    a, b = np.zeros((300, 64), BF16), np.zeros((64, 130), BF16)
    assert ts.matmul_shape_class(a, b)[-3:] == (512, 256, 64)
    assert ts.matmul_shape_class(a, b) == ts.matmul_shape_class(np.zeros((400, 64), BF16),
                                                              np.zeros((64, 200), BF16))
    q = np.zeros((1, 3, 100, 64), BF16)
    assert ts.attention_shape_class(q, q, q, True)[-4:] == (4, 128, True, 128)


def test_tune_true_refuses_policy_arguments():
    a, b = np.zeros((64, 64), BF16), np.zeros((64, 64), BF16)
    with pytest.raises(ws.ArgumentError, match=r"(?s)tune=True alone.*Fix: drop"):
        ws.ops.matmul(a, b, tune=True, tile_n=128)
    with pytest.raises(ws.ArgumentError, match=r"(?s)both float16 or both bfloat16.*Fix:"):
        ws.ops.matmul(a.astype(np.float32), b, tune=True)         # not tuned first
    q = np.zeros((1, 1, 64, 64), BF16)
    with pytest.raises(ws.ArgumentError,
                       match=r"(?s)tune=True with mma; .*tune=True alone.*Fix: drop"):
        ws.ops.flash_attention(q, q, q, tune=True, mma="mma.sync")
    with pytest.raises(ws.ArgumentError, match=r"tune=True with tile_n, num_stages; "):
        ws.ops.flash_attention(q, q, q, tune=True, tile_n=64, num_stages=2)
    with pytest.raises(ws.ArgumentError, match=r"(?s)tune='yes' \(str\); expected True .* or "
                                               r"False\..*Fix: tune=True, or leave it out"):
        ws.ops.flash_attention(q, q, q, tune="yes")


@pytest.mark.parametrize("op", ["matmul", "scaled_matmul", "flash_attention"])
def test_a_tune_value_that_is_no_bool_is_named_as_such(op):
    """``tune='fast'`` without policy arguments: the error is about ``tune`` (it named policy
    arguments no one passed); with some, it names those that were given."""
    a, q, one = np.zeros((64, 64), BF16), np.zeros((1, 1, 64, 64), BF16), np.ones((), np.float32)
    f8 = np.zeros((64, 64), E4M3)
    call = {"matmul": lambda **kw: ws.ops.matmul(a, a, **kw),
            "scaled_matmul": lambda **kw: ws.ops.scaled_matmul(f8, f8.T, one, one, **kw),
            "flash_attention": lambda **kw: ws.ops.flash_attention(q, q, q, **kw)}[op]
    with pytest.raises(ws.ArgumentError) as e:
        call(tune="fast")
    assert str(e.value).startswith(f"ws.ops.{op}: tune='fast' (str); expected True (choose the "
                                   "policy per shape class with ws.autotune) or False.")
    assert "policy arguments" not in str(e.value) and "Fix: tune=True, or leave it out" in \
        str(e.value)
    with pytest.raises(ws.ArgumentError, match=rf"ws.ops.{op}: tune=True with tile_n, "
                                               r"num_stages; expected tune=True alone"):
        call(tune=True, tile_n=128, num_stages=2)


def _small_tuner(fn, space, key):
    return ws.autotune(space, key=key, timer=ByIndexTimer(space), jobs=1,
                       progress=False)(fn)


def test_the_tuned_gemm_launch_runs_the_chosen_policy_in_the_simulator(tmp_path, monkeypatch):
    monkeypatch.setenv("WARPSTAGE_CACHE_DIR", str(tmp_path))
    ws.set_target("sim")
    try:
        rng = np.random.default_rng(0)
        a = rng.standard_normal((128, 64)).astype(BF16)
        b = rng.standard_normal((64, 128)).astype(BF16)
        space = [ts.MatmulTuning(128, 2, 4), ts.MatmulTuning(64, 2, 8, "N")]
        tuned = _small_tuner(ts.tuned_matmul, space, ts.matmul_shape_class)
        c = tuned(a, b)
        assert tuned.report.best.config == space[1]
        ref = a.astype(np.float64) @ b.astype(np.float64)
        np.testing.assert_allclose(c.astype(np.float64), ref, rtol=2e-2, atol=2e-1)
    finally:
        ws.set_target(None)


def test_an_attention_candidates_fields_reach_the_wgmma_kernel_in_the_simulator(tmp_path,
                                                                                monkeypatch):
    from warpstage.ops.attention import reference
    ws.set_target("sim")
    try:
        rng = np.random.default_rng(1)
        q, k, v = (rng.standard_normal((1, 1, 80, 64)).astype(BF16) for _ in range(3))
        config = ts.AttentionTuning((("num_stages", 3), ("persistent", False), ("tile_n", 64)))
        got = ts.tuned_attention(q, k, v, True, config=config)
        np.testing.assert_allclose(got.astype(np.float64), reference(q, k, v, True),
                                   atol=3e-2, rtol=3e-2)
        fa = wgmma_policy_for(64, "BFloat16", True, 0.125, short=True, overrides=config.fields)
        assert (fa.tile_n, fa.num_stages, fa.persistent) == (64, 3, False)
        from warpstage.tune.capture import capture_launches
        launched = capture_launches(lambda: ts.tuned_attention(q, k, v, True, config=config))
        default = wgmma_policy_for(64, "BFloat16", True, 0.125, short=True)
        assert launched.launches[0].dynamic_smem == fa.smem_bytes != default.smem_bytes
    finally:
        ws.set_target(None)


E4M3 = ml_dtypes.float8_e4m3fn


@pytest.mark.parametrize("shape", [(4096, 4096, 4096), (128, 4096, 4096), (3, 200, 520)])
def test_the_fp8_space_is_the_gemm_space_on_the_fp8_ring(shape):
    m, n, k = shape
    a, w = np.zeros((m, k), E4M3), np.zeros((n, k), E4M3)
    one = np.ones((), np.float32)
    space = ts.scaled_matmul_space(a, w.T, one, one)
    assert len(space) >= 24 and len(set(space)) == len(space)
    rows, tile_n, group, _ = choose_config(m, n, k, 1, 2, k_step=128)
    assert (space[0].tile_m, space[0].tile_n, space[0].group) == (rows, tile_n, group)
    for c in space:
        p = policy_for(ws.Float8E4M3FN, ws.BFloat16, "K", "K", False, c.tile_n, c.num_stages,
                       c.raster, c.group, c.schedule,
                       tile_m=c.tile_m or 128)   # raises if invalid (None: ping-pong, 128)
        assert p.tile_k == 128
    # the fp8 stage has bf16's bytes: the same depth
    deepest = max(c.num_stages for c in space if c.tile_n == 256 and c.tile_m in (None, rows))
    assert deepest == policy_for(ws.BFloat16, ws.BFloat16, "K", "MN", False, 256,
                                 tile_m=rows).num_stages
    key = ts.scaled_matmul_shape_class(a, w.T, one, one)
    assert key[0] == "scaled_matmul" and key != ts.scaled_matmul_shape_class(
        a, w.T, np.ones((m, 1), np.float32), one)


def test_small_m_spaces_add_k_splits():
    # 2 SMs in the simulator: a 128 x 128 output has 1 tile < 2 SMs; 256 x 256 has 4
    small = ts.matmul_space(np.zeros((100, 512), BF16), np.zeros((512, 128), BF16))
    large = ts.matmul_space(np.zeros((256, 512), BF16), np.zeros((512, 256), BF16))
    assert {c.splits for c in small} == {None, 1, 2, 4, 8}
    assert {c.tile_m for c in small} == {None, 64, 128}
    assert {c.splits for c in large} == {None}
    assert {c.tile_m for c in large} == {None, choose_config(256, 256, 512, 1, 2)[0]}
    for c in small:
        policy_for(ws.BFloat16, ws.BFloat16, "K", "MN", False, c.tile_n, c.num_stages,
                   c.raster, c.group, c.schedule, tile_m=c.tile_m or 128)


def test_the_tuned_fp8_launch_runs_the_chosen_policy_in_the_simulator(tmp_path, monkeypatch):
    monkeypatch.setenv("WARPSTAGE_CACHE_DIR", str(tmp_path))
    ws.set_target("sim")
    try:
        rng = np.random.default_rng(0)
        a = (rng.standard_normal((2, 70, 256)) * 2).astype(E4M3)
        w = (rng.standard_normal((2, 96, 256)) * 2).astype(E4M3)
        sa, sb = np.full((), 0.5, np.float32), np.ones((1,), np.float32)
        space = [ts.MatmulTuning(128, 2, 4), ts.MatmulTuning(64, 2, 8, "N", splits=2)]
        tuned = _small_tuner(ts.tuned_scaled_matmul, space, ts.scaled_matmul_shape_class)
        c = tuned(a, np.swapaxes(w, 1, 2), sa, sb, None, np.float32)
        assert tuned.report.best.config == space[1]
        ref = 0.5 * np.einsum("bmk,bnk->bmn", a.astype(np.float64), w.astype(np.float64))
        np.testing.assert_allclose(c, ref, rtol=1e-5, atol=1e-3)
    finally:
        ws.set_target(None)


def test_scaled_matmul_tune_true_refuses_policy_arguments():
    a, one = np.zeros((64, 64), E4M3), np.ones((), np.float32)
    with pytest.raises(ws.ArgumentError, match=r"(?s)ws.ops.scaled_matmul: tune=True.*Fix: drop"):
        ws.ops.scaled_matmul(a, a.T, one, one, tune=True, splits=2)
    with pytest.raises(ws.ArgumentError, match=r"(?s)float8_e4m3fn.*Fix:"):   # not tuned first
        ws.ops.scaled_matmul(a.astype(BF16), a.T, one, one, tune=True)
