"""The static layout of shared storage (``ws.smem``, smem.py): the field types
``ArraySpec`` (``ws.smem.Array[...]``) and ``MbarrierSpec`` (``ws.smem.MbarrierArray[n]``), and
``Layout``, a storage class's byte offsets, size and alignment, computed by ``layout_of``
C-struct style (each field at the next multiple of its alignment, the size rounded up to the
largest alignment). Everything here is static: no IR is emitted.
"""
from __future__ import annotations

import inspect

from ..ir.swizzle import SWIZZLE_MODES, swizzle_align
from .mbarrier import MbarrierArray
from .operands import operand_error, static_int
from .scalars import DTYPES, Scalar

__all__ = ["Array", "ArraySpec", "MbarrierSpec", "Layout", "layout_of", "size_of", "BASE_ALIGN"]

BASE_ALIGN = 1024
"""Alignment of the dynamic shared memory base (PTX ``.extern .shared .align 1024``)."""


def _check_align(align, what: str) -> int:
    return static_int(align, what, [1 << k for k in range(11)],
                      f"a static power of two in [1, {BASE_ALIGN}] (bytes)",
                      "use 16 for vector access, 128 for TMA / wgmma tiles")


class ArraySpec:
    """The field type ``ws.smem.Array[dtype, shape, align, swizzle]``: a row-major array of
    ``shape`` (static ints) elements of ``dtype``, at an offset that is a multiple of ``align``
    bytes, stored with the Hopper ``swizzle`` (0, 32, 64 or 128 bytes; see smem.py's module
    docstring; the alignment becomes at least ``swizzle_align(swizzle)``)."""

    def __init__(self, dtype, shape, align: int = 16, swizzle: int = 0):
        if dtype not in DTYPES.values():
            raise operand_error("ws.smem.Array's dtype", dtype, "a warpstage dtype such as "
                                "ws.Float32", "write ws.smem.Array[ws.Float32, (rows, cols)]")
        shape = (shape,) if not isinstance(shape, (tuple, list)) else tuple(shape)
        for d in shape:
            static_int(d, "ws.smem.Array's shape", expected="static positive ints",
                       fix="shared-memory shapes are static: use Python ints")
            if d <= 0:
                raise operand_error("ws.smem.Array's shape", shape, "positive ints",
                                    "every extent must be at least 1")
        if isinstance(swizzle, bool) or swizzle not in SWIZZLE_MODES:
            raise operand_error("ws.smem.Array's swizzle", swizzle, f"one of {SWIZZLE_MODES} "
                                "(bytes; 0 = none)", "use the swizzle of the TMA descriptor that "
                                "fills the array, e.g. swizzle=128")
        self.dtype = dtype
        self.shape = shape
        self.swizzle = swizzle
        self.align = max(_check_align(align, "ws.smem.Array's alignment"), dtype.ir_type.nbytes,
                         swizzle_align(swizzle) if swizzle else 1)
        self.nbytes = dtype.ir_type.nbytes * _product(shape)

    def key(self):
        return ("Array", self.dtype.__name__, self.shape, self.align, self.swizzle)

    def __repr__(self) -> str:
        sw = f", swizzle={self.swizzle}" if self.swizzle else ""
        return f"ws.smem.Array[{self.dtype.__name__}, {self.shape}, {self.align}{sw}]"


class MbarrierSpec:
    """The field type ``ws.smem.MbarrierArray[n]``: ``n`` mbarriers, 8 bytes each, 8-aligned."""

    align = 8

    def __init__(self, n):
        self.n = static_int(n, "ws.smem.MbarrierArray's count", expected="a static positive int",
                            fix="the number of mbarriers is static: use a Python int")
        if self.n <= 0:
            raise operand_error("ws.smem.MbarrierArray's count", n, "a positive int",
                                "reserve at least one mbarrier")
        self.nbytes = 8 * self.n

    def key(self):
        return ("MbarrierArray", self.n)

    def __repr__(self) -> str:
        return f"ws.smem.MbarrierArray[{self.n}]"


class _ArrayMeta(type):
    def __getitem__(cls, item) -> ArraySpec:
        item = item if isinstance(item, tuple) else (item,)
        if not 2 <= len(item) <= 4:
            raise operand_error("ws.smem.Array[...]", item, "[dtype, shape] or [dtype, shape, "
                                "align(, swizzle)]", "write ws.smem.Array[ws.Float32, (rows, cols)]")
        return ArraySpec(*item)


class Array(metaclass=_ArrayMeta):
    """Field type factory: ``ws.smem.Array[dtype, shape]`` / ``[dtype, shape, align]`` /
    ``[dtype, shape, align, swizzle]`` (align and swizzle in bytes, defaults 16 and 0), or with
    keywords ``ws.smem.Array(dtype, shape, align=16, swizzle=0)``; see ``ArraySpec``."""

    def __new__(cls, dtype, shape, align: int = 16, swizzle: int = 0) -> ArraySpec:
        return ArraySpec(dtype, shape, align, swizzle)


def _product(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


# -- layout -------------------------------------------------------------------------------------
class Layout:
    """A storage class's static layout: ``fields`` [(name, spec, byte offset)], ``size`` and
    ``align`` in bytes. Nested storage fields have a Layout as their spec."""

    def __init__(self, cls, fields: list):
        self.cls = cls
        offset, align = 0, 1
        placed = []
        for name, spec in fields:
            offset = _round_up(offset, spec.align)
            placed.append((name, spec, offset))
            offset += spec.nbytes
            align = max(align, spec.align)
        self.fields = tuple(placed)
        self.by_name = {name: (spec, off) for name, spec, off in placed}
        self.align = align
        self.size = _round_up(offset, align)
        self.nbytes = self.size

    def key(self):
        return (self.cls.__module__, self.cls.__qualname__,
                tuple((n, s.key(), o) for n, s, o in self.fields))

    def __repr__(self) -> str:
        body = ", ".join(f"{n}@{o}: {s!r}" for n, s, o in self.fields)
        return (f"<smem layout {self.cls.__qualname__} ({self.size} bytes, align {self.align}): "
                f"{body}>")


def _round_up(x: int, a: int) -> int:
    return -(-x // a) * a


def _annotations(cls) -> dict:
    out: dict = {}
    for klass in reversed(cls.__mro__):
        if klass is object:
            continue
        try:
            out.update(inspect.get_annotations(klass, eval_str=True))
        except Exception as e:
            raise operand_error(f"shared storage class {cls.__qualname__}", f"an annotation that "
                                f"does not evaluate ({e})", "field annotations evaluable in the "
                                "class's module", "define field types at module level, or build "
                                "the class with ws.smem.make_storage(name, **fields)") from None
    return out


def layout_of(cls) -> Layout:
    """The Layout of storage class ``cls`` (computed once and cached on the class)."""
    cached = cls.__dict__.get("__ws_smem_layout__")
    if cached is not None:
        return cached
    fields = []
    for name, spec in _annotations(cls).items():
        nested = (isinstance(spec, type) and not issubclass(spec, Scalar)
                  and spec not in (Array, MbarrierArray) and _annotations(spec))
        if nested:
            spec = layout_of(spec)
        elif not isinstance(spec, (ArraySpec, MbarrierSpec)):
            raise operand_error(f"shared storage field {cls.__qualname__}.{name}", spec,
                                "ws.smem.Array[dtype, shape(, align)], ws.smem.MbarrierArray[n] "
                                "or a nested storage class", "annotate each field with one of "
                                "those (static shapes and counts)")
        fields.append((name, spec))
    if not fields:
        raise operand_error(f"shared storage class {cls.__qualname__}", "no annotated fields",
                            "at least one field", "annotate its fields, e.g. "
                            "`a: ws.smem.Array[ws.Float32, (64,)]`")
    layout = Layout(cls, fields)
    cls.__ws_smem_layout__ = layout
    # the static key of a storage class is its layout, not only its name (make_storage builds
    # same-named classes with different shapes)
    cls.__ws_class_key__ = staticmethod(layout.key)
    return layout


def size_of(cls_or_spec) -> int:
    """Bytes a storage class (or field type) occupies."""
    spec = cls_or_spec if isinstance(cls_or_spec, (ArraySpec, MbarrierSpec)) \
        else layout_of(cls_or_spec)
    return spec.nbytes
