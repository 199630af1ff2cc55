"""Compile options: one frozen dataclass, passed down explicitly, hashed into the cache key.

This is the only module that reads environment variables:

  WARPSTAGE_TARGET      'cuda' or 'sim' (default: cuda when a GPU is usable, else sim)
  WARPSTAGE_PTXAS       path to the ptxas executable
  WARPSTAGE_CACHE_DIR   disk cache folder (default ~/.cache/warpstage)
  WARPSTAGE_DEBUG       '1' turns on device-side asserts and keeps warpstage's own frames in
                        the tracebacks of errors (warpstage/tracebacks.py)
  WARPSTAGE_SIM_RACES   '1' turns on the simulator's shared-memory race detector (default off)
  WARPSTAGE_SIM_MAX_LOOP  iterations one while loop may run in one warp of the simulator before
                        it is reported as a LivelockError (default 2^24; '0': no bound)
  WARPSTAGE_LAUNCH      'ctypes' (default) or 'bindings': how launches call cuLaunchKernel
  WARPSTAGE_PROGRESS    '0' hides the progress line of compiles over ~1 s, '1' shows it even
                        when stderr is not a terminal (default: shown on a terminal only)
"""
from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import Optional

__all__ = ["CompileOptions", "default_options", "env_target", "env_cache_dir", "env_ptxas",
           "env_sim_races", "env_launch_path", "env_progress", "env_debug", "env_sim_max_loop",
           "SIM_MAX_LOOP"]


@dataclass(frozen=True)
class CompileOptions:
    """How to compile. ``arch`` is the PTX target (sm_90a); ``opt_level`` LLVM's -O level;
    ``debug`` enables device asserts; ``max_specializations`` the count after which a kernel warns
    about recompiles; ``ptxas`` an explicit ptxas path (None: search)."""

    arch: str = "sm_90a"
    ptx_version: str = "+ptx80"
    opt_level: int = 3
    debug: bool = False
    ptxas: Optional[str] = None
    max_specializations: int = 8

    def with_(self, **changes) -> "CompileOptions":
        return replace(self, **changes)


def env_target() -> Optional[str]:
    """The target forced by WARPSTAGE_TARGET, or None."""
    t = os.environ.get("WARPSTAGE_TARGET", "").strip().lower()
    return t or None


def env_cache_dir() -> Optional[str]:
    """WARPSTAGE_CACHE_DIR, or ~/.cache/warpstage when unset; None when it is set but empty
    (or blank), which turns the disk cache off (docs/cache.md)."""
    v = os.environ.get("WARPSTAGE_CACHE_DIR")
    if v is None:
        return os.path.join(os.path.expanduser("~"), ".cache", "warpstage")
    return v if v.strip() else None


def env_ptxas() -> Optional[str]:
    return os.environ.get("WARPSTAGE_PTXAS") or None


def env_sim_races() -> bool:
    """Whether WARPSTAGE_SIM_RACES asks for the simulator's race detector ('1', 'true', 'yes',
    'on'; anything else, or unset, is off). Read at each simulated launch that does not say."""
    return os.environ.get("WARPSTAGE_SIM_RACES", "").strip().lower() in ("1", "true", "yes", "on")


def env_debug() -> bool:
    """Whether WARPSTAGE_DEBUG is '1': device asserts on, warpstage's frames kept in tracebacks."""
    return os.environ.get("WARPSTAGE_DEBUG", "") == "1"


SIM_MAX_LOOP = 2 ** 24
"""The default of WARPSTAGE_SIM_MAX_LOOP (docs/simulator.md, "Spin loops")."""


def env_sim_max_loop() -> int:
    """WARPSTAGE_SIM_MAX_LOOP: the iterations one while loop may run in one warp of the
    simulator (0: unbounded); SIM_MAX_LOOP when unset or not a non-negative int."""
    v = os.environ.get("WARPSTAGE_SIM_MAX_LOOP", "").strip()
    return int(v) if v.isdigit() else SIM_MAX_LOOP


def default_options() -> CompileOptions:
    return CompileOptions(debug=env_debug(), ptxas=env_ptxas())


def env_launch_path() -> str:
    """The driver call of launches, from WARPSTAGE_LAUNCH: 'ctypes' (default: libcuda's
    cuLaunchKernel through ctypes) or 'bindings' (through cuda-bindings). See docs/launch.md."""
    path = os.environ.get("WARPSTAGE_LAUNCH", "").strip().lower()
    return path if path in ("ctypes", "bindings") else "ctypes"


def env_progress() -> Optional[bool]:
    """WARPSTAGE_PROGRESS: False for '0'/'false'/'no'/'off', True for '1'/'true'/'yes'/'on',
    None (automatic: a terminal shows it) when unset or anything else (warpstage/progress.py)."""
    v = os.environ.get("WARPSTAGE_PROGRESS", "").strip().lower()
    return False if v in ("0", "false", "no", "off") else True if v in ("1", "true", "yes", "on") \
        else None
