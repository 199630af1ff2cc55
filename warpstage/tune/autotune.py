"""``ws.autotune``: choose a kernel's static configuration by timing the candidates, once per
tuning key, and keep the winner on disk (docs/autotune.md).

    @ws.autotune([Tiles(64), Tiles(128), Tiles(256)])
    def scale(x, y, *, config):                       # a launch function
        scale_kernel[(grid_for(config, x),), config.threads](config, x, y, x.shape[0])

    tuned = ws.autotune(configs)(my_kernel)           # a @ws.kernel: the config is a parameter
    tuned[grid, block](x, y)                          # grid / block may be f(config, *args)

A call computes the tuning key of its arguments (``key``), and takes the winner for that key
from memory, else from the disk record (warpstage/tune/records.py), else tunes now
(warpstage/tune/search.py) and stores the winner; then it runs the winner on the caller's
arguments. Candidates run on copies of the arguments, so tuning never changes them.
"""
from __future__ import annotations

import functools
from typing import Callable, Optional

from ..errors import ArgumentError, AutotuneError
from ..jit.tracebacks import user_entry, user_entry_methods
from . import devices as gpus
from . import records
from .configs import config_text
from .portable import function_ref
from .report import TuneReport
from .search import COUNTS, run_tuning
from .timing import default_timer

__all__ = ["autotune", "Tuned", "default_key"]

STRATEGIES = ("exhaustive", "local")
ISOLATIONS = ("process", "none")


def default_key(args: tuple, kwargs: dict) -> tuple:
    """The tuning key of a call: per argument (keywords sorted by name), a tensor's (dtype,
    shape, strides), a bool/int/float's type name, ``None``, a string itself, else the type's
    qualified name."""
    from ..runtime.tensors import as_tensor_arg

    def part(v):
        if v is None or isinstance(v, str):
            return v
        if isinstance(v, (bool, int, float)):
            return type(v).__name__
        if isinstance(v, (tuple, list)):
            return tuple(part(x) for x in v)
        try:
            ta = as_tensor_arg(v)
        except Exception:  # noqa: BLE001 - a tensor warpstage refuses: keyed by its type
            ta = None
        if ta is not None:
            return ("tensor", str(ta.dtype), tuple(ta.shape), tuple(ta.strides))
        return type(v).__qualname__
    return tuple(part(a) for a in args) + tuple((k, part(kwargs[k])) for k in sorted(kwargs))


def _plain(v) -> bool:
    """Whether ``v`` is plain data: None, bool, int, float, str, bytes, or tuples of them."""
    if v is None or isinstance(v, (bool, int, float, str, bytes)):
        return True
    return isinstance(v, tuple) and all(_plain(x) for x in v)


def _count(name: str, value, low: int):
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ArgumentError(f"ws.autotune: {name}={value!r}; expected an int >= {low}. Fix: "
                            f"{name}={max(low, 1)} (or leave it out)")
    return value


def _check_takes_config(fn) -> None:
    """ArgumentError unless the launch function ``fn`` can be called as ``fn(*args,
    config=...)``, as the tuner calls it: a ``config`` parameter that is not positional-only, or
    ``**kwargs``. (A function whose signature cannot be read is taken as it is.)"""
    import inspect
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return
    params = sig.parameters
    p = params.get("config")
    if p is not None and p.kind is not p.POSITIONAL_ONLY or \
            any(q.kind is q.VAR_KEYWORD for q in params.values()):
        return
    name = getattr(fn, "__qualname__", repr(fn))
    wanted = sig.replace(parameters=[q for q in params.values() if q.name != "config"] + [
        inspect.Parameter("config", inspect.Parameter.KEYWORD_ONLY)], return_annotation=sig.empty)
    raise ArgumentError(
        f"ws.autotune: the launch function {name}{sig} takes no keyword argument 'config'; "
        f"expected a parameter config (the tuner calls {name}(*args, config=candidate) once "
        f"per candidate). Fix: def {name}{wanted}: ..., launching with the candidate's "
        "fields; or put @ws.autotune above a @ws.kernel whose first parameter (or "
        "config_param=) takes the configuration")


@user_entry_methods
class Tuned:
    """A tuned launch function or ``@ws.kernel`` (what ``ws.autotune(...)(target)`` returns).
    ``report``: the last call's TuneReport (a tuning run, or one read from disk);
    ``choose(*args, **kwargs)``: the winning configuration for these arguments without running
    it (tuning if needed)."""

    def __init__(self, target, configs, key, warmup, rep, prune, budget_s, strategy, progress,
                 timer, jobs, isolation, watchdog_s, config_param, name, devices=None):
        from ..jit.kernel import Kernel
        self.target = target
        self.kind = "kernel" if isinstance(target, Kernel) else "fn"
        if self.kind == "fn" and not callable(target):
            raise ArgumentError(f"ws.autotune(...) wraps a launch function fn(*args, config=...) "
                                f"or a @ws.kernel; got {type(target).__name__}. Fix: put "
                                "@ws.autotune(configs) above a def or a @ws.kernel")
        if self.kind == "fn":
            _check_takes_config(target)
        self.position = 0
        if self.kind == "kernel":
            names = target.param_names
            param = names[0] if config_param is None else config_param
            if param not in names:
                raise ArgumentError(f"ws.autotune: config_param={param!r} is not a parameter of "
                                    f"kernel {target.__qualname__}({', '.join(names)}). Fix: "
                                    "name the parameter that takes the configuration")
            self.position = names.index(param)
        self._configs, self.key_fn, self.prune = configs, key, prune
        self.budget_s, self.strategy, self._progress = budget_s, strategy, progress
        self.name = name or getattr(target, "__qualname__", repr(target))
        self._options = (timer, warmup, rep, isolation, watchdog_s)
        self.jobs, self.devices = jobs, devices
        self.arch = "sm_90a"
        self._ready = False
        self._winners: dict = {}
        self.report: Optional[TuneReport] = None
        functools.update_wrapper(self, target, updated=())

    def _setup(self) -> None:
        """The target-dependent defaults, at the first call (not at import: a module may define
        a tuned function before it is importable by name, or before the GPU is probed)."""
        if self._ready:
            return
        timer, warmup, rep, isolation, watchdog_s = self._options
        self.fn_ref = function_ref(self.target)
        self.device_target = _target()
        on_gpu = self.device_target == "cuda"
        self.timer = timer or default_timer(self.device_target)
        self.warmup = (3 if on_gpu else 0) if warmup is None else warmup
        self.rep = (20 if on_gpu else 1) if rep is None else rep
        self.isolation = isolation or ("process" if on_gpu else "none")
        self.watchdog_s = watchdog_s or (30.0 if on_gpu else 120.0)
        self.startup_s = max(self.watchdog_s, 120.0)
        self.max_smem = None                # the target's limit; on the GPU the device's
        if on_gpu:
            from ..core.target import TARGETS
            from ..runtime.target import device_properties
            props = device_properties(0)
            self.max_smem = props.max_smem_per_block_optin
            if props.arch in TARGETS:
                self.arch = props.arch
        self._ready = True

    def progress_on(self) -> bool:
        if self._progress is not None:
            return bool(self._progress)
        from ..jit import progress
        return progress.enabled()

    def _space(self, args, kwargs) -> list:
        space = self._configs(*args, **kwargs) if callable(self._configs) else self._configs
        try:
            space = list(space)
        except TypeError:
            raise ArgumentError(f"ws.autotune({self.name}): configs is a {type(space).__name__}; "
                                "expected a list or generator of static policy objects (or a "
                                "function of the call's arguments returning one). Fix: "
                                "configs=[config] for a single one") from None
        from ..core.static_key import UnkeyableError, static_key
        for i, c in enumerate(space):
            try:
                static_key(c)
            except UnkeyableError as e:
                raise ArgumentError(f"ws.autotune({self.name}): configuration #{i} "
                                    f"({config_text(c)}) has "
                                    f"no static key ({e}); a configuration must be a static "
                                    "policy object. Fix: give its class plain attributes, "
                                    "__slots__ or a __static_key__ method") from None
        if not space:
            raise ArgumentError(f"ws.autotune({self.name}): the configuration space is empty; "
                                "expected a list or generator of at least one static policy "
                                "object. Fix: pass configs=[MyPolicy(...), ...]")
        if self._configs is not space and not callable(self._configs):
            self._configs = space           # a generator is read once
        return space

    def _key(self, args, kwargs):
        if self.key_fn is None:
            return default_key(args, kwargs)
        key = self.key_fn(*args, **kwargs)
        if not _plain(key):
            raise ArgumentError(f"ws.autotune({self.name}): key returned {key!r} (a "
                                f"{type(key).__name__}); expected plain data (None, bool, int, "
                                "float, str, bytes and tuples of them), which is what a tuning "
                                "result is stored and found under, in this process and on disk. "
                                "Fix: return e.g. (x.shape, str(x.dtype)) rather than objects, "
                                "lists or dicts")
        return key

    def _launches(self, space, args, launch):
        if launch is None:
            return [None] * len(space)
        grid, block, smem, stream = launch
        return [(grid(c, *args) if callable(grid) else grid,
                 block(c, *args) if callable(block) else block, smem, stream) for c in space]

    def choose(self, *args, _launch=None, **kwargs):
        """The winning configuration for these arguments (tunes on the first call per key)."""
        key = self._key(args, kwargs)
        hit = self._winners.get(key)
        if hit is not None:
            return hit
        self._setup()
        space = self._space(args, kwargs)
        digests = [records.config_digest(c) for c in space]
        devices = None
        if self.device_target == "cuda":
            home = gpus.home_device(args, kwargs)
            devices = gpus.from_option(self.devices, home)
        device_name = _device_name(self.device_target, devices[0] if devices else 0)
        rkey = records.record_key(device_name, _fn_id(self.target), repr(key),
                                  records.space_digest(digests))
        stored = records.load(rkey)
        if stored is not None and stored.get("best_digest") in digests:
            config = space[digests.index(stored["best_digest"])]
            COUNTS["record_hits"] += 1
            self.report = TuneReport(self.name, key, best_config=config,
                                     best_ms=stored.get("best_ms"), from_disk=True)
            self._winners[key] = config
            return config
        report = run_tuning(self, space, args, kwargs, self._launches(space, args, _launch), key,
                            devices)
        self.report = report
        if report.best is None:
            lines = "\n".join("  " + c.line() for c in report.candidates)
            raise AutotuneError(f"ws.autotune({self.name}): none of the {len(space)} "
                                f"configurations ran for key {key!r}:\n{lines}\nFix: widen the "
                                "space, or correct the candidates named above")
        records.store(rkey, {
            "name": self.name, "device": device_name, "key": repr(key),
            "best_index": report.best.index, "best_digest": digests[report.best.index],
            "best": config_text(report.best.config), "best_ms": report.best.ms,
            "candidates": len(space), "timed": report.count("timed"),
            "dropped": [[config_text(c.config), c.status, c.reason] for c in report.dropped()],
            "wall_s": report.wall_s, "compile_s": report.compile_s,
            "timing_s": report.timing_s, "strategy": self.strategy})
        self._winners[key] = report.best.config
        return report.best.config

    def __call__(self, *args, **kwargs):
        if self.kind == "kernel":
            raise ArgumentError(f"launch the tuned kernel {self.name} as tuned[grid, block](*args) "
                                "(grid and block may be functions of (config, *args))")
        config = self.choose(*args, **kwargs)
        return self.target(*args, config=config, **kwargs)

    def __getitem__(self, launch):
        if self.kind != "kernel":
            raise ArgumentError(f"{self.name} is a tuned launch function; call it: "
                                f"{self.name}(*args)")
        if not isinstance(launch, tuple) or not 2 <= len(launch) <= 4:
            raise ArgumentError(f"tuned kernel {self.name}: launch as tuned[grid, block] or "
                                f"tuned[grid, block, smem_bytes, stream], got [{launch!r}]")
        return _TunedLaunch(self, tuple(launch) + (0, None)[len(launch) - 2:])

    def __repr__(self) -> str:
        return f"<ws.autotune {self.name}>"


@user_entry_methods
class _TunedLaunch:
    def __init__(self, tuned: Tuned, launch: tuple):
        self.tuned, self.launch = tuned, launch

    def __call__(self, *args, **kwargs):
        t = self.tuned
        config = t.choose(*args, _launch=self.launch, **kwargs)
        grid, block, smem, stream = t._launches([config], args, self.launch)[0]
        full = args[:t.position] + (config,) + args[t.position:]
        return t.target[grid, block, smem, stream](*full, **kwargs)


def _target() -> str:
    from ..jit.launch import get_target
    return get_target()


@functools.lru_cache(maxsize=None)
def _device_name(target: str, ordinal: int = 0) -> str:
    """'sim', or GPU ``ordinal``'s name and compute capability."""
    if target != "cuda":
        return "sim"
    from ..runtime.target import device_properties
    p = device_properties(ordinal)
    return f"{p.name} (sm_{p.cc_major}{p.cc_minor})"


def _fn_id(target) -> tuple:
    from ..core.static_key import code_key
    if hasattr(target, "__ws_static_key__"):
        return target.__ws_static_key__()
    code = getattr(target, "__code__", None)
    return (getattr(target, "__module__", ""), getattr(target, "__qualname__", repr(target)),
            code_key(code) if code is not None else "")


@user_entry
def autotune(configs, *, key: Optional[Callable] = None, warmup: Optional[int] = None,
             rep: Optional[int] = None, prune: Optional[Callable] = None,
             budget_s: Optional[float] = None, strategy: str = "exhaustive", progress=None,
             timer=None, jobs: Optional[int] = None, isolation: Optional[str] = None,
             watchdog_s: Optional[float] = None, config_param: Optional[str] = None,
             name: Optional[str] = None, devices=None):
    """Decorator: tune a launch function ``fn(*args, config=...)`` or a ``@ws.kernel`` over
    ``configs`` (docs/autotune.md).

    ``configs``: a list or generator of static policy objects (read once), or a function of the
    call's arguments returning one (a space per shape class); put the shipped default first
    (the local search starts there). ``key(*args, **kwargs)``: the tuning key (default
    ``default_key``: tensors' dtype, shape and strides, scalars' types). ``warmup`` / ``rep``:
    untimed and timed calls per candidate (default 3 / 20 on the GPU, 0 / 1 in the simulator).
    ``prune(config, resources)``: return a reason (str) or True to drop a compiled candidate
    without launching it; ``resources`` is a ``ws.tune.Resources`` (ptxas' registers per
    thread, shared memory bytes, spill bytes, per launch); candidates beyond the launch limits
    are dropped before ``prune`` is asked. ``budget_s``: wall-time bound of one tuning run
    (seconds; the fastest so far wins). ``strategy``: 'exhaustive' or 'local'. ``progress``:
    None (a line on a terminal), True, or False (silent). ``timer``: an object with
    ``measure(run, config, warmup, rep) -> ms`` (default CUDA events on the GPU, wall time in
    the simulator). ``jobs``: compile processes (default: the CPU count). ``isolation``:
    'process' (time in a worker process under the watchdog; the default on the GPU) or 'none'
    (in this process; the simulator's default, where a deadlock raises instead of hanging).
    ``watchdog_s``: seconds a worker may take per candidate before it is killed and the
    candidate recorded as hung (default 30 on the GPU, 120 in the simulator).
    ``config_param``: for a kernel, the parameter taking the configuration (default the first).
    ``name``: for messages and records (default the target's qualified name). ``devices``: the
    GPUs the candidates are timed on, in parallel, one timing worker process per GPU: None
    (default: ``WARPSTAGE_TUNE_DEVICES``, else the arguments' GPU alone), 'all' (every visible
    GPU of the arguments' GPU's model) or a list of ordinals (warpstage/tune/devices.py); needs
    ``isolation='process'``; no effect in the simulator.

    Raises ArgumentError for a bad option, AutotuneError (at the call) when no candidate ran,
    naming each one's reason."""
    if strategy not in STRATEGIES:
        raise ArgumentError(f"ws.autotune: strategy={strategy!r}; expected one of {STRATEGIES}. "
                            "Fix: strategy='exhaustive' (or 'local' for large spaces)")
    if isolation is not None and isolation not in ISOLATIONS:
        raise ArgumentError(f"ws.autotune: isolation={isolation!r}; expected one of "
                            f"{ISOLATIONS} or None. Fix: isolation='process'")
    if budget_s is not None and (isinstance(budget_s, bool) or not isinstance(budget_s, (int, float))
                                 or budget_s <= 0):
        raise ArgumentError(f"ws.autotune: budget_s={budget_s!r}; expected seconds > 0 or None. "
                            "Fix: budget_s=60")
    for what, fn in (("key", key), ("prune", prune)):
        if fn is not None and not callable(fn):
            raise ArgumentError(f"ws.autotune: {what}={fn!r} is a {type(fn).__name__}; "
                                f"expected None or a function of the call's arguments "
                                f"(prune: of a configuration and its resources). Fix: "
                                f"{what}=lambda *args: ... ")

    if timer is not None and not callable(getattr(timer, "measure", None)):
        raise ArgumentError(f"ws.autotune: timer={timer!r} has no measure(run, config, warmup, "
                            "rep) method. Fix: pass ws.tune.WallTimer() or an object with one")
    warmup, rep, jobs = _count("warmup", warmup, 0), _count("rep", rep, 1), _count("jobs", jobs, 1)
    if devices is not None:
        gpus.check_option(devices)
        if isolation == "none":
            raise ArgumentError(f"ws.autotune: devices={devices!r} with isolation='none'; timing "
                                "on several GPUs runs one worker process per GPU. Fix: drop "
                                "isolation='none' (or devices=)")
    if configs is None or isinstance(configs, (str, bytes)):
        raise ArgumentError(f"ws.autotune: configs={configs!r}; expected a list or generator of "
                            "static policy objects. Fix: ws.autotune([MyPolicy(64), "
                            "MyPolicy(128)])")

    @user_entry                         # the decorator's errors name the user's line alone
    def wrap(target):
        return Tuned(target, configs, key, warmup, rep, prune, budget_s, strategy, progress,
                     timer, jobs, isolation, watchdog_s, config_param, name, devices)
    return wrap

