"""Simulated global and shared memory: registration, views, faults with source locations."""
import numpy as np
import pytest

from warpstage import sim
from warpstage.errors import OutOfBoundsError, SimulatorError
from warpstage.ir import bf16, f32, i1, i32, i64, u8

from simkit import KernelBuilder, gptr, launch, sptr


def copy_module(t, stride=1):
    """dst[t] = src[t * stride] for t < n."""
    k = KernelBuilder("copy", [gptr(t), gptr(t), i32])
    src, dst, n = k.args
    b = k.b
    i = k.global_tid()
    k.line(30)
    k.if_(b.cmp("lt", i, n),
          then=lambda: k.store_at(dst, i, k.load_at(src, b.binary("mul", i, k.const(i32, stride)))))
    return k.finish()


def test_register_is_idempotent_and_aligned():
    mem = sim.Memory()
    a = np.zeros(100, np.float32)
    b = np.zeros(3, np.int8)
    pa, pb = mem.register(a), mem.register(b)
    assert mem.register(a) == pa
    assert pa % 256 == a.ctypes.data % 256
    assert pb >= pa + a.nbytes + 256            # unmapped gap between buffers
    assert mem.register(a[10:]) == pa + 40      # a view maps into its owner's buffer


def test_strided_and_reversed_views():
    base = np.arange(20, dtype=np.int32).reshape(4, 5)
    col = base[:, 1]                             # elements 1, 6, 11, 16 (stride 5)
    out = np.zeros(4, np.int32)
    launch(copy_module(i32, stride=5), (1,), (32,), [col, out, 4])
    assert out.tolist() == [1, 6, 11, 16]
    rev = np.arange(8, dtype=np.int32)[::-1]     # address of rev[0] is the last element
    mem = sim.Memory()
    p = mem.register(rev)
    dst = np.zeros(1, np.int32)
    launch(copy_module(i32), (1,), (1,), [p, dst, 1], memory=mem)
    assert dst[0] == 7


def test_writes_land_in_the_callers_array_views():
    base = np.zeros((4, 8), np.float32)
    view = base[1]                               # row 1
    src = np.arange(8, dtype=np.float32)
    launch(copy_module(f32), (1,), (32,), [src, view, 8])
    assert base[1].tolist() == list(range(8)) and not base[[0, 2, 3]].any()


def test_bool_and_bf16_memory_formats():
    flags = np.array([True, False, True], np.bool_)
    out = np.zeros(3, np.bool_)
    launch(copy_module(i1), (1,), (32,), [flags, out, 3])
    assert out.tolist() == [True, False, True]
    bits = np.array([0x3F80, 0xC049], np.uint16)  # bf16 1.0, -3.140625
    outb = np.zeros(2, np.uint16)
    launch(copy_module(bf16), (1,), (32,), [bits, outb, 2])
    assert outb.tolist() == bits.tolist()


def test_out_of_bounds_global_store_names_the_source_line():
    k = KernelBuilder("oob", [gptr(f32)])
    (dst,) = k.args
    t = k.b.sreg("tid.x", i32)
    k.line(17)
    k.store_at(dst, t, k.b.cast(t, f32))          # no bounds guard
    m = k.finish()
    dst_arr = np.zeros(20, np.float32)
    with pytest.raises(OutOfBoundsError) as e:
        launch(m, (1,), (32,), [dst_arr])
    msg = str(e.value)
    assert "global store" in msg and "kern.py:17" in msg
    assert "0 bytes past the end of buffer #0 (float32[20])" in msg
    assert "thread (20,0,0) of block (0,0,0) (warp 0, lane 20)" in msg
    assert e.value.where == "kern.py:17"
    assert isinstance(e.value, IndexError)
    assert dst_arr.tolist() == [0.0] * 20         # the faulting store wrote nothing


def test_out_of_bounds_load_before_the_start():
    mem = sim.Memory()
    src = np.zeros(4, np.int32)
    p = mem.register(src) - 8
    with pytest.raises(OutOfBoundsError, match=r"global load of i32 at kern.py:30.*8 bytes before "
                                               r"the start of buffer #0"):
        launch(copy_module(i32), (1,), (32,), [p, np.zeros(4, np.int32), 1], memory=mem)


def test_out_of_bounds_in_a_gap_between_buffers_and_null():
    with pytest.raises(OutOfBoundsError, match="no global memory is mapped|buffer"):
        launch(copy_module(i32), (1,), (32,), [0, np.zeros(4, np.int32), 1])


def test_lanes_in_different_buffers():
    # lane i loads through the address table[i]; every lane hits a different host array
    k = KernelBuilder("gather", [gptr(i64), gptr(i32), gptr(i32)])
    table, null, out = k.args
    b = k.b
    t = b.sreg("tid.x", i32)
    p = b.ptr_offset(null, b.binary("div", k.load_at(table, t), k.const(i64, 4)))
    k.store_at(out, t, b.load(p))
    m = k.finish()
    mem = sim.Memory()
    arrays = [np.full(1, 100 + i, np.int32) for i in range(32)]
    tbl = np.array([mem.register(a) for a in arrays], np.int64)
    out_arr = np.zeros(32, np.int32)
    launch(m, (1,), (32,), [tbl, 0, out_arr], memory=mem)
    assert out_arr.tolist() == [100 + i for i in range(32)]


def test_misaligned_access_is_an_error():
    mem = sim.Memory()
    src = np.zeros(8, np.int32)
    p = mem.register(src) + 2
    with pytest.raises(SimulatorError, match="misaligned 4-byte access"):
        launch(copy_module(i32), (1,), (32,), [p, np.zeros(8, np.int32), 1], memory=mem)


def test_read_only_array_rejects_stores():
    dst = np.zeros(4, np.int32)
    dst.flags.writeable = False
    with pytest.raises(SimulatorError, match="read-only"):
        launch(copy_module(i32), (1,), (32,), [np.ones(4, np.int32), dst, 4])


def test_shared_memory_out_of_bounds():
    k = KernelBuilder("soob", [sptr(u8)])
    (s,) = k.args
    t = k.b.sreg("tid.x", i32)
    k.line(8)
    k.store_at(s, t, k.b.cast(t, u8))
    m = k.finish()
    with pytest.raises(OutOfBoundsError, match=r"shared store of u8 at kern.py:8: address 0x10 is "
                                               r"outside the CTA's 16-byte shared memory.*lane 16"):
        launch(m, (1,), (32,), [0], smem_bytes=16)
    launch(m, (1,), (32,), [0], smem_bytes=32)


def test_memory_allocate():
    mem = sim.Memory()
    addr, arr = mem.allocate((2, 3), np.float32)
    assert arr.shape == (2, 3) and mem.find(addr).size == 24


def test_register_needs_an_ndarray():
    with pytest.raises(TypeError, match="numpy ndarray"):
        sim.Memory().register([1, 2, 3])


def test_smem_fill_shows_uninitialized_shared_memory():
    k = KernelBuilder("fill", [sptr(u8), gptr(u8)])
    s, out = k.args
    t = k.b.sreg("tid.x", i32)
    k.store_at(out, t, k.load_at(s, t))
    m = k.finish()
    res = np.zeros(32, np.uint8)
    launch(m, (1,), (32,), [0, res], smem_bytes=32, smem_fill=0xAB)
    assert (res == 0xAB).all()
