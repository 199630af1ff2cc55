"""Random kernel programs for differential testing of control flow and arithmetic (Python vs
warpstage + sim).

``programs()`` is a hypothesis strategy of source texts defining ``prog(a, b)``, in one of three
modes. ``int``: small ints (values stay below ~2000: every int assignment is reduced ``% 251``).
``float``: also one float ``fv`` that only ever holds multiples of 0.5 (exact in f32).
``arith``: Int32 arithmetic that overflows and wraps (constants up to the type's limits, ``*``,
``<<``, ``>>``), ``//`` and ``%`` with negative operands and divisors, and a Float32 ``fv`` with
rounding (``/``, products) and conversions both ways (``to_i32`` truncates and saturates like
``cvt.rzi.sat``). The program defines ``w32``/``f32``/``to_i32``/``to_f32``, which give plain
Python the GPU's semantics on Python numbers and are the identity / a conversion on dynamic values,
so the same text is the reference and the kernel. ``random_program(rng)`` draws the same
programs from a ``random.Random`` (for the long batch run, benchmarks/diff_programs.py).
It nests if/elif/else, ternaries, and/or/not, chained comparisons, min/max, dynamic ``for`` over
``range`` (static, dynamic and negative steps), static ``for`` over tuples and
``ws.static_range``, ``while`` loops with dynamic and static conditions, ``break``,
``continue`` and ``return``. Temporaries ``tN`` are first assigned anywhere and may be read later
on paths where Python finds them unbound: the test skips such inputs (and programs warpstage
rejects as using an unbound variable), and compares all others.
"""
from __future__ import annotations

from hypothesis import strategies as st

INTS = ("x", "y", "z")
M = 251


ARITH_PRELUDE = '''
import numpy as np
from warpstage.lang.scalars import Float32, Int32


def w32(v):
    return (v + 2147483648) % 4294967296 - 2147483648 if type(v) is int else v


def f32(v):
    if type(v) is not float:
        return v
    with np.errstate(over="ignore"):        # overflow gives inf, as on the GPU
        return float(np.float32(v))


def to_i32(v):
    if type(v) is not float:
        return Int32(v)
    if v != v:
        return 0
    return max(-2147483648, min(2147483647, int(v))) if abs(v) != float("inf") else (
        2147483647 if v > 0 else -2147483648)


def to_f32(v):
    return f32(float(v)) if type(v) is int else Float32(v)
'''
BIG = ("2147483647", "-2147483648", "1000003", "65536", "-13", "7", "-1")
DIVISORS = ("2", "3", "-3", "7", "-7", "16", "-65536")
F_CONSTS = ("0.5", "-2.5", "1.5", "0.125", "1024.0", "3.0")
F_DIVISORS = ("3.0", "-0.5", "7.0")


class _Draw:
    """``draw(st.integers(lo, hi))`` backed by a ``random.Random`` (random_program)."""

    def __init__(self, rng):
        self.rng = rng

    def __call__(self, strategy):
        lo, hi = strategy.wrapped_strategy.start, strategy.wrapped_strategy.end
        return self.rng.randint(lo, hi)


class _Gen:
    def __init__(self, draw, floats: bool, arith: bool = False):
        self.draw = draw
        self.floats = floats
        self.arith = arith
        self.counter = 0
        self.lines: list = []
        self.temps: list = []     # variables first assigned somewhere (maybe on one path only)

    def pick(self, seq):
        return seq[self.draw(st.integers(0, len(seq) - 1))]

    def chance(self, p_percent: int) -> bool:
        return self.draw(st.integers(0, 99)) < p_percent

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    # -- expressions -------------------------------------------------------------------------
    def atom(self, scope) -> str:
        kind = self.draw(st.integers(0, 9))
        if kind < 4:
            return self.pick(INTS)
        if kind < 6:
            return self.pick(("a", "b"))
        if kind < 7 and scope:
            return self.pick(scope)
        if kind < 8 and self.temps:
            return self.pick(self.temps)
        return str(self.draw(st.integers(-3, 7)))

    def expr(self, scope, depth=0) -> str:
        kind = self.draw(st.integers(0, 9 if depth < 2 else 2))
        if kind <= 2:
            return self.atom(scope)
        if kind <= 4:
            op = self.pick(("+", "-", "^", "&", "+"))
            return f"({self.expr(scope, depth + 1)} {op} {self.expr(scope, depth + 1)})"
        if kind == 5:
            op, k = self.pick(("//", "%")), self.draw(st.integers(1, 5))
            return f"({self.expr(scope, depth + 1)} {op} {k})"
        if kind == 6:
            return (f"({self.expr(scope, depth + 1)} if {self.cond(scope, depth + 1)} "
                    f"else {self.expr(scope, depth + 1)})")
        if kind == 7:
            return f"{self.pick(('min', 'max'))}({self.expr(scope, depth + 1)}, {self.atom(scope)})"
        return f"({self.atom(scope)} {self.pick(('and', 'or'))} {self.atom(scope)})"

    def iexpr(self, scope, depth=0) -> str:
        """arith mode: an Int32 expression, every operation wrapped like the GPU's."""
        kind = self.draw(st.integers(0, 9 if depth < 2 else 1))
        if kind == 0:
            return self.atom(scope)
        if kind == 1:
            return self.pick(BIG)
        a = self.iexpr(scope, depth + 1)
        if kind <= 4:
            op = self.pick(("+", "-", "*", "*"))
            return f"w32({a} {op} {self.iexpr(scope, depth + 1)})"
        if kind <= 6:
            return f"({a} {self.pick(('//', '%'))} {self.pick(DIVISORS)})"
        if kind == 7:
            return f"w32({a} << {self.draw(st.integers(0, 31))})"
        if kind == 8:
            return f"({a} >> {self.draw(st.integers(0, 31))})"
        return f"to_i32({self.fexpr(scope, depth + 1)})"

    def fexpr(self, scope, depth=0) -> str:
        """arith mode: a Float32 expression, rounded to f32 after every operation."""
        kind = self.draw(st.integers(0, 8 if depth < 2 else 1))
        if kind == 0:
            return "fv"
        if kind == 1:
            return self.pick(F_CONSTS)
        a = self.fexpr(scope, depth + 1)
        if kind <= 4:
            return f"f32({a} {self.pick(('+', '-', '*'))} {self.fexpr(scope, depth + 1)})"
        if kind == 5:
            return f"f32({a} / {self.pick(F_DIVISORS)})"
        if kind == 6:
            return f"f32({a} {self.pick(('//', '%'))} {self.pick(('0.5', '2.0', '-4.0'))})"
        return f"to_f32({self.iexpr(scope, depth + 1)})"

    def cond(self, scope, depth=0) -> str:
        kind = self.draw(st.integers(0, 7 if depth < 2 else 2))
        cmp = self.pick(("<", "<=", ">", ">=", "==", "!="))
        if kind <= 2:
            return f"{self.atom(scope)} {cmp} {self.atom(scope)}"
        if kind == 3:
            op = self.pick(("and", "or"))
            return f"({self.cond(scope, depth + 1)} {op} {self.cond(scope, depth + 1)})"
        if kind == 4:
            return f"not {self.atom(scope)}"
        if kind == 5:
            return f"{self.atom(scope)} < {self.atom(scope)} <= {self.atom(scope)}"
        if kind == 6 and self.floats:
            return f"fv {cmp} {self.atom(scope)}"
        return f"{self.atom(scope)} % 2 == {self.draw(st.integers(0, 1))}"

    # -- statements --------------------------------------------------------------------------
    def emit(self, indent: int, text: str):
        self.lines.append("    " * indent + text)

    def block(self, indent, scope, depth, in_loop, n=None):
        n = n if n is not None else self.draw(st.integers(1, 3))
        for _ in range(n):
            self.stmt(indent, scope, depth, in_loop)

    def stmt(self, indent, scope, depth, in_loop):
        top = 11 if depth < 3 else 4
        kind = self.draw(st.integers(0, top))
        if self.arith and kind <= 3:
            if kind <= 1:
                self.emit(indent, f"{self.pick(INTS)} = {self.iexpr(scope)}")
            else:
                self.emit(indent, f"fv = {self.fexpr(scope)}")
            return
        if kind <= 1:
            v = self.pick(INTS)
            self.emit(indent, f"{v} = ({self.expr(scope)}) % {M}")
        elif kind == 2:
            t = self.pick(self.temps) if self.temps and self.chance(50) else self.fresh("t")
            self.emit(indent, f"{t} = ({self.expr(scope)}) % {M}")
            if t not in self.temps:
                self.temps.append(t)
        elif kind == 3:
            if self.floats:
                self.emit(indent, self.pick((f"fv = fv + {self.atom(scope)}", "fv = fv - 0.5",
                                             f"fv = min(fv, {self.atom(scope)} + 0.5)")))
            else:
                self.emit(indent, f"{self.pick(INTS)} = {self.pick(INTS)}")
        elif kind == 4:
            if in_loop and self.chance(50):
                self.emit(indent, f"if {self.cond(scope)}:")
                self.emit(indent + 1, self.pick(("break", "continue")))
            elif self.chance(40):
                self.emit(indent, f"if {self.cond(scope)}:")
                self.emit(indent + 1, f"return {self.result(scope)}")
            else:
                v = self.pick(INTS)
                if self.arith:          # the GPU's sum wraps before the %: so must Python's
                    self.emit(indent, f"{v} = w32({v} + {self.atom(scope)}) % {M}")
                else:
                    self.emit(indent, f"{v} = ({v} + {self.atom(scope)}) % {M}")
        elif kind <= 7:
            self.emit(indent, f"if {self.cond(scope)}:")
            self.block(indent + 1, scope, depth + 1, in_loop)
            if self.chance(40):
                self.emit(indent, f"elif {self.cond(scope)}:")
                self.block(indent + 1, scope, depth + 1, in_loop)
            if self.chance(60):
                self.emit(indent, "else:")
                self.block(indent + 1, scope, depth + 1, in_loop)
        elif kind <= 9:
            self.for_loop(indent, scope, depth)
        else:
            self.while_loop(indent, scope, depth)

    def for_loop(self, indent, scope, depth):
        i = self.fresh("i")
        header = self.pick((
            f"range({self.draw(st.integers(0, 3))})",
            "range(a % 4)",
            "range(b % 3, 4)",
            "range(3, a % 4 - 2, -1)",
            "range(0, 5, a % 2 + 1)",
            "range(4, -1, -(b % 2 + 1))",
            "(1, 2, 3)",
            "ws.static_range(2)",
        ))
        self.emit(indent, f"for {i} in {header}:")
        self.block(indent + 1, scope + (i,), depth + 1, True)

    def while_loop(self, indent, scope, depth):
        w = self.fresh("w")
        self.emit(indent, f"{w} = 0")
        bound = self.pick(("b % 3 + 1", "2", "a % 4"))
        self.emit(indent, f"while {w} < {bound}:")
        self.emit(indent + 1, f"{w} = {w} + 1")
        self.block(indent + 1, scope + (w,), depth + 1, True)

    def result(self, scope) -> str:
        if self.arith:
            return f"w32({self.iexpr(scope)} + to_i32(fv))"
        if self.floats:
            return f"fv + {self.atom(scope)}"
        return f"({self.expr(scope)}) % {M}"


MODES = ("int", "float", "arith")


def _program(draw, mode: str) -> str:
    g = _Gen(draw, mode == "float", mode == "arith")
    g.emit(0, f"# mode: {mode}")
    g.emit(0, "import warpstage.lang.control as ws")
    if mode == "arith":
        g.lines.extend(ARITH_PRELUDE.splitlines())
    g.emit(0, "")
    g.emit(0, "def prog(a, b):")
    g.emit(1, "x = 0")
    g.emit(1, "y = 1")
    g.emit(1, "z = b")
    if mode == "float":
        g.emit(1, "fv = 0.5")
    elif mode == "arith":
        g.emit(1, "fv = 1.5")
    g.block(1, (), 0, False, n=draw(st.integers(1, 4)))
    g.emit(1, f"return {g.result(())}")
    return "\n".join(g.lines) + "\n"


@st.composite
def programs(draw) -> str:
    return _program(draw, MODES[draw(st.integers(0, 2))])


def random_program(rng) -> str:
    """One program drawn from ``rng`` (a random.Random), as ``programs()`` draws them."""
    draw = _Draw(rng)
    return _program(draw, MODES[draw(st.integers(0, 2))])
