"""``run``: launch a kernel of an IR Module on the CPU simulator."""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import Optional, Sequence

import numpy as np

from ..errors import ArgumentError, LaunchError, WarpstageError
from ..ir.core import Module
from ..ir.types import PointerType, TensorMapType
from ..options import env_sim_max_loop, env_sim_races
from .compiler import compile_module
from ..core.target import target_for
from .dtypes import full
from .memory import Memory, SharedMemory
from .races import CheckedSharedMemory, RaceState
from .cluster import Cluster
from .scheduler import run_ctas
from .warp import CTA, Warp

__all__ = ["run", "RunResult", "set_races", "races_enabled", "MAX_THREADS_PER_CTA",
           "MAX_SMEM_BYTES"]

TARGET = target_for("sm_90a")
"""The architecture the simulator executes (its limits; the ops of every arch run)."""
MAX_THREADS_PER_CTA = TARGET.max_threads_per_cta
MAX_SMEM_BYTES = TARGET.max_dynamic_smem
_GRID_LIMITS = TARGET.max_grid
_BLOCK_LIMITS = TARGET.max_block


@dataclass
class RunResult:
    """What a simulated launch produced besides memory writes.

    ``printed``: the device printf outputs, one string per lane and call, in execution order;
    ``ops_executed``: IR ops executed, counted once per warp (not per lane); ``ctas``, ``warps``:
    how many ran; ``seconds``: wall time of the launch.
    """

    printed: list = field(default_factory=list)
    ops_executed: int = 0
    ctas: int = 0
    warps: int = 0
    seconds: float = 0.0

    @property
    def stdout(self) -> str:
        return "".join(self.printed)


_races: Optional[bool] = None


def set_races(enabled: Optional[bool]) -> None:
    """Turn the shared-memory race detector on (True) or off (False) for every later simulated
    launch that does not pass ``races=``; None: back to ``WARPSTAGE_SIM_RACES`` (default off).
    ``ws.set_target("sim", races=True)`` calls this."""
    global _races
    if enabled is not None and not isinstance(enabled, (bool, np.bool_)):
        raise ArgumentError(f"races must be True, False or None, got {enabled!r}")
    _races = None if enabled is None else bool(enabled)


def races_enabled() -> bool:
    """Whether launches that do not pass ``races=`` check for shared-memory races."""
    return env_sim_races() if _races is None else _races


def run(module: Module, kernel_name: str, grid: Sequence[int], block: Sequence[int],
        args: Sequence, memory: Memory, smem_bytes: int = 0, *, echo=True,
        smem_fill: int = 0, races: Optional[bool] = None, cluster=None) -> RunResult:
    """Execute kernel ``kernel_name`` of ``module`` over ``grid`` CTAs of ``block`` threads.

    ``args``: the kernel's parameter values in order: Python bool/int/float (or numpy scalars)
    for scalar parameters; for a pointer parameter an int byte address: for global pointers one
    from ``memory.register(array)``, for shared pointers an offset into the CTA's shared memory.
    ``grid``/``block``: 1 to 3 positive ints (x fastest). ``smem_bytes``: shared memory per CTA.
    ``echo``: True prints device printf output to stdout as well, False only collects it, or a
    writable text stream to print to. ``smem_fill``: the byte shared memory starts with (a GPU
    leaves it undefined; set e.g. 0xFF to catch reads of uninitialized shared memory).
    ``races``: check shared-memory accesses for races (slower); None: ``races_enabled()``.
    ``cluster``: CTAs per thread-block cluster (1 to 3 ints dividing ``grid``; None: clusters of
    one CTA); the CTAs of a cluster run together (``sim/cluster.py``).

    CTAs run one after another (a CTA is started beside the running ones when all of their warps
    spin; see ``sim/scheduler.py``); a CTA's warps run as coroutines. Raises ArgumentError /
    LaunchError for a bad launch, and a SimulatorError subclass (OutOfBoundsError,
    DeadlockError, LivelockError, BarrierError, RaceError) naming file:line when the kernel
    faults.
    """
    fn = module.get(kernel_name)
    if fn is None or not fn.is_kernel:
        kernels = ", ".join(k.name for k in module.kernels) or "none"
        raise ArgumentError(f"no kernel {kernel_name!r} in the module (kernels: {kernels})")
    grid3 = _dims("grid", grid, _GRID_LIMITS)
    block3 = _dims("block", block, _BLOCK_LIMITS)
    nthreads = block3[0] * block3[1] * block3[2]
    if nthreads > MAX_THREADS_PER_CTA:
        raise LaunchError(f"block {block3} has {nthreads} threads; at most "
                          f"{MAX_THREADS_PER_CTA} per CTA")
    maxntid = fn.attrs.get("maxntid")
    if maxntid is not None and nthreads > int(np.prod(maxntid)):
        raise LaunchError(f"block {block3} has {nthreads} threads but kernel {kernel_name} was "
                          f"compiled for at most {tuple(maxntid)} (maxntid)")
    if not 0 <= smem_bytes <= MAX_SMEM_BYTES:
        raise LaunchError(f"smem_bytes={smem_bytes}: expected 0 to {MAX_SMEM_BYTES} bytes per CTA")
    regs = _arguments(fn, args)
    if races is None:
        races = races_enabled()

    program = compile_module(module)
    kf = program.function(kernel_name)
    result = RunResult()
    max_loop = env_sim_max_loop()

    cluster3 = _cluster_dims(cluster, grid3)

    def make(ctaid):
        cta = _make_cta(kf, ctaid, grid3, block3, regs, memory, smem_bytes, smem_fill, echo,
                        result, races)
        cta.max_loop = max_loop
        return cta

    def ctas():
        if cluster3 is None:
            for z, y, x in np.ndindex(grid3[2], grid3[1], grid3[0]):
                yield make((x, y, z))
            return
        cx, cy, cz = cluster3
        for z, y, x in np.ndindex(grid3[2] // cz, grid3[1] // cy, grid3[0] // cx):
            members = [make((x * cx + i, y * cy + j, z * cz + k))
                       for k, j, i in np.ndindex(cz, cy, cx)]
            Cluster(cluster3, members)
            yield tuple(members)

    progress = _Progress(kernel_name, grid3[0] * grid3[1] * grid3[2])

    def finished(cta):
        for flush in cta.ext.pop("at_exit", ()):     # e.g. TMA stores not yet waited for land
            flush()
        result.ctas += 1
        result.warps += cta.nwarps
        result.ops_executed += sum(w.ops for w in cta.warps)
        if not result.ctas & 63:
            progress.update(result.ctas)

    start = time.perf_counter()
    try:
        with np.errstate(all="ignore"):
            run_ctas(ctas(), finished)
    except WarpstageError as e:
        raise e.with_traceback(None) from None
    finally:
        result.seconds = time.perf_counter() - start
        progress.done()
    return result


PROGRESS_AFTER = 2.0        # seconds of simulation before a progress line appears
PROGRESS_EVERY = 0.5        # seconds between updates


class _Progress:
    """A one-line progress report on stderr for long simulator runs (a huge grid), updated in
    place; only on a terminal (silent when stderr is a file or a pipe, as in CI)."""

    def __init__(self, name: str, total: int):
        self.name, self.total = name, total
        self.start = time.perf_counter()
        self.last = self.start
        self.shown = False
        stream = sys.stderr
        self.stream = stream if getattr(stream, "isatty", lambda: False)() else None

    def update(self, done: int) -> None:
        if self.stream is None:
            return
        now = time.perf_counter()
        if now - self.start < PROGRESS_AFTER or now - self.last < PROGRESS_EVERY:
            return
        self.last = now
        self.shown = True
        rate = done / (now - self.start)
        left = (self.total - done) / rate if rate else 0.0
        self.stream.write(f"\rwarpstage sim: {self.name}: {done}/{self.total} CTAs "
                          f"({100 * done / self.total:.1f}%, about {left:.0f} s left)  ")
        self.stream.flush()

    def done(self) -> None:
        if self.shown:
            self.stream.write("\r" + " " * 78 + "\r")
            self.stream.flush()


def _make_cta(kf, ctaid, grid3, block3, regs, memory, smem_bytes, smem_fill, echo, result,
              races):
    if races:
        smem = CheckedSharedMemory(smem_bytes, smem_fill)
    else:
        smem = SharedMemory(smem_bytes, smem_fill)
    cta = CTA(ctaid, grid3, block3, memory, smem, result.printed, echo)
    if races:
        smem.cta = cta
        cta.races = RaceState(cta, smem_bytes)
    for i in range(cta.nwarps):
        w = Warp(i, cta)
        frame = kf.new_frame()
        for slot, value in zip(kf.arg_slots, regs):
            frame[slot] = value
        w.coroutine = kf.run(frame, w) if kf.blocking else _coroutine(kf.run, frame, w)
        cta.warps.append(w)
    return cta


def _cluster_dims(cluster, grid3):
    """The launch's cluster shape as 3 ints (None: none), checked against ``grid3``."""
    if cluster is None:
        return None
    c = _dims("cluster", cluster, (TARGET.max_cluster_ctas,) * 3)
    if c[0] * c[1] * c[2] > TARGET.max_cluster_ctas:
        raise LaunchError(f"cluster {c} has {c[0] * c[1] * c[2]} CTAs; at most "
                          f"{TARGET.max_cluster_ctas} per cluster (portable limit)")
    if any(g % k for g, k in zip(grid3, c)):
        raise LaunchError(f"grid {grid3} is not a whole number of clusters {c}; make each grid "
                          "dimension a multiple of the cluster's")
    return c


def _coroutine(run, frame, w):
    run(frame, w)
    return
    yield


def _dims(what: str, dims, limits) -> tuple:
    if isinstance(dims, (int, np.integer)):
        dims = (dims,)
    dims = tuple(dims)
    if not 1 <= len(dims) <= 3 or not all(isinstance(d, (int, np.integer)) for d in dims):
        raise LaunchError(f"{what} must be 1 to 3 ints, got {dims!r}")
    dims = tuple(int(d) for d in dims) + (1,) * (3 - len(dims))
    for axis, d, limit in zip("xyz", dims, limits):
        if not 1 <= d <= limit:
            raise LaunchError(f"{what}.{axis} = {d}: expected 1 to {limit}")
    return dims


def _arguments(fn, args) -> list:
    names = fn.attrs.get("param_names") or [f"#{i}" for i in range(len(fn.arg_types))]
    if len(args) != len(fn.arg_types):
        raise ArgumentError(f"kernel {fn.name} takes {len(fn.arg_types)} flattened arguments "
                            f"({', '.join(map(str, fn.arg_types))}), got {len(args)}")
    regs = []
    for name, t, v in zip(names, fn.arg_types, args):
        regs.append(full(t, _check_arg(fn.name, name, t, v)))
    return regs


def _check_arg(kernel: str, name: str, t, v):
    where = f"kernel {kernel} parameter {name} ({t})"
    if isinstance(t, TensorMapType):
        if not all(hasattr(v, a) for a in ("address", "shape", "byte_strides", "box")):
            raise ArgumentError(f"{where}: expected a tensor map for the simulator "
                                "(TensorDescriptor(...).sim_map(memory.register(array))), got "
                                f"{type(v).__name__}")
        return v
    if isinstance(t, PointerType):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
            raise ArgumentError(f"{where}: expected an int address (from Memory.register), got "
                                f"{type(v).__name__}")
        if not 0 <= int(v) < 2**64:
            raise ArgumentError(f"{where}: address {v} is not a 64-bit unsigned value")
        return int(v)
    if t.is_bool:
        if not isinstance(v, (bool, np.bool_, int, np.integer)) or int(v) not in (0, 1):
            raise ArgumentError(f"{where}: expected a bool, got {v!r}")
        return bool(v)
    if t.is_int:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
            raise ArgumentError(f"{where}: expected an int, got {type(v).__name__} {v!r}")
        lo, hi = (-(1 << (t.bits - 1)), 1 << (t.bits - 1)) if t.is_signed else (0, 1 << t.bits)
        if not lo <= int(v) < hi:
            raise ArgumentError(f"{where}: {v} is out of range [{lo}, {hi - 1}]")
        return int(v)
    if not isinstance(v, (int, float, np.integer, np.floating)) or isinstance(v, (bool, np.bool_)):
        raise ArgumentError(f"{where}: expected a float, got {type(v).__name__} {v!r}")
    return float(v)
