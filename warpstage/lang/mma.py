"""Warp-level tensor-core MMA (``ws.mma``): ``mma.sync`` on register fragments, ``ldmatrix`` /
``stmatrix`` between shared memory and fragments, and the fragment layouts (PTX ISA 8.x,
9.7.14 "Warp Level Matrix Multiply-Accumulate Instructions": mma, ldmatrix, stmatrix, and
"Matrix Fragments for mma.m16n8k8 / m16n8k16 / m16n8k32"; sm_80+, stmatrix sm_90).

A warp computes ``D = A @ B + C`` for one M x N x K tile; every lane holds a *fragment*: a few
elements of each matrix at fixed positions. ``a_coords`` / ``b_coords`` / ``c_coords`` say
which ``(row, col)`` each element of a lane holds::

    acc = ws.mma.accumulator()                               # 4 x f32 zeros (m16n8)
    for k0 in range(0, K, 16):
        a = ws.mma.load_fragment(x, "a", row0=m0, col0=k0)   # 8 x bf16 from a 16 x 16 tile
        b = ws.mma.load_fragment(w, "b", row0=k0, col0=n0)   # 4 x bf16 from a 16 x 8 tile
        acc = ws.mma.mma_sync(a, b, acc)                     # mma.sync.aligned.m16n8k16...
    ws.mma.store_fragment(out, acc, row0=m0, col0=n0)

Shapes and types (A/B dtype, C/D dtype, elements per lane of A, B, C):

  m16n8k16  Float16 or BFloat16 -> Float32 (or Float16 -> Float16)   8, 4, 4
  m16n8k8   Float16 or BFloat16 -> Float32 (or Float16 -> Float16)   4, 2, 4
  m16n8k8   Float32 read as tf32 -> Float32                           4, 2, 4
  m16n8k32  Int8 or Uint8 -> Int32 (wrapping)                         16, 8, 4

All of these are ``.sync.aligned`` warp collectives: the whole warp (32 threads, converged)
must call them with fragments of one shape; the simulator reports a call in divergent code.
"""
from __future__ import annotations

from .. import ir
from ..core.source import user_location
from ..core.trace import Origin, builder, maybe_current
from ..ir.ops_mma import AB_TYPES, COMBOS, FRAGMENT_SIZES, SHAPES, fragment_coords, is_b16
from .fragment import Fragment
from .operands import operand_error, pointer_operand, static_int
from .pointer import Pointer
from .scalars import DTYPES, Float32, Scalar

__all__ = ["Fragment", "mma_sync", "ldmatrix", "stmatrix", "a_coords", "b_coords", "c_coords",
           "fragment_sizes", "accumulator", "load_fragment", "store_fragment", "SHAPES"]

_AB = {ir.f16: "f16", ir.bf16: "bf16", ir.f32: "tf32", ir.i8: "s8", ir.u8: "u8"}
_ACC = {ir.f32: "f32", ir.f16: "f16", ir.i32: "s32"}
_SHAPE_FIX = "pass shape='m16n8k16', 'm16n8k8' or 'm16n8k32'"


def _shape(shape, what: str) -> str:
    if shape not in SHAPES:
        raise operand_error(f"{what}'s shape", shape, f"one of {', '.join(SHAPES)}", _SHAPE_FIX)
    return shape


def _ab_name(dtype, shape: str, what: str) -> str:
    """The PTX A/B type name of ``dtype`` for ``shape`` (None: the shape's usual 16-bit type)."""
    if dtype is None:
        return "s8" if shape == "m16n8k32" else "f16"
    t = getattr(dtype, "ir_type", None)
    ab = _AB.get(t) if isinstance(dtype, type) and issubclass(dtype, Scalar) else None
    if ab is None or (shape, ab) not in FRAGMENT_SIZES:
        ok = ", ".join(sorted({DTYPES[AB_TYPES[a]].__name__
                               for s, a in FRAGMENT_SIZES if s == shape}))
        raise operand_error(f"{what}'s A/B dtype for {shape}", getattr(dtype, "__name__", dtype),
                            f"one of ws.{', ws.'.join(ok.split(', '))}",
                            "pass the dtype of the A and B fragments")
    return ab


def fragment_sizes(shape: str = "m16n8k16", dtype=None) -> tuple:
    """(A, B, C/D) elements per lane for ``shape`` with A/B elements of ``dtype`` (default:
    16-bit floats, Int8 for m16n8k32): (8, 4, 4) for m16n8k16, (4, 2, 4) for m16n8k8,
    (16, 8, 4) for m16n8k32."""
    shape = _shape(shape, "ws.mma.fragment_sizes()")
    return FRAGMENT_SIZES[shape, _ab_name(dtype, shape, "ws.mma.fragment_sizes()")]


def accumulator(shape: str = "m16n8k16", dtype=Float32, value=0) -> Fragment:
    """A C/D fragment of ``shape`` (4 elements per lane) of ``dtype`` (Float32, Float16 or
    Int32) filled with ``value``."""
    _shape(shape, "ws.mma.accumulator()")
    if getattr(dtype, "ir_type", None) not in _ACC:
        raise operand_error("ws.mma.accumulator()'s dtype", getattr(dtype, "__name__", dtype),
                            "ws.Float32, ws.Float16 or ws.Int32", "pass dtype=ws.Float32")
    return Fragment.filled(dtype, 4, value)


def _coords(operand: str, shape, dtype, lane, what: str) -> list:
    shape = _shape(shape, what)
    ab = _ab_name(dtype, shape, what)
    if lane is None:
        if maybe_current() is None:
            raise operand_error(f"{what}'s lane", None, "a lane index (int, numpy array or "
                                "dynamic integer) outside a kernel", "pass lane=...")
        from .arch import lane_idx
        lane = lane_idx()
    elif isinstance(lane, int) and not isinstance(lane, bool) and not 0 <= lane < 32:
        raise operand_error(f"{what}'s lane", lane, "a lane in [0, 32)", "pass 0..31")
    n = FRAGMENT_SIZES[shape, ab][{"a": 0, "b": 1, "c": 2}[operand]]
    return [fragment_coords(shape, ab, operand, i, lane) for i in range(n)]


def a_coords(shape: str = "m16n8k16", dtype=None, lane=None) -> list:
    """``[(row, col), ...]``: where in the M x K matrix A each element of ``lane``'s A fragment
    sits (PTX ISA "Matrix Fragments for mma.<shape>"). ``lane``: an int, a numpy array of
    lanes, or a dynamic integer; default ``ws.arch.lane_idx()`` (inside a kernel). ``dtype``
    picks the layout where it differs (ws.Float32 = tf32 for m16n8k8)."""
    return _coords("a", shape, dtype, lane, "ws.mma.a_coords()")


def b_coords(shape: str = "m16n8k16", dtype=None, lane=None) -> list:
    """``[(row, col), ...]`` of ``lane``'s B fragment elements in the K x N matrix B."""
    return _coords("b", shape, dtype, lane, "ws.mma.b_coords()")


def c_coords(shape: str = "m16n8k16", lane=None) -> list:
    """``[(row, col), ...]`` of ``lane``'s C/D fragment elements in the M x N (16 x 8) matrix:
    ``(g, 2t), (g, 2t+1), (g+8, 2t), (g+8, 2t+1)`` with ``g = lane >> 2``, ``t = lane & 3``
    (every shape and type)."""
    return _coords("c", shape, None, lane, "ws.mma.c_coords()")


def load_fragment(src, operand: str, shape: str = "m16n8k16", row0=0, col0=0, dtype=None,
                  lane=None, transposed: bool = False) -> Fragment:
    """This lane's ``operand`` ('a', 'b' or 'c') fragment read from ``src`` (anything indexed
    as ``src[i, j]``: a 2-D ``ws.Tensor``, an smem array) for the tile at (``row0``, ``col0``)
    of the operand matrix: element ``(r, c)`` of the ``*_coords`` helpers is
    ``src[row0 + r, col0 + c]``, or ``src[col0 + c, row0 + r]`` with ``transposed=True`` (``src``
    holds the operand's transpose, e.g. B stored N x K as mma's ``.col`` B is). One load per
    element. ``dtype``: the fragment's dtype (default: ``src``'s); it also picks the A/B
    layout (ws.Float32 means tf32)."""
    what = "ws.mma.load_fragment()"
    if operand not in ("a", "b", "c"):
        raise operand_error(f"{what}'s operand", operand, "'a', 'b' or 'c'", "pass operand='a'")
    if not isinstance(transposed, bool):
        raise operand_error(f"{what}'s transposed", transposed, "a static bool",
                            "pass transposed=True")
    frag_dtype = dtype or getattr(src, "dtype", None)
    if operand == "c":
        coords = c_coords(shape, lane)
    else:
        coords = _coords(operand, shape, frag_dtype, lane, what)
    if transposed:
        vals = [src[_add(col0, c), _add(row0, r)] for r, c in coords]
    else:
        vals = [src[_add(row0, r), _add(col0, c)] for r, c in coords]
    return Fragment(frag_dtype or type(vals[0]), vals)


def store_fragment(dst, frag: Fragment, shape: str = "m16n8k16", row0=0, col0=0,
                   lane=None) -> None:
    """Write a C/D fragment: ``dst[row0 + r, col0 + c] = frag[i]`` for ``(r, c)`` of
    ``c_coords`` (converted to ``dst``'s dtype by the store)."""
    if not isinstance(frag, Fragment) or len(frag) != 4:
        raise operand_error("ws.mma.store_fragment()'s fragment", frag,
                            "a 4-element C/D Fragment (ws.mma.mma_sync's result)",
                            "pass the accumulator")
    for (r, c), v in zip(c_coords(shape, lane), frag):
        dst[_add(row0, r), _add(col0, c)] = v


def _add(a, b):
    return b if isinstance(a, int) and a == 0 else a + b


def mma_sync(a: Fragment, b: Fragment, c: Fragment, shape: str = None) -> Fragment:
    """``D = A @ B + C`` for one tile per warp: PTX ``mma.sync.aligned.<shape>.row.col.<C>.<A>.
    <B>.<C>``. ``a``, ``b``, ``c``: this lane's fragments (see the module table); A and B of one
    dtype; ``shape`` defaults to the one ``len(a)`` and the dtype imply. Returns D as a new
    Fragment of ``c``'s dtype. The whole warp must call it (converged). Raises OperandError for
    fragments of the wrong type or length, naming the expected ones."""
    what = "ws.mma.mma_sync()"
    for name, f in (("a", a), ("b", b), ("c", c)):
        if not isinstance(f, Fragment):
            raise operand_error(f"{what}'s {name.upper()} fragment", type(f).__name__,
                                "a ws.mma.Fragment",
                                "build fragments with ldmatrix, load_fragment or Fragment(...)")
    ab = _AB.get(a.dtype.ir_type)
    acc = _ACC.get(c.dtype.ir_type)
    if b.dtype is not a.dtype or ab is None:
        raise operand_error(f"{what}'s A/B dtypes", f"{a.dtype.__name__} and {b.dtype.__name__}",
                            "one of Float16, BFloat16, Float32 (tf32), Int8, Uint8 for both",
                            "convert with frag.to(ws.BFloat16)")
    if shape is None:
        found = [s for (s, t), n in FRAGMENT_SIZES.items() if t == ab and n[0] == len(a)]
        if not found:
            sizes = {s: n[0] for (s, t), n in FRAGMENT_SIZES.items() if t == ab}
            raise operand_error(f"{what}'s A fragment", f"{len(a)} x {a.dtype.__name__}",
                                " or ".join(f"{n} elements ({s})" for s, n in sizes.items()),
                                "load the A fragment of one tile")
        shape = found[0]
    shape = _shape(shape, what)
    if (shape, ab) not in FRAGMENT_SIZES:
        raise operand_error(f"{what}'s A/B dtype for {shape}", a.dtype.__name__,
                            "a dtype that shape supports (see ws.mma's table)", _SHAPE_FIX)
    combo = (shape, ab, acc)
    if combo not in COMBOS:
        raise operand_error(f"{what}'s C dtype for {shape}.{ab}", c.dtype.__name__,
                            "Float32 (or Float16 for f16 inputs; Int32 for Int8/Uint8)",
                            "start from ws.mma.accumulator(dtype=ws.Float32)")
    sizes = FRAGMENT_SIZES[shape, ab]
    for name, f, n in zip("abc", (a, b, c), sizes):
        if len(f) != n:
            raise operand_error(f"{what}'s {name.upper()} fragment for {shape}.{ab}",
                                f"{len(f)} elements",
                                f"{n} elements", f"the {shape} {name.upper()} fragment has {n} "
                                "elements per lane (ws.mma.fragment_sizes)")
    operands = [v.value for f in (a, b, c) for v in f]
    results = builder(what).mma_sync(shape, ab, acc, operands, c.dtype.ir_type, sizes[2])
    origin = Origin(what, user_location())
    return Fragment(c.dtype, [c.dtype._wrap(r, origin) for r in results])


def _matrix_num(num, what: str) -> int:
    return static_int(num, f"{what}'s num", (1, 2, 4), "1, 2 or 4 (8x8 matrices)",
                      "pass num=4 for a 16 x 16 A tile, num=2 for a 16 x 8 B tile")


def _matrix_pointer(ptr, what: str) -> Pointer:
    p = pointer_operand(ptr, f"{what}'s row address", "shared")
    if not is_b16(p.value.type.pointee):
        raise operand_error(f"{what}'s row address", f"a pointer to {p.dtype.__name__}",
                            "a shared pointer to a 16-bit type (Float16, BFloat16, Int16, "
                            "Uint16)", "ldmatrix/stmatrix move .b16 elements")
    return p


def ldmatrix(ptr, num: int = 4, trans: bool = False) -> Fragment:
    """Load ``num`` (static 1, 2, 4) 8x8 matrices of 16-bit elements from shared memory: PTX
    ``ldmatrix.sync.aligned.m8n8.x<num>[.trans].shared.b16``. ``ptr``: this lane's row address
    (a shared ``ws.Pointer`` to Float16/BFloat16/Int16/Uint16, 16-byte aligned); lanes
    8m..8m+7 give the 8 rows (16 bytes each) of matrix m, other lanes' addresses are unused.
    Returns a Fragment of ``2 * num`` elements: elements 2m, 2m+1 hold row ``lane >> 2``,
    columns ``2 (lane & 3)``, ``+1`` of matrix m (with ``trans``: of its transpose). With
    lanes 0-15 pointing at rows 0-15 of a 16x16 row-major tile at column 0 and lanes 16-31 at
    column 8, ``num=4`` gives exactly an m16n8k16 A fragment."""
    what = "ws.mma.ldmatrix()"
    num = _matrix_num(num, what)
    if not isinstance(trans, bool):
        raise operand_error(f"{what}'s trans", trans, "a static bool", "pass trans=True")
    p = _matrix_pointer(ptr, what)
    t = p.value.type.pointee
    results = builder(what).ldmatrix(p.value, num, trans)
    origin = Origin(what, user_location())
    return Fragment(DTYPES[t], [DTYPES[t]._wrap(r, origin) for r in results])


def stmatrix(ptr, frag: Fragment, trans: bool = False) -> None:
    """Store a fragment of 2, 4 or 8 16-bit elements as 1, 2 or 4 8x8 matrices into shared
    memory: PTX ``stmatrix.sync.aligned.m8n8.x<num>[.trans].shared.b16`` (sm_90); the inverse
    of ``ldmatrix`` (same lanes, rows and element positions). ``ptr``: this lane's row
    address, as for ldmatrix, of the fragment's dtype."""
    what = "ws.mma.stmatrix()"
    if not isinstance(frag, Fragment) or len(frag) not in (2, 4, 8):
        raise operand_error(f"{what}'s fragment", frag, "a Fragment of 2, 4 or 8 16-bit elements",
                            "convert a C/D fragment with .to(ws.BFloat16) first")
    if not isinstance(trans, bool):
        raise operand_error(f"{what}'s trans", trans, "a static bool", "pass trans=True")
    p = _matrix_pointer(ptr, what)
    if p.value.type.pointee != frag.dtype.ir_type:
        raise operand_error(f"{what}'s fragment", f"{frag.dtype.__name__} elements",
                            f"{p.dtype.__name__} elements (the pointer's type)",
                            f"convert with frag.to(ws.{p.dtype.__name__})")
    builder(what).stmatrix(p.value, [v.value for v in frag], trans)

