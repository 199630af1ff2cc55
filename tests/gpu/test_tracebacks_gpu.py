"""The traceback of an error from the GPU launch path (warpstage/jit/tracebacks.py): after the
generated fast call has a memo hit, an argument it cannot take, an error raised inside the
kernel's trace and a launch shape over the target's limits all reach the user with no
warpstage frame (no `<fast call of k>`), the last frame this file's line."""
import os
import traceback

import pytest

torch = pytest.importorskip("torch")

import warpstage as ws  # noqa: E402

pytestmark = pytest.mark.gpu

PKG = os.path.dirname(os.path.abspath(ws.__file__))


@ws.kernel
def fill(x: ws.Tensor, n: ws.Int32):
    i = ws.arch.block_idx()[0] * ws.arch.block_dim()[0] + ws.arch.thread_idx()[0]
    if i < n:
        x[i] = 1.0


@ws.kernel
def fill_tuple(x: ws.Tensor):
    x[0] = ws.arch.thread_idx()


def _frames(info):
    return traceback.extract_tb(info.value.__traceback__)


def _assert_user_only(info):
    inside = [f"{f.filename}:{f.lineno}" for f in _frames(info) if f.filename.startswith(PKG)]
    assert not inside, inside
    assert _frames(info)[-1].filename == __file__


def test_fast_path_errors_show_only_user_frames():
    x = torch.zeros(1000, device="cuda")
    fill[4, 256](x, 1000)                        # compiles and fills the memo
    fill[4, 256](x, 1000)                        # a memo hit through the generated call
    torch.cuda.synchronize()
    assert bool((x == 1).all())
    with pytest.raises(ws.ArgumentError) as info:
        fill[4, 256](x, 2 ** 40)                 # the int overflows Int32: the full path says so
    _assert_user_only(info)
    with pytest.raises(ws.LaunchError) as info:
        fill[4, 4096](x, 1000)
    _assert_user_only(info)
    with pytest.raises(ws.OperandError) as info:
        fill_tuple[1, 32](x)
    _assert_user_only(info)
    assert [f.name for f in _frames(info)][-1] == "fill_tuple"
