"""The traceback a user sees (warpstage/jit/tracebacks.py): from every public entry — the launch
object and its generated fast call, ws.compile, ws.layout, ws.ops and its policies, ws.cache — an
error arrives with no warpstage frame, its last frame the user's line, and that line named in
its message."""
import os
import traceback

import numpy as np
import pytest

import source_lines
import warpstage as ws
from warpstage.jit import tracebacks

pytestmark = pytest.mark.usefixtures("sim_target")

PKG = os.path.dirname(os.path.abspath(ws.__file__))


def line_of(marker: str) -> int:
    return source_lines.line_of(__file__, marker)


def check_user_traceback(info, marker, fix: bool = True):
    """The error of ``info`` shows only this file's frames, ends at ``marker``'s line (None: at
    a line of this file) and names that line (and a Fix, for a warpstage error)."""
    frames = traceback.extract_tb(info.value.__traceback__)
    inside = [f"{f.filename}:{f.lineno}" for f in frames if f.filename.startswith(PKG)]
    assert not inside, inside
    line = frames[-1].lineno if marker is None else line_of(marker)
    assert frames[-1].filename == __file__ and frames[-1].lineno == line, frames
    msg = str(info.value)
    if isinstance(info.value, ws.WarpstageError):
        assert f"line {line}" in msg, msg
        assert not fix or "Fix:" in msg, msg


@ws.kernel
def store_tuple(x: ws.Tensor):
    x[0] = ws.arch.thread_idx()  # marker: kernel line


@ws.kernel
def store_one(x: ws.Tensor):
    x[0] = 1.0


def test_an_error_in_the_kernel_shows_no_fast_call_frame():
    """The generated fast call re-raises with a bare raise: no `<fast call of k>` frame."""
    with pytest.raises(ws.OperandError) as info:
        store_tuple[1, 32](np.zeros(4, np.float32))
    frames = traceback.extract_tb(info.value.__traceback__)
    assert [f.name for f in frames] == ["test_an_error_in_the_kernel_shows_no_fast_call_frame",
                                       "store_tuple"], frames
    assert frames[-1].lineno == line_of("marker: kernel line")
    assert str(info.value).count("line ") == 1, str(info.value)    # named once, not twice


@pytest.mark.parametrize("grid, block", [(0, 32), ((1, 0), 32), ("a", 32), (1, 5000),
                                         (1, (32, 1, 65)), ((1, 70000), 32), (1, (64, 32))])
def test_a_bad_launch_configuration_is_refused_at_the_users_line(grid, block):
    with pytest.raises(ws.LaunchError) as info:
        store_one[grid, block](np.zeros(4, np.float32))  # marker: bad config
    check_user_traceback(info, "marker: bad config")


def test_a_bad_launch_through_keywords_and_a_bad_smem():
    with pytest.raises(ws.LaunchError) as info:
        store_one(np.zeros(4, np.float32), grid=0, block=32)  # marker: keyword launch
    check_user_traceback(info, "marker: keyword launch")
    with pytest.raises(ws.LaunchError) as info:
        store_one[1, 32, -1](np.zeros(4, np.float32))  # marker: bad smem
    check_user_traceback(info, "marker: bad smem")


def test_ws_compile_and_explain_errors():
    with pytest.raises(ws.ArgumentError) as info:
        ws.compile(store_one, 5)  # marker: compile arg
    check_user_traceback(info, "marker: compile arg")
    with pytest.raises(ws.ArgumentError) as info:
        ws.compile(5)  # marker: compile kernel
    check_user_traceback(info, "marker: compile kernel", fix=False)


@pytest.mark.parametrize("call", [
    lambda: ws.layout.make_layout((4, 0)),
    lambda: ws.layout.idx2crd(5, (0, 3)),
    lambda: ws.layout.crd2idx((1, 1), (3, -1)),
    lambda: ws.layout.make_layout((4, 4))((5, 5, 5)),
    lambda: ws.layout.composition(ws.layout.make_layout((4, 4)), "x"),
    lambda: ws.layout.ceil_div(5, 0),
], ids=["make_layout", "idx2crd", "crd2idx", "Layout.__call__", "composition", "ceil_div"])
def test_layout_errors(call):
    with pytest.raises(ws.OperandError) as info:
        call()
    check_user_traceback(info, None)    # the lambda's line


def test_layout_free_functions_refuse_extents_below_one():
    with pytest.raises(ws.OperandError, match=r"idx2crd\(\)'s shape.*at least 1.*got \(0, 3\)"):
        ws.layout.idx2crd(5, (0, 3))
    with pytest.raises(ws.OperandError, match=r"idx2crd\(\)'s shape"):
        ws.layout.idx2crd(5, (0, 3), (1, 0))
    with pytest.raises(ws.OperandError, match=r"crd2idx\(\)'s shape"):
        ws.layout.crd2idx(4, (2, 0))
    assert ws.layout.idx2crd(5, (2, 3)) == (1, 2)       # the checks leave valid shapes alone
    assert ws.layout.crd2idx((1, 2), (2, 3)) == 5


def test_ops_argument_errors():
    a = np.zeros((4, 8), np.float16)
    with pytest.raises(ws.ArgumentError) as info:
        ws.ops.matmul(a, a)  # marker: matmul shapes
    check_user_traceback(info, "marker: matmul shapes")
    q = np.zeros((1, 1, 64, 64), np.float16)
    with pytest.raises(ws.ArgumentError) as info:
        ws.ops.flash_attention(q, q[..., :32], q)  # marker: attention shapes
    check_user_traceback(info, "marker: attention shapes")


def test_a_python_error_from_a_public_entry_shows_no_warpstage_frame():
    with pytest.raises(TypeError) as info:
        ws.cache.clear(5)  # marker: cache clear
    check_user_traceback(info, "marker: cache clear")


def test_warpstage_debug_keeps_the_frames(monkeypatch):
    monkeypatch.setenv("WARPSTAGE_DEBUG", "1")
    with pytest.raises(ws.OperandError) as info:
        ws.layout.make_layout((4, 0))
    files = [f.filename for f in traceback.extract_tb(info.value.__traceback__)]
    assert any(f.startswith(PKG) for f in files), files


def _public_functions():
    spaces = {"ws": (ws, ["compile", "explain", "jit", "kernel", "load", "set_target",
                          "get_target", "flatten", "unflatten", "struct"]),
              "ws.layout": (ws.layout, ws.layout.__all__), "ws.ops": (ws.ops, ws.ops.__all__),
              "ws.cache": (ws.cache, ws.cache.__all__)}
    for space, (module, names) in spaces.items():
        for name in names:
            obj = getattr(module, name)
            if isinstance(obj, type):
                for attr, fn in vars(obj).items():
                    fn = getattr(fn, "__func__", fn)
                    if (attr in ("__init__", "__call__", "__getitem__")
                            or not attr.startswith("_")) and callable(fn) \
                            and type(fn).__name__ == "function":
                        yield f"{space}.{name}.{attr}", fn
            elif type(obj).__name__ == "function":
                yield f"{space}.{name}", obj


def test_every_public_host_function_is_an_entry():
    missing = [name for name, fn in _public_functions() if not getattr(fn, "__user_entry__", 0)]
    assert not missing, missing
    assert len(list(_public_functions())) > 60


def test_user_error_names_the_position_before_the_fix():
    def raise_it():
        raise ws.LaunchError("what went wrong.\nFix: do this")
    try:
        raise_it()
    except ws.LaunchError as e:
        err = tracebacks._user_error(e)
    lines = str(err).splitlines()
    assert lines[0] == "what went wrong."
    assert lines[1] == f'  File "{__file__}", line {line_of("raise ws.LaunchError(")}'
    assert lines[-1] == "Fix: do this"
    assert err.where == f"{__file__}:{line_of('raise ws.LaunchError(')}"


def test_a_kernel_looked_up_as_a_method_shows_no_warpstage_frame():
    class A:
        @ws.kernel
        def k(self, x: ws.Tensor):
            x[0] = 1.0

    with pytest.raises(ws.CompilationError) as info:
        A().k[1, 32](np.zeros(4, np.float32))  # marker: method lookup
    check_user_traceback(info, "marker: method lookup")


def test_a_rewrite_error_is_the_public_class():
    """Its traceback names warpstage.errors.UnsupportedError, not a class inside frontend/."""
    @ws.kernel
    def gen(x: ws.Tensor):
        yield 1

    with pytest.raises(ws.UnsupportedError) as info:
        gen[1, 32](np.zeros(4, np.float32))
    assert type(info.value) is ws.UnsupportedError
    assert "".join(traceback.format_exception_only(info.value)).startswith(
        "warpstage.errors.UnsupportedError: test_a_rewrite_error_is_the_public_class.<locals>."
        "gen is a generator")
