"""The pytest-xdist workers share their assertion rewriting (tests/conftest.py's
``pytest_collection``).

Every worker imports every test module to collect the suite, and pytest rewrites each module's
``assert`` statements on import (parse, rewrite, compile: ~4.5 s of CPU per worker for this
suite, two thirds of its collection). pytest caches a rewritten module as a pyc in
``__pycache__``, but not where ``PYTHONDONTWRITEBYTECODE`` is set (as on the CI machine), and
both workers start at once, so each rewrote all of them. Here worker k of n first rewrites
every n-th test file (from the k-th) with pytest's own functions into a folder the workers of
one run share (beside their ``basetemp``s, removed with them), and pytest's pyc lookup also
looks there: each worker rewrites about 1/n of the files and reads the rest. pytest checks a
pyc against the source's hash, so a stale or half-written file is never used; a file the other
worker has not written yet, or any failure here (these are pytest's private functions: another
pytest release may move them), leaves pytest to rewrite it as it always did. The rewritten code
is the same either way: nothing of a test changes, only who compiles it.
"""
from __future__ import annotations

import os
from pathlib import Path


def _asked_for(source: Path, config) -> bool:
    """Whether ``source`` is under one of the paths the command line names (every file of
    ``testpaths`` when it names none), so a run of a few files rewrites only those."""
    here = config.invocation_params.dir
    for arg in config.args:
        path = (here / arg.split("::")[0]).resolve()
        if source == path or path in source.parents:
            return True
    return False


def share(config, tests_root: Path) -> None:
    """Run in each xdist worker before collection; does nothing outside xdist."""
    worker, count = os.environ.get("PYTEST_XDIST_WORKER"), os.environ.get(
        "PYTEST_XDIST_WORKER_COUNT")
    basetemp = getattr(config.option, "basetemp", None)
    if not worker or not count or not basetemp or config.getoption("assertmode") != "rewrite":
        return
    k, n = int(worker.removeprefix("gw")), int(count)
    files = [f for f in sorted(tests_root.rglob("test_*.py")) if _asked_for(f, config)]
    folder = Path(basetemp).parent / "rewritten-tests"
    folder.mkdir(exist_ok=True)
    rewrite_into(config, folder, tests_root, files[k::n])


def rewrite_into(config, folder: Path, tests_root: Path, files) -> bool:
    """Rewrite ``files`` (test modules under ``tests_root``) into ``folder`` and make pytest's
    pyc lookup also look there; False (nothing done) where pytest's functions are not the
    ones this was written against."""
    try:
        from _pytest.assertion import rewrite
        state = config.stash[rewrite.assertstate_key]
        rewrite_test, write_pyc, read_pyc = rewrite._rewrite_test, rewrite._write_pyc, \
            rewrite._read_pyc
        tail = rewrite.PYC_TAIL
    except (ImportError, AttributeError, KeyError):
        return False

    def shared_pyc(source: Path) -> Path:
        rel = os.path.relpath(source, tests_root).replace(os.sep, "__")
        return folder / (rel[:-3] + tail)

    def read_shared(source, pyc, trace=lambda _: None):
        co = read_pyc(source, pyc, trace)
        if co is None:
            co = read_pyc(source, shared_pyc(Path(source)), trace)
        return co

    rewrite._read_pyc = read_shared
    for source in files:
        pyc = shared_pyc(source)
        if pyc.exists():
            continue
        try:
            source_hash, co = rewrite_test(source, config)
        except (SyntaxError, OSError, UnicodeDecodeError):
            continue                    # pytest reports it when it imports the file
        write_pyc(state, co, source_hash, pyc)
    return True
