"""One tuning run: compile the candidates (in worker processes when the function and the
configurations can travel, warpstage/tune/portable.py), drop those that cannot run (the launch
limits, then the user's ``prune``), time the rest, keep the fastest.

Strategies: 'exhaustive' compiles and times every candidate. 'local' is a cheap search for large
spaces: it starts from the first configuration (put the shipped default first), evaluates it and
its neighbours (the configurations that differ from it in exactly one field, ``features``),
moves to the fastest, and repeats from there until no neighbour is faster; each round's
compiles run in parallel. ``budget_s`` bounds the run's wall time in either strategy: what is
not reached by then is skipped and the fastest so far wins.
"""
from __future__ import annotations

import os
import time
from typing import Dict, List

from . import devices as gpus
from . import workers
from .capture import capture_launches
from .configs import features
from .portable import pack_args, pack_config
from .report import (DROPPED, NO_LAUNCH, Candidate, ProgressLine, TuneReport, error_text,
                     failure)
from .resources import launch_problems
from .timing import copy_args, warm_up

__all__ = ["run_tuning", "features", "COUNTS"]

COUNTS = {"compiles": 0, "timings": 0, "tunings": 0, "record_hits": 0}
"""Per process: candidates the autotuner compiled and timed, tuning runs, and winners read from
a disk record (tests use it to prove that a second process compiles and times nothing)."""


def _verdict(reason: str, default: str) -> tuple:
    """(status, reason) of a failed step: the status its text starts with ('STATUS: ...', as
    ``report.failure`` and the watchdog's and a dead worker's reasons in workers.py write it),
    else ``default``."""
    for status in DROPPED:
        if reason.startswith(status + ": "):
            return status, reason[len(status) + 2:]
    return default, reason


def _compiled(c: Candidate, resources) -> None:
    if not resources.launches:
        c.status, c.reason = "no launch", NO_LAUNCH
    else:
        c.status, c.resources = "compiled", resources


def _timed(c: Candidate, ms: float) -> None:
    c.status, c.ms = "timed", ms


class _Run:
    def __init__(self, tuned, configs, args, kwargs, launches, key, devices):
        self.t, self.args, self.kwargs, self.launches = tuned, args, kwargs, launches
        self.devices = devices          # GPU ordinals to time on (None: the simulator)
        self.report = TuneReport(tuned.name, key, [Candidate(i, c) for i, c in enumerate(configs)],
                                 strategy=tuned.strategy)
        self.progress = ProgressLine(tuned.name, len(configs), tuned.progress_on())
        self.t0 = time.perf_counter()
        self.deadline = None if tuned.budget_s is None else self.t0 + tuned.budget_s
        self.copies = None              # the in-process copies of the arguments
        self.warm = False               # this process has run a candidate before timing
        self.ref = tuned.fn_ref
        self.jobs = tuned.jobs or os.cpu_count() or 1

    def _copies(self):
        if self.copies is None:
            self.copies = (copy_args(self.args), copy_args(self.kwargs))
        return self.copies

    def _call(self, c: Candidate):
        args, kwargs = self._copies()
        return workers.make_call(self.t.kind, self.t.target, c.config, args, kwargs,
                                 self.launches[c.index], self.t.position)

    def _job(self, mode: str, data: bool):
        """The job a worker needs for ``mode``, or None when something cannot travel (then the
        step runs in this process)."""
        blob = pack_args(self.args, self.kwargs, data) if self.ref else None
        timer = pack_config(self.t.timer) if mode == "time" else None
        if blob is None or (mode == "time" and timer is None):
            return None
        return dict(mode=mode, kind=self.t.kind, target=self.ref, args=blob,
                    position=self.t.position, device_target=self.t.device_target,
                    warmup=self.t.warmup, rep=self.t.rep, timer=timer)

    def _items(self, cands):
        packed = [(c.index, pack_config(c.config), self.launches[c.index]) for c in cands]
        return None if any(p[1] is None for p in packed) else packed

    def _deadline(self):
        """The budget's end, once a candidate has been timed (a run always times one)."""
        if self.deadline is None or not any(c.ms is not None for c in self.report.candidates):
            return None
        return self.deadline

    def _over(self) -> bool:
        d = self._deadline()
        return d is not None and time.perf_counter() > d

    def _skip(self, cands, reason: str) -> None:
        for c in cands:
            if c.status in ("pending", "compiled"):
                c.status, c.reason = "skipped", reason

    # -- the steps -----------------------------------------------------------------------------
    def _step(self, cands: List[Candidate], job, jobs: int, here, done, step: str,
              envs=None) -> None:
        """Run ``cands`` in ``jobs`` workers (``job``; None: it cannot travel; ``envs``: each
        worker's extra environment), else, and for the candidates of a worker that never got
        ready, ``here(candidate)`` in this process; ``done(index, ok, payload)`` records each
        result; ``step``: 'compile' or 'time'."""
        by_index = {c.index: c for c in cands}
        items = self._items(cands) if job is not None else None
        local = cands
        if items is not None:
            left, unready = workers.run(job, items, jobs, self.t.watchdog_s, self.t.startup_s,
                                        done, self._deadline(), envs)
            self._skip([by_index[i] for i in left], "time budget spent")
            local = [by_index[i] for i in unready]
        for c in local:
            if self._over():
                self._skip([c], "time budget spent")
                continue
            try:
                done(c.index, True, here(c))
            except Exception as e:  # noqa: BLE001 - the candidate's failure is its result
                done(c.index, False, failure(e, step))

    def _recorder(self, cands: List[Candidate], counter: str, on_ok, failed: str):
        """``done(index, ok, payload)`` for one step: counts it in ``COUNTS[counter]``, stores
        a result with ``on_ok(candidate, payload)``, a failure as ``failed`` (or 'hung' /
        'failed', ``_verdict``), and updates the progress line."""
        by_index = {c.index: c for c in cands}

        def done(index, ok, payload):
            c = by_index[index]
            COUNTS[counter] += 1
            if ok:
                on_ok(c, payload)
            else:
                c.status, c.reason = _verdict(payload, failed)
            self.progress.update(self.report, force=counter == "timings")
        return done

    def compile(self, cands: List[Candidate]) -> None:
        t0 = time.perf_counter()
        done = self._recorder(cands, "compiles", _compiled, "compile error")
        self._step(cands, self._job("compile", data=False), self.jobs,
                   lambda c: capture_launches(self._call(c)), done, "compile")
        self.report.compile_s += time.perf_counter() - t0

    def prune(self, cands: List[Candidate]) -> None:
        for c in cands:
            if c.status != "compiled":
                continue
            problems = launch_problems(c.resources, self.t.arch, self.t.max_smem)
            if not problems and self.t.prune is not None:
                try:
                    verdict = self.t.prune(c.config, c.resources)
                except Exception as e:  # noqa: BLE001 - that candidate's failure (docs)
                    c.status, c.reason = "prune error", f"prune() raised {error_text(e)}"
                    continue
                if verdict:
                    problems = [verdict if isinstance(verdict, str) else
                                f"prune() dropped it ({c.resources})"]
            if problems:
                c.status, c.reason = "pruned", "; ".join(problems)

    def time(self, cands: List[Candidate]) -> None:
        todo = [c for c in cands if c.status == "compiled"]
        if not todo:
            return
        t0 = time.perf_counter()
        done = self._recorder(todo, "timings", _timed, "failed")

        def here(c):
            return float(self.t.timer.measure(self._call(c), c.config, self.t.warmup,
                                              self.t.rep))
        job = self._job("time", data=True) if self.t.isolation == "process" else None
        envs = None
        if job is not None and self.devices:
            # one worker per GPU, each seeing only its own (devices.py): the arguments are
            # rebuilt on its cuda:0, the candidates dealt round-robin in space order
            job["device"] = "cuda:0"
            envs = [gpus.worker_env(d) for d in self.devices]
            self.report.devices = tuple(self.devices)
        elif self.devices:
            self.report.devices = tuple(self.devices[:1])
        if job is None and not self.warm:       # a worker warms itself up (worker_main.py)
            self.warm = True
            warm_up(self._call(todo[0]))
        self._step(todo, job, len(envs) if envs else 1, here, done, "time", envs)
        self.report.timing_s += time.perf_counter() - t0

    def evaluate(self, cands: List[Candidate]) -> None:
        cands = [c for c in cands if c.status == "pending"]
        if not cands:
            return
        if self._over():
            self._skip(cands, "time budget spent")
            return
        self.compile(cands)
        self.prune(cands)
        self.time(cands)

    # -- strategies ----------------------------------------------------------------------------
    def exhaustive(self) -> None:
        cands = self.report.candidates
        size = max(8, 4 * self.jobs) if self.t.budget_s is not None else len(cands)
        for start in range(0, len(cands), size):
            self.evaluate(cands[start:start + size])

    def local(self) -> None:
        cands = self.report.candidates
        feats = [features(c.config) for c in cands]

        def neighbours(i):
            return [c for j, c in enumerate(cands) if j != i and set(feats[j]) == set(feats[i])
                    and sum(feats[j][k] != feats[i][k] for k in feats[i]) == 1]

        current = cands[0]
        self.evaluate([current] + neighbours(0))
        while not self._over():
            best = self.best()
            if best is None or best is current:
                break
            current = best
            fresh = [c for c in neighbours(best.index) if c.status == "pending"]
            if not fresh:
                break
            self.evaluate(fresh)
        self._skip(cands, "not visited by the local search")

    def best(self):
        timed = [c for c in self.report.candidates if c.ms is not None]
        return min(timed, key=lambda c: (c.ms, c.index)) if timed else None

    def run(self) -> TuneReport:
        COUNTS["tunings"] += 1
        (self.local if self.t.strategy == "local" else self.exhaustive)()
        r = self.report
        r.best = self.best()
        if r.best is not None:
            r.best_config, r.best_ms = r.best.config, r.best.ms
        r.wall_s = time.perf_counter() - self.t0
        self.progress.finish(r)
        return r


def run_tuning(tuned, configs, args, kwargs, launches, key, devices=None) -> TuneReport:
    """Tune ``tuned`` (an ``autotune.Tuned``) over ``configs`` for these arguments;
    ``launches``: per configuration, the kernel launch shape (grid, block, smem, stream) or
    None for a launch function; ``devices``: the GPU ordinals to time on, the arguments' first
    (warpstage/tune/devices.py; None in the simulator). The winner is chosen by the same rule
    whatever the number of GPUs: the least time, the first in space order among equal times."""
    return _Run(tuned, configs, args, kwargs, launches, key, devices).run()
