"""The builder's typed methods for the GPU op families: named barriers, register reallocation,
fences, cp.async, TMA, mma.sync and wgmma (definitions and contracts in ``ops_sync``,
``ops_tma``, ``ops_mma``, ``ops_wgmma``). ``Builder`` inherits them; ``lang/`` calls these and
never spells an op's name or operand order itself. Each method documents its semantics in one
line; the verifier checks the operands' types at the next stage boundary.
"""
from __future__ import annotations

from typing import Sequence

from .core import Value
from .types import Type, u64

__all__ = ["GpuBuilderMixin"]

_FULL_MASK = 0xFFFFFFFF


class GpuBuilderMixin:
    """Typed constructors of the GPU family ops (mixed into ``ir.Builder``)."""

    # -- nvvm: named barriers, registers, fences, warp sync -------------------------------------
    def barrier_arrive(self, id, count: int) -> None:
        """bar.arrive id, count: arrive at named barrier ``id`` (a static int or a dynamic i32
        Value) with count threads, without waiting."""
        if isinstance(id, int):
            self.create("nvvm.barrier_arrive", (), {"id": id, "count": count})
        else:
            self.create("nvvm.barrier_arrive", (id,), {"count": count})

    def setmaxnreg(self, action: str, count: int) -> None:
        """setmaxnreg.<action: inc|dec>.sync.aligned.u32 count (registers per thread)."""
        self.create("nvvm.setmaxnreg", (), {"action": action, "count": count})

    def fence(self, kind: str) -> None:
        """fence.<kind> (ir.ops_sync.FENCE_KINDS)."""
        self.create("nvvm.fence", (), {"kind": kind})

    def warp_sync(self, mask: int = _FULL_MASK) -> None:
        """bar.warp.sync mask (__syncwarp)."""
        self.create("nvvm.warp_sync", (), {} if mask == _FULL_MASK else {"mask": mask})

    # -- cp.async ---------------------------------------------------------------------------------
    def cp_async_copy(self, dst: Value, src: Value, cache: str, size: int) -> None:
        """cp.async.<cache>.shared.global [dst], [src], size (bytes)."""
        self.create("cp_async.copy", (dst, src), {"cache": cache, "size": size})

    def cp_async_commit_group(self) -> None:
        """cp.async.commit_group."""
        self.create("cp_async.commit_group")

    def cp_async_wait_group(self, n: int) -> None:
        """cp.async.wait_group n: until at most n groups are pending."""
        self.create("cp_async.wait_group", (), {"n": n})

    def cp_async_wait_all(self) -> None:
        """cp.async.wait_all."""
        self.create("cp_async.wait_all")

    def cp_async_mbarrier_arrive(self, bar: Value, noinc: bool) -> None:
        """cp.async.mbarrier.arrive[.noinc].shared.b64 [bar]."""
        self.create("cp_async.mbarrier_arrive", (bar,), {"noinc": noinc})

    # -- TMA ----------------------------------------------------------------------------------
    def tma_load(self, desc: Value, dst: Value, bar: Value, coords: Sequence[Value], box: tuple,
                 nbytes: int) -> None:
        """cp.async.bulk.tensor: the box at coords of desc's tensor -> smem dst; complete_tx
        nbytes on bar."""
        self.create("tma.load", (desc, dst, bar, *coords), {"box": box, "bytes": nbytes})

    def tma_load_multicast(self, desc: Value, dst: Value, bar: Value, mask: Value,
                           coords: Sequence[Value], box: tuple, nbytes: int) -> None:
        """cp.async.bulk.tensor ... .multicast::cluster: the box -> smem dst of every CTA whose
        rank's bit is set in the i32 mask; complete_tx nbytes on each one's bar."""
        self.create("tma.load", (desc, dst, bar, mask, *coords),
                    {"box": box, "bytes": nbytes, "multicast": True})

    def cluster_arrive(self) -> None:
        """barrier.cluster.arrive.release."""
        self.create("cluster.arrive", ())

    def cluster_wait(self) -> None:
        """barrier.cluster.wait.acquire."""
        self.create("cluster.wait", ())

    def cluster_map_shared(self, p: Value, rank: Value) -> Value:
        """mapa.shared::cluster.u64: p's shared::cluster address in the CTA of rank ``rank``."""
        return self.op("cluster.map_shared", (p, rank), (u64,)).result

    def mbarrier_arrive_cluster(self, addr: Value) -> None:
        """mbarrier.arrive.shared::cluster.b64 _, [addr]."""
        self.create("mbarrier.arrive_cluster", (addr,))

    def tma_store(self, desc: Value, src: Value, coords: Sequence[Value], box: tuple,
                  nbytes: int) -> None:
        """cp.async.bulk.tensor: the box in smem src -> desc's tensor at coords (bulk group)."""
        self.create("tma.store", (desc, src, *coords), {"box": box, "bytes": nbytes})

    def tma_commit_group(self) -> None:
        """cp.async.bulk.commit_group."""
        self.create("tma.commit_group")

    def tma_wait_group(self, n: int, read: bool) -> None:
        """cp.async.bulk.wait_group[.read] n."""
        self.create("tma.wait_group", (), {"n": n, "read": read})

    def tma_prefetch_descriptor(self, desc: Value) -> None:
        """prefetch.tensormap [desc]."""
        self.create("tma.prefetch_descriptor", (desc,))

    def tma_bulk_copy(self, dst: Value, src: Value, nbytes: Value, bar: Value) -> None:
        """cp.async.bulk.shared::cluster.global: nbytes from src to smem dst, complete_tx on bar."""
        self.create("tma.bulk_copy", (dst, src, nbytes, bar))

    # -- mma.sync, ldmatrix, stmatrix -------------------------------------------------------------
    def mma_sync(self, shape: str, ab: str, acc: str, operands: Sequence[Value], acc_type: Type,
                 n_acc: int) -> list:
        """d[0..n_acc) = A @ B + C (mma.sync.aligned.<shape>); operands a, b, c, fragment order."""
        return self.create("mma.sync", operands, {"shape": shape, "ab": ab, "acc": acc},
                           result_types=[acc_type] * n_acc).results

    def ldmatrix(self, p: Value, num: int, trans: bool) -> list:
        """2*num fragment elements = ldmatrix.sync.aligned.m8n8.x<num>[.trans] [p]."""
        return self.create("mma.ldmatrix", (p,), {"num": num, "trans": trans},
                           result_types=[p.type.pointee] * (2 * num)).results

    def stmatrix(self, p: Value, values: Sequence[Value], trans: bool) -> None:
        """stmatrix.sync.aligned.m8n8.x<len(values)/2>[.trans] [p], values."""
        self.create("mma.stmatrix", (p, *values), {"num": len(values) // 2, "trans": trans})

    # -- wgmma ------------------------------------------------------------------------------------
    def wgmma_descriptor(self, p: Value, lbo: int, sbo: int, swizzle: int,
                         base_offset: int) -> Value:
        """u64 matrix descriptor of the smem tile at p (wgmma "Matrix Descriptor Format")."""
        attrs = {"lbo": lbo, "sbo": sbo, "swizzle": swizzle, "base_offset": base_offset}
        return self.create("wgmma.descriptor", (p,), attrs).result

    def wgmma_fence(self, values: Sequence[Value]) -> list:
        """wgmma.fence.sync.aligned; values pass through (their registers written before it)."""
        return self.create("wgmma.fence", values, {}).results

    def wgmma_commit_group(self) -> None:
        """wgmma.commit_group.sync.aligned."""
        self.create("wgmma.commit_group")

    def wgmma_wait_group(self, n: int, values: Sequence[Value]) -> list:
        """wgmma.wait_group.sync.aligned n; values pass through, read only after the wait."""
        return self.create("wgmma.wait_group", values, {"n": n}).results

    def wgmma_mma_async(self, operands: Sequence[Value], attrs: dict, acc_type: Type,
                        n_acc: int) -> list:
        """d[0..n_acc) = wgmma.mma_async.sync.aligned (a, b, [scale_d], *d_in) per ``attrs``."""
        return self.create("wgmma.mma_async", operands, attrs,
                           result_types=[acc_type] * n_acc).results
