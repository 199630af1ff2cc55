"""ws.ops.matmul in the CPU simulator against float64 numpy: odd M, N, K (tails in every
dimension, K < 64, several K steps and several tiles per persistent CTA), all four transposes
through strides, batched and broadcast operands, the output dtypes, ``out=``, the epilogues,
copies of layouts TMA cannot read, and the argument errors. ``CASES`` and ``make_inputs`` are
shared with tests/ops/test_matmul_gpu.py. Small tiles (tile_n=64) keep the simulator quick."""
import warnings

import numpy as np
import pytest

import warpstage as ws
from dtypes_helper import numpy_dtype, randn, to_float64
from warpstage.ops import matmul_host

pytestmark = [pytest.mark.usefixtures("sim_target"),
              pytest.mark.filterwarnings("ignore::warpstage.RecompileWarning")]
TOL = {"float16": 2e-3, "bfloat16": 1e-2, "float32": 2e-3}   # ||C - ref|| / ||ref||


def make_operands(m, n, k, dtype, ta=False, tb=False, batch=None, seed=0):
    """A (M, K) and B (K, N) numpy arrays (``ta`` / ``tb``: stored transposed, i.e. M- / K-
    contiguous views); batched with a leading ``batch``."""
    pre = () if batch is None else (batch,)
    a = randn(pre + ((k, m) if ta else (m, k)), dtype, seed)
    b = randn(pre + ((n, k) if tb else (k, n)), dtype, seed + 1)
    return (np.swapaxes(a, -1, -2) if ta else a), (np.swapaxes(b, -1, -2) if tb else b)


def relative_error(c, ref) -> float:
    c = to_float64(c)
    return float(np.linalg.norm(c - ref) / max(np.linalg.norm(ref), 1e-30))


def reference(a, b):
    return to_float64(a) @ to_float64(b)


# (M, N, K, dtype, A transposed, B transposed, batch, out dtype, policy overrides)
CASES = [
    (1, 64, 8, "bfloat16", False, False, None, None, {}),              # M = 1, K = 8
    (17, 72, 24, "float16", False, False, None, "float32", {}),        # N tail, K = 24
    (130, 200, 136, "bfloat16", False, False, None, None, {}),         # 2 x 4 tiles, 3 K steps
    (104, 96, 80, "bfloat16", True, False, None, None, {}),            # A M-major
    (70, 136, 72, "float16", False, True, None, None, {}),             # B K-major (a weight)
    (152, 64, 64, "bfloat16", True, True, None, "float32", {}),        # both transposed
    (40, 128, 72, "bfloat16", False, False, 3, None, {}),              # batched
    (56, 300, 40, "float16", True, True, None, "bfloat16", dict(tile_n=128)),
    (64, 256, 64, "bfloat16", False, False, None, None, dict(tile_n=256, raster="N")),
    # ping-pong: 8 tiles on 2 CTAs (2 per warpgroup); 5 tiles (an idle turn); both transposed
    (130, 200, 136, "bfloat16", False, False, None, None, dict(schedule="pingpong")),
    (520, 64, 64, "float16", False, True, None, "float32", dict(schedule="pingpong")),
    (256, 128, 200, "bfloat16", True, True, 2, None, dict(schedule="pingpong", tile_n=128)),
    # split-K: 4 K steps in 3 asked ranges (2 of 2 steps), B K-major; 9 steps in 3 ranges of 3,
    # batched, A M-major, f32 out; an N tail
    (17, 72, 200, "bfloat16", False, True, None, None, dict(splits=3)),
    (40, 64, 520, "float16", True, False, 2, "float32", dict(splits=4)),
    # 64-row tiles (one consumer warpgroup; M <= 64 picks them): 3 x 2 tiles with M and N
    # tails, A M-major; batched with B K-major; split-K with f32 out; 128-row tiles at M <= 64
    (152, 104, 136, "bfloat16", True, False, None, None, dict(tile_m=64)),
    (33, 136, 72, "float16", False, True, 3, None, dict(tile_m=64, tile_n=128)),
    (64, 64, 520, "bfloat16", True, True, None, "float32", dict(tile_m=64, splits=3)),
    (17, 72, 200, "bfloat16", False, True, None, None, dict(tile_m=128)),
    # 64 x 128 tiles, the plan's choice at M = 65-256 (docs/matmul.md, "Choosing the tile by
    # shape"): 4 row blocks with an M tail, an N tail, a K tail, B K-major (a weight); and each
    # split count on them: 4 K steps in 2 ranges, 9 in 4 asked (3 of 3, f32 out, A M-major),
    # 16 in 8 (2 each)
    (200, 136, 72, "bfloat16", False, True, None, None, dict(tile_m=64, tile_n=128)),
    (130, 264, 200, "float16", False, True, None, None, dict(tile_m=64, tile_n=128, splits=2)),
    (96, 136, 520, "bfloat16", True, True, None, "float32",
     dict(tile_m=64, tile_n=128, splits=4)),
    (65, 128, 1000, "bfloat16", False, True, None, None, dict(tile_m=64, tile_n=128, splits=8)),
    # 2-CTA clusters with TMA multicast (B shared by M-adjacent tiles with (2, 1), A by
    # N-adjacent ones with (1, 2)); one cluster of the two simulated CTAs walks every cluster
    # tile: M and N tails (with M = 17 the second CTA's tile lies wholly past M), each
    # transpose, batched, split-K, ping-pong, 64-row tiles
    (130, 200, 136, "bfloat16", False, False, None, None, dict(cluster=(2, 1))),
    (17, 72, 24, "float16", False, False, None, "float32", dict(cluster=(2, 1))),
    (70, 136, 72, "float16", False, True, None, None, dict(cluster=(1, 2))),
    (104, 96, 80, "bfloat16", True, False, None, None, dict(cluster=(1, 2))),
    (40, 128, 72, "bfloat16", True, True, 3, None, dict(cluster=(2, 1))),
    (17, 72, 200, "bfloat16", False, True, None, None, dict(splits=3, cluster=(1, 2))),
    (130, 200, 136, "bfloat16", False, True, None, None, dict(schedule="pingpong",
                                                              cluster=(2, 1))),
    (152, 104, 136, "bfloat16", True, False, None, None, dict(tile_m=64, cluster=(1, 2))),
]


def ids(case):
    m, n, k, dt, ta, tb, batch, odt, pol = case
    extra = ",".join(f"{k}={v}" for k, v in pol.items())
    return (f"{m}x{n}x{k}-{dt}{'-At' if ta else ''}{'-Bt' if tb else ''}"
            f"{f'-b{batch}' if batch else ''}{f'-to-{odt}' if odt else ''}"
            + (f"-{extra}" if extra else ""))


@pytest.mark.parametrize("case", CASES, ids=ids)
def test_matches_numpy(case):
    m, n, k, dtype, ta, tb, batch, odt, pol = case
    a, b = make_operands(m, n, k, dtype, ta, tb, batch)
    pol = {"tile_n": 64, **pol}
    with warnings.catch_warnings():
        warnings.simplefilter("error", ws.ops.MatmulCopyWarning)      # none of these copy
        c = ws.ops.matmul(a, b, out_dtype=None if odt is None else numpy_dtype(odt), **pol)
    want_dtype = numpy_dtype(odt or dtype)
    assert c.dtype == want_dtype and c.shape == ((batch,) if batch else ()) + (m, n)
    assert relative_error(c, reference(a, b)) < TOL[odt or dtype]


@pytest.mark.parametrize("cluster", [(2, 1), (1, 2)])
def test_cluster_with_an_epilogue(cluster):
    a, b = make_operands(70, 136, 48, "bfloat16", seed=5)
    bias = randn((136,), "float32", 6)
    y = reference(a, b) + to_float64(bias)
    got = ws.ops.matmul(a, b, epilogue=ws.ops.BiasSilu(bias), out_dtype=np.float32, tile_n=64,
                        cluster=cluster)
    assert relative_error(got, y / (1 + np.exp(-y))) < 1e-5


def test_cluster_shapes_the_kernel_does_not_have_are_a_policy_error():
    a, b = make_operands(64, 64, 64, "bfloat16")
    with pytest.raises(ValueError, match=r"cluster: expected \(1, 1\), \(2, 1\) .*got \(2, 2\)"):
        ws.ops.matmul(a, b, tile_n=64, cluster=(2, 2))


def test_out_and_broadcast_batch():
    a, b = make_operands(33, 64, 40, "bfloat16", batch=2, seed=4)
    w = randn((40, 64), "bfloat16", 9)                                # 2-D B, broadcast
    out = np.full((2, 33, 64), np.nan, np.float32)
    got = ws.ops.matmul(a, w, out=out, out_dtype=ws.Float32, tile_n=64)
    assert got is out and relative_error(out, reference(a, w)) < TOL["float32"]
    with pytest.raises(ws.ArgumentError, match=r"out is \(2, 33, 64\) f32; expected shape"):
        ws.ops.matmul(a, w, out=out, tile_n=64)                       # bf16 result wanted


def test_layouts_tma_cannot_read_are_copied():
    a = randn((50, 30), "float16", 1)              # rows of 60 bytes: not a multiple of 16
    b = randn((30, 17), "float16", 2)[:, ::1]
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        c = ws.ops.matmul(a, b, tile_n=64)
    said = [str(w.message) for w in seen if w.category is ws.ops.MatmulCopyWarning]
    assert len(said) == 2 and "TMA cannot read a (shape (50, 30)" in said[0]
    assert "TMA cannot read b (shape (30, 17)" in said[1]
    assert c.shape == (50, 17) and c.flags.c_contiguous
    assert relative_error(c, reference(a, b)) < TOL["float16"]


def test_epilogues():
    a, b = make_operands(70, 64, 48, "bfloat16", seed=5)
    bias = randn((64,), "float32", 6)
    y = reference(a, b) + to_float64(bias)
    gelu = 0.5 * y * (1 + np.tanh(np.sqrt(2 / np.pi) * (y + 0.044715 * y ** 3)))
    got = ws.ops.matmul(a, b, epilogue=ws.ops.BiasGelu(bias), out_dtype=np.float32, tile_n=64)
    assert relative_error(got, gelu) < 1e-5
    got = ws.ops.matmul(a, b, epilogue=ws.ops.BiasSilu(bias), out_dtype=np.float32, tile_n=64)
    assert relative_error(got, y / (1 + np.exp(-y))) < 1e-5
    res = randn((70, 64), "float32", 7)
    got = ws.ops.matmul(a, b, epilogue=ws.ops.Residual(res, 0.5), out_dtype=np.float32,
                        tile_n=64)
    assert relative_error(got, 0.5 * reference(a, b) + res) < 1e-5

    class Scale(ws.ops.Epilogue):                   # the docs' five-line user epilogue
        def __init__(self, s):
            self.s = s

        @ws.jit
        def apply(self, x, row, col, operands):
            return x * self.s
    got = ws.ops.matmul(a, b, epilogue=Scale(-2.0), out_dtype=np.float32, tile_n=64)
    assert relative_error(got, -2.0 * reference(a, b)) < 1e-6


def test_split_k_with_an_epilogue_and_out():
    a, b = make_operands(20, 64, 136, "bfloat16", seed=11)
    bias = randn((64,), "float32", 12)
    y = reference(a, b) + to_float64(bias)
    out = np.full((20, 64), np.nan, np.float32)
    got = ws.ops.matmul(a, b, out=out, out_dtype=np.float32, epilogue=ws.ops.BiasSilu(bias),
                        tile_n=64, splits=3)
    assert got is out and relative_error(out, y / (1 + np.exp(-y))) < 1e-5
    with pytest.raises(ws.ArgumentError, match="splits=0; expected an int >= 1"):
        ws.ops.matmul(a, b, splits=0)


def test_empty_and_k_zero():
    a, b = make_operands(5, 64, 16, "bfloat16")
    assert ws.ops.matmul(a[:0], b).shape == (0, 64)
    c = ws.ops.matmul(a[:, :0], b[:0], out_dtype=np.float32, tile_n=64)
    assert c.shape == (5, 64) and not c.any()


def test_nan_filled_shared_memory_and_races(monkeypatch):
    import importlib
    monkeypatch.setitem(importlib.import_module("warpstage.sim.run").run.__kwdefaults__,
                        "smem_fill", 0xFF)
    ws.set_target("sim", races=True)
    try:
        a, b = make_operands(90, 136, 104, "bfloat16", seed=8)
        c = ws.ops.matmul(a, b, tile_n=64, num_stages=2)
        c2 = ws.ops.matmul(a, b, tile_n=64, num_stages=3, schedule="pingpong")
    finally:
        ws.set_target("sim")
    assert relative_error(c, reference(a, b)) < TOL["bfloat16"]
    assert relative_error(c2, reference(a, b)) < TOL["bfloat16"]


@pytest.mark.parametrize("args, kwargs, match", [
    (((4, 8), (9, 8)), {}, "do not chain"),
    (((4, 8, 2), (8, 4)), {}, "do not chain"),
    (((2, 4, 8), (3, 8, 4)), {}, "do not chain"),
    (((8,), (8, 4)), {}, "expected 2 dimensions"),
    (((4, 8), (8, 4)), dict(out_dtype="int8"), "out_dtype='int8'"),
])
def test_argument_errors(args, kwargs, match):
    a, b = (randn(s, "bfloat16", 1) for s in args)
    with pytest.raises(ws.ArgumentError, match=match):
        ws.ops.matmul(a, b, **kwargs)


def test_dtype_errors():
    a = randn((4, 8), "float32", 1)
    with pytest.raises(ws.ArgumentError, match="expected both float16 or both bfloat16"):
        ws.ops.matmul(a, a.T)
    with pytest.raises(ws.ArgumentError, match="is a list"):
        ws.ops.matmul([[1.0]], randn((1, 8), "bfloat16", 1))
    with pytest.raises(ws.ArgumentError, match="bias is shape"):
        ws.ops.matmul(randn((4, 8), "bfloat16", 1), randn((8, 64), "bfloat16", 2),
                      epilogue=ws.ops.BiasGelu(randn((63,), "float32", 3)))


@pytest.mark.parametrize("fields, match", [
    (dict(tile_n=96), "tile_n"), (dict(num_stages=1), "num_stages"),
    (dict(num_stages=5), "shared memory"), (dict(a_major="M"), "a_major"),
    (dict(cluster=(2, 2)), "M-adjacent tiles sharing B"), (dict(mma_regs=240), "65536"),
    (dict(dtype=ws.Float32), "dtype"), (dict(raster="K"), "raster"),
    (dict(schedule="pingpong"), "tile_n: expected 64 or 128 with schedule='pingpong'"), (dict(schedule="ws"), "schedule"),
    (dict(split_k=True), "it writes f32 partial sums"), (dict(tile_m=32), "tile_m"),
    (dict(tile_m=64, schedule="pingpong", tile_n=128), "128-row tile")])
def test_policy_errors(fields, match):
    """Each is an OperandError (a ValueError) in the house form: what, expected vs got, the
    caller's line, a Fix."""
    with pytest.raises(ValueError, match=match) as info:
        ws.ops.Matmul(**fields)  # marker: policy line
    assert isinstance(info.value, ws.OperandError)
    msg = str(info.value)
    assert msg.startswith("ws.ops.Matmul's ") and "\nFix: " in msg, msg
    assert f'{__file__}", line ' in msg, msg


def test_config_choice_fills_the_gpu():
    choose = matmul_host.choose_config
    assert choose(4096, 4096, 4096, 1, 132) == (128, 256, 4, 1)    # 512 tiles: group 4
    assert choose(8192, 8192, 8192, 1, 132) == (128, 256, 8, 1)    # 2048 tiles: group 8
    tm, tn, _, splits = choose(128, 4096, 4096, 1, 132)            # 64 tiles of 64 x 128
    assert (tm, tn, splits) == (64, 128, 1)
    assert choose(128, 128256, 4096, 1, 132)[3] == 1               # 501 tiles: no split
    tm, tn, _, splits = choose(16, 4096, 4096, 1, 132, "pingpong")
    assert (tm, splits) == (128, 1) and tn in (64, 128)            # ping-pong: 128 rows
    assert choose(16, 4096, 100, 1, 132, splits=7)[3] == 2         # 2 K steps: 2 ranges
    assert choose(16, 4096, 4096, 1, 132, tile_m=128)[0] == 128    # given: kept
    assert choose(16, 4096, 4096, 1, 132, tile_n=256)[1] == 256


@pytest.mark.parametrize("bad", ["gelu", object(), ws.ops.BiasGelu])
def test_an_epilogue_that_is_not_an_epilogue_instance_is_an_argument_error(bad):
    a = np.zeros((4, 8), np.float16)
    with pytest.raises(ws.ArgumentError, match=r"epilogue=.*expected None or an instance"):
        ws.ops.matmul(a, a.T.copy(), epilogue=bad)


@pytest.mark.parametrize("tile_n", [100, -64, 32, True])
def test_a_tile_width_the_kernel_lacks_is_named_by_the_op(tile_n):
    a = np.zeros((4, 8), np.float16)
    with pytest.raises(ValueError, match=r"(?s)ws.ops.Matmul's tile_n: expected one of .*Fix:"):
        ws.ops.matmul(a, a.T.copy(), tile_n=tile_n)
