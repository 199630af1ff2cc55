"""Stable cache keys for static values (binding-time rule 7, docs/binding-time.md "Static keys").

A key never contains ``id()``: it must be the same in a new process, so the disk cache can reuse
a cubin. In order: ``__static_key__()``; plain data (None, bool, int, float, str, bytes, tuples,
lists, dicts, frozensets); classes and modules by qualified name; functions by code, defaults and
closure; enums by class and name; an object with Python's default identity hash by its class and
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
import sys
import types

__all__ = ["static_key", "UnkeyableError", "class_key", "code_key", "EqualityKey", "is_stable",
           "forget_class", "ARRAY_LIMIT"]


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


def static_key(v, _depth: int = 0):
    if _depth > 20:
        raise UnkeyableError("nested too deeply (a cycle?)")
    t = type(v)
    if t in _PLAIN:
        return v if t is not float and t is not bool else (t.__name__, v)
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
    if t is tuple or t is list:
        return (t.__name__,) + tuple(static_key(x, _depth + 1) for x in v)
    if t is dict:
        return ("dict",) + tuple((static_key(k, _depth + 1), static_key(x, _depth + 1))
                                 for k, x in v.items())
    if t is frozenset or t is set:
        return (t.__name__,) + tuple(sorted((static_key(x, _depth + 1) for x in v), key=repr))
    if isinstance(v, type):
        # classes made at run time (ws.smem.make_storage) can share a name; they say what they are
        extra = getattr(v, "__ws_class_key__", None)
        return class_key(v) + (extra(),) if extra is not None else _user_class_key(v)
    if isinstance(v, types.ModuleType):
        return ("module", v.__name__)
    if isinstance(v, enum.Enum):
        return ("enum", class_key(t), v.name)
    if t is functools.partial:
        return ("partial", static_key(v.func, _depth + 1), static_key(v.args, _depth + 1),
                static_key(v.keywords, _depth + 1))
    np = sys.modules.get("numpy")
    if np is not None and isinstance(v, (np.generic, np.ndarray)):
        return _numpy_key(v, np)
    if isinstance(v, types.FunctionType):
        return _function_key(v, _depth)
    if isinstance(v, types.MethodType):
        return ("method", static_key(v.__self__, _depth + 1), static_key(v.__func__, _depth + 1))
    if t is property:               # a class's property: its accessor functions' keys
        return ("property",) + tuple(static_key(f, _depth + 1) for f in (v.fget, v.fset, v.fdel))
    if t is classmethod or t is staticmethod:
        return (t.__name__, static_key(v.__func__, _depth + 1))
    if isinstance(v, types.BuiltinFunctionType):
        return ("builtin", getattr(v, "__module__", None), v.__qualname__)
    inner = getattr(v, "__ws_static_key__", None)   # warpstage's own objects (jit functions, ...)
    if inner is not None:
        return inner()
    if hasattr(t, "_fields") and isinstance(v, tuple):
        return ("namedtuple", class_key(t)) + tuple(static_key(x, _depth + 1) for x in v)
    if t.__hash__ is object.__hash__ or t.__hash__ is None:
        attrs = _attributes(v)
        if attrs is None:
            buffer = _buffer_key(v)
            if buffer is not None:
                return buffer
            raise UnkeyableError(f"a {t.__qualname__} object has no __dict__, no __slots__ and no "
                                 "__static_key__")
        return ("obj", _user_class_key(t)) + tuple((k, static_key(x, _depth + 1)) for k, x in attrs)
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
            return ("obj", _user_class_key(t)) + tuple((k, static_key(x, _depth + 1))
                                                       for k, x in attrs)
        except UnkeyableError:
            pass
    return ("eq", class_key(t), EqualityKey(v))


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
        return ("np", v.dtype.str, v.item())
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
    """What a class digest is made from: a copy of the namespace of each class of ``mro``.
    A hit compares each namespace with its copy (``==``, a C loop of key lookups with the
    identity test first, 0.6-2.7 us for 1-3 classes of 5-50 attributes on the loaded CI
    machine, where tuples of the items cost 1.9-5.7 us: benchmarks/RESULTS.md, session 7)."""
    return tuple(dict(c.__dict__) for c in mro[:-1])


def _user_class_key(cls) -> tuple:
    """A class by qualified name and a digest of what its body defines (methods by code and
    defaults, plain constants by value), so a class redefined under the same name (a module
    reloaded after an edit) is a different key, and so is a class whose attribute changed in
    place (``Config.TILE = 8``: code run natively at trace time — a property, method or plain
    helper reading ``self.TILE`` — records no fact, so the object's key must see the change).
    The digest is cached per class with a snapshot of the namespaces it was made from; a hit
    compares the snapshot (dict equality, identity first, in C), so an assignment, addition or
    deletion of a class attribute, or a new ``__bases__``, recomputes it."""
    try:
        got = _CLASS_KEYS.get(cls)
    except TypeError:           # a metaclass without __hash__: no cache
        got, cacheable = None, False
    else:
        cacheable = True
    if got is not None and cls.__mro__ is got[1]:
        try:
            for c, namespace in zip(got[1], got[2]):
                if c.__dict__ != namespace:
                    break
            else:
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
    if type(attr) in _PLAIN or (type(attr) is tuple and all(type(x) in _PLAIN for x in attr)):
        return repr(attr)
    return None


def _function_key(f, depth):
    wrapped = getattr(f, "__ws_static_key__", None)
    if wrapped is not None:
        return wrapped()
    closure = ()
    if f.__closure__:
        closure = tuple(static_key(c.cell_contents, depth + 1) if _cell_full(c) else ("empty",)
                        for c in f.__closure__)
    defaults = static_key(f.__defaults__ or (), depth + 1)
    return ("function", f.__module__, f.__qualname__, code_key(f.__code__), defaults, closure)


def _cell_full(c) -> bool:
    try:
        c.cell_contents
        return True
    except ValueError:
        return False
