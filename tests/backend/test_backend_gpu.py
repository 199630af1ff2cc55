"""Special registers, barriers, printf, trap, pointers and memory spaces."""
import pytest

from backend_helpers import KernelBuilder, compile_module
from warpstage.backend.llvm_types import ADDRSPACE
from warpstage.ir import (Builder, Function, Module, PointerType, SCALAR_TYPES, f16, f32, f64, i1,
                          i8, i32, i64, u16)
from warpstage.ir.ops import SREGS


def test_every_special_register():
    k = KernelBuilder([PointerType(i32), PointerType(i64)])
    out32, out64 = k.args
    b = k.b
    acc32, acc64 = b.constant(i32, 0), b.constant(i64, 0)
    for reg, bits in SREGS.items():
        v = b.sreg(reg, i32 if bits == 32 else i64)
        if bits == 32:
            acc32 = b.binary("add", acc32, v)
        else:
            acc64 = b.binary("add", acc64, v)
    b.store(out32, acc32)
    b.store(out64, acc64)
    _, ptx = k.finish()
    for reg in SREGS:       # LLVM's cluster.ctarank is PTX's %cluster_ctarank, ...
        assert "%" + reg.replace("cluster.", "cluster_") in ptx, reg


def test_clock_reads_are_not_merged():
    k = KernelBuilder([PointerType(i64)])
    b = k.b
    t0 = b.sreg("clock64", i64)
    t1 = b.sreg("clock64", i64)
    b.store(k.args[0], b.binary("sub", t1, t0))
    _, ptx = k.finish()
    assert ptx.count("%clock64") == 2


def test_barriers():
    k = KernelBuilder([])
    k.b.barrier()
    k.b.barrier(1, 64)
    _, ptx = k.finish()
    assert "bar.sync \t0;" in ptx.replace("bar.sync\t", "bar.sync \t")
    assert "bar.sync \t1, 64;" in ptx.replace("bar.sync\t", "bar.sync \t")


def test_printf_promotes_arguments():
    k = KernelBuilder([i32, f32, i1, f16, i64, u16, i8, f64])
    k.b.printf("tid %d x %f b %d h %f l %ld u %u c %d d %f\n", k.args)
    k.b.printf("no arguments\n", [])
    ll, ptx = k.finish()
    assert ll.count('call i32 @"vprintf"') == 2
    # promoted struct: i32, double, i32, double, i64, i32, i32, double
    assert "{i32, double, i32, double, i64, i32, i32, double}" in ll
    assert "vprintf" in ptx and ".global .align 1 .b8" in ptx


def test_trap():
    k = KernelBuilder([])
    k.b.op("gpu.trap")
    _, ptx = k.finish()
    assert "trap;" in ptx


@pytest.mark.parametrize("space,ld", [("global", "ld.global"), ("shared", "ld.shared"),
                                      ("generic", "ld.b32"), ("local", "ld.local"),
                                      ("const", "ld.const")])
def test_address_spaces(space, ld):
    # The pointer reaches a noinline device function that loads and stores through it, so
    # LLVM can neither inline it nor promote the pointer argument to a value.
    m = Module()
    P = PointerType(i32, space)
    fn = m.add(Function("bump", [P, i32], [i32], attrs={"inline": "never"}))
    b = Builder(fn.body.block)
    p = b.ptr_offset(fn.args[0], fn.args[1])
    v = b.load(p)
    if space != "const":
        b.store(p, b.binary("add", v, b.constant(i32, 1)))
    b.return_([v])
    kern = m.add(Function("k", [PointerType(i32), P], is_kernel=True))
    b = Builder(kern.body.block)
    b.store(kern.args[0], b.call(fn, [kern.args[1], b.sreg("tid.x", i32)])[0])
    b.return_()
    ll, ptx = compile_module(m)
    assert f"ptr addrspace({ADDRSPACE[space]})" in ll or space == "generic"
    assert ld in ptx


@pytest.mark.parametrize("t", list(SCALAR_TYPES.values()), ids=str)
def test_load_store_every_type(t):
    k = KernelBuilder([PointerType(t), PointerType(t), u16])
    dst, src, i = k.args
    b = k.b
    b.store(b.ptr_offset(dst, i), b.load(b.ptr_offset(src, i)))
    ll, ptx = k.finish()
    if t.is_bool:
        assert "load i8" in ll and "store i8" in ll
    assert "zext i16" in ll                     # an unsigned index is zero-extended


def test_signed_index_is_sign_extended():
    k = KernelBuilder([PointerType(f32), i32])
    p, i = k.args
    k.b.store(k.b.ptr_offset(p, i), k.b.constant(f32, 0.0))
    ll, ptx = k.finish()
    assert "sext i32" in ll and "mul.wide.s32" in ptx
