"""The wgmma ops lower to the PTX instructions they name (inline asm with tied accumulators,
packed A registers, a scale-d predicate), ptxas assembles them for sm_90a, and the kernels of
tests/lang/test_wgmma.py compile without ptxas injecting warpgroup waits or arrives."""
import os
import sys
import warnings

import pytest

from backend_helpers import OPTIONS, KernelBuilder
from warpstage.backend import assemble
from warpstage.ir import PointerType, bf16, f16, f32, i1, u64

import warpstage as ws

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TESTS, "lang"))
from test_wgmma import CASES, Case, wgmma_tile  # noqa: E402

ATTRS = {"maxntid": (128, 1, 1)}


def mma_kernel(n=64, dtype=bf16, a_regs=False, scale_d=True, acc=f32, **kw):
    """tile (shared) -> descriptors -> fence -> mma_async -> commit -> wait -> store acc[0]."""
    k = KernelBuilder([PointerType(f32), PointerType(dtype, "shared"), i1], attrs=ATTRS)
    b = k.b
    out, tile, flag = k.args
    desc = b.op("wgmma.descriptor", (tile,), (u64,),
                {"lbo": 16, "sbo": 1024, "swizzle": 128, "base_offset": 0}).result
    zero = b.constant(acc, 0.0)
    a_ops = [b.constant(dtype, float(i)) for i in range(8)] if a_regs else [desc]
    d = [zero] * (n // 2) if scale_d is not False else []
    fenced = b.op("wgmma.fence", a_ops + d if a_regs else d,
                  [v.type for v in (a_ops + d if a_regs else d)]).results
    if a_regs:
        a_ops, d = fenced[:8], fenced[8:]
    else:
        d = fenced
    ops = list(a_ops) + [desc] + ([flag] if scale_d == "dynamic" else []) + list(d)
    attrs = {"n": n, "type_a": dtype.name, "type_b": dtype.name, "type_d": acc.name,
             "a_regs": a_regs, "scale_d": scale_d, "scale_a": 1, "scale_b": 1, "tnsp_a": 0,
             "tnsp_b": 0}
    attrs.update(kw)
    res = b.op("wgmma.mma_async", ops, [acc] * (n // 2), attrs).results
    b.op("wgmma.commit_group")
    res = b.op("wgmma.wait_group", res, [acc] * (n // 2), {"n": 1}).results
    b.store(out, b.cast(res[0], f32))
    return k.finish()


@pytest.mark.parametrize("kw, instruction", [
    ({}, "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {"),
    ({"n": 8, "dtype": f16}, "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {"),
    ({"n": 256}, "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {"),
    ({"n": 32, "acc": f16, "dtype": f16}, "wgmma.mma_async.sync.aligned.m64n32k16.f16.f16.f16 {"),
    ({"a_regs": True, "n": 16}, "wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 {"),
    ({"scale_d": "dynamic"}, "setp.ne.b32 %ws_p, %r"),
    ({"scale_d": False}, "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16"),
    ({"scale_a": -1, "tnsp_b": 1, "tnsp_a": 1}, "%ws_p, -1, 1, 1, 1;"),
    ({"a_regs": True, "scale_b": -1, "tnsp_b": 1}, "%ws_p, 1, -1, 1;"),
])
def test_mma_async_lowers_to_its_instruction_and_assembles(kw, instruction, ptxas_path):
    ll, ptx = mma_kernel(**kw)
    assert instruction in ptx
    line = next(l for l in ptx.splitlines() if "wgmma.mma_async" in l)
    n = kw.get("n", 64)
    regs = n // 4 if kw.get("acc") is f16 else n // 2
    assert line.split("{")[1].split("}")[0].count("%r") == regs       # the D registers
    if kw.get("a_regs"):
        assert line.split("{")[2].split("}")[0].count("%r") == 4      # 4 packed A registers
    for text in ("wgmma.fence.sync.aligned;", "wgmma.commit_group.sync.aligned;",
                 "wgmma.wait_group.sync.aligned 1;"):
        assert text in ptx
    assert ptx.index("wgmma.fence") < ptx.index("wgmma.mma_async") < ptx.index("wgmma.commit")
    assert "~{memory}" in ll and "sideeffect" in ll
    result = assemble(ptx, OPTIONS, ["k"])
    assert len(result.cubin) > 0


def test_descriptor_fields_are_constant_folded_into_the_address():
    ll, ptx = mma_kernel()
    fields = (16 >> 4) << 16 | (1024 >> 4) << 32 | 1 << 62
    assert str(fields) in ll or str(fields - (1 << 64)) in ll
    assert "ptrtoint ptr addrspace(3)" in ll


def compiled(case):
    t = ws.Tensor[case.dtype, 2]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ws.RecompileWarning)
        return ws.compile(wgmma_tile, case, t, t, ws.Tensor[ws.Float32, 2],
                          ws.Tensor[ws.Float32, 2], ws.Int32, block=128)


@pytest.mark.parametrize("case", [CASES[0], CASES[8], CASES[12], CASES[-1]], ids=repr)
def test_kernels_compile_without_injected_warpgroup_syncs(case, ptxas_path):
    ck = compiled(case)
    ptx = ck.ptx
    assert f"wgmma.mma_async.sync.aligned.m64n{case.n}k16." in ptx
    assert len(ck.cubin) > 0
    # ptxas injects warpgroup.arrive (C7519) / warpgroup.wait (C7517) when registers are
    # written between a fence and a wgmma, or read between a wgmma and its wait
    assert "C7519" not in ck.ptxas_log and "C7517" not in ck.ptxas_log, ck.ptxas_log
    # the accumulators are stored only after the last wait
    assert ptx.rindex("wgmma.wait_group") < ptx.index("st.global")


def test_design_example_ptx_contains_the_bf16_instruction():
    ck = compiled(Case(n=64, k=64))
    assert "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16" in ck.ptx
