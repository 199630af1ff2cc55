"""What the C-level call path (jit/c_call.py) calls into: the tensor reader and current-stream
query of torch's C DLPack exchange API, the driver's ``cuLaunchKernel``, and the stub itself
(backend/host_stub.py), each as a C function address; and the contexts the stub reads.

torch >= 2.10 publishes ``torch.Tensor.__dlpack_c_exchange_api__``, a capsule named
``dlpack_exchange_api`` holding a ``DLPackExchangeAPI*`` (dlpack.h, DLPack 1.2+: a header
``{uint32 major, uint32 minor; void *prev_api}`` then five function pointers; the fourth,
``dltensor_from_py_object_no_sync``, fills a caller's ``DLTensor`` without allocating, the
fifth, ``current_work_stream``, is ``torch.cuda.current_stream(device)``). The package
``torch-c-dlpack-ext`` (``pip install 'warpstage[fast]'``) adds the same capsule to older torch.
"""
from __future__ import annotations

import ctypes
import sys
import sysconfig
import threading
from typing import Optional

from ..backend import host_stub_ir as layout       # no llvmlite: that is host_stub's
from ..runtime import raw_launch

__all__ = ["Environment", "environment", "unavailable_reason", "stub_address", "stub_ready",
           "stub_loading",
           "object_cache",
           "Context", "make_stub", "make_call", "kernel_getitem",
           "launch_address", "LAUNCH_TYPE", "KDL_CUDA", "KDL_CPU"]

KDL_CPU, KDL_CUDA = 1, 2           # DLDeviceType
LAUNCH_TYPE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, *[ctypes.c_uint] * 7,
                               ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)


class Environment:
    """The C functions a context points at: ``dltensor`` (``int(PyObject*, DLTensor*)``),
    ``stream_fn`` (``int(int32 device_type, int32 device_id, void **stream)``), the device type
    that counts as a GPU (kDLCUDA = 2; the pretend GPU of the tests reads CPU tensors, kDLCPU),
    ``torch_type`` (the address of ``torch.Tensor``), ``checks`` (:func:`tensor_checks`) and
    ``keep`` (objects that must outlive the
    addresses). The driver entry is read per context (:func:`launch_address`) unless
    ``launch_fn`` gives one (tests: a recorder around the pretend driver)."""

    def __init__(self, dltensor: int, stream_fn: int, device_type: int, torch_type: int, checks,
                 keep=(), launch_fn: Optional[int] = None):
        self.dltensor, self.stream_fn, self.device_type = dltensor, stream_fn, device_type
        self.torch_type, self.keep, self.launch_fn = torch_type, tuple(keep), launch_fn
        self.checks = checks                # tensor_checks(): (int64 array, what it points to)


_override = None          # tests: a function torch -> Environment (tests/fake_gpu.py)
_reason = ""


def environment(torch) -> Optional[Environment]:
    """The environment for ``torch`` (the module), or None when the C path cannot run here
    (:func:`unavailable_reason` says why): not CPython with the GIL on x86-64, no exchange API
    capsule, an exchange API of another major version, or a stub LLVM cannot compile."""
    global _reason
    if _override is not None:
        return _override(torch)
    why = _host_reason()
    if why:
        _reason = why
        return None
    capsule = getattr(getattr(torch, "Tensor", None), "__dlpack_c_exchange_api__", None)
    if capsule is None:
        _reason = (f"torch {getattr(torch, '__version__', '?')} has no "
                   "torch.Tensor.__dlpack_c_exchange_api__ (torch >= 2.10, or "
                   "pip install 'warpstage[fast]' for torch-c-dlpack-ext)")
        return None
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    try:
        api = get(capsule, b"dlpack_exchange_api")
    except ValueError as e:
        _reason = f"torch's DLPack exchange capsule could not be read ({e})"
        return None
    words = (ctypes.c_uint32 * 2).from_address(api)
    if words[0] != 1:
        _reason = f"torch's DLPack exchange API is version {words[0]}.{words[1]}; 1.x is read"
        return None
    fns = (ctypes.c_void_p * 7).from_address(api)
    if not fns[5] or not fns[6]:
        _reason = "torch's DLPack exchange API lacks dltensor_from_py_object_no_sync"
        return None
    checks = tensor_checks(torch)
    if checks is None:
        _reason = "torch.Tensor's C getters could not be read (is_nested, dtype, data_ptr)"
        return None
    return Environment(fns[5], fns[6], KDL_CUDA, id(torch.Tensor), checks, keep=(capsule,))


_DTYPES = ("float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8",
           "uint16", "uint32", "uint64", "bool", "complex64", "complex128", "float8_e4m3fn",
           "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu")
_GETTER = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.py_object, ctypes.c_void_p)


def tensor_checks(torch):
    """The stub's tensor checks (host_stub.CHECK_FIELDS) as ``(int64 array, what it points
    to)``: the C getters of ``torch._C.TensorBase`` for ``is_nested`` and ``dtype``, the dtypes
    torch's DLPack export takes, and the C function of ``data_ptr()``. torch's exchange reader
    crashes the process, rather than failing, on a tensor its ``__dlpack__`` refuses (meta,
    sparse, nested, quantized, bits, storage-less wrappers: measured with torch 2.14), so the stub
    asks these first. None when a descriptor is not the C object expected."""
    base = getattr(torch._C, "TensorBase", None)
    if base is None:
        return None
    sample = torch.empty(1)
    nested, dtype = _getset(base, "is_nested"), _getset(base, "dtype")
    if (nested is None or dtype is None or _GETTER(nested[0])(sample, nested[1]) is not False
            or _GETTER(dtype[0])(sample, dtype[1]) is not torch.float32):
        return None
    dtypes = [getattr(torch, name) for name in _DTYPES if hasattr(torch, name)]
    allowed = (ctypes.c_int64 * len(dtypes))(*[id(d) for d in dtypes])
    method = base.__dict__.get("data_ptr")
    if type(method).__name__ != "method_descriptor":
        return None
    definition = ctypes.c_void_p.from_address(id(method) + _DESCR_COMMON).value
    if ctypes.c_int.from_address(definition + 16).value & 0x0004 == 0:     # METH_NOARGS
        return None
    words = [nested[0], nested[1] or 0, id(False), dtype[0], dtype[1] or 0, len(dtypes),
             ctypes.addressof(allowed), ctypes.c_void_p.from_address(definition + 8).value, id(0)]
    array = (ctypes.c_int64 * len(words))(*words)
    return array, allowed, dtypes


_DESCR_COMMON = 40      # PyDescr_COMMON: PyObject_HEAD, d_type, d_name, d_qualname


def _getset(cls, attr: str):
    """(get, closure) of the C getter behind ``cls.attr`` (a getset_descriptor), or None."""
    descriptor = cls.__dict__.get(attr)
    if type(descriptor).__name__ != "getset_descriptor":
        return None
    definition = ctypes.c_void_p.from_address(id(descriptor) + _DESCR_COMMON).value
    get = ctypes.c_void_p.from_address(definition + 8).value
    closure = ctypes.c_void_p.from_address(definition + 32).value
    return (get, closure) if get else None


def unavailable_reason() -> str:
    """Why :func:`environment` returned None ('' when it did not)."""
    return _reason


def _host_reason() -> str:
    if sys.implementation.name != "cpython" or sysconfig.get_config_var("Py_GIL_DISABLED"):
        return "the C path reads CPython's object layout with the GIL; this interpreter differs"
    if ctypes.sizeof(ctypes.c_void_p) != 8:
        return "the C path needs a 64-bit host"
    try:
        stub_address()
    except RuntimeError as e:
        return str(e)
    return ""


def stub_address() -> int:
    """The compiled stub's address, compiling it now (with the disk cache) if needed. Raises
    ``RuntimeError`` when it cannot be compiled here."""
    from ..backend import host_stub
    return host_stub.stub_address(object_cache())


_thread = None
_failed = None            # why the stub could not be compiled


def stub_ready(start: bool = True) -> Optional[bool]:
    """Whether the stub is compiled: True; False while it is not, after starting its compile in
    a daemon thread when ``start`` (importing llvmlite, the disk cache lookup and the compile
    all happen there; launches take the Python path meanwhile); None when it cannot be compiled
    here."""
    global _thread
    host = sys.modules.get(_HOST_STUB)
    if host is not None and getattr(host, "_compiled", None):     # (it may be importing)
        return True
    if _failed is not None:
        return None
    if start and _thread is None:
        thread = threading.Thread(target=_compile_in_background, name="warpstage launch stub",
                                  daemon=True)
        if _thread is None:                 # the GIL: one thread wins the store
            _thread = thread
            thread.start()
    return False


def stub_loading() -> bool:
    """Whether the stub's background load (:func:`stub_ready`) has started and not ended."""
    return _thread is not None and stub_ready(start=False) is False


_HOST_STUB = __name__.rsplit(".", 2)[0] + ".backend.host_stub"


def _compile_in_background() -> None:
    global _failed
    try:
        stub_address()
    except Exception as e:                  # noqa: BLE001 - the C path stays off, saying why
        _failed = str(e)


_cache = None


def object_cache():
    """``(load, store)`` of the stub's object code in warpstage's disk cache (jit/cache/files.py;
    its own key: source, LLVM version, host triple), so that only the first process on a machine
    compiles it."""
    global _cache
    if _cache is None:
        from .cache import files
        from ..backend import host_stub
        key = files.disk_key(host_stub.cache_key_parts())

        def load():
            entry = files.get(key)
            data = entry.get("object") if entry else None
            return data if isinstance(data, bytes) else None

        def store(data):
            files.put(key, {"object": bytes(data)})
        _cache = (load, store)
    return _cache


_ADAPTERS: dict = {}


def launch_address() -> Optional[int]:
    """The C address of the driver entry the Launchers use (runtime/raw_launch.py): libcuda's
    ``cuLaunchKernel``, or, when a test installed a Python callable, a C callback calling it with
    the arguments as ctypes passes them (``c_void_p`` function, stream and params). None without
    an entry."""
    fn = raw_launch.launch_function()
    if fn is None:
        return None
    if isinstance(fn, ctypes._CFuncPtr):
        return ctypes.cast(fn, ctypes.c_void_p).value
    adapter = _ADAPTERS.get(id(fn))
    if adapter is None or adapter[0] is not fn:
        def call(f, gx, gy, gz, bx, by, bz, smem, stream, params, extra):
            return fn(ctypes.c_void_p(f), gx, gy, gz, bx, by, bz, smem,
                      ctypes.c_void_p(stream) if stream else None, ctypes.c_void_p(params), None)
        adapter = _ADAPTERS[id(fn)] = (fn, LAUNCH_TYPE(call))
    return ctypes.cast(adapter[1], ctypes.c_void_p).value


class _MethodDef(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("meth", ctypes.c_void_p), ("flags", ctypes.c_int),
                ("doc", ctypes.c_char_p)]


_METH_FASTCALL, _METH_KEYWORDS = 0x0080, 0x0002
_method_def = _call_def = None


def make_stub(context) -> object:
    """A builtin function calling the stub with ``context`` (an int64 ctypes array) as its
    context: ``stub(*args)`` returns None when it launched, else a miss code (host_stub_ir.MISS).
    The builtin holds only the context's address: keep the context alive while it is used."""
    global _method_def
    if _method_def is None:
        _method_def = _MethodDef(b"warpstage_launch_stub", stub_address(),
                                 _METH_FASTCALL, None)
    new = ctypes.pythonapi.PyCFunction_NewEx
    new.restype, new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.py_object,
                                                   ctypes.py_object]
    return new(ctypes.addressof(_method_def), ctypes.addressof(context), None)


def make_call(context) -> object:
    """A builtin function calling ``ws_launch_call`` (backend/host_stub.call_address) with
    ``context`` as its context: keywords, the target, the context's guard table and the stub in
    C, and on anything but a launch the context's ``fallback`` with the same arguments. It is the
    ``__call__`` of a launch object's class (jit/c_call.py): a builtin is not a descriptor, so
    ``launch(*args)`` calls it with ``args`` alone. ``context``: a :class:`Context`, which the
    builtin keeps alive (its ``self`` is ``(address of the words, context)``)."""
    global _call_def
    if _call_def is None:
        from ..backend import host_stub
        _call_def = _MethodDef(b"warpstage_launch", host_stub.call_address(object_cache()),
                               _METH_FASTCALL | _METH_KEYWORDS, None)
    new = ctypes.pythonapi.PyCFunction_NewEx
    new.restype, new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.py_object,
                                                   ctypes.py_object]
    return new(ctypes.addressof(_call_def), (ctypes.addressof(context.words), context), None)


_getitem = None            # (descriptor, what it reads) once made


def kernel_getitem(cls, fallback, trace_globals):
    """A method descriptor of ``cls`` (jit/kernel.Kernel) for ``__getitem__`` whose body is C
    (backend/host_stub.getitem_addresses): ``kern[config]`` returns ``kern._last_launch[1]`` when
    ``kern._last_launch`` is a pair whose first item equals ``config``, else
    ``kern._launches[config]`` when that dict holds it (one launch object per configuration),
    each only while no trace is active in any thread (``trace_globals["_active"]`` is 0:
    core/trace.py's globals); else ``fallback(kern, config)``. Made once per process; later
    calls return the same descriptor."""
    global _getitem
    if _getitem is None:
        from ..backend import host_stub
        fn, word = host_stub.getitem_addresses(object_cache())
        names = ("_last_launch", "_active", "_launches")
        words = (ctypes.c_int64 * 9)(id(names[0]), id(trace_globals), id(names[1]), id(0),
                                     id(None), id(fallback), id(tuple), id(names[2]), id(dict))
        definition = _MethodDef(b"__getitem__", fn, _METH_FASTCALL,
                                (fallback.__doc__ or "").encode())
        new = ctypes.pythonapi.PyDescr_NewMethod
        new.restype, new.argtypes = ctypes.py_object, [ctypes.py_object, ctypes.c_void_p]
        descriptor = new(cls, ctypes.addressof(definition))
        ctypes.c_void_p.from_address(word).value = ctypes.addressof(words)
        _getitem = (descriptor, words, names, definition, fallback, trace_globals)
    return _getitem[0]


class Context:
    """One stub context (an int64 ctypes array, fields host_stub_ir.CTX_FIELDS) and what it points
    to. ``kinds``: per parameter ``(stub kind code, lo, hi)`` (bounds for integer scalars);
    ``dims``: grid + block, six ints; ``stream``: a fixed stream handle, or None (torch's current
    stream when an entry asks for it, else 0); ``launch_fn``: the driver entry's address;
    ``default_device``: the device of a call without tensors. ``stub`` is the builtin that
    launches with it (:func:`make_stub`)."""

    def __init__(self, env: Environment, kinds, dims, stream: Optional[int], launch_fn: int,
                 default_device: int = 0, dry: bool = False):
        n = len(kinds)
        self.env, self.nparams = env, n
        self.words = ctx = (ctypes.c_int64 * len(layout.CTX_FIELDS))()
        self._arrays = [(ctypes.c_int64 * max(n, 1))(*[k[i] for k in kinds]) for i in range(3)]
        self.scratch = (ctypes.c_int64 * (layout.MAX_FACTS + 1))()
        self.dry_out = (ctypes.c_int64 * (16 + layout.MAX_BUFFER // 8))()
        self.entries: list = []         # (Entry, ...) as published
        self._published = None
        values = dict(dltensor=env.dltensor, stream_fn=env.stream_fn, launch_fn=launch_fn,
                      torch_type=env.torch_type, int_type=id(int), bool_type=id(bool),
                      none=id(None), nparams=n, device_type=env.device_type,
                      has_stream=int(stream is not None), stream=stream or 0,
                      kinds=ctypes.addressof(self._arrays[0]),
                      lo=ctypes.addressof(self._arrays[1]), hi=ctypes.addressof(self._arrays[2]),
                      scratch=ctypes.addressof(self.scratch),
                      dry_out=ctypes.addressof(self.dry_out), default_device=default_device,
                      dry=int(dry), checks=ctypes.addressof(env.checks[0]))
        values.update(zip(("gx", "gy", "gz", "bx", "by", "bz"), dims))
        values.update({name: id(v) for name, v in _TARGET_WORDS.items()})
        for name, v in values.items():
            ctx[_FIELD[name]] = v
        self.stub = make_stub(ctx)
        self._fallback = self._guards = None
        self._call = None

    @property
    def call(self):
        """The builtin of :func:`make_call` for this context (made at first use)."""
        if self._call is None:
            self._call = make_call(self)
        return self._call

    def set_fallback(self, fn) -> None:
        """What ``call`` returns on anything but a launch: ``fn(*args, **kwargs)``, kept alive
        here (the context holds its address). ``reason()`` tells it why (a hint: another thread's
        call may have written it since)."""
        self._fallback = fn
        self.words[_FIELD["fallback"]] = id(fn)

    def reason(self) -> int:
        """The last miss code ``call`` or ``stub`` recorded (host_stub_ir.MISS)."""
        return self.words[_FIELD["last_reason"]]

    def set_guards(self, guards) -> None:
        """The guards ``call`` checks before the stub: ``(holder, name, expected, how)`` each,
        holding when ``holder.get(name)`` (``how`` 0: ``holder`` a dict) or
        ``getattr(holder, name)`` (``how`` 1) is ``expected`` (the objects are kept alive
        here)."""
        table = (ctypes.c_int64 * max(1, 4 * len(guards)))(
            *[w for holder, name, expected, how in guards
              for w in (id(holder), id(name), id(expected), how)])
        self.words[_FIELD["nguards"]] = 0
        self.words[_FIELD["guard_table"]] = ctypes.addressof(table)
        self.words[_FIELD["nguards"]] = len(guards)
        self._guards = (table, list(guards), self._guards)     # older tables stay alive

    def __getitem__(self, name: str) -> int:
        return self.words[_FIELD[name]]

    def publish(self, entries) -> None:
        """Make ``entries`` (a list of :class:`Entry`) the ones the stub matches, in order.
        One store each for the count and the array: a thread inside the stub holds the GIL
        while it reads them, and the old array stays alive (``self.entries``)."""
        words = len(layout.ENTRY_FIELDS)
        table = (ctypes.c_int64 * max(1, words * len(entries)))()
        for i, e in enumerate(entries):
            table[i * words:(i + 1) * words] = e.words
        self.words[_FIELD["nentries"]] = 0
        self.words[_FIELD["entries"]] = ctypes.addressof(table)
        self.words[_FIELD["nentries"]] = len(entries)
        self.entries = list(entries)
        self._published = (table, self._published)     # older tables stay alive

    def dry_run(self, args):
        """The stub on ``args`` without launching (the context must be dry): ``('launch',
        (function, gx, gy, gz, bx, by, bz, smem, stream, device), buffer bytes)`` on a match,
        ``('miss', code, facts)`` otherwise (the facts only for 'no_match')."""
        got = self.stub(*args)
        if got is None:
            out = self.dry_out
            size = out[10]
            return "launch", tuple(out[0:10]), ctypes.string_at(ctypes.addressof(out) + 128, size)
        facts = tuple(self.scratch[1:1 + self.scratch[0]]) \
            if got == layout.MISS["no_match"] else None
        return "miss", got, facts


_FIELD = {name: i for i, name in enumerate(layout.CTX_FIELDS)}


def _target_words() -> dict:
    from ..runtime import target
    return {"target_dict": target.__dict__, "override_key": "_override", "auto_key": "_auto",
            "cuda_str": "cuda"}


_TARGET_WORDS = _target_words()     # what ws_launch_call reads: the target module's globals


class Entry:
    """One specialization the stub can launch (fields host_stub_ir.ENTRY_FIELDS): its ``facts``
    (what the stub reads from matching arguments), the CUfunction address, dynamic shared memory
    bytes, whether it launches on torch's current stream, the packed parameter buffer
    ``template`` (bytes; the per-call values are written over it), the ``void*[]`` slot offsets,
    and per parameter the byte offset (-1: none) and width where its pointer or scalar goes.
    ``template`` may instead be the address of a live buffer of ``size`` bytes (a prepared
    launch's, which ``rebind`` repacks)."""

    def __init__(self, facts, function: int, smem: int, torch_stream: bool, template, offsets,
                 patch, width, size: Optional[int] = None):
        self.launcher = None                    # the Launcher of ``function``, kept alive
        self.facts = tuple(facts)
        self._facts = (ctypes.c_int64 * max(1, len(facts)))(*facts)
        if isinstance(template, int):
            self._template, address = None, template
        else:
            self._template = ctypes.create_string_buffer(bytes(template), max(1, len(template)))
            address, size = ctypes.addressof(self._template), len(template)
        self._offsets = (ctypes.c_int64 * max(1, len(offsets)))(*offsets)
        self._patch = (ctypes.c_int64 * max(1, len(patch)))(*patch)
        self._width = (ctypes.c_int64 * max(1, len(width)))(*width)
        self.words = [len(facts), ctypes.addressof(self._facts), function, smem, int(torch_stream),
                      size, address, len(offsets), ctypes.addressof(self._offsets),
                      ctypes.addressof(self._patch), ctypes.addressof(self._width)]
