"""What goes wrong with wgmma, and what the errors say: the simulator's checks (missing fence,
partial or divergent warpgroups, warps at different wgmmas, misaligned swizzled tiles,
descriptors outside shared memory or differing between threads, operands overwritten before
the wait) and the wrappers' operand errors, each naming the kernel's file:line."""
import inspect

import numpy as np
import pytest

import warpstage as ws
from warpstage.lang.wgmma import TileLayout

pytestmark = pytest.mark.filterwarnings("ignore::warpstage.RecompileWarning")

LA = TileLayout(64, 16, ws.BFloat16, 32)
LB = TileLayout(8, 16, ws.BFloat16, 32)
Tiles = ws.smem.make_storage("Tiles", a=LA.spec, b=LB.spec)
Padded = ws.smem.make_storage("Padded", pad=ws.smem.Array[ws.Uint8, (128,), 16],
                              a=ws.smem.Array[ws.BFloat16, (64, 64), 128],
                              b=ws.smem.Array[ws.BFloat16, (8, 64), 1024])


def line_of(fn, marker):
    src, first = inspect.getsourcelines(fn)
    return first + next(i for i, l in enumerate(src) if marker in l)


def run(kernel, threads=128):
    out = np.zeros((64, 8), np.float32)
    kernel[1, threads](out)
    return out


def store(out, acc):
    for i, (r, c) in enumerate(ws.wgmma.accumulator_coords(8)):
        out[r, c] = acc[i]


def descs(st):
    """The K-major, 32-byte-swizzled descriptors of ``Tiles``' A and B (called while tracing)."""
    return ws.wgmma.tile_descriptor(st.a, "K", 32), ws.wgmma.tile_descriptor(st.b, "K", 32)


def commit_wait_store(out, acc):
    """Commit the wgmma group, wait for it and store the (64, 8) accumulator to ``out``."""
    ws.wgmma.commit_group()
    store(out, ws.wgmma.wait_group(0, acc))


@ws.kernel
def correct(out: ws.Tensor):
    st = ws.smem.allocate(Tiles)
    a, b = descs(st)
    acc = ws.wgmma.fence(ws.wgmma.zeros(8))
    acc = ws.wgmma.mma(a, b, acc)
    commit_wait_store(out, acc)


def test_the_reference_kernel_runs():
    assert not run(correct).any()          # zero-filled shared memory: D = 0


@ws.kernel
def no_fence(out: ws.Tensor):
    st = ws.smem.allocate(Tiles)
    a, b = descs(st)
    acc = ws.wgmma.mma(a, b, ws.wgmma.zeros(8))            # NO-FENCE
    commit_wait_store(out, acc)


@ws.kernel
def no_fence_after_wait(out: ws.Tensor):
    st = ws.smem.allocate(Tiles)
    a, b = descs(st)
    acc = ws.wgmma.fence(ws.wgmma.zeros(8))
    acc = ws.wgmma.mma(a, b, acc)
    ws.wgmma.commit_group()
    acc = ws.wgmma.wait_group(0, acc)                      # THE-WAIT
    acc = ws.wgmma.mma(a, b, acc * 2.0)                    # SECOND
    commit_wait_store(out, acc)


def test_mma_without_fence():
    with pytest.raises(ws.SimulatorError) as ei:
        run(no_fence)
    msg = str(ei.value)
    assert "no wgmma.fence since the kernel began" in msg and "ws.wgmma.fence(acc)" in msg
    assert ei.value.where.endswith(f":{line_of(no_fence, '# NO-FENCE')}")
    with pytest.raises(ws.SimulatorError) as ei:
        run(no_fence_after_wait)
    assert f"since its last wgmma.wait_group at " in str(ei.value)
    assert f":{line_of(no_fence_after_wait, '# THE-WAIT')}" in str(ei.value)
    assert ei.value.where.endswith(f":{line_of(no_fence_after_wait, '# SECOND')}")


@ws.kernel
def some_warps(out: ws.Tensor):
    st = ws.smem.allocate(Tiles)
    a, b = descs(st)
    warp = ws.arch.make_warp_uniform(ws.arch.warp_idx())
    acc = ws.wgmma.fence(ws.wgmma.zeros(8))
    if warp < 2:
        acc = ws.wgmma.mma(a, b, acc)                      # HALF
        ws.wgmma.commit_group()
        acc = ws.wgmma.wait_group(0, acc)
    store(out, acc)


@ws.kernel
def different_ops(out: ws.Tensor):
    st = ws.smem.allocate(Tiles)
    a, b = descs(st)
    warp = ws.arch.make_warp_uniform(ws.arch.warp_idx())
    acc = ws.wgmma.fence(ws.wgmma.zeros(8))
    if warp < 2:
        acc = ws.wgmma.mma(a, b, acc)                      # FIRST-SITE
    else:
        acc = ws.wgmma.mma(a, b, acc, scale_d=False)       # OTHER-SITE
    commit_wait_store(out, acc)


@ws.kernel
def divergent(out: ws.Tensor):
    st = ws.smem.allocate(Tiles)
    a, b = descs(st)
    acc = ws.wgmma.fence(ws.wgmma.zeros(8))
    if ws.arch.lane_idx() < 16:
        acc = ws.wgmma.mma(a, b, acc)                      # DIVERGENT
    commit_wait_store(out, acc)


def test_warpgroup_collective_errors():
    with pytest.raises(ws.DeadlockError) as ei:
        run(some_warps)
    msg = str(ei.value)
    assert "warp 0: waiting at wgmma.mma_async at" in msg and "waiting for warps [2, 3]" in msg
    assert "warp 2: exited" in msg and "all 4 warps of the warpgroup" in msg
    with pytest.raises(ws.BarrierError) as ei:
        run(different_ops)
    msg = str(ei.value)
    assert f":{line_of(different_ops, '# FIRST-SITE')}" in msg
    assert ei.value.where.endswith(f":{line_of(different_ops, '# OTHER-SITE')}")
    assert "must issue the same wgmma instructions" in msg
    with pytest.raises(ws.BarrierError) as ei:
        run(divergent)
    assert "wgmma.mma_async in divergent code" in str(ei.value)
    assert "16 of 32 lanes" in str(ei.value)
    with pytest.raises(ws.BarrierError) as ei:
        run(correct, threads=96)
    assert "warpgroup 0, which this CTA of 96 threads does not have complete" in str(ei.value)


@ws.kernel
def misaligned(out: ws.Tensor):
    st = ws.smem.allocate(Padded)
    a = ws.wgmma.make_descriptor(st.a, 16, 1024, 128)     # at byte 128: not 1024-aligned
    b = ws.wgmma.tile_descriptor(st.b, "K", 128)
    acc = ws.wgmma.fence(ws.wgmma.zeros(8))
    acc = ws.wgmma.mma(a, b, acc, dtype=ws.BFloat16)       # MISALIGNED
    commit_wait_store(out, acc)


@ws.kernel
def outside(out: ws.Tensor):
    st = ws.smem.allocate(Tiles)
    a = ws.wgmma.make_descriptor(st.a, lbo=16, sbo=65536, swizzle=32)
    b = ws.wgmma.tile_descriptor(st.b, "K", 32)
    acc = ws.wgmma.fence(ws.wgmma.zeros(8))
    acc = ws.wgmma.mma(a, b, acc, dtype=ws.BFloat16)       # OUTSIDE
    commit_wait_store(out, acc)


@ws.kernel
def not_uniform(out: ws.Tensor):
    st = ws.smem.allocate(Tiles)
    a, b = descs(st)
    shift = ws.Uint64(ws.arch.warp_idx() // 2)             # warps 2, 3 point 16 bytes further
    acc = ws.wgmma.fence(ws.wgmma.zeros(8))
    acc = ws.wgmma.mma(a.desc + shift, b, acc, dtype=ws.BFloat16)
    commit_wait_store(out, acc)


@ws.kernel
def overwritten(out: ws.Tensor):
    st = ws.smem.allocate(Tiles)
    a, b = descs(st)
    acc = ws.wgmma.fence(ws.wgmma.zeros(8))
    acc = ws.wgmma.mma(a, b, acc)                          # READER
    ws.wgmma.commit_group()
    if ws.arch.thread_idx()[0] == 127:                     # warp 3 issues last, waits first
        st.b[3, 5] = ws.BFloat16(1.0)                      # a race with the wgmma's read
    store(out, ws.wgmma.wait_group(0, acc))                # WAITER


def test_shared_memory_operand_errors():
    with pytest.raises(ws.SimulatorError) as ei:
        run(misaligned)
    msg = str(ei.value)
    assert "the A tile is misaligned for its 128-byte swizzle: its start address 0x80 lies in " \
           "row 1 of a 1024-byte swizzle atom" in msg and "ws.smem.Array[..., 1024]" in msg
    assert ei.value.where.endswith(f":{line_of(misaligned, '# MISALIGNED')}")
    with pytest.raises(ws.OutOfBoundsError) as ei:
        run(outside)
    assert "the A descriptor" in str(ei.value) and "outside the CTA's" in str(ei.value)
    assert ei.value.where.endswith(f":{line_of(outside, '# OUTSIDE')}")
    with pytest.raises(ws.SimulatorError) as ei:
        run(not_uniform)
    assert "the A descriptor differs between the threads of warpgroup 0" in str(ei.value)
    assert "thread 64 has" in str(ei.value)
    with pytest.raises(ws.SimulatorError) as ei:
        run(overwritten)
    msg = str(ei.value)
    assert "(operand B, byte 0x" in msg and "changed before the wgmma.wait_group at" in msg
    assert f":{line_of(overwritten, '# READER')}" in msg
    assert ei.value.where.endswith(f":{line_of(overwritten, '# WAITER')}")


# -- operand errors of the wrappers ---------------------------------------------------------------
@pytest.mark.parametrize("stmt, message", [
    ("ws.wgmma.mma(a, b, ws.wgmma.Fragment.filled(ws.Float32, 6, 0.0))",
     "ws.wgmma.mma()'s n: expected a multiple of 8 in [8, 256], got 12"),
    ("ws.wgmma.mma(a, b, ws.wgmma.zeros(16))",
     "ws.wgmma.mma()'s B tile: expected at least 16 x 16"),
    ("ws.wgmma.mma(a, b, None)", "ws.wgmma.mma()'s acc: expected an accumulator fragment"),
    ("ws.wgmma.mma(a, b, ws.wgmma.zeros(8), scale_a=2)", "ws.wgmma.mma()'s scale_a: expected +1 "
                                                          "or -1, got 2"),
    ("ws.wgmma.mma(a, h, ws.wgmma.zeros(8))", "ws.wgmma.mma()'s operand dtypes: expected one "
                                               "dtype (Float16 or BFloat16), or each of A and B "
                                               "Float8E4M3FN / Float8E5M2, got 'A BFloat16, B "
                                               "Float16'"),
    ("ws.wgmma.mma(ws.wgmma.Fragment.filled(ws.BFloat16, 7, 0.0), b, ws.wgmma.zeros(8))",
     "ws.wgmma.mma()'s A fragment: expected a Fragment of 8 Float16 or BFloat16"),
    ("ws.wgmma.mma(a.desc, b, ws.wgmma.zeros(8))", "ws.wgmma.mma()'s A dtype: expected "
                                                   "dtype=ws.BFloat16, ws.Float16, "
                                                   "ws.Float8E4M3FN or ws.Float8E5M2"),
    ("ws.wgmma.mma(a, b, ws.wgmma.zeros(8), scale_d=1)", "ws.wgmma.mma()'s scale_d: expected a "
                                                         "bool or a dynamic Boolean, got 1"),
    ("ws.wgmma.tile_descriptor(st.wide, 'K', 0)", "ws.wgmma.tile_descriptor()'s tile shape: "
                                                   "expected a canonical 16-byte-block layout"),
    ("ws.wgmma.tile_descriptor(st.wide, 'K', 0)", "e.g. (8, 64, 8)"),
    ("ws.wgmma.tile_descriptor(st.a, 'N', 32)", "ws.wgmma.tile_descriptor()'s major: expected 'K'"),
    ("ws.wgmma.tile_descriptor(st.a, 'K', 48)", "ws.wgmma.tile_descriptor()'s swizzle: expected "
                                                "0 (none), 32, 64 or 128 (bytes), got 48"),
    ("ws.wgmma.make_descriptor(st.a, 24, 0)", "ws.wgmma.make_descriptor()'s lbo: expected a "
                                              "static multiple of 16"),
    ("ws.wgmma.make_descriptor(out.ptr, 16, 0)", "ws.wgmma.make_descriptor()'s tile: expected a "
                                                 "shared pointer"),
    ("ws.wgmma.wait_group(8)", "ws.wgmma.wait_group()'s group count: expected a static int in "
                               "[0, 8), got 8"),
    ("ws.wgmma.wait_group(0, 1.5)", "ws.wgmma.wait_group(): expected Fragments or dynamic "
                                    "scalars"),
    ("a.at(row=4)", "TileDescriptor.at()'s row: expected a multiple of 8 in [0, 64), got 4"),
    ("a.k_step(1)", "TileDescriptor.at()'s k: expected a multiple of 16 in [0, 16), got 16"),
    ("ws.wgmma.accumulator_coords(7)", "ws.wgmma.accumulator_coords()'s n: expected a multiple "
                                       "of 8 in [8, 256], got 7"),
    # packed A fragments (Fragment.pack, accumulator_to_a(packed=True))
    ("ws.wgmma.zeros(8).pack(ws.Float32)", "Fragment.pack()'s dtype: expected ws.BFloat16 or "
                                           "ws.Float16, got 'Float32'"),
    ("ws.wgmma.Fragment.filled(ws.Float32, 3, 0.0).pack(ws.BFloat16)",
     "Fragment.pack()'s fragment: expected a Float32 fragment of even length"),
    ("ws.wgmma.Fragment.filled(ws.BFloat16, 8, 0.0).pack(ws.BFloat16)",
     "Fragment.pack()'s fragment: expected a Float32 fragment of even length"),
    ("ws.wgmma.accumulator_to_a(ws.wgmma.zeros(16), 0, ws.BFloat16, packed=1)",
     "ws.wgmma.accumulator_to_a()'s packed: expected a static bool, got 1"),
    ("ws.wgmma.mma(ws.wgmma.zeros(32).pack(ws.BFloat16), b, ws.wgmma.zeros(8))",
     "ws.wgmma.mma()'s A fragment: expected a Fragment of 8 Float16 or BFloat16"),
])
def test_operand_errors(stmt, message, tmp_path):
    src = ("def k(out: ws.Tensor):\n"
           "    st = ws.smem.allocate(S)\n"
           "    a = ws.wgmma.tile_descriptor(st.a, 'K', 32)\n"
           "    b = ws.wgmma.tile_descriptor(st.b, 'K', 32)\n"
           "    h = ws.wgmma.tile_descriptor(st.h, 'K', 32)\n"
           f"    {stmt}\n")
    path = tmp_path / "kern_wgmma.py"
    path.write_text(src)
    storage = ws.smem.make_storage("S", a=LA.spec, b=LB.spec,
                                   h=TileLayout(8, 16, ws.Float16, 32).spec,
                                   wide=ws.smem.Array[ws.BFloat16, (64, 64), 1024])
    namespace = {"ws": ws, "S": storage}
    exec(compile(src, str(path), "exec"), namespace)
    kern = ws.kernel(namespace["k"])
    with pytest.raises(ws.OperandError) as ei:
        kern[1, 128](np.zeros(4, np.float32))
    msg = str(ei.value)
    assert message in msg and "Fix:" in msg and f'{path}", line 6' in msg and stmt in msg


def test_accumulator_and_a_fragment_coordinates_follow_the_ptx_figures():
    # PTX ISA "Register Fragments" (wgmma .m64nNk16 D): thread 0 holds (0,0) (0,1) (8,0) (8,1)
    # (0,8) ...; lane 5 of warp 0 is row 1, columns 2, 3; warp 1 starts at row 16.
    assert ws.wgmma.accumulator_coords(16, 0) == [(0, 0), (0, 1), (8, 0), (8, 1), (0, 8), (0, 9),
                                                  (8, 8), (8, 9)]
    assert ws.wgmma.accumulator_coords(8, 5) == [(1, 2), (1, 3), (9, 2), (9, 3)]
    assert ws.wgmma.accumulator_coords(8, 32 + 31) == [(23, 6), (23, 7), (31, 6), (31, 7)]
    assert ws.wgmma.a_fragment_coords(127) == [(55, 6), (55, 7), (63, 6), (63, 7), (55, 14),
                                               (55, 15), (63, 14), (63, 15)]
    seen = {rc for t in range(128) for rc in ws.wgmma.accumulator_coords(24, t)}
    assert seen == {(r, c) for r in range(64) for c in range(24)}       # each element once


@ws.kernel
def dynamic_tid_coords(out: ws.Tensor):
    """out[t, v] = (row, col) of register v of thread t for a dynamic tid (256 threads: the
    second warpgroup's tid is 128 + its index, which accumulator_coords ignores)."""
    t = ws.arch.thread_idx()[0]
    for v, (r, c) in enumerate(ws.wgmma.accumulator_coords(24, t)):
        out[t, v, 0] = r
        out[t, v, 1] = c


def test_accumulator_coords_of_a_dynamic_thread_index_are_the_static_ones():
    out = np.full((256, 12, 2), -1, np.int32)
    dynamic_tid_coords[1, 256](out)
    want = np.array([ws.wgmma.accumulator_coords(24, t % 128) for t in range(256)], np.int32)
    np.testing.assert_array_equal(out, want)


@pytest.mark.skipif("align" not in getattr(ws.smem.SmemArray, "__slots__", ()),
                    reason="shared arrays do not carry their alignment")
def test_swizzled_tile_alignment_is_checked_while_compiling(tmp_path):
    src = ("def k(out: ws.Tensor):\n"
           "    st = ws.smem.allocate(S)\n"
           "    ws.wgmma.tile_descriptor(st.t, 'K', 128)\n")
    path = tmp_path / "kern_align.py"
    path.write_text(src)
    storage = ws.smem.make_storage("S", t=ws.smem.Array[ws.BFloat16, (64, 64), 128])
    namespace = {"ws": ws, "S": storage}
    exec(compile(src, str(path), "exec"), namespace)
    with pytest.raises(ws.OperandError) as ei:
        ws.kernel(namespace["k"])[1, 128](np.zeros(4, np.float32))
    msg = str(ei.value)
    assert "tile alignment: expected at least 1024 bytes for a 128-byte swizzle" in msg
    assert "ws.smem.Array[..., 1024]" in msg and f'{path}", line 3' in msg


@ws.kernel
def store_then_mma(out: ws.Tensor, barrier: ws.Static[bool]):
    st = ws.smem.allocate(Tiles)
    a, b = descs(st)
    if ws.arch.thread_idx()[0] == 0:
        st.b[1, 2] = ws.BFloat16(2.0)                      # STORE
    ws.arch.fence_proxy_async()
    if barrier:
        ws.arch.sync_threads()
    acc = ws.wgmma.fence(ws.wgmma.zeros(8))
    acc = ws.wgmma.mma(a, b, acc)                          # READ
    commit_wait_store(out, acc)


def test_race_detector_sees_the_wgmma_operand_reads():
    ws.set_target("sim", races=True)
    try:
        out = np.zeros((64, 8), np.float32)
        store_then_mma[1, 128](out, True)                  # ordered by the barrier: no race
        with pytest.raises(ws.RaceError) as ei:
            store_then_mma[1, 128](out, False)
    finally:
        ws.set_target("sim", races=False)
    msg = str(ei.value)
    assert f":{line_of(store_then_mma, '# STORE')}" in msg
    assert f":{line_of(store_then_mma, '# READ')}" in msg
