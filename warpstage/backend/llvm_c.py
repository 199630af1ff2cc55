"""The LLVM entry points PTX emission needs, bound directly to llvmlite's shared library.

``backend/ptx.py`` parses LLVM IR text, verifies it, runs the new pass manager's default
pipeline (``buildPerModuleDefaultPipeline``) and prints PTX through the NVPTX TargetMachine.
llvmlite's Python package reaches those through ``llvmlite.binding``, whose import executes
~20 modules that declare the ctypes signatures of ~300 ``LLVMPY_*`` functions: 65-80 ms CPU on
the CI host, paid by every process's first compile, where the ``dlopen`` of ``libllvmlite.so``
itself is ~9 ms. :class:`Direct` declares only the 33 functions emission calls (the
light pipeline's module pass manager and its four passes among them), with the
signatures of llvmlite's C++ shims (``ffi/module.cpp``, ``targets.cpp``, ``newpassmanagers.cpp``,
``initfini.cpp``) as llvmlite 0.50 declares them, and calls them in the order
``llvmlite.binding`` does, so the PTX is byte for byte the same (tests/backend/test_llvm_c.py).

Loading (``api()``) may run in a thread while the caller imports the lowering: the ``dlopen`` is
a ctypes call, which releases the GIL (``backend/ptx.load_llvm``).

A wrong signature would crash the process rather than raise, so the direct binding is used only
for the llvmlite versions in :data:`CHECKED` (read from ``llvmlite/_version.py``, which does not
load the library); any other version goes through :class:`ThroughLlvmlite`, the same three
operations over ``llvmlite.binding``. Both load the same library (one ``dlopen``, one LLVM).

The host JIT (``host_object``, ``load_host_object``: the launch stub of backend/host_stub.py)
compiles x86-64 object code from IR in an LLVM context of its own and loads object code into
an MCJIT engine (``MCJITAddObjectFile``: no IR is parsed, nothing is compiled again), through
the same library, so that the launch path never imports ``llvmlite.binding`` either.

Not thread-safe: ``backend/ptx.py`` serializes every emission under its lock; the host JIT's
calls use their own context and engine and may run beside an emission.
"""
from __future__ import annotations

import ctypes
import functools
import os
import platform
from ctypes import POINTER, c_bool, c_char_p, c_int, c_size_t, c_uint, c_uint64, c_void_p

from .llvm_paths import library_path, llvmlite_version, version_file

__all__ = ["api", "library_path", "version_file", "llvmlite_version", "checked_release",
           "Direct", "ThroughLlvmlite", "HostCode", "CHECKED", "ELF_MAGIC", "LIGHT_PASSES"]

LIGHT_PASSES = ("AlwaysInliner", "SROA", "InstCombine", "SimplifyCFG")
"""The module passes of the 'light' pipeline, in order (``CompileOptions.llvm_pipeline``): inline
the ``alwaysinline`` device functions, then scalar replacement of the out-pointer slots, one
InstCombine and one SimplifyCFG over the inlined kernel. What O3 does beyond them (IPSCCP,
EarlyCSE, GVN, correlated propagation, LICM, the loop passes) our traced IR mostly needs no more
(CSE, DCE and the address split ran in ``passes/``, and with this pipeline loop-invariant code
motion too, ``passes/licm.py``); docs/compile-time.md, 18. and 20., says what it saves and what
it changes."""

CHECKED = ("0.50",)
"""llvmlite releases (major.minor) whose C signatures :class:`Direct` was checked against."""

_P = c_void_p
_OUT = POINTER(c_char_p)
_SIGNATURES = {
    # name: (argument types, result type); ``_OUT`` is a ``char**`` message LLVM allocates
    "LLVMPY_GetVersionInfo": ((), c_uint),
    "LLVMPY_InitializeAllTargetInfos": ((), None),
    "LLVMPY_InitializeAllTargets": ((), None),
    "LLVMPY_InitializeAllTargetMCs": ((), None),
    "LLVMPY_InitializeAllAsmPrinters": ((), None),
    "LLVMPY_DisposeString": ((c_char_p,), None),
    "LLVMPY_GetGlobalContext": ((), _P),
    "LLVMPY_ParseAssembly": ((_P, c_char_p, _OUT), _P),
    "LLVMPY_VerifyModule": ((_P, _OUT), c_bool),
    "LLVMPY_DisposeModule": ((_P,), None),
    "LLVMPY_SetTarget": ((_P, c_char_p), None),
    "LLVMPY_SetDataLayout": ((_P, c_char_p), None),
    "LLVMPY_GetTargetFromTriple": ((c_char_p, _OUT), _P),
    # target, triple, cpu, features, opt level, reloc, code model, printmc, jit, ABI name
    "LLVMPY_CreateTargetMachine": ((_P, c_char_p, c_char_p, c_char_p, c_int, c_char_p, c_char_p,
                                    c_int, c_int, c_char_p), _P),
    "LLVMPY_CreateTargetMachineData": ((_P,), _P),
    "LLVMPY_CopyStringRepOfTargetData": ((_P, _OUT), None),
    "LLVMPY_DisposeTargetData": ((_P,), None),
    "LLVMPY_CreatePipelineTuningOptions": ((), _P),
    "LLVMPY_DisposePipelineTuningOptions": ((_P,), None),
    "LLVMPY_CreatePassBuilder": ((_P, _P), _P),
    "LLVMPY_DisposePassBuilder": ((_P,), None),
    "LLVMPY_buildPerModuleDefaultPipeline": ((_P, c_int), _P),
    "LLVMPY_RunNewModulePassManager": ((_P, _P, _P), None),
    "LLVMPY_DisposeNewModulePassManger": ((_P,), None),    # sic: llvmlite's spelling
    "LLVMPY_CreateNewModulePassManager": ((), _P),
    "LLVMPY_module_AddAlwaysInlinerPass": ((_P,), None),
    "LLVMPY_module_AddSROAPass": ((_P,), None),
    "LLVMPY_module_AddInstCombinePass": ((_P,), None),
    "LLVMPY_module_AddSimplifyCFGPass": ((_P,), None),
    "LLVMPY_TargetMachineEmitToMemory": ((_P, _P, c_int, _OUT), _P),
    "LLVMPY_GetBufferStart": ((_P,), c_void_p),
    "LLVMPY_GetBufferSize": ((_P,), c_size_t),
    "LLVMPY_DisposeMemoryBuffer": ((_P,), None),
    # the host JIT (ffi/executionengine.cpp, object_file.cpp, dylib.cpp, context.cpp)
    "LLVMPY_ContextCreate": ((), _P),
    "LLVMPY_ContextDispose": ((_P,), None),
    "LLVMPY_GetDefaultTargetTriple": ((_OUT,), None),
    "LLVMPY_AddSymbol": ((c_char_p, c_void_p), None),
    # module (owned by the engine), target machine (owned by the engine), use llvmlite's
    # memory manager, error message
    "LLVMPY_CreateMCJITCompiler": ((_P, _P, c_bool, _OUT), _P),
    "LLVMPY_CreateObjectFile": ((c_char_p, c_size_t), _P),
    "LLVMPY_DisposeObjectFile": ((_P,), None),
    "LLVMPY_MCJITAddObjectFile": ((_P, _P), None),
    "LLVMPY_FinalizeObject": ((_P,), None),
    "LLVMPY_GetFunctionAddress": ((_P, c_char_p), c_uint64),
    "LLVMPY_GetGlobalValueAddress": ((_P, c_char_p), c_uint64),
}

ELF_MAGIC = b"\x7fELF"
"""How the host JIT's object code begins (an ELF relocatable object: Linux hosts)."""


def _dlopen(path: bytes, mode: int):
    libc = ctypes.CDLL(None)
    fn = libc.dlopen
    fn.argtypes, fn.restype = [c_char_p, c_int], c_void_p
    return fn(path, mode)


def _checked(version: str | None) -> bool:
    return version is not None and ".".join(version.split(".")[:2]) in CHECKED


def checked_release() -> bool:
    """Whether the installed llvmlite is a release in ``CHECKED``: the ones whose C shims this
    module calls directly and whose ``llvmlite.ir`` internals ``llvm_text`` prints with."""
    return _checked(llvmlite_version())


@functools.lru_cache(maxsize=None)
def api():
    """The binding to use: :class:`Direct` for a checked llvmlite release with its library
    found, else :class:`ThroughLlvmlite`. Built once per process (the first loads libLLVM)."""
    path = library_path()
    if path is not None and _checked(llvmlite_version()):
        return Direct(path)
    return ThroughLlvmlite()


class Direct:
    """The entry points of ``_SIGNATURES`` on the library at ``path`` (``ctypes.CDLL``: the
    GIL is released during each call). Handles are ``void*`` ints; each is disposed by the
    method that made it, except target machines, which live as long as the process."""

    def __init__(self, path: str):
        # dlopen through a ctypes call, which releases the GIL for the ~10 ms it takes (the
        # relocations of a 180 MB library), where ``ctypes.CDLL(path)`` would hold it; the
        # CDLL then wraps the handle. Mode as CDLL's default: RTLD_NOW | RTLD_LOCAL.
        handle = _dlopen(path.encode(), os.RTLD_NOW | os.RTLD_LOCAL)
        lib = ctypes.CDLL(path, handle=handle) if handle else ctypes.CDLL(path)
        for name, (args, result) in _SIGNATURES.items():
            fn = getattr(lib, name)
            fn.argtypes, fn.restype = list(args), result
            setattr(self, name[len("LLVMPY_"):], fn)
        self.InitializeAllTargetInfos()
        self.InitializeAllTargets()
        self.InitializeAllTargetMCs()
        self.InitializeAllAsmPrinters()
        self._context = self.GetGlobalContext()

    def _with_message(self, fn, *args) -> tuple:
        """(``fn(*args, &message)``, the message LLVM wrote, '' if none; its string freed)."""
        out = c_char_p()
        result = fn(*args, ctypes.byref(out))
        text = out.value
        if text is not None:
            self.DisposeString(out)
        return result, (text or b"").decode("utf-8", "replace")

    def version(self) -> tuple:
        """LLVM's (major, minor, patch)."""
        x, v = self.GetVersionInfo(), []
        while x:
            v.append(x & 0xFF)
            x >>= 8
        return tuple(reversed(v))

    def target_machine(self, triple: str, cpu: str, features: str, opt: int) -> int:
        """A TargetMachine for ``triple``/``cpu``/``features`` at codegen level ``opt`` (0-3),
        with llvmlite's defaults otherwise (relocation model and code model 'default' and
        'jitdefault', no MC printing, not for a JIT). Raises RuntimeError if LLVM refuses."""
        target, message = self._with_message(self.GetTargetFromTriple, triple.encode())
        if not target:
            raise RuntimeError(message)
        if os.name == "nt":                 # llvmlite's rule for the 'jitdefault' code model
            triple += "-elf"
        tm = self.CreateTargetMachine(target, triple.encode(), cpu.encode(), features.encode(),
                                      opt, b"default", b"jitdefault", 0, 0, b"")
        if not tm:
            raise RuntimeError(f"LLVM cannot create a target machine for {triple} {cpu}")
        return tm

    def data_layout(self, tm: int) -> str:
        """The target machine's data layout string (``e-p:64:64...``)."""
        td = self.CreateTargetMachineData(tm)
        try:
            return self._with_message(self.CopyStringRepOfTargetData, td)[1]
        finally:
            self.DisposeTargetData(td)

    def emit(self, tm: int, llvm_ir: str, triple: str, speed_level: int,
             pipeline: str = "default") -> str:
        """Assembly text (PTX for NVPTX) of the LLVM IR ``llvm_ir``: parsed in the global
        context, verified, given ``triple`` and ``tm``'s data layout, optimized at
        ``speed_level`` (none at 0) by the default per-module pipeline or, with ``pipeline``
        'light', by :data:`LIGHT_PASSES`, and printed by ``tm``. Raises RuntimeError with LLVM's
        message when parsing or verifying fails."""
        return self._emit(self._context, tm, llvm_ir, triple, speed_level, 0,
                          pipeline).decode()

    def _emit(self, context: int, tm: int, llvm_ir: str, triple: str, speed_level: int,
              use_object: int, pipeline: str = "default") -> bytes:
        """``emit``'s steps in ``context``; assembly text (``use_object`` 0) or object code (1)."""
        mod, message = self._with_message(self.ParseAssembly, context, llvm_ir.encode())
        if message or not mod:
            if mod:
                self.DisposeModule(mod)
            raise RuntimeError(f"LLVM IR parsing error\n{message}")
        try:
            broken, message = self._with_message(self.VerifyModule, mod)
            if broken:
                raise RuntimeError(message)
            self.SetTarget(mod, triple.encode())
            self.SetDataLayout(mod, self.data_layout(tm).encode())
            if speed_level > 0:
                self._optimize(tm, mod, speed_level, pipeline)
            buf, message = self._with_message(self.TargetMachineEmitToMemory, tm, mod, use_object)
            if not buf:
                raise RuntimeError(message)
            try:
                return ctypes.string_at(self.GetBufferStart(buf), self.GetBufferSize(buf))
            finally:
                self.DisposeMemoryBuffer(buf)
        finally:
            self.DisposeModule(mod)

    def host_triple(self) -> str:
        """LLVM's default target triple: the host's (``x86_64-unknown-linux-gnu``)."""
        out = c_char_p()
        self.GetDefaultTargetTriple(ctypes.byref(out))
        text = (out.value or b"").decode()
        if out.value is not None:
            self.DisposeString(out)
        return text

    def host_object(self, llvm_ir: str, speed_level: int) -> bytes:
        """Object code for the host (generic CPU, no features beyond the triple's) of the LLVM
        IR ``llvm_ir``, optimized at ``speed_level`` with code generation at that level, in an
        LLVM context of its own (disposed after). Raises RuntimeError with LLVM's message."""
        triple = self.host_triple()
        tm = self.target_machine(triple, "", "", speed_level)
        context = self.ContextCreate()
        try:
            return self._emit(context, tm, llvm_ir, triple, speed_level, 1)
        finally:
            self.ContextDispose(context)

    def load_host_object(self, data: bytes, symbols: dict) -> "HostCode":
        """Load the object code ``data`` (an earlier :meth:`host_object`'s) into a new MCJIT
        engine, its external symbols resolved from ``symbols`` (name -> address) and then the
        process. ``data`` must be one :meth:`host_object` made (LLVM aborts the process on a
        malformed object: the caller checks the disk cache's checksum and :data:`ELF_MAGIC`).
        The engine, its memory and ``data`` live as long as the process. Raises RuntimeError
        when LLVM cannot make the engine."""
        if not data.startswith(ELF_MAGIC):
            raise RuntimeError("not object code of this host (no ELF header)")
        for name, address in symbols.items():
            self.AddSymbol(name.encode(), address)
        triple = self.host_triple()
        context = self.ContextCreate()                  # kept: it holds the engine's module
        mod, message = self._with_message(self.ParseAssembly, context, b"")
        if not mod:
            raise RuntimeError(f"LLVM could not make an empty module ({message})")
        self.SetTarget(mod, triple.encode())
        tm = self.target_machine(triple, "", "", 2)     # owned by the engine from here on
        use_lmm = platform.machine().lower() in ("arm64", "aarch64")     # llvmlite's default
        engine, message = self._with_message(self.CreateMCJITCompiler, mod, tm, use_lmm)
        if not engine:
            raise RuntimeError(f"LLVM could not make an MCJIT engine ({message})")
        obj = self.CreateObjectFile(data, len(data))
        self.MCJITAddObjectFile(engine, obj)            # takes the object; the wrapper stays
        self.DisposeObjectFile(obj)
        self.FinalizeObject(engine)
        return HostCode(self, engine, (context, data))

    def _optimize(self, tm: int, mod: int, speed_level: int, pipeline: str = "default") -> None:
        pto = self.CreatePipelineTuningOptions()
        pb = self.CreatePassBuilder(tm, pto)
        if pipeline == "light":
            mpm = self.CreateNewModulePassManager()
            for name in LIGHT_PASSES:
                getattr(self, f"module_Add{name}Pass")(mpm)
        else:
            mpm = self.buildPerModuleDefaultPipeline(pb, speed_level)
        try:
            self.RunNewModulePassManager(mpm, mod, pb)
        finally:
            self.DisposeNewModulePassManger(mpm)
            self.DisposePassBuilder(pb)
            self.DisposePipelineTuningOptions(pto)


class ThroughLlvmlite:
    """:class:`Direct`'s operations over ``llvmlite.binding`` (any llvmlite release)."""

    def __init__(self):
        import llvmlite.binding as llvm
        self._llvm = llvm
        llvm.initialize_all_targets()
        llvm.initialize_all_asmprinters()

    def version(self) -> tuple:
        return tuple(self._llvm.llvm_version_info)

    def target_machine(self, triple: str, cpu: str, features: str, opt: int):
        target = self._llvm.Target.from_triple(triple)
        return target.create_target_machine(cpu=cpu, features=features, opt=opt)

    def data_layout(self, tm) -> str:
        return str(tm.target_data)

    def emit(self, tm, llvm_ir: str, triple: str, speed_level: int,
             pipeline: str = "default") -> str:
        return tm.emit_assembly(self._module(tm, llvm_ir, triple, speed_level, None, pipeline))

    _LIGHT = {"AlwaysInliner": "add_always_inliner_pass", "SROA": "add_sroa_pass",
              "InstCombine": "add_instruction_combine_pass",
              "SimplifyCFG": "add_simplify_cfg_pass"}

    def _module(self, tm, llvm_ir: str, triple: str, speed_level: int, context=None,
                pipeline: str = "default"):
        llvm = self._llvm
        mod = llvm.parse_assembly(llvm_ir, context)
        mod.verify()
        mod.triple = triple
        mod.data_layout = str(tm.target_data)
        if speed_level > 0:
            pto = llvm.create_pipeline_tuning_options(speed_level=speed_level)
            pb = llvm.create_pass_builder(tm, pto)
            if pipeline == "light":
                mpm = llvm.create_new_module_pass_manager()
                for name in LIGHT_PASSES:
                    getattr(mpm, self._LIGHT[name])()
            else:
                mpm = pb.getModulePassManager()
            mpm.run(mod, pb)
        return mod

    def host_triple(self) -> str:
        return self._llvm.get_default_triple()

    def _host_machine(self, speed_level: int):
        return self._llvm.Target.from_default_triple().create_target_machine(
            opt=speed_level, codemodel="jitdefault")

    def host_object(self, llvm_ir: str, speed_level: int) -> bytes:
        tm = self._host_machine(speed_level)
        mod = self._module(tm, llvm_ir, tm.triple, speed_level, self._llvm.create_context())
        return bytes(tm.emit_object(mod))

    def load_host_object(self, data: bytes, symbols: dict) -> "HostCode":
        llvm = self._llvm
        if not data.startswith(ELF_MAGIC):
            raise RuntimeError("not object code of this host (no ELF header)")
        for name, address in symbols.items():
            llvm.add_symbol(name, address)
        tm = self._host_machine(2)
        mod = llvm.parse_assembly("", llvm.create_context())
        mod.triple = tm.triple
        engine = llvm.create_mcjit_compiler(mod, tm)
        engine.add_object_file(llvm.ObjectFileRef.from_data(data))
        engine.finalize_object()
        return HostCode(None, engine, (data,))


class HostCode:
    """Host code loaded by ``load_host_object``: ``function(name)`` and ``global_value(name)``
    give addresses (0 when absent). Keeps the engine (never disposed: the code must outlive
    every builtin that points into it) and what it was loaded from."""

    def __init__(self, direct, engine, keep):
        self._direct, self.engine, self._keep = direct, engine, keep

    def function(self, name: str) -> int:
        if self._direct is None:
            return self.engine.get_function_address(name)
        return self._direct.GetFunctionAddress(self.engine, name.encode())

    def global_value(self, name: str) -> int:
        if self._direct is None:
            return self.engine.get_global_value_address(name)
        return self._direct.GetGlobalValueAddress(self.engine, name.encode())
