"""What a launch may ask for, checked before the driver call: grid and block dimensions, threads
per CTA, dynamic shared memory and cluster shapes against a device's and a kernel's limits
(pure functions, no driver call but in :func:`launch_limits`). Used by runtime/launcher.py."""
from __future__ import annotations

from typing import NamedTuple, Tuple

from ..errors import LaunchError
from . import driver

__all__ = ["LaunchLimits", "normalize_dims", "check_launch_dims", "check_cluster_dims",
           "launch_limits"]

Dim3 = Tuple[int, int, int]


class LaunchLimits(NamedTuple):
    """What a launch may ask for. Threads per CTA, CTAs per grid dimension, bytes of shared
    memory. ``kernel_max_threads``/``num_regs`` describe one kernel (0 when unknown)."""

    max_threads_per_block: int
    max_block_dims: Dim3
    max_grid_dims: Dim3
    max_smem_per_block_optin: int
    kernel_max_threads: int = 0
    num_regs: int = 0


def normalize_dims(dims, what: str) -> Dim3:
    """``dims`` (an int or a sequence of 1-3 ints) as a 3-tuple padded with 1s.

    ``what`` ('grid', 'block' or 'cluster') names it in the ``LaunchError`` raised for anything
    else.
    """
    if isinstance(dims, int) and not isinstance(dims, bool):
        return (dims, 1, 1)
    if isinstance(dims, (tuple, list)) and 1 <= len(dims) <= 3 and all(
            isinstance(d, int) and not isinstance(d, bool) for d in dims):
        return tuple(dims) + (1,) * (3 - len(dims))
    raise LaunchError(f"{what} must be an int or a tuple of 1 to 3 ints (x, y, z); got {dims!r}. "
                      f"Fix: kernel[(grid_x, grid_y), (threads, 1, 1)](...)")


_AXES = "xyz"


def check_launch_dims(grid: Dim3, block: Dim3, limits: LaunchLimits, smem_bytes: int = 0) -> None:
    """Raise ``LaunchError`` unless ``grid`` (CTAs), ``block`` (threads) and ``smem_bytes``
    (dynamic shared memory, bytes) fit ``limits``. Pure: no driver call."""
    for what, dims in (("grid", grid), ("block", block)):
        for axis, d in zip(_AXES, dims):
            if d < 1:
                raise LaunchError(f"{what} {dims} has {axis} = {d}; every dimension must be at "
                                  f"least 1. Fix: skip the launch when there is no work.")
    for axis, d, m in zip(_AXES, grid, limits.max_grid_dims):
        if d > m:
            raise LaunchError(f"grid {grid} has {d} CTAs along {axis}; the device allows at most "
                              f"{m}. Fix: put the large dimension on x (up to "
                              f"{limits.max_grid_dims[0]}) or loop inside the kernel.")
    threads = block[0] * block[1] * block[2]
    if threads > limits.max_threads_per_block:
        raise LaunchError(f"block {block} has {threads} threads; the device allows at most "
                          f"{limits.max_threads_per_block} per block")
    for axis, d, m in zip(_AXES, block, limits.max_block_dims):
        if d > m:
            raise LaunchError(f"block {block} has {d} threads along {axis}; the device allows "
                              f"at most {m} along {axis}")
    if limits.kernel_max_threads and threads > limits.kernel_max_threads:
        regs = f" (it uses {limits.num_regs} registers per thread)" if limits.num_regs else ""
        raise LaunchError(f"block {block} has {threads} threads; this kernel can run at most "
                          f"{limits.kernel_max_threads} per block{regs}. Fix: launch fewer "
                          f"threads, or lower register use.")
    if smem_bytes < 0 or smem_bytes > limits.max_smem_per_block_optin:
        raise LaunchError(f"the launch asks for {smem_bytes} bytes of dynamic shared memory; the "
                          f"device allows 0 to {limits.max_smem_per_block_optin} bytes per CTA")


def check_cluster_dims(grid: Dim3, cluster: Dim3, max_cluster_size: int = 8) -> None:
    """Raise ``LaunchError`` unless every grid dimension is a multiple of the cluster's and the
    cluster has at most ``max_cluster_size`` CTAs (8 is the portable limit on sm_90)."""
    for axis, g, c in zip(_AXES, grid, cluster):
        if c < 1 or g % c:
            raise LaunchError(f"grid {grid} is not a whole number of clusters {cluster} along "
                              f"{axis}; each grid dimension must be a multiple of the cluster's")
    size = cluster[0] * cluster[1] * cluster[2]
    if size > max_cluster_size:
        raise LaunchError(f"cluster {cluster} has {size} CTAs; at most {max_cluster_size} are "
                          f"allowed (the portable cluster size on sm_90)")


def launch_limits(function=None, device: int = 0) -> LaunchLimits:
    """The limits of device ``device``, and of ``function`` (loaded there) when given
    (``cuFuncGetAttribute``)."""
    from .target import device_properties

    p = device_properties(device)
    kernel_max = regs = 0
    if function is not None:
        attrs = driver.func_attributes(function)
        kernel_max, regs = attrs.max_threads_per_block, attrs.num_regs
    return LaunchLimits(p.max_threads_per_block, p.max_block_dims, p.max_grid_dims,
                        p.max_smem_per_block_optin, kernel_max, regs)
