"""Building many specializations ahead of time, in parallel: ``ws.compile(requests, jobs=N)`` and
the ``warpstage compile`` command.

A request is ``(kernel, args)`` or ``(kernel, args, kwargs)``, as ``ws.compile(kernel, *args,
**kwargs)`` takes them (types or example values; ``block=`` among the kwargs). With ``jobs`` > 1
the requests are dealt round-robin to ``jobs`` worker processes, each a fresh ``python -m
warpstage.jit.precompile`` (nothing of the parent's CUDA context, torch threads or locks is
inherited, and unlike multiprocessing's ``spawn`` the parent's ``__main__`` is not re-imported, so
a script without an ``if __name__ == "__main__":`` guard works), each running trace, LLVM and
ptxas for its requests and storing the results in the disk cache (``WARPSTAGE_CACHE_DIR`` and
``sys.path`` are passed on); the
parent then compiles every request itself, which is now a disk hit (file read + entry decode, a
few ms), and returns the CompiledKernels in request order. A request a worker could not build is
built again in the parent, which raises its error with the user's traceback; so the results are
the same as without workers, only sooner.

A worker finds a kernel by its module and qualified name (``importlib.import_module``), so
requests for kernels defined in ``__main__`` (a script run directly, which a worker would import
under another name, giving other cache keys) or that cannot be pickled (arguments holding
lambdas, open files) are built in the parent, one after the other.
"""
from __future__ import annotations

import importlib
import os
import pickle
import time
from typing import List, Sequence

__all__ = ["compile_many", "normalize_requests"]


def normalize_requests(requests: Sequence) -> list:
    """``requests`` as [(kernel, args tuple, kwargs dict)]. Raises ``ArgumentError`` naming the
    request that is not ``(kernel, args)`` or ``(kernel, args, kwargs)``."""
    from ..errors import ArgumentError
    if not isinstance(requests, (list, tuple)):
        raise ArgumentError(f"ws.compile(requests, jobs=...): the requests are "
                            f"{_short(requests)} (of type {type(requests).__name__}); expected "
                            "a list of (kernel, args) or (kernel, args, kwargs). Fix: "
                            "ws.compile([(kern, (ws.Int32,)), (kern, (ws.Int64,), {'block': 256})]"
                            ", jobs=4)")
    out = []
    for i, r in enumerate(requests):
        if not isinstance(r, (tuple, list)) or len(r) not in (2, 3) or not _is_kernel(r[0]) \
                or not isinstance(r[1], (tuple, list)) or (len(r) == 3 and not isinstance(r[2], dict)):
            raise ArgumentError(f"ws.compile(requests, jobs=...): request #{i} is {r!r}; expected "
                                "(kernel, args) or (kernel, args, kwargs) with a @ws.kernel, a "
                                "tuple of arguments (values or types) and a dict such as "
                                "{'block': 256}. Fix: ws.compile([(kern, (ws.Int32,))], jobs=4)")
        out.append((r[0], tuple(r[1]), dict(r[2]) if len(r) == 3 else {}))
    return out


def _short(x, n: int = 60) -> str:
    r = repr(x)
    return r if len(r) <= n else r[:n - 3] + "..."


def _is_kernel(x) -> bool:
    """Whether ``x`` is a ``@ws.kernel`` (its class, read through the public package: this
    module is imported by ``api`` and does not import it back)."""
    import warpstage
    return isinstance(x, type(warpstage.kernel(_probe)))


def _probe():
    pass


def _portable(kernel, args, kwargs):
    """The pickled (module, qualname, args, kwargs) of a request a worker can rebuild, or None."""
    module, qualname = kernel.fn.__module__, kernel.fn.__qualname__
    if module == "__main__" or "<locals>" in qualname:
        return None
    try:
        found = _resolve(module, qualname)
    except Exception:  # noqa: BLE001 - not importable by name: build it in the parent
        return None
    if found is not kernel:
        return None
    try:
        return pickle.dumps((module, qualname, args, kwargs))
    except Exception:  # noqa: BLE001 - unpicklable arguments
        return None


def _resolve(module: str, qualname: str):
    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def _build(blob: bytes):
    """In a worker: compile one request into the disk cache; (seconds, error text or None)."""
    t0 = time.perf_counter()
    try:
        module, qualname, args, kwargs = pickle.loads(blob)
        import warpstage
        warpstage.compile(_resolve(module, qualname), *args, **kwargs)
        return time.perf_counter() - t0, None
    except Exception as e:  # noqa: BLE001 - the parent rebuilds it and raises properly
        return time.perf_counter() - t0, f"{type(e).__name__}: {e}"


def compile_many(requests: Sequence, jobs: int = 1, report=None) -> List:
    """CompiledKernels for ``requests`` (see the module docstring), built by ``jobs`` worker
    processes (1: in this process). ``report(kernel_name, seconds, error_or_None)`` is called
    as each worker result arrives (the ``warpstage compile`` command prints them)."""
    import warpstage
    from ..errors import ArgumentError
    ws_compile = warpstage.compile
    if not isinstance(jobs, int) or isinstance(jobs, bool) or jobs < 1:
        raise ArgumentError(f"jobs must be an int >= 1 (worker processes); got {jobs!r}. Fix: "
                            f"jobs={os.cpu_count() or 1}")
    items = normalize_requests(requests)
    if jobs > 1:
        blobs = [_portable(k, a, kw) for k, a, kw in items]
        work = [(i, b) for i, b in enumerate(blobs) if b is not None]
        if len(work) > 1:
            _run_pool(items, work, min(jobs, len(work)), report)
    return [ws_compile(k, *a, **kw) for k, a, kw in items]


def _run_pool(items, work, jobs: int, report) -> None:
    import subprocess
    import sys
    import tempfile
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    with tempfile.TemporaryDirectory(prefix="warpstage-compile-") as folder:
        running = []
        for w in range(jobs):
            chunk = work[w::jobs]
            result = os.path.join(folder, f"{w}.pickle")
            proc = subprocess.Popen([sys.executable, "-m", "warpstage.jit.precompile", result],
                                    stdin=subprocess.PIPE, env=env)
            proc.stdin.write(pickle.dumps([blob for _, blob in chunk]))
            proc.stdin.close()
            running.append((proc, chunk, result))
        for proc, chunk, result in running:
            proc.wait()
            try:
                with open(result, "rb") as f:
                    outcomes = pickle.load(f)
            except (OSError, EOFError, pickle.UnpicklingError):
                outcomes = [(0.0, f"worker exited with status {proc.returncode}")] * len(chunk)
            if report is not None:
                for (i, _), (seconds, error) in zip(chunk, outcomes):
                    report(items[i][0].__qualname__, seconds, error)


def _worker_main(result_path: str) -> None:
    """``python -m warpstage.jit.precompile RESULT``: build the pickled requests read from stdin;
    write [(seconds, error or None)] to RESULT."""
    import sys
    blobs = pickle.loads(sys.stdin.buffer.read())
    outcomes = [_build(blob) for blob in blobs]
    with open(result_path, "wb") as f:
        pickle.dump(outcomes, f)


if __name__ == "__main__":
    import sys
    _worker_main(sys.argv[1])
