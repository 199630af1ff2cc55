"""Warp-level collectives: shuffles, votes, leader election, warp-uniform values (re-exported by
``ws.arch``).

All are ``.sync`` instructions with a static 32-bit membermask (default ``0xffffffff``, the
whole warp): every thread named in the mask must execute the same instruction, and every
executing thread must be in the mask (PTX ISA "Parallel Synchronization and Communication
Instructions": shfl.sync, vote.sync, elect.sync). Call them where the warp is converged; the
simulator reports a call in divergent code.
"""
from __future__ import annotations

from .. import ir
from ..core.trace import Origin, builder
from ..core.values import has_protocol, is_leaf
from ..core.source import user_location
from .operands import dynamic_i32, operand_error, static_int
from .scalars import DTYPES, Boolean, Scalar, Uint32, as_dynamic

__all__ = ["make_warp_uniform", "shfl_sync", "shfl_up_sync", "shfl_down_sync", "shfl_xor_sync",
           "vote_all_sync", "vote_any_sync", "vote_uni_sync", "vote_ballot_sync", "vote_all",
           "vote_any", "vote_ballot", "elect_one", "sync_warp"]

FULL_MASK = 0xFFFFFFFF


def _mask(mask, what: str) -> int:
    return static_int(mask, f"{what}'s membermask", range(1, FULL_MASK + 1),
                      "a static nonzero 32-bit lane mask",
                      "pass a Python int such as 0xffffffff (the whole warp)")


def _shuffle32(b: ir.Builder, mode, x: ir.Value, lane: ir.Value, width, mask) -> ir.Value:
    return b.shfl(mode, x, lane, width, mask)


def _shuffle(mode: str, x, lane, width, mask, what: str):
    """Shuffle any scalar: 32-bit types directly, narrower ones widened, 64-bit ones in halves."""
    mask = _mask(mask, what)
    width = static_int(width, f"{what}'s width", (1, 2, 4, 8, 16, 32),
                       "a static power of two in [1, 32]", "pass e.g. width=32 (the whole warp)")
    if not isinstance(x, Scalar):
        x = as_dynamic(x)
    lane_v = dynamic_i32(lane, f"{what}'s lane operand")
    b = builder(what)
    t = x.ir_type
    v = x.value
    if t.bits == 32 and not t.is_bool:
        out = _shuffle32(b, mode, v, lane_v, width, mask)
    elif t.bits == 64:
        bits = b.bitcast(v, ir.u64) if t.is_float else b.cast(v, ir.u64)
        lo = b.cast(bits, ir.u32)
        hi = b.cast(b.binary("shr", bits, b.constant(ir.u64, 32)), ir.u32)
        lo, hi = (b.cast(_shuffle32(b, mode, h, lane_v, width, mask), ir.u64) for h in (lo, hi))
        bits = b.binary("or", b.binary("shl", hi, b.constant(ir.u64, 32)), lo)
        out = b.bitcast(bits, t) if t.is_float else b.cast(bits, t)
    elif t.is_bool:
        wide = _shuffle32(b, mode, b.cast(v, ir.u32), lane_v, width, mask)
        out = b.cmp("ne", wide, b.constant(ir.u32, 0))
    else:   # 8- and 16-bit ints, f16, bf16
        raw = b.bitcast(v, ir.u16) if t.is_float else v
        wide = b.cast(raw, ir.i32 if raw.type.is_signed else ir.u32)
        back = b.cast(_shuffle32(b, mode, wide, lane_v, width, mask), raw.type)
        out = b.bitcast(back, t) if t.is_float else back
    return DTYPES[t]._wrap(out, x.origin)


def make_warp_uniform(x):
    """``x`` as held by lane 0 of the warp, in every lane: CUDA ``__shfl_sync(0xffffffff, x, 0)``
    (PTX ``shfl.sync.idx.b32``). The result is provably the same in all lanes, so the compiler
    can keep it in a uniform register and branch on it without divergence (CuTe's
    ``make_warp_uniform``). A static value is returned unchanged. Must be called by the whole
    warp (converged code)."""
    what = "ws.arch.make_warp_uniform()"
    if isinstance(x, Scalar):
        return _shuffle("idx", x, 0, 32, FULL_MASK, what)
    if is_leaf(x) or has_protocol(x):
        raise operand_error(what, f"a dynamic {type(x).__name__}", "a dynamic scalar (or a "
                            "static value)", "make the scalars it is computed from uniform")
    return x


def shfl_sync(x, src_lane, width: int = 32, mask: int = FULL_MASK):
    """The value of ``x`` in lane ``src_lane`` (of this thread's ``width``-lane segment):
    CUDA ``__shfl_sync`` (PTX ``shfl.sync.idx.b32``). Any scalar dtype (64-bit values take two
    shuffles). ``src_lane``: int or dynamic integer."""
    return _shuffle("idx", x, src_lane, width, mask, "ws.arch.shfl_sync()")


def shfl_up_sync(x, delta, width: int = 32, mask: int = FULL_MASK):
    """``x`` from lane ``lane - delta``; lanes below ``delta`` (in their segment) keep their own
    value. CUDA ``__shfl_up_sync`` (PTX ``shfl.sync.up.b32``)."""
    return _shuffle("up", x, delta, width, mask, "ws.arch.shfl_up_sync()")


def shfl_down_sync(x, delta, width: int = 32, mask: int = FULL_MASK):
    """``x`` from lane ``lane + delta``; lanes whose source is past their segment keep their own
    value. CUDA ``__shfl_down_sync`` (PTX ``shfl.sync.down.b32``)."""
    return _shuffle("down", x, delta, width, mask, "ws.arch.shfl_down_sync()")


def shfl_xor_sync(x, lane_mask, width: int = 32, mask: int = FULL_MASK):
    """``x`` from lane ``lane ^ lane_mask`` (the butterfly of tree reductions). CUDA
    ``__shfl_xor_sync`` (PTX ``shfl.sync.bfly.b32``)."""
    return _shuffle("bfly", x, lane_mask, width, mask, "ws.arch.shfl_xor_sync()")


def _vote(mode: str, pred, mask, what: str):
    mask = _mask(mask, what)
    if isinstance(pred, Scalar):
        p = pred if pred.ir_type.is_bool else pred != 0
    elif isinstance(pred, (bool, int)):
        p = as_dynamic(bool(pred))
    else:
        raise operand_error(what, type(pred).__name__, "a Boolean (or a dynamic number, tested "
                            "!= 0)", "pass a comparison such as `x > 0`")
    out = builder(what).vote(mode, p.value, mask)
    return (Uint32 if mode == "ballot" else Boolean)._wrap(out, Origin(what, user_location()))


def vote_all_sync(pred, mask: int = FULL_MASK) -> Boolean:
    """True iff ``pred`` is true in every thread of ``mask`` (PTX ``vote.sync.all.pred``)."""
    return _vote("all", pred, mask, "ws.arch.vote_all_sync()")


def vote_any_sync(pred, mask: int = FULL_MASK) -> Boolean:
    """True iff ``pred`` is true in some thread of ``mask`` (PTX ``vote.sync.any.pred``)."""
    return _vote("any", pred, mask, "ws.arch.vote_any_sync()")


def vote_uni_sync(pred, mask: int = FULL_MASK) -> Boolean:
    """True iff ``pred`` has the same value in every thread of ``mask`` (``vote.sync.uni.pred``)."""
    return _vote("uni", pred, mask, "ws.arch.vote_uni_sync()")


def vote_ballot_sync(pred, mask: int = FULL_MASK) -> Uint32:
    """A Uint32 whose bit i is set iff lane i executes this and its ``pred`` is true (CUDA
    ``__ballot_sync``; PTX ``vote.sync.ballot.b32``)."""
    return _vote("ballot", pred, mask, "ws.arch.vote_ballot_sync()")


vote_all = vote_all_sync
vote_any = vote_any_sync
vote_ballot = vote_ballot_sync


def elect_one(mask: int = FULL_MASK) -> Boolean:
    """True in exactly one executing thread of ``mask`` (the leader), false in the others: PTX
    ``elect.sync _|p, mask``. Which lane leads is the hardware's choice (the simulator picks the
    lowest executing lane); do not depend on it. Use it to let one thread of a warp
    initialize an mbarrier or issue a TMA copy: ``if ws.arch.elect_one(): ...``."""
    what = "ws.arch.elect_one()"
    mask = _mask(mask, what)
    return Boolean._wrap(builder(what).elect(mask), Origin(what, user_location()))


def sync_warp(mask: int = FULL_MASK) -> None:
    """Wait until every thread of ``mask`` reaches this point, and order their memory accesses
    before it with those after: PTX ``bar.warp.sync mask`` (CUDA ``__syncwarp``). Use it before
    one elected lane publishes what all lanes wrote (``if ws.arch.elect_one(): bar.arrive()``)."""
    what = "ws.arch.sync_warp()"
    mask = _mask(mask, what)
    builder(what).warp_sync(mask)
