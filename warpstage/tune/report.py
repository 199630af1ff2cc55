"""What one tuning run found: a ``Candidate`` per configuration and the ``TuneReport``, and the
progress line that shows a run while it goes (stderr, a terminal only)."""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import List, Optional

from .configs import config_text
from .resources import Resources

__all__ = ["Candidate", "TuneReport", "ProgressLine", "STATUSES", "DROPPED", "failure",
           "error_text"]

DROPPED = ("compile error", "host error", "no launch", "pruned", "prune error", "failed", "hung")
STATUSES = ("pending", "compiled", "timed") + DROPPED + ("skipped",)
"""A candidate's status: 'timed' (has ``ms``); dropped (``DROPPED``): 'compile error' (tracing
a kernel or device function, LLVM, ptxas), 'host error' (the launch function's own code, or a
launch it makes, raised), 'no launch' (its call launched no kernel: a timing would measure
host code only), 'pruned' (the launch limits or ``prune``), 'prune error' (``prune`` raised
for it), 'failed' (raised or trapped while timed), 'hung' (the watchdog); 'skipped': not
reached (budget, or not visited by the local search)."""

NO_LAUNCH = ("its call launched no kernel, so a timing would measure host code only.\nFix: "
             "launch the kernel for every configuration of the space (or leave this one out)")


def failure(e: BaseException, step: str) -> str:
    """'STATUS: what' for ``e``, raised by a candidate in ``step`` ('compile' or 'time'): in
    the compile step a 'compile error' when a kernel was being compiled (a CompilationError,
    or a frame of kernel or device-function code on its traceback), else a 'host error'; in
    the time step 'failed'. The innermost frame is named (the user's file:line: public entries
    leave only the user's frames), as the watchdog's and a dead worker's reasons are too."""
    from ..core.source import is_kernel_code
    from ..errors import CompilationError
    frames = _frames(e)
    if step != "compile":
        status = "failed"
    elif isinstance(e, CompilationError) or any(is_kernel_code(t.tb_frame.f_code)
                                                for t in frames):
        status = "compile error"
    else:
        status = "host error"
    return f"{status}: {error_text(e)}"


def error_text(e: BaseException) -> str:
    """'Type: message (in fn, file:line)', the innermost frame of ``e``'s traceback named
    unless the message names a position already."""
    text = f"{type(e).__name__}: {e}"
    frames = _frames(e)
    if frames and "  File \"" not in text:
        code = frames[-1].tb_frame.f_code
        text += f" (in {code.co_name}, {code.co_filename}:{frames[-1].tb_lineno})"
    return text


def _frames(e: BaseException) -> list:
    out, tb = [], e.__traceback__
    while tb is not None:
        out.append(tb)
        tb = tb.tb_next
    return out


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
        return f"#{self.index} {config_text(self.config)}: {what}"


@dataclass
class TuneReport:
    """A tuning run: ``candidates`` (in space order), ``best`` (the fastest timed one; None
    for a report read from disk, which has ``best_config`` and ``best_ms`` only),
    ``wall_s`` = ``compile_s`` + ``timing_s`` + the rest (seconds), ``from_disk``: the winner
    came from a stored record (nothing compiled or timed); ``devices``: the GPU ordinals the
    candidates were timed on (empty in the simulator)."""

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
    devices: tuple = ()

    def count(self, status: str) -> int:
        return sum(c.status == status for c in self.candidates)

    def dropped(self) -> List[Candidate]:
        return [c for c in self.candidates if c.status in DROPPED]

    def summary(self) -> str:
        """One line: candidates, wall time and its split, drops, the winner."""
        if self.from_disk:
            return (f"[warpstage] tune {self.name}: from disk, best "
                    f"{config_text(self.best_config)} "
                    f"({self.best_ms:.4f} ms when tuned)")
        n = len(self.candidates)
        best = (f"best #{self.best.index} {config_text(self.best.config)}: "
                f"{self.best.ms:.4f} ms"
                if self.best else "no candidate ran")
        where = f" on {len(self.devices)} GPUs" if len(self.devices) > 1 else ""
        return (f"[warpstage] tune {self.name}: {self.count('timed')} of {n} candidates timed"
                f"{where} in {self.wall_s:.1f} s (compile {self.compile_s:.1f} s, timing "
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
