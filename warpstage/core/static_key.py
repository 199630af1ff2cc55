"""Stable cache keys for static values (binding-time rule 7, docs/binding-time.md "Static keys").

A key never contains ``id()``: it must be the same in a new process, so the disk cache can reuse
a cubin. In order: ``__static_key__()``; plain data (None, bool, int, float, complex, str,
bytes, tuples, lists, dicts, frozensets; bool, float and complex tagged with their type, since
True == 1 == 1.0 == 1+0j); classes and modules by qualified name; functions by code, defaults
and closure; enums by class and name; an object with Python's default identity hash by its class and
a structural key of its attributes (so mutating a config object recompiles); a hashable object
with its own ``__eq__``/``__hash__`` also by its attributes when they can be keyed, else by the
object itself (an ``EqualityKey``: compared with ``==``, so two unequal objects whose hashes
collide never share a specialization; such a key has no stable text, so that specialization is
not stored in the disk cache). What cannot be keyed raises ``UnkeyableError``.
"""
from __future__ import annotations

import enum
import functools
import hashlib
import operator
import sys
import types

__all__ = ["static_key", "fields_key", "UnkeyableError", "class_key", "code_key", "EqualityKey",
           "is_stable", "forget_class", "ARRAY_LIMIT"]


class UnkeyableError(TypeError):
    """Internal: a static value with no stable key; the caller names the parameter."""


_PLAIN = (type(None), bool, int, float, str, bytes, complex)


def class_key(cls) -> tuple:
    return ("class", cls.__module__, cls.__qualname__)


def code_key(code) -> str:
    """A digest of a code object: bytecode, constants (recursively) and names."""
    h = hashlib.sha1()

    def feed(c):
        h.update(c.co_code)
        h.update(repr(c.co_names).encode())
        h.update(repr(c.co_varnames).encode())
        for k in c.co_consts:
            if isinstance(k, types.CodeType):
                feed(k)
            else:
                h.update(repr(k).encode())
    feed(code)
    return h.hexdigest()[:16]


def static_key(v, _depth: int = 0, _path=None):
    """The stable key of the static value ``v`` (the module docstring gives the rules).
    ``_depth`` and ``_path`` are internal: the nesting level, and the objects being keyed on the
    way down (id -> level), so that an object graph with a cycle (a parent and its children, a
    bound method stored on its own object) keys the edge back to an ancestor as
    ``("cycle", levels up)`` instead of recursing forever: the key of the graph as seen from its
    root, the same in every process."""
    if _depth > 20:
        raise UnkeyableError("nested more than 20 levels deep (an object graph that deep is not "
                             "keyed structurally)")
    t = type(v)
    if t in _PLAIN:
        if t is float:      # a NaN is not equal to itself, and -0.0 == 0.0: both by text
            return ("float", v) if v == v and v != 0 else ("float", repr(v))
        if t is complex:    # 3+0j == 3 == 3.0: tagged like float, so (3+0j,) keys apart from (3,)
            return ("complex", static_key(v.real), static_key(v.imag))
        return v if t is not bool else ("bool", v)
    sk = getattr(t, "__static_key__", None)
    if sk is not None and not isinstance(v, type):
        k = v.__static_key__()
        try:
            hash(k)
        except TypeError:
            raise UnkeyableError(f"{t.__qualname__}.__static_key__() returned a "
                                 f"{type(k).__name__} ({str(k)[:60]}), which is not hashable; "
                                 "return a tuple of plain values (ints, strings, tuples)") from None
        return ("sk", class_key(t), k)
    if t is tuple:
        return ("tuple",) + tuple(static_key(x, _depth + 1, _path) for x in v)
    if isinstance(v, type):
        # classes made at run time (ws.smem.make_storage) can share a name; they say what they are
        extra = getattr(v, "__ws_class_key__", None)
        return class_key(v) + (extra(),) if extra is not None else _user_class_key(v)
    if isinstance(v, types.ModuleType):
        return ("module", v.__name__)
    if isinstance(v, enum.Enum):
        return ("enum", class_key(t), v.name)
    np = sys.modules.get("numpy")
    if np is not None and isinstance(v, (np.generic, np.ndarray)):
        return _numpy_key(v, np)
    if isinstance(v, types.BuiltinFunctionType):
        return ("builtin", getattr(v, "__module__", None), v.__qualname__)
    # what may hold a reference back to an ancestor: keyed with the path
    if _path is None:
        _path = {}
    i = id(v)
    up = _path.get(i)
    if up is not None:
        return ("cycle", _depth - up)
    _path[i] = _depth
    try:
        return _composite_key(v, t, _depth, _path)
    finally:
        del _path[i]


def _composite_key(v, t, depth, path):
    """static_key of a container, function, method or object (``v`` is on ``path``)."""
    d = depth + 1
    if t is list:
        return ("list",) + tuple(static_key(x, d, path) for x in v)
    if t is dict:
        return ("dict",) + tuple((static_key(k, d, path), static_key(x, d, path))
                                 for k, x in v.items())
    if t is frozenset or t is set:
        return (t.__name__,) + tuple(sorted((static_key(x, d, path) for x in v), key=repr))
    if t is functools.partial:
        return ("partial", static_key(v.func, d, path), static_key(v.args, d, path),
                static_key(v.keywords, d, path))
    if isinstance(v, types.FunctionType):
        return _function_key(v, depth, path)
    if isinstance(v, types.MethodType):
        return ("method", static_key(v.__self__, d, path), static_key(v.__func__, d, path))
    if t is property:       # the descriptors of a class body, by the functions they hold
        return ("property", static_key(v.fget, d, path), static_key(v.fset, d, path),
                static_key(v.fdel, d, path))
    if t is staticmethod or t is classmethod:
        return (t.__name__, static_key(v.__func__, d, path))
    if t is functools.cached_property:
        return ("cached_property", static_key(v.func, d, path), v.attrname)
    inner = getattr(v, "__ws_static_key__", None)   # warpstage's own objects (jit functions, ...)
    if inner is not None:
        return inner()
    if hasattr(t, "_fields") and isinstance(v, tuple):
        return ("namedtuple", class_key(t)) + tuple(static_key(x, d, path) for x in v)
    if t.__hash__ is object.__hash__ or t.__hash__ is None:
        attrs = _attributes(v)
        if attrs is None:
            buffer = _buffer_key(v)
            if buffer is not None:
                return buffer
            raise UnkeyableError(f"a {t.__qualname__} object has no __dict__, no __slots__ and no "
                                 "__static_key__")
        return ("obj", _user_class_key(t)) + tuple((k, static_key(x, d, path)) for k, x in attrs)
    try:
        hash(v)
    except TypeError as e:
        buffer = _buffer_key(v)                     # a writable memoryview
        if buffer is not None:
            return buffer
        raise UnkeyableError(str(e)) from None
    attrs = _attributes(v)
    if attrs:
        try:
            return ("obj", _user_class_key(t)) + tuple((k, static_key(x, d, path))
                                                       for k, x in attrs)
        except UnkeyableError:
            pass
    return ("eq", class_key(t), EqualityKey(v))


def fields_key(obj, skip=None) -> tuple:
    """The key of a static policy object's fields, for its ``__static_key__``: ``((name,
    static_key(value)), ...)`` over its attributes in name order, leaving out those for which
    ``skip(value)`` is true (an epilogue's tensors, which reach the kernel as arguments). Each
    field is keyed by the rules above, not by its own ``hash()``: a numpy scalar by dtype and
    value, a list or a nested config object by its contents (so changing one recompiles), and
    the pairs name the fields, so a RecompileWarning can say which one changed. A field that
    cannot be keyed raises ``UnkeyableError`` naming it."""
    out = []
    for name, v in _attributes(obj) or ():
        if skip is not None and skip(v):
            continue
        try:
            out.append((name, static_key(v)))
        except UnkeyableError as e:
            raise UnkeyableError(f"its field {name!r} ({type(v).__name__}): {e}") from None
    return tuple(out)


class EqualityKey:
    """A key part standing for a hashable static object that has no structural key: equal to
    another exactly when the objects compare equal (``==``), hashed by the object's ``hash()``.
    Its text is not reproducible in another process, so keys holding one are not persisted."""

    __slots__ = ("value", "_hash")

    def __init__(self, value):
        self.value = value
        self._hash = hash(value)

    def __eq__(self, other):
        if type(other) is not EqualityKey or self._hash != other._hash:
            return False
        try:
            return bool(self.value == other.value)
        except Exception:       # a user __eq__ that fails: treat as different
            return False

    def __hash__(self):
        return self._hash

    def __repr__(self):
        return f"EqualityKey({type(self.value).__qualname__})"


def is_stable(key) -> bool:
    """True if ``key`` (a static key or a tuple of them) holds no ``EqualityKey``: its repr is the
    same in every process, so it may name a disk-cache entry."""
    if type(key) is EqualityKey:
        return False
    if type(key) is tuple:
        return all(is_stable(k) for k in key)
    return True


def _attributes(v):
    out = []
    d = getattr(v, "__dict__", None)
    if d is not None:
        out.extend(sorted(d.items()))
    for cls in type(v).__mro__:
        for name in getattr(cls, "__slots__", ()):
            if name not in ("__dict__", "__weakref__") and hasattr(v, name):
                out.append((name, getattr(v, name)))
    if d is None and not out and not any(getattr(c, "__slots__", None) is not None
                                         for c in type(v).__mro__[:-1]):
        return None
    return out


ARRAY_LIMIT = 1 << 20      # bytes of a numpy array keyed by content (read on every cache hit)


def _numpy_key(v, np):
    """A numpy scalar by dtype and value; an array by dtype, shape and a digest of its bytes
    (so an array changed in place recompiles). Arrays over ARRAY_LIMIT bytes are not keyed:
    hashing them on every launch would cost more than passing them."""
    if isinstance(v, np.generic):
        item = v.item()
        if isinstance(item, (float, complex)):  # NaN, -0.0 and the complex parts as floats are
            item = static_key(item)             # keyed (equal to itself, the zero's sign kept)
        return ("np", v.dtype.str, item)
    if v.dtype.hasobject:
        raise UnkeyableError("a numpy array of Python objects has no content key")
    if v.nbytes > ARRAY_LIMIT:
        raise UnkeyableError(f"a numpy array of {v.nbytes} bytes is too large to key by content "
                             f"(limit {ARRAY_LIMIT}); pass it to the kernel as an argument")
    data = np.ascontiguousarray(v).tobytes()
    return ("ndarray", v.dtype.str, v.shape, hashlib.sha1(data).hexdigest()[:16])


def _buffer_key(v):
    """A mutable buffer with no attributes (``bytearray``, ``array.array``, a writable
    ``memoryview``) by type, format, shape and a digest of its bytes, like a numpy array (so one
    changed in place recompiles); None if ``v`` exposes no buffer. Over ARRAY_LIMIT bytes it is
    not keyed (UnkeyableError: pass it as an argument)."""
    try:
        m = memoryview(v)
    except TypeError:
        return None
    if m.nbytes > ARRAY_LIMIT:
        raise UnkeyableError(f"a {type(v).__name__} of {m.nbytes} bytes is too large to key by "
                             f"content (limit {ARRAY_LIMIT}); pass it to the kernel as an argument")
    data = m.tobytes()
    return ("buffer", type(v).__qualname__, m.format, m.shape, hashlib.sha1(data).hexdigest()[:16])


_CLASS_KEYS: dict = {}     # class -> (key, mro, snapshot); a plain dict (a weak one costs ~0.5 us)


def _snapshot(mro) -> tuple:
    """What a class digest is made from, per class of ``mro``: a copy of its namespace; the
    names and values of its plain data attributes (``K = 3``); and the names and keys of its
    mutable data attributes (``TILES = [64, 128]``, a numpy table). A hit compares each
    namespace with its copy (``==``, a C loop of key lookups with the identity test first,
    0.6-2.7 us for 1-3 classes of 5-50 attributes on the loaded CI machine, where tuples of the
    items cost 1.9-5.7 us: benchmarks/RESULTS.md, session 7); then the plain data by identity,
    since ``==`` holds across types (``K = 3`` replaced by ``3.0`` or ``True``: another value
    for ``isinstance``, ``range``, an IR constant's type); then the mutable data by key, since
    ``==`` holds for a list changed in place (its own copy)."""
    out = []
    for c in mro[:-1]:
        namespace = dict(c.__dict__)
        plain, mutable = [], []
        for name, attr in namespace.items():
            if _mutable_data(name, attr):
                key = _data_key(attr)
                if key is not None:
                    mutable.append((name, key))
            elif type(attr) in _NUMBERS or type(attr) is tuple and _plain_data(attr):
                plain.append((name, attr))      # `==` may hold across types: 3 == 3.0 == True
        out.append((namespace, tuple(n for n, _ in plain), tuple(a for _, a in plain),
                    tuple(mutable)))
    return tuple(out)


_MUTABLE_DATA = (list, dict, set, bytearray)
_NUMBERS = (int, float, bool, complex)


def _mutable_data(name: str, attr) -> bool:
    """A list, dict, set, bytearray or numpy array that the class body (or later code) put
    under ``name`` — not one of Python's own dunder caches (``__slotnames__``, which ``copy``
    and ``pickle`` add to a class the first time they copy an instance)."""
    if name.startswith("__") and name.endswith("__"):
        return False
    return type(attr) in _MUTABLE_DATA or _is_array(attr)


def _is_array(attr) -> bool:
    np = sys.modules.get("numpy")
    return np is not None and isinstance(attr, np.ndarray)


def _data_key(attr):
    """The static key of a mutable data attribute of a class body, or None if it has none."""
    try:
        return static_key(attr)
    except Exception:           # noqa: BLE001 - unkeyable (too large, objects): not digested
        return None


def _unchanged(mro, snapshot) -> bool:
    """Do the namespaces of ``mro`` still hold what ``snapshot`` (``_snapshot``) recorded?"""
    for c, (namespace, names, values, mutable) in zip(mro, snapshot):
        d = c.__dict__
        if d != namespace:
            return False
        if names and not all(map(operator.is_, map(d.get, names), values)):
            return False
        if mutable:
            for name, key in mutable:
                if _data_key(d.get(name)) != key:
                    return False
    return True


def _user_class_key(cls) -> tuple:
    """A class by qualified name and a digest of what its body defines (methods by code and
    defaults, plain constants by value and type, mutable data such as a list or numpy table
    by key), so a class redefined under the same name (a module reloaded after an edit) is a
    different key, and so is a class whose attribute changed in place (``Config.TILE = 8``,
    ``Config.TILES[0] = 8``: code run natively at trace time — a property, method or plain
    helper reading ``self.TILE`` — records no fact, so the object's key must see the change).
    The digest is cached per class with a snapshot of the namespaces it was made from
    (``_snapshot``), compared on every hit, so an assignment, addition or deletion of a class
    attribute, or a new ``__bases__``, recomputes it."""
    try:
        got = _CLASS_KEYS.get(cls)
    except TypeError:           # a metaclass without __hash__: no cache
        got, cacheable = None, False
    else:
        cacheable = True
    if got is not None and cls.__mro__ is got[1]:
        try:
            if _unchanged(got[1], got[2]):
                return got[0]
        except Exception:       # an attribute's __eq__ that fails (a replaced numpy array)
            pass
    base = class_key(cls)
    if cls.__module__ in ("builtins",) or cls.__module__.startswith("warpstage."):
        return base
    h = hashlib.sha1()
    for c in cls.__mro__[:-1]:
        for name, attr in list(vars(c).items()):
            part = _body_part(attr)
            if part is None and _mutable_data(name, attr):
                part = _data_key(attr)
            if part is not None:
                h.update(f"{c.__qualname__}.{name}={part!r};".encode())
    key = base + (h.hexdigest()[:12],)
    if cacheable:
        if len(_CLASS_KEYS) > 4096:
            _CLASS_KEYS.clear()
        _CLASS_KEYS[cls] = (key, cls.__mro__, _snapshot(cls.__mro__))
    return key


def forget_class(cls) -> None:
    """Drop ``cls``'s cached digest (one of its attributes changed)."""
    try:
        _CLASS_KEYS.pop(cls, None)
    except TypeError:
        pass


def _body_part(attr):
    if isinstance(attr, (staticmethod, classmethod)):
        attr = attr.__func__
    if isinstance(attr, property):
        attr = attr.fget
    code = getattr(attr, "__code__", None)
    if code is None:
        inner = getattr(attr, "fn", None)          # a @ws.jit method
        code = getattr(inner, "__code__", None)
        attr = inner if code is not None else attr
    if code is not None:
        return (code_key(code), repr(getattr(attr, "__defaults__", None)))
    if _plain_data(attr):
        return repr(attr)
    return None


def _plain_data(attr) -> bool:
    return type(attr) in _PLAIN or (type(attr) is tuple and all(type(x) in _PLAIN for x in attr))


def _function_key(f, depth, path=None):
    wrapped = getattr(f, "__ws_static_key__", None)
    if wrapped is not None:
        return wrapped()
    closure = ()
    if f.__closure__:
        closure = tuple(static_key(c.cell_contents, depth + 1, path) if _cell_full(c)
                        else ("empty",) for c in f.__closure__)
    defaults = static_key(f.__defaults__ or (), depth + 1, path)
    if f.__kwdefaults__:
        defaults = (defaults, static_key(f.__kwdefaults__, depth + 1, path))
    return ("function", f.__module__, f.__qualname__, code_key(f.__code__), defaults, closure)


def _cell_full(c) -> bool:
    try:
        c.cell_contents
        return True
    except ValueError:
        return False
