"""The error tree. Every warpstage error subclasses ``WarpstageError`` and the builtin that fits,
so ``except TypeError`` keeps working for code that does not know warpstage.

Messages follow one shape: what went wrong, where (file:line and a caret excerpt when the error
comes from kernel source), expected vs got, and the fix.
"""
from __future__ import annotations

from typing import Optional

__all__ = [
    "WarpstageError", "CompilationError", "BindingTimeError", "ArgumentError", "PtxasError",
    "LaunchError", "DeviceError", "SimulatorError", "OutOfBoundsError", "DeadlockError",
    "LivelockError", "BarrierError", "RaceError", "UnsupportedError", "UnboundVariableError",
    "StaticAssertionError", "OperandError",
]


class WarpstageError(Exception):
    """Base of every warpstage error. ``where`` is the kernel source position ('file:line'), if any."""

    def __init__(self, message: str, where: Optional[str] = None):
        super().__init__(message)
        self.where = where


class CompilationError(WarpstageError, RuntimeError):
    """Tracing or lowering a kernel failed because of the kernel's source."""


class BindingTimeError(WarpstageError, TypeError):
    """A dynamic value was used where a static one is needed, or static/dynamic values could not
    be merged. The message says where the value became dynamic and how to fix it."""


class ArgumentError(WarpstageError, TypeError):
    """A host argument does not fit its parameter (type, dtype, device, range)."""


class OperandError(WarpstageError, ValueError):
    """A static operand of a device operation is outside the values it accepts: a setmaxnreg
    register count that is not a multiple of 8 in [24, 256], a named-barrier id over 15, a
    cp.async size of 12 bytes. The message names the call (file:line), the value, the allowed
    values and the fix.

    Example: ``ws.arch.setmaxnreg_increase(100)`` raises it (100 is not a multiple of 8).
    """


class UnsupportedError(WarpstageError, NotImplementedError):
    """A Python construct or value that warpstage does not support in kernels."""


class PtxasError(CompilationError):
    """ptxas rejected the PTX; ``log`` holds its output."""

    def __init__(self, message: str, log: str = ""):
        super().__init__(message)
        self.log = log


class LaunchError(WarpstageError, RuntimeError):
    """A launch was refused (grid/block over the device limits, too much shared memory, driver error)."""


class DeviceError(WarpstageError, RuntimeError):
    """No usable CUDA device or driver, or a driver call failed."""


class SimulatorError(WarpstageError, RuntimeError):
    """The CPU simulator found a fault in the kernel (its message names file:line)."""


class OutOfBoundsError(SimulatorError, IndexError):
    """A global or shared memory access outside any allocation."""


class DeadlockError(SimulatorError):
    """Every live warp is waiting; the message lists each warp's wait point."""


class BarrierError(SimulatorError):
    """Barrier misuse (mismatched counts, barrier in divergent code)."""


class LivelockError(DeadlockError):
    """Every live warp spins (a loop polling memory, its state unchanged) or waits, and none makes
    progress; the message lists each warp's spin loop or wait point."""


class RaceError(SimulatorError):
    """Two shared-memory accesses, at least one a write, that no barrier, mbarrier wait or other
    synchronization orders (found by the simulator's optional race detector). The message names
    both: kind, warp and lane, byte range and file:line. ``accesses`` holds the two as
    (kind, warp, lane, (first byte, end byte), 'file:line'), earlier first."""

    def __init__(self, message: str, where: Optional[str] = None, accesses: tuple = ()):
        super().__init__(message, where)
        self.accesses = accesses


class UnboundVariableError(WarpstageError, UnboundLocalError):
    """A kernel variable was used where it has no value (it was assigned on only one path of a
    dynamic ``if``, or first assigned inside a dynamic loop)."""


class MissingNameError(WarpstageError, AttributeError):
    """A name a public warpstage module does not have (a typo: ``ws.arch.warpid``); the message
    gives the closest public names (jit/names.py)."""


class StaticAssertionError(CompilationError, AssertionError):
    """An ``assert`` on static values failed while compiling the kernel."""


class AutotuneError(WarpstageError, RuntimeError):
    """``ws.autotune`` found no configuration that compiled, fit the launch limits and ran; the
    message lists each candidate's reason (docs/autotune.md)."""
