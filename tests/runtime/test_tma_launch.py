"""Launching kernels with TMA descriptor arguments: ``ws.ops.flash_attention``'s descriptor reuse
(warpstage/ops/attention.py ``descriptor``), saving and loading a kernel with a descriptor
parameter (warpstage/jit/loaded.py), and the stream of a launch whose only tensors are inside
descriptors. The GPU-side checks run on the pretend GPU of tests/fake_gpu.py (the descriptor
"encoding" there is a digest of everything the real map holds); the simulator checks compare
against the float64 numpy reference. tests/runtime/test_tma_launch_gpu.py runs the same kernels on
the GPU."""
import gc
import weakref

import numpy as np
import pytest

import warpstage as ws
from fake_gpu import ENCODED, RAW_STREAM, fake_encode, install
from warpstage.backend import find_ptxas
from warpstage.jit.loaded import bind_host_args
from warpstage.ops import attention, descriptors
from warpstage.ops.attention import flash_attention, reference
from warpstage.runtime.tensormap import TensorMapArg

torch = pytest.importorskip("torch")
needs_ptxas = pytest.mark.skipif(find_ptxas(ws.CompileOptions()) is None, reason="no ptxas")


@pytest.fixture
def fake_gpu(monkeypatch):
    monkeypatch.setattr(descriptors, "_DESCRIPTORS", {})
    launches = install(monkeypatch, torch)
    # a kernel of its own: its generated call path reads the pretend stream (one made in an
    # earlier test holds that process's torch stream reader)
    monkeypatch.setattr(attention, "flash_attention_wgmma_kernel",
                        ws.kernel(attention.flash_attention_wgmma_kernel.fn))
    return launches


def _qkv(seq=128, seed=0, batch=1, heads=2, dim=64):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(batch, heads, seq, dim, generator=g).to(torch.bfloat16) for _ in range(3)]


def _maps(launch):
    """The 128-byte maps of q, k, v of a recorded flash_attention_wgmma_kernel launch (o's, the
    TMA-store epilogue's, comes last and is left out)."""
    return [x for x in launch[5] if isinstance(x, bytes)][:3]


def _qkv_encoded():
    """The encoded descriptors of q, k and v (o's, of the TMA-store epilogue, have the 64-row
    box ``fa.o_box``; q's and k/v's are taller)."""
    return [d for d in ENCODED if d.box[2] != 64]


def _qkv_table():
    """The descriptor table without o's entries (box (1, 1, 64, 64), key field 6)."""
    return {k: d for k, d in descriptors._DESCRIPTORS.items() if k[6][2] != 64}


def _expected_maps(q, k, v):
    """The maps of freshly built descriptors of q, k, v (the boxes the wgmma kernel uses)."""
    fa = attention.wgmma_policy_for(q.shape[3], "BFloat16", False, q.shape[3] ** -0.5)
    q_box, kv_box = fa.descriptor_boxes()
    maps = [fake_encode(ws.tma.TensorDescriptor(x, box, swizzle=128))
            for x, box in ((q, q_box), (k, kv_box), (v, kv_box))]
    del ENCODED[-3:]
    return maps


# -- ws.ops.flash_attention's descriptors -----------------------------------------------------

def test_the_same_tensors_reuse_their_descriptors(fake_gpu):
    q, k, v = _qkv()
    flash_attention(q, k, v, mma="wgmma")
    assert len(_qkv_encoded()) == 3
    first = list(descriptors._DESCRIPTORS.values())[:3]
    for _ in range(3):
        flash_attention(q, k, v, mma="wgmma")
    assert len(_qkv_encoded()) == 3                       # no q/k/v encoding after the first
    assert list(descriptors._DESCRIPTORS.values())[:3] == first
    assert _maps(fake_gpu[-1]) == [d._encoded for d in first]   # the kept maps, re-sent
    assert _maps(fake_gpu[-1]) == _expected_maps(q, k, v)
    assert fake_gpu[-1][4] == RAW_STREAM


def test_new_tensors_get_their_own_maps_and_a_reused_address_a_correct_one(fake_gpu):
    q, k, v = _qkv()
    flash_attention(q, k, v, mma="wgmma")
    q2, k2, v2 = _qkv(seed=1)                             # new memory: new descriptors
    flash_attention(q2, k2, v2, mma="wgmma")
    assert _maps(fake_gpu[-1]) == _expected_maps(q2, k2, v2) != _expected_maps(q, k, v)
    # Other tensor objects at the same addresses with the same geometry (what a tensor freed
    # and another allocated in its place looks like to the cache): the kept descriptors, whose
    # maps are exactly what a new descriptor of these tensors encodes.
    kept = _qkv_table()
    again = [torch.empty(0, dtype=x.dtype).set_(x.untyped_storage(), 0, x.shape, x.stride())
             for x in (q, k, v)]
    assert [a.data_ptr() for a in again] == [x.data_ptr() for x in (q, k, v)]
    n = len(_qkv_encoded())
    flash_attention(*again, mma="wgmma")
    assert len(_qkv_encoded()) == n and _qkv_table() == kept
    assert _maps(fake_gpu[-1]) == _expected_maps(*again)
    # The same address with another geometry (fewer queries, a longer key sequence): new maps.
    shorter = q[:, :, :64]
    longer = [torch.empty(1, 2, 256, 64, dtype=torch.bfloat16) for _ in range(2)]
    flash_attention(shorter, *longer, mma="wgmma")
    assert _maps(fake_gpu[-1]) == _expected_maps(shorter, *longer)
    assert len(_qkv_encoded()) == n + 3


def test_kept_descriptors_hold_no_tensor_and_the_table_is_bounded(fake_gpu, monkeypatch):
    monkeypatch.setattr(descriptors, "_MAX_DESCRIPTORS", 6)
    q, k, v = _qkv()
    flash_attention(q, k, v, mma="wgmma")
    assert all(d.tensor is None and d.tensor_arg.owner is None
               for d in descriptors._DESCRIPTORS.values())
    ref = weakref.ref(q)
    del q
    gc.collect()
    assert ref() is None                                  # the cache did not keep q alive
    for seed in range(1, 5):
        flash_attention(*_qkv(seed=seed), mma="wgmma")
        assert len(descriptors._DESCRIPTORS) <= 6


def test_the_simulator_builds_descriptors_of_the_tensors_themselves(sim_target, monkeypatch):
    monkeypatch.setattr(descriptors, "_DESCRIPTORS", {})
    for seed in range(2):                                 # new tensors each call
        q, k, v = _qkv(seq=64, seed=seed, heads=1)
        out = flash_attention(q, k, v, mma="wgmma")
        want = reference(*(x.float().numpy().astype(np.float64) for x in (q, k, v)))
        got = out.float().numpy()
        assert np.linalg.norm(got - want) / np.linalg.norm(want) < 1e-2
    assert descriptors._DESCRIPTORS == {}


# -- a kernel whose only tensors are inside descriptors ----------------------------------------

class Storage:
    tile: ws.smem.Array(ws.Float32, (8, 32), swizzle=128)   # one box (8, 32) of f32
    bars: ws.smem.MbarrierArray[1]


@ws.kernel
def tile_copy(src, dst, r0: ws.Int32, c0: ws.Int32):
    """Copy the (8, 32) box of ``src`` at (r0, c0) to ``dst`` at (0, 0), both through TMA."""
    s = ws.smem.allocate(Storage)
    tid = ws.arch.thread_idx()[0]
    if tid == 0:
        s.bars[0].init(1)
        ws.arch.fence_mbarrier_init()
    ws.arch.sync_threads()
    if tid == 0:
        s.bars[0].arrive_expect_tx(src.smem_bytes)
        ws.tma.load(src, s.tile, (r0, c0), s.bars[0])
    s.bars[0].wait(0)
    ws.arch.fence_proxy_async()
    ws.arch.sync_threads()
    if tid == 0:
        ws.tma.store(dst, s.tile, (0, 0))
        ws.tma.commit_group()
        ws.tma.wait_group(0)


def run_tile_copy(kern, make, back, seed=0, shape=(40, 96), at=(8, 32)):
    """``kern[1, 128]`` (tile_copy or its loaded form) on new tensors; returns (got, want)."""
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    src, dst = make(x), make(np.zeros((8, 32), np.float32))
    D = ws.tma.TensorDescriptor
    kern[1, 128](D(src, (8, 32)), D(dst, (8, 32)), *at)
    return back(dst), x[at[0]:at[0] + 8, at[1]:at[1] + 32]


def test_tile_copy_in_the_simulator(sim_target):
    for seed, at in ((0, (8, 32)), (1, (32, 64))):
        got, want = run_tile_copy(tile_copy, np.asarray, np.asarray, seed, at=at)
        np.testing.assert_array_equal(got, want)


def test_only_descriptors_run_on_torchs_current_stream(fake_gpu):
    kern = ws.kernel(tile_copy.fn)                        # its call path made on the fake GPU
    for seed in range(3):                                 # the full path, then memo hits
        run_tile_copy(kern, torch.from_numpy, lambda t: t, seed)
        assert fake_gpu[-1][4] == RAW_STREAM
    assert kern._fast.memo and kern.trace_count == 1


# -- saving and loading a kernel with descriptor parameters --------------------------------------

def _compile_tile_copy():
    D = ws.tma.TensorDescriptor
    return ws.compile(tile_copy, D(np.zeros((40, 96), np.float32), (8, 32)),
                      D(np.zeros((8, 32), np.float32), (8, 32)), ws.Int32, ws.Int32, block=128)


@needs_ptxas
def test_a_saved_kernel_with_descriptor_parameters_loads_and_binds(tmp_path):
    _compile_tile_copy().save(tmp_path / "k")
    ck = ws.load(tmp_path / "k")
    D = ws.tma.TensorDescriptor
    src = D(np.zeros((100, 64), np.float32), (8, 32))        # other sizes: the same kernel
    dst = D(np.zeros((8, 32), np.float32), (8, 32))
    leaves = bind_host_args(ck._host_params, ck.param_names, (src, dst, 1, 2), {})
    assert leaves == [src.tensormap, dst.tensormap, 1, 2]
    assert all(type(x) is TensorMapArg for x in leaves[:2])
    bad = [(D(np.zeros((40, 96), np.float32), (8, 16)), r"f32\[40, 96\], box=\(8, 16\)"),
           (D(np.zeros((40, 96), np.float16), (8, 32)), r"f16\[40, 96\]"),
           (D(np.zeros((40, 96), np.float32), (8, 32), swizzle=0), "swizzle=0"),
           (np.zeros((40, 96), np.float32), "a ndarray")]
    for value, got in bad:
        with pytest.raises(ws.ArgumentError, match=(
                r"(?s)parameter 'src': this compiled kernel was specialized for a "
                r"ws.tma.TensorDescriptor of f32 with box \(8, 32\), swizzle 128, element_strides "
                r"\(1, 1\), oob_fill 'zero', l2_promotion 128, got .*" + got)):
            bind_host_args(ck._host_params, ck.param_names, (value, dst, 1, 2), {})


@needs_ptxas
def test_a_loaded_kernel_launches_with_the_maps_on_torchs_stream(tmp_path, fake_gpu):
    _compile_tile_copy().save(tmp_path / "k")
    ck = ws.load(tmp_path / "k")
    D = ws.tma.TensorDescriptor
    src, dst = D(torch.zeros(64, 64), (8, 32)), D(torch.zeros(8, 32), (8, 32))
    ck[1, 128](src, dst, 8, 0)
    assert fake_gpu[-1][4] == RAW_STREAM
    assert fake_gpu[-1][5] == (fake_encode(src), fake_encode(dst), 8, 0)
    other = torch.zeros(64, 64)
    other._test_device = 1
    with pytest.raises(ws.ArgumentError, match="parameter 'src' is on cuda:1 and parameter "
                                               "'dst' on cuda:0"):
        ck[1, 128](D(other, (8, 32)), dst, 8, 0)
