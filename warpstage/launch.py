"""Launching a specialization on the current target: the GPU (CUDA driver) or the simulator."""
from __future__ import annotations

from .errors import ArgumentError

__all__ = ["launch", "set_target", "get_target"]


from .runtime.target import default_target as get_target   # 'cuda' or 'sim'; see its docstring


def set_target(name) -> None:
    """Force the target for this process: 'cuda', 'sim', or None for automatic."""
    from .runtime.target import set_target as _set
    _set(name)


def launch(kernel, values, grid, block, smem, stream, cluster=None):
    target = get_target()
    ck, leaves = kernel.specialize(values, block, target)
    if ck.dynamic_smem > smem:
        smem = ck.dynamic_smem
    if target == "cuda":
        return _launch_cuda(ck, leaves, grid, block, smem, stream, cluster)
    return _launch_sim(ck, leaves, grid, block, smem)


_rt = None   # (TensorArg, require_device, current_stream), imported on the first GPU launch


def _runtime():
    global _rt
    from .runtime.launcher import current_stream
    from .runtime.tensors import TensorArg, require_device
    _rt = (TensorArg, require_device, current_stream)
    return _rt


def _launch_cuda(ck, leaves, grid, block, smem, stream, cluster=None):
    TensorArg, require_device, current_stream = _rt or _runtime()
    launcher = ck._cuda[2] if ck._cuda is not None else ck.cuda_launcher()[1]
    tensors = []
    for i in ck.pointer_slots:
        leaf = leaves[i]
        if type(leaf) is TensorArg:
            if leaf.device != "cuda" or leaf.device_index:
                require_device(leaf, ck.abi[i][0].split(".")[0])
            tensors.append(leaf)
            leaves[i] = leaf.data_ptr
    if stream is None:
        stream = current_stream(tensors)
    elif not isinstance(stream, int):
        stream = getattr(stream, "cuda_stream", None) or getattr(stream, "ptr", None) or int(stream)
    if cluster is not None:
        launcher.launch_cluster(grid, block, cluster, smem, stream, leaves)
    else:
        launcher.launch(grid, block, smem, stream, leaves)


def _launch_sim(ck, leaves, grid, block, smem):
    from . import sim
    from .runtime.tensors import TensorArg
    memory = sim.Memory()
    copies = []
    for i, leaf in enumerate(leaves):
        if isinstance(leaf, TensorArg):
            host, writeback = _host_array(leaf, ck.abi[i][0].split(".")[0])
            leaves[i] = memory.register(host)
            if writeback is not None:
                copies.append(writeback)
    result = sim.run(ck.module, ck.name, grid, block, leaves, memory, smem_bytes=smem)
    for wb in copies:
        wb()
    return result


def _host_array(ta, pname):
    """A numpy view of a tensor's memory for the simulator, and a write-back for device tensors."""
    import numpy as np
    obj = ta.owner
    if ta.kind == "torch":
        import sys
        torch = sys.modules["torch"]
        t = obj.detach()
        raw = t.view(torch.int16) if t.dtype == torch.bfloat16 else t   # numpy has no bf16
        if ta.device == "cpu":
            return raw.numpy(), None
        # keep the device strides: the kernel indexes with the TensorArg's strides
        host = torch.empty_strided(raw.shape, raw.stride(), dtype=raw.dtype, device="cpu")
        host.copy_(raw)
        return host.numpy(), (lambda: raw.copy_(host))
    if ta.device == "cpu":
        return np.asarray(obj), None
    if ta.kind == "cupy":
        host = obj.get()
        return host, (lambda: obj.set(host))
    raise ArgumentError(f"parameter '{pname}': the simulator cannot read a {ta.kind} device tensor; "
                        "pass a numpy array or a torch/cupy tensor")
