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
