"""DESIGN §1: the attention program compiles the same whether the policy parameter is left bare,
named ``self``, or annotated ``ws.Static[FlashAttention]`` — identical PTX."""
import pytest

import warpstage as ws
from warpstage.ops.attention import policy_for
from warpstage.ops.attention_kernel import FlashAttention, attention_body


@ws.kernel
def attention_bare(fa, q: ws.Tensor, k: ws.Tensor, v: ws.Tensor, o: ws.Tensor):
    fa.check(q, k, v, o)
    storage = ws.smem.allocate(fa.SharedStorage)
    attention_body(fa, q, k, v, o, storage)


@ws.kernel
def attention_self(self, q: ws.Tensor, k: ws.Tensor, v: ws.Tensor, o: ws.Tensor):
    self.check(q, k, v, o)
    storage = ws.smem.allocate(self.SharedStorage)
    attention_body(self, q, k, v, o, storage)


@ws.kernel
def attention_static(fa: ws.Static[FlashAttention], q: ws.Tensor, k: ws.Tensor, v: ws.Tensor,
                     o: ws.Tensor):
    fa.check(q, k, v, o)
    storage = ws.smem.allocate(fa.SharedStorage)
    attention_body(fa, q, k, v, o, storage)


KERNELS = (attention_bare, attention_self, attention_static)


def compile_all(fa):
    T = ws.Tensor[ws.BFloat16, 4]
    out = []
    for kern in KERNELS:
        ck = ws.compile(kern, fa, T, T, T, T, block=fa.threads)
        out.append(ck.ptx.replace(kern.__name__, "KERNEL"))
    return out


def test_three_receiver_spellings_give_identical_ptx():
    fa = policy_for(64, "BFloat16", False, 0.125, "cp.async")
    bare, self_, static = compile_all(fa)
    assert bare == self_ == static
    assert "setmaxnreg.dec.sync.aligned.u32 \t40;" in bare and "setmaxnreg.inc.sync.aligned.u32 \t232;" in bare


@pytest.mark.parametrize("kern", KERNELS)
def test_policy_is_static_in_explain(kern):
    fa = policy_for(64, "BFloat16", True, 0.125, "cp.async")
    T = ws.Tensor[ws.BFloat16, 4]
    table = ws.explain(kern, fa, T, T, T, T, print_table=False)
    row = [line for line in table.splitlines() if line.strip().startswith(kern.param_names[0])][0]
    assert " static " in row and "FlashAttention" in row
