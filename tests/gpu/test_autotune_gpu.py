"""ws.autotune on the GPU: candidates timed with CUDA events in a worker process; a kernel that
hangs on the GPU (an mbarrier nobody arrives at) and one with an impossible register split are
ended by the watchdog and the run finishes with the fastest of the rest; the tuned GEMM's
result matches torch; the in-place kernel's caller arguments are untouched by tuning."""
import os
import sys

import pytest

import warpstage as ws

pytestmark = [pytest.mark.gpu, pytest.mark.filterwarnings("ignore::warpstage.RecompileWarning")]

TUNE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tune")
if TUNE not in sys.path:
    sys.path.insert(0, TUNE)


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("WARPSTAGE_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_a_hanging_and_a_register_starved_candidate_are_killed_and_the_run_finishes(cache_dir):
    import torch
    import tune_kernels as tk
    configs = [tk.Tiles("slow", 32), tk.Tiles("stuck", 64, deadlock=True),
               tk.Tiles("split", 384, regs=(40, 256)), tk.Tiles("fast", 256)]
    tuned = ws.autotune(configs, watchdog_s=10.0, progress=False)(tk.scale)
    x = torch.arange(1 << 20, device="cuda", dtype=torch.float32)
    y = torch.zeros_like(x)
    tuned(x, y)
    torch.cuda.synchronize()
    status = {c.config.name: (c.status, c.reason) for c in tuned.report.candidates}
    assert status["stuck"][0] == "hung" and "watchdog" in status["stuck"][1]
    assert status["split"][0] in ("hung", "failed")
    assert status["slow"][0] == status["fast"][0] == "timed"
    assert tuned.report.best.config.name in ("slow", "fast")
    assert torch.equal(y, 2 * x)


def test_the_tuned_gemm_matches_torch_and_the_callers_output_is_only_written_once(cache_dir):
    import torch
    from warpstage.ops import tune_spaces as ts
    a = torch.randn(1024, 512, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(512, 768, device="cuda", dtype=torch.bfloat16)
    space = [ts.MatmulTuning(128, 4, 8), ts.MatmulTuning(256, 3, 4, "N"),
             ts.MatmulTuning(128, 4, 8, "M", "pingpong")]
    tuned = ws.autotune(space, key=ts.matmul_shape_class, progress=False)(ts.tuned_matmul)
    out = torch.full((1024, 768), float("nan"), device="cuda", dtype=torch.bfloat16)
    tuned(a, b, out)
    assert tuned.report.count("timed") == 3 and tuned.report.best.ms > 0
    ref = a.float() @ b.float()
    assert ((out.float() - ref).norm() / ref.norm()).item() < 1e-2


two_gpus = pytest.mark.skipif(
    not __import__("importlib").util.find_spec("torch") or
    __import__("torch").cuda.device_count() < 2, reason="needs 2 GPUs")


@two_gpus
def test_candidates_are_timed_on_two_gpus_and_compiled_once(cache_dir, monkeypatch):
    import torch
    import tune_kernels as tk
    for k in ws.tune.COUNTS:
        monkeypatch.setitem(ws.tune.COUNTS, k, 0)
    configs = [tk.Tiles(n, t) for n, t in (("slow", 32), ("medium", 64), ("fast", 128),
                                            ("sleepy", 256))]
    tuned = ws.autotune(configs, devices="all", progress=False)(tk.scale)
    x = torch.arange(1 << 20, device="cuda:0", dtype=torch.float32)
    y = torch.zeros_like(x)
    tuned(x, y)
    torch.cuda.synchronize()
    r = tuned.report
    assert r.devices[:2] == (0, 1) and r.count("timed") == 4
    assert ws.tune.COUNTS["compiles"] == 4 and ws.tune.COUNTS["timings"] == 4
    assert r.best.ms == min(c.ms for c in r.candidates)
    assert torch.equal(y, 2 * x)


@two_gpus
def test_tensors_on_cuda1_are_tuned_on_cuda1(cache_dir):
    import torch
    import tune_kernels as tk
    tuned = ws.autotune([tk.Tiles("slow", 32), tk.Tiles("fast", 128)],
                        progress=False)(tk.scale)
    x = torch.arange(1 << 18, device="cuda:1", dtype=torch.float32)
    y = torch.zeros_like(x)
    with torch.cuda.device(0):
        tuned(x, y)
    torch.cuda.synchronize(1)
    assert tuned.report.devices == (1,) and tuned.report.count("timed") == 2
    assert torch.equal(y, 2 * x)
