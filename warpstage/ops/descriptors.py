"""Host-side pieces the TMA kernels of ``ws.ops`` share (attention and matmul): reused TMA
descriptors and the SM count a persistent launch is sized by.

A descriptor costs ~10 us of validation plus a ``cuTensorMapEncodeTiled`` call to build, and an
op builds two to four per call, against kernels of 10-200 us: kept, they cost a dict look-up.
"""
from __future__ import annotations

from ..runtime.target import default_target
from ..runtime.tensormap import TensorDescriptor
from ..runtime.tensors import TensorArg

__all__ = ["descriptor", "descriptor_at", "sm_count"]

_DESCRIPTORS: dict = {}
"""(address, shape, strides, dtype, kind, device index, box, swizzle) -> a TensorDescriptor that
holds no tensor: ``descriptor``'s reuse for CUDA tensors on the cuda target."""
_MAX_DESCRIPTORS = 64


def descriptor(x, ta, box, swizzle: int = 128):
    """A TMA descriptor of the tensor ``x`` (its TensorArg ``ta``) for ``box`` (elements,
    outermost first) and ``swizzle`` (bytes: 0, 32, 64 or 128).

    For a CUDA tensor on the cuda target it is kept (up to ``_MAX_DESCRIPTORS``, then the table
    starts again) and returned again for a tensor with the same key. Why an equal key is the same
    descriptor even for another tensor (one freed and another allocated at its address, or
    another view of the same memory): the 128-byte map encodes the address, sizes, byte strides,
    data type, box, swizzle (and the fill, L2 promotion and element strides, fixed here) and
    nothing else, and the launch reads from the descriptor only those, the tensor's kind and
    device (for the stream); all of them are in the key. The kept descriptor holds no reference
    to its tensor (a cache must not keep GPU memory alive); the caller's tensor keeps the memory
    alive for the launch, as with a tensor argument. The simulator reads the tensor object
    itself, so elsewhere a new descriptor is built. Raises what ``ws.tma.TensorDescriptor``
    raises for a tensor TMA cannot address."""
    if ta.device != "cuda" or default_target() != "cuda":
        return TensorDescriptor(x, box, swizzle=swizzle)
    key = (ta.data_ptr, ta.shape, ta.strides, ta.dtype, ta.kind, ta.device_index, box, swizzle)
    d = _DESCRIPTORS.get(key)
    if d is None:
        d = TensorDescriptor(x, box, swizzle=swizzle)
        d.tensor = None                     # hold no tensor (see above); the launch needs none
        d.tensor_arg = TensorArg(ta.data_ptr, ta.shape, ta.strides, ta.dtype, ta.device,
                                 ta.device_index, None, ta.kind)
        if len(_DESCRIPTORS) >= _MAX_DESCRIPTORS:
            _DESCRIPTORS.clear()            # at worst a few encodings again; safe across threads
        _DESCRIPTORS[key] = d
    return d


def descriptor_at(proto, address: int):
    """The kept descriptor of the tensor ``proto`` (one ``descriptor`` returned) describes, had
    it been at ``address``: same shape, strides, dtype, device, box and swizzle. Looked up under
    the key ``descriptor`` uses, so both share the kept descriptors; on a miss
    ``proto.at(address)`` is encoded at the launch. For the op plans (``op_plans.py``), which
    checked the geometry once and see only the addresses change."""
    ta = proto.tensor_arg
    key = (address, ta.shape, ta.strides, ta.dtype, ta.kind, ta.device_index, proto.box,
           proto.swizzle)
    d = _DESCRIPTORS.get(key)
    if d is None:
        d = proto.at(address)
        if len(_DESCRIPTORS) >= _MAX_DESCRIPTORS:
            _DESCRIPTORS.clear()
        _DESCRIPTORS[key] = d
    return d


def sm_count(ta, sim_ctas: int) -> int:
    """Multiprocessors of the GPU that runs a launch on ``ta`` (a TensorArg), the persistent
    CTAs' upper bound; ``sim_ctas`` in the simulator (few, so each CTA walks several tiles)."""
    if ta.device != "cuda" or default_target() != "cuda":
        return sim_ctas
    from ..runtime.target import device_properties          # cached per device
    return device_properties(ta.device_index or 0).sm_count
