"""Target choice, the CUDA probe and device properties (CPU-only)."""
import subprocess
import sys

import pytest

from warpstage.errors import ArgumentError, DeviceError
from warpstage.runtime import target


@pytest.fixture(autouse=True)
def _restore_override():
    saved = target._override
    yield
    target._override = saved


def test_set_target_accepts_known_names_and_none(monkeypatch):
    monkeypatch.delenv("WARPSTAGE_TARGET", raising=False)
    target.set_target("sim")
    assert target.default_target() == "sim"
    target.set_target("CUDA")
    assert target.default_target() == "cuda"
    target.set_target(None)
    assert target.default_target() == ("cuda" if target.cuda_available() else "sim")


@pytest.mark.parametrize("bad", ["tpu", "", 3, "simulator"])
def test_set_target_rejects_unknown_names(bad):
    with pytest.raises(ArgumentError) as info:
        target.set_target(bad)
    msg = str(info.value)
    assert f"got target {bad!r}" in msg
    assert "expected one of 'cuda', 'sim'" in msg
    assert "ws.set_target('sim')" in msg


def test_set_target_error_is_a_type_error():
    with pytest.raises(TypeError):
        target.set_target("tpu")


def test_env_variable_chooses_target_and_override_wins(monkeypatch):
    monkeypatch.setenv("WARPSTAGE_TARGET", "sim")
    target.set_target(None)
    assert target.default_target() == "sim"
    target.set_target("cuda")
    assert target.default_target() == "cuda"


def test_bad_env_variable_is_reported(monkeypatch):
    monkeypatch.setenv("WARPSTAGE_TARGET", "gpu")
    target.set_target(None)
    with pytest.raises(ArgumentError,
                       match="WARPSTAGE_TARGET environment variable got target 'gpu'"):
        target.default_target()


def test_cuda_available_is_a_cached_bool():
    first = target.cuda_available()
    assert isinstance(first, bool)
    assert target.cuda_available() is first
    assert (target.cuda_unavailable_reason() == "") is first


def test_cuda_available_never_raises(monkeypatch):
    def broken():
        raise RuntimeError("driver exploded")
    monkeypatch.setattr(target, "_probe", None)
    monkeypatch.setattr(target, "_probe_cuda", broken)
    assert target.cuda_available() is False
    assert "driver exploded" in target.cuda_unavailable_reason()


def test_forced_cuda_without_gpu_raises_device_error_with_reason(monkeypatch):
    monkeypatch.setattr(target, "_probe", (False, "the driver reports no CUDA device"))
    target.set_target("cuda")
    assert target.default_target() == "cuda"       # choosing it is allowed ...
    with pytest.raises(DeviceError) as info:       # ... using it is not
        target.require_cuda()
    msg = str(info.value)
    assert msg.startswith("ws.set_target('cuda') selected the GPU, but no CUDA device is usable")
    assert "the driver reports no CUDA device" in msg
    assert "ws.set_target('sim')" in msg


def test_device_properties_without_gpu_raise_device_error(monkeypatch):
    monkeypatch.setattr(target, "_probe", (False, "cuda.bindings is not importable"))
    monkeypatch.setattr(target, "_properties", {})
    with pytest.raises(DeviceError, match="no CUDA device is usable"):
        target.device_properties(0)


def test_device_properties_arch_names():
    props = target.DeviceProperties(
        ordinal=0, name="NVIDIA H200", cc_major=9, cc_minor=0, sm_count=132,
        max_threads_per_block=1024, max_block_dims=(1024, 1024, 64),
        max_grid_dims=(2**31 - 1, 65535, 65535), max_smem_per_block=48 * 1024,
        max_smem_per_block_optin=227 * 1024, max_smem_per_sm=228 * 1024,
        max_regs_per_block=65536, warp_size=32, cluster_launch=True, driver_version=13000)
    assert props.arch == "sm_90a"
    assert props.compute_capability == (9, 0)
    assert props.driver_version_str == "13.0"


def test_importing_runtime_imports_no_cuda_bindings_or_torch():
    code = ("import sys, warpstage.runtime; "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('cuda', 'torch', 'cupy')]; "
            "print(bad); sys.exit(1 if bad else 0)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


SHADOW = """import numpy as np
import warpstage as ws


@ws.kernel
def add_one(x: ws.Tensor[ws.Float32, 1], n: ws.Int32):
    i = ws.arch.block_idx()[0] * 128 + ws.arch.thread_idx()[0]
    if i < n:
        x[i] = x[i] + 1.0


x = np.zeros(200, np.float32)
add_one[2, 128](x, 200)
print("launched", float(x.sum()))
"""


def test_a_user_module_named_cuda_is_reported_not_a_hang(tmp_path):
    """A script named cuda.py (or any script beside one) used to hang: the probe's
    ``import cuda.bindings`` ran the user's cuda.py, whose launch entered the probe again under
    its lock. Now the shadowing module is found without importing it, the warning names it on the
    user's line, and the kernel runs in the simulator."""
    script = tmp_path / "cuda.py"
    script.write_text(SHADOW)
    env = {k: v for k, v in __import__("os").environ.items() if k != "WARPSTAGE_TARGET"}
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "launched 200.0" in proc.stdout
    assert f"{script}:13: RuntimeWarning: warpstage: the module 'cuda' at {script} shadows" \
        in proc.stderr
    assert f"Fix: rename {script}" in proc.stderr


def test_the_probe_entered_again_answers_instead_of_waiting(monkeypatch):
    monkeypatch.setattr(target, "_probe", None)
    target._probing.active = True
    try:
        available, reason = target._get_probe()
    finally:
        target._probing.active = False
    assert not available and "entered again" in reason and "rename" in reason
    assert target._probe is None                    # not cached: the outer probe decides
