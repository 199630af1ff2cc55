"""Global-memory tensors: ``ws.Tensor`` parameters (rule 4) and ``ws.Tensor[dtype, ndim]``.

Inside a kernel a tensor is a dynamic pointer plus a dynamic shape and strides (in elements).
Strides equal to 1 on the host are static (they are part of the cache key), so a contiguous
innermost dimension costs no multiply. Shapes and strides are Int32 when every offset of the
tensor fits in 31 bits, else Int64 (also part of the key).

``t[i, j]`` loads one element at ``sum(index_k * stride_k)``; ``t[i, j] = v`` stores one. Indices
are never wrapped, static or dynamic: one rule for both. Python's wrap of a negative index would
cost a compare and a select per dynamic index on the GPU, so a dynamic index must be in
``[0, n)`` (not checked on the GPU; the simulator reports out-of-bounds accesses), and a static
negative index (``t[-1]``) is an error that says to write ``t[t.shape[0] - 1]``.
"""
from __future__ import annotations

from typing import Optional

from .. import ir
from ..errors import OperandError
from ..core.trace import emit_location
from .pointer import Pointer
from .scalars import DTYPES, Int32, Scalar, as_dynamic

__all__ = ["Tensor", "TensorSpec"]


class TensorSpec:
    """The annotation ``ws.Tensor[dtype, ndim]`` (either may be omitted as ``ws.Tensor``): a
    dynamic global-memory tensor whose dtype and rank are checked against the argument."""

    def __init__(self, dtype=None, ndim: Optional[int] = None):
        self.dtype = dtype
        self.ndim = ndim

    def __repr__(self) -> str:
        parts = [p for p in ((self.dtype.__name__ if self.dtype else None),
                             (str(self.ndim) if self.ndim is not None else None)) if p]
        return "ws.Tensor" + (f"[{', '.join(parts)}]" if parts else "")

    def __eq__(self, o):
        return isinstance(o, TensorSpec) and (o.dtype, o.ndim) == (self.dtype, self.ndim)

    def __hash__(self):
        return hash(("TensorSpec", self.dtype, self.ndim))


class _TensorMeta(type):
    def __getitem__(cls, item):
        if not isinstance(item, tuple):
            item = (item,)
        if len(item) > 2:
            raise TypeError(f"ws.Tensor[dtype, ndim] takes at most 2 parameters, got {len(item)}")
        dtype = item[0]
        if dtype not in DTYPES.values():
            raise TypeError(f"ws.Tensor[...]: the first parameter must be a warpstage dtype such "
                            f"as ws.Float16, got {dtype!r}")
        ndim = item[1] if len(item) > 1 else None
        if ndim is not None and (not isinstance(ndim, int) or ndim < 0):
            raise TypeError(f"ws.Tensor[dtype, ndim]: ndim must be a non-negative int, got {ndim!r}")
        return TensorSpec(dtype, ndim)


class Tensor(metaclass=_TensorMeta):
    """A tensor in global memory, inside a kernel. ``shape``: tuple of dynamic ints; ``strides``:
    tuple (static 1 or dynamic ints), in elements; ``dtype``: element dtype class; ``ndim``: int."""

    __slots__ = ("ptr", "shape", "strides")

    def __getattr__(self, name):          # only for attributes it does not have (error path)
        from .tma import missing_attribute
        raise missing_attribute(self, name)

    def __init__(self, ptr: Pointer, shape: tuple, strides: tuple):
        self.ptr = ptr
        self.shape = tuple(shape)
        self.strides = tuple(strides)

    @property
    def dtype(self):
        return self.ptr.dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def index_dtype(self):
        for s in self.shape:
            if isinstance(s, Scalar):
                return type(s)
        return Int32

    # -- value protocol ----------------------------------------------------------------------
    def __extract_values__(self):
        return [self.ptr, *self.shape, *[s for s in self.strides if not _is_one(s)]]

    def __new_from_values__(self, values):
        n = self.ndim
        ptr, shape, rest = values[0], tuple(values[1:1 + n]), iter(values[1 + n:])
        strides = tuple(1 if _is_one(s) else next(rest) for s in self.strides)
        return Tensor(ptr, shape, strides)

    def __static_key__(self):
        return ("Tensor", str(self.ptr.value.type), tuple(_is_one(s) for s in self.strides))

    # -- element access ------------------------------------------------------------------------
    def _offset(self, index):
        if not isinstance(index, tuple):
            index = (index,)
        if len(index) != self.ndim:
            example = ", ".join("ijkl"[d] if d < 4 else f"i{d}" for d in range(self.ndim))
            raise _index_error(f"indexing a dynamic ws.Tensor[{self.dtype.__name__}, "
                               f"{self.ndim}]", f"{self.ndim} index(es), one per dimension",
                               f"{len(index)}", f"x[{example}] (an element; slices and partial "
                               "indexing are not supported)")
        idx_t = self.index_dtype
        offset = None
        for k, (i, stride) in enumerate(zip(index, self.strides)):
            if isinstance(i, slice):
                raise _index_error("slicing a global tensor", "one integer per dimension",
                                   f"the slice {i.start}:{i.stop}" +
                                   (f":{i.step}" if i.step is not None else ""), "index single "
                                   "elements, e.g. t[i, j], in a ws.range loop")
            if isinstance(i, Scalar):
                if not (i.ir_type.is_int or i.ir_type.is_bool):
                    raise _index_error(f"tensor index {k}", "an integer",
                                       f"a dynamic {type(i).__name__}", "convert it with "
                                       "ws.Int32(...)")
            elif not isinstance(i, int) and not (hasattr(i, "__index__") and not isinstance(i, float)):
                raise _index_error(f"tensor index {k}", "an integer",
                                   f"{type(i).__name__} {i!r}", "convert it with int(...) or "
                                   "ws.Int32(...)")
            elif i < 0:
                raise OperandError(
                    f"tensor index {k} is the static negative {i}\n{emit_location()}\nIndices "
                    "are never wrapped: a dynamic one cannot be without a compare and select per "
                    f"access, so a static one is not either (one rule for both).{NEGATIVE_INDEX}")
            i = as_dynamic(i, idx_t) if not isinstance(i, Scalar) or type(i) is not idx_t else i
            term = i if _is_one(stride) else i * stride
            offset = term if offset is None else offset + term
        return offset

    def __getitem__(self, index):
        off = self._offset(index)
        return self.ptr[off] if off is not None else self.ptr[0]

    def __setitem__(self, index, value):
        off = self._offset(index)
        self.ptr[off if off is not None else 0] = value

    def __repr__(self) -> str:
        return f"<dynamic Tensor {self.dtype.__name__} ndim={self.ndim}>"

    # Python's protocols on a tensor: each would need its dynamic shape as a Python value (or,
    # for iteration, would run __getitem__ with 0, 1, 2, ... forever: no index is ever out of
    # range while tracing). Each is an error at the user's line saying what to write instead.
    def __bool__(self):
        raise _protocol_error(self, "a tensor used as a truth value (`if x:`, `x and y`, "
                              "bool(x))", "A tensor has no truth value, static or dynamic.",
                              "test an element or the shape, e.g. `if x[0] != 0:` or "
                              "`if x.shape[0] > 0:`.")

    def __len__(self):
        raise _protocol_error(self, "len() of a tensor", "len() must return a Python int, and "
                              "a tensor's shape is dynamic (known on the GPU at run time).",
                              "x.shape[0] (a dynamic int: ws.range(x.shape[0]) loops over it), "
                              "or pass the length as a ws.Static[int] parameter.")

    def __iter__(self):
        raise _protocol_error(self, "iterating over a tensor (`for v in x`, unpacking, list(x))",
                              "A tensor's shape is dynamic, so the loop has no static length.",
                              "loop over indices, e.g. `for i in ws.range(x.shape[0]): "
                              "v = x[i]`.")

    def __contains__(self, item):
        raise _protocol_error(self, "`v in x` on a tensor", "It would search the tensor while "
                              "compiling, and the tensor's elements and shape exist only on "
                              "the GPU.", "compare in a loop, e.g. `found = False` then "
                              "`for i in ws.range(x.shape[0]): found = found or x[i] == v`.")


def read_only_metadata(cls, what: str, fix: str):
    """Make the attributes of ``cls`` (a class with ``__slots__``) read-only once set: its
    ``__init__`` sets each slot once, and any later assignment or ``del`` (``x.shape = (4,)``)
    is an UnsupportedError at the user's line. A kernel's view of memory (shape, strides,
    pointer, dtype) is fixed while it is traced: rebinding ``shape`` would change no address
    computation already emitted and silently disagree with the data. ``what`` names the value
    ("a dynamic ws.Tensor"), ``fix`` what to write instead."""
    def refuse(self, name, verb):
        from ..errors import UnsupportedError
        return UnsupportedError(
            f"{verb} `{name}` of {what}: its metadata (shape, strides, dtype, pointer) is "
            f"read-only in a kernel\n{emit_location()}\nExpected: reads such as x.{name}; got "
            f"{'an assignment' if verb == 'assigning' else 'a del'}.\nFix: {fix}.")

    def __setattr__(self, name, value):
        if name in cls.__slots__:
            try:
                object.__getattribute__(self, name)
            except AttributeError:              # the first assignment: __init__
                object.__setattr__(self, name, value)
                return
        raise refuse(self, name, "assigning")

    def __delattr__(self, name):
        raise refuse(self, name, "deleting")
    cls.__setattr__, cls.__delattr__ = __setattr__, __delattr__
    return cls


def _index_error(what: str, expected: str, got: str, fix: str):
    """The OperandError for a tensor index of the wrong count or type."""
    return OperandError(f"{what}: expected {expected}, got {got}\n{emit_location()}\nFix: {fix}.")


def _protocol_error(t: Tensor, what: str, why: str, fix: str):
    from ..errors import UnsupportedError
    return UnsupportedError(f"{what}, on a dynamic ws.Tensor[{t.dtype.__name__}, {t.ndim}]"
                            f"\n{emit_location()}\n{why}\nFix: {fix}")


def _whole_tensor_operator(symbol: str):
    def op(self, *other):
        raise _protocol_error(self, f"the operator {symbol} on a whole tensor", "A tensor in a "
                              "kernel is memory, not a value: operators work on its elements "
                              "(dynamic scalars).", "index elements, e.g. `y[i] = x[i] "
                              f"{symbol if symbol not in ('-x', '~x', 'abs()') else '+'} 1.0` "
                              "in a ws.range loop over x.shape[0], or use ws.ops for whole-tensor "
                              "work on the host.")
    return op


for _name, _symbol in (("add", "+"), ("sub", "-"), ("mul", "*"), ("truediv", "/"),
                       ("floordiv", "//"), ("mod", "%"), ("pow", "**"), ("matmul", "@"),
                       ("and", "&"), ("or", "|"), ("xor", "^"), ("lshift", "<<"),
                       ("rshift", ">>")):
    setattr(Tensor, f"__{_name}__", _whole_tensor_operator(_symbol))
    setattr(Tensor, f"__r{_name}__", _whole_tensor_operator(_symbol))
for _name, _symbol in (("lt", "<"), ("le", "<="), ("gt", ">"), ("ge", ">="), ("neg", "-x"),
                       ("invert", "~x"), ("abs", "abs()")):
    setattr(Tensor, f"__{_name}__", _whole_tensor_operator(_symbol))


read_only_metadata(Tensor, "a dynamic ws.Tensor", "keep the shape in a new name (`n = x.shape[0]`), or pass "
                   "the tensor with the shape you mean (a view made on the host, e.g. "
                   "x.reshape(4) in numpy / torch)")


NEGATIVE_INDEX = ("\nFix: count from the end explicitly, e.g. x[x.shape[0] - 1] for the last "
                  "element.")


def _is_one(s) -> bool:
    return isinstance(s, int) and not isinstance(s, bool) and s == 1


def make_tensor(args_iter, dtype, ndim: int, unit_strides: tuple, index_dtype, origin=None) -> Tensor:
    """Build a traced Tensor from the kernel's block arguments (ptr, shape..., non-unit strides...)."""
    ptr = Pointer._wrap(next(args_iter), origin)
    shape = tuple(index_dtype._wrap(next(args_iter), origin) for _ in range(ndim))
    strides = tuple(1 if unit else index_dtype._wrap(next(args_iter), origin) for unit in unit_strides)
    return Tensor(ptr, shape, strides)


def tensor_abi(dtype, ndim, unit_strides, index_dtype, name: str) -> list:
    """The ABI slots of a tensor parameter: [(slot name, ir type)]."""
    slots = [(f"{name}.data", ir.PointerType(dtype.ir_type, "global"))]
    slots += [(f"{name}.shape[{k}]", index_dtype.ir_type) for k in range(ndim)]
    slots += [(f"{name}.stride[{k}]", index_dtype.ir_type) for k, u in enumerate(unit_strides) if not u]
    return slots
