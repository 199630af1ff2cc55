"""A pretend GPU for launch-layer tests (tests/jit/test_fast_call.py,
tests/runtime/test_tma_launch.py): CPU torch tensors pose as tensors on cuda:0 (``is_cuda`` and
``get_device`` patched on torch.Tensor; a tensor with ``_test_device`` set reports that device,
-1 for the CPU), the target is forced to 'cuda', kernels are traced but not assembled, TMA
descriptors are "encoded" by :func:`fake_encode`, and the driver's launch is replaced by a
recorder: each launch records (compiled key, grid, block, smem, stream, the packed parameter
values), those of prepared launches and op plans (``BoundLaunch.launch``) and of the C call
path (warpstage/jit/c_call.py) too, decoded from what the driver entry received (also kept in
``C_LAUNCHES``).

Without torch (``install(monkeypatch, None)``), :class:`FakeCudaArray` is the tensor on the pretend
cuda:0: a numpy array's memory behind ``__cuda_array_interface__``, as cupy exposes it.

The driver call is libcuda's C entry as runtime/raw_launch.py calls it, replaced by
:func:`fake_cu_launch_kernel`, which reads the ``void*[]`` it is given the way the driver does and
records what the kernel would receive in ``DRIVER_LAUNCHES``.

Two pretend GPUs of one architecture, cuda:0 and cuda:1: each has its own modules (a Launcher per
device and compiled kernel) and current stream (``RAW_STREAM + index``); ``CURRENT`` is the
calling thread's current device, and a launch of a function of another device fails as the
driver's does (CUDA_ERROR_INVALID_HANDLE) unless its device's context is pushed
(``driver.on_device``), which ``PUSHES`` counts."""
import contextlib
import ctypes
import hashlib
import types

from warpstage.jit.cache import persist
from warpstage.errors import DeviceError
from warpstage.jit.compiled import CompiledKernel
from warpstage.ir.types import TensorMapType
from warpstage.runtime import driver, launcher as launcher_module, raw_launch
from warpstage.runtime import target as target_module
from warpstage.runtime import tensormap

RAW_STREAM = 0x5000
LIMITS = launcher_module.LaunchLimits(1024, (1024, 1024, 64), (2 ** 31 - 1, 65535, 65535),
                                      232448, 1024, 32)
ENCODED = []                          # the descriptors encoded (by fake_encode), in order
REPLACED = []                         # those of them made from another's map (fake_replace)
_DIGESTS = {}                         # fake_encode's maps -> their descriptors
DRIVER_LAUNCHES = []                  # what fake_cu_launch_kernel received, decoded
C_LAUNCHES = []                       # those of them the C call path made (jit/c_call.py)
_RECORDER = [[]]                      # the launches list of the current install()
_LAUNCHERS = {}                       # pretend CUfunction address -> its Launcher
CURRENT = [0]                         # the device whose context is current on the thread
PUSHES = []                           # the devices on_device pushed, in order
DEVICES = 2


class FakeCudaArray:
    """A torch-free tensor on a pretend GPU (``device`` ordinal): ``__cuda_array_interface__``
    (version 3) over the memory of the numpy array ``array``, strides in bytes as cupy gives."""

    def __init__(self, array, device: int = 0):
        self.array = array
        self.device = types.SimpleNamespace(id=device)

    @property
    def __cuda_array_interface__(self):
        a = self.array
        return {"shape": a.shape, "typestr": a.dtype.str, "data": (a.ctypes.data, False),
                "strides": None if a.flags.c_contiguous else a.strides, "version": 3}

    def __getitem__(self, index):
        return FakeCudaArray(self.array[index], self.device.id)


_DLTENSOR = b"dltensor"
_capsule_new = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p,
                                 ctypes.c_void_p)(("PyCapsule_New", ctypes.pythonapi))
_DL_DTYPES = {"float32": (2, 32), "float16": (2, 16), "int32": (0, 32), "int64": (0, 64)}


def fake_dlpack_capsule(array, keep: list):
    """A 'dltensor' capsule (no destructor) describing ``array``'s memory as on CUDA device 0;
    what it points to is appended to ``keep``, which must outlive the capsule."""
    from warpstage.runtime.tensors import _DLManagedTensor
    m = _DLManagedTensor()
    t = m.dl_tensor
    t.data = array.ctypes.data
    t.device.device_type, t.device.device_id = 2, 0
    t.ndim = array.ndim
    (t.dtype.code, t.dtype.bits), t.dtype.lanes = _DL_DTYPES[array.dtype.name], 1
    shape = (ctypes.c_int64 * array.ndim)(*array.shape)
    strides = (ctypes.c_int64 * array.ndim)(*[s // array.itemsize for s in array.strides])
    t.shape = ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64))
    t.strides = ctypes.cast(strides, ctypes.POINTER(ctypes.c_int64))
    keep.extend([m, shape, strides, array])
    return _capsule_new(ctypes.addressof(m), _DLTENSOR, None)


def fake_cu_launch_kernel(function, gx, gy, gz, bx, by, bz, smem, stream, params, extra):
    """cuLaunchKernel as the driver sees it: C values only (runtime/raw_launch.py); reads each
    kernelParams[i] pointer and unpacks the parameter bytes there."""
    launcher = _LAUNCHERS[function.value]
    if launcher.device != CURRENT[0]:
        return 400                    # CUDA_ERROR_INVALID_HANDLE: another context's function
    n = len(launcher.param_offsets)
    values = ()
    if n:
        slots = ctypes.cast(params, ctypes.POINTER(ctypes.c_void_p))
        base = slots[0] - launcher.param_offsets[0]
        for i, off in enumerate(launcher.param_offsets):     # every pointer into one buffer
            assert slots[i] == base + off
        values = launcher._struct.unpack(ctypes.string_at(base, launcher._struct.size))
    for d in (gx, gy, gz, bx, by, bz, smem):
        assert type(d) is int and 0 <= d < 2 ** 31
    assert extra is None
    DRIVER_LAUNCHES.append(((gx, gy, gz), (bx, by, bz), smem, stream.value if stream else 0,
                            values, launcher.device))
    return 0


@contextlib.contextmanager
def fake_on_device(ordinal):
    """driver.on_device on the pretend GPUs: makes ``ordinal`` current for the body."""
    if not 0 <= ordinal < DEVICES:
        raise DeviceError(f"CUDA device {ordinal} does not exist; this machine has {DEVICES} "
                          f"device(s), numbered 0..{DEVICES - 1}")
    before = CURRENT[0]
    if before != ordinal:
        PUSHES.append(ordinal)
    CURRENT[0] = ordinal
    try:
        yield None
    finally:
        CURRENT[0] = before


def fake_encode(desc):
    """A stand-in for cuTensorMapEncodeTiled: 128 bytes that depend on everything the real map
    holds (address, sizes, strides, dtype, box, swizzle, traversal, fill, L2 promotion)."""
    ENCODED.append(desc)
    text = repr((desc.tensor_arg.data_ptr, desc.shape, desc.strides, desc.dtype.name, desc.box,
                 desc.swizzle, desc.element_strides, desc.oob_fill, desc.l2_promotion))
    digest = hashlib.sha512(text.encode()).digest() * 2
    _DIGESTS[digest] = desc
    return digest


def fake_replace(template, desc):
    """A stand-in for cuTensorMapReplaceAddress (runtime/tensormap._replace_address): checks that
    ``template`` is the map of ``desc``'s geometry at some address (one :func:`fake_encode` made),
    records ``desc`` in ``REPLACED`` and returns its map (as :func:`fake_encode`, which records
    it in ``ENCODED`` too)."""
    d = _DIGESTS.get(template)
    assert d is not None and (d.shape, d.strides, d.dtype, d.box, d.swizzle) == (
        desc.shape, desc.strides, desc.dtype, desc.box, desc.swizzle), \
        "the template is no map of this geometry"
    REPLACED.append(desc)
    return fake_encode(desc)


class _FakeDriver:
    def cuLaunchKernel(self, *args):
        return (0,)

    def CUstream(self, handle):
        return ("stream", handle)


def install(monkeypatch, torch) -> list:
    """Patch everything (undone by ``monkeypatch``); returns the list of recorded launches.
    ``torch`` None: no torch patches (the tensors are :class:`FakeCudaArray`)."""
    if torch is not None:
        monkeypatch.setattr(torch.Tensor, "is_cuda", property(
            lambda self: getattr(self, "_test_device", 0) >= 0), raising=False)
        monkeypatch.setattr(torch.Tensor, "get_device",
                            lambda self: getattr(self, "_test_device", 0), raising=False)
        monkeypatch.setattr(torch._C, "_cuda_getCurrentRawStream",
                            lambda index: RAW_STREAM + index, raising=False)
    monkeypatch.setattr(raw_launch, "_fn", fake_cu_launch_kernel)
    del DRIVER_LAUNCHES[:]
    monkeypatch.setattr(target_module, "_override", "cuda")
    for index in range(DEVICES):                                    # H200s
        monkeypatch.setitem(target_module._properties, index, types.SimpleNamespace(
            sm_count=132, cc_major=9, cc_minor=0, compute_capability=(9, 0), arch="sm_90a",
            name="pretend GPU", max_smem_per_block_optin=232448))
    monkeypatch.setattr(persist, "lookup", lambda *a, **k: None)
    monkeypatch.setattr(persist, "store", lambda *a, **k: False)
    monkeypatch.setattr(driver, "cuda", lambda: _FakeDriver())
    monkeypatch.setattr(driver, "device_count", lambda: DEVICES)
    monkeypatch.setattr(driver, "context", lambda: None)
    monkeypatch.setattr(driver, "ensure_context", lambda ordinal=0: None)
    monkeypatch.setattr(driver, "on_device", fake_on_device)
    CURRENT[0] = 0
    del PUSHES[:]
    monkeypatch.setattr(driver, "set_max_dynamic_smem", lambda function, nbytes, device=0: None)
    monkeypatch.setattr(tensormap, "_encode_tiled", fake_encode)
    monkeypatch.setattr(tensormap, "_replace_address", fake_replace)
    del ENCODED[:], REPLACED[:]
    _DIGESTS.clear()
    from warpstage.jit import c_env
    if torch is not None:                           # the C path reads torch tensors only
        c_env.stub_address()                        # compiled now, not in the background
    monkeypatch.setattr(c_env, "_override", fake_c_environment if torch is not None else
                        (lambda torch: None))

    def cuda_launcher(self, device=0):
        if device not in self._devices:
            if not 0 <= device < DEVICES:
                raise DeviceError(f"CUDA device {device} does not exist")
            params = [ctypes.c_ubyte * 128 if isinstance(t, TensorMapType) else t  # as pipeline.load
                      for _, t in self.abi]
            launcher = launcher_module.Launcher(0x7000 + 64 * len(_LAUNCHERS), params,
                                                limits=LIMITS, device=device)
            _LAUNCHERS[launcher.handle] = launcher
            launcher.ck = self
            self._devices[device] = (None, None, launcher)
            if device == 0:
                self._cuda = self._devices[0]
        return None, self._devices[device][2]
    monkeypatch.setattr(CompiledKernel, "cuda_launcher", cuda_launcher)
    launches = _RECORDER[0] = []
    del C_LAUNCHES[:]
    real_launch = launcher_module.Launcher.launch

    def launch(self, grid, block, smem, stream, values):
        launches.append((self.ck, grid, block, smem, stream, tuple(values)))
        return real_launch(self, grid, block, smem, stream, values)
    monkeypatch.setattr(launcher_module.Launcher, "launch", launch)

    def bound_launch(self, stream):             # a prepared launch or an op plan's, from Python
        launcher = self.launcher
        values = launcher._struct.unpack(bytes(self.slot[0])[:launcher._struct.size])
        launches.append((launcher.ck, self.dims[:3], self.dims[3:], self.smem, stream, values))
        return real_bound_launch(self, stream)
    real_bound_launch = launcher_module.BoundLaunch.launch
    monkeypatch.setattr(launcher_module.BoundLaunch, "launch", bound_launch)
    from warpstage.ops import descriptors, op_plans
    monkeypatch.setattr(op_plans, "_PLANS", {})     # no plan of another test's pretend GPU
    monkeypatch.setattr(descriptors, "_DESCRIPTORS", {})     # nor its kept descriptors
    return launches


_DL_READ = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_void_p)
_DL_STREAM = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int32, ctypes.c_int32, ctypes.c_void_p)


def fake_c_environment(torch):
    """The C call path's environment on the pretend GPU (warpstage/jit/c_env.py): torch's real
    DLPack reader for CPU tensors, through a callback that reports a tensor's ``_test_device``
    (-1: not a GPU tensor) as its device, kDLCPU counted as the GPU's device type, and torch's
    (patched) current raw stream."""
    from warpstage.jit import c_env
    real = c_env._override
    c_env._override = None
    try:
        env = c_env.environment(torch)
    finally:
        c_env._override = real
    if env is None:
        return None
    read = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)(env.dltensor)

    def dltensor(obj, out):
        rc = read(id(obj), out)
        device = getattr(obj, "_test_device", 0)
        if rc == 0 and device != 0:
            fields = (ctypes.c_int32 * 4).from_address(out + 8)
            if device < 0:
                fields[0] = 99                      # not the GPU's device type
            else:
                fields[1] = device
        return rc

    def stream(device_type, device_id, out):
        ctypes.c_void_p.from_address(out).value = torch._C._cuda_getCurrentRawStream(device_id)
        return 0

    def launch(f, gx, gy, gz, bx, by, bz, smem, stream, params, extra):
        rc = raw_launch.launch_function()(ctypes.c_void_p(f), gx, gy, gz, bx, by, bz, smem,
                                          ctypes.c_void_p(stream) if stream else None,
                                          ctypes.c_void_p(params), None)
        if rc == 0:                         # recorded as Launcher.launch records
            grid, block, smem, stream, values, _ = DRIVER_LAUNCHES[-1]
            C_LAUNCHES.append(DRIVER_LAUNCHES[-1])
            _RECORDER[0].append((_LAUNCHERS[f].ck, grid, block, smem, stream, values))
        return rc

    callbacks = (_DL_READ(dltensor), _DL_STREAM(stream), c_env.LAUNCH_TYPE(launch))
    addresses = [ctypes.cast(c, ctypes.c_void_p).value for c in callbacks]
    return c_env.Environment(*addresses[:2], c_env.KDL_CPU, env.torch_type,
                             c_env.tensor_checks(torch), keep=callbacks + env.keep,
                             launch_fn=addresses[2])


def key_of(kern, ck):
    """The cache key under which ``kern`` holds the compiled kernel ``ck``."""
    return next(key for key, entry in kern._cache.items() if entry is ck)


def twin(fn, **options):
    """``fn`` as a second kernel with the generated (and C) call paths switched off: the full
    path on every call, the reference of the call-by-call comparisons."""
    import warpstage as ws
    from warpstage.jit import kernel as api
    k = ws.kernel(fn, **options)
    k._launch_type = api._Launch
    return k


def run(kern, launches, config, args):
    """Launch and return what was launched (``launches``: install()'s list), the compiled
    kernel given as its cache key."""
    n = len(launches)
    kern[config](*args)
    assert len(launches) == n + 1
    ck, *rest = launches[-1]
    return (key_of(kern, ck), *rest)


def compare_call_by_call(fn, pool: dict, configs, launches, seed: int, calls: int) -> int:
    """Launch ``fn`` as a kernel with every call path on and as :func:`twin`, ``calls`` times
    with arguments drawn from ``pool`` (parameter name -> candidate values, in parameter order)
    and a configuration from ``configs``; each call twice (a new call signature, then a hit);
    assert each launch equals the full path's and both traced alike. Returns the number of
    launches the C path made."""
    import numpy as np
    import warpstage as ws
    rng = np.random.default_rng(seed)
    fast, full = ws.kernel(fn), twin(fn)
    before = len(C_LAUNCHES)
    for _ in range(calls):
        args = tuple(values[rng.integers(len(values))] for values in pool.values())
        config = configs[rng.integers(len(configs))]
        expected = run(full, launches, config, args)
        for _ in range(2):
            assert run(fast, launches, config, args) == expected, args
    assert fast.trace_count == full.trace_count
    assert fast._fast.memo, "the generated path never took a call"
    return len(C_LAUNCHES) - before
