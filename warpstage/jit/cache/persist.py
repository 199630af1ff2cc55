"""Compiled kernels on disk: the disk cache's key and entries, ``CompiledKernel.save``, ``ws.load``.

One specialization is keyed (``spec_key``) by: warpstage's version and a digest of its own source
files, LLVM's and ptxas' versions (or 'driver-jit' without ptxas), the code-generation options
(``CompileOptions.codegen_key``: not the debug/runtime ones, which never change the code), the
target ('ptx' for both 'cuda' and 'compile': they build the same PTX and cubin), the block shape,
the kernel's module, qualified name and code digest, and each parameter's Spec key.

An entry (``jit/cache/files.py`` stores it) holds the entry name, IR / LLVM IR / PTX text, the cubin
and ptxas' report, the ABI as [(slot, type text)], the ``explain`` rows, the host-argument
descriptors (``loaded.describe_params``) and the guards (frontend/guards.py) as stable data:
['global', module name, global name, key repr] (a module attribute is a global of its module),
['class', module name, class qualified name, attribute name, key repr] or ['cell', free-variable
name of the kernel function, key repr]. The code of every function the trace reached is in
these keys: a function's or ``@ws.jit`` function's static key holds its code digest and
defaults, an object's key its class's digest (static_key.py). A disk hit re-resolves every guard in this process and compares static keys;
any difference is a miss. A specialization whose guards cannot be stored that way (a closure cell
of another function, a value with no stable key) is never stored.

Only the 'cuda' and 'compile' targets use the disk; the simulator needs the IR module, which a
disk hit does not rebuild (``.ir`` returns the stored text, ``.module`` is None).
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import sys
import time
import types
import warnings
import weakref
from typing import Optional

from ..compiled import STAGE_COUNTS, CompiledKernel
from ..stages import Compiled, Lowered, Traced
from .entry_check import DEFERRED, problem
from ...errors import ArgumentError, UnsupportedError
from ...frontend.facts import class_lookup
from ...frontend.guards import CELL, CLASS, DEFAULTS, GLOBAL, defaults_guards, guards_hold
from ...frontend.kinds import Kind
from ...core.static_key import UnkeyableError, code_key, is_stable, static_key
from ...ir.types import parse_type
from .key_facts import machine
from ...options import CompileOptions
from . import files as cache

__all__ = ["spec_key", "lookup", "building", "store", "save", "load", "entry_of",
           "compiled_from_entry", "stable_guards", "resolve_guards", "FORMAT"]

FORMAT = 1
DISK_TARGETS = ("cuda", "compile")
_MISSING = object()


def spec_key(kernel, specs: list, block: tuple) -> Optional[str]:
    """The disk key (64 hex digits) of one specialization of ``kernel`` for the PTX targets, or
    None when a parameter's key has no process-independent text (``static_key.EqualityKey``)."""
    if not all(is_stable(s.key) for s in specs):
        return None
    fn = kernel.fn
    opts = kernel.options
    sources, tools = machine(opts)
    parts = (sources, tools,
             opts.codegen_key(), "ptx", tuple(block),
             (fn.__module__, fn.__qualname__, code_key(fn.__code__)),
             tuple(s.key for s in specs))
    if fn.__defaults__ or fn.__kwdefaults__:
        try:
            parts += (static_key((fn.__defaults__, fn.__kwdefaults__)),)
        except UnkeyableError:
            return None
    return cache.disk_key(parts)


# -- guards --------------------------------------------------------------------------------------

def _key_repr(value) -> Optional[str]:
    try:
        key = static_key(value)
    except (UnkeyableError, RecursionError):
        return None
    return repr(key) if is_stable(key) else None


def stable_guards(kernel, guards) -> Optional[list]:
    """``guards`` (from frontend.guards.collect_guards) as plain data, or None if one of them
    cannot be re-resolved in another process."""
    fn = kernel.fn
    own_cells = {id(c): n for n, c in zip(fn.__code__.co_freevars, fn.__closure__ or ())}
    out = []
    for container, name, value, key, kind in guards:
        if kind >= DEFAULTS:
            continue        # a function's defaults are in its own key (its global's guard)
        krepr = _key_repr(value)
        if krepr is None or krepr != repr(key):
            return None
        if kind == CLASS:
            where = (container.__module__, container.__qualname__)
            if _class_named(*where) is not container:
                return None         # a class made in a function: nothing names it stably
            out.append(["class", where[0], where[1], name, krepr])
            continue
        if kind == CELL:
            if id(container) not in own_cells:
                return None         # a cell of a @ws.jit function: nothing names it stably
            out.append(["cell", own_cells[id(container)], krepr])
            continue
        mod = container.get("__name__")
        if not isinstance(mod, str) or _globals_of(kernel, mod) is not container:
            return None
        out.append(["global", mod, name, krepr])
    return out


def _globals_of(kernel, module: str):
    if kernel.fn.__globals__.get("__name__") == module:
        return kernel.fn.__globals__
    m = sys.modules.get(module)
    return getattr(m, "__dict__", None)


def _class_named(module: str, qualname: str):
    """The class ``module.qualname`` in this process, or None."""
    if "<locals>" in qualname:
        return None
    obj = sys.modules.get(module)
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
    return obj if isinstance(obj, type) else None


def resolve_guards(kernel, data) -> Optional[tuple]:
    """The live guards (collect_guards' form) for stored guard ``data``, or None if a guarded
    value is missing or its static key differs from the stored one."""
    fn = kernel.fn
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    out = []
    for g in data:
        if g[0] == "class":
            _, mod, qualname, name, krepr = g
            container = _class_named(mod, qualname)
            value = class_lookup(container, name) if container is not None else _MISSING
            if value is _MISSING or _key_repr(value) != krepr:
                return None
            out.append((container, name, value, static_key(value), CLASS))
            continue
        if g[0] == "cell":
            _, name, krepr = g
            cell = cells.get(name)
            try:
                value = cell.cell_contents if cell is not None else _MISSING
            except ValueError:
                value = _MISSING
            container, kind = cell, CELL
        else:
            _, mod, name, krepr = g
            container = _globals_of(kernel, mod)
            value = container.get(name, _MISSING) if container is not None else _MISSING
            kind = GLOBAL
        if value is _MISSING or _key_repr(value) != krepr:
            return None
        out.append((container, name, value, static_key(value), kind))
        if isinstance(value, types.FunctionType):
            out.extend(defaults_guards(value))
    out.extend(defaults_guards(fn))
    return tuple(out)


# -- entries -------------------------------------------------------------------------------------

class StoredSpec(Kind):
    """A parameter's explain row read back from an entry: a binding (frontend/kinds/base.Kind)
    that has what ``explain`` and the recompile reasons read (rule, binding, desc, key,
    abi(name)) and nothing else (``ck.specs`` of a kernel loaded from disk)."""

    def __init__(self, row):
        _, self.rule, self.binding, self.desc, key_text, slots = row
        self.key = _KeyText(key_text)
        self._slots = [(s, parse_type(t)) for s, t in slots]

    def abi(self, name: str) -> list:
        return list(self._slots)


class _KeyText(str):
    """A key's stored repr; repr() gives the text itself so explain prints what it printed."""

    def __repr__(self) -> str:
        return str(self)


def entry_of(ck: CompiledKernel, guards: list) -> dict:
    """The entry of ``ck`` (built through ptxas when available) with stable ``guards``."""
    from ..loaded import params_of
    if getattr(ck, "_stored", None) is not None:        # a disk hit: its texts read now
        return dict(ck._stored, ir=ck.ir, llvm_ir=ck.llvm_ir, guards=guards)
    ck.beside(lambda: ck.traced.text)       # the IR printed while LLVM or ptxas runs
    assembled = ck._assemble()
    ck._take_beside()                       # (left when both had run already)
    entry = {
        "format": FORMAT, "name": ck.name, "param_names": list(ck.param_names),
        "abi": [[s, str(t)] for s, t in ck.abi], "block": list(ck.block),
        "options": dataclasses.asdict(ck.options),
        "ir": ck.ir, "llvm_ir": ck.llvm_ir, "ptx": ck.ptx,
        "explain": [[p, s.rule, s.binding, s.desc, repr(s.key), [[n, str(t)] for n, t in s.abi(p)]]
                    for p, s in zip(ck.param_names, ck.specs)],
        "params": params_of(ck), "guards": guards, "ptxas": None,
        "dynamic_smem": ck.dynamic_smem,
    }
    if assembled:
        entry["cubin"] = assembled.cubin
        entry["ptxas"] = {"log": assembled.log, "warnings": list(assembled.warnings),
                          "seconds": assembled.seconds,
                          "resources": {n: r.as_dict()
                                        for n, r in assembled.resources.items()}}
    return entry


def compiled_from_entry(entry: dict, specs=None, options=None, guards=(),
                        again=None, key=None) -> CompiledKernel:
    """A CompiledKernel with every stage taken from ``entry`` (no trace, lower or ptxas).
    ``specs``/``options`` default to the stored explain rows / options. The IR and LLVM IR may
    be ``files.Deferred`` (``cache.get(key, deferred=True)``): read when ``.ir`` /
    ``.llvm_ir`` are first asked for, or, where the file no longer holds them (replaced or
    removed since), made by ``again()`` ({'ir', 'llvm_ir'}). ``key``: the entry's disk key, for
    ``store`` to read the texts before this process writes another entry over it. Raises
    KeyError, TypeError or ValueError for an entry that lacks a field or has a malformed one."""
    from ...backend.ptxas_tool import CubinResult, Resources
    t0 = time.perf_counter()
    abi = [(s, parse_type(t)) for s, t in entry["abi"]]
    if specs is None:
        specs = [StoredSpec(row) for row in entry["explain"]]
    if options is None:
        names = {f.name for f in dataclasses.fields(CompileOptions)}
        options = CompileOptions(**{k: v for k, v in entry["options"].items() if k in names})
    rep = entry.get("ptxas")
    result = None
    if entry.get("cubin") is not None and rep is not None:
        fields = set(Resources.FIELDS)
        res = {n: Resources(**{k: v for k, v in r.items() if k in fields})
               for n, r in rep["resources"].items()}
        result = CubinResult(entry["cubin"], rep["log"], res, list(rep["warnings"]),
                             rep["seconds"])
    name, block, ptx = entry["name"], tuple(entry["block"]), entry["ptx"]
    texts = _StoredTexts(entry, again)
    if key is not None:
        _UNREAD[key] = texts
    traced = Traced(name, None, tuple(abi), block, int(entry.get("dynamic_smem", 0)),
                    stored_text=functools.partial(texts.get, "ir"))
    ck = CompiledKernel(name, None, abi, specs, list(entry["param_names"]), options, block, {},
                        guards, traced=traced, compiled=Compiled(name, ptx, result),
                        stored_lowered=lambda: Lowered(name, texts.get("llvm_ir"), ptx))
    ck._host_params = entry.get("params")
    ck._stored = {k: v for k, v in entry.items() if k != "guards"}
    ck.timings["disk"] = time.perf_counter() - t0
    return ck


class _StoredTexts:
    """The IR and LLVM IR of an entry, each a text or a ``files.Deferred`` read on first use;
    where that read fails (the file was removed, or replaced by another entry for the key),
    ``again()`` makes both anew, or, without it, the error is raised."""

    def __init__(self, entry: dict, again=None):
        self._entry, self._again, self._made = entry, again, None

    def read_now(self) -> None:
        """Read the deferred texts while the file still holds them (``store`` calls this before
        it writes another entry for the key); a failed read is left to ``get``."""
        for value in self._entry.values():
            if isinstance(value, cache.Deferred):
                try:
                    value.load()
                except (OSError, cache.CacheFormatError):
                    pass

    def get(self, name: str) -> str:
        value = self._entry[name]
        if not isinstance(value, cache.Deferred):
            return value
        try:
            return value.load()
        except (OSError, cache.CacheFormatError):
            if self._again is None:
                raise
        if self._made is None:
            self._made = self._again()
        return self._made[name]


_UNREAD: "weakref.WeakValueDictionary" = weakref.WeakValueDictionary()
"""disk key -> the _StoredTexts of this process's disk hit on it (held while its CompiledKernel
lives): ``store`` reads them before writing another entry (another specialization: the
guards differed) over the key."""


def _texts_again(kernel, specs: list, block: tuple, name: str, guards=()) -> dict:
    """{'ir', 'llvm_ir'} of this specialization made again (traced and lowered; no ptxas), for
    a disk hit whose entry lost its deferred texts before they were read. UnsupportedError when
    a value the hit's ``guards`` hold has changed since: a trace now would be another
    specialization's."""
    from .. import pipeline
    changed = [g for g in guards if not guards_hold((g,))]
    if changed:
        import reprlib
        container, gname, then = changed[0][:3]
        if isinstance(container, dict):
            owner, now = container.get("__name__"), container.get(gname, "<missing>")
        else:
            owner, now = getattr(container, "__qualname__", None), getattr(container, gname,
                                                                           "<missing>")
        what = f"{owner}.{gname}" if owner else gname
        raise UnsupportedError(
            f"kernel {name}: its IR and LLVM IR texts are no longer in its disk-cache entry "
            f"(removed, or replaced by another specialization since the disk hit), and cannot be "
            f"made again: {what}, which its trace read, has changed since (expected "
            f"{reprlib.repr(then)}, the value it was compiled for; got {reprlib.repr(now)}: a "
            f"trace now would be another specialization's).\nFix: read .ir / .llvm_ir (or "
            f"save()) before changing {gname}, or ws.compile the kernel again for the current "
            f"value.")
    kwonly = tuple(p.name for p in kernel.params if p.kind is p.KEYWORD_ONLY)
    traced, _ = pipeline.trace(kernel.fn, name, specs, kernel.param_names, kernel.options,
                               block, kwonly, {})
    return {"ir": traced.text, "llvm_ir": pipeline.lower(traced, kernel.options, {}).llvm_ir}


# -- the disk cache, as Kernel.specialize uses it -------------------------------------------------

def lookup(kernel, specs: list, block: tuple, target: str,
           after_wait: bool = False) -> Optional[CompiledKernel]:
    """The specialization from the disk cache, or None (other target, absent, stale guards,
    unreadable entry). ``after_wait``: the second look, inside ``building`` (the simulator
    target and unkeyable specializations, which ``building`` does not lock, skip it)."""
    if target not in DISK_TARGETS:
        return None
    t0 = time.perf_counter()
    key = spec_key(kernel, specs, block)
    if after_wait and (key is None or cache.path() is None):
        return None
    t1 = time.perf_counter()
    entry = cache.get(key, deferred=True) if key is not None else None
    if entry is None or entry.get("format") != FORMAT:
        return None
    t2 = time.perf_counter()
    bad = problem(entry)
    if bad is not None:
        cache.discard(key, bad)
        return None
    try:
        guards = resolve_guards(kernel, entry["guards"])
        if guards is None:
            return None
        ck = compiled_from_entry(
            entry, specs, kernel.options, guards,
            again=lambda: _texts_again(kernel, specs, block, entry["name"], guards), key=key)
    except (KeyError, TypeError, ValueError) as e:
        cache.discard(key, f"field {e}")    # damaged, though it passed the checksum: rebuild it
        return None
    ck.timings.update(disk_key=t1 - t0, disk_read=t2 - t1, disk=time.perf_counter() - t2)
    STAGE_COUNTS["disk_hit"] += 1
    return ck


@contextlib.contextmanager
def building(kernel, specs: list, block: tuple, target: str):
    """Hold the disk cache's lock of this specialization (``cache.locked``) for the ``with``
    body, in which the caller looks it up again and, on a miss, traces, compiles and
    ``store``s it; nothing is locked for the simulator target or an unkeyable
    specialization."""
    key = spec_key(kernel, specs, block) if target in DISK_TARGETS else None
    if key is None:
        yield False
        return
    with cache.locked(key) as held:
        yield held


def store(kernel, ck: CompiledKernel, specs: list, block: tuple, target: str) -> bool:
    """Build ``ck`` through ptxas and store it in the disk cache. Returns False (storing nothing)
    for the simulator target or guards that cannot be stored stably."""
    if target not in DISK_TARGETS:
        return False
    key = spec_key(kernel, specs, block)
    guards = stable_guards(kernel, ck.guards)
    if guards is None or key is None:
        return False
    entry = entry_of(ck, guards)
    unread = _UNREAD.pop(key, None)     # a disk hit of this process on the key: read its texts
    if unread is not None:
        unread.read_now()
    try:
        stored = cache.put(key, entry, DEFERRED)
    except (TypeError, ValueError) as e:       # a field that is not plain data: a warpstage bug
        warnings.warn(f"warpstage: kernel {ck.name} was not stored in the disk cache: its entry "
                      f"is not plain data ({e}). Please report this.", RuntimeWarning, stacklevel=3)
        return False
    if stored:
        STAGE_COUNTS["disk_store"] += 1
    return stored


# -- save / load ---------------------------------------------------------------------------------

def save(ck: CompiledKernel, path: str) -> None:
    """Write ``ck`` (PTX, cubin when ptxas is installed, ABI, explain rows, host-argument
    descriptors) to the file ``path``, atomically. Raises UnsupportedError if a parameter's
    binding has no stored form, OSError if ``path`` cannot be written."""
    from ..loaded import params_of
    if params_of(ck) is None:
        raise UnsupportedError(
            f"cannot save kernel {ck.name}: a parameter's binding has no stored form (expected "
            "static values, scalars, pointers, tensors and their tuples/structs).\nFix: keep "
            "the kernel in this process, or use the disk cache (it does not need this).")
    cache.write_entry(os.fspath(path), entry_of(ck, []), DEFERRED)


def load(path) -> CompiledKernel:
    """The CompiledKernel saved in ``path`` by ``CompiledKernel.save``: ``.ptx``, ``.cubin``,
    ``.resources``, ``.ir`` (text), ``.explain()``; launch it with ``ck[grid, block](*args)``.
    Raises OSError if the file cannot be read, ArgumentError if it is not a saved kernel."""
    path = os.fspath(path)
    try:
        entry = cache.read_entry(path)
    except cache.CacheFormatError as e:
        raise ArgumentError(f"ws.load: {path} is not a saved warpstage kernel ({e}).\nFix: pass a "
                            "file written by CompiledKernel.save(path).") from None
    if entry.get("format") != FORMAT:
        raise ArgumentError(f"ws.load: {path} was saved in format {entry.get('format')!r}; this "
                            f"warpstage reads format {FORMAT}.\nFix: save it again with this "
                            "warpstage version.")
    try:
        return compiled_from_entry(entry)
    except (KeyError, TypeError, ValueError) as e:
        raise ArgumentError(f"ws.load: {path} is damaged (field {e}).\nFix: save the kernel "
                            "again.") from None
