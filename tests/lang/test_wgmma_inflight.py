"""Accumulators read before their wgmma completes: the fragment ``ws.wgmma.mma`` returns is in
flight until ``ws.wgmma.wait_group`` hands it back (trace-time OperandError, also through
``@ws.jit`` helpers, dynamic loops and ifs), and the simulator
checks that the fragments a ``wait_group(n)`` hands back belong to completed, committed groups
(SimulatorError naming the wgmma's and the wait's lines)."""
import inspect

import numpy as np
import pytest

import warpstage as ws
from warpstage.lang.wgmma import TileLayout

pytestmark = pytest.mark.filterwarnings("ignore::warpstage.RecompileWarning")

W = ws.wgmma
LA = TileLayout(64, 16, ws.BFloat16, 0)
LB = TileLayout(8, 16, ws.BFloat16, 0)
Tiles = ws.smem.make_storage("InflightTiles", a=LA.spec, b=LB.spec)


def line_of(fn, marker):
    src, first = inspect.getsourcelines(fn)
    return first + next(i for i, l in enumerate(src) if marker in l)


@ws.jit
def fill(st, tid):
    """A = 1 (64 x 16), B = 1 (8 x 16): D = A B^T = 16 everywhere."""
    for i in range(tid, 64 * 16, 128):
        st.a.ptr[i] = 1.0
    for i in range(tid, 8 * 16, 128):
        st.b.ptr[i] = 1.0
    ws.arch.fence_proxy_async()
    ws.arch.sync_threads()


def operands():
    """Called while tracing a kernel: allocates the shared tiles, fills them (see ``fill``) and
    returns their K-major descriptors (a, b)."""
    st = ws.smem.allocate(Tiles)
    fill(st, ws.arch.thread_idx()[0])
    return W.tile_descriptor(st.a, "K"), W.tile_descriptor(st.b, "K")


def store(out, acc):
    for i, (r, c) in enumerate(W.accumulator_coords(8)):
        out[r, c] = acc[i]


def reference(times=1):
    return np.full((64, 8), 16.0 * times, np.float32)


def run(kernel):
    out = np.zeros((64, 8), np.float32)
    kernel[1, 128](out)
    return out


@ws.kernel
def read_before_wait(out: ws.Tensor):
    a, b = operands()
    acc = W.mma(a, b, W.fence(W.zeros(8)))      # THE-MMA
    W.commit_group()
    store(out, acc)                             # never waited


@ws.kernel
def arithmetic_before_wait(out: ws.Tensor):
    a, b = operands()
    acc = W.mma(a, b, W.fence(W.zeros(8)))      # THE-MMA
    acc = acc * 2.0                             # THE-READ
    W.commit_group()
    store(out, W.wait_group(0, acc))


@ws.kernel
def converted_before_wait(out: ws.Tensor):
    a, b = operands()
    s = W.mma(a, b, None, n=8, scale_d=False)   # THE-MMA
    acc = W.fence(s.to(ws.Float16))             # THE-READ
    W.commit_group()
    store(out, W.wait_group(0, acc))


@pytest.mark.parametrize("kernel, how", [(read_before_wait, "indexing"),
                                         (arithmetic_before_wait, "computing * with"),
                                         (converted_before_wait, "converting")])
def test_reading_an_in_flight_fragment_is_a_trace_error(kernel, how):
    with pytest.raises(ws.OperandError) as ei:
        run(kernel)
    msg = str(ei.value)
    fn = kernel.fn
    assert f"the wgmma at {__file__}:{line_of(fn, 'THE-MMA')} are read ({how} them)" in msg
    assert "before ws.wgmma.wait_group" in msg and "Fix: ws.wgmma.commit_group()" in msg
    if kernel is not read_before_wait:
        assert f"{__file__}:{line_of(fn, 'THE-READ')}" in ei.value.where


@ws.kernel
def chained(out: ws.Tensor):
    """In flight: chained into another mma, fenced, waited; then read (D = 2 A B)."""
    a, b = operands()
    acc = W.mma(a, b, W.fence(W.zeros(8)))
    acc = W.fence(acc)
    acc = W.mma(a, b, acc)
    W.commit_group()
    store(out, W.wait_group(0, acc))


@ws.kernel
def pipelined(out: ws.Tensor, steps: ws.Int32):
    """An accumulator carried in flight across a dynamic loop: issue, wait_group(1) for the
    previous group only (no fragments handed back), chain the in-flight acc into the next."""
    a, b = operands()
    acc = W.fence(W.zeros(8))
    for _ in range(steps):
        acc = W.mma(a, b, W.fence(acc))
        W.commit_group()
        W.wait_group(1)
    store(out, W.wait_group(0, acc))


def test_correct_uses_of_in_flight_fragments_trace_and_run():
    np.testing.assert_array_equal(run(chained), reference(2))
    out = np.zeros((64, 8), np.float32)
    pipelined[1, 128](out, 3)
    np.testing.assert_array_equal(out, reference(3))


@ws.kernel
def wait_leaves_it_pending(out: ws.Tensor):
    a, b = operands()
    acc1, acc2 = W.fence(W.zeros(8), W.zeros(8))
    acc1 = W.mma(a, b, acc1)
    W.commit_group()
    acc2 = W.mma(a, b, acc2)                    # THE-MMA
    W.commit_group()
    acc1, acc2 = W.wait_group(1, acc1, acc2)    # THE-WAIT
    store(out, acc2)


@ws.kernel
def never_committed(out: ws.Tensor):
    a, b = operands()
    acc = W.mma(a, b, W.fence(W.zeros(8)))      # THE-MMA
    store(out, W.wait_group(0, acc))            # THE-WAIT


@ws.kernel
def pending_after_loop(out: ws.Tensor, steps: ws.Int32):
    """Passing the in-flight fragment to wait_group traces; the simulator sees that the newest
    group stays pending."""
    a, b = operands()
    acc = W.fence(W.zeros(8))
    for _ in range(steps):
        acc = W.mma(a, b, W.fence(acc))         # THE-MMA
        W.commit_group()
    store(out, W.wait_group(1, acc))            # THE-WAIT


@pytest.mark.parametrize("kernel, why", [
    (wait_leaves_it_pending, "still pending: wait_group(1) leaves the 1 newest"),
    (never_committed, "never committed"),
    (pending_after_loop, "still pending: wait_group(1) leaves the 1 newest")])
def test_simulator_checks_the_group_of_waited_fragments(kernel, why):
    out = np.zeros((64, 8), np.float32)
    with pytest.raises(ws.SimulatorError) as ei:
        if kernel is pending_after_loop:
            kernel[1, 128](out, 2)
        else:
            kernel[1, 128](out)
    msg = str(ei.value)
    fn = kernel.fn
    assert f"wgmma.wait_group at {__file__}:{line_of(fn, 'THE-WAIT')}" in msg
    assert f"wgmma.mma_async at {__file__}:{line_of(fn, 'THE-MMA')}" in msg
    assert why in msg


# -- the mark survives the value protocol: helpers, dynamic loops and ifs ----------------------
@ws.jit
def store_in_helper(out, acc):
    for i, (r, c) in enumerate(W.accumulator_coords(8)):
        out[r, c] = acc[i]                      # THE-READ


@ws.jit
def wait_in_helper(out, acc):
    acc = W.wait_group(0, acc)
    store_in_helper(out, acc)


@ws.kernel
def read_in_helper(out: ws.Tensor):
    a, b = operands()
    acc = W.mma(a, b, W.fence(W.zeros(8)))      # THE-MMA
    W.commit_group()
    store_in_helper(out, acc)


@ws.kernel
def read_after_loop(out: ws.Tensor, steps: ws.Int32):
    a, b = operands()
    acc = W.fence(W.zeros(8))
    for _ in range(steps):
        acc = W.mma(a, b, W.fence(acc))         # THE-MMA
        W.commit_group()
    store(out, acc)                             # THE-READ


@ws.kernel
def read_after_if(out: ws.Tensor, steps: ws.Int32):
    a, b = operands()
    acc = W.fence(W.zeros(8))
    if steps > 0:
        acc = W.mma(a, b, acc)                  # THE-MMA
        W.commit_group()
    store(out, acc)                             # THE-READ


@ws.kernel
def loop_waits_but_may_not_run(out: ws.Tensor, steps: ws.Int32):
    """In flight before the loop, waited inside it: a loop that runs zero times leaves it in
    flight, so the read after it is an error."""
    a, b = operands()
    acc = W.mma(a, b, W.fence(W.zeros(8)))      # THE-MMA
    W.commit_group()
    for _ in range(steps):
        acc = W.wait_group(0, acc)
    store(out, acc)                             # THE-READ


@pytest.mark.parametrize("kernel", [read_in_helper, read_after_loop, read_after_if,
                                    loop_waits_but_may_not_run])
def test_the_in_flight_mark_survives_helpers_loops_and_ifs(kernel):
    out = np.zeros((64, 8), np.float32)
    with pytest.raises(ws.OperandError) as ei:
        if kernel is read_in_helper:
            kernel[1, 128](out)
        else:
            kernel[1, 128](out, 1)
    fn = kernel.fn
    assert f"the wgmma at {__file__}:{line_of(fn, 'THE-MMA')} are read (indexing them)" in \
        str(ei.value)
    read = store_in_helper.fn if kernel is read_in_helper else fn
    assert f"{__file__}:{line_of(read, 'THE-READ')}" in ei.value.where


@ws.kernel
def waited_in_helper(out: ws.Tensor):
    a, b = operands()
    acc = W.mma(a, b, W.fence(W.zeros(8)))
    W.commit_group()
    wait_in_helper(out, acc)                    # the helper waits, then reads


@ws.kernel
def waited_on_both_paths(out: ws.Tensor, steps: ws.Int32):
    a, b = operands()
    acc = W.fence(W.zeros(8))
    if steps > 0:
        acc = W.mma(a, b, acc)
        W.commit_group()
        acc = W.wait_group(0, acc)
    store(out, acc)


def test_waited_fragments_through_helpers_and_ifs_still_trace_and_run():
    np.testing.assert_array_equal(run(waited_in_helper), reference(1))
    for steps, times in ((1, 1), (0, 0)):
        out = np.zeros((64, 8), np.float32)
        waited_on_both_paths[1, 128](out, steps)
        np.testing.assert_array_equal(out, reference(times))


# -- the CTA exits with a wgmma pending ---------------------------------------------------------
@ws.kernel
def exits_pending(out: ws.Tensor, commit: ws.Static[bool]):
    a, b = operands()
    acc = W.mma(a, b, W.fence(W.zeros(8)))      # THE-MMA
    if ws.static(commit):
        W.commit_group()
    out[0, 0] = 1.0                             # acc is never read nor waited for


@pytest.mark.parametrize("commit, why", [
    (True, "its wgmma-group was committed but no ws.wgmma.wait_group completed it"),
    (False, "it was never committed")])
def test_a_wgmma_pending_when_the_cta_exits_is_reported(commit, why):
    out = np.zeros((64, 8), np.float32)
    with pytest.raises(ws.SimulatorError) as ei:
        exits_pending[1, 128](out, commit)
    msg = str(ei.value)
    assert (f"the wgmma.mma_async at {__file__}:{line_of(exits_pending.fn, 'THE-MMA')} (warp 0) "
            "was still pending when the CTA exited") in msg
    assert why in msg and "Fix: ws.wgmma.commit_group()" in msg
