"""Hopper warpgroup MMA (``ws.wgmma``; PTX ISA 8.0 "Asynchronous Warpgroup Level Matrix
Multiply-Accumulate Instructions", sm_90a): D (64 x N, f32) = A (64 x 16) @ B (16 x N) (+ D),
issued by the 4 warps (128 threads) of a warpgroup together and completed asynchronously.

A and B are tiles in shared memory, named by 64-bit matrix descriptors; A may instead come from
registers (a ``Fragment`` of 8 f16/bf16 per thread, or a ``PackedFragment`` of them in 4
32-bit registers: ``accumulator_to_a(acc, k, dtype, packed=True)``). D is a ``Fragment`` of N/2 f32 per thread.
The protocol, as CUTLASS runs it::

    a = ws.wgmma.tile_descriptor(storage.a, major="K", swizzle=128)   # A: 64 x K, K contiguous
    b = ws.wgmma.tile_descriptor(storage.b, major="K", swizzle=128)   # B: N x K, K contiguous
    acc = ws.wgmma.zeros(n)                          # N/2 f32 registers per thread
    acc = ws.wgmma.fence(acc)                        # wgmma.fence: registers are ready
    for k in ws.static_range(K // 16):
        acc = ws.wgmma.mma(a.k_step(k), b.k_step(k), acc)   # issue (async)
    ws.wgmma.commit_group()                          # close the batch into a group
    acc = ws.wgmma.wait_group(0, acc)                # wait; read acc only after this
    for i, (row, col) in enumerate(ws.wgmma.accumulator_coords(n)):
        out[row, col] = acc[i]

The shared-memory tile layout (``TileLayout``) and the matrix descriptors (``make_descriptor``,
``tile_descriptor``, ``TileDescriptor``) are in wgmma_tiles.py, re-exported here; this module
holds the fence / commit / wait ops, ``mma`` and the register fragment layouts.
"""
from __future__ import annotations

from ..core.source import user_location
from ..core.trace import builder
from ..ir.swizzle import SWIZZLE_MODES
from .fragment import Fragment, PackedFragment
from .layout_atoms import thread_coords, wgmma_accumulator_tv
from .layout_int import floordiv, mod
from .operands import operand_error, static_int
from .scalars import Boolean, Float16, Float32, Scalar, Uint32, Uint64
from .wgmma_tiles import (_FP8_DTYPES, _MMA_DTYPES, TileDescriptor, TileLayout, make_descriptor,
                          mma_k_of, tile_descriptor)

__all__ = ["fence", "commit_group", "wait_group", "mma", "zeros", "make_descriptor",
           "TileLayout", "TileDescriptor", "tile_descriptor", "accumulator_coords",
           "a_fragment_coords", "accumulator_to_a", "Fragment", "PackedFragment", "SWIZZLE_MODES",
           "N_VALUES"]

N_VALUES = tuple(range(8, 257, 8))
"""The N of m64nNk16: multiples of 8 in [8, 256]."""
_PASS = ("f32", "f16", "bf16", "i32", "u32")


# -- fence / commit / wait ----------------------------------------------------------------------
def _pass_values(what: str, items, keep_flight: bool) -> tuple:
    """Flatten Fragments and scalars into IR values; returns (values, rebuild). The rebuilt
    fragments keep their in-flight mark if ``keep_flight`` (fence), else lose it (wait_group)."""
    values, shapes = [], []
    for x in items:
        if isinstance(x, Fragment):
            vals = list(x._values)        # in-flight fragments may be passed (not read)
        elif isinstance(x, PackedFragment):
            vals = list(x.registers)
        elif isinstance(x, Scalar):
            vals = [x]
        else:
            raise operand_error(what, type(x).__name__, "Fragments or dynamic scalars (the "
                                "registers to order)", "pass the accumulator fragment: "
                                "acc = ws.wgmma.wait_group(0, acc)")
        for v in vals:
            if v.ir_type.name not in _PASS:
                raise operand_error(what, f"a {type(v).__name__} register", "f32, f16, bf16, "
                                    "i32 or u32 registers", "convert the fragment first")
        values.extend(v.value for v in vals)
        shapes.append((x, len(vals)))

    def rebuild(results):
        out, k = [], 0
        for x, count in shapes:
            part = results[k:k + count]
            k += count
            if isinstance(x, Fragment):
                out.append(Fragment(x.dtype, [type(v)._wrap(r) for v, r in zip(x._values, part)],
                                    x.in_flight if keep_flight else None))
            elif isinstance(x, PackedFragment):
                out.append(PackedFragment(x.dtype, [Uint32._wrap(r) for r in part]))
            else:
                out.append(type(x)._wrap(part[0], x.origin))
        return None if not out else out[0] if len(out) == 1 else tuple(out)
    return values, rebuild


def _tied_op(fence: bool, what: str, items, n: int = 0):
    """wgmma.fence (``fence``) or wgmma.wait_group n with ``items``' values passing through."""
    values, rebuild = _pass_values(what, items, fence)
    b = builder(what)
    return rebuild(b.wgmma_fence(values) if fence else b.wgmma_wait_group(n, values))


def fence(*fragments):
    """``wgmma.fence.sync.aligned``: orders this warpgroup's earlier register accesses before
    the following ``mma``. Required before the first ``mma`` and after any other access to the
    accumulators or A fragments an ``mma`` reads (e.g. after ``wait_group``). Pass those
    fragments: they are returned, and the compiler then computes them before the fence.
    Returns None, one fragment, or a tuple (one per argument)."""
    return _tied_op(True, "ws.wgmma.fence()", fragments)


def commit_group() -> None:
    """``wgmma.commit_group.sync.aligned``: close this warpgroup's uncommitted ``mma`` calls
    into a wgmma-group (an empty group if none)."""
    builder("ws.wgmma.commit_group()").wgmma_commit_group()


def wait_group(n: int = 0, *fragments):
    """``wgmma.wait_group.sync.aligned n``: wait until at most ``n`` (static, 0..7) of this
    warpgroup's wgmma-groups are pending. Pass the accumulators those groups write and use the
    returned ones: reading an accumulator before its group completes is undefined, and the
    returned values cannot be read earlier. The fragments ``mma`` returns are *in flight* until
    passed through here: reading them earlier raises OperandError (``Fragment``'s docstring).
    Returns None, one fragment or a tuple."""
    what = "ws.wgmma.wait_group()"
    n = static_int(n, f"{what}'s group count", range(8), "a static int in [0, 8)",
                   "pass the number of wgmma-groups allowed to stay in flight, e.g. 0 or 1")
    return _tied_op(False, what, fragments, n)


# -- the MMA ------------------------------------------------------------------------------------
def zeros(n: int, dtype=Float32) -> Fragment:
    """An m64nN accumulator fragment of zeros: ``n // 2`` registers of ``dtype`` (f32 or f16)."""
    n = _n(n, "ws.wgmma.zeros()")
    return Fragment.filled(dtype, n // 2, 0.0)


def _n(n, what) -> int:
    return static_int(n, f"{what}'s n", N_VALUES, "a multiple of 8 in [8, 256]",
                      "wgmma computes 64 x N tiles with N = 8, 16, ..., 256")


def _operand(x, name: str, dtype, tnsp):
    """(ir value, dtype, tnsp, descriptor or None) of an mma operand given as a descriptor."""
    what = f"ws.wgmma.mma()'s {name}"
    if isinstance(x, TileDescriptor):
        return x.desc.value, x.dtype, (1 if x.major == "MN" else 0), x
    if isinstance(x, Scalar) and x.ir_type == Uint64.ir_type:
        if dtype is None:
            raise operand_error(f"{what} dtype", None, "dtype=ws.BFloat16, ws.Float16, "
                                "ws.Float8E4M3FN or ws.Float8E5M2 with a raw descriptor",
                                "pass dtype=, or use ws.wgmma.tile_descriptor")
        return x.value, dtype, int(tnsp or 0), None
    raise operand_error(what, type(x).__name__, "a TileDescriptor (ws.wgmma.tile_descriptor) or "
                        "a Uint64 descriptor" + (" or a Fragment of 8 f16/bf16" if name == "A"
                                                 else ""), "build it with tile_descriptor")


def mma(a, b, acc=None, *, n=None, scale_d=True, scale_a: int = 1, scale_b: int = 1,
        dtype=None, tnsp_a=None, tnsp_b=None) -> Fragment:
    """Issue ``D = scale_a*A @ scale_b*B (+ acc)``: PTX ``wgmma.mma_async.sync.aligned.m64nNk16
    .f32.<dtype>.<dtype>`` for f16/bf16 operands, ``.m64nNk32.f32.<atype>.<btype>`` for the 8-bit
    floats (A and B each e4m3 or e5m2) (``.f16`` accumulators for a Float16 ``acc``).
    Warpgroup-collective and asynchronous: call from all 128 threads of a warpgroup after
    ``fence``, then ``commit_group`` and ``wait_group`` before reading the result.

    ``a``: a ``TileDescriptor`` (64 x K slice at its start, K = 16, or 32 for fp8), a Uint64
    descriptor (with ``dtype=`` and ``tnsp_a=`` 0 K-major / 1 MN-major), or a ``Fragment`` of 8
    Float16/BFloat16 in the A-fragment layout (``a_fragment_coords``), or a ``PackedFragment``
    of them (4 b32 registers, read by the wgmma as they are: no packing instruction is emitted
    between the fragment's last write and the mma). ``b``: a TileDescriptor
    or Uint64 (K x N slice). FP8 operands must be K-major tiles in shared memory (the PTX fp8
    forms have no transpose; no fp8 A fragment is built). ``acc``: the N/2-register accumulator fragment (f32 or f16, ``accumulator_coords``
    layout), or None with ``scale_d=False`` and ``n=``. ``scale_d``: static bool or dynamic
    Boolean (False: D = A*B). ``scale_a``/``scale_b``: +1 or -1. Returns the new accumulator
    fragment, *in flight*: only ``mma``, ``fence`` and ``wait_group`` take it; read the one
    ``wait_group`` returns (anything else raises OperandError). Raises OperandError for
    shapes, dtypes or layouts wgmma does not take."""
    what = "ws.wgmma.mma()"
    if acc is not None and not isinstance(acc, Fragment):
        raise operand_error(f"{what}'s acc", type(acc).__name__, "a Fragment (ws.wgmma.zeros(n))",
                            "start from acc = ws.wgmma.zeros(n)")
    if acc is None:
        if scale_d is not False or n is None:
            raise operand_error(f"{what}'s acc", None, "an accumulator fragment, or acc=None "
                                "with scale_d=False and n=", "pass acc, or scale_d=False, n=N")
        n, d_dtype = _n(n, what), Float32
    else:
        if acc.dtype not in (Float32, Float16):
            raise operand_error(f"{what}'s acc dtype", acc.dtype.__name__, "Float32 or Float16",
                                "accumulate in ws.Float32 (ws.wgmma.zeros(n))")
        n2 = 2 * len(acc)
        if n is not None and _n(n, what) != n2:
            raise operand_error(f"{what}'s n", n, f"{n2} (twice the accumulator's {len(acc)} "
                                "registers)", "drop n= or pass a matching fragment")
        n, d_dtype = _n(n2, what), acc.dtype
    for name, s in (("scale_a", scale_a), ("scale_b", scale_b)):
        static_int(s, f"{what}'s {name}", (1, -1), "+1 or -1", "negate with -1, else 1")
    if dtype is not None and dtype not in _MMA_DTYPES + _FP8_DTYPES:
        raise operand_error(f"{what}'s dtype", dtype, "ws.Float16, ws.BFloat16, "
                            "ws.Float8E4M3FN or ws.Float8E5M2", "wgmma multiplies 16-bit or "
                            "8-bit floats")
    packed = isinstance(a, PackedFragment)
    if isinstance(a, (Fragment, PackedFragment)):
        if len(a) != 8 or a.dtype not in _MMA_DTYPES:
            raise operand_error(f"{what}'s A fragment", a, "a Fragment of 8 Float16 or BFloat16",
                                "load it per ws.wgmma.a_fragment_coords(), or use "
                                "ws.wgmma.accumulator_to_a(acc, k, dtype)")
        if tnsp_a:
            raise operand_error(f"{what}'s tnsp_a", tnsp_a, "0 with A in registers",
                                "register fragments have one layout; drop tnsp_a")
        regs = a.registers if packed else a._values
        if not packed:
            a._check_ready("passing as the A operand")
        a_vals, a_dtype, ta, a_desc = [v.value for v in regs], a.dtype, 0, None
    else:
        a_val, a_dtype, ta, a_desc = _operand(a, "A", dtype, tnsp_a)
        a_vals = [a_val]
    b_val, b_dtype, tb, b_desc = _operand(b, "B", dtype or a_dtype, tnsp_b)
    fp8 = a_dtype in _FP8_DTYPES and b_dtype in _FP8_DTYPES
    if not fp8 and (a_dtype is not b_dtype or (dtype is not None and dtype is not a_dtype)):
        raise operand_error(f"{what}'s operand dtypes", f"A {a_dtype.__name__}, B "
                            f"{b_dtype.__name__}", "one dtype (Float16 or BFloat16), or each of "
                            "A and B Float8E4M3FN / Float8E5M2", "stage both tiles in the same "
                            "dtype")
    if fp8 and (ta or tb):
        raise operand_error(f"{what}'s fp8 operand majorness", f"A {'MN' if ta else 'K'}-major, "
                            f"B {'MN' if tb else 'K'}-major", "both K-major (the fp8 forms of "
                            "wgmma.mma_async have no transpose immediates, PTX ISA 8.0)",
                            "store the fp8 tiles K contiguous: A as M x K, B as N x K")
    kk = mma_k_of(a_dtype)
    for name, d, need in (("A", a_desc, 64), ("B", b_desc, n)):
        if d is not None and (d._extent()[0] < need or d._extent()[1] < kk):
            raise operand_error(f"{what}'s {name} tile", f"{d._extent()[0]} x {d._extent()[1]} "
                                "(M/N x K)", f"at least {need} x {kk}", f"allocate a tile with "
                                f"{need} rows along M/N and {kk} along K for m64n{n}k{kk}")
    attrs = {"n": n, "type_a": a_dtype.ir_type.name, "type_b": b_dtype.ir_type.name,
             "type_d": d_dtype.ir_type.name, "a_regs": "packed" if packed else isinstance(a, Fragment),
             "scale_a": scale_a, "scale_b": scale_b, "tnsp_a": ta, "tnsp_b": tb}
    operands = a_vals + [b_val]
    if isinstance(scale_d, Scalar):
        attrs["scale_d"] = "dynamic"
        operands.append(Boolean(scale_d).value)
    elif isinstance(scale_d, bool):
        attrs["scale_d"] = scale_d
    else:
        raise operand_error(f"{what}'s scale_d", scale_d, "a bool or a dynamic Boolean",
                            "pass True to accumulate, False to overwrite")
    if acc is not None:
        operands.extend(v.value for v in acc._values)    # an in-flight acc may chain
    results = builder(what).wgmma_mma_async(operands, attrs, d_dtype.ir_type, n // 2)
    loc = user_location()
    return Fragment(d_dtype, [d_dtype._wrap(r) for r in results],
                    in_flight=str(loc) if loc else "ws.wgmma.mma()")


# -- fragment layouts ---------------------------------------------------------------------------
def accumulator_coords(n: int, tid=None) -> list:
    """[(row, col)] of each of the n/2 accumulator registers of thread ``tid`` in the 64 x n
    tile of its warpgroup: element i is row ``16*warp + lane//4 + 8*((i//2)%2)``, column
    ``8*(i//4) + 2*(lane%4) + i%2`` with ``warp = (tid//32)%4``, ``lane = tid%32`` (PTX ISA
    "Register Fragments": wgmma D, m64nNk16), i.e. the TV layout
    ``ws.layout.wgmma_accumulator_tv(n)``, from which this is computed. ``tid``: None (this
    thread: ``warp_idx() % 4`` and ``lane_idx()``), a static index in [0, 128) (Python ints
    result), or a dynamic thread index (Int32; its warpgroup is ignored: only ``tid % 128``
    counts). Raises OperandError for another n or static tid."""
    n = _n(n, "ws.wgmma.accumulator_coords()")
    if tid is None:
        from .arch import lane_idx, warp_idx
        warp, lane = warp_idx() % 4, lane_idx()
    elif isinstance(tid, Scalar):
        warp, lane = mod(floordiv(tid, 32), 4), mod(tid, 32)
    else:
        tid = static_int(tid, "ws.wgmma.accumulator_coords()'s tid", range(128),
                         "a thread index in [0, 128), a dynamic Int32 or None",
                         "omit tid inside a kernel")
        warp, lane = tid // 32, tid % 32
    # the thread's coordinate (lane % 4, lane / 4, warp) in ws.layout.wgmma_accumulator_tv(n)
    thread = (mod(lane, 4), floordiv(lane, 4), warp)
    return thread_coords(wgmma_accumulator_tv(n), 64, thread)


def a_fragment_coords(tid=None) -> list:
    """[(row, col)] of the 8 elements of the A register fragment (64 x 16) of thread ``tid``:
    the m64n16 accumulator layout (PTX ISA "Register Fragments": wgmma A, .f16/.bf16)."""
    return accumulator_coords(16, tid)


def accumulator_to_a(acc: Fragment, k_step: int, dtype, packed: bool = False):
    """The A fragment of columns [16*k_step, 16*k_step + 16) of an f32 accumulator, converted
    to ``dtype`` (Float16 or BFloat16): the accumulator layout restricted to 16 columns is the A
    layout, so P = softmax(S) feeds P @ V from registers (FlashAttention-3). ``packed`` (static
    bool): False gives a ``Fragment`` of 8 16-bit scalars (``arith.cast`` each; the backend packs
    them into the wgmma's 4 registers); True gives a ``PackedFragment``, 4 b32 registers made by
    one ``cvt.rn.bf16x2.f32`` / ``cvt.rn.f16x2.f32`` per pair, which the wgmma reads as they are
    (docs/wgmma.md, "Packed A fragments"). Raises OperandError for another k_step or dtype."""
    k = static_int(k_step, "ws.wgmma.accumulator_to_a()'s k_step", range(len(acc) // 8),
                   f"a static int in [0, {len(acc) // 8})", "pick a 16-column slice of the tile")
    if dtype not in _MMA_DTYPES:
        raise operand_error("ws.wgmma.accumulator_to_a()'s dtype", dtype, "ws.Float16 or "
                            "ws.BFloat16", "convert to the MMA's input dtype")
    if not isinstance(packed, bool):
        raise operand_error("ws.wgmma.accumulator_to_a()'s packed", packed, "a static bool",
                            "pass packed=True for b32 pairs, False for 16-bit scalars")
    part = acc[8 * k:8 * k + 8]
    return part.pack(dtype) if packed else part.to(dtype)
