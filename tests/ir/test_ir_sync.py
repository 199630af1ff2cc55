"""The warp-specialization ops in the IR: printer golden text, verifier errors (expected vs got),
builder helpers."""
import pytest

from warpstage import ir
from warpstage.ir import (Builder, Function, Module, PointerType, VerificationError, f16, f32,
                          i1, i32, i64, u8, u32, u64, verify)

MBAR = PointerType(u64, "shared")


def kernel_module(args=(PointerType(f32), i32)):
    m = Module()
    f = m.add(Function("k", list(args), is_kernel=True, attrs={"maxntid": (128, 1, 1)}))
    return m, f, Builder(f.body.block)


GOLDEN = """\
kernel @k(%0: !ptr<f32, global>, %1: i32) attributes {maxntid = [128, 1, 1]} {
  %2 = nvvm.smem_base : !ptr<u8, shared>
  %3 = ptr.cast %2 : !ptr<u64, shared>
  %4 = arith.constant {value = 1} : i32
  mbarrier.init %3, %4 : !ptr<u64, shared>, i32
  nvvm.fence {kind = "mbarrier_init.release.cluster"}
  %5 = nvvm.elect : i1
  %6 = nvvm.vote %5 {mode = "ballot"} : u32
  %7 = nvvm.shfl %1, %4 {mode = "bfly", width = 16} : i32
  %8 = mbarrier.arrive %3 : u64
  %9 = mbarrier.arrive_expect_tx %3, %4 : u64
  %10 = mbarrier.try_wait_parity %3, %1 : i1
  mbarrier.wait_parity %3, %1 : !ptr<u64, shared>, i32
  %11 = ptr.offset %2, %7 : !ptr<u8, shared>
  %12 = ptr.cast %11 : !ptr<f32, shared>
  cp_async.copy %12, %0 {cache = "cg", size = 16} : !ptr<f32, shared>, !ptr<f32, global>
  cp_async.commit_group
  cp_async.wait_group {n = 1}
  cp_async.mbarrier_arrive %3 {noinc = true} : !ptr<u64, shared>
  nvvm.barrier_arrive {count = 64, id = 1}
  nvvm.setmaxnreg {action = "inc", count = 232}
  %13 = mem.load %12 : f32
  %14 = mem.atomic %0, %13 {kind = "add"} : f32
  mbarrier.inval %3 : !ptr<u64, shared>
  func.return
}
"""


def test_printer_golden_for_the_warp_specialization_ops():
    m, f, b = kernel_module()
    out, n = f.args
    base = b.smem_base()
    bar = b.ptr_cast(base, u64)
    one = b.constant(i32, 1)
    b.mbarrier("init", bar, one)
    b.op("nvvm.fence", (), (), {"kind": "mbarrier_init.release.cluster"})
    leader = b.elect()
    b.vote("ballot", leader)
    lane = b.shfl("bfly", n, one, width=16)
    b.mbarrier("arrive", bar)
    b.mbarrier("arrive_expect_tx", bar, one)
    b.mbarrier("try_wait_parity", bar, n)
    b.mbarrier("wait_parity", bar, n)
    dst = b.ptr_cast(b.ptr_offset(base, lane), f32)
    b.op("cp_async.copy", (dst, out), (), {"cache": "cg", "size": 16})
    b.op("cp_async.commit_group")
    b.op("cp_async.wait_group", (), (), {"n": 1})
    b.op("cp_async.mbarrier_arrive", (bar,), (), {"noinc": True})
    b.op("nvvm.barrier_arrive", (), (), {"id": 1, "count": 64})
    b.op("nvvm.setmaxnreg", (), (), {"action": "inc", "count": 232})
    b.atomic("add", out, b.load(dst))
    b.mbarrier("inval", bar)
    b.return_()
    verify(m)
    assert ir.print_module(m) == GOLDEN


def test_ptr_cast_to_the_same_type_is_no_op():
    m, f, b = kernel_module()
    base = b.smem_base()
    assert b.ptr_cast(base, u8) is base


def _mbar(b):
    return b.ptr_cast(b.smem_base(), u64)


@pytest.mark.parametrize("build, message", [
    (lambda b, f: b.op("nvvm.shfl", [b.constant(i64, 1), f.args[1]], [i64], {"mode": "idx"}),
     "shfl moves a 32-bit value (i32, u32, f32), got i64"),
    (lambda b, f: b.op("nvvm.shfl", [f.args[1], f.args[1]], [i32], {"mode": "rotate"}),
     "expected mode in ('idx', 'up', 'down', 'bfly'), got 'rotate'"),
    (lambda b, f: b.op("nvvm.shfl", [f.args[1], f.args[1]], [i32], {"mode": "up", "width": 12}),
     "width must be a power of two in [1, 32], got 12"),
    (lambda b, f: b.op("nvvm.shfl", [f.args[1], f.args[1]], [i32], {"mode": "up", "mask": 0}),
     "mask must be a nonzero 32-bit int, got 0"),
    (lambda b, f: b.op("nvvm.vote", [b.elect()], [i1], {"mode": "ballot"}),
     "vote.ballot gives u32, got i1"),
    (lambda b, f: b.op("nvvm.vote", [f.args[1]], [i1], {"mode": "all"}),
     "expected an i1 predicate, got i32"),
    (lambda b, f: b.op("nvvm.setmaxnreg", [], [], {"action": "inc", "count": 100}),
     "register count must be a multiple of 8 in [24, 256], got 100"),
    (lambda b, f: b.op("nvvm.setmaxnreg", [], [], {"action": "set", "count": 64}),
     "expected action 'inc' or 'dec', got 'set'"),
    (lambda b, f: b.op("nvvm.fence", [], [], {"kind": "acq_rel.block"}),
     "unknown fence kind 'acq_rel.block'"),
    (lambda b, f: b.op("nvvm.barrier_arrive", [], [], {"id": 1}),
     "bar.arrive needs a thread count, a positive multiple of 32; got None"),
    (lambda b, f: b.op("nvvm.barrier_arrive", [], [], {"id": 16, "count": 64}),
     "barrier id must be an int in [0, 16), got 16"),
    (lambda b, f: b.op("nvvm.smem_base", [], [PointerType(u8, "global")]),
     "expected a shared pointer result, got !ptr<u8, global>"),
    (lambda b, f: b.op("ptr.cast", [f.args[0]], [PointerType(f32, "shared")]),
     "ptr.cast keeps the address space: !ptr<f32, global> -> !ptr<f32, shared>"),
    (lambda b, f: b.op("mbarrier.init", [f.args[0], f.args[1]]),
     "expected an mbarrier address !ptr<u64, shared>, got !ptr<f32, global>"),
    (lambda b, f: b.op("mbarrier.init", [_mbar(b)]),
     "expected the mbarrier and 1 i32 operand(s), got 1 operands"),
    (lambda b, f: b.op("mbarrier.try_wait_parity", [_mbar(b), f.args[1]], [i32]),
     "expected result i1, got i32"),
    (lambda b, f: b.op("mbarrier.expect_tx", [_mbar(b), b.constant(i64, 8)]),
     "expected i32 operands after the mbarrier, got (!ptr<u64, shared>, i64)"),
    (lambda b, f: b.op("cp_async.copy", [f.args[0], f.args[0]], [], {"cache": "cg", "size": 16}),
     "expected a shared destination, got !ptr<f32, global>"),
    (lambda b, f: b.op("cp_async.copy", [b.ptr_cast(b.smem_base(), f32), f.args[0]], [],
                       {"cache": "cg", "size": 8}),
     "cp.async.cg copies (16,) bytes, got size=8"),
    (lambda b, f: b.op("cp_async.wait_group", [], [], {"n": -1}),
     "wait_group needs a static count of pending groups in [0, 64), got -1"),
    (lambda b, f: b.op("mem.atomic", [f.args[0], b.constant(f32, 1.0)], [f32], {"kind": "max"}),
     "atomic max on f32: floats support add and exch only"),
    (lambda b, f: b.op("mem.atomic", [f.args[0], f.args[1]], [i32], {"kind": "add"}),
     "expected operands and result of the pointee type f32"),
    (lambda b, f: b.op("mem.atomic_cas", [f.args[0]] + [b.constant(f32, 1.0)] * 2, [f32]),
     "compare-and-swap works on integers, got f32"),
    (lambda b, f: b.op("mem.atomic", [b.ptr_cast(f.args[0], f16), b.constant(f16, 1.0)], [f16],
                       {"kind": "add"}),
     "atomics work on i32, u32, i64, u64, f32, f64, got f16"),
])
def test_verifier_errors_state_expected_and_got(build, message):
    m, f, b = kernel_module()
    b.loc = ir.Location("kern.py", 9)
    build(b, f)
    b.return_()
    with pytest.raises(VerificationError) as ei:
        verify(m)
    assert message in str(ei.value)
    assert "kern.py:9" in str(ei.value)


def test_vote_and_elect_result_types_from_the_builder():
    m, f, b = kernel_module()
    p = b.cmp("lt", f.args[1], b.constant(i32, 3))
    assert b.vote("ballot", p).type == u32
    assert b.vote("any", p, mask=0xFFFF).type == i1
    assert b.elect().type == i1
    assert b.mbarrier("arrive", _mbar(b)).type == u64
    assert b.mbarrier("init", _mbar(b), f.args[1]) is None
    b.return_()
    verify(m)
