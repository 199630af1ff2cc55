"""The IR verifier: each op's definition (``ir.opdef``: rule, attribute schema, terminator
trait), SSA scoping, calls.

Run at the stage boundaries (after tracing, between passes; see ``passes.pipeline``). One walk,
linear in the size of the module: the values in scope are one set that grows on entry to a block
and shrinks on exit from it. A failure raises ``VerificationError`` naming the function, the op,
its source location, expected vs got.
"""
from __future__ import annotations

from .core import Block, Function, Module, Operation
from .opdef import OPS, Trait, ops_with

__all__ = ["VerificationError", "verify"]


class VerificationError(ValueError):
    """The IR breaks an invariant. This is a compiler bug unless you built the IR by hand."""


def verify(module: Module) -> None:
    """Check every function of ``module``; raise VerificationError on the first problem."""
    for fn in module.functions:
        _Verifier(module, fn).run()


class _Verifier:
    def __init__(self, module: Module, fn: Function):
        self.module = module
        self.fn = fn
        self.scope: set = set()
        self.terminators = ops_with(Trait.TERMINATOR)

    def fail(self, op, msg):
        where = f" at {op.loc}" if op is not None and op.loc else ""
        name = f"'{op.name}'" if op is not None else "body"
        raise VerificationError(f"in function {self.fn.name}: {name}{where}: {msg}")

    def run(self):
        block = self.fn.body.block
        if [a.type for a in block.args] != list(self.fn.arg_types):
            self.fail(None, "parameters do not match arg_types")
        term = block.terminator
        if term is None or term.name != "func.return":
            self.fail(term, "function body must end in func.return")
        got = [v.type for v in term.operands]
        if got != list(self.fn.result_types):
            self.fail(term, f"returns ({', '.join(map(str, got))}), function declares "
                            f"({', '.join(map(str, self.fn.result_types))})")
        self.block(block)

    def block(self, block: Block):
        # the scope holds the Value objects themselves (a Value hashes by identity), so an
        # op's operands are checked with one set operation, not an id() call each
        scope = self.scope
        added = list(block.args)
        scope.update(added)
        ops = block.ops
        last = len(ops) - 1
        get = OPS.get
        terminators = self.terminators
        for i, op in enumerate(ops):
            if op.parent is not block:
                self.fail(op, "op's parent link does not point at its block")
            d = get(op.name)
            if d is None:
                self.fail(op, "unknown op")
            operands = op.operands
            if operands and not scope.issuperset(operands):
                k = next(k for k, u in enumerate(operands) if u not in scope)
                self.fail(op, f"operand {k} ({operands[k].type}) is not defined before "
                              "this op in an enclosing block")
            if op.attrs and not d.attr_names.issuperset(op.attrs):
                extra = sorted(set(op.attrs) - d.attr_names)
                self.fail(op, f"unknown attribute(s) {', '.join(extra)}; "
                              f"{op.name} takes {', '.join(d.attrs) or 'none'}")
            err = d.rule(op)
            if err:
                self.fail(op, err)
            if i != last and op.name in terminators:
                self.fail(op, "terminator in the middle of a block")
            if op.name == "func.call":
                self.call(op)
            for region in op.regions:
                self.block(region.block)
            results = op.results
            if results:
                scope.update(results)
                added.extend(results)
        scope.difference_update(added)

    def call(self, op: Operation):
        callee = self.module.get(op.attrs["callee"])
        if callee is None:
            self.fail(op, f"no function {op.attrs['callee']!r} in the module")
        if callee.is_kernel:
            self.fail(op, f"cannot call kernel {callee.name!r} from device code")
        if [v.type for v in op.operands] != list(callee.arg_types):
            self.fail(op, f"arguments ({', '.join(str(v.type) for v in op.operands)}) do not match "
                          f"{callee.name}({', '.join(map(str, callee.arg_types))})")
        if [r.type for r in op.results] != list(callee.result_types):
            self.fail(op, f"results do not match {callee.name}'s return types")
