"""``ws.explain``: the binding-time table of a kernel for given arguments."""
from __future__ import annotations

from ..frontend.kinds import RULES

__all__ = ["format_table"]


def format_table(name: str, specs: list, param_names: list) -> str:
    """One row per parameter (its kind's ``row``): rule, binding time, type, key part, ABI
    slots."""
    rows = [("parameter", "rule", "binding", "type", "key part", "ABI slots")]
    rows.extend(spec.row(pname) for pname, spec in zip(param_names, specs))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    lines = [f"kernel {name}: binding times"]
    for k, r in enumerate(rows):
        lines.append("  " + "  ".join(c.ljust(w) for c, w in zip(r[:5], widths)) + "  " + r[5])
        if k == 0:
            lines.append("  " + "  ".join("-" * w for w in widths) + "  " + "-" * 9)
    used = sorted({s.rule for s in specs})
    lines.append("rules: " + "; ".join(f"{r} = {RULES[r]}" for r in used))
    return "\n".join(lines)
