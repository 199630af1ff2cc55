"""The C-level call path: a cache-hit launch read, matched, packed and launched in compiled code.

Per launch configuration (grid, block, smem, ``stream=``) of a kernel, a *state* holds a stub
context (jit/c_env.py; the stub is backend/host_stub.py) whose entries are the specializations
that configuration has launched. ``kern[grid, block](*args)`` then runs, in Python, only the
guards (the globals the traces read) and one call of the stub, which reads the arguments in C
(torch tensors through torch's C DLPack exchange API), finds the entry whose facts they match,
packs the parameters and calls ``cuLaunchKernel`` on torch's current stream (or ``stream=``).

Anything the stub does not launch (another tensor type, a float, a descriptor, keywords, a
miss, a refused launch: host_stub.MISS) goes to the generated Python call path
(jit/fast_call.py), which launches, compiles or raises exactly as before. So the C path only
ever launches what the Python path would have launched:

- an entry's facts are read by the stub itself from the call that created it, and the call
  signature of the Python path is a function of those facts (dtype, shape, strides, address mod
  16 and device of each tensor; the type and int32/int64 width of unannotated ints, bools and
  None; the value of int/bool/None static arguments; the range of annotated integer scalars);
- an entry is published only after a dry run of the stub on that call reproduced the Python
  path's launch byte for byte: CUfunction, dims, shared memory, stream, device and the packed
  parameter buffer (:meth:`State.register`);
- a failing guard drops the entries whose guards fail before the Python path recompiles.

``WARPSTAGE_CCALL=0`` turns the path off (``options.env_c_call``); without torch's exchange API
(torch < 2.10 without torch-c-dlpack-ext), on another interpreter or host, it is off by itself
(``c_env.unavailable_reason()``). docs/launch.md, "The C-level call path", has the measurements.
"""
from __future__ import annotations

import ctypes
import sys
import threading

from ..backend import host_stub_ir as host_stub    # its layouts and codes: no llvmlite
from ..frontend.guards import FROZEN_DEFAULTS, GLOBAL, _IMMUTABLE, _IMMUTABLE_TYPES, guards_hold
from ..runtime import raw_launch
from ..runtime.launch_dims import normalize_dims
from ..runtime.params import _param_layout
from . import c_env
from .launch import get_target, stream_handle
from .tracebacks import _user_error

__all__ = ["State", "launch_type", "bound_stub", "stub_kinds", "MAX_ENTRIES", "NO_MATCH"]

MAX_ENTRIES = 16                        # per launch configuration; then the oldest goes
NO_MATCH = host_stub.MISS["no_match"]
_INT64 = (-2 ** 63, 2 ** 63 - 1)
_INT_CODES = frozenset("bBhHiIqQ?")     # struct codes the stub may write an int into
_OFF = object()                         # the state of a configuration the C path cannot run


def stub_kinds(kinds):
    """Per parameter kind of the generated call path (fast_call_source.kind_of), the stub's
    ``(code, lo, hi)``; None when a parameter has no C reading (a float scalar: the kernel keeps
    the Python path)."""
    out = []
    for kind in kinds:
        if isinstance(kind, tuple):
            if kind[3]:
                return None
            out.append((host_stub.KINDS["int"], max(kind[1], _INT64[0]), min(kind[2], _INT64[1])))
        elif kind in ("tensor", "auto", "static"):
            out.append((host_stub.KINDS[kind], 0, 0))
        else:
            return None
    return out


def _state_key(L):
    s = L.stream
    return L.grid, L.block, L.smem, s if s is None or type(s) is int else id(s)


def launch_type(fast, base: type) -> type:
    """The class of the kernel's launch objects on the C path: a subclass of ``base`` (the
    generated Python path's launch type) whose calls try the stub first. None when the C path is
    off or cannot read these parameters."""
    from ..options import env_c_call
    if not env_c_call() or fast.call is None:
        return None
    kinds = stub_kinds(fast.kinds)
    if kinds is None or len(kinds) > host_stub.MAX_PARAMS:
        return None
    states: dict = {}
    seen: set = set()                           # configurations launched once so far
    py_call = base.__call__
    lock = threading.Lock()

    def __init__(L, *config):
        base.__init__(L, *config)
        st = L.cstate = states.get(_state_key(L))
        if st is not None and st is not _OFF:
            L.__class__ = st.cls                # its __call__: the C call (or slow_call)

    def __call__(L, *args, **kwargs):
        st = L.cstate
        if st is None or kwargs:
            try:
                return _first_call(L, args, kwargs)
            except Exception as e:
                _filter(L, e)
                raise
        return slow_call(L, st, args, kwargs, None)

    def slow_call(L, st, args, kwargs, reason):
        """The call in Python: what the C call (State.cls.__call__) falls back to, with the
        miss code it recorded (``reason``: a hint; None when it did not run)."""
        try:
            if kwargs or st is _OFF or get_target() != "cuda":
                return py_call(L, *args, **kwargs)
            for g in st.guards:
                if not guards_hold(g):
                    st.drop_stale()
                    result = py_call(L, *args)
                    st.register(L, args)
                    return result
            if reason is None or reason >= host_stub.MISS["keywords"]:
                if reason == host_stub.MISS["guards"]:
                    st.refresh_guards()         # equal by key, other objects: identical now
                r = st.stub(*args)
            else:
                r = reason                      # the stub ran and missed
            if r is None:
                return None
            result = py_call(L, *args)
            if r == NO_MATCH:
                st.register(L, args)
            return result
        except Exception as e:
            _filter(L, e)
            raise

    def _first_call(L, args, kwargs):
        result = py_call(L, *args, **kwargs)
        if kwargs or get_target() != "cuda":
            return result
        key = _state_key(L)
        # the stub compiles (in the background) from a configuration's second launch: a
        # process that launches each kernel once never imports llvmlite for it
        ready = c_env.stub_ready(start=key in seen)
        if ready is False:
            if len(seen) > 4096:
                seen.clear()
            seen.add(key)
            return result                       # (the Python path meanwhile)
        with lock:
            st = states.get(key)
            if st is None:
                st = State.create(fast, kinds, L) or _OFF
                if st is not _OFF:
                    st.set_class(cls, L, slow_call)
                states[key] = st
        L.cstate = st
        if st is not _OFF:
            L.__class__ = st.cls
            st.register(L, args)
            _install_getitem()
        return result

    cls = type(base.__name__, (base,), {"__slots__": ("cstate",), "__init__": __init__,
                                        "__call__": __call__, "__doc__": base.__doc__,
                                        "c_states": states})
    return cls


def _install_getitem() -> None:
    """``kern[grid, block]`` in C from now on (c_env.kernel_getitem: the cached launch object, or
    the Python ``Kernel.__getitem__``)."""
    from ..core import trace
    from .kernel import Kernel
    python = Kernel.__dict__.get("_getitem_python")
    if python is None or Kernel.__dict__.get("__getitem__") is not python:
        return                                  # installed already, or replaced by someone
    try:
        Kernel.__getitem__ = c_env.kernel_getitem(Kernel, python, trace.__dict__)
    except Exception:               # noqa: BLE001 - the Python __getitem__ stays
        return


def _filter(launch, e) -> None:
    """``e``'s traceback without warpstage's frames, unless the kernel keeps them
    (``compiler_frames``)."""
    if not launch.kernel.options.compiler_frames:
        _user_error(e)


class State:
    """The C path of one launch configuration: the live context (``stub`` launches), a dry
    context for checking entries, the entries' guards (``guards``: the non-empty ones, each
    checked before every stub call), and the facts that failed their check (``rejected``)."""

    def __init__(self, fast, live, dry, config, stream_ref):
        self.fast, self.live, self.dry, self.stub = fast, live, dry, live.stub
        self.config = config                # (grid, block) as the launch object holds them
        self.guards: tuple = ()
        self._guards_of: list = []          # per entry, in the order published
        self.rejected: set = set()
        self.lock = threading.Lock()
        self._stream_ref = stream_ref       # keeps a stream= object (and so its id) alive
        self.cls = None

    def set_class(self, launch_cls, L, slow_call) -> None:
        """Make ``self.cls``: the class of this configuration's launch objects, a subclass of
        ``launch_cls`` whose ``__call__`` is the context's C call (c_env.make_call) while every
        guard of the entries can be checked in C (:func:`c_guards`), else the Python call; the C
        call falls back to ``slow_call(L, self, args, kwargs, reason)``."""
        live = self.live

        # slow_call filters its traceback, but these frames sit above it: they filter again
        # (tracebacks.py: the bare raise keeps each entry's own frame out).
        def fallback(*args, **kwargs):
            try:
                return slow_call(L, self, args, kwargs, live.reason())
            except Exception as e:
                _filter(L, e)
                raise

        def python_call(launch, *args, **kwargs):
            try:
                return slow_call(launch, self, args, kwargs, None)
            except Exception as e:
                _filter(launch, e)
                raise

        self._python_call = python_call
        live.set_fallback(fallback)
        self.cls = type(launch_cls.__name__, (launch_cls,),
                        {"__slots__": (), "__call__": python_call, "__doc__": launch_cls.__doc__})
        self._set_call()

    def _set_call(self, current: bool = False) -> None:
        triples = c_guards(self.guards, current)
        if triples is not None:
            self.live.set_guards(triples)
        call = self.live.call if triples is not None else self._python_call
        if self.cls is not None and self.cls.__dict__.get("__call__") is not call:
            self.cls.__call__ = call

    def refresh_guards(self) -> None:
        """After the guards held in Python: make the C guard table expect the objects the
        guarded names hold now (equal by key to the traced ones, so the guards hold for them);
        the Python call when one of them cannot be checked in C."""
        self._set_call(current=True)

    @classmethod
    def create(cls, fast, kinds, L):
        torch = sys.modules.get("torch")
        env = c_env.environment(torch) if torch is not None else None
        launch_fn = None if env is None else env.launch_fn or c_env.launch_address()
        if launch_fn is None:
            return None
        dims = normalize_dims(L.grid, "grid") + normalize_dims(L.block, "block")
        stream = None if L.stream is None else stream_handle(L.stream)
        live = c_env.Context(env, kinds, dims, stream, launch_fn)
        dry = c_env.Context(env, kinds, dims, stream, launch_fn, dry=True)
        return cls(fast, live, dry, (L.grid, L.block), L.stream)

    def drop_stale(self) -> None:
        """Unpublish the entries whose guards fail (the Python path recompiles them)."""
        with self.lock:
            keep = [i for i, g in enumerate(self._guards_of) if not g or guards_hold(g)]
            self._publish([self.live.entries[i] for i in keep], [self._guards_of[i] for i in keep])

    def _publish(self, entries, guards_of) -> None:
        self.live.publish(entries)
        self._guards_of = guards_of
        distinct = []
        for g in guards_of:
            if g and all(g is not d for d in distinct):
                distinct.append(g)
        self.guards = tuple(distinct)
        self._set_call()

    def register(self, L, args) -> None:
        """Publish an entry for the specialization the Python path's memo holds for ``args``,
        if the stub reproduces that launch exactly (else remember the facts as rejected)."""
        try:
            with self.lock:
                self._register(L, args)
        except Exception:           # noqa: BLE001 - no entry: the Python path keeps launching
            return

    def _register(self, L, args) -> None:
        self.dry.publish([])                    # the facts of this call, matched by nothing
        kind, code, facts = self.dry.dry_run(args)
        if kind != "miss" or code != NO_MATCH or facts in self.rejected:
            return
        if any(e.facts == facts for e in self.live.entries):
            return
        call = self.fast.call
        sig, hit = call.lookup(L, *args)
        if hit is None or (hit[1] and not guards_hold(hit[1])):
            return
        got = call.values(L, hit, *args)
        launcher = hit[0]
        if (got is None or got[0] != sig or launcher.path_used != "ctypes"
                or launcher._raw is not raw_launch.launch_function()):
            return
        _, smem, stream, leaves = got
        entry = self._entry(launcher, facts, smem, hit, args, leaves)
        if entry is None:
            self.rejected.add(facts)
            return
        self.dry.publish([entry])
        expect = (launcher._raw_function.value or 0, *launcher._dims, smem, stream,
                  launcher.device)
        if self.dry.dry_run(args) != ("launch", expect, launcher.pack(leaves)):
            self.rejected.add(facts)
            return
        entries, guards_of = self.live.entries + [entry], self._guards_of + [hit[1]]
        if len(entries) > MAX_ENTRIES:
            entries, guards_of = entries[1:], guards_of[1:]
        self._publish(entries, guards_of)

    def _entry(self, launcher, facts, smem, hit, args, leaves):
        """The entry for a call whose packed values are ``leaves``, or None when a value the
        stub writes would land in a slot it cannot write (a float, a converted value)."""
        grid, block = self.config
        if (launcher._grid, launcher._block, launcher._smem) != (grid, block, smem):
            launcher._prepare(grid, block, smem)    # what Launcher.launch does first
        offsets = launcher.param_offsets
        patch, width, leaf = [], [], 0
        tails = iter(hit[4:])
        for kind, a in zip(self.fast.kinds, args):
            if kind == "static" or (kind == "auto" and a is None):
                n = 0
                if kind == "auto":
                    next(tails)
            else:
                tail = next(tails) if kind in ("tensor", "auto") else None
                n = 1 + (len(tail) if tail is not None else 0)
            if n == 0:
                patch.append(-1)
                width.append(0)
                continue
            code, size, convert = _param_layout(launcher.param_types[leaf])
            if convert is not None or code not in _INT_CODES:
                return None
            patch.append(offsets[leaf])
            width.append(size)
            leaf += n
        if leaf != len(leaves):
            return None
        template = launcher.pack(leaves)
        entry = c_env.Entry(facts, launcher._raw_function.value or 0, smem, hit[3], template,
                            offsets, patch, width)
        entry.launcher = launcher               # keeps its Function (and module) alive
        return entry



def c_guards(guard_sets, current: bool = False):
    """The guards of ``guard_sets`` (frontend/guards.py tuples) as the C call's table
    (c_env.Context.set_guards), or None when one of them needs Python. C decides by identity
    exactly where guards_hold does:

    - a module global (an exact dict) holding a value of an immutable type: ``dict.get(name) is
      value``;
    - a module global holding a ``@ws.jit`` function whose function has no defaults (its key is
      then its fixed ``_key``): the same, and ``fn.__defaults__`` and ``fn.__kwdefaults__`` are
      None.

    Any other guard (a class attribute, a cell, a kernel's defaults, a list, a ``@ws.jit``
    function with defaults) keeps the Python call. ``current``: the table for the objects the
    names hold now (after guards_hold held: equal by key to the traced ones, perhaps other
    objects; State.refresh_guards)."""
    from .kernel import JitFunction
    out = []
    for guards in guard_sets:
        for container, name, value, key, kind in guards:
            if kind == FROZEN_DEFAULTS and name == "__code__":
                # a function's code: the same object (guards_hold's identity case)
                out.append((container, name, container.__code__ if current else value, 1))
                continue
            if kind != GLOBAL or type(container) is not dict or type(name) is not str:
                return None
            if current:
                value = container.get(name, _OFF)
            if type(value) is JitFunction:
                fn = value.fn
                if (fn.__defaults__ is not None or fn.__kwdefaults__ is not None
                        or value.__ws_static_key__() != key):
                    return None
                out += [(container, name, value, 0), (fn, "__defaults__", None, 1),
                        (fn, "__kwdefaults__", None, 1)]
            elif type(value) in _IMMUTABLE_TYPES or isinstance(value, _IMMUTABLE):
                out.append((container, name, value, 0))
            else:
                return None
    return out


def bound_stub(bound, fixed_stream, torch_stream: bool, expected_stream: int,
               wait: bool = True):
    """A builtin launching the prepared launch ``bound`` (runtime/launcher.BoundLaunch) from C:
    ``stub()`` returns None when it launched (else a miss code; then launch from Python). Its
    one entry's template is the BoundLaunch's own buffer, so ``rebind`` takes effect. None when
    the C path is off here, or a dry run does not reproduce the launch (function, dims, smem,
    ``expected_stream``, device, buffer). The builtin is returned with the context it needs, as
    ``(stub, context)``: keep both. ``wait=False``: None also while the stub itself is not
    loaded yet (its load is started in the background: c_env.stub_ready; ask again once
    ``c_env.stub_loading()`` is False), where ``wait=True`` loads it now."""
    from ..options import env_c_call
    launcher = bound.launcher
    torch = sys.modules.get("torch")
    if (not env_c_call() or torch is None or launcher.path_used != "ctypes"
            or launcher._raw is not raw_launch.launch_function()):
        return None
    if not wait and c_env.stub_ready(start=True) is False:
        return None
    try:
        env = c_env.environment(torch)
        launch_fn = None if env is None else env.launch_fn or c_env.launch_address()
        if launch_fn is None:
            return None
        size = launcher._struct.size
        entry = c_env.Entry((launcher.device,), launcher._raw_function.value or 0, bound.smem,
                            torch_stream, ctypes.addressof(bound.slot[0]), launcher._offsets,
                            (), (), size=size)
        contexts = [c_env.Context(env, [], bound.dims, fixed_stream, launch_fn,
                                  default_device=launcher.device, dry=dry) for dry in (True, False)]
        for ctx in contexts:
            ctx.publish([entry])
        expect = (launcher._raw_function.value or 0, *bound.dims, bound.smem, expected_stream,
                  launcher.device)
        if contexts[0].dry_run(()) != ("launch", expect, bound.slot[0].raw[:size]):
            return None
    except Exception:               # noqa: BLE001 - no C stub: p() launches from Python
        return None
    return contexts[1].stub, contexts[1]
