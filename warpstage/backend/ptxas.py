"""PTX -> cubin with NVIDIA's ``ptxas``, whole-program (never relocatable, never nvJitLink).

Whole-program compilation is what makes ptxas honour ``setmaxnreg`` (with ``.maxntid`` and
``.minnctapersm`` on the entry); nvJitLink compiles relocatably and ignores it (warning C7504).

Finding ptxas (``find_ptxas``, its search order) and the result types live in ``ptxas_tool.py``,
which a disk-cache hit imports without this module; they are re-exported here.
"""
from __future__ import annotations

import importlib.util  # noqa: F401  (tests patch importlib.util.find_spec through this module)
import os
import re
import subprocess
import tempfile
import time
from typing import Iterable

from ..errors import PtxasError
from ..options import CompileOptions
from .ptxas_tool import CubinResult, Resources, find_cuda_tool, find_ptxas, ptxas_version

__all__ = ["find_ptxas", "find_cuda_tool", "assemble", "parse_resources", "ptxas_version",
           "Resources", "CubinResult"]


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
    ``<opt>`` is ``options.ptxas_opt_level``, or ``options.opt_level`` where that is None.

    ``kernel_names`` are entries that must appear in ptxas's report. Raises PtxasError (with
    ptxas's log) when no ptxas is found, when it fails, or when a named kernel is missing.
    """
    path = find_ptxas(options)
    if path is None:
        raise PtxasError("no ptxas found: install the nvidia-cuda-nvcc wheel "
                         "(pip install 'warpstage[ptxas]'), set CUDA_HOME, or set WARPSTAGE_PTXAS")
    level = options.opt_level if options.ptxas_opt_level is None else options.ptxas_opt_level
    opt = max(0, min(3, level))
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
