"""Function bodies as LLVM IR text: the part of ``llvmlite.ir``'s ``IRBuilder`` API the lowering
uses, writing each instruction's line as it is built.

Building ``llvmlite.ir`` instruction objects and printing them was the ``lower`` stage: for the
default wgmma FlashAttention (~7,000 instructions at D=64, ~9,000 at D=128) ~5 µs per
instruction to build (the object, its operand checks, its name) and ~6 µs to print
(``str(module)``: three levels of methods per instruction, ``str.format``, the empty metadata
asked for). Here an instruction is one f-string of its operands' references, appended to its
block's list; the value it defines is a ``Value`` (type and reference). Everything else stays
``llvmlite.ir``: the module, types, constants, globals, function declarations and their
arguments, inline asm callees, metadata nodes (``llvm_text.module_text`` prints the module with
these bodies in place).

The text is what llvmlite writes for the same calls, byte for byte: the same value and block
names (``_Names``: llvmlite's naming rule, continuing after the function's arguments, in the
same order: every instruction takes a name, ``.N``, as llvmlite's do), the same spacing
(``phi  i32``, ``select  i1``, ``asm  "..."`` where llvmlite leaves a field empty). ``tests/backend/
test_llvm_builder.py`` drives both builders with the same calls, and every backend test lowers
its kernel both ways (``lower.lower_module(..., reference=True)`` is llvmlite's path) and
compares. Unlike llvmlite's, these methods do not check operand types: a rule that mixes them
gets LLVM's parser error at ``emit_ptx`` (the rules' tests emit PTX).
"""
from __future__ import annotations

import re

from llvmlite import ir

__all__ = ["Value", "Block", "Body", "Builder"]

_SIMPLE_NAME = re.compile(r"[-a-zA-Z$._][-a-zA-Z$._0-9]*$")
"""A label LLVM reads unquoted."""

_CMP = {">": "gt", "<": "lt", "==": "eq", "!=": "ne", ">=": "ge", "<=": "le"}
"""llvmlite's comparison spellings -> LLVM's predicate stems."""


def _escaped(name: str) -> str:
    """``name`` inside LLVM's quotes: quotes and backslashes escaped."""
    if "\\" in name or '"' in name:
        name = name.replace("\\", "\\5c").replace('"', "\\22")
    return name


def _typed(v) -> str:
    """``type reference`` of an operand: one of ours, or any llvmlite value."""
    if isinstance(v, Value):
        return v.typed
    return f"{v.type} {v.get_reference()}"


def _ref(v) -> str:
    return v.ref if isinstance(v, Value) else v.get_reference()


class _Names:
    """The names of one function's blocks and values, given as llvmlite's name scope gives
    them: a name already taken gets the next ``name.K`` free (K counted per base name), an
    unnamed value the next free ``.K``. Starts with the names llvmlite gave when it declared the
    function: its arguments' and its return value's (``.1`` ... ``.n+1``), so the first block
    or value named here follows them."""

    def __init__(self, taken):
        self.used = {"", *taken}
        self.counts: dict = {}

    def name(self, base: str) -> str:
        """``base``, or ``base.K`` with the next free K."""
        name, used = base, self.used
        while name in used:
            k = self.counts[base] = self.counts.get(base, 0) + 1
            name = f"{base}.{k}"
        used.add(name)
        return name

    def unnamed(self) -> str:
        """The reference of the next unnamed value, ``%".K"`` (no quoting needed)."""
        used, k = self.used, self.counts.get("", 0)
        while True:
            k += 1
            name = f".{k}"
            if name not in used:
                break
        self.counts[""] = k
        used.add(name)
        return f'%"{name}"'


class Value:
    """The result of an instruction: ``type`` (an llvmlite type) and its reference ``%".N"``."""

    __slots__ = ("type", "ref", "typed")

    def __init__(self, type, ref: str):
        self.type = type
        self.ref = ref
        self.typed = f"{type} {ref}"

    def get_reference(self) -> str:
        return self.ref


class _Alloca(Value):
    """A stack slot: a load from it without a type loads ``allocated_type``."""

    __slots__ = ("allocated_type",)


class _Phi(Value):
    """A phi whose incoming pairs are added after it is built (``add_incoming``)."""

    __slots__ = ("flags", "incoming")

    def add_incoming(self, value, block: "Block") -> None:
        self.incoming.append((value, block))

    def text(self) -> str:
        pairs = ", ".join([f"[{_ref(v)}, {b.ref}]" for v, b in self.incoming])
        return f"{self.ref} = phi {' '.join(self.flags)} {self.type} {pairs}".rstrip()


class _Terminator:
    """A branch or return: ``set_metadata`` (a loop's ``llvm.loop``) may follow it."""

    __slots__ = ("line", "metadata")

    def __init__(self, line: str):
        self.line = line
        self.metadata: dict = {}

    def set_metadata(self, name: str, node) -> None:
        self.metadata[name] = node

    def text(self) -> str:
        return self.line + "".join(f", !{k} {v.get_reference()}"
                                   for k, v in self.metadata.items())


class Block:
    """A basic block: ``name`` (unique in its function), ``ref`` (``%"name"``), ``lines`` (text,
    or a phi or terminator written when the body is printed)."""

    __slots__ = ("name", "ref", "lines", "names")

    def __init__(self, names: _Names, name: str):
        self.names = names
        self.name = names.name(name)
        self.ref = f'%"{_escaped(self.name)}"'
        self.lines: list = []

    def get_reference(self) -> str:
        return self.ref

    def label(self) -> str:
        return f"{self.name}:" if _SIMPLE_NAME.match(self.name) else f'"{_escaped(self.name)}":'


class Body:
    """The blocks of llvmlite function ``function`` (declared, so its arguments are named),
    built by ``Builder``; stands where the lowering used the llvmlite function (``args``,
    ``ftype``, ``append_basic_block``, ``entry_basic_block``)."""

    def __init__(self, function: ir.Function):
        self.function = function
        self.args = function.args
        self.ftype = function.ftype
        self.blocks: list[Block] = []
        self.names = _Names([a.name for a in function.args] + [function.return_value.name])

    def append_basic_block(self, name: str = "") -> Block:
        block = Block(self.names, name)
        self.blocks.append(block)
        return block

    @property
    def entry_basic_block(self) -> Block:
        return self.blocks[0]

    def text(self) -> str:
        """The body, ``{`` to ``}``, as llvmlite prints a defined function's blocks."""
        out = ["{\n"]
        for block in self.blocks:
            out.append(block.label() + "\n")
            out += [f"  {line if type(line) is str else line.text()}\n" for line in block.lines]
        out.append("}\n")
        return "".join(out)


class Builder:
    """Appends instructions at the end of ``block`` (``position_at_end``); each method is
    llvmlite's ``IRBuilder`` method of the same name and arguments but ``name`` (the lowering
    names no value: each is ``%".N"``), returning a ``Value`` (for a terminator, the object
    ``set_metadata`` takes)."""

    def __init__(self, block: Block | None = None):
        self.block = block

    def position_at_end(self, block: Block) -> None:
        self.block = block

    # -- writing one line --------------------------------------------------------------------------
    def _name(self) -> str:
        return self.block.names.unnamed()

    def _value(self, type, text: str, cls=Value) -> Value:
        """``%".N" = text``, of type ``type``."""
        v = cls(type, self._name())
        self.block.lines.append(f"{v.ref} = {text}".rstrip())
        return v

    def _void(self, text: str) -> Value:
        v = Value(ir.VoidType(), self._name())      # llvmlite names void instructions too
        self.block.lines.append(text.rstrip())
        return v

    def _terminate(self, text: str) -> _Terminator:
        self._name()
        term = _Terminator(text)
        self.block.lines.append(term)
        return term

    # -- arithmetic: name = lhs op rhs ----------------------------------------------------------
    def _binary(self, opname, lhs, rhs, flags=()):
        if flags:
            opname = " ".join([opname, *flags])
        return self._value(lhs.type, f"{opname} {lhs.type} {_ref(lhs)}, {_ref(rhs)}")

    def add(self, lhs, rhs, flags=()):
        return self._binary("add", lhs, rhs, flags)

    def sub(self, lhs, rhs, flags=()):
        return self._binary("sub", lhs, rhs, flags)

    def mul(self, lhs, rhs, flags=()):
        return self._binary("mul", lhs, rhs, flags)

    def sdiv(self, lhs, rhs, flags=()):
        return self._binary("sdiv", lhs, rhs, flags)

    def udiv(self, lhs, rhs, flags=()):
        return self._binary("udiv", lhs, rhs, flags)

    def srem(self, lhs, rhs, flags=()):
        return self._binary("srem", lhs, rhs, flags)

    def urem(self, lhs, rhs, flags=()):
        return self._binary("urem", lhs, rhs, flags)

    def and_(self, lhs, rhs, flags=()):
        return self._binary("and", lhs, rhs, flags)

    def or_(self, lhs, rhs, flags=()):
        return self._binary("or", lhs, rhs, flags)

    def xor(self, lhs, rhs, flags=()):
        return self._binary("xor", lhs, rhs, flags)

    def shl(self, lhs, rhs, flags=()):
        return self._binary("shl", lhs, rhs, flags)

    def lshr(self, lhs, rhs, flags=()):
        return self._binary("lshr", lhs, rhs, flags)

    def ashr(self, lhs, rhs, flags=()):
        return self._binary("ashr", lhs, rhs, flags)

    def fadd(self, lhs, rhs, flags=()):
        return self._binary("fadd", lhs, rhs, flags)

    def fsub(self, lhs, rhs, flags=()):
        return self._binary("fsub", lhs, rhs, flags)

    def fmul(self, lhs, rhs, flags=()):
        return self._binary("fmul", lhs, rhs, flags)

    def fdiv(self, lhs, rhs, flags=()):
        return self._binary("fdiv", lhs, rhs, flags)

    def not_(self, value):
        """name = ~value (``xor`` with all ones)."""
        ones = (ir.Constant(value.type, (-1,) * value.type.count)
                if isinstance(value.type, ir.VectorType) else ir.Constant(value.type, -1))
        return self.xor(value, ones)

    def neg(self, value):
        """name = 0 - value."""
        return self.sub(ir.Constant(value.type, 0), value)

    def fneg(self, value, flags=()):
        opname = " ".join(["fneg", *flags]) if flags else "fneg"
        return self._value(value.type, f"{opname} {value.type} {_ref(value)}")

    # -- casts: name = (typ) value ---------------------------------------------------------------
    def _cast(self, opname, value, typ):
        return self._value(typ, f"{opname} {_typed(value)} to {typ}")

    def trunc(self, value, typ):
        return self._cast("trunc", value, typ)

    def zext(self, value, typ):
        return self._cast("zext", value, typ)

    def sext(self, value, typ):
        return self._cast("sext", value, typ)

    def fptrunc(self, value, typ):
        return self._cast("fptrunc", value, typ)

    def fpext(self, value, typ):
        return self._cast("fpext", value, typ)

    def bitcast(self, value, typ):
        return self._cast("bitcast", value, typ)

    def addrspacecast(self, value, typ):
        return self._cast("addrspacecast", value, typ)

    def fptoui(self, value, typ):
        return self._cast("fptoui", value, typ)

    def uitofp(self, value, typ):
        return self._cast("uitofp", value, typ)

    def fptosi(self, value, typ):
        return self._cast("fptosi", value, typ)

    def sitofp(self, value, typ):
        return self._cast("sitofp", value, typ)

    def ptrtoint(self, value, typ):
        return self._cast("ptrtoint", value, typ)

    def inttoptr(self, value, typ):
        return self._cast("inttoptr", value, typ)

    # -- comparisons and select ------------------------------------------------------------------
    def _compare(self, opname, predicate, lhs, rhs, flags=()):
        t = lhs.type
        result = ir.VectorType(ir.IntType(1), t.count) if isinstance(t, ir.VectorType) \
            else ir.IntType(1)
        flag_text = "".join([" " + f for f in flags])
        return self._value(result, f"{opname}{flag_text} {predicate} {_typed(lhs)}, {_ref(rhs)}")

    def icmp_signed(self, cmpop, lhs, rhs):
        """name = lhs cmpop rhs, signed ('==', '!=', '<', '<=', '>', '>=')."""
        return self._compare("icmp", _CMP[cmpop] if cmpop in ("==", "!=")
                             else "s" + _CMP[cmpop], lhs, rhs)

    def icmp_unsigned(self, cmpop, lhs, rhs):
        """name = lhs cmpop rhs, unsigned (or pointers)."""
        return self._compare("icmp", _CMP[cmpop] if cmpop in ("==", "!=")
                             else "u" + _CMP[cmpop], lhs, rhs)

    def fcmp_ordered(self, cmpop, lhs, rhs, flags=()):
        """name = lhs cmpop rhs, false where either is NaN ('ord', 'uno' as they are)."""
        return self._compare("fcmp", "o" + _CMP[cmpop] if cmpop in _CMP else cmpop, lhs, rhs,
                             flags)

    def fcmp_unordered(self, cmpop, lhs, rhs, flags=()):
        """name = lhs cmpop rhs, true where either is NaN."""
        return self._compare("fcmp", "u" + _CMP[cmpop] if cmpop in _CMP else cmpop, lhs, rhs,
                             flags)

    def select(self, cond, lhs, rhs, flags=()):
        """name = cond ? lhs : rhs."""
        return self._value(lhs.type, f"select {' '.join(flags)} {_typed(cond)}, {_typed(lhs)}, "
                                     f"{_typed(rhs)}")

    # -- memory ------------------------------------------------------------------------------------
    def alloca(self, typ, size=None):
        """A stack slot of ``typ`` (a typed pointer to it, as llvmlite's)."""
        text = f"alloca {typ}"
        if size is not None:
            if not isinstance(size, (ir.Value, Value)):
                size = ir.Constant(ir.IntType(32), size)
            text += f", {_typed(size)}"
        slot = self._value(typ.as_pointer(), text, _Alloca)
        slot.allocated_type = typ
        return slot

    def load(self, ptr, align=None, typ=None):
        """name = *ptr, of type ``typ`` (default: the slot's or the typed pointer's)."""
        if typ is None:
            typ = ptr.allocated_type if isinstance(ptr, _Alloca) else ptr.type.pointee
        align = "" if align is None else f", align {align:d}"
        return self._value(typ, f"load {typ}, {_typed(ptr)}{align}")

    def store(self, value, ptr, align=None):
        """*ptr = value."""
        align = "" if align is None else f", align {align:d}"
        return self._void(f"store {_typed(value)}, {_typed(ptr)}{align}")

    def gep(self, ptr, indices, inbounds=False, source_etype=None):
        """name = the address of ``ptr[indices[0]][indices[1]]...`` (getelementptr). Without
        ``source_etype``, ``ptr`` is a typed pointer: the result points to the element indexed,
        in the address space of the last pointer indexed through (one index: ``ptr``'s type)."""
        if source_etype is not None:
            result = ptr.type
        else:
            source_etype = ptr.type.pointee
            t, last, space = ptr.type, None, 0
            for i in indices:
                last, t = t, t.gep(i)
                if isinstance(last, ir.PointerType):
                    space = last.addrspace
            result = last if (not isinstance(t, ir.PointerType)
                              and isinstance(last, ir.PointerType)) else t.as_pointer(space)
        op = "getelementptr inbounds" if inbounds else "getelementptr"
        index_text = ", ".join([_typed(i) for i in indices])
        return self._value(result, f"{op} {source_etype}, {_typed(ptr)}, {index_text}")

    def atomic_rmw(self, op, ptr, val, ordering):
        """name = *ptr; *ptr = *ptr op val, atomically."""
        return self._value(val.type, f"atomicrmw {op} {_typed(ptr)}, {_typed(val)} {ordering}")

    def cmpxchg(self, ptr, cmp, val, ordering, failordering=None):
        """name = {old *ptr, old == cmp}; *ptr = val where equal, atomically."""
        failordering = ordering if failordering is None else failordering
        t = ir.LiteralStructType([val.type, ir.IntType(1)])
        return self._value(t, f"cmpxchg {_typed(ptr)}, {_typed(cmp)}, {cmp.type} {_ref(val)} "
                              f"{ordering} {failordering}")

    # -- vectors and aggregates ---------------------------------------------------------------
    def extract_element(self, vector, idx):
        """name = vector[idx]."""
        return self._value(vector.type.element,
                           f"extractelement {_typed(vector)}, {_typed(idx)}")

    def insert_element(self, vector, value, idx):
        """name = vector with [idx] = value."""
        return self._value(vector.type, f"insertelement {_typed(vector)}, {_typed(value)}, "
                                        f"{_typed(idx)}")

    def extract_value(self, agg, idx):
        """name = agg.idx (an index or a list of them)."""
        indices = idx if isinstance(idx, (tuple, list)) else [idx]
        t = agg.type
        for i in indices:
            t = t.elements[i]
        return self._value(t, f"extractvalue {_typed(agg)}, "
                              f"{', '.join([str(i) for i in indices])}")

    def insert_value(self, agg, value, idx):
        """name = agg with .idx = value."""
        indices = idx if isinstance(idx, (tuple, list)) else [idx]
        return self._value(agg.type, f"insertvalue {_typed(agg)}, {_typed(value)}, "
                                     f"{', '.join([str(i) for i in indices])}")

    # -- control flow ------------------------------------------------------------------------------
    def phi(self, typ, flags=()):
        """name = the value from the predecessor taken (``add_incoming`` on the result)."""
        v = _Phi(typ, self._name())
        v.flags, v.incoming = flags, []
        self.block.lines.append(v)
        return v

    def branch(self, target: Block) -> _Terminator:
        return self._terminate(f"br label {target.ref}")

    def cbranch(self, cond, truebr: Block, falsebr: Block) -> _Terminator:
        return self._terminate(f"br {_typed(cond)}, label {truebr.ref}, label {falsebr.ref}")

    def ret(self, value) -> _Terminator:
        return self._terminate(f"ret {_typed(value)}")

    def ret_void(self) -> _Terminator:
        return self._terminate("ret void")

    # -- calls -------------------------------------------------------------------------------------
    def call(self, fn, args, cconv=None, tail=False, fastmath=(), attrs=(),
             arg_attrs=None):
        """name = fn(*args): ``fn`` an llvmlite function or ``ir.InlineAsm``. ``attrs``
        (function attributes of the call) and ``arg_attrs`` are not used by the lowering."""
        if attrs or arg_attrs:
            raise NotImplementedError("call attributes: not used by the lowering")
        fnty = fn.function_type
        if cconv is None:
            cconv = fn.calling_convention if isinstance(fn, ir.Function) else None
        if isinstance(fn, ir.InlineAsm):
            side_effect = "sideeffect" if fn.side_effect else ""
            callee = f'asm {side_effect} "{fn.asm}", "{fn.constraint}"'
        else:
            callee = fn.get_reference()
        head = f"{fnty if fnty.var_arg else fnty.return_type} {callee}"
        if cconv:
            head = f"{cconv} {head}"
        if tail is True or (tail and tail not in ("tail", "musttail", "notail")):
            tail = "tail"
        prefix = f"{tail} " if tail else ""
        flags = " " + " ".join(sorted(set(fastmath))) if fastmath else ""
        text = f"{prefix}call{flags} {head}({', '.join([_typed(a) for a in args])})"
        if isinstance(fnty.return_type, ir.VoidType):
            return self._void(text)
        return self._value(fnty.return_type, text)

    def asm(self, ftype, asm, constraint, args, side_effect):
        """name = the inline PTX ``asm`` with ``constraint`` on ``args`` (``ftype``)."""
        return self.call(ir.InlineAsm(ftype, asm, constraint, side_effect), args)
