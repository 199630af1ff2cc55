"""``ws.ops.matmul`` epilogues written wrongly, as a new user would (session 12's review,
review13b): each is either keyed right (a changed field compiles a new kernel, never a stale one)
or an error at the user's line with a ``Fix:`` and no warpstage frame (tests/misuse_kit.py).

- a field holding a numpy scalar is a number: keyed by value (it was taken for a tensor, left
  out of the key, and a changed value ran the first value's kernel);
- a list field is keyed by its contents (it was an unhashable-key error naming ``Matmul``);
- a tensor field read as ``self.<name>`` inside ``apply`` is an error naming ``operands[i]``
  (it was a raw TypeError, or, through ``float()``, a value kept in the kernel);
- ``apply`` returning None or a tuple is an error at the user's ``apply``, not at the store deep
  in the TMA-store epilogue;
- a ``raise`` inside ``apply`` is the user's own exception (it was an UnsupportedError naming
  an internal ``if`` of ops/matmul_kernel.py);
- a NameError inside ``apply`` names the line and the fix;
- a field that cannot be keyed is the op's ArgumentError naming the epilogue and the field.
"""
import traceback

import numpy as np
import pytest

import warpstage as ws
from dtypes_helper import randn
from misuse_kit import raised
import source_lines

pytestmark = [pytest.mark.usefixtures("sim_target"),
              pytest.mark.filterwarnings("ignore::warpstage.RecompileWarning")]


def _ab():
    return randn((40, 24), "bfloat16", 1), randn((24, 72), "bfloat16", 2)


def f32(x):
    return np.asarray(x, np.float32)


class Scale(ws.ops.Epilogue):
    def __init__(self, s):
        self.s = s

    @ws.jit
    def apply(self, x, row, col, operands):
        return x * self.s


class ScaleList(ws.ops.Epilogue):
    def __init__(self, s):
        self.s = [s]

    @ws.jit
    def apply(self, x, row, col, operands):
        return x * self.s[0]


@pytest.mark.parametrize("make", [np.float64, np.float32, lambda v: v, ScaleList],
                         ids=["np.float64", "np.float32", "float", "list"])
def test_a_changed_number_field_compiles_a_new_kernel(make):
    """Scale(2) after Scale(1) gives twice the result, whatever holds the number."""
    a, b = _ab()
    epi = (lambda v: make(v)) if make is ScaleList else (lambda v: Scale(make(v)))
    one = f32(ws.ops.matmul(a, b, epilogue=epi(1.0)))
    two = f32(ws.ops.matmul(a, b, epilogue=epi(2.0)))
    np.testing.assert_allclose(two, 2 * one, rtol=1e-2, atol=1e-2)
    assert not np.allclose(two, one)


def test_numpy_scalars_are_not_tensors():
    """The one test of what is a tensor (binding-time rule 4) that the epilogue's operands and
    key use: a numpy array is one, a numpy scalar is not."""
    from warpstage.runtime.tensors import is_tensor
    assert is_tensor(np.zeros(3)) and is_tensor(np.float32(1.0).reshape(1))
    assert not is_tensor(np.float64(0.5)) and not is_tensor(0.5) and not is_tensor(None)
    assert Scale(np.float64(0.5)).operands() == ()


class TensorAsNumber(ws.ops.Epilogue):
    def __init__(self, s):
        self.s = s

    @ws.jit
    def apply(self, x, row, col, operands):
        return x * float(self.s)  # marker: tensor as number


class TensorTimes(TensorAsNumber):
    @ws.jit
    def apply(self, x, row, col, operands):
        return x * self.s  # marker: tensor times


@pytest.mark.parametrize("cls, marker", [(TensorAsNumber, "tensor as number"),
                                         (TensorTimes, "tensor times")], ids=["float", "mul"])
def test_a_tensor_field_read_as_a_value_names_its_operand(cls, marker):
    """A tensor field is a kernel argument (operands[0]), left out of the key: read as a value
    while compiling it would be kept in the kernel for every later tensor."""
    a, b = _ab()
    s = np.full((1,), 2.0, np.float32)
    raised(ws.BindingTimeError, __file__, "marker: " + marker,
           lambda: ws.ops.matmul(a, b, epilogue=cls(s)),
           f"{cls.__name__}.s is a tensor", "operands[0]", "Fix: read operands[0][col]")


class ReturnsNothing(ws.ops.Epilogue):
    @ws.jit
    def apply(self, x, row, col, operands):  # marker: no return
        y = x * 2.0  # noqa: F841


class ReturnsTuple(ws.ops.Epilogue):
    @ws.jit
    def apply(self, x, row, col, operands):
        y = x * 2.0
        return y, x  # marker: tuple return


@pytest.mark.parametrize("cls, marker, got", [
    (ReturnsNothing, "no return", "returned None"),
    (ReturnsTuple, "tuple return", "returned tuple"),
], ids=["None", "tuple"])
def test_apply_returning_no_value_is_an_error_at_the_users_apply(cls, marker, got):
    a, b = _ab()
    msg = raised(ws.OperandError, __file__, "marker: " + marker,
                 lambda: ws.ops.matmul(a, b, epilogue=cls()),
                 f"{cls.__name__}.apply (a ws.ops.matmul epilogue) {got}", "expected one f32 value")
    assert "matmul_consumer.py" not in msg and "epilogue.py" not in msg, msg


class Rejects(ws.ops.Epilogue):
    @ws.jit
    def apply(self, x, row, col, operands):
        raise ValueError("Rejects supports no output")  # marker: user raise


def test_a_raise_inside_apply_is_the_users_own_error():
    """Under the kernel's own dynamic branches (its role dispatch by warp index) the user's
    ``raise`` runs on every path: it is the user rejecting a configuration while compiling, not
    an UnsupportedError naming an ``if`` of ops/matmul_kernel.py."""
    a, b = _ab()
    with pytest.raises(ValueError) as ei:
        ws.ops.matmul(a, b, epilogue=Rejects())
    assert type(ei.value) is ValueError and str(ei.value) == "Rejects supports no output"
    frames = traceback.extract_tb(ei.value.__traceback__)
    assert frames[-1].lineno == source_lines.line_of(__file__, "# marker: user raise")
    assert not any("/warpstage/" in f.filename for f in frames), frames


def test_a_raise_under_the_users_dynamic_if_still_names_that_if():
    """The rule above does not hide the user's own dynamic ``if``."""
    class RaisesIf(ws.ops.Epilogue):
        @ws.jit
        def apply(self, x, row, col, operands):
            if x > 0.0:  # marker: user if
                raise ValueError("positive")
            return x
    a, b = _ab()
    with pytest.raises(ws.UnsupportedError) as ei:
        ws.ops.matmul(a, b, epilogue=RaisesIf())
    line = source_lines.line_of(__file__, "# marker: user if")
    assert f"test_matmul_epilogue_misuse.py:{line}" in str(ei.value), str(ei.value)


class Typo(ws.ops.Epilogue):
    def __init__(self, scale):
        self.scale = scale

    @ws.jit
    def apply(self, x, row, col, operands):
        return x * scael  # noqa: F821  # marker: typo


def test_a_name_error_in_apply_names_the_line_and_the_fix():
    a, b = _ab()
    msg = raised(NameError, __file__, "marker: typo",
                 lambda: ws.ops.matmul(a, b, epilogue=Typo(2.0)),
                 "name 'scael' is not defined", "in kernel code")
    assert "Fix: define it" in msg


class Unkeyable(ws.ops.Epilogue):
    def __init__(self):
        self.steps = (i for i in range(3))


def test_an_unkeyable_field_is_the_ops_error_naming_the_field():
    a, b = _ab()
    msg = raised(ws.ArgumentError, __file__, "marker: unkeyable",
                 lambda: ws.ops.matmul(a, b, epilogue=Unkeyable()),  # marker: unkeyable
                 "ws.ops.matmul: epilogue=Unkeyable(...) cannot specialize the kernel",
                 "its field 'steps' (generator)", "give Unkeyable a __static_key__()")
    assert "Matmul" not in msg, msg


class Gain(ws.ops.Epilogue):
    def __init__(self, gain):
        self.gain = gain

    @ws.jit
    def apply(self, x, row, col, operands):
        return x * self.gain


def test_the_recompile_warning_names_the_fields_that_changed(monkeypatch):
    """The policy's key names its fields and the epilogue's, so the warning says
    'epilogue.gain 1.0 -> 2.0' instead of 'a static field of Matmul ... changed'."""
    import dataclasses
    from warpstage.ops import matmul_host
    kernel = ws.kernel(matmul_host.matmul_kernel.fn)    # its own count (the warning is once)
    kernel._options = dataclasses.replace(kernel.options, max_specializations=1)
    monkeypatch.setattr(matmul_host, "matmul_kernel", kernel)
    a, b = _ab()
    ws.ops.matmul(a, b, epilogue=Gain(1.0), tile_n=128)
    with pytest.warns(ws.RecompileWarning) as record:     # warned once per kernel
        ws.ops.matmul(a, b, epilogue=Gain(2.0), tile_n=64)
    text = "\n".join(str(w.message) for w in record)
    assert "epilogue.gain 1.0 -> 2.0" in text and "p: tile_n 128 -> 64" in text, text
    assert "a static field of" not in text, text


def test_a_recompile_reason_shows_an_epilogue_by_its_class_and_fields():
    """Not the key's nested tuples ("('sk', ('class', 'warpstage..."): the class and fields."""
    from warpstage.core.static_key import static_key
    from warpstage.frontend.kinds.diff import field_changes
    old, new = (("epilogue", None),), (("epilogue", static_key(ws.ops.BiasGelu())),)
    assert field_changes(old, new) == "epilogue None -> BiasGelu(bias=None, has_bias=False)"


class NoOperands(ws.ops.Epilogue):
    def operands(self):
        pass


def test_operands_returning_none_is_the_ops_error():
    a, b = _ab()
    raised(ws.ArgumentError, __file__, "marker: operands none",
           lambda: ws.ops.matmul(a, b, epilogue=NoOperands()),  # marker: operands none
           "NoOperands.operands() returned None", "expected a tuple of the tensors")


class FieldTypo(ws.ops.Epilogue):
    def __init__(self, scale):
        self.scale = scale

    @ws.jit
    def apply(self, x, row, col, operands):
        return x * self.scael  # marker: field typo


def test_a_missing_field_in_apply_names_the_line_and_the_closest_field():
    a, b = _ab()
    raised(AttributeError, __file__, "marker: field typo",
           lambda: ws.ops.matmul(a, b, epilogue=FieldTypo(2.0)),
           "'FieldTypo' object has no attribute 'scael'", "did you mean 'scale'")


class UnrollByCol(ws.ops.Epilogue):
    @ws.jit
    def apply(self, x, row, col, operands):
        for _ in ws.static_range(col):  # marker: static col
            x = x + 1.0
        return x


def test_why_dynamic_names_applys_argument_not_the_kernels_tile_loop():
    a, b = _ab()
    msg = raised(ws.BindingTimeError, __file__, "marker: static col",
                 lambda: ws.ops.matmul(a, b, epilogue=UnrollByCol()),
                 "Why dynamic: it became dynamic at: the output column `col` of the epilogue's "
                 "apply")
    assert "matmul_consumer.py" not in msg, msg


class PlainPrologue(ws.ops.Epilogue):
    def __init__(self, t):
        self.t = t

    def prologue(self, operands):                      # a plain method, as the docs allow
        return ws.Float32(operands[0][0, 0])  # marker: plain prologue

    @ws.jit
    def apply(self, x, row, col, operands):
        return x * operands


class PlainApply(ws.ops.Epilogue):
    def apply(self, x, row, col, operands):            # not @ws.jit
        if x > 0.0:                                    # a dynamic `if`: rewritten, so it runs
            x = x * 2.0
        return x


def test_a_plain_prologue_or_apply_is_traced_like_a_jit_method():
    """Its errors name its own line (they named the kernel's call in matmul_consumer.py), and
    its dynamic ``if`` is a branch on the GPU, as in a @ws.jit method."""
    a, b = _ab()
    raised(ws.OperandError, __file__, "marker: plain prologue",
           lambda: ws.ops.matmul(a, b, epilogue=PlainPrologue(np.zeros(72, np.float32))),
           "expected 1 index(es)")
    got = f32(ws.ops.matmul(a, b, epilogue=PlainApply(), out_dtype=np.float32))
    ref = f32(a) @ f32(b)
    np.testing.assert_allclose(got, np.where(ref > 0, 2 * ref, ref), rtol=1e-4, atol=1e-4)
