"""A job of two ranks on two GPUs sharing one disk cache (issue 17): each rank makes its own GPU
current (as torchrun's ranks do), then both launch the same three specializations at the same
moment; each specialization is traced, lowered and assembled once in the whole job, the other
rank loads the stored cubin onto its own GPU, and every launch is correct. Skipped unless
``torch.cuda.device_count() >= 2`` (the CPU version: tests/jit/test_shared_cache.py)."""
import pytest

torch = pytest.importorskip("torch")

import warpstage as ws  # noqa: E402
from ranks import run_ranks  # noqa: E402
from warpstage.backend import find_ptxas  # noqa: E402

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.device_count() < 2,
                                 reason="needs 2 GPUs")]

RANK = """
import json, os, sys, time
import torch
from warpstage.jit.compiled import STAGE_COUNTS
from examples_vector_add import launch
folder, rank = sys.argv[1], int(sys.argv[2])
torch.cuda.set_device(rank)
torch.zeros(1, device="cuda")                               # the context exists before "go"
open(os.path.join(folder, f"ready-{rank}"), "w").close()
while not os.path.exists(os.path.join(folder, "go")):
    time.sleep(0.002)
dtypes = [torch.float32, torch.float16, torch.int32]
if rank % 2:
    dtypes.reverse()                                        # the ranks meet from both ends
ok = {}
for dt in dtypes:
    a = (torch.arange(5000, device="cuda") % 7).to(dt)
    b = (torch.arange(5000, device="cuda") % 5).to(dt)
    out = torch.zeros_like(a)
    launch(a, b, out)
    torch.cuda.synchronize()
    ok[str(dt)] = bool(torch.equal(out, a + b))
print(json.dumps({"counts": STAGE_COUNTS, "ok": ok, "device": torch.cuda.current_device()}))
"""


def test_two_ranks_on_two_gpus_compile_each_specialization_once(tmp_path):
    ranks = run_ranks(tmp_path, 2, RANK)
    total = {k: sum(r["counts"][k] for r in ranks) for k in ranks[0]["counts"]}
    assert [r["device"] for r in ranks] == [0, 1]
    assert all(all(r["ok"].values()) and len(r["ok"]) == 3 for r in ranks), ranks
    assert total["trace"] == 3 and total["disk_store"] == 3, total
    assert total["ptxas"] == (3 if find_ptxas(ws.CompileOptions()) else 0), total
    assert total["disk_hit"] == 3, total                    # the other rank's three
