"""The FP8 GEMM (``Matmul(dtype=ws.Float8E4M3FN)``, what ws.ops.scaled_matmul launches) compiled
for sm_90a on the CPU: wgmma m64n{tile_n}k32 with e4m3/e5m2 operands, both K-major (no transpose
immediates), four of them per 128-wide K stage, the 128 x 128 TMA boxes, the same ring depth as
bf16, no spills; where nvdisasm or cuobjdump is installed, the SASS has the fp8 tensor-core
instruction ``QGMMA.64x256x32.F32.E4M3.E4M3`` (nvdisasm 13.5 spells the fp8 form QGMMA, the
16-bit one HGMMA; either prefix is accepted) and keeps one wgmma-group in flight."""
import re

import numpy as np
import pytest

import warpstage as ws
from warpstage.backend import find_ptxas
from warpstage.backend.ptxas import find_cuda_tool
from warpstage.ops import Scales
from warpstage.ops.matmul_kernel import Matmul, matmul_kernel
from warpstage.options import CompileOptions
from test_matmul_ptx import assert_clean_build

ml_dtypes = pytest.importorskip("ml_dtypes")
_NP = {ws.Float8E4M3FN: ml_dtypes.float8_e4m3fn, ws.Float8E5M2: ml_dtypes.float8_e5m2,
       ws.BFloat16: ml_dtypes.bfloat16, ws.Float32: np.float32}
_SASS = {ws.Float8E4M3FN: "E4M3", ws.Float8E5M2: "E5M2"}


def compile_fp8(p: Matmul, epilogue_operands=()):
    if find_ptxas(CompileOptions()) is None:
        pytest.skip("no ptxas")
    TD = ws.tma.TensorDescriptor
    a = np.zeros((256, 256), _NP[p.dtype])
    b = np.zeros((256, 256), _NP[p.b_dtype])
    c = np.zeros(((2,) if p.split_k else ()) + (256, 256), _NP[p.out_dtype])
    ba, bb, bc = p.descriptor_boxes()
    return ws.compile(matmul_kernel, p, TD(a, ba), TD(b, bb), TD(c, bc), ws.Int32, ws.Int32,
                      ws.Int32, ws.Int32, ws.Int32, epilogue_operands, ws.Int32, (),
                      block=(p.threads, 1, 1))


def test_policy_doubles_tile_k_and_keeps_the_ring():
    p = Matmul(dtype=ws.Float8E4M3FN, a_major="K", b_major="K")
    bf = Matmul(dtype=ws.BFloat16, b_major="K")
    assert (p.tile_k, p.mma_k, bf.tile_k, bf.mma_k) == (128, 32, 64, 16)
    assert p.stage_bytes == bf.stage_bytes and p.num_stages == bf.num_stages
    assert p.out_dtype is ws.BFloat16                      # fp8's default output
    assert p.descriptor_boxes()[:2] == ((128, 128), (256, 128))
    with pytest.raises(ValueError, match="K-major"):
        Matmul(dtype=ws.Float8E4M3FN, a_major="K", b_major="MN")
    with pytest.raises(ValueError, match="b_dtype"):
        Matmul(dtype=ws.Float8E4M3FN, a_major="K", b_major="K", b_dtype=ws.BFloat16)


@pytest.mark.parametrize("fields, scales", [
    (dict(dtype=ws.Float8E4M3FN), "tensor"),
    (dict(dtype=ws.Float8E5M2, b_dtype=ws.Float8E4M3FN, tile_n=128, out_dtype=ws.Float32),
     "row"),
    (dict(dtype=ws.Float8E4M3FN, split_k=True, out_dtype=ws.Float32), None)],
    ids=["e4m3-bf16-tensorwise", "e5m2xe4m3-f32-rowwise-128", "split-k"])
def test_ptx_ptxas_and_sass(fields, scales):
    ops = ()
    if scales is not None:
        n = 256
        s = np.ones((n if scales == "row" else 1,), np.float32)
        epi = Scales(s, s, np.zeros(n, np.float32))
        ops = tuple(epi.operands())
        fields = dict(fields, epilogue=epi)
    p = Matmul(a_major="K", b_major="K", **fields)
    ck = compile_fp8(p, ops)
    ptx = ck.ptx
    ta, tb = p.dtype.ir_type.name, p.b_dtype.ir_type.name
    mma = f"wgmma.mma_async.sync.aligned.m64n{p.tile_n}k32.f32.{ta}.{tb}"
    assert ptx.count(mma) == 8                         # the first K step and the K loop: 4 each
    assert "k16" not in ptx
    lines = [ln for ln in ptx.splitlines() if "wgmma.mma_async" in ln]
    assert all(ln.rstrip().endswith("%ws_p, 1, 1;") for ln in lines)   # no tnsp immediates
    assert ptx.count("wgmma.wait_group.sync.aligned 1;") == 1
    assert "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier" in ptx
    assert_clean_build(ck, p)
    if not (find_cuda_tool("nvdisasm") or find_cuda_tool("cuobjdump")):
        pytest.skip("SASS checks need nvdisasm or cuobjdump on PATH")
    sass = ck.sass
    shape = f"GMMA.64x{p.tile_n}x32.F32.{_SASS[p.dtype]}.{_SASS[p.b_dtype]} "
    gmmas = re.findall(r"\b([HQ]GMMA\.\S+ )", sass)
    assert len(gmmas) == 8 and all(g[1:] == shape for g in gmmas), sorted(set(gmmas))
    assert "UTMALDG" in sass and "UTMASTG" in sass and sass.count("USETMAXREG") == 2
    depbars = re.findall(r"WARPGROUP\.DEPBAR\.LE gsb0, (0x[0-9a-f]+)", sass)
    assert sorted(depbars) == ["0x0", "0x1"], depbars
