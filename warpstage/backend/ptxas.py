"""PTX -> cubin with NVIDIA's ``ptxas``, whole-program (never relocatable, never nvJitLink).

Whole-program compilation is what makes ptxas honour ``setmaxnreg`` (with ``.maxntid`` and
``.minnctapersm`` on the entry); nvJitLink compiles relocatably and ignores it (warning C7504).

``find_ptxas`` searches, in order: ``options.ptxas`` (set from WARPSTAGE_PTXAS by options.py),
the ``nvidia-cuda-nvcc`` wheel (``nvidia/cu13/bin/ptxas``; ``nvidia/cuda_nvcc/bin/ptxas`` for
CUDA 12 wheels), ``$CUDA_HOME/bin``, ``$CUDA_PATH/bin``, then ``PATH``.
"""
from __future__ import annotations

import functools
import importlib.util
import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from typing import Iterable, Optional

from ..errors import CompilationError, PtxasError
from ..options import CompileOptions

__all__ = ["find_ptxas", "assemble", "ptxas_version", "Resources", "CubinResult"]


@dataclass(frozen=True)
class Resources:
    """Per-function resource usage reported by ``ptxas -v``.

    ``registers`` per thread; ``shared_bytes`` static shared memory per CTA (dynamic smem is a
    launch parameter and not included); ``spill_stores``/``spill_loads``/``stack_frame`` bytes
    per thread; ``barriers`` named barriers used; ``const_bytes`` bytes of constant bank 0
    (kernel parameters and constants).
    """

    registers: int = 0
    shared_bytes: int = 0
    spill_stores: int = 0
    spill_loads: int = 0
    stack_frame: int = 0
    barriers: int = 0
    const_bytes: int = 0


@dataclass
class CubinResult:
    """A cubin and what ptxas said: ``resources`` per entry name, ``warnings`` (each a line:
    ptxas warnings and numbered diagnostics such as C7508, "setmaxnreg ignored"), the full
    ``log``, and the wall ``seconds`` taken."""

    cubin: bytes
    log: str
    resources: dict = field(default_factory=dict)
    warnings: list = field(default_factory=list)
    seconds: float = 0.0


def _executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


@functools.lru_cache(maxsize=None)
def find_cuda_tool(name: str) -> Optional[str]:
    """The first executable ``name`` (ptxas, nvdisasm, cuobjdump) in the NVIDIA wheels
    (``nvidia/cu13/bin``, ``nvidia/cuda_nvcc/bin``), CUDA_HOME, CUDA_PATH, PATH order (cached per
    process), or None."""
    candidates = []
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):          # a broken or shadowing 'nvidia' module
        spec = None
    for root in (spec.submodule_search_locations or []) if spec else []:
        candidates += [os.path.join(root, "cu13", "bin", name),
                       os.path.join(root, "cuda_nvcc", "bin", name)]
    # The toolkit's own variables; reading them here (not in options.py) keeps the search in one
    # place, and they name an installation rather than configure warpstage.
    for var in ("CUDA_HOME", "CUDA_PATH"):
        home = os.environ.get(var)
        if home:
            candidates.append(os.path.join(home, "bin", name))
    for c in candidates:
        if _executable(c):
            return c
    return shutil.which(name)


def _search_ptxas() -> Optional[str]:
    return find_cuda_tool("ptxas")


def find_ptxas(options: CompileOptions) -> Optional[str]:
    """Path of the ptxas to use, or None if there is none.

    Raises CompilationError if ``options.ptxas`` is set but names no executable (a typo in
    WARPSTAGE_PTXAS should not silently fall back to another ptxas).
    """
    if options.ptxas:
        found = options.ptxas if _executable(options.ptxas) else shutil.which(options.ptxas)
        if found is None:
            raise CompilationError(
                f"ptxas not found at {options.ptxas!r} (CompileOptions.ptxas / WARPSTAGE_PTXAS); "
                "expected an executable ptxas. Fix the path, or unset it to search the "
                "nvidia-cuda-nvcc wheel, CUDA_HOME and PATH")
        return found
    return _search_ptxas()


@functools.lru_cache(maxsize=None)
def ptxas_version(path: str) -> str:
    """ptxas's version line, e.g. 'Cuda compilation tools, release 13.0, V13.0.88'."""
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        raise PtxasError(f"could not run {path} --version: {e}", str(e)) from e
    for line in out.stdout.splitlines():
        if "release" in line:
            return line.strip()
    return out.stdout.strip()


_ENTRY = re.compile(r"Compiling entry function '([^']+)'")
_PROPS = re.compile(r"Function properties for (\S+)")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_BARRIERS = re.compile(r"used (\d+) barriers")
_SMEM = re.compile(r"(\d+) bytes smem")
_CMEM = re.compile(r"(\d+) bytes cmem\[0\]")


def parse_resources(log: str) -> dict:
    """{function name: Resources} from ``ptxas -v`` output, for entries and device functions."""
    found: dict = {}
    current = None
    for line in log.splitlines():
        m = _ENTRY.search(line) or _PROPS.search(line)
        if m:
            current = m.group(1)
            found.setdefault(current, {})
            continue
        if current is None:
            continue
        m = _FRAME.search(line)
        if m:
            found[current].update(stack_frame=int(m.group(1)), spill_stores=int(m.group(2)),
                                  spill_loads=int(m.group(3)))
        m = _USED.search(line)
        if m:
            found[current]["registers"] = int(m.group(1))
            for key, rx in (("barriers", _BARRIERS), ("shared_bytes", _SMEM),
                            ("const_bytes", _CMEM)):
                m2 = rx.search(line)
                if m2:
                    found[current][key] = int(m2.group(1))
    return {name: Resources(**fields) for name, fields in found.items()}


# ptxas reports some problems as numbered 'info' lines, e.g. "ptxas info : (C7508) Potential
# Performance Loss: 'setmaxnreg' ignored"; they are warnings for our purposes.
_DIAGNOSTIC = re.compile(r"\(C\d{4,}\)")
_LINE = re.compile(r"kernel\.ptx, line (\d+)")


def _quote_errors(log: str, ptx: str, limit: int = 20) -> str:
    """ptxas's error lines, each followed by the PTX line it names."""
    lines = ptx.splitlines()
    errors = [ln for ln in log.splitlines() if "error" in ln.lower() or "fatal" in ln.lower()]
    out = []
    for ln in (errors or log.splitlines())[:limit]:
        out.append(ln)
        m = _LINE.search(ln)
        if m and 0 < int(m.group(1)) <= len(lines):
            out.append("    > " + lines[int(m.group(1)) - 1].strip())
    return "\n".join(out)


def assemble(ptx: str, options: CompileOptions, kernel_names: Iterable[str] = ()) -> CubinResult:
    """Run ``ptxas -arch=<arch> -O<opt> -v`` on ``ptx``; return the cubin and its resources.

    ``kernel_names`` are entries that must appear in ptxas's report. Raises PtxasError (with
    ptxas's log) when no ptxas is found, when it fails, or when a named kernel is missing.
    """
    path = find_ptxas(options)
    if path is None:
        raise PtxasError("no ptxas found: install the nvidia-cuda-nvcc wheel "
                         "(pip install 'warpstage[ptxas]'), set CUDA_HOME, or set WARPSTAGE_PTXAS")
    opt = max(0, min(3, options.opt_level))
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="warpstage-ptxas-") as tmp:
        src, out = os.path.join(tmp, "kernel.ptx"), os.path.join(tmp, "kernel.cubin")
        with open(src, "w") as f:
            f.write(ptx)
        cmd = [path, f"-arch={options.arch}", f"-O{opt}", "-v", "-o", out, src]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        log = (proc.stdout + proc.stderr).replace(src, "kernel.ptx")
        if proc.returncode != 0:
            raise PtxasError(f"ptxas failed for {options.arch} (exit {proc.returncode}):\n"
                             + _quote_errors(log, ptx), log)
        with open(out, "rb") as f:
            cubin = f.read()
    seconds = time.perf_counter() - start
    resources = parse_resources(log)
    missing = [k for k in kernel_names if k not in resources]
    if missing:
        raise PtxasError(f"ptxas reported no entry {', '.join(missing)}; it compiled "
                         f"{', '.join(resources) or 'nothing'}", log)
    warnings = [ln.strip() for ln in log.splitlines()
                if "warning" in ln.lower() or _DIAGNOSTIC.search(ln)]
    return CubinResult(cubin, log, resources, warnings, seconds)
