"""The launch stub's LLVM IR (``host_stub.ll``; backend/host_stub.py compiles it) and the
layouts it reads: the context (``CTX_FIELDS``), the tensor checks (``CHECK_FIELDS``) and the
entries (``ENTRY_FIELDS``), each an array of int64 words; the parameter kind codes (``KINDS``),
the miss codes (``MISS``) and the fixed sizes of its stack buffers. What the stub does:
host_stub.py's docstring."""
from __future__ import annotations

import os
import re

__all__ = ["stub_source", "CTX_FIELDS", "CHECK_FIELDS", "ENTRY_FIELDS", "KINDS", "MISS",
           "MAX_FACTS", "MAX_BUFFER", "MAX_SLOTS", "MAX_PARAMS"]

CTX_FIELDS = ("dltensor", "stream_fn", "launch_fn", "torch_type", "int_type", "bool_type", "none",
              "nparams", "device_type", "gx", "gy", "gz", "bx", "by", "bz", "has_stream",
              "stream", "nentries", "entries", "kinds", "lo", "hi", "dry", "scratch", "dry_out",
              "last_reason", "default_device", "checks", "fallback", "target_dict", "override_key",
              "auto_key", "cuda_str", "nguards", "guard_table")
# the tensor checks (``checks``: an int64 array): the ``is_nested`` getter (``PyObject *get(
# PyObject *, void *closure)``), its closure and the answer it must give (False); the dtype getter,
# its closure and the allowed dtype objects; the ``data_ptr`` method (``PyObject *(PyObject *,
# NULL)``) and the int 0 it must not return
CHECK_FIELDS = ("nested_get", "nested_closure", "nested_want", "dtype_get", "dtype_closure",
                "ndtypes", "dtypes", "data_ptr", "zero")
ENTRY_FIELDS = ("nfacts", "facts", "function", "smem", "torch_stream", "size", "template",
                "nslots", "offsets", "patch", "width")
KINDS = {"tensor": 0, "int": 1, "auto": 2, "static": 3, "none": 9}
MISS = {"arity": 1, "argument": 2, "devices": 3, "no_match": 4, "stream": 5, "driver": 6,
        "too_big": 7, "keywords": 8, "target": 9, "guards": 10}
MAX_FACTS, MAX_BUFFER, MAX_SLOTS, MAX_PARAMS = 512, 4096, 512, 256

_C = {name: i for i, name in enumerate(CTX_FIELDS)}
_E = {name: i for i, name in enumerate(ENTRY_FIELDS)}
_K = {name: i for i, name in enumerate(CHECK_FIELDS)}



def stub_source() -> str:
    """The LLVM IR text of the stub (``host_stub.ll`` beside this file), with the field numbers,
    miss codes and buffer sizes filled in."""
    fields = {name: i for name, i in _C.items()}
    fields.update({f"e_{name}": i for name, i in _E.items()})
    fields.update({f"k_{name}": i for name, i in _K.items()})
    fields.update({f"miss_{name}": code for name, code in MISS.items()})
    fields.update(max_facts=MAX_FACTS, max_params=MAX_PARAMS, max_buffer=MAX_BUFFER,
                  max_slots=MAX_SLOTS, facts_room=MAX_FACTS - 40, entry_words=len(ENTRY_FIELDS))
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "host_stub.ll")) as f:
        return _fill(f.read(), fields)


def _fill(text: str, fields: dict) -> str:
    """``text`` with each ``{name}`` of ``fields`` replaced by its value (one pass; other
    braces, LLVM's own, stay)."""
    return _FIELD_RE.sub(lambda m: str(fields[m.group(1)]) if m.group(1) in fields
                         else m.group(0), text)


_FIELD_RE = re.compile(r"\{([a-z_0-9]+)\}")
