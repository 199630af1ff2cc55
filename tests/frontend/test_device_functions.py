"""@ws.jit device functions: template-like specialization on static arguments, methods of
static config objects (whatever the receiver is named), mixed objects through calls and loops."""
import re
import functools
from typing import NamedTuple

import numpy as np
import pytest

import warpstage as ws

pytestmark = pytest.mark.usefixtures("sim_target")


class Policy:
    """A static policy object with per-role device code (DESIGN §1 in miniature)."""

    def __init__(self, producer_add=100, consumer_mul=3):
        self.producer_add = producer_add
        self.consumer_mul = consumer_mul

    @ws.jit
    def produce(self, out, i):
        out[i] = ws.Int32(i) + self.producer_add

    @ws.jit
    def consume(this, out, i):                 # the receiver need not be named self
        out[i] = ws.Int32(i) * this.consumer_mul


@ws.kernel
def roles(policy, out: ws.Tensor):
    t = ws.arch.thread_idx()[0]
    if ws.arch.warp_idx() < 1:                 # dynamic: both branches traced
        policy.produce(out, t)
    else:
        policy.consume(out, t)


@ws.kernel
def roles_self(self, out: ws.Tensor):
    t = ws.arch.thread_idx()[0]
    if ws.arch.warp_idx() < 1:
        self.produce(out, t)
    else:
        self.consume(out, t)


@ws.kernel
def roles_static(policy: ws.Static[Policy], out: ws.Tensor):
    t = ws.arch.thread_idx()[0]
    if ws.arch.warp_idx() < 1:
        policy.produce(out, t)
    else:
        policy.consume(out, t)


@pytest.mark.parametrize("kern", [roles, roles_self, roles_static])
def test_static_receiver_methods_inside_dynamic_if(kern):
    out = np.zeros(64, np.int32)
    kern[1, 64](Policy(), out)
    t = np.arange(64)
    np.testing.assert_array_equal(out, np.where(t < 32, t + 100, t * 3))


def test_receiver_variants_give_identical_ptx():
    T = ws.Tensor[ws.Int32, 1]
    ptx = [ws.compile(k, Policy(), T).ptx for k in (roles, roles_self, roles_static)]
    # the entry's symbol: the kernel's name, with a suffix when another kernel of that name
    # compiled earlier in the process (jit/names.py)
    norm = [re.sub(rf"(?<!\w){k.__name__}(_\d+)?(?![A-Za-z])", "K", p)
            for p, k in zip(ptx, (roles, roles_self, roles_static))]
    assert norm[0] == norm[1] == norm[2]


@ws.jit
def scaled(x, factor):
    return x * factor


@ws.kernel
def two_instantiations(out: ws.Tensor, v: ws.Int32):
    out[0] = scaled(v, 2)
    out[1] = scaled(v, 3)
    out[2] = scaled(v, 2)


def test_each_static_key_is_one_instantiation():
    out = np.zeros(3, np.int32)
    two_instantiations[1, 32](out, 5)
    np.testing.assert_array_equal(out, [10, 15, 10])
    ck = ws.compile(two_instantiations, ws.Tensor[ws.Int32, 1], ws.Int32)
    # factor=2 and factor=3 are two specializations; the third call reuses the first
    assert ck.ir.count("func @scaled") == 2
    assert ck.ir.count("func.call") == 3


@ws.struct
class Counter:
    step: ws.Static[int]
    value: ws.Int32
    phase: ws.Int32


@ws.jit
def advance(c: Counter) -> Counter:
    return Counter(c.step, c.value + c.step, c.phase ^ 1)


@ws.kernel
def carry_struct(out: ws.Tensor, n: ws.Int32):
    c = Counter(3, 0, 0)
    for _ in range(n):
        c = advance(c)
    out[0] = c.value
    out[1] = c.phase


def test_struct_through_dynamic_loop_and_device_function():
    out = np.zeros(2, np.int32)
    carry_struct[1, 32](out, 7)
    np.testing.assert_array_equal(out, [21, 1])
    ck = ws.compile(carry_struct, ws.Tensor[ws.Int32, 1], ws.Int32)
    assert "scf.for" in ck.ir and "func @advance" in ck.ir


def test_closures_and_partials_capture_static_values():
    offset = 7

    @ws.jit
    def add_offset(x):
        return x + offset

    add_ten = functools.partial(scaled, factor=10)

    @ws.kernel
    def k(out: ws.Tensor, v: ws.Int32):
        out[0] = add_offset(v)
        out[1] = add_ten(v)

    out = np.zeros(2, np.int32)
    k[1, 32](out, 4)
    np.testing.assert_array_equal(out, [11, 40])


def test_dynamic_value_where_static_needed_names_its_origin():
    @ws.jit
    def needs_static(n):
        return ws.static_range(n)

    @ws.kernel
    def k(out: ws.Tensor, n: ws.Int32):
        for i in needs_static(n):
            out[i] = 1

    with pytest.raises(ws.BindingTimeError) as ei:
        k[1, 32](np.zeros(4, np.int32), 4)
    msg = str(ei.value)
    assert "parameter 'n'" in msg and "ws.Static" in msg


@ws.struct
class Problem:
    scale: ws.Static[int]        # static: part of the key
    x: ws.Tensor                 # dynamic leaves: pointer, shape, strides
    n: ws.Int32


class Args(NamedTuple):
    x: object
    bias: float


class CuteStyle:
    """A mixed object written for CuTe DSL: the alias names of the value protocol."""

    def __init__(self, tag, value):
        self.tag = tag
        self.value = value

    def __extract_mlir_values__(self):
        return [self.value]

    def __new_from_mlir_values__(self, values):
        return CuteStyle(self.tag, values[0])


@ws.kernel
def mixed_params(p: Problem, a, c, out: ws.Tensor):
    i = ws.arch.thread_idx()[0]
    if i < p.n:
        out[i] = p.x[i] * p.scale + a.x[i] + a.bias + c.value * c.tag


def test_mixed_host_parameters_struct_namedtuple_and_cute_aliases():
    import numpy as np
    x = np.arange(40, dtype=np.float32)
    y = np.ones(40, np.float32)
    out = np.zeros(40, np.float32)
    mixed_params[1, 64](Problem(3, x, 40), Args(y, 0.5), CuteStyle(2, 10), out)
    np.testing.assert_allclose(out, x * 3 + 1 + 0.5 + 20)
    table = ws.explain(mixed_params, Problem(3, x, 40), Args(y, 0.5), CuteStyle(2, 10), out,
                       print_table=False)
    assert "p.x.data" not in table and "x.data:!ptr<f32, global>" in table
    mixed_params[1, 64](Problem(3, x, 20), Args(y, 1.5), CuteStyle(2, 1), out)   # new leaves only
    assert mixed_params.trace_count == 1
    mixed_params[1, 64](Problem(4, x, 40), Args(y, 0.5), CuteStyle(2, 10), out)  # static change
    assert mixed_params.trace_count == 2


def test_protocol_object_without_static_key_keys_its_other_attributes():
    import numpy as np
    out = np.zeros(40, np.float32)
    x = np.zeros(40, np.float32)
    mixed_params[1, 64](Problem(3, x, 40), Args(x, 0.0), CuteStyle(2, 10), out)
    assert out[0] == 20
    mixed_params[1, 64](Problem(3, x, 40), Args(x, 0.0), CuteStyle(5, 10), out)   # tag is static
    assert out[0] == 50


# binding-time rule 1 at a @ws.jit call: ws.Static[T] parameters and ws.Static(v) arguments

@ws.jit
def _times_tile(x, tile: ws.Static[int]):
    return x * tile


@ws.kernel
def _static_arg_kernel(x: ws.Tensor[ws.Float32, 1], n: ws.Int32, mode: ws.Static[str]):
    i = ws.arch.thread_idx()[0]
    if mode == "literal":
        x[i] = _times_tile(x[i], 2)
    elif mode == "numpy":
        x[i] = _times_tile(x[i], np.int64(4))
    elif mode == "wrapped":
        x[i] = _times_tile(x[i], ws.Static(5))
    elif mode == "dynamic":
        x[i] = _times_tile(x[i], n)
    elif mode == "wrapped dynamic":
        x[i] = _times_tile(x[i], ws.Static(n))
    else:
        x[i] = _times_tile(x[i], 3.5)


@pytest.mark.parametrize("mode,want", [("literal", 2.0), ("numpy", 4.0), ("wrapped", 5.0)])
def test_a_static_parameter_takes_static_values(sim_target, mode, want):
    x = np.ones(32, np.float32)
    _static_arg_kernel[1, 32](x, 3, mode)
    assert (x == want).all()


@pytest.mark.parametrize("mode,how", [("dynamic", r"is annotated ws.Static\[int\]"),
                                      ("wrapped dynamic", r"is given as ws.Static\(\.\.\.\)")])
def test_a_static_parameter_refuses_a_dynamic_value_at_the_call(sim_target, mode, how):
    x = np.ones(32, np.float32)
    with pytest.raises(ws.BindingTimeError, match=(
            rf"(?s)parameter 'tile' of @ws.jit function _times_tile {how} \(static.*got a "
            r"dynamic value \(a dynamic Int32\).*x\[i\] = _times_tile\(x\[i\], .*Fix: pass a "
            r"Python value known while compiling")):
        _static_arg_kernel[1, 32](x, 3, mode)


def test_a_static_parameter_checks_the_type_of_its_value(sim_target):
    x = np.ones(32, np.float32)
    with pytest.raises(ws.ArgumentError, match=(
            r"(?s)calling @ws.jit function _times_tile: parameter 'tile' is annotated "
            r"ws.Static\[int\] but got a float \(3.5\).*_times_tile\(x\[i\], 3.5\).*Fix: pass an "
            r"int")):
        _static_arg_kernel[1, 32](x, 3, "float")
