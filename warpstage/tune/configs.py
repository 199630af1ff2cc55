"""What a configuration (a static policy object) is made of, for the autotuner: its fields, as
text, for the local search's neighbourhood (``features``), and the configuration itself as
text, for reports, errors and disk records (``config_text``) — never ``object.__repr__``'s
memory address, which says nothing and differs in every process."""
from __future__ import annotations

import dataclasses
from typing import Dict, Optional

__all__ = ["features", "config_text"]


def features(config) -> Dict[str, str]:
    """The fields of a configuration, as text, for the local search's neighbourhood: a
    dataclass's fields, else the (name, value) pairs of ``__static_key__()``, else the plain
    attributes."""
    if dataclasses.is_dataclass(config) and not isinstance(config, type):
        return {f.name: repr(getattr(config, f.name)) for f in dataclasses.fields(config)}
    pairs = _key_pairs(config)
    if pairs is not None:
        return {str(n): repr(v) for n, v in pairs}
    attrs = getattr(config, "__dict__", None)
    if attrs:
        return {n: repr(v) for n, v in attrs.items()
                if isinstance(v, (int, float, str, bool, type(None), tuple))}
    return {"value": repr(config)}


def config_text(config, _depth: int = 0) -> str:
    """``config`` as a person reads it: its own ``__repr__`` when its class defines one, else
    ``Class(field=value, ...)`` from its ``__static_key__()`` pairs, its attributes or its
    ``__slots__`` (values that are such objects shown the same way)."""
    cls = type(config)
    if cls.__repr__ is not object.__repr__ or _depth > 3:
        return repr(config)
    pairs = _key_pairs(config)
    if pairs is None:
        pairs = list(getattr(config, "__dict__", {}).items()) or [
            (n, getattr(config, n)) for n in _slots(cls) if hasattr(config, n)]
    shown = ", ".join(f"{n}={config_text(v, _depth + 1)}" for n, v in pairs
                      if not str(n).startswith("_"))
    return f"{cls.__name__}({shown})"


def _key_pairs(config) -> Optional[list]:
    key = getattr(config, "__static_key__", None)
    if key is None or isinstance(config, type):
        return None
    try:
        k = key()
    except Exception:  # noqa: BLE001 - a broken key is reported where keys are made
        return None
    if isinstance(k, tuple) and all(isinstance(p, tuple) and len(p) == 2 for p in k):
        return list(k)
    return None


def _slots(cls) -> list:
    out = []
    for c in reversed(cls.__mro__):
        s = c.__dict__.get("__slots__", ())
        out.extend([s] if isinstance(s, str) else s)
    return [n for n in out if n not in ("__dict__", "__weakref__")]
