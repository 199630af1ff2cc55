"""backend/llvm_text.py prints an llvmlite.ir module exactly as ``str(module)`` does.

Every backend test checks it on its lowered kernels (``backend_helpers.compile_module``); here
each instruction class the printer writes itself is built by hand with the variants its text
depends on (flags, alignment, attributes, names that need quoting, forward references), and
the text is fed back to LLVM's parser.
"""
import llvmlite.binding as llvm
import ml_dtypes
import numpy as np
import pytest
from llvmlite import ir

import warpstage as ws

from warpstage.backend import llvm_text
from warpstage.backend.llvm_text import FAST, instruction_text, module_text
from warpstage.backend.lower import lower_module

I1, I8, I32, I64 = ir.IntType(1), ir.IntType(8), ir.IntType(32), ir.IntType(64)
F32 = ir.FloatType()
V2 = ir.VectorType(F32, 2)


def _function(module, name, ret, args, **kw):
    return ir.Function(module, ir.FunctionType(ret, args, **kw), name)


def _every_class() -> ir.Module:
    """One function using each class of ``FAST``, most in several forms."""
    m = ir.Module(name='quoted "module"', context=ir.Context())
    m.triple = "nvptx64-nvidia-cuda"
    agg = m.context.get_identified_type("agg.0")
    agg.set_body(*[F32] * 8)
    ext = _function(m, "ext", F32, [F32, ir.PointerType(addrspace=1)])
    vprintf = _function(m, "vprintf", I32, [ir.PointerType()], var_arg=True)
    fn = _function(m, "k", ir.VoidType(), [I32, ir.PointerType(addrspace=1), F32, V2])
    fn.calling_convention = "ptx_kernel"
    fn.attributes.add("nounwind")
    fn.args[1].add_attribute("noalias")
    n, p, x, v = fn.args
    entry, loop, done, exit_ = (fn.append_basic_block(name)
                                for name in ("entry", "loop", "done.x", "loop"))
    b = ir.IRBuilder(entry)
    slot = b.alloca(agg)
    counted = b.alloca(I32, size=I32(4), name="counted")
    counted.align = 16
    s = b.add(n, I32(1), name='we"ird\\name')
    b.sub(s, n, flags=("nsw", "nuw"))
    b.xor(s, I32(-1))
    b.fneg(x, flags=("fast",))
    b.fadd(x, x, flags=("nnan", "contract"))
    b.sext(n, I64)
    b.addrspacecast(p, ir.PointerType())
    b.bitcast(v, I64)
    q = b.gep(p, [b.zext(n, I64)], source_etype=F32)
    b.gep(slot, [I32(0), I32(3)], inbounds=True, source_etype=agg)
    ld = b.load(q, typ=F32)
    ld.align = 4
    b.load(q, typ=I32)
    st = b.store(ld, q)
    st.align = 4
    b.store(s, counted)
    b.call(ext, [x, p])
    b.call(ext, [x, p], tail="tail", fastmath=("fast",), attrs=("nounwind",))
    b.call(ext, [x, p], arg_attrs={1: ("noalias", "nonnull")})
    b.call(vprintf, [b.addrspacecast(p, ir.PointerType()), n])
    asm = ir.InlineAsm(ir.FunctionType(agg, [F32]), "mov.b32 $0, $8;",
                       "=f,=f,=f,=f,=f,=f,=f,=f,f", side_effect=True)
    acc = b.call(asm, [x])
    b.call(ir.InlineAsm(ir.FunctionType(ir.VoidType(), []), "nanosleep.u32 1;", ""), [])
    f0 = b.extract_value(acc, 0)
    b.insert_value(acc, f0, 7)
    pair = b.call(ir.InlineAsm(ir.FunctionType(ir.LiteralStructType([I32, F32]), []),
                               "mov.b32 $0, 0; mov.b32 $1, 0;", "=r,=f"), [])
    b.extract_value(pair, [1])
    e = b.extract_element(v, I32(1))
    b.insert_element(v, e, I32(0))
    c = b.icmp_signed("<", n, I32(8))
    b.icmp_unsigned(">=", n, s)
    b.fcmp_ordered("<", x, e, flags=("nnan",))
    b.fcmp_unordered("!=", x, x)
    b.fcmp_ordered("<", v, v)
    b.select(c, n, s)
    b.select(c, x, e, flags=("fast",))
    b.cbranch(c, loop, done)
    b.position_at_end(loop)
    i = b.phi(I32, name="i")
    later = b.phi(F32, flags=("fast",))
    nxt = b.add(i, I32(1))
    i.add_incoming(I32(0), entry)
    i.add_incoming(nxt, loop)              # a value defined after its use, in this block
    later.add_incoming(x, entry)
    later.add_incoming(ld, loop)
    br = b.cbranch(b.icmp_signed("<", nxt, n), loop, done)
    br.set_metadata("llvm.loop", m.add_metadata(["llvm.loop.unroll.disable"]))
    b.position_at_end(done)
    b.branch(exit_)
    b.position_at_end(exit_)
    b.ret_void()
    inner = _function(m, "inner", F32, [F32])
    inner.linkage = "internal"
    inner.attributes.add("alwaysinline")
    ib = ir.IRBuilder(inner.append_basic_block())
    ib.ret(inner.args[0])
    return m


def test_every_class_prints_as_llvmlite_does_and_parses():
    m = _every_class()
    text = module_text(m)
    assert text == str(m)
    seen = {type(i) for fn in m.functions for blk in fn.blocks for i in blk.instructions}
    assert FAST <= seen, f"classes not exercised: {FAST - seen}"
    llvm.parse_assembly(text).verify()


def test_instruction_text_is_str_of_the_instruction():
    m = _every_class()
    instructions = [i for fn in m.functions for blk in fn.blocks for i in blk.instructions]
    assert [instruction_text(i) for i in instructions] == [str(i) for i in instructions]


def test_other_instructions_are_printed_by_llvmlite():
    m = ir.Module(context=ir.Context())
    fn = _function(m, "f", ir.VoidType(), [ir.PointerType(addrspace=3), I32])
    b = ir.IRBuilder(fn.append_basic_block())
    b.atomic_rmw("add", fn.args[0], fn.args[1], "monotonic")
    b.cmpxchg(fn.args[0], fn.args[1], I32(0), "acq_rel", "monotonic")
    b.fence("seq_cst", "block")
    b.unreachable()
    assert not {type(i) for i in fn.blocks[0].instructions} & FAST
    assert module_text(m) == str(m)
    llvm.parse_assembly(module_text(m)).verify()


def test_a_change_to_one_method_shows():
    """The comparison can fail: a printer whose GEP drops ``inbounds`` differs."""
    m = _every_class()
    fast = dict(llvm_text._FAST)
    gep = fast[ir.instructions.GEPInstr]
    try:
        llvm_text._FAST[ir.instructions.GEPInstr] = lambda p, i: gep(p, i).replace(
            " inbounds", "")
        assert module_text(m) != str(m)
    finally:
        llvm_text._FAST.update(fast)


def test_an_unchecked_llvmlite_prints_through_llvmlite(monkeypatch):
    m = _every_class()
    monkeypatch.setattr(llvm_text, "_CHECKED", False)
    monkeypatch.setattr(ir.Module, "__repr__", lambda self: "llvmlite's text")
    assert module_text(m) == "llvmlite's text"


@pytest.mark.parametrize("head_dim", [64, 128])
def test_the_default_flash_attention_prints_as_llvmlite_does(head_dim):
    """The kernel the printer was written for: ``ws.ops.flash_attention``'s default (wgmma)
    policy at S = 1024, as ``benchmarks/compile_time.py`` compiles it."""
    from warpstage.ops import attention
    fa = attention.wgmma_policy_for(head_dim, "BFloat16", False, head_dim ** -0.5, short=True)
    x = np.zeros((1, 8, 1024, head_dim), ml_dtypes.bfloat16)
    q_box, kv_box = fa.descriptor_boxes()
    TD = ws.tma.TensorDescriptor
    args = (fa, TD(x, q_box), TD(x, kv_box), TD(x, kv_box), ws.Tensor[ws.BFloat16, 4],
            ws.Int32, None, TD(x, fa.o_box, swizzle=fa.out.swizzle) if fa.tma_store else None,
            ws.Tensor[ws.Int32, 1] if fa.dynamic_tiles else None)
    ck = ws.compile(attention.flash_attention_wgmma_kernel, *args, block=(fa.threads, 1, 1))
    llmod = lower_module(ck.traced.module, ck.options, verified=True)
    text = module_text(llmod)
    assert text == str(llmod)
    assert text.count("\n") > 5000 and "wgmma.mma_async" in text
