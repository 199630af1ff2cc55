"""Misuse as a new user meets it: each is a warpstage error that names the construct and the
user's line, with the fix — never a raw Python error from inside warpstage, a hang, or silence."""
import numpy as np
import pytest

import source_lines
import warpstage as ws

pytestmark = pytest.mark.usefixtures("sim_target")


def line_of(marker: str) -> int:
    return source_lines.line_of(__file__, marker)


def out(n=4):
    return np.zeros(n, np.float32)


def raises_at(exc, marker, *words):
    class Check:
        def __enter__(self):
            self.cm = pytest.raises(exc)
            self.info = self.cm.__enter__()
            return self.info

        def __exit__(self, *a):
            self.cm.__exit__(*a)
            msg = str(self.info.value)
            assert f"line {line_of(marker)}" in msg, msg
            for w in words:
                assert w in msg, msg
            return True
    return Check()


def test_static_tensor_annotation_is_a_contradiction():
    @ws.kernel
    def k(x: ws.Static[ws.Tensor]):
        pass

    with pytest.raises(ws.ArgumentError, match=r"(?s)contradiction.*rule 4.*Fix: annotate it ws.Tensor"):
        k[1, 32](out())
    with pytest.raises(ws.ArgumentError, match="contradiction"):
        ws.compile(k, ws.Tensor[ws.Float32, 1])


def test_tuple_stored_into_a_tensor_element():
    @ws.kernel
    def k(x: ws.Tensor):
        x[0] = ws.arch.thread_idx()  # marker: tuple store

    with raises_at(ws.OperandError, "marker: tuple store", "tuple of 3", "(x, y, z)", "Fix"):
        k[1, 32](out())


D = {0: 1.0, 1: 2.0}
T = np.array([1.0, 2.0], np.float32)


def test_dict_indexed_by_a_dynamic_value():
    @ws.kernel
    def k(x: ws.Tensor, i: ws.Int32):
        x[0] = D[i]  # marker: dict dynamic

    with raises_at(ws.BindingTimeError, "marker: dict dynamic", "the dict `D`", "Fix"):
        k[1, 32](out(), 1)


def test_dict_indexed_by_a_static_value_still_works():
    @ws.kernel
    def k(x: ws.Tensor):
        x[0] = D[1]

    o = out()
    k[1, 32](o)
    assert o[0] == 2


def test_numpy_global_indexed_by_a_dynamic_value():
    @ws.kernel
    def k(x: ws.Tensor, i: ws.Int32):
        x[0] = T[i]  # marker: numpy dynamic

    with raises_at(ws.BindingTimeError, "marker: numpy dynamic", "numpy array `T`",
                   "pass `T` to the kernel as an argument"):
        k[1, 32](out(), 1)


def test_numpy_ufunc_of_a_dynamic_value():
    @ws.kernel
    def k(x: ws.Tensor):
        x[0] = np.sqrt(x[1])  # marker: ufunc

    with raises_at(ws.BindingTimeError, "marker: ufunc", "np.sqrt", "ws.math.sqrt"):
        k[1, 32](out())


def test_numpy_scalar_operators_with_dynamic_values_still_work():
    @ws.kernel
    def k(x: ws.Tensor):
        x[0] = np.float32(2.0) * x[1] + x[2] * np.float32(3.0) - np.float32(1.0)

    o = np.array([0, 1, 1, 0], np.float32)
    k[1, 32](o)
    assert o[0] == 4


def test_unhashable_static_key():
    class C:
        def __static_key__(self):
            return [1, 2]

    @ws.kernel
    def k(c, x: ws.Tensor):
        x[0] = 1.0

    with pytest.raises(ws.ArgumentError, match=r"(?s)parameter 'c'.*returned a list.*not hashable"):
        k[1, 32](C(), out())


def test_generator_kernel_names_the_kernel():
    @ws.kernel
    def gen_kernel(x: ws.Tensor):
        yield 1

    with pytest.raises(ws.UnsupportedError) as e:
        gen_kernel[1, 32](out())
    assert "gen_kernel is a generator" in str(e.value) and "__ws_" not in str(e.value)


@ws.jit
def endless(n):
    return endless(n - 1) + 1  # marker: endless


def test_static_recursion_without_base_case():
    @ws.kernel
    def k(x: ws.Tensor):
        x[0] = ws.Float32(endless(3))

    with pytest.raises(ws.CompilationError) as e:
        k[1, 32](out())
    msg = str(e.value)
    assert "endless is nested 64 calls deep" in msg and "base case" in msg
    assert f"line {line_of('marker: endless')}" in msg
    assert "RecursionError" not in msg


def test_kernel_defined_as_a_method():
    class A:
        @ws.kernel
        def k(self, x: ws.Tensor):
            x[0] = 1.0

    with pytest.raises(ws.CompilationError, match=r"(?s)defined as a method of A.*module level"):
        A().k[1, 32](out())


def test_keyword_only_kernel_parameters():
    @ws.kernel
    def k(x: ws.Tensor, *, n: ws.Int32, scale=2.0):
        x[0] = ws.Float32(n) * scale

    o = out()
    k[1, 32](o, n=3)
    assert o[0] == 6
    k[1, 32](o, n=4, scale=0.5)
    assert o[0] == 2
    with pytest.raises(ws.ArgumentError):
        k[1, 32](o, 3)                # keyword-only: not positional


def test_kernel_launched_inside_a_kernel():
    @ws.kernel
    def inner(x: ws.Tensor):
        x[0] = 1.0

    @ws.kernel
    def k(x: ws.Tensor):
        inner[1, 32](x)

    with pytest.raises(ws.CompilationError, match=r"(?s)inside traced code.*@ws.jit"):
        k[1, 32](out())


def test_print_of_a_dynamic_value_points_to_printf(capsys):
    @ws.kernel
    def k(x: ws.Tensor):
        print("compiling")            # static: prints while compiling, as in Python
        print(x[0])  # marker: print dynamic

    with raises_at(ws.BindingTimeError, "marker: print dynamic", "ws.printf"):
        k[1, 32](out())
    assert "compiling" in capsys.readouterr().out


def test_fstring_of_a_dynamic_value_points_to_printf():
    @ws.kernel
    def k(x: ws.Tensor):
        s = f"v={x[1]}"  # marker: fstring
        x[0] = 1.0 if s else 0.0

    with raises_at(ws.BindingTimeError, "marker: fstring", "f-string", "ws.printf"):
        k[1, 32](out())


def test_iterating_over_a_tensor_is_an_error_not_a_hang():
    @ws.kernel
    def k(x: ws.Tensor):
        s = 0.0
        for v in x:
            s += v
        x[0] = s

    with pytest.raises(ws.UnsupportedError, match=r"(?s)iterating over a tensor.*ws.range"):
        k[1, 32](out())


def test_static_side_effect_in_a_dynamic_if_is_an_error():
    @ws.kernel
    def k(x: ws.Tensor, n: ws.Int32):
        acc = []
        if n > 0:  # marker: side effect if
            acc.append(1)
        x[0] = ws.Float32(len(acc))

    with raises_at(ws.BindingTimeError, "marker: side effect if", "the list `acc`", "Fix"):
        k[1, 32](out(), 0)


class _Counter:
    def __init__(self):
        self.n = 0


def test_rebinding_a_static_objects_attribute_in_a_dynamic_if_is_an_error():
    @ws.kernel
    def k(c, x: ws.Tensor, n: ws.Int32):
        if n > 0:  # marker: attribute side effect if
            c.n = 5
        x[0] = ws.Float32(c.n)

    c = _Counter()
    with raises_at(ws.BindingTimeError, "marker: attribute side effect if", "`c`", "Fix"):
        k[1, 32](c, out(), 0)
    assert c.n == 5 or c.n == 0         # (the trace ran the branch; the launch never happened)


def test_a_static_object_gaining_an_attribute_in_a_dynamic_if_is_not_a_change():
    @ws.kernel
    def k(c, x: ws.Tensor, n: ws.Int32):
        if n > 0:
            c.cache = 1                 # a new attribute (a lazy cache): not a rebinding
        x[0] = ws.Float32(c.n)

    o = out()
    k[1, 32](_Counter(), o, 1)
    assert o[0] == 0


def test_static_side_effect_in_a_dynamic_loop_is_an_error():
    @ws.kernel
    def k(x: ws.Tensor, n: ws.Int32):
        seen = {}
        for i in range(n):  # marker: side effect loop
            seen["k"] = 1
        x[0] = ws.Float32(len(seen))

    with raises_at(ws.BindingTimeError, "marker: side effect loop", "the dict `seen`", "loop"):
        k[1, 32](out(), 0)


LOG = []


def test_static_side_effect_on_a_module_global_in_a_dynamic_if_is_an_error():
    @ws.kernel
    def k(x: ws.Tensor, n: ws.Int32):
        if n > 5:  # marker: global side effect
            LOG.append(1)
        x[0] = 1.0

    with raises_at(ws.BindingTimeError, "marker: global side effect", "the list `LOG`", "Fix"):
        k[1, 32](out(), 1)


def test_static_side_effect_on_a_closure_variable_in_a_dynamic_loop_is_an_error():
    seen = set()

    @ws.kernel
    def k(x: ws.Tensor, n: ws.Int32):
        for i in range(n):  # marker: closure side effect
            seen.add(1)
        x[0] = 1.0

    with raises_at(ws.BindingTimeError, "marker: closure side effect", "the set `seen`", "loop"):
        k[1, 32](out(), 3)


def test_reading_a_global_container_in_a_dynamic_region_still_works():
    @ws.kernel
    def k(x: ws.Tensor, n: ws.Int32):
        if n > 0:
            x[0] = ws.Float32(D[1])
        x[1] = ws.Float32(len(LOG) + 1)

    o = out()
    k[1, 32](o, 1)
    assert o[0] == 2 and o[1] == len(LOG) + 1


def test_changes_outside_dynamic_regions_and_to_dynamic_lists_still_work():
    @ws.kernel
    def k(x: ws.Tensor, n: ws.Int32):
        acc = [ws.Float32(0.0)]
        for i in range(n):
            acc[0] = acc[0] + 1.0           # a list of dynamic values: merged, not an error
        tiles = []
        for j in ws.static_range(3):
            tiles.append(j)                 # a static loop: plain Python
        x[0] = acc[0] + ws.Float32(len(tiles))

    o = out()
    k[1, 32](o, 4)
    assert o[0] == 7
