"""TMA, the Tensor Memory Accelerator (``ws.tma``; sm_90): bulk asynchronous copies of tensor
tiles between global and shared memory, described by a host-made descriptor.

On the host, build a ``ws.tma.TensorDescriptor(tensor, box, swizzle=128)`` and pass it to the
kernel; there it is a ``TmaDescriptor`` (static geometry + the dynamic 128-byte CUtensorMap)::

    class Storage:
        tile: ws.smem.Array(ws.BFloat16, (64, 64), swizzle=128)  # box (64, 64) of bf16
        bars: ws.smem.MbarrierArray[1]

    @ws.kernel
    def k(desc, out: ws.Tensor):
        s = ws.smem.allocate(Storage)
        ...                                  # s.bars[0].init(1); fence; sync_threads
        if ws.arch.thread_idx()[0] == 0:
            s.bars[0].arrive_expect_tx(desc.smem_bytes)
            ws.tma.load(desc, s.tile, (row0, col0), s.bars[0])
        s.bars[0].wait(0)                    # the tile is in shared memory now
        x = s.tile[i, j]                     # the swizzled view reads logical element (i, j)

    k[grid, block](ws.tma.TensorDescriptor(x, box=(64, 64), swizzle=128), out)

Each executing thread issues its own copy: issue from one thread (``elect_one`` or a thread-id
test). Loads complete their bytes on an mbarrier (announce them first with
``arrive_expect_tx``); stores are tracked in per-thread bulk groups (``commit_group``,
``wait_group``). Before a TMA store reads data that threads wrote with ordinary stores, make
those writes visible to the async proxy: ``ws.arch.fence_proxy_async()`` then a barrier.

PTX ISA 8.0 "Data Movement and Conversion Instructions": cp.async.bulk.tensor, cp.async.bulk,
cp.async.bulk.commit_group, cp.async.bulk.wait_group; "prefetch.tensormap"; CUDA driver API
``cuTensorMapEncodeTiled``. Simulator semantics: ``sim/ops_tma.py``; docs/tma.md.
"""
from __future__ import annotations

from ..core.trace import builder
from ..ir.swizzle import swizzle_align
from ..runtime.tensormap import TensorDescriptor, set_device_form
from .layout_int import add
from .mbarrier import Mbarrier
from .operands import dynamic_i32, operand_error, pointer_operand, static_int
from .scalars import DTYPES, Scalar
from .smem import SmemArray
from .wgmma_tiles import TileLayout

__all__ = ["TensorDescriptor", "TmaDescriptor", "TensorMap", "load", "load_tile", "store",
           "commit_group", "wait_group", "prefetch_descriptor", "bulk_copy", "SMEM_ALIGN"]

SMEM_ALIGN = 128
"""Bytes a TMA tensor copy's shared-memory address must be aligned to (without swizzle)."""


class TensorMap:
    """The dynamic leaf of a TMA descriptor: one ``!tensormap`` SSA value (the 128-byte
    CUtensorMap kernel parameter)."""

    __slots__ = ("value", "origin")

    @classmethod
    def _wrap(cls, value, origin=None) -> "TensorMap":
        obj = object.__new__(cls)
        obj.value = value
        obj.origin = origin
        return obj

    def _rewrap(self, value) -> "TensorMap":
        return TensorMap._wrap(value, self.origin)

    def __bool__(self):
        raise TypeError("a TMA descriptor has no static truth value")

    def __repr__(self) -> str:
        return "<dynamic TensorMap>"


class TmaDescriptor:
    """A ``ws.tma.TensorDescriptor`` parameter inside a kernel: static ``dtype`` (a warpstage
    dtype class), ``box`` (elements, outermost first), ``swizzle`` (bytes), ``element_strides``,
    ``oob_fill``, ``l2_promotion``; dynamic ``map`` (a TensorMap leaf). ``smem_shape`` and
    ``smem_bytes`` are what one copy occupies in shared memory (``smem_bytes`` is also the
    transaction byte count a load completes). Follows the value protocol, so it passes into
    ``@ws.jit`` functions and through control flow."""

    __slots__ = ("ir_dtype", "box", "swizzle", "element_strides", "oob_fill", "l2_promotion",
                 "map")

    def __init__(self, ir_dtype, box, swizzle, element_strides, oob_fill, l2_promotion,
                 tensor_map: TensorMap):
        self.ir_dtype = ir_dtype
        self.box = tuple(box)
        self.swizzle = swizzle
        self.element_strides = tuple(element_strides)
        self.oob_fill = oob_fill
        self.l2_promotion = l2_promotion
        self.map = tensor_map

    @property
    def dtype(self):
        return DTYPES[self.ir_dtype]

    @property
    def rank(self) -> int:
        return len(self.box)

    @property
    def smem_shape(self) -> tuple:
        return tuple(-(-b // e) for b, e in zip(self.box, self.element_strides))

    @property
    def smem_bytes(self) -> int:
        n = self.ir_dtype.nbytes
        for d in self.smem_shape:
            n *= d
        return n

    def __extract_values__(self):
        return [self.map]

    def __new_from_values__(self, values):
        return TmaDescriptor(self.ir_dtype, self.box, self.swizzle, self.element_strides,
                             self.oob_fill, self.l2_promotion, values[0])

    def __static_key__(self):
        return ("TensorDescriptor", self.ir_dtype.name, self.rank, self.box, self.swizzle,
                self.element_strides, self.oob_fill, self.l2_promotion, "strides%16B")

    def __repr__(self) -> str:
        return (f"<TMA descriptor {self.ir_dtype} box={self.box} swizzle={self.swizzle} "
                f"(dynamic tensor map)>")

    @staticmethod
    def dtype_name(ir_dtype) -> str:
        """The warpstage dtype class's name of an ir scalar type (``BFloat16`` for bf16)."""
        return DTYPES[ir_dtype].__name__


set_device_form(TmaDescriptor)


def _descriptor(desc, what: str) -> TmaDescriptor:
    if isinstance(desc, TmaDescriptor):
        return desc
    if isinstance(desc, TensorDescriptor):
        raise operand_error(what, desc, "the kernel's TensorDescriptor parameter",
                            "pass the descriptor to the kernel as an argument; one read from a "
                            "global or a static object has no tensor map on the GPU")
    raise operand_error(what, describe_operand(desc), "a ws.tma.TensorDescriptor (passed as a "
                        "kernel argument)", "build the descriptor on the host, "
                        "ws.tma.TensorDescriptor(x, box=(rows, cols)), and pass it instead of "
                        "the tensor; the kernel copies box-shaped tiles of x through it")


def describe_operand(value) -> str:
    """A few words naming what a kernel got instead of a TMA descriptor."""
    from .pointer import Pointer
    from .tensor import Tensor
    from ..core.unbound import Unbound
    if isinstance(value, Unbound):
        raise value.error()
    if isinstance(value, Tensor):
        return (f"a tensor (ws.Tensor of {value.ptr.dtype.__name__}, {len(value.shape)}-d: a "
                "plain array argument)")
    if isinstance(value, Pointer):
        return f"a {value.space} pointer to {value.dtype.__name__}"
    if isinstance(value, Scalar):
        return f"a dynamic {type(value).__name__}"
    if isinstance(value, type):
        return f"the class {value.__module__}.{value.__qualname__} (not an instance)"
    return f"a {type(value).__name__} ({value!r:.40})"


DESCRIPTOR_ATTRS = frozenset(("smem_bytes", "smem_shape", "box", "element_strides", "oob_fill",
                              "l2_promotion", "map"))


def missing_attribute(obj, name: str, depth: int = 2) -> Exception:
    """The error for reading attribute ``name``, which ``obj`` (a tensor, pointer or scalar inside
    a kernel) does not have: for a TMA descriptor's attribute (``desc.smem_bytes``) an
    OperandError naming the mix-up (a plain array passed where the kernel expects a
    ``ws.tma.TensorDescriptor``) at the user's line, ``depth`` frames up; else AttributeError."""
    if name not in DESCRIPTOR_ATTRS:
        return AttributeError(f"'{type(obj).__name__}' object has no attribute '{name}'")
    import sys
    from ..errors import OperandError
    from ..core.source import format_location, user_location
    frame = sys._getframe(depth)
    while frame.f_back is not None and str(frame.f_globals.get("__name__")).startswith("warpstage."):
        frame = frame.f_back        # warpstage's own frames (the rewrite's attribute reads)
    names = [n for n, v in frame.f_locals.items() if v is obj and not n.startswith("__ws_")]
    loc = user_location()
    where = format_location(loc)
    return OperandError(
        f"{names[0] + '.' if names else ''}{name}: expected a ws.tma.TensorDescriptor (passed as "
        f"a kernel argument), got {describe_operand(obj)}, which has no '{name}'.\n"
        + (where + "\n" if where else "") + "Fix: build the descriptor on the host, "
        "ws.tma.TensorDescriptor(x, box=(rows, cols)), and pass it instead of the tensor; "
        "ws.tma.load/store copy box-shaped tiles of x through it.", where=str(loc) if loc else None)


def _tile(desc: TmaDescriptor, arr, what: str) -> SmemArray:
    """``arr`` checked to hold exactly one box of ``desc`` in its layout."""
    if not isinstance(arr, SmemArray):
        raise operand_error(what, type(arr).__name__, "a shared-memory array (ws.smem.Array "
                            "field of an allocated storage)", "declare the tile as "
                            f"ws.smem.Array({desc.dtype.__name__}, {desc.smem_shape}, "
                            f"swizzle={desc.swizzle}) and pass it (or one stage of it)")
    spec = (f"ws.smem.Array({desc.dtype.__name__}, {desc.smem_shape}, "
            f"swizzle={desc.swizzle})")
    if arr.ptr.value.type.pointee != desc.ir_dtype:
        view = {"bf16": "ml_dtypes.bfloat16", "f16": "numpy.float16"}.get(arr.dtype.ir_type.name)
        bits = (f" (float data held as 16-bit integers in numpy: describe x.view({view}) "
                "instead)") if view and desc.ir_dtype.name in ("u16", "i16") else ""
        raise operand_error(f"{what}'s dtype", arr.dtype.__name__,
                            f"the descriptor's {desc.dtype.__name__}", f"declare it as {spec}"
                            + bits)
    if arr.nbytes != desc.smem_bytes:
        raise operand_error(f"{what}'s size", f"{arr.nbytes} bytes (shape {arr.shape})",
                            f"{desc.smem_bytes} bytes, one box {desc.smem_shape} of "
                            f"{desc.dtype.__name__}", f"declare it as {spec}, or change the box")
    if arr.swizzle != desc.swizzle:
        raise operand_error(f"{what}'s swizzle", arr.swizzle,
                            f"the descriptor's swizzle {desc.swizzle} (TMA stores the tile in "
                            "that layout; the array's indexing must undo it)",
                            f"declare it as {spec}")
    need = max(SMEM_ALIGN, swizzle_align(desc.swizzle))
    if arr.align < need:
        raise operand_error(f"{what}'s alignment", f"{arr.align} bytes",
                            f"a multiple of {need} bytes (TMA needs {SMEM_ALIGN}; a "
                            f"{desc.swizzle}-byte swizzle repeats every {need})",
                            f"declare the field with align={need} (a swizzled array gets it by "
                            "itself), and index stages whose size is a multiple of it")
    return arr


def _coords(desc: TmaDescriptor, coords, what: str, store: bool = False) -> list:
    seq = coords if isinstance(coords, (tuple, list)) else (coords,)
    if len(seq) != desc.rank:
        raise operand_error(f"{what}'s coordinates", coords, f"{desc.rank} coordinates (one per "
                            f"box dimension, outermost first, in elements)",
                            f"pass a tuple of {desc.rank} ints or dynamic integers")
    inner = seq[-1]
    if not isinstance(inner, Scalar) and isinstance(inner, int) and (
            inner * desc.ir_dtype.nbytes) % 16:
        per = max(1, 16 // desc.ir_dtype.nbytes)
        raise operand_error(f"{what}'s innermost coordinate", inner,
                            f"a multiple of {per} elements ({16} bytes of "
                            f"{desc.dtype.__name__}): TMA starts a box on 16-byte boundaries "
                            "of a row (the GPU stops the kernel with an illegal instruction)",
                            "align the box's first column, or copy the unaligned part with "
                            "ordinary loads")
    if store and any(isinstance(c, int) and not isinstance(c, Scalar) and c < 0 for c in seq):
        raise operand_error(f"{what}'s coordinates", tuple(seq), "non-negative coordinates (a "
                            "TMA store clips a box past the end of the tensor, but one that "
                            "starts before it stops the kernel with an illegal instruction)",
                            "store the part inside the tensor with ordinary stores")
    return [dynamic_i32(c, f"{what}'s coordinate {k}") for k, c in enumerate(seq)]


def load(desc, dst, coords, bar, *, multicast=None) -> None:
    """Copy the box of ``desc``'s tensor whose first element is at ``coords`` (elements,
    outermost first, static or dynamic ints; may be negative or past the end) into the
    shared-memory array ``dst``, and complete ``desc.smem_bytes`` transaction bytes on the
    mbarrier ``bar``: PTX ``cp.async.bulk.tensor.<rank>d.shared::cluster.global.tile.mbarrier::
    complete_tx::bytes [dst], [desc, {coords}], [bar]``. Elements outside the tensor read as 0
    (NaN with ``oob_fill='nan'``). The full box's bytes are completed either way.

    ``dst``: an SmemArray of the descriptor's dtype, exactly ``desc.smem_shape`` elements, with
    the descriptor's swizzle, aligned to max(128, the swizzle's period) bytes. ``bar``: an
    Mbarrier; announce the bytes on it (``arrive_expect_tx``) and wait on it before reading
    ``dst``. Raises OperandError for a mismatched array, bad coordinates or barrier.

    ``multicast``: a CTA mask (a static int or a dynamic integer, 16 bits, bit r: the CTA of
    cluster rank r): the box is read once and lands in ``dst`` of every CTA of the mask (the
    same shared offset in each), completing ``desc.smem_bytes`` on the mbarrier at ``bar``'s
    offset in each: PTX ISA 9.7.9.25 ``cp.async.bulk.tensor.<rank>d.shared::cluster.global.tile
    .mbarrier::complete_tx::bytes.multicast::cluster [dst], [desc, {coords}], [bar], mask``.
    Every CTA of the mask announces the bytes on its own mbarrier and waits there; the kernel is
    launched with ``cluster=`` and the peers' mbarriers are initialized before the first
    multicast (``ws.arch.cluster_sync()``)."""
    what = "ws.tma.load()"
    d = _descriptor(desc, f"{what}'s descriptor")
    tile = _tile(d, dst, f"{what}'s destination")
    if not isinstance(bar, Mbarrier):
        raise operand_error(f"{what}'s mbarrier", type(bar).__name__, "an Mbarrier",
                            "pass storage.bars[i] (or pipe.producer_get_barrier(state))")
    xs = _coords(d, coords, what)
    if multicast is None:
        builder(what).tma_load(d.map.value, tile.ptr.value, bar.ptr.value, xs, d.box,
                               d.smem_bytes)
        return
    if not isinstance(multicast, Scalar):
        static_int(multicast, f"{what}'s multicast mask", range(1, 1 << 16),
                   "a CTA mask in [1, 2^16) (bit r: cluster rank r)",
                   "pass e.g. 0b11 for the two CTAs of a 2-CTA cluster")
    mask = dynamic_i32(multicast, f"{what}'s multicast mask")
    builder(what).tma_load_multicast(d.map.value, tile.ptr.value, bar.ptr.value, mask, xs, d.box,
                                     d.smem_bytes)


def load_tile(desc, layout, tile, coords, bar, *, multicast=None) -> None:
    """Load a wgmma smem tile by TMA as ``layout.blocks`` boxes: ``layout`` is the tile's
    ``ws.wgmma.TileLayout`` (``desc``'s box: ``layout.box``, one column block; leading box
    dimensions of 1 allowed), ``tile`` its smem array (``layout.shape``), ``coords`` the
    coordinates of the tile's element (0, 0) in ``desc``'s tensor (elements, outermost first;
    the last is the column). Box ``blk`` comes from column ``coords[-1] + blk *
    layout.block_cols`` into ``layout.block(tile, blk)``; all complete on ``bar`` (announce
    ``layout.nbytes``). ``multicast``: a CTA mask, each box multicast as in ``load``. Raises
    OperandError as ``load`` does, or for a ``layout`` that is not a TileLayout."""
    if not isinstance(layout, TileLayout):
        raise operand_error("ws.tma.load_tile()'s layout", type(layout).__name__,
                            "a ws.wgmma.TileLayout (the smem tile's layout)",
                            "pass the TileLayout the tile was allocated with")
    coords = tuple(coords)
    for blk in range(layout.blocks):
        col = add(coords[-1], blk * layout.block_cols)
        load(desc, layout.block(tile, blk), coords[:-1] + (col,), bar, multicast=multicast)


def store(desc, src, coords) -> None:
    """Copy the shared-memory array ``src`` (one box, laid out as ``load`` writes it) to
    ``desc``'s tensor at ``coords`` (elements past the tensor's end are not written; the
    coordinates must not be negative: the GPU faults on that), as part of this thread's current
    bulk group: PTX ``cp.async.bulk.tensor.<rank>d.global.shared::cta.tile
    .bulk_group [desc, {coords}], [src]``. Then ``commit_group()``; ``wait_group(0, read=True)``
    before overwriting ``src``; ``wait_group(0)`` before relying on the global writes.
    Data written to ``src`` with ordinary stores needs ``ws.arch.fence_proxy_async()`` (and a
    barrier if other threads wrote it) first."""
    what = "ws.tma.store()"
    d = _descriptor(desc, f"{what}'s descriptor")
    tile = _tile(d, src, f"{what}'s source")
    xs = _coords(d, coords, what, store=True)
    builder(what).tma_store(d.map.value, tile.ptr.value, xs, d.box, d.smem_bytes)


def commit_group() -> None:
    """Close this thread's uncommitted TMA stores (and bulk shared->global copies) into a bulk
    group: PTX ``cp.async.bulk.commit_group``."""
    builder("ws.tma.commit_group()").tma_commit_group()


def wait_group(n: int = 0, read: bool = False) -> None:
    """Wait until at most ``n`` (static, [0, 64)) of this thread's most recent bulk groups are
    pending: PTX ``cp.async.bulk.wait_group n``. With ``read=True``
    (``cp.async.bulk.wait_group.read n``) only until their shared-memory sources have been read,
    so the buffers can be reused; the global writes may still be in flight."""
    what = "ws.tma.wait_group()"
    n = static_int(n, f"{what}'s group count", range(64), "a static int in [0, 64)",
                   "pass the number of bulk groups allowed to stay in flight")
    if not isinstance(read, bool):
        raise operand_error(f"{what}'s read", read, "a static bool", "pass read=True or False")
    builder(what).tma_wait_group(n, read)


def prefetch_descriptor(desc) -> None:
    """Bring ``desc``'s 128-byte tensor map into the cache ahead of its first copy: PTX
    ``prefetch.tensormap [desc]`` (a hint; the simulator does nothing)."""
    what = "ws.tma.prefetch_descriptor()"
    d = _descriptor(desc, f"{what}'s descriptor")
    builder(what).tma_prefetch_descriptor(d.map.value)


def bulk_copy(dst, src, nbytes, bar) -> None:
    """Copy ``nbytes`` contiguous bytes from global ``src`` (a ``ws.Pointer``, e.g.
    ``tensor.ptr + offset``) to shared ``dst`` (a shared Pointer or an SmemArray) and complete
    them on ``bar``: PTX ``cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes
    [dst], [src], nbytes, [bar]``. ``nbytes``: a positive multiple of 16 (static, or a dynamic
    Int32); both addresses 16-byte aligned (checked by the simulator at run time)."""
    what = "ws.tma.bulk_copy()"
    d = pointer_operand(dst, f"{what}'s destination", "shared")
    s = pointer_operand(src, f"{what}'s source", "global")
    if not isinstance(nbytes, Scalar):
        static_int(nbytes, f"{what}'s byte count", None, "a positive multiple of 16",
                   "copy whole 16-byte chunks")
        if nbytes <= 0 or nbytes % 16:
            raise operand_error(f"{what}'s byte count", nbytes, "a positive multiple of 16",
                                "copy whole 16-byte chunks")
        if isinstance(dst, SmemArray) and nbytes > dst.nbytes:
            raise operand_error(f"{what}'s byte count", nbytes,
                                f"at most the destination's {dst.nbytes} bytes",
                                "copy into a larger array")
    if isinstance(dst, SmemArray) and dst.align < 16:
        raise operand_error(f"{what}'s destination alignment", f"{dst.align} bytes",
                            "16-byte alignment", "declare the array with align=16 or more")
    if not isinstance(bar, Mbarrier):
        raise operand_error(f"{what}'s mbarrier", type(bar).__name__, "an Mbarrier",
                            "pass storage.bars[i]")
    n = dynamic_i32(nbytes, f"{what}'s byte count")
    builder(what).tma_bulk_copy(d.value, s.value, n, bar.ptr.value)
