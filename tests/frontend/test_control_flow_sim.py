"""Control flow executed: traced kernels run in the CPU simulator must agree with plain Python.

The differential test draws random programs (cf_programs.py) over ints and floats with nested
if/elif/for/while/break/continue/return/ternary/and/or and compares each with Python on a few
inputs. Its example count is WARPSTAGE_DIFF_EXAMPLES (default 60).
"""
import itertools
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cf_harness import arith_inputs, differential_check, run_sim, sim_available, trace
from cf_programs import programs
from warpstage import ir
from warpstage.frontend import loops
from warpstage.lang.scalars import Int32

pytestmark = pytest.mark.skipif(not sim_available(), reason="warpstage.sim is not available")

DIFF_EXAMPLES = int(os.environ.get("WARPSTAGE_DIFF_EXAMPLES", "60"))


def collatz_steps(n):
    steps = 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
        if steps > 200:
            return -1
    return steps


def count_down(n, k):
    s = 0
    for i in range(n, -1, -k):
        if i % 3 == 1:
            continue
        s = s * 2 + i
    return s


def first_negative(p, n):
    for i in range(n):
        if p[i] < 0:
            return i
    return -1


def guarded_load(p, i, n):
    v = p[i] if i < n else -1.0
    w = i < n and p[i] > 0
    return v + (1.0 if w else 0.0)


def nested_returns(a, b):
    def pick(x, y):
        if x > y:
            return x
        return y
    r = 0
    for k in range(3):
        if pick(a, k) == b:
            break
        r += pick(k, b)
    else:
        r = -r
    return r


class Pipe:
    """A protocol object changed in place by a method (like CuTe's PipelineState.advance)."""

    def __init__(self, stages, index, phase):
        self.stages, self.index, self.phase = stages, index, phase

    def __extract_values__(self):
        return [self.index, self.phase]

    def __new_from_values__(self, values):
        return Pipe(self.stages, *values)

    def advance(self):
        self.index = self.index + 1
        if self.index == self.stages:
            self.index = 0
            self.phase ^= 1


def in_place_if(a):
    p = Pipe(4, Int32(a), Int32(0))
    alias = [p]
    if a > 0:
        alias[0].phase ^= 1
        p.index = p.index + 10
    return p.index * 10 + p.phase


def in_place_loop(n):
    p = Pipe(3, Int32(0), Int32(0))
    for k in range(n):
        p.advance()
    q = Pipe(3, Int32(0), Int32(0))
    while q.index < n % 3:
        q.advance()
    return p.index * 100 + p.phase * 10 + q.index


def rebind_or_mutate(a):
    p = Pipe(4, Int32(0), Int32(0))
    if a > 0:
        p.index = p.index + 5
    else:
        p = Pipe(4, Int32(7), Int32(1))
    return p.index


@pytest.mark.parametrize("fn,arg,want", [(in_place_if, 3, 131), (in_place_if, -3, -30),
                                         (in_place_loop, 0, 0), (in_place_loop, 5, 212),
                                         (in_place_loop, 7, 101), (rebind_or_mutate, 1, 5),
                                         (rebind_or_mutate, 0, 7)])
def test_objects_changed_in_place_are_merged(fn, arg, want, monkeypatch):
    from warpstage.frontend.rewrite import rewrite
    monkeypatch.setattr(Pipe, "advance", rewrite(Pipe.__dict__["advance"]))
    assert run_sim(fn, (arg,), ("i32",)) == want


def rebound_list(n):
    acc = [Int32(1), Int32(0)]
    for k in range(n):
        acc = [acc[0] * 2, acc[1] + acc[0]]
    return acc[0] * 1000 + acc[1]


def rebound_while(n):
    acc = [Int32(0), Int32(1)]
    while acc[0] < n:
        acc = [acc[0] + 1, acc[1] * 2]
    return acc[1]


def step(self):
    self.advance()
    return self


def kept_object(n):
    p = Pipe(3, Int32(0), Int32(0))
    for k in range(n):
        p = p.step()            # assigned, but the same object: the rebound guess is wrong
    return p.index * 10 + p.phase


def aliased_rebound(n):
    acc = [Int32(1)]
    keep = acc                  # two names reach the list: no guess
    for k in range(n):
        acc = [acc[0] + keep[0]]
    return acc[0] * 100 + keep[0]


def nested_alias(n):
    acc = [Int32(1)]
    holder = [acc]              # another root's contents reach the list: no guess
    for k in range(n):
        acc = [acc[0] + holder[0][0]]
    return acc[0] * 100 + holder[0][0]


def _python(fn, n):
    """``fn(n)`` run as plain Python (Int32 replaced by int)."""
    import inspect
    import textwrap
    src = textwrap.dedent(inspect.getsource(fn)).replace("Int32(", "int(")
    scope = {"Pipe": Pipe}
    exec(compile(src, "<python>", "exec"), scope)
    return scope[fn.__name__](n)


@pytest.mark.parametrize("fn,traces", [(rebound_list, 1), (rebound_while, 1),
                                       (kept_object, 2), (aliased_rebound, 2),
                                       (nested_alias, 2)])
@pytest.mark.parametrize("n", [0, 1, 5, 7])
def test_loop_body_traces_once_when_a_name_is_rebound(fn, traces, n, monkeypatch):
    """A name the body rebinds to a new list/object is carried as rebound from the first trace
    (one trace); a name that keeps its object, or one another name aliases, takes the retrace."""
    from warpstage.frontend.rewrite import rewrite
    monkeypatch.setattr(Pipe, "advance", rewrite(Pipe.__dict__["advance"]), raising=False)
    monkeypatch.setattr(Pipe, "step", rewrite(step), raising=False)
    counted = []
    for name in ("trace_for", "trace_while"):
        original = getattr(loops._Loop, name)
        monkeypatch.setattr(loops._Loop, name,
                            lambda self, *a, _f=original: counted.append(1) or _f(self, *a))
    assert run_sim(fn, (n,), ("i32",)) == _python(fn, n)
    assert len(counted) == traces


@pytest.mark.parametrize("n", [1, 6, 27, 97])
def test_collatz(n):
    assert run_sim(collatz_steps, (n,), ("i32",)) == collatz_steps(n)


@pytest.mark.parametrize("n,k", [(10, 1), (10, 3), (0, 2), (-3, 1), (7, 7)])
def test_negative_dynamic_step(n, k):
    assert run_sim(count_down, (n, k), ("i32", "i32")) == count_down(n, k)


def test_return_from_loop_over_memory():
    data = np.array([3, 1, 4, -1, 5, -9], dtype=np.int32)
    module, _ = trace(first_negative, "*i32", "i32", store=ir.i32)
    for n in (0, 3, 4, 6):
        assert run_sim(first_negative, (data, n), (), module=module) == first_negative(data, n)


def test_short_circuit_never_evaluates_the_untaken_load():
    data = np.array([2.5, -1.0], dtype=np.float32)
    module, _ = trace(guarded_load, "*f32", "i32", "i32", store=ir.f32)
    for i in (0, 1, 1000):        # index 1000 would fault if the load were evaluated
        got = run_sim(guarded_load, (data, i, 2), (), "f32", module=module)
        assert got == guarded_load(data, i, 2)


@pytest.mark.parametrize("a,b", list(itertools.product((-1, 0, 2, 5), (0, 1, 2))))
def test_nested_function_returns_and_for_else(a, b):
    assert run_sim(nested_returns, (a, b), ("i32", "i32")) == nested_returns(a, b)


@pytest.fixture(scope="module")
def program_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("cf_programs")


_counter = itertools.count()


@settings(max_examples=DIFF_EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.filter_too_much])
@given(src=programs(), inputs=st.lists(st.tuples(st.integers(-20, 20), st.integers(-20, 20)),
                                       min_size=3, max_size=3))
def test_random_programs_agree_with_python(program_dir, src, inputs):
    path = program_dir / f"prog_{next(_counter)}.py"
    differential_check(path, src, arith_inputs(src, inputs),
                       lambda module, prog, a, b, floats: run_sim(
                           prog, (a, b), (), "f32" if floats else "i32", module=module))
