"""Source positions of kernel code, for IR locations and error excerpts.

Traced user code is registered here by code object; ``user_location()`` walks the Python stack to
the innermost registered frame, so every op and every error points at the kernel author's line,
never at warpstage's own.
"""
from __future__ import annotations

import linecache
import os
import sys
from typing import Optional

from ..ir.core import Location

__all__ = ["register_user_code", "is_kernel_code", "is_library_file", "user_frame",
           "user_location", "excerpt", "format_location"]

_USER_CODE: dict = {}
"""id(code) -> {line: Location} for each registered code object; looked up by id because a code
object's own hash is computed from its bytecode, names and constants on every call, and the
stack walk below asks once per frame for every op traced. ``_KEEP`` holds the code objects, so
that their ids stay theirs."""
_KEEP: list = []


def register_user_code(code) -> None:
    """Mark ``code`` (and the code objects nested in it) as kernel source."""
    if id(code) not in _USER_CODE:
        _KEEP.append(code)
        _USER_CODE[id(code)] = {}
    for c in code.co_consts:
        if hasattr(c, "co_code"):
            register_user_code(c)


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def is_library_file(filename: str) -> bool:
    """Whether ``filename`` is warpstage's own source (a library kernel such as ``ws.ops``'),
    not the user's."""
    return os.path.abspath(filename).startswith(_PACKAGE)


def is_kernel_code(code) -> bool:
    """Whether ``code`` is registered kernel source (a kernel's or device function's rewritten
    body, or code nested in it): a frame running it is tracing."""
    return id(code) in _USER_CODE


def user_frame(depth: int = 1):
    """The innermost frame on the stack (from ``depth`` frames above the caller) that runs
    registered kernel code, or None."""
    f = sys._getframe(depth + 1)
    codes = _USER_CODE
    while f is not None and id(f.f_code) not in codes:
        f = f.f_back
    return f


def user_location(depth: int = 1) -> Optional[Location]:
    """The innermost frame on the stack that runs registered kernel code, as a Location (one
    shared, immutable Location per code object and line)."""
    f = sys._getframe(depth)
    codes = _USER_CODE
    while f is not None:
        lines = codes.get(id(f.f_code))
        if lines is not None:
            line = f.f_lineno
            loc = lines.get(line)
            if loc is None:
                loc = lines[line] = Location(f.f_code.co_filename, line, 0)
            return loc
        f = f.f_back
    return None


def excerpt(loc: Optional[Location], col: Optional[int] = None) -> str:
    """The source line at ``loc`` with a caret under column ``col`` (or under its first token)."""
    if loc is None:
        return ""
    text = linecache.getline(loc.file, loc.line).rstrip("\n")
    if not text:
        return ""
    stripped = len(text) - len(text.lstrip())
    c = col if col is not None and col >= stripped else stripped
    return f"    {text}\n    {' ' * c}^"


def format_location(loc: Optional[Location], col: Optional[int] = None) -> str:
    """'  File "f.py", line 12\n    source\n    ^' — the header and caret excerpt for an error."""
    if loc is None:
        return ""
    body = excerpt(loc, col)
    return f'  File "{loc.file}", line {loc.line}' + (f"\n{body}" if body else "")
