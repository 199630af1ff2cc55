"""The package import graph (DESIGN §3), computed from the source: every import statement,
top-level or inside a function (TYPE_CHECKING blocks too: a cycle there still couples rooms).

Rules: ``ir`` imports nothing of the package, ``core`` only ``ir`` and ``errors`` (a leaf
module), ``passes`` only ``ir``/``core``, ``backend`` and ``sim`` only ``ir``, ``core``,
``errors``, ``options``; ``lang`` not ``frontend`` or ``jit``; ``frontend`` not ``jit``;
``runtime`` neither ``lang`` nor ``frontend``; only the rooms above ``jit`` (the public API, the CLI,
``ops``, ``tune``) import it; only ``backend`` imports llvmlite and only
``runtime`` cuda.bindings. The whole graph is acyclic (docs/architecture.md, "Rooms")."""
import ast
import functools
import os

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "warpstage")

ALLOWED = {
    "ir": set(),
    "core": {"ir", "errors"},
    "passes": {"ir", "core"},
    "backend": {"ir", "core", "errors", "options"},
    "sim": {"ir", "core", "errors", "options"},
    "runtime": {"ir", "errors", "options"},
    # lang/tma.py re-exports the host-side ws.tma.TensorDescriptor (runtime/tensormap.py)
    "lang": {"ir", "core", "errors", "runtime"},
    "frontend": {"ir", "core", "errors", "lang", "runtime"},
}


def _room_of(path: str) -> str:
    first = os.path.relpath(path, ROOT).split(os.sep)[0]
    return first[:-3] if first.endswith(".py") else first


def _rooms() -> set:
    return {n[:-3] if n.endswith(".py") else n for n in os.listdir(ROOT)
            if (n.endswith(".py") and n != "__init__.py")
            or os.path.exists(os.path.join(ROOT, n, "__init__.py"))}


def _imports(path: str):
    """(warpstage rooms, other top-level packages) that the file at ``path`` imports."""
    package = os.path.relpath(os.path.dirname(path), os.path.dirname(ROOT)).split(os.sep)
    rooms, external = set(), set()
    for node in ast.walk(ast.parse(open(path).read(), path)):
        if isinstance(node, ast.Import):
            targets = [a.name.split(".") for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            mod = base + (node.module.split(".") if node.module else [])
            targets = ([mod + [a.name] for a in node.names] if mod == ["warpstage"] else [mod])
        else:
            continue
        for t in targets:
            if t[0] == "warpstage":
                if len(t) > 1:
                    rooms.add(t[1])
            else:
                external.add(t[0])
    return rooms, external


@functools.lru_cache(maxsize=None)
def _graph():
    """(room -> rooms it imports, room -> other packages it imports), frozen: computed once per
    process (parsing the package is most of this file's time), so no test may change it."""
    names = _rooms()
    edges, external = {}, {}
    for folder, _, files in os.walk(ROOT):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(folder, f)
                room = _room_of(path)
                rooms, ext = _imports(path)
                edges.setdefault(room, set()).update(r for r in rooms if r in names and r != room)
                external.setdefault(room, set()).update(ext)
    return ({r: frozenset(v) for r, v in edges.items()},
            {r: frozenset(v) for r, v in external.items()})


def _cycle_rooms(edges: dict) -> set:
    """The rooms on some cycle (in a strongly connected component of more than one room)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), set(), [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.update(comp)

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def test_the_lower_rooms_import_only_what_design_allows():
    edges, _ = _graph()
    for room, allowed in ALLOWED.items():
        extra = edges.get(room, set()) - allowed
        assert not extra, (f"warpstage/{room}/ imports {sorted(extra)}; DESIGN §3 allows "
                           f"{sorted(allowed)}")


def test_only_backend_imports_llvmlite_and_only_runtime_cuda():
    _, external = _graph()
    assert {r for r, ext in external.items() if "llvmlite" in ext} == {"backend"}
    assert {r for r, ext in external.items() if "cuda" in ext} <= {"runtime"}


def test_the_package_graph_is_acyclic():
    edges, _ = _graph()
    cycles = _cycle_rooms(edges)
    assert not cycles, f"rooms on an import cycle: {sorted(cycles)}"


JIT_USERS = {"__init__", "__main__", "ops", "tune"}
"""The rooms above jit/: the public API, the CLI, ready-made kernels, autotuning."""

TOP_LEVEL = {"__init__", "__main__", "errors", "options"}
"""The only modules at the top of the package (issue 10: the public API, the CLI, errors and
options); every other module lives in a room."""


def test_the_top_level_holds_only_the_api_the_cli_errors_and_options():
    loose = {n[:-3] for n in os.listdir(ROOT) if n.endswith(".py")} - TOP_LEVEL
    assert not loose, (f"loose top-level modules {sorted(loose)}: move each into the room it "
                       "belongs to (docs/architecture.md, \"Rooms\")")


def test_only_the_rooms_above_jit_import_it():
    edges, _ = _graph()
    users = {room for room, out in edges.items() if "jit" in out}
    assert users <= JIT_USERS, (
        f"{sorted(users - JIT_USERS)} import jit/, the room of kernel objects and launching; "
        "the rooms below it must not (DESIGN §3)")


def test_the_graph_sees_the_rooms():
    """The graph is computed from real imports (so the tests above can fail): the rooms exist
    and the public package imports jit/, which imports the rooms below it."""
    edges, _ = _graph()
    assert {"ir", "core", "lang", "frontend", "jit", "runtime", "backend", "sim"} <= _rooms()
    assert {"frontend", "backend", "runtime"} <= edges["jit"]
    assert "jit" in edges["__init__"]


def test_the_cycle_finder_can_fail():
    assert _cycle_rooms({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == {"a", "b", "c"}
    assert _cycle_rooms({"a": {"b"}, "b": set()}) == set()
