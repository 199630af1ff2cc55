"""nvvm.sreg (special registers), gpu.printf, gpu.trap."""
from __future__ import annotations

import re
import sys

import numpy as np

from ..errors import SimulatorError, UnsupportedError
from ..ir.core import Operation
from .compiler import where
from .dtypes import python_value, register_dtype
from .registry import handler

__all__ = ["parse_format", "format_lane"]


@handler("nvvm.sreg")
def _sreg(op: Operation, cx):
    r = cx.slot(op.result)
    reg = op.attrs["reg"]
    dtype = register_dtype(op.result.type)

    def sreg(s, w):
        v = w.sreg(reg)
        s[r] = v if v.dtype == dtype else v.astype(dtype)
    return sreg


# -- printf -----------------------------------------------------------------------------------
_SPEC = re.compile(r"%(?P<flags>[-+ #0]*)(?P<width>\d+)?(?:\.(?P<prec>\d+))?"
                   r"(?P<len>hh|h|ll|l|j|z|t)?(?P<conv>[diouxXeEfFgGcsp%])")
_WIDE = ("l", "ll", "j", "z", "t")


def parse_format(fmt: str, nargs: int, op: Operation) -> list:
    """Split a C format into literal strings and (python_spec, conv, bits) conversions."""
    pieces: list = []
    pos = 0
    count = 0
    for m in _SPEC.finditer(fmt):
        pieces.append(fmt[pos:m.start()])
        pos = m.end()
        if m["conv"] == "%":
            pieces.append("%")
            continue
        conv = m["conv"]
        spec = "%" + m["flags"] + (m["width"] or "") + ("." + m["prec"] if m["prec"] else "")
        bits = 64 if m["len"] in _WIDE else 32
        if conv in "up":
            spec += "d" if conv == "u" else "s"
        else:
            spec += conv
        pieces.append((spec, conv, bits))
        count += 1
    rest = fmt[pos:]
    if "%" in rest:
        raise UnsupportedError(f"printf at {where(op)}: unsupported conversion in "
                               f"{rest[rest.index('%'):]!r}; the simulator supports "
                               "%d %i %u %o %x %X %e %f %g %c %s %p with flags, width, precision "
                               "and l/ll/h/z length modifiers", where=where(op))
    pieces.append(rest)
    if count != nargs:
        raise SimulatorError(f"printf at {where(op)}: the format has {count} conversions but "
                             f"{nargs} arguments were passed", where=where(op))
    return pieces


def _convert(value, conv: str, bits: int):
    if conv in "di":
        v = int(value) & ((1 << bits) - 1)
        return v - (1 << bits) if v >> (bits - 1) else v
    if conv in "uoxX":
        return int(value) & ((1 << bits) - 1)
    if conv in "eEfFgG":
        return float(value)
    if conv == "c":
        return chr(int(value) & 0xFF)
    if conv == "p":
        return f"0x{int(value) & 0xFFFFFFFFFFFFFFFF:x}"
    return str(value)


def format_lane(pieces: list, values: list) -> str:
    out = []
    it = iter(values)
    for p in pieces:
        if isinstance(p, str):
            out.append(p)
        else:
            spec, conv, bits = p
            out.append(spec % _convert(next(it), conv, bits))
    return "".join(out)


@handler("gpu.printf")
def _printf(op: Operation, cx):
    args = cx.slots(op.operands)
    types = [v.type for v in op.operands]
    pieces = parse_format(op.attrs["format"], len(args), op)

    def printf(s, w):
        regs = [s[a] for a in args]
        cta = w.cta
        w.last_print = last = {}
        for lane in np.flatnonzero(w.mask).tolist():
            text = format_lane(pieces, [python_value(t, r[lane]) for t, r in zip(types, regs)])
            last[lane] = text
            cta.printed.append(text)
            if cta.echo:
                (sys.stdout if cta.echo is True else cta.echo).write(text)
    return printf


@handler("gpu.trap")
def _trap(op: Operation, cx):
    def trap(s, w):
        lane = w.first_active_lane()
        who = w.describe_lane(lane) if lane is not None else f"warp {w.index}"
        said = (w.last_print or {}).get(lane)      # a failed device assert printed its line
        said = f"; its last printf: {said.strip()}" if said and said.strip() else ""
        raise SimulatorError(f"kernel trapped at {where(op)}, {who}{said}", where=where(op))
    return trap
