"""The race detector's checks for Hopper's asynchronous machinery (docs/simulator.md, "Race
detector"), mixed into ``races.RaceState``: mbarrier objects (init/inval are plain writes of the
8 bytes, arrive/expect_tx/wait atomic accesses, so a use that no barrier orders after the init is
reported), the async proxy (generic-proxy writes read by TMA stores or wgmma need their writer's
fence.proxy.async ordered before the read), and the fix texts of race reports.

PTX ISA "Memory Consistency Model: Proxies", "membar/fence" (fence.proxy.async),
"mbarrier.init" (the init must be made visible before other threads use the object:
fence.mbarrier_init plus a barrier).
"""
from __future__ import annotations

import numpy as np

from ..errors import RaceError
from .compiler import where

READ, WRITE, ATOMIC = "read", "write", "atomic"
_SPAN: dict = {}


def _span(k: int) -> np.ndarray:
    a = _SPAN.get(k)
    if a is None:
        a = _SPAN[k] = np.arange(k, dtype=np.int64)
    return a


class AsyncChecks:
    """Methods of ``RaceState`` (which owns ``vc``, ``w_*``, ``f_epoch``, ``_mbar_atomics``,
    ``_unfenced``, ``access`` and ``_report``)."""

    # -- mbarrier objects -----------------------------------------------------------------------
    def mbarrier_access(self, warp, addr: int, lane: int, op, write: bool) -> None:
        """``warp`` (``lane``) initialized or invalidated (``write``) the mbarrier at ``addr``, or
        used it (an atomic access: arrive, expect_tx, wait). Kept apart from the per-byte atomic
        shadow so that plain accesses do not pay for mbarriers."""
        wi = warp.index
        idx = addr + _span(8)
        lanes = np.full(8, lane, np.int64)
        rec = self._mbar_atomics.get(addr)
        if write:
            self.access(WRITE, warp, idx[:1], 8, lanes[:1], op)
            if rec is not None:
                unordered = rec[0] > self.vc[wi]
                if unordered.any():
                    u = int(np.argmax(unordered))
                    self._report(ATOMIC, u, np.full(8, rec[1][u]), WRITE, warp, op, idx, lanes,
                                 8, 0, np.ones(8, np.bool_))
            return
        clock = self.vc[wi]
        bad = self.w_epoch[idx] > clock[self.w_warp[idx]]
        if bad.any():
            j = int(np.argmax(bad))
            self._report(WRITE, int(self.w_warp[idx[j]]), self.w_loc[idx], ATOMIC, warp, op, idx,
                         lanes, 8, j, bad)
        if rec is None:
            n = self.vc.shape[0]
            rec = self._mbar_atomics[addr] = (np.zeros(n, np.int32), np.zeros(n, np.int32))
        rec[0][wi] = clock[wi]
        rec[1][wi] = (self._op_id(op) << 5) | lane

    # -- the async proxy ----------------------------------------------------------------------
    def proxy_fence(self, wi: int) -> None:
        """Warp ``wi`` executed fence.proxy.async (covering shared memory): its generic writes so
        far are ordered before async-proxy accesses that are ordered after this point."""
        if not self._unfenced[wi]:
            return
        m = (self.f_epoch == 0) & (self.w_warp == wi) & (self.w_epoch > 0)
        self.f_epoch[m] = self.vc[wi, wi]
        self._unfenced[wi] = False

    def async_written(self, idx: np.ndarray) -> None:
        """The bytes at ``idx`` were written by the async proxy (TMA, bulk copy)."""
        self.f_epoch[idx] = -1

    def async_read(self, warp, starts: np.ndarray, k: int, lanes: np.ndarray, op) -> None:
        """The async proxy reads ``k`` bytes at each of ``starts`` for ``warp`` executing ``op``
        (TMA store source, wgmma operands): a generic write there needs a fence.proxy.async by
        its writer that is ordered before this read."""
        idx = starts if k == 1 else (starts[:, None] + _span(k)).ravel()
        fe = self.f_epoch[idx]
        gw = self.w_warp[idx]
        bad = (fe >= 0) & (self.w_epoch[idx] > 0) & ((fe == 0) | (fe > self.vc[warp.index][gw]))
        if not bad.any():
            return
        j = int(np.argmax(bad))
        loc = int(self.w_loc[idx[j]])
        same = set(idx[bad & (self.w_loc[idx] == loc)].tolist())
        lo = hi = int(idx[j])
        while hi - lo < 16 and hi in same:       # the run of bytes from that store, <= 16
            hi += 1
        u, first_op = int(gw[j]), self._ops[loc >> 5]
        lane_b = lanes if k == 1 else np.repeat(lanes, k)
        first = (WRITE, u, loc & 31, (lo, hi), where(first_op))
        second = ("async-proxy read", warp.index, int(lane_b[j]), (lo, hi), where(op))
        x, y, z = self.cta.ctaid
        lines = [f"shared memory written by an ordinary store is read by the async proxy without "
                 f"fence.proxy.async, in block ({x},{y},{z}) on bytes [{lo:#x}, {hi:#x}):"]
        for what, wi, ln, _, at in (first, second):
            tx, ty, tz = self.cta.warps[wi].thread(ln)
            lines.append(f"  {what} by warp {wi}, lane {ln} (thread ({tx},{ty},{tz})) at {at}")
        fenced = int(fe[j])
        lines.append(
            ("The writer's fence.proxy.async comes after the barrier that orders the write "
             "before the read" if fenced else "The writing thread executes no fence.proxy.async "
             "between them")
            + f": TMA and wgmma ({getattr(op, 'name', 'the read')}) read shared memory through "
            "the async proxy, which may not see generic-proxy (st.shared) writes without it. "
            "Fix: call ws.arch.fence_proxy_async() in the writing threads after their stores "
            "and before the barrier (or mbarrier arrive) that hands the data over.")
        raise RaceError("\n".join(lines), where=where(op), accesses=(first, second))


_COPIES = frozenset({"tma.load", "tma.bulk_copy"})
_MBAR_INIT = frozenset({"mbarrier.init", "mbarrier.inval"})


def fix_text(first_op, second_op, earlier: str, kind: str) -> str:
    """The fix text of a race report, by the ops involved."""
    names = {getattr(first_op, "name", None), getattr(second_op, "name", None)}
    if earlier == WRITE and kind == WRITE and names <= _COPIES and None not in names:
        return ("Both are TMA/bulk copies into the same bytes: several threads issue the copy. "
                "Fix: issue the copy from one thread (if ws.arch.elect_one(): ...), and announce "
                "its bytes once (arrive_expect_tx).")
    if names & _MBAR_INIT:
        return ("An mbarrier is used by another warp without its init (or inval) ordered "
                "before that use. Fix: after bar.init(count), call ws.arch.fence_mbarrier_init() "
                "and ws.arch.sync_threads() before any other warp arrives on or waits for it "
                "(and invalidate only after every warp is done with it).")
    return ("Fix: put ws.arch.sync_threads() (bar.sync) between them, or hand the data over "
            "through an mbarrier (arrive after the write, wait on that phase before the read).")
