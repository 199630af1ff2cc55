"""The core op definitions (``ir.opdef``): each op's signature, contract, traits and verifier rule.

Every op the frontend may emit is defined in ``ir/``, and the backend and the simulator each
implement every primitive one (the tests check the tables agree). An op's rule returns an error message
(expected vs got) or ``None``. Conventions: ``T`` is a scalar type; binary arithmetic takes two
operands of one type; comparisons give ``i1``; pointers carry their pointee type and address space.

Each op is defined once, with ``ir.opdef.define``: this module defines the ``arith``,
``math``, ``nvvm.sreg``/``nvvm.barrier``, ``gpu``, ``ptr.offset``, ``mem.load``/``store``,
``scf`` and ``func`` ops; the families ``ops_sync`` (warp collectives, fences, mbarrier, cp.async, atomics),
``ops_mma``, ``ops_tma`` and ``ops_wgmma`` define theirs (their module docstrings hold the longer
contracts and fragment layouts). ``ir.opdef.describe_ops()`` prints the whole table (signature,
attributes, traits, contract, PTX ISA section); docs/ir.md shows it.
"""
from __future__ import annotations

from typing import Callable, Optional

from .core import Operation
from .fp8 import is_fp8
from .opdef import OPS, Trait, define
from .types import PointerType, ScalarType, f32, i1, i32, u32, u64

__all__ = ["OPS", "BINARY", "UNARY_MATH", "CMP_PREDICATES", "SREGS", "PACK_TYPES"]

BINARY = ("add", "sub", "mul", "div", "rem", "floordiv", "mod", "and", "or", "xor", "shl",
          "shr", "min", "max")
UNARY_MATH = ("exp", "exp2", "log", "log2", "sqrt", "rsqrt", "abs", "floor", "ceil", "sin",
              "cos", "tanh")
CMP_PREDICATES = ("eq", "ne", "lt", "le", "gt", "ge", "one")
"""arith.cmp's predicates. On floats eq/lt/le/gt/ge are ordered (false if either operand is
NaN), ``ne`` is unordered (true if either is NaN: Python's ``!=``), ``one`` is the ordered
not-equal (false if either is NaN; LLVM ``fcmp one``, PTX ``setp.ne``); on ints ``one`` is
``ne``. Python's operators never give ``one``: the legalization of float ``//`` and ``%`` does."""
SREGS = {f"{base}.{d}": 32 for base in ("tid", "ctaid", "ntid", "nctaid") for d in "xyz"}
SREGS.update({f"{base}.{d}": 32 for base in ("cluster.ctaid", "cluster.nctaid", "clusterid",
                                             "nclusterid") for d in "xyz"})
SREGS.update({"cluster.ctarank": 32, "cluster.nctarank": 32})
SREGS.update({"laneid": 32, "warpid": 32, "smid": 32, "clock": 32, "clock64": 64,
              "globaltimer": 64})

Rule = Callable[[Operation], Optional[str]]


def _types(vals):
    return [str(v.type) for v in vals]


def _arity(op: Operation, n_operands: int, n_results: int) -> Optional[str]:
    if len(op.operands) != n_operands or len(op.results) != n_results:
        return (f"expected {n_operands} operand(s) and {n_results} result(s), got "
                f"{len(op.operands)} and {len(op.results)}")
    return None


def _same_scalar(op: Operation, n: int) -> Optional[str]:
    err = _arity(op, n, 1)
    if err:
        return err
    t = op.results[0].type
    if not isinstance(t, ScalarType):
        return f"expected a scalar result, got {t}"
    for v in op.operands:
        if v.type is not t and v.type != t:
            return f"expected operands of type {t}, got ({', '.join(_types(op.operands))})"
    return _no_fp8(op, t)


def _no_fp8(op: Operation, t) -> Optional[str]:
    if is_fp8(t):
        return (f"{op.name} has no {t} form: the 8-bit floats are storage types (PTX has no FP8 "
                "arithmetic); cast to f32 first")
    return None


_BITWISE = frozenset(f"arith.{k}" for k in ("and", "or", "xor", "shl", "shr"))


def _binary(op):
    err = _same_scalar(op, 2)
    if err:
        return err
    if op.name not in _BITWISE:
        return None
    kind = op.name.split(".")[1]
    t = op.results[0].type
    if t.is_float:
        return f"bitwise {kind} needs integer or i1 operands, got {t}"
    if kind in ("shl", "shr") and t.is_bool:
        return f"{kind} needs integer operands, got {t}"
    return None


def _unary(op):
    err = _same_scalar(op, 1)
    if err:
        return err
    if op.name == "arith.not" and op.results[0].type.is_float:
        return "arith.not needs an integer or i1 operand"
    return None


def _constant(op):
    err = _arity(op, 0, 1)
    if err:
        return err
    if "value" not in op.attrs:
        return "missing attribute 'value'"
    if not isinstance(op.results[0].type, ScalarType):
        return f"expected a scalar result, got {op.results[0].type}"
    return None


def _cmp(op):
    err = _arity(op, 2, 1)
    if err:
        return err
    if op.attrs.get("pred") not in CMP_PREDICATES:
        return f"expected pred in {CMP_PREDICATES}, got {op.attrs.get('pred')!r}"
    a, b = op.operands
    if a.type != b.type or not isinstance(a.type, ScalarType):
        return f"expected two operands of one scalar type, got ({', '.join(_types(op.operands))})"
    if is_fp8(a.type):
        return _no_fp8(op, a.type)
    if op.results[0].type != i1:
        return f"expected result i1, got {op.results[0].type}"
    return None


def _select(op):
    err = _arity(op, 3, 1)
    if err:
        return err
    c, a, b = op.operands
    if c.type != i1:
        return f"expected condition i1, got {c.type}"
    if not (a.type == b.type == op.results[0].type):
        return f"expected both choices and the result of one type, got ({', '.join(_types(op.operands[1:]))}) -> {op.results[0].type}"
    return None


def _cast(op):
    err = _arity(op, 1, 1)
    if err:
        return err
    if not isinstance(op.operands[0].type, ScalarType) or not isinstance(op.results[0].type, ScalarType):
        return f"expected scalar -> scalar, got {op.operands[0].type} -> {op.results[0].type}"
    if op.name == "arith.bitcast" and op.operands[0].type.bits != op.results[0].type.bits:
        return f"bitcast needs equal widths, got {op.operands[0].type} -> {op.results[0].type}"
    return None


PACK_TYPES = ("bf16", "f16")
"""The 16-bit floats ``arith.cvt_pack`` rounds to (PTX ``cvt.rn.bf16x2.f32`` / ``.f16x2.f32``)."""


def _cvt_pack(op):
    err = _arity(op, 2, 1)
    if err:
        return err
    if any(v.type != f32 for v in op.operands) or op.results[0].type != u32:
        return (f"expected (f32, f32) -> u32 (two floats into one 32-bit register), got "
                f"({', '.join(_types(op.operands))}) -> {op.results[0].type}")
    to = op.attrs.get("to")
    if to not in PACK_TYPES:
        return f"attribute to must be one of {PACK_TYPES}, got {to!r}"
    return None


def _math(op):
    err = _same_scalar(op, {"math.fma": 3, "math.copysign": 2}.get(op.name, 1))
    if err:
        return err
    if op.name != "math.abs" and not op.results[0].type.is_float:
        return f"{op.name} needs a float operand, got {op.results[0].type}"
    return None


def _sreg(op):
    err = _arity(op, 0, 1)
    if err:
        return err
    reg = op.attrs.get("reg")
    if reg not in SREGS:
        return f"unknown special register {reg!r}; known: {', '.join(SREGS)}"
    t = op.results[0].type
    if not isinstance(t, ScalarType) or not t.is_int or t.bits != SREGS[reg]:
        return f"special register {reg} is {SREGS[reg]}-bit, result is {t}"
    return None


def _barrier(op):
    if op.results or len(op.operands) > 1:
        return "nvvm.barrier takes at most one operand (a dynamic i32 id) and gives no results"
    if op.operands:
        if "id" in op.attrs:
            return "nvvm.barrier has both a static id attribute and a dynamic id operand"
        if op.operands[0].type != i32:
            return f"nvvm.barrier's dynamic id must be i32, got {op.operands[0].type}"
    elif not isinstance(op.attrs.get("id", 0), int) or not 0 <= op.attrs.get("id", 0) < 16:
        return f"barrier id must be an int in [0, 16), got {op.attrs.get('id')!r}"
    count = op.attrs.get("count")
    if count is not None and (count <= 0 or count % 32):
        return f"barrier thread count must be a positive multiple of 32, got {count}"
    return None


def _printf(op):
    if op.results:
        return "gpu.printf gives no results"
    if not isinstance(op.attrs.get("format"), str):
        return "missing string attribute 'format'"
    if any(not isinstance(v.type, ScalarType) for v in op.operands):
        return f"printf arguments must be scalars, got ({', '.join(_types(op.operands))})"
    return None


def _trap(op):
    return _arity(op, 0, 0)


def _ptr_offset(op):
    err = _arity(op, 2, 1)
    if err:
        return err
    p, i = op.operands
    if not isinstance(p.type, PointerType) or op.results[0].type != p.type:
        return f"expected (ptr, int) -> same ptr, got ({', '.join(_types(op.operands))}) -> {op.results[0].type}"
    if not (isinstance(i.type, ScalarType) and i.type.is_int):
        return f"expected an integer offset, got {i.type}"
    return None


def _ptr_to_int(op):
    err = _arity(op, 1, 1)
    if err:
        return err
    if not isinstance(op.operands[0].type, PointerType):
        return f"expected a pointer operand, got {op.operands[0].type}"
    if op.results[0].type != u64:
        return f"expected result u64, got {op.results[0].type}"
    return None


def _load(op):
    err = _arity(op, 1, 1)
    if err:
        return err
    p = op.operands[0].type
    if not isinstance(p, PointerType) or p.pointee != op.results[0].type:
        return f"expected ptr<T> -> T, got {p} -> {op.results[0].type}"
    return None


def _store(op):
    err = _arity(op, 2, 0)
    if err:
        return err
    p, v = op.operands
    if not isinstance(p.type, PointerType) or p.type.pointee != v.type:
        return f"expected (ptr<T>, T), got ({', '.join(_types(op.operands))})"
    return None


def _yield_types(region, kind):
    term = region.block.terminator
    if term is None or term.name != kind:
        return None, f"region must end in {kind}, found {term.name if term else 'nothing'}"
    return [v.type for v in term.operands], None


def _if(op):
    if len(op.operands) != 1 or op.operands[0].type != i1:
        return f"expected one i1 condition, got ({', '.join(_types(op.operands))})"
    if len(op.regions) != 2:
        return f"expected 2 regions (then, else), got {len(op.regions)}"
    want = [r.type for r in op.results]
    for name, region in zip(("then", "else"), op.regions):
        if region.block.args:
            return f"{name} region takes no arguments"
        got, err = _yield_types(region, "scf.yield")
        if err:
            return f"{name} {err}"
        if got != want:
            return f"{name} region yields ({', '.join(map(str, got))}), the if gives ({', '.join(map(str, want))})"
    return None


def _for(op):
    if len(op.operands) < 3:
        return "expected lb, ub, step and the initial carried values"
    lb, ub, step = op.operands[:3]
    if not (isinstance(lb.type, ScalarType) and lb.type.is_int and lb.type == ub.type == step.type):
        return f"expected lb, ub, step of one integer type, got ({', '.join(_types(op.operands[:3]))})"
    init = [v.type for v in op.operands[3:]]
    res = [r.type for r in op.results]
    if init != res:
        return f"initial values ({', '.join(map(str, init))}) differ from results ({', '.join(map(str, res))})"
    if len(op.regions) != 1:
        return "expected one body region"
    args = [a.type for a in op.regions[0].block.args]
    if args != [lb.type] + res:
        return f"body arguments ({', '.join(map(str, args))}) must be (iv: {lb.type}, {', '.join(map(str, res))})"
    got, err = _yield_types(op.regions[0], "scf.yield")
    if err:
        return f"body {err}"
    if got != res:
        return f"body yields ({', '.join(map(str, got))}), the loop carries ({', '.join(map(str, res))})"
    return None


def _while(op):
    init = [v.type for v in op.operands]
    res = [r.type for r in op.results]
    if init != res:
        return f"initial values ({', '.join(map(str, init))}) differ from results ({', '.join(map(str, res))})"
    if len(op.regions) != 2:
        return "expected 2 regions (before, after)"
    before, after = op.regions
    for name, region in (("before", before), ("after", after)):
        if [a.type for a in region.block.args] != res:
            return f"{name} region arguments must be ({', '.join(map(str, res))})"
    term = before.block.terminator
    if term is None or term.name != "scf.condition":
        return "before region must end in scf.condition"
    if not term.operands or term.operands[0].type != i1:
        return "scf.condition needs an i1 condition first"
    if [v.type for v in term.operands[1:]] != res:
        return "scf.condition must forward the carried values"
    got, err = _yield_types(after, "scf.yield")
    if err:
        return f"after {err}"
    if got != res:
        return f"after region yields ({', '.join(map(str, got))}), the loop carries ({', '.join(map(str, res))})"
    return None


def _terminator(op):
    if op.results:
        return f"{op.name} gives no results"
    return None


def _call(op):
    if not isinstance(op.attrs.get("callee"), str):
        return "missing string attribute 'callee'"
    return None


P, R, W, TERM, COLL, ASYNC, WAITS, ATOMIC = (
    Trait.PURE, Trait.READS_MEMORY, Trait.WRITES_MEMORY, Trait.TERMINATOR, Trait.WARP_COLLECTIVE,
    Trait.ASYNC, Trait.WAITS, Trait.ATOMIC)
"""Short names of the traits for the definition tables (the families import them)."""


def _same_as_first(operands, attrs):
    return [operands[0]]


def _to_i1(operands, attrs):
    return [i1]


_BINARY_DOC = {
    "add": "a + b (wrapping for ints)", "sub": "a - b (wrapping for ints)",
    "mul": "a * b (wrapping for ints)",
    "div": "floats a / b; ints C division (toward zero)",
    "rem": "floats fmod; ints C remainder (sign of a)",
    "floordiv": "Python // (toward -inf), floats too; rewritten into primitives by "
                "passes/legalize_arith.py",
    "mod": "Python % (sign of b); rewritten into primitives by passes/legalize_arith.py",
    "and": "bitwise and (logical on i1)", "or": "bitwise or (logical on i1)",
    "xor": "bitwise xor (logical on i1)", "shl": "a << b",
    "shr": "a >> b: arithmetic for signed, logical for unsigned",
    "min": "minimum; floats IEEE minNum", "max": "maximum; floats IEEE maxNum"}

define("arith.constant", "() -> T", "a literal (int, float or bool) of scalar type T", _constant,
       (P,), {"value": "int | float | bool"})
for _k in BINARY:
    define(f"arith.{_k}", "(a: T, b: T) -> T", _BINARY_DOC[_k], _binary, (P,),
           infer=_same_as_first, legalized=_k in ("floordiv", "mod"))
define("arith.neg", "(a: T) -> T", "-a", _unary, (P,), infer=_same_as_first)
define("arith.not", "(a: T) -> T", "bitwise complement (logical on i1)", _unary, (P,),
       infer=_same_as_first)
define("arith.cmp", "(a: T, b: T) -> i1", "a <pred> b; pred in eq ne lt le gt ge one (floats: ne "
       "unordered, the others ordered)", _cmp, (P,),
       {"pred": "str"}, infer=_to_i1)
define("arith.select", "(c: i1, a: T, b: T) -> T", "c ? a : b", _select, (P,),
       infer=lambda operands, attrs: [operands[1]])
define("arith.cast", "(x: T) -> U", "numeric conversion (float->int truncates toward zero; to i1 "
       "is x != 0)", _cast, (P,), ptx="cvt")
define("arith.bitcast", "(x: T) -> U", "same width, bits reinterpreted", _cast, (P,), ptx="mov")
define("arith.cvt_pack", "(lo: f32, hi: f32) -> u32", "lo and hi rounded to nearest even to the "
       "16-bit float `to` (bf16, f16) in one register: lo in bits 0-15, hi in 16-31", _cvt_pack,
       (P,), {"to": "str: bf16 | f16"}, "cvt.rn.bf16x2.f32, cvt.rn.f16x2.f32",
       infer=lambda operands, attrs: [u32], requires="sm_80")
for _k in UNARY_MATH:
    define(f"math.{_k}", "(x: T) -> T", f"{_k}(x) on floats" + (" and ints" if _k == "abs" else ""),
           _math, (P,), {"approx?": "bool: the fast approximation (exp, tanh)"},
           infer=_same_as_first)
define("math.fma", "(a: T, b: T, c: T) -> T", "a * b + c with one rounding", _math, (P,),
       ptx="fma.rn", infer=_same_as_first)
define("math.copysign", "(a: T, b: T) -> T", "the magnitude of a with the sign bit of b, on "
       "floats (NaNs too; exact)", _math, (P,), ptx="copysign", infer=_same_as_first)

define("nvvm.sreg", "() -> i32|i64", "a PTX special register (tid.x, ctaid.y, laneid, clock64, "
       "...)", _sreg, (P,), {"reg": "str"}, "Special Registers")
define("nvvm.barrier", "(id?: i32) ->", "bar.sync id[, count] (count: threads, a multiple of 32; "
       "id: the static attribute or a warp-uniform i32 operand)",
       _barrier, (WAITS,), {"id?": "int", "count?": "int"}, "Parallel Synchronization: bar")
define("gpu.printf", "(*args) ->", "device printf (vprintf); format uses %d %f ...", _printf,
       (W,), {"format": "str"}, "CUDA vprintf")
define("gpu.trap", "() ->", "abort the kernel", _trap, (W,), ptx="trap")
define("ptr.offset", "(p: ptr<T>, i: int) -> ptr<T>", "p + i elements", _ptr_offset, (P,),
       infer=_same_as_first)
define("ptr.to_int", "(p: ptr<T, s>) -> u64", "p's address in its state space as an integer "
       "(shared: the offset in the CTA's shared window)", _ptr_to_int, (P,),
       ptx="State Spaces; cvta", infer=lambda operands, attrs: [u64])
define("mem.load", "(p: ptr<T>) -> T", "*p", _load, (R,), ptx="ld",
       infer=lambda operands, attrs: [operands[0].pointee])
define("mem.store", "(p: ptr<T>, v: T) ->", "*p = v", _store, (W,), ptx="st")
define("scf.if", "(c: i1) -> R*", "regions [then, else], both end in scf.yield(R*)", _if)
define("scf.for", "(lb, ub, step: int, *init: R*) -> R*", "region args (iv, *R), ends in "
       "scf.yield(R*); iterates while iv < ub for step > 0, iv > ub for step < 0", _for,
       attrs={"unroll?": "int: unroll hint"})
define("scf.while", "(*init: A*) -> A*", "regions [before(A*) ends in scf.condition(c, *A), "
       "after(A*) ends in scf.yield(A*)]", _while)
define("scf.yield", "(*vals) ->", "ends a region, passing vals to the parent op", _terminator,
       (TERM,))
define("scf.condition", "(c: i1, *vals) ->", "ends a while's before region", _terminator, (TERM,))
define("func.call", "(*args) -> R*", "call a device function of the module (may read and write "
       "memory)", _call, (R, W), {"callee": "str"})
define("func.return", "(*vals) ->", "end of a function body", _terminator, (TERM,))

TERMINATORS = tuple(sorted(n for n, d in OPS.items() if TERM in d.traits))
"""The ops that end a block (all of them are defined above)."""
