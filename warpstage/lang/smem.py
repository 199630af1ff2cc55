"""Shared memory: storage classes laid out at compile time, allocated in the CTA's dynamic shared
memory, and used through typed views (``ws.smem``).

A storage class lists its fields with annotations; offsets and the total size are computed
statically, C-struct style (each field at the next multiple of its alignment, the size rounded up
to the largest alignment)::

    class SharedStorage:
        a: ws.smem.Array[ws.Float32, (2, 64)]          # 2 x 64 f32, row-major, 16-byte aligned
        b: ws.smem.Array[ws.BFloat16, (128, 64), 128]  # 128-byte aligned (TMA, wgmma)
        t: ws.smem.Array(ws.BFloat16, (2, 64, 64), swizzle=128)  # a TMA-swizzled tile ring
        full: ws.smem.MbarrierArray[2]                 # 2 mbarriers, 8 bytes each
        inner: OtherStorage                            # a nested storage class

    storage = ws.smem.allocate(SharedStorage)          # inside a kernel
    storage.a[1, j] = x                                # st.shared.f32
    storage.full[0].init(1)

``ws.smem.storage`` (decorator) checks and lays out a class when it is defined;
``ws.smem.make_storage(name, **fields)`` builds one from a config at run time. Shapes,
alignments and counts are static; indices may be dynamic (not bounds-checked on the GPU; the
simulator reports accesses outside shared memory). The field types and the layout computation
are in smem_layout.py; this module holds the views, ``storage`` and ``allocate``.

``allocate`` places the storage after the kernel's earlier allocations in the dynamic shared
memory (``nvvm.smem_base``, aligned to 1024 bytes): the trace context counts the bytes
reserved so far (``TraceContext.dynamic_smem``), and each allocation is an ``smem.alloc {offset,
nbytes}`` op, from which the ``kernel_attributes`` pass computes the kernel's total
(``attrs['dynamic_smem']``, bytes): the launch must pass at least that much dynamic shared
memory. Views follow the value protocol (their only leaf is their base pointer),
so they pass into ``@ws.jit`` functions and through control flow; the layout is static.

Swizzled arrays (``swizzle=32|64|128``, the Hopper shared-memory swizzle of ``ir/swizzle.py``)
hold data the way TMA (and wgmma) lay it out: ``a[i, j]`` reads the element at logical index
(i, j), its byte address permuted by ``swizzle_offset``; ``a.ptr`` is the unpermuted base. Their
alignment is raised to the swizzle's period (``swizzle_align``: 8 rows of the span, 1024 bytes
for 128). Every view knows a static alignment of its address (``a.align``, bytes), which TMA
copies check.
"""
from __future__ import annotations

from typing import Optional

from .. import ir
from ..core.target import TARGETS, target_for
from ..core.trace import builder, current
from ..ir.swizzle import swizzle_align
from .layout_swizzle import make_swizzle
from .mbarrier import MbarrierArray
from .operands import operand_error, static_int
from .pointer import Pointer
from .scalars import Scalar
from .tensor import read_only_metadata
from .smem_layout import (BASE_ALIGN, Array, ArraySpec, Layout, MbarrierSpec, _product,
                          _round_up, layout_of, size_of)

__all__ = ["Array", "ArraySpec", "MbarrierArray", "MbarrierSpec", "SmemArray", "SmemStorage",
           "Layout", "storage", "make_storage", "layout_of", "size_of", "allocate",
           "MAX_DYNAMIC_SMEM", "BASE_ALIGN"]

MAX_DYNAMIC_SMEM = target_for("sm_90a").max_dynamic_smem
"""sm_90's per-CTA limit in bytes (227 KiB); ``allocate`` checks the traced kernel's target."""
"""Bytes of shared memory one CTA may use on sm_90 (with the opt-in attribute above 48 KiB)."""


def storage(cls):
    """Class decorator: check and lay out a shared storage class now (errors at definition).
    Adds ``cls.__ws_smem_layout__``. Optional: ``allocate`` lays out undecorated classes too."""
    layout_of(cls)
    return cls


def make_storage(name: str, **fields) -> type:
    """A storage class named ``name`` with ``fields`` (name -> field type) in keyword order,
    for layouts computed from a config: ``make_storage("S", a=ws.smem.Array[dt, (stages, n)])``."""
    cls = type(name, (), {"__annotations__": dict(fields), "__module__": __name__})
    return storage(cls)


# -- views --------------------------------------------------------------------------------------
class SmemArray:
    """An array in shared memory: ``ptr`` (``ws.Pointer[dtype, 'shared']``), static ``shape``
    and row-major ``strides`` (elements). ``a[i, j]`` loads (``ld.shared``), ``a[i, j] = v``
    stores; fewer indices than dimensions give a sub-array view (``stage_buf = a[s]``). Static
    indices are bounds-checked (a negative one is an error, as for tensors: indices are never
    wrapped, see ``ws.Tensor``); dynamic ones are not.

    ``swizzle``: 0, or the span (32/64/128 bytes) of the Hopper swizzle the data is stored with:
    element accesses then go to ``swizzle_offset`` of their logical byte offset, and sub-views
    must start at a multiple of the swizzle's period. ``align``: a static power of two (bytes)
    that the view's address is known to be a multiple of (its field's alignment, lowered by
    sub-view offsets)."""

    __slots__ = ("ptr", "shape", "strides", "swizzle", "align")

    def __init__(self, ptr: Pointer, shape: tuple, strides: Optional[tuple] = None,
                 swizzle: int = 0, align: Optional[int] = None):
        self.ptr = ptr
        self.swizzle = swizzle
        self.align = align if align is not None else ptr.value.type.pointee.nbytes
        self.shape = tuple(shape)
        if strides is None:
            strides, n = [], 1
            for d in reversed(self.shape):
                strides.append(n)
                n *= d
            strides = tuple(reversed(strides))
        self.strides = tuple(strides)

    @property
    def dtype(self):
        return self.ptr.dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return _product(self.shape)

    @property
    def nbytes(self) -> int:
        return self.size * self.ptr.value.type.pointee.nbytes

    def __len__(self) -> int:
        return self.shape[0]

    def __iter__(self):
        """``for row in a``: a static loop over the static first dimension (views or elements)."""
        for i in range(self.shape[0]):
            yield self[i]

    def _locate(self, index):
        index = index if isinstance(index, tuple) else (index,)
        if len(index) > self.ndim:
            raise operand_error("shared array index", index, f"at most {self.ndim} indices",
                                f"index with at most {self.ndim} ints: the array has shape "
                                f"{self.shape}.")
        static, dynamic = 0, None
        esize = self.ptr.value.type.pointee.nbytes
        align = self.align
        for k, i in enumerate(index):
            if isinstance(i, Scalar):
                if not (i.ir_type.is_int or i.ir_type.is_bool):
                    raise operand_error("shared array index", f"a dynamic {type(i).__name__}",
                                        "an integer", "index with ints or dynamic integers")
                align = min(align, _lowbit(self.strides[k] * esize))
                term = i * self.strides[k] if self.strides[k] != 1 else i
                dynamic = term if dynamic is None else dynamic + term
                continue
            i = static_int(i, "shared array index", expected="an int or a dynamic integer",
                           fix="index with ints or dynamic integers (slices are not supported)")
            if not 0 <= i < self.shape[k]:
                raise operand_error(f"shared array index {k}", i,
                                    f"an index in [0, {self.shape[k]})" + (
                                        " (indices are never wrapped, as for tensors)"
                                        if i < 0 else ""),
                                    f"keep index {k} in [0, {self.shape[k]}): the array has "
                                    f"shape {self.shape}" + (
                                        f"; count from the end explicitly: index "
                                        f"{self.shape[k] + i} for {i}" if i < 0 else "") + ".")
            static += i * self.strides[k]
        if static:
            align = min(align, _lowbit(static * esize))
        offset = dynamic if static == 0 else (static if dynamic is None else dynamic + static)
        return len(index), offset, align

    def _at(self, offset) -> Pointer:
        if offset is None or (isinstance(offset, int) and offset == 0):
            return self.ptr
        return self.ptr + offset

    def __getitem__(self, index):
        n, offset, align = self._locate(index)
        if n < self.ndim:
            if self.swizzle and align < swizzle_align(self.swizzle):
                raise self._subview_error(n, align)
            return SmemArray(self._at(offset), self.shape[n:], self.strides[n:], self.swizzle,
                             align)
        return self.ptr[self._element(offset)]

    def _subview_error(self, n: int, align: int):
        """The error for a sub-view (the trailing dims ``shape[n:]``) that does not start on a
        swizzle period: its size names the fix when it is not a whole number of periods."""
        period = swizzle_align(self.swizzle)
        esize = self.ptr.value.type.pointee.nbytes
        sub = self.shape[n:]
        nbytes = esize * _product(sub)
        what = f"sub-view {sub} of a {self.swizzle}-byte swizzled shared array {self.shape}"
        expected = (f"sub-views starting at multiples of {period} bytes (the swizzle's period: "
                    f"8 rows of {self.swizzle} bytes)")
        if nbytes % period == 0 or len(sub) < 2:          # aligned stages, or a row view
            return operand_error(what, f"an index at a {align}-byte aligned offset", expected,
                                 "index every dimension (a[i, j]), or take sub-views of whole "
                                 "swizzled tiles (e.g. one stage of a [stages, rows, cols] array)")
        inner = esize * _product(sub[1:]) if len(sub) > 1 else nbytes
        rows = -(-period // inner) if inner < period and period % inner == 0 else None
        shapes = []
        if rows is not None and len(sub) > 1:
            whole = -(-sub[0] // rows) * rows
            shapes.append(f"{self.shape[:n] + (whole,) + sub[1:]}")
        smaller = [z for z in (64, 32) if z < self.swizzle and nbytes % swizzle_align(z) == 0
                   and esize * sub[-1] <= z]
        alt = (f"; or swizzle={smaller[0]} (period {swizzle_align(smaller[0])} bytes) if the rows "
               f"fit its {smaller[0]}-byte span" if smaller else "")
        return operand_error(
            what, f"stages of {nbytes} bytes",
            f"each stage (the trailing dims {sub}) to be a whole number of swizzle periods "
            f"({period} bytes for a {self.swizzle}-byte swizzle), so that every stage starts "
            "where the swizzle pattern restarts",
            f"make each stage a multiple of {period} bytes"
            + (f" ({rows} rows of {inner} bytes), e.g. shape {shapes[0]}" if shapes else "")
            + f"{alt}; or use swizzle=0")

    def __setitem__(self, index, value):
        n, offset, _ = self._locate(index)
        if n < self.ndim:
            raise operand_error("shared array store", f"{n} indices", f"{self.ndim} indices",
                                "store single elements: a[i, j] = v")
        self.ptr[self._element(offset)] = value

    def _element(self, offset):
        """The element offset from ``ptr`` where logical element ``offset`` is stored: itself,
        or under a swizzle the hardware's permutation on element offsets,
        ``ws.layout.make_swizzle(span, dtype)`` (byte bits [4, 4+B) XOR bits [7, 7+B), as
        ``ir.swizzle.swizzle_offset``; an and, a shift and a xor for a dynamic offset)."""
        if offset is None:
            return 0
        if not self.swizzle:
            return offset
        return make_swizzle(self.swizzle, self.dtype)(offset)

    @property
    def layout(self):
        """The view as a ``ws.layout`` layout (elements): ``shape:strides``, composed with
        ``make_swizzle`` when the array is swizzled."""
        from .layout_core import Layout
        from .layout_swizzle import ComposedLayout
        lay = Layout(self.shape, self.strides)
        return ComposedLayout(make_swizzle(self.swizzle, self.dtype), 0, lay) if self.swizzle else lay

    def __extract_values__(self):
        return [self.ptr]

    def __new_from_values__(self, values):
        return SmemArray(values[0], self.shape, self.strides, self.swizzle, self.align)

    def __static_key__(self):
        return ("SmemArray", self.shape, self.strides, self.swizzle, self.align)

    def __repr__(self) -> str:
        sw = f" swizzle={self.swizzle}" if self.swizzle else ""
        return f"<SmemArray {self.dtype.__name__}{list(self.shape)}{sw} align={self.align}>"


read_only_metadata(SmemArray, "a shared-memory array (ws.smem)", "index a sub-view (`stage = a[s]`) "
                   "or allocate a field of the shape you mean (ws.smem.Array[dtype, shape])")


class SmemStorage:
    """An allocated storage class: each field is a view (``SmemArray``, ``MbarrierArray`` or a
    nested ``SmemStorage``) at its static offset from ``ptr`` (``ws.Pointer[ws.Uint8,
    'shared']``). ``layout`` is the static Layout."""

    __slots__ = ("layout", "ptr")

    def __init__(self, layout: Layout, ptr: Pointer):
        self.layout = layout
        self.ptr = ptr

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        field = self.layout.by_name.get(name)
        if field is None:
            raise AttributeError(f"shared storage {self.layout.cls.__qualname__} has no field "
                                 f"{name!r}; fields: {', '.join(self.layout.by_name)}")
        spec, offset = field
        return _view(spec, self.ptr if offset == 0 else self.ptr + offset)

    def __extract_values__(self):
        return [self.ptr]

    def __new_from_values__(self, values):
        return SmemStorage(self.layout, values[0])

    def __static_key__(self):
        return ("SmemStorage", self.layout.key())

    def __repr__(self) -> str:
        return f"<SmemStorage {self.layout.cls.__qualname__} ({self.layout.size} bytes)>"


def _cast(p: Pointer, pointee: ir.ScalarType) -> Pointer:
    return Pointer._wrap(builder("ws.smem").ptr_cast(p.value, pointee), p.origin)


def _lowbit(x: int) -> int:
    """The largest power of two dividing ``x`` (``BASE_ALIGN`` for 0: no lower bound)."""
    return x & -x if x else BASE_ALIGN


def _view(spec, ptr_u8: Pointer):
    if isinstance(spec, ArraySpec):
        return SmemArray(_cast(ptr_u8, spec.dtype.ir_type), spec.shape, None, spec.swizzle,
                         spec.align)
    if isinstance(spec, MbarrierSpec):
        return MbarrierArray(_cast(ptr_u8, ir.u64), spec.n)
    return SmemStorage(spec, ptr_u8)


def _target(ctx):
    """The Target of the kernel being traced (its CompileOptions.arch; sm_90a if unknown: the
    backend reports an unknown arch)."""
    arch = getattr(ctx.options, "arch", "sm_90a")
    return TARGETS.get(arch) or target_for("sm_90a")


def allocate(cls_or_spec):
    """Reserve a storage class (or a single ``Array``/``MbarrierArray`` field type) in the CTA's
    dynamic shared memory and return its view. Each call takes the next aligned bytes after the
    kernel's earlier allocations (an ``smem.alloc`` op; the passes sum them into the kernel's
    dynamic shared memory).
    Raises OperandError when the total exceeds the target's per-CTA limit (``core.target``:
    227 KiB on sm_90)."""
    what = "ws.smem.allocate()"
    ctx = current(what)
    spec = cls_or_spec if isinstance(cls_or_spec, (ArraySpec, MbarrierSpec)) \
        else layout_of(cls_or_spec)
    offset = _round_up(ctx.dynamic_smem, spec.align)
    end = offset + spec.nbytes
    target = _target(ctx)
    limit = target.max_dynamic_smem
    if end > limit:
        raise operand_error(what, f"{spec!r} at byte {offset} (ending at {end})",
                            f"a total of at most {limit} bytes ({limit // 1024} KiB) per CTA "
                            f"on {target.arch}", "use fewer pipeline stages or smaller tiles")
    ctx.dynamic_smem = end
    base = Pointer._wrap(builder(what).smem_alloc(offset, spec.nbytes))
    return _view(spec, base)
