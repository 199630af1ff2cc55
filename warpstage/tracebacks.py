"""What users see of an error raised while compiling or launching a kernel: its traceback without
warpstage's own frames (``_user_error``), the ``warnings.warn`` stacklevel of the user's line
(``_user_stacklevel``), and a TMA descriptor attribute read from a plain tensor reworded as the
mix-up it is (``_descriptor_attribute_error``). Frames count as warpstage's when their file is
under this package's folder.
"""
from __future__ import annotations


def _user_stacklevel() -> int:
    """The ``warnings.warn`` stacklevel of the first caller outside warpstage (the user's line)."""
    import os
    import sys
    pkg = os.path.dirname(os.path.abspath(__file__))
    f, level = sys._getframe(1), 1
    while f is not None and os.path.abspath(f.f_code.co_filename).startswith(pkg):
        f, level = f.f_back, level + 1
    return level


def _user_error(e: Exception) -> Exception:
    """``e`` with warpstage's own frames removed from its traceback (users see their lines).

    The control-flow rewrite runs each ``if``/loop body of a kernel as a nested function (named
    like the kernel, frontend/rewrite.py); the frame that called it, through warpstage, only
    repeats the statement's position, so it is dropped and the body's frame shows the line."""
    import os
    from .frontend.rewrite import is_region_code
    pkg = os.path.dirname(os.path.abspath(__file__))
    tb = e.__traceback__
    frames = []
    while tb is not None:
        if not os.path.abspath(tb.tb_frame.f_code.co_filename).startswith(pkg):
            if frames and is_region_code(tb.tb_frame.f_code) and \
                    tb.tb_frame.f_code in frames[-1].tb_frame.f_code.co_consts:
                frames.pop()                            # the region's call site
            frames.append(tb)
        tb = tb.tb_next
    head = None
    for t in reversed(frames):
        t.tb_next = head
        head = t
    e = _descriptor_attribute_error(e, frames[-1] if frames else None)
    return e.with_traceback(head)


_DESCRIPTOR_ATTRS = frozenset(("smem_bytes", "smem_shape", "box", "element_strides", "oob_fill",
                               "l2_promotion", "map"))


def _descriptor_attribute_error(e: Exception, tb) -> Exception:
    """An AttributeError for a TMA descriptor's attribute (``desc.smem_bytes``) read from a
    tensor, pointer or scalar (a plain array passed where the kernel expects a
    ``ws.tma.TensorDescriptor``) as an OperandError naming the mix-up; other errors unchanged."""
    attr = getattr(e, "name", None) if isinstance(e, AttributeError) else None
    if attr not in _DESCRIPTOR_ATTRS or tb is None:
        return e
    from .errors import OperandError
    from .frontend.source import format_location
    from .ir.core import Location
    from .lang.pointer import Pointer
    from .lang.scalars import Scalar
    from .lang.tensor import Tensor
    from .lang.tma import describe_operand
    obj = getattr(e, "obj", None)
    if not isinstance(obj, (Tensor, Pointer, Scalar)):
        return e
    frame = tb.tb_frame
    names = [n for n, v in frame.f_locals.items() if v is obj and not n.startswith("__ws_")]
    loc = Location(frame.f_code.co_filename, tb.tb_lineno, 0)
    return OperandError(
        f"{names[0] + '.' if names else ''}{attr}: expected a ws.tma.TensorDescriptor (passed as "
        f"a kernel argument), got {describe_operand(obj)}, which has no '{attr}'.\n"
        f"{format_location(loc)}\nFix: build the descriptor on the host, "
        "ws.tma.TensorDescriptor(x, box=(rows, cols)), and pass it instead of the tensor; "
        "ws.tma.load/store copy box-shaped tiles of x through it.", where=str(loc))
