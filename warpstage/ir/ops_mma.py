"""Warp-level matrix multiply-accumulate: the ops ``mma.sync``, ``mma.ldmatrix`` and
``mma.stmatrix``, their verifier rules, and the fragment layouts of the PTX ISA (8.x), section
9.7.14 "Warp Level Matrix Multiply-Accumulate Instructions": "Matrix Fragments for mma.m16n8k8"
(9.7.14.5.7), "... for mma.m16n8k16 with floating point type" (9.7.14.5.8), "... for
mma.m16n8k32", and the instructions mma, ldmatrix and stmatrix, and their definitions.

Contract (all three are warp-collective and ``.aligned``: the 32 lanes of the warp execute them
together, converged)::

  mma.sync {shape, ab, acc} (*a: A, *b: A, *c: C) -> *d: C
      D = A @ B + C for one M x N x K tile per warp; A is M x K (row), B is K x N (col), C and
      D M x N. Operands are each lane's fragment elements, in fragment order (``a0, a1, ...``);
      the element counts are FRAGMENT_SIZES[shape, ab]. ``ab`` names the A/B element type
      (f16, bf16, tf32 carried in f32 registers, s8, u8), ``acc`` the C/D type (f32, f16, s32);
      the valid (shape, ab, acc) are COMBOS. PTX:
      ``mma.sync.aligned.<shape>.row.col.<acc>.<ab>.<ab>.<acc>``.
  mma.ldmatrix {num, trans} (p: ptr<T, shared>) -> 2*num x T
      T is a 16-bit type (f16, bf16, i16, u16). Lanes 8m..8m+7 give the row addresses (16 bytes
      each, 16-byte aligned) of 8x8 matrix m (m < num); each lane receives two elements of every
      matrix: ``(lane >> 2, 2 * (lane & 3) + j)`` for result ``2m + j``, or, with ``trans``,
      ``(2 * (lane & 3) + j, lane >> 2)``. PTX ``ldmatrix.sync.aligned.m8n8.x<num>[.trans]
      .shared.b16``.
  mma.stmatrix {num, trans} (p: ptr<T, shared>, *v: 2*num x T) ->
      The inverse of ldmatrix: the same lane/element correspondence, rows written to the
      addresses lanes 8m..8m+7 give. PTX ``stmatrix.sync.aligned.m8n8.x<num>[.trans]
      .shared.b16`` (sm_90).
"""
from __future__ import annotations

from typing import Optional

from .core import Operation
from .opdef import define
from .ops import COLL, R, W, _types
from .types import PointerType, ScalarType, f16, bf16, f32, i8, i16, i32, u8, u16

__all__ = ["SHAPES", "AB_TYPES", "ACC_TYPES", "COMBOS", "FRAGMENT_SIZES",
           "LDMATRIX_NUMS", "fragment_coords", "is_b16"]

SHAPES = {"m16n8k8": (16, 8, 8), "m16n8k16": (16, 8, 16), "m16n8k32": (16, 8, 32)}
"""mma.sync shape name -> (M, N, K)."""

AB_TYPES = {"f16": f16, "bf16": bf16, "tf32": f32, "s8": i8, "u8": u8}
"""A/B element type (PTX name) -> the IR register type of one element (tf32 rides in f32)."""

ACC_TYPES = {"f32": f32, "f16": f16, "s32": i32}
"""C/D element type (PTX name) -> IR type."""

COMBOS = frozenset([
    ("m16n8k16", "f16", "f32"), ("m16n8k16", "f16", "f16"), ("m16n8k16", "bf16", "f32"),
    ("m16n8k8", "f16", "f32"), ("m16n8k8", "f16", "f16"), ("m16n8k8", "bf16", "f32"),
    ("m16n8k8", "tf32", "f32"), ("m16n8k32", "s8", "s32"), ("m16n8k32", "u8", "s32"),
])
"""The (shape, ab, acc) combinations of mma.sync that warpstage implements (sm_80+)."""

FRAGMENT_SIZES = {
    ("m16n8k16", "f16"): (8, 4, 4), ("m16n8k16", "bf16"): (8, 4, 4),
    ("m16n8k8", "f16"): (4, 2, 4), ("m16n8k8", "bf16"): (4, 2, 4), ("m16n8k8", "tf32"): (4, 2, 4),
    ("m16n8k32", "s8"): (16, 8, 4), ("m16n8k32", "u8"): (16, 8, 4),
}
"""(shape, ab) -> elements per lane of the A, B and C/D fragments (M*K/32, K*N/32, M*N/32)."""

LDMATRIX_NUMS = (1, 2, 4)


def _plus(x, k: int):
    return x if k == 0 else x + k


def fragment_coords(shape: str, ab: str, operand: str, i: int, lane):
    """(row, col) in the A (M x K), B (K x N) or C/D (M x N) matrix of element ``i`` (static)
    of ``lane``'s fragment, for ``operand`` 'a', 'b' or 'c' (the PTX ISA's "Matrix Fragments
    for mma.<shape>" formulas).

    ``lane`` is an int or anything with ``>>``, ``&``, ``*`` and ``+`` (a dynamic Int32 while
    tracing, a numpy array): with groupID ``g = lane >> 2`` and threadID_in_group ``t = lane & 3``.
    """
    g, t = lane >> 2, lane & 3
    if operand == "c":                          # every shape: c0 c1 in row g, c2 c3 in row g + 8
        return _plus(g, 8 * (i >> 1)), _plus(t * 2, i & 1)
    if ab == "tf32":                            # m16n8k8 .tf32
        if operand == "a":
            return _plus(g, 8 * (i & 1)), _plus(t, 4 * (i >> 1))
        return _plus(t, 4 * i), g
    if ab in ("s8", "u8"):                      # m16n8k32 .s8/.u8
        if operand == "a":
            return _plus(g, 8 * ((i >> 2) & 1)), _plus(t * 4, (i & 3) + 16 * (i >> 3))
        return _plus(t * 4, (i & 3) + 16 * (i >> 2)), g
    if shape == "m16n8k16":                     # .f16/.bf16
        if operand == "a":
            return _plus(g, 8 * ((i >> 1) & 1)), _plus(t * 2, (i & 1) + 8 * (i >> 2))
        return _plus(t * 2, (i & 1) + 8 * (i >> 1)), g
    if operand == "a":                          # m16n8k8 .f16/.bf16
        return _plus(g, 8 * (i >> 1)), _plus(t * 2, i & 1)
    return _plus(t * 2, i), g


def is_b16(t) -> bool:
    """True for the 16-bit element types ldmatrix/stmatrix move (.b16): f16, bf16, i16, u16."""
    return isinstance(t, ScalarType) and t in (f16, bf16, i16, u16)


def _mma(op: Operation) -> Optional[str]:
    shape, ab, acc = (op.attrs.get(k) for k in ("shape", "ab", "acc"))
    if (shape, ab, acc) not in COMBOS:
        known = ", ".join(f"{s}.{a}->{c}" for s, a, c in sorted(COMBOS))
        return f"unsupported mma.sync {shape}.{ab}->{acc}; supported: {known}"
    na, nb, nc = FRAGMENT_SIZES[shape, ab]
    if len(op.operands) != na + nb + nc or len(op.results) != nc:
        return (f"{shape}.{ab} takes {na} A + {nb} B + {nc} C elements and gives {nc}, got "
                f"{len(op.operands)} operands and {len(op.results)} results")
    ta, tc = AB_TYPES[ab], ACC_TYPES[acc]
    if any(v.type != ta for v in op.operands[:na + nb]):
        return (f"A and B elements must be {ta} for .{ab}, got "
                f"({', '.join(_types(op.operands[:na + nb]))})")
    if any(v.type != tc for v in op.operands[na + nb:]) or any(r.type != tc for r in op.results):
        return (f"C and D elements must be {tc} for .{acc}, got "
                f"({', '.join(_types(op.operands[na + nb:]))}) -> "
                f"({', '.join(_types(op.results))})")
    return None


def _matrix_attrs(op: Operation) -> Optional[str]:
    num, trans = op.attrs.get("num"), op.attrs.get("trans", False)
    if num not in LDMATRIX_NUMS or isinstance(num, bool):
        return f"num must be 1, 2 or 4 (8x8 matrices), got {num!r}"
    if not isinstance(trans, bool):
        return f"trans must be a bool, got {trans!r}"
    return None


def _matrix_pointer(op: Operation) -> Optional[str]:
    p = op.operands[0].type if op.operands else None
    if not (isinstance(p, PointerType) and p.space == "shared" and is_b16(p.pointee)):
        return f"expected a shared pointer to a 16-bit type (f16, bf16, i16, u16), got {p}"
    return None


def _ldmatrix(op: Operation) -> Optional[str]:
    err = _matrix_attrs(op)
    if err:
        return err
    n = 2 * op.attrs["num"]
    if len(op.operands) != 1 or len(op.results) != n:
        return (f"ldmatrix .x{op.attrs['num']} takes one pointer and gives {n} elements, got "
                f"{len(op.operands)} operands and {len(op.results)} results")
    err = _matrix_pointer(op)
    if err:
        return err
    t = op.operands[0].type.pointee
    if any(r.type != t for r in op.results):
        return f"results must have the pointee type {t}, got ({', '.join(_types(op.results))})"
    return None


def _stmatrix(op: Operation) -> Optional[str]:
    err = _matrix_attrs(op)
    if err:
        return err
    n = 2 * op.attrs["num"]
    if len(op.operands) != 1 + n or op.results:
        return (f"stmatrix .x{op.attrs['num']} takes a pointer and {n} elements and gives "
                f"nothing, got {len(op.operands)} operands and {len(op.results)} results")
    err = _matrix_pointer(op)
    if err:
        return err
    t = op.operands[0].type.pointee
    if any(v.type != t for v in op.operands[1:]):
        return (f"stored elements must have the pointee type {t}, got "
                f"({', '.join(_types(op.operands[1:]))})")
    return None


_WMMA = "Warp Level Matrix Multiply-Accumulate Instructions: "
_MATRIX = {"num": "int: 8x8 matrices (1, 2, 4)", "trans?": "bool"}
define("mma.sync", "(*a: A, *b: A, *c: C) -> *d: C", "D = A @ B + C for one M x N x K tile per "
       "warp, operands in fragment order", _mma, (COLL,),
       {"shape": "str", "ab": "str", "acc": "str"}, _WMMA + "mma", requires="sm_80")
define("mma.ldmatrix", "(p: ptr<T, shared>) -> 2*num x T", "load num 8x8 b16 matrices into "
       "fragments", _ldmatrix, (R, COLL), _MATRIX, _WMMA + "ldmatrix", requires="sm_80")
define("mma.stmatrix", "(p: ptr<T, shared>, *v: 2*num x T) ->", "store num 8x8 b16 matrices from "
       "fragments", _stmatrix, (W, COLL), _MATRIX, _WMMA + "stmatrix", requires="sm_90")
