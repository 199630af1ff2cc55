"""Runtime: the CUDA driver, tensor adapters, the launcher and the choice of target.

Importing this package does not import ``cuda.bindings``; the first driver call does.
"""
from .launcher import (Launcher, LaunchLimits, check_cluster_dims, check_launch_dims,
                       current_stream, normalize_dims)
from .target import (DeviceProperties, cuda_available, default_target, device_properties,
                     require_cuda, set_target)
from .tensors import TensorArg, as_tensor_arg, require_device

__all__ = [
    "cuda_available", "default_target", "set_target", "require_cuda", "device_properties",
    "DeviceProperties", "TensorArg", "as_tensor_arg", "require_device", "Launcher",
    "LaunchLimits", "check_launch_dims", "check_cluster_dims", "normalize_dims", "current_stream",
]
