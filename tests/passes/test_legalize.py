"""passes/legalize*.py: every non-primitive op becomes primitives; Python's // and % on floats
equal CPython's bit for bit on the simulator (signed zeros, infinities, NaN, huge and tiny
operands); the backend and the simulator name the pass when handed an op it rewrites."""
import math
import struct

import numpy as np
import pytest

from warpstage import sim
from warpstage.backend import lower
from warpstage.errors import CompilationError, SimulatorError
from warpstage.ir import OPS, Builder, Function, Module, PointerType, f32, f64, i32, u8, u64, \
    verify
from warpstage.ir.ops_wgmma import DESCRIPTOR_ADDRESS_MASK, descriptor_fields
from warpstage.options import CompileOptions
from warpstage.passes.legalize import RULES, legalize

LANES = 32
EDGE = [0.0, -0.0, 1.0, -1.0, 0.1, -0.1, 3.0, -7.5, 2.5, math.inf, -math.inf, math.nan,
        1e300, -1e300, 5e-324, -5e-324, 1e-310, 2.0 ** 53, -(2.0 ** 53) - 2, 1e16 + 2]


def _kernel(arg_types):
    m = Module()
    fn = m.add(Function("k", list(arg_types), is_kernel=True))
    b = Builder(fn.body.block)
    return m, fn.args, b


def _elementwise(kind, t, a, c):
    """[x kind y for x, y in zip(a, c)] computed by the simulator on the legalized module."""
    host = {"f64": np.float64, "f32": np.float32}[t.name]
    n = -(-len(a) // LANES) * LANES
    xs, ys = (np.resize(np.array(v, host), n) for v in (a, c))
    out = np.zeros(n, host)
    m, (pa, pc, po), b = _kernel([PointerType(t, "global")] * 3)
    tid = b.sreg("tid.x", i32)
    i = b.binary("add", b.binary("mul", b.sreg("ctaid.x", i32), b.constant(i32, LANES)), tid)
    x, y = (b.load(b.ptr_offset(p, i)) for p in (pa, pc))
    b.store(b.ptr_offset(po, i), b.binary(kind, x, y))
    b.return_()
    assert legalize(m) == 1
    verify(m)
    mem = sim.Memory()
    sim.run(m, "k", (n // LANES,), (LANES,), [mem.register(v) for v in (xs, ys, out)], mem,
            echo=False)
    return out[:len(a)].tolist()


def _same(got: float, want: float) -> bool:
    if math.isnan(want):
        return math.isnan(got)
    return struct.pack("<d", got) == struct.pack("<d", want)


@pytest.mark.parametrize("kind,py", [("floordiv", lambda x, y: x // y),
                                     ("mod", lambda x, y: x % y)])
def test_float_floordiv_and_mod_equal_python_bit_for_bit(kind, py):
    pairs = [(x, y) for x in EDGE for y in EDGE if y != 0]
    got = _elementwise(kind, f64, [p[0] for p in pairs], [p[1] for p in pairs])
    bad = [(x, y, g, py(x, y)) for (x, y), g in zip(pairs, got) if not _same(g, py(x, y))]
    assert not bad, f"{kind} f64 (a, b, got, python) {bad[:6]}"


def test_float_edge_cases_python_spells_out():
    a = [-0.0, 0.0, -3.0, 3.0, -1e-310, math.inf, 1.0, 7.0]
    c = [5.0, -5.0, math.inf, -math.inf, 1e300, 2.0, 0.1, -0.0]
    q = _elementwise("floordiv", f64, a, c)
    r = _elementwise("mod", f64, a, c)
    assert [struct.pack("<d", v) for v in q[:5]] == \
        [struct.pack("<d", v) for v in (-0.0, -0.0, -1.0, -1.0, -1.0)]
    assert r[:4] == [0.0, -0.0, math.inf, -math.inf] and math.copysign(1, r[1]) < 0
    assert math.isnan(q[5]) and math.isnan(r[5])        # inf // 2.0 and inf % 2.0 are nan
    assert q[6] == 9.0                                  # 1.0 // 0.1, not floor(1.0 / 0.1)
    assert q[7] == -math.inf and math.isnan(r[7])       # b == 0: floor(a / b); fmod gives nan


def test_f32_floordiv_and_mod_equal_python_on_exact_cases():
    vals = [float(np.float32(v)) for v in (0.0, -0.0, 1.5, -1.5, 7.0, -7.0, 0.25, math.inf,
                                           -math.inf, math.nan, 3e38, -1e-45)]
    pairs = [(x, y) for x in vals for y in vals if y != 0]
    for kind, py in (("floordiv", lambda x, y: x // y), ("mod", lambda x, y: x % y)):
        got = _elementwise(kind, f32, [p[0] for p in pairs], [p[1] for p in pairs])
        with np.errstate(over="ignore"):            # Python's f64 result rounded to f32
            want = [float(np.float32(py(x, y))) for x, y in pairs]
        bad = [(x, y, g, w) for (x, y), g, w in zip(pairs, got, want) if not _same(g, w)]
        assert not bad, f"{kind} f32 (a, b, got) {bad[:6]}"


def test_the_rules_cover_exactly_the_legalized_ops():
    assert set(RULES) == {n for n, d in OPS.items() if d.legalized}
    assert {"arith.floordiv", "arith.mod", "wgmma.descriptor", "smem.alloc"} <= set(RULES)


def test_a_module_without_legalized_ops_is_left_as_it_is():
    m, (p,), b = _kernel([PointerType(i32, "global")])
    b.store(p, b.binary("div", b.constant(i32, 7), b.constant(i32, 2)))
    b.return_()
    ops = list(m.kernels[0].body.block.ops)
    assert legalize(m) == 0 and m.kernels[0].body.block.ops == ops


@pytest.mark.parametrize("consumer", ["backend", "simulator"])
def test_a_legalized_op_left_in_the_module_names_the_pass(consumer):
    m, (p, x), b = _kernel([PointerType(i32, "global"), i32])
    b.store(p, b.binary("floordiv", x, x))
    b.return_()
    if consumer == "backend":
        with pytest.raises(CompilationError, match=r"arith.floordiv is not a primitive.*run_passes"):
            lower(m, CompileOptions())
    else:
        mem = sim.Memory()
        with pytest.raises(SimulatorError, match=r"arith.floordiv is not a primitive.*run_passes"):
            sim.run(m, "k", (1,), (32,), [mem.register(np.zeros(1, np.int32)), 3], mem,
                    echo=False)


def test_descriptor_and_allocation_rewrites_compute_the_descriptor_bits():
    m, (out,), b = _kernel([PointerType(u64, "global")])
    tile = b.ptr_cast(b.smem_alloc(2048, 4096), f32)
    fields = dict(lbo=16, sbo=1024, swizzle=128, base_offset=0)
    desc = b.create("wgmma.descriptor", (tile,), fields).result
    b.store(out, desc)
    b.return_()
    assert legalize(m) == 2
    verify(m)
    names = [op.name for op in m.kernels[0].walk()]
    assert "wgmma.descriptor" not in names and "smem.alloc" not in names and "ptr.to_int" in names
    mem = sim.Memory()
    res = np.zeros(1, np.uint64)
    sim.run(m, "k", (1,), (32,), [mem.register(res)], mem, smem_bytes=8192, echo=False)
    assert int(res[0]) == ((2048 & DESCRIPTOR_ADDRESS_MASK) >> 4) | descriptor_fields(**fields)


@pytest.mark.parametrize("stage_elems, const_elems, peeled", [
    (8192, 24576, True),      # a bf16 ring: stage * 16 KB, after a 48 KB region
    (4096, -512, True),       # a negative constant offset (a borrow below the base's field)
    (8, 0, True),             # 16-byte steps: one descriptor unit each
    (4, 0, False),            # 8-byte steps are not whole descriptor units: the full form
])
def test_descriptor_of_an_offset_tile_adds_the_offset_to_the_base_descriptor(
        stage_elems, const_elems, peeled):
    # ring + stage * stage_bytes (+ a constant): the descriptor is the base's plus the offset
    # >> 4, the same bits as masking and shifting the tile's own address, for every stage
    from warpstage.ir import bf16
    m, (out, stage), b = _kernel([PointerType(u64, "global"), i32])
    base = b.ptr_cast(b.smem_alloc(65536, 131072), bf16)
    tile = b.ptr_offset(base, b.constant(i32, const_elems))
    tile = b.ptr_offset(tile, b.binary("mul", stage, b.constant(i32, stage_elems)))
    fields = dict(lbo=16, sbo=1024, swizzle=128, base_offset=0)
    b.store(b.ptr_offset(out, stage),
            b.create("wgmma.descriptor", (tile,), fields).result)
    b.return_()
    legalize(m)
    verify(m)
    to_int = [op for op in m.kernels[0].walk() if op.name == "ptr.to_int"]
    assert len(to_int) == 1
    # peeled: the address taken is the allocation's (the offsets are added to the descriptor)
    assert (to_int[0].operands[0].owner.name != "ptr.offset") == peeled
    stages = 4
    for s in range(stages):
        mem = sim.Memory()
        res = np.zeros(stages, np.uint64)
        sim.run(m, "k", (1,), (32,), [mem.register(res), s], mem, smem_bytes=196608,
                echo=False)
        addr = 65536 + 2 * (const_elems + s * stage_elems)
        want = ((addr & DESCRIPTOR_ADDRESS_MASK) >> 4) | descriptor_fields(**fields)
        assert int(res[s]) == want, (s, hex(int(res[s])), hex(want))


def test_smem_alloc_at_offset_zero_is_the_base_itself():
    m, (out,), b = _kernel([PointerType(u64, "global")])
    b.store(out, b.create("ptr.to_int", (b.smem_alloc(0, 64),)).result)
    b.return_()
    legalize(m)
    assert [op.name for op in m.kernels[0].walk()][:2] == ["nvvm.smem_base", "ptr.to_int"]
    assert m.kernels[0].body.block.ops[0].results[0].type == PointerType(u8, "shared")


@pytest.mark.parametrize("divisor", [1, 3, 8, -3])
def test_signed_floor_ops_by_a_constant_follow_python(divisor):
    values = list(range(-20, 12)) + [2 ** 31 - 1, -2 ** 31, 12345, -98765]
    n = -(-len(values) // LANES) * LANES
    xs = np.resize(np.array(values, np.int32), n)
    q, r = np.zeros(n, np.int32), np.zeros(n, np.int32)
    m, (pa, pq, pr), b = _kernel([PointerType(i32, "global")] * 3)
    i = b.binary("add", b.binary("mul", b.sreg("ctaid.x", i32), b.constant(i32, LANES)),
                 b.sreg("tid.x", i32))
    x, c = b.load(b.ptr_offset(pa, i)), b.constant(i32, divisor)
    b.store(b.ptr_offset(pq, i), b.binary("floordiv", x, c))
    b.store(b.ptr_offset(pr, i), b.binary("mod", x, c))
    b.return_()
    legalize(m)
    names = [op.name for op in m.kernels[0].walk()]
    assert ("arith.xor" in names) == (divisor < 0)     # a positive divisor needs no sign test
    mem = sim.Memory()
    sim.run(m, "k", (n // LANES,), (LANES,), [mem.register(v) for v in (xs, q, r)], mem,
            echo=False)
    assert q[:len(values)].tolist() == [v // divisor for v in values]
    assert r[:len(values)].tolist() == [v % divisor for v in values]
