"""Streams of a launch: int ``CUstream`` handles, cached cuda-bindings stream objects, and torch's
current stream."""
from __future__ import annotations

import sys
from typing import Sequence

from ..errors import LaunchError

__all__ = ["current_stream", "torch_stream_reader", "bindings_stream", "cached_handle"]

_STREAMS: dict = {}


def cached_handle(cache: dict, handle: int, make):
    """``make(handle)`` for an int stream/function handle, built once and kept in ``cache``
    (building a driver-side handle object costs about as much as the rest of a launch). Raises
    ``LaunchError`` for a handle that is not an int."""
    h = cache.get(handle)
    if h is None:
        if not isinstance(handle, int):
            raise LaunchError(f"stream must be an int CUstream handle (0 = default stream); "
                              f"got {handle!r}")
        if len(cache) > 1024:
            cache.clear()
        h = cache[handle] = make(handle)
    return h


def bindings_stream(cu, handle: int):
    """The cached cuda-bindings ``CUstream`` object of an int handle (:func:`cached_handle`)."""
    return cached_handle(_STREAMS, handle, cu.CUstream)


def current_stream(tensor_args: Sequence) -> int:
    """The stream a launch should use, as an int ``CUstream`` handle.

    When any argument is a torch CUDA tensor: torch's current stream on that tensor's device
    (``torch.cuda.current_stream().cuda_stream``), so the kernel is ordered with the torch work
    around it; torch is taken from ``sys.modules`` — it is loaded because the caller passed its
    tensors. Otherwise 0, the legacy default stream, which synchronizes with other blocking
    streams (cupy's and numba's defaults included).
    """
    for arg in tensor_args:
        if arg.kind == "torch" and arg.device == "cuda":
            return torch_stream_reader(sys.modules["torch"])(arg.device_index)
    return 0


def torch_stream_reader(torch):
    """A function ``device_index -> int CUstream`` of torch's current stream on that GPU.

    ``torch._C._cuda_getCurrentRawStream(i)`` is what ``torch.cuda.current_stream(i)`` reads
    before wrapping the same ``cudaStream_t`` (stream ids, the thread-local current stream and
    ``torch.cuda.stream(...)`` contexts all resolve inside it) in a Python ``Stream`` object,
    which costs about a microsecond per launch; it is private API, so without it the public
    call is used. Torch and warpstage share device 0's primary context, so the handle is valid
    for ``cuLaunchKernel`` as is.
    """
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return raw
    return lambda index: torch.cuda.current_stream(index).cuda_stream
