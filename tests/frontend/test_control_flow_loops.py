"""Loops: dynamic for over range (scf.for / scf.while), static iteration, while, break/continue,
return inside loops, loop-carried values and their promotion."""
import pytest

import warpstage.lang.control as ws
from cf_harness import body, ir_text, ops, trace
from warpstage.errors import BindingTimeError, CompilationError
from warpstage.frontend import loops
from warpstage.frontend.merge import UnboundVariableError
from warpstage.lang.scalars import Int32


def phase_loop(n):
    phase = 0
    acc = 0
    for i in range(n):
        phase ^= 1
        acc += phase
    return acc


def test_static_number_changed_in_body_is_promoted_and_carried():
    assert body(ir_text(phase_loop, "i32", device=True)) == """\
%1 = arith.constant {value = 0} : i32
%2 = arith.constant {value = 1} : i32
%3 = arith.constant {value = 0} : i32
%4 = arith.constant {value = 0} : i32
%5, %6 = scf.for %1, %0, %2, %3, %4 : i32, i32 {
^(%7: i32, %8: i32, %9: i32):
  %10 = arith.constant {value = 1} : i32
  %11 = arith.xor %8, %10 : i32
  %12 = arith.add %9, %11 : i32
  scf.yield %11, %12
}
func.return %6"""


def phase_origin(n):
    phase = 0
    for i in range(n):
        phase ^= 1
    return phase


def test_loop_promotion_origin():
    _, phase = trace(phase_origin, "i32", device=True)
    text = str(phase.origin)
    assert text.startswith("promoted to dynamic: `phase` is 0 before the loop and 1 after an "
                           "iteration, carried by the for loop at ")
    assert text.endswith(f":{phase_origin.__code__.co_firstlineno + 2}")


def negative_step(n):
    s = 0
    for i in range(10, n, -2):
        s += i
    return s


def test_negative_static_step():
    assert body(ir_text(negative_step, "i32", device=True)) == """\
%1 = arith.constant {value = 10} : i32
%2 = arith.constant {value = -2} : i32
%3 = arith.constant {value = 0} : i32
%4 = scf.for %1, %0, %2, %3 : i32 {
^(%5: i32, %6: i32):
  %7 = arith.add %6, %5 : i32
  scf.yield %7
}
func.return %4"""


def unrolled_hint(n):
    s = 0
    for i in ws.range(0, n, 1, unroll=4):
        s += i
    return s


def test_ws_range_unroll_hint_is_an_attribute():
    text = body(ir_text(unrolled_hint, "i32", device=True))
    assert "scf.for %1, %0, %2, %3 {unroll = 4} : i32 {" in text


def static_bounds(a):
    s = a
    for i in range(4):
        s += i
    return s


def test_plain_range_with_static_bounds_is_still_a_dynamic_loop():
    text = body(ir_text(static_bounds, "i32", device=True))
    assert text.startswith("%1 = arith.constant {value = 0} : i32\n"
                           "%2 = arith.constant {value = 4} : i32\n"
                           "%3 = arith.constant {value = 1} : i32\n"
                           "%4 = scf.for %1, %2, %3, %0 : i32 {")


def mixed_width(n):
    s = 0
    for i in range(n, 2**40):
        s += 1
    return s


def test_bounds_take_one_integer_type():
    text = ir_text(mixed_width, "i32", device=True)
    assert "arith.cast %0 : i64" in text
    assert "scf.for %1, %2, %3, %4 : i32 {\n  ^(%6: i64, %7: i32):" in text


def static_loops(a):
    s = a
    for k in (1, 2):
        s = s + k
    for j in ws.static_range(2):
        s = s * (j + 2)
    for j in ws.range_constexpr(1):
        s = s - 1
    return s


def test_static_iteration_is_unrolled():
    assert body(ir_text(static_loops, "i32", device=True)) == """\
%1 = arith.constant {value = 1} : i32
%2 = arith.add %0, %1 : i32
%3 = arith.constant {value = 2} : i32
%4 = arith.add %2, %3 : i32
%5 = arith.constant {value = 2} : i32
%6 = arith.mul %4, %5 : i32
%7 = arith.constant {value = 3} : i32
%8 = arith.mul %6, %7 : i32
%9 = arith.constant {value = 1} : i32
%10 = arith.sub %8, %9 : i32
func.return %10"""


def static_range_dynamic(n):
    for i in ws.static_range(n):
        pass


def test_static_range_needs_static_bounds():
    with pytest.raises(BindingTimeError) as e:
        trace(static_range_dynamic, "i32")
    msg = str(e.value)
    assert msg.startswith("a ws.static_range(...) bound")
    assert "this value is dynamic (an Int32 value known only on the GPU" in msg
    assert "Why dynamic: it became dynamic at: parameter n." in msg
    assert "for i in ws.static_range(n):" in msg


def static_range_float(n):
    for i in ws.static_range(2.5):
        pass


def static_range_four(n):
    for i in ws.static_range(0, 4, 1, 1):
        pass


@pytest.mark.parametrize("fn,got", [(static_range_float, "got float 2.5."),
                                    (static_range_four, "got int 0, int 4, int 1, int 1.")])
def test_static_range_takes_one_to_three_ints(fn, got):
    from warpstage.errors import ArgumentError
    with pytest.raises(ArgumentError) as e:
        trace(fn, "i32")
    msg = str(e.value)
    assert msg.startswith("ws.static_range(...) takes 1 to 3 integers") and got in msg
    assert "ws.static_range(" in msg.split("\n")[1] + msg.split("\n")[2]
    assert "Fix: pass ints" in msg


def while_dynamic(n):
    i = 0
    while i < n:
        i += 2
    return i


def test_while_with_dynamic_condition():
    assert body(ir_text(while_dynamic, "i32", device=True)) == """\
%1 = arith.constant {value = 0} : i32
%2 = scf.while %1 : i32 {
^(%3: i32):
  %4 = arith.cmp %3, %0 {pred = "lt"} : i1
  scf.condition %4, %3
} {
^(%5: i32):
  %6 = arith.constant {value = 2} : i32
  %7 = arith.add %5, %6 : i32
  scf.yield %7
}
func.return %2"""


def while_static(a):
    k = 0
    while k < 3:
        k += 1
        a = a + k
    return a


def test_while_with_static_condition_runs_in_python():
    assert ops(body(ir_text(while_static, "i32", device=True))) == [
        "arith.constant", "arith.add"] * 3 + ["func.return"]


def while_true_break(n):
    i = 0
    while True:
        i += 1
        if i > n:
            break
    return i


def test_while_true_with_dynamic_break_becomes_one_scf_while():
    assert body(ir_text(while_true_break, "i32", device=True)) == """\
%1 = arith.constant {value = 0} : i32
%2 = arith.constant {value = false} : i1
%3, %4 = scf.while %1, %2 : i32, i1 {
^(%5: i32, %6: i1):
  %7 = arith.not %6 : i1
  scf.condition %7, %5, %6
} {
^(%8: i32, %9: i1):
  %10 = arith.constant {value = 1} : i32
  %11 = arith.add %8, %10 : i32
  %12 = arith.cmp %11, %0 {pred = "gt"} : i1
  scf.yield %11, %12
}
func.return %3"""


def endless(a):
    k = 0
    while k >= 0:
        k += 1


def test_endless_static_while_is_reported(monkeypatch):
    monkeypatch.setattr(loops, "STATIC_WHILE_LIMIT", 50)
    with pytest.raises(CompilationError, match=r"ran 50 iterations while compiling"):
        trace(endless, "i32")


def continue_loop(n):
    s = 0
    for i in range(n):
        if i % 2 == 0:
            continue
        s += i
    return s


def test_continue_guards_the_rest_of_the_body():
    assert body(ir_text(continue_loop, "i32", device=True)) == """\
%1 = arith.constant {value = 0} : i32
%2 = arith.constant {value = 1} : i32
%3 = arith.constant {value = 0} : i32
%4 = scf.for %1, %0, %2, %3 : i32 {
^(%5: i32, %6: i32):
  %7 = arith.constant {value = 2} : i32
  %8 = arith.mod %5, %7 : i32
  %9 = arith.constant {value = 0} : i32
  %10 = arith.cmp %8, %9 {pred = "eq"} : i1
  %11 = arith.not %10 : i1
  %12 = scf.if %11 : i32 {
    %13 = arith.add %6, %5 : i32
    scf.yield %13
  } {
    scf.yield %6
  }
  scf.yield %12
}
func.return %4"""


def find(n):
    for i in range(n):
        if i * i > n:
            return i
    return -1


def test_return_in_dynamic_loop_makes_a_while_and_one_exit():
    assert body(ir_text(find, "i32", device=True)) == """\
%1 = arith.constant {value = 0} : i32
%2 = arith.constant {value = 1} : i32
%3 = arith.constant {value = 0} : i32
%4 = arith.constant {value = false} : i1
%5, %6, %7 = scf.while %1, %3, %4 : i32, i32, i1 {
^(%8: i32, %9: i32, %10: i1):
  %11 = arith.cmp %8, %0 {pred = "lt"} : i1
  %12 = arith.not %10 : i1
  %13 = arith.and %11, %12 : i1
  scf.condition %13, %8, %9, %10
} {
^(%14: i32, %15: i32, %16: i1):
  %17 = arith.mul %14, %14 : i32
  %18 = arith.cmp %17, %0 {pred = "gt"} : i1
  %19 = scf.if %18 : i32 {
    scf.yield %14
  } {
    scf.yield %15
  }
  %20 = arith.add %14, %2 : i32
  scf.yield %20, %19, %18
}
%21 = arith.not %7 : i1
%22 = scf.if %21 : i32 {
  %23 = arith.constant {value = -1} : i32
  scf.yield %23
} {
  scf.yield %6
}
func.return %22"""


def for_else(n):
    r = 0
    for i in range(n):
        if i == 3:
            break
    else:
        r = 1
    return r


def test_for_else_runs_when_no_break():
    text = body(ir_text(for_else, "i32", device=True))
    assert ops(text).count("scf.while") == 1
    assert text.endswith("%16 = arith.not %5 : i1\n%17 = scf.if %16 : i32 {\n"
                         "  %18 = arith.constant {value = 1} : i32\n  scf.yield %18\n} {\n"
                         "  %19 = arith.constant {value = 0} : i32\n  scf.yield %19\n}\n"
                         "func.return %17")


def static_iter_dynamic_break(a):
    s = 0
    for k in (1, 2, 3):
        if a > k:
            break
        s += k
    return s


def test_dynamic_break_in_static_iteration_guards_later_iterations():
    text = body(ir_text(static_iter_dynamic_break, "i32", device=True))
    assert ops(text).count("scf.if") == 5       # 3 ifs in the body, 2 guarded iterations
    assert "scf.while" not in text and "scf.for" not in text


def loop_var_after(n):
    for i in range(n):
        pass
    return i


def first_assigned_in_loop(n):
    for i in range(n):
        t = i
    return t


def test_variables_first_assigned_in_a_dynamic_loop_are_unbound_after_it():
    with pytest.raises(UnboundVariableError, match=r"`i` has no value here: it is the loop "
                                                   r"variable of the dynamic `for` loop"):
        trace(loop_var_after, "i32", device=True)
    with pytest.raises(UnboundVariableError, match=r"`t` has no value here: it is first assigned "
                                                   r"inside the dynamic `for` loop"):
        trace(first_assigned_in_loop, "i32", device=True)


def loop_var_preassigned(n):
    i = -1
    for i in range(n):
        pass
    return i


def test_preassigned_loop_variable_is_carried():
    _, i = trace(loop_var_preassigned, "i32", device=True)
    assert isinstance(i, Int32)


class Pipe:
    def __init__(self, stages, index, phase):
        self.stages, self.index, self.phase = stages, index, phase

    def __extract_values__(self):
        return [self.index, self.phase]

    def __new_from_values__(self, values):
        return Pipe(self.stages, *values)

    def advance(self):
        index = self.index + 1
        if index == self.stages:
            return Pipe(self.stages, Int32(0), self.phase ^ 1)
        return Pipe(self.stages, index, self.phase)


def carried_protocol(n):
    state = Pipe(3, Int32(0), Int32(0))
    for k in range(n):
        state = state.advance()
    return state.phase


def test_protocol_object_is_carried_leaf_by_leaf():
    from warpstage.frontend.rewrite import rewrite
    Pipe.advance = rewrite(Pipe.advance)
    text = body(ir_text(carried_protocol, "i32", device=True))
    assert "= scf.for %" in text and ": i32, i32 {" in text
    assert text.endswith("func.return %6")


def type_change(n, f):
    acc = n
    for i in range(n):
        acc = f
    return acc


def test_loop_carried_type_change_is_an_error():
    with pytest.raises(BindingTimeError, match=r"cannot merge `acc` after the dynamic `for` loop"
                                               r"[\s\S]*before the loop: a dynamic Int32[\s\S]*"
                                               r"the loop body: a dynamic Float32[\s\S]*"
                                               r"ws.static_range"):
        trace(type_change, "i32", "f32", device=True)


def nested_loops(n, m):
    s = 0
    for i in range(n):
        j = 0
        while j < m:
            if j == i:
                break
            s += j
            j += 1
    return s


def test_nested_loops_carry_through_both():
    text = body(ir_text(nested_loops, "i32", "i32", device=True))
    assert ops(text).count("scf.for") == 1 and ops(text).count("scf.while") == 1


def dynamic_step(n, k):
    s = 0
    for i in range(0, n, k):
        if i > 100:
            break
        s += i
    return s


def test_dynamic_step_with_break_checks_both_directions():
    text = body(ir_text(dynamic_step, "i32", "i32", device=True))
    assert '{pred = "gt"}' in text and '{pred = "lt"}' in text
    assert ops(text).count("scf.while") == 1


def range_float(x):
    for i in range(x):
        pass


def range_zero_step(n):
    for i in range(0, n, 0):
        pass


def test_range_argument_errors():
    with pytest.raises(CompilationError, match="range bounds must be integers"):
        trace(range_float, "f32")
    with pytest.raises(CompilationError, match="step must not be zero"):
        trace(range_zero_step, "i32")


def range_outside_for():
    r = ws.range(4)
    return list(r)


def test_dynamic_range_only_in_for_header():
    with pytest.raises(CompilationError, match="can only be the iterable of a `for` loop"):
        trace(range_outside_for)
