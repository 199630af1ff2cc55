"""Verifier rules of the TMA ops (the Tensor Memory Accelerator: bulk asynchronous copies between
global and shared memory, sm_90), and their definitions.

Contract (``desc`` is a ``!tensormap``; ``bar`` an mbarrier ``!ptr<u64, shared>``; coordinates
are ``i32`` element indices, outermost dimension first, as many as the box has dimensions;
``box`` is the static box shape in elements, outermost first; ``bytes`` the bytes one box
occupies in shared memory):

  tma.load {box, bytes} (desc, dst: ptr<T, shared>, bar, *coords) ->
        copy the box at ``coords`` of the descriptor's tensor into shared memory at dst, then
        complete ``bytes`` transaction bytes on bar (elements outside the tensor read as 0, or
        NaN with the descriptor's NaN fill); cp.async.bulk.tensor.<r>d.shared::cluster.global
        .tile.mbarrier::complete_tx::bytes
  tma.load {box, bytes, multicast=True} (desc, dst, bar, mask: i32, *coords) ->
        the same box into dst of every CTA of the cluster whose rank's bit is set in ``mask``
        (16 bits), completing ``bytes`` on the mbarrier at bar's offset in each of them;
        ... .mbarrier::complete_tx::bytes.multicast::cluster [dst], [desc, {..}], [bar], mask
  tma.store {box, bytes} (desc, src: ptr<T, shared>, *coords) ->
        copy the box from shared memory at src to ``coords`` of the tensor (elements outside
        it are not written), in this thread's current bulk group;
        cp.async.bulk.tensor.<r>d.global.shared::cta.tile.bulk_group
  tma.commit_group ->                     close this thread's bulk stores into a bulk group
  tma.wait_group {n, read} ->             until at most n bulk groups are pending (read: only
                                          their shared-memory reads); cp.async.bulk.wait_group
  tma.prefetch_descriptor (desc) ->       prefetch.tensormap: fetch the descriptor into cache
  tma.bulk_copy (dst: ptr<_, shared>, src: ptr<_, global>, nbytes: i32, bar) ->
        copy nbytes (a multiple of 16; both addresses 16-byte aligned), then complete nbytes
        on bar; cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes
"""
from __future__ import annotations

from typing import Optional

from .core import Operation
from .opdef import define
from .ops import ASYNC, R, W, WAITS, _arity, _types
from .types import PointerType, TensorMapType, i32

__all__ = ["MAX_RANK", "MAX_BOX", "MAX_WAIT_GROUPS"]

MAX_RANK = 5
MAX_BOX = 256
MAX_WAIT_GROUPS = 64


def _is_mbarrier(v) -> bool:
    t = v.type
    return (isinstance(t, PointerType) and t.space == "shared" and t.pointee.is_int
            and t.pointee.bits == 64)


def _box(op: Operation) -> Optional[str]:
    box, nbytes = op.attrs.get("box"), op.attrs.get("bytes")
    if not isinstance(box, (tuple, list)) or not 1 <= len(box) <= MAX_RANK or any(
            isinstance(b, bool) or not isinstance(b, int) or not 1 <= b <= MAX_BOX for b in box):
        return f"box must be 1 to {MAX_RANK} ints in [1, {MAX_BOX}], got {box!r}"
    if isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes <= 0 or nbytes % 16:
        return f"bytes must be a positive multiple of 16, got {nbytes!r}"
    return None


def _tensor_copy(op: Operation, n_fixed: int, smem_index: int, with_bar: bool) -> Optional[str]:
    err = _box(op)
    if err:
        return err
    rank = len(op.attrs["box"])
    if op.results:
        return f"{op.name} gives no results"
    if len(op.operands) != n_fixed + rank:
        return (f"expected {n_fixed} operands and {rank} coordinates (one per box dimension), "
                f"got {len(op.operands)} operands")
    desc, smem = op.operands[0], op.operands[smem_index]
    if not isinstance(desc.type, TensorMapType):
        return f"expected a !tensormap first, got {desc.type}"
    if not (isinstance(smem.type, PointerType) and smem.type.space == "shared"):
        return f"expected a shared-memory pointer as operand {smem_index}, got {smem.type}"
    if with_bar and not _is_mbarrier(op.operands[2]):
        return f"expected an mbarrier !ptr<u64, shared> as operand 2, got {op.operands[2].type}"
    coords = op.operands[n_fixed:]
    if any(c.type != i32 for c in coords):
        return f"coordinates must be i32, got ({', '.join(_types(coords))})"
    return None


def _load(op):
    multicast = op.attrs.get("multicast", False)
    if not isinstance(multicast, bool):
        return f"multicast must be a bool, got {multicast!r}"
    if multicast and (len(op.operands) < 4 or op.operands[3].type != i32):
        return "a multicast load takes an i32 CTA mask after the mbarrier (operand 3)"
    return _tensor_copy(op, 4 if multicast else 3, 1, True)


def _store(op):
    return _tensor_copy(op, 2, 1, False)


def _commit(op):
    return _arity(op, 0, 0)


def _wait(op):
    err = _arity(op, 0, 0)
    if err:
        return err
    n = op.attrs.get("n")
    if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n < MAX_WAIT_GROUPS:
        return f"wait_group needs a static count of pending groups in [0, {MAX_WAIT_GROUPS}), got {n!r}"
    if not isinstance(op.attrs.get("read", False), bool):
        return f"read must be a bool, got {op.attrs.get('read')!r}"
    return None


def _prefetch(op):
    err = _arity(op, 1, 0)
    if err:
        return err
    if not isinstance(op.operands[0].type, TensorMapType):
        return f"expected a !tensormap, got {op.operands[0].type}"
    return None


def _bulk_copy(op):
    err = _arity(op, 4, 0)
    if err:
        return err
    dst, src, nbytes, bar = op.operands
    if not (isinstance(dst.type, PointerType) and dst.type.space == "shared"):
        return f"expected a shared destination, got {dst.type}"
    if not (isinstance(src.type, PointerType) and src.type.space == "global"):
        return f"expected a global source, got {src.type}"
    if nbytes.type != i32:
        return f"expected an i32 byte count, got {nbytes.type}"
    if not _is_mbarrier(bar):
        return f"expected an mbarrier !ptr<u64, shared> last, got {bar.type}"
    return None


_TMA = "Data Movement: cp.async.bulk.tensor"
_BOX = {"box": "tuple of ints: elements, outermost first", "bytes": "int"}
define("tma.load", "(desc, dst: ptr<T, shared>, bar, mask?: i32, *coords: i32) ->", "box at "
       "coords -> smem at dst (of each CTA in mask when multicast), then complete_tx bytes on "
       "bar", _load, (R, W, ASYNC), {**_BOX, "multicast?": "bool"}, _TMA, requires="sm_90")
define("tma.store", "(desc, src: ptr<T, shared>, *coords: i32) ->", "box from smem at src -> the "
       "tensor at coords, in the current bulk group", _store, (R, W, ASYNC), _BOX, _TMA,
       requires="sm_90")
define("tma.commit_group", "() ->", "close this thread's bulk stores into a bulk group", _commit,
       (ASYNC,), ptx="Data Movement: cp.async.bulk.commit_group", requires="sm_90")
define("tma.wait_group", "() ->", "until at most n bulk groups are pending (read: only their "
       "smem reads)", _wait, (WAITS,), {"n": "int", "read?": "bool"},
       "Data Movement: cp.async.bulk.wait_group", requires="sm_90")
define("tma.prefetch_descriptor", "(desc) ->", "fetch the descriptor into cache", _prefetch, (W,),
       ptx="Data Movement: prefetch.tensormap", requires="sm_90")
define("tma.bulk_copy", "(dst: ptr<_, shared>, src: ptr<_, global>, nbytes: i32, bar) ->", "copy "
       "nbytes (multiple of 16), then complete_tx nbytes on bar", _bulk_copy, (R, W, ASYNC),
       ptx="Data Movement: cp.async.bulk", requires="sm_90")
