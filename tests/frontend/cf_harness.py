"""Test harness for control flow: trace a Python function into an IR kernel without the api layer.

``trace(fn, "i32", "f32", ...)`` rewrites ``fn``, calls it on dynamic parameters of those types
inside a TraceContext and returns (module, result); ``ir_text(...)`` the printed IR. ``run_sim``
builds a kernel that stores the function's result through a pointer and runs it in the CPU
simulator, returning the value it stored.
"""
from __future__ import annotations

import re
from types import SimpleNamespace

import numpy as np

from warpstage import ir
from warpstage.frontend.rewrite import rewrite
from warpstage.core.trace import Origin, TraceContext
from warpstage.core.values import flatten
from warpstage.lang.scalars import DTYPES

from example_loader import load_file


def _wrap(t, value, name):
    if isinstance(t, ir.PointerType):
        from warpstage.lang.pointer import Pointer
        return Pointer._wrap(value, Origin(f"parameter {name}"))
    return DTYPES[t]._wrap(value, Origin(f"parameter {name}"))

DEBUG = SimpleNamespace(device_asserts=True)


def _params(fn, types):
    names = fn.__code__.co_varnames[:len(types)]
    return [_type(t) for t in types], names


def _type(t):
    """'i32' -> i32; '*f32' -> a global pointer to f32; ir types unchanged."""
    if isinstance(t, str):
        return ir.PointerType(ir.SCALAR_TYPES[t[1:]]) if t.startswith("*") else ir.SCALAR_TYPES[t]
    return t


def trace(fn, *types, options=None, device=False, store=None):
    """(module, result): ``fn`` traced as a kernel (or, with ``device=True``, a device function
    returning its result's leaves). ``store``: an ir type; adds a last pointer parameter and
    stores the result through it."""
    tys, names = _params(fn, types)
    params = list(tys) + ([ir.PointerType(store)] if store is not None else [])
    module = ir.Module()
    f = module.add(ir.Function("k", params, is_kernel=not device))
    new = rewrite(fn)
    with TraceContext(module, options) as ctx:
        ctx.builder.block = f.body.block
        args = [_wrap(t, a, n) for t, a, n in zip(tys, f.args, names)]
        result = new(*args)
        b = ctx.builder
        b.loc = None
        if store is not None:
            value = result
            if not hasattr(value, "value"):
                value = DTYPES[store](value)
            elif value.value.type != store:
                value = DTYPES[store](value)
            b.store(f.args[-1], value.value)
            b.return_()
        elif device:
            _, leaves = flatten(result)
            f.result_types = [lf.value.type for lf in leaves]
            b.return_([lf.value for lf in leaves])
        else:
            b.return_()
    ir.verify(module)
    return module, result


def ir_text(fn, *types, **kw) -> str:
    module, _ = trace(fn, *types, **kw)
    return ir.print_module(module)


def body(text: str) -> str:
    """The ops of the printed kernel, dedented one level, without the header and closing brace."""
    lines = text.strip().splitlines()[1:-1]
    return "\n".join(line[2:] for line in lines)


def ops(text: str) -> list:
    """Op names in the printed IR, in order."""
    return re.findall(r"(?:= )?\b([a-z]+\.[a-z_]+)\b", text)


def sim_available() -> bool:
    try:
        from warpstage import sim
    except Exception:
        return False
    return hasattr(sim, "run") and hasattr(sim, "Memory")


def run_sim(fn, args, types, result_type="i32", module=None):
    """Run ``fn(*args)`` traced as a one-thread kernel in the simulator; returns the stored
    result as a Python number. An ``args`` entry that is a numpy array is passed by pointer (its
    type in ``types`` is '*f32' ...). ``module``: a module already traced with ``trace(...,
    store=...)``. The module goes through the pass pipeline first, as a launch's does (the
    simulator runs primitives only: ``//`` and ``%`` are legalized there)."""
    from warpstage import sim
    from warpstage.passes.pipeline import run_passes
    rt = ir.SCALAR_TYPES[result_type]
    if module is None:
        module, _ = trace(fn, *types, store=rt)
    run_passes(module)
    out = np.zeros(1, dtype=np.int32 if rt == ir.i32 else np.float32)
    mem = sim.Memory()
    values = [mem.register(a) if isinstance(a, np.ndarray) else a for a in args]
    sim.run(module, "k", (1,), (1,), values + [mem.register(out)], mem, echo=False)
    return out[0].item()


def arith_inputs(src: str, inputs) -> list:
    """Inputs for a program: in arith mode (cf_programs.py) ``a`` is spread over all of Int32
    (so arithmetic overflows and wraps); other modes keep small values."""
    if "# mode: arith" not in src:
        return list(inputs)
    return [((a * 104729 * 20479 + 2 ** 31) % 2 ** 32 - 2 ** 31, b) for a, b in inputs]


def python_results(mod, inputs) -> dict:
    """{(a, b): mod.prog(a, b)} in plain Python, leaving out inputs on which Python reads an
    unbound temporary (not comparable)."""
    expected = {}
    for a, b in inputs:
        try:
            expected[a, b] = mod.prog(a, b)
        except UnboundLocalError:
            pass
    return expected


def differential_check(path, src: str, inputs, run_traced) -> None:
    """Write program ``src`` to ``path``, run ``prog(a, b)`` for each input pair in plain Python,
    trace it, and assert ``run_traced(module, a, b, floats)`` agrees. Inputs on which Python reads
    an unbound temporary, and programs warpstage rejects for one, are skipped (hypothesis
    ``assume``)."""
    from hypothesis import assume
    from warpstage.errors import UnboundVariableError
    path.write_text(src)
    mod = load_file(path, path.stem)
    floats = "# mode: float" in src
    expected = python_results(mod, inputs)
    assume(expected)
    try:
        module, _ = trace(mod.prog, "i32", "i32", store=ir.f32 if floats else ir.i32)
    except UnboundVariableError:
        assume(False)              # stricter than Python: a temporary unbound on some path
    for (a, b), want in expected.items():
        got = run_traced(module, mod.prog, a, b, floats)
        assert got == want, f"prog({a}, {b}) differs: {got} != {want}\n{src}"
