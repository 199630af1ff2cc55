"""Stale kernels found by the session-18 fresh-user review: a plain function that traced code
calls natively, reached through a value instead of a global name (an argument, a static tuple,
a global dict, a ``functools.partial``, a bound method, an object's attribute), has what it
reads guarded like a helper reached by name (frontend/guards.py, ``_Collector.held``); and a
``__kwdefaults__`` dict changed in place recompiles (guards compare it by key; the binding
signature of a kernel or ``@ws.jit`` function follows it, jit/kernel.py ``_entries``). Each
test changes a module global and expects the next launch to see it, as plain Python would."""
import functools

import numpy as np
import pytest

import warpstage as ws

pytestmark = pytest.mark.usefixtures("sim_target")

F = ws.Tensor[ws.Float32, 1]
V = 1


def read_v():
    return V


def add_v(a):
    return a + V


class Holder:
    def __init__(self, f):
        self.f = f

    def get(self):
        return V * 2


def value(k, *args) -> float:
    o = np.zeros(4, np.float32)
    k[1, 32](*args, o)
    return float(o[0])


def call_it():
    @ws.kernel
    def k(f, o: F):
        o[0] = ws.Float32(f())
    return k


def call_first():
    @ws.kernel
    def k(fs, o: F):
        o[0] = ws.Float32(fs[0]())
    return k


def call_attr():
    @ws.kernel
    def k(h, o: F):
        o[0] = ws.Float32(h.f())
    return k


TABLE = {"f": read_v}


def call_table():
    @ws.kernel
    def k(o: F):
        o[0] = ws.Float32(TABLE["f"]())
    return k


@pytest.fixture
def v_is_one():
    global V
    V = 1
    yield
    V = 1


@pytest.mark.parametrize("make, kern, scale", [
    (lambda: (read_v,), call_it, 1),                          # a function as an argument
    (lambda: (lambda: V,), call_it, 1),                       # a lambda reading the global
    (lambda: (functools.partial(add_v, 0),), call_it, 1),     # a partial of a helper
    (lambda: ((read_v,),), call_first, 1),                    # in a static tuple
    (lambda: (Holder(read_v),), call_attr, 1),                # an object's attribute
    (lambda: (Holder(None).get,), call_it, 2),                # a bound method
    (lambda: (), call_table, 1),                              # in a global dict
], ids=["argument", "lambda", "partial", "tuple", "attribute", "bound-method", "global-dict"])
def test_a_held_function_sees_its_global_change(v_is_one, make, kern, scale):
    global V
    kern = kern()                   # a kernel of its own (its specializations are this test's)
    assert value(kern, *make()) == 1 * scale
    V = 5
    assert value(kern, *make()) == 5 * scale


def test_a_prepared_launch_with_a_held_function_sees_the_change(v_is_one):
    global V
    o = np.zeros(4, np.float32)
    p = call_it()[1, 32].prepare(read_v, o)
    p()
    assert o[0] == 1
    V = 8
    p()
    assert o[0] == 8


def test_kwdefaults_changed_in_place_recompile():
    @ws.kernel
    def k(o: F, *, m=2.0):
        o[0] = ws.Float32(m)

    @ws.jit
    def h(*, m=2.0):
        return ws.Float32(m)

    def plain(*, m=2.0):
        return m

    @ws.kernel
    def uses(o: F):
        o[0] = h() + ws.Float32(plain() * 10.0)

    def run(kern):
        o = np.zeros(4, np.float32)
        kern[1, 32](o)
        return float(o[0])

    assert run(k) == 2
    k.fn.__kwdefaults__["m"] = 7.0          # the kernel's own keyword-only default
    assert run(k) == 7
    k.__kwdefaults__["m"] = 8.0             # the same dict, through the kernel object
    assert run(k) == 8
    assert run(uses) == 22
    h.fn.__kwdefaults__["m"] = 7.0          # a @ws.jit helper's
    assert run(uses) == 27
    plain.__kwdefaults__["m"] = 5.0         # a plain helper's
    assert run(uses) == 57
