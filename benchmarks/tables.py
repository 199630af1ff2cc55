"""Markdown tables for the benchmark scripts' RESULTS.md blocks."""
from __future__ import annotations


def figure(v) -> str:
    """A TFLOP/s cell: rounded, or '-' when not measured."""
    return "-" if v is None else f"{v:.0f}"


def ratio(a, b) -> str:
    """a / b to two decimals, or '-' when either is missing."""
    return f"{a / b:.2f}" if a and b else "-"


def markdown(head, rows) -> str:
    """A markdown table of the header cells ``head`` and the rows of cells ``rows``."""
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)
