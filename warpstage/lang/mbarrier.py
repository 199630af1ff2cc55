"""mbarriers: 8-byte barrier objects in shared memory with phases and transaction counts
(PTX ISA "Parallel Synchronization and Communication Instructions: mbarrier").

An mbarrier counts arrivals: ``init(count)`` sets the arrivals each phase expects; when that
many threads have arrived and every byte announced with ``expect_tx`` has landed (TMA,
cp.async.bulk), the phase completes and the next begins. Waiting is by phase parity: the
consumer of a pipeline stage waits with the parity of the phase it expects to complete, then
flips its parity each time around the ring. The storage comes from ``ws.smem.MbarrierArray[n]``
in a shared-storage class; indexing gives one ``Mbarrier``.

Every executing thread is one arrival: ``bar.arrive()`` run by a whole warp arrives 32 times.
Typical use lets one thread arrive: ``if ws.arch.elect_one(): bar.arrive()``, with ``init(1)``.
"""
from __future__ import annotations

from ..core.source import user_location
from ..core.trace import Origin, builder
from .operands import dynamic_i32, operand_error, static_int
from .pointer import Pointer
from .scalars import Boolean, Scalar, Uint64

__all__ = ["Mbarrier", "MbarrierArray", "MAX_COUNT"]

MAX_COUNT = (1 << 20) - 1
"""The largest arrival count and transaction count an mbarrier holds (PTX: 2^20 - 1)."""


def _count(x, what: str):
    if isinstance(x, Scalar):
        return dynamic_i32(x, what)
    static_int(x, what, range(1, MAX_COUNT + 1), f"an int in [1, {MAX_COUNT}]",
               "pass the number of arrivals (threads) or bytes")
    return dynamic_i32(x, what)


def _parity(x, what: str):
    if isinstance(x, Scalar):
        return dynamic_i32(x, what)
    static_int(x, what, (0, 1), "0 or 1", "pass the phase parity: 0 or 1 (flip it with ^ 1)")
    return dynamic_i32(x, what)


def _suspend_ns(x, what: str):
    if not isinstance(x, Scalar):
        static_int(x, f"{what}'s suspend_time_ns", range(1, MAX_COUNT + 1),
                   f"an int in [1, {MAX_COUNT}] (nanoseconds)",
                   "pass how long a failing try_wait may suspend the thread, e.g. 1000")
    return dynamic_i32(x, f"{what}'s suspend_time_ns")


class Mbarrier:
    """One mbarrier. ``ptr`` is its address (``ws.Pointer[ws.Uint64, 'shared']``); the object
    follows the value protocol (its leaf is that pointer), so it can be passed to ``@ws.jit``
    functions and carried through control flow."""

    __slots__ = ("ptr",)

    def __init__(self, ptr: Pointer):
        self.ptr = ptr

    def __extract_values__(self):
        return [self.ptr]

    def __new_from_values__(self, values):
        return Mbarrier(values[0])

    def __static_key__(self):
        return ("Mbarrier",)

    def __repr__(self) -> str:
        return "<Mbarrier in shared memory>"

    def _op(self, name: str, *operands):
        return builder(f"Mbarrier.{name}").mbarrier(name, self.ptr.value, *operands)

    def init(self, count) -> None:
        """Initialize for ``count`` arrivals per phase (int in [1, 2^20 - 1] or dynamic Int32),
        phase 0: PTX ``mbarrier.init.shared::cta.b64 [bar], count``. One thread initializes;
        then ``ws.arch.fence_mbarrier_init()`` and a CTA barrier before others use it."""
        self._op("init", _count(count, "Mbarrier.init()'s count"))

    def arrive(self, count=None) -> Uint64:
        """Arrive (``count`` times, default once) on the current phase: PTX
        ``mbarrier.arrive.shared::cta.b64 state, [bar][, count]``. Returns the state token
        (may be ignored)."""
        extra = () if count is None else (_count(count, "Mbarrier.arrive()'s count"),)
        return Uint64._wrap(self._op("arrive", *extra), Origin("Mbarrier.arrive()",
                                                               user_location()))

    def arrive_expect_tx(self, nbytes) -> Uint64:
        """Announce ``nbytes`` of transactions (bytes the async proxy will deliver, e.g. one TMA
        tile) and arrive: PTX ``mbarrier.arrive.expect_tx.shared::cta.b64 state, [bar], tx``."""
        tx = _count(nbytes, "Mbarrier.arrive_expect_tx()'s byte count")
        return Uint64._wrap(self._op("arrive_expect_tx", tx),
                            Origin("Mbarrier.arrive_expect_tx()", user_location()))

    def expect_tx(self, nbytes) -> None:
        """Announce ``nbytes`` of transactions without arriving: PTX
        ``mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [bar], tx``."""
        self._op("expect_tx", _count(nbytes, "Mbarrier.expect_tx()'s byte count"))

    def try_wait(self, parity, suspend_time_ns=None) -> Boolean:
        """True iff the phase with ``parity`` (0/1, static or dynamic) has completed: PTX
        ``mbarrier.try_wait.parity.shared::cta.b64 p, [bar], parity`` (may suspend the thread
        for a system-dependent time before failing). ``suspend_time_ns`` (an int in
        [1, 2^20 - 1] or a dynamic Int32, nanoseconds) bounds that suspension: the
        ``suspendTimeHint`` operand (PTX ISA 7.8, sm_90). The simulator suspends a failing
        try_wait until an mbarrier changes, with or without the hint. Prefer ``wait`` unless
        there is other work to do meanwhile. Raises OperandError for a parity other than 0/1
        or a hint outside the range."""
        what = "Mbarrier.try_wait()"
        parity = _parity(parity, f"{what}'s parity")
        if suspend_time_ns is None:
            p = self._op("try_wait_parity", parity)
        else:
            p = self._op("try_wait_parity_hint", parity, _suspend_ns(suspend_time_ns, what))
        return Boolean._wrap(p, Origin(what, user_location()))

    def wait(self, parity) -> None:
        """Block until the phase with ``parity`` has completed: a try_wait loop in PTX
        (``mbarrier.try_wait.parity`` + branch), a blocking wait in the simulator (whose deadlock
        report names this line)."""
        self._op("wait_parity", _parity(parity, "Mbarrier.wait()'s parity"))

    def invalidate(self) -> None:
        """End the mbarrier's life so its 8 bytes can be reused: PTX
        ``mbarrier.inval.shared::cta.b64 [bar]``."""
        self._op("inval")


class _MbarrierArrayMeta(type):
    def __getitem__(cls, n):
        from .smem_layout import MbarrierSpec
        return MbarrierSpec(n)


class MbarrierArray(metaclass=_MbarrierArrayMeta):
    """``n`` consecutive mbarriers in shared memory. As a field type, ``ws.smem.MbarrierArray[n]``
    reserves 8 * n bytes (8-byte aligned); in an allocated storage the field is this view:
    ``bars[i]`` is an ``Mbarrier`` (``i`` static, bounds-checked, or dynamic), ``len(bars)`` is
    n, ``bars.ptr`` the first one's address."""

    __slots__ = ("ptr", "n")

    def __init__(self, ptr: Pointer, n: int):
        self.ptr = ptr
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i) -> Mbarrier:
        if not isinstance(i, Scalar):
            i = static_int(i, "MbarrierArray index", expected=f"an int in [0, {self.n})",
                           fix="index with an int or a dynamic integer")
            if not -self.n <= i < self.n:
                raise operand_error("MbarrierArray index", i, f"an index in [0, {self.n})",
                                    f"the array holds {self.n} mbarriers")
            i %= self.n
            return Mbarrier(self.ptr if i == 0 else self.ptr + i)
        if not i.ir_type.is_int:
            raise operand_error("MbarrierArray index", f"a dynamic {type(i).__name__}",
                                "an integer", "index with an integer")
        return Mbarrier(self.ptr + i)

    def __iter__(self):
        return (self[i] for i in range(self.n))

    def __extract_values__(self):
        return [self.ptr]

    def __new_from_values__(self, values):
        return MbarrierArray(values[0], self.n)

    def __static_key__(self):
        return ("MbarrierArray", self.n)

    def __repr__(self) -> str:
        return f"<MbarrierArray of {self.n} in shared memory>"

