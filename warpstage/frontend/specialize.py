"""Specialization: trace a kernel for one set of parameter Specs, and instantiate ``@ws.jit``
device functions per key of their static arguments (like C++ template instantiation).

Device functions become separate IR functions called with ``func.call``; their dynamic arguments
and results travel as the leaves of the value protocol, their static parts stay in the key.
"""
from __future__ import annotations

import re
from typing import Any

from .. import ir
from ..errors import CompilationError
from .contents import assign_in_place
from ..core.arguments import argument_mismatch, signature_text
from ..core.static import StaticValue
from ..core.static_key import UnkeyableError, static_key
from ..core.source import format_location
from ..core.trace import TraceContext, current
from ..core.values import flatten, skeleton_key, unflatten

__all__ = ["trace_kernel", "call_device_function", "get_rewritten"]


def get_rewritten(fn):
    """The control-flow-rewritten version of ``fn`` (see frontend/rewrite.py)."""
    from .rewrite import rewrite
    return rewrite(fn)


def _symbol(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", name)


def trace_kernel(py_fn, name: str, specs: list, param_names: list, options, attrs: dict,
                 kwonly: tuple = ()):
    """Trace ``py_fn`` on traced arguments built from ``specs``; returns (module, abi, reached,
    facts): abi is the list of (slot name, ir type) of the kernel's parameters, reached the Python
    functions traced, facts the attribute reads recorded (frontend/facts.py). ``kwonly``: the
    names of keyword-only parameters (the last ones of ``param_names``), passed by keyword."""
    abi = []
    for spec, pname in zip(specs, param_names):
        abi.extend(spec.abi(pname))
    module = ir.Module()
    fn = ir.Function(_symbol(name), [t for _, t in abi], is_kernel=True,
                     attrs=dict(attrs, param_names=[n for n, _ in abi]))
    module.add(fn)
    rewritten = get_rewritten(py_fn)
    with TraceContext(module, options, attrs.get("maxntid")) as ctx:
        ctx.reached.append(py_fn)
        ctx.builder.block = fn.body.block
        it = iter(fn.args)
        args = [spec.make(it, pname) for spec, pname in zip(specs, param_names)]
        n = len(param_names) - len(kwonly)
        result = rewritten(*args[:n], **dict(zip(param_names[n:], args[n:])))
        if result is not None:
            loc = ctx.last_return
            raise CompilationError(
                f"kernel {name} returns a value (a {type(result).__name__})\n"
                f"{format_location(loc)}\nExpected: a kernel returns nothing; its results go to "
                "memory.\nFix: store the value into an output tensor (out[i] = v) and end with a "
                "bare `return` (or none); a @ws.jit device function may return values.",
                where=str(loc) if loc else None)
        ctx.builder.loc = None
        ctx.builder.return_()
    return module, abi, ctx.reached, ctx.facts


class _DeviceSpecialization:
    __slots__ = ("function", "ret_skel", "ret_templates", "tracing", "mutated")

    def __init__(self, function):
        self.function = function
        self.mutated = []           # (argument index, skeleton, leaf templates) changed in place
        self.ret_skel = None
        self.ret_templates = []
        self.tracing = True


def call_device_function(jit_fn, args: tuple, kwargs: dict) -> Any:
    """Call a @ws.jit function from traced code: specialize on the static parts of the arguments
    and emit a func.call passing the dynamic leaves."""
    ctx = current(f"calling @ws.jit function {jit_fn.__name__}")
    try:
        bound = jit_fn.signature.bind(*args, **kwargs)
    except TypeError:
        sig = jit_fn.signature
        params = list(sig.parameters.values())
        e = argument_mismatch(jit_fn.__qualname__, [p.name for p in params], args, kwargs,
                              signature_text(sig), {p.name for p in params
                                                    if p.default is not p.empty},
                              what="@ws.jit function", call=jit_fn.__qualname__)
        raise e from None
    bound.apply_defaults()
    values = list(bound.arguments.values())
    for i, v in enumerate(values):                       # ws.Static(v) at the call (rule 1)
        if type(v) is StaticValue:
            values[i] = _static_argument(jit_fn, list(bound.arguments)[i], None, v.value)
    for i, name, annotation in jit_fn.static_params:     # rule 1 holds at a @ws.jit call too
        values[i] = _static_argument(jit_fn, name, annotation, values[i])
    skels, leaves = [], []
    for v in values:
        s, lv = flatten(v)
        skels.append(s)
        leaves.extend(lv)
    try:
        key = (jit_fn.__ws_static_key__(), tuple(skeleton_key(s, static_key) for s in skels))
    except UnkeyableError as e:
        raise CompilationError(f"calling {jit_fn.__qualname__}: a static argument cannot be keyed "
                               f"({e}); give its class a __static_key__() method") from None
    spec = ctx.device_functions.get(key)
    if spec is None and ctx.device_depth >= MAX_DEVICE_DEPTH:
        raise CompilationError(
            f"@ws.jit function {jit_fn.__qualname__} is nested {ctx.device_depth} calls deep "
            f"while compiling (static arguments now {_short_args(values)})\n"
            f"{format_location(call_loc_now())}\nEach call with new static arguments is a new "
            "specialization, so a recursion whose static arguments never repeat must reach a "
            "base case while compiling.\nFix: add a base case on a static value (`if n == 0: "
            "return ...`), or write the recursion as a loop.")
    b = ctx.builder
    call_loc = b.loc
    if spec is None:
        name = _symbol(f"{jit_fn.__qualname__}_{len(ctx.device_functions)}")
        # device functions inline by default: a role's code must sit in the entry for ptxas to
        # give it its own setmaxnreg budget, and calls cost registers and a stack frame
        fn = ir.Function(name, [lf.value.type for lf in leaves],
                         attrs={"inline": getattr(jit_fn, "inline", "always")})
        ctx.module.add(fn)
        spec = _DeviceSpecialization(fn)
        ctx.reached.append(jit_fn.fn)
        ctx.device_functions[key] = spec
        saved_block = b.block
        b.block = fn.body.block
        ctx.device_depth += 1
        try:
            new_leaves = [lf._rewrap(a) for lf, a in zip(leaves, fn.args)]
            it = iter(new_leaves)
            call_args = [unflatten(s, [next(it) for _ in range(s.num_leaves)]) for s in skels]
            pos, kw = _as_call(jit_fn.signature, call_args)
            result = get_rewritten(jit_fn.fn)(*pos, **kw)
            ret_skel, ret_leaves = flatten(result)
            spec.ret_skel = ret_skel
            spec.ret_templates = ret_leaves
            # arguments the body changed in place come back as extra results (see _changed)
            out_leaves = list(ret_leaves)
            for i, (before, arg) in enumerate(zip(skels, call_args)):
                after = _changed(before, arg, fn.args)
                if after is not None:
                    spec.mutated.append((i, after[0], after[1]))
                    out_leaves.extend(after[1])
            fn.result_types = [lf.value.type for lf in out_leaves]
            b.loc = None
            b.return_([lf.value for lf in out_leaves])
        finally:
            ctx.device_depth -= 1
            b.block = saved_block
            b.loc = call_loc
        spec.tracing = False
    elif spec.tracing:
        raise CompilationError(f"@ws.jit function {jit_fn.__qualname__} calls itself with the same "
                               "static arguments; recursion is not supported on the GPU (a "
                               "dynamic base case cannot end the unrolling while compiling).\n"
                               "Fix: write the recursion as a loop (for i in range(n): ...), or "
                               "make the argument that ends it static (ws.Static[int]) so each "
                               "call is a new specialization down to the base case.")
    results = b.call(spec.function, [lf.value for lf in leaves])
    n = len(spec.ret_templates)
    for i, skel, templates in spec.mutated:       # write the callee's changes back in place
        part = results[n:n + len(templates)]
        n += len(templates)
        assign_in_place(values[i], unflatten(skel, [t._rewrap(r) for t, r in zip(templates, part)]))
    return unflatten(spec.ret_skel, [t._rewrap(r) for t, r in
                                     zip(spec.ret_templates, results[:len(spec.ret_templates)])])


MAX_DEVICE_DEPTH = 64     # nested @ws.jit specializations being traced at once


def _static_argument(jit_fn, name: str, annotation, value):
    """``value`` for the parameter ``name`` annotated ``ws.Static[T]``: BindingTimeError when
    it holds a dynamic value (a static parameter cannot take a GPU value), else checked against
    ``T`` (ArgumentError; a numpy scalar comes back as its Python number)."""
    from ..errors import ArgumentError, BindingTimeError
    if flatten(value)[1]:
        how = (f"is annotated {annotation!r}" if annotation is not None
               else "is given as ws.Static(...)")
        raise BindingTimeError(
            f"parameter '{name}' of @ws.jit function {jit_fn.__qualname__} {how} "
            f"(static: it exists only while compiling) but got a dynamic value "
            f"({_dynamic_text(value)}), which exists only on the GPU.\nFix: pass a Python value "
            f"known while compiling (a literal, a config field, ws.static_range's index), or drop "
            f"the ws.Static annotation (or wrapper) to take it as a dynamic argument.")
    if annotation is None:
        return value
    try:
        return annotation.check(value, name)
    except ArgumentError as e:
        raise ArgumentError(f"calling @ws.jit function {jit_fn.__qualname__}: {e}") from None


def _dynamic_text(value) -> str:
    leaves = flatten(value)[1]
    if len(leaves) == 1 and leaves[0] is value:
        return f"a dynamic {type(value).__name__}"
    return f"{type(value).__name__} holding {len(leaves)} dynamic leaves"


def _as_call(sig, values: list) -> tuple:
    """(positional, keyword) arguments that pass ``values`` — one per parameter of ``sig``, in
    order, as ``BoundArguments.arguments`` holds them after ``apply_defaults`` — to a function
    of that signature: keyword-only parameters by name, ``*args`` spread, ``**kwargs`` merged."""
    pos, kw = [], {}
    for p, v in zip(sig.parameters.values(), values):
        if p.kind is p.VAR_POSITIONAL:
            pos.extend(v)
        elif p.kind is p.VAR_KEYWORD:
            kw.update(v)
        elif p.kind is p.KEYWORD_ONLY:
            kw[p.name] = v
        else:
            pos.append(v)
    return pos, kw


def _short_args(values) -> str:
    return ", ".join(repr(v)[:20] for v in values)[:120]


def call_loc_now():
    from ..core.source import user_location
    return user_location(3)


def _changed(before, arg, params):
    """(skeleton, leaves) of argument ``arg`` after the body ran, if the body changed it in place
    (a mutable object: list, dict, struct, protocol object) — else None. Arguments are passed by
    reference as in Python: a change the callee makes to an argument's contents is seen by the
    caller after the call."""
    from .contents import _is_root_kind
    if not _is_root_kind(arg):
        return None
    after, leaves = flatten(arg)
    param_ids = {id(p) for p in params}
    try:
        same = skeleton_key(after, static_key) == skeleton_key(before, static_key)
    except UnkeyableError:
        same = False
    if same and all(id(lf.value) in param_ids for lf in leaves):
        return None
    return after, leaves
