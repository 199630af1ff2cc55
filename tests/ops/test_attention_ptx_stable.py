"""The compile-speed mechanisms leave the FlashAttention kernels' PTX as it was: with the CSE
pass (passes/cse.py) and the fragment-packing reuse of the backend (backend/context.py,
lower_mma.py) the mma.sync kernels at D=64 and D=128 print byte-identical PTX to a build without
them, from a smaller IR and LLVM module. (PTX identical: same ptxas input, so same SASS.)"""
import functools

import pytest

import warpstage as ws
from warpstage.backend.context import LoweringContext
from warpstage.ops import attention

DIMS = (64, 128)


def _build(head_dim):
    """(ir op count, LLVM IR lines, PTX) of a fresh compile of the D=``head_dim`` kernel."""
    fa = attention.policy_for(head_dim, "BFloat16", False, head_dim ** -0.5, "cp.async")
    T = ws.Tensor[ws.BFloat16, 4]
    kern = ws.kernel(attention.flash_attention_kernel.fn)          # its own empty memory cache
    ck = ws.compile(kern, fa, T, T, T, T, block=fa.threads)
    ops = sum(1 for f in ck.module.functions for top in f.body.block.ops for _ in top.walk())
    return ops, ck.llvm_ir.count("\n"), ck.ptx


@functools.lru_cache(maxsize=None)
def _current(head_dim):
    return _build(head_dim)


def _without_cse(monkeypatch):
    from warpstage.passes import pipeline
    kept = tuple(p for p in pipeline.PIPELINE if p.__name__ != "common_subexpressions")
    assert len(kept) == len(pipeline.PIPELINE) - 1
    monkeypatch.setattr(pipeline, "PIPELINE", kept)


def _without_packing_reuse(monkeypatch):
    monkeypatch.setattr(LoweringContext, "whole_of", lambda self, elements: None)
    monkeypatch.setattr(LoweringContext, "word_of", lambda self, vector: None)
    monkeypatch.setattr(LoweringContext, "reuse", lambda self, key, make: make())


@pytest.mark.parametrize("head_dim", DIMS)
@pytest.mark.parametrize("without", [_without_cse, _without_packing_reuse],
                         ids=["cse", "packing"])
def test_the_mechanism_shrinks_the_input_and_keeps_the_ptx(head_dim, without, monkeypatch,
                                                            tmp_path):
    ops, llvm_lines, ptx = _current(head_dim)
    without(monkeypatch)
    monkeypatch.setenv("WARPSTAGE_CACHE_DIR", str(tmp_path / "reference"))
    ref_ops, ref_llvm_lines, ref_ptx = _build(head_dim)
    assert ptx == ref_ptx
    if without is _without_cse:
        assert ops < ref_ops
    assert llvm_lines < ref_llvm_lines
