"""Misuse found by the session-7 fresh-user review (issue 11): each case gets the right result
or a warpstage error naming the construct, the user's line, expected vs got and the Fix, with no
warpstage frame in the traceback (misuse_kit.raised). The stale-kernel cases (a tuple holding a
list, a bytearray) are in tests/frontend/test_facts.py."""
import numpy as np
import pytest

import misuse_kit
import warpstage as ws

pytestmark = pytest.mark.usefixtures("sim_target")

F = ws.Tensor[ws.Float32, 1]


def out(n=4, dtype=np.float32):
    return np.zeros(n, dtype)


def raised(exc, marker, call, *words) -> str:
    return misuse_kit.raised(exc, __file__, marker, call, *words)


# -- dynamic values as dict keys ------------------------------------------------------------------

def test_a_dynamic_dict_key_is_an_error_not_a_wrong_len():
    @ws.kernel
    def k(x: F, n: ws.Int32):
        d = {}
        d[n] = 1.0  # marker: dynamic dict key
        d[n] = 2.0
        x[0] = ws.Float32(len(d))

    @ws.kernel
    def k2(x: F, n: ws.Int32):
        s = {n, n}  # marker: dynamic set element
        x[0] = ws.Float32(len(s))

    raised(ws.BindingTimeError, "marker: dynamic dict key", lambda: k[1, 32](out(), 3),
           "a dynamic Int32 used as a dict key or set element", "parameter 'n'",
           "Fix: key the dict by a static value")
    raised(ws.BindingTimeError, "marker: dynamic set element", lambda: k2[1, 32](out(), 3),
           "dict key or set element")


def test_static_dict_keys_still_work():
    @ws.kernel
    def k(x: F, n: ws.Int32):
        d = {}
        for i in ws.static_range(3):
            d[i] = n + i
        x[0] = ws.Float32(len(d) + d[2])

    o = out()
    k[1, 32](o, 5)
    assert o[0] == 10


# -- a static loop unrolling millions of iterations -----------------------------------------------

def test_a_static_range_past_max_unroll_stops_at_once():
    @ws.kernel
    def k(x: F):
        s = 0
        for i in ws.static_range(10 ** 7):  # marker: huge static range
            s += i
        x[0] = ws.Float32(s)

    raised(ws.CompilationError, "marker: huge static range", lambda: k[1, 32](out()),
           "ws.static_range(0, 10000000, 1) would unroll 10000000 iterations, past the limit of "
           f"{ws.CompileOptions().max_unroll}", "Fix: loop on the GPU with `for i in range(n)`",
           "max_unroll=")


def test_nested_static_loops_count_together_against_max_unroll():
    @ws.kernel(max_unroll=100)
    def k(x: F):
        s = 0
        for i in ws.static_range(20):
            for j in (1, 2, 3, 4, 5):  # marker: nested static loop
                s += j
        x[0] = ws.Float32(s)

    @ws.kernel(max_unroll=200)
    def fits(x: F):
        s = 0
        for i in ws.static_range(20):
            for j in (1, 2, 3, 4, 5):
                s += j
        x[0] = ws.Float32(s)

    raised(ws.CompilationError, "marker: nested static loop", lambda: k[1, 32](out()),
           "made this trace unroll more than 100 iterations", "@ws.kernel(max_unroll=400)")
    o = out()
    fits[1, 32](o)                   # 20 + 100 iterations: within 200
    assert o[0] == 300


# -- keyword-only parameters of a @ws.jit helper ----------------------------------------------------

def test_keyword_only_and_variadic_parameters_of_a_jit_helper():
    @ws.jit
    def h(o, *, v=1.0, scale: ws.Static[float] = 2.0):
        o[0] = v * scale

    @ws.jit
    def g(o, *vals, **kw):
        o[1] = vals[0] + vals[1] + kw["z"]

    @ws.kernel
    def k(o: F, n: ws.Float32):
        h(o)
        o[2] = o[0]
        h(o, scale=4.0, v=n)
        g(o, n, 1.0, z=2.0)

    o = out()
    k[1, 32](o, 5.0)
    assert o.tolist() == [20.0, 8.0, 2.0, 0.0]


# -- tensor metadata is read-only -----------------------------------------------------------------

def test_assigning_or_deleting_tensor_metadata_is_an_error():
    @ws.kernel
    def k(x: F):
        x.shape = (4,)  # marker: tensor shape assigned
        x[0] = 1.0

    @ws.kernel
    def k2(x: F):
        del x.strides  # marker: tensor strides deleted

    @ws.kernel
    def k3(x: F):
        S = ws.smem.make_storage("S", a=ws.smem.Array[ws.Float32, (4,), 16])
        s = ws.smem.allocate(S)
        s.a.shape = (2, 2)  # marker: smem shape assigned

    raised(ws.UnsupportedError, "marker: tensor shape assigned", lambda: k[1, 32](out()),
           "assigning `shape` of a dynamic ws.Tensor", "read-only in a kernel",
           "Expected: reads such as x.shape; got an assignment")
    raised(ws.UnsupportedError, "marker: tensor strides deleted", lambda: k2[1, 32](out()),
           "deleting `strides` of a dynamic ws.Tensor")
    raised(ws.UnsupportedError, "marker: smem shape assigned", lambda: k3[1, 32](out()),
           "assigning `shape` of a shared-memory array", "Fix: index a sub-view")


# -- a Python-typed parameter -------------------------------------------------------------------

def test_parameters_annotated_with_python_number_types_check_their_value():
    @ws.kernel
    def k(x: F, n: int, f: float, b: bool):
        x[0] = ws.Float32(n) + f
        if b:
            x[1] = f / 2

    o = out()
    k[1, 32](o, 3, 1, True)                     # an int for `float`: Float32, as PEP 484 says
    assert o[:2].tolist() == [4.0, 0.5]
    k[1, 32](o, 4, 1.5, np.bool_(True))
    assert o[:2].tolist() == [5.5, 0.75] and k.trace_count == 1
    raised(ws.ArgumentError, "marker: float for int",
           lambda: k[1, 32](o, 2.5, 1.0, True),  # marker: float for int
           "parameter 'n' is annotated int but got the float 2.5",
           "Expected: an int", "Fix: pass an int (int(x) truncates")
    raised(ws.ArgumentError, "marker: int for bool",
           lambda: k[1, 32](o, 1, 1.0, 1),  # marker: int for bool
           "parameter 'b' is annotated bool but got the int 1", "Fix: pass True or False")
    raised(ws.ArgumentError, "marker: str for float",
           lambda: k[1, 32](o, 1, "a", True),  # marker: str for float
           "parameter 'f' is annotated float but got a str")
    ck = ws.compile(k, F, ws.Int64, ws.Float32, ws.Boolean)
    assert "n:i64" in ck.explain()
    with pytest.raises(ws.ArgumentError, match="annotated int but got the type ws.Float32"):
        ws.compile(k, F, ws.Float32, ws.Float32, ws.Boolean)


# -- @ and friends on dynamic scalars -------------------------------------------------------------

def test_matmul_divmod_round_of_dynamic_scalars_are_errors():
    @ws.kernel
    def k(x: F):
        x[0] = x[1] @ x[2]  # marker: scalar matmul

    @ws.kernel
    def k2(x: F):
        x[0], x[1] = divmod(x[2], 2.0)  # marker: scalar divmod

    @ws.kernel
    def k3(x: F):
        x[0] = round(x[2])  # marker: scalar round

    raised(ws.UnsupportedError, "marker: scalar matmul", lambda: k[1, 32](out()),
           "the matrix-multiplication operator @ on a dynamic Float32 scalar",
           "Fix: x * y for the product of two scalars")
    raised(ws.UnsupportedError, "marker: scalar divmod", lambda: k2[1, 32](out()),
           "divmod() on a dynamic Float32", "Fix: (x // y, x % y)")
    raised(ws.UnsupportedError, "marker: scalar round", lambda: k3[1, 32](out()),
           "round() on a dynamic Float32")


# -- ws.compile given a type that is not one -------------------------------------------------------

def test_compile_given_the_bare_tensor_class_names_the_parameter_and_the_fix():
    @ws.kernel
    def k(x: ws.Tensor, y: ws.Tensor[ws.Float16, 2]):
        x[0] = 1.0

    raised(ws.ArgumentError, "marker: bare Tensor",
           lambda: ws.compile(k, ws.Tensor, ws.Tensor[ws.Float16, 2]),  # marker: bare Tensor
           "ws.compile: parameter 'x' was given the type ws.Tensor, which does not say the "
           "tensor's dtype and rank", "Fix: pass ws.Tensor[ws.Float32, 1] for 'x'")
    raised(ws.ArgumentError, "marker: bare Tensor, annotated",
           lambda: ws.compile(k, F, ws.Tensor),  # marker: bare Tensor, annotated
           "parameter 'y'", "Fix: pass ws.Tensor[Float16, 2] for 'y' (its annotation)")


# -- numpy integers as static ints --------------------------------------------------------------

def test_static_int_takes_numpy_integers_as_the_same_key():
    @ws.kernel
    def k(x: F, n: ws.Static[int]):
        x[0] = ws.Float32(n * 2)

    o = out()
    k[1, 32](o, 3)
    k[1, 32](o, np.int64(3))
    k[1, 32](o, np.int32(3))
    assert o[0] == 6 and k.trace_count == 1      # one key: the Python int 3
    k[1, 32](o, np.uint8(4))
    assert o[0] == 8 and k.trace_count == 2
    raised(ws.ArgumentError, "marker: numpy float for Static[int]",
           lambda: k[1, 32](o, np.float32(4)),  # marker: numpy float for Static[int]
           "annotated ws.Static[int] but got a float32", "Fix: pass an int")


# -- a kernel assigning a Python global ----------------------------------------------------------

COUNT = 0


def test_a_global_statement_in_a_kernel_is_an_error():
    @ws.kernel
    def k(x: F):
        global COUNT  # marker: global in kernel
        COUNT += 1
        x[0] = ws.Float32(COUNT)

    raised(ws.UnsupportedError, "marker: global in kernel", lambda: k[1, 32](out()),
           "`global COUNT` in", "cannot assign Python globals", "runs once, while warpstage "
           "compiles it", "Fix: update COUNT on the host")
    assert COUNT == 0
