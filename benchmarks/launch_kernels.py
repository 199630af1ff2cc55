"""Kernels and rows shared by the launch benchmarks (launch_overhead.py, profile_launch.py,
launch_cpu.py): the 4-tensor + int kernel of issue 14's target, the same parameters with an empty
body (no GPU work), 8 tensors + 2 ints; and the per-read rows of one torch tensor."""
import warpstage as ws


@ws.kernel
def four(t0: ws.Tensor, t1: ws.Tensor, t2: ws.Tensor, t3: ws.Tensor, n: ws.Int32):
    i = ws.arch.block_idx()[0] * ws.arch.block_dim()[0] + ws.arch.thread_idx()[0]
    if i < n:
        t3[i] = t0[i] + t1[i] + t2[i]


@ws.kernel
def four_empty(t0: ws.Tensor, t1: ws.Tensor, t2: ws.Tensor, t3: ws.Tensor, n: ws.Int32):
    pass                     # the same call with no GPU work: a row the GPU cannot bound


@ws.kernel
def eight(t0: ws.Tensor, t1: ws.Tensor, t2: ws.Tensor, t3: ws.Tensor, t4: ws.Tensor,
          t5: ws.Tensor, t6: ws.Tensor, t7: ws.Tensor, n: ws.Int32, m: ws.Int32):
    i = ws.arch.block_idx()[0] * ws.arch.block_dim()[0] + ws.arch.thread_idx()[0]
    if i < n:
        t7[i] = t0[i] + t1[i] + t2[i] + t3[i] + t4[i] + t5[i] + t6[i] + m


def tensor_read_rows(t) -> list:
    """(name, fn) rows timing each read the generated call path makes of a torch tensor ``t``,
    and three it does not make, for comparison."""
    return [
        ("  is_cuda", lambda: t.is_cuda),
        ("  get_device()", lambda: t.get_device()),
        ("  stride()", lambda: t.stride()),
        ("  data_ptr()", lambda: t.data_ptr()),
        ("  shape", lambda: t.shape),
        ("  dtype", lambda: t.dtype),
        ("  (not read) device: a torch.device", lambda: t.device),
        ("  (not read) _cdata: the TensorImpl address", lambda: t._cdata),
        ("  (not read) __dlpack_device__()", lambda: t.__dlpack_device__()),
    ]
