"""Verifier rules of the warp-specialization ops: warp collectives, named-barrier arrival,
register reallocation, fences, the dynamic shared memory base, pointer casts, mbarriers,
cp.async and atomics. Each op is defined (signature, contract, traits) at the end of this module.
"""
from __future__ import annotations

from typing import Optional

from .core import Operation
from .opdef import define
from .ops import ASYNC, ATOMIC, COLL, P, R, W, WAITS, _arity, _types
from .types import PointerType, ScalarType, i1, i32, u8, u32, u64

__all__ = ["SHFL_MODES", "VOTE_MODES", "FENCE_KINDS", "CP_ASYNC_SIZES", "ATOMIC_KINDS",
           "FULL_MASK", "MBARRIER_TYPE"]

FULL_MASK = 0xFFFFFFFF
SHFL_MODES = ("idx", "up", "down", "bfly")
VOTE_MODES = ("all", "any", "uni", "ballot")
_SCOPES = ("cta", "cluster", "gpu", "sys")
FENCE_KINDS = (("proxy.async", "proxy.async.shared::cta", "proxy.async.global",
                "mbarrier_init.release.cluster")
               + tuple(f"acq_rel.{s}" for s in _SCOPES) + tuple(f"sc.{s}" for s in _SCOPES))
CP_ASYNC_SIZES = {"ca": (4, 8, 16), "cg": (16,)}
ATOMIC_KINDS = ("add", "min", "max", "exch", "and", "or", "xor")
MBARRIER_TYPE = PointerType(u64, "shared")
"""An mbarrier is an 8-byte object in shared memory (PTX ``.b64``): ``!ptr<u64, shared>``."""


def _mask(op: Operation) -> Optional[str]:
    m = op.attrs.get("mask", FULL_MASK)
    if isinstance(m, bool) or not isinstance(m, int) or not 0 < m <= FULL_MASK:
        return f"mask must be a nonzero 32-bit int, got {m!r}"
    return None


def _shfl(op):
    err = _arity(op, 2, 1) or _mask(op)
    if err:
        return err
    x, b = op.operands
    if op.attrs.get("mode") not in SHFL_MODES:
        return f"expected mode in {SHFL_MODES}, got {op.attrs.get('mode')!r}"
    width = op.attrs.get("width", 32)
    if width not in (1, 2, 4, 8, 16, 32):
        return f"width must be a power of two in [1, 32], got {width!r}"
    if not isinstance(x.type, ScalarType) or x.type.bits != 32 or x.type.is_bool:
        return f"shfl moves a 32-bit value (i32, u32, f32), got {x.type}"
    if b.type != i32:
        return f"expected the lane/delta operand i32, got {b.type}"
    if op.results[0].type != x.type:
        return f"result must have the value's type {x.type}, got {op.results[0].type}"
    return None


def _vote(op):
    err = _arity(op, 1, 1) or _mask(op)
    if err:
        return err
    mode = op.attrs.get("mode")
    if mode not in VOTE_MODES:
        return f"expected mode in {VOTE_MODES}, got {mode!r}"
    if op.operands[0].type != i1:
        return f"expected an i1 predicate, got {op.operands[0].type}"
    want = u32 if mode == "ballot" else i1
    if op.results[0].type != want:
        return f"vote.{mode} gives {want}, got {op.results[0].type}"
    return None


def _elect(op):
    err = _arity(op, 0, 1) or _mask(op)
    if err:
        return err
    if op.results[0].type != i1:
        return f"expected result i1, got {op.results[0].type}"
    return None


def _warp_sync(op):
    return _arity(op, 0, 0) or _mask(op)


def _setmaxnreg(op):
    err = _arity(op, 0, 0)
    if err:
        return err
    if op.attrs.get("action") not in ("inc", "dec"):
        return f"expected action 'inc' or 'dec', got {op.attrs.get('action')!r}"
    n = op.attrs.get("count")
    if isinstance(n, bool) or not isinstance(n, int) or not 24 <= n <= 256 or n % 8:
        return f"register count must be a multiple of 8 in [24, 256], got {n!r}"
    return None


def _fence(op):
    err = _arity(op, 0, 0)
    if err:
        return err
    if op.attrs.get("kind") not in FENCE_KINDS:
        return f"unknown fence kind {op.attrs.get('kind')!r}; known: {', '.join(FENCE_KINDS)}"
    return None


def _barrier_arrive(op):
    dynamic = len(op.operands) == 1
    err = _arity(op, 1 if dynamic else 0, 0)
    if err:
        return err
    bar_id, count = op.attrs.get("id"), op.attrs.get("count")
    if dynamic:
        if bar_id is not None:
            return "bar.arrive has both a static id attribute and a dynamic id operand"
        if op.operands[0].type != i32:
            return f"bar.arrive's dynamic id must be i32, got {op.operands[0].type}"
    elif isinstance(bar_id, bool) or not isinstance(bar_id, int) or not 0 <= bar_id < 16:
        return f"barrier id must be an int in [0, 16), got {bar_id!r}"
    if isinstance(count, bool) or not isinstance(count, int) or count <= 0 or count % 32:
        return f"bar.arrive needs a thread count, a positive multiple of 32; got {count!r}"
    return None


def _smem_base(op):
    err = _arity(op, 0, 1)
    if err:
        return err
    t = op.results[0].type
    if not isinstance(t, PointerType) or t.space != "shared":
        return f"expected a shared pointer result, got {t}"
    return None


def _smem_alloc(op):
    err = _arity(op, 0, 1)
    if err:
        return err
    if op.results[0].type != PointerType(u8, "shared"):
        return f"expected result !ptr<u8, shared>, got {op.results[0].type}"
    for name in ("offset", "nbytes"):
        v = op.attrs.get(name)
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            return f"attribute {name} must be a non-negative int (bytes), got {v!r}"
    return None


def _ptr_cast(op):
    err = _arity(op, 1, 1)
    if err:
        return err
    src, dst = op.operands[0].type, op.results[0].type
    if not isinstance(src, PointerType) or not isinstance(dst, PointerType):
        return f"expected ptr -> ptr, got {src} -> {dst}"
    if src.space != dst.space:
        return f"ptr.cast keeps the address space: {src} -> {dst}"
    return None


def _is_mbarrier(v) -> bool:
    t = v.type
    return (isinstance(t, PointerType) and t.space == "shared" and t.pointee.is_int
            and t.pointee.bits == 64)


def _mbarrier(n_extra: int, result=None, optional_extra: bool = False):
    """Rule for an mbarrier op: (bar, *n_extra i32 operands) -> result."""
    def rule(op):
        extras = len(op.operands) - 1
        if not (extras == n_extra or (optional_extra and extras == n_extra - 1)):
            want = f"{n_extra - 1} or {n_extra}" if optional_extra else str(n_extra)
            return (f"expected the mbarrier and {want} i32 operand(s), got "
                    f"{len(op.operands)} operands")
        if len(op.results) != (0 if result is None else 1):
            return f"expected {0 if result is None else 1} result(s), got {len(op.results)}"
        if not op.operands or not _is_mbarrier(op.operands[0]):
            got = op.operands[0].type if op.operands else "nothing"
            return f"expected an mbarrier address !ptr<u64, shared>, got {got}"
        if any(v.type != i32 for v in op.operands[1:]):
            return ("expected i32 operands after the mbarrier, got "
                    f"({', '.join(_types(op.operands))})")
        if result is not None and op.results[0].type != result:
            return f"expected result {result}, got {op.results[0].type}"
        return None
    return rule


def _cp_async(op):
    err = _arity(op, 2, 0)
    if err:
        return err
    dst, src = (v.type for v in op.operands)
    if not (isinstance(dst, PointerType) and dst.space == "shared"):
        return f"cp.async copies into shared memory: expected a shared destination, got {dst}"
    if not (isinstance(src, PointerType) and src.space == "global"):
        return f"cp.async copies from global memory: expected a global source, got {src}"
    cache, size = op.attrs.get("cache"), op.attrs.get("size")
    if cache not in CP_ASYNC_SIZES:
        return f"expected cache 'ca' or 'cg', got {cache!r}"
    if size not in CP_ASYNC_SIZES[cache]:
        return f"cp.async.{cache} copies {CP_ASYNC_SIZES[cache]} bytes, got size={size!r}"
    return None


def _no_operands(op):
    return _arity(op, 0, 0)


def _cp_async_wait(op):
    err = _arity(op, 0, 0)
    if err:
        return err
    n = op.attrs.get("n")
    if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n < 64:
        return f"wait_group needs a static count of pending groups in [0, 64), got {n!r}"
    return None


def _cp_async_arrive(op):
    err = _arity(op, 1, 0)
    if err:
        return err
    if not _is_mbarrier(op.operands[0]):
        return f"expected an mbarrier address !ptr<u64, shared>, got {op.operands[0].type}"
    return None


_ATOMIC_TYPES = ("i32", "u32", "i64", "u64", "f32", "f64")


def _atomic_pointer(op, n):
    err = _arity(op, n, 1)
    if err:
        return err
    p, *vals = op.operands
    if not isinstance(p.type, PointerType) or p.type.space not in ("global", "shared", "generic"):
        return f"expected a global, shared or generic pointer, got {p.type}"
    t = p.type.pointee
    if any(v.type != t for v in vals) or op.results[0].type != t:
        return (f"expected operands and result of the pointee type {t}, got "
                f"({', '.join(_types(op.operands))}) -> {op.results[0].type}")
    if t.name not in _ATOMIC_TYPES:
        return f"atomics work on {', '.join(_ATOMIC_TYPES)}, got {t}"
    return None


def _atomic(op):
    err = _atomic_pointer(op, 2)
    if err:
        return err
    kind, t = op.attrs.get("kind"), op.results[0].type
    if kind not in ATOMIC_KINDS:
        return f"expected kind in {ATOMIC_KINDS}, got {kind!r}"
    if t.is_float and kind not in ("add", "exch"):
        return f"atomic {kind} on {t}: floats support add and exch only"
    return None


def _atomic_cas(op):
    err = _atomic_pointer(op, 3)
    if err:
        return err
    if op.results[0].type.is_float:
        return f"compare-and-swap works on integers, got {op.results[0].type}"
    return None


def _mbarrier_result(t):
    return lambda operands, attrs: [t]


_M = {"mask?": "int: member lanes (default 0xffffffff)"}
define("nvvm.shfl", "(x: T, b: i32) -> T", "shfl.sync.<mode>.b32 (T i32|u32|f32; mode idx|up|down|"
       "bfly; b the source lane or delta)", _shfl, (COLL,),
       {"mode": "str", "width?": "int (default 32)", **_M}, "Data Movement: shfl.sync",
       infer=lambda operands, attrs: [operands[0]])
define("nvvm.vote", "(p: i1) -> i1|u32", "vote.sync.all|any|uni (i1), .ballot (u32)", _vote,
       (COLL,), {"mode": "str", **_M}, "Parallel Synchronization: vote.sync",
       infer=lambda operands, attrs: [u32 if attrs["mode"] == "ballot" else i1])
define("nvvm.elect", "() -> i1", "elect.sync: true in exactly one active lane", _elect, (COLL,), _M,
       "Parallel Synchronization: elect.sync", infer=lambda operands, attrs: [i1],
       requires="sm_90")
define("nvvm.warp_sync", "() ->", "bar.warp.sync mask (__syncwarp)", _warp_sync, (COLL,), _M,
       "Parallel Synchronization: bar.warp.sync")
define("nvvm.setmaxnreg", "() ->", "setmaxnreg.inc|dec.sync.aligned.u32 count (a multiple of 8 in "
       "[24, 256])", _setmaxnreg, (COLL,), {"action": "str: inc|dec", "count": "int"},
       "Miscellaneous: setmaxnreg", requires="sm_90a")
define("nvvm.fence", "() ->", "fence.<kind>: proxy.async[.shared::cta|.global], acq_rel|sc.<cta|"
       "cluster|gpu|sys>, mbarrier_init.release.cluster", _fence, (W,), {"kind": "str"},
       "Parallel Synchronization: membar/fence")
define("nvvm.barrier_arrive", "(id?: i32) ->", "bar.arrive id, count: arrive without waiting "
       "(id: the static attribute or a warp-uniform i32 operand)",
       _barrier_arrive, (W,), {"id?": "int", "count": "int"}, "Parallel Synchronization: bar")
define("nvvm.smem_base", "() -> ptr<T, shared>", "the CTA's dynamic shared memory", _smem_base,
       (P,), ptx="extern .shared")
define("smem.alloc", "() -> ptr<u8, shared>", "bytes [offset, offset + nbytes) of the CTA's "
       "dynamic shared memory (ws.smem.allocate); the kernel_attributes pass sums them into the "
       "kernel's dynamic_smem, the legalization rewrites it into nvvm.smem_base + ptr.offset",
       _smem_alloc, (P,), {"offset": "int: bytes", "nbytes": "int: bytes"}, "extern .shared",
       lambda operands, attrs: [PointerType(u8, "shared")], legalized=True)
define("ptr.cast", "(p: ptr<T, s>) -> ptr<U, s>", "same address, new pointee type", _ptr_cast, (P,))

_MB = "Parallel Synchronization: mbarrier"
define("mbarrier.init", "(bar, count: i32) ->", "expected arrivals per phase", _mbarrier(1),
       (W,), ptx=_MB, requires="sm_80")
define("mbarrier.arrive", "(bar, count?: i32) -> u64", "arrive (count times); the state token",
       _mbarrier(1, u64, optional_extra=True), (R, W), ptx=_MB, infer=_mbarrier_result(u64),
       requires="sm_80")
define("mbarrier.arrive_expect_tx", "(bar, bytes: i32) -> u64", "expect_tx then arrive",
       _mbarrier(1, u64), (R, W), ptx=_MB, infer=_mbarrier_result(u64), requires="sm_90")
define("mbarrier.expect_tx", "(bar, bytes: i32) ->", "raise the phase's transaction count",
       _mbarrier(1), (R, W), ptx=_MB, requires="sm_90")
define("mbarrier.try_wait_parity", "(bar, parity: i32) -> i1", "has the phase with this parity "
       "completed? (may suspend for a while)", _mbarrier(1, i1), (R, WAITS), ptx=_MB,
       infer=_mbarrier_result(i1), requires="sm_90")
define("mbarrier.try_wait_parity_hint", "(bar, parity: i32, suspend_ns: i32) -> i1",
       "try_wait_parity that may suspend the thread up to suspend_ns nanoseconds (a hint) "
       "before failing",
       _mbarrier(2, i1), (R, WAITS), ptx=_MB + ": mbarrier.try_wait suspendTimeHint (PTX 7.8)",
       infer=_mbarrier_result(i1), requires="sm_90")
define("mbarrier.wait_parity", "(bar, parity: i32) ->", "block until it has (a try_wait loop)",
       _mbarrier(1), (R, WAITS), ptx=_MB, requires="sm_90")
define("mbarrier.inval", "(bar) ->", "end of the mbarrier's life", _mbarrier(0), (W,), ptx=_MB,
       requires="sm_80")

_CP = "Data Movement: cp.async"
define("cp_async.copy", "(dst: ptr<_, shared>, src: ptr<_, global>) ->", "size bytes; cache ca "
       "(4|8|16 bytes) or cg (16)", _cp_async, (R, W, ASYNC), {"cache": "str", "size": "int"}, _CP,
       requires="sm_80")
define("cp_async.commit_group", "() ->", "close the group of this thread's pending copies",
       _no_operands, (ASYNC,), ptx=_CP, requires="sm_80")
define("cp_async.wait_group", "() ->", "until at most n groups are pending", _cp_async_wait,
       (WAITS,), {"n": "int"}, _CP, requires="sm_80")
define("cp_async.wait_all", "() ->", "until no group is pending", _no_operands, (WAITS,), ptx=_CP,
       requires="sm_80")
define("cp_async.mbarrier_arrive", "(bar) ->", "arrive on bar once prior copies land",
       _cp_async_arrive, (W, ASYNC), {"noinc?": "bool"}, _CP, requires="sm_80")
define("mem.atomic", "(p: ptr<T>, v: T) -> T", "old value; kind add|min|max|exch|and|or|xor; T in "
       "i32 u32 i64 u64 f32 f64 (floats: add, exch)", _atomic, (R, W, ATOMIC), {"kind": "str"},
       "Parallel Synchronization: atom", infer=lambda operands, attrs: [operands[1]])
define("mem.atomic_cas", "(p: ptr<T>, cmp: T, v: T) -> T", "old value; stores v if old == cmp "
       "(integers)", _atomic_cas, (R, W, ATOMIC), ptx="Parallel Synchronization: atom.cas",
       infer=lambda operands, attrs: [operands[2]])
