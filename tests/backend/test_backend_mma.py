"""mma.sync, ldmatrix and stmatrix lower to the NVVM intrinsics that print the PTX instructions
they name (for every shape and type combination), and ptxas assembles them for sm_90a."""
import pytest

from backend_helpers import KernelBuilder, OPTIONS
from warpstage.backend import assemble
from warpstage.ir import PointerType, bf16, f16, i16, i32, u16
from warpstage.ir.ops_mma import AB_TYPES, ACC_TYPES, COMBOS, FRAGMENT_SIZES

ATTRS = {"maxntid": (32, 1, 1)}


def mma_kernel(shape, ab, acc):
    """out[0] = sum of D for D = mma(A, B, C) with every element converted from args[1]."""
    ta, tc = AB_TYPES[ab], ACC_TYPES[acc]
    k = KernelBuilder([PointerType(tc), i32], attrs=ATTRS)
    b = k.b
    na, nb, nc = FRAGMENT_SIZES[shape, ab]
    x = k.args[1]
    ops = [b.cast(b.binary("add", x, b.constant(i32, j)), ta) for j in range(na + nb)]
    ops += [b.cast(b.binary("mul", x, b.constant(i32, j + 1)), tc) for j in range(nc)]
    d = b.op("mma.sync", ops, [tc] * nc, {"shape": shape, "ab": ab, "acc": acc}).results
    total = d[0]
    for v in d[1:]:
        total = b.binary("add", total, v)
    b.store(k.args[0], total)
    return k.finish()


@pytest.mark.parametrize("shape,ab,acc", sorted(COMBOS))
def test_mma_sync_prints_its_instruction_and_assembles(shape, ab, acc, ptxas_path):
    ll, ptx = mma_kernel(shape, ab, acc)
    assert f"mma.sync.aligned.{shape}.row.col.{acc}.{ab}.{ab}.{acc}" in ptx, ptx
    assert "llvm.nvvm.mma." in ll
    result = assemble(ptx, OPTIONS, ["k"])
    assert result.cubin[:4] == b"\x7fELF"


def test_bf16_fragments_are_packed_low_element_first():
    ll, ptx = mma_kernel("m16n8k16", "bf16", "f32")
    assert "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32" in ptx
    # pairs become <2 x bfloat> (element 0 = low half) bitcast to the i32 the intrinsic takes
    assert "insertelement <2 x bfloat>" in ll and "bitcast <2 x bfloat>" in ll
    assert '"llvm.nvvm.mma.m16n8k16.row.col.bf16"(i32' in ll


def matrix_kernel(kind, num, trans, t=bf16):
    k = KernelBuilder([PointerType(t), i32], attrs=ATTRS)
    b = k.b
    base = b.ptr_cast(b.smem_base(), t)
    row = b.ptr_offset(base, b.binary("mul", k.args[1], b.constant(i32, 8)))
    attrs = {"num": num, "trans": trans}
    if kind == "ldmatrix":
        vals = b.op("mma.ldmatrix", (row,), [t] * (2 * num), attrs).results
        for j, v in enumerate(vals):
            b.store(b.ptr_offset(k.args[0], b.constant(i32, j)), v)
    else:
        vals = [b.load(b.ptr_offset(k.args[0], b.constant(i32, j))) for j in range(2 * num)]
        b.op("mma.stmatrix", [row] + vals, (), attrs)
    return k.finish()


@pytest.mark.parametrize("kind", ["ldmatrix", "stmatrix"])
@pytest.mark.parametrize("num", [1, 2, 4])
@pytest.mark.parametrize("trans", [False, True])
def test_ldmatrix_and_stmatrix_forms(kind, num, trans, ptxas_path):
    ll, ptx = matrix_kernel(kind, num, trans)
    needle = f"{kind}.sync.aligned.m8n8.x{num}{'.trans' if trans else ''}.shared.b16"
    assert needle in ptx, ptx
    assert f"{kind}.sync.aligned.m8n8.x{num}{'.trans' if trans else ''}.b16.p3" in ll
    assemble(ptx, OPTIONS, ["k"])


@pytest.mark.parametrize("t", [f16, i16, u16])
def test_ldmatrix_of_every_16_bit_type(t):
    ll, ptx = matrix_kernel("ldmatrix", 4, False, t)
    assert "ldmatrix.sync.aligned.m8n8.x4.shared.b16" in ptx
