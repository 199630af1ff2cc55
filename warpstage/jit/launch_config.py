"""The launch configuration object ``kern[grid, block(, smem, stream)]`` (``_Launch``): it checks
grid, block and cluster shapes (``_dim3``) and, called with the kernel's arguments, takes the full
launch path; a kernel's generated call path (jit/fast_call.py) subclasses it and leaves
through ``_full_call`` for another arity or keywords.
"""
from __future__ import annotations

import operator

from typing import TYPE_CHECKING

from ..core.target import target_for
from ..errors import LaunchError
from .launch import launch
from .tracebacks import _user_error

if TYPE_CHECKING:
    from .kernel import Kernel


_FIX = {"grid": "Fix: kern[grid, block] with grid an int (CTAs) or (x, y, z), e.g. "
               "kern[(n + 127) // 128, 128]",
        "block": "Fix: kern[grid, block] with block an int (threads per CTA) or (x, y, z), "
                 "e.g. kern[grid, 128]",
        "cluster": "Fix: cluster=(x, y, z) CTAs, e.g. cluster=(2, 1, 1)"}


def _index(v):
    """An integer that is not a Python int (``np.int64(2)``, anything with ``__index__``) as
    the int it holds; None for a bool (``np.bool_`` too) or a non-integer."""
    if isinstance(v, (bool, int)) or type(v).__name__ == "bool_":
        return None
    try:
        return operator.index(v)
    except TypeError:
        return None


def _dim3(x, what: str, limits=None) -> tuple:
    """``x`` (an int or 1 to 3 ints) as (x, y, z), each at least 1 and at most ``limits`` (per
    dimension); else LaunchError with the expected form and a Fix."""
    if isinstance(x, int) and not isinstance(x, bool):
        x = (x,)
    elif (i := _index(x)) is not None:
        x = (i,)
    if isinstance(x, (tuple, list)) and not all(type(v) is int for v in x):
        x = tuple(v if (i := _index(v)) is None else i for v in x)   # numpy ints: their value
    if not isinstance(x, (tuple, list)) or not 1 <= len(x) <= 3 or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in x):
        raise LaunchError(f"{what} must be an int or a tuple of 1 to 3 ints, got {x!r}.\n"
                          f"{_FIX[what]}")
    x = tuple(x) + (1,) * (3 - len(x))
    if any(v < 1 for v in x):
        raise LaunchError(f"{what} {x} has a dimension < 1; every dimension must be at least "
                          f"1.\n{_FIX[what]} (skip the launch when there is no work)")
    for axis, v, m in zip("xyz", x, limits or ()):
        if v > m:
            raise LaunchError(f"{what} {x} has {what}.{axis} = {v}; expected at most {m} along "
                              f"{axis} (CUDA C++ Programming Guide, compute capability "
                              f"limits).\nFix: " + ("put the large dimension on x, or loop "
                                                    "inside the kernel" if what == "grid" else
                                                    "launch fewer threads along " + axis))
    return x


def _check_block(block: tuple, target) -> None:
    threads = block[0] * block[1] * block[2]
    if threads > target.max_threads_per_cta:
        raise LaunchError(f"block {block} has {threads} threads; a CTA holds at most "
                          f"{target.max_threads_per_cta} on {target.arch}.\nFix: launch fewer "
                          "threads per CTA and more CTAs")


class _Launch:
    """``kern[grid, block(, smem, stream)]``: call it with the kernel's arguments to launch."""

    __slots__ = ("kernel", "grid", "block", "smem", "stream", "cluster", "last")

    def __init__(self, kernel: Kernel, grid, block, smem=0, stream=None, cluster=None):
        self.kernel = kernel
        self.last = (None, None)    # the generated call path's last (call signature, memo hit)
        target = target_for(kernel.options.arch)
        self.grid = _dim3(grid, "grid", target.max_grid)
        self.block = _dim3(block, "block", target.max_block)
        _check_block(self.block, target)
        if not isinstance(smem, int) or isinstance(smem, bool) or smem < 0:
            raise LaunchError(f"smem must be a non-negative int (bytes of dynamic shared "
                              f"memory), got {smem!r}.\nFix: kern[grid, block, smem_bytes]")
        self.smem = smem
        self.stream = stream
        self.cluster = None
        if cluster is not None:
            c = _dim3(cluster, "cluster")
            bad = [d for d, (g, n) in enumerate(zip(self.grid, c)) if g % n]
            if bad:
                raise LaunchError(f"grid {self.grid} is not a whole number of clusters {c} (in "
                                  f"dimension {'xyz'[bad[0]]}).\nFix: make each grid dimension "
                                  "a multiple of the cluster's")
            self.cluster = c

    def __call__(self, *args, **kwargs):
        """The full path (per-parameter binders, cache lookup, launch); a kernel's launch type
        replaces it with the generated call path (jit/fast_call.py)."""
        k = self.kernel
        try:
            values = k._bind(args, kwargs)
            return launch(k, values, self.grid, self.block, self.smem, self.stream, self.cluster)
        except Exception as e:
            if k.options.compiler_frames:
                raise
            _user_error(e)
            raise


    def prepare(self, *args, **kwargs):
        """A launch bound to ``args`` / ``kwargs`` (warpstage/jit/prepared.py; bound as a call
        binds them): ``p = kern[grid, block].prepare(*args)``; ``p()`` launches again with the
        same arguments, ``p(*new_args)`` (keywords too) rebinds arguments of the same types and
        layouts quickly (else prepares anew) and launches. Preparing compiles on a cache miss
        but does not launch. Raises what a call raises."""
        from .prepared import PreparedLaunch
        k = self.kernel
        if self.cluster is not None:
            raise LaunchError("prepare() does not take cluster launches yet; launch with "
                              "kern(*args, grid=..., block=..., cluster=...)")
        try:
            return PreparedLaunch(self, args, kwargs)
        except Exception as e:
            if k.options.compiler_frames:
                raise
            _user_error(e)
            raise


_NOT_GIVEN = object()     # the default of the generated call path's parameters


def _full_call(launch, given, more, kwargs):
    """The generated call path's exit for another arity or keywords: _Launch.__call__."""
    return _Launch.__call__(launch, *[v for v in given if v is not _NOT_GIVEN], *more, **kwargs)
