"""What users see of an error raised while compiling or launching a kernel: its traceback without
warpstage's own frames (``_user_error``) and the ``warnings.warn`` stacklevel of the user's line
(``_user_stacklevel``). Frames count as warpstage's when their file is under this package's
folder.
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
    return e.with_traceback(head)
