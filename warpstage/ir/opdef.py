"""Op definitions: one ``OpDef`` per op, the single home of its facts.

A definition gives the op's name, its signature (operands and results, as text in the
``ir.ops`` conventions), its attribute schema, a one-line contract with the PTX ISA section it
implements, its traits, the verifier rule, and (for ops whose result type follows from their
operands and attributes) a result-type rule the builder uses. Families (``ir/ops_*.py``) call
``define`` at import; ``ir/__init__`` imports every ``ops_*`` module of this package, so a new
family registers itself by existing.

Who reads what:

- the verifier: ``rule``, ``attrs`` (no attribute outside the schema), ``TERMINATOR``;
- the builder: ``infer`` (result types), through ``Builder.create``;
- DCE: ``PURE`` (an unused result of a pure op is dead);
- the simulator: ``READS_MEMORY`` and ``WAITS`` (spin and endless-loop detection),
  ``ATOMIC`` (the race detector);
- the legalization pass: ``legalized`` (the ops it must rewrite; the backend and the simulator
  name the pass when handed one);
- docs and tests: ``summary``, ``ptx``, ``signature`` (``describe_ops``).
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Callable, Mapping, Optional

from .core import Operation

__all__ = ["Trait", "OpDef", "OPS", "define", "op_def", "ops_with", "describe_ops",
           "unlowered_op_message"]


class Trait(enum.Enum):
    """What the passes and the simulator may assume about an op."""

    PURE = "pure"
    """No side effect and no memory read: with its results unused it can be removed."""
    READS_MEMORY = "reads memory"
    """Reads global or shared memory (or an mbarrier, or state another thread can change)."""
    WRITES_MEMORY = "writes memory"
    """Writes global or shared memory (or an mbarrier, a barrier or the output stream)."""
    TERMINATOR = "terminator"
    """Ends its block; the parent op (or the function) reads its operands."""
    WARP_COLLECTIVE = "warp-collective"
    """Executed by all lanes of a warp (or warpgroup) together (``.sync.aligned`` forms)."""
    ASYNC = "async"
    """Starts work that completes later (on the async proxy / tensor cores), tracked by a group or
    an mbarrier."""
    WAITS = "waits"
    """Can block the thread until other threads or async work reach a point (barriers, waits)."""
    ATOMIC = "atomic"
    """Its memory access is atomic (never a data race with another atomic)."""


Rule = Callable[[Operation], Optional[str]]
Infer = Callable[[list, dict], list]


@dataclass(frozen=True)
class OpDef:
    """The facts of one op. ``signature``: ``(operands) -> results`` in the ``ir.ops``
    conventions; ``attrs``: attribute name -> what it holds (a trailing ``?`` marks an optional
    one); ``summary``: the one-line contract; ``ptx``: the PTX ISA section (or instruction) it
    implements; ``rule``: the verifier rule (an error message, or None); ``infer``: the result
    types from (operand types, attrs), None where the caller must give them; ``requires``: the
    architecture it needs."""

    name: str
    signature: str
    summary: str
    rule: Rule
    traits: frozenset = field(default_factory=frozenset)
    attrs: Mapping[str, str] = field(default_factory=dict)
    ptx: str = ""
    infer: Optional[Infer] = None
    requires: str = ""
    """The architecture the op needs: '' (any), 'sm_NN' (NN or newer), 'sm_NNa' (exactly the
    arch-specific NN); ``core.target.Target.has`` decides, the backend checks it."""
    legalized: bool = False
    """Not a primitive: the legalization pass (``passes/legalize.py``) rewrites it into
    primitives, and neither the backend nor the simulator implements it."""

    @property
    def attr_names(self) -> frozenset:
        """The attribute names the schema allows (without the optional marker ``?``)."""
        return _ATTR_NAMES[self.name]

    def has(self, trait: Trait) -> bool:
        return trait in self.traits

    @property
    def dialect(self) -> str:
        return self.name.split(".", 1)[0]


_ATTR_NAMES: dict = {}
OPS: dict = {}
"""op name -> OpDef, every op the frontend may emit (the backend and the simulator implement
each after the passes' legalization; the tests check the tables agree)."""
_BY_TRAIT: dict = {}


def define(name: str, signature: str, summary: str, rule: Rule, traits=(), attrs=None,
           ptx: str = "", infer: Optional[Infer] = None, requires: str = "",
           legalized: bool = False) -> OpDef:
    """Register the definition of op ``name``; a second definition of one name is an error."""
    if name in OPS:
        raise ValueError(f"op {name} defined twice")
    bad = [t for t in traits if not isinstance(t, Trait)]
    if bad:
        raise TypeError(f"op {name}: traits must be ir.Trait members, got {bad}")
    if requires and not (requires.startswith("sm_") and requires[3:].rstrip("a").isdigit()):
        raise ValueError(f"op {name}: requires must be '', 'sm_NN' or 'sm_NNa', got {requires!r}")
    d = OpDef(name, signature, summary, rule, frozenset(traits), dict(attrs or {}), ptx, infer,
              requires, legalized)
    OPS[name] = d
    _ATTR_NAMES[name] = frozenset(k.rstrip("?") for k in d.attrs)
    _BY_TRAIT.clear()
    return d


def op_def(name: str) -> OpDef:
    """The definition of ``name``; KeyError naming the op if there is none."""
    try:
        return OPS[name]
    except KeyError:
        raise KeyError(f"no op {name!r} is defined (ir.OPS)") from None


def unlowered_op_message(name: str, consumer: str) -> str:
    """Why ``consumer`` (the backend, the simulator) has no rule for op ``name``: for a legalized
    op, that the module skipped the pass stage (with the fix); else that the op is unknown."""
    d = OPS.get(name)
    if d is not None and d.legalized:
        return (f"op {name} is not a primitive: the legalization pass rewrites it before "
                f"{consumer} runs. Fix: run warpstage.passes.pipeline.run_passes(module) (or "
                "warpstage.passes.legalize.legalize(module)) on a module built by hand")
    return f"{consumer} has no rule for op {name}"


def ops_with(trait: Trait) -> frozenset:
    """The names of the ops that have ``trait`` (cached until the next ``define``)."""
    names = _BY_TRAIT.get(trait)
    if names is None:
        names = _BY_TRAIT[trait] = frozenset(n for n, d in OPS.items() if trait in d.traits)
    return names


def describe_ops() -> str:
    """The op table as text, one line per op, grouped by dialect: name, signature, attributes,
    traits, contract, PTX ISA section (docs/ir.md is generated from it)."""
    lines, dialect = [], None
    for name in sorted(OPS):
        d = OPS[name]
        if d.dialect != dialect:
            dialect = d.dialect
            lines.append(f"{dialect}")
        attrs = (" {" + ", ".join(d.attrs) + "}") if d.attrs else ""
        traits = ", ".join(t.value for t in Trait if t in d.traits)
        lines.append(f"  {name}{attrs} {d.signature}")
        lines.append(f"      {d.summary}" + (f" [{d.ptx}]" if d.ptx else "")
                     + (f" ({traits})" if traits else "")
                     + (f" {d.requires}+" if d.requires else "")
                     + (" [legalized]" if d.legalized else ""))
    return "\n".join(lines) + "\n"
