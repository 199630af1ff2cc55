"""assert, ws.printf, min/max/abs, ws.static and the errors of lang/control.py."""
import pytest

import warpstage.lang.control as ws
from cf_harness import DEBUG, body, ir_text, trace
from warpstage.errors import BindingTimeError, CompilationError
from warpstage.frontend.control_flow import StaticAssertionError
from warpstage.lang.scalars import Int32


def checked(a):
    assert a > 0, "a must be positive"
    assert 1 + 1 == 2
    return a


def test_dynamic_assert_is_dropped_without_debug():
    assert body(ir_text(checked, "i32", device=True)) == "func.return %0"


def test_dynamic_assert_is_a_device_check_with_debug():
    line = checked.__code__.co_firstlineno + 1
    assert body(ir_text(checked, "i32", device=True, options=DEBUG)) == f"""\
%1 = arith.constant {{value = 0}} : i32
%2 = arith.cmp %0, %1 {{pred = "gt"}} : i1
%3 = arith.not %2 : i1
scf.if %3 {{
  gpu.printf {{format = "{__file__}:{line}: assertion `a > 0` failed: a must be positive\\n"}}
  gpu.trap
  scf.yield
}} {{
  scf.yield
}}
func.return %0"""


def static_fail(a):
    assert 2 < 1, "never"


def test_static_assert_runs_while_compiling():
    with pytest.raises(StaticAssertionError) as e:
        trace(static_fail, "i32")
    assert isinstance(e.value, AssertionError)
    assert str(e.value).startswith("assertion `2 < 1` failed while compiling (its operands are "
                                   "static): never")
    assert "assert 2 < 1, \"never\"\n        ^" in str(e.value)


def dynamic_message(a):
    assert a != 3, a


def test_dynamic_assert_message_value_is_printed():
    text = ir_text(dynamic_message, "i32", options=DEBUG)
    assert "assertion `a != 3` failed: %d\\n\"} : i32" in text


def prints(a, x):
    ws.printf("a=%d x=%.2f n=%d s=%s %%\n", a, x, 7, "50%")
    ws.printf("a={} s={}\n", a, "hi")


def test_printf_formats_static_arguments_while_compiling():
    assert body(ir_text(prints, "i32", "f32")) == """\
%2 = arith.cast %1 : f64
gpu.printf %0, %2 {format = "a=%d x=%.2f n=7 s=50%% %%\\n"} : i32, f64
gpu.printf %0 {format = "a=%d s=hi\\n"} : i32
func.return"""


def print_wide(a, flag):
    ws.printf("%x %d\n", Int32(a) * 2 > 0, ws.static(5))
    ws.printf("{}\n", a + 2**40)


def test_printf_promotes_narrow_and_wide_ints():
    text = body(ir_text(print_wide, "i32", "i1"))
    assert "arith.cast %5 : i32" in text          # the i1 comparison is passed as an int
    assert 'format = "%x 5\\n"' in text
    assert 'format = "%lld\\n"} : i64' in text


def bad_count(a):
    ws.printf("%d %d\n", a)


def bad_conv(x):
    ws.printf("%d\n", x)


def test_printf_errors():
    with pytest.raises(CompilationError, match=r"2 conversion\(s\) but 1 argument"):
        trace(bad_count, "i32")
    with pytest.raises(CompilationError, match=r"%d needs an integer, got a dynamic Float32"):
        trace(bad_conv, "f32")


def min_max(a, b):
    return min(a, b, 3) + max(a, 2) + abs(a) + min((4, 5)) + max([b, 1])


def test_builtin_min_max_abs_take_dynamic_values():
    assert body(ir_text(min_max, "i32", "i32", device=True)) == """\
%2 = arith.min %0, %1 : i32
%3 = arith.constant {value = 3} : i32
%4 = arith.min %2, %3 : i32
%5 = arith.constant {value = 2} : i32
%6 = arith.max %0, %5 : i32
%7 = arith.add %4, %6 : i32
%8 = math.abs %0 : i32
%9 = arith.add %7, %8 : i32
%10 = arith.constant {value = 4} : i32
%11 = arith.add %9, %10 : i32
%12 = arith.constant {value = 1} : i32
%13 = arith.max %1, %12 : i32
%14 = arith.add %11, %13 : i32
func.return %14"""


def static_min(a):
    return min([3, 1, 2], key=lambda v: -v) + max((), default=0) + a


def test_static_min_max_keep_python_semantics():
    assert "arith.constant {value = 3}" in ir_text(static_min, "i32", device=True)


def static_check(a):
    n = ws.static(4)
    return ws.const_expr(a)


def test_ws_static_rejects_dynamic_values():
    with pytest.raises(BindingTimeError, match=r"ws.static\(...\): this value is dynamic"):
        trace(static_check, "i32", device=True)


def unroll_dynamic(n):
    for i in ws.range(n, unroll=n):
        pass


def test_unroll_must_be_static():
    with pytest.raises(BindingTimeError, match=r"ws.range\(..., unroll=k\)"):
        trace(unroll_dynamic, "i32")
