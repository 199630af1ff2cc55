"""The tensor kind (rule 2 when annotated ``ws.Tensor`` / ``ws.Tensor[dtype, ndim]``, rule 4 for
anything with ``__dlpack__`` / ``__cuda_array_interface__``): a dynamic data pointer, then the
shape and the strides that are not 1 (elements). Key part: dtype, rank, which strides are 1,
index width, 16-byte alignment of the base. And the pointer kind (rule 2, ``ws.Pointer[dtype]``):
one address slot."""
from __future__ import annotations

from ...core.trace import Origin
from ...errors import ArgumentError
from ...ir.types import SCALAR_TYPES
from ...lang.pointer import Pointer, PointerSpec
from ...lang.scalars import DTYPES, Int32, Int64, fits
from ...lang.tensor import Tensor, TensorSpec, make_tensor, tensor_abi
from ...runtime.tensors import _TORCH_DTYPES, TensorArg
from .base import Kind, got_text, mismatch, never_binds
from .static import ann_name

__all__ = ["TensorKind", "PointerKind", "tensor_key", "bind_torch", "tensor_leaves"]


def tensor_key(ta) -> tuple:
    """The key part of a tensor argument (rule 4): dtype, rank, which strides are 1, index width
    (i32 when every offset fits in 31 bits), 16-byte alignment of the base."""
    extent = 0
    big = False
    for n, st in zip(ta.shape, ta.strides):
        if n > 1:
            extent += (n - 1) * (st if st >= 0 else -st)
        if n > 2147483647:
            big = True
    index = "i64" if big or extent > 2147483647 else "i32"
    return ("tensor", ta.dtype.name, len(ta.shape), tuple(st == 1 for st in ta.strides), index,
            ta.data_ptr % 16 == 0)


def _convert_hint(dtype) -> str:
    """How to convert a torch tensor or numpy array to ``dtype``, for a fix text."""
    t = {"f16": "float16", "bf16": "bfloat16", "f32": "float32", "f64": "float64",
         "i32": "int32", "i64": "int64", "i8": "int8", "u8": "uint8", "i16": "int16",
         "e4m3": "float8_e4m3fn", "e5m2": "float8_e5m2"}.get(dtype.ir_type.name, dtype.ir_type.name)
    if t in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
        return f"torch: x.to(torch.{t}); numpy: x.astype(ml_dtypes.{t})"
    n = {"u16": "uint16", "u32": "uint32", "u64": "uint64", "i1": "bool_"}.get(t, t)
    return f"torch: x.to(torch.{t}); numpy: x.astype(np.{n})"


def _alignment(ta) -> int:
    """The base address's alignment in bytes, up to 16 (what the key records)."""
    p = int(getattr(ta, "data_ptr", 0) or 0) % 16
    return 16 if p == 0 else p & -p


def tensor_leaves(ta, leaves) -> None:
    leaves.append(ta)
    leaves.extend(ta.shape)
    for s in ta.strides:
        if s != 1:
            leaves.append(s)


_GEOMETRY_KEYS: dict = {}   # (dtype, shape, strides, base address mod 16) -> the tensor's key


def bind_torch(v, keys, leaves) -> bool:
    """A torch tensor's key and leaves in one pass (the common launch argument): the same
    result as ``as_tensor_arg`` + ``tensor_key``, with the key memoized by geometry. False for
    anything unusual (an unseen dtype, another device type); the caller then takes the general
    path, which explains the problem."""
    dt = _TORCH_DTYPES.get(v.dtype)
    if dt is None:
        return False
    if v.is_cuda:
        device, index = "cuda", v.get_device()
    elif v.is_cpu:
        device, index = "cpu", None
    else:
        return False
    shape = v.shape
    try:
        strides = v.stride()
    except RuntimeError:            # sparse and other layouts without strides: explained there
        return False
    ptr = v.data_ptr()
    ta = TensorArg(ptr, shape, strides, dt, device, index, v, "torch")
    g = (dt.name, shape, strides, ptr & 15)
    key = _GEOMETRY_KEYS.get(g)
    if key is None:
        if len(_GEOMETRY_KEYS) > 4096:
            _GEOMETRY_KEYS.clear()
        key = _GEOMETRY_KEYS[g] = tensor_key(ta)
    keys.append(key)
    leaves.append(ta)
    leaves.extend(shape)
    for s in strides:
        if s != 1:
            leaves.append(s)
    return True


class TensorKind(Kind):
    """A dynamic tensor parameter (see the module docstring)."""

    STORED_TAG = "tensor"
    FAST_TAG = "tensor"

    def __init__(self, ta, rule: int):
        self.rule = rule
        self.binding = "dynamic"
        self.key = tensor_key(ta)
        _, _, self.ndim, self.unit, index, self.aligned16 = self.key
        self.dtype = DTYPES[ta.dtype]
        self.index_dtype = Int64 if index == "i64" else Int32
        self.ta = ta       # this call's tensor; host_leaves reads it instead of re-adapting

    @property
    def desc(self) -> str:
        unit_desc = "".join("1" if u else "?" for u in self.unit)
        return (f"Tensor[{self.dtype.__name__}, {self.ndim}] strides=({unit_desc}) "
                f"index={self.index_dtype.__name__}{' align16' if self.aligned16 else ''}")

    def abi(self, name):
        return tensor_abi(self.dtype, self.ndim, self.unit, self.index_dtype, name)

    def host_leaves(self, value, out):
        ta = self.ta
        out.append(ta)
        out.extend(ta.shape)
        out.extend(s for s, u in zip(ta.strides, self.unit) if not u)

    def make(self, it, name):
        return make_tensor(it, self.dtype, self.ndim, self.unit, self.index_dtype,
                           Origin(f"parameter '{name}' (tensor)"))

    # -- match rules ----------------------------------------------------------------------------
    @classmethod
    def match_annotated(cls, value, ann, ctx):
        """Rule 2: annotated ``ws.Tensor`` (``[dtype, ndim]`` checked)."""
        if not (ann is Tensor or isinstance(ann, TensorSpec)):
            return None
        name = ctx.name
        ta = ctx.adapter(value) if ctx.adapter is not None else None
        if ta is None:
            raise ArgumentError(f"parameter '{name}' is annotated {ann_name(ann)} but got "
                                f"{got_text(value)}.\nFix: pass a tensor: "
                                "a numpy array or CPU torch tensor (simulator), a torch or cupy "
                                "CUDA tensor (GPU), or anything with __dlpack__ / __cuda_array_interface__.")
        spec = cls(ta, 2)
        if isinstance(ann, TensorSpec):
            if ann.dtype is not None and ann.dtype is not spec.dtype:
                raise ArgumentError(f"parameter '{name}' is annotated {ann!r} but got a tensor of "
                                    f"dtype {spec.dtype.__name__}.\nFix: convert it ("
                                    f"{_convert_hint(ann.dtype)}) or change the annotation.")
            if ann.ndim is not None and ann.ndim != spec.ndim:
                raise ArgumentError(f"parameter '{name}' is annotated {ann_name(ann)} but got a "
                                    f"{spec.ndim}-d tensor.\nFix: reshape it or change the annotation.")
        return spec

    @classmethod
    def match_bare(cls, value, ann, ctx):
        """Rule 4: a value the tensor adapter reads."""
        ta = ctx.adapter(value) if ctx.adapter is not None else None
        return cls(ta, 4) if ta is not None else None

    # -- disk -----------------------------------------------------------------------------------
    def stored(self):
        return {"k": "tensor", "dtype": self.dtype.ir_type.name, "ndim": self.ndim,
                "unit": list(self.unit), "index": self.index_dtype.ir_type.name,
                "aligned16": self.aligned16}

    @classmethod
    def bind_stored(cls, d, value, name, out):
        from ...runtime.tensors import as_tensor_arg
        ta = as_tensor_arg(value, name)
        want = f"a {d['ndim']}-d {d['dtype']} tensor"
        if ta is None:
            raise mismatch(name, want, type(value).__name__)
        if ta.dtype.name != d["dtype"] or len(ta.shape) != d["ndim"]:
            raise mismatch(name, want, f"a {len(ta.shape)}-d {ta.dtype.name} tensor")
        unit = d["unit"]
        if any(u and s != 1 for u, s in zip(unit, ta.strides)):
            raise mismatch(name, f"{want} with stride 1 in dims "
                           f"{[i for i, u in enumerate(unit) if u]}", f"strides {ta.strides}")
        index = SCALAR_TYPES[d["index"]]
        extent = sum((n - 1) * abs(s) for n, s in zip(ta.shape, ta.strides)) if ta.shape else 0
        if not (fits(index, extent) and all(fits(index, n) for n in ta.shape)):
            raise mismatch(name, f"{want} indexed with {d['index']}", f"shape {ta.shape}, which "
                           "needs 64-bit indexing")
        if d["aligned16"] and ta.data_ptr % 16:
            raise mismatch(name, f"{want} aligned to 16 bytes", f"address {ta.data_ptr:#x}")
        out.append(ta)
        out.extend(ta.shape)
        out.extend(s for s, u in zip(ta.strides, unit) if not u)

    # -- recompile reasons ----------------------------------------------------------------------
    def change(self, new):
        old, out = self, []
        if old.dtype is not new.dtype:
            out.append(f"dtype {old.dtype.__name__} -> {new.dtype.__name__}")
        if old.ndim != new.ndim:
            out.append(f"rank {old.ndim} -> {new.ndim}")
        elif old.unit != new.unit:
            for k, (a, b) in enumerate(zip(old.unit, new.unit)):
                if a != b:
                    out.append(f"dim {k} stride {old.ta.strides[k]} -> {new.ta.strides[k]} "
                               f"elements ({'no longer' if a else 'now'} contiguous)")
        if old.index_dtype is not new.index_dtype:
            out.append(f"index {old.index_dtype.__name__} -> {new.index_dtype.__name__}")
        if old.aligned16 != new.aligned16:
            out.append(f"base alignment {_alignment(old.ta)} -> {_alignment(new.ta)} bytes")
        return ", ".join(out) or "layout changed"

    def kind_text(self):
        return f"tensor of {self.dtype.__name__}"

    # -- the fast paths -------------------------------------------------------------------------
    @classmethod
    def fast_kind(cls, annotation, self_rule):
        return "tensor" if annotation is Tensor or isinstance(annotation, TensorSpec) else None

    @classmethod
    def binder(cls, annotation, self_rule, adapter):
        if not (annotation is Tensor or isinstance(annotation, TensorSpec)):
            return None
        return cls.fallback(adapter, False)     # annotated: a value that is not one explains there

    @staticmethod
    def fallback(adapter, not_a_tensor=None):
        """The hot-path binder of a value that is a tensor (a torch tensor inline, else through
        ``adapter``); it returns ``not_a_tensor`` for a value that is not one (None: the next
        fallback of a bare parameter decides)."""
        from ...runtime.tensors import _KIND_BY_TYPE   # the live table of tensor types

        def bind_tensor(v, keys, leaves):
            if _KIND_BY_TYPE.get(type(v)) == "torch" and bind_torch(v, keys, leaves):
                return True
            ta = adapter(v)
            if ta is None:
                return not_a_tensor
            keys.append(tensor_key(ta))
            tensor_leaves(ta, leaves)
            return True
        return bind_tensor

    # reading a tensor argument into s (strides), p (address), h (shape): a plain torch tensor
    # inline, anything else through the tensor adapter (one call)
    READ_TORCH = '''\
        try:
            s{i} = {v}.stride()
        except RuntimeError:
            {miss}
        p{i} = {v}.data_ptr()
        h{i} = {v}.shape
'''
    READ_ADAPTED = '''\
        a{i} = _adapt({v})
        if a{i} is None or a{i}.device != "cuda":
            {miss}
        e{i} = a{i}.device_index or 0
        p{i} = a{i}.data_ptr
        h{i} = a{i}.shape
        s{i} = a{i}.strides
'''
    FAST = ('''\
    if type({v}) is _Tensor:
        if not {v}.is_cuda:
            {miss}
        e{i} = {v}.get_device()
''' + READ_TORCH + "        d{i} = {v}.dtype\n    else:\n" + READ_ADAPTED
            + "        d{i} = (a{i}.kind, a{i}.dtype)\n")
    AUTO = (("t{i} is _Tensor and {v}.is_cuda", "        e{i} = {v}.get_device()\n" + READ_TORCH
             + '''\
        g{i} = ({v}.dtype, h{i}, s{i}, p{i} & 15)
        c{i} = None
'''),)
    AUTO_ELSE = READ_ADAPTED + '''\
        g{i} = (a{i}.kind, a{i}.dtype, h{i}, s{i}, p{i} & 15)
        c{i} = None
'''
    AUTO_LEAVES = "    if c{i} is None:\n        c{i} = (p{i}, *x{i})\n"

    @classmethod
    def fast_parts(cls, i, v, kind):
        return {"read": cls.FAST.format(v=v, i=i, miss="{miss}"),
                "sig": f"d{i}, h{i}, s{i}, p{i} & 15", "xs": f"x{i}", "leaves": f"p{i}, *x{i}"}


class PointerKind(Kind):
    """A dynamic pointer parameter (rule 2, ``ws.Pointer[dtype]``): one address slot."""

    STORED_TAG = "ptr"

    def __init__(self, spec: PointerSpec):
        self.spec = spec
        self.rule = 2
        self.binding = "dynamic"
        self.desc = repr(spec)
        self.key = ("ptr", spec.ir_type)

    def abi(self, name):
        return [(name, self.spec.ir_type)]

    def host_leaves(self, value, out):
        out.append(value)

    def make(self, it, name):
        return Pointer._wrap(next(it), Origin(f"parameter '{name}'"))

    @classmethod
    def match_annotated(cls, value, ann, ctx):
        """Rule 2: annotated ``ws.Pointer[dtype]``."""
        return cls(ann) if isinstance(ann, PointerSpec) else None

    @classmethod
    def binder(cls, annotation, self_rule, adapter):
        return never_binds if isinstance(annotation, PointerSpec) else None   # the full path

    def stored(self):
        return {"k": "ptr", "type": str(self.spec.ir_type)}

    @classmethod
    def bind_stored(cls, d, value, name, out):
        if not isinstance(value, int) or isinstance(value, bool):
            raise mismatch(name, f"a pointer {d['type']} (an int address)", type(value).__name__)
        out.append(value)
