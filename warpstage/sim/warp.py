"""Per-CTA and per-warp state of a simulated launch.

A ``Warp`` carries the active mask (numpy bool[32]) and its popcount ``nactive``, the lanes that
exist (``nlanes``: the last warp of a CTA whose size is not a multiple of 32 is partial), the
special registers, a clock, and the count of ops it executed. A ``CTA`` holds what its warps
share: shared memory, barrier state, the launch geometry, the printf log, and the race detector's
state when it is on.
"""
from __future__ import annotations

import functools
import time
from typing import Optional

import numpy as np

from ..errors import SimulatorError
from .dtypes import LANES, lanes
from .memory import Memory, SharedMemory

__all__ = ["Warp", "CTA", "LANE_IDS"]

LANE_IDS = np.arange(LANES, dtype=np.int32)
LANE_IDS.flags.writeable = False


@functools.lru_cache(maxsize=4096)
def _tid(block: tuple, warp: int) -> tuple:
    bx, by, _ = block
    linear = np.arange(warp * LANES, (warp + 1) * LANES, dtype=np.int64)
    out = tuple(v.astype(np.int32) for v in (linear % bx, (linear // bx) % by, linear // (bx * by)))
    for v in out:
        v.flags.writeable = False
    return out


class CTA:
    """One thread block: ``ctaid`` (x, y, z) in a ``grid`` of ``block``-shaped CTAs."""

    def __init__(self, ctaid: tuple, grid: tuple, block: tuple, memory: Memory,
                 smem: SharedMemory, printed: list, echo):
        self.ctaid = ctaid
        self.grid = grid
        self.block = block
        self.memory = memory
        self.smem = smem
        self.printed = printed
        self.echo = echo
        self.nthreads = block[0] * block[1] * block[2]
        self.nwarps = -(-self.nthreads // LANES)
        self.warps: list[Warp] = []
        self.barriers: dict = {}   # barrier id -> scheduler.BarrierState
        self.ext: dict = {}        # state of later op families (mbarriers, ...), by family name
        self.races = None          # races.RaceState when the race detector is on
        self.current: Optional[Warp] = None   # the warp the scheduler resumed last
        self.max_loop = 0          # iterations a while loop may run in one warp (0: unbounded)
        self.cluster = None        # cluster.Cluster (None: a cluster of one, made on first use)
        self.cluster_rank = 0      # %cluster_ctarank
        self.exited = False        # all warps done (peers may no longer reach its smem)


class Warp:
    """One warp of a CTA. ``mask``/``nactive`` change as control flow diverges; handlers must
    change them only through ``set_mask`` and restore them before returning."""

    __slots__ = ("index", "cta", "mask", "nactive", "nlanes", "ops", "clock", "wait",
                 "done", "coroutine", "_sregs", "last_print")

    def __init__(self, index: int, cta: CTA):
        self.index = index
        self.cta = cta
        self.nlanes = min(LANES, cta.nthreads - index * LANES)
        self.mask = LANE_IDS < self.nlanes
        self.nactive = self.nlanes
        self.ops = 0
        self.clock = 0
        self.wait = None
        self.done = False
        self.coroutine = None
        self._sregs: dict = {}
        self.last_print = None     # {lane: text} of the warp's last gpu.printf (gpu.trap quotes it)

    def set_mask(self, mask: np.ndarray, nactive: int) -> None:
        self.mask = mask
        self.nactive = nactive

    # -- special registers ----------------------------------------------------------------------
    def sreg(self, name: str) -> np.ndarray:
        """The value of PTX special register ``%name`` in every lane."""
        if name in ("clock", "clock64"):
            self.clock = max(self.clock + 1, self.ops)
            return np.full(LANES, self.clock, np.int64)
        if name == "globaltimer":
            return np.full(LANES, time.time_ns(), np.int64)
        arr = self._sregs.get(name)
        if arr is None:
            arr = self._sregs[name] = self._compute_sreg(name)
        return arr

    def _compute_sreg(self, name: str) -> np.ndarray:
        cta = self.cta
        base, _, dim = name.partition(".")
        axis = "xyz".find(dim) if dim else -1
        if base == "tid":
            return self.tid()[axis]
        if base == "ctaid":
            return lanes(cta.ctaid[axis], np.int32)
        if base == "ntid":
            return lanes(cta.block[axis], np.int32)
        if base == "nctaid":
            return lanes(cta.grid[axis], np.int32)
        if base in ("cluster", "clusterid", "nclusterid"):
            from .cluster import cluster_sreg
            return lanes(cluster_sreg(cta, name), np.int32)
        if name == "laneid":
            return LANE_IDS
        if name == "warpid":
            return lanes(self.index, np.int32)
        if name == "smid":
            return lanes(0, np.int32)
        raise SimulatorError(f"special register %{name} is not simulated")

    def tid(self) -> tuple:
        """(tid.x, tid.y, tid.z) int32 vectors; x varies fastest over the linear thread id."""
        return _tid(self.cta.block, self.index)

    # -- messages -------------------------------------------------------------------------------
    def thread(self, lane: int) -> tuple:
        bx, by, _ = self.cta.block
        linear = self.index * LANES + lane
        return (linear % bx, (linear // bx) % by, linear // (bx * by))

    def describe_lane(self, lane: int) -> str:
        x, y, z = self.thread(lane)
        bx, by, bz = self.cta.ctaid
        return f"thread ({x},{y},{z}) of block ({bx},{by},{bz}) (warp {self.index}, lane {lane})"

    def first_active_lane(self) -> Optional[int]:
        lanes = np.flatnonzero(self.mask)
        return int(lanes[0]) if lanes.size else None
