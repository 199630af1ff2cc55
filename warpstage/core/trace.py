"""Tracing: run a kernel's Python function on dynamic values to build IR.

A ``TraceContext`` is active while a kernel (and the device functions it reaches) is traced. It
owns the IR module, the builder with its insertion point, the device-function specializations
made so far, and the static values read from globals (the guards that go into the cache key).
Code that emits IR calls ``builder()``, which stamps each op with the user's source line.
"""
from __future__ import annotations

import threading
from typing import Any, Optional

from ..errors import CompilationError
from ..ir import Builder, Module
from .source import format_location, user_location

__all__ = ["TraceContext", "current", "maybe_current", "builder", "emit_location", "Origin"]

_state = threading.local()
_active = 0                 # traces active in all threads (kern[...] in C reads it: jit/c_env.py)
_active_lock = threading.Lock()


class Origin:
    """Where and why a value became dynamic: shown by BindingTimeError and ``explain``."""

    __slots__ = ("what", "loc")

    def __init__(self, what: str, loc=None):
        self.what = what
        self.loc = loc

    def __str__(self) -> str:
        return f"{self.what}" + (f" ({self.loc})" if self.loc else "")


class TraceContext:
    """State of one trace. Use as a context manager; nesting is an error (kernels do not trace
    kernels)."""

    def __init__(self, module: Module, options: Any, block: Optional[tuple] = None):
        self.module = module
        self.options = options
        self.block = tuple(block) if block else ()
        """The launch block (x, y, z threads per CTA) the kernel is specialized for; () when
        traced without one. Library code asks ``ws.arch.static_block_dim()``."""
        self.dynamic_smem = 0
        """Bytes of the CTA's dynamic shared memory reserved so far (``ws.smem.allocate``; the
        ``smem.alloc`` ops hold the extents, the ``kernel_attributes`` pass the total)."""
        self.builder = Builder()
        self.device_functions: dict = {}   # specialization key -> ir.Function
        self.reached: list = []            # Python functions traced (kernel and @ws.jit bodies)
        self.facts: dict = {}              # attribute reads (frontend/facts.py)
        self.device_depth = 0              # @ws.jit specializations being traced, nested
        self.ops_traced = 0
        self.unrolled = 0                  # iterations of static loops traced (options.max_unroll)
        self.last_return = None            # Location of the last `return <value>` traced
        self.dynamic_sites: list = []      # Sites of the dynamic `if`s whose branches are traced

    def __enter__(self):
        if getattr(_state, "ctx", None) is not None:
            raise CompilationError("a kernel cannot be launched or compiled while another kernel is "
                                   "being traced; call a @ws.jit device function instead")
        global _active
        with _active_lock:
            _state.ctx = self
            _active += 1
        return self

    def __exit__(self, *exc):
        global _active
        with _active_lock:
            if _state.__dict__.get("ctx") is self:
                _active -= 1
            _state.ctx = None
        return False


def maybe_current() -> Optional[TraceContext]:
    return getattr(_state, "ctx", None)


def current(what: str = "this operation") -> TraceContext:
    """The active trace, or a CompilationError saying ``what`` only works inside a kernel."""
    ctx = getattr(_state, "ctx", None)
    if ctx is None:
        raise outside_trace_error(what)
    return ctx


def outside_trace_error(what: str) -> CompilationError:
    """The error for device code (``what``, as the user wrote it: ``ws.arch.warp_idx()``) run
    with no kernel being traced. ``e.outside_trace`` marks it, so that the public device entry
    the user called (jit/tracebacks.device_entry) can name itself instead of the inner
    function that found no trace."""
    e = CompilationError(
        f"{what} was called from host code, outside any kernel: it emits GPU code, so it only "
        "runs inside a @ws.kernel or @ws.jit function while warpstage compiles it.\n"
        f"Fix: call {what} in the body of a @ws.kernel (or of a @ws.jit function that one "
        "calls) and launch the kernel: kern[grid, block](...).")
    e.outside_trace = True
    return e


def builder(what: str = "this operation") -> Builder:
    """The active builder, with ``loc`` set to the user's current source line."""
    b = current(what).builder
    b.loc = user_location(2)
    return b


def emit_location() -> str:
    """A caret excerpt of the user's current line (for error messages)."""
    return format_location(user_location(2))
