"""What one tuning run found: a ``Candidate`` per configuration and the ``TuneReport``, and the
progress line that shows a run while it goes (stderr, a terminal only)."""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import List, Optional

from .resources import Resources

__all__ = ["Candidate", "TuneReport", "ProgressLine", "STATUSES"]

STATUSES = ("pending", "compiled", "timed", "compile error", "pruned", "failed", "hung",
            "skipped")
"""A candidate's status: 'timed' (has ``ms``); dropped: 'compile error', 'pruned' (the launch
limits or ``prune``), 'failed' (raised or trapped while running), 'hung' (the watchdog);
'skipped': not reached (budget, or not visited by the local search)."""


@dataclass
class Candidate:
    """One configuration of a tuning run. ``ms``: its time (milliseconds) once timed;
    ``reason``: why it was dropped or skipped; ``resources``: its launches' resources once
    compiled."""

    index: int
    config: object
    status: str = "pending"
    reason: str = ""
    ms: Optional[float] = None
    resources: Optional[Resources] = None

    def line(self) -> str:
        what = f"{self.ms:.4f} ms" if self.ms is not None else f"{self.status}: {self.reason}"
        return f"#{self.index} {self.config!r}: {what}"


@dataclass
class TuneReport:
    """A tuning run: ``candidates`` (in space order), ``best`` (the fastest timed one; None
    for a report read from disk, which has ``best_config`` and ``best_ms`` only),
    ``wall_s`` = ``compile_s`` + ``timing_s`` + the rest (seconds), ``from_disk``: the winner
    came from a stored record (nothing compiled or timed)."""

    name: str
    key: object
    candidates: List[Candidate] = field(default_factory=list)
    best: Optional[Candidate] = None
    best_config: object = None
    best_ms: Optional[float] = None
    wall_s: float = 0.0
    compile_s: float = 0.0
    timing_s: float = 0.0
    strategy: str = "exhaustive"
    from_disk: bool = False

    def count(self, status: str) -> int:
        return sum(c.status == status for c in self.candidates)

    def dropped(self) -> List[Candidate]:
        return [c for c in self.candidates if c.status in ("compile error", "pruned", "failed",
                                                           "hung")]

    def summary(self) -> str:
        """One line: candidates, wall time and its split, drops, the winner."""
        if self.from_disk:
            return (f"[warpstage] tune {self.name}: from disk, best {self.best_config!r} "
                    f"({self.best_ms:.4f} ms when tuned)")
        n = len(self.candidates)
        best = (f"best #{self.best.index} {self.best.config!r}: {self.best.ms:.4f} ms"
                if self.best else "no candidate ran")
        return (f"[warpstage] tune {self.name}: {self.count('timed')} of {n} candidates timed "
                f"in {self.wall_s:.1f} s (compile {self.compile_s:.1f} s, timing "
                f"{self.timing_s:.1f} s); {len(self.dropped())} dropped, "
                f"{self.count('skipped')} skipped; {best}")

    def table(self) -> str:
        """Every candidate on its own line, then the summary."""
        return "\n".join([c.line() for c in self.candidates] + [self.summary()])


class ProgressLine:
    """``[warpstage] tune NAME: compiled c/n, timed t/n, best ...`` on stderr, rewritten in
    place on a terminal; ``finish`` replaces it with the report's summary. ``enabled`` False:
    silent."""

    def __init__(self, name: str, total: int, enabled: bool):
        self.name, self.total, self.enabled = name, total, enabled
        isatty = getattr(sys.stderr, "isatty", None)
        try:
            self.live = enabled and bool(isatty and isatty())
        except ValueError:
            self.live = False
        self._last = 0.0

    def update(self, report: TuneReport, force: bool = False) -> None:
        if not self.live:
            return
        now = time.perf_counter()
        if not force and now - self._last < 0.1:
            return
        self._last = now
        done = sum(c.status != "pending" for c in report.candidates)
        timed = report.count("timed")
        best = min((c for c in report.candidates if c.ms is not None), key=lambda c: c.ms,
                   default=None)
        text = f"best {best.ms:.4f} ms (#{best.index})" if best else "best -"
        self._write(f"\r\x1b[K[warpstage] tune {self.name}: compiled {done}/{self.total}, "
                    f"timed {timed}/{self.total}, {text}")

    def finish(self, report: TuneReport) -> None:
        if not self.enabled:
            return
        self._write(("\r\x1b[K" if self.live else "") + report.summary() + "\n")

    @staticmethod
    def _write(text: str) -> None:
        from ..jit.progress import _write      # stderr, ignoring a closed or broken stream
        _write(text)
