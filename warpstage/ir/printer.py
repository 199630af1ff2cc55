"""MLIR-like text for the IR: ``%3 = arith.add %1, %2 : i32``.

Values are numbered per function in definition order; attributes print sorted by name; a
location prints as a trailing ``loc("file":line)`` when ``locations=True``.
"""
from __future__ import annotations

from .core import Block, Function, Module, Operation

__all__ = ["print_module", "print_function"]


def print_module(module: Module, locations: bool = False) -> str:
    return "\n\n".join(print_function(f, locations) for f in module.functions) + "\n"


def print_function(fn: Function, locations: bool = False) -> str:
    return _Printer(locations).function(fn)


def _attr(v) -> str:
    if isinstance(v, str):
        return '"' + v.encode("unicode_escape").decode("ascii").replace('"', '\\"') + '"'
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, (tuple, list)):
        return "[" + ", ".join(_attr(x) for x in v) + "]"
    return str(v)


class _Printer:
    def __init__(self, locations: bool):
        self.names: dict[int, str] = {}
        self.locations = locations
        self.lines: list[str] = []

    def name(self, v) -> str:
        key = id(v)
        if key not in self.names:
            self.names[key] = f"%{len(self.names)}"
        return self.names[key]

    def function(self, fn: Function) -> str:
        kind = "kernel" if fn.is_kernel else "func"
        params = ", ".join(f"{self.name(a)}: {a.type}" for a in fn.args)
        rets = f" -> ({', '.join(map(str, fn.result_types))})" if fn.result_types else ""
        attrs = {k: v for k, v in fn.attrs.items() if k != "param_names"}
        attr_text = (" attributes {" + ", ".join(f"{k} = {_attr(attrs[k])}" for k in sorted(attrs))
                     + "}") if attrs else ""
        self.lines.append(f"{kind} @{fn.name}({params}){rets}{attr_text} {{")
        self.block_ops(fn.body.block, 1)
        self.lines.append("}")
        return "\n".join(self.lines)

    def block_ops(self, block: Block, depth: int):
        for op in block.ops:
            self.op(op, depth)

    def op(self, op: Operation, depth: int):
        ind = "  " * depth
        lhs = ", ".join(self.name(r) for r in op.results)
        lhs = f"{lhs} = " if lhs else ""
        operands = ", ".join(self.name(v) for v in op.operands)
        attrs = (" {" + ", ".join(f"{k} = {_attr(op.attrs[k])}" for k in sorted(op.attrs)) + "}"
                 if op.attrs else "")
        types = ""
        if op.results:
            types = " : " + ", ".join(str(r.type) for r in op.results)
        elif op.operands and not op.name.startswith(("scf.", "func.")):
            types = " : " + ", ".join(str(v.type) for v in op.operands)
        loc = f' loc("{op.loc.file}":{op.loc.line})' if self.locations and op.loc else ""
        head = f"{ind}{lhs}{op.name}{(' ' + operands) if operands else ''}{attrs}{types}"
        if not op.regions:
            self.lines.append(head + loc)
            return
        self.lines.append(head + " {")
        for k, region in enumerate(op.regions):
            if k:
                self.lines.append(f"{ind}}} {{")
            args = region.block.args
            if args:
                self.lines.append(f"{ind}^({', '.join(f'{self.name(a)}: {a.type}' for a in args)}):")
            self.block_ops(region.block, depth + 1)
        self.lines.append(f"{ind}}}{loc}")
