"""``kern[grid, block].prepare(*args)``: a launch bound to its arguments, for tight loops and
CUDA graph capture.

Preparing does once what every call of ``kern[grid, block](*args)`` does (read the arguments,
find or compile the specialization, turn the arguments into parameter values) and packs the
values into a parameter buffer of the prepared launch's own (``Launcher.bind``). Then:

- ``prepared()`` launches again with the same values: it checks the guards (a changed global
  the kernel read re-prepares, as a normal call recompiles), reads the stream and makes the
  driver call; nothing is packed or looked up. Where the C-level path runs (jit/c_call.py), the
  stream and the driver call happen in one C call (``bound_stub``), checked against this
  Python path once, when bound; and the call itself is C: each prepared launch has a class of
  its own whose ``__call__`` is that stub's C call (c_env.make_call: the target and the guards
  in C when c_call.c_guards can express them), falling back to the Python ``__call__``.
- ``prepared(*new_args)`` rebinds: the generated call path's readers (jit/fast_call.py)
  compute the new arguments' call signature; when it equals the prepared one (same dtypes,
  shapes, strides, alignment, scalar widths, static values: everything the key and the packed
  shape/stride values depend on), only the values are repacked in place; otherwise the launch is
  prepared anew (the full path: classify, specialize or compile, check, raise).

The stream is read at each launch, as for a normal call: ``stream=`` of the launch object when
given, else torch's current stream when a torch tensor is among the arguments (so a launch inside
``torch.cuda.graph(...)`` or ``torch.cuda.stream(s)`` goes to that stream), else 0. The prepared
launch keeps its arguments alive (the buffer holds their addresses).

On the simulator target there is nothing to bind: preparing checks the arguments and compiles
(as on the GPU: a wrong argument raises at ``prepare``), and a prepared launch calls the full path.
"""
from __future__ import annotations

import sys

from ..frontend.guards import guards_hold
from ..backend.host_stub_ir import MISS
from .c_call import bound_stub, c_guards
from .launch import cuda_values, get_target, stream_handle
from .tracebacks import _user_error

__all__ = ["PreparedLaunch"]

_GUARDS = MISS["guards"]


class PreparedLaunch:
    """A launch of ``launch.kernel`` on ``launch.grid``/``launch.block`` bound to ``args``; see the
    module docstring. ``sig`` is the call signature it was bound for (None when the kernel's
    parameters have no generated reading; then each rebind takes the full path)."""

    def __init__(self, launch, args: tuple):
        self._launch = launch
        # a class of its own, whose __call__ becomes the C call of the bound stub (_bind)
        self.__class__ = type("PreparedLaunch", (PreparedLaunch,),
                              {"__doc__": PreparedLaunch.__doc__, "__module__": __name__})
        self._bind(args)

    def _bind(self, args: tuple) -> None:
        L = self._launch
        kernel = L.kernel
        self.args = args
        self.sig = self._hit = self._bound = self._c = None
        self._set_call()                                # (the Python call until bound)
        self._target = get_target()
        if self._target != "cuda":          # the simulator: check and compile now, as a call would
            kernel.specialize(list(args), L.block, self._target)
            return
        if kernel._launch_type is None:
            kernel[L.grid, L.block]                     # makes kernel._fast
        fast = kernel._fast
        values = None
        if fast is not None and fast.call is not None:
            fast._notice_torch()
            sig, hit = fast.call.lookup(L, *args)
            if sig is not None and (hit is None or (hit[1] and not guards_hold(hit[1]))):
                fast.prepare_entry(L, args, sig)
                sig, hit = fast.call.lookup(L, *args)
            if hit is not None:
                got = fast.call.values(L, hit, *args)
                if got is not None and got[0] == sig:
                    self.sig, self._hit = sig, hit
                    launcher, smem, values = hit[0], got[1], got[3]
                    self._torch_stream = hit[3]
                    self._guards = hit[1]
        if values is None:                              # the full path's values
            ck, leaves = kernel.specialize(list(args), L.block, "cuda")
            launcher, tensors = cuda_values(ck, leaves)
            smem, values = max(ck.dynamic_smem, L.smem), leaves
            self._torch_stream = any(t.kind == "torch" for t in tensors)
            self._guards = ck.guards
        self._bound = launcher.bind(L.grid, L.block, smem, values)
        self._device = launcher.device                  # torch's stream of this GPU
        self._fixed_stream = None if L.stream is None else stream_handle(L.stream)
        self._raw_stream = None
        if self._torch_stream and self._fixed_stream is None:
            from ..runtime.launcher import torch_stream_reader
            self._raw_stream = torch_stream_reader(sys.modules["torch"])
        self._c = bound_stub(self._bound, self._fixed_stream, self._torch_stream,
                             self._stream())       # (stub, context), or None: from Python
        self._set_call()

    def _set_call(self, current: bool = False) -> None:
        """``p()`` in C where it can be: the class's ``__call__`` becomes the bound stub's C call
        (c_env.make_call: no keywords, no arguments, the cuda target, the guards by identity,
        then the stub) when the guards can be checked in C (c_call.c_guards), else the Python
        ``__call__``; the C call falls back to the Python one."""
        cls = type(self)
        triples = c_guards([self._guards], current) if self._c is not None and self._guards \
            else []
        if self._c is None or triples is None:
            call = PreparedLaunch.__call__
        else:
            context = self._c[1]
            context.set_guards(triples)
            context.set_fallback(self._fallback)
            call = context.call
        if cls is not PreparedLaunch and cls.__dict__.get("__call__") is not call:
            cls.__call__ = call

    def _fallback(self, *args, **kwargs):
        if self._c is not None and self._c[1].reason() == _GUARDS and self._guards \
                and guards_hold(self._guards):   # equal by key, other objects: identical now
            self._set_call(current=True)
        return PreparedLaunch.__call__(self, *args, **kwargs)

    def __call__(self, *args):
        """Launch with the bound arguments, or rebind to ``args`` (same kernel parameters) and
        launch. Raises what ``kern[grid, block](*args)`` raises."""
        try:
            if self._bound is None:                     # the simulator: the full path
                if args:
                    self.args = args
                return self._launch(*self.args)
            if args:
                self._rebind(args)
            elif self._guards and not guards_hold(self._guards):
                self._bind(self.args)
            c = self._c
            if c is None or c[0]() is not None:     # the C stub (jit/c_call.py), else Python
                self._bound.launch(self._stream())
        except Exception as e:
            if self._launch.kernel.options.compiler_frames:
                raise
            _user_error(e)
            raise

    def _stream(self) -> int:
        stream = self._fixed_stream
        if stream is None:
            stream = self._raw_stream(self._device) if self._raw_stream is not None else 0
        return stream

    def _rebind(self, args: tuple) -> None:
        hit = self._hit
        if hit is not None and not (self._guards and not guards_hold(self._guards)):
            got = self._launch.kernel._fast.call.values(self._launch, hit, *args)
            if got is not None and got[0] == self.sig:
                self._bound.rebind(got[3])
                self.args = args
                return
        self._bind(args)

    def __repr__(self) -> str:
        L = self._launch
        return (f"<prepared launch of {L.kernel.__qualname__} on grid {L.grid}, block {L.block}"
                f"{'' if self.sig is not None else ' (full path on rebind)'}>")
