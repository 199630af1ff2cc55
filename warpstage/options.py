"""Compile options: one frozen dataclass, passed down explicitly, in two groups.

- Code-generation options (``arch``, ``ptx_version``, ``opt_level``, ``device_asserts``,
  ``ptxas``, ``inline_in_place``, ``llvm_pipeline``, ``ptxas_opt_level``): they change the IR,
  PTX or cubin, so ``CompileOptions.codegen_key()`` is hashed into the disk key
  (``persist.spec_key``).
- Debug and runtime options (``compiler_frames``, ``max_specializations``, ``max_unroll``): they
  change what the host does around a compile (tracebacks, the recompile warning), never the code, so they are
  not hashed: two kernels differing only in them share disk entries. Process-wide settings of the
  same kind live outside the options: the simulator's race detector (``ws.set_target(races=)``,
  ``WARPSTAGE_SIM_RACES``) and the progress line (``WARPSTAGE_PROGRESS``).

``debug`` used to mean both device asserts and compiler frames; ``debug=True`` (the spelling
``@ws.kernel(debug=True)`` documented) still sets both, with a DeprecationWarning.

This is the only module that reads environment variables:

  WARPSTAGE_TARGET      'cuda' or 'sim' (default: cuda when a GPU is usable, else sim)
  WARPSTAGE_PTXAS       path to the ptxas executable
  WARPSTAGE_CACHE_DIR   disk cache folder (default ~/.cache/warpstage)
  WARPSTAGE_DEBUG       '1' turns on device-side asserts (``device_asserts``) and keeps
                        warpstage's own frames in the tracebacks of errors
                        (warpstage/jit/tracebacks.py)
  WARPSTAGE_SIM_RACES   '1' turns on the simulator's shared-memory race detector (default off)
  WARPSTAGE_SIM_MAX_LOOP  iterations one while loop may run in one warp of the simulator before
                        it is reported as a LivelockError (default 2^24; '0': no bound)
  WARPSTAGE_LAUNCH      'ctypes' (default) or 'bindings': how launches call cuLaunchKernel
  WARPSTAGE_CCALL       '0' (or false/no/off) keeps launches on the Python call path instead of
                        the C-level one (docs/launch.md; default on)
  WARPSTAGE_PROGRESS    '0' hides the progress line of compiles over ~1 s, '1' shows it even
                        when stderr is not a terminal (default: shown on a terminal only)
  WARPSTAGE_LLVM_PIPELINE  'light' makes ``llvm_pipeline='light'`` the default of every kernel
                        without its own (docs/compile-time.md, 18.; default 'default')
  WARPSTAGE_TUNE_DEVICES  the GPUs an autotune run times its candidates on when ``ws.autotune``
                        is not given ``devices=``: 'all', or ordinals '0,1' (docs/autotune.md,
                        "Several GPUs"; default: the arguments' GPU only)

and CUDA's own CUDA_VISIBLE_DEVICES, which the autotuner's per-GPU timing workers narrow.
WARPSTAGE_LAUNCH and WARPSTAGE_LLVM_PIPELINE warn once per process about a value that is none of
theirs (``env_choice``), WARPSTAGE_SIM_MAX_LOOP about one that is not a non-negative int, then use
their default.
"""
from __future__ import annotations

import dataclasses
import os
import warnings
from dataclasses import InitVar, dataclass, field, replace
from typing import Optional

__all__ = ["CompileOptions", "CODEGEN_FIELDS", "RUNTIME_FIELDS", "default_options", "env_target",
           "env_cache_dir", "env_ptxas", "env_sim_races", "env_launch_path", "env_c_call",
           "env_progress", "env_debug", "env_llvm_pipeline", "user_stacklevel",
           "env_sim_max_loop", "SIM_MAX_LOOP", "UNROLL_LIMIT", "LLVM_PIPELINES",
           "env_tune_devices",
           "env_visible_devices"]


_RUNTIME = {"runtime": True}

LLVM_PIPELINES = ("default", "light")
"""``CompileOptions.llvm_pipeline``'s values: LLVM's per-module default pipeline at the opt
level, or ``backend/llvm_c.LIGHT_PASSES``."""

UNROLL_LIMIT = 1 << 18
"""The default of ``CompileOptions.max_unroll``: 262144 unrolled iterations in one trace. A
trivial body traces in ~15 us per iteration on a loaded CI core, so the limit is reached after
seconds to a minute of tracing; the FlashAttention kernels count 18 (D=64) and 34 (D=128), the
GEMM 0 (library code's own Python loops are not counted: only loops of rewritten kernel code)."""


@dataclass(frozen=True)
class CompileOptions:
    """How to compile.

    Code generation (hashed into the disk key): ``arch`` the PTX target (sm_90a);
    ``ptx_version`` the PTX ISA version LLVM emits; ``opt_level`` LLVM's -O level;
    ``device_asserts`` compiles a dynamic ``assert`` into a device check (printf of file:line,
    then trap) instead of dropping it; ``ptxas`` an explicit ptxas path (None: search);
    ``inline_in_place`` lowers each ``inline='always'`` device function's body at its call sites
    instead of as an LLVM ``alwaysinline`` function (the kernels it builds ran 1-4.6% slower on
    the H200, so it is off by default; the default lowering's large results go through an
    out-pointer instead, which removed most of the LLVM time this option saved:
    docs/compile-time.md, 10. and 12.); ``llvm_pipeline`` the LLVM optimization pipeline:
    'default' (LLVM's per-module default pipeline at ``opt_level``) or 'light' (the
    always-inliner, SROA, InstCombine and SimplifyCFG only, after warpstage's own loop-invariant
    code motion, ``passes/licm.py``: about a sixth of O3's CPU time on the wgmma FlashAttention
    kernels, a different PTX and SASS, 3.5% slower at D=64 S=1024 on the H200, so not the
    default; the mma.sync FlashAttention spills with it: docs/compile-time.md, 18. and 20.);
    ``ptxas_opt_level`` ptxas's ``-O`` level (None: ``opt_level``'s; ptxas -O1 assembles the
    wgmma FlashAttention kernels 10-20% faster with other SASS: docs/compile-time.md, "Tried and
    not taken", and ``benchmarks/llvm_pipeline_ab.py`` for its GPU A/B).

    Debug and runtime (not hashed; changing them never recompiles): ``compiler_frames`` keeps
    warpstage's own frames in the tracebacks of errors (for debugging warpstage itself; off,
    users see their own lines only); ``max_specializations`` the count after which a kernel
    warns about recompiles (RecompileWarning); ``max_unroll`` the iterations that static loops
    (``for`` over a ``ws.static_range``, a tuple or a list: unrolled while compiling) may run in
    one trace, all loops together, before the trace stops with a CompilationError naming the
    loop (0: no bound; default ``UNROLL_LIMIT``).

    ``debug`` (deprecated, a constructor argument only): True sets both ``device_asserts`` and
    ``compiler_frames``, as it did, with a DeprecationWarning."""

    arch: str = "sm_90a"
    ptx_version: str = "+ptx80"
    opt_level: int = 3
    device_asserts: bool = False
    ptxas: Optional[str] = None
    inline_in_place: bool = False
    llvm_pipeline: str = "default"
    ptxas_opt_level: Optional[int] = None
    compiler_frames: bool = field(default=False, metadata=_RUNTIME)
    max_specializations: int = field(default=8, metadata=_RUNTIME)
    max_unroll: int = field(default=UNROLL_LIMIT, metadata=_RUNTIME)
    debug: InitVar[Optional[bool]] = None

    def __post_init__(self, debug):
        from .core.target import check_arch
        check_arch(self.arch, "the compile option arch")
        _check_values(self)
        if debug is not None:
            warnings.warn("CompileOptions(debug=...) / @ws.kernel(debug=...) is deprecated: it "
                          "meant two things, now two options. Fix: device_asserts=True (device "
                          "checks for dynamic asserts) and/or compiler_frames=True (warpstage's "
                          "frames in tracebacks)", DeprecationWarning, stacklevel=user_stacklevel())
            object.__setattr__(self, "device_asserts", bool(debug))
            object.__setattr__(self, "compiler_frames", bool(debug))

    def with_(self, **changes) -> "CompileOptions":
        """A copy with ``changes`` (field names; ``debug`` as in the constructor)."""
        unknown = [n for n in changes if n not in _FIELD_NAMES]
        if unknown:
            import difflib
            from .errors import ArgumentError
            near = difflib.get_close_matches(unknown[0], _FIELD_NAMES, n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise ArgumentError(
                f"unknown compile option {unknown[0]!r}{hint}; a compile option is a field of "
                f"ws.CompileOptions: {', '.join(_FIELD_NAMES)}.\nFix: "
                + (f"write {near[0]}=... ." if near else "remove it; a launch block goes in "
                   "kern[grid, block] (or ws.compile(..., block=...)), not in @ws.kernel(...)."))
        changes.setdefault("debug", None)
        return replace(self, **changes)

    def codegen_key(self) -> tuple:
        """The code-generation options as sorted (name, value) pairs: what the disk key hashes."""
        return tuple((name, getattr(self, name)) for name in CODEGEN_FIELDS)


_FIELD_NAMES = tuple(f.name for f in dataclasses.fields(CompileOptions)) + ("debug",)

# field -> (what it accepts, the check): a wrong value fails where it is set, not in LLVM or ptxas
_VALUE_RULES = {
    "ptx_version": ("a string '+ptxNN' (e.g. '+ptx80')",
                    lambda v: isinstance(v, str) and v.startswith("+ptx") and v[4:].isdigit()),
    "opt_level": ("an int 0, 1, 2 or 3 (LLVM's -O level)",
                  lambda v: type(v) is int and 0 <= v <= 3),
    "device_asserts": ("a bool", lambda v: type(v) is bool),
    "inline_in_place": ("a bool", lambda v: type(v) is bool),
    "llvm_pipeline": ("'default' (LLVM's default pipeline at opt_level) or 'light' (four "
                      "passes: docs/compile-time.md, 18.)",
                      lambda v: type(v) is str and v in LLVM_PIPELINES),
    "ptxas_opt_level": ("None (opt_level's) or an int 0, 1, 2 or 3 (ptxas's -O level)",
                        lambda v: v is None or (type(v) is int and 0 <= v <= 3)),
    "compiler_frames": ("a bool", lambda v: type(v) is bool),
    "ptxas": ("None or the path of a ptxas binary (a string)",
              lambda v: v is None or isinstance(v, (str, os.PathLike))),
    "max_specializations": ("an int >= 1", lambda v: type(v) is int and v >= 1),
    "max_unroll": ("an int >= 0 (0: no bound)", lambda v: type(v) is int and v >= 0),
}


def _check_values(opts) -> None:
    """OperandError naming the first option of ``opts`` whose value its rule refuses."""
    for name, (accepts, ok) in _VALUE_RULES.items():
        v = getattr(opts, name)
        if not ok(v):
            from .errors import OperandError
            default = getattr(CompileOptions, name, None)
            near = v.strip().lower() if isinstance(v, str) else None
            hint = (f"{name}={near!r} (the spelling it accepts), " if name == "llvm_pipeline"
                    and near in LLVM_PIPELINES else "")
            raise OperandError(
                f"the compile option {name}: expected {accepts}; got {type(v).__name__} "
                f"{v!r}.\nFix: {hint}{name}={default!r} (the default), or another value it "
                "accepts.")


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


def user_stacklevel() -> int:
    """The ``warnings.warn`` stacklevel, for a warning raised in the function that calls this,
    of the first frame outside warpstage and dataclasses (whose generated ``__init__`` is
    ``<string>``): the user's ``@ws.kernel(debug=True)`` line, or their ``import warpstage`` when
    the warning comes while warpstage imports. Counted as ``warnings`` counts: after the first,
    only frames outside importlib's bootstrap (which ``warnings`` skips), so a warning during
    an import is not put on one of warpstage's own lines."""
    import sys
    here = os.path.dirname(os.path.abspath(__file__))

    def ours(frame):
        name = frame.f_code.co_filename
        return name.startswith(here) or name in (dataclasses.__file__, "<string>")

    def internal(frame):
        name = frame.f_code.co_filename
        return "importlib" in name and "_bootstrap" in name

    frame, level = sys._getframe(1), 1
    while frame is not None and ours(frame):
        frame = frame.f_back
        while frame is not None and internal(frame):
            frame = frame.f_back
        level += 1
    return level


CODEGEN_FIELDS = tuple(sorted(f.name for f in dataclasses.fields(CompileOptions)
                              if not f.metadata.get("runtime")))
"""The options hashed into the disk key (they change the generated code)."""
RUNTIME_FIELDS = tuple(sorted(f.name for f in dataclasses.fields(CompileOptions)
                              if f.metadata.get("runtime")))
"""The debug and runtime options: not hashed; changing them never recompiles."""


def env_debug() -> bool:
    """Whether WARPSTAGE_DEBUG is '1': device asserts on, warpstage's frames kept in tracebacks."""
    return os.environ.get("WARPSTAGE_DEBUG", "") == "1"


SIM_MAX_LOOP = 2 ** 24
"""The default of WARPSTAGE_SIM_MAX_LOOP (docs/simulator.md, "Spin loops")."""


def env_sim_max_loop() -> int:
    """WARPSTAGE_SIM_MAX_LOOP: the iterations one while loop may run in one warp of the
    simulator (0: unbounded); SIM_MAX_LOOP when unset or not a non-negative int."""
    raw = os.environ.get("WARPSTAGE_SIM_MAX_LOOP", "")
    v = raw.strip()
    if v.isdigit():
        return int(v)
    if v:
        _warn_env_once("WARPSTAGE_SIM_MAX_LOOP", raw,
                       f"is not a non-negative int; using {SIM_MAX_LOOP} (2^24). Fix: set it to "
                       "a count of iterations (0: no bound), or unset it.")
    return SIM_MAX_LOOP


LIBRARY_SPECIALIZATIONS = 256
"""``max_specializations`` of ``ws.ops``' kernels (``@ws.kernel(max_specializations=...)``):
they compile one specialization per configuration of their policy (head dim, dtype, causal,
sequence class, scale, tile shape; an autotune's every candidate), which is their purpose, not
the recompile a RecompileWarning is for; past this count something in an op's key is varying
that should not."""


_WARNED_ENV: set = set()
"""(variable, value) pairs :func:`env_choice` has warned about (once per process each)."""


def env_choice(name: str, choices: tuple, default: str) -> str:
    """The value of environment variable ``name`` if it is one of ``choices`` (stripped, any
    case), else ``default``: unset or empty silently; anything else with a warning, once per
    process and value, that names the variable, the value, the choices and what was used (a
    misspelt ``WARPSTAGE_LLVM_PIPELINE=lite`` would otherwise make an A/B run measure the
    default against itself)."""
    raw = os.environ.get(name, "")
    v = raw.strip().lower()
    if v in choices:
        return v
    if v:
        _warn_env_once(name, raw, f"is not one of {', '.join(map(repr, choices))}; using "
                                  f"{default!r}. Fix: set {name} to one of those, or unset it.")
    return default


def _warn_env_once(name: str, raw: str, what: str) -> None:
    """Warn ``{name}={raw!r} {what}`` on the user's line, once per process and value."""
    if (name, raw) not in _WARNED_ENV:
        _WARNED_ENV.add((name, raw))
        warnings.warn(f"{name}={raw!r} {what}", stacklevel=user_stacklevel())


def env_llvm_pipeline() -> str:
    """WARPSTAGE_LLVM_PIPELINE: 'light' or 'default' ('default' when unset; another value warns
    once and means 'default': :func:`env_choice`)."""
    return env_choice("WARPSTAGE_LLVM_PIPELINE", LLVM_PIPELINES, "default")


def default_options() -> CompileOptions:
    return CompileOptions(device_asserts=env_debug(), ptxas=env_ptxas(),
                          llvm_pipeline=env_llvm_pipeline())


def env_launch_path() -> str:
    """The driver call of launches, from WARPSTAGE_LAUNCH: 'ctypes' (default: libcuda's
    cuLaunchKernel through ctypes) or 'bindings' (through cuda-bindings). See docs/launch.md."""
    return env_choice("WARPSTAGE_LAUNCH", ("ctypes", "bindings"), "ctypes")


def env_c_call() -> bool:
    """WARPSTAGE_CCALL: False for '0'/'false'/'no'/'off' (launches take the Python call path),
    else True: the C-level call path where it can run (warpstage/jit/c_call.py, docs/launch.md).
    Read when a kernel makes its launch type (its first ``kern[grid, block]``)."""
    return os.environ.get("WARPSTAGE_CCALL", "").strip().lower() not in ("0", "false", "no", "off")


def env_progress() -> Optional[bool]:
    """WARPSTAGE_PROGRESS: False for '0'/'false'/'no'/'off', True for '1'/'true'/'yes'/'on',
    None (automatic: a terminal shows it) when unset or anything else (warpstage/jit/progress.py)."""
    v = os.environ.get("WARPSTAGE_PROGRESS", "").strip().lower()
    return False if v in ("0", "false", "no", "off") else True if v in ("1", "true", "yes", "on") \
        else None


def env_tune_devices() -> Optional[str]:
    """WARPSTAGE_TUNE_DEVICES as given ('all', '0,1'; parsed by warpstage/tune/devices.py), or
    None when unset or blank."""
    v = os.environ.get("WARPSTAGE_TUNE_DEVICES", "").strip()
    return v or None


def env_visible_devices() -> Optional[list]:
    """CUDA_VISIBLE_DEVICES as a list of its comma-separated entries (indices or UUIDs, as CUDA
    reads them), or None when unset: the i-th GPU this process sees is the i-th entry."""
    v = os.environ.get("CUDA_VISIBLE_DEVICES")
    return None if v is None else [e.strip() for e in v.split(",")]
