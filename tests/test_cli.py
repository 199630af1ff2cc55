"""The warpstage command: the README's demo runs to the end on this machine (GPU or simulator),
and the cache and version subcommands answer."""
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(*args, env_extra=None):
    env = dict(os.environ, PYTHONPATH=ROOT, **(env_extra or {}))
    return subprocess.run([sys.executable, "-m", "warpstage", *args], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=600)


def test_demo_passes(tmp_path):
    r = run("demo", env_extra={"WARPSTAGE_CACHE_DIR": str(tmp_path)})
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "demo passed" in r.stdout
    for name in ("vector_add", "softmax", "flash_attention"):
        assert f"=== {name}" in r.stdout


def test_cache_and_version(tmp_path):
    env = {"WARPSTAGE_CACHE_DIR": str(tmp_path)}
    info = run("cache", "info", env_extra=env)
    assert info.returncode == 0 and str(tmp_path) in info.stdout
    assert run("cache", "clear", env_extra=env).returncode == 0
    v = run("--version")
    assert v.returncode == 0 and v.stdout.startswith("warpstage ")


def test_demo_says_why_the_attention_run_is_not_bfloat16():
    """Without torch (or ml_dtypes) the example's inputs are numpy float16: the demo explains a
    BFloat16 kernel, so it must say why it ran float16 (and say nothing when it ran bf16)."""
    import types

    import numpy as np

    import warpstage as ws
    from warpstage.__main__ import _attention_note

    def fake(dtype):
        return types.SimpleNamespace(
            random_qkv=lambda b, h, s, d: [np.zeros((b, h, s, d), dtype) for _ in range(3)])

    if ws.get_target() == "cuda":
        return
    note = _attention_note(ws, fake(np.float16))
    assert "BFloat16" in note and "used float16 inputs" in note and "ml_dtypes" in note
    bf16 = types.SimpleNamespace(
        random_qkv=lambda *a: [types.SimpleNamespace(dtype="torch.bfloat16")])
    assert _attention_note(ws, bf16) == ""


def test_demo_names_a_cache_hit_instead_of_a_zero_compile_time():
    from warpstage.__main__ import _how_compiled
    base = {"trace": 3, "disk_hit": 1}
    assert _how_compiled(base, {"trace": 4, "disk_hit": 1}, 0.25) == "compiled in 250 ms"
    assert _how_compiled(base, {"trace": 3, "disk_hit": 2}, 0.0004).startswith("disk cache hit")
    assert _how_compiled(base, dict(base), 0.0) == "in-memory cache hit"


def test_examples_print_a_verdict(capsys, monkeypatch):
    import warpstage as ws
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from example_loader import load_example
    ws.set_target("sim")
    try:
        for name in ("vector_add", "softmax"):
            mod = load_example(name, f"verdict_{name}")
            mod.main()
            assert capsys.readouterr().out.rstrip().endswith("-> OK")
            monkeypatch.setattr(mod, "launch", lambda *a: None)    # writes nothing: NaN left
            mod.main()
            assert capsys.readouterr().out.rstrip().endswith("-> MISMATCH")
    finally:
        ws.set_target(None)


_SPECS = '''\
import warpstage as ws


@ws.kernel
def k(x: ws.Tensor, n: ws.Int32):
    x[0] = 1.0


@ws.kernel
def picky(x: ws.Tensor, m: ws.Static[int]):
    if m > 2:
        raise ValueError("m is too big")
    x[0] = 1.0


def bad():
    return [(k, (ws.Int32,))]


def notalist():
    return 42


def raises():
    return undefined_name


def trace_fails():
    return [(picky, (ws.Tensor[ws.Float32, 1], ws.Static(3)))]
'''


def _spec_file(tmp_path, name):
    path = tmp_path / f"{name}.py"
    path.write_text(_SPECS)
    return path


def test_compile_reports_a_bad_request_at_the_spec_function_without_a_traceback(tmp_path):
    path = _spec_file(tmp_path, "specs_cli")
    r = run("compile", f"{path}:bad", env_extra={"WARPSTAGE_CACHE_DIR": str(tmp_path)})
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.startswith("warpstage compile: kernel k(x: ws.Tensor, n: ws.Int32) was "
                               "called with no value for 'n'.")
    assert f'File "{path}", line 16\n    def bad():' in r.stderr and "Fix:" in r.stderr


@pytest.mark.parametrize("function, says", [
    ("notalist", r"specs_\w+\.notalist\(\) returned 42 \(of type int\); expected a list of "
                 r"\(kernel, args\).*line 20.*Fix: return the requests"),
    ("raises", r"NameError while running specs_\w+\.raises\(\): name 'undefined_name' is not "
               r"defined\n  File .*, line 25\n    return undefined_name"),
    ("trace_fails", r"ValueError while building .*: m is too big\n  File .*, line 12\n"
                    r"    raise ValueError")])
def test_compile_reports_user_mistakes_in_one_message(tmp_path, monkeypatch, function, says):
    from warpstage.__main__ import main
    monkeypatch.setenv("WARPSTAGE_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(sys, "path", list(sys.path))
    path = _spec_file(tmp_path, f"specs_{function}")
    with pytest.raises(SystemExit) as e:
        main(["compile", f"{path}:{function}", "--jobs", "1"])
    assert isinstance(e.value.code, str) and re.match(r"(?s)warpstage compile: " + says,
                                                      e.value.code), e.value.code


@pytest.mark.parametrize("jobs", ["0", "-3", "two"])
def test_compile_rejects_a_bad_jobs_value_as_a_usage_error(capsys, jobs):
    from warpstage.__main__ import main
    with pytest.raises(SystemExit) as e:
        main(["compile", "specs.py", "--jobs", jobs])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "argument --jobs/-j: expected a number of worker processes >= 1, got " \
           f"'{jobs}'" in err and "Traceback" not in err


def test_compile_keeps_the_traceback_of_an_error_inside_warpstage(tmp_path, monkeypatch):
    """A bug of warpstage's (here: a broken helper) is not dressed up as the user's mistake."""
    from warpstage.__main__ import main
    from warpstage.jit import precompile
    monkeypatch.setenv("WARPSTAGE_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(precompile, "_is_kernel", None)
    path = _spec_file(tmp_path, "specs_internal")
    with pytest.raises(TypeError, match="'NoneType' object is not callable"):
        main(["compile", f"{path}:bad", "--jobs", "1"])
