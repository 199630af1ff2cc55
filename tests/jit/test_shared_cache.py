"""A disk cache shared by several processes (the ranks of a job, ``warpstage compile`` workers):
processes that need the same specializations at the same moment build each of them once — one
process traces, lowers and assembles it under the entry's lock, the others wait and read the
entry it stored — and every process gets the same cubin (api.Kernel._from_disk_or_trace,
persist.building, jit/cache/files.py ``locked``)."""
import os

import pytest

import warpstage as ws
from warpstage.backend import find_ptxas
from warpstage.jit.cache import files as cache
from warpstage.runtime import cache_lock
from ranks import run_ranks

pytestmark = pytest.mark.skipif(cache_lock.fcntl is None, reason="no fcntl.flock here")

RANK = """
import hashlib, json, os, sys, time
import warpstage as ws
from warpstage.jit.compiled import STAGE_COUNTS
from examples_vector_add import vector_add
folder, rank = sys.argv[1], int(sys.argv[2])
open(os.path.join(folder, f"ready-{rank}"), "w").close()
while not os.path.exists(os.path.join(folder, "go")):      # every rank starts at once
    time.sleep(0.002)
dtypes = [ws.Float32, ws.Float16, ws.Int32]
if rank % 2:
    dtypes.reverse()                                        # ranks meet from both ends
digests = {}
for dt in dtypes:
    T = ws.Tensor[dt, 1]
    ck = ws.compile(vector_add, T, T, T, ws.Int32)
    digests[dt.__name__] = hashlib.sha256(ck.cubin or ck.ptx.encode()).hexdigest()
print(json.dumps({"counts": STAGE_COUNTS, "digests": digests}))
"""


def test_ranks_sharing_a_cache_compile_each_specialization_once(tmp_path):
    ranks = run_ranks(tmp_path, 4, RANK)
    total = {k: sum(r["counts"][k] for r in ranks) for k in ranks[0]["counts"]}
    assert total["trace"] == 3 and total["lower"] == 3 and total["ptx"] == 3     # 3 dtypes
    assert total["ptxas"] == (3 if find_ptxas(ws.CompileOptions()) else 0)
    assert total["disk_store"] == 3 and total["disk_hit"] == 3 * (4 - 1)
    assert all(r["digests"] == ranks[0]["digests"] for r in ranks)      # one binary each
    assert cache.info()["entries"] == 3
    assert not [f for f in os.listdir(cache.path()) if f.endswith(cache.LOCK_SUFFIX)]
