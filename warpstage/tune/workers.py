"""The autotuner's worker processes and their watchdog.

A worker is a fresh ``python -m warpstage.tune.worker_main`` (like precompile.py's: nothing of the
parent's CUDA context, threads or locks is inherited, and the parent's ``__main__`` is not
re-imported). It reads one pickled job from stdin: the tuned function by name, the arguments,
and a list of candidates (index, packed configuration, launch shape); for each candidate in
order it either compiles it (``mode`` 'compile': records its launches and resources,
warpstage/tune/capture.py) or times it (``mode`` 'time': the timer on its own copies of the
arguments), and writes one line per candidate to its stdout as soon as it is done (its own
prints go to stderr). After a failed timing on the GPU a worker stops (a trapped kernel leaves
the CUDA context unusable); the parent starts a new one for the remaining candidates.

The watchdog is the parent's ``run``: a worker that writes no line within ``timeout_s`` of its
previous one (``startup_s`` for its first, the ``READY`` line it writes once it has imported
and loaded the arguments) is killed, its current candidate recorded as hung, and a new worker takes the rest.
A worker that exits before finishing records its current candidate as failed with the exit
status (a crash, or a trap that killed it). So a hanging or trapping candidate costs at most
its timeout and a worker start; the parent process never waits on the GPU itself.
"""
from __future__ import annotations

import base64
import os
import pickle
import selectors
import subprocess
import sys
import time
from typing import Callable, Dict, List, Optional, Tuple

__all__ = ["run", "make_call", "READY"]

READY = -1
"""The index of the line a worker writes once it has imported and loaded the arguments."""


def make_call(kind: str, target, config, args: tuple, kwargs: dict, launch, position: int):
    """A no-argument function running ``target`` with ``config``: ``target(*args,
    config=config, **kwargs)`` for a launch function (``kind`` 'fn'), or for a ``@ws.kernel``
    (``kind`` 'kernel') ``target[grid, block, smem, stream](*args)`` with ``config`` inserted
    at ``position`` and ``launch`` = (grid, block, smem, stream)."""
    if kind == "fn":
        return lambda: target(*args, config=config, **kwargs)
    full = args[:position] + (config,) + args[position:]
    grid, block, smem, stream = launch
    return lambda: target[grid, block, smem, stream](*full, **kwargs)


def _spawn(job: dict, extra_env: Optional[dict] = None):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p),
               **(extra_env or {}))
    proc = subprocess.Popen([sys.executable, "-m", "warpstage.tune.worker_main"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
    try:
        proc.stdin.write(pickle.dumps(job))
        proc.stdin.close()
    except OSError:             # it died at once; its exit status tells
        pass
    os.set_blocking(proc.stdout.fileno(), False)
    return proc


def run(job: dict, items: List[tuple], jobs: int, timeout_s: float, startup_s: float,
        on_result: Callable[[int, bool, object], None],
        deadline: Optional[float] = None,
        envs: Optional[List[dict]] = None) -> Tuple[List[int], List[int]]:
    """Run ``items`` (candidates: (index, packed config, launch)) of ``job`` in up to ``jobs``
    workers (round-robin); ``envs``: per worker, environment variables it is started with (a
    worker started again for the rest of its items gets the same ones: the per-GPU timing
    workers' ``CUDA_VISIBLE_DEVICES``). ``on_result(index, ok, payload)`` is called as each arrives:
    payload the Resources / milliseconds, or the reason text when not ok. Returns (the indices
    left undone because ``deadline``, a ``time.perf_counter()`` value, passed; those of a
    worker that died or hung before it was ready, which says nothing about the candidates: the
    caller runs them in-process)."""
    chunks = [items[w::jobs] for w in range(min(jobs, len(items)))]
    sel = selectors.DefaultSelector()
    unready: List[int] = []
    # fd -> [proc, remaining items, buffer, last line's time, any line yet, last line a failure,
    #        its environment variables]
    live: Dict[int, list] = {}

    def start(chunk, env):
        proc = _spawn(dict(job, items=chunk), env)
        live[proc.stdout.fileno()] = [proc, list(chunk), b"", time.perf_counter(), False, False,
                                      env]
        sel.register(proc.stdout, selectors.EVENT_READ)

    def stop(fd, reason: Optional[str], restart: bool = True):
        live_entry = live[fd]
        proc, remaining = live_entry[0], live_entry[1]
        sel.unregister(proc.stdout)
        del live[fd]
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        proc.stdout.close()
        if remaining and reason is not None and not live_entry[4]:
            unready.extend(it[0] for it in remaining)      # it never got to a candidate
            return
        if remaining and reason is not None:
            on_result(remaining[0][0], False, reason.format(status=proc.returncode))
            remaining = remaining[1:]
        if remaining and restart:
            start(remaining, live_entry[6])

    for w, chunk in enumerate(chunks):
        start(chunk, envs[w] if envs else None)
    while live:
        now = time.perf_counter()
        if deadline is not None and now > deadline:
            left = [it[0] for w in live.values() for it in w[1]]
            for fd in list(live):
                stop(fd, None, restart=False)
            return left, unready
        waits = [(w[3] + (timeout_s if w[4] else startup_s)) - now for w in live.values()]
        wait = max(0.0, min(waits + ([deadline - now] if deadline is not None else [])))
        for key, _ in sel.select(timeout=min(wait, 1.0)):
            _read(key.fd, live, on_result, stop)
        now = time.perf_counter()
        for fd, w in list(live.items()):
            if fd in live and now - w[3] > (timeout_s if w[4] else startup_s):
                limit = timeout_s if w[4] else startup_s
                stop(fd, f"hung: no result within {limit:g} s; the worker process was killed "
                         "(watchdog)")
    return [], unready


def _read(fd, live, on_result, stop) -> None:
    w = live.get(fd)
    if w is None:
        return
    try:
        data = os.read(fd, 1 << 16)
    except BlockingIOError:
        return
    if not data:                # exited; after a failed timing on the GPU it stops by design
        stop(fd, None if w[5] else "failed: the worker process exited with status {status} "
             "before reporting (a crash, or a trapped kernel)")
        return
    w[2] += data
    *lines, w[2] = w[2].split(b"\n")
    for line in lines:
        index, ok, payload = pickle.loads(base64.b64decode(line))
        w[3], w[4] = time.perf_counter(), True
        if index == READY:
            continue
        w[1] = [it for it in w[1] if it[0] != index]
        w[5] = not ok
        on_result(index, ok, payload)
    if not w[1]:
        stop(fd, None)
