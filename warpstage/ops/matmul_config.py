"""The per-shape configuration of ``ws.ops.matmul`` / ``ws.ops.scaled_matmul``: tile rows,
tile width, swizzle band and K splits (``choose_config``, by ``matmul_plan.plan``), and the
cached policies (``policy_for``; ``make_policy`` puts an epilogue into one). Measured figures
behind each choice: docs/matmul.md, benchmarks/RESULTS.md."""
from __future__ import annotations

import functools

from ..errors import ArgumentError
from .matmul_kernel import TILE_M, Matmul, max_stages
from . import matmul_plan
from .matmul_plan import (MAX_SPLITS, STREAM_K_GAIN, estimate_us, even_splits, plan,
                          plan_stream_k, stream_k_tiles)

__all__ = ["check_arguments", "check_splits", "choose_config", "choose_stream_k", "explain",
           "policy_for", "make_policy", "GROUP_SMALL", "GROUP_LARGE"]

GROUP_SMALL, GROUP_LARGE = 4, 8
"""The swizzle band of the tile order: 4 up to ``4 x SMs`` output tiles, 8 above. Measured on
the H200 (2026-12-01 20:45 UTC, RESULTS.md, kernel launched directly, 128 x 256 tiles, 4
stages): 4096^3 (512 tiles) group 4: 755 TFLOP/s, group 8: 742, 16: 746; 8192^3 (2048 tiles)
group 8: 728, 4: 672, 16: 688."""


def check_arguments(op: str, tile_n, num_stages, raster, group, schedule, splits, tile_m,
                    cluster) -> None:
    """The policy arguments of ``ws.ops.<op>`` checked before anything plans with them: each
    given field (None: chosen per shape) by ``Matmul.check_fields`` (ValueError naming
    ``ws.ops.Matmul``'s field), ``splits`` by ``check_splits`` (ArgumentError). A value of the
    wrong type ("128" for a tile width, 2 for a cluster) is reported as such, not as the
    TypeError of the arithmetic that would first meet it."""
    given = {name: v for name, v in (("tile_n", tile_n), ("num_stages", num_stages),
                                     ("group", group), ("tile_m", tile_m)) if v is not None}
    Matmul.check_fields(schedule=schedule, raster=raster, cluster=cluster, **given)
    check_splits(splits, op)


def check_splits(splits, op: str = "matmul") -> None:
    """ArgumentError unless ``splits`` is None or an int >= 1 (K ranges)."""
    if splits is not None and (isinstance(splits, bool) or not isinstance(splits, int)
                               or splits < 1):
        raise ArgumentError(f"ws.ops.{op}: splits={splits!r}; expected an int >= 1 (K "
                            "ranges) or None (chosen per shape). Fix: splits=4, or leave it out")


@functools.lru_cache(maxsize=256)
def choose_config(m: int, n: int, k: int, batches: int, sms: int, schedule: str = "cooperative",
                  tile_n=None, group=None, splits=None, k_step: int = 64,
                  tile_m=None) -> tuple:
    """(tile_m, tile_n, group, splits) for a (batches x) M x N x K problem on ``sms`` SMs; the
    given ones are kept, the others come from ``matmul_plan.plan`` (least estimated device
    time over 128 / 64 rows x 256 / 192 / 128 columns x K splits; the ping-pong schedule: 128 rows,
    tile_n 128 or 64, no split unless given) and, for the group, ``GROUP_SMALL`` /
    ``GROUP_LARGE`` by the tile count. A given ``splits`` is lowered to at most ``MAX_SPLITS``
    non-empty K ranges of ``k_step``-element steps (the policy's tile_k: 64, 128 for fp8).
    Raises ArgumentError for a ``splits`` that is not an int >= 1 (a bad tile_m or tile_n is
    the policy's ValueError)."""
    if schedule == "pingpong":
        widths, rows, splits = (128, 64), (TILE_M,), 1 if splits is None else splits
    else:
        widths, rows = (256, 192, 128), (TILE_M, 64)
    check_splits(splits)
    if tile_n is None or splits is None or tile_m is None:
        tm, tn, sp = plan(m, n, k, batches, sms, widths if tile_n is None else (tile_n,),
                          rows if tile_m is None else (tile_m,),
                          split=splits is None, k_step=k_step)
        tile_m = tm if tile_m is None else tile_m
        tile_n = tn if tile_n is None else tile_n
        splits = sp if splits is None else splits
    splits = even_splits(-(-k // k_step), min(splits, MAX_SPLITS))     # no empty K range
    if group is None:
        tiles = -(-m // tile_m) * -(-n // tile_n) * batches
        group = GROUP_SMALL if tiles <= 4 * sms else GROUP_LARGE
    return tile_m, tile_n, group, splits


@functools.lru_cache(maxsize=256)
def choose_stream_k(m: int, n: int, k: int, batches: int, sms: int, schedule: str = "cooperative",
                    tile_n=None, group=None, splits=None, k_step: int = 64, tile_m=None,
                    stream_k=None):
    """(tile_m, tile_n, group, sk_tiles) of a stream-K launch on ``sms`` CTAs, or None for the
    data-parallel / split-K plan of ``choose_config``. ``stream_k`` None: stream-K when
    ``matmul_plan.STREAM_K_AUTO`` is on (it is off: measured slower) and
    ``matmul_plan.plan_stream_k``'s estimate beats the plan's by more than ``STREAM_K_GAIN``
    and no tile or split is given; True: stream-K with the given tile (else the best estimated
    one) wherever the launch has a stream-K tile (``stream_k_tiles``); False: never. Only the
    cooperative schedule, unsplit; None never picks it for fp8 (``k_step`` 128: unmeasured).
    Raises ArgumentError for a ``stream_k`` other than None, True or False, and for
    ``stream_k=True`` with the ping-pong schedule or K splits."""
    if stream_k not in (None, True, False) or not isinstance(stream_k, (bool, type(None))):
        raise ArgumentError(f"ws.ops.matmul: stream_k={stream_k!r}; expected None (chosen per "
                            "shape), True or False. Fix: stream_k=True, or leave it out")
    if stream_k is True and (schedule != "cooperative" or (splits or 1) > 1):
        raise ArgumentError(f"ws.ops.matmul: stream_k=True with schedule={schedule!r}, "
                            f"splits={splits!r}; expected the cooperative schedule and no K "
                            "splits (stream-K splits K itself; ping-pong warpgroups skip each "
                            "other's stages by a fixed count). Fix: drop schedule= / splits=, "
                            "or stream_k=True")
    if stream_k is None and not matmul_plan.STREAM_K_AUTO:
        return None
    if stream_k is False or schedule != "cooperative" or (splits or 1) > 1 or (
            stream_k is None and ((tile_n, tile_m, splits) != (None, None, None)
                                  or k_step != 64)):
        return None             # (fp8, k_step 128: not chosen by itself until measured)
    best = plan_stream_k(m, n, k, batches, sms,
                         (256, 192, 128) if tile_n is None else (tile_n,),
                         (TILE_M,) if tile_m is None else (tile_m,), k_step)
    if best is None:
        return None
    t, tm, tn = best
    if stream_k is None:
        dm, dn, _, ds = choose_config(m, n, k, batches, sms, schedule, k_step=k_step)
        if t >= estimate_us(m, n, k, batches, sms, dm, dn, ds, k_step) * (1 - STREAM_K_GAIN):
            return None
    tiles = -(-m // tm) * -(-n // tn) * batches
    if group is None:
        group = GROUP_SMALL if tiles <= 4 * sms else GROUP_LARGE
    return tm, tn, group, stream_k_tiles(tiles, sms, -(-k // k_step))


def explain(m: int, n: int, k: int, batches: int = 1, sms: int = 132, k_step: int = 64) -> str:
    """What ``ws.ops.matmul`` (no policy arguments) runs for a (batches x) M x N x K problem on
    ``sms`` SMs and why: the data-parallel / split-K plan and the stream-K candidate with their
    estimated device times (``matmul_plan``), and which one is taken."""
    tm, tn, group, splits = choose_config(m, n, k, batches, sms, k_step=k_step)
    dp = estimate_us(m, n, k, batches, sms, tm, tn, splits, k_step)
    lines = [f"data-parallel: {tm} x {tn} tiles" + (f", {splits} K splits" if splits > 1
                                                     else "") + f", estimated {dp:.1f} us"]
    best = plan_stream_k(m, n, k, batches, sms, k_step=k_step)
    if best is None:
        lines.append("stream-K: no partial wave to split (or too few tiles)")
    else:
        t, sm, sn = best
        tiles = -(-m // sm) * -(-n // sn) * batches
        lines.append(f"stream-K: {sm} x {sn} tiles, {stream_k_tiles(tiles, sms, -(-k // k_step))}"
                     f" of {tiles} split over {sms} CTAs, estimated {t:.1f} us")
    sk = choose_stream_k(m, n, k, batches, sms, k_step=k_step)
    why = (" (stream-K is taken only when estimated over "
           f"{STREAM_K_GAIN:.0%} faster)" if matmul_plan.STREAM_K_AUTO else
           " (stream-K is not picked by itself: measured slower on the H200; stream_k=True "
           "runs it)")
    lines.append("chosen: " + ("stream-K" if sk is not None else "data-parallel")
                 + (why if sk is None and best else ""))
    return "\n".join(lines)


@functools.lru_cache(maxsize=128)
def policy_for(dtype, out_dtype, a_major: str, b_major: str, batched: bool, tile_n: int,
               num_stages=None, raster: str = "M", group: int = 8,
               schedule: str = "cooperative", split_k: bool = False, b_dtype=None,
               tile_m: int = TILE_M, cluster: tuple = (1, 1), stream_k: bool = False) -> Matmul:
    """The policy of one configuration without an epilogue (cached); ``num_stages`` None: the
    deepest ring that fits, at most 8."""
    return _new_policy(dtype, out_dtype, a_major, b_major, batched, tile_n, num_stages, raster,
                       group, schedule, split_k, b_dtype, tile_m, cluster, stream_k)


def make_policy(dtype, out_dtype, a_major, b_major, batched, tile_n, num_stages, raster, group,
                schedule, epilogue, split_k=False, b_dtype=None, tile_m=TILE_M,
                cluster=(1, 1), stream_k=False) -> Matmul:
    """``Matmul(...)`` with ``num_stages`` None meaning the deepest ring that fits (at most 8):
    the cached configuration of ``policy_for`` with ``epilogue`` put in (``Matmul.with_epilogue``),
    so a call with a new epilogue object costs a copy, not the policy's layouts."""
    return policy_for(dtype, out_dtype, a_major, b_major, batched, tile_n, num_stages, raster,
                      group, schedule, split_k, b_dtype, tile_m, cluster,
                      stream_k).with_epilogue(epilogue)


def _new_policy(dtype, out_dtype, a_major, b_major, batched, tile_n, num_stages, raster, group,
                schedule, split_k, b_dtype, tile_m, cluster=(1, 1), stream_k=False) -> Matmul:
    stages = num_stages
    if stages is None:
        Matmul.check_tile_m(tile_m, schedule)          # before max_stages uses it
        stages = min(8, max_stages(tile_n, out_dtype, dtype, schedule, tile_m))
    return Matmul(dtype=dtype, out_dtype=out_dtype, a_major=a_major, b_major=b_major,
                  batched=batched, tile_n=tile_n, num_stages=stages, raster=raster, group=group,
                  schedule=schedule, split_k=split_k, b_dtype=b_dtype, tile_m=tile_m,
                  cluster=cluster, stream_k=stream_k)
