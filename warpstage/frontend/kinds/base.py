"""The parameter kind: what every kind of parameter owns (``Kind``), the rule texts
(``RULES``: DESIGN §2's list), and the dispatch by stored form and by key.

A ``Kind`` subclass is one kind of parameter (a static value, a scalar, a tensor, a pointer, a
TMA descriptor's map, a composite). An instance is one parameter's binding for one call (the
object ``classify`` returns, formerly called a Spec): the rule that decided, the binding time
(static / dynamic / mixed), a type description, the cache-key part. The class owns, for its kind:

- its match rules (classmethods that the ordered table, table.py, calls; each returns an
  instance or None);
- ``abi(name)``: the ABI slots; ``host_leaves(value, out)``: the host values of those slots;
  ``make(it, name)``: the traced value, built from the kernel's IR arguments;
- ``stored()``: the plain-data form kept on disk (``STORED_TAG``), and ``bind_stored`` (a
  classmethod): the ABI values of a host argument for that form (jit/loaded.py);
- ``change(new)``: what changed against another binding of the kind, for recompile reasons;
- ``row(name)``: its ``ws.explain`` row;
- its fast forms: ``binder`` (a classmethod: the hot-path key and leaves, ``make_binder``)
  and ``fast_kind`` / ``fast_parts`` (what the generated call path reads, fast_call_source.py).
"""
from __future__ import annotations

from typing import Any, Optional

from ...errors import ArgumentError

__all__ = ["RULES", "Kind", "MatchContext", "bind_stored", "param_change", "got_text", "short",
           "STORED_KINDS", "FAST_KINDS", "mismatch", "never_binds"]

RULES = {
    0: "first parameter named `self` (compatibility rule)",
    1: "annotated ws.Static[T]",
    2: "annotated with a dynamic type",
    3: "bool/int/float with no annotation",
    4: "tensor (DLPack / CUDA array interface)",
    5: "value protocol / @ws.struct / dataclass / NamedTuple",
    6: "tuple/list/dict",
    7: "anything else: static (receiver rule)",
}

STORED_KINDS: dict = {}      # stored-form tag ("k") -> the Kind class that reads it back
FAST_KINDS: dict = {}        # fast-path tag ("static", "tensor", "scalar") -> the Kind class


def short(v, n=60) -> str:
    r = repr(v)
    return r if len(r) <= n else r[:n - 3] + "..."


def got_text(v) -> str:
    """What an error says it got: 'a int (5)'; for a type that ws.compile stands in for with a
    placeholder value ('placeholder_of': lang/scalars.TypePlaceholder, jit/placeholders._FakeTensor), 'the
    type ws.Int32' — never the stand-in's value."""
    if getattr(type(v), "placeholder_of", None) is not None:
        return f"the type {v.placeholder_of}"
    return f"a {type(v).__name__} ({short(v)})"


class MatchContext:
    """What a match rule is given besides the value and annotation: the parameter's name (for
    errors), whether rule 0 applies, the tensor adapter (value -> TensorArg or None) and
    ``classify`` itself (composites classify their parts)."""

    __slots__ = ("name", "self_rule", "adapter", "classify")

    def __init__(self, name, self_rule, adapter, classify):
        self.name, self.self_rule, self.adapter, self.classify = name, self_rule, adapter, classify

    def part(self, value, annotation, name):
        """The binding of a part of a composite (a field, an item), by the same rules."""
        return self.classify(value, annotation, name, tensor_adapter=self.adapter)


class Kind:
    """One parameter kind (the class) and one parameter's binding (an instance). See the module
    docstring."""

    rule: int
    binding: str
    desc: str
    key: Any
    key_desc: Optional[str] = None      # the key part in words (ws.explain), where it has them
    STORED_TAG: Optional[str] = None    # the "k" of its stored form; None: not stored on disk
    FAST_TAG: Optional[str] = None      # its tag in kind_of's output, where it has a fast reading

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        if cls.__dict__.get("STORED_TAG"):
            STORED_KINDS[cls.STORED_TAG] = cls
        if cls.__dict__.get("FAST_TAG"):
            FAST_KINDS[cls.FAST_TAG] = cls

    # -- the launch ABI and the trace -------------------------------------------------------
    def abi(self, name: str) -> list:
        return []

    def host_leaves(self, value, out: list) -> None:
        pass

    def make(self, it, name: str):
        raise NotImplementedError

    # -- disk ---------------------------------------------------------------------------------
    def stored(self) -> Optional[dict]:
        """The plain-data form of this binding (jit/loaded.py's docstring lists them), or None
        when the kind has none (the kernel then cannot be launched from a file)."""
        return None

    @classmethod
    def bind_stored(cls, d: dict, value, name: str, out: list) -> None:
        """Append the ABI values of host ``value`` for the stored form ``d`` to ``out``; an
        ArgumentError when the value does not fit that specialization."""
        raise NotImplementedError

    # -- recompile reasons and explain ----------------------------------------------------------
    def change(self, new) -> str:
        """What changed from this binding to ``new`` (same kind, a different key), in words."""
        return f"{self.desc} -> {new.desc}"

    def kind_text(self) -> str:
        """This binding in a few words, for a change of kind ('tensor of Float32 -> Int32')."""
        return self.desc if len(self.desc) <= 40 else self.desc[:37] + "..."

    def row(self, name: str) -> tuple:
        """Its ``ws.explain`` row: parameter, rule, binding, type, key part, ABI slots."""
        slots = ", ".join(f"{s.split('.', 1)[-1] if '.' in s else s}:{t}"
                          for s, t in self.abi(name)) or "-"
        key = self.key_desc or short(self.key, 38)
        return (name, str(self.rule), self.binding, self.desc, key, slots)

    # -- the fast paths -------------------------------------------------------------------------
    @classmethod
    def fast_kind(cls, annotation, self_rule: bool):
        """Its entry in kind_of's output for a parameter so annotated, or None."""
        return None


def never_binds(v, keys, leaves) -> bool:
    """The hot-path binder of a parameter that always takes the full path."""
    return False


def mismatch(name, expected, got) -> ArgumentError:
    """The error of a host argument that does not fit a stored specialization."""
    return ArgumentError(f"parameter '{name}': this compiled kernel was specialized for "
                         f"{expected}, got {got}.\nFix: pass a matching argument, or compile a "
                         "specialization for it with ws.compile(kernel, ...) and save that one.")


def bind_stored(d: dict, value, name: str, out: list) -> None:
    """The ABI values of host ``value`` for the stored binding ``d``, by its kind."""
    kind = STORED_KINDS.get(d.get("k"))
    if kind is None:
        raise ArgumentError(f"parameter '{name}': unknown stored binding {d.get('k')!r}; the file "
                            "was written by another warpstage version.\nFix: save it again.")
    kind.bind_stored(d, value, name, out)


def param_change(old, new) -> Optional[str]:
    """What changed from binding ``old`` to binding ``new`` of one parameter, in a few words;
    None when their key parts are equal."""
    if old.key == new.key:
        return None
    if type(old) is type(new) or old.STORED_TAG is not None and old.STORED_TAG == new.STORED_TAG:
        return old.change(new)
    return f"{old.kind_text()} -> {new.kind_text()}"
