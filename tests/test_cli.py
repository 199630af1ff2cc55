"""The warpstage command: the README's demo runs to the end on this machine (GPU or simulator),
and the cache and version subcommands answer."""
import os
import subprocess
import sys

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
