"""The LLVM IR text of an ``llvmlite.ir`` module: byte for byte what ``str(module)`` prints, in
about a third of the time.

``str(module)`` is about half of the ``lower`` stage for the FlashAttention kernels (~7,000 and
~9,000 instructions at D=64 and D=128): llvmlite prints each instruction through three levels of
methods (``__str__`` with its string cache, ``_to_string``, ``descr`` into a list buffer,
``str.format``), and asks each instruction for its (empty) metadata string. ``module_text``
walks the same objects and writes each instruction of the classes the lowering builds with
one f-string, using llvmlite's own value references and type spellings; any other instruction,
one with metadata (a loop's ``llvm.loop``), and everything outside function bodies (named
types, globals, prototypes, metadata nodes) is printed by llvmlite itself. The text is the
same, so the PTX is too (``tests/backend/test_llvm_text.py`` compares both over every op
family and the FlashAttention kernels).

The attributes read are llvmlite 0.50's (``opname``, ``flags``, ``operands``, ``indices``,
``align``, ...), so the fast path is used only for the llvmlite releases it was checked on
(``llvm_c.CHECKED``); with any other, ``module_text`` is ``str(module)``.
"""
from __future__ import annotations

from llvmlite import ir
from llvmlite.ir import instructions as _ins
from llvmlite.ir import values as _val

from .llvm_c import llvmlite_version, CHECKED

__all__ = ["module_text", "instruction_text", "FAST"]


class _FunctionPrinter:
    """Prints the instructions of one function. ``refs`` / ``typed`` map ``id(value)`` to the
    value's reference (``%".7"``) and to its type and reference (``float %".7"``), filled as
    each instruction is printed (a later operand use is then a dict hit, not two llvmlite
    method calls) and on first use of anything else (arguments, constants, globals, a phi's
    value from a later block). The values are the module's, alive while it is printed."""

    def __init__(self):
        self.refs: dict = {}
        self.typed: dict = {}

    def ref(self, v) -> str:
        r = self.refs.get(id(v))
        if r is None:
            r = self.refs[id(v)] = v.get_reference()
        return r

    def typed_ref(self, v) -> str:
        r = self.typed.get(id(v))
        if r is None:
            r = self.typed[id(v)] = f"{v.type} {self.ref(v)}"
        return r

    def instruction(self, i) -> str:
        """``str(i)`` for llvmlite instruction ``i`` (``%name = op ...``, no newline)."""
        fast = _FAST.get(type(i))
        if fast is None or i.metadata:
            return str(i)
        text = fast(self, i)
        if not isinstance(i.type, ir.VoidType):
            r = self.refs[id(i)] = _named_reference(i)
            self.typed[id(i)] = f"{i.type} {r}"
            text = f"{r} = {text}"
        return text.rstrip()

    def function(self, fn) -> str:
        """``str(fn)`` for a function with a body."""
        refs = self.refs
        for v in fn.args:
            refs[id(v)] = _named_reference(v)
        for block in fn.blocks:
            refs[id(block)] = _named_reference(block)
        buf = [_prototype(fn, self), "{\n"]
        for block in fn.blocks:
            buf.append(f"{block._format_name()}:\n")
            buf += [f"  {self.instruction(i)}\n" for i in block.instructions]
        buf.append("}\n")
        return "".join(buf)

    # -- one method per instruction class: its text after "%name = ", without metadata, as
    # llvmlite 0.50's descr writes it (trailing blanks included: ``instruction`` strips them)
    def generic(self, i):
        opname = i.opname
        if i.flags:
            opname = " ".join([opname] + i.flags)
        return f"{opname} {i.type} {', '.join([self.ref(o) for o in i.operands])}"

    def cast(self, i):
        return f"{i.opname} {self.typed_ref(i.operands[0])} to {i.type}"

    def call(self, i):
        callee, *args = i.operands
        fnty = callee.function_type
        typed = self.typed_ref
        if i.arg_attributes:
            attrs = i.arg_attributes
            text = ", ".join([f"{a.type} {' '.join(attrs[n]._to_list(a.type))} {self.ref(a)}"
                              if n in attrs else typed(a) for n, a in enumerate(args)])
        else:
            text = ", ".join([typed(a) for a in args])
        if type(callee) is _ins.InlineAsm:
            side_effect = "sideeffect" if callee.side_effect else ""
            name = f'asm {side_effect} "{callee.asm}", "{callee.constraint}"'
        else:
            name = self.ref(callee)
        head = f"{fnty if fnty.var_arg else fnty.return_type} {name}"
        if i.cconv:
            head = f"{i.cconv} {head}"
        tail = f"{i.tail} " if i.tail else ""
        fastmath = " " + " ".join(i.fastmath._to_list(fnty.return_type)) if i.fastmath else ""
        fn_attrs = " " + " ".join(i.attributes._to_list(fnty.return_type)) if i.attributes else ""
        return f"{tail}call{fastmath} {head}({text}){fn_attrs}"

    def typed_operands(self, i):
        return f"{i.opname} {', '.join([self.typed_ref(o) for o in i.operands])}"

    def extract_value(self, i):
        return (f"extractvalue {self.typed_ref(i.aggregate)}, "
                f"{', '.join([str(n) for n in i.indices])}")

    def insert_value(self, i):
        return (f"insertvalue {self.typed_ref(i.aggregate)}, {self.typed_ref(i.value)}, "
                f"{', '.join([str(n) for n in i.indices])}")

    def gep(self, i):
        op = "getelementptr inbounds" if i.inbounds else "getelementptr"
        indices = ", ".join([self.typed_ref(n) for n in i.indices])
        return f"{op} {i.source_etype}, {self.typed_ref(i.pointer)}, {indices}"

    def load(self, i):
        align = "" if i.align is None else f", align {i.align:d}"
        return f"load {i.type}, {self.typed_ref(i.operands[0])}{align}"

    def store(self, i):
        v, p = i.operands
        align = "" if i.align is None else f", align {i.align:d}"
        return f"store {self.typed_ref(v)}, {self.typed_ref(p)}{align}"

    def phi(self, i):
        ref = self.ref
        incoming = ", ".join([f"[{ref(v)}, {ref(b)}]" for v, b in i.incomings])
        return f"phi {' '.join(i.flags)} {i.type} {incoming}"

    def terminator(self, i):
        return f"{i.opname} {', '.join([self.typed_ref(o) for o in i.operands])}"

    def ret(self, i):
        v = i.return_value
        return i.opname if v is None else f"{i.opname} {self.typed_ref(v)}"

    def select(self, i):
        c, a, b = i.operands
        typed = self.typed_ref
        return f"select {' '.join(i.flags)} {typed(c)}, {typed(a)}, {typed(b)}"

    def compare(self, i):
        a, b = i.operands
        flags = "".join([" " + f for f in i.flags])
        return f"{i.opname}{flags} {i.op} {self.typed_ref(a)}, {self.ref(b)}"

    def alloca(self, i):
        text = f"{i.opname} {i.allocated_type}"
        if i.operands:
            text += f", {self.typed_ref(i.operands[0])}"
        if i.align is not None:
            text += f", align {i.align}"
        return text


def _named_reference(v) -> str:
    """llvmlite's ``NamedValue._get_reference`` (``%"name"``, quotes and backslashes
    escaped), without its cache: the printer's own holds it."""
    name = v.name
    if "\\" in name or '"' in name:
        name = name.replace("\\", "\\5c").replace('"', "\\22")
    return f'{v.name_prefix}"{name}"'


def _prototype(fn, printer) -> str:
    """llvmlite's ``Function.descr_prototype`` of a function with a body (``define ...``),
    its arguments' references from ``printer``."""
    args = []
    for a in fn.args:
        attrs = a.attributes._to_list(a.type)
        args.append(f"{a.type} {' '.join(attrs)} {printer.ref(a)}" if attrs
                    else printer.typed_ref(a))
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
    return (f"{prefix} {printer.ref(fn)}({', '.join(args)}{vararg}){attrs}{section}"
            f"{metadata}\n")


_P = _FunctionPrinter
_FAST = {
    _ins.Instruction: _P.generic, _ins.CastInstr: _P.cast, _ins.CallInstr: _P.call,
    _ins.ExtractElement: _P.typed_operands, _ins.InsertElement: _P.typed_operands,
    _ins.ExtractValue: _P.extract_value, _ins.InsertValue: _P.insert_value, _ins.GEPInstr: _P.gep,
    _ins.LoadInstr: _P.load, _ins.StoreInstr: _P.store, _ins.PhiInstr: _P.phi,
    _ins.Branch: _P.terminator, _ins.ConditionalBranch: _P.terminator, _ins.Ret: _P.ret,
    _ins.SelectInstr: _P.select, _ins.ICMPInstr: _P.compare, _ins.FCMPInstr: _P.compare,
    _ins.AllocaInstr: _P.alloca,
}
"""Instruction class (exactly; not its subclasses, which print otherwise) -> the printer's
method for it; any other class is printed by llvmlite."""

FAST = frozenset(_FAST)
"""The instruction classes ``module_text`` prints itself."""


def instruction_text(i) -> str:
    """``str(i)`` for llvmlite instruction ``i`` (``%name = op ...``, no newline)."""
    return _FunctionPrinter().instruction(i)


def _checked() -> bool:
    version = llvmlite_version()
    return version is not None and ".".join(version.split(".")[:2]) in CHECKED


_CHECKED = _checked()


def module_text(module: ir.Module) -> str:
    """``str(module)``: the LLVM IR text of llvmlite module ``module``, byte for byte."""
    if not _CHECKED:
        return str(module)
    lines = [f'; ModuleID = "{module.name}"', f'target triple = "{module.triple}"',
             f'target datalayout = "{module.data_layout}"', ""]
    lines += [t.get_declaration() for t in module.get_identified_types().values()]
    lines += [_FunctionPrinter().function(v) if type(v) is _val.Function and v.blocks
              else str(v)
              for v in module.globals.values()]
    for name, node in module.namedmetadata.items():
        operands = ", ".join(o.get_reference() for o in node.operands)
        lines.append(f"!{name} = !{{ {operands} }}")
    lines += [str(md) for md in module.metadata]
    return "\n".join(lines)
