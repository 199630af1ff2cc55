"""Validation of a disk-cache entry before it is used (persist.lookup): a file whose checksum is
right can still hold fields another warpstage wrote differently, or a bug wrote wrong. An entry
that fails any check here is a miss; the caller removes it and warns, and the kernel is compiled
again — never a hit with an empty cubin, and never an error on every later compile.

``problem(entry)`` returns None for a good entry, else a short description of the first bad
field. The fields are those ``persist.entry_of`` writes (docs/cache.md, "What an entry holds").
"""
from __future__ import annotations

import dataclasses
from typing import Optional

from ...ir.types import parse_type
from .files import Deferred

__all__ = ["problem", "DEFERRED"]

DEFERRED = ("ir", "llvm_ir")
"""The fields of a kernel's entry stored after its checksum (``files.put(..., deferred=)``)
and read on first use: a disk hit needs the cubin and the PTX's entry name, not these texts
(the IR and LLVM IR: 83% of the wgmma FlashAttention D=128 entry's 1.1 MB)."""

_ELF = b"\x7fELF"


def _strs(x) -> bool:
    return isinstance(x, list) and all(isinstance(s, str) for s in x)


def _int(x, lo=0) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= lo


def problem(entry: dict) -> Optional[str]:
    """None if ``entry`` is well formed, else what is wrong with it."""
    from ...backend import Resources
    from ...options import CompileOptions
    for name in ("name", "ir", "llvm_ir", "ptx"):
        value = entry.get(name)
        if not (isinstance(value, str) and value or
                name in DEFERRED and isinstance(value, Deferred)):
            return f"field {name!r} is not a non-empty string"
    if f".entry {entry['name']}" not in entry["ptx"]:
        return f"the PTX has no .entry {entry['name']}"
    if not _strs(entry.get("param_names")):
        return "field 'param_names' is not a list of strings"
    abi = entry.get("abi")
    if not isinstance(abi, list) or not all(isinstance(s, list) and len(s) == 2 and _strs(s)
                                            for s in abi):
        return "field 'abi' is not a list of [slot, type]"
    try:
        for _, t in abi:
            parse_type(t)
    except (ValueError, KeyError, TypeError) as e:
        return f"field 'abi' holds a type that does not parse ({e})"
    block = entry.get("block")
    if not isinstance(block, list) or len(block) != 3 or not all(_int(b, 1) for b in block):
        return "field 'block' is not three positive ints"
    opts = entry.get("options")
    names = {f.name for f in dataclasses.fields(CompileOptions)}
    if not isinstance(opts, dict) or set(opts) != names:
        return "field 'options' does not hold exactly the CompileOptions fields"
    explain = entry.get("explain")
    if not isinstance(explain, list) or len(explain) != len(entry["param_names"]) or not all(
            isinstance(r, list) and len(r) == 6 for r in explain):
        return "field 'explain' does not hold one 6-field row per parameter"
    if not isinstance(entry.get("guards"), list) or not all(
            isinstance(g, list) and g and g[0] in ("global", "cell", "class")
            for g in entry["guards"]):
        return "field 'guards' is not a list of guards"
    if not _int(entry.get("dynamic_smem", 0)):
        return "field 'dynamic_smem' is not a non-negative int"
    params = entry.get("params")
    if params is not None and not (isinstance(params, list) and
                                   all(isinstance(p, dict) for p in params)):
        return "field 'params' is not a list of descriptors"
    rep = entry.get("ptxas")
    if rep is None:
        return "a cubin without a ptxas report" if entry.get("cubin") is not None else None
    cubin = entry.get("cubin")
    if not isinstance(cubin, bytes) or not cubin.startswith(_ELF):
        return "the cubin is missing or is not an ELF file"
    if not isinstance(rep, dict) or not isinstance(rep.get("log"), str) or not _strs(
            rep.get("warnings")) or not isinstance(rep.get("seconds"), (int, float)):
        return "the ptxas report lacks log/warnings/seconds"
    res = rep.get("resources")
    fields = set(Resources.FIELDS)
    if not isinstance(res, dict) or not all(
            isinstance(r, dict) and set(r) <= fields and all(_int(v) for v in r.values())
            for r in res.values()):
        return "the ptxas report's resources are malformed"
    return None
