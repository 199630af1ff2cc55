"""Special registers, printf, trap and launch checks in the simulator."""
import numpy as np
import pytest

from warpstage import sim
from warpstage.errors import ArgumentError, LaunchError, SimulatorError
from warpstage.ir import OPS, f32, i32, i64, u32

from simkit import KernelBuilder, gptr, launch


def test_every_primitive_op_has_a_simulator_handler_and_no_legalized_one_does():
    primitive = {n for n, d in OPS.items() if not d.legalized}
    missing = sorted(primitive - set(sim.HANDLERS))
    assert not missing, f"ops without a simulator rule: {missing}"
    extra = sorted(set(sim.HANDLERS) - primitive)
    assert not extra, f"simulator rules for unknown or legalized ops: {extra}"


SREGS = ["tid.x", "tid.y", "tid.z", "ctaid.x", "ctaid.y", "ctaid.z", "ntid.x", "ntid.y",
         "ntid.z", "nctaid.x", "nctaid.y", "nctaid.z", "laneid", "warpid", "smid"]


def test_special_registers():
    k = KernelBuilder("sregs", [gptr(i32)])
    (out,) = k.args
    b = k.b
    lin = b.binary("add", b.sreg("tid.x", i32), b.binary("mul", k.const(i32, 8), b.binary(
        "add", b.sreg("tid.y", i32), b.binary("mul", k.const(i32, 4), b.sreg("tid.z", i32)))))
    cta = b.binary("add", b.sreg("ctaid.x", i32),
                   b.binary("mul", k.const(i32, 2), b.sreg("ctaid.y", i32)))
    row = b.binary("mul", b.binary("add", b.binary("mul", cta, k.const(i32, 64)), lin),
                   k.const(i32, len(SREGS)))
    for j, reg in enumerate(SREGS):
        k.store_at(out, b.binary("add", row, k.const(i32, j)), b.sreg(reg, i32))
    m = k.finish()
    res = np.zeros((6, 64, len(SREGS)), np.int32)
    launch(m, (2, 3), (8, 4, 2), [res])
    for cy in range(3):
        for cx in range(2):
            for lin in range(64):
                x, y, z = lin % 8, (lin // 8) % 4, lin // 32
                want = [x, y, z, cx, cy, 0, 8, 4, 2, 2, 3, 1, lin % 32, lin // 32, 0]
                assert res[cx + 2 * cy, lin].tolist() == want


def test_clock_is_monotonic_per_warp():
    k = KernelBuilder("clk", [gptr(i64)])
    (out,) = k.args
    b = k.b
    t = b.sreg("tid.x", i32)
    c0 = b.sreg("clock64", i64)
    c1 = b.sreg("clock64", i64)
    b.sreg("globaltimer", i64)
    k.store_at(out, t, b.binary("sub", c1, c0))
    res = np.zeros(32, np.int64)
    launch(k.finish(), (1,), (32,), [res])
    assert (res > 0).all()


def test_printf_per_active_lane(capsys):
    k = KernelBuilder("pr", [])
    b = k.b
    t = b.sreg("tid.x", i32)
    k.if_(b.cmp("lt", t, k.const(i32, 3)), then=lambda: b.printf(
        "t=%d f=%.2f u=%u x=%#x [%5s]\n",
        [t, b.cast(t, f32), k.const(i32, -1), b.binary("add", t, k.const(i32, 254)), t]))
    m = k.finish()
    r = launch(m, (1,), (32,), [])
    assert r.printed == [f"t={t} f={t:.2f} u=4294967295 x={254 + t:#x} [{t:>5}]\n"
                         for t in range(3)]
    assert capsys.readouterr().out == ""          # echo=False in launch()
    mem = sim.Memory()
    sim.run(m, "pr", (1,), (32,), [], mem)
    assert capsys.readouterr().out == r.stdout


def test_printf_bad_format_is_reported():
    k = KernelBuilder("pr2", [])
    k.line(4)
    k.b.printf("%d %d\n", [k.const(i32, 1)])
    with pytest.raises(SimulatorError, match=r"printf at kern.py:4: the format has 2 conversions "
                                             r"but 1 arguments"):
        launch(k.finish(), (1,), (1,), [])


def test_trap_names_thread_and_block():
    k = KernelBuilder("trap", [])
    b = k.b
    t = b.sreg("tid.x", i32)
    c = b.sreg("ctaid.x", i32)
    hit = b.binary("and", b.cmp("eq", t, k.const(i32, 37)), b.cmp("eq", c, k.const(i32, 1)))

    def then():
        k.line(21)
        b.op("gpu.trap")

    k.if_(hit, then=then)
    with pytest.raises(SimulatorError, match=r"kernel trapped at kern.py:21, thread \(37,0,0\) "
                                             r"of block \(1,0,0\)"):
        launch(k.finish(), (2,), (64,), [])


def test_launch_checks():
    k = KernelBuilder("chk", [gptr(f32), u32])
    m = k.finish()
    with pytest.raises(ArgumentError, match="takes 2 flattened arguments"):
        launch(m, (1,), (32,), [0])
    with pytest.raises(ArgumentError, match="out of range"):
        launch(m, (1,), (32,), [0, -1])
    with pytest.raises(ArgumentError, match="int address"):
        launch(m, (1,), (32,), [1.5, 1])
    with pytest.raises(LaunchError, match="1056 threads"):
        launch(m, (1,), (32, 33), [0, 1])
    with pytest.raises(LaunchError, match="block.x = 1025"):
        launch(m, (1,), (1025,), [0, 1])
    with pytest.raises(LaunchError, match="smem_bytes"):
        launch(m, (1,), (32,), [0, 1], smem_bytes=10**6)
    with pytest.raises(ArgumentError, match="no kernel 'nope'"):
        launch(m, (1,), (32,), [0, 1], name="nope")
    m.kernels[0].attrs["maxntid"] = (64, 1, 1)
    with pytest.raises(LaunchError, match="maxntid"):
        launch(m, (1,), (128,), [0, 1])


def test_a_failed_device_assert_names_its_message_in_the_trap(sim_target, capsys):
    import numpy as np
    import warpstage as ws

    @ws.kernel(device_asserts=True)
    def k(x: ws.Tensor[ws.Int32, 1]):
        i = ws.arch.thread_idx()[0]
        assert x[i] < 5, "x too large"
        x[i] = x[i] + 1

    with pytest.raises(SimulatorError, match=r"kernel trapped at .*thread \(5,0,0\) of block "
                                             r"\(0,0,0\) \(warp 0, lane 5\); its last printf: "
                                             r".*assertion `x\[i\] < 5` failed: x too large$"):
        k[1, 32](np.arange(32, dtype=np.int32))
    assert capsys.readouterr().out.count("x too large") == 27     # each failing thread prints
