"""Launching a CompiledKernel without its ``@ws.kernel`` (``ws.load(path)[grid, block](*args)``).

A saved kernel keeps, per parameter, a descriptor of how it was specialized (plain data: the
stored form of its kind, ``Kind.stored()`` in frontend/kinds/, read back by the kind's
``bind_stored``):

    {"k": "static", "key": repr of the static key, "desc": ...}
    {"k": "scalar", "type": "i32"}                 {"k": "ptr", "type": "!ptr<f32, global>"}
    {"k": "tensor", "dtype": "f32", "ndim": 2, "unit": [false, true], "index": "i32",
     "aligned16": true}
    {"k": "composite", "kind": "tuple" | "list" | "dict" | "namedtuple" | "dataclass" | "proto",
     "names": [...], "skel": repr of the skeleton key, "parts": [descriptors]}
    {"k": "tensormap"}       the 128-byte map of a ws.tma.TensorDescriptor (a "proto" composite
                             whose skeleton key holds the descriptor's geometry, and whose
                             "what" describes it for errors)

``bind_host_args`` turns host arguments into the ABI values (``TensorArg`` for a tensor's data
pointer, then ints/floats; ``TensorMapArg`` for a descriptor's map) and checks that they fit this
specialization: the same static values, dtypes and ranks (a descriptor's whole static part), unit
strides where the kernel assumed them, sizes that fit its index type.
"""
from __future__ import annotations

from typing import Optional

from ..errors import ArgumentError, LaunchError
from ..core.arguments import argument_mismatch
from ..frontend.kinds import bind_stored

__all__ = ["describe_params", "params_of", "bind_host_args", "StoredLaunch"]


def describe_params(specs) -> Optional[list]:
    """Descriptors of ``specs`` (see the module docstring), or None if one has no stored form."""
    out = [s.stored() for s in specs]
    return None if any(d is None for d in out) else out


def params_of(ck) -> Optional[list]:
    """The host-argument descriptors of ``ck``: stored, or derived from its Specs."""
    if ck._host_params is None:
        ck._host_params = describe_params(ck.specs)
    return ck._host_params


def bind_host_args(params: list, param_names: list, args: tuple, kwargs: dict,
                   name: str = "the kernel") -> list:
    """The ABI values for host ``args``/``kwargs`` (a TensorArg for each tensor's data pointer).
    Raises ArgumentError for a missing/extra argument or one that does not fit."""
    values = dict(zip(param_names, args))
    if len(args) > len(param_names) or any(k not in param_names or k in values for k in kwargs):
        raise argument_mismatch(name, list(param_names), args, kwargs)
    values.update(kwargs)
    if len(values) < len(param_names):
        raise argument_mismatch(name, list(param_names), args, kwargs)
    out: list = []
    for d, n in zip(params, param_names):
        bind_stored(d, values[n], n, out)
    return out


class StoredLaunch:
    """``ck[grid, block(, smem_bytes, stream)]``: call it with the kernel's host arguments."""

    __slots__ = ("ck", "grid", "block", "smem", "stream")

    def __init__(self, ck, config):
        from .launch_config import _dim3
        if not isinstance(config, tuple) or not 2 <= len(config) <= 4:
            raise LaunchError(f"launch configuration must be ck[grid, block] or ck[grid, block, "
                              f"smem_bytes, stream], got ck[{config!r}].\nFix: ck[grid, "
                              f"{tuple(ck.block)}](...) (grid: CTAs, an int or up to 3 ints; "
                              "the block it was compiled for).")
        grid, block, smem, stream = (tuple(config) + (0, None))[:4]
        self.ck = ck
        self.grid = _dim3(grid, "grid")
        self.block = _dim3(block, "block")
        if self.block != tuple(ck.block):
            raise LaunchError(f"kernel {ck.name} was compiled for block {tuple(ck.block)} (its "
                              f".maxntid); got block {self.block}.\nFix: launch with block "
                              f"{tuple(ck.block)}, or compile for this block with "
                              "ws.compile(kernel, ..., block=...).")
        if not isinstance(smem, int) or smem < 0:
            raise LaunchError(f"smem must be a non-negative int (bytes), got {smem!r}")
        self.smem = smem
        self.stream = stream

    def __call__(self, *args, **kwargs):
        ck = self.ck
        params = params_of(ck)
        if params is None:
            raise ArgumentError(f"kernel {ck.name}: a parameter's binding has no stored form, so "
                                "it cannot be launched this way.\nFix: launch it through its "
                                "@ws.kernel: kern[grid, block](*args).")
        leaves = bind_host_args(params, ck.param_names, args, kwargs, ck.name)
        from .launch import get_target
        if get_target() != "cuda":
            raise LaunchError(f"kernel {ck.name} is compiled PTX/cubin and runs on the GPU only; "
                              f"the target is {get_target()!r}.\nFix: run on a machine with a "
                              "GPU, or launch the @ws.kernel itself to use the simulator.")
        from .launch import _launch_cuda
        _launch_cuda(ck, leaves, self.grid, self.block, max(self.smem, ck.dynamic_smem), self.stream)
