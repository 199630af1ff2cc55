"""Thread-block clusters: the cluster barrier, shared::cluster addresses and remote mbarrier
arrivals (PTX ISA 9.7.13.3 "barrier.cluster", 9.7.9.22 "mapa", 9.7.13.15.13 "mbarrier.arrive"
with ``.shared::cluster``).

A launch with ``cluster=(cx, cy, cz)`` groups its CTAs into clusters of that shape; the CTAs of
one cluster are started together (``sim/run.py``) and share a ``Cluster``: its CTAs by rank
(``%cluster_ctarank`` = x + y * cx + z * cx * cy of ``%cluster_ctaid``) and the cluster
barrier's state. A launch without ``cluster=`` runs every CTA as a cluster of one, as the GPU
does.

shared::cluster addresses. ``cluster.map_shared(p, rank)`` gives ``(rank + 1) * WINDOW +
offset`` (``offset``: p's byte offset in its CTA's shared memory); an address below ``WINDOW``
is the executing CTA's own (a CTA's shared::cta address is a valid shared::cluster address of
itself, as on the GPU). The encoding is the simulator's; kernels only pass these values on.

The cluster barrier. Each executing lane is one thread. ``barrier.cluster.arrive`` records the
thread's arrival in the current phase; ``barrier.cluster.wait`` blocks until every thread of
the cluster arrived at the phase of its own last arrival, threads that exited counting as
arrived (PTX: "all non-exited threads"). Errors: a thread arriving twice without a wait between,
a wait by a thread that did not arrive; a remote access (an arrival, a multicast TMA write) to a
CTA of the cluster that has exited (its shared memory may already belong to another CTA: keep
every CTA alive with a cluster barrier before it exits). The race detector does not follow
accesses across CTAs.
"""
from __future__ import annotations

import numpy as np

from ..errors import SimulatorError
from ..ir.core import Operation
from .compiler import where
from .dtypes import LANES
from .ops_mbarrier import arrive, lookup, table
from .registry import handler
from .scheduler import Wait

__all__ = ["Cluster", "cluster_of", "WINDOW", "resolve", "peer", "cluster_sreg"]

WINDOW = 1 << 24
"""Size of one CTA's slot in the simulator's shared::cluster address encoding."""


class Cluster:
    """The CTAs of one cluster by rank (``shape``: CTAs per dimension, x fastest) and the state
    of its barrier: ``phase`` (completed phases) and, per (rank, warp), the phase of each lane's
    last arrival (-1: none yet)."""

    def __init__(self, shape: tuple, ctas: list):
        self.shape = shape
        self.ctas = ctas
        self.phase = 0
        self.arrivals: dict = {}
        self.first_op = None
        for rank, cta in enumerate(ctas):
            cta.cluster = self
            cta.cluster_rank = rank

    def complete(self) -> bool:
        """Advance the barrier when every thread arrived at the current phase (or exited)."""
        for rank, cta in enumerate(self.ctas):
            for w in cta.warps:
                if w.done:
                    continue
                last = self.arrivals.get((rank, w.index))
                if last is None or (last[:w.nlanes] != self.phase).any():
                    return False
        self.phase += 1
        return True

    def arrived_threads(self) -> tuple:
        done = total = 0
        for rank, cta in enumerate(self.ctas):
            for w in cta.warps:
                total += w.nlanes
                last = self.arrivals.get((rank, w.index))
                if w.done:
                    done += w.nlanes
                elif last is not None:
                    done += int((last[:w.nlanes] == self.phase).sum())
        return done, total


def cluster_of(cta) -> Cluster:
    """The cluster of ``cta`` (a cluster of one when the launch has none)."""
    c = cta.cluster
    if c is None:
        c = Cluster((1, 1, 1), [cta])
    return c


def cluster_sreg(cta, name: str) -> int:
    """The value of the cluster special register ``%name`` (LLVM's spelling, e.g.
    ``cluster.ctarank``, ``clusterid.x``) in ``cta``."""
    shape = cta.cluster.shape if cta.cluster is not None else (1, 1, 1)
    base, _, dim = name.rpartition(".")
    if name == "cluster.ctarank":
        return cta.cluster_rank if cta.cluster is not None else 0
    if name == "cluster.nctarank":
        return shape[0] * shape[1] * shape[2]
    axis = "xyz".index(dim)
    if base == "cluster.ctaid":
        return cta.ctaid[axis] % shape[axis]
    if base == "cluster.nctaid":
        return shape[axis]
    if base == "clusterid":
        return cta.ctaid[axis] // shape[axis]
    if base == "nclusterid":
        return cta.grid[axis] // shape[axis]
    raise SimulatorError(f"special register %{name} is not simulated")


def peer(op: Operation, w, rank: int, what: str):
    """The CTA of cluster rank ``rank`` for ``op`` executed by ``w``; SimulatorError for a rank
    outside the cluster or a CTA that exited."""
    c = cluster_of(w.cta)
    if not 0 <= rank < len(c.ctas):
        raise SimulatorError(
            f"{op.name} at {where(op)} (warp {w.index}): {what} names CTA rank {rank}, but the "
            f"cluster has {len(c.ctas)} CTA(s) (shape {c.shape}); launch with cluster=... or "
            "use ranks below ws.arch.cluster_size()", where=where(op))
    cta = c.ctas[rank]
    if cta.exited or all(w.done for w in cta.warps):
        raise SimulatorError(
            f"{op.name} at {where(op)} (warp {w.index}): {what} reaches CTA rank {rank} of the "
            "cluster, which has already exited (its shared memory may belong to another CTA "
            "now). Keep each CTA alive until its peers are done with it: "
            "ws.arch.cluster_arrive(); ws.arch.cluster_wait() before the kernel returns.",
            where=where(op))
    return cta


def resolve(op: Operation, w, addr: int, what: str) -> tuple:
    """(CTA, shared offset) of the shared::cluster address ``addr``."""
    if addr < WINDOW:
        return w.cta, addr
    return peer(op, w, addr // WINDOW - 1, what), addr % WINDOW


# -- handlers -----------------------------------------------------------------------------------
@handler("cluster.map_shared")
def _map_shared(op: Operation, cx):
    p_slot, rank_slot = cx.slots(op.operands)
    r = cx.slot(op.result)

    def map_shared(s, w):
        c = cluster_of(w.cta)
        ranks = s[rank_slot].astype(np.int64)
        bad = w.mask & ((ranks < 0) | (ranks >= len(c.ctas)))
        if bad.any():
            lane = int(np.argmax(bad))
            raise SimulatorError(
                f"{op.name} at {where(op)} ({w.describe_lane(lane)}): CTA rank {int(ranks[lane])}"
                f" is outside the cluster of {len(c.ctas)} CTA(s) (shape {c.shape})",
                where=where(op))
        offset = s[p_slot].astype(np.int64) % WINDOW
        s[r] = ((np.clip(ranks, 0, None) + 1) * WINDOW + offset).astype(np.uint64)
    return map_shared


@handler("mbarrier.arrive_cluster")
def _arrive_cluster(op: Operation, cx):
    slot = cx.slot(op.operands[0])

    def arrive_cluster(s, w):
        for lane in np.flatnonzero(w.mask).tolist():
            cta, offset = resolve(op, w, int(s[slot][lane]), "the mbarrier address")
            tab = table(cta)
            bar = lookup(op, w, tab, offset) if cta is w.cta else _remote_bar(op, w, cta, offset)
            arrive(op, w, tab, bar, 1, local=cta is w.cta)
    return arrive_cluster


def _remote_bar(op, w, cta, offset):
    bar = table(cta).bars.get(offset)
    if bar is None:
        raise SimulatorError(
            f"{op.name} at {where(op)} (warp {w.index}): no mbarrier at shared offset "
            f"{offset:#x} of CTA rank {cta.cluster_rank}: it is not initialized there yet. "
            "Initialize the mbarriers, then ws.arch.cluster_arrive(); ws.arch.cluster_wait() "
            "before any CTA reaches a peer's mbarrier.", where=where(op))
    return bar


@handler("cluster.arrive")
def _arrive(op: Operation, cx):
    def cluster_arrive(s, w):
        c = cluster_of(w.cta)
        key = (w.cta.cluster_rank, w.index)
        last = c.arrivals.get(key)
        if last is None:
            last = np.full(LANES, -1, np.int64)
        twice = w.mask & (last == c.phase)
        if twice.any():
            lane = int(np.argmax(twice))
            raise SimulatorError(
                f"barrier.cluster.arrive at {where(op)} ({w.describe_lane(lane)}): the thread "
                f"arrives a second time in phase {c.phase} without a barrier.cluster.wait "
                "between; pair each ws.arch.cluster_arrive() with a ws.arch.cluster_wait()",
                where=where(op))
        last = last.copy()
        last[w.mask] = c.phase
        c.arrivals[key] = last
        c.complete()
    return cluster_arrive


class ClusterWait(Wait):
    """A warp in barrier.cluster.wait until the cluster barrier passes ``phase``."""

    hint = ("Every thread of every CTA of the cluster must reach ws.arch.cluster_arrive() "
            "(exited threads count as arrived); a CTA waiting on an mbarrier that a peer "
            "arrives on only after its own cluster wait deadlocks.")

    def __init__(self, op: Operation, c: Cluster, phase: int):
        self.op, self.c, self.phase = op, c, phase

    def ready(self, warp) -> bool:
        return self.c.phase > self.phase or (self.c.complete() and self.c.phase > self.phase)

    def describe(self) -> str:
        done, total = self.c.arrived_threads()
        return (f"barrier.cluster.wait at {where(self.op)}: {done} of {total} threads of the "
                f"cluster (shape {self.c.shape}) arrived at phase {self.c.phase}")


@handler("cluster.wait", blocking=True)
def _wait(op: Operation, cx):
    def cluster_wait(s, w):
        c = cluster_of(w.cta)
        last = c.arrivals.get((w.cta.cluster_rank, w.index))
        mine = last[w.mask] if last is not None else np.array([-1])
        if (mine < 0).any():
            raise SimulatorError(
                f"barrier.cluster.wait at {where(op)} (warp {w.index} of block "
                f"{w.cta.ctaid}): a thread waits without having arrived; call "
                "ws.arch.cluster_arrive() first", where=where(op))
        phase = int(mine.max())
        if c.phase <= phase:
            yield ClusterWait(op, c, phase)
    return cluster_wait
