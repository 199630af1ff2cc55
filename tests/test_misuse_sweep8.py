"""Misuse and stale kernels found by the session-8 fresh-user review (issue 11): each case gets
the new behaviour (as plain Python would) or a warpstage error naming the construct, the
user's line, expected vs got and the Fix, with no warpstage frame in the traceback
(misuse_kit.raised). benchmarks/RESULTS.md, "Session 8, fresh-user review of the key", has the
whole table."""
import functools
import subprocess
import sys
import textwrap
import types

import numpy as np
import pytest

import misuse_kit
import warpstage as ws

pytestmark = pytest.mark.usefixtures("sim_target")

F = ws.Tensor[ws.Float32, 1]


def out(n=4):
    return np.zeros(n, np.float32)


def value(k, *args) -> float:
    o = out()
    k[1, 32](o, *args)
    return float(o[0])


def raised(exc, marker, call, *words) -> str:
    return misuse_kit.raised(exc, __file__, marker, call, *words)


# -- defaults replaced through the decorated object ----------------------------------------------

def test_a_kernels_defaults_replaced_recompile():
    @ws.kernel
    def k(o: F, t=1.0, *, u=10.0):
        o[0] = t + u

    assert value(k) == 11
    k.fn.__defaults__ = (3.0,)          # the function's own defaults
    assert value(k) == 13
    k.__defaults__ = (5.0,)             # through the kernel object: the same defaults
    assert k.fn.__defaults__ == (5.0,) and value(k) == 15
    k.__kwdefaults__ = {"u": 20.0}
    assert value(k) == 25 and k.trace_count == 4


def test_a_jit_functions_defaults_replaced_through_the_decorated_object_recompile():
    @ws.jit
    def h(o, v=1.0, *, w=0.0):
        o[0] = v + w

    @ws.kernel
    def k(o: F):
        h(o)

    assert value(k) == 1
    h.__defaults__ = (3.0,)
    assert h.fn.__defaults__ == (3.0,) and value(k) == 3
    h.__kwdefaults__ = {"w": 0.5}
    assert value(k) == 3.5


# -- object graphs with cycles -------------------------------------------------------------------

class _Node:
    def __init__(self, v, parent=None):
        self.v, self.parent, self.kids = v, parent, []
        if parent is not None:
            parent.kids.append(self)


class _Reader:
    def __init__(self):
        self.v = 1.0
        self.get = self._get            # a bound method of the object, stored on it

    def _get(self):
        return self.v


def test_static_objects_with_cycles_are_keyed_and_recompile_when_changed():
    @ws.kernel
    def tree(o: F, n):
        o[0] = n.kids[0].v + n.kids[0].parent.v

    @ws.kernel
    def reader(o: F, r):
        o[0] = r.get()

    root = _Node(1.0)
    kid = _Node(2.0, root)
    assert value(tree, root) == 3
    kid.v = 5.0
    assert value(tree, root) == 6 and tree.trace_count == 2
    r = _Reader()
    assert value(reader, r) == 1
    r.v = 2.0
    assert value(reader, r) == 2 and reader.trace_count == 2


def test_a_cycle_key_is_the_same_in_another_process():
    from warpstage.core.static_key import static_key
    code = textwrap.dedent("""
        from warpstage.core.static_key import static_key
        class Node:
            def __init__(self, v, parent=None):
                self.v, self.parent, self.kids = v, parent, []
                if parent is not None:
                    parent.kids.append(self)
        root = Node(1.0); Node(2.0, root)
        print(repr(static_key(root)))
    """)
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True).stdout for _ in range(2)]
    assert runs[0] == runs[1] and "('cycle', " in runs[0]
    a, b = [], []
    a.append(a)
    b.append([b])
    assert static_key(a) != static_key(b)        # a list holding itself, and one level deeper


# -- class attributes seen only by code run natively ---------------------------------------------

def test_a_class_constant_replaced_by_an_equal_value_of_another_type_recompiles():
    class C:
        K = 3

        @property
        def kind(self):                 # native code: only the class snapshot sees K
            return 1.0 if isinstance(self.K, int) else 2.0

    @ws.kernel
    def k(o: F, c):
        o[0] = c.kind

    c = C()
    assert value(k, c) == 1
    C.K = 3.0                           # == 3
    assert value(k, c) == 2
    C.K = 3
    assert value(k, c) == 1


def test_a_class_level_list_changed_in_place_recompiles():
    class C:
        T = [1.0, 2.0]
        TABLE = np.array([1.0, 2.0], np.float32)

        @property
        def t(self):
            return self.T[1] + float(self.TABLE[0])

    @ws.kernel
    def k(o: F, c):
        o[0] = c.t

    c = C()
    assert value(k, c) == 3
    C.T[1] = 7.0
    assert value(k, c) == 8
    C.TABLE[0] = 10.0
    assert value(k, c) == 17


def test_functions_differing_in_keyword_only_defaults_are_different_keys():
    from warpstage.core.static_key import static_key
    fs = []
    for v in (1.0, 2.0):
        def f(*, v=v):
            return v
        fs.append(f)
    assert static_key(fs[0]) != static_key(fs[1])


# -- `raise` under a dynamic condition -----------------------------------------------------------

def test_raise_in_a_dynamic_branch_is_an_error_naming_the_if():
    @ws.kernel
    def k(o: F, n: ws.Int32):
        if n > 2:
            raise ValueError("too big")  # marker: raise in a dynamic if
        o[0] = 1.0

    raised(ws.UnsupportedError, "marker: raise in a dynamic if", lambda: k[1, 32](out(), 1),
           "`raise ValueError('too big')` inside the dynamic `if` at", "it says: too big",
           "Expected: a `raise` under a static condition", "assert not (<condition>)")


def test_raise_under_a_static_condition_or_caught_in_a_try_is_plain_python():
    @ws.kernel
    def k(o: F, n: ws.Static[int], m: ws.Int32):
        if n > 2:
            raise ValueError(f"n must be at most 2, got {n}")
        if m > 0:
            try:
                raise KeyError("caught")
            except KeyError:
                o[1] = 2.0
        o[0] = 1.0

    with pytest.raises(ValueError, match="n must be at most 2, got 5"):
        k[1, 32](out(), 5, 1)
    o = out()
    k[1, 32](o, 1, 1)
    assert o[0] == 1 and o[1] == 2


def test_a_warpstage_error_raised_under_a_dynamic_condition_passes_through():
    # library @ws.jit code rejecting a static configuration inside the user's dynamic branch
    # (`if warp == 0: pipeline.acquire(...)`) keeps its own error
    @ws.jit
    def check(cfg):
        if cfg.bad:
            raise ws.OperandError("cfg.bad is set\nFix: unset it")
        return 1.0

    class Cfg:                          # rule 7: static
        def __init__(self, bad):
            self.bad = bad

    @ws.kernel
    def k(o: F, n: ws.Int32, cfg):
        if n > 0:
            o[0] = check(cfg)

    with pytest.raises(ws.OperandError, match="cfg.bad is set"):
        k[1, 32](out(), 1, Cfg(True))
    assert value(k, 1, Cfg(False)) == 1


# -- compile options, checked where they are written ---------------------------------------------

def test_an_unknown_or_wrong_compile_option_is_an_error_at_the_decorator():
    def unknown():
        @ws.kernel(blocks=128)  # marker: unknown option
        def k(o: F):
            o[0] = 1.0

    def wrong():
        @ws.kernel(opt_level=7)  # marker: wrong option value
        def k(o: F):
            o[0] = 1.0

    raised(ws.ArgumentError, "marker: unknown option", unknown, "unknown compile option 'blocks'",
           "a field of ws.CompileOptions", "kern[grid, block]")
    raised(ws.OperandError, "marker: wrong option value", wrong, "the compile option opt_level",
           "expected an int 0, 1, 2 or 3", "got int 7", "Fix: opt_level=3")
    with pytest.raises(ws.OperandError, match="max_unroll: expected an int >= 0"):
        ws.CompileOptions(max_unroll=-1)
    with pytest.raises(ws.ArgumentError, match="did you mean 'device_asserts'"):
        ws.CompileOptions().with_(device_assert=True)


def test_a_decorator_error_after_the_options_shows_only_the_users_frame():
    def not_a_function():
        ws.kernel(opt_level=2)(functools.partial(print))  # marker: kernel of a partial

    raised(ws.ArgumentError, "marker: kernel of a partial", not_a_function,
           "@ws.kernel decorates a Python function")


# -- launch configurations -----------------------------------------------------------------------

def test_numpy_integers_are_accepted_as_grid_and_block():
    @ws.kernel
    def k(o: F):
        o[ws.arch.block_idx()[0]] = 1.0

    o = out()
    k[np.int64(2), np.int32(32)](o)
    assert o.tolist() == [1, 1, 0, 0]
    k[(np.int64(3), 1), (np.uint16(32),)](o)
    assert o.tolist() == [1, 1, 1, 0]
    with pytest.raises(ws.LaunchError, match="grid must be an int"):
        k[np.bool_(True), 32](o)


# -- static keys that never hit ------------------------------------------------------------------

def test_a_static_nan_is_one_specialization():
    @ws.kernel
    def k(o: F, v: ws.Static[float]):
        o[0] = 1.0 if v != v else 2.0

    for _ in range(3):
        assert value(k, float("nan")) == 1
    assert k.trace_count == 1


def test_an_array_for_a_static_number_is_the_annotations_error_on_every_path():
    """A multi-element array given to ``ws.Static[float]`` (or int / bool) at launch gave
    numpy's "can only convert an array of size 1" from the hot path's binder (session-8
    closing review); it is the annotation's ArgumentError, as ``ws.explain`` already said."""
    @ws.kernel
    def k(o: F, v: ws.Static[float], n: ws.Static[int], b: ws.Static[bool]):
        o[0] = v + n if b else v

    assert value(k, 2.0, 1, True) == 3.0
    for args, name in (((np.zeros(3), 1, True), "'v'"), ((2.0, np.arange(2), True), "'n'"),
                       ((2.0, 1, np.ones((2, 2), bool)), "'b'")):
        raised(ws.ArgumentError, "marker: a static number given an array",
               lambda: k[1, 32](out(), *args),  # marker: a static number given an array
               f"parameter {name} is annotated ws.Static[", "got a ndarray")


def _ten():
    return 10.0


def _thirty():
    return 30.0


def _thirty_m(self):
    return 30.0


def test_a_functions_code_assigned_recompiles():
    """``f.__code__ = g.__code__`` (IPython's autoreload edits functions this way) on a plain
    helper, a method of a static object, a ``@ws.jit`` function and the kernel itself: each
    recompiles (session-8 closing review; the guards held by the function's identity)."""
    helper = types.FunctionType(_ten.__code__, globals(), "helper")

    @ws.jit
    def jh():
        return 1.0

    @ws.jit
    def jh2():
        return 2.0

    class Cfg:
        def val(self):
            return 10.0

    @ws.kernel
    def k(o: F, c):
        o[0] = helper() + c.val() + jh()

    @ws.kernel
    def kself(o: F):
        o[0] = 5.0

    def kother(o: F):
        o[0] = 6.0

    c = Cfg()
    assert value(k, c) == 21.0
    helper.__code__ = _thirty.__code__
    assert value(k, c) == 41.0
    Cfg.val.__code__ = _thirty_m.__code__
    assert value(k, c) == 61.0
    jh.fn.__code__ = jh2.fn.__code__
    assert value(k, c) == 62.0
    assert value(kself) == 5.0
    kself.fn.__code__ = kother.__code__
    assert value(kself) == 6.0
    assert value(kself) == 6.0 and kself.trace_count == 2


# -- device API calls whose arguments do not bind ------------------------------------------------

def test_a_device_function_called_with_wrong_arguments_names_its_signature():
    @ws.kernel
    def k(o: F):
        s = ws.smem.allocate(ws.Float32, (4,))  # marker: allocate with two arguments
        o[0] = 1.0

    raised(ws.ArgumentError, "marker: allocate with two arguments", lambda: k[1, 32](out()),
           "ws.smem.allocate() takes 1 positional argument but 2 were given",
           "Expected: ws.smem.allocate(cls_or_spec)")


def test_an_async_kernel_and_a_zero_step_loop_say_the_fix():
    @ws.kernel
    async def k(o: F):
        o[0] = 1.0

    with pytest.raises(ws.UnsupportedError, match=r"(?s)is `async def`.*Fix: write `def k"):
        k[1, 32](out())

    @ws.kernel
    def loop(o: F, n: ws.Int32, s: ws.Int32):
        for i in range(0, n, s):
            o[0] = 1.0

    with pytest.raises(ws.SimulatorError, match=r"(?s)has step 0.*\nFix: pass a nonzero step"):
        loop[1, 32](out(), 3, 0)


# -- the disk cache across processes -------------------------------------------------------------

_DISK_PROGRAM = '''
import os, re, sys
import warpstage as ws
import disk_helpers as h

@ws.kernel
def k(o, n, c, d: ws.Static[float] = 0.25):
    o[0] = n.kids[0].v                  # a graph with a cycle
    o[1] = c.t                          # a property (its getter reads class data natively)
    o[2] = d                            # a default, replaced below when asked

root = h.Node(1.0)
h.Node(h.V, root)
if os.environ.get("DEF"):
    k.__defaults__ = (float(os.environ["DEF"]),)
ck = ws.compile(k, ws.Tensor[ws.Float32, 1], root, h.C())
print([float(x) for x in re.findall(r"constant[^\\n]*?(-?[0-9]+[.][0-9]+)", ck.ir)],
      "traced" if k.trace_count else "disk hit")
'''

_DISK_HELPERS = '''
import os
V = float(os.environ.get("V", "1.0"))

class Node:
    def __init__(self, v, parent=None):
        self.v, self.parent, self.kids = v, parent, []
        if parent is not None:
            parent.kids.append(self)

class C:
    T = [1.0, V]
    K = 3 if os.environ.get("KT", "int") == "int" else 3.0

    @property
    def t(self):
        return self.T[1] + (1.0 if isinstance(self.K, int) else 100.0)
'''


def test_cycles_properties_class_data_and_replaced_defaults_across_processes(tmp_path):
    (tmp_path / "prog.py").write_text(_DISK_PROGRAM)
    (tmp_path / "disk_helpers.py").write_text(_DISK_HELPERS)
    env = dict(__import__("os").environ, WARPSTAGE_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=str(tmp_path), WARPSTAGE_TARGET="sim")

    def run(**changes):
        e = dict(env, **changes)
        got = subprocess.run([sys.executable, str(tmp_path / "prog.py")], env=e, cwd=tmp_path,
                             capture_output=True, text=True)
        assert got.returncode == 0, got.stderr
        return got.stdout.split("\n")[-2]

    assert run() == "[1.0, 2.0, 0.25] traced"
    assert run() == "[1.0, 2.0, 0.25] disk hit"         # stored: a property has a stable key
    assert run(V="2.0") == "[2.0, 3.0, 0.25] traced"    # class-level list and the cycle's leaf
    assert run(KT="float") == "[1.0, 101.0, 0.25] traced"   # K = 3 -> 3.0
    assert run(DEF="0.5") == "[1.0, 2.0, 0.5] traced"   # k.__defaults__ replaced
    assert run(KT="float") == "[1.0, 101.0, 0.25] disk hit"
    assert run() == "[1.0, 2.0, 0.25] disk hit"


def test_pythons_own_class_caches_do_not_change_a_class_key():
    import copy
    from warpstage.core.static_key import static_key

    class P:
        def __init__(self):
            self.a = 1

    before = static_key(P())
    copy.copy(P())                      # copyreg caches P.__slotnames__ (a list) on the class
    assert "__slotnames__" in vars(P) and static_key(P()) == before
