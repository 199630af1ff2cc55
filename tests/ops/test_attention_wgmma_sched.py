"""The wgmma FlashAttention kernel's tile schedule (warpstage/ops/attention_wgmma_sched.py):
``row_block_order`` (``partial_last``) on Python ints, and in the CPU simulator that a consumer
warpgroup with no row below S_q issues no wgmma with ``skip_idle`` (the outputs themselves are
checked against the reference by tests/examples/test_flash_attention_wgmma_sim.py's CASES)."""
import importlib

import pytest

import warpstage as ws
from dtypes_helper import empty_like, randn
from warpstage.ops import attention
from warpstage.ops.attention_wgmma import FlashAttentionWgmma
from warpstage.ops.attention_wgmma_sched import row_block_order

pytestmark = pytest.mark.filterwarnings("ignore::warpstage.RecompileWarning")


@pytest.mark.parametrize("heads, seq_q, tile_m", [(3, 1000, 192), (4, 1024, 192), (2, 100, 192),
                                                  (5, 2048, 128), (1, 64, 128)])
def test_row_block_order_is_a_permutation_with_partial_blocks_last(heads, seq_q, tile_m):
    n_m = -(-seq_q // tile_m)
    order = [row_block_order(t, heads, seq_q, tile_m) for t in range(heads * n_m)]
    assert sorted(order) == [(bh, m) for bh in range(heads) for m in range(n_m)]
    partial = [(bh, m) for bh, m in order if (m + 1) * tile_m > seq_q]
    n_partial = len(partial)
    assert n_partial == (heads if seq_q % tile_m else 0)
    assert order[len(order) - n_partial:] == partial          # every partial block at the end
    if seq_q % tile_m == 0:                                   # the plain order then
        assert order == [(t // n_m, t % n_m) for t in range(heads * n_m)]
    full = order[:len(order) - n_partial]
    assert full == sorted(full)                               # a batch-head's blocks together


def count_wgmmas(monkeypatch, fields, seq_q, seq_k=200, d=64, heads=2):
    """Warpgroup-wide wgmma executions of one simulated launch with ``fields``."""
    ops = importlib.import_module("warpstage.sim.ops_wgmma")
    calls = []
    real = ops._compute
    monkeypatch.setattr(ops, "_compute", lambda *a: (calls.append(1), real(*a))[1])
    fa = FlashAttentionWgmma(head_dim=d, dtype=ws.BFloat16, **fields)
    q = randn((1, heads, seq_q, d), "bfloat16", 1)
    k, v = randn((1, heads, seq_k, d), "bfloat16", 2), randn((1, heads, seq_k, d), "bfloat16", 3)
    attention.launch_wgmma(fa, q, k, v, empty_like(q))
    return len(calls)


@pytest.mark.parametrize("fields", [dict(consumer_wgs=3), dict(consumer_wgs=3, overlap=False),
                                    dict(consumer_wgs=3, partial_last=True)])
def test_skip_idle_warpgroups_issue_no_wgmma(sim_target, monkeypatch, fields):
    # S_q = 100 with 192-row tiles: warpgroup 2 (rows 128..191) has no row; warpgroup 1 (rows
    # 64..127) has some, so it still computes: 2 of 3 warpgroups' GEMMs are left
    base = count_wgmmas(monkeypatch, fields, 100)
    skip = count_wgmmas(monkeypatch, dict(fields, skip_idle=True), 100)
    assert base > 0 and skip * 3 == base * 2


def test_skip_idle_changes_nothing_without_idle_rows(sim_target, monkeypatch):
    fields = dict(consumer_wgs=2)
    assert (count_wgmmas(monkeypatch, dict(fields, skip_idle=True), 256)
            == count_wgmmas(monkeypatch, fields, 256))


def test_skip_idle_excludes_overlap_tiles():
    with pytest.raises(ValueError, match="skip_idle"):
        FlashAttentionWgmma(skip_idle=True, overlap_tiles=True)
