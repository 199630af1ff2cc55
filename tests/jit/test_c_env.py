"""The stub's contexts and entries (jit/c_env.py), without torch: the facts the stub reads from
ints, bools and None for each parameter kind, its miss codes, how a matching entry's template is
patched, and what the driver entry receives. Tensor reads: tests/jit/test_c_call.py."""
import ctypes

import pytest

from warpstage.backend.host_stub import KINDS, MISS
from warpstage.jit import c_env

INT32 = (-2 ** 31, 2 ** 31 - 1)
_NO_CHECKS = ((ctypes.c_int64 * 9)(),)          # never read: no tensor parameter here


def _env():
    return c_env.Environment(0, 0, c_env.KDL_CUDA, 0, _NO_CHECKS)


def _kinds(*names):
    return [(KINDS["int"], *INT32) if n == "int" else (KINDS[n], 0, 0) for n in names]


def _context(kinds, launch_fn=0, dry=True, stream=None):
    return c_env.Context(_env(), kinds, (2, 1, 1, 32, 1, 1), stream, launch_fn, dry=dry)


@pytest.mark.parametrize("kind, value, facts", [
    ("auto", 5, (0,)), ("auto", -2 ** 31, (0,)), ("auto", 2 ** 31, (1,)), ("auto", -2 ** 40, (1,)),
    ("auto", True, (3,)), ("auto", None, (4,)),
    ("static", 7, (10, 7)), ("static", False, (11, 0)), ("static", None, (12,)),
    ("int", 9, ()), ("int", True, ()),
])
def test_facts_of_each_kind(kind, value, facts):
    got = _context(_kinds(kind)).dry_run((value,))
    assert got == ("miss", MISS["no_match"], facts + (0,))     # then the device: 0 by default


@pytest.mark.parametrize("kind, value", [
    ("auto", 1.5), ("auto", "s"), ("auto", 2 ** 63), ("static", 1.5), ("static", (1,)),
    ("int", 2 ** 31), ("int", -2 ** 31 - 1), ("int", 1.0), ("tensor", 3),
])
def test_what_the_stub_does_not_read_misses(kind, value):
    assert _context(_kinds(kind)).dry_run((value,))[:2] == ("miss", MISS["argument"])


def test_arity():
    ctx = _context(_kinds("int", "int"))
    assert ctx.dry_run((1,))[:2] == ("miss", MISS["arity"])
    assert ctx.dry_run((1, 2, 3))[:2] == ("miss", MISS["arity"])


def _entry(facts, function=0x1234, smem=0):
    # params: n (i32 at 0), m (i64 at 8), a constant 99 at 16 (a tail leaf)
    template = (0).to_bytes(8, "little") + (0).to_bytes(8, "little") + (99).to_bytes(8, "little")
    return c_env.Entry(facts, function, smem, False, template, (0, 8, 16), (0, 8), (4, 8))


def test_a_match_patches_the_template():
    ctx = _context(_kinds("int", "auto"))
    ctx.publish([_entry((1, 0), function=1), _entry((0, 0), function=2, smem=48)])
    kind, record, buffer = ctx.dry_run((-3, 5))
    assert kind == "launch" and record == (2, 2, 1, 1, 32, 1, 1, 48, 0, 0)
    assert buffer == ((-3) & 0xFFFFFFFF).to_bytes(4, "little") + bytes(4) + \
        (5).to_bytes(8, "little") + (99).to_bytes(8, "little")
    assert ctx.dry_run((-3, 2 ** 40))[1][0] == 1          # the int64 entry
    assert ctx.dry_run((-3, None))[:2] == ("miss", MISS["no_match"])


def test_a_fixed_stream_and_the_driver_entry():
    seen = []

    def driver(f, gx, gy, gz, bx, by, bz, smem, stream, params, extra):
        slots = ctypes.cast(params, ctypes.POINTER(ctypes.c_void_p))
        seen.append((f, (gx, gy, gz, bx, by, bz), smem, stream,
                     ctypes.c_int32.from_address(slots[0]).value,
                     ctypes.c_int64.from_address(slots[2]).value))
        return 0 if f == 2 else 400
    callback = c_env.LAUNCH_TYPE(driver)
    address = ctypes.cast(callback, ctypes.c_void_p).value
    ctx = _context(_kinds("int", "auto"), launch_fn=address, dry=False, stream=77)
    ctx.publish([_entry((0, 0), function=2), _entry((1, 0), function=3)])
    assert ctx.stub(7, 8) is None
    assert seen[-1] == (2, (2, 1, 1, 32, 1, 1), 0, 77, 7, 99)
    assert ctx.stub(7, 2 ** 40) == MISS["driver"]         # refused: the Python path launches
    assert ctx["last_reason"] == MISS["driver"]


def test_unavailable_without_the_exchange_api(monkeypatch):
    class OldTorch:
        __version__ = "2.4"

        class Tensor:
            pass
    monkeypatch.setattr(c_env, "_override", None)
    assert c_env.environment(OldTorch) is None
    assert "__dlpack_c_exchange_api__" in c_env.unavailable_reason()
