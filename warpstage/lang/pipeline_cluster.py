"""A TMA pipeline across a thread-block cluster whose stages are filled by multicast
(``ws.pipeline.PipelineTmaMulticast``).

In a cluster of ``cluster_shape = (cx, cy)`` CTAs (rank = x + y * cx, whatever the launch's
cluster dimensions: ``cx * cy`` CTAs), an operand shared by the
CTAs of one row (same y) is loaded in parts, each CTA loading one part and multicasting it to
the whole row (``mask_row()``); an operand shared by a column (same x) likewise
(``mask_col()``). A CTA's stage is then written by every CTA of its row and its column, so:

- ``full[s]`` of each CTA expects one arrival (its own producer's ``arrive.expect_tx``) and the
  **whole** stage's bytes, its own copies' and its peers' multicasts alike;
- ``empty[s]`` of each CTA counts the releases of the consumers of every CTA its producer
  writes into: a consumer warp releases a stage by one arrival on ``empty[s]`` of each CTA of
  its row and its column (``cx + cy - 1`` CTAs, itself included; PTX ``mapa`` +
  ``mbarrier.arrive.shared::cluster``), so ``empty[s]`` is initialized for
  ``consumer_warps * (cx + cy - 1)`` arrivals and a producer reuses stage s only after every
  CTA it multicasts into has finished reading it.

This is the arrangement of CUTLASS's ``PipelineTmaAsync`` for clusters
(``include/cutlass/pipeline/sm90_pipeline.hpp``: the empty barrier's arrival count
``(cluster_x + cluster_y - 1) * consumer warpgroups``, a consumer's release to each block of
its row and column), written anew with one arrival per consumer *warp* (its elected lane, after
``bar.warp.sync``) rather than per warpgroup. The mbarriers are initialized, fenced
(``fence.mbarrier_init.release.cluster``), and then the whole cluster meets at a cluster barrier
(``barrier.cluster.arrive.release`` / ``wait.acquire``), so no peer arrives on or multicasts
into an mbarrier before its init. With ``cluster_shape=(1, 1)`` it behaves as
``PipelineTmaAsync`` with per-warp releases.
"""
from __future__ import annotations

from .cluster import cluster_ctarank, cluster_sync, mbarrier_arrive_cluster
from .mbarrier import MAX_COUNT
from .operands import operand_error, static_int
from .pipeline import PipelineTmaAsync, _count, _if_then, _split_barriers, _stages
from .warp import elect_one, sync_warp

__all__ = ["PipelineTmaMulticast"]


def _cluster_shape(shape, what: str) -> tuple:
    if not (isinstance(shape, tuple) and len(shape) == 2):
        raise operand_error(f"{what}'s cluster_shape", shape, "a static (cx, cy) pair of ints",
                            "pass the cluster's CTAs along x and y, e.g. (2, 1)")
    cx, cy = (static_int(c, f"{what}'s cluster_shape", range(1, 17), "ints in [1, 16]",
                         "pass e.g. (2, 1) or (1, 2)") for c in shape)
    if cx * cy > 16:
        raise operand_error(f"{what}'s cluster_shape", shape, "at most 16 CTAs",
                            "use a cluster of at most 8 CTAs (the portable limit)")
    return cx, cy


class PipelineTmaMulticast(PipelineTmaAsync):
    """A ``PipelineTmaAsync`` over a cluster whose stages are filled by TMA multicast (see the
    module docstring). ``consumer_count`` here is the arrivals one ``empty[s]`` phase expects:
    ``consumer_warps * (cx + cy - 1)``."""

    def __init__(self, full, empty, num_stages, producer_count, consumer_count,
                 transaction_bytes, cluster_shape=(1, 1)):
        super().__init__(full, empty, num_stages, producer_count, consumer_count,
                         transaction_bytes)
        self.cluster_shape = cluster_shape

    def _config(self) -> tuple:
        return super()._config() + (self.cluster_shape,)

    @classmethod
    def create(cls, barriers, num_stages: int, consumer_warps: int, transaction_bytes: int,
               cluster_shape=(1, 1), producer_count: int = 1):
        """Initialize the mbarriers of this CTA and meet the cluster; returns the pipeline.
        Call it once from every thread of every CTA of the cluster, before the role branch.

        ``consumer_warps``: static count of the warps of one CTA that call
        ``consumer_release`` for each stage. ``transaction_bytes``: the bytes that land in one
        CTA's stage (its own loads plus what its peers multicast into it). ``cluster_shape``:
        static (cx, cy). ``producer_count``: producer warps calling ``producer_acquire``.
        Raises OperandError for a bad storage, count or shape (at trace time)."""
        what = f"ws.pipeline.{cls.__name__}.create()"
        n = _stages(num_stages, what)
        full, empty = _split_barriers(barriers, n, what)
        shape = _cluster_shape(cluster_shape, what)
        tx = static_int(transaction_bytes, f"{what}'s transaction_bytes",
                        range(1, MAX_COUNT + 1), f"a static byte count in [1, {MAX_COUNT}]",
                        "pass the bytes that land in one CTA's stage")
        warps = _count(consumer_warps, what, "consumer_warps")
        pipe = cls(full, empty, n, _count(producer_count, what, "producer_count"),
                   warps * (shape[0] + shape[1] - 1), tx, shape)
        pipe._initialize()
        return pipe

    def _meet(self) -> None:
        """After the init: the whole cluster meets (peers arrive on and multicast into these
        mbarriers)."""
        cluster_sync()

    # -- the cluster ---------------------------------------------------------------------------
    def _coords(self):
        """(x, y) of this CTA in ``cluster_shape`` from its rank (x fastest), whatever the
        launch's cluster dimensions (e.g. a (2, 1, 1) launch for a (1, 2) shape)."""
        cx, cy = self.cluster_shape
        if cx * cy == 1:
            return 0, 0
        rank = cluster_ctarank()
        return rank % cx, rank // cx

    def _rank(self, x, y):
        return x + y * self.cluster_shape[0]

    def mask_row(self):
        """The multicast mask of this CTA's row (the CTAs with its y): an Int32 (an int in a
        cluster of one) with bit ``x' + y * cx`` set for each x'."""
        cx, _ = self.cluster_shape
        _, y = self._coords()
        return ((1 << cx) - 1) << (y * cx)

    def mask_col(self):
        """The multicast mask of this CTA's column (the CTAs with its x): bit ``x + y' * cx``
        for each y'."""
        cx, cy = self.cluster_shape
        x, _ = self._coords()
        col = sum(1 << (k * cx) for k in range(cy))
        return col << x

    def _targets(self) -> list:
        """Ranks of this CTA's row and column (itself once): whose stages its consumers free."""
        cx, cy = self.cluster_shape
        x, y = self._coords()
        ranks = [self._rank(k, y) for k in range(cx)]
        ranks += [self._rank(x, (y + 1 + k) % cy) for k in range(cy - 1)]
        return ranks

    # -- consumer ------------------------------------------------------------------------------
    def consumer_release(self, state) -> None:
        """Hand ``state``'s stage back to every producer that writes into it: the calling warp
        synchronizes (``bar.warp.sync``, ordering its lanes' reads before the arrival), then its
        elected lane arrives once on ``empty[index]`` of each CTA of this CTA's row and column
        (PTX ``mapa.shared::cluster`` + ``mbarrier.arrive.shared::cluster``).
        Call it from each of the ``consumer_warps`` warps, converged, once per stage."""
        state = self._check_state(state, "consumer_release")
        bar = self.empty[state.index]
        targets = self._targets()
        sync_warp()

        def arrive_all():
            for rank in targets:
                mbarrier_arrive_cluster(bar, rank)
        _if_then(elect_one(), arrive_all)
