"""Compile-only checks of the FlashAttention kernel (no GPU needed, ptxas needed): the consumer
runs on the tensor cores (mma.sync, ldmatrix) and the register split reaches the SASS. ptxas honours ``setmaxnreg`` (SASS ``USETMAXREG``) only when the entry
has ``.maxntid`` and ``.minnctapersm 1`` and the roles sit in one if/else of the entry; otherwise
it warns C7508 (or C7504 when compiled as a relocatable unit) and ignores it."""

import pytest

import warpstage as ws
from warpstage.backend.ptxas import find_cuda_tool
from warpstage.backend import find_ptxas
from warpstage.ops import FlashAttention, flash_attention_kernel
from warpstage.options import CompileOptions

pytestmark = pytest.mark.filterwarnings("ignore::warpstage.RecompileWarning")


@pytest.fixture(scope="module", autouse=True)
def need_ptxas():
    if find_ptxas(CompileOptions()) is None:
        pytest.skip("no ptxas found (nvidia-cuda-nvcc wheel, CUDA_HOME, PATH, WARPSTAGE_PTXAS)")


@pytest.mark.parametrize("head_dim, tile_m, threads, entry_regs",
                         [(64, 128, 384, 168), (128, 128, 384, 168), (128, 64, 256, 232)])
@pytest.mark.parametrize("causal", [False, True])
def test_register_split_survives_to_sass(head_dim, tile_m, threads, entry_regs, causal):
    fa = FlashAttention(head_dim=head_dim, causal=causal, tile_m=tile_m)
    assert fa.threads == threads
    T = ws.Tensor[ws.BFloat16, 4]
    ck = ws.compile(flash_attention_kernel, fa, T, T, T, T, block=(fa.threads, 1, 1))
    ptx = ck.ptx
    assert f".maxntid {threads}, 1, 1" in ptx and ".minnctapersm 1" in ptx
    assert ptx.count("setmaxnreg.dec.sync.aligned.u32") == 1
    assert ptx.count("setmaxnreg.inc.sync.aligned.u32") == 1
    assert "setmaxnreg.dec.sync.aligned.u32 \t40;" in ptx
    assert "setmaxnreg.inc.sync.aligned.u32 \t232;" in ptx
    assert ".func" not in ptx and "call.uni" not in ptx      # both roles inlined into the entry
    assert "cp.async.mbarrier.arrive.noinc" in ptx and "mbarrier.try_wait.parity" in ptx
    # the consumer's tensor-core work per stage: S = Q K^T and O += P V, each
    # (tile_n / 8) x (D / 16) m16n8k16 MMAs, K by ldmatrix.x4 and V by ldmatrix.x4.trans
    mmas = fa.tile_n // 8 * head_dim // 16
    assert ptx.count("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32") == 2 * mmas
    assert ptx.count("ldmatrix.sync.aligned.m8n8.x4.shared.b16") == mmas // 2
    assert ptx.count("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16") == mmas // 2
    assert "ex2.approx" in ptx and "shfl.sync.bfly" in ptx
    log = ck.ptxas_log
    assert "C7508" not in log and "C7504" not in log and "ignored" not in log, log
    res = ck.resources
    assert res.registers == entry_regs          # ptxas's budget at entry for this block size
    assert res.spill_stores == 0 and res.spill_loads == 0 and res.stack_frame == 0
    assert ck.dynamic_smem == fa.smem_bytes
    if find_cuda_tool("nvdisasm") or find_cuda_tool("cuobjdump"):
        sass = ck.sass
        assert sass.count("USETMAXREG") == 2 and "USETMAXREG.DEALLOC" in sass
