"""The LLVM IR text of a lowered module: the ``llvmlite.ir`` module of its declarations,
globals and metadata (printed by llvmlite) with the bodies ``llvm_builder`` wrote in place.

What ``str(module)`` would print had llvmlite built the bodies (``lower.lower_module``'s
``reference=True``): the header, the named types, each global in order (a function with a
body as ``define <prototype> {...}``, the prototype written here as llvmlite's
``Function.descr_prototype`` writes it), the metadata nodes.
"""
from __future__ import annotations

from llvmlite import ir

__all__ = ["module_text"]


def _prototype(fn: ir.Function) -> str:
    """``define ... @name(args) attrs`` of a function being defined, without its body."""
    args = []
    for a in fn.args:
        attrs = a.attributes._to_list(a.type)
        args.append(f"{a.type} {' '.join(attrs)} {a.get_reference()}" if attrs
                    else f"{a.type} {a.get_reference()}")
    attrs = " " + " ".join(fn.attributes._to_list(fn.ftype.return_type)) if fn.attributes else ""
    if any(fn.args):
        vararg = ", ..." if fn.ftype.var_arg else ""
    else:
        vararg = "..." if fn.ftype.var_arg else ""
    prefix = " ".join(str(x) for x in ["define", fn.linkage, fn.calling_convention,
                                        fn.return_value] if x)
    metadata = fn._stringify_metadata()
    metadata = f" {metadata}" if metadata else ""
    section = f' section "{fn.section}"' if fn.section else ""
    return f"{prefix} {fn.get_reference()}({', '.join(args)}{vararg}){attrs}{section}{metadata}\n"


def module_text(module: ir.Module, bodies: dict | None = None) -> str:
    """The LLVM IR text of ``module``, each function in ``bodies`` (llvmlite function ->
    ``llvm_builder.Body``) defined by its body; with no ``bodies``, ``str(module)``."""
    if not bodies:
        return str(module)
    lines = [f'; ModuleID = "{module.name}"', f'target triple = "{module.triple}"',
             f'target datalayout = "{module.data_layout}"', ""]
    lines += [t.get_declaration() for t in module.get_identified_types().values()]
    for v in module.globals.values():
        body = bodies.get(v) if isinstance(v, ir.Function) else None
        lines.append(str(v) if body is None else _prototype(v) + body.text())
    for name, node in module.namedmetadata.items():
        operands = ", ".join(o.get_reference() for o in node.operands)
        lines.append(f"!{name} = !{{ {operands} }}")
    lines += [str(md) for md in module.metadata]
    return "\n".join(lines)
