"""TMA tensor descriptors on the host: ``ws.tma.TensorDescriptor`` (validation, the static key,
the 128-byte ``CUtensorMap`` encoding, and the simulator's view of it).

A descriptor describes a global tensor (address, sizes, strides: dynamic data inside the 128
bytes) and the box that one TMA copy moves (box shape, swizzle, element strides, out-of-bounds
fill, L2 promotion: static, part of the kernel's specialization key). It is built once on the
host and passed to a kernel as an argument; inside the kernel it is a ``ws.tma.TmaDescriptor``.

The driver's constraints (CUDA driver API ``cuTensorMapEncodeTiled``) are checked when the
descriptor is built, with or without a GPU, so an error names the argument that breaks one:
rank 1..5; the global address 16-byte aligned; the innermost dimension contiguous (stride 1) and
every other stride a non-negative multiple of 16 bytes below 2^40; sizes in [1, 2^32]; box
extents in [1, 256]; the box's inner extent a multiple of 16 bytes and, with a swizzle, at most
the swizzle span; element strides in [1, 8] (the innermost 1: TMA has none there).

Order: warpstage lists dimensions outermost first, like the tensor's shape (``box=(64, 32)`` for
64 rows of 32 columns); the driver and PTX list them innermost first, so the encoding reverses.

Only this module (and ``runtime.driver``) imports ``cuda.bindings``, and only when a descriptor is
first encoded for a GPU launch.
"""
from __future__ import annotations

import ctypes
from typing import Optional

from ..errors import ArgumentError, OperandError
from ..ir.swizzle import SWIZZLE_MODES

__all__ = ["TensorDescriptor", "TensorMapArg", "SimTensorMap", "MAX_RANK", "MAX_BOX",
           "L2_PROMOTIONS", "OOB_FILLS", "TENSORMAP_BYTES"]

MAX_RANK = 5
MAX_BOX = 256
TENSORMAP_BYTES = 128
L2_PROMOTIONS = (0, 64, 128, 256)
OOB_FILLS = ("zero", "nan")
_DATA_TYPES = {"u8": "UINT8", "i8": "UINT8", "u16": "UINT16", "i16": "UINT16", "u32": "UINT32",
               "i32": "INT32", "u64": "UINT64", "i64": "INT64", "f16": "FLOAT16",
               "bf16": "BFLOAT16", "f32": "FLOAT32", "f64": "FLOAT64", "e4m3": "UINT8",
               "e5m2": "UINT8"}
"""IR dtype -> CU_TENSOR_MAP_DATA_TYPE_*; 8/16-bit signed ints copy as the unsigned type of their
width (a tile copy moves bits; only the NaN fill looks at the type)."""


def _ints(value, what: str, n: Optional[int] = None) -> tuple:
    seq = value if isinstance(value, (tuple, list)) else (value,)
    if any(isinstance(v, bool) or not isinstance(v, int) for v in seq) or (
            n is not None and len(seq) != n):
        count = f"{n} " if n is not None else ""
        raise OperandError(f"TensorDescriptor {what}: expected a tuple of {count}static ints, got "
                           f"{value!r}.\nFix: pass Python ints, outermost dimension first.")
    return tuple(seq)


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


_DEVICE_FORM: list = []


def set_device_form(cls) -> None:
    """Register the kernel-side class a ``TensorDescriptor`` becomes when traced (``lang/tma.py``
    registers ``TmaDescriptor`` when imported). It is called with (ir dtype, box, swizzle,
    element_strides, oob_fill, l2_promotion, tensor map) and has ``dtype_name(ir dtype)``, the
    warpstage dtype's name. The runtime does not import ``lang/`` (DESIGN §3), so the dependency
    is inverted here."""
    _DEVICE_FORM[:] = [cls]


def _device_form():
    return _DEVICE_FORM[0]      # set on ``import warpstage`` (which imports lang/)


class TensorDescriptor:
    """A TMA descriptor of ``tensor`` for copies of ``box``-shaped tiles (host side).

    ``tensor``: a torch/cupy CUDA tensor (GPU launches) or a numpy array / CPU tensor (the
    simulator), of rank 1..5, dtype one of u8/i8/u16/i16/u32/i32/u64/i64/f16/bf16/f32/f64,
    innermost dimension contiguous. ``box``: the tile shape in elements, outermost first (a
    static tuple of ints in [1, 256]; the innermost extent times the element size a multiple of
    16 bytes). ``swizzle``: the shared-memory swizzle span in bytes, 0 (none), 32, 64 or 128
    (default; the box's inner extent must fit in it). ``oob_fill``: what a load reads outside the
    tensor, 'zero' (default) or 'nan' (float dtypes). ``l2_promotion``: 0, 64, 128 (default) or
    256 bytes. ``element_strides``: per-dimension traversal step (1..8, default all 1; the
    innermost must be 1): a copy moves ``ceil(box[i] / element_strides[i])`` elements along
    dimension i. Interleaved layouts are not supported.

    Static (in the kernel's specialization key): dtype, rank, box, swizzle, element strides,
    fill, L2 promotion. Dynamic (inside the 128 bytes): the address, sizes and strides, so
    tensors of other sizes reuse the compiled kernel. Raises ArgumentError for a tensor that TMA
    cannot address and OperandError for a bad box/swizzle/fill/promotion/stride value.

    The descriptor captures the tensor's address when built: rebuild it if the tensor's storage
    changes. CUDA: ``cuTensorMapEncodeTiled``; PTX ISA "Tensor-map"."""

    __ws_fields__ = ((), ("tensormap",))

    def __init__(self, tensor, box, swizzle: int = 128, *, oob_fill: str = "zero",
                 l2_promotion: int = 128, element_strides=None, interleave: str = "none"):
        from .tensors import as_tensor_arg
        ta = (tensor if type(tensor) is _TypeOnlyTensor else
              as_tensor_arg(tensor, "TensorDescriptor's tensor"))
        if ta is None:
            raise ArgumentError(f"TensorDescriptor needs a tensor (torch, cupy, numpy or any "
                                f"DLPack / array-interface object), got {type(tensor).__name__}."
                                "\nFix: pass the tensor the kernel copies tiles of.")
        self.tensor = tensor
        self.tensor_arg = ta
        self.dtype = ta.dtype
        rank = len(ta.shape)
        if not 1 <= rank <= MAX_RANK:
            raise ArgumentError(f"TensorDescriptor: TMA addresses tensors of rank 1 to {MAX_RANK}, "
                                f"got a {rank}-d tensor.\nFix: reshape it (merge or split "
                                "dimensions) to at most 5.")
        self.box = _ints(box, "box", rank)
        self.swizzle = swizzle
        self.element_strides = (_ints(element_strides, "element_strides", rank)
                                if element_strides is not None else (1,) * rank)
        self.oob_fill = oob_fill
        self.l2_promotion = l2_promotion
        if interleave != "none":
            raise OperandError(f"TensorDescriptor interleave: expected 'none', got "
                               f"{interleave!r}.\nFix: interleaved layouts (NC/8HWC8) are not "
                               "supported; describe the tensor in its plain layout.")
        self._check()
        self._encoded: Optional[bytes] = None
        self._template: Optional["TensorDescriptor"] = None     # set by at(): see encode()
        # the launch layer's (cache key part, call-signature token), made at the first launch
        # (frontend.kinds.tma.descriptor_key): a descriptor is not changed after it is built
        self._launch_key: Optional[tuple] = None
        self.tensormap = TensorMapArg(self)

    @classmethod
    def spec(cls, dtype, box, swizzle: int = 128, *, oob_fill: str = "zero",
             l2_promotion: int = 128, element_strides=None) -> "TensorDescriptor":
        """A descriptor given by its static parts only, for ``ws.compile`` / ``ws.explain``
        (like ``ws.Tensor[ws.Float32, 2]`` for a tensor): ``dtype`` a warpstage dtype
        (``ws.BFloat16``), the rest as in the constructor; the rank is ``len(box)``. It stands
        for a contiguous tensor at a 16-byte aligned address and cannot be launched."""
        ir_type = getattr(dtype, "ir_type", None)
        if ir_type is None:
            raise OperandError(f"TensorDescriptor.spec dtype: expected a warpstage dtype (e.g. "
                               f"ws.Float32), got {dtype!r}.\nFix: pass ws.Float16, ws.BFloat16, "
                               "ws.Float32, ws.Int32, ...")
        return cls(_TypeOnlyTensor(ir_type, _ints(box, "box")), box, swizzle, oob_fill=oob_fill,
                   l2_promotion=l2_promotion, element_strides=element_strides)

    def at(self, address: int) -> "TensorDescriptor":
        """This descriptor for the tensor of the same geometry (shape, strides, dtype, device)
        at another ``address`` (bytes, 16-byte aligned): a new descriptor, not yet encoded, that
        holds no tensor (the caller keeps the memory alive for the launch). What a host path
        that checked the geometry once uses when only the data moved: the 128-byte map differs
        from this one in its address field only, so when this one is encoded the new one's map
        is a copy of it with the address replaced (``cuTensorMapReplaceAddress``, CUDA 12.0+:
        no validation in Python, no full encode), else encoded anew. Raises ArgumentError for a
        misaligned address."""
        if address % 16:
            raise ArgumentError(f"TensorDescriptor: the tensor's address {address:#x} is not "
                                "16-byte aligned; TMA needs a 16-byte aligned global address.\n"
                                "Fix: describe a tensor whose first element is 16-byte aligned.")
        from .tensors import TensorArg
        ta = self.tensor_arg
        d = object.__new__(TensorDescriptor)
        d.__dict__.update(self.__dict__)
        d.tensor = None
        d.tensor_arg = TensorArg(address, ta.shape, ta.strides, ta.dtype, ta.device,
                                 ta.device_index, None, ta.kind)
        d._encoded = None
        d._template = self if self._template is None else self._template
        d.tensormap = TensorMapArg(d)
        return d

    def _launchable(self) -> None:
        if type(self.tensor_arg) is _TypeOnlyTensor:
            self.tensor_arg.owner                   # raises: a spec() has no tensor

    # -- geometry ----------------------------------------------------------------------------
    @property
    def rank(self) -> int:
        return len(self.box)

    @property
    def shape(self) -> tuple:
        return tuple(self.tensor_arg.shape)

    @property
    def strides(self) -> tuple:
        """Strides in elements, outermost first (as the tensor's)."""
        return tuple(self.tensor_arg.strides)

    @property
    def smem_shape(self) -> tuple:
        """The shape one copy occupies in shared memory: ``ceil(box / element_strides)``."""
        return tuple(_ceil_div(b, e) for b, e in zip(self.box, self.element_strides))

    @property
    def smem_bytes(self) -> int:
        """Bytes one copy moves (and completes on an mbarrier)."""
        n = self.dtype.nbytes
        for d in self.smem_shape:
            n *= d
        return n

    def _byte_strides(self) -> tuple:
        """Byte strides outermost first; size-1 dimensions get a valid stand-in (never used to
        address anything, but the driver checks every stride)."""
        esize = self.dtype.nbytes
        out = []
        for n, s in zip(self.shape, self.strides):
            sb = s * esize
            out.append(max(16, -(-sb // 16) * 16) if n == 1 else sb)
        return tuple(out)

    def _check(self) -> None:
        ta, esize = self.tensor_arg, self.dtype.nbytes
        if self.dtype.name not in _DATA_TYPES:
            raise ArgumentError(f"TensorDescriptor: TMA has no data type for {self.dtype}.\nFix: "
                                "pass a tensor of an 8/16/32/64-bit int or f16/bf16/f32/f64 dtype "
                                "(numpy: np.float16/np.float32/..., or ml_dtypes.bfloat16 for "
                                "bf16).")
        if ta.data_ptr % 16:
            raise ArgumentError(f"TensorDescriptor: the tensor's address {ta.data_ptr:#x} is not "
                                "16-byte aligned; TMA needs a 16-byte aligned global address.\n"
                                "Fix: describe a tensor whose first element is 16-byte aligned "
                                "(e.g. a fresh allocation, or a view at an offset that is a "
                                "multiple of 16 bytes).")
        for k, n in enumerate(self.shape):
            if not 1 <= n <= 2**32:
                raise ArgumentError(f"TensorDescriptor: dimension {k} has size {n}; TMA needs "
                                    "sizes in [1, 2^32].\nFix: skip empty tensors on the host.")
        if self.shape[-1] != 1 and self.strides[-1] != 1:
            raise ArgumentError(f"TensorDescriptor: the innermost dimension has stride "
                                f"{self.strides[-1]} (elements); TMA needs it contiguous (stride "
                                "1).\nFix: pass a contiguous copy (np.ascontiguousarray(x) for "
                                "numpy, x.contiguous() for torch), or describe the transposed "
                                "tensor and swap the box.")
        for k, sb in enumerate(self._byte_strides()[:-1]):
            if sb < 0:
                raise ArgumentError(
                    f"TensorDescriptor: dimension {k} has a negative stride ({self.strides[k]} "
                    "elements, e.g. a reversed view); TMA walks every dimension forwards.\nFix: "
                    "describe a copy with positive strides (np.ascontiguousarray(x), "
                    "x.contiguous() or x.copy()), or flip the coordinates in the kernel instead.")
            if sb % 16 or sb >= 2**40:
                raise ArgumentError(
                    f"TensorDescriptor: dimension {k} has a stride of {sb} bytes "
                    f"({self.strides[k]} elements of {esize} bytes); TMA needs strides that are "
                    "non-negative multiples of 16 bytes below 2^40.\nFix: pad the rows to a "
                    f"multiple of {16 // esize if esize < 16 else 1} elements (allocate wider "
                    "and slice), or copy into such a layout.")
        for k, b in enumerate(self.box):
            if not 1 <= b <= MAX_BOX:
                fix = ("copy a larger tile with several TMA copies of at most 256 elements per "
                       "dimension" if b > MAX_BOX else "give every box dimension at least 1 "
                       "element: the box is the tile one copy moves, in elements, outermost "
                       f"first (e.g. box=(64, {max(1, 128 // esize)}))")
                raise OperandError(f"TensorDescriptor box: dimension {k} is {b}; TMA boxes have "
                                   f"1 to {MAX_BOX} elements per dimension, got box {self.box}."
                                   f"\nFix: {fix}.")
        inner = self.box[-1] * esize
        if inner % 16:
            raise OperandError(f"TensorDescriptor box: its inner extent is {self.box[-1]} "
                               f"elements = {inner} bytes; TMA needs a multiple of 16 bytes.\n"
                               f"Fix: make box[-1] a multiple of {max(1, 16 // esize)}.")
        if self.swizzle not in SWIZZLE_MODES or isinstance(self.swizzle, bool):
            raise OperandError(f"TensorDescriptor swizzle: expected one of {SWIZZLE_MODES} "
                               f"(bytes; 0 = none), got {self.swizzle!r}.\nFix: use 128 for "
                               "tiles whose rows are 128 bytes (e.g. 64 bf16), or 0.")
        if self.swizzle and inner > self.swizzle:
            raise OperandError(f"TensorDescriptor box: its inner extent is {inner} bytes, more "
                               f"than the {self.swizzle}-byte swizzle span; TMA needs the "
                               "inner extent to fit in one swizzle row.\nFix: use box[-1] = "
                               f"{self.swizzle // esize} (and copy the rest with more copies), "
                               "or swizzle=0.")
        for k, e in enumerate(self.element_strides):
            if not 1 <= e <= 8:
                raise OperandError(f"TensorDescriptor element_strides: dimension {k} is {e}; "
                                   "TMA traversal strides are 1 to 8.\nFix: use a stride in "
                                   "[1, 8].")
        if self.element_strides[-1] != 1:
            raise OperandError(f"TensorDescriptor element_strides: the innermost is "
                               f"{self.element_strides[-1]}; TMA has no traversal stride in the "
                               "innermost dimension.\nFix: use 1 there.")
        if self.oob_fill not in OOB_FILLS:
            raise OperandError(f"TensorDescriptor oob_fill: expected 'zero' or 'nan', got "
                               f"{self.oob_fill!r}.\nFix: pass oob_fill='zero'.")
        if self.oob_fill == "nan" and not self.dtype.is_float:
            raise OperandError(f"TensorDescriptor oob_fill: 'nan' needs a float dtype, the tensor "
                               f"is {self.dtype}.\nFix: use oob_fill='zero'.")
        if self.l2_promotion not in L2_PROMOTIONS or isinstance(self.l2_promotion, bool):
            raise OperandError(f"TensorDescriptor l2_promotion: expected one of {L2_PROMOTIONS} "
                               f"(bytes; 0 = none), got {self.l2_promotion!r}.\nFix: pass 128.")

    # -- value protocol (host side: a static skeleton and one dynamic leaf) -------------------
    def __extract_values__(self):
        return [self.tensormap]

    def __new_from_values__(self, values):
        return _device_form()(self.dtype, self.box, self.swizzle, self.element_strides,
                              self.oob_fill, self.l2_promotion, values[0])

    def __static_key__(self):
        # strides that are multiples of 16 bytes are required (checked above): recorded so the
        # key says what the compiled code assumed
        return ("TensorDescriptor", self.dtype.name, self.rank, self.box, self.swizzle,
                self.element_strides, self.oob_fill, self.l2_promotion, "strides%16B")

    def __repr__(self) -> str:
        return (f"ws.tma.TensorDescriptor({self.dtype}{list(self.shape)}, box={self.box}, "
                f"swizzle={self.swizzle})")

    def __ws_describe__(self) -> tuple:
        """(type, static key) in words, for ws.explain and recompile reasons."""
        strides = ("" if all(e == 1 for e in self.element_strides) else
                   f" element_strides={self.element_strides}")
        return (f"ws.tma.TensorDescriptor[{_device_form().dtype_name(self.dtype)}, rank {self.rank}]",
                f"box={self.box} swizzle={self.swizzle} oob_fill={self.oob_fill} "
                f"l2_promotion={self.l2_promotion}{strides}")

    # -- encodings ---------------------------------------------------------------------------
    def encode(self) -> bytes:
        """The 128-byte CUtensorMap (``cuTensorMapEncodeTiled``), made once and kept. Needs the
        tensor on a CUDA device. Raises ArgumentError for a CPU tensor, DeviceError when the
        driver rejects the descriptor."""
        if self._encoded is None:
            self._launchable()
            ta = self.tensor_arg
            if ta.device != "cuda":
                raise ArgumentError(f"{self!r} describes a {ta.device} tensor, which the GPU "
                                    "cannot read.\nFix: build the descriptor from a CUDA tensor "
                                    "(x.cuda()), or run in the simulator (ws.set_target('sim')).")
            t = getattr(self, "_template", None)
            self._encoded = (_replace_address(t._encoded, self)
                             if t is not None and t._encoded is not None else _encode_tiled(self))
        return self._encoded

    def check_unmoved(self) -> None:
        """Raise ArgumentError if the tensor's data address is no longer the one the descriptor
        was built with (numpy ``x.resize(..., refcheck=False)``, torch ``x.resize_`` / ``x.set_``
        reallocate in place): the GPU's 128-byte map keeps the old address, so the simulator
        refuses rather than read the new memory. Launches in the simulator call it."""
        self._launchable()
        from .tensors import as_tensor_arg
        try:
            now = as_tensor_arg(self.tensor)
        except ArgumentError:
            now = None                 # no longer a tensor TMA can read: nothing to compare
        if now is None or now.data_ptr == self.tensor_arg.data_ptr:
            return
        raise ArgumentError(
            f"the tensor behind descriptor {self!r} moved since the descriptor was built "
            f"(address {self.tensor_arg.data_ptr:#x} -> {now.data_ptr:#x}); the descriptor "
            "holds the address it was built with (on the GPU the copy reads or writes the old, "
            "freed memory).\nFix: build a new ws.tma.TensorDescriptor after resizing or "
            "reallocating the tensor (x.resize, x.resize_, x.set_).")

    def sim_map(self, address: int) -> "SimTensorMap":
        """The simulator's descriptor for this tensor mapped at ``address``."""
        self._launchable()
        return SimTensorMap(address, self.shape, self._byte_strides(), self.dtype, self.box,
                            self.element_strides, self.swizzle, self.oob_fill == "nan")


class _TypeOnlyTensor:
    """The tensor of ``TensorDescriptor.spec()``: a contiguous one of the box's shape at a
    16-byte aligned address (the TensorArg fields a descriptor reads)."""

    def __init__(self, ir_type, shape):
        self.data_ptr = 0
        self.dtype = ir_type
        self.shape = tuple(max(1, n) for n in shape)
        per = max(1, 16 // ir_type.nbytes)            # rows padded to 16 bytes: valid strides
        padded = self.shape[:-1] + (-(-self.shape[-1] // per) * per,)
        self.strides = tuple(_product(padded[k + 1:]) for k in range(len(padded)))
        self.device = "types"
        self.kind = "types"

    @property
    def owner(self):
        """There is no tensor: a launch stops here (the simulator maps ``owner``)."""
        raise ArgumentError("a ws.tma.TensorDescriptor made by TensorDescriptor.spec() "
                            "describes types only (for ws.compile / ws.explain) and has no "
                            "tensor to copy.\nFix: launch with ws.tma.TensorDescriptor(x, box).")


def _product(xs) -> int:
    n = 1
    for x in xs:
        n *= x
    return n


class TensorMapArg:
    """The dynamic leaf of a TensorDescriptor argument: what fills the kernel's ``!tensormap``
    parameter. ``bytes(leaf)`` is the encoded 128-byte CUtensorMap (GPU launches);
    ``sim_map(address)`` its simulator form."""

    __slots__ = ("desc",)

    def __init__(self, desc: TensorDescriptor):
        self.desc = desc

    @property
    def tensor_arg(self):
        return self.desc.tensor_arg

    def __bytes__(self) -> bytes:
        return self.desc.encode()

    def sim_map(self, address: int) -> "SimTensorMap":
        return self.desc.sim_map(address)

    def __repr__(self) -> str:
        return f"<tensor map of {self.desc!r}>"


class SimTensorMap:
    """What the simulator reads from a ``!tensormap`` argument: the tensor's device ``address``,
    ``shape`` and ``byte_strides`` (outermost first), ``dtype`` (an ir ScalarType), ``box``,
    ``element_strides``, ``swizzle`` (bytes) and ``oob_nan`` (NaN instead of zero fill)."""

    __slots__ = ("address", "shape", "byte_strides", "dtype", "box", "element_strides",
                 "swizzle", "oob_nan")

    def __init__(self, address, shape, byte_strides, dtype, box, element_strides, swizzle,
                 oob_nan):
        self.address = int(address)
        self.shape = tuple(shape)
        self.byte_strides = tuple(byte_strides)
        self.dtype = dtype
        self.box = tuple(box)
        self.element_strides = tuple(element_strides)
        self.swizzle = swizzle
        self.oob_nan = oob_nan

    @property
    def smem_shape(self) -> tuple:
        return tuple(_ceil_div(b, e) for b, e in zip(self.box, self.element_strides))

    def __repr__(self) -> str:
        return (f"<tensor map {self.dtype}{list(self.shape)} at {self.address:#x}, box "
                f"{self.box}, swizzle {self.swizzle}>")


def _encode_tiled(desc: TensorDescriptor) -> bytes:
    """``cuTensorMapEncodeTiled`` for ``desc``, dimensions reversed to innermost first."""
    from . import driver
    cu = driver.cuda()
    driver.ensure_context(desc.tensor_arg.device_index or 0)  # a context if the thread has none
    T = cu.CUtensorMapDataType
    dims = [cu.cuuint64_t(n) for n in reversed(desc.shape)]
    strides = [cu.cuuint64_t(s) for s in reversed(desc._byte_strides()[:-1])]
    box = [cu.cuuint32_t(b) for b in reversed(desc.box)]
    estr = [cu.cuuint32_t(e) for e in reversed(desc.element_strides)]
    swizzle = getattr(cu.CUtensorMapSwizzle, "CU_TENSOR_MAP_SWIZZLE_" + (
        f"{desc.swizzle}B" if desc.swizzle else "NONE"))
    l2 = getattr(cu.CUtensorMapL2promotion, "CU_TENSOR_MAP_L2_PROMOTION_" + (
        f"L2_{desc.l2_promotion}B" if desc.l2_promotion else "NONE"))
    fill = (cu.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA
            if desc.oob_fill == "nan" else cu.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
    err, tmap = cu.cuTensorMapEncodeTiled(
        getattr(T, "CU_TENSOR_MAP_DATA_TYPE_" + _DATA_TYPES[desc.dtype.name]), desc.rank,
        desc.tensor_arg.data_ptr, dims, strides, box, estr,
        cu.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, l2, fill)
    driver.check(err, f"encoding {desc!r} (cuTensorMapEncodeTiled)")
    data = b"".join(int(q).to_bytes(8, "little") for q in tmap.opaque)
    if len(data) != TENSORMAP_BYTES:
        raise ArgumentError(f"cuTensorMapEncodeTiled returned {len(data)} bytes, expected "
                            f"{TENSORMAP_BYTES}")
    return data


_REPLACE = []           # [libcuda's cuTensorMapReplaceAddress, or False], loaded at first use


def _replace_address(template: bytes, desc: TensorDescriptor) -> bytes:
    """The map ``template`` (the encoded 128-byte map of a descriptor of ``desc``'s geometry)
    with ``desc``'s address in place of its own: ``CUresult cuTensorMapReplaceAddress(
    CUtensorMap *tensorMap, void *globalAddress)`` (CUDA Driver API, Tensor Map Object
    Management, since CUDA 12.0) on a 64-byte aligned copy (the alignment of ``CUtensorMap``).
    Falls back to ``_encode_tiled`` (which explains a rejection) when libcuda lacks the entry or
    refuses."""
    if not _REPLACE:
        from . import raw_launch
        try:
            fn = ctypes.CDLL(raw_launch.LIBCUDA).cuTensorMapReplaceAddress
            fn.restype, fn.argtypes = ctypes.c_int, (ctypes.c_void_p, ctypes.c_void_p)
        except (OSError, AttributeError):
            fn = False
        _REPLACE.append(fn)
    fn = _REPLACE[0]
    if not fn or len(template) != TENSORMAP_BYTES:
        return _encode_tiled(desc)
    buf = ctypes.create_string_buffer(TENSORMAP_BYTES + 64)
    at = ctypes.addressof(buf) + (-ctypes.addressof(buf)) % 64
    ctypes.memmove(at, template, TENSORMAP_BYTES)
    if fn(at, desc.tensor_arg.data_ptr):
        return _encode_tiled(desc)
    return ctypes.string_at(at, TENSORMAP_BYTES)
