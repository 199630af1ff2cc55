"""A pretend GPU for launch-layer tests (tests/frontend/test_fast_call.py,
tests/runtime/test_tma_launch.py): CPU torch tensors pose as tensors on cuda:0 (``is_cuda`` and
``get_device`` patched on torch.Tensor; a tensor with ``_test_device`` set reports that device,
-1 for the CPU), the target is forced to 'cuda', kernels are traced but not assembled, TMA
descriptors are "encoded" by :func:`fake_encode`, and the driver's launch is replaced by a
recorder: each launch records (compiled key, grid, block, smem, stream, the packed parameter
values)."""
import ctypes
import hashlib

from warpstage import persist
from warpstage.compiled import CompiledKernel
from warpstage.ir.types import TensorMapType
from warpstage.runtime import driver, launcher as launcher_module, target as target_module
from warpstage.runtime import tensormap

RAW_STREAM = 0x5000
LIMITS = launcher_module.LaunchLimits(1024, (1024, 1024, 64), (2 ** 31 - 1, 65535, 65535),
                                      232448, 1024, 32)
ENCODED = []                          # the descriptors encoded (by fake_encode), in order


def fake_encode(desc):
    """A stand-in for cuTensorMapEncodeTiled: 128 bytes that depend on everything the real map
    holds (address, sizes, strides, dtype, box, swizzle, traversal, fill, L2 promotion)."""
    ENCODED.append(desc)
    text = repr((desc.tensor_arg.data_ptr, desc.shape, desc.strides, desc.dtype.name, desc.box,
                 desc.swizzle, desc.element_strides, desc.oob_fill, desc.l2_promotion))
    return hashlib.sha512(text.encode()).digest() * 2


class _FakeDriver:
    def cuLaunchKernel(self, *args):
        return (0,)

    def CUstream(self, handle):
        return ("stream", handle)


def install(monkeypatch, torch) -> list:
    """Patch everything (undone by ``monkeypatch``); returns the list of recorded launches."""
    monkeypatch.setattr(torch.Tensor, "is_cuda", property(
        lambda self: getattr(self, "_test_device", 0) >= 0), raising=False)
    monkeypatch.setattr(torch.Tensor, "get_device", lambda self: getattr(self, "_test_device", 0),
                        raising=False)
    monkeypatch.setattr(torch._C, "_cuda_getCurrentRawStream", lambda index: RAW_STREAM + index,
                        raising=False)
    monkeypatch.setattr(target_module, "_override", "cuda")
    monkeypatch.setattr(persist, "lookup", lambda *a, **k: None)
    monkeypatch.setattr(persist, "store", lambda *a, **k: False)
    monkeypatch.setattr(driver, "cuda", lambda: _FakeDriver())
    monkeypatch.setattr(driver, "context", lambda: None)
    monkeypatch.setattr(driver, "set_max_dynamic_smem", lambda function, nbytes: None)
    monkeypatch.setattr(tensormap, "_encode_tiled", fake_encode)
    del ENCODED[:]

    def cuda_launcher(self):
        if self._cuda is None:
            types = [ctypes.c_ubyte * 128 if isinstance(t, TensorMapType) else t   # as compiled.py
                     for _, t in self.abi]
            launcher = launcher_module.Launcher(object(), types, limits=LIMITS)
            launcher.ck = self
            self._cuda = (None, None, launcher)
        return None, self._cuda[2]
    monkeypatch.setattr(CompiledKernel, "cuda_launcher", cuda_launcher)
    launches = []
    real_launch = launcher_module.Launcher.launch

    def launch(self, grid, block, smem, stream, values):
        launches.append((self.ck, grid, block, smem, stream, tuple(values)))
        return real_launch(self, grid, block, smem, stream, values)
    monkeypatch.setattr(launcher_module.Launcher, "launch", launch)
    return launches
