"""The CPU simulator: executes warpstage IR with warp semantics (see docs/simulator.md).

``run(module, kernel_name, grid, block, args, memory, smem_bytes=0)`` launches a kernel;
``Memory`` maps host numpy arrays at device addresses for its pointer arguments.
"""
# importing the op families registers their handlers
from . import (cluster, ops_arith, ops_async, ops_control, ops_mbarrier,  # noqa: F401
               ops_memory, ops_mma, ops_special, ops_sync, ops_tma, ops_warp, ops_wgmma)
from .compiler import Program, compile_module
from .memory import Memory
from .registry import HANDLERS
from .run import RunResult, run, set_races
from .scheduler import SimulationInterrupted

__all__ = ["run", "RunResult", "set_races", "Memory", "compile_module", "Program", "HANDLERS",
           "SimulationInterrupted"]
