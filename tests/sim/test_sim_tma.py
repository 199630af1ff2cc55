"""The simulator's TMA rules on hand-built IR: copies land at the wait that observes their phase
(not before, not for a later phase), try_wait delivers too, and run-time faults (misaligned or
out-of-range shared addresses, a descriptor whose box differs from the compiled one, bulk copy
sizes, uninitialized mbarriers) name the op's line."""
import numpy as np
import pytest

import warpstage as ws
from warpstage import sim
from warpstage.errors import OutOfBoundsError, SimulatorError
from warpstage.ir import f32, i32, u8, u64
from warpstage.ir.types import tensormap

from simkit import KernelBuilder, gptr
from tma_kit import init_barrier

BOX = (8, 32)
BYTES = 8 * 32 * 4


def tma_module(dst_offset=0, box=BOX, second_phase=False, poll=False, line=7):
    """Thread 0 inits an mbarrier at smem 8192 (count 1), announces and loads one box at (0, 0)
    into smem ``dst_offset``; with ``second_phase`` it then waits, loads box (8, 0) to the same
    place for phase 1 without arriving, and re-checks phase 0 (a try_wait). Every lane then waits
    on phase 0 (``poll``: a try_wait) and copies shared memory to ``out`` (floats, 2 boxes)."""
    k = KernelBuilder("tma", [tensormap, gptr(f32)])
    desc, out = k.args
    b, c = k.b, k.const
    lane = b.sreg("laneid", i32)
    base = b.smem_base(u8)
    tile = b.ptr_cast(b.ptr_offset(base, c(i32, dst_offset)), f32)
    bar = b.ptr_cast(b.ptr_offset(base, c(i32, 8192)), u64)
    first = b.cmp("eq", lane, c(i32, 0))

    def issue():
        b.mbarrier("init", bar, c(i32, 1))
        b.mbarrier("arrive_expect_tx", bar, c(i32, BYTES))
        k.line(line)
        b.op("tma.load", (desc, tile, bar, c(i32, 0), c(i32, 0)), (), {"box": box, "bytes": BYTES})
        k.line(1)
        if second_phase:
            b.mbarrier("wait_parity", bar, c(i32, 0))
            b.mbarrier("expect_tx", bar, c(i32, BYTES))
            b.op("tma.load", (desc, tile, bar, c(i32, 8), c(i32, 0)), (),
                 {"box": box, "bytes": BYTES})
        return []
    k.if_(first, (), issue)
    if poll:
        b.mbarrier("try_wait_parity", bar, c(i32, 0))
    else:
        b.mbarrier("wait_parity", bar, c(i32, 0))
    k.for_(lane, c(i32, 8 * 32), c(i32, 32), [],
           lambda i: k.store_at(out, i, k.load_at(tile, i)) or [])
    return k.finish()


def launch(module, x, smem=8200, box=BOX, out=None):
    mem = sim.Memory()
    desc = ws.tma.TensorDescriptor(x, box, swizzle=0)
    out = np.full(8 * 32, -1, np.float32) if out is None else out
    sim.run(module, "tma", 1, 32, [desc.sim_map(mem.register(x)), mem.register(out)], mem,
            smem_bytes=smem, echo=False)
    return out


X = np.arange(16 * 32, dtype=np.float32).reshape(16, 32)


@pytest.mark.parametrize("poll", [False, True])
def test_the_copy_lands_at_the_wait_that_sees_its_phase(poll):
    np.testing.assert_array_equal(launch(tma_module(poll=poll), X), X[:8].ravel())


def test_a_copy_for_a_later_phase_does_not_land_at_an_earlier_phase_wait():
    # the second box completes its bytes on phase 1, which never completes (no arrival): the
    # later wait on phase 0 must not deliver it, so shared memory still holds the first box;
    # the CTA then exits with that copy in flight, which is reported
    out = np.full(8 * 32, -1, np.float32)
    with pytest.raises(SimulatorError, match=r"the tma.load at kern.py:\d+ \(.*\) was still in "
                                             r"flight when the CTA exited: no wait on its "
                                             r"mbarrier \(shared offset 0x2000\) saw phase 1 "):
        launch(tma_module(second_phase=True), X, out=out)
    np.testing.assert_array_equal(out, X[:8].ravel())


def test_a_misaligned_shared_destination_is_reported():
    with pytest.raises(SimulatorError, match=r"tma.load at kern.py:7 .*shared-memory address "
                                             r"0x40 is not 128-byte aligned"):
        launch(tma_module(dst_offset=64), X)


def test_a_destination_past_shared_memory_is_out_of_bounds():
    with pytest.raises(OutOfBoundsError, match=r"tma.load at kern.py:7.*outside the CTA's"):
        launch(tma_module(dst_offset=7296), X, smem=8200)


def test_a_descriptor_with_another_box_is_reported():
    with pytest.raises(SimulatorError, match=r"descriptor's box is \(4, 64\) but the kernel was "
                                             r"compiled for box \(8, 32\)"):
        launch(tma_module(), X, box=(4, 64))


class BulkStorage:
    buf: ws.smem.Array[ws.Float32, (64,), 16]
    bar: ws.smem.MbarrierArray[1]


@ws.kernel
def bulk_n(x: ws.Tensor, out: ws.Tensor, n: ws.Int32, init: ws.Static[bool]):
    s = ws.smem.allocate(BulkStorage)
    if ws.arch.thread_idx()[0] == 0:
        if ws.static(init):
            s.bar[0].init(1)
        ws.tma.bulk_copy(s.buf, x.ptr, n, s.bar[0])


def test_bulk_copy_size_and_mbarrier_are_checked_when_run(sim_target):
    x = np.zeros(64, np.float32)
    with pytest.raises(SimulatorError, match=r"byte count 24 is not a positive multiple of 16"):
        bulk_n[1, 32](x, x, 24, True)
    with pytest.raises(SimulatorError, match=r"no mbarrier at shared offset"):
        bulk_n[1, 32](x, x, 32, False)


@ws.kernel
def bulk_static(x: ws.Tensor):
    s = ws.smem.allocate(BulkStorage)
    ws.tma.bulk_copy(s.buf, x.ptr, 20, s.bar[0])


def test_bulk_copy_static_size_is_checked_when_traced():
    with pytest.raises(ws.OperandError, match=r"byte count: expected a positive multiple of 16"):
        ws.compile(bulk_static, ws.Tensor[ws.Float32, 1])


class ExitStorage:
    tile: ws.smem.Array(ws.Float32, (32, 32), swizzle=128)
    buf: ws.smem.Array[ws.Float32, (64,), 16]
    bar: ws.smem.MbarrierArray[1]


@ws.kernel
def exit_with_copy(desc, x: ws.Tensor, out: ws.Tensor, bulk: ws.Static[bool],
                   wait: ws.Static[bool]):
    """Thread 0 issues one TMA load (or a 256-byte bulk copy); with ``wait`` every thread waits
    for it and copies element 0 to ``out``, else the CTA exits with the copy in flight."""
    s = ws.smem.allocate(ExitStorage)
    tid = ws.arch.thread_idx()[0]
    init_barrier(s.bar[0], tid)
    if tid == 0:
        if ws.static(bulk):
            s.bar[0].arrive_expect_tx(256)
            ws.tma.bulk_copy(s.buf, x.ptr, 256, s.bar[0])        # THE-BULK
        else:
            s.bar[0].arrive_expect_tx(desc.smem_bytes)
            ws.tma.load(desc, s.tile, (0, 0), s.bar[0])          # THE-LOAD
    if ws.static(wait):
        s.bar[0].wait(0)
        if ws.static(bulk):
            out[tid] = s.buf[tid % 64]
        else:
            out[tid] = s.tile[0, tid % 32]


@pytest.mark.parametrize("bulk", [False, True])
def test_a_copy_in_flight_when_the_cta_exits_is_reported(sim_target, bulk):
    import inspect
    x = np.arange(32 * 32, dtype=np.float32).reshape(32, 32)
    desc = ws.tma.TensorDescriptor(x, (32, 32))
    out = np.zeros(128, np.float32)
    exit_with_copy[1, 128](desc, x, out, bulk, True)             # waited: runs
    want = x.ravel()[np.arange(128) % 64] if bulk else x[0, np.arange(128) % 32]
    np.testing.assert_array_equal(out, want)
    src, first = inspect.getsourcelines(exit_with_copy.fn)
    marker = "THE-BULK" if bulk else "THE-LOAD"
    line = first + next(i for i, l in enumerate(src) if marker in l)
    name = "tma.bulk_copy" if bulk else "tma.load"
    with pytest.raises(SimulatorError, match=rf"the {name} at .*test_sim_tma.py:{line} \(.*\) "
                                             r"was still in flight when the CTA exited"):
        exit_with_copy[1, 128](desc, x, out, bulk, False)
