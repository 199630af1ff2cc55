"""``ws.ops.matmul`` / ``ws.ops.scaled_matmul`` used wrongly, as a new user would: policy
arguments of the wrong type (checked before the plan computes with them, so no TypeError from
its arithmetic), FP8 without scales, the errors of the FP8 op naming that op, an empty batch
(tests/ops/test_matmul_host.py: tensors in host memory on the 'cuda' target, and on two
devices, on the pretend GPU). Each error is the op's own:
what, expected vs got, the user's line, a ``Fix:`` line, and no warpstage frame
(tests/misuse_kit.py)."""
import numpy as np
import pytest

import warpstage as ws
from dtypes_helper import randn
from misuse_kit import raised

pytestmark = pytest.mark.filterwarnings("ignore::warpstage.RecompileWarning")
ml_dtypes = pytest.importorskip("ml_dtypes")
E4M3 = ml_dtypes.float8_e4m3fn


def bf16(*shape, seed=1):
    return randn(shape, "bfloat16", seed)


@pytest.mark.parametrize("kwargs, exc, words", [
    (dict(tile_n="128"), ValueError, ("ws.ops.Matmul's tile_n", "got '128'")),
    (dict(tile_m="64"), ValueError, ("ws.ops.Matmul's tile_m", "got '64'")),
    (dict(num_stages="4"), ValueError, ("ws.ops.Matmul's num_stages", "got '4'")),
    (dict(group="8"), ValueError, ("ws.ops.Matmul's group", "got '8'")),
    (dict(raster=0), ValueError, ("ws.ops.Matmul's raster", "got 0")),
    (dict(schedule=None), ValueError, ("ws.ops.Matmul's schedule", "got None")),
    (dict(cluster=2), ValueError, ("ws.ops.Matmul's cluster", "got 2")),
    (dict(splits="2"), ws.ArgumentError, ("ws.ops.matmul: splits='2'", "expected an int")),
    (dict(tile_n=64, splits=[2]), ws.ArgumentError, ("splits=[2]",)),
], ids=str)
@pytest.mark.usefixtures("sim_target")
def test_policy_arguments_of_the_wrong_type(kwargs, exc, words):
    a, b = bf16(40, 24), bf16(24, 72, seed=2)
    raised(exc, __file__, "marker: policy", lambda: ws.ops.matmul(a, b, **kwargs),  # marker: policy
           *words)


@pytest.mark.usefixtures("sim_target")
def test_an_empty_batch_is_an_empty_result():
    """0 batches of (4, 8) @ (8, 16): a (0, 4, 16) result, as torch.matmul gives (the batch
    count is not taken as 1 because it is falsy)."""
    c = ws.ops.matmul(bf16(0, 4, 8), bf16(0, 8, 16))
    assert c.shape == (0, 4, 16) and c.dtype == bf16(1).dtype
    out = np.zeros((0, 4, 16), np.float32)
    assert ws.ops.matmul(bf16(0, 4, 8), bf16(8, 16), out=out, out_dtype=np.float32) is out


def fp8(*shape, seed=3):
    return (np.random.default_rng(seed).standard_normal(shape)).astype(E4M3)


@pytest.mark.parametrize("marker, call, words", [
    ("s-none", lambda a, b, s: ws.ops.scaled_matmul(a, b),  # marker: s-none
     ("ws.ops.scaled_matmul: scale_a is missing (None)", "Fix: scale_a=np.ones((), np.float32)")),
    ("s-one", lambda a, b, s: ws.ops.scaled_matmul(a, b, s),  # marker: s-one
     ("scale_b is missing",)),
    ("s-out", lambda a, b, s: ws.ops.scaled_matmul(a, b, s, s, out=bf16(8, 15)),  # marker: s-out
     ("ws.ops.scaled_matmul: out is (8, 15) bf16", "expected shape (8, 64)")),
    ("s-odt", lambda a, b, s: ws.ops.scaled_matmul(a, b, s, s, out_dtype=np.int8),  # marker: s-odt
     ("ws.ops.scaled_matmul: out_dtype=", "leave it out: bfloat16)")),
    ("s-splits", lambda a, b, s: ws.ops.scaled_matmul(a, b, s, s, splits="4"),  # marker: s-splits
     ("ws.ops.scaled_matmul: splits='4'",)),
    ("s-tile", lambda a, b, s: ws.ops.scaled_matmul(a, b, s, s, tile_n=(128,)),  # marker: s-tile
     ("ws.ops.Matmul's tile_n", "got (128,)")),
], ids=lambda v: v if isinstance(v, str) else "")
@pytest.mark.usefixtures("sim_target")
def test_scaled_matmul_errors_name_scaled_matmul(marker, call, words):
    a, b, s = fp8(8, 32), fp8(64, 32).T, np.ones((), np.float32)
    msg = raised((ws.ArgumentError, ValueError), __file__, "marker: " + marker, lambda: call(a, b, s), *words)
    assert not msg.startswith("ws.ops.matmul:"), msg


@pytest.mark.usefixtures("sim_target")
def test_bias_is_the_bias_epilogue_and_an_error_beside_another_epilogue():
    """``bias=`` (as torch.nn.functional.linear's) is ``epilogue=ws.ops.Bias(bias)``: the same
    result in the simulator; with another epilogue it is the op's error naming both ways."""
    a, b = bf16(40, 24), bf16(24, 72, seed=2)
    bias = np.linspace(-1, 1, 72).astype(np.float32)
    got = ws.ops.matmul(a, b, bias=bias)
    ref = ws.ops.matmul(a, b, epilogue=ws.ops.Bias(bias))
    plain = ws.ops.matmul(a, b)
    np.testing.assert_array_equal(np.asarray(got, np.float32), np.asarray(ref, np.float32))
    assert not np.array_equal(np.asarray(got, np.float32), np.asarray(plain, np.float32))
    raised(ws.ArgumentError, __file__, "marker: bias twice",
           lambda: ws.ops.matmul(a, b, bias=bias, epilogue=ws.ops.BiasGelu(bias)),  # marker: bias twice
           "bias= with epilogue=BiasGelu(...)", "epilogue=ws.ops.BiasGelu(bias)")


@pytest.mark.parametrize("op", ["matmul", "scaled_matmul", "flash_attention"])
def test_a_tensor_that_requires_grad_is_an_error_naming_no_backward(op):
    """No backward is registered for the ops: a tensor that requires grad in grad mode (an
    nn.Linear weight outside torch.no_grad()) is the op's error, before any work; under
    torch.no_grad() that check passes and the call goes on to its own checks."""
    torch = pytest.importorskip("torch")
    w = torch.zeros(64, 32, dtype=torch.bfloat16, requires_grad=True)
    x = torch.zeros(16, 32, dtype=torch.bfloat16)
    q = torch.zeros(1, 1, 64, 32, dtype=torch.bfloat16, requires_grad=True)
    one = torch.tensor(1.0)
    calls = {"matmul": lambda: ws.ops.matmul(x, w.T),  # marker: grad matmul
             "scaled_matmul": lambda: ws.ops.scaled_matmul(x, w.T, one, one),  # marker: grad scaled_matmul
             "flash_attention": lambda: ws.ops.flash_attention(q, q, q)}  # marker: grad flash_attention
    name = "q" if op == "flash_attention" else "b"
    raised(ws.ArgumentError, __file__, "marker: grad " + op, calls[op],
           f"ws.ops.{op}: {name} (shape", "requires grad", "no backward", "torch.no_grad()",
           f"{name}.detach()")
    if op == "scaled_matmul":
        with torch.no_grad(), pytest.raises(ws.ArgumentError) as ei:
            calls[op]()                          # bf16 operands: now its dtype error
        assert "requires grad" not in str(ei.value) and "float8" in str(ei.value)


@pytest.mark.parametrize("which", ["a", "b", "bias"])
@pytest.mark.usefixtures("sim_target")
def test_an_out_over_a_tensor_the_kernel_reads_is_an_error(which):
    """The persistent CTAs read A's and B's tiles (and every row reads the bias) while other
    tiles are stored: an ``out`` sharing their memory computed garbage without a word."""
    buf = bf16(64, 64)
    a, b = (buf, bf16(64, 64, seed=2)) if which != "b" else (bf16(64, 64, seed=2), buf)
    if which == "bias":
        a, b = bf16(64, 64, seed=3), bf16(64, 64, seed=2)
        out = np.zeros((64, 64), np.float32)
        call = lambda: ws.ops.matmul(a, b, out=out, out_dtype=np.float32,  # marker: over bias
                                     bias=out[0])
        name, marker = "bias", "over bias"
    else:
        call = lambda: ws.ops.matmul(a, b, out=buf)  # marker: over ab
        name, marker = which, "over ab"
    raised(ws.ArgumentError, __file__, "marker: " + marker, call,
           f"ws.ops.matmul: out shares memory with {name}", "Fix: out=np.empty((64, 64)")


@pytest.mark.usefixtures("sim_target")
def test_residual_of_out_in_place_and_interleaved_views_are_not_overlaps():
    """``Residual(out)`` reads each element where it is written (in place, allowed), and two
    column halves of one buffer share no element: both give the result of separate tensors."""
    a, b = bf16(40, 24), bf16(24, 72, seed=2)
    res = np.linspace(-1, 1, 40 * 72, dtype=np.float32).reshape(40, 72)
    want = np.asarray(ws.ops.matmul(a, b, out_dtype=np.float32,
                                    epilogue=ws.ops.Residual(res.copy(), 0.5)))
    out = res.copy()
    ws.ops.matmul(a, b, out=out, out_dtype=np.float32, epilogue=ws.ops.Residual(out, 0.5))
    np.testing.assert_array_equal(out, want)
    buf = np.zeros((40, 24 + 72), a.dtype)
    buf[:, :24] = a
    ws.ops.matmul(buf[:, :24], b, out=buf[:, 24:])
    np.testing.assert_array_equal(np.asarray(buf[:, 24:], np.float32),
                                  np.asarray(ws.ops.matmul(a, b), np.float32))


@pytest.mark.parametrize("what", ["bias", "out", "residual", "scaled out"])
def test_a_bias_out_or_epilogue_tensor_that_requires_grad_is_an_error(what):
    """Not only a and b: a bias, an ``out=`` or an epilogue's tensor that requires grad would
    leave the result outside autograd as silently (no formula runs through them)."""
    torch = pytest.importorskip("torch")
    x, w = torch.zeros(16, 32, dtype=torch.bfloat16), torch.zeros(64, 32, dtype=torch.bfloat16)
    g = dict(requires_grad=True)
    bias, out = torch.zeros(64, **g), torch.zeros(16, 64, dtype=torch.bfloat16, **g)
    res = torch.zeros(16, 64, **g)
    one, x8 = torch.tensor(1.0), torch.zeros(16, 32, dtype=torch.float8_e4m3fn)
    epi = ws.ops.Residual(res)
    calls = {"bias": lambda: ws.ops.matmul(x, w.T, bias=bias),  # marker: grad bias
             "out": lambda: ws.ops.matmul(x, w.T, out=out),  # marker: grad out
             "residual": lambda: ws.ops.matmul(x, w.T, epilogue=epi),  # marker: grad residual
             "scaled out": lambda: ws.ops.scaled_matmul(  # marker: grad scaled out
                 x8, x8.T, one, one, out=out[:, :16])}
    name = {"bias": "bias", "out": "out", "residual": "residual",
            "scaled out": "out"}[what]
    raised(ws.ArgumentError, __file__, "marker: grad " + what, calls[what],
           f"{name} (shape", "requires grad", "no backward", "torch.no_grad()")


@pytest.mark.parametrize("where", ["a", "out", "bias", "scale_a"])
@pytest.mark.usefixtures("sim_target")
def test_a_numpy_scalar_where_a_tensor_is_expected_is_named_as_a_scalar(where):
    """``np.float32(1.0)`` has an array interface but is a number: the error says so (it read
    "scale_a is a float32; expected a float32 tensor"), and a scale's Fix makes it a tensor."""
    a, b, s = bf16(40, 24), bf16(24, 72, seed=2), np.float32(1.0)
    a8, b8, one = fp8(8, 32), fp8(64, 32).T, np.ones((), np.float32)
    calls = {"a": lambda: ws.ops.matmul(s, b),  # marker: np scalar a
             "out": lambda: ws.ops.matmul(a, b, out=s),  # marker: np scalar out
             "bias": lambda: ws.ops.matmul(a, b, bias=s),  # marker: np scalar bias
             "scale_a": lambda: ws.ops.scaled_matmul(a8, b8, s, one)}  # marker: np scalar scale_a
    msg = raised(ws.ArgumentError, __file__, "marker: np scalar " + where, calls[where],
                 "a numpy scalar np.float32(1.0) (a number, not an array)")
    if where == "scale_a":
        assert "Fix: scale_a=np.asarray(1.0, np.float32)" in msg, msg


def test_shares_memory_reads_the_strides_both_ways():
    """The overlap test of ``out=``: exact on interleaved views, and a negative stride reaches
    below the view's first element (a reversed view of a buffer covers its first row)."""
    from warpstage.ops.matmul_operands import shares_memory
    from warpstage.runtime.tensors import as_tensor_arg as arg
    buf = np.zeros((8, 8), np.float32)
    assert shares_memory(arg(buf[::-1]), arg(buf[:1]))
    assert shares_memory(arg(buf[2:5]), arg(buf[4:6]))
    assert not shares_memory(arg(buf[:, :4]), arg(buf[:, 4:]))
    assert not shares_memory(arg(buf[:4]), arg(buf[4:]))
    assert not shares_memory(arg(buf[:0]), arg(buf))
