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
  prepared anew (the full path: classify, specialize or compile, check, raise). Arguments bind
  as a call binds them (by position or by name, defaults filled in), and a rebind that raises
  leaves the launch bound as it was: the new state is computed whole before it is installed
  (``_binding``), and an in-place repack that fails part-way repacks the previous values.

The stream is read at each launch, as for a normal call: ``stream=`` of the launch object when
given, else torch's current stream when a torch tensor is among the arguments (so a launch inside
``torch.cuda.graph(...)`` or ``torch.cuda.stream(s)`` goes to that stream), else 0. The prepared
launch keeps its arguments alive (the buffer holds their addresses).

On the simulator target there is nothing to bind: preparing checks the arguments and compiles
(as on the GPU: a wrong argument raises at ``prepare`` or ``prepared(*new_args)``, before the
launch), and a prepared launch calls the full path.
"""
from __future__ import annotations

import sys

from ..frontend.guards import guards_hold
from ..backend.host_stub_ir import MISS
from .c_call import bound_stub, c_guards
from .launch import cuda_values, get_target, launch as full_launch, stream_handle
from .tracebacks import _user_error

__all__ = ["PreparedLaunch"]

_GUARDS = MISS["guards"]


def _stream(fixed, raw, device) -> int:
    """The stream of a launch: ``fixed`` (the launch object's ``stream=``) when given, else
    torch's current stream on ``device`` when ``raw`` (its reader) is set, else 0."""
    if fixed is not None:
        return fixed
    return raw(device) if raw is not None else 0


class PreparedLaunch:
    """A launch of ``launch.kernel`` on ``launch.grid``/``launch.block`` bound to ``args`` (the
    value of each kernel parameter, in order); see the module docstring. ``sig`` is the call
    signature it was bound for (None when the kernel's parameters have no generated reading;
    then each rebind takes the full path)."""

    def __init__(self, launch, args: tuple, kwargs: dict):
        self._launch = launch
        name, params = launch.kernel.__name__, ", ".join(launch.kernel.param_names)
        self._fix = (f"p({params}) with p = {name}[grid, block].prepare(...): all the kernel's "
                     "arguments, by position or by name, or none to launch with the bound ones.")
        # a class of its own, whose __call__ becomes the C call of the bound stub (_bind)
        self.__class__ = type("PreparedLaunch", (PreparedLaunch,),
                              {"__doc__": PreparedLaunch.__doc__, "__module__": __name__})
        self._bind(self._values(args, kwargs, f"{name}[grid, block].prepare({params}), one "
                                              "value per parameter, by position or by name."))

    def _values(self, args: tuple, kwargs: dict, fix: str = "") -> tuple:
        """The value of each kernel parameter for a call's arguments, bound as
        ``kern[grid, block](*args, **kwargs)`` binds them (keywords, defaults); raises its
        ArgumentError (with ``fix``, default: how ``p(...)`` is called)."""
        return tuple(self._launch.kernel._bind(args, kwargs, fix or self._fix))

    def _bind(self, values: tuple) -> None:
        """Bind to ``values`` (:meth:`_values`): everything is computed first and installed at
        once, so a bind that raises (a wrong argument, a failed compile) leaves the launch
        bound as it was."""
        vars(self).update(self._binding(values))
        self._set_call()

    def _binding(self, values: tuple) -> dict:
        """The attributes of a launch bound to ``values``; changes nothing of ``self``."""
        L = self._launch
        kernel = L.kernel
        target = get_target()
        state = dict(args=values, sig=None, _hit=None, _bound=None, _c=None, _guards=None,
                     _target=target)
        if target != "cuda":            # the simulator: check and compile now, as a call would
            kernel.specialize(list(values), L.block, target)
            return state
        if kernel._launch_type is None:
            kernel[L.grid, L.block]                     # makes kernel._fast
        fast = kernel._fast
        packed = None
        if fast is not None and fast.call is not None:
            fast._notice_torch()
            sig, hit = fast.call.lookup(L, *values)
            if sig is not None and (hit is None or (hit[1] and not guards_hold(hit[1]))):
                fast.prepare_entry(L, values, sig)
                sig, hit = fast.call.lookup(L, *values)
            if hit is not None:
                got = fast.call.values(L, hit, *values)
                if got is not None and got[0] == sig:
                    launcher, smem, packed = hit[0], got[1], got[3]
                    state.update(sig=sig, _hit=hit, _torch_stream=hit[3], _guards=hit[1])
        if packed is None:                              # the full path's values
            ck, leaves = kernel.specialize(list(values), L.block, "cuda")
            launcher, tensors = cuda_values(ck, leaves)
            smem, packed = max(ck.dynamic_smem, L.smem), leaves
            state.update(_torch_stream=any(t.kind == "torch" for t in tensors),
                         _guards=ck.guards)
        bound = launcher.bind(L.grid, L.block, smem, packed)
        fixed = None if L.stream is None else stream_handle(L.stream)
        raw = None
        if state["_torch_stream"] and fixed is None:
            from ..runtime.launcher import torch_stream_reader
            raw = torch_stream_reader(sys.modules["torch"])
        state.update(_bound=bound, _packed=packed, _device=launcher.device,  # torch's stream
                     _fixed_stream=fixed, _raw_stream=raw)                    # of this GPU
        state["_c"] = bound_stub(bound, fixed, state["_torch_stream"],
                                 _stream(fixed, raw, launcher.device))   # (stub, context), or
        return state                                                     # None: from Python

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

    def __call__(self, *args, **kwargs):
        """Launch with the bound arguments, or rebind to new ones (all the kernel's arguments,
        by position or by name, as ``kern[grid, block](...)`` takes them) and launch. Raises
        what ``kern[grid, block](...)`` raises; a call that raises leaves the launch bound to
        its previous arguments."""
        try:
            if args or kwargs:
                self._rebind(self._values(args, kwargs))
            elif self._guards and not guards_hold(self._guards):
                self._bind(self.args)
            if self._bound is None:                     # the simulator: the full path
                L = self._launch
                return full_launch(L.kernel, list(self.args), L.grid, L.block, L.smem, L.stream)
            c = self._c
            if c is None or c[0]() is not None:     # the C stub (jit/c_call.py), else Python
                self._bound.launch(_stream(self._fixed_stream, self._raw_stream, self._device))
        except Exception as e:
            if self._launch.kernel.options.compiler_frames:
                raise
            _user_error(e)
            raise

    def _rebind(self, values: tuple) -> None:
        """Bind to ``values``: repacked in place when their call signature is the bound one,
        else prepared anew (:meth:`_bind`); either way, left as it was when it raises."""
        hit = self._hit
        if hit is not None and not (self._guards and not guards_hold(self._guards)):
            got = self._launch.kernel._fast.call.values(self._launch, hit, *values)
            if got is not None and got[0] == self.sig:
                try:
                    self._bound.rebind(got[3])
                except BaseException:
                    self._bound.rebind(self._packed)    # (a failed pack wrote part of it)
                    raise
                self.args, self._packed = values, got[3]
                return
        self._bind(values)

    def __repr__(self) -> str:
        L = self._launch
        return (f"<prepared launch of {L.kernel.__qualname__} on grid {L.grid}, block {L.block}"
                f"{'' if self.sig is not None else ' (full path on rebind)'}>")
