"""Warp collectives, fences, setmaxnreg, bar.arrive, mbarriers, cp.async, the dynamic shared
memory base and atomics lower to the PTX instructions they name, and ptxas assembles them."""
import pytest

from backend_helpers import KernelBuilder, OPTIONS
from warpstage.backend import assemble
from warpstage.ir import PointerType, Value, f32, f64, i1, i32, i64, u32, u64, u8

MBAR = PointerType(u64, "shared")
ATTRS = {"maxntid": (128, 1, 1), "minctasm": 1}


def kernel(body, args=(PointerType(i32), i32)):
    """A kernel whose body ``body(b, args)`` returns an i32 value stored to args[0][0]."""
    k = KernelBuilder(list(args), attrs=ATTRS)
    v = body(k.b, k.args)
    if isinstance(v, Value):
        k.b.store(k.args[0], v)
    return k.finish()


def as_i32(b, v):
    return b.cast(v, i32)


def mbar(b):
    return b.ptr_cast(b.smem_base(), u64)


CASES = {
    "shfl_idx": (lambda b, a: b.shfl("idx", a[1], b.constant(i32, 0)),
                 "shfl.sync.idx.b32"),
    "shfl_up": (lambda b, a: b.shfl("up", a[1], b.constant(i32, 1), width=8),
                "shfl.sync.up.b32"),
    "shfl_down_f32": (lambda b, a: as_i32(b, b.shfl("down", b.cast(a[1], f32), b.constant(i32, 2))),
                      "shfl.sync.down.b32"),
    "shfl_bfly_u32": (lambda b, a: as_i32(b, b.shfl("bfly", b.cast(a[1], u32), b.constant(i32, 4),
                                                    mask=0xFFFF)), "shfl.sync.bfly.b32"),
    "vote_all": (lambda b, a: as_i32(b, b.vote("all", b.cmp("gt", a[1], b.constant(i32, 0)))),
                 "vote.sync.all.pred"),
    "vote_any": (lambda b, a: as_i32(b, b.vote("any", b.cmp("gt", a[1], b.constant(i32, 0)))),
                 "vote.sync.any.pred"),
    "vote_uni": (lambda b, a: as_i32(b, b.vote("uni", b.cmp("gt", a[1], b.constant(i32, 0)))),
                 "vote.sync.uni.pred"),
    "vote_ballot": (lambda b, a: as_i32(b, b.vote("ballot", b.cmp("gt", a[1], b.constant(i32, 0)))),
                    "vote.sync.ballot.b32"),
    "elect": (lambda b, a: as_i32(b, b.elect()), "elect.sync"),
    "warp_sync": (lambda b, a: b.op("nvvm.warp_sync", (), (), {"mask": 0xFF}), "bar.warp.sync 255"),
    "setmaxnreg_dec": (lambda b, a: b.op("nvvm.setmaxnreg", (), (), {"action": "dec", "count": 40}),
                       "setmaxnreg.dec.sync.aligned.u32 40"),
    "bar_arrive": (lambda b, a: b.op("nvvm.barrier_arrive", (), (), {"id": 3, "count": 96}),
                   "bar.arrive 3, 96"),
    "fence_proxy_async_shared": (lambda b, a: b.op("nvvm.fence", (), (), {"kind": "proxy.async.shared::cta"}),
                                 "fence.proxy.async.shared::cta;"),
    "fence_proxy_async": (lambda b, a: b.op("nvvm.fence", (), (), {"kind": "proxy.async"}),
                          "fence.proxy.async;"),
    "fence_acq_rel_gpu": (lambda b, a: b.op("nvvm.fence", (), (), {"kind": "acq_rel.gpu"}),
                          "fence.acq_rel.gpu;"),
    "fence_sc_cta": (lambda b, a: b.op("nvvm.fence", (), (), {"kind": "sc.cta"}), "fence.sc.cta;"),
    "fence_mbarrier_init": (lambda b, a: b.op("nvvm.fence", (), (), {"kind": "mbarrier_init.release.cluster"}),
                            "fence.mbarrier_init.release.cluster;"),
    "smem_base": (lambda b, a: b.load(b.ptr_cast(b.smem_base(), i32)),
                  ".extern .shared .align 1024 .b8 __ws_dynamic_smem[];"),
    "mbarrier_init": (lambda b, a: b.mbarrier("init", mbar(b), a[1]),
                      "mbarrier.init.shared::cta.b64"),
    "mbarrier_arrive": (lambda b, a: as_i32(b, b.mbarrier("arrive", mbar(b))),
                        "mbarrier.arrive.shared::cta.b64"),
    "mbarrier_arrive_count": (lambda b, a: as_i32(b, b.mbarrier("arrive", mbar(b), a[1])),
                              "mbarrier.arrive.shared::cta.b64"),
    "mbarrier_arrive_expect_tx": (lambda b, a: as_i32(b, b.mbarrier("arrive_expect_tx", mbar(b), a[1])),
                                  "mbarrier.arrive.expect_tx.shared::cta.b64"),
    "mbarrier_expect_tx": (lambda b, a: b.mbarrier("expect_tx", mbar(b), a[1]),
                           "mbarrier.expect_tx.relaxed.cta.shared::cta.b64"),
    "mbarrier_try_wait": (lambda b, a: as_i32(b, b.mbarrier("try_wait_parity", mbar(b), a[1])),
                          "mbarrier.try_wait.parity.shared::cta.b64"),
    "mbarrier_wait": (lambda b, a: b.mbarrier("wait_parity", mbar(b), a[1]),
                      "mbarrier.try_wait.parity.shared::cta.b64"),
    "mbarrier_inval": (lambda b, a: b.mbarrier("inval", mbar(b)), "mbarrier.inval.shared::cta.b64"),
    "atomic_add_global": (lambda b, a: b.atomic("add", a[0], a[1]), "atom.global.add.u32"),
    "atomic_max_shared": (lambda b, a: b.atomic("max", b.ptr_cast(b.smem_base(), i32), a[1]),
                          "atom.shared.max.s32"),
    "atomic_min_u64": (lambda b, a: as_i32(b, b.atomic("min", b.ptr_cast(a[0], u64),
                                                       b.cast(a[1], u64))), "atom.global.min.u64"),
    "atomic_exch": (lambda b, a: b.atomic("exch", a[0], a[1]), "atom.global.exch.b32"),
    "atomic_xor": (lambda b, a: b.atomic("xor", a[0], a[1]), "atom.global.xor.b32"),
    "atomic_add_f32": (lambda b, a: as_i32(b, b.atomic("add", b.ptr_cast(a[0], f32),
                                                       b.cast(a[1], f32))), "atom.global.add.f32"),
    "atomic_add_f64": (lambda b, a: as_i32(b, b.atomic("add", b.ptr_cast(a[0], f64),
                                                       b.cast(a[1], f64))), "atom.global.add.f64"),
    "atomic_cas": (lambda b, a: b.atomic_cas(a[0], a[1], b.constant(i32, 7)), "atom.relaxed.sys.global.cas.b32"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_op_lowers_to_its_instruction_and_assembles(name, ptxas_path):
    body, needle = CASES[name]
    ll, ptx = kernel(body)
    squeezed = " ".join(ptx.split())
    assert " ".join(needle.split()) in squeezed, ptx
    result = assemble(ptx, OPTIONS, ["k"])
    assert result.cubin[:4] == b"\x7fELF"


def cp_async_kernel(cache, size):
    def body(b, a):
        dst = b.ptr_cast(b.ptr_offset(b.smem_base(), b.constant(i32, 64)), f32)
        src = b.ptr_cast(a[0], f32)
        b.op("cp_async.copy", (dst, src), (), {"cache": cache, "size": size})
        b.op("cp_async.commit_group")
        b.op("cp_async.wait_group", (), (), {"n": 2})
        b.op("cp_async.wait_all")
        b.op("cp_async.mbarrier_arrive", (mbar(b),), (), {"noinc": True})
        b.op("cp_async.mbarrier_arrive", (mbar(b),), (), {"noinc": False})
        return as_i32(b, b.load(dst))
    return kernel(body)


@pytest.mark.parametrize("cache,size", [("cg", 16), ("ca", 4), ("ca", 8), ("ca", 16)])
def test_cp_async_family(cache, size, ptxas_path):
    ll, ptx = cp_async_kernel(cache, size)
    for needle in (f"cp.async.{cache}.shared.global [__ws_dynamic_smem+64], [%rd1], {size};",
                   "cp.async.commit_group;", "cp.async.wait_group 2;", "cp.async.wait_all;",
                   "cp.async.mbarrier.arrive.noinc.shared.b64 [__ws_dynamic_smem];",
                   "cp.async.mbarrier.arrive.shared.b64 [__ws_dynamic_smem];"):
        assert needle in " ".join(ptx.split()), needle
    assemble(ptx, OPTIONS, ["k"])


def test_wait_parity_is_a_loop_around_try_wait():
    ll, ptx = kernel(lambda b, a: b.mbarrier("wait_parity", mbar(b), a[1]))
    lines = [ln.strip() for ln in ptx.splitlines()]
    label = next(i for i, ln in enumerate(lines) if ln.endswith(":") and ln.startswith("$L"))
    assert any("mbarrier.try_wait.parity" in ln for ln in lines[label:])
    assert any(ln.startswith("@") and "bra" in ln and lines[label][:-1] in ln
               for ln in lines[label:])


def test_shfl_clamp_values_follow_cuda():
    # c = ((32 - width) << 8) | (0 for up, 31 otherwise), as __shfl_*_sync(mask, x, b, width)
    ll, ptx = kernel(lambda b, a: b.binary("add", b.shfl("up", a[1], a[1], width=8),
                                          b.shfl("down", a[1], a[1], width=8)))
    assert "6144, -1" in ptx and "6175, -1" in ptx
    ll, ptx = kernel(lambda b, a: b.shfl("idx", a[1], a[1], mask=0x0000FFFF))
    assert "31, 65535" in ptx


def test_smem_base_is_shared_by_functions_and_offsets_fold():
    def body(b, a):
        base = b.smem_base()
        again = b.smem_base()
        p = b.ptr_cast(b.ptr_offset(again, b.constant(i32, 256)), i32)
        b.store(p, a[1])
        return b.load(b.ptr_cast(base, i32))
    ll, ptx = kernel(body)
    assert ll.count("@\"__ws_dynamic_smem\" = external addrspace(3) global [0 x i8], align 1024") == 1
    assert "st.shared.b32 [__ws_dynamic_smem+256]" in " ".join(ptx.split())


def test_setmaxnreg_honoured_with_minctasm(ptxas_path):
    ll, ptx = kernel(lambda b, a: b.op("nvvm.setmaxnreg", (), (), {"action": "inc", "count": 232}))
    assert ".minnctapersm 1" in ptx and ".maxntid 128, 1, 1" in ptx
    result = assemble(ptx, OPTIONS, ["k"])
    assert not any("C7508" in w for w in result.warnings), result.warnings
    assert result.resources["k"].registers == 232


def test_atomics_on_every_integer_type_assemble(ptxas_path):
    def body(b, a):
        p64 = b.ptr_cast(a[0], i64)
        b.atomic("and", p64, b.cast(a[1], i64))
        b.atomic("or", b.ptr_cast(a[0], u32), b.cast(a[1], u32))
        b.atomic_cas(b.ptr_cast(a[0], u64), b.cast(a[1], u64), b.constant(u64, 1))
        return None
    ll, ptx = kernel(body)
    squeezed = " ".join(ptx.split())
    assert "atom.global.and.b64" in squeezed and "atom.global.or.b32" in squeezed
    assemble(ptx, OPTIONS, ["k"])


def test_vote_on_constant_predicates_still_lowers():
    ll, ptx = kernel(lambda b, a: as_i32(b, b.vote("any", b.constant(i1, True))))
    assert ".entry k" in ptx


def test_smem_pointer_type_u8_round_trip():
    ll, ptx = kernel(lambda b, a: as_i32(b, b.load(b.smem_base(u8))))
    assert "ld.shared.u8" in ptx or "ld.shared.b8" in ptx
