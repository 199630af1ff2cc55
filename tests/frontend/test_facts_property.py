"""Property: for random small programs that read globals, class attributes, instance attributes,
@ws.jit methods and defaults, plain helpers and their defaults, a property and a classmethod run
natively at trace time (reading a class constant, a class-level list, a constant's type),
the kernel's own default, and another module's attributes, through a static object whose graph
has a cycle (``self.me = self``), changing any one
fact the trace read recompiles and the kernel then computes what plain Python computes — never
the old code, in memory (simulator) or through the disk cache across two processes.

Each program is a module written to a file (warpstage reads kernel source): the kernel sums the
selected *pieces*, each reading one kind of fact, into a static total it stores. ``expected``
computes the same sum from the live Python objects."""
import importlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import warpstage as ws

pytestmark = pytest.mark.usefixtures("sim_target")
ROOT = Path(__file__).resolve().parents[2]

SOURCE = '''
import warpstage as ws
import {lib} as lib

G = {G}
P = {P}
T = {T}


def plain(v):
    return v * P


def plain_default(v={E}):
    return v


@ws.jit
def helper(x, d={D}):
    return x + d


class Cfg:
    K = {K}
    KL = [{L}]
    KT = {KTV}

    def __init__(self):
        self.m = {M}
        self.me = self              # a cycle: the object graph refers back to its root

    @ws.jit
    def get(self):
        return self.K * {C}

    @property
    def tile(self):                 # run natively at trace time: reads a module global
        return T * 3

    @property
    def kl(self):                   # run natively: reads a class-level list
        return self.KL[0] * 13

    @property
    def kt(self):                   # run natively: reads a class constant's type
        return 100 if type(self.KT) is int else 200

    @classmethod
    def twice(cls):                 # run natively: reads a class attribute through cls
        return cls.K * 2


def get_alt(self):
    return self.K * {C2} + 1


@ws.kernel
def kern(cfg, out: ws.Tensor, kd: ws.Static[int] = {KD}):
    total = 0
{lines}
    out[0] = ws.Int32(total)
'''

LINES = {"G": "total += G", "K": "total += cfg.K", "CK": "total += Cfg.K * 5",
         "m": "total += cfg.m * 7", "method": "total += cfg.get()",
         "default": "total += helper(0)", "plain": "total += plain(3)", "lib": "total += lib.N",
         "property": "total += cfg.tile", "classmethod": "total += cfg.twice()",
         "plain_default": "total += plain_default()", "KL": "total += cfg.kl",
         "KT": "total += cfg.kt", "kdef": "total += kd * 17", "me": "total += cfg.me.m * 19"}
MUTATIONS = {"G": "G", "K": "K", "CK": "K", "m": "m", "method": "method", "default": "default",
             "plain": "P", "lib": "lib", "property": "T", "classmethod": "K",
             "plain_default": "plain_default", "KL": "KL", "KT": "KT", "kdef": "kdef", "me": "m"}
_COUNTER = [0]
small = st.integers(-40, 40)


def write_program(folder: Path, pieces, v: dict) -> tuple:
    _COUNTER[0] += 1
    name, lib = f"prop_prog_{os.getpid()}_{_COUNTER[0]}", f"prop_lib_{os.getpid()}_{_COUNTER[0]}"
    lines = "\n".join("    " + LINES[p] for p in pieces)
    (folder / f"{lib}.py").write_text(f"N = {v['N']}\n")
    (folder / f"{name}.py").write_text(SOURCE.format(lib=lib, lines=lines, **v))
    return name, lib


def expected(mod, lib, cfg, pieces, v, alt: bool) -> int:
    parts = {"G": lambda: mod.G, "K": lambda: cfg.K, "CK": lambda: mod.Cfg.K * 5,
             "m": lambda: cfg.m * 7,
             "method": lambda: cfg.K * v["C2"] + 1 if alt else cfg.K * v["C"],
             "default": lambda: mod.helper.fn.__defaults__[0], "plain": lambda: 3 * mod.P,
             "lib": lambda: lib.N, "property": lambda: mod.T * 3,
             "classmethod": lambda: mod.Cfg.K * 2,
             "plain_default": lambda: mod.plain_default.__defaults__[0],
             "KL": lambda: mod.Cfg.KL[0] * 13,
             "KT": lambda: 100 if type(mod.Cfg.KT) is int else 200,
             "kdef": lambda: mod.kern.fn.__defaults__[0] * 17, "me": lambda: cfg.me.m * 19}
    return sum(parts[p]() for p in pieces)


VALUE_NAMES = ("G", "P", "D", "K", "M", "C", "C2", "N", "T", "E", "L", "KTV", "KD")
values = st.fixed_dictionaries({k: small for k in VALUE_NAMES})
pieces_st = st.lists(st.sampled_from(sorted(LINES)), min_size=1, max_size=5, unique=True)


@settings(max_examples=int(os.environ.get("WS_PROPERTY_EXAMPLES", "25")), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(pieces=pieces_st, v=values, which=st.integers(0, 4), new=small)
def test_changing_any_fact_read_recompiles_to_what_python_computes(tmp_path, monkeypatch, pieces,
                                                                   v, which, new):
    name, libname = write_program(tmp_path, pieces, v)
    monkeypatch.syspath_prepend(str(tmp_path))
    mod, lib = importlib.import_module(name), importlib.import_module(libname)
    try:
        cfg = mod.Cfg()
        out = np.zeros(1, np.int32)
        mod.kern[1, 1](cfg, out)
        assert out[0] == expected(mod, lib, cfg, pieces, v, False)
        piece = pieces[which % len(pieces)]
        kind = MUTATIONS[piece]
        alt = False
        if kind == "G":
            mod.G = mod.G + 1 + abs(new)
        elif kind == "P":
            mod.P = mod.P + 1 + abs(new)
        elif kind == "T":
            mod.T = mod.T + 1 + abs(new)
        elif kind == "plain_default":
            mod.plain_default.__defaults__ = (v["E"] + 1 + abs(new),)
        elif kind == "K":
            mod.Cfg.K = mod.Cfg.K + 1 + abs(new)
        elif kind == "m":
            cfg.m = cfg.m + 1 + abs(new)
        elif kind == "lib":
            lib.N = lib.N + 1 + abs(new)
        elif kind == "default":
            mod.helper.fn.__defaults__ = (v["D"] + 1 + abs(new),)
        elif kind == "method":
            mod.Cfg.get = ws.jit(mod.get_alt)
            alt = True
        elif kind == "KL":
            mod.Cfg.KL[0] = mod.Cfg.KL[0] + 1 + abs(new)      # in place
        elif kind == "KT":
            mod.Cfg.KT = float(mod.Cfg.KT)                     # an equal value of another type
        elif kind == "kdef":
            mod.kern.__defaults__ = (v["KD"] + 1 + abs(new),)
        before = mod.kern.trace_count
        mod.kern[1, 1](cfg, out)
        assert mod.kern.trace_count == before + 1, f"{piece} changed but the kernel was reused"
        assert out[0] == expected(mod, lib, cfg, pieces, v, alt), piece
        mod.kern[1, 1](cfg, out)                        # and now it is a cache hit again
        assert mod.kern.trace_count == before + 1
    finally:
        sys.modules.pop(name, None)
        sys.modules.pop(libname, None)


# -- through the disk cache, across processes -----------------------------------------------------

DRIVER = textwrap.dedent('''
    import importlib, json, sys
    import warpstage as ws
    from warpstage.jit.compiled import STAGE_COUNTS
    mod = importlib.import_module(sys.argv[1])
    ck = ws.compile(mod.kern, mod.Cfg(), ws.Tensor[ws.Int32, 1])
    print(json.dumps({"ptx": ck.ptx, "disk_hit": STAGE_COUNTS["disk_hit"]}))
''')

EDITS = {"G": ("G = {G}", "G = {x}"), "P": ("P = {P}", "P = {x}"), "K": ("K = {K}", "K = {x}"),
         "m": ("self.m = {M}", "self.m = {x}"), "method": ("self.K * {C}\n", "self.K * {x}\n"),
         "default": ("d={D}", "d={x}"), "T": ("T = {T}", "T = {x}"),
         "plain_default": ("v={E}", "v={x}"), "KL": ("KL = [{L}]", "KL = [{x}]"),
         "KT": ("KT = {KTV}", "KT = {x}.0"), "kdef": ("ws.Static[int] = {KD}", "ws.Static[int] = {x}")}


def compile_in_process(folder: Path, name: str, cache_dir: str) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(folder)]),
               WARPSTAGE_CACHE_DIR=cache_dir)
    p = subprocess.run([sys.executable, "-c", DRIVER, name], capture_output=True, text=True,
                       env=env, cwd=folder, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def _stored_total(ptx: str) -> str:
    (line,) = [ln for ln in ptx.splitlines() if "st.global" in ln]
    return line.rsplit(",", 1)[1].strip(" ;")


@settings(max_examples=int(os.environ.get("WS_PROPERTY_DISK_EXAMPLES", "2")), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(pieces=pieces_st.filter(lambda ps: any(MUTATIONS[p] in EDITS for p in ps)), v=values,
       which=st.integers(0, 4), new=small)
# a property read at trace time (and a classmethod): their class guards must be stored, so the
# second process hits the disk cache (a property object had no key: it was never stored)
@example(pieces=["property"], v=dict.fromkeys(VALUE_NAMES, 1), which=0, new=0)
@example(pieces=["classmethod"], v=dict.fromkeys(VALUE_NAMES, 2), which=0, new=1)
@example(pieces=["KL", "kdef"], v=dict.fromkeys(VALUE_NAMES, 3), which=0, new=2)
def test_a_source_edit_is_never_served_from_the_disk_cache(tmp_path_factory, pieces, v, which,
                                                           new):
    folder = tmp_path_factory.mktemp("prog")
    cache_dir = str(folder / "cache")
    name, libname = write_program(folder, pieces, v)
    first = compile_in_process(folder, name, cache_dir)
    assert first["disk_hit"] == 0
    assert compile_in_process(folder, name, cache_dir)["disk_hit"] == 1     # the cache works
    editable = [p for p in pieces if MUTATIONS[p] in EDITS]
    kind = MUTATIONS[editable[which % len(editable)]]
    old, repl = EDITS[kind]
    key = {"G": "G", "P": "P", "K": "K", "m": "M", "method": "C", "default": "D", "T": "T",
           "plain_default": "E", "KL": "L", "KT": "KTV", "kdef": "KD"}[kind]
    path = folder / f"{name}.py"
    changed = dict(v, **{key: v[key] + 1 + abs(new)})
    path.write_text(path.read_text().replace(old.format(**v), repl.format(x=changed[key]), 1))
    second = compile_in_process(folder, name, cache_dir)
    sys.path.insert(0, str(folder))
    try:
        mod, lib = importlib.import_module(name), importlib.import_module(libname)
        want = expected(mod, lib, mod.Cfg(), pieces, changed, False)
    finally:
        sys.path.remove(str(folder))
        sys.modules.pop(name, None)
        sys.modules.pop(libname, None)
    assert _stored_total(second["ptx"]) == str(want), (kind, pieces)
    if _stored_total(first["ptx"]) != str(want):
        assert second["disk_hit"] == 0
