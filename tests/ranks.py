"""Test helper: the ranks of a pretend job as processes that start at one moment, for the
shared-disk-cache tests (tests/jit/test_shared_cache.py on the CPU, tests/gpu/
test_shared_cache_gpu.py on two GPUs). ``run_ranks(folder, n, script)`` writes
examples/vector_add.py into ``folder`` as ``examples_vector_add`` (importable by the ranks), starts
``n`` copies of ``script`` (Python source run with ``-c``; argv: the folder and the rank), waits
until each has written ``ready-<rank>`` into the folder, then writes ``go``, which each rank waits
for before its first compile; it returns the JSON each rank printed last."""
import json
import os
import subprocess
import sys
import time

from example_loader import ROOT


def run_ranks(folder, n: int, script: str) -> list:
    (folder / "examples_vector_add.py").write_text(
        open(os.path.join(ROOT, "examples", "vector_add.py")).read())
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, str(folder)]))
    procs = [subprocess.Popen([sys.executable, "-c", script, str(folder), str(r)], env=env,
                              cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for r in range(n)]
    deadline = time.monotonic() + 120
    while not all((folder / f"ready-{r}").exists() for r in range(n)):
        assert time.monotonic() < deadline and all(p.poll() is None for p in procs), \
            [p.communicate() for p in procs if p.poll() is not None]
        time.sleep(0.01)
    (folder / "go").write_text("")
    out = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=300)
        assert p.returncode == 0, stderr
        out.append(json.loads(stdout.strip().splitlines()[-1]))
    return out
