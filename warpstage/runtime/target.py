"""Execution targets: is a CUDA GPU usable, which target runs kernels, what the device offers.

The target is chosen, first match wins, by:

1. ``set_target('cuda' | 'sim')`` — a process-wide override (``set_target(None)`` clears it);
2. the ``WARPSTAGE_TARGET`` environment variable (read by ``warpstage.options.env_target``);
3. ``'cuda'`` when :func:`cuda_available`, else ``'sim'`` (the CPU simulator).

Forcing ``'cuda'`` on a machine without a usable GPU is allowed; the first launch then raises
``DeviceError`` saying why the GPU is unusable (:func:`require_cuda`).

Nothing here imports ``cuda.bindings`` at import time; :func:`cuda_available` does, once.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Dict, Optional, Tuple

from ..errors import ArgumentError, DeviceError
from ..options import env_target

__all__ = [
    "TARGETS", "cuda_available", "cuda_unavailable_reason", "set_target", "default_target",
    "require_cuda", "DeviceProperties", "device_properties",
]

TARGETS = ("cuda", "sim")

_lock = threading.RLock()
_probing = threading.local()                # set while this thread imports cuda.bindings
_probe: Optional[Tuple[bool, str]] = None   # (available, reason when not)
_override: Optional[str] = None
_properties: Dict[int, "DeviceProperties"] = {}


def _shadowing_cuda() -> Optional[str]:
    """The path of a module named ``cuda`` that would be imported instead of NVIDIA's
    cuda-bindings (whose ``cuda`` is a package), or None. Found without importing it: a user's
    ``cuda.py`` beside their script is imported by ``import cuda.bindings`` and runs, and if it
    launches a kernel the probe would be entered again from inside its own import."""
    import importlib.util
    try:
        spec = importlib.util.find_spec("cuda")
    except (ImportError, ValueError):
        return None
    if spec is None or spec.submodule_search_locations is not None:
        return None
    return spec.origin or "cuda"


def _probe_cuda() -> Tuple[bool, str]:
    shadow = _shadowing_cuda()
    if shadow is not None:
        reason = (f"the module 'cuda' at {shadow} shadows NVIDIA's cuda-bindings package (its "
                  f"'cuda' is a package with cuda.bindings inside), so the GPU was not probed. "
                  f"Fix: rename {shadow} (and remove its __pycache__ entry)")
        import warnings
        from ..options import user_stacklevel
        warnings.warn(f"warpstage: {reason}; until then kernels run in the CPU simulator",
                      RuntimeWarning, stacklevel=user_stacklevel())
        return False, reason
    try:
        from cuda.bindings import driver
    except Exception as e:  # ImportError, or a broken install
        return False, (f"cuda.bindings is not importable ({e}); install it with "
                       f"`pip install cuda-bindings`")
    try:
        err, = driver.cuInit(0)
    except Exception as e:  # cuda.bindings raises when libcuda.so.1 cannot be loaded
        return False, f"the NVIDIA driver library (libcuda.so.1) could not be loaded: {e}"
    if err:
        return False, f"cuInit failed with {getattr(err, 'name', err)}"
    try:
        err, count = driver.cuDeviceGetCount()
    except Exception as e:
        return False, f"cuDeviceGetCount raised {e!r}"
    if err:
        return False, f"cuDeviceGetCount failed with {getattr(err, 'name', err)}"
    if count <= 0:
        return False, "the driver reports no CUDA device"
    return True, ""


def _get_probe() -> Tuple[bool, str]:
    global _probe
    if _probe is None:
        with _lock:
            if getattr(_probing, "active", False):      # entered again from inside the import
                return False, ("the CUDA probe was entered again while it imported "
                               "cuda.bindings: a module on sys.path named 'cuda' (or inside "
                               "it) that is not NVIDIA's cuda-bindings ran warpstage. Fix: "
                               "rename that module")
            if _probe is None:
                _probing.active = True
                try:
                    _probe = _probe_cuda()
                except BaseException as e:  # noqa: BLE001 - cuda_available() must never raise
                    _probe = (False, f"probing the CUDA driver raised {e!r}")
                finally:
                    _probing.active = False
    return _probe


def cuda_available() -> bool:
    """True when ``cuda.bindings`` imports, ``cuInit`` succeeds and at least one device exists.

    Probed once per process and cached. Never raises.
    """
    return _get_probe()[0]


def cuda_unavailable_reason() -> str:
    """Why :func:`cuda_available` is False ('' when it is True)."""
    return _get_probe()[1]


def _validate(name, what: str) -> Optional[str]:
    if name is None:
        return None
    if isinstance(name, str) and name.strip().lower() in TARGETS:
        return name.strip().lower()
    raise ArgumentError(
        f"{what} got target {name!r}; expected one of 'cuda', 'sim' (or None for automatic: "
        f"'cuda' when a GPU is usable, else 'sim'). Fix: ws.set_target('sim') runs kernels in the "
        f"CPU simulator, ws.set_target('cuda') on the GPU.")


def set_target(name: Optional[str]) -> None:
    """Force the target for the whole process: 'cuda', 'sim', or None to choose automatically.

    Raises ``ArgumentError`` for any other value.
    """
    global _override, _auto
    _override = _validate(name, "set_target()")
    _auto = None


def default_target() -> str:
    """The target kernels run on now: 'cuda' or 'sim' (see the module docstring for the order).

    Raises ``ArgumentError`` when ``WARPSTAGE_TARGET`` holds something else.
    """
    if _override is not None:
        return _override
    if _auto is not None:           # the launch hot path: no environment read
        return _auto
    env = _validate(env_target(), "the WARPSTAGE_TARGET environment variable")
    result = env if env is not None else ("cuda" if cuda_available() else "sim")
    globals()["_auto"] = result
    return result


# The automatic choice, made once: WARPSTAGE_TARGET is read at the first launch, and again after
# ws.set_target(None).
_auto = None


def _how_cuda_was_chosen() -> str:
    if _override is not None:
        return "ws.set_target('cuda')"
    if env_target() is not None:
        return "WARPSTAGE_TARGET=cuda"
    return "the cuda target"


def require_cuda() -> None:
    """Raise ``DeviceError`` unless a CUDA GPU is usable, saying why not and how to fix it."""
    if cuda_available():
        return
    raise DeviceError(
        f"{_how_cuda_was_chosen()} selected the GPU, but no CUDA device is usable: "
        f"{cuda_unavailable_reason()}. Fix: run on a machine with an NVIDIA GPU and driver, or run "
        f"kernels in the CPU simulator with ws.set_target('sim') (or WARPSTAGE_TARGET=sim).")


@dataclass(frozen=True)
class DeviceProperties:
    """What one CUDA device offers. Sizes in bytes, dimensions in threads (block) or CTAs (grid).

    Read with ``cuDeviceGetAttribute`` / ``cuDeviceGetName`` / ``cuDriverGetVersion``.
    """

    ordinal: int
    name: str
    cc_major: int
    cc_minor: int
    sm_count: int
    max_threads_per_block: int
    max_block_dims: Tuple[int, int, int]
    max_grid_dims: Tuple[int, int, int]
    max_smem_per_block: int          # bytes available without opting in (48 KiB)
    max_smem_per_block_optin: int    # bytes after cuFuncSetAttribute opt-in (227 KiB on H100/H200)
    max_smem_per_sm: int
    max_regs_per_block: int
    warp_size: int
    cluster_launch: bool
    driver_version: int              # e.g. 13000 for CUDA 13.0

    @property
    def compute_capability(self) -> Tuple[int, int]:
        return (self.cc_major, self.cc_minor)

    @property
    def arch(self) -> str:
        """The ptxas architecture name, e.g. 'sm_90a' (the 'a' variant from sm_90 on)."""
        suffix = "a" if self.cc_major >= 9 else ""
        return f"sm_{self.cc_major}{self.cc_minor}{suffix}"

    @property
    def driver_version_str(self) -> str:
        return f"{self.driver_version // 1000}.{self.driver_version % 1000 // 10}"


def device_properties(ordinal: int = 0) -> DeviceProperties:
    """The properties of device ``ordinal`` (cached). Raises ``DeviceError`` without a GPU."""
    props = _properties.get(ordinal)
    if props is None:
        props = _query_properties(ordinal)
        _properties[ordinal] = props
    return props


def _query_properties(ordinal: int) -> DeviceProperties:
    from . import driver as drv

    require_cuda()
    d = drv.cuda()
    dev = drv.device(ordinal)
    A = d.CUdevice_attribute

    def attr(name: str) -> int:
        err, value = d.cuDeviceGetAttribute(getattr(A, "CU_DEVICE_ATTRIBUTE_" + name), dev)
        drv.check(err, f"reading device attribute {name} of device {ordinal}")
        return int(value)

    err, raw_name = d.cuDeviceGetName(256, dev)
    drv.check(err, f"reading the name of device {ordinal}")
    err, version = d.cuDriverGetVersion()
    drv.check(err, "reading the driver version")
    return DeviceProperties(
        ordinal=ordinal,
        name=raw_name.split(b"\0", 1)[0].decode(errors="replace"),
        cc_major=attr("COMPUTE_CAPABILITY_MAJOR"),
        cc_minor=attr("COMPUTE_CAPABILITY_MINOR"),
        sm_count=attr("MULTIPROCESSOR_COUNT"),
        max_threads_per_block=attr("MAX_THREADS_PER_BLOCK"),
        max_block_dims=(attr("MAX_BLOCK_DIM_X"), attr("MAX_BLOCK_DIM_Y"), attr("MAX_BLOCK_DIM_Z")),
        max_grid_dims=(attr("MAX_GRID_DIM_X"), attr("MAX_GRID_DIM_Y"), attr("MAX_GRID_DIM_Z")),
        max_smem_per_block=attr("MAX_SHARED_MEMORY_PER_BLOCK"),
        max_smem_per_block_optin=attr("MAX_SHARED_MEMORY_PER_BLOCK_OPTIN"),
        max_smem_per_sm=attr("MAX_SHARED_MEMORY_PER_MULTIPROCESSOR"),
        max_regs_per_block=attr("MAX_REGISTERS_PER_BLOCK"),
        warp_size=attr("WARP_SIZE"),
        cluster_launch=bool(attr("CLUSTER_LAUNCH")),
        driver_version=int(version),
    )
