"""Per-call plans of ``ws.ops`` (matmul, scaled_matmul, flash_attention): a repeated call does
its checks and choices once.

An op call on the GPU reads its tensors, checks them, chooses a policy and a grid, builds TMA
descriptors and launches one or two kernels through the kernel's full call path (the matmul
kernel's epilogue tuple has no generated reading). All of that is a function of the call's
*facts*: per torch tensor its shape, strides, dtype, device and address mod 16 (what decides
TMA compatibility), and the type and value of every other argument. So the first call with
given facts runs the op's own (eager) code while a recorder watches its launches
(:func:`launch`), and keeps a :class:`Plan`: per launch the compiled kernel's Launcher, grid,
block, shared memory, guards and its ABI values with the slots that hold data named (a tensor
address, or a descriptor's 128-byte map, by the call's tensor it points into); the tensors it
allocates; what it returns. A later call with the same facts
(:func:`run`) only reads the facts, finds the plan, and launches: one ``BoundLaunch`` per
recorded launch, packed once per set of addresses: the launches of the last 16 sets are kept
with their buffers and C stubs, so a rotation of inputs and outputs launches without packing;
a descriptor at a new address comes from the kept descriptors of ``descriptors.py``, or is
the recorded map with its address replaced) through its C stub
(``jit/c_call.bound_stub``: torch's current stream and the driver call in C) where the C call
path runs, else from Python.

Why a plan launch is what the op would launch: the op's decisions read nothing but the facts
(the key; a value that cannot be hashed takes the op's code), the launches' values are the
op's own, recorded, and only the data slots change, to the addresses of the same tensors. A
plan is made only when every address in a launch is one of the call's tensors (two of them at
one address, such as one scale tensor passed twice, are a condition of the plan, checked per
call) or a tensor the op allocated (:func:`fresh`: a new output, a split-K workspace), on a
path it declared :func:`plannable`, and every result is written by a launch; a copy, a padded
output or host work after the launch makes the facts "not planned" and the op's code runs
each time. The guards of
the compiled kernels (the globals their traces read) are checked on every plan launch; when one
fails the plan is dropped and the op's code runs (and recompiles). Only the cuda target, torch
tensors of exactly ``torch.Tensor``, outside torch.compile and the autotuner's capture.
``tests/ops/test_op_plans.py`` compares plan launches with the op's code call by call.
"""
from __future__ import annotations

import sys
import threading

from ..frontend.guards import guard_checker
from ..jit import launch as jit_launch
from ..jit.c_call import bound_stub
from ..jit.c_env import stub_loading
from ..runtime import target as target_module
from ..runtime.tensors import TensorArg
from ..runtime.tensormap import TensorMapArg
from .descriptors import descriptor_at

__all__ = ["run", "record", "launch", "fresh", "kept", "stream_zeros", "plannable", "clear", "Plan", "NOT_PLANNED", "ENABLED",
           "STATS"]

ENABLED = True
"""False: every call runs the op's own code (the reference of the call-by-call tests)."""
NOT_PLANNED = object()
"""A plan table's value for facts whose calls the recorder cannot reproduce (a copy, ...)."""
_PLANS: dict = {}
"""(op, facts...) -> Plan or NOT_PLANNED. tests/fake_gpu.py gives each test a fresh one."""
_MAX_PLANS = 256
_MAX_VALUES = 16                # address sets whose launch values a plan keeps
STATS = {"plans": 0, "values": 0, "packs": 0}
"""Plans made, launch values computed for a new set of addresses, and parameter buffers packed
(one per new set of addresses; for the tests that count per-call work)."""
_local = threading.local()      # .recorder: the Recorder of the op call running on this thread


def facts(op: str, tensors, others):
    """(key, addresses) of a call: ``tensors`` torch tensors (or None), ``others`` the other
    arguments, hashable; None when the call cannot have a plan (not the cuda target, not plain
    torch tensors, torch.compile tracing, the autotuner capturing)."""
    torch = sys.modules.get("torch")
    if (not ENABLED or torch is None or jit_launch.capture is not None
            or target_module.default_target() != "cuda" or torch.compiler.is_compiling()):
        return None
    T = torch.Tensor
    key, ptrs = [op, others], []
    for t in tensors:
        if t is None:
            key.append(None)
            continue
        if type(t) is not T:
            return None
        p = t.data_ptr()
        key.append((t.shape, t.stride(), t.dtype, t.get_device(), p & 15))
        ptrs.append(p)
    return tuple(key), tuple(ptrs)


def run(op: str, tensors: tuple, others: tuple, eager):
    """``eager()`` (the op's own code) or, for facts seen before, the plan's launches; returns
    what ``eager`` returns. ``tensors``: the call's tensor arguments in a fixed order (None for
    an absent optional one), ``others``: its other arguments, hashable, such that equal tuples
    mean equal decisions (the callers pair values with their types: True == 1 in Python)."""
    got = facts(op, tensors, others)
    if got is None:
        return eager()
    key, ptrs = got
    try:
        plan = _PLANS.get(key)
    except TypeError:                   # an argument that cannot be hashed: no plan
        return eager()
    if plan is None:
        return record(key, ptrs, tensors, eager)
    if plan is NOT_PLANNED:
        return eager()
    result = plan.run(ptrs, tensors)
    if result is OTHER_LAYOUT:          # the op's code decides (its checks raise, or it runs)
        return eager()
    if result is _STALE:                # the op's code (it recompiles), recorded anew
        _PLANS.pop(key, None)
        return record(key, ptrs, tensors, eager)
    return result


def clear() -> None:
    """Forget every plan. The ops' tables (``attention_plan.WGMMA_MIN_WORK``,
    ``WGMMA_DEFAULTS``, ``matmul_config``'s choices) are read by the op's code at the first
    call with given facts and recorded with it: after changing one, call this."""
    _PLANS.clear()


def record(key, ptrs, tensors, eager):
    """Run ``eager()`` with a recorder on its launches and keep the plan it allows."""
    outer = getattr(_local, "recorder", None)
    rec = _local.recorder = Recorder()
    try:
        result = eager()
    finally:
        _local.recorder = outer
    plan = rec.plan(ptrs, tensors, result)
    if len(_PLANS) >= _MAX_PLANS:
        _PLANS.clear()
    _PLANS[key] = plan
    if plan is not NOT_PLANNED:
        STATS["plans"] += 1
    return result


def launch(kernel, grid, block, args: tuple) -> None:
    """``kernel[grid, block](*args)``, seen by the recorder of the op call running (if any)."""
    rec = getattr(_local, "recorder", None)
    if rec is None or rec.failed:
        kernel[grid, block](*args)
    else:
        rec.launch(kernel, grid, block, args)


class _Step:
    """One recorded launch: Launcher, dims, smem, guards, ABI values, and the data slots as
    (slot, address, descriptor or None)."""

    __slots__ = ("launcher", "grid", "block", "smem", "guards", "values", "slots", "torch_stream")


class Recorder:
    """The launches of one op call (:func:`launch` hands them here), the tensors it allocated
    for its kernels (:func:`fresh`) and whether it ended on a path whose host work is only
    those (:func:`plannable`)."""

    def __init__(self):
        self.steps, self.fresh, self.failed, self.ok = [], [], False, False
        self.kept = []

    def launch(self, kernel, grid, block, args) -> None:
        L = kernel[grid, block]
        if L.cluster is not None or L.stream is not None:
            self.failed = True
            return L(*args)
        ck, leaves = kernel.specialize(kernel._bind(args, {}), L.block, "cuda")
        raw = list(leaves)
        jit_launch.launch_specialized(ck, leaves, "cuda", L.grid, L.block, L.smem, L.stream)
        s = _Step()
        values = list(raw)
        s.launcher, tensors = jit_launch.cuda_values(ck, values)
        s.grid, s.block, s.smem, s.guards = L.grid, L.block, max(ck.dynamic_smem, L.smem), ck.guards
        s.values, s.torch_stream = values, any(t.kind == "torch" for t in tensors)
        s.slots = [(i, x.data_ptr, None) if type(x) is TensorArg else
                   (i, x.tensor_arg.data_ptr, x.desc) for i, x in enumerate(raw)
                   if type(x) is TensorArg or type(x) is TensorMapArg]
        self.steps.append(s)

    def plan(self, ptrs, tensors, result):
        """The Plan of this call (``ptrs``: its tensors' addresses) or NOT_PLANNED."""
        torch = sys.modules["torch"]
        args = [i for i, t in enumerate(tensors) if t is not None]   # the tensors at ptrs
        first = tensors[args[0]]
        outs = result if isinstance(result, tuple) else (result,)
        if self.failed or not self.ok or not self.steps or not all(
                type(r) is torch.Tensor for r in outs):
            return NOT_PLANNED
        made = [t for t, _ in self.fresh]
        if any(t.device != first.device for t in made):
            return NOT_PLANNED
        where, aliases = {}, []                     # address -> index into ptrs + made
        for i, p in enumerate(tuple(ptrs) + tuple(t.data_ptr() for t in made)):
            if p in where:
                if i >= len(ptrs):
                    return NOT_PLANNED              # a new tensor at an argument's address
                aliases.append((where[p], i))       # one memory passed twice (scale_a is scale_b)
            else:
                where[p] = i
        returns = []
        for r in outs:
            i = next((i for i in args if tensors[i] is r), None)
            j = next((j for j, t in enumerate(made) if t is r), None)
            if i is None and j is None:
                return NOT_PLANNED                  # made on the host: not reproducible
            returns.append(("in", i) if i is not None else ("new", j))
        constant = {t.data_ptr() for t in self.kept if t.data_ptr() not in where}
        for s in self.steps:
            try:                        # a kept tensor's address stays what was recorded
                s.slots = tuple((i, where[p], d) for i, p, d in s.slots if p not in constant)
            except KeyError:                        # a copy: not reproducible
                return NOT_PLANNED
        written = {src for s in self.steps for _, src, _ in s.slots}
        if any(where[r.data_ptr()] not in written for r in outs):
            return NOT_PLANNED                      # a result no launch wrote
        new = tuple((tuple(t.shape), t.dtype, zeros) for t, zeros in self.fresh)
        plan = Plan(tuple(self.steps), new, tuple(returns), isinstance(result, tuple),
                    tuple(aliases), args[0], _overlaps(tensors, ptrs, args, returns))
        plan.kept = tuple(self.kept)            # alive as long as the plan launches into them
        return plan


def _span(t) -> int:
    """Bytes from a torch tensor's first element to the end of its last (0 when empty)."""
    if t.numel() == 0:
        return 0
    return t.element_size() * (1 + sum((n - 1) * abs(st) for n, st in zip(t.shape, t.stride())))


def _overlaps(tensors, ptrs, args, returns) -> tuple:
    """How each argument the call wrote (an ``out=``) lay against every other argument, as the
    plan's condition: (i, j, span of i, span of j, None when their byte ranges were apart, else
    the address of j less that of i), ``i`` and ``j`` indices into ``ptrs``. The op's checks
    passed for that layout (an ``out`` over an operand is an error, ``Residual(out)`` in place
    is not); a later call keeps the plan only with the same layout (:meth:`Plan.run`)."""
    index = {a: n for n, a in enumerate(args)}
    out = []
    for kind, i in returns:
        if kind != "in":
            continue
        si = _span(tensors[i])
        for j in args:
            if j == i:
                continue
            sj, d = _span(tensors[j]), ptrs[index[j]] - ptrs[index[i]]
            apart = si == 0 or sj == 0 or d >= si or -d >= sj
            out.append((index[i], index[j], si, sj, None if apart else d))
    return tuple(out)


def fresh(t, zeros: bool = False):
    """Tell the recorder (if any) that ``t`` is a new contiguous tensor of the op (``zeros``:
    made by torch.zeros, else torch.empty) written only by its kernels; returns ``t``. A plan
    allocates it anew on each call, on the device of the call's first tensor."""
    rec = getattr(_local, "recorder", None)
    if rec is not None:
        torch = sys.modules.get("torch")
        if torch is None or type(t) is not torch.Tensor or not t.is_contiguous():
            rec.failed = True
        else:
            rec.fresh.append((t, zeros))
    return t


_STREAM_ZEROS: dict = {}
"""(device index, raw stream, shape, torch dtype) -> the zeroed scratch of :func:`stream_zeros`."""


_READ_STREAM: list = []
"""[torch's current-stream reader] (``runtime.streams.torch_stream_reader``), made at first use."""


def stream_zeros(shape: tuple, dtype, device):
    """A zeroed scratch tensor on torch ``device`` that the op's kernels leave zero (the tile
    counters of a dynamic tile scheduler), one per stream: made once per (device, current
    stream, shape, dtype) and handed to every later call on that stream, so launches queued on
    one stream share it one after another while two streams never share one, and no zeroing
    kernel runs per call. A plan looks it up per call for the stream current then (the
    recorder notes it like a :func:`fresh` tensor). A CPU tensor (the simulator) gets plain
    zeros."""
    torch = sys.modules["torch"]
    if device.type != "cuda":
        return fresh(torch.zeros(shape, dtype=dtype, device=device), zeros=True)
    if not _READ_STREAM:
        from ..runtime.streams import torch_stream_reader
        _READ_STREAM.append(torch_stream_reader(torch))
    index = device.index if device.index is not None else torch.cuda.current_device()
    key = (index, _READ_STREAM[0](index), tuple(shape), dtype)
    t = _STREAM_ZEROS.get(key)
    if t is None:
        t = _STREAM_ZEROS[key] = torch.zeros(shape, dtype=dtype, device=device)
    rec = getattr(_local, "recorder", None)
    if rec is not None:
        rec.fresh.append((t, "stream"))
    return t


def kept(t):
    """Tell the recorder (if any) that ``t`` is a tensor the op keeps across calls (the stream-K
    workspace and counters, left as the next call needs them): a plan launches into the same
    memory each call, and holds ``t``. Returns ``t``."""
    rec = getattr(_local, "recorder", None)
    if rec is not None:
        rec.kept.append(t)
    return t


def plannable(ok: bool = True) -> None:
    """Tell the recorder (if any) that the op call ends on a path whose only work besides its
    checks is its launches into its tensors and the tensors it marked :func:`fresh` (``ok``
    False: host work follows after all, such as a copy into ``out``; the last word counts)."""
    rec = getattr(_local, "recorder", None)
    if rec is not None:
        rec.ok = ok


_STALE = object()
OTHER_LAYOUT = object()
"""What :meth:`Plan.run` returns for a call whose ``out=`` lies otherwise against its inputs
than in the recorded call (over one of them, say): the op's own code runs it, or raises."""


class Plan:
    """What a call with given facts launches (see the module docstring): ``steps`` (recorded
    launches), ``new`` ((shape, torch dtype, zeros) of each tensor the call allocates, on the
    device of its first tensor: zeros False for torch.empty, True for torch.zeros, "stream" for
    the current stream's :func:`stream_zeros`), ``returns`` (per result, ('in', i): the i-th tensor
    argument, ('new', j): the j-th allocation), ``tuple_result``."""

    def __init__(self, steps, new, returns, tuple_result, aliases=(), first=0, overlaps=()):
        self.steps, self.new, self.returns, self.tuple_result = steps, new, returns, tuple_result
        self.first = first          # the tensor whose device the new tensors are made on
        self.aliases = aliases      # (i, j): the i-th and j-th tensors were one memory
        self.overlaps = overlaps    # how a written argument lay against the others (_overlaps)
        self.guards = tuple(s.guards for s in steps if s.guards)
        self.checks = tuple(guard_checker(g) for g in self.guards)
        self.bound: dict = {}       # addresses -> per step (BoundLaunch, C stub, stream reader)
        self.pending: set = set()   # addresses whose C stubs wait for the stub's load
        self.lock = threading.Lock()

    def run(self, ptrs, tensors):
        """Launch for ``tensors`` (the call's, None for an absent one) at ``ptrs``; returns the
        op's result, or _STALE when a guard of a kernel fails (the op's code then runs and
        recompiles)."""
        for check in self.checks:
            if not check():
                return _STALE
        if self.aliases:                # the slots of j read i's address: both must be one
            for i, j in self.aliases:
                if ptrs[i] != ptrs[j]:
                    return _STALE
        for i, j, si, sj, d in self.overlaps:       # an out= over an input: the op's checks
            got = ptrs[j] - ptrs[i]
            if (d is None and -sj < got < si) or (d is not None and got != d):
                return OTHER_LAYOUT
        made = ()
        if self.new:
            torch = sys.modules["torch"]
            device = tensors[self.first].device
            made = tuple(stream_zeros(shape, dtype, device) if zeros == "stream" else
                         (torch.zeros if zeros else torch.empty)(shape, dtype=dtype,
                                                                 device=device)
                         for shape, dtype, zeros in self.new)
            ptrs = ptrs + tuple(t.data_ptr() for t in made)
        with self.lock:             # an entry may be repacked (evicted): look up, launch as one
            launches = self.bound.get(ptrs)
            if launches is None:
                launches = self._bind(ptrs)
            elif self.pending and ptrs in self.pending:
                launches = self._stubs(ptrs, launches)
            for b, stub, stream in launches:
                if stub is None or stub[0]() is not None:
                    b.launch(stream())
        if not self.tuple_result:
            kind, j = self.returns[0]
            return made[j] if kind == "new" else tensors[j]
        return tuple([made[j] if kind == "new" else tensors[j] for kind, j in self.returns])

    def _bind(self, ptrs) -> tuple:
        """The launches (per step: BoundLaunch, its C stub or None, stream reader) of the tensors
        at ``ptrs``, seen for the first time: their values packed into buffers of their own,
        kept for the next call at these addresses (a rotation of inputs and outputs, as a model's
        activations, launches without packing). Past ``_MAX_VALUES`` address sets the oldest
        entry's buffers are repacked for these (their C stubs read those buffers). A descriptor
        at a new address is a kept one or the recorded one's map with the address replaced
        (``descriptors.descriptor_at``)."""
        values = []
        for s in self.steps:
            v = list(s.values)
            for slot, src, desc in s.slots:
                v[slot] = ptrs[src] if desc is None else descriptor_at(desc, ptrs[src]).encode()
            values.append(v)
        STATS["values"] += 1
        STATS["packs"] += 1
        if len(self.bound) >= _MAX_VALUES:          # the oldest entry's buffers, repacked
            oldest = next(iter(self.bound))
            launches = self.bound.pop(oldest)
            for (b, _, _), v in zip(launches, values):
                b.rebind(v)
            if oldest in self.pending:
                self.pending.discard(oldest)
                self.pending.add(ptrs)
        else:
            launches = []
            for s, v in zip(self.steps, values):
                b = s.launcher.bind(s.grid, s.block, s.smem, v)
                stream = _stream_reader(s.launcher.device) if s.torch_stream else _no_stream
                launches.append((b, bound_stub(b, None, s.torch_stream, stream(), wait=False),
                                 stream))
            launches = tuple(launches)
            if stub_loading() and any(stub is None for _, stub, _ in launches):
                self.pending.add(ptrs)
        self.bound[ptrs] = launches
        return launches

    def _stubs(self, ptrs, launches) -> tuple:
        """``launches`` with their C stubs, made now if the stub's load (which a plan's first
        launches do not wait for: from Python meanwhile) has finished."""
        if stub_loading():
            return launches
        self.pending.discard(ptrs)
        launches = tuple((b, stub or bound_stub(b, None, s.torch_stream, stream()), stream)
                         for s, (b, stub, stream) in zip(self.steps, launches))
        self.bound[ptrs] = launches
        return launches


def _no_stream() -> int:
    return 0


def _stream_reader(device: int):
    """() -> torch's current raw stream on ``device``."""
    from ..runtime.launcher import torch_stream_reader
    read = torch_stream_reader(sys.modules["torch"])
    return lambda: read(device)
