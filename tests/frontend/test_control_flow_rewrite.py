"""The AST rewrite itself: functions in files, methods, nested functions, closures, decorators,
source positions, and the errors for functions it cannot handle."""
import functools
import sys
import traceback

import pytest

from cf_harness import body, ir_text, ops, trace
from warpstage import ir
from warpstage.errors import UnsupportedError
from warpstage.frontend.merge import UnboundVariableError
from warpstage.frontend.rewrite import is_rewritten, rewrite
from warpstage.lang.scalars import Int32

SCALE = 3


def uses_global(a):
    if a > 0:
        a = a * SCALE
    return a


def test_globals_are_read_live():
    global SCALE
    rewrite(uses_global)
    SCALE = 5
    try:
        assert "arith.constant {value = 5}" in ir_text(uses_global, "i32", device=True)
    finally:
        SCALE = 3


def make_closure(scale):
    def inner(a):
        if a > 0:
            r = a * scale
        else:
            r = -a
        return r
    return inner


def test_closures_share_the_original_cells():
    f = make_closure(7)
    assert "arith.constant {value = 7}" in ir_text(f, "i32", device=True)
    f.__closure__[0].cell_contents = 9          # cells are shared, so changes are seen
    assert "arith.constant {value = 9}" in ir_text(f, "i32", device=True)


def make_counter():
    count = 0

    def bump(a):
        nonlocal count
        count += 1
        return a

    return bump, lambda: count


def test_nonlocal_of_the_traced_function_itself_is_an_error():
    bump, get = make_counter()                   # `count` lives outside the traced code
    with pytest.raises(UnsupportedError, match=r"(?s)`nonlocal count` in .*bump.*cannot "
                       r"assign Python variables outside it.*Fix: update count on the host"):
        trace(bump, "i32", device=True)
    assert get() == 0


def nested_nonlocal(a):
    count = a

    def bump():
        nonlocal count                           # a variable of the traced code: fine
        if a > 0:
            count = count + 10

    bump()
    return count


def test_nonlocal_writes_of_a_nested_function_reach_the_traced_one():
    assert "arith.constant {value = 10}" in ir_text(nested_nonlocal, "i32", device=True)


def nested_def(a, b):
    def pick(x, y):
        if x > y:
            return x
        return y
    return pick(a, b) + pick(b, 1)


def test_nested_functions_are_rewritten_too():
    # per call: the `if` and the guard of the code after its `return`
    assert ops(body(ir_text(nested_def, "i32", "i32", device=True))).count("scf.if") == 4


class Base:
    def step(self, a):
        return a + 1


class Derived(Base):
    __limit = 5

    def step(self, a):
        if a > self.__limit:
            a = super().step(a)
        return a

    @staticmethod
    def twice(a):
        return a + a if a > 0 else a

    @classmethod
    def named(cls, a):
        return a if cls.__name__ == "Derived" else -a


def test_methods_with_private_names_and_super():
    text = body(ir_text(Derived().step, "i32", device=True))
    assert text == """\
%1 = arith.constant {value = 5} : i32
%2 = arith.cmp %0, %1 {pred = "gt"} : i1
%3 = scf.if %2 : i32 {
  %4 = arith.constant {value = 1} : i32
  %5 = arith.add %0, %4 : i32
  scf.yield %5
} {
  scf.yield %0
}
func.return %3"""


def test_static_and_class_methods():
    assert "scf.if" in ir_text(Derived.twice, "i32", device=True)
    assert rewrite(Derived.__dict__["twice"]).__func__ is rewrite(Derived.twice)
    assert body(ir_text(Derived.named, "i32", device=True)) == "func.return %0"


def wrapping(f):
    @functools.wraps(f)
    def wrapper(*args):
        return f(*args)
    return wrapper


def registering(f):
    registering.seen.append(f.__name__)
    return f


registering.seen = []


@wrapping
@registering
def decorated(a):
    return 1 if a > 0 else 2


def test_stacked_decorators():
    assert registering.seen == ["decorated"]
    assert "scf.if" in ir_text(decorated, "i32", device=True)   # the wrapped function is rewritten
    assert decorated(1) == 1                                      # the original still works


def documented(a, b=2, *, c=3):
    """Docs."""
    return a + b + c


documented.custom = "kept"


def test_rewritten_function_looks_like_the_original():
    new = rewrite(documented)
    assert rewrite(documented) is new and rewrite(new) is new and is_rewritten(new)
    assert (new.__name__, new.__qualname__, new.__doc__) == (
        "documented", "documented", "Docs.")
    assert new.__wrapped__ is documented and new.custom == "kept"
    assert new.__defaults__ == (2,) and new.__kwdefaults__ == {"c": 3}
    assert new(1) == 6 and new(1, c=10) == 13          # plain Python values: plain Python


def fails_at_line(a):
    x = 1
    if a > 0:
        x = {}["missing"]
    return x


def test_tracebacks_point_at_the_users_file_and_line():
    from warpstage.jit.tracebacks import _user_error
    with pytest.raises(KeyError) as e:
        trace(fails_at_line, "i32", device=True)
    # as a launch shows it: without warpstage's frames (the rewrite's checked reads)
    frames = traceback.extract_tb(_user_error(e.value).__traceback__)
    last = frames[-1]
    assert last.filename == __file__
    assert last.lineno == fails_at_line.__code__.co_firstlineno + 3
    assert last.line == 'x = {}["missing"]'


def located(a):
    if a > 0:
        a = a + 1
    return a


def test_ir_locations_are_user_lines():
    module, _ = trace(located, "i32", device=True)
    first = located.__code__.co_firstlineno
    text = ir.print_module(module, locations=True)
    assert f'arith.cmp %0, %1 {{pred = "gt"}} : i1 loc("{__file__}":{first + 1})' in text
    assert f'arith.add %0, %4 : i32 loc("{__file__}":{first + 2})' in text


def test_function_without_source_is_a_clear_error():
    namespace = {}
    exec("def typed_at_prompt(a):\n    return a\n", namespace)
    with pytest.raises(UnsupportedError) as e:
        rewrite(namespace["typed_at_prompt"])
    msg = str(e.value)
    assert "cannot compile typed_at_prompt: warpstage needs its source code" in msg
    assert "Fix: define typed_at_prompt in a .py file" in msg


def test_lambdas_and_non_functions_are_rejected():
    with pytest.raises(UnsupportedError, match="Fix: write it as a `def` function"):
        rewrite(lambda a: a)
    with pytest.raises(UnsupportedError, match="plain Python functions"):
        rewrite(functools.partial(documented, 1))


def generator(a):
    yield a


def test_generators_are_rejected():
    with pytest.raises(UnsupportedError, match="generator or coroutine"):
        rewrite(generator)


def deleted(a):
    x = a
    del x
    return x


def test_del_unbinds():
    with pytest.raises(UnboundVariableError, match="it was deleted with `del`"):
        trace(deleted, "i32", device=True)


def shadowed(a, b):
    def min(x, y):
        return x
    return min(a, b)


def test_shadowed_builtin_is_called_as_is():
    assert body(ir_text(shadowed, "i32", "i32", device=True)) == "func.return %0"


COUNTER = 0


def global_write(a):
    global COUNTER
    if a > 0:
        COUNTER = 1
    else:
        COUNTER = 1
    return a


def test_global_statement_is_an_error_at_its_line():
    with pytest.raises(UnsupportedError, match=r"(?s)`global COUNTER` in .*global_write: a "
                       r"kernel or @ws.jit function cannot assign Python globals.*line "
                       r"\d+\n.*global COUNTER.*Fix: update COUNTER on the host") as ei:
        trace(global_write, "i32", device=True)
    assert COUNTER == 0
    assert f"line {global_write.__code__.co_firstlineno + 1}\n" in str(ei.value)


def test_rewrite_registers_the_users_code():
    from warpstage.core.source import is_kernel_code
    assert is_kernel_code(rewrite(located).__code__)
    assert not is_kernel_code(located.__code__)
    assert sys.modules[__name__].located is located


def handler(a):
    r = a
    if a > 0:
        try:
            raise KeyError("k")
        except KeyError as e:
            r = a + len(e.args)
    return r


def test_except_handler_inside_a_dynamic_region():
    assert "scf.if" in ir_text(handler, "i32", device=True)


def plain_python(n):
    k = 0
    while k < n:
        k += 1
    assert k == n, "counted"
    for i in range(2):
        k += i
    return k if k > 0 and not k < 0 else -1


def test_rewritten_function_runs_as_python_outside_a_trace():
    new = rewrite(plain_python)
    assert new(3) == plain_python(3) == 4
    with pytest.raises(AssertionError):
        rewrite(fails_static_assert)(1)


def fails_static_assert(a):
    assert a == 0, "a must be 0"
