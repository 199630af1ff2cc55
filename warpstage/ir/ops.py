"""The op set: each op's name, contract and verifier rule.

Every op the frontend may emit is listed here, and the backend and the simulator each implement
every one of them (the tests check all three tables agree). An op's rule returns an error message
(expected vs got) or ``None``. Conventions: ``T`` is a scalar type; binary arithmetic takes two
operands of one type; comparisons give ``i1``; pointers carry their pointee type and address space.

arith
  arith.constant {value}                  -> T        a literal (int, float or bool)
  arith.add|sub|mul (a: T, b: T)          -> T        wrapping for ints
  arith.div (a, b)                        -> T        floats: a / b; ints: C division (toward zero)
  arith.rem (a, b)                        -> T        floats: fmod; ints: C remainder (sign of a)
  arith.floordiv (a, b)                   -> T        Python ``//`` (toward -inf), floats too
  arith.mod (a, b)                        -> T        Python ``%`` (sign of b)
  arith.and|or|xor (a, b)                 -> T        bitwise; on i1 logical
  arith.shl|shr (a, b)                    -> T        shr is arithmetic for signed, logical for uint
  arith.min|max (a, b)                    -> T        floats: IEEE minNum/maxNum
  arith.neg|not (a)                       -> T        not: bitwise complement (logical on i1)
  arith.cmp {pred} (a: T, b: T)           -> i1       pred in eq ne lt le gt ge
  arith.select (c: i1, a: T, b: T)        -> T
  arith.cast (x)                          -> U        numeric conversion between scalar types
                                                      (float->int truncates toward zero; to i1 is x != 0)
  arith.bitcast (x)                       -> U        same width, bits reinterpreted
math (floats)
  math.exp|exp2|log|log2|sqrt|rsqrt|abs|floor|ceil|sin|cos|tanh (x: T) -> T   (abs: ints too)
  math.fma (a, b, c)                      -> T        a*b+c, one rounding
nvvm
  nvvm.sreg {reg}                         -> i32|i64  PTX special register (tid.x, ctaid.y, laneid, clock64, ...)
  nvvm.barrier {id?, count?} (id?)        ->          bar.sync id[, count] (count: threads, multiple of 32;
                                                      id: static attr or a warp-uniform i32 operand)
  nvvm.barrier_arrive {id?, count} (id?)  ->          bar.arrive id, count: arrive without waiting
  nvvm.shfl {mode, width?, mask?} (x: T, b: i32) -> T shfl.sync.<mode>.b32; T is i32|u32|f32; mode
                                                      idx|up|down|bfly; b: source lane or delta
  nvvm.vote {mode, mask?} (p: i1)         -> i1|u32   vote.sync.all|any|uni (i1), .ballot (u32)
  nvvm.elect {mask?}                      -> i1       elect.sync: true in exactly one active lane
  nvvm.warp_sync {mask?}                  ->          bar.warp.sync mask (__syncwarp)
  nvvm.setmaxnreg {action, count}         ->          setmaxnreg.inc|dec.sync.aligned.u32 count
                                                      (count: multiple of 8 in [24, 256])
  nvvm.fence {kind}                       ->          fence.<kind>: proxy.async[.shared::cta|.global],
                                                      acq_rel|sc.<cta|cluster|gpu|sys>,
                                                      mbarrier_init.release.cluster
  nvvm.smem_base                          -> ptr<T, shared>  the CTA's dynamic shared memory
  (masks default to 0xffffffff; width to 32)
mbarrier (bar: !ptr<u64, shared>, an 8-byte mbarrier object; i32 operands)
  mbarrier.init (bar, count)              ->          expected arrivals per phase
  mbarrier.arrive (bar, count?)           -> u64      arrive (count times); the state token
  mbarrier.arrive_expect_tx (bar, bytes)  -> u64      expect_tx then arrive
  mbarrier.expect_tx (bar, bytes)         ->          raise the phase's transaction count
  mbarrier.try_wait_parity (bar, parity)  -> i1       has the phase with this parity completed?
  mbarrier.wait_parity (bar, parity)      ->          block until it has (a try_wait loop)
  mbarrier.inval (bar)                    ->          end of the mbarrier's life
cp_async (cp.async: global -> shared, per thread, completed by groups or an mbarrier)
  cp_async.copy {cache, size} (dst: ptr<_, shared>, src: ptr<_, global>) ->  size bytes;
                                                      cache ca (4|8|16 bytes) or cg (16)
  cp_async.commit_group | cp_async.wait_all ->
  cp_async.wait_group {n}                 ->          until at most n groups are pending
  cp_async.mbarrier_arrive {noinc?} (bar) ->          arrive on bar once prior copies land
gpu
  gpu.printf {format} (*args)             ->          device printf (vprintf); format uses %d %f ...
  gpu.trap                                ->          abort the kernel (PTX trap)
ptr / mem
  ptr.offset (p: ptr<T>, i: int)          -> ptr<T>   p + i elements
  ptr.cast (p: ptr<T, s>)                 -> ptr<U, s>  same address, new pointee type
  mem.atomic {kind} (p: ptr<T>, v: T)     -> T        old value; kind add|min|max|exch|and|or|xor;
                                                      T in i32 u32 i64 u64 f32 f64 (floats: add, exch)
  mem.atomic_cas (p, cmp: T, v: T)        -> T        old value; stores v if old == cmp (integers)
  mem.load (p: ptr<T>)                    -> T
  mem.store (p: ptr<T>, v: T)             ->
scf (structured control flow; each region has one block ending in its terminator)
  scf.if (c: i1) -> R*  regions [then, else]      both end in scf.yield(R*)
  scf.for (lb, ub, step: int, *init: R*) -> R*    region args (iv, *R); ends in scf.yield(R*)
                                                  {unroll?}: unroll hint; iterates while iv < ub
                                                  for step > 0 and iv > ub for step < 0
  scf.while (*init: A*) -> A*  regions [before(A*) ends in scf.condition(c, *A), after(A*) ends
                                                  in scf.yield(A*)]
  scf.yield (*vals)         scf.condition (c: i1, *vals)
func
  func.call {callee} (*args) -> R*        call a device function of the module
  func.return (*vals)                     end of a function body
mma (mma.sync, ldmatrix, stmatrix: warp-collective; contract and fragment layouts in ops_mma.py)
tma (TMA tensor copies on !tensormap descriptors, bulk groups, bulk copies; contract in ops_tma.py)
wgmma (warpgroup MMA: fence, mma_async, commit/wait groups, descriptors; contract in ops_wgmma.py)
"""
from __future__ import annotations

from typing import Callable, Optional

from .core import Operation
from .types import PointerType, ScalarType, i1, i32

__all__ = ["OPS", "BINARY", "UNARY_MATH", "CMP_PREDICATES", "SREGS", "TERMINATORS"]

BINARY = ("add", "sub", "mul", "div", "rem", "floordiv", "mod", "and", "or", "xor", "shl",
          "shr", "min", "max")
UNARY_MATH = ("exp", "exp2", "log", "log2", "sqrt", "rsqrt", "abs", "floor", "ceil", "sin",
              "cos", "tanh")
CMP_PREDICATES = ("eq", "ne", "lt", "le", "gt", "ge")
SREGS = {f"{base}.{d}": 32 for base in ("tid", "ctaid", "ntid", "nctaid") for d in "xyz"}
SREGS.update({"laneid": 32, "warpid": 32, "smid": 32, "clock": 32, "clock64": 64,
              "globaltimer": 64})
TERMINATORS = ("scf.yield", "scf.condition", "func.return")

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
    if any(v.type != t for v in op.operands):
        return f"expected operands of type {t}, got ({', '.join(_types(op.operands))})"
    return None


def _binary(op):
    err = _same_scalar(op, 2)
    if err:
        return err
    kind = op.name.split(".")[1]
    t = op.results[0].type
    if kind in ("and", "or", "xor", "shl", "shr") and t.is_float:
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


def _math(op):
    err = _same_scalar(op, 3 if op.name == "math.fma" else 1)
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


OPS: dict[str, Rule] = {"arith.constant": _constant}
OPS.update({f"arith.{k}": _binary for k in BINARY})
OPS.update({"arith.neg": _unary, "arith.not": _unary, "arith.cmp": _cmp, "arith.select": _select,
            "arith.cast": _cast, "arith.bitcast": _cast})
OPS.update({f"math.{k}": _math for k in UNARY_MATH + ("fma",)})
OPS.update({"nvvm.sreg": _sreg, "nvvm.barrier": _barrier, "gpu.printf": _printf,
            "gpu.trap": _trap, "ptr.offset": _ptr_offset, "mem.load": _load,
            "mem.store": _store, "scf.if": _if, "scf.for": _for, "scf.while": _while,
            "scf.yield": _terminator, "scf.condition": _terminator, "func.call": _call,
            "func.return": _terminator})

# The warp-specialization ops' rules live beside this table (this module is imported first, so
# ops_sync can use the helpers above).
from .ops_sync import RULES as _SYNC_RULES  # noqa: E402

OPS.update(_SYNC_RULES)
from .ops_mma import RULES as _MMA_RULES  # noqa: E402

OPS.update(_MMA_RULES)
from .ops_tma import RULES as _TMA_RULES  # noqa: E402

OPS.update(_TMA_RULES)
from .ops_wgmma import RULES as _WGMMA_RULES  # noqa: E402

OPS.update(_WGMMA_RULES)
