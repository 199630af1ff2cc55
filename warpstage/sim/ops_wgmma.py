"""Warpgroup MMA (PTX ISA 8.0 "Asynchronous Warpgroup Level Matrix Multiply-Accumulate
Instructions"): wgmma.mma_async with its exact fragment and shared-memory layouts, and the
fence / commit / wait rules.

Execution. ``wgmma.mma_async`` is warpgroup-collective: the 4 warps of a warpgroup (threads
128g .. 128g+127) execute it together. Each warp arrives with its registers and waits; the
fourth arrival reads the A (64x16) and B (16xN) tiles from shared memory through their
descriptors (or A from the 128 threads' register fragments), computes D = sA*A @ sB*B (+ D) in
float64 from the f16/bf16 (64x16 @ 16xN) or e4m3/e5m2 (64x32 @ 32xN, K-major tiles, one byte
per element) inputs and rounds once to the accumulator type, and hands each warp
its fragment of D. Shared memory is read **at issue** (when the fourth warp arrives). At the
first ``wait_group`` of the warpgroup that completes the group, the simulator reads the same
bytes again and reports a ``SimulatorError`` if they changed: on the GPU the wgmma may read its
operands at any time until then, so overwriting them earlier is a race. (A write made after
some warp of the warpgroup has waited is not checked: that warp may legitimately reuse the
tile, and the simulator does not track which warp wrote.)

Layouts (``FRAGMENT``): element i of thread t's accumulator fragment (and of an A register
fragment, which has the m64n16 layout) is row ``16*(t//32) + (t%32)//4 + 8*((i//2)%2)``, column
``8*(i//4) + 2*(t%4) + i%2``. Shared-memory tiles are read per the descriptor: start address,
leading/stride byte offsets (LBO/SBO) and swizzle, with the canonical layouts of the PTX
"Shared Memory Matrix Layout" section (as CUTLASS's ``make_gmma_desc`` documents them), in
bytes, for element (mn, k) of a 16-bit operand, before the swizzle of ``ir.swizzle``:

  K-major,  no swizzle:  start + (mn%8)*16 + (mn//8)*SBO + (k//8)*LBO + (k%8)*2
  K-major,  swizzle S:   start + (mn%8)*S  + (mn//8)*SBO + k*2                  (LBO unused)
  MN-major, no swizzle:  start + (mn%8)*2  + (mn//8)*SBO + (k%8)*16 + (k//8)*LBO
  MN-major, swizzle S:   start + (mn%(S/2))*2 + (mn//(S/2))*LBO + (k%8)*S + (k//8)*SBO

(for a K-major 8-bit operand: ``k*1`` and, unswizzled, ``(k//16)*LBO + k%16``: a core-matrix row is
16 bytes whatever the element size).

Checks (``SimulatorError`` / ``BarrierError`` naming the op's file:line): a warp not fully
active (the instructions are ``.aligned``); a warpgroup the CTA does not have complete; warps of
one warpgroup at different wgmma ops (``BarrierError``; warps that never arrive show in the
deadlock report); descriptors or scale-d that differ between the 128 threads; reads outside
shared memory; a swizzled tile whose start is not in the first row of its 8-row swizzle atom,
or a nonzero base offset; an mma_async with no ``wgmma.fence`` since the warp began or since
its last ``wait_group`` (PTX requires the fence before the first wgmma and between other
register accesses and a wgmma; the simulator takes every wait_group as such an access).
With the race detector on (``sim/races.py``), the operand bytes count as read at issue by
each of the 4 warps, so a store not ordered before the wgmma by a barrier is a ``RaceError``.
A ``wait_group(n)`` handed accumulators of a group that stays pending (one of the ``n`` newest)
or that was never committed (``SimulatorError`` naming the wgmma's and the wait's lines): the
registers are tracked by identity, through fences, loops and calls. A wgmma whose group no
wait_group completed when the CTA exits (committed or not) is an error naming its line.
(Reading a fragment before any wait_group is a trace-time ``OperandError``, ``lang/fragment.py``.) The ``fence.proxy.async``
that makes generic-proxy stores visible to wgmma is checked by the race detector.
"""
from __future__ import annotations

import numpy as np

from ..errors import BarrierError, OutOfBoundsError, SimulatorError, UnsupportedError
from ..ir.core import Operation
from ..ir.ops_wgmma import FP8_TYPES, a_operand_count
from .compiler import where
from .dtypes import LANES, unpack_pair
from .fp8 import fp8_values
from .races import note_read
from .registry import handler
from .scheduler import Wait
from .wgmma_layout import FRAGMENT, decode_descriptor, fragment_coords, operand_addresses

__all__ = ["FRAGMENT", "fragment_coords", "decode_descriptor", "operand_addresses"]



# -- per-CTA state ------------------------------------------------------------------------------
class _WarpState:
    """One warp's wgmma bookkeeping: fenced since its last wait, its uncommitted mma records and
    its committed groups (oldest first)."""

    def __init__(self):
        self.fenced = False
        self.last_wait = None
        self.uncommitted: list = []
        self.groups: list = []


class _Record:
    """An issued mma_async: its op and, per shared-memory operand, (name, addresses, elements
    read at issue, their ``_load`` index); ``checked`` once a wait_group has compared them with
    shared memory again."""

    def __init__(self, op, reads, results):
        self.op = op
        self.reads = reads
        self.checked = False
        self.results = results      # per warp: its D registers (compared by identity)


class _Rendezvous:
    """The warps of one warpgroup arriving at one mma_async."""

    def __init__(self, op, group: int):
        self.op = op
        self.group = group
        self.arrived: dict = {}
        self.results = None
        self.record = None


def _state(cta) -> dict:
    st = cta.ext.get("wgmma")
    if st is None:
        st = cta.ext["wgmma"] = {"warps": {}, "rendezvous": {}}
        cta.ext.setdefault("at_exit", []).append(lambda: _at_exit(st))
    return st


def _at_exit(st: dict) -> None:
    """The CTA exits: an mma_async whose group no wait_group completed is an error (the GPU may
    still write its accumulator registers and read its shared-memory operands)."""
    for windex, ws in sorted(st["warps"].items()):
        pending = [(rec, True) for g in ws.groups for rec in g]
        pending += [(rec, False) for rec in ws.uncommitted]
        if pending:
            rec, committed = pending[0]
            why = ("its wgmma-group was committed but no ws.wgmma.wait_group completed it"
                   if committed else "it was never committed (no ws.wgmma.commit_group() "
                   "after it) nor waited for")
            raise SimulatorError(
                f"the wgmma.mma_async at {where(rec.op)} (warp {windex}) was still pending when "
                f"the CTA exited: {why}. Its accumulator registers are undefined until the group "
                "completes, and the GPU may read its shared-memory operands after the CTA ended. "
                "Fix: ws.wgmma.commit_group(), then acc = ws.wgmma.wait_group(0, acc) before "
                "the accumulators are read and before the kernel ends.", where=where(rec.op))


def _warp_state(w) -> _WarpState:
    warps = _state(w.cta)["warps"]
    ws = warps.get(w.index)
    if ws is None:
        ws = warps[w.index] = _WarpState()
    return ws


def _aligned(op, w, what):
    if w.nactive != LANES:
        raise BarrierError(
            f"{what} in divergent code at {where(op)}: {w.nactive} of 32 lanes of warp "
            f"{w.index} active; wgmma instructions are .sync.aligned: every thread of the "
            "warpgroup executes them together. Move it out of the thread-dependent branch.",
            where=where(op))


class _MmaWait(Wait):
    hint = ("wgmma.mma_async is warpgroup-collective: all 4 warps of the warpgroup must execute "
            "the same wgmma instructions (branch on ws.arch.make_warp_uniform("
            "ws.arch.warpgroup_idx()), not on the warp index).")

    def __init__(self, rv: _Rendezvous):
        self.rv = rv
        self.op = rv.op

    def ready(self, warp) -> bool:
        return self.rv.results is not None

    def describe(self) -> str:
        g = self.rv.group
        missing = [4 * g + i for i in range(4) if 4 * g + i not in self.rv.arrived]
        return (f"wgmma.mma_async at {where(self.op)} (warpgroup {g}: warps "
                f"{sorted(self.rv.arrived)} arrived, waiting for warps {missing})")


# -- the matrix product -------------------------------------------------------------------------
def _to_float(raw: np.ndarray, type_name: str) -> np.ndarray:
    if type_name in FP8_TYPES:
        return fp8_values(type_name, raw).astype(np.float64)
    if type_name == "f16":
        return raw.view(np.float16).astype(np.float64)
    return (raw.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def _uniform(op, rv, values, what) -> int:
    """The one value all 128 threads hold (uint64 arrays per warp), else an error."""
    flat = np.concatenate([np.asarray(v).astype(np.uint64) for v in values])
    if np.any(flat != flat[0]):
        bad = int(np.flatnonzero(flat != flat[0])[0])
        raise SimulatorError(
            f"wgmma.mma_async at {where(op)}: {what} differs between the threads of warpgroup "
            f"{rv.group} (thread 0 of the warpgroup has {int(flat[0]):#x}, thread {bad} has "
            f"{int(flat[bad]):#x}); it must be warpgroup-uniform", where=where(op))
    return int(flat[0])


_ADDRESSES: dict = {}


def _addresses(desc: int, rows: int, mn_major: bool, eb: int) -> tuple:
    """(``operand_addresses(...)``, its min, its max, the index ``_load`` gathers with), all
    read-only: a kernel issues the same few descriptors (its ring stages times its K steps) over
    and over, so they are computed once per process (the table is emptied past 4096 entries).
    The index is the byte addresses for 1-byte elements and the 16-bit word numbers
    (``addrs >> 1``) for 2-byte ones, whose addresses are even: the descriptor's start, LBO and
    SBO are multiples of 16 and the swizzle permutes 16-byte chunks."""
    key = (desc, rows, mn_major, eb)
    hit = _ADDRESSES.get(key)
    if hit is None:
        if len(_ADDRESSES) >= 4096:
            _ADDRESSES.clear()
        addrs = operand_addresses(desc, rows, mn_major, eb)
        addrs.flags.writeable = False
        index = addrs if eb == 1 else addrs >> 1
        index.flags.writeable = False
        hit = _ADDRESSES[key] = (addrs, int(addrs.min()), int(addrs.max()), index)
    return hit


def _read_tile(op, cta, desc: int, rows: int, mn_major: bool, what: str, type_name: str):
    f = decode_descriptor(desc)
    span = f["swizzle"]
    if f["base_offset"]:
        raise UnsupportedError(
            f"wgmma.mma_async at {where(op)}: the {what} descriptor has base offset "
            f"{f['base_offset']}; the simulator models base offset 0 only. Align the tile to "
            f"{8 * span} bytes and pass base_offset=0.", where=where(op))
    if span and f["start"] % (8 * span) >= span:
        raise SimulatorError(
            f"wgmma.mma_async at {where(op)}: the {what} tile is misaligned for its {span}-byte "
            f"swizzle: its start address {f['start']:#x} lies in row "
            f"{f['start'] % (8 * span) // span} of a {8 * span}-byte swizzle atom (it must lie "
            f"in row 0). Align the tile to {8 * span} bytes (ws.smem.Array[..., {8 * span}]) "
            "and advance descriptors along K within a row, along M/N by 8-row groups.",
            where=where(op))
    eb = 1 if type_name in FP8_TYPES else 2
    addrs, lo, hi, index = _addresses(desc, rows, mn_major, eb)
    size = cta.smem.bytes.size
    if lo < 0 or hi + eb > size:
        raise OutOfBoundsError(
            f"wgmma.mma_async at {where(op)}: the {what} descriptor {desc:#x} (start "
            f"{f['start']:#x}, LBO {f['lbo']}, SBO {f['sbo']}, swizzle {span}) reads shared "
            f"memory bytes [{lo:#x}, {hi + eb:#x}), outside the "
            f"CTA's {size}-byte shared memory. Check the tile's address and the launch's "
            "shared memory size.", where=where(op))
    raw = _load(cta, index, eb)
    return _to_float(raw, type_name), (what, addrs, raw, index)


def _load(cta, index: np.ndarray, eb: int) -> np.ndarray:
    """The ``eb``-byte elements of shared memory at ``index`` (``_addresses``' last item, inside
    the CTA's shared memory): bytes (uint8) or little-endian 16-bit words (uint16), a copy."""
    b = cta.smem.bytes
    if eb == 1:
        return b[index]
    return b[:b.size & ~1].view("<u2")[index]


_FLAT: dict = {}


def _flat(n: int) -> np.ndarray:
    """``FRAGMENT[n]`` as indices into the row-major 64 x n matrix, shaped (4 warps, n/2
    registers, 32 lanes): one gather or scatter of them moves every element of the fragments
    (each matrix element once)."""
    idx = _FLAT.get(n)
    if idx is None:
        rows, cols = FRAGMENT[n]
        idx = _FLAT[n] = rows * n + cols
        idx.flags.writeable = False
    return idx


def _fragments(per_warp: list) -> np.ndarray:
    """The registers of the 4 warps' fragments (``per_warp``: each a list of 32-lane registers,
    in ``FRAGMENT`` order) as one flat float64 vector, ordered as ``_flat(n).ravel()``."""
    return np.concatenate([r for regs in per_warp for r in regs], dtype=np.float64)


def _scatter(n: int, per_warp: list) -> np.ndarray:
    """The 64 x n float64 matrix whose m64nN fragments the 4 warps hold (``per_warp`` as for
    ``_fragments``)."""
    out = np.zeros(64 * n)
    out[_flat(n).ravel()] = _fragments(per_warp)
    return out.reshape(64, n)


def _compute(op, rv: _Rendezvous, cta) -> None:
    a = op.attrs
    n, type_a = a["n"], a["type_a"]
    payloads = [rv.arrived[4 * rv.group + i] for i in range(4)]
    reads = []
    if a["a_regs"]:
        amat = _scatter(16, [p[0] for p in payloads])
    else:
        desc = _uniform(op, rv, [p[0][0] for p in payloads], "the A descriptor")
        amat, read = _read_tile(op, cta, desc, 64, bool(a["tnsp_a"]), "A", type_a)
        reads.append(read)
    bdesc = _uniform(op, rv, [p[1] for p in payloads], "the B descriptor")
    bt, read = _read_tile(op, cta, bdesc, n, bool(a["tnsp_b"]), "B", a["type_b"])
    reads.append(read)
    for what, addrs, raw, _ in reads:    # the race detector (when on): each issuing warp reads
        for wi in range(4):
            note_read(cta, addrs.ravel(), raw.itemsize, cta.warps[4 * rv.group + wi], op,
                      async_proxy=True)
    d = (a["scale_a"] * amat) @ (a["scale_b"] * bt).T
    scale_d = a["scale_d"]
    if scale_d == "dynamic":
        scale_d = bool(_uniform(op, rv, [p[2] for p in payloads], "the scale-d predicate"))
    frags = d.ravel()[_flat(n)]              # (4 warps, n/2 registers, 32 lanes)
    if scale_d:                              # + D, added in fragment order: the same sums
        frags = frags + _fragments([p[3] for p in payloads]).reshape(frags.shape)
    frags = frags.astype(np.float16 if a["type_d"] == "f16" else np.float32)
    rv.results = [list(frags[wi]) for wi in range(4)]
    rv.record = _Record(op, reads, rv.results)


def _arrive(op, w, payload) -> _Rendezvous:
    cta = w.cta
    g = w.index // 4
    if cta.nwarps < 4 * (g + 1) or cta.nthreads < 128 * (g + 1):
        raise BarrierError(
            f"wgmma.mma_async at {where(op)}: warp {w.index} belongs to warpgroup {g}, which "
            f"this CTA of {cta.nthreads} threads does not have complete; wgmma needs 4 full "
            "warps (128 threads) per warpgroup. Launch a multiple of 128 threads.",
            where=where(op))
    table = _state(cta)["rendezvous"]
    rv = table.get(g)
    if rv is None:
        rv = table[g] = _Rendezvous(op, g)
    elif rv.op is not op:
        raise BarrierError(
            f"warpgroup {g}: warp {w.index} issues wgmma.mma_async at {where(op)} while warps "
            f"{sorted(rv.arrived)} wait at the wgmma.mma_async at {where(rv.op)}; the 4 warps of "
            "a warpgroup must issue the same wgmma instructions in the same order",
            where=where(op))
    rv.arrived[w.index] = payload
    if len(rv.arrived) == 4:
        del table[g]
        _compute(op, rv, cta)
    return rv


def _unpacker(attrs):
    """A packed A fragment's 4 u32 registers -> its 8 elements (element 2i from bits 0-15 of
    register i), as the 16-bit registers an unpacked fragment would hold."""
    of = attrs["type_a"]
    return lambda regs: [x for reg in regs for x in unpack_pair(reg, of)]


@handler("wgmma.mma_async", blocking=True)
def _mma_async(op: Operation, cx):
    a = op.attrs
    slots = cx.slots(op.operands)
    n_a = a_operand_count(a)
    unpack = _unpacker(a) if a["a_regs"] == "packed" else None
    a_slots, b_slot = slots[:n_a], slots[n_a]
    dynamic = a["scale_d"] == "dynamic"
    s_slot = slots[n_a + 1] if dynamic else None
    d_slots = slots[n_a + 1 + (1 if dynamic else 0):]
    r_slots = cx.slots(op.results)

    def mma_async(s, w):
        _aligned(op, w, "wgmma.mma_async")
        st = _warp_state(w)
        if not st.fenced:
            since = (f"its last wgmma.wait_group at {where(st.last_wait)}" if st.last_wait
                     else "the kernel began")
            raise SimulatorError(
                f"wgmma.mma_async at {where(op)} (warp {w.index}): no wgmma.fence since {since}. "
                "PTX requires wgmma.fence before the first wgmma.mma_async and between other "
                "accesses to its registers and the wgmma; call ws.wgmma.fence(acc) first.",
                where=where(op))
        a_in = [s[k] for k in a_slots]
        payload = (unpack(a_in) if unpack else a_in, s[b_slot], None if s_slot is None else s[s_slot],
                   [s[k] for k in d_slots])
        rv = _arrive(op, w, payload)
        if rv.results is None:
            yield _MmaWait(rv)
        for k, v in zip(r_slots, rv.results[w.index % 4]):
            s[k] = v
        st.uncommitted.append(rv.record)
    return mma_async


# -- fence, commit, wait ---------------------------------------------------------------------------
def _pass_through(op, cx):
    return cx.slots(op.operands), cx.slots(op.results)


@handler("wgmma.fence")
def _fence(op: Operation, cx):
    src, dst = _pass_through(op, cx)

    def fence(s, w):
        _aligned(op, w, "wgmma.fence")
        _warp_state(w).fenced = True
        for i, o in zip(src, dst):
            s[o] = s[i]
    return fence


@handler("wgmma.commit_group")
def _commit(op: Operation, cx):
    def commit_group(s, w):
        _aligned(op, w, "wgmma.commit_group")
        st = _warp_state(w)
        st.groups.append(st.uncommitted)
        st.uncommitted = []
    return commit_group


def _check_unchanged(op, w, rec: _Record) -> None:
    for what, addrs, raw, index in rec.reads:
        now = _load(w.cta, index, raw.itemsize)
        if not np.array_equal(now, raw):
            pos = np.flatnonzero((now != raw).ravel())[0]
            addr = int(addrs.ravel()[pos])
            raise SimulatorError(
                f"shared memory read by the wgmma.mma_async at {where(rec.op)} (operand {what}, "
                f"byte {addr:#x}) changed before the wgmma.wait_group at {where(op)} completed "
                "it; the GPU may read the operands at any time until then. Wait for the group "
                "(ws.wgmma.wait_group) before overwriting its tiles.", where=where(op))
    rec.checked = True


def _check_completed(op, w, st: _WarpState, values) -> None:
    """The registers handed to wait_group must come from completed groups: a D fragment of a
    group still pending (one of the ``n`` newest) or never committed is not ready after it."""
    wi = w.index % 4
    pending = [(rec, True) for g in st.groups for rec in g]
    pending += [(rec, False) for rec in st.uncommitted]
    given = set(map(id, values))       # ``values`` keeps the registers alive: ids are unique
    if all(given.isdisjoint(map(id, rec.results[wi])) for rec, _ in pending):
        return
    for v in values:                   # the first offending register, for the message
        for rec, committed in pending:
            if any(v is r for r in rec.results[wi]):
                n = op.attrs["n"]
                why = (f"its wgmma-group is still pending: wait_group({n}) leaves the {n} newest "
                       f"group(s) in flight" if committed else
                       "it was never committed (no ws.wgmma.commit_group() after it), so no "
                       "wait_group waits for it")
                raise SimulatorError(
                    f"wgmma.wait_group at {where(op)} (warp {w.index}) hands back the "
                    f"accumulators of the wgmma.mma_async at {where(rec.op)}, but {why}; their "
                    "registers are undefined until the group completes. Fix: "
                    + ("wait with a smaller n (ws.wgmma.wait_group(0, acc)), or pass only the "
                       "fragments of completed groups" if committed else
                       "call ws.wgmma.commit_group() after the mma calls, before wait_group"),
                    where=where(op))


@handler("wgmma.wait_group")
def _wait(op: Operation, cx):
    n = op.attrs["n"]
    src, dst = _pass_through(op, cx)

    def wait_group(s, w):
        _aligned(op, w, "wgmma.wait_group")
        st = _warp_state(w)
        done = st.groups[:max(0, len(st.groups) - n)]
        st.groups = st.groups[len(done):]
        if st.groups or st.uncommitted:
            _check_completed(op, w, st, [s[i] for i in src])
        for group in done:
            for rec in group:
                if not rec.checked:
                    _check_unchanged(op, w, rec)
        st.fenced = False
        st.last_wait = op
        for i, o in zip(src, dst):
            s[o] = s[i]
    return wait_group

