"""Launching a CompiledKernel without its ``@ws.kernel`` (``ws.load(path)[grid, block](*args)``).

A saved kernel keeps, per parameter, a descriptor of how it was specialized (plain data):

    {"k": "static", "key": repr of the static key, "desc": ...}
    {"k": "scalar", "type": "i32"}                 {"k": "ptr", "type": "!ptr<f32, global>"}
    {"k": "tensor", "dtype": "f32", "ndim": 2, "unit": [false, true], "index": "i32",
     "aligned16": true}
    {"k": "composite", "kind": "tuple" | "list" | "dict" | "namedtuple" | "dataclass" | "proto",
     "names": [...], "skel": repr of the skeleton key, "parts": [descriptors]}
    {"k": "tensormap"}       the 128-byte map of a ws.tma.TensorDescriptor (a "proto" composite
                             whose skeleton key holds the descriptor's geometry)

``bind_host_args`` turns host arguments into the ABI values (``TensorArg`` for a tensor's data
pointer, then ints/floats; ``TensorMapArg`` for a descriptor's map) and checks that they fit this
specialization: the same static values, dtypes and ranks (a descriptor's whole static part), unit
strides where the kernel assumed them, sizes that fit its index type.
"""
from __future__ import annotations

import enum
from typing import Optional

from ..errors import ArgumentError, LaunchError
from ..frontend import binding_time as bt
from ..frontend import specs
from ..core.static_key import UnkeyableError, static_key
from ..ir.types import SCALAR_TYPES
from ..lang.scalars import HostScalar, fits
from ..runtime.tensormap import TensorDescriptor, TensorMapArg

__all__ = ["describe_params", "params_of", "bind_host_args", "StoredLaunch"]


def _describe(spec) -> Optional[dict]:
    if isinstance(spec, bt.StaticSpec):
        return {"k": "static", "key": repr(spec.key), "desc": spec.desc}
    if isinstance(spec, bt.ScalarSpec):
        return {"k": "scalar", "type": spec.dtype.ir_type.name}
    if isinstance(spec, bt.PointerArgSpec):
        return {"k": "ptr", "type": str(spec.spec.ir_type)}
    if isinstance(spec, bt.TensorArgSpec):
        return {"k": "tensor", "dtype": spec.dtype.ir_type.name, "ndim": spec.ndim,
                "unit": list(spec.unit), "index": spec.index_dtype.ir_type.name,
                "aligned16": spec.aligned16}
    if isinstance(spec, bt.TensorMapSpec):
        return {"k": "tensormap"}
    if isinstance(spec, bt.CompositeSpec):
        parts = [_describe(p) for p in spec.parts]
        if any(p is None for p in parts):
            return None
        out = {"k": "composite", "kind": spec.kind, "names": list(spec.names),
               "skel": repr(spec.key[1]), "parts": parts}
        t = spec.template
        if type(t) is TensorDescriptor:         # say what it was in errors
            out["what"] = (f"a ws.tma.TensorDescriptor of {t.dtype} with box {t.box}, swizzle "
                           f"{t.swizzle}, element_strides {t.element_strides}, oob_fill "
                           f"{t.oob_fill!r}, l2_promotion {t.l2_promotion}")
        return out
    return None


def describe_params(specs) -> Optional[list]:
    """Descriptors of ``specs`` (see the module docstring), or None if one has no stored form."""
    out = [_describe(s) for s in specs]
    return None if any(d is None for d in out) else out


def params_of(ck) -> Optional[list]:
    """The host-argument descriptors of ``ck``: stored, or derived from its Specs."""
    if ck._host_params is None:
        ck._host_params = describe_params(ck.specs)
    return ck._host_params


def _mismatch(name, expected, got) -> ArgumentError:
    return ArgumentError(f"parameter '{name}': this compiled kernel was specialized for "
                         f"{expected}, got {got}.\nFix: pass a matching argument, or compile a "
                         "specialization for it with ws.compile(kernel, ...) and save that one.")


def _skeleton(value, kind):
    if kind in ("tuple", "list"):
        return len(value)
    if kind == "dict":
        return tuple(value)
    return specs._skeleton_static_key(value, kind)


def _bind(d: dict, value, name: str, out: list) -> None:
    k = d["k"]
    if k == "static":
        try:
            got = repr(("static", static_key(value)))
        except (UnkeyableError, RecursionError):
            got = None
        if got != d["key"]:
            raise _mismatch(name, f"the static value {d['desc']}", repr(value)[:60])
    elif k == "scalar":
        out.append(_scalar(d["type"], value, name))
    elif k == "ptr":
        if not isinstance(value, int) or isinstance(value, bool):
            raise _mismatch(name, f"a pointer {d['type']} (an int address)", type(value).__name__)
        out.append(value)
    elif k == "tensor":
        _tensor(d, value, name, out)
    elif k == "tensormap":
        if type(value) is not TensorMapArg:         # a part of the descriptor checked above
            raise _mismatch(name, "a TMA descriptor's tensor map", type(value).__name__)
        out.append(value)
    elif k == "composite":
        kind = d["kind"]
        try:
            skel = repr(_skeleton(value, kind))
            parts = specs._host_parts(value, kind, d["names"])
        except (AttributeError, KeyError, TypeError, UnkeyableError):
            skel, parts = None, None
        if skel != d["skel"] or parts is None or len(parts) != len(d["parts"]):
            if "what" in d:
                raise _mismatch(name, d["what"], repr(value) if type(value) is TensorDescriptor
                                else f"a {type(value).__name__}")
            raise _mismatch(name, f"a {kind} argument whose static part is {d['skel']}",
                            repr(value)[:80])
        sep = "[{}]" if kind in ("tuple", "list") else ".{}"
        for n, part_d, part in zip(d["names"], d["parts"], parts):
            _bind(part_d, part, name + sep.format(n), out)
    else:
        raise ArgumentError(f"parameter '{name}': unknown stored binding {k!r}; the file was "
                            "written by another warpstage version.\nFix: save it again.")


def _scalar(type_name: str, value, name: str):
    t = SCALAR_TYPES[type_name]
    v = value.value if isinstance(value, HostScalar) else value
    if type(v).__module__ == "numpy" and getattr(v, "ndim", 1) == 0:
        v = v.item()
    if isinstance(v, enum.Enum):                # static by rule 7, even an IntEnum member
        raise _mismatch(name, f"a scalar of type {type_name}",
                        f"the enum member {v!r}, which is static (rule 7)")
    ok = (isinstance(v, (bool, int)) if not t.is_float else
          isinstance(v, (int, float)) and not isinstance(v, bool))
    if not ok:
        raise _mismatch(name, f"a scalar of type {type_name}", f"{type(v).__name__} {v!r}"[:60])
    if t.is_int or t.is_bool:
        if not fits(t, int(v)):
            raise _mismatch(name, f"a scalar of type {type_name}", f"{v}, which does not fit")
        return int(v)
    return float(v)


def _tensor(d: dict, value, name: str, out: list) -> None:
    from ..runtime.tensors import as_tensor_arg
    ta = as_tensor_arg(value, name)
    want = f"a {d['ndim']}-d {d['dtype']} tensor"
    if ta is None:
        raise _mismatch(name, want, type(value).__name__)
    if ta.dtype.name != d["dtype"] or len(ta.shape) != d["ndim"]:
        raise _mismatch(name, want, f"a {len(ta.shape)}-d {ta.dtype.name} tensor")
    unit = d["unit"]
    if any(u and s != 1 for u, s in zip(unit, ta.strides)):
        raise _mismatch(name, f"{want} with stride 1 in dims "
                        f"{[i for i, u in enumerate(unit) if u]}", f"strides {ta.strides}")
    index = SCALAR_TYPES[d["index"]]
    extent = sum((n - 1) * abs(s) for n, s in zip(ta.shape, ta.strides)) if ta.shape else 0
    if not (fits(index, extent) and all(fits(index, n) for n in ta.shape)):
        raise _mismatch(name, f"{want} indexed with {d['index']}", f"shape {ta.shape}, which needs "
                        "64-bit indexing")
    if d["aligned16"] and ta.data_ptr % 16:
        raise _mismatch(name, f"{want} aligned to 16 bytes", f"address {ta.data_ptr:#x}")
    out.append(ta)
    out.extend(ta.shape)
    out.extend(s for s, u in zip(ta.strides, unit) if not u)


def bind_host_args(params: list, param_names: list, args: tuple, kwargs: dict) -> list:
    """The ABI values for host ``args``/``kwargs`` (a TensorArg for each tensor's data pointer).
    Raises ArgumentError for a missing/extra argument or one that does not fit."""
    if len(args) > len(param_names):
        raise ArgumentError(f"the kernel takes {len(param_names)} arguments "
                            f"({', '.join(param_names)}), got {len(args)}")
    values = dict(zip(param_names, args))
    for k, v in kwargs.items():
        if k not in param_names or k in values:
            raise ArgumentError(f"unexpected or repeated argument {k!r}; the kernel takes "
                                f"({', '.join(param_names)})")
        values[k] = v
    missing = [n for n in param_names if n not in values]
    if missing:
        raise ArgumentError(f"missing argument(s) {', '.join(missing)}; the kernel takes "
                            f"({', '.join(param_names)})")
    out: list = []
    for d, n in zip(params, param_names):
        _bind(d, values[n], n, out)
    return out


class StoredLaunch:
    """``ck[grid, block(, smem_bytes, stream)]``: call it with the kernel's host arguments."""

    __slots__ = ("ck", "grid", "block", "smem", "stream")

    def __init__(self, ck, config):
        from .launch_config import _dim3
        if not isinstance(config, tuple) or not 2 <= len(config) <= 4:
            raise LaunchError(f"launch configuration must be ck[grid, block] or ck[grid, block, "
                              f"smem_bytes, stream], got ck[{config!r}]")
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
        leaves = bind_host_args(params, ck.param_names, args, kwargs)
        from .launch import get_target
        if get_target() != "cuda":
            raise LaunchError(f"kernel {ck.name} is compiled PTX/cubin and runs on the GPU only; "
                              f"the target is {get_target()!r}.\nFix: run on a machine with a "
                              "GPU, or launch the @ws.kernel itself to use the simulator.")
        from .launch import _launch_cuda
        _launch_cuda(ck, leaves, self.grid, self.block, max(self.smem, ck.dynamic_smem), self.stream)
