"""if/elif/else, ternaries, and/or/not and chained comparisons on dynamic values: IR goldens and
the merge rules of DESIGN §2."""
import pytest

from cf_harness import body, ir_text, ops, trace
from warpstage.errors import BindingTimeError, WarpstageError
from warpstage.frontend.merge import UnboundVariableError
from warpstage.lang.scalars import Float32, Int32


def if_else(a, b):
    if a > b:
        x = a
    else:
        x = b
    return x


def test_if_else_merges_assigned_variable():
    assert body(ir_text(if_else, "i32", "i32", device=True)) == """\
%2 = arith.cmp %0, %1 {pred = "gt"} : i1
%3 = scf.if %2 : i32 {
  scf.yield %0
} {
  scf.yield %1
}
func.return %3"""


def elif_chain(a):
    if a < 0:
        r = -1
    elif a == 0:
        r = 0
    else:
        r = 1
    return r


def test_elif_nests_and_promotes_static_numbers():
    assert body(ir_text(elif_chain, "i32", device=True)) == """\
%1 = arith.constant {value = 0} : i32
%2 = arith.cmp %0, %1 {pred = "lt"} : i1
%3 = scf.if %2 : i32 {
  %4 = arith.constant {value = -1} : i32
  scf.yield %4
} {
  %5 = arith.constant {value = 0} : i32
  %6 = arith.cmp %0, %5 {pred = "eq"} : i1
  %7 = scf.if %6 : i32 {
    %8 = arith.constant {value = 0} : i32
    scf.yield %8
  } {
    %9 = arith.constant {value = 1} : i32
    scf.yield %9
  }
  scf.yield %7
}
func.return %3"""


def static_if(a):
    if 2 > 1:
        r = a + 1
    else:
        r = a - 1
    return r


def test_static_condition_is_plain_python():
    assert body(ir_text(static_if, "i32", device=True)) == """\
%1 = arith.constant {value = 1} : i32
%2 = arith.add %0, %1 : i32
func.return %2"""


def one_branch_only(a):
    y = 5
    if a > 0:
        y = 7
        t = 1
    return y


def test_if_without_else_keeps_old_value_and_drops_one_path_variable():
    text = body(ir_text(one_branch_only, "i32", device=True))
    assert text == """\
%1 = arith.constant {value = 0} : i32
%2 = arith.cmp %0, %1 {pred = "gt"} : i1
%3 = scf.if %2 : i32 {
  %4 = arith.constant {value = 7} : i32
  scf.yield %4
} {
  %5 = arith.constant {value = 5} : i32
  scf.yield %5
}
func.return %3"""


def both_assign(a, f):
    if a > 0:
        v = 7
        w = 1.5
        s = "same"
    else:
        v = a
        w = f
        s = "same"
    return v, w, s


def float_into_int(a):
    v = a
    if a > 0:
        v = 1.5
    return v


def test_variable_first_assigned_in_both_branches_is_available_and_equal_statics_stay():
    _, (v, w, s) = trace(both_assign, "i32", "f32", device=True)
    assert s == "same"                   # equal static values stay static
    assert isinstance(v, Int32)          # 7 and a dynamic Int32 -> Int32
    assert isinstance(w, Float32)        # 1.5 and a dynamic Float32 -> Float32
    with pytest.raises(BindingTimeError, match=r"the static value 1.5 is not exact in the "
                                               r"dynamic type Int32"):
        trace(float_into_int, "i32", device=True)


def promote(a):
    x = 0
    if a > 0:
        x = 1
    return x


def test_promotion_origin_says_where_and_why():
    _, x = trace(promote, "i32", device=True)
    assert isinstance(x, Int32)
    text = str(x.origin)
    assert text.startswith("promoted to dynamic: `x` is 1 on one path and 0 on the other, "
                           "merged after the if at ")
    assert text.endswith(f"test_control_flow_if.py:{promote.__code__.co_firstlineno + 2}")


def unbound_use(a):
    if a > 0:
        y = 1
    z = y + 1
    return z


def test_variable_assigned_on_one_path_is_unbound_afterwards():
    with pytest.raises(UnboundVariableError) as e:
        trace(unbound_use, "i32", device=True)
    msg = str(e.value)
    line = unbound_use.__code__.co_firstlineno
    assert "variable `y` has no value here" in msg
    assert f"assigned only in the then-branch (line {line + 2})" in msg
    assert "no value when the condition is false" in msg
    assert f"test_control_flow_if.py:{line + 1}" in msg          # the if
    assert f'line {line + 3}\n        z = y + 1\n        ^' in msg   # the use
    assert "Fix: assign `y`" in msg
    assert isinstance(e.value, (WarpstageError, UnboundLocalError, NameError))


def mismatch(a):
    t = (1, 2)
    if a > 0:
        t = (1, 2, 3)
    return a


def test_different_structure_is_a_binding_time_error():
    with pytest.raises(BindingTimeError) as e:
        trace(mismatch, "i32", device=True)
    msg = str(e.value)
    line = mismatch.__code__.co_firstlineno
    assert msg.startswith("cannot merge `t` after the dynamic `if` at ")
    assert "tuple of 3 vs tuple of 2" in msg
    assert "the then-branch: (1, 2, 3) (static tuple) (assigned at " in msg
    assert f"test_control_flow_if.py:{line + 3})" in msg
    assert "the else-branch: (1, 2) (static tuple) (its value from before)" in msg
    assert f'line {line + 2}\n        if a > 0:\n        ^' in msg
    assert "Fix: give `t` the same structure" in msg
    assert e.value.where.endswith(f":{line + 2}")


def type_mismatch(a, x):
    v = a
    if a > 0:
        v = x
    return v


def test_different_dynamic_types_is_an_error_naming_both():
    with pytest.raises(BindingTimeError, match=r"different types on the paths \(Float32 and "
                                               r"Int32\)[\s\S]*Fix: convert explicitly"):
        trace(type_mismatch, "i32", "f32", device=True)


def static_mismatch(a):
    mode = "fast"
    if a > 0:
        mode = "slow"
    return a


def test_different_static_values_is_an_error():
    with pytest.raises(BindingTimeError, match=r"`mode`[\s\S]*'slow' \(static str\)[\s\S]*"
                                               r"'fast' \(static str\)[\s\S]*ws.static"):
        trace(static_mismatch, "i32", device=True)


class State:
    """A protocol object: static ``stages``, dynamic ``index``."""

    def __init__(self, stages, index):
        self.stages = stages
        self.index = index

    def __extract_values__(self):
        return [self.index]

    def __new_from_values__(self, values):
        return State(self.stages, values[0])

    def __static_key__(self):
        return ("State", self.stages)


def protocol_merge(a):
    s = State(4, a)
    if a > 0:
        s = State(4, a + 1)
    return s.index


def protocol_mismatch(a):
    s = State(4, a)
    if a > 0:
        s = State(2, a)
    return a


def test_protocol_objects_merge_leaf_by_leaf():
    text = ir_text(protocol_merge, "i32", device=True)
    assert ops(body(text)).count("scf.if") == 1
    assert "%3 = scf.if %2 : i32" in text
    with pytest.raises(BindingTimeError, match=r"structure differs between the paths \(State with "
                                               r"1 values, static key \('State', 2\) vs"):
        trace(protocol_mismatch, "i32", device=True)


def ternary(a, b):
    return a if a > b else b


def test_ternary_evaluates_only_the_taken_side_in_regions():
    assert body(ir_text(ternary, "i32", "i32", device=True)) == """\
%2 = arith.cmp %0, %1 {pred = "gt"} : i1
%3 = scf.if %2 : i32 {
  scf.yield %0
} {
  scf.yield %1
}
func.return %3"""


def and_or_not(a, b):
    return a > 0 and b > 0 or not a


def test_and_or_not_short_circuit():
    assert body(ir_text(and_or_not, "i32", "i32", device=True)) == """\
%2 = arith.constant {value = 0} : i32
%3 = arith.cmp %0, %2 {pred = "gt"} : i1
%4 = scf.if %3 : i1 {
  %5 = arith.constant {value = 0} : i32
  %6 = arith.cmp %1, %5 {pred = "gt"} : i1
  scf.yield %6
} {
  scf.yield %3
}
%7 = scf.if %4 : i1 {
  scf.yield %4
} {
  %8 = arith.constant {value = 0} : i32
  %9 = arith.cmp %0, %8 {pred = "ne"} : i1
  %10 = arith.not %9 : i1
  scf.yield %10
}
func.return %7"""


def static_short_circuit(a):
    calls = []
    r = False and calls.append(1)
    s = True or calls.append(2)
    t = 0 or a
    return calls, r, s, t


def test_static_and_or_keep_python_semantics():
    _, (calls, r, s, t) = trace(static_short_circuit, "i32", device=True)
    assert calls == [] and r is False and s is True and isinstance(t, Int32)


def chained(a, b, c):
    return a < b <= c


def test_chained_comparison_evaluates_middle_once_and_short_circuits():
    assert body(ir_text(chained, "i32", "i32", "i32", device=True)) == """\
%3 = arith.cmp %0, %1 {pred = "lt"} : i1
%4 = scf.if %3 : i1 {
  %5 = arith.cmp %1, %2 {pred = "le"} : i1
  scf.yield %5
} {
  scf.yield %3
}
func.return %4"""


def value_and(a, b):
    return a and b


def test_and_returns_operand_values():
    text = body(ir_text(value_and, "i32", "i32", device=True))
    assert text.startswith('%2 = arith.constant {value = 0} : i32\n'
                           '%3 = arith.cmp %0, %2 {pred = "ne"} : i1\n'
                           '%4 = scf.if %3 : i32 {\n  scf.yield %1\n} {\n  scf.yield %0\n}')


def nested(a, b):
    x = 0
    y = 0
    if a > 0:
        if b > 0:
            x = 1
        else:
            y = 2
    return x + y


def test_nested_ifs_merge_outward():
    text = body(ir_text(nested, "i32", "i32", device=True))
    assert ops(text).count("scf.if") == 2
    assert "%4, %5 = scf.if %3 : i32, i32 {" in text


def side_effect(a):
    from warpstage.lang.control import printf
    if a > 0:
        printf("pos\n")


def test_if_with_only_side_effects_has_no_results():
    assert body(ir_text(side_effect, "i32")) == """\
%1 = arith.constant {value = 0} : i32
%2 = arith.cmp %0, %1 {pred = "gt"} : i1
scf.if %2 {
  gpu.printf {format = "pos\\n"}
  scf.yield
} {
  scf.yield
}
func.return"""


class Config:
    def __init__(self, tile):
        self.tile = tile


def fresh_config(a):
    cfg = Config(64)
    if a > 0:
        cfg = Config(64)            # a new object, but the same static value
    return cfg.tile


def test_equal_static_objects_by_static_key_stay_static():
    _, tile = trace(fresh_config, "i32", device=True)
    assert tile == 64


def tuple_return(a, b):
    if a > b:
        return a, 1
    return b, 2


def test_device_function_returns_merge_leaf_by_leaf():
    _, (v, k) = trace(tuple_return, "i32", "i32", device=True)
    assert isinstance(v, Int32) and isinstance(k, Int32)


class Phase:
    def __init__(self, index, phase):
        self.index, self.phase = index, phase

    def __extract_values__(self):
        return [self.index, self.phase]

    def __new_from_values__(self, values):
        return Phase(*values)


def in_place(a):
    s = Phase(a, a)
    alias = s
    if a > 0:
        s.phase ^= 1
        s.index = 0                  # a static 0 merges with the dynamic index
    return alias


def test_objects_changed_in_place_are_merged_into_the_same_object():
    _, s = trace(in_place, "i32", device=True)
    assert isinstance(s, Phase) and isinstance(s.index, Int32) and isinstance(s.phase, Int32)
    text = body(ir_text(in_place, "i32", device=True))
    assert "%3, %4 = scf.if %2 : i32, i32 {" in text


class Tagged:
    def __init__(self, mode, value):
        self.mode, self.value = mode, value

    def __extract_values__(self):
        return [self.value]

    def __new_from_values__(self, values):
        return Tagged(self.mode, values[0])

    def __static_key__(self):
        return ("Tagged", self.mode)


def static_part_changed(a):
    t = Tagged("fast", a)
    if a > 0:
        t.mode = "slow"             # a static part changed in place on one path only
    return a


def test_static_part_changed_in_place_on_one_path_is_an_error():
    with pytest.raises(BindingTimeError, match=r"cannot merge the contents of t after the dynamic "
                                               r"`if`[\s\S]*static key \('Tagged', 'slow'\)"):
        trace(static_part_changed, "i32", device=True)
