"""What users see of an error raised by warpstage: its traceback without warpstage's own frames,
and the user's line named in its message (``_user_error``); the ``warnings.warn`` stacklevel of
the user's line (``_user_stacklevel``); and the boundary that applies this to every public entry
(``user_entry``, ``user_entries``); ``attributed_to`` names a position of the user's instead of
the caller's line, for a command that runs the user's requests (``warpstage compile``). Frames
count as warpstage's when their file is under this package's folder (the generated launch path,
``<fast call of k>``, is named inside it).

Every public entry ends in the same ``except`` clause, in the entry's own frame::

    except Exception as e:
        _user_error(e)
        raise

The bare ``raise`` matters: ``raise e`` would add the frame that raises to the traceback again
(Python records a frame each time an exception is raised in it), so the entry's own frame — an
jit/kernel.py line, or the generated fast call — would show between the user's call and the user's
kernel line. A bare ``raise`` re-raises the exception being handled with the traceback it has
now, which ``_user_error`` has just filtered. (JAX's ``traceback_util.api_boundary`` filters the
same way; this also needs no ``from None``: ``_user_error`` suppresses the context itself.)

``WARPSTAGE_DEBUG=1`` (or a kernel's ``debug`` option) keeps every frame, for debugging
warpstage itself.
"""
from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
import inspect
import os
import sys

_PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _in_package(filename: str) -> bool:
    return os.path.abspath(filename).startswith(_PKG)


def _package_frame(frame) -> bool:
    """Whether ``frame`` runs warpstage's code: a file of the package, or ``dataclasses``
    building one of warpstage's classes (``dataclasses.replace``, and the ``__init__`` it
    generates, file ``<string>``, for ``CompileOptions``), or ``functools.cached_property``
    computing an attribute of one of warpstage's objects (``Traced.text``)."""
    code = frame.f_code
    if _in_package(code.co_filename) or code.co_filename == dataclasses.__file__:
        return True
    if code.co_filename == functools.__file__ and code.co_name == "__get__":
        return type(frame.f_locals.get("instance")).__module__.startswith("warpstage.")
    if code.co_filename != "<string>" or not code.co_varnames:
        return False
    owner = frame.f_locals.get(code.co_varnames[0])
    return type(owner).__module__.startswith("warpstage.")


def _user_stacklevel() -> int:
    """The ``warnings.warn`` stacklevel of the first caller outside warpstage (the user's line)."""
    f, level = sys._getframe(1), 1
    while f is not None and _in_package(f.f_code.co_filename):
        f, level = f.f_back, level + 1
    return level


_ATTRIBUTED = contextvars.ContextVar("warpstage_attributed_to", default=None)


@contextlib.contextmanager
def attributed_to(position):
    """Within it, an error with no user frame in its traceback names ``position`` (file, line)
    instead of the caller's line: for a command that runs the user's requests on the user's
    behalf (``warpstage compile`` names the spec function, not its own entry script). None
    changes nothing."""
    token = _ATTRIBUTED.set(position)
    try:
        yield
    finally:
        _ATTRIBUTED.reset(token)


def _caller_position():
    """(file, line) of the first frame outside warpstage on the stack (the user's call), or
    None; inside :func:`attributed_to`, its position."""
    attributed = _ATTRIBUTED.get()
    if attributed is not None:
        return attributed
    f = sys._getframe(1)
    while f is not None and _package_frame(f):
        f = f.f_back
    return None if f is None else (f.f_code.co_filename, f.f_lineno)


def _user_error(e: Exception) -> Exception:
    """``e`` as the user sees it: warpstage's own frames removed from its traceback, its context
    suppressed (as ``raise ... from None`` would), and, for a WarpstageError that names no
    position, the user's line added to its message (before its ``Fix:``) and to ``e.where``:
    the innermost user frame of the traceback, else the user frame that called into warpstage.
    Returns ``e``; re-raise it with
    a bare ``raise`` (the module docstring says why).

    The control-flow rewrite runs each ``if``/loop body of a kernel as a nested function (named
    like the kernel, frontend/rewrite.py); the frame that called it, through warpstage, only
    repeats the statement's position, so it is dropped and the body's frame shows the line."""
    from ..frontend.rewrite import is_region_code
    tb = e.__traceback__
    frames = []
    while tb is not None:
        if not _package_frame(tb.tb_frame):
            if frames and is_region_code(tb.tb_frame.f_code) and \
                    tb.tb_frame.f_code in frames[-1].tb_frame.f_code.co_consts:
                frames.pop()                            # the region's call site
            frames.append(tb)
        tb = tb.tb_next
    head = None
    for t in reversed(frames):
        t.tb_next = head
        head = t
    e.__cause__ = None
    e.__suppress_context__ = True
    if type(e) in (NameError, AttributeError) and frames:
        _explain_name_error(e, frames[-1])
    _name_position(e, (frames[-1].tb_frame.f_code.co_filename, frames[-1].tb_lineno) if frames
                   else _caller_position())
    return e.with_traceback(head)


def _explain_name_error(e, tb) -> None:
    """A NameError or AttributeError raised by traced kernel code (``tb``: its innermost user
    frame) gets the what / where / Fix of every warpstage error in its message: the line, the
    closest names (a typo), and where a kernel's names come from. Python's own says only "name
    'x' is not defined" / "'Scale' object has no attribute 'x'"."""
    from ..core.source import format_location, is_kernel_code
    from ..ir.core import Location
    frame = tb.tb_frame
    if not is_kernel_code(frame.f_code) or len(e.args) != 1 or not isinstance(e.args[0], str) \
            or "Fix:" in e.args[0]:
        return
    import builtins
    import difflib
    name = getattr(e, "name", None)
    if isinstance(e, NameError):
        names = set(frame.f_locals) | set(frame.f_globals) | set(vars(builtins))
        fix = ("define it before this line: a parameter, a local assigned earlier, or a global "
               "/ closure variable of the function's module (read while compiling, as a static "
               "value); or correct its spelling")
    else:
        owner = getattr(e, "obj", None)
        try:
            names = set(dir(owner)) if owner is not None else set()
        except Exception:           # noqa: BLE001 - an object whose dir() fails: no hints
            names = set()
        fix = ("read an attribute the object has (a static object's fields are read while "
               "compiling: set it in __init__), or correct its spelling")
    close = difflib.get_close_matches(name, sorted(n for n in names if isinstance(n, str)),
                                      n=3) if isinstance(name, str) else []
    where = format_location(Location(frame.f_code.co_filename, tb.tb_lineno, 0))
    e.args = (e.args[0] + " in kernel code (a @ws.jit function or kernel, traced while "
              "compiling)" + (f"; did you mean {', '.join(map(repr, close))}?" if close else "")
              + "\n" + (where + "\n" if where else "") + "Fix: " + fix,)


def _name_position(e: Exception, position) -> None:
    """Add ``position`` (file, line) to the message of a WarpstageError that names none."""
    from ..errors import WarpstageError
    if position is None or not isinstance(e, WarpstageError) or e.where is not None \
            or len(e.args) != 1 or not isinstance(e.args[0], str) or '  File "' in e.args[0]:
        return                  # it names its position already (or is not a message)
    from ..core.source import format_location
    from ..ir.core import Location
    loc = Location(*position)
    msg, where = e.args[0], format_location(loc)
    fix = msg.rfind("Fix:")
    e.args = (msg.rstrip() + "\n" + where if fix < 0 else
              msg[:fix].rstrip() + "\n" + where + "\n" + msg[fix:],)
    e.where = str(loc)


def _keep_frames() -> bool:
    from ..options import env_debug
    return env_debug()


def user_entry(fn):
    """``fn`` as a public entry: an error it raises reaches the caller through
    :func:`_user_error` (no warpstage frames; the caller's line in the message). Costs one
    Python call per use and nothing more while nothing is raised."""
    @functools.wraps(fn)
    def entry(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except Exception as e:
            if _keep_frames():
                raise
            _user_error(e)
            raise
    entry.__user_entry__ = True
    return entry


def user_entries(namespace: dict, names) -> None:
    """Make the functions named ``names`` in ``namespace`` (a module's globals: a public facade
    such as ``ws.layout``) public entries, and the public methods of its classes (those defined
    by warpstage: ``__init__``, ``__call__``, ``__getitem__`` and every method without a leading
    underscore). Internal code imports the unwrapped functions from their own modules."""
    for name in names:
        obj = namespace.get(name)
        if isinstance(obj, type) and _in_package(getattr(sys.modules.get(obj.__module__),
                                                         "__file__", "") or ""):
            user_entry_methods(obj)
        elif inspect.isfunction(obj) and obj.__module__.startswith("warpstage") and \
                not getattr(obj, "__user_entry__", False):
            namespace[name] = user_entry(obj)


def device_entry(fn, public: str):
    """``fn``, a function of the device API, as a public entry: called from host code (no kernel
    being traced), its error reaches the caller through :func:`_user_error`, and the error of
    device code run outside a trace (core/trace.outside_trace_error) names ``public`` (what the
    user called: ``ws.arch.warp_idx``), not the inner function that found no trace. Inside a
    trace, or called by warpstage's own code, it changes nothing: the trace is the boundary."""
    from ..core.trace import maybe_current, outside_trace_error

    @functools.wraps(fn)
    def entry(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except Exception as e:
            if _in_package(sys._getframe(1).f_code.co_filename):
                raise
            if maybe_current() is not None:
                if type(e) is TypeError and e.__traceback__.tb_next is None:
                    # raised by the call itself: the arguments do not bind to fn's parameters
                    # (the trace boundary filters the frames)
                    raise _binding_error(fn, public, e) from None
                raise
            if _keep_frames():
                raise
            if getattr(e, "outside_trace", False):
                e.args = outside_trace_error(public + "()").args
            _user_error(e)
            raise
    entry.__user_entry__ = True
    return entry


def _binding_error(fn, public: str, e: TypeError):
    """The ArgumentError for a call of the device function ``public`` whose arguments do not
    bind to its parameters (Python's TypeError ``e``), with the signature to call it with."""
    from ..errors import ArgumentError
    try:
        sig = f"{public}{inspect.signature(fn)}"
    except (TypeError, ValueError):
        sig = f"{public}(...)"
    said = str(e)
    said = said.split("() ", 1)[1] if "() " in said else said
    return ArgumentError(f"{public}() {said}.\nExpected: {sig}.\nFix: call it as {sig} (its "
                         f"docstring: help({public})).")


def device_entries(namespace: dict, names, prefix: str) -> None:
    """Make the functions named ``names`` in ``namespace`` (a device module's globals, such as
    ``ws.arch``'s; ``prefix`` its public name, ``"ws.arch"``) device entries
    (:func:`device_entry`). One mechanism for the whole device API: no check per function."""
    for name in names:
        obj = namespace.get(name)
        if inspect.isfunction(obj) and obj.__module__.startswith("warpstage") and \
                not getattr(obj, "__user_entry__", False):
            namespace[name] = device_entry(obj, f"{prefix}.{name}")


def user_entry_methods(cls: type) -> type:
    """Class decorator: make the public methods of ``cls`` (see :func:`user_entries`) entries."""
    for name, attr in list(vars(cls).items()):
        if name not in ("__init__", "__call__", "__getitem__") and name.startswith("_"):
            continue
        wrap = type(attr) if isinstance(attr, (staticmethod, classmethod)) else None
        fn = attr.__func__ if wrap is not None else attr
        # plain functions only: a @ws.jit method (a JitFunction) is traced, not called
        if inspect.isfunction(fn) and not getattr(fn, "__user_entry__", False):
            setattr(cls, name, wrap(user_entry(fn)) if wrap is not None else user_entry(fn))
    return cls
