"""ws.pipeline.OrderedBarrier (turn-taking of warpgroups on named barriers with a dynamic id),
dynamic named-barrier ids, ws.math.select and ws.math.exp2(approx=True): results in the
simulator, the PTX they become, and the errors for misuse."""
import re

import numpy as np
import pytest

import warpstage as ws


@ws.kernel
def turns(log: ws.Tensor, counter: ws.Tensor, members: ws.Static[int], rounds: ws.Static[int]):
    """``members`` warpgroups take ``rounds`` turns each; in its turn, warp 0 of the warpgroup
    appends its member index to ``log`` (slot from an atomic counter), after some work that
    would let a later member overtake if the turns were not ordered."""
    wg = ws.arch.make_warp_uniform(ws.arch.thread_idx()[0] // 128)
    warp = ws.arch.make_warp_uniform(ws.arch.warp_idx()) % 4
    turn = ws.pipeline.OrderedBarrier.create(wg, members, 128, base_id=2)
    for r in range(rounds):
        turn.wait()
        if warp == 0:
            if ws.arch.elect_one():
                x = wg
                for i in range(3 * (members - wg)):        # the first member dawdles longest
                    x = x + 0
                slot = ws.atomic_add(counter.ptr, 1)
                log[slot] = x
        turn.arrive()
    turn.finish()


@pytest.mark.parametrize("members", [2, 3])
def test_members_take_turns_in_order(sim_target, members):
    rounds = 4
    log = np.full(members * rounds, -1, np.int32)
    counter = np.zeros(1, np.int32)
    turns[1, 128 * members](log, counter, members, rounds)
    assert log.tolist() == [i % members for i in range(members * rounds)]


def test_ptx_uses_register_ids():
    ck = ws.compile(turns, ws.Tensor[ws.Int32, 1], ws.Tensor[ws.Int32, 1], ws.Static(2),
                    ws.Static(3), block=(256, 1, 1))
    ptx = ck.ptx
    assert re.search(r"bar.sync \t%r\d+, 256;", ptx)          # wait: base_id + member
    assert re.search(r"bar.arrive \t%r\d+, 256;", ptx)        # arrive: the next member's id
    assert "bar.arrive \t2, 256;" in ptx                      # create: the last member lets 0 go
    assert "bar.sync \t2, 256;" in ptx                        # finish: member 0 drains


@ws.kernel
def divergent_id(out: ws.Tensor):
    lane = ws.arch.lane_idx()
    ws.arch.barrier_sync(1 + lane % 2, 32)                   # not warp-uniform
    out[lane] = lane


def test_non_uniform_dynamic_id_is_reported(sim_target):
    with pytest.raises(ws.BarrierError, match="warp-uniform"):
        divergent_id[1, 32](np.zeros(32, np.int32))


@ws.kernel
def create_case(out: ws.Tensor, member_kind: ws.Static[str], members: ws.Static[int],
                threads: ws.Static[int], base_id: ws.Static[int]):
    wg = ws.arch.make_warp_uniform(ws.arch.thread_idx()[0] // 128)
    member = 1.5 if member_kind == "float" else wg
    ws.pipeline.OrderedBarrier.create(member, members, threads, base_id)
    out[0] = 1


@pytest.mark.parametrize("member_kind, members, threads, base_id, match", [
    ("wg", 1, 128, 1, "members"), ("wg", 2, 100, 1, "threads"), ("wg", 4, 128, 13, "base_id"),
    ("wg", 2, 128, 0, "base_id"), ("float", 2, 128, 1, "member")])
def test_create_errors(member_kind, members, threads, base_id, match):
    with pytest.raises(ws.OperandError, match=match):
        ws.compile(create_case, ws.Tensor[ws.Int32, 1], ws.Static(member_kind),
                   ws.Static(members), ws.Static(threads), ws.Static(base_id), block=(256, 1, 1))


@ws.kernel
def select_and_exp2(x: ws.Tensor, y: ws.Tensor, fast: ws.Tensor, precise: ws.Tensor):
    i = ws.arch.thread_idx()[0]
    v = x[i]
    y[i] = ws.math.select(v > 0.0, v, -1.0)
    fast[i] = ws.math.exp2(v, approx=True)
    precise[i] = ws.math.exp2(v)


def test_select_and_ftz_exp2(sim_target):
    x = np.array([-130.0, -126.5, -126.0, -1.0, 0.0, 1.5, 10.0, -np.inf] * 4, np.float32)
    y, fast, precise = (np.zeros_like(x) for _ in range(3))
    select_and_exp2[1, 32](x, y, fast, precise)
    assert y.tolist() == np.where(x > 0, x, -1.0).tolist()
    assert np.allclose(precise, np.exp2(x.astype(np.float64)), rtol=1e-6, atol=0)
    # ftz: results below 2^-126 are 0; the rest as the precise form
    want = np.exp2(x.astype(np.float64))
    want[want < 2.0 ** -126] = 0.0
    assert np.allclose(fast, want, rtol=1e-6, atol=0) and fast[0] == 0 and fast[1] == 0
    ck = ws.compile(select_and_exp2, *[ws.Tensor[ws.Float32, 1]] * 4, block=(32, 1, 1))
    assert "ex2.approx.ftz.f32" in ck.ptx and "ex2.approx.f32" in ck.ptx
    assert "selp.f32" in ck.ptx or "selp.b32" in ck.ptx


def test_exp2_approx_must_be_static_bool():
    @ws.kernel
    def k(x: ws.Tensor):
        x[0] = ws.math.exp2(x[0], approx="yes")
    with pytest.raises(ws.OperandError, match="approx"):
        ws.compile(k, ws.Tensor[ws.Float32, 1], block=(32, 1, 1))
