"""The disk cache: the store (jit/cache/files.py) and its use by Kernel.specialize (persist.py)."""
import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

import warpstage as ws
from warpstage.jit.cache import persist
from warpstage.backend import find_ptxas
from warpstage.jit.compiled import STAGE_COUNTS
from warpstage.jit.cache import entry_format, files as cache

ROOT = Path(__file__).resolve().parents[2]

needs_ptxas = pytest.mark.skipif(find_ptxas(ws.CompileOptions()) is None, reason="no ptxas")

SCALE = 2.0
T1 = ws.Tensor[ws.Float32, 1]


def _scale(a: ws.Tensor, out: ws.Tensor, n: ws.Int32):
    i = ws.arch.block_idx()[0] * ws.arch.block_dim()[0] + ws.arch.thread_idx()[0]
    out[i] = a[i] * SCALE


def _tiled(a: ws.Tensor, tile: ws.Static[int], n: ws.Int32):
    a[ws.arch.thread_idx()[0]] = a[tile] + 1.0


def _unrolled(a: ws.Tensor, out: ws.Tensor, n: ws.Int32):
    i = ws.arch.thread_idx()[0]
    acc = a[i]
    for j in ws.static_range(16):           # an IR text long enough to be stored deferred
        acc = acc * 1.5 + a[i + j]
    out[i] = acc


GAIN = 1.5


def _gained(a: ws.Tensor, out: ws.Tensor, n: ws.Int32):
    i = ws.arch.thread_idx()[0]
    acc = a[i]
    for j in ws.static_range(16):           # deferred texts, and a guard on GAIN
        acc = acc * GAIN + a[i + j]
    out[i] = acc


def _closure(factor):
    def k(a: ws.Tensor, n: ws.Int32):
        a[ws.arch.thread_idx()[0]] = a[0] * factor
    return ws.kernel(k)


def counts_delta(before):
    return {k: STAGE_COUNTS[k] - before[k] for k in STAGE_COUNTS}


# -- the store ----------------------------------------------------------------------------------

def test_put_get_round_trip_info_clear(tmp_path):
    assert cache.path() == str(tmp_path / "ws-cache")
    key = cache.disk_key(("a", 1))
    assert cache.get(key) is None
    entry = {"name": "k", "rows": [[1, "x"]], "cubin": b"\x00\x01ELF" * 100, "none": None}
    assert cache.put(key, entry)
    assert cache.get(key) == entry
    assert cache.put(cache.disk_key(("b",)), {"x": 1})
    i = cache.info()
    assert i["path"] == cache.path() and i["entries"] == 2
    assert i["bytes"] == sum(p.stat().st_size for p in Path(cache.path()).iterdir())
    (Path(cache.path()) / "notes.txt").write_text("not ours")
    assert cache.clear() == 2
    assert cache.info()["entries"] == 0 and cache.get(key) is None
    assert (Path(cache.path()) / "notes.txt").exists()          # other files are left alone


def test_disk_key_is_canonical():
    assert cache.disk_key((1, "a", {"x": 1, "y": 2})) == cache.disk_key((1, "a", {"y": 2, "x": 1}))
    assert cache.disk_key(((1, 2),)) != cache.disk_key(([1, 2],))
    assert cache.disk_key((1,)) != cache.disk_key((True,)) != cache.disk_key(("1",))
    assert len(cache.disk_key(())) == 64
    with pytest.raises(ValueError, match="64 lowercase hex digits"):
        cache.get("../etc/passwd")


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage", "empty"])
def test_corrupt_entry_is_a_miss_and_is_overwritten(damage):
    key = cache.disk_key(("corrupt",))
    cache.put(key, {"ptx": "x" * 1000, "cubin": b"y" * 1000})
    f = Path(cache.path()) / (key + cache.SUFFIX)
    data = f.read_bytes()
    f.write_bytes({"truncate": data[:len(data) // 2],
                   "flip": data[:500] + bytes([data[500] ^ 1]) + data[501:],
                   "garbage": b"\x80not json at all" * 10, "empty": b""}[damage])
    with pytest.raises(cache.CacheFormatError):
        cache.read_entry(str(f))
    with pytest.warns(RuntimeWarning, match="damaged"):
        assert cache.get(key) is None
    assert not f.exists()                       # a bad entry is removed
    cache.put(key, {"ok": True})
    assert cache.get(key) == {"ok": True}


def test_concurrent_writers_never_expose_a_partial_entry():
    key = cache.disk_key(("race",))
    big = {w: {"writer": w, "cubin": bytes([w]) * 300_000} for w in range(4)}
    stop = threading.Event()
    seen, bad = set(), []

    def write(w):
        for _ in range(25):
            cache.put(key, big[w])

    def read():
        while not stop.is_set():
            e = cache.get(key)
            if e is not None:
                seen.add(e["writer"])
                if e != big[e["writer"]]:
                    bad.append(e["writer"])

    reader = threading.Thread(target=read)
    reader.start()
    writers = [threading.Thread(target=write, args=(w,)) for w in range(4)]
    for t in writers:
        t.start()
    for t in writers:
        t.join()
    stop.set()
    reader.join()
    assert not bad and seen
    assert os.listdir(cache.path()) == [key + cache.SUFFIX]     # no temporary files left


def test_unwritable_cache_warns_once_and_compiles(monkeypatch, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("WARPSTAGE_CACHE_DIR", str(blocker / "sub"))    # a folder under a file
    monkeypatch.setattr(cache, "_warned_unwritable", False)
    with pytest.warns(RuntimeWarning, match=r"(?s)cannot be written.*WARPSTAGE_CACHE_DIR"):
        assert cache.put(cache.disk_key((1,)), {"a": 1}) is False
    ck = ws.compile(ws.kernel(_scale), T1, T1, ws.Int32)       # no second warning, no failure
    assert ".entry" in ck.ptx


def test_failed_write_leaves_no_temporary_file(monkeypatch):
    def boom(src, dst):
        raise OSError("disk full")
    monkeypatch.setattr(os, "replace", boom)
    monkeypatch.setattr(cache, "_warned_unwritable", True)
    assert cache.put(cache.disk_key(("x",)), {"a": 1}) is False
    assert os.listdir(cache.path()) == []


# -- keys of specializations ---------------------------------------------------------------------

def key_of(kern, *args, block=(128, 1, 1)):
    return persist.spec_key(kern, kern.specs(list(args), placeholders=True), block)


def test_key_changes_with_static_values_not_dynamic_values():
    k = ws.kernel(_tiled)
    a = T1
    assert key_of(k, a, 4, 10) == key_of(k, a, 4, 99)           # dynamic value: same key
    assert key_of(k, a, 4, 10) != key_of(k, a, 8, 10)           # static value: new key
    assert key_of(k, a, 4, 10) != key_of(k, ws.Tensor[ws.Float16, 1], 4, 10)
    assert key_of(k, a, 4, 10) != key_of(k, a, 4, 10, block=(256, 1, 1))
    asserts = ws.kernel(device_asserts=True)(_tiled)
    assert key_of(asserts, a, 4, 10) != key_of(k, a, 4, 10)


def test_changing_static_argument_misses_dynamic_hits():
    ws.compile(ws.kernel(_tiled), T1, 4, 10)
    before = dict(STAGE_COUNTS)
    k2 = ws.kernel(_tiled)
    ws.compile(k2, T1, 4, 77)
    assert counts_delta(before)["disk_hit"] == 1 and k2.trace_count == 0
    ws.compile(k2, T1, 5, 77)
    assert k2.trace_count == 1


# -- Kernel.specialize with the disk -------------------------------------------------------------

@needs_ptxas
def test_disk_hit_does_no_work_and_matches():
    k1 = ws.kernel(_scale)
    ck1 = ws.compile(k1, T1, T1, ws.Int32)
    assert cache.info()["entries"] == 1
    before = dict(STAGE_COUNTS)
    k2 = ws.kernel(_scale)
    ck2 = ws.compile(k2, T1, T1, ws.Int32)
    d = counts_delta(before)
    assert k2.trace_count == 0
    assert d == {"trace": 0, "lower": 0, "ptx": 0, "ptxas": 0, "disk_hit": 1, "disk_store": 0}
    assert ck2.module is None and "disk" in ck2.timings
    assert (ck2.ptx, ck2.cubin, ck2.ir, ck2.llvm_ir) == (ck1.ptx, ck1.cubin, ck1.ir, ck1.llvm_ir)
    assert ck2.resources == ck1.resources and ck2.explain() == ck1.explain()
    ws.compile(k2, T1, T1, ws.Int32)                            # now an in-memory hit
    assert counts_delta(before)["disk_hit"] == 1


def test_changed_global_is_a_miss(monkeypatch):
    ws.compile(ws.kernel(_scale), T1, T1, ws.Int32)
    monkeypatch.setattr(sys.modules[__name__], "SCALE", 3.0)
    k2 = ws.kernel(_scale)
    ck = ws.compile(k2, T1, T1, ws.Int32)
    assert k2.trace_count == 1 and "3.0" in ck.ir
    k3 = ws.kernel(_scale)                                      # the new value was stored
    assert "3.0" in ws.compile(k3, T1, T1, ws.Int32).ir and k3.trace_count == 0


def test_closure_cells_of_the_kernel_are_guarded():
    ws.compile(_closure(2.0), T1, ws.Int32)
    same, other = _closure(2.0), _closure(5.0)
    ws.compile(same, T1, ws.Int32)
    ws.compile(other, T1, ws.Int32)
    assert same.trace_count == 0 and other.trace_count == 1


LOCK = threading.Lock()


def _reads_unkeyable(a: ws.Tensor):
    LOCK                                                        # noqa: B018 - a guarded global
    a[0] = a[1]


def test_unkeyable_global_is_not_stored():
    ws.compile(ws.kernel(_reads_unkeyable), T1)
    assert cache.info()["entries"] == 0


def test_simulator_target_never_uses_the_disk():
    k = ws.kernel(_scale)
    k.specialize([T1, T1, ws.Int32], (128, 1, 1), "sim", placeholders=True)
    assert cache.info()["entries"] == 0


def test_corrupt_kernel_entry_is_rebuilt():
    ws.compile(ws.kernel(_scale), T1, T1, ws.Int32)
    (f,) = Path(cache.path()).iterdir()
    f.write_bytes(f.read_bytes()[:100])
    k2 = ws.kernel(_scale)
    with pytest.warns(RuntimeWarning, match="damaged"):
        ws.compile(k2, T1, T1, ws.Int32)
    assert k2.trace_count == 1
    k3 = ws.kernel(_scale)
    ws.compile(k3, T1, T1, ws.Int32)
    assert k3.trace_count == 0


# -- across processes ----------------------------------------------------------------------------

KMOD = textwrap.dedent("""
    import warpstage as ws

    SCALE = 2.0

    @ws.kernel
    def scale(a: ws.Tensor, out: ws.Tensor, n: ws.Int32):
        i = ws.arch.block_idx()[0] * ws.arch.block_dim()[0] + ws.arch.thread_idx()[0]
        out[i] = a[i] * SCALE
""")

DRIVER = textwrap.dedent("""
    import hashlib, json, sys
    import warpstage as ws
    from warpstage.jit.compiled import STAGE_COUNTS
    import kmod
    if len(sys.argv) > 1:
        kmod.SCALE = float(sys.argv[1])
    T = ws.Tensor[ws.Float32, 1]
    ck = ws.compile(kmod.scale, T, T, ws.Int32)
    print(json.dumps({"counts": STAGE_COUNTS, "trace_count": kmod.scale.trace_count,
                      "ptx": ck.ptx, "cubin": hashlib.sha256(ck.cubin or b"").hexdigest(),
                      "explain": ck.explain(), "ir": ck.ir}))
""")


def run_process(tmp_path, *argv):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(tmp_path)]))
    p = subprocess.run([sys.executable, "-c", DRIVER, *argv], capture_output=True, text=True,
                       env=env, cwd=tmp_path, timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


@needs_ptxas
def test_second_process_loads_from_disk(tmp_path):
    (tmp_path / "kmod.py").write_text(KMOD)
    first = run_process(tmp_path)
    assert first["counts"]["trace"] == 1 and first["counts"]["disk_store"] == 1
    second = run_process(tmp_path)
    c = second["counts"]
    assert second["trace_count"] == 0
    assert (c["trace"], c["lower"], c["ptx"], c["ptxas"], c["disk_hit"]) == (0, 0, 0, 0, 1)
    for field in ("ptx", "cubin", "explain", "ir"):
        assert second[field] == first[field], field
    changed = run_process(tmp_path, "3.0")                      # a global the kernel reads
    assert changed["trace_count"] == 1 and changed["counts"]["disk_hit"] == 0
    assert changed["ptx"] != first["ptx"]


def test_cli_cache_info_and_clear(tmp_path):
    cache.put(cache.disk_key((1,)), {"a": 1})
    env = dict(os.environ, PYTHONPATH=str(ROOT))

    def cli(*args):
        p = subprocess.run([sys.executable, "-m", "warpstage", "cache", *args],
                           capture_output=True, text=True, env=env, timeout=120)
        assert p.returncode == 0, p.stderr
        return p.stdout
    out = cli("info")
    assert f"path: {cache.path()}" in out and "entries: 1" in out
    assert "removed 1 entry" in cli("clear")
    assert "entries: 0" in cli("info")


# -- keys of hashable static objects -------------------------------------------------------------

class _Collides:
    """Hashable, no attributes to key structurally, every instance hashing alike."""
    __slots__ = ()

    def __init__(self, tag):
        _TAGS[id(self)] = tag

    def __eq__(self, other):
        return type(other) is _Collides and _TAGS[id(self)] == _TAGS[id(other)]

    def __hash__(self):
        return 7


_TAGS: dict = {}


def _with_policy(a: ws.Tensor, policy: ws.Static):
    a[0] = a[0] + 1.0


def test_colliding_hashes_do_not_share_a_key():
    from warpstage.core.static_key import is_stable, static_key
    x, y, x2 = _Collides("x"), _Collides("y"), _Collides("x")
    assert static_key(x) != static_key(y)            # same hash(), not equal
    assert static_key(x) == static_key(x2)           # equal objects share a specialization
    assert not is_stable(static_key(x))
    k = ws.kernel(_with_policy)
    assert key_of(k, T1, x) is None                  # never named in the disk cache


def test_frozen_dataclass_with_strings_is_keyed_by_its_fields():
    import dataclasses
    from warpstage.core.static_key import is_stable, static_key

    @dataclasses.dataclass(frozen=True)
    class Cfg:
        name: str
        tile: int
    assert static_key(Cfg("a", 64)) == static_key(Cfg("a", 64))
    assert static_key(Cfg("a", 64)) != static_key(Cfg("b", 64))
    assert is_stable(static_key(Cfg("a", 64)))
    assert "'a'" in repr(static_key(Cfg("a", 64)))    # the text, not hash("a"), which varies


def test_static_key_text_is_the_same_under_another_hash_seed():
    code = ("import dataclasses; from warpstage.core.static_key import static_key\n"
            "@dataclasses.dataclass(frozen=True)\nclass Cfg:\n    name: str\n"
            "print(repr(static_key(Cfg('attention'))))")
    outs = set()
    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=seed, PYTHONPATH=str(ROOT))
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                           timeout=60)
        assert p.returncode == 0, p.stderr
        outs.add(p.stdout.strip().replace("__main__", "m"))
    assert len(outs) == 1, outs


# -- faults: entries that pass the checksum but are wrong, odd files, killed writers -------------

def _stored_entry():
    ws.compile(ws.kernel(_scale), T1, T1, ws.Int32)
    # the kernel's entry; the first compile of _scale in a process also stores its rewritten
    # code as a fact (.wsf, jit/cache/code_store.py), which these tests do not corrupt
    (f,) = [p for p in Path(cache.path()).iterdir()
            if p.suffix == cache.SUFFIX and not p.name.startswith(".tmp-")]
    return f, cache.read_entry(str(f))


@needs_ptxas
def test_a_disk_hit_reads_the_ir_texts_only_when_asked(tmp_path):
    ck = ws.compile(ws.kernel(_unrolled), T1, T1, ws.Int32)
    k = ws.kernel(_unrolled)
    hit = ws.compile(k, T1, T1, ws.Int32)
    assert k.trace_count == 0
    assert all(isinstance(hit._stored[n], cache.Deferred) for n in ("ir", "llvm_ir"))
    assert (hit.ir, hit.llvm_ir, hit.ptx, hit.cubin) == (ck.ir, ck.llvm_ir, ck.ptx, ck.cubin)
    hit.save(tmp_path / "k.wsc")                # a hit's entry written again: its texts read
    loaded = ws.load(tmp_path / "k.wsc")
    assert (loaded.ir, loaded.llvm_ir) == (ck.ir, ck.llvm_ir)


@needs_ptxas
@pytest.mark.parametrize("how", ["replaced", "removed"])
def test_the_texts_of_an_entry_gone_before_they_were_read_are_made_again(how):
    ck = ws.compile(ws.kernel(_unrolled), T1, T1, ws.Int32)
    (f,) = [p for p in Path(cache.path()).iterdir() if p.suffix == cache.SUFFIX]
    entry = cache.read_entry(str(f))
    hit = ws.compile(ws.kernel(_unrolled), T1, T1, ws.Int32)   # texts not read yet
    if how == "replaced":           # another process stored other texts under the key
        cache.write_entry(str(f), dict(entry, ir="x" * 5000, llvm_ir="y" * 5000),
                          persist.DEFERRED)
    else:
        f.unlink()
    traces = STAGE_COUNTS["trace"]
    assert (hit.ir, hit.llvm_ir) == (ck.ir, ck.llvm_ir)
    assert STAGE_COUNTS["trace"] == traces + 1


@needs_ptxas
def test_a_hit_keeps_its_texts_when_this_process_stores_another_specialization(monkeypatch):
    ck = ws.compile(ws.kernel(_gained), T1, T1, ws.Int32)       # stored, GAIN = 1.5
    k = ws.kernel(_gained)
    hit = ws.compile(k, T1, T1, ws.Int32)                       # texts not read yet
    monkeypatch.setattr(sys.modules[__name__], "GAIN", 2.5)
    other = ws.compile(k, T1, T1, ws.Int32)     # the guard differs: traced, stored over the key
    assert "disk" not in other.timings and other.ir != ck.ir.replace(ck.name, other.name)
    assert (hit.ir, hit.llvm_ir, hit.ptx) == (ck.ir, ck.llvm_ir, ck.ptx)


@needs_ptxas
def test_the_texts_of_a_gone_entry_are_not_made_for_a_changed_global(monkeypatch):
    ck = ws.compile(ws.kernel(_gained), T1, T1, ws.Int32)
    (f,) = [p for p in Path(cache.path()).iterdir() if p.suffix == cache.SUFFIX]
    hit = ws.compile(ws.kernel(_gained), T1, T1, ws.Int32)
    f.unlink()
    monkeypatch.setattr(sys.modules[__name__], "GAIN", 2.5)
    with pytest.raises(ws.UnsupportedError, match=r"GAIN.*expected 1\.5.*got 2\.5(.|\n)*Fix:") as e:
        hit.ir
    assert e.value.__traceback__.tb_next is None            # this file's frame only
    monkeypatch.setattr(sys.modules[__name__], "GAIN", 1.5)
    assert (hit.ir, hit.llvm_ir) == (ck.ir, ck.llvm_ir)         # as it was: made again


def test_deferred_texts_are_checked_when_read(tmp_path):
    key = cache.disk_key(("deferred",))
    entry = {"name": "k", "ir": "i" * 3000, "llvm_ir": "l" * 2000, "ptx": "p" * 1500,
             "cubin": b"\x7fELF" + bytes(100)}
    cache.put(key, entry, ("ir", "llvm_ir"))
    f = Path(cache.path()) / (key + cache.SUFFIX)
    assert cache.read_entry(str(f)) == entry
    lazy = cache.read_entry(str(f), deferred=True)
    assert lazy["ptx"] == entry["ptx"] and lazy["cubin"] == entry["cubin"]
    assert lazy["llvm_ir"].load() == entry["llvm_ir"]
    data = bytearray(f.read_bytes())
    data[-10] ^= 1                                  # a flipped bit in the deferred LLVM IR
    f.write_bytes(bytes(data))
    lazy = cache.read_entry(str(f), deferred=True)  # the checked part is intact: readable
    with pytest.raises(cache.CacheFormatError, match="checksum mismatch of the texts"):
        lazy["ir"].load()
    with pytest.raises(cache.CacheFormatError) as e:    # the whole entry (ws.load's read)
        cache.read_entry(str(f))
    assert "checksum mismatch of the texts" in str(e.value) and "header" not in str(e.value)
    with pytest.warns(RuntimeWarning, match="damaged"):
        assert cache.get(key) is None               # a reader of the whole entry: a bad entry
    cache.put(key, entry, ("ir", "llvm_ir"))
    f.write_bytes(f.read_bytes()[:-1])              # truncated: no hit, deferred or not
    with pytest.warns(RuntimeWarning, match="truncated"):
        assert cache.get(key, deferred=True) is None


@needs_ptxas
@pytest.mark.parametrize("field,bad", [
    ("ptxas", {"log": 3, "warnings": [], "seconds": 0.1, "resources": {}}),
    ("ptxas_resources", {"k": {"registers": "many"}}),
    ("block", [128, 0, 1]),
    ("ptx", ""),
    ("options", {"arch": "sm_90a"}),
    ("cubin", b""),
    ("abi", [["x", "not-a-type<"]]),
])
def test_entry_with_a_valid_checksum_but_a_bad_field_is_removed_and_rebuilt(field, bad):
    f, entry = _stored_entry()
    if field == "ptxas_resources":
        entry["ptxas"] = dict(entry["ptxas"], resources=bad)
    else:
        entry[field] = bad
    cache.write_entry(str(f), entry)            # a fresh checksum over the bad field
    k = ws.kernel(_scale)
    with pytest.warns(RuntimeWarning, match="damaged"):
        ck = ws.compile(k, T1, T1, ws.Int32)
    assert k.trace_count == 1 and ck.cubin.startswith(b"\x7fELF")
    k2 = ws.kernel(_scale)                      # the rebuilt entry is good again
    ws.compile(k2, T1, T1, ws.Int32)
    assert k2.trace_count == 0


def test_blob_offsets_past_the_data_are_a_format_error(tmp_path):
    key = cache.disk_key(("blob",))
    cache.put(key, {"cubin": b"abc"})
    f = Path(cache.path()) / (key + cache.SUFFIX)
    data = bytearray(f.read_bytes())
    text = data.decode("latin-1")
    i = text.index('"blobs":[["cubin",0,3]]')
    new = text[:i] + '"blobs":[["cubin",9,3]]' + text[i + len('"blobs":[["cubin",0,3]]'):]
    body = new.encode("latin-1")[len(cache.MAGIC) + 16:-32]
    import hashlib
    f.write_bytes(new.encode("latin-1")[:-32] + hashlib.sha256(body).digest())
    with pytest.raises(cache.CacheFormatError, match="outside"):
        cache.read_entry(str(f))


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_in_place_of_an_entry_does_not_block():
    key = cache.disk_key(("fifo",))
    os.makedirs(cache.path(), exist_ok=True)
    os.mkfifo(Path(cache.path()) / (key + cache.SUFFIX))
    with pytest.warns(RuntimeWarning, match="not a regular file"):
        assert cache.get(key) is None


def test_an_oversized_entry_is_not_read(monkeypatch):
    key = cache.disk_key(("big",))
    cache.put(key, {"cubin": b"x" * 5000})
    monkeypatch.setattr(entry_format, "MAX_ENTRY_BYTES", 1000)
    with pytest.warns(RuntimeWarning, match="bound"):
        assert cache.get(key) is None


def test_old_temporary_files_are_counted_and_removed():
    os.makedirs(cache.path(), exist_ok=True)
    old = Path(cache.path()) / (".tmp-killed" + cache.SUFFIX)
    new = Path(cache.path()) / (".tmp-writing" + cache.SUFFIX)
    old.write_bytes(b"partial")
    new.write_bytes(b"partial")
    os.utime(old, (1, 1))
    assert cache.info()["temp_files"] == 2
    cache.put(cache.disk_key(("t",)), {"a": 1})
    assert not old.exists() and new.exists()    # a live writer's file is left alone
    assert cache.info()["temp_files"] == 1 and cache.info()["entries"] == 1


def test_empty_cache_dir_turns_the_disk_cache_off(monkeypatch):
    monkeypatch.setenv("WARPSTAGE_CACHE_DIR", "")
    assert cache.path() is None
    assert cache.put(cache.disk_key(("off",)), {"a": 1}) is False
    assert cache.get(cache.disk_key(("off",))) is None
    assert cache.info()["entries"] == 0 and cache.clear() == 0
    env = dict(os.environ, PYTHONPATH=str(ROOT), WARPSTAGE_CACHE_DIR="")
    p = subprocess.run([sys.executable, "-m", "warpstage", "cache", "info"], capture_output=True,
                       text=True, env=env, timeout=120)
    assert p.returncode == 0 and "off" in p.stdout


def test_with_the_disk_cache_off_facts_are_skipped_and_kernels_compile(monkeypatch, tmp_path):
    monkeypatch.setenv("WARPSTAGE_CACHE_DIR", "")
    assert cache.get_fact(cache.disk_key(("fact",))) is None
    cache.put_fact(cache.disk_key(("fact",)), {"a": "b"})          # nothing to write, no error
    code = ("import warpstage as ws\n"
            "@ws.kernel\n"
            "def k(x: ws.Tensor):\n"
            "    x[0] = 1.0\n"
            "print(bool(ws.compile(k, ws.Tensor[ws.Float32, 1], block=(32, 1, 1)).ptx))\n")
    script = tmp_path / "cache_off_kernel.py"
    script.write_text(code)
    env = dict(os.environ, PYTHONPATH=str(ROOT), WARPSTAGE_CACHE_DIR="")
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env,
                       timeout=300)
    assert p.returncode == 0 and p.stdout.strip() == "True", p.stderr[-2000:]


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root can always write")
def test_cli_clear_on_an_unwritable_folder_fails_saying_so():
    cache.put(cache.disk_key((1,)), {"a": 1})
    os.chmod(cache.path(), 0o500)
    try:
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        p = subprocess.run([sys.executable, "-m", "warpstage", "cache", "clear"],
                           capture_output=True, text=True, env=env, timeout=120)
    finally:
        os.chmod(cache.path(), 0o700)
    assert p.returncode == 1 and "could not remove 1 file" in p.stderr


def test_clear_raises_when_a_file_cannot_be_removed(monkeypatch):
    cache.put(cache.disk_key((2,)), {"a": 1})

    def refuse(path, *a, **k):
        raise PermissionError(13, "Permission denied", path)
    monkeypatch.setattr(cache.os, "unlink", refuse)
    with pytest.raises(PermissionError, match="could not remove 1 file"):
        cache.clear()


def test_cli_clear_exits_non_zero_when_a_file_cannot_be_removed(monkeypatch, capsys):
    from warpstage.__main__ import cache_cmd
    cache.put(cache.disk_key((3,)), {"a": 1})

    def refuse(path, *a, **k):
        raise PermissionError(13, "Permission denied", path)
    monkeypatch.setattr(cache.os, "unlink", refuse)
    assert cache_cmd("clear") == 1
    err = capsys.readouterr().err
    assert "could not remove 1 file" in err and "Fix:" in err


def test_properties_and_class_method_wrappers_have_stable_keys():
    """A class guard on a property (or a classmethod / staticmethod object) is stored in the
    disk cache: its key is its accessor functions' keys, reproducible in another process, and
    differs when an accessor's code differs."""
    from warpstage.core.static_key import is_stable, static_key

    def get_a(self):
        return 1

    def get_b(self):
        return 2

    for wrap in (property, classmethod, staticmethod):
        key = static_key(wrap(get_a))
        assert is_stable(key) and key == static_key(wrap(get_a))
        assert key != static_key(wrap(get_b))
    assert static_key(property(get_a)) != static_key(classmethod(get_a))
    assert static_key(property(get_a, get_b)) != static_key(property(get_a))
