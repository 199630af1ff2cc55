"""Guards: the Python facts a trace read, checked on every cache hit.

Traced code reads globals, closure variables, module attributes and class attributes live, so
they are static and part of the specialization: a change to any of them must recompile, never
reuse a stale kernel (docs/cache.md, "What a specialization depends on"). A guard is a tuple
``(container, name, value, key, kind)``:

- ``GLOBAL``: ``container`` is a namespace dict (a module's globals; ``helpers.N`` is a global of
  ``helpers``);
- ``CELL``: ``container`` is a closure cell;
- ``CLASS``: ``container`` is a class, ``name`` an attribute its MRO defines (``Config.TILE``,
  ``cfg.load`` where ``load`` is a method);
- ``DEFAULTS`` / ``FROZEN_DEFAULTS``: ``container`` is a traced or plain function, ``name``
  ``__defaults__`` or ``__kwdefaults__`` (replacing a helper's defaults, or changing a mutable
  default in place, recompiles; ``FROZEN_DEFAULTS`` is a ``__defaults__`` tuple of plain
  values, so identity is enough; a ``__kwdefaults__`` dict can change in place and is always
  compared by key).

``value`` is what the trace saw, ``key`` its static key. A hit compares identity first (cheap)
and recomputes the key only for mutable objects or when the identity changed.

Where the facts come from: the global names in the bytecode of every function traced (kernel
and ``@ws.jit`` bodies), their closure cells, the attribute reads recorded while tracing
(facts.py), and — for plain Python functions the trace called without rewriting them (helpers
reached through a global) — their globals and the attributes of modules and classes their
bytecode names, found by scanning their bytecode (an over-approximation: a change to a guarded
name that was not really read only costs a recompile). A property, method or classmethod of a
static object that traced code read (a class fact) runs natively too, so its getter/function is
scanned the same way, and so is what a static argument's class defines under an attribute name
a plain helper's bytecode reads. A plain function held by a static value (a function passed as
an argument, or one in a tuple, dict, ``functools.partial`` or attribute of a static object:
``_Collector.held``) is followed the same way. Class attributes that such native code reads through
``self``/``cls`` are covered by the object's static key, whose class digest is revalidated on
every keying (core/static_key.py).
"""
from __future__ import annotations

import dis
import functools
import types

from ..errors import CompilationError
from .facts import MISSING, class_lookup, user_module
from ..core.static_key import UnkeyableError, _attributes, forget_class, static_key

__all__ = ["collect_guards", "guards_hold", "guard_checker", "GLOBAL", "CELL", "CLASS", "DEFAULTS",
           "FROZEN_DEFAULTS", "defaults_guards"]

GLOBAL, CELL, CLASS, DEFAULTS, FROZEN_DEFAULTS = 0, 1, 2, 3, 4
_MISSING = MISSING
_IMMUTABLE = (type(None), bool, int, float, str, bytes, type, types.ModuleType,
              types.FunctionType, types.BuiltinFunctionType)
"""Values whose identity is enough: they cannot change in place, or what can change in them
(a function's defaults, a class's attributes) has guards of its own. A tuple or frozenset is
only when its items are too (``_frozen``): ``T = ([1.0, 2.0],)`` changed in place through
``T[0][1] = 9.0`` must recompile."""
_IMMUTABLE_TYPES = frozenset(_IMMUTABLE)    # exact types: one set lookup on the hot path
_PLAIN_TYPES = frozenset((type(None), bool, int, float, str, bytes, complex))

_HELD_DEPTH, _HELD_NODES = 6, 10_000
"""How many levels of containers and attributes ``_Collector.held`` enters below a static value,
and how many values it enters in one trace (a static list of a million numbers is not walked
item by item at each compile)."""
_GLOBAL_OPS = {"LOAD_GLOBAL", "LOAD_NAME", "STORE_GLOBAL", "DELETE_GLOBAL"}
_ATTR_OPS = {"LOAD_ATTR", "LOAD_METHOD"}
_NAMES_CACHE: dict = {}


def _names(code):
    """(global names, attribute names) that ``code`` and the code nested in it read. Attribute
    names share ``co_names`` with globals, so they are told apart by opcode."""
    got = _NAMES_CACHE.get(code)
    if got is None:
        glob, attrs = set(), set()
        for ins in dis.get_instructions(code):
            if ins.opname in _GLOBAL_OPS:
                glob.add(ins.argval)
            elif ins.opname in _ATTR_OPS:
                attrs.add(ins.argval)
        for c in code.co_consts:
            if isinstance(c, types.CodeType):
                g, a = _names(c)
                glob |= g
                attrs |= a
        got = _NAMES_CACHE[code] = (frozenset(glob), frozenset(attrs))
    return got


class _Collector:
    def __init__(self, classes=()):
        self.guards: list = []
        self.seen: set = set()
        self.scanned: set = set()
        self.walked: set = set()        # ids of the values ``held`` has entered
        self.steps = 0                  # values ``held`` was asked about
        self.classes = classes      # user classes of the static arguments (see _native_reads)

    def add(self, container, name, value, kind, where: str):
        k = (id(container), name)
        if k in self.seen:
            return
        self.seen.add(k)
        self.guards.append((container, name, value, _key(value, name, where), kind))

    def function(self, fn, traced: bool) -> None:
        """Guard what ``fn`` reads; ``traced``: its attribute reads were recorded as facts."""
        code = getattr(fn, "__code__", None)
        if code is None or id(code) in self.scanned:
            return
        self.scanned.add(id(code))
        glob, attrs = _names(code)
        g = fn.__globals__
        where = f"global of {g.get('__name__', '?')}"
        for n in sorted(glob):
            if n.startswith("__ws"):
                continue
            v = g.get(n, _MISSING)
            if v is _MISSING:
                continue            # a builtin
            self.add(g, n, v, GLOBAL, where)
            self._reads(v, attrs, traced)
        for name, cell in zip(code.co_freevars, fn.__closure__ or ()):
            try:
                v = cell.cell_contents
            except ValueError:
                continue
            self.add(cell, name, v, CELL, f"closure variable of {fn.__qualname__}")
            self._reads(v, attrs, traced)
        if not traced:
            self._native_reads(attrs)
        for g in defaults_guards(fn):
            self.add(*g[:3], g[4], f"{'code' if g[1] == '__code__' else 'default'} of "
                                   f"{fn.__qualname__}")

    def _reads(self, v, attrs, traced: bool) -> None:
        """Follow a plain function ``v`` (it runs unrewritten, so its reads are not recorded);
        if the reader itself was not traced, guard the module/class attributes it names."""
        if isinstance(v, (staticmethod, classmethod)):
            v = v.__func__
        elif isinstance(v, property):
            v = v.fget
        elif isinstance(v, functools.cached_property):
            v = v.func
        if isinstance(v, types.FunctionType):
            if user_module(v.__module__):
                self.function(v, traced=False)
        elif not traced and isinstance(v, types.ModuleType) and user_module(v.__name__):
            for a in sorted(attrs):
                x = v.__dict__.get(a, _MISSING)
                if x is not _MISSING:
                    self.add(v.__dict__, a, x, GLOBAL, f"attribute of module {v.__name__}")
                    self._reads(x, (), False)
        elif not traced and isinstance(v, type) and user_module(v.__module__):
            for a in sorted(attrs):
                x = class_lookup(v, a)
                if x is not _MISSING:
                    self.add(v, a, x, CLASS, f"attribute of class {v.__qualname__}")
                    self._reads(x, (), False)
        elif not isinstance(v, (type, types.ModuleType)):
            self.held(v)

    def held(self, v, depth: int = 0) -> None:
        """Follow the plain functions that the static value ``v`` holds: a function passed as
        an argument, or one in a tuple, list, dict or set, a ``functools.partial``, a bound
        method or a user object's attributes (``p.f = fv``). Traced code that calls one runs
        it natively, so what it reads is guarded as for a helper reached through a global
        (``_reads``); ``v``'s own key holds the function by its code, not by what it reads.
        Plain values, classes, modules, numpy arrays and warpstage's own objects are not
        entered; the walk stops ``_HELD_DEPTH`` levels down and after ``_HELD_NODES`` values
        (a function beyond is not followed; the values' keys are still checked)."""
        self.steps += 1
        t = type(v)
        if (t in _PLAIN_TYPES or depth > _HELD_DEPTH or id(v) in self.walked
                or self.steps > _HELD_NODES):
            return
        self.walked.add(id(v))
        if isinstance(v, (types.FunctionType, staticmethod, classmethod, property,
                          functools.cached_property)):
            self._reads(v, (), False)
        elif t is functools.partial:
            for x in (v.func, v.args, v.keywords):
                self.held(x, depth + 1)
        elif t is types.MethodType:
            self.held(v.__func__, depth + 1)
            self.held(v.__self__, depth + 1)
        elif t in (tuple, list, set, frozenset) or (isinstance(v, tuple) and hasattr(t, "_fields")):
            for x in v:
                self.held(x, depth + 1)
        elif t is dict:
            for x in v.values():
                self.held(x, depth + 1)
        elif not isinstance(v, (type, types.ModuleType)) and user_module(t.__module__):
            for _, x in _attributes(v) or ():
                self.held(x, depth + 1)


    def _native_reads(self, attrs) -> None:
        """A plain function may read ``p.name`` of a static argument ``p`` natively (``h(p)``
        returning ``p.tile``): follow what the arguments' classes define under the attribute
        names its bytecode reads (a property's getter, a method), so their globals are guarded.
        The class attributes themselves are in the argument's key (its class digest)."""
        for cls in self.classes:
            for a in sorted(attrs):
                x = class_lookup(cls, a)
                if x is not _MISSING:
                    self._reads(x, (), False)


def defaults_guards(fn) -> list:
    """Guards (collect_guards' form) on ``fn.__code__`` (by identity, else by equality: a code
    object assigned to the function, as IPython's autoreload does, recompiles) and on
    ``fn.__defaults__`` and ``fn.__kwdefaults__``, if set."""
    code = fn.__code__
    out = [(fn, "__code__", code, _key(code, "__code__"), FROZEN_DEFAULTS)]
    for name in ("__defaults__", "__kwdefaults__"):
        d = getattr(fn, name, None)
        if d:
            # a tuple of plain values cannot change in place; a dict (``__kwdefaults__``) can
            frozen = type(d) is tuple and plain_values(d)
            out.append((fn, name, d, _key(d, name), FROZEN_DEFAULTS if frozen else DEFAULTS))
    return out


def collect_guards(functions, facts=None, statics=()) -> tuple:
    """Guards for what the traced ``functions`` read (globals, closure cells, and the plain
    helpers they reach) plus the attribute ``facts`` recorded while tracing (facts.py).
    ``statics``: the static argument values (their classes' properties and methods that plain
    helpers may call natively are followed too)."""
    c = _Collector(tuple({type(v): None for v in statics
                          if not isinstance(v, type) and user_module(type(v).__module__)}))
    for fn in functions:
        if not hasattr(fn, "__code__"):
            fn = getattr(fn, "__wrapped__", fn)
        c.function(fn, traced=True)
    for v in statics:
        c.held(v)
    for kind, holder, name, raw in (facts or {}).values():
        if kind == "module":
            c.add(holder.__dict__, name, raw, GLOBAL, f"attribute of module {holder.__name__}")
        else:
            c.add(holder, name, raw, CLASS, f"attribute of class {holder.__qualname__}")
        c._reads(raw, (), True)
    return tuple(c.guards)


def _key(v, name="", where=""):
    try:
        return static_key(v)
    except (UnkeyableError, RecursionError) as e:
        np = __import__("sys").modules.get("numpy")
        is_array = np is not None and isinstance(v, np.ndarray)
        if is_array or _is_buffer(v):
            what = "numpy array" if is_array else type(v).__name__
            raise CompilationError(
                f"the kernel reads the {what} `{name}` ({where}) at compile time, but it "
                f"cannot be part of the cache key: {e}.\nFix: pass the array to the kernel as "
                "an argument (a tensor), or keep it smaller.") from None
        return ("unkeyable", id(v))


def _is_buffer(v) -> bool:
    try:
        memoryview(v)
    except TypeError:
        return False
    return True


def _current(container, name, kind):
    if kind == CELL:
        try:
            return container.cell_contents
        except ValueError:
            return _MISSING
    if kind == CLASS:
        return class_lookup(container, name)
    if kind >= DEFAULTS:
        return getattr(container, name)
    return container.get(name, _MISSING)


def guards_hold(guards) -> bool:
    """True if every guarded value is unchanged (by identity or static key)."""
    for container, name, value, key, kind in guards:
        if kind == GLOBAL:
            cur = container.get(name, _MISSING)
        elif kind == CLASS:         # the class's own namespace first (where it usually is)
            cur = container.__dict__.get(name, _MISSING)
            if cur is _MISSING:
                cur = class_lookup(container, name)
        elif kind >= DEFAULTS:
            cur = getattr(container, name)
            if cur is value and kind == FROZEN_DEFAULTS:
                continue
            if _safe_key(cur) != key:
                return False
            continue
        else:
            cur = _current(container, name, kind)
        if cur is value:
            t = type(cur)
            if t in _IMMUTABLE_TYPES:
                continue
            if isinstance(cur, (tuple, frozenset)):
                if _frozen(cur):
                    continue
            elif isinstance(cur, _IMMUTABLE):
                continue
            if hasattr(t, "__ws_static_key__"):         # @ws.jit / @ws.kernel: its own key
                if cur.__ws_static_key__() == key:
                    continue
                return False
        if cur is _MISSING or _safe_key(cur) != key:
            if kind == CLASS:
                forget_class(container)
            return False
    return True


def guard_checker(guards):
    """``() -> guards_hold(guards)``, made for guards checked on every call (the op plans,
    ops/op_plans.py): the guards whose value's identity is enough (a global or a frozen
    default holding a module, class, function, code object, plain value or tuple of plain
    values; not None, which a missing name would also read) are compared by identity in two
    C-level passes (``map``), a global ``@ws.jit`` / ``@ws.kernel`` object by identity and its
    own key, the others by :func:`guards_hold`; when an identity differs, the
    full check decides (and forgets a changed class, as it does)."""
    import operator
    glob, attrs, keyed, rest = ([], [], []), ([], [], []), ([], []), []
    for g in guards:
        container, name, value, key, kind = g
        t = type(value)
        if kind == FROZEN_DEFAULTS:             # identity is enough (as in guards_hold)
            to = attrs
        elif kind == GLOBAL and type(container) is dict and value is not None and (
                t in _IMMUTABLE_TYPES or t is tuple and plain_values(value)
                or hasattr(t, "__ws_static_key__")):
            to = glob
            if t not in _IMMUTABLE_TYPES and t is not tuple:    # @ws.jit: same, and same key
                keyed[0].append(value)
                keyed[1].append(key)
        else:
            rest.append(g)
            continue
        for part, x in zip(to, (container, name, value)):
            part.append(x)
    is_, get = operator.is_, dict.get
    (gc, gn, gv), (ac, an, av), rest = glob, attrs, tuple(rest)
    kv, kk = keyed[0], tuple(keyed[1])
    guards = tuple(guards)

    def check() -> bool:
        if all(map(is_, map(get, gc, gn), gv)) and all(map(is_, map(getattr, ac, an), av)) \
                and (not kv or tuple([v.__ws_static_key__() for v in kv]) == kk):
            return not rest or guards_hold(rest)
        return guards_hold(guards)
    return check


def plain_values(v, depth: int = 0) -> bool:
    """Whether the tuple ``v`` holds only plain values (``_PLAIN_TYPES``) or tuples of them,
    at any depth (a default ``fixup=()``): the same tuple object then has the same contents,
    and identity is enough for a defaults guard (here and in ``jit/kernel.py``'s)."""
    if depth > 8:
        return False
    for x in v:
        t = type(x)
        if t not in _PLAIN_TYPES and not (t is tuple and plain_values(x, depth + 1)):
            return False
    return True


def _frozen(v, depth: int = 0) -> bool:
    """Whether the tuple or frozenset ``v`` holds only values whose identity is enough
    (``_IMMUTABLE``), at any depth: then the same object has the same contents."""
    if depth > 8:
        return False
    for x in v:
        t = type(x)
        if t in _IMMUTABLE_TYPES:
            continue
        if isinstance(x, (tuple, frozenset)):
            if not _frozen(x, depth + 1):
                return False
        elif not isinstance(x, _IMMUTABLE):
            return False
    return True


def _safe_key(v):
    try:
        return static_key(v)
    except (UnkeyableError, RecursionError):
        return ("unkeyable", id(v))
