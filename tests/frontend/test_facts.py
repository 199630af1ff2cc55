"""The facts a trace reads (frontend/facts.py, guards.py): changing any of them recompiles, with
the new behaviour, in memory — attributes of imported modules, class attributes and methods of
static objects, numpy arrays, @ws.jit defaults, functools.partial, enum members — and a kernel
file edited after import is an error, not a trace of the new text under the old key."""
import enum
import functools
import importlib
import sys
import textwrap

import numpy as np
import pytest

import warpstage as ws

pytestmark = pytest.mark.usefixtures("sim_target")

HELPERS = '''
import numpy as np
import warpstage as ws
N = 3
TABLE = np.array([1.0, 2.0], np.float32)

@ws.jit
def store(o, v):
    o[0] = v

def plain(v):
    return v * SCALE

SCALE = 2

class Cfg:
    K = 2

    @ws.jit
    def val(self):
        return ws.Float32(self.K * 10)

G = 1

class Native:                       # code run natively at trace time (not rewritten)
    K = 4

    @property
    def tile(self):
        return G

    @classmethod
    def k(cls):
        return cls.K

    def kk(self):
        return type(self).K

    def own(self):
        return self.K

    def via(self):
        return reads_k(self)

def reads_k(o):
    return o.K

def tile_of(o):
    return o.tile

NATIVE = Native()

def scale(v=[1.0]):
    return v[0]

def offset(v=1.0):
    return v

NESTED = ([1.0, 2.0],)              # a tuple holding a list
BYTES = bytearray(b"\\x01\\x02")
'''


@pytest.fixture
def helpers(tmp_path, monkeypatch):
    """A fresh module ``facts_helpers`` imported from a file (not rewritten by pytest)."""
    (tmp_path / "facts_helpers.py").write_text(HELPERS)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("facts_helpers", None)
    mod = importlib.import_module("facts_helpers")
    yield mod
    sys.modules.pop("facts_helpers", None)


def out():
    return np.zeros(1, np.float32)


def test_module_attribute_and_module_function_changes_recompile(helpers):
    @ws.kernel
    def k(o: ws.Tensor):
        helpers.store(o, ws.Float32(helpers.N))

    o = out()
    k[1, 32](o)
    assert o[0] == 3
    k[1, 32](o)
    assert k.trace_count == 1
    helpers.N = 7
    k[1, 32](o)
    assert o[0] == 7 and k.trace_count == 2

    @ws.jit
    def store_twice(o, v):
        o[0] = v * 2.0
    helpers.store = store_twice
    k[1, 32](o)
    assert o[0] == 14 and k.trace_count == 3


def test_getattr_in_traced_code_records_the_same_fact_as_an_attribute(helpers):
    @ws.kernel
    def k(o: ws.Tensor, name: ws.Static[str]):
        o[0] = ws.Float32(getattr(helpers, name) + getattr(helpers, "ABSENT", 100))

    o = out()
    k[1, 32](o, "N")
    assert o[0] == 103
    helpers.N = 7                       # read through getattr with a name known while tracing
    k[1, 32](o, "N")
    assert o[0] == 107 and k.trace_count == 2
    helpers.ABSENT = 1                  # an attribute the default stood for, added
    k[1, 32](o, "N")
    assert o[0] == 8 and k.trace_count == 3


def test_plain_helper_reached_through_a_module_is_guarded(helpers):
    @ws.kernel
    def k(o: ws.Tensor):
        o[0] = ws.Float32(helpers.plain(1))

    o = out()
    k[1, 32](o)
    assert o[0] == 2
    helpers.SCALE = 5                 # a global of the helper, not of the kernel
    k[1, 32](o)
    assert o[0] == 5 and k.trace_count == 2


def test_class_attribute_and_method_of_a_static_object_recompile(helpers):
    @ws.kernel
    def k(cfg, o: ws.Tensor):
        o[0] = cfg.val()

    o = out()
    c = helpers.Cfg()
    k[1, 32](c, o)
    assert o[0] == 20
    helpers.Cfg.K = 5                 # a class attribute read through the instance
    k[1, 32](c, o)
    assert o[0] == 50 and k.trace_count == 2

    @ws.jit
    def val(self):
        return ws.Float32(-1.0)
    helpers.Cfg.val = val             # the method replaced at run time
    k[1, 32](c, o)
    assert o[0] == -1 and k.trace_count == 3
    k[1, 32](c, o)
    assert k.trace_count == 3


def test_class_attribute_read_on_the_class(helpers):
    @ws.kernel
    def k(o: ws.Tensor):
        o[0] = ws.Float32(helpers.Cfg.K)

    o = out()
    k[1, 32](o)
    helpers.Cfg.K = 9
    k[1, 32](o)
    assert o[0] == 9 and k.trace_count == 2


def test_reloaded_module_with_an_edited_method_recompiles(helpers, tmp_path):
    @ws.kernel
    def k(cfg, o: ws.Tensor):
        o[0] = cfg.val()

    o = out()
    k[1, 32](helpers.Cfg(), o)
    assert o[0] == 20
    path = tmp_path / "facts_helpers.py"
    path.write_text(HELPERS.replace("self.K * 10", "self.K * 100"))
    importlib.invalidate_caches()
    sys.modules.pop("facts_helpers")
    fresh = importlib.import_module("facts_helpers")
    k[1, 32](fresh.Cfg(), o)          # same class name, same attributes, new method code
    assert o[0] == 200 and k.trace_count == 2


def test_numpy_array_changed_in_place_recompiles(helpers):
    @ws.kernel
    def k(o: ws.Tensor):
        o[0] = ws.Float32(helpers.TABLE[1])

    o = out()
    k[1, 32](o)
    assert o[0] == 2
    helpers.TABLE[1] = 9
    k[1, 32](o)
    assert o[0] == 9 and k.trace_count == 2


def test_a_list_inside_a_tuple_changed_in_place_recompiles(helpers):
    @ws.kernel
    def k(o: ws.Tensor):
        o[0] = ws.Float32(helpers.NESTED[0][1])

    assert _value(k) == 2
    helpers.NESTED[0][1] = 9.0        # the tuple is the same object; its list is not the same
    assert _value(k) == 9 and k.trace_count == 2
    assert _value(k) == 9 and k.trace_count == 2


def test_a_bytearray_or_array_changed_in_place_recompiles(helpers):
    import array
    helpers.WORDS = array.array("i", [5, 6])

    @ws.kernel
    def k(o: ws.Tensor):
        o[0] = ws.Float32(helpers.BYTES[1] + helpers.WORDS[0] * 10)

    assert _value(k) == 52
    helpers.BYTES[1] = 7
    assert _value(k) == 57 and k.trace_count == 2
    helpers.WORDS[0] = 1
    assert _value(k) == 17 and k.trace_count == 3
    assert _value(k) == 17 and k.trace_count == 3


@pytest.mark.parametrize("name, what", [("TABLE", "numpy array"), ("BYTES", "bytearray")])
def test_a_large_array_or_buffer_global_is_an_error_naming_it(helpers, monkeypatch, name, what):
    from warpstage.core import static_key
    monkeypatch.setattr(static_key, "ARRAY_LIMIT", 1)
    table = getattr(helpers, name)

    @ws.kernel
    def k(o: ws.Tensor):
        o[0] = ws.Float32(table[0])

    with pytest.raises(ws.CompilationError, match=rf"(?s){what} `table`.*pass the array"):
        k[1, 32](out())


def _value(k, *args):
    o = out()
    k[1, 32](o, *args)
    return float(o[0])


def test_property_of_a_static_argument_reading_a_module_global_recompiles(helpers):
    @ws.kernel
    def k(o: ws.Tensor, p):
        o[0] = ws.Float32(p.tile)

    p = helpers.Native()
    assert _value(k, p) == 1
    helpers.G = 3
    assert _value(k, p) == 3 and k.trace_count == 2


@pytest.mark.parametrize("case", ["classmethod cls.K", "methods type(self).K, self.K",
                                  "method -> plain helper o.K"])
def test_native_code_reading_a_class_attribute_recompiles(helpers, case):
    @ws.kernel
    def by_classmethod(o: ws.Tensor, p):
        o[0] = ws.Float32(p.k())

    @ws.kernel
    def by_methods(o: ws.Tensor, p):
        o[0] = ws.Float32(p.kk() + p.own() * 10)

    @ws.kernel
    def by_helper(o: ws.Tensor, p):
        o[0] = ws.Float32(p.via())

    k, times = {"classmethod cls.K": (by_classmethod, 1), "methods type(self).K, self.K":
                (by_methods, 11), "method -> plain helper o.K": (by_helper, 1)}[case]
    p = helpers.Native()
    assert _value(k, p) == 4 * times
    helpers.Native.K = 6
    assert _value(k, p) == 6 * times and k.trace_count == 2


def test_plain_helper_reading_a_property_of_a_static_argument_recompiles(helpers):
    @ws.kernel
    def k(o: ws.Tensor, p):
        o[0] = ws.Float32(helpers.tile_of(p))

    p = helpers.Native()
    assert _value(k, p) == 1
    helpers.G = 9
    assert _value(k, p) == 9 and k.trace_count == 2


def test_property_of_a_global_object_reading_a_global_recompiles(helpers):
    @ws.kernel
    def k(o: ws.Tensor):
        o[0] = ws.Float32(helpers.NATIVE.tile)

    assert _value(k) == 1
    helpers.G = 8
    assert _value(k) == 8 and k.trace_count == 2


def test_plain_helper_in_a_generator_reading_a_class_attribute_recompiles(helpers):
    @ws.kernel
    def k(o: ws.Tensor, p):
        o[0] = ws.Float32(sum(helpers.reads_k(p) for _ in range(2)))

    p = helpers.Native()
    assert _value(k, p) == 8
    helpers.Native.K = 3
    assert _value(k, p) == 6 and k.trace_count == 2


def test_plain_helper_default_changed_in_place_or_replaced_recompiles(helpers):
    @ws.kernel
    def k(o: ws.Tensor):
        o[0] = ws.Float32(helpers.scale() + helpers.offset())

    assert _value(k) == 2
    helpers.scale.__defaults__[0][0] = 5.0     # a mutable default changed in place
    assert _value(k) == 6 and k.trace_count == 2
    helpers.offset.__defaults__ = (7.0,)       # the defaults replaced
    assert _value(k) == 12 and k.trace_count == 3
    assert _value(k) == 12 and k.trace_count == 3


def test_jit_default_changed_in_place_or_replaced_recompiles():
    @ws.jit
    def h(o, s=[2.0]):
        o[0] = ws.Float32(s[0])

    @ws.kernel
    def k(o: ws.Tensor):
        h(o)

    o = out()
    k[1, 32](o)
    assert o[0] == 2
    h.fn.__defaults__[0][0] = 4.0     # the default list mutated
    k[1, 32](o)
    assert o[0] == 4 and k.trace_count == 2
    h.fn.__defaults__ = ([6.0],)      # the defaults replaced
    k[1, 32](o)
    assert o[0] == 6 and k.trace_count == 3


def _mul(a, b):
    return a * b


def test_partials_with_different_arguments_are_different_keys():
    from warpstage.core.static_key import static_key
    assert static_key(functools.partial(_mul, 2.0)) != static_key(functools.partial(_mul, 3.0))
    assert static_key(functools.partial(_mul, b=2)) != static_key(functools.partial(_mul, b=3))

    @ws.kernel
    def k(fn, o: ws.Tensor):
        o[0] = ws.Float32(fn(1.0))

    o = out()
    k[1, 32](functools.partial(_mul, 2.0), o)
    assert o[0] == 2
    k[1, 32](functools.partial(_mul, 3.0), o)
    assert o[0] == 3 and k.trace_count == 2


class Mode(enum.IntEnum):
    A = 1
    B = 2


def test_int_enum_member_is_static_by_rule_7():
    @ws.kernel
    def k(m, o: ws.Tensor):
        if m is Mode.A:
            o[0] = 1.0
        else:
            o[0] = 2.0

    o = out()
    k[1, 32](Mode.A, o)
    assert o[0] == 1
    k[1, 32](Mode.B, o)
    assert o[0] == 2
    k[1, 32](Mode.A, o)
    assert k.trace_count == 2
    assert "7" in ws.explain(k, Mode.A, o, print_table=False).split("m")[1][:40] or \
        "static" in ws.explain(k, Mode.A, o, print_table=False)
    from warpstage.frontend.binding_time import classify
    assert classify(Mode.A).rule == 7 and classify(Mode.A).binding == "static"


def test_numpy_scalars_have_stable_static_keys():
    from warpstage.core.static_key import is_stable, static_key
    for v in (np.int64(3), np.bool_(True), np.float32(0.5)):
        key = static_key(v)
        assert is_stable(key) and "np" in repr(key)
    assert static_key(np.int64(3)) != static_key(np.int32(3)) != static_key(3)


def test_kernel_file_edited_after_import_is_an_error(tmp_path, monkeypatch):
    src = textwrap.dedent('''
        import warpstage as ws

        @ws.kernel
        def k(o: ws.Tensor):
            o[0] = 1.0
        ''')
    path = tmp_path / "edited_kernel.py"
    path.write_text(src)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("edited_kernel", None)
    mod = importlib.import_module("edited_kernel")
    try:
        path.write_text(src.replace("o[0] = 1.0", "o[0] = 2.0"))
        with pytest.raises(ws.UnsupportedError, match=r"(?s)changed since it was imported.*reload"):
            mod.k[1, 32](out())
    finally:
        sys.modules.pop("edited_kernel", None)
