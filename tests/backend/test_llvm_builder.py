"""backend/llvm_builder.py writes, for the same builder calls, the text llvmlite.ir's IRBuilder
and printer make (backend/llvm_text.py puts the bodies into the module's text).

Every backend test checks it on its lowered kernel (``backend_helpers.compile_module``); here one
program calls every builder method in the forms the text depends on (flags, alignment, sizes,
typed and opaque pointers, vectors, forward references in phis, loop metadata, block names that
need quoting, var-arg and inline-asm callees), once on llvmlite and once on ours, and the text is
fed back to LLVM's parser.
"""
import llvmlite.binding as llvm
import pytest
from example_loader import load_file
from llvmlite import ir

from warpstage.backend.llvm_builder import Body, Builder
from warpstage.backend.llvm_text import module_text
from warpstage.backend.lower import lower, lower_module

I8, I32, I64 = ir.IntType(8), ir.IntType(32), ir.IntType(64)
F32 = ir.FloatType()
V2 = ir.VectorType(F32, 2)


def _program(reference: bool) -> str:
    """The module text of one program, built by llvmlite (``reference``) or by llvm_builder."""
    new_builder = ir.IRBuilder if reference else Builder
    m = ir.Module(name="m", context=ir.Context())
    m.triple = "nvptx64-nvidia-cuda"
    agg = m.context.get_identified_type("agg.0")
    agg.set_body(*[F32] * 8)
    ext = ir.Function(m, ir.FunctionType(F32, [F32, ir.PointerType(addrspace=1)]), "ext")
    vprintf = ir.Function(m, ir.FunctionType(I32, [ir.PointerType()], var_arg=True), "vprintf")
    kernel = ir.Function(m, ir.FunctionType(ir.VoidType(), [I32, ir.PointerType(addrspace=1),
                                                             F32, V2]), "k")
    kernel.calling_convention = "ptx_kernel"
    kernel.attributes.add("nounwind")
    kernel.args[1].add_attribute("noalias")
    inner = ir.Function(m, ir.FunctionType(F32, [F32, agg.as_pointer()]), "inner")
    inner.linkage = "internal"
    inner.attributes.add("alwaysinline")
    gv = ir.GlobalVariable(m, ir.ArrayType(I8, 0), "smem", addrspace=3)
    bodies = {}

    def body_of(fn):
        if reference:
            return fn
        bodies[fn] = Body(fn)
        return bodies[fn]

    fn = body_of(kernel)
    n, p, x, v = fn.args
    entry, loop, done, exit_, taken, numbered = (
        fn.append_basic_block(name)     # names taken twice, or as llvmlite would number them
        for name in ("entry", "loop", 'done "x"', "loop", "loop.1", ".30"))
    b = new_builder(entry)
    slot = b.alloca(agg)
    counted = b.alloca(I32, size=4)
    s = b.add(n, I32(1))
    for method in ("sub", "mul", "sdiv", "udiv", "srem", "urem", "and_", "or_", "xor", "shl",
                   "lshr", "ashr"):
        getattr(b, method)(s, n)
    b.add(s, n, flags=("nsw", "nuw"))
    b.not_(s)
    b.not_(b.bitcast(b.sext(n, I64), ir.VectorType(I32, 2)))
    b.neg(s)
    b.fneg(x, flags=("fast",))
    b.fneg(x)
    for method in ("fadd", "fsub", "fmul", "fdiv"):
        getattr(b, method)(x, x)
    b.fadd(x, x, flags=("nnan", "contract"))
    for method, typ in (("trunc", I8), ("zext", I64), ("sext", I64), ("uitofp", F32),
                        ("sitofp", F32)):
        getattr(b, method)(n, typ)
    for method, typ in (("fptrunc", ir.HalfType()), ("fpext", ir.DoubleType()), ("fptoui", I32),
                        ("fptosi", I32), ("bitcast", I32)):
        getattr(b, method)(x, typ)
    b.addrspacecast(p, ir.PointerType())
    b.inttoptr(b.ptrtoint(p, I64), ir.PointerType(addrspace=1))
    b.addrspacecast(gv, ir.PointerType())
    q = b.gep(p, [b.zext(n, I64)], source_etype=F32)
    b.gep(slot, [I32(0), I32(3)], inbounds=True)
    b.gep(slot, [I32(1)])
    b.load(q, typ=F32, align=4)
    b.load(b.gep(slot, [I32(0), I32(2)], inbounds=True))
    b.load(counted)
    b.store(x, q, align=4)
    b.store(s, counted)
    b.atomic_rmw("add", counted, n, "monotonic")
    b.extract_value(b.cmpxchg(counted, n, s, "monotonic", "monotonic"), 0)
    b.cmpxchg(counted, n, s, "acquire")
    b.call(ext, [x, p])
    b.call(ext, [x, p], tail=True, fastmath=("fast", "nnan", "fast"))
    b.call(ext, [x, p], tail="notail")
    b.call(vprintf, [b.addrspacecast(p, ir.PointerType()), n])
    acc = b.asm(ir.FunctionType(agg, [F32]), "mov.b32 $0, $8;",
                "=f,=f,=f,=f,=f,=f,=f,=f,f", [x], side_effect=True)
    b.asm(ir.FunctionType(ir.VoidType(), []), "nanosleep.u32 1;", "", [], False)
    f0 = b.extract_value(acc, 0)
    b.insert_value(acc, f0, 7)
    b.insert_value(ir.Constant(agg, ir.Undefined), f0, [1])
    pair = b.asm(ir.FunctionType(ir.LiteralStructType([I32, F32]), []),
                 "mov.b32 $0, 0; mov.b32 $1, 0;", "=r,=f", [], False)
    b.extract_value(pair, [1])
    e = b.extract_element(v, I32(1))
    b.insert_element(v, e, I32(0))
    c = b.icmp_signed("<", n, I32(8))
    for cmpop in ("==", "!=", "<=", ">", ">="):
        b.icmp_signed(cmpop, n, s)
        b.icmp_unsigned(cmpop, n, s)
    b.fcmp_ordered("<", x, e, flags=("nnan",))
    for cmpop in ("==", "!=", "<", "ord", "uno"):
        b.fcmp_ordered(cmpop, x, x)
        b.fcmp_unordered(cmpop, x, x)
    b.fcmp_ordered("<", v, v)
    b.select(c, n, s)
    b.select(c, x, e, flags=("fast",))
    b.cbranch(c, loop, done)
    b.position_at_end(loop)
    i = b.phi(I32)
    later = b.phi(F32, flags=("fast",))
    nxt = b.add(i, I32(1))
    i.add_incoming(I32(0), entry)
    i.add_incoming(nxt, loop)              # a value defined after its use, in this block
    later.add_incoming(x, entry)
    later.add_incoming(f0, loop)
    br = b.cbranch(b.icmp_signed("<", nxt, n), loop, done)
    unroll = m.add_metadata(["llvm.loop.unroll.disable"])
    br.set_metadata("llvm.loop", unroll)
    b.position_at_end(done)
    b.branch(exit_).set_metadata("llvm.loop", unroll)
    for block in (exit_, taken, numbered):
        b.position_at_end(block)
        b.ret_void()
    fn.append_basic_block("loop")
    b.position_at_end(fn.blocks[-1])
    b.ret_void()
    fn = body_of(inner)
    b = new_builder(fn.append_basic_block())
    b.store(fn.args[0], b.gep(fn.args[1], [I32(0), I32(7)], inbounds=True))
    b.ret(fn.args[0])
    return str(m) if reference else module_text(m, bodies)


def test_every_method_writes_what_llvmlite_writes_and_llvm_parses_it():
    text = _program(reference=False)
    assert text == _program(reference=True)
    llvm.parse_assembly(text).verify()


def test_the_comparison_can_fail(monkeypatch):
    """A builder whose GEP dropped ``inbounds`` would be seen."""
    gep = Builder.gep
    monkeypatch.setattr(Builder, "gep", lambda self, ptr, indices, inbounds=False, **kw:
                        gep(self, ptr, indices, **kw))
    assert _program(reference=False) != _program(reference=True)


def test_call_attributes_are_refused():
    m = ir.Module()
    fn = ir.Function(m, ir.FunctionType(ir.VoidType(), []), "f")
    b = Builder(Body(fn).append_basic_block())
    with pytest.raises(NotImplementedError):
        b.call(fn, [], attrs=("nounwind",))


@pytest.mark.parametrize("head_dim", [64, 128])
def test_the_default_flash_attention_lowers_as_through_llvmlite(head_dim):
    """The kernel the builder was written for: ``ws.ops.flash_attention``'s default (wgmma)
    policy for short sequences (what ``benchmarks/compile_time.py`` times), compiled as
    ``scripts/kernel_ptx.py`` does."""
    kernel_ptx = load_file("scripts/kernel_ptx.py", "kernel_ptx")
    ck = kernel_ptx.default_attention_kernel((head_dim, False, True))
    text = lower(ck.traced.module, ck.options, verified=True)
    assert text == str(lower_module(ck.traced.module, ck.options, verified=True,
                                    reference=True)[0])
    assert text.count("\n") > 5000 and "wgmma.mma_async" in text


def test_an_unchecked_llvmlite_release_lowers_through_llvmlite(monkeypatch):
    # llvm_text reads llvmlite.ir internals of the checked releases only (llvm_c.CHECKED);
    # another release gets llvmlite's own builder, whose text is the same
    from warpstage.backend import llvm_builder, llvm_c
    kernel_ptx = load_file("scripts/kernel_ptx.py", "kernel_ptx")
    ck = kernel_ptx.default_attention_kernel((64, False, True))
    checked = lower(ck.traced.module, ck.options, verified=True)
    monkeypatch.setattr(llvm_c, "checked_release", lambda: False)
    monkeypatch.setattr(llvm_builder.Builder, "__init__", None)     # must not be used
    assert lower(ck.traced.module, ck.options, verified=True) == checked
