"""mma.sync, ldmatrix and stmatrix: warp-collective, computed on the whole warp's fragments.

The simulator holds a warp's 32 lanes as numpy vectors, so a collective gathers every lane's
fragment registers, forms the matrices by the PTX fragment layouts (``ir.ops_mma``), computes,
and scatters the result back to the lanes. All three are ``.sync.aligned``: the 32 lanes must
execute them together, so a call in divergent code, or in a partial last warp, is a
``BarrierError`` naming the line (on the GPU it hangs or gives undefined results).

- mma.sync: D = A @ B + C computed in float64 (products of f16/bf16/tf32 inputs are exact; the
  sum of at most 32 terms is rounded once to f32 or f16), or in int64 for s8/u8 and wrapped to
  32 bits. tf32 operands are f32 registers whose low 13 mantissa bits the simulator ignores
  (truncates), as the tensor core reads only the tf32 bits; round them first for the GPU's
  exact numbers (see docs/mma.md). The GPU's tensor cores may add the products in another
  order and precision: compare f32 results with a tolerance, not bit for bit.
- mma.ldmatrix: lanes 8m..8m+7 give the row addresses of matrix m (the other lanes' addresses
  are not read); each row is 16 bytes (8 elements) and must be 16-byte aligned and inside the
  CTA's shared memory. Lane l receives elements (l >> 2, 2 (l & 3) + j) of each matrix (its
  transpose with ``.trans``).
- mma.stmatrix: the inverse; rows are written in lane order (a later lane's row wins).
"""
from __future__ import annotations

import numpy as np

from ..errors import BarrierError, SimulatorError
from ..ir.core import Operation
from ..ir.ops_mma import FRAGMENT_SIZES, SHAPES, fragment_coords
from .compiler import where
from .dtypes import LANES, from_memory, memory_dtype, to_memory, to_register
from .memory import AccessFault
from .ops_memory import access_error
from .registry import handler
from .warp import LANE_IDS

__all__ = ["require_converged_warp"]

_LANES64 = LANE_IDS.astype(np.int64)
_TF32_MASK = np.uint32(0xFFFFE000)


def require_converged_warp(op: Operation, w, what: str) -> None:
    """BarrierError unless all 32 lanes of ``w`` execute ``op`` (a .sync.aligned collective)."""
    if w.nactive == LANES:
        return
    if w.nlanes < LANES:
        why = (f"warp {w.index} of block {w.cta.ctaid} has only {w.nlanes} threads (the block "
               f"size {w.cta.nthreads} is not a multiple of 32)")
        fix = "Launch a block whose size is a multiple of 32."
    else:
        why = f"{w.nactive} of 32 lanes of warp {w.index} of block {w.cta.ctaid} are active"
        fix = ("Move it out of the thread-dependent branch or loop, so that the whole warp "
               "executes it together.")
    raise BarrierError(
        f"{what} in divergent code at {where(op)}: {why}; {what} is .sync.aligned and needs "
        f"all 32 lanes of the warp. {fix}", where=where(op))


def _flat_index(shape: str, ab: str, operand: str, n: int, ncols: int) -> np.ndarray:
    """Flat (row * ncols + col) positions of each lane's ``n`` fragment elements: (n * 32,)."""
    rows, cols = zip(*(fragment_coords(shape, ab, operand, i, _LANES64) for i in range(n)))
    return (np.stack(rows) * ncols + np.stack(cols)).ravel()


def _inverse(index: np.ndarray, op: Operation) -> np.ndarray:
    """The permutation that reads a matrix out of its fragments: ``matrix = regs[inverse]``
    where ``matrix[index] = regs`` (a fragment layout holds every element once)."""
    order = np.argsort(index, kind="stable")
    if not np.array_equal(index[order], np.arange(index.size)):
        raise SimulatorError(f"internal: the fragment layout of {op.name} at {where(op)} does "
                             "not hold each matrix element once")
    return order


@handler("mma.sync")
def _mma(op: Operation, cx):
    shape, ab, acc = op.attrs["shape"], op.attrs["ab"], op.attrs["acc"]
    m, n, k = SHAPES[shape]
    na, nb, nc = FRAGMENT_SIZES[shape, ab]
    slots = cx.slots(op.operands)
    a_s, b_s, c_s = slots[:na], slots[na:na + nb], slots[na + nb:]
    r_s = [cx.slot(r) for r in op.results]
    ia, ib, ic = (_flat_index(shape, ab, "a", na, k), _flat_index(shape, ab, "b", nb, n),
                  _flat_index(shape, ab, "c", nc, n))
    ra, rb = _inverse(ia, op), _inverse(ib, op)
    integer = acc == "s32"
    work = np.int64 if integer else np.float64
    dtype_d = op.results[0].type
    what = f"mma.sync.aligned.{shape}"

    def gather(s, fslots, inverse):
        """The operand's matrix, flat, in the work type, from the lanes' fragment registers."""
        if ab == "tf32":
            regs = np.concatenate([s[j] for j in fslots])
            return (regs.view(np.uint32) & _TF32_MASK).view(np.float32)[inverse].astype(work)
        return np.concatenate([s[j] for j in fslots], dtype=work)[inverse]

    def mma(s, w):
        require_converged_warp(op, w, what)
        a = gather(s, a_s, ra).reshape(m, k)
        b = gather(s, b_s, rb).reshape(k, n)
        # D = A B + C in fragment order (the lanes' registers one after another): the same sums
        # as adding C to the matrix, without moving C into it
        frag = (a @ b).ravel()[ic] + np.concatenate([s[j] for j in c_s], dtype=work)
        if integer:
            frag = frag.astype(np.uint32).view(np.int32)
        else:
            frag = to_register(dtype_d, frag)
        for i, slot in enumerate(r_s):
            s[slot] = frag[i * LANES:(i + 1) * LANES]
    return mma


def _row_addresses(op: Operation, w, s, p_slot, rows: int, what: str) -> np.ndarray:
    """The row addresses of lanes 0..rows-1, checked for 16-byte alignment and bounds."""
    addrs = s[p_slot][:rows].astype(np.int64)
    size = w.cta.smem.bytes.size
    # the common case in two tests: aligned, and inside (a negative address read unsigned is
    # above any size); the lane that fails is found only when one does
    if size >= 16 and not np.count_nonzero(addrs & 15) and \
            not np.count_nonzero(addrs.view(np.uint64) > size - 16):
        return addrs
    bad = np.flatnonzero(addrs % 16)
    if bad.size:
        lane = int(bad[0])
        raise SimulatorError(
            f"{what} at {where(op)}: the row address {int(addrs[lane]):#x} given by "
            f"{w.describe_lane(lane)} is not 16-byte aligned; every row of an 8x8 .b16 matrix is "
            "16 contiguous bytes starting at a multiple of 16. Fix: align the tile's rows (a row "
            "pitch that is a multiple of 8 elements and a 16-byte aligned base).", where=where(op))
    bad = np.flatnonzero((addrs < 0) | (addrs + 16 > size))
    if bad.size:
        lane = int(bad[0])
        fault = AccessFault(lane, int(addrs[lane]), w.cta.smem.nearest(int(addrs[lane])))
        raise access_error(op, w, f"{what} row", fault, None)
    return addrs


def _lane_layout(trans: bool):
    """(row, col) of the two elements each lane holds of one 8x8 matrix: arrays (2, 32)."""
    j = np.arange(2)[:, None]
    r, c = np.broadcast_to(_LANES64 >> 2, (2, LANES)), (_LANES64 & 3) * 2 + j
    return (c, r) if trans else (r, c)


def _tile_positions(num: int, trans: bool) -> np.ndarray:
    """Where each lane's element of register 2m + j (matrix m, element j) lies in the
    (num, 8, 8) tiles, flat, registers one after another: the layout is a permutation of each
    matrix, so one gather or scatter moves all registers."""
    rows, cols = _lane_layout(trans)
    return np.concatenate([m * 64 + rows[j] * 8 + cols[j] for m in range(num) for j in (0, 1)])


@handler("mma.ldmatrix")
def _ldmatrix(op: Operation, cx):
    p = cx.slot(op.operands[0])
    r_s = [cx.slot(r) for r in op.results]
    num, trans = op.attrs["num"], op.attrs.get("trans", False)
    t = op.results[0].type
    mdt = memory_dtype(t)
    place = _tile_positions(num, trans)
    what = f"ldmatrix.sync.aligned.m8n8.x{num}{'.trans' if trans else ''}"
    hint = [None, op]   # [last buffer hit, the op: for race reports]

    def ldmatrix(s, w):
        require_converged_warp(op, w, what)
        addrs = _row_addresses(op, w, s, p, 8 * num, what)
        halves = [w.cta.smem.load(addrs + 8 * h, np.dtype(np.uint64), hint) for h in (0, 1)]
        tiles = np.stack(halves, axis=1).view(np.uint16).ravel()
        regs = from_memory(t, tiles[place].view(mdt))
        for i, slot in enumerate(r_s):
            s[slot] = regs[i * LANES:(i + 1) * LANES]
    return ldmatrix


@handler("mma.stmatrix")
def _stmatrix(op: Operation, cx):
    p, *v_s = cx.slots(op.operands)
    num, trans = op.attrs["num"], op.attrs.get("trans", False)
    t = op.operands[1].type
    place = _tile_positions(num, trans)
    what = f"stmatrix.sync.aligned.m8n8.x{num}{'.trans' if trans else ''}"
    hint = [None, op]   # [last buffer hit, the op: for race reports]

    def stmatrix(s, w):
        require_converged_warp(op, w, what)
        addrs = _row_addresses(op, w, s, p, 8 * num, what)
        values = np.concatenate([s[k] for k in v_s])
        tiles = np.empty(64 * num, np.uint16)
        tiles[place] = to_memory(t, values).view(np.uint16)
        words = tiles.view(np.uint64).reshape(8 * num, 2)
        # per 8-byte half, one store in lane order (at most 32 addresses, as the memory's fast
        # path takes): where rows overlap, the higher lane's row wins
        for h in (0, 1):
            w.cta.smem.store(addrs + 8 * h, words[:, h], hint)
    return stmatrix
