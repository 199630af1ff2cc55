"""The GEMM kernel (warpstage/ops/matmul_kernel.py) compiled for sm_90a on the CPU: the PTX has
the warp-specialized schedule (wgmma m64n{tile_n}k16 from smem descriptors, TMA loads and
stores, setmaxnreg, ONE wgmma-group kept in flight; both schedules), ptxas reports no spills, and, where nvdisasm
or cuobjdump is installed, the SASS shows HGMMA, UTMALDG, UTMASTG, USETMAXREG and a
``WARPGROUP.DEPBAR.LE gsb0, 0x1`` in the K loop (not a full drain after every K step)."""
import re

import numpy as np
import pytest

import warpstage as ws
from dtypes_helper import numpy_dtype
from warpstage.backend import find_ptxas
from warpstage.backend.ptxas import find_cuda_tool
from warpstage.ops.matmul_kernel import Matmul, matmul_kernel
from warpstage.options import CompileOptions


def compile_policy(p: Matmul):
    if find_ptxas(CompileOptions()) is None:
        pytest.skip("no ptxas")
    TD = ws.tma.TensorDescriptor
    pre = (2,) if p.batched else ()
    x = np.zeros(pre + (256, 256), numpy_dtype("bfloat16" if p.dtype is ws.BFloat16
                                               else "float16"))
    c = np.zeros(((2,) if p.batched or p.split_k else ()) + (256, 256), numpy_dtype({ws.BFloat16: "bfloat16", ws.Float16: "float16",
                                                ws.Float32: "float32"}[p.out_dtype]))
    ba, bb, bc = p.descriptor_boxes()
    return ws.compile(matmul_kernel, p, TD(x, ba), TD(x, bb), TD(c, bc), ws.Int32, ws.Int32,
                      ws.Int32, ws.Int32, ws.Int32, (), ws.Int32,
                      (ws.Tensor[ws.Float32, 1], ws.Tensor[ws.Int32, 1]) if p.stream_k else (),
                      block=(p.threads, 1, 1))


def assert_clean_build(ck, p: Matmul) -> None:
    """ptxas gave none of the wgmma/setmaxnreg serialization warnings, nothing spilled, and the
    kernel's dynamic smem is the policy's (within a CTA's limit)."""
    log = ck.ptxas_log
    for warning in ("C7517", "C7519", "C7508", "C7504", "C7510"):
        assert warning not in log, log
    res = ck.resources
    assert res.spill_stores == 0 and res.spill_loads == 0 and res.stack_frame == 0
    assert ck.dynamic_smem == p.smem_bytes <= ws.smem.MAX_DYNAMIC_SMEM


@pytest.mark.parametrize("fields", [
    dict(),
    dict(schedule="pingpong", tile_n=128, num_stages=5, a_major="MN", b_major="K",
         out_dtype=ws.Float32, batched=True, dtype=ws.Float16),
    dict(split_k=True, out_dtype=ws.Float32, b_major="K"),
    dict(tile_m=64, a_major="MN", b_major="K", num_stages=5),
    # the plan's choice at M = 128-256 against a weight (docs/matmul.md): 64 x 128, 8 stages;
    # and with K splits
    dict(tile_m=64, tile_n=128, b_major="K", num_stages=8),
    dict(tile_m=64, tile_n=128, b_major="K", num_stages=8, split_k=True, out_dtype=ws.Float32),
    # stream-K: the fix-up's 128-register partials stored and added without spilling
    dict(stream_k=True),
    dict(stream_k=True, tile_n=192, b_major="K", num_stages=4),
    dict(stream_k=True, tile_m=64, tile_n=128, num_stages=8)],
    ids=["default", "pingpong-At-Bt-f32-batched-f16", "split-k-Bt", "tile-m-64-At-Bt",
         "64x128-8-stages-Bt", "64x128-split-k-Bt", "stream-k", "stream-k-192-Bt",
         "stream-k-64x128"])
def test_ptx_ptxas_and_sass(fields):
    check_policy_build(fields)


@pytest.mark.parametrize("fields,multicasts", [
    (dict(cluster=(2, 1)), 4),                        # B (K x 256, MN-major): 4 half boxes
    (dict(cluster=(1, 2)), 1),                        # A (128 x K, K-major): 1 half box
    (dict(cluster=(2, 1), b_major="K", tile_n=128, schedule="pingpong"), 1),
    (dict(cluster=(1, 2), a_major="MN", split_k=True, out_dtype=ws.Float32), 2)],
    ids=["2x1", "1x2", "2x1-Bt-pingpong", "1x2-At-split-k"])
def test_cluster_multicast_ptx_and_sass(fields, multicasts):
    """With a cluster the shared operand's loads are multicast (PTX .multicast::cluster, SASS
    UTMALDG...MULTICAST), the other operand's are not, and the kernel meets its peer at
    cluster barriers (init and exit); without one there is no multicast (the default case of
    test_ptx_ptxas_and_sass)."""
    ck = check_policy_build(fields)
    ptx = ck.ptx
    assert ptx.count(".multicast::cluster") == multicasts
    assert "barrier.cluster.arrive.release;" in ptx and "barrier.cluster.wait.acquire;" in ptx
    assert "mbarrier.arrive.shared::cluster.b64" in ptx
    if not (find_cuda_tool("nvdisasm") or find_cuda_tool("cuobjdump")):
        pytest.skip("SASS checks need nvdisasm or cuobjdump on PATH")
    loads = re.findall(r"UTMALDG\.[0-9]D(\.MULTICAST)?", ck.sass)
    assert loads.count(".MULTICAST") == multicasts and loads.count("") >= 1
    # the stage releases carry no GPU-scope membar (the .release.cluster arrive put 2 per stage
    # per consumer warp into the K loop: 0.53x the speed); the 2 left are the cluster barriers
    assert ck.sass.count("MEMBAR.ALL.GPU") == 2


def check_policy_build(fields):
    p = Matmul(**fields)
    ck = compile_policy(p)
    ptx = ck.ptx
    mma = f"wgmma.mma_async.sync.aligned.m64n{p.tile_n}k16.f32"
    accs = 2 if p.schedule == "pingpong" else 1       # m64 accumulators per warpgroup
    assert ptx.count(mma) == 8 * accs                 # the first K step and the K loop: 4 each
    assert ptx.count("wgmma.wait_group.sync.aligned 1;") == 1
    assert ptx.count("wgmma.wait_group.sync.aligned 0;") == 1
    rank = 3 if p.batched else 2
    assert f"cp.async.bulk.tensor.{rank}d.shared::cluster.global.tile.mbarrier" in ptx
    out_rank = 3 if p.batched or p.split_k else 2       # split-K: the 3-D f32 workspace
    assert f"cp.async.bulk.tensor.{out_rank}d.global.shared::cta.tile.bulk_group" in ptx
    assert "setmaxnreg.dec.sync.aligned.u32 \t40;" in ptx
    assert "setmaxnreg.inc.sync.aligned.u32 \t232;" in ptx
    assert ("stmatrix" in ptx) == (p.out_dtype is not ws.Float32)
    # stream-K's fix-up: one counter increment between GPU-scope fences (release, acquire)
    assert ptx.count("atom.global.add.u32") + ptx.count("atom.global.add.s32") == p.stream_k
    assert ptx.count("fence.acq_rel.gpu") == 2 * p.stream_k
    assert_clean_build(ck, p)
    # ping-pong: the consumers' turns are named-barrier arrivals (OrderedBarrier)
    assert ("barrier.cta.arrive" in ptx or "bar.arrive" in ptx) == (p.schedule == "pingpong")
    if not (find_cuda_tool("nvdisasm") or find_cuda_tool("cuobjdump")):
        pytest.skip("SASS checks need nvdisasm or cuobjdump on PATH")
    sass = ck.sass
    assert sass.count("HGMMA.64x") == 8 * accs
    assert "UTMALDG" in sass and "UTMASTG" in sass
    assert sass.count("USETMAXREG") == 2
    if p.cluster == (1, 1):
        assert "MULTICAST" not in sass and ".multicast::cluster" not in ptx
    # one drain per tile (before the epilogue), one wait-for-all-but-one per K step
    depbars = re.findall(r"WARPGROUP\.DEPBAR\.LE gsb0, (0x[0-9a-f]+)", sass)
    assert sorted(depbars) == ["0x0", "0x1"], depbars
    return ck


def loop_body(sass: str, marker: str) -> list:
    """The SASS instructions of the loop around the last instruction matching ``marker``: from
    the label the next branch after it jumps back to, to that branch."""
    lines = [ln.strip() for ln in sass.splitlines()
             if re.search(r"/\*[0-9a-f]{4,}\*/", ln) or re.match(r"\s*\.L_x_\d+:", ln)]
    at = max(i for i, ln in enumerate(lines) if re.search(marker, ln))
    back = next(i for i in range(at, len(lines)) if re.search(r"\bBRA\b", lines[i]))
    label = re.search(r"\((\.L_x_\d+)\)", lines[back]).group(1)
    start = max(i for i in range(at) if lines[i] == label + ":")
    return [ln for ln in lines[start:back + 1] if not ln.startswith(".L_x_")]


def test_stream_k_k_loops_are_the_data_parallel_ones():
    """At the same tile (128 x 256, K-major B) the stream-K kernel's consumer K loop (4 HGMMA,
    one WARPGROUP.DEPBAR.LE gsb0 0x1, the full-barrier wait and the empty-barrier arrive) and
    producer K loop (2 UTMALDG) are data-parallel's, within one instruction: the unit walk's
    divisions run once per unit, outside them (SASS read 2026-12-02: 51 / 50 and 32 / 33)."""
    dp, sk = (compile_policy(Matmul(tile_n=256, b_major="K", stream_k=s)) for s in (False, True))
    if not (find_cuda_tool("nvdisasm") or find_cuda_tool("cuobjdump")):
        pytest.skip("SASS checks need nvdisasm or cuobjdump on PATH")
    for marker, per_loop in ((r"DEPBAR\.LE gsb0, 0x1", {"HGMMA": 4, "DEPBAR": 1, "TRYWAIT": 1,
                                                         "SYNCS.ARRIVE": 1}),
                             (r"UTMALDG", {"UTMALDG": 2, "TRYWAIT": 1})):
        loops = [loop_body(ck.sass, marker) for ck in (dp, sk)]
        assert abs(len(loops[0]) - len(loops[1])) <= 1, [len(x) for x in loops]
        for body in loops:
            assert not any(re.search(r"\b(I2F|MUFU\.RCP|IABS)\b", ln) for ln in body)
            for what, count in per_loop.items():
                assert sum(what in ln for ln in body) == count, (what, body)
