"""Launching a specialization on the current target: the GPU (CUDA driver) or the simulator."""
from __future__ import annotations

from ..errors import ArgumentError

__all__ = ["launch", "launch_specialized", "cuda_values", "launch_device", "stream_handle",
           "set_target", "get_target"]


from ..runtime.target import default_target as get_target   # 'cuda' or 'sim'; see its docstring


def set_target(name, *, races=None) -> None:
    """Force the target for this process: 'cuda', 'sim', or None for automatic.

    ``races``: True turns on the simulator's shared-memory race detector for later simulated
    launches (slower; a ``RaceError`` names both accesses of the first race), False turns it
    off, None leaves it (default: off unless ``WARPSTAGE_SIM_RACES=1``). See docs/simulator.md.
    """
    if races and name == "cuda":
        raise ArgumentError("ws.set_target('cuda', races=True): the race detector runs in the CPU "
                            "simulator only. Fix: ws.set_target('sim', races=True).")
    from ..runtime.target import set_target as _set
    _set(name)
    if races is not None:
        from ..sim.run import set_races
        set_races(races)


def launch(kernel, values, grid, block, smem, stream, cluster=None):
    """Specialize ``kernel`` for ``values`` (from the cache, or traced now) and launch it."""
    target = get_target()
    ck, leaves = kernel.specialize(values, block, target)
    return launch_specialized(ck, leaves, target, grid, block, smem, stream, cluster)


capture = None
"""While the autotuner records a candidate's launches (warpstage/tune/capture.py): a function
``capture(ck, target, grid, block, smem)`` called instead of launching."""


def launch_specialized(ck, leaves, target, grid, block, smem, stream, cluster=None):
    """Launch the specialization ``ck`` with its ABI ``leaves`` on ``target`` (or hand it to
    ``capture`` while one is set)."""
    if capture is not None:
        return capture(ck, target, grid, block, max(smem, ck.dynamic_smem))
    if ck.dynamic_smem > smem:
        smem = ck.dynamic_smem
    if target == "cuda":
        return _launch_cuda(ck, leaves, grid, block, smem, stream, cluster)
    return _launch_sim(ck, leaves, grid, block, smem, cluster)


def stream_handle(stream) -> int:
    """The int ``CUstream`` of a launch's ``stream=``: an int as is, else the object's
    ``cuda_stream`` (torch) or ``ptr`` (cupy), else ``int(stream)``."""
    if isinstance(stream, int):
        return stream
    for attr in ("cuda_stream", "ptr"):
        handle = getattr(stream, attr, None)
        if handle is not None:
            return handle
    try:
        return int(stream)
    except (TypeError, ValueError):
        raise ArgumentError(f"stream= must be an int CUstream handle or an object with "
                            f"cuda_stream (torch) or ptr (cupy); got {stream!r}") from None


_rt = None   # (TensorArg, require_device, current_stream, TensorMapArg), on the first GPU launch


def _runtime():
    global _rt
    from ..runtime.launcher import current_stream
    from ..runtime.tensormap import TensorMapArg
    from ..runtime.tensors import TensorArg, require_device
    _rt = (TensorArg, require_device, current_stream, TensorMapArg)
    return _rt


def _tensormap_slots(ck) -> tuple:
    """The ABI slots of ``ck`` that hold a TMA descriptor's 128-byte map (kept on ``ck``)."""
    slots = ck.__dict__.get("_tensormap_slots")
    if slots is None:
        from ..ir.types import TensorMapType
        slots = ck._tensormap_slots = tuple(i for i, (_, t) in enumerate(ck.abi)
                                            if isinstance(t, TensorMapType))
    return slots


def cuda_values(ck, leaves) -> tuple:
    """(Launcher, the tensors ordering the launch) for the specialization ``ck``, with its ABI
    ``leaves`` turned into launch values in place (a tensor's TensorArg -> its address, a TMA
    descriptor -> its encoded 128-byte map). The Launcher is the one of the GPU the tensors are
    on (:func:`launch_device`). Raises ``ArgumentError`` for a tensor in host memory or tensors
    on two GPUs."""
    TensorArg, require_device, current_stream, TensorMapArg = _rt or _runtime()
    tensors, names = [], []
    for i in ck.pointer_slots:
        leaf = leaves[i]
        if type(leaf) is TensorArg:
            if leaf.device != "cuda":
                require_device(leaf, _slot_param(ck, i))
            tensors.append(leaf)
            names.append(_slot_param(ck, i))
            leaves[i] = leaf.data_ptr
    for i in _tensormap_slots(ck):
        leaf = leaves[i]
        if type(leaf) is TensorMapArg:          # a descriptor's tensor orders the launch too
            ta = leaf.tensor_arg
            leaves[i] = leaf.desc.encode()      # kept in the descriptor; explains a CPU tensor
            tensors.append(ta)
            names.append(_slot_param(ck, i))
    device = launch_device(tensors, names)
    entry = ck._devices.get(device)
    launcher = entry[2] if entry is not None else ck.cuda_launcher(device)[1]
    return launcher, tensors


def _slot_param(ck, slot: int) -> str:
    return ck.abi[slot][0].split(".")[0]


def launch_device(tensors, names) -> int:
    """The GPU ordinal a launch runs on: the device of its tensors (``TensorArg``s on 'cuda',
    named ``names`` in errors), 0 without tensors. Raises ``ArgumentError`` naming two
    parameters on different GPUs: a kernel reads its tensors through one device's memory."""
    device = None
    for ta, name in zip(tensors, names):
        index = ta.device_index or 0
        if device is None:
            device, first = index, name
        elif index != device:
            raise ArgumentError(
                f"parameter {first!r} is on cuda:{device} and parameter {name!r} on "
                f"cuda:{index}; a launch runs on one GPU, the device of its tensor arguments. "
                f"Fix: move them to one device first, e.g. {name}.to('cuda:{device}').")
    return 0 if device is None else device


def _launch_cuda(ck, leaves, grid, block, smem, stream, cluster=None):
    launcher, tensors = cuda_values(ck, leaves)
    if stream is None:
        stream = _rt[2](tensors)
    elif not isinstance(stream, int):
        stream = stream_handle(stream)
    if cluster is not None:
        launcher.launch_cluster(grid, block, cluster, smem, stream, leaves)
    else:
        launcher.launch(grid, block, smem, stream, leaves)


def _launch_sim(ck, leaves, grid, block, smem, cluster=None):
    from .. import sim
    from ..runtime.tensors import TensorArg
    memory = sim.Memory()
    copies = []
    from ..runtime.tensormap import TensorMapArg
    for i, leaf in enumerate(leaves):
        if isinstance(leaf, TensorArg):
            host, writeback = _host_array(leaf, ck.abi[i][0].split(".")[0])
            leaves[i] = memory.register(host)
            if writeback is not None:
                copies.append(writeback)
        elif isinstance(leaf, TensorMapArg):        # a TMA descriptor: map its tensor
            leaf.desc.check_unmoved()
            host, writeback = _host_array(leaf.tensor_arg, ck.abi[i][0].split(".")[0])
            leaves[i] = leaf.sim_map(memory.register(host))
            if writeback is not None:
                copies.append(writeback)
    result = sim.run(ck.module, ck.name, grid, block, leaves, memory, smem_bytes=smem,
                     cluster=cluster)
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
        if t.dtype == torch.bfloat16:                  # numpy has no bf16 nor fp8: the bits
            raw = t.view(torch.int16)
        elif t.dtype in (torch.float8_e4m3fn, torch.float8_e5m2):
            raw = t.view(torch.uint8)
        else:
            raw = t
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
