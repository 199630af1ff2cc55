"""Move modules into the rooms of DESIGN §3 (``git mv``) and rewrite every import of them.

    python3 scripts/move_rooms.py            # from the repository root; prints what it did
    python3 scripts/move_rooms.py --check    # exit 1 if a move or a rewrite is still to do

Idempotent: a second run finds nothing to do. It is written to be re-run on a ``main`` that
moved on (other branches edit the moved files): drop the commit holding the moves, run this
script, commit its result, re-apply the hand edits (see docs/architecture.md, "Moving rooms").

What it rewrites, in every tracked ``.py`` file of warpstage/, tests/, scripts/, benchmarks/
and examples/:

- ``from X import ...`` and ``import X`` statements (top-level or inside functions) naming a
  moved module, or importing a moved module by name (``from . import progress``); a relative
  import stays relative, recomputed from the file's new place;
- folders computed from ``__file__`` in a moved file (one more ``os.path.dirname`` per level);
- dotted names ``warpstage.<old>`` in code and strings (``mock.patch`` targets, ``python -m``),
  and paths ``warpstage/<old>.py`` in comments, docstrings and docs/*.md.

Module names are resolved with ``ast``, so only real imports change; the text of each statement
is kept except its module part (comments and line breaks stay).
"""
from __future__ import annotations

import ast
import os
import re
import subprocess
import sys

MOVES = {
    # the core layer (DESIGN §3): trace context, builder access, source locations, value
    # protocol, static keys; imports only ir/ and errors
    "warpstage.frontend.trace": "warpstage.core.trace",
    "warpstage.frontend.source": "warpstage.core.source",
    "warpstage.frontend.values": "warpstage.core.values",
    "warpstage.frontend.static_key": "warpstage.core.static_key",
    "warpstage.frontend.unbound": "warpstage.core.unbound",
    # jit/: kernel objects, stages, launching, explain
    "warpstage.api": "warpstage.jit.kernel",
    "warpstage.compiled": "warpstage.jit.compiled",
    "warpstage.launch": "warpstage.jit.launch",
    "warpstage.launch_config": "warpstage.jit.launch_config",
    "warpstage.loaded": "warpstage.jit.loaded",
    "warpstage.prepared": "warpstage.jit.prepared",
    "warpstage.explain": "warpstage.jit.explain",
    "warpstage.tracebacks": "warpstage.jit.tracebacks",
    "warpstage.progress": "warpstage.jit.progress",
    "warpstage.precompile": "warpstage.jit.precompile",
    "warpstage.frontend.fast_call": "warpstage.jit.fast_call",
    # jit/cache/: the disk cache (keys, entries, files) beside the in-memory one
    "warpstage.persist": "warpstage.jit.cache.persist",
    "warpstage.entry_check": "warpstage.jit.cache.entry_check",
    "warpstage.runtime.cache": "warpstage.jit.cache.files",
    "warpstage.key_facts": "warpstage.jit.cache.key_facts",
    "tests.test_shared_cache": "tests.jit.test_shared_cache",
    # tests mirror the modules
    "tests.test_api": "tests.jit.test_kernel",
    "tests.test_prepared": "tests.jit.test_prepared",
    "tests.test_precompile": "tests.jit.test_precompile",
    "tests.test_progress": "tests.jit.test_progress",
    "tests.test_save_load": "tests.jit.test_save_load",
    "tests.test_disk_hit": "tests.jit.test_disk_hit",
    "tests.frontend.test_fast_call": "tests.jit.test_fast_call",
    "tests.frontend.test_fast_call_adapted": "tests.jit.test_fast_call_adapted",
    # the GPU tests beside the simulator tests whose kernels they run (no parallel tree, no
    # sys.path: pytest puts a test file's own folder on sys.path)
    "tests.gpu.test_attention_features_gpu": "tests.ops.test_attention_features_gpu",
    "tests.gpu.test_control_flow_gpu": "tests.frontend.test_control_flow_gpu",
    "tests.gpu.test_examples_gpu": "tests.examples.test_examples_gpu",
    "tests.gpu.test_fast_call_gpu": "tests.jit.test_fast_call_gpu",
    "tests.gpu.test_flash_attention_gpu": "tests.ops.test_flash_attention_gpu",
    "tests.gpu.test_flash_attention_wgmma_gpu": "tests.examples.test_flash_attention_wgmma_gpu",
    "tests.gpu.test_graphs_gpu": "tests.runtime.test_graphs_gpu",
    "tests.gpu.test_hopper_gpu": "tests.lang.test_hopper_gpu",
    "tests.gpu.test_layout_gpu": "tests.lang.test_layout_gpu",
    "tests.gpu.test_matmul_gpu": "tests.ops.test_matmul_gpu",
    "tests.gpu.test_mbarrier_hint_gpu": "tests.lang.test_mbarrier_hint_gpu",
    "tests.gpu.test_mma_gpu": "tests.lang.test_mma_gpu",
    "tests.gpu.test_tma_gpu": "tests.lang.test_tma_gpu",
    "tests.gpu.test_tma_launch_gpu": "tests.runtime.test_tma_launch_gpu",
    "tests.gpu.test_torch_compile_gpu": "tests.test_torch_compile_gpu",
    "tests.gpu.test_wgmma_gpu": "tests.lang.test_wgmma_gpu",
}
"""Old module -> new module. Dotted names; the files are ``name.replace('.', '/') + '.py'``."""

NEW_PACKAGES = {
    "warpstage/jit/__init__.py":
        '"""The jit room (DESIGN §3): ``Kernel`` / ``JitFunction`` objects, the compile stages\n'
        '(``stages.py``: Traced -> Lowered -> Compiled, made by ``pipeline.py``), launching\n'
        '(``launch*.py``, ``fast_call.py``, ``prepared.py``, ``loaded.py``), ``explain`` and the\n'
        'caches (``cache/``). Imports the rooms below it; nothing below imports it."""\n',
    "warpstage/jit/cache/__init__.py":
        '"""The caches of compiled specializations: the disk cache (``persist.py``: keys and\n'
        'entries; ``files.py``: the cache folder; ``entry_check.py``: validating a stored entry)\n'
        'and the in-memory one (``memory.py``)."""\n',
}

REMOVED = ("tests/gpu/conftest.py",)
"""Files the moves make useless (tests/gpu/'s sys.path set-up; its cuda target fixture is the
root conftest's: every test marked gpu runs on the cuda target)."""

ROOTS = ("warpstage", "tests", "scripts", "benchmarks", "examples")
TEXT_ROOTS = ("docs", "README.md", "benchmarks/RESULTS.md")
SELF = "scripts/move_rooms.py"


def _path(mod: str) -> str:
    return mod.replace(".", "/") + ".py"


def _package_of(path: str) -> list:
    return path[:-3].split("/")[:-1]


def _spec(from_pkg: list, target: list, relative: bool) -> str:
    if not relative:
        return ".".join(target)
    common = 0
    while (common < len(from_pkg) and common < len(target)
           and from_pkg[common] == target[common]):
        common += 1
    return "." * (len(from_pkg) - common + 1) + ".".join(target[common:])


def _resolve(pkg: list, node: ast.ImportFrom) -> list:
    base = pkg[:len(pkg) - node.level + 1] if node.level else []
    return base + (node.module.split(".") if node.module else [])


def _moved(mod: list):
    """The new name (list) of module ``mod``, or of the moved module it lies inside."""
    name = ".".join(mod)
    for old, new in MOVES.items():
        if name == old or name.startswith(old + "."):
            return (new + name[len(old):]).split(".")
    return None


def rewrite(text: str, path: str, new_path: str) -> str:
    """``text`` (the file at ``path``, moving to ``new_path``) with its imports rewritten."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return text
    lines = text.splitlines(keepends=True)
    old_pkg, new_pkg = _package_of(path), _package_of(new_path)
    edits = []      # (first line, last line, replacement lines)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            mod = _resolve(old_pkg, node)
            relative = node.level > 0
            target = _moved(mod)
            by_name = [a for a in node.names if _moved(mod + [a.name]) and target is None
                       and ".".join(mod + [a.name]) in MOVES]
            if target is None and not by_name:
                if relative and old_pkg != new_pkg:
                    target = mod            # the file moves: recompute its relative imports
                else:
                    continue
            if by_name:
                edits.append((node.lineno, node.end_lineno,
                              _split(node, mod, by_name, new_pkg, relative, lines)))
                continue
            old = _module_text(node)
            new = _spec(new_pkg, target, relative)
            first = lines[node.lineno - 1]
            pat = re.compile(r"(\bfrom\s+)" + re.escape(old) + r"(\s+import\b)")
            if pat.search(first) and old != new:
                edits.append((node.lineno, node.lineno, [pat.sub(
                    lambda m: m.group(1) + new + m.group(2), first, count=1)]))
        elif isinstance(node, ast.Import):
            first = lines[node.lineno - 1]
            changed = first
            for a in node.names:
                target = _moved(a.name.split("."))
                if target:
                    changed = re.sub(r"(?<![\w.])" + re.escape(a.name) + r"(?![\w])",
                                     ".".join(target), changed, count=1)
            if changed != first:
                edits.append((node.lineno, node.lineno, [changed]))
    for lo, hi, repl in sorted(edits, reverse=True):
        lines[lo - 1:hi] = repl
    return _dotted(_file_relative("".join(lines), len(new_pkg) - len(old_pkg)))


def _file_relative(text: str, deeper: int) -> str:
    """Folders computed from ``__file__`` (``os.path.dirname(os.path.abspath(__file__))``, the
    package root with two ``dirname``) keep naming the same folder in a file moved ``deeper``
    levels down."""
    if not deeper:
        return text

    def fix(m):
        n = m.group(1).count("os.path.dirname(") + deeper
        return "os.path.dirname(" * n + "os.path.abspath(__file__)" + ")" * n
    return re.sub(r"((?:os\.path\.dirname\()+)os\.path\.abspath\(__file__\)\)+", fix, text)


def _module_text(node: ast.ImportFrom) -> str:
    return "." * node.level + (node.module or "")


def _split(node, mod, by_name, new_pkg, relative, lines) -> list:
    """``from P import a, b`` where some names are moved modules: one statement per package."""
    indent = re.match(r"\s*", lines[node.lineno - 1]).group(0)
    groups: dict = {}
    for a in node.names:
        full = mod + [a.name]
        dest = _moved(full) if a in by_name else full
        parent = dest[:-1]
        groups.setdefault(tuple(parent), []).append(
            dest[-1] + (f" as {a.asname}" if a.asname else
                        "" if dest[-1] == a.name else f" as {a.name}"))
    out = []
    for parent, names in groups.items():
        out.append(f"{indent}from {_spec(new_pkg, list(parent), relative)} import "
                   f"{', '.join(names)}\n")
    return out


BARE = {"api.py": "jit/kernel.py"}
"""File names that a move renames, as prose names them without a folder."""


def _dotted(text: str) -> str:
    """``warpstage.old.name`` in code and strings, and ``warpstage/old.py`` paths."""
    for old, new in BARE.items():
        text = re.sub(r"(?<![\w/.])" + re.escape(old), new, text)
    for old, new in MOVES.items():
        text = re.sub(r"(?<![\w/])" + re.escape(_path(old)), _path(new), text)
        room_old, room_new = _path(old).split("/", 1)[1], _path(new).split("/", 1)[1]
        if old.startswith("warpstage.") and "/" in room_old:    # "frontend/fast_call.py"
            text = re.sub(r"(?<![\w/])" + re.escape(room_old), room_new, text)
        if not old.startswith("warpstage."):
            continue
        # a dotted module name (not the function ws.explain: only module.attribute forms and
        # -m/mock targets are names of modules; "warpstage.explain(" stays)
        text = re.sub(r"(?<![\w.])" + re.escape(old) + r"(?=\.[A-Za-z_]|[\"'\s`:,)]|$)",
                      new, text, flags=re.M) if not old.endswith(".explain") else re.sub(
            r"(?<![\w.])" + re.escape(old) + r"(?=\.[A-Za-z_])", new, text)
    return text


def _tracked(roots) -> list:
    out = subprocess.run(["git", "ls-files", "--", *roots], capture_output=True, text=True,
                         check=True).stdout.split()
    return [p for p in out if os.path.exists(p)]


def plan() -> tuple:
    """(moves to make [(old path, new path)], {path: new text}) for the tree as it is now."""
    moves = [(_path(o), _path(n)) for o, n in MOVES.items() if os.path.exists(_path(o))]
    dest = dict(moves)
    texts = {}
    for path in _tracked(ROOTS):
        if not path.endswith(".py") or path == SELF:
            continue
        text = open(path).read()
        new = rewrite(text, path, dest.get(path, path))
        if new != text:
            texts[path] = new
    for path in _tracked(TEXT_ROOTS):
        if path.endswith(".md"):
            text = open(path).read()
            new = _dotted(text)
            if new != text:
                texts[path] = new
    return moves, texts


def main(argv) -> int:
    moves, texts = plan()
    missing = [p for p in NEW_PACKAGES if not os.path.exists(p)]
    removed = [p for p in REMOVED if os.path.exists(p)]
    if "--check" in argv:
        for old, new in moves:
            print(f"to move: {old} -> {new}")
        for path in texts:
            print(f"to rewrite: {path}")
        for path in missing:
            print(f"to create: {path}")
        for path in removed:
            print(f"to remove: {path}")
        return 1 if moves or texts or missing or removed else 0
    for path, text in texts.items():
        with open(path, "w") as f:
            f.write(text)
    for path in missing:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(NEW_PACKAGES[path])
        subprocess.run(["git", "add", path], check=True)
    for old, new in moves:
        os.makedirs(os.path.dirname(new), exist_ok=True)
        subprocess.run(["git", "mv", old, new], check=True)
    for path in removed:
        subprocess.run(["git", "rm", "-q", path], check=True)
    print(f"moved {len(moves)} files, rewrote {len(texts)}, created {len(missing)} packages, "
          f"removed {len(removed)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
