"""In-place changes inside dynamic regions: ``state.phase ^= 1`` in a dynamic ``if``,
``pipeline.advance()`` in a dynamic loop.

A region may change an object without rebinding any variable. Every mutable object with dynamic
leaves that the user's frame can see when the region starts (its local and closure variables,
and the lists, dicts, structs and protocol objects inside tuples they hold) is a *root*. Its
contents are treated as one more variable of the region: snapshotted after each branch / loop
trace, restored in place before the next, merged like any variable (merge.py), and the merged
contents written back **into the same object**, so every alias sees them.

What is not covered: dynamic values kept in plain attributes of a static object (one without the
value protocol, such as a config object), which the value protocol does not see.
"""
from __future__ import annotations

from dataclasses import replace

from ..core.source import user_frame
from ..core.unbound import Unbound, _Undef
from ..core.static_key import static_key
from ..core.values import flatten, is_leaf, skeleton_key, unflatten

__all__ = ["Contents", "RootRef", "with_contents", "assign_in_place", "StaticWatch"]

_MISSING = object()


_ROOT_KIND: dict = {}
"""type -> True / False when the class decides whether its instances are roots, None when the
instance's ``__dict__`` does (read once per class: a failing ``hasattr`` raises inside)."""


def _is_root_kind(v) -> bool:
    t = type(v)
    kind = _ROOT_KIND.get(t, _MISSING)
    if kind is _MISSING:
        if issubclass(t, (list, dict)):
            kind = True
        elif issubclass(t, (tuple, str, bytes, int, float, complex, type, Unbound, _Undef)):
            kind = False
        else:
            kind = True if hasattr(t, "__slots__") else None
        _ROOT_KIND[t] = kind
    return kind if kind is not None else hasattr(v, "__dict__")


def _state(skel, leaves):
    """What identifies an object's contents: its leaves' SSA values and its static skeleton."""
    try:
        key = skeleton_key(skel, static_key)
    except Exception:
        key = object()           # unkeyable: never equal, so always treated as changed
    return tuple(id(lf.value) for lf in leaves), key


class _Root:
    __slots__ = ("label", "obj", "state", "copy", "ref")

    def __init__(self, label, obj, leaves, skel):
        self.label = label
        self.obj = obj
        self.state = _state(skel, leaves)
        self.copy = unflatten(skel, leaves)
        self.ref = RootRef(self)


class RootRef:
    """Stands for "this variable still holds root r" in a region's state; its contents are the
    root's own slot, so a variable that keeps its object keeps it (aliases stay aliases)."""

    __slots__ = ("root",)

    def __init__(self, root):
        self.root = root

    def __repr__(self) -> str:
        return f"<the object `{self.root.label}` held before (changed in place)>"


class Contents:
    """The roots visible from the user's frame (see the module docstring)."""

    def __init__(self):
        self.roots: list = []
        self._shared: set = set()      # ids of objects the frame reaches more than once
        frame = user_frame(1)
        if frame is None:
            return
        seen: set = set()
        for name, value in frame.f_locals.items():
            if not name.startswith("__ws_"):
                self._collect(name, value, seen)

    def _collect(self, label, v, seen):
        if is_leaf(v):
            return
        if id(v) in seen:
            self._shared.add(id(v))
            return
        seen.add(id(v))
        if type(v) is tuple or (isinstance(v, tuple) and hasattr(type(v), "_fields")):
            for i, x in enumerate(v):
                self._collect(f"{label}[{i}]", x, seen)
            return
        if not _is_root_kind(v):
            return
        try:
            skel, leaves = flatten(v)
        except Exception:        # an object whose value protocol fails here is left alone
            return
        if leaves:
            self.roots.append(_Root(label, v, leaves, skel))

    def unify(self, values: list, paths: list) -> list:
        """One variable's values on each path, with a RootRef replaced by its root's contents on
        that path where the paths disagree (one keeps the object, another rebinds the name)."""
        refs = [v for v in values if isinstance(v, RootRef)]
        if not refs or all(v is refs[0] for v in values):
            return values
        n = len(paths[0]) - len(self.roots)
        index = {id(r): n + k for k, r in enumerate(self.roots)}
        return [p[index[id(v.root)]] if isinstance(v, RootRef) else v
                for v, p in zip(values, paths)]

    def guess_rebound(self, values: tuple) -> tuple:
        """``values`` (a state whose first variables are the region's names) with each RootRef
        of a root that only that variable reaches replaced by the root's contents there: the
        first guess of a loop whose body assigns the name (``acc = f(acc)``,
        ``state = state.advance()``) is that it rebinds it, so the name is carried as a fresh
        object instead of as the root. A root that another name or another root's contents
        also reach keeps its RootRef (its identity is observable). The loop checks the guess
        after its trace (loops.py ``guess_wrong``)."""
        n = len(values) - len(self.roots)
        index = {id(r): n + k for k, r in enumerate(self.roots)}
        refs = [v for v in values[:n] if isinstance(v, RootRef)]
        out = list(values)
        inside: dict = {}           # id(root) -> ids of what its contents reach (one walk each)
        for i, v in enumerate(values[:n]):
            if isinstance(v, RootRef) and self._sole(v, refs, inside):
                out[i] = values[index[id(v.root)]]
        return tuple(out)

    def _sole(self, ref, refs, inside: dict) -> bool:
        obj = ref.root.obj
        if id(obj) in self._shared or sum(r is ref for r in refs) > 1:
            return False
        for r in self.roots:
            if r.obj is not obj:
                reached = inside.get(id(r))
                if reached is None:
                    reached = inside[id(r)] = _reached(r.obj)
                if id(obj) in reached:
                    return False
        return True

    @property
    def labels(self) -> tuple:
        return tuple(f"the contents of {r.label}" for r in self.roots)

    def snapshot(self) -> tuple:
        """Each root's contents now: its entry copy if its leaves are the entry leaves (so an
        untouched object merges as unchanged), else a fresh copy."""
        out = []
        for r in self.roots:
            skel, leaves = flatten(r.obj)
            if _same(_state(skel, leaves), r.state):
                out.append(r.copy)
            else:
                out.append(unflatten(skel, leaves))
        return tuple(out)

    def restore(self, values) -> None:
        for r, v in zip(self.roots, values):
            if not isinstance(v, (Unbound, _Undef)):
                assign_in_place(r.obj, v)


def _reached(container, depth: int = 8) -> set:
    """The ids of the objects inside ``container`` (lists, tuples, dicts, attributes; down to
    ``depth`` levels; the objects stay alive in it while the ids are used)."""
    stack, seen, found = [(container, 0)], set(), set()
    while stack:
        x, d = stack.pop()
        if id(x) in seen or d > depth or is_leaf(x):
            continue
        seen.add(id(x))
        if type(x) in (list, tuple) or isinstance(x, tuple):
            items = x
        elif type(x) is dict:
            items = x.values()
        elif _is_root_kind(x):
            items = _fields(x).values()
        else:
            continue
        for item in items:
            found.add(id(item))
            stack.append((item, d + 1))
    return found


def _same(a, b) -> bool:
    try:
        return a[0] == b[0] and bool(a[1] == b[1])
    except Exception:
        return False


def with_contents(site, get, set_):
    """``(site, get, set_, contents)`` extended by the contents of the roots the user's frame
    holds now (``contents`` is None when there are none). A variable holding a root reads as
    its RootRef."""
    contents = Contents()
    if not contents.roots:
        return site, get, set_, None
    n = len(site.names)
    refs = {id(r.obj): r.ref for r in contents.roots}

    def get2():
        values = get() if get is not None else ()
        return tuple(refs.get(id(v), v) for v in values) + contents.snapshot()

    def set2(values):
        if set_ is not None:
            set_(tuple(v.root.obj if isinstance(v, RootRef) else v for v in values[:n]))
        contents.restore(values[n:])

    return replace(site, names=site.names + contents.labels), get2, set2, contents


def _fields(obj):
    out = dict(getattr(obj, "__dict__", {}))
    for cls in type(obj).__mro__:
        for name in getattr(cls, "__slots__", ()):
            if name not in ("__dict__", "__weakref__"):
                v = getattr(obj, name, _MISSING)
                if v is not _MISSING:
                    out[name] = v
    return out


def assign_in_place(dst, src) -> None:
    """Make ``dst`` hold ``src``'s contents, keeping the identity of ``dst`` and of the mutable
    objects inside it that ``src`` has copies of."""
    if dst is src:
        return
    if isinstance(dst, list):
        for i, v in enumerate(src):
            _set_item(dst, i, v)
        del dst[len(src):]
    elif isinstance(dst, dict):
        for k, v in src.items():
            _set_item(dst, k, v)
    else:
        for name, v in _fields(src).items():
            cur = getattr(dst, name, _MISSING)
            if cur is not _MISSING and _nested(cur, v):
                assign_in_place(cur, v)
            else:
                object.__setattr__(dst, name, v)


def _set_item(dst, key, v):
    try:
        cur = dst[key]
    except (IndexError, KeyError):
        if isinstance(dst, list):
            dst.append(v)
        else:
            dst[key] = v
        return
    if _nested(cur, v):
        assign_in_place(cur, v)
    else:
        dst[key] = v


def _nested(cur, v) -> bool:
    """Update ``cur`` in place (keeping its identity) rather than replacing it by ``v``?"""
    return type(cur) is type(v) and _is_root_kind(cur) and not is_leaf(cur)


class StaticWatch:
    """The static mutable containers (lists, dicts, sets with no dynamic leaves) that the user's
    frame holds when a dynamic region starts, with their static keys. Both branches of a dynamic
    ``if`` are traced while compiling, so a change to one of them there (``acc.append(x)``)
    would take effect at compile time whatever the condition is at run time: ``changed()``
    names the first one that changed, for the caller's error."""

    __slots__ = ("items",)

    def __init__(self, fns=()):
        self.items = []
        frame = user_frame(1)
        if frame is not None:
            for name, v in frame.f_locals.items():
                self._watch(name, v)
        self.watch_code(fns)

    def watch_code(self, fns) -> None:
        """Also watch the module globals and closure cells that the region functions ``fns``
        (and the code nested in them) name: ``log.append(x)`` on a module-level list."""
        for fn in fns:
            code = getattr(fn, "__code__", None)
            if code is None:
                continue
            for name, cell in zip(code.co_freevars, fn.__closure__ or ()):
                try:
                    self._watch(name, cell.cell_contents)
                except ValueError:      # an empty cell
                    continue
            glob = fn.__globals__
            for name in _names(code):
                if name in glob:
                    self._watch(name, glob[name])

    def _watch(self, name: str, v) -> None:
        if name.startswith("__ws_") or any(v is w for _, w, _ in self.items):
            return
        if type(v) in (list, dict, set):
            try:
                if not flatten(v)[1]:
                    self.items.append((name, v, static_key(v)))
            except Exception:   # noqa: BLE001 - unkeyable contents: not watched
                return
        elif _plain_object(v):
            try:
                if not flatten(v)[1]:
                    self.items.append((name, v, _attributes(v)))
            except Exception:   # noqa: BLE001 - not flattenable: not watched
                return

    def changed(self):
        """(name, object) of the first watched container whose key changed, or of the first
        watched object one of whose attributes was rebound (``cfg.n = 5``), else None."""
        for name, v, key in self.items:
            try:
                if type(key) is _Attributes:
                    now = _attributes(v)
                    if any(now.get(a, _GONE) is not x for a, x in key.items()):
                        return name, v
                elif static_key(v) != key:
                    return name, v
            except Exception:
                return name, v
        return None


class _Attributes(dict):
    """An object's attributes when a region started: name -> the value object."""


_GONE = object()


def _attributes(v) -> "_Attributes":
    return _Attributes(vars(v))


def _plain_object(v) -> bool:
    """A user object whose attributes a dynamic region could rebind: an instance with a
    ``__dict__`` of a class outside warpstage (whose library objects may fill caches while
    tracing), not a module, class, function or method. Attributes added in the region (a lazy
    cache) are not a change; rebinding one that existed is (``_attributes``)."""
    import types
    module = type(v).__module__ or ""
    if module.split(".")[0] in ("warpstage", "builtins", "functools", "numpy", "torch") or \
            isinstance(v, (type, types.ModuleType, types.FunctionType, types.MethodType,
                           types.BuiltinFunctionType)):
        return False                    # (an unbound variable's marker raises on any read)
    try:
        return isinstance(object.__getattribute__(v, "__dict__"), dict)
    except Exception:  # noqa: BLE001 - no instance dict
        return False


def _names(code) -> set:
    """The global names ``code`` and the code objects nested in it load."""
    names = set(code.co_names)
    for c in code.co_consts:
        if hasattr(c, "co_names"):
            names |= _names(c)
    return names
