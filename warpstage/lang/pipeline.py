"""Multi-stage producer/consumer pipelines over a ring of shared-memory stages (``ws.pipeline``).

A pipeline of ``num_stages`` stages guards ``num_stages`` shared-memory buffers with two
mbarriers per stage: ``full[s]`` (the producers arrive when stage s holds data) and ``empty[s]``
(the consumers arrive when they are done reading it). Both sides walk the ring with a
``PipelineState`` (stage index, phase parity, iteration count) and ``advance()`` it after each
stage; the state is an ordinary ``@ws.struct``, so it is carried through dynamic loops, branches
and ``@ws.jit`` calls like any value::

    class Storage:
        barriers: ws.pipeline.BarrierStorage[3]                 # full[3] + empty[3] mbarriers
        k: ws.smem.Array[ws.BFloat16, (3, 64, 64), 128]

    pipe = ws.pipeline.PipelineAsync.create(storage.barriers, num_stages=3,
                                            producer_count=128, consumer_count=128)
    if warpgroup == 0:                                          # producer
        state = ws.pipeline.make_producer_start_state(3)
        for i in range(n):
            pipe.producer_acquire(state)                        # wait until the stage is empty
            ...  # fill storage.k[state.index] (cp.async, or ld/st)
            pipe.producer_commit(state, cp_async=True)          # arrive on full[state.index]
            state = state.advance()
    else:                                                       # consumer
        state = ws.pipeline.make_consumer_start_state(3)
        for i in range(n):
            pipe.consumer_wait(state)                           # wait until the stage is full
            ...  # read storage.k[state.index]
            pipe.consumer_release(state)                        # arrive on empty[state.index]
            state = state.advance()

Semantics follow CUTLASS's ``PipelineAsync`` and ``PipelineTmaAsync``
(``include/cutlass/pipeline/sm90_pipeline.hpp``) for a cluster of one CTA: the producer starts at
phase 1 (a fresh mbarrier counts its "previous" phase as complete, so the first pass over the
ring does not wait), the consumer at phase 0, and both flip the phase each time the index wraps.
PTX source of truth: "Parallel Synchronization and Communication Instructions: mbarrier" and
"cp.async.mbarrier.arrive" (PTX ISA 8.0). Arrival counts are in **threads**: every executing
thread of a ``producer_commit`` / ``consumer_release`` is one arrival.
"""
from __future__ import annotations

from .. import ir
from ..core.static import Static
from ..core.trace import builder
from . import copy as _copy
from . import smem as _smem
from .mbarrier import MAX_COUNT, Mbarrier, MbarrierArray
from .operands import operand_error, static_int
from .scalars import Boolean, Int32, Scalar
from .struct import struct
from .arch import sync_threads, warp_idx
from .sync import fence_mbarrier_init
from .warp import elect_one, make_warp_uniform

__all__ = ["PipelineState", "PipelineAsync", "PipelineTmaAsync", "BarrierStorage",
           "barrier_storage", "make_producer_start_state", "make_consumer_start_state",
           "OrderedBarrier", "PipelineTmaMulticast"]


@struct
class PipelineState:
    """Where one side of a pipeline is in the ring: ``index`` (the stage, 0..num_stages-1),
    ``phase`` (the parity to wait for on that stage's mbarrier, 0/1) and ``count`` (stages
    passed so far). ``num_stages`` is static; the other fields are dynamic ``ws.Int32``.
    CUTLASS: ``cutlass::PipelineState<Stages>``."""

    num_stages: Static[int]
    index: Int32
    phase: Int32
    count: Int32

    def advance(self) -> "PipelineState":
        """The state of the next stage: ``index + 1``, wrapping to 0 after the last stage, where
        the phase flips (``phase ^ 1``); ``count + 1``. Branch-free (no ``scf.if``)."""
        nxt = self.index + 1
        if not isinstance(nxt, Scalar):     # a host-side (all-static) state
            wrap = int(nxt == self.num_stages)
            return PipelineState(self.num_stages, nxt - wrap * self.num_stages,
                                 self.phase ^ wrap, self.count + 1)
        wrap = Int32(nxt == self.num_stages)
        return PipelineState(self.num_stages, nxt - wrap * self.num_stages, self.phase ^ wrap,
                             self.count + 1)


def _stages(num_stages, what: str) -> int:
    n = static_int(num_stages, f"{what}'s num_stages", expected="a static int >= 1",
                   fix="pass the number of shared-memory stages as a Python int, e.g. "
                       "num_stages=cfg.num_stages from a static config object")
    if n < 1:
        raise operand_error(f"{what}'s num_stages", n, "a static int >= 1",
                            "a pipeline needs at least one stage")
    return n


def make_producer_start_state(num_stages: int) -> PipelineState:
    """The producer's first state: stage 0, phase 1 (its first wait on each fresh ``empty``
    mbarrier succeeds at once), count 0. CUTLASS: ``make_producer_start_state<Pipeline>()``."""
    n = _stages(num_stages, "ws.pipeline.make_producer_start_state()")
    return PipelineState(n, 0, 1, 0)


def make_consumer_start_state(num_stages: int) -> PipelineState:
    """The consumer's first state: stage 0, phase 0, count 0 (waits for the first fill)."""
    n = _stages(num_stages, "ws.pipeline.make_consumer_start_state()")
    return PipelineState(n, 0, 0, 0)


_STORAGE_CLASSES: dict = {}


def barrier_storage(num_stages: int) -> type:
    """The shared-storage class ``BarrierStorage[num_stages]`` (see ``BarrierStorage``)."""
    what = "ws.pipeline.BarrierStorage[num_stages]"
    n = static_int(num_stages, what, expected="a static int >= 1",
                   fix="write the stage count as a Python int, e.g. BarrierStorage[3]")
    if n < 1:
        raise operand_error(what, n, "an int >= 1", "a pipeline needs at least one stage")
    cls = _STORAGE_CLASSES.get(n)
    if cls is None:
        cls = _smem.make_storage(f"PipelineBarriers{n}", full=_smem.MbarrierArray[n],
                                 empty=_smem.MbarrierArray[n])
        _STORAGE_CLASSES[n] = cls
    return cls


class _BarrierStorageMeta(type):
    def __getitem__(cls, num_stages) -> type:
        return barrier_storage(num_stages)


class BarrierStorage(metaclass=_BarrierStorageMeta):
    """Field type of a pipeline's mbarriers: ``ws.pipeline.BarrierStorage[num_stages]`` is a
    shared-storage class with fields ``full: ws.smem.MbarrierArray[num_stages]`` and ``empty:
    ws.smem.MbarrierArray[num_stages]`` (16 bytes per stage, 8-byte aligned). Declare it in your
    storage class (``barriers: ws.pipeline.BarrierStorage[3]``) and pass ``storage.barriers``
    to ``create``. The same ``num_stages`` gives the same class."""


def _split_barriers(barriers, num_stages: int, what: str):
    """(full, empty) MbarrierArrays of ``num_stages`` each, from a BarrierStorage view (or any
    storage with ``full`` and ``empty`` fields) or one MbarrierArray of 2 * num_stages."""
    fix_kind = ("pass storage.barriers, a field declared `barriers: ws.pipeline.BarrierStorage["
                "num_stages]`, or one ws.smem.MbarrierArray[2 * num_stages]")
    if isinstance(barriers, MbarrierArray):
        if barriers.n != 2 * num_stages:
            raise operand_error(f"{what}: stage count mismatch: the MbarrierArray's length",
                                barriers.n, f"2 * num_stages = {2 * num_stages} "
                                f"mbarriers (full and empty for each of the {num_stages} stages)",
                                f"declare ws.smem.MbarrierArray[{2 * num_stages}], or pass "
                                f"num_stages={barriers.n // 2}" if barriers.n % 2 == 0 else
                                f"declare ws.smem.MbarrierArray[{2 * num_stages}]")
        full = barriers
        empty = MbarrierArray(barriers.ptr + num_stages, num_stages)
        return full, empty
    if not isinstance(barriers, _smem.SmemStorage) or not {"full", "empty"} <= set(
            barriers.layout.by_name):
        raise operand_error(f"{what}: the barrier storage", type(barriers).__name__,
                            "shared storage with `full` and `empty` mbarrier arrays", fix_kind)
    full, empty = barriers.full, barriers.empty
    for name, arr in (("full", full), ("empty", empty)):
        if not isinstance(arr, MbarrierArray):
            raise operand_error(f"{what}: the barrier storage's `{name}` field", arr,
                                "a ws.smem.MbarrierArray", fix_kind)
        if arr.n != num_stages:
            raise operand_error(
                f"{what}: stage count mismatch: the number of mbarriers in the barrier "
                f"storage's `{name}` array", arr.n, f"num_stages = {num_stages} (one per stage)",
                f"declare the field as ws.pipeline.BarrierStorage[{num_stages}] (or "
                f"ws.smem.MbarrierArray[{num_stages}]), or pass num_stages={arr.n}; the stage "
                "count of the barriers, of the data buffers and of the PipelineState must agree")
    return full, empty


def _count(n, what: str, name: str) -> int:
    return static_int(n, f"{what}'s {name}", range(1, MAX_COUNT + 1),
                      f"a static thread count in [1, {MAX_COUNT}]",
                      f"pass {name} as a Python int: the number of threads that arrive per stage")


def _if_then(cond: Boolean, body) -> None:
    """Emit ``if cond: body()`` as an ``scf.if`` without results (library code is not rewritten
    by the control-flow rewriter, so it builds the region itself)."""
    b = builder()
    regions = (ir.Region(), ir.Region())
    with b.at(regions[0].block):
        body()
        b.yield_()
    with b.at(regions[1].block):
        b.yield_()
    b.op("scf.if", (cond.value,), (), regions=regions)


class _Pipeline:
    """What both pipelines share: the full/empty mbarrier arrays (dynamic leaves: their shared
    addresses) and a static configuration (the skeleton and cache key)."""

    def __init__(self, full: MbarrierArray, empty: MbarrierArray, num_stages: int,
                 producer_count: int, consumer_count: int):
        self.full = full
        self.empty = empty
        self.num_stages = num_stages
        self.producer_count = producer_count
        self.consumer_count = consumer_count

    def _config(self) -> tuple:
        return (self.num_stages, self.producer_count, self.consumer_count)

    def _with(self, full, empty):
        return type(self)(full, empty, *self._config())

    # -- value protocol ------------------------------------------------------------------------
    def __extract_values__(self):
        return [self.full, self.empty]

    def __new_from_values__(self, values):
        return self._with(values[0], values[1])

    def __static_key__(self):
        return (type(self).__name__,) + self._config()

    def __repr__(self) -> str:
        return (f"<{type(self).__name__} stages={self.num_stages} producers="
                f"{self.producer_count} consumers={self.consumer_count}>")

    # -- setup ---------------------------------------------------------------------------------
    def _initialize(self) -> None:
        """One thread (warp 0's elected lane) initializes every mbarrier, fences the inits, and
        the whole CTA meets at ``bar.sync 0`` so no thread uses an mbarrier before its init."""
        def init_all():
            for s in range(self.num_stages):
                self.full[s].init(self._full_count())
                self.empty[s].init(self.consumer_count)
            fence_mbarrier_init()
        warp0 = make_warp_uniform(warp_idx()) == 0
        _if_then(warp0, lambda: _if_then(elect_one(), init_all))
        self._meet()

    def _meet(self) -> None:
        """After the init: every thread that uses the mbarriers meets here (a CTA barrier)."""
        sync_threads()

    def _full_count(self) -> int:
        return self.producer_count

    def _check_state(self, state, what: str) -> PipelineState:
        if not isinstance(state, PipelineState):
            raise operand_error(f"{type(self).__name__}.{what}()'s state", type(state).__name__,
                                "a ws.pipeline.PipelineState",
                                "pass the state from make_producer_start_state / "
                                "make_consumer_start_state, advanced with state.advance()")
        if state.num_stages != self.num_stages:
            raise operand_error(f"{type(self).__name__}.{what}(): stage count mismatch: the "
                                "PipelineState", f"num_stages={state.num_stages}",
                                f"the pipeline's num_stages={self.num_stages}",
                                f"make the state with num_stages={self.num_stages} (e.g. "
                                "pipe.producer_start_state())")
        return state

    def producer_start_state(self) -> PipelineState:
        """``make_producer_start_state(self.num_stages)``."""
        return make_producer_start_state(self.num_stages)

    def consumer_start_state(self) -> PipelineState:
        """``make_consumer_start_state(self.num_stages)``."""
        return make_consumer_start_state(self.num_stages)

    # -- producer ------------------------------------------------------------------------------
    def _wait_empty(self, state: PipelineState) -> None:
        self.empty[state.index].wait(state.phase)

    def producer_get_barrier(self, state) -> Mbarrier:
        """The ``full`` mbarrier of ``state``'s stage (to hand to an asynchronous copy)."""
        return self.full[self._check_state(state, "producer_get_barrier").index]

    def producer_tail(self, state) -> None:
        """Wait until the consumers have released every stage (``num_stages`` waits on the
        ``empty`` mbarriers from ``state`` on, unrolled): call it once, from the producer, after
        its last ``producer_commit``, so it does not leave while stages are still being read
        (CUTLASS: ``producer_tail``; needed across a cluster, harmless in one CTA)."""
        state = self._check_state(state, "producer_tail")
        for _ in range(self.num_stages):
            self._wait_empty(state)
            state = state.advance()

    # -- consumer ------------------------------------------------------------------------------
    def consumer_wait(self, state) -> None:
        """Block until ``state``'s stage is full: ``full[index].wait(phase)`` (PTX
        ``mbarrier.try_wait.parity`` loop). Its data is then visible to this thread."""
        state = self._check_state(state, "consumer_wait")
        self.full[state.index].wait(state.phase)

    def consumer_release(self, state) -> None:
        """Hand ``state``'s stage back to the producer: every executing thread arrives once on
        ``empty[index]`` (PTX ``mbarrier.arrive``, release semantics at CTA scope, so this
        thread's reads of the stage happen before the producer overwrites it). The pipeline's
        ``consumer_count`` threads must each call it once per stage."""
        state = self._check_state(state, "consumer_release")
        self.empty[state.index].arrive()


class PipelineAsync(_Pipeline):
    """A pipeline whose producer threads fill a stage themselves (ordinary ld/st, or cp.async)
    and each arrive on its ``full`` mbarrier; CUTLASS ``PipelineAsync``.

    ``full[s]`` is initialized for ``producer_count`` arrivals, ``empty[s]`` for
    ``consumer_count``. The pipeline is a value (its leaves are the two mbarrier arrays; its
    stage count and thread counts are static), so pass it to ``@ws.jit`` functions freely."""

    @classmethod
    def create(cls, barriers, num_stages: int, producer_count: int, consumer_count: int):
        """Initialize the pipeline's mbarriers and return the pipeline. Call it once, from every
        thread of the CTA (it contains a CTA barrier, ``bar.sync 0``), before the role branch.

        ``barriers``: ``storage.barriers`` for a field ``ws.pipeline.BarrierStorage[num_stages]``
        (or any storage with ``full``/``empty`` ``MbarrierArray[num_stages]`` fields, or one
        ``MbarrierArray[2 * num_stages]``). ``num_stages``: static int. ``producer_count`` /
        ``consumer_count``: static thread counts, the arrivals that complete a ``full`` / an
        ``empty`` phase. Emits: warp 0's elected thread ``mbarrier.init``s all 2 * num_stages
        mbarriers and runs ``fence.mbarrier_init.release.cluster``; then ``bar.sync 0``.

        Raises OperandError (at trace time, before anything runs) when the storage's mbarrier
        arrays do not hold ``num_stages`` mbarriers each, or a count is not a static int in
        [1, 2^20 - 1]; BindingTimeError for a dynamic ``num_stages`` or count."""
        what = f"ws.pipeline.{cls.__name__}.create()"
        n = _stages(num_stages, what)
        full, empty = _split_barriers(barriers, n, what)
        pipe = cls(full, empty, n, _count(producer_count, what, "producer_count"),
                   _count(consumer_count, what, "consumer_count"))
        pipe._initialize()
        return pipe

    def producer_acquire(self, state) -> None:
        """Block until ``state``'s stage is empty (the consumers released it):
        ``empty[index].wait(phase)``. The producer's first pass (phase 1) does not wait."""
        self._wait_empty(self._check_state(state, "producer_acquire"))

    def producer_commit(self, state, cp_async: bool = False) -> None:
        """Mark this thread's part of ``state``'s stage as filled. Every executing thread is one
        of the ``producer_count`` arrivals on ``full[index]``, so each producer thread calls it
        exactly once per stage (also one that copied nothing, e.g. past the end of a tensor).

        ``cp_async=False``: the thread stored the data with ordinary ``st.shared``; it arrives
        now (PTX ``mbarrier.arrive``, release at CTA scope: its stores are visible to a consumer
        whose wait completes). ``cp_async=True``: the thread issued ``ws.copy.cp_async`` copies;
        it arrives when all of them have landed (PTX ``cp.async.mbarrier.arrive.noinc``: the
        arrival counts against ``producer_count``), so it need not wait itself and goes on to
        the next stage at once. (Not ``commit_group`` + ``wait_group`` + arrive, which would stall
        the producer on each stage's copies.)"""
        state = self._check_state(state, "producer_commit")
        if not isinstance(cp_async, bool):
            raise operand_error("PipelineAsync.producer_commit()'s cp_async", cp_async,
                                "a static bool", "pass cp_async=True after ws.copy.cp_async "
                                "copies, False after ordinary shared-memory stores")
        bar = self.full[state.index]
        if cp_async:
            _copy.cp_async_mbarrier_arrive(bar, noinc=True)
        else:
            bar.arrive()


class PipelineTmaAsync(_Pipeline):
    """A pipeline whose stages are filled by the asynchronous copy engine (TMA,
    ``cp.async.bulk``), which completes *transaction bytes* on the ``full`` mbarrier; CUTLASS
    ``PipelineTmaAsync`` for a cluster of one CTA.

    ``full[s]`` expects ``producer_count`` arrivals (default 1: one elected thread of the
    producer warp) plus ``transaction_bytes`` per arrival; ``empty[s]`` expects
    ``consumer_count`` (threads). ``producer_acquire`` waits for the stage and then the elected
    thread announces the bytes with ``mbarrier.arrive.expect_tx``; the copies issued next (with
    ``producer_get_barrier(state)`` as their mbarrier) complete the phase when they land, so
    ``producer_commit`` does nothing. The phase cannot complete on arrivals alone: a stage
    without its bytes blocks its consumers (the simulator reports the deadlock with the
    mbarrier's tx-count).

    With TMA: ``transaction_bytes=desc.smem_bytes`` (the sum over the copies of one stage), and
    after ``producer_acquire(state)`` one elected thread issues ``ws.tma.load(desc,
    tiles[state.index], coords, pipe.producer_get_barrier(state))`` (tested in the simulator
    and on the GPU: tests/lang/test_tma_pipeline.py; docs/tma.md)."""

    def __init__(self, full, empty, num_stages, producer_count, consumer_count,
                 transaction_bytes):
        super().__init__(full, empty, num_stages, producer_count, consumer_count)
        self.transaction_bytes = transaction_bytes

    def _config(self) -> tuple:
        return super()._config() + (self.transaction_bytes,)

    @classmethod
    def create(cls, barriers, num_stages: int, consumer_count: int, transaction_bytes: int,
               producer_count: int = 1):
        """Initialize the mbarriers (as ``PipelineAsync.create``) and return the pipeline.
        ``transaction_bytes``: static bytes each producer warp's copies deliver per stage (e.g.
        the bytes of a K tile plus a V tile). ``producer_count``: the number of producer warps
        that call ``producer_acquire`` (one elected arrival each). Same errors as
        ``PipelineAsync.create``, plus OperandError for a bad byte count."""
        what = f"ws.pipeline.{cls.__name__}.create()"
        n = _stages(num_stages, what)
        full, empty = _split_barriers(barriers, n, what)
        tx = static_int(transaction_bytes, f"{what}'s transaction_bytes",
                        range(1, MAX_COUNT + 1), f"a static byte count in [1, {MAX_COUNT}]",
                        "pass the bytes one stage's copies deliver, e.g. 2 * tile_n * head_dim "
                        "* 2 for a bf16 K and V tile")
        pipe = cls(full, empty, n, _count(producer_count, what, "producer_count"),
                   _count(consumer_count, what, "consumer_count"), tx)
        pipe._initialize()
        return pipe

    def producer_acquire(self, state) -> None:
        """Wait until ``state``'s stage is empty, then one elected thread of the calling warp
        arrives on ``full[index]`` announcing ``transaction_bytes`` (PTX ``elect.sync`` +
        ``mbarrier.arrive.expect_tx.shared::cta.b64``). Call it from whole (converged) warps."""
        state = self._check_state(state, "producer_acquire")
        self._wait_empty(state)
        bar = self.full[state.index]
        _if_then(elect_one(), lambda: bar.arrive_expect_tx(self.transaction_bytes))

    def producer_commit(self, state) -> None:
        """Nothing: the copy engine completes the stage's transaction bytes itself (CUTLASS's
        ``producer_commit`` is a no-op outside its unit tests). Kept so producer code reads the
        same for both pipelines."""
        self._check_state(state, "producer_commit")


from .ordered import OrderedBarrier  # noqa: E402  (ordered.py builds on _if_then above)
from .pipeline_cluster import PipelineTmaMulticast  # noqa: E402  (a PipelineTmaAsync subclass)
