"""Verifier rules of the Hopper warpgroup MMA ops (PTX ISA 8.0, "Asynchronous Warpgroup Level
Matrix Multiply-Accumulate Instructions": wgmma.fence, wgmma.mma_async, wgmma.commit_group,
wgmma.wait_group, and the shared-memory "Matrix Descriptor Format"), and their definitions.

Contracts:

  wgmma.fence (*vals) -> (*vals)          wgmma.fence.sync.aligned; the values pass through
                                          unchanged (their registers are written before the fence)
  wgmma.commit_group                      wgmma.commit_group.sync.aligned
  wgmma.wait_group {n} (*vals) -> (*vals) wgmma.wait_group.sync.aligned n (n in [0, 8)); the values
                                          pass through and are read only after the wait
  wgmma.descriptor {lbo, sbo, swizzle, base_offset} (p: !ptr<T, shared>) -> u64
                                          the 64-bit matrix descriptor of the tile at p: bits 0-13
                                          address >> 4, 16-29 lbo >> 4, 32-45 sbo >> 4, 49-51
                                          base_offset, 62-63 the mode of swizzle (bytes: 0 none,
                                          128 -> 1, 64 -> 2, 32 -> 3); lbo, sbo multiples of 16
                                          in [0, 2^18); rewritten into ptr.to_int and integer
                                          ops by passes/legalize_wgmma.py
  wgmma.mma_async {n, type_a, type_b, type_d, a_regs, scale_d, scale_a, scale_b, tnsp_a, tnsp_b}
      (a, b: u64, [scale_d: i1], *d_in) -> *d
                                          D = scale_a*A (64xK) @ scale_b*B (Kxn) (+ D if scale_d),
                                          K = 32 bytes of the input type (mma_k: 16 for f16/bf16,
                                          32 for e4m3/e5m2);
                                          a: one u64 descriptor, or (a_regs True) 8 values of
                                          type_a, or (a_regs "packed") 4 u32 registers each
                                          holding two type_a values, element 2i in bits 0-15
                                          (arith.cvt_pack's result; the registers wgmma reads);
                                          n a multiple of 8 in [8, 256]; type_a = type_b in
                                          f16|bf16, or type_a, type_b each e4m3|e5m2 (then both
                                          K-major from descriptors: the PTX fp8 forms have no
                                          transpose immediates and no A fragment is built here);
                                          type_d f32 (n/2 results) or f16 (n/2 results,
                                          packed in pairs by the lowering); scale_d True|False
                                          (static) or "dynamic" (an i1 operand); d_in has n/2
                                          values of type_d, or none when scale_d is False;
                                          scale_a/b +1|-1; tnsp_a/b 0 (K-major) | 1 (MN-major),
                                          tnsp_a 0 with a_regs
"""
from __future__ import annotations

from typing import Optional

from .core import Operation
from .opdef import define
from .ops import ASYNC, COLL, P, R, WAITS, _types
from .types import PointerType, ScalarType, i1, u32, u64

__all__ = ["descriptor_fields", "decode_descriptor", "DESCRIPTOR_ADDRESS_MASK",
           "accumulator_tv", "SWIZZLE_MODE", "MMA_TYPES", "FP8_TYPES", "ACC_TYPES",
           "MAX_WAIT_GROUP", "mma_k", "a_operand_count"]

SWIZZLE_MODE = {0: 0, 128: 1, 64: 2, 32: 3}
"""Swizzle span in bytes -> the descriptor's 2-bit layout type (bits 62-63)."""
FP8_TYPES = ("e4m3", "e5m2")
MMA_TYPES = ("f16", "bf16") + FP8_TYPES
ACC_TYPES = ("f32", "f16")
MAX_WAIT_GROUP = 8
_PASS_TYPES = ("f32", "f16", "bf16", "i32", "u32")
_SPAN = {mode: span for span, mode in SWIZZLE_MODE.items()}

DESCRIPTOR_ADDRESS_MASK = 0x3FFFF
"""The bits of the shared-window byte address a descriptor keeps; bits 0-13 hold them >> 4."""


def descriptor_fields(lbo: int, sbo: int, swizzle: int, base_offset: int = 0) -> int:
    """The static bits of a wgmma matrix descriptor (PTX ISA "Matrix Descriptor Format"): lbo
    and sbo (bytes) >> 4 in bits 16-29 and 32-45, base_offset in 49-51, the swizzle span's mode
    (SWIZZLE_MODE) in 62-63. The descriptor is ``(addr & DESCRIPTOR_ADDRESS_MASK) >> 4`` or'ed
    with them; the backend and the simulator both build it from this."""
    return (lbo >> 4) << 16 | (sbo >> 4) << 32 | base_offset << 49 | SWIZZLE_MODE[swizzle] << 62


def decode_descriptor(desc: int) -> dict:
    """The fields of a 64-bit matrix descriptor, in bytes (``swizzle`` as its span)."""
    return {"start": (desc & 0x3FFF) << 4, "lbo": ((desc >> 16) & 0x3FFF) << 4,
            "sbo": ((desc >> 32) & 0x3FFF) << 4, "base_offset": (desc >> 49) & 7,
            "swizzle": _SPAN[(desc >> 62) & 3]}


def accumulator_tv(n: int) -> tuple:
    """The m64nNk16 D fragment (also the A register fragment, as m64n16) as a thread-value
    layout ``(shape, stride)``: thread ``t`` (0..127 of the warpgroup) and register ``v``
    (0..n/2-1) hold element ``row + 64 * col`` of the 64 x ``n`` tile at ``crd2idx((t, v))``,
    the column-major split of ``t`` over ``(4, 8, 4)`` (lane % 4, lane / 4, warp) and of ``v``
    over ``(2, 2, n / 8)``. So register v of lane l of warp w is row
    ``16 w + l / 4 + 8 ((v / 2) % 2)``, column ``8 (v / 4) + 2 (l % 4) + v % 2`` (PTX ISA
    "Register Fragments", wgmma D; CuTe's ``CLayout_64xN``). The one definition:
    ``ws.layout.wgmma_accumulator_tv`` wraps it and the simulator evaluates it
    (``sim/wgmma_layout.py``). ``n``: a multiple of 8 in [8, 256] (not checked here)."""
    return ((4, 8, 4), (2, 2, n // 8)), ((128, 1, 16), (64, 8, 512))


def mma_k(type_name: str) -> int:
    """The K of one wgmma.mma_async of input type ``type_name``: 32 bytes of it (m64nNk16 for
    f16/bf16, m64nNk32 for e4m3/e5m2; PTX ISA "wgmma.mma_async", "Matrix shape")."""
    return 32 if type_name in FP8_TYPES else 16


def a_operand_count(attrs: dict) -> int:
    """How many operands a wgmma.mma_async's A takes: 1 descriptor, 8 16-bit registers
    (``a_regs`` True) or 4 packed 32-bit registers (``a_regs`` "packed")."""
    return {False: 1, True: 8, "packed": 4}[attrs["a_regs"]]


def _static(op: Operation, name: str, allowed) -> Optional[str]:
    v = op.attrs.get(name)
    if not any(type(v) is type(a) and v == a for a in allowed):     # True is not 1 here
        return f"attribute {name} must be one of {tuple(allowed)}, got {v!r}"
    return None


def _pass_through(op: Operation) -> Optional[str]:
    if len(op.operands) != len(op.results):
        return (f"expected as many results as operands (the values pass through), got "
                f"{len(op.operands)} and {len(op.results)}")
    for v, r in zip(op.operands, op.results):
        if not isinstance(v.type, ScalarType) or v.type.name not in _PASS_TYPES:
            return (f"passes through 32-bit or 16-bit registers ({', '.join(_PASS_TYPES)}), "
                    f"got {v.type}")
        if r.type != v.type:
            return ("result types must equal the operand types, got "
                    f"({', '.join(_types(op.operands))})")
    return None


def _fence(op):
    return _pass_through(op)


def _commit(op):
    if op.operands or op.results:
        return "wgmma.commit_group takes no operands and gives no results"
    return None


def _wait(op):
    n = op.attrs.get("n")
    if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n < MAX_WAIT_GROUP:
        return (f"wait_group needs a static count of pending groups in [0, {MAX_WAIT_GROUP}), "
                f"got {n!r}")
    return _pass_through(op)


def _field(op, name, limit, multiple=16) -> Optional[str]:
    v = op.attrs.get(name)
    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < limit or v % multiple:
        unit = f" multiple of {multiple}" if multiple > 1 else "n int"
        return f"{name} must be a{unit} in [0, {limit}), got {v!r}"
    return None


def _descriptor(op):
    if len(op.operands) != 1 or len(op.results) != 1:
        return f"expected 1 operand and 1 result, got {len(op.operands)} and {len(op.results)}"
    p = op.operands[0].type
    if not (isinstance(p, PointerType) and p.space == "shared"):
        return f"expected a shared pointer operand, got {p}"
    if op.results[0].type != u64:
        return f"expected result u64, got {op.results[0].type}"
    return (_field(op, "lbo", 1 << 18) or _field(op, "sbo", 1 << 18)
            or _field(op, "base_offset", 8, 1) or _static(op, "swizzle", tuple(SWIZZLE_MODE)))


def _mma_attrs(op) -> Optional[str]:
    n = op.attrs.get("n")
    if isinstance(n, bool) or not isinstance(n, int) or not 8 <= n <= 256 or n % 8:
        return f"n must be a multiple of 8 in [8, 256], got {n!r}"
    err = (_static(op, "type_a", MMA_TYPES) or _static(op, "type_b", MMA_TYPES)
           or _static(op, "type_d", ACC_TYPES) or _static(op, "a_regs", (True, False, "packed"))
           or _static(op, "scale_d", (True, False, "dynamic"))
           or _static(op, "scale_a", (1, -1)) or _static(op, "scale_b", (1, -1))
           or _static(op, "tnsp_a", (0, 1)) or _static(op, "tnsp_b", (0, 1)))
    if err:
        return err
    ta, tb = op.attrs["type_a"], op.attrs["type_b"]
    if (ta in FP8_TYPES) != (tb in FP8_TYPES) or (ta not in FP8_TYPES and ta != tb):
        return (f"type_a and type_b must be equal (f16, bf16) or both 8-bit floats (e4m3, e5m2), "
                f"got {ta} and {tb}")
    if ta in FP8_TYPES and (op.attrs["tnsp_a"] or op.attrs["tnsp_b"] or op.attrs["a_regs"]):
        return ("the e4m3/e5m2 forms read A and B K-major from shared memory: tnsp_a and tnsp_b "
                f"must be 0 and a_regs False, got {op.attrs['tnsp_a']}, {op.attrs['tnsp_b']}, "
                f"{op.attrs['a_regs']}")
    if op.attrs["a_regs"] and op.attrs["tnsp_a"]:
        return "tnsp_a must be 0 when A comes from registers (a register fragment has one layout)"
    return None


def _mma(op):
    err = _mma_attrs(op)
    if err:
        return err
    attrs = op.attrs
    n2 = attrs["n"] // 2
    d_type = attrs["type_d"]
    ops = list(op.operands)
    n_a = a_operand_count(attrs)
    dynamic = attrs["scale_d"] == "dynamic"
    fixed = n_a + 1 + (1 if dynamic else 0)
    n_d = len(ops) - fixed
    if n_d not in (0, n2) or (n_d == 0 and attrs["scale_d"] is not False):
        return (f"expected A ({n_a} operand(s)), B, {'the scale_d predicate, ' if dynamic else ''}"
                f"and {n2} accumulator operands (none only with scale_d False), got "
                f"{len(ops)} operands")
    a, b = ops[:n_a], ops[n_a]
    if attrs["a_regs"] == "packed":
        if any(v.type != u32 for v in a):
            return (f"expected 4 u32 A-fragment registers (pairs of {attrs['type_a']}), got "
                    f"({', '.join(_types(a))})")
    elif attrs["a_regs"]:
        if any(v.type.name != attrs["type_a"] for v in a if isinstance(v.type, ScalarType)) or \
                not all(isinstance(v.type, ScalarType) for v in a):
            return (f"expected 8 {attrs['type_a']} A-fragment values, got "
                    f"({', '.join(_types(a))})")
    elif a[0].type != u64:
        return f"expected the A descriptor u64, got {a[0].type}"
    if b.type != u64:
        return f"expected the B descriptor u64, got {b.type}"
    if dynamic and ops[n_a + 1].type != i1:
        return f"expected the scale_d predicate i1, got {ops[n_a + 1].type}"
    d_in = ops[fixed:]
    if any(v.type.name != d_type for v in d_in if isinstance(v.type, ScalarType)) or \
            not all(isinstance(v.type, ScalarType) for v in d_in):
        return f"expected {d_type} accumulators, got ({', '.join(_types(d_in))})"
    if len(op.results) != n2 or any(r.type.name != d_type for r in op.results):
        return (f"expected {n2} {d_type} results (m64n{attrs['n']}: n/2 per thread), got "
                f"({', '.join(str(r.type) for r in op.results)})")
    return None


_WG = "Asynchronous Warpgroup Level Matrix Multiply-Accumulate: "
_through = lambda operands, attrs: list(operands)   # noqa: E731
define("wgmma.fence", "(*vals) -> (*vals)", "order register accesses before wgmma.mma_async; the "
       "values pass through", _fence, (COLL,), ptx=_WG + "wgmma.fence", infer=_through,
       requires="sm_90a")
define("wgmma.commit_group", "() ->", "close the pending wgmma.mma_async ops into a group",
       _commit, (COLL, ASYNC), ptx=_WG + "wgmma.commit_group", requires="sm_90a")
define("wgmma.wait_group", "(*vals) -> (*vals)", "until at most n groups are pending; the values "
       "pass through and are read only after the wait", _wait, (COLL, WAITS), {"n": "int"},
       _WG + "wgmma.wait_group", _through, requires="sm_90a")
define("wgmma.descriptor", "(p: !ptr<T, shared>) -> u64", "the 64-bit matrix descriptor of the "
       "tile at p", _descriptor, (P,), {"lbo": "int: bytes", "sbo": "int: bytes",
                                        "swizzle": "int: bytes", "base_offset": "int"},
       _WG + "Matrix Descriptor Format", lambda operands, attrs: [u64], legalized=True)
define("wgmma.mma_async", "(a, b: u64, [scale_d: i1], *d_in) -> *d", "D = scale_a*A (64xK) @ "
       "scale_b*B (Kxn) (+ D if scale_d) for one warpgroup; K = 16 (f16, bf16) or 32 (e4m3, e5m2)", _mma, (R, COLL, ASYNC),
       {k: "static" for k in ("n", "type_a", "type_b", "type_d", "a_regs", "scale_d", "scale_a",
                              "scale_b", "tnsp_a", "tnsp_b")}, _WG + "wgmma.mma_async",
       requires="sm_90a")
