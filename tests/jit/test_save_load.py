"""CompiledKernel.save / ws.load, and launching a loaded kernel (warpstage/jit/loaded.py)."""
import hashlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import warpstage as ws
from warpstage.backend import find_ptxas
from warpstage.jit.compiled import STAGE_COUNTS
from warpstage.jit.loaded import bind_host_args, params_of
from warpstage.jit.cache import files as cache
from warpstage.runtime.tensors import TensorArg

ROOT = Path(__file__).resolve().parents[1]
T1 = ws.Tensor[ws.Float32, 1]
needs_ptxas = pytest.mark.skipif(find_ptxas(ws.CompileOptions()) is None, reason="no ptxas")


@ws.struct
class State:
    stages: ws.Static[int]
    index: ws.Int32


def _add(a: ws.Tensor, b: ws.Tensor, out: ws.Tensor, n: ws.Int32):
    i = ws.arch.block_idx()[0] * ws.arch.block_dim()[0] + ws.arch.thread_idx()[0]
    out[i] = a[i] + b[i]


def _mixed(st: State, a: ws.Tensor, tile: ws.Static[int], scale):
    a[st.index, 0] = a[tile, 1] * scale + st.stages


def compile_add():
    return ws.compile(ws.kernel(_add), T1, T1, T1, ws.Int32, block=128)


def compile_mixed():
    return ws.compile(ws.kernel(_mixed), State(3, 0), ws.Tensor[ws.Float32, 2], 4, 1.5, block=64)


def describe(ck):
    return {"name": ck.name, "ptx": ck.ptx, "ir": ck.ir, "explain": ck.explain(),
            "cubin": hashlib.sha256(ck.cubin or b"").hexdigest(),
            "resources": repr(ck.resources), "abi": [[s, str(t)] for s, t in ck.abi],
            "block": list(ck.block)}


LOADER = textwrap.dedent("""
    import hashlib, json, sys
    import warpstage as ws
    from warpstage.jit.compiled import STAGE_COUNTS
    ck = ws.load(sys.argv[1])
    print(json.dumps({"counts": STAGE_COUNTS, "modules": sorted(m for m in sys.modules
                                                               if "test_save_load" in m),
                      "ck": {"name": ck.name, "ptx": ck.ptx, "ir": ck.ir, "explain": ck.explain(),
                             "cubin": hashlib.sha256(ck.cubin or b"").hexdigest(),
                             "resources": repr(ck.resources),
                             "abi": [[s, str(t)] for s, t in ck.abi], "block": list(ck.block)}}))
""")


@needs_ptxas
@pytest.mark.parametrize("make", [compile_add, compile_mixed])
def test_save_load_round_trip_in_a_fresh_process(tmp_path, make):
    ck = make()
    path = tmp_path / "kernel.wsk"
    ck.save(path)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, "-c", LOADER, str(path)], capture_output=True, text=True,
                       env=env, cwd=tmp_path, timeout=120)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["modules"] == []                         # never imported the kernel's module
    assert not any(out["counts"].values())              # no trace, lower, ptx, ptxas
    assert out["ck"] == describe(ck)


def test_loaded_kernel_has_stages_but_no_module(tmp_path):
    ck = compile_add()
    ck.save(tmp_path / "k")
    before = dict(STAGE_COUNTS)
    loaded = ws.load(tmp_path / "k")
    assert loaded.module is None and loaded.ir == ck.ir and loaded.llvm_ir == ck.llvm_ir
    assert loaded.ptx == ck.ptx and loaded.cubin == ck.cubin and loaded.explain() == ck.explain()
    assert loaded.registers == ck.registers and loaded.ptxas_log == ck.ptxas_log
    assert STAGE_COUNTS == before


def test_save_of_a_disk_cache_hit(tmp_path):
    first = compile_add()
    again = compile_add()
    assert again.module is None                         # came from the disk cache
    again.save(tmp_path / "k")
    assert ws.load(tmp_path / "k").ptx == first.ptx


def test_bind_host_args_tensors_scalars():
    ck = compile_add()                                  # a traced kernel: params from Specs
    a = np.zeros(300, np.float32)
    leaves = bind_host_args(params_of(ck), ck.param_names, (a, a, a), {"n": 300})
    assert [type(x) for x in leaves] == [TensorArg, int, TensorArg, int, TensorArg, int, int]
    assert leaves[1] == 300 and leaves[-1] == 300


def test_bind_host_args_struct_static_and_errors(tmp_path):
    compile_mixed().save(tmp_path / "m")
    ck = ws.load(tmp_path / "m")
    params, names = ck._host_params, ck.param_names
    a = np.zeros((4, 8), np.float32)
    leaves = bind_host_args(params, names, (State(3, 7), a, 4, 2.5), {})
    assert leaves[0] == 7 and isinstance(leaves[1], TensorArg)
    assert leaves[2:] == [4, 8, 8, 2.5]                 # shape, outer stride, scale
    bad = [
        ((State(4, 7), a, 4, 2.5),
         r"(?s)parameter 'st'.*specialized for a proto argument whose static part.*ws.compile"),
        ((State(3, 7), a, 8, 2.5), r"(?s)parameter 'tile'.*static value int = 4.*got 8"),
        ((State(3, 7), a.astype(np.float64), 4, 2.5), r"parameter 'a'.*2-d f32.*2-d f64"),
        ((State(3, 7), a[0], 4, 2.5), r"parameter 'a'.*2-d f32.*1-d f32"),
        ((State(3, 7), a.T, 4, 2.5), r"parameter 'a'.*stride 1 in dims \[1\].*strides \(1, 8\)"),
        ((State(3, 7), a, 4, "x"), r"parameter 'scale'.*scalar of type f32.*str"),
        ((State(3, 2**40), a, 4, 2.5), r"parameter 'st.index'.*scalar of type i32.*does not fit"),
        ((State(3, 7), a, 4), r"(?s)no value for 'scale'.*got 3 \(st, a, tile\).*Fix: "),
    ]
    for args, pattern in bad:
        with pytest.raises(ws.ArgumentError, match=pattern):
            bind_host_args(params, names, args, {})
    with pytest.raises(ws.ArgumentError, match=r"(?s)two values for 'st'.*Fix: "):
        bind_host_args(params, names, (State(3, 7), a, 4, 2.5), {"st": 1})


def test_loaded_launch_checks_block_and_target(tmp_path):
    compile_add().save(tmp_path / "k")
    ck = ws.load(tmp_path / "k")
    with pytest.raises(ws.LaunchError, match=r"(?s)compiled for block \(128, 1, 1\).*got block "
                                             r"\(64, 1, 1\).*block=\.\.\."):
        ck[4, 64]
    a = np.zeros(512, np.float32)
    ws.set_target("sim")
    try:
        with pytest.raises(ws.LaunchError, match=r"(?s)runs on the GPU only.*'sim'"):
            ck[4, 128](a, a, a, 512)
    finally:
        ws.set_target(None)


def test_load_rejects_other_files(tmp_path):
    junk = tmp_path / "junk"
    junk.write_bytes(b"hello, not a kernel")
    with pytest.raises(ws.ArgumentError,
                       match=r"(?s)not a saved warpstage kernel.*Fix: pass a file written by "
                             r"CompiledKernel.save"):
        ws.load(junk)
    compile_add().save(tmp_path / "k")
    data = (tmp_path / "k").read_bytes()
    (tmp_path / "t").write_bytes(data[:-10])
    with pytest.raises(ws.ArgumentError, match="truncated"):
        ws.load(tmp_path / "t")
    cache.write_entry(str(tmp_path / "f"), {"format": 99})
    with pytest.raises(ws.ArgumentError, match="saved in format 99"):
        ws.load(tmp_path / "f")
    with pytest.raises(FileNotFoundError):
        ws.load(tmp_path / "absent")


@pytest.mark.gpu
def test_loaded_kernel_runs_on_the_gpu(tmp_path):
    torch = pytest.importorskip("torch")
    compile_add().save(tmp_path / "k")
    ck = ws.load(tmp_path / "k")
    n = 8 * 128                                         # _add has no bounds check
    a = torch.randn(n, device="cuda")
    b = torch.randn(n, device="cuda")
    out = torch.zeros_like(a)
    ck[8, 128](a, b, out, n)
    torch.cuda.synchronize()
    assert torch.allclose(out, a + b)
