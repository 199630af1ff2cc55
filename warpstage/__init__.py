"""warpstage: a Python DSL and JIT compiler for NVIDIA GPU kernels (Hopper, sm_90a, first).

Every value has an explicit binding time: static (exists while compiling: configs, tile sizes,
dtypes, policy objects) or dynamic (an SSA value on the GPU). See docs/binding-time.md.
"""
from .jit.cache import source_stamps as _source_stamps
_source_stamps.start()      # the disk-cache key's source stamps, taken while the rest imports
from .jit.kernel import RecompileWarning, compile, explain, jit, kernel  # noqa: E402
from .jit.compiled import CompiledKernel
from .errors import (ArgumentError, AutotuneError, BarrierError, BindingTimeError, CompilationError,
                     DeadlockError, DeviceError, LaunchError, LivelockError, MissingNameError,
                     OperandError, OutOfBoundsError, PtxasError, RaceError, SimulatorError,
                     StaticAssertionError, UnboundVariableError, UnsupportedError, WarpstageError)
from .core.static import Constexpr, Static
from .core.values import flatten, unflatten
from . import ops
from .lang import arch, copy, epilogue, layout, math, mma, pipeline, sched, smem, tma, wgmma
from .lang.atomic import (atomic_add, atomic_and, atomic_cas, atomic_exch, atomic_max, atomic_min,
                          atomic_or, atomic_xor)
from .lang.control import const_expr, printf, range, range_constexpr, static, static_range
from .lang.pointer import Pointer
from .lang.scalars import (Float8E4M3FN, Float8E5M2, float8_e4m3fn, float8_e5m2)
from .lang.scalars import (BFloat16, Boolean, Float16, Float32, Float64, Int8, Int16, Int32, Int64,
                           Uint8, Uint16, Uint32, Uint64)
from .lang.struct import struct
from .lang.tensor import Tensor
from .jit.launch import get_target, set_target
from .options import CompileOptions
from .jit.cache.persist import load
from .jit.cache import files as cache
from . import tune
from .tune import autotune

__version__ = "0.1.0"

# the public entries of the host-side API (warpstage/jit/tracebacks.py): an error shows the user's
# line, not warpstage's frames. The launch object's own calls (kern[grid, block], the generated
# fast call) do this inline.
from .jit.tracebacks import user_entries as _user_entries
_user_entries(globals(), ["compile", "explain", "jit", "kernel", "load", "set_target",
                          "get_target", "flatten", "unflatten", "struct", "CompiledKernel",
                          "CompileOptions"])
_user_entries(vars(layout), layout.__all__)
_user_entries(vars(ops), ops.__all__)
_user_entries(vars(cache), cache.__all__)
# the device API: called on the host, its functions say so at the user's line (tracebacks.py)
from .jit.tracebacks import device_entries as _device_entries
for _m in (arch, copy, epilogue, math, mma, pipeline, sched, smem, tma, wgmma):
    _device_entries(vars(_m), _m.__all__, "ws." + _m.__name__.rpartition(".")[2])
_device_entries(globals(), ["atomic_add", "atomic_and", "atomic_cas", "atomic_exch", "atomic_max",
                            "atomic_min", "atomic_or", "atomic_xor", "printf"], "ws")
del _m


__all__ = [
    "kernel", "jit", "compile", "explain", "CompiledKernel", "CompileOptions", "RecompileWarning",
    "Static", "Constexpr", "range", "static_range", "range_constexpr", "static", "const_expr",
    "printf", "struct", "flatten", "unflatten", "arch", "layout", "math", "smem", "copy",
    "pipeline", "ops", "mma", "tma", "wgmma", "sched", "epilogue",
    "Pointer", "Tensor", "atomic_add", "atomic_min", "atomic_max", "atomic_exch", "atomic_and",
    "atomic_or", "atomic_xor", "atomic_cas",
    "Boolean", "Int8", "Int16", "Int32", "Int64", "Uint8", "Uint16", "Uint32", "Uint64",
    "Float16", "BFloat16", "Float32", "Float64", "Float8E4M3FN", "Float8E5M2", "float8_e4m3fn",
    "float8_e5m2", "get_target", "set_target",
    "WarpstageError", "ArgumentError", "BarrierError", "BindingTimeError", "CompilationError",
    "DeadlockError", "DeviceError", "LaunchError", "LivelockError", "OperandError",
    "OutOfBoundsError", "PtxasError", "RaceError", "SimulatorError", "UnsupportedError",
    "UnboundVariableError", "StaticAssertionError",
    "__version__", "load", "cache", "tune", "autotune", "AutotuneError", "MissingNameError",
]

# a misspelt public name (ws.arch.warpid) is an error with the closest names (jit/names.py);
# ws.torch (warpstage/runtime/torch_library.py) imports torch: loaded on first access, never by
# import
from .jit.names import PUBLIC_MODULES as _PUBLIC, public_getattr as _getattr
__getattr__ = _getattr(__name__, "ws", lazy={"torch": ".runtime.torch_library"})
for _m in (arch, copy, epilogue, layout, math, mma, pipeline, sched, smem, tma, wgmma, ops,
           cache, tune):
    _public = "ws." + next(n for n, v in list(globals().items()) if v is _m)
    _PUBLIC[_public] = _m
    _m.__getattr__ = _getattr(_m.__name__, _public)
del _m, _public
