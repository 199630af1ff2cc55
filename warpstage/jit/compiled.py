"""``CompiledKernel``: one specialization of a kernel, holding its compile stages.

The stages (``jit/stages.py``) are made by ``jit/pipeline.py`` on first use and kept:
``.traced`` (the IR after the passes; ``.ir`` its text), ``.lowered`` (``.llvm_ir``, ``.ptx``),
``.compiled`` (``.cubin``, ptxas' ``.resources``). ``.sass`` needs nvdisasm/cuobjdump.
``.timings`` records seconds per step (trace, llvm_load, lower, ptx, ptxas, load; for a
disk-cache hit disk_key, disk_read and disk: computing the key, reading the file, checking and
unpacking it);
``STAGE_COUNTS`` (pipeline.py) counts, per process, how many times each step really ran.
The loaded executable (module, function, Launcher) is apart from the artifacts: made by
``cuda_launcher()`` in the current CUDA context, never stored.

A CompiledKernel from the disk cache or ``ws.load`` has no IR module (``.module`` is None):
every stage comes from the stored entry.
"""
from __future__ import annotations

import subprocess
import sys
import tempfile
from typing import Optional

from .. import ir
from . import pipeline
from .explain import format_table
from .pipeline import STAGE_COUNTS
from .stages import Compiled, Lowered, Traced
from ..options import CompileOptions

__all__ = ["CompiledKernel", "STAGE_COUNTS"]


class CompiledKernel:
    """A traced, specialized kernel. ``abi``: [(slot name, ir type)]; ``specs``: the parameter
    Specs that produced it (see ``explain``); ``name``: the PTX entry symbol. Launch it without
    its Kernel with ``ck[grid, block](*args)`` (GPU only; see warpstage/jit/loaded.py)."""

    def __init__(self, name: str, module: Optional[ir.Module], abi: list, specs: list,
                 param_names: list, options: CompileOptions, block: tuple, timings: dict,
                 guards=(), *, traced: Optional[Traced] = None, lowered: Optional[Lowered] = None,
                 compiled: Optional[Compiled] = None, stored_lowered=None):
        if traced is None:
            smem = module.kernels[0].attrs.get("dynamic_smem", 0) if module else 0
            traced = Traced(name, module, tuple(abi), tuple(block), smem)
        self.traced = traced
        self.name = name
        self.module = traced.module
        self.abi = abi
        self.specs = specs
        self.param_names = param_names
        self.options = options
        self.block = block
        self.timings = dict(timings)
        self.guards = guards
        self._lowered = lowered
        self._stored_lowered = stored_lowered   # makes ``lowered`` from a disk entry (persist.py)
        self._compiled = compiled
        self._beside: list = []     # work for the next stage's wait on LLVM or ptxas (beside)
        self._cuda = None       # device 0's Executable (module handle, function handle, Launcher)
        self._devices: dict = {}    # device ordinal -> its Executable
        # bytes of dynamic shared memory the kernel's ws.smem.allocate calls need (the launch
        # passes at least this much)
        self.dynamic_smem = traced.dynamic_smem
        self.pointer_slots = tuple(i for i, (_, t) in enumerate(abi) if isinstance(t, ir.PointerType))
        self._host_params = None                # stored host-argument descriptors (loaded.py)
        self._stored: Optional[dict] = None     # the entry this was read from (persist.py)
        self._sass = None       # (tool, cubin, its SASS text): ``sass`` of this cubin

    # -- stages ------------------------------------------------------------------------------
    @property
    def lowered(self) -> Lowered:
        """The backend's stage: LLVM IR and PTX (made on first use; read from the disk entry
        for a disk hit, whose LLVM IR is read only then)."""
        if self._lowered is None:
            if self._stored_lowered is not None:
                self._lowered = self._stored_lowered()
            else:
                self._lowered = pipeline.lower(self.traced, self.options, self.timings,
                                               self._take_beside())
        return self._lowered

    @property
    def compiled(self) -> Compiled:
        """ptxas' stage: the cubin and its report (``result`` None without ptxas)."""
        if self._compiled is None:
            lowered = self.lowered
            self._compiled = pipeline.assemble(lowered, self.options, self.timings,
                                               self._take_beside())
        return self._compiled

    def beside(self, work) -> None:
        """Run ``work()`` (no arguments; its result unused, its errors ignored: it fills a cache
        that its own caller reads again) in a thread while the next stage to run waits on
        LLVM's C code or the ptxas process (``pipeline.beside``), where the GIL is free; run
        nowhere when no such stage is left (the caller then computes what it wanted itself)."""
        self._beside.append(work)

    def _take_beside(self) -> list:
        work, self._beside = self._beside, []
        return work

    @property
    def ir(self) -> str:
        """The IR as MLIR-like text (stored text for a kernel from the disk cache or ws.load)."""
        try:
            return self.traced.text
        except Exception as e:
            self._users_error(e, sys._getframe(1))
            raise

    @property
    def llvm_ir(self) -> str:
        """LLVM IR text for nvptx64-nvidia-cuda."""
        try:
            return self.lowered.llvm_ir
        except Exception as e:
            self._users_error(e, sys._getframe(1))
            raise

    def _users_error(self, e: Exception, caller) -> None:
        """Filter ``e`` as a public entry does (jit/tracebacks.py) when the user's code asked
        for the text (``caller``'s frame is not warpstage's; a disk hit's texts made again may
        fail: persist._texts_again)."""
        from .tracebacks import _in_package, _keep_frames, _user_error
        if not (_in_package(caller.f_code.co_filename) or _keep_frames()
                or self.options.compiler_frames):
            _user_error(e)

    @property
    def ptx(self) -> str:
        """PTX assembly for ``options.arch`` (sm_90a)."""
        return self.lowered.ptx

    def _assemble(self):
        return self.compiled.result

    @property
    def cubin(self) -> Optional[bytes]:
        """The cubin (ELF) from ptxas, or None when no ptxas is installed (the driver then
        compiles the PTX at load)."""
        r = self._assemble()
        return r.cubin if r else None

    @property
    def resources(self):
        """ptxas' report for the entry: registers, shared_bytes, spill_stores, spill_loads,
        stack_frame (None without ptxas)."""
        r = self._assemble()
        return r.resources.get(self.name) if r else None

    @property
    def registers(self) -> Optional[int]:
        res = self.resources
        return res.registers if res else None

    @property
    def ptxas_log(self) -> str:
        r = self._assemble()
        return r.log if r else ""

    @property
    def sass(self) -> Optional[str]:
        """SASS from nvdisasm (or cuobjdump), None when neither is installed (the
        ``nvidia-cuda-nvdisasm`` wheel of the ``test`` extra, a CUDA toolkit, or PATH). The
        disassembly of a cubin takes up to a second of CPU (a GEMM's, ~70 KB of text), so it
        is kept: read again, it is the same text, unless the tool found has changed. nvdisasm
        runs with ``-ndf`` (no dataflow analysis): that pass only infers the targets of jumps
        through the branch stack, which sm_90 code has none of, and costs a third to a half
        of nvdisasm's CPU; the text is byte-identical (docs/compile-time.md, "SASS on
        demand")."""
        cubin = self.cubin
        if cubin is None:
            return None
        from ..backend.ptxas_tool import find_cuda_tool
        tool = find_cuda_tool("nvdisasm") or find_cuda_tool("cuobjdump")
        if tool is None:
            return None
        kept = self._sass
        if kept is not None and kept[0] == tool and kept[1] is cubin:
            return kept[2]
        with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
            f.write(cubin)
            f.flush()
            args = [tool, "-ndf", f.name] if tool.endswith("nvdisasm") else \
                [tool, "--dump-sass", f.name]
            text = subprocess.run(args, capture_output=True, text=True).stdout
        self._sass = (tool, cubin, text)
        return text

    def explain(self) -> str:
        """The binding-time table of this specialization (see ws.explain)."""
        return format_table(self.name, self.specs, self.param_names)

    def save(self, path) -> None:
        """Write this kernel (PTX, cubin, ABI, explain rows, host-argument descriptors) to the
        file ``path``; ``ws.load(path)`` reads it back in any process. Raises UnsupportedError
        for a parameter binding with no stored form, OSError if ``path`` cannot be written."""
        from .cache.persist import save
        save(self, path)

    # -- execution ---------------------------------------------------------------------------
    def __getitem__(self, config):
        """``ck[grid, block]`` or ``ck[grid, block, smem_bytes, stream]``: a launcher taking the
        kernel's host arguments (checked against this specialization). GPU only."""
        from .loaded import StoredLaunch
        return StoredLaunch(self, config)

    def cuda_launcher(self, device: int = 0):
        """(function handle, Launcher) on GPU ``device`` (an ordinal), loading the module into
        that device's primary context once (one module per device and context; the compiled
        code, in memory and on disk, is shared by every device of the architecture). Raises
        ``DeviceError`` when the device's architecture is not the one compiled for."""
        entry = self._devices.get(device)
        if entry is None:
            entry = self._devices[device] = self._load(device)
            if device == 0:
                self._cuda = entry
        return entry[1], entry[2]

    def _load(self, device: int):
        from ..runtime.target import device_properties
        props = device_properties(device)
        if not _runs_on(self.options.arch, props.cc_major, props.cc_minor):
            from ..errors import DeviceError
            raise DeviceError(
                f"kernel {self.name} was compiled for {self.options.arch}; its tensors are on "
                f"cuda:{device} ({props.name}, {props.arch}), which cannot run it. Fix: compile "
                f"with arch='{props.arch}' (ws.kernel(arch=...)), or use a GPU of the "
                f"architecture compiled for.")
        return pipeline.load(self.compiled, self.abi, self.timings, device=device)

    def __repr__(self) -> str:
        return f"<CompiledKernel {self.name} block={self.block} slots={len(self.abi)}>"


def _runs_on(arch: str, major: int, minor: int) -> bool:
    """Whether a cubin for ``arch`` ('sm_90a', 'sm_80') runs on compute capability
    ``major.minor``: an 'a' (architecture-specific) target on exactly that one, else on the same
    major with an equal or higher minor (CUDA C Programming Guide, "Binary Compatibility")."""
    digits = arch[3:].rstrip("a")
    if not digits.isdigit() or len(digits) < 2:
        return True                     # not ours to judge: the driver's load error says it
    want_major, want_minor = int(digits[:-1]), int(digits[-1])
    if arch.endswith("a"):
        return (want_major, want_minor) == (major, minor)
    return want_major == major and want_minor <= minor
