"""Lowering of the TMA ops: the by-value grid-constant descriptor parameter, the PTX of each op
(coordinates innermost first), a descriptor through a non-inlined device function, the IR
verifier's rules, and ptxas accepting the result for sm_90a."""
import pytest

from warpstage import ir
from warpstage.backend import assemble
from warpstage.ir import Function, PointerType
from warpstage.ir.types import f32, i32, tensormap, u8, u64

from backend_helpers import OPTIONS, KernelBuilder


def tma_kernel(rank=2):
    """A kernel using every TMA op on a rank-``rank`` descriptor; returns (llvm_ir, ptx)."""
    kb = KernelBuilder([tensormap, i32, PointerType(f32, "global")])
    b = kb.b
    desc, x, g = kb.args
    base = b.smem_base(u8)
    tile = b.ptr_cast(base, f32)
    bar = b.ptr_cast(b.ptr_offset(base, b.constant(i32, 8192)), u64)
    coords = [x] + [b.constant(i32, 10 + k) for k in range(rank - 1)]
    box = (8,) * (rank - 1) + (32,)
    b.op("tma.prefetch_descriptor", (desc,))
    b.op("tma.load", (desc, tile, bar, *coords), (), {"box": box, "bytes": 128 * 8 ** (rank - 1)})
    b.op("tma.store", (desc, tile, *coords), (), {"box": box, "bytes": 128 * 8 ** (rank - 1)})
    b.op("tma.commit_group")
    b.op("tma.wait_group", (), (), {"n": 1, "read": True})
    b.op("tma.wait_group", (), (), {"n": 0, "read": False})
    b.op("tma.bulk_copy", (tile, g, b.constant(i32, 256), bar))
    return kb, kb.finish()


def test_descriptor_parameter_is_a_grid_constant_by_value_blob():
    _, (ll, ptx) = tma_kernel()
    assert 'ptr byval([128 x i8]) align 64 "nvvm.grid_constant"' in ll
    assert ".param .align 64 .b8 k_param_0[128]" in ptx
    assert "cvta.param.u64" in ptx         # TMA takes the parameter's generic address


def test_each_op_becomes_its_ptx_instruction():
    _, (_, ptx) = tma_kernel()
    for text in ("prefetch.tensormap [",
                 "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
                 "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group",
                 "cp.async.bulk.commit_group;", "cp.async.bulk.wait_group.read 1;",
                 "cp.async.bulk.wait_group 0;",
                 "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"):
        assert text in ptx, text


@pytest.mark.parametrize("rank", [1, 3, 5])
def test_coordinates_are_listed_innermost_first(rank):
    _, (ll, ptx) = tma_kernel(rank)
    # IR coordinates (x, 10, 11, ...) outermost first: PTX gets the last constant first
    line = next(ln for ln in ptx.splitlines() if f"cp.async.bulk.tensor.{rank}d.shared" in ln)
    assert "{" in line and f"{rank}d" in line
    asm = next(ln for ln in ll.splitlines() if f"cp.async.bulk.tensor.{rank}d.shared" in ln)
    assert "{" + ", ".join(f"${3 + k}" for k in reversed(range(rank))) + "}" in asm


def test_ptxas_assembles_the_tma_kernel(ptxas_path):
    _, (_, ptx) = tma_kernel()
    result = assemble(ptx, OPTIONS, ["k"])
    assert result.cubin and "error" not in result.log.lower()


def test_a_descriptor_passes_through_a_device_function():
    kb = KernelBuilder([tensormap])
    callee = kb.module.add(Function("prefetch", [tensormap], attrs={"inline": "never"}))
    cb = ir.Builder(callee.body.block)
    cb.op("tma.prefetch_descriptor", (callee.args[0],))
    cb.return_()
    kb.b.call(callee, [kb.args[0]])
    ll, ptx = kb.finish()
    assert "define internal void @\"prefetch\"(ptr" in ll and "prefetch.tensormap" in ptx


@pytest.mark.parametrize("build,message", [
    (lambda b, d, s, m: b.op("tma.load", (d, s, m), (), {"box": (8, 32), "bytes": 1024}),
     "expected 3 operands and 2 coordinates"),
    (lambda b, d, s, m: b.op("tma.load", (d, s, m, b.constant(i32, 0)), (),
                             {"box": (300,), "bytes": 1024}), "box must be 1 to 5 ints"),
    (lambda b, d, s, m: b.op("tma.load", (s, s, m, b.constant(i32, 0)), (),
                             {"box": (32,), "bytes": 128}), "expected a !tensormap first"),
    (lambda b, d, s, m: b.op("tma.store", (d, s, b.constant(ir.i64, 0)), (),
                             {"box": (32,), "bytes": 128}), "coordinates must be i32"),
    (lambda b, d, s, m: b.op("tma.wait_group", (), (), {"n": 64}), r"in \[0, 64\)"),
    (lambda b, d, s, m: b.op("tma.bulk_copy", (s, s, b.constant(i32, 16), m)),
     "expected a global source"),
])
def test_verifier_rules(build, message):
    kb = KernelBuilder([tensormap])
    b = kb.b
    base = b.smem_base(u8)
    build(b, kb.args[0], b.ptr_cast(base, f32), b.ptr_cast(base, u64))
    b.return_()
    with pytest.raises(ir.VerificationError, match=message):
        ir.verify(kb.module)


def test_tensormap_type_round_trips_through_its_spelling():
    assert ir.types.parse_type(str(tensormap)) == tensormap
    assert str(tensormap) == "!tensormap"
