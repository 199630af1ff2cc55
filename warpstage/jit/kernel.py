"""``@ws.kernel`` and ``@ws.jit`` objects, ``ws.compile`` and ``ws.explain``; drives the stages.

A launch ``kern[grid, block](*args)`` classifies each argument (frontend/binding_time.py), looks
the specialization key up in the kernel's cache (guards on globals included), traces on a miss,
and launches on the current target: the GPU through the CUDA driver, or the CPU simulator.
The launch object ``kern[grid, block]`` is in launch_config.py; tracebacks without warpstage's
frames are made in tracebacks.py.
"""
from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
import warnings
from typing import Optional

from .cache import code_store, persist
from .cache.memory import Specializations
from . import pipeline
from ..core.arguments import argument_mismatch, signature_text
from .compiled import CompiledKernel
from ..errors import ArgumentError, CompilationError, LaunchError, WarpstageError
from ..frontend import binding_time as bt
from ..frontend.guards import guards_hold, plain_values
from ..frontend.specialize import call_device_function
from ..core.static_key import code_key
from ..core.trace import _state as _trace_state, maybe_current
from .launch_config import _NOT_GIVEN, _Launch, _dim3, _full_call
from .placeholders import placeholders as _placeholders, tensor_adapter as _tensor_adapter
from ..options import CompileOptions, default_options
from .tracebacks import _user_error, _user_stacklevel

__all__ = ["kernel", "jit", "Kernel", "JitFunction", "compile", "explain", "RecompileWarning",
           "MAX_LAUNCHES"]

MAX_LAUNCHES = 64
"""Launch objects a kernel keeps, one per configuration (``kern[grid, block]``); a 65th
configuration starts the set anew. They keep their configuration's objects (a stream) alive."""

code_store.install()     # rewritten kernel code is kept in the disk cache (cache/code_store.py)


class RecompileWarning(UserWarning):
    """A kernel was specialized more times than ``CompileOptions.max_specializations``."""


def _annotations(fn) -> dict:
    try:
        return typing.get_type_hints(fn)
    except Exception:
        return dict(getattr(fn, "__annotations__", {}))


def _entries(kwdefaults: dict) -> tuple:
    """(name, id(value)) of each keyword-only default: a value replaced in the dict
    (``fn.__kwdefaults__["m"] = 7``) changes it. The signature built from the dict holds the old
    values, so their ids are not reused while it is compared against."""
    return tuple((k, id(v)) for k, v in kwdefaults.items())


class _FunctionWrapper:
    """What ``@ws.kernel`` and ``@ws.jit`` objects share about the function ``fn`` they wrap:
    its defaults are the function's own (``k.__defaults__ = (3.0,)`` sets ``k.fn.__defaults__``,
    which the key and guards read; an attribute of the wrapper would be ignored), and the
    signature that binds a call follows them when they are replaced."""

    fn = None
    __defaults__ = property(lambda self: self.fn.__defaults__,
                            lambda self, value: setattr(self.fn, "__defaults__", value))
    __kwdefaults__ = property(lambda self: self.fn.__kwdefaults__,
                              lambda self, value: setattr(self.fn, "__kwdefaults__", value))

    @property
    def signature(self) -> inspect.Signature:
        """The signature with the function's current defaults (they may be replaced)."""
        fn = self.fn
        seen, kd = self._sig_defaults, fn.__kwdefaults__
        if (seen is None or seen[0] is not fn.__defaults__ or seen[1] is not kd
                or (kd and seen[2] != _entries(kd))):
            self._sig = inspect.signature(fn)
            self._sig_defaults = (fn.__defaults__, kd, _entries(kd) if kd else None)
        return self._sig


class JitFunction(_FunctionWrapper):
    """A ``@ws.jit`` device function: callable from kernels and other device functions. Each
    distinct key of its static arguments is its own specialization; dynamic arguments are passed
    as values. As a method of a static object (``fa.load(...)``) the object is static."""

    def __init__(self, fn, inline: bool = True):
        self.fn = fn
        self.inline = "always" if inline else "never"
        self._sig, self._sig_defaults, self._key_cache = None, None, None
        self._static_params = None
        functools.update_wrapper(self, fn)
        self._key = ("jit", fn.__module__, fn.__qualname__, code_key(fn.__code__), self.inline)

    def __ws_static_key__(self):
        # defaults are read at each call (a default changed in place recompiles); the key is
        # reused while the defaults are the same tuple of immutable values
        fn = self.fn
        d, kd = fn.__defaults__, fn.__kwdefaults__
        if d is None and not kd:
            return self._key
        c = self._key_cache
        if c is not None and c[0] is d and c[1] is kd:
            return c[2]
        from ..core.static_key import static_key
        key = self._key + (static_key(d), static_key(kd))
        if not kd and plain_values(d):
            self._key_cache = (d, kd, key)
        return key

    @property
    def static_params(self) -> tuple:
        """(index, name, annotation) of each parameter annotated ``ws.Static[T]`` (binding-time
        rule 1), the index into the bound arguments in signature order; read once."""
        if self._static_params is None:
            from ..core.static import _StaticAnnotation
            hints = _annotations(self.fn)
            names = inspect.signature(self.fn).parameters
            self._static_params = tuple((i, name, hints[name]) for i, name in enumerate(names)
                                        if isinstance(hints.get(name), _StaticAnnotation))
        return self._static_params

    def __call__(self, *args, **kwargs):
        if maybe_current() is None:
            try:                                # a public entry (tracebacks.py): no frame here
                raise CompilationError(
                    f"@ws.jit function {self.__qualname__} was called from host code; device "
                    "functions run on the GPU, inside a kernel being compiled.\nFix: call it "
                    "from a @ws.kernel (or another @ws.jit function) and launch the kernel: "
                    "kern[grid, block](...).")
            except CompilationError as e:
                _user_error(e)
                raise
        return call_device_function(self, args, kwargs)

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return functools.partial(self, obj)

    def __repr__(self) -> str:
        return f"<ws.jit {self.__qualname__}>"


class Kernel(_FunctionWrapper):
    """A ``@ws.kernel``: launch with ``kern[grid, block](*args)`` (optionally
    ``kern[grid, block, smem_bytes, stream]``) or ``kern(*args, grid=..., block=..., smem=...,
    stream=..., cluster=...)``. ``grid``/``block``/``cluster``: an int or 1-3 ints (x fastest);
    ``grid`` counts CTAs; ``cluster`` (CTAs per thread-block cluster, launched with
    cuLaunchKernelEx) must divide it; ``smem_bytes``: dynamic shared memory on top of what the
    kernel's ``ws.smem.allocate`` calls need; ``stream``: an int CUstream or an object with
    ``cuda_stream`` (default: torch's current stream when torch tensors are passed, else 0)."""

    def __init__(self, fn, options: Optional[CompileOptions] = None, overrides=None):
        self.fn = fn
        functools.update_wrapper(self, fn)
        self._sig, self._sig_defaults = None, None
        self.params = list(self.signature.parameters.values())
        for p in self.params:
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                raise CompilationError(
                    f"kernel {fn.__qualname__}: the parameter {p} "
                    f"({'*args' if p.kind is p.VAR_POSITIONAL else '**kwargs'}) "
                    "is not supported: a kernel's arguments are bound to ABI slots when it "
                    "compiles, one per named parameter.\nFix: name each parameter "
                    f"(def {fn.__name__}(x, a, b)), or pass a tuple or a @ws.struct as one "
                    "parameter.")
        self.param_names = [p.name for p in self.params]
        self._kwonly = any(p.kind is p.KEYWORD_ONLY for p in self.params)
        self._options = options
        self._overrides = overrides or {}   # @ws.kernel(**options): over default_options()
        self._annotations = None
        self._binders = None
        self._launch_type = None    # _Launch, or its subclass calling the generated call path
        self._fast = None           # its FastCall (fast_call.py)
        self._last_launch = None
        self._launches: dict = {}   # config -> launch object, the last MAX_LAUNCHES configs
        self._cache = Specializations()     # key -> CompiledKernel, and the keys' history
        self.trace_count = 0

    @property
    def options(self) -> CompileOptions:
        if self._options is None:
            self._options = default_options().with_(**self._overrides)
        return self._options

    def with_options(self, **changes) -> "Kernel":
        """This kernel with ``changes`` to its CompileOptions (``ws.compile(k, ...,
        opt_level=2)``): itself when they change nothing, else one Kernel per distinct option
        set, kept, so a second ``ws.compile`` with the same options finds its in-memory
        specializations instead of compiling again."""
        options = self.options.with_(**changes)
        if options == self.options:
            return self
        derived = self.__dict__.setdefault("_derived", {})
        kern = derived.get(options)
        if kern is None:
            kern = derived[options] = Kernel(self.fn, options)
        return kern

    def __ws_static_key__(self):
        return ("kernel", self.fn.__module__, self.fn.__qualname__, code_key(self.fn.__code__))

    # -- binding ---------------------------------------------------------------------------
    def _bind(self, args, kwargs, fix: str = "") -> list:
        """The values of the parameters for ``args``/``kwargs``; ``fix``: the error's Fix when
        they do not bind (default: the launch ``k[grid, block](x, y)``)."""
        if not kwargs and len(args) == len(self.params) and not self._kwonly:
            return list(args)
        try:
            ba = self.signature.bind(*args, **kwargs)
        except TypeError:
            sig = self.signature
            raise argument_mismatch(self.__qualname__, self.param_names, args, kwargs,
                                    signature_text(sig), {p.name for p in sig.parameters.values()
                                                          if p.default is not p.empty},
                                    fix=fix) from None
        ba.apply_defaults()
        return list(ba.arguments.values())

    def specs(self, values: list, placeholders: bool = False) -> list:
        if self._annotations is None:
            self._annotations = _annotations(self.fn)
        anns = self._annotations
        out = []
        for i, (p, v) in enumerate(zip(self.params, values)):
            ann = anns.get(p.name)
            if placeholders:
                v = _placeholders(v, ann, p.name)
            out.append(bt.classify(v, ann, p.name, self_rule=(i == 0 and p.name == "self"),
                                   tensor_adapter=_tensor_adapter))
        return out

    def _make_binders(self) -> list:
        from ..frontend.kinds import make_binder
        if self._annotations is None:
            self._annotations = _annotations(self.fn)
        return [make_binder(self._annotations.get(p.name), i == 0 and p.name == "self", _tensor_adapter)
                for i, p in enumerate(self.params)]

    def _make_launch_type(self) -> type:
        """The class of this kernel's launch objects (``kern[grid, block]``): _Launch, or its
        subclass whose ``__call__`` is the generated call path (jit/fast_call.py; not for
        keyword-only parameters, which it does not bind)."""
        if self._kwonly:
            self._launch_type = _Launch
            return _Launch
        from .fast_call import FastCall
        if self._annotations is None:
            self._annotations = _annotations(self.fn)
        self._fast = FastCall(self, self._annotations, _Launch, _full_call, _user_error, _NOT_GIVEN)
        self._launch_type = self._fast.launch_type
        return self._launch_type

    # -- specialization --------------------------------------------------------------------
    def specialize(self, values: list, block: tuple, target: str, placeholders=False):
        """(CompiledKernel, leaves) for these argument values, from the cache or traced now.
        ``leaves`` are the host values of the ABI slots (TensorArg at a tensor's data slot)."""
        if not placeholders:
            binders = self._binders
            if binders is None:
                binders = self._binders = self._make_binders()
            keys: list = []
            leaves: list = []
            for bind, v in zip(binders, values):
                if not bind(v, keys, leaves):
                    break
            else:
                entry = self._cache.get((tuple(keys), block, target))
                if entry is not None and (not entry.guards or guards_hold(entry.guards)):
                    return entry, leaves
        specs = self.specs(values, placeholders)
        key = (tuple(s.key for s in specs), block, target)
        entry = self._cache.get(key)
        if entry is None or not guards_hold(entry.guards):      # else composites: a hit
            entry = self._from_disk_or_trace(specs, block, target, key)   # without binders
        leaves = []
        for spec, v in zip(specs, values):
            spec.host_leaves(v, leaves)
        return entry, leaves

    def _from_disk_or_trace(self, specs, block, target, key) -> CompiledKernel:
        """The specialization from the disk cache (cuda/compile targets), else traced, compiled
        and stored. Processes missing the same entry at once build it once: the build holds
        the entry's lock, and a process that waited for it reads what the other stored."""
        entry = persist.lookup(self, specs, block, target)
        if entry is None:
            with persist.building(self, specs, block, target):
                entry = persist.lookup(self, specs, block, target, after_wait=True)
                if entry is None:
                    if target in persist.DISK_TARGETS:      # it will be lowered: LLVM loads
                        pipeline.start_llvm_load()          # beside the trace
                    entry = self._trace(specs, block, key)
                    self._cache[key] = entry
                    persist.store(self, entry, specs, block, target)
                    return entry
        self._note_recompile(key, specs)
        self._cache[key] = entry
        return entry

    def _trace(self, specs, block, key) -> CompiledKernel:
        made = len(self._cache.keys)
        name = f"{self.fn.__name__}_{made}" if made else self.fn.__name__
        timings: dict = {}
        try:
            traced, guards = pipeline.trace(
                self.fn, name, specs, self.param_names, self.options, block,
                tuple(p.name for p in self.params if p.kind is p.KEYWORD_ONLY), timings)
        except Exception as e:
            if self.options.compiler_frames:     # keep warpstage's frames when debugging warpstage
                raise
            _user_error(e)
            raise
        self.trace_count += 1
        ck = CompiledKernel(traced.name, traced.module, list(traced.abi), specs, self.param_names,
                            self.options, block, timings, guards, traced=traced)
        self._note_recompile(key, specs)
        return ck

    def _note_recompile(self, key, specs) -> None:
        """Record a new specialization (cache/memory.py); warn past the limit."""
        self._cache.note(key, specs, self.param_names)
        limit = self.options.max_specializations
        lines = self._cache.over_limit(limit)
        if lines is not None:
            warnings.warn(f"kernel {self.__qualname__} has been specialized "
                          f"{len(self._cache.keys)} times (limit {limit}). What each new "
                          f"specialization changed, compared with the closest earlier one "
                          f"(#n):\n{lines}\nFix: annotate a parameter that varies as dynamic, "
                          "or move varying values out of static objects.", RecompileWarning,
                          stacklevel=_user_stacklevel())

    # -- launch ----------------------------------------------------------------------------
    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        try:                                    # a public entry (tracebacks.py): no frame here
            raise CompilationError(
                f"kernel {self.__qualname__} is defined as a method of {type(obj).__name__} and "
                f"was looked up on an instance; a kernel is launched on its own, so `self` would "
                "not be passed.\nFix: define the kernel at module level and pass the object as "
                "its first argument (k[grid, block](obj, ...); it is static by rule 7), or make "
                "the method a @ws.jit device function called from a kernel.")
        except CompilationError as e:
            _user_error(e)
            raise

    def __getitem__(self, config) -> "_Launch":
        """``kern[grid, block(, smem, stream)]``: the launch object of that configuration (made
        once per configuration: the last one is checked first, then the others kept in
        ``_launches``; once the C call path runs, these checks are C: jit/c_env.kernel_getitem,
        falling back to this method)."""
        last = self._last_launch
        try:
            if last is not None and last[0] == config and \
                    _trace_state.__dict__.get("ctx") is None:
                return last[1]                  # the launch hot path: checked when it was made
        except Exception:                       # noqa: BLE001 - a numpy value's `==` (an array):
            pass                                # not the same configuration (as the C path)
        try:
            launch = self._launches.get(config)
            if launch is not None and _trace_state.__dict__.get("ctx") is None:
                return launch                   # another configuration launched before
        except Exception:                       # noqa: BLE001 - unhashable, or `==` raised:
            pass                                # made (and checked) below
        try:
            return self._launch_of(config)
        except Exception as e:                  # a public entry (tracebacks.py), inline: no
            _user_error(e)                      # wrapper call on the launch path
            raise

    _getitem_python = __getitem__

    def _launch_of(self, config) -> "_Launch":
        if maybe_current() is not None:
            raise CompilationError(f"kernel {self.__qualname__} launched (kern[...]) from inside "
                                   "traced code; kernels cannot launch kernels.\nFix: make the "
                                   "code it runs a @ws.jit device function and call that "
                                   "instead.")
        if not isinstance(config, tuple) or not 2 <= len(config) <= 4:
            raise LaunchError(f"launch configuration must be kern[grid, block] or kern[grid, block, "
                              f"smem_bytes, stream], got kern[{config!r}].\nFix: "
                              f"{self.__qualname__}[grid, block](...), e.g. "
                              f"{self.__qualname__}[n_ctas, 128](...) (grid: CTAs, block: "
                              "threads per CTA; each an int or up to 3 ints).")
        last = self._last_launch
        try:
            if last is not None and last[0] == config:
                return last[1]
        except Exception:                       # noqa: BLE001 - as in __getitem__
            pass
        launch = (self._launch_type or self._make_launch_type())(self, *config)
        self._last_launch = (config, launch)
        launches = self._launches
        if len(launches) >= MAX_LAUNCHES:
            launches.clear()
        try:
            launches[config] = launch
        except Exception:                       # noqa: BLE001 - unhashable (a list in it): not
            pass                                # kept, made again at its next lookup
        return launch

    def __call__(self, *args, grid=None, block=None, smem: int = 0, stream=None, cluster=None,
                 **kwargs):
        try:
            launch = self._launch_for_call(grid, block, smem, stream, cluster)
        except Exception as e:                  # a public entry (tracebacks.py)
            _user_error(e)
            raise
        return launch(*args, **kwargs)

    def _launch_for_call(self, grid, block, smem, stream, cluster) -> "_Launch":
        if maybe_current() is not None:
            raise CompilationError(f"kernel {self.__qualname__} launched from inside traced code; "
                                   "kernels cannot launch kernels.\nFix: make the code it runs a "
                                   "@ws.jit device function and call that instead.")
        if grid is None or block is None:
            lacks = ("grid and block" if grid is None and block is None else
                     "grid" if grid is None else "block")
            raise LaunchError(
                f"kernel {self.__qualname__} was called without a launch {lacks}.\nExpected: a grid (CTAs, an int or up to 3 ints) and a block (threads per CTA, "
                f"an int or up to 3 ints).\nFix: {self.__qualname__}[grid, block](...), e.g. "
                f"{self.__qualname__}[n_ctas, 128](...), or {self.__qualname__}(..., grid=..., "
                "block=...).")
        cls = _Launch if cluster is not None else self._launch_type or self._make_launch_type()
        return cls(self, grid, block, smem, stream, cluster)

    def __repr__(self) -> str:
        return f"<ws.kernel {self.__qualname__}>"


def kernel(fn=None, **options):
    """Decorator: make ``fn`` a GPU kernel entry (``@ws.kernel``, or ``@ws.kernel(**options)``
    with CompileOptions fields, e.g. ``@ws.kernel(device_asserts=True)``): the fields are
    checked here and taken over ``default_options()`` at the kernel's first use, as a kernel
    without them takes ``default_options()`` then."""
    overrides = {}
    if options:             # checked here, at once; kept as the fields they set (debug= is two)
        opts = default_options().with_(**options)
        names = set(options) - {"debug"} | ({"device_asserts", "compiler_frames"}
                                            if "debug" in options else set())
        overrides = {name: getattr(opts, name) for name in names}

    def wrap(f):
        try:                # `@ws.kernel(...)` calls this later: a public entry (tracebacks.py)
            if not inspect.isfunction(f):
                raise ArgumentError(f"@ws.kernel decorates a Python function (a `def`), got "
                                    f"{_what(f)}.\nFix: put @ws.kernel on the line above a "
                                    "`def`; compile options go as @ws.kernel(name=value).")
            return Kernel(f, None, overrides)
        except Exception as e:
            _user_error(e)
            raise
    return wrap(fn) if fn is not None else wrap


def _what(x) -> str:
    """``x`` for an error: its type and a short repr (``the int 3``, ``the function f``)."""
    if inspect.isfunction(x):
        return f"the plain function {x.__qualname__}"
    return f"the {type(x).__name__} {repr(x)[:60]}"


def jit(fn=None, *, inline: bool = True):
    """Decorator: make ``fn`` a device function callable from kernels (a template: one
    specialization per key of its static arguments). ``@ws.jit(inline=False)`` keeps it a
    separate PTX function (``.func``) instead of inlining it into its callers."""
    def wrap(f):
        if isinstance(f, (staticmethod, classmethod)):
            raise CompilationError("put @ws.jit below @staticmethod/@classmethod, not above")
        return JitFunction(f, inline)
    return wrap(fn) if fn is not None else wrap


def _compile_block(kern: Kernel, block) -> tuple:
    """``block`` as a dim3 checked against the target's limits (a launch would refuse more
    threads than the target has per CTA, so a compile for them is an error too)."""
    from ..core.target import target_for
    dims = _dim3(block, "block")
    try:
        t = target_for(kern.options.arch)
    except ValueError:
        return dims             # an unknown arch is the backend's error, with its own message
    threads = dims[0] * dims[1] * dims[2]
    if threads > t.max_threads_per_cta or any(d > m for d, m in zip(dims, t.max_block)):
        raise LaunchError(f"ws.compile: block {dims} has {threads} threads; {t.arch} allows at "
                          f"most {t.max_threads_per_cta} per CTA and {t.max_block} per "
                          "dimension. Fix: a smaller block, e.g. block=(256, 1, 1)")
    return dims


_OPTION_NAMES = frozenset(f.name for f in dataclasses.fields(CompileOptions)) | {"debug"}


def compile(kern: Kernel, *args, block=(128, 1, 1), target: Optional[str] = None, jobs=None,
            **kwargs) -> CompiledKernel:
    """Compile ahead of time. ``args`` may be example values or types (``ws.Int32``,
    ``ws.Tensor[ws.BFloat16, 2]``, ``ws.Static(value)``). Returns a CompiledKernel with every
    stage built (cubin when ptxas is installed).

    ``ws.compile(requests, jobs=N)``: ``requests`` a list of ``(kernel, args)`` or ``(kernel,
    args, kwargs)``; builds them in N worker processes into the disk cache and returns their
    CompiledKernels in order (warpstage/jit/precompile.py).

    ``kwargs`` that name a CompileOptions field and no parameter of the kernel
    (``arch="sm_80"``, ``opt_level=2``) are compile options for this compile: the kernel's own
    options with those changed; a bad ``arch`` is an OperandError naming the accepted names."""
    if jobs is not None or isinstance(kern, (list, tuple)):
        if args or kwargs:
            raise ArgumentError("ws.compile(requests, jobs=N) takes the list of requests alone; "
                                "put each kernel's arguments in its request: [(kern, args), ...]")
        from .precompile import compile_many
        return compile_many(kern, 1 if jobs is None else jobs)
    if not isinstance(kern, Kernel):
        raise ArgumentError(f"ws.compile expects a @ws.kernel, got {type(kern).__name__}")
    options = {k: kwargs.pop(k) for k in list(kwargs)
               if k in _OPTION_NAMES and k not in kern.param_names}
    if options:                   # ws.compile(k, ..., arch="sm_80"): compile options, not arguments
        kern = kern.with_options(**options)
    values = kern._bind(args, kwargs, f"ws.compile({kern.__name__}, "
                        f"{', '.join(kern.param_names)}), a value or a type per parameter "
                        "(ws.Tensor[ws.Float32, 1], ws.Int32, ws.Static(64)), by position or by "
                        "name.")
    try:
        ck, _ = kern.specialize(values, _compile_block(kern, block), target or "compile",
                                placeholders=True)
        ck.cubin
    except Exception as e:
        if kern.options.compiler_frames:
            raise
        _user_error(e)
        raise
    return ck


def explain(kern: Kernel, *args, print_table: bool = True, **kwargs) -> str:
    """Print (and return) per parameter: the rule that decided, binding time, type, key part and
    ABI slots, for these arguments (values or types, as in ws.compile).

    For an op that has an ``__ws_explain__`` function (``ws.ops.flash_attention``), what that
    returns for these arguments: the kernel the call picks, its policy and each fallback with
    its reason."""
    hook = getattr(kern, "__ws_explain__", None)
    if not isinstance(kern, Kernel) and callable(hook):
        try:
            return hook(*args, print_table=print_table, **kwargs)
        except WarpstageError as e:
            _user_error(e)
            raise
    if not isinstance(kern, Kernel):
        raise ArgumentError(f"ws.explain(kern, *args): expected a @ws.kernel as kern (or an "
                            f"op that explains itself, such as ws.ops.flash_attention), got "
                            f"{_what(kern)}.\nFix: decorate the function with @ws.kernel and "
                            "pass the kernel with the arguments of a launch: "
                            "ws.explain(kern, x, y).")
    from .explain import format_table
    values = kern._bind(args, kwargs, f"ws.explain({kern.__name__}, "
                        f"{', '.join(kern.param_names)}), a value or a type per parameter, as "
                        "for ws.compile, by position or by name.")
    try:
        specs = kern.specs(values, placeholders=True)
    except WarpstageError as e:
        _user_error(e)
        raise
    text = format_table(kern.__name__, specs, kern.param_names)
    if print_table:
        print(text)
    return text
