"""IR module -> LLVM IR text for ``nvptx64-nvidia-cuda``.

``lower`` verifies the IR, declares every function it defines in an ``llvmlite.ir`` module (so
calls may go in any order; not the device functions lowered in place, below), then lowers each
body, written as text by ``llvm_builder`` (the part of llvmlite's ``IRBuilder`` API the rules
use; the same text llvmlite's builder and printer make, ``lower_module(reference=True)``, in
about half the time: docs/compile-time.md, 16.). Straight-line ops go
through the rule tables of ``lower_arith``, ``lower_math``, ``lower_gpu``, ``lower_sync`` and
``lower_smem``; structured control flow and calls are lowered here.

Functions:

- A kernel (``is_kernel``) is an entry: ``define ptx_kernel void @name(...)``; pointer
  parameters are ``ptr addrspace(N)`` of their space (global: 1). Launch properties are LLVM 22
  function attributes (never ``!nvvm.annotations``, which aborts llvmlite's LLVM):
  ``attrs['maxntid']`` (1-3 ints) -> ``"nvvm.maxntid"="x,y,z"`` -> PTX ``.maxntid x, y, z``;
  ``attrs['minctasm']`` -> ``"nvvm.minctasm"`` -> ``.minnctapersm``; ``attrs['maxnreg']`` ->
  ``"nvvm.maxnreg"`` -> ``.maxnreg`` (PTX ISA "Performance-Tuning Directives").
  ``attrs['noalias']``: True marks every pointer parameter ``noalias``, a collection of indices
  marks those; the caller promises the pointed-to memory does not overlap.
  A ``!tensormap`` parameter (a TMA descriptor passed by value) is ``ptr byval([128 x i8])
  align 64 "nvvm.grid_constant"`` -> PTX ``.param .align 64 .b8 p[128]``; its uses take the
  parameter's generic address (``cvta.param``), which TMA instructions accept (PTX ISA
  "Tensor-map"; CUDA ``__grid_constant__``).
- A device function has internal linkage; zero results return void, one its value, several an
  LLVM struct (literal; from 8 fields one named type per field list,
  ``llvm_types.aggregate_type``; an ``inline='always'`` function of ``OUT_POINTER_RESULTS``
  or more results: through an out-pointer to one, ``returns_through_pointer``). ``attrs['inline']``: 'never' -> noinline;
  'always' (``@ws.jit``'s default) -> alwaysinline, or with ``CompileOptions.inline_in_place`` the function is not
  defined at all, its body is lowered in place at each call, its parameters bound to the
  call's arguments and its results to what its ``func.return`` gives (``_inlined_in_place``;
  one that reaches itself through calls stays an ``alwaysinline`` function). Why the option:
  LLVM's O3 runs IPSCCP before its inliner, and IPSCCP on functions returning literal structs
  of 100+ fields (a role's loop state) built by ``insertvalue`` chains took 2.7 of the wgmma
  FlashAttention D=128's 2.9 s of O3; why not the default: the same kernels built that way ran
  1-4.6% slower on the H200 (LLVM simplifies a callee before inlining it, and the order
  changes the schedule ptxas gets; docs/compile-time.md, 10.).

Control flow (``scf``) becomes basic blocks with phis:

- scf.if: then/else blocks joining in a block whose phis are the if's results.
- scf.for (lb, ub, step): ``iv = lb; while (step > 0 ? iv < ub : iv > ub) { body; iv += step }``
  compared signed or unsigned by the type; with a constant step the comparison is chosen at
  compile time. ``iv + step`` must not overflow the type (signed adds are ``nsw``).
  ``attrs['unroll']``: n > 1 -> ``llvm.loop.unroll.count n``; 1 -> ``llvm.loop.unroll.disable``.
- scf.while: ``before`` runs first; ``scf.condition(c, *v)`` enters ``after`` with v while c,
  else leaves the loop with v as the results.
"""
from __future__ import annotations

from llvmlite import ir
from llvmlite.ir.values import FunctionAttributes, MDValue

from ..errors import CompilationError, WarpstageError
from ..ir import core
from ..ir.opdef import unlowered_op_message
from ..ir.types import PointerType, ScalarType, TensorMapType
from ..ir.verifier import verify
from ..options import CompileOptions
from . import (lower_arith, lower_cluster, lower_gpu, lower_math, lower_mma, lower_smem,
               lower_sync, lower_tma, lower_wgmma)
from . import llvm_c
from .context import LoweringContext
from .llvm_builder import Body, Builder
from .llvm_text import module_text
from .llvm_types import aggregate_type, llvm_type
from .ptx import TRIPLE, data_layout
from .target_check import check_target, target_of

__all__ = ["lower", "lower_module", "RULES", "CONTROL_OPS"]

RULES = {**lower_arith.RULES, **lower_math.RULES, **lower_gpu.RULES, **lower_sync.RULES,
         **lower_smem.RULES, **lower_mma.RULES, **lower_tma.RULES, **lower_wgmma.RULES,
         **lower_cluster.RULES}
"""op name -> rule for every op that is not control flow or a call."""
CONTROL_OPS = ("scf.if", "scf.for", "scf.while", "func.call")
"""Ops lowered here; terminators (scf.yield, scf.condition, func.return) by their parents."""


def lower(module: core.Module, options: CompileOptions, verified: bool = False) -> str:
    """LLVM IR text of ``module`` for ``options.arch``. ``verified=True``: the module comes
    straight from ``passes.run_passes``, which verified it, so it is not verified again. The
    bodies are written by ``llvm_builder`` where llvmlite is a checked release
    (``llvm_c.checked_release``: ``llvm_text`` reads some of ``llvmlite.ir``'s internals), else
    by llvmlite's own builder: the same text.

    Raises VerificationError for malformed IR, UnsupportedError for an unknown ``arch``, an op
    the arch lacks (``backend.target_check``) or an op/type combination the backend cannot lower
    (e.g. math.exp on f64), CompilationError for internal failures.
    """
    return module_text(*lower_module(module, options, verified,
                                     reference=not llvm_c.checked_release()))


def lower_module(module: core.Module, options: CompileOptions, verified: bool = False,
                 reference: bool = False) -> tuple:
    """``(llmod, bodies)``: the ``llvmlite.ir`` module of ``module``'s declarations and globals,
    and each defined function's body (``llvm_builder.Body``), which
    ``llvm_text.module_text(llmod, bodies)`` prints. ``reference=True``: the bodies built by
    llvmlite's own ``IRBuilder`` into ``llmod`` (``bodies`` empty; ``str(llmod)`` is the text),
    the text the tests compare ``lower``'s with. Arguments and errors as ``lower``'s."""
    if not verified:
        verify(module)
    check_target(module, target_of(options.arch))
    llmod = ir.Module(name="warpstage", context=ir.Context())     # its own named types
    llmod.triple = TRIPLE
    llmod.data_layout = data_layout(options.arch, options.ptx_version, options.opt_level)
    in_place = _inlined_in_place(module) if options.inline_in_place else frozenset()
    bodies = {fn.name: fn for fn in module.functions}
    functions = {fn.name: _declare(llmod, fn) for fn in module.functions
                 if fn.name not in in_place}
    strings: dict = {}
    built = {}
    for fn in module.functions:
        if fn.name not in in_place:
            llfn = functions[fn.name]
            body = llfn if reference else Body(llfn)
            if not reference:
                built[llfn] = body
            _FunctionLowering(llmod, body, strings, functions,
                              {name: bodies[name] for name in in_place},
                              ir.IRBuilder if reference else Builder).run(fn)
    return llmod, built


def _inlined_in_place(module: core.Module) -> frozenset:
    """The names of the device functions whose calls are lowered in place (their bodies at
    each call site, no LLVM function): those marked ``inline='always'`` that do not reach
    themselves through calls (a recursive one stays a function, called)."""
    calls = {fn.name: {op.attrs["callee"] for op in fn.walk() if op.name == "func.call"}
             for fn in module.functions}
    always = {fn.name for fn in module.functions
              if not fn.is_kernel and fn.attrs.get("inline") == "always"}

    def reaches_itself(name):
        seen, todo = set(), list(calls[name])
        while todo:
            f = todo.pop()
            if f == name:
                return True
            if f not in seen and f in calls:
                seen.add(f)
                todo.extend(calls[f])
        return False

    return frozenset(name for name in always if not reaches_itself(name))


OUT_POINTER_RESULTS = 128
"""The result count from which an ``inline='always'`` device function returns through an
out-pointer (``returns_through_pointer``)."""


def returns_through_pointer(fn: core.Function) -> bool:
    """Whether device function ``fn`` gives its results through an out-pointer (a stack slot of
    its caller's, a pointer to a literal struct of the results, its last parameter) instead of
    returning a literal struct: an ``inline='always'`` function of at least
    ``OUT_POINTER_RESULTS`` results (the wgmma FlashAttention's K/V loops and steps: 161 at
    D=64, 140 and 289 at D=128, up to 172 at D=256). IPSCCP, which O3 runs before its inliner,
    tracks a struct return field by field through its ``insertvalue`` chain, each insert
    visiting every field, again whenever a field's value changes (the D=64 kernel's 161-result
    loop: 330-400 of its ~700 ms of O3 on the CPU host); through memory it has nothing to
    track, and the inliner's SROA turns the slot back into registers. The PTX of every default
    FlashAttention policy, of ``scripts/kernel_ptx.py``'s configurations and of the CPU suite's
    kernels is byte-identical either way (docs/compile-time.md, 12. and 13.). Below the bound
    the struct return is cheap, and two functions changed their kernels' PTX through memory:
    ``TileOverlap.next_tile_start`` (76 results at D=64, 108 in a D=128 causal test
    configuration) and a 3-warpgroup ``serial_loop`` (89), none of it timed on a GPU."""
    return (not fn.is_kernel and len(fn.result_types) >= OUT_POINTER_RESULTS
            and fn.attrs.get("inline") == "always")


class _StringAttributes(FunctionAttributes):
    """llvmlite's function attributes plus LLVM string attributes ``"key"="value"``."""

    def __init__(self, strings: dict):
        super().__init__()
        self.strings = strings

    def __bool__(self):
        return bool(self.strings) or len(self) > 0

    def _to_list(self, ret_type):
        return super()._to_list(ret_type) + [f'"{k}"="{v}"' for k, v in self.strings.items()]


class _GridConstantAttributes(ir.values.ArgumentAttributes):
    """A by-value 128-byte TMA descriptor parameter (llvmlite spells ``byval`` only with a typed
    pointer, and has no string parameter attributes)."""

    def __bool__(self):
        return True

    def _to_list(self, typ):
        return ["byval([128 x i8])", "align 64", '"nvvm.grid_constant"']


class _LoopID(MDValue):
    """A distinct, self-referential loop ID node: ``!N = distinct !{!N, !props...}``.

    llvmlite only builds uniqued nodes, and a uniqued self-reference cannot be written.
    """

    def descr(self, buf):
        refs = [self.get_reference()] + [o.get_reference() for o in self.operands]
        buf += (f"distinct !{{{', '.join(refs)}}}", "\n")


def _dims(v) -> str:
    dims = [int(v)] if isinstance(v, int) else [int(x) for x in v]
    return ",".join(map(str, dims + [1] * (3 - len(dims))))


def _declare(llmod: ir.Module, fn: core.Function) -> ir.Function:
    if fn.is_kernel and fn.result_types:
        raise CompilationError(f"kernel {fn.name} declares results "
                               f"({', '.join(map(str, fn.result_types))}); kernels return "
                               "nothing: write results through a pointer parameter")
    args = [llvm_type(t) for t in fn.arg_types]
    results = [llvm_type(t) for t in fn.result_types]
    if not results:
        ret = ir.VoidType()
    elif len(results) == 1:
        ret = results[0]
    elif returns_through_pointer(fn):
        ret = ir.VoidType()
        args.append(aggregate_type(llmod, results).as_pointer())
    else:
        ret = aggregate_type(llmod, results)
    llfn = ir.Function(llmod, ir.FunctionType(ret, args), fn.name)
    attrs = fn.attrs
    strings = {}
    if fn.is_kernel:
        llfn.calling_convention = "ptx_kernel"
        if attrs.get("maxntid") is not None:
            strings["nvvm.maxntid"] = _dims(attrs["maxntid"])
        if attrs.get("minctasm") is not None:
            strings["nvvm.minctasm"] = str(int(attrs["minctasm"]))
        if attrs.get("maxnreg") is not None:
            strings["nvvm.maxnreg"] = str(int(attrs["maxnreg"]))
    else:
        llfn.linkage = "internal"
    llfn.attributes = _StringAttributes(strings)
    inline = attrs.get("inline")
    if inline in ("always", "never"):
        llfn.attributes.add("alwaysinline" if inline == "always" else "noinline")
    noalias = attrs.get("noalias")
    for i, (t, a) in enumerate(zip(fn.arg_types, llfn.args)):
        if fn.is_kernel and isinstance(t, TensorMapType):
            a.attributes = _GridConstantAttributes()
        if isinstance(t, PointerType) and (noalias is True or (
                noalias not in (None, False) and i in noalias)):
            a.add_attribute("noalias")
    return llfn


class _FunctionLowering(LoweringContext):
    def __init__(self, llmod, body, strings, functions, in_place, builder):
        super().__init__(llmod, body, strings, builder)
        self.functions = functions
        self.in_place = in_place        # name -> the Function whose calls are lowered in place
        self.control = {"scf.if": self._if, "scf.for": self._for, "scf.while": self._while,
                        "func.call": self._call}

    def run(self, fn: core.Function) -> None:
        entry = self.function.append_basic_block("entry")      # allocas only, see entry_alloca
        body = self.function.append_basic_block("body")
        self.builder.position_at_end(body)
        for v, a in zip(fn.args, self.function.args):
            self.bind(v, a)
        term = self._lower_ops(fn.body.block)
        type(self.builder)(entry).branch(body)
        vals = self.operands(term)
        b = self.builder
        if not vals:
            b.ret_void()
        elif len(vals) == 1:
            b.ret(vals[0])
        elif returns_through_pointer(fn):
            out = self.function.args[-1]
            i32 = ir.IntType(32)
            for i, v in enumerate(vals):
                b.store(v, b.gep(out, [i32(0), i32(i)], inbounds=True))
            b.ret_void()
        else:
            agg = ir.Constant(self.function.ftype.return_type, ir.Undefined)
            for i, v in enumerate(vals):
                agg = b.insert_value(agg, v, i)
            b.ret(agg)

    # -- blocks ----------------------------------------------------------------------------------
    def _lower_ops(self, block: core.Block):
        """Lower every op of ``block`` but its terminator; return the terminator."""
        for op in block.ops[:-1]:
            self._lower_op(op)
        return block.terminator

    def _region(self, region: core.Region, args=()) -> list:
        """Lower ``region`` with its block arguments bound to ``args``; return what it yields."""
        for v, a in zip(region.block.args, args):
            self.bind(v, a)
        return self.operands(self._lower_ops(region.block))

    def _lower_op(self, op: core.Operation) -> None:
        self.op = op
        control = self.control.get(op.name)
        rule = RULES.get(op.name)
        if control is None and rule is None:
            raise CompilationError(unlowered_op_message(op.name, "the backend")
                                   + (f" (at {op.loc})" if op.loc else ""),
                                   str(op.loc) if op.loc else None)
        try:
            results = control(op) if control is not None else rule(self, op)
        except WarpstageError:
            raise
        except Exception as e:
            where = f" at {op.loc}" if op.loc else ""
            raise CompilationError(f"internal error lowering {op.name}{where}: {e}",
                                   str(op.loc) if op.loc else None) from e
        for v, r in zip(op.results, results):
            self.bind(v, r)

    def _phis(self, values, block) -> list:
        phis = []
        for v in values:
            phi = self.builder.phi(v.type)
            phi.add_incoming(v, block)
            phis.append(phi)
        return phis

    # -- scf -------------------------------------------------------------------------------------
    def _if(self, op: core.Operation) -> list:
        b = self.builder
        (cond,) = self.operands(op)
        then_bb = self.function.append_basic_block("if.then")
        else_bb = self.function.append_basic_block("if.else")
        merge_bb = self.function.append_basic_block("if.end")
        b.cbranch(cond, then_bb, else_bb)
        incoming = []
        for bb, region in ((then_bb, op.regions[0]), (else_bb, op.regions[1])):
            b.position_at_end(bb)
            vals = self._region(region)
            incoming.append((vals, b.block))
            b.branch(merge_bb)
        b.position_at_end(merge_bb)
        results = []
        for i, r in enumerate(op.results):
            phi = b.phi(llvm_type(r.type))
            for vals, bb in incoming:
                phi.add_incoming(vals[i], bb)
            results.append(phi)
        return results

    def _for_condition(self, op, iv, ub, step):
        b = self.builder
        t: ScalarType = op.operands[0].type
        cmp = b.icmp_signed if t.is_signed else b.icmp_unsigned
        step_def = op.operands[2].owner
        if not t.is_signed:
            return cmp("<", iv, ub)
        if isinstance(step_def, core.Operation) and step_def.name == "arith.constant":
            return cmp("<", iv, ub) if step_def.attrs["value"] > 0 else cmp(">", iv, ub)
        positive = cmp(">", step, ir.Constant(step.type, 0))
        return b.select(positive, cmp("<", iv, ub), cmp(">", iv, ub))

    def _for(self, op: core.Operation) -> list:
        b = self.builder
        lb, ub, step, *init = self.operands(op)
        pre = b.block
        header = self.function.append_basic_block("for.header")
        body = self.function.append_basic_block("for.body")
        exit_bb = self.function.append_basic_block("for.end")
        b.branch(header)
        b.position_at_end(header)
        iv, *carried = self._phis([lb, *init], pre)
        b.cbranch(self._for_condition(op, iv, ub, step), body, exit_bb)
        b.position_at_end(body)
        yielded = self._region(op.regions[0], [iv, *carried])
        signed = op.operands[0].type.is_signed
        nxt = b.add(iv, step, flags=("nsw",) if signed else ())
        latch = b.block
        br = b.branch(header)
        loop_id = self._loop_metadata(op.attrs.get("unroll"))
        if loop_id is not None:
            br.set_metadata("llvm.loop", loop_id)
        for phi, v in zip([iv, *carried], [nxt, *yielded]):
            phi.add_incoming(v, latch)
        b.position_at_end(exit_bb)
        return carried

    def _loop_metadata(self, unroll):
        if isinstance(unroll, bool) or not isinstance(unroll, int) or unroll < 1:
            return None
        if unroll == 1:
            props = [self.module.add_metadata(["llvm.loop.unroll.disable"])]
        else:
            props = [self.module.add_metadata(["llvm.loop.unroll.count",
                                               ir.Constant(ir.IntType(32), unroll)])]
        return _LoopID(self.module, props, name=str(len(self.module.metadata)))

    def _while(self, op: core.Operation) -> list:
        b = self.builder
        pre = b.block
        before = self.function.append_basic_block("while.before")
        after = self.function.append_basic_block("while.body")
        exit_bb = self.function.append_basic_block("while.end")
        b.branch(before)
        b.position_at_end(before)
        args = self._phis(self.operands(op), pre)
        cond, *vals = self._region(op.regions[0], args)
        b.cbranch(cond, after, exit_bb)
        b.position_at_end(after)
        yielded = self._region(op.regions[1], vals)
        latch = b.block
        b.branch(before)
        for phi, v in zip(args, yielded):
            phi.add_incoming(v, latch)
        b.position_at_end(exit_bb)
        return vals

    # -- func ------------------------------------------------------------------------------------
    def _call(self, op: core.Operation) -> list:
        body = self.in_place.get(op.attrs["callee"])
        if body is not None:                # its parameters bound to the arguments, here
            return self._region(body.body, self.operands(op))
        callee = self.functions[op.attrs["callee"]]
        n = len(op.results)
        if n > 1 and isinstance(callee.function_type.return_type, ir.VoidType):
            types = [llvm_type(r.type) for r in op.results]
            out = self.entry_alloca(aggregate_type(self.module, types))
            self.builder.call(callee, self.operands(op) + [out])
            i32 = ir.IntType(32)
            return [self.builder.load(self.builder.gep(out, [i32(0), i32(i)], inbounds=True),
                                      typ=types[i])
                    for i in range(n)]
        ret = self.builder.call(callee, self.operands(op))
        if n <= 1:
            return [ret] if n else []
        return [self.builder.extract_value(ret, i) for i in range(n)]
