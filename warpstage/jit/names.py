"""A misspelt public name (``ws.arch.warpid``, ``ws.tma.lod``, ``ws.Flaot32``) as a warpstage
error: what is missing from which public module, the closest public names (``difflib`` over the
module's ``__all__``, and the same name in another public module: ``ws.tma.fence`` is
``ws.wgmma.fence``), the user's line, and the Fix. One mechanism for every public module: each
gets the module ``__getattr__`` (PEP 562) that :func:`public_getattr` makes, installed by
``warpstage/__init__.py``; Python calls it only for a name the module lacks, so it costs nothing
on a hit.

The error is a ``WarpstageError`` and an ``AttributeError`` (so ``hasattr`` and
``getattr(m, name, default)`` behave as before). It is raised in the ``__getattr__`` frame
itself and filtered there (jit/tracebacks.py), so its traceback shows the user's frames only."""
from __future__ import annotations

import difflib
import importlib
import sys

from ..errors import MissingNameError
from .tracebacks import _keep_frames, _user_error

__all__ = ["public_getattr", "missing_name", "PUBLIC_MODULES"]

PUBLIC_MODULES: dict = {}
"""public name (``ws.arch``) -> module, for the suggestion of a name another module has."""


def public_getattr(module_name: str, public: str, lazy: dict = None):
    """The module ``__getattr__`` for module ``module_name``, known to users as ``public``
    (``"ws.arch"``). ``lazy``: names imported on first access (``{"torch": ".runtime.torch_library"}``, a module
    path relative to ``module_name``); an import that fails says which package is missing."""
    lazy = lazy or {}

    def __getattr__(name: str):
        if name.startswith("__"):
            raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
        try:
            if name in lazy:
                try:
                    return importlib.import_module(lazy[name], module_name)
                except ImportError as e:
                    raise MissingNameError(
                        f"{public}.{name} could not be imported: it needs the package "
                        f"{e.name!r}, which is not installed ({e}).\nFix: install it (pip "
                        f"install {e.name}), or use warpstage without {public}.{name}.") from None
            raise missing_name(public, sys.modules[module_name], name)
        except MissingNameError as e:
            if _keep_frames():
                raise
            _user_error(e)
            raise
    return __getattr__


def missing_name(public: str, module, name: str) -> MissingNameError:
    """The MissingNameError for ``public.name`` (``module`` being ``public``)."""
    names = list(getattr(module, "__all__", None) or
                 [n for n in vars(module) if not n.startswith("_")])
    near = [f"{public}.{n}" for n in difflib.get_close_matches(name, names, n=3, cutoff=0.7)]
    near += [f"{other}.{name}" for other, m in PUBLIC_MODULES.items()
             if other != public and name in (getattr(m, "__all__", None) or ())]
    hint = f" (did you mean {' or '.join(near)}?)" if near else ""
    return MissingNameError(
        f"{public} has no attribute {name!r}{hint}.\n"
        f"Expected: one of the {len(names)} public names of {public} (its __all__); got "
        f"{name!r}.\nFix: " + (f"write {near[0]}." if near else
                               f"pick a name from {public}.__all__ (help({public}) "
                               "describes each)."))
